/* report_int.h - what report.c, focus.c and html.c share: the computed
 * report model.  Nobody else includes it. */
#ifndef TW_BILLING_REPORT_INT_H
#define TW_BILLING_REPORT_INT_H

#include "billing/ledger/ledger.h"
#include "billing/report/report.h"

struct tw_report_tenant {
  char tenant[TW_LEDGER_NAME_MAX];
  int64_t spent_uusd; /* effective, over the range */
  int64_t list_uusd;
  int64_t forecast_uusd; /* to the end of the range */
};

struct tw_report_budget {
  struct tw_ledger_budget b;
  int64_t spent_uusd;   /* ledger plus accrued (tw_ledger_spent_now) */
  int64_t accrued_uusd; /* of which accrued */
  int64_t forecast_uusd;
};

/* A job group's job, as its owner submitted it. */
struct tw_report_job {
  char name[128];  /* "" unknown */
  char owner[64];  /* principal that submitted it; "" unknown */
};

/* Everything a rendering needs; built by report__build, released by
 * report__release. */
struct tw_report {
  const struct tw_report_req *req;
  unsigned mask;                  /* effective grouping */
  struct tw_ledger_group *groups; /* by req's grouping */
  size_t n_groups;
  /* grouped by job: each group's job name and owner (NULL otherwise;
   * the first TW_REPORT_NAMED_JOBS groups) */
  struct tw_report_job *jobs;
  int64_t total_list_uusd, total_effective_uusd, total_rows;
  /* of the totals, what running attempts accrued since their last
   * closed charge period */
  int64_t total_accrued_list_uusd, total_accrued_effective_uusd;
  struct tw_ledger_group *by_provider_day; /* provider x day, for the chart */
  size_t n_by_provider_day;
  /* The chart's resolution follows the range: hours for two days or
   * less, else days.  by_provider_bucket: provider x bucket, the bucket's
   * index from the range's start in `day`. */
  int64_t bucket_ms;
  size_t n_buckets;
  struct tw_ledger_group *by_provider_bucket;
  size_t n_by_provider_bucket;
  /* by market (spot, on-demand, ...): the split the page shows */
  struct tw_ledger_group *by_market;
  size_t n_by_market;
  /* tenant x project x bucket: the burn-down of a budget's own scope */
  struct tw_ledger_group *by_scope_bucket;
  size_t n_by_scope_bucket;
  struct tw_report_tenant *tenants; /* by tenant, largest first */
  size_t n_tenants;
  int64_t window_from_ms, window_to_ms; /* run-rate window; empty: none */
  int64_t run_rate_uusd_per_day;        /* effective */
  int64_t forecast_uusd;                /* overall, to the range's end */
  struct tw_report_budget *budgets;
  size_t n_budgets;
  const char *budget_source; /* "config" | "tenancy" | ... */
};

#define TW_REPORT_NAMED_JOBS 5000

enum tw_rc report__build(struct tw_store *s, const struct tw_report_req *req,
                         struct tw_report *out, struct tw_err *err);
void report__release(struct tw_report *r);

/* The projection of spend so far plus the window's rate to the range end. */
int64_t report__forecast(const struct tw_report *r, int64_t spent_uusd,
                         int64_t window_uusd);

/* The other currency group g of r is priced in (req->fx: grouped by
 * provider, a provider priced in another currency) and *micro its
 * effective cost in micro-units of it: the amounts the meter kept with
 * the rows when every row of the group has one (*metered; what running
 * attempts accrued since at the catalog's rate), else derived from the
 * USD amount at the catalog's rate; NULL when the group is USD only. */
const struct tw_report_fx *report__fx(const struct tw_report *r,
                                      const struct tw_ledger_group *g,
                                      int64_t *micro, bool *metered);

/* "1234.567890" from micro-units, six places, exact (any currency). */
#define report__fmt_micro tw_report_fmt_usd

/* focus.c */
enum tw_rc focus__render(struct tw_store *s, const struct tw_report_req *req,
                         struct tw_buf *out, struct tw_err *err);
enum tw_rc focus__render_12(struct tw_store *s,
                            const struct tw_report_req *req, struct tw_buf *out,
                            struct tw_err *err);

/* html.c */
void html__render(const struct tw_report *r, struct tw_buf *out);

#endif
