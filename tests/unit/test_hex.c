/* tw_hexval, tw_unhex (broker/base/hex.h): every byte value read back in
 * both cases, every non-digit refused, no read past a bad pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/hex.h"

static void every_character_has_its_value(void **state) {
  (void)state;
  const char *digits = "0123456789abcdef", *upper = "ABCDEF";
  for (int c = -1; c < 256; c++) {
    const char *d = c > 0 ? strchr(digits, c) : NULL;
    const char *u = c > 0 ? strchr(upper, c) : NULL;
    int want = d ? (int)(d - digits) : u ? 10 + (int)(u - upper) : -1;
    assert_int_equal(tw_hexval(c), want);
  }
}

static void every_byte_round_trips(void **state) {
  (void)state;
  uint8_t in[256], out[256];
  char lower[513], upper[513];
  for (int i = 0; i < 256; i++)
    in[i] = (uint8_t)i;
  for (int i = 0; i < 256; i++) {
    snprintf(lower + 2 * i, 3, "%02x", in[i]);
    snprintf(upper + 2 * i, 3, "%02X", in[i]);
  }
  memset(out, 0, sizeof out);
  assert_true(tw_unhex(lower, 256, out, true));
  assert_memory_equal(in, out, 256);
  memset(out, 0, sizeof out);
  assert_true(tw_unhex(upper, 256, out, false));
  assert_memory_equal(in, out, 256);
  /* upper case refused where only lower case is allowed: "AB" at byte 171 */
  assert_false(tw_unhex(upper, 256, out, true));
}

static void a_bad_pair_stops_the_read(void **state) {
  (void)state;
  uint8_t out[4] = {0};
  assert_false(tw_unhex("0g", 1, out, false));
  assert_false(tw_unhex("g0", 1, out, false));
  assert_false(tw_unhex("12 4", 2, out, false));
  assert_int_equal(out[0], 0x12); /* written up to the bad pair */
  /* a string shorter than asked: the NUL is the bad digit, nothing after
   * it is read (ASan would see a read past the literal) */
  char *s = strdup("abc");
  assert_false(tw_unhex(s, 2, out, false));
  free(s);
  assert_true(tw_unhex("", 0, out, false)); /* nothing asked, nothing read */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_character_has_its_value),
      cmocka_unit_test(every_byte_round_trips),
      cmocka_unit_test(a_bad_pair_stops_the_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
