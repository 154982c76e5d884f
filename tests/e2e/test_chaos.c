/* test_chaos.c - the spot lifecycle under faults, with the daemon killed.
 *
 * tradewind-fakecloud serves EC2 with injected faults from a seeded
 * schedule, and boots every instance (--boot): its bootstrap fetches
 * tradewind-agent from the broker and the agent runs the job's script
 * (`sleep` for its duration), so a job succeeds only on its agent's exit
 * report.  The faults: capacity errors on spot launches and on one zone,
 * throttling and 503s, spot interruptions (a Poisson rate per instance,
 * with a short notice) and slow answers.  tradewindd runs against it
 * (auth open, the AWS adapter with interruption notices and `agent:
 * true`, the reconciler every few seconds); a few hundred jobs of a few
 * seconds each are submitted, with every fallback strategy and with and
 * without checkpoints; then the daemon is killed with SIGKILL at random
 * moments and restarted on the same address (the agents ride each
 * restart out), again and again, until the jobs are done.  The adapter's
 * timeout is shorter than some answers and its retries few, so launches
 * go unanswered (slower than the timeout on every try, or slow and then
 * throttled until the retries run out) and terminates lose their answers
 * after the fake did them.  A sampler reads the fake's instances every
 * 0.5 s throughout.  At the end:
 *
 *   - no job ever had two live instances, at any sample;
 *   - no job is lost or stuck: every job submitted has succeeded, none is
 *     left in a non-terminal state;
 *   - no job ran again after success: no attempt was opened after one
 *     completed, and no completed instance was taken for an interruption
 *     (Client.UserInitiatedShutdown);
 *   - no attempt has two instances: among every instance the fake ever
 *     made, each tradewind:attempt tag appears at most once, and no two
 *     attempts in the store name the same instance;
 *   - no orphan survives one reconcile pass: orphans are added on purpose
 *     (instances tagged for jobs the store never had, bought through the
 *     AWS adapter as another broker would have), the daemon is started
 *     once more, and after its start-up pass the fake holds no live
 *     instance at all.
 *
 * With --stop-term (ctest test_chaos_stop) the daemon is not killed but
 * drained: SIGTERM during the first launches, then the fake is stopped
 * with SIGSTOP for 60 s (TW_CHAOS_STOP_S=N shortens it) while a second
 * wave of jobs is submitted, so its launches hang; SIGTERM again while
 * the fake is stopped and a restart while it still is, SIGCONT, and
 * SIGTERM once more during the launches that follow.  Besides the checks
 * above: each drain ends within shutdown_timeout_s (2 s here) plus a
 * margin, and every attempt left launching by a drain is settled by the
 * next start with its own token: the one instance the fake made under
 * that token is the attempt's, or the fake made none and the attempt
 * ended on a definite refusal.
 *
 * The seed is printed; TW_SEED=N replays a run, TW_CHAOS_JOBS=N changes
 * the number of jobs (default 200), TW_CHAOS_SAMPLE_MS=N the sampler's
 * period (default 500; shorter catches shorter overlaps).  Exits 77 when the
 * daemon or the fake is not built. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
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
#include "broker/base/node.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif
#ifndef TW_AGENT_PATH
#define TW_AGENT_PATH "tradewind-agent"
#endif

#define BUDGET_S 100 /* the whole run, jobs done or not */
#define CHAOS_S 45   /* kills stop after this, so the run settles */
#define ORPHANS 5
#define SHUTDOWN_S 2     /* --stop-term: the drain's deadline */
#define DRAIN_MARGIN_S 5 /* and how much later the daemon may exit */
#define MAX_HANDED 4096  /* attempts left launching by the drains */

static uint64_t rng_state;

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

/* ---- the fake -------------------------------------------------------------
 */

static pid_t fake_pid;
static char fake_url[64];

/* The fake boots each instance (--boot): its bootstrap fetches
 * tradewind-agent from the broker and the agent runs the job, in a
 * directory of boot_dir. */
static bool start_fake(uint64_t seed, const char *boot_dir) {
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
          "--seed", s, "--pending-ms", "1000", "--boot", "--boot-dir", boot_dir,
          (char *)NULL);
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

static void stop_fake(void) {
  if (fake_pid > 0) {
    kill(fake_pid, SIGTERM);
    waitpid(fake_pid, NULL, 0);
    fake_pid = 0;
  }
}

static json_t *fake_ctl(const char *method, const char *path,
                        const char *body) {
  struct twtest_resp r;
  json_t *j = NULL;
  if (twtest_http(fake_url, method, path, body ? "application/json" : NULL,
                  body, &r) == 0 &&
      r.status / 100 == 2)
    j = json_loads(r.body, 0, NULL);
  else
    fprintf(stderr, "fake %s %s: %ld %s\n", method, path, r.status,
            r.body ? r.body : "");
  twtest_resp_release(&r);
  return j;
}

/* ---- the sampler: two live instances for one job, ever ---------------------
 */

static pthread_t sampler;
static atomic_bool sampling;
static long sample_ms = 500; /* TW_CHAOS_SAMPLE_MS */
static int samples, bad_samples, worst_job_instances;
static char first_bad[160];

/* One look at the fake: the jobs with more than one live instance. */
static int sample_once(void) {
  json_t *fs = fake_ctl("GET", "/_fake/ec2/state", NULL);
  json_t *insts = fs ? json_object_get(fs, "instances") : NULL;
  size_t n = json_array_size(insts);
  const char **jobs = tw_calloc(n + 1, sizeof *jobs);
  int *count = tw_calloc(n + 1, sizeof *count);
  size_t n_jobs_seen = 0;
  int doubled = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *in = json_array_get(insts, i);
    const char *state = json_string_value(json_object_get(in, "state"));
    const char *job = json_string_value(
        json_object_get(json_object_get(in, "tags"), "tradewind:job"));
    if (!job || !state || !strcmp(state, "terminated") ||
        !strcmp(state, "shutting-down"))
      continue;
    size_t k;
    for (k = 0; k < n_jobs_seen && strcmp(jobs[k], job); k++)
      ;
    if (k == n_jobs_seen)
      jobs[n_jobs_seen++] = job;
    if (++count[k] == 2) {
      doubled++;
      if (!first_bad[0])
        snprintf(first_bad, sizeof first_bad, "job %s", job);
      /* what the fake holds for it, to find in the daemon's log */
      for (size_t j = 0; j < n; j++) {
        json_t *o = json_array_get(insts, j);
        const char *oj = json_string_value(
            json_object_get(json_object_get(o, "tags"), "tradewind:job"));
        if (oj && !strcmp(oj, job))
          fprintf(stderr, "chaos: two live: job %s instance %s %s attempt %s\n",
                  job, json_string_value(json_object_get(o, "id")),
                  json_string_value(json_object_get(o, "state")),
                  json_string_value(json_object_get(json_object_get(o, "tags"),
                                                    "tradewind:attempt")));
      }
    }
    if (count[k] > worst_job_instances)
      worst_job_instances = count[k];
  }
  free(jobs);
  free(count);
  json_decref(fs);
  return doubled;
}

static void *sampler_main(void *arg) {
  (void)arg;
  while (atomic_load(&sampling)) {
    samples++;
    if (sample_once())
      bad_samples++;
    sleep_ms(sample_ms);
  }
  return NULL;
}

/* ---- the store, read beside the daemon --------------------------------------
 */

static int count_sql(const char *db, const char *sql) {
  sqlite3 *h = NULL;
  int n = -1;
  if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_busy_timeout(h, 2000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return n;
}

/* ---- jobs ---------------------------------------------------------------- */

static const char *const FALLBACKS[] = {"failover", "eager-next-region",
                                        "on-demand-fallback", "deadline"};

static bool submit(const char *url, int i, char id[64]) {
  char body[640];
  int dur = 2 + (int)(rng_next() % 5);
  const char *market = rng_next() % 3 ? "spot" : "any";
  bool ckpt = rng_next() % 2;
  /* deadlines an hour out: the strategy has room to choose */
  char deadline[40];
  tw_time_fmt_rfc3339(tw_clock_now_ms(tw_clock_real()) + 3600 * 1000, deadline,
                      sizeof deadline);
  snprintf(
      body, sizeof body,
      "{\"name\":\"chaos-%d\",\"resources\":{\"cpus\":%d,\"market\":\"%s\"},"
      "\"duration\":\"%ds\",\"run\":\"sleep %d\",\"deadline\":\"%s\","
      "\"fallback\":\"%s\"%s}",
      i, rng_next() % 4 ? 2 : 4, market, dur, dur, deadline,
      FALLBACKS[rng_next() % 4],
      ckpt
          ? ",\"checkpoint\":{\"interval\":\"2s\",\"uri\":\"s3://chaos/ckpt/\"}"
          : "");
  for (int tries = 0; tries < 50; tries++) {
    struct twtest_resp r;
    int rc = twtest_http(url, "POST", "/v1/jobs", "application/json", body, &r);
    bool ok = rc == 0 && r.status == 201;
    if (ok) {
      json_t *j = json_loads(r.body, 0, NULL);
      const char *s = j ? json_string_value(json_object_get(j, "id")) : NULL;
      snprintf(id, 64, "%s", s ? s : "");
      json_decref(j);
    } else if (rc == 0) {
      fprintf(stderr, "submit %d: %ld %s\n", i, r.status, r.body);
    }
    twtest_resp_release(&r);
    if (ok)
      return id[0] != '\0';
    sleep_ms(100);
  }
  return false;
}

/* ---- orphans, bought as another broker would -------------------------------
 */

static int buy_orphans(void) {
  char yaml[1024];
  snprintf(
      yaml, sizeof yaml,
      "name: orphan-maker\ntype: aws\nendpoint: %s\nregions: [us-east-1]\n"
      "access_key_env: TW_CHAOS_AWS_ACCESS_KEY\nsecret_key_env: "
      "TW_CHAOS_AWS_SECRET_KEY\n"
      "image: ami-0123456789abcdef0\non_demand_prices: {m5.large: \"0.096\"}\n",
      fake_url);
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  int made = 0;
  if (tw_node_parse_yaml(yaml, strlen(yaml), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err)) {
    fprintf(stderr, "orphan maker: %s\n", err.msg);
    goto out;
  }
  struct tw_offer_list offers;
  tw_offer_list_init(&offers);
  if (tw_provider_list_offers(p, &offers, &err) == TW_OK) {
    const struct tw_offer *o = NULL;
    for (size_t i = 0; i < offers.n && !o; i++)
      if (!strcmp(offers.items[i].instance_type, "m5.large") &&
          offers.items[i].market == TW_MARKET_ON_DEMAND)
        o = &offers.items[i];
    for (int i = 0; o && i < ORPHANS; i++) {
      char job[40], token[48];
      snprintf(job, sizeof job, "j-orphan%020d", i);
      snprintf(token, sizeof token, "%s-1", job);
      struct tw_launch req = {.offer = o,
                              .client_token = token,
                              .job_id = job,
                              .attempt_id = token,
                              .tenant = "default"};
      struct tw_instance inst;
      struct tw_err lerr = {0};
      if (tw_provider_launch(p, &req, &inst, &lerr) == TW_OK)
        made++;
      else
        fprintf(stderr, "orphan %d: %s\n", i, lerr.msg);
    }
  }
  tw_offer_list_release(&offers);
out:
  tw_provider_free(p);
  tw_node_free(cfg);
  return made;
}

/* ---- the run --------------------------------------------------------------
 */

static uint64_t seed;
static int n_jobs, submitted, succeeded;
/* --stop-term: the run drains instead of killing; jobs [0, n_first) are
 * submitted at once, the rest while the fake is stopped */
static bool stop_term;
static int stop_s = 60, n_first;
static char (*ids)[64];
static struct twtest_daemon d;
/* The fake's last state and the attempt tags found in it. */
static json_t *st;
static const char **tags;

/* The faults on the fake, the daemon on it, and the jobs accepted. */
static void faults_installed_and_jobs_accepted(void **state) {
  /* the faults: every kind the lifecycle must survive */
  json_t *ok = fake_ctl(
      "POST", "/_fake/faults",
      "{\"faults\":["
      "{\"kind\":\"capacity\",\"action\":\"RunInstances\",\"market\":\"spot\","
      "\"probability\":0.25},"
      "{\"kind\":\"capacity\",\"zone\":\"us-east-1a\",\"probability\":0.6},"
      "{\"kind\":\"throttle\",\"action\":\"DescribeInstances\",\"probability\":"
      "0.05},"
      "{\"kind\":\"throttle\",\"action\":\"RunInstances\",\"probability\":0.05}"
      ","
      "{\"kind\":\"error\",\"status\":503,\"code\":\"Unavailable\",\"action\":"
      "\"RunInstances\","
      "\"probability\":0.03},"
      "{\"kind\":\"spot_interruption\",\"market\":\"spot\",\"rate_per_hour\":"
      "240,"
      "\"lead_ms\":2000},"
      /* slow answers widen the window between a launch and its record,
       * where a kill leaves an instance the store does not know yet */
      "{\"kind\":\"slow\",\"action\":\"RunInstances\",\"delay_ms\":700,"
      "\"probability\":0.05},"
      /* for the first 25 s, launches slower than the adapter's timeout
       * (400 ms, two tries): the instance is made, the answer never
       * arrives; slow then throttled runs the retries out the same way */
      "{\"kind\":\"slow\",\"action\":\"RunInstances\",\"delay_ms\":900,"
      "\"probability\":0.15,\"until_ms\":25000},"
      "{\"kind\":\"throttle\",\"action\":\"RunInstances\",\"probability\":"
      "0.1,\"until_ms\":25000},"
      /* terminates done by the fake whose answers are lost */
      "{\"kind\":\"slow\",\"action\":\"TerminateInstances\",\"delay_ms\":"
      "900,\"probability\":0.3,\"until_ms\":25000}]}");
  TW_CHECK(ok, "faults refused");
  json_decref(ok);

  /* the agents call the address their bootstrap names: the daemon comes
   * back on the same port after each kill */
  int port = twtest_free_port();
  TW_CHECK(port > 0, "no free port");
  char config[3072];
  snprintf(config, sizeof config,
           "log: {level: info}\n"
           "auth: {mode: open}\n"
           "listen: 127.0.0.1:%d\n"
           "db: %s\n"
           /* the heartbeat timeout rides out a kill and a restart */
           "agent: {install: fetch, binary: %s, heartbeat_s: 1,\n"
           "        heartbeat_timeout_s: 10, grace_s: 10}\n"
           "scheduler: {tick_ms: 500}\n"
           "shutdown_timeout_s: %d\n"
           "reconcile: {interval_s: 3}\n"
           /* the blocklist's times scaled to a run of seconds */
           "spot: {restart_overhead_s: 5, review_s: 2, blocklist_offer_s: 3,\n"
           "       blocklist_zone_s: 6, blocklist_region_s: 10, "
           "blocklist_window_s: 10}\n"
           "providers:\n"
           "  - name: aws-chaos\n"
           "    type: aws\n"
           "    endpoint: %s\n"
           "    regions: [us-east-1, us-west-2]\n"
           "    access_key_env: TW_CHAOS_AWS_ACCESS_KEY\n"
           "    secret_key_env: TW_CHAOS_AWS_SECRET_KEY\n"
           "    image: ami-0123456789abcdef0\n"
           /* shorter than the slow answers above */
           "    timeout_ms: 400\n"
           "    max_attempts: 2\n"
           "    backoff_base_ms: 50\n"
           "    backoff_cap_ms: 200\n"
           "    metadata_url: %s/_fake/ec2/instances/{id}\n"
           "    on_demand_prices: {m5.large: \"0.096\", m6g.large: \"0.077\","
           " c5.xlarge: \"0.17\"}\n"
           "    agent: true\n",
           port, d.db, TW_AGENT_PATH, SHUTDOWN_S, fake_url, fake_url);
  d.override_addr = false;
  TW_CHECK(twtest_daemon_write_config(&d, config) == 0 &&
               twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  atomic_store(&sampling, true);
  TW_CHECK(pthread_create(&sampler, NULL, sampler_main, NULL) == 0,
           "no sampler thread");
  for (int i = 0; i < n_first; i++)
    if (submit(d.url, i, ids[i]))
      submitted++;
  TW_CHECK(submitted == n_first, "only %d of %d jobs were accepted", submitted,
           n_first);
}

/* SIGKILL at random moments, restart, until the jobs are done; the faults
 * really happened. */
static void killed_again_and_again_until_done(void **state) {
  /* kill, restart, until the jobs are done */
  double t0 = now_s();
  int kills = 0, done = 0;
  while (now_s() - t0 < BUDGET_S) {
    long wait_ms = 1000 + (long)(rng_next() % 3000);
    sleep_ms(wait_ms);
    done = count_sql(d.db, "SELECT count(*) FROM jobs WHERE state IN"
                           " ('succeeded','failed','cancelled')");
    if (done == submitted)
      break;
    if (now_s() - t0 < CHAOS_S) {
      twtest_daemon_kill(&d);
      kills++;
      if (twtest_daemon_start(&d))
        TW_FAIL("the daemon did not come back after kill %d", kills);
    }
  }
  atomic_store(&sampling, false);
  pthread_join(sampler, NULL);
  succeeded =
      count_sql(d.db, "SELECT count(*) FROM jobs WHERE state = 'succeeded'");
  int interrupted = count_sql(
      d.db, "SELECT count(*) FROM attempts WHERE end_reason = 'interrupted'");
  int attempts = count_sql(d.db, "SELECT count(*) FROM attempts");
  int capacity = count_sql(
      d.db, "SELECT count(*) FROM attempts WHERE end_reason = 'capacity'");
  printf("chaos: %d kills in %.0f s; %d of %d jobs succeeded; %d attempts, %d "
         "capacity "
         "errors, %d interruptions\n",
         kills, now_s() - t0, succeeded, submitted, attempts, capacity,
         interrupted);
  TW_CHECK(kills >= 5, "only %d kills: the chaos did not happen", kills);
  TW_CHECK(interrupted > 0, "no interruption happened");
  TW_CHECK(capacity > 0, "no capacity error happened");
}

/* ---- --stop-term: drains, a stopped fake, restarts -------------------------
 */

/* An attempt a drain left launching: its id and token, read from the
 * store once the daemon had exited. */
struct handed {
  int64_t id;
  char token[80];
};
static struct handed handed[MAX_HANDED];
static int n_handed, drains, late_drains;
static double worst_drain_s;

static void read_launching(void) {
  sqlite3 *h = NULL;
  if (sqlite3_open_v2(d.db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(h);
    return;
  }
  sqlite3_busy_timeout(h, 2000);
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(h,
                         "SELECT id, client_token FROM attempts"
                         " WHERE state = 'launching'",
                         -1, &q, NULL) == SQLITE_OK)
    while (sqlite3_step(q) == SQLITE_ROW && n_handed < MAX_HANDED) {
      int64_t id = sqlite3_column_int64(q, 0);
      int k;
      for (k = 0; k < n_handed && handed[k].id != id; k++)
        ;
      if (k < n_handed)
        continue; /* handed back by an earlier drain too */
      handed[n_handed].id = id;
      snprintf(handed[n_handed].token, sizeof handed[0].token, "%s",
               (const char *)sqlite3_column_text(q, 1));
      n_handed++;
    }
  sqlite3_finalize(q);
  sqlite3_close(h);
}

/* SIGTERM; the drain must end within its deadline plus a margin.  The
 * attempts it left launching are noted. */
static void drain(const char *when) {
  int before = n_handed;
  double t = now_s();
  int rc = twtest_daemon_stop(&d, (SHUTDOWN_S + 30) * 1000);
  double took = now_s() - t;
  drains++;
  if (took > worst_drain_s)
    worst_drain_s = took;
  if (rc != 0 || took > SHUTDOWN_S + DRAIN_MARGIN_S) {
    late_drains++;
    fprintf(stderr, "chaos: the drain %s exited %d after %.1f s\n", when, rc,
            took);
  }
  read_launching();
  printf("chaos: SIGTERM %s: drained in %.2f s, %d attempts left "
         "launching\n",
         when, took, n_handed - before);
  fflush(stdout);
}

static void restart(const char *when) {
  if (twtest_daemon_start(&d))
    TW_FAIL("the daemon did not come back %s", when);
}

static void wait_until_done(double t0, double budget_s) {
  while (now_s() - t0 < budget_s) {
    sleep_ms(1000);
    if (count_sql(d.db, "SELECT count(*) FROM jobs WHERE state IN"
                        " ('succeeded','failed','cancelled')") == submitted)
      break;
  }
}

static void drained_and_stopped_until_done(void **state) {
  (void)state;
  double t0 = now_s();
  /* SIGTERM while the first launches are in flight */
  sleep_ms(800 + (long)(rng_next() % 1500));
  drain("during the first launches");
  restart("after the first drain");
  /* the fake stopped while the restarted daemon resumes and a second
   * wave of jobs arrives: every launch of theirs hangs */
  sleep_ms(500 + (long)(rng_next() % 1000));
  kill(fake_pid, SIGSTOP);
  double stopped_at = now_s();
  printf("chaos: the fake stopped (SIGSTOP) for %d s at %.1f s\n", stop_s,
         stopped_at - t0);
  fflush(stdout);
  for (int i = n_first; i < n_jobs; i++)
    if (submit(d.url, i, ids[i]))
      submitted++;
  long wait_ms =
      (long)(stop_s * 1000 / 2) - (long)((now_s() - stopped_at) * 1000);
  if (wait_ms > 0)
    sleep_ms(wait_ms);
  drain("while the fake is stopped");
  restart("while the fake is stopped");
  wait_ms = (long)(stop_s * 1000) - (long)((now_s() - stopped_at) * 1000);
  if (wait_ms > 0)
    sleep_ms(wait_ms);
  kill(fake_pid, SIGCONT);
  printf("chaos: the fake continued (SIGCONT) after %.1f s\n",
         now_s() - stopped_at);
  /* SIGTERM during the launches that follow */
  sleep_ms(1500 + (long)(rng_next() % 1500));
  drain("during the launches after SIGCONT");
  restart("after the last drain");
  wait_until_done(t0, BUDGET_S + stop_s);
  atomic_store(&sampling, false);
  pthread_join(sampler, NULL);
  succeeded =
      count_sql(d.db, "SELECT count(*) FROM jobs WHERE state = 'succeeded'");
  int interrupted = count_sql(
      d.db, "SELECT count(*) FROM attempts WHERE end_reason = 'interrupted'");
  int attempts = count_sql(d.db, "SELECT count(*) FROM attempts");
  printf("chaos: %d drains (slowest %.2f s, deadline %d s) in %.0f s; %d of "
         "%d jobs succeeded; %d attempts, %d interruptions; %d attempts "
         "handed back launching\n",
         drains, worst_drain_s, SHUTDOWN_S, now_s() - t0, succeeded, submitted,
         attempts, interrupted, n_handed);
  TW_CHECK(submitted == n_jobs, "only %d of %d jobs were accepted", submitted,
           n_jobs);
  TW_CHECK(late_drains == 0,
           "%d of %d drains did not end within %d s of SIGTERM (slowest "
           "%.1f s)",
           late_drains, drains, SHUTDOWN_S + DRAIN_MARGIN_S, worst_drain_s);
  TW_CHECK(n_handed > 0,
           "no drain left an attempt launching: the stop did not bite");
}

/* Every attempt a drain handed back was settled with its own token. */
static void handed_back_attempts_resume_with_their_tokens(void **state) {
  (void)state;
  json_t *insts = st ? json_object_get(st, "instances") : NULL;
  TW_CHECK(json_is_array(insts), "no instance list from the fake");
  sqlite3 *h = NULL;
  TW_CHECK(sqlite3_open_v2(d.db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK,
           "the store does not open");
  sqlite3_stmt *q = NULL;
  sqlite3_prepare_v2(h,
                     "SELECT state, end_reason, instance_id, client_token"
                     " FROM attempts WHERE id = ?1",
                     -1, &q, NULL);
  int adopted = 0, refused = 0, bad = 0;
  for (int k = 0; k < n_handed; k++) {
    sqlite3_bind_int64(q, 1, handed[k].id);
    char astate[16] = "", reason[32] = "", inst[32] = "", token[80] = "";
    if (sqlite3_step(q) == SQLITE_ROW) {
      snprintf(astate, sizeof astate, "%s", sqlite3_column_text(q, 0));
      snprintf(reason, sizeof reason, "%s", sqlite3_column_text(q, 1));
      snprintf(inst, sizeof inst, "%s", sqlite3_column_text(q, 2));
      snprintf(token, sizeof token, "%s", sqlite3_column_text(q, 3));
    }
    sqlite3_reset(q);
    /* the fake's instances under that token, ever */
    int made = 0;
    const char *made_id = "";
    for (size_t i = 0; i < json_array_size(insts); i++) {
      json_t *in = json_array_get(insts, i);
      const char *t = json_string_value(json_object_get(in, "client_token"));
      if (t && !strcmp(t, handed[k].token)) {
        made++;
        made_id = json_string_value(json_object_get(in, "id"));
      }
    }
    bool ok = !strcmp(token, handed[k].token) && !strcmp(astate, "ended");
    if (made == 1 && ok && !strcmp(inst, made_id ? made_id : ""))
      adopted++;
    else if (made == 0 && ok && !inst[0] &&
             (!strcmp(reason, "capacity") || !strcmp(reason, "rejected") ||
              !strcmp(reason, "failed")))
      refused++;
    else {
      bad++;
      fprintf(stderr,
              "chaos: attempt %lld (token %s) handed back launching: now %s "
              "%s instance '%s'; the fake made %d under its token\n",
              (long long)handed[k].id, handed[k].token, astate, reason, inst,
              made);
    }
  }
  sqlite3_finalize(q);
  sqlite3_close(h);
  printf("chaos: %d attempts handed back by the drains: %d settled on the "
         "instance of their token, %d on a definite refusal, %d otherwise\n",
         n_handed, adopted, refused, bad);
  TW_CHECK(bad == 0,
           "%d handed-back attempts were not settled by their "
           "own token",
           bad);
  TW_CHECK(adopted > 0, "no handed-back attempt found its instance");
}

/* Never a job on two live instances, at any sample; the launch faults
 * really happened. */
static void never_two_live_instances_for_one_job(void **state) {
  (void)state;
  printf("chaos: %d samples of the fake's instances, %d with a job on two "
         "live instances (most live for one job: %d)\n",
         samples, bad_samples, worst_job_instances);
  TW_CHECK(samples >= 20, "only %d samples", samples);
  TW_CHECK(bad_samples == 0,
           "%d samples had a job on two live instances (first: %s)",
           bad_samples, first_bad);
  size_t unanswered = twtest_daemon_log_count(&d, "launch unanswered");
  size_t found = twtest_daemon_log_count(&d, "found instance");
  size_t lost_term = twtest_daemon_log_count(&d, "op=terminate");
  printf("chaos: %zu launches unanswered, %zu instances found by their "
         "token, %zu terminates failed or lost\n",
         unanswered, found, lost_term);
  TW_CHECK(unanswered > 0,
           "no launch went unanswered: the faults did not bite");
}

/* No job stuck half way, none run again after its success. */
static void none_stuck_none_run_again(void **state) {
  (void)state;
  int stuck = count_sql(d.db, "SELECT count(*) FROM jobs WHERE state NOT IN"
                              " ('succeeded','failed','cancelled')");
  TW_CHECK(stuck == 0, "%d jobs are stuck in a non-terminal state", stuck);
  int again = count_sql(
      d.db, "SELECT count(*) FROM attempts a JOIN attempts c ON a.job_id ="
            " c.job_id WHERE c.end_reason = 'completed' AND a.n > c.n");
  TW_CHECK(again == 0, "%d attempts were opened after their job's success",
           again);
  int shut = count_sql(d.db, "SELECT count(*) FROM job_events WHERE to_state"
                             " = 'interrupted' AND reason LIKE"
                             " '%UserInitiatedShutdown%'");
  TW_CHECK(shut == 0, "%d completions were taken for interruptions", shut);
}

/* No job lost, no attempt live, no two attempts on one instance. */
static void no_job_lost(void **state) {
  /* no job lost */
  TW_CHECK(succeeded == submitted, "%d of %d jobs did not succeed",
           submitted - succeeded, submitted);
  int missing = 0;
  for (int i = 0; i < n_jobs; i++) {
    if (!ids[i][0])
      continue;
    struct twtest_resp r;
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%s", ids[i]);
    if (twtest_http(d.url, "GET", path, NULL, NULL, &r) || r.status != 200)
      missing++;
    twtest_resp_release(&r);
  }
  TW_CHECK(missing == 0, "%d acknowledged jobs are gone", missing);
  TW_CHECK(
      count_sql(d.db, "SELECT count(*) FROM attempts WHERE state <> 'ended'") ==
          0,
      "attempts are still live after every job ended");
  /* no two attempts name one instance */
  TW_CHECK(count_sql(d.db,
                     "SELECT count(*) FROM (SELECT instance_id FROM attempts"
                     " WHERE instance_id <> '' GROUP BY instance_id HAVING "
                     "count(*) > 1)") == 0,
           "two attempts share an instance");
  int stop_rc = twtest_daemon_stop(&d, 20000);
  TW_CHECK(stop_rc == 0, "the daemon exited %d on SIGTERM", stop_rc);
}

/* No attempt has two instances, and no orphan survives one reconcile
 * pass. */
static void one_reconcile_pass_leaves_nothing_live(void **state) {
  /* orphans, then one reconcile pass: the daemon's start-up pass */
  json_decref(fake_ctl("DELETE", "/_fake/faults", NULL));
  int orphans = buy_orphans();
  TW_CHECK(orphans == ORPHANS, "bought %d orphans of %d", orphans, ORPHANS);
  size_t passes_before = twtest_daemon_log_count(&d, "reconcile: pass done");
  if (twtest_daemon_start(&d) == 0) {
    TW_CHECK(twtest_daemon_wait_log(&d, "reconcile: pass done",
                                    passes_before + 1, 20000),
             "no reconcile pass after the last start");
    twtest_daemon_stop(&d, 20000);
  }
  st = fake_ctl("GET", "/_fake/ec2/state", NULL);
  json_t *insts = st ? json_object_get(st, "instances") : NULL;
  TW_CHECK(json_is_array(insts), "no instance list from the fake");
  size_t n = json_array_size(insts), live = 0, dup = 0;
  /* each attempt tag at most once, over every instance ever made */
  tags = tw_calloc(n + 1, sizeof *tags);
  size_t n_tags = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *in = json_array_get(insts, i);
    const char *istate = json_string_value(json_object_get(in, "state"));
    const char *tag = json_string_value(
        json_object_get(json_object_get(in, "tags"), "tradewind:attempt"));
    if (istate && strcmp(istate, "terminated") &&
        strcmp(istate, "shutting-down")) {
      live++;
      fprintf(stderr, "still live: %s %s attempt=%s\n",
              json_string_value(json_object_get(in, "id")), istate,
              tag ? tag : "-");
    }
    for (size_t k = 0; tag && k < n_tags; k++)
      if (!strcmp(tags[k], tag)) {
        dup++;
        fprintf(stderr, "attempt %s has two instances\n", tag);
      }
    if (tag)
      tags[n_tags++] = tag;
  }
  printf("chaos: the fake made %zu instances; %zu live after the last "
         "reconcile pass\n",
         n, live);
  TW_CHECK(n >= (size_t)submitted, "fewer instances than jobs: %zu", n);
  TW_CHECK(dup == 0, "%zu attempts have two instances", dup);
  TW_CHECK(live == 0, "%zu instances survived the reconcile pass", live);
}

static void daemon_log_has_no_sanitizer_report(void **state) {
  /* a sanitizer build reports in the daemon's log */
  TW_CHECK(twtest_daemon_log_count(&d, "AddressSanitizer") == 0 &&
               twtest_daemon_log_count(&d, "runtime error") == 0,
           "the daemon's log has sanitizer reports");
  size_t adopted = twtest_daemon_log_count(&d, "adopted: ");
  size_t reaped = twtest_daemon_log_count(&d, "terminated: ");
  printf(
      "chaos: the reconciler adopted %zu and terminated %zu instances in all\n",
      adopted, reaped);
}

static int setup(void **state) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  ids = tw_calloc((size_t)n_jobs, sizeof *ids);
  /* the daemon's dir first: the instances boot under it */
  if (twtest_daemon_init(&d, NULL))
    return -1;
  char boot[400];
  snprintf(boot, sizeof boot, "%s/boot", d.dir);
  if (!start_fake(seed, boot))
    return -1;
  setenv("TW_CHAOS_AWS_ACCESS_KEY", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_CHAOS_AWS_SECRET_KEY", "tradewind-fake-secret", 1);
  return 0;
}

static int teardown(void **state) {
  free(tags);
  json_decref(st);
  free(ids);
  stop_fake();
  twtest_daemon_cleanup(&d, tw_failures() > 0);
  curl_global_cleanup();
  if (tw_failures())
    fprintf(stderr, "chaos: %d checks failed (seed %llu)\n", tw_failures(),
            (unsigned long long)seed);
  return 0;
}

int main(int argc, char **argv) {
  stop_term = argc > 1 && !strcmp(argv[1], "--stop-term");
  if (access(TW_FAKECLOUD_PATH, X_OK) || access(twtest_daemon_binary(), X_OK) ||
      access(TW_AGENT_PATH, X_OK)) {
    printf("SKIPPED: tradewindd, tradewind-agent or tradewind-fakecloud is "
           "not built\n");
    return TW_SKIP;
  }
  const char *env = getenv("TW_SEED");
  seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
  rng_state = seed * 2654435761ULL + 1;
  n_jobs = getenv("TW_CHAOS_JOBS") ? atoi(getenv("TW_CHAOS_JOBS")) : 200;
  if (getenv("TW_CHAOS_SAMPLE_MS"))
    sample_ms = atol(getenv("TW_CHAOS_SAMPLE_MS"));
  if (getenv("TW_CHAOS_STOP_S"))
    stop_s = atoi(getenv("TW_CHAOS_STOP_S"));
  n_first = stop_term ? n_jobs * 3 / 4 : n_jobs;
  printf("chaos: seed=%llu jobs=%d%s (TW_SEED=%llu replays this run)\n",
         (unsigned long long)seed, n_jobs,
         stop_term ? ", drains and a stopped fake" : "",
         (unsigned long long)seed);
  if (stop_term)
    printf("chaos: the fake is stopped for %d s (TW_CHAOS_STOP_S)\n", stop_s);
  fflush(stdout);
  /* In order: each test goes on from where the one before left the run. */
  const struct CMUnitTest kills[] = {
      cmocka_unit_test(faults_installed_and_jobs_accepted),
      cmocka_unit_test(killed_again_and_again_until_done),
      cmocka_unit_test(never_two_live_instances_for_one_job),
      cmocka_unit_test(none_stuck_none_run_again),
      cmocka_unit_test(no_job_lost),
      cmocka_unit_test(one_reconcile_pass_leaves_nothing_live),
      cmocka_unit_test(daemon_log_has_no_sanitizer_report),
  };
  const struct CMUnitTest stops[] = {
      cmocka_unit_test(faults_installed_and_jobs_accepted),
      cmocka_unit_test(drained_and_stopped_until_done),
      cmocka_unit_test(never_two_live_instances_for_one_job),
      cmocka_unit_test(none_stuck_none_run_again),
      cmocka_unit_test(no_job_lost),
      cmocka_unit_test(one_reconcile_pass_leaves_nothing_live),
      cmocka_unit_test(handed_back_attempts_resume_with_their_tokens),
      cmocka_unit_test(daemon_log_has_no_sanitizer_report),
  };
  if (stop_term)
    return cmocka_run_group_tests_name("chaos_stop", stops, setup, teardown);
  return cmocka_run_group_tests_name("chaos", kills, setup, teardown);
}
