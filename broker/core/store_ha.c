/* store_ha.c - the leader lease and the replicas (store_ha.h). */
#include "broker/core/store_ha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/db.h"
#include "broker/core/store_int.h"

/* Renewal when holder holds it at epoch (> 0), a takeover when it has
 * expired: the epoch goes up by one, in the same statement that decides,
 * so two replicas can never take the same epoch. */
static const char SQL_LEASE_TRY[] =
    "UPDATE ha_lease SET"
    " epoch = CASE WHEN holder = ?1 AND epoch = ?2 AND ?2 > 0 THEN epoch"
    "   ELSE epoch + 1 END,"
    " takeovers = CASE WHEN holder = ?1 AND epoch = ?2 AND ?2 > 0"
    "   THEN takeovers ELSE takeovers + 1 END,"
    " acquired_ms = CASE WHEN holder = ?1 AND epoch = ?2 AND ?2 > 0"
    "   THEN acquired_ms ELSE ?3 END,"
    " holder = ?1, renewed_ms = ?3, expires_ms = ?4"
    " WHERE id = 1 AND ((holder = ?1 AND epoch = ?2 AND ?2 > 0)"
    " OR expires_ms <= ?3)";
static const char SQL_LEASE_RELEASE[] =
    "UPDATE ha_lease SET expires_ms = 0 WHERE id = 1 AND holder = ?1"
    " AND epoch = ?2";
static const char SQL_LEASE_GET[] =
    "SELECT holder, epoch, acquired_ms, renewed_ms, expires_ms, takeovers"
    " FROM ha_lease WHERE id = 1";
static const char SQL_REPLICA_PUT[] =
    "INSERT INTO ha_replicas (name, url, started_ms, seen_ms, epoch)"
    " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE SET"
    " url = excluded.url, started_ms = excluded.started_ms,"
    " seen_ms = excluded.seen_ms, epoch = excluded.epoch";
static const char SQL_REPLICAS[] =
    "SELECT name, url, started_ms, seen_ms, epoch FROM ha_replicas"
    " ORDER BY name";

static enum tw_rc read_lease(struct tw_store *s, struct tw_db *db,
                             struct tw_lease *out, struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LEASE_GET, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    store__col(st, 0, out->holder, sizeof out->holder);
    out->epoch = tw_db_column_int64(st, 1);
    out->acquired_ms = tw_db_column_int64(st, 2);
    out->renewed_ms = tw_db_column_int64(st, 3);
    out->expires_ms = tw_db_column_int64(st, 4);
    out->takeovers = tw_db_column_int64(st, 5);
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW)
    return store__db_err(db, err, "read the lease");
  return TW_OK;
}

struct try_arg {
  const char *holder;
  int64_t epoch, now, until;
  struct tw_lease *out;
};

static enum tw_rc op_try(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct try_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LEASE_TRY, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->holder);
  tw_db_bind_int64(st, 2, a->epoch);
  tw_db_bind_int64(st, 3, a->now);
  tw_db_bind_int64(st, 4, a->until);
  enum tw_rc rc = store__step_done(db, st, "take the lease", err);
  if (rc)
    return rc;
  bool changed = tw_db_changes(db) == 1;
  if ((rc = read_lease(s, db, a->out, err)))
    return rc;
  a->out->mine = changed && !strcmp(a->out->holder, a->holder);
  return TW_OK;
}

enum tw_rc tw_store_lease_try(struct tw_store *s, const char *holder,
                              int64_t epoch, int64_t now_ms, int64_t lease_ms,
                              struct tw_lease *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!holder || !*holder)
    return tw_err_set(err, TW_E_INVALID, "lease: empty holder");
  struct try_arg a = {.holder = holder,
                      .epoch = epoch,
                      .now = now_ms,
                      .until = now_ms + lease_ms,
                      .out = out};
  return tw_store_write(s, op_try, &a, err);
}

struct rel_arg {
  const char *holder;
  int64_t epoch;
};

static enum tw_rc op_release(struct tw_store *s, struct tw_db *db, void *varg,
                             struct tw_err *err) {
  struct rel_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LEASE_RELEASE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->holder);
  tw_db_bind_int64(st, 2, a->epoch);
  return store__step_done(db, st, "release the lease", err);
}

enum tw_rc tw_store_lease_release(struct tw_store *s, const char *holder,
                                  int64_t epoch, struct tw_err *err) {
  struct rel_arg a = {.holder = holder, .epoch = epoch};
  return tw_store_write(s, op_release, &a, err);
}

static enum tw_rc op_read(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  return read_lease(s, db, arg, err);
}

enum tw_rc tw_store_lease_read(struct tw_store *s, struct tw_lease *out,
                               struct tw_err *err) {
  memset(out, 0, sizeof *out);
  return tw_store_read(s, op_read, out, err);
}

static enum tw_rc op_beat(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  const struct tw_replica *r = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_REPLICA_PUT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, r->name);
  store__bind_text(st, 2, r->url);
  tw_db_bind_int64(st, 3, r->started_ms);
  tw_db_bind_int64(st, 4, r->seen_ms);
  tw_db_bind_int64(st, 5, r->epoch);
  return store__step_done(db, st, "record the replica", err);
}

enum tw_rc tw_store_replica_beat(struct tw_store *s,
                                 const struct tw_replica *r,
                                 struct tw_err *err) {
  return tw_store_write(s, op_beat, (void *)r, err);
}

struct list_arg {
  struct tw_replica *items;
  size_t n, cap;
};

static enum tw_rc op_list(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct list_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_REPLICAS, err);
  if (!st)
    return TW_E_IO;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 8;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_replica *x = &a->items[a->n++];
    memset(x, 0, sizeof *x);
    store__col(st, 0, x->name, sizeof x->name);
    store__col(st, 1, x->url, sizeof x->url);
    x->started_ms = tw_db_column_int64(st, 2);
    x->seen_ms = tw_db_column_int64(st, 3);
    x->epoch = tw_db_column_int64(st, 4);
  }
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return store__db_err(db, err, "list the replicas");
  return TW_OK;
}

enum tw_rc tw_store_replicas(struct tw_store *s, struct tw_replica **out,
                             size_t *n, struct tw_err *err) {
  struct list_arg a = {0};
  enum tw_rc rc = tw_store_read(s, op_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}
