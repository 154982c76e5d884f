/* test_azure_check.h - the few assertion macros the Azure tests share:
 * each counts, prints the failing line and carries on, and the test's
 * main returns non-zero when any failed. */
#ifndef TW_TESTS_UNIT_TEST_AZURE_CHECK_H
#define TW_TESTS_UNIT_TEST_AZURE_CHECK_H

#include <stdio.h>
#include <string.h>

#include "broker/base/err.h"

static int failures;
static int checks;

#define CHECK(cond)                                                            \
  do {                                                                         \
    checks++;                                                                  \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)
#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    checks++;                                                                  \
    if (strcmp((a), (b))) {                                                    \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: \"%s\" != \"%s\" (%s)\n", __FILE__, __LINE__,    \
              (a), (b), #a);                                                   \
    }                                                                          \
  } while (0)
#define CHECK_RC(rc, want, err)                                                \
  do {                                                                         \
    checks++;                                                                  \
    if ((rc) != (want)) {                                                      \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: rc %s, want %s: %s\n", __FILE__, __LINE__,       \
              tw_rc_str(rc), tw_rc_str(want), (err).msg);                      \
    }                                                                          \
  } while (0)

#endif
