/* store_budgets.h - the tables of tenancy's money budgets (tenancy_budgets,
 * tenancy_budget_alerts) and the one query that joins a budget's live jobs
 * to what the ledger has charged them.  Plain rows in, plain rows out: the
 * tenancy module (broker/tenancy/tenancy_budget.c) validates and
 * interprets them.  Thread-safe, as the store. */
#ifndef TW_CORE_STORE_BUDGETS_H
#define TW_CORE_STORE_BUDGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/store.h"

struct tw_audit_event;

struct tw_store_budget {
  char tenant[64];
  char project[64]; /* "" for the whole tenant */
  char period[16];  /* "monthly" | "weekly" | "daily" */
  int64_t limit_uusd;
  char thresholds[96]; /* "50,80,100" */
  bool hard, stop_running;
  char webhook[512];
  int64_t version;
};

/* Budgets of tenant (NULL: any) and project (NULL: any, "": the
 * tenant-wide one), by tenant then project.  free() *out. */
enum tw_rc tw_store_budgets_get(struct tw_store *s, const char *tenant,
                                const char *project,
                                struct tw_store_budget **out, size_t *n,
                                struct tw_err *err);

/* Creates or replaces b (its version ignored) as version + 1, in one
 * transaction: TW_E_NOTFOUND when the tenant does not exist, TW_E_CONFLICT
 * when if_version > 0 and the stored version differs.  *out (may be NULL)
 * receives the stored row. */
enum tw_rc tw_store_budget_put(struct tw_store *s,
                               const struct tw_store_budget *b,
                               int64_t if_version, struct tw_store_budget *out,
                               struct tw_err *err);

/* A job of a budget's scope not yet finished. */
struct tw_store_budget_job {
  char id[40];
  int64_t created_ms;
  int64_t projected_uusd;     /* at its admission; 0 when unknown */
  int64_t charged_uusd;       /* effective cost in the ledger so far */
  int64_t burn_uusd_per_hour; /* its running attempt's price; 0 none */
};

/* The live jobs of tenant (and project, "" any), oldest first.  free()
 * *out. */
enum tw_rc tw_store_budget_live_jobs(struct tw_store *s, const char *tenant,
                                     const char *project,
                                     struct tw_store_budget_job **out,
                                     size_t *n, struct tw_err *err);

/* The highest threshold already alerted in the period starting at
 * period_start_ms (0 when none). */
enum tw_rc tw_store_budget_alerted(struct tw_store *s, const char *tenant,
                                   const char *project, int64_t period_start_ms,
                                   int *pct, struct tw_err *err);

/* Records that pct was reached (once per period and threshold) and
 * appends audit (NULL: none) at a->at_ms in the same transaction, so the
 * record and its entry land together or not at all. */
struct tw_store_budget_alert {
  const char *tenant, *project;
  int64_t period_start_ms;
  int pct;
  int64_t at_ms;
  int64_t spent_uusd;
};
enum tw_rc tw_store_budget_alert_put(struct tw_store *s,
                                     const struct tw_store_budget_alert *a,
                                     const struct tw_audit_event *audit,
                                     struct tw_err *err);

#endif
