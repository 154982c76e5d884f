/* meter.h - turns attempt time into ledger rows under each provider's
 * billing rules, and data movement into egress rows.
 *
 * The meter follows attempts through the store on its own (a thread,
 * tw_meter_start, one pass per tick): each pass takes the attempts not yet
 * ended (kept in memory from the store's changes, read whole at the first
 * pass, when the changes are not all known, and every 10 s for what other
 * processes wrote) and the offers as last listed, and hands them to
 * tw_meter_observe().  From that it sees each attempt start running, run,
 * and end, one pass after the fact, and charges it with the times the
 * store recorded (running_ms, ended_ms), so the lag costs no precision.
 * It touches neither the scheduler nor the monitor: they write attempts,
 * the meter reads them.
 *   - one Usage row per attempt and charge period (billing.charge_period_s,
 *     aligned to UTC; a period never crosses midnight), written once the
 *     period has closed, and a last row when the attempt ends;
 *   - the price in force per period: the attempt's launch price for its
 *     first period, then the offer's price as the adapter lists it when
 *     the period is closed (spot prices move; adapters report the current
 *     one in their offers, listed through opts.offers at most every
 *     offers_ttl_ms).  Without a listing, or when the offer is no longer
 *     listed, the last price known: the launch price at worst;
 *   - the provider's rule: seconds are rounded up to the offer's
 *     billing_granularity_s as each unit starts; the minimum charge
 *     (min_charge_s) is applied when the attempt ends, so a 59-second AWS
 *     attempt is charged 60 s.  A spot attempt the provider interrupted is
 *     charged to the second it ended: no minimum, no partial unit (what was
 *     charged ahead is credited back with an Adjustment row);
 *   - node count: the job's `nodes` (gangs are charged per instance);
 *   - list cost at the price, effective cost after the provider's
 *     configured discount; private clouds priced by chargeback rates.
 * The meter keeps its progress per attempt in its own table (module
 * "meter"), written in the same transaction as the rows, so a restart
 * never charges a period twice nor skips one.  An attempt that both
 * started and ended while the daemon was down is not seen (the reconciler
 * issue will report those).
 *
 * Threads: every function may be called from any thread; calls are
 * serialized inside. */
#ifndef TW_BILLING_METER_H
#define TW_BILLING_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "billing/ledger/ledger.h"
#include "broker/base/clock.h"
#include "broker/base/err.h"

struct tw_store;
struct tw_spec_cache;
struct tw_node;
struct tw_offer;
struct tw_attempt_rec;
struct tw_meter;

/* ---- configuration: the `billing:` section --------------------------------
 *
 *   billing:
 *     charge_period_s: 3600        # divides a day; default 3600
 *     providers:                   # by account name or adapter name
 *       aws:
 *         granularity_s: 1         # over the published rule (optional)
 *         min_charge_s: 60
 *         discount_pct: "12.5"     # percent off list
 *         discount_kind: negotiated  # or commitment (then commitment: {id,
 *                                  # name, type, category: Spend|Usage})
 *         discount_spot: false     # also on spot (default: on-demand only)
 *         account_id: "123456789012"   # the invoice's billing account
 *         account_name: "Research"     # (FOCUS BillingAccountId/Name/Type)
 *         account_type: "Account"
 *         egress_usd_per_gb: "0.09"
 *       slurm-lab:                 # private cloud: chargeback rates
 *         chargeback: {vcpu_hour_usd: "0.02", gpu_hour_usd: "1.10",
 *                      memory_gib_hour_usd: "0.003"}
 *     budgets:                     # monthly limits for the reports
 *       - {tenant: ml, limit_usd: "5000"}
 *       - {tenant: ml, project: vision, limit_usd: "1200"}
 */
struct tw_meter_rate {
  char name[64];       /* account or adapter name */
  /* The provider's rule as configured here, over the published one
   * (-1: the published rule, or the offer's). */
  int64_t granularity_s, min_charge_s;
  int64_t discount_bp; /* basis points off list: 1250 = 12.5 % */
  bool discount_spot;
  /* What the discount is: a negotiated rate (default; FOCUS
   * ContractedUnitPrice) or a commitment-based discount (a savings plan,
   * committed use: FOCUS CommitmentDiscount columns). */
  bool commitment;
  char commitment_id[128], commitment_name[128], commitment_type[64];
  char commitment_category[16]; /* "Spend" (default) | "Usage" */
  /* The account as the provider's invoice names it (FOCUS
   * BillingAccountId, BillingAccountName, BillingAccountType). */
  char account_id[64], account_name[128], account_type[64];
  int64_t egress_uusd_per_gb; /* 0: none configured */
  bool chargeback;
  int64_t vcpu_hour_uusd, gpu_hour_uusd, memory_gib_hour_uusd;
};

struct tw_meter_cfg {
  int64_t charge_period_s;
  struct tw_meter_rate *rates; /* owned */
  size_t n_rates;
  struct tw_ledger_budget *budgets; /* owned */
  size_t n_budgets;
};

/* Parses and validates the section (NULL: all defaults).  Errors name the
 * key path ("billing.providers.aws.discount_pct: ...").  out is released
 * with tw_meter_cfg_release on every path. */
enum tw_rc tw_meter_cfg_parse(const struct tw_node *billing,
                              struct tw_meter_cfg *out, struct tw_err *err);
void tw_meter_cfg_release(struct tw_meter_cfg *c);

/* The rate entry for an account (first) or adapter name, or NULL. */
const struct tw_meter_rate *tw_meter_cfg_rate(const struct tw_meter_cfg *c,
                                              const char *account,
                                              const char *provider);

/* ---- billing rules (pure) ------------------------------------------------ */

struct tw_bill_rule {
  int64_t granularity_s; /* <= 1: per second */
  int64_t min_charge_s;  /* charged at least, once per attempt */
  /* Spot capacity the provider reclaimed: charged nothing when it ran
   * less than this many seconds (AWS: 3600); 0: no such rule. */
  int64_t reclaim_free_s;
  bool reclaim_minimum; /* min_charge_s applies to a reclaim too (Azure) */
};

enum tw_bill_phase {
  TW_BILL_RUNNING = 0, /* so far: units started are charged */
  TW_BILL_ENDED,       /* ended: the minimum charge applies */
  TW_BILL_RECLAIMED    /* spot reclaimed by the provider: nothing within
                          reclaim_free_s, else to the second (and the
                          minimum when reclaim_minimum) */
};

/* Seconds charged for an attempt that has run elapsed_ms (cumulative). */
int64_t tw_bill_seconds(const struct tw_bill_rule *r, int64_t elapsed_ms,
                        enum tw_bill_phase phase);

/* price per hour x node-seconds / 3600, rounded half up to the
 * micro-dollar; exact for any int64 inputs that fit the result. */
int64_t tw_bill_cost(int64_t price_uusd_per_hour, int64_t node_seconds);

/* list less discount_bp basis points, rounded half away from zero. */
int64_t tw_bill_discount(int64_t list_uusd, int64_t discount_bp);

/* The cost at the discounted unit price: price x (10000 - discount_bp) /
 * 10000 per hour x node_seconds / 3600, rounded half away from zero once,
 * so that FOCUS's ContractedUnitPrice x PricingQuantity gives it. */
int64_t tw_bill_cost_at(int64_t price_uusd_per_hour, int64_t node_seconds,
                        int64_t discount_bp);

/* ---- accrual ---------------------------------------------------------------
 *
 * What a running attempt has used since its last closed charge period is
 * not in the ledger yet (rows close at each period, as ever); reports and
 * budgets count it as accrued.  It is priced from the meter's progress
 * (store_ledger.h): the rule, price, nodes and discount of the current
 * period, seconds charged as each unit starts (no minimum: it has not
 * ended), in pieces split at each UTC hour so that a day or a range
 * splits it by time like a ledger row. */
#define TW_ACCRUAL_SPLIT_MS 3600000LL

struct tw_store_meter_progress;
typedef void (*tw_meter_accrual_fn)(void *ctx, const struct tw_ledger_row *r);
/* Calls fn with each piece of what p has accrued up to now_ms (none when
 * now_ms is not past where it was metered to). */
void tw_meter_accrue(const struct tw_store_meter_progress *p, int64_t now_ms,
                     tw_meter_accrual_fn fn, void *ctx);

/* ---- the meter -------------------------------------------------------------
 */

/* Lists the providers' current offers into out (appending); failures are
 * the callee's to log.  Called from the meter's thread. */
struct tw_offer_list;
typedef void (*tw_meter_offers_fn)(void *ctx, struct tw_offer_list *out);

struct tw_meter_opts {
  struct tw_store *store;         /* borrowed; outlives the meter */
  const struct tw_meter_cfg *cfg; /* copied; NULL: defaults */
  struct tw_clock *clock;         /* borrowed; NULL: the real clock */
  tw_meter_offers_fn offers;      /* NULL: launch prices only */
  void *offers_ctx;
  int64_t tick_ms;             /* pass interval; default 1000 */
  int64_t offers_ttl_ms;       /* offers listed again after; 300000 */
  struct tw_spec_cache *specs; /* borrowed: parsed job specs (the
                                  scheduler's); NULL: parsed when read */
  /* The adapter registry (providers/registry.h), borrowed: each
   * provider's published rule (struct tw_provider_billing) by adapter
   * name.  NULL: only the offers' granularity and minimum. */
  const struct tw_provider_ops *const *adapters;
};

/* The rule an attempt is charged under: the adapter's published rule
 * (info, may be NULL), the offer's granularity and minimum over it (when
 * offer_gran_s > 0: the catalog applies a private cluster's configured
 * rule there), then the configured rate's (rate may be NULL). */
struct tw_provider_info;
void tw_bill_rule_resolve(const struct tw_provider_info *info,
                          int64_t offer_gran_s, int64_t offer_min_s,
                          const struct tw_meter_rate *rate,
                          struct tw_bill_rule *out);

/* Migrates the ledger and meter tables, stores the configured budgets and
 * loads the progress of attempts still open.  *out: tw_meter_free. */
enum tw_rc tw_meter_new(const struct tw_meter_opts *opts, struct tw_meter **out,
                        struct tw_err *err);
/* Runs tw_meter_tick every tick_ms on a thread until tw_meter_free. */
enum tw_rc tw_meter_start(struct tw_meter *m, struct tw_err *err);
/* Stops the thread (if started) and frees m.  NULL is a no-op. */
void tw_meter_free(struct tw_meter *m);

/* Swaps in a new configuration (SIGHUP): rates and discounts apply to the
 * periods closed from now on; budgets are stored again.  The charge period
 * is kept (changing it under open attempts would split periods oddly). */
enum tw_rc tw_meter_set_cfg(struct tw_meter *m, const struct tw_meter_cfg *cfg,
                            struct tw_err *err);

/* One pass: the live attempts as the store has them (the attempts its
 * changes name read again, or all of them, above), the offers (listed
 * again when older than offers_ttl_ms), then tw_meter_observe at the
 * clock's now.  Tests call it with a fake clock instead of starting the
 * thread; one thread at a time. */
void tw_meter_tick(struct tw_meter *m);

/* The pass itself, on given lists: live holds the attempts not ended when
 * the pass began, offers the offers as last listed.  Errors are logged;
 * the work is retried on the next call. */
void tw_meter_observe(struct tw_meter *m, const struct tw_attempt_rec *live,
                      size_t n_live, const struct tw_offer *offers,
                      size_t n_offers, int64_t now_ms);

/* Data moved out of a region for a job (datasets, checkpoints, outputs):
 * one Usage row, ServiceCategory Networking.  price_uusd_per_gb 0 takes
 * the provider's configured egress rate (0 when none: a row at zero cost
 * still records the bytes). */
struct tw_meter_egress {
  const char *tenant, *project, *job_id; /* job_id may be "" */
  int64_t attempt_id;
  const char *provider, *account; /* where the data left */
  const char *region, *dest_region;
  int64_t bytes;
  int64_t price_uusd_per_gb;
  int64_t at_ms;
};
enum tw_rc tw_meter_egress(struct tw_meter *m, const struct tw_meter_egress *e,
                           struct tw_ledger_row *out, struct tw_err *err);

struct tw_meter_stats {
  uint64_t rows;     /* ledger rows written */
  uint64_t attempts; /* attempts metered to their end */
  uint64_t open;     /* attempts being metered now */
  uint64_t errors;
};
void tw_meter_stats(struct tw_meter *m, struct tw_meter_stats *out);

#endif
