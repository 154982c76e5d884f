/* Store: durability of creates, idempotency, paging, transitions and their
 * events, group commit under concurrency, migrations on reopen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64];
static char path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-store-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1764460800000); /* 2025-11-30T00:00:00Z */
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

static void create(struct tw_store *s, const char *name, const char *key,
                   const char *spec, struct tw_job_rec *out, bool *replayed,
                   enum tw_rc want) {
  struct tw_job_new req = {.name = name,
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = spec,
                           .idem_key = key};
  struct tw_err err = {0};
  enum tw_rc rc = tw_store_job_create(s, &req, out, replayed, &err);
  assert_int_equal(rc, want);
}

static void create_get_and_reopen(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, g;
  bool rep;
  create(s, "train", NULL, "{\"name\":\"train\"}", &j, &rep, TW_OK);
  assert_false(rep);
  assert_int_equal(j.state, TW_JOB_PENDING);
  assert_int_equal(strlen(j.id), TW_JOB_ID_LEN);
  assert_int_equal(j.created_ms, 1764460800000);
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_string_equal(g.name, "train");
  assert_string_equal(g.tenant, "t1");
  assert_string_equal(g.spec_json, "{\"name\":\"train\"}");
  tw_job_rec_release(&g);
  tw_store_close(s);
  /* reopening migrates nothing and keeps the job */
  s = open_store();
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_string_equal(g.id, j.id);
  tw_job_rec_release(&g);
  err.rc = TW_OK;
  assert_int_equal(tw_store_job_get(s, "j-nope", &g, &err), TW_E_NOTFOUND);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

/* Token hashes, sealed secrets, the audit log and job specs live there:
 * a new database and its WAL are readable by their owner only, whatever
 * the umask; an existing file keeps its mode. */
static void a_new_database_and_its_wal_are_the_owners_alone(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  mode_t old = umask(022);
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  bool rep;
  create(s, "train", NULL, "{\"name\":\"train\"}", &j, &rep, TW_OK);
  tw_job_rec_release(&j);
  struct stat st;
  char wal[160];
  snprintf(wal, sizeof wal, "%s-wal", path);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(stat(wal, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  tw_store_close(s);
  assert_int_equal(chmod(path, 0640), 0);
  s = open_store();
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  tw_store_close(s);
  umask(old);
}

static void ids_are_time_ordered_and_unique(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char prev[TW_JOB_ID_LEN + 1] = "";
  for (int i = 0; i < 50; i++) {
    struct tw_job_rec j;
    bool rep;
    tw_clock_advance(&clk, 1);
    create(s, "x", NULL, "{}", &j, &rep, TW_OK);
    assert_true(strcmp(j.id, prev) > 0);
    memcpy(prev, j.id, sizeof prev);
    tw_job_rec_release(&j);
  }
  tw_store_close(s);
}

static void idempotency_replays_and_conflicts(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec a, b, c;
  bool rep;
  create(s, "a", "key-1", "{\"name\":\"a\"}", &a, &rep, TW_OK);
  assert_false(rep);
  create(s, "a", "key-1", "{\"name\":\"a\"}", &b, &rep, TW_OK);
  assert_true(rep);
  assert_string_equal(a.id, b.id);
  /* same key, another spec: refused, nothing stored */
  create(s, "a", "key-1", "{\"name\":\"a2\"}", &c, &rep, TW_E_CONFLICT);
  int64_t counts[TW_JOB_NSTATES];
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_counts(s, counts, &err), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], 1);
  tw_job_rec_release(&a);
  tw_job_rec_release(&b);
  tw_store_close(s);
}

static void list_pages_newest_first_with_filters(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char ids[25][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 25; i++) {
    struct tw_job_rec j;
    bool rep;
    create(s, "j", NULL, "{}", &j, &rep, TW_OK);
    memcpy(ids[i], j.id, sizeof ids[i]);
    tw_job_rec_release(&j);
  }
  struct tw_err err = {0};
  struct tw_job_transition t = {
      .id = ids[3], .to = TW_JOB_CANCELLED, .reason = "test"};
  assert_int_equal(tw_store_job_transition(s, &t, NULL, &err), TW_OK);

  struct tw_job_filter f = {.limit = 10};
  int seen = 0, pages = 0;
  for (;;) {
    struct tw_job_rec *recs;
    size_t n;
    int64_t next;
    assert_int_equal(tw_store_job_list(s, &f, &recs, &n, &next, &err), TW_OK);
    for (size_t i = 0; i < n; i++) {
      assert_string_equal(recs[i].id, ids[24 - seen]);
      seen++;
      tw_job_rec_release(&recs[i]);
    }
    free(recs);
    pages++;
    if (!next)
      break;
    f.before_seq = next;
  }
  assert_int_equal(seen, 25);
  assert_int_equal(pages, 3);

  struct tw_job_filter fs = {.limit = 100, .state = "cancelled"};
  struct tw_job_rec *recs;
  size_t n;
  int64_t next;
  assert_int_equal(tw_store_job_list(s, &fs, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(recs[0].id, ids[3]);
  tw_job_rec_release(&recs[0]);
  free(recs);
  struct tw_job_filter ft = {.limit = 100, .tenant = "other"};
  assert_int_equal(tw_store_job_list(s, &ft, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 0);
  free(recs);
  tw_store_close(s);
}

static void transitions_are_validated_and_recorded(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, u;
  bool rep;
  struct tw_err err = {0};
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  struct tw_job_transition steps[] = {
      {.id = j.id, .to = TW_JOB_PLACING, .reason = "scheduler picked it"},
      {.id = j.id,
       .to = TW_JOB_PROVISIONING,
       .reason = "launching",
       .placement_json = "{\"provider\":\"aws\"}"},
      {.id = j.id, .to = TW_JOB_RUNNING, .reason = "instance running"},
      {.id = j.id,
       .to = TW_JOB_SUCCEEDED,
       .reason = "exit 0",
       .has_exit = true},
  };
  for (size_t i = 0; i < 4; i++) {
    tw_clock_advance(&clk, 1000);
    assert_int_equal(tw_store_job_transition(s, &steps[i], &u, &err), TW_OK);
    assert_int_equal(u.state, steps[i].to);
    tw_job_rec_release(&u);
  }
  assert_int_equal(tw_store_job_get(s, j.id, &u, &err), TW_OK);
  assert_string_equal(u.placement_json, "{\"provider\":\"aws\"}");
  assert_true(u.has_exit_code);
  assert_int_equal(u.exit_code, 0);
  assert_int_equal(u.updated_ms - u.created_ms, 4000);
  tw_job_rec_release(&u);
  /* finished: cancel is a conflict and changes nothing */
  struct tw_job_transition cancel = {
      .id = j.id, .to = TW_JOB_CANCELLED, .reason = "x"};
  assert_int_equal(tw_store_job_transition(s, &cancel, NULL, &err),
                   TW_E_CONFLICT);
  assert_non_null(strstr(err.msg, "already succeeded"));
  struct tw_job_event *ev;
  size_t n;
  assert_int_equal(tw_store_job_events(s, j.id, &ev, &n, &(struct tw_err){0}),
                   TW_OK);
  assert_int_equal(n, 5);
  assert_false(ev[0].has_from);
  assert_int_equal(ev[0].to, TW_JOB_PENDING);
  assert_string_equal(ev[0].reason, "submitted");
  assert_true(ev[4].has_from);
  assert_int_equal(ev[4].from, TW_JOB_RUNNING);
  assert_int_equal(ev[4].to, TW_JOB_SUCCEEDED);
  assert_int_equal(ev[4].at_ms - ev[0].at_ms, 4000);
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_job_events(s, "j-missing", &ev, &n, &e2),
                   TW_E_NOTFOUND);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

struct burst {
  struct tw_store *s;
  int n;
  int ok;
};

static void *burst_main(void *arg) {
  struct burst *b = arg;
  for (int i = 0; i < b->n; i++) {
    struct tw_job_new req = {
        .name = "b", .tenant = "t", .project = "p", .spec_json = "{}"};
    struct tw_job_rec j;
    bool rep;
    if (tw_store_job_create(b->s, &req, &j, &rep, NULL) == TW_OK) {
      b->ok++;
      tw_job_rec_release(&j);
    }
  }
  return NULL;
}

static void concurrent_writes_share_commits(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  enum { T = 32, N = 40 };
  pthread_t th[T];
  struct burst b[T];
  for (int i = 0; i < T; i++) {
    b[i] = (struct burst){.s = s, .n = N};
    pthread_create(&th[i], NULL, burst_main, &b[i]);
  }
  int ok = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    ok += b[i].ok;
  }
  assert_int_equal(ok, T * N);
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  assert_int_equal(st.ops, T * N);
  /* 32 writers at once: the writer must have committed several per
   * transaction, or group commit is not happening */
  assert_true(st.commits < st.ops);
  assert_true(st.max_batch > 1);
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(s, counts, NULL), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], T * N);
  tw_store_close(s);
}

static void schema_version_is_recorded(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  tw_store_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), tw_store_schema_version());
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void newer_schema_is_refused(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  tw_store_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk};
  assert_int_equal(tw_store_open(&o, &s, &err), TW_E_IO);
  assert_non_null(strstr(err.msg, "newer than this build"));
}

static void attempts_carry_tokens_and_move_the_job(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, g;
  bool rep;
  struct tw_err err = {0};
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "aws",
                              .offer_id = "aws:r:z:t:spot",
                              .market = "spot",
                              .price_uusd_per_hour = 1500000,
                              .reason = "cheapest offer"};
  struct tw_attempt_rec a1, a2;
  assert_int_equal(tw_store_attempt_open(s, &an, &a1, &err), TW_OK);
  assert_int_equal(a1.n, 1);
  char tok[64];
  snprintf(tok, sizeof tok, "%s-1", j.id);
  assert_string_equal(a1.client_token, tok);
  assert_int_equal(a1.state, TW_ATTEMPT_LAUNCHING);
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_PLACING);
  tw_job_rec_release(&g);
  /* a capacity error: the attempt ends, the job stays placing for the next */
  struct tw_attempt_close c1 = {
      .attempt_id = a1.id, .end_reason = "capacity", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(s, &c1, &err), TW_OK);
  assert_int_equal(tw_store_attempt_open(s, &an, &a2, &err), TW_OK);
  assert_int_equal(a2.n, 2);
  assert_int_equal(tw_store_attempt_launched(s, a2.id, "i-123",
                                             "{\"provider\":\"aws\"}", &err),
                   TW_OK);
  /* launched twice is a conflict */
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_attempt_launched(s, a2.id, "i-999", NULL, &e2),
                   TW_E_CONFLICT);
  assert_int_equal(tw_store_attempt_running(s, a2.id, &err), TW_OK);
  struct tw_attempt_rec *live;
  size_t n;
  assert_int_equal(tw_store_attempts_live(s, &live, &n, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(live[0].instance_id, "i-123");
  assert_int_equal(live[0].state, TW_ATTEMPT_RUNNING);
  free(live);
  struct tw_attempt_close c2 = {.attempt_id = a2.id,
                                .end_reason = "completed",
                                .job_to = TW_JOB_SUCCEEDED,
                                .job_reason = "done",
                                .has_exit = true,
                                .exit_code = 0};
  assert_int_equal(tw_store_attempt_close(s, &c2, &err), TW_OK);
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_SUCCEEDED);
  assert_string_equal(g.placement_json, "{\"provider\":\"aws\"}");
  tw_job_rec_release(&g);
  struct tw_attempt_rec *all;
  assert_int_equal(tw_store_attempts_of(s, j.id, &all, &n, &err), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(all[0].end_reason, "capacity");
  assert_string_equal(all[1].end_reason, "completed");
  free(all);
  /* a finished job cannot open another attempt */
  e2 = (struct tw_err){0};
  assert_int_equal(tw_store_attempt_open(s, &an, &a1, &e2), TW_E_CONFLICT);
  struct tw_job_event *ev;
  assert_int_equal(tw_store_job_events(s, j.id, &ev, &n, &err), TW_OK);
  /* submitted, placing, provisioning, running, succeeded */
  assert_int_equal(n, 5);
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

static void queue_order_and_notes(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  const int prio[] = {0, 5, 0, 5};
  char ids[4][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 4; i++) {
    struct tw_job_new req = {.name = "q",
                             .tenant = "t",
                             .project = "p",
                             .spec_json = "{}",
                             .priority = prio[i]};
    struct tw_job_rec j;
    assert_int_equal(tw_store_job_create(s, &req, &j, NULL, &err), TW_OK);
    memcpy(ids[i], j.id, sizeof ids[i]);
    tw_job_rec_release(&j);
  }
  struct tw_job_rec *q;
  size_t n;
  assert_int_equal(tw_store_jobs_queued(s, TW_JOB_PENDING, 10, &q, &n, &err),
                   TW_OK);
  assert_int_equal(n, 4);
  const int want[] = {1, 3, 0, 2};
  for (int i = 0; i < 4; i++) {
    assert_string_equal(q[i].id, ids[want[i]]);
    tw_job_rec_release(&q[i]);
  }
  free(q);
  assert_int_equal(tw_store_job_note(s, ids[0], "no offer fits", &err), TW_OK);
  assert_int_equal(tw_store_job_note(s, ids[0], "no offer fits", &err), TW_OK);
  struct tw_job_event *ev;
  assert_int_equal(tw_store_job_events(s, ids[0], &ev, &n, &err), TW_OK);
  assert_int_equal(n, 2); /* submitted + one note: the repeat is not news */
  assert_string_equal(ev[1].reason, "no offer fits");
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  tw_store_close(s);
}

static const char *const MOD_V1[] = {
    "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    "ALTER TABLE widgets ADD COLUMN size INTEGER NOT NULL DEFAULT 0;",
};

static enum tw_rc put_widget(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, "INSERT INTO widgets (name) VALUES (?1)", err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, arg, -1);
  int r = tw_db_step(st);
  tw_db_reset(st);
  return r == TW_DB_DONE ? TW_OK : tw_err_set(err, TW_E_IO, "insert");
}

static enum tw_rc count_widgets(struct tw_store *s, struct tw_db *db,
                                void *arg, struct tw_err *err) {
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, "SELECT count(*), sum(size + 3) FROM widgets", err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  ((int *)arg)[0] = tw_db_column_int(st, 0);
  ((int *)arg)[1] = tw_db_column_int(st, 1);
  tw_db_reset(st);
  return r == TW_DB_ROW ? TW_OK : TW_E_IO;
}

static void modules_migrate_themselves(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 1, &err),
                   TW_OK);
  if (tw_store_write(s, put_widget, "a", &err))
    fail_msg("%s", err.msg);
  /* a later build adds a migration: only that one runs, data is kept */
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 2, &err),
                   TW_OK);
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 2, &err),
                   TW_OK);
  assert_int_equal(tw_store_write(s, put_widget, "b", &err), TW_OK);
  int got[2];
  assert_int_equal(tw_store_read(s, count_widgets, got, &err), TW_OK);
  assert_int_equal(got[0], 2);
  assert_int_equal(got[1], 6);
  /* an older build refuses the newer module schema */
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 1, &e2),
                   TW_E_IO);
  assert_non_null(strstr(e2.msg, "newer than this build"));
  tw_store_close(s);
}

/* A database of the earlier layout, where each module migrated itself when
 * it first started, lacks the modules its daemon never ran (here the
 * reconciler and the checkpoints): opening it keeps what is there and
 * creates the rest, under the same module names and numbers. */
static void earlier_layout_opens_and_gains_missing_modules(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  create(s, "old", NULL, "{}", &j, NULL, TW_OK);
  tw_store_close(s);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db,
                   "DROP TABLE reconcile_log; DROP TABLE spot_requests;"
                   " DROP TABLE spot_progress; DROP TABLE spot_decisions;"
                   " DELETE FROM schema_modules"
                   " WHERE name IN ('reconcile', 'spot')",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  s = open_store();
  struct tw_job_rec again;
  assert_int_equal(tw_store_job_get(s, j.id, &again, NULL), TW_OK);
  tw_job_rec_release(&again);
  tw_job_rec_release(&j);
  tw_store_close(s);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(
      sqlite3_prepare_v2(db,
                         "SELECT count(*) FROM schema_modules WHERE version = 1"
                         " AND name IN ('reconcile', 'spot')"
                         " AND EXISTS (SELECT 1 FROM sqlite_master"
                         " WHERE name = 'reconcile_log')",
                         -1, &st, NULL),
      SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 2);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* sqlite's memory statistics take a process-wide mutex around every
 * allocation of every connection; the store turns them off at the first
 * open (db_sqlite.c), so they count nothing. */
static void sqlite_keeps_no_memory_statistics(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* no sqlite connection */
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  create(s, "m", NULL, "{}", &j, NULL, TW_OK);
  assert_int_equal(sqlite3_memory_used(), 0);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(create_get_and_reopen, setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_new_database_and_its_wal_are_the_owners_alone, setup, teardown),
      cmocka_unit_test_setup_teardown(ids_are_time_ordered_and_unique, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(idempotency_replays_and_conflicts, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(list_pages_newest_first_with_filters,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(transitions_are_validated_and_recorded,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(concurrent_writes_share_commits, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(schema_version_is_recorded, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(attempts_carry_tokens_and_move_the_job,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(queue_order_and_notes, setup, teardown),
      cmocka_unit_test_setup_teardown(modules_migrate_themselves, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(newer_schema_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(
          earlier_layout_opens_and_gains_missing_modules, setup, teardown),
      cmocka_unit_test_setup_teardown(sqlite_keeps_no_memory_statistics, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
