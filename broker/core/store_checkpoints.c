/* store_checkpoints.c - the SQL of the spot lifecycle's records
 * (store_checkpoints.h). */
#include "broker/core/store_checkpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_REQ_ADD[] =
    "INSERT OR IGNORE INTO spot_requests (attempt_id, job_id, cause,"
    " requested_at_ms, deadline_ms) VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_REQ_GET[] =
    "SELECT job_id, cause, requested_at_ms, deadline_ms FROM spot_requests"
    " WHERE attempt_id = ?1";
static const char SQL_PROG_ADD[] =
    "INSERT OR IGNORE INTO spot_progress (attempt_id, job_id, attempt_n,"
    " resume_s, run_s, kept_s, how, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
    "?8)";
static const char SQL_PROG_LAST[] =
    "SELECT kept_s FROM spot_progress WHERE job_id = ?1"
    " ORDER BY attempt_n DESC LIMIT 1";
static const char SQL_DEC_LAST[] = "SELECT reason FROM spot_decisions WHERE "
                                   "job_id = ?1 ORDER BY seq DESC LIMIT 1";
static const char SQL_DEC_ADD[] =
    "INSERT INTO spot_decisions (job_id, at_ms, event, strategy, action, "
    "market,"
    " reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_DEC_OF[] =
    "SELECT at_ms, job_id, event, strategy, action, market, reason"
    " FROM spot_decisions WHERE job_id = ?1 ORDER BY seq";

static enum tw_rc step_done(struct tw_db *db, struct tw_db_stmt *st,
                            const char *what, struct tw_err *err) {
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "checkpoint: %s: %s", what,
                      tw_db_errmsg(db));
  return TW_OK;
}

static void col_copy(char *dst, size_t n, struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

/* ---- requests -------------------------------------------------------------
 */

static enum tw_rc op_req_add(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  const struct tw_ckpt_request *r = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_REQ_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, r->attempt_id);
  tw_db_bind_text(st, 2, r->job_id, -1);
  tw_db_bind_text(st, 3, r->cause, -1);
  tw_db_bind_int64(st, 4, r->requested_ms);
  tw_db_bind_int64(st, 5, r->deadline_ms);
  return step_done(db, st, "add request", err);
}

enum tw_rc tw_store_ckpt_request_put(struct tw_store *s,
                                     const struct tw_ckpt_request *r,
                                     struct tw_err *err) {
  return tw_store_write(s, op_req_add, (void *)r, err);
}

struct req_get {
  int64_t id;
  bool *found;
  struct tw_ckpt_request *out;
  char *cause;
  char job[32];
};

static enum tw_rc op_req_get(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  struct req_get *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_REQ_GET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  int r = tw_db_step(st);
  *a->found = r == TW_DB_ROW;
  if (r == TW_DB_ROW) {
    col_copy(a->job, sizeof a->job, st, 0);
    col_copy(a->cause, 16, st, 1);
    a->out->attempt_id = a->id;
    a->out->requested_ms = tw_db_column_int64(st, 2);
    a->out->deadline_ms = tw_db_column_int64(st, 3);
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "checkpoint: read request: %s",
                      tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_ckpt_request_get(struct tw_store *s, int64_t attempt_id,
                                     bool *found, struct tw_ckpt_request *out,
                                     char cause[16], struct tw_err *err) {
  struct req_get a = {
      .id = attempt_id, .found = found, .out = out, .cause = cause};
  memset(out, 0, sizeof *out);
  cause[0] = '\0';
  enum tw_rc rc = tw_store_read(s, op_req_get, &a, err);
  out->job_id = NULL; /* the job is known to the caller */
  out->cause = cause;
  return rc;
}

/* ---- progress -------------------------------------------------------------
 */

static enum tw_rc op_prog_add(struct tw_store *s, struct tw_db *db, void *arg,
                              struct tw_err *err) {
  const struct tw_ckpt_outcome *o = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_PROG_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, o->attempt_id);
  tw_db_bind_text(st, 2, o->job_id, -1);
  tw_db_bind_int(st, 3, o->attempt_n);
  tw_db_bind_int64(st, 4, o->resume_s);
  tw_db_bind_int64(st, 5, o->run_s);
  tw_db_bind_int64(st, 6, o->kept_s);
  tw_db_bind_text(st, 7, o->how ? o->how : "", -1);
  tw_db_bind_int64(st, 8, o->at_ms);
  return step_done(db, st, "add progress", err);
}

enum tw_rc tw_store_ckpt_outcome_put(struct tw_store *s,
                                     const struct tw_ckpt_outcome *o,
                                     struct tw_err *err) {
  return tw_store_write(s, op_prog_add, (void *)o, err);
}

struct prog_get {
  const char *job;
  int64_t *kept;
};

static enum tw_rc op_prog_last(struct tw_store *s, struct tw_db *db,
                               void *arg, struct tw_err *err) {
  struct prog_get *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_PROG_LAST, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->job, -1);
  int r = tw_db_step(st);
  *a->kept = r == TW_DB_ROW ? tw_db_column_int64(st, 0) : 0;
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "checkpoint: read progress: %s",
                      tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_ckpt_progress(struct tw_store *s, const char *job_id,
                                  int64_t *kept_s, struct tw_err *err) {
  struct prog_get a = {.job = job_id, .kept = kept_s};
  return tw_store_read(s, op_prog_last, &a, err);
}

/* ---- decisions ------------------------------------------------------------
 */

struct dec_add {
  const struct tw_ckpt_decision *d;
  bool added;
};

static enum tw_rc op_dec_add(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  struct dec_add *a = arg;
  const struct tw_ckpt_decision *d = a->d;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_DEC_LAST, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, d->job_id, -1);
  bool same = false;
  if (tw_db_step(st) == TW_DB_ROW) {
    const unsigned char *t = tw_db_column_text(st, 0);
    same = t && !strcmp((const char *)t, d->reason);
  }
  tw_db_reset(st);
  a->added = false;
  if (same)
    return TW_OK;
  if (!(st = tw_store_stmt(s, db, SQL_DEC_ADD, err)))
    return TW_E_IO;
  tw_db_bind_text(st, 1, d->job_id, -1);
  tw_db_bind_int64(st, 2, d->at_ms);
  tw_db_bind_text(st, 3, d->event, -1);
  tw_db_bind_text(st, 4, d->strategy, -1);
  tw_db_bind_text(st, 5, d->action, -1);
  tw_db_bind_text(st, 6, d->market, -1);
  tw_db_bind_text(st, 7, d->reason, -1);
  enum tw_rc rc = step_done(db, st, "add decision", err);
  a->added = rc == TW_OK;
  return rc;
}

enum tw_rc tw_store_ckpt_decision_add(struct tw_store *s,
                                      const struct tw_ckpt_decision *d,
                                      bool *added, struct tw_err *err) {
  struct dec_add a = {.d = d};
  enum tw_rc rc = tw_store_write(s, op_dec_add, &a, err);
  if (added)
    *added = rc == TW_OK && a.added;
  return rc;
}

enum tw_rc tw_store_ckpt_decision_add_op(struct tw_store *s, struct tw_db *db,
                                         void *arg, struct tw_err *err) {
  struct tw_store_decision_add *o = arg;
  struct dec_add a = {.d = o->d};
  enum tw_rc rc = op_dec_add(s, db, &a, err);
  o->added = rc == TW_OK && a.added;
  return rc;
}

struct dec_of {
  const char *job;
  struct tw_ckpt_decision *items;
  size_t n, cap;
};

static enum tw_rc op_dec_of(struct tw_store *s, struct tw_db *db, void *arg,
                            struct tw_err *err) {
  struct dec_of *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_DEC_OF, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->job, -1);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 8;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_ckpt_decision *d = &a->items[a->n++];
    memset(d, 0, sizeof *d);
    d->at_ms = tw_db_column_int64(st, 0);
    col_copy(d->job_id, sizeof d->job_id, st, 1);
    col_copy(d->event, sizeof d->event, st, 2);
    col_copy(d->strategy, sizeof d->strategy, st, 3);
    col_copy(d->action, sizeof d->action, st, 4);
    col_copy(d->market, sizeof d->market, st, 5);
    col_copy(d->reason, sizeof d->reason, st, 6);
  }
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "checkpoint: read decisions: %s",
                      tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_ckpt_decisions_of(struct tw_store *s, const char *job_id,
                                      struct tw_ckpt_decision **out, size_t *n,
                                      struct tw_err *err) {
  struct dec_of a = {.job = job_id};
  enum tw_rc rc = tw_store_read(s, op_dec_of, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}
