/* catalog_query.c - filtering, sorting and paging a snapshot.
 *
 * Filters on what an instance is (accelerator, vCPUs, memory, arch) are
 * decided once per shape and those on where it is (provider, region
 * selectors, jurisdiction, zone) once per location, so the per-offer test
 * is a few byte loads.  Offers are grouped by shape: a query that names an
 * accelerator reads only the ranges of the matching shapes and keeps the
 * best `limit` in a bounded heap.  A price-ordered query over most of the
 * catalog walks the price index instead and stops as soon as the page is
 * full. */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "billing/catalog/catalog_int.h"
#include "broker/base/mem.h"

static const char *const SORT_NAMES[TW_CAT_SORT_COUNT] = {
    "price", "-price", "vcpus", "-vcpus", "memory", "-memory", "risk"};
static const char SORT_CODES[TW_CAT_SORT_COUNT] = {'p', 'P', 'v', 'V',
                                                   'm', 'M', 'r'};

const char *tw_cat_sort_str(enum tw_cat_sort s) {
  return (unsigned)s < TW_CAT_SORT_COUNT ? SORT_NAMES[s] : "price";
}

bool tw_cat_sort_parse(const char *s, enum tw_cat_sort *out) {
  for (int i = 0; i < TW_CAT_SORT_COUNT; i++)
    if (!strcmp(s, SORT_NAMES[i])) {
      *out = (enum tw_cat_sort)i;
      return true;
    }
  return false;
}

static bool accel_matches(const char *want, const char *have) {
  size_t n = strlen(want);
  if (strncasecmp(want, have, n))
    return false;
  return have[n] == '\0' || have[n] == '-';
}

/* Order key of an offer under a sort: ascending (k, t).  Secondary orders
 * (price within a vCPU count or a risk band) are folded into k: prices
 * stay below 2^41 micro-USD (TW_MODEL_PRICE_MAX_UUSD is 10^12). */
struct okey {
  int64_t k;
  uint64_t t;
  uint32_t idx;
};

#define SHIFT ((int64_t)1 << 41)

static struct okey key_of(const struct tw_cat_snap *s, uint32_t i,
                          enum tw_cat_sort sort) {
  const struct tw_cat_offer *o = &s->offers[i];
  const struct tw_cat_shape *sh = &s->shapes[o->shape];
  uint64_t tie = tw_cat_tie(o->key, o->market);
  struct okey r = {.t = tie, .idx = i};
  switch (sort) {
  case TW_CAT_SORT_PRICE:
  case TW_CAT_SORT_COUNT:
    r.k = o->price_uusd;
    break;
  case TW_CAT_SORT_PRICE_DESC:
    r.k = -o->price_uusd;
    r.t = ~tie; /* the exact reverse of the price index */
    break;
  case TW_CAT_SORT_VCPUS:
    r.k = (int64_t)sh->vcpus * SHIFT + o->price_uusd;
    break;
  case TW_CAT_SORT_VCPUS_DESC:
    r.k = -(int64_t)sh->vcpus * SHIFT + o->price_uusd;
    break;
  case TW_CAT_SORT_MEMORY:
    r.k = sh->memory_mib;
    break;
  case TW_CAT_SORT_MEMORY_DESC:
    r.k = -sh->memory_mib;
    break;
  case TW_CAT_SORT_RISK: {
    enum tw_risk b = tw_cat_risk_band(o->risk);
    r.k = (int64_t)(b != TW_RISK_UNKNOWN ? b : TW_RISK_COUNT) * SHIFT +
          o->price_uusd;
  } break;
  }
  return r;
}

static int okey_cmp(const struct okey *a, int64_t k, uint64_t t) {
  if (a->k != k)
    return a->k < k ? -1 : 1;
  return a->t < t ? -1 : a->t > t;
}

static int okey_qcmp(const void *a, const void *b) {
  const struct okey *y = b;
  return okey_cmp(a, y->k, y->t);
}

/* Cursor: "c1.<sort code>.<k>.<t in hex>". */
static void cursor_fmt(const struct okey *k, enum tw_cat_sort sort, char *out,
                       size_t outsz) {
  snprintf(out, outsz, "c1.%c.%" PRId64 ".%016" PRIx64, SORT_CODES[sort], k->k,
           k->t);
}

static bool cursor_parse(const char *c, enum tw_cat_sort sort, int64_t *k,
                         uint64_t *t) {
  if (strncmp(c, "c1.", 3) || c[3] != SORT_CODES[sort] || c[4] != '.')
    return false;
  const char *p = c + 5;
  char *end;
  if (!((*p >= '0' && *p <= '9') || *p == '-'))
    return false;
  long long kv = strtoll(p, &end, 10);
  /* keys stay far from the int64 edges (prices below 2^41, shifted by at
   * most 2^41 again); refusing the rest keeps -k from overflowing */
  if (end == p || *end != '.' || end - p > 20 || kv <= -(1LL << 62) ||
      kv >= (1LL << 62))
    return false;
  p = end + 1;
  if (strlen(p) != 16)
    return false;
  for (const char *h = p; *h; h++)
    if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
      return false;
  *k = kv;
  *t = strtoull(p, NULL, 16);
  return true;
}

/* A bounded max-heap of the best `cap` keys seen. */
struct heap {
  struct okey *a;
  size_t n, cap;
};

static void heap_sift_down(struct heap *h, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && okey_qcmp(&h->a[l], &h->a[m]) > 0)
      m = l;
    if (r < h->n && okey_qcmp(&h->a[r], &h->a[m]) > 0)
      m = r;
    if (m == i)
      return;
    struct okey tmp = h->a[i];
    h->a[i] = h->a[m];
    h->a[m] = tmp;
    i = m;
  }
}

static void heap_offer(struct heap *h, const struct okey *k) {
  if (h->n < h->cap) {
    size_t i = h->n++;
    h->a[i] = *k;
    while (i && okey_qcmp(&h->a[(i - 1) / 2], &h->a[i]) < 0) {
      struct okey tmp = h->a[i];
      h->a[i] = h->a[(i - 1) / 2];
      h->a[(i - 1) / 2] = tmp;
      i = (i - 1) / 2;
    }
  } else if (okey_qcmp(k, &h->a[0]) < 0) {
    h->a[0] = *k;
    heap_sift_down(h, 0);
  }
}

struct qctx {
  const struct tw_cat_snap *s;
  const struct tw_cat_query *q;
  uint8_t *smask, *lmask;
};

static inline bool offer_ok(const struct qctx *c,
                            const struct tw_cat_offer *o) {
  if (!c->smask[o->shape] || !c->lmask[o->loc])
    return false;
  if (c->q->market != TW_MARKET_ANY && o->market != c->q->market)
    return false;
  if (c->q->max_price_uusd && o->price_uusd > c->q->max_price_uusd)
    return false;
  return true;
}

static bool shape_ok(const struct tw_cat_snap *s, const struct tw_cat_query *q,
                     const struct tw_cat_shape *sh) {
  if (q->accel) {
    if (!sh->accel || sh->accel_milli < 1000 ||
        !accel_matches(q->accel, tw_strpool_str(&s->pool, sh->accel)))
      return false;
    if (q->accel_count > 0 && sh->accel_milli < (int64_t)q->accel_count * 1000)
      return false;
  }
  if (q->no_accel && sh->accel)
    return false;
  if (q->cpus && sh->vcpus < q->cpus)
    return false;
  if (q->memory_mib && sh->memory_mib < q->memory_mib)
    return false;
  if (q->arch != TW_ARCH_ANY && sh->arch != q->arch)
    return false;
  return true;
}

/* Results of the region-level selectors per (provider, account, region),
 * for one query. */
struct region_memo {
  uint64_t *keys; /* 0 empty */
  uint8_t *vals;
  size_t mask;
};

static bool region_memo_match(const struct tw_cat_snap *s,
                              const struct tw_cat_query *q,
                              struct region_memo *m,
                              const struct tw_cat_loc *l) {
  uint64_t k = tw_cat_mix(((uint64_t)l->provider << 40) ^
                          ((uint64_t)l->account << 20) ^ l->region) |
               1;
  size_t i = k & m->mask;
  for (; m->keys[i]; i = (i + 1) & m->mask)
    if (m->keys[i] == k)
      return m->vals[i];
  const struct tw_strpool *p = &s->pool;
  char where[2][208];
  snprintf(where[0], sizeof where[0], "%s:%s", tw_strpool_str(p, l->provider),
           tw_strpool_str(p, l->region));
  snprintf(where[1], sizeof where[1], "%s:%s", tw_strpool_str(p, l->account),
           tw_strpool_str(p, l->region));
  bool ok = false;
  for (size_t r = 0; r < q->n_regions && !ok; r++)
    ok = !fnmatch(q->regions[r], where[0], 0) ||
         !fnmatch(q->regions[r], where[1], 0);
  m->keys[i] = k;
  m->vals[i] = ok;
  return ok;
}

static bool loc_ok(const struct tw_cat_snap *s, const struct tw_cat_query *q,
                   const struct tw_cat_loc *l, const uint32_t *prov_ids,
                   uint32_t zone_sid, const uint64_t *zone_ids, size_t n_zids,
                   struct region_memo *memo) {
  const struct tw_strpool *p = &s->pool;
  if (q->n_providers) {
    size_t i;
    for (i = 0; i < q->n_providers; i++)
      if (prov_ids[i] == l->provider || prov_ids[i] == l->account)
        break;
    if (i == q->n_providers)
      return false;
  }
  if (q->zone) {
    bool ok = (zone_sid != UINT32_MAX &&
               (l->zone == zone_sid || l->zone_id == zone_sid));
    for (size_t i = 0; !ok && i < n_zids; i++)
      ok = l->zone_id &&
           zone_ids[i] == (((uint64_t)l->account << 32) | l->zone_id);
    if (!ok)
      return false;
  }
  if (q->n_jurisdictions) {
    const char *j = tw_strpool_str(p, l->jurisdiction);
    size_t i;
    for (i = 0; i < q->n_jurisdictions; i++)
      if (*j && !strcasecmp(q->jurisdictions[i], j))
        break;
    if (i == q->n_jurisdictions)
      return false;
  }
  if (q->n_regions) {
    /* region-level selectors are decided once per region (memo); a
     * selector with two colons names zones and is tried on each */
    if (region_memo_match(s, q, memo, l))
      return true;
    const char *prov = tw_strpool_str(p, l->provider);
    const char *reg = tw_strpool_str(p, l->region);
    const char *zones[2] = {tw_strpool_str(p, l->zone),
                            tw_strpool_str(p, l->zone_id)};
    for (size_t i = 0; i < q->n_regions; i++) {
      const char *c1 = strchr(q->regions[i], ':');
      if (!c1 || !strchr(c1 + 1, ':'))
        continue;
      for (int z = 0; z < 2; z++) {
        if (!*zones[z])
          continue;
        char where[208];
        snprintf(where, sizeof where, "%s:%s:%s", prov, reg, zones[z]);
        if (!fnmatch(q->regions[i], where, 0))
          return true;
      }
    }
    return false;
  }
  return true;
}

static int skey_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* First position of the price index whose (price, tie) >= (k, t). */
static size_t price_lower_bound(const struct tw_cat_snap *s, int64_t k,
                                uint64_t t) {
  size_t lo = 0, hi = s->n_offers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct tw_cat_offer *o = &s->offers[s->by_price[mid]];
    uint64_t ot = tw_cat_tie(o->key, o->market);
    bool less = o->price_uusd < k || (o->price_uusd == k && ot < t);
    if (less)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

enum tw_rc tw_cat_snap_query(const struct tw_cat_snap *s,
                             const struct tw_cat_query *q,
                             struct tw_cat_page *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (q->limit < 1 || q->limit > TW_CAT_PAGE_MAX)
    return tw_err_field(err, TW_E_INVALID, "limit",
                        "limit: expected 1..%d, got %d", TW_CAT_PAGE_MAX,
                        q->limit);
  if ((unsigned)q->sort >= TW_CAT_SORT_COUNT)
    return tw_err_field(err, TW_E_INVALID, "sort", "sort: unknown order");
  if (q->n_providers > TW_CAT_QUERY_LIST_MAX ||
      q->n_regions > TW_CAT_QUERY_LIST_MAX ||
      q->n_jurisdictions > TW_CAT_QUERY_LIST_MAX)
    return tw_err_set(err, TW_E_INVALID, "too many filter values (max %d)",
                      TW_CAT_QUERY_LIST_MAX);
  bool has_cur = false;
  int64_t ck = 0;
  uint64_t ct = 0;
  if (q->cursor && *q->cursor) {
    if (!cursor_parse(q->cursor, q->sort, &ck, &ct))
      return tw_err_field(err, TW_E_INVALID, "cursor",
                          "cursor: not a cursor of this listing (sort %s)",
                          tw_cat_sort_str(q->sort));
    has_cur = true;
  }

  struct qctx c = {.s = s, .q = q};
  c.smask = tw_calloc((size_t)s->n_shapes + 1, 1);
  c.lmask = tw_calloc((size_t)s->n_locs + 1, 1);
  size_t selected = 0;
  for (uint32_t k = 0; k < s->n_shapes; k++)
    if ((c.smask[k] = shape_ok(s, q, &s->shapes[k])))
      selected += s->shape_start[k + 1] - s->shape_start[k];

  uint32_t prov_ids[TW_CAT_QUERY_LIST_MAX];
  for (size_t i = 0; i < q->n_providers; i++)
    prov_ids[i] =
        tw_strpool_lookup(&s->pool, q->providers[i], strlen(q->providers[i]));
  uint32_t zone_sid = UINT32_MAX;
  uint64_t *zone_ids = NULL;
  size_t n_zids = 0;
  if (q->zone) {
    /* a zone name stands for its id in the same account (AWS names map to
     * ids per account): offers known only by id match the name too */
    zone_sid = tw_strpool_lookup(&s->pool, q->zone, strlen(q->zone));
    zone_ids = tw_malloc(((size_t)s->n_locs + 1) * sizeof *zone_ids);
    for (uint32_t k = 0; zone_sid != UINT32_MAX && k < s->n_locs; k++)
      if (s->locs[k].zone == zone_sid && s->locs[k].zone_id)
        zone_ids[n_zids++] =
            ((uint64_t)s->locs[k].account << 32) | s->locs[k].zone_id;
  }
  struct region_memo memo = {0};
  if (q->n_regions) {
    size_t sz = 16;
    while (sz < (size_t)s->n_locs * 2)
      sz *= 2;
    memo.keys = tw_calloc(sz, sizeof *memo.keys);
    memo.vals = tw_calloc(sz, 1);
    memo.mask = sz - 1;
  }
  for (uint32_t k = 0; k < s->n_locs; k++)
    c.lmask[k] =
        loc_ok(s, q, &s->locs[k], prov_ids, zone_sid, zone_ids, n_zids, &memo);
  free(memo.keys);
  free(memo.vals);
  free(zone_ids);

  size_t want = (size_t)q->limit + 1;
  struct okey *found = tw_malloc(want * sizeof *found);
  size_t nf = 0;

  /* Which way costs least: the price index (price orders only), visiting
   * about want / density entries where density is the share of offers
   * that match (shape and location filters taken as independent), or the
   * offers of the matching shapes, or of the matching locations. */
  size_t sel_loc = 0;
  for (uint32_t k = 0; k < s->n_locs; k++)
    if (c.lmask[k])
      sel_loc += s->loc_start[k + 1] - s->loc_start[k];
  double total = (double)s->n_offers;
  double density = total > 0 ? ((double)selected / total) *
                                   ((double)sel_loc / total) *
                                   (q->market != TW_MARKET_ANY ? 0.5 : 1.0)
                             : 0;
  bool price_sort =
      q->sort == TW_CAT_SORT_PRICE || q->sort == TW_CAT_SORT_PRICE_DESC;
  double walk = price_sort && density > 0 ? (double)want / density : 1e300;
  enum { BY_PRICE, BY_SHAPE, BY_LOC } how = BY_SHAPE;
  if (walk < (double)selected && walk < (double)sel_loc)
    how = BY_PRICE;
  else if (sel_loc < selected)
    how = BY_LOC;

  if (how == BY_PRICE && q->sort == TW_CAT_SORT_PRICE) {
    size_t pos = has_cur ? price_lower_bound(s, ck, ct) : 0;
    for (; pos < s->n_offers && nf < want; pos++) {
      uint32_t i = s->by_price[pos];
      const struct tw_cat_offer *o = &s->offers[i];
      out->scanned++;
      if (q->max_price_uusd && o->price_uusd > q->max_price_uusd)
        break;
      if (!offer_ok(&c, o))
        continue;
      struct okey kk = key_of(s, i, q->sort);
      if (has_cur && okey_cmp(&kk, ck, ct) <= 0)
        continue;
      found[nf++] = kk;
    }
  } else if (how == BY_PRICE) {
    /* descending: walk the price index backwards from below the cursor
     * and the price cap */
    size_t top = s->n_offers;
    if (has_cur)
      top = price_lower_bound(s, -ck, ~ct);
    if (q->max_price_uusd) {
      size_t cap = price_lower_bound(s, q->max_price_uusd + 1, 0);
      if (cap < top)
        top = cap;
    }
    for (size_t pos = top; pos-- > 0 && nf < want;) {
      uint32_t i = s->by_price[pos];
      out->scanned++;
      if (!offer_ok(&c, &s->offers[i]))
        continue;
      struct okey kk = key_of(s, i, q->sort);
      if (has_cur && okey_cmp(&kk, ck, ct) <= 0)
        continue;
      found[nf++] = kk;
    }
  } else if (how == BY_LOC) {
    struct heap h = {.a = found, .cap = want};
    for (uint32_t k = 0; k < s->n_locs; k++) {
      if (!c.lmask[k])
        continue;
      for (uint32_t p = s->loc_start[k]; p < s->loc_start[k + 1]; p++) {
        uint32_t i = s->by_loc[p];
        out->scanned++;
        if (!offer_ok(&c, &s->offers[i]))
          continue;
        struct okey kk = key_of(s, i, q->sort);
        if (has_cur && okey_cmp(&kk, ck, ct) <= 0)
          continue;
        heap_offer(&h, &kk);
      }
    }
    nf = h.n;
    qsort(found, nf, sizeof *found, okey_qcmp);
  } else {
    /* Sorts by vCPUs or memory order the shapes themselves: visiting them
     * in that order, the scan stops at the first shape whose every offer
     * would sort after a full page. */
    struct skey {
      int64_t k;
      uint32_t shape;
    } *order = tw_malloc(((size_t)s->n_shapes + 1) * sizeof *order);
    size_t no = 0;
    bool ordered =
        q->sort == TW_CAT_SORT_VCPUS || q->sort == TW_CAT_SORT_VCPUS_DESC ||
        q->sort == TW_CAT_SORT_MEMORY || q->sort == TW_CAT_SORT_MEMORY_DESC;
    for (uint32_t k = 0; k < s->n_shapes; k++) {
      if (!c.smask[k])
        continue;
      const struct tw_cat_shape *sh = &s->shapes[k];
      int64_t mk = 0;
      switch (q->sort) {
      case TW_CAT_SORT_VCPUS:
        mk = (int64_t)sh->vcpus * SHIFT;
        break;
      case TW_CAT_SORT_VCPUS_DESC:
        mk = -(int64_t)sh->vcpus * SHIFT;
        break;
      case TW_CAT_SORT_MEMORY:
        mk = sh->memory_mib;
        break;
      case TW_CAT_SORT_MEMORY_DESC:
        mk = -sh->memory_mib;
        break;
      default:
        break;
      }
      order[no].k = mk;
      order[no++].shape = k;
    }
    if (ordered)
      qsort(order, no, sizeof *order, skey_cmp);
    struct heap h = {.a = found, .cap = want};
    for (size_t oi = 0; oi < no; oi++) {
      uint32_t k = order[oi].shape;
      /* every offer of this shape has a key >= order[oi].k */
      if (ordered && h.n == h.cap && order[oi].k > h.a[0].k)
        break;
      for (uint32_t i = s->shape_start[k]; i < s->shape_start[k + 1]; i++) {
        out->scanned++;
        if (!offer_ok(&c, &s->offers[i]))
          continue;
        struct okey kk = key_of(s, i, q->sort);
        if (has_cur && okey_cmp(&kk, ck, ct) <= 0)
          continue;
        heap_offer(&h, &kk);
      }
    }
    free(order);
    nf = h.n;
    qsort(found, nf, sizeof *found, okey_qcmp);
  }
  size_t n = nf > (size_t)q->limit ? (size_t)q->limit : nf;
  out->items = tw_malloc((n ? n : 1) * sizeof *out->items);
  for (size_t i = 0; i < n; i++)
    out->items[i] = found[i].idx;
  out->n = n;
  if (nf > (size_t)q->limit)
    cursor_fmt(&found[n - 1], q->sort, out->next_cursor,
               sizeof out->next_cursor);
  free(found);
  free(c.smask);
  free(c.lmask);
  return TW_OK;
}

void tw_cat_page_release(struct tw_cat_page *p) {
  free(p->items);
  memset(p, 0, sizeof *p);
}
