/* The audit chain: appends (also concurrent ones) form one chain, and
 * tw_audit_verify names the first entry that was altered, removed or
 * reordered when the sqlite file is edited directly, as an intruder with
 * the file would.  Exports re-verify from their JSON.  Entries that store
 * functions append with their change join the same chain, and commit or
 * roll back with it: a submission's job, owner and entry are one write.
 * With --backend=postgres the same cases run on PostgreSQL
 * (tests/unit/pg_store.h), the intruder editing the rows there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/tenancy/audit.h"
#include "broker/core/store.h"
#include "broker/core/store_budgets.h"
#include "broker/core/store_tenancy.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

static void open_log(struct tw_store **s, struct tw_audit **a) {
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, s, &err) || tw_audit_open(*s, &clk, a, &err))
    fail_msg("open: %s", err.msg);
}

static void close_log(struct tw_store *s, struct tw_audit *a) {
  tw_audit_free(a);
  tw_store_close(s);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-audit-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/a.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

/* Writes n entries: "POST /v1/jobs" by alice, object j-<i>. */
static void fill(struct tw_audit *a, int n) {
  for (int i = 1; i <= n; i++) {
    char obj[32], detail[64];
    snprintf(obj, sizeof obj, "j-%d", i);
    snprintf(detail, sizeof detail, "status=201 entry %d", i);
    struct tw_audit_event ev = {.principal = "alice",
                                .tenant = "ml",
                                .action = "POST /v1/jobs",
                                .object = obj,
                                .outcome = "ok",
                                .request_id = "r1",
                                .detail = detail};
    int64_t seq = 0;
    assert_int_equal(tw_audit_append(a, &ev, &seq, NULL), TW_OK);
    assert_int_equal(seq, i);
    tw_clock_advance(&clk, 1000);
  }
}

static void sql(const char *stmt) {
  struct tw_db *db = tw_test_db_raw(&pg, path);
  assert_non_null(db);
  char *msg = NULL;
  if (tw_db_exec(db, stmt, &msg) != TW_DB_OK)
    fail_msg("%s: %s", stmt, msg);
  tw_db_close(db);
}

static int64_t scalar(const char *stmt) {
  struct tw_db *db = tw_test_db_raw(&pg, path);
  struct tw_db_stmt *st = NULL;
  int64_t v = -1;
  assert_non_null(db);
  if (tw_db_prepare(db, stmt, &st) == TW_DB_OK && tw_db_step(st) == TW_DB_ROW)
    v = tw_db_column_int64(st, 0);
  tw_db_finalize(st);
  tw_db_close(db);
  return v;
}

/* Verifies the file as `tradewind audit verify --db` does (on PostgreSQL,
 * which has no file: as a broker opened afresh on it does) and returns the
 * message (static). */
static const char *verify_file(void) {
  static struct tw_err err;
  memset(&err, 0, sizeof err);
  int64_t n = 0;
  enum tw_rc rc;
  if (pg.on) {
    struct tw_store *s;
    struct tw_audit *a;
    open_log(&s, &a);
    rc = tw_audit_verify(a, &n, NULL, &err);
    close_log(s, a);
  } else {
    rc = tw_audit_verify_file(path, &n, NULL, &err);
  }
  if (rc == TW_OK)
    return NULL;
  assert_int_equal(rc, TW_E_CONFLICT);
  return err.msg;
}

static void intact_chain_verifies(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 30);
  int64_t n = 0;
  char head[TW_AUDIT_HASH_HEX];
  assert_int_equal(tw_audit_verify(a, &n, head, NULL), TW_OK);
  assert_int_equal(n, 30);
  assert_int_equal(strlen(head), 64);
  close_log(s, a);
  assert_null(verify_file());
}

static void altered_entry_is_named(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 12);
  close_log(s, a);
  /* somebody hides what principal did entry 5 */
  sql("UPDATE audit_log SET principal = 'mallory' WHERE seq = 5");
  const char *why = verify_file();
  assert_non_null(why);
  assert_non_null(strstr(why, "entry 5 was altered"));
}

static void altered_and_rehashed_entry_breaks_the_next_link(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 8);
  close_log(s, a);
  /* a careful intruder recomputes entry 3's hash too; entry 4 still
   * links to the old one */
  sql("UPDATE audit_log SET outcome = 'denied' WHERE seq = 3");
  struct tw_db *db = tw_test_db_raw(&pg, path);
  assert_non_null(db);
  struct tw_db_stmt *st;
  assert_int_equal(tw_db_prepare(
                       db,
                       "SELECT seq, at_ms, principal, tenant, action, object,"
                       " outcome, request_id, detail, prev_hash FROM audit_log"
                       " WHERE seq = 3",
                       &st),
                   TW_DB_OK);
  assert_int_equal(tw_db_step(st), TW_DB_ROW);
  struct tw_audit_entry e = {.seq = 3, .at_ms = tw_db_column_int64(st, 1)};
  e.principal = (char *)tw_db_column_text(st, 2);
  e.tenant = (char *)tw_db_column_text(st, 3);
  e.action = (char *)tw_db_column_text(st, 4);
  e.object = (char *)tw_db_column_text(st, 5);
  e.outcome = (char *)tw_db_column_text(st, 6);
  e.request_id = (char *)tw_db_column_text(st, 7);
  e.detail = (char *)tw_db_column_text(st, 8);
  char h[TW_AUDIT_HASH_HEX];
  tw_audit_entry_hash(&e, (const char *)tw_db_column_text(st, 9), h);
  tw_db_finalize(st);
  char upd[200];
  snprintf(upd, sizeof upd, "UPDATE audit_log SET hash = '%s' WHERE seq = 3",
           h);
  char *msg = NULL;
  assert_int_equal(tw_db_exec(db, upd, &msg), TW_DB_OK);
  tw_db_close(db);
  const char *why = verify_file();
  assert_non_null(why);
  assert_non_null(strstr(why, "entry 4 does not follow entry 3"));
}

static void removed_entry_is_named(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 10);
  close_log(s, a);
  sql("DELETE FROM audit_log WHERE seq = 4");
  const char *why = verify_file();
  assert_non_null(why);
  assert_non_null(strstr(why, "entry 4 was removed"));
}

static void reordered_entries_are_named(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 10);
  close_log(s, a);
  /* swap entries 6 and 7 whole, sequence numbers included */
  sql("UPDATE audit_log SET seq = -6 WHERE seq = 6;"
      "UPDATE audit_log SET seq = 6 WHERE seq = 7;"
      "UPDATE audit_log SET seq = 7 WHERE seq = -6;");
  const char *why = verify_file();
  assert_non_null(why);
  assert_non_null(strstr(why, "entry 6 is out of place"));
  assert_non_null(strstr(why, "written as entry 7"));
}

struct writer {
  struct tw_audit *a;
  int n, id;
};

static void *write_many(void *arg) {
  struct writer *w = arg;
  for (int i = 0; i < w->n; i++) {
    char obj[32];
    snprintf(obj, sizeof obj, "t%d-%d", w->id, i);
    struct tw_audit_event ev = {.principal = "sched",
                                .action = "sched.place",
                                .object = obj,
                                .outcome = "ok"};
    if (tw_audit_append(w->a, &ev, NULL, NULL))
      return (void *)1;
  }
  return NULL;
}

static void concurrent_appends_form_one_chain(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  pthread_t th[8];
  struct writer w[8];
  for (int i = 0; i < 8; i++) {
    w[i] = (struct writer){.a = a, .n = 50, .id = i};
    pthread_create(&th[i], NULL, write_many, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    void *rv;
    pthread_join(th[i], &rv);
    assert_null(rv);
  }
  int64_t n = 0;
  struct tw_err err = {0};
  assert_int_equal(tw_audit_verify(a, &n, NULL, &err), TW_OK);
  assert_int_equal(n, 400);
  close_log(s, a);
}

static void export_reverifies_from_json(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 5);
  /* a detail with quotes, a newline and non-ASCII survives the round trip */
  struct tw_audit_event ev = {.principal = "bob",
                              .tenant = "ml",
                              .action = "x",
                              .object = "o",
                              .outcome = "ok",
                              .detail = "said \"hi\"\nthen caf\xc3\xa9"};
  assert_int_equal(tw_audit_append(a, &ev, NULL, NULL), TW_OK);
  struct tw_audit_filter f = {.limit = 100};
  struct tw_audit_entry *items;
  size_t n;
  int64_t next;
  assert_int_equal(tw_audit_list(a, &f, &items, &n, &next, NULL), TW_OK);
  assert_int_equal(n, 6);
  assert_int_equal(next, 0);
  struct tw_audit_entry back[6];
  json_t *docs[6];
  for (size_t i = 0; i < n; i++) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_audit_entry_json(&items[i], &b);
    docs[i] = json_loads(b.data, 0, NULL);
    assert_non_null(docs[i]);
    tw_buf_release(&b);
    back[i] = (struct tw_audit_entry){
        .seq = json_integer_value(json_object_get(docs[i], "seq")),
        .at_ms = json_integer_value(json_object_get(docs[i], "at_ms")),
        .principal =
            (char *)json_string_value(json_object_get(docs[i], "principal")),
        .tenant = (char *)json_string_value(json_object_get(docs[i], "tenant")),
        .action = (char *)json_string_value(json_object_get(docs[i], "action")),
        .object = (char *)json_string_value(json_object_get(docs[i], "object")),
        .outcome =
            (char *)json_string_value(json_object_get(docs[i], "outcome")),
        .request_id =
            (char *)json_string_value(json_object_get(docs[i], "request_id")),
        .detail =
            (char *)json_string_value(json_object_get(docs[i], "detail"))};
    snprintf(back[i].prev_hash, sizeof back[i].prev_hash, "%s",
             json_string_value(json_object_get(docs[i], "prev_hash")));
    snprintf(back[i].hash, sizeof back[i].hash, "%s",
             json_string_value(json_object_get(docs[i], "hash")));
  }
  assert_int_equal(tw_audit_verify_entries(back, n, 1, NULL, NULL), TW_OK);
  /* and a changed export does not */
  back[2].detail = "status=200";
  struct tw_err err = {0};
  assert_int_equal(tw_audit_verify_entries(back, n, 1, NULL, &err),
                   TW_E_CONFLICT);
  assert_non_null(strstr(err.msg, "entry 3 was altered"));
  for (size_t i = 0; i < n; i++)
    json_decref(docs[i]);
  tw_audit_entries_free(items, n);
  /* filters */
  struct tw_audit_filter g = {.limit = 2, .principal = "alice"};
  assert_int_equal(tw_audit_list(a, &g, &items, &n, &next, NULL), TW_OK);
  assert_int_equal(n, 2);
  assert_int_equal(next, 2);
  tw_audit_entries_free(items, n);
  g.after_seq = next;
  g.limit = 100;
  assert_int_equal(tw_audit_list(a, &g, &items, &n, &next, NULL), TW_OK);
  assert_int_equal(n, 3);
  assert_string_equal(items[0].object, "j-3");
  tw_audit_entries_free(items, n);
  close_log(s, a);
}

/* Entries appended by store functions inside their own transactions (a
 * budget alert, a job's owner) take their place in the one chain. */
static void entries_of_store_changes_join_the_chain(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  fill(a, 2);
  assert_int_equal(tw_store_tenant_create(s, "ml", 1, NULL), TW_OK);
  struct tw_audit_event ev = {.principal = "tradewindd",
                              .tenant = "ml",
                              .action = "budget.alert",
                              .object = "budget/ml",
                              .outcome = "ok"};
  struct tw_store_budget_alert al = {
      .tenant = "ml", .project = "", .pct = 50, .at_ms = 5000};
  assert_int_equal(tw_store_budget_alert_put(s, &al, &ev, NULL), TW_OK);
  struct tw_store_owner o = {
      .job_id = "j-9", .tenant = "ml", .project = "p", .principal = "alice"};
  struct tw_audit_event sub = {.principal = "alice",
                               .tenant = "ml",
                               .action = "POST /v1/jobs",
                               .object = "j-9",
                               .outcome = "ok"};
  assert_int_equal(tw_store_job_owner_put(s, &o, &sub, 6000, NULL), TW_OK);
  int64_t n = 0;
  struct tw_err err = {0};
  assert_int_equal(tw_audit_verify(a, &n, NULL, &err), TW_OK);
  assert_int_equal(n, 4);
  struct tw_audit_filter f = {.after_seq = 2, .limit = 10};
  struct tw_audit_entry *items = NULL;
  size_t k = 0;
  assert_int_equal(tw_audit_list(a, &f, &items, &k, NULL, NULL), TW_OK);
  assert_int_equal(k, 2);
  assert_string_equal(items[0].action, "budget.alert");
  assert_int_equal(items[0].at_ms, 5000);
  assert_string_equal(items[1].object, "j-9");
  tw_audit_entries_free(items, k);
  close_log(s, a);
}

/* The alert and its entry are one transaction: when the entry cannot be
 * written, the alert is not recorded either. */
static void alert_without_its_entry_is_not_recorded(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  assert_int_equal(tw_store_tenant_create(s, "ml", 1, NULL), TW_OK);
  close_log(s, a);
  sql("ALTER TABLE audit_log RENAME TO audit_gone");
  open_log(&s, &a);
  struct tw_audit_event ev = {.action = "budget.alert"};
  struct tw_store_budget_alert al = {
      .tenant = "ml", .project = "", .period_start_ms = 0, .pct = 80};
  struct tw_err err = {0};
  assert_int_equal(tw_store_budget_alert_put(s, &al, &ev, &err), TW_E_IO);
  int pct = -1;
  assert_int_equal(tw_store_budget_alerted(s, "ml", "", 0, &pct, NULL), TW_OK);
  assert_int_equal(pct, 0);
  close_log(s, a);
}

static size_t entries_now(struct tw_audit *a) {
  struct tw_audit_filter f = {.limit = 100};
  struct tw_audit_entry *items = NULL;
  size_t k = 0;
  assert_int_equal(tw_audit_list(a, &f, &items, &k, NULL, NULL), TW_OK);
  tw_audit_entries_free(items, k);
  return k;
}

/* A submission is one write: the job, its owner and its entry (naming the
 * new job, at its creation time) commit together; a replay of its
 * idempotency key writes no second entry, a conflicting one nothing. */
static void submission_stores_job_owner_and_entry_together(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  struct tw_job_new job = {.name = "train",
                           .tenant = "ml",
                           .project = "p",
                           .spec_json = "{\"name\":\"train\"}",
                           .idem_key = "k1"};
  struct tw_store_owner o = {.tenant = "ml",
                             .project = "p",
                             .principal = "alice",
                             .projected_uusd = 1234};
  struct tw_audit_event ev = {.principal = "alice",
                              .tenant = "ml",
                              .action = "POST /v1/jobs",
                              .outcome = "ok",
                              .request_id = "r1",
                              .detail = "status=201"};
  struct tw_job_rec rec, again;
  bool replayed = true;
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_submit(s, &job, &o, &ev, &rec, &replayed, &err),
                   TW_OK);
  assert_false(replayed);
  struct tw_store_owner_rec own;
  bool found = false;
  assert_int_equal(tw_store_job_owner_get(s, rec.id, &found, &own, NULL),
                   TW_OK);
  assert_true(found);
  assert_string_equal(own.principal, "alice");
  assert_int_equal(own.projected_uusd, 1234);
  struct tw_audit_filter f = {.limit = 10};
  struct tw_audit_entry *items = NULL;
  size_t k = 0;
  assert_int_equal(tw_audit_list(a, &f, &items, &k, NULL, NULL), TW_OK);
  assert_int_equal(k, 1);
  assert_string_equal(items[0].object, rec.id);
  assert_int_equal(items[0].at_ms, rec.created_ms);
  assert_string_equal(items[0].detail, "status=201");
  tw_audit_entries_free(items, k);

  assert_int_equal(
      tw_store_job_submit(s, &job, &o, &ev, &again, &replayed, &err), TW_OK);
  assert_true(replayed);
  assert_string_equal(again.id, rec.id);
  assert_int_equal(entries_now(a), 1);
  tw_job_rec_release(&again);

  job.spec_json = "{\"name\":\"other\"}";
  assert_int_equal(
      tw_store_job_submit(s, &job, &o, &ev, &again, &replayed, &err),
      TW_E_CONFLICT);
  assert_int_equal(entries_now(a), 1);
  int64_t n = 0;
  assert_int_equal(tw_audit_verify(a, &n, NULL, &err), TW_OK);
  assert_int_equal(n, 1);
  tw_job_rec_release(&rec);
  close_log(s, a);
}

/* When the entry cannot be written, neither are the job and its owner: a
 * job is never stored unaudited. */
static void submission_without_its_entry_stores_no_job(void **state) {
  (void)state;
  struct tw_store *s;
  struct tw_audit *a;
  open_log(&s, &a);
  close_log(s, a);
  sql("ALTER TABLE audit_log RENAME TO audit_gone");
  open_log(&s, &a);
  struct tw_job_new job = {
      .name = "x", .tenant = "ml", .project = "p", .spec_json = "{}"};
  struct tw_store_owner o = {.tenant = "ml", .project = "p", .principal = "b"};
  struct tw_audit_event ev = {.action = "POST /v1/jobs", .outcome = "ok"};
  struct tw_job_rec rec;
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_submit(s, &job, &o, &ev, &rec, NULL, &err),
                   TW_E_IO);
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(s, counts, NULL), TW_OK);
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    assert_int_equal(counts[i], 0);
  close_log(s, a);
  assert_int_equal(scalar("SELECT count(*) FROM tenancy_jobs"), 0);
  assert_int_equal(scalar("SELECT count(*) FROM jobs"), 0);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(intact_chain_verifies, setup, teardown),
      cmocka_unit_test_setup_teardown(altered_entry_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(
          altered_and_rehashed_entry_breaks_the_next_link, setup, teardown),
      cmocka_unit_test_setup_teardown(removed_entry_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(reordered_entries_are_named, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(concurrent_appends_form_one_chain, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(export_reverifies_from_json, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(entries_of_store_changes_join_the_chain,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(alert_without_its_entry_is_not_recorded,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          submission_stores_job_owner_and_entry_together, setup, teardown),
      cmocka_unit_test_setup_teardown(
          submission_without_its_entry_stores_no_job, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
