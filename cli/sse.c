/* sse.c - server-sent events as the WHATWG HTML standard's event stream
 * format has them (sse.h): lines end with LF, CRLF or CR; a blank line
 * dispatches the event; "field: value" with one optional space after the
 * colon; a line starting with ':' is a comment; an `id` holding NUL is
 * ignored.  Parsed line by line as the bytes arrive. */
#include "cli/sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void tw_cli_sse_init(struct tw_cli_sse *p) {
  memset(p, 0, sizeof *p);
  tw_buf_init(&p->part);
  tw_buf_init(&p->data);
  strcpy(p->type, "message");
}

void tw_cli_sse_release(struct tw_cli_sse *p) {
  tw_buf_release(&p->part);
  tw_buf_release(&p->data);
}

static void new_event(struct tw_cli_sse *p) {
  tw_buf_reset(&p->data);
  p->have_data = false;
  strcpy(p->type, "message");
}

void tw_cli_sse_restart(struct tw_cli_sse *p) {
  tw_buf_reset(&p->part);
  new_event(p);
}

/* One line (without its end); false when fn asked to stop. */
static bool line(struct tw_cli_sse *p, const char *s, size_t n,
                 tw_cli_sse_fn fn, void *ctx) {
  if (!n) {
    bool go = true;
    if (p->have_data)
      go = fn(ctx, p->type, p->data.data ? p->data.data : "");
    new_event(p);
    return go;
  }
  if (s[0] == ':')
    return true;
  const char *colon = memchr(s, ':', n);
  size_t fl = colon ? (size_t)(colon - s) : n;
  const char *val = colon ? colon + 1 : s + n;
  size_t vl = n - fl - (colon ? 1 : 0);
  if (vl && *val == ' ') {
    val++;
    vl--;
  }
  if (fl == 5 && !memcmp(s, "event", 5)) {
    size_t k = vl < sizeof p->type - 1 ? vl : sizeof p->type - 1;
    memcpy(p->type, val, k);
    p->type[k] = '\0';
  } else if (fl == 4 && !memcmp(s, "data", 4)) {
    if (p->have_data)
      tw_buf_addc(&p->data, '\n');
    tw_buf_add(&p->data, val, vl);
    p->have_data = true;
  } else if (fl == 2 && !memcmp(s, "id", 2) && !memchr(val, '\0', vl)) {
    char num[24];
    if (vl && vl < sizeof num) {
      memcpy(num, val, vl);
      num[vl] = '\0';
      char *end;
      errno = 0;
      long long v = strtoll(num, &end, 10);
      if (!errno && !*end && v >= 0)
        p->last_id = v;
    }
  }
  if (p->data.len > TW_CLI_SSE_MAX_EVENT)
    p->bad = true;
  return !p->bad;
}

bool tw_cli_sse_feed(struct tw_cli_sse *p, const char *data, size_t n,
                     tw_cli_sse_fn fn, void *ctx) {
  if (p->bad)
    return false;
  if (!n)
    return true;
  tw_buf_add(&p->part, data, n);
  size_t start = 0, i = 0;
  bool go = true;
  const char *s = p->part.data;
  while (go && i < p->part.len) {
    if (s[i] != '\n' && s[i] != '\r') {
      i++;
      continue;
    }
    if (s[i] == '\r' && i + 1 == p->part.len)
      break; /* a CR last: the LF of a CRLF may follow */
    go = line(p, s + start, i - start, fn, ctx);
    i += s[i] == '\r' && s[i + 1] == '\n' ? 2 : 1;
    start = i;
  }
  memmove(p->part.data, p->part.data + start, p->part.len - start);
  p->part.len -= start;
  p->part.data[p->part.len] = '\0';
  if (p->part.len > TW_CLI_SSE_MAX_EVENT)
    p->bad = true;
  return go && !p->bad;
}
