/* bench-gauges - what GET /metrics' reading of the jobs costs the daemon.
 *
 * Fills a sqlite store in a temporary directory as bench-schedule's burst
 * leaves it half way: --pending N jobs
 * pending and --live M more placed with a live attempt each, over
 * --tenants T tenants, plus --ended E jobs succeeded.  Then measures the
 * CPU time of this process (the store's reads run in it) for:
 *
 *   gauges_read_cpu      one reading as every scrape made it before the
 *                        reading was kept: the tenant gauges and the jobs
 *                        by state (tw_store_tenant_gauges,
 *                        tw_store_job_counts), --reads R times.
 *   gauges_scrape_cpu    one scrape's share as /metrics makes it now
 *                        (tw_store_gauges with TW_STORE_GAUGES_MAX_AGE_MS,
 *                        twice per scrape as the API and the scheduler
 *                        ask), scrapes --every MS apart on a fake clock
 *                        for R seconds of it.
 *   gauges_cpu_share     either per second of scrapes, in % of a core.
 *
 * Output: `key value unit` lines, `#` lines for context. */
#define _GNU_SOURCE /* mkdtemp */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/core/store.h"
#include "broker/core/store_obs.h"

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void on_gauge(void *ctx, const struct tw_tenant_gauge *g) {
  *(int64_t *)ctx += g->pending + g->live_attempts;
}

static void die(const char *what, const struct tw_err *err) {
  fprintf(stderr, "bench-gauges: %s: %s\n", what, err->msg);
  exit(1);
}

int main(int argc, char **argv) {
  long pending = 10000, live = 10000, ended = 0, tenants = 4, reads = 50;
  long every_ms = 250;
  bool keep = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long v = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : -1;
    long *dst = !strcmp(a, "--pending")   ? &pending
                : !strcmp(a, "--live")    ? &live
                : !strcmp(a, "--ended")   ? &ended
                : !strcmp(a, "--tenants") ? &tenants
                : !strcmp(a, "--reads")   ? &reads
                : !strcmp(a, "--every")   ? &every_ms
                                          : NULL;
    if (!strcmp(a, "--keep")) {
      keep = true;
      continue;
    }
    if (!dst || v < 0) {
      fprintf(stderr,
              "usage: bench-gauges [--pending N] [--live M] [--ended E] "
              "[--tenants T] [--reads R] [--every MS] [--keep]\n");
      return 2;
    }
    *dst = v;
    i++;
  }
  if (tenants < 1 || reads < 1 || every_ms < 1) {
    fprintf(stderr, "bench-gauges: --tenants, --reads, --every: at least 1\n");
    return 2;
  }
  tw_log_set_level(TW_LOG_WARN);
  char dir[] = "/tmp/tw-bench-gauges-XXXXXX", path[64];
  if (!mkdtemp(dir))
    return 1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  struct tw_clock clk;
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_store_opts o = {.path = path, .clock = &clk};
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  if (tw_store_open(&o, &s, &err) != TW_OK)
    die("open", &err);
  static const char spec[] =
      "{\"name\":\"bench-gauges\",\"resources\":{\"cpus\":2,\"memory\":"
      "\"4GiB\",\"market\":\"spot\",\"regions\":[\"us-east-1\",\"us-west-2\","
      "\"eu-west-1\"]},\"duration\":\"300s\",\"run\":\"python train.py "
      "--epochs 10 --batch 256\",\"env\":{\"A\":\"1\",\"B\":\"2\"}}";
  double t0 = cpu_s();
  long total = pending + live + ended;
  for (long i = 0; i < total; i++) {
    char name[32], tenant[32];
    snprintf(name, sizeof name, "j%ld", i);
    snprintf(tenant, sizeof tenant, "tenant-%ld", i % tenants);
    struct tw_job_new jn = {
        .name = name, .tenant = tenant, .project = "p", .spec_json = spec};
    struct tw_job_rec j;
    bool rep;
    if (tw_store_job_create(s, &jn, &j, &rep, &err) != TW_OK)
      die("create", &err);
    if (i >= pending) {
      struct tw_attempt_new an = {.job_id = j.id,
                                  .provider = "aws",
                                  .offer_id = "aws:r:z:t:spot",
                                  .market = "spot",
                                  .price_uusd_per_hour = 100000 + i,
                                  .reason = "bench"};
      struct tw_attempt_rec a;
      char inst[32];
      snprintf(inst, sizeof inst, "i-%ld", i);
      if (tw_store_attempt_open(s, &an, &a, &err) != TW_OK ||
          tw_store_attempt_launched(s, a.id, inst, NULL, &err) != TW_OK ||
          tw_store_attempt_running(s, a.id, &err) != TW_OK)
        die("attempt", &err);
      if (i >= pending + live) {
        struct tw_attempt_close c = {.attempt_id = a.id,
                                     .end_reason = "completed",
                                     .job_to = TW_JOB_SUCCEEDED,
                                     .job_reason = "done",
                                     .has_exit = true};
        if (tw_store_attempt_close(s, &c, &err) != TW_OK)
          die("close", &err);
      }
    }
    tw_job_rec_release(&j);
    tw_clock_advance(&clk, 1);
  }
  printf("# sqlite: %ld pending, %ld live, %ld ended over %ld tenants, filled "
         "in %.1f s CPU\n",
         pending, live, ended, tenants,
         cpu_s() - t0);

  /* before: each scrape read both */
  int64_t sum = 0, counts[TW_JOB_NSTATES];
  t0 = cpu_s();
  for (long r = 0; r < reads; r++) {
    if (tw_store_tenant_gauges(s, on_gauge, &sum, &err) != TW_OK ||
        tw_store_job_counts(s, counts, &err) != TW_OK)
      die("read", &err);
  }
  double per_read = (cpu_s() - t0) / (double)reads;
  if (sum != (pending + live) * reads)
    fprintf(stderr, "bench-gauges: read %lld, expected %lld\n",
            (long long)sum, (long long)((pending + live) * reads));

  /* now: scrapes every_ms apart for reads seconds */
  long scrapes = reads * 1000 / every_ms;
  t0 = cpu_s();
  for (long r = 0; r < scrapes; r++) {
    for (int k = 0; k < 2; k++) {
      struct tw_store_gauges g;
      if (tw_store_gauges(s, TW_STORE_GAUGES_MAX_AGE_MS, &g, &err) != TW_OK)
        die("gauges", &err);
      tw_store_gauges_release(&g);
    }
    tw_clock_advance(&clk, every_ms);
  }
  double per_scrape = (cpu_s() - t0) / (double)scrapes;
  printf("gauges_read_cpu %.3f ms\n", per_read * 1e3);
  printf("gauges_scrape_cpu %.3f ms\n", per_scrape * 1e3);
  printf("gauges_cpu_share_before %.2f %% of a core (a scrape every %ld "
         "ms)\n",
         per_read * 1e3 / (double)every_ms * 100, every_ms);
  printf("gauges_cpu_share %.2f %% of a core\n",
         per_scrape * 1e3 / (double)every_ms * 100);
  tw_store_close(s);
  if (keep) {
    printf("# kept %s\n", path);
    return 0;
  }
  static const char *const SUFFIX[] = {"", "-wal", "-shm", ".lock"};
  for (size_t k = 0; k < sizeof SUFFIX / sizeof SUFFIX[0]; k++) {
    char p2[96];
    snprintf(p2, sizeof p2, "%s%s", path, SUFFIX[k]);
    unlink(p2);
  }
  rmdir(dir);
  return 0;
}
