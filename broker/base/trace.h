/* trace.h - spans in the shape of OpenTelemetry's, exported as OTLP/HTTP
 * JSON (docs/observability.md).
 *
 * A span lives on its creator's stack: tw_span_start() stamps its ids and
 * start time, tw_span_attr_*() add attributes, tw_span_end() encodes it
 * (the protobuf JSON mapping with the OTLP rules: ids in hex, enums as
 * integers, 64-bit integers as strings) into the tracer's bounded queue
 * and returns at once.  The tracer's own thread takes batches from the
 * queue, joins them into one ExportTraceServiceRequest per batch and hands
 * each to a send function, retried with backoff.  A full queue drops the
 * span and counts it: nothing that ends a span ever waits for the network.
 * The encoded small spans (a request's, an admission's) are blocks of one
 * size, handed back after their batch is sent and reused, so a traced
 * request allocates nothing for its spans once the daemon is warm.
 *
 * The transport is a function (tw_tracer_opts.send): the providers' HTTP
 * helper in the daemon (providers/otlp_send.h), anything in tests.  The
 * tracer holds no process-wide state: each thread draws ids from a stream
 * of its own (thread-local, seeded once by getrandom()), and the ids of
 * the span a thread works for reach the logger through tw_log_set_trace()
 * (log.h). */
#ifndef TW_BROKER_TRACE_H
#define TW_BROKER_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

/* A span's context as W3C Trace Context carries it. */
struct tw_trace_ctx {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t flags; /* bit 0: sampled */
  bool valid;
};

#define TW_TRACEPARENT_LEN 55 /* "00-<32 hex>-<16 hex>-<2 hex>" */

/* Parses a traceparent header (version 00, or a later version read as
 * 00); false on anything else, including all-zero ids. */
bool tw_traceparent_parse(const char *s, struct tw_trace_ctx *out);
/* Writes "00-...-...-0f" into out (at least TW_TRACEPARENT_LEN + 1). */
void tw_traceparent_fmt(const struct tw_trace_ctx *c, char *out, size_t cap);
/* Replaces the user:password@ of an http(s) URL with "***@", in place
 * (what the log may show of otel.endpoint). */
void tw_trace_url_redact(char *url);
/* Lower-case hex of n bytes into out (2n + 1). */
void tw_trace_hex(const uint8_t *b, size_t n, char *out);

/* SpanKind of OTLP (trace.proto). */
enum tw_span_kind {
  TW_SPAN_INTERNAL = 1,
  TW_SPAN_SERVER = 2,
  TW_SPAN_CLIENT = 3,
  TW_SPAN_PRODUCER = 4,
  TW_SPAN_CONSUMER = 5
};

#define TW_SPAN_MAX_ATTRS 32
#define TW_SPAN_KEY_MAX 48
#define TW_SPAN_VAL_MAX 256

enum tw_attr_type { TW_ATTR_STR, TW_ATTR_INT, TW_ATTR_BOOL, TW_ATTR_DOUBLE };

struct tw_span_attr {
  char key[TW_SPAN_KEY_MAX];
  uint8_t klen; /* strlen(key), for the lookup of a key */
  enum tw_attr_type type;
  char s[TW_SPAN_VAL_MAX];
  int64_t i;
  double d;
};

struct tw_tracer;

/* One span.  Everything is a no-op on a span that is not recording (the
 * tracer is NULL or off, or the trace is not sampled), and the functions
 * below but tw_span_start() take a NULL span too, so callers never test. */
struct tw_span {
  struct tw_tracer *t;
  bool recording;
  struct tw_trace_ctx ctx;
  uint8_t parent[8];
  bool has_parent;
  char name[96];
  enum tw_span_kind kind;
  int64_t start_ns, end_ns; /* Unix time */
  int n_attrs;
  int status; /* 0 unset, 1 ok, 2 error (Status.StatusCode) */
  char status_msg[160];
  struct tw_span_attr attrs[TW_SPAN_MAX_ATTRS]; /* last: a queued copy
                                                   holds only n_attrs */
};

struct tw_tracer_opts {
  const char *endpoint;     /* base URL; "/v1/traces" is appended unless
                               the URL already ends with it */
  const char *service_name; /* resource service.name; "tradewindd" */
  double sampling;          /* share of new traces recorded, 0..1 */
  /* "Name: value" lines sent with every export (an API key), borrowed
   * only during tw_tracer_new(); NULL-terminated, NULL: none */
  const char *const *headers;
  size_t queue_max; /* spans waiting at most (2048) */
  size_t batch_max; /* spans per export at most (512) */
  int64_t flush_ms; /* an export at least this often when spans wait (1000) */
  int max_attempts; /* tries per batch (4); backoff 100 ms doubling */
  /* Sends one body (application/json) to url with headers; returns the
   * HTTP status, 0 for no answer.  Called on the tracer's thread only. */
  long (*send)(void *ctx, const char *url, const char *const *headers,
               const char *body, size_t len);
  void *send_ctx;
};

/* Starts the exporter thread.  *out owned (tw_tracer_free). */
enum tw_rc tw_tracer_new(const struct tw_tracer_opts *o, struct tw_tracer **out,
                         struct tw_err *err);
/* Exports what is queued (waiting up to deadline_ms for it), stops the
 * thread, frees t.  NULL ok. */
void tw_tracer_free(struct tw_tracer *t, int64_t deadline_ms);
/* Changes the share sampled (a reload). */
void tw_tracer_set_sampling(struct tw_tracer *t, double sampling);

struct tw_tracer_stats {
  uint64_t started;  /* spans recorded: counted when they end (queued or
                        dropped), not when they start */
  uint64_t exported; /* spans accepted by the endpoint (2xx) */
  uint64_t dropped;  /* spans lost: the queue was full, or every try of
                        their batch failed */
  uint64_t export_failures; /* tries that got no 2xx */
  uint64_t queued;          /* waiting now */
};
void tw_tracer_stats(struct tw_tracer *t, struct tw_tracer_stats *out);
/* Appends the tracer's counters in Prometheus text (tradewind_trace_*). */
struct tw_buf;
void tw_tracer_metrics(struct tw_tracer *t, struct tw_buf *out);

/* A fresh context for a job that arrives without one: new trace id, the
 * sampling decision of the tracer (flags); span id random too (the
 * caller's next span becomes its child).  false when t is NULL. */
bool tw_tracer_new_ctx(struct tw_tracer *t, struct tw_trace_ctx *out);

/* A span kept on the heap by its caller (a request's, across the
 * server's callbacks): a whole block from the tracer's own pool, or newly
 * allocated when the pool is empty or t is NULL.  tw_span_release() gives
 * it back (NULL ok), to the pool of the same tracer, which must outlive
 * it. */
struct tw_span *tw_span_alloc(struct tw_tracer *t);
void tw_span_release(struct tw_tracer *t, struct tw_span *sp);

/* Starts sp.  parent: its context (NULL or !valid: a new trace, sampled
 * at the tracer's share; a valid parent's sampled flag decides). */
void tw_span_start(struct tw_tracer *t, struct tw_span *sp, const char *name,
                   enum tw_span_kind kind, const struct tw_trace_ctx *parent);
void tw_span_attr_str(struct tw_span *sp, const char *key, const char *v);
void tw_span_attr_int(struct tw_span *sp, const char *key, int64_t v);
void tw_span_attr_bool(struct tw_span *sp, const char *key, bool v);
void tw_span_attr_double(struct tw_span *sp, const char *key, double v);
/* Status error with a message (printf-style, cut to fit). */
void tw_span_error(struct tw_span *sp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tw_span_ok(struct tw_span *sp);
/* Forgets sp: it is neither queued nor counted. */
void tw_span_discard(struct tw_span *sp);
/* Ends and queues sp (dropped and counted when the queue is full). */
void tw_span_end(struct tw_span *sp);
/* The OTLP JSON of spans, one ExportTraceServiceRequest (for tests and the
 * exporter): appended to out. */
void tw_trace_encode(const struct tw_span *const *spans, size_t n,
                     const char *service_name, struct tw_buf *out);

#endif
