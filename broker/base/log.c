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
static bool debug_some; /* debug_subsys names any: read without log_mu */
static enum tw_log_format log_format = TW_LOG_TEXT;
/* Per thread by nature: the span the thread works for (log.h). */
static _Thread_local struct {
  char trace[33], span[17];
} log_trace;

void tw_log_set_trace(const char *trace_id, const char *span_id) {
  if (!trace_id || !*trace_id || !span_id) {
    log_trace.trace[0] = log_trace.span[0] = '\0';
    return;
  }
  /* twice per traced request: copies, not printf */
  size_t t = strnlen(trace_id, sizeof log_trace.trace - 1);
  size_t s = strnlen(span_id, sizeof log_trace.span - 1);
  memcpy(log_trace.trace, trace_id, t);
  log_trace.trace[t] = '\0';
  memcpy(log_trace.span, span_id, s);
  log_trace.span[s] = '\0';
}

void tw_log_get_trace(char trace_id[33], char span_id[17]) {
  memcpy(trace_id, log_trace.trace, 33);
  memcpy(span_id, log_trace.span, 17);
}

void tw_log_set_format(enum tw_log_format f) {
  pthread_mutex_lock(&log_mu);
  log_format = f;
  pthread_mutex_unlock(&log_mu);
}

bool tw_log_format_parse(const char *s, enum tw_log_format *out) {
  static const char *const names[] = {"text", "journald", "json"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (enum tw_log_format)i;
      return true;
    }
  return false;
}

/* Appends s to out (of cap bytes, at *n) as the inside of a JSON string. */
static void json_escape(char *out, size_t cap, size_t *n, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p && *n + 8 < cap;
       p++) {
    if (*p == '"' || *p == '\\') {
      out[(*n)++] = '\\';
      out[(*n)++] = (char)*p;
    } else if (*p < 0x20 || *p == 0x7f) {
      *n += (size_t)snprintf(out + *n, cap - *n, "\\u%04x", *p);
    } else {
      out[(*n)++] = (char)*p;
    }
  }
  out[*n] = '\0';
}

void tw_log_set_level(enum tw_log_level lvl) {
  pthread_mutex_lock(&log_mu);
  __atomic_store_n(&min_level, lvl, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&log_mu);
}

void tw_log_set_debug(const char *subsystems) {
  pthread_mutex_lock(&log_mu);
  snprintf(debug_subsys, sizeof debug_subsys, ",%s,",
           subsystems ? subsystems : "");
  __atomic_store_n(&debug_some, subsystems && *subsystems, __ATOMIC_RELAXED);
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
  /* syslog priorities: debug 7, info 6, warning 4, err 3 */
  static const int prio[] = {7, 6, 4, 3};
  char msg[1024], line[2304];
  struct timespec ts;
  struct tm tm;
  /* a line the level filters costs no lock: every request writes a
   * debug line, and 64 threads took the process's log mutex for it */
  if (lvl < __atomic_load_n(&min_level, __ATOMIC_RELAXED) &&
      !(lvl == TW_LOG_DEBUG && __atomic_load_n(&debug_some, __ATOMIC_RELAXED)))
    return;
  pthread_mutex_lock(&log_mu);
  bool on = lvl >= min_level || (lvl == TW_LOG_DEBUG && debug_on(subsys));
  enum tw_log_format f = log_format;
  pthread_mutex_unlock(&log_mu);
  if (!on)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char at[96];
  snprintf(at, sizeof at, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
  if (f == TW_LOG_JSON) {
    size_t n = (size_t)snprintf(line, sizeof line,
                                "{\"ts\":\"%s\",\"level\":\"%s\",\"subsys\":\"",
                                at, names[lvl]);
    json_escape(line, sizeof line, &n, subsys);
    n += (size_t)snprintf(line + n, sizeof line - n, "\",\"msg\":\"");
    json_escape(line, sizeof line, &n, msg);
    if (log_trace.trace[0])
      snprintf(line + n, sizeof line - n,
               "\",\"trace_id\":\"%s\",\"span_id\":\"%s\"}", log_trace.trace,
               log_trace.span);
    else
      snprintf(line + n, sizeof line - n, "\"}");
  } else if (f == TW_LOG_JOURNALD) {
    /* journald stamps the time itself and reads the <N> priority prefix
     * of a line on stderr (SyslogLevelPrefix=yes, its default) */
    snprintf(line, sizeof line, "<%d>%s: %s", prio[lvl], subsys, msg);
  } else {
    snprintf(line, sizeof line, "%s %s %s: %s", at, names[lvl], subsys, msg);
  }
  if (f != TW_LOG_JSON && log_trace.trace[0]) {
    size_t n = strlen(line);
    snprintf(line + n, sizeof line - n, " trace_id=%s span_id=%s",
             log_trace.trace, log_trace.span);
  }
  if (f == TW_LOG_JSON) { /* escaped as JSON already: one line */
    fprintf(stderr, "%s\n", line);
    return;
  }
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
