/* tw_live (broker/core/live.h): the live attempts kept from the store's
 * changes agree with a whole read after every kind of change, and are read
 * whole when they must be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/core/live.h"
#include "broker/core/store.h"
#include "tests/unit/tmp_store.h"

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store, *other;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-live-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1700000000000);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  if (tw_store_open(&o, &store, &err) || tw_store_open(&o, &other, &err))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_store_close(other);
  tw_store_close(store);
  tw_test_store_remove(path, dir);
  return 0;
}

/* A job and its attempt opened through s; the attempt's id. */
static int64_t open_attempt(struct tw_store *s) {
  struct tw_err err = {0};
  struct tw_job_new jn = {.name = "train",
                          .tenant = "ml",
                          .project = "vision",
                          .spec_json = "{\"name\":\"train\"}"};
  struct tw_job_rec job;
  bool replayed;
  assert_int_equal(tw_store_job_create(s, &jn, &job, &replayed, &err), TW_OK);
  struct tw_attempt_new an = {.job_id = job.id,
                              .provider = "aws-main",
                              .offer_id = "o-1",
                              .market = "on-demand",
                              .price_uusd_per_hour = 1000000,
                              .reason = "test"};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(s, &an, &a, &err), TW_OK);
  tw_job_rec_release(&job);
  return a.id;
}

static void end_attempt(struct tw_store *s, int64_t id) {
  struct tw_err err = {0};
  struct tw_attempt_close c = {
      .attempt_id = id, .end_reason = "completed", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(s, &c, &err), TW_OK);
}

/* l holds exactly what a whole read gives, state for state. */
static void agrees_with_the_store(const struct tw_live *l) {
  struct tw_err err = {0};
  struct tw_attempt_rec *all = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_live(store, &all, &n, &err), TW_OK);
  assert_int_equal(l->n, n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(l->at[i].id, all[i].id);
    assert_int_equal(l->at[i].state, all[i].state);
    if (i)
      assert_true(l->at[i - 1].id < l->at[i].id);
  }
  free(all);
}

static struct tw_live_sync sync_at(struct tw_live *l, int64_t now) {
  struct tw_err err = {0};
  struct tw_live_sync y;
  assert_int_equal(tw_live_sync(l, store, now, 10000, &y, &err), TW_OK);
  free(y.jobs);
  y.jobs = NULL;
  return y;
}

static void follows_opens_ends_and_other_writers(void **state) {
  (void)state;
  struct tw_live l = {0};
  int64_t a = open_attempt(store), b = open_attempt(store);
  struct tw_live_sync y = sync_at(&l, 0);
  assert_true(y.whole); /* the first look reads whole */
  agrees_with_the_store(&l);
  assert_int_equal(l.n, 2);
  /* nothing changed: nothing read, nothing changed */
  y = sync_at(&l, 1);
  assert_false(y.whole);
  assert_false(y.changed);
  /* a new one above the last is appended; an end drops */
  int64_t c = open_attempt(store);
  end_attempt(store, a);
  y = sync_at(&l, 2);
  assert_false(y.whole);
  assert_true(y.changed);
  assert_true(y.dropped);
  assert_true(y.ended);
  agrees_with_the_store(&l);
  assert_null(tw_live_find(&l, a));
  assert_non_null(tw_live_find(&l, b));
  assert_non_null(tw_live_find(&l, c));
  /* one opened and ended between two looks was never held: nothing is
   * dropped, but an attempt ended (a job may be left without one) */
  int64_t gone = open_attempt(store);
  end_attempt(store, gone);
  y = sync_at(&l, 2);
  assert_false(y.dropped);
  assert_true(y.ended);
  assert_null(tw_live_find(&l, gone));
  /* another writer's attempt (not in this store's feed) below one of
   * ours: unseen until this store writes it, then merged in order */
  int64_t d = open_attempt(other);
  int64_t e = open_attempt(store);
  assert_true(d < e);
  y = sync_at(&l, 3);
  assert_false(y.whole);
  assert_null(tw_live_find(&l, d));
  struct tw_err err = {0};
  assert_int_equal(tw_store_attempt_launched(store, d, "i-d", "{}", &err),
                   TW_OK);
  y = sync_at(&l, 4);
  assert_false(y.whole);
  assert_false(y.dropped);
  assert_false(y.ended); /* opens and moves only */
  agrees_with_the_store(&l);
  assert_non_null(tw_live_find(&l, d));
  /* another writer's end: seen at the whole read, 10 s after the last */
  end_attempt(other, b);
  y = sync_at(&l, 5);
  assert_non_null(tw_live_find(&l, b));
  y = sync_at(&l, 10000);
  assert_true(y.whole);
  agrees_with_the_store(&l);
  assert_null(tw_live_find(&l, b));
  /* a clock going back reads whole */
  y = sync_at(&l, 9000);
  assert_true(y.whole);
  assert_int_equal(l.n, 3); /* c, d, e */
  tw_live_release(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(follows_opens_ends_and_other_writers,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
