/* http.h - the CLI's one libcurl wrapper.
 *
 * One easy handle per transfer, timeouts always set, no redirects followed
 * (the API never sends one; following could replay a POST elsewhere).  The
 * bearer token goes into the Authorization header only: curl's verbose
 * output stays off and no error text built here contains it. */
#ifndef TW_CLI_HTTP_H
#define TW_CLI_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

/* Responses larger than this are refused (TW_E_TOOBIG): a list page of 500
 * jobs is far below it, and a runaway server must not eat the client. */
#define TW_CLI_HTTP_MAX_BODY (64u * 1024 * 1024)
#define TW_CLI_HTTP_TIMEOUT_MS 30000L
#define TW_CLI_HTTP_CONNECT_TIMEOUT_MS 5000L

struct tw_cli_http_req {
  const char *base_url;     /* "http://127.0.0.1:8420", no trailing slash */
  const char *token;        /* bearer token or NULL */
  const char *method;       /* "GET", "POST", "DELETE" */
  const char *path;         /* "/v1/jobs?limit=5", already escaped */
  const char *content_type; /* of body; NULL when there is no body */
  const char *body;
  size_t body_len;
  const char *idempotency_key; /* NULL: no Idempotency-Key header */
  long timeout_ms;             /* whole transfer; 0: TW_CLI_HTTP_TIMEOUT_MS */
  const char *if_match;        /* NULL: no If-Match header */
  /* A PEM file of CA certificates to trust for https:// instead of the
   * system's bundle (a private CA); NULL: libcurl's default. */
  const char *cacert;
  /* Set: a 2xx body goes to on_data as it arrives instead of into
   * resp->body (an event stream); on_data returns false to end the
   * transfer, which is then no error. */
  bool (*on_data)(void *ctx, const char *data, size_t n);
  void *on_data_ctx;
};

struct tw_cli_http_resp {
  long status; /* 0 until a response arrived */
  struct tw_buf body;
  char content_type[128];
  char request_id[128];
  bool replayed;  /* Idempotent-Replayed: true */
  char etag[128]; /* ETag, "" when absent */
};

void tw_cli_http_resp_init(struct tw_cli_http_resp *r);
/* Frees the body and clears r for reuse. */
void tw_cli_http_resp_release(struct tw_cli_http_resp *r);

/* Performs req and fills resp (initialised by the caller; released by the
 * caller on every path).  Returns TW_OK whenever the server answered,
 * whatever the status: the caller maps statuses with tw_cli_http_status_rc.
 * TW_E_IO when the server could not be reached or the transfer broke off
 * (err->msg carries curl's reason and the URL without credentials),
 * TW_E_TOOBIG when the body exceeds TW_CLI_HTTP_MAX_BODY, TW_E_INVALID when
 * the token or key holds characters that cannot go into a header. */
enum tw_rc tw_cli_http_do(const struct tw_cli_http_req *req,
                          struct tw_cli_http_resp *resp, struct tw_err *err);

/* The error class of an HTTP status: 2xx TW_OK, 400/405/422 TW_E_INVALID,
 * 401 TW_E_AUTH, 403 TW_E_FORBIDDEN, 404 TW_E_NOTFOUND, 409/412
 * TW_E_CONFLICT, 413 TW_E_TOOBIG, 415 TW_E_UNSUPPORTED_MEDIA, 429
 * TW_E_QUOTA, any other 4xx TW_E_INVALID, 5xx TW_E_RETRYABLE, anything else
 * (1xx, 3xx) TW_E_INTERNAL. */
enum tw_rc tw_cli_http_status_rc(long status);

/* Percent-encodes s (everything but RFC 3986 unreserved characters) for a
 * path segment or query value.  The caller frees the result. */
char *tw_cli_http_escape(const char *s);

#endif
