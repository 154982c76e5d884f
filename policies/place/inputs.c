/* inputs.c - the snapshots placement reads besides offers (inputs.h). */
#include "policies/place/inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

/* ---- datasets --------------------------------------------------------------
 */

const struct tw_dataset_set tw_dataset_set_empty = {0};

/* Every change gives a set a generation no other content had: placement
 * caches data costs by it.  The generation is a hash of the changes made
 * since tw_dataset_set_init() (FNV-1a over each call's arguments, chained
 * from the previous generation): sets built by the same calls hold the
 * same content and share a generation, different calls give different
 * ones, and no counter is shared between sets or threads. */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}
static uint64_t mix_str(uint64_t h, const char *s) {
  return mix(h, s ? s : "", s ? strlen(s) + 1 : 1);
}
static void changed(struct tw_dataset_set *s, char op, const char *uri,
                    int64_t n, const char *const *locs, size_t n_locs) {
  uint64_t h = mix(s->generation ^ 1469598103934665603ULL, &op, 1);
  h = mix_str(h, uri);
  h = mix(h, &n, sizeof n);
  for (size_t i = 0; i < n_locs; i++)
    h = mix_str(h, locs[i]);
  s->generation = h ? h : 1; /* 0 is the empty set's */
}

void tw_dataset_set_init(struct tw_dataset_set *s) { memset(s, 0, sizeof *s); }

void tw_dataset_set_release(struct tw_dataset_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->items[i].uri);
    for (size_t l = 0; l < s->items[i].n_locations; l++)
      free(s->items[i].locations[l]);
  }
  free(s->items);
  memset(s, 0, sizeof *s);
}

static struct tw_dataset_info *find_linear(struct tw_dataset_set *s,
                                           const char *uri) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->items[i].uri, uri))
      return &s->items[i];
  return NULL;
}

static void add_location(struct tw_dataset_info *d, const char *loc,
                         int64_t cost) {
  for (size_t l = 0; l < d->n_locations; l++)
    if (!strcmp(d->locations[l], loc)) {
      if (cost < d->location_cost_uusd[l])
        d->location_cost_uusd[l] = cost;
      return;
    }
  if (d->n_locations == TW_DATASET_LOCATIONS_MAX)
    return;
  d->location_cost_uusd[d->n_locations] = cost;
  d->locations[d->n_locations++] = tw_strdup(loc);
}

void tw_dataset_set_add(struct tw_dataset_set *s, const char *uri,
                        int64_t size_bytes, const char *const *locations,
                        size_t n_locations) {
  struct tw_dataset_info *d = find_linear(s, uri);
  if (!d) {
    if (s->n == s->cap) {
      s->cap = s->cap ? s->cap * 2 : 16;
      s->items = tw_realloc(s->items, s->cap * sizeof *s->items);
    }
    d = &s->items[s->n++];
    memset(d, 0, sizeof *d);
    d->uri = tw_strdup(uri);
  }
  if (size_bytes > 0)
    d->size_bytes = size_bytes;
  for (size_t i = 0; i < n_locations; i++)
    if (locations[i] && *locations[i])
      add_location(d, locations[i], 0);
  changed(s, 'a', uri, size_bytes, locations, n_locations);
}

void tw_dataset_set_owner(struct tw_dataset_set *s, const char *uri,
                          const char *owner, bool shared) {
  struct tw_dataset_info *d = find_linear(s, uri);
  if (d) {
    snprintf(d->owner, sizeof d->owner, "%s", owner ? owner : "");
    d->shared = shared;
  }
  const char *o = owner ? owner : "";
  changed(s, shared ? 'S' : 'o', uri, 0, &o, 1);
}

void tw_dataset_set_plan_replica(struct tw_dataset_set *s, const char *uri,
                                 const char *location, int64_t share_uusd) {
  struct tw_dataset_info *d = find_linear(s, uri);
  if (d)
    add_location(d, location, share_uusd > 0 ? share_uusd : 0);
  changed(s, 'r', uri, share_uusd, &location, 1);
}

static int by_uri(const void *a, const void *b) {
  return strcmp(((const struct tw_dataset_info *)a)->uri,
                ((const struct tw_dataset_info *)b)->uri);
}

void tw_dataset_set_seal(struct tw_dataset_set *s) {
  if (s->n > 1)
    qsort(s->items, s->n, sizeof *s->items, by_uri);
}

const struct tw_dataset_info *
tw_dataset_set_find(const struct tw_dataset_set *s, const char *uri) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(s->items[mid].uri, uri);
    if (!c)
      return &s->items[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const struct tw_dataset_info *
tw_dataset_set_find_for(const struct tw_dataset_set *s, const char *uri,
                        const char *tenant) {
  const struct tw_dataset_info *d = tw_dataset_set_find(s, uri);
  if (d && d->owner[0] && strcmp(d->owner, "*") && !d->shared &&
      (!tenant || strcmp(d->owner, tenant)))
    return NULL;
  return d;
}

void tw_dataset_set_copy(struct tw_dataset_set *dst,
                         const struct tw_dataset_set *src) {
  tw_dataset_set_init(dst);
  for (size_t i = 0; i < src->n; i++) {
    const struct tw_dataset_info *d = &src->items[i];
    tw_dataset_set_add(dst, d->uri, d->size_bytes, NULL, 0);
    struct tw_dataset_info *c = &dst->items[dst->n - 1];
    for (size_t l = 0; l < d->n_locations; l++)
      add_location(c, d->locations[l], d->location_cost_uusd[l]);
    memcpy(c->owner, d->owner, sizeof c->owner);
    c->shared = d->shared;
  }
  dst->generation = src->generation;
  tw_dataset_set_seal(dst);
}

/* ---- blocklist, health, quota
 * ------------------------------------------------ */

const struct tw_place_blocklist tw_place_blocklist_none = {0};
const struct tw_health tw_health_all_good = {0};
const struct tw_quota_state tw_quota_unlimited = {0};

const char *tw_health_down(const struct tw_health *h, const char *account) {
  for (size_t i = 0; i < h->n && i < TW_HEALTH_MAX; i++)
    if (!strcmp(h->account[i], account))
      return h->reason[i];
  return NULL;
}

/* ---- capacity in use
 * ----------------------------------------------------------- */

const struct tw_capacity_view tw_capacity_view_empty = {0};

void tw_capacity_view_init(struct tw_capacity_view *v) {
  memset(v, 0, sizeof *v);
}
void tw_capacity_view_release(struct tw_capacity_view *v) {
  free(v->items);
  memset(v, 0, sizeof *v);
}

void tw_capacity_view_take(struct tw_capacity_view *v, const char *offer_id,
                           int64_t nodes) {
  v->generation++;
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->items[i].offer_id, offer_id)) {
      v->items[i].nodes += nodes;
      return;
    }
  if (v->n == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 8;
    v->items = tw_realloc(v->items, v->cap * sizeof *v->items);
  }
  snprintf(v->items[v->n].offer_id, sizeof v->items[v->n].offer_id, "%s",
           offer_id);
  v->items[v->n++].nodes = nodes;
}

int64_t tw_capacity_view_used(const struct tw_capacity_view *v,
                              const char *offer_id) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->items[i].offer_id, offer_id))
      return v->items[i].nodes;
  return 0;
}

/* ---- reservations
 * ---------------------------------------------------------------- */

const struct tw_reservations tw_reservations_none = {0};

void tw_reservations_init(struct tw_reservations *r) {
  memset(r, 0, sizeof *r);
}
void tw_reservations_release(struct tw_reservations *r) {
  free(r->items);
  memset(r, 0, sizeof *r);
}

void tw_reservations_add(struct tw_reservations *r,
                         const struct tw_reservation *item) {
  r->generation++;
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 8;
    r->items = tw_realloc(r->items, r->cap * sizeof *r->items);
  }
  r->items[r->n++] = *item;
}

const struct tw_reservation *
tw_reservations_find(const struct tw_reservations *r, const char *offer_id) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->items[i].offer_id, offer_id))
      return &r->items[i];
  return NULL;
}
