/* GET /v1/jobs/{id}/logs: the output of a job's latest attempt, read
 * through the provider that ran it (the in-process fake), in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "tests/fakes/fake_provider.h"

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_sched *sched;
static struct tw_api *api;

struct resp {
  long status;
  struct tw_buf body;
  char next[32], complete[16], ctype[64];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static void grab(const char *line, size_t len, const char *name, char *dst,
                 size_t dsz) {
  size_t hl = strlen(name);
  if (len > hl && !strncasecmp(line, name, hl)) {
    const char *v = line + hl;
    size_t vl = len - hl;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
      vl--;
    while (vl && *v == ' ')
      v++, vl--;
    snprintf(dst, dsz, "%.*s", (int)vl, v);
  }
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  grab(p, sz * n, "tradewind-next-offset:", r->next, sizeof r->next);
  grab(p, sz * n, "tradewind-output-complete:", r->complete,
       sizeof r->complete);
  grab(p, sz * n, "content-type:", r->ctype, sizeof r->ctype);
  return sz * n;
}

static struct resp get(const char *fmt, ...) {
  char p[256], url[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p, sizeof p, fmt, ap);
  va_end(ap);
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", tw_api_port(api), p);
  struct resp r;
  memset(&r, 0, sizeof r);
  tw_buf_init(&r.body);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(c);
  return r;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-logs-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/l.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (tw_store_open(&so, &store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "lab", NULL, &clk, &prov, &err))
    return -1;
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "cluster");
  snprintf(o.zone, sizeof o.zone, "batch");
  snprintf(o.instance_type, sizeof o.instance_type, "node");
  o.vcpus = 8;
  o.market = TW_MARKET_ON_DEMAND;
  o.price_uusd_per_hour = 10000;
  tw_offer_make_id(&o);
  tw_fake_add_offer(tw_fake_of(prov), &o);
  struct tw_sched_opts sopt = {
      .store = store, .clock = &clk, .providers = &prov, .n_providers = 1};
  struct tw_api_opts aopt = {.listen = "127.0.0.1:0",
                             .store = store,
                             .clock = &clk,
                             .providers = &prov,
                             .n_providers = 1,
                             .auth = {.open = true}}; /* no tokens here */
  curl_global_init(CURL_GLOBAL_ALL);
  return tw_sched_new(&sopt, &sched, &err) || tw_api_start(&aopt, &api, &err)
             ? -1
             : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_sched_free(sched);
  tw_provider_free(prov);
  tw_store_close(store);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static void output_is_read_in_pieces_until_complete(void **state) {
  (void)state;
  const char *y = "name: hello\nrun: echo hello\n";
  struct tw_job_spec spec;
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_job_new req = {.name = "hello",
                           .tenant = "default",
                           .project = "default",
                           .spec_json = b.data};
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_create(store, &req, &j, NULL, NULL), TW_OK);
  tw_buf_release(&b);
  tw_spec_release(&spec);

  /* before any attempt: empty, more to come */
  struct resp r = get("/v1/jobs/%s/logs", j.id);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body.len, 0);
  assert_string_equal(r.next, "0");
  assert_string_equal(r.complete, "false");
  tw_buf_release(&r.body);

  tw_sched_tick(sched);
  assert_int_equal(tw_fake_output(tw_fake_of(prov), "lab-1", "hello\n", false),
                   TW_OK);
  r = get("/v1/jobs/%s/logs", j.id);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.ctype, "text/plain"));
  assert_string_equal(r.body.data, "hello\n");
  assert_string_equal(r.next, "6");
  assert_string_equal(r.complete, "false");
  tw_buf_release(&r.body);

  assert_int_equal(tw_fake_output(tw_fake_of(prov), "lab-1", "world\n", true),
                   TW_OK);
  r = get("/v1/jobs/%s/logs?offset=6&limit=3", j.id);
  assert_string_equal(r.body.data, "wor");
  assert_string_equal(r.next, "9");
  assert_string_equal(r.complete, "false");
  tw_buf_release(&r.body);
  r = get("/v1/jobs/%s/logs?offset=9", j.id);
  assert_string_equal(r.body.data, "ld\n");
  assert_string_equal(r.next, "12");
  assert_string_equal(r.complete, "true");
  tw_buf_release(&r.body);

  r = get("/v1/jobs/%s/logs?offset=-1", j.id);
  assert_int_equal(r.status, 400);
  tw_buf_release(&r.body);
  r = get("/v1/jobs/j-none/logs");
  assert_int_equal(r.status, 404);
  tw_buf_release(&r.body);
  tw_job_rec_release(&j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(output_is_read_in_pieces_until_complete,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
