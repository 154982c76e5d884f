/* db_sqlite.c - the embedded default: the store's calls are sqlite's own,
 * one to one. */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/mem.h"
#include "broker/core/db_int.h"

struct sdb {
  struct tw_db base;
  sqlite3 *h;
};
struct sst {
  struct tw_db_stmt base;
  sqlite3_stmt *h;
};

#define H(db) (((struct sdb *)(db))->h)
#define S(st) (((struct sst *)(st))->h)

static void s_close(struct tw_db *db) {
  sqlite3_close(H(db));
  free(db);
}
static const char *s_errmsg(struct tw_db *db) { return sqlite3_errmsg(H(db)); }
static enum tw_db_class s_errclass(struct tw_db *db) {
  switch (sqlite3_errcode(H(db)) & 0xff) {
  case SQLITE_OK:
  case SQLITE_ROW:
  case SQLITE_DONE:
    return TW_DB_C_NONE;
  case SQLITE_FULL:
    return TW_DB_C_FULL;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return TW_DB_C_BUSY;
  case SQLITE_CONSTRAINT:
    return TW_DB_C_CONSTRAINT;
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PROTOCOL:
  case SQLITE_NOLFS:
    return TW_DB_C_STORAGE;
  default:
    return TW_DB_C_OTHER;
  }
}
static int s_exec(struct tw_db *db, const char *sql, char **errmsg) {
  char *msg = NULL;
  int r = sqlite3_exec(H(db), sql, NULL, NULL, errmsg ? &msg : NULL);
  if (errmsg && msg) {
    *errmsg = tw_strdup(msg);
    sqlite3_free(msg);
  }
  return r;
}
static int s_prepare(struct tw_db *db, const char *sql,
                     struct tw_db_stmt **out) {
  sqlite3_stmt *h = NULL;
  int r = sqlite3_prepare_v3(H(db), sql, -1, SQLITE_PREPARE_PERSISTENT, &h,
                             NULL);
  if (r != SQLITE_OK)
    return r;
  struct sst *st = tw_calloc(1, sizeof *st);
  st->base.db = db;
  st->h = h;
  *out = &st->base;
  return SQLITE_OK;
}
static void s_finalize(struct tw_db_stmt *st) {
  sqlite3_finalize(S(st));
  free(st);
}
static int s_reset(struct tw_db_stmt *st) { return sqlite3_reset(S(st)); }
static void s_clear_bindings(struct tw_db_stmt *st) {
  sqlite3_clear_bindings(S(st));
}
static int s_bind_int64(struct tw_db_stmt *st, int i, int64_t v) {
  return sqlite3_bind_int64(S(st), i, v);
}
static int s_bind_text(struct tw_db_stmt *st, int i, const char *s, int n) {
  return sqlite3_bind_text(S(st), i, s, n, SQLITE_STATIC);
}
static int s_bind_blob(struct tw_db_stmt *st, int i, const void *p, size_t n) {
  return sqlite3_bind_blob64(S(st), i, p, n, SQLITE_STATIC);
}
static int s_bind_null(struct tw_db_stmt *st, int i) {
  return sqlite3_bind_null(S(st), i);
}
static int s_step(struct tw_db_stmt *st) { return sqlite3_step(S(st)); }
static int64_t s_column_int64(struct tw_db_stmt *st, int i) {
  return sqlite3_column_int64(S(st), i);
}
static const unsigned char *s_column_text(struct tw_db_stmt *st, int i) {
  return sqlite3_column_text(S(st), i);
}
static const void *s_column_blob(struct tw_db_stmt *st, int i) {
  return sqlite3_column_blob(S(st), i);
}
static int s_column_bytes(struct tw_db_stmt *st, int i) {
  return sqlite3_column_bytes(S(st), i);
}
static int s_column_type(struct tw_db_stmt *st, int i) {
  return sqlite3_column_type(S(st), i) == SQLITE_NULL ? TW_DB_NULL : 1;
}
static int s_changes(struct tw_db *db) { return sqlite3_changes(H(db)); }
static int64_t s_total_changes(struct tw_db *db) {
  return sqlite3_total_changes64(H(db));
}
static int64_t s_last_insert_id(struct tw_db *db) {
  return sqlite3_last_insert_rowid(H(db));
}
static bool s_autocommit(struct tw_db *db) {
  return sqlite3_get_autocommit(H(db)) != 0;
}
static int s_user_version(struct tw_db *db, int *out) {
  sqlite3_stmt *st = NULL;
  *out = 0;
  int r = sqlite3_prepare_v2(H(db), "PRAGMA user_version", -1, &st, NULL);
  if (r != SQLITE_OK)
    return r;
  if ((r = sqlite3_step(st)) == SQLITE_ROW)
    *out = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return r == SQLITE_ROW || r == SQLITE_DONE ? SQLITE_OK : r;
}
static int s_set_user_version(struct tw_db *db, int v) {
  char sql[48];
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
  return sqlite3_exec(H(db), sql, NULL, NULL, NULL);
}
/* PRAGMA max_page_count never goes below the database's current size, so
 * 1 caps it where it is. */
static int s_test_cap_pages(struct tw_db *db, bool cap) {
  sqlite3_stmt *st = NULL;
  const char *sql = cap ? "PRAGMA max_page_count = 1"
                        : "PRAGMA max_page_count = 4294967294";
  int r = sqlite3_prepare_v2(H(db), sql, -1, &st, NULL);
  if (r != SQLITE_OK)
    return r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW)
    ;
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? SQLITE_OK : r;
}

static const struct tw_db_ops OPS = {
    .close = s_close,
    .errmsg = s_errmsg,
    .errclass = s_errclass,
    .exec = s_exec,
    .prepare = s_prepare,
    .finalize = s_finalize,
    .reset = s_reset,
    .clear_bindings = s_clear_bindings,
    .bind_int64 = s_bind_int64,
    .bind_text = s_bind_text,
    .bind_blob = s_bind_blob,
    .bind_null = s_bind_null,
    .step = s_step,
    .column_int64 = s_column_int64,
    .column_text = s_column_text,
    .column_blob = s_column_blob,
    .column_bytes = s_column_bytes,
    .column_type = s_column_type,
    .changes = s_changes,
    .total_changes = s_total_changes,
    .last_insert_id = s_last_insert_id,
    .autocommit = s_autocommit,
    .user_version = s_user_version,
    .set_user_version = s_set_user_version,
    .test_cap_pages = s_test_cap_pages,
};

enum tw_rc tw_db_sqlite_open(const struct tw_db_opts *o, struct tw_db **out,
                             struct tw_err *err) {
  const char *path = o->path ? o->path : ":memory:";
  /* A new database is its owner's alone: it holds token hashes, sealed
   * secrets, the audit log and job specs with their env.  sqlite gives
   * the -wal and -shm files the mode of the database file, so creating
   * that one 0600 covers all three; an existing file keeps the mode its
   * operator chose. */
  if (!o->readonly && path[0] != ':' && strncmp(path, "file:", 5) != 0) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
      close(fd);
  }
  /* Two settings of sqlite's own, which take effect only before its
   * first initialisation, the first open of the process (tw_store_open at
   * start-up, before any thread uses sqlite); later opens get
   * SQLITE_MISUSE and change nothing.
   * - Memory statistics off: on (the default) they take one process-wide
   *   mutex around every sqlite3_malloc and sqlite3_free of every
   *   connection, the writer and the API's readers queued on it, about
   *   5 % of the daemon's CPU under load.  Nothing here reads them (no
   *   sqlite3_memory_used, no soft heap limit).
   * - Sub-journals kept in memory up to 8 MiB (64 KiB by default): every
   *   operation of a group commit runs in its own savepoint, whose
   *   sub-journal holds the image of each page the operation touches (a
   *   dozen per submission); past the limit sqlite spills it to a
   *   temporary file, opened, written page by page and deleted in every
   *   commit.  8 MiB covers batches of about 150 submissions; temporary
   *   tables and sorts still spill to disk as before (temp_store is
   *   unchanged). */
  (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 8 << 20);
  int flags = (o->readonly ? SQLITE_OPEN_READONLY
                           : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOMUTEX;
  sqlite3 *h = NULL;
  if (sqlite3_open_v2(path, &h, flags, NULL) != SQLITE_OK) {
    enum tw_rc rc = tw_err_set(err, TW_E_IO, "store: cannot open %s: %s", path,
                               h ? sqlite3_errmsg(h) : "out of memory");
    sqlite3_close(h);
    return rc;
  }
  sqlite3_busy_timeout(h, 5000);
  /* Constant pragmas, run through sqlite3_exec as the migrations are. */
  const char *pragmas =
      o->readonly
          ? "PRAGMA foreign_keys=ON;"
          : (o->sync_full ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                            " PRAGMA foreign_keys=ON;"
                          : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                            " PRAGMA foreign_keys=ON;");
  char *msg = NULL;
  if (sqlite3_exec(h, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
    enum tw_rc rc = tw_err_set(err, TW_E_IO, "store: %s: %s", path,
                               msg ? msg : "pragma failed");
    sqlite3_free(msg);
    sqlite3_close(h);
    return rc;
  }
  struct sdb *db = tw_calloc(1, sizeof *db);
  db->base.ops = &OPS;
  db->base.backend = TW_DB_SQLITE;
  db->h = h;
  *out = &db->base;
  return TW_OK;
}
