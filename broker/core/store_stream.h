/* store_stream.h - the job events of every job in the order they were
 * recorded, for live views (GET /v1/events/stream): one sequence across
 * the store, so a reader resumes from the last seq it saw. */
#ifndef TW_CORE_STORE_STREAM_H
#define TW_CORE_STORE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/job.h"

struct tw_store;

struct tw_stream_event {
  int64_t seq;
  int64_t at_ms;
  char job_id[64];
  char tenant[64];
  char from[16]; /* "" for a job's first event */
  char to[16];
  char reason[256]; /* truncated */
};

/* The newest event's seq (0: none yet). */
enum tw_rc tw_store_events_last_seq(struct tw_store *s, int64_t *seq,
                                    struct tw_err *err);

/* Up to max events with seq > after, oldest first, of jobs of tenant
 * (NULL: every tenant) and of job (NULL: every job).  *n is how many were
 * written to out. */
enum tw_rc tw_store_events_since(struct tw_store *s, int64_t after,
                                 const char *tenant, const char *job,
                                 struct tw_stream_event *out, size_t max,
                                 size_t *n, struct tw_err *err);

#endif
