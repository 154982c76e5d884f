/* cmd_report.c - `tradewind report spend`: the ledger's spend over a range,
 * grouped, as a table or in one of the report formats of
 * billing/report/report.h (GET /v1/reports/spend). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "billing/report/report.h"
#include "cli/cli_int.h"

enum {
  OPT_FROM = 1,
  OPT_TO,
  OPT_GROUP_BY,
  OPT_FORMAT,
  OPT_TENANT,
  OPT_PROJECT,
  OPT_OUT
};

static const struct tw_cli_opt spend_opts[] = {
    {"from", 0, true, OPT_FROM},         {"to", 0, true, OPT_TO},
    {"group-by", 0, true, OPT_GROUP_BY}, {"format", 0, true, OPT_FORMAT},
    {"tenant", 0, true, OPT_TENANT},     {"project", 0, true, OPT_PROJECT},
    {"out", 0, true, OPT_OUT},           {0},
};

static void add_param(struct tw_buf *q, const char *name, const char *value) {
  char *e = tw_cli_http_escape(value);
  tw_buf_printf(q, "%c%s=%s", strchr(q->data ? q->data : "", '?') ? '&' : '?',
                name, e);
  free(e);
}

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t jint(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* The grouped sums as a table, then the total and the forecast. */
static int print_table(struct tw_cli *c, json_t *body) {
  json_t *groups = json_object_get(body, "group_by");
  json_t *items = json_object_get(body, "items");
  if (!json_is_array(groups) || !json_is_array(items)) {
    tw_cli_errorf(c, "the server's report has no items");
    return TW_EXIT_UNREACHABLE;
  }
  size_t nd = json_array_size(groups);
  if (nd > 6)
    nd = 6;
  const char *headers[10];
  char upper[6][16];
  for (size_t d = 0; d < nd; d++) {
    const char *g = json_string_value(json_array_get(groups, d));
    size_t k = 0;
    for (; g && g[k] && k < sizeof upper[d] - 1; k++)
      upper[d][k] = (char)(g[k] >= 'a' && g[k] <= 'z' ? g[k] - 32 : g[k]);
    upper[d][k] = '\0';
    headers[d] = upper[d];
  }
  headers[nd] = "LIST";
  headers[nd + 1] = "EFFECTIVE";
  headers[nd + 2] = "ROWS";
  /* a provider priced in another currency: its amount and the rate */
  bool fx = false;
  for (size_t i = 0; i < json_array_size(items); i++)
    fx |= jstr(json_array_get(items, i), "source_currency") != NULL;
  headers[nd + 3] = "IN SOURCE CURRENCY";
  struct tw_cli_table t;
  tw_cli_table_init(&t, nd + 3 + fx, headers);
  for (size_t i = 0; i < json_array_size(items); i++) {
    json_t *it = json_array_get(items, i);
    const char *row[10];
    char l[40], e[40], n[24], src[96] = "";
    const char *cur = jstr(it, "source_currency");
    if (cur)
      snprintf(src, sizeof src, "%s %s at %s (%s)", cur,
               jstr(it, "source_amount") ? jstr(it, "source_amount") : "?",
               jstr(it, "rate") ? jstr(it, "rate") : "?",
               jstr(it, "rate_date") ? jstr(it, "rate_date") : "?");
    row[nd + 3] = src;
    for (size_t d = 0; d < nd; d++)
      row[d] = jstr(it, json_string_value(json_array_get(groups, d)));
    tw_cli_fmt_uusd(jint(it, "list_cost_uusd"), l, sizeof l);
    tw_cli_fmt_uusd(jint(it, "effective_cost_uusd"), e, sizeof e);
    snprintf(n, sizeof n, "%lld", (long long)jint(it, "rows"));
    row[nd] = l;
    row[nd + 1] = e;
    row[nd + 2] = n;
    tw_cli_table_add(&t, row);
  }
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_table_render(&t, &b);
  tw_cli_table_release(&t);
  json_t *total = json_object_get(body, "total");
  json_t *fc = json_object_get(body, "forecast");
  char l[40], e[40], f[40], rate[40];
  tw_cli_fmt_uusd(jint(total, "list_cost_uusd"), l, sizeof l);
  tw_cli_fmt_uusd(jint(total, "effective_cost_uusd"), e, sizeof e);
  tw_cli_fmt_uusd(jint(fc, "effective_cost_uusd"), f, sizeof f);
  tw_cli_fmt_uusd(jint(fc, "run_rate_uusd_per_day"), rate, sizeof rate);
  fprintf(c->io->out, "%s\nTotal: %s effective, %s list, from %s to %s\n",
          b.data, e, l, jstr(body, "from") ? jstr(body, "from") : "?",
          jstr(body, "to") ? jstr(body, "to") : "?");
  fprintf(c->io->out, "Forecast to %s: %s (run rate %s/day)\n",
          jstr(fc, "to") ? jstr(fc, "to") : "?", f, rate);
  json_t *budgets = json_object_get(json_object_get(body, "budgets"), "items");
  for (size_t i = 0; i < json_array_size(budgets); i++) {
    json_t *x = json_array_get(budgets, i);
    char lim[40], sp[40], fo[40];
    tw_cli_fmt_uusd(jint(x, "limit_uusd"), lim, sizeof lim);
    tw_cli_fmt_uusd(jint(x, "spent_uusd"), sp, sizeof sp);
    tw_cli_fmt_uusd(jint(x, "forecast_uusd"), fo, sizeof fo);
    struct tw_buf who;
    tw_buf_init(&who);
    tw_cli_add_clean(&who,
                     jstr(x, "tenant") ? jstr(x, "tenant") : "all tenants");
    if (jstr(x, "project")) {
      tw_buf_addc(&who, '/');
      tw_cli_add_clean(&who, jstr(x, "project"));
    }
    fprintf(c->io->out, "Budget %s: %s a month, spent %s, forecast %s%s\n",
            who.data, lim, sp, fo,
            jint(x, "forecast_uusd") > jint(x, "limit_uusd") ? " (over)" : "");
    tw_buf_release(&who);
  }
  tw_buf_release(&b);
  return TW_EXIT_OK;
}

/* CSV, FOCUS and HTML: the body as the server wrote it. */
static int fetch_raw(struct tw_cli *c, const char *path, const char *out) {
  struct tw_cli_http_req req = {.base_url = c->url,
                                .token = c->token,
                                .method = "GET",
                                .path = path,
                                .timeout_ms = 300000,
                                .cacert = c->cacert};
  struct tw_cli_http_resp resp;
  struct tw_err err;
  tw_err_clear(&err);
  tw_cli_http_resp_init(&resp);
  int code = TW_EXIT_OK;
  enum tw_rc rc = tw_cli_http_do(&req, &resp, &err);
  if (rc != TW_OK) {
    tw_cli_errorf(c, "%s", err.msg);
    code = rc == TW_E_INVALID ? TW_EXIT_USAGE : TW_EXIT_UNREACHABLE;
    goto done;
  }
  if ((rc = tw_cli_http_status_rc(resp.status)) != TW_OK) {
    struct tw_buf line;
    tw_buf_init(&line);
    tw_cli_problem_line(resp.status, resp.body.data, resp.body.len, &line);
    tw_cli_errorf(c, "%s", line.data);
    tw_buf_release(&line);
    code = tw_cli_exit_for_rc(rc);
    goto done;
  }
  FILE *f = out ? fopen(out, "wb") : c->io->out;
  if (!f) {
    tw_cli_errorf(c, "--out %s: cannot open for writing", out);
    code = TW_EXIT_USAGE;
    goto done;
  }
  if (resp.body.len)
    fwrite(resp.body.data, 1, resp.body.len, f);
  if (out) {
    if (fclose(f) != 0) {
      tw_cli_errorf(c, "--out %s: write failed", out);
      code = TW_EXIT_USAGE;
    } else {
      fprintf(c->io->err, "wrote %zu bytes to %s\n", resp.body.len, out);
    }
  }
done:
  tw_cli_http_resp_release(&resp);
  return code;
}

static int cmd_report_spend(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *format = "json", *out = NULL;
  struct tw_buf path;
  tw_buf_init(&path);
  tw_buf_adds(&path, "/v1/reports/spend");
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    switch (o->id) {
    case OPT_FROM:
      add_param(&path, "from", o->value);
      break;
    case OPT_TO:
      add_param(&path, "to", o->value);
      break;
    case OPT_GROUP_BY:
      add_param(&path, "group_by", o->value);
      break;
    case OPT_TENANT:
      add_param(&path, "tenant", o->value);
      break;
    case OPT_PROJECT:
      add_param(&path, "project", o->value);
      break;
    case OPT_FORMAT:
      format = o->value;
      break;
    case OPT_OUT:
      out = o->value;
      break;
    default:
      break;
    }
  }
  int code;
  const struct tw_report_format *f = NULL;
  struct tw_err err = {0};
  /* The names come from the server's table (billing/report/report.h); the
   * CLI itself only knows json, which it can show as a table. */
  if (tw_report_format_parse(format, &f, &err)) {
    code = tw_cli_usage(c, "--%s", err.msg);
  } else if (strcmp(f->name, "json") || out) {
    add_param(&path, "format", format);
    code = fetch_raw(c, path.data, out);
  } else {
    json_t *body = NULL;
    struct tw_cli_http_resp resp;
    tw_cli_http_resp_init(&resp);
    code =
        tw_cli_request(c, "GET", path.data, NULL, NULL, 0, NULL, &resp, &body);
    if (code == TW_EXIT_OK)
      code = tw_cli_structured(c)
                 ? tw_cli_print_json_text(c, resp.body.data, resp.body.len)
                 : print_table(c, body);
    json_decref(body);
    tw_cli_http_resp_release(&resp);
  }
  tw_buf_release(&path);
  return code;
}

/* "Formats:" and a line per row of the report formats' table. */
static void formats_help(struct tw_buf *out) {
  tw_buf_adds(out, "Formats:\n");
  for (size_t i = 0; tw_report_formats[i].name; i++)
    tw_buf_printf(out, "  %-20s  %s\n", tw_report_formats[i].name,
                  tw_report_formats[i].summary);
}

const struct tw_cli_cmd tw_cli_cmd_report_spend = {
    .name = "report spend",
    .args = "",
    .summary = "spend from the ledger, as a table or in a report format",
    .help =
        "Options:\n"
        "  --from DATE|TIME      start (2026-11-01 or RFC 3339); default the\n"
        "                        start of the current month (UTC)\n"
        "  --to DATE|TIME        end, exclusive; default the next month's "
        "start\n"
        "  --group-by LIST       tenant,project,provider,region,day,job,\n"
        "                        market (with tenant,project,day only)\n"
        "                        (default tenant,provider,day)\n"
        "  --format FORMAT       one of the formats below (default json,\n"
        "                        shown as a table unless -o json)\n"
        "  --tenant NAME         only this tenant\n"
        "  --project NAME        only this project\n"
        "  --out FILE            write the answer to FILE instead of stdout\n",
    .help_more = formats_help,
    .opts = spend_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_report_spend,
};
