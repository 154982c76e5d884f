/* store_workdirs.c - the SQL of the tasks' working directories
 * (store_workdirs.h). */
#include "broker/core/store_workdirs.h"

#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_ADD[] =
    "INSERT OR IGNORE INTO workdirs (tenant, sha256, size, data, created_ms,"
    " used_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?5)";
static const char SQL_TOUCH[] =
    "UPDATE workdirs SET used_ms = ?3 WHERE tenant = ?1 AND sha256 = ?2";
static const char SQL_SIZE[] =
    "SELECT size FROM workdirs WHERE tenant = ?1 AND sha256 = ?2";
static const char SQL_DATA[] =
    "SELECT data FROM workdirs WHERE tenant = ?1 AND sha256 = ?2";
static const char SQL_HOLD[] =
    "INSERT OR IGNORE INTO workdir_jobs (job_id, tenant, sha256)"
    " VALUES (?1, ?2, ?3)";
static const char SQL_RELEASE[] =
    "DELETE FROM workdir_jobs WHERE NOT EXISTS (SELECT 1 FROM jobs j"
    " WHERE j.id = workdir_jobs.job_id"
    " AND j.state NOT IN ('succeeded', 'failed', 'cancelled'))";
static const char SQL_SWEEP[] =
    "DELETE FROM workdirs WHERE used_ms < ?1 AND NOT EXISTS (SELECT 1 FROM"
    " workdir_jobs w WHERE w.tenant = workdirs.tenant"
    " AND w.sha256 = workdirs.sha256)";

struct put_arg {
  const char *tenant, *sha;
  const void *data;
  size_t len;
  int64_t at_ms;
  bool created;
};

static enum tw_rc touch(struct tw_store *s, struct tw_db *db,
                        const char *tenant, const char *sha, int64_t at_ms,
                        struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_TOUCH, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, tenant, -1);
  tw_db_bind_text(st, 2, sha, -1);
  tw_db_bind_int64(st, 3, at_ms);
  return store__step_done(db, st, "workdir: mark used", err);
}

static enum tw_rc op_put(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct put_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->tenant, -1);
  tw_db_bind_text(st, 2, a->sha, -1);
  tw_db_bind_int64(st, 3, (int64_t)a->len);
  tw_db_bind_blob(st, 4, a->data, a->len);
  tw_db_bind_int64(st, 5, a->at_ms);
  enum tw_rc rc = store__step_done(db, st, "workdir: add", err);
  if (rc)
    return rc;
  a->created = tw_db_changes(db) > 0;
  return a->created ? TW_OK : touch(s, db, a->tenant, a->sha, a->at_ms, err);
}

enum tw_rc tw_store_workdir_put(struct tw_store *s, const char *tenant,
                                const char *sha, const void *data, size_t len,
                                int64_t at_ms, bool *created,
                                struct tw_err *err) {
  struct put_arg a = {.tenant = tenant,
                      .sha = sha,
                      .data = data ? data : "",
                      .len = len,
                      .at_ms = at_ms};
  enum tw_rc rc = tw_store_write(s, op_put, &a, err);
  if (created)
    *created = rc == TW_OK && a.created;
  return rc;
}

struct has_arg {
  const char *tenant, *sha;
  bool found;
  int64_t size;
  struct tw_buf *out;
};

static enum tw_rc op_has(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct has_arg *a = varg;
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, a->out ? SQL_DATA : SQL_SIZE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->tenant, -1);
  tw_db_bind_text(st, 2, a->sha, -1);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    a->found = true;
    if (a->out) {
      size_t n = (size_t)tw_db_column_bytes(st, 0);
      const void *p = tw_db_column_blob(st, 0);
      if (n && p)
        tw_buf_add(a->out, p, n);
      a->size = (int64_t)n;
    } else {
      a->size = tw_db_column_int64(st, 0);
    }
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "workdir: read: %s", tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_workdir_has(struct tw_store *s, const char *tenant,
                                const char *sha, bool *found, int64_t *size,
                                struct tw_err *err) {
  struct has_arg a = {.tenant = tenant, .sha = sha};
  enum tw_rc rc = tw_store_read(s, op_has, &a, err);
  *found = rc == TW_OK && a.found;
  if (size)
    *size = a.size;
  return rc;
}

enum tw_rc tw_store_workdir_get(struct tw_store *s, const char *tenant,
                                const char *sha, struct tw_buf *out,
                                struct tw_err *err) {
  struct has_arg a = {.tenant = tenant, .sha = sha, .out = out};
  enum tw_rc rc = tw_store_read(s, op_has, &a, err);
  if (rc == TW_OK && !a.found)
    return tw_err_field(err, TW_E_NOTFOUND, "workdir",
                        "workdir: sha256:%s is not stored for tenant %s", sha,
                        tenant);
  return rc;
}

struct hold_arg {
  const char *job_id, *tenant, *sha;
  int64_t at_ms;
};

static enum tw_rc op_hold(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct hold_arg *a = varg;
  enum tw_rc rc = touch(s, db, a->tenant, a->sha, a->at_ms, err);
  if (rc)
    return rc;
  if (tw_db_changes(db) == 0)
    return tw_err_field(err, TW_E_NOTFOUND, "workdir",
                        "workdir: sha256:%s is not stored for tenant %s",
                        a->sha, a->tenant);
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_HOLD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->job_id, -1);
  tw_db_bind_text(st, 2, a->tenant, -1);
  tw_db_bind_text(st, 3, a->sha, -1);
  return store__step_done(db, st, "workdir: hold", err);
}

enum tw_rc tw_store_workdir_hold(struct tw_store *s, const char *job_id,
                                 const char *tenant, const char *sha,
                                 int64_t at_ms, struct tw_err *err) {
  struct hold_arg a = {
      .job_id = job_id, .tenant = tenant, .sha = sha, .at_ms = at_ms};
  return tw_store_write(s, op_hold, &a, err);
}

struct sweep_arg {
  int64_t before;
  int64_t removed;
};

static enum tw_rc op_sweep(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct sweep_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_RELEASE, err);
  if (!st)
    return TW_E_IO;
  enum tw_rc rc = store__step_done(db, st, "workdir: release", err);
  if (rc)
    return rc;
  if (!(st = tw_store_stmt(s, db, SQL_SWEEP, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->before);
  if ((rc = store__step_done(db, st, "workdir: sweep", err)))
    return rc;
  a->removed = tw_db_changes(db);
  return TW_OK;
}

enum tw_rc tw_store_workdir_sweep(struct tw_store *s, int64_t unused_before_ms,
                                  int64_t *removed, struct tw_err *err) {
  struct sweep_arg a = {.before = unused_before_ms};
  enum tw_rc rc = tw_store_write(s, op_sweep, &a, err);
  if (removed)
    *removed = a.removed;
  return rc;
}
