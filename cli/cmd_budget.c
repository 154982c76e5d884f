/* cmd_budget.c - `tradewind budget get|set|status TENANT`.  Amounts are
 * given and shown in USD and travel as integer micro-USD. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/core/spec.h"
#include "cli/cli_int.h"

/* shared with cmd_tenant.c */
const char *tn_jstr(json_t *o, const char *key);
int64_t tn_jint(json_t *o, const char *key);
void tn_print_table(struct tw_cli *c, struct tw_cli_table *t);
int tn_call(struct tw_cli *c, const char *method, const char *path,
            const char *body, const char *if_match,
            struct tw_cli_http_resp *resp, json_t **out);
int tn_print(struct tw_cli *c, const struct tw_cli_http_resp *resp);

enum {
  OPT_PROJECT = 1,
  OPT_LIMIT,
  OPT_PERIOD,
  OPT_THRESHOLDS,
  OPT_HARD,
  OPT_SOFT,
  OPT_STOP,
  OPT_NO_STOP,
  OPT_WEBHOOK
};

static char *budget_path(const char *tenant, const char *project) {
  char *t = tw_cli_http_escape(tenant);
  char *p;
  if (project) {
    char *e = tw_cli_http_escape(project);
    p = tw_asprintf("/v1/tenants/%s/projects/%s/budget", t, e);
    free(e);
  } else {
    p = tw_asprintf("/v1/tenants/%s/budget", t);
  }
  free(t);
  return p;
}

static void usd(json_t *o, const char *key, char *out, size_t outsz) {
  tw_cli_fmt_uusd(tn_jint(o, key), out, outsz);
}

static void print_budget(struct tw_cli *c, json_t *b) {
  json_t *s = json_object_get(b, "status");
  char lim[40], sp[40], co[40], fc[40], rem[40], thr[64] = "";
  usd(b, "limit_uusd", lim, sizeof lim);
  usd(s, "spent_uusd", sp, sizeof sp);
  usd(s, "committed_uusd", co, sizeof co);
  usd(s, "forecast_uusd", fc, sizeof fc);
  usd(s, "remaining_uusd", rem, sizeof rem);
  json_t *th = json_object_get(b, "thresholds_pct");
  for (size_t i = 0; i < json_array_size(th); i++)
    snprintf(thr + strlen(thr), sizeof thr - strlen(thr),
             "%s%" JSON_INTEGER_FORMAT "%%", i ? " " : "",
             json_integer_value(json_array_get(th, i)));
  const char *project = tn_jstr(b, "project"), *hook = tn_jstr(b, "webhook");
  fprintf(c->io->out,
          "Tenant      %s\nProject     %s\nPeriod      %s (%.10s to %.10s)\n"
          "Limit       %s\nMode        %s%s\nThresholds  %s\nWebhook     %s\n"
          "Spent       %s\nCommitted   %s\nForecast    %s\nRemaining   %s\n",
          tn_jstr(b, "tenant"), project ? project : "(whole tenant)",
          tn_jstr(b, "period"),
          tn_jstr(s, "period_start") ? tn_jstr(s, "period_start") : "",
          tn_jstr(s, "period_end") ? tn_jstr(s, "period_end") : "", lim,
          tn_jstr(b, "mode"),
          json_is_true(json_object_get(b, "stop_running"))
              ? ", stops running jobs"
              : "",
          thr, hook ? hook : "-", sp, co, fc, rem);
}

static const struct tw_cli_opt get_opts[] = {{"project", 0, true, OPT_PROJECT},
                                             {0}};

static const char *project_of(const struct tw_cli_parsed *p) {
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_PROJECT)
      return p->opts[i].value;
  return NULL;
}

static int cmd_budget_get(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *path = budget_path(p->pos[0], project_of(p));
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, &resp, &out);
  free(path);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      print_budget(c, out);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_budget_get = {
    .name = "budget get",
    .args = "TENANT",
    .summary = "show a budget: limit, spent, committed, forecast",
    .help = "Options:\n  --project NAME   the project's budget, not the "
            "tenant-wide one\n",
    .opts = get_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_budget_get,
};

static const struct tw_cli_opt set_opts[] = {
    {"project", 0, true, OPT_PROJECT},
    {"limit", 0, true, OPT_LIMIT},
    {"period", 0, true, OPT_PERIOD},
    {"thresholds", 0, true, OPT_THRESHOLDS},
    {"hard", 0, false, OPT_HARD},
    {"soft", 0, false, OPT_SOFT},
    {"stop-running", 0, false, OPT_STOP},
    {"no-stop-running", 0, false, OPT_NO_STOP},
    {"webhook", 0, true, OPT_WEBHOOK},
    {0},
};

static int cmd_budget_set(struct tw_cli *c, const struct tw_cli_parsed *p) {
  char *path = budget_path(p->pos[0], project_of(p));
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *b = NULL;
  char *body = NULL, etag[128] = "";
  /* the current budget, if any, and its ETag */
  struct tw_cli_http_req get = {.base_url = c->url,
                                .token = c->token,
                                .method = "GET",
                                .path = path,
                                .cacert = c->cacert};
  struct tw_err err;
  tw_err_clear(&err);
  int code = TW_EXIT_OK;
  if (tw_cli_http_do(&get, &resp, &err)) {
    tw_cli_errorf(c, "%s", err.msg);
    code = TW_EXIT_UNREACHABLE;
    goto out;
  }
  if (resp.status == 200) {
    b = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0,
                   NULL);
    snprintf(etag, sizeof etag, "%s", resp.etag);
  } else if (resp.status != 404) {
    code = tn_call(c, "GET", path, NULL, NULL, NULL, NULL); /* says why */
    goto out;
  }
  if (!b)
    b = json_object();
  json_object_del(b, "status");
  json_object_del(b, "version");
  json_object_del(b, "tenant");
  json_object_del(b, "project");
  bool has_limit = json_is_integer(json_object_get(b, "limit_uusd"));
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    int64_t v;
    switch (o->id) {
    case OPT_LIMIT:
      if (tw_parse_usd_uusd(o->value, &v) || v < 0) {
        code = tw_cli_usage(
            c, "--limit: expected USD like 250 or 99.50, got \"%.40s\"",
            o->value);
        goto out;
      }
      json_object_set_new(b, "limit_uusd", json_integer(v));
      has_limit = true;
      break;
    case OPT_PERIOD:
      json_object_set_new(b, "period", json_string(o->value));
      break;
    case OPT_THRESHOLDS: {
      json_t *arr = json_array();
      char buf[128];
      snprintf(buf, sizeof buf, "%s", o->value);
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        long n;
        if (tw_cli_parse_int(tok, 1, 1000, &n)) {
          json_decref(arr);
          code = tw_cli_usage(
              c, "--thresholds: expected percentages like 50,80,100");
          goto out;
        }
        json_array_append_new(arr, json_integer(n));
      }
      json_object_set_new(b, "thresholds_pct", arr);
      break;
    }
    case OPT_HARD:
    case OPT_SOFT:
      json_object_set_new(b, "mode",
                          json_string(o->id == OPT_HARD ? "hard" : "soft"));
      break;
    case OPT_STOP:
    case OPT_NO_STOP:
      json_object_set_new(b, "stop_running", json_boolean(o->id == OPT_STOP));
      break;
    case OPT_WEBHOOK:
      json_object_set_new(b, "webhook",
                          *o->value ? json_string(o->value) : json_null());
      break;
    default:
      break;
    }
  }
  if (!has_limit) {
    code = tw_cli_usage(c, "--limit USD is required for a new budget");
    goto out;
  }
  body = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  b = NULL;
  tw_cli_http_resp_release(&resp);
  code = tn_call(c, "PUT", path, body, etag[0] ? etag : NULL, &resp, &b);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tn_print(c, &resp);
    else
      print_budget(c, b);
  }
out:
  free(body);
  free(path);
  json_decref(b);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_budget_set = {
    .name = "budget set",
    .args = "TENANT",
    .summary = "create or change a budget (admin, tenant-admin, finance)",
    .help =
        "Options (unnamed settings stay as they are):\n"
        "  --project NAME          the project's budget, not the tenant-wide "
        "one\n"
        "  --limit USD             the limit per period, e.g. 2500 or 99.50\n"
        "  --period P              monthly (default), weekly or daily (UTC)\n"
        "  --thresholds LIST       alert percentages; default 50,80,100\n"
        "  --hard | --soft         hard refuses jobs that do not fit; soft\n"
        "                          (default) only alerts\n"
        "  --stop-running          hard only: stop live jobs once spent +\n"
        "                          committed reaches the limit\n"
        "  --no-stop-running\n"
        "  --webhook URL           POSTed JSON at each threshold; \"\" for "
        "none\n",
    .opts = set_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_budget_set,
};

static int cmd_budget_status(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {"PROJECT",  "PERIOD", "MODE",
                                        "LIMIT",    "SPENT",  "COMMITTED",
                                        "FORECAST", "ALERTED"};
  char *t = tw_cli_http_escape(p->pos[0]);
  char *path = tw_asprintf("/v1/tenants/%s/budgets", t);
  free(t);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *out = NULL;
  int code = tn_call(c, "GET", path, NULL, NULL, &resp, &out);
  free(path);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    code = tn_print(c, &resp);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table tb;
    tw_cli_table_init(&tb, 8, headers);
    json_t *items = json_object_get(out, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *b = json_array_get(items, i), *s = json_object_get(b, "status");
      char lim[40], sp[40], co[40], fc[40], al[16];
      usd(b, "limit_uusd", lim, sizeof lim);
      usd(s, "spent_uusd", sp, sizeof sp);
      usd(s, "committed_uusd", co, sizeof co);
      usd(s, "forecast_uusd", fc, sizeof fc);
      snprintf(al, sizeof al, "%" PRId64 "%%", tn_jint(s, "alerted_pct"));
      const char *row[] = {tn_jstr(b, "project") ? tn_jstr(b, "project") : "*",
                           tn_jstr(b, "period"),
                           tn_jstr(b, "mode"),
                           lim,
                           sp,
                           co,
                           fc,
                           tn_jint(s, "alerted_pct") ? al : "-"};
      tw_cli_table_add(&tb, row);
    }
    tn_print_table(c, &tb);
    tw_cli_table_release(&tb);
  }
  json_decref(out);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_budget_status = {
    .name = "budget status",
    .args = "TENANT",
    .summary = "every budget of a tenant: spent, committed, forecast",
    .help =
        "Spent is this period's actual spend; committed what live jobs are\n"
        "projected to spend still; forecast what the period will end at.\n",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_budget_status,
};
