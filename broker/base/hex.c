/* hex.c - see hex.h. */
#include "broker/base/hex.h"

int tw_hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int digit(char c, bool lower_only) {
  return lower_only && c >= 'A' && c <= 'F' ? -1 : tw_hexval((unsigned char)c);
}

bool tw_unhex(const char *s, size_t n, uint8_t *out, bool lower_only) {
  for (size_t i = 0; i < n; i++) {
    int hi = digit(s[2 * i], lower_only);
    if (hi < 0)
      return false;
    int lo = digit(s[2 * i + 1], lower_only);
    if (lo < 0)
      return false;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return true;
}
