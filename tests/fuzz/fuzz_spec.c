/* fuzz_spec.c - the job spec parser on arbitrary bytes.
 *
 * Each input is read as YAML and as JSON.  Whatever validates must also
 * round-trip: its canonical JSON must parse again and print identically,
 * or the target aborts (a real finding, not just a crash check). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/core/spec.h"

static void one(const uint8_t *data, size_t size, bool json) {
  struct tw_job_spec s, again;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_spec_parse((const char *)data, size, json, &s, &err) != TW_OK)
    return;
  struct tw_buf a, b;
  tw_buf_init(&a);
  tw_buf_init(&b);
  tw_spec_to_json(&s, &a);
  tw_err_clear(&err);
  if (tw_spec_parse(a.data, a.len, true, &again, &err) != TW_OK)
    abort(); /* canonical output must always be valid input */
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
