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
#include "tests/twtest.h"

/* The daemon of the running test; its teardown kills it and removes its
 * directory, or keeps the directory when the test failed. */
static struct twtest_daemon d;
static int failures_before;

static int daemon_dir(void **state) {
  (void)state;
  failures_before = tw_failures();
  if (twtest_daemon_init(&d, NULL) != 0) {
    fprintf(stderr, "cannot prepare a daemon directory\n");
    return -1;
  }
  return 0;
}

static int daemon_cleanup(void **state) {
  (void)state;
  twtest_daemon_cleanup(&d, tw_failures() != failures_before);
  return 0;
}

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
  TW_CHECK(twtest_daemon_start(&d) == 0, "%s: first start failed", name);
  TW_CHECK(twtest_daemon_stop(&d, 10000) == 0, "%s: first stop failed", name);
  if (!prepare_db(d.db, sql))
    TW_FAIL("%s: cannot prepare the database", name);
  int started = twtest_daemon_start(&d);
  TW_CHECK(started != 0, "%s: tradewindd served", name);
  int code = twtest_daemon_wait(&d, 10000);
  TW_CHECK(code == 1, "%s: exit code %d, expected 1", name, code);
  TW_CHECK(twtest_daemon_log_count(&d, want) == 1,
           "%s: stderr does not say \"%s\"", name, want);
  if (prepare_db(d.db, undo)) {
    TW_CHECK(twtest_daemon_start(&d) == 0, "%s: no start once repaired", name);
    TW_CHECK(twtest_daemon_stop(&d, 10000) == 0, "%s: last stop failed", name);
  }
}

static void newer_module_refuses_start(void **state) {
  (void)state;
  refuses("newer_module_refuses_start",
          "UPDATE schema_modules SET version = 99 WHERE name = 'ledger'",
          "tradewindd: store: module ledger is at schema version 99, newer "
          "than this build",
          /* back to the version this build migrates the ledger to */
          "UPDATE schema_modules SET version = 4 WHERE name = 'ledger'");
}

/* The record of the reconciler's version is lost while its table stays:
 * migration 1 cannot create the table again. */
static void broken_module_table_refuses_start(void **state) {
  (void)state;
  refuses("broken_module_table_refuses_start",
          "DELETE FROM schema_modules WHERE name = 'reconcile'",
          "tradewindd: store: reconcile migration 1 failed: table "
          "reconcile_log already exists",
          "INSERT INTO schema_modules VALUES ('reconcile', 1)");
}

static void fresh_database_starts(void **state) {
  (void)state;
  TW_CHECK(twtest_daemon_start(&d) == 0, "tradewindd did not start");
  TW_CHECK(twtest_daemon_stop(&d, 10000) == 0,
           "tradewindd did not stop cleanly");
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
  /* gang, datasets, catalog, ledger, meter, audit, tenancy, secrets,
   * spot, reconcile, agent, health, trace, flow, ha, workdir, scale */
  TW_CHECK(n == 17, "schema_modules holds %d modules, expected 17", n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(newer_module_refuses_start, daemon_dir,
                                      daemon_cleanup),
      cmocka_unit_test_setup_teardown(broken_module_table_refuses_start,
                                      daemon_dir, daemon_cleanup),
      cmocka_unit_test_setup_teardown(fresh_database_starts, daemon_dir,
                                      daemon_cleanup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
