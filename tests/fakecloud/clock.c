/* clock.c - see clock.h. */
#include "tests/fakecloud/clock.h"

#include <stdio.h>
#include <time.h>

#include "broker/base/clock.h"

static int64_t scaled(const struct fc_clock *c, int64_t mono_us) {
  double d = (double)(mono_us - c->base_mono_us) / 1000.0 * c->speed;
  return c->base_fake_ms + (int64_t)d;
}

void fc_clock_init(struct fc_clock *c, int64_t start_ms, double speed) {
  c->base_fake_ms = start_ms;
  c->base_mono_us = tw_mono_us();
  c->speed = speed;
  c->start_fake_ms = start_ms;
}

int64_t fc_clock_now(struct fc_clock *c) { return scaled(c, tw_mono_us()); }

void fc_clock_set(struct fc_clock *c, int64_t ms) {
  c->base_fake_ms = ms;
  c->base_mono_us = tw_mono_us();
}

void fc_clock_advance(struct fc_clock *c, int64_t delta_ms) {
  fc_clock_set(c, fc_clock_now(c) + delta_ms);
}

void fc_clock_set_speed(struct fc_clock *c, double speed) {
  fc_clock_set(c, fc_clock_now(c));
  c->speed = speed;
}

void fc_http_date(int64_t ms, char out[32]) {
  /* gmtime_r keeps every field in range; the modulo only tells the
   * compiler so. */
  static const char *days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *mons[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  snprintf(out, 32, "%s, %02u %s %04u %02u:%02u:%02u GMT", days[tm.tm_wday % 7],
           (unsigned)tm.tm_mday % 32u, mons[tm.tm_mon % 12],
           (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)tm.tm_hour % 24u,
           (unsigned)tm.tm_min % 60u, (unsigned)tm.tm_sec % 61u);
}

void fc_iso_seconds(int64_t ms, char out[32]) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02uZ",
           (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 13u, (unsigned)tm.tm_mday % 32u,
           (unsigned)tm.tm_hour % 24u, (unsigned)tm.tm_min % 60u,
           (unsigned)tm.tm_sec % 61u);
}
