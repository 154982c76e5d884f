/* db_int.h - what db.c and its two backends share: the table of a
 * backend's functions.  Only broker/core/db*.c include it. */
#ifndef TW_CORE_DB_INT_H
#define TW_CORE_DB_INT_H

#include "broker/core/db.h"

struct tw_db_ops {
  void (*close)(struct tw_db *db);
  const char *(*errmsg)(struct tw_db *db);
  enum tw_db_class (*errclass)(struct tw_db *db);
  int (*exec)(struct tw_db *db, const char *sql, char **errmsg);
  int (*prepare)(struct tw_db *db, const char *sql, struct tw_db_stmt **out);
  void (*finalize)(struct tw_db_stmt *st);
  int (*reset)(struct tw_db_stmt *st);
  void (*clear_bindings)(struct tw_db_stmt *st);
  int (*bind_int64)(struct tw_db_stmt *st, int i, int64_t v);
  int (*bind_text)(struct tw_db_stmt *st, int i, const char *s, int n);
  int (*bind_blob)(struct tw_db_stmt *st, int i, const void *p, size_t n);
  int (*bind_null)(struct tw_db_stmt *st, int i);
  int (*step)(struct tw_db_stmt *st);
  int64_t (*column_int64)(struct tw_db_stmt *st, int i);
  const unsigned char *(*column_text)(struct tw_db_stmt *st, int i);
  const void *(*column_blob)(struct tw_db_stmt *st, int i);
  int (*column_bytes)(struct tw_db_stmt *st, int i);
  int (*column_type)(struct tw_db_stmt *st, int i);
  int (*changes)(struct tw_db *db);
  int64_t (*total_changes)(struct tw_db *db);
  int64_t (*last_insert_id)(struct tw_db *db);
  /* NULL: step, the first column into *dst */
  int (*step_into)(struct tw_db_stmt *st, int64_t *dst);
  bool (*autocommit)(struct tw_db *db);
  int (*user_version)(struct tw_db *db, int *out);
  int (*set_user_version)(struct tw_db *db, int v);
  int (*test_cap_pages)(struct tw_db *db, bool cap);
  int (*schema_lock)(struct tw_db *db, bool lock);
  /* NULL: batches are plain transactions (sqlite) */
  void (*batch_begin)(struct tw_db *db);
  void (*batch_op)(struct tw_db *db, int i);
  bool (*batch_failed)(struct tw_db *db, int i);
  void (*batch_forget)(struct tw_db *db, int i);
  void (*batch_end)(struct tw_db *db);
};

/* The head of each backend's connection and statement. */
struct tw_db {
  const struct tw_db_ops *ops;
  enum tw_db_backend backend;
};
struct tw_db_stmt {
  struct tw_db *db;
};

enum tw_rc tw_db_sqlite_open(const struct tw_db_opts *opts, struct tw_db **out,
                             struct tw_err *err);
enum tw_rc tw_db_pg_open(const struct tw_db_opts *opts, struct tw_db **out,
                         struct tw_err *err);

#endif
