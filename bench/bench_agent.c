/* bench-agent - what tradewind-agent's reports cost the broker, and how
 * soon a script's exit ends its job.
 *
 * In one process: the store on a temporary file, the in-process fake
 * provider with `agent: true`, the scheduler on its own thread (tick
 * --tick-ms, default the daemon's 1000 ms) and the REST server, as the
 * daemon wires them.  N jobs are
 * submitted and launched; each attempt's token is read from its bootstrap
 * and every agent registers.  Then, for --seconds, client threads play the
 * N agents over keep-alive connections: a heartbeat every 10 s and
 * --log-bytes a second of output per agent (10 KB/s by default), sent as
 * tradewind-agent sends a steady job's output: one chunk every
 * --log-every seconds (default 5, the agent's LOG_EVERY_MS; 1 is the
 * chunk a second the bench sent before), each agent at its own phase.  The
 * broker's CPU is the process's minus the client threads' own
 * (RUSAGE_THREAD), over the window's wall time.  Last, every agent reports
 * exit 0 and the time from its 200 to its job's terminal state (polled
 * through the store every 2 ms) is the exit latency.
 *
 * Output: one `key value unit` line per figure:
 *   agent_count 1000 agents
 *   agent_broker_cpu 6.1 %core
 *   agent_log_rate 9800 KB/s
 *   agent_store_commits_rate 310 commits/s
 *   agent_store_writes_rate 1100 writes/s
 *   agent_exit_p50 150 ms
 *   agent_exit_p99 420 ms
 * --quick: 200 agents for 10 s (under a minute).  Exit 0 when every
 * report was answered 200 and every job succeeded. */
#define _GNU_SOURCE /* RUSAGE_THREAD, mkdtemp */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "bench/bench_http.h"
#include "broker/base/log.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/sched/agent.h"
#include "broker/sched/sched.h"
#include "tests/fakes/fake_provider.h"

#define THREADS 32

struct ag {
  char job_id[32];
  char attempt[48];
  char token[TW_AGENT_TOKEN_LEN + 1];
  int64_t out_off;
  int64_t exit_sent_us, ended_us;
};

static struct ag *agents;
static int n_agents, seconds = 30, log_bytes = 10240, log_every = 5, port;
static int tick_ms = 1000; /* scheduler.tick_ms's default */
static int failures;
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

static void wake_sched(void *ctx) { tw_sched_wake(ctx); }

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double cpu_s(int who) {
  struct rusage ru;
  getrusage(who, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void failed(const char *what, int status, const char *body) {
  pthread_mutex_lock(&fail_mu);
  if (failures++ < 5)
    fprintf(stderr, "# %s: %d %.200s\n", what, status, body ? body : "");
  pthread_mutex_unlock(&fail_mu);
}

/* Each client thread's request buffer (freed when the thread ends). */
static __thread char *req_buf;
static __thread size_t req_cap;

static void req_release(void) {
  free(req_buf);
  req_buf = NULL;
  req_cap = 0;
}

/* One report; 0 when answered 200. */
static int post(struct bench_conn *c, const struct ag *a, const char *route,
                const char *ctype, const char *body, size_t len) {
  size_t need = len + 512;
  if (need > req_cap) {
    free(req_buf);
    req_cap = need;
    req_buf = malloc(req_cap);
  }
  int h = snprintf(req_buf, req_cap,
                   "POST /v1/agent/attempts/%s/%s HTTP/1.1\r\n"
                   "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                   a->attempt, route, a->token, ctype, len);
  memcpy(req_buf + h, body, len);
  const char *ans = NULL;
  size_t ans_len = 0;
  int st = bench_conn_roundtrip(c, req_buf, (size_t)h + len, &ans, &ans_len);
  if (st == -1) /* an idle keep-alive connection the server closed: an
                   agent sends again on a new one */
    st = bench_conn_roundtrip(c, req_buf, (size_t)h + len, &ans, &ans_len);
  if (st != 200) {
    failed(route, st, ans);
    return -1;
  }
  return 0;
}

struct worker {
  int from, to;
  double cpu;
  long reports;
  int64_t bytes;
  bool exit_phase;
};

static void *play(void *arg) {
  struct worker *w = arg;
  struct bench_conn c;
  bench_conn_init(&c, port);
  size_t chunk_len = (size_t)log_bytes * (size_t)log_every;
  char *chunk = malloc(chunk_len);
  memset(chunk, 'x', chunk_len);
  chunk[chunk_len - 1] = '\n';
  int64_t t0 = now_us(), end = t0 + (int64_t)seconds * 1000000;
  /* each agent beats at its own phase within the 10 s */
  for (int64_t sec = 0; now_us() < end; sec++) {
    int64_t tick = t0 + sec * 1000000;
    while (now_us() < tick)
      usleep(1000);
    for (int i = w->from; i < w->to; i++) {
      struct ag *a = &agents[i];
      char route[64];
      snprintf(route, sizeof route, "logs?stream=stdout&offset=%lld",
               (long long)a->out_off);
      if ((i + sec) % log_every == 0) {
        if (post(&c, a, route, "application/octet-stream", chunk,
                 chunk_len) == 0) {
          a->out_off += (int64_t)chunk_len;
          w->bytes += (int64_t)chunk_len;
        }
        w->reports++;
      }
      if ((i + sec) % 10 == 0) {
        post(&c, a, "heartbeat", "application/json", "{\"phase\":\"run\"}", 15);
        w->reports++;
      }
    }
  }
  w->cpu = cpu_s(RUSAGE_THREAD);
  req_release();
  free(chunk);
  bench_conn_release(&c);
  return NULL;
}

int main(int argc, char **argv) {
  n_agents = 1000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      n_agents = 200;
      seconds = 10;
    } else if (!strcmp(argv[i], "--agents") && i + 1 < argc) {
      n_agents = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--tick-ms") && i + 1 < argc) {
      tick_ms = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--log-bytes") && i + 1 < argc) {
      log_bytes = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--log-every") && i + 1 < argc) {
      log_every = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench-agent [--quick] [--agents N] [--seconds S] "
                      "[--log-bytes B] [--log-every S]\n");
      return 2;
    }
  }
  if (n_agents < 1 || seconds < 1 || log_bytes < 1 || log_every < 1 ||
      log_every > 60)
    return 2;
  tw_log_set_level(TW_LOG_WARN);
  char dir[] = "/tmp/tw-bench-agent-XXXXXX", path[64];
  if (!mkdtemp(dir))
    return 1;
  snprintf(path, sizeof path, "%s/a.db", dir);
  struct tw_err err = {0};
  struct tw_store *store = NULL;
  struct tw_provider *prov = NULL;
  struct tw_node *cfg = NULL;
  struct tw_store_opts so = {.path = path, .sync_full = true};
  static const char CFG[] = "{agent: true, concurrency: 64}";
  if (tw_store_open(&so, &store, &err) ||
      tw_node_parse_yaml(CFG, sizeof CFG - 1, &cfg, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", cfg, NULL, &prov, &err)) {
    fprintf(stderr, "bench-agent: %s\n", err.msg);
    return 1;
  }
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
  struct tw_agent *agent = NULL;
  struct tw_agent_opts ao = {.store = store,
                             .preinstalled = true,
                             .heartbeat_s = 10,
                             .heartbeat_timeout_s = 120,
                             .max_log_bytes = (int64_t)1 << 30,
                             .grace_s = 30};
  struct tw_sched *sched = NULL;
  struct tw_api *api = NULL;
  struct tw_sched_opts sopt = {.store = store,
                               .providers = &prov,
                               .n_providers = 1,
                               .tick_ms = tick_ms,
                               .max_place_per_tick = 256};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = store,
                             .providers = &prov,
                             .n_providers = 1,
                             .auth = {.open = true, .rate_per_s = -1},
                             .max_connections = 4096};
  if (tw_agent_new(&ao, &agent, &err)) {
    fprintf(stderr, "bench-agent: %s\n", err.msg);
    return 1;
  }
  sopt.agent = agent;
  aopt.agent = agent;
  if (tw_sched_new(&sopt, &sched, &err) ||
      (tw_agent_set_wake(agent, wake_sched, sched),
       tw_api_start(&aopt, &api, &err))) {
    fprintf(stderr, "bench-agent: %s\n", err.msg);
    return 1;
  }
  port = tw_api_port(api);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  tw_agent_set_url(agent, url);
  if (tw_sched_start(sched, &err)) {
    fprintf(stderr, "bench-agent: %s\n", err.msg);
    return 1;
  }

  /* N jobs, launched */
  agents = calloc((size_t)n_agents, sizeof *agents);
  static const char SPEC[] =
      "{\"name\":\"b\",\"resources\":{\"cpus\":2},\"run\":\"true\"}";
  struct tw_job_spec spec;
  struct tw_buf sj;
  tw_buf_init(&sj);
  if (tw_spec_parse(SPEC, sizeof SPEC - 1, true, &spec, &err))
    return 1;
  tw_spec_to_json(&spec, &sj);
  for (int i = 0; i < n_agents; i++) {
    struct tw_job_new req = {.name = spec.name,
                             .tenant = spec.tenant,
                             .project = spec.project,
                             .spec_json = sj.data};
    struct tw_job_rec j;
    if (tw_store_job_create(store, &req, &j, NULL, &err))
      return 1;
    snprintf(agents[i].job_id, sizeof agents[i].job_id, "%s", j.id);
    tw_job_rec_release(&j);
  }
  tw_spec_release(&spec);
  tw_buf_release(&sj);
  for (int i = 0; i < n_agents; i++) {
    struct ag *a = &agents[i];
    for (int t = 0; t < 600 && !a->token[0]; t++) {
      struct tw_attempt_rec *at = NULL;
      size_t n = 0;
      if (tw_store_attempts_of(store, a->job_id, &at, &n, NULL) == TW_OK && n &&
          at[n - 1].instance_id[0]) {
        char ud[8192];
        tw_fake_user_data(tw_fake_of(prov), at[n - 1].instance_id, ud,
                          sizeof ud, NULL);
        const char *p = strstr(ud, "printf '%s' '");
        if (p)
          memcpy(a->token, p + 13, TW_AGENT_TOKEN_LEN);
        snprintf(a->attempt, sizeof a->attempt, "%s", at[n - 1].client_token);
      }
      free(at);
      if (!a->token[0])
        usleep(100000);
    }
    if (!a->token[0]) {
      fprintf(stderr, "bench-agent: job %s was not launched\n", a->job_id);
      return 1;
    }
  }
  struct bench_conn c;
  bench_conn_init(&c, port);
  for (int i = 0; i < n_agents; i++) {
    char body[160];
    int len = snprintf(body, sizeof body,
                       "{\"instance_id\":\"lab-%d\",\"cloud\":\"local\"}", i);
    post(&c, &agents[i], "register", "application/json", body, (size_t)len);
  }
  sleep(1); /* every attempt running */
  printf("# %d agents, %d s, %d bytes of log per agent per second in one "
         "chunk every %d s\n",
         n_agents, seconds, log_bytes, log_every);

  /* the load */
  struct worker w[THREADS];
  pthread_t th[THREADS];
  /* client threads: up to THREADS, none without an agent of its own */
  int nth = n_agents < THREADS ? n_agents : THREADS;
  int per = n_agents / nth;
  struct tw_store_stats ss0, ss1;
  tw_store_stats(store, &ss0);
  double cpu0 = cpu_s(RUSAGE_SELF);
  int64_t t0 = now_us();
  for (int k = 0; k < nth; k++) {
    w[k] = (struct worker){.from = k * per,
                           .to = k == nth - 1 ? n_agents : (k + 1) * per};
    pthread_create(&th[k], NULL, play, &w[k]);
  }
  double client_cpu = 0;
  long reports = 0;
  int64_t bytes = 0;
  for (int k = 0; k < nth; k++) {
    pthread_join(th[k], NULL);
    client_cpu += w[k].cpu;
    reports += w[k].reports;
    bytes += w[k].bytes;
  }
  double wall = (double)(now_us() - t0) / 1e6;
  /* the heartbeats the broker keeps in memory are stored now, and what
   * that costs counts as the window's */
  tw_agent_flush_heartbeats(agent);
  double broker_cpu = cpu_s(RUSAGE_SELF) - cpu0 - client_cpu;
  tw_store_stats(store, &ss1);

  /* exits: each job's terminal state after its 200 */
  for (int i = 0; i < n_agents; i++) {
    agents[i].exit_sent_us = 0;
    if (post(&c, &agents[i], "exit", "application/json", "{\"exit_code\":0}",
             15) == 0)
      agents[i].exit_sent_us = now_us();
    if (i % 50 == 49 || i == n_agents - 1) {
      /* poll the last 50 until they end */
      for (int spin = 0; spin < 5000; spin++) {
        bool all = true;
        for (int k = i - (i % 50); k <= i; k++) {
          struct ag *a = &agents[k];
          if (a->ended_us || !a->exit_sent_us)
            continue;
          struct tw_job_rec j;
          if (tw_store_job_get(store, a->job_id, &j, NULL) == TW_OK) {
            if (tw_job_state_terminal(j.state)) {
              a->ended_us = now_us();
              if (j.state != TW_JOB_SUCCEEDED)
                failed("exit", (int)j.state, a->job_id);
            } else {
              all = false;
            }
            tw_job_rec_release(&j);
          }
        }
        if (all)
          break;
        usleep(2000);
      }
    }
  }
  bench_conn_release(&c);
  req_release();
  int64_t *lat = calloc((size_t)n_agents, sizeof *lat);
  int n_lat = 0;
  for (int i = 0; i < n_agents; i++)
    if (agents[i].ended_us)
      lat[n_lat++] = agents[i].ended_us - agents[i].exit_sent_us;
  for (int i = 1; i < n_lat; i++) /* insertion sort: n is small */
    for (int k = i; k > 0 && lat[k - 1] > lat[k]; k--) {
      int64_t t = lat[k];
      lat[k] = lat[k - 1];
      lat[k - 1] = t;
    }
  printf("agent_count %d agents\n", n_agents);
  printf("agent_reports_rate %.0f reports/s\n", (double)reports / wall);
  printf("agent_log_rate %.0f KB/s\n", (double)bytes / 1024.0 / wall);
  printf("agent_broker_cpu %.1f %%core\n", 100.0 * broker_cpu / wall);
  printf("agent_store_commits_rate %.0f commits/s\n",
         (double)(ss1.commits - ss0.commits) / wall);
  printf("agent_store_writes_rate %.0f writes/s\n",
         (double)(ss1.ops - ss0.ops) / wall);
  if (n_lat) {
    printf("agent_exit_p50 %.0f ms\n", (double)lat[n_lat / 2] / 1000.0);
    printf("agent_exit_p99 %.0f ms\n",
           (double)lat[(n_lat * 99) / 100 < n_lat ? (n_lat * 99) / 100
                                                  : n_lat - 1] /
               1000.0);
  }
  if (n_lat != n_agents)
    failed("exit", n_lat, "jobs did not end");
  free(lat);
  tw_api_stop(api);
  tw_sched_free(sched);
  tw_agent_free(agent);
  tw_provider_free(prov);
  tw_store_close(store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd))
    fprintf(stderr, "# left %s\n", dir);
  free(agents);
  return failures ? 1 : 0;
}
