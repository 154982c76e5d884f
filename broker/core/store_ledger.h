/* store_ledger.h - the ledger's tables (ledger, its rollups ledger_day and
 * ledger_job_day, ledger_budgets) and the meter's progress
 * (meter_attempts).
 *
 * The row, group and budget structs are the ledger's: billing/ledger/
 * ledger.h includes this header and documents what they mean; the store
 * only keeps them, so a report over millions of rows hands them out
 * without a copy.  The rules of the ledger (which rows are valid, what a
 * correction copies, how the meter charges) stay in billing/ledger; what
 * is here is how rows land and are read: rollups written in the row's
 * transaction, sums split between rollups and rows.  Thread-safe, as the
 * store. */
#ifndef TW_CORE_STORE_LEDGER_H
#define TW_CORE_STORE_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

#define TW_DAY_MS 86400000LL

/* Days since the epoch of a UTC time, rounding toward minus infinity: the
 * day a row belongs to (its charge period's start). */
static inline int64_t tw_ledger_day(int64_t ms) {
  return ms >= 0 ? ms / TW_DAY_MS : -((-ms + TW_DAY_MS - 1) / TW_DAY_MS);
}

/* FOCUS ChargeCategory values the ledger writes. */
enum tw_charge_category { TW_CHARGE_USAGE = 0, TW_CHARGE_ADJUSTMENT };

/* FOCUS ServiceCategory of the row. */
enum tw_service {
  TW_SERVICE_COMPUTE = 0, /* instance time: PricingUnit "Hours" */
  TW_SERVICE_NETWORK      /* data egress: PricingUnit "GB" */
};

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
  /* How effective_uusd was reached: discount_bp basis points off list,
   * a negotiated rate (FOCUS ContractedUnitPrice) or, with commitment, a
   * commitment-based discount (FOCUS CommitmentDiscount columns). */
  int64_t discount_bp;
  bool commitment;
  /* The effective cost as billed in the provider's own currency, when it
   * sells in another than USD (Alibaba: "CNY"), in millionths of it, as
   * the meter charged it (the offer's own price, not converted back);
   * "" and 0 for USD, and for rows metered before it was kept. */
  char source_currency[4];
  int64_t source_effective_micro;
};

/* An account as the provider's invoice names it, and its commitment
 * (billing.providers.<name>: account_id, ...); "" where not configured. */
struct tw_ledger_account {
  char account[64]; /* the config's name: "aws-main" */
  char account_id[64], account_name[128], account_type[64];
  char commitment_id[128], commitment_name[128], commitment_type[64];
  char commitment_category[16]; /* "Spend" | "Usage" */
};

struct tw_ledger_filter {
  const char *tenant;  /* NULL: any */
  const char *project; /* NULL: any */
};

/* Dimensions of a grouped sum. */
enum {
  TW_GROUP_TENANT = 1 << 0,
  TW_GROUP_PROJECT = 1 << 1,
  TW_GROUP_PROVIDER = 1 << 2,
  TW_GROUP_REGION = 1 << 3,
  TW_GROUP_DAY = 1 << 4,
  TW_GROUP_JOB = 1 << 5,
  /* spot, on-demand, private: from its own rollup (ledger_market_day:
   * day x tenant x project x market), so it combines with tenant,
   * project and day only */
  TW_GROUP_MARKET = 1 << 6
};

struct tw_ledger_group {
  /* The dimensions in the group mask; the others are "" (day -1). */
  char tenant[TW_LEDGER_NAME_MAX];
  char project[TW_LEDGER_NAME_MAX];
  char provider[64];
  char region[64];
  char job_id[32];
  char market[16];
  int64_t day; /* days since 1970-01-01 (UTC) */
  int64_t list_uusd;
  int64_t effective_uusd;
  int64_t usage_ms;
  int64_t rows; /* ledger rows summed */
  /* Of those rows, how many carry their source-currency amount, and its
   * sum (one currency per provider; meaningful grouped by provider). */
  int64_t source_rows, source_effective_micro;
  /* Of list_uusd and effective_uusd, what running attempts have accrued
   * since their last closed charge period (tw_ledger_sum_now); 0 from
   * the ledger alone. */
  int64_t accrued_list_uusd, accrued_effective_uusd;
};

struct tw_ledger_budget {
  char tenant[TW_LEDGER_NAME_MAX];  /* "" overall */
  char project[TW_LEDGER_NAME_MAX]; /* "" every project of the tenant */
  int64_t limit_uusd;               /* per calendar month (UTC) */
};

/* ---- rows ------------------------------------------------------------------
 *
 * Every write below lands the rows, the day rollup (tenant x project x
 * provider x region x day) and, for rows of a job, the per-job rollup in
 * one group-committed transaction.  Rows are taken as they are: the
 * ledger checks them first (tw_ledger_check). */

/* Appends rows[0..n); fills each seq, and recorded_ms when 0 (now_ms). */
enum tw_rc tw_store_ledger_append(struct tw_store *s,
                                  struct tw_ledger_row *rows, size_t n,
                                  int64_t now_ms, struct tw_err *err);

/* Reads row seq and appends the row fn derives from it, in one
 * transaction (a correction: the ledger decides what it copies).  fn runs
 * on the store's writer thread and must not call the store; an error it
 * returns writes nothing.  *out (may be NULL) receives the row appended.
 * TW_E_NOTFOUND when seq does not exist. */
typedef enum tw_rc (*tw_store_ledger_derive_fn)(void *arg,
                                                const struct tw_ledger_row *of,
                                                struct tw_ledger_row *out,
                                                struct tw_err *err);
enum tw_rc tw_store_ledger_derive(struct tw_store *s, int64_t seq,
                                  tw_store_ledger_derive_fn fn, void *arg,
                                  int64_t now_ms, struct tw_ledger_row *out,
                                  struct tw_err *err);

/* Rows whose charge period starts in [from_ms, to_ms), by start then seq,
 * of f's tenant and project (f NULL: all).  fn returns non-zero to stop;
 * it runs on the caller's thread with a read connection held and must not
 * call the store.  The row it gets is valid during the call only. */
typedef int (*tw_ledger_row_fn)(void *ctx, const struct tw_ledger_row *row);
enum tw_rc tw_store_ledger_scan(struct tw_store *s, int64_t from_ms,
                                int64_t to_ms, const struct tw_ledger_filter *f,
                                tw_ledger_row_fn fn, void *ctx,
                                struct tw_err *err);

/* Sums over [from_ms, to_ms) grouped by the TW_GROUP_* dimensions of
 * mask: whole UTC days from a rollup (the per-job one with TW_GROUP_JOB),
 * the partial days at either edge from the rows, merged.  A row that
 * straddles an edge counts by time: the part of its charge period inside
 * the range, list and effective cost split so that the parts of one row
 * in adjacent ranges add up to it exactly (T(c x (b - s) / d) - T(c x
 * (a - s) / d), T truncating); a row of no duration (a minimum charge, a
 * credit, egress) counts where it is.  *out is an
 * array of *n groups ordered by tenant, project, provider, region, day,
 * job (free() it); empty when to_ms <= from_ms. */
enum tw_rc tw_store_ledger_sum(struct tw_store *s, int64_t from_ms,
                               int64_t to_ms, unsigned mask,
                               const struct tw_ledger_filter *f,
                               struct tw_ledger_group **out, size_t *n,
                               struct tw_err *err);

/* A job's total list and effective cost so far (per-job rollup). */
enum tw_rc tw_store_ledger_job_cost(struct tw_store *s, const char *job_id,
                                    int64_t *list_uusd, int64_t *effective_uusd,
                                    struct tw_err *err);

/* Number of rows. */
enum tw_rc tw_store_ledger_count(struct tw_store *s, int64_t *rows,
                                 struct tw_err *err);

/* ---- budgets (the reports' monthly limits) --------------------------------
 */

/* Replaces every stored budget with budgets[0..n), in one transaction. */
enum tw_rc tw_store_ledger_budgets_set(struct tw_store *s,
                                       const struct tw_ledger_budget *budgets,
                                       size_t n, struct tw_err *err);
/* By tenant then project; free() *out. */
enum tw_rc tw_store_ledger_budgets_get(struct tw_store *s,
                                       struct tw_ledger_budget **out, size_t *n,
                                       struct tw_err *err);

/* ---- accounts (the provider's ids, for FOCUS) --------------------------- */

/* Replaces every stored account with accounts[0..n), in one transaction. */
enum tw_rc tw_store_ledger_accounts_set(struct tw_store *s,
                                        const struct tw_ledger_account *a,
                                        size_t n, struct tw_err *err);
/* By account name; free() *out. */
enum tw_rc tw_store_ledger_accounts_get(struct tw_store *s,
                                        struct tw_ledger_account **out,
                                        size_t *n, struct tw_err *err);

/* ---- the meter's progress --------------------------------------------------
 *
 * One row per attempt being metered: who pays, where it runs, under which
 * rule, and how far it has been charged.  It is written in the same
 * transaction as the rows it accounts for, so a restart never charges a
 * period twice nor skips one. */

struct tw_store_meter_progress {
  int64_t attempt_id;
  char job_id[32];
  char tenant[TW_LEDGER_NAME_MAX], project[TW_LEDGER_NAME_MAX];
  char provider[64], account[64], region[64], zone[64], instance_type[64];
  char market[16], resource_id[128];
  int nodes;
  int64_t granularity_s, min_charge_s;
  int64_t price_uusd_per_hour; /* of the current period */
  int64_t running_ms, metered_to_ms;
  int64_t billed_s; /* seconds charged so far (per node) */
  int64_t last_seq; /* the last row that charged something */
  bool ended;
  int64_t discount_bp; /* the effective cost's discount for this period */
};

/* The progress of every attempt not ended, by attempt id; free() *out. */
enum tw_rc tw_store_meter_open(struct tw_store *s,
                               struct tw_store_meter_progress **out, size_t *n,
                               struct tw_err *err);

/* The same, each handed to fn in turn (valid during the call only; fn
 * runs with a read connection held and must not call the store): what
 * the reports' accrual reads, without holding every row at once. */
typedef void (*tw_store_meter_fn)(void *ctx,
                                  const struct tw_store_meter_progress *p);
enum tw_rc tw_store_meter_scan_open(struct tw_store *s, tw_store_meter_fn fn,
                                    void *ctx, struct tw_err *err);

/* One attempt's new rows and the progress once they are written. */
struct tw_store_meter_work {
  struct tw_ledger_row *rows;
  size_t n_rows;
  struct tw_store_meter_progress *progress;
};

/* In one transaction, for each work in order: appends its rows (as
 * tw_store_ledger_append, recorded at now_ms) and stores its progress.
 * Row by row, an Adjustment row is pointed (corrects_seq) at the
 * progress's last_seq, and a Usage row that charged something (list cost
 * not 0) becomes the new last_seq; so a credit names the charge it takes
 * back even when both are in the same batch.  Seqs and last_seq are
 * filled in place; on an error nothing is written and the caller retries
 * with its own copy. */
enum tw_rc tw_store_meter_commit(struct tw_store *s,
                                 struct tw_store_meter_work *works, size_t n,
                                 int64_t now_ms, struct tw_err *err);

#endif
