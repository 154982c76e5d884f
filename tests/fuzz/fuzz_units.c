/* fuzz_units.c - the money, size and duration parsers on arbitrary text
 * (they read configs, job specs, CLI flags and provider price lists).
 *
 * Besides not crashing: an amount that parses must parse the same with a
 * '$' in front and with blanks around it, the exact variant must agree
 * with the rounding one wherever nothing was rounded, and a negated
 * amount must give the negated value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char s[96], t[112];
  if (size >= sizeof s)
    size = sizeof s - 1;
  memcpy(s, data, size);
  s[size] = '\0';
  int64_t v, w;
  bool rounded, r2;
  if (tw_money_parse(s, &v, &rounded, NULL) == TW_OK) {
    int64_t x;
    int rc = tw_parse_usd_uusd(s, &x);
    if ((rc == 0) != !rounded || (rc == 0 && x != v))
      abort();
    const char *p = s;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
      p++;
    if (*p != '+' && *p != '-' && *p != '$') {
      snprintf(t, sizeof t, " $%s ", p);
      if (tw_money_parse(t, &w, &r2, NULL) != TW_OK || w != v || r2 != rounded)
        abort();
      snprintf(t, sizeof t, "-%s", p);
      if (tw_money_parse(t, &w, &r2, NULL) != TW_OK || w != -v)
        abort();
    }
  }
  tw_parse_size_bytes(s, &v);
  tw_parse_duration_s(s, &v);
  return 0;
}
