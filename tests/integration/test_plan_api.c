/* POST /v1/plan, the dataset registry and the policy set over HTTP, with
 * the scheduler's index behind them (an in-process fake provider), and
 * `tradewind plan` and `tradewind datasets` against the same server. */
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
  if (twtest_ps_open(&F, "plan"))
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

static void plan_ranks_and_explains_without_submitting(void **state) {
  (void)state;
  struct twtest_ps_resp r =
      twtest_ps_call(&F, "POST", "/v1/plan", "application/yaml",
                     "name: t\nresources: {accelerators: A100-80GB:8}\n"
                     "placement: {residency: EU}\n");
  assert_int_equal(r.status, 200);
  assert_non_null(
      strstr(r.body.data, "\"job\":{\"name\":\"t\",\"tenant\":\"default\"}"));
  assert_non_null(
      strstr(r.body.data, "\"offers\":5,\"counted\":true,\"feasible\":1"));
  assert_non_null(strstr(
      r.body.data,
      "\"offer_id\":\"lab:eu-west-1:eu-west-1a:p4de.24xlarge:on-demand\""));
  assert_non_null(strstr(r.body.data, "\"compute_uusd\":45000000"));
  assert_non_null(strstr(
      r.body.data, "\"explain\":\"5 offers, 1 fit: 3 outside jurisdiction EU, "
                   "1 without exactly 8 A100-80GB\""));
  /* each refusal with one offer it refused; the tie-break rule stated */
  assert_non_null(strstr(r.body.data, "\"reason\":\"outside jurisdiction "
                                      "EU\",\"example\":\"lab:"));
  assert_non_null(strstr(r.body.data, "\"tie_break\":\"equal total scores"));
  assert_non_null(strstr(r.body.data, "\"vcpus\":96,"));
  tw_buf_release(&r.body);
  /* the fast answer: no explanation */
  r = twtest_ps_call(&F, "POST", "/v1/plan?explain=false", "application/yaml",
                     "name: t\nresources: {accelerators: A100-80GB:8}\n"
                     "placement: {residency: EU}\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"counted\":false,\"feasible\":null"));
  assert_non_null(strstr(r.body.data, "p4de.24xlarge"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/plan?explain=maybe", "application/yaml",
                     "name: t\n");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "explain: expected true or false"));
  tw_buf_release(&r.body);
  /* nothing was stored */
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(F.store, counts, NULL), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], 0);
  /* errors name the field; wrong media types are refused */
  r = twtest_ps_call(&F, "POST", "/v1/plan", "application/json",
                     "{\"name\": \"t\", \"resources\": {\"cpus\": \"eight\"}}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"resources.cpus\""));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/plan", "text/plain", "name: t");
  assert_int_equal(r.status, 415);
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/plan?candidates=0", "application/yaml",
                     "name: t");
  assert_int_equal(r.status, 400);
  tw_buf_release(&r.body);
}

static void registered_datasets_price_the_data(void **state) {
  (void)state;
  struct twtest_ps_resp r =
      twtest_ps_call(&F, "POST", "/v1/datasets", "application/json",
                     "{\"uri\": \"s3://corpus/v3\", \"size\": \"2TB\","
                     " \"locations\": [\"aws:eu-west-1\"]}");
  assert_int_equal(r.status, 201);
  assert_non_null(strstr(r.body.data, "\"size_bytes\":2000000000000"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/datasets", "application/yaml",
                     "uri: s3://corpus/v3\nlocation: azure:westeurope\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "azure:westeurope"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/datasets", "application/json",
                     "{\"uri\": \"s3://x\", \"locations\": [\"mars:base\"]}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"locations[0]\""));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "POST", "/v1/datasets", "application/json",
                     "{\"uri\": \"s3://x\", \"sise\": 1}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "sise: unknown key; did you mean"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "GET", "/v1/datasets?uri=s3://corpus/v3", NULL, NULL);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"origin\":\"registered\""));
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "GET", "/v1/datasets?uri=s3://none", NULL, NULL);
  assert_int_equal(r.status, 404);
  tw_buf_release(&r.body);
  /* the spec names the dataset only: its size and copies come from the
   * registry, and the data pulls the job to eu-west-1 ($180 of egress
   * to us-east-1 against $0.044 an hour of difference) */
  r = twtest_ps_call(
      &F, "POST", "/v1/plan", "application/yaml",
      "name: etl\nresources: {cpus: 8}\ndatasets: [{uri: s3://corpus/v3}]\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"rank\":1,\"offer_id\":\"lab:eu-west-1:"
                                      "eu-west-1b:c5.2xlarge:on-demand\""));
  assert_non_null(strstr(r.body.data, "\"egress_uusd\":40000000"));
  tw_buf_release(&r.body);
}

static void policies_are_validated_before_they_apply(void **state) {
  (void)state;
  struct twtest_ps_resp r =
      twtest_ps_call(&F, "GET", "/v1/policies", NULL, NULL);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"reloads\":0"));
  assert_non_null(strstr(r.body.data, "\"candidates\":16"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(
      &F, "PUT", "/v1/policies", "application/yaml",
      "policies:\n  candidates: 4\n  scores: [{name: cost, weight: -3}]\n");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"policies.scores[0]\""));
  assert_non_null(strstr(
      r.body.data, "policies.scores[0].weight: must be between 0 and 1000000"));
  tw_buf_release(&r.body);
  /* nothing applied: still 16 candidates, no reload counted */
  r = twtest_ps_call(&F, "GET", "/v1/policies", NULL, NULL);
  assert_non_null(strstr(r.body.data, "\"reloads\":0"));
  assert_non_null(strstr(r.body.data, "\"candidates\":16"));
  tw_buf_release(&r.body);
  r = twtest_ps_call(
      &F, "PUT", "/v1/policies", "application/json",
      "{\"candidates\": 2, \"scores\": [{\"name\": \"cost\", \"weight\": 1},"
      " {\"name\": \"preference\", \"weight\": 3, \"prefer\": [{\"match\": "
      "\"aws:eu-*\","
      " \"bonus\": 1000000}]}]}");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"reloads\":1"));
  tw_buf_release(&r.body);
  /* the preference now outweighs cost: the dearer eu-west-1 machine */
  r = twtest_ps_call(&F, "POST", "/v1/plan", "application/yaml",
                     "name: t\nresources: {cpus: 8}\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"rank\":1,\"offer_id\":\"lab:eu-west-1:"
                                      "eu-west-1b:c5.2xlarge:on-demand\""));
  assert_non_null(strstr(
      r.body.data, "\"scores\":{\"cost\":885416,\"preference\":1000000}"));
  tw_buf_release(&r.body);
}

/* ---- the CLI ------------------------------------------------------------- */

static void the_cli_plans_and_registers(void **state) {
  (void)state;
  char spec[128];
  snprintf(spec, sizeof spec, "%s/job.yaml", F.dir);
  FILE *f = fopen(spec, "w");
  fputs("name: train\nresources: {accelerators: "
        "\"A100*:8\"}\nmax_price_per_hour: "
        "42\n",
        f);
  fclose(f);
  const char *plan[] = {"tradewind", "plan", spec, "-n", "2"};
  char *out = NULL;
  assert_int_equal(twtest_ps_cli(&F, plan, 5, &out), 0);
  assert_non_null(strstr(out, "Plan for train (tenant default): 5 offers, 2 "
                              "fit: 2 without exactly 8 A100*"));
  assert_non_null(
      strstr(out, "1     lab/us-east-1/us-east-1a/p4d.24xlarge   spot"));
  assert_non_null(strstr(out, "Filtered out:\n"));
  assert_non_null(strstr(out, "price         over max price $42.00/h"));
  assert_non_null(strstr(out, "Ties: equal total scores"));
  assert_non_null(strstr(out, "VCPUS"));
  free(out);
  /* nothing fits: exit 7 */
  f = fopen(spec, "w");
  fputs("name: none\nresources: {accelerators: H100:8}\n", f);
  fclose(f);
  assert_int_equal(twtest_ps_cli(&F, plan, 5, &out), 7);
  assert_non_null(strstr(out, "0 fit"));
  free(out);
  const char *add[] = {"tradewind", "datasets", "add", "gs://ref/hg38",
                       "--size",    "3TB",      "-l",  "aws:us-east-1"};
  assert_int_equal(twtest_ps_cli(&F, add, 8, &out), 0);
  assert_non_null(strstr(out, "gs://ref/hg38  3 TB  aws:us-east-1"));
  free(out);
  const char *list[] = {"tradewind", "datasets", "list"};
  assert_int_equal(twtest_ps_cli(&F, list, 3, &out), 0);
  assert_non_null(strstr(out, "URI"));
  assert_non_null(strstr(out, "gs://ref/hg38"));
  free(out);
  unlink(spec);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(plan_ranks_and_explains_without_submitting),
      T(registered_datasets_price_the_data),
      T(policies_are_validated_before_they_apply),
      T(the_cli_plans_and_registers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
