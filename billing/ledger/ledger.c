/* ledger.c - the append-only ledger: the rules its rows follow and the
 * corrections it writes.  The statements are the store's
 * (broker/core/store_ledger.c). */
#include "billing/ledger/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/store_ledger.h"

const char *tw_charge_category_str(enum tw_charge_category c) {
  return c == TW_CHARGE_ADJUSTMENT ? "Adjustment" : "Usage";
}

/* ---- append ----------------------------------------------------------------
 */

static enum tw_rc check_row(const struct tw_ledger_row *r, size_t i,
                            struct tw_err *err) {
  if (r->start_ms > r->end_ms)
    return tw_err_set(err, TW_E_INVALID,
                      "ledger row %zu: charge period ends before it starts", i);
  /* a period ending exactly at midnight belongs to the day it started */
  if (r->end_ms > r->start_ms &&
      tw_ledger_day(r->start_ms) != tw_ledger_day(r->end_ms - 1))
    return tw_err_set(err, TW_E_INVALID,
                      "ledger row %zu: charge period crosses midnight (UTC)",
                      i);
  if (!r->tenant[0] || !r->provider[0])
    return tw_err_set(err, TW_E_INVALID,
                      "ledger row %zu: tenant and provider are required", i);
  return TW_OK;
}

enum tw_rc tw_ledger_check(const struct tw_ledger_row *rows, size_t n,
                           struct tw_err *err) {
  enum tw_rc rc;
  for (size_t i = 0; i < n; i++)
    if ((rc = check_row(&rows[i], i, err)))
      return rc;
  return TW_OK;
}

enum tw_rc tw_ledger_append(struct tw_store *s, struct tw_ledger_row *rows,
                            size_t n, int64_t now_ms, struct tw_err *err) {
  if (!n)
    return TW_OK;
  enum tw_rc rc = tw_ledger_check(rows, n, err);
  return rc ? rc : tw_store_ledger_append(s, rows, n, now_ms, err);
}

struct adjust_arg {
  int64_t d_list, d_eff, now_ms;
  const char *why;
};

/* The correction of row `of`, built inside the store's transaction. */
static enum tw_rc correction_of(void *arg, const struct tw_ledger_row *of,
                                struct tw_ledger_row *r, struct tw_err *err) {
  const struct adjust_arg *a = arg;
  /* Same dimensions and charge period as the row it corrects, so the
   * correction lands in the same day and groups. */
  *r = *of;
  r->seq = 0;
  r->recorded_ms = a->now_ms;
  r->category = TW_CHARGE_ADJUSTMENT;
  r->correction = true;
  r->usage_ms = 0;
  r->quantity = 0;
  r->list_uusd = a->d_list;
  r->effective_uusd = a->d_eff;
  r->corrects_seq = of->seq;
  snprintf(r->description, sizeof r->description, "Correction of row %lld: %s",
           (long long)of->seq, a->why ? a->why : "");
  return check_row(r, 0, err);
}

enum tw_rc tw_ledger_adjust(struct tw_store *s, int64_t seq,
                            int64_t delta_list_uusd,
                            int64_t delta_effective_uusd, const char *why,
                            int64_t now_ms, struct tw_ledger_row *out,
                            struct tw_err *err) {
  struct adjust_arg a = {.d_list = delta_list_uusd,
                         .d_eff = delta_effective_uusd,
                         .now_ms = now_ms,
                         .why = why};
  return tw_store_ledger_derive(s, seq, correction_of, &a, now_ms, out, err);
}

enum tw_rc tw_ledger_scan(struct tw_store *s, int64_t from_ms, int64_t to_ms,
                          const struct tw_ledger_filter *f, tw_ledger_row_fn fn,
                          void *ctx, struct tw_err *err) {
  return tw_store_ledger_scan(s, from_ms, to_ms, f, fn, ctx, err);
}

/* ---- grouped sums ----------------------------------------------------------
 */

enum tw_rc tw_ledger_group_parse(const char *text, unsigned *mask,
                                 struct tw_err *err) {
  static const struct {
    const char *name;
    unsigned bit;
  } dims[] = {{"tenant", TW_GROUP_TENANT},     {"project", TW_GROUP_PROJECT},
              {"provider", TW_GROUP_PROVIDER}, {"region", TW_GROUP_REGION},
              {"day", TW_GROUP_DAY},           {"job", TW_GROUP_JOB}};
  *mask = 0;
  const char *p = text ? text : "";
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    size_t i;
    for (i = 0; i < sizeof dims / sizeof dims[0]; i++)
      if (strlen(dims[i].name) == len && !strncmp(dims[i].name, p, len))
        break;
    if (len && i == sizeof dims / sizeof dims[0])
      return tw_err_field(err, TW_E_INVALID, "group_by",
                          "group_by: unknown dimension \"%.*s\" (expected "
                          "tenant, project, provider, region, day or job)",
                          (int)(len > 64 ? 64 : len), p);
    if (len)
      *mask |= dims[i].bit;
    p += len;
    if (*p == ',')
      p++;
  }
  return TW_OK;
}

enum tw_rc tw_ledger_sum(struct tw_store *s, int64_t from_ms, int64_t to_ms,
                         unsigned group_mask, const struct tw_ledger_filter *f,
                         struct tw_ledger_group **out, size_t *n,
                         struct tw_err *err) {
  return tw_store_ledger_sum(s, from_ms, to_ms, group_mask, f, out, n, err);
}

enum tw_rc tw_ledger_spent(struct tw_store *s, const char *tenant,
                           const char *project, int64_t from_ms, int64_t to_ms,
                           int64_t *effective_uusd, struct tw_err *err) {
  struct tw_ledger_filter f = {.tenant = tenant, .project = project};
  struct tw_ledger_group *g;
  size_t n;
  *effective_uusd = 0;
  enum tw_rc rc = tw_ledger_sum(s, from_ms, to_ms, 0, &f, &g, &n, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++)
    *effective_uusd += g[i].effective_uusd;
  free(g);
  return TW_OK;
}

enum tw_rc tw_ledger_job_cost(struct tw_store *s, const char *job_id,
                              int64_t *list_uusd, int64_t *effective_uusd,
                              struct tw_err *err) {
  return tw_store_ledger_job_cost(s, job_id, list_uusd, effective_uusd, err);
}

enum tw_rc tw_ledger_count(struct tw_store *s, int64_t *rows,
                           struct tw_err *err) {
  return tw_store_ledger_count(s, rows, err);
}

/* ---- budgets
 * ----------------------------------------------------------------- */

enum tw_rc tw_ledger_budgets_set(struct tw_store *s,
                                 const struct tw_ledger_budget *budgets,
                                 size_t n, struct tw_err *err) {
  return tw_store_ledger_budgets_set(s, budgets, n, err);
}

enum tw_rc tw_ledger_budgets_get(struct tw_store *s,
                                 struct tw_ledger_budget **out, size_t *n,
                                 struct tw_err *err) {
  return tw_store_ledger_budgets_get(s, out, n, err);
}
