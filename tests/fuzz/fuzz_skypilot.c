/* fuzz_skypilot.c - SkyPilot task files (broker/core/skypilot.h) on
 * arbitrary bytes.
 *
 * Each input is read as YAML and as JSON through tw_spec_parse_any.  A
 * failure must carry at least one error, each starting with its path; a
 * success must round-trip through the canonical JSON, read back as a
 * native spec (never as a task), or the target aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/core/skypilot.h"

static struct tw_spec_errs errs;

static void one(const uint8_t *data, size_t size, bool json) {
  struct tw_job_spec s, again;
  struct tw_err err = {0};
  bool sky = false;
  if (tw_spec_parse_any((const char *)data, size, json, NULL, &s, &errs, &sky,
                        &err) != TW_OK) {
    if (!errs.n)
      abort(); /* a refusal always says why */
    for (size_t i = 0; i < errs.n; i++)
      if (errs.v[i].field[0] &&
          strncmp(errs.v[i].msg, errs.v[i].field, strlen(errs.v[i].field)))
        abort(); /* every message starts with its path */
    return;
  }
  struct tw_buf a, b;
  tw_buf_init(&a);
  tw_buf_init(&b);
  tw_spec_to_json(&s, &a);
  if (tw_spec_parse_any(a.data, a.len, true, NULL, &again, &errs, &sky,
                        &err) != TW_OK ||
      sky)
    abort(); /* the printed spec is a valid native spec */
  tw_spec_to_json(&again, &b);
  if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
    abort();
  tw_spec_release(&again);
  tw_spec_release(&s);
  tw_buf_release(&a);
  tw_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, false);
  one(data, size, true);
  return 0;
}
