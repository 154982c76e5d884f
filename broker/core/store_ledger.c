/* store_ledger.c - the SQL of the ledger and the meter's progress
 * (store_ledger.h). */
#include "broker/core/store_ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

/* ---- append ----------------------------------------------------------------
 */

static const char SQL_INSERT[] =
    "INSERT INTO ledger (recorded_ms, start_ms, end_ms, day, category,"
    " correction, service, tenant, project, job_id, attempt_id, provider,"
    " account, region, zone, instance_type, resource_id, market, nodes,"
    " usage_ms, quantity, unit_price_uusd, list_uusd, effective_uusd,"
    " corrects_seq, description, discount_bp, commitment, source_currency,"
    " source_effective_micro)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
    " ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28,"
    " ?29, ?30)";

static const char SQL_ROLLUP_DAY[] =
    "INSERT INTO ledger_day (day, tenant, project, provider, region,"
    " list_uusd, effective_uusd, usage_ms, rows, source_effective_micro,"
    " source_rows)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?10)"
    " ON CONFLICT (day, tenant, project, provider, region) DO UPDATE SET"
    " list_uusd = ledger_day.list_uusd + excluded.list_uusd,"
    " effective_uusd = ledger_day.effective_uusd + excluded.effective_uusd,"
    " usage_ms = ledger_day.usage_ms + excluded.usage_ms,"
    " rows = ledger_day.rows + 1,"
    " source_effective_micro = ledger_day.source_effective_micro"
    " + excluded.source_effective_micro,"
    " source_rows = ledger_day.source_rows + excluded.source_rows";

static const char SQL_ROLLUP_JOB[] =
    "INSERT INTO ledger_job_day (job_id, day, provider, region, tenant,"
    " project, list_uusd, effective_uusd, usage_ms, rows,"
    " source_effective_micro, source_rows)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?11)"
    " ON CONFLICT (day, job_id, tenant, project, provider, region) DO UPDATE "
    "SET"
    " list_uusd = ledger_job_day.list_uusd + excluded.list_uusd,"
    " effective_uusd = ledger_job_day.effective_uusd + excluded.effective_uusd,"
    " usage_ms = ledger_job_day.usage_ms + excluded.usage_ms,"
    " rows = ledger_job_day.rows + 1,"
    " source_effective_micro = ledger_job_day.source_effective_micro"
    " + excluded.source_effective_micro,"
    " source_rows = ledger_job_day.source_rows + excluded.source_rows";

static const char SQL_ROLLUP_MARKET[] =
    "INSERT INTO ledger_market_day (day, tenant, project, market, list_uusd,"
    " effective_uusd, usage_ms, rows) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)"
    " ON CONFLICT (day, tenant, project, market) DO UPDATE SET"
    " list_uusd = ledger_market_day.list_uusd + excluded.list_uusd,"
    " effective_uusd = ledger_market_day.effective_uusd"
    " + excluded.effective_uusd,"
    " usage_ms = ledger_market_day.usage_ms + excluded.usage_ms,"
    " rows = ledger_market_day.rows + 1";

/* "ledger: <what>: <sqlite's message>", as the ledger always said. */
static enum tw_rc fail(struct tw_db *db, const char *what, struct tw_err *err) {
  return tw_err_set(err, TW_E_IO, "ledger: %s: %s", what, tw_db_errmsg(db));
}

static enum tw_rc step_done(struct tw_db *db, struct tw_db_stmt *st, const char *what,
                            struct tw_err *err) {
  return tw_db_step(st) == TW_DB_DONE ? TW_OK : fail(db, what, err);
}

static enum tw_rc insert_one(struct tw_store *s, struct tw_db *db,
                             struct tw_ledger_row *r, int64_t now_ms,
                             struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_INSERT, err);
  if (!st)
    return TW_E_IO;
  if (!r->recorded_ms)
    r->recorded_ms = now_ms;
  int64_t day = tw_ledger_day(r->start_ms);
  tw_db_bind_int64(st, 1, r->recorded_ms);
  tw_db_bind_int64(st, 2, r->start_ms);
  tw_db_bind_int64(st, 3, r->end_ms);
  tw_db_bind_int64(st, 4, day);
  tw_db_bind_int(st, 5, (int)r->category);
  tw_db_bind_int(st, 6, r->correction ? 1 : 0);
  tw_db_bind_int(st, 7, (int)r->service);
  store__bind_text(st, 8, r->tenant);
  store__bind_text(st, 9, r->project);
  store__bind_text(st, 10, r->job_id);
  tw_db_bind_int64(st, 11, r->attempt_id);
  store__bind_text(st, 12, r->provider);
  store__bind_text(st, 13, r->account);
  store__bind_text(st, 14, r->region);
  store__bind_text(st, 15, r->zone);
  store__bind_text(st, 16, r->instance_type);
  store__bind_text(st, 17, r->resource_id);
  store__bind_text(st, 18, r->market);
  tw_db_bind_int(st, 19, r->nodes);
  tw_db_bind_int64(st, 20, r->usage_ms);
  tw_db_bind_int64(st, 21, r->quantity);
  tw_db_bind_int64(st, 22, r->unit_price_uusd);
  tw_db_bind_int64(st, 23, r->list_uusd);
  tw_db_bind_int64(st, 24, r->effective_uusd);
  tw_db_bind_int64(st, 25, r->corrects_seq);
  store__bind_text(st, 26, r->description);
  tw_db_bind_int64(st, 27, r->discount_bp);
  tw_db_bind_int(st, 28, r->commitment ? 1 : 0);
  store__bind_text(st, 29, r->source_currency);
  tw_db_bind_int64(st, 30, r->source_effective_micro);
  enum tw_rc rc = step_done(db, st, "insert", err);
  if (rc)
    return rc;
  r->seq = tw_db_last_insert_id(db);

  if (!(st = tw_store_stmt(s, db, SQL_ROLLUP_DAY, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, day);
  store__bind_text(st, 2, r->tenant);
  store__bind_text(st, 3, r->project);
  store__bind_text(st, 4, r->provider);
  store__bind_text(st, 5, r->region);
  tw_db_bind_int64(st, 6, r->list_uusd);
  tw_db_bind_int64(st, 7, r->effective_uusd);
  tw_db_bind_int64(st, 8, r->usage_ms);
  tw_db_bind_int64(st, 9, r->source_effective_micro);
  tw_db_bind_int(st, 10, r->source_currency[0] != '\0');
  if ((rc = step_done(db, st, "day rollup", err)))
    return rc;
  if (!(st = tw_store_stmt(s, db, SQL_ROLLUP_MARKET, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, day);
  store__bind_text(st, 2, r->tenant);
  store__bind_text(st, 3, r->project);
  store__bind_text(st, 4, r->market);
  tw_db_bind_int64(st, 5, r->list_uusd);
  tw_db_bind_int64(st, 6, r->effective_uusd);
  tw_db_bind_int64(st, 7, r->usage_ms);
  if ((rc = step_done(db, st, "market rollup", err)))
    return rc;
  if (!r->job_id[0])
    return TW_OK;
  if (!(st = tw_store_stmt(s, db, SQL_ROLLUP_JOB, err)))
    return TW_E_IO;
  store__bind_text(st, 1, r->job_id);
  tw_db_bind_int64(st, 2, day);
  store__bind_text(st, 3, r->provider);
  store__bind_text(st, 4, r->region);
  store__bind_text(st, 5, r->tenant);
  store__bind_text(st, 6, r->project);
  tw_db_bind_int64(st, 7, r->list_uusd);
  tw_db_bind_int64(st, 8, r->effective_uusd);
  tw_db_bind_int64(st, 9, r->usage_ms);
  tw_db_bind_int64(st, 10, r->source_effective_micro);
  tw_db_bind_int(st, 11, r->source_currency[0] != '\0');
  return step_done(db, st, "job rollup", err);
}

struct append_arg {
  struct tw_ledger_row *rows;
  size_t n;
  int64_t now_ms;
};

static enum tw_rc append_fn(struct tw_store *s, struct tw_db *db, void *arg,
                            struct tw_err *err) {
  struct append_arg *a = arg;
  enum tw_rc rc;
  for (size_t i = 0; i < a->n; i++)
    if ((rc = insert_one(s, db, &a->rows[i], a->now_ms, err)))
      return rc;
  return TW_OK;
}

enum tw_rc tw_store_ledger_append(struct tw_store *s,
                                  struct tw_ledger_row *rows, size_t n,
                                  int64_t now_ms, struct tw_err *err) {
  if (!n)
    return TW_OK;
  struct append_arg a = {rows, n, now_ms};
  return tw_store_write(s, append_fn, &a, err);
}

/* ---- reading rows
 * ------------------------------------------------------------ */

#define ROW_COLUMNS                                                            \
  "seq, recorded_ms, start_ms, end_ms, category, correction, service,"         \
  " tenant, project, job_id, attempt_id, provider, account, region, zone,"     \
  " instance_type, resource_id, market, nodes, usage_ms, quantity,"            \
  " unit_price_uusd, list_uusd, effective_uusd, corrects_seq, description,"   \
  " discount_bp, commitment, source_currency, source_effective_micro"

static const char SQL_ROW_BY_SEQ[] =
    "SELECT " ROW_COLUMNS " FROM ledger WHERE seq = ?1";

static const char SQL_SCAN[] =
    "SELECT " ROW_COLUMNS " FROM ledger"
    " WHERE start_ms >= ?1 AND start_ms < ?2"
    " AND (?3 IS NULL OR tenant = ?3) AND (?4 IS NULL OR project = ?4)"
    " ORDER BY start_ms, seq";

static void read_row(struct tw_db_stmt *st, struct tw_ledger_row *r) {
  memset(r, 0, sizeof *r);
  r->seq = tw_db_column_int64(st, 0);
  r->recorded_ms = tw_db_column_int64(st, 1);
  r->start_ms = tw_db_column_int64(st, 2);
  r->end_ms = tw_db_column_int64(st, 3);
  r->category = tw_db_column_int(st, 4) == TW_CHARGE_ADJUSTMENT
                    ? TW_CHARGE_ADJUSTMENT
                    : TW_CHARGE_USAGE;
  r->correction = tw_db_column_int(st, 5) != 0;
  r->service = tw_db_column_int(st, 6) == TW_SERVICE_NETWORK
                   ? TW_SERVICE_NETWORK
                   : TW_SERVICE_COMPUTE;
  store__col(st, 7, r->tenant, sizeof r->tenant);
  store__col(st, 8, r->project, sizeof r->project);
  store__col(st, 9, r->job_id, sizeof r->job_id);
  r->attempt_id = tw_db_column_int64(st, 10);
  store__col(st, 11, r->provider, sizeof r->provider);
  store__col(st, 12, r->account, sizeof r->account);
  store__col(st, 13, r->region, sizeof r->region);
  store__col(st, 14, r->zone, sizeof r->zone);
  store__col(st, 15, r->instance_type, sizeof r->instance_type);
  store__col(st, 16, r->resource_id, sizeof r->resource_id);
  store__col(st, 17, r->market, sizeof r->market);
  r->nodes = tw_db_column_int(st, 18);
  r->usage_ms = tw_db_column_int64(st, 19);
  r->quantity = tw_db_column_int64(st, 20);
  r->unit_price_uusd = tw_db_column_int64(st, 21);
  r->list_uusd = tw_db_column_int64(st, 22);
  r->effective_uusd = tw_db_column_int64(st, 23);
  r->corrects_seq = tw_db_column_int64(st, 24);
  store__col(st, 25, r->description, sizeof r->description);
  r->discount_bp = tw_db_column_int64(st, 26);
  r->commitment = tw_db_column_int(st, 27) != 0;
  store__col(st, 28, r->source_currency, sizeof r->source_currency);
  r->source_effective_micro = tw_db_column_int64(st, 29);
}

struct derive_arg {
  int64_t seq, now_ms;
  tw_store_ledger_derive_fn fn;
  void *arg;
  struct tw_ledger_row of, row;
};

static enum tw_rc derive_fn(struct tw_store *s, struct tw_db *db, void *arg,
                            struct tw_err *err) {
  struct derive_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ROW_BY_SEQ, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->seq);
  int r = tw_db_step(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "ledger: no row %lld",
                      (long long)a->seq);
  if (r != TW_DB_ROW)
    return tw_err_set(err, TW_E_IO, "ledger: %s", tw_db_errmsg(db));
  read_row(st, &a->of);
  tw_db_reset(st);
  memset(&a->row, 0, sizeof a->row);
  enum tw_rc rc = a->fn(a->arg, &a->of, &a->row, err);
  return rc ? rc : insert_one(s, db, &a->row, a->now_ms, err);
}

enum tw_rc tw_store_ledger_derive(struct tw_store *s, int64_t seq,
                                  tw_store_ledger_derive_fn fn, void *arg,
                                  int64_t now_ms, struct tw_ledger_row *out,
                                  struct tw_err *err) {
  /* two rows of 1.5 kB: on the heap, not on the caller's stack */
  struct derive_arg *a = tw_calloc(1, sizeof *a);
  a->seq = seq;
  a->now_ms = now_ms;
  a->fn = fn;
  a->arg = arg;
  enum tw_rc rc = tw_store_write(s, derive_fn, a, err);
  if (rc == TW_OK && out)
    *out = a->row;
  free(a);
  return rc;
}

struct scan_arg {
  int64_t from, to;
  const struct tw_ledger_filter *f;
  tw_ledger_row_fn fn;
  void *ctx;
};

static enum tw_rc scan_fn(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  struct scan_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_SCAN, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->from);
  tw_db_bind_int64(st, 2, a->to);
  store__bind_opt(st, 3, a->f ? a->f->tenant : NULL);
  store__bind_opt(st, 4, a->f ? a->f->project : NULL);
  struct tw_ledger_row *row = tw_malloc(sizeof *row);
  enum tw_rc rc = TW_OK;
  int step;
  while ((step = tw_db_step(st)) == TW_DB_ROW) {
    read_row(st, row);
    if (a->fn(a->ctx, row))
      break;
  }
  if (step != TW_DB_ROW && step != TW_DB_DONE)
    rc = fail(db, "scan", err);
  tw_db_reset(st);
  free(row);
  return rc;
}

enum tw_rc tw_store_ledger_scan(struct tw_store *s, int64_t from_ms,
                                int64_t to_ms, const struct tw_ledger_filter *f,
                                tw_ledger_row_fn fn, void *ctx,
                                struct tw_err *err) {
  struct scan_arg a = {from_ms, to_ms, f, fn, ctx};
  return tw_store_read(s, scan_fn, &a, err);
}

/* ---- grouped sums ----------------------------------------------------------
 */

/* One statement per source; which dimensions are kept is bound (?3..?8),
 * not spliced into the text, so the SQL stays constant. */
static const char SQL_SUM_DAY[] =
    "SELECT CASE WHEN ?3 THEN tenant ELSE '' END,"
    " CASE WHEN ?4 THEN project ELSE '' END,"
    " CASE WHEN ?5 THEN provider ELSE '' END,"
    " CASE WHEN ?6 THEN region ELSE '' END,"
    " CASE WHEN ?7 THEN day ELSE -1 END, '', '',"
    " SUM(list_uusd), SUM(effective_uusd), SUM(usage_ms), SUM(rows),"
    " SUM(source_effective_micro), SUM(source_rows)"
    " FROM ledger_day WHERE day >= ?1 AND day < ?2"
    " AND (?9 IS NULL OR tenant = ?9) AND (?10 IS NULL OR project = ?10)"
    " GROUP BY 1, 2, 3, 4, 5";

/* by market: its own rollup (no provider, region or job there) */
static const char SQL_SUM_MARKET_DAY[] =
    "SELECT CASE WHEN ?3 THEN tenant ELSE '' END,"
    " CASE WHEN ?4 THEN project ELSE '' END, '', '',"
    " CASE WHEN ?7 THEN day ELSE -1 END, '', market,"
    " SUM(list_uusd), SUM(effective_uusd), SUM(usage_ms), SUM(rows), 0, 0"
    " FROM ledger_market_day WHERE day >= ?1 AND day < ?2"
    " AND (?9 IS NULL OR tenant = ?9) AND (?10 IS NULL OR project = ?10)"
    " GROUP BY 1, 2, 5, 7";

static const char SQL_SUM_JOB_DAY[] =
    "SELECT CASE WHEN ?3 THEN tenant ELSE '' END,"
    " CASE WHEN ?4 THEN project ELSE '' END,"
    " CASE WHEN ?5 THEN provider ELSE '' END,"
    " CASE WHEN ?6 THEN region ELSE '' END,"
    " CASE WHEN ?7 THEN day ELSE -1 END,"
    " CASE WHEN ?8 THEN job_id ELSE '' END, '',"
    " SUM(list_uusd), SUM(effective_uusd), SUM(usage_ms), SUM(rows),"
    " SUM(source_effective_micro), SUM(source_rows)"
    " FROM ledger_job_day WHERE day >= ?1 AND day < ?2"
    " AND (?9 IS NULL OR tenant = ?9) AND (?10 IS NULL OR project = ?10)"
    " GROUP BY 1, 2, 3, 4, 5, 6";

/* The partial days at the edges of a range: the rows themselves, each by
 * the part of its charge period inside [?1, ?2) (store_ledger.h); ?11 is
 * the start of ?1's day, so rows that began before ?1 and run into the
 * range are read too (none crosses midnight). */
#define SQL_PART(col)                                                          \
  "CASE WHEN end_ms = start_ms THEN " col " ELSE"                              \
  " (" col " * (MIN(end_ms, ?2) - start_ms)) / (end_ms - start_ms)"             \
  " - (" col " * (MAX(start_ms, ?1) - start_ms)) / (end_ms - start_ms) END"
static const char SQL_SUM_ROWS[] =
    "SELECT CASE WHEN ?3 THEN tenant ELSE '' END,"
    " CASE WHEN ?4 THEN project ELSE '' END,"
    " CASE WHEN ?5 THEN provider ELSE '' END,"
    " CASE WHEN ?6 THEN region ELSE '' END,"
    " CASE WHEN ?7 THEN day ELSE -1 END,"
    " CASE WHEN ?8 THEN job_id ELSE '' END,"
    " CASE WHEN ?12 THEN market ELSE '' END,"
    " SUM(" SQL_PART("list_uusd") "), SUM(" SQL_PART("effective_uusd") "),"
    " SUM(CASE WHEN end_ms = start_ms THEN usage_ms ELSE"
    " MIN(end_ms, ?2) - MAX(start_ms, ?1) END), COUNT(*),"
    " SUM(" SQL_PART("source_effective_micro") "),"
    " SUM(CASE WHEN source_currency <> '' THEN 1 ELSE 0 END)"
    " FROM ledger WHERE start_ms >= ?11 AND start_ms < ?2"
    " AND (CASE WHEN end_ms = start_ms THEN start_ms >= ?1"
    " ELSE end_ms > ?1 END)"
    " AND (?9 IS NULL OR tenant = ?9) AND (?10 IS NULL OR project = ?10)"
    " AND (NOT ?8 OR job_id <> '')"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7";

struct sum_arg {
  int64_t from_ms, to_ms;
  unsigned mask;
  const struct tw_ledger_filter *f;
  struct tw_ledger_group *g;
  size_t n, cap;
};

static enum tw_rc sum_query(struct tw_store *s, struct tw_db *db, const char *sql,
                            int64_t lo, int64_t hi, struct sum_arg *a,
                            struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, sql, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, lo);
  tw_db_bind_int64(st, 2, hi);
  tw_db_bind_int(st, 3, (a->mask & TW_GROUP_TENANT) != 0);
  tw_db_bind_int(st, 4, (a->mask & TW_GROUP_PROJECT) != 0);
  tw_db_bind_int(st, 5, (a->mask & TW_GROUP_PROVIDER) != 0);
  tw_db_bind_int(st, 6, (a->mask & TW_GROUP_REGION) != 0);
  tw_db_bind_int(st, 7, (a->mask & TW_GROUP_DAY) != 0);
  if (sql == SQL_SUM_JOB_DAY || sql == SQL_SUM_ROWS)
    tw_db_bind_int(st, 8, (a->mask & TW_GROUP_JOB) != 0);
  store__bind_opt(st, 9, a->f ? a->f->tenant : NULL);
  store__bind_opt(st, 10, a->f ? a->f->project : NULL);
  if (sql == SQL_SUM_ROWS) {
    tw_db_bind_int64(st, 11, tw_ledger_day(lo) * TW_DAY_MS);
    tw_db_bind_int(st, 12, (a->mask & TW_GROUP_MARKET) != 0);
  }
  int step;
  while ((step = tw_db_step(st)) == TW_DB_ROW) {
    if (tw_db_column_type(st, 7) == TW_DB_NULL)
      continue; /* an aggregate over no rows */
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 64;
      a->g = tw_realloc(a->g, a->cap * sizeof *a->g);
    }
    struct tw_ledger_group *g = &a->g[a->n++];
    memset(g, 0, sizeof *g);
    store__col(st, 0, g->tenant, sizeof g->tenant);
    store__col(st, 1, g->project, sizeof g->project);
    store__col(st, 2, g->provider, sizeof g->provider);
    store__col(st, 3, g->region, sizeof g->region);
    g->day = tw_db_column_int64(st, 4);
    store__col(st, 5, g->job_id, sizeof g->job_id);
    store__col(st, 6, g->market, sizeof g->market);
    g->list_uusd = tw_db_column_int64(st, 7);
    g->effective_uusd = tw_db_column_int64(st, 8);
    g->usage_ms = tw_db_column_int64(st, 9);
    g->rows = tw_db_column_int64(st, 10);
    g->source_effective_micro = tw_db_column_int64(st, 11);
    g->source_rows = tw_db_column_int64(st, 12);
  }
  enum tw_rc rc = TW_OK;
  if (step != TW_DB_DONE)
    rc = fail(db, "sum", err);
  tw_db_reset(st);
  return rc;
}

static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static enum tw_rc sum_fn(struct tw_store *s, struct tw_db *db, void *arg,
                         struct tw_err *err) {
  struct sum_arg *a = arg;
  /* whole days [d0, d1) from a rollup, the rest from the rows */
  int64_t d0 = -floor_div(-a->from_ms, TW_DAY_MS); /* ceil */
  int64_t d1 = floor_div(a->to_ms, TW_DAY_MS);
  const char *rollup = (a->mask & TW_GROUP_MARKET) ? SQL_SUM_MARKET_DAY
                        : (a->mask & TW_GROUP_JOB)  ? SQL_SUM_JOB_DAY
                                                    : SQL_SUM_DAY;
  enum tw_rc rc;
  if (d0 >= d1)
    return sum_query(s, db, SQL_SUM_ROWS, a->from_ms, a->to_ms, a, err);
  if ((rc = sum_query(s, db, rollup, d0, d1, a, err)))
    return rc;
  if (a->from_ms < d0 * TW_DAY_MS &&
      (rc = sum_query(s, db, SQL_SUM_ROWS, a->from_ms, d0 * TW_DAY_MS, a, err)))
    return rc;
  if (d1 * TW_DAY_MS < a->to_ms &&
      (rc = sum_query(s, db, SQL_SUM_ROWS, d1 * TW_DAY_MS, a->to_ms, a, err)))
    return rc;
  return TW_OK;
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

enum tw_rc tw_store_ledger_sum(struct tw_store *s, int64_t from_ms,
                               int64_t to_ms, unsigned mask,
                               const struct tw_ledger_filter *f,
                               struct tw_ledger_group **out, size_t *n,
                               struct tw_err *err) {
  struct sum_arg a = {.from_ms = from_ms, .to_ms = to_ms, .mask = mask, .f = f};
  *out = NULL;
  *n = 0;
  if (to_ms <= from_ms)
    return TW_OK;
  if ((mask & TW_GROUP_MARKET) &&
      (mask & (TW_GROUP_PROVIDER | TW_GROUP_REGION | TW_GROUP_JOB)))
    return tw_err_field(err, TW_E_INVALID, "group_by",
                        "group_by: market combines with tenant, project and "
                        "day only");
  enum tw_rc rc = tw_store_read(s, sum_fn, &a, err);
  if (rc) {
    free(a.g);
    return rc;
  }
  /* the edges and the rollup may hold the same group: merge */
  if (a.n > 1)
    qsort(a.g, a.n, sizeof *a.g, group_cmp);
  size_t w = 0;
  for (size_t i = 0; i < a.n; i++) {
    if (w && !group_cmp(&a.g[w - 1], &a.g[i])) {
      a.g[w - 1].list_uusd += a.g[i].list_uusd;
      a.g[w - 1].effective_uusd += a.g[i].effective_uusd;
      a.g[w - 1].usage_ms += a.g[i].usage_ms;
      a.g[w - 1].rows += a.g[i].rows;
      a.g[w - 1].source_effective_micro += a.g[i].source_effective_micro;
      a.g[w - 1].source_rows += a.g[i].source_rows;
    } else {
      if (w != i)
        a.g[w] = a.g[i];
      w++;
    }
  }
  *out = a.g;
  *n = w;
  return TW_OK;
}

static const char SQL_JOB_COST[] =
    "SELECT SUM(list_uusd), SUM(effective_uusd) FROM ledger_job_day"
    " WHERE job_id = ?1";

struct job_cost_arg {
  const char *job_id;
  int64_t list, eff;
};

static enum tw_rc job_cost_fn(struct tw_store *s, struct tw_db *db, void *arg,
                              struct tw_err *err) {
  struct job_cost_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_JOB_COST, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->job_id, -1);
  enum tw_rc rc = TW_OK;
  if (tw_db_step(st) == TW_DB_ROW) {
    a->list = tw_db_column_int64(st, 0);
    a->eff = tw_db_column_int64(st, 1);
  } else {
    rc = fail(db, "job cost", err);
  }
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_ledger_job_cost(struct tw_store *s, const char *job_id,
                                    int64_t *list_uusd, int64_t *effective_uusd,
                                    struct tw_err *err) {
  struct job_cost_arg a = {.job_id = job_id};
  enum tw_rc rc = tw_store_read(s, job_cost_fn, &a, err);
  *list_uusd = a.list;
  *effective_uusd = a.eff;
  return rc;
}

static const char SQL_COUNT[] = "SELECT COUNT(*) FROM ledger";

static enum tw_rc count_fn(struct tw_store *s, struct tw_db *db, void *arg,
                           struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_COUNT, err);
  if (!st)
    return TW_E_IO;
  enum tw_rc rc = TW_OK;
  if (tw_db_step(st) == TW_DB_ROW)
    *(int64_t *)arg = tw_db_column_int64(st, 0);
  else
    rc = fail(db, "count", err);
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_ledger_count(struct tw_store *s, int64_t *rows,
                                 struct tw_err *err) {
  *rows = 0;
  return tw_store_read(s, count_fn, rows, err);
}

/* ---- budgets
 * ----------------------------------------------------------------- */

static const char SQL_BUDGETS_CLEAR[] = "DELETE FROM ledger_budgets";
static const char SQL_BUDGET_PUT[] =
    "INSERT INTO ledger_budgets (tenant, project, limit_uusd)"
    " VALUES (?1, ?2, ?3) ON CONFLICT (tenant, project)"
    " DO UPDATE SET limit_uusd = excluded.limit_uusd";
static const char SQL_BUDGETS_GET[] =
    "SELECT tenant, project, limit_uusd FROM ledger_budgets"
    " ORDER BY tenant, project";

struct budgets_arg {
  const struct tw_ledger_budget *in;
  struct tw_ledger_budget *out;
  size_t n;
};

static enum tw_rc budgets_set_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                 struct tw_err *err) {
  struct budgets_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_BUDGETS_CLEAR, err);
  enum tw_rc rc;
  if (!st)
    return TW_E_IO;
  if ((rc = step_done(db, st, "budgets", err)))
    return rc;
  for (size_t i = 0; i < a->n; i++) {
    if (!(st = tw_store_stmt(s, db, SQL_BUDGET_PUT, err)))
      return TW_E_IO;
    store__bind_text(st, 1, a->in[i].tenant);
    store__bind_text(st, 2, a->in[i].project);
    tw_db_bind_int64(st, 3, a->in[i].limit_uusd);
    if ((rc = step_done(db, st, "budgets", err)))
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_store_ledger_budgets_set(struct tw_store *s,
                                       const struct tw_ledger_budget *budgets,
                                       size_t n, struct tw_err *err) {
  struct budgets_arg a = {.in = budgets, .n = n};
  return tw_store_write(s, budgets_set_fn, &a, err);
}

static enum tw_rc budgets_get_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                 struct tw_err *err) {
  struct budgets_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_BUDGETS_GET, err);
  if (!st)
    return TW_E_IO;
  size_t cap = 0;
  int step;
  while ((step = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == cap) {
      cap = cap ? cap * 2 : 8;
      a->out = tw_realloc(a->out, cap * sizeof *a->out);
    }
    struct tw_ledger_budget *b = &a->out[a->n++];
    memset(b, 0, sizeof *b);
    store__col(st, 0, b->tenant, sizeof b->tenant);
    store__col(st, 1, b->project, sizeof b->project);
    b->limit_uusd = tw_db_column_int64(st, 2);
  }
  enum tw_rc rc = TW_OK;
  if (step != TW_DB_DONE)
    rc = fail(db, "budgets", err);
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_ledger_budgets_get(struct tw_store *s,
                                       struct tw_ledger_budget **out, size_t *n,
                                       struct tw_err *err) {
  struct budgets_arg a = {0};
  enum tw_rc rc = tw_store_read(s, budgets_get_fn, &a, err);
  if (rc) {
    free(a.out);
    a.out = NULL;
    a.n = 0;
  }
  *out = a.out;
  *n = a.n;
  return rc;
}

/* ---- accounts
 * ---------------------------------------------------------------- */

static const char SQL_ACCOUNTS_CLEAR[] = "DELETE FROM ledger_accounts";
static const char SQL_ACCOUNT_PUT[] =
    "INSERT INTO ledger_accounts (account, account_id,"
    " account_name, account_type, commitment_id, commitment_name,"
    " commitment_type, commitment_category)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (account) DO UPDATE"
    " SET account_id = excluded.account_id,"
    " account_name = excluded.account_name,"
    " account_type = excluded.account_type,"
    " commitment_id = excluded.commitment_id,"
    " commitment_name = excluded.commitment_name,"
    " commitment_type = excluded.commitment_type,"
    " commitment_category = excluded.commitment_category";
static const char SQL_ACCOUNTS_GET[] =
    "SELECT account, account_id, account_name, account_type, commitment_id,"
    " commitment_name, commitment_type, commitment_category"
    " FROM ledger_accounts ORDER BY account";

struct accounts_arg {
  const struct tw_ledger_account *in;
  struct tw_ledger_account *out;
  size_t n, cap;
};

static enum tw_rc accounts_set_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                  struct tw_err *err) {
  struct accounts_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ACCOUNTS_CLEAR, err);
  enum tw_rc rc;
  if (!st)
    return TW_E_IO;
  if ((rc = step_done(db, st, "accounts", err)))
    return rc;
  for (size_t i = 0; i < a->n; i++) {
    const struct tw_ledger_account *x = &a->in[i];
    if (!(st = tw_store_stmt(s, db, SQL_ACCOUNT_PUT, err)))
      return TW_E_IO;
    store__bind_text(st, 1, x->account);
    store__bind_text(st, 2, x->account_id);
    store__bind_text(st, 3, x->account_name);
    store__bind_text(st, 4, x->account_type);
    store__bind_text(st, 5, x->commitment_id);
    store__bind_text(st, 6, x->commitment_name);
    store__bind_text(st, 7, x->commitment_type);
    store__bind_text(st, 8, x->commitment_category);
    if ((rc = step_done(db, st, "accounts", err)))
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_store_ledger_accounts_set(struct tw_store *s,
                                        const struct tw_ledger_account *in,
                                        size_t n, struct tw_err *err) {
  struct accounts_arg a = {.in = in, .n = n};
  return tw_store_write(s, accounts_set_fn, &a, err);
}

static enum tw_rc accounts_get_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                  struct tw_err *err) {
  struct accounts_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ACCOUNTS_GET, err);
  if (!st)
    return TW_E_IO;
  int step;
  while ((step = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 8;
      a->out = tw_realloc(a->out, a->cap * sizeof *a->out);
    }
    struct tw_ledger_account *x = &a->out[a->n++];
    memset(x, 0, sizeof *x);
    store__col(st, 0, x->account, sizeof x->account);
    store__col(st, 1, x->account_id, sizeof x->account_id);
    store__col(st, 2, x->account_name, sizeof x->account_name);
    store__col(st, 3, x->account_type, sizeof x->account_type);
    store__col(st, 4, x->commitment_id, sizeof x->commitment_id);
    store__col(st, 5, x->commitment_name, sizeof x->commitment_name);
    store__col(st, 6, x->commitment_type, sizeof x->commitment_type);
    store__col(st, 7, x->commitment_category, sizeof x->commitment_category);
  }
  enum tw_rc rc = step == TW_DB_DONE ? TW_OK : fail(db, "accounts", err);
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_ledger_accounts_get(struct tw_store *s,
                                        struct tw_ledger_account **out,
                                        size_t *n, struct tw_err *err) {
  struct accounts_arg a = {0};
  enum tw_rc rc = tw_store_read(s, accounts_get_fn, &a, err);
  if (rc) {
    free(a.out);
    a.out = NULL;
    a.n = 0;
  }
  *out = a.out;
  *n = a.n;
  return rc;
}

/* ---- the meter's progress
 * ------------------------------------------------------ */

static const char SQL_METER_PUT[] =
    "INSERT INTO meter_attempts (attempt_id, job_id, tenant,"
    " project, provider, account, region, zone, instance_type, market,"
    " resource_id, nodes, granularity_s, min_charge_s, price_uusd_per_hour,"
    " running_ms, metered_to_ms, billed_s, last_seq, ended, discount_bp)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
    " ?15, ?16, ?17, ?18, ?19, ?20, ?21)"
    " ON CONFLICT (attempt_id) DO UPDATE SET job_id = excluded.job_id,"
    " tenant = excluded.tenant, project = excluded.project,"
    " provider = excluded.provider, account = excluded.account,"
    " region = excluded.region, zone = excluded.zone,"
    " instance_type = excluded.instance_type, market = excluded.market,"
    " resource_id = excluded.resource_id, nodes = excluded.nodes,"
    " granularity_s = excluded.granularity_s,"
    " min_charge_s = excluded.min_charge_s,"
    " price_uusd_per_hour = excluded.price_uusd_per_hour,"
    " running_ms = excluded.running_ms,"
    " metered_to_ms = excluded.metered_to_ms, billed_s = excluded.billed_s,"
    " last_seq = excluded.last_seq, ended = excluded.ended,"
    " discount_bp = excluded.discount_bp";

static const char SQL_METER_OPEN[] =
    "SELECT attempt_id, job_id, tenant, project, provider, account, region,"
    " zone, instance_type, market, resource_id, nodes, granularity_s,"
    " min_charge_s, price_uusd_per_hour, running_ms, metered_to_ms, billed_s,"
    " last_seq, discount_bp FROM meter_attempts WHERE ended = 0"
    " ORDER BY attempt_id";

struct meter_open_arg {
  struct tw_store_meter_progress *items;
  size_t n, cap;
  /* scan: each row handed to fn instead of kept */
  tw_store_meter_fn fn;
  void *ctx;
};

static enum tw_rc meter_open_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                struct tw_err *err) {
  struct meter_open_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_METER_OPEN, err);
  if (!st)
    return TW_E_IO;
  int step;
  struct tw_store_meter_progress one;
  while ((step = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_store_meter_progress *x = &one;
    if (!a->fn) {
      if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
      }
      x = &a->items[a->n++];
    }
    memset(x, 0, sizeof *x);
    x->attempt_id = tw_db_column_int64(st, 0);
    store__col(st, 1, x->job_id, sizeof x->job_id);
    store__col(st, 2, x->tenant, sizeof x->tenant);
    store__col(st, 3, x->project, sizeof x->project);
    store__col(st, 4, x->provider, sizeof x->provider);
    store__col(st, 5, x->account, sizeof x->account);
    store__col(st, 6, x->region, sizeof x->region);
    store__col(st, 7, x->zone, sizeof x->zone);
    store__col(st, 8, x->instance_type, sizeof x->instance_type);
    store__col(st, 9, x->market, sizeof x->market);
    store__col(st, 10, x->resource_id, sizeof x->resource_id);
    x->nodes = tw_db_column_int(st, 11);
    x->granularity_s = tw_db_column_int64(st, 12);
    x->min_charge_s = tw_db_column_int64(st, 13);
    x->price_uusd_per_hour = tw_db_column_int64(st, 14);
    x->running_ms = tw_db_column_int64(st, 15);
    x->metered_to_ms = tw_db_column_int64(st, 16);
    x->billed_s = tw_db_column_int64(st, 17);
    x->last_seq = tw_db_column_int64(st, 18);
    x->discount_bp = tw_db_column_int64(st, 19);
    if (a->fn)
      a->fn(a->ctx, x);
  }
  enum tw_rc rc = TW_OK;
  if (step != TW_DB_DONE)
    rc = tw_err_set(err, TW_E_IO, "meter: load: %s", tw_db_errmsg(db));
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_meter_open(struct tw_store *s,
                               struct tw_store_meter_progress **out, size_t *n,
                               struct tw_err *err) {
  struct meter_open_arg a = {0};
  enum tw_rc rc = tw_store_read(s, meter_open_fn, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

enum tw_rc tw_store_meter_scan_open(struct tw_store *s, tw_store_meter_fn fn,
                                    void *ctx, struct tw_err *err) {
  struct meter_open_arg a = {.fn = fn, .ctx = ctx};
  return tw_store_read(s, meter_open_fn, &a, err);
}

static enum tw_rc meter_put(struct tw_store *s, struct tw_db *db,
                            const struct tw_store_meter_progress *p,
                            struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_METER_PUT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, p->attempt_id);
  store__bind_text(st, 2, p->job_id);
  store__bind_text(st, 3, p->tenant);
  store__bind_text(st, 4, p->project);
  store__bind_text(st, 5, p->provider);
  store__bind_text(st, 6, p->account);
  store__bind_text(st, 7, p->region);
  store__bind_text(st, 8, p->zone);
  store__bind_text(st, 9, p->instance_type);
  store__bind_text(st, 10, p->market);
  store__bind_text(st, 11, p->resource_id);
  tw_db_bind_int(st, 12, p->nodes);
  tw_db_bind_int64(st, 13, p->granularity_s);
  tw_db_bind_int64(st, 14, p->min_charge_s);
  tw_db_bind_int64(st, 15, p->price_uusd_per_hour);
  tw_db_bind_int64(st, 16, p->running_ms);
  tw_db_bind_int64(st, 17, p->metered_to_ms);
  tw_db_bind_int64(st, 18, p->billed_s);
  tw_db_bind_int64(st, 19, p->last_seq);
  tw_db_bind_int(st, 20, p->ended ? 1 : 0);
  tw_db_bind_int64(st, 21, p->discount_bp);
  if (tw_db_step(st) != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "meter: progress: %s", tw_db_errmsg(db));
  return TW_OK;
}

struct meter_commit_arg {
  struct tw_store_meter_work *w;
  size_t n;
  int64_t now_ms;
};

static enum tw_rc meter_commit_fn(struct tw_store *s, struct tw_db *db, void *arg,
                                  struct tw_err *err) {
  struct meter_commit_arg *a = arg;
  enum tw_rc rc;
  for (size_t i = 0; i < a->n; i++) {
    struct tw_store_meter_work *w = &a->w[i];
    struct tw_store_meter_progress *p = w->progress;
    for (size_t k = 0; k < w->n_rows; k++) {
      struct tw_ledger_row *r = &w->rows[k];
      if (r->category == TW_CHARGE_ADJUSTMENT)
        r->corrects_seq = p->last_seq;
      if ((rc = insert_one(s, db, r, a->now_ms, err)))
        return rc;
      if (r->category == TW_CHARGE_USAGE && r->list_uusd)
        p->last_seq = r->seq;
    }
    if ((rc = meter_put(s, db, p, err)))
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_store_meter_commit(struct tw_store *s,
                                 struct tw_store_meter_work *works, size_t n,
                                 int64_t now_ms, struct tw_err *err) {
  if (!n)
    return TW_OK;
  struct meter_commit_arg a = {works, n, now_ms};
  return tw_store_write(s, meter_commit_fn, &a, err);
}
