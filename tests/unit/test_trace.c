/* test_trace.c - the span exporter (broker/base/trace.c): W3C trace
 * context, the OTLP JSON it writes, its bounded queue, its retries and
 * its sampling, against a send function of the test's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/mem.h"
#include "broker/base/trace.h"

static void traceparent_is_read_as_w3c_says(void **state) {
  (void)state;
  struct tw_trace_ctx c;
  const char *ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  assert_true(tw_traceparent_parse(ok, &c));
  assert_true(c.valid);
  assert_int_equal(c.flags, 1);
  assert_int_equal(c.trace_id[0], 0x4b);
  assert_int_equal(c.span_id[7], 0xb7);
  char back[64];
  tw_traceparent_fmt(&c, back, sizeof back);
  assert_string_equal(back, ok);
  /* a later version may carry more after a dash */
  assert_true(tw_traceparent_parse(
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more", &c));
  assert_int_equal(c.flags, 0);
  static const char *const bad[] = {
      "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", /* upper */
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* zero */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* ff */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00+ */
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
      NULL};
  for (int i = 0; bad[i]; i++)
    assert_false(tw_traceparent_parse(bad[i], &c));
  assert_false(tw_traceparent_parse(NULL, &c));
}

/* ---- a receiver of the test's -------------------------------------------- */

struct recv {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *bodies[64];
  char url[128], hdr[128];
  int n, calls;
  long answers[8]; /* status of call i; past the end: 200 */
  int n_answers;
  bool hold; /* block sends until released */
};

static long fake_send(void *ctx, const char *url, const char *const *headers,
                      const char *body, size_t len) {
  struct recv *r = ctx;
  pthread_mutex_lock(&r->mu);
  while (r->hold)
    pthread_cond_wait(&r->cv, &r->mu);
  snprintf(r->url, sizeof r->url, "%s", url);
  snprintf(r->hdr, sizeof r->hdr, "%s", headers && headers[0] ? headers[0] : "");
  long st = r->calls < r->n_answers ? r->answers[r->calls] : 200;
  r->calls++;
  if (st == 200 && r->n < 64) {
    r->bodies[r->n] = tw_malloc(len + 1);
    memcpy(r->bodies[r->n], body, len);
    r->bodies[r->n++][len] = '\0';
  }
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return st;
}

static void recv_init(struct recv *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

static void recv_free(struct recv *r) {
  for (int i = 0; i < r->n; i++)
    free(r->bodies[i]);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

static const char *const HDRS[] = {"Authorization: Bearer k", NULL};

static struct tw_tracer *tracer(struct recv *r, double sampling,
                                size_t queue_max, int64_t flush_ms) {
  struct tw_tracer_opts o = {.endpoint = "http://collector:4318/",
                             .service_name = "svc-test",
                             .sampling = sampling,
                             .headers = HDRS,
                             .queue_max = queue_max,
                             .batch_max = 8,
                             .flush_ms = flush_ms,
                             .max_attempts = 3,
                             .send = fake_send,
                             .send_ctx = r};
  struct tw_tracer *t = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_tracer_new(&o, &t, &err), TW_OK);
  return t;
}

static json_t *find_span(json_t *doc, const char *name) {
  json_t *spans = json_object_get(
      json_array_get(
          json_object_get(json_array_get(json_object_get(doc, "resourceSpans"),
                                         0),
                          "scopeSpans"),
          0),
      "spans");
  size_t i;
  json_t *s;
  json_array_foreach(spans, i, s) if (!strcmp(
      json_string_value(json_object_get(s, "name")), name)) return s;
  return NULL;
}

static const char *attr_of(json_t *span, const char *key, const char *kind) {
  size_t i;
  json_t *a;
  json_array_foreach(json_object_get(span, "attributes"), i, a) if (
      !strcmp(json_string_value(json_object_get(a, "key")), key)) {
    json_t *v = json_object_get(json_object_get(a, "value"), kind);
    return json_is_string(v) ? json_string_value(v) : v ? "non-string" : NULL;
  }
  return NULL;
}

static void spans_are_exported_as_otlp_json(void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  struct tw_tracer *t = tracer(&r, 1, 64, 20);
  struct tw_trace_ctx parent;
  assert_true(tw_traceparent_parse(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &parent));
  struct tw_span a, b;
  tw_span_start(t, &a, "POST /v1/jobs", TW_SPAN_SERVER, &parent);
  tw_span_start(t, &b, "child \"quoted\"\n", TW_SPAN_CLIENT, &a.ctx);
  tw_span_attr_str(&b, "s", "v\x01");
  tw_span_attr_str(&b, "u", "caf\xc3\xa9 \xff\xc3(");  /* UTF-8, then not */
  tw_span_attr_int(&b, "i", -9007199254740993LL); /* beyond a double */
  tw_span_attr_bool(&b, "b", true);
  tw_span_attr_double(&b, "d", 0.25);
  tw_span_attr_int(&b, "i", 7); /* the same key: replaced */
  tw_span_attr_int(&b, "min", INT64_MIN);
  tw_span_attr_int(&b, "max", INT64_MAX);
  tw_span_attr_int(&b, "zero", 0);
  char longv[400];
  memset(longv, 'x', sizeof longv - 1);
  longv[sizeof longv - 1] = '\0';
  tw_span_attr_str(&b, "long", longv); /* cut to the slot's 255 bytes */
  tw_span_error(&b, "refused: %s", "capacity");
  tw_span_end(&b);
  tw_span_attr_int(&a, "http.response.status_code", 201);
  tw_span_ok(&a);
  tw_span_end(&a);
  tw_tracer_free(t, 2000); /* flushes */
  assert_int_equal(r.n, 1);
  assert_string_equal(r.url, "http://collector:4318/v1/traces");
  assert_string_equal(r.hdr, "Authorization: Bearer k");
  json_error_t je;
  json_t *doc = json_loads(r.bodies[0], 0, &je);
  assert_non_null(doc);
  json_t *res = json_array_get(json_object_get(doc, "resourceSpans"), 0);
  json_t *ra = json_array_get(
      json_object_get(json_object_get(res, "resource"), "attributes"), 0);
  assert_string_equal(json_string_value(json_object_get(ra, "key")),
                      "service.name");
  json_t *sa = find_span(doc, "POST /v1/jobs");
  json_t *sb = find_span(doc, "child \"quoted\"\n");
  assert_non_null(sa);
  assert_non_null(sb);
  assert_string_equal(json_string_value(json_object_get(sa, "traceId")),
                      "4bf92f3577b34da6a3ce929d0e0e4736");
  assert_string_equal(json_string_value(json_object_get(sa, "parentSpanId")),
                      "00f067aa0ba902b7");
  /* the child's parent is the server span, in hex */
  char sid[17];
  tw_trace_hex(a.ctx.span_id, 8, sid);
  assert_string_equal(json_string_value(json_object_get(sb, "parentSpanId")),
                      sid);
  assert_int_equal(json_integer_value(json_object_get(sa, "kind")), 2);
  assert_int_equal(json_integer_value(json_object_get(sb, "kind")), 3);
  /* 64-bit integers as strings */
  assert_true(json_is_string(json_object_get(sa, "startTimeUnixNano")));
  assert_string_equal(attr_of(sb, "i", "intValue"), "7");
  assert_string_equal(attr_of(sb, "min", "intValue"), "-9223372036854775808");
  assert_string_equal(attr_of(sb, "max", "intValue"), "9223372036854775807");
  assert_string_equal(attr_of(sb, "zero", "intValue"), "0");
  longv[TW_SPAN_VAL_MAX - 1] = '\0';
  assert_string_equal(attr_of(sb, "long", "stringValue"), longv);
  assert_int_equal(json_integer_value(json_object_get(sb, "kind")), 3);
  char want[24];
  snprintf(want, sizeof want, "%lld", (long long)b.end_ns);
  assert_string_equal(json_string_value(json_object_get(sb, "endTimeUnixNano")),
                      want);
  assert_string_equal(attr_of(sb, "s", "stringValue"), "v\x01");
  assert_string_equal(attr_of(sb, "u", "stringValue"),
                      "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd(");
  assert_non_null(attr_of(sb, "b", "boolValue"));
  assert_non_null(attr_of(sb, "d", "doubleValue"));
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(sb, "status"), "code")),
                   2);
  assert_string_equal(
      json_string_value(
          json_object_get(json_object_get(sb, "status"), "message")),
      "refused: capacity");
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(sa, "status"), "code")),
                   1);
  json_decref(doc);
  recv_free(&r);
}

static int bodies_seen(struct recv *r) {
  pthread_mutex_lock(&r->mu);
  int n = r->n;
  pthread_mutex_unlock(&r->mu);
  return n;
}

static size_t n_attrs_of(json_t *span) {
  return json_array_size(json_object_get(span, "attributes"));
}

/* The copies queued for export are reused once their batch is sent: a
 * span written into a block another span used carries only its own
 * attributes and name, and a span with more attributes than a reused
 * block holds is exported whole. */
static void reused_blocks_carry_only_their_own_span(void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  /* no flush by time: a batch leaves only when full (8) or at the free,
   * so each export holds exactly the spans the case counts on however
   * slow the machine (a 20 ms flush split the second batch in two under
   * the sanitizers) */
  struct tw_tracer *t = tracer(&r, 1, 64, 600000);
  char key[16], name[32];
  for (int i = 0; i < 8; i++) { /* one full batch of 6-attribute spans */
    struct tw_span sp;
    snprintf(name, sizeof name, "first-%d", i);
    tw_span_start(t, &sp, name, TW_SPAN_INTERNAL, NULL);
    for (int k = 0; k < 6; k++) {
      snprintf(key, sizeof key, "k%d", k);
      tw_span_attr_str(&sp, key, "old");
    }
    tw_span_end(&sp);
  }
  for (int w = 0; w < 200 && bodies_seen(&r) < 1; w++)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  assert_int_equal(bodies_seen(&r), 1);
  for (int i = 0; i < 7; i++) {
    struct tw_span sp;
    snprintf(name, sizeof name, "second-%d", i);
    tw_span_start(t, &sp, name, TW_SPAN_INTERNAL, NULL);
    tw_span_attr_int(&sp, "only", i);
    tw_span_end(&sp);
  }
  struct tw_span big;
  tw_span_start(t, &big, "big", TW_SPAN_INTERNAL, NULL);
  for (int k = 0; k < 12; k++) {
    snprintf(key, sizeof key, "b%d", k);
    tw_span_attr_int(&big, key, k);
  }
  tw_span_end(&big);
  tw_tracer_free(t, 2000);
  assert_int_equal(r.n, 2);
  json_error_t je;
  json_t *doc = json_loads(r.bodies[1], 0, &je);
  assert_non_null(doc);
  for (int i = 0; i < 7; i++) {
    snprintf(name, sizeof name, "second-%d", i);
    json_t *sp = find_span(doc, name);
    assert_non_null(sp);
    assert_int_equal(n_attrs_of(sp), 1);
    char want[8];
    snprintf(want, sizeof want, "%d", i);
    assert_string_equal(attr_of(sp, "only", "intValue"), want);
    assert_null(attr_of(sp, "k0", "stringValue"));
  }
  json_t *b = find_span(doc, "big");
  assert_non_null(b);
  assert_int_equal(n_attrs_of(b), 12);
  assert_string_equal(attr_of(b, "b11", "intValue"), "11");
  assert_null(find_span(doc, "first-0"));
  json_decref(doc);
  recv_free(&r);
}

/* A span the caller keeps on the heap comes back from the tracer's pool
 * after its release (no allocation per request once warm), and still
 * records and exports as one on the stack does; without a tracer it is
 * simply allocated and freed. */
static void heap_spans_are_reused_from_the_tracer(void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  struct tw_tracer *t = tracer(&r, 1, 64, 20);
  struct tw_span *a = tw_span_alloc(t);
  assert_non_null(a);
  tw_span_start(t, a, "first", TW_SPAN_SERVER, NULL);
  tw_span_end(a);
  tw_span_release(t, a);
  struct tw_span *b = tw_span_alloc(t);
  assert_ptr_equal(b, a); /* the released block again */
  tw_span_start(t, b, "second", TW_SPAN_SERVER, NULL);
  tw_span_attr_int(b, "n", 2);
  tw_span_end(b);
  struct tw_span *c = tw_span_alloc(t); /* the pool is empty: a new one */
  assert_non_null(c);
  assert_ptr_not_equal(c, b);
  tw_span_release(t, b);
  tw_span_release(t, c);
  tw_span_release(t, NULL);
  struct tw_span *d = tw_span_alloc(NULL);
  assert_non_null(d);
  tw_span_release(NULL, d);
  tw_tracer_free(t, 2000);
  assert_int_equal(r.n, 1);
  json_error_t je;
  json_t *doc = json_loads(r.bodies[0], 0, &je);
  assert_non_null(doc);
  assert_non_null(find_span(doc, "first"));
  json_t *sp = find_span(doc, "second");
  assert_non_null(sp);
  assert_string_equal(attr_of(sp, "n", "intValue"), "2");
  json_decref(doc);
  recv_free(&r);
}

static void a_full_queue_drops_and_counts_without_waiting(void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  r.hold = true; /* the exporter is stuck in its first send */
  struct tw_tracer *t = tracer(&r, 1, 4, 10);
  struct tw_span s;
  /* the first batch is taken by the stuck send; then 4 wait; the rest go */
  for (int i = 0; i < 3; i++) {
    tw_span_start(t, &s, "first", TW_SPAN_INTERNAL, NULL);
    tw_span_end(&s);
  }
  struct tw_tracer_stats st;
  for (int i = 0; i < 500; i++) { /* the exporter takes them, and is held */
    tw_tracer_stats(t, &st);
    if (!st.queued)
      break;
    struct timespec w = {0, 10 * 1000000};
    nanosleep(&w, NULL);
  }
  assert_int_equal(st.queued, 0);
  for (int i = 0; i < 20; i++) {
    tw_span_start(t, &s, "later", TW_SPAN_INTERNAL, NULL);
    tw_span_end(&s); /* returns at once though nothing can be sent */
  }
  tw_tracer_stats(t, &st);
  assert_int_equal(st.started, 23);
  assert_int_equal(st.queued, 4);
  assert_int_equal(st.dropped, 16);
  pthread_mutex_lock(&r.mu);
  r.hold = false;
  pthread_cond_broadcast(&r.cv);
  pthread_mutex_unlock(&r.mu);
  tw_tracer_free(t, 2000);
  /* 3 + 4 exported, 16 dropped */
  int spans = 0;
  for (int i = 0; i < r.n; i++)
    for (const char *p = r.bodies[i]; (p = strstr(p, "\"spanId\"")); p++)
      spans++;
  assert_int_equal(spans, 7);
  recv_free(&r);
}

static void a_failed_export_is_retried_then_dropped(void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  r.answers[0] = 503;
  r.answers[1] = 0; /* no answer */
  r.n_answers = 2;
  struct tw_tracer *t = tracer(&r, 1, 64, 10);
  struct tw_span s;
  tw_span_start(t, &s, "retried", TW_SPAN_INTERNAL, NULL);
  tw_span_end(&s);
  struct tw_tracer_stats st;
  for (int i = 0; i < 200; i++) {
    tw_tracer_stats(t, &st);
    if (st.exported)
      break;
    struct timespec w = {0, 10 * 1000000};
    nanosleep(&w, NULL);
  }
  assert_int_equal(st.exported, 1);
  assert_int_equal(st.export_failures, 2);
  pthread_mutex_lock(&r.mu);
  assert_int_equal(r.calls, 3);
  /* a 400 will not get better: one try, then dropped */
  r.answers[3] = 400;
  r.n_answers = 4;
  pthread_mutex_unlock(&r.mu);
  tw_span_start(t, &s, "refused", TW_SPAN_INTERNAL, NULL);
  tw_span_end(&s);
  for (int i = 0; i < 200; i++) {
    tw_tracer_stats(t, &st);
    if (st.dropped)
      break;
    struct timespec w = {0, 10 * 1000000};
    nanosleep(&w, NULL);
  }
  assert_int_equal(st.dropped, 1);
  pthread_mutex_lock(&r.mu);
  assert_int_equal(r.calls, 4);
  pthread_mutex_unlock(&r.mu);
  tw_tracer_free(t, 2000);
  recv_free(&r);
}

static void sampling_decides_new_traces_and_parents_decide_theirs(
    void **state) {
  (void)state;
  struct recv r;
  recv_init(&r);
  struct tw_tracer *t = tracer(&r, 0, 64, 10);
  struct tw_span s;
  tw_span_start(t, &s, "unsampled", TW_SPAN_INTERNAL, NULL);
  assert_false(s.recording);
  assert_true(s.ctx.valid); /* the context still propagates */
  assert_int_equal(s.ctx.flags & 1, 0);
  tw_span_end(&s);
  struct tw_trace_ctx p;
  assert_true(tw_traceparent_parse(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &p));
  tw_span_start(t, &s, "sampled by its parent", TW_SPAN_INTERNAL, &p);
  assert_true(s.recording);
  tw_span_end(&s);
  /* at a quarter, about a quarter of new traces */
  tw_tracer_set_sampling(t, 0.25);
  int on = 0;
  for (int i = 0; i < 4000; i++) {
    tw_span_start(t, &s, "x", TW_SPAN_INTERNAL, NULL);
    on += s.recording;
    tw_span_discard(&s);
  }
  assert_in_range(on, 800, 1200);
  struct tw_tracer_stats st;
  tw_tracer_stats(t, &st);
  assert_int_equal(st.started, 1); /* discarded ones are not counted */
  /* a NULL tracer: nothing records, nothing crashes */
  tw_span_start(NULL, &s, "none", TW_SPAN_INTERNAL, NULL);
  assert_false(s.recording);
  tw_span_attr_str(&s, "k", "v");
  tw_span_end(&s);
  tw_span_end(NULL);
  tw_tracer_free(t, 2000);
  recv_free(&r);
}

static void credentials_in_the_endpoint_never_reach_the_log(void **state) {
  (void)state;
  char a[] = "https://user:s3cret@collector:4318/v1/traces";
  tw_trace_url_redact(a);
  assert_string_equal(a, "https://***@collector:4318/v1/traces");
  char b[] = "http://collector:4318/a@b";
  tw_trace_url_redact(b);
  assert_string_equal(b, "http://collector:4318/a@b");
}

static void bad_options_are_refused_by_name(void **state) {
  (void)state;
  struct tw_tracer *t = NULL;
  struct tw_err err = {0};
  struct tw_tracer_opts o = {.endpoint = "collector:4318", .send = fake_send};
  assert_int_equal(tw_tracer_new(&o, &t, &err), TW_E_INVALID);
  assert_non_null(strstr(err.msg, "otel.endpoint"));
  assert_null(t);
}

/* The encoder's output is JSON a strict decoder takes whatever bytes the
 * strings held: lead bytes that start no UTF-8 sequence (0xf5 to 0xff,
 * stray continuations, overlongs, surrogates) become U+FFFD, valid
 * sequences pass; non-finite doubles are the mapping's strings. */
static void any_bytes_encode_as_valid_utf8_json(void **state) {
  (void)state;
  static const char *const vals[] = {
      "\xf7\x80\x80",     /* not a lead byte, then continuations */
      "\xf5\x80\x80\x80", /* beyond U+10FFFF */
      "\xff\xfe",
      "\x80 stray",
      "\xc0\xaf",                         /* overlong '/' */
      "\xe0\x80\xaf",                     /* overlong, three bytes */
      "\xed\xa0\x80",                     /* a surrogate */
      "\xf4\x90\x80\x80",                 /* beyond U+10FFFF, four bytes */
      "\xe2\x82",                         /* cut short */
      "ok \xe2\x82\xac \xf0\x9f\x98\x80", /* the euro sign, an emoji */
  };
  size_t nv = sizeof vals / sizeof vals[0];
  static struct tw_span sp;
  memset(&sp, 0, sizeof sp);
  sp.ctx.trace_id[0] = 1;
  sp.ctx.span_id[0] = 1;
  sp.kind = TW_SPAN_INTERNAL;
  snprintf(sp.name, sizeof sp.name, "n\xf8\x88\x80\x80\x80");
  for (size_t i = 0; i < nv; i++) {
    snprintf(sp.attrs[i].key, sizeof sp.attrs[i].key, "k%zu", i);
    sp.attrs[i].type = TW_ATTR_STR;
    snprintf(sp.attrs[i].s, sizeof sp.attrs[i].s, "%s", vals[i]);
  }
  sp.attrs[nv].type = TW_ATTR_DOUBLE;
  snprintf(sp.attrs[nv].key, sizeof sp.attrs[nv].key, "inf");
  sp.attrs[nv].d = 1e308 * 10;
  sp.attrs[nv + 1].type = TW_ATTR_DOUBLE;
  snprintf(sp.attrs[nv + 1].key, sizeof sp.attrs[nv + 1].key, "nan");
  sp.attrs[nv + 1].d = sp.attrs[nv].d - sp.attrs[nv].d;
  sp.n_attrs = (int)nv + 2;
  sp.status = 2;
  snprintf(sp.status_msg, sizeof sp.status_msg, "\xfa\x80");
  const struct tw_span *one = &sp;
  struct tw_buf b;
  tw_buf_init(&b);
  tw_trace_encode(&one, 1, "svc", &b);
  assert_int_equal(strlen(b.data), b.len);
  json_error_t je;
  json_t *doc = json_loads(b.data, 0, &je); /* jansson refuses bad UTF-8 */
  if (!doc)
    fail_msg("not JSON: %s at %d: %s", je.text, je.position, b.data);
  json_t *s = find_span(doc, "n\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf"
                             "\xbd\xef\xbf\xbd");
  assert_non_null(s);
  assert_string_equal(attr_of(s, "k0", "stringValue"),
                      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  assert_string_equal(attr_of(s, "k9", "stringValue"),
                      "ok \xe2\x82\xac \xf0\x9f\x98\x80");
  assert_string_equal(attr_of(s, "inf", "doubleValue"), "Infinity");
  assert_string_equal(attr_of(s, "nan", "doubleValue"), "NaN");
  json_decref(doc);
  tw_buf_release(&b);
}

/* tw_traceparent_fmt() writes what tw_traceparent_parse() reads, and cuts
 * to the room given. */
static void traceparent_is_written_as_read(void **state) {
  (void)state;
  const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  struct tw_trace_ctx c;
  assert_true(tw_traceparent_parse(tp, &c));
  char out[TW_TRACEPARENT_LEN + 1];
  tw_traceparent_fmt(&c, out, sizeof out);
  assert_string_equal(out, tp);
  c.flags = 0xa0;
  tw_traceparent_fmt(&c, out, sizeof out);
  assert_string_equal(out + 52, "-a0");
  char small[8];
  tw_traceparent_fmt(&c, small, sizeof small);
  assert_string_equal(small, "00-4bf9");
}

/* ---- many threads ending spans at once ----------------------------------- */

#define CW_THREADS 8
#define CW_SPANS 500

struct counted {
  pthread_mutex_t mu;
  unsigned char seen[CW_THREADS][CW_SPANS];
  int twice, bad;
  long spans;
};

static long counting_send(void *ctx, const char *url,
                          const char *const *headers, const char *body,
                          size_t len) {
  (void)url;
  (void)headers;
  struct counted *c = ctx;
  json_error_t je;
  json_t *doc = json_loadb(body, len, 0, &je);
  json_t *spans = json_object_get(
      json_array_get(
          json_object_get(
              json_array_get(json_object_get(doc, "resourceSpans"), 0),
              "scopeSpans"),
          0),
      "spans");
  pthread_mutex_lock(&c->mu);
  if (!doc)
    c->bad++;
  size_t i;
  json_t *sp;
  json_array_foreach(spans, i, sp) {
    int w = -1, k = -1;
    const char *name = json_string_value(json_object_get(sp, "name"));
    if (!name || sscanf(name, "w%d-%d", &w, &k) != 2 || w < 0 ||
        w >= CW_THREADS || k < 0 || k >= CW_SPANS) {
      c->bad++;
      continue;
    }
    c->twice += c->seen[w][k]++ > 0;
    c->spans++;
  }
  pthread_mutex_unlock(&c->mu);
  json_decref(doc);
  return 200;
}

struct cw_arg {
  struct tw_tracer *t;
  int w;
};

static void *cw_main(void *arg) {
  struct cw_arg *a = arg;
  for (int k = 0; k < CW_SPANS; k++) {
    char name[32];
    snprintf(name, sizeof name, "w%d-%d", a->w, k);
    struct tw_span *sp = tw_span_alloc(a->t); /* a request's, shared pool */
    tw_span_start(a->t, sp, name, TW_SPAN_SERVER, NULL);
    int n_attrs = k % 5 ? 3 : 12; /* a pooled block, or one of its own */
    for (int i = 0; i < n_attrs; i++) {
      char key[16];
      snprintf(key, sizeof key, "a%d", i);
      tw_span_attr_int(sp, key, k);
    }
    tw_span_end(sp);
    tw_span_release(a->t, sp);
  }
  return NULL;
}

/* Spans ended by eight threads at once through a small queue: each one is
 * exported at most once, whole, and every one is either exported or
 * counted as dropped. */
static void concurrent_spans_are_exported_once_or_counted(void **state) {
  (void)state;
  static struct counted c;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mu, NULL);
  struct tw_tracer_opts o = {.endpoint = "http://collector:4318",
                             .sampling = 1,
                             .queue_max = 64,
                             .batch_max = 8,
                             .flush_ms = 5,
                             .max_attempts = 1,
                             .send = counting_send,
                             .send_ctx = &c};
  struct tw_tracer *t = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_tracer_new(&o, &t, &err), TW_OK);
  pthread_t th[CW_THREADS];
  struct cw_arg args[CW_THREADS];
  for (int w = 0; w < CW_THREADS; w++) {
    args[w] = (struct cw_arg){t, w};
    assert_int_equal(pthread_create(&th[w], NULL, cw_main, &args[w]), 0);
  }
  for (int w = 0; w < CW_THREADS; w++)
    pthread_join(th[w], NULL);
  /* every span recorded is, within a while, exported or dropped */
  struct tw_tracer_stats st;
  for (int i = 0; i < 1000; i++) {
    tw_tracer_stats(t, &st);
    if (!st.queued && st.exported + st.dropped == st.started)
      break;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  assert_int_equal(st.started, CW_THREADS * CW_SPANS);
  assert_int_equal(st.queued, 0);
  assert_int_equal(st.exported + st.dropped, st.started);
  pthread_mutex_lock(&c.mu);
  assert_int_equal(c.bad, 0);
  assert_int_equal(c.twice, 0);
  assert_int_equal(c.spans, (long)st.exported); /* what was counted came */
  pthread_mutex_unlock(&c.mu);
  assert_true(st.exported > 0);
  tw_tracer_free(t, 5000);
  pthread_mutex_destroy(&c.mu);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(traceparent_is_read_as_w3c_says),
      cmocka_unit_test(spans_are_exported_as_otlp_json),
      cmocka_unit_test(any_bytes_encode_as_valid_utf8_json),
      cmocka_unit_test(traceparent_is_written_as_read),
      cmocka_unit_test(reused_blocks_carry_only_their_own_span),
      cmocka_unit_test(heap_spans_are_reused_from_the_tracer),
      cmocka_unit_test(a_full_queue_drops_and_counts_without_waiting),
      cmocka_unit_test(concurrent_spans_are_exported_once_or_counted),
      cmocka_unit_test(a_failed_export_is_retried_then_dropped),
      cmocka_unit_test(sampling_decides_new_traces_and_parents_decide_theirs),
      cmocka_unit_test(credentials_in_the_endpoint_never_reach_the_log),
      cmocka_unit_test(bad_options_are_refused_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
