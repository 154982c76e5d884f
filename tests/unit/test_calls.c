/* The scheduler's cloud calls off its thread (broker/sched/calls.c), over
 * two in-process fake providers and a fake clock: while every launch on
 * fake-a hangs, jobs on fake-b are placed, launched, run and completed
 * with every pass inside its budget; a launch past its call deadline stays
 * launching (unknown, never a failure) and is settled by its token; a
 * drain hands back what answers by its deadline and abandons the rest,
 * which the next start resumes with the same token.  Describes and
 * terminates go the same way: while fake-a's describes hang, fake-b's
 * jobs run to their end; a describe past its deadline is no answer (the
 * attempt is not taken for vanished); a hung terminate blocks no pass and
 * is tried again after its deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/agent_play.h"
#include "tests/unit/sched_fixture.h"

#define BUDGET_MS 100

static struct tw_provider *prov_b;
static struct tw_fake *fake_b;
static struct tw_provider *provs[2];
/* the agents: fake-b's instances always run theirs; fake-a's too when
 * the case opens the fixture with them (then this is sfx_play) */
static struct tw_play *play;

static struct tw_sched *new_sched(void) {
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = provs,
                            .n_providers = 2,
                            .pass_budget_ms = BUDGET_MS,
                            .agent = tw_play_agent(play)};
  struct tw_sched *s = NULL;
  assert_int_equal(tw_sched_new(&o, &s, NULL), TW_OK);
  return s;
}

static int setup_as(bool agents_a) {
  if ((agents_a ? sfx_open_agents : sfx_open)("calls", 1764460800000, NULL))
    return -1;
  struct tw_node *cfg = tw_play_provider_cfg();
  enum tw_rc rc = tw_provider_new_ops(&tw_provider_fake, "fake-b", cfg,
                                      &sfx_clk, &prov_b, NULL);
  tw_node_free(cfg);
  if (rc)
    return -1;
  fake_b = tw_fake_of(prov_b);
  if (sfx_play)
    tw_play_also(sfx_play, prov_b);
  play = sfx_play ? sfx_play : tw_play_new(sfx_store, &sfx_clk, prov_b);
  if (!play)
    return -1;
  provs[0] = sfx_prov;
  provs[1] = prov_b;
  /* fake-a: 4 cpus, cheap; fake-b: the only one with 8 cpus */
  struct tw_offer o;
  sfx_offer(&o, "r1", "r1a", "cpu.small", TW_MARKET_ON_DEMAND, 100000);
  o.vcpus = 4;
  o.memory_mib = 16384;
  sfx_add_offer(&o);
  sfx_offer(&o, "r2", "r2a", "cpu.large", TW_MARKET_ON_DEMAND, 200000);
  snprintf(o.account, sizeof o.account, "fake-b");
  o.vcpus = 8;
  o.memory_mib = 32768;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake_b, &o);
  sfx_sched = new_sched();
  return 0;
}

static int setup(void **state) {
  (void)state;
  return setup_as(false);
}

static int setup_agents_a(void **state) {
  (void)state;
  return setup_as(true);
}

static int teardown(void **state) {
  (void)state;
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  tw_fake_hold(sfx_fake, TW_POP_FIND_BY_TOKEN, false);
  tw_fake_hold(sfx_fake, TW_POP_DESCRIBE, false);
  tw_fake_hold(sfx_fake, TW_POP_TERMINATE, false);
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  if (play != sfx_play)
    tw_play_free(play);
  play = NULL;
  tw_provider_free(prov_b);
  sfx_close();
  return 0;
}

/* One pass; fails the test when it waited for a held call.  Held calls
 * block until released, so any finite bound tells a pass that waited from
 * one that did not; the bound is generous for a loaded machine (the
 * budget's own figure is bench-schedule's). */
static int64_t timed_tick(struct tw_sched *s) {
  tw_play_step(play); /* the agents, then the pass */
  int64_t t0 = tw_sched_mono_ms();
  tw_sched_tick(s);
  int64_t took = tw_sched_mono_ms() - t0;
  assert_true(took < BUDGET_MS + 3000);
  return took;
}

static size_t attempts_of(const char *id, struct tw_attempt_rec **out) {
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, out, &n, NULL), TW_OK);
  return n;
}

static void a_hung_cloud_does_not_stall_another(void **state) {
  (void)state;
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, true);
  tw_fake_hold(sfx_fake, TW_POP_FIND_BY_TOKEN, true);
  char on_a[TW_JOB_ID_LEN + 1];
  sfx_submit("name: a\nresources: {cpus: 4}\nduration: 60s\n", on_a);
  timed_tick(sfx_sched);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_LAUNCH), 1);
  enum { NB = 20 };
  char on_b[NB][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < NB; i++)
    sfx_submit("name: b\nresources: {cpus: 8}\nduration: 10s\n", on_b[i]);
  timed_tick(sfx_sched);
  /* launched while fake-a still hangs: in this pass, or in the next few
   * on a slow (sanitized) build where 20 answers outlast one 100 ms
   * budget; every pass is bounded by timed_tick */
  int launched = 0;
  for (int k = 0; k < 20; k++) {
    launched = 0;
    for (int i = 0; i < NB; i++) {
      enum tw_job_state st = sfx_state_of(on_b[i]);
      launched += st == TW_JOB_PROVISIONING || st == TW_JOB_RUNNING;
    }
    if (launched == NB)
      break;
    timed_tick(sfx_sched);
  }
  assert_int_equal(launched, NB);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_LAUNCH), 1);
  for (int k = 0; k < 4; k++) {
    tw_clock_advance(&sfx_clk, 5000);
    timed_tick(sfx_sched);
  }
  for (int i = 0; i < NB; i++)
    assert_int_equal(sfx_state_of(on_b[i]), TW_JOB_SUCCEEDED);
  assert_int_equal(tw_fake_instances_created(fake_b), NB);
  /* fake-a's job waits, its one launch in flight, nothing sent twice */
  assert_int_equal(sfx_state_of(on_a), TW_JOB_PLACING);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_LAUNCH), 1);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_FIND_BY_TOKEN), 0);
  /* the cloud answers: the launch's outcome is applied */
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  tw_fake_hold(sfx_fake, TW_POP_FIND_BY_TOKEN, false);
  tw_clock_advance(&sfx_clk, 1000);
  usleep(50 * 1000);
  timed_tick(sfx_sched);
  enum tw_job_state st = sfx_state_of(on_a);
  assert_true(st == TW_JOB_PROVISIONING || st == TW_JOB_RUNNING);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
}

static void past_its_deadline_a_launch_stays_launching(void **state) {
  (void)state;
  sfx_prov->call_deadline_ms = 150;
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, true);
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: a\nresources: {cpus: 4}\nduration: 60s\n", id);
  timed_tick(sfx_sched);
  usleep(200 * 1000);
  tw_clock_advance(&sfx_clk, 2000);
  timed_tick(sfx_sched); /* past the deadline: unknown, not refused */
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_int_equal(a[0].state, TW_ATTEMPT_LAUNCHING);
  free(a);
  assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  /* its worker still waits: no second call for the attempt meanwhile */
  tw_clock_advance(&sfx_clk, 2000);
  timed_tick(sfx_sched);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_FIND_BY_TOKEN), 0);
  /* the cloud made the instance after all: found by its token */
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  usleep(50 * 1000);
  for (int k = 0; k < 3 && sfx_state_of(id) == TW_JOB_PLACING; k++) {
    tw_clock_advance(&sfx_clk, 4000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), 1);
  assert_int_equal(attempts_of(id, &a), 1);
  free(a);
}

static void
a_drain_abandons_at_its_deadline_and_the_next_start_resumes(void **state) {
  (void)state;
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, true);
  char ids[3][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 3; i++)
    sfx_submit("name: a\nresources: {cpus: 4}\nduration: 60s\n", ids[i]);
  timed_tick(sfx_sched);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_LAUNCH), 3);
  int64_t t0 = tw_sched_mono_ms();
  assert_int_equal(tw_sched_drain(sfx_sched, t0 + 300), 3);
  int64_t took = tw_sched_mono_ms() - t0;
  assert_true(took >= 290 && took < 600);
  /* the process would exit here; the fake cloud finishes meanwhile */
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  usleep(100 * 1000);
  tw_sched_free(sfx_sched);
  for (int i = 0; i < 3; i++)
    assert_int_equal(sfx_state_of(ids[i]), TW_JOB_PLACING);
  /* the next start: each settled by its token, one instance each */
  sfx_sched = new_sched();
  timed_tick(sfx_sched);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(sfx_state_of(ids[i]), TW_JOB_PROVISIONING);
    assert_int_equal(tw_fake_live_for_job(sfx_fake, ids[i]), 1);
  }
  assert_int_equal(tw_fake_instances_created(sfx_fake), 3);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), 3);
}

/* A job on fake-a, launched and provisioning (its first describe not yet
 * sent). */
static void provisioning_on_a(char id[TW_JOB_ID_LEN + 1], const char *spec) {
  sfx_submit(spec, id);
  timed_tick(sfx_sched);
  /* a loaded machine may answer the launch after the pass's budget: its
   * outcome is collected by the next pass */
  for (int k = 0; k < 5 && sfx_state_of(id) == TW_JOB_PLACING; k++) {
    usleep(50 * 1000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
}

static void hung_describes_do_not_stall_another_cloud(void **state) {
  (void)state;
  char on_a[TW_JOB_ID_LEN + 1];
  provisioning_on_a(on_a, "name: a\nresources: {cpus: 4}\nduration: 60s\n");
  tw_fake_hold(sfx_fake, TW_POP_DESCRIBE, true);
  tw_clock_advance(&sfx_clk, 1000);
  timed_tick(sfx_sched);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_DESCRIBE), 1);
  enum { NB = 20 };
  char on_b[NB][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < NB; i++)
    sfx_submit("name: b\nresources: {cpus: 8}\nduration: 10s\n", on_b[i]);
  for (int k = 0; k < 5; k++) {
    tw_clock_advance(&sfx_clk, 5000);
    timed_tick(sfx_sched);
  }
  for (int i = 0; i < NB; i++)
    assert_int_equal(sfx_state_of(on_b[i]), TW_JOB_SUCCEEDED);
  /* what they finished was given back, on fake-b's own workers */
  usleep(50 * 1000);
  timed_tick(sfx_sched);
  for (int i = 0; i < NB; i++)
    assert_int_equal(tw_fake_live_for_job(fake_b, on_b[i]), 0);
  /* fake-a's job waits on its one describe: nothing concluded */
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_DESCRIBE), 1);
  assert_int_equal(sfx_state_of(on_a), TW_JOB_PROVISIONING);
  /* the cloud answers: the job goes on */
  tw_fake_hold(sfx_fake, TW_POP_DESCRIBE, false);
  for (int k = 0; k < 3 && sfx_state_of(on_a) == TW_JOB_PROVISIONING; k++) {
    usleep(50 * 1000);
    tw_clock_advance(&sfx_clk, 1000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(sfx_state_of(on_a), TW_JOB_RUNNING);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(on_a, &a), 1);
  free(a);
}

static void past_its_deadline_a_describe_is_no_answer(void **state) {
  (void)state;
  sfx_prov->call_deadline_ms = 150;
  char id[TW_JOB_ID_LEN + 1];
  provisioning_on_a(id, "name: a\nresources: {cpus: 4}\nduration: 60s\n");
  tw_fake_hold(sfx_fake, TW_POP_DESCRIBE, true);
  tw_clock_advance(&sfx_clk, 1000);
  timed_tick(sfx_sched);
  usleep(200 * 1000);
  for (int k = 0; k < 3; k++) {
    tw_clock_advance(&sfx_clk, 2000);
    timed_tick(sfx_sched); /* past the deadline: unknown, not vanished */
  }
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  assert_int_equal(a[0].state, TW_ATTEMPT_PROVISIONING);
  free(a);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  /* its worker still waits: no second describe meanwhile */
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_DESCRIBE), 1);
  /* the late answer is dropped; the next look decides */
  tw_fake_hold(sfx_fake, TW_POP_DESCRIBE, false);
  for (int k = 0; k < 3 && sfx_state_of(id) == TW_JOB_PROVISIONING; k++) {
    usleep(50 * 1000);
    tw_clock_advance(&sfx_clk, 2000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  assert_int_equal(attempts_of(id, &a), 1);
  free(a);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
}

static void a_hung_terminate_blocks_nothing_and_is_retried(void **state) {
  (void)state;
  sfx_prov->call_deadline_ms = 150;
  char id[TW_JOB_ID_LEN + 1];
  provisioning_on_a(id, "name: a\nresources: {cpus: 4}\nduration: 5s\n");
  for (int k = 0; k < 3 && sfx_state_of(id) != TW_JOB_RUNNING; k++) {
    tw_clock_advance(&sfx_clk, 1000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_fake_hold(sfx_fake, TW_POP_TERMINATE, true);
  tw_clock_advance(&sfx_clk, 6000);
  timed_tick(sfx_sched);
  /* completion is recorded before the terminate, which hangs */
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_TERMINATE), 1);
  /* another job places and launches meanwhile, every pass in budget */
  char other[TW_JOB_ID_LEN + 1];
  sfx_submit("name: b\nresources: {cpus: 8}\nduration: 60s\n", other);
  usleep(200 * 1000);
  tw_clock_advance(&sfx_clk, 1000);
  timed_tick(sfx_sched); /* past its deadline: not confirmed */
  enum tw_job_state st = sfx_state_of(other);
  assert_true(st == TW_JOB_PROVISIONING || st == TW_JOB_RUNNING);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 1);
  /* one terminate in flight for the attempt, not two */
  tw_clock_advance(&sfx_clk, 1000);
  timed_tick(sfx_sched);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_TERMINATE), 1);
  /* the cloud answers: the late answer is dropped, the retry confirms */
  tw_fake_hold(sfx_fake, TW_POP_TERMINATE, false);
  for (int k = 0; k < 3 && tw_fake_calls(sfx_fake, TW_POP_TERMINATE) < 2; k++) {
    usleep(50 * 1000);
    tw_clock_advance(&sfx_clk, 1000);
    timed_tick(sfx_sched);
  }
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_TERMINATE), 2);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 0);
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  struct tw_attempt_rec *a;
  assert_int_equal(attempts_of(id, &a), 1);
  free(a);
}

/* Not a benchmark: a count of jobs reaching provisioning per second of
 * passes, printed for the record. */
static void jobs_reach_provisioning(void **state) {
  (void)state;
  enum { N = 1000 };
  static char ids[N][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < N; i++)
    sfx_submit("name: b\nresources: {cpus: 8}\nduration: 600s\n", ids[i]);
  int64_t t0 = tw_sched_mono_ms();
  int passes = 0;
  int left = N;
  for (; passes < 200 && left; passes++) {
    tw_sched_tick(sfx_sched);
    left = 0;
    for (int i = 0; i < N; i++) {
      enum tw_job_state st = sfx_state_of(ids[i]);
      left += st == TW_JOB_PENDING || st == TW_JOB_PLACING;
    }
  }
  int64_t ms = tw_sched_mono_ms() - t0;
  assert_int_equal(left, 0);
  passes--;
  printf("calls: %d jobs to provisioning in %lld ms over %d passes: %.0f "
         "jobs/s\n",
         N, (long long)ms, passes + 1, ms ? N * 1000.0 / (double)ms : 0.0);
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_agents_a, teardown)
  const struct CMUnitTest tests[] = {
      T(a_hung_cloud_does_not_stall_another),
      T(past_its_deadline_a_launch_stays_launching),
      T(a_drain_abandons_at_its_deadline_and_the_next_start_resumes),
      T(hung_describes_do_not_stall_another_cloud),
      T(past_its_deadline_a_describe_is_no_answer),
      TA(a_hung_terminate_blocks_nothing_and_is_retried),
      T(jobs_reach_provisioning),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
