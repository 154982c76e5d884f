/* tw_buf (broker/base/mem.h): formatted appends against snprintf at every
 * length around the buffer's room, so both the formatted-in-place and the
 * grown paths are taken; plain appends, reset and detach; decimal
 * integers against "%lld", appended and written by tw_i64_dec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

/* Appends of every length from 0 to 300 after every prefix length from 0
 * to 200: the result is what one snprintf of the whole would give. */
static void printf_matches_snprintf_at_every_length(void **state) {
  (void)state;
  char piece[301], want[600];
  for (size_t pre = 0; pre <= 200; pre += 7)
    for (size_t n = 0; n <= 300; n++) {
      memset(piece, 'a' + (int)(n % 26), n);
      piece[n] = '\0';
      struct tw_buf b;
      tw_buf_init(&b);
      for (size_t i = 0; i < pre; i++)
        tw_buf_addc(&b, (char)('0' + i % 10));
      tw_buf_printf(&b, "<%s|%zu>", piece, n);
      char head[201];
      for (size_t i = 0; i < pre; i++)
        head[i] = (char)('0' + i % 10);
      head[pre] = '\0';
      int w = snprintf(want, sizeof want, "%s<%s|%zu>", head, piece, n);
      assert_int_equal(b.len, (size_t)w);
      assert_string_equal(b.data, want);
      assert_true(b.cap > b.len);
      tw_buf_release(&b);
    }
}

/* Many small appends in a row keep every earlier byte. */
static void appends_in_a_row_keep_what_was_there(void **state) {
  (void)state;
  struct tw_buf b, ref;
  tw_buf_init(&b);
  tw_buf_init(&ref);
  for (int i = 0; i < 5000; i++) {
    tw_buf_printf(&b, "%d,", i);
    char t[16];
    int n = snprintf(t, sizeof t, "%d,", i);
    tw_buf_add(&ref, t, (size_t)n);
  }
  assert_int_equal(b.len, ref.len);
  assert_memory_equal(b.data, ref.data, b.len + 1);
  tw_buf_reset(&b);
  assert_int_equal(b.len, 0);
  assert_string_equal(b.data, "");
  tw_buf_printf(&b, "%s", "");
  assert_string_equal(b.data, "");
  tw_buf_printf(&b, "x%dy", 7);
  char *s = tw_buf_detach(&b);
  assert_string_equal(s, "x7y");
  free(s);
  tw_buf_release(&ref);
}

/* An empty format on a buffer never written still leaves a string. */
static void empty_format_on_a_new_buffer_is_a_string(void **state) {
  (void)state;
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b, "%s", "");
  assert_non_null(b.data);
  assert_string_equal(b.data, "");
  assert_int_equal(b.len, 0);
  tw_buf_release(&b);
}

/* Decimal appends equal "%lld" at the edges and around every power of
 * ten. */
static void integers_as_lld_would_print_them(void **state) {
  (void)state;
  int64_t vals[64];
  size_t n = 0;
  vals[n++] = 0;
  vals[n++] = INT64_MIN;
  vals[n++] = INT64_MAX;
  vals[n++] = INT64_MIN + 1;
  for (int64_t p = 1; p <= INT64_MAX / 10; p *= 10) {
    vals[n++] = p - 1;
    vals[n++] = -p;
  }
  for (size_t i = 0; i < n; i++) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_buf_adds(&b, "v=");
    tw_buf_add_i64(&b, vals[i]);
    char want[32];
    snprintf(want, sizeof want, "v=%lld", (long long)vals[i]);
    assert_string_equal(b.data, want);
    assert_int_equal(b.len, strlen(want));
    tw_buf_release(&b);
  }
}

/* The writer itself: the digits "%lld" prints, their count returned and
 * not one byte written past them, at the edges of int64, around every
 * power of ten and at every length of a pair loop's tail (9, 10, 99,
 * 100, 999, ...), positive and negative. */
static void the_decimal_writer_writes_what_lld_prints(void **state) {
  (void)state;
  int64_t vals[160];
  size_t n = 0;
  vals[n++] = 0;
  vals[n++] = INT64_MIN;
  vals[n++] = INT64_MAX;
  vals[n++] = INT64_MIN + 1;
  vals[n++] = INT64_MAX - 1;
  for (int64_t p = 1;; p *= 10) {
    int64_t near[] = {p - 1, p, p + 1};
    for (size_t k = 0; k < 3; k++) {
      vals[n++] = near[k];
      vals[n++] = -near[k];
    }
    if (p > INT64_MAX / 10)
      break;
  }
  for (size_t i = 0; i < n; i++) {
    char out[TW_I64_DEC_MAX + 8];
    memset(out, '#', sizeof out);
    size_t len = tw_i64_dec(out, vals[i]);
    char want[32];
    int w = snprintf(want, sizeof want, "%lld", (long long)vals[i]);
    assert_int_equal(len, (size_t)w);
    assert_true(len <= TW_I64_DEC_MAX);
    assert_memory_equal(out, want, len);
    for (size_t k = len; k < sizeof out; k++)
      assert_int_equal(out[k], '#');
  }
  /* INT64_MIN is the longest and fills the room exactly */
  char room[TW_I64_DEC_MAX];
  assert_int_equal(tw_i64_dec(room, INT64_MIN), TW_I64_DEC_MAX);
  assert_memory_equal(room, "-9223372036854775808", TW_I64_DEC_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(printf_matches_snprintf_at_every_length),
      cmocka_unit_test(appends_in_a_row_keep_what_was_there),
      cmocka_unit_test(empty_format_on_a_new_buffer_is_a_string),
      cmocka_unit_test(integers_as_lld_would_print_them),
      cmocka_unit_test(the_decimal_writer_writes_what_lld_prints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
