/* index_int.h - the index's layout, shared by index.c (building it) and
 * plan.c (searching it) and nobody else. */
#ifndef TW_POLICIES_INDEX_INT_H
#define TW_POLICIES_INDEX_INT_H

#include "broker/base/model.h"
#include "policies/place/index.h"

/* The columns the search reads per offer: 32 bytes, so a visit costs one
 * cache line at most. */
struct ix_offer {
  int64_t price; /* micro-USD per hour */
  uint32_t shape, loc;
  uint32_t id_rank;
  int32_t granularity_s; /* billing; 0 unknown */
  int32_t min_charge_s;
  uint8_t market;  /* enum tw_market */
  int8_t intr_pct; /* -1 unknown */
  uint8_t flags;   /* IX_OFFER_* */
  uint8_t pad;
};

/* What a counted plan needs of an offer to know that the built-in offer
 * filters pass it without materializing it (plan.c). */
#define IX_OFFER_CAPACITY 1u   /* capacity >= 0: private, counted nodes */
#define IX_OFFER_QUARANTINE 2u /* the catalog holds its price */

struct ix_range {
  uint32_t start, count;
};

struct ix_shape {
  uint32_t rep;           /* index into reps[] */
  struct ix_range all;    /* in by_shape */
  struct ix_range groups; /* in groups[]: one per region, region order */
  int64_t min_price;
  int vcpus;
  int64_t memory_mib;
  char family[24]; /* accelerator family ("A100"), "" for none */
};

struct ix_loc {
  uint32_t rep; /* index into reps[] */
  uint32_t region;
  struct ix_range all; /* in by_loc */
  int64_t min_price;
};

struct ix_region {
  char key[2 * TW_MODEL_NAME_MAX + 2]; /* "provider:region" */
  uint32_t n_locs;
  struct ix_range all; /* in by_region */
};

/* One (shape, region) list, in by_group. */
struct ix_group {
  uint32_t region;
  struct ix_range r;
};

/* A family of accelerators and the shapes that carry it. */
struct ix_family {
  char name[24];
  uint32_t *shapes;
  size_t n;
};

struct tw_offer_index {
  int refs; /* atomic */
  uint64_t generation;
  struct tw_offer_source src;
  struct tw_offer *owned; /* build_take */

  size_t n;
  struct ix_offer *offers;
  struct tw_offer *reps; /* representatives: one per shape, one per loc */
  size_t n_reps;

  struct ix_shape *shapes;
  size_t n_shapes;
  struct ix_loc *locs;
  size_t n_locs;
  struct ix_region *regions;
  size_t n_regions;
  const char **region_keys; /* regions[i].key, for cost.h */

  uint32_t *by_shape;  /* offers by (shape, price, id_rank) */
  uint32_t *by_loc;    /* by (loc, price, id_rank) */
  uint32_t *by_group;  /* by (shape, region, price, id_rank) */
  uint32_t *by_region; /* by (region, price, id_rank) */
  uint32_t *by_price;  /* every offer by (price, id_rank) */
  int64_t *prices;     /* prices in by_price order: counts by bisection */
  struct ix_group *groups;
  size_t n_groups;

  /* cells: (shape, loc) -> range in by_cell */
  uint32_t *by_cell; /* by (shape, loc, price, id_rank) */
  struct ix_cell {
    uint32_t shape, loc;
    struct ix_range r;
    uint32_t n_spot; /* offers in the spot market */
    uint32_t flags;  /* IX_OFFER_* of any of its offers */
  } * cells;
  size_t n_cells;
  uint32_t *cell_hash; /* cell index + 1, open addressing */
  size_t cell_hash_cap;

  uint32_t *id_hash; /* offer index + 1 */
  size_t id_hash_cap;

  struct ix_family *families;
  size_t n_families;
  uint32_t *plain_shapes; /* shapes without accelerators */
  size_t n_plain;

  int64_t build_us;
  size_t bytes;
};

/* Offers cheaper than price. */
size_t ix_count_cheaper(const struct tw_offer_index *ix, int64_t price);
/* The (shape, region) group, or NULL. */
const struct ix_group *ix_group_find(const struct tw_offer_index *ix,
                                     uint32_t shape, uint32_t region);
/* The cell of (shape, loc), or NULL. */
const struct ix_range *ix_cell_find(const struct tw_offer_index *ix,
                                    uint32_t shape, uint32_t loc);
/* The accelerator family of a name: up to the first '-', upper-cased
 * ("a100-80gb" -> "A100"). */
void ix_family_of(const char *accel, char out[24]);
const struct ix_family *ix_family_find(const struct tw_offer_index *ix,
                                       const char *family);
/* The region of a "provider:region" key, or -1. */
long ix_region_find(const struct tw_offer_index *ix, const char *key);

#endif
