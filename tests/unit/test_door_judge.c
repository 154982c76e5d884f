/* test_door_judge.c - the front door's judgement of a first request head
 * (api/door.h, tw_door_judge and tw_door_answer): what passes to the
 * HTTP library, what waits for more bytes, and what is refused with
 * which status before the library could answer it with HTML itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/door.h"

static const struct tw_door_limits LIM = {.max_head = 24576, .pool = 40960};

static enum tw_door_verdict judge(const char *head, struct tw_door_problem *p) {
  return tw_door_judge(head, strlen(head), &LIM, p);
}

static void expect(const char *head, enum tw_door_verdict v, unsigned status,
                   const char *field) {
  struct tw_door_problem p;
  enum tw_door_verdict got = judge(head, &p);
  if (got != v)
    fail_msg("%s: verdict %d, want %d (%u %s)", head, got, v, p.status,
             p.detail);
  if (v == TW_DOOR_REFUSE) {
    assert_int_equal(p.status, status);
    if (field)
      assert_string_equal(p.field, field);
  }
}

static void whole_heads_pass(void **state) {
  (void)state;
  struct tw_door_problem p;
  static const char get[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  assert_int_equal(judge(get, &p), TW_DOOR_PASS);
  assert_int_equal(p.head_len, strlen(get));
  /* what follows the head (a body, the next request) is not judged */
  assert_int_equal(judge("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length:"
                         " 3\r\n\r\n{\0}",
                         &p),
                   TW_DOOR_PASS);
  expect("\r\n\nGET / HTTP/1.0\n\n", TW_DOOR_PASS, 0, NULL); /* bare LF */
  expect("GET / HTTP/1.2\r\nHost: x\r\n\r\n", TW_DOOR_PASS, 0, NULL);
  expect("POST / HTTP/1.1\r\nContent-Length:\t 42\r\n\r\n", TW_DOOR_PASS, 0,
         NULL);
  expect("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n",
         TW_DOOR_PASS, 0, NULL);
  /* framing the server itself refuses goes on to it */
  expect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", TW_DOOR_PASS,
         0, NULL);
}

/* What the relay frames by: the body's length, or none it can trust. */
static void bodies_are_framed_by_their_length(void **state) {
  (void)state;
  struct tw_door_problem p;
  assert_int_equal(judge("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &p),
                   TW_DOOR_PASS);
  assert_true(p.body_len == 0 && !p.unframed);
  assert_int_equal(
      judge("POST / HTTP/1.1\r\ncontent-length: 1234\r\n\r\n", &p),
      TW_DOOR_PASS);
  assert_true(p.body_len == 1234 && !p.unframed);
  /* the same length twice is one length */
  assert_int_equal(judge("POST / HTTP/1.1\r\nContent-Length: 7\r\n"
                         "Content-Length: 7\r\n\r\n",
                         &p),
                   TW_DOOR_PASS);
  assert_true(p.body_len == 7 && !p.unframed);
  /* two lengths, or chunked: the end of the body is unknown here */
  assert_int_equal(judge("POST / HTTP/1.1\r\nContent-Length: 0\r\n"
                         "Content-Length: 35\r\n\r\n",
                         &p),
                   TW_DOOR_PASS);
  assert_true(p.unframed && p.body_len == 0);
  assert_int_equal(judge("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                         "Content-Length: 5\r\n\r\n",
                         &p),
                   TW_DOOR_PASS);
  assert_true(p.unframed && p.body_len == 0);
}

static void partial_heads_wait(void **state) {
  (void)state;
  expect("", TW_DOOR_MORE, 0, NULL);
  expect("GET /healthz HT", TW_DOOR_MORE, 0, NULL);
  expect("GET /healthz HTTP/1.1\r\nHost: x\r\n", TW_DOOR_MORE, 0, NULL);
  expect("GET /healthz HTTP/1.1\r\nHost: x\r\n\r", TW_DOOR_MORE, 0, NULL);
}

static void the_library_s_own_errors_are_refused(void **state) {
  (void)state;
  /* (a) */
  expect("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", TW_DOOR_REFUSE,
         400, "Content-Length");
  expect("POST / HTTP/1.1\r\nContent-Length: 5 \r\n\r\n", TW_DOOR_REFUSE, 400,
         "Content-Length");
  expect("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", TW_DOOR_REFUSE, 400,
         "Content-Length");
  expect("POST / HTTP/1.1\r\ncontent-length:\r\n\r\n", TW_DOOR_REFUSE, 400,
         "Content-Length");
  expect("POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
         TW_DOOR_REFUSE, 413, "Content-Length");
  /* refused as soon as the bad line is whole, before the head ends */
  expect("POST / HTTP/1.1\r\nContent-Length: x\r\n", TW_DOOR_REFUSE, 400,
         "Content-Length");
  /* (d) and other request lines */
  expect("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", TW_DOOR_REFUSE, 505,
         "request-line");
  expect("GET / HTTP/0.9\r\n\r\n", TW_DOOR_REFUSE, 505, "request-line");
  expect("GET /\r\n\r\n", TW_DOOR_REFUSE, 400, "request-line");
  expect("GET / HTTP/1.10\r\n\r\n", TW_DOOR_REFUSE, 400, "request-line");
  expect("G(T / HTTP/1.1\r\n\r\n", TW_DOOR_REFUSE, 400, "request-line");
  expect("GARBAGE\r\n\r\n", TW_DOOR_REFUSE, 400, "request-line");
  /* header lines */
  expect("GET / HTTP/1.1\r\nNo-Colon\r\n\r\n", TW_DOOR_REFUSE, 400, "headers");
  expect("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", TW_DOOR_REFUSE, 400,
         "headers");
  struct tw_door_problem p;
  static const char nul[] = "GET / HTTP/1.1\r\nHost: \0x";
  assert_int_equal(tw_door_judge(nul, sizeof nul - 1, &LIM, &p),
                   TW_DOOR_REFUSE);
  assert_int_equal(p.status, 400);
}

/* (c): the head's bytes, and what its fields cost the library */
static void sizes_are_bounded(void **state) {
  (void)state;
  struct tw_door_problem p;
  size_t cap = 2 * LIM.max_head;
  char *h = malloc(cap);
  /* a request line that never ends within the bound */
  memset(h, 'a', cap);
  memcpy(h, "GET /", 5);
  assert_int_equal(tw_door_judge(h, LIM.max_head + 1, &LIM, &p),
                   TW_DOOR_REFUSE);
  assert_int_equal(p.status, 414);
  assert_int_equal(tw_door_judge(h, LIM.max_head, &LIM, &p), TW_DOOR_MORE);
  /* headers that never end */
  int n = snprintf(h, cap, "GET / HTTP/1.1\r\n");
  while ((size_t)n < LIM.max_head + 100)
    n += snprintf(h + n, cap - (size_t)n, "X-Pad: %0100d\r\n", 0);
  assert_int_equal(tw_door_judge(h, LIM.max_head + 1, &LIM, &p),
                   TW_DOOR_REFUSE);
  assert_int_equal(p.status, 431);
  /* a whole head over the bound */
  n += snprintf(h + n, cap - (size_t)n, "\r\n");
  assert_int_equal(tw_door_judge(h, (size_t)n, &LIM, &p), TW_DOOR_REFUSE);
  assert_int_equal(p.status, 431);
  /* small, but more fields than the connection memory holds: each costs
   * 64 bytes beside the head, and 8 KiB stay for the answer */
  size_t fits = 0;
  for (int k = 1; k < 1000; k++) {
    n = snprintf(h, cap, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < k; i++)
      n += snprintf(h + n, cap - (size_t)n, "a:\r\n");
    n += snprintf(h + n, cap - (size_t)n, "\r\n");
    enum tw_door_verdict v = tw_door_judge(h, (size_t)n, &LIM, &p);
    if (v == TW_DOOR_PASS) {
      fits = (size_t)k;
      continue;
    }
    assert_int_equal(v, TW_DOOR_REFUSE);
    assert_int_equal(p.status, 431);
    break;
  }
  /* (40960 - 8192 - head) / 64 fields, the head of k lines of 4 bytes */
  assert_true(fits > 400 && fits < 500);
  /* query arguments and cookies count as fields too */
  n = snprintf(h, cap, "GET /?a");
  for (int i = 0; i < 600; i++)
    n += snprintf(h + n, cap - (size_t)n, "&a");
  n += snprintf(h + n, cap - (size_t)n, " HTTP/1.1\r\n\r\n");
  assert_int_equal(tw_door_judge(h, (size_t)n, &LIM, &p), TW_DOOR_REFUSE);
  assert_int_equal(p.status, 431);
  n = snprintf(h, cap, "GET / HTTP/1.1\r\nCookie: a");
  for (int i = 0; i < 600; i++)
    n += snprintf(h + n, cap - (size_t)n, ";a");
  n += snprintf(h + n, cap - (size_t)n, "\r\n\r\n");
  assert_int_equal(tw_door_judge(h, (size_t)n, &LIM, &p), TW_DOOR_REFUSE);
  assert_int_equal(p.status, 431);
  free(h);
}

static void answers_are_one_problem(void **state) {
  (void)state;
  struct tw_door_problem p;
  assert_int_equal(judge("PRI * HTTP/2.0\r\n\r\n", &p), TW_DOOR_REFUSE);
  char out[2048];
  size_t n = tw_door_answer(&p, "00112233445566aa", out, sizeof out);
  assert_true(n > 0 && n == strlen(out));
  assert_int_equal(strncmp(out, "HTTP/1.1 505 HTTP Version Not Supported\r\n",
                           41),
                   0);
  assert_non_null(strstr(out, "\r\nContent-Type: application/problem+json\r\n"));
  assert_non_null(strstr(out, "\r\nConnection: close\r\n"));
  assert_non_null(strstr(out, "\r\nDate: "));
  const char *body = strstr(out, "\r\n\r\n") + 4;
  char cl[48];
  snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", strlen(body));
  assert_non_null(strstr(out, cl));
  json_t *j = json_loads(body, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "type")),
                      "/problems/http-version-not-supported");
  assert_int_equal(json_integer_value(json_object_get(j, "status")), 505);
  assert_string_equal(json_string_value(json_object_get(j, "request_id")),
                      "00112233445566aa");
  json_decref(j);
  assert_int_equal(tw_door_answer(&p, "00112233445566aa", out, 64), 0);
}

/* What passes is parsed as the server reads it: the path and the
 * arguments percent-decoded ('+' a space in arguments only), fields
 * trimmed and found whatever their case, the connection's fate. */
static void heads_parse(void **state) {
  (void)state;
  const char *h = "\r\nGET /v1/jobs%2Fx+y?tenant=a%20b&state=run+ning&flag"
                  "&%74=1 HTTP/1.1\r\nHost: example\r\n"
                  "X-Empty:\r\nAuthorization:  Bearer t  \r\n"
                  "Connection: keep-alive, Close\r\n\r\n";
  struct tw_door_problem p;
  assert_int_equal(judge(h, &p), TW_DOOR_PASS);
  struct tw_door_req q;
  tw_door_parse(h, p.head_len, &q);
  assert_string_equal(q.method, "GET");
  assert_string_equal(q.path, "/v1/jobs/x+y");
  assert_string_equal(q.version, "HTTP/1.1");
  assert_true(q.http11);
  assert_true(q.want_close);
  assert_string_equal(tw_door_req_arg(&q, "tenant"), "a b");
  assert_string_equal(tw_door_req_arg(&q, "state"), "run ning");
  assert_int_equal(q.n_arg, 4);
  assert_null(tw_door_req_arg(&q, "flag")); /* present, without a value */
  assert_string_equal(q.arg[2].key, "flag");
  assert_string_equal(tw_door_req_arg(&q, "t"), "1");
  assert_string_equal(tw_door_req_header(&q, "authorization"), "Bearer t");
  assert_string_equal(tw_door_req_header(&q, "X-EMPTY"), "");
  assert_null(tw_door_req_header(&q, "Cookie"));
  tw_door_req_set_arg(&q, "tenant", "c");
  tw_door_req_set_arg(&q, "job", "j");
  assert_string_equal(tw_door_req_arg(&q, "tenant"), "c");
  assert_string_equal(tw_door_req_arg(&q, "job"), "j");
  tw_door_req_release(&q);
  /* HTTP/1.0 closes unless it asks to be kept */
  const char *h10 = "GET / HTTP/1.0\r\n\r\n";
  assert_int_equal(judge(h10, &p), TW_DOOR_PASS);
  tw_door_parse(h10, p.head_len, &q);
  assert_false(q.http11);
  assert_true(q.want_close);
  tw_door_req_release(&q);
  const char *k10 = "GET / HTTP/1.0\nConnection: Keep-Alive\n\n";
  assert_int_equal(judge(k10, &p), TW_DOOR_PASS);
  tw_door_parse(k10, p.head_len, &q);
  assert_false(q.want_close);
  tw_door_req_release(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(whole_heads_pass),
      cmocka_unit_test(bodies_are_framed_by_their_length),
      cmocka_unit_test(partial_heads_wait),
      cmocka_unit_test(the_library_s_own_errors_are_refused),
      cmocka_unit_test(sizes_are_bounded),
      cmocka_unit_test(answers_are_one_problem),
      cmocka_unit_test(heads_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
