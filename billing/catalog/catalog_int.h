/* catalog_int.h - what the files of the catalog share and nobody else:
 * the interned-string pool, the packed records of a snapshot, and the
 * builder that makes one. */
#ifndef TW_BILLING_CATALOG_INT_H
#define TW_BILLING_CATALOG_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "billing/catalog/catalog.h"

/* ---- hashing
 * ------------------------------------------------------------------- */

uint64_t tw_cat_hash(const void *data, size_t len, uint64_t seed);
static inline uint64_t tw_cat_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* The identity of an offer across snapshots and sources, without its
 * market: account, region, zone (its id when known), rack and type. */
uint64_t tw_cat_offer_key(const char *account, size_t account_len,
                          const char *region, size_t region_len,
                          const char *zone_key, size_t zone_len,
                          const char *rack, size_t rack_len, const char *type,
                          size_t type_len);
/* The tie-breaker of the sort orders: a stable hash of key and market. */
static inline uint64_t tw_cat_tie(uint64_t key, int market) {
  return tw_cat_mix(key ^ ((uint64_t)market * 0x9e3779b97f4a7c15ULL));
}

/* ---- interned strings
 * ---------------------------------------------------------- */

/* Strings are ids: byte offsets into buf, each NUL-terminated; 0 is "". */
struct tw_strpool {
  char *buf;
  size_t len, cap;
  uint32_t *slots; /* open addressing; 0 = empty */
  size_t nslots, count;
};

void tw_strpool_init(struct tw_strpool *p);
void tw_strpool_release(struct tw_strpool *p);
uint32_t tw_strpool_intern(struct tw_strpool *p, const char *s, size_t len);
static inline const char *tw_strpool_str(const struct tw_strpool *p,
                                         uint32_t id) {
  return p->buf + id;
}
/* The id of s when interned, else UINT32_MAX. */
uint32_t tw_strpool_lookup(const struct tw_strpool *p, const char *s,
                           size_t len);

/* ---- records
 * --------------------------------------------------------------------- */

/* Where: shared by every offer of one location. */
struct tw_cat_loc {
  uint32_t provider, account, region, zone, zone_id, rack;
  uint32_t country, jurisdiction, location;
  int32_t lat_e6, lon_e6;
  uint8_t has_geo, local_zone;
};

/* What: shared by every offer of one instance type. */
struct tw_cat_shape {
  uint32_t provider, type;
  uint32_t accel, accel_vendor; /* 0: none */
  uint32_t accel_listed;        /* the adapter's own name when it differs
                                   from the canonical one; 0 otherwise */
  int32_t vcpus, accel_milli;
  int64_t memory_mib, accel_memory_mib;
  uint8_t arch, accel_kind;
};

/* One offer: 64 bytes. */
struct tw_cat_offer {
  int64_t price_uusd;      /* per hour */
  int64_t src_price_micro; /* per hour, in the source's currency */
  int64_t observed_ms;
  uint64_t key; /* tw_cat_offer_key */
  uint32_t loc, shape;
  uint32_t row;     /* line in the file, position in the list */
  uint32_t labels;  /* string id of "k=v\x1fk=v"; 0 none */
  int32_t capacity; /* -1 unknown */
  int32_t granularity_s, min_charge_s;
  uint16_t src; /* index in the snapshot's sources */
  uint8_t market;
  uint8_t risk; /* see tw_cat_risk_* below */
};

/* An offer's interruption risk in one byte: an adapter's own estimate in
 * percent per month (0..100) is kept exactly; data that gives only a band
 * (the Spot Advisor feed) is stored as TW_CAT_RISK_BAND + band; unknown is
 * TW_CAT_RISK_NONE. */
#define TW_CAT_RISK_NONE 255
#define TW_CAT_RISK_BAND 200
static inline uint8_t tw_cat_risk_of_pct(int pct) {
  return pct < 0 ? TW_CAT_RISK_NONE : pct > 100 ? 100 : (uint8_t)pct;
}
static inline uint8_t tw_cat_risk_of_band(enum tw_risk b) {
  return b == TW_RISK_UNKNOWN ? TW_CAT_RISK_NONE
                              : (uint8_t)(TW_CAT_RISK_BAND + b);
}
static inline enum tw_risk tw_cat_risk_band(uint8_t r) {
  if (r == TW_CAT_RISK_NONE)
    return TW_RISK_UNKNOWN;
  if (r >= TW_CAT_RISK_BAND)
    return (enum tw_risk)(r - TW_CAT_RISK_BAND);
  return r < 5     ? TW_RISK_LT5
         : r < 10  ? TW_RISK_5_10
         : r < 15  ? TW_RISK_10_15
         : r <= 20 ? TW_RISK_15_20
                   : TW_RISK_GT20;
}
static inline int tw_cat_risk_pct(uint8_t r) {
  if (r == TW_CAT_RISK_NONE)
    return -1;
  return r >= TW_CAT_RISK_BAND ? tw_risk_pct(tw_cat_risk_band(r)) : r;
}

/* An offer the price sanity rule holds (docs/catalog.md): priced under a
 * quarter of the median of its shape's offers in its market. */
struct tw_cat_quar {
  uint32_t offer;       /* index in offers */
  uint32_t peers;       /* offers of the shape and market */
  int64_t median_uusd;  /* their median price per hour */
};

/* The rule: under median / TW_CAT_SANITY_RATIO, among at least
 * TW_CAT_SANITY_PEERS offers of the same shape and market. */
#define TW_CAT_SANITY_RATIO 4
#define TW_CAT_SANITY_PEERS 4

struct tw_cat_snap {
  atomic_int refs;
  uint64_t version;
  int64_t built_ms;
  struct tw_strpool pool;
  struct tw_cat_loc *locs;
  uint32_t n_locs;
  struct tw_cat_shape *shapes;
  uint32_t n_shapes;
  struct tw_cat_offer *offers; /* grouped by shape */
  size_t n_offers;
  uint32_t *shape_start; /* n_shapes + 1 */
  uint32_t *by_loc;      /* offer indexes grouped by location */
  uint32_t *loc_start;   /* n_locs + 1 */
  uint32_t *by_price;    /* (price, tie) order */
  uint32_t *hidx;        /* (key, market) -> index + 1 */
  size_t hmask;
  struct tw_cat_source_info *srcs;
  size_t n_srcs;
  struct tw_cat_quar *quar; /* by offer index; NULL when none */
  size_t n_quar;
  size_t bytes;
  /* The adapter registry the snapshot was built with (borrowed, static):
   * views read each offer's provider rules through it (clouds.h). */
  const struct tw_provider_ops *const *adapters;
};

/* ---- the builder
 * ------------------------------------------------------------------ */

/* Both markets of one key share a probe sequence (the key is a hash
 * already), so a row's lookups and inserts touch the same cache lines. */
struct tw_cat_slot {
  uint64_t key;
  uint32_t idx; /* offer index + 1; 0 empty */
  uint8_t market;
};

struct tw_cat_builder {
  struct tw_cat_snap *s;
  size_t cap_locs, cap_shapes, cap_offers;
  uint32_t *loc_ht, *shape_ht; /* index + 1 */
  size_t loc_mask, shape_mask;
  /* offers by (key, market): the slot's hash beside the index, so a probe
   * rarely touches the offers array */
  struct tw_cat_slot *key_ht;
  size_t key_mask;
};

void tw_cat_builder_init(struct tw_cat_builder *b);
/* Frees what was built when not finished. */
void tw_cat_builder_release(struct tw_cat_builder *b);
uint32_t tw_cat_bld_str(struct tw_cat_builder *b, const char *s, size_t len);
static inline uint32_t tw_cat_bld_cstr(struct tw_cat_builder *b,
                                       const char *s) {
  return tw_cat_bld_str(b, s, s ? __builtin_strlen(s) : 0);
}
/* Makes room for n offers ahead of time (a CSV's size tells roughly how
 * many rows it holds): no regrowth or rehash while ingesting. */
void tw_cat_bld_reserve(struct tw_cat_builder *b, size_t n);
/* Adds (or finds) a source and returns its index. */
uint16_t tw_cat_bld_source(struct tw_cat_builder *b,
                           const struct tw_cat_source_info *info);
struct tw_cat_source_info *tw_cat_bld_source_at(struct tw_cat_builder *b,
                                                uint16_t i);
uint32_t tw_cat_bld_loc(struct tw_cat_builder *b, const struct tw_cat_loc *l);
uint32_t tw_cat_bld_shape(struct tw_cat_builder *b,
                          const struct tw_cat_shape *sh);
/* The offer index with (key, market), or -1. */
int64_t tw_cat_bld_find(const struct tw_cat_builder *b, uint64_t key,
                        int market);
/* Appends o (its loc and shape from this builder); false, adding nothing,
 * when an offer with the same key and market is already there. */
bool tw_cat_bld_offer(struct tw_cat_builder *b, const struct tw_cat_offer *o);
/* Sorts, indexes and hands over the snapshot (refs = 1); the builder is
 * left empty. */
struct tw_cat_snap *tw_cat_bld_finish(struct tw_cat_builder *b,
                                      uint64_t version, int64_t built_ms);

/* Fills the geography of l from the region table (country, jurisdiction,
 * coordinates).  Returns false when the region is unknown. */
bool tw_cat_loc_geo(struct tw_cat_builder *b, struct tw_cat_loc *l,
                    const struct tw_regions *regions, const char *provider,
                    const char *region);

/* ---- the normalized CSV form of a source table (the store keeps it)
 * ----------------- */

/* Writes s's offers (one source) as CSV text with a header line. */
void tw_cat_snap_write_csv(const struct tw_cat_snap *s, struct tw_buf *out);
/* Reads that text back into a snapshot of one source described by info,
 * its geography from regions (may be NULL). */
enum tw_rc tw_cat_snap_read_csv(const char *data, size_t len,
                                const struct tw_cat_source_info *info,
                                const struct tw_regions *regions,
                                struct tw_cat_snap **out, struct tw_err *err);
/* The index of the offer with (key, market), or -1. */
int64_t tw_cat_snap_find_key(const struct tw_cat_snap *s, uint64_t key,
                             int market);
/* SHA-256 of data as 64 hex digits into out[65]. */
void tw_cat_sha256_hex(const void *data, size_t len, char out[65]);

/* ---- store
 * ---------------------------------------------------------------------- */

/* Writes one source table as a new snapshot row (and its spot prices that
 * changed since prev, which may be NULL) and keeps the newest `keep` of
 * that source; sets *version. */
enum tw_rc tw_cat_store_put(struct tw_store *st, const struct tw_cat_snap *s,
                            const struct tw_cat_snap *prev, int keep,
                            int64_t *version, struct tw_err *err);
/* Loads the newest stored table of source `name`; *out NULL when none. */
enum tw_rc tw_cat_store_latest(struct tw_store *st, const char *name,
                               const struct tw_regions *regions,
                               struct tw_cat_snap **out, struct tw_err *err);
enum tw_rc tw_cat_store_history(struct tw_store *st, const char *offer_id,
                                size_t max, struct tw_cat_price_point **out,
                                size_t *n, struct tw_err *err);

#endif
