/* fuzz_door_head.c - the front door's judgement of a request head
 * (api/door.c) on arbitrary bytes, as any client can send them.
 *
 * The first byte picks where the input is cut (a prefix the door may
 * see first, the rest arriving later); small limits, so that the size
 * and memory bounds are reached.  Properties, beyond not crashing under
 * the sanitizers:
 *   - a head that passes ends in its blank line, within the limit, and
 *     starts (after empty lines) with a request line in HTTP/1.x;
 *   - what a prefix decides, the whole input decides alike: a passing
 *     head passes with the same length and the same body framing
 *     (Content-Length, or unframed), a refusal is the same refusal
 *     (the door never answers before it could know);
 *   - every refusal is one of the statuses the door answers, and its
 *     answer is one HTTP/1.1 response whose body is a JSON object with
 *     that status;
 *   - a head that passes parses (tw_door_parse): a method, a path and a
 *     version HTTP/1.x, each header field a name and a value without
 *     white space at either end, each found by its name. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/door.h"
#include "tests/fuzz/fuzz.h"

static const struct tw_door_limits LIM = {.max_head = 1024, .pool = 8192 + 2048};

static void check_refusal(const struct tw_door_problem *p) {
  if (p->status != 400 && p->status != 413 && p->status != 414 &&
      p->status != 431 && p->status != 505)
    abort();
  char out[2048];
  size_t n = tw_door_answer(p, "0123456789abcdef", out, sizeof out);
  if (!n || strncmp(out, "HTTP/1.1 ", 9) || (unsigned)atoi(out + 9) != p->status)
    abort();
  const char *body = strstr(out, "\r\n\r\n");
  if (!body || !strstr(out, "\r\nContent-Type: application/problem+json\r\n"))
    abort();
  json_t *j = json_loads(body + 4, 0, NULL);
  if (!j || json_integer_value(json_object_get(j, "status")) != p->status)
    abort();
  json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t cut = data[0];
  const char *buf = (const char *)data + 1;
  size_t len = size - 1;
  /* the door peeks at most max_head + 1 bytes */
  if (len > LIM.max_head + 1)
    len = LIM.max_head + 1;
  cut = len ? cut * len / 255 : 0;
  struct tw_door_problem whole, part;
  enum tw_door_verdict vw = tw_door_judge(buf, len, &LIM, &whole);
  enum tw_door_verdict vp = tw_door_judge(buf, cut, &LIM, &part);
  if (vw == TW_DOOR_REFUSE)
    check_refusal(&whole);
  if (vp == TW_DOOR_REFUSE) {
    check_refusal(&part);
    if (vw != TW_DOOR_REFUSE || whole.status != part.status ||
        strcmp(whole.detail, part.detail))
      abort();
  }
  /* a prefix that passes frames its body as the whole does (the relay
   * takes a body's length from what it judged) */
  if (vp == TW_DOOR_PASS &&
      (vw != TW_DOOR_PASS || whole.head_len != part.head_len ||
       whole.body_len != part.body_len || whole.unframed != part.unframed))
    abort();
  if (vw == TW_DOOR_PASS && whole.unframed && whole.body_len)
    abort();
  if (vw == TW_DOOR_PASS) {
    size_t h = whole.head_len;
    if (h > len || h > LIM.max_head || h < 2 || buf[h - 1] != '\n')
      abort();
    size_t i = 0;
    while (i < h && (buf[i] == '\r' || buf[i] == '\n'))
      i++;
    const char *lf = memchr(buf + i, '\n', h - i);
    size_t e = (size_t)(lf - buf);
    if (e > i && buf[e - 1] == '\r')
      e--;
    if (e < i + 9 || memcmp(buf + e - 8, "HTTP/1.", 7))
      abort();
    struct tw_door_req q;
    tw_door_parse(buf, h, &q);
    if (!q.method || !*q.method || !q.path || strncmp(q.version, "HTTP/1.", 7))
      abort();
    for (size_t k = 0; k < q.n_hdr; k++) {
      const char *v = q.hdr[k].value;
      size_t vn = strlen(v);
      if (!q.hdr[k].key || (vn && (v[0] == ' ' || v[0] == '\t' ||
                                   v[vn - 1] == ' ' || v[vn - 1] == '\t')))
        abort();
      if (tw_door_req_header(&q, q.hdr[k].key) == NULL)
        abort();
    }
    for (size_t k = 0; k < q.n_arg; k++) {
      size_t first = 0; /* a lookup finds the first of a name */
      while (strcasecmp(q.arg[first].key, q.arg[k].key))
        first++;
      if (tw_door_req_arg(&q, q.arg[k].key) != q.arg[first].value)
        abort();
    }
    tw_door_req_release(&q);
  }
  return 0;
}
