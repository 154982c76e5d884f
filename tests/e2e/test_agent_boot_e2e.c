/* test_agent_boot_e2e.c - the whole path with nothing faked inside it:
 * tradewindd with `agent: true` on the fake EC2 booting instances for real
 * (--boot), then on the local provider.  The broker launches with the
 * bootstrap as user data; the fake (or the local provider) runs it; the
 * bootstrap fetches tradewind-agent from the broker (agent.install:
 * fetch, SHA-256 pinned); the agent registers, runs the job, ships its
 * output and reports its exit:
 *
 *   a script that prints hello and exits 3 ends `failed` with exit 3,
 *   GET /v1/jobs/{id}/logs shows hello, and the instance is terminated
 *   with every process of it gone.
 *
 * SKIPPED when tradewindd, tradewind-agent or the fake is not built. */
#include "tests/twtest.h"

#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/mem.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/integration/twtest_fakecloud.h"

static char tmp[128], agent_bin[600];

static json_t *get_json(const char *url, const char *path, long *status) {
  struct twtest_resp r;
  json_t *j = NULL;
  if (twtest_http(url, "GET", path, NULL, NULL, &r) == 0)
    j = json_loadb(r.body, r.len, 0, NULL);
  *status = r.status;
  twtest_resp_release(&r);
  return j;
}

/* Submits the job, waits for its end; returns the job (json_decref it). */
static json_t *run_hello3(const char *url, char *id, size_t cap) {
  struct twtest_resp r;
  const char *job = "{\"name\":\"hello3\",\"resources\":{\"cpus\":\"1+\"},"
                    "\"duration\":\"45s\",\"run\":\"echo hello\\nexit 3\\n\"}";
  TW_CHECK(twtest_http(url, "POST", "/v1/jobs", "application/json", job, &r) ==
           0);
  TW_CHECK(r.status == 201 || r.status == 200 || r.status == 202,
           "submit: %ld %s", r.status, r.body);
  json_t *j = json_loadb(r.body, r.len, 0, NULL);
  snprintf(id, cap, "%s",
           json_string_value(json_object_get(j, "id"))
               ? json_string_value(json_object_get(j, "id"))
               : "");
  json_decref(j);
  twtest_resp_release(&r);
  TW_CHECK(id[0]);
  char path[200];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  for (int i = 0; i < 600; i++) {
    long st;
    j = get_json(url, path, &st);
    const char *s = json_string_value(json_object_get(j, "state"));
    if (s && (!strcmp(s, "failed") || !strcmp(s, "succeeded") ||
              !strcmp(s, "cancelled")))
      return j;
    json_decref(j);
    usleep(100000);
  }
  TW_FAIL("job %s did not end in 60 s", id);
  return NULL;
}

static void check_hello3(const char *url, const char *id, json_t *job) {
  TW_CHECK_STR(json_string_value(json_object_get(job, "state")), "failed");
  const char *reason = json_string_value(json_object_get(job, "reason"));
  TW_CHECK(reason && strstr(reason, "exited with code 3"), "reason: %s",
           reason ? reason : "(none)");
  char path[200];
  snprintf(path, sizeof path, "/v1/jobs/%s/logs", id);
  struct twtest_resp r;
  TW_CHECK(twtest_http(url, "GET", path, NULL, NULL, &r) == 0);
  TW_CHECK_INT(r.status, 200);
  TW_CHECK(strstr(r.body, "hello"), "logs: %s", r.body);
  twtest_resp_release(&r);
}

/* Every process whose working directory is under dir is gone (the
 * instances' sessions were killed). */
static bool none_under(const char *dir, int timeout_ms) {
  for (int t = 0; t < timeout_ms / 100; t++) {
    char cmd[400];
    snprintf(cmd, sizeof cmd,
             "for p in /proc/[0-9]*; do readlink $p/cwd; done 2>/dev/null | "
             "grep -q '^%s'",
             dir);
    if (system(cmd) != 0)
      return true;
    usleep(100000);
  }
  return false;
}

static void fake_ec2_boots_the_agent(void **state) {
  char boot[200];
  snprintf(boot, sizeof boot, "%s/boot", tmp);
  /* the helper freezes the fake clock; booting wants it to run */
  TW_CHECK(twtest_fake_start((const char *[]){"--clock-speed", "1", "--boot",
                                              "--boot-dir", boot,
                                              "--pending-ms", "500", NULL}),
           "the fake did not start");
  char *cfg = tw_asprintf(
      "log: {level: info}\nauth: {mode: open}\nscheduler: {tick_ms: 200}\n"
      "agent: {install: fetch, binary: %s, heartbeat_s: 2, "
      "heartbeat_timeout_s: 30}\n"
      "providers:\n"
      "  - name: aws-fake\n    type: aws\n    endpoint: %s\n"
      "    regions: [us-east-1]\n"
      "    access_key_env: TW_E2E_AWS_AK\n    secret_key_env: TW_E2E_AWS_SK\n"
      "    image: ami-0123456789abcdef0\n"
      "    on_demand_prices: {m5.large: \"0.096\"}\n"
      "    agent: true\n",
      agent_bin, twtest_fake_url);
  setenv("TW_E2E_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_E2E_AWS_SK", "tradewind-fake-secret", 1);
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, cfg) == 0 && twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  free(cfg);
  char id[64];
  json_t *job = run_hello3(d.url, id, sizeof id);
  check_hello3(d.url, id, job);
  /* the instance the job ran on is terminated, its processes gone */
  const char *iid = json_string_value(
      json_object_get(json_object_get(job, "placement"), "instance_id"));
  TW_CHECK(iid != NULL);
  char p[160];
  snprintf(p, sizeof p, "/_fake/ec2/instances/%s", iid ? iid : "-");
  bool terminated = false;
  for (int i = 0; i < 100 && !terminated; i++) {
    json_t *in = twtest_fake_ctl("GET", p, NULL);
    const char *st = json_string_value(json_object_get(in, "state"));
    terminated =
        st && (!strcmp(st, "terminated") || !strcmp(st, "shutting-down"));
    json_decref(in);
    if (!terminated)
      usleep(100000);
  }
  TW_CHECK(terminated, "%s was not terminated", iid ? iid : "-");
  TW_CHECK(none_under(boot, 3000), "processes of the instance live on");
  json_decref(job);
  bool failed = tw_failures() != 0;
  if (failed) {
    char *log = twtest_daemon_log_read(&d);
    fprintf(stderr, "%s\n", log);
    free(log);
  }
  twtest_daemon_cleanup(&d, failed);
  twtest_fake_stop();
}

static void local_provider_runs_the_agent(void **state) {
  char dir[200];
  snprintf(dir, sizeof dir, "%s/local", tmp);
  char *cfg = tw_asprintf(
      "log: {level: info}\nauth: {mode: open}\nscheduler: {tick_ms: 200}\n"
      "agent: {install: fetch, binary: %s, heartbeat_s: 2, "
      "heartbeat_timeout_s: 30}\n"
      "providers:\n"
      "  - name: here\n    type: local\n    dir: %s\n    cpus: 2\n"
      "    memory_gib: 4\n    agent: true\n",
      agent_bin, dir);
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, cfg) == 0 && twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  free(cfg);
  char id[64];
  json_t *job = run_hello3(d.url, id, sizeof id);
  check_hello3(d.url, id, job);
  TW_CHECK_STR(json_string_value(json_object_get(
                   json_object_get(job, "placement"), "provider")),
               "local");
  TW_CHECK(none_under(dir, 3000), "processes of the instance live on");
  json_decref(job);
  bool failed = tw_failures() != 0;
  if (failed) {
    char *log = twtest_daemon_log_read(&d);
    fprintf(stderr, "%s\n", log);
    free(log);
  }
  twtest_daemon_cleanup(&d, failed);
}

int main(void) {
  const char *bd = getenv("TW_BINARY_DIR");
  snprintf(agent_bin, sizeof agent_bin, "%s/tradewind-agent",
           bd && *bd ? bd : ".");
  struct stat st;
  if (stat(agent_bin, &st) || stat(twtest_daemon_binary(), &st)) {
    printf("SKIPPED: tradewind-agent or tradewindd is not built\n");
    return TW_SKIP;
  }
  snprintf(tmp, sizeof tmp, "/tmp/tw-agent-e2e-XXXXXX");
  if (!mkdtemp(tmp))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fake_ec2_boots_the_agent),
      cmocka_unit_test(local_provider_runs_the_agent),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (!rc) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd))
      fprintf(stderr, "cannot remove %s\n", tmp);
  }
  return rc;
}
