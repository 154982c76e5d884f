/* The API over a store whose disk fills up: the server and the store
 * in-process on port 0, a real HTTP client (libcurl).  The database is
 * capped at its size (tw_store_test_cap_pages: sqlite's max_page_count,
 * a real SQLITE_FULL from the pager); submissions go on until one fails.
 * Checks the failing submission's 507 problem body, /readyz 503 with the
 * reason and Retry-After while writes fail, every job acknowledged before
 * still there, and both back to normal once space returns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/log.h"
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
  char retry_after[32];
  json_t *json;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static void hdr(char *dst, size_t dsz, const char *p, size_t len,
                const char *name) {
  size_t hl = strlen(name);
  if (len <= hl || strncasecmp(p, name, hl))
    return;
  p += hl;
  len -= hl;
  while (len && (*p == ' '))
    p++, len--;
  while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'))
    len--;
  snprintf(dst, dsz, "%.*s", (int)len, p);
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  hdr(r->ctype, sizeof r->ctype, p, sz * n, "content-type:");
  hdr(r->retry_after, sizeof r->retry_after, p, sz * n, "retry-after:");
  return sz * n;
}

static struct resp req(const char *method, const char *path, const char *body) {
  struct resp r;
  memset(&r, 0, sizeof r);
  tw_buf_init(&r.body);
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  struct curl_slist *h = NULL;
  if (body) {
    h = curl_slist_append(h, "Content-Type: application/yaml");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
  }
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
  assert_int_equal(curl_easy_perform(curl), CURLE_OK);
  curl_slist_free_all(h);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.body.len && strstr(r.ctype, "json"))
    r.json = json_loadb(r.body.data, r.body.len, 0, NULL);
  return r;
}

static void resp_free(struct resp *r) {
  tw_buf_release(&r->body);
  json_decref(r->json);
}

static const char *jstr(json_t *j, const char *k) {
  const char *s = json_string_value(json_object_get(j, k));
  return s ? s : "";
}

/* A submission of about 1 KB (the command pads it), so pages fill fast. */
static struct resp submit(int i) {
  char body[1400];
  snprintf(body, sizeof body,
           "name: job-%d\n"
           "tenant: ml\n"
           "resources:\n"
           "  cpus: 2\n"
           "run: echo %01000d\n",
           i, i);
  return req("POST", "/v1/jobs", body);
}

static int setup(void **state) {
  (void)state;
  tw_log_set_level(TW_LOG_ERROR);
  snprintf(dir, sizeof dir, "/tmp/tw-apifull-XXXXXX");
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
                           .auth = {.open = true}};
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
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    char p[160];
    snprintf(p, sizeof p, "%s%s", dbpath, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

/* The value of a /metrics line that starts with name (name includes the
 * labels), or -1 when there is none. */
static double metric(const char *name) {
  struct resp r = req("GET", "/metrics", NULL);
  assert_int_equal(r.status, 200);
  double v = -1;
  size_t n = strlen(name);
  for (const char *p = r.body.data; p && *p;) {
    if (!strncmp(p, name, n) && p[n] == ' ') {
      v = strtod(p + n + 1, NULL);
      break;
    }
    p = strchr(p, '\n');
    p = p ? p + 1 : NULL;
  }
  resp_free(&r);
  return v;
}

/* /readyz until it answers want, for up to 5 s (it probes a store that is
 * not ready at most once a second). */
static long readyz_until(long want) {
  long status = 0;
  for (int k = 0; k < 50 && status != want; k++) {
    if (k)
      usleep(100 * 1000);
    struct resp r = req("GET", "/readyz", NULL);
    status = r.status;
    resp_free(&r);
  }
  return status;
}

static void full_disk_answers_507_and_readyz_503(void **state) {
  (void)state;
  static char ids[4096][TW_JOB_ID_LEN + 1];
  int acked = 0, i = 0;
  /* Nothing committed since the store opened: the metrics say starting;
   * /readyz probes with a write of its own and is ready once it commits. */
  assert_true(metric("tradewind_store_state{state=\"starting\"}") == 1);
  assert_true(metric("tradewind_store_last_commit_timestamp_seconds") == 0);
  struct resp r0 = req("GET", "/readyz", NULL);
  assert_int_equal(r0.status, 200);
  resp_free(&r0);
  assert_true(metric("tradewind_store_state{state=\"ok\"}") == 1);
  assert_true(metric("tradewind_store_state{state=\"starting\"}") == 0);
  assert_true(metric("tradewind_store_last_commit_timestamp_seconds") > 1.7e9);
  for (; i < 10; i++) {
    struct resp r = submit(i);
    assert_int_equal(r.status, 201);
    snprintf(ids[acked++], sizeof ids[0], "%s", jstr(r.json, "id"));
    resp_free(&r);
  }
  struct resp r = req("GET", "/readyz", NULL);
  assert_int_equal(r.status, 200);
  resp_free(&r);

  struct tw_err err = {0};
  assert_int_equal(tw_store_test_cap_pages(store, true, &err), TW_OK);
  long status = 201;
  for (; i < 4000 && status == 201; i++) {
    r = submit(i);
    status = r.status;
    if (status == 201)
      snprintf(ids[acked++], sizeof ids[0], "%s", jstr(r.json, "id"));
    else
      break;
    resp_free(&r);
  }
  /* The submission that found the disk full: 507, named. */
  if (r.status != 507)
    fail_msg("status %ld, want 507: %s", r.status, r.body.data);
  assert_string_equal(r.ctype, "application/problem+json");
  assert_string_equal(jstr(r.json, "type"), "/problems/insufficient-storage");
  assert_string_equal(jstr(r.json, "title"), "Insufficient Storage");
  assert_int_equal(json_integer_value(json_object_get(r.json, "status")), 507);
  assert_non_null(strstr(jstr(r.json, "detail"), "the store's disk is full"));
  resp_free(&r);

  /* Not ready while writes fail, and says why. */
  r = req("GET", "/readyz", NULL);
  assert_int_equal(r.status, 503);
  assert_string_equal(r.ctype, "application/problem+json");
  assert_string_equal(jstr(r.json, "type"), "/problems/store-unavailable");
  assert_non_null(strstr(jstr(r.json, "detail"), "the store's disk is full"));
  assert_true(atoi(r.retry_after) > 0);
  resp_free(&r);
  r = req("GET", "/healthz", NULL); /* alive all the same */
  assert_int_equal(r.status, 200);
  resp_free(&r);
  assert_true(metric("tradewind_store_state{state=\"full\"}") == 1);
  assert_true(metric("tradewind_store_consecutive_failures") >= 1);
  /* its probes find the disk full as well: still not ready a while on */
  sleep(1);
  assert_int_equal(readyz_until(200), 503);
  assert_true(metric("tradewind_store_consecutive_failures") >= 2);

  /* Every acknowledged job is still there. */
  for (int k = 0; k < acked; k++) {
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s", ids[k]);
    r = req("GET", path, NULL);
    assert_int_equal(r.status, 200);
    resp_free(&r);
  }

  /* Space returns: with no submission, the probe of /readyz commits and
   * the broker is ready again; then submissions succeed. */
  assert_int_equal(tw_store_test_cap_pages(store, false, &err), TW_OK);
  assert_int_equal(readyz_until(200), 200);
  assert_true(metric("tradewind_store_state{state=\"ok\"}") == 1);
  assert_true(metric("tradewind_store_consecutive_failures") == 0);
  r = submit(i++);
  assert_int_equal(r.status, 201);
  resp_free(&r);
  r = req("GET", "/readyz", NULL);
  assert_int_equal(r.status, 200);
  assert_string_equal(jstr(r.json, "status"), "ready");
  resp_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(full_disk_answers_507_and_readyz_503),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
