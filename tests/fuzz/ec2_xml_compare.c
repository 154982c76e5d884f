/* ec2_xml_compare.c - every EC2 parser of providers/aws/ec2_xml.c beside
 * its tree-based predecessor (tests/fuzz/ec2_xml_tree.c) on the same
 * bytes: the same rc, message, fields and next token, or abort(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/ec2_xml_tree.h"

static const char *what;
static size_t which;

static void differ(const char *field) {
  fprintf(stderr, "ec2_xml_compare: %s item %zu: %s differs\n", what, which,
          field);
  abort();
}

#define SAME_STR(a, b, f)                                                      \
  do {                                                                         \
    if (strcmp((a)->f, (b)->f))                                                \
      fprintf(stderr, "  new \"%s\" old \"%s\"\n", (a)->f, (b)->f),            \
          differ(#f);                                                          \
  } while (0)
#define SAME_NUM(a, b, f)                                                      \
  do {                                                                         \
    if ((a)->f != (b)->f)                                                      \
      differ(#f);                                                              \
  } while (0)

static void same_err(enum tw_rc rc_new, const struct tw_err *e_new,
                     enum tw_rc rc_old, const struct tw_err *e_old) {
  which = 0;
  if (rc_new != rc_old) {
    fprintf(stderr, "  new %s (%s) old %s (%s)\n", tw_rc_str(rc_new),
            e_new->msg, tw_rc_str(rc_old), e_old->msg);
    differ("rc");
  }
  SAME_NUM(e_new, e_old, rc);
  SAME_STR(e_new, e_old, msg);
  SAME_STR(e_new, e_old, detail);
}

static void same_token(const char *a, const char *b) {
  if ((a == NULL) != (b == NULL) || (a && strcmp(a, b)))
    differ("nextToken");
}

static void instances(const char *s, size_t len) {
  struct tw_instance_list a, b;
  struct tw_err ea = {0}, eb = {0};
  char *ta = NULL, *tb = NULL;
  tw_instance_list_init(&a);
  tw_instance_list_init(&b);
  what = "instances";
  same_err(tw_ec2_parse_instances(s, len, &a, &ta, &ea), &ea,
           tw_ec2_tree_parse_instances(s, len, &b, &tb, &eb), &eb);
  same_token(ta, tb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    const struct tw_instance *x = &a.items[which], *y = &b.items[which];
    SAME_STR(x, y, id);
    SAME_STR(x, y, region);
    SAME_STR(x, y, zone);
    SAME_STR(x, y, instance_type);
    SAME_NUM(x, y, arch);
    SAME_NUM(x, y, market);
    SAME_NUM(x, y, state);
    SAME_STR(x, y, provider_state);
    SAME_STR(x, y, state_reason);
    SAME_STR(x, y, client_token);
    SAME_STR(x, y, job_id);
    SAME_STR(x, y, attempt_id);
    SAME_STR(x, y, tenant);
    SAME_NUM(x, y, launched_ms);
    SAME_NUM(x, y, running_ms);
    SAME_NUM(x, y, ended_ms);
    SAME_STR(x, y, private_ip);
    SAME_STR(x, y, public_ip);
  }
  free(ta);
  free(tb);
  tw_instance_list_release(&a);
  tw_instance_list_release(&b);
}

static void state_changes(const char *s, size_t len) {
  struct tw_ec2_state_change_list a, b;
  struct tw_err ea = {0}, eb = {0};
  tw_ec2_state_change_list_init(&a);
  tw_ec2_state_change_list_init(&b);
  what = "state changes";
  same_err(tw_ec2_parse_state_changes(s, len, &a, &ea), &ea,
           tw_ec2_tree_parse_state_changes(s, len, &b, &eb), &eb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    SAME_STR(&a.items[which], &b.items[which], id);
    SAME_NUM(&a.items[which], &b.items[which], current);
    SAME_NUM(&a.items[which], &b.items[which], previous);
  }
  tw_ec2_state_change_list_release(&a);
  tw_ec2_state_change_list_release(&b);
}

static void spot_prices(const char *s, size_t len) {
  struct tw_ec2_spot_price_list a, b;
  struct tw_err ea = {0}, eb = {0};
  char *ta = NULL, *tb = NULL;
  tw_ec2_spot_price_list_init(&a);
  tw_ec2_spot_price_list_init(&b);
  what = "spot prices";
  same_err(tw_ec2_parse_spot_prices(s, len, &a, &ta, &ea), &ea,
           tw_ec2_tree_parse_spot_prices(s, len, &b, &tb, &eb), &eb);
  same_token(ta, tb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    const struct tw_ec2_spot_price *x = &a.items[which], *y = &b.items[which];
    SAME_STR(x, y, instance_type);
    SAME_STR(x, y, zone);
    SAME_STR(x, y, product);
    SAME_NUM(x, y, price_uusd_per_hour);
    SAME_NUM(x, y, timestamp_ms);
  }
  free(ta);
  free(tb);
  tw_ec2_spot_price_list_release(&a);
  tw_ec2_spot_price_list_release(&b);
}

static void spot_requests(const char *s, size_t len) {
  struct tw_ec2_spot_request_list a, b;
  struct tw_err ea = {0}, eb = {0};
  char *ta = NULL, *tb = NULL;
  tw_ec2_spot_request_list_init(&a);
  tw_ec2_spot_request_list_init(&b);
  what = "spot requests";
  same_err(tw_ec2_parse_spot_requests(s, len, &a, &ta, &ea), &ea,
           tw_ec2_tree_parse_spot_requests(s, len, &b, &tb, &eb), &eb);
  same_token(ta, tb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    const struct tw_ec2_spot_request *x = &a.items[which],
                                     *y = &b.items[which];
    SAME_STR(x, y, id);
    SAME_STR(x, y, instance_id);
    SAME_STR(x, y, state);
    SAME_STR(x, y, code);
    SAME_STR(x, y, behavior);
    SAME_NUM(x, y, updated_ms);
  }
  free(ta);
  free(tb);
  tw_ec2_spot_request_list_release(&a);
  tw_ec2_spot_request_list_release(&b);
}

static void instance_types(const char *s, size_t len) {
  struct tw_ec2_instance_type_list a, b;
  struct tw_err ea = {0}, eb = {0};
  char *ta = NULL, *tb = NULL;
  tw_ec2_instance_type_list_init(&a);
  tw_ec2_instance_type_list_init(&b);
  what = "instance types";
  same_err(tw_ec2_parse_instance_types(s, len, &a, &ta, &ea), &ea,
           tw_ec2_tree_parse_instance_types(s, len, &b, &tb, &eb), &eb);
  same_token(ta, tb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    const struct tw_ec2_instance_type *x = &a.items[which],
                                      *y = &b.items[which];
    SAME_STR(x, y, name);
    SAME_NUM(x, y, arch);
    SAME_NUM(x, y, vcpus);
    SAME_NUM(x, y, memory_mib);
    SAME_STR(x, y, accel_name);
    SAME_NUM(x, y, accel_count);
    SAME_NUM(x, y, accel_memory_mib);
    SAME_NUM(x, y, spot);
    SAME_NUM(x, y, on_demand);
  }
  free(ta);
  free(tb);
  tw_ec2_instance_type_list_release(&a);
  tw_ec2_instance_type_list_release(&b);
}

static void zones(const char *s, size_t len) {
  struct tw_ec2_zone_list a, b;
  struct tw_err ea = {0}, eb = {0};
  tw_ec2_zone_list_init(&a);
  tw_ec2_zone_list_init(&b);
  what = "zones";
  same_err(tw_ec2_parse_zones(s, len, &a, &ea), &ea,
           tw_ec2_tree_parse_zones(s, len, &b, &eb), &eb);
  if (a.n != b.n)
    differ("count");
  for (which = 0; which < a.n; which++) {
    const struct tw_ec2_zone *x = &a.items[which], *y = &b.items[which];
    SAME_STR(x, y, name);
    SAME_STR(x, y, zone_id);
    SAME_STR(x, y, region);
    SAME_STR(x, y, state);
    SAME_STR(x, y, zone_type);
  }
  tw_ec2_zone_list_release(&a);
  tw_ec2_zone_list_release(&b);
}

static void errors(const char *s, size_t len) {
  struct tw_ec2_error a, b;
  what = "error envelope";
  which = 0;
  if (tw_ec2_parse_error(s, len, &a) != tw_ec2_tree_parse_error(s, len, &b))
    differ("found");
  SAME_STR(&a, &b, code);
  SAME_STR(&a, &b, message);
  SAME_STR(&a, &b, request_id);
  struct tw_err ea = {0}, eb = {0};
  what = "response error";
  same_err(tw_ec2_response_error("Fuzz", 400, s, len, &ea), &ea,
           tw_ec2_tree_response_error("Fuzz", 400, s, len, &eb), &eb);
}

void tw_ec2_tree_compare(const char *body, size_t len) {
  instances(body, len);
  state_changes(body, len);
  spot_prices(body, len);
  spot_requests(body, len);
  instance_types(body, len);
  zones(body, len);
  errors(body, len);
}
