/* place.c - choosing an offer for the pending jobs: the queue in its
 * order (policies/place/queue.h: priority, aging, fair share), shared
 * replication of datasets several of them read, then each job planned
 * through policies/place/plan.h (filters, scores, the cost model, the
 * offer index) with its fallback strategy's market and order, and backfill
 * reservations for jobs that fit nowhere now.  The ranked candidates go to
 * launch.c (sched__launch_best), the only other file this one calls.
 *
 * What placement needs beyond one job lives in struct sched_place, one per
 * scheduler: the offer index over s->all, rebuilt when the offers change;
 * the plan workspace (stage caches); the dataset set, reloaded when the
 * registry's version moves; private capacity taken since the offers were
 * listed; this pass's backfill reservations; what each live job holds,
 * for fair share; and what the jobs that fit nowhere saw last.  Scheduler
 * thread only. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/core/datasets.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/sched/blocklist.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched_int.h"
#include "broker/tenancy/tenancy.h"
#include "policies/place/index.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"
#include "policies/place/queue.h"
#include "policies/place/replicate.h"

struct sched_demand {
  char job_id[TW_JOB_ID_LEN + 1];
  char tenant[64];
  int64_t vcpus, memory_mib, gpus, duration_s;
  char offer_id[192]; /* private offers: the pool it holds nodes of */
  int nodes;
  int64_t end_ms; /* when its attempt is expected to end */
  int64_t attempt_id; /* the live attempt it was last counted from */
  bool live;
};

struct sched_place {
  uint64_t offers_gen, ix_gen;     /* the index is current when equal */
  struct tw_offer_index *ix;       /* over s->all, borrowed until the offers
                                      change (then it owns them) */
  const struct tw_offer *ix_items; /* the array it was built over */
  struct tw_plan_ws *ws;
  bool ds_ready;
  int64_t ds_version;
  struct tw_dataset_set ds;
  struct tw_capacity_view cap;
  struct tw_reservations res;
  struct tw_health health;
  struct sched_demand *dem;
  size_t n_dem, cap_dem;
  /* dem's index by job id (open addressing, slot = index + 1, 0 free),
   * rebuilt when it fills or dem is compacted: every live attempt is
   * looked up each pass */
  size_t *dem_ix;
  size_t dem_ix_cap;
  /* Jobs that fit nowhere: what their last plan saw (so an unchanged
   * situation is not counted again every pass) and what was last noted
   * on them (so their events do not repeat it every pass). */
  struct sched_wait {
    char job_id[TW_JOB_ID_LEN + 1];
    uint64_t key, note;
  } * wait;
  size_t n_wait, cap_wait;
  /* While the queue is placed (batch_notes), what note_once would write
   * is gathered here and written in one transaction after the queue's
   * last job (notes_flush): a first pass notes every job of it that fits
   * nowhere, and one commit each was most of that pass. */
  bool batch_notes;
  struct sched_note {
    char job_id[TW_JOB_ID_LEN + 1];
    char *text;
  } * notes;
  size_t n_notes, cap_notes;
};

void sched__place_init(struct tw_sched *s) {
  struct sched_place *p = tw_calloc(1, sizeof *p);
  p->offers_gen = 1;
  p->ws = tw_plan_ws_new();
  tw_dataset_set_init(&p->ds);
  tw_capacity_view_init(&p->cap);
  tw_reservations_init(&p->res);
  s->place = p;
}

void sched__place_release(struct tw_sched *s) {
  struct sched_place *p = s->place;
  if (!p)
    return;
  tw_offer_index_unref(p->ix);
  tw_plan_ws_free(p->ws);
  tw_dataset_set_release(&p->ds);
  tw_capacity_view_release(&p->cap);
  tw_reservations_release(&p->res);
  free(p->dem);
  free(p->dem_ix);
  free(p->wait);
  for (size_t i = 0; i < p->n_notes; i++)
    free(p->notes[i].text);
  free(p->notes);
  free(p);
  s->place = NULL;
  free(s->backoff);
  s->backoff = NULL;
  free(s->opens); /* emptied by every flush */
  free(s->decs);
  s->decs = NULL;
  free(s->dec_trace);
  s->dec_trace = NULL;
  s->n_decs = s->cap_decs = 0;
  s->opens = NULL;
}

/* s->all is about to be replaced (or freed).  The index built over it
 * takes the array over, so plans still holding the index (the placer's
 * readers) keep valid offers; the next plan builds a new index.  What was
 * taken of private capacity starts again from the new listing. */
void sched__offers_changing(struct tw_sched *s) {
  struct sched_place *p = s->place;
  if (p->ix && p->ix_gen == p->offers_gen && p->ix_items == s->all.items &&
      s->all.items) {
    tw_offer_index_own_source(p->ix);
    tw_offer_list_init(&s->all); /* the release that follows frees nothing */
  }
  p->offers_gen++;
  tw_capacity_view_release(&p->cap);
  tw_capacity_view_init(&p->cap);
}

void sched__capacity_return(struct tw_sched *s, const struct tw_attempt_rec *a,
                            size_t nodes) {
  const struct tw_offer *o = sched__offer(s, a->offer_id);
  if (!o || o->capacity < 0)
    return; /* a cloud: capacity is found out at launch */
  /* what the listing counted as used (or this listing's take) comes back;
   * the next listing starts the view again from what the cluster says */
  tw_capacity_view_take(&s->place->cap, o->id,
                        -(int64_t)(nodes ? nodes : 1));
}

size_t sched__job_nodes(struct tw_sched *s, const struct tw_job_rec *job,
                        size_t n_instances) {
  const struct tw_job_spec *spec = sched__spec(s, job);
  size_t nodes = spec && spec->nodes > 0 ? (size_t)spec->nodes : 0;
  sched__spec_release(s, spec);
  if (n_instances > nodes)
    nodes = n_instances;
  return nodes ? nodes : 1;
}

/* The index over s->all, rebuilt when the offers changed (the REST
 * handlers' plans get it through the placer). */
static struct tw_offer_index *sched_index(struct tw_sched *s,
                                          struct sched_place *p) {
  if (p->ix && p->ix_gen == p->offers_gen)
    return p->ix;
  struct tw_offer_source src;
  tw_offer_source_array(&src, s->all.items, s->all.n);
  struct tw_offer_index *ix = NULL;
  struct tw_err err = {0};
  if (tw_offer_index_build(&src, &ix, &err)) {
    tw_log_error("sched", "offers=%zu index not built: %s", s->all.n, err.msg);
    return p->ix;
  }
  /* the REST handlers plan on the same index, through the placer */
  tw_placer_set_index(s->placer, ix);
  tw_offer_index_unref(p->ix);
  p->ix = ix;
  p->ix_items = s->all.items;
  p->ix_gen = p->offers_gen;
  struct tw_offer_index_stats st;
  tw_offer_index_stats(ix, &st);
  tw_log_info(
      "sched",
      "offers=%zu shapes=%zu locations=%zu build_ms=%lld placement index built",
      st.offers, st.shapes, st.locations, (long long)(st.build_us / 1000));
  return ix;
}

struct ds_load {
  struct tw_dataset_set set;
  bool sealed;
};

static void ds_each(void *ctx, const char *uri, int64_t size, const char *loc,
                    const char *owner, bool shared) {
  struct ds_load *l = ctx;
  if (!loc) {
    tw_dataset_set_add(&l->set, uri, size, NULL, 0);
    /* a job of another tenant plans as if it did not know it */
    tw_dataset_set_owner(&l->set, uri, owner, shared);
    return;
  }
  if (!l->sealed) { /* locations come after every dataset */
    tw_dataset_set_seal(&l->set);
    l->sealed = true;
  }
  if (tw_dataset_set_find(&l->set, uri))
    tw_dataset_set_plan_replica(&l->set, uri, loc, 0);
}

/* The registry's datasets, reloaded when its version moved. */
static void sched_datasets(struct tw_sched *s, struct sched_place *p) {
  struct tw_err err = {0};
  if (!p->ds_ready) {
    p->ds_ready = true;
    p->ds_version = -1;
  }
  int64_t v = 0;
  if (tw_datasets_version(s->store, &v, &err) || v == p->ds_version)
    return;
  struct ds_load fresh = {.sealed = false};
  tw_dataset_set_init(&fresh.set);
  if (tw_datasets_each(s->store, ds_each, &fresh, &v, &err)) {
    tw_dataset_set_release(&fresh.set);
    return;
  }
  tw_dataset_set_seal(&fresh.set);
  tw_dataset_set_release(&p->ds);
  p->ds = fresh.set;
  p->ds_version = v;
}

/* Accounts whose provider refuses our credentials are left out until a
 * call succeeds again. */
static void sched_health(struct tw_sched *s, struct sched_place *p) {
  p->health.n = 0;
  for (size_t i = 0; i < s->n_pc && p->health.n < TW_HEALTH_MAX; i++) {
    struct tw_provider_stats st[2];
    tw_provider_stats(s->pc[i].p, TW_POP_LAUNCH, &st[0]);
    tw_provider_stats(s->pc[i].p, TW_POP_LIST_OFFERS, &st[1]);
    if (st[0].last_rc == TW_E_AUTH || st[1].last_rc == TW_E_AUTH) {
      snprintf(p->health.account[p->health.n], sizeof p->health.account[0],
               "%s", tw_provider_account(s->pc[i].p));
      snprintf(p->health.reason[p->health.n++], sizeof p->health.reason[0],
               "credentials refused");
    }
  }
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < p->health.n; i++)
    for (const char *c = p->health.account[i]; *c; c++)
      h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  p->health.generation = h + p->health.n;
}

static void snapshot_of(struct sched_place *p, struct tw_place_snapshot *snap) {
  *snap = (struct tw_place_snapshot){.index = p->ix,
                                     .datasets = &p->ds,
                                     .health = &p->health,
                                     .capacity = &p->cap,
                                     .reservations = &p->res};
}

/* What a job asks for in all, for fair share and backfill. */
static void demand_of(const struct tw_job_spec *spec, struct sched_demand *d) {
  int64_t nodes = spec->nodes > 0 ? spec->nodes : 1;
  d->vcpus = (spec->cpus > 0 ? spec->cpus : 1) * nodes;
  d->memory_mib = spec->memory_mib * nodes;
  d->gpus = spec->accel_name ? (int64_t)spec->accel_count * nodes : 0;
  d->duration_s = spec->duration_s;
  d->nodes = (int)nodes;
}

static uint64_t fnv64(uint64_t h, const void *data, size_t n);

static size_t dem_slot(const char *job_id, size_t mask) {
  return (size_t)fnv64(1469598103934665603ULL, job_id, strlen(job_id)) & mask;
}

static void dem_ix_put(struct sched_place *p, size_t k) {
  size_t mask = p->dem_ix_cap - 1, i = dem_slot(p->dem[k].job_id, mask);
  while (p->dem_ix[i])
    i = (i + 1) & mask;
  p->dem_ix[i] = k + 1;
}

/* The index rebuilt over dem[0..n_dem), for at least want entries. */
static void dem_ix_build(struct sched_place *p, size_t want) {
  size_t cap = 64;
  while (cap < want * 2)
    cap *= 2;
  if (cap != p->dem_ix_cap) {
    free(p->dem_ix);
    p->dem_ix = tw_calloc(cap, sizeof *p->dem_ix);
    p->dem_ix_cap = cap;
  } else {
    memset(p->dem_ix, 0, cap * sizeof *p->dem_ix);
  }
  for (size_t k = 0; k < p->n_dem; k++)
    dem_ix_put(p, k);
}

static struct sched_demand *demand_find(struct sched_place *p,
                                        const char *job_id) {
  if (!p->dem_ix_cap)
    return NULL;
  size_t mask = p->dem_ix_cap - 1;
  for (size_t i = dem_slot(job_id, mask); p->dem_ix[i]; i = (i + 1) & mask)
    if (!strcmp(p->dem[p->dem_ix[i] - 1].job_id, job_id))
      return &p->dem[p->dem_ix[i] - 1];
  return NULL;
}

/* What every tenant's live jobs hold (and which private pools they hold
 * nodes of), from the live attempts; a job's demand is read once. */
static void sched_usage(struct tw_sched *s, struct sched_place *p,
                        const struct tw_attempt_rec *live, size_t n_live) {
  for (size_t i = 0; i < p->n_dem; i++)
    p->dem[i].live = false;
  /* dem is in the order the live attempts (ascending id) first named its
   * jobs, kept by the compaction below: the next attempt's job is most
   * often the entry after the last one's, found without a look-up */
  size_t next = 0;
  for (size_t i = 0; i < n_live; i++) {
    struct sched_demand *d = next < p->n_dem &&
                                     p->dem[next].attempt_id == live[i].id
                                 ? &p->dem[next]
                                 : demand_find(p, live[i].job_id);
    if (!d) {
      struct tw_job_rec job;
      if (tw_store_job_get(s->store, live[i].job_id, &job, NULL))
        continue;
      const struct tw_job_spec *spec = sched__spec(s, &job);
      if (spec) {
        if (p->n_dem == p->cap_dem) {
          p->cap_dem = p->cap_dem ? p->cap_dem * 2 : 64;
          p->dem = tw_realloc(p->dem, p->cap_dem * sizeof *p->dem);
        }
        d = &p->dem[p->n_dem++];
        memset(d, 0, sizeof *d);
        snprintf(d->job_id, sizeof d->job_id, "%s", job.id);
        snprintf(d->tenant, sizeof d->tenant, "%s", job.tenant);
        demand_of(spec, d);
        if (p->n_dem * 2 > p->dem_ix_cap)
          dem_ix_build(p, p->n_dem);
        else
          dem_ix_put(p, p->n_dem - 1);
        sched__spec_release(s, spec);
      }
      tw_job_rec_release(&job);
      if (!d)
        continue;
    }
    next = (size_t)(d - p->dem) + 1;
    d->attempt_id = live[i].id;
    d->live = true;
    /* the same pool pass after pass: copied only when it changes */
    if (strcmp(d->offer_id, live[i].offer_id))
      snprintf(d->offer_id, sizeof d->offer_id, "%s", live[i].offer_id);
    int64_t from = live[i].running_ms ? live[i].running_ms : live[i].started_ms;
    d->end_ms = from + (d->duration_s > 0 ? d->duration_s : 3600) * 1000;
  }
  /* forget the jobs that hold nothing any more; the index is built again
   * only when one went (a pass of new launches only keeps it) */
  size_t k = 0;
  for (size_t i = 0; i < p->n_dem; i++)
    if (p->dem[i].live) {
      if (k != i)
        p->dem[k] = p->dem[i];
      k++;
    }
  if (k != p->n_dem) {
    p->n_dem = k;
    dem_ix_build(p, k);
  }
}

/* The plan of one job with its exclusions; counts every rejection, so
 * the explanation can say why the others lost. */
static void sched_plan(struct tw_sched *s, struct sched_place *p,
                       const struct tw_job_rec *job,
                       const struct tw_job_spec *spec, const char *const *excl,
                       size_t n_excl, int64_t now,
                       const struct tw_policy_set *set, bool counts,
                       struct tw_plan *plan) {
  struct tw_place_snapshot snap;
  snapshot_of(p, &snap);
  /* a job of any market whose tenant's spot share cannot hold it is
   * planned on demand: the search skips spot, instead of the quota
   * dropping every spot candidate after it */
  struct tw_job_spec od;
  if (s->tenancy && spec->market == TW_MARKET_ANY) {
    int64_t need = (int64_t)(spec->cpus > 0 ? spec->cpus : 1) *
                   (spec->nodes > 0 ? spec->nodes : 1);
    if (tw_tenancy_spot_vcpus_left(s->tenancy, job) < need) {
      od = *spec; /* a view: nothing of it is freed */
      od.market = TW_MARKET_ON_DEMAND;
      spec = &od;
    }
  }
  struct tw_plan_input in = {.job = spec,
                             .job_id = job->id,
                             .now_ms = now,
                             .excluded = excl,
                             .n_excluded = n_excl};
  struct tw_plan_opts opts = {.counts = counts};
  struct tw_err err = {0};
  if (!p->ix || tw_plan_make(set, &snap, &in, &opts, p->ws, plan, &err)) {
    memset(plan, 0, sizeof *plan);
    plan->strategy = "none";
  }
  (void)s;
}

/* The policy set in force (a reference: tw_policy_set_unref it), with the
 * index over s->all made current for it. */
static struct tw_policy_set *policies_now(struct tw_sched *s) {
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *pix = NULL;
  tw_placer_acquire(s->placer, &set, &pix);
  tw_offer_index_unref(pix); /* plans here use the scheduler's own index */
  sched_index(s, s->place);
  return set;
}

bool sched__placeable(struct tw_sched *s, const struct tw_job_rec *job,
                      const struct tw_job_spec *spec, const char *const *excl,
                      size_t n_excl, int64_t now) {
  struct tw_policy_set *set = policies_now(s);
  struct tw_plan plan;
  sched_plan(s, s->place, job, spec, excl, n_excl, now, set, false, &plan);
  bool any = plan.n > 0;
  tw_plan_release(&plan);
  tw_policy_set_unref(set);
  return any;
}

static uint64_t fnv64(uint64_t h, const void *data, size_t n) {
  const unsigned char *c = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 1099511628211ULL;
  return h;
}

/* job_id's entry, NULL when it has none (newest first: a job waiting
 * now was most likely added lately). */
static struct sched_wait *wait_find(struct sched_place *p,
                                    const char *job_id) {
  for (size_t i = p->n_wait; i-- > 0;)
    if (!strcmp(p->wait[i].job_id, job_id))
      return &p->wait[i];
  return NULL;
}

static struct sched_wait *wait_of(struct sched_place *p, const char *job_id) {
  struct sched_wait *found = wait_find(p, job_id);
  if (found)
    return found;
  if (p->n_wait >= 4096) { /* forget the older half */
    memmove(p->wait, p->wait + 2048, (p->n_wait - 2048) * sizeof *p->wait);
    p->n_wait -= 2048;
  }
  if (p->n_wait == p->cap_wait) {
    p->cap_wait = p->cap_wait ? p->cap_wait * 2 : 64;
    p->wait = tw_realloc(p->wait, p->cap_wait * sizeof *p->wait);
  }
  struct sched_wait *w = &p->wait[p->n_wait++];
  memset(w, 0, sizeof *w);
  snprintf(w->job_id, sizeof w->job_id, "%s", job_id);
  return w;
}

/* Notes text on the job unless it is what was noted last. */
static void note_once(struct tw_sched *s, struct sched_place *p,
                      const char *job_id, const char *text) {
  struct sched_wait *w = wait_of(p, job_id);
  uint64_t h = fnv64(1469598103934665603ULL, text, strlen(text));
  if (w->note == h)
    return;
  w->note = h;
  if (!p->batch_notes) {
    tw_store_job_note(s->store, job_id, text, NULL);
    return;
  }
  if (p->n_notes == p->cap_notes) {
    p->cap_notes = p->cap_notes ? p->cap_notes * 2 : 64;
    p->notes = tw_realloc(p->notes, p->cap_notes * sizeof *p->notes);
  }
  struct sched_note *n = &p->notes[p->n_notes++];
  snprintf(n->job_id, sizeof n->job_id, "%s", job_id);
  n->text = tw_strdup(text);
}

/* The notes gathered while the queue was placed, in one transaction.  If
 * it fails, none was written: their jobs are noted again at their next
 * look. */
static void notes_flush(struct tw_sched *s, struct sched_place *p) {
  if (!p->n_notes)
    return;
  struct tw_job_note *nv = tw_calloc(p->n_notes, sizeof *nv);
  for (size_t i = 0; i < p->n_notes; i++)
    nv[i] = (struct tw_job_note){p->notes[i].job_id, p->notes[i].text};
  struct tw_err err = {0};
  s->pass.notes += p->n_notes;
  if (tw_store_job_note_many(s->store, nv, p->n_notes, &err)) {
    tw_log_warn("sched", "notes=%zu not recorded: %s", p->n_notes, err.msg);
    for (size_t i = 0; i < p->n_notes; i++) {
      struct sched_wait *w = wait_find(p, p->notes[i].job_id);
      if (w)
        w->note = 0;
    }
  }
  for (size_t i = 0; i < p->n_notes; i++)
    free(p->notes[i].text);
  p->n_notes = 0;
  free(nv);
}

/* Everything a plan of this job reads that can change between passes: if
 * none did, a job that fit nowhere still fits nowhere, for the same
 * reasons. */
static uint64_t wait_key(const struct sched_place *p,
                         const struct tw_policy_set *set,
                         const struct tw_job_rec *job, const char *const *excl,
                         size_t n_excl) {
  uint64_t v[6] = {p->ix_gen,         set->generation,
                   p->ds.generation,  p->health.generation,
                   p->cap.generation, (uint64_t)p->res.n};
  uint64_t h = fnv64(1469598103934665603ULL, v, sizeof v);
  h = fnv64(h, job->spec_json, strlen(job->spec_json));
  for (size_t i = 0; i < n_excl; i++)
    h = fnv64(h, excl[i], strlen(excl[i]) + 1);
  for (size_t i = 0; i < p->res.n; i++)
    h = fnv64(h, &p->res.items[i], sizeof p->res.items[i]);
  return h;
}

/* Backfill: a job that fits nowhere now but would fit a private pool once
 * its running jobs end holds a reservation there, unless an earlier job
 * of this pass holds one: later jobs may use the pool only beside it or
 * until it starts (the backfill filter). */
static void sched_reserve(struct tw_sched *s, struct sched_place *p,
                          const struct tw_job_rec *job,
                          const struct tw_job_spec *spec, int64_t now,
                          const struct tw_policy_set *set) {
  if (!p->ix)
    return;
  /* a view, never freed: everything but the reference count, which
   * another thread may change while it is copied (a reload) */
  struct tw_policy_set relaxed;
  memcpy(&relaxed, set, offsetof(struct tw_policy_set, refs));
  relaxed.refs = 1;
  relaxed.n_filters = 0;
  for (size_t i = 0; i < set->n_filters; i++)
    if (set->filters[i].ops != &tw_filter_capacity &&
        set->filters[i].ops != &tw_filter_backfill)
      relaxed.filters[relaxed.n_filters++] = set->filters[i];
  struct tw_place_snapshot snap;
  snapshot_of(p, &snap);
  struct tw_plan_input in = {.job = spec, .job_id = job->id, .now_ms = now};
  struct tw_plan plan;
  if (tw_plan_make(&relaxed, &snap, &in, NULL, p->ws, &plan, NULL))
    return;
  for (size_t i = 0; i < plan.n; i++) {
    const struct tw_offer *o = plan.cands[i].offer;
    if (o->capacity < 0)
      continue;
    if (tw_reservations_find(&p->res, o->id))
      break; /* an earlier job of this pass holds the pool */
    int64_t free_now = o->capacity - tw_capacity_view_used(&p->cap, o->id);
    struct tw_bf_running *run = tw_calloc(p->n_dem ? p->n_dem : 1, sizeof *run);
    size_t nr = 0;
    for (size_t d = 0; d < p->n_dem; d++)
      if (!strcmp(p->dem[d].offer_id, o->id))
        run[nr++] = (struct tw_bf_running){p->dem[d].nodes, p->dem[d].end_ms};
    int nodes = spec->nodes > 0 ? spec->nodes : 1;
    int64_t start =
        tw_backfill_start_ms(free_now < 0 ? 0 : free_now, run, nr, nodes, now);
    free(run);
    if (start == INT64_MAX)
      continue;
    struct tw_reservation rv = {.start_ms = start, .nodes = nodes};
    snprintf(rv.offer_id, sizeof rv.offer_id, "%s", o->id);
    snprintf(rv.job_id, sizeof rv.job_id, "%s", job->id);
    tw_reservations_add(&p->res, &rv);
    char at[40], note[400];
    tw_time_fmt_rfc3339(start, at, sizeof at);
    snprintf(note, sizeof note,
             "waiting for private capacity: %d nodes of %s reserved from %s; "
             "smaller jobs "
             "backfill only around it",
             nodes, o->id, at);
    note_once(s, p, job->id, note);
    break;
  }
  tw_plan_release(&plan);
}

/* Shared replication: for each dataset several of this pass's jobs read,
 * ask whether one copy to where they would run saves more than it costs;
 * if so, record the replica (the registry's version moves, so the set is
 * reloaded before these jobs are placed) and tell each reader. */
static void sched_replicate(struct tw_sched *s, struct sched_place *p,
                            const struct tw_policy_set *set,
                            struct tw_job_rec *jobs,
                            const struct tw_job_spec *const *specs,
                            const size_t *order, size_t n, int64_t now) {
  if (!set->replication.enabled || !p->ix || !p->ds_ready)
    return;
  const char *done[64];
  size_t n_done = 0;
  const struct tw_job_spec **readers = tw_calloc(n ? n : 1, sizeof *readers);
  size_t *reader_idx = tw_calloc(n ? n : 1, sizeof *reader_idx);
  for (size_t a = 0; a < n && n_done < 64; a++) {
    size_t ja = order[a];
    if (!specs[ja])
      continue;
    for (size_t d = 0; d < specs[ja]->n_datasets; d++) {
      const char *uri = specs[ja]->datasets[d].uri;
      bool seen = false;
      for (size_t q = 0; q < n_done && !seen; q++)
        seen = !strcmp(done[q], uri);
      if (seen)
        continue;
      done[n_done++] = uri;
      size_t nr = 0;
      for (size_t b = a; b < n; b++) {
        size_t jb = order[b];
        for (size_t e = 0; specs[jb] && e < specs[jb]->n_datasets; e++)
          if (!strcmp(specs[jb]->datasets[e].uri, uri)) {
            reader_idx[nr] = jb;
            readers[nr++] = specs[jb];
            break;
          }
      }
      if (nr < (size_t)set->replication.min_jobs)
        continue;
      struct tw_place_snapshot snap;
      snapshot_of(p, &snap);
      struct tw_repl_choice c;
      if (tw_replicate_decide(set, &snap, uri, readers, nr, now, p->ws, &c,
                              NULL) ||
          !c.replicate)
        continue;
      /* the registry learns the dataset from the readers when it lacks it */
      const struct tw_dataset_ref *ref = &specs[ja]->datasets[d];
      const char *loc = ref->location;
      struct tw_dataset_put put = {.uri = uri,
                                   .size_bytes = ref->size_bytes,
                                   .locations = &loc,
                                   .n_locations = loc ? 1 : 0,
                                   .owner = specs[ja]->tenant,
                                   .learn = true};
      char note[512], copy[32], saved[32];
      tw_policy_fmt_uusd(c.copy_uusd, copy, sizeof copy);
      tw_policy_fmt_uusd(c.before_uusd - c.after_uusd, saved, sizeof saved);
      snprintf(note, sizeof note,
               "%zu pending jobs read it: one copy from %s (%s) saves %s",
               c.readers, c.source, copy, saved);
      struct tw_err err = {0};
      if (tw_datasets_put(s->store, &put, now, NULL, NULL, &err) ||
          tw_datasets_add_replica(s->store, uri, c.target, c.copy_uusd, note,
                                  now, &err)) {
        tw_log_warn("sched", "dataset=%s replica to %s not recorded: %s", uri,
                    c.target, err.msg);
        continue;
      }
      tw_log_info("sched",
                  "dataset=%s target=%s copy_uusd=%lld readers=%zu replicated",
                  uri, c.target, (long long)c.copy_uusd, c.readers);
      char jn[1024];
      snprintf(jn, sizeof jn,
               "dataset %.200s replicated to %s once for %zu jobs: %s", uri,
               c.target, c.readers, note);
      for (size_t r = 0; r < nr; r++)
        tw_store_job_note(s->store, jobs[reader_idx[r]].id, jn, NULL);
      sched_datasets(s, p);
    }
  }
  free(readers);
  free(reader_idx);
}

static struct backoff *backoff_find(struct tw_sched *s, const char *job_id) {
  for (size_t i = 0; i < s->n_backoff; i++)
    if (!strcmp(s->backoff[i].job_id, job_id))
      return &s->backoff[i];
  return NULL;
}

static void backoff_clear(struct tw_sched *s, const char *job_id) {
  struct backoff *b = backoff_find(s, job_id);
  if (b)
    *b = s->backoff[--s->n_backoff];
}

static int64_t backoff_bump(struct tw_sched *s, const char *job_id,
                            int64_t now) {
  struct backoff *b = backoff_find(s, job_id);
  if (!b) {
    if (s->n_backoff == s->cap_backoff) {
      s->cap_backoff = s->cap_backoff ? s->cap_backoff * 2 : 16;
      s->backoff = tw_realloc(s->backoff, s->cap_backoff * sizeof *s->backoff);
    }
    b = &s->backoff[s->n_backoff++];
    snprintf(b->job_id, sizeof b->job_id, "%s", job_id);
    b->delay_ms = 500;
  }
  b->delay_ms = b->delay_ms * 2 > 60000 ? 60000 : b->delay_ms * 2;
  b->not_before_ms = now + b->delay_ms;
  return b->delay_ms;
}

/* ---- the fallback strategy's view of a job (also spot.c's) --------------- */

/* The offer of a past attempt: from the current offers, else rebuilt from
 * its id (enough for the blocklist's keys). */
struct tw_offer sched__offer_of(struct tw_sched *s,
                                const struct tw_attempt_rec *a) {
  const struct tw_offer *o = sched__offer(s, a->offer_id);
  if (o)
    return *o;
  struct tw_offer r;
  tw_offer_init(&r);
  TW_SET(r.id, a->offer_id);
  TW_SET(r.account, a->provider);
  char f[5][TW_MODEL_NAME_MAX] = {{0}};
  const char *p = a->offer_id;
  for (int i = 0; i < 5 && p; i++) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    snprintf(f[i], sizeof f[i], "%.*s", (int)n, p);
    p = c ? c + 1 : NULL;
  }
  TW_SET(r.region, f[1]);
  TW_SET(r.zone, f[2]);
  TW_SET(r.instance_type, f[3]);
  r.market = !strcmp(a->market, "spot") ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
  return r;
}

enum tw_fallback_kind sched__fallback_kind(struct tw_sched *s,
                                           const struct tw_job_spec *spec) {
  enum tw_fallback_kind k;
  if (spec->fallback && tw_fallback_parse(spec->fallback, &k))
    return k;
  return s->fallback.kind;
}

void sched__fallback_view(struct tw_sched *s, const struct tw_job_rec *job,
                          const struct tw_job_spec *spec,
                          const struct tw_attempt_rec *past, size_t n_past,
                          int64_t now, struct tw_fallback_job *j,
                          char region[TW_MODEL_NAME_MAX],
                          char zone[TW_MODEL_NAME_MAX]) {
  memset(j, 0, sizeof *j);
  region[0] = zone[0] = '\0';
  j->now_ms = now;
  j->submitted_ms = job->created_ms;
  j->deadline_ms = spec->deadline_ms;
  j->work_s = sched__work_s(spec);
  j->done_s = sched__resume_s(s, job->id);
  j->spec_market = spec->market;
  j->current_market = TW_MARKET_ANY;
  for (size_t i = 0; i < n_past; i++) {
    if (!strcmp(past[i].end_reason, "interrupted"))
      j->interruptions++;
    if (past[i].instance_id[0]) {
      /* the last attempt that got an instance says where the job was */
      struct tw_offer o = sched__offer_of(s, &past[i]);
      snprintf(region, TW_MODEL_NAME_MAX, "%s", o.region);
      snprintf(zone, TW_MODEL_NAME_MAX, "%s", o.zone);
      j->current_market = o.market;
    }
  }
  j->region = region;
  j->zone = zone;
}

void sched__fallback_record(struct tw_sched *s, const char *job_id,
                            enum tw_fallback_event ev,
                            const struct tw_fallback_decision *d, int64_t now) {
  static const char *const EV[] = {"place", "interrupted", "review"};
  static const char *const ACT[] = {"place", "stay", "move"};
  struct tw_ckpt_decision r = {.at_ms = now};
  snprintf(r.job_id, sizeof r.job_id, "%s", job_id);
  snprintf(r.event, sizeof r.event, "%s", EV[ev]);
  snprintf(r.strategy, sizeof r.strategy, "%s", tw_fallback_name(d->kind));
  snprintf(r.action, sizeof r.action, "%s", ACT[d->action]);
  snprintf(r.market, sizeof r.market, "%s",
           d->market == TW_MARKET_SPOT && d->then_on_demand
               ? "spot>on-demand"
               : tw_market_str(d->market));
  snprintf(r.reason, sizeof r.reason, "%s", d->reason);
  if (s->batch_opens) {
    /* stored with the queue's attempts, in one transaction */
    if (s->n_decs == s->cap_decs) {
      s->cap_decs = s->cap_decs ? s->cap_decs * 2 : 64;
      s->decs = tw_realloc(s->decs, s->cap_decs * sizeof *s->decs);
      s->dec_trace =
          tw_realloc(s->dec_trace, s->cap_decs * sizeof *s->dec_trace);
    }
    struct sched_dec_trace *dt = &s->dec_trace[s->n_decs];
    tw_log_get_trace(dt->trace, dt->span);
    s->decs[s->n_decs++] = r;
    return;
  }
  struct tw_err err = {0};
  bool added = false;
  if (tw_checkpoint_decision_add(s->store, &r, &added, &err))
    tw_log_warn("spot", "job=%s decision not recorded: %s", job_id, err.msg);
  else
    sched__fallback_recorded(s, &r, added);
}

void sched__fallback_recorded(struct tw_sched *s,
                              const struct tw_ckpt_decision *rp, bool added) {
  const struct tw_ckpt_decision r = *rp;
  const char *job_id = r.job_id;
  if (added) {
    tw_log_info("spot", "job=%s strategy=%s event=%s %s", job_id, r.strategy,
                r.event, r.reason);
    char lab[128];
    snprintf(lab, sizeof lab, "strategy=\"%s\",action=\"%s\"", r.strategy,
             r.action);
    sched__obs_count(s, "tradewind_fallbacks_total", lab);
    sched__obs_event(s, job_id, "fallback", "tradewind.fallback.strategy",
                     r.strategy, "tradewind.fallback.reason", r.reason);
  }
}

void sched__blocked_offers(struct tw_sched *s, int64_t now, const char ***ids,
                           size_t *n) {
  struct tw_blocklist_snap snap;
  tw_blocklist_snapshot(s->blocklist, now, &snap);
  if (snap.n) {
    size_t cap = *n + 1;
    for (size_t i = 0; i < s->all.n; i++)
      if (tw_blocklist_snap_match(&snap, &s->all.items[i], now)) {
        if (*n + 1 >= cap) {
          cap = cap * 2 + 16;
          *ids = tw_realloc((void *)*ids, cap * sizeof **ids);
        }
        (*ids)[(*n)++] = s->all.items[i].id;
      }
  }
  tw_blocklist_snap_release(&snap);
}

/* ---- one job through its fallback strategy ------------------------------- */

/* Whether a past attempt keeps its offer from the job: always when the
 * offer refused the request (rejected), for the blocklist's offer time
 * after a capacity error or an interruption (then the offer may have
 * capacity again). */
static bool past_excludes(const struct tw_sched *s,
                          const struct tw_attempt_rec *past, int64_t now) {
  if (!strcmp(past->end_reason, "rejected"))
    return true;
  /* The blocklist keeps every job off a failed offer for a while; this is
   * the job's own memory of it, which survives a restart (ended_ms is
   * stored).  Forever would starve a long job of offers. */
  if (!strcmp(past->end_reason, "capacity") ||
      !strcmp(past->end_reason, "interrupted"))
    return now - past->ended_ms < s->offer_block_ms;
  return false;
}

/* What placing a job must take into account besides its spec. */
struct fb_plan {
  struct tw_fallback_decision d;
  enum tw_fallback_event event;
  char region[TW_MODEL_NAME_MAX]; /* of its last attempt that ran; "" none */
};

/* Decides the job's fallback (spec->market is set to the market to rank
 * with) and appends the ids of blocklisted offers to *excl (a malloc'd
 * array, grown here; the ids are borrowed from s->all). */
static void fb_decide(struct tw_sched *s, const struct tw_job_rec *job,
                      struct tw_job_spec *spec,
                      const struct tw_attempt_rec *past, size_t n_past,
                      int64_t now, const char ***excl, size_t *n_excl,
                      struct fb_plan *plan) {
  memset(plan, 0, sizeof *plan);
  sched__blocked_offers(s, now, excl, n_excl);
  struct tw_fallback_job j;
  char zone[TW_MODEL_NAME_MAX];
  sched__fallback_view(s, job, spec, past, n_past, now, &j, plan->region, zone);
  /* a job recovering from an interruption is placed as the strategy says
   * for interruptions; anything else (first placement, after capacity
   * errors, after a move) is an ordinary placement */
  plan->event = TW_FB_PLACE;
  if (job->state == TW_JOB_RECOVERING && n_past &&
      !strcmp(past[n_past - 1].end_reason, "interrupted"))
    plan->event = TW_FB_INTERRUPTED;
  j.event = plan->event;
  j.region = plan->region;
  tw_fallback_decide(&s->fallback, sched__fallback_kind(s, spec), &j, &plan->d);
  /* a job moved off on-demand for spot goes back to on-demand at once
   * when the spot launch fails: it gave up a running instance for this */
  if (n_past && !strcmp(past[n_past - 1].end_reason, "moved") &&
      plan->d.market == TW_MARKET_SPOT)
    plan->d.then_on_demand = true;
  spec->market = plan->d.rank_market;
}

/* Applies the decision to the ranked candidates, prefixes explain with the
 * decision's reason, and stores the decision when a launch will follow. */
static void fb_order(struct tw_sched *s, const struct tw_job_rec *job,
                     const struct fb_plan *plan, struct tw_plan *pl,
                     char *explain, size_t explain_sz, int64_t now) {
  size_t before = pl->n;
  if (!before)
    return; /* nothing fits at all: the counts say why */
  struct tw_cand *all = tw_malloc(before * sizeof *all);
  memcpy(all, pl->cands, before * sizeof *all);
  tw_fallback_apply(&plan->d, plan->region, pl);
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", explain);
  struct tw_fallback_decision d = plan->d;
  if (!pl->n && d.market == TW_MARKET_ON_DEMAND) {
    /* Nothing on-demand fits at all (a provider that sells spot only, say):
     * running on spot beats never running. */
    free(pl->cands);
    pl->cands = all;
    pl->n = before;
    all = NULL;
    d.market = TW_MARKET_ANY;
    tw_fallback_apply(&d, plan->region, pl);
    size_t len = strlen(d.reason);
    snprintf(d.reason + len, sizeof d.reason - len,
             "; no on-demand offer fits, so spot");
  }
  free(all);
  /* explain is cut at explain_sz: it is a note, and the plan JSON keeps
   * the whole story */
  struct tw_buf e;
  tw_buf_init(&e);
  if (!pl->n)
    /* No numbers in this text: a job waiting pass after pass keeps the same
     * reason, and the same reason is not recorded twice. */
    tw_buf_printf(
        &e, "%s; %s strategy: %s", tmp, tw_fallback_name(plan->d.kind),
        plan->d.market == TW_MARKET_SPOT
            ? "no spot offer is placeable now and the job is ahead of its"
              " deadline, so it waits for spot"
            : "none of them is in the market it chose");
  else
    tw_buf_printf(&e, "%s; %s", d.reason, tmp);
  snprintf(explain, explain_sz, "%s", e.data ? e.data : "");
  tw_buf_release(&e);
  if (pl->n)
    sched__fallback_record(s, job->id, plan->event, &d, now);
}

/* The live attempts' usage counted into p, then the pending jobs of
 * this pass's window read: a window larger than one pass places, so fair
 * share and aging can bring a job from further back. */
static enum tw_rc queue_window(struct tw_sched *s, struct sched_place *p,
                               struct tw_job_rec **queue, size_t *n,
                               struct tw_err *err) {
  const struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  if (sched__live(s, &live, &n_live, err) == TW_OK)
    sched_usage(s, p, live, n_live);
  int window = s->max_place * 4 < 1024 ? s->max_place * 4 : 1024;
  *queue = NULL;
  *n = 0;
  return tw_store_jobs_queued(s->store, TW_JOB_PENDING, window, queue, n,
                              err);
}

int sched__place_pending(struct tw_sched *s, int64_t now) {
  int64_t t0 = tw_mono_us();
  struct sched_place *p = s->place;
  struct tw_policy_set *set = policies_now(s);
  sched_datasets(s, p);
  sched_health(s, p);
  tw_reservations_release(&p->res);
  tw_reservations_init(&p->res);
  struct tw_err err = {0};
  struct tw_job_rec *queue = NULL;
  size_t n = 0;
  int changes = 0;
  if (queue_window(s, p, &queue, &n, &err)) {
    tw_policy_set_unref(set);
    s->pass.queue_us = tw_mono_us() - t0;
    return 0;
  }
  /* the quotas as they are now, after the queue: a quota set before a
   * queued job's submission is one this pass sees (the view of
   * place_begin may predate both) */
  if (s->tenancy && n)
    tw_tenancy_quotas_reload(s->tenancy);
  /* NULL where the stored spec does not parse */
  const struct tw_job_spec **specs = tw_calloc(n ? n : 1, sizeof *specs);
  struct tw_queue_job *qj = tw_calloc(n ? n : 1, sizeof *qj);
  size_t *order = tw_calloc(n ? n : 1, sizeof *order);
  for (size_t i = 0; i < n; i++) {
    struct sched_demand d = {0};
    specs[i] = sched__spec(s, &queue[i]);
    if (specs[i])
      demand_of(specs[i], &d);
    qj[i] = (struct tw_queue_job){.id = queue[i].id,
                                  .tenant = queue[i].tenant,
                                  .priority = queue[i].priority,
                                  .created_ms = queue[i].created_ms,
                                  .vcpus = d.vcpus,
                                  .memory_mib = d.memory_mib,
                                  .gpus = d.gpus};
  }
  struct tw_queue_usage *use = tw_calloc(p->n_dem ? p->n_dem : 1, sizeof *use);
  for (size_t i = 0; i < p->n_dem; i++)
    use[i] = (struct tw_queue_usage){p->dem[i].tenant, p->dem[i].vcpus,
                                     p->dem[i].memory_mib, p->dem[i].gpus};
  tw_queue_order(&set->queue, now, qj, n, use, p->n_dem, order, NULL);
  free(use);
  size_t todo = n < (size_t)s->max_place ? n : (size_t)s->max_place;
  sched_replicate(s, p, set, queue, specs, order, todo, now);
  tw_policy_set_unref(set);
  int64_t t1 = tw_mono_us();
  s->pass.queue_us = t1 - t0;
  s->pass.queued = n;
  s->pass.looked_at = todo;
  /* the queue's attempts are opened together after its last placement
   * (one transaction), and their launches sent then */
  s->batch_opens = true;
  p->batch_notes = true;
  for (size_t k = 0; k < todo; k++) {
    /* every pool full: the rest would be planned for nothing (a later
     * pass, once calls came back, places them) */
    if (s->no_room && !sched__any_room(s)) {
      s->pass.looked_at = k;
      break;
    }
    changes += sched__place_job(s, &queue[order[k]], now);
  }
  p->batch_notes = false;
  s->batch_opens = false;
  int64_t t2 = tw_mono_us();
  s->pass.plan_us = t2 - t1;
  notes_flush(s, p);
  s->pass.notes_us = tw_mono_us() - t2;
  int sent = sched__launch_flush(s);
  /* a backlog: every job this pass may place was sent and more wait, so
   * the next pass starts at once instead of after the tick (the tick is
   * the idle cadence; a full pool or jobs that fit nowhere send fewer,
   * and wait for it) */
  if (n > todo && sent >= s->max_place) {
    s->backlog = true;
    tw_sched_wake(s);
  }
  for (size_t i = 0; i < n; i++) {
    sched__spec_release(s, specs[i]);
    tw_job_rec_release(&queue[i]);
  }
  free(queue);
  free(specs);
  free(qj);
  free(order);
  return changes;
}

void sched__place_warm(struct tw_sched *s) {
  struct sched_place *p = s->place;
  sched_datasets(s, p);
  struct tw_err err = {0};
  struct tw_job_rec *queue = NULL;
  size_t n = 0;
  if (queue_window(s, p, &queue, &n, &err))
    return;
  for (size_t i = 0; i < n; i++) /* parsed now, kept in the spec cache */
    sched__spec_release(s, sched__spec(s, &queue[i]));
  if (n) { /* a placement's reads, once */
    struct tw_attempt_rec *past = NULL;
    size_t n_past = 0;
    tw_store_attempts_of(s->store, queue[0].id, &past, &n_past, &err);
    free(past);
    (void)sched__resume_s(s, queue[0].id);
  }
  for (size_t i = 0; i < n; i++)
    tw_job_rec_release(&queue[i]);
  free(queue);
}

int sched__place_job(struct tw_sched *s, const struct tw_job_rec *job,
                     int64_t now) {
  struct backoff *b = backoff_find(s, job->id);
  if (b && now < b->not_before_ms)
    return 0;
  const struct tw_job_spec *stored = sched__spec(s, job);
  if (!stored)
    return 0;
  /* a shallow copy: only its market is changed (by the strategy), and it
   * is never released; the cache's copy is */
  struct tw_job_spec spec = *stored;
  struct tw_err err = {0};
  int changes = 0;
  /* a job stored with a trace context: its placement is a span of that
   * trace, and the launch call made here joins it (obs.c) */
  struct tw_trace_ctx jctx;
  char jtp[64];
  struct tw_span *psp = NULL;
  if (sched__obs_job_trace(s, job->id, &jctx, jtp, sizeof jtp)) {
    psp = tw_malloc(sizeof *psp);
    tw_span_start(s->tracer, psp, "placement", TW_SPAN_INTERNAL, &jctx);
    tw_span_attr_str(psp, "tradewind.job_id", job->id);
    tw_span_attr_str(psp, "tradewind.tenant", job->tenant);
    char t[33], sid[17];
    tw_trace_hex(psp->ctx.trace_id, 16, t);
    tw_trace_hex(psp->ctx.span_id, 8, sid);
    tw_log_set_trace(t, sid);
  }
  struct tw_attempt_rec *past = NULL;
  size_t n_past = 0;
  tw_store_attempts_of(s->store, job->id, &past, &n_past, &err);
  const char **excl = tw_calloc(n_past + 1, sizeof *excl);
  size_t n_excl = 0;
  for (size_t i = 0; i < n_past; i++)
    if (past_excludes(s, &past[i], now))
      excl[n_excl++] = past[i].offer_id;

  /* the spot lifecycle: blocklisted offers, the fallback strategy's
   * market and order */
  struct fb_plan fb;
  fb_decide(s, job, &spec, past, n_past, now, &excl, &n_excl, &fb);

  /* placement: the policy set in force, the plan with its explanation */
  struct sched_place *sp = s->place;
  struct tw_policy_set *set = policies_now(s);
  /* A plan without counts first: a job that fits nowhere, in the same
   * situation as at its last pass, is not counted (nor noted) again. */
  struct tw_plan pplan;
  sched_plan(s, sp, job, &spec, excl, n_excl, now, set, false, &pplan);
  uint64_t wkey = wait_key(sp, set, job, excl, n_excl);
  /* only a job that fits nowhere keeps an entry (a job placed at its
   * first look never gets one, so the lookups stay among the waiting) */
  struct sched_wait *wt = wait_find(sp, job->id);
  bool counted = pplan.n || !wt || wt->key != wkey;
  if (counted) {
    tw_plan_release(&pplan);
    sched_plan(s, sp, job, &spec, excl, n_excl, now, set, true, &pplan);
    if (!pplan.n)
      wait_of(sp, job->id)->key = wkey;
    else if (wt)
      wt->key = 0;
  }
  char explain[512];
  struct tw_buf eb, planj;
  tw_buf_init(&eb);
  tw_buf_init(&planj);
  tw_plan_explain(&pplan, &eb);
  snprintf(explain, sizeof explain, "%s", eb.data ? eb.data : "");
  tw_buf_release(&eb);
  tw_plan_to_json(&pplan, 5, &planj);
  fb_order(s, job, &fb, &pplan, explain, sizeof explain, now);
  if (psp) { /* the decision's why */
    tw_span_attr_int(psp, "tradewind.placement.candidates", (int64_t)pplan.n);
    tw_span_attr_int(psp, "tradewind.placement.considered",
                     (int64_t)pplan.considered);
    if (pplan.counted)
      tw_span_attr_int(psp, "tradewind.placement.feasible",
                       (int64_t)pplan.feasible);
    tw_span_attr_str(psp, "tradewind.placement.strategy",
                     pplan.strategy ? pplan.strategy : "");
    tw_span_attr_str(psp, "tradewind.placement.why", explain);
    for (size_t i = 0; i < pplan.n_rejects; i++) {
      if (!pplan.rejects[i].count)
        continue;
      char k[TW_SPAN_KEY_MAX];
      snprintf(k, sizeof k, "tradewind.refused.%.29s", pplan.rejects[i].filter);
      tw_span_attr_int(psp, k, (int64_t)pplan.rejects[i].count);
    }
    s->cur_trace = psp->ctx;
    snprintf(s->cur_traceparent, sizeof s->cur_traceparent, "%s", jtp);
  }
  if (pplan.n == 0) {
    char note[600];
    if (counted && s->n_pc == 0) {
      snprintf(note, sizeof note,
               "no provider is configured: nothing can run this job until "
               "the config names one under providers:");
      note_once(s, sp, job->id, note);
    } else if (counted) {
      snprintf(note, sizeof note, "no offer fits: %s", explain);
      note_once(s, sp, job->id, note);
    }
    sched_reserve(s, sp, job, &spec, now, set);
    goto out;
  }
  if (s->tenancy && tw_tenancy_place_filter(s->tenancy, job, &spec, &pplan))
    goto out; /* nothing within the tenant's quota now (noted once) */

  /* the one call out of placement: launch.c tries the candidates */
  struct sched_launched l;
  sched__launch_best(s, job, &spec, &pplan, explain, planj.data, set, now, &l);
  changes += l.changes;
  if ((l.placed || l.inflight) &&
      l.offer->capacity >= 0) /* private: these nodes are taken until
                                 relisted (a refusal relists them) */
    tw_capacity_view_take(&sp->cap, l.offer->id,
                          spec.nodes > 0 ? spec.nodes : 1);
  if (l.opened && !l.placed && !l.unknown) {
    char why[128] = "launch failed; waiting to place again";
    if (l.retry_later)
      snprintf(why, sizeof why, "launch failed; trying again in %lld s",
               (long long)(backoff_bump(s, job->id, now) / 1000));
    struct tw_job_transition t = {
        .id = job->id, .to = TW_JOB_PENDING, .reason = why};
    tw_store_job_transition(s->store, &t, NULL, &err);
  }
  if (l.placed)
    backoff_clear(s, job->id);
  if (psp && l.offer) {
    tw_span_attr_str(psp, "tradewind.offer", l.offer->id);
    tw_span_attr_str(psp, "tradewind.provider", l.offer->provider);
    tw_span_attr_str(psp, "cloud.region", l.offer->region);
    tw_span_attr_str(psp, "tradewind.market", tw_market_str(l.offer->market));
    tw_span_attr_int(psp, "tradewind.price_uusd_per_hour",
                     l.offer->price_uusd_per_hour);
  }
  tw_span_attr_str(psp, "tradewind.placement.outcome",
                   l.placed     ? "launched"
                   : l.inflight ? "launch sent"
                   : l.unknown  ? "launch unanswered"
                   : l.opened   ? "launch refused"
                                : "no account free");
out:
  if (psp) {
    if (!pplan.n && !counted)
      tw_span_discard(psp); /* the same situation as the last pass */
    else if (!pplan.n)
      tw_span_attr_str(psp, "tradewind.placement.outcome", "nothing fits");
    tw_span_end(psp);
    free(psp);
    memset(&s->cur_trace, 0, sizeof s->cur_trace);
    s->cur_traceparent[0] = '\0';
    tw_log_set_trace(NULL, NULL);
  }
  tw_plan_release(&pplan);
  tw_buf_release(&planj);
  tw_policy_set_unref(set);
  free(excl);
  free(past);
  sched__spec_release(s, stored);
  return changes;
}

int sched__place_refused(struct tw_sched *s, const char *job_id, enum tw_rc rc,
                         int64_t now) {
  struct tw_err err = {0};
  bool offers = rc == TW_E_CAPACITY || rc == TW_E_QUOTA || rc == TW_E_INVALID;
  char why[128] = "launch failed; waiting to place again";
  if (!offers) /* auth, a token taken: not the offer's */
    snprintf(why, sizeof why, "launch failed; trying again in %lld s",
             (long long)(backoff_bump(s, job_id, now) / 1000));
  struct tw_job_transition t = {
      .id = job_id, .to = TW_JOB_PENDING, .reason = why};
  if (tw_store_job_transition(s->store, &t, NULL, &err))
    return 0; /* cancelled meanwhile, or not placing any more */
  int changes = 1;
  if (!offers || s->stopping) /* a drain places nothing new */
    return changes;
  /* the offer's refusal: its next candidate at once (a past attempt's
   * offer is avoided), as a placement that tries them in order does */
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, job_id, &job, &err) == TW_OK) {
    if (job.state == TW_JOB_PENDING)
      changes += sched__place_job(s, &job, now);
    tw_job_rec_release(&job);
  }
  return changes;
}
