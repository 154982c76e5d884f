/* POST /v1/plan with a workflow and `tradewind plan WORKFLOW` against a
 * server with the scheduler's index behind it (an in-process fake
 * provider): the joint placement beside step by step, per task where and
 * why, and the saving; bad workflows answer 400 naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/core/datasets.h"
#include "broker/sched/sched.h"
#include "broker/core/store.h"
#include "cli/cli.h"
#include "policies/place/placer.h"
#include "tests/fakes/fake_provider.h"
#include "tests/integration/twtest_plan_server.h"

static struct twtest_ps F;

static int setup(void **state) {
  (void)state;
  if (twtest_ps_open(&F, "joint"))
    return -1;
  twtest_ps_offer(&F, "us-east-1", "us-east-1a", "p4d.24xlarge", TW_MARKET_SPOT,
                  9800000, 96, "A100-40GB", 8, "US");
  twtest_ps_offer(&F, "us-east-1", "us-east-1a", "p4de.24xlarge",
                  TW_MARKET_ON_DEMAND, 40960000, 96, "A100-80GB", 8, "US");
  twtest_ps_offer(&F, "eu-west-1", "eu-west-1a", "p4de.24xlarge",
                  TW_MARKET_ON_DEMAND, 45000000, 96, "A100-80GB", 8, "EU");
  twtest_ps_offer(&F, "eu-west-1", "eu-west-1b", "c5.2xlarge",
                  TW_MARKET_ON_DEMAND, 384000, 8, NULL, 0, "EU");
  twtest_ps_offer(&F, "us-east-1", "us-east-1b", "c5.2xlarge",
                  TW_MARKET_ON_DEMAND, 340000, 8, NULL, 0, "US");
  return twtest_ps_start(&F, true);
}

static int teardown(void **state) {
  (void)state;
  twtest_ps_close(&F);
  return 0;
}

/* prep is cheaper in us-east-1 on its own; train must run in the EU.
 * Step by step prep's 500 GB crosses the Atlantic; jointly prep runs
 * beside train.  prep's input is named only: the registry has it in both
 * regions. */
static const char *const WORKFLOW =
    "name: etl-train\n"
    "tasks:\n"
    "  - name: prep\n"
    "    resources: {cpus: 8}\n"
    "    duration: 1h\n"
    "    inputs: [s3://corpus/raw]\n"
    "    outputs: {size: 500GB, where: s3://corpus/features}\n"
    "  - name: train\n"
    "    resources: {accelerators: 'A100-80GB:8', market: on-demand}\n"
    "    placement: {residency: EU}\n"
    "    duration: 1h\n"
    "    depends_on: [prep]\n";

static void register_raw(void) {
  struct twtest_ps_resp r =
      twtest_ps_call(&F, "POST", "/v1/datasets", "application/json",
                     "{\"uri\": \"s3://corpus/raw\", \"size\": \"50GB\","
                     " \"locations\": [\"aws:us-east-1\", "
                     "\"aws:eu-west-1\"]}");
  assert_int_equal(r.status, 201);
  tw_buf_release(&r.body);
}

static void the_api_plans_a_workflow_jointly(void **state) {
  (void)state;
  register_raw();
  struct twtest_ps_resp r =
      twtest_ps_call(&F, "POST", "/v1/plan", "application/yaml", WORKFLOW);
  assert_int_equal(r.status, 200);
  const char *j = r.body.data;
  const char *joint = strstr(j, "\"joint\":");
  const char *greedy = strstr(j, "\"greedy\":");
  assert_non_null(joint);
  assert_non_null(greedy);
  assert_non_null(strstr(j, "\"policies\":{\"generation\":"));
  assert_non_null(strstr(j, "\"method\":\"chain-dp\",\"exact\":true"));
  /* jointly both in eu-west-1; step by step prep in us-east-1 */
  const char *jp =
      strstr(joint, "{\"name\":\"prep\",\"region\":\"aws:eu-west-1\"");
  assert_non_null(jp);
  assert_true(jp < greedy);
  assert_non_null(
      strstr(joint, "{\"name\":\"train\",\"region\":\"aws:eu-west-1\""));
  assert_non_null(
      strstr(greedy, "{\"name\":\"prep\",\"region\":\"aws:us-east-1\""));
  /* 500 GB across at AWS's $0.02/GB between regions: $10 */
  assert_non_null(strstr(greedy, "\"egress_uusd\":10000000"));
  const char *sv = strstr(j, "\"saving_uusd\":");
  assert_non_null(sv);
  assert_true(atoll(sv + strlen("\"saving_uusd\":")) > 10000000);
  assert_non_null(strstr(j, "placed here to move less data between the steps"));
  tw_buf_release(&r.body);
  /* JSON too */
  r = twtest_ps_call(
      &F, "POST", "/v1/plan", "application/json",
      "{\"tasks\": [{\"name\": \"a\", \"resources\": {\"cpus\": 8}}]}");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"method\":\"none\""));
  assert_non_null(strstr(r.body.data, "\"saving_uusd\":0"));
  tw_buf_release(&r.body);
}

static void bad_workflows_name_the_field(void **state) {
  (void)state;
  static const struct {
    const char *body, *field;
  } cases[] = {
      {"tasks: [{name: a}, {name: b, depends_on: [c]}]\n",
       "\"field\":\"tasks[1].depends_on[0]\""},
      {"tasks: [{name: a, depends_on: [b]}, {name: b, depends_on: [a]}]\n",
       "cycle through"},
      {"tasks: [{name: a, placement: {providers: [awz]}}]\n",
       "\"field\":\"tasks[0].placement.providers"},
      {"tasks: [{name: a, outputs: {size: -1}}]\n",
       "\"field\":\"tasks[0].outputs.size\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct twtest_ps_resp r = twtest_ps_call(&F, "POST", "/v1/plan",
                                             "application/yaml", cases[i].body);
    if (r.status != 400 || !strstr(r.body.data, cases[i].field)) {
      fprintf(stderr, "case %zu: %ld %s\n", i, r.status, r.body.data);
      fail();
    }
    tw_buf_release(&r.body);
  }
}

static void the_cli_explains_both_placements(void **state) {
  (void)state;
  register_raw();
  char file[128];
  snprintf(file, sizeof file, "%s/wf.yaml", F.dir);
  FILE *f = fopen(file, "w");
  fputs(WORKFLOW, f);
  fclose(f);
  const char *plan[] = {"tradewind", "plan", file};
  char *out = NULL;
  assert_int_equal(twtest_ps_cli(&F, plan, 3, &out), 0);
  printf("%s", out);
  assert_non_null(strstr(out, "Workflow etl-train: 2 tasks, 1 edge"));
  assert_non_null(strstr(out, "saves $"));
  assert_non_null(strstr(out, "Joint placement:\n  prep: aws:eu-west-1"));
  assert_non_null(strstr(out, "Step by step:\n  prep: aws:us-east-1"));
  assert_non_null(strstr(out, "reads 500 GB from prep at aws:us-east-1"));
  free(out);
  /* a task that fits nowhere: exit 7 */
  f = fopen(file, "w");
  fputs("tasks: [{name: a, resources: {cpus: 8}}, {name: b, depends_on: [a], "
        "resources: {accelerators: 'H100:8'}}]\n",
        f);
  fclose(f);
  assert_int_equal(twtest_ps_cli(&F, plan, 3, &out), 7);
  assert_non_null(strstr(out, "task b fits no offer"));
  free(out);
  unlink(file);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(the_api_plans_a_workflow_jointly),
      T(bad_workflows_name_the_field),
      T(the_cli_explains_both_placements),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
