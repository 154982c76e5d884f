/* test_provider.c - the generic provider layer: argument and result checks,
 * defaults for NULL slots, timing counters, config helpers; and the
 * scripted fake provider the scheduler tests build on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/node.h"
#include "providers/adapter_util.h"
#include "providers/http.h"
#include "providers/provider.h"
#include "tests/fakes/fake_provider.h"

/* A resolver standing in for the daemon's sealed secrets. */
static enum tw_rc test_resolver(void *ctx, const char *name, char **value,
                                struct tw_err *err) {
  if (strcmp(name, "aws-main"))
    return tw_err_set(err, TW_E_NOTFOUND, "no such secret %s", name);
  *value = tw_strdup(ctx);
  return TW_OK;
}

static struct tw_offer make_offer(const char *account, const char *zone,
                                  const char *type, enum tw_market m,
                                  int64_t price) {
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.account, account);
  TW_SET(o.region, "us-east-1");
  TW_SET(o.zone, zone);
  TW_SET(o.instance_type, type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = 2;
  o.memory_mib = 8192;
  o.market = m;
  o.price_uusd_per_hour = price;
  return o;
}

static struct tw_provider *new_fake(struct tw_clock *clock) {
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  enum tw_rc rc =
      tw_provider_new_ops(&tw_provider_fake, "fake-a", NULL, clock, &p, &err);
  TW_CHECK(rc == TW_OK && p);
  return p;
}

static struct tw_launch make_launch(const struct tw_offer *o,
                                    const char *token) {
  struct tw_launch l = {0};
  l.offer = o;
  l.client_token = token;
  l.job_id = "job-1";
  l.attempt_id = "att-1";
  l.tenant = "physics";
  return l;
}

static void model_helpers(void **state) {
  char small[4];
  TW_CHECK(tw_model_set(small, sizeof small, "abc"));
  TW_CHECK(!strcmp(small, "abc"));
  TW_CHECK(!tw_model_set(small, sizeof small, "abcd") && small[0] == '\0');
  TW_CHECK(tw_model_set(small, sizeof small, NULL) && small[0] == '\0');

  struct tw_offer o =
      make_offer("aws-main", "us-east-1a", "m5.large", TW_MARKET_SPOT, 1);
  TW_CHECK(tw_offer_make_id(&o));
  TW_CHECK(!strcmp(o.id, "aws-main:us-east-1:us-east-1a:m5.large:spot"));
  TW_CHECK(o.interruption_pct == -1 && o.capacity == -1);
  TW_CHECK(tw_offer_set_label(&o, "country", "US"));
  TW_CHECK(tw_offer_set_label(&o, "country", "CA"));
  TW_CHECK(o.n_labels == 1 && !strcmp(tw_offer_label(&o, "country"), "CA"));
  TW_CHECK(tw_offer_label(&o, "geo") == NULL);
  for (int i = 0; i < TW_OFFER_LABELS_MAX + 2; i++) {
    char k[8];
    snprintf(k, sizeof k, "k%d", i);
    bool ok = tw_offer_set_label(&o, k, "v");
    TW_CHECK(ok == (i < TW_OFFER_LABELS_MAX - 1));
  }

  for (int s = TW_INST_UNKNOWN; s <= TW_INST_TERMINATED; s++)
    TW_CHECK((int)tw_instance_state_parse(tw_instance_state_str(s)) == s);
  TW_CHECK(tw_instance_state_parse("Running") == TW_INST_UNKNOWN);

  struct tw_offer_list l;
  tw_offer_list_init(&l);
  for (int i = 0; i < 100; i++) {
    struct tw_offer *x = tw_offer_list_add(&l);
    TW_CHECK(x->capacity == -1); /* the slot is initialised as an offer */
    x->vcpus = i;
  }
  TW_CHECK(l.n == 100 && l.items[99].vcpus == 99);
  tw_offer_list_release(&l);
  TW_CHECK(l.n == 0 && l.items == NULL);
}

static void usd_conversion(void **state) {
  struct {
    const char *s;
    int64_t v;
    enum tw_rc rc;
  } cases[] = {
      {"0.043700", 43700, TW_OK},
      {"12", 12000000, TW_OK},
      {"3.25", 3250000, TW_OK},
      {" 0.0000004 ", 0, TW_OK},
      {"0.0000005", 1, TW_OK}, /* half up */
      {"9.8304000000", 9830400, TW_OK},
      {"0.1234565", 123457, TW_OK},
      {".5", 500000, TW_OK},
      {"", 0, TW_E_INVALID},
      {"-1", 0, TW_E_INVALID},
      {"1e-3", 1000, TW_OK}, /* broker/base/units.h reads exponents */
      {"$0.5", 500000, TW_OK},
      {"1.2.3", 0, TW_E_INVALID},
      {"abc", 0, TW_E_INVALID},
      {"1000001", 0, TW_E_INVALID},
      {"99999999999999999999", 0, TW_E_INVALID},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t v = -7;
    struct tw_err err = {0};
    enum tw_rc rc = tw_provider_usd_to_uusd(cases[i].s, &v, &err);
    TW_CHECK(rc == cases[i].rc);
    if (rc == TW_OK)
      TW_CHECK(v == cases[i].v);
    else
      TW_CHECK(v == -7);
    if (rc != cases[i].rc || (rc == TW_OK && v != cases[i].v))
      fprintf(stderr, "  usd \"%s\": %s %lld\n", cases[i].s, tw_rc_str(rc),
              (long long)v);
  }
}

static void launch_is_idempotent_and_checked(void **state) {
  struct tw_clock clock;
  tw_clock_fake_init(&clock, 1767225600000LL);
  struct tw_provider *p = new_fake(&clock);
  struct tw_fake *f = tw_fake_of(p);
  struct tw_offer o =
      make_offer("", "us-east-1a", "m5.large", TW_MARKET_SPOT, 40000);
  struct tw_instance a, b;
  struct tw_err err = {0};

  struct tw_launch req = make_launch(&o, "tok-1");
  TW_CHECK(tw_provider_launch(p, &req, &a, &err) == TW_OK);
  TW_CHECK(!strcmp(a.id, "fake-a-1") && a.state == TW_INST_PENDING);
  TW_CHECK(!strcmp(a.provider, "fake") && !strcmp(a.account, "fake-a"));
  TW_CHECK(!strcmp(a.job_id, "job-1") && !strcmp(a.tenant, "physics"));
  TW_CHECK(a.market == TW_MARKET_SPOT && a.launched_ms == 1767225600000LL);

  /* Retried with the same token: the same instance, nothing bought. */
  TW_CHECK(tw_provider_launch(p, &req, &b, &err) == TW_OK);
  TW_CHECK(!strcmp(a.id, b.id));
  TW_CHECK(tw_fake_instances_created(f) == 1);

  /* The same token under another job: refused as a conflict. */
  struct tw_launch other = make_launch(&o, "tok-1");
  other.job_id = "job-2";
  TW_CHECK(tw_provider_launch(p, &other, &b, &err) == TW_E_CONFLICT);
  TW_CHECK(!strcmp(err.detail, "ClientTokenReused"));
  TW_CHECK(!strcmp(b.id, a.id)); /* the caller sees what it collided with */

  /* Argument checks never reach the adapter. */
  size_t calls = tw_fake_calls(f, TW_POP_LAUNCH);
  const char *bad_tokens[] = {NULL, "", "has space",
                              "0123456789012345678901234567890123456789"
                              "01234567890123456789012345"};
  for (size_t i = 0; i < sizeof bad_tokens / sizeof *bad_tokens; i++) {
    struct tw_launch r = make_launch(&o, bad_tokens[i]);
    memset(&err, 0, sizeof err);
    TW_CHECK(tw_provider_launch(p, &r, &b, &err) == TW_E_INVALID);
  }
  struct tw_launch r = make_launch(&o, "tok-2");
  r.tenant = NULL;
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_E_INVALID);
  struct tw_offer foreign = o;
  TW_SET(foreign.account, "someone-else");
  r = make_launch(&foreign, "tok-2");
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_E_INVALID);
  struct tw_offer no_market = o;
  no_market.market = TW_MARKET_ANY;
  r = make_launch(&no_market, "tok-2");
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_E_INVALID);
  r = make_launch(NULL, "tok-2");
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_E_INVALID);
  TW_CHECK(tw_fake_calls(f, TW_POP_LAUNCH) == calls);

  /* Each error class comes back with the adapter's detail, counted. */
  enum tw_rc classes[] = {TW_E_CAPACITY, TW_E_QUOTA, TW_E_AUTH, TW_E_RETRYABLE,
                          TW_E_INVALID};
  for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) {
    tw_fake_fail(f, TW_POP_LAUNCH, classes[i], "SomeCode", 1);
    memset(&err, 0, sizeof err);
    r = make_launch(&o, "tok-3");
    TW_CHECK(tw_provider_launch(p, &r, &b, &err) == classes[i]);
    TW_CHECK(err.rc == classes[i] && !strcmp(err.detail, "SomeCode"));
    TW_CHECK(b.id[0] == '\0');
  }
  struct tw_provider_stats st;
  tw_provider_stats(p, TW_POP_LAUNCH, &st);
  TW_CHECK(st.calls == 8 && st.failures == 6); /* 3 + 5 injected */
  TW_CHECK(st.last_rc == TW_E_INVALID && st.max_us >= st.last_us);

  /* Capacity out in one zone only. */
  struct tw_offer z2 =
      make_offer("", "us-east-1b", "m5.large", TW_MARKET_SPOT, 40000);
  tw_offer_make_id(&o);
  tw_offer_make_id(&z2);
  tw_fake_fail_offer(f, o.id, TW_E_CAPACITY, "InsufficientInstanceCapacity");
  r = make_launch(&o, "tok-4");
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_E_CAPACITY);
  r = make_launch(&z2, "tok-4");
  TW_CHECK(tw_provider_launch(p, &r, &b, NULL) == TW_OK);
  TW_CHECK(!strcmp(b.zone, "us-east-1b"));

  tw_provider_free(p);
}

static void describe_terminate_events(void **state) {
  struct tw_clock clock;
  tw_clock_fake_init(&clock, 1767225600000LL);
  struct tw_provider *p = new_fake(&clock);
  struct tw_fake *f = tw_fake_of(p);
  struct tw_offer o =
      make_offer("", "us-east-1a", "m5.large", TW_MARKET_SPOT, 40000);
  struct tw_launch req = make_launch(&o, "tok-1");
  struct tw_instance a, d;
  struct tw_err err = {0};
  TW_CHECK(tw_provider_launch(p, &req, &a, &err) == TW_OK);
  TW_CHECK(tw_provider_describe(p, a.id, &d, &err) == TW_OK);
  TW_CHECK(d.state == TW_INST_RUNNING && !strcmp(d.provider_state, "running"));
  TW_CHECK(tw_provider_describe(p, "nope", &d, &err) == TW_E_NOTFOUND);
  TW_CHECK(tw_provider_describe(p, "", &d, NULL) == TW_E_INVALID);

  struct tw_event_list ev;
  tw_event_list_init(&ev);
  TW_CHECK(tw_provider_poll_events(p, &ev, NULL) == TW_OK && ev.n == 0);
  TW_CHECK(tw_fake_interrupt(f, a.id, 120000) == TW_OK);
  TW_CHECK(tw_fake_rebalance(f, a.id) == TW_OK);
  TW_CHECK(tw_provider_poll_events(p, &ev, NULL) == TW_OK);
  TW_CHECK(ev.n == 2);
  if (ev.n == 2) {
    TW_CHECK(ev.items[0].kind == TW_EVENT_INTERRUPTION);
    TW_CHECK(ev.items[0].deadline_ms == 1767225600000LL + 120000);
    TW_CHECK(!strcmp(ev.items[0].action, "terminate"));
    TW_CHECK(ev.items[1].kind == TW_EVENT_REBALANCE);
  }
  tw_event_list_release(&ev);
  /* Past the deadline the instance is gone and its notices with it. */
  tw_clock_advance(&clock, 120000);
  TW_CHECK(tw_provider_poll_events(p, &ev, NULL) == TW_OK && ev.n == 0);
  TW_CHECK(tw_provider_describe(p, a.id, &d, NULL) == TW_OK);
  TW_CHECK(d.state == TW_INST_TERMINATED);
  TW_CHECK(!strcmp(d.state_reason, "Server.SpotInstanceTermination"));
  tw_event_list_release(&ev);

  /* A failed list leaves the caller's list as it was. */
  struct tw_instance_list il;
  tw_instance_list_init(&il);
  /* terminated: history, not listed */
  TW_CHECK(tw_provider_list_managed(p, &il, NULL) == TW_OK && il.n == 0);
  TW_SET(tw_instance_list_add(&il)->id, "i-before");
  tw_fake_fail(f, TW_POP_LIST_MANAGED, TW_E_RETRYABLE, "RequestLimitExceeded",
               1);
  TW_CHECK(tw_provider_list_managed(p, &il, NULL) == TW_E_RETRYABLE);
  TW_CHECK(il.n == 1 && !strcmp(il.items[0].id, "i-before"));
  tw_instance_list_release(&il);

  TW_CHECK(tw_provider_terminate(p, a.id, NULL) == TW_OK);
  TW_CHECK(tw_provider_terminate(p, "nope", NULL) == TW_E_NOTFOUND);
  tw_provider_free(p);
}

/* ---- an adapter with holes and bugs ---------------------------------- */

static int bad_mode;

static enum tw_rc bad_list_offers(struct tw_provider *p,
                                  struct tw_offer_list *out,
                                  struct tw_err *err) {
  struct tw_offer good =
      make_offer("", "z1", "t.good", TW_MARKET_ON_DEMAND, 1000);
  struct tw_offer *o = tw_offer_list_add(out);
  *o = good;
  o = tw_offer_list_add(out);
  *o = good;
  o->vcpus = 0; /* broken */
  o = tw_offer_list_add(out);
  *o = good;
  o->price_uusd_per_hour = -5; /* broken */
  o = tw_offer_list_add(out);
  *o = good;
  TW_SET(o->zone, "z2");
  if (bad_mode == 1)
    return tw_err_set(err, TW_E_RETRYABLE, "page 2 failed");
  return TW_OK;
}

static enum tw_rc bad_launch(struct tw_provider *p, const struct tw_launch *req,
                             struct tw_instance *out, struct tw_err *err) {
  (void)req;
  (void)err;
  return TW_OK; /* forgot the id */
}

static enum tw_rc bad_describe(struct tw_provider *p, const char *id,
                               struct tw_instance *out, struct tw_err *err) {
  TW_SET(out->id, "i-other");
  return TW_OK;
}

static enum tw_rc holes_list_managed(struct tw_provider *p,
                                     struct tw_instance_list *out,
                                     struct tw_err *err) {
  struct tw_instance *i = tw_instance_list_add(out);
  TW_SET(i->id, "h-1");
  i->state = TW_INST_RUNNING;
  i = tw_instance_list_add(out);
  TW_SET(i->id, "h-2");
  i = tw_instance_list_add(out);
  TW_SET(i->id, "h-gone");
  i->state = TW_INST_TERMINATED;
  return TW_OK;
}

static const struct tw_provider_ops bad_ops = {
    .name = "bad",
    .version = TW_PROVIDER_OPS_VERSION,
    .list_offers = bad_list_offers,
    .launch = bad_launch,
    .describe = bad_describe,
};

static const struct tw_provider_ops holes_ops = {
    .name = "holes",
    .version = TW_PROVIDER_OPS_VERSION,
    .list_managed = holes_list_managed,
};

static const struct tw_provider_ops future_ops = {
    .name = "future",
    .version = TW_PROVIDER_OPS_VERSION + 1,
};

static void generic_checks_and_defaults(void **state) {
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK(tw_provider_new_ops(&bad_ops, NULL, NULL, NULL, &p, &err) == TW_OK);
  TW_CHECK(!strcmp(tw_provider_account(p), "bad"));

  struct tw_offer_list l;
  tw_offer_list_init(&l);
  struct tw_offer pre = make_offer("x", "z0", "t.pre", TW_MARKET_SPOT, 1);
  tw_offer_list_push(&l, &pre);
  TW_CHECK(tw_provider_list_offers(p, &l, &err) == TW_OK);
  TW_CHECK(l.n == 3); /* pre + the two valid ones */
  TW_CHECK(!strcmp(l.items[0].instance_type, "t.pre"));
  for (size_t i = 1; i < l.n; i++) {
    TW_CHECK(!strcmp(l.items[i].provider, "bad"));
    TW_CHECK(!strcmp(l.items[i].account, "bad"));
    TW_CHECK(l.items[i].id[0] != '\0');
  }
  TW_CHECK(!strcmp(l.items[2].id, "bad:us-east-1:z2:t.good:on-demand"));
  bad_mode = 1;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_list_offers(p, &l, &err) == TW_E_RETRYABLE);
  TW_CHECK(l.n == 3); /* the partial page was dropped */
  bad_mode = 0;
  tw_offer_list_release(&l);

  struct tw_offer o = make_offer("", "z1", "t.good", TW_MARKET_ON_DEMAND, 1);
  struct tw_launch req = make_launch(&o, "tok");
  struct tw_instance inst;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_launch(p, &req, &inst, &err) == TW_E_INTERNAL);
  /* A spot offer to a provider without TW_PROV_SPOT. */
  o.market = TW_MARKET_SPOT;
  TW_CHECK(tw_provider_launch(p, &req, &inst, NULL) == TW_E_INVALID);

  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_describe(p, "i-mine", &inst, &err) == TW_E_INTERNAL);
  /* NULL slots with no default. */
  TW_CHECK(tw_provider_terminate(p, "i-mine", NULL) == TW_E_INVALID);
  struct tw_instance_list il;
  tw_instance_list_init(&il);
  TW_CHECK(tw_provider_list_managed(p, &il, NULL) == TW_OK && il.n == 0);
  struct tw_event_list ev;
  tw_event_list_init(&ev);
  TW_CHECK(tw_provider_poll_events(p, &ev, NULL) == TW_OK && ev.n == 0);
  tw_provider_free(p);

  /* describe defaults to a lookup in list_managed. */
  TW_CHECK(tw_provider_new_ops(&holes_ops, "h", NULL, NULL, &p, NULL) == TW_OK);
  TW_CHECK(tw_provider_describe(p, "h-2", &inst, NULL) == TW_OK);
  TW_CHECK(!strcmp(inst.id, "h-2") && !strcmp(inst.provider, "holes"));
  TW_CHECK(!strcmp(inst.provider_state, "unknown"));
  TW_CHECK(tw_provider_describe(p, "h-3", &inst, NULL) == TW_E_NOTFOUND);
  /* describe_many without the slot: each id described, answered in order
   * (an unknown one is an answer, not a failure of the call) */
  {
    const char *ids[] = {"h-2", "h-3", "h-1"};
    struct tw_instance many[3];
    enum tw_rc rcs[3];
    TW_CHECK(tw_provider_describe_many(p, ids, 3, many, rcs, NULL) == TW_OK);
    TW_CHECK(rcs[0] == TW_OK && !strcmp(many[0].id, "h-2"));
    TW_CHECK(rcs[1] == TW_E_NOTFOUND);
    TW_CHECK(rcs[2] == TW_OK && !strcmp(many[2].id, "h-1") &&
             many[2].state == TW_INST_RUNNING);
    TW_CHECK(!strcmp(many[0].provider, "holes"));
    TW_CHECK(tw_provider_describe_many(p, ids, 0, many, rcs, NULL) ==
             TW_E_INVALID);
    const char *empty[] = {"h-1", ""};
    TW_CHECK(tw_provider_describe_many(p, empty, 2, many, rcs, NULL) ==
             TW_E_INVALID);
  }
  /* The listing holds only what lives, though the default describe still
   * sees a terminated instance (the monitor needs its end). */
  tw_instance_list_init(&il);
  TW_CHECK(tw_provider_list_managed(p, &il, NULL) == TW_OK && il.n == 2);
  for (size_t k = 0; k < il.n; k++)
    TW_CHECK(strcmp(il.items[k].id, "h-gone"));
  tw_instance_list_release(&il);
  TW_CHECK(tw_provider_describe(p, "h-gone", &inst, NULL) == TW_OK &&
           inst.state == TW_INST_TERMINATED);
  /* No read_output slot: the provider keeps no output. */
  struct tw_buf out;
  bool eof = true;
  tw_buf_init(&out);
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_read_output(p, "h-2", 0, 4096, &out, &eof, &err) ==
           TW_E_NOTFOUND);
  TW_CHECK(!eof && out.len == 0 && strstr(err.msg, "keeps no output"));
  tw_buf_release(&out);
  tw_provider_free(p);

  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new_ops(&future_ops, NULL, NULL, NULL, &p, &err) ==
           TW_E_INVALID);
  TW_CHECK(p == NULL && strstr(err.msg, "version"));
  tw_provider_free(NULL);
}

/* ---- config helpers --------------------------------------------------- */

static struct tw_node *yaml(const char *s) {
  struct tw_node *n = NULL;
  struct tw_err err = {0};
  if (tw_node_parse_yaml(s, strlen(s), &n, &err))
    fprintf(stderr, "yaml: %s\n", err.msg);
  return n;
}

static void config_helpers(void **state) {
  static const char *const keys[] = {"endpoint", "regions", "timeout_ms", NULL};
  struct tw_node *n = yaml("name: a\ntype: aws\nendpont: x\n");
  struct tw_err err = {0};
  TW_CHECK(tw_provider_cfg_check_keys(n, keys, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "did you mean \"endpoint\"") != NULL);
  TW_CHECK(!strcmp(err.field, "endpont"));
  tw_node_free(n);

  n = yaml("timeout_ms: 70000\nregions: [a]\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_cfg_check_keys(n, keys, &err) == TW_OK);
  int64_t v;
  TW_CHECK(tw_provider_cfg_int(n, "timeout_ms", 1, 60000, 5, &v, &err) ==
           TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "timeout_ms") && strstr(err.msg, "1..60000"));
  TW_CHECK(tw_provider_cfg_int(n, "absent", 1, 60000, 5, &v, NULL) == TW_OK &&
           v == 5);
  const char *s;
  TW_CHECK(tw_provider_cfg_str(n, "regions", NULL, &s, NULL) == TW_E_INVALID);
  tw_node_free(n);

  /* Secrets: inline refused, env and file read, never both. */
  n = yaml("secret_key: hunter2\n");
  char *secret = NULL;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  &err) == TW_E_INVALID);
  TW_CHECK(secret == NULL && !strstr(err.msg, "hunter2"));
  tw_node_free(n);

  setenv("TW_TEST_SECRET", "s3cr3t", 1);
  n = yaml("secret_key_env: TW_TEST_SECRET\n");
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  NULL) == TW_OK);
  TW_CHECK(secret && !strcmp(secret, "s3cr3t"));
  free(secret);
  tw_node_free(n);

  n = yaml("secret_key_env: TW_TEST_UNSET_VAR\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "TW_TEST_UNSET_VAR") != NULL);
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, false, &secret,
                                  NULL) == TW_OK &&
           secret == NULL);
  tw_node_free(n);

  char path[] = "/tmp/tw_test_secretXXXXXX";
  int fd = mkstemp(path);
  TW_CHECK(fd >= 0);
  if (fd >= 0) {
    TW_CHECK(write(fd, "from-file\nsecond line\n", 22) == 22);
    close(fd);
    char *doc = tw_asprintf("secret_key_file: %s\n", path);
    n = yaml(doc);
    TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                    NULL) == TW_OK);
    TW_CHECK(secret && !strcmp(secret, "from-file"));
    free(secret);
    tw_node_free(n);
    free(doc);
    unlink(path);
  }
  n = yaml("secret_key_file: /nonexistent/tw\n");
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  NULL) == TW_E_AUTH);
  tw_node_free(n);
  n = yaml("secret_key_file: /x\nsecret_key_env: Y\n");
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  NULL) == TW_E_INVALID);
  tw_node_free(n);

  /* Sealed secrets: through the daemon's resolver only, accepted by the
   * key check wherever the _env form is, never inline with another form. */
  n = yaml("secret_key_secret: aws-main\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_cfg_secret(NULL, n, "secret_key", NULL, true, &secret,
                                  &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "no sealed secrets") != NULL);
  /* the resolver travels with the provider being created
   * (tw_provider_new_with), not in a global */
  struct tw_provider rp = {.resolve_secret = test_resolver,
                           .resolve_ctx = "opened-value"};
  TW_CHECK(tw_provider_cfg_secret(&rp, n, "secret_key", NULL, true, &secret,
                                  NULL) == TW_OK);
  TW_CHECK(secret && !strcmp(secret, "opened-value"));
  free(secret);
  static const char *const sk[] = {"secret_key_env", NULL};
  TW_CHECK(tw_provider_cfg_check_keys(n, sk, NULL) == TW_OK);
  static const char *const nosk[] = {"endpoint", NULL};
  TW_CHECK(tw_provider_cfg_check_keys(n, nosk, NULL) == TW_E_INVALID);
  tw_node_free(n);
  n = yaml("secret_key_secret: missing\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_cfg_secret(&rp, n, "secret_key", NULL, true, &secret,
                                  &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "missing") && strstr(err.msg, "no such secret"));
  tw_node_free(n);
  n = yaml("secret_key_secret: a\nsecret_key_env: B\n");
  TW_CHECK(tw_provider_cfg_secret(&rp, n, "secret_key", NULL, true, &secret,
                                  NULL) == TW_E_INVALID);
  tw_node_free(n);
  /* The default variable. */
  TW_CHECK(tw_provider_cfg_secret(NULL, NULL, "secret_key", "TW_TEST_SECRET",
                                  true, &secret, NULL) == TW_OK);
  TW_CHECK(secret && !strcmp(secret, "s3cr3t"));
  free(secret);
}

/* tw_provider_cfg_list: one scalar or a sequence of non-empty scalars. */
static void cfg_list_table(void **state) {
  static const struct {
    const char *yaml;
    enum tw_rc rc;
    size_t n;
    const char *items[3]; /* expected items, or the expected error text */
  } cases[] = {
      {"other: x\n", TW_OK, 0, {NULL}},
      {"regions: us-east-1\n", TW_OK, 1, {"us-east-1"}},
      {"regions: [a, b, c]\n", TW_OK, 3, {"a", "b", "c"}},
      {"regions: []\n", TW_OK, 0, {NULL}},
      {"regions: {a: 1}\n",
       TW_E_INVALID,
       0,
       {"regions: expected a list of strings"}},
      {"regions: [a, [b]]\n",
       TW_E_INVALID,
       0,
       {"regions[1]: expected a non-empty string"}},
      {"regions: [a, \"\"]\n",
       TW_E_INVALID,
       0,
       {"regions[1]: expected a non-empty string"}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_node *n = yaml(cases[i].yaml);
    struct tw_err err = {0};
    char **v = (char **)&err; /* must be overwritten */
    size_t nv = 99;
    enum tw_rc rc = tw_provider_cfg_list(n, "regions", &v, &nv, &err);
    TW_CHECK(rc == cases[i].rc);
    TW_CHECK(nv == cases[i].n);
    if (rc == TW_OK) {
      TW_CHECK(!nv || v != NULL);
      for (size_t k = 0; k < nv; k++)
        TW_CHECK(v[k] && !strcmp(v[k], cases[i].items[k]));
    } else {
      TW_CHECK(v == NULL);
      TW_CHECK(strstr(err.msg, cases[i].items[0]) != NULL);
      TW_CHECK(!strcmp(err.field, "regions"));
    }
    tw_provider_strv_free(v, nv);
    tw_node_free(n);
  }
  tw_provider_strv_free(NULL, 0);
}

/* tw_provider_cfg_regions and tw_provider_strv_has. */
static void cfg_regions_table(void **state) {
  static const struct {
    const char *yaml;
    enum tw_rc rc;
    const char *joined; /* the regions read, or the error's text */
  } cases[] = {
      {"regions: [a, b]\n", TW_OK, "a b "},
      {"region: a\n", TW_OK, "a "},
      {"regions: [a]\nregion: b\n", TW_OK, "a "},
      {"regions: []\nregion: [b, c]\n", TW_OK, "b c "},
      {"other: 1\n", TW_E_INVALID, "regions: at least one region is required"},
      {"regions: []\n", TW_E_INVALID,
       "regions: at least one region is required"},
      {"regions: {a: 1}\n", TW_E_INVALID, "regions: expected a list"},
      {"region: [a, []]\n", TW_E_INVALID, "region[1]: expected a non-empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_node *n = yaml(cases[i].yaml);
    struct tw_err err = {0};
    char **v = NULL;
    size_t nv = 0;
    TW_CHECK(tw_provider_cfg_regions(n, &v, &nv, &err) == cases[i].rc);
    if (cases[i].rc == TW_OK) {
      char joined[64] = "";
      for (size_t k = 0; k < nv; k++) {
        strcat(joined, v[k]);
        strcat(joined, " ");
        TW_CHECK(tw_provider_strv_has(v, nv, v[k]));
      }
      TW_CHECK(!strcmp(joined, cases[i].joined));
      TW_CHECK(!tw_provider_strv_has(v, nv, "z"));
      TW_CHECK(!tw_provider_strv_has(v, nv - 1, v[nv - 1])); /* n bounds it */
    } else {
      TW_CHECK(strstr(err.msg, cases[i].joined) == err.msg);
    }
    tw_provider_strv_free(v, nv);
    tw_node_free(n);
  }
}

/* tw_provider_cfg_strdup: an owned copy, the default, or an error. */
static void cfg_strdup_table(void **state) {
  static const struct {
    const char *yaml, *def;
    enum tw_rc rc;
    const char *want;
  } cases[] = {
      {"ca_file: /etc/ca.pem\n", NULL, TW_OK, "/etc/ca.pem"},
      {"ca_file: /etc/ca.pem\n", "def", TW_OK, "/etc/ca.pem"},
      {"other: 1\n", "def", TW_OK, "def"},
      {"other: 1\n", NULL, TW_OK, NULL},
      {"ca_file: [a]\n", "def", TW_E_INVALID, "ca_file"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_node *n = yaml(cases[i].yaml);
    struct tw_err err = {0};
    char *out = (char *)"untouched";
    enum tw_rc rc =
        tw_provider_cfg_strdup(n, "ca_file", cases[i].def, &out, &err);
    TW_CHECK(rc == cases[i].rc);
    if (rc == TW_OK) {
      TW_CHECK(cases[i].want ? out && !strcmp(out, cases[i].want) : !out);
      TW_CHECK(!cases[i].def || out != cases[i].def); /* a copy */
      free(out);
    } else {
      TW_CHECK(!strcmp(out, "untouched"));
      TW_CHECK(strstr(err.msg, cases[i].want) != NULL);
    }
    tw_node_free(n);
  }
}

/* tw_provider_cfg_http: the five HTTP keys within an adapter's limits. */
static void cfg_http_table(void **state) {
  static const struct tw_provider_http_limits cloud = TW_PROVIDER_HTTP_CLOUD;
  static const struct tw_provider_http_limits slurm = {.timeout_def = 30000,
                                                       .connect_min = 10,
                                                       .attempts_max = 10,
                                                       .attempts_def = 3,
                                                       .backoff_min = 0,
                                                       .backoff_cap_def = 5000};
  static const struct {
    const struct tw_provider_http_limits *lim;
    const char *yaml;
    enum tw_rc rc;
    long timeout, connect;
    unsigned attempts;
    int64_t base, cap;
    const char *bad; /* the key named by the error */
  } cases[] = {
      {&cloud, "other: 1\n", TW_OK, 20000, 5000, 4, 200, 20000, NULL},
      {&slurm, "other: 1\n", TW_OK, 30000, 5000, 3, 200, 5000, NULL},
      {&cloud,
       "timeout_ms: 1000\nconnect_timeout_ms: 100\nmax_attempts: 20\n"
       "backoff_base_ms: 1\nbackoff_cap_ms: 600000\n",
       TW_OK, 1000, 100, 20, 1, 600000, NULL},
      {&slurm, "connect_timeout_ms: 10\nbackoff_base_ms: 0\n", TW_OK, 30000, 10,
       3, 0, 5000, NULL},
      {&cloud, "connect_timeout_ms: 10\n", TW_E_INVALID, 0, 0, 0, 0, 0,
       "connect_timeout_ms"},
      {&cloud, "backoff_base_ms: 0\n", TW_E_INVALID, 0, 0, 0, 0, 0,
       "backoff_base_ms"},
      {&slurm, "max_attempts: 11\n", TW_E_INVALID, 0, 0, 0, 0, 0,
       "max_attempts"},
      {&cloud, "timeout_ms: 99\nmax_attempts: 0\n", TW_E_INVALID, 0, 0, 0, 0, 0,
       "timeout_ms"},
      {&cloud, "backoff_cap_ms: 600001\n", TW_E_INVALID, 0, 0, 0, 0, 0,
       "backoff_cap_ms"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_node *n = yaml(cases[i].yaml);
    struct tw_err err = {0};
    struct tw_http_opts ho = {.user_agent = "kept", .seed = 7};
    long timeout = -1, connect = -1;
    enum tw_rc rc =
        tw_provider_cfg_http(n, cases[i].lim, &timeout, &connect, &ho, &err);
    TW_CHECK(rc == cases[i].rc);
    if (rc == TW_OK) {
      TW_CHECK(timeout == cases[i].timeout && connect == cases[i].connect);
      TW_CHECK(ho.max_attempts == cases[i].attempts);
      TW_CHECK(ho.backoff_base_ms == cases[i].base &&
               ho.backoff_cap_ms == cases[i].cap);
    } else {
      TW_CHECK(!strcmp(err.field, cases[i].bad));
    }
    TW_CHECK(!strcmp(ho.user_agent, "kept") && ho.seed == 7);
    tw_node_free(n);
  }
}

/* tw_adapter_find_instance: the matching item, region filled; else
 * nothing written. */
static void find_instance_table(void **state) {
  static const char *const ids[] = {"i-1", "i-2", "i-3"};
  static const struct {
    size_t n; /* items of ids[] in the list */
    const char *id;
    bool found;
  } cases[] = {
      {3, "i-1", true},  {3, "i-3", true},  {3, "i-4", false},
      {2, "i-3", false}, {0, "i-1", false}, {3, "i-", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    for (size_t k = 0; k < cases[i].n; k++) {
      struct tw_instance *in = tw_instance_list_add(&l);
      TW_SET(in->id, ids[k]);
      TW_SET(in->instance_type, ids[k]);
    }
    struct tw_instance out;
    tw_instance_init(&out);
    TW_SET(out.id, "untouched");
    TW_CHECK(tw_adapter_find_instance(&l, cases[i].id, "eu-west-1", &out) ==
             cases[i].found);
    if (cases[i].found) {
      TW_CHECK(!strcmp(out.id, cases[i].id));
      TW_CHECK(!strcmp(out.instance_type, cases[i].id)); /* the whole item */
      TW_CHECK(!strcmp(out.region, "eu-west-1"));
    } else {
      TW_CHECK(!strcmp(out.id, "untouched") && !out.region[0]);
    }
    tw_instance_list_release(&l);
  }
}

/* A per-region lister for tw_adapter_offers_by_region: region "down"
 * fails, every other region yields one offer named after it. */
static enum tw_rc region_offers(struct tw_provider *p, const char *region,
                                struct tw_offer_list *out, struct tw_err *err) {
  (void)p;
  if (!strcmp(region, "down"))
    return tw_err_set(err, TW_E_RETRYABLE, "%s is down", region);
  TW_SET(tw_offer_list_add(out)->region, region);
  return TW_OK;
}

/* tw_adapter_offers_by_region: in order, stopping at the first error with
 * what came before kept. */
static void by_region_table(void **state) {
  static char *ok[] = {"r1", "r2", "r3"};
  static char *mid[] = {"r1", "down", "r3"};
  static const struct {
    char **regions;
    size_t n;
    enum tw_rc rc;
    size_t items;
    const char *regions_seen; /* of the items, in order */
  } cases[] = {
      {ok, 3, TW_OK, 3, "r1 r2 r3 "},
      {ok, 0, TW_OK, 0, ""},
      {mid, 3, TW_E_RETRYABLE, 1, "r1 "},
      {mid + 1, 2, TW_E_RETRYABLE, 0, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_offer_list o;
    tw_offer_list_init(&o);
    struct tw_err err = {0};
    TW_CHECK(tw_adapter_offers_by_region(NULL, cases[i].regions, cases[i].n,
                                         region_offers, &o,
                                         &err) == cases[i].rc);
    TW_CHECK(o.n == cases[i].items);
    char seen[64] = "";
    for (size_t k = 0; k < o.n; k++) {
      strcat(seen, o.items[k].region);
      strcat(seen, " ");
    }
    TW_CHECK(!strcmp(seen, cases[i].regions_seen));
    TW_CHECK(cases[i].rc ? !strcmp(err.msg, "down is down") : err.rc == TW_OK);
    tw_offer_list_release(&o);
  }
}

/* tw_adapter_iso_time and tw_adapter_http_date_ms, round trips included. */
static void adapter_time_table(void **state) {
  static const struct {
    const char *date; /* RFC 7231 */
    int64_t ms;       /* -1: malformed */
    const char *iso;  /* of ms */
  } cases[] = {
      {"Thu, 01 Jan 1970 00:00:01 GMT", 1000, "1970-01-01T00:00:01Z"},
      {"Tue, 03 Jun 2008 11:05:30 GMT", 1212491130000, "2008-06-03T11:05:30Z"},
      {"Sun, 29 Feb 2032 23:59:59 GMT", 1961711999000, "2032-02-29T23:59:59Z"},
      /* Lenient: what follows the seconds is not checked. */
      {"Tue, 03 Jun 2008 11:05:30 PST", 1212491130000, "2008-06-03T11:05:30Z"},
      {"Tue, 03 Jnu 2008 11:05:30 GMT", -1, NULL},
      {"Tue, 03 anF 2008 11:05:30 GMT", -1, NULL}, /* not on a boundary */
      {"2008-06-03T11:05:30Z", -1, NULL},
      {"", -1, NULL},
      {NULL, -1, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t ms = tw_adapter_http_date_ms(cases[i].date);
    if (ms != cases[i].ms)
      fprintf(stderr, "case %zu: %lld\n", i, (long long)ms);
    TW_CHECK(ms == cases[i].ms);
    if (cases[i].iso) {
      char iso[32];
      tw_adapter_iso_time(ms + 999, iso); /* milliseconds are truncated */
      TW_CHECK(!strcmp(iso, cases[i].iso));
    }
  }
}

/* A region call for tw_region_memo_run: instances live where `homes`
 * says; region "bad" refuses everything; every call is logged. */
struct memo_world {
  const char *const *homes; /* id, region, id, region, ..., NULL */
  char log[128];
};

static enum tw_rc memo_fn(struct tw_provider *p, const char *region,
                          const char *id, void *arg, struct tw_err *err) {
  (void)p;
  struct memo_world *w = arg;
  strncat(w->log, region, sizeof w->log - strlen(w->log) - 1);
  strncat(w->log, " ", sizeof w->log - strlen(w->log) - 1);
  if (!strcmp(region, "bad"))
    return tw_err_set(err, TW_E_AUTH, "refused in %s", region);
  for (size_t i = 0; w->homes[i]; i += 2)
    if (!strcmp(w->homes[i], id) && !strcmp(w->homes[i + 1], region))
      return TW_OK;
  return tw_err_set(err, TW_E_NOTFOUND, "no %s in %s", id, region);
}

/* tw_region_memo_*: the remembered region first, then the others. */
static void region_memo_table(void **state) {
  static const char *const homes[] = {"i-1", "r2", "i-2", "r3", NULL};
  static char *three[] = {"r1", "r2", "r3"};
  static char *one[] = {"r2"};
  static char *with_bad[] = {"r1", "bad", "r2"};
  static const struct {
    char **regions;
    size_t n;
    const char *put_id, *put_region; /* remembered first, or NULL */
    const char *id;
    enum tw_rc rc;
    const char *calls;  /* regions tried, in order */
    size_t hint_after;  /* tw_region_memo_hint(id) afterwards */
    const char *errmsg; /* in err, or NULL for none */
  } cases[] = {
      {three, 3, NULL, NULL, "i-1", TW_OK, "r1 r2 ", 1, NULL},
      {three, 3, "i-1", "r2", "i-1", TW_OK, "r2 ", 1, NULL},
      {three, 3, "i-2", "r2", "i-2", TW_OK, "r2 r3 ", 2, NULL},
      {three, 3, "i-1", "gone", "i-1", TW_OK, "r1 r2 ", 1, NULL},
      {three, 3, NULL, NULL, "i-9", TW_E_NOTFOUND, "r1 r2 r3 ", 0,
       "no i-9 in r3"},
      {three, 3, "i-9", "r3", "i-9", TW_E_NOTFOUND, "r3 r1 r2 ", 2,
       "no i-9 in r2"},
      {with_bad, 3, NULL, NULL, "i-1", TW_E_AUTH, "r1 bad ", 0,
       "refused in bad"},
      {one, 1, "i-2", "r3", "i-1", TW_OK, "r2 ", 0, NULL},
      {one, 0, NULL, NULL, "i-1", TW_E_NOTFOUND, "", 0, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_region_memo m;
    tw_region_memo_init(&m);
    m.regions = cases[i].regions;
    m.n_regions = cases[i].n;
    if (cases[i].put_id)
      tw_region_memo_put(&m, cases[i].put_id, cases[i].put_region);
    struct memo_world w = {.homes = homes};
    struct tw_err err = {0};
    enum tw_rc rc =
        tw_region_memo_run(&m, NULL, cases[i].id, memo_fn, &w, &err);
    TW_CHECK(rc == cases[i].rc);
    if (strcmp(w.log, cases[i].calls))
      fprintf(stderr, "case %zu: tried \"%s\"\n", i, w.log);
    TW_CHECK(!strcmp(w.log, cases[i].calls));
    TW_CHECK(tw_region_memo_hint(&m, cases[i].id) == cases[i].hint_after);
    TW_CHECK(cases[i].errmsg ? !strcmp(err.msg, cases[i].errmsg)
                             : err.rc == TW_OK);
    tw_region_memo_release(&m);
  }

  /* A full table drops the oldest entry first. */
  struct tw_region_memo m;
  tw_region_memo_init(&m);
  m.regions = three;
  m.n_regions = 3;
  char id[32];
  for (int i = 0; i <= TW_REGION_MEMO_MAX; i++) {
    snprintf(id, sizeof id, "i-%d", i);
    tw_region_memo_put(&m, id, "r3");
  }
  TW_CHECK(tw_region_memo_hint(&m, "i-0") == 0); /* dropped */
  TW_CHECK(tw_region_memo_hint(&m, "i-1") == 2);
  snprintf(id, sizeof id, "i-%d", TW_REGION_MEMO_MAX);
  TW_CHECK(tw_region_memo_hint(&m, id) == 2);
  tw_region_memo_put(&m, "i-1", "r2"); /* replaced, not added */
  TW_CHECK(tw_region_memo_hint(&m, "i-1") == 1);
  TW_CHECK(m.n_where == TW_REGION_MEMO_MAX);
  tw_region_memo_release(&m);

  /* Around the table twice and a half, each id in its own region: the
   * last TW_REGION_MEMO_MAX are all found where they were put (every
   * eviction kept the index whole), the ones before are forgotten. */
  tw_region_memo_init(&m);
  m.regions = three;
  m.n_regions = 3;
  int total = TW_REGION_MEMO_MAX * 5 / 2, wrong = 0;
  for (int i = 0; i < total; i++) {
    snprintf(id, sizeof id, "i-%x", (unsigned)i * 2654435761u);
    tw_region_memo_put(&m, id, three[i % 3]);
  }
  for (int i = 0; i < total; i++) {
    snprintf(id, sizeof id, "i-%x", (unsigned)i * 2654435761u);
    size_t want = i >= total - TW_REGION_MEMO_MAX ? (size_t)(i % 3) : 0;
    wrong += tw_region_memo_hint(&m, id) != want;
  }
  TW_CHECK(wrong == 0, "%d ids with a wrong hint", wrong);
  tw_region_memo_release(&m);
}

static void registry_and_new(void **state) {
  /* Every registered adapter is well formed and findable by name; the
   * tests' registry holds the fake beside the daemon's adapters. */
  const struct tw_provider_ops *const *reg = tw_adapters_test;
  for (size_t i = 0; reg[i]; i++) {
    const struct tw_provider_ops *ops = reg[i];
    TW_CHECK(ops->name && *ops->name);
    TW_CHECK(ops->version >= 1 && ops->version <= TW_PROVIDER_OPS_VERSION);
    TW_CHECK(tw_provider_find(reg, ops->name) == ops);
  }
  TW_CHECK(tw_provider_find(reg, "fake") == &tw_provider_fake);
  TW_CHECK(tw_provider_find(reg, "nope") == NULL);
  TW_CHECK(tw_provider_find(reg, NULL) == NULL);
  TW_CHECK(tw_provider_find(NULL, "fake") == NULL);

  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  struct tw_node *n = yaml("name: x\n");
  TW_CHECK(tw_provider_new(reg, n, NULL, &p, &err) == TW_E_INVALID);
  TW_CHECK(!strcmp(err.field, "type"));
  tw_node_free(n);
  n = yaml("type: no-such-cloud\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new(reg, n, NULL, &p, &err) == TW_E_INVALID && !p);
  TW_CHECK(strstr(err.msg, "no-such-cloud") != NULL);
  tw_node_free(n);
  n = yaml("type: avs\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new(reg, n, NULL, &p, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "did you mean \"aws\"") != NULL);
  tw_node_free(n);
  /* the fake through the registry, as a config names it */
  n = yaml("type: fake\nname: lab\n");
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new(reg, n, NULL, &p, &err) == TW_OK && p);
  TW_CHECK(p && !strcmp(tw_provider_account(p), "lab"));
  /* no notice_poll_ms: the adapter's own interval */
  TW_CHECK(tw_provider_notice_poll_ms(p) ==
           tw_provider_ops_info(&tw_provider_fake)->notice_poll_ms);
  tw_provider_free(p);
  tw_node_free(n);
  /* notice_poll_ms overrides it, within 100..600000 */
  n = yaml("type: fake\nnotice_poll_ms: 1000\n");
  const struct tw_provider_ops *aws = tw_provider_find(reg, "aws");
  TW_CHECK(aws && tw_provider_ops_info(aws)->notice_poll_ms == 5000);
  p = NULL;
  memset(&err, 0, sizeof err);
  if (tw_provider_new(reg, n, NULL, &p, &err) == TW_OK) {
    TW_CHECK(tw_provider_notice_poll_ms(p) == 1000);
    tw_provider_free(p);
  } else {
    fail_msg("notice_poll_ms 1000 refused: %s", err.msg);
  }
  tw_node_free(n);
  n = yaml("type: fake\nnotice_poll_ms: 50\n");
  p = NULL;
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new(reg, n, NULL, &p, &err) == TW_E_INVALID && !p);
  TW_CHECK(!strcmp(err.field, "notice_poll_ms"));
  tw_node_free(n);
}

int main(void) {
  /* Failures are logged at warn by design; keep the test output short. */
  tw_log_set_level(TW_LOG_ERROR);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(model_helpers),
      cmocka_unit_test(usd_conversion),
      cmocka_unit_test(launch_is_idempotent_and_checked),
      cmocka_unit_test(describe_terminate_events),
      cmocka_unit_test(generic_checks_and_defaults),
      cmocka_unit_test(config_helpers),
      cmocka_unit_test(cfg_list_table),
      cmocka_unit_test(cfg_regions_table),
      cmocka_unit_test(cfg_strdup_table),
      cmocka_unit_test(cfg_http_table),
      cmocka_unit_test(region_memo_table),
      cmocka_unit_test(adapter_time_table),
      cmocka_unit_test(by_region_table),
      cmocka_unit_test(find_instance_table),
      cmocka_unit_test(registry_and_new),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
