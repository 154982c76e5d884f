#include "broker/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Process-wide on purpose: see log.h. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static enum tw_log_level min_level = TW_LOG_INFO;
static char debug_subsys[256];

void tw_log_set_level(enum tw_log_level lvl) {
  pthread_mutex_lock(&log_mu);
  min_level = lvl;
  pthread_mutex_unlock(&log_mu);
}

void tw_log_set_debug(const char *subsystems) {
  pthread_mutex_lock(&log_mu);
  snprintf(debug_subsys, sizeof debug_subsys, ",%s,",
           subsystems ? subsystems : "");
  pthread_mutex_unlock(&log_mu);
}

bool tw_log_level_parse(const char *s, enum tw_log_level *out) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (enum tw_log_level)i;
      return true;
    }
  return false;
}

static bool debug_on(const char *subsys) {
  char key[80];
  if (strstr(debug_subsys, ",*,"))
    return true;
  snprintf(key, sizeof key, ",%s,", subsys);
  return strstr(debug_subsys, key) != NULL;
}

void tw_log(enum tw_log_level lvl, const char *subsys, const char *fmt, ...) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  char line[1024];
  struct timespec ts;
  struct tm tm;
  pthread_mutex_lock(&log_mu);
  bool on = lvl >= min_level || (lvl == TW_LOG_DEBUG && debug_on(subsys));
  pthread_mutex_unlock(&log_mu);
  if (!on)
    return;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int n = snprintf(
      line, sizeof line,
      "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900,
      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
      ts.tv_nsec / 1000000, names[lvl], subsys);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line)
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* What a message carries may come from outside (a header, a token, a
   * name): control bytes are written escaped, so one entry is one line and
   * nothing reaches a terminal as a control sequence. */
  char esc[4 * sizeof line];
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)line;
       *p && o + 5 < sizeof esc; p++) {
    if (*p >= 0x20 && *p != 0x7f) {
      esc[o++] = (char)*p;
    } else if (*p == '\n' || *p == '\r' || *p == '\t') {
      esc[o++] = '\\';
      esc[o++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
    } else {
      o += (size_t)snprintf(esc + o, sizeof esc - o, "\\x%02x", *p);
    }
  }
  esc[o] = '\0';
  /* one fputs per line: stdio locks the stream, so lines never interleave */
  fprintf(stderr, "%s\n", esc);
}
