/* plan.c - the placement runner: staged filters, the index search, scores,
 * and the explanation (plan.h). */
#include "policies/place/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "policies/place/cost.h"
#include "policies/place/index_int.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy_int.h"

#define STAGE_SLOTS 32
#define DATA_SLOTS 16
#define ROWS_SLOTS 32

/* ---- the workspace: caches and scratch ------------------------------------
 */

struct stage_entry {
  bool used, full;
  uint64_t h, ix_gen, set_gen, stamp;
  char *key;
  size_t keylen;
  size_t n;         /* locations or shapes */
  uint8_t *verdict; /* 0 feasible, else 1 + filter index in the set */
  uint32_t *ok;     /* feasible ids */
  size_t n_ok;
  uint64_t ok_offers; /* offers they hold */
  int64_t min_price;  /* shapes: the cheapest feasible shape's price */
  size_t n_groups;    /* shapes: their (shape, region) lists */
  /* shapes, built when a search first needs them: every offer of a
   * feasible shape by (price, id rank), and the same per region. */
  uint32_t *feas;
  size_t n_feas;
  uint32_t *feas_by_region;
  struct ix_range *feas_region; /* per region: its range in feas_by_region */
  uint64_t feas_stamp;
  uint64_t hits; /* decisions that used this entry */
  char reason[TW_POLICY_MAX_FILTERS][128];
  int64_t amount[TW_POLICY_MAX_FILTERS];
  bool seen[TW_POLICY_MAX_FILTERS];
  /* one offer each filter refused: a representative of the index (valid
   * as long as the index the entry was built for) */
  const struct tw_offer *example[TW_POLICY_MAX_FILTERS];
};

struct data_entry {
  bool used, has;
  uint64_t h, ix_gen, set_gen, ds_gen, stamp;
  char *key;
  size_t keylen;
  struct tw_job_data d;
};

struct rows_entry {
  bool used;
  uint64_t ix_gen, set_gen, stamp;
  char src[160];
  struct tw_net_link *links;
};

struct tw_plan_ws {
  uint64_t clock;
  struct stage_entry loc[STAGE_SLOTS], shape[STAGE_SLOTS];
  struct data_entry data[DATA_SLOTS];
  struct rows_entry rows[ROWS_SLOTS];
  struct tw_buf key;
  struct hitem *heap;
  size_t heap_cap;
  struct tw_cand *top;
  size_t top_cap;
  uint8_t *region_ok;
  size_t region_cap;
  struct tw_offer scratch;
  /* for the rows callback, during one plan */
  const struct tw_offer_index *ix;
  const struct tw_policy_set *set;
};

struct tw_plan_ws *tw_plan_ws_new(void) {
  struct tw_plan_ws *ws = tw_calloc(1, sizeof *ws);
  tw_buf_init(&ws->key);
  return ws;
}

static void feas_clear(struct stage_entry *e) {
  free(e->feas);
  free(e->feas_by_region);
  free(e->feas_region);
  e->feas = e->feas_by_region = NULL;
  e->feas_region = NULL;
  e->n_feas = 0;
}

static void stage_clear(struct stage_entry *e) {
  free(e->key);
  free(e->verdict);
  free(e->ok);
  feas_clear(e);
  memset(e, 0, sizeof *e);
}

void tw_plan_ws_free(struct tw_plan_ws *ws) {
  if (!ws)
    return;
  for (int i = 0; i < STAGE_SLOTS; i++) {
    stage_clear(&ws->loc[i]);
    stage_clear(&ws->shape[i]);
  }
  for (int i = 0; i < DATA_SLOTS; i++) {
    free(ws->data[i].key);
    tw_job_data_release(&ws->data[i].d);
  }
  for (int i = 0; i < ROWS_SLOTS; i++)
    free(ws->rows[i].links);
  tw_buf_release(&ws->key);
  free(ws->heap);
  free(ws->top);
  free(ws->region_ok);
  free(ws);
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* The network row from src to every region of the index, cached. */
static const struct tw_net_link *rows_fn(void *arg, const char *src) {
  struct tw_plan_ws *ws = arg;
  uint64_t ig = ws->ix->generation, sg = ws->set->generation;
  struct rows_entry *victim = &ws->rows[0];
  for (int i = 0; i < ROWS_SLOTS; i++) {
    struct rows_entry *e = &ws->rows[i];
    if (e->used && e->ix_gen == ig && e->set_gen == sg &&
        !strcmp(e->src, src)) {
      e->stamp = ++ws->clock;
      return e->links;
    }
    if (!e->used || e->stamp < victim->stamp)
      victim = e;
  }
  free(victim->links);
  victim->used = true;
  victim->ix_gen = ig;
  victim->set_gen = sg;
  victim->stamp = ++ws->clock;
  snprintf(victim->src, sizeof victim->src, "%s", src);
  size_t n = ws->ix->n_regions;
  victim->links = tw_malloc((n ? n : 1) * sizeof *victim->links);
  for (size_t r = 0; r < n; r++)
    tw_netmatrix_link(ws->set->net, src, ws->ix->regions[r].key,
                      &victim->links[r]);
  return victim->links;
}

/* ---- one run ----------------------------------------------------------------
 */

struct run {
  const struct tw_policy_set *set;
  const struct tw_offer_index *ix;
  const struct tw_plan_input *in;
  struct tw_plan_ws *ws;
  struct tw_place_ctx ctx;
  struct tw_cost_job cj;
  const struct stage_entry *ls, *ss;
  size_t k; /* candidates wanted */
  size_t n_top;
  uint64_t visited;
  uint64_t steps;       /* list entries looked at */
  int64_t price_cap;    /* 0: none (the price filter's bound) */
  const char *force;    /* a strategy named by the caller (tests) */
  uint8_t market_ok[4]; /* the market filter's answer per market, so the
                           search skips the others without visiting */
  /* offer-stage filters, in set order */
  const struct tw_policy *of[TW_POLICY_MAX_FILTERS];
  size_t of_idx[TW_POLICY_MAX_FILTERS];
  size_t n_of;
  bool counting;
  uint64_t counts[TW_POLICY_MAX_FILTERS];
  char example[TW_POLICY_MAX_FILTERS][TW_MODEL_ID_MAX]; /* the offer stage */
  char reason[TW_POLICY_MAX_FILTERS][128];
  int64_t amount[TW_POLICY_MAX_FILTERS];
  bool seen[TW_POLICY_MAX_FILTERS];
  uint64_t feasible;
  /* per location: its provider's launch overhead, -1 the default (NULL
   * when policies.cost.launch_overheads names none) */
  int64_t *loc_launch;
  /* the counting pass after the search found the candidates: offers are
   * counted, not ranked */
  bool count_only;
};

static unsigned scope_of(const struct tw_policy *p) {
  unsigned s = p->ops->scope;
  return s == TW_SCOPE_LOCATION || s == TW_SCOPE_SHAPE ? s : TW_SCOPE_OFFER;
}

static void note_reason(char reason[][128], int64_t *amount, bool *seen,
                        size_t f, const struct tw_verdict *v) {
  if (!seen[f] || (v->amount && v->amount < amount[f])) {
    seen[f] = true;
    amount[f] = v->amount;
    snprintf(reason[f], sizeof reason[f], "%s",
             v->reason[0] ? v->reason : "refused");
  }
}

/* The cache key of a stage: each of its filters' keys, or false when one
 * of them cannot say what it reads. */
static bool stage_key(struct run *r, unsigned scope, struct tw_buf *b) {
  tw_buf_reset(b);
  for (size_t i = 0; i < r->set->n_filters; i++) {
    const struct tw_policy *p = &r->set->filters[i];
    if (scope_of(p) != scope)
      continue;
    if (!p->ops->key)
      return false;
    pi_key_str(b, p->name);
    p->ops->key(p, &r->ctx, b);
  }
  return true;
}

/* Evaluates the stage's filters on one representative; 0 or 1 + index. */
static uint8_t stage_eval(struct run *r, unsigned scope,
                          const struct tw_offer *rep, struct stage_entry *e) {
  for (size_t i = 0; i < r->set->n_filters; i++) {
    const struct tw_policy *p = &r->set->filters[i];
    if (scope_of(p) != scope)
      continue;
    struct tw_verdict v = {.pass = true};
    p->ops->filter(p, &r->ctx, rep, &v);
    if (!v.pass) {
      note_reason(e->reason, e->amount, e->seen, i, &v);
      if (!e->example[i])
        e->example[i] = rep;
      return (uint8_t)(i + 1);
    }
  }
  return 0;
}

static size_t set_index_of(const struct tw_policy_set *s,
                           const struct tw_policy_ops *ops) {
  for (size_t i = 0; i < s->n_filters; i++)
    if (s->filters[i].ops == ops)
      return i;
  return SIZE_MAX;
}

static void shape_summary(const struct tw_offer_index *ix,
                          struct stage_entry *e) {
  e->min_price = INT64_MAX;
  for (size_t i = 0; i < e->n_ok; i++) {
    const struct ix_shape *sh = &ix->shapes[e->ok[i]];
    if (sh->min_price < e->min_price)
      e->min_price = sh->min_price;
    e->n_groups += sh->groups.count;
  }
}

static const struct stage_entry *stage_run(struct run *r, unsigned scope,
                                           bool need_full) {
  struct tw_plan_ws *ws = r->ws;
  struct stage_entry *slots = scope == TW_SCOPE_LOCATION ? ws->loc : ws->shape;
  bool cacheable = stage_key(r, scope, &ws->key);
  uint64_t h = cacheable ? fnv(ws->key.data, ws->key.len) : 0;
  uint64_t ig = r->ix->generation, sg = r->set->generation;
  struct stage_entry *victim = &slots[0];
  for (int i = 0; i < STAGE_SLOTS; i++) {
    struct stage_entry *e = &slots[i];
    if (cacheable && e->used && e->h == h && e->ix_gen == ig &&
        e->set_gen == sg && e->keylen == ws->key.len &&
        !memcmp(e->key, ws->key.data, e->keylen) && (e->full || !need_full)) {
      e->stamp = ++ws->clock;
      e->hits++;
      return e;
    }
    if (!e->used || (victim->used && e->stamp < victim->stamp))
      victim = e;
  }
  /* an uncacheable stage uses the least recent slot and marks it unused */
  struct stage_entry *e = victim;
  stage_clear(e);
  e->h = h;
  e->ix_gen = ig;
  e->set_gen = sg;
  e->stamp = ++ws->clock;
  e->used = cacheable;
  if (cacheable) {
    e->key = tw_malloc(ws->key.len ? ws->key.len : 1);
    memcpy(e->key, ws->key.data, ws->key.len);
    e->keylen = ws->key.len;
  }
  const struct tw_offer_index *ix = r->ix;
  e->n = scope == TW_SCOPE_LOCATION ? ix->n_locs : ix->n_shapes;
  e->verdict = tw_calloc(e->n ? e->n : 1, 1);
  e->ok = tw_malloc((e->n ? e->n : 1) * sizeof *e->ok);
  e->full = true;
  if (scope == TW_SCOPE_LOCATION) {
    for (size_t l = 0; l < ix->n_locs; l++) {
      r->ctx.region = (int32_t)ix->locs[l].region;
      e->verdict[l] = stage_eval(r, scope, &ix->reps[ix->locs[l].rep], e);
      if (!e->verdict[l]) {
        e->ok[e->n_ok++] = (uint32_t)l;
        e->ok_offers += ix->locs[l].all.count;
      }
    }
    r->ctx.region = -1;
    return e;
  }
  /* Shapes.  Without counts, a job asking for an accelerator only looks
   * at that family's shapes: the accelerators filter refuses the rest. */
  size_t acc = set_index_of(r->set, &tw_filter_accelerators);
  const struct tw_job_spec *job = r->in->job;
  const char *want = job->accel_name;
  char fam[24];
  bool one_family = want && !strpbrk(want, "*?");
  if (one_family) {
    /* every alternative of one family without a glob */
    ix_family_of(want, fam);
    for (size_t k = 1; k < job->n_accels && one_family; k++) {
      char other[24];
      ix_family_of(job->accels[k].name, other);
      one_family = !strpbrk(job->accels[k].name, "*?") && !strcmp(fam, other);
    }
  }
  if (!need_full && one_family && acc != SIZE_MAX) {
    const struct ix_family *f = ix_family_find(ix, fam);
    memset(e->verdict, (int)(acc + 1), e->n);
    e->full = false;
    e->seen[acc] = true;
    snprintf(e->reason[acc], sizeof e->reason[acc], "without %s", want);
    for (size_t k = 0; f && k < f->n; k++) {
      uint32_t s = f->shapes[k];
      e->verdict[s] = stage_eval(r, scope, &ix->reps[ix->shapes[s].rep], e);
      if (!e->verdict[s]) {
        e->ok[e->n_ok++] = s;
        e->ok_offers += ix->shapes[s].all.count;
      }
    }
    /* keep ok[] in shape order, as a full evaluation would */
    for (size_t a = 1; a < e->n_ok; a++)
      for (size_t b = a; b > 0 && e->ok[b - 1] > e->ok[b]; b--) {
        uint32_t t = e->ok[b];
        e->ok[b] = e->ok[b - 1];
        e->ok[b - 1] = t;
      }
    shape_summary(ix, e);
    return e;
  }
  for (size_t s = 0; s < ix->n_shapes; s++) {
    e->verdict[s] = stage_eval(r, scope, &ix->reps[ix->shapes[s].rep], e);
    if (!e->verdict[s]) {
      e->ok[e->n_ok++] = (uint32_t)s;
      e->ok_offers += ix->shapes[s].all.count;
    }
  }
  shape_summary(ix, e);
  return e;
}

/* The job's data costs per region, cached per distinct dataset list. */
static const struct tw_job_data *job_data(struct run *r,
                                          const struct tw_dataset_set *ds) {
  const struct tw_job_spec *s = r->in->job;
  if (!s->n_datasets)
    return NULL;
  struct tw_plan_ws *ws = r->ws;
  tw_buf_reset(&ws->key);
  pi_key_str(&ws->key, s->tenant); /* it decides which datasets it sees */
  for (size_t i = 0; i < s->n_datasets; i++) {
    pi_key_str(&ws->key, s->datasets[i].uri);
    pi_key_str(&ws->key, s->datasets[i].location);
    pi_key_int(&ws->key, s->datasets[i].size_bytes);
  }
  uint64_t h = fnv(ws->key.data, ws->key.len);
  uint64_t ig = r->ix->generation, sg = r->set->generation, dg = ds->generation;
  struct data_entry *victim = &ws->data[0];
  for (int i = 0; i < DATA_SLOTS; i++) {
    struct data_entry *e = &ws->data[i];
    if (e->used && e->h == h && e->ix_gen == ig && e->set_gen == sg &&
        e->ds_gen == dg && e->keylen == ws->key.len &&
        !memcmp(e->key, ws->key.data, e->keylen)) {
      e->stamp = ++ws->clock;
      return e->has ? &e->d : NULL;
    }
    if (!e->used || (victim->used && e->stamp < victim->stamp))
      victim = e;
  }
  struct data_entry *e = victim;
  free(e->key);
  tw_job_data_release(&e->d);
  e->used = true;
  e->h = h;
  e->ix_gen = ig;
  e->set_gen = sg;
  e->ds_gen = dg;
  e->stamp = ++ws->clock;
  e->key = tw_malloc(ws->key.len);
  memcpy(e->key, ws->key.data, ws->key.len);
  e->keylen = ws->key.len;
  ws->ix = r->ix;
  ws->set = r->set;
  e->has =
      tw_job_data_build(s, ds, r->set->net, &r->set->cost, r->ix->region_keys,
                        r->ix->n_regions, rows_fn, ws, &e->d);
  return e->has ? &e->d : NULL;
}

/* ---- the candidates: a max-heap on (cost, id rank) of at most k -------- */

static bool worse(const struct tw_cand *a, const struct tw_cand *b) {
  if (a->cost.total_uusd != b->cost.total_uusd)
    return a->cost.total_uusd > b->cost.total_uusd;
  return a->id_rank > b->id_rank;
}

static void top_push(struct run *r, const struct tw_cand *c) {
  struct tw_cand *t = r->ws->top;
  size_t i;
  if (r->n_top < r->k) {
    i = r->n_top++;
    while (i > 0 && worse(c, &t[(i - 1) / 2])) {
      t[i] = t[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    t[i] = *c;
    return;
  }
  if (!worse(&t[0], c))
    return;
  i = 0;
  for (;;) {
    size_t l = 2 * i + 1, m = l + 1, big = i;
    const struct tw_cand *bv = c;
    if (l < r->n_top && worse(&t[l], bv))
      big = l, bv = &t[l];
    if (m < r->n_top && worse(&t[m], bv))
      big = m;
    if (big == i)
      break;
    t[i] = t[big];
    i = big;
  }
  t[i] = *c;
}

/* Could an offer of this cost and id rank still enter the candidates? */
static bool could_enter(const struct run *r, int64_t cost, uint32_t id_rank) {
  if (r->n_top < r->k)
    return true;
  const struct tw_cand *w = &r->ws->top[0];
  return cost < w->cost.total_uusd ||
         (cost == w->cost.total_uusd && id_rank < w->id_rank);
}

static void offer_cost(const struct run *r, const struct ix_offer *c,
                       int32_t region, struct tw_cost *out) {
  struct tw_cost_offer co = {.price_uusd_per_hour = c->price,
                             .granularity_s = c->granularity_s,
                             .min_charge_s = c->min_charge_s,
                             .interruption_pct = c->intr_pct,
                             .spot = c->market == TW_MARKET_SPOT,
                             .private_capacity =
                                 c->market == TW_MARKET_PRIVATE};
  if (r->loc_launch && r->loc_launch[c->loc] >= 0) {
    co.has_launch_overhead = true;
    co.launch_overhead_s = r->loc_launch[c->loc];
  }
  const struct tw_job_data *d = r->ctx.data;
  tw_cost_eval(&r->set->cost, &r->cj, &co, d ? d->egress_uusd[region] : 0,
               d ? d->transfer_s[region] : 0, out);
}

/* Visits offer i: both stages already passed.  In counting mode every
 * filter runs; otherwise an offer that cannot enter the candidates is
 * dropped before its filters. */
/* Counting: whether built-in offer filter f decides offer c from the
 * index alone.  1: it passes; -1: it refuses (counted without its reason,
 * which was seen already); 0: the offer is needed. */
static int quick_verdict(struct run *r, size_t f, const struct ix_offer *c,
                         const struct tw_cost *cost) {
  const struct tw_policy *p = r->of[f];
  const struct tw_policy_ops *ops = p->ops;
  size_t fi = r->of_idx[f];
  if (ops == &tw_filter_market) {
    if (r->market_ok[c->market & 3])
      return 1;
    return r->seen[fi] ? -1 : 0;
  }
  if (ops == &tw_filter_price) {
    if (!r->price_cap || c->price <= r->price_cap)
      return 1;
    if (!r->seen[fi] || c->price - r->price_cap < r->amount[fi])
      return 0; /* the closest miss keeps its reason and amount */
    return -1;
  }
  if (ops == &tw_filter_excluded)
    return r->ctx.n_excluded ? 0 : 1;
  if (ops == &tw_filter_blocklist)
    return r->ctx.blocklist->blocked ? 0 : 1;
  if (ops == &tw_filter_capacity || ops == &tw_filter_backfill)
    return c->flags & IX_OFFER_CAPACITY ? 0 : 1;
  if (ops == &tw_filter_price_sanity)
    return c->flags & IX_OFFER_QUARANTINE ? 0 : 1;
  if (ops == &tw_filter_deadline) {
    /* it reads the model's finish, not the offer */
    int64_t deadline = r->ctx.job->deadline_ms;
    if (!deadline || cost->finish_ms <= deadline)
      return 1;
    int64_t short_s = (cost->finish_ms - deadline + 999) / 1000;
    return r->seen[fi] && short_s >= r->amount[fi] ? -1 : 0;
  }
  return 0; /* a plugin, or a filter that reads the offer */
}

/* The counting pass: the offer filters' verdict on offer i, counted.  The
 * cost model runs only where a filter reads it (the deadline) or the
 * offer has to be made. */
static void count_offer(struct run *r, uint32_t i) {
  const struct tw_offer_index *ix = r->ix;
  const struct ix_offer *c = &ix->offers[i];
  int32_t region = (int32_t)ix->locs[c->loc].region;
  struct tw_cost cost;
  bool have_cost = r->ctx.job->deadline_ms != 0;
  if (have_cost)
    offer_cost(r, c, region, &cost);
  size_t f = 0;
  for (; f < r->n_of; f++) {
    int q = quick_verdict(r, f, c, &cost);
    if (q < 0) {
      r->counts[r->of_idx[f]]++;
      return;
    }
    if (!q)
      break;
  }
  if (f == r->n_of) {
    r->feasible++;
    return;
  }
  if (!have_cost)
    offer_cost(r, c, region, &cost);
  const struct tw_offer *o = ix->src.get(&ix->src, i, &r->ws->scratch);
  r->ctx.region = region;
  r->ctx.offer_cost = &cost;
  for (f = 0; f < r->n_of; f++) {
    struct tw_verdict v;
    v.pass = true;
    v.reason[0] = '\0';
    v.amount = 0;
    r->of[f]->ops->filter(r->of[f], &r->ctx, o, &v);
    if (!v.pass) {
      size_t fi = r->of_idx[f];
      r->counts[fi]++;
      note_reason(r->reason, r->amount, r->seen, fi, &v);
      if (!r->example[fi][0])
        snprintf(r->example[fi], sizeof r->example[fi], "%s", o->id);
      r->ctx.offer_cost = NULL;
      return;
    }
  }
  r->ctx.offer_cost = NULL;
  r->feasible++;
}

static void visit(struct run *r, uint32_t i) {
  if (r->count_only) {
    count_offer(r, i);
    return;
  }
  const struct tw_offer_index *ix = r->ix;
  const struct ix_offer *c = &ix->offers[i];
  r->visited++;
  int32_t region = (int32_t)ix->locs[c->loc].region;
  struct tw_cost cost;
  offer_cost(r, c, region, &cost);
  if (!r->counting && !could_enter(r, cost.total_uusd, c->id_rank))
    return;
  if (r->counting) {
    /* most offers of a counted plan are decided without being made */
    size_t f = 0;
    for (; f < r->n_of; f++) {
      int q = quick_verdict(r, f, c, &cost);
      if (q < 0) {
        r->counts[r->of_idx[f]]++;
        return;
      }
      if (!q)
        break;
    }
    if (f == r->n_of) {
      r->feasible++;
      if (could_enter(r, cost.total_uusd, c->id_rank)) {
        struct tw_cand cand = {
            .index = i, .id_rank = c->id_rank, .region = region, .cost = cost};
        top_push(r, &cand);
      }
      return;
    }
  }
  const struct tw_offer *o = ix->src.get(&ix->src, i, &r->ws->scratch);
  r->ctx.region = region;
  r->ctx.offer_cost = &cost;
  for (size_t f = 0; f < r->n_of; f++) {
    struct tw_verdict v;
    v.pass = true;
    v.reason[0] = '\0';
    v.amount = 0;
    r->of[f]->ops->filter(r->of[f], &r->ctx, o, &v);
    if (!v.pass) {
      if (r->counting) {
        size_t fi = r->of_idx[f];
        r->counts[fi]++;
        note_reason(r->reason, r->amount, r->seen, fi, &v);
        if (!r->example[fi][0])
          snprintf(r->example[fi], sizeof r->example[fi], "%s", o->id);
      }
      r->ctx.offer_cost = NULL;
      return;
    }
  }
  r->ctx.offer_cost = NULL;
  r->feasible++;
  struct tw_cand cand = {
      .index = i, .id_rank = c->id_rank, .region = region, .cost = cost};
  top_push(r, &cand);
}

/* Whether the offer filters judge every offer of a cell without flags by
 * its market alone (and its price, against the cell's dearest). */
static bool cells_countable(const struct run *r) {
  for (size_t f = 0; f < r->n_of; f++) {
    const struct tw_policy_ops *ops = r->of[f]->ops;
    if (ops == &tw_filter_market || ops == &tw_filter_price ||
        ops == &tw_filter_capacity || ops == &tw_filter_backfill ||
        ops == &tw_filter_price_sanity)
      continue;
    if (ops == &tw_filter_excluded && !r->ctx.n_excluded)
      continue;
    if (ops == &tw_filter_blocklist && !r->ctx.blocklist->blocked)
      continue;
    if (ops == &tw_filter_deadline && !r->ctx.job->deadline_ms)
      continue;
    return false;
  }
  return true;
}

/* The counting pass by (shape, location) cell: a refused cell counts
 * whole, a cell of plain cloud offers within the price cap counts by
 * market, the rest offer by offer. */
static void count_cells(struct run *r) {
  const struct tw_offer_index *ix = r->ix;
  size_t mf = SIZE_MAX; /* the market filter's index in the set */
  for (size_t f = 0; f < r->n_of; f++)
    if (r->of[f]->ops == &tw_filter_market)
      mf = r->of_idx[f];
  bool spot_ok = r->market_ok[TW_MARKET_SPOT],
       od_ok = r->market_ok[TW_MARKET_ON_DEMAND];
  for (size_t k = 0; k < ix->n_cells; k++) {
    const struct ix_cell *cell = &ix->cells[k];
    uint8_t lv = r->ls->verdict[cell->loc];
    if (lv) {
      r->counts[lv - 1] += cell->r.count;
      continue;
    }
    uint8_t sv = r->ss->verdict[cell->shape];
    if (sv) {
      r->counts[sv - 1] += cell->r.count;
      continue;
    }
    uint32_t n = cell->r.count, spot = cell->n_spot, od = n - spot;
    uint32_t refused = (spot_ok ? 0 : spot) + (od_ok ? 0 : od);
    /* the cell's dearest offer is its last (a look into the offers only
     * for a job with a price cap) */
    if (!cell->flags &&
        (!r->price_cap ||
         ix->offers[ix->by_cell[cell->r.start + n - 1]].price <=
             r->price_cap) &&
        (!refused || (mf != SIZE_MAX && r->seen[mf]))) {
      if (refused)
        r->counts[mf] += refused;
      r->feasible += n - refused;
      r->visited += n;
      continue;
    }
    for (uint32_t j = 0; j < n; j++)
      count_offer(r, ix->by_cell[cell->r.start + j]);
  }
}

static void scan(struct run *r) {
  const struct tw_offer_index *ix = r->ix;
  if (r->count_only && ix->n_cells && cells_countable(r)) {
    count_cells(r);
    return;
  }
  for (size_t i = 0; i < ix->n; i++) {
    const struct ix_offer *c = &ix->offers[i];
    uint8_t lv = r->ls->verdict[c->loc];
    if (lv) {
      r->counts[lv - 1]++;
      continue;
    }
    uint8_t sv = r->ss->verdict[c->shape];
    if (sv) {
      r->counts[sv - 1]++;
      continue;
    }
    visit(r, (uint32_t)i);
  }
}

#define STEP 1.0
#define PUSH 3.0
#define CELL 6.0
#define BUILD 0.1

/* The feasible lists of all shape entries of a workspace take at most
 * this much memory (8 bytes per listed offer); the least recently used
 * lists go first. */
#define FEAS_BUDGET_BYTES (512u << 20)

/* Builds the shape entry's feasible lists: one pass over every offer in
 * price order.  Cached with the entry, so the jobs of one kind pay it
 * once per index. */
static void feas_build(struct run *r, struct stage_entry *e) {
  const struct tw_offer_index *ix = r->ix;
  struct tw_plan_ws *ws = r->ws;
  e->feas_stamp = ++ws->clock;
  if (e->feas)
    return;
  for (;;) {
    size_t bytes = 8 * (size_t)e->ok_offers;
    struct stage_entry *old = NULL;
    for (int i = 0; i < STAGE_SLOTS; i++)
      if (ws->shape[i].feas && &ws->shape[i] != e) {
        bytes += 8 * ws->shape[i].n_feas;
        if (!old || ws->shape[i].feas_stamp < old->feas_stamp)
          old = &ws->shape[i];
      }
    if (bytes <= FEAS_BUDGET_BYTES || !old)
      break;
    feas_clear(old);
  }
  e->feas = tw_malloc((e->ok_offers ? e->ok_offers : 1) * sizeof *e->feas);
  e->feas_by_region =
      tw_malloc((e->ok_offers ? e->ok_offers : 1) * sizeof *e->feas_by_region);
  e->feas_region = tw_calloc(ix->n_regions + 1, sizeof *e->feas_region);
  const uint8_t *sv = e->verdict;
  for (size_t q = 0; q < ix->n; q++) {
    uint32_t i = ix->by_price[q];
    if (!sv[ix->offers[i].shape]) {
      e->feas[e->n_feas++] = i;
      e->feas_region[ix->locs[ix->offers[i].loc].region].count++;
    }
  }
  uint32_t at = 0;
  for (size_t g = 0; g < ix->n_regions; g++) {
    e->feas_region[g].start = at;
    at += e->feas_region[g].count;
    e->feas_region[g].count = 0;
  }
  for (size_t q = 0; q < e->n_feas; q++) {
    uint32_t i = e->feas[q];
    struct ix_range *rg = &e->feas_region[ix->locs[ix->offers[i].loc].region];
    e->feas_by_region[rg->start + rg->count++] = i;
  }
}

/* ---- the search
 * ---------------------------------------------------------------- */

/* The model's lower bound for an offer at price in a region with these
 * data costs; 64-bit arithmetic when it cannot overflow. */
static int64_t lb_of(const struct run *r, int64_t price, int64_t egress,
                     int64_t transfer) {
  int64_t secs = r->cj.duration_s + transfer;
  int64_t nodes = r->cj.nodes > 0 ? r->cj.nodes : 1;
  if (price < (1LL << 31) && secs < (1LL << 25) && nodes < (1LL << 6))
    return price * secs * nodes / 3600 + egress;
  return tw_cost_lower_bound(&r->cj, price, egress, transfer);
}

/* Is the worst kept candidate already cheaper than anything at this lower
 * bound? */
static bool beyond(const struct run *r, int64_t lb) {
  return r->n_top == r->k && lb > r->ws->top[0].cost.total_uusd;
}

struct hitem {
  int64_t lb; /* of the list's next offer: the heap's key */
  const uint32_t *arr;
  uint32_t pos, end;
  int64_t egress, transfer; /* the list's data costs (one region) */
};

static void heap_down(struct hitem *h, size_t n, size_t i) {
  struct hitem x = h[i];
  for (;;) {
    size_t l = 2 * i + 1, m = l + 1, s = i;
    int64_t sv = x.lb;
    if (l < n && h[l].lb < sv)
      s = l, sv = h[l].lb;
    if (m < n && h[m].lb < sv)
      s = m;
    if (s == i)
      break;
    h[i] = h[s];
    i = s;
  }
  h[i] = x;
}

static void heap_reserve(struct tw_plan_ws *ws, size_t n) {
  if (n > ws->heap_cap) {
    ws->heap_cap = n + n / 2 + 16;
    ws->heap = tw_realloc(ws->heap, ws->heap_cap * sizeof *ws->heap);
  }
}

static bool feasible_here(const struct run *r, uint32_t i) {
  const struct ix_offer *c = &r->ix->offers[i];
  return !r->ls->verdict[c->loc] && !r->ss->verdict[c->shape] &&
         r->market_ok[c->market & 3];
}

/* The first position at or after pos whose offer passed both stages, or
 * end.  Skipping here, not through the heap, keeps a list of mostly
 * infeasible offers cheap to walk. */
static uint32_t next_feasible(const struct run *r, const uint32_t *arr,
                              uint32_t pos, uint32_t end) {
  const struct ix_offer *offers = r->ix->offers;
  const uint8_t *lv = r->ls->verdict, *sv = r->ss->verdict, *mk = r->market_ok;
  uint32_t from = pos;
  while (pos < end &&
         ((lv[offers[arr[pos]].loc] | sv[offers[arr[pos]].shape]) ||
          !mk[offers[arr[pos]].market & 3]))
    pos++;
  ((struct run *)r)->steps += pos - from + 1;
  return pos;
}

/* Adds the list arr[from, to) with its data costs to the heap. */
static void push_list(struct run *r, size_t *m, const uint32_t *arr,
                      size_t from, size_t to, int64_t egress,
                      int64_t transfer) {
  uint32_t pos = next_feasible(r, arr, (uint32_t)from, (uint32_t)to);
  if (pos >= to)
    return;
  struct hitem *h = &r->ws->heap[(*m)++];
  *h = (struct hitem){.arr = arr,
                      .pos = pos,
                      .end = (uint32_t)to,
                      .egress = egress,
                      .transfer = transfer};
  h->lb = lb_of(r, r->ix->offers[arr[pos]].price, egress, transfer);
}

/* Best-first over price-ordered lists: the feasible offer with the
 * smallest bound next, until that bound cannot beat the candidates kept. */
static void walk(struct run *r, size_t n) {
  struct hitem *h = r->ws->heap;
  for (size_t i = n / 2; i-- > 0;)
    heap_down(h, n, i);
  const struct ix_offer *offers = r->ix->offers;
  while (n) {
    struct hitem *t = &h[0];
    if (beyond(r, t->lb))
      break;
    uint32_t i = t->arr[t->pos];
    bool drop = r->price_cap && offers[i].price > r->price_cap;
    if (!drop)
      visit(r, i);
    if (!drop)
      t->pos = next_feasible(r, t->arr, t->pos + 1, t->end);
    if (drop || t->pos == t->end)
      h[0] = h[--n]; /* exhausted, or the rest is over the price cap */
    else
      t->lb = lb_of(r, offers[t->arr[t->pos]].price, t->egress, t->transfer);
    if (n)
      heap_down(h, n, 0);
  }
}

/* One price-ordered run of offers [from, to) of arr with the same data
 * costs, until nothing further can enter. */
static void run_list(struct run *r, const uint32_t *arr, size_t from,
                     size_t to) {
  const struct ix_offer *offers = r->ix->offers;
  for (size_t q = from; q < to; q++) {
    uint32_t i = arr[q];
    int64_t price = offers[i].price;
    r->steps++;
    if ((r->price_cap && price > r->price_cap) ||
        beyond(r, lb_of(r, price, 0, 0)))
      return;
    if (feasible_here(r, i))
      visit(r, i);
  }
}

/* When data costs differ by region, every list keeps to one region, so
 * its bound is exact in the data part: the feasible shapes' (shape,
 * region) lists when they are few, else each region's own list (from the
 * cheapest feasible shape's price on). */
static const char *regions(struct run *r, int64_t minp, double w_groups) {
  const struct tw_offer_index *ix = r->ix;
  const struct tw_job_data *d = r->ctx.data;
  const struct stage_entry *ls = r->ls, *ss = r->ss;
  struct tw_plan_ws *ws = r->ws;
  if (ws->region_cap < ix->n_regions) {
    ws->region_cap = ix->n_regions;
    ws->region_ok = tw_realloc(ws->region_ok, ws->region_cap);
  }
  memset(ws->region_ok, 0, ix->n_regions);
  size_t n_reg = 0;
  for (size_t i = 0; i < ls->n_ok; i++) {
    uint32_t g = ix->locs[ls->ok[i]].region;
    n_reg += !ws->region_ok[g];
    ws->region_ok[g] = 1;
  }
  size_t m = 0;
  double k = (double)r->k;
  /* regions walk the feasible lists: a build (once per kind of job), then
   * a push per region and the candidates */
  (void)minp;
  double w_regions =
      PUSH * (double)n_reg + STEP * 2 * k +
      (ss->feas ? 0 : BUILD * (double)ix->n / (double)(1 + ss->hits));
  if (w_groups < w_regions) {
    heap_reserve(ws, (size_t)w_groups + 1);
    for (size_t a = 0; a < ss->n_ok; a++) {
      const struct ix_shape *sh = &ix->shapes[ss->ok[a]];
      for (uint32_t q = 0; q < sh->groups.count; q++) {
        const struct ix_group *gr = &ix->groups[sh->groups.start + q];
        if (ws->region_ok[gr->region]) {
          heap_reserve(ws, m + 1);
          push_list(r, &m, ix->by_group, gr->r.start,
                    (size_t)gr->r.start + gr->r.count,
                    d->egress_uusd[gr->region], d->transfer_s[gr->region]);
        }
      }
    }
    walk(r, m);
    return "groups";
  }
  struct stage_entry *se = (struct stage_entry *)ss;
  feas_build(r, se);
  heap_reserve(ws, n_reg);
  for (uint32_t g = 0; g < ix->n_regions; g++)
    if (ws->region_ok[g])
      push_list(r, &m, se->feas_by_region, se->feas_region[g].start,
                (size_t)se->feas_region[g].start + se->feas_region[g].count,
                d->egress_uusd[g], d->transfer_s[g]);
  walk(r, m);
  return "regions";
}

static const char *search(struct run *r) {
  const struct tw_offer_index *ix = r->ix;
  const struct stage_entry *ls = r->ls, *ss = r->ss;
  struct tw_plan_ws *ws = r->ws;
  if (!ls->n_ok || !ss->n_ok)
    return "none";
  /* Work estimates, in list steps (STEP: an entry of a list; PUSH: a list
   * set up in the heap; CELL: a hash probe; BUILD: an offer passed over
   * while building the feasible lists).  Offers are taken to be spread
   * over feasible and infeasible places independently of price; shapes
   * are not (the cheap end of a mixed list is small machines), so the
   * mixed lists (locations) count every offer below the cheapest
   * feasible shape as wasted. */
  int64_t minp = ss->min_price;
  double n = ix->n ? (double)ix->n : 1, k = (double)r->k;
  double fl = ls->ok_offers ? (double)ls->ok_offers : 1;
  double fs = ss->ok_offers ? (double)ss->ok_offers : 1;
  double loc_waste = n / fl; /* list entries per feasible location */
  double w_cells = CELL * (double)ls->n_ok * (double)ss->n_ok;
  if (r->ctx.data) {
    double w_groups = PUSH * (double)ss->n_groups + STEP * 2 * k;
    if (r->force && !strcmp(r->force, "cells"))
      goto cells;
    if (r->force)
      w_groups = strcmp(r->force, "groups") ? 1e18 : 0;
    else if (w_cells <= w_groups &&
             w_cells <= PUSH * (double)ix->n_regions + STEP * 2 * k)
      goto cells;
    return regions(r, minp, w_groups);
  }
  /* the feasible lists are built once per kind of job: their cost is
   * spread over the decisions that reuse them */
  double w_global = STEP * k * loc_waste +
                    (ss->feas ? 0 : BUILD * n / (double)(1 + ss->hits));
  double per_shape =
      loc_waste < fs / (double)ss->n_ok ? loc_waste : fs / (double)ss->n_ok;
  double w_shapes =
      (PUSH + STEP * per_shape) * (double)ss->n_ok + STEP * k * loc_waste;
  double cheap = (double)ix_count_cheaper(ix, minp) * fl / n;
  double w_locs = PUSH * (double)ls->n_ok + STEP * (cheap + k * n / fs);
  const char *force = r->force;
  if (force) {
    w_cells = strcmp(force, "cells") ? 1e18 : 0;
    w_global = strcmp(force, "global") ? 1e18 : 0;
    w_shapes = strcmp(force, "shapes") ? 1e18 : 0;
    w_locs = strcmp(force, "locations") ? 1e18 : 0;
  }
  if (w_cells <= w_global && w_cells <= w_shapes && w_cells <= w_locs)
    goto cells;
  if (w_global <= w_shapes && w_global <= w_locs) {
    struct stage_entry *se = (struct stage_entry *)ss;
    feas_build(r, se);
    run_list(r, se->feas, 0, se->n_feas);
    return "global";
  }
  size_t m = 0;
  if (w_locs < w_shapes) {
    heap_reserve(ws, ls->n_ok);
    for (size_t i = 0; i < ls->n_ok; i++) {
      const struct ix_loc *l = &ix->locs[ls->ok[i]];
      push_list(r, &m, ix->by_loc, l->all.start,
                (size_t)l->all.start + l->all.count, 0, 0);
    }
    walk(r, m);
    return "locations";
  }
  heap_reserve(ws, ss->n_ok);
  for (size_t i = 0; i < ss->n_ok; i++) {
    const struct ix_shape *sh = &ix->shapes[ss->ok[i]];
    push_list(r, &m, ix->by_shape, sh->all.start,
              (size_t)sh->all.start + sh->all.count, 0, 0);
  }
  walk(r, m);
  return "shapes";
cells:
  for (size_t a = 0; a < ss->n_ok; a++)
    for (size_t b = 0; b < ls->n_ok; b++) {
      const struct ix_range *cr = ix_cell_find(ix, ss->ok[a], ls->ok[b]);
      for (uint32_t q = 0; cr && q < cr->count; q++) {
        uint32_t i = ix->by_cell[cr->start + q];
        if (r->price_cap && ix->offers[i].price > r->price_cap)
          break;
        if (r->market_ok[ix->offers[i].market & 3])
          visit(r, i);
      }
    }
  return "cells";
}

/* ---- scores
 * ---------------------------------------------------------------------- */

static int by_rank(const void *a, const void *b) {
  const struct tw_cand *x = a, *y = b;
  if (x->total != y->total)
    return x->total > y->total ? -1 : 1;
  if (x->cost.total_uusd != y->cost.total_uusd)
    return x->cost.total_uusd < y->cost.total_uusd ? -1 : 1;
  return x->id_rank < y->id_rank ? -1 : x->id_rank > y->id_rank;
}

static void score(struct run *r, struct tw_plan *p) {
  const struct tw_policy_set *set = r->set;
  int64_t *raw = tw_malloc((p->n ? p->n : 1) * sizeof *raw);
  for (size_t si = 0; si < set->n_scores && si < TW_POLICY_MAX_SCORES; si++) {
    const struct tw_policy *pol = &set->scores[si];
    for (size_t j = 0; j < p->n; j++) {
      r->ctx.region = p->cands[j].region;
      r->ctx.offer_cost = &p->cands[j].cost;
      raw[j] = pol->ops->score(pol, &r->ctx, &p->cands[j]);
    }
    if (pol->ops->normalize && p->n)
      pol->ops->normalize(pol, raw, p->n);
    for (size_t j = 0; j < p->n; j++) {
      int64_t v = raw[j] < 0              ? 0
                  : raw[j] > TW_SCORE_MAX ? TW_SCORE_MAX
                                          : raw[j];
      p->cands[j].scores[si] = v;
      p->cands[j].total += v * pol->weight;
    }
  }
  r->ctx.region = -1;
  r->ctx.offer_cost = NULL;
  free(raw);
  if (p->n > 1)
    qsort(p->cands, p->n, sizeof *p->cands, by_rank);
}

/* ---- the entry point
 * ------------------------------------------------------------ */

enum tw_rc tw_plan_make(const struct tw_policy_set *set,
                        const struct tw_place_snapshot *snap,
                        const struct tw_plan_input *in,
                        const struct tw_plan_opts *opts,
                        struct tw_plan_ws *ws_in, struct tw_plan *p,
                        struct tw_err *err) {
  memset(p, 0, sizeof *p);
  p->strategy = "none";
  if (!snap || !snap->index || !in || !in->job || !set)
    return tw_err_set(err, TW_E_INVALID,
                      "plan: a policy set, an index and a job are needed");
  static const struct tw_plan_opts no_opts;
  if (!opts)
    opts = &no_opts;
  struct tw_plan_ws *ws = ws_in ? ws_in : tw_plan_ws_new();
  const struct tw_offer_index *ix = snap->index;
  const struct tw_dataset_set *ds =
      snap->datasets ? snap->datasets : &tw_dataset_set_empty;
  struct run r = {.set = set, .ix = ix, .in = in, .ws = ws};
  const struct tw_job_spec *job = in->job;
  r.ctx = (struct tw_place_ctx){
      .version = TW_POLICY_ABI_VERSION,
      .job = job,
      .now_ms = in->now_ms,
      .duration_s =
          job->duration_s > 0 ? job->duration_s : set->cost.default_duration_s,
      .nodes = job->nodes > 0 ? job->nodes : 1,
      .cost = &set->cost,
      .net = set->net,
      .datasets = ds,
      .quota = snap->quota ? snap->quota : &tw_quota_unlimited,
      .blocklist = snap->blocklist ? snap->blocklist : &tw_place_blocklist_none,
      .health = snap->health ? snap->health : &tw_health_all_good,
      .capacity = snap->capacity ? snap->capacity : &tw_capacity_view_empty,
      .reservations =
          snap->reservations ? snap->reservations : &tw_reservations_none,
      .excluded = in->excluded,
      .n_excluded = in->n_excluded,
      .job_id = in->job_id,
      .tenant = job->tenant ? job->tenant : "default",
      .region = -1};
  r.cj = (struct tw_cost_job){.duration_s = r.ctx.duration_s,
                              .nodes = r.ctx.nodes,
                              .checkpoint_s = job->checkpoint_interval_s,
                              .now_ms = in->now_ms};
  r.k = opts->candidates ? opts->candidates : set->candidates;
  if (r.k < 1)
    r.k = 1;
  if (ws->top_cap < r.k) {
    ws->top_cap = r.k;
    ws->top = tw_realloc(ws->top, ws->top_cap * sizeof *ws->top);
  }
  r.counting = opts->counts;
  r.force = opts->strategy;
  for (size_t i = 0; i < set->n_filters; i++)
    if (scope_of(&set->filters[i]) == TW_SCOPE_OFFER) {
      r.of[r.n_of] = &set->filters[i];
      r.of_idx[r.n_of++] = i;
      if (set->filters[i].ops == &tw_filter_price)
        r.price_cap = job->max_price_uusd_per_hour;
    }
  memset(r.market_ok, 1, sizeof r.market_ok);
  if (set_index_of(set, &tw_filter_market) != SIZE_MAX) {
    /* the market filter's verdict depends on the market alone */
    struct tw_offer probe;
    memset(&probe, 0, sizeof probe);
    for (int m = 0; m < 4; m++) {
      struct tw_verdict v = {.pass = true};
      probe.market = (enum tw_market)m;
      tw_filter_market.filter(NULL, &r.ctx, &probe, &v);
      r.market_ok[m] = v.pass;
    }
  }
  r.ctx.data = job_data(&r, ds);
  if (set->cost.n_launch_by) {
    r.loc_launch = tw_malloc((ix->n_locs ? ix->n_locs : 1) * sizeof(int64_t));
    for (size_t l = 0; l < ix->n_locs; l++) {
      const struct tw_offer *rep = &ix->reps[ix->locs[l].rep];
      r.loc_launch[l] = -1;
      for (size_t k = 0; k < set->cost.n_launch_by; k++)
        if (!strcmp(set->cost.launch_by[k].provider, rep->provider) ||
            !strcmp(set->cost.launch_by[k].provider, rep->account)) {
          r.loc_launch[l] = set->cost.launch_by[k].s;
          if (!strcmp(set->cost.launch_by[k].provider, rep->account))
            break; /* an account's wins over its provider's */
        }
    }
  }
  bool full = opts->counts || opts->scan;
  r.ls = stage_run(&r, TW_SCOPE_LOCATION, full);
  r.ss = stage_run(&r, TW_SCOPE_SHAPE, full);
  p->considered = ix->n;
  if (opts->counts && !opts->scan) {
    /* the candidates from the search, as without counts; then a pass
     * that only counts (no cost model, no ranking, offers made only for
     * the filters that read them) */
    r.counting = false;
    p->strategy = search(&r);
    r.feasible = 0;
    r.counting = true;
    r.count_only = true;
    scan(&r);
    r.count_only = false;
  } else if (full) {
    scan(&r);
    p->strategy = "scan";
  } else {
    p->strategy = search(&r);
  }
  /* the candidates, cheapest first, then scored */
  p->n = r.n_top;
  p->cands = tw_malloc((p->n ? p->n : 1) * sizeof *p->cands);
  memcpy(p->cands, ws->top, p->n * sizeof *p->cands);
  if (!ix->src.stable && p->n)
    p->store = tw_malloc(p->n * sizeof *p->store);
  for (size_t j = 0; j < p->n; j++) {
    const struct tw_offer *o = ix->src.get(
        &ix->src, p->cands[j].index, p->store ? &p->store[j] : &ws->scratch);
    if (p->store && o != &p->store[j])
      p->store[j] = *o, o = &p->store[j];
    p->cands[j].offer = o;
  }
  score(&r, p);
  p->visited = r.visited;
  p->steps = r.steps;
  p->duration_s = r.ctx.duration_s;
  p->nodes = r.ctx.nodes;
  if (r.ctx.data)
    snprintf(p->data, sizeof p->data, "%s", r.ctx.data->source);
  p->n_scores = set->n_scores;
  for (size_t i = 0; i < set->n_scores; i++) {
    snprintf(p->score_names[i], sizeof p->score_names[i], "%s",
             set->scores[i].name);
    p->weights[i] = set->scores[i].weight;
  }
  if (opts->counts) {
    p->counted = true;
    p->feasible = r.feasible;
    static const unsigned order[] = {TW_SCOPE_LOCATION, TW_SCOPE_SHAPE,
                                     TW_SCOPE_OFFER};
    static const char *const names[] = {"location", "shape", "offer"};
    for (int st = 0; st < 3; st++)
      for (size_t i = 0; i < set->n_filters; i++) {
        if (scope_of(&set->filters[i]) != order[st])
          continue;
        struct tw_plan_reject *rj = &p->rejects[p->n_rejects++];
        snprintf(rj->filter, sizeof rj->filter, "%s", set->filters[i].name);
        rj->stage = names[st];
        rj->count = r.counts[i];
        const struct stage_entry *e = st == 0 ? r.ls : st == 1 ? r.ss : NULL;
        if (e && e->seen[i]) {
          snprintf(rj->reason, sizeof rj->reason, "%s", e->reason[i]);
          rj->amount = e->amount[i];
          if (e->example[i])
            snprintf(rj->example, sizeof rj->example, "%s",
                     e->example[i]->id);
        } else if (r.seen[i]) {
          snprintf(rj->reason, sizeof rj->reason, "%s", r.reason[i]);
          rj->amount = r.amount[i];
          snprintf(rj->example, sizeof rj->example, "%s", r.example[i]);
        }
      }
  }
  free(r.loc_launch);
  if (!ws_in)
    tw_plan_ws_free(ws);
  return TW_OK;
}

void tw_plan_release(struct tw_plan *p) {
  free(p->cands);
  free(p->store);
  memset(p, 0, sizeof *p);
}

/* ---- output
 * ------------------------------------------------------------------------ */

/* 41203 -> "41,203" */
static void fmt_count(uint64_t v, char *out, size_t outsz) {
  char d[32];
  int n = snprintf(d, sizeof d, "%llu", (unsigned long long)v);
  size_t o = 0;
  for (int i = 0; i < n && o + 2 < outsz; i++) {
    if (i && (n - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = d[i];
  }
  out[o] = '\0';
}

void tw_plan_explain(const struct tw_plan *p, struct tw_buf *b) {
  char a[32], c[32];
  fmt_count(p->considered, a, sizeof a);
  if (!p->counted) {
    fmt_count(p->n, c, sizeof c);
    tw_buf_printf(b, "%s offers, %s candidates (rejections not counted)", a, c);
    return;
  }
  fmt_count(p->feasible, c, sizeof c);
  tw_buf_printf(b, "%s offers, %s fit", a, c);
  /* the biggest reasons first */
  size_t idx[TW_POLICY_MAX_FILTERS], n = 0;
  for (size_t i = 0; i < p->n_rejects; i++)
    if (p->rejects[i].count)
      idx[n++] = i;
  for (size_t i = 1; i < n; i++)
    for (size_t j = i;
         j > 0 && p->rejects[idx[j - 1]].count < p->rejects[idx[j]].count;
         j--) {
      size_t t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
  for (size_t i = 0; i < n; i++) {
    const struct tw_plan_reject *rj = &p->rejects[idx[i]];
    fmt_count(rj->count, c, sizeof c);
    tw_buf_printf(b, "%s%s %s", i ? ", " : ": ", c,
                  rj->reason[0] ? rj->reason : rj->filter);
  }
  if (p->note[0])
    tw_buf_printf(b, "; %s", p->note);
}

void tw_plan_to_json(const struct tw_plan *p, size_t max, struct tw_buf *b) {
  size_t n = max && max < p->n ? max : p->n;
  tw_buf_printf(b, "{\"offers\":%llu,\"counted\":%s,",
                (unsigned long long)p->considered,
                p->counted ? "true" : "false");
  if (p->counted)
    tw_buf_printf(b, "\"feasible\":%llu,", (unsigned long long)p->feasible);
  else
    tw_buf_adds(b, "\"feasible\":null,");
  tw_buf_printf(b, "\"strategy\":\"%s\",\"visited\":%llu,", p->strategy,
                (unsigned long long)p->visited);
  tw_buf_printf(b, "\"model\":{\"duration_s\":%lld,\"nodes\":%d,\"data\":",
                (long long)p->duration_s, p->nodes);
  tw_buf_json_str(b, p->data);
  tw_buf_adds(b, "},\"scores\":[");
  for (size_t i = 0; i < p->n_scores; i++) {
    tw_buf_printf(b, "%s{\"name\":", i ? "," : "");
    tw_buf_json_str(b, p->score_names[i]);
    tw_buf_printf(b, ",\"weight\":%lld}", (long long)p->weights[i]);
  }
  tw_buf_printf(b, "],\"tie_break\":\"%s\"", TW_PLAN_TIE_BREAK);
  tw_buf_adds(b, ",\"candidates\":[");
  for (size_t j = 0; j < n; j++) {
    const struct tw_cand *c = &p->cands[j];
    const struct tw_offer *o = c->offer;
    char fin[40];
    tw_time_fmt_rfc3339(c->cost.finish_ms, fin, sizeof fin);
    tw_buf_printf(b, "%s{\"rank\":%zu,\"offer_id\":", j ? "," : "", j + 1);
    tw_buf_json_str(b, o->id);
    tw_buf_adds(b, ",\"provider\":");
    tw_buf_json_str(b, o->provider);
    tw_buf_adds(b, ",\"account\":");
    tw_buf_json_str(b, o->account);
    tw_buf_adds(b, ",\"region\":");
    tw_buf_json_str(b, o->region);
    tw_buf_adds(b, ",\"zone\":");
    tw_buf_json_str(b, o->zone);
    tw_buf_adds(b, ",\"instance_type\":");
    tw_buf_json_str(b, o->instance_type);
    /* the shape: what the person asked about */
    tw_buf_printf(b, ",\"vcpus\":%d,\"memory_mib\":%lld,\"arch\":\"%s\"",
                  o->vcpus, (long long)o->memory_mib, tw_arch_str(o->arch));
    tw_buf_adds(b, ",\"accelerator\":");
    if (o->accel_name[0] && o->accel_count > 0) {
      tw_buf_adds(b, "{\"name\":");
      tw_buf_json_str(b, o->accel_name);
      tw_buf_printf(b, ",\"count\":%d}", o->accel_count);
    } else {
      tw_buf_adds(b, "null");
    }
    tw_buf_printf(b, ",\"launchable\":%s", o->no_account ? "false" : "true");
    if (o->no_account)
      tw_buf_adds(b, ",\"note\":\"no account can launch this\"");
    /* every placement stores this: appended, not formatted */
    tw_buf_adds(b, ",\"market\":\"");
    tw_buf_adds(b, tw_market_str(o->market));
    tw_buf_adds(b, "\",\"price_uusd_per_hour\":");
    tw_buf_add_i64(b, o->price_uusd_per_hour);
    static const char *const cost_key[] = {
        "total_uusd",    "compute_uusd", "spot_risk_uusd", "egress_uusd",
        "transfer_uusd", "transfer_s",   "spot_extra_s"};
    const int64_t cost_val[] = {c->cost.total_uusd,    c->cost.compute_uusd,
                                c->cost.spot_risk_uusd, c->cost.egress_uusd,
                                c->cost.transfer_uusd,  c->cost.transfer_s,
                                c->cost.spot_extra_s};
    tw_buf_adds(b, ",\"cost\":{");
    for (size_t i = 0; i < sizeof cost_val / sizeof cost_val[0]; i++) {
      tw_buf_adds(b, i ? ",\"" : "\"");
      tw_buf_adds(b, cost_key[i]);
      tw_buf_adds(b, "\":");
      tw_buf_add_i64(b, cost_val[i]);
    }
    tw_buf_adds(b, ",\"finish\":\"");
    tw_buf_adds(b, fin);
    tw_buf_adds(b, "\"},\"scores\":{");
    for (size_t i = 0; i < p->n_scores; i++) {
      if (i)
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, p->score_names[i]);
      tw_buf_addc(b, ':');
      tw_buf_add_i64(b, c->scores[i]);
    }
    tw_buf_adds(b, "},\"total_score\":");
    tw_buf_add_i64(b, c->total);
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "],\"rejected\":[");
  for (size_t i = 0; i < p->n_rejects; i++) {
    const struct tw_plan_reject *rj = &p->rejects[i];
    tw_buf_printf(b, "%s{\"filter\":", i ? "," : "");
    tw_buf_json_str(b, rj->filter);
    tw_buf_printf(b, ",\"stage\":\"%s\",\"count\":%llu,\"reason\":", rj->stage,
                  (unsigned long long)rj->count);
    tw_buf_json_str(b, rj->reason);
    tw_buf_adds(b, ",\"example\":");
    if (rj->example[0])
      tw_buf_json_str(b, rj->example);
    else
      tw_buf_adds(b, "null");
    tw_buf_addc(b, '}');
  }
  tw_buf_adds(b, "],\"explain\":");
  struct tw_buf e;
  tw_buf_init(&e);
  tw_plan_explain(p, &e);
  tw_buf_json_str(b, e.data ? e.data : "");
  tw_buf_release(&e);
  tw_buf_addc(b, '}');
}
