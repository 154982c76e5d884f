/* http.h - the one outbound HTTP helper every adapter uses (libcurl).
 *
 * Retries live here and nowhere else: an adapter calls tw_http_do() once
 * and gets either the final HTTP answer or a transport error.  Attempts are
 * retried on 429, every 5xx, timeouts and connection errors, never on other
 * statuses; the wait between attempts is exponential backoff with full
 * jitter (a uniform draw in [0, min(cap, base * 2^(n-1))] before attempt
 * n+1), except that a Retry-After on 429 and 503 (seconds or HTTP-date) is
 * waited exactly.  The wait goes through an injectable sleep function and
 * the jitter through a seeded PRNG, so tests neither sleep nor guess.
 *
 * Signers re-sign every attempt through the request's prepare hook (SigV4
 * dates must be fresh, Azure tokens may expire between attempts).
 *
 * Threads: a struct tw_http may be shared by threads; each tw_http_do()
 * borrows a libcurl easy handle from a small pool (one transfer per handle
 * at a time) and gives it back with its live connections, so consecutive
 * requests to one host reuse the connection.  The sleep hook and the
 * prepare hook run on the calling thread.
 *
 * Process-wide state, deliberately (docs/architecture.md): libcurl's
 * curl_global_init() must run once per process before any transfer and
 * is not thread-safe on every build, so the first tw_http_new() runs it
 * under a pthread_once guard (http.c: http_once, and http_global_rc, its
 * outcome, written once), allowed by tests/unit/test_globals.c. */
#ifndef TW_PROVIDERS_HTTP_H
#define TW_PROVIDERS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

struct tw_clock;
struct tw_http;
struct tw_http_attempt;

/* Client settings; a zero field takes the default named beside it. */
struct tw_http_opts {
  unsigned max_attempts;   /* 4: first try plus 3 retries */
  int64_t backoff_base_ms; /* 200 */
  int64_t backoff_cap_ms;  /* 20000 */
  /* A Retry-After longer than this is not waited for: the answer is
   * returned at once (the caller decides whether to come back later). */
  int64_t retry_after_max_ms; /* 60000 */
  uint64_t seed;              /* jitter PRNG; 0: from time and pid */
  /* Waits ms milliseconds between attempts; NULL: nanosleep(). */
  void (*sleep_ms)(void *ctx, int64_t ms);
  void *sleep_ctx;
  /* Reads "now" for an HTTP-date Retry-After; NULL: the real clock.
   * Borrowed: must outlive the client. */
  struct tw_clock *clock;
  const char *user_agent; /* "tradewind/<version>" */
};

struct tw_http_header {
  const char *name;
  const char *value;
};

/* Called before every attempt (attempt 1 included) to add the headers of
 * that attempt, typically a fresh x-amz-date and Authorization.  Returning
 * an error ends tw_http_do() with that error before anything is sent.
 * The helper reads req->body and req->body_len after the hook on every
 * attempt, so a hook may rewrite the body in storage its adapter owns
 * (Alibaba's legacy signature travels in the body, with a fresh nonce per
 * attempt); keep the same pointer valid until tw_http_do() returns. */
typedef enum tw_rc (*tw_http_prepare_fn)(void *ctx, struct tw_http_attempt *a,
                                         struct tw_err *err);

/* Decides whether an answer the helper would retry (429, 5xx) is retried:
 * an adapter returns false when the body says retrying cannot help (EC2's
 * InsufficientInstanceCapacity comes back as a 500). */
typedef bool (*tw_http_retry_fn)(void *ctx, long status,
                                 const struct tw_buf *body);

/* Decides whether the helper may connect to sa (after name resolution,
 * before the socket exists); false refuses the attempt with why
 * (TW_E_FORBIDDEN, never retried). */
struct sockaddr;
typedef bool (*tw_http_addr_fn)(void *ctx, const struct sockaddr *sa, char *why,
                                size_t whysz);

struct tw_http_request {
  const char *method;                   /* "GET", "POST", "PUT", ... */
  const char *url;                      /* absolute, http or https */
  const struct tw_http_header *headers; /* sent on every attempt */
  size_t n_headers;
  const void *body; /* NULL: none */
  size_t body_len;
  long timeout_ms;            /* whole attempt; 0: 30000 */
  long connect_timeout_ms;    /* 0: 5000 */
  size_t max_body_bytes;      /* response body limit; 0: 32 MiB */
  unsigned max_attempts;      /* 0: the client's; 1: never retry */
  const char *ca_file;        /* PEM bundle to trust; NULL: system CAs */
  bool insecure;              /* skip TLS verification: local fakes only */
  tw_http_prepare_fn prepare; /* optional */
  void *prepare_ctx;
  tw_http_retry_fn should_retry; /* optional */
  void *retry_ctx;
  /* optional: every address connected to passes it first; a proxy from
   * the environment is not used then, so the check sees the target */
  tw_http_addr_fn allow_addr;
  void *allow_ctx;
};

/* The final answer.  Header values are those of the last attempt. */
struct tw_http_response {
  long status; /* 0 when no answer was received */
  struct tw_buf body;
  /* Borrowed from headers below, NULL when absent. */
  const char *content_type;
  const char *location;
  const char *retry_after;
  const char *azure_async_operation; /* Azure-AsyncOperation */
  const char *operation_location;    /* Operation-Location */
  struct tw_http_header *headers;    /* every response header, as sent */
  size_t n_headers;
  unsigned attempts; /* attempts made, 1 when not retried */
  /* Tries that may have reached the server and got no answer (timed out,
   * the connection lost after sending): whatever a later try was told,
   * such a try may still be acted on (tw_adapter_refusal_settled). */
  unsigned unanswered;
  int64_t slept_ms;  /* total backoff requested between attempts */
};

void tw_http_response_init(struct tw_http_response *r);
/* Frees what r holds and leaves it empty (reusable). */
void tw_http_response_release(struct tw_http_response *r);
/* Value of the first header named name (case-insensitive), or NULL;
 * borrowed from r. */
const char *tw_http_response_header(const struct tw_http_response *r,
                                    const char *name);

/* A new client (free with tw_http_free()); opts may be NULL for the
 * defaults.  Errors: TW_E_INTERNAL when libcurl cannot be initialized. */
enum tw_rc tw_http_new(const struct tw_http_opts *opts, struct tw_http **out,
                       struct tw_err *err);
/* Frees h and closes its connections; NULL is fine.  No call may be in
 * flight. */
void tw_http_free(struct tw_http *h);

/* Performs req, retrying as described above; resp must be initialized and
 * is overwritten (released first).
 *   TW_OK           an HTTP answer was received: any status, also a
 *                   429/5xx once attempts are exhausted or should_retry
 *                   said no; map it with tw_http_status_rc() or read the
 *                   provider's error from the body
 *   TW_E_RETRYABLE  timeouts or connection errors on every attempt
 *   TW_E_TOOBIG     the response body exceeded max_body_bytes (not retried)
 *   TW_E_INVALID    bad request arguments or URL (not retried)
 *   TW_E_IO         other transport failures, e.g. TLS verification
 *   TW_E_FORBIDDEN  allow_addr refused every address of the host
 *   prepare's error when the hook fails
 * err->msg holds libcurl's error text and the method and URL without the
 * query (which may carry signatures). */
enum tw_rc tw_http_do(struct tw_http *h, const struct tw_http_request *req,
                      struct tw_http_response *resp, struct tw_err *err);

/* The class of an HTTP status: 2xx/3xx TW_OK, 400 TW_E_INVALID, 401/403
 * TW_E_AUTH, 404/410 TW_E_NOTFOUND, 409/412 TW_E_CONFLICT, 413 TW_E_TOOBIG,
 * 415 TW_E_UNSUPPORTED_MEDIA, 408/429/5xx TW_E_RETRYABLE, other 4xx
 * TW_E_INVALID, anything else TW_E_INTERNAL.  Adapters refine it with the
 * provider's error code (quota, capacity). */
enum tw_rc tw_http_status_rc(long status);

/* For the prepare hook: the attempt number, 1 for the first. */
unsigned tw_http_attempt_number(const struct tw_http_attempt *a);
/* For the prepare hook: the request being sent. */
const struct tw_http_request *
tw_http_attempt_request(const struct tw_http_attempt *a);
/* For the prepare hook: adds a header to this attempt only (copied). */
void tw_http_attempt_add_header(struct tw_http_attempt *a, const char *name,
                                const char *value);

/* The wait before attempt n+1 given the wait ceiling; exposed for tests:
 * a uniform draw in [0, min(cap, base * 2^(n-1))] from h's PRNG. */
int64_t tw_http_backoff_ms(struct tw_http *h, unsigned n);

/* Parses a Retry-After value (delta seconds or HTTP-date) into ms from
 * now_ms; -1 when malformed.  A date in the past gives 0. */
int64_t tw_http_parse_retry_after(const char *v, int64_t now_ms);

#endif
