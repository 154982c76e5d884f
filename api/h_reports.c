/* h_reports.c - GET /v1/reports/spend: the ledger's spend, grouped, as
 * JSON, CSV, FOCUS 1.0 CSV or a self-contained HTML page
 * (billing/report.h). */
#include <string.h>

#include "api_int.h"
#include "billing/ledger.h"
#include "billing/report.h"
#include "broker/clock.h"

void tw_h_reports_spend(struct tw_req *r) {
  struct tw_err err = {0};
  struct tw_report_req q = {0};
  struct tw_store *store = tw_api_store(r->api);
  q.now_ms = tw_clock_now_ms(tw_api_clock(r->api));
  const char *format = tw_req_query(r, "format");
  const char *group_by = tw_req_query(r, "group_by");
  const char *tenant = tw_req_query(r, "tenant");
  const char *project = tw_req_query(r, "project");
  if (format && *format && tw_report_format_parse(format, &q.format, &err))
    goto bad;
  if (tw_report_range_parse(tw_req_query(r, "from"), tw_req_query(r, "to"), q.now_ms,
                            &q.from_ms, &q.to_ms, &err))
    goto bad;
  if (group_by && tw_ledger_group_parse(group_by, &q.group_mask, &err))
    goto bad;
  q.tenant = tenant && *tenant ? tenant : NULL;
  q.project = project && *project ? project : NULL;
  /* The daemon migrates the ledger at start (billing/meter.h); a server
   * started without metering still answers, with an empty ledger. */
  const char *ctype = NULL;
  if (tw_ledger_migrate(store, &err) ||
      tw_report_render(store, &q, &r->out, &ctype, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  r->status = 200;
  r->content_type = ctype;
  if (q.format == TW_REPORT_CSV || q.format == TW_REPORT_FOCUS)
    tw_req_add_header(r, "Content-Disposition",
                      q.format == TW_REPORT_FOCUS
                          ? "attachment; filename=\"tradewind-focus.csv\""
                          : "attachment; filename=\"tradewind-spend.csv\"");
  return;
bad:
  tw_problem(r, 400, "invalid-field", err.field, "%s", err.msg);
}
