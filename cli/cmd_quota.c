/* cmd_quota.c - `tradewind quota get|set TENANT`.  set reads the quota
 * first and sends its ETag back with If-Match, so two admins changing it
 * at once cannot overwrite each other unseen (the second gets 412). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* shared with cmd_tenant.c */
const char *tn_jstr(json_t *o, const char *key);
int64_t tn_jint(json_t *o, const char *key);
void tn_print_table(struct tw_cli *c, struct tw_cli_table *t);
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out);
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp);

static char *quota_path(const char *tenant) {
  char *e = tw_cli_http_escape(tenant);
  char *p = tw_asprintf("/v1/tenants/%s/quota", e);
  free(e);
  return p;
}

static void limit_rows(struct tw_cli_table *t, json_t *obj,
                       const char *prefix) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    char name[96], lim[24], bor[24];
    snprintf(name, sizeof name, "%s%s", prefix, k);
    snprintf(lim, sizeof lim, "%" PRId64, tn_jint(v, "limit"));
    snprintf(bor, sizeof bor, "%" PRId64, tn_jint(v, "borrow"));
    const char *row[] = {name, lim, bor};
    tw_cli_table_add(t, row);
  }
}

static void print_quota(struct tw_cli *c, json_t *q) {
  static const char *const headers[] = {"RESOURCE", "LIMIT", "BORROW"};
  const char *cohort = tn_jstr(q, "cohort");
  fprintf(c->io->out,
          "Tenant      %s\nCohort      %s\nSpot share  %" PRId64
          "%%\nVersion     %" PRId64 "\n\n",
          tn_jstr(q, "tenant"), cohort ? cohort : "-",
          tn_jint(q, "spot_share_pct"), tn_jint(q, "version"));
  struct tw_cli_table t;
  tw_cli_table_init(&t, 3, headers);
  limit_rows(&t, json_object_get(q, "limits"), "");
  limit_rows(&t, json_object_get(q, "gpus"), "gpus.");
  if (t.nrows == 0) {
    const char *row[] = {"(everything)", "unlimited", "-"};
    tw_cli_table_add(&t, row);
  }
  tn_print_table(c, &t);
  tw_cli_table_release(&t);
}

static int cmd_quota_get(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *path = quota_path(p->pos[0]);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, &resp, &out);
  free(path);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      print_quota(c, out);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_quota_get = {
    .name = "quota get",
    .args = "TENANT",
    .summary = "show a tenant's quota",
    .help = "",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_quota_get,
};

enum { OPT_VCPUS = 1, OPT_JOBS, OPT_GPUS, OPT_SPOT, OPT_COHORT, OPT_NO_COHORT };

static const struct tw_cli_opt set_opts[] = {
    {"vcpus", 0, true, OPT_VCPUS},
    {"jobs", 0, true, OPT_JOBS},
    {"gpus", 0, true, OPT_GPUS},
    {"spot-share", 0, true, OPT_SPOT},
    {"cohort", 0, true, OPT_COHORT},
    {"no-cohort", 0, false, OPT_NO_COHORT},
    {0},
};

/* "N", "N:B" or "unlimited" into obj[key]; false when malformed. */
static bool put_limit(json_t *obj, const char *key, const char *text) {
  if (!strcmp(text, "unlimited")) {
    json_object_del(obj, key);
    return true;
  }
  long lim, bor = 0;
  char head[32];
  const char *colon = strchr(text, ':');
  snprintf(head, sizeof head, "%.*s",
           colon ? (int)(colon - text) : (int)strlen(text), text);
  if (tw_cli_parse_int(head, 0, 100000000, &lim) ||
      (colon && tw_cli_parse_int(colon + 1, 0, 100000000, &bor)))
    return false;
  json_object_set_new(obj, key,
                      json_pack("{s:I,s:I}", "limit", (json_int_t)lim, "borrow",
                                (json_int_t)bor));
  return true;
}

static int cmd_quota_set(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *path = quota_path(p->pos[0]);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *q = NULL;
  char *body = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, &resp, &q);
  if (code != TW_EXIT_OK)
    goto out;
  char etag[128];
  snprintf(etag, sizeof etag, "%s", resp.etag);
  tw_cli_http_resp_release(&resp);
  json_t *limits = json_object_get(q, "limits"),
         *gpus = json_object_get(q, "gpus");
  if (!json_is_object(limits) || !json_is_object(gpus)) {
    tw_cli_errorf(c, "the server's quota has no limits");
    code = TW_EXIT_UNREACHABLE;
    goto out;
  }
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    long n;
    switch (o->id) {
    case OPT_VCPUS:
    case OPT_JOBS:
      if (!put_limit(limits, o->id == OPT_VCPUS ? "vcpus" : "jobs", o->value)) {
        code = tw_cli_usage(
            c, "--%s: expected N, N:BORROW or unlimited, got \"%.40s\"",
            o->name, o->value);
        goto out;
      }
      break;
    case OPT_GPUS: {
      const char *eq = strchr(o->value, '=');
      char type[40];
      if (!eq || eq == o->value || (size_t)(eq - o->value) >= sizeof type) {
        code = tw_cli_usage(
            c, "--gpus: expected TYPE=N[:BORROW], got \"%.40s\"", o->value);
        goto out;
      }
      snprintf(type, sizeof type, "%.*s", (int)(eq - o->value), o->value);
      if (!put_limit(gpus, type, eq + 1)) {
        code = tw_cli_usage(
            c, "--gpus: expected TYPE=N[:BORROW] or TYPE=unlimited");
        goto out;
      }
      break;
    }
    case OPT_SPOT:
      if (tw_cli_parse_int(o->value, 0, 100, &n)) {
        code = tw_cli_usage(c, "--spot-share: expected a percentage 0..100");
        goto out;
      }
      json_object_set_new(q, "spot_share_pct", json_integer(n));
      break;
    case OPT_COHORT:
      json_object_set_new(q, "cohort", json_string(o->value));
      break;
    case OPT_NO_COHORT:
      json_object_set_new(q, "cohort", json_null());
      break;
    default:
      break;
    }
  }
  json_object_del(q, "tenant");
  json_object_del(q, "version");
  body = json_dumps(q, JSON_COMPACT);
  json_decref(q);
  q = NULL;
  code = tn_call(c, "PUT", path, body, etag[0] ? etag : NULL, &resp, &q);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      print_quota(c, q);
  }
out:
  free(body);
  free(path);
  json_decref(q);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_quota_set = {
    .name = "quota set",
    .args = "TENANT",
    .summary = "change a tenant's quota (admin)",
    .help =
        "Options (unnamed limits stay as they are):\n"
        "  --vcpus N[:BORROW]        vCPUs held at once; BORROW more on the\n"
        "                            cohort's idle quota; or \"unlimited\"\n"
        "  --jobs N[:BORROW]         jobs holding an attempt at once\n"
        "  --gpus TYPE=N[:BORROW]    per accelerator type (\"A100\" covers "
        "its\n"
        "                            variants, \"*\" every type); repeatable\n"
        "  --spot-share PCT          vCPUs that may run on spot, % of the "
        "limit\n"
        "  --cohort NAME             lend and borrow within this cohort\n"
        "  --no-cohort\n"
        "\n"
        "Reads the quota, changes it and writes it back with If-Match: if\n"
        "somebody changed it meanwhile, nothing is written (exit 5).\n",
    .opts = set_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_quota_set,
};
