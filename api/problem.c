/* problem.c - RFC 9457 problem details: the only way errors leave the API. */
#include <stdarg.h>
#include <string.h>

#include "api/api_int.h"

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
};

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
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 412:
    return "Precondition Failed";
  case 415:
    return "Unsupported Media Type";
  case 428:
    return "Precondition Required";
  case 429:
    return "Too Many Requests";
  case 503:
    return "Service Unavailable";
  default:
    return "Internal Server Error";
  }
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
  /* internal failures keep their text in the log, not on the wire */
  if (status >= 500 && err->rc != TW_E_RETRYABLE)
    tw_problem(r, status, type, NULL, "internal error (request %s)",
               r->request_id);
  else
    tw_problem(r, status, type, err->field, "%s", err->msg);
}
