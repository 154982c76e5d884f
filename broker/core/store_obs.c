/* store_obs.c - the SQL of jobs' trace contexts (store_obs.h). */
#include "broker/core/store_obs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
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

/* ---- /metrics' reading, kept for max_age_ms ------------------------------ */

static const char SQL_JOB_STATES[] =
    "SELECT state, count(*) FROM jobs GROUP BY state";

struct store_gauges {
  pthread_mutex_t mu;
  bool valid;
  struct tw_store_gauges last; /* under mu */
};

struct store_gauges *store__gauges_new(void) {
  struct store_gauges *g = tw_calloc(1, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  return g;
}

void store__gauges_free(struct store_gauges *g) {
  if (!g)
    return;
  tw_store_gauges_release(&g->last);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

void tw_store_gauges_release(struct tw_store_gauges *g) {
  for (size_t i = 0; i < g->n_tenants; i++)
    free((char *)g->tenants[i].tenant);
  free(g->tenants);
  memset(g, 0, sizeof *g);
}

static void copy_gauges(struct tw_store_gauges *dst,
                        const struct tw_store_gauges *src) {
  *dst = *src;
  dst->tenants = src->n_tenants
                     ? tw_calloc(src->n_tenants, sizeof *dst->tenants)
                     : NULL;
  for (size_t i = 0; i < src->n_tenants; i++) {
    dst->tenants[i] = src->tenants[i];
    dst->tenants[i].tenant = tw_strdup(src->tenants[i].tenant);
  }
}

static void on_tenant(void *ctx, const struct tw_tenant_gauge *t) {
  struct tw_store_gauges *g = ctx;
  if ((g->n_tenants & (g->n_tenants - 1)) == 0) /* 0, 1, 2, 4, ... */
    g->tenants = tw_realloc(g->tenants, (g->n_tenants ? g->n_tenants * 2 : 1) *
                                            sizeof *g->tenants);
  g->tenants[g->n_tenants] = *t;
  g->tenants[g->n_tenants++].tenant = tw_strdup(t->tenant);
}

static enum tw_rc op_read_gauges(struct tw_store *s, struct tw_db *db,
                                 void *varg, struct tw_err *err) {
  struct tw_store_gauges *g = varg;
  struct gauge_arg a = {.fn = on_tenant, .ctx = g};
  enum tw_rc rc = op_gauges(s, db, &a, err);
  if (rc != TW_OK)
    return rc;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_JOB_STATES, err);
  if (!st)
    return TW_E_IO;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    enum tw_job_state js;
    const char *name = (const char *)tw_db_column_text(st, 0);
    if (name && tw_job_state_parse(name, &js))
      g->jobs[js] = tw_db_column_int64(st, 1);
  }
  rc = r == TW_DB_DONE ? TW_OK : store__db_err(db, err, "count jobs");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_gauges(struct tw_store *s, int64_t max_age_ms,
                           struct tw_store_gauges *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct store_gauges *c = store__gauges(s);
  int64_t now = store__now_ms(s);
  /* held while reading: scrapes that miss together read once */
  pthread_mutex_lock(&c->mu);
  enum tw_rc rc = TW_OK;
  if (!c->valid || now < c->last.read_ms ||
      now - c->last.read_ms >= max_age_ms) {
    struct tw_store_gauges fresh = {.read_ms = now};
    rc = tw_store_read(s, op_read_gauges, &fresh, err);
    if (rc == TW_OK) {
      tw_store_gauges_release(&c->last);
      c->last = fresh;
      c->valid = true;
    } else
      tw_store_gauges_release(&fresh);
  }
  if (rc == TW_OK)
    copy_gauges(out, &c->last);
  pthread_mutex_unlock(&c->mu);
  return rc;
}
