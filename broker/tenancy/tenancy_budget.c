/* tenancy_budget.c - money budgets: storage, spend, admission, alerts and
 * stopping (see tenancy.h), plus the scheduler's offer snapshot used to
 * project a job's cost.
 *
 * Actual spend is the ledger's: tw_ledger_spent_now(), the effective
 * cost (after discounts, adjustments included) the meter has charged to
 * the budget's scope in its period, under the providers' billing rules,
 * plus what its running attempts have accrued since their last closed
 * charge period.  The same function gives the report's budget table its
 * figure, so budget status, the report, the alerts and the hard stop
 * agree.
 *
 * Committed: for each live job of the scope, the cost projected at its
 * admission minus what the ledger has charged it and it has accrued so
 * far (never below zero).
 *
 * Forecast to period end: spent, plus for each live job the smaller of
 * what it still has committed and what it burns (its running attempt's
 * price) until the period ends; a job not running yet counts its whole
 * committed remainder.
 *
 * Tables are the store's (broker/core/store_budgets.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/job.h"
#include "broker/base/log.h"
#include "broker/core/spec.h"
#include "billing/ledger/ledger.h"
#include "broker/core/store.h"
#include "broker/core/store_budgets.h"
#include "broker/tenancy/tenancy_int.h"
#include "broker/base/clock.h"
#include "policies/place/cost.h"
#include "policies/place/index.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"
#include "providers/http.h"

void tn_fmt_usd(int64_t uusd, char *out, size_t outsz) {
  const char *sign = uusd < 0 ? "-" : "";
  uint64_t v = uusd < 0 ? (uint64_t)(-(uusd + 1)) + 1 : (uint64_t)uusd;
  char frac[8];
  snprintf(frac, sizeof frac, "%06" PRIu64, v % 1000000);
  int n = 6;
  while (n > 2 && frac[n - 1] == '0')
    frac[--n] = '\0';
  snprintf(out, outsz, "%s$%" PRIu64 ".%s", sign, v / 1000000, frac);
}

/* ---- periods --------------------------------------------------------------
 */

static const char *const PERIOD_NAMES[] = {"monthly", "weekly", "daily"};

const char *tw_budget_period_str(enum tw_budget_period p) {
  return (unsigned)p < 3 ? PERIOD_NAMES[p] : "monthly";
}

bool tw_budget_period_parse(const char *s, enum tw_budget_period *out) {
  for (int i = 0; s && i < 3; i++)
    if (!strcmp(s, PERIOD_NAMES[i])) {
      *out = (enum tw_budget_period)i;
      return true;
    }
  return false;
}

/* Days since 1970-01-01 of a civil date, and back (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

#define DAY_MS 86400000LL

void tn_period(enum tw_budget_period p, int64_t now_ms, int64_t *start,
               int64_t *end) {
  int64_t day = now_ms >= 0 ? now_ms / DAY_MS : (now_ms - DAY_MS + 1) / DAY_MS;
  switch (p) {
  case TW_PERIOD_DAILY:
    *start = day * DAY_MS;
    *end = *start + DAY_MS;
    return;
  case TW_PERIOD_WEEKLY: {
    /* 1970-01-01 was a Thursday: Monday is day 4 of that week */
    int64_t dow = ((day % 7) + 7 + 3) % 7; /* 0 = Monday */
    *start = (day - dow) * DAY_MS;
    *end = *start + 7 * DAY_MS;
    return;
  }
  case TW_PERIOD_MONTHLY:
  default: {
    int64_t y;
    unsigned m, d;
    civil_from_days(day, &y, &m, &d);
    *start = days_from_civil(y, m, 1) * DAY_MS;
    *end = (m == 12 ? days_from_civil(y + 1, 1, 1)
                    : days_from_civil(y, m + 1, 1)) *
           DAY_MS;
    return;
  }
  }
}

/* price per hour over [from, to), rounded up to the micro-dollar. */
static int64_t cost_between(int64_t price, int64_t from, int64_t to) {
  if (to <= from || price <= 0)
    return 0;
  __int128 c = (__int128)price * (to - from);
  return (int64_t)((c + 3599999) / 3600000);
}

/* ---- storage ----------------------------------------------------------------
 */

void tw_budget_init(struct tw_budget *b) {
  memset(b, 0, sizeof *b);
  b->period = TW_PERIOD_MONTHLY;
  b->thresholds_pct[0] = 50;
  b->thresholds_pct[1] = 80;
  b->thresholds_pct[2] = 100;
  b->n_thresholds = 3;
}

static void parse_thresholds(const char *s, struct tw_budget *b) {
  b->n_thresholds = 0;
  while (s && *s && b->n_thresholds < TW_BUDGET_THRESHOLDS) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s)
      break;
    b->thresholds_pct[b->n_thresholds++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
}

static void from_row(const struct tw_store_budget *r, struct tw_budget *b) {
  tw_budget_init(b);
  snprintf(b->tenant, sizeof b->tenant, "%s", r->tenant);
  snprintf(b->project, sizeof b->project, "%s", r->project);
  tw_budget_period_parse(r->period, &b->period);
  b->limit_uusd = r->limit_uusd;
  parse_thresholds(r->thresholds, b);
  b->hard = r->hard;
  b->stop_running = r->stop_running;
  snprintf(b->webhook, sizeof b->webhook, "%s", r->webhook);
  b->version = r->version;
}

static enum tw_rc load_budgets(struct tw_tenancy *t, const char *tenant,
                               const char *project, struct tw_budget **out,
                               size_t *n, struct tw_err *err) {
  struct tw_store_budget *rows = NULL;
  enum tw_rc rc =
      tw_store_budgets_get(t->store, tenant, project, &rows, n, err);
  *out = NULL;
  if (rc)
    return rc;
  *out = tw_malloc((*n ? *n : 1) * sizeof **out);
  for (size_t i = 0; i < *n; i++)
    from_row(&rows[i], &(*out)[i]);
  free(rows);
  return TW_OK;
}

enum tw_rc tw_tenancy_budget_get(struct tw_tenancy *t, const char *tenant,
                                 const char *project, struct tw_budget *out,
                                 struct tw_err *err) {
  struct tw_budget *items = NULL;
  size_t n = 0;
  enum tw_rc rc =
      load_budgets(t, tenant, project ? project : "", &items, &n, err);
  if (rc == TW_OK && n == 0)
    rc =
        project && *project
            ? tw_err_set(err, TW_E_NOTFOUND,
                         "no budget for project %s of tenant %s", project,
                         tenant)
            : tw_err_set(err, TW_E_NOTFOUND, "no budget for tenant %s", tenant);
  if (rc == TW_OK)
    *out = items[0];
  free(items);
  return rc;
}

enum tw_rc tn_load_all_budgets(struct tw_tenancy *t, struct tw_budget **out,
                               size_t *n, struct tw_err *err) {
  return tw_tenancy_budget_list(t, NULL, out, n, err);
}

enum tw_rc tw_tenancy_budget_list(struct tw_tenancy *t, const char *tenant,
                                  struct tw_budget **out, size_t *n,
                                  struct tw_err *err) {
  return load_budgets(t, tenant, NULL, out, n, err);
}

static enum tw_rc check_budget(const struct tw_budget *b, struct tw_err *err) {
  if (!tw_tenancy_name_ok(b->tenant))
    return tw_err_field(err, TW_E_INVALID, "tenant",
                        "tenant: not a tenant name");
  if (b->project[0] && !tw_tenancy_name_ok(b->project))
    return tw_err_field(err, TW_E_INVALID, "project",
                        "project: expected 1 to 63 of [A-Za-z0-9._-]");
  if (b->limit_uusd < 0 || b->limit_uusd > 1000000000LL * 1000000)
    return tw_err_field(
        err, TW_E_INVALID, "limit_uusd",
        "limit_uusd: expected 0 to 10^15 micro-USD, got %" PRId64,
        b->limit_uusd);
  if ((unsigned)b->period > TW_PERIOD_DAILY)
    return tw_err_field(err, TW_E_INVALID, "period", "period: unknown");
  if (b->n_thresholds > TW_BUDGET_THRESHOLDS)
    return tw_err_field(err, TW_E_INVALID, "thresholds_pct",
                        "thresholds_pct: at most %d", TW_BUDGET_THRESHOLDS);
  for (size_t i = 0; i < b->n_thresholds; i++) {
    int v = b->thresholds_pct[i];
    if (v < 1 || v > 1000 || (i && v <= b->thresholds_pct[i - 1]))
      return tw_err_field(
          err, TW_E_INVALID, "thresholds_pct",
          "thresholds_pct: expected ascending percentages from 1 "
          "to 1000, got %d at position %zu",
          v, i);
  }
  if (b->stop_running && !b->hard)
    return tw_err_field(err, TW_E_INVALID, "stop_running",
                        "stop_running: only a hard budget stops jobs");
  if (b->webhook[0]) {
    if (strncmp(b->webhook, "http://", 7) && strncmp(b->webhook, "https://", 8))
      return tw_err_field(err, TW_E_INVALID, "webhook",
                          "webhook: expected an http:// or https:// URL");
    for (const unsigned char *p = (const unsigned char *)b->webhook; *p; p++)
      if (*p <= 0x20 || *p >= 0x7f)
        return tw_err_field(err, TW_E_INVALID, "webhook",
                            "webhook: spaces or control characters in the URL");
  }
  return TW_OK;
}

enum tw_rc tw_tenancy_budget_set(struct tw_tenancy *t,
                                 const struct tw_budget *b, int64_t if_version,
                                 struct tw_budget *out, struct tw_err *err) {
  enum tw_rc rc = check_budget(b, err);
  if (!rc && b->webhook[0])
    rc = tn_webhook_url_check(t, b->webhook, err);
  if (rc)
    return rc;
  struct tw_store_budget row = {.limit_uusd = b->limit_uusd,
                                .hard = b->hard,
                                .stop_running = b->stop_running};
  snprintf(row.tenant, sizeof row.tenant, "%s", b->tenant);
  snprintf(row.project, sizeof row.project, "%s", b->project);
  snprintf(row.period, sizeof row.period, "%s",
           tw_budget_period_str(b->period));
  snprintf(row.webhook, sizeof row.webhook, "%s", b->webhook);
  size_t used = 0;
  for (size_t i = 0; i < b->n_thresholds; i++)
    used +=
        (size_t)snprintf(row.thresholds + used, sizeof row.thresholds - used,
                         "%s%d", i ? "," : "", b->thresholds_pct[i]);
  struct tw_store_budget stored;
  rc = tw_store_budget_put(t->store, &row, if_version, &stored, err);
  if (rc)
    return rc;
  tn_cache_changed(t);
  if (out)
    from_row(&stored, out);
  tw_log_info("tenancy", "tenant=%s project=%s budget set", b->tenant,
              b->project[0] ? b->project : "*");
  return TW_OK;
}

/* ---- spend
 * ---------------------------------------------------------------------- */

/* What a live job still has committed: its admission's projection, less
 * what the ledger has charged it, never below zero. */
static int64_t committed_of(const struct tw_store_budget_job *j) {
  return j->projected_uusd > j->charged_uusd
             ? j->projected_uusd - j->charged_uusd
             : 0;
}

static enum tw_rc status_of(struct tw_tenancy *t, const struct tw_budget *b,
                            struct tw_budget_status *out,
                            struct tw_store_budget_job **jobs, size_t *n_jobs,
                            struct tw_err *err) {
  int64_t now = tw_clock_now_ms(t->clock);
  memset(out, 0, sizeof *out);
  out->budget = *b;
  tn_period(b->period, now, &out->period_start_ms, &out->period_end_ms);
  struct tw_store_budget_job *live = NULL;
  size_t n = 0;
  struct tw_ledger_group *acc = NULL;
  size_t n_acc = 0;
  struct tw_ledger_filter f = {.tenant = b->tenant,
                               .project = b->project[0] ? b->project : NULL};
  enum tw_rc rc;
  if ((rc = tw_ledger_spent_now(t->store, f.tenant, f.project,
                                out->period_start_ms, out->period_end_ms, now,
                                &out->spent_uusd, &out->accrued_uusd, err)) ||
      /* each live job's accrual, whatever the period: it is charged */
      (rc = tw_ledger_accrued(t->store, 0, now + 1, now, TW_GROUP_JOB, &f,
                              &acc, &n_acc, err)) ||
      (rc = tw_store_budget_live_jobs(t->store, b->tenant, b->project, &live,
                                      &n, err)) ||
      (rc = tw_store_budget_alerted(t->store, b->tenant, b->project,
                                    out->period_start_ms, &out->alerted_pct,
                                    err))) {
    free(live);
    free(acc);
    return rc;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < n_acc; k++)
      if (!strcmp(acc[k].job_id, live[i].id))
        live[i].charged_uusd += acc[k].accrued_effective_uusd;
  free(acc);
  out->forecast_uusd = out->spent_uusd;
  for (size_t i = 0; i < n; i++) {
    const struct tw_store_budget_job *j = &live[i];
    int64_t more = committed_of(j);
    out->committed_uusd += more;
    if (j->burn_uusd_per_hour) {
      int64_t until_end =
          cost_between(j->burn_uusd_per_hour, now, out->period_end_ms);
      if (until_end < more)
        more = until_end;
    }
    out->forecast_uusd += more;
  }
  if (jobs) {
    *jobs = live;
    *n_jobs = n;
  } else {
    free(live);
  }
  return TW_OK;
}

enum tw_rc tw_tenancy_budget_status(struct tw_tenancy *t, const char *tenant,
                                    const char *project,
                                    struct tw_budget_status *out,
                                    struct tw_err *err) {
  struct tw_budget b;
  enum tw_rc rc = tw_tenancy_budget_get(t, tenant, project, &b, err);
  if (rc)
    return rc;
  return status_of(t, &b, out, NULL, NULL, err);
}

/* ---- offers and projection
 * --------------------------------------------------------- */

void tw_tenancy_use_placer(struct tw_tenancy *t, struct tw_placer *placer) {
  pthread_mutex_lock(&t->mu);
  t->placer = placer;
  pthread_mutex_unlock(&t->mu);
}

void tw_tenancy_set_offers(struct tw_tenancy *t, const struct tw_offer *offers,
                           size_t n) {
  pthread_mutex_lock(&t->mu);
  bool placer = t->placer != NULL;
  pthread_mutex_unlock(&t->mu);
  if (placer)
    return; /* the placer's index is the scheduler's own */
  struct tw_offer_index *ix = NULL;
  if (n) {
    struct tw_offer *copy = tw_malloc(n * sizeof *copy);
    memcpy(copy, offers, n * sizeof *copy);
    struct tw_err err = {0};
    if (tw_offer_index_build_take(copy, n, &ix, &err))
      tw_log_warn("tenancy", "offers=%zu not indexed for projections: %s", n,
                  err.msg);
  }
  pthread_mutex_lock(&t->mu);
  struct tw_offer_index *old = t->offers;
  t->offers = ix;
  if (!t->place_set)
    t->place_set = tw_policy_set_default();
  pthread_mutex_unlock(&t->mu);
  tw_offer_index_unref(old);
}

/* The projection is the plan the scheduler would make, over the same
 * offers: one placement engine, so admission and placement never disagree
 * on which offer is cheapest or what it costs. */
int64_t tn_project_cost(struct tw_tenancy *t, const struct tw_job_spec *spec,
                        char *how, size_t howsz) {
  int64_t duration =
      spec->duration_s > 0 ? spec->duration_s : TW_COST_DEFAULT_DURATION_S;
  int nodes = spec->nodes > 0 ? spec->nodes : 1;
  int64_t cost = 0;
  struct tw_offer_index *ix = NULL;
  struct tw_policy_set *set = NULL;
  pthread_mutex_lock(&t->mu);
  struct tw_placer *placer = t->placer;
  if (!placer) {
    ix = tw_offer_index_ref(t->offers);
    set = tw_policy_set_ref(t->place_set);
  }
  pthread_mutex_unlock(&t->mu);
  if (placer)
    tw_placer_acquire(placer, &set, &ix);
  if (ix) {
    struct tw_place_snapshot snap = {.index = ix};
    struct tw_plan_input in = {.job = spec,
                               .now_ms = tw_clock_now_ms(t->clock)};
    struct tw_plan_opts opts = {0};
    struct tw_plan pl;
    struct tw_err err = {0};
    if (tw_plan_make(set, &snap, &in, &opts, NULL, &pl, &err) == TW_OK) {
      if (pl.n) {
        cost = pl.cands[0].cost.total_uusd;
        snprintf(how, howsz, "cheapest feasible offer %s for %" PRId64 " s",
                 pl.cands[0].offer->id, duration);
      }
      tw_plan_release(&pl);
    }
  }
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix);
  if (cost)
    return cost;
  if (spec->max_price_uusd_per_hour > 0) {
    __int128 c = (__int128)spec->max_price_uusd_per_hour * duration * nodes;
    snprintf(how, howsz,
             "no offer known fits: max_price_per_hour for %" PRId64 " s",
             duration);
    return (int64_t)((c + 3599) / 3600);
  }
  snprintf(how, howsz,
           "no offer known fits and no max_price_per_hour: unknown");
  return 0;
}

/* ---- admission
 * ------------------------------------------------------------------- */

enum tw_rc tn_budget_admit(struct tw_tenancy *t, const struct tw_job_spec *spec,
                           int64_t projected, struct tw_err *err) {
  struct tw_budget bs[2];
  size_t nb = tn_cache_budgets(t, spec->tenant, spec->project, bs);
  for (size_t i = 0; i < nb; i++) {
    const struct tw_budget b = bs[i];
    struct tw_err e2 = {0};
    enum tw_rc rc;
    if (!b.hard)
      continue;
    struct tw_budget_status s;
    if ((rc = status_of(t, &b, &s, NULL, NULL, &e2)))
      return tw_err_set(err, rc, "%s", e2.msg);
    int64_t after = s.spent_uusd + s.committed_uusd + projected;
    bool exhausted = s.spent_uusd + s.committed_uusd >= b.limit_uusd;
    if (after <= b.limit_uusd && !exhausted)
      continue;
    char lim[32], sp[32], co[32], pj[32], field[160];
    tn_fmt_usd(b.limit_uusd, lim, sizeof lim);
    tn_fmt_usd(s.spent_uusd, sp, sizeof sp);
    tn_fmt_usd(s.committed_uusd, co, sizeof co);
    tn_fmt_usd(projected, pj, sizeof pj);
    snprintf(field, sizeof field, "budget.%s%s%s", b.tenant,
             b.project[0] ? "/" : "", b.project);
    return tw_err_field(
        err, TW_E_QUOTA, field,
        "hard %s budget of %s%s%s: limit %s, spent %s, committed %s; "
        "this job is projected at %s, which does not fit",
        tw_budget_period_str(b.period), b.tenant, b.project[0] ? "/" : "",
        b.project, lim, sp, co, pj);
  }
  return TW_OK;
}

enum tw_rc tw_tenancy_admit(struct tw_tenancy *t,
                            const struct tw_job_spec *spec,
                            const char *principal, const char *request_id,
                            struct tw_admission *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  /* a job is billed to its tenant: one that does not exist would be
   * charged to nobody's budget */
  struct tw_tenant_info ti;
  struct tw_err e2 = {0};
  enum tw_rc rc = TW_OK;
  if (!tn_tenant_known(t, spec->tenant) &&
      (rc = tw_tenancy_tenant_get(t, spec->tenant, &ti, &e2)) == TW_OK)
    tn_tenant_seen(t, spec->tenant);
  if (rc == TW_E_NOTFOUND)
    return tw_err_field(err, TW_E_INVALID, "tenant",
                        "tenant: no tenant named \"%.64s\"; an admin creates "
                        "it first (tradewind tenant create)",
                        spec->tenant);
  if (rc)
    return tw_err_set(err, rc, "%s", e2.msg);
  rc = tn_quota_admit(t, spec, err);
  const char *action = "quota.refuse";
  if (rc == TW_OK) {
    /* project only when some budget may use it: ranking offers costs */
    struct tw_budget bs[2];
    if (tn_cache_budgets(t, spec->tenant, spec->project, bs))
      out->projected_uusd =
          tn_project_cost(t, spec, out->projection, sizeof out->projection);
    rc = tn_budget_admit(t, spec, out->projected_uusd, err);
    action = "budget.refuse";
  }
  if (rc == TW_E_QUOTA && err) {
    char object[200];
    snprintf(object, sizeof object, "job-spec/%s",
             spec->name ? spec->name : "");
    tn_audit(t, principal ? principal : "", spec->tenant, action, object,
             "refused", request_id ? request_id : "", err->msg);
  }
  return rc;
}

enum tw_rc tw_tenancy_admit_group(struct tw_tenancy *t,
                                  const struct tw_job_spec *const *specs,
                                  const int64_t *counts, size_t n,
                                  const char *principal,
                                  const char *request_id,
                                  struct tw_admission *out,
                                  struct tw_err *err) {
  memset(out, 0, sizeof *out);
  int64_t total = 0;
  /* each template as a job of its own (tenant, quotas), its projection
   * times its tasks */
  for (size_t i = 0; i < n; i++) {
    struct tw_admission one;
    enum tw_rc rc = tw_tenancy_admit(t, specs[i], principal, request_id, &one,
                                     err);
    if (rc)
      return rc;
    if (one.projected_uusd > 0 && counts[i] > INT64_MAX / one.projected_uusd)
      total = INT64_MAX;
    else if (total < INT64_MAX - one.projected_uusd * counts[i])
      total += one.projected_uusd * counts[i];
    else
      total = INT64_MAX;
    if (i == 0)
      snprintf(out->projection, sizeof out->projection, "%s", one.projection);
  }
  out->projected_uusd = total;
  if (!n || total <= 0)
    return TW_OK;
  /* the whole group against the hard budgets at once */
  enum tw_rc rc = tn_budget_admit(t, specs[0], total, err);
  if (rc == TW_E_QUOTA && err) {
    char object[200];
    snprintf(object, sizeof object, "workflow/%s",
             specs[0]->name ? specs[0]->name : "");
    tn_audit(t, principal ? principal : "", specs[0]->tenant, "budget.refuse",
             object, "refused", request_id ? request_id : "", err->msg);
  }
  return rc;
}

/* ---- the scheduler's audit entries
 * --------------------------------------------------- */

void tw_tenancy_sched_audit(struct tw_tenancy *t, const char *job_id,
                            const char *tenant, const char *action,
                            const char *outcome, const char *detail) {
  tn_audit(t, "sched", tenant, action, job_id, outcome, "", detail);
}

void tw_tenancy_audit_launch(struct tw_tenancy *t, const struct tw_job_rec *job,
                             int attempt, const struct tw_offer *o,
                             enum tw_rc rc, const char *msg,
                             const char *explain) {
  char detail[900], price[32];
  tn_fmt_usd(o->price_uusd_per_hour, price, sizeof price);
  if (rc == TW_OK)
    snprintf(detail, sizeof detail, "attempt %d on %s at %s/h: %s", attempt,
             o->id, price, explain ? explain : "");
  else
    snprintf(detail, sizeof detail,
             "attempt %d on %s refused (%s): %s; moving on", attempt, o->id,
             tw_rc_str(rc), msg ? msg : "");
  tn_audit(t, "sched", job->tenant,
           rc == TW_OK ? "sched.place" : "sched.fallback", job->id,
           rc == TW_OK ? "ok" : "refused", "", detail);
}

void tw_tenancy_audit_launch_entry(struct tw_tenancy *t,
                                   const struct tw_job_rec *job, int attempt,
                                   const struct tw_offer *o,
                                   const char *explain,
                                   struct tw_audit_event *ev, char *detail,
                                   size_t detail_size, int64_t *at_ms) {
  char price[32];
  tn_fmt_usd(o->price_uusd_per_hour, price, sizeof price);
  snprintf(detail, detail_size, "attempt %d on %s at %s/h: %s", attempt,
           o->id, price, explain ? explain : "");
  *ev = (struct tw_audit_event){.principal = "sched",
                                .tenant = job->tenant,
                                .action = "sched.place",
                                .object = job->id,
                                .outcome = "ok",
                                .request_id = "",
                                .detail = detail};
  *at_ms = tw_clock_now_ms(t->clock);
}

/* ---- maintenance
 * ----------------------------------------------------------------------- */

static bool hook_addr_ok(void *ctx, const struct sockaddr *sa, char *why,
                         size_t whysz) {
  const char *r = tn_webhook_addr_refused(ctx, sa);
  if (r)
    snprintf(why, whysz, "%s (tenancy.webhook_allow does not list it)", r);
  return r == NULL;
}

static void webhook(struct tw_tenancy *t, const struct tw_budget_status *s,
                    int pct) {
  const struct tw_budget *b = &s->budget;
  struct tw_buf body;
  tw_buf_init(&body);
  tw_buf_adds(&body, "{\"event\":\"budget.threshold\",\"tenant\":");
  tw_buf_json_str(&body, b->tenant);
  tw_buf_adds(&body, ",\"project\":");
  tw_buf_json_str(&body, b->project);
  tw_buf_printf(
      &body,
      ",\"period\":\"%s\",\"threshold_pct\":%d,\"limit_uusd\":%" PRId64
      ",\"spent_uusd\":%" PRId64 ",\"committed_uusd\":%" PRId64
      ",\"forecast_uusd\":%" PRId64 "}",
      tw_budget_period_str(b->period), pct, b->limit_uusd, s->spent_uusd,
      s->committed_uusd, s->forecast_uusd);
  struct tw_err err = {0};
  pthread_mutex_lock(&t->mu);
  if (!t->http) {
    struct tw_http_opts ho = {
        .max_attempts = 2, .clock = t->clock, .user_agent = "tradewind-budget"};
    tw_http_new(&ho, &t->http, &err);
  }
  struct tw_http *h = t->http;
  pthread_mutex_unlock(&t->mu);
  if (h) {
    struct tw_http_header hdr = {"Content-Type", "application/json"};
    struct tw_http_request req = {.method = "POST",
                                  .url = b->webhook,
                                  .headers = &hdr,
                                  .n_headers = 1,
                                  .body = body.data,
                                  .body_len = body.len,
                                  .timeout_ms = (long)t->webhook_timeout_ms,
                                  .max_body_bytes = 65536,
                                  /* every address it would connect to */
                                  .allow_addr = hook_addr_ok,
                                  .allow_ctx = t};
    struct tw_http_response resp;
    tw_http_response_init(&resp);
    if (tw_http_do(h, &req, &resp, &err) || resp.status / 100 != 2)
      tw_log_warn("tenancy", "tenant=%s budget webhook failed: %s (status %ld)",
                  b->tenant, err.msg, resp.status);
    tw_http_response_release(&resp);
  }
  tw_buf_release(&body);
}

struct alert_arg {
  const struct tw_budget_status *s;
  int pct;
  int64_t now;
};

static enum tw_rc record_alert(struct tw_tenancy *t, struct alert_arg *a,
                               struct tw_err *err) {
  const struct tw_budget *b = &a->s->budget;
  char detail[300], lim[32], sp[32];
  tn_fmt_usd(b->limit_uusd, lim, sizeof lim);
  tn_fmt_usd(a->s->spent_uusd, sp, sizeof sp);
  snprintf(detail, sizeof detail,
           "%d%% of the %s budget reached: spent %s of %s", a->pct,
           tw_budget_period_str(b->period), sp, lim);
  char object[140];
  snprintf(object, sizeof object, "budget/%.63s%s%.63s", b->tenant,
           b->project[0] ? "/" : "", b->project);
  /* the entry goes in the transaction that records the alert */
  struct tw_audit_event ev = {.principal = "tradewindd",
                              .tenant = b->tenant,
                              .action = "budget.alert",
                              .object = object,
                              .outcome = "ok",
                              .detail = detail};
  struct tw_store_budget_alert rec = {.tenant = b->tenant,
                                      .project = b->project,
                                      .period_start_ms = a->s->period_start_ms,
                                      .pct = a->pct,
                                      .at_ms = a->now,
                                      .spent_uusd = a->s->spent_uusd};
  return tw_store_budget_alert_put(t->store, &rec, &ev, err);
}

static int newest_first(const void *x, const void *y) {
  const struct tw_store_budget_job *a = x, *b = y;
  if (a->created_ms != b->created_ms)
    return a->created_ms > b->created_ms ? -1 : 1;
  return strcmp(b->id, a->id);
}

static int enforce(struct tw_tenancy *t, const struct tw_budget *b) {
  struct tw_budget_status s;
  struct tw_store_budget_job *jobs = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  int stopped = 0;
  if (status_of(t, b, &s, &jobs, &n, &err)) {
    tw_log_warn("tenancy", "tenant=%s budget status failed: %s", b->tenant,
                err.msg);
    return 0;
  }
  int64_t now = tw_clock_now_ms(t->clock);
  /* thresholds: of actual spend, once each per period */
  if (b->limit_uusd > 0)
    for (size_t i = 0; i < b->n_thresholds; i++) {
      int pct = b->thresholds_pct[i];
      if (pct <= s.alerted_pct ||
          (__int128)s.spent_uusd * 100 < (__int128)b->limit_uusd * pct)
        continue;
      struct alert_arg a = {.s = &s, .pct = pct, .now = now};
      if (record_alert(t, &a, &err)) {
        tw_log_warn("tenancy", "tenant=%s budget alert not stored: %s",
                    b->tenant, err.msg);
        break;
      }
      char sp[32], lim[32];
      tn_fmt_usd(s.spent_uusd, sp, sizeof sp);
      tn_fmt_usd(b->limit_uusd, lim, sizeof lim);
      tw_log_warn("tenancy",
                  "tenant=%s project=%s budget at %d%%: spent %s of %s",
                  b->tenant, b->project[0] ? b->project : "*", pct, sp, lim);
      s.alerted_pct = pct;
      if (b->webhook[0])
        webhook(t, &s, pct);
    }
  if (b->hard && b->stop_running &&
      s.spent_uusd + s.committed_uusd >= b->limit_uusd) {
    qsort(jobs, n, sizeof *jobs, newest_first);
    int64_t total = s.spent_uusd + s.committed_uusd;
    for (size_t i = 0; i < n && total >= b->limit_uusd; i++) {
      char reason[300], lim[32], sp[32], co[32];
      tn_fmt_usd(b->limit_uusd, lim, sizeof lim);
      tn_fmt_usd(s.spent_uusd, sp, sizeof sp);
      tn_fmt_usd(total - s.spent_uusd, co, sizeof co);
      snprintf(
          reason, sizeof reason,
          "stopped: hard %s budget of %s%s%s reached: spent %s + committed %s "
          ">= limit %s",
          tw_budget_period_str(b->period), b->tenant, b->project[0] ? "/" : "",
          b->project, sp, co, lim);
      struct tw_job_transition tr = {
          .id = jobs[i].id, .to = TW_JOB_CANCELLED, .reason = reason};
      tw_err_clear(&err);
      if (tw_store_job_transition(t->store, &tr, NULL, &err)) {
        tw_log_warn("tenancy", "job=%s not stopped: %s", jobs[i].id, err.msg);
        continue;
      }
      total -= committed_of(&jobs[i]);
      stopped++;
      tw_log_warn("tenancy", "job=%s tenant=%s %s", jobs[i].id, b->tenant,
                  reason);
      tn_audit(t, "tradewindd", b->tenant, "budget.stop", jobs[i].id, "ok", "",
               reason);
    }
  }
  free(jobs);
  return stopped;
}

int tw_tenancy_tick(struct tw_tenancy *t) {
  struct tw_budget *bs = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_tenancy_budget_list(t, NULL, &bs, &n, &err)) {
    tw_log_warn("tenancy", "budgets not checked: %s", err.msg);
    return 0;
  }
  int stopped = 0;
  for (size_t i = 0; i < n; i++)
    stopped += enforce(t, &bs[i]);
  free(bs);
  return stopped;
}
