/* clock.h - the fake cloud's clock: real time scaled by a speed factor,
 * plus explicit jumps.
 *
 * now = base_fake + (monotonic elapsed since base) * speed.  Speed 0
 * freezes time, so a test moves it only through the control API; speed 60
 * makes a minute of cloud time pass per real second.  Changing the speed
 * or jumping re-bases, so the value never goes backwards except by an
 * explicit set.  Not thread-safe: the server's mutex guards it. */
#ifndef TW_TESTS_FAKECLOUD_CLOCK_H
#define TW_TESTS_FAKECLOUD_CLOCK_H

#include <stdint.h>

struct fc_clock {
  int64_t base_fake_ms;
  int64_t base_mono_us;
  double speed;
  int64_t start_fake_ms; /* the value at server start (fault windows) */
};

void fc_clock_init(struct fc_clock *c, int64_t start_ms, double speed);
int64_t fc_clock_now(struct fc_clock *c);
void fc_clock_advance(struct fc_clock *c, int64_t delta_ms);
void fc_clock_set(struct fc_clock *c, int64_t ms);
void fc_clock_set_speed(struct fc_clock *c, double speed);

/* "Tue, 03 Jun 2008 11:05:30 GMT" (HTTP Date, RFC 7231) into out[32]. */
void fc_http_date(int64_t ms, char out[32]);
/* "2017-09-18T08:22:00Z" (seconds, as instance metadata) into out[32]. */
void fc_iso_seconds(int64_t ms, char out[32]);

#endif
