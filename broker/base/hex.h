/* hex.h - hexadecimal digits read back.
 *
 * Keys, trace ids, percent-escapes in paths and queries, and the fakes'
 * form bodies all read hex digits; this is the one reader they share.
 *
 * Threads: pure functions, any thread. */
#ifndef TW_BASE_HEX_H
#define TW_BASE_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of the hex digit c (0-9, a-f, A-F), or -1 for any other
 * character (EOF included). */
int tw_hexval(int c);

/* Decodes the 2 * n hex digits at s into out[n]; false at the first
 * character that is not a digit (s must hold 2 * n characters or end
 * with a NUL before them, which is not a digit).  With lower_only, upper
 * case digits are refused too (W3C trace context, our own key files).
 * out is written up to the first bad pair. */
bool tw_unhex(const char *s, size_t n, uint8_t *out, bool lower_only);

#endif
