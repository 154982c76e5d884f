/* idix.c - see idix.h. */
#include "broker/base/idix.h"

#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

static size_t slot_of(int64_t id, size_t mask) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & mask;
}

static void place(struct tw_idix_slot *t, size_t mask, int64_t id,
                  size_t pos1) {
  size_t i = slot_of(id, mask);
  while (t[i].pos)
    i = (i + 1) & mask;
  t[i].id = id;
  t[i].pos = pos1;
}

void tw_idix_reset(struct tw_idix *x, size_t want) {
  size_t cap = 64;
  while (cap < want * 2)
    cap *= 2;
  if (cap != x->cap) {
    free(x->slot);
    x->slot = tw_calloc(cap, sizeof *x->slot);
    x->cap = cap;
  } else {
    memset(x->slot, 0, cap * sizeof *x->slot);
  }
  x->n = 0;
}

void tw_idix_put(struct tw_idix *x, int64_t id, size_t pos) {
  if ((x->n + 1) * 2 > x->cap) {
    struct tw_idix_slot *old = x->slot;
    size_t old_cap = x->cap;
    x->slot = NULL;
    x->cap = 0;
    tw_idix_reset(x, (x->n + 1) * 2);
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].pos) {
        place(x->slot, x->cap - 1, old[i].id, old[i].pos);
        x->n++;
      }
    free(old);
  }
  place(x->slot, x->cap - 1, id, pos + 1);
  x->n++;
}

size_t tw_idix_get(const struct tw_idix *x, int64_t id) {
  if (!x->cap)
    return SIZE_MAX;
  size_t mask = x->cap - 1;
  for (size_t i = slot_of(id, mask); x->slot[i].pos; i = (i + 1) & mask)
    if (x->slot[i].id == id)
      return x->slot[i].pos - 1;
  return SIZE_MAX;
}

void tw_idix_free(struct tw_idix *x) {
  free(x->slot);
  x->slot = NULL;
  x->cap = x->n = 0;
}
