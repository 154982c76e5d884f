/* err.h - Tradewind's one error enum and its message buffer.
 *
 * A function that can fail returns enum tw_rc and takes `struct tw_err *err`
 * last (NULL allowed).  The first failure recorded wins, as curl's failf():
 * later context never hides the root cause. */
#ifndef TW_BROKER_ERR_H
#define TW_BROKER_ERR_H

#include <stdarg.h>

enum tw_rc {
  TW_OK = 0,
  TW_E_INVALID, /* the caller's input is wrong; never retried */
  TW_E_NOTFOUND,
  TW_E_CONFLICT,  /* idempotency key, ETag or state mismatch */
  TW_E_RETRYABLE, /* throttled, 5xx, timeout: the http helper retries */
  TW_E_CAPACITY,  /* no capacity there: the fallback strategy moves on */
  TW_E_QUOTA,     /* provider-side quota */
  TW_E_AUTH,
  TW_E_TOOBIG,
  TW_E_IO, /* store, file or socket */
  TW_E_INTERNAL,
  TW_E_FORBIDDEN, /* authenticated but not allowed */
  TW_E_UNSUPPORTED_MEDIA,
  TW_E_FULL /* the store's disk is full (SQLITE_FULL): nothing was written */
};

/* err->detail of a TW_E_IO the storage itself reported (sqlite's I/O
 * class: SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY, ...) rather than
 * a statement that is wrong: the write may succeed when retried, so the
 * API answers 503 with Retry-After instead of 500. */
#define TW_DETAIL_STORE_IO "store-io"

struct tw_err {
  enum tw_rc rc;
  char msg[256];   /* first failure wins */
  char detail[64]; /* provider's own code, e.g. InsufficientInstanceCapacity */
  char field[128]; /* path of the offending field, e.g. resources.cpus */
};

/* Clears err (no-op on NULL). */
void tw_err_clear(struct tw_err *err);

/* Records rc and a printf-style message unless err already holds a failure.
 * Returns rc so callers can `return tw_err_set(err, ...)`. */
enum tw_rc tw_err_set(struct tw_err *err, enum tw_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum tw_rc tw_err_setv(struct tw_err *err, enum tw_rc rc, const char *fmt,
                       va_list ap) __attribute__((format(printf, 3, 0)));

/* As tw_err_set, and records the field path (shown separately by the API). */
enum tw_rc tw_err_field(struct tw_err *err, enum tw_rc rc, const char *field,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records the provider's own error code (kept for logs). */
void tw_err_detail(struct tw_err *err, const char *code);

/* Static name of a code: "invalid", "capacity", ... */
const char *tw_rc_str(enum tw_rc rc);

#endif
