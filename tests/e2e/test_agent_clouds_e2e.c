/* test_agent_clouds_e2e.c - what a job's script does is what the broker
 * reports, on each booting fake cloud (`tradewind-fakecloud --boot`: EC2,
 * Alibaba ECS, Azure ARM) and on the local provider, with nothing faked between: tradewindd with
 * `agent: true`, the bootstrap fetching tradewind-agent, the agent running
 * the job.  For each cloud, one daemon:
 *
 *   - two jobs at once, one exiting 0 and one exiting 3: succeeded and
 *     failed with exit 3, each one's output read back from /logs;
 *   - (clouds with notices) a spot job that traps SIGTERM: the fake's
 *     interruption notice reaches it through the agent's metadata poll,
 *     its handler writes progress 42 to $TRADEWIND_CHECKPOINT_SAVED, the
 *     attempt ends interrupted, the next attempt starts with
 *     TRADEWIND_RESUME_S=42 and finishes;
 *   - the agent SIGKILLed while its job runs: its heartbeats stop, the
 *     broker finds the instance alive but silent, terminates it and places
 *     the job again; the second attempt finishes.
 *
 * Then broker_killed_while_50_jobs_run: tradewindd SIGKILLed and started
 * again while 50 jobs run on the local provider.  TW_E2E_CLOUD=ec2,
 * alibaba, azure, local or restart runs one of them.
 *
 * SKIPPED when tradewindd, tradewind-agent or the fake is not built. */
#include "tests/twtest.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/mem.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/integration/twtest_fakecloud.h"

static char tmp[128], agent_bin[600];

/* text with every "@X@" replaced by with (malloc'd) */
static char *replace_all(const char *text, const char *x, const char *with) {
  struct tw_buf b;
  tw_buf_init(&b);
  const char *p = text, *q;
  while ((q = strstr(p, x))) {
    tw_buf_add(&b, p, (size_t)(q - p));
    tw_buf_adds(&b, with);
    p = q + strlen(x);
  }
  tw_buf_adds(&b, p);
  char *out = tw_strdup(b.data);
  tw_buf_release(&b);
  return out;
}

static json_t *get_json(const char *url, const char *path) {
  struct twtest_resp r;
  json_t *j = NULL;
  if (twtest_http(url, "GET", path, NULL, NULL, &r) == 0 && r.status == 200)
    j = json_loadb(r.body, r.len, 0, NULL);
  twtest_resp_release(&r);
  return j;
}

static void submit(const char *url, const char *spec, char *id, size_t cap) {
  struct twtest_resp r;
  id[0] = '\0';
  TW_CHECK(twtest_http(url, "POST", "/v1/jobs", "application/json", spec,
                       &r) == 0);
  TW_CHECK(r.status == 201, "submit: %ld %s", r.status, r.body);
  json_t *j = json_loadb(r.body, r.len, 0, NULL);
  const char *s = json_string_value(json_object_get(j, "id"));
  snprintf(id, cap, "%s", s ? s : "");
  json_decref(j);
  twtest_resp_release(&r);
  TW_CHECK(id[0]);
}

/* The job once it is in one of the states (space-separated); NULL after
 * timeout_ms. */
static json_t *wait_state(const char *url, const char *id, const char *states,
                          int timeout_ms) {
  char path[200];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  for (int t = 0; t < timeout_ms / 100; t++) {
    json_t *j = get_json(url, path);
    const char *s = json_string_value(json_object_get(j, "state"));
    if (s) {
      char want[80];
      snprintf(want, sizeof want, " %s ", s);
      char hay[200];
      snprintf(hay, sizeof hay, " %s ", states);
      if (strstr(hay, want))
        return j;
    }
    json_decref(j);
    usleep(100000);
  }
  TW_FAIL("job %s did not reach {%s} in %d ms", id, states, timeout_ms);
  return NULL;
}

static json_t *wait_end(const char *url, const char *id) {
  return wait_state(url, id, "succeeded failed cancelled", 50000);
}

/* The job's output (stdout), malloc'd. */
static char *logs_of(const char *url, const char *id) {
  char path[200];
  snprintf(path, sizeof path, "/v1/jobs/%s/logs", id);
  struct twtest_resp r;
  char *out = tw_strdup("");
  if (twtest_http(url, "GET", path, NULL, NULL, &r) == 0 && r.status == 200) {
    free(out);
    out = tw_strdup(r.body ? r.body : "");
  }
  twtest_resp_release(&r);
  return out;
}

static const char *instance_of(json_t *job) {
  return json_string_value(
      json_object_get(json_object_get(job, "placement"), "instance_id"));
}

/* The attempt is running once its agent registered and the job printed
 * its first line. */
static void wait_output(const char *url, const char *id, const char *needle) {
  for (int t = 0; t < 300; t++) {
    char *l = logs_of(url, id);
    bool ok = strstr(l, needle) != NULL;
    free(l);
    if (ok)
      return;
    usleep(100000);
  }
  TW_FAIL("job %s never printed \"%s\"", id, needle);
}

/* SIGKILLs the tradewind-agent processes whose working directory is under
 * dir (the job's keeper lives on); returns how many. */
static int kill_agents_under(const char *dir) {
  int n = 0;
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d))) {
    char p[300], cwd[600], comm[64] = "";
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    snprintf(p, sizeof p, "/proc/%s/cwd", de->d_name);
    ssize_t k = readlink(p, cwd, sizeof cwd - 1);
    if (k <= 0)
      continue;
    cwd[k] = '\0';
    if (strncmp(cwd, dir, strlen(dir)))
      continue;
    snprintf(p, sizeof p, "/proc/%s/comm", de->d_name);
    FILE *f = fopen(p, "r");
    if (f) {
      if (!fgets(comm, sizeof comm, f))
        comm[0] = '\0';
      fclose(f);
    }
    if (!strncmp(comm, "tradewind-agen", 14) &&
        kill(atoi(de->d_name), SIGKILL) == 0)
      n++;
  }
  if (d)
    closedir(d);
  return n;
}

/* ---- the scenarios ------------------------------------------------------- */

static void exit_codes_and_output(const char *url) {
  char ok[64], bad[64];
  submit(url,
         "{\"name\":\"ok\",\"resources\":{\"cpus\":\"1+\"},"
         "\"run\":\"echo out-of-ok\\nexit 0\\n\"}",
         ok, sizeof ok);
  submit(url,
         "{\"name\":\"bad\",\"resources\":{\"cpus\":\"1+\"},"
         "\"run\":\"echo out-of-bad\\necho err-of-bad >&2\\nexit 3\\n\"}",
         bad, sizeof bad);
  json_t *j = wait_end(url, ok);
  TW_CHECK_STR(json_string_value(json_object_get(j, "state")), "succeeded");
  TW_CHECK_INT(json_integer_value(json_object_get(j, "exit_code")), 0);
  json_decref(j);
  j = wait_end(url, bad);
  TW_CHECK_STR(json_string_value(json_object_get(j, "state")), "failed");
  TW_CHECK_INT(json_integer_value(json_object_get(j, "exit_code")), 3);
  json_decref(j);
  char *l = logs_of(url, ok);
  TW_CHECK_STR(l, "out-of-ok\n");
  free(l);
  l = logs_of(url, bad);
  TW_CHECK_STR(l, "out-of-bad\n");
  free(l);
}

/* interrupt: the control route's prefix (then the instance id and
 * "/interrupt") and body; the fake's notice reaches the job through the
 * agent. */
static void checkpoint_at_a_notice(const char *url, const char *interrupt,
                                   const char *body) {
  char id[64];
  submit(url,
         "{\"name\":\"ckpt\",\"resources\":{\"cpus\":\"1+\","
         "\"market\":\"spot\"},\"duration\":\"10m\","
         "\"checkpoint\":{\"uri\":\"s3://ckpt/e2e/\",\"interval\":\"5m\"},"
         "\"run\":\"if [ \\\"${TRADEWIND_RESUME_S:-0}\\\" -gt 0 ]; then "
         "echo resumed from $TRADEWIND_RESUME_S; exit 0; fi\\n"
         "trap 'echo 42 > \\\"$TRADEWIND_CHECKPOINT_SAVED\\\"; echo saved; "
         "exit 0' TERM\\n"
         "echo started\\nwhile :; do sleep 0.1; done\\n\"}",
         id, sizeof id);
  json_t *j = wait_state(url, id, "running", 30000);
  wait_output(url, id, "started");
  char iid[128];
  snprintf(iid, sizeof iid, "%s", instance_of(j) ? instance_of(j) : "-");
  json_decref(j);
  char path[300];
  snprintf(path, sizeof path, "%s%s/%s", interrupt, iid,
           strstr(interrupt, "azure") ? "evict" : "interrupt");
  json_t *ans = twtest_fake_ctl("POST", path, body);
  TW_CHECK(ans != NULL, "POST %s: no answer", path);
  json_decref(ans);
  j = wait_end(url, id);
  TW_CHECK_STR(json_string_value(json_object_get(j, "state")), "succeeded");
  TW_CHECK(instance_of(j) && strcmp(instance_of(j), iid),
           "the job was not placed again (still on %s)", iid);
  json_decref(j);
  char *l = logs_of(url, id);
  /* /logs is the latest attempt's: 42 came from attempt 1's handler */
  TW_CHECK_STR(l, "resumed from 42\n");
  free(l);
}

static void agent_killed_is_placed_again(const char *url, const char *boot) {
  char id[64];
  submit(url,
         "{\"name\":\"orphan\",\"resources\":{\"cpus\":\"1+\"},"
         "\"run\":\"echo attempt $TRADEWIND_ATTEMPT\\n"
         "[ $TRADEWIND_ATTEMPT -gt 1 ] || sleep 30\\necho done\\n\"}",
         id, sizeof id);
  json_t *j = wait_state(url, id, "running", 30000);
  wait_output(url, id, "attempt 1");
  char iid[128];
  snprintf(iid, sizeof iid, "%s", instance_of(j) ? instance_of(j) : "-");
  json_decref(j);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/%s", boot, iid);
  TW_CHECK(kill_agents_under(dir) >= 1, "no agent found under %s", dir);
  j = wait_end(url, id);
  TW_CHECK_STR(json_string_value(json_object_get(j, "state")), "succeeded");
  TW_CHECK(instance_of(j) && strcmp(instance_of(j), iid),
           "the job was not placed again (still on %s)", iid);
  json_decref(j);
  char *l = logs_of(url, id);
  TW_CHECK_STR(l, "attempt 2\ndone\n");
  free(l);
}

/* ---- one daemon per cloud ------------------------------------------------ */

struct cloud {
  const char *name;
  const char *provider; /* YAML entry; @URL@: the fake's, @DIR@: a dir */
  const char *interrupt, *interrupt_body;
};

static void run_cloud(const struct cloud *c) {
  int f0 = tw_failures();
  char boot[200];
  snprintf(boot, sizeof boot, "%s/boot-%s", tmp, c->name);
  bool fake = strcmp(c->name, "local") != 0;
  if (fake)
    TW_CHECK(twtest_fake_start((const char *[]){"--clock-speed", "1",
                                                "--boot", "--boot-dir", boot,
                                                "--pending-ms", "300", NULL}),
             "the fake did not start");
  char *e1 = replace_all(c->provider, "@URL@", fake ? twtest_fake_url : "");
  char *entry = replace_all(e1, "@DIR@", boot);
  char *cfg = tw_asprintf(
      "log: {level: info}\nauth: {mode: open}\nscheduler: {tick_ms: 200}\n"
      "agent: {install: fetch, binary: %s, heartbeat_s: 1, "
      "heartbeat_timeout_s: 4, grace_s: 10}\n"
      "providers:\n%s",
      agent_bin, entry);
  free(e1);
  free(entry);
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, cfg) == 0 && twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  free(cfg);
  if (tw_failures() == f0)
    exit_codes_and_output(d.url);
  if (tw_failures() == f0 && c->interrupt)
    checkpoint_at_a_notice(d.url, c->interrupt, c->interrupt_body);
  if (tw_failures() == f0)
    agent_killed_is_placed_again(d.url, boot);
  bool failed = tw_failures() != f0;
  if (failed) {
    char *log = twtest_daemon_log_read(&d);
    fprintf(stderr, "%s\n", log);
    free(log);
  }
  twtest_daemon_cleanup(&d, failed);
  if (fake)
    twtest_fake_stop();
}

static void on_fake_ec2(void **state) {
  (void)state;
  setenv("TW_E2E_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_E2E_AWS_SK", "tradewind-fake-secret", 1);
  static const struct cloud c = {
      "ec2",
      "  - name: aws-fake\n    type: aws\n    endpoint: @URL@\n"
      "    regions: [us-east-1]\n"
      "    access_key_env: TW_E2E_AWS_AK\n    secret_key_env: TW_E2E_AWS_SK\n"
      "    image: ami-0123456789abcdef0\n"
      "    on_demand_prices: {m5.large: \"0.096\"}\n"
      "    agent: true\n",
      "/_fake/ec2/instances/", "{\"lead_ms\":20000}"};
  run_cloud(&c);
}

static void on_fake_alibaba(void **state) {
  (void)state;
  setenv("TW_E2E_ALI_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_E2E_ALI_SK", "tradewind-fake-secret", 1);
  static const struct cloud c = {
      "alibaba",
      "  - name: ali-fake\n    type: alibaba\n    endpoint: @URL@\n"
      "    cms_endpoint: @URL@\n    regions: [cn-hangzhou]\n"
      "    access_key_env: TW_E2E_ALI_AK\n    secret_key_env: TW_E2E_ALI_SK\n"
      "    image: ubuntu_22_04_x64_20G_alibase_20240101.vhd\n"
      "    instance_types: [ecs.g7.large]\n    spot_duration_h: 0\n"
      "    agent: true\n",
      "/_fake/alibaba/instances/", "{\"delay_ms\":0}"};
  run_cloud(&c);
}

static void on_fake_azure(void **state) {
  (void)state;
  setenv("TW_E2E_AZ_SECRET", "tradewind-fake-azure-secret", 1);
  static const struct cloud c = {
      "azure",
      "  - name: azure-fake\n    type: azure\n"
      "    tenant_id: tradewind-fake-tenant\n"
      "    client_id: tradewind-fake-client\n"
      "    client_secret_env: TW_E2E_AZ_SECRET\n"
      "    subscription_id: 00000000-0000-0000-0000-00000000a2e0\n"
      "    resource_group: tradewind\n    regions: [eastus]\n"
      "    authority: @URL@\n    management_endpoint: @URL@\n"
      "    prices_url: @URL@/api/retail/prices\n"
      "    image: Canonical:ubuntu-24_04-lts:server:latest\n"
      "    ssh_public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake\n"
      "    subnet_id: /subscriptions/00000000-0000-0000-0000-00000000a2e0/"
      "resourceGroups/tradewind/providers/Microsoft.Network/"
      "virtualNetworks/vnet/subnets/default\n"
      "    agent: true\n",
      "/_fake/azure/vms/", "{\"lead_ms\":20000}"};
  run_cloud(&c);
}

static void on_local(void **state) {
  (void)state;
  /* no notices on the local provider: no checkpoint scenario */
  static const struct cloud c = {
      "local",
      "  - name: here\n    type: local\n    dir: @DIR@\n    cpus: 4\n"
      "    memory_gib: 4\n    agent: true\n",
      NULL, NULL};
  run_cloud(&c);
}

/* A free TCP port on loopback (bound, then given back). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  int port = -1;
  if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
      !getsockname(fd, (struct sockaddr *)&a, &n))
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

static size_t entries_in(const char *dir) {
  size_t n = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    n += de->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

#define N_RESTART_JOBS 50
#define RESTART_LINES 25

/* The broker SIGKILLed and started again while 50 jobs run on the local
 * provider: every agent rides it out (retrying with backoff) and reports
 * to the new process; each job ends succeeded once, on its first attempt
 * and its first instance, with its whole output exactly once. */
static void broker_killed_while_50_jobs_run(void **state) {
  (void)state;
  int f0 = tw_failures();
  char boot[200];
  snprintf(boot, sizeof boot, "%s/boot-restart", tmp);
  int port = free_port();
  TW_CHECK(port > 0);
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, NULL) == 0);
  /* the agents call the address in their bootstrap: the same port again */
  char *cfg = tw_asprintf(
      "log: {level: info}\nauth: {mode: open}\nscheduler: {tick_ms: 200}\n"
      "listen: 127.0.0.1:%d\ndb: %s\n"
      "agent: {install: fetch, binary: %s, heartbeat_s: 1, "
      "heartbeat_timeout_s: 20, grace_s: 10}\n"
      "providers:\n"
      "  - name: here\n    type: local\n    dir: %s\n    cpus: 64\n"
      "    memory_gib: 64\n    agent: true\n",
      port, d.db, agent_bin, boot);
  d.override_addr = false;
  TW_CHECK(twtest_daemon_write_config(&d, cfg) == 0);
  free(cfg);
  TW_CHECK(twtest_daemon_start(&d) == 0, "tradewindd did not start");
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  static char ids[N_RESTART_JOBS][64], iids[N_RESTART_JOBS][128];
  /* each job waits for a gate the test opens after the restart (90 s at
   * most, should the test stop before), so all of them are running across
   * the kill however slow the machine is */
  char gate[300], spec[900];
  snprintf(gate, sizeof gate, "%s/gate", d.dir);
  snprintf(spec, sizeof spec,
           "{\"name\":\"many\",\"resources\":{\"cpus\":1},"
           "\"run\":\"echo attempt $TRADEWIND_ATTEMPT\\n"
           "n=0; while [ ! -e '%s' ] && [ $n -lt 900 ]; do sleep 0.1; "
           "n=$((n+1)); done\\n"
           "for i in $(seq %d); do echo line $i; sleep 0.02; done\\n"
           "echo end\\n\"}",
           gate, RESTART_LINES);
  for (int i = 0; i < N_RESTART_JOBS && tw_failures() == f0; i++)
    submit(url, spec, ids[i], sizeof ids[i]);
  /* all of them running, each on its instance, before the kill */
  for (int i = 0; i < N_RESTART_JOBS && tw_failures() == f0; i++) {
    json_t *j = wait_state(url, ids[i], "running", 30000);
    snprintf(iids[i], sizeof iids[i], "%s",
             instance_of(j) ? instance_of(j) : "-");
    json_decref(j);
  }
  if (tw_failures() == f0) {
    twtest_daemon_kill(&d);
    usleep(1500 * 1000); /* the agents find nobody home for a while */
    TW_CHECK(twtest_daemon_start(&d) == 0, "tradewindd did not start again");
    TW_CHECK_INT(d.port, port);
    /* the restart fell in the middle of the runs (they wait for the
     * gate): their ends are still to be reported, to the new process */
    int live = 0;
    for (int i = 0; i < N_RESTART_JOBS; i++) {
      char path[200];
      snprintf(path, sizeof path, "/v1/jobs/%.63s", ids[i]);
      json_t *j = get_json(url, path);
      const char *st = json_string_value(json_object_get(j, "state"));
      live += st && !strcmp(st, "running");
      json_decref(j);
    }
    TW_CHECK(live == N_RESTART_JOBS,
             "only %d jobs still running after the restart", live);
  }
  /* opened whatever happened above: no job is left waiting for it */
  FILE *g = fopen(gate, "w");
  TW_CHECK(g != NULL, "cannot open the gate %s", gate);
  if (g)
    fclose(g);
  char want[1024];
  int n = snprintf(want, sizeof want, "attempt 1\n");
  for (int l = 1; l <= RESTART_LINES; l++)
    n += snprintf(want + n, sizeof want - (size_t)n, "line %d\n", l);
  snprintf(want + n, sizeof want - (size_t)n, "end\n");
  int ok = 0;
  for (int i = 0; i < N_RESTART_JOBS && tw_failures() == f0; i++) {
    json_t *j = wait_end(url, ids[i]);
    const char *st = json_string_value(json_object_get(j, "state"));
    TW_CHECK(st && !strcmp(st, "succeeded"), "job %d: %s", i, st ? st : "-");
    TW_CHECK(instance_of(j) && !strcmp(instance_of(j), iids[i]),
             "job %d moved from %s", i, iids[i]);
    json_decref(j);
    char *l = logs_of(url, ids[i]);
    if (!strcmp(l, want))
      ok++;
    else
      TW_FAIL("job %d's output:\n%s", i, l);
    free(l);
  }
  TW_CHECK_INT(ok, N_RESTART_JOBS);
  /* one instance booted per job: nothing ran twice */
  TW_CHECK_INT(entries_in(boot), N_RESTART_JOBS);
  bool failed = tw_failures() != f0;
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
  snprintf(tmp, sizeof tmp, "/tmp/tw-clouds-e2e-XXXXXX");
  if (!mkdtemp(tmp))
    return 1;
  /* TW_E2E_CLOUD=ec2|alibaba|local runs that one only */
  const char *only = getenv("TW_E2E_CLOUD");
  if (only && *only)
    cmocka_set_test_filter(!strcmp(only, "local")     ? "on_local"
                           : !strcmp(only, "ec2")     ? "on_fake_ec2"
                           : !strcmp(only, "restart") ? "broker_killed*"
                           : !strcmp(only, "azure")   ? "on_fake_azure"
                                                      : "on_fake_alibaba");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(on_fake_ec2),
      cmocka_unit_test(on_fake_alibaba),
      cmocka_unit_test(on_fake_azure),
      cmocka_unit_test(on_local),
      cmocka_unit_test(broker_killed_while_50_jobs_run),
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
