/* units.c - money, sizes and durations (units.h). */
#include "broker/base/units.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* Significant digits kept; a nonzero digit beyond them can only be a
 * fraction far below anything rounding looks at (an integer part of more
 * than 19 digits is out of range anyway). */
#define DIG_MAX 96
/* Fraction positions the rounding looks at: enough that value x mult keeps
 * every digit that can matter for any mult below 10^18 (the rest only
 * makes the result inexact). */
#define FRAC_POS 20

static __int128 pow10_128(int n) {
  __int128 p = 1;
  while (n-- > 0)
    p *= 10;
  return p;
}

bool tw_units_div_round(__int128 a, int64_t b, int64_t *out) {
  bool neg = a < 0;
  unsigned __int128 m =
      neg ? (unsigned __int128)0 - (unsigned __int128)a : (unsigned __int128)a;
  unsigned __int128 q = m / (uint64_t)b, r = m % (uint64_t)b;
  if (r * 2 >= (uint64_t)b) /* a half goes away from zero */
    q++;
  if (q > (unsigned __int128)INT64_MAX)
    return false;
  *out = neg ? -(int64_t)q : (int64_t)q;
  return true;
}

enum tw_dec_rc tw_dec_scaled(const char *s, const char **endp, int64_t mult,
                             unsigned flags, int64_t *out) {
  char dig[DIG_MAX]; /* significant digits, leading zeros dropped */
  int nd = 0;
  long pt = 0; /* the value is 0.dig x 10^pt */
  bool neg = false, lost = false, range = false;
  const char *p = s;
  if (*p == '-') {
    neg = true;
    p++;
  }
  bool int_digits = isdigit((unsigned char)*p);
  if (!int_digits && !(flags & TW_DEC_BARE_POINT && *p == '.'))
    return TW_DEC_SYNTAX;
  for (; isdigit((unsigned char)*p); p++) {
    if (nd == 0 && *p == '0')
      continue;
    if (nd < DIG_MAX)
      dig[nd++] = *p;
    else
      range = true;
    pt++;
  }
  if (*p == '.') {
    bool frac_digits = isdigit((unsigned char)p[1]);
    if (!frac_digits && !(flags & TW_DEC_BARE_POINT && int_digits))
      return TW_DEC_SYNTAX;
    p++;
    for (; isdigit((unsigned char)*p); p++) {
      if (nd == 0 && *p == '0')
        pt--;
      else if (nd < DIG_MAX)
        dig[nd++] = *p;
      else
        lost |= *p != '0';
    }
  }
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    bool eneg = false;
    if (*q == '+' || *q == '-')
      eneg = *q++ == '-';
    if (!isdigit((unsigned char)*q))
      return TW_DEC_SYNTAX;
    long e = 0;
    for (; isdigit((unsigned char)*q); q++)
      if (e < 100000)
        e = e * 10 + (*q - '0');
    pt += eneg ? -e : e;
    p = q;
  }
  *endp = p;
  while (nd > 0 && dig[nd - 1] == '0')
    nd--;
  if (nd == 0) {
    *out = 0;
    return lost ? TW_DEC_FRACTION : TW_DEC_OK;
  }
  if (range || pt > 19)
    return TW_DEC_RANGE;
  /* integer part: dig[0..pt), zeros where pt runs past the digits */
  __int128 ip = 0;
  for (long i = 0; i < pt; i++)
    ip = ip * 10 + (i < nd ? dig[i] - '0' : 0);
  /* the first FRAC_POS fraction digits, then whether any other is nonzero */
  __int128 fp = 0;
  for (long j = 0; j < FRAC_POS; j++) {
    long i = pt + j;
    fp = fp * 10 + (i >= 0 && i < nd ? dig[i] - '0' : 0);
  }
  bool sticky = lost || nd > pt + FRAC_POS;
  __int128 scale = pow10_128(FRAC_POS);
  __int128 f = fp * mult; /* < 10^20 x 10^18: fits */
  __int128 v = ip * mult + f / scale;
  __int128 r = f % scale;
  if (r * 2 >= scale)
    v++;
  if (v > INT64_MAX)
    return TW_DEC_RANGE;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return r || sticky ? TW_DEC_FRACTION : TW_DEC_OK;
}

/* ---- money ---------------------------------------------------------------
 */

enum tw_rc tw_money_parse(const char *s, int64_t *uusd, bool *rounded,
                          struct tw_err *err) {
  if (!s)
    return tw_err_set(err, TW_E_INVALID, "amount: missing");
  const char *p = s;
  while (isspace((unsigned char)*p))
    p++;
  bool neg = false;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  if (*p == '$')
    p++;
  /* the sign was taken above: a second one is malformed */
  if (*p == '-' || *p == '+')
    return tw_err_set(err, TW_E_INVALID,
                      "amount \"%.32s\": expected a decimal USD amount", s);
  const char *end;
  int64_t v;
  enum tw_dec_rc r = tw_dec_scaled(p, &end, 1000000, TW_DEC_BARE_POINT, &v);
  if (r == TW_DEC_OK || r == TW_DEC_FRACTION)
    while (isspace((unsigned char)*end))
      end++;
  if (r == TW_DEC_SYNTAX || (r != TW_DEC_RANGE && *end))
    return tw_err_set(err, TW_E_INVALID,
                      "amount \"%.32s\": expected a decimal USD amount", s);
  if (r == TW_DEC_RANGE)
    return tw_err_set(err, TW_E_TOOBIG, "amount \"%.32s\": too large", s);
  *uusd = neg ? -v : v;
  if (rounded)
    *rounded = r == TW_DEC_FRACTION;
  return TW_OK;
}

int tw_parse_usd_uusd(const char *s, int64_t *out) {
  int64_t v;
  bool rounded;
  if (tw_money_parse(s, &v, &rounded, NULL) || rounded)
    return -1;
  *out = v;
  return 0;
}

/* ---- sizes ----------------------------------------------------------------
 */

struct unit {
  const char *name;
  int64_t mult;
};

static const struct unit size_units[] = {
    {"b", 1},
    {"kb", 1000LL},
    {"mb", 1000LL * 1000},
    {"gb", 1000LL * 1000 * 1000},
    {"tb", 1000LL * 1000 * 1000 * 1000},
    {"pb", 1000LL * 1000 * 1000 * 1000 * 1000},
    {"kib", 1LL << 10},
    {"mib", 1LL << 20},
    {"gib", 1LL << 30},
    {"tib", 1LL << 40},
    {"pib", 1LL << 50},
    {NULL, 0},
};

int tw_parse_size_bytes(const char *s, int64_t *out) {
  const char *end;
  int64_t v;
  if (!s || *s == '-')
    return -1;
  /* Parse once to find where the unit starts, then again with its
   * multiplier so fractions ("1.5TB") are exact. */
  if (tw_dec_scaled(s, &end, 1, 0, &v) == TW_DEC_SYNTAX)
    return -1;
  const char *u = end;
  while (*u == ' ')
    u++;
  int64_t mult = 1;
  if (*u) {
    const struct unit *x;
    for (x = size_units; x->name; x++)
      if (strcasecmp(u, x->name) == 0)
        break;
    if (!x->name)
      return -1;
    mult = x->mult;
  } else if (u != end) {
    return -1; /* trailing blanks with no unit */
  }
  if (tw_dec_scaled(s, &end, mult, 0, &v) != TW_DEC_OK)
    return -1;
  *out = v;
  return 0;
}

/* ---- durations ------------------------------------------------------------
 */

enum tw_dec_rc tw_duration_parse(const char *s, int64_t *out) {
  static const char units[] = "dhms";
  static const int64_t mult[] = {86400, 3600, 60, 1};
  int64_t total = 0;
  int next = 0; /* units must come in d, h, m, s order, each at most once */
  bool range = false;
  const char *p = s;
  if (!s || !isdigit((unsigned char)*s))
    return TW_DEC_SYNTAX;
  while (*p) {
    int64_t n = 0;
    if (!isdigit((unsigned char)*p))
      return TW_DEC_SYNTAX;
    for (; isdigit((unsigned char)*p); p++)
      if (__builtin_mul_overflow(n, (int64_t)10, &n) ||
          __builtin_add_overflow(n, (int64_t)(*p - '0'), &n))
        range = true;
    if (!*p) {
      /* A bare number is seconds, but only on its own: "1h30" is a typo. */
      if (next)
        return TW_DEC_SYNTAX;
      total = n;
      break;
    }
    const char *u = strchr(units, *p);
    if (!u || !*u)
      return TW_DEC_SYNTAX;
    int idx = (int)(u - units);
    if (idx < next)
      return TW_DEC_SYNTAX;
    next = idx + 1;
    p++;
    if (__builtin_mul_overflow(n, mult[idx], &n) ||
        __builtin_add_overflow(total, n, &total))
      range = true;
  }
  if (range)
    return TW_DEC_RANGE;
  *out = total;
  return TW_DEC_OK;
}

int tw_parse_duration_s(const char *s, int64_t *out) {
  return tw_duration_parse(s, out) == TW_DEC_OK ? 0 : -1;
}
