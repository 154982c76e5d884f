/* ledger.c - the append-only ledger: the rules its rows follow and the
 * corrections it writes.  The statements are the store's
 * (broker/core/store_ledger.c). */
#include "billing/ledger/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/ledger/meter.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
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
  /* in the source currency at the rate of the row it corrects */
  if (of->source_currency[0] && of->effective_uusd) {
    __int128 x = (__int128)a->d_eff * of->source_effective_micro;
    __int128 h = of->effective_uusd / 2;
    r->source_effective_micro = (int64_t)((x >= 0) == (of->effective_uusd > 0)
                                              ? (x + h) / of->effective_uusd
                                              : (x - h) / of->effective_uusd);
  } else {
    r->source_currency[0] = '\0';
    r->source_effective_micro = 0;
  }
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
              {"day", TW_GROUP_DAY},           {"job", TW_GROUP_JOB},
              {"market", TW_GROUP_MARKET}};
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
                          "tenant, project, provider, region, day, job or "
                          "market)",
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

/* ---- grouping in memory ---------------------------------------------------
 *
 * A hash table of groups by their key (the dimensions of a mask), for the
 * accrual and for regrouping a finer sum. */

struct agg {
  unsigned mask;
  struct tw_ledger_group *g;
  size_t n, cap;
  uint32_t *slot; /* index + 1; 0 empty */
  size_t nslot;
};

static uint64_t fnv(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t key_hash(const struct tw_ledger_group *g) {
  uint64_t h = 1469598103934665603ULL;
  h = fnv(h, g->tenant);
  h = fnv(h, g->project);
  h = fnv(h, g->provider);
  h = fnv(h, g->region);
  h = fnv(h, g->job_id);
  h = fnv(h, g->market);
  return (h ^ (uint64_t)g->day) * 1099511628211ULL;
}

static bool key_eq(const struct tw_ledger_group *a,
                   const struct tw_ledger_group *b) {
  return a->day == b->day && !strcmp(a->tenant, b->tenant) &&
         !strcmp(a->project, b->project) && !strcmp(a->provider, b->provider) &&
         !strcmp(a->region, b->region) && !strcmp(a->job_id, b->job_id) &&
         !strcmp(a->market, b->market);
}

static void agg_grow(struct agg *a) {
  size_t ns = a->nslot ? a->nslot * 2 : 256;
  uint32_t *sl = tw_calloc(ns, sizeof *sl);
  for (size_t i = 0; i < a->n; i++) {
    size_t k = key_hash(&a->g[i]) & (ns - 1);
    while (sl[k])
      k = (k + 1) & (ns - 1);
    sl[k] = (uint32_t)(i + 1);
  }
  free(a->slot);
  a->slot = sl;
  a->nslot = ns;
}

/* Adds x's amounts to the group of x's key (x already masked). */
static void agg_add(struct agg *a, const struct tw_ledger_group *x) {
  if ((a->n + 1) * 2 > a->nslot)
    agg_grow(a);
  size_t k = key_hash(x) & (a->nslot - 1);
  while (a->slot[k]) {
    struct tw_ledger_group *y = &a->g[a->slot[k] - 1];
    if (key_eq(x, y)) {
      y->list_uusd += x->list_uusd;
      y->effective_uusd += x->effective_uusd;
      y->usage_ms += x->usage_ms;
      y->rows += x->rows;
      y->source_rows += x->source_rows;
      y->source_effective_micro += x->source_effective_micro;
      y->accrued_list_uusd += x->accrued_list_uusd;
      y->accrued_effective_uusd += x->accrued_effective_uusd;
      return;
    }
    k = (k + 1) & (a->nslot - 1);
  }
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->g = tw_realloc(a->g, a->cap * sizeof *a->g);
  }
  a->g[a->n] = *x;
  a->slot[k] = (uint32_t)(++a->n);
}

/* g's dimensions outside mask cleared, as the store leaves them */
static void mask_group(struct tw_ledger_group *g, unsigned mask) {
  if (!(mask & TW_GROUP_TENANT))
    g->tenant[0] = '\0';
  if (!(mask & TW_GROUP_PROJECT))
    g->project[0] = '\0';
  if (!(mask & TW_GROUP_PROVIDER))
    g->provider[0] = '\0';
  if (!(mask & TW_GROUP_REGION))
    g->region[0] = '\0';
  if (!(mask & TW_GROUP_DAY))
    g->day = -1;
  if (!(mask & TW_GROUP_JOB))
    g->job_id[0] = '\0';
  if (!(mask & TW_GROUP_MARKET))
    g->market[0] = '\0';
}

static int group_cmp(const void *x, const void *y) {
  const struct tw_ledger_group *a = x, *b = y;
  int c;
  if ((c = strcmp(a->tenant, b->tenant)) ||
      (c = strcmp(a->project, b->project)) ||
      (c = strcmp(a->provider, b->provider)) ||
      (c = strcmp(a->region, b->region)))
    return c;
  if (a->day != b->day)
    return a->day < b->day ? -1 : 1;
  if ((c = strcmp(a->job_id, b->job_id)))
    return c;
  return strcmp(a->market, b->market);
}

/* The groups, ordered as the store orders them; a is emptied. */
static void agg_finish(struct agg *a, struct tw_ledger_group **out,
                       size_t *n) {
  if (a->n > 1)
    qsort(a->g, a->n, sizeof *a->g, group_cmp);
  *out = a->g;
  *n = a->n;
  free(a->slot);
  memset(a, 0, sizeof *a);
}

enum tw_rc tw_ledger_regroup(const struct tw_ledger_group *in, size_t n_in,
                             unsigned mask, const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n) {
  struct agg a = {.mask = mask};
  for (size_t i = 0; i < n_in; i++) {
    if (f && f->tenant && strcmp(f->tenant, in[i].tenant))
      continue;
    if (f && f->project && strcmp(f->project, in[i].project))
      continue;
    struct tw_ledger_group x = in[i];
    mask_group(&x, mask);
    agg_add(&a, &x);
  }
  agg_finish(&a, out, n);
  return TW_OK;
}

/* ---- accrual --------------------------------------------------------------
 */

struct accrue_arg {
  int64_t from_ms, to_ms, now_ms;
  const struct tw_ledger_filter *f;
  struct agg agg;
};

/* c's part over [lo, hi) of a piece spanning [s, e): as the store splits
 * a ledger row at a range's edge (store_ledger.h). */
static int64_t part_of(int64_t c, int64_t s, int64_t e, int64_t lo,
                       int64_t hi) {
  int64_t d = e - s;
  int64_t a = lo > s ? lo : s, b = hi < e ? hi : e;
  if (b <= a || d <= 0)
    return 0;
  return (int64_t)((__int128)c * (b - s) / d - (__int128)c * (a - s) / d);
}

static void accrue_piece(void *ctx, const struct tw_ledger_row *r) {
  struct accrue_arg *a = ctx;
  int64_t lo = a->from_ms > r->start_ms ? a->from_ms : r->start_ms;
  int64_t hi = a->to_ms < r->end_ms ? a->to_ms : r->end_ms;
  if (hi <= lo)
    return;
  struct tw_ledger_group g;
  memset(&g, 0, sizeof g);
  TW_SET(g.tenant, r->tenant);
  TW_SET(g.project, r->project);
  TW_SET(g.provider, r->provider);
  TW_SET(g.region, r->region);
  TW_SET(g.job_id, r->job_id);
  TW_SET(g.market, r->market);
  g.day = tw_ledger_day(r->start_ms);
  mask_group(&g, a->agg.mask);
  g.list_uusd = g.accrued_list_uusd =
      part_of(r->list_uusd, r->start_ms, r->end_ms, a->from_ms, a->to_ms);
  g.effective_uusd = g.accrued_effective_uusd = part_of(
      r->effective_uusd, r->start_ms, r->end_ms, a->from_ms, a->to_ms);
  g.usage_ms = hi - lo;
  agg_add(&a->agg, &g);
}

static void accrue_one(void *ctx, const struct tw_store_meter_progress *p) {
  struct accrue_arg *a = ctx;
  if (a->f && a->f->tenant && strcmp(a->f->tenant, p->tenant))
    return;
  if (a->f && a->f->project && strcmp(a->f->project, p->project))
    return;
  tw_meter_accrue(p, a->now_ms < a->to_ms ? a->now_ms : a->to_ms,
                  accrue_piece, a);
}

enum tw_rc tw_ledger_accrued(struct tw_store *s, int64_t from_ms,
                             int64_t to_ms, int64_t now_ms, unsigned group_mask,
                             const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n,
                             struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct accrue_arg a = {.from_ms = from_ms,
                         .to_ms = to_ms,
                         .now_ms = now_ms,
                         .f = f,
                         .agg = {.mask = group_mask}};
  if (to_ms <= from_ms || now_ms <= from_ms)
    return TW_OK;
  enum tw_rc rc = tw_store_meter_scan_open(s, accrue_one, &a, err);
  agg_finish(&a.agg, out, n);
  if (rc) {
    free(*out);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

/* Merges src[0..ns) into the sorted groups of *g (count *n), adding the
 * amounts of equal keys; *g stays sorted. */
static void merge_groups(struct tw_ledger_group **g, size_t *n,
                         const struct tw_ledger_group *src, size_t ns) {
  size_t added = 0, base = *n;
  for (size_t i = 0; i < ns; i++) {
    struct tw_ledger_group *y =
        base ? bsearch(&src[i], *g, base, sizeof **g, group_cmp) : NULL;
    if (y) {
      y->list_uusd += src[i].list_uusd;
      y->effective_uusd += src[i].effective_uusd;
      y->usage_ms += src[i].usage_ms;
      y->source_rows += src[i].source_rows;
      y->source_effective_micro += src[i].source_effective_micro;
      y->accrued_list_uusd += src[i].accrued_list_uusd;
      y->accrued_effective_uusd += src[i].accrued_effective_uusd;
      continue;
    }
    if (!added)
      *g = tw_realloc(*g, (base + ns) * sizeof **g);
    (*g)[base + added++] = src[i];
  }
  *n = base + added;
  if (added)
    qsort(*g, *n, sizeof **g, group_cmp);
}

void tw_ledger_merge(struct tw_ledger_group **g, size_t *n,
                     const struct tw_ledger_group *extra, size_t n_extra) {
  merge_groups(g, n, extra, n_extra);
}

enum tw_rc tw_ledger_sum_now(struct tw_store *s, int64_t from_ms,
                             int64_t to_ms, int64_t now_ms, unsigned group_mask,
                             const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n,
                             struct tw_err *err) {
  struct tw_ledger_group *acc = NULL;
  size_t n_acc = 0;
  enum tw_rc rc = tw_ledger_sum(s, from_ms, to_ms, group_mask, f, out, n, err);
  if (rc)
    return rc;
  if ((rc = tw_ledger_accrued(s, from_ms, to_ms, now_ms, group_mask, f, &acc,
                              &n_acc, err))) {
    free(*out);
    *out = NULL;
    *n = 0;
    return rc;
  }
  merge_groups(out, n, acc, n_acc);
  free(acc);
  return TW_OK;
}

enum tw_rc tw_ledger_spent_now(struct tw_store *s, const char *tenant,
                               const char *project, int64_t from_ms,
                               int64_t to_ms, int64_t now_ms,
                               int64_t *effective_uusd, int64_t *accrued_uusd,
                               struct tw_err *err) {
  struct tw_ledger_filter f = {.tenant = tenant, .project = project};
  struct tw_ledger_group *g = NULL;
  size_t n = 0;
  *effective_uusd = 0;
  if (accrued_uusd)
    *accrued_uusd = 0;
  enum tw_rc rc = tw_ledger_sum_now(s, from_ms, to_ms, now_ms, 0, &f, &g, &n,
                                    err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++) {
    *effective_uusd += g[i].effective_uusd;
    if (accrued_uusd)
      *accrued_uusd += g[i].accrued_effective_uusd;
  }
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

enum tw_rc tw_ledger_accounts_set(struct tw_store *s,
                                  const struct tw_ledger_account *a, size_t n,
                                  struct tw_err *err) {
  return tw_store_ledger_accounts_set(s, a, n, err);
}

enum tw_rc tw_ledger_accounts_get(struct tw_store *s,
                                  struct tw_ledger_account **out, size_t *n,
                                  struct tw_err *err) {
  return tw_store_ledger_accounts_get(s, out, n, err);
}
