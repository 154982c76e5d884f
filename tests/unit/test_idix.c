/* tw_idix (broker/base/idix.h): every id put is found at its position,
 * absent ids are not, across growth and reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>

#include "broker/base/idix.h"

static void finds_every_id_put_and_no_other(void **state) {
  (void)state;
  struct tw_idix x = {0};
  assert_int_equal(tw_idix_get(&x, 7), SIZE_MAX); /* never reset: empty */
  /* ids that collide in the low bits, put one by one: the table grows
   * from 64 slots to more than 200,000 */
  const size_t n = 100000;
  for (size_t k = 0; k < n; k++)
    tw_idix_put(&x, (int64_t)(k << 20) - 5, k);
  assert_int_equal(x.n, n);
  assert_true(x.cap >= 2 * n);
  for (size_t k = 0; k < n; k++)
    assert_int_equal(tw_idix_get(&x, (int64_t)(k << 20) - 5), k);
  assert_int_equal(tw_idix_get(&x, 0), SIZE_MAX);
  assert_int_equal(tw_idix_get(&x, (int64_t)(n << 20) - 5), SIZE_MAX);
  assert_int_equal(tw_idix_get(&x, INT64_MIN), SIZE_MAX);
  /* a reset forgets all; what is put after is found again */
  tw_idix_reset(&x, 3);
  assert_int_equal(x.n, 0);
  assert_int_equal(tw_idix_get(&x, -5), SIZE_MAX);
  tw_idix_put(&x, INT64_MAX, 2);
  tw_idix_put(&x, -1, 0);
  assert_int_equal(tw_idix_get(&x, INT64_MAX), 2);
  assert_int_equal(tw_idix_get(&x, -1), 0);
  assert_int_equal(tw_idix_get(&x, 1), SIZE_MAX);
  tw_idix_free(&x);
  assert_int_equal(tw_idix_get(&x, -1), SIZE_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(finds_every_id_put_and_no_other),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
