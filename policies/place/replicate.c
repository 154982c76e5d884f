/* replicate.c - shared replication decisions (replicate.h). */
#include "policies/place/replicate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "policies/place/cost.h"
#include "policies/place/netmatrix.h"

#define MAX_TARGETS 8

/* "aws:us-east-1:us-east-1a" -> "aws:us-east-1" */
static void region_of(const char *loc, char *out, size_t outsz) {
  const char *c = strchr(loc, ':');
  const char *c2 = c ? strchr(c + 1, ':') : NULL;
  size_t n = c2 ? (size_t)(c2 - loc) : strlen(loc);
  snprintf(out, outsz, "%.*s", (int)n, loc);
}

/* Sum of each job's best total cost under snap (jobs without a placement
 * add nothing); *where[i] gets job i's best region ("" none). */
static int64_t best_sum(const struct tw_policy_set *set,
                        const struct tw_place_snapshot *snap,
                        const struct tw_job_spec *const *jobs, size_t n,
                        int64_t now, struct tw_plan_ws *ws, char (*where)[160],
                        size_t *placed) {
  int64_t sum = 0;
  *placed = 0;
  for (size_t i = 0; i < n; i++) {
    struct tw_plan p;
    struct tw_plan_input in = {.job = jobs[i], .now_ms = now};
    where[i][0] = '\0';
    if (tw_plan_make(set, snap, &in, NULL, ws, &p, NULL) == TW_OK && p.n) {
      sum += p.cands[0].cost.total_uusd;
      snprintf(where[i], sizeof where[i], "%s:%s", p.cands[0].offer->provider,
               p.cands[0].offer->region);
      (*placed)++;
    }
    tw_plan_release(&p);
  }
  return sum;
}

enum tw_rc tw_replicate_decide(const struct tw_policy_set *set,
                               const struct tw_place_snapshot *snap,
                               const char *uri,
                               const struct tw_job_spec *const *jobs, size_t n,
                               int64_t now, struct tw_plan_ws *ws,
                               struct tw_repl_choice *out, struct tw_err *err) {
  (void)err;
  memset(out, 0, sizeof *out);
  if (!set->replication.enabled || n < (size_t)set->replication.min_jobs)
    return TW_OK;
  const struct tw_dataset_set *ds =
      snap->datasets ? snap->datasets : &tw_dataset_set_empty;
  /* the dataset as the registry and the readers know it */
  struct tw_dataset_set base;
  tw_dataset_set_copy(&base, ds);
  for (size_t i = 0; i < n; i++)
    for (size_t d = 0; d < jobs[i]->n_datasets; d++) {
      const struct tw_dataset_ref *ref = &jobs[i]->datasets[d];
      if (strcmp(ref->uri, uri))
        continue;
      const char *loc = ref->location;
      tw_dataset_set_add(&base, uri, ref->size_bytes, &loc, loc ? 1 : 0);
    }
  tw_dataset_set_seal(&base);
  const struct tw_dataset_info *info = tw_dataset_set_find(&base, uri);
  char(*where)[160] = tw_calloc(n, sizeof *where);
  char targets[MAX_TARGETS][160];
  size_t nt = 0, placed;
  if (!info || !info->size_bytes || !info->n_locations)
    goto out;
  struct tw_place_snapshot s2 = *snap;
  s2.datasets = &base;
  out->before_uusd = best_sum(set, &s2, jobs, n, now, ws, where, &placed);
  /* where the readers would run if the data were free to move: plan each
   * without this dataset */
  for (size_t i = 0; i < n && nt < MAX_TARGETS; i++) {
    struct tw_job_spec sp = *jobs[i];
    struct tw_dataset_ref *refs =
        tw_calloc(sp.n_datasets ? sp.n_datasets : 1, sizeof *refs);
    size_t k = 0;
    for (size_t d = 0; d < sp.n_datasets; d++)
      if (strcmp(sp.datasets[d].uri, uri))
        refs[k++] = sp.datasets[d];
    sp.datasets = refs;
    sp.n_datasets = k;
    struct tw_plan p;
    struct tw_plan_input in = {.job = &sp, .now_ms = now};
    if (tw_plan_make(set, &s2, &in, NULL, ws, &p, NULL) == TW_OK)
      for (size_t c = 0; c < p.n && c < 3 && nt < MAX_TARGETS; c++) {
        char t[160];
        snprintf(t, sizeof t, "%s:%s", p.cands[c].offer->provider,
                 p.cands[c].offer->region);
        bool dup = false;
        for (size_t q = 0; q < nt && !dup; q++)
          dup = !strcmp(targets[q], t);
        for (size_t l = 0; l < info->n_locations && !dup; l++) {
          char r[160];
          region_of(info->locations[l], r, sizeof r);
          dup = !strcmp(r, t);
        }
        if (!dup)
          snprintf(targets[nt++], sizeof targets[0], "%s", t);
      }
    tw_plan_release(&p);
    free(refs);
  }
  out->candidates = nt;
  int64_t best_after = INT64_MAX;
  for (size_t t = 0; t < nt; t++) {
    /* the copy comes from the cheapest existing location */
    int64_t copy = INT64_MAX;
    char src[160] = "";
    for (size_t l = 0; l < info->n_locations; l++) {
      char r[160];
      region_of(info->locations[l], r, sizeof r);
      struct tw_net_link lk;
      tw_netmatrix_link(set->net, r, targets[t], &lk);
      int64_t c = tw_cost_egress_uusd(info->size_bytes, lk.egress_uusd_per_gb) +
                  info->location_cost_uusd[l];
      if (c < copy) {
        copy = c;
        snprintf(src, sizeof src, "%s", r);
      }
    }
    /* with the replica free to read, plus its copy once */
    struct tw_dataset_set with;
    tw_dataset_set_copy(&with, &base);
    tw_dataset_set_plan_replica(&with, uri, targets[t], 0);
    tw_dataset_set_seal(&with);
    s2.datasets = &with;
    char(*w2)[160] = tw_calloc(n, sizeof *w2);
    size_t p2;
    int64_t after = best_sum(set, &s2, jobs, n, now, ws, w2, &p2) + copy;
    size_t readers = 0;
    for (size_t i = 0; i < n; i++)
      readers += !strcmp(w2[i], targets[t]);
    /* a replica only one reader uses saves nothing the reader could not
     * save by fetching directly */
    if (readers >= 2 && p2 >= placed && after < best_after) {
      best_after = after;
      out->after_uusd = after;
      out->copy_uusd = copy;
      out->readers = readers;
      snprintf(out->target, sizeof out->target, "%.159s", targets[t]);
      snprintf(out->source, sizeof out->source, "%.159s", src);
    }
    free(w2);
    tw_dataset_set_release(&with);
    s2.datasets = &base;
  }
  out->replicate = best_after < out->before_uusd;
out:
  free(where);
  tw_dataset_set_release(&base);
  return TW_OK;
}
