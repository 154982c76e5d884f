/* db.c - dispatches the store's database calls to the connection's
 * backend (db_sqlite.c, db_pg.c). */
#include "broker/core/db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

#include "broker/core/db_int.h"

enum tw_rc tw_db_open(const struct tw_db_opts *opts, struct tw_db **out,
                      struct tw_err *err) {
  *out = NULL;
  switch (opts->backend) {
  case TW_DB_SQLITE:
    return tw_db_sqlite_open(opts, out, err);
  case TW_DB_POSTGRES:
    return tw_db_pg_open(opts, out, err);
  }
  return tw_err_set(err, TW_E_INVALID, "store: unknown backend");
}

void tw_db_close(struct tw_db *db) {
  if (db)
    db->ops->close(db);
}
enum tw_db_backend tw_db_backend(const struct tw_db *db) { return db->backend; }
const char *tw_db_errmsg(struct tw_db *db) { return db->ops->errmsg(db); }
enum tw_db_class tw_db_errclass(struct tw_db *db) {
  return db->ops->errclass(db);
}
int tw_db_exec(struct tw_db *db, const char *sql, char **errmsg) {
  if (errmsg)
    *errmsg = NULL;
  return db->ops->exec(db, sql, errmsg);
}
void tw_db_free(void *p) { free(p); }
int tw_db_prepare(struct tw_db *db, const char *sql, struct tw_db_stmt **out) {
  *out = NULL;
  return db->ops->prepare(db, sql, out);
}
void tw_db_finalize(struct tw_db_stmt *st) {
  if (st)
    st->db->ops->finalize(st);
}
int tw_db_reset(struct tw_db_stmt *st) { return st->db->ops->reset(st); }
void tw_db_clear_bindings(struct tw_db_stmt *st) {
  st->db->ops->clear_bindings(st);
}
int tw_db_bind_int64(struct tw_db_stmt *st, int i, int64_t v) {
  return st->db->ops->bind_int64(st, i, v);
}
int tw_db_bind_int(struct tw_db_stmt *st, int i, int v) {
  return st->db->ops->bind_int64(st, i, v);
}
int tw_db_bind_text(struct tw_db_stmt *st, int i, const char *s, int n) {
  return st->db->ops->bind_text(st, i, s, n);
}
int tw_db_bind_blob(struct tw_db_stmt *st, int i, const void *p, size_t n) {
  return st->db->ops->bind_blob(st, i, p, n);
}
int tw_db_bind_null(struct tw_db_stmt *st, int i) {
  return st->db->ops->bind_null(st, i);
}

int tw_db_bind_text_array(struct tw_db_stmt *st, int i, const char *const *v,
                          size_t n) {
  size_t cap = 3;
  for (size_t k = 0; k < n; k++)
    cap += v[k] ? 2 * strlen(v[k]) + 3 : 5;
  char *b = tw_malloc(cap), *o = b;
  *o++ = '{';
  for (size_t k = 0; k < n; k++) {
    if (k)
      *o++ = ',';
    if (!v[k]) {
      memcpy(o, "NULL", 4);
      o += 4;
      continue;
    }
    *o++ = '"'; /* quoted: backslash before '"' and '\\' */
    for (const char *c = v[k]; *c; c++) {
      if (*c == '"' || *c == '\\')
        *o++ = '\\';
      *o++ = *c;
    }
    *o++ = '"';
  }
  *o++ = '}';
  int r = tw_db_bind_text(st, i, b, (int)(o - b));
  free(b);
  return r;
}

int tw_db_bind_int64_array(struct tw_db_stmt *st, int i, const int64_t *v,
                           size_t n) {
  char *b = tw_malloc(n * 21 + 3), *o = b;
  *o++ = '{';
  for (size_t k = 0; k < n; k++)
    o += sprintf(o, "%s%" PRId64, k ? "," : "", v[k]);
  *o++ = '}';
  int r = tw_db_bind_text(st, i, b, (int)(o - b));
  free(b);
  return r;
}
int tw_db_step(struct tw_db_stmt *st) { return st->db->ops->step(st); }
int64_t tw_db_column_int64(struct tw_db_stmt *st, int i) {
  return st->db->ops->column_int64(st, i);
}
int tw_db_column_int(struct tw_db_stmt *st, int i) {
  return (int)st->db->ops->column_int64(st, i);
}
const unsigned char *tw_db_column_text(struct tw_db_stmt *st, int i) {
  return st->db->ops->column_text(st, i);
}
const void *tw_db_column_blob(struct tw_db_stmt *st, int i) {
  return st->db->ops->column_blob(st, i);
}
int tw_db_column_bytes(struct tw_db_stmt *st, int i) {
  return st->db->ops->column_bytes(st, i);
}
int tw_db_column_type(struct tw_db_stmt *st, int i) {
  return st->db->ops->column_type(st, i);
}
int tw_db_changes(struct tw_db *db) { return db->ops->changes(db); }
int64_t tw_db_total_changes(struct tw_db *db) {
  return db->ops->total_changes(db);
}
int64_t tw_db_last_insert_id(struct tw_db *db) {
  return db->ops->last_insert_id(db);
}
int tw_db_step_into(struct tw_db_stmt *st, int64_t *dst) {
  if (st->db->ops->step_into)
    return st->db->ops->step_into(st, dst);
  int r = st->db->ops->step(st);
  *dst = r == TW_DB_ROW ? st->db->ops->column_int64(st, 0) : 0;
  while (r == TW_DB_ROW)
    r = st->db->ops->step(st);
  return r;
}
bool tw_db_autocommit(struct tw_db *db) { return db->ops->autocommit(db); }
int tw_db_user_version(struct tw_db *db, int *out) {
  return db->ops->user_version(db, out);
}
int tw_db_set_user_version(struct tw_db *db, int v) {
  return db->ops->set_user_version(db, v);
}
int tw_db_test_cap_pages(struct tw_db *db, bool cap) {
  return db->ops->test_cap_pages(db, cap);
}
int tw_db_schema_lock(struct tw_db *db, bool lock) {
  return db->ops->schema_lock ? db->ops->schema_lock(db, lock) : TW_DB_OK;
}
void tw_db_batch_begin(struct tw_db *db) {
  if (db->ops->batch_begin)
    db->ops->batch_begin(db);
}
void tw_db_batch_op(struct tw_db *db, int i) {
  if (db->ops->batch_op)
    db->ops->batch_op(db, i);
}
bool tw_db_batch_failed(struct tw_db *db, int i) {
  return db->ops->batch_failed && db->ops->batch_failed(db, i);
}
void tw_db_batch_forget(struct tw_db *db, int i) {
  if (db->ops->batch_forget)
    db->ops->batch_forget(db, i);
}
void tw_db_batch_end(struct tw_db *db) {
  if (db->ops->batch_end)
    db->ops->batch_end(db);
}
