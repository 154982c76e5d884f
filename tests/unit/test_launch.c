/* The attempt state machine under lost answers, over the in-process fake
 * provider and a fake clock (docs/spot.md, "Attempt states"): each case
 * is one way a job used to end up with two instances, stuck, or run
 * again, scripted so that it failed before launches were settled by their
 * client token and completions recorded before the terminate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/core/store.h"
#include "broker/sched/reconcile.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/sched_fixture.h"

/* agents: tradewind-agent played on the instances (sfx_open_agents), for
 * the cases whose job runs to its end. */
static int setup_as(bool agents) {
  if ((agents ? sfx_open_agents : sfx_open)("launch", 1764460800000, NULL))
    return -1;
  struct tw_offer o;
  sfx_offer(&o, "r1", "r1a", "cpu.small", TW_MARKET_ON_DEMAND, 100000);
  o.vcpus = 4;
  o.memory_mib = 16384;
  sfx_add_offer(&o);
  sfx_offer(&o, "r1", "r1b", "cpu.small", TW_MARKET_ON_DEMAND, 120000);
  o.vcpus = 4;
  o.memory_mib = 16384;
  sfx_add_offer(&o);
  return sfx_start_sched(NULL);
}

static int setup(void **state) {
  (void)state;
  return setup_as(false);
}

static int setup_agents(void **state) {
  (void)state;
  return setup_as(true);
}

static int teardown(void **state) {
  (void)state;
  sfx_close();
  return 0;
}

static size_t attempts_of(const char *id, struct tw_attempt_rec **out) {
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, out, &n, NULL), TW_OK);
  return n;
}

/* One pass, then the invariant every sample must hold: at most one live
 * instance for the job. */
static void tick_one_instance(const char *id) {
  sfx_tick();
  assert_true(tw_fake_live_for_job(sfx_fake, id) <= 1);
}

static void timeouts_on_every_try_then_the_instance_appears(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\nduration: 60s\n", id);
  /* the launch is made but its answer times out, and the cloud is slow to
   * show it: the first two questions by token go unanswered too */
  tw_fake_lose(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "RequestTimeout", 1);
  tw_fake_fail(sfx_fake, TW_POP_FIND_BY_TOKEN, TW_E_RETRYABLE, "Unavailable",
               2);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  for (int i = 0; i < 4; i++) {
    tw_clock_advance(&sfx_clk, 2000);
    tick_one_instance(id);
  }
  /* found by its token and adopted: one instance, one attempt, running */
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), 1);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_string_equal(a[0].instance_id, "fake-a-1");
  free(a);
  tw_clock_advance(&sfx_clk, 61000);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
}

static void
unknown_then_absent_is_sent_again_with_the_same_token(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  /* the connection drops before the cloud got the request */
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "ConnectionReset", 1);
  tick_one_instance(id);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 0);
  tick_one_instance(id);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_FIND_BY_TOKEN), 1);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(sfx_fake, a[0].instance_id, &inst), TW_OK);
  assert_string_equal(inst.client_token, a[0].client_token);
  free(a);
}

static void a_definite_refusal_closes_the_attempt(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  tw_fake_fail_offer(sfx_fake, "fake-a:r1:r1a:cpu.small:on-demand",
                     TW_E_CAPACITY, "InsufficientInstanceCapacity");
  tick_one_instance(id);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 2);
  assert_string_equal(a[0].end_reason, "capacity");
  assert_int_equal(a[1].state, TW_ATTEMPT_PROVISIONING);
  free(a);
}

/* The first send lands after the resend was refused: the cloud served the
 * resend's connection first (a stopped or slow endpoint takes its queued
 * connections in any order).  Closing the attempt on that refusal placed
 * the job again beside the instance its first send then made (seen in the
 * chaos test with the fake stopped).  The attempt now stays launching and
 * its token is asked for once more a settle time later. */
static void a_refused_resend_waits_for_the_first_send(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  /* the instance is made, its answer lost; asked by token, the cloud does
   * not know it yet; the resend is refused */
  tw_fake_lose(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "RequestTimeout", 1);
  tick_one_instance(id);
  tw_fake_fail(sfx_fake, TW_POP_FIND_BY_TOKEN, TW_E_NOTFOUND, "", 1);
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_CAPACITY,
               "InsufficientInstanceCapacity", 1);
  tick_one_instance(id);
  tick_one_instance(id);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_int_equal(a[0].state, TW_ATTEMPT_LAUNCHING);
  free(a);
  assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  /* a settle time later the token finds it: the attempt goes on with it */
  tw_clock_advance(&sfx_clk, 61000);
  tick_one_instance(id);
  tick_one_instance(id);
  assert_int_equal(attempts_of(id, &a), 1);
  assert_string_equal(a[0].instance_id, "fake-a-1");
  free(a);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);

  /* nothing under the token a settle time after the refusal: closed, and
   * the job placed again */
  char id2[TW_JOB_ID_LEN + 1];
  sfx_submit("name: u\nresources: {cpus: 4}\n", id2);
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "ConnectionReset", 1);
  tick_one_instance(id2);
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_CAPACITY,
               "InsufficientInstanceCapacity", 1);
  tick_one_instance(id2);
  assert_int_equal(attempts_of(id2, &a), 1);
  assert_int_equal(a[0].state, TW_ATTEMPT_LAUNCHING);
  free(a);
  tw_clock_advance(&sfx_clk, 61000);
  tick_one_instance(id2);
  tick_one_instance(id2);
  assert_int_equal(attempts_of(id2, &a), 2);
  assert_string_equal(a[0].end_reason, "capacity");
  assert_int_equal(a[1].state, TW_ATTEMPT_PROVISIONING);
  free(a);
}

static void lost_terminate_answer_after_success(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\nduration: 60s\n", id);
  tick_one_instance(id);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  /* the terminate is done but its answer is lost */
  tw_fake_lose(sfx_fake, TW_POP_TERMINATE, TW_E_RETRYABLE, "RequestTimeout", 1);
  tw_clock_advance(&sfx_clk, 60000);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  for (int i = 0; i < 5; i++) {
    tw_clock_advance(&sfx_clk, 30000);
    tick_one_instance(id);
  }
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_SUCCEEDED);
  assert_int_equal(j.exit_code, 0);
  tw_job_rec_release(&j);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_string_equal(a[0].end_reason, "completed");
  free(a);
}

static void failed_terminate_after_success_is_tried_again(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\nduration: 60s\n", id);
  tick_one_instance(id);
  tick_one_instance(id);
  tw_fake_fail(sfx_fake, TW_POP_TERMINATE, TW_E_RETRYABLE, "Unavailable", 2);
  tw_clock_advance(&sfx_clk, 60000);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 1);
  tick_one_instance(id); /* fails again */
  tick_one_instance(id);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 0);
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
}

static void a_started_job_without_a_live_attempt_is_repaired(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  /* what a late failure did before: its attempt closed, the job left in
   * provisioning, the instance gone */
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  struct tw_attempt_close c = {
      .attempt_id = a[0].id, .end_reason = "failed", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(sfx_store, &c, NULL), TW_OK);
  assert_int_equal(
      tw_fake_set_state(sfx_fake, a[0].instance_id, TW_INST_TERMINATED), TW_OK);
  free(a);
  tick_one_instance(id);
  tick_one_instance(id);
  assert_int_equal(attempts_of(id, &a), 2);
  assert_int_equal(a[1].state == TW_ATTEMPT_ENDED, false);
  free(a);
  enum tw_job_state st = sfx_state_of(id);
  assert_true(st == TW_JOB_PROVISIONING || st == TW_JOB_RUNNING);
}

static void a_running_job_without_a_live_attempt_is_placed_again(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\nduration: 1h\n", id);
  tick_one_instance(id);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  struct tw_attempt_close c = {
      .attempt_id = a[0].id, .end_reason = "failed", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(sfx_store, &c, NULL), TW_OK);
  tw_fake_set_state(sfx_fake, a[0].instance_id, TW_INST_TERMINATED);
  free(a);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_int_equal(attempts_of(id, &a), 2);
  free(a);
}

/* A job left placing with nothing in the store's changes to tell (a write
 * that failed between two others leaves one so): the passes right after
 * do not sweep for it (nothing announced it), the sweep that runs unasked
 * at least every second finds it, and it waits to be placed again. */
static void a_job_left_placing_unannounced_is_found_within_a_second(
    void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  /* more than any offer holds: it stays pending, nothing of its own runs */
  sfx_submit("name: t\nresources: {cpus: 1024}\n", id);
  int64_t swept_us = tw_mono_us(); /* the first pass sweeps: read whole */
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PENDING);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_PLACING, .reason = "a pass cut short"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  sfx_tick();
  /* within the second since that sweep (a machine too slow for that
   * proves nothing here), no pass looked */
  if (tw_mono_us() - swept_us < 900 * 1000)
    assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  struct timespec pause = {.tv_sec = 1, .tv_nsec = 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  sfx_tick();
  struct tw_job_rec job = sfx_get(id);
  assert_int_equal(job.state, TW_JOB_PENDING);
  assert_string_equal(job.reason,
                      "placement was cut short; waiting to place again");
  tw_job_rec_release(&job);
}

static struct tw_reconcile *rec;
static int rec_passes;

static void reconcile_now(void *ctx) {
  (void)ctx;
  if (rec_passes++ == 0)
    return; /* the first launch: nothing yet */
  struct tw_reconcile_stats st;
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
}

static void adoption_then_late_failure_keeps_the_attempt(void **state) {
  (void)state;
  struct tw_reconcile_opts ro = {.store = sfx_store,
                                 .clock = &sfx_clk,
                                 .providers = &sfx_prov,
                                 .n_providers = 1};
  assert_int_equal(tw_reconcile_new(&ro, &rec, NULL), TW_OK);
  rec_passes = 0;
  tw_fake_on_launch(sfx_fake, reconcile_now, NULL);
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\nduration: 1h\n", id);
  /* the first launch makes the instance and loses its answer */
  tw_fake_lose(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "RequestTimeout", 1);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  /* the lookup by token misses it (the cloud's listing lags), so the
   * launch is sent again; while it is in flight the reconciler adopts the
   * instance, then the launch answers with a refusal */
  tw_fake_fail(sfx_fake, TW_POP_FIND_BY_TOKEN, TW_E_NOTFOUND, "", 1);
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_CAPACITY,
               "InsufficientInstanceCapacity", 1);
  tick_one_instance(id);
  assert_int_equal(rec_passes, 2);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_int_equal(a[0].state, TW_ATTEMPT_PROVISIONING);
  assert_string_equal(a[0].instance_id, "fake-a-1");
  free(a);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  tick_one_instance(id);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  /* and the reconciler leaves the adopted instance alone */
  struct tw_reconcile_stats st;
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.terminated, 0);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 1);
  tw_fake_on_launch(sfx_fake, NULL, NULL);
  tw_reconcile_free(rec);
  rec = NULL;
}

static void cancelled_while_unanswered_gives_the_instance_back(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  tw_fake_lose(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "RequestTimeout", 1);
  tick_one_instance(id);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  tick_one_instance(id);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 0);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_string_equal(a[0].end_reason, "cancelled");
  free(a);
}

static void no_second_attempt_while_one_is_live(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  struct tw_attempt_new an = {.job_id = id,
                              .provider = "fake-a",
                              .offer_id = "fake-a:r1:r1a:cpu.small:on-demand",
                              .market = "on-demand",
                              .price_uusd_per_hour = 100000};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(sfx_store, &an, &a, NULL), TW_OK);
  struct tw_err err = {0};
  assert_int_equal(tw_store_attempt_open(sfx_store, &an, &a, &err),
                   TW_E_CONFLICT);
  assert_non_null(strstr(err.msg, "still live"));
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_agents, teardown)
  const struct CMUnitTest tests[] = {
      TA(timeouts_on_every_try_then_the_instance_appears),
      T(unknown_then_absent_is_sent_again_with_the_same_token),
      T(a_definite_refusal_closes_the_attempt),
      T(a_refused_resend_waits_for_the_first_send),
      TA(lost_terminate_answer_after_success),
      TA(failed_terminate_after_success_is_tried_again),
      T(a_started_job_without_a_live_attempt_is_repaired),
      T(a_running_job_without_a_live_attempt_is_placed_again),
      T(a_job_left_placing_unannounced_is_found_within_a_second),
      T(adoption_then_late_failure_keeps_the_attempt),
      T(cancelled_while_unanswered_gives_the_instance_back),
      T(no_second_attempt_while_one_is_live),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
