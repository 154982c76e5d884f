/* ledger.h - the append-only cost ledger and its rollups.
 *
 * Every row is one charge: compute time of one attempt in one charge period
 * (or data moved once), in integer micro-USD, with its list cost (the
 * provider's price) and its effective cost (after the configured discounts).
 * Rows are never updated or deleted: a correction is a new row whose
 * category is TW_CHARGE_ADJUSTMENT, pointing at the row it corrects.
 *
 * Rollups are maintained in the same transaction as the rows land, so a
 * report over a long period reads a few thousand rollup rows instead of
 * millions of ledger rows:
 *   - ledger_day:     tenant x project x provider x region x day
 *   - ledger_job_day: job x provider x region x day
 * A row belongs to the UTC day of its charge period's start; the meter
 * never lets a period cross midnight, so day sums are exact.
 *
 * Storage is the broker's store: the tables of the module "ledger" are
 * created by tw_store_open, their statements are in
 * broker/core/store_ledger.c, writes are group-committed and reads come
 * from the read pool.  All functions are thread-safe. */
#ifndef TW_BILLING_LEDGER_H
#define TW_BILLING_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
/* The row, filter, group and budget structs, TW_DAY_MS and
 * tw_ledger_day(): the store keeps them as they are. */
#include "broker/core/store_ledger.h"

struct tw_store;

const char *tw_charge_category_str(enum tw_charge_category c);

/* Checks rows[0..n) as every append does: start_ms <= end_ms, both in the
 * same UTC day, tenant and provider set.  TW_E_INVALID names the row. */
enum tw_rc tw_ledger_check(const struct tw_ledger_row *rows, size_t n,
                           struct tw_err *err);

/* Appends n rows and their rollups in one group-committed transaction;
 * each row's seq (and recorded_ms when 0) is filled.  Rows must have
 * start_ms <= end_ms and both in the same UTC day (TW_E_INVALID names the
 * row otherwise; nothing is written). */
enum tw_rc tw_ledger_append(struct tw_store *s, struct tw_ledger_row *rows,
                            size_t n, int64_t now_ms, struct tw_err *err);

/* Appends a correction of row `seq`: an Adjustment row with the same
 * dimensions, ChargeClass Correction, and the given cost deltas (negative
 * to credit).  *out (may be NULL) receives the new row.  TW_E_NOTFOUND
 * when seq does not exist. */
enum tw_rc tw_ledger_adjust(struct tw_store *s, int64_t seq,
                            int64_t delta_list_uusd,
                            int64_t delta_effective_uusd, const char *why,
                            int64_t now_ms, struct tw_ledger_row *out,
                            struct tw_err *err);

/* Rows whose charge period starts in [from_ms, to_ms), oldest first,
 * optionally only one tenant / project (NULL: any).  fn returns non-zero to
 * stop early.  fn runs on the caller's thread with a read connection held:
 * it must not call the store. */
enum tw_rc tw_ledger_scan(struct tw_store *s, int64_t from_ms, int64_t to_ms,
                          const struct tw_ledger_filter *f, tw_ledger_row_fn fn,
                          void *ctx, struct tw_err *err);

/* Grouped sums over [from_ms, to_ms).  Whole UTC days inside the range are
 * read from the rollups; the partial days at either edge from the ledger
 * rows themselves, so any range is exact to the micro-dollar.  The
 * dimensions are the TW_GROUP_* bits (store_ledger.h). */

/* Parses "tenant,project,day" into a mask; TW_E_INVALID names the unknown
 * word. */
enum tw_rc tw_ledger_group_parse(const char *text, unsigned *mask,
                                 struct tw_err *err);

/* *out is an array of *n groups ordered by the dimensions (free() it).
 * TW_GROUP_JOB sums come from the per-job rollup. */
enum tw_rc tw_ledger_sum(struct tw_store *s, int64_t from_ms, int64_t to_ms,
                         unsigned group_mask, const struct tw_ledger_filter *f,
                         struct tw_ledger_group **out, size_t *n,
                         struct tw_err *err);

/* Actual spend (effective cost, adjustments included) of a tenant, or of
 * one of its projects when project is not NULL, over [from_ms, to_ms).
 * For budgets (broker/tenancy): cheap, reads the rollups. */
enum tw_rc tw_ledger_spent(struct tw_store *s, const char *tenant,
                           const char *project, int64_t from_ms, int64_t to_ms,
                           int64_t *effective_uusd, struct tw_err *err);

/* What running attempts have accrued in [from_ms, to_ms) up to now_ms
 * since their last closed charge period (meter.h, tw_meter_accrue), grouped
 * as tw_ledger_sum groups (amounts in both the totals and the accrued_*
 * fields; rows 0).  Read from the meter's progress. */
enum tw_rc tw_ledger_accrued(struct tw_store *s, int64_t from_ms,
                             int64_t to_ms, int64_t now_ms, unsigned group_mask,
                             const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n,
                             struct tw_err *err);

/* tw_ledger_sum with what is accrued up to now_ms merged in: what reports
 * show.  Each group's accrued_* fields say how much of it is accrued. */
enum tw_rc tw_ledger_sum_now(struct tw_store *s, int64_t from_ms,
                             int64_t to_ms, int64_t now_ms, unsigned group_mask,
                             const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n,
                             struct tw_err *err);

/* Sums groups in[0..n_in) (of a finer mask) into the groups of mask,
 * keeping only f's tenant and project (NULL: all), ordered as
 * tw_ledger_sum orders them: a report reads the ledger once at its finest
 * grouping and derives the others (free() *out). */
enum tw_rc tw_ledger_regroup(const struct tw_ledger_group *in, size_t n_in,
                             unsigned mask, const struct tw_ledger_filter *f,
                             struct tw_ledger_group **out, size_t *n);

/* Adds extra[0..n_extra) (groups of the same mask: accrual, say) into
 * the ordered groups *g (count *n), keeping them ordered; *g is
 * reallocated. */
void tw_ledger_merge(struct tw_ledger_group **g, size_t *n,
                     const struct tw_ledger_group *extra, size_t n_extra);

/* The one "spent" of a budget: the ledger's effective cost (adjustments
 * included) of a tenant, or one of its projects, over [from_ms, to_ms),
 * plus what its running attempts have accrued up to now_ms.  *accrued_uusd
 * (may be NULL) gets the accrued part.  Budget status, alerts, the hard
 * stop and the report's budget table all use it. */
enum tw_rc tw_ledger_spent_now(struct tw_store *s, const char *tenant,
                               const char *project, int64_t from_ms,
                               int64_t to_ms, int64_t now_ms,
                               int64_t *effective_uusd, int64_t *accrued_uusd,
                               struct tw_err *err);

/* Total cost of one job so far (per-job rollup). */
enum tw_rc tw_ledger_job_cost(struct tw_store *s, const char *job_id,
                              int64_t *list_uusd, int64_t *effective_uusd,
                              struct tw_err *err);

/* Number of ledger rows (tests, the benchmark). */
enum tw_rc tw_ledger_count(struct tw_store *s, int64_t *rows,
                           struct tw_err *err);

/* ---- budgets ---------------------------------------------------------------
 *
 * The limits the reports draw burn-down charts against.  The daemon stores
 * the config's `billing.budgets` here at start and on reload; the tenancy
 * module, once it keeps budgets of its own, is read instead (report.h).
 * struct tw_ledger_budget: tenant ("" overall), project ("" every project
 * of the tenant), limit_uusd per calendar month (UTC). */

/* The accounts' invoice ids and commitments (struct tw_ledger_account),
 * stored by the meter from billing.providers at start and on reload. */
enum tw_rc tw_ledger_accounts_set(struct tw_store *s,
                                  const struct tw_ledger_account *a, size_t n,
                                  struct tw_err *err);
/* *out: array of *n by account (free() it). */
enum tw_rc tw_ledger_accounts_get(struct tw_store *s,
                                  struct tw_ledger_account **out, size_t *n,
                                  struct tw_err *err);

/* Replaces the stored budgets with budgets[0..n). */
enum tw_rc tw_ledger_budgets_set(struct tw_store *s,
                                 const struct tw_ledger_budget *budgets,
                                 size_t n, struct tw_err *err);
/* *out: array of *n (free() it), ordered by tenant and project. */
enum tw_rc tw_ledger_budgets_get(struct tw_store *s,
                                 struct tw_ledger_budget **out, size_t *n,
                                 struct tw_err *err);

#endif
