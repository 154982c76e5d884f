/* test_slurm_queue.c - the broker's queue on the project's real Slurm
 * cluster keeps the promises of docs/placement.md ("The queue", "Gangs and
 * backfill"):
 *
 *   head_job_starts_when_the_holder_ends  a 2-node job waits for a job
 *       holding one of the cpu partition's two nodes and is launched within
 *       one pass of that job's end, although the partition is listed again
 *       only every 300 s (scheduler.offers_ttl_s)
 *   short_job_backfills_into_the_gap      while that head job waits for a
 *       35 s job, a 10 s job starts at once beside it; a 60 s job, which
 *       would delay the head job, does not
 *   late_tenant_gets_the_next_free_slot   a tenant arriving behind 50
 *       pending jobs of another gets the next node that frees (DRF)
 *   no_spot_share_goes_on_demand_at_once  a market-any job of a tenant
 *       whose spot share is 0 runs on on-demand capacity at once, although
 *       more than `candidates` spot offers are cheaper (fake EC2 beside the
 *       cluster)
 *
 *   test_slurm_queue TRADEWINDD TRADEWIND TRADEWIND-FAKECLOUD
 *
 * Times are the broker's own (job events), compared with each other; the
 * bounds allow for a loaded machine and say what they guard against. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/e2e/twtest_slurm.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

static const char *cli_bin, *fake_bin;
static struct twtest_daemon d;
static struct twtest_slurm sl;
static pid_t fake_pid;
static char fake_url[64];

/* How long one pass may take on a loaded 2-core machine (tick 200 ms). */
#define PASS_SLACK_MS 3000

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static json_t *call(const char *method, const char *path, const char *body,
                    long *status) {
  struct twtest_resp r;
  json_t *j = NULL;
  *status = 0;
  if (twtest_http(d.url, method, path, body ? "application/json" : NULL, body,
                  &r) == 0) {
    *status = r.status;
    j = json_loads(r.body, 0, NULL);
    if (r.status >= 400)
      fprintf(stderr, "%s %s: %ld %s\n", method, path, r.status, r.body);
  }
  twtest_resp_release(&r);
  return j;
}

static const char *jstr(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* Submits a job on the cpu partition: its id in id (64 bytes). */
static bool submit(const char *name, const char *tenant, int nodes,
                   int duration_s, const char *run, char *id) {
  char body[1024];
  snprintf(body, sizeof body,
           "{\"name\":\"%s\",\"tenant\":\"%s\",\"nodes\":%d,"
           "\"resources\":{\"cpus\":8},\"duration_s\":%d,"
           "\"placement\":{\"providers\":[\"slurm\"],"
           "\"selectors\":[{\"label\":\"zone\",\"in\":[\"cpu\"]}]},"
           "\"run\":\"%s\"}",
           name, tenant, nodes, duration_s, run);
  long st;
  json_t *j = call("POST", "/v1/jobs", body, &st);
  bool ok = j && (st == 201 || st == 202) && *jstr(j, "id");
  if (ok)
    snprintf(id, 64, "%s", jstr(j, "id"));
  else
    fprintf(stderr, "submit %s: %ld\n", name, st);
  json_decref(j);
  return ok;
}

static void cancel(const char *id) {
  char path[160];
  long st;
  snprintf(path, sizeof path, "/v1/jobs/%.63s", id);
  json_decref(call("DELETE", path, NULL, &st));
}

static int64_t parse_ms(const char *iso) {
  struct tm tm = {0};
  int ms = 0;
  if (sscanf(iso, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
             &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (int64_t)timegm(&tm) * 1000 + ms;
}

/* When the job first entered state `to` (wall ms from its events), or -1. */
static int64_t entered(const char *id, const char *to) {
  char path[160];
  long st;
  snprintf(path, sizeof path, "/v1/jobs/%.63s/events", id);
  json_t *j = call("GET", path, NULL, &st);
  json_t *items = json_is_array(j) ? j : json_object_get(j, "items");
  int64_t at = -1;
  size_t i;
  json_t *e;
  json_array_foreach(items, i, e) {
    if (!strcmp(jstr(e, "to"), to)) {
      at = parse_ms(jstr(e, "at"));
      break;
    }
  }
  json_decref(j);
  return at;
}

static const char *state_of(const char *id, char *buf, size_t size) {
  char path[160];
  long st;
  snprintf(path, sizeof path, "/v1/jobs/%.63s", id);
  json_t *j = call("GET", path, NULL, &st);
  snprintf(buf, size, "%s", jstr(j, "state"));
  json_decref(j);
  return buf;
}

/* Waits until the job's state is one of the '|'-separated states. */
static bool wait_state(const char *id, const char *states, int timeout_ms) {
  int64_t end = mono_ms() + timeout_ms;
  char s[32], want[128];
  do {
    state_of(id, s, sizeof s);
    snprintf(want, sizeof want, "|%s|", states);
    char probe[40];
    snprintf(probe, sizeof probe, "|%s|", s);
    if (s[0] && strstr(want, probe))
      return true;
    nap(100);
  } while (mono_ms() < end);
  char path[160];
  long st;
  snprintf(path, sizeof path, "/v1/jobs/%.63s", id);
  json_t *j = call("GET", path, NULL, &st);
  fprintf(stderr, "job %s is %s (reason: %s), waited for %s\n", id, s,
          jstr(j, "reason"), states);
  json_decref(j);
  return false;
}

/* A launched job: provisioning reached (a private job may go on to
 * running in the same pass). */
static int64_t launched_at(const char *id) {
  int64_t p = entered(id, "provisioning");
  return p >= 0 ? p : entered(id, "running");
}

/* ---- the cases ---------------------------------------------------------- */

static void head_job_starts_when_the_holder_ends(void **state) {
  (void)state;
  char holder[64], head[64];
  TW_CHECK(submit("holder", "default", 1, 8, "sleep 8", holder), "holder");
  TW_CHECK(wait_state(holder, "running", 30000), "holder never ran");
  TW_CHECK(submit("head", "default", 2, 5, "sleep 1", head), "head");
  TW_CHECK(wait_state(holder, "succeeded", 40000), "holder never ended");
  TW_CHECK(wait_state(head, "running|succeeded", 30000), "head never ran");
  int64_t end = entered(holder, "succeeded"), start = launched_at(head);
  fprintf(stderr, "holder ended at +0 ms, head launched at %+lld ms\n",
          (long long)(start - end));
  TW_CHECK(end > 0 && start >= end,
           "the head job (2 nodes of 2) launched before the holder ended");
  TW_CHECK(start - end <= PASS_SLACK_MS,
           "the head job launched %lld ms after the holder ended (the freed "
           "node must count at the next pass, not at the next listing)",
           (long long)(start - end));
  TW_CHECK(wait_state(head, "succeeded", 30000), "head never succeeded");
}

static void short_job_backfills_into_the_gap(void **state) {
  (void)state;
  char holder[64], head[64], shortj[64], longj[64];
  TW_CHECK(submit("gap-holder", "default", 1, 35, "sleep 35", holder), "h");
  TW_CHECK(wait_state(holder, "running", 30000), "holder never ran");
  TW_CHECK(submit("gap-head", "default", 2, 5, "sleep 1", head), "head");
  nap(1000); /* the head job's reservation is made in a pass */
  int64_t t_submit = mono_ms();
  TW_CHECK(submit("gap-short", "default", 1, 10, "sleep 10", shortj), "s");
  TW_CHECK(submit("gap-long", "default", 1, 60, "sleep 60", longj), "l");
  TW_CHECK(wait_state(shortj, "running", 15000),
           "the 10 s job did not backfill beside the 35 s job");
  fprintf(stderr, "10 s job running %lld ms after its submission\n",
          (long long)(mono_ms() - t_submit));
  char s[32];
  TW_CHECK(wait_state(holder, "succeeded", 60000), "holder never ended");
  TW_CHECK(wait_state(head, "provisioning|running|succeeded", 30000),
           "head never launched");
  int64_t head_at = launched_at(head), long_at = launched_at(longj);
  int64_t holder_end = entered(holder, "succeeded");
  int64_t short_at = launched_at(shortj);
  TW_CHECK(short_at > 0 && short_at < holder_end,
           "the 10 s job launched at %lld, the holder ended at %lld",
           (long long)short_at, (long long)holder_end);
  TW_CHECK(long_at < 0 || long_at >= head_at,
           "the 60 s job (state %s) launched before the head job: it delays "
           "the reservation",
           state_of(longj, s, sizeof s));
  TW_CHECK(head_at - holder_end <= PASS_SLACK_MS,
           "the head job launched %lld ms after its reservation began",
           (long long)(head_at - holder_end));
  cancel(longj);
  TW_CHECK(wait_state(head, "succeeded", 30000), "head never succeeded");
  TW_CHECK(wait_state(longj, "cancelled", 30000), "long job not cancelled");
}

#define N_FIRST 50

static void late_tenant_gets_the_next_free_slot(void **state) {
  (void)state;
  long st;
  json_decref(call("POST", "/v1/tenants", "{\"name\":\"first\"}", &st));
  json_decref(call("POST", "/v1/tenants", "{\"name\":\"late\"}", &st));
  static char ids[N_FIRST][64];
  for (int i = 0; i < N_FIRST; i++) {
    char name[32];
    snprintf(name, sizeof name, "first-%d", i);
    TW_CHECK(submit(name, "first", 1, 3, "sleep 3", ids[i]), "%s", name);
  }
  /* both nodes taken by the first tenant */
  int running = 0;
  int64_t end = mono_ms() + 30000;
  while (running < 2 && mono_ms() < end) {
    running = 0;
    char s[32];
    for (int i = 0; i < N_FIRST; i++)
      running += !strcmp(state_of(ids[i], s, sizeof s), "running");
    if (running < 2)
      nap(200);
  }
  TW_CHECK(running == 2, "the first tenant holds %d nodes, want 2", running);
  char late[64];
  TW_CHECK(submit("late-1", "late", 1, 3, "sleep 1", late), "late");
  TW_CHECK(wait_state(late, "running|succeeded", 40000), "late never ran");
  int64_t late_at = launched_at(late), t_late_wall = entered(late, "pending");
  /* no job of the first tenant was launched after the late one came in a
   * pass before the one that launched it.  Launches of one pass are
   * milliseconds apart, and in that pass the late tenant may come second:
   * when both nodes free at once the first tenant holds nothing either,
   * the tie goes to the older job, and the order is built one job at a
   * time (docs/placement.md, "The queue"). */
  int before = 0;
  for (int i = 0; i < N_FIRST; i++) {
    int64_t at = launched_at(ids[i]);
    if (at > t_late_wall && at < late_at - 100) {
    {
      fprintf(stderr, "first-%d launched %+lld ms after the late job came\n",
              i, (long long)(at - t_late_wall));
      before++; /* launched after the late job came, and before it */
    }
    }
  }
  fprintf(stderr,
          "late tenant's job launched %lld ms after its submission; jobs of "
          "the first tenant launched in earlier passes meanwhile: %d\n",
          (long long)(late_at - t_late_wall), before);
  TW_CHECK(before == 0,
           "%d jobs of the tenant holding both nodes took a freed node before "
           "the late tenant's only job",
           before);
  for (int i = 0; i < N_FIRST; i++)
    cancel(ids[i]);
  for (int i = 0; i < N_FIRST; i++)
    wait_state(ids[i], "cancelled|succeeded|failed", 30000);
}

static void no_spot_share_goes_on_demand_at_once(void **state) {
  (void)state;
  if (!fake_pid)
    skip();
  long st;
  json_decref(call("POST", "/v1/tenants", "{\"name\":\"nospot\"}", &st));
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "TRADEWIND_URL='%s' '%s' quota set nospot --spot-share 0 "
           ">'%s/quota.out' 2>&1",
           d.url, cli_bin, d.dir);
  TW_CHECK(system(cmd) == 0, "tradewind quota set --spot-share 0 failed");
  const char *body =
      "{\"name\":\"any-market\",\"tenant\":\"nospot\","
      "\"resources\":{\"cpus\":2,\"market\":\"any\"},\"duration_s\":600,"
      "\"placement\":{\"providers\":[\"aws\"]},\"run\":\"sleep 600\"}";
  json_t *j = call("POST", "/v1/jobs", body, &st);
  char id[64] = "";
  if (j)
    snprintf(id, sizeof id, "%s", jstr(j, "id"));
  json_decref(j);
  TW_CHECK(id[0], "submit any-market: %ld", st);
  TW_CHECK(wait_state(id, "provisioning|running", 15000),
           "a market-any job with spot share 0 did not launch at once");
  char path[160];
  snprintf(path, sizeof path, "/v1/jobs/%.63s", id);
  j = call("GET", path, NULL, &st);
  const char *market =
      jstr(json_object_get(j, "placement"), "market");
  fprintf(stderr, "any-market job launched %lld ms after submission on %s\n",
          (long long)(launched_at(id) - entered(id, "pending")), market);
  TW_CHECK(!strcmp(market, "on-demand"), "placed on market %s", market);
  json_decref(j);
  cancel(id);
}

/* ---- set-up ------------------------------------------------------------- */

/* tradewind-fakecloud with EC2 spot prices far below on-demand in many
 * zones; its URL in fake_url. */
static bool start_fake(void) {
  int fds[2];
  if (pipe(fds))
    return false;
  fake_pid = fork();
  if (fake_pid < 0) {
    fake_pid = 0;
    return false;
  }
  if (fake_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(fake_bin, "tradewind-fakecloud", "--listen", "127.0.0.1:0",
          "--seed", "7", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  /* kept open: the fake may write to its stdout later */
  FILE *f = fdopen(fds[0], "r");
  char line[256] = "";
  if (f && fgets(line, sizeof line, f) &&
      sscanf(line, "listening %63s", fake_url) == 1)
    return true;
  fprintf(stderr, "fakecloud did not start: \"%s\"\n", line);
  kill(fake_pid, SIGKILL);
  waitpid(fake_pid, NULL, 0);
  fake_pid = 0;
  return false;
}

static int start_daemon(void) {
  char cfg[4096];
  setenv("TW_QUEUE_AWS_KEY", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_QUEUE_AWS_SECRET", "tradewind-fake-secret", 1);
  snprintf(cfg, sizeof cfg,
           "listen: 127.0.0.1:0\n"
           "scheduler:\n"
           "  tick_ms: 200\n"
           "  offers_ttl_s: 300\n"
           "policies:\n"
           "  queue: {fair_share_weight: 200, capacity: {vcpus: 32, "
           "memory_gib: 64, gpus: 4}}\n"
           "providers:\n"
           "  - name: lab\n"
           "    type: slurm\n"
           "    endpoint: %s\n"
           "    api_version: v0.0.38\n"
           "    user: root\n"
           "    token_file: %s\n"
           "    output_dir: %s\n"
           "    cluster: lab\n"
           "    rates: {cpu_hour: \"0.02\", gpu_hour: {A100: \"1.10\"}, "
           "mem_gib_hour: \"0.002\"}\n"
           "%s%s%s",
           sl.url, sl.token_file, sl.output_dir,
           fake_pid ? "  - name: aws\n"
                      "    type: aws\n"
                      "    endpoint: "
                    : "",
           fake_pid ? fake_url : "",
           fake_pid ? "\n"
                      "    regions: [us-east-1, us-west-2, eu-west-1]\n"
                      "    access_key_env: TW_QUEUE_AWS_KEY\n"
                      "    secret_key_env: TW_QUEUE_AWS_SECRET\n"
                      "    image: ami-0123456789abcdef0\n"
                      "    on_demand_prices: {m5.large: \"0.096\", "
                      "c5.large: \"0.085\"}\n"
                    : "");
  if (twtest_daemon_init(&d, cfg))
    return -1;
  return twtest_daemon_start(&d);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: test_slurm_queue TRADEWINDD TRADEWIND "
                    "TRADEWIND-FAKECLOUD\n");
    return 2;
  }
  setenv("TRADEWINDD", argv[1], 1);
  cli_bin = argv[2];
  fake_bin = argv[3];
  if (twtest_slurm_load(&sl)) {
    printf("SKIPPED: no Slurm cluster (TW_SLURM_DIR/slurm.env; the fixture "
           "slurm_cluster_start starts it)\n");
    return TW_SKIP;
  }
  if (!start_fake())
    fprintf(stderr, "the on-demand case is skipped: no fake EC2\n");
  if (start_daemon()) {
    fprintf(stderr, "tradewindd did not start\n");
    twtest_daemon_cleanup(&d, true);
    return 1;
  }
  twtest_daemon_wait_log(&d, "provider=lab offers=", 1, 10000);
  const struct CMUnitTest cases[] = {
      cmocka_unit_test(head_job_starts_when_the_holder_ends),
      cmocka_unit_test(short_job_backfills_into_the_gap),
      cmocka_unit_test(late_tenant_gets_the_next_free_slot),
      cmocka_unit_test(no_spot_share_goes_on_demand_at_once),
  };
  int rc = cmocka_run_group_tests(cases, NULL, NULL);
  int code = twtest_daemon_stop(&d, 10000);
  if (code)
    fprintf(stderr, "tradewindd exited %d\n", code);
  if (fake_pid) {
    kill(fake_pid, SIGTERM);
    waitpid(fake_pid, NULL, 0);
  }
  twtest_daemon_cleanup(&d, tw_failures() > 0);
  return rc || code ? 1 : 0;
}
