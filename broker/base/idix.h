/* idix.h - an index of an array's positions by a 64-bit id.
 *
 * The scheduler's live attempts and the meter's states are arrays looked
 * up by attempt id on every pass; a scan made each pass quadratic in the
 * live attempts.  This is the one index both keep beside their array:
 * open addressing, linear probing, at most half full, holding (id,
 * position) pairs, so it needs nothing from the array to answer.
 *
 * Threads: none of its own; the caller's lock covers it. */
#ifndef TW_BASE_IDIX_H
#define TW_BASE_IDIX_H

#include <stddef.h>
#include <stdint.h>

struct tw_idix_slot {
  int64_t id;
  size_t pos; /* position + 1; 0: free */
};

struct tw_idix {
  struct tw_idix_slot *slot;
  size_t cap; /* a power of two, or 0 */
  size_t n;
};

/* Empties the index and gives it room for `want` entries (the table twice
 * as large, at least 64). */
void tw_idix_reset(struct tw_idix *x, size_t want);

/* Records id at position pos, growing the table (and keeping what it
 * holds) when it would be more than half full.  Each id is put once. */
void tw_idix_put(struct tw_idix *x, int64_t id, size_t pos);

/* id's position, or SIZE_MAX when it is not held. */
size_t tw_idix_get(const struct tw_idix *x, int64_t id);

void tw_idix_free(struct tw_idix *x);

#endif
