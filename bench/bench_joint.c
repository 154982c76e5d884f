/* bench_joint.c - the time to place a whole workflow jointly
 * (policies/place/joint.h): a DAG of 1,000 tasks (and 10,000 without
 * --quick) over every region of the shipped network matrix.
 *
 *   bench-joint [--quick] [--smoke] [--sizes 1000,10000] [--seed N]
 *
 * Offers: four machine shapes (8 and 32 vCPUs, 8 x A100, 1 x T4) in two
 * zones of every region the shipped matrix names, A100s in a third of
 * them, prices varying by region within +-25%; on-demand.  The policy set
 * is the default with the shipped matrix.
 *
 * Workflows: tasks in layers of about sqrt(N) (a sweep's fan-out and
 * fan-in), each depending on one to three tasks of the layer before and
 * now and then on one two layers up; outputs of 1 to 500 GB; five asks
 * (CPU small and large, A100:8, T4:1, CPU in the EU), the first layer
 * reading 20 datasets of 100 GB to 2 TB at random regions.  Also a chain
 * of 100 steps alternating CPU and GPU.
 *
 * Figures: the table (per-region plans), the solver (greedy and joint)
 * and the whole plan, in milliseconds of CPU time (and the whole plan's
 * wall time); the costs, the saving
 * against step by step, and the gap to the lower bound (an upper bound of
 * how far the joint placement may be from the optimum).
 *
 * Output: one `key value unit` line per figure; `#` lines give context. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "policies/place/index.h"
#include "policies/place/joint.h"
#include "policies/place/netmatrix.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int64_t rnd_in(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* CPU time of this thread, which the machine's load disturbs least (the
 * plan is single-threaded); wall time for the whole plan beside it. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const struct {
  const char *type;
  int vcpus;
  const char *accel;
  int n;
  int64_t price;
} SHAPES[] = {
    {"c8", 8, NULL, 0, 340000},
    {"c32", 32, NULL, 0, 1360000},
    {"a100x8", 96, "A100-40GB", 8, 32000000},
    {"t4", 4, "T4", 1, 526000},
};

static size_t make_offers(const struct tw_netmatrix *m, struct tw_offer **out,
                          size_t *n_regions) {
  size_t nr = tw_netmatrix_n_regions(m), n = 0;
  struct tw_offer *o = calloc(nr * 2 * 4, sizeof *o);
  for (size_t i = 0; i < nr; i++) {
    const struct tw_net_region *r = tw_netmatrix_region_at(m, i);
    const char *colon = strchr(r->key, ':');
    if (!colon)
      continue;
    int64_t factor = rnd_in(75, 125);
    for (int z = 0; z < 2; z++)
      for (size_t s = 0; s < 4; s++) {
        if (SHAPES[s].accel && !strcmp(SHAPES[s].accel, "A100-40GB") && i % 3)
          continue;
        struct tw_offer *x = &o[n++];
        snprintf(x->provider, sizeof x->provider, "%.*s", (int)(colon - r->key),
                 r->key);
        snprintf(x->account, sizeof x->account, "%.40s-main", x->provider);
        snprintf(x->region, sizeof x->region, "%s", colon + 1);
        snprintf(x->zone, sizeof x->zone, "%s-%c", colon + 1, 'a' + z);
        snprintf(x->instance_type, sizeof x->instance_type, "%s",
                 SHAPES[s].type);
        snprintf(x->id, sizeof x->id, "%.24s:%.30s:%.32s:%.16s:on-demand",
                 x->account, x->region, x->zone, x->instance_type);
        x->arch = TW_ARCH_X86_64;
        x->vcpus = SHAPES[s].vcpus;
        x->memory_mib = (int64_t)SHAPES[s].vcpus * 4096;
        if (SHAPES[s].accel) {
          snprintf(x->accel_name, sizeof x->accel_name, "%s", SHAPES[s].accel);
          x->accel_count = SHAPES[s].n;
        }
        x->market = TW_MARKET_ON_DEMAND;
        x->price_uusd_per_hour =
            SHAPES[s].price * factor / 100 + (int64_t)z * 1000;
        x->billing_granularity_s = 1;
        x->interruption_pct = -1;
        x->capacity = -1;
      }
  }
  *out = o;
  *n_regions = nr;
  return n;
}

static const char *const ASKS[] = {
    "resources: {cpus: 8}\nduration: 30m\n",
    "resources: {cpus: 32}\nduration: 1h\n",
    "resources: {accelerators: 'A100:8'}\nduration: 2h\n",
    "resources: {accelerators: 'T4:1'}\nduration: 1h\n",
    "resources: {cpus: 8}\nplacement: {residency: EU}\nduration: 1h\n",
};

static struct tw_job_spec *spec_of(const char *name, const char *ask,
                                   const char *dataset) {
  char y[1024];
  snprintf(y, sizeof y, "name: %s\n%s%s", name, ask, dataset ? dataset : "");
  struct tw_job_spec *s = calloc(1, sizeof *s);
  struct tw_err err = {0};
  if (tw_spec_parse(y, strlen(y), false, s, &err)) {
    fprintf(stderr, "bench-joint: spec: %s\n%s", err.msg, y);
    exit(1);
  }
  return s;
}

/* A layered DAG of n tasks (chain: a path alternating CPU and GPU). */
static void make_problem(size_t n, bool chain, const struct tw_netmatrix *m,
                         struct tw_joint_problem *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s-%zu", chain ? "chain" : "dag", n);
  p->n_tasks = n;
  p->tasks = calloc(n, sizeof *p->tasks);
  size_t cap = n * 4 + 4;
  p->edges = calloc(cap, sizeof *p->edges);
  size_t width = 1;
  while (width * width < n)
    width++;
  size_t nr = tw_netmatrix_n_regions(m);
  for (size_t v = 0; v < n; v++) {
    struct tw_joint_task *t = &p->tasks[v];
    snprintf(t->name, sizeof t->name, "t%zu", v);
    t->output_bytes = rnd_in(1, 500) * 1000000000LL;
    const char *ask = chain ? ASKS[v % 2 ? 2 : 1] : ASKS[rnd() % 5];
    char ds[256] = "";
    if (!chain && v < width && v < 20) {
      const struct tw_net_region *r = tw_netmatrix_region_at(m, rnd() % nr);
      snprintf(ds, sizeof ds,
               "datasets: [{uri: 's3://bench/d%zu', size: %lldGB, location: "
               "'%s'}]\n",
               v, (long long)rnd_in(100, 2000), r->key);
    }
    t->spec = spec_of(t->name, ask, ds[0] ? ds : NULL);
    if (chain) {
      if (v)
        p->edges[p->n_edges++] = (struct tw_joint_edge){
            (uint32_t)(v - 1), (uint32_t)v, p->tasks[v - 1].output_bytes};
      continue;
    }
    size_t layer = v / width;
    if (!layer)
      continue;
    size_t deps = (size_t)rnd_in(1, 3);
    for (size_t k = 0; k < deps; k++) {
      size_t from = (layer - 1) * width + (size_t)(rnd() % width);
      bool dup = false;
      for (size_t e = 0; e < p->n_edges && !dup; e++)
        dup = p->edges[e].to == v && p->edges[e].from == from;
      if (!dup && p->n_edges < cap)
        p->edges[p->n_edges++] = (struct tw_joint_edge){
            (uint32_t)from, (uint32_t)v, p->tasks[from].output_bytes};
    }
    if (layer >= 2 && rnd() % 10 == 0 && p->n_edges < cap) {
      size_t from = (layer - 2) * width + (size_t)(rnd() % width);
      p->edges[p->n_edges++] = (struct tw_joint_edge){
          (uint32_t)from, (uint32_t)v, p->tasks[from].output_bytes};
    }
  }
}

static int run(const char *key, size_t n, bool chain,
               const struct tw_policy_set *set,
               const struct tw_place_snapshot *snap) {
  struct tw_joint_problem p;
  make_problem(n, chain, set->net, &p);
  struct tw_err err = {0};
  struct tw_joint_table t;
  uint64_t plans = 0;
  char inf[64];
  double t0 = now_ms();
  if (tw_joint_table_build(set, snap, &p, 0, &t, &plans, inf, sizeof inf,
                           &err)) {
    fprintf(stderr, "bench-joint: %s\n", err.msg);
    return 1;
  }
  double t1 = now_ms();
  int32_t *ga = malloc(n * sizeof *ga), *ja = malloc(n * sizeof *ja);
  struct tw_joint_info info;
  double t2 = now_ms();
  tw_joint_solve_greedy(&t, &p, ga, &err);
  double t3 = now_ms();
  tw_joint_solve(&t, &p, ja, &info, &err);
  double t4 = now_ms();
  int64_t g = tw_joint_eval(&t, &p, ga, NULL);
  int64_t j = tw_joint_eval(&t, &p, ja, NULL);
  size_t rows = t.n_rows, regions = t.n_regions;
  tw_joint_table_release(&t);
  struct tw_joint_result r;
  double t5 = now_ms(), w5 = wall_ms();
  if (tw_joint_plan(set, snap, &p, 0, &r, &err)) {
    fprintf(stderr, "bench-joint: %s\n", err.msg);
    return 1;
  }
  double t6 = now_ms(), w6 = wall_ms();
  int bad = 0;
  if (inf[0] || j > g || j < info.lower_bound_uusd || r.joint.total_uusd != j) {
    fprintf(stderr, "bench-joint: %s: joint %lld greedy %lld bound %lld%s%s\n",
            key, (long long)j, (long long)g, (long long)info.lower_bound_uusd,
            inf[0] ? " infeasible " : "", inf);
    bad = 1;
  }
  printf("# %s: %zu tasks, %zu edges, %zu regions, %zu distinct asks, "
         "method %s, %zu chains, %u rounds\n",
         key, n, p.n_edges, regions, rows, info.method, info.n_chains,
         info.rounds);
  printf("%s_table_ms %.1f ms\n", key, t1 - t0);
  printf("%s_plans %llu plans\n", key, (unsigned long long)plans);
  printf("%s_greedy_ms %.1f ms\n", key, t3 - t2);
  printf("%s_solve_ms %.1f ms\n", key, t4 - t3);
  printf("%s_plan_ms %.1f ms\n", key, t6 - t5);
  printf("%s_plan_wall_ms %.1f ms\n", key, w6 - w5);
  printf("%s_greedy_usd %.2f USD\n", key, (double)g / 1e6);
  printf("%s_joint_usd %.2f USD\n", key, (double)j / 1e6);
  printf("%s_saving_pct %.2f %%\n", key,
         g > 0 ? 100.0 * (double)(g - j) / (double)g : 0.0);
  printf("%s_gap_bound_pct %.2f %%\n", key,
         info.lower_bound_uusd > 0
             ? 100.0 * (double)(j - info.lower_bound_uusd) /
                   (double)info.lower_bound_uusd
             : 0.0);
  tw_joint_result_release(&r);
  free(ga);
  free(ja);
  tw_joint_problem_release(&p);
  return bad;
}

int main(int argc, char **argv) {
  bool quick = false, smoke = false;
  const char *sizes = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--smoke"))
      smoke = true;
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
      sizes = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      rng = strtoull(argv[++i], NULL, 10) | 1;
    else {
      fprintf(stderr, "usage: bench-joint [--quick] [--smoke] [--sizes "
                      "N,N,...] [--seed N]\n");
      return 2;
    }
  }
  if (!sizes)
    sizes = smoke ? "100" : quick ? "1000" : "1000,10000";
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_offer *offers;
  size_t nr;
  size_t no = make_offers(set->net, &offers, &nr);
  struct tw_offer_source src;
  tw_offer_source_array(&src, offers, no);
  struct tw_offer_index *ix = NULL;
  struct tw_err err = {0};
  if (tw_offer_index_build(&src, &ix, &err)) {
    fprintf(stderr, "bench-joint: %s\n", err.msg);
    return 1;
  }
  printf("# %zu offers in %zu regions of the shipped network matrix\n", no, nr);
  struct tw_place_snapshot snap = {.index = ix};
  int bad = 0;
  const char *s = sizes;
  while (*s) {
    size_t n = strtoull(s, (char **)&s, 10);
    if (*s == ',')
      s++;
    if (n < 2 || n > TW_JOINT_TASKS_MAX) {
      fprintf(stderr, "bench-joint: sizes from 2 to %d\n", TW_JOINT_TASKS_MAX);
      return 2;
    }
    char key[64];
    snprintf(key, sizeof key, "joint_dag_%zu", n);
    bad |= run(key, n, false, set, &snap);
  }
  bad |= run("joint_chain_100", 100, true, set, &snap);
  tw_offer_index_unref(ix);
  free(offers);
  tw_policy_set_unref(set);
  return bad;
}
