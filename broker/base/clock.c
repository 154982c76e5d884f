#define _GNU_SOURCE
#include "broker/base/clock.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t real_now(struct tw_clock *c) {
  (void)c;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read-only: the real clock has no state, so it is not mutable global
 * state (tests/unit/test_globals.c).  The cast is safe because nothing
 * writes through a real clock: only tw_clock_advance() writes, and only
 * to a fake one. */
static const struct tw_clock real_clock = {real_now, 0};

struct tw_clock *tw_clock_real(void) {
  return (struct tw_clock *)&real_clock;
}

static int64_t fake_now(struct tw_clock *c) {
  return __atomic_load_n(&c->fake_ms, __ATOMIC_SEQ_CST);
}

void tw_clock_fake_init(struct tw_clock *c, int64_t start_ms) {
  c->now_ms = fake_now;
  c->fake_ms = start_ms;
}

void tw_clock_advance(struct tw_clock *c, int64_t delta_ms) {
  __atomic_add_fetch(&c->fake_ms, delta_ms, __ATOMIC_SEQ_CST);
}

int64_t tw_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void tw_time_fmt_rfc3339(int64_t ms, char *out, unsigned long outsz) {
  time_t s = (time_t)(ms / 1000);
  int frac = (int)(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    s -= 1;
  }
  struct tm tm;
  gmtime_r(&s, &tm);
  snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static int digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)**p))
      return -1;
    v = v * 10 + (**p - '0');
    (*p)++;
  }
  *out = v;
  return 0;
}

int tw_time_parse_rfc3339(const char *s, int64_t *ms) {
  int y, mo, d, h, mi, se, frac = 0;
  const char *p = s;
  if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
      digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
    return -1;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
      digits(&p, 2, &se))
    return -1;
  if (*p == '.') {
    p++;
    int n = 0;
    if (!isdigit((unsigned char)*p))
      return -1;
    while (isdigit((unsigned char)*p)) {
      if (n < 3)
        frac = frac * 10 + (*p - '0');
      n++;
      p++;
    }
    while (n < 3) {
      frac *= 10;
      n++;
    }
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1, oh, om;
    p++;
    if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 ||
        om > 59)
      return -1;
    off = sign * (oh * 60 + om);
  } else {
    return -1;
  }
  if (*p != '\0')
    return -1;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
      se > 60)
    return -1;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap)
    return -1;
  struct tm tm = {0};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  time_t t = timegm(&tm);
  *ms = ((int64_t)t - (int64_t)off * 60) * 1000 + frac;
  return 0;
}
