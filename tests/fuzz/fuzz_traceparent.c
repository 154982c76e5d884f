/* fuzz_traceparent.c - the W3C traceparent reader (broker/base/trace.c)
 * on arbitrary headers: any caller of the API sends one.
 *
 * Besides not crashing: a header that reads must write back as version
 * 00 with the same ids and flags, and that text must read again to the
 * same context. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char s[128];
  if (size >= sizeof s)
    size = sizeof s - 1;
  memcpy(s, data, size);
  s[size] = '\0';
  struct tw_trace_ctx c, d;
  if (!tw_traceparent_parse(s, &c))
    return 0;
  char back[TW_TRACEPARENT_LEN + 1];
  tw_traceparent_fmt(&c, back, sizeof back);
  if (strlen(back) != TW_TRACEPARENT_LEN || !tw_traceparent_parse(back, &d) ||
      memcmp(c.trace_id, d.trace_id, 16) || memcmp(c.span_id, d.span_id, 8) ||
      c.flags != d.flags)
    abort();
  /* the ids are the text's own */
  if (memcmp(back + 3, s + 3, 32) || memcmp(back + 36, s + 36, 16))
    abort();
  return 0;
}
