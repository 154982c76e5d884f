/* catalog_store.c - the catalog's tables in the store: versioned source
 * snapshots and spot price history.  All SQL of the catalog is here. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "billing/catalog/catalog_int.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"

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
    " WHERE offer_id = ?1 ORDER BY observed_ms DESC, rowid DESC LIMIT ?2";

static enum tw_rc db_fail(sqlite3 *db, const char *what, struct tw_err *err) {
  return tw_err_set(err, TW_E_IO, "catalog store: %s: %s", what,
                    sqlite3_errmsg(db));
}

static char *report_json(const struct tw_cat_report *r) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b,
                "{\"rows\":%" PRIu64 ",\"normalized\":%" PRIu64
                ",\"offers\":%" PRIu64 ",\"rejected\":{",
                r->rows, r->normalized, r->offers);
  bool first = true;
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++)
    if (r->rejected[i]) {
      tw_buf_printf(&b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_reject_str((enum tw_cat_reject)i), r->rejected[i]);
      first = false;
    }
  tw_buf_adds(&b, "},\"notes\":{");
  first = true;
  for (int i = 0; i < TW_CAT_NOTE_COUNT; i++)
    if (r->notes[i]) {
      tw_buf_printf(&b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_note_str((enum tw_cat_note)i), r->notes[i]);
      first = false;
    }
  tw_buf_adds(&b, "}}");
  return tw_buf_detach(&b);
}

static void report_parse(const char *text, struct tw_cat_report *r) {
  memset(r, 0, sizeof *r);
  json_t *j = json_loads(text, 0, NULL);
  if (!j)
    return;
  r->rows = (uint64_t)json_integer_value(json_object_get(j, "rows"));
  r->normalized =
      (uint64_t)json_integer_value(json_object_get(j, "normalized"));
  r->offers = (uint64_t)json_integer_value(json_object_get(j, "offers"));
  json_t *rej = json_object_get(j, "rejected"),
         *notes = json_object_get(j, "notes");
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++)
    r->rejected[i] = (uint64_t)json_integer_value(
        json_object_get(rej, tw_cat_reject_str((enum tw_cat_reject)i)));
  for (int i = 0; i < TW_CAT_NOTE_COUNT; i++)
    r->notes[i] = (uint64_t)json_integer_value(
        json_object_get(notes, tw_cat_note_str((enum tw_cat_note)i)));
  json_decref(j);
}

struct put_arg {
  const struct tw_cat_snap *s, *prev;
  const struct tw_buf *body;
  const char *report;
  int keep;
  int64_t now_ms;
  int64_t version;
};

static enum tw_rc op_put(struct tw_store *st, sqlite3 *db, void *varg,
                         struct tw_err *err) {
  struct put_arg *a = varg;
  const struct tw_cat_source_info *si = &a->s->srcs[0];
  sqlite3_stmt *q = tw_store_stmt(st, db, SQL_PUT, err);
  if (!q)
    return TW_E_IO;
  sqlite3_bind_text(q, 1, si->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, si->kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 3, tw_cat_mode_str(si->mode), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, si->provider, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 5, si->account, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 6, si->path, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 7, si->sha256, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 8, si->rate.currency, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 9, si->rate.text, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 10, si->rate.date, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 11, si->fetched_ms);
  sqlite3_bind_int64(q, 12, a->now_ms);
  sqlite3_bind_int64(q, 13, (sqlite3_int64)si->report.rows);
  sqlite3_bind_int64(q, 14, (sqlite3_int64)si->report.normalized);
  sqlite3_bind_int64(q, 15, (sqlite3_int64)a->s->n_offers);
  sqlite3_bind_text(q, 16, a->report, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(q, 17, a->body->data ? a->body->data : "", a->body->len,
                      SQLITE_STATIC);
  int r = sqlite3_step(q);
  sqlite3_reset(q);
  if (r != SQLITE_DONE)
    return db_fail(db, "insert snapshot", err);
  a->version = sqlite3_last_insert_rowid(db);

  /* spot prices that are new or changed since the previous table */
  sqlite3_stmt *p = tw_store_stmt(st, db, SQL_PRICE, err);
  if (!p)
    return TW_E_IO;
  for (size_t i = 0; i < a->s->n_offers; i++) {
    const struct tw_cat_offer *o = &a->s->offers[i];
    if (o->market != TW_MARKET_SPOT)
      continue;
    if (a->prev) {
      int64_t k = tw_cat_snap_find_key(a->prev, o->key, o->market);
      if (k >= 0 && a->prev->offers[k].price_uusd == o->price_uusd)
        continue;
    }
    char id[TW_MODEL_ID_MAX];
    if (!tw_cat_snap_offer_id(a->s, i, id, sizeof id))
      continue;
    sqlite3_bind_text(p, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(p, 2, o->price_uusd);
    sqlite3_bind_int64(p, 3, o->observed_ms ? o->observed_ms : si->fetched_ms);
    sqlite3_bind_int64(p, 4, a->version);
    r = sqlite3_step(p);
    sqlite3_reset(p);
    sqlite3_clear_bindings(p);
    if (r != SQLITE_DONE)
      return db_fail(db, "insert price", err);
  }

  sqlite3_stmt *pr = tw_store_stmt(st, db, SQL_PRUNE, err);
  if (!pr)
    return TW_E_IO;
  sqlite3_bind_text(pr, 1, si->name, -1, SQLITE_STATIC);
  sqlite3_bind_int(pr, 2, a->keep);
  r = sqlite3_step(pr);
  sqlite3_reset(pr);
  if (r != SQLITE_DONE)
    return db_fail(db, "prune snapshots", err);
  return TW_OK;
}

enum tw_rc tw_cat_store_put(struct tw_store *st, const struct tw_cat_snap *s,
                            const struct tw_cat_snap *prev, int keep,
                            int64_t *version, struct tw_err *err) {
  if (!s->n_srcs)
    return tw_err_set(err, TW_E_INTERNAL, "catalog store: table has no source");
  struct tw_buf body;
  tw_buf_init(&body);
  tw_cat_snap_write_csv(s, &body);
  char *rep = report_json(&s->srcs[0].report);
  struct put_arg a = {.s = s,
                      .prev = prev,
                      .body = &body,
                      .report = rep,
                      .keep = keep > 0 ? keep : 2,
                      .now_ms = s->built_ms};
  enum tw_rc rc = tw_store_write(st, op_put, &a, err);
  free(rep);
  tw_buf_release(&body);
  if (rc == TW_OK)
    *version = a.version;
  return rc;
}

struct latest_arg {
  const char *name;
  struct tw_cat_source_info info;
  char *body;
  size_t len;
  bool found;
};

static void col_copy(sqlite3_stmt *q, int i, char *out, size_t outsz) {
  const unsigned char *t = sqlite3_column_text(q, i);
  snprintf(out, outsz, "%s", t ? (const char *)t : "");
}

static enum tw_rc op_latest(struct tw_store *st, sqlite3 *db, void *varg,
                            struct tw_err *err) {
  struct latest_arg *a = varg;
  sqlite3_stmt *q = tw_store_stmt(st, db, SQL_LATEST, err);
  if (!q)
    return TW_E_IO;
  sqlite3_bind_text(q, 1, a->name, -1, SQLITE_STATIC);
  int r = sqlite3_step(q);
  if (r == SQLITE_ROW) {
    struct tw_cat_source_info *si = &a->info;
    char mode[16];
    si->version = sqlite3_column_int64(q, 0);
    col_copy(q, 1, si->kind, sizeof si->kind);
    col_copy(q, 2, mode, sizeof mode);
    si->mode = !strcmp(mode, "override")  ? TW_CAT_OVERRIDE
               : !strcmp(mode, "adapter") ? TW_CAT_ADAPTER
                                          : TW_CAT_SEED;
    col_copy(q, 3, si->provider, sizeof si->provider);
    col_copy(q, 4, si->account, sizeof si->account);
    col_copy(q, 5, si->path, sizeof si->path);
    col_copy(q, 6, si->sha256, sizeof si->sha256);
    col_copy(q, 7, si->rate.currency, sizeof si->rate.currency);
    col_copy(q, 8, si->rate.text, sizeof si->rate.text);
    col_copy(q, 9, si->rate.date, sizeof si->rate.date);
    tw_norm_decimal_nano(si->rate.text, strlen(si->rate.text),
                         &si->rate.nusd_per_unit, NULL);
    si->fetched_ms = sqlite3_column_int64(q, 10);
    const unsigned char *rj = sqlite3_column_text(q, 11);
    report_parse(rj ? (const char *)rj : "{}", &si->report);
    const void *blob = sqlite3_column_blob(q, 12);
    a->len = (size_t)sqlite3_column_bytes(q, 12);
    a->body = tw_malloc(a->len + 1);
    if (a->len)
      memcpy(a->body, blob, a->len);
    a->body[a->len] = '\0';
    a->found = true;
  }
  sqlite3_reset(q);
  if (r != SQLITE_ROW && r != SQLITE_DONE)
    return db_fail(db, "read snapshot", err);
  return TW_OK;
}

enum tw_rc tw_cat_store_latest(struct tw_store *st, const char *name,
                               const struct tw_regions *regions,
                               struct tw_cat_snap **out, struct tw_err *err) {
  struct latest_arg a;
  memset(&a, 0, sizeof a);
  a.name = name;
  *out = NULL;
  enum tw_rc rc = tw_store_read(st, op_latest, &a, err);
  if (rc || !a.found) {
    free(a.body);
    return rc;
  }
  snprintf(a.info.name, sizeof a.info.name, "%s", name);
  rc = tw_cat_snap_read_csv(a.body, a.len, &a.info, regions, out, err);
  free(a.body);
  return rc;
}

struct history_arg {
  const char *id;
  size_t max;
  struct tw_cat_price_point *pts;
  size_t n;
};

static enum tw_rc op_history(struct tw_store *st, sqlite3 *db, void *varg,
                             struct tw_err *err) {
  struct history_arg *a = varg;
  sqlite3_stmt *q = tw_store_stmt(st, db, SQL_HISTORY, err);
  if (!q)
    return TW_E_IO;
  sqlite3_bind_text(q, 1, a->id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, (sqlite3_int64)a->max);
  int r;
  a->pts = tw_calloc(a->max ? a->max : 1, sizeof *a->pts);
  while ((r = sqlite3_step(q)) == SQLITE_ROW && a->n < a->max) {
    a->pts[a->n].price_uusd_per_hour = sqlite3_column_int64(q, 0);
    a->pts[a->n].observed_ms = sqlite3_column_int64(q, 1);
    a->pts[a->n].snapshot = sqlite3_column_int64(q, 2);
    a->n++;
  }
  sqlite3_reset(q);
  if (r != SQLITE_ROW && r != SQLITE_DONE)
    return db_fail(db, "read price history", err);
  return TW_OK;
}

enum tw_rc tw_cat_store_history(struct tw_store *st, const char *offer_id,
                                size_t max, struct tw_cat_price_point **out,
                                size_t *n, struct tw_err *err) {
  struct history_arg a = {.id = offer_id, .max = max};
  enum tw_rc rc = tw_store_read(st, op_history, &a, err);
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
