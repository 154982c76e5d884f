/* clock.h - injected time.  Everything that reads the time takes a
 * struct tw_clock, so tests move a fake clock instead of sleeping. */
#ifndef TW_BROKER_CLOCK_H
#define TW_BROKER_CLOCK_H

#include <stdint.h>

struct tw_clock {
  /* Milliseconds since the Unix epoch. */
  int64_t (*now_ms)(struct tw_clock *c);
  int64_t fake_ms; /* used by the fake clock only */
};

/* The wall clock (CLOCK_REALTIME): stateless and read-only, never freed
 * (and never given to tw_clock_advance). */
struct tw_clock *tw_clock_real(void);

/* A fake clock standing at start_ms; embed it and call tw_clock_advance. */
void tw_clock_fake_init(struct tw_clock *c, int64_t start_ms);
void tw_clock_advance(struct tw_clock *c, int64_t delta_ms);

static inline int64_t tw_clock_now_ms(struct tw_clock *c) {
  return c->now_ms(c);
}

/* Monotonic microseconds, for measuring durations only (latency metrics). */
int64_t tw_mono_us(void);

/* Formats ms since the epoch as RFC 3339 UTC with milliseconds into out
 * (at least 25 bytes). */
void tw_time_fmt_rfc3339(int64_t ms, char *out, unsigned long outsz);

/* Parses an RFC 3339 timestamp (with Z or +hh:mm offset, optional
 * fraction).  Returns 0 and sets *ms, or -1 when malformed. */
int tw_time_parse_rfc3339(const char *s, int64_t *ms);

#endif
