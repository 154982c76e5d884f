/* db.h - the store layer's database: one thin interface over the embedded
 * sqlite default (db_sqlite.c) and PostgreSQL through libpq (db_pg.c).
 *
 * Only the store layer (broker/core/store*.c) uses it; only db_sqlite.c
 * and store_backup.c call sqlite, only db_pg.c calls libpq
 * (test_sql_owner checks both).  The calls mirror sqlite's: statements
 * are prepared once per connection with `?N` (or `?`) placeholders,
 * bound, stepped row by row and reset; text and blobs bound are the
 * caller's until the statement is stepped or reset (sqlite's
 * SQLITE_STATIC).  The SQL is written once, in sqlite's dialect kept to
 * what PostgreSQL also means the same way; db_pg.c translates the few
 * differences that remain (placeholders, INSERT OR IGNORE, the types of
 * the DDL, BEGIN IMMEDIATE, PRAGMAs; docs/ha.md lists them). */
#ifndef TW_CORE_DB_H
#define TW_CORE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_db;
struct tw_db_stmt;

enum tw_db_backend { TW_DB_SQLITE = 0, TW_DB_POSTGRES };

/* Result codes of step/exec/prepare: sqlite's values, so a reader of
 * either backend's code sees the same numbers. */
#define TW_DB_OK 0
#define TW_DB_ERROR 1
#define TW_DB_ROW 100
#define TW_DB_DONE 101
/* Column types (tw_db_column_type): only NULL is told apart. */
#define TW_DB_NULL 5

/* What the last failure on a connection was, for the store's health and
 * its error codes. */
enum tw_db_class {
  TW_DB_C_NONE = 0,
  TW_DB_C_BUSY,       /* locked, or serialization failure: try later */
  TW_DB_C_FULL,       /* the disk is full */
  TW_DB_C_CONSTRAINT, /* a unique, foreign key or check constraint */
  TW_DB_C_STORAGE,    /* I/O, cannot open, read-only, lost connection */
  TW_DB_C_OTHER       /* the statement itself is wrong */
};

struct tw_db_opts {
  enum tw_db_backend backend;
  /* sqlite: a file path (or ":memory:", a file: URI). */
  const char *path;
  bool readonly;  /* sqlite: SQLITE_OPEN_READONLY */
  bool sync_full; /* sqlite: synchronous=FULL vs NORMAL */
  /* PostgreSQL: a libpq connection string and the password (NULL: none,
   * or in the DSN, or in ~/.pgpass).  The password is never logged nor
   * put in an error message. */
  const char *dsn;
  const char *password;
  /* PostgreSQL: a session idle inside a transaction this long (a broker
   * frozen or cut off mid-write) is ended by the server, its locks
   * released; a statement waits this long for a lock at most.  0: 5000. */
  int64_t txn_timeout_ms;
};

/* Opens one connection; *out NULL and err set on failure (the message
 * names the path or the DSN's host, never the password). */
enum tw_rc tw_db_open(const struct tw_db_opts *opts, struct tw_db **out,
                      struct tw_err *err);
void tw_db_close(struct tw_db *db);
enum tw_db_backend tw_db_backend(const struct tw_db *db);

/* The last failure's message (valid until the next call on db) and
 * class. */
const char *tw_db_errmsg(struct tw_db *db);
enum tw_db_class tw_db_errclass(struct tw_db *db);

/* Runs constant SQL, possibly several statements; TW_DB_OK or an error
 * code with *errmsg (when errmsg is not NULL) a copy to tw_db_free(). */
int tw_db_exec(struct tw_db *db, const char *sql, char **errmsg);
void tw_db_free(void *p);

int tw_db_prepare(struct tw_db *db, const char *sql, struct tw_db_stmt **out);
void tw_db_finalize(struct tw_db_stmt *st);
int tw_db_reset(struct tw_db_stmt *st);
void tw_db_clear_bindings(struct tw_db_stmt *st);

/* i from 1.  n -1: up to the NUL. */
int tw_db_bind_int64(struct tw_db_stmt *st, int i, int64_t v);
int tw_db_bind_int(struct tw_db_stmt *st, int i, int v);
int tw_db_bind_text(struct tw_db_stmt *st, int i, const char *s, int n);
int tw_db_bind_blob(struct tw_db_stmt *st, int i, const void *p, size_t n);
int tw_db_bind_null(struct tw_db_stmt *st, int i);
/* An array bound as PostgreSQL's array literal text (`{"a",NULL,"b"}`,
 * `{1,2}`), for a parameter the statement casts (`?1::text[]`): a batch
 * of rows in one statement (`unnest`).  v[k] NULL is SQL NULL.  The
 * literal is plain text to sqlite, which has no arrays: PostgreSQL only. */
int tw_db_bind_text_array(struct tw_db_stmt *st, int i, const char *const *v,
                          size_t n);
int tw_db_bind_int64_array(struct tw_db_stmt *st, int i, const int64_t *v,
                           size_t n);

/* TW_DB_ROW, TW_DB_DONE, or an error code (see tw_db_errclass). */
int tw_db_step(struct tw_db_stmt *st);

/* Of the current row; i from 0.  Text and blobs stay valid until the
 * next step or reset. */
int64_t tw_db_column_int64(struct tw_db_stmt *st, int i);
int tw_db_column_int(struct tw_db_stmt *st, int i);
const unsigned char *tw_db_column_text(struct tw_db_stmt *st, int i);
const void *tw_db_column_blob(struct tw_db_stmt *st, int i);
int tw_db_column_bytes(struct tw_db_stmt *st, int i);
int tw_db_column_type(struct tw_db_stmt *st, int i); /* TW_DB_NULL or 1 */

/* Rows changed by the last INSERT/UPDATE/DELETE; by every one since the
 * connection opened; the id the last INSERT gave its table's integer key
 * (sqlite's rowid; PostgreSQL's lastval() of the key's sequence). */
int tw_db_changes(struct tw_db *db);
int64_t tw_db_total_changes(struct tw_db *db);
int64_t tw_db_last_insert_id(struct tw_db *db);
/* Steps st, a statement that returns one row whose first column is an
 * integer (INSERT ... RETURNING), that integer into *dst: inside a batch
 * on PostgreSQL sent without waiting and *dst filled when the batch reads
 * its next answer (0 if no row); elsewhere at once.  TW_DB_DONE, or an
 * error as tw_db_step's; the caller resets st as after a step. */
int tw_db_step_into(struct tw_db_stmt *st, int64_t *dst);
/* Whether no transaction is open (sqlite rolled one back by itself). */
bool tw_db_autocommit(struct tw_db *db);

/* The core schema's version (sqlite: PRAGMA user_version; PostgreSQL:
 * the table tw_user_version). */
int tw_db_user_version(struct tw_db *db, int *out);
int tw_db_set_user_version(struct tw_db *db, int v);

/* Holds (lock) or lets go of the database-wide schema lock, so brokers
 * started together on one PostgreSQL migrate one after the other (a
 * session-level advisory lock).  sqlite: nothing (one daemon per file,
 * tw_store_lock). */
int tw_db_schema_lock(struct tw_db *db, bool lock);

/* A batch: the writer's group commit, one transaction of several
 * operations, each in its own savepoint.  On PostgreSQL the batch goes
 * through libpq's pipeline mode: statements whose result nobody reads
 * are sent without waiting, so a batch costs about one round trip per
 * statement that returns rows instead of one per statement (db_pg.c).
 * tw_db_batch_op(i) before each operation's SAVEPOINT (i from 0), and
 * once more past the last before the COMMIT; after the COMMIT,
 * tw_db_batch_failed(i) says whether operation i failed after its
 * function returned (a statement of it failed, found when a later result
 * was read: the operation's savepoint was rolled back and the others ran
 * on without it), tw_db_errmsg/errclass then saying why.  sqlite: the
 * calls do nothing, tw_db_batch_failed is false. */
void tw_db_batch_begin(struct tw_db *db);
void tw_db_batch_op(struct tw_db *db, int i);
bool tw_db_batch_failed(struct tw_db *db, int i);
/* Operation i's failures recorded so far are no longer its own: a
 * statement run for it failed and was undone by a savepoint of the
 * caller's, which then runs it again (store.c, a run of grouped writes). */
void tw_db_batch_forget(struct tw_db *db, int i);
void tw_db_batch_end(struct tw_db *db);

/* sqlite only (tests): caps the file at its current size so the next
 * write that needs a page fails as on a full disk.  PostgreSQL:
 * TW_DB_ERROR. */
int tw_db_test_cap_pages(struct tw_db *db, bool cap);

#endif
