/* test_user_data_agent_e2e.c - a script larger than EC2's 16 KiB of user
 * data, on a provider without `agent: true`: tradewindd launches with the
 * agent's bootstrap instead of refusing (broker/sched/launch.c), the fake
 * EC2 boots it for real (--boot), the agent fetches the whole script from
 * the broker, runs it and reports its exit; the job ends `failed` with
 * exit 3 and its logs hold what the script's last line printed.
 * SKIPPED when tradewindd, tradewind-agent or the fake is not built. */
#include "tests/twtest.h"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/mem.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/integration/twtest_fakecloud.h"

static char tmp[128], agent_bin[600];

static json_t *get_json(const char *url, const char *path) {
  struct twtest_resp r;
  json_t *j = NULL;
  if (twtest_http(url, "GET", path, NULL, NULL, &r) == 0)
    j = json_loadb(r.body, r.len, 0, NULL);
  twtest_resp_release(&r);
  return j;
}

static void big_script_through_the_agent(void **state) {
  (void)state;
  char boot[200];
  snprintf(boot, sizeof boot, "%s/boot", tmp);
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
      "    access_key_env: TW_UD_AWS_AK\n    secret_key_env: TW_UD_AWS_SK\n"
      "    image: ami-0123456789abcdef0\n"
      "    on_demand_prices: {m5.large: \"0.096\"}\n",
      agent_bin, twtest_fake_url);
  setenv("TW_UD_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_UD_AWS_SK", "tradewind-fake-secret", 1);
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, cfg) == 0 && twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  free(cfg);
  /* 45 KiB of comments, then the two lines that matter */
  struct tw_buf run;
  tw_buf_init(&run);
  for (int i = 0; i < 40 * 24; i++)
    tw_buf_adds(&run, "# padding to outgrow EC2's user data ..........\n");
  tw_buf_adds(&run, "echo big-script-ran\nexit 3\n");
  TW_CHECK(run.len > 16384 * 2);
  json_t *spec = json_pack("{s:s,s:{s:s},s:s,s:s}", "name", "big", "resources",
                           "cpus", "1+", "duration", "45s", "run", run.data);
  char *body = json_dumps(spec, 0);
  json_decref(spec);
  tw_buf_release(&run);
  struct twtest_resp r;
  TW_CHECK(twtest_http(d.url, "POST", "/v1/jobs", "application/json", body,
                       &r) == 0);
  free(body);
  TW_CHECK(r.status == 201 || r.status == 200 || r.status == 202,
           "submit: %ld %s", r.status, r.body);
  json_t *j = json_loadb(r.body, r.len, 0, NULL);
  char id[64];
  snprintf(id, sizeof id, "%s",
           json_string_value(json_object_get(j, "id"))
               ? json_string_value(json_object_get(j, "id"))
               : "");
  json_decref(j);
  twtest_resp_release(&r);
  char path[200];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *job = NULL;
  for (int i = 0; i < 900 && !job; i++) {
    j = get_json(d.url, path);
    const char *s = json_string_value(json_object_get(j, "state"));
    if (s && (!strcmp(s, "failed") || !strcmp(s, "succeeded") ||
              !strcmp(s, "cancelled")))
      job = j;
    else {
      json_decref(j);
      usleep(100000);
    }
  }
  TW_CHECK(job != NULL, "job %s did not end in 90 s", id);
  TW_CHECK_STR(json_string_value(json_object_get(job, "state")), "failed");
  const char *reason = json_string_value(json_object_get(job, "reason"));
  TW_CHECK(reason && strstr(reason, "exited with code 3"), "reason: %s",
           reason ? reason : "(none)");
  snprintf(path, sizeof path, "/v1/jobs/%s/logs", id);
  TW_CHECK(twtest_http(d.url, "GET", path, NULL, NULL, &r) == 0);
  TW_CHECK(r.body && strstr(r.body, "big-script-ran"), "logs: %s",
           r.body ? r.body : "");
  twtest_resp_release(&r);
  json_decref(job);
  bool failed = tw_failures() != 0;
  char *log = twtest_daemon_log_read(&d);
  TW_CHECK(log && strstr(log, "the agent delivers it"), "no log line");
  if (failed)
    fprintf(stderr, "%s\n", log);
  free(log);
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
  snprintf(tmp, sizeof tmp, "/tmp/tw-ud-e2e-XXXXXX");
  if (!mkdtemp(tmp))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(big_script_through_the_agent),
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
