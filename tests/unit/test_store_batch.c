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
 *     and each caller's seq is its own entry's. */
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
