/* log.h - one line per event: time, level, subsystem, key=value pairs and a
 * sentence.  Never log a secret: no tokens, keys, signatures or
 * Authorization headers.  Control bytes in a message are written escaped
 * (\n, \x1b): an entry is one line whatever it quotes.  Thread-safe.
 *
 * Process-wide state, deliberately (docs/architecture.md, "Process-wide
 * state"): the minimum level and the debug subsystems are one switch for
 * the whole process, set by the daemon from its config and changed on a
 * reload, and every module logs without being handed a logger.  They are
 * the only mutable variables of the base (log.c: min_level, debug_subsys,
 * log_format and log_mu, which keeps lines whole), allowed by tests/unit/
 * test_globals.c. */
#ifndef TW_BROKER_LOG_H
#define TW_BROKER_LOG_H

#include <stdbool.h>

enum tw_log_level { TW_LOG_DEBUG, TW_LOG_INFO, TW_LOG_WARN, TW_LOG_ERROR };

void tw_log(enum tw_log_level lvl, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define tw_log_debug(s, ...) tw_log(TW_LOG_DEBUG, s, __VA_ARGS__)
#define tw_log_info(s, ...) tw_log(TW_LOG_INFO, s, __VA_ARGS__)
#define tw_log_warn(s, ...) tw_log(TW_LOG_WARN, s, __VA_ARGS__)
#define tw_log_error(s, ...) tw_log(TW_LOG_ERROR, s, __VA_ARGS__)

/* Minimum level printed; debug lines print only for the subsystems named
 * by tw_log_set_debug() (comma separated, "*" for all).  Both may change at
 * any time (SIGHUP reload). */
void tw_log_set_level(enum tw_log_level lvl);
void tw_log_set_debug(const char *subsystems);
/* The shape of a line (log.format):
 *   text      2026-11-02T10:00:00.000Z info store: message
 *   journald  <6>store: message   (no time: journald stamps it; <N> is the
 *             syslog priority journald reads from stderr)
 *   json      {"ts":"...","level":"info","subsys":"store","msg":"message"} */
enum tw_log_format { TW_LOG_TEXT, TW_LOG_JOURNALD, TW_LOG_JSON };
void tw_log_set_format(enum tw_log_format f);
bool tw_log_format_parse(const char *s, enum tw_log_format *out);

/* The span this thread works for (broker/base/trace.h): while set, every
 * line the thread writes carries its ids (text and journald: trace_id=...
 * span_id=... at the end; json: "trace_id" and "span_id" members).  The
 * ids are lower-case hex (32 and 16 digits); NULL or "" clears.  Per
 * thread (log.c: log_trace, thread-local, allowed by test_globals.c).
 * tw_log_get_trace() copies the current ones out ("" when none), for a
 * caller that sets its own and puts the previous back. */
void tw_log_set_trace(const char *trace_id, const char *span_id);
void tw_log_get_trace(char trace_id[33], char span_id[17]);

/* Parses "debug"/"info"/"warn"/"error"; false on anything else. */
bool tw_log_level_parse(const char *s, enum tw_log_level *out);

#endif
