/* bench-report: ledger appends per second, then a spend report over all of
 * them grouped by tenant, provider and day.
 *
 *   bench-report [--rows N] [--quick] [--smoke] [--dir DIR] [--keep]
 *
 * Rows are spread over 90 days and 2,000 jobs, each job of one of 20
 * tenants x 3 projects running on one of 4 providers x 3 regions; one
 * hour each, as the meter writes them.  The
 * appends go through tw_ledger_append in batches of 1,000 (the meter's
 * path: one batch per pass) with synchronous=NORMAL; a second phase
 * measures single-row appends from 8 threads (group commit, FULL).  The
 * report is tw_ledger_sum over the whole range, run 5 times; its total
 * must equal what was appended, to the micro-dollar.
 *
 * Then 100,000 running attempts (the meter's progress, as it stores
 * them) accrue since their last closed hour, and the full report (JSON:
 * groups, provider x day, tenants, forecast, budgets; then HTML) is
 * rendered with that accrual, which must equal what the attempts accrue
 * by hand; and the one "spent" of a budget (tw_ledger_spent_now).  Target:
 * the full report under 1 s over 10 M rows and 100 k running attempts.
 *
 * Default 10,000,000 rows (a few minutes and ~3 GB of disk); --quick
 * 1,000,000 (under a minute); --smoke 20,000 rows and 1,000 attempts
 * (ctest).  Each figure is also one `key value unit` line.  Figures in
 * docs/benchmarks.md. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "billing/ledger/ledger.h"
#include "billing/ledger/meter.h"
#include "billing/report/report.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"

#define T0 1756684800000LL /* 2025-09-01T00:00:00Z */
#define DAYS 90
#define BATCH 1000
#define HOUR 3600000LL

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define RNG_SEED 0x9e3779b97f4a7c15ULL

/* xorshift64 over the caller's state: each appending thread has its own,
 * so the threads of step 3 do not race on one generator. */
static uint64_t next_rand(uint64_t *rng) {
  *rng ^= *rng << 13;
  *rng ^= *rng >> 7;
  *rng ^= *rng << 17;
  return *rng;
}

static const char *const PROVIDERS[] = {"aws", "azure", "alibaba", "slurm"};
static const char *const REGIONS[4][3] = {
    {"us-east-1", "us-west-2", "eu-west-1"},
    {"eastus", "westeurope", "japaneast"},
    {"cn-hangzhou", "cn-beijing", "ap-southeast-1"},
    {"lab-a", "lab-b", "lab-c"}};

/* Row i of n: day, hour and dimensions spread evenly, costs random. */
static void make_row(struct tw_ledger_row *r, int64_t i, int64_t n,
                     uint64_t *rng) {
  memset(r, 0, sizeof *r);
  int64_t slot = i * (DAYS * 24) / n; /* hours from T0, in order */
  /* a job belongs to one tenant and project and runs in one place, as
   * real ones mostly do */
  int j = (int)(next_rand(rng) % 2000);
  int t = j % 20, pr = (j / 20) % 3, p = (j / 60) % 4, g = (j / 240) % 3;
  snprintf(r->tenant, sizeof r->tenant, "tenant-%02d", t);
  snprintf(r->project, sizeof r->project, "proj-%d", pr);
  snprintf(r->provider, sizeof r->provider, "%s", PROVIDERS[p]);
  snprintf(r->account, sizeof r->account, "%s-main", PROVIDERS[p]);
  snprintf(r->region, sizeof r->region, "%s", REGIONS[p][g]);
  snprintf(r->zone, sizeof r->zone, "%sa", REGIONS[p][g]);
  snprintf(r->instance_type, sizeof r->instance_type, "p4d.24xlarge");
  snprintf(r->job_id, sizeof r->job_id, "j-%04d", j);
  snprintf(r->resource_id, sizeof r->resource_id, "i-%016llx",
           (unsigned long long)(next_rand(rng) & 0xffffffffffffULL));
  snprintf(r->market, sizeof r->market, "%s",
           next_rand(rng) % 3 ? "spot" : "on-demand");
  r->attempt_id = i + 1;
  r->start_ms = T0 + slot * HOUR;
  r->end_ms = r->start_ms + HOUR;
  r->usage_ms = HOUR;
  r->nodes = 1;
  r->quantity = 3600;
  r->unit_price_uusd = (int64_t)(next_rand(rng) % 40000000) + 50000;
  r->list_uusd = r->unit_price_uusd;
  r->effective_uusd = r->list_uusd - r->list_uusd / 8;
  snprintf(r->description, sizeof r->description, "p4d.24xlarge in %s",
           r->zone);
}

struct single_arg {
  struct tw_store *s;
  int64_t n, base;
  int64_t eff;
};

static void *single_main(void *p) {
  struct single_arg *a = p;
  struct tw_ledger_row r;
  struct tw_err err = {0};
  uint64_t rng = RNG_SEED ^ (uint64_t)(a->base + 1);
  for (int64_t i = 0; i < a->n; i++) {
    make_row(&r, a->base + i, a->base + a->n, &rng);
    r.start_ms = T0 + (DAYS + 1) * TW_DAY_MS; /* a day of its own */
    r.end_ms = r.start_ms + HOUR;
    if (tw_ledger_append(a->s, &r, 1, T0, &err)) {
      fprintf(stderr, "append: %s\n", err.msg);
      exit(1);
    }
    a->eff += r.effective_uusd;
  }
  return NULL;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* n running attempts, as the meter keeps them: running since 3 hours
 * before `now`, charged up to 30 minutes before it; returns what they
 * accrue at now (effective, 12.5 % off) into *list and *eff. */
static int open_attempts(struct tw_store *s, int64_t n, int64_t now,
                         int64_t *list, int64_t *eff) {
  struct tw_err err = {0};
  uint64_t rng = RNG_SEED ^ 0xacc;
  *list = *eff = 0;
  enum { CHUNK = 5000 };
  struct tw_store_meter_progress *p = tw_calloc(CHUNK, sizeof *p);
  struct tw_store_meter_work *w = tw_calloc(CHUNK, sizeof *w);
  for (int64_t base = 0; base < n; base += CHUNK) {
    int64_t k = n - base < CHUNK ? n - base : CHUNK;
    for (int64_t i = 0; i < k; i++) {
      struct tw_store_meter_progress *x = &p[i];
      memset(x, 0, sizeof *x);
      int j = (int)(next_rand(&rng) % 2000);
      int t = j % 20, pr = (j / 20) % 3, pv = (j / 60) % 4, g = (j / 240) % 3;
      x->attempt_id = 100000000 + base + i;
      snprintf(x->job_id, sizeof x->job_id, "r-%06lld",
               (long long)(base + i));
      snprintf(x->tenant, sizeof x->tenant, "tenant-%02d", t);
      snprintf(x->project, sizeof x->project, "proj-%d", pr);
      snprintf(x->provider, sizeof x->provider, "%s", PROVIDERS[pv]);
      snprintf(x->account, sizeof x->account, "%s-main", PROVIDERS[pv]);
      snprintf(x->region, sizeof x->region, "%s", REGIONS[pv][g]);
      snprintf(x->market, sizeof x->market, "on-demand");
      snprintf(x->instance_type, sizeof x->instance_type, "p4d.24xlarge");
      x->nodes = 1;
      x->granularity_s = 1;
      x->min_charge_s = 60;
      x->price_uusd_per_hour = (int64_t)(next_rand(&rng) % 40000000) + 50000;
      x->running_ms = now - 3 * HOUR;
      x->metered_to_ms = now - HOUR / 2;
      x->billed_s = 9000;
      x->discount_bp = 1250;
      w[i] = (struct tw_store_meter_work){.progress = x};
      *list += tw_bill_cost(x->price_uusd_per_hour, 1800);
      *eff += tw_bill_cost_at(x->price_uusd_per_hour, 1800, 1250);
    }
    if (tw_store_meter_commit(s, w, (size_t)k, now, &err)) {
      fprintf(stderr, "progress: %s\n", err.msg);
      return -1;
    }
  }
  free(p);
  free(w);
  return 0;
}

int main(int argc, char **argv) {
  int64_t rows = 10000000;
  int64_t attempts = 100000;
  const char *dir = NULL;
  bool keep = false, smoke = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      rows = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--quick"))
      rows = 1000000;
    else if (!strcmp(argv[i], "--smoke"))
      rows = 20000, attempts = 1000, smoke = true;
    else if (!strcmp(argv[i], "--attempts") && i + 1 < argc)
      attempts = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--keep"))
      keep = true;
    else {
      fprintf(stderr,
              "usage: bench-report [--rows N] [--attempts N] [--quick] "
              "[--smoke] [--dir DIR] [--keep]\n");
      return 2;
    }
  }
  if (rows < BATCH)
    rows = BATCH;
  char tmp[256], path[320];
  snprintf(tmp, sizeof tmp, "%s/bench-report-XXXXXX", dir ? dir : "/tmp");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/ledger.db", tmp);
  struct tw_err err = {0};
  struct tw_store *s = NULL;
  struct tw_store_opts so = {.path = path, .sync_full = false};
  if (tw_store_open(&so, &s, &err)) {
    fprintf(stderr, "store: %s\n", err.msg);
    return 1;
  }

  /* 1. batched appends, as the meter writes */
  uint64_t rng = RNG_SEED;
  struct tw_ledger_row *batch = tw_malloc(BATCH * sizeof *batch);
  int64_t list_total = 0, eff_total = 0;
  double t0 = now_s(), last = t0;
  for (int64_t i = 0; i < rows; i += BATCH) {
    for (int k = 0; k < BATCH; k++) {
      make_row(&batch[k], i + k, rows, &rng);
      list_total += batch[k].list_uusd;
      eff_total += batch[k].effective_uusd;
    }
    if (tw_ledger_append(s, batch, BATCH, T0, &err)) {
      fprintf(stderr, "append: %s\n", err.msg);
      return 1;
    }
    if (!smoke && now_s() - last > 10) {
      last = now_s();
      fprintf(stderr, "  %lld rows, %.0f rows/s\n", (long long)(i + BATCH),
              (double)(i + BATCH) / (last - t0));
    }
  }
  double t_append = now_s() - t0;
  rows = rows / BATCH * BATCH;
  printf("appends (batches of %d, synchronous=normal): %lld rows in %.1f s = "
         "%.0f rows/s\n",
         BATCH, (long long)rows, t_append, (double)rows / t_append);
  printf("append_rows_per_s %.0f rows/s\n", (double)rows / t_append);
  free(batch);

  /* 2. the report: every row, grouped by tenant, provider and day */
  double runs[5];
  size_t groups = 0;
  for (int k = 0; k < 5; k++) {
    struct tw_ledger_group *g;
    size_t n;
    double a = now_s();
    if (tw_ledger_sum(s, T0, T0 + DAYS * TW_DAY_MS,
                      TW_GROUP_TENANT | TW_GROUP_PROVIDER | TW_GROUP_DAY, NULL,
                      &g, &n, &err)) {
      fprintf(stderr, "report: %s\n", err.msg);
      return 1;
    }
    runs[k] = now_s() - a;
    int64_t l = 0, e = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
      l += g[i].list_uusd;
      e += g[i].effective_uusd;
      c += g[i].rows;
    }
    free(g);
    groups = n;
    if (l != list_total || e != eff_total || c != rows) {
      fprintf(stderr,
              "report total %lld/%lld over %lld rows != appended %lld/%lld "
              "over %lld\n",
              (long long)l, (long long)e, (long long)c, (long long)list_total,
              (long long)eff_total, (long long)rows);
      return 1;
    }
  }
  qsort(runs, 5, sizeof runs[0], cmp_double);
  printf("report over %lld rows by tenant,provider,day: %zu groups, median "
         "%.1f ms "
         "(best %.1f, worst %.1f); totals equal the appended rows\n",
         (long long)rows, groups, runs[2] * 1e3, runs[0] * 1e3, runs[4] * 1e3);
  printf("sum_by_tenant_provider_day_ms %.1f ms\n", runs[2] * 1e3);

  /* running attempts accrue; budgets to compare with */
  int64_t now_ms = T0 + (DAYS - 10) * TW_DAY_MS + HOUR / 2;
  int64_t acc_list, acc_eff;
  double a = now_s();
  if (open_attempts(s, attempts, now_ms, &acc_list, &acc_eff))
    return 1;
  printf("running attempts stored: %lld in %.1f s\n", (long long)attempts,
         now_s() - a);
  struct tw_ledger_budget budgets[3] = {
      {.limit_uusd = 900000000000000LL},
      {.tenant = "tenant-03", .limit_uusd = 90000000000000LL},
      {.tenant = "tenant-07", .project = "proj-1",
       .limit_uusd = 9000000000000LL}};
  if (tw_ledger_budgets_set(s, budgets, 3, &err)) {
    fprintf(stderr, "budgets: %s\n", err.msg);
    return 1;
  }

  /* the whole JSON report (groups, by provider x day, tenants, forecast,
   * budgets), accrual included */
  struct tw_report_req q = {.from_ms = T0,
                            .to_ms = T0 + DAYS * TW_DAY_MS,
                            .group_mask = TW_GROUP_TENANT | TW_GROUP_PROVIDER |
                                          TW_GROUP_DAY,
                            .format = NULL, /* json, the default */
                            .now_ms = now_ms};
  struct tw_buf out;
  tw_buf_init(&out);
  const char *ctype;
  double jruns[3];
  for (int k = 0; k < 3; k++) {
    tw_buf_reset(&out);
    a = now_s();
    if (tw_report_render(s, &q, &out, &ctype, &err)) {
      fprintf(stderr, "render: %s\n", err.msg);
      return 1;
    }
    jruns[k] = now_s() - a;
  }
  qsort(jruns, 3, sizeof jruns[0], cmp_double);
  /* the total's accrual is what the attempts accrue by hand */
  char want[96];
  snprintf(want, sizeof want, "\"accrued_effective_cost_uusd\":%lld,\"rows\"",
           (long long)acc_eff);
  if (!strstr(out.data, want)) {
    fprintf(stderr, "report's accrual is not %lld\n", (long long)acc_eff);
    return 1;
  }
  printf("JSON report (with forecast, 3 budgets and %lld running attempts "
         "accrued): median %.1f ms of 3, %zu bytes; accrual equals the "
         "attempts'\n",
         (long long)attempts, jruns[1] * 1e3, out.len);
  printf("report_json_ms %.1f ms\n", jruns[1] * 1e3);
  int64_t spent = 0, accrued = 0;
  a = now_s();
  if (tw_ledger_spent_now(s, NULL, NULL, T0, T0 + DAYS * TW_DAY_MS, now_ms,
                          &spent, &accrued, &err) ||
      spent != eff_total + acc_eff || accrued != acc_eff) {
    fprintf(stderr, "spent %lld (accrued %lld) != %lld + %lld: %s\n",
            (long long)spent, (long long)accrued, (long long)eff_total,
            (long long)acc_eff, err.msg);
    return 1;
  }
  printf("budget_spent_ms %.1f ms\n", (now_s() - a) * 1e3);
  if (tw_report_format_parse("html", &q.format, &err)) {
    fprintf(stderr, "format: %s\n", err.msg);
    return 1;
  }
  tw_buf_reset(&out);
  a = now_s();
  if (tw_report_render(s, &q, &out, &ctype, &err)) {
    fprintf(stderr, "render: %s\n", err.msg);
    return 1;
  }
  printf("HTML report: %.1f ms, %zu bytes\n", (now_s() - a) * 1e3, out.len);
  printf("report_html_ms %.1f ms\n", (now_s() - a) * 1e3);
  tw_buf_release(&out);
  tw_store_close(s);

  /* 3. single-row appends from 8 threads, durable (FULL): group commit */
  char path2[340];
  snprintf(path2, sizeof path2, "%s/single.db", tmp);
  struct tw_store_opts so2 = {.path = path2, .sync_full = true};
  if (tw_store_open(&so2, &s, &err)) {
    fprintf(stderr, "store: %s\n", err.msg);
    return 1;
  }
  int64_t per = smoke ? 250 : 5000;
  pthread_t th[8];
  struct single_arg sa[8];
  a = now_s();
  for (int i = 0; i < 8; i++) {
    sa[i] = (struct single_arg){.s = s, .n = per, .base = i * per};
    pthread_create(&th[i], NULL, single_main, &sa[i]);
  }
  int64_t single_eff = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    single_eff += sa[i].eff;
  }
  double t_single = now_s() - a;
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  spent = 0;
  tw_ledger_spent(s, NULL, NULL, T0, T0 + (DAYS + 2) * TW_DAY_MS, &spent, &err);
  printf("single-row appends, 8 threads, synchronous=full: %lld rows in %.2f s "
         "= %.0f rows/s "
         "(%llu commits)\n",
         (long long)(8 * per), t_single, (double)(8 * per) / t_single,
         (unsigned long long)st.commits);
  tw_store_close(s);
  if (spent != single_eff) {
    fprintf(stderr, "single-row total %lld != appended %lld\n",
            (long long)spent, (long long)single_eff);
    return 1;
  }
  struct stat sb;
  if (stat(path, &sb) == 0)
    printf("ledger file: %.1f MB for %lld rows\n", (double)sb.st_size / 1e6,
           (long long)rows);
  if (!keep) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", tmp);
  } else {
    printf("kept %s\n", tmp);
  }
  if (smoke)
    printf("1 passed, 0 failed\n");
  return 0;
}
