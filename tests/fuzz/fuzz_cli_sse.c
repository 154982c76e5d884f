/* fuzz_cli_sse.c - the CLI's event stream reader (cli/sse.c) on arbitrary
 * bytes, as a server or a man in the middle could send them.
 *
 * Besides not crashing: the same bytes fed whole and fed in pieces (cut
 * where the input's first byte says) give the same events in the same
 * order and the same last id; every event's type is NUL-free and at most
 * 63 bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sse.h"
#include "tests/fuzz/fuzz.h"

struct seen {
  struct tw_buf log;
  int n;
};

static bool record(void *ctx, const char *event, const char *data) {
  struct seen *s = ctx;
  if (strlen(event) > 63)
    abort();
  tw_buf_printf(&s->log, "%s\x1f%s\x1e", event, data);
  s->n++;
  return s->n < 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size)
    return 0;
  size_t step = (size_t)data[0] % 7 + 1;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  struct tw_cli_sse a, b;
  struct seen sa = {0}, sb = {0};
  tw_buf_init(&sa.log);
  tw_buf_init(&sb.log);
  tw_cli_sse_init(&a);
  tw_cli_sse_init(&b);
  bool ga = tw_cli_sse_feed(&a, in, n, record, &sa);
  bool gb = true;
  for (size_t i = 0; gb && i < n; i += step)
    gb = tw_cli_sse_feed(&b, in + i, i + step <= n ? step : n - i, record, &sb);
  if (ga && gb) {
    if (sa.n != sb.n || sa.log.len != sb.log.len ||
        (sa.log.len && memcmp(sa.log.data, sb.log.data, sa.log.len)) ||
        a.last_id != b.last_id)
      abort();
  }
  if (a.last_id < 0 || b.last_id < 0)
    abort();
  tw_cli_sse_release(&a);
  tw_cli_sse_release(&b);
  tw_buf_release(&sa.log);
  tw_buf_release(&sb.log);
  return 0;
}
