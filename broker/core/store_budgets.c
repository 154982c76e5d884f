/* store_budgets.c - the SQL of tenancy's budgets (see store_budgets.h). */
#include "broker/core/store_budgets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_BUDGET_GET[] =
    "SELECT tenant, project, period, limit_uusd, thresholds, hard,"
    " stop_running, webhook, version FROM tenancy_budgets"
    " WHERE (?1 IS NULL OR tenant = ?1) AND (?2 IS NULL OR project = ?2)"
    " ORDER BY tenant, project";
static const char SQL_BUDGET_PUT[] =
    "INSERT INTO tenancy_budgets (tenant, project, period, limit_uusd,"
    " thresholds, hard, stop_running, webhook, version)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    " ON CONFLICT (tenant, project) DO UPDATE SET period = excluded.period,"
    " limit_uusd = excluded.limit_uusd, thresholds = excluded.thresholds,"
    " hard = excluded.hard, stop_running = excluded.stop_running,"
    " webhook = excluded.webhook, version = excluded.version";
static const char SQL_TENANT_EXISTS[] =
    "SELECT 1 FROM tenancy_tenants WHERE name = ?1";
/* What the ledger charged each job (its per-job rollup), and the price of
 * its running attempt: budgets read spend from the ledger only. */
static const char SQL_LIVE_JOBS[] =
    "SELECT j.id, j.created_at_ms, coalesce(t.projected_uusd, 0),"
    " (SELECT coalesce(sum(l.effective_uusd), 0) FROM ledger_job_day l"
    "  WHERE l.job_id = j.id),"
    " (SELECT coalesce(max(a.price_uusd_per_hour), 0) FROM attempts a"
    "  WHERE a.job_id = j.id AND a.running_at_ms > 0 AND a.ended_at_ms = 0)"
    " FROM jobs j LEFT JOIN tenancy_jobs t ON t.job_id = j.id"
    " WHERE j.tenant = ?1 AND (?2 = '' OR j.project = ?2)"
    " AND j.state NOT IN ('succeeded', 'failed', 'cancelled')"
    " ORDER BY j.seq";
static const char SQL_ALERTED[] =
    "SELECT coalesce(max(threshold_pct), 0) FROM tenancy_budget_alerts"
    " WHERE tenant = ?1 AND project = ?2 AND period_start_ms = ?3";
static const char SQL_ALERT_PUT[] =
    "INSERT OR IGNORE INTO tenancy_budget_alerts (tenant, project,"
    " period_start_ms, threshold_pct, at_ms, spent_uusd)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

struct budgets_arg {
  const char *tenant, *project;
  struct tw_store_budget *items;
  size_t n, cap;
  const struct tw_store_budget *put;
  int64_t if_version;
};

static enum tw_rc load(struct tw_store *s, struct tw_db *db, struct budgets_arg *a,
                       struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_BUDGET_GET, err);
  if (!st)
    return TW_E_IO;
  store__bind_opt(st, 1, a->tenant);
  store__bind_opt(st, 2, a->project);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 8;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_store_budget *b = &a->items[a->n++];
    memset(b, 0, sizeof *b);
    store__col(st, 0, b->tenant, sizeof b->tenant);
    store__col(st, 1, b->project, sizeof b->project);
    store__col(st, 2, b->period, sizeof b->period);
    b->limit_uusd = tw_db_column_int64(st, 3);
    store__col(st, 4, b->thresholds, sizeof b->thresholds);
    b->hard = tw_db_column_int(st, 5) != 0;
    b->stop_running = tw_db_column_int(st, 6) != 0;
    store__col(st, 7, b->webhook, sizeof b->webhook);
    b->version = tw_db_column_int64(st, 8);
  }
  tw_db_reset(st);
  return r == TW_DB_DONE ? TW_OK : store__db_err(db, err, "budgets");
}

static enum tw_rc op_load(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  return load(s, db, varg, err);
}

enum tw_rc tw_store_budgets_get(struct tw_store *s, const char *tenant,
                                const char *project,
                                struct tw_store_budget **out, size_t *n,
                                struct tw_err *err) {
  struct budgets_arg a = {.tenant = tenant, .project = project};
  enum tw_rc rc = tw_store_read(s, op_load, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

static enum tw_rc op_put(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct budgets_arg *a = varg;
  const struct tw_store_budget *b = a->put;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_TENANT_EXISTS, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, b->tenant, -1);
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", b->tenant);
  if (r != TW_DB_ROW)
    return store__db_err(db, err, "tenant lookup");
  struct budgets_arg cur = {.tenant = b->tenant, .project = b->project};
  enum tw_rc rc = load(s, db, &cur, err);
  int64_t version = cur.n ? cur.items[0].version : 0;
  free(cur.items);
  if (rc)
    return rc;
  if (a->if_version > 0 && a->if_version != version)
    return tw_err_set(err, TW_E_CONFLICT,
                      "the budget changed meanwhile (now version %lld,"
                      " If-Match named %lld): read it again",
                      (long long)version, (long long)a->if_version);
  if (!(st = tw_store_stmt(s, db, SQL_BUDGET_PUT, err)))
    return TW_E_IO;
  store__bind_text(st, 1, b->tenant);
  store__bind_text(st, 2, b->project);
  store__bind_text(st, 3, b->period);
  tw_db_bind_int64(st, 4, b->limit_uusd);
  store__bind_text(st, 5, b->thresholds);
  tw_db_bind_int(st, 6, b->hard);
  tw_db_bind_int(st, 7, b->stop_running);
  store__bind_text(st, 8, b->webhook);
  tw_db_bind_int64(st, 9, version + 1);
  if ((rc = store__step_done(db, st, "budget put", err)))
    return rc;
  a->tenant = b->tenant;
  a->project = b->project;
  return load(s, db, a, err);
}

enum tw_rc tw_store_budget_put(struct tw_store *s,
                               const struct tw_store_budget *b,
                               int64_t if_version, struct tw_store_budget *out,
                               struct tw_err *err) {
  struct budgets_arg a = {.put = b, .if_version = if_version};
  enum tw_rc rc = tw_store_write(s, op_put, &a, err);
  if (rc == TW_OK && a.n && out)
    *out = a.items[0];
  free(a.items);
  return rc;
}

struct live_arg {
  const char *tenant, *project;
  struct tw_store_budget_job *items;
  size_t n, cap;
};

static enum tw_rc op_live(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct live_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LIVE_JOBS, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->tenant);
  store__bind_text(st, 2, a->project);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 16;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_store_budget_job *j = &a->items[a->n++];
    memset(j, 0, sizeof *j);
    store__col(st, 0, j->id, sizeof j->id);
    j->created_ms = tw_db_column_int64(st, 1);
    j->projected_uusd = tw_db_column_int64(st, 2);
    j->charged_uusd = tw_db_column_int64(st, 3);
    j->burn_uusd_per_hour = tw_db_column_int64(st, 4);
  }
  tw_db_reset(st);
  return r == TW_DB_DONE ? TW_OK : store__db_err(db, err, "live jobs");
}

enum tw_rc tw_store_budget_live_jobs(struct tw_store *s, const char *tenant,
                                     const char *project,
                                     struct tw_store_budget_job **out,
                                     size_t *n, struct tw_err *err) {
  struct live_arg a = {.tenant = tenant, .project = project ? project : ""};
  enum tw_rc rc = tw_store_read(s, op_live, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

struct alerted_arg {
  const char *tenant, *project;
  int64_t from;
  int pct;
};

static enum tw_rc op_alerted(struct tw_store *s, struct tw_db *db, void *varg,
                             struct tw_err *err) {
  struct alerted_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ALERTED, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->tenant);
  store__bind_text(st, 2, a->project);
  tw_db_bind_int64(st, 3, a->from);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    a->pct = tw_db_column_int(st, 0);
  tw_db_reset(st);
  return r == TW_DB_ROW ? TW_OK : store__db_err(db, err, "alerts");
}

enum tw_rc tw_store_budget_alerted(struct tw_store *s, const char *tenant,
                                   const char *project, int64_t period_start_ms,
                                   int *pct, struct tw_err *err) {
  struct alerted_arg a = {
      .tenant = tenant, .project = project, .from = period_start_ms};
  enum tw_rc rc = tw_store_read(s, op_alerted, &a, err);
  *pct = a.pct;
  return rc;
}

struct alert_arg {
  const struct tw_store_budget_alert *a;
  const struct tw_audit_event *audit;
};

static enum tw_rc op_alert(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct alert_arg *x = varg;
  const struct tw_store_budget_alert *a = x->a;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ALERT_PUT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->tenant);
  store__bind_text(st, 2, a->project);
  tw_db_bind_int64(st, 3, a->period_start_ms);
  tw_db_bind_int(st, 4, a->pct);
  tw_db_bind_int64(st, 5, a->at_ms);
  tw_db_bind_int64(st, 6, a->spent_uusd);
  enum tw_rc rc = store__step_done(db, st, "alert insert", err);
  if (rc || !x->audit)
    return rc;
  return store__audit_append(s, db, x->audit, a->at_ms, NULL, err);
}

enum tw_rc tw_store_budget_alert_put(struct tw_store *s,
                                     const struct tw_store_budget_alert *a,
                                     const struct tw_audit_event *audit,
                                     struct tw_err *err) {
  struct alert_arg x = {.a = a, .audit = audit};
  return tw_store_write(s, op_alert, &x, err);
}
