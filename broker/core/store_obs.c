/* store_obs.c - the SQL of jobs' trace contexts (store_obs.h). */
#include "broker/core/store_obs.h"

#include <stdio.h>
#include <string.h>

#include "broker/core/store_int.h"

/* The job row's column (module "trace" migration 2, store_schema.c), set
 * by the job's insert (store.c); NULL for a job stored without one. */
static const char SQL_TRACE_GET[] =
    "SELECT traceparent FROM jobs WHERE id = ?1 AND traceparent IS NOT NULL";

struct get_arg {
  const char *id;
  char *out;
  size_t outsz;
};

static enum tw_rc op_get(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct get_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_TRACE_GET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->id, -1);
  int r = tw_db_step(st);
  enum tw_rc rc = TW_OK;
  if (r == TW_DB_ROW)
    store__col(st, 0, a->out, a->outsz);
  else if (r == TW_DB_DONE)
    rc = tw_err_set(err, TW_E_NOTFOUND, "job %s has no trace", a->id);
  else
    rc = store__db_err(db, err, "job trace");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_job_trace(struct tw_store *s, const char *job_id,
                              char *out, size_t outsz, struct tw_err *err) {
  if (outsz)
    out[0] = '\0';
  struct get_arg a = {.id = job_id, .out = out, .outsz = outsz};
  return tw_store_read(s, op_get, &a, err);
}

/* One statement for both: a tenant with pending jobs or live attempts.
 * attempts_live (state, id) serves the attempts' side. */
static const char SQL_TENANT_GAUGES[] =
    "SELECT tenant, SUM(pending), MIN(oldest), SUM(live), SUM(spend) FROM ("
    " SELECT tenant, COUNT(*) AS pending, MIN(created_at_ms) AS oldest,"
    "  0 AS live, 0 AS spend FROM jobs WHERE state = 'pending' GROUP BY tenant"
    " UNION ALL"
    " SELECT j.tenant, 0, NULL, COUNT(*), SUM(a.price_uusd_per_hour)"
    "  FROM attempts a JOIN jobs j ON j.id = a.job_id"
    "  WHERE a.state IN ('launching', 'provisioning', 'running')"
    "  GROUP BY j.tenant) AS g"
    " GROUP BY tenant ORDER BY tenant";

struct gauge_arg {
  void (*fn)(void *ctx, const struct tw_tenant_gauge *g);
  void *ctx;
};

static enum tw_rc op_gauges(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct gauge_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_TENANT_GAUGES, err);
  if (!st)
    return TW_E_IO;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    const unsigned char *t = tw_db_column_text(st, 0);
    struct tw_tenant_gauge g = {
        .tenant = t ? (const char *)t : "",
        .pending = tw_db_column_int64(st, 1),
        .oldest_pending_ms = tw_db_column_int64(st, 2),
        .live_attempts = tw_db_column_int64(st, 3),
        .spend_uusd_per_hour = tw_db_column_int64(st, 4)};
    a->fn(a->ctx, &g);
  }
  enum tw_rc rc =
      r == TW_DB_DONE ? TW_OK : store__db_err(db, err, "tenant gauges");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_tenant_gauges(struct tw_store *s,
                                  void (*fn)(void *ctx,
                                             const struct tw_tenant_gauge *g),
                                  void *ctx, struct tw_err *err) {
  struct gauge_arg a = {.fn = fn, .ctx = ctx};
  return tw_store_read(s, op_gauges, &a, err);
}
