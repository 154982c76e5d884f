/* Dependencies, arrays and workflows run by the scheduler over the
 * in-process fake cloud and a fake clock: every pass moves the groups on
 * (sched_flow.c) before it places, jobs launch, run their duration or end
 * with an exit code, and what depends on them follows. */
#include "tests/twtest.h"

#include <unistd.h>

#include "broker/core/flow.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/agent_play.h"
#include "tests/unit/sched_fixture.h"

static int setup(void **state) {
  (void)state;
  if (sfx_open_agents("flow", 1764460800000, NULL))
    return -1;
  struct tw_offer o;
  sfx_offer(&o, "r1", "r1a", "cpu.small", TW_MARKET_ON_DEMAND, 100000);
  o.vcpus = 4;
  o.memory_mib = 16384;
  o.min_charge_s = 60;
  sfx_add_offer(&o);
  return sfx_start_sched(NULL);
}

static int teardown(void **state) {
  (void)state;
  sfx_close();
  return 0;
}

/* n rounds of the agents played on the instances, then a pass */
static void tick(int n) {
  for (int i = 0; i < n; i++)
    sfx_tick();
}

static void submit_group(const char *yaml, bool doc, char gid[32]) {
  struct tw_flow_plan p;
  struct tw_err err = {0};
  if (doc) {
    TW_CHECK_RC(tw_flow_doc_parse(yaml, strlen(yaml), false, NULL, &p, &err),
                TW_OK, err);
  } else {
    struct tw_job_spec s;
    TW_CHECK_RC(tw_spec_parse(yaml, strlen(yaml), false, &s, &err), TW_OK,
                err);
    struct tw_buf b;
    tw_buf_init(&b);
    tw_spec_to_json(&s, &b);
    TW_CHECK_RC(tw_flow_plan_from_spec(&s, b.data, &p, &err), TW_OK, err);
    tw_buf_release(&b);
    tw_spec_release(&s);
  }
  char id[TW_FLOW_GID_LEN + 1];
  TW_CHECK_RC(tw_store_flow_submit(sfx_store, &p, 0, NULL, NULL, id, &err),
              TW_OK, err);
  snprintf(gid, 32, "%s", id);
  tw_flow_plan_release(&p);
}

static struct tw_flow_rec group(const char *gid) {
  struct tw_flow_rec g;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_get(sfx_store, gid, &g, &err), TW_OK, err);
  return g;
}

/* prep -> train x3 -> pick: each step starts only when the one before
 * ended, and the whole succeeds. */
static void workflow_runs_in_order(void **state) {
  (void)state;
  char gid[32];
  submit_group("name: pipe\ntasks:\n"
               "  - {name: prep, outputs: [{uri: \"s3://b/x/\", size: 1GB}],"
               " job: {resources: {cpus: 4}, duration: 1m}}\n"
               "  - {name: train, depends: [prep], for_each: [a, b, c],"
               " job: {resources: {cpus: 4}, duration: 1m}}\n"
               "  - {name: pick, depends: [train], job: {resources: {cpus: 4},"
               " duration: 1m}}\n",
               true, gid);
  tick(3);
  struct tw_flow_rec g = group(gid);
  TW_CHECK_INT(g.running, 1);
  TW_CHECK_INT(g.waiting, 4);
  for (int round = 0; round < 6 && strcmp(g.state, "running") == 0; round++) {
    tw_clock_advance(&sfx_clk, 61 * 1000);
    tick(4);
    g = group(gid);
    if (round == 0) {
      TW_CHECK_INT(g.succeeded, 1);
      TW_CHECK_INT(g.running, 3);
      TW_CHECK_INT(g.waiting, 1);
    }
  }
  TW_CHECK_STR(g.state, "succeeded");
  TW_CHECK_INT(g.succeeded, 5);
  TW_CHECK_INT(tw_fake_instances_created(sfx_fake), 5);
  /* train read prep's output where prep ran */
  struct tw_flow_task_rec *t;
  size_t n;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_tasks(sfx_store, gid, -1, 10, &t, &n, &err), TW_OK,
              err);
  struct tw_job_rec j = sfx_get(t[1].job_id);
  TW_CHECK(strstr(j.spec_json, "\"uri\":\"s3://b/x/\"") &&
               strstr(j.spec_json, "\"location\":\"fake:r1\""),
           "%s", j.spec_json);
  tw_job_rec_release(&j);
  tw_store_flow_tasks_free(t, n);
}

/* %2: never more than two live at once, all six run. */
static void throttled_array_runs_two_at_a_time(void **state) {
  (void)state;
  char gid[32];
  submit_group("name: sweep\narray: \"0-5%2\"\nresources: {cpus: 4}\n"
               "duration: 1m\n",
               false, gid);
  int most = 0;
  struct tw_flow_rec g = group(gid);
  for (int round = 0; round < 12 && strcmp(g.state, "running") == 0;
       round++) {
    tick(3);
    g = group(gid);
    int live = (int)(g.running + g.pending);
    if (live > most)
      most = live;
    tw_clock_advance(&sfx_clk, 61 * 1000);
  }
  TW_CHECK_STR(g.state, "succeeded");
  TW_CHECK_INT(g.succeeded, 6);
  TW_CHECK_INT(most, 2);
}

/* afterok on a job that exits 1: the dependent fails with the reason;
 * afternotok on it runs. */
static void exit_code_decides_dependencies(void **state) {
  (void)state;
  char up[TW_JOB_ID_LEN + 1];
  sfx_submit("name: up\nresources: {cpus: 4}\nduration: 1h\n", up);
  char y[256], ok[32], notok[32];
  snprintf(y, sizeof y,
           "name: ok\nresources: {cpus: 4}\nduration: 1m\n"
           "depends_on: \"afterok:%s\"\n",
           up);
  struct tw_job_spec s;
  struct tw_err err = {0};
  const char *ys[2] = {y, NULL};
  char yn[256];
  snprintf(yn, sizeof yn,
           "name: notok\nresources: {cpus: 4}\nduration: 1m\n"
           "depends_on: \"afternotok:%s\"\n",
           up);
  ys[1] = yn;
  char *ids[2] = {ok, notok};
  for (int k = 0; k < 2; k++) {
    TW_CHECK_RC(tw_spec_parse(ys[k], strlen(ys[k]), false, &s, &err), TW_OK,
                err);
    struct tw_buf b;
    tw_buf_init(&b);
    tw_spec_to_json(&s, &b);
    struct tw_flow_plan p;
    TW_CHECK_RC(tw_flow_plan_from_spec(&s, b.data, &p, &err), TW_OK, err);
    struct tw_job_new req = {.name = s.name,
                             .tenant = "default",
                             .project = "default",
                             .spec_json = b.data,
                             .flow = &p};
    struct tw_job_rec r;
    TW_CHECK_RC(tw_store_job_create(sfx_store, &req, &r, NULL, &err), TW_OK,
                err);
    TW_CHECK_INT(r.state, TW_JOB_WAITING);
    snprintf(ids[k], 32, "%s", r.id);
    tw_job_rec_release(&r);
    tw_flow_plan_release(&p);
    tw_buf_release(&b);
    tw_spec_release(&s);
  }
  tick(3);
  TW_CHECK_INT(sfx_state_of(up), TW_JOB_RUNNING);
  TW_CHECK_INT(sfx_state_of(ok), TW_JOB_WAITING);
  struct tw_job_rec u = sfx_get(up);
  tw_job_rec_release(&u);
  /* the fake's instances are numbered in launch order */
  size_t before = tw_fake_instances_created(sfx_fake);
  char inst[32];
  snprintf(inst, sizeof inst, "fake-a-%zu", before);
  /* its agent reports exit 1 */
  TW_CHECK(tw_play_exit(sfx_play, inst, 1), "no agent runs on %s", inst);
  /* a running job is looked at on the follow cadence */
  tw_clock_advance(&sfx_clk, 61 * 1000);
  tick(4);
  TW_CHECK_INT(sfx_state_of(up), TW_JOB_FAILED);
  struct tw_job_rec d = sfx_get(ok);
  TW_CHECK_INT(d.state, TW_JOB_FAILED);
  TW_CHECK(strstr(d.reason, "DependencyNeverSatisfied") != NULL, "%s",
           d.reason);
  tw_job_rec_release(&d);
  enum tw_job_state ns = sfx_state_of(notok);
  TW_CHECK(ns == TW_JOB_PROVISIONING || ns == TW_JOB_RUNNING,
           "afternotok: %s", tw_job_state_str(ns));
}

int main(int argc, char **argv) {
  int r = sfx_backend(argc, argv);
  if (r)
    return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(workflow_runs_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(throttled_array_runs_two_at_a_time,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(exit_code_decides_dependencies, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
