/* twtest.h - the project's checks, built on cmocka.
 *
 * Every test program is one cmocka group: its checks live in test
 * functions (static void name(void **state)) that main() hands to
 * cmocka_run_group_tests(), with a group setup and teardown when the
 * tests share a server, a daemon or a fixture.  The checks print what
 * went wrong (the condition, both values, the test's own message) and
 * then fail the running test through cmocka's _fail(): that test stops,
 * the others still run, and the program exits non-zero.
 *
 *   TW_CHECK(n == 3);
 *   TW_CHECK(n == 3, "offers for %s: %d", type, n);
 *   TW_CHECK_STR(got, "us-east-1");
 *   TW_CHECK_INT(rows, 374);
 *   TW_CHECK_RC(tw_x_do(x, &err), TW_OK, err);
 *   TW_FAIL("specs %s: %s", path, err.msg);
 *
 * A program that cannot run at all (the shared test data or a tool is
 * missing) prints "SKIPPED: why" and returns TW_SKIP (77) from main
 * before running its group; ctest's SKIP_RETURN_CODE reports it as
 * skipped.  cmocka's skip() inside a test would count as a pass.
 *
 * cmocka fails a test by longjmp: call the checks only on the thread
 * running the test.  Worker threads record what they saw; the test
 * checks it after joining them.  What a failed test leaves behind (a
 * daemon, a server, a temp dir) is released by its teardown, which can
 * tell a failure by tw_failures() having moved since its setup. */
#ifndef TW_TESTS_TWTEST_H
#define TW_TESTS_TWTEST_H

/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/err.h"

/* ctest's SKIP_RETURN_CODE (tw_add_test sets it on every test). */
#define TW_SKIP 77

/* How many checks of this program have failed so far (TW_CHECK* and
 * TW_FAIL; cmocka's own assert_* do not count).  A teardown compares it
 * with what its setup saw to keep a failed test's directory or print a
 * daemon's log. */
static inline int *tw_failures_(void) {
  static int n;
  return &n;
}
#define tw_failures() (*tw_failures_())

/* Prints "file:line: FAIL cond: message" on stderr and fails the running
 * test; does not return.  fmt starts with one space (the macros below
 * add it so that an empty message is a valid format). */
__attribute__((format(printf, 4, 5))) static inline void
tw_check_failed_(const char *file, int line, const char *cond, const char *fmt,
                 ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: FAIL %s", file, line, cond);
  if (fmt[1]) {
    fputs(":", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
  (*tw_failures_())++;
  _fail(file, line);
}

/* cond must hold; the optional printf-style message says what was seen. */
#define TW_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond))                                                               \
      tw_check_failed_(__FILE__, __LINE__, #cond, " " __VA_ARGS__);            \
  } while (0)

/* Fails the running test with a message. */
#define TW_FAIL(...) tw_check_failed_(__FILE__, __LINE__, "", " " __VA_ARGS__)

/* Two strings are equal (a NULL on either side fails). */
#define TW_CHECK_STR(got, want)                                                \
  do {                                                                         \
    const char *tw_got_ = (got), *tw_want_ = (want);                           \
    if (!tw_got_ || !tw_want_ || strcmp(tw_got_, tw_want_))                    \
      tw_check_failed_(__FILE__, __LINE__, #got, " got \"%s\", want \"%s\"",   \
                       tw_got_ ? tw_got_ : "(null)",                           \
                       tw_want_ ? tw_want_ : "(null)");                        \
  } while (0)

/* Two integers are equal (compared as long long). */
#define TW_CHECK_INT(got, want)                                                \
  do {                                                                         \
    long long tw_got_ = (long long)(got), tw_want_ = (long long)(want);        \
    if (tw_got_ != tw_want_)                                                   \
      tw_check_failed_(__FILE__, __LINE__, #got, " got %lld, want %lld",       \
                       tw_got_, tw_want_);                                     \
  } while (0)

/* expr (evaluated once) returns want; err says why it did not. */
#define TW_CHECK_RC(expr, want, err)                                           \
  do {                                                                         \
    enum tw_rc tw_rc_ = (expr);                                                \
    if (tw_rc_ != (want))                                                      \
      tw_check_failed_(__FILE__, __LINE__, #expr, " rc %s, want %s (%s: %s)",  \
                       tw_rc_str(tw_rc_), tw_rc_str(want), (err).detail,       \
                       (err).msg);                                             \
  } while (0)

/* The shared test data: $TRADEWIND_TESTDATA, else ../shared/data next to
 * the source tree ($TW_SOURCE_DIR, set by tw_add_test). */
static inline void tw_testdata_dir(char *buf, size_t size) {
  const char *env = getenv("TRADEWIND_TESTDATA");
  const char *src = getenv("TW_SOURCE_DIR");
  if (env && *env)
    snprintf(buf, size, "%s", env);
  else
    snprintf(buf, size, "%s/../shared/data", src && *src ? src : ".");
}

/* The whole file at path, NUL-terminated (free it), its length in *len;
 * NULL when it cannot be read.  For test data and fixtures. */
static inline char *tw_test_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 65536, n = 0, got;
  char *buf = malloc(cap + 1);
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *more = realloc(buf, cap * 2 + 1);
      if (!more) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = more;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf)
    return NULL;
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

#endif
