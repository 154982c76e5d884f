/* queue.c - queue order and backfill arithmetic (queue.h). */
#include "policies/place/queue.h"

#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/base/sort.h"

int64_t tw_queue_dominant_ppm(const struct tw_queue_params *p, int64_t vcpus,
                              int64_t memory_mib, int64_t gpus) {
  int64_t best = 0;
  const int64_t have[3] = {vcpus, memory_mib, gpus};
  const int64_t cap[3] = {p->capacity_vcpus, p->capacity_memory_mib,
                          p->capacity_gpus};
  for (int i = 0; i < 3; i++) {
    if (cap[i] <= 0 || have[i] <= 0)
      continue;
    __int128 ppm = (__int128)have[i] * 1000000 / cap[i];
    int64_t v = ppm > INT64_MAX ? INT64_MAX : (int64_t)ppm;
    if (v > best)
      best = v;
  }
  return best;
}

static int64_t base_milli(const struct tw_queue_params *p,
                          const struct tw_queue_job *j, int64_t now_ms) {
  int64_t age_ms = now_ms > j->created_ms ? now_ms - j->created_ms : 0;
  /* points x 1000 = hours x per_hour x 1000 = ms x per_hour / 3600 */
  __int128 aged = (__int128)age_ms * p->aging_per_hour / 3600;
  int64_t cap = p->aging_max * 1000;
  int64_t a = aged > cap ? cap : (int64_t)aged;
  return (int64_t)j->priority * 1000 + a;
}

struct tenant {
  const char *name;
  int64_t vcpus, memory_mib, gpus;
  size_t *jobs; /* its jobs, best first */
  size_t n, next;
};

/* What by_base compares job indexes by (tw_sort_r's context). */
struct by_base_ctx {
  const struct tw_queue_job *jobs;
  const int64_t *base;
};

static int by_base(const void *a, const void *b, void *ctx) {
  const struct by_base_ctx *c = ctx;
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (c->base[x] != c->base[y])
    return c->base[x] > c->base[y] ? -1 : 1;
  if (c->jobs[x].created_ms != c->jobs[y].created_ms)
    return c->jobs[x].created_ms < c->jobs[y].created_ms ? -1 : 1;
  return x < y ? -1 : x > y;
}

void tw_queue_order(const struct tw_queue_params *p, int64_t now_ms,
                    const struct tw_queue_job *jobs, size_t n,
                    const struct tw_queue_usage *usage, size_t n_usage,
                    size_t *order, int64_t *eff) {
  if (!n)
    return;
  int64_t *base = tw_malloc(n * sizeof *base);
  struct tenant *t = tw_calloc(n, sizeof *t);
  size_t nt = 0;
  for (size_t i = 0; i < n; i++) {
    base[i] = base_milli(p, &jobs[i], now_ms);
    const char *name = jobs[i].tenant ? jobs[i].tenant : "default";
    size_t k;
    for (k = 0; k < nt && strcmp(t[k].name, name); k++)
      ;
    if (k == nt) {
      t[nt].name = name;
      t[nt].jobs = tw_malloc(n * sizeof *t[nt].jobs);
      for (size_t u = 0; u < n_usage; u++)
        if (usage[u].tenant && !strcmp(usage[u].tenant, name)) {
          t[nt].vcpus += usage[u].vcpus;
          t[nt].memory_mib += usage[u].memory_mib;
          t[nt].gpus += usage[u].gpus;
        }
      nt++;
    }
    t[k].jobs[t[k].n++] = i;
  }
  struct by_base_ctx bc = {.jobs = jobs, .base = base};
  for (size_t k = 0; k < nt; k++)
    tw_sort_r(t[k].jobs, t[k].n, sizeof *t[k].jobs, by_base, &bc);
  for (size_t o = 0; o < n; o++) {
    size_t best_t = SIZE_MAX;
    int64_t best_key = 0;
    for (size_t k = 0; k < nt; k++) {
      if (t[k].next == t[k].n)
        continue;
      size_t j = t[k].jobs[t[k].next];
      int64_t share =
          tw_queue_dominant_ppm(p, t[k].vcpus, t[k].memory_mib, t[k].gpus);
      __int128 pen = (__int128)p->fair_share_weight * share / 1000;
      int64_t key =
          base[j] - (pen > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)pen);
      bool better = best_t == SIZE_MAX || key > best_key;
      if (!better && key == best_key) {
        size_t bj = t[best_t].jobs[t[best_t].next];
        better = jobs[j].created_ms < jobs[bj].created_ms ||
                 (jobs[j].created_ms == jobs[bj].created_ms && j < bj);
      }
      if (better) {
        best_t = k;
        best_key = key;
      }
    }
    size_t j = t[best_t].jobs[t[best_t].next++];
    order[o] = j;
    if (eff)
      eff[j] = best_key;
    t[best_t].vcpus += jobs[j].vcpus;
    t[best_t].memory_mib += jobs[j].memory_mib;
    t[best_t].gpus += jobs[j].gpus;
  }
  for (size_t k = 0; k < nt; k++)
    free(t[k].jobs);
  free(t);
  free(base);
}

static int by_end(const void *a, const void *b) {
  const struct tw_bf_running *x = a, *y = b;
  return x->end_ms < y->end_ms ? -1 : x->end_ms > y->end_ms;
}

int64_t tw_backfill_start_ms(int64_t free_now,
                             const struct tw_bf_running *running, size_t n,
                             int64_t need, int64_t now_ms) {
  if (free_now >= need)
    return now_ms;
  struct tw_bf_running *r = tw_malloc((n ? n : 1) * sizeof *r);
  memcpy(r, running, n * sizeof *r);
  qsort(r, n, sizeof *r, by_end);
  int64_t have = free_now, at = INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    have += r[i].nodes;
    if (have >= need) {
      at = r[i].end_ms > now_ms ? r[i].end_ms : now_ms;
      break;
    }
  }
  free(r);
  return at;
}
