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
 *     that status. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
  }
  return 0;
}
