/* test_region_drill.c - a region loses power, and every job on it moves.
 *
 * tradewind-fakecloud serves EC2 in three regions; tradewindd runs spot
 * jobs of ten minutes on it, with every fallback strategy.  Once every job
 * runs, the fake takes the region holding the most of them down (fault
 * kind region_down, docs/fakecloud.md): every spot instance there gets
 * EC2's interruption notice and is terminated lead_ms later, every launch
 * there is refused with InsufficientInstanceCapacity.  A sampler reads
 * the fake's instances every 0.25 s.  Checks:
 *
 *   - every job that ran in that region runs in another one (an instance
 *     in state running) within the notice plus 60 s of the region going
 *     down; the recovery time of each is printed, with p50 and max;
 *   - no job ever had two live instances, at any sample;
 *   - no instance was made in the region after it went down;
 *   - the jobs that ran elsewhere were not touched (same instance).
 *
 * TW_SEED=N replays the fake's seed and the jobs' strategies;
 * TW_DRILL_LEAD_MS=N sets the notice (default 20000).  Exits 77 when the
 * daemon or the fake is not built. */
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/base/sort.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

#define N_JOBS 30
#define RECOVERY_SLACK_S 60 /* the bound: the notice plus 60 s */
#define START_BUDGET_S 60   /* every job running before the drill */

static uint64_t seed, rng_state;
static int64_t lead_ms = 20000;

static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static double now_s(void) { return (double)tw_mono_us() / 1e6; }

/* ---- the fake ------------------------------------------------------------ */

static pid_t fake_pid;
static char fake_url[64];

static bool start_fake(void) {
  int fds[2];
  if (pipe(fds))
    return false;
  fake_pid = fork();
  if (fake_pid < 0)
    return false;
  if (fake_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)(seed % 1000000007ULL));
    execl(TW_FAKECLOUD_PATH, "tradewind-fakecloud", "--listen", "127.0.0.1:0",
          "--seed", s, "--pending-ms", "1000", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[256] = "";
  bool ok = f && fgets(line, sizeof line, f) &&
            sscanf(line, "listening %63s", fake_url) == 1;
  if (!ok)
    fprintf(stderr, "fakecloud did not start: \"%s\"\n", line);
  return ok;
}

static json_t *http_json(const char *base, const char *method, const char *path,
                         const char *body, long *status) {
  struct twtest_resp r;
  json_t *j = NULL;
  *status = 0;
  if (twtest_http(base, method, path, body ? "application/json" : NULL, body,
                  &r) == 0) {
    *status = r.status;
    if (r.status / 100 == 2)
      j = json_loads(r.body, 0, NULL);
    else
      fprintf(stderr, "%s %s: %ld %s\n", method, path, r.status,
              r.body ? r.body : "");
  }
  twtest_resp_release(&r);
  return j;
}

/* ---- the jobs and what the fake holds for them ----------------------------
 */

static struct twtest_daemon d;
static char ids[N_JOBS][64];
static const char *const FALLBACKS[] = {"failover", "eager-next-region",
                                        "on-demand-fallback", "deadline"};

struct job_view {
  int live;                /* live instances (pending or running) */
  char running_region[32]; /* of a running instance, "" none */
  char running_id[32];
};

/* One look at the fake: each job's live instances; *made_in_down counts
 * the instances launched in region `down` after down_launch_ms (epoch ms
 * from the fake's launch_time); *doubled the jobs with two live. */
static bool look(struct job_view v[N_JOBS], const char *down, int64_t after_ms,
                 int *made_in_down, int *doubled) {
  long st;
  json_t *fs = http_json(fake_url, "GET", "/_fake/ec2/state", NULL, &st);
  json_t *insts = fs ? json_object_get(fs, "instances") : NULL;
  if (!json_is_array(insts)) {
    json_decref(fs);
    return false;
  }
  memset(v, 0, sizeof(struct job_view) * N_JOBS);
  for (size_t i = 0; i < json_array_size(insts); i++) {
    json_t *in = json_array_get(insts, i);
    const char *state = json_string_value(json_object_get(in, "state"));
    const char *region = json_string_value(json_object_get(in, "region"));
    const char *id = json_string_value(json_object_get(in, "id"));
    const char *job = json_string_value(
        json_object_get(json_object_get(in, "tags"), "tradewind:job"));
    const char *lt = json_string_value(json_object_get(in, "launch_time"));
    if (!state || !region || !job || !id)
      continue;
    if (down && made_in_down && lt && !strcmp(region, down)) {
      int64_t at = 0;
      if (tw_time_parse_rfc3339(lt, &at) == 0 && at >= after_ms)
        (*made_in_down)++;
    }
    int k;
    for (k = 0; k < N_JOBS && strcmp(ids[k], job); k++)
      ;
    if (k == N_JOBS)
      continue;
    if (strcmp(state, "pending") && strcmp(state, "running"))
      continue;
    if (++v[k].live == 2 && doubled)
      (*doubled)++;
    if (!strcmp(state, "running")) {
      snprintf(v[k].running_region, sizeof v[k].running_region, "%s", region);
      snprintf(v[k].running_id, sizeof v[k].running_id, "%s", id);
    }
  }
  json_decref(fs);
  return true;
}

static int cmp_double(const void *a, const void *b, void *ctx) {
  (void)ctx;
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- the drill ------------------------------------------------------------
 */

static void every_affected_job_runs_elsewhere_within_the_bound(void **state) {
  (void)state;
  char config[2048];
  snprintf(config, sizeof config,
           "log: {level: info}\n"
           "auth: {mode: open}\n"
           "scheduler: {tick_ms: 250}\n"
           "reconcile: {interval_s: 5}\n"
           "spot: {restart_overhead_s: 5, review_s: 2, blocklist_offer_s: 30,\n"
           "       blocklist_zone_s: 60, blocklist_region_s: 120, "
           "blocklist_window_s: 30}\n"
           "providers:\n"
           "  - name: aws-drill\n"
           "    type: aws\n"
           "    endpoint: %s\n"
           "    regions: [us-east-1, us-west-2, eu-west-1]\n"
           "    access_key_env: TW_DRILL_AWS_ACCESS_KEY\n"
           "    secret_key_env: TW_DRILL_AWS_SECRET_KEY\n"
           "    image: ami-0123456789abcdef0\n"
           "    metadata_url: %s/_fake/ec2/instances/{id}\n"
           "    on_demand_prices: {m5.large: \"0.096\", m6g.large: \"0.077\","
           " c5.xlarge: \"0.17\"}\n",
           fake_url, fake_url);
  TW_CHECK(twtest_daemon_init(&d, config) == 0 && twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  char deadline[40];
  tw_time_fmt_rfc3339(tw_clock_now_ms(tw_clock_real()) + 3 * 3600 * 1000,
                      deadline, sizeof deadline);
  for (int i = 0; i < N_JOBS; i++) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"name\":\"drill-%d\",\"resources\":{\"cpus\":2,\"market\":"
             "\"spot\"},\"duration\":\"600s\",\"deadline\":\"%s\","
             "\"fallback\":\"%s\"}",
             i, deadline, FALLBACKS[rng_next() % 4]);
    long st;
    json_t *j = http_json(d.url, "POST", "/v1/jobs", body, &st);
    const char *id = j ? json_string_value(json_object_get(j, "id")) : NULL;
    TW_CHECK(st == 201 && id, "job %d refused: %ld", i, st);
    snprintf(ids[i], sizeof ids[i], "%s", id ? id : "");
    json_decref(j);
  }

  /* every job running, then the region with the most of them goes down */
  struct job_view before[N_JOBS];
  double t0 = now_s();
  int running = 0;
  while (now_s() - t0 < START_BUDGET_S) {
    sleep_ms(500);
    running = 0;
    if (look(before, NULL, 0, NULL, NULL))
      for (int k = 0; k < N_JOBS; k++)
        running += before[k].running_region[0] != '\0';
    if (running == N_JOBS)
      break;
  }
  TW_CHECK(running == N_JOBS, "only %d of %d jobs run before the drill",
           running, N_JOBS);
  static const char *const REGIONS[] = {"us-east-1", "us-west-2", "eu-west-1"};
  int per[3] = {0};
  for (int k = 0; k < N_JOBS; k++)
    for (int r = 0; r < 3; r++)
      per[r] += !strcmp(before[k].running_region, REGIONS[r]);
  int worst = 0;
  for (int r = 1; r < 3; r++)
    if (per[r] > per[worst])
      worst = r;
  const char *down = REGIONS[worst];
  printf("drill: %d jobs running: %d in us-east-1, %d in us-west-2, %d in "
         "eu-west-1; taking %s down (notice %lld ms)\n",
         N_JOBS, per[0], per[1], per[2], down, (long long)lead_ms);
  fflush(stdout);
  TW_CHECK(per[worst] > 0, "no job runs in the region taken down");

  char fault[256];
  snprintf(fault, sizeof fault,
           "{\"faults\":[{\"kind\":\"region_down\",\"region\":\"%s\","
           "\"lead_ms\":%lld}]}",
           down, (long long)lead_ms);
  int64_t down_at_ms = tw_clock_now_ms(tw_clock_real());
  long st;
  json_t *ok = http_json(fake_url, "POST", "/_fake/faults", fault, &st);
  TW_CHECK(ok, "the fake refused the region_down fault: %ld", st);
  json_decref(ok);
  double t_down = now_s();

  /* the sampler: until every affected job runs elsewhere, or the bound */
  double bound = (double)lead_ms / 1000.0 + RECOVERY_SLACK_S;
  double recovered[N_JOBS];
  bool affected[N_JOBS];
  int n_affected = 0, n_recovered = 0, doubled = 0, samples = 0, made_down = 0;
  for (int k = 0; k < N_JOBS; k++) {
    affected[k] = !strcmp(before[k].running_region, down);
    n_affected += affected[k];
    recovered[k] = -1;
  }
  struct job_view v[N_JOBS];
  while (n_recovered < n_affected && now_s() - t_down < bound + 10) {
    sleep_ms(250);
    int made = 0;
    if (!look(v, down, down_at_ms + 1000, &made, &doubled))
      continue;
    samples++;
    if (made > made_down)
      made_down = made;
    for (int k = 0; k < N_JOBS; k++)
      if (affected[k] && recovered[k] < 0 && v[k].running_region[0] &&
          strcmp(v[k].running_region, down)) {
        recovered[k] = now_s() - t_down;
        n_recovered++;
      }
  }
  double times[N_JOBS];
  int n_times = 0;
  for (int k = 0; k < N_JOBS; k++)
    if (affected[k] && recovered[k] >= 0)
      times[n_times++] = recovered[k];
  tw_sort_r(times, (size_t)n_times, sizeof times[0], cmp_double, NULL);
  for (int k = 0; k < N_JOBS; k++)
    if (affected[k] && recovered[k] >= 0)
      printf("drill: job %s running in %s after %.2f s\n", ids[k],
             v[k].running_region, recovered[k]);
    else if (affected[k])
      printf("drill: job %s not running elsewhere\n", ids[k]);
  double p50 = n_times ? times[n_times / 2] : -1,
         max = n_times ? times[n_times - 1] : -1;
  printf("drill: %d of %d affected jobs running elsewhere; recovery p50 %.2f "
         "s, max %.2f s (bound: notice %.0f s + %d s); %d samples, %d with a "
         "job on two live instances\n",
         n_recovered, n_affected, p50, max, (double)lead_ms / 1000.0,
         RECOVERY_SLACK_S, samples, doubled);
  TW_CHECK(n_recovered == n_affected,
           "%d of %d jobs of the down region never ran elsewhere",
           n_affected - n_recovered, n_affected);
  TW_CHECK(max <= bound, "the slowest job ran elsewhere after %.2f s > %.0f s",
           max, bound);
  TW_CHECK(doubled == 0, "%d samples saw a job on two live instances", doubled);
  TW_CHECK(made_down == 0, "%d instances were made in %s after it went down",
           made_down, down);
  /* the jobs elsewhere kept their instance */
  int moved = 0;
  for (int k = 0; k < N_JOBS; k++)
    if (!affected[k] && strcmp(v[k].running_id, before[k].running_id))
      moved++;
  TW_CHECK(moved == 0, "%d jobs outside %s changed instance", moved, down);
  /* the daemon saw the notices */
  size_t notices = twtest_daemon_log_count(&d, "notice");
  printf("drill: %zu notice lines in the daemon's log\n", notices);
  TW_CHECK(notices > 0, "the daemon logged no interruption notice");

  /* a sanitizer build reports in the daemon's log */
  TW_CHECK(twtest_daemon_log_count(&d, "AddressSanitizer") == 0 &&
               twtest_daemon_log_count(&d, "runtime error") == 0,
           "the daemon's log has sanitizer reports");
  /* cancel everything: the fake is left empty */
  for (int k = 0; k < N_JOBS; k++) {
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%.63s", ids[k]);
    json_decref(http_json(d.url, "DELETE", path, NULL, &st));
  }
  TW_CHECK(twtest_daemon_stop(&d, 20000) == 0,
           "the daemon did not stop cleanly");
}

static int setup(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!start_fake())
    return -1;
  setenv("TW_DRILL_AWS_ACCESS_KEY", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_DRILL_AWS_SECRET_KEY", "tradewind-fake-secret", 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (fake_pid > 0) {
    kill(fake_pid, SIGTERM);
    waitpid(fake_pid, NULL, 0);
  }
  twtest_daemon_cleanup(&d, tw_failures() > 0);
  curl_global_cleanup();
  if (tw_failures())
    fprintf(stderr, "drill: %d checks failed (seed %llu)\n", tw_failures(),
            (unsigned long long)seed);
  return 0;
}

int main(void) {
  if (access(TW_FAKECLOUD_PATH, X_OK) || access(twtest_daemon_binary(), X_OK)) {
    printf("SKIPPED: tradewindd or tradewind-fakecloud is not built\n");
    return TW_SKIP;
  }
  const char *env = getenv("TW_SEED");
  seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
  rng_state = seed * 2654435761ULL + 1;
  if (getenv("TW_DRILL_LEAD_MS"))
    lead_ms = atoll(getenv("TW_DRILL_LEAD_MS"));
  printf("drill: seed=%llu (TW_SEED=%llu replays this run)\n",
         (unsigned long long)seed, (unsigned long long)seed);
  fflush(stdout);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_affected_job_runs_elsewhere_within_the_bound),
  };
  return cmocka_run_group_tests_name("region_drill", tests, setup, teardown);
}
