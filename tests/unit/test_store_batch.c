/* One group-committed batch whose operations fail in different places,
 * on sqlite and, with --backend=postgres, on PostgreSQL, where the batch
 * runs in libpq's pipeline mode and a write's failure is learnt only when
 * a later result is read (broker/core/db_pg.c):
 *
 *   failures_stay_with_their_operation: the writer is held while 24
 *     operations queue, so they run as one batch; a third of them insert
 *     a key that already exists (the failure found after the operation
 *     returned, by the next one's read or by the COMMIT), some read the
 *     table after inserting (their read must see every earlier success of
 *     the batch and none of the failures), and two of those that read
 *     insert a duplicate (on PostgreSQL the failure is found by their own
 *     read, so it is their step's error, as on sqlite).
 *     Each caller hears its own outcome, every success is stored once,
 *     no failure's row is, and the store keeps writing afterwards.
 *   audit_entries_stay_with_their_operation: the same batch with every
 *     operation appending an audit entry (before its insert or after it):
 *     the entries are linked at the batch's end, so the log holds exactly
 *     the successes' entries, in the order they ran, numbered 1, 2, ...
 *     without a gap, each linked to the one before and its hash right,
 *     and each caller's seq is its own entry's.
 *   submissions_share_a_batch: 30 submissions (tw_store_job_submit, with
 *     an owner and an audit entry) queued behind the held writer with
 *     plain writes between them; on PostgreSQL each run of them is one
 *     statement (store__write_grouped).  Idempotency keys decide row by
 *     row: a key stored before with the same spec replays that job, with
 *     another spec is refused, a key used twice in the batch stores the
 *     first and replays it to the second.  Each caller hears its own
 *     outcome and the seq and id of its job as stored, a plain write
 *     reading the jobs counts every submission queued before it and none
 *     after, every stored job has its owner and one audit entry, the
 *     refused and the replayed none, and the chain is unbroken.
 *   a_failed_run_goes_one_by_one: a run whose statement fails (on
 *     PostgreSQL a name that is not UTF-8) runs each submission alone:
 *     the others are stored with owner and entry, the bad one is refused
 *     and leaves nothing.
 *   async_writes_answer_after_their_commit: 20 writes queued with
 *     tw_store_write_async behind the held writer, a third of them
 *     duplicates: none is answered while the writer is held, then all in
 *     one commit, each with its own outcome, the successes stored.
 *   a_launch_and_its_entry_commit_together: tw_store_attempt_launched_op
 *     with an audit entry stores the instance, moves the job to
 *     provisioning and appends the entry; the same write again (the
 *     attempt no longer launching) is refused and appends nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/core/db.h"
#include "broker/core/store.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_tenancy.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64], path[128];
static struct tw_test_pg pg;

static const char SQL_TABLE[] =
    "CREATE TABLE IF NOT EXISTS batch_t (k INTEGER PRIMARY KEY, v INTEGER"
    " NOT NULL)";
static const char SQL_INSERT[] = "INSERT INTO batch_t (k, v) VALUES (?1, ?2)";
static const char SQL_COUNT[] = "SELECT count(*) FROM batch_t WHERE k < ?1";

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-batch-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

struct op {
  struct tw_store *s;
  int key;      /* inserted */
  bool dup;     /* key exists already: the insert must fail */
  bool read;    /* then counts the keys below it */
  int64_t seen; /* what the read counted */
  int ran;      /* the order the writer ran the operations in */
  enum tw_rc rc;
  int audit;         /* 0 none, 1 an entry before the insert, 2 after it */
  char object[32];   /* the entry's object */
  int64_t audit_seq; /* its seq, set by the batch's end */
};

static enum tw_rc op_audit(struct tw_store *s, struct tw_db *db,
                           struct op *o, struct tw_err *err) {
  snprintf(o->object, sizeof o->object, "k-%d-%d", o->key, o->ran);
  struct tw_audit_event ev = {.principal = "test",
                              .tenant = "t",
                              .action = "batch.insert",
                              .object = o->object,
                              .outcome = "ok",
                              .detail = o->dup ? "dup" : ""};
  return tw_store_audit_append_in(s, db, &ev, 1000 + o->ran, &o->audit_seq,
                                  err);
}

static int ran_count;   /* the writer thread's alone */
static int n_queueing;  /* op threads about to queue (atomic) */

static enum tw_rc fail_db(struct tw_db *db, struct tw_err *err) {
  return tw_err_set(err, TW_E_IO, "test: %s", tw_db_errmsg(db));
}

static enum tw_rc op_fn(struct tw_store *s, struct tw_db *db, void *varg,
                        struct tw_err *err) {
  struct op *o = varg;
  o->ran = ++ran_count;
  enum tw_rc rc;
  if (o->audit == 1 && (rc = op_audit(s, db, o, err)))
    return rc;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_INSERT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, o->key);
  tw_db_bind_int64(st, 2, o->key * 10);
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return fail_db(db, err); /* sqlite: at once; PostgreSQL: maybe later */
  if (o->read) {
    if (!(st = tw_store_stmt(s, db, SQL_COUNT, err)))
      return TW_E_IO;
    tw_db_bind_int64(st, 1, o->key);
    r = tw_db_step(st);
    if (r == TW_DB_ROW)
      o->seen = tw_db_column_int64(st, 0);
    tw_db_reset(st);
    if (r != TW_DB_ROW)
      return fail_db(db, err);
  }
  if (o->audit == 2)
    return op_audit(s, db, o, err);
  return TW_OK;
}

static enum tw_rc table_fn(struct tw_store *s, struct tw_db *db, void *arg,
                           struct tw_err *err) {
  (void)s, (void)arg;
  return tw_db_exec(db, SQL_TABLE, NULL) == TW_DB_OK ? TW_OK
                                                     : fail_db(db, err);
}

/* The writer's first operation of a batch, held until the others queued. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_held;

static enum tw_rc gate_fn(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  (void)s, (void)db, (void)arg, (void)err;
  pthread_mutex_lock(&gate_mu);
  gate_held = true;
  pthread_cond_broadcast(&gate_cv);
  while (!gate_open)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  return TW_OK;
}

static void *gate_main(void *arg) {
  tw_store_write(arg, gate_fn, NULL, NULL);
  return NULL;
}

static void *op_main(void *arg) {
  struct op *o = arg;
  struct tw_err err = {0};
  __atomic_add_fetch(&n_queueing, 1, __ATOMIC_SEQ_CST);
  o->rc = tw_store_write(o->s, op_fn, o, &err);
  return NULL;
}

static int64_t count_all(struct tw_store *s) {
  struct op o = {.s = s, .key = 1000000, .read = true};
  /* a read inside a write: the count of every key below 1000000 */
  assert_int_equal(tw_store_write(s, op_fn, &o, NULL), TW_OK);
  return o.seen;
}

/* The log holds the successes' entries alone, in the order they ran, as
 * one unbroken chain; each caller's seq is its entry's. */
static void check_audit(struct tw_store *s, const struct op *ops, int n,
                        int ok) {
  struct tw_audit_filter f = {.limit = 1000};
  struct tw_audit_entry *e = NULL;
  size_t got = 0;
  struct tw_err err = {0};
  if (tw_store_audit_list(s, &f, &e, &got, &err))
    fail_msg("audit list: %s", err.msg);
  assert_int_equal((int)got, ok);
  char prev[TW_AUDIT_HASH_HEX] = TW_AUDIT_HASH_ZERO;
  int last_ran = 0;
  for (size_t k = 0; k < got; k++) {
    assert_int_equal(e[k].seq, (int64_t)k + 1);
    assert_string_equal(e[k].prev_hash, prev);
    char h[TW_AUDIT_HASH_HEX];
    tw_store_audit_hash(&e[k], prev, h);
    assert_string_equal(e[k].hash, h);
    memcpy(prev, h, sizeof prev);
    const struct op *o = NULL;
    for (int i = 0; i < n && !o; i++)
      if (!strcmp(ops[i].object, e[k].object))
        o = &ops[i];
    if (!o)
      fail_msg("entry %zu: %s is no operation's", k + 1, e[k].object);
    if (o->dup || o->rc != TW_OK)
      fail_msg("entry %zu: %s failed, its entry stayed", k + 1, e[k].object);
    assert_int_equal(o->audit_seq, e[k].seq);
    assert_true(o->ran > last_ran); /* in the order they ran */
    last_ran = o->ran;
  }
  tw_store_audit_entries_free(e, got);
}

static void run_batch(bool audit) {
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .readers = 2};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &s, &err))
    fail_msg("open: %s", err.msg);
  assert_int_equal(tw_store_write(s, table_fn, NULL, NULL), TW_OK);
  /* keys 1..8 exist */
  for (int k = 1; k <= 8; k++) {
    struct op o = {.s = s, .key = k};
    assert_int_equal(tw_store_write(s, op_fn, &o, NULL), TW_OK);
  }
  enum { N = 24 };
  struct op ops[N];
  pthread_t th[N], gate;
  gate_open = gate_held = false;
  n_queueing = 0;
  pthread_create(&gate, NULL, gate_main, s);
  pthread_mutex_lock(&gate_mu);
  while (!gate_held)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  for (int i = 0; i < N; i++) {
    /* every third a duplicate; every fourth reads after its insert (7
     * and 19 both) */
    bool dup = i % 3 == 1;
    ops[i] = (struct op){.s = s,
                         .key = dup ? 1 + i % 8 : 100 + i,
                         .dup = dup,
                         .read = i % 4 == 3,
                         .seen = -1,
                         .audit = audit ? 1 + i % 2 : 0};
    pthread_create(&th[i], NULL, op_main, &ops[i]);
    usleep(2000); /* most likely in this order in the writer's queue */
  }
  while (__atomic_load_n(&n_queueing, __ATOMIC_SEQ_CST) < N)
    usleep(1000);
  usleep(100000); /* from the count to the queue: a lock and a link */
  pthread_mutex_lock(&gate_mu);
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(gate, NULL);
  int ok = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    struct op *o = &ops[i];
    bool want_ok = !o->dup;
    if (want_ok != (o->rc == TW_OK))
      fail_msg("operation %d (key %d%s): rc %d", i, o->key,
               o->dup ? ", a duplicate" : "", o->rc);
    ok += want_ok;
    if (o->read && want_ok) {
      /* the 8 first keys and every success run before it whose key is
       * below its own (100 + j, j < i) */
      int64_t want = 8;
      for (int j = 0; j < i; j++)
        want += !ops[j].dup && ops[j].ran < o->ran;
      if (o->seen != want)
        fail_msg("operation %d read %lld keys, expected %lld", i,
                 (long long)o->seen, (long long)want);
    }
  }
  assert_int_equal(count_all(s), 8 + ok);
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  assert_true(st.max_batch >= N / 2); /* they did share a batch */
  if (audit)
    check_audit(s, ops, N, ok);
  tw_store_close(s);
}

static void failures_stay_with_their_operation(void **state) {
  (void)state;
  run_batch(false);
}

static void audit_entries_stay_with_their_operation(void **state) {
  (void)state;
  run_batch(true);
}

/* ---- submissions sharing a batch ---------------------------------------- */

struct sub {
  struct tw_store *s;
  int kind; /* 0 new, 1 replay of a stored key, 2 a stored key with
               another spec, 3 a key new to the batch, 4 that key again
               (same spec), 5 a plain write counting the jobs */
  char key[32], spec[64], name[32];
  struct tw_job_rec out;
  bool replayed;
  enum tw_rc rc;
  int64_t seen; /* kind 5 */
  int ran;      /* kind 5: when the writer ran it */
};

static const char SQL_JOBS[] = "SELECT count(*) FROM jobs";

static enum tw_rc count_jobs_fn(struct tw_store *s, struct tw_db *db,
                                void *varg, struct tw_err *err) {
  struct sub *o = varg;
  o->ran = ++ran_count;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_JOBS, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    o->seen = tw_db_column_int64(st, 0);
  tw_db_reset(st);
  if (r != TW_DB_ROW)
    return fail_db(db, err);
  /* its place among the submissions: its entry's in the chain */
  struct tw_audit_event ev = {.principal = "test",
                              .tenant = "t",
                              .action = "batch.count",
                              .object = o->name,
                              .outcome = "ok"};
  return tw_store_audit_append_in(s, db, &ev, 1, NULL, err);
}

static enum tw_rc submit(struct sub *o) {
  struct tw_job_new j = {.name = o->name,
                         .tenant = "t",
                         .project = "p",
                         .priority = 3,
                         .spec_json = o->spec,
                         .idem_key = o->key[0] ? o->key : NULL};
  struct tw_store_owner ow = {
      .tenant = "t", .project = "p", .principal = "alice", .projected_uusd = 7};
  struct tw_audit_event ev = {.principal = "alice",
                              .tenant = "t",
                              .action = "job.submit",
                              .outcome = "ok",
                              .detail = o->name};
  struct tw_err err = {0};
  return tw_store_job_submit(o->s, &j, &ow, &ev, &o->out, &o->replayed, &err);
}

static void *sub_main(void *arg) {
  struct sub *o = arg;
  __atomic_add_fetch(&n_queueing, 1, __ATOMIC_SEQ_CST);
  if (o->kind == 5)
    o->rc = tw_store_write(o->s, count_jobs_fn, o, NULL);
  else
    o->rc = submit(o);
  return NULL;
}

static void submissions_share_a_batch(void **state) {
  (void)state;
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .readers = 2};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &s, &err))
    fail_msg("open: %s", err.msg);
  /* two keys stored before the batch */
  struct sub old[2];
  for (int k = 0; k < 2; k++) {
    old[k] = (struct sub){.s = s};
    snprintf(old[k].key, sizeof old[k].key, "old-%d", k);
    snprintf(old[k].spec, sizeof old[k].spec, "{\"old\":%d}", k);
    snprintf(old[k].name, sizeof old[k].name, "old-%d", k);
    assert_int_equal(submit(&old[k]), TW_OK);
  }
  enum { N = 30 };
  struct sub ops[N];
  pthread_t th[N], gate;
  gate_open = gate_held = false;
  n_queueing = 0;
  ran_count = 0;
  pthread_create(&gate, NULL, gate_main, s);
  pthread_mutex_lock(&gate_mu);
  while (!gate_held)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  for (int i = 0; i < N; i++) {
    struct sub *o = &ops[i];
    /* kinds 0, 1, 3, 0, 4, 2, 0, 5, ... (a key's second use after its
     * first, a plain write every so often) */
    static const int order[10] = {0, 1, 3, 0, 4, 2, 0, 5, 0, 0};
    *o = (struct sub){.s = s, .kind = order[i % 10], .seen = -1};
    snprintf(o->name, sizeof o->name, "job-%d", i);
    snprintf(o->spec, sizeof o->spec, "{\"i\":%d,\"q\":\"a\\\"b\"}", i);
    switch (o->kind) {
    case 1: /* replay: the stored key, its spec */
    case 2: /* the stored key, another spec */
      snprintf(o->key, sizeof o->key, "old-%d", (i / 10) % 2);
      if (o->kind == 1)
        snprintf(o->spec, sizeof o->spec, "{\"old\":%d}", (i / 10) % 2);
      break;
    case 3:
      snprintf(o->key, sizeof o->key, "new-%d", i / 10);
      snprintf(o->spec, sizeof o->spec, "{\"new\":%d}", i / 10);
      break;
    case 4: /* the same key and spec as the kind 3 two before */
      snprintf(o->key, sizeof o->key, "new-%d", i / 10);
      snprintf(o->spec, sizeof o->spec, "{\"new\":%d}", i / 10);
      break;
    }
    pthread_create(&th[i], NULL, sub_main, o);
    usleep(2000); /* most likely in this order in the writer's queue */
  }
  while (__atomic_load_n(&n_queueing, __ATOMIC_SEQ_CST) < N)
    usleep(1000);
  usleep(100000);
  pthread_mutex_lock(&gate_mu);
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(gate, NULL);
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  int stored = 0;
  for (int i = 0; i < N; i++) {
    struct sub *o = &ops[i];
    switch (o->kind) {
    case 2:
      if (o->rc != TW_E_CONFLICT)
        fail_msg("submission %d: a key used with another spec: rc %d", i,
                 o->rc);
      assert_int_equal(o->out.seq, 0);
      continue;
    case 5:
      assert_int_equal(o->rc, TW_OK);
      continue;
    }
    if (o->rc != TW_OK)
      fail_msg("submission %d (kind %d): rc %d", i, o->kind, o->rc);
    assert_true(o->out.seq > 0);
    /* its record is the job as stored */
    struct tw_job_rec got = {0};
    assert_int_equal(tw_store_job_get(s, o->out.id, &got, &err), TW_OK);
    assert_int_equal(got.seq, o->out.seq);
    assert_string_equal(got.spec_json, o->spec);
    assert_int_equal(got.created_ms, o->out.created_ms);
    if (!o->replayed)
      assert_string_equal(got.name, o->name);
    tw_job_rec_release(&got);
    if (o->kind == 1) {
      assert_true(o->replayed);
      assert_string_equal(o->out.id, old[(i / 10) % 2].out.id);
      continue;
    }
    if (o->kind == 3 || o->kind == 4) {
      /* the pair's key: whichever ran first stored it, the other replays */
      struct sub *p = &ops[o->kind == 3 ? i + 2 : i - 2];
      assert_int_equal(p->rc, TW_OK);
      assert_string_equal(o->out.id, p->out.id);
      assert_true(o->replayed != p->replayed);
      if (o->replayed)
        continue;
    } else {
      assert_false(o->replayed);
    }
    stored++;
    bool found = false;
    struct tw_store_owner_rec rec;
    assert_int_equal(tw_store_job_owner_get(s, o->out.id, &found, &rec, &err),
                     TW_OK);
    assert_true(found);
    assert_string_equal(rec.principal, "alice");
    assert_int_equal(rec.projected_uusd, 7);
  }
  /* one entry per stored job, the two before first, one chain */
  struct tw_audit_filter f = {.limit = 1000};
  struct tw_audit_entry *e = NULL;
  size_t got = 0;
  if (tw_store_audit_list(s, &f, &e, &got, &err))
    fail_msg("audit list: %s", err.msg);
  assert_int_equal((int)got, 2 + stored + N / 10);
  char prev[TW_AUDIT_HASH_HEX] = TW_AUDIT_HASH_ZERO;
  int jobs_before = 0; /* the stored jobs' entries before this one */
  for (size_t k = 0; k < got; k++) {
    assert_int_equal(e[k].seq, (int64_t)k + 1);
    assert_string_equal(e[k].prev_hash, prev);
    char h[TW_AUDIT_HASH_HEX];
    tw_store_audit_hash(&e[k], prev, h);
    assert_string_equal(e[k].hash, h);
    memcpy(prev, h, sizeof prev);
    if (!strcmp(e[k].action, "batch.count")) {
      /* a plain write sees every job queued before it and none after */
      const struct sub *c = NULL;
      for (int i = 0; i < N && !c; i++)
        if (ops[i].kind == 5 && !strcmp(ops[i].name, e[k].object))
          c = &ops[i];
      assert_non_null(c);
      if (c->seen != jobs_before)
        fail_msg("%s counted %lld jobs, %d were queued before it", c->name,
                 (long long)c->seen, jobs_before);
      continue;
    }
    jobs_before++;
    int owners = 0;
    for (int i = 0; i < N; i++)
      if (ops[i].rc == TW_OK && ops[i].kind != 5 && !ops[i].replayed &&
          !strcmp(ops[i].out.id, e[k].object)) {
        owners++;
        assert_string_equal(e[k].detail, ops[i].name);
      }
    for (int i = 0; i < 2; i++)
      owners += !strcmp(old[i].out.id, e[k].object);
    if (owners != 1)
      fail_msg("entry %zu (%s): %d stored jobs", k + 1, e[k].object, owners);
  }
  tw_store_audit_entries_free(e, got);
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  assert_true(st.max_batch >= N / 2); /* they did share a batch */
  for (int i = 0; i < N; i++)
    tw_job_rec_release(&ops[i].out);
  for (int i = 0; i < 2; i++)
    tw_job_rec_release(&old[i].out);
  tw_store_close(s);
}

/* A run whose one statement fails (PostgreSQL refuses a name that is not
 * UTF-8, sqlite stores its bytes): every submission of it runs alone,
 * the others are stored with their owners and entries, the bad one alone
 * is refused, nothing of it stored. */
static void a_failed_run_goes_one_by_one(void **state) {
  (void)state;
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .readers = 2};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &s, &err))
    fail_msg("open: %s", err.msg);
  enum { N = 8, BAD = 3 };
  struct sub ops[N];
  pthread_t th[N], gate;
  gate_open = gate_held = false;
  n_queueing = 0;
  pthread_create(&gate, NULL, gate_main, s);
  pthread_mutex_lock(&gate_mu);
  while (!gate_held)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  for (int i = 0; i < N; i++) {
    ops[i] = (struct sub){.s = s};
    snprintf(ops[i].name, sizeof ops[i].name, i == BAD ? "bad-\xff\xfe" : "ok-%d",
             i);
    snprintf(ops[i].spec, sizeof ops[i].spec, "{\"i\":%d}", i);
    pthread_create(&th[i], NULL, sub_main, &ops[i]);
  }
  while (__atomic_load_n(&n_queueing, __ATOMIC_SEQ_CST) < N)
    usleep(1000);
  usleep(100000);
  pthread_mutex_lock(&gate_mu);
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(gate, NULL);
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  bool bad_refused = pg.on; /* sqlite stores any bytes */
  int stored = 0;
  for (int i = 0; i < N; i++) {
    struct sub *o = &ops[i];
    if (i == BAD && bad_refused) {
      assert_int_not_equal(o->rc, TW_OK);
      continue;
    }
    if (o->rc != TW_OK)
      fail_msg("submission %d: rc %d", i, o->rc);
    struct tw_job_rec got = {0};
    assert_int_equal(tw_store_job_get(s, o->out.id, &got, &err), TW_OK);
    assert_int_equal(got.seq, o->out.seq);
    assert_string_equal(got.name, o->name);
    tw_job_rec_release(&got);
    bool found = false;
    struct tw_store_owner_rec rec;
    assert_int_equal(tw_store_job_owner_get(s, o->out.id, &found, &rec, &err),
                     TW_OK);
    assert_true(found);
    stored++;
  }
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(s, counts, NULL), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], stored);
  struct tw_audit_filter f = {.limit = 100};
  struct tw_audit_entry *e = NULL;
  size_t got = 0;
  if (tw_store_audit_list(s, &f, &e, &got, &err))
    fail_msg("audit list: %s", err.msg);
  assert_int_equal((int)got, stored);
  char prev[TW_AUDIT_HASH_HEX] = TW_AUDIT_HASH_ZERO;
  for (size_t k = 0; k < got; k++) {
    assert_int_equal(e[k].seq, (int64_t)k + 1);
    assert_string_equal(e[k].prev_hash, prev);
    char h[TW_AUDIT_HASH_HEX];
    tw_store_audit_hash(&e[k], prev, h);
    assert_string_equal(e[k].hash, h);
    memcpy(prev, h, sizeof prev);
    if (bad_refused) /* the refused one left no entry */
      assert_string_not_equal(e[k].detail, ops[BAD].name);
  }
  tw_store_audit_entries_free(e, got);
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  assert_true(st.max_batch >= N / 2);
  for (int i = 0; i < N; i++)
    tw_job_rec_release(&ops[i].out);
  tw_store_close(s);
}

/* tw_store_write_async's answers, counted under amu. */
static pthread_mutex_t amu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t acv = PTHREAD_COND_INITIALIZER;
static int n_answered;

struct async_op {
  struct op o;
  struct tw_err err;
  enum tw_rc rc;
  bool answered;
};

static void async_done(void *ctx, enum tw_rc rc) {
  struct async_op *a = ctx;
  pthread_mutex_lock(&amu);
  a->rc = rc;
  a->answered = true;
  n_answered++;
  pthread_cond_broadcast(&acv);
  pthread_mutex_unlock(&amu);
}

static void async_writes_answer_after_their_commit(void **state) {
  (void)state;
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .readers = 2};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &s, &err))
    fail_msg("open: %s", err.msg);
  assert_int_equal(tw_store_write(s, table_fn, NULL, NULL), TW_OK);
  for (int k = 1; k <= 8; k++) {
    struct op o = {.s = s, .key = k};
    assert_int_equal(tw_store_write(s, op_fn, &o, NULL), TW_OK);
  }
  pthread_t gate;
  gate_open = gate_held = false;
  pthread_create(&gate, NULL, gate_main, s);
  pthread_mutex_lock(&gate_mu);
  while (!gate_held)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  struct tw_store_stats st0;
  tw_store_stats(s, &st0);
  enum { N = 20 };
  static struct async_op ops[N];
  n_answered = 0;
  for (int i = 0; i < N; i++) {
    bool dup = i % 3 == 1;
    ops[i] = (struct async_op){
        .o = {.s = s, .key = dup ? 1 + i % 8 : 200 + i, .dup = dup}};
    assert_int_equal(tw_store_write_async(s, op_fn, &ops[i].o, &ops[i].err,
                                          async_done, &ops[i]),
                     TW_OK);
  }
  usleep(50 * 1000);
  pthread_mutex_lock(&amu);
  assert_int_equal(n_answered, 0); /* nothing answered before its commit */
  pthread_mutex_unlock(&amu);
  pthread_mutex_lock(&gate_mu);
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(gate, NULL);
  pthread_mutex_lock(&amu);
  while (n_answered < N)
    pthread_cond_wait(&acv, &amu);
  pthread_mutex_unlock(&amu);
  int ok = 0;
  for (int i = 0; i < N; i++) {
    assert_true(ops[i].answered);
    if (ops[i].o.dup) {
      assert_int_not_equal(ops[i].rc, TW_OK);
      assert_int_equal(ops[i].err.rc, ops[i].rc);
    } else {
      assert_int_equal(ops[i].rc, TW_OK);
      ok++;
    }
  }
  struct tw_store_stats st1;
  tw_store_stats(s, &st1);
  /* the gate's transaction, then one for all twenty */
  assert_int_equal(st1.commits - st0.commits, 2);
  assert_int_equal(count_all(s), 8 + ok);
  tw_store_close(s);
}

static void a_launch_and_its_entry_commit_together(void **state) {
  (void)state;
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .readers = 2};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &s, &err))
    fail_msg("open: %s", err.msg);
  struct tw_job_new req = {.name = "l",
                           .tenant = "t",
                           .project = "p",
                           .spec_json = "{\"name\":\"l\"}"};
  struct tw_job_rec job;
  if (tw_store_job_create(s, &req, &job, NULL, &err))
    fail_msg("create: %s", err.msg);
  struct tw_attempt_new an = {.job_id = job.id,
                              .provider = "fake",
                              .offer_id = "fake:r1:r1a:small:spot",
                              .market = "spot",
                              .price_uusd_per_hour = 1000};
  struct tw_attempt_rec a;
  if (tw_store_attempt_open(s, &an, &a, &err))
    fail_msg("open attempt: %s", err.msg);
  struct tw_audit_event ev = {.principal = "sched",
                              .tenant = "t",
                              .action = "sched.place",
                              .object = job.id,
                              .outcome = "ok",
                              .detail = "attempt 1"};
  struct tw_store_launched l = {.attempt_id = a.id,
                                .instance_id = "i-1",
                                .placement_json = "{\"instance_id\":\"i-1\"}",
                                .audit = &ev,
                                .audit_at_ms = 1000};
  assert_int_equal(tw_store_write(s, tw_store_attempt_launched_op, &l, &err),
                   TW_OK);
  struct tw_job_rec got;
  assert_int_equal(tw_store_job_get(s, job.id, &got, &err), TW_OK);
  assert_int_equal(got.state, TW_JOB_PROVISIONING);
  tw_job_rec_release(&got);
  struct tw_audit_filter f = {.limit = 100};
  struct tw_audit_entry *e = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_audit_list(s, &f, &e, &n, &err), TW_OK);
  assert_int_equal((int)n, 1);
  assert_string_equal(e[0].action, "sched.place");
  assert_string_equal(e[0].object, job.id);
  tw_store_audit_entries_free(e, n);
  /* again: the attempt is provisioning, the write refused, no entry */
  l.instance_id = "i-2";
  assert_int_equal(tw_store_write(s, tw_store_attempt_launched_op, &l, &err),
                   TW_E_CONFLICT);
  assert_int_equal(tw_store_audit_list(s, &f, &e, &n, &err), TW_OK);
  assert_int_equal((int)n, 1);
  tw_store_audit_entries_free(e, n);
  struct tw_attempt_rec *as = NULL;
  assert_int_equal(tw_store_attempts_of(s, job.id, &as, &n, &err), TW_OK);
  assert_int_equal((int)n, 1);
  assert_string_equal(as[0].instance_id, "i-1");
  free(as);
  tw_job_rec_release(&job);
  tw_store_close(s);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(failures_stay_with_their_operation,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(audit_entries_stay_with_their_operation,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(submissions_share_a_batch, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_failed_run_goes_one_by_one, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(async_writes_answer_after_their_commit,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_launch_and_its_entry_commit_together,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
