/* h_stream.h - GET /v1/events/stream: job events as server-sent events,
 * without a thread per stream.
 *
 * A stream's connection waits off the pool (api/door.h) whenever it has
 * nothing to send, so it holds no thread of the server's fixed pool.  One
 * hub thread per server reads the store's event sequence a few times a
 * second, writes each stream's new events (and a heartbeat comment every
 * 15 s) into the stream's buffer, and wakes it; a pool thread then
 * sends the buffer (chunked) and the connection waits again.  At most
 * api.max_streams streams are open at once (503 beyond); each lives at
 * most an hour and holds at most 1 MiB unsent before it ends (the client
 * resumes from Last-Event-ID). */
#ifndef TW_API_H_STREAM_H
#define TW_API_H_STREAM_H

#include <stddef.h>

#include "broker/base/err.h"

struct tw_api;
struct tw_store;
struct tw_req;
struct tw_buf;
struct tw_stream_hub;

/* max: api.max_streams (0: the default, 256). */
enum tw_rc tw_stream_hub_start(struct tw_store *store, unsigned max,
                               struct tw_stream_hub **out, struct tw_err *err);
/* Ends every stream and refuses new ones (draining); their connections
 * are woken so they finish.  Safe to call more than once. */
void tw_stream_hub_end_all(struct tw_stream_hub *hub);
/* Stops the hub thread and frees it; call once no stream's connection is
 * left (after the door's stop). */
void tw_stream_hub_free(struct tw_stream_hub *hub);
/* Streams open now, for /metrics. */
void tw_stream_hub_metrics(struct tw_stream_hub *hub, struct tw_buf *out);

void tw_h_events_stream(struct tw_req *r);
/* h_attempts.c: GET /v1/jobs/{id}/attempts, the console's job page */
void tw_h_jobs_attempts(struct tw_req *r);

#define TW_STREAM_ROUTES                                                       \
  {"GET", "/v1/events/stream", tw_h_events_stream, "events_stream"},           \
      {"GET", "/v1/jobs/{id}/attempts", tw_h_jobs_attempts, "jobs_attempts"},

#endif
