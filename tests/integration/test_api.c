/* REST API over loopback: the server and store in-process on port 0, a real
 * HTTP client (libcurl).  Covers every route, the problem+json answers, and
 * that failed requests store nothing and crash nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"

static char dir[64], dbpath[128];
static struct tw_store *store;
static struct tw_api *api;
static CURL *curl;
static int port;

struct resp {
  long status;
  struct tw_buf body;
  char ctype[128];
  char location[128];
  char replayed[16];
  char allow[64];
  char request_id[32];
  json_t *json;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static void hdr_copy(char *dst, size_t dsz, const char *v, size_t len) {
  while (len && (v[len - 1] == '\r' || v[len - 1] == '\n'))
    len--;
  while (len && *v == ' ')
    v++, len--;
  snprintf(dst, dsz, "%.*s", (int)len, v);
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t len = sz * n;
  static const struct {
    const char *name;
    size_t off;
  } H[] = {{"content-type:", offsetof(struct resp, ctype)},
           {"location:", offsetof(struct resp, location)},
           {"idempotent-replayed:", offsetof(struct resp, replayed)},
           {"allow:", offsetof(struct resp, allow)},
           {"x-request-id:", offsetof(struct resp, request_id)}};
  for (size_t i = 0; i < sizeof H / sizeof H[0]; i++) {
    size_t hl = strlen(H[i].name);
    if (len > hl && !strncasecmp(p, H[i].name, hl))
      hdr_copy((char *)r + H[i].off, 64, p + hl, len - hl);
  }
  return len;
}

static void resp_free(struct resp *r) {
  tw_buf_release(&r->body);
  json_decref(r->json);
}

/* Set by req() when a large upload lost its connection before any answer
 * came back (the server refused early and closed while the client still
 * sent); NULL: that is a failure. */
static bool *big_send_lost;

static struct resp req(const char *method, const char *path, const char *ctype,
                       const char *body, size_t body_len,
                       const char *extra_hdr) {
  struct resp r;
  memset(&r, 0, sizeof r);
  tw_buf_init(&r.body);
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  struct curl_slist *h = NULL;
  char ct[160];
  if (ctype) {
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    h = curl_slist_append(h, ct);
  } else if (body) {
    h = curl_slist_append(h, "Content-Type:");
  }
  if (extra_hdr)
    h = curl_slist_append(h, extra_hdr);
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)body_len);
  }
  CURLcode cc = curl_easy_perform(curl);
  curl_slist_free_all(h);
  if (big_send_lost && (cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR)) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
    if (!r.status) { /* closed mid-upload before its answer was read */
      *big_send_lost = true;
      return r;
    }
    cc = CURLE_OK; /* the answer came, then the server closed */
  }
  assert_int_equal(cc, CURLE_OK);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.body.len && (strstr(r.ctype, "json")))
    r.json = json_loadb(r.body.data, r.body.len, 0, NULL);
  return r;
}

static struct resp post(const char *ctype, const char *body, const char *hdr) {
  return req("POST", "/v1/jobs", ctype, body, strlen(body), hdr);
}

static const char *jstr(json_t *j, const char *k) {
  return json_string_value(json_object_get(j, k));
}

static int64_t count_jobs(void) {
  int64_t c[TW_JOB_NSTATES], total = 0;
  assert_int_equal(tw_store_job_counts(store, c, NULL), TW_OK);
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    total += c[i];
  return total;
}

/* A problem answer: status, media type, type slug, field, detail fragment. */
static void expect_problem(struct resp *r, long status, const char *type,
                           const char *field, const char *detail) {
  if (r->status != status)
    fail_msg("status %ld, want %ld: %s", r->status, status, r->body.data);
  assert_string_equal(r->ctype, "application/problem+json");
  assert_non_null(r->json);
  char want[96];
  snprintf(want, sizeof want, "/problems/%s", type);
  assert_string_equal(jstr(r->json, "type"), want);
  assert_int_equal(json_integer_value(json_object_get(r->json, "status")),
                   status);
  assert_non_null(jstr(r->json, "title"));
  assert_string_equal(jstr(r->json, "request_id"), r->request_id);
  if (field)
    assert_string_equal(jstr(r->json, "field"), field);
  else
    assert_null(json_object_get(r->json, "field"));
  if (detail && !strstr(jstr(r->json, "detail"), detail))
    fail_msg("detail \"%s\" lacks \"%s\"", jstr(r->json, "detail"), detail);
}

/* the daemon's readiness hook, as the scheduler would answer it */
static bool sched_stuck;
static bool ready_hook(void *ctx, char *why, size_t whysz) {
  (void)ctx;
  if (sched_stuck)
    snprintf(why, whysz, "the scheduler has not completed a pass for 75 s");
  return !sched_stuck;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-api-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(dbpath, sizeof dbpath, "%s/api.db", dir);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = dbpath};
  if (tw_store_open(&so, &store, &err))
    return -1;
  struct tw_api_opts ao = {.listen = "127.0.0.1:0",
                           .store = store,
                           .max_body_bytes = 1 << 20,
                           .auth = {.open = true}, /* no tokens here */
                           .ready = ready_hook};
  if (tw_api_start(&ao, &api, &err))
    return -1;
  port = tw_api_port(api);
  curl_global_init(CURL_GLOBAL_ALL);
  curl = curl_easy_init();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  curl_easy_cleanup(curl);
  tw_api_stop(api);
  tw_store_close(store);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", dbpath, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static const char YAML_JOB[] = "name: train\n"
                               "tenant: ml\n"
                               "resources:\n"
                               "  accelerators: A100:8\n"
                               "  cpus: 8+\n"
                               "  use_spot: true\n"
                               "duration: 6h\n"
                               "max_price_per_hour: 12.5\n";

static void health_and_readiness(void **state) {
  (void)state;
  struct resp r = req("GET", "/healthz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  assert_string_equal(jstr(r.json, "status"), "ok");
  assert_int_equal(strlen(r.request_id), 16);
  resp_free(&r);
  r = req("GET", "/readyz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  assert_string_equal(jstr(r.json, "status"), "ready");
  resp_free(&r);
}

static void submit_yaml_then_get_and_events(void **state) {
  (void)state;
  struct resp r = post("application/yaml", YAML_JOB, NULL);
  assert_int_equal(r.status, 201);
  assert_string_equal(r.ctype, "application/json");
  const char *id = jstr(r.json, "id");
  assert_non_null(id);
  char loc[96];
  snprintf(loc, sizeof loc, "/v1/jobs/%s", id);
  assert_string_equal(r.location, loc);
  assert_string_equal(jstr(r.json, "state"), "pending");
  assert_string_equal(jstr(r.json, "tenant"), "ml");
  json_t *spec = json_object_get(r.json, "spec");
  json_t *res = json_object_get(spec, "resources");
  assert_string_equal(json_string_value(json_object_get(res, "market")),
                      "spot");
  assert_int_equal(json_integer_value(json_object_get(spec, "duration_s")),
                   21600);
  assert_int_equal(
      json_integer_value(json_object_get(spec, "max_price_uusd_per_hour")),
      12500000);
  assert_true(json_is_null(json_object_get(r.json, "placement")));

  struct resp g = req("GET", loc, NULL, NULL, 0, NULL);
  assert_int_equal(g.status, 200);
  assert_string_equal(jstr(g.json, "id"), id);
  assert_true(json_equal(json_object_get(g.json, "spec"), spec));
  resp_free(&g);

  char evp[128];
  snprintf(evp, sizeof evp, "/v1/jobs/%s/events", id);
  struct resp e = req("GET", evp, NULL, NULL, 0, NULL);
  assert_int_equal(e.status, 200);
  json_t *items = json_object_get(e.json, "items");
  assert_int_equal(json_array_size(items), 1);
  json_t *ev0 = json_array_get(items, 0);
  assert_true(json_is_null(json_object_get(ev0, "from")));
  assert_string_equal(jstr(ev0, "to"), "pending");
  assert_string_equal(jstr(ev0, "reason"), "submitted");
  resp_free(&e);
  resp_free(&r);
}

static void submit_json(void **state) {
  (void)state;
  struct resp r = post("application/json; charset=utf-8",
                       "{\"name\":\"cpu-batch\",\"resources\":{\"cpus\":4,"
                       "\"market\":\"on-demand\"}}",
                       NULL);
  assert_int_equal(r.status, 201);
  assert_string_equal(jstr(r.json, "name"), "cpu-batch");
  assert_string_equal(jstr(r.json, "tenant"), "default");
  resp_free(&r);
}

static void idempotency_key_replays_and_conflicts(void **state) {
  (void)state;
  int64_t before = count_jobs();
  struct resp a =
      post("application/yaml", YAML_JOB, "Idempotency-Key: ci-run-42");
  assert_int_equal(a.status, 201);
  struct resp b =
      post("application/yaml", YAML_JOB, "Idempotency-Key: ci-run-42");
  assert_int_equal(b.status, 200);
  assert_string_equal(b.replayed, "true");
  assert_string_equal(jstr(a.json, "id"), jstr(b.json, "id"));
  /* the same spec written as JSON is the same spec */
  struct resp c = post(
      "application/json",
      "{\"name\":\"train\",\"tenant\":\"ml\",\"resources\":{\"accelerators\":"
      "\"A100:8\",\"cpus\":\"8+\",\"use_spot\":true},\"duration\":\"6h\","
      "\"max_price_per_hour\":12.5}",
      "Idempotency-Key: ci-run-42");
  assert_int_equal(c.status, 200);
  assert_string_equal(jstr(a.json, "id"), jstr(c.json, "id"));
  struct resp d = post("application/yaml", "name: other\ntenant: ml\n",
                       "Idempotency-Key: ci-run-42");
  expect_problem(&d, 409, "conflict", "Idempotency-Key", "different job spec");
  struct resp e =
      post("application/yaml", "name: x\n", "Idempotency-Key: \x01");
  expect_problem(&e, 400, "invalid-field", "Idempotency-Key", "printable");
  assert_int_equal(count_jobs(), before + 1);
  resp_free(&a);
  resp_free(&b);
  resp_free(&c);
  resp_free(&d);
  resp_free(&e);
}

static void bad_requests_get_problems_and_store_nothing(void **state) {
  (void)state;
  int64_t before = count_jobs();
  struct resp r;

  r = post("application/json", "{\"name\": \"x\",", NULL);
  expect_problem(&r, 400, "malformed", NULL, "malformed JSON at line 1");
  resp_free(&r);
  r = post("application/yaml", "name: [x\n", NULL);
  expect_problem(&r, 400, "malformed", NULL, "malformed YAML at line");
  resp_free(&r);
  r = post("application/yaml", "name: x\nresources:\n  cpus: eight\n", NULL);
  expect_problem(&r, 400, "invalid-field", "resources.cpus", "resources.cpus:");
  resp_free(&r);
  r = post("application/yaml", "name: x\nresources:\n  acelerators: A100:1\n",
           NULL);
  expect_problem(&r, 400, "invalid-field", "resources.acelerators",
                 "accelerators");
  resp_free(&r);
  r = post("text/plain", "name: x\n", NULL);
  expect_problem(&r, 415, "unsupported-media-type", NULL, "text/plain");
  resp_free(&r);
  r = post(NULL, "name: x\n", NULL);
  expect_problem(&r, 415, "unsupported-media-type", NULL,
                 "Content-Type is required");
  resp_free(&r);
  r = post("application/json", "", NULL);
  expect_problem(&r, 400, "malformed", NULL, NULL);
  resp_free(&r);
  r = post("application/json", "[1,2]", NULL);
  assert_int_equal(r.status, 400);
  resp_free(&r);

  /* over the body limit, announced by Content-Length */
  size_t big = (1 << 20) + 10;
  char *body = tw_malloc(big + 1);
  memset(body, 'a', big);
  body[big] = '\0';
  /* A server that answers 413 before the body has arrived may close
   * while curl still sends, and curl then reports the send error instead
   * of the answer (timing: seen under ThreadSanitizer).  Each case is
   * tried until the answer is read, at most 5 times. */
  bool lost = false;
  big_send_lost = &lost;
  for (int t = 0; t < 5; t++) {
    lost = false;
    r = req("POST", "/v1/jobs", "application/json", body, big, NULL);
    if (!lost)
      break;
    resp_free(&r);
  }
  assert_false(lost);
  expect_problem(&r, 413, "too-large", NULL, "exceeds");
  resp_free(&r);
  /* and sent chunked, without a length: refused from the head, 411
   * (RFC 9112 section 6.3), whatever its size */
  for (int t = 0; t < 5; t++) {
    lost = false;
    r = req("POST", "/v1/jobs", "application/json", body, big,
            "Transfer-Encoding: chunked");
    if (!lost)
      break;
    resp_free(&r);
  }
  assert_false(lost);
  big_send_lost = NULL;
  expect_problem(&r, 411, "length-required", "Transfer-Encoding",
                 "Content-Length");
  resp_free(&r);
  free(body);

  assert_int_equal(count_jobs(), before);
}

static void unknown_ids_routes_and_methods(void **state) {
  (void)state;
  struct resp r = req("GET", "/v1/jobs/j-doesnotexist", NULL, NULL, 0, NULL);
  expect_problem(&r, 404, "not-found", NULL, "j-doesnotexist");
  resp_free(&r);
  r = req("GET", "/v1/jobs/j-doesnotexist/events", NULL, NULL, 0, NULL);
  expect_problem(&r, 404, "not-found", NULL, NULL);
  resp_free(&r);
  r = req("DELETE", "/v1/jobs/j-doesnotexist", NULL, NULL, 0, NULL);
  expect_problem(&r, 404, "not-found", NULL, NULL);
  resp_free(&r);
  r = req("GET", "/v2/nothing", NULL, NULL, 0, NULL);
  expect_problem(&r, 404, "not-found", NULL, "no route");
  resp_free(&r);
  r = req("PUT", "/v1/jobs", "application/json", "{}", 2, NULL);
  expect_problem(&r, 405, "method-not-allowed", NULL, NULL);
  assert_string_equal(r.allow, "POST, GET");
  resp_free(&r);
}

static void list_pages_with_cursor_and_filters(void **state) {
  (void)state;
  char ids[7][64];
  for (int i = 0; i < 7; i++) {
    char body[64];
    snprintf(body, sizeof body, "name: page-%d\ntenant: pager\n", i);
    struct resp r = post("application/yaml", body, NULL);
    assert_int_equal(r.status, 201);
    snprintf(ids[i], sizeof ids[i], "%s", jstr(r.json, "id"));
    resp_free(&r);
  }
  char path[256] = "/v1/jobs?tenant=pager&limit=3";
  int seen = 0, pages = 0;
  for (;;) {
    struct resp r = req("GET", path, NULL, NULL, 0, NULL);
    assert_int_equal(r.status, 200);
    json_t *items = json_object_get(r.json, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
      assert_string_equal(jstr(json_array_get(items, i), "id"), ids[6 - seen]);
      seen++;
    }
    pages++;
    json_t *next = json_object_get(r.json, "next_cursor");
    assert_non_null(next);
    if (json_is_null(next)) {
      resp_free(&r);
      break;
    }
    snprintf(path, sizeof path, "/v1/jobs?tenant=pager&limit=3&cursor=%s",
             json_string_value(next));
    resp_free(&r);
  }
  assert_int_equal(seen, 7);
  assert_int_equal(pages, 3);

  struct resp r = req("GET", "/v1/jobs?limit=0", NULL, NULL, 0, NULL);
  expect_problem(&r, 400, "invalid-field", "limit", NULL);
  resp_free(&r);
  r = req("GET", "/v1/jobs?limit=501", NULL, NULL, 0, NULL);
  expect_problem(&r, 400, "invalid-field", "limit", NULL);
  resp_free(&r);
  r = req("GET", "/v1/jobs?cursor=zzz", NULL, NULL, 0, NULL);
  expect_problem(&r, 400, "invalid-field", "cursor", NULL);
  resp_free(&r);
  r = req("GET", "/v1/jobs?state=done", NULL, NULL, 0, NULL);
  expect_problem(&r, 400, "invalid-field", "state", "unknown job state");
  resp_free(&r);
  r = req("GET", "/v1/jobs?state=succeeded&tenant=pager", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  assert_int_equal(json_array_size(json_object_get(r.json, "items")), 0);
  resp_free(&r);
}

static void cancel_then_cancel_again(void **state) {
  (void)state;
  struct resp r = post("application/yaml", "name: to-cancel\n", NULL);
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s", jstr(r.json, "id"));
  resp_free(&r);
  r = req("DELETE", path, NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  assert_string_equal(jstr(r.json, "state"), "cancelled");
  resp_free(&r);
  r = req("DELETE", path, NULL, NULL, 0, NULL);
  expect_problem(&r, 409, "conflict", NULL, "already cancelled");
  resp_free(&r);
  strcat(path, "/events");
  r = req("GET", path, NULL, NULL, 0, NULL);
  json_t *items = json_object_get(r.json, "items");
  assert_int_equal(json_array_size(items), 2);
  assert_string_equal(jstr(json_array_get(items, 1), "from"), "pending");
  assert_string_equal(jstr(json_array_get(items, 1), "to"), "cancelled");
  resp_free(&r);
  r = req("GET", "/v1/jobs?state=cancelled", NULL, NULL, 0, NULL);
  assert_true(json_array_size(json_object_get(r.json, "items")) >= 1);
  resp_free(&r);
}

static void metrics_in_prometheus_format(void **state) {
  (void)state;
  struct resp p = post("application/yaml", "name: metric-job\n", NULL);
  resp_free(&p);
  struct resp r = req("GET", "/metrics", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.ctype, "text/plain"));
  const char *b = r.body.data;
  assert_non_null(strstr(b, "# TYPE tradewind_http_requests_total counter"));
  assert_non_null(strstr(
      b, "tradewind_http_requests_total{route=\"jobs_create\",code=\"2xx\"}"));
  assert_non_null(strstr(b, "tradewind_http_request_duration_seconds_bucket{"
                            "route=\"jobs_create\",le=\"+Inf\"}"));
  assert_non_null(strstr(b, "tradewind_jobs{state=\"pending\"}"));
  assert_non_null(strstr(b, "tradewind_store_commits_total"));
  /* the pending gauge equals the store's count */
  int64_t c[TW_JOB_NSTATES];
  tw_store_job_counts(store, c, NULL);
  char want[96];
  snprintf(want, sizeof want, "tradewind_jobs{state=\"pending\"} %lld\n",
           (long long)c[0]);
  assert_non_null(strstr(b, want));
  resp_free(&r);
}

static void garbage_on_the_socket_does_not_hurt(void **state) {
  (void)state;
  static const char *const junk[] = {
      "\x00\x01\x02garbage\r\n\r\n",
      "GET /v1/jobs HTTP/9.9\r\n\r\n",
      "POST /v1/jobs HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: "
      "99999999999999999999\r\n\r\n",
      "GET /v1/jobs/%00%ff/events HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /v1/jobs?limit=%ZZ&state=%00 HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/json\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t len = i == 0 ? 15 : strlen(junk[i]); /* the first holds NULs */
    assert_true(write(fd, junk[i], len) == (ssize_t)len);
    shutdown(fd, SHUT_WR);
    char buf[4096];
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (read(fd, buf, sizeof buf) > 0)
      ;
    close(fd);
  }
  struct resp r = req("GET", "/healthz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  resp_free(&r);
}

static void a_stuck_scheduler_turns_readiness_off(void **state) {
  (void)state;
  sched_stuck = true;
  struct resp r = req("GET", "/readyz", NULL, NULL, 0, NULL);
  expect_problem(&r, 503, "not-ready", NULL, "scheduler has not completed");
  resp_free(&r);
  /* liveness is not readiness: the process still answers */
  r = req("GET", "/healthz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  resp_free(&r);
  sched_stuck = false;
  r = req("GET", "/readyz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  resp_free(&r);
}

static void draining_turns_readiness_off(void **state) {
  (void)state;
  /* keep-alive connection opened before the drain */
  struct resp r = req("GET", "/readyz", NULL, NULL, 0, NULL);
  assert_int_equal(r.status, 200);
  resp_free(&r);
  tw_api_drain(api);
  r = req("GET", "/readyz", NULL, NULL, 0, NULL);
  expect_problem(&r, 503, "draining", NULL, NULL);
  resp_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(health_and_readiness),
      cmocka_unit_test(submit_yaml_then_get_and_events),
      cmocka_unit_test(submit_json),
      cmocka_unit_test(idempotency_key_replays_and_conflicts),
      cmocka_unit_test(bad_requests_get_problems_and_store_nothing),
      cmocka_unit_test(unknown_ids_routes_and_methods),
      cmocka_unit_test(list_pages_with_cursor_and_filters),
      cmocka_unit_test(cancel_then_cancel_again),
      cmocka_unit_test(metrics_in_prometheus_format),
      cmocka_unit_test(garbage_on_the_socket_does_not_hurt),
      cmocka_unit_test(a_stuck_scheduler_turns_readiness_off),
      cmocka_unit_test(draining_turns_readiness_off), /* last: it drains */
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
