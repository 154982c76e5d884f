/* store_catalog.c - the SQL of the catalog's snapshots and spot price
 * history (store_catalog.h). */
#include "broker/core/store_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_PUT[] =
    "INSERT INTO catalog_snapshots (source, kind, mode, provider, account,"
    " path, sha256, currency, rate, rate_date, fetched_ms, stored_ms, rows,"
    " normalized, offers, report_json, body)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
    " ?15, ?16, ?17)";
static const char SQL_PRICE[] =
    "INSERT INTO catalog_prices (offer_id, price_uusd, observed_ms, snapshot)"
    " VALUES (?1, ?2, ?3, ?4)";
/* Only the newest `keep` snapshots of a source keep their offers; the
 * rows themselves (source, time, hash, counts) stay as the record. */
static const char SQL_PRUNE[] =
    "UPDATE catalog_snapshots SET body = NULL WHERE source = ?1 AND"
    " body IS NOT NULL AND id NOT IN (SELECT id FROM catalog_snapshots"
    " WHERE source = ?1 ORDER BY id DESC LIMIT ?2)";
static const char SQL_LATEST[] =
    "SELECT id, kind, mode, provider, account, path, sha256, currency, rate,"
    " rate_date, fetched_ms, report_json, body FROM catalog_snapshots"
    " WHERE source = ?1 AND body IS NOT NULL ORDER BY id DESC LIMIT 1";
static const char SQL_HISTORY[] =
    "SELECT price_uusd, observed_ms, snapshot FROM catalog_prices"
    " WHERE offer_id = ?1 ORDER BY observed_ms DESC, snapshot DESC LIMIT ?2";

/* "catalog store: <what>: <sqlite's message>", as the catalog said. */
static enum tw_rc fail(struct tw_db *db, const char *what, struct tw_err *err) {
  return tw_err_set(err, TW_E_IO, "catalog store: %s: %s", what,
                    tw_db_errmsg(db));
}

struct put_arg {
  const struct tw_store_cat_put *p;
  int64_t id;
};

static enum tw_rc op_put(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct put_arg *a = varg;
  const struct tw_store_cat_put *p = a->p;
  struct tw_db_stmt *q = tw_store_stmt(s, db, SQL_PUT, err);
  if (!q)
    return TW_E_IO;
  store__bind_text(q, 1, p->source);
  store__bind_text(q, 2, p->kind);
  store__bind_text(q, 3, p->mode);
  store__bind_text(q, 4, p->provider);
  store__bind_text(q, 5, p->account);
  store__bind_text(q, 6, p->path);
  store__bind_text(q, 7, p->sha256);
  store__bind_text(q, 8, p->currency);
  store__bind_text(q, 9, p->rate);
  store__bind_text(q, 10, p->rate_date);
  tw_db_bind_int64(q, 11, p->fetched_ms);
  tw_db_bind_int64(q, 12, p->stored_ms);
  tw_db_bind_int64(q, 13, p->rows);
  tw_db_bind_int64(q, 14, p->normalized);
  tw_db_bind_int64(q, 15, p->offers);
  store__bind_text(q, 16, p->report_json);
  tw_db_bind_blob(q, 17, p->body ? p->body : "", p->body_len);
  int r = tw_db_step(q);
  tw_db_reset(q);
  if (r != TW_DB_DONE)
    return fail(db, "insert snapshot", err);
  a->id = tw_db_last_insert_id(db);

  struct tw_db_stmt *pq = tw_store_stmt(s, db, SQL_PRICE, err);
  if (!pq)
    return TW_E_IO;
  for (size_t i = 0; i < p->n_prices; i++) {
    const struct tw_store_cat_price *x = &p->prices[i];
    tw_db_bind_text(pq, 1, x->offer_id, -1);
    tw_db_bind_int64(pq, 2, x->price_uusd_per_hour);
    tw_db_bind_int64(pq, 3, x->observed_ms);
    tw_db_bind_int64(pq, 4, a->id);
    r = tw_db_step(pq);
    tw_db_reset(pq);
    tw_db_clear_bindings(pq);
    if (r != TW_DB_DONE)
      return fail(db, "insert price", err);
  }

  struct tw_db_stmt *pr = tw_store_stmt(s, db, SQL_PRUNE, err);
  if (!pr)
    return TW_E_IO;
  store__bind_text(pr, 1, p->source);
  tw_db_bind_int(pr, 2, p->keep);
  r = tw_db_step(pr);
  tw_db_reset(pr);
  if (r != TW_DB_DONE)
    return fail(db, "prune snapshots", err);
  return TW_OK;
}

enum tw_rc tw_store_catalog_put(struct tw_store *s,
                                const struct tw_store_cat_put *p, int64_t *id,
                                struct tw_err *err) {
  struct put_arg a = {.p = p};
  enum tw_rc rc = tw_store_write(s, op_put, &a, err);
  if (rc == TW_OK)
    *id = a.id;
  return rc;
}

void tw_store_cat_latest_release(struct tw_store_cat_latest *l) {
  if (!l)
    return;
  free(l->report_json);
  free(l->body);
  memset(l, 0, sizeof *l);
}

struct latest_arg {
  const char *source;
  struct tw_store_cat_latest *out;
  bool found;
};

static enum tw_rc op_latest(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct latest_arg *a = varg;
  struct tw_db_stmt *q = tw_store_stmt(s, db, SQL_LATEST, err);
  if (!q)
    return TW_E_IO;
  store__bind_text(q, 1, a->source);
  int r = tw_db_step(q);
  if (r == TW_DB_ROW) {
    struct tw_store_cat_latest *l = a->out;
    memset(l, 0, sizeof *l);
    l->id = tw_db_column_int64(q, 0);
    store__col(q, 1, l->kind, sizeof l->kind);
    store__col(q, 2, l->mode, sizeof l->mode);
    store__col(q, 3, l->provider, sizeof l->provider);
    store__col(q, 4, l->account, sizeof l->account);
    store__col(q, 5, l->path, sizeof l->path);
    store__col(q, 6, l->sha256, sizeof l->sha256);
    store__col(q, 7, l->currency, sizeof l->currency);
    store__col(q, 8, l->rate, sizeof l->rate);
    store__col(q, 9, l->rate_date, sizeof l->rate_date);
    l->fetched_ms = tw_db_column_int64(q, 10);
    const unsigned char *rj = tw_db_column_text(q, 11);
    l->report_json = tw_strdup(rj ? (const char *)rj : "{}");
    const void *blob = tw_db_column_blob(q, 12);
    l->body_len = (size_t)tw_db_column_bytes(q, 12);
    l->body = tw_malloc(l->body_len + 1);
    if (l->body_len)
      memcpy(l->body, blob, l->body_len);
    l->body[l->body_len] = '\0';
    a->found = true;
  }
  tw_db_reset(q);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return fail(db, "read snapshot", err);
  return TW_OK;
}

enum tw_rc tw_store_catalog_latest(struct tw_store *s, const char *source,
                                   struct tw_store_cat_latest *out, bool *found,
                                   struct tw_err *err) {
  struct latest_arg a = {.source = source, .out = out};
  enum tw_rc rc = tw_store_read(s, op_latest, &a, err);
  if (rc && a.found)
    tw_store_cat_latest_release(out);
  *found = rc == TW_OK && a.found;
  return rc;
}

struct history_arg {
  const char *id;
  size_t max;
  struct tw_store_cat_point *pts;
  size_t n;
};

static enum tw_rc op_history(struct tw_store *s, struct tw_db *db, void *varg,
                             struct tw_err *err) {
  struct history_arg *a = varg;
  struct tw_db_stmt *q = tw_store_stmt(s, db, SQL_HISTORY, err);
  if (!q)
    return TW_E_IO;
  store__bind_text(q, 1, a->id);
  tw_db_bind_int64(q, 2, (int64_t)a->max);
  int r;
  a->pts = tw_calloc(a->max ? a->max : 1, sizeof *a->pts);
  while ((r = tw_db_step(q)) == TW_DB_ROW && a->n < a->max) {
    a->pts[a->n].price_uusd_per_hour = tw_db_column_int64(q, 0);
    a->pts[a->n].observed_ms = tw_db_column_int64(q, 1);
    a->pts[a->n].snapshot = tw_db_column_int64(q, 2);
    a->n++;
  }
  tw_db_reset(q);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return fail(db, "read price history", err);
  return TW_OK;
}

enum tw_rc tw_store_catalog_history(struct tw_store *s, const char *offer_id,
                                    size_t max, struct tw_store_cat_point **out,
                                    size_t *n, struct tw_err *err) {
  struct history_arg a = {.id = offer_id, .max = max};
  enum tw_rc rc = tw_store_read(s, op_history, &a, err);
  if (rc) {
    free(a.pts);
    *out = NULL;
    *n = 0;
    return rc;
  }
  *out = a.pts;
  *n = a.n;
  return TW_OK;
}
