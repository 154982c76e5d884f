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

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_sched *sched;
static struct tw_api *api;
static struct tw_placer *placer;

struct resp {
  long status;
  struct tw_buf body;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static struct resp call(const char *method, const char *p, const char *ctype,
                        const char *body) {
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", tw_api_port(api), p);
  struct resp r = {0};
  tw_buf_init(&r.body);
  tw_buf_adds(&r.body, "");
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  if (ctype) {
    char line[128];
    snprintf(line, sizeof line, "Content-Type: %s", ctype);
    h = curl_slist_append(h, line);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

static void offer(const char *region, const char *zone, const char *type,
                  enum tw_market m, int64_t price, int vcpus, const char *accel,
                  int accels, const char *juris) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "aws");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = vcpus;
  o.memory_mib = vcpus * 4096LL;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.market = m;
  o.price_uusd_per_hour = price;
  o.billing_granularity_s = 1;
  tw_offer_set_label(&o, "jurisdiction", juris);
  tw_offer_make_id(&o);
  tw_fake_add_offer(tw_fake_of(prov), &o);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-plan-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/p.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (tw_store_open(&so, &store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", NULL, &clk, &prov, &err))
    return -1;
  offer("us-east-1", "us-east-1a", "p4d.24xlarge", TW_MARKET_SPOT, 9800000, 96,
        "A100-40GB", 8, "US");
  offer("us-east-1", "us-east-1a", "p4de.24xlarge", TW_MARKET_ON_DEMAND,
        40960000, 96, "A100-80GB", 8, "US");
  offer("eu-west-1", "eu-west-1a", "p4de.24xlarge", TW_MARKET_ON_DEMAND,
        45000000, 96, "A100-80GB", 8, "EU");
  offer("eu-west-1", "eu-west-1b", "c5.2xlarge", TW_MARKET_ON_DEMAND, 384000, 8,
        NULL, 0, "EU");
  offer("us-east-1", "us-east-1b", "c5.2xlarge", TW_MARKET_ON_DEMAND, 340000, 8,
        NULL, 0, "US");
  placer = tw_placer_new(NULL);
  struct tw_sched_opts sopt = {.store = store,
                               .clock = &clk,
                               .providers = &prov,
                               .n_providers = 1,
                               .placer = placer};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = store,
                             .clock = &clk,
                             .providers = &prov,
                             .n_providers = 1,
                             .adapters = tw_adapters_test,
                             .auth = {.open = true},
                             .placer = placer};
  curl_global_init(CURL_GLOBAL_ALL);
  if (tw_sched_new(&sopt, &sched, &err) || tw_api_start(&aopt, &api, &err))
    return -1;
  tw_sched_tick(sched); /* lists the offers, builds the index, publishes it */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_sched_free(sched);
  tw_placer_free(placer);
  tw_provider_free(prov);
  tw_store_close(store);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static void plan_ranks_and_explains_without_submitting(void **state) {
  (void)state;
  struct resp r = call("POST", "/v1/plan", "application/yaml",
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
  r = call("POST", "/v1/plan?explain=false", "application/yaml",
           "name: t\nresources: {accelerators: A100-80GB:8}\n"
           "placement: {residency: EU}\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"counted\":false,\"feasible\":null"));
  assert_non_null(strstr(r.body.data, "p4de.24xlarge"));
  tw_buf_release(&r.body);
  r = call("POST", "/v1/plan?explain=maybe", "application/yaml", "name: t\n");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "explain: expected true or false"));
  tw_buf_release(&r.body);
  /* nothing was stored */
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(store, counts, NULL), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], 0);
  /* errors name the field; wrong media types are refused */
  r = call("POST", "/v1/plan", "application/json",
           "{\"name\": \"t\", \"resources\": {\"cpus\": \"eight\"}}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"resources.cpus\""));
  tw_buf_release(&r.body);
  r = call("POST", "/v1/plan", "text/plain", "name: t");
  assert_int_equal(r.status, 415);
  tw_buf_release(&r.body);
  r = call("POST", "/v1/plan?candidates=0", "application/yaml", "name: t");
  assert_int_equal(r.status, 400);
  tw_buf_release(&r.body);
}

static void registered_datasets_price_the_data(void **state) {
  (void)state;
  struct resp r = call("POST", "/v1/datasets", "application/json",
                       "{\"uri\": \"s3://corpus/v3\", \"size\": \"2TB\","
                       " \"locations\": [\"aws:eu-west-1\"]}");
  assert_int_equal(r.status, 201);
  assert_non_null(strstr(r.body.data, "\"size_bytes\":2000000000000"));
  tw_buf_release(&r.body);
  r = call("POST", "/v1/datasets", "application/yaml",
           "uri: s3://corpus/v3\nlocation: azure:westeurope\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "azure:westeurope"));
  tw_buf_release(&r.body);
  r = call("POST", "/v1/datasets", "application/json",
           "{\"uri\": \"s3://x\", \"locations\": [\"mars:base\"]}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"locations[0]\""));
  tw_buf_release(&r.body);
  r = call("POST", "/v1/datasets", "application/json",
           "{\"uri\": \"s3://x\", \"sise\": 1}");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "sise: unknown key; did you mean"));
  tw_buf_release(&r.body);
  r = call("GET", "/v1/datasets?uri=s3://corpus/v3", NULL, NULL);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"origin\":\"registered\""));
  tw_buf_release(&r.body);
  r = call("GET", "/v1/datasets?uri=s3://none", NULL, NULL);
  assert_int_equal(r.status, 404);
  tw_buf_release(&r.body);
  /* the spec names the dataset only: its size and copies come from the
   * registry, and the data pulls the job to eu-west-1 ($180 of egress
   * to us-east-1 against $0.044 an hour of difference) */
  r = call(
      "POST", "/v1/plan", "application/yaml",
      "name: etl\nresources: {cpus: 8}\ndatasets: [{uri: s3://corpus/v3}]\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"rank\":1,\"offer_id\":\"lab:eu-west-1:"
                                      "eu-west-1b:c5.2xlarge:on-demand\""));
  assert_non_null(strstr(r.body.data, "\"egress_uusd\":40000000"));
  tw_buf_release(&r.body);
}

static void policies_are_validated_before_they_apply(void **state) {
  (void)state;
  struct resp r = call("GET", "/v1/policies", NULL, NULL);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"reloads\":0"));
  assert_non_null(strstr(r.body.data, "\"candidates\":16"));
  tw_buf_release(&r.body);
  r = call(
      "PUT", "/v1/policies", "application/yaml",
      "policies:\n  candidates: 4\n  scores: [{name: cost, weight: -3}]\n");
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"policies.scores[0]\""));
  assert_non_null(strstr(
      r.body.data, "policies.scores[0].weight: must be between 0 and 1000000"));
  tw_buf_release(&r.body);
  /* nothing applied: still 16 candidates, no reload counted */
  r = call("GET", "/v1/policies", NULL, NULL);
  assert_non_null(strstr(r.body.data, "\"reloads\":0"));
  assert_non_null(strstr(r.body.data, "\"candidates\":16"));
  tw_buf_release(&r.body);
  r = call(
      "PUT", "/v1/policies", "application/json",
      "{\"candidates\": 2, \"scores\": [{\"name\": \"cost\", \"weight\": 1},"
      " {\"name\": \"preference\", \"weight\": 3, \"prefer\": [{\"match\": "
      "\"aws:eu-*\","
      " \"bonus\": 1000000}]}]}");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"reloads\":1"));
  tw_buf_release(&r.body);
  /* the preference now outweighs cost: the dearer eu-west-1 machine */
  r = call("POST", "/v1/plan", "application/yaml",
           "name: t\nresources: {cpus: 8}\n");
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body.data, "\"rank\":1,\"offer_id\":\"lab:eu-west-1:"
                                      "eu-west-1b:c5.2xlarge:on-demand\""));
  assert_non_null(strstr(
      r.body.data, "\"scores\":{\"cost\":885416,\"preference\":1000000}"));
  tw_buf_release(&r.body);
}

/* ---- the CLI ------------------------------------------------------------- */

static void no_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  (void)ms;
}

static int run_cli(const char *const *argv, int argc, char **out) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", tw_api_port(api));
  size_t olen = 0, elen = 0;
  char *err = NULL;
  FILE *fo = open_memstream(out, &olen), *fe = open_memstream(&err, &elen);
  struct tw_cli_io io = {.out = fo,
                         .err = fe,
                         .in = stdin,
                         .env_url = url,
                         .clock = &clk,
                         .sleep_ms = no_sleep};
  int code = tw_cli_run(argc, (char **)argv, &io);
  fclose(fo);
  fclose(fe);
  if (code)
    fprintf(stderr, "cli: %s\n", err);
  free(err);
  return code;
}

static void the_cli_plans_and_registers(void **state) {
  (void)state;
  char spec[128];
  snprintf(spec, sizeof spec, "%s/job.yaml", dir);
  FILE *f = fopen(spec, "w");
  fputs("name: train\nresources: {accelerators: \"A100*:8\"}\nmax_price_per_hour: "
        "42\n",
        f);
  fclose(f);
  const char *plan[] = {"tradewind", "plan", spec, "-n", "2"};
  char *out = NULL;
  assert_int_equal(run_cli(plan, 5, &out), 0);
  assert_non_null(strstr(
      out,
      "Plan for train (tenant default): 5 offers, 2 fit: 2 without exactly 8 A100*"));
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
  assert_int_equal(run_cli(plan, 5, &out), 7);
  assert_non_null(strstr(out, "0 fit"));
  free(out);
  const char *add[] = {"tradewind", "datasets", "add", "gs://ref/hg38",
                       "--size",    "3TB",      "-l",  "aws:us-east-1"};
  assert_int_equal(run_cli(add, 8, &out), 0);
  assert_non_null(strstr(out, "gs://ref/hg38  3 TB  aws:us-east-1"));
  free(out);
  const char *list[] = {"tradewind", "datasets", "list"};
  assert_int_equal(run_cli(list, 3, &out), 0);
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
