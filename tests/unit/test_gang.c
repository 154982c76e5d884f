/* Gangs on a cloud (spec `nodes: N` > 1): one attempt with N instances,
 * all or nothing, over the in-process fake provider and a fake clock.
 * Launch in one zone, a capacity error on a later node, an interruption of
 * one node (without and with notice), cancel, a launch resumed after a lost
 * answer, and the reconciler adopting a gang and removing an instance beyond
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/sched/reconcile.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/sched_fixture.h"

#define GANG "name: g\nresources: {cpus: 4}\nnodes: 3\nduration: 10m\n"

/* The fake with a launch that fails its fail_at-th call with capacity, as
 * a zone running out between two nodes of a gang does. */
static struct tw_provider_ops flaky;
static int launch_calls, fail_at;

static enum tw_rc flaky_launch(struct tw_provider *p,
                               const struct tw_launch *req,
                               struct tw_instance *out, struct tw_err *err) {
  if (++launch_calls == fail_at) {
    tw_err_detail(err, "InsufficientInstanceCapacity");
    return tw_err_set(err, TW_E_CAPACITY,
                      "flaky launch: no capacity for node %s",
                      req->client_token);
  }
  return tw_provider_fake.launch(p, req, out, err);
}

static void add_offer(const char *zone, int64_t price) {
  struct tw_offer o;
  sfx_offer(&o, "r1", zone, "cpu.small", TW_MARKET_ON_DEMAND, price);
  o.vcpus = 4;
  o.memory_mib = 16384;
  o.min_charge_s = 60;
  sfx_add_offer(&o);
}

/* agents: tradewind-agent played on the instances (sfx_open_agents), for
 * the cases whose job runs to its end. */
static int setup_as(bool agents) {
  flaky = tw_provider_fake;
  flaky.launch = flaky_launch;
  launch_calls = 0;
  fail_at = 0;
  if ((agents ? sfx_open_agents : sfx_open)("gang", 1764460800000, &flaky))
    return -1;
  add_offer("r1a", 100000);
  add_offer("r1b", 120000);
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

/* The job's attempts; the caller frees. */
static struct tw_attempt_rec *attempts(const char *id, size_t *n) {
  struct tw_attempt_rec *a = NULL;
  assert_int_equal(tw_store_attempts_of(sfx_store, id, &a, n, NULL), TW_OK);
  return a;
}

static enum tw_instance_state inst_state(const char *iid) {
  struct tw_instance in;
  assert_int_equal(tw_fake_get(sfx_fake, iid, &in), TW_OK);
  return in.state;
}

/* Checks that attempt a has n nodes, each an instance of zone whose client
 * token is "<attempt token>-<k>" and tagged with the job and attempt, and
 * copies their ids to ids. */
static void assert_gang(const struct tw_attempt_rec *a, size_t n,
                        const char *zone, char ids[][128]) {
  struct tw_attempt_instance *g;
  size_t ng;
  assert_int_equal(tw_store_attempt_instances(sfx_store, a->id, &g, &ng, NULL),
                   TW_OK);
  assert_int_equal(ng, n);
  for (size_t k = 0; k < ng; k++) {
    assert_int_equal(g[k].k, (int)k + 1);
    struct tw_instance in;
    assert_int_equal(tw_fake_get(sfx_fake, g[k].instance_id, &in), TW_OK);
    assert_string_equal(in.zone, zone);
    char want[96];
    snprintf(want, sizeof want, "%s-%d", a->client_token, (int)k + 1);
    assert_string_equal(in.client_token, want);
    assert_string_equal(in.attempt_id, a->client_token);
    assert_string_equal(in.job_id, a->job_id);
    snprintf(ids[k], 128, "%s", g[k].instance_id);
  }
  /* readers of one instance per attempt see the first node */
  assert_string_equal(a->instance_id, g[0].instance_id);
  free(g);
}

static void a_gang_launches_three_instances_in_one_zone_and_runs(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 3);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  assert_int_equal(n, 1);
  char ids[3][128];
  assert_gang(&a[0], 3, "r1a", ids);
  struct tw_job_rec j = sfx_get(id);
  char want[512];
  snprintf(want, sizeof want, "\"instance_ids\":[\"%s\",\"%s\",\"%s\"]", ids[0],
           ids[1], ids[2]);
  assert_non_null(strstr(j.placement_json, want));
  tw_job_rec_release(&j);
  free(a);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  /* it runs its duration, then every node is given back */
  tw_clock_advance(&sfx_clk, 10 * 60 * 1000);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_SUCCEEDED);
  for (int k = 0; k < 3; k++)
    assert_int_equal(inst_state(ids[k]), TW_INST_TERMINATED);
}

static void
a_capacity_error_on_the_second_node_moves_the_whole_gang(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  fail_at = 2;
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  /* node 1 in r1a, given back; then three in r1b */
  assert_int_equal(tw_fake_instances_created(sfx_fake), 4);
  struct tw_instance first;
  assert_int_equal(tw_fake_get(sfx_fake, "fake-a-1", &first), TW_OK);
  assert_string_equal(first.zone, "r1a");
  assert_int_equal(first.state, TW_INST_TERMINATED);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  assert_int_equal(n, 2);
  assert_int_equal(a[0].state, TW_ATTEMPT_ENDED);
  assert_string_equal(a[0].end_reason, "capacity");
  char ids[3][128];
  assert_gang(&a[1], 3, "r1b", ids);
  for (int k = 0; k < 3; k++)
    assert_string_not_equal(ids[k], "fake-a-1");
  free(a);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
}

static void an_interrupted_node_places_the_whole_gang_again(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  char ids[3][128];
  assert_gang(&a[0], 3, "r1a", ids);
  free(a);
  /* node 2 is taken away without notice */
  assert_int_equal(tw_fake_set_state(sfx_fake, ids[1], TW_INST_TERMINATED),
                   TW_OK);
  tw_clock_advance(&sfx_clk, 121 * 1000);
  sfx_tick();
  /* the others are given back and a whole new gang is launched elsewhere */
  assert_int_equal(inst_state(ids[0]), TW_INST_TERMINATED);
  assert_int_equal(inst_state(ids[2]), TW_INST_TERMINATED);
  a = attempts(id, &n);
  assert_int_equal(n, 2);
  assert_string_equal(a[0].end_reason, "interrupted");
  char again[3][128];
  assert_gang(&a[1], 3, "r1b", again);
  free(a);
  assert_int_equal(tw_fake_instances_created(sfx_fake), 6);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
}

static void
a_notice_for_one_node_ends_the_whole_gang_at_its_deadline(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  char ids[3][128];
  assert_gang(&a[0], 3, "r1a", ids);
  free(a);
  assert_int_equal(tw_fake_interrupt(sfx_fake, ids[2], 120000), TW_OK);
  sfx_tick();
  /* noticed on the node it names; the gang still runs meanwhile */
  char want[200];
  snprintf(want, sizeof want, "interruption notice for %s", ids[2]);
  struct tw_job_event *ev;
  size_t n_ev, hits = 0;
  assert_int_equal(tw_store_job_events(sfx_store, id, &ev, &n_ev, NULL), TW_OK);
  for (size_t i = 0; i < n_ev; i++) {
    hits += ev[i].reason && strstr(ev[i].reason, want) != NULL;
    free(ev[i].reason);
  }
  free(ev);
  assert_int_equal(hits, 1);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  tw_clock_advance(&sfx_clk, 120 * 1000);
  sfx_tick();
  for (int k = 0; k < 3; k++)
    assert_int_equal(inst_state(ids[k]), TW_INST_TERMINATED);
  a = attempts(id, &n);
  assert_int_equal(n, 2);
  assert_string_equal(a[0].end_reason, "interrupted");
  char again[3][128];
  assert_gang(&a[1], 3, "r1b", again);
  free(a);
}

static void cancel_terminates_every_node(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  char ids[3][128];
  assert_gang(&a[0], 3, "r1a", ids);
  free(a);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  sfx_tick();
  for (int k = 0; k < 3; k++)
    assert_int_equal(inst_state(ids[k]), TW_INST_TERMINATED);
  struct tw_attempt_rec *live;
  assert_int_equal(tw_store_attempts_live(sfx_store, &live, &n, NULL), TW_OK);
  assert_int_equal(n, 0);
  free(live);
  assert_int_equal(sfx_state_of(id), TW_JOB_CANCELLED);
}

/* An attempt stored, then two of its nodes launched and their answers lost
 * (the daemon stopped in between). */
static struct tw_attempt_rec lost_gang(const char *id, int launched) {
  struct tw_attempt_new an = {.job_id = id,
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
  for (int k = 1; k <= launched; k++) {
    char token[64];
    snprintf(token, sizeof token, "%s-%d", a.client_token, k);
    struct tw_launch req = {.offer = &o,
                            .client_token = token,
                            .job_id = id,
                            .attempt_id = a.client_token,
                            .tenant = "default"};
    struct tw_instance inst;
    assert_int_equal(tw_provider_launch(sfx_prov, &req, &inst, NULL), TW_OK);
  }
  return a;
}

static void a_resumed_gang_launch_creates_no_extra_instance(void **state) {
  (void)state;
  char other[TW_JOB_ID_LEN + 1], id[TW_JOB_ID_LEN + 1];
  sfx_submit("name: warm\nresources: {cpus: 4}\n", other);
  sfx_tick(); /* loads the offers */
  sfx_submit(GANG, id);
  struct tw_attempt_rec a = lost_gang(id, 2);
  size_t before = tw_fake_instances_created(sfx_fake);
  sfx_tick();
  /* nodes 1 and 2 are found by their tokens; only node 3 is new */
  assert_int_equal(tw_fake_instances_created(sfx_fake), before + 1);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  size_t n;
  struct tw_attempt_rec *as = attempts(id, &n);
  assert_int_equal(n, 1);
  assert_int_equal(as[0].id, a.id);
  char ids[3][128];
  assert_gang(&as[0], 3, "r1a", ids);
  free(as);
  /* once more: nothing new */
  sfx_tick();
  assert_int_equal(tw_fake_instances_created(sfx_fake), before + 1);
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
}

static void the_reconciler_adopts_a_gang_and_ends_an_extra_node(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  /* all three nodes and a fourth were launched; no answer was stored */
  struct tw_attempt_rec a = lost_gang(id, 4);
  struct tw_reconcile *rec;
  struct tw_reconcile_opts ro = {.store = sfx_store,
                                 .clock = &sfx_clk,
                                 .providers = &sfx_prov,
                                 .n_providers = 1};
  assert_int_equal(tw_reconcile_new(&ro, &rec, NULL), TW_OK);
  struct tw_reconcile_stats st;
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.adopted, 3);
  assert_int_equal(st.terminated, 1);
  assert_int_equal(inst_state("fake-a-4"), TW_INST_TERMINATED);
  size_t n;
  struct tw_attempt_rec *as = attempts(id, &n);
  assert_int_equal(n, 1);
  assert_int_equal(as[0].id, a.id);
  assert_int_equal(as[0].state, TW_ATTEMPT_PROVISIONING);
  char ids[3][128];
  assert_gang(&as[0], 3, "r1a", ids);
  free(as);
  assert_int_equal(sfx_state_of(id), TW_JOB_PROVISIONING);
  /* the next pass finds everything as it should be */
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.adopted, 0);
  assert_int_equal(st.terminated, 0);
  for (int k = 0; k < 3; k++)
    assert_int_not_equal(inst_state(ids[k]), TW_INST_TERMINATED);
  /* an ended gang's nodes are orphans */
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(sfx_store, &t, NULL, NULL), TW_OK);
  struct tw_attempt_close c = {
      .attempt_id = a.id, .end_reason = "cancelled", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(sfx_store, &c, NULL), TW_OK);
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.terminated, 3);
  tw_reconcile_free(rec);
}

/* A node lost while the others cannot be terminated: the attempt stays
 * live, no new gang beside the old nodes, across a restart too; once the
 * terminates go through, the whole gang is placed again.  (Recording the
 * interruption before the terminates were confirmed let a restart in
 * between place a new instance beside a live one.) */
static void
a_lost_node_places_the_gang_again_only_once_the_rest_are_gone(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  sfx_submit(GANG, id);
  sfx_tick();
  sfx_tick();
  assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  size_t n;
  struct tw_attempt_rec *a = attempts(id, &n);
  char ids[3][128];
  assert_gang(&a[0], 3, "r1a", ids);
  free(a);
  tw_fake_fail(sfx_fake, TW_POP_TERMINATE, TW_E_RETRYABLE,
               "RequestLimitExceeded", -1);
  assert_int_equal(tw_fake_set_state(sfx_fake, ids[1], TW_INST_TERMINATED),
                   TW_OK);
  for (int restart = 0; restart < 2; restart++) {
    if (restart) { /* the next start decides the same */
      tw_sched_free(sfx_sched);
      assert_int_equal(sfx_start_sched(NULL), 0);
    }
    for (int k = 0; k < 2; k++) {
      tw_clock_advance(&sfx_clk, 61 * 1000);
      sfx_tick();
    }
    a = attempts(id, &n);
    assert_int_equal(n, 1);
    assert_int_not_equal(a[0].state, TW_ATTEMPT_ENDED);
    free(a);
    assert_int_equal(tw_fake_instances_created(sfx_fake), 3);
    assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 2);
    assert_int_equal(sfx_state_of(id), TW_JOB_RUNNING);
  }
  assert_true(tw_fake_calls(sfx_fake, TW_POP_TERMINATE) >= 2);
  /* the terminates go through: the whole gang again, elsewhere */
  tw_fake_clear_faults(sfx_fake);
  tw_clock_advance(&sfx_clk, 1000);
  sfx_tick();
  sfx_tick();
  assert_int_equal(inst_state(ids[0]), TW_INST_TERMINATED);
  assert_int_equal(inst_state(ids[2]), TW_INST_TERMINATED);
  a = attempts(id, &n);
  assert_int_equal(n, 2);
  assert_string_equal(a[0].end_reason, "interrupted");
  char again[3][128];
  assert_gang(&a[1], 3, "r1b", again);
  free(a);
  assert_int_equal(tw_fake_live_for_job(sfx_fake, id), 3);
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_agents, teardown)
  const struct CMUnitTest tests[] = {
      TA(a_gang_launches_three_instances_in_one_zone_and_runs),
      T(a_capacity_error_on_the_second_node_moves_the_whole_gang),
      T(an_interrupted_node_places_the_whole_gang_again),
      T(a_notice_for_one_node_ends_the_whole_gang_at_its_deadline),
      T(cancel_terminates_every_node),
      T(a_resumed_gang_launch_creates_no_extra_instance),
      T(the_reconciler_adopts_a_gang_and_ends_an_extra_node),
      T(a_lost_node_places_the_gang_again_only_once_the_rest_are_gone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
