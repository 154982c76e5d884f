/* The spot lifecycle in the scheduler, over the in-process fake provider
 * and a fake clock: notices and checkpoints (progress kept, work left),
 * the blocklist feeding placement, each strategy's next placement, the
 * deadline strategy's markets, jobs a restart left half way, and the
 * checkpoint contract's script. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/sched/checkpoint.h"
#include "broker/core/config.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "policies/fallback/fallback_strategy.h"
#include "providers/aws/aws.h"
#include "providers/slurm/slurm.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/sched_fixture.h"

#define MIN (60 * 1000LL)
static const int64_t T0 = 1764460800000;

static const char *SPOT_R1A = "fake-a:r1:r1a:gpu:spot";
static const char *SPOT_R1B = "fake-a:r1:r1b:gpu:spot";
static const char *SPOT_R2A = "fake-a:r2:r2a:gpu:spot";

static void add_offer(const char *region, const char *zone, enum tw_market m,
                      int64_t price) {
  struct tw_offer o;
  sfx_offer(&o, region, zone, "gpu", m, price);
  o.vcpus = 8;
  o.memory_mib = 61440;
  snprintf(o.accel_name, sizeof o.accel_name, "V100");
  o.accel_count = 1;
  sfx_add_offer(&o);
}

static void start_sched(void) {
  struct tw_fallback_cfg fb;
  tw_fallback_cfg_default(&fb);
  assert_int_equal(sfx_start_sched(&fb), 0);
}

/* agents: tradewind-agent played on the instances (sfx_open_agents), for
 * the cases whose job runs to its end. */
static int setup_as(bool agents) {
  if ((agents ? sfx_open_agents : sfx_open)("fbmon", T0, NULL))
    return -1;
  add_offer("r1", "r1a", TW_MARKET_SPOT, 1000000);
  add_offer("r1", "r1b", TW_MARKET_SPOT, 1100000);
  add_offer("r2", "r2a", TW_MARKET_SPOT, 1200000);
  add_offer("r1", "", TW_MARKET_ON_DEMAND, 3000000);
  add_offer("r2", "", TW_MARKET_ON_DEMAND, 3000000);
  start_sched();
  return 0;
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

/* The live (or last) attempt of a job. */
static struct tw_attempt_rec last_attempt(const char *id, size_t *n_out) {
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_true(n > 0);
  struct tw_attempt_rec r = a[n - 1];
  free(a);
  if (n_out)
    *n_out = n;
  return r;
}

/* Does some event of the job contain text? */
static bool event_has(const char *id, const char *text) {
  struct tw_job_event *ev;
  size_t n;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n, NULL), TW_OK);
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    if (strstr(ev[i].reason, text))
      found = true;
    free(ev[i].reason);
  }
  free(ev);
  return found;
}

static size_t events_with(const char *id, const char *text) {
  struct tw_job_event *ev;
  size_t n, k = 0;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n, NULL), TW_OK);
  for (size_t i = 0; i < n; i++) {
    if (strstr(ev[i].reason, text))
      k++;
    free(ev[i].reason);
  }
  free(ev);
  return k;
}

/* Places and starts job: returns its instance. */
static struct tw_attempt_rec run(const char *id) {
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  return last_attempt(id, NULL);
}

/* Takes the instance away without notice. */
static void vanish(const char *instance) {
  assert_int_equal(tw_fake_set_state(sfx_fake, instance, TW_INST_TERMINATED),
                   TW_OK);
}

/* ---- notices and checkpoints -----------------------------------------------
 */

static void
notice_saves_progress_and_the_next_attempt_does_the_rest(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: train\nresources: {accelerators: V100:1, use_spot: "
             "true}\nduration: 1h\n"
             "checkpoint: {interval: 10m, uri: s3://ckpt/train/}\n",
             id);
  struct tw_attempt_rec a = run(id);
  assert_string_equal(a.offer_id, SPOT_R1A);
  tw_clock_advance(&sfx_clk, 40 * MIN + 30000);
  sfx_tick();
  assert_int_equal(tw_fake_interrupt(sfx_fake, a.instance_id, 120000), TW_OK);
  sfx_tick();
  assert_true(event_has(id, "interruption notice for"));
  assert_true(event_has(id, "checkpoint requested"));
  /* the notice runs out: attempt 2 goes elsewhere in the same pass */
  tw_clock_advance(&sfx_clk, 120000);
  sfx_tick();
  size_t n;
  struct tw_attempt_rec b = last_attempt(id, &n);
  assert_int_equal(n, 2);
  assert_string_equal(b.offer_id, SPOT_R1B);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_true(
      event_has(id, "progress kept: 40m of 1h00m (saved at the notice)"));
  int64_t kept;
  assert_int_equal(tw_checkpoint_progress(sfx_store, id, &kept, NULL), TW_OK);
  assert_int_equal(kept, 40 * 60 + 30);
  /* the rest: 19 m 30 s of running */
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, 19 * MIN + 29000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, 1000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
}

static void without_checkpoint_the_job_starts_over(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: plain\nresources: {accelerators: V100:1, use_spot: "
             "true}\nduration: 1h\n",
             id);
  struct tw_attempt_rec a = run(id);
  tw_clock_advance(&sfx_clk, 40 * MIN);
  tw_fake_interrupt(sfx_fake, a.instance_id, 120000);
  sfx_tick();
  assert_true(event_has(id, "no checkpoint: the job will start over"));
  tw_clock_advance(&sfx_clk, 120000);
  sfx_tick();
  assert_true(
      event_has(id, "progress kept: 0s of 1h00m (no checkpoint: starts over)"));
  sfx_tick();
  tw_clock_advance(&sfx_clk, 59 * MIN);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, MIN);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
}

static void without_notice_the_last_periodic_checkpoint_counts(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: periodic\nresources: {accelerators: V100:1, use_spot: "
             "true}\nduration: 1h\n"
             "checkpoint: {interval: 10m, uri: s3://ckpt/p/}\n",
             id);
  struct tw_attempt_rec a = run(id);
  tw_clock_advance(&sfx_clk, 25 * MIN);
  vanish(a.instance_id);
  sfx_tick();
  assert_true(
      event_has(id, "progress kept: 20m of 1h00m (last periodic checkpoint)"));
  int64_t kept;
  tw_checkpoint_progress(sfx_store, id, &kept, NULL);
  assert_int_equal(kept, 20 * 60);
}

static void a_notice_is_acted_on_once(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: once\nresources: {accelerators: V100:1, use_spot: "
             "true}\nduration: 1h\n",
             id);
  struct tw_attempt_rec a = run(id);
  tw_fake_interrupt(sfx_fake, a.instance_id, 120000);
  for (int i = 0; i < 4; i++) {
    tw_clock_advance(&sfx_clk, 10000);
    sfx_tick();
  }
  assert_int_equal(events_with(id, "interruption notice for"), 1);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
}

/* ---- the blocklist feeds placement ------------------------------------------
 */

static void a_capacity_error_keeps_other_jobs_off_the_offer(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, SPOT_R1A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  char one[TW_JOB_ID_LEN + 1], two[TW_JOB_ID_LEN + 1];
  sfx_submit("name: one\nresources: {accelerators: V100:1, use_spot: true}\n",
             one);
  sfx_tick();
  assert_string_equal(last_attempt(one, NULL).offer_id, SPOT_R1B);
  size_t launches = tw_fake_calls(sfx_fake, TW_POP_LAUNCH);
  sfx_submit("name: two\nresources: {accelerators: V100:1, use_spot: true}\n",
             two);
  sfx_tick();
  /* straight to r1b: r1a is not tried again while blocklisted */
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), launches + 1);
  size_t n;
  assert_string_equal(last_attempt(two, &n).offer_id, SPOT_R1B);
  assert_int_equal(n, 1);
  /* ten minutes later the block is over */
  tw_fake_clear_faults(sfx_fake);
  tw_clock_advance(&sfx_clk, 10 * MIN);
  char three[TW_JOB_ID_LEN + 1];
  sfx_submit("name: three\nresources: {accelerators: V100:1, use_spot: true}\n",
             three);
  sfx_tick();
  assert_string_equal(last_attempt(three, NULL).offer_id, SPOT_R1A);
}

/* ---- strategies
 * -------------------------------------------------------------- */

static void failover_retries_within_the_region(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: f\nresources: {accelerators: V100:1}\nfallback: failover\n",
             id);
  struct tw_attempt_rec a = run(id);
  assert_string_equal(a.offer_id, SPOT_R1A);
  vanish(a.instance_id);
  sfx_tick();
  assert_string_equal(last_attempt(id, NULL).offer_id, SPOT_R1B);
  assert_true(event_has(
      id, "failover: interruption 1: retrying within r1, then elsewhere"));
}

/* A stored spec naming a strategy the table lacks (stored without the
 * check: the fixture parses without the names) is never run under the
 * default strategy: the scheduler refuses it and the job stays pending. */
static void unknown_strategy_is_refused_not_defaulted(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: u\nresources: {accelerators: V100:1}\nfallback: eager\n",
             id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PENDING);
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 0);
  free(a);
}

static void eager_next_region_leaves_the_region(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: e\nresources: {accelerators: V100:1}\nfallback: "
             "eager-next-region\n",
             id);
  struct tw_attempt_rec a = run(id);
  vanish(a.instance_id);
  sfx_tick();
  /* r1b is cheaper, but the job leaves r1 */
  assert_string_equal(last_attempt(id, NULL).offer_id, SPOT_R2A);
  assert_true(event_has(
      id, "eager-next-region: interruption 1: leaving r1 for another region"));
}

static void on_demand_fallback_after_two_interruptions(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: o\nresources: {accelerators: V100:1, use_spot: true}\n"
             "fallback: on-demand-fallback\n",
             id);
  struct tw_attempt_rec a = run(id);
  vanish(a.instance_id);
  sfx_tick();
  a = last_attempt(id, NULL);
  assert_string_equal(a.market, "spot");
  sfx_tick();
  vanish(a.instance_id);
  sfx_tick();
  size_t n;
  a = last_attempt(id, &n);
  assert_int_equal(n, 3);
  assert_string_equal(a.market, "on-demand");
  const char *why =
      "on-demand-fallback: 2 interruptions (limit 2): on-demand from now on";
  assert_true(event_has(id, why));
  /* each decision is stored with its reason */
  struct tw_ckpt_decision *d;
  size_t nd;
  assert_int_equal(tw_checkpoint_decisions_of(sfx_store, id, &d, &nd, NULL),
                   TW_OK);
  assert_true(nd >= 3);
  assert_string_equal(d[nd - 1].strategy, "on-demand-fallback");
  assert_string_equal(d[nd - 1].event, "interrupted");
  assert_string_equal(d[nd - 1].market, "on-demand");
  assert_string_equal(d[nd - 1].reason, why);
  free(d);
}

static void without_any_on_demand_offer_the_job_stays_on_spot(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  /* $2/h keeps every on-demand offer ($3/h) out */
  sfx_submit("name: cap\nresources: {accelerators: V100:1, use_spot: true}\n"
             "max_price_per_hour: 2\nfallback: on-demand-fallback\n",
             id);
  struct tw_attempt_rec a = run(id);
  vanish(a.instance_id);
  sfx_tick();
  sfx_tick();
  vanish(last_attempt(id, NULL).instance_id);
  sfx_tick();
  size_t n;
  a = last_attempt(id, &n);
  assert_int_equal(n, 3);
  assert_string_equal(a.market, "spot");
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_true(event_has(id, "on-demand-fallback: 2 interruptions (limit 2)"));
  /* the decision as placed, and the placement, say why it is spot */
  struct tw_ckpt_decision *d;
  size_t nd;
  assert_int_equal(tw_checkpoint_decisions_of(sfx_store, id, &d, &nd, NULL),
                   TW_OK);
  assert_non_null(
      strstr(d[nd - 1].reason,
             "on-demand from now on; no on-demand offer fits, so spot"));
  free(d);
  struct tw_job_rec j = sfx_get(id);
  assert_non_null(strstr(j.placement_json, "no on-demand offer fits, so spot"));
  tw_job_rec_release(&j);
}

/* ---- the deadline strategy
 * --------------------------------------------------- */

static void deadline_picks_the_market_by_slack(void **state) {
  (void)state;
  char tight[TW_JOB_ID_LEN + 1], loose[TW_JOB_ID_LEN + 1];
  /* 1 h of work due in 1 h 5 m: no room for an interruption */
  sfx_submit("name: tight\nresources: {accelerators: V100:1}\nduration: 1h\n"
             "deadline: 2025-11-30T01:05:00Z\nfallback: deadline\n",
             tight);
  sfx_submit("name: loose\nresources: {accelerators: V100:1}\nduration: 1h\n"
             "deadline: 2025-11-30T04:00:00Z\nfallback: deadline\n",
             loose);
  sfx_tick();
  assert_string_equal(last_attempt(tight, NULL).market, "on-demand");
  assert_string_equal(last_attempt(loose, NULL).market, "spot");
  assert_true(
      event_has(tight, "cannot absorb another interruption and restart"));
}

static void
deadline_waits_for_spot_when_ahead_and_pays_when_behind(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, SPOT_R1A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R1B, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R2A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: d\nresources: {accelerators: V100:1}\nduration: 1h\n"
             "deadline: 2025-11-30T03:00:00Z\nfallback: deadline\n",
             id);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PENDING);
  assert_true(event_has(id, "so waits if no spot is left"));
  /* while the spot offers are blocklisted it keeps waiting, quietly */
  tw_clock_advance(&sfx_clk, 2 * MIN);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PENDING);
  assert_non_null(strstr(j.reason, "so it waits for spot"));
  tw_job_rec_release(&j);
  tw_clock_advance(&sfx_clk, MIN);
  sfx_tick();
  assert_int_equal(events_with(id, "so it waits for spot"), 1);
  size_t n;
  assert_string_equal(last_attempt(id, &n).market, "spot");
  assert_int_equal(n, 3);
  /* twenty minutes on it is behind the uniform line: on-demand */
  tw_clock_advance(&sfx_clk, 17 * MIN);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_string_equal(last_attempt(id, NULL).market, "on-demand");
  assert_true(event_has(id, "so on-demand if no spot is left"));
}

static void deadline_moves_back_to_spot_after_a_checkpoint(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, SPOT_R1A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R1B, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R2A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: back\nresources: {accelerators: V100:1}\nduration: 1h\n"
             "deadline: 2025-11-30T03:00:00Z\nfallback: deadline\n"
             "checkpoint: {interval: 10m, uri: s3://ckpt/back/}\n",
             id);
  sfx_tick();
  tw_clock_advance(&sfx_clk, 10 * MIN);
  sfx_tick(); /* 3m20s behind: still on track, waits */
  assert_int_equal(sfx_state_of(id), TW_JOB_PENDING);
  tw_clock_advance(&sfx_clk, 10 * MIN);
  sfx_tick(); /* 6m40s behind: on-demand */
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  struct tw_attempt_rec od = last_attempt(id, NULL);
  assert_string_equal(od.market, "on-demand");
  /* spot is back; 40 minutes of work later (a checkpoint just made) the
   * job is well ahead and moves */
  tw_fake_clear_faults(sfx_fake);
  tw_clock_advance(&sfx_clk, 40 * MIN);
  sfx_tick();
  struct tw_attempt_rec sp = last_attempt(id, NULL);
  assert_string_equal(sp.market, "spot");
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(sfx_fake, od.instance_id, &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  assert_true(event_has(id, "back to spot"));
  assert_true(
      event_has(id, "progress kept: 40m of 1h00m (last periodic checkpoint)"));
  /* and it finishes its last 20 minutes there */
  sfx_tick();
  tw_clock_advance(&sfx_clk, 20 * MIN);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
}

/* The move's terminate is done but its answer is lost (or the daemon dies
 * right after it): the next look finds the on-demand instance terminated
 * by the broker's own hand.  That is the move going through, not an
 * interruption: the attempt ends as moved, with the progress of the
 * checkpoint it was timed after. */
static void a_move_whose_terminate_answer_is_lost_is_a_move(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, SPOT_R1A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R1B, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  tw_fake_fail_offer(sfx_fake, SPOT_R2A, TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: lost\nresources: {accelerators: V100:1}\nduration: 1h\n"
             "deadline: 2025-11-30T03:00:00Z\nfallback: deadline\n"
             "checkpoint: {interval: 10m, uri: s3://ckpt/lost/}\n",
             id);
  sfx_tick();
  tw_clock_advance(&sfx_clk, 20 * MIN);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  struct tw_attempt_rec od = last_attempt(id, NULL);
  assert_string_equal(od.market, "on-demand");
  tw_fake_clear_faults(sfx_fake);
  tw_fake_lose(sfx_fake, TW_POP_TERMINATE, TW_E_RETRYABLE, "RequestTimeout",
               1);
  tw_clock_advance(&sfx_clk, 40 * MIN);
  sfx_tick();
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(sfx_fake, od.instance_id, &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  /* the next looks at it */
  for (int i = 0; i < 3; i++) {
    tw_clock_advance(&sfx_clk, 3 * MIN);
    sfx_tick();
  }
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  bool found = false;
  for (size_t i = 0; i < n; i++)
    if (a[i].id == od.id) {
      found = true;
      assert_string_equal(a[i].end_reason, "moved");
    }
  free(a);
  assert_true(found);
  assert_false(event_has(id, "UserInitiatedShutdown"));
  assert_true(
      event_has(id, "progress kept: 40m of 1h00m (last periodic checkpoint)"));
  assert_string_equal(last_attempt(id, NULL).market, "spot");
}

/* ---- crash safety: jobs a restart left half way
 * ------------------------------ */

static void a_job_left_interrupted_is_recovered_after_a_restart(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: left\nresources: {accelerators: V100:1, use_spot: true}\n",
             id);
  struct tw_attempt_rec a = run(id);
  /* the daemon ended the attempt and died before the job went on */
  vanish(a.instance_id);
  struct tw_attempt_close c = {.attempt_id = a.id,
                               .end_reason = "interrupted",
                               .job_to = TW_JOB_INTERRUPTED,
                               .job_reason = "gone"};
  assert_int_equal(tw_store_attempt_close(sfx_store, &c, NULL), TW_OK);
  tw_sched_free(sfx_sched);
  start_sched();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  size_t n;
  assert_string_equal(last_attempt(id, &n).offer_id, SPOT_R1B);
  assert_int_equal(n, 2);
}

static void a_job_left_placing_is_placed_again(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(
      "name: placing\nresources: {accelerators: V100:1, use_spot: true}\n", id);
  struct tw_attempt_new an = {.job_id = id,
                              .provider = "fake-a",
                              .offer_id = SPOT_R1A,
                              .market = "spot",
                              .price_uusd_per_hour = 1000000};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(sfx_store, &an, &a, NULL), TW_OK);
  struct tw_attempt_close c = {
      .attempt_id = a.id, .end_reason = "capacity", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(sfx_store, &c, NULL), TW_OK);
  assert_int_equal(sfx_state_of(id), TW_JOB_PLACING);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_true(event_has(id, "placement was cut short"));
}

/* ---- the contract with the job (pure) --------------------------------------
 */

static void checkpoint_script_exports_the_contract(void **state) {
  (void)state;
  struct tw_ckpt_env e = {.job_id = "j-1",
                          .attempt = 3,
                          .uri = "s3://b/it's/",
                          .interval_s = 600,
                          .resume_s = 2430,
                          .info = tw_provider_aws.info};
  struct tw_buf b;
  tw_buf_init(&b);
  tw_checkpoint_script(&e, "#!/usr/bin/env bash\npython train.py\n", &b);
  assert_string_equal(
      b.data, "#!/usr/bin/env bash\n"
              "# tradewind: the checkpoint contract (docs/spot.md)\n"
              "export TRADEWIND_JOB_ID='j-1'\n"
              "export TRADEWIND_ATTEMPT=3\n"
              "export TRADEWIND_CHECKPOINT_URI='s3://b/it'\\''s/'\n"
              "export TRADEWIND_CHECKPOINT_INTERVAL_S=600\n"
              "export TRADEWIND_RESUME_S=2430\n"
              "export TRADEWIND_NOTICE_URL="
              "'http://169.254.169.254/latest/meta-data/spot/instance-action'\n"
              "export TRADEWIND_NOTICE_SIGNAL=''\n"
              "python train.py\n");
  tw_buf_reset(&b);
  /* another interpreter would choke on export: left as it is */
  tw_checkpoint_script(&e, "#!/usr/bin/python3\nprint(1)\n", &b);
  assert_string_equal(b.data, "#!/usr/bin/python3\nprint(1)\n");
  tw_buf_reset(&b);
  e.info = tw_provider_slurm.info;
  tw_checkpoint_script(&e, NULL, &b);
  assert_non_null(strstr(b.data, "export TRADEWIND_NOTICE_SIGNAL='TERM'\n"));
  assert_non_null(strstr(b.data, "export TRADEWIND_NOTICE_URL=''\n"));
  tw_buf_release(&b);
}

static void kept_progress_follows_the_contract(void **state) {
  (void)state;
  struct {
    struct tw_ckpt_calc c;
    int64_t kept;
    const char *how;
  } rows[] = {
      {{.enabled = false,
        .work_s = 3600,
        .resume_s = 600,
        .run_s = 900,
        .request_run_s = 800,
        .grace_s = 120},
       0,
       "no checkpoint: starts over"},
      {{.enabled = true,
        .work_s = 3600,
        .resume_s = 600,
        .run_s = 900,
        .request_run_s = 800,
        .grace_s = 120},
       1400,
       "saved at the notice"},
      /* a notice too short to save in */
      {{.enabled = true,
        .interval_s = 300,
        .work_s = 3600,
        .resume_s = 600,
        .run_s = 900,
        .request_run_s = 895,
        .grace_s = 5},
       1500,
       "notice too short to save; last periodic checkpoint"},
      {{.enabled = true,
        .work_s = 3600,
        .resume_s = 600,
        .run_s = 900,
        .request_run_s = -1},
       600,
       "nothing saved since the last checkpoint"},
      {{.enabled = true,
        .work_s = 1000,
        .resume_s = 600,
        .run_s = 900,
        .request_run_s = 900,
        .grace_s = 60},
       1000,
       "saved at the notice"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *how;
    assert_int_equal(tw_checkpoint_kept(&rows[i].c, &how), rows[i].kept);
    assert_string_equal(how, rows[i].how);
  }
}

/* ---- the config's spot: and reconcile: sections -----------------------------
 */

static void config_spot_section_is_validated(void **state) {
  (void)state;
  struct tw_cfg *c = NULL;
  struct tw_err err = {0};
  const char *ok = "spot: {fallback: deadline, restart_overhead_s: 120}\n"
                   "reconcile: {interval_s: 0}\n";
  assert_int_equal(tw_cfg_load_text(ok, strlen(ok), &c, &err), TW_OK);
  assert_string_equal(c->spot_fallback, "deadline");
  assert_int_equal(c->spot_restart_overhead_s, 120);
  assert_int_equal(c->spot_on_demand_after, 2);
  assert_int_equal(c->reconcile_interval_s, 0);
  tw_cfg_free(c);
  /* the daemon loads it with the fallback table's names */
  const char *names[TW_FALLBACK_COUNT + 1];
  tw_fallback_names(names, TW_FALLBACK_COUNT + 1);
  struct tw_cfg_load_opts lopts = {.fallbacks = names};
  const char *bad = "spot: {fallback: eager}\n";
  assert_int_equal(tw_cfg_load_text_opts(bad, strlen(bad), &lopts, &c, &err),
                   TW_E_INVALID);
  assert_string_equal(err.msg,
                      "spot.fallback: expected failover, eager-next-region, "
                      "on-demand-fallback or deadline, got \"eager\"");
  tw_err_clear(&err);
  const char *typo = "spot: {on_demand_afer: 3}\n";
  assert_int_equal(tw_cfg_load_text(typo, strlen(typo), &c, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(err.msg, "did you mean \"on_demand_after\""));
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_agents, teardown)
  const struct CMUnitTest tests[] = {
      TA(notice_saves_progress_and_the_next_attempt_does_the_rest),
      TA(without_checkpoint_the_job_starts_over),
      T(without_notice_the_last_periodic_checkpoint_counts),
      T(a_notice_is_acted_on_once),
      T(a_capacity_error_keeps_other_jobs_off_the_offer),
      T(failover_retries_within_the_region),
      T(unknown_strategy_is_refused_not_defaulted),
      T(eager_next_region_leaves_the_region),
      T(on_demand_fallback_after_two_interruptions),
      T(without_any_on_demand_offer_the_job_stays_on_spot),
      T(deadline_picks_the_market_by_slack),
      T(deadline_waits_for_spot_when_ahead_and_pays_when_behind),
      TA(deadline_moves_back_to_spot_after_a_checkpoint),
      T(a_move_whose_terminate_answer_is_lost_is_a_move),
      T(a_job_left_interrupted_is_recovered_after_a_restart),
      T(a_job_left_placing_is_placed_again),
      cmocka_unit_test(checkpoint_script_exports_the_contract),
      cmocka_unit_test(kept_progress_follows_the_contract),
      cmocka_unit_test(config_spot_section_is_validated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
