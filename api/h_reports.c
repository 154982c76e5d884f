/* h_reports.c - GET /v1/reports/spend: the ledger's spend, grouped, in one
 * of the formats of billing/report/report.h's table (JSON, CSV, FOCUS 1.0
 * CSV, a self-contained HTML page).  Budgets come from the tenancy module
 * when it keeps monthly ones, else from the config's billing.budgets. */
#include <string.h>

#include <stdio.h>
#include <stdlib.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "billing/ledger/ledger.h"
#include "billing/report/report.h"
#include "broker/base/clock.h"
#include "broker/tenancy/tenancy.h"

/* The tenancy module's monthly budgets, when it keeps any; *out NULL
 * otherwise (the report then reads the config's).  Weekly and daily
 * budgets are left out: reports compare budgets with months. */
static void tenancy_budgets(struct tw_req *r, struct tw_ledger_budget **out,
                            size_t *n) {
  struct tw_tenancy *t = tw_auth_tenancy(r);
  struct tw_tenant_info *tenants = NULL;
  size_t nt = 0, cap = 0;
  struct tw_err err = {0};
  *out = NULL;
  *n = 0;
  if (!t || tw_tenancy_tenant_list(t, &tenants, &nt, &err))
    return;
  for (size_t i = 0; i < nt; i++) {
    struct tw_budget *b = NULL;
    size_t nb = 0;
    if (tw_tenancy_budget_list(t, tenants[i].name, &b, &nb, &err))
      continue;
    for (size_t k = 0; k < nb; k++) {
      if (b[k].period != TW_PERIOD_MONTHLY || b[k].limit_uusd <= 0)
        continue;
      if (*n == cap) {
        cap = cap ? cap * 2 : 8;
        *out = tw_realloc(*out, cap * sizeof **out);
      }
      struct tw_ledger_budget *x = &(*out)[(*n)++];
      memset(x, 0, sizeof *x);
      snprintf(x->tenant, sizeof x->tenant, "%s", b[k].tenant);
      snprintf(x->project, sizeof x->project, "%s", b[k].project);
      x->limit_uusd = b[k].limit_uusd;
    }
    free(b);
  }
  free(tenants);
}

void tw_h_reports_spend(struct tw_req *r) {
  struct tw_err err = {0};
  struct tw_report_req q = {.adapters = tw_api_adapters(r->api)};
  struct tw_store *store = tw_api_store(r->api);
  q.now_ms = tw_clock_now_ms(tw_api_clock(r->api));
  const char *format = tw_req_query(r, "format");
  const char *group_by = tw_req_query(r, "group_by");
  const char *tenant = tw_req_query(r, "tenant");
  const char *project = tw_req_query(r, "project");
  if (format && *format && tw_report_format_parse(format, &q.format, &err))
    goto bad;
  if (tw_report_range_parse(tw_req_query(r, "from"), tw_req_query(r, "to"),
                            q.now_ms, &q.from_ms, &q.to_ms, &err))
    goto bad;
  if (group_by && tw_ledger_group_parse(group_by, &q.group_mask, &err))
    goto bad;
  q.tenant = tenant && *tenant ? tenant : NULL;
  q.project = project && *project ? project : NULL;
  /* The daemon migrates the ledger at start (billing/ledger/meter.h); a server
   * started without metering still answers, with an empty ledger. */
  struct tw_ledger_budget *budgets = NULL;
  size_t n_budgets = 0;
  tenancy_budgets(r, &budgets, &n_budgets);
  if (n_budgets) {
    q.budgets = budgets;
    q.n_budgets = n_budgets;
    q.budgets_source = "tenancy";
  }
  /* providers priced in another currency: their groups also carry the
   * amount in it, at the catalog's rate */
  struct tw_report_fx *fx = NULL;
  tw_report_fx_from_catalog(tw_api_catalog(r->api), &fx, &q.n_fx);
  q.fx = fx;
  const char *ctype = NULL;
  enum tw_rc rc = tw_report_render(store, &q, &r->out, &ctype, &err);
  free(budgets);
  free(fx);
  if (rc) {
    tw_problem_err(r, &err);
    return;
  }
  r->status = 200;
  r->content_type = ctype;
  if (q.format && q.format->filename) {
    char *disp = tw_asprintf("attachment; filename=\"%s\"", q.format->filename);
    tw_req_add_header(r, "Content-Disposition", disp);
    free(disp);
  }
  return;
bad:
  tw_problem(r, 400, "invalid-field", err.field, "%s", err.msg);
}
