/* sort.c - a stable merge sort with a context pointer (sort.h). */
#include "broker/base/sort.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

/* Below this many elements insertion sort beats merging. */
#define SMALL 12

struct sorter {
  size_t size;
  tw_sort_cmp_fn cmp;
  void *ctx;
  char *tmp; /* n/2 + 1 elements: the left half of a merge, or one key */
};

/* The common sizes (indexes into an array, pointers) get a constant-size
 * copy the compiler inlines; memcpy with a variable size is a call. */
static inline void copy(void *dst, const void *src, size_t size) {
  if (size == 4)
    memcpy(dst, src, 4);
  else if (size == 8)
    memcpy(dst, src, 8);
  else
    memcpy(dst, src, size);
}

static void insertion(const struct sorter *s, char *base, size_t n) {
  size_t size = s->size;
  for (size_t i = 1; i < n; i++) {
    char *at = base + i * size;
    if (s->cmp(at - size, at, s->ctx) <= 0)
      continue;
    copy(s->tmp, at, size);
    size_t j = i;
    do {
      copy(base + j * size, base + (j - 1) * size, size);
      j--;
    } while (j > 0 && s->cmp(base + (j - 1) * size, s->tmp, s->ctx) > 0);
    copy(base + j * size, s->tmp, size);
  }
}

static void msort(const struct sorter *s, char *base, size_t n) {
  if (n <= SMALL) {
    insertion(s, base, n);
    return;
  }
  size_t size = s->size, nl = n / 2;
  char *right = base + nl * size, *end = base + n * size;
  msort(s, base, nl);
  msort(s, right, n - nl);
  /* already in order (sorted input, or runs that do not overlap) */
  if (s->cmp(right - size, right, s->ctx) <= 0)
    return;
  /* Merge the left half, copied out, with the right half in place: the
   * output never overtakes the right half's next unread element. */
  memcpy(s->tmp, base, nl * size);
  char *l = s->tmp, *lend = s->tmp + nl * size, *r = right, *out = base;
  while (l < lend && r < end) {
    /* <= keeps equal elements in their order: the sort is stable */
    if (s->cmp(l, r, s->ctx) <= 0) {
      copy(out, l, size);
      l += size;
    } else {
      copy(out, r, size);
      r += size;
    }
    out += size;
  }
  if (l < lend)
    memcpy(out, l, (size_t)(lend - l));
}

void tw_sort_r(void *base, size_t n, size_t size, tw_sort_cmp_fn cmp,
               void *ctx) {
  if (n < 2 || !size)
    return;
  char one[64];
  struct sorter s = {.size = size, .cmp = cmp, .ctx = ctx};
  bool heap = n > SMALL || size > sizeof one;
  s.tmp = heap ? tw_malloc((n / 2 + 1) * size) : one;
  msort(&s, base, n);
  if (heap)
    free(s.tmp);
}
