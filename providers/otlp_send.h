/* otlp_send.h - the transport of the trace exporter (broker/base/trace.h):
 * one OTLP/HTTP POST of a JSON body through the providers' HTTP helper
 * (providers/http.h), never retried there (the tracer retries a batch with
 * its own backoff, and stops waiting when the daemon stops). */
#ifndef TW_PROVIDERS_OTLP_SEND_H
#define TW_PROVIDERS_OTLP_SEND_H

#include <stddef.h>

#include "broker/base/err.h"

struct tw_otlp_sender;

/* timeout_ms: a whole POST (0: 10000). */
enum tw_rc tw_otlp_sender_new(long timeout_ms, struct tw_otlp_sender **out,
                              struct tw_err *err);
void tw_otlp_sender_free(struct tw_otlp_sender *s);
/* tw_tracer_opts.send: ctx is the sender; headers are "Name: value". */
long tw_otlp_send(void *ctx, const char *url, const char *const *headers,
                  const char *body, size_t len);

#endif
