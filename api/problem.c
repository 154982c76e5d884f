/* problem.c - RFC 9457 problem details: the only way errors leave the API. */
#include <stdarg.h>
#include <string.h>

#include "api/api_int.h"
#include "broker/core/skypilot.h"
#include "broker/base/clock.h"

static const struct {
  enum tw_rc rc;
  unsigned status;
  const char *type;
} RC_TABLE[] = {
    {TW_E_INVALID, 400, "invalid"},
    {TW_E_NOTFOUND, 404, "not-found"},
    {TW_E_CONFLICT, 409, "conflict"},
    {TW_E_TOOBIG, 413, "too-large"},
    {TW_E_UNSUPPORTED_MEDIA, 415, "unsupported-media-type"},
    {TW_E_AUTH, 401, "unauthenticated"},
    {TW_E_FORBIDDEN, 403, "forbidden"},
    {TW_E_RETRYABLE, 503, "unavailable"},
    {TW_E_CAPACITY, 503, "no-capacity"},
    {TW_E_QUOTA, 403, "quota-exceeded"},
    {TW_E_IO, 500, "internal"},
    {TW_E_INTERNAL, 500, "internal"},
    /* 507 rather than 503: it names the cause (RFC 4918 section 11.5, the
     * server cannot store what the request needs), so a client and an
     * alert can tell a full disk from an overload; space returns only when
     * an operator frees it, so no Retry-After is promised. */
    {TW_E_FULL, 507, "insufficient-storage"},
};

/* Seconds a client should wait after the store's storage failed under a
 * write (TW_E_IO with TW_DETAIL_STORE_IO): long enough for a transient
 * I/O error or a lock to clear, short enough not to lose a submitter. */
#define STORE_RETRY_AFTER_S "5"

static bool store_io(const struct tw_err *err) {
  return err->rc == TW_E_IO && !strcmp(err->detail, TW_DETAIL_STORE_IO);
}

static const char *title_of(unsigned status) {
  switch (status) {
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 409:
    return "Conflict";
  case 411:
    return "Length Required";
  case 412:
    return "Precondition Failed";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 415:
    return "Unsupported Media Type";
  case 428:
    return "Precondition Required";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  case 507:
    return "Insufficient Storage";
  default:
    return "Internal Server Error";
  }
}

void tw_problem_store(struct tw_req *r, enum tw_rc health, int64_t since_ms) {
  char since[40] = "";
  if (since_ms > 0)
    tw_time_fmt_rfc3339(since_ms, since, sizeof since);
  tw_req_add_header(r, "Retry-After", STORE_RETRY_AFTER_S);
  tw_problem(r, 503, "store-unavailable", NULL,
             "the store cannot commit writes%s%s: %s",
             since[0] ? " since " : "", since,
             health == TW_E_FULL ? "the store's disk is full"
                                 : "the store's storage reports I/O errors");
}

unsigned tw_rc_http_status(enum tw_rc rc) {
  for (size_t i = 0; i < sizeof RC_TABLE / sizeof RC_TABLE[0]; i++)
    if (RC_TABLE[i].rc == rc)
      return RC_TABLE[i].status;
  return 500;
}

void tw_problem(struct tw_req *r, unsigned status, const char *type,
                const char *field, const char *fmt, ...) {
  struct tw_buf detail;
  tw_buf_init(&detail);
  va_list ap;
  va_start(ap, fmt);
  tw_buf_vprintf(&detail, fmt, ap);
  va_end(ap);
  tw_buf_reset(&r->out);
  tw_buf_printf(&r->out, "{\"type\":\"/problems/%s\",\"title\":", type);
  tw_buf_json_str(&r->out, title_of(status));
  tw_buf_printf(&r->out, ",\"status\":%u,\"detail\":", status);
  tw_buf_json_str(&r->out, detail.data ? detail.data : "");
  if (field && *field) {
    tw_buf_adds(&r->out, ",\"field\":");
    tw_buf_json_str(&r->out, field);
  }
  tw_buf_adds(&r->out, ",\"instance\":");
  tw_buf_json_str(&r->out, r->url);
  tw_buf_adds(&r->out, ",\"request_id\":");
  tw_buf_json_str(&r->out, r->request_id);
  tw_buf_adds(&r->out, "}");
  tw_buf_release(&detail);
  r->status = status;
  r->content_type = "application/problem+json";
}

void tw_problem_err(struct tw_req *r, const struct tw_err *err) {
  unsigned status = tw_rc_http_status(err->rc);
  const char *type = "internal";
  for (size_t i = 0; i < sizeof RC_TABLE / sizeof RC_TABLE[0]; i++)
    if (RC_TABLE[i].rc == err->rc)
      type = RC_TABLE[i].type;
  if (err->rc == TW_E_INVALID)
    type = err->field[0] ? "invalid-field" : "malformed";
  /* The storage's failures say what happened (the disk, not the request),
   * but not sqlite's own text, which stays in the log. */
  if (err->rc == TW_E_FULL) {
    tw_problem(r, status, type, NULL,
               "the store's disk is full: nothing of this request was "
               "written, and what was acknowledged before is kept; retry "
               "once space is freed (request %s)",
               r->request_id);
    return;
  }
  if (store_io(err)) {
    tw_req_add_header(r, "Retry-After", STORE_RETRY_AFTER_S);
    tw_problem(r, 503, "store-unavailable", NULL,
               "the store could not write (an I/O error): nothing of this "
               "request was written; retry later (request %s)",
               r->request_id);
    return;
  }
  /* internal failures keep their text in the log, not on the wire */
  if (status >= 500 && err->rc != TW_E_RETRYABLE)
    tw_problem(r, status, type, NULL, "internal error (request %s)",
               r->request_id);
  else
    tw_problem(r, status, type, err->field, "%s", err->msg);
}

void tw_problem_spec_errs(struct tw_req *r, const struct tw_err *err,
                          const struct tw_spec_errs *errs) {
  tw_problem_err(r, err);
  if (!errs || !errs->n || err->rc != TW_E_INVALID || !r->out.len ||
      r->out.data[r->out.len - 1] != '}')
    return;
  /* every problem of the document, beside the first in detail */
  r->out.data[--r->out.len] = '\0';
  tw_buf_adds(&r->out, ",\"errors\":[");
  for (size_t i = 0; i < errs->n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    tw_buf_adds(&r->out, "{\"field\":");
    tw_buf_json_str(&r->out, errs->v[i].field);
    tw_buf_adds(&r->out, ",\"detail\":");
    tw_buf_json_str(&r->out, errs->v[i].msg);
    tw_buf_addc(&r->out, '}');
  }
  tw_buf_addc(&r->out, ']');
  if (errs->n_more)
    tw_buf_printf(&r->out, ",\"errors_omitted\":%zu", errs->n_more);
  tw_buf_addc(&r->out, '}');
}
