/* test_units.c - money, sizes and durations (broker/base/units.h): one
 * grammar per unit, read exactly, and the one rounding rule at its edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "broker/base/units.h"

struct money_case {
  const char *in;
  enum tw_rc rc;
  int64_t want;
  bool rounded;
};

static const struct money_case MONEY[] = {
    /* plain amounts, exact */
    {"0.000001", TW_OK, 1, false},
    {"3.1", TW_OK, 3100000, false},
    {"3.25", TW_OK, 3250000, false},
    {"3.250000", TW_OK, 3250000, false},
    {"3.2500000", TW_OK, 3250000, false}, /* trailing zeros carry nothing */
    {"0.1", TW_OK, 100000, false},
    {"0.29", TW_OK, 290000, false}, /* 0.29 * 1e6 in doubles: 289999.99.. */
    {"0.043700", TW_OK, 43700, false},
    {"12", TW_OK, 12000000, false},
    {"0", TW_OK, 0, false},
    {"-1.5", TW_OK, -1500000, false},
    {"9223372036854.775807", TW_OK, INT64_MAX, false},
    {"1234567890123.123456", TW_OK, 1234567890123123456LL, false},
    /* the forms both former parsers had between them */
    {"$1.25", TW_OK, 1250000, false},
    {"-$1.25", TW_OK, -1250000, false},
    {"+1", TW_OK, 1000000, false},
    {" 0.0437 ", TW_OK, 43700, false},
    {"3.", TW_OK, 3000000, false},
    {".5", TW_OK, 500000, false},
    {"1e3", TW_OK, 1000000000, false},
    {"2.5E-1", TW_OK, 250000, false},
    {"1e-6", TW_OK, 1, false},
    {"9.8304000000", TW_OK, 9830400, false},
    /* the rounding rule: nearest micro-dollar, a half away from zero */
    {"0.0000005", TW_OK, 1, true},
    {"0.00000049999999999999999999", TW_OK, 0, true},
    {"0.0000004", TW_OK, 0, true},
    {" 0.0000004 ", TW_OK, 0, true},
    {"0.0000015", TW_OK, 2, true},
    {"0.0000025", TW_OK, 3, true}, /* not to even: half up */
    {"0.1234565", TW_OK, 123457, true},
    {"0.12345649", TW_OK, 123456, true},
    {"-0.0000005", TW_OK, -1, true},
    {"-0.0000004", TW_OK, 0, true},
    {"5e-7", TW_OK, 1, true},
    {"1e-7", TW_OK, 0, true},
    {"0.0000001", TW_OK, 0, true},
    {"1e-99999", TW_OK, 0, true},
    {"9223372036854.7758074", TW_OK, INT64_MAX, true},
    /* out of range */
    {"9223372036854.775808", TW_E_TOOBIG, 0, false},
    {"9223372036854.7758075", TW_E_TOOBIG, 0, false},
    {"99999999999999999999", TW_E_TOOBIG, 0, false},
    {"1e999999", TW_E_TOOBIG, 0, false},
    /* malformed */
    {"", TW_E_INVALID, 0, false},
    {"   ", TW_E_INVALID, 0, false},
    {"$", TW_E_INVALID, 0, false},
    {".", TW_E_INVALID, 0, false},
    {"abc", TW_E_INVALID, 0, false},
    {"1.2.3", TW_E_INVALID, 0, false},
    {"3,25", TW_E_INVALID, 0, false},
    {"3 USD", TW_E_INVALID, 0, false},
    {"$-3", TW_E_INVALID, 0, false},
    {"--3", TW_E_INVALID, 0, false},
    {"1e", TW_E_INVALID, 0, false},
    {"1e+", TW_E_INVALID, 0, false},
    {"0x10", TW_E_INVALID, 0, false},
};

static void money_parse_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof MONEY / sizeof *MONEY; i++) {
    const struct money_case *c = &MONEY[i];
    int64_t v = -42;
    bool rounded = !c->rounded;
    struct tw_err err = {0};
    enum tw_rc rc = tw_money_parse(c->in, &v, &rounded, &err);
    if (rc != c->rc || (rc == TW_OK && (v != c->want || rounded != c->rounded)))
      fail_msg("money \"%s\": %s %lld rounded=%d, want %s %lld rounded=%d",
               c->in, tw_rc_str(rc), (long long)v, rounded, tw_rc_str(c->rc),
               (long long)c->want, c->rounded);
    if (rc != TW_OK) {
      assert_int_equal(v, -42); /* left alone */
      assert_non_null(strstr(err.msg, "amount"));
    }
  }
}

/* tw_parse_usd_uusd is the exact variant: every rounded case fails. */
static void exact_money_refuses_rounding(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof MONEY / sizeof *MONEY; i++) {
    const struct money_case *c = &MONEY[i];
    int64_t v = -42;
    int rc = tw_parse_usd_uusd(c->in, &v);
    bool ok = c->rc == TW_OK && !c->rounded;
    if ((rc == 0) != ok || (ok && v != c->want))
      fail_msg("usd \"%s\": rc %d %lld", c->in, rc, (long long)v);
  }
  int64_t v;
  assert_int_equal(tw_parse_usd_uusd(NULL, &v), -1);
}

static void div_round_table(void **state) {
  (void)state;
  static const struct {
    __int128 a;
    int64_t b, want;
  } cases[] = {
      {5, 10, 1},
      {4, 10, 0},
      {15, 10, 2},
      {25, 10, 3},
      {-5, 10, -1},
      {-4, 10, 0},
      {-15, 10, -2},
      {0, 7, 0},
      {7, 7, 1},
      {10, 3, 3},
      {11, 3, 4},
      {3599, 3600, 1},
      {1799, 3600, 0},
      {1800, 3600, 1},
      /* 0.693 CNY/h at 0.138 USD/CNY: micro-CNY x nano-USD / 10^9 */
      {(__int128)693000 * 138000000, 1000000000, 95634},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t v = 0;
    assert_true(tw_units_div_round(cases[i].a, cases[i].b, &v));
    if (v != cases[i].want)
      fail_msg("case %zu: %lld, want %lld", i, (long long)v,
               (long long)cases[i].want);
  }
  int64_t v;
  assert_false(tw_units_div_round((__int128)INT64_MAX * 4, 2, &v));
  assert_true(tw_units_div_round((__int128)INT64_MAX * 2, 2, &v));
  assert_int_equal(v, INT64_MAX);
}

static void decimal_reader(void **state) {
  (void)state;
  const char *end;
  int64_t v = 0;
  /* the spec's numbers: digits on both sides of the point */
  assert_int_equal(tw_dec_scaled("3.", &end, 1, 0, &v), TW_DEC_SYNTAX);
  assert_int_equal(tw_dec_scaled(".5", &end, 1, 0, &v), TW_DEC_SYNTAX);
  assert_int_equal(tw_dec_scaled("3.", &end, 1, TW_DEC_BARE_POINT, &v),
                   TW_DEC_OK);
  assert_int_equal(v, 3);
  assert_int_equal(tw_dec_scaled("1.5", &end, 1024, 0, &v), TW_DEC_OK);
  assert_int_equal(v, 1536);
  assert_int_equal(tw_dec_scaled("0.1", &end, 1024, 0, &v), TW_DEC_FRACTION);
  assert_int_equal(v, 102); /* 102.4, rounded, and said to be */
  assert_int_equal(tw_dec_scaled("2.5", &end, 1, 0, &v), TW_DEC_FRACTION);
  assert_int_equal(v, 3);
  assert_int_equal(tw_dec_scaled("8+", &end, 1, 0, &v), TW_DEC_OK);
  assert_int_equal(*end, '+');
  assert_int_equal(tw_dec_scaled("1e19", &end, 1, 0, &v), TW_DEC_RANGE);
  assert_int_equal(tw_dec_scaled("-", &end, 1, 0, &v), TW_DEC_SYNTAX);
}

static void duration_table(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int rc;
    int64_t want;
  } cases[] = {
      {"6h", 0, 21600},
      {"90m", 0, 5400},
      {"1h30m", 0, 5400},
      {"45s", 0, 45},
      {"2d", 0, 172800},
      {"1d2h3m4s", 0, 93784},
      {"3600", 0, 3600},
      {"0", 0, 0},
      {"30m1h", -1, 0},
      {"1h1h", -1, 0},
      {"1h30", -1, 0},
      {"h", -1, 0},
      {"1.5h", -1, 0},
      {"-5s", -1, 0},
      {"", -1, 0},
      {"1w", -1, 0},
      {"99999999999999999999", -1, 0},
      {"106751991167301d", -1, 0},
      {"6H", -1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t v = -42;
    int rc = tw_parse_duration_s(cases[i].in, &v);
    if (rc != cases[i].rc || (rc == 0 && v != cases[i].want))
      fail_msg("duration \"%s\": rc %d %lld", cases[i].in, rc, (long long)v);
  }
}

static void size_table(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int rc;
    int64_t want;
  } cases[] = {
      {"10GiB", 0, 10737418240LL},
      {"500GB", 0, 500000000000LL},
      {"1.5TB", 0, 1500000000000LL},
      {"1024", 0, 1024},
      {"1.5KiB", 0, 1536},
      {"10 GiB", 0, 10737418240LL},
      {"10gib", 0, 10737418240LL},
      {"7B", 0, 7},
      {"2PiB", 0, 2251799813685248LL},
      {"8191PiB", 0, 8191LL << 50},
      {"8192PiB", -1, 0},
      {"1.5B", -1, 0},
      {"0.1KiB", -1, 0},
      {"10QB", -1, 0},
      {"10G", -1, 0},
      {"GB", -1, 0},
      {"-1GB", -1, 0},
      {"10 ", -1, 0},
      {"", -1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t v = -42;
    int rc = tw_parse_size_bytes(cases[i].in, &v);
    if (rc != cases[i].rc || (rc == 0 && v != cases[i].want))
      fail_msg("size \"%s\": rc %d %lld", cases[i].in, rc, (long long)v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(money_parse_table),
      cmocka_unit_test(exact_money_refuses_rounding),
      cmocka_unit_test(div_round_table),
      cmocka_unit_test(decimal_reader),
      cmocka_unit_test(duration_table),
      cmocka_unit_test(size_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
