/* store_reconcile.c - the SQL of the reconciler's log (store_reconcile.h). */
#include "broker/core/store_reconcile.h"

#include <stdio.h>
#include <stdlib.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_LOG_ADD[] =
    "INSERT INTO reconcile_log (at_ms, provider, instance_id, job_id, attempt,"
    " action, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_LOG_LIST[] =
    "SELECT at_ms, provider, instance_id, job_id, attempt, action, reason"
    " FROM reconcile_log ORDER BY seq LIMIT ?1";

static enum tw_rc op_log_add(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  const struct tw_reconcile_action *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOG_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->at_ms);
  tw_db_bind_text(st, 2, a->provider, -1);
  tw_db_bind_text(st, 3, a->instance_id, -1);
  tw_db_bind_text(st, 4, a->job_id, -1);
  tw_db_bind_text(st, 5, a->attempt, -1);
  tw_db_bind_text(st, 6, a->action, -1);
  tw_db_bind_text(st, 7, a->reason, -1);
  int rc = tw_db_step(st);
  tw_db_reset(st);
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "reconcile: log: %s", tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_reconcile_log_add(struct tw_store *s,
                                      const struct tw_reconcile_action *a,
                                      struct tw_err *err) {
  return tw_store_write(s, op_log_add, (void *)a, err);
}

struct log_read {
  int limit;
  struct tw_reconcile_logrec *items;
  size_t n, cap;
};

static void col(char *dst, size_t n, struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static enum tw_rc op_log_list(struct tw_store *s, struct tw_db *db, void *arg,
                              struct tw_err *err) {
  struct log_read *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOG_LIST, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int(st, 1, a->limit);
  int rc;
  while ((rc = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 16;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_reconcile_logrec *l = &a->items[a->n++];
    l->at_ms = tw_db_column_int64(st, 0);
    col(l->provider, sizeof l->provider, st, 1);
    col(l->instance_id, sizeof l->instance_id, st, 2);
    col(l->job_id, sizeof l->job_id, st, 3);
    col(l->attempt, sizeof l->attempt, st, 4);
    col(l->action, sizeof l->action, st, 5);
    col(l->reason, sizeof l->reason, st, 6);
  }
  tw_db_reset(st);
  if (rc != TW_DB_DONE)
    return tw_err_set(err, TW_E_IO, "reconcile: read log: %s",
                      tw_db_errmsg(db));
  return TW_OK;
}

enum tw_rc tw_store_reconcile_log_list(struct tw_store *s, int limit,
                                       struct tw_reconcile_logrec **out,
                                       size_t *n, struct tw_err *err) {
  struct log_read a = {.limit = limit};
  enum tw_rc rc = tw_store_read(s, op_log_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}
