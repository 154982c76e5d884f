/* report.c - builds the report model from the ledger and renders JSON and
 * CSV; FOCUS and HTML live in focus.c and html.c. */
#include "billing/report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/catalog/catalog.h"
#include "billing/report/focus.h"
#include "billing/report/report_int.h"
#include "billing/ledger/meter.h"
#include "broker/base/clock.h"
#include "broker/base/model.h"
#include "broker/base/units.h"
#include "broker/core/store.h"
#include "broker/core/store_ledger.h"
#include "broker/core/store_tenancy.h"

/* ---- formatting --------------------------------------------------------- */

void tw_report_fmt_usd(int64_t uusd, char *out, size_t outsz) {
  /* unsigned: llabs(INT64_MIN) would overflow */
  uint64_t a = uusd < 0 ? (uint64_t)0 - (uint64_t)uusd : (uint64_t)uusd;
  snprintf(out, outsz, "%s%llu.%06llu", uusd < 0 ? "-" : "",
           (unsigned long long)(a / 1000000),
           (unsigned long long)(a % 1000000));
}

void tw_report_fmt_day(int64_t day, char *out, size_t outsz) {
  time_t t = (time_t)(day * 86400);
  struct tm tm;
  gmtime_r(&t, &tm);
  /* bounded so the compiler can see the text fits */
  snprintf(out, outsz, "%04u-%02u-%02u", (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u);
}

void tw_report_fmt_time(int64_t ms, char *out, size_t outsz) {
  time_t t = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
  struct tm tm;
  gmtime_r(&t, &tm);
  snprintf(out, outsz, "%04u-%02u-%02uT%02u:%02u:%02uZ",
           (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
           (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u,
           (unsigned)tm.tm_sec % 100u);
}

int64_t tw_report_month_start(int64_t ms) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  return (int64_t)timegm(&tm) * 1000;
}

int64_t tw_report_next_month(int64_t ms) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  if (++tm.tm_mon == 12) {
    tm.tm_mon = 0;
    tm.tm_year++;
  }
  return (int64_t)timegm(&tm) * 1000;
}

/* ---- request parsing ---------------------------------------------------- */

/* "2026-11-01": midnight UTC.  0 on success. */
static int parse_date(const char *s, int64_t *ms) {
  int y, m, d;
  char tail;
  if (strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 ||
      s[4] != '-' || s[7] != '-' || y < 1970 || y > 9999 || m < 1 || m > 12 ||
      d < 1 || d > 31)
    return -1;
  struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d};
  time_t t = timegm(&tm);
  struct tm back;
  gmtime_r(&t, &back);
  if (back.tm_mday != d) /* 2026-02-30 */
    return -1;
  *ms = (int64_t)t * 1000;
  return 0;
}

static enum tw_rc parse_bound(const char *name, const char *s, int64_t *ms,
                              struct tw_err *err) {
  if (!parse_date(s, ms) || !tw_time_parse_rfc3339(s, ms))
    return TW_OK;
  return tw_err_field(err, TW_E_INVALID, name,
                      "%s: expected a date (2026-11-01) or an RFC 3339 time "
                      "(2026-11-01T00:00:00Z), got \"%.64s\"",
                      name, s);
}

enum tw_rc tw_report_range_parse(const char *from, const char *to,
                                 int64_t now_ms, int64_t *from_ms,
                                 int64_t *to_ms, struct tw_err *err) {
  enum tw_rc rc;
  int64_t f = tw_report_month_start(now_ms), t = tw_report_next_month(now_ms);
  if (from && *from && (rc = parse_bound("from", from, &f, err)))
    return rc;
  if (to && *to && (rc = parse_bound("to", to, &t, err)))
    return rc;
  if (from && *from && !(to && *to))
    t = tw_report_next_month(f > now_ms ? f : now_ms);
  if (to && *to && !(from && *from))
    f = tw_report_month_start(t - 1);
  if (t <= f)
    return tw_err_field(err, TW_E_INVALID, "to", "to: must be after from");
  if (t - f > 3660 * TW_DAY_MS)
    return tw_err_field(err, TW_E_INVALID, "to",
                        "to: a report covers at most 3660 days");
  *from_ms = f;
  *to_ms = t;
  return TW_OK;
}

/* ---- the model
 * ---------------------------------------------------------------- */

int64_t report__forecast(const struct tw_report *r, int64_t spent_uusd,
                         int64_t window_uusd) {
  int64_t now = r->req->now_ms, to = r->req->to_ms;
  int64_t len = r->window_to_ms - r->window_from_ms;
  /* less than a day of spend says little of a month: not extrapolated */
  if (now >= to || len < TW_DAY_MS)
    return spent_uusd;
  __int128 more = (__int128)window_uusd * (to - now);
  return spent_uusd + (int64_t)((more + len / 2) / len);
}

static int tenant_cmp(const void *x, const void *y) {
  const struct tw_report_tenant *a = x, *b = y;
  if (a->spent_uusd != b->spent_uusd)
    return a->spent_uusd > b->spent_uusd ? -1 : 1;
  return strcmp(a->tenant, b->tenant);
}

static bool budget_in_scope(const struct tw_report_req *q,
                            const struct tw_ledger_budget *b) {
  if (q->tenant && b->tenant[0] && strcmp(q->tenant, b->tenant))
    return false;
  if (q->project && b->project[0] && strcmp(q->project, b->project))
    return false;
  return true;
}

/* Spend of a budget's scope in a tenant x project sum. */
static int64_t scope_sum(const struct tw_ledger_group *g, size_t n,
                         const struct tw_ledger_budget *b) {
  int64_t s = 0;
  for (size_t i = 0; i < n; i++)
    if ((!b->tenant[0] || !strcmp(b->tenant, g[i].tenant)) &&
        (!b->project[0] || !strcmp(b->project, g[i].project)))
      s += g[i].effective_uusd;
  return s;
}

void report__release(struct tw_report *r) {
  free(r->groups);
  free(r->by_provider_day);
  free(r->by_provider_bucket);
  free(r->by_scope_bucket);
  free(r->by_market);
  free(r->jobs);
  free(r->tenants);
  free(r->budgets);
  memset(r, 0, sizeof *r);
}

/* ---- the charts' buckets -------------------------------------------------- */

#define REPORT_HOUR_MS 3600000LL

/* groups of day d (fine: tenant x project x provider x region x day)
 * renumbered as bucket indexes from the range's first day */
static void day_buckets(const struct tw_report *r,
                        const struct tw_ledger_group *fine, size_t n,
                        unsigned mask, struct tw_ledger_group **out,
                        size_t *nout) {
  struct tw_ledger_group *x = NULL;
  size_t nx = 0;
  tw_ledger_regroup(fine, n, mask | TW_GROUP_DAY, NULL, &x, &nx);
  int64_t d0 = tw_ledger_day(r->req->from_ms);
  for (size_t i = 0; i < nx; i++)
    x[i].day -= d0;
  *out = x;
  *nout = nx;
}

struct hour_arg {
  const struct tw_report_req *req;
  int64_t start; /* of bucket 0: the range's start, down to its hour */
  struct tw_ledger_group *g;
  size_t n, cap;
};

static void hour_add(struct hour_arg *a, const struct tw_ledger_group *x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 256;
    a->g = tw_realloc(a->g, a->cap * sizeof *a->g);
  }
  a->g[a->n++] = *x;
}

/* c's part over [lo, hi) of [s, e), split as the ledger splits rows */
static int64_t part_of(int64_t c, int64_t s, int64_t e, int64_t lo,
                       int64_t hi) {
  if (e == s)
    return s >= lo && s < hi ? c : 0;
  int64_t a = lo > s ? lo : s, b = hi < e ? hi : e;
  if (b <= a)
    return 0;
  return (int64_t)((__int128)c * (b - s) / (e - s) -
                   (__int128)c * (a - s) / (e - s));
}

/* one ledger row or accrued piece into its hours (within the range) */
static void hour_piece(struct hour_arg *a, const struct tw_ledger_row *r,
                       bool accrued) {
  int64_t from = a->req->from_ms, to = a->req->to_ms;
  if (r->end_ms == r->start_ms && (r->start_ms < from || r->start_ms >= to))
    return; /* an instant outside the range */
  int64_t lo = r->start_ms > from ? r->start_ms : from;
  int64_t hi = r->end_ms < to ? r->end_ms : to;
  if (r->end_ms == r->start_ms)
    hi = lo + 1;
  for (int64_t t = lo; t < hi;) {
    int64_t k = (t - a->start) / REPORT_HOUR_MS;
    int64_t b = a->start + (k + 1) * REPORT_HOUR_MS;
    int64_t bl = t, bh = b < hi ? b : hi;
    struct tw_ledger_group g;
    memset(&g, 0, sizeof g);
    TW_SET(g.tenant, r->tenant);
    TW_SET(g.project, r->project);
    TW_SET(g.provider, r->provider);
    g.day = k;
    g.list_uusd = part_of(r->list_uusd, r->start_ms, r->end_ms, bl,
                          r->end_ms == r->start_ms ? bl + 1 : bh);
    g.effective_uusd = part_of(r->effective_uusd, r->start_ms, r->end_ms, bl,
                               r->end_ms == r->start_ms ? bl + 1 : bh);
    if (accrued) {
      g.accrued_list_uusd = g.list_uusd;
      g.accrued_effective_uusd = g.effective_uusd;
    } else {
      g.rows = 1;
    }
    hour_add(a, &g);
    t = bh;
  }
}

static int hour_row(void *ctx, const struct tw_ledger_row *r) {
  hour_piece(ctx, r, false);
  return 0;
}

static void hour_accrued_piece(void *ctx, const struct tw_ledger_row *r) {
  hour_piece(ctx, r, true);
}

static void hour_accrue(void *ctx, const struct tw_store_meter_progress *p) {
  struct hour_arg *a = ctx;
  const struct tw_report_req *q = a->req;
  if ((q->tenant && strcmp(q->tenant, p->tenant)) ||
      (q->project && strcmp(q->project, p->project)))
    return;
  tw_meter_accrue(p, q->now_ms < q->to_ms ? q->now_ms : q->to_ms,
                  hour_accrued_piece, a);
}

/* A short range in hours: its rows (a day or two of them) and what is
 * accrued, each split by time into the hours it covers. */
static enum tw_rc hour_buckets(struct tw_store *s, struct tw_report *r,
                               const struct tw_ledger_filter *f,
                               struct tw_err *err) {
  const struct tw_report_req *q = r->req;
  struct hour_arg a = {.req = q,
                       .start = q->from_ms / REPORT_HOUR_MS * REPORT_HOUR_MS};
  /* rows that began before the range and run into it: from its day */
  enum tw_rc rc = tw_ledger_scan(s, tw_ledger_day(q->from_ms) * TW_DAY_MS,
                                 q->to_ms, f, hour_row, &a, err);
  if (!rc && q->now_ms > q->from_ms)
    rc = tw_store_meter_scan_open(s, hour_accrue, &a, err);
  if (rc) {
    free(a.g);
    return rc;
  }
  r->n_buckets =
      (size_t)((q->to_ms - a.start + REPORT_HOUR_MS - 1) / REPORT_HOUR_MS);
  tw_ledger_regroup(a.g, a.n, TW_GROUP_PROVIDER | TW_GROUP_DAY, NULL,
                    &r->by_provider_bucket, &r->n_by_provider_bucket);
  tw_ledger_regroup(a.g, a.n, TW_GROUP_TENANT | TW_GROUP_PROJECT | TW_GROUP_DAY,
                    NULL, &r->by_scope_bucket, &r->n_by_scope_bucket);
  free(a.g);
  return TW_OK;
}

/* The ledger's sums of mask over the range, with the accrual acc (of a
 * finer mask) summed into mask and merged in. */
static enum tw_rc with_accrual(struct tw_store *s,
                               const struct tw_report_req *req, unsigned mask,
                               const struct tw_ledger_filter *f,
                               const struct tw_ledger_group *acc, size_t n_acc,
                               struct tw_ledger_group **out, size_t *n,
                               struct tw_err *err) {
  enum tw_rc rc = tw_ledger_sum(s, req->from_ms, req->to_ms, mask, f, out, n,
                                err);
  if (rc)
    return rc;
  struct tw_ledger_group *x = NULL;
  size_t nx = 0;
  tw_ledger_regroup(acc, n_acc, mask, NULL, &x, &nx);
  tw_ledger_merge(out, n, x, nx);
  free(x);
  return TW_OK;
}

enum tw_rc report__build(struct tw_store *s, const struct tw_report_req *req,
                         struct tw_report *r, struct tw_err *err) {
  memset(r, 0, sizeof *r);
  r->req = req;
  r->mask = req->group_mask ? req->group_mask : TW_REPORT_DEFAULT_GROUPS;
  struct tw_ledger_filter f = {.tenant = req->tenant, .project = req->project};
  struct tw_ledger_group *tp = NULL, *tpw = NULL;
  size_t n_tp = 0, n_tpw = 0;
  struct tw_ledger_budget *budgets = NULL;
  size_t n_budgets = 0;
  enum tw_rc rc;
  /* the ledger's rows, and what running attempts have accrued up to now
   * (marked as such: tw_ledger_sum_now), read once at the finest grouping
   * and summed up from there */
  int64_t now = req->now_ms;
  const unsigned FINE = TW_GROUP_TENANT | TW_GROUP_PROJECT |
                        TW_GROUP_PROVIDER | TW_GROUP_REGION | TW_GROUP_DAY;
  struct tw_ledger_group *fine = NULL, *fine_job = NULL, *acc = NULL;
  size_t n_fine = 0, n_fine_job = 0, n_acc = 0;
  /* what running attempts accrued, once, at every grouping used below */
  unsigned acc_mask = FINE | TW_GROUP_MARKET | (r->mask & TW_GROUP_JOB);
  if ((rc = tw_ledger_accrued(s, req->from_ms, req->to_ms, now, acc_mask, &f,
                              &acc, &n_acc, err)) ||
      (rc = with_accrual(s, req, FINE, &f, acc, n_acc, &fine, &n_fine, err)) ||
      (rc = with_accrual(s, req, TW_GROUP_MARKET, &f, acc, n_acc,
                         &r->by_market, &r->n_by_market, err)))
    goto out;
  /* per job: the per-job rollup, which leaves out rows of no job */
  if ((r->mask & TW_GROUP_JOB) &&
      (rc = with_accrual(s, req, FINE | TW_GROUP_JOB, &f, acc, n_acc,
                         &fine_job, &n_fine_job, err)))
    goto out;
  if (r->mask & TW_GROUP_JOB)
    tw_ledger_regroup(fine_job, n_fine_job, r->mask, NULL, &r->groups,
                      &r->n_groups);
  else
    tw_ledger_regroup(fine, n_fine, r->mask, NULL, &r->groups, &r->n_groups);
  tw_ledger_regroup(fine, n_fine, TW_GROUP_PROVIDER | TW_GROUP_DAY, NULL,
                    &r->by_provider_day, &r->n_by_provider_day);
  tw_ledger_regroup(fine, n_fine, TW_GROUP_TENANT | TW_GROUP_PROJECT, NULL, &tp,
                    &n_tp);
  if (req->to_ms - req->from_ms <= 2 * TW_DAY_MS) {
    r->bucket_ms = REPORT_HOUR_MS;
    if ((rc = hour_buckets(s, r, &f, err)))
      goto out;
  } else {
    r->bucket_ms = TW_DAY_MS;
    r->n_buckets = (size_t)(tw_ledger_day(req->to_ms - 1) + 1 -
                            tw_ledger_day(req->from_ms));
    day_buckets(r, fine, n_fine, TW_GROUP_PROVIDER, &r->by_provider_bucket,
                &r->n_by_provider_bucket);
    day_buckets(r, fine, n_fine, TW_GROUP_TENANT | TW_GROUP_PROJECT,
                &r->by_scope_bucket, &r->n_by_scope_bucket);
  }
  if (r->mask & TW_GROUP_JOB) {
    /* who ran what: the job's name and the principal that submitted it */
    r->jobs = tw_calloc(r->n_groups ? r->n_groups : 1, sizeof *r->jobs);
    for (size_t i = 0; i < r->n_groups && i < TW_REPORT_NAMED_JOBS; i++) {
      struct tw_job_rec job;
      struct tw_store_owner_rec own;
      bool found = false;
      struct tw_err e2 = {0};
      if (!r->groups[i].job_id[0])
        continue;
      if (tw_store_job_get(s, r->groups[i].job_id, &job, &e2) == TW_OK) {
        tw_model_set(r->jobs[i].name, sizeof r->jobs[i].name,
                     job.name ? job.name : "");
        tw_job_rec_release(&job);
      }
      if (tw_store_job_owner_get(s, r->groups[i].job_id, &found, &own, &e2) ==
              TW_OK &&
          found)
        TW_SET(r->jobs[i].owner, own.principal);
    }
  }
  for (size_t i = 0; i < r->n_groups; i++) {
    r->total_list_uusd += r->groups[i].list_uusd;
    r->total_effective_uusd += r->groups[i].effective_uusd;
    r->total_accrued_list_uusd += r->groups[i].accrued_list_uusd;
    r->total_accrued_effective_uusd += r->groups[i].accrued_effective_uusd;
    r->total_rows += r->groups[i].rows;
  }

  /* the run rate: the last 7 days of the range that have passed */
  int64_t wto = req->now_ms < req->to_ms ? req->now_ms : req->to_ms;
  int64_t wfrom = wto - TW_REPORT_RUN_RATE_MS;
  if (wfrom < req->from_ms)
    wfrom = req->from_ms;
  if (wto > wfrom) {
    r->window_from_ms = wfrom;
    r->window_to_ms = wto;
    if ((rc = tw_ledger_sum_now(s, wfrom, wto, now,
                                TW_GROUP_TENANT | TW_GROUP_PROJECT, &f, &tpw,
                                &n_tpw, err)))
      goto out;
  }
  int64_t spent = 0, window = 0;
  for (size_t i = 0; i < n_tp; i++)
    spent += tp[i].effective_uusd;
  for (size_t i = 0; i < n_tpw; i++)
    window += tpw[i].effective_uusd;
  if (wto > wfrom)
    r->run_rate_uusd_per_day =
        (int64_t)(((__int128)window * TW_DAY_MS + (wto - wfrom) / 2) /
                  (wto - wfrom));
  r->forecast_uusd = report__forecast(r, spent, window);

  /* tenants */
  r->tenants = tw_calloc(n_tp ? n_tp : 1, sizeof *r->tenants);
  for (size_t i = 0; i < n_tp; i++) {
    struct tw_report_tenant *t = NULL;
    for (size_t k = 0; k < r->n_tenants; k++)
      if (!strcmp(r->tenants[k].tenant, tp[i].tenant))
        t = &r->tenants[k];
    if (!t) {
      t = &r->tenants[r->n_tenants++];
      snprintf(t->tenant, sizeof t->tenant, "%s", tp[i].tenant);
    }
    t->spent_uusd += tp[i].effective_uusd;
    t->list_uusd += tp[i].list_uusd;
  }
  for (size_t k = 0; k < r->n_tenants; k++) {
    struct tw_ledger_budget scope = {0};
    snprintf(scope.tenant, sizeof scope.tenant, "%s", r->tenants[k].tenant);
    r->tenants[k].forecast_uusd = report__forecast(
        r, r->tenants[k].spent_uusd, scope_sum(tpw, n_tpw, &scope));
  }
  if (r->n_tenants > 1)
    qsort(r->tenants, r->n_tenants, sizeof *r->tenants, tenant_cmp);

  /* budgets */
  if (req->budgets_source) {
    n_budgets = req->n_budgets;
    budgets = tw_calloc(n_budgets ? n_budgets : 1, sizeof *budgets);
    if (n_budgets)
      memcpy(budgets, req->budgets, n_budgets * sizeof *budgets);
    r->budget_source = req->budgets_source;
  } else {
    if ((rc = tw_ledger_budgets_get(s, &budgets, &n_budgets, err)))
      goto out;
    r->budget_source = "config";
  }
  r->budgets = tw_calloc(n_budgets ? n_budgets : 1, sizeof *r->budgets);
  for (size_t i = 0; i < n_budgets; i++) {
    if (!budget_in_scope(req, &budgets[i]))
      continue;
    struct tw_report_budget *b = &r->budgets[r->n_budgets++];
    b->b = budgets[i];
    /* The budget's own scope, whatever the report filters: the figure
     * budget status and the hard stop use (tw_ledger_spent_now).  An
     * unfiltered report holds every scope already: the same sum. */
    const char *bt = budgets[i].tenant[0] ? budgets[i].tenant : NULL;
    const char *bp = budgets[i].project[0] ? budgets[i].project : NULL;
    if (req->tenant || req->project) {
      if ((rc = tw_ledger_spent_now(s, bt, bp, req->from_ms, req->to_ms, now,
                                    &b->spent_uusd, &b->accrued_uusd, err)))
        goto out;
    } else {
      for (size_t k = 0; k < n_tp; k++)
        if ((!bt || !strcmp(bt, tp[k].tenant)) &&
            (!bp || !strcmp(bp, tp[k].project))) {
          b->spent_uusd += tp[k].effective_uusd;
          b->accrued_uusd += tp[k].accrued_effective_uusd;
        }
    }
    b->forecast_uusd =
        report__forecast(r, b->spent_uusd, scope_sum(tpw, n_tpw, &budgets[i]));
  }
out:
  free(acc);
  free(fine);
  free(fine_job);
  free(tp);
  free(tpw);
  free(budgets);
  if (rc)
    report__release(r);
  return rc;
}

/* ---- other currencies
 * ------------------------------------------------------------ */

bool tw_report_fx_amount(const struct tw_rate *rate, int64_t uusd,
                         int64_t *micro) {
  if (!rate || rate->nusd_per_unit <= 0)
    return false;
  /* the rounding rule of broker/base/units.h, as tw_rate_convert's */
  return tw_units_div_round((__int128)uusd * 1000000000, rate->nusd_per_unit,
                            micro);
}

void tw_report_fx_of(const struct tw_cat_source_info *const *src, size_t ns,
                     struct tw_report_fx **out, size_t *n) {
  *out = NULL;
  *n = 0;
  struct tw_report_fx *fx = tw_calloc(ns ? ns : 1, sizeof *fx);
  bool *mixed = tw_calloc(ns ? ns : 1, sizeof *mixed);
  size_t k = 0;
  for (size_t i = 0; i < ns; i++) {
    const struct tw_cat_source_info *si = src[i];
    if (!si->provider[0])
      continue;
    bool usd = !si->rate.currency[0] || !strcmp(si->rate.currency, "USD");
    size_t j = 0;
    while (j < k && strcmp(fx[j].provider, si->provider))
      j++;
    if (j == k) {
      TW_SET(fx[k].provider, si->provider);
      fx[k].rate = si->rate;
      mixed[k] = usd; /* a USD source rules its provider out */
      k++;
    } else if (usd || strcmp(fx[j].rate.currency, si->rate.currency) ||
               fx[j].rate.nusd_per_unit != si->rate.nusd_per_unit) {
      mixed[j] = true;
    }
  }
  for (size_t i = 0; i < k; i++)
    if (!mixed[i])
      fx[(*n)++] = fx[i];
  free(mixed);
  if (!*n) {
    free(fx);
    fx = NULL;
  }
  *out = fx;
}

void tw_report_fx_from_catalog(struct tw_catalog *c, struct tw_report_fx **out,
                               size_t *n) {
  *out = NULL;
  *n = 0;
  if (!c)
    return;
  struct tw_cat_snap *snap = tw_catalog_acquire(c);
  size_t ns = tw_cat_snap_nsources(snap);
  const struct tw_cat_source_info **src = tw_calloc(ns ? ns : 1, sizeof *src);
  for (size_t i = 0; i < ns; i++)
    src[i] = tw_cat_snap_source(snap, i);
  tw_report_fx_of(src, ns, out, n);
  free(src);
  tw_cat_snap_release(snap);
}

const struct tw_report_fx *report__fx(const struct tw_report *r,
                                      const struct tw_ledger_group *g,
                                      int64_t *micro, bool *metered) {
  *metered = false;
  if (!(r->mask & TW_GROUP_PROVIDER))
    return NULL;
  for (size_t i = 0; i < r->req->n_fx; i++) {
    const struct tw_report_fx *x = &r->req->fx[i];
    if (strcmp(x->provider, g->provider))
      continue;
    if (g->rows > 0 && g->source_rows == g->rows) {
      /* every row as the meter charged it in the provider's currency; what
       * running attempts accrued since is not metered yet: at the rate */
      int64_t acc = 0;
      if (g->accrued_effective_uusd &&
          !tw_report_fx_amount(&x->rate, g->accrued_effective_uusd, &acc))
        return NULL;
      *micro = g->source_effective_micro + acc;
      *metered = true;
      return x;
    }
    return tw_report_fx_amount(&x->rate, g->effective_uusd, micro) ? x : NULL;
  }
  return NULL;
}

/* ---- JSON and CSV
 * ---------------------------------------------------------------- */

static const struct {
  unsigned bit;
  const char *name;
} DIMS[] = {{TW_GROUP_TENANT, "tenant"},     {TW_GROUP_PROJECT, "project"},
            {TW_GROUP_PROVIDER, "provider"}, {TW_GROUP_REGION, "region"},
            {TW_GROUP_DAY, "day"},           {TW_GROUP_JOB, "job"},
            {TW_GROUP_MARKET, "market"}};
#define NDIMS (sizeof DIMS / sizeof DIMS[0])

static const char *dim_value(const struct tw_ledger_group *g, unsigned bit,
                             char *day, size_t daysz) {
  switch (bit) {
  case TW_GROUP_TENANT:
    return g->tenant;
  case TW_GROUP_PROJECT:
    return g->project;
  case TW_GROUP_PROVIDER:
    return g->provider;
  case TW_GROUP_REGION:
    return g->region;
  case TW_GROUP_DAY:
    tw_report_fmt_day(g->day, day, daysz);
    return day;
  case TW_GROUP_MARKET:
    return g->market;
  default:
    return g->job_id;
  }
}

static void json_money(struct tw_buf *b, const char *key, int64_t v,
                       bool comma) {
  tw_buf_printf(b, "%s\"%s\":%lld", comma ? "," : "", key, (long long)v);
}

static void render_json(const struct tw_report *r, struct tw_buf *b) {
  char t[40];
  tw_buf_adds(b, "{\"from\":");
  tw_report_fmt_time(r->req->from_ms, t, sizeof t);
  tw_buf_json_str(b, t);
  tw_buf_adds(b, ",\"to\":");
  tw_report_fmt_time(r->req->to_ms, t, sizeof t);
  tw_buf_json_str(b, t);
  tw_buf_adds(b, ",\"group_by\":[");
  bool first = true;
  for (size_t d = 0; d < NDIMS; d++)
    if (r->mask & DIMS[d].bit) {
      tw_buf_printf(b, "%s\"%s\"", first ? "" : ",", DIMS[d].name);
      first = false;
    }
  tw_buf_adds(b, "],\"currency\":\"USD\",\"items\":[");
  for (size_t i = 0; i < r->n_groups; i++) {
    const struct tw_ledger_group *g = &r->groups[i];
    tw_buf_adds(b, i ? ",{" : "{");
    for (size_t d = 0; d < NDIMS; d++)
      if (r->mask & DIMS[d].bit) {
        char day[16];
        tw_buf_printf(b, "\"%s\":", DIMS[d].name);
        tw_buf_json_str(b, dim_value(g, DIMS[d].bit, day, sizeof day));
        tw_buf_addc(b, ',');
      }
    if (r->jobs) {
      tw_buf_adds(b, "\"job_name\":");
      tw_buf_json_str(b, r->jobs[i].name);
      tw_buf_adds(b, ",\"owner\":");
      tw_buf_json_str(b, r->jobs[i].owner);
      tw_buf_addc(b, ',');
    }
    json_money(b, "list_cost_uusd", g->list_uusd, false);
    json_money(b, "effective_cost_uusd", g->effective_uusd, true);
    json_money(b, "accrued_list_cost_uusd", g->accrued_list_uusd, true);
    json_money(b, "accrued_effective_cost_uusd", g->accrued_effective_uusd,
               true);
    tw_buf_printf(b, ",\"usage_s\":%lld,\"rows\":%lld",
                  (long long)(g->usage_ms / 1000), (long long)g->rows);
    int64_t micro;
    bool metered;
    const struct tw_report_fx *x = report__fx(r, g, &micro, &metered);
    if (x) {
      char amt[32];
      report__fmt_micro(micro, amt, sizeof amt);
      tw_buf_adds(b, ",\"source_currency\":");
      tw_buf_json_str(b, x->rate.currency);
      tw_buf_adds(b, ",\"source_amount\":");
      tw_buf_json_str(b, amt);
      tw_buf_adds(b, ",\"rate\":");
      tw_buf_json_str(b, x->rate.text);
      tw_buf_adds(b, ",\"rate_date\":");
      tw_buf_json_str(b, x->rate.date);
      tw_buf_adds(b, ",\"rate_source\":");
      tw_buf_json_str(b, x->rate.source);
      tw_buf_adds(b, metered ? ",\"source_amount_basis\":\"metered\""
                             : ",\"source_amount_basis\":\"derived\"");
    }
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "],\"total\":{");
  json_money(b, "list_cost_uusd", r->total_list_uusd, false);
  json_money(b, "effective_cost_uusd", r->total_effective_uusd, true);
  json_money(b, "accrued_list_cost_uusd", r->total_accrued_list_uusd, true);
  json_money(b, "accrued_effective_cost_uusd", r->total_accrued_effective_uusd,
             true);
  tw_buf_printf(b, ",\"rows\":%lld,\"by_market\":[", (long long)r->total_rows);
  for (size_t i = 0; i < r->n_by_market; i++) {
    tw_buf_adds(b, i ? ",{\"market\":" : "{\"market\":");
    tw_buf_json_str(b, r->by_market[i].market);
    json_money(b, "list_cost_uusd", r->by_market[i].list_uusd, true);
    json_money(b, "effective_cost_uusd", r->by_market[i].effective_uusd, true);
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "]},\"forecast\":{\"to\":");
  tw_report_fmt_time(r->req->to_ms, t, sizeof t);
  tw_buf_json_str(b, t);
  tw_buf_adds(b, ",\"now\":");
  tw_report_fmt_time(r->req->now_ms, t, sizeof t);
  tw_buf_json_str(b, t);
  json_money(b, "run_rate_uusd_per_day", r->run_rate_uusd_per_day, true);
  json_money(b, "effective_cost_uusd", r->forecast_uusd, true);
  tw_buf_adds(b, ",\"tenants\":[");
  for (size_t i = 0; i < r->n_tenants; i++) {
    tw_buf_adds(b, i ? ",{\"tenant\":" : "{\"tenant\":");
    tw_buf_json_str(b, r->tenants[i].tenant);
    json_money(b, "spent_uusd", r->tenants[i].spent_uusd, true);
    json_money(b, "forecast_uusd", r->tenants[i].forecast_uusd, true);
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "]},\"budgets\":{\"source\":");
  tw_buf_json_str(b, r->budget_source ? r->budget_source : "config");
  tw_buf_adds(b, ",\"period\":\"monthly\",\"items\":[");
  for (size_t i = 0; i < r->n_budgets; i++) {
    const struct tw_report_budget *x = &r->budgets[i];
    tw_buf_adds(b, i ? ",{\"tenant\":" : "{\"tenant\":");
    if (x->b.tenant[0])
      tw_buf_json_str(b, x->b.tenant);
    else
      tw_buf_adds(b, "null");
    tw_buf_adds(b, ",\"project\":");
    if (x->b.project[0])
      tw_buf_json_str(b, x->b.project);
    else
      tw_buf_adds(b, "null");
    json_money(b, "limit_uusd", x->b.limit_uusd, true);
    json_money(b, "spent_uusd", x->spent_uusd, true);
    json_money(b, "accrued_uusd", x->accrued_uusd, true);
    json_money(b, "forecast_uusd", x->forecast_uusd, true);
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "]}}");
}

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
static void csv_field(struct tw_buf *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    tw_buf_adds(b, s);
    return;
  }
  tw_buf_addc(b, '"');
  for (; *s; s++) {
    if (*s == '"')
      tw_buf_addc(b, '"');
    tw_buf_addc(b, *s);
  }
  tw_buf_addc(b, '"');
}

static void render_csv(const struct tw_report *r, struct tw_buf *b) {
  for (size_t d = 0; d < NDIMS; d++)
    if (r->mask & DIMS[d].bit)
      tw_buf_printf(b, "%s,", DIMS[d].name);
  tw_buf_adds(b, "list_cost_usd,effective_cost_usd,accrued_effective_cost_usd,"
                 "usage_hours,rows");
  bool fx = (r->mask & TW_GROUP_PROVIDER) && r->req->n_fx;
  if (fx)
    tw_buf_adds(b, ",source_currency,source_amount,rate,rate_date");
  tw_buf_adds(b, "\r\n");
  for (size_t i = 0; i < r->n_groups; i++) {
    const struct tw_ledger_group *g = &r->groups[i];
    for (size_t d = 0; d < NDIMS; d++)
      if (r->mask & DIMS[d].bit) {
        char day[16];
        csv_field(b, dim_value(g, DIMS[d].bit, day, sizeof day));
        tw_buf_addc(b, ',');
      }
    char l[32], e[32], ac[32];
    tw_report_fmt_usd(g->list_uusd, l, sizeof l);
    tw_report_fmt_usd(g->effective_uusd, e, sizeof e);
    tw_report_fmt_usd(g->accrued_effective_uusd, ac, sizeof ac);
    /* hours with six places, from milliseconds: exact enough to sum */
    int64_t uh = (g->usage_ms * 1000 + 1800) / 3600;
    tw_buf_printf(b, "%s,%s,%s,%lld.%06lld,%lld", l, e, ac,
                  (long long)(uh / 1000000), (long long)(uh % 1000000),
                  (long long)g->rows);
    int64_t micro;
    bool metered;
    const struct tw_report_fx *x =
        fx ? report__fx(r, g, &micro, &metered) : NULL;
    if (x) {
      char amt[32];
      report__fmt_micro(micro, amt, sizeof amt);
      tw_buf_printf(b, ",%s,%s,", x->rate.currency, amt);
      csv_field(b, x->rate.text);
      tw_buf_addc(b, ',');
      csv_field(b, x->rate.date);
    } else if (fx) {
      tw_buf_adds(b, ",,,,");
    }
    tw_buf_adds(b, "\r\n");
  }
}

/* The formats that render the computed report model (report__build). */
static enum tw_rc
render_model(struct tw_store *s, const struct tw_report_req *req,
             struct tw_buf *out, struct tw_err *err,
             void (*render)(const struct tw_report *r, struct tw_buf *b)) {
  struct tw_report r;
  enum tw_rc rc = report__build(s, req, &r, err);
  if (rc)
    return rc;
  render(&r, out);
  report__release(&r);
  return TW_OK;
}

static enum tw_rc json_render(struct tw_store *s,
                              const struct tw_report_req *req,
                              struct tw_buf *out, struct tw_err *err) {
  return render_model(s, req, out, err, render_json);
}

static enum tw_rc csv_render(struct tw_store *s,
                             const struct tw_report_req *req,
                             struct tw_buf *out, struct tw_err *err) {
  return render_model(s, req, out, err, render_csv);
}

static enum tw_rc html_render(struct tw_store *s,
                              const struct tw_report_req *req,
                              struct tw_buf *out, struct tw_err *err) {
  return render_model(s, req, out, err, html__render);
}

/* The one list of formats (report.h).  FOCUS lists the ledger rows
 * themselves rather than the grouped model, so it renders from the store. */
const struct tw_report_format tw_report_formats[] = {
    {"json", "grouped sums, total, forecast and budgets", "application/json",
     NULL, json_render},
    {"csv", "the grouped sums, one row per group", "text/csv; charset=utf-8",
     "tradewind-spend.csv", csv_render},
    {"focus", "FOCUS 1.0 CSV, one row per ledger row",
     "text/csv; charset=utf-8", "tradewind-focus.csv", focus__render},
    {"focus-1.2", "FOCUS 1.2 CSV: 1.0's columns and those 1.1 and 1.2 added",
     "text/csv; charset=utf-8", "tradewind-focus-1.2.csv", focus__render_12},
    {"html", "one self-contained page with charts", "text/html; charset=utf-8",
     NULL, html_render},
    {NULL, NULL, NULL, NULL, NULL},
};

void tw_report_format_list(struct tw_buf *out) {
  for (size_t i = 0; tw_report_formats[i].name; i++)
    tw_buf_printf(out, "%s%s",
                  !i                              ? ""
                  : tw_report_formats[i + 1].name ? ", "
                                                  : " or ",
                  tw_report_formats[i].name);
}

enum tw_rc tw_report_format_parse(const char *s,
                                  const struct tw_report_format **out,
                                  struct tw_err *err) {
  for (size_t i = 0; s && tw_report_formats[i].name; i++)
    if (!strcmp(s, tw_report_formats[i].name)) {
      *out = &tw_report_formats[i];
      return TW_OK;
    }
  struct tw_buf names;
  tw_buf_init(&names);
  tw_report_format_list(&names);
  tw_err_field(err, TW_E_INVALID, "format",
               "format: expected %s, got \"%.32s\"", names.data, s ? s : "");
  tw_buf_release(&names);
  return TW_E_INVALID;
}

enum tw_rc tw_report_render(struct tw_store *s, const struct tw_report_req *req,
                            struct tw_buf *out, const char **content_type,
                            struct tw_err *err) {
  const struct tw_report_format *f =
      req->format ? req->format : &tw_report_formats[0];
  *content_type = f->content_type;
  return f->render(s, req, out, err);
}
