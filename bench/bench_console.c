/* bench-console: the web console's jobs page over a store of 100,000 jobs.
 *
 *   bench-console [--jobs N] [--reps N] [--quick] [--smoke] [--dir DIR]
 *
 * Seeds N jobs (default 100,000) through the store's own write path from
 * 8 threads: 20 tenants, a quarter left pending, the rest placed on one of
 * four providers (aws, azure, alibaba 1 in 10, slurm 1 in 100) and half of
 * those running.  Then an in-process API server answers what the jobs
 * page asks for (GET /v1/jobs, 50 a page: newest, by state, by tenant, by
 * provider, by a rare provider, state and provider together, a provider
 * no job ran on (every row read), a page deep in the cursor chain) and the
 * console's own files, each --reps times (default 200) over one keep-alive
 * connection.  Prints p50 and p95 per request and over all of them, one `key
 * value unit` line each.  Target: every p95 under 200 ms with 100,000 jobs.
 * --quick: 100,000 jobs, 100 reps (under a minute); --smoke: 2,000 jobs, 20
 * reps, every answer checked (ctest).  Figures in docs/benchmarks.md. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "bench/bench_http.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"

#define THREADS 8

static int n_jobs = 100000;
static int reps = 200;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *provider_of(int i) {
  if (i % 100 == 7)
    return "slurm";
  if (i % 10 == 3)
    return "alibaba";
  return i % 2 ? "aws" : "azure";
}

struct seeder {
  struct tw_store *store;
  int from, to;
  int failed;
};

static void *seed(void *arg) {
  struct seeder *sd = arg;
  char name[32], tenant[16], spec[256], placement[256];
  for (int i = sd->from; i < sd->to; i++) {
    snprintf(name, sizeof name, "job-%d", i);
    snprintf(tenant, sizeof tenant, "t%02d", i % 20);
    snprintf(spec, sizeof spec,
             "{\"name\":\"%s\",\"tenant\":\"%s\",\"project\":\"default\","
             "\"resources\":{\"cpus\":1},\"run\":\"true\"}",
             name, tenant);
    struct tw_job_new req = {.name = name,
                             .tenant = tenant,
                             .project = "default",
                             .spec_json = spec};
    struct tw_job_rec job;
    bool replayed;
    struct tw_err err = {0};
    if (tw_store_job_create(sd->store, &req, &job, &replayed, &err)) {
      sd->failed++;
      continue;
    }
    if (i % 4) {
      snprintf(placement, sizeof placement,
               "{\"provider\":\"%s\",\"region\":\"r1\",\"instance_type\":"
               "\"m1\",\"market\":\"on-demand\",\"price_uusd_per_hour\":1000}",
               provider_of(i));
      struct tw_job_transition t = {.id = job.id,
                                    .to = TW_JOB_PLACING,
                                    .reason = "placed",
                                    .placement_json = placement};
      if (tw_store_job_transition(sd->store, &t, NULL, &err))
        sd->failed++;
      if (i % 2) {
        enum tw_job_state next[] = {TW_JOB_PROVISIONING, TW_JOB_RUNNING};
        for (int k = 0; k < 2; k++) {
          struct tw_job_transition u = {
              .id = job.id, .to = next[k], .reason = "on its way"};
          if (tw_store_job_transition(sd->store, &u, NULL, &err))
            sd->failed++;
        }
      }
    }
    tw_job_rec_release(&job);
  }
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  int i = (int)(p * (n - 1) + 0.5);
  return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

int main(int argc, char **argv) {
  bool smoke = false;
  const char *dir_arg = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      n_jobs = 100000;
      reps = 100;
    } else if (!strcmp(argv[i], "--smoke")) {
      smoke = true;
      n_jobs = 2000;
      reps = 20;
    } else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
      n_jobs = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
      dir_arg = argv[++i];
    } else {
      fprintf(stderr, "usage: bench-console [--jobs N] [--reps N] [--quick] "
                      "[--smoke] [--dir DIR]\n");
      return 2;
    }
  }
  if (n_jobs < 100 || reps < 1) {
    fprintf(stderr, "bench-console: --jobs at least 100, --reps at least 1\n");
    return 2;
  }
  char dir[256], db[300];
  if (dir_arg) {
    snprintf(dir, sizeof dir, "%s", dir_arg);
  } else {
    snprintf(dir, sizeof dir, "/tmp/bench-console-XXXXXX");
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      return 1;
    }
  }
  snprintf(db, sizeof db, "%s/console.db", dir);
  unlink(db);
  struct tw_store_opts so = {.path = db, .sync_full = false};
  struct tw_store *store;
  struct tw_err err = {0};
  if (tw_store_open(&so, &store, &err)) {
    fprintf(stderr, "bench-console: %s\n", err.msg);
    return 1;
  }
  double t0 = now_ms();
  pthread_t th[THREADS];
  struct seeder sd[THREADS];
  for (int k = 0; k < THREADS; k++) {
    sd[k] = (struct seeder){.store = store,
                            .from = n_jobs * k / THREADS,
                            .to = n_jobs * (k + 1) / THREADS};
    pthread_create(&th[k], NULL, seed, &sd[k]);
  }
  int failed = 0;
  for (int k = 0; k < THREADS; k++) {
    pthread_join(th[k], NULL);
    failed += sd[k].failed;
  }
  double seed_ms = now_ms() - t0;
  if (failed) {
    fprintf(stderr, "bench-console: %d seeding writes failed\n", failed);
    return 1;
  }
  printf("seed_jobs %d jobs\nseed_time %.1f s\n", n_jobs, seed_ms / 1e3);

  struct tw_api_opts ao = {
      .listen = "127.0.0.1:0", .store = store, .auth = {.open = true}};
  struct tw_api *api;
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "bench-console: %s\n", err.msg);
    return 1;
  }
  /* a cursor half-way down the newest-first chain: the seq of the job in
   * the middle (seqs are 1..n in insertion order) */
  char deep[64];
  snprintf(deep, sizeof deep, "/v1/jobs?limit=50&cursor=c%d", n_jobs / 2);
  struct {
    const char *key, *path;
  } rq[] = {
      {"jobs_newest", "/v1/jobs?limit=50"},
      {"jobs_state", "/v1/jobs?limit=50&state=running"},
      {"jobs_tenant", "/v1/jobs?limit=50&tenant=t07"},
      {"jobs_provider", "/v1/jobs?limit=50&provider=azure"},
      {"jobs_provider_rare", "/v1/jobs?limit=50&provider=slurm"},
      {"jobs_state_provider", "/v1/jobs?limit=50&state=running&provider=aws"},
      /* the worst case: a provider no job ran on reads every row */
      {"jobs_provider_none", "/v1/jobs?limit=50&provider=gcp"},
      {"jobs_deep_page", deep},
      {"ui_index", "/ui"},
      {"ui_app_js", "/ui/app.js"},
  };
  size_t nrq = sizeof rq / sizeof rq[0];
  struct bench_conn c;
  bench_conn_init(&c, tw_api_port(api));
  double *all = tw_calloc(nrq * (size_t)reps, sizeof *all);
  double *one = tw_calloc((size_t)reps, sizeof *one);
  int n_all = 0, bad = 0;
  char req[512];
  for (size_t q = 0; q < nrq; q++) {
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
                     rq[q].path);
    for (int r = 0; r < reps; r++) {
      const char *body;
      size_t len;
      double a = now_ms();
      int st = bench_conn_roundtrip(&c, req, (size_t)n, &body, &len);
      double d = now_ms() - a;
      /* a page of jobs: 50 items (the rare provider may have fewer) */
      bool ok = st == 200;
      if (ok && !strncmp(rq[q].key, "jobs_", 5)) {
        int items = 0;
        for (const char *p = body; (p = strstr(p, "{\"id\":\"j-")); p++)
          items++;
        if (!strcmp(rq[q].key, "jobs_provider_none"))
          ok = items == 0;
        else
          ok = items == 50 || (!strcmp(rq[q].key, "jobs_provider_rare") &&
                               items > 0 && items <= 50);
        if (ok && smoke && strstr(rq[q].path, "provider=azure"))
          ok = !strstr(body, "\"provider\":\"aws\"");
      }
      if (!ok) {
        if (!bad)
          fprintf(stderr, "bench-console: %s answered %d: %.200s\n", rq[q].path,
                  st, st > 0 ? body : "");
        bad++;
      }
      one[r] = d;
      all[n_all++] = d;
    }
    qsort(one, (size_t)reps, sizeof *one, cmp_d);
    printf("%s_p50 %.2f ms\n%s_p95 %.2f ms\n", rq[q].key, pct(one, reps, 0.5),
           rq[q].key, pct(one, reps, 0.95));
  }
  qsort(all, (size_t)n_all, sizeof *all, cmp_d);
  double p95 = pct(all, n_all, 0.95);
  printf("all_p50 %.2f ms\nall_p95 %.2f ms\n", pct(all, n_all, 0.5), p95);
  printf("target_p95 200 ms\n");
  bench_conn_release(&c);
  tw_api_stop(api);
  tw_store_close(store);
  free(all);
  free(one);
  if (!dir_arg) {
    const char *sfx[] = {"", "-wal", "-shm"};
    char p[320];
    for (int i = 0; i < 3; i++) {
      snprintf(p, sizeof p, "%s%s", db, sfx[i]);
      unlink(p);
    }
    rmdir(dir);
  }
  if (bad) {
    fprintf(stderr, "bench-console: %d answers were wrong\n", bad);
    return 1;
  }
  return 0;
}
