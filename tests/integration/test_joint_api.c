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
  snprintf(dir, sizeof dir, "/tmp/tw-joint-XXXXXX");
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
  struct resp r = call("POST", "/v1/datasets", "application/json",
                       "{\"uri\": \"s3://corpus/raw\", \"size\": \"50GB\","
                       " \"locations\": [\"aws:us-east-1\", "
                       "\"aws:eu-west-1\"]}");
  assert_int_equal(r.status, 201);
  tw_buf_release(&r.body);
}

static void the_api_plans_a_workflow_jointly(void **state) {
  (void)state;
  register_raw();
  struct resp r = call("POST", "/v1/plan", "application/yaml", WORKFLOW);
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
  r = call("POST", "/v1/plan", "application/json",
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
    struct resp r = call("POST", "/v1/plan", "application/yaml", cases[i].body);
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
  snprintf(file, sizeof file, "%s/wf.yaml", dir);
  FILE *f = fopen(file, "w");
  fputs(WORKFLOW, f);
  fclose(f);
  const char *plan[] = {"tradewind", "plan", file};
  char *out = NULL;
  assert_int_equal(run_cli(plan, 3, &out), 0);
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
  assert_int_equal(run_cli(plan, 3, &out), 7);
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
