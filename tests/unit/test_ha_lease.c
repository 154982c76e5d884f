/* The leader lease and its fence (broker/core/store_ha.h), on sqlite and,
 * with --backend=postgres, on PostgreSQL (tests/unit/pg_store.h):
 *
 *   lease_is_taken_renewed_and_taken_over: a second replica cannot take a
 *     live lease; the holder renews at the same epoch; once it expires the
 *     other takes it at the next epoch and the old holder's renewal fails.
 *   stale_leaders_write_is_refused: two brokers on one database; after the
 *     takeover the old leader's job is refused whole (TW_E_CONFLICT,
 *     stale-epoch) and never lands, the new leader's does.
 *   a_race_for_an_expired_lease_has_one_winner: two replicas try at the
 *     same instant, round after round: each epoch has exactly one holder.
 *   replicas_are_listed: each replica's last beat, leading or not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "broker/core/store_ha.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define T0 1764460800000LL
#define LEASE 8000

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_test_pg pg;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-ha-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, T0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

/* Two of these on one database are two brokers. */
static struct tw_store *open_store(void) {
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .readers = 2};
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &s, &err))
    fail_msg("open: %s", err.msg);
  return s;
}

static struct tw_lease try_lease(struct tw_store *s, const char *who,
                                 int64_t epoch, int64_t now) {
  struct tw_lease l;
  struct tw_err err = {0};
  if (tw_store_lease_try(s, who, epoch, now, LEASE, &l, &err))
    fail_msg("lease: %s", err.msg);
  return l;
}

static void lease_is_taken_renewed_and_taken_over(void **state) {
  (void)state;
  struct tw_store *a = open_store(), *b = open_store();
  struct tw_lease l = try_lease(a, "a", 0, T0);
  assert_true(l.mine);
  assert_int_equal(l.epoch, 1);
  assert_int_equal(l.expires_ms, T0 + LEASE);
  /* b cannot take a live lease */
  l = try_lease(b, "b", 0, T0 + 1000);
  assert_false(l.mine);
  assert_string_equal(l.holder, "a");
  /* a renews: same epoch, later expiry */
  l = try_lease(a, "a", 1, T0 + 2000);
  assert_true(l.mine);
  assert_int_equal(l.epoch, 1);
  assert_int_equal(l.expires_ms, T0 + 2000 + LEASE);
  /* not yet expired at its last instant */
  l = try_lease(b, "b", 0, T0 + 2000 + LEASE - 1);
  assert_false(l.mine);
  /* expired: b takes it at the next epoch */
  l = try_lease(b, "b", 0, T0 + 2000 + LEASE);
  assert_true(l.mine);
  assert_int_equal(l.epoch, 2);
  assert_int_equal(l.takeovers, 2);
  /* a's renewal at its old epoch fails, even with b's lease live */
  l = try_lease(a, "a", 1, T0 + 2000 + LEASE + 1);
  assert_false(l.mine);
  assert_string_equal(l.holder, "b");
  assert_int_equal(l.epoch, 2);
  /* a clean stop hands over at once */
  struct tw_err err = {0};
  assert_int_equal(tw_store_lease_release(b, "b", 2, &err), TW_OK);
  l = try_lease(a, "a", 0, T0 + 2000 + LEASE + 2);
  assert_true(l.mine);
  assert_int_equal(l.epoch, 3);
  tw_store_close(a);
  tw_store_close(b);
}

static enum tw_rc create_job(struct tw_store *s, const char *name,
                             struct tw_err *err) {
  struct tw_job_new req = {.name = name,
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = "{\"image\":\"x\"}"};
  struct tw_job_rec rec = {0};
  bool replayed = false;
  enum tw_rc rc = tw_store_job_create(s, &req, &rec, &replayed, err);
  if (rc == TW_OK)
    tw_job_rec_release(&rec);
  return rc;
}

static size_t count_jobs(struct tw_store *s) {
  struct tw_job_filter f = {.limit = 100};
  struct tw_job_rec *recs = NULL;
  size_t n = 0;
  int64_t next = 0;
  struct tw_err err = {0};
  if (tw_store_job_list(s, &f, &recs, &n, &next, &err))
    fail_msg("list: %s", err.msg);
  for (size_t i = 0; i < n; i++)
    tw_job_rec_release(&recs[i]);
  free(recs);
  return n;
}

static void stale_leaders_write_is_refused(void **state) {
  (void)state;
  struct tw_store *a = open_store(), *b = open_store();
  struct tw_err err = {0};
  struct tw_lease l = try_lease(a, "a", 0, T0);
  assert_true(l.mine);
  tw_store_fence(a, "a", l.epoch);
  assert_int_equal(create_job(a, "before", &err), TW_OK);
  /* a stops answering (SIGSTOP, a partition); its lease runs out and b
   * takes over */
  l = try_lease(b, "b", 0, T0 + LEASE + 1);
  assert_true(l.mine);
  assert_int_equal(l.epoch, 2);
  tw_store_fence(b, "b", l.epoch);
  /* a comes back still believing it leads: its write is refused whole */
  struct tw_err e2 = {0};
  assert_int_equal(create_job(a, "stale", &e2), TW_E_CONFLICT);
  assert_string_equal(e2.detail, TW_DETAIL_STALE_EPOCH);
  assert_non_null(strstr(e2.msg, "epoch 1"));
  assert_int_equal(tw_store_fence_refusals(a), 1);
  /* nothing of it landed; the new leader writes */
  assert_int_equal(count_jobs(b), 1);
  assert_int_equal(create_job(b, "after", &err), TW_OK);
  assert_int_equal(count_jobs(a), 2);
  /* the store's health is not hurt by a refusal */
  struct tw_store_health h;
  tw_store_health(a, &h);
  assert_int_not_equal(h.state, TW_STORE_IO);
  /* unfenced (a follower serving the API), a writes again */
  tw_store_fence(a, NULL, 0);
  assert_int_equal(create_job(a, "follower", &err), TW_OK);
  assert_int_equal(count_jobs(b), 3);
  tw_store_close(a);
  tw_store_close(b);
}

struct racer {
  struct tw_store *s;
  const char *who;
  int64_t now;
  pthread_barrier_t *go;
  struct tw_lease got;
  enum tw_rc rc;
};

static void *race_main(void *arg) {
  struct racer *r = arg;
  struct tw_err err = {0};
  pthread_barrier_wait(r->go);
  r->rc = tw_store_lease_try(r->s, r->who, 0, r->now, LEASE, &r->got, &err);
  return NULL;
}

static void a_race_for_an_expired_lease_has_one_winner(void **state) {
  (void)state;
  struct tw_store *a = open_store(), *b = open_store();
  int64_t now = T0;
  for (int round = 1; round <= 10; round++) {
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    struct racer ra = {.s = a, .who = "a", .now = now, .go = &go};
    struct racer rb = {.s = b, .who = "b", .now = now, .go = &go};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race_main, &ra);
    pthread_create(&tb, NULL, race_main, &rb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(ra.rc, TW_OK);
    assert_int_equal(rb.rc, TW_OK);
    assert_int_equal((int)ra.got.mine + (int)rb.got.mine, 1);
    struct tw_lease *w = ra.got.mine ? &ra.got : &rb.got;
    assert_int_equal(w->epoch, round);
    now += LEASE; /* the winner's lease has run out at the next round */
  }
  tw_store_close(a);
  tw_store_close(b);
}

static void replicas_are_listed(void **state) {
  (void)state;
  struct tw_store *a = open_store();
  struct tw_err err = {0};
  struct tw_replica r1 = {.name = "r1", .url = "http://127.0.0.1:1",
                          .started_ms = T0, .seen_ms = T0 + 5, .epoch = 3};
  struct tw_replica r2 = {.name = "r2", .url = "http://127.0.0.1:2",
                          .started_ms = T0, .seen_ms = T0 + 6};
  assert_int_equal(tw_store_replica_beat(a, &r2, &err), TW_OK);
  assert_int_equal(tw_store_replica_beat(a, &r1, &err), TW_OK);
  r1.seen_ms = T0 + 9;
  assert_int_equal(tw_store_replica_beat(a, &r1, &err), TW_OK);
  struct tw_replica *rs = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_replicas(a, &rs, &n, &err), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(rs[0].name, "r1");
  assert_int_equal(rs[0].seen_ms, T0 + 9);
  assert_int_equal(rs[0].epoch, 3);
  assert_string_equal(rs[1].url, "http://127.0.0.1:2");
  assert_int_equal(rs[1].epoch, 0);
  free(rs);
  tw_store_close(a);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(lease_is_taken_renewed_and_taken_over,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(stale_leaders_write_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          a_race_for_an_expired_lease_has_one_winner, setup, teardown),
      cmocka_unit_test_setup_teardown(replicas_are_listed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
