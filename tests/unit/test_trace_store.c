/* test_trace_store.c - a job's trace context in the store (store_obs.h):
 * kept in the job's own row across a restart, and moved there from the
 * job_traces table of earlier builds.  Also run on PostgreSQL
 * (test_trace_store_pg). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/store.h"
#include "broker/core/store_obs.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64];
static char path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-trace-store-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_store_remove(path, dir);
  tw_test_pg_schema_drop(&pg);
  return 0;
}

static struct tw_store *open_store(void) {
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &s, &err) != TW_OK)
    fail_msg("%s", err.msg);
  return s;
}

static void create_traced(struct tw_store *s, const char *name, const char *tp,
                          struct tw_job_rec *out) {
  struct tw_job_new req = {.name = name,
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = "{}",
                           .traceparent = tp};
  struct tw_err err = {0};
  if (tw_store_job_create(s, &req, out, NULL, &err) != TW_OK)
    fail_msg("%s", err.msg);
}

/* sqlite only: the count the query gives on the closed store's file. */
static int file_count(const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

#define TP1 "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP2 "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"

/* A job's trace context is written with the job's own row and read back
 * after a restart, so its later spans join the submitter's trace; a job
 * stored without one has none. */
static void trace_context_survives_a_restart_in_the_job_row(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec a, b;
  create_traced(s, "traced", TP1, &a);
  create_traced(s, "plain", NULL, &b);
  tw_store_close(s);
  s = open_store();
  char tp[64] = "x";
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_trace(s, a.id, tp, sizeof tp, &err), TW_OK);
  assert_string_equal(tp, TP1);
  assert_int_equal(tw_store_job_trace(s, b.id, tp, sizeof tp, &err),
                   TW_E_NOTFOUND);
  assert_string_equal(tp, "");
  assert_int_equal(tw_store_job_trace(s, "j-nope", tp, sizeof tp, &err),
                   TW_E_NOTFOUND);
  tw_store_close(s);
  if (!pg.on) {
    /* in the row itself: nothing in the table earlier builds used */
    assert_int_equal(file_count("SELECT count(*) FROM jobs"
                                " WHERE traceparent = '" TP1 "'"),
                     1);
    assert_int_equal(file_count("SELECT count(*) FROM job_traces"), 0);
  }
  tw_job_rec_release(&a);
  tw_job_rec_release(&b);
}

/* A database of a build that kept trace contexts in job_traces: opening it
 * moves each into its job's row, where it is read as before. */
static void earlier_trace_rows_move_into_the_job_row(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  struct tw_job_rec a, b;
  create_traced(s, "old-traced", NULL, &a);
  create_traced(s, "old-plain", NULL, &b);
  tw_store_close(s);
  /* back to the earlier layout: no column, the context in its table */
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char sql[512];
  snprintf(sql, sizeof sql,
           "ALTER TABLE jobs DROP COLUMN traceparent;"
           " INSERT INTO job_traces (job_id, traceparent)"
           " VALUES ('%s', '" TP2 "');"
           " UPDATE schema_modules SET version = 1 WHERE name = 'trace'",
           a.id);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  s = open_store();
  char tp[64];
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_trace(s, a.id, tp, sizeof tp, &err), TW_OK);
  assert_string_equal(tp, TP2);
  assert_int_equal(tw_store_job_trace(s, b.id, tp, sizeof tp, &err),
                   TW_E_NOTFOUND);
  /* a job made after the move keeps its context in its row too */
  struct tw_job_rec c;
  create_traced(s, "new", TP1, &c);
  assert_int_equal(tw_store_job_trace(s, c.id, tp, sizeof tp, &err), TW_OK);
  assert_string_equal(tp, TP1);
  tw_store_close(s);
  assert_int_equal(file_count("SELECT count(*) FROM job_traces"), 0);
  assert_int_equal(
      file_count("SELECT count(*) FROM jobs WHERE traceparent IS NOT NULL"), 2);
  tw_job_rec_release(&a);
  tw_job_rec_release(&b);
  tw_job_rec_release(&c);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          trace_context_survives_a_restart_in_the_job_row, setup, teardown),
      cmocka_unit_test_setup_teardown(earlier_trace_rows_move_into_the_job_row,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
