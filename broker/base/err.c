#include "broker/base/err.h"

#include <stdio.h>
#include <string.h>

void tw_err_clear(struct tw_err *err) {
  if (err)
    memset(err, 0, sizeof *err);
}

enum tw_rc tw_err_setv(struct tw_err *err, enum tw_rc rc, const char *fmt,
                       va_list ap) {
  if (!err || err->rc != TW_OK)
    return rc;
  err->rc = rc;
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  return rc;
}

enum tw_rc tw_err_set(struct tw_err *err, enum tw_rc rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tw_err_setv(err, rc, fmt, ap);
  va_end(ap);
  return rc;
}

enum tw_rc tw_err_field(struct tw_err *err, enum tw_rc rc, const char *field,
                        const char *fmt, ...) {
  if (!err || err->rc != TW_OK)
    return rc;
  va_list ap;
  va_start(ap, fmt);
  tw_err_setv(err, rc, fmt, ap);
  va_end(ap);
  snprintf(err->field, sizeof err->field, "%s", field ? field : "");
  return rc;
}

void tw_err_detail(struct tw_err *err, const char *code) {
  if (err && code)
    snprintf(err->detail, sizeof err->detail, "%s", code);
}

const char *tw_rc_str(enum tw_rc rc) {
  switch (rc) {
  case TW_OK:
    return "ok";
  case TW_E_INVALID:
    return "invalid";
  case TW_E_NOTFOUND:
    return "not-found";
  case TW_E_CONFLICT:
    return "conflict";
  case TW_E_RETRYABLE:
    return "retryable";
  case TW_E_CAPACITY:
    return "capacity";
  case TW_E_QUOTA:
    return "provider-quota";
  case TW_E_AUTH:
    return "auth";
  case TW_E_TOOBIG:
    return "too-big";
  case TW_E_IO:
    return "io";
  case TW_E_INTERNAL:
    return "internal";
  case TW_E_FORBIDDEN:
    return "forbidden";
  case TW_E_UNSUPPORTED_MEDIA:
    return "unsupported-media-type";
  case TW_E_FULL:
    return "full";
  }
  return "unknown";
}
