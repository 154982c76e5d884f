/* The daemon migrates every module at start and refuses to serve a
 * database it cannot bring up to date, naming the module and the step.
 *
 *   newer_module_refuses_start: schema_modules says the ledger is at
 *     version 99: exit 1, "module ledger is at schema version 99" on
 *     stderr, nothing listens; set back to 1, the daemon starts;
 *   broken_module_table_refuses_start: the reconciler's version record is
 *     lost while its table stays: exit 1, "reconcile migration 1 failed"
 *     on stderr; the record put back, the daemon starts;
 *   fresh_database_starts: on an empty file the daemon serves, and the
 *     file then holds every module's version. */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/twtest_daemon.h"

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* Runs constant SQL on the daemon's file before it starts. */
static bool prepare_db(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  char *msg = NULL;
  bool ok = sqlite3_open(path, &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK;
  if (!ok)
    fprintf(stderr, "prepare %s: %s\n", path,
            msg  ? msg
            : db ? sqlite3_errmsg(db)
                 : "?");
  sqlite3_free(msg);
  sqlite3_close(db);
  return ok;
}

/* A database made by the daemon itself, then changed by sql: the daemon
 * must refuse it, exit 1, and say want on stderr.  Then restores the
 * database (undo) and checks the daemon starts again. */
static void refuses(const char *name, const char *sql, const char *want,
                    const char *undo) {
  int before = failures;
  struct twtest_daemon d;
  if (twtest_daemon_init(&d, NULL) != 0) {
    CHECK(0, "cannot prepare a daemon directory");
    return;
  }
  CHECK(twtest_daemon_start(&d) == 0, "%s: first start failed", name);
  CHECK(twtest_daemon_stop(&d, 10000) == 0, "%s: first stop failed", name);
  if (!prepare_db(d.db, sql)) {
    CHECK(0, "%s: cannot prepare the database", name);
  } else {
    int started = twtest_daemon_start(&d);
    CHECK(started != 0, "%s: tradewindd served", name);
    int code = twtest_daemon_wait(&d, 10000);
    CHECK(code == 1, "%s: exit code %d, expected 1", name, code);
    CHECK(twtest_daemon_log_count(&d, want) == 1,
          "%s: stderr does not say \"%s\"", name, want);
    if (prepare_db(d.db, undo)) {
      CHECK(twtest_daemon_start(&d) == 0, "%s: no start once repaired", name);
      CHECK(twtest_daemon_stop(&d, 10000) == 0, "%s: last stop failed", name);
    }
  }
  twtest_daemon_cleanup(&d, failures != before);
  printf("%s %s\n", failures != before ? "not ok" : "ok", name);
}

static void newer_module_refuses_start(void) {
  refuses("newer_module_refuses_start",
          "UPDATE schema_modules SET version = 99 WHERE name = 'ledger'",
          "tradewindd: store: module ledger is at schema version 99, newer "
          "than this build",
          "UPDATE schema_modules SET version = 1 WHERE name = 'ledger'");
}

/* The record of the reconciler's version is lost while its table stays:
 * migration 1 cannot create the table again. */
static void broken_module_table_refuses_start(void) {
  refuses("broken_module_table_refuses_start",
          "DELETE FROM schema_modules WHERE name = 'reconcile'",
          "tradewindd: store: reconcile migration 1 failed: table "
          "reconcile_log already exists",
          "INSERT INTO schema_modules VALUES ('reconcile', 1)");
}

static void fresh_database_starts(void) {
  int before = failures;
  struct twtest_daemon d;
  if (twtest_daemon_init(&d, NULL) != 0) {
    CHECK(0, "cannot prepare a daemon directory");
    return;
  }
  CHECK(twtest_daemon_start(&d) == 0, "tradewindd did not start");
  CHECK(twtest_daemon_stop(&d, 10000) == 0, "tradewindd did not stop cleanly");
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int n = -1;
  if (sqlite3_open_v2(d.db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT count(*) FROM schema_modules", -1, &st,
                         NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  CHECK(n == 10, "schema_modules holds %d modules, expected 10", n);
  twtest_daemon_cleanup(&d, failures != before);
  printf("%s fresh_database_starts\n", failures != before ? "not ok" : "ok");
}

int main(void) {
  newer_module_refuses_start();
  broken_module_table_refuses_start();
  fresh_database_starts();
  printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
