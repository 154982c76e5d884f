/* The scheduler loop over the in-process fake provider and a fake clock:
 * placement, capacity fallback, interruption and re-placement, cancel,
 * and a launch resumed after a crash with the same client token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/ledger/ledger.h"
#include "billing/ledger/meter.h"
#include "broker/base/clock.h"
#include "broker/core/datasets.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "policies/place/netmatrix.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/agent_play.h"
#include "tests/unit/sched_fixture.h"

static void add_offer(const char *zone, const char *type, enum tw_market m,
                      int64_t price, int vcpus, const char *accel, int accels) {
  struct tw_offer o;
  sfx_offer(&o, "r1", zone, type, m, price);
  o.vcpus = vcpus;
  o.memory_mib = vcpus * 4096;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.min_charge_s = 60;
  sfx_add_offer(&o);
}

/* agents: tradewind-agent played on the instances (sfx_open_agents), for
 * the cases whose job runs to its end. */
static int setup_as(bool agents) {
  if ((agents ? sfx_open_agents : sfx_open)("sched", 1764460800000, NULL))
    return -1;
  add_offer("r1a", "gpu.spot", TW_MARKET_SPOT, 2000000, 32, "A100-80GB", 8);
  add_offer("r1b", "gpu.spot", TW_MARKET_SPOT, 2500000, 32, "A100-80GB", 8);
  add_offer("r1a", "gpu.od", TW_MARKET_ON_DEMAND, 9000000, 32, "A100-80GB", 8);
  add_offer("r1a", "cpu.small", TW_MARKET_ON_DEMAND, 100000, 4, NULL, 0);
  return sfx_start_sched(NULL);
}

/* The fixture's scheduler started again with o's settings (the store,
 * clock and provider the fixture's). */
static void sched_again(struct tw_sched_opts o) {
  tw_sched_free(sfx_sched);
  o.store = sfx_store;
  o.clock = &sfx_clk;
  o.providers = &sfx_prov;
  o.n_providers = 1;
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
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
  /* a case that failed while the cloud held its calls: let them go, or
   * freeing the scheduler would wait for them */
  for (int op = 0; op < TW_POP_COUNT; op++)
    tw_fake_hold(sfx_fake, (enum tw_provider_op)op, false);
  sfx_close();
  return 0;
}

static void cheapest_feasible_offer_runs_to_completion(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: train\nresources: {accelerators: A100-80GB:8, use_spot: "
             "true}\nduration: 10m\n",
             id);
  assert_true(sfx_tick() > 0);
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(strstr(j.placement_json, "\"zone\":\"r1a\""));
  assert_non_null(strstr(j.placement_json, "\"instance_type\":\"gpu.spot\""));
  /* 10 minutes at $2/h, and the expected cost of spot interruptions (an
   * unknown band counts as 10%/month: 1 s of lost work and restart) */
  assert_non_null(strstr(j.placement_json,
                         "\"compute_uusd\":333334,\"spot_risk_uusd\":556"));
  assert_non_null(strstr(j.placement_json, "\"expected_cost_uusd\":333890"));
  tw_job_rec_release(&j);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, 9 * 60 * 1000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, 60 * 1000);
  sfx_tick();
  j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_SUCCEEDED);
  assert_true(j.has_exit_code);
  assert_int_equal(j.exit_code, 0);
  tw_job_rec_release(&j);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(sfx_fake, "fake-a-1", &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
}

/* Without an agent nothing reports the job's end: it is not taken for
 * done when its duration has passed, nor when its instance goes (that is
 * an interruption); it runs until then or until cancelled. */
static void without_an_agent_the_clock_never_ends_a_job(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: quiet\nresources: {cpus: 4}\nduration: 10s\n", id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  for (int i = 0; i < 30; i++) { /* an hour, ten times its duration */
    tw_clock_advance(&sfx_clk, 2 * 60 * 1000);
    sfx_tick();
  }
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_RUNNING);
  assert_false(j.has_exit_code);
  tw_job_rec_release(&j);
  /* its instance goes: an interruption (the job waits to be placed
   * again, its only offer blocklisted a while), never a success */
  assert_int_equal(tw_fake_set_state(sfx_fake, "fake-a-1", TW_INST_TERMINATED),
                   TW_OK);
  tw_clock_advance(&sfx_clk, 2 * 60 * 1000);
  sfx_tick();
  sfx_tick();
  assert_false(tw_job_state_terminal(sfx_state_of(id)));
  struct tw_attempt_rec *a = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_true(n >= 1);
  assert_string_equal(a[0].end_reason, "interrupted");
  free(a);
}

static void capacity_error_moves_to_the_next_offer_at_once(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, "fake-a:r1:r1a:gpu.spot:spot", TW_E_CAPACITY,
                     "InsufficientInstanceCapacity");
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: train\nresources: {accelerators: A100-80GB:8, market: spot}\n",
             id);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(strstr(j.placement_json, "\"zone\":\"r1b\""));
  tw_job_rec_release(&j);
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(a[0].end_reason, "capacity");
  assert_string_equal(a[1].offer_id, "fake-a:r1:r1b:gpu.spot:spot");
  free(a);
}

static void nothing_fits_stays_pending_with_counts(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: big\nresources: {accelerators: H100:8}\n", id);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PENDING);
  assert_string_equal(j.reason,
                      "no offer fits: 4 offers, 0 fit: 4 without exactly 8 H100");
  tw_job_rec_release(&j);
  char id2[TW_JOB_ID_LEN + 1];
  sfx_submit(
      "name: cheap\nresources: {accelerators: A100-80GB:8}\nmax_price_per_hour: 1\n",
      id2);
  sfx_tick();
  j = sfx_get(id2);
  assert_non_null(strstr(
      j.reason, "4 offers, 0 fit: 3 over max price $1.00/h, 1 without exactly 8 A100-80GB"));
  tw_job_rec_release(&j);
}

static void interruption_sends_the_job_elsewhere(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: spot\nresources: {accelerators: A100-80GB:8, use_spot: "
             "true}\nduration: 1h\n",
             id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  assert_int_equal(tw_fake_interrupt(sfx_fake, "fake-a-1", 120000), TW_OK);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_RUNNING);
  assert_non_null(strstr(j.reason, "interruption notice for fake-a-1"));
  tw_job_rec_release(&j);
  tw_clock_advance(&sfx_clk, 120000);
  sfx_tick();
  /* interrupted, recovering, then placed again in the same pass, on the
   * other zone: the interrupted offer is avoided */
  j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(strstr(j.placement_json, "\"zone\":\"r1b\""));
  assert_non_null(strstr(j.placement_json, "\"attempt\":2"));
  tw_job_rec_release(&j);
  struct tw_job_event *ev;
  size_t n;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n, NULL), TW_OK);
  /* nothing reports from inside the instance (no agent): the job is told
   * its end cannot be known, then the notice, then the interruption */
  const char *want[] = {"pending",     "placing",    "provisioning",
                        "running",     "running",    "running",
                        "interrupted", "recovering", "provisioning"};
  assert_int_equal(n, 9);
  assert_non_null(strstr(ev[4].reason, "fake-a, which has no agent"));
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(tw_job_state_str(ev[i].to), want[i]);
    free(ev[i].reason);
  }
  free(ev);
}

static void cancel_terminates_the_instance(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: c\nresources: {cpus: 4}\n", id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  sfx_tick();
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(sfx_fake, "fake-a-1", &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  struct tw_attempt_rec *live;
  size_t n;
  assert_int_equal(tw_store_attempts_live(sfx_store, &live, &n, NULL), TW_OK);
  assert_int_equal(n, 0);
  free(live);
  assert_int_equal(sfx_state_of(id), TW_JOB_CANCELLED);
}

static size_t describes(void) {
  return tw_fake_calls(sfx_fake, TW_POP_DESCRIBE) +
         tw_fake_calls(sfx_fake, TW_POP_DESCRIBE_MANY);
}

/* A fast tick does not make a quiet running instance described at its
 * pace: after the look that saw it running, the next comes a second
 * later at the earliest, then twice as late each time (follow.c,
 * QUIET_RUNNING_MIN_MS).  With the ramp from a 100 ms tick it would be
 * looked at 0.3, 0.7, 1.5 and 3.1 s after. */
static void a_quiet_running_instance_is_not_described_every_tick(void **state) {
  (void)state;
  sched_again((struct tw_sched_opts){.tick_ms = 100});
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: spot\nresources: {accelerators: A100-80GB:8, use_spot: "
             "true}\nduration: 1h\n",
             id);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  for (int i = 0; i < 5 && sfx_state_of(id) != TW_JOB_RUNNING; i++) {
    tw_clock_advance(&sfx_clk, 100);
    sfx_tick();
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  size_t before = describes();
  for (int i = 0; i < 30; i++) { /* 3 s of 100 ms ticks */
    tw_clock_advance(&sfx_clk, 100);
    sfx_tick();
  }
  size_t looks = describes() - before;
  assert_true(looks >= 1); /* still followed */
  assert_true(looks <= 2);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
}

static void lost_launch_answer_is_resumed_with_the_same_token(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: crash\nresources: {cpus: 4}\n", id);
  sfx_tick(); /* loads offers, places */
  /* simulate a daemon killed after the launch call and before the store
   * write: a second job whose attempt is stored and whose instance exists */
  char id2[TW_JOB_ID_LEN + 1];
  sfx_submit("name: crash2\nresources: {cpus: 4}\n", id2);
  struct tw_attempt_new an = {.job_id = id2,
                              .provider = "fake-a",
                              .offer_id = "fake-a:r1:r1a:cpu.small:on-demand",
                              .market = "on-demand",
                              .price_uusd_per_hour = 100000};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(sfx_store, &an, &a, NULL), TW_OK);
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "r1a");
  snprintf(o.instance_type, sizeof o.instance_type, "cpu.small");
  o.market = TW_MARKET_ON_DEMAND;
  o.vcpus = 4;
  tw_offer_make_id(&o);
  struct tw_launch req = {.offer = &o,
                          .client_token = a.client_token,
                          .job_id = id2,
                          .attempt_id = a.client_token,
                          .tenant = "default"};
  struct tw_instance inst;
  assert_int_equal(tw_provider_launch(sfx_prov, &req, &inst, NULL), TW_OK);
  size_t before = tw_fake_instances_created(sfx_fake);
  sfx_tick();
  assert_int_equal(tw_fake_instances_created(sfx_fake), before);
  struct tw_job_rec j = sfx_get(id2);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  char want[192];
  snprintf(want, sizeof want, "\"instance_id\":\"%s\"", inst.id);
  assert_non_null(strstr(j.placement_json, want));
  tw_job_rec_release(&j);
}

static void throttled_launch_is_sent_again_with_the_same_token(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: t\nresources: {cpus: 4}\n", id);
  tw_fake_fail(sfx_fake, TW_POP_LAUNCH, TW_E_RETRYABLE, "RequestLimitExceeded",
               2);
  sfx_tick();
  /* throttled after every try: no answer, so the attempt stays launching
   * and the job is not queued for a second one */
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PLACING);
  assert_non_null(strstr(j.reason, "unanswered (retryable"));
  tw_job_rec_release(&j);
  /* the next pass asks for the token, finds none, sends it again */
  sfx_tick();
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_FIND_BY_TOKEN), 1);
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), 2);
  /* throttled again: waiting, the next pass leaves it alone */
  sfx_tick();
  assert_int_equal(tw_fake_calls(sfx_fake, TW_POP_LAUNCH), 2);
  tw_clock_advance(&sfx_clk, 1000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 1); /* one attempt, one token, throughout */
  free(a);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 1);
}

/* The instance of job id's only attempt (out: 128 bytes). */
static uint64_t job_reads(void) {
  struct tw_store_stats st;
  tw_store_stats(sfx_store, &st);
  return st.job_reads;
}

/* A describe's answer is applied to the attempt as the scheduler's live
 * set holds it (kept from the store's changes): seen running, and looked
 * at again while quiet, with no read of the job's row; an answer that
 * ends the attempt reads it, and ends it as before. */
static void describe_answers_need_no_read_of_the_job(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: spot\nresources: {accelerators: A100-80GB:8, use_spot: "
             "true}\nduration: 1h\n",
             id);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  uint64_t before = job_reads();
  sfx_tick(); /* described: running */
  uint64_t reads = job_reads() - before;
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  /* one read: the queue's usage view reads a job once, when it first
   * has a live attempt (place.c); the answer read none */
  assert_int_equal(reads, 1);
  before = job_reads();
  for (int i = 0; i < 8; i++) { /* quiet looks, further and further apart */
    tw_clock_advance(&sfx_clk, 20 * 1000);
    sfx_tick();
  }
  assert_int_equal(job_reads() - before, 0);
  assert_true(tw_fake_calls(sfx_fake, TW_POP_DESCRIBE) +
                  tw_fake_calls(sfx_fake, TW_POP_DESCRIBE_MANY) >= 3);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  /* its instance goes: interrupted and placed again, as ever */
  assert_int_equal(tw_fake_set_state(sfx_fake, "fake-a-1", TW_INST_TERMINATED),
                   TW_OK);
  tw_clock_advance(&sfx_clk, 60 * 1000);
  sfx_tick();
  sfx_tick();
  struct tw_attempt_rec *a = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_true(n >= 2);
  assert_int_equal(a[0].state, TW_ATTEMPT_ENDED);
  assert_string_equal(a[0].end_reason, "interrupted");
  assert_true(a[0].running_ms > 0);
  assert_int_not_equal(a[1].state, TW_ATTEMPT_ENDED);
  free(a);
  assert_false(tw_job_state_terminal(sfx_state_of(id)));
}

static void instance_of_job(const char *id, char *out) {
  struct tw_attempt_rec *a = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 1);
  snprintf(out, 128, "%s", a[0].instance_id);
  free(a);
}

static void batch_workload_exit_code_decides_the_outcome(void **state) {
  (void)state;
  char ok[TW_JOB_ID_LEN + 1], bad[TW_JOB_ID_LEN + 1];
  sfx_submit("name: ok\nresources: {cpus: 4}\n", ok);
  sfx_submit("name: bad\nresources: {cpus: 4}\n", bad);
  sfx_tick();
  /* both provisioning, each on its instance (which one got fake-a-1 is
   * the order the workers' launches ran in); the script of the second
   * exits 3 before we ever see it running */
  char ok_inst[128], bad_inst[128];
  instance_of_job(ok, ok_inst);
  instance_of_job(bad, bad_inst);
  assert_int_equal(tw_fake_finish(sfx_fake, ok_inst, 0), TW_OK);
  assert_int_equal(tw_fake_finish(sfx_fake, bad_inst, 3), TW_OK);
  sfx_tick();
  struct tw_job_rec j = sfx_get(ok);
  assert_int_equal(j.state, TW_JOB_SUCCEEDED);
  assert_int_equal(j.exit_code, 0);
  tw_job_rec_release(&j);
  j = sfx_get(bad);
  assert_int_equal(j.state, TW_JOB_FAILED);
  assert_int_equal(j.exit_code, 3);
  assert_string_equal(j.reason, "exited with code 3");
  tw_job_rec_release(&j);
}

static void offer_refusing_the_request_is_avoided(void **state) {
  (void)state;
  tw_fake_fail_offer(sfx_fake, "fake-a:r1:r1a:cpu.small:on-demand",
                     TW_E_INVALID, "InvalidAMIID.NotFound");
  add_offer("r1b", "cpu.small", TW_MARKET_ON_DEMAND, 120000, 4, NULL, 0);
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: r\nresources: {cpus: 4}\n", id);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(strstr(j.placement_json, "\"zone\":\"r1b\""));
  tw_job_rec_release(&j);
}

/* ---- placement: queue order, the stored plan, replication, backfill --- */

static void offer_at(struct tw_fake *f, const char *pname, const char *acct,
                     const char *region, const char *zone, const char *type,
                     enum tw_market m, int64_t price, int vcpus,
                     int64_t capacity) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "%s", pname);
  snprintf(o.account, sizeof o.account, "%s", acct);
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = vcpus;
  o.memory_mib = vcpus * 4096;
  o.market = m;
  o.price_uusd_per_hour = price;
  o.billing_granularity_s = 1;
  o.capacity = capacity;
  tw_offer_make_id(&o);
  tw_fake_add_offer(f, &o);
}

static bool has_event(const char *id, const char *text) {
  struct tw_job_event *ev;
  size_t n;
  bool found = false;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n, NULL), TW_OK);
  for (size_t i = 0; i < n; i++) {
    found |= ev[i].reason && strstr(ev[i].reason, text) != NULL;
    free(ev[i].reason);
  }
  free(ev);
  return found;
}

/* older is submitted, then newer 1 ms later, under a scheduler placing
 * one job per pass: newer's tenant holding less, newer is placed first
 * (its launch collected by the next pass, since older waits), older in
 * the pass after. */
static void newer_goes_first(const char *older, const char *newer) {
  char o[TW_JOB_ID_LEN + 1], n[TW_JOB_ID_LEN + 1];
  sfx_submit(older, o);
  tw_clock_advance(&sfx_clk, 1);
  sfx_submit(newer, n);
  sfx_tick();
  assert_true(sfx_state_of(n) == TW_JOB_PLACING ||
              sfx_state_of(n) == TW_JOB_PROVISIONING);
  assert_int_equal(sfx_state_of(o), TW_JOB_PENDING);
  sfx_tick();
  assert_int_equal(sfx_state_of(o), TW_JOB_PROVISIONING);
}

static void the_tenant_holding_less_goes_first(void **state) {
  (void)state;
  sched_again((struct tw_sched_opts){.max_place_per_tick = 1});
  char a1[TW_JOB_ID_LEN + 1];
  sfx_submit("name: a1\ntenant: a\nresources: {cpus: 4}\nduration: 1h\n", a1);
  sfx_tick();
  assert_int_equal(sfx_state_of(a1), TW_JOB_PROVISIONING);
  /* a2 waited longer than b1, but tenant a holds a1's vCPUs */
  newer_goes_first("name: a2\ntenant: a\nresources: {cpus: 4}\n",
                   "name: b1\ntenant: b\nresources: {cpus: 4}\n");
}

static size_t count_in(const char ids[][TW_JOB_ID_LEN + 1], size_t n,
                       enum tw_job_state st) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += sfx_state_of(ids[i]) == st;
  return k;
}

static void held_launches_reach(size_t n) {
  for (int i = 0; i < 500 && tw_fake_held(sfx_fake, TW_POP_LAUNCH) < n; i++)
    usleep(10000);
  assert_int_equal(tw_fake_held(sfx_fake, TW_POP_LAUNCH), n);
}

/* More queued than a pass may place: the pass does not wait for its
 * launches (the next one places the next jobs while they run, and
 * collects them).  The cloud holds every launch under a 20 s budget:
 * were a pass to wait for its calls, each would take the whole budget. */
static void a_backlog_pass_does_not_wait_for_its_launches(void **state) {
  (void)state;
  sched_again((struct tw_sched_opts){.max_place_per_tick = 2,
                                     .pass_budget_ms = 20000});
  char id[5][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 5; i++)
    sfx_submit("name: b\nresources: {cpus: 4}\nduration: 1h\n", id[i]);
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, true);
  int64_t t0 = tw_mono_us();
  sfx_tick();
  sfx_tick();
  int64_t took_ms = (tw_mono_us() - t0) / 1000;
  assert_true(took_ms < 10000);
  held_launches_reach(4);
  assert_int_equal(count_in(id, 5, TW_JOB_PLACING), 4);
  assert_int_equal(count_in(id, 5, TW_JOB_PENDING), 1);
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  /* the last job alone: that pass waits for its launch, and collects
   * the earlier four with it */
  sfx_tick();
  assert_int_equal(count_in(id, 5, TW_JOB_PENDING), 0);
  assert_int_equal(count_in(id, 5, TW_JOB_PLACING), 0);
}

/* Every pool full: the pass stops planning (the rest would find no
 * account free) and places them once calls came back.  One worker
 * holds 16 calls (SCHED_CALLS_QUEUE_PER_WORKER): the launches that fit
 * are sent, the next job finds no room, and the pass looks at no other. */
static void a_full_pool_ends_the_passs_planning(void **state) {
  (void)state;
  sfx_prov->concurrency = 1;
  sched_again((struct tw_sched_opts){.max_place_per_tick = 64,
                                     .pass_budget_ms = 100});
  enum { N = 24 };
  char id[N][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < N; i++)
    sfx_submit("name: f\nresources: {cpus: 4}\nduration: 1h\n", id[i]);
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, true);
  sfx_tick();
  held_launches_reach(1); /* one worker: the others queued behind it */
  struct tw_sched_pass_stats ps;
  tw_sched_last_pass(sfx_sched, &ps);
  assert_int_equal(ps.queued, N);
  /* 16 launches, or 15 when the pass's notice poll took a place first */
  size_t sent = count_in(id, N, TW_JOB_PLACING);
  assert_true(sent == 16 || sent == 15);
  assert_int_equal(count_in(id, N, TW_JOB_PENDING), N - sent);
  assert_int_equal(ps.looked_at, sent + 1);
  tw_fake_hold(sfx_fake, TW_POP_LAUNCH, false);
  /* placed, all of them (provisioning, or running once described) */
  for (int i = 0; i < 10 && count_in(id, N, TW_JOB_PENDING) +
                                    count_in(id, N, TW_JOB_PLACING) >
                                0;
       i++)
    sfx_tick();
  assert_int_equal(count_in(id, N, TW_JOB_PENDING), 0);
  assert_int_equal(count_in(id, N, TW_JOB_PLACING), 0);
  sfx_prov->concurrency = 0;
}

/* Fair share counts what the live jobs hold from their demands, kept
 * from pass to pass and found by job id (place.c, sched_usage).  When a
 * job ends, the ones after it move down and their index is built again:
 * the next passes still count each live job, where it now is, without
 * reading its row again, and order the queue as a scheduler counting
 * from the live attempts afresh would. */
static void usage_counts_the_jobs_moved_down_after_one_ends(void **state) {
  (void)state;
  sched_again((struct tw_sched_opts){.max_place_per_tick = 1});
  /* four tenants' jobs of different sizes, each placed in a pass of its
   * own and so counted from the next one: kept in this order */
  static const char *const yaml[] = {
      "name: x\ntenant: a\nresources: {cpus: 4}\nduration: 1h\n",
      "name: y\ntenant: d\nresources: {cpus: 2+}\nduration: 2h\n",
      "name: w\ntenant: b\nresources: {cpus: 1+, memory: 8+}\nduration: 3h\n",
      "name: z\ntenant: c\nresources: {cpus: 4}\nduration: 4h\n"};
  char live[4][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 4; i++) {
    sfx_submit(yaml[i], live[i]);
    sfx_tick();
    assert_int_equal(sfx_state_of(live[i]), TW_JOB_PROVISIONING);
  }
  sfx_tick(); /* z counted */
  sfx_tick(); /* all four seen running */
  uint64_t before = job_reads();
  sfx_tick();
  assert_int_equal(job_reads() - before, 0); /* a quiet pass reads none */
  /* x, the first of the four, is cancelled: the pass that ends its
   * attempt drops it, and y, w and z move down */
  struct tw_job_transition t = {
      .id = live[0], .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  sfx_tick();
  struct tw_attempt_rec *a = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_live(sfx_store, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++)
    assert_string_not_equal(a[i].job_id, live[0]);
  free(a);
  /* the passes after it find each of the three where it went */
  before = job_reads();
  sfx_tick();
  sfx_tick();
  assert_int_equal(job_reads() - before, 0);
  /* counted afresh, tenant c holds z's 4 vCPUs and tenant e nothing:
   * e's job goes first although c's waited longer (were z not counted,
   * the two would tie and the older one would win) */
  newer_goes_first("name: c2\ntenant: c\nresources: {cpus: 4}\n",
                   "name: e1\ntenant: e\nresources: {cpus: 4}\n");
}

static void the_stored_placement_carries_its_plan(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: p\nresources: {accelerators: A100-80GB:8}\nmax_price_per_hour: "
             "\"2.2\"\n",
             id);
  sfx_tick();
  struct tw_job_rec j = sfx_get(id);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(
      strstr(j.placement_json,
             "\"plan\":{\"offers\":4,\"counted\":true,\"feasible\":1"));
  assert_non_null(
      strstr(j.placement_json,
             "\"explain\":\"4 offers, 1 fit: 2 over max price $2.20/h, "
             "1 without exactly 8 A100-80GB\""));
  assert_non_null(
      strstr(j.placement_json,
             "{\"filter\":\"price\",\"stage\":\"offer\",\"count\":2"));
  tw_job_rec_release(&j);
  /* an hour by default, and a second of expected spot losses */
  assert_true(has_event(
      id, "best offer fake-a:r1:r1a:gpu.spot:spot, expected $2.000556"));
}

static void readers_of_one_dataset_share_one_copy(void **state) {
  (void)state;
  /* 1 TB in azure:westeurope; the cheapest machines are in aws:us-east-1:
   * three readers would pay $87 of egress each, one copy pays it once */
  offer_at(sfx_fake, "aws", "fake-a", "us-east-1", "us-east-1a", "m5.xlarge",
           TW_MARKET_ON_DEMAND, 50000, 4, -1);
  char id[3][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 3; i++)
    sfx_submit("name: r\nresources: {cpus: 4}\nduration: 5h\n"
               "datasets: [{uri: s3://corpus/v3, size: 1TB, location: "
               "azure:westeurope}]\n",
               id[i]);
  sfx_tick();
  struct tw_dataset_rec ds;
  assert_int_equal(tw_datasets_get(sfx_store, "s3://corpus/v3", &ds, NULL),
                   TW_OK);
  assert_int_equal(ds.n_locations, 2);
  int rep = !strcmp(ds.locations[1].location, "aws:us-east-1");
  assert_string_equal(ds.locations[1 - rep].location, "azure:westeurope");
  assert_string_equal(ds.locations[1 - rep].origin, "registered");
  assert_string_equal(ds.locations[rep].location, "aws:us-east-1");
  assert_string_equal(ds.locations[rep].origin, "replicated");
  assert_int_equal(ds.locations[rep].cost_uusd, 87000000);
  tw_dataset_rec_release(&ds);
  for (int i = 0; i < 3; i++) {
    struct tw_job_rec j = sfx_get(id[i]);
    assert_int_equal(j.state, TW_JOB_PROVISIONING);
    assert_non_null(strstr(j.placement_json, "\"region\":\"us-east-1\""));
    assert_non_null(strstr(j.placement_json, "\"egress_uusd\":0,"));
    tw_job_rec_release(&j);
    assert_true(
        has_event(id[i], "replicated to aws:us-east-1 once for 3 jobs"));
  }
}

/* A running batch job's end is known only from its describe: however
 * long it has been quiet, it is looked at every 5 s at the latest
 * (follow.c, BATCH_POLL_MAX_MS); the ramp alone would look 1, 3, 7, 15,
 * 31 and 63 s after, six times in a minute. */
static void a_running_batch_job_is_described_every_five_seconds(void **state) {
  (void)state;
  static struct tw_provider_ops batch;
  batch = tw_provider_fake;
  batch.supports |= TW_PROV_BATCH;
  struct tw_provider *bp;
  assert_int_equal(
      tw_provider_new_ops(&batch, "fake-b", NULL, &sfx_clk, &bp, NULL), TW_OK);
  offer_at(tw_fake_of(bp), "slurm", "fake-b", "hpc", "p1", "node",
           TW_MARKET_PRIVATE, 500000, 4, 5);
  tw_sched_free(sfx_sched);
  struct tw_provider *both[] = {sfx_prov, bp};
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = both,
                            .n_providers = 2,
                            .tick_ms = 1000};
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: b\nduration: 10h\nplacement: {providers: [slurm]}\n", id);
  sfx_tick();
  for (int i = 0; i < 5 && sfx_state_of(id) != TW_JOB_RUNNING; i++) {
    tw_clock_advance(&sfx_clk, 1000);
    sfx_tick();
  }
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  struct tw_fake *f = tw_fake_of(bp);
  size_t before = tw_fake_calls(f, TW_POP_DESCRIBE) +
                  tw_fake_calls(f, TW_POP_DESCRIBE_MANY);
  for (int i = 0; i < 60; i++) { /* a minute of 1 s ticks */
    tw_clock_advance(&sfx_clk, 1000);
    sfx_tick();
  }
  size_t looks = tw_fake_calls(f, TW_POP_DESCRIBE) +
                 tw_fake_calls(f, TW_POP_DESCRIBE_MANY) - before;
  if (looks < 11)
    fail_msg("%zu looks in 60 s", looks);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  tw_provider_free(bp);
}

static void backfill_keeps_the_head_jobs_reservation(void **state) {
  (void)state;
  /* a batch provider with a private pool of 5 nodes */
  static struct tw_provider_ops batch;
  batch = tw_provider_fake;
  batch.supports |= TW_PROV_BATCH;
  struct tw_provider *bp;
  assert_int_equal(
      tw_provider_new_ops(&batch, "fake-b", NULL, &sfx_clk, &bp, NULL), TW_OK);
  offer_at(tw_fake_of(bp), "slurm", "fake-b", "hpc", "p1", "node",
           TW_MARKET_PRIVATE, 500000, 4, 5);
  tw_sched_free(sfx_sched);
  struct tw_provider *both[] = {sfx_prov, bp};
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = both,
                            .n_providers = 2};
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
  char l[TW_JOB_ID_LEN + 1], h[TW_JOB_ID_LEN + 1], s1[TW_JOB_ID_LEN + 1],
      s2[TW_JOB_ID_LEN + 1];
  sfx_submit(
      "name: l\nnodes: 3\nduration: 10h\nplacement: {providers: [slurm]}\n", l);
  sfx_tick();
  assert_int_equal(sfx_state_of(l), TW_JOB_PROVISIONING);
  sfx_submit("name: h\npriority: 10\nnodes: 4\nduration: 2h\nplacement: "
             "{providers: [slurm]}\n",
             h);
  sfx_submit(
      "name: s1\npriority: 5\nduration: 1h\nplacement: {providers: [slurm]}\n",
      s1);
  sfx_submit(
      "name: s2\npriority: 1\nduration: 20h\nplacement: {providers: [slurm]}\n",
      s2);
  sfx_tick();
  /* l holds 3 nodes for 10 h; h needs 4 and waits for them; s1 takes a
   * free node and gives it back before then; s2 would still hold its node
   * when h's reservation starts */
  assert_int_equal(sfx_state_of(h), TW_JOB_PENDING);
  assert_true(has_event(
      h,
      "waiting for private capacity: 4 nodes of fake-b:hpc:p1:node:on-demand "
      "reserved from 2025-11-30T10:00:00.000Z"));
  assert_int_equal(sfx_state_of(s1), TW_JOB_PROVISIONING);
  assert_int_equal(sfx_state_of(s2), TW_JOB_PENDING);
  struct tw_job_rec j = sfx_get(s2);
  char want[128];
  snprintf(want, sizeof want, "1 reserved for job %s", h);
  if (!strstr(j.reason, want))
    fail_msg("s2: %s", j.reason);
  tw_job_rec_release(&j);
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  tw_provider_free(bp);
}


/* A second fake account whose instances run the job under the agents
 * the fixture plays (sfx_open_agents). */
static struct tw_provider *agents_provider(const char *account) {
  struct tw_node *cfg = tw_play_provider_cfg();
  struct tw_provider *p = NULL;
  assert_int_equal(
      tw_provider_new_ops(&tw_provider_fake, account, cfg, &sfx_clk, &p, NULL),
      TW_OK);
  tw_node_free(cfg);
  tw_play_also(sfx_play, p);
  return p;
}

/* A node freed by a finished job is free at the next pass, not once the
 * offers are listed again (scheduler.offers_ttl_s, 300 s by default). */
static void freed_private_nodes_count_at_the_next_pass(void **state) {
  (void)state;
  struct tw_provider *bp = agents_provider("fake-b");
  offer_at(tw_fake_of(bp), "slurm", "fake-b", "hpc", "p1", "node",
           TW_MARKET_PRIVATE, 500000, 4, 1);
  tw_sched_free(sfx_sched);
  struct tw_provider *both[] = {sfx_prov, bp};
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = both,
                            .n_providers = 2,
                            .agent = tw_play_agent(sfx_play)};
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1];
  sfx_submit("name: a\nduration: 10s\nplacement: {providers: [slurm]}\n", a);
  sfx_tick();
  assert_int_equal(sfx_state_of(a), TW_JOB_PROVISIONING);
  sfx_submit("name: b\nduration: 10s\nplacement: {providers: [slurm]}\n", b);
  sfx_tick();
  assert_int_equal(sfx_state_of(b), TW_JOB_PENDING);
  /* a runs its 10 s and ends well before the offers are listed again */
  for (int i = 0; i < 12 && sfx_state_of(a) != TW_JOB_SUCCEEDED; i++) {
    tw_clock_advance(&sfx_clk, 5 * 1000);
    sfx_tick();
  }
  assert_int_equal(sfx_state_of(a), TW_JOB_SUCCEEDED);
  sfx_tick();
  enum tw_job_state bs = sfx_state_of(b);
  assert_true(bs == TW_JOB_PROVISIONING || bs == TW_JOB_RUNNING);
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  tw_provider_free(bp);
}


/* The head job waiting for two nodes of a pool keeps its reservation: a
 * long small job does not take the node it waits for, and the head job
 * starts in the pass the job holding the other node ends. */
static void the_head_job_starts_when_its_nodes_come_back(void **state) {
  (void)state;
  struct tw_provider *bp = agents_provider("fake-b");
  offer_at(tw_fake_of(bp), "slurm", "fake-b", "hpc", "p1", "node",
           TW_MARKET_PRIVATE, 500000, 4, 2);
  tw_sched_free(sfx_sched);
  struct tw_provider *both[] = {sfx_prov, bp};
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = both,
                            .n_providers = 2,
                            .agent = tw_play_agent(sfx_play)};
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
  char a[TW_JOB_ID_LEN + 1], h[TW_JOB_ID_LEN + 1], sm[TW_JOB_ID_LEN + 1];
  sfx_submit("name: a\nduration: 20s\nplacement: {providers: [slurm]}\n", a);
  sfx_tick();
  assert_int_equal(sfx_state_of(a), TW_JOB_PROVISIONING);
  sfx_submit("name: h\npriority: 10\nnodes: 2\nduration: 1h\nplacement: "
             "{providers: [slurm]}\n",
             h);
  sfx_submit("name: s\npriority: 1\nduration: 1h\nplacement: "
             "{providers: [slurm]}\n",
             sm);
  sfx_tick();
  assert_int_equal(sfx_state_of(h), TW_JOB_PENDING);
  assert_true(has_event(h, "waiting for private capacity: 2 nodes"));
  /* s would still hold the free node when h's reservation starts */
  assert_int_equal(sfx_state_of(sm), TW_JOB_PENDING);
  int passes = 0;
  while (sfx_state_of(a) != TW_JOB_SUCCEEDED && passes < 20) {
    tw_clock_advance(&sfx_clk, 2 * 1000);
    sfx_tick();
    passes++;
    if (sfx_state_of(a) != TW_JOB_SUCCEEDED)
      assert_int_equal(sfx_state_of(sm), TW_JOB_PENDING);
  }
  assert_int_equal(sfx_state_of(a), TW_JOB_SUCCEEDED);
  /* the pass that ended a started h (or the next one at the latest) */
  if (sfx_state_of(h) == TW_JOB_PENDING)
    sfx_tick();
  enum tw_job_state hs = sfx_state_of(h);
  assert_true(hs == TW_JOB_PROVISIONING || hs == TW_JOB_RUNNING);
  assert_int_equal(sfx_state_of(sm), TW_JOB_PENDING);
  tw_sched_free(sfx_sched);
  sfx_sched = NULL;
  tw_provider_free(bp);
}

static size_t count_events(const char *id, const char *text) {
  struct tw_job_event *ev;
  size_t n, hits = 0;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n, NULL), TW_OK);
  for (size_t i = 0; i < n; i++) {
    hits += ev[i].reason && strstr(ev[i].reason, text) != NULL;
    free(ev[i].reason);
  }
  free(ev);
  return hits;
}

static void a_job_that_fits_nowhere_is_noted_once(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: h\nresources: {accelerators: H100:8}\n", id);
  for (int i = 0; i < 3; i++)
    sfx_tick();
  assert_int_equal(count_events(id, "no offer fits"), 1);
  /* new offers: planned (and counted) again, and placed */
  add_offer("r1c", "h100.od", TW_MARKET_ON_DEMAND, 30000000, 96, "H100", 8);
  tw_clock_advance(&sfx_clk, 301 * 1000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
}

/* A pass's notes (every job of the queue that fits nowhere) commit once,
 * after the start-up work done ahead of the first pass; the pass says
 * what it did. */
static void the_notes_of_a_pass_commit_together(void **state) {
  (void)state;
  char id[5][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 5; i++)
    sfx_submit("name: h\nresources: {accelerators: H100:8}\n", id[i]);
  assert_true(tw_sched_warm(sfx_sched) >= 0);
  struct tw_store_stats before, after;
  tw_store_stats(sfx_store, &before);
  sfx_tick();
  tw_store_stats(sfx_store, &after);
  struct tw_sched_pass_stats ps;
  tw_sched_last_pass(sfx_sched, &ps);
  assert_int_equal(ps.queued, 5);
  assert_int_equal(ps.looked_at, 5);
  assert_int_equal(ps.notes, 5);
  assert_true(ps.total_us >= ps.plan_us + ps.notes_us);
  /* one transaction for the five notes (there were five) */
  assert_int_equal(after.commits - before.commits, 1);
  for (int i = 0; i < 5; i++) {
    struct tw_job_rec j = sfx_get(id[i]);
    assert_int_equal(j.state, TW_JOB_PENDING);
    assert_non_null(strstr(j.reason, "no offer fits: 4 offers, 0 fit"));
    tw_job_rec_release(&j);
  }
  sfx_tick(); /* the same situation: nothing noted again */
  tw_sched_last_pass(sfx_sched, &ps);
  assert_int_equal(ps.notes, 0);
  for (int i = 0; i < 5; i++)
    assert_int_equal(count_events(id[i], "no offer fits"), 1);
}

static void data_moved_for_a_launch_is_metered_as_egress(void **state) {
  (void)state;
  struct tw_meter *m = NULL;
  struct tw_meter_opts mo = {.store = sfx_store, .clock = &sfx_clk};
  assert_int_equal(tw_meter_new(&mo, &m, NULL), TW_OK);
  tw_sched_free(sfx_sched);
  struct tw_sched_opts o = {.store = sfx_store,
                            .clock = &sfx_clk,
                            .providers = &sfx_prov,
                            .n_providers = 1,
                            .meter = m};
  assert_int_equal(tw_sched_new(&o, &sfx_sched, NULL), TW_OK);
  char id[TW_JOB_ID_LEN + 1];
  /* 100 GB living in another cloud's region, and a dataset of unknown
   * size, which cannot be metered */
  sfx_submit(
      "name: d\nresources: {cpus: 4}\n"
      "datasets:\n"
      "  - {uri: 's3://b/train', size: 100GB, location: 'aws:us-west-2'}\n"
      "  - {uri: 's3://b/none', location: 'aws:us-west-2'}\n",
      id);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  int64_t list = 0, eff = 0;
  assert_int_equal(tw_ledger_job_cost(sfx_store, id, &list, &eff, NULL), TW_OK);
  /* the built-in matrix's price from aws:us-west-2 to another cloud, 1e11
   * bytes: whatever it is per GB, 100 of them */
  struct tw_net_link l;
  struct tw_netmatrix *net = tw_netmatrix_builtin();
  tw_netmatrix_link(net, "aws:us-west-2", "fake:r1", &l);
  tw_netmatrix_free(net);
  assert_true(l.egress_uusd_per_gb > 0);
  assert_int_equal(list, 100 * l.egress_uusd_per_gb);
  tw_meter_free(m);
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_agents, teardown)
  const struct CMUnitTest tests[] = {
      TA(cheapest_feasible_offer_runs_to_completion),
      T(without_an_agent_the_clock_never_ends_a_job),
      T(capacity_error_moves_to_the_next_offer_at_once),
      T(nothing_fits_stays_pending_with_counts),
      T(interruption_sends_the_job_elsewhere),
      T(cancel_terminates_the_instance),
      T(describe_answers_need_no_read_of_the_job),
      T(a_quiet_running_instance_is_not_described_every_tick),
      T(a_running_batch_job_is_described_every_five_seconds),
      T(lost_launch_answer_is_resumed_with_the_same_token),
      T(throttled_launch_is_sent_again_with_the_same_token),
      T(batch_workload_exit_code_decides_the_outcome),
      T(offer_refusing_the_request_is_avoided),
      T(the_tenant_holding_less_goes_first),
      T(a_backlog_pass_does_not_wait_for_its_launches),
      T(a_full_pool_ends_the_passs_planning),
      T(usage_counts_the_jobs_moved_down_after_one_ends),
      T(the_stored_placement_carries_its_plan),
      T(readers_of_one_dataset_share_one_copy),
      T(backfill_keeps_the_head_jobs_reservation),
      TA(freed_private_nodes_count_at_the_next_pass),
      TA(the_head_job_starts_when_its_nodes_come_back),
      T(a_job_that_fits_nowhere_is_noted_once),
      T(the_notes_of_a_pass_commit_together),
      T(data_moved_for_a_launch_is_metered_as_egress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
