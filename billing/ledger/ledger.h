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
 * Storage is the broker's store (broker/core/store.h): the tables of the
 * module "ledger" are created by tw_store_open, writes are group-committed
 * and reads come from the read pool.  All functions are thread-safe. */
#ifndef TW_BILLING_LEDGER_H
#define TW_BILLING_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;
struct sqlite3;

#define TW_DAY_MS 86400000LL

/* FOCUS ChargeCategory values the ledger writes. */
enum tw_charge_category { TW_CHARGE_USAGE = 0, TW_CHARGE_ADJUSTMENT };

/* FOCUS ServiceCategory of the row. */
enum tw_service {
  TW_SERVICE_COMPUTE = 0, /* instance time: PricingUnit "Hours" */
  TW_SERVICE_NETWORK      /* data egress: PricingUnit "GB" */
};

const char *tw_charge_category_str(enum tw_charge_category c);

#define TW_LEDGER_NAME_MAX 128

struct tw_ledger_row {
  int64_t seq;         /* assigned by the append; 0 before */
  int64_t recorded_ms; /* when the row was written (0: now) */
  int64_t start_ms;    /* charge period [start_ms, end_ms) */
  int64_t end_ms;
  enum tw_charge_category category;
  bool correction; /* FOCUS ChargeClass "Correction" */
  enum tw_service service;
  char tenant[TW_LEDGER_NAME_MAX];
  char project[TW_LEDGER_NAME_MAX];
  char job_id[32];
  int64_t attempt_id; /* 0: not an attempt's (egress of a job) */
  char provider[64];  /* adapter: "aws", "slurm" */
  char account[64];   /* configured account: "aws-main" */
  char region[64];
  char zone[64];
  char instance_type[64];
  char resource_id[128]; /* provider's instance id */
  char market[16];       /* "spot" | "on-demand" | "" (egress) */
  int nodes;             /* instances billed together (gang) */
  int64_t usage_ms;      /* time consumed in the period (compute) */
  /* What was charged: compute in node-seconds (billed seconds x nodes,
   * after granularity and minimum charge), egress in bytes. */
  int64_t quantity;
  int64_t unit_price_uusd; /* list price per hour (compute) or per GB */
  int64_t list_uusd;       /* may be negative in an adjustment */
  int64_t effective_uusd;
  int64_t corrects_seq; /* adjustment: the row it corrects; else 0 */
  char description[256];
};

/* Appends n rows and their rollups in one group-committed transaction;
 * each row's seq (and recorded_ms when 0) is filled.  Rows must have
 * start_ms <= end_ms and both in the same UTC day (TW_E_INVALID names the
 * row otherwise; nothing is written). */
enum tw_rc tw_ledger_append(struct tw_store *s, struct tw_ledger_row *rows,
                            size_t n, int64_t now_ms, struct tw_err *err);

/* The same, for a caller already inside a tw_store_write() function that
 * wants its own writes in the same transaction (the meter keeps its
 * progress there, so a restart never charges a period twice). */
enum tw_rc tw_ledger_append_in(struct tw_store *s, struct sqlite3 *db,
                               struct tw_ledger_row *rows, size_t n,
                               int64_t now_ms, struct tw_err *err);

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
struct tw_ledger_filter {
  const char *tenant;
  const char *project;
};
typedef int (*tw_ledger_row_fn)(void *ctx, const struct tw_ledger_row *row);
enum tw_rc tw_ledger_scan(struct tw_store *s, int64_t from_ms, int64_t to_ms,
                          const struct tw_ledger_filter *f, tw_ledger_row_fn fn,
                          void *ctx, struct tw_err *err);

/* Grouped sums over [from_ms, to_ms).  Whole UTC days inside the range are
 * read from the rollups; the partial days at either edge from the ledger
 * rows themselves, so any range is exact to the micro-dollar. */
enum {
  TW_GROUP_TENANT = 1 << 0,
  TW_GROUP_PROJECT = 1 << 1,
  TW_GROUP_PROVIDER = 1 << 2,
  TW_GROUP_REGION = 1 << 3,
  TW_GROUP_DAY = 1 << 4,
  TW_GROUP_JOB = 1 << 5
};

/* Parses "tenant,project,day" into a mask; TW_E_INVALID names the unknown
 * word. */
enum tw_rc tw_ledger_group_parse(const char *text, unsigned *mask,
                                 struct tw_err *err);

struct tw_ledger_group {
  /* The dimensions in the group mask; the others are "" (day -1). */
  char tenant[TW_LEDGER_NAME_MAX];
  char project[TW_LEDGER_NAME_MAX];
  char provider[64];
  char region[64];
  char job_id[32];
  int64_t day; /* days since 1970-01-01 (UTC) */
  int64_t list_uusd;
  int64_t effective_uusd;
  int64_t usage_ms;
  int64_t rows; /* ledger rows summed */
};

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
 * module, once it keeps budgets of its own, is read instead (report.h). */
struct tw_ledger_budget {
  char tenant[TW_LEDGER_NAME_MAX];  /* "" overall */
  char project[TW_LEDGER_NAME_MAX]; /* "" every project of the tenant */
  int64_t limit_uusd;               /* per calendar month (UTC) */
};

/* Replaces the stored budgets with budgets[0..n). */
enum tw_rc tw_ledger_budgets_set(struct tw_store *s,
                                 const struct tw_ledger_budget *budgets,
                                 size_t n, struct tw_err *err);
/* *out: array of *n (free() it), ordered by tenant and project. */
enum tw_rc tw_ledger_budgets_get(struct tw_store *s,
                                 struct tw_ledger_budget **out, size_t *n,
                                 struct tw_err *err);

/* Days since the epoch of a UTC time, rounding toward minus infinity. */
static inline int64_t tw_ledger_day(int64_t ms) {
  return ms >= 0 ? ms / TW_DAY_MS : -((-ms + TW_DAY_MS - 1) / TW_DAY_MS);
}

#endif
