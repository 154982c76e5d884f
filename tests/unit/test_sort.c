/* tw_sort_r (broker/base/sort.h): order, stability, the context, sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/sort.h"

struct rec {
  int key;
  int seq; /* the input position, to check stability */
};

/* ctx: +1 ascending, -1 descending */
static int by_key(const void *a, const void *b, void *ctx) {
  int dir = *(const int *)ctx;
  const struct rec *x = a, *y = b;
  return dir * ((x->key > y->key) - (x->key < y->key));
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void
sorts_in_the_context_order_and_keeps_ties_in_input_order(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 2, 3, 11, 12, 13, 64, 1000, 100003};
  uint64_t seed = 0x2545f4914f6cdd1dULL;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t n = sizes[si];
    struct rec *v = malloc((n ? n : 1) * sizeof *v);
    for (int dir = -1; dir <= 1; dir += 2) {
      for (size_t i = 0; i < n; i++)
        v[i] = (struct rec){(int)(rnd(&seed) % 50), (int)i};
      tw_sort_r(v, n, sizeof *v, by_key, &dir);
      for (size_t i = 1; i < n; i++) {
        int c = by_key(&v[i - 1], &v[i], &dir);
        if (c > 0)
          fail_msg("n=%zu dir=%d out of order at %zu (seed %llx)", n, dir, i,
                   (unsigned long long)seed);
        if (c == 0 && v[i - 1].seq > v[i].seq)
          fail_msg("n=%zu dir=%d unstable at %zu", n, dir, i);
      }
    }
    free(v);
  }
}

/* An index sort, as the offer index does it: the elements are positions,
 * the context the table they point into. */
static int by_name(const void *a, const void *b, void *ctx) {
  const char *const *names = ctx;
  return strcmp(names[*(const uint32_t *)a], names[*(const uint32_t *)b]);
}

static void sorts_indexes_through_the_context_table(void **state) {
  (void)state;
  const char *names[] = {"m5.large", "c6g.xlarge", "a1", "z9", "c6g.large"};
  uint32_t order[] = {0, 1, 2, 3, 4};
  tw_sort_r(order, 5, sizeof order[0], by_name, names);
  const uint32_t want[] = {2, 4, 1, 0, 3};
  assert_memory_equal(order, want, sizeof want);
}

/* Elements bigger than the small-sort buffer, already sorted and reversed. */
struct big {
  char pad[100];
  int64_t key;
};
static int by_big(const void *a, const void *b, void *ctx) {
  (void)ctx;
  const struct big *x = a, *y = b;
  return (x->key > y->key) - (x->key < y->key);
}

static void sorts_large_elements_sorted_and_reversed_input(void **state) {
  (void)state;
  for (size_t n = 1; n < 40; n += 7) {
    struct big *v = calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
      v[i].key = (int64_t)(n - i);
    tw_sort_r(v, n, sizeof *v, by_big, NULL);
    for (size_t i = 0; i < n; i++)
      assert_int_equal(v[i].key, (int64_t)(i + 1));
    tw_sort_r(v, n, sizeof *v, by_big, NULL); /* sorted stays sorted */
    for (size_t i = 0; i < n; i++)
      assert_int_equal(v[i].key, (int64_t)(i + 1));
    free(v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          sorts_in_the_context_order_and_keeps_ties_in_input_order),
      cmocka_unit_test(sorts_indexes_through_the_context_table),
      cmocka_unit_test(sorts_large_elements_sorted_and_reversed_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
