/* sort.h - a sort whose comparator takes a context pointer.
 *
 * qsort() has no context argument, so a comparator that needs more than
 * the two elements (an index's offer table, a queue's effective
 * priorities) would have to read it from a static or thread-local
 * variable.  glibc's qsort_r() and the BSDs' differ in argument order and
 * need _GNU_SOURCE; this one is ours and the same everywhere.
 *
 * Threads: reentrant; the only state is the caller's. */
#ifndef TW_BASE_SORT_H
#define TW_BASE_SORT_H

#include <stddef.h>

typedef int (*tw_sort_cmp_fn)(const void *a, const void *b, void *ctx);

/* Sorts n elements of size bytes at base in the order of cmp, which gets
 * ctx as its third argument.  Stable (a merge sort): equal elements keep
 * their order.  Allocates n/2 elements of scratch with tw_malloc (which
 * aborts on exhaustion) when n is above a small threshold. */
void tw_sort_r(void *base, size_t n, size_t size, tw_sort_cmp_fn cmp,
               void *ctx);

#endif
