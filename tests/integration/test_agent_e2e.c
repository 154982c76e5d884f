/* test_agent_e2e.c - the broker and the real tradewind-agent together: the
 * REST server and the scheduler (on its own thread, real time) in this
 * process over the in-process fake provider with `agent: true`; for each
 * launch the test runs the attempt's user data, the bootstrap, as a
 * process of its own (TRADEWIND_AGENT_DIR: a directory per instance),
 * which starts ${TW_BINARY_DIR}/tradewind-agent (agent.install:
 * preinstalled).  The agent registers, runs the script and reports:
 *
 *   a script that prints and exits 3: the job ends failed with exit 3 and
 *   GET /v1/jobs/{id}/logs reads what it printed;
 *   one that exits 0: succeeded.
 *
 * SKIPPED when the build has no tradewind-agent (it is built from agent/,
 * docs/agent.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/node.h"
#include "broker/core/store.h"
#include "broker/sched/agent.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"
#include "tests/twtest.h"

static char dir[64], path[128], base[64], agent_bin[512];
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_agent *agent;
static struct tw_sched *sched;
static struct tw_api *api;
static pid_t kids[16];
static int n_kids;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

static long http(const char *method, const char *p, const char *body,
                 struct tw_buf *out) {
  char url[320];
  snprintf(url, sizeof url, "%s%s", base, p);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  if (body)
    h = curl_slist_append(h, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return status;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-agente2e-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/a.db", dir);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path};
  struct tw_node *cfg = NULL;
  static const char CFG[] = "{agent: true}";
  if (tw_store_open(&so, &store, &err) ||
      tw_node_parse_yaml(CFG, sizeof CFG - 1, &cfg, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", cfg, NULL, &prov, &err))
    return -1;
  tw_node_free(cfg);
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "r1a");
  snprintf(o.instance_type, sizeof o.instance_type, "node");
  o.vcpus = 2;
  o.market = TW_MARKET_ON_DEMAND;
  o.price_uusd_per_hour = 10000;
  tw_offer_make_id(&o);
  tw_fake_add_offer(tw_fake_of(prov), &o);
  struct tw_agent_opts ao = {.store = store,
                             .preinstalled = true,
                             .agent_path = agent_bin,
                             .heartbeat_s = 1,
                             .heartbeat_timeout_s = 60,
                             .max_log_bytes = 1 << 20,
                             .grace_s = 10};
  if (tw_agent_new(&ao, &agent, &err))
    return -1;
  struct tw_sched_opts sopt = {.store = store,
                               .providers = &prov,
                               .n_providers = 1,
                               .tick_ms = 100,
                               .agent = agent};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = store,
                             .providers = &prov,
                             .n_providers = 1,
                             .auth = {.open = true},
                             .agent = agent};
  curl_global_init(CURL_GLOBAL_ALL);
  if (tw_sched_new(&sopt, &sched, &err) || tw_api_start(&aopt, &api, &err))
    return -1;
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(api));
  tw_agent_set_url(agent, base);
  return tw_sched_start(sched, &err) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < n_kids; i++) {
    kill(-kids[i], SIGKILL);
    waitpid(kids[i], NULL, 0);
  }
  tw_api_stop(api);
  tw_sched_free(sched);
  tw_agent_free(agent);
  tw_provider_free(prov);
  tw_store_close(store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "left %s behind\n", dir);
  curl_global_cleanup();
  return 0;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Boots instance id: its user data run by sh in a directory of its own,
 * in a process group of its own. */
static void boot(const char *id) {
  char ud[8192], idir[256], script[320];
  assert_int_equal(tw_fake_user_data(tw_fake_of(prov), id, ud, sizeof ud, NULL),
                   TW_OK);
  snprintf(idir, sizeof idir, "%s/%s", dir, id);
  assert_int_equal(mkdir(idir, 0700), 0);
  snprintf(script, sizeof script, "%s/boot.sh", idir);
  FILE *f = fopen(script, "w");
  assert_non_null(f);
  fputs(ud, f);
  fclose(f);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    setenv("TRADEWIND_AGENT_DIR", idir, 1);
    setenv("TRADEWIND_INSTANCE_ID", id, 1);
    execl("/bin/sh", "sh", script, (char *)NULL);
    _exit(127);
  }
  kids[n_kids++] = pid;
}

/* Submits, boots its instance, and waits (30 s) for a terminal state. */
static json_t *run_job(const char *name, const char *script) {
  char body[512];
  snprintf(body, sizeof body,
           "{\"name\":\"%s\",\"resources\":{\"cpus\":2},\"run\":\"%s\"}", name,
           script);
  struct tw_buf out;
  tw_buf_init(&out);
  TW_CHECK(http("POST", "/v1/jobs", body, &out) == 201, "submit: %s", out.data);
  json_t *j = json_loads(out.data, 0, NULL);
  char id[64];
  snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
  json_decref(j);
  bool booted = false;
  for (int i = 0; i < 300; i++) {
    if (!booted) {
      struct tw_attempt_rec *at = NULL;
      size_t n = 0;
      if (tw_store_attempts_of(store, id, &at, &n, NULL) == TW_OK && n &&
          at[n - 1].instance_id[0]) {
        boot(at[n - 1].instance_id);
        booted = true;
      }
      free(at);
    }
    char p[128];
    snprintf(p, sizeof p, "/v1/jobs/%s", id);
    tw_buf_reset(&out);
    if (http("GET", p, NULL, &out) == 200) {
      j = json_loads(out.data, 0, NULL);
      const char *st = json_string_value(json_object_get(j, "state"));
      if (st && (!strcmp(st, "succeeded") || !strcmp(st, "failed"))) {
        tw_buf_release(&out);
        return j;
      }
      json_decref(j);
    }
    nap_ms(100);
  }
  tw_buf_release(&out);
  fail_msg("job %s did not end within 30 s", id);
  return NULL;
}

static void a_script_that_exits_3_fails_with_its_output(void **state) {
  (void)state;
  json_t *j = run_job("three", "echo hello from the job; exit 3");
  assert_string_equal(json_string_value(json_object_get(j, "state")), "failed");
  assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
  char p[128];
  snprintf(p, sizeof p, "/v1/jobs/%s/logs",
           json_string_value(json_object_get(j, "id")));
  struct tw_buf out;
  tw_buf_init(&out);
  assert_int_equal(http("GET", p, NULL, &out), 200);
  TW_CHECK(out.data && strstr(out.data, "hello from the job"),
           "the job's output: %s", out.data ? out.data : "");
  tw_buf_release(&out);
  json_decref(j);
}

static void a_script_that_exits_0_succeeds(void **state) {
  (void)state;
  json_t *j = run_job("zero", "true");
  assert_string_equal(json_string_value(json_object_get(j, "state")),
                      "succeeded");
  assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 0);
  json_decref(j);
}

int main(void) {
  const char *bd = getenv("TW_BINARY_DIR");
  snprintf(agent_bin, sizeof agent_bin, "%s/tradewind-agent", bd ? bd : ".");
  if (access(agent_bin, X_OK)) {
    printf("SKIPPED: no %s in this build\n", agent_bin);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_script_that_exits_3_fails_with_its_output),
      cmocka_unit_test(a_script_that_exits_0_succeeds),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
