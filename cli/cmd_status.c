/* cmd_status.c - `tradewind status`: the brokers sharing the store and
 * which one leads (GET /v1/replicas, docs/ha.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

static const char *str_of(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

static long long int_of(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static int cmd_status(struct tw_cli *c, const struct tw_cli_parsed *p) {
  (void)p;
  struct tw_cli_http_resp resp;
  json_t *v = NULL;
  tw_cli_http_resp_init(&resp);
  int code =
      tw_cli_request(c, "GET", "/v1/replicas", NULL, NULL, 0, NULL, &resp, &v);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c)) {
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    } else {
      json_t *lease = json_object_get(v, "lease");
      fprintf(c->io->out, "Store: %s", str_of(v, "backend"));
      if (int_of(lease, "epoch") > 0)
        fprintf(c->io->out, ", leader %s at epoch %lld (%lld takeovers)",
                str_of(lease, "holder"), int_of(lease, "epoch"),
                int_of(lease, "takeovers"));
      fputs("\n", c->io->out);
      struct tw_cli_table t;
      static const char *const head[] = {"REPLICA", "URL", "ROLE", "EPOCH",
                                         "SEEN"};
      tw_cli_table_init(&t, 5, head);
      json_t *rs = json_object_get(v, "replicas");
      size_t i;
      json_t *r;
      json_array_foreach(rs, i, r) {
        char epoch[24], seen[32];
        snprintf(epoch, sizeof epoch, "%lld", int_of(r, "epoch"));
        snprintf(seen, sizeof seen, "%llds ago",
                 int_of(r, "seen_ms_ago") / 1000);
        const char *row[5] = {
            str_of(r, "name"), str_of(r, "url"),
            json_is_true(json_object_get(r, "leading")) ? "leader" : "follower",
            epoch, seen};
        tw_cli_table_add(&t, row);
      }
      struct tw_buf b;
      tw_buf_init(&b);
      tw_cli_table_render(&t, &b);
      fputs(b.data, c->io->out);
      tw_buf_release(&b);
      tw_cli_table_release(&t);
    }
  }
  json_decref(v);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_status = {
    .name = "status",
    .args = "",
    .summary = "the brokers sharing the store and which one leads",
    .help = "Lists every broker (replica) that has run on this store: its\n"
            "URL, whether it leads (holds the leader lease) or follows, its\n"
            "epoch and when it was last seen; and the lease itself.  On a\n"
            "sqlite store the one broker always leads and the list is\n"
            "empty (docs/ha.md).\n",
    .run = cmd_status,
};
