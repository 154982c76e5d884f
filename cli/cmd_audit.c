/* cmd_audit.c - `tradewind audit list|export|verify`.
 *
 * verify re-computes the SHA-256 chain here, from the entries the server
 * hands out (GET /v1/audit, admin), rather than trusting the server's own
 * verdict; with --db it reads a database file directly, no daemon needed.
 * Either way it names the first entry altered, removed or reordered. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/tenancy/audit.h"
#include "cli/cli_int.h"

/* shared with cmd_tenant.c */
const char *tn_jstr(json_t *o, const char *key);
int64_t tn_jint(json_t *o, const char *key);
void tn_param(struct tw_buf *q, const char *name, const char *value);
void tn_print_table(struct tw_cli *c, struct tw_cli_table *t);
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out);
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp);

#define PAGE 10000
#define MAX_PAGES 100000

enum {
  OPT_TENANT = 1,
  OPT_PRINCIPAL,
  OPT_ACTION,
  OPT_OUTCOME,
  OPT_SINCE,
  OPT_UNTIL,
  OPT_LIMIT,
  OPT_AFTER,
  OPT_DB
};

static const struct tw_cli_opt filter_opts[] = {
    {"tenant", 0, true, OPT_TENANT},
    {"principal", 0, true, OPT_PRINCIPAL},
    {"action", 0, true, OPT_ACTION},
    {"outcome", 0, true, OPT_OUTCOME},
    {"since", 0, true, OPT_SINCE},
    {"until", 0, true, OPT_UNTIL},
    {"limit", 0, true, OPT_LIMIT},
    {"after", 0, true, OPT_AFTER},
    {0},
};

#define FILTER_HELP                                                            \
  "Options:\n"                                                                 \
  "  --tenant NAME       only this tenant's entries\n"                         \
  "  --principal NAME    only this principal's\n"                              \
  "  --action ACTION     exactly: \"POST /v1/jobs\", \"sched.place\",\n"       \
  "                      \"quota.reclaim\", \"budget.stop\", ...\n"            \
  "  --outcome OUTCOME   ok, denied, refused, error, preempted\n"              \
  "  --since TIME        RFC 3339; --until TIME (exclusive)\n"                 \
  "  --after SEQ         entries after this sequence number\n"                 \
  "  --limit N           at most N (list: default 100)\n"

/* The query of the filters, without limit and after. */
static void filters(const struct tw_cli_parsed *p, struct tw_buf *q,
                    long *limit, const char **after) {
  static const char *const names[] = {
      NULL, "tenant", "principal", "action", "outcome", "since", "until"};
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    if (o->id >= OPT_TENANT && o->id <= OPT_UNTIL)
      tn_param(q, names[o->id], o->value);
    else if (o->id == OPT_LIMIT && limit)
      tw_cli_parse_int(o->value, 1, 1000000000, limit);
    else if (o->id == OPT_AFTER && after)
      *after = o->value;
  }
}

/* One page of entries after `after`; *next is 0 after the last. */
static int page(struct tw_cli *c, const struct tw_buf *q, int64_t after,
                long limit, json_t **items, int64_t *next) {
  char *path =
      tw_asprintf("/v1/audit%s%safter=%" PRId64 "&limit=%ld",
                  q->len ? q->data : "", q->len ? "&" : "?", after, limit);
  json_t *out = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, NULL, &out);
  free(path);
  if (code)
    return code;
  *items = json_incref(json_object_get(out, "items"));
  const char *nc = tn_jstr(out, "next_cursor");
  *next = nc ? strtoll(nc, NULL, 10) : 0;
  json_decref(out);
  if (!json_is_array(*items)) {
    tw_cli_errorf(c, "the server's audit page has no items");
    return TW_EXIT_UNREACHABLE;
  }
  return TW_EXIT_OK;
}

static int cmd_audit_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {
      "SEQ", "TIME", "PRINCIPAL", "TENANT", "ACTION", "OBJECT", "OUTCOME"};
  struct tw_buf q;
  tw_buf_init(&q);
  long limit = 100;
  const char *after = NULL;
  filters(p, &q, &limit, &after);
  json_t *items = NULL;
  int64_t next = 0;
  int code = page(c, &q, after ? strtoll(after, NULL, 10) : 0,
                  limit > PAGE ? PAGE : limit, &items, &next);
  tw_buf_release(&q);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    json_t *doc = json_pack("{s:O}", "items", items);
    code = tw_cli_print_json(c, doc);
    json_decref(doc);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table t;
    tw_cli_table_init(&t, 7, headers);
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *e = json_array_get(items, i);
      char seq[24], at[24];
      snprintf(seq, sizeof seq, "%" PRId64, tn_jint(e, "seq"));
      snprintf(at, sizeof at, "%.19s",
               tn_jstr(e, "at") ? tn_jstr(e, "at") : "-");
      const char *row[] = {seq,
                           at,
                           tn_jstr(e, "principal"),
                           tn_jstr(e, "tenant"),
                           tn_jstr(e, "action"),
                           tn_jstr(e, "object"),
                           tn_jstr(e, "outcome")};
      tw_cli_table_add(&t, row);
    }
    tn_print_table(c, &t);
    tw_cli_table_release(&t);
    if (next)
      tw_cli_errorf(c, "more entries: add --after %" PRId64, next);
  }
  json_decref(items);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_audit_list = {
    .name = "audit list",
    .args = "",
    .summary = "show audit entries, oldest first",
    .help = FILTER_HELP,
    .opts = filter_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_audit_list,
};

static int cmd_audit_export(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_buf q;
  tw_buf_init(&q);
  long limit = 0;
  const char *after = NULL;
  filters(p, &q, &limit, &after);
  int64_t from = after ? strtoll(after, NULL, 10) : 0,
          left = limit ? limit : INT64_MAX;
  int code = TW_EXIT_OK;
  for (int n = 0; n < MAX_PAGES && left > 0; n++) {
    json_t *items = NULL;
    int64_t next = 0;
    if ((code =
             page(c, &q, from, left < PAGE ? (long)left : PAGE, &items, &next)))
      break;
    for (size_t i = 0; i < json_array_size(items); i++) {
      char *line = json_dumps(json_array_get(items, i),
                              JSON_COMPACT | JSON_PRESERVE_ORDER);
      fprintf(c->io->out, "%s\n", line);
      free(line);
    }
    left -= (int64_t)json_array_size(items);
    json_decref(items);
    if (!next)
      break;
    from = next;
  }
  tw_buf_release(&q);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_audit_export = {
    .name = "audit export",
    .args = "",
    .summary = "write audit entries as JSON lines (each with its hashes)",
    .help = FILTER_HELP,
    .opts = filter_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_audit_export,
};

static const struct tw_cli_opt verify_opts[] = {{"db", 0, true, OPT_DB}, {0}};

/* The entries of a page as the hash reads them; strings borrowed from
 * items. */
static void to_entries(json_t *items, struct tw_audit_entry *e) {
  for (size_t i = 0; i < json_array_size(items); i++) {
    json_t *x = json_array_get(items, i);
    memset(&e[i], 0, sizeof e[i]);
    e[i].seq = tn_jint(x, "seq");
    e[i].at_ms = tn_jint(x, "at_ms");
    e[i].principal = (char *)tn_jstr(x, "principal");
    e[i].tenant = (char *)tn_jstr(x, "tenant");
    e[i].action = (char *)tn_jstr(x, "action");
    e[i].object = (char *)tn_jstr(x, "object");
    e[i].outcome = (char *)tn_jstr(x, "outcome");
    e[i].request_id = (char *)tn_jstr(x, "request_id");
    e[i].detail = (char *)tn_jstr(x, "detail");
    snprintf(e[i].prev_hash, sizeof e[i].prev_hash, "%s",
             tn_jstr(x, "prev_hash") ? tn_jstr(x, "prev_hash") : "");
    snprintf(e[i].hash, sizeof e[i].hash, "%s",
             tn_jstr(x, "hash") ? tn_jstr(x, "hash") : "");
  }
}

static int cmd_audit_verify(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *db = NULL;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_DB)
      db = p->opts[i].value;
  int64_t count = 0;
  char head[TW_AUDIT_HASH_HEX] =
      "0000000000000000000000000000000000000000000000000000000000000000";
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = TW_OK;
  if (db) {
    rc = tw_audit_verify_file(db, &count, head, &err);
    if (rc && rc != TW_E_CONFLICT) {
      tw_cli_errorf(c, "%s", err.msg);
      return TW_EXIT_USAGE;
    }
  } else {
    /* The whole log is the admin's to read: a tenant's view has gaps by
     * design.  The server's own verdict comes first (and refuses anybody
     * else); then the chain is computed here from what it hands out. */
    json_t *server = NULL;
    int code = tn_call(c, "GET", "/v1/audit/verify", NULL, NULL, NULL, &server);
    if (code)
      return code;
    json_decref(server);
    struct tw_buf q;
    tw_buf_init(&q);
    int64_t next_seq = 1, after = 0;
    for (int n = 0; n < MAX_PAGES && rc == TW_OK; n++) {
      json_t *items = NULL;
      int64_t next = 0;
      code = page(c, &q, after, PAGE, &items, &next);
      if (code) {
        tw_buf_release(&q);
        return code;
      }
      size_t k = json_array_size(items);
      struct tw_audit_entry *e = tw_calloc(k ? k : 1, sizeof *e);
      to_entries(items, e);
      rc = tw_audit_verify_entries(e, k, next_seq, head, &err);
      if (rc == TW_OK && k) {
        memcpy(head, e[k - 1].hash, sizeof head);
        next_seq = e[k - 1].seq + 1;
        after = e[k - 1].seq;
        count += (int64_t)k;
      }
      free(e);
      json_decref(items);
      if (!next)
        break;
    }
    tw_buf_release(&q);
  }
  if (rc == TW_E_CONFLICT) {
    fprintf(c->io->out, "audit log broken: %s\n", err.msg);
    return TW_EXIT_JOB_FAILED;
  }
  if (tw_cli_structured(c))
    fprintf(c->io->out,
            "{\n  \"ok\": true,\n  \"entries\": %" PRId64
            ",\n  \"head\": \"%s\"\n}\n",
            count, head);
  else
    fprintf(c->io->out, "audit log intact: %" PRId64 " entries, head %s\n",
            count, head);
  return TW_EXIT_OK;
}

const struct tw_cli_cmd tw_cli_cmd_audit_verify = {
    .name = "audit verify",
    .args = "",
    .summary = "check the audit chain; names the first bad entry",
    .help =
        "Options:\n"
        "  --db FILE   read the broker's sqlite file directly (no daemon)\n"
        "\n"
        "Without --db the entries come from the server (admin) and the hashes\n"
        "are computed here.  Keep the head hash it prints somewhere else:\n"
        "removing the newest entries leaves a chain that still holds.\n"
        "Exit 0 intact, 1 broken.\n",
    .opts = verify_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_audit_verify,
};
