/* store_datasets.c - the SQL of the dataset registry (store_datasets.h). */
#include "broker/core/store_datasets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_GET[] =
    "SELECT uri, size_bytes, created_ms, updated_ms, owner, shared "
    "FROM datasets WHERE uri = ?1";
static const char SQL_LOCATIONS[] =
    "SELECT location, origin, cost_uusd, created_ms, note FROM "
    "dataset_locations"
    " WHERE uri = ?1 ORDER BY created_ms, location";
/* ?3: the reader's tenant (NULL: every dataset) */
static const char SQL_LIST[] =
    "SELECT uri, size_bytes, created_ms, updated_ms, owner, shared "
    "FROM datasets WHERE uri > ?1"
    " AND (?3 IS NULL OR owner = ?3 OR shared = 1) ORDER BY uri LIMIT ?2";
static const char SQL_ALL_LOCATIONS[] =
    "SELECT uri, location, cost_uusd FROM dataset_locations ORDER BY uri, "
    "created_ms";
static const char SQL_ALL[] =
    "SELECT uri, size_bytes, owner, shared FROM datasets ORDER BY uri";
static const char SQL_VERSION[] =
    "SELECT version FROM dataset_version WHERE id = 1";
static const char SQL_BUMP[] =
    "UPDATE dataset_version SET version = version + 1 WHERE id = 1";
/* ?5: shared (0, 1), or -1 to keep it (a new one is then not shared) */
static const char SQL_INSERT[] =
    "INSERT INTO datasets (uri, size_bytes, created_ms, updated_ms, owner,"
    " shared) VALUES (?1, ?2, ?3, ?3, ?4, CASE WHEN ?5 = 1 THEN 1 ELSE 0 END)"
    " ON CONFLICT (uri) DO UPDATE SET"
    " size_bytes = CASE WHEN excluded.size_bytes > 0 THEN excluded.size_bytes"
    " ELSE datasets.size_bytes END, updated_ms = excluded.updated_ms,"
    " shared = CASE WHEN ?5 >= 0 THEN ?5 ELSE datasets.shared END";
static const char SQL_EXISTS[] = "SELECT 1 FROM datasets WHERE uri = ?1";
static const char SQL_OWNER[] = "SELECT owner FROM datasets WHERE uri = ?1";
static const char SQL_COUNT_LOC[] =
    "SELECT COUNT(*) FROM dataset_locations WHERE uri = ?1 AND location != ?2";
static const char SQL_ADD_LOC[] =
    "INSERT INTO dataset_locations (uri, location, origin, cost_uusd, "
    "created_ms, note)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (uri, location) DO NOTHING";

/* ---- reading ----------------------------------------------------------------
 */

static char *col_dup(struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  return tw_strdup(t ? (const char *)t : "");
}

static void col_copy(struct tw_db_stmt *st, int i, char *out, size_t outsz) {
  const unsigned char *t = tw_db_column_text(st, i);
  snprintf(out, outsz, "%s", t ? (const char *)t : "");
}

static enum tw_rc read_locations(struct tw_store *s, struct tw_db *db,
                                 struct tw_dataset_rec *r, struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOCATIONS, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, r->uri, -1);
  size_t cap = 0;
  int rc;
  while ((rc = tw_db_step(st)) == TW_DB_ROW) {
    if (r->n_locations == cap) {
      cap = cap ? cap * 2 : 4;
      r->locations = tw_realloc(r->locations, cap * sizeof *r->locations);
    }
    struct tw_dataset_location *l = &r->locations[r->n_locations++];
    memset(l, 0, sizeof *l);
    col_copy(st, 0, l->location, sizeof l->location);
    col_copy(st, 1, l->origin, sizeof l->origin);
    l->cost_uusd = tw_db_column_int64(st, 2);
    l->created_ms = tw_db_column_int64(st, 3);
    col_copy(st, 4, l->note, sizeof l->note);
  }
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  return TW_OK;
}

struct get_arg {
  const char *uri;
  struct tw_dataset_rec *out;
};

static enum tw_rc get_fn(struct tw_store *s, struct tw_db *db, void *arg,
                         struct tw_err *err) {
  struct get_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_GET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->uri, -1);
  int rc = tw_db_step(st);
  if (rc == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "no dataset %.200s", a->uri);
  if (rc != TW_DB_ROW)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  memset(a->out, 0, sizeof *a->out);
  a->out->uri = col_dup(st, 0);
  a->out->size_bytes = tw_db_column_int64(st, 1);
  a->out->created_ms = tw_db_column_int64(st, 2);
  a->out->updated_ms = tw_db_column_int64(st, 3);
  col_copy(st, 4, a->out->owner, sizeof a->out->owner);
  a->out->shared = tw_db_column_int(st, 5) != 0;
  tw_db_reset(st);
  enum tw_rc r = read_locations(s, db, a->out, err);
  if (r)
    tw_dataset_rec_release(a->out);
  return r;
}

enum tw_rc tw_store_dataset_get(struct tw_store *s, const char *uri,
                                struct tw_dataset_rec *out,
                                struct tw_err *err) {
  struct get_arg a = {.uri = uri, .out = out};
  return tw_store_read(s, get_fn, &a, err);
}

struct list_arg {
  const char *after;
  const char *tenant;
  int limit;
  struct tw_dataset_rec *items;
  size_t n;
  bool more;
};

static enum tw_rc list_fn(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  struct list_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LIST, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->after ? a->after : "", -1);
  tw_db_bind_int(st, 2, a->limit + 1);
  if (a->tenant)
    tw_db_bind_text(st, 3, a->tenant, -1);
  else
    tw_db_bind_null(st, 3);
  a->items = tw_calloc((size_t)a->limit + 1, sizeof *a->items);
  int rc;
  while ((rc = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == (size_t)a->limit) {
      a->more = true;
      break;
    }
    struct tw_dataset_rec *r = &a->items[a->n++];
    r->uri = col_dup(st, 0);
    r->size_bytes = tw_db_column_int64(st, 1);
    r->created_ms = tw_db_column_int64(st, 2);
    r->updated_ms = tw_db_column_int64(st, 3);
    col_copy(st, 4, r->owner, sizeof r->owner);
    r->shared = tw_db_column_int(st, 5) != 0;
  }
  tw_db_reset(st);
  if (rc != TW_DB_DONE && rc != TW_DB_ROW)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  for (size_t i = 0; i < a->n; i++) {
    enum tw_rc r = read_locations(s, db, &a->items[i], err);
    if (r)
      return r;
  }
  return TW_OK;
}

enum tw_rc tw_store_datasets_list(struct tw_store *s, const char *after,
                                  const char *tenant, int limit,
                                  struct tw_dataset_rec **out, size_t *n,
                                  bool *more, struct tw_err *err) {
  struct list_arg a = {.after = after, .tenant = tenant, .limit = limit};
  enum tw_rc rc = tw_store_read(s, list_fn, &a, err);
  if (rc) {
    for (size_t i = 0; i < a.n; i++)
      tw_dataset_rec_release(&a.items[i]);
    free(a.items);
    *out = NULL;
    *n = 0;
    *more = false;
    return rc;
  }
  *out = a.items;
  *n = a.n;
  *more = a.more;
  return TW_OK;
}

static enum tw_rc version_of(struct tw_store *s, struct tw_db *db, int64_t *v,
                             struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_VERSION, err);
  if (!st)
    return TW_E_IO;
  int rc = tw_db_step(st);
  *v = rc == TW_DB_ROW ? tw_db_column_int64(st, 0) : 0;
  tw_db_reset(st);
  if (rc != TW_DB_ROW)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  return TW_OK;
}

struct each_arg {
  tw_datasets_each_fn fn;
  void *ctx;
  int64_t version;
};

static enum tw_rc each_fn(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  struct each_arg *a = arg;
  enum tw_rc r = version_of(s, db, &a->version, err);
  if (r)
    return r;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ALL, err);
  if (!st)
    return TW_E_IO;
  int rc;
  while ((rc = tw_db_step(st)) == TW_DB_ROW)
    a->fn(a->ctx, (const char *)tw_db_column_text(st, 0),
          tw_db_column_int64(st, 1), NULL,
          (const char *)tw_db_column_text(st, 2),
          tw_db_column_int(st, 3) != 0);
  tw_db_reset(st);
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  st = tw_store_stmt(s, db, SQL_ALL_LOCATIONS, err);
  if (!st)
    return TW_E_IO;
  while ((rc = tw_db_step(st)) == TW_DB_ROW)
    a->fn(a->ctx, (const char *)tw_db_column_text(st, 0), 0,
          (const char *)tw_db_column_text(st, 1), NULL, false);
  tw_db_reset(st);
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_datasets_each(struct tw_store *s, tw_datasets_each_fn fn,
                                  void *ctx, int64_t *version,
                                  struct tw_err *err) {
  struct each_arg a = {.fn = fn, .ctx = ctx};
  enum tw_rc rc = tw_store_read(s, each_fn, &a, err);
  if (version)
    *version = a.version;
  return rc;
}

struct version_arg {
  int64_t v;
};

static enum tw_rc version_fn(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  return version_of(s, db, &((struct version_arg *)arg)->v, err);
}

enum tw_rc tw_store_datasets_version(struct tw_store *s, int64_t *version,
                                     struct tw_err *err) {
  struct version_arg a = {0};
  enum tw_rc rc = tw_store_read(s, version_fn, &a, err);
  *version = a.v;
  return rc;
}

/* ---- writing ----------------------------------------------------------------
 */

static enum tw_rc step_done(struct tw_db *db, struct tw_db_stmt *st, struct tw_err *err) {
  int rc = tw_db_step(st);
  tw_db_reset(st);
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "datasets: %s", tw_db_errmsg(db));
  return TW_OK;
}

static enum tw_rc add_location(struct tw_store *s, struct tw_db *db, const char *uri,
                               const char *loc, const char *origin,
                               int64_t cost, const char *note, int64_t now,
                               struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_COUNT_LOC, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, uri, -1);
  tw_db_bind_text(st, 2, loc, -1);
  int64_t others =
      tw_db_step(st) == TW_DB_ROW ? tw_db_column_int64(st, 0) : 0;
  tw_db_reset(st);
  if (others >= TW_DATASET_LOCATIONS)
    return tw_err_field(err, TW_E_TOOBIG, "locations",
                        "locations: a dataset has at most %d locations",
                        TW_DATASET_LOCATIONS);
  st = tw_store_stmt(s, db, SQL_ADD_LOC, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, uri, -1);
  tw_db_bind_text(st, 2, loc, -1);
  tw_db_bind_text(st, 3, origin, -1);
  tw_db_bind_int64(st, 4, cost);
  tw_db_bind_int64(st, 5, now);
  tw_db_bind_text(st, 6, note ? note : "", -1);
  return step_done(db, st, err);
}

static enum tw_rc bump(struct tw_store *s, struct tw_db *db, struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_BUMP, err);
  return st ? step_done(db, st, err) : TW_E_IO;
}

struct put_arg {
  const struct tw_store_dataset_write *w;
  const char *uri;
  int64_t size_bytes;
  const char *const *locations;
  size_t n_locations;
  int64_t now;
  bool created, skipped;
};

static enum tw_rc put_fn(struct tw_store *s, struct tw_db *db, void *arg,
                         struct tw_err *err) {
  struct put_arg *a = arg;
  const char *owner = a->w->owner && *a->w->owner ? a->w->owner : "*";
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_OWNER, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->uri, -1);
  int step = tw_db_step(st);
  a->created = step != TW_DB_ROW;
  bool other = step == TW_DB_ROW && strcmp(owner, "*") &&
               strcmp((const char *)tw_db_column_text(st, 0), owner);
  tw_db_reset(st);
  if (other) {
    if (a->w->learn) { /* what a job's spec says of another's: not taken */
      a->skipped = true;
      return TW_OK;
    }
    return tw_err_field(err, TW_E_FORBIDDEN, "uri",
                        "uri: %.200s was registered by another tenant; only "
                        "its owner changes it",
                        a->uri);
  }
  st = tw_store_stmt(s, db, SQL_INSERT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->uri, -1);
  tw_db_bind_int64(st, 2, a->size_bytes);
  tw_db_bind_int64(st, 3, a->now);
  tw_db_bind_text(st, 4, owner, -1);
  /* the operator's datasets are everybody's */
  tw_db_bind_int(st, 5, a->created && !strcmp(owner, "*") ? 1 : a->w->shared);
  enum tw_rc rc = step_done(db, st, err);
  for (size_t i = 0; !rc && i < a->n_locations; i++)
    rc = add_location(s, db, a->uri, a->locations[i], "registered", 0, NULL,
                      a->now, err);
  return rc ? rc : bump(s, db, err);
}

enum tw_rc tw_store_dataset_put(struct tw_store *s, const char *uri,
                                int64_t size_bytes,
                                const char *const *locations, size_t n,
                                const struct tw_store_dataset_write *w,
                                int64_t now_ms, bool *created,
                                struct tw_err *err) {
  static const struct tw_store_dataset_write none = {.shared = -1};
  struct put_arg a = {.w = w ? w : &none,
                      .uri = uri,
                      .size_bytes = size_bytes,
                      .locations = locations,
                      .n_locations = n,
                      .now = now_ms};
  enum tw_rc rc = tw_store_write(s, put_fn, &a, err);
  if (rc == TW_OK && created)
    *created = a.created;
  return rc;
}

struct replica_arg {
  const char *uri, *loc, *note;
  int64_t cost, now;
};

static enum tw_rc replica_fn(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  struct replica_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_EXISTS, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->uri, -1);
  bool exists = tw_db_step(st) == TW_DB_ROW;
  tw_db_reset(st);
  if (!exists)
    return tw_err_set(err, TW_E_NOTFOUND, "no dataset %.200s", a->uri);
  enum tw_rc rc = add_location(s, db, a->uri, a->loc, "replicated", a->cost,
                               a->note, a->now, err);
  return rc ? rc : bump(s, db, err);
}

enum tw_rc tw_store_dataset_add_replica(struct tw_store *s, const char *uri,
                                        const char *location, int64_t cost_uusd,
                                        const char *note, int64_t now_ms,
                                        struct tw_err *err) {
  struct replica_arg a = {.uri = uri,
                          .loc = location,
                          .note = note,
                          .cost = cost_uusd,
                          .now = now_ms};
  return tw_store_write(s, replica_fn, &a, err);
}
