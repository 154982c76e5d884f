#include "broker/sched/sched_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "billing/catalog/catalog.h"
#include "billing/ledger/meter.h"
#include "policies/place/netmatrix.h"
#include "broker/tenancy/tenancy.h"
#include "broker/core/datasets.h"
#include "policies/place/index.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"
#include "policies/place/queue.h"
#include "policies/place/replicate.h"
#include "providers/provider.h"

/* The catalog a scheduler reads its offers from (billing/catalog/catalog.h),
 * and the version of the snapshot its placement array was built from.  The
 * daemon's catalog (tw_catalog_published) refreshes on its own threads; a
 * scheduler made without one (tests) gets a private catalog over its
 * providers, refreshed at each pass when offers_ttl_ms has passed, as the
 * scheduler used to list offers itself.  Kept beside the scheduler, by its
 * address, so struct tw_sched stays as the rest of the loop knows it. */
struct sched_catalog {
  const struct tw_sched *s;
  struct tw_catalog *cat;
  bool own;         /* made for this scheduler: refreshed and freed by it */
  uint64_t version; /* of the snapshot s->all was built from; 0 none */
  struct sched_catalog *next;
};
static pthread_mutex_t sched_cat_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sched_catalog *sched_cats;

static struct sched_catalog *sched_catalog_of(const struct tw_sched *s) {
  pthread_mutex_lock(&sched_cat_mu);
  struct sched_catalog *c = sched_cats;
  while (c && c->s != s)
    c = c->next;
  pthread_mutex_unlock(&sched_cat_mu);
  return c;
}

enum tw_rc tw_sched_new(const struct tw_sched_opts *o, struct tw_sched **out,
                        struct tw_err *err) {
  struct tw_sched *s = tw_calloc(1, sizeof *s);
  s->store = o->store;
  s->clock = o->clock ? o->clock : tw_clock_real();
  s->tick_ms = o->tick_ms > 0 ? o->tick_ms : 1000;
  s->ttl_ms = o->offers_ttl_ms > 0 ? o->offers_ttl_ms : 300000;
  s->max_place = o->max_place_per_tick > 0 ? o->max_place_per_tick : 64;
  s->tenancy = o->tenancy;
  s->meter = o->meter;
  s->n_pc = o->n_providers;
  s->pc = tw_calloc(s->n_pc ? s->n_pc : 1, sizeof *s->pc);
  for (size_t i = 0; i < s->n_pc; i++) {
    s->pc[i].p = o->providers[i];
    tw_offer_list_init(&s->pc[i].offers);
  }
  tw_offer_list_init(&s->all);
  struct sched_catalog *sc = tw_calloc(1, sizeof *sc);
  sc->s = s;
  sc->cat = tw_catalog_published();
  if (!sc->cat) {
    struct tw_catalog_opts co = {.clock = s->clock,
                                 .providers = o->providers,
                                 .n_providers = o->n_providers,
                                 .refresh_ms = s->ttl_ms};
    enum tw_rc rc = tw_catalog_new(&co, &sc->cat, err);
    if (rc) {
      free(sc);
      free(s->pc);
      free(s);
      return rc;
    }
    sc->own = true;
  }
  pthread_mutex_lock(&sched_cat_mu);
  sc->next = sched_cats;
  sched_cats = sc;
  pthread_mutex_unlock(&sched_cat_mu);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  sched__spot_init(s, o);
  *out = s;
  return TW_OK;
}

struct pcache *sched__provider(struct tw_sched *s, const char *acct) {
  for (size_t i = 0; i < s->n_pc; i++)
    if (!strcmp(tw_provider_account(s->pc[i].p), acct))
      return &s->pc[i];
  return NULL;
}

const struct tw_offer *sched__offer(struct tw_sched *s, const char *id) {
  for (size_t i = 0; i < s->all.n; i++)
    if (!strcmp(s->all.items[i].id, id))
      return &s->all.items[i];
  return NULL;
}

/* 1. offers: placement's array follows the catalog's snapshot, rebuilt
 * only when a new snapshot was published.  A provider whose refresh
 * fails keeps its previous offers there (the catalog keeps its table). */
static void sched__offers_changing(struct tw_sched *s);
static void sched_place_free(const struct tw_sched *s);

static void refresh_offers(struct tw_sched *s, int64_t now) {
  struct sched_catalog *sc = sched_catalog_of(s);
  if (!sc || !s->n_pc)
    return;
  if (sc->own)
    tw_catalog_refresh_due(sc->cat, now);
  else /* the first pass places on complete offers, as it did when it
        * listed them itself */
    tw_catalog_wait_ready(sc->cat);
  struct tw_cat_snap *snap = tw_catalog_acquire(sc->cat);
  if (tw_cat_snap_version(snap) != sc->version) {
    const char **accounts = tw_calloc(s->n_pc, sizeof *accounts);
    for (size_t i = 0; i < s->n_pc; i++)
      accounts[i] = tw_provider_account(s->pc[i].p);
    sched__offers_changing(s);
    tw_offer_list_release(&s->all);
    tw_cat_snap_offers_of(snap, accounts, s->n_pc, &s->all);
    free(accounts);
    sc->version = tw_cat_snap_version(snap);
    tw_log_info("sched", "catalog=%llu offers=%zu refreshed",
                (unsigned long long)sc->version, s->all.n);
    if (s->tenancy) /* admission projects costs over the same offers */
      tw_tenancy_set_offers(s->tenancy, s->all.items, s->all.n);
  }
  tw_cat_snap_release(snap);
}

/* ---- placement (policies/place/plan.h)
 * --------------------------------------------
 *
 * What placement needs beyond one job, kept beside the scheduler by its
 * address (as the catalog's state is, so struct tw_sched stays as the rest
 * of the loop knows it): the offer index over s->all, rebuilt when the
 * offers change; the plan workspace (stage caches); the dataset set,
 * reloaded when the registry's version moves; private capacity taken
 * since the offers were listed; this pass's backfill reservations; and
 * what each live job holds, for fair share.  Scheduler thread only. */

struct sched_demand {
  char job_id[TW_JOB_ID_LEN + 1];
  char tenant[64];
  int64_t vcpus, memory_mib, gpus, duration_s;
  char offer_id[192]; /* private offers: the pool it holds nodes of */
  int nodes;
  int64_t end_ms; /* when its attempt is expected to end */
  bool live;
};

struct sched_place {
  const struct tw_sched *s;
  struct sched_place *next;
  uint64_t offers_gen, ix_gen;     /* the index is current when equal */
  struct tw_offer_index *ix;       /* over s->all, borrowed until the offers
                                      change (then it owns them) */
  const struct tw_offer *ix_items; /* the array it was built over */
  struct tw_plan_ws *ws;
  struct tw_placer *own; /* when the daemon published none */
  bool ds_ready;
  int64_t ds_version;
  struct tw_dataset_set ds;
  struct tw_capacity_view cap;
  struct tw_reservations res;
  struct tw_health health;
  struct sched_demand *dem;
  size_t n_dem, cap_dem;
  /* Jobs that fit nowhere: what their last plan saw (so an unchanged
   * situation is not counted again every pass) and what was last noted
   * on them (so their events do not repeat it every pass). */
  struct sched_wait {
    char job_id[TW_JOB_ID_LEN + 1];
    uint64_t key, note;
  } * wait;
  size_t n_wait, cap_wait;
};

static pthread_mutex_t place_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sched_place *places;

static struct sched_place *sched_place_of(const struct tw_sched *s) {
  pthread_mutex_lock(&place_mu);
  struct sched_place *p = places;
  while (p && p->s != s)
    p = p->next;
  if (!p) {
    p = tw_calloc(1, sizeof *p);
    p->s = s;
    p->offers_gen = 1;
    p->ws = tw_plan_ws_new();
    tw_dataset_set_init(&p->ds);
    tw_capacity_view_init(&p->cap);
    tw_reservations_init(&p->res);
    p->next = places;
    places = p;
  }
  pthread_mutex_unlock(&place_mu);
  return p;
}

static void sched_place_free(const struct tw_sched *s) {
  pthread_mutex_lock(&place_mu);
  struct sched_place **pp = &places, *p = NULL;
  while (*pp && (*pp)->s != s)
    pp = &(*pp)->next;
  if (*pp) {
    p = *pp;
    *pp = p->next;
  }
  pthread_mutex_unlock(&place_mu);
  if (!p)
    return;
  tw_offer_index_unref(p->ix);
  tw_plan_ws_free(p->ws);
  tw_placer_free(p->own);
  tw_dataset_set_release(&p->ds);
  tw_capacity_view_release(&p->cap);
  tw_reservations_release(&p->res);
  free(p->dem);
  free(p->wait);
  free(p);
}

/* s->all is about to be replaced (or freed).  The index built over it
 * takes the array over, so plans still holding the index (the placer's
 * readers) keep valid offers; the next plan builds a new index.  What was
 * taken of private capacity starts again from the new listing. */
static void sched__offers_changing(struct tw_sched *s) {
  struct sched_place *p = sched_place_of(s);
  if (p->ix && p->ix_gen == p->offers_gen && p->ix_items == s->all.items &&
      s->all.items) {
    tw_offer_index_own_source(p->ix);
    tw_offer_list_init(&s->all); /* the release that follows frees nothing */
  }
  p->offers_gen++;
  tw_capacity_view_release(&p->cap);
  tw_capacity_view_init(&p->cap);
}

static struct tw_placer *sched_placer(struct sched_place *p) {
  struct tw_placer *d = tw_placer_default();
  if (d)
    return d;
  if (!p->own)
    p->own = tw_placer_new(NULL);
  return p->own;
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
  tw_placer_set_index(sched_placer(p), ix);
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

static void ds_each(void *ctx, const char *uri, int64_t size, const char *loc) {
  struct ds_load *l = ctx;
  if (!loc) {
    tw_dataset_set_add(&l->set, uri, size, NULL, 0);
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

static struct sched_demand *demand_find(struct sched_place *p,
                                        const char *job_id) {
  for (size_t i = 0; i < p->n_dem; i++)
    if (!strcmp(p->dem[i].job_id, job_id))
      return &p->dem[i];
  return NULL;
}

/* What every tenant's live jobs hold (and which private pools they hold
 * nodes of), from the live attempts; a job's demand is read once. */
static void sched_usage(struct tw_sched *s, struct sched_place *p,
                        const struct tw_attempt_rec *live, size_t n_live) {
  for (size_t i = 0; i < p->n_dem; i++)
    p->dem[i].live = false;
  for (size_t i = 0; i < n_live; i++) {
    struct sched_demand *d = demand_find(p, live[i].job_id);
    if (!d) {
      struct tw_job_rec job;
      struct tw_job_spec spec;
      if (tw_store_job_get(s->store, live[i].job_id, &job, NULL))
        continue;
      bool ok = sched__parse_spec(&job, &spec);
      if (ok) {
        if (p->n_dem == p->cap_dem) {
          p->cap_dem = p->cap_dem ? p->cap_dem * 2 : 64;
          p->dem = tw_realloc(p->dem, p->cap_dem * sizeof *p->dem);
        }
        d = &p->dem[p->n_dem++];
        memset(d, 0, sizeof *d);
        snprintf(d->job_id, sizeof d->job_id, "%s", job.id);
        snprintf(d->tenant, sizeof d->tenant, "%s", job.tenant);
        demand_of(&spec, d);
        tw_spec_release(&spec);
      }
      tw_job_rec_release(&job);
      if (!d)
        continue;
    }
    d->live = true;
    snprintf(d->offer_id, sizeof d->offer_id, "%s", live[i].offer_id);
    int64_t from = live[i].running_ms ? live[i].running_ms : live[i].started_ms;
    d->end_ms = from + (d->duration_s > 0 ? d->duration_s : 3600) * 1000;
  }
  /* forget the jobs that hold nothing any more */
  size_t k = 0;
  for (size_t i = 0; i < p->n_dem; i++)
    if (p->dem[i].live)
      p->dem[k++] = p->dem[i];
  p->n_dem = k;
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

bool sched__placeable(struct tw_sched *s, const struct tw_job_rec *job,
                      const struct tw_job_spec *spec, const char *const *excl,
                      size_t n_excl, int64_t now) {
  struct sched_place *p = sched_place_of(s);
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *pix = NULL;
  tw_placer_acquire(sched_placer(p), &set, &pix);
  tw_offer_index_unref(pix);
  sched_index(s, p);
  struct tw_plan plan;
  sched_plan(s, p, job, spec, excl, n_excl, now, set, false, &plan);
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

static struct sched_wait *wait_of(struct sched_place *p, const char *job_id) {
  for (size_t i = 0; i < p->n_wait; i++)
    if (!strcmp(p->wait[i].job_id, job_id))
      return &p->wait[i];
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
  tw_store_job_note(s->store, job_id, text, NULL);
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
  struct tw_policy_set relaxed = *set; /* a view: never freed */
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
                            struct tw_job_rec *jobs, struct tw_job_spec *specs,
                            const bool *parsed, const size_t *order, size_t n,
                            int64_t now) {
  if (!set->replication.enabled || !p->ix || !p->ds_ready)
    return;
  const char *done[64];
  size_t n_done = 0;
  const struct tw_job_spec **readers = tw_calloc(n ? n : 1, sizeof *readers);
  size_t *reader_idx = tw_calloc(n ? n : 1, sizeof *reader_idx);
  for (size_t a = 0; a < n && n_done < 64; a++) {
    size_t ja = order[a];
    if (!parsed[ja])
      continue;
    for (size_t d = 0; d < specs[ja].n_datasets; d++) {
      const char *uri = specs[ja].datasets[d].uri;
      bool seen = false;
      for (size_t q = 0; q < n_done && !seen; q++)
        seen = !strcmp(done[q], uri);
      if (seen)
        continue;
      done[n_done++] = uri;
      size_t nr = 0;
      for (size_t b = a; b < n; b++) {
        size_t jb = order[b];
        for (size_t e = 0; parsed[jb] && e < specs[jb].n_datasets; e++)
          if (!strcmp(specs[jb].datasets[e].uri, uri)) {
            reader_idx[nr] = jb;
            readers[nr++] = &specs[jb];
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
      const struct tw_dataset_ref *ref = &specs[ja].datasets[d];
      const char *loc = ref->location;
      struct tw_dataset_put put = {.uri = uri,
                                   .size_bytes = ref->size_bytes,
                                   .locations = &loc,
                                   .n_locations = loc ? 1 : 0};
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

/* The plan of the job being launched, as JSON, for its stored placement;
 * set around the launches of one job (scheduler thread). */
static __thread const char *launch_plan_json;

/* 4. the pending jobs of this pass: the queue in its order
 * (policies/place/queue.h: priority, aging, fair share), shared replication for
 * datasets several of them read, then each job placed in turn. */
static int sched_place_pending(struct tw_sched *s, int64_t now) {
  struct sched_place *p = sched_place_of(s);
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *unused = NULL;
  tw_placer_acquire(sched_placer(p), &set, &unused);
  tw_offer_index_unref(unused);
  sched_index(s, p);
  sched_datasets(s, p);
  sched_health(s, p);
  tw_reservations_release(&p->res);
  tw_reservations_init(&p->res);
  struct tw_err err = {0};
  struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  if (tw_store_attempts_live(s->store, &live, &n_live, &err) == TW_OK)
    sched_usage(s, p, live, n_live);
  free(live);
  /* a window larger than one pass places, so fair share and aging can
   * bring a job from further back */
  int window = s->max_place * 4 < 1024 ? s->max_place * 4 : 1024;
  struct tw_job_rec *queue = NULL;
  size_t n = 0;
  int changes = 0;
  if (tw_store_jobs_queued(s->store, TW_JOB_PENDING, window, &queue, &n,
                           &err)) {
    tw_policy_set_unref(set);
    return 0;
  }
  struct tw_job_spec *specs = tw_calloc(n ? n : 1, sizeof *specs);
  bool *parsed = tw_calloc(n ? n : 1, sizeof *parsed);
  struct tw_queue_job *qj = tw_calloc(n ? n : 1, sizeof *qj);
  size_t *order = tw_calloc(n ? n : 1, sizeof *order);
  for (size_t i = 0; i < n; i++) {
    struct sched_demand d = {0};
    parsed[i] = sched__parse_spec(&queue[i], &specs[i]);
    if (parsed[i])
      demand_of(&specs[i], &d);
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
  sched_replicate(s, p, set, queue, specs, parsed, order, todo, now);
  tw_policy_set_unref(set);
  for (size_t k = 0; k < todo; k++)
    changes += sched__place_job(s, &queue[order[k]], now);
  for (size_t i = 0; i < n; i++) {
    if (parsed[i])
      tw_spec_release(&specs[i]);
    tw_job_rec_release(&queue[i]);
  }
  free(queue);
  free(specs);
  free(parsed);
  free(qj);
  free(order);
  return changes;
}

bool sched__parse_spec(const struct tw_job_rec *job, struct tw_job_spec *spec) {
  struct tw_err err = {0};
  if (tw_spec_parse(job->spec_json, strlen(job->spec_json), true, spec, &err)) {
    tw_log_error("sched", "job=%s stored spec does not parse: %s", job->id,
                 err.msg);
    return false;
  }
  return true;
}

static void placement_json(struct tw_buf *b, const struct tw_offer *o,
                           const struct tw_attempt_rec *a,
                           const char *instance_id, const char (*gang_ids)[128],
                           size_t n_gang, int64_t cost, const char *explain) {
  tw_buf_adds(b, "{\"provider\":");
  tw_buf_json_str(b, o->provider);
  tw_buf_adds(b, ",\"account\":");
  tw_buf_json_str(b, o->account);
  tw_buf_adds(b, ",\"region\":");
  tw_buf_json_str(b, o->region);
  tw_buf_adds(b, ",\"zone\":");
  tw_buf_json_str(b, o->zone);
  tw_buf_adds(b, ",\"instance_type\":");
  tw_buf_json_str(b, o->instance_type);
  tw_buf_printf(b, ",\"market\":\"%s\",\"price_uusd_per_hour\":%lld",
                tw_market_str(o->market), (long long)o->price_uusd_per_hour);
  tw_buf_printf(b,
                ",\"expected_cost_uusd\":%lld,\"attempt\":%d,\"instance_id\":",
                (long long)cost, a->n);
  tw_buf_json_str(b, instance_id);
  if (gang_ids && n_gang > 1) { /* a gang: every node, first = instance_id */
    tw_buf_adds(b, ",\"instance_ids\":[");
    for (size_t k = 0; k < n_gang; k++) {
      if (k)
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, gang_ids[k]);
    }
    tw_buf_addc(b, ']');
  }
  tw_buf_adds(b, ",\"offer_id\":");
  tw_buf_json_str(b, o->id);
  tw_buf_adds(b, ",\"explain\":");
  tw_buf_json_str(b, explain);
  if (launch_plan_json) { /* the candidates and rejections behind it */
    tw_buf_adds(b, ",\"plan\":");
    tw_buf_adds(b, launch_plan_json);
  }
  tw_buf_addc(b, '}');
}

bool sched__is_gang(struct tw_sched *s, const struct tw_job_spec *spec,
                    const char *account) {
  if (spec->nodes <= 1)
    return false;
  struct pcache *pc = sched__provider(s, account);
  /* a batch provider runs the N nodes as one job of its own */
  return !pc || !tw_provider_supports(pc->p, TW_PROV_BATCH);
}

void sched__gang_token(const struct tw_attempt_rec *a, int k, char *out,
                       size_t sz) {
  snprintf(out, sz, "%s-%d", a->client_token, k);
}

/* Launches the N nodes of a gang for attempt a, all or nothing: node k with
 * the client token "<attempt token>-<k>", so a launch resent after a lost
 * answer (or a restart) gets the instances already made.  Each node is
 * stored as soon as it is known.  When one node fails, the nodes already
 * launched are terminated (what a terminate misses, the reconciler ends:
 * their attempt is closed) and the failure's rc is returned with err set.
 * ids[k - 1] is node k's instance. */
static enum tw_rc gang_launch(struct tw_sched *s, struct pcache *pc,
                              const struct tw_launch *base,
                              const struct tw_attempt_rec *a, int nodes,
                              char (*ids)[128], struct tw_err *err) {
  enum tw_rc rc = TW_OK;
  int got = 0;
  for (int k = 1; k <= nodes && rc == TW_OK; k++) {
    char token[64];
    sched__gang_token(a, k, token, sizeof token);
    struct tw_launch req = *base;
    req.client_token = token;
    req.nodes = 1;
    struct tw_instance inst;
    rc = tw_provider_launch(pc->p, &req, &inst, err);
    if (rc != TW_OK)
      break;
    snprintf(ids[k - 1], 128, "%s", inst.id);
    got = k;
    struct tw_err serr = {0};
    if (tw_store_attempt_instance_put(s->store, a->id, k, inst.id, "launched",
                                      &serr))
      tw_log_warn("sched",
                  "job=%s attempt=%d node %d launched %s but not recorded: %s",
                  a->job_id, a->n, k, inst.id, serr.msg);
  }
  if (rc == TW_OK)
    return TW_OK;
  for (int k = 1; k <= got; k++) {
    struct tw_err terr = {0};
    if (tw_provider_terminate(pc->p, ids[k - 1], &terr) == TW_OK)
      tw_store_attempt_instance_put(s->store, a->id, k, ids[k - 1],
                                    "terminated", &terr);
  }
  tw_log_info("sched",
              "job=%s attempt=%d gang of %d: node %d refused (%s); %d node%s "
              "given back",
              a->job_id, a->n, nodes, got + 1, tw_rc_str(rc), got,
              got == 1 ? "" : "s");
  return rc;
}

/* Calls the provider for attempt a on offer o; stores the outcome.
 * Returns the rc of the launch. */
enum tw_rc sched__launch(struct tw_sched *s, const struct tw_job_rec *job,
                         const struct tw_job_spec *spec,
                         const struct tw_attempt_rec *a,
                         const struct tw_offer *o, int64_t cost,
                         const char *explain) {
  struct pcache *pc = sched__provider(s, o->account);
  struct tw_err err = {0};
  if (!pc)
    return tw_err_set(&err, TW_E_INVALID, "provider %s is not configured",
                      o->account);
  /* the same attempt always gets the same user data (the checkpoint
   * contract's prelude is a function of the attempt), so a launch resent
   * with its client token matches the first one */
  struct tw_buf ud;
  tw_buf_init(&ud);
  struct tw_launch req = {
      .offer = o,
      .client_token = a->client_token,
      .job_id = job->id,
      .attempt_id = a->client_token,
      .tenant = job->tenant,
      .max_price_uusd_per_hour = spec->max_price_uusd_per_hour,
      .user_data = sched__spot_user_data(s, job, spec, a, o, &ud),
      .duration_s = spec->duration_s,
      .nodes = spec->nodes,
      .env = spec->env,
      .n_env = spec->n_env};
  struct tw_instance inst;
  int nodes = sched__is_gang(s, spec, o->account) ? spec->nodes : 1;
  char(*ids)[128] = NULL;
  enum tw_rc rc;
  if (nodes > 1) {
    ids = tw_calloc((size_t)nodes, sizeof *ids);
    rc = gang_launch(s, pc, &req, a, nodes, ids, &err);
    if (rc == TW_OK)
      snprintf(inst.id, sizeof inst.id, "%s", ids[0]);
  } else {
    rc = tw_provider_launch(pc->p, &req, &inst, &err);
  }
  tw_buf_release(&ud);
  if (rc == TW_OK) {
    struct tw_buf pj;
    tw_buf_init(&pj);
    placement_json(&pj, o, a, inst.id, (const char(*)[128])ids,
                   ids ? (size_t)nodes : 0, cost, explain);
    free(ids);
    struct tw_err serr = {0};
    if (tw_store_attempt_launched(s->store, a->id, inst.id, pj.data, &serr))
      tw_log_warn("sched", "job=%s attempt=%d launched %s but not recorded: %s",
                  job->id, a->n, inst.id, serr.msg);
    else
      tw_log_info("sched", "job=%s attempt=%d offer=%s instance=%s launched",
                  job->id, a->n, o->id, inst.id);
    if (s->tenancy)
      tw_tenancy_audit_launch(s->tenancy, job, a->n, o, TW_OK, NULL, explain);
    tw_buf_release(&pj);
    sched__spot_launch_ok(s, o, tw_clock_now_ms(s->clock));
    return TW_OK;
  }
  free(ids);
  /* capacity: that offer is full now; rejected: that offer refuses this
   * request (an image missing in that region, say), so both are avoided
   * for this job; failed: nothing wrong with the offer (throttled, auth) */
  sched__spot_launch_failed(s, o, rc, tw_clock_now_ms(s->clock));
  const char *end = rc == TW_E_CAPACITY || rc == TW_E_QUOTA ? "capacity"
                    : rc == TW_E_INVALID                    ? "rejected"
                                                            : "failed";
  if (s->tenancy)
    tw_tenancy_audit_launch(s->tenancy, job, a->n, o, rc, err.msg, explain);
  struct tw_attempt_close c = {
      .attempt_id = a->id, .end_reason = end, .job_to = TW_JOB_NSTATES};
  struct tw_err serr = {0};
  tw_store_attempt_close(s->store, &c, &serr);
  char note[768];
  snprintf(note, sizeof note, "launch on %s refused (%s%s%s): %s", o->id,
           tw_rc_str(rc), err.detail[0] ? " " : "", err.detail, err.msg);
  tw_store_job_note(s->store, job->id, note, &serr);
  return rc;
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

/* 4. one pending job (or, from monitor.c, a recovering one) */
/* The datasets a launch makes move: each dataset that lives elsewhere than
 * the offer's region is read from there, so its bytes leave that region
 * once for this attempt and are metered as egress at the network matrix's
 * price (the one placement's cost model used).  Links the matrix prices
 * at zero (within a region) are not billed.  Shared replicas decided by
 * placement are not moved by the broker and not metered here. */
static void meter_data_moved(struct tw_sched *s, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_attempt_rec *a,
                             const struct tw_offer *o,
                             const struct tw_netmatrix *net, int64_t now) {
  if (!s->meter || !net)
    return;
  char dst[2 * TW_MODEL_NAME_MAX + 2];
  snprintf(dst, sizeof dst, "%s:%s", o->provider, o->region);
  for (size_t i = 0; i < spec->n_datasets; i++) {
    const struct tw_dataset_ref *d = &spec->datasets[i];
    const char *colon = d->location ? strchr(d->location, ':') : NULL;
    if (!colon || d->size_bytes <= 0 || !strcmp(d->location, dst))
      continue;
    struct tw_net_link l;
    tw_netmatrix_link(net, d->location, dst, &l);
    if (l.egress_uusd_per_gb <= 0)
      continue;
    char src_provider[TW_MODEL_NAME_MAX];
    snprintf(src_provider, sizeof src_provider, "%.*s",
             (int)(colon - d->location), d->location);
    struct tw_meter_egress e = {.tenant = job->tenant,
                                .project = job->project,
                                .job_id = job->id,
                                .attempt_id = a->id,
                                .provider = src_provider,
                                .account = src_provider,
                                .region = colon + 1,
                                .dest_region = o->region,
                                .bytes = d->size_bytes,
                                .price_uusd_per_gb = l.egress_uusd_per_gb,
                                .at_ms = now};
    struct tw_err err = {0};
    if (tw_meter_egress(s->meter, &e, NULL, &err))
      tw_log_warn("billing", "job=%s dataset=%s egress not metered: %s",
                  job->id, d->uri, err.msg);
  }
}

int sched__place_job(struct tw_sched *s, const struct tw_job_rec *job,
                     int64_t now) {
  struct backoff *b = backoff_find(s, job->id);
  if (b && now < b->not_before_ms)
    return 0;
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (!sched__parse_spec(job, &spec))
    return 0;
  int changes = 0;
  struct tw_attempt_rec *past = NULL;
  size_t n_past = 0;
  tw_store_attempts_of(s->store, job->id, &past, &n_past, &err);
  const char **excl = tw_calloc(n_past + 1, sizeof *excl);
  size_t n_excl = 0;
  for (size_t i = 0; i < n_past; i++)
    if (sched__spot_excludes(s, &past[i], now))
      excl[n_excl++] = past[i].offer_id;

  /* the spot lifecycle: blocklisted offers, the fallback strategy's
   * market and order */
  struct spot_plan plan;
  sched__spot_plan(s, job, &spec, past, n_past, now, &excl, &n_excl, &plan);

  /* placement: the policy set in force, the plan with its explanation */
  struct sched_place *sp = sched_place_of(s);
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *pix = NULL;
  tw_placer_acquire(sched_placer(sp), &set, &pix);
  tw_offer_index_unref(pix); /* plans here use the scheduler's own index */
  sched_index(s, sp);
  /* A plan without counts first: a job that fits nowhere, in the same
   * situation as at its last pass, is not counted (nor noted) again. */
  struct tw_plan pplan;
  sched_plan(s, sp, job, &spec, excl, n_excl, now, set, false, &pplan);
  uint64_t wkey = wait_key(sp, set, job, excl, n_excl);
  struct sched_wait *wt = wait_of(sp, job->id);
  bool counted = pplan.n || wt->key != wkey;
  if (counted) {
    tw_plan_release(&pplan);
    sched_plan(s, sp, job, &spec, excl, n_excl, now, set, true, &pplan);
    wt->key = pplan.n ? 0 : wkey;
  }
  char explain[512];
  struct tw_buf eb, planj;
  tw_buf_init(&eb);
  tw_buf_init(&planj);
  tw_plan_explain(&pplan, &eb);
  snprintf(explain, sizeof explain, "%s", eb.data ? eb.data : "");
  tw_buf_release(&eb);
  tw_plan_to_json(&pplan, 5, &planj);
  sched__spot_order(s, job, &plan, &pplan, explain, sizeof explain, now);
  struct tw_plan *pl = &pplan;
  if (pl->n == 0) {
    char note[600];
    if (counted) {
      snprintf(note, sizeof note, "no offer fits: %s", explain);
      note_once(s, sp, job->id, note);
    }
    sched_reserve(s, sp, job, &spec, now, set);
    goto out;
  }
  if (s->tenancy && tw_tenancy_place_filter(s->tenancy, job, &spec, pl))
    goto out; /* nothing within the tenant's quota now (noted once) */
  bool placed = false, opened = false, retry_later = false;
  for (size_t i = 0; i < pl->n && !placed; i++) {
    const struct tw_offer *o = pl->cands[i].offer;
    char why[1100];
    char cost[32];
    tw_policy_fmt_uusd(pl->cands[i].cost.total_uusd, cost, sizeof cost);
    snprintf(why, sizeof why, "%s %s, expected %s (%s)",
             i ? "next best offer" : "best offer", o->id, cost, explain);
    struct tw_attempt_new an = {.job_id = job->id,
                                .provider = o->account,
                                .offer_id = o->id,
                                .market = tw_market_str(o->market),
                                .price_uusd_per_hour = o->price_uusd_per_hour,
                                .reason = why};
    struct tw_attempt_rec a;
    struct tw_err aerr = {0};
    if (s->tenancy) /* the job's share, held while its attempt lives */
      tw_tenancy_place_commit(s->tenancy, job, &spec, o);
    if (tw_store_attempt_open(s->store, &an, &a, &aerr)) {
      /* cancelled meanwhile, most likely */
      break;
    }
    opened = true;
    changes++;
    launch_plan_json = planj.data;
    enum tw_rc rc = sched__launch(s, job, &spec, &a, o,
                                  pl->cands[i].cost.total_uusd, explain);
    launch_plan_json = NULL;
    if (rc == TW_OK) {
      placed = true;
      meter_data_moved(s, job, &spec, &a, o, set ? set->net : NULL, now);
      if (o->capacity >= 0) /* private: these nodes are taken until relisted */
        tw_capacity_view_take(&sp->cap, o->id, spec.nodes > 0 ? spec.nodes : 1);
    } else if (rc != TW_E_CAPACITY && rc != TW_E_QUOTA && rc != TW_E_INVALID) {
      retry_later = true; /* throttled, auth, down: not the offer's fault */
      break;
    }
  }
  if (opened && !placed) {
    char why[128] = "launch failed; waiting to place again";
    if (retry_later)
      snprintf(why, sizeof why, "launch failed; trying again in %lld s",
               (long long)(backoff_bump(s, job->id, now) / 1000));
    struct tw_job_transition t = {
        .id = job->id, .to = TW_JOB_PENDING, .reason = why};
    tw_store_job_transition(s->store, &t, NULL, &err);
  }
  if (placed)
    backoff_clear(s, job->id);
out:
  tw_plan_release(&pplan);
  tw_buf_release(&planj);
  tw_policy_set_unref(set);
  free(excl);
  free(past);
  tw_spec_release(&spec);
  return changes;
}

int tw_sched_tick(struct tw_sched *s) {
  int changes = 0;
  int64_t now = tw_clock_now_ms(s->clock);
  refresh_offers(s, now);
  if (s->tenancy) /* what each tenant holds: live attempts' reservations */
    tw_tenancy_place_begin(s->tenancy);

  changes += sched__follow(s, now);

  changes += sched_place_pending(s, now);
  return changes;
}

static void *loop_main(void *arg) {
  struct tw_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    pthread_mutex_unlock(&s->mu);
    tw_sched_tick(s);
    pthread_mutex_lock(&s->mu);
    if (s->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += s->tick_ms / 1000;
    ts.tv_nsec += (s->tick_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

enum tw_rc tw_sched_start(struct tw_sched *s, struct tw_err *err) {
  if (pthread_create(&s->thread, NULL, loop_main, s) != 0)
    return tw_err_set(err, TW_E_INTERNAL,
                      "sched: cannot start the loop thread");
  s->started = true;
  return TW_OK;
}

void tw_sched_free(struct tw_sched *s) {
  if (!s)
    return;
  if (s->started) {
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
  }
  pthread_mutex_lock(&sched_cat_mu);
  struct sched_catalog **pp = &sched_cats, *sc = NULL;
  while (*pp && (*pp)->s != s)
    pp = &(*pp)->next;
  if (*pp) {
    sc = *pp;
    *pp = sc->next;
  }
  pthread_mutex_unlock(&sched_cat_mu);
  if (sc && sc->own)
    tw_catalog_free(sc->cat);
  free(sc);
  for (size_t i = 0; i < s->n_pc; i++)
    tw_offer_list_release(&s->pc[i].offers);
  sched__offers_changing(s);
  tw_offer_list_release(&s->all);
  sched_place_free(s);
  free(s->pc);
  free(s->backoff);
  sched__spot_free(s);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
