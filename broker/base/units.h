/* units.h - money, sizes and durations: the one parser of each, and the one
 * rounding rule for money.
 *
 * Money is integer micro-USD everywhere in Tradewind (1 USD = 1,000,000).
 *
 * The rounding rule.  Wherever an amount carries more precision than a
 * micro-dollar (a price with seven decimals, a conversion at a nine-decimal
 * exchange rate, an hourly price over some seconds), it is rounded to the
 * nearest micro-dollar, and a half goes away from zero ("half up" on the
 * magnitude): 0.0000005 USD is 1 micro-USD, 0.00000049 USD is 0,
 * -0.0000005 USD is -1.  tw_units_div_round() is that rule for a quotient.
 * The one deliberate exception is placement's cost estimate, which rounds
 * up so that it never under-estimates (policies/place/cost.h).
 *
 * Every parser reads decimal text exactly, never through a double: "0.29"
 * USD is 290000 micro-USD, not 289999.
 *
 * Pure functions; thread-safe. */
#ifndef TW_BASE_UNITS_H
#define TW_BASE_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

/* ---- the exact decimal reader ------------------------------------------ */

enum tw_dec_rc {
  TW_DEC_OK = 0,
  TW_DEC_SYNTAX,   /* not a number */
  TW_DEC_RANGE,    /* the result does not fit an int64 */
  TW_DEC_FRACTION, /* the result was rounded: value x mult is no integer */
};

/* Also accept a point without digits on one side: ".5", "5." (adapters'
 * and price lists' habit; the spec's numbers keep digits on both). */
#define TW_DEC_BARE_POINT 1u

/* Reads `[-]digits[.digits][(e|E)[+-]digits]` at s and computes value x
 * mult (mult >= 1) exactly.  *endp gets the first character after the
 * number.  *out gets the result rounded by the rule above both for TW_DEC_OK
 * and TW_DEC_FRACTION (the caller decides whether rounding is acceptable);
 * it is left alone for the other codes. */
enum tw_dec_rc tw_dec_scaled(const char *s, const char **endp, int64_t mult,
                             unsigned flags, int64_t *out);

/* a / b rounded by the rule above (b > 0); false when the quotient does not
 * fit an int64.  a may be the product of two int64s. */
bool tw_units_div_round(__int128 a, int64_t b, int64_t *out);

/* ---- money --------------------------------------------------------------- */

/* Parses an amount of USD into micro-USD.  Accepted: optional blanks around,
 * an optional sign (+ or -), an optional '$' after it, digits with an
 * optional fraction (".5" and "5." too) and an optional exponent:
 * "3.25", "$1.25", " 0.0437 ", "-1.5", "1e3", "2.5E-1".  Digits beyond the
 * sixth decimal are rounded by the rule above and *rounded (may be NULL)
 * says so.  TW_E_INVALID, naming the text, when malformed, TW_E_TOOBIG
 * when beyond an int64 of micro-USD; *uusd is then left alone.  Callers
 * check the sign and the bounds their field allows. */
enum tw_rc tw_money_parse(const char *s, int64_t *uusd, bool *rounded,
                          struct tw_err *err);

/* tw_money_parse() for input that must be exact (a job's price limit, a
 * budget): 0 with *out set, or -1 when malformed, out of range or finer
 * than a micro-dollar ("0.0000001"). */
int tw_parse_usd_uusd(const char *s, int64_t *out); /* "3.25" -> 3250000 */

/* ---- sizes and durations --------------------------------------------------
 */

/* Sizes: no sign; units B, KB..PB (powers of 1000), KiB..PiB (powers of
 * 1024), any case, optionally after spaces; a bare number is bytes.  The
 * result must be a whole number of bytes ("1.5B" is -1).  0 or -1. */
int tw_parse_size_bytes(const char *s,
                        int64_t *out); /* "10GiB", "500GB", "1024" */

/* Durations: d, h, m, s in that order, each at most once, no fractions; a
 * bare number is seconds.  TW_DEC_SYNTAX or TW_DEC_RANGE otherwise. */
enum tw_dec_rc tw_duration_parse(const char *s, int64_t *out_s);
int tw_parse_duration_s(const char *s,
                        int64_t *out); /* "6h", "1h30m", "90s", "2d" */

#endif
