/* catalog_snap.c - interned strings, the snapshot builder, and reading one
 * offer back out of a snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "billing/catalog/catalog_int.h"
#include "billing/catalog/clouds.h"
#include "broker/base/mem.h"

/* ---- hashing
 * ------------------------------------------------------------------- */

static inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

uint64_t tw_cat_hash(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    h ^= rotl(v * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
    h = rotl(h, 27) * 5 + 0x52dce729;
    p += 8;
    len -= 8;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++)
    v |= (uint64_t)p[i] << (8 * i);
  h ^= rotl(v * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
  return tw_cat_mix(h);
}

uint64_t tw_cat_offer_key(const char *account, size_t account_len,
                          const char *region, size_t region_len,
                          const char *zone_key, size_t zone_len,
                          const char *rack, size_t rack_len, const char *type,
                          size_t type_len) {
  uint64_t k = tw_cat_hash(account, account_len, 0x7a3);
  k = tw_cat_hash(region, region_len, k);
  k = tw_cat_hash(zone_key, zone_len, k);
  if (rack_len) /* keys of offers without a rack stay as they were */
    k = tw_cat_hash(rack, rack_len, k ^ 0x7ac);
  return tw_cat_hash(type, type_len, k);
}

/* ---- interned strings
 * ---------------------------------------------------------- */

void tw_strpool_init(struct tw_strpool *p) {
  memset(p, 0, sizeof *p);
  p->cap = 4096;
  p->buf = tw_malloc(p->cap);
  p->buf[0] = '\0';
  p->len = 1;
}

void tw_strpool_release(struct tw_strpool *p) {
  free(p->buf);
  free(p->slots);
  memset(p, 0, sizeof *p);
}

static void pool_grow_slots(struct tw_strpool *p) {
  size_t n = p->nslots ? p->nslots * 2 : 1024;
  uint32_t *slots = tw_calloc(n, sizeof *slots);
  for (size_t i = 0; i < p->nslots; i++) {
    uint32_t off = p->slots[i];
    if (!off)
      continue;
    const char *s = p->buf + off;
    uint64_t h = tw_cat_hash(s, strlen(s), 0);
    for (size_t j = h & (n - 1);; j = (j + 1) & (n - 1))
      if (!slots[j]) {
        slots[j] = off;
        break;
      }
  }
  free(p->slots);
  p->slots = slots;
  p->nslots = n;
}

uint32_t tw_strpool_lookup(const struct tw_strpool *p, const char *s,
                           size_t len) {
  len = strnlen(s, len);
  if (!len)
    return 0;
  if (!p->nslots)
    return UINT32_MAX;
  uint64_t h = tw_cat_hash(s, len, 0);
  for (size_t i = h & (p->nslots - 1);; i = (i + 1) & (p->nslots - 1)) {
    uint32_t off = p->slots[i];
    if (!off)
      return UINT32_MAX;
    if (!strncmp(p->buf + off, s, len) && p->buf[off + len] == '\0')
      return off;
  }
}

uint32_t tw_strpool_intern(struct tw_strpool *p, const char *s, size_t len) {
  /* strings never hold a NUL: a field that did is cut there */
  len = strnlen(s, len);
  if (!len)
    return 0;
  if ((p->count + 1) * 2 > p->nslots)
    pool_grow_slots(p);
  uint64_t h = tw_cat_hash(s, len, 0);
  size_t i = h & (p->nslots - 1);
  for (;; i = (i + 1) & (p->nslots - 1)) {
    uint32_t off = p->slots[i];
    if (!off)
      break;
    if (!strncmp(p->buf + off, s, len) && p->buf[off + len] == '\0')
      return off;
  }
  if (p->len + len + 1 > p->cap) {
    while (p->len + len + 1 > p->cap)
      p->cap *= 2;
    p->buf = tw_realloc(p->buf, p->cap);
  }
  uint32_t off = (uint32_t)p->len;
  memcpy(p->buf + off, s, len);
  p->buf[off + len] = '\0';
  p->len += len + 1;
  p->slots[i] = off;
  p->count++;
  return off;
}

/* ---- the builder
 * ------------------------------------------------------------------ */

void tw_cat_builder_init(struct tw_cat_builder *b) {
  memset(b, 0, sizeof *b);
  b->s = tw_calloc(1, sizeof *b->s);
  atomic_init(&b->s->refs, 1);
  tw_strpool_init(&b->s->pool);
}

static void snap_free(struct tw_cat_snap *s) {
  if (!s)
    return;
  tw_strpool_release(&s->pool);
  free(s->locs);
  free(s->shapes);
  free(s->offers);
  free(s->shape_start);
  free(s->by_price);
  free(s->by_loc);
  free(s->loc_start);
  free(s->hidx);
  free(s->srcs);
  free(s->quar);
  free(s);
}

void tw_cat_builder_release(struct tw_cat_builder *b) {
  snap_free(b->s);
  free(b->loc_ht);
  free(b->shape_ht);
  free(b->key_ht);
  memset(b, 0, sizeof *b);
}

uint32_t tw_cat_bld_str(struct tw_cat_builder *b, const char *s, size_t len) {
  return tw_strpool_intern(&b->s->pool, s ? s : "", s ? len : 0);
}

uint16_t tw_cat_bld_source(struct tw_cat_builder *b,
                           const struct tw_cat_source_info *info) {
  struct tw_cat_snap *s = b->s;
  for (size_t i = 0; i < s->n_srcs; i++)
    if (!strcmp(s->srcs[i].name, info->name))
      return (uint16_t)i;
  s->srcs = tw_realloc(s->srcs, (s->n_srcs + 1) * sizeof *s->srcs);
  s->srcs[s->n_srcs] = *info;
  return (uint16_t)s->n_srcs++;
}

struct tw_cat_source_info *tw_cat_bld_source_at(struct tw_cat_builder *b,
                                                uint16_t i) {
  return i < b->s->n_srcs ? &b->s->srcs[i] : NULL;
}

/* Open-addressing table of record indexes (+1) keyed by the record's
 * bytes; records are compared with memcmp, so they are built zeroed. */
static uint32_t table_put(uint32_t **ht, size_t *mask, size_t count,
                          const void *rec, size_t rec_size, void **arr,
                          size_t *cap, uint32_t *n) {
  if (!*ht || (count + 1) * 2 > *mask + 1) {
    size_t sz = *ht ? (*mask + 1) * 2 : 256;
    uint32_t *nt = tw_calloc(sz, sizeof *nt);
    for (size_t i = 0; *ht && i <= *mask; i++) {
      uint32_t v = (*ht)[i];
      if (!v)
        continue;
      uint64_t h =
          tw_cat_hash((char *)*arr + (size_t)(v - 1) * rec_size, rec_size, 3);
      for (size_t j = h & (sz - 1);; j = (j + 1) & (sz - 1))
        if (!nt[j]) {
          nt[j] = v;
          break;
        }
    }
    free(*ht);
    *ht = nt;
    *mask = sz - 1;
  }
  uint64_t h = tw_cat_hash(rec, rec_size, 3);
  size_t i = h & *mask;
  for (;; i = (i + 1) & *mask) {
    uint32_t v = (*ht)[i];
    if (!v)
      break;
    if (!memcmp((char *)*arr + (size_t)(v - 1) * rec_size, rec, rec_size))
      return v - 1;
  }
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    *arr = tw_realloc(*arr, *cap * rec_size);
  }
  memcpy((char *)*arr + (size_t)*n * rec_size, rec, rec_size);
  (*ht)[i] = ++*n;
  return *n - 1;
}

uint32_t tw_cat_bld_loc(struct tw_cat_builder *b, const struct tw_cat_loc *l) {
  struct tw_cat_loc z;
  memset(&z, 0, sizeof z);
  z.provider = l->provider;
  z.account = l->account;
  z.region = l->region;
  z.zone = l->zone;
  z.zone_id = l->zone_id;
  z.rack = l->rack;
  z.country = l->country;
  z.jurisdiction = l->jurisdiction;
  z.location = l->location;
  z.lat_e6 = l->lat_e6;
  z.lon_e6 = l->lon_e6;
  z.has_geo = l->has_geo;
  z.local_zone = l->local_zone;
  void *arr = b->s->locs;
  uint32_t r = table_put(&b->loc_ht, &b->loc_mask, b->s->n_locs, &z, sizeof z,
                         &arr, &b->cap_locs, &b->s->n_locs);
  b->s->locs = arr;
  return r;
}

uint32_t tw_cat_bld_shape(struct tw_cat_builder *b,
                          const struct tw_cat_shape *sh) {
  struct tw_cat_shape z;
  memset(&z, 0, sizeof z);
  z.provider = sh->provider;
  z.type = sh->type;
  z.accel = sh->accel;
  z.accel_vendor = sh->accel_vendor;
  z.accel_listed = sh->accel_listed;
  z.vcpus = sh->vcpus;
  z.accel_milli = sh->accel_milli;
  z.memory_mib = sh->memory_mib;
  z.accel_memory_mib = sh->accel_memory_mib;
  z.arch = sh->arch;
  z.accel_kind = sh->accel_kind;
  void *arr = b->s->shapes;
  uint32_t r = table_put(&b->shape_ht, &b->shape_mask, b->s->n_shapes, &z,
                         sizeof z, &arr, &b->cap_shapes, &b->s->n_shapes);
  b->s->shapes = arr;
  return r;
}

/* The snapshot's id index: keyed by the key alone (it is a hash already),
 * so an offer and its companion in the other market sit side by side. */
static inline uint64_t slot_hash(uint64_t key, int market) {
  (void)market;
  return key;
}

int64_t tw_cat_bld_find(const struct tw_cat_builder *b, uint64_t key,
                        int market) {
  if (!b->key_ht)
    return -1;
  for (size_t i = key & b->key_mask;; i = (i + 1) & b->key_mask) {
    const struct tw_cat_slot *sl = &b->key_ht[i];
    if (!sl->idx)
      return -1;
    if (sl->key == key && sl->market == market)
      return sl->idx - 1;
  }
}

void tw_cat_bld_reserve(struct tw_cat_builder *b, size_t n) {
  struct tw_cat_snap *s = b->s;
  if (n <= b->cap_offers || n > ((size_t)1 << 31))
    return;
  s->offers = tw_realloc(s->offers, n * sizeof *s->offers);
  b->cap_offers = n;
  size_t sz = 1024;
  while (sz < n * 2)
    sz *= 2;
  if (b->key_ht && sz <= b->key_mask + 1)
    return;
  struct tw_cat_slot *nt = tw_calloc(sz, sizeof *nt);
  for (size_t i = 0; b->key_ht && i <= b->key_mask; i++) {
    if (!b->key_ht[i].idx)
      continue;
    for (size_t j = b->key_ht[i].key & (sz - 1);; j = (j + 1) & (sz - 1))
      if (!nt[j].idx) {
        nt[j] = b->key_ht[i];
        break;
      }
  }
  free(b->key_ht);
  b->key_ht = nt;
  b->key_mask = sz - 1;
}

bool tw_cat_bld_offer(struct tw_cat_builder *b, const struct tw_cat_offer *o) {
  struct tw_cat_snap *s = b->s;
  if (!b->key_ht || (s->n_offers + 1) * 2 > b->key_mask + 1) {
    size_t sz = b->key_ht ? (b->key_mask + 1) * 2 : 1024;
    struct tw_cat_slot *nt = tw_calloc(sz, sizeof *nt);
    for (size_t i = 0; b->key_ht && i <= b->key_mask; i++) {
      if (!b->key_ht[i].idx)
        continue;
      for (size_t j = b->key_ht[i].key & (sz - 1);; j = (j + 1) & (sz - 1))
        if (!nt[j].idx) {
          nt[j] = b->key_ht[i];
          break;
        }
    }
    free(b->key_ht);
    b->key_ht = nt;
    b->key_mask = sz - 1;
  }
  size_t i = o->key & b->key_mask;
  for (;; i = (i + 1) & b->key_mask) {
    const struct tw_cat_slot *sl = &b->key_ht[i];
    if (!sl->idx)
      break;
    if (sl->key == o->key && sl->market == o->market)
      return false;
  }
  if (s->n_offers == b->cap_offers) {
    b->cap_offers = b->cap_offers ? b->cap_offers * 2 : 1024;
    s->offers = tw_realloc(s->offers, b->cap_offers * sizeof *s->offers);
  }
  s->offers[s->n_offers] = *o;
  b->key_ht[i].key = o->key;
  b->key_ht[i].market = o->market;
  b->key_ht[i].idx = (uint32_t)++s->n_offers;
  return true;
}

/* The price index: offers in (price, tie) order.  A radix sort on one
 * 64-bit key, the price (below 2^40: TW_MODEL_PRICE_MAX_UUSD is 10^12) over
 * the tie's top 24 bits, then the rare runs of equal keys sorted by the
 * whole tie: a qsort with a comparator was most of a large ingestion. */
struct pkey {
  uint64_t k;
  uint32_t idx;
};

static void radix_sort(struct pkey *a, struct pkey *tmp, size_t n) {
  size_t cnt[1 << 16];
  for (int shift = 0; shift < 64; shift += 16) {
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++)
      cnt[(a[i].k >> shift) & 0xffff]++;
    /* a digit that is the same everywhere needs no pass */
    if (n && cnt[(a[0].k >> shift) & 0xffff] == n)
      continue;
    size_t sum = 0;
    for (size_t d = 0; d < (1 << 16); d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      tmp[cnt[(a[i].k >> shift) & 0xffff]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
}

static int pkey_cmp(const void *x, const void *y) {
  const struct pkey *a = x, *b = y;
  return a->k < b->k ? -1 : a->k > b->k;
}

static void price_index(struct tw_cat_snap *s) {
  size_t n = s->n_offers;
  struct pkey *a = tw_malloc((n ? n : 1) * sizeof *a);
  struct pkey *tmp = tw_malloc((n ? n : 1) * sizeof *tmp);
  for (size_t i = 0; i < n; i++) {
    const struct tw_cat_offer *o = &s->offers[i];
    uint64_t price = (uint64_t)o->price_uusd & ((UINT64_C(1) << 40) - 1);
    a[i].k = price << 24 | tw_cat_tie(o->key, o->market) >> 40;
    a[i].idx = (uint32_t)i;
  }
  if (n < 4096)
    qsort(a, n, sizeof *a, pkey_cmp); /* the radix pass setup costs more */
  else
    radix_sort(a, tmp, n);
  /* equal keys: order by the whole tie (insertion sort; runs are short) */
  for (size_t i = 1; i < n; i++) {
    if (a[i].k != a[i - 1].k)
      continue;
    size_t j = i;
    struct pkey x = a[i];
    uint64_t tx = tw_cat_tie(s->offers[x.idx].key, s->offers[x.idx].market);
    while (j > 0 && a[j - 1].k == x.k &&
           tw_cat_tie(s->offers[a[j - 1].idx].key,
                      s->offers[a[j - 1].idx].market) > tx) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
  for (size_t i = 0; i < n; i++)
    s->by_price[i] = a[i].idx;
  free(a);
  free(tmp);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The price sanity rule over offers grouped by shape: within a shape's
 * on-demand offers, one under a quarter of their median is held, and so
 * is the spot offer of the same place and type (list prices differ by
 * region by tens of percent, never fourfold; spot prices float by design
 * and are not compared).  Private and unpriced offers never are. */
static void price_sanity(struct tw_cat_snap *s) {
  size_t cap = 0;
  int64_t *prices = NULL;
  size_t pcap = 0;
  for (uint32_t k = 0; k < s->n_shapes; k++) {
    uint32_t a = s->shape_start[k], e = s->shape_start[k + 1];
    if (e - a < TW_CAT_SANITY_PEERS)
      continue;
    for (int m = TW_MARKET_ON_DEMAND; m == TW_MARKET_ON_DEMAND; m++) {
      size_t n = 0;
      if (pcap < e - a) {
        pcap = e - a;
        prices = tw_realloc(prices, pcap * sizeof *prices);
      }
      for (uint32_t i = a; i < e; i++)
        if (s->offers[i].market == m && s->offers[i].price_uusd > 0)
          prices[n++] = s->offers[i].price_uusd;
      if (n < TW_CAT_SANITY_PEERS)
        continue;
      qsort(prices, n, sizeof *prices, cmp_i64);
      int64_t median =
          n % 2 ? prices[n / 2] : (prices[n / 2 - 1] + prices[n / 2]) / 2;
      for (uint32_t i = a; i < e; i++) {
        const struct tw_cat_offer *o = &s->offers[i];
        if (o->market != m || o->price_uusd <= 0 ||
            o->price_uusd * TW_CAT_SANITY_RATIO >= median)
          continue;
        if (s->n_quar == cap) {
          cap = cap ? cap * 2 : 16;
          s->quar = tw_realloc(s->quar, cap * sizeof *s->quar);
        }
        s->quar[s->n_quar++] = (struct tw_cat_quar){
            .offer = i, .peers = (uint32_t)n, .median_uusd = median};
      }
    }
  }
  free(prices);
  /* the spot offers of held on-demand ones */
  size_t n_od = s->n_quar;
  for (size_t q = 0; q < n_od; q++) {
    int64_t sp =
        tw_cat_snap_find_key(s, s->offers[s->quar[q].offer].key, TW_MARKET_SPOT);
    if (sp < 0)
      continue;
    if (s->n_quar == cap) {
      cap = cap ? cap * 2 : 16;
      s->quar = tw_realloc(s->quar, cap * sizeof *s->quar);
    }
    struct tw_cat_quar x = s->quar[q];
    x.offer = (uint32_t)sp;
    s->quar[s->n_quar++] = x;
  }
  /* by offer index: shapes are in order, markets interleave */
  for (size_t x = 1; x < s->n_quar; x++)
    for (size_t y = x; y > 0 && s->quar[y - 1].offer > s->quar[y].offer; y--) {
      struct tw_cat_quar t = s->quar[y];
      s->quar[y] = s->quar[y - 1];
      s->quar[y - 1] = t;
    }
}

static const struct tw_cat_quar *tw_cat_snap_quarantine(const struct tw_cat_snap *s,
                                                 size_t i) {
  size_t lo = 0, hi = s->n_quar;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->quar[mid].offer < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n_quar && s->quar[lo].offer == i ? &s->quar[lo] : NULL;
}

struct tw_cat_snap *tw_cat_bld_finish(struct tw_cat_builder *b,
                                      uint64_t version, int64_t built_ms) {
  struct tw_cat_snap *s = b->s;
  size_t n = s->n_offers;
  s->version = version;
  s->built_ms = built_ms;
  /* group offers by shape (a counting sort, stable): a query filtering on
   * shape fields then reads only the ranges of the shapes that match */
  s->shape_start = tw_calloc((size_t)s->n_shapes + 1, sizeof *s->shape_start);
  for (size_t i = 0; i < n; i++)
    s->shape_start[s->offers[i].shape + 1]++;
  for (uint32_t k = 0; k < s->n_shapes; k++)
    s->shape_start[k + 1] += s->shape_start[k];
  struct tw_cat_offer *sorted = tw_malloc((n ? n : 1) * sizeof *sorted);
  uint32_t *fill;
  fill = tw_malloc(((size_t)s->n_shapes + 1) * sizeof *fill);
  memcpy(fill, s->shape_start, ((size_t)s->n_shapes + 1) * sizeof *fill);
  for (size_t i = 0; i < n; i++)
    sorted[fill[s->offers[i].shape]++] = s->offers[i];
  free(fill);
  free(s->offers);
  s->offers = sorted;

  s->by_price = tw_malloc((n ? n : 1) * sizeof *s->by_price);
  price_index(s);

  /* offers by location, for queries that name a zone or a few regions */
  s->loc_start = tw_calloc((size_t)s->n_locs + 1, sizeof *s->loc_start);
  for (size_t i = 0; i < n; i++)
    s->loc_start[s->offers[i].loc + 1]++;
  for (uint32_t k = 0; k < s->n_locs; k++)
    s->loc_start[k + 1] += s->loc_start[k];
  s->by_loc = tw_malloc((n ? n : 1) * sizeof *s->by_loc);
  fill = tw_malloc(((size_t)s->n_locs + 1) * sizeof *fill);
  memcpy(fill, s->loc_start, ((size_t)s->n_locs + 1) * sizeof *fill);
  for (size_t i = 0; i < n; i++)
    s->by_loc[fill[s->offers[i].loc]++] = (uint32_t)i;
  free(fill);

  size_t sz = 16;
  while (sz < n * 2)
    sz *= 2;
  s->hidx = tw_calloc(sz, sizeof *s->hidx);
  s->hmask = sz - 1;
  for (size_t i = 0; i < n; i++)
    for (size_t j = slot_hash(s->offers[i].key, s->offers[i].market) & s->hmask;
         ; j = (j + 1) & s->hmask)
      if (!s->hidx[j]) {
        s->hidx[j] = (uint32_t)i + 1;
        break;
      }
  price_sanity(s); /* reads the id index */

  if (s->n_locs)
    s->locs = tw_realloc(s->locs, s->n_locs * sizeof *s->locs);
  if (s->n_shapes)
    s->shapes = tw_realloc(s->shapes, s->n_shapes * sizeof *s->shapes);
  s->pool.buf = tw_realloc(s->pool.buf, s->pool.len);
  s->pool.cap = s->pool.len;
  s->bytes =
      sizeof *s + n * sizeof *s->offers + n * sizeof *s->by_price +
      n * sizeof *s->by_loc + ((size_t)s->n_locs + 1) * sizeof *s->loc_start +
      sz * sizeof *s->hidx + s->n_locs * sizeof *s->locs +
      s->n_shapes * sizeof *s->shapes +
      ((size_t)s->n_shapes + 1) * sizeof *s->shape_start + s->pool.cap +
      s->pool.nslots * sizeof *s->pool.slots + s->n_srcs * sizeof *s->srcs +
      s->n_quar * sizeof *s->quar;
  free(b->loc_ht);
  free(b->shape_ht);
  free(b->key_ht);
  memset(b, 0, sizeof *b);
  return s;
}

bool tw_cat_loc_geo(struct tw_cat_builder *b, struct tw_cat_loc *l,
                    const struct tw_regions *regions, const char *provider,
                    const char *region) {
  const struct tw_region *g = tw_regions_find(regions, provider, region);
  if (!g)
    return false;
  l->country = tw_cat_bld_cstr(b, g->country);
  l->jurisdiction = tw_cat_bld_cstr(b, g->jurisdiction);
  l->location = tw_cat_bld_cstr(b, g->location);
  l->lat_e6 = g->lat_e6;
  l->lon_e6 = g->lon_e6;
  l->has_geo = 1;
  return true;
}

/* ---- snapshots
 * ------------------------------------------------------------------ */

void tw_cat_snap_retain(struct tw_cat_snap *s) {
  atomic_fetch_add(&s->refs, 1);
}

void tw_cat_snap_release(struct tw_cat_snap *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1)
    snap_free(s);
}

uint64_t tw_cat_snap_version(const struct tw_cat_snap *s) { return s->version; }
int64_t tw_cat_snap_built_ms(const struct tw_cat_snap *s) {
  return s->built_ms;
}
size_t tw_cat_snap_count(const struct tw_cat_snap *s) { return s->n_offers; }
size_t tw_cat_snap_bytes(const struct tw_cat_snap *s) { return s->bytes; }
size_t tw_cat_snap_nsources(const struct tw_cat_snap *s) { return s->n_srcs; }
const struct tw_cat_source_info *tw_cat_snap_source(const struct tw_cat_snap *s,
                                                    size_t i) {
  return i < s->n_srcs ? &s->srcs[i] : NULL;
}

const char *tw_cat_mode_str(enum tw_cat_mode m) {
  switch (m) {
  case TW_CAT_SEED:
    return "seed";
  case TW_CAT_ADAPTER:
    return "adapter";
  case TW_CAT_OVERRIDE:
    return "override";
  }
  return "unknown";
}

void tw_cat_snap_view(const struct tw_cat_snap *s, size_t i,
                      struct tw_cat_view *v) {
  const struct tw_cat_offer *o = &s->offers[i];
  const struct tw_cat_loc *l = &s->locs[o->loc];
  const struct tw_cat_shape *sh = &s->shapes[o->shape];
  const struct tw_strpool *p = &s->pool;
  memset(v, 0, sizeof *v);
  const struct tw_cat_quar *q = s->n_quar ? tw_cat_snap_quarantine(s, i) : NULL;
  if (q) {
    v->quarantine_median_uusd = q->median_uusd;
    v->quarantine_peers = q->peers;
  }
  v->provider = tw_strpool_str(p, l->provider);
  v->account = tw_strpool_str(p, l->account);
  v->region = tw_strpool_str(p, l->region);
  v->zone = tw_strpool_str(p, l->zone);
  v->zone_id = tw_strpool_str(p, l->zone_id);
  v->rack = tw_strpool_str(p, l->rack);
  v->country = tw_strpool_str(p, l->country);
  v->jurisdiction = tw_strpool_str(p, l->jurisdiction);
  v->location = tw_strpool_str(p, l->location);
  v->has_geo = l->has_geo;
  v->lat_e6 = l->lat_e6;
  v->lon_e6 = l->lon_e6;
  v->local_zone = l->local_zone;
  v->instance_type = tw_strpool_str(p, sh->type);
  v->arch = (enum tw_arch)sh->arch;
  v->vcpus = sh->vcpus;
  v->memory_mib = sh->memory_mib;
  v->accel = tw_strpool_str(p, sh->accel);
  v->accel_listed =
      tw_strpool_str(p, sh->accel_listed ? sh->accel_listed : sh->accel);
  v->accel_vendor = tw_strpool_str(p, sh->accel_vendor);
  v->accel_kind =
      sh->accel ? (enum tw_accel_kind)sh->accel_kind : TW_ACCEL_NONE;
  v->accel_milli = sh->accel_milli;
  v->accel_memory_mib = sh->accel_memory_mib;
  v->market = (enum tw_market)o->market;
  v->price_uusd_per_hour = o->price_uusd;
  v->source_price_micro = o->src_price_micro;
  v->granularity_s = o->granularity_s;
  v->min_charge_s = o->min_charge_s;
  struct tw_billing_rule rule;
  tw_norm_billing(tw_cat_cloud(s->adapters, v->provider), v->market, &rule);
  v->protection_s = rule.protection_s;
  v->risk = tw_cat_risk_band(o->risk);
  v->interruption_pct = tw_cat_risk_pct(o->risk);
  v->capacity = o->capacity;
  v->observed_ms = o->observed_ms;
  v->source = o->src < s->n_srcs ? &s->srcs[o->src] : NULL;
  v->source_row = o->row;
  v->labels = tw_strpool_str(p, o->labels);
  if (v->source) {
    /* same sizes as struct tw_rate's, NUL-terminated there */
    memcpy(v->currency, v->source->rate.currency, sizeof v->currency);
    memcpy(v->rate, v->source->rate.text, sizeof v->rate);
    memcpy(v->rate_date, v->source->rate.date, sizeof v->rate_date);
  }
}

bool tw_cat_snap_offer_id(const struct tw_cat_snap *s, size_t i, char *out,
                          size_t outsz) {
  const struct tw_cat_offer *o = &s->offers[i];
  const struct tw_cat_loc *l = &s->locs[o->loc];
  const struct tw_strpool *p = &s->pool;
  const char *zone =
      l->zone ? tw_strpool_str(p, l->zone) : tw_strpool_str(p, l->zone_id);
  /* a rack follows its zone: "partition/rack", as the Slurm adapter
   * names its offers */
  int n = snprintf(out, outsz, "%s:%s:%s%s%s:%s:%s",
                   tw_strpool_str(p, l->account), tw_strpool_str(p, l->region),
                   zone, l->rack ? "/" : "", tw_strpool_str(p, l->rack),
                   tw_strpool_str(p, s->shapes[o->shape].type),
                   tw_market_str((enum tw_market)o->market));
  if (n < 0 || (size_t)n >= outsz) {
    if (outsz)
      out[0] = '\0';
    return false;
  }
  return true;
}

/* The value of key in a "k=v\x1fk=v" label string, or NULL; its length is
 * label_len(). */
static const char *label_in(const char *labels, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = labels; *p;) {
    if (!strncmp(p, key, kl) && p[kl] == '=')
      return p + kl + 1;
    p = strchr(p, '\x1f');
    if (!p)
      break;
    p++;
  }
  return NULL;
}

static size_t label_len(const char *v) { return strcspn(v, "\x1f"); }

int64_t tw_cat_snap_find_key(const struct tw_cat_snap *s, uint64_t key,
                             int market) {
  if (!s->hidx)
    return -1;
  for (size_t j = slot_hash(key, market) & s->hmask;; j = (j + 1) & s->hmask) {
    uint32_t v = s->hidx[j];
    if (!v)
      return -1;
    if (s->offers[v - 1].key == key && s->offers[v - 1].market == market)
      return v - 1;
  }
}

/* The offer with a canonical id (account:region:zone[/rack]:type:market),
 * or -1. */
static int64_t find_canonical(const struct tw_cat_snap *s, const char *id) {
  /* the type runs up to the last colon (types hold no colon, but be
   * exact) */
  const char *c1 = strchr(id, ':');
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  const char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
  const char *c4 = strrchr(id, ':');
  if (!c3 || c4 <= c3)
    return -1;
  int market;
  if (!strcmp(c4 + 1, "spot"))
    market = TW_MARKET_SPOT;
  else if (!strcmp(c4 + 1, "on-demand"))
    market = TW_MARKET_ON_DEMAND;
  else if (!strcmp(c4 + 1, "private"))
    market = TW_MARKET_PRIVATE;
  else
    return -1;
  const char *acct = id, *reg = c1 + 1, *zone = c2 + 1, *type = c3 + 1;
  size_t al = (size_t)(c1 - id), rl = (size_t)(c2 - reg),
         zl = (size_t)(c3 - zone), tl = (size_t)(c4 - type);
  /* "zone/rack" */
  const char *rack = memchr(zone, '/', zl);
  size_t rkl = 0;
  if (rack) {
    rkl = zl - (size_t)(rack - zone) - 1;
    zl = (size_t)(rack - zone);
    rack++;
  }
  uint64_t key =
      tw_cat_offer_key(acct, al, reg, rl, zone, zl, rack, rkl, type, tl);
  int64_t hit = tw_cat_snap_find_key(s, key, market);
  if (hit < 0 && zl) {
    /* an AWS offer keyed by its zone id, asked for by the zone's name */
    uint32_t zs = tw_strpool_lookup(&s->pool, zone, zl);
    for (uint32_t k = 0; zs != UINT32_MAX && k < s->n_locs && hit < 0; k++) {
      const struct tw_cat_loc *l = &s->locs[k];
      if (l->zone != zs || !l->zone_id)
        continue;
      const char *zid = tw_strpool_str(&s->pool, l->zone_id);
      key = tw_cat_offer_key(acct, al, reg, rl, zid, strlen(zid), rack, rkl,
                             type, tl);
      hit = tw_cat_snap_find_key(s, key, market);
    }
  }
  return hit;
}

bool tw_cat_snap_find(const struct tw_cat_snap *s, const char *id, size_t *i) {
  int64_t hit = find_canonical(s, id);
  if (hit < 0) {
    /* an adapter's own name for an offer (see catalog_adapt.c) */
    size_t idl = strlen(id);
    for (size_t k = 0; k < s->n_offers && hit < 0; k++) {
      if (!s->offers[k].labels)
        continue;
      const char *own =
          label_in(tw_strpool_str(&s->pool, s->offers[k].labels), "id");
      if (own && label_len(own) == idl && !strncmp(own, id, idl))
        hit = (int64_t)k;
    }
  }
  if (hit < 0)
    return false;
  *i = (size_t)hit;
  return true;
}

bool tw_cat_snap_companion(const struct tw_cat_snap *s, size_t i,
                           size_t *other) {
  const struct tw_cat_offer *o = &s->offers[i];
  if (o->market != TW_MARKET_SPOT && o->market != TW_MARKET_ON_DEMAND)
    return false;
  int64_t hit = tw_cat_snap_find_key(
      s, o->key,
      o->market == TW_MARKET_SPOT ? TW_MARKET_ON_DEMAND : TW_MARKET_SPOT);
  if (hit < 0)
    return false;
  *other = (size_t)hit;
  return true;
}

/* Labels Tradewind computes itself; an adapter's own are kept apart. */
static bool reserved_label(const char *k, size_t n) {
  static const char *const R[] = {"jurisdiction", "country", "geo",
                                  "interruption", "id",
                                  "accelerator_row", NULL};
  for (int i = 0; R[i]; i++)
    if (strlen(R[i]) == n && !memcmp(R[i], k, n))
      return true;
  return false;
}

void tw_cat_snap_to_offer(const struct tw_cat_snap *s, size_t i,
                          struct tw_offer *out) {
  struct tw_cat_view v;
  tw_cat_snap_view(s, i, &v);
  tw_offer_init(out);
  TW_SET(out->provider, v.provider);
  TW_SET(out->account, v.account);
  TW_SET(out->region, v.region);
  TW_SET(out->zone, *v.zone ? v.zone : v.zone_id);
  TW_SET(out->zone_id, v.zone_id);
  TW_SET(out->rack, v.rack);
  TW_SET(out->instance_type, v.instance_type);
  out->arch = v.arch;
  out->vcpus = v.vcpus;
  out->memory_mib = v.memory_mib;
  /* a share of one device is no whole device to placement */
  if (v.accel_milli >= 1000) {
    /* the adapter's own name: adapters read it back at launch (Slurm maps
     * it to its GRES type); placement matches "A100" to "a100" either way */
    TW_SET(out->accel_name, v.accel_listed);
    out->accel_count = v.accel_milli / 1000;
    out->accel_memory_mib = v.accel_memory_mib;
  }
  out->market = v.market;
  out->price_uusd_per_hour = v.price_uusd_per_hour;
  out->billing_granularity_s = v.granularity_s;
  out->min_charge_s = v.min_charge_s;
  out->interruption_pct = v.interruption_pct;
  out->capacity = v.capacity;
  out->price_observed_ms = v.observed_ms;
  if (v.source && strcmp(v.currency, "USD")) {
    /* converted here: the provider's own price and the rate it went
     * through travel with the offer (the Alibaba adapter's spot limits
     * are set in CNY at the same rate) */
    TW_SET(out->price_currency, v.currency);
    out->price_micro_per_hour = v.source_price_micro;
    out->fx_nusd_per_unit = v.source->rate.nusd_per_unit;
    TW_SET(out->fx_date, v.rate_date);
  }
  if (v.quarantine_peers) {
    char a[24], m[24];
    tw_norm_fmt_micro(v.price_uusd_per_hour, a, sizeof a);
    tw_norm_fmt_micro(v.quarantine_median_uusd, m, sizeof m);
    if (v.market == TW_MARKET_SPOT) {
      struct tw_cat_view od;
      size_t k;
      if (tw_cat_snap_companion(s, i, &k))
        tw_cat_snap_view(s, k, &od), tw_norm_fmt_micro(od.price_uusd_per_hour,
                                                       a, sizeof a);
      snprintf(out->quarantine, sizeof out->quarantine,
               "its on-demand $%.16s/h is under a quarter of the median "
               "$%.16s/h of %u such offers",
               a, m, v.quarantine_peers);
    } else {
      snprintf(out->quarantine, sizeof out->quarantine,
               "$%.16s/h is under a quarter of the median $%.16s/h of %u such "
               "offers",
               a, m, v.quarantine_peers);
    }
  }
  const struct tw_provider_info *cloud = tw_cat_cloud(s->adapters, v.provider);
  tw_cat_type_family(cloud, v.instance_type, out->family, sizeof out->family);
  out->type_traits = tw_cat_type_traits(cloud, v.instance_type);
  tw_cat_snap_offer_id(s, i, out->id, sizeof out->id);
  const char *own = label_in(v.labels, "id");
  if (own)
    snprintf(out->id, sizeof out->id, "%.*s", (int)label_len(own), own);
  /* the adapter's labels first: they were all it set before the catalog
   * existed, and it may read them back */
  for (const char *p = v.labels; *p;) {
    const char *e = strchr(p, '\x1f');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (eq && !reserved_label(p, (size_t)(eq - p))) {
      char k[32], val[64];
      if ((size_t)(eq - p) < sizeof k &&
          n - (size_t)(eq - p) - 1 < sizeof val) {
        snprintf(k, sizeof k, "%.*s", (int)(eq - p), p);
        snprintf(val, sizeof val, "%.*s", (int)(n - (size_t)(eq - p) - 1),
                 eq + 1);
        tw_offer_set_label(out, k, val);
      }
    }
    if (!e)
      break;
    p = e + 1;
  }
  if (*v.jurisdiction)
    tw_offer_set_label(out, "jurisdiction", v.jurisdiction);
  if (*v.country)
    tw_offer_set_label(out, "country", v.country);
  if (v.has_geo) {
    char geo[48];
    snprintf(geo, sizeof geo, "%.6f,%.6f", v.lat_e6 / 1e6, v.lon_e6 / 1e6);
    tw_offer_set_label(out, "geo", geo);
  }
  if (v.risk != TW_RISK_UNKNOWN)
    tw_offer_set_label(out, "interruption", tw_risk_str(v.risk));
}

size_t tw_cat_snap_offers_of(const struct tw_cat_snap *s,
                             const char *const *accounts, size_t n_accounts,
                             struct tw_offer_list *out) {
  size_t added = 0;
  uint32_t *ids = tw_malloc((n_accounts ? n_accounts : 1) * sizeof *ids);
  for (size_t a = 0; a < n_accounts; a++)
    ids[a] = tw_strpool_lookup(&s->pool, accounts[a], strlen(accounts[a]));
  for (size_t i = 0; i < s->n_offers; i++) {
    uint32_t acct = s->locs[s->offers[i].loc].account;
    bool want = n_accounts == 0;
    for (size_t a = 0; a < n_accounts && !want; a++)
      want = ids[a] == acct;
    if (!want)
      continue;
    tw_cat_snap_to_offer(s, i, tw_offer_list_add(out));
    added++;
  }
  free(ids);
  return added;
}

size_t tw_cat_snap_offers_unserved(const struct tw_cat_snap *s,
                                   const char *const *accounts,
                                   size_t n_accounts,
                                   struct tw_offer_list *out) {
  size_t added = 0;
  uint32_t *ids = tw_malloc((n_accounts ? n_accounts : 1) * sizeof *ids);
  for (size_t a = 0; a < n_accounts; a++)
    ids[a] = tw_strpool_lookup(&s->pool, accounts[a], strlen(accounts[a]));
  for (size_t i = 0; i < s->n_offers; i++) {
    const struct tw_cat_offer *o = &s->offers[i];
    uint32_t acct = s->locs[o->loc].account;
    bool served = false;
    for (size_t a = 0; a < n_accounts && !served; a++)
      served = ids[a] == acct;
    if (served || o->src >= s->n_srcs || strcmp(s->srcs[o->src].kind, "file"))
      continue;
    struct tw_offer *x = tw_offer_list_add(out);
    tw_cat_snap_to_offer(s, i, x);
    x->no_account = true;
    added++;
  }
  free(ids);
  return added;
}
