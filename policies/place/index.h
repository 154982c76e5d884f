/* index.h - an index over the offers placement reads, so a decision visits
 * a few dozen offers instead of scanning a catalog of a million.
 *
 * Offers come through a struct tw_offer_source: an array of struct
 * tw_offer today, the catalog's compact table once it lands (it only has
 * to hand out offer i as a struct tw_offer, in place or materialized into
 * the scratch given).  The index copies what the search needs into a few
 * compact columns and groups:
 *
 *   shapes     distinct machines (provider, type, arch, vCPUs, memory,
 *              accelerators): shape-scope filters run once per shape;
 *   locations  distinct places (provider, account, region, zone, zone id,
 *              rack, labels): location-scope filters run once per place;
 *   regions    "provider:region", for the network matrix;
 *   lists      each shape's offers by price, each location's offers by
 *              price, each (shape, region)'s offers by price, and a hash
 *              of (shape, location) cells;
 *   ids        each offer's rank in id order (ties break on it), and a
 *              hash from id to offer.
 *
 * Build cost is O(n log n) (about a second per million offers); the
 * scheduler rebuilds when it refreshes offers, the API borrows the last
 * one built.  Memory: about 110 bytes per offer beyond the source.
 *
 * Threads: immutable once built; any number of readers. */
#ifndef TW_POLICIES_INDEX_H
#define TW_POLICIES_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_offer;

struct tw_offer_source {
  size_t n;
  /* Offer i: a pointer into the source (then `stable` is true and the
   * pointer lives as long as the source), or scratch filled in. */
  const struct tw_offer *(*get)(const struct tw_offer_source *src, size_t i,
                                struct tw_offer *scratch);
  const void *ctx;
  bool stable;
  /* Called by tw_offer_index_free() when set: the index owns the source's
   * storage (tw_offer_index_build_take). */
  void (*free)(struct tw_offer_source *src);
};

/* A source over a plain array (borrowed: it must outlive the index). */
void tw_offer_source_array(struct tw_offer_source *src,
                           const struct tw_offer *offers, size_t n);

struct tw_offer_index;

/* Builds the index over src, which must outlive it.  TW_E_TOOBIG past
 * 2^31 offers. */
enum tw_rc tw_offer_index_build(const struct tw_offer_source *src,
                                struct tw_offer_index **out,
                                struct tw_err *err);
/* As above, over an array the index takes ownership of (freed with
 * free() when the index is). */
enum tw_rc tw_offer_index_build_take(struct tw_offer *offers, size_t n,
                                     struct tw_offer_index **out,
                                     struct tw_err *err);

/* From now on the index owns the array its tw_offer_source_array source
 * points at, and free()s it with itself: the scheduler hands an index its
 * offers when it replaces them, so plans still holding the index (REST
 * handlers) keep reading valid offers.  Call only while holding a
 * reference, from the thread that built it. */
void tw_offer_index_own_source(struct tw_offer_index *ix);

/* Reference counting: build returns one reference. */
struct tw_offer_index *tw_offer_index_ref(struct tw_offer_index *ix);
void tw_offer_index_unref(struct tw_offer_index *ix);

size_t tw_offer_index_count(const struct tw_offer_index *ix);
/* Offer i, as the source's get. */
const struct tw_offer *tw_offer_index_get(const struct tw_offer_index *ix,
                                          size_t i, struct tw_offer *scratch);
/* The offer with this id, or -1. */
long tw_offer_index_find(const struct tw_offer_index *ix, const char *id);
/* Unique in the process: caches key on it. */
uint64_t tw_offer_index_generation(const struct tw_offer_index *ix);

struct tw_offer_index_stats {
  size_t offers, shapes, locations, regions, cells;
  size_t bytes; /* the index's own memory */
  int64_t build_us;
};
void tw_offer_index_stats(const struct tw_offer_index *ix,
                          struct tw_offer_index_stats *out);

#endif
