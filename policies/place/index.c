/* index.c - building the offer index (index.h, index_int.h). */
#include "policies/place/index_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/base/sort.h"
#include "broker/base/unique.h"

static const struct tw_offer *array_get(const struct tw_offer_source *src,
                                        size_t i, struct tw_offer *scratch) {
  (void)scratch;
  return &((const struct tw_offer *)src->ctx)[i];
}

void tw_offer_source_array(struct tw_offer_source *src,
                           const struct tw_offer *offers, size_t n) {
  memset(src, 0, sizeof *src);
  src->n = n;
  src->get = array_get;
  src->ctx = offers;
  src->stable = true;
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

void ix_family_of(const char *accel, char out[24]) {
  size_t i = 0;
  for (; accel[i] && accel[i] != '-' && i < 23; i++)
    out[i] = (char)toupper((unsigned char)accel[i]);
  out[i] = '\0';
}

/* ---- an interning table: key text -> small id -----------------------------
 */

struct intern {
  struct {
    uint64_t h;
    uint32_t id;
    uint32_t off; /* key text in arena */
  } * slots;
  size_t cap, n;
  struct tw_buf arena;
};

static void intern_init(struct intern *t) {
  memset(t, 0, sizeof *t);
  t->cap = 1024;
  t->slots = tw_calloc(t->cap, sizeof *t->slots);
  tw_buf_init(&t->arena);
  tw_buf_addc(&t->arena, '\0'); /* offset 0 unused: an empty slot */
}

static void intern_release(struct intern *t) {
  free(t->slots);
  tw_buf_release(&t->arena);
}

/* The id of key (len bytes), made when new; *fresh says so. */
static uint32_t intern_get(struct intern *t, const char *key, size_t len,
                           bool *fresh) {
  uint64_t h = fnv(key, len);
  size_t mask = t->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (!t->slots[i].off) {
      t->slots[i].h = h;
      t->slots[i].id = (uint32_t)t->n++;
      t->slots[i].off = (uint32_t)t->arena.len;
      tw_buf_add(&t->arena, key, len);
      tw_buf_addc(&t->arena, '\0');
      *fresh = true;
      uint32_t id = t->slots[i].id;
      if (t->n * 2 > t->cap) {
        size_t ocap = t->cap;
        __typeof__(t->slots) old = t->slots;
        t->cap *= 2;
        t->slots = tw_calloc(t->cap, sizeof *t->slots);
        for (size_t k = 0; k < ocap; k++)
          if (old[k].off) {
            size_t j = old[k].h & (t->cap - 1);
            while (t->slots[j].off)
              j = (j + 1) & (t->cap - 1);
            t->slots[j] = old[k];
          }
        free(old);
      }
      return id;
    }
    if (t->slots[i].h == h &&
        !memcmp(t->arena.data + t->slots[i].off, key, len) &&
        t->arena.data[t->slots[i].off + len] == '\0') {
      *fresh = false;
      return t->slots[i].id;
    }
  }
}

/* ---- keys
 * --------------------------------------------------------------------- */

static size_t shape_key(const struct tw_offer *o, char *buf, size_t sz) {
  int n = snprintf(
      buf, sz, "%s\x1f%s\x1f%d\x1f%d\x1f%lld\x1f%s\x1f%d\x1f%lld\x1f%s\x1f%u",
      o->provider, o->instance_type, (int)o->arch, o->vcpus,
      (long long)o->memory_mib, o->accel_name, o->accel_count,
      (long long)o->accel_memory_mib, o->family, o->type_traits);
  return n < 0 ? 0 : (size_t)n < sz ? (size_t)n : sz - 1;
}

static size_t loc_key(const struct tw_offer *o, char *buf, size_t sz) {
  int n = snprintf(buf, sz, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", o->provider,
                   o->account, o->region, o->zone, o->zone_id, o->rack);
  size_t len = n < 0 ? 0 : (size_t)n < sz ? (size_t)n : sz - 1;
  for (size_t i = 0; i < o->n_labels && i < TW_OFFER_LABELS_MAX && len < sz;
       i++) {
    n = snprintf(buf + len, sz - len, "\x1f%s=%s", o->labels[i].key,
                 o->labels[i].value);
    len = n < 0 ? len : len + (size_t)n < sz ? len + (size_t)n : sz - 1;
  }
  return len;
}

/* ---- sorting helpers: the comparators get the index as their context
 * (tw_sort_r), so two threads may build indexes at once ------------------ */

static int by_price(const void *a, const void *b, void *ctx) {
  const struct tw_offer_index *ix = ctx;
  const struct ix_offer *x = &ix->offers[*(const uint32_t *)a];
  const struct ix_offer *y = &ix->offers[*(const uint32_t *)b];
  if (x->price != y->price)
    return x->price < y->price ? -1 : 1;
  return x->id_rank < y->id_rank ? -1 : x->id_rank > y->id_rank;
}

static int by_region_price(const void *a, const void *b, void *ctx) {
  const struct tw_offer_index *ix = ctx;
  const struct ix_offer *x = &ix->offers[*(const uint32_t *)a];
  const struct ix_offer *y = &ix->offers[*(const uint32_t *)b];
  uint32_t rx = ix->locs[x->loc].region, ry = ix->locs[y->loc].region;
  if (rx != ry)
    return rx < ry ? -1 : 1;
  return by_price(a, b, ctx);
}

static int by_loc_price(const void *a, const void *b, void *ctx) {
  const struct tw_offer_index *ix = ctx;
  const struct ix_offer *x = &ix->offers[*(const uint32_t *)a];
  const struct ix_offer *y = &ix->offers[*(const uint32_t *)b];
  if (x->loc != y->loc)
    return x->loc < y->loc ? -1 : 1;
  return by_price(a, b, ctx);
}

/* ctx: the offers' ids (char *const *) */
static int by_id(const void *a, const void *b, void *ctx) {
  char *const *ids = ctx;
  int c = strcmp(ids[*(const uint32_t *)a], ids[*(const uint32_t *)b]);
  if (c)
    return c;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Groups offers by key(offer) (0..nkeys) into out, each group sorted with
 * cmp; ranges[k] receives group k's range. */
static void group_sort(const struct tw_offer_index *ix, uint32_t nkeys,
                       bool by_shape_key, tw_sort_cmp_fn cmp, uint32_t *out,
                       struct ix_range *ranges) {
  uint32_t *count = tw_calloc(nkeys + 1, sizeof *count);
  for (size_t i = 0; i < ix->n; i++)
    count[(by_shape_key ? ix->offers[i].shape : ix->offers[i].loc) + 1]++;
  for (uint32_t k = 0; k < nkeys; k++)
    count[k + 1] += count[k];
  for (uint32_t k = 0; k < nkeys; k++)
    ranges[k] = (struct ix_range){count[k], count[k + 1] - count[k]};
  for (size_t i = 0; i < ix->n; i++) {
    uint32_t k = by_shape_key ? ix->offers[i].shape : ix->offers[i].loc;
    out[count[k]++] = (uint32_t)i;
  }
  free(count);
  for (uint32_t k = 0; k < nkeys; k++)
    if (ranges[k].count > 1)
      tw_sort_r(out + ranges[k].start, ranges[k].count, sizeof *out, cmp,
                (void *)ix);
}

static void push_rep(struct tw_offer_index *ix, size_t *cap,
                     const struct tw_offer *o) {
  if (ix->n_reps == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    ix->reps = tw_realloc(ix->reps, *cap * sizeof *ix->reps);
  }
  ix->reps[ix->n_reps++] = *o;
}

static uint64_t cell_hash(uint32_t s, uint32_t l) {
  uint64_t h = ((uint64_t)s << 32 | l) * 0x9e3779b97f4a7c15ULL;
  return h ^ (h >> 31);
}

const struct ix_range *ix_cell_find(const struct tw_offer_index *ix,
                                    uint32_t shape, uint32_t loc) {
  size_t mask = ix->cell_hash_cap - 1;
  for (size_t i = cell_hash(shape, loc) & mask;; i = (i + 1) & mask) {
    uint32_t v = ix->cell_hash[i];
    if (!v)
      return NULL;
    const struct ix_cell *c = &ix->cells[v - 1];
    if (c->shape == shape && c->loc == loc)
      return &c->r;
  }
}

size_t ix_count_cheaper(const struct tw_offer_index *ix, int64_t price) {
  size_t lo = 0, hi = ix->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ix->prices[mid] < price)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const struct ix_group *ix_group_find(const struct tw_offer_index *ix,
                                     uint32_t shape, uint32_t region) {
  /* a shape's groups are in region order */
  const struct ix_range *g = &ix->shapes[shape].groups;
  size_t lo = g->start, hi = (size_t)g->start + g->count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint32_t r = ix->groups[mid].region;
    if (r == region)
      return &ix->groups[mid];
    if (r < region)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const struct ix_family *ix_family_find(const struct tw_offer_index *ix,
                                       const char *family) {
  for (size_t i = 0; i < ix->n_families; i++)
    if (!strcmp(ix->families[i].name, family))
      return &ix->families[i];
  return NULL;
}

long ix_region_find(const struct tw_offer_index *ix, const char *key) {
  /* a few hundred regions: a linear search is fine off the hot path */
  for (size_t i = 0; i < ix->n_regions; i++)
    if (!strcmp(ix->regions[i].key, key))
      return (long)i;
  return -1;
}

enum tw_rc tw_offer_index_build(const struct tw_offer_source *src,
                                struct tw_offer_index **out,
                                struct tw_err *err) {
  *out = NULL;
  if (src->n >= (1u << 31))
    return tw_err_set(err, TW_E_TOOBIG, "index: %zu offers, at most 2^31",
                      src->n);
  int64_t t0 = tw_mono_us();
  struct tw_offer_index *ix = tw_calloc(1, sizeof *ix);
  ix->refs = 1;
  ix->generation = tw_unique_id();
  ix->src = *src;
  ix->n = src->n;
  ix->offers = tw_calloc(ix->n ? ix->n : 1, sizeof *ix->offers);

  struct intern shapes, locs, regions;
  intern_init(&shapes);
  intern_init(&locs);
  intern_init(&regions);
  size_t cap_shapes = 0, cap_locs = 0, cap_regions = 0, cap_reps = 0;
  char **ids = tw_malloc((ix->n ? ix->n : 1) * sizeof *ids);
  struct tw_buf id_arena;
  tw_buf_init(&id_arena);
  size_t *id_off = tw_malloc((ix->n ? ix->n : 1) * sizeof *id_off);
  struct tw_offer *scratch = tw_malloc(sizeof *scratch);
  char key[1024];

  for (size_t i = 0; i < ix->n; i++) {
    const struct tw_offer *o = src->get(src, i, scratch);
    struct ix_offer *c = &ix->offers[i];
    c->price = o->price_uusd_per_hour;
    c->market = (uint8_t)o->market;
    c->flags = (uint8_t)((o->capacity >= 0 ? IX_OFFER_CAPACITY : 0) |
                         (o->quarantine[0] ? IX_OFFER_QUARANTINE : 0));
    c->intr_pct = (int8_t)(o->interruption_pct < -1    ? -1
                           : o->interruption_pct > 100 ? 100
                                                       : o->interruption_pct);
    c->granularity_s = (int32_t)(o->billing_granularity_s > INT32_MAX
                                     ? INT32_MAX
                                     : o->billing_granularity_s);
    c->min_charge_s =
        (int32_t)(o->min_charge_s > INT32_MAX ? INT32_MAX : o->min_charge_s);
    bool fresh;
    c->shape = intern_get(&shapes, key, shape_key(o, key, sizeof key), &fresh);
    if (fresh) {
      if (ix->n_shapes == cap_shapes) {
        cap_shapes = cap_shapes ? cap_shapes * 2 : 256;
        ix->shapes = tw_realloc(ix->shapes, cap_shapes * sizeof *ix->shapes);
      }
      struct ix_shape *s = &ix->shapes[ix->n_shapes++];
      memset(s, 0, sizeof *s);
      s->rep = (uint32_t)ix->n_reps;
      s->vcpus = o->vcpus;
      s->memory_mib = o->memory_mib;
      if (o->accel_name[0])
        ix_family_of(o->accel_name, s->family);
      push_rep(ix, &cap_reps, o);
    }
    c->loc = intern_get(&locs, key, loc_key(o, key, sizeof key), &fresh);
    if (fresh) {
      if (ix->n_locs == cap_locs) {
        cap_locs = cap_locs ? cap_locs * 2 : 256;
        ix->locs = tw_realloc(ix->locs, cap_locs * sizeof *ix->locs);
      }
      struct ix_loc *l = &ix->locs[ix->n_locs++];
      memset(l, 0, sizeof *l);
      l->rep = (uint32_t)ix->n_reps;
      int n = snprintf(key, sizeof key, "%s:%s", o->provider, o->region);
      bool rfresh;
      l->region = intern_get(&regions, key,
                             (size_t)n < sizeof key ? (size_t)n : 0, &rfresh);
      if (rfresh) {
        if (ix->n_regions == cap_regions) {
          cap_regions = cap_regions ? cap_regions * 2 : 64;
          ix->regions =
              tw_realloc(ix->regions, cap_regions * sizeof *ix->regions);
        }
        struct ix_region *r = &ix->regions[ix->n_regions++];
        memset(r, 0, sizeof *r);
        snprintf(r->key, sizeof r->key, "%s:%s", o->provider, o->region);
      }
      ix->regions[l->region].n_locs++;
      push_rep(ix, &cap_reps, o);
    }
    id_off[i] = id_arena.len;
    tw_buf_add(&id_arena, o->id, strlen(o->id) + 1);
  }
  free(scratch);
  intern_release(&shapes);
  intern_release(&locs);
  intern_release(&regions);

  /* id ranks: catalogs usually come sorted already; check before sorting */
  uint32_t *order = tw_malloc((ix->n ? ix->n : 1) * sizeof *order);
  bool sorted = true;
  for (size_t i = 0; i < ix->n; i++) {
    ids[i] = id_arena.data + id_off[i];
    order[i] = (uint32_t)i;
    if (i && sorted && strcmp(ids[i - 1], ids[i]) > 0)
      sorted = false;
  }
  free(id_off);
  if (!sorted)
    tw_sort_r(order, ix->n, sizeof *order, by_id, ids);
  for (size_t r = 0; r < ix->n; r++)
    ix->offers[order[r]].id_rank = (uint32_t)r;
  free(order);
  /* id -> offer */
  ix->id_hash_cap = 16;
  while (ix->id_hash_cap < ix->n * 2)
    ix->id_hash_cap *= 2;
  ix->id_hash = tw_calloc(ix->id_hash_cap, sizeof *ix->id_hash);
  for (size_t i = 0; i < ix->n; i++) {
    size_t mask = ix->id_hash_cap - 1, j = fnv(ids[i], strlen(ids[i])) & mask;
    while (ix->id_hash[j])
      j = (j + 1) & mask;
    ix->id_hash[j] = (uint32_t)i + 1;
  }
  free(ids);
  tw_buf_release(&id_arena);

  /* lists */
  size_t nn = ix->n ? ix->n : 1;
  ix->by_shape = tw_malloc(nn * sizeof *ix->by_shape);
  ix->by_loc = tw_malloc(nn * sizeof *ix->by_loc);
  ix->by_group = tw_malloc(nn * sizeof *ix->by_group);
  ix->by_cell = tw_malloc(nn * sizeof *ix->by_cell);
  struct ix_range *sr = tw_calloc(ix->n_shapes + 1, sizeof *sr);
  struct ix_range *lr = tw_calloc(ix->n_locs + 1, sizeof *lr);
  group_sort(ix, (uint32_t)ix->n_shapes, true, by_price, ix->by_shape, sr);
  group_sort(ix, (uint32_t)ix->n_locs, false, by_price, ix->by_loc, lr);
  for (size_t s = 0; s < ix->n_shapes; s++) {
    ix->shapes[s].all = sr[s];
    ix->shapes[s].min_price =
        sr[s].count ? ix->offers[ix->by_shape[sr[s].start]].price : 0;
  }
  for (size_t l = 0; l < ix->n_locs; l++) {
    ix->locs[l].all = lr[l];
    ix->locs[l].min_price =
        lr[l].count ? ix->offers[ix->by_loc[lr[l].start]].price : 0;
  }
  /* (shape, region) groups and (shape, loc) cells: re-sort each shape's
   * slice */
  memcpy(ix->by_group, ix->by_shape, ix->n * sizeof *ix->by_group);
  memcpy(ix->by_cell, ix->by_shape, ix->n * sizeof *ix->by_cell);
  size_t cap_groups = 0, cap_cells = 0;
  for (size_t s = 0; s < ix->n_shapes; s++) {
    struct ix_range r = sr[s];
    if (r.count > 1) {
      tw_sort_r(ix->by_group + r.start, r.count, sizeof(uint32_t),
                by_region_price, ix);
      tw_sort_r(ix->by_cell + r.start, r.count, sizeof(uint32_t), by_loc_price,
                ix);
    }
    ix->shapes[s].groups.start = (uint32_t)ix->n_groups;
    for (uint32_t k = r.start; k < r.start + r.count;) {
      uint32_t reg = ix->locs[ix->offers[ix->by_group[k]].loc].region, e = k;
      while (e < r.start + r.count &&
             ix->locs[ix->offers[ix->by_group[e]].loc].region == reg)
        e++;
      if (ix->n_groups == cap_groups) {
        cap_groups = cap_groups ? cap_groups * 2 : 1024;
        ix->groups = tw_realloc(ix->groups, cap_groups * sizeof *ix->groups);
      }
      ix->groups[ix->n_groups++] = (struct ix_group){reg, {k, e - k}};
      k = e;
    }
    ix->shapes[s].groups.count =
        (uint32_t)(ix->n_groups - ix->shapes[s].groups.start);
    for (uint32_t k = r.start; k < r.start + r.count;) {
      uint32_t loc = ix->offers[ix->by_cell[k]].loc, e = k;
      while (e < r.start + r.count && ix->offers[ix->by_cell[e]].loc == loc)
        e++;
      if (ix->n_cells == cap_cells) {
        cap_cells = cap_cells ? cap_cells * 2 : 1024;
        ix->cells = tw_realloc(ix->cells, cap_cells * sizeof *ix->cells);
      }
      struct ix_cell cell = {(uint32_t)s, loc, {k, e - k}, 0, 0};
      for (uint32_t j = k; j < e; j++) {
        const struct ix_offer *x = &ix->offers[ix->by_cell[j]];
        cell.n_spot += x->market == TW_MARKET_SPOT;
        cell.flags |= x->flags;
      }
      ix->cells[ix->n_cells++] = cell;
      k = e;
    }
  }
  free(sr);
  free(lr);
  /* every offer by price, and each region's offers by price */
  ix->by_price = tw_malloc(nn * sizeof *ix->by_price);
  ix->prices = tw_malloc(nn * sizeof *ix->prices);
  ix->by_region = tw_malloc(nn * sizeof *ix->by_region);
  for (size_t i = 0; i < ix->n; i++)
    ix->by_price[i] = (uint32_t)i;
  tw_sort_r(ix->by_price, ix->n, sizeof *ix->by_price, by_price, ix);
  {
    uint32_t *cnt = tw_calloc(ix->n_regions + 1, sizeof *cnt);
    for (size_t i = 0; i < ix->n; i++)
      cnt[ix->locs[ix->offers[i].loc].region + 1]++;
    for (size_t r = 0; r < ix->n_regions; r++) {
      cnt[r + 1] += cnt[r];
      ix->regions[r].all = (struct ix_range){cnt[r], cnt[r + 1] - cnt[r]};
    }
    /* walking by_price keeps each region's slice in price order */
    for (size_t k = 0; k < ix->n; k++) {
      uint32_t i = ix->by_price[k];
      ix->prices[k] = ix->offers[i].price;
      ix->by_region[cnt[ix->locs[ix->offers[i].loc].region]++] = i;
    }
    free(cnt);
  }
  ix->cell_hash_cap = 16;
  while (ix->cell_hash_cap < ix->n_cells * 2)
    ix->cell_hash_cap *= 2;
  ix->cell_hash = tw_calloc(ix->cell_hash_cap, sizeof *ix->cell_hash);
  for (size_t c = 0; c < ix->n_cells; c++) {
    size_t mask = ix->cell_hash_cap - 1;
    size_t j = cell_hash(ix->cells[c].shape, ix->cells[c].loc) & mask;
    while (ix->cell_hash[j])
      j = (j + 1) & mask;
    ix->cell_hash[j] = (uint32_t)c + 1;
  }

  /* accelerator families */
  size_t cap_plain = 0;
  for (size_t s = 0; s < ix->n_shapes; s++) {
    if (!ix->shapes[s].family[0]) {
      if (ix->n_plain == cap_plain) {
        cap_plain = cap_plain ? cap_plain * 2 : 256;
        ix->plain_shapes =
            tw_realloc(ix->plain_shapes, cap_plain * sizeof(uint32_t));
      }
      ix->plain_shapes[ix->n_plain++] = (uint32_t)s;
      continue;
    }
    struct ix_family *f =
        (struct ix_family *)ix_family_find(ix, ix->shapes[s].family);
    if (!f) {
      ix->families =
          tw_realloc(ix->families, (ix->n_families + 1) * sizeof *ix->families);
      f = &ix->families[ix->n_families++];
      memset(f, 0, sizeof *f);
      snprintf(f->name, sizeof f->name, "%s", ix->shapes[s].family);
    }
    f->shapes = tw_realloc(f->shapes, (f->n + 1) * sizeof *f->shapes);
    f->shapes[f->n++] = (uint32_t)s;
  }

  ix->region_keys =
      tw_calloc(ix->n_regions ? ix->n_regions : 1, sizeof *ix->region_keys);
  for (size_t r = 0; r < ix->n_regions; r++)
    ix->region_keys[r] = ix->regions[r].key;

  ix->bytes =
      sizeof *ix +
      ix->n * (sizeof *ix->offers + 6 * sizeof(uint32_t) + sizeof(int64_t)) +
      ix->n_reps * sizeof *ix->reps + ix->n_shapes * sizeof *ix->shapes +
      ix->n_locs * sizeof *ix->locs + ix->n_regions * sizeof *ix->regions +
      ix->n_groups * sizeof *ix->groups + ix->n_cells * sizeof *ix->cells +
      (ix->cell_hash_cap + ix->id_hash_cap) * sizeof(uint32_t);
  ix->build_us = tw_mono_us() - t0;
  *out = ix;
  return TW_OK;
}

static void owned_free(struct tw_offer_source *src) { free((void *)src->ctx); }

enum tw_rc tw_offer_index_build_take(struct tw_offer *offers, size_t n,
                                     struct tw_offer_index **out,
                                     struct tw_err *err) {
  struct tw_offer_source src;
  tw_offer_source_array(&src, offers, n);
  src.free = owned_free;
  enum tw_rc rc = tw_offer_index_build(&src, out, err);
  if (rc)
    free(offers);
  return rc;
}

void tw_offer_index_own_source(struct tw_offer_index *ix) {
  /* the release of the caller's reference publishes this store */
  ix->src.free = owned_free;
}

struct tw_offer_index *tw_offer_index_ref(struct tw_offer_index *ix) {
  if (ix)
    __atomic_add_fetch(&ix->refs, 1, __ATOMIC_RELAXED);
  return ix;
}

void tw_offer_index_unref(struct tw_offer_index *ix) {
  if (!ix || __atomic_sub_fetch(&ix->refs, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  if (ix->src.free)
    ix->src.free(&ix->src);
  free(ix->offers);
  free(ix->reps);
  free(ix->shapes);
  free(ix->locs);
  free(ix->regions);
  free(ix->region_keys);
  free(ix->by_shape);
  free(ix->by_loc);
  free(ix->by_group);
  free(ix->by_region);
  free(ix->by_price);
  free(ix->prices);
  free(ix->groups);
  free(ix->by_cell);
  free(ix->cells);
  free(ix->cell_hash);
  free(ix->id_hash);
  for (size_t i = 0; i < ix->n_families; i++)
    free(ix->families[i].shapes);
  free(ix->families);
  free(ix->plain_shapes);
  free(ix);
}

size_t tw_offer_index_count(const struct tw_offer_index *ix) { return ix->n; }

const struct tw_offer *tw_offer_index_get(const struct tw_offer_index *ix,
                                          size_t i, struct tw_offer *scratch) {
  return ix->src.get(&ix->src, i, scratch);
}

long tw_offer_index_find(const struct tw_offer_index *ix, const char *id) {
  size_t mask = ix->id_hash_cap - 1;
  struct tw_offer tmp;
  for (size_t j = fnv(id, strlen(id)) & mask;; j = (j + 1) & mask) {
    uint32_t v = ix->id_hash[j];
    if (!v)
      return -1;
    const struct tw_offer *o = ix->src.get(&ix->src, v - 1, &tmp);
    if (!strcmp(o->id, id))
      return (long)(v - 1);
  }
}

uint64_t tw_offer_index_generation(const struct tw_offer_index *ix) {
  return ix->generation;
}

void tw_offer_index_stats(const struct tw_offer_index *ix,
                          struct tw_offer_index_stats *out) {
  out->offers = ix->n;
  out->shapes = ix->n_shapes;
  out->locations = ix->n_locs;
  out->regions = ix->n_regions;
  out->cells = ix->n_cells;
  out->bytes = ix->bytes;
  out->build_us = ix->build_us;
}
