/* GET /v1/offers over HTTP against a real server and a published catalog
 * (the fake provider and a seed file): filters, sorting, paging, one offer
 * with its history, the source trace, staleness, problems naming the
 * parameter, /metrics, and 503 without a catalog. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "billing/catalog/catalog.h"
#include "cli/cli.h"
#include "broker/core/store.h"
#include "tests/fakes/fake_provider.h"
#include "providers/registry.h"
#include "tests/unit/pg_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], db[128], csv[128], base[64];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_catalog *cat;
static struct tw_api *api;

static const char SEED[] =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"
    "Price,SpotPrice,Region,AvailabilityZone,Arch\n"
    "p4de.24xlarge,A100-80GB,8,96,1152,,40.96,12.5,us-east-1,use1-az4,x86_64\n"
    "p4de.24xlarge,A100-80GB,8,96,1152,,40.96,14.25,us-east-1,use1-az6,x86_64\n"
    "p4de.24xlarge,A100-80GB,8,96,1152,,44.0,11.0,eu-central-1,euc1-az2,x86_"
    "64\n"
    "p4d.24xlarge,A100,8,96,1152,,32.77,9.8,us-west-2,usw2-az1,x86_64\n"
    "m7g.large,,,2,8,,0.0816,0.03,eu-west-1,euw1-az1,\n";

struct resp {
  long status;
  struct tw_buf body;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct resp *)ud)->body, p, sz * n);
  return sz * n;
}

static json_t *get(const char *path, long *status) {
  char url[1024];
  snprintf(url, sizeof url, "%s%s", base, path);
  struct resp r = {0};
  tw_buf_init(&r.body);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(c);
  json_t *j = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
  if (!j && *status != 200)
    j = json_string(r.body.data ? r.body.data : "");
  tw_buf_release(&r.body);
  return j;
}

static char *get_text(const char *path) {
  char url[1024];
  snprintf(url, sizeof url, "%s%s", base, path);
  struct resp r = {0};
  tw_buf_init(&r.body);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  curl_easy_cleanup(c);
  return r.body.data ? tw_buf_detach(&r.body) : strdup("");
}

static int setup(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  snprintf(dir, sizeof dir, "/tmp/tw-catapi-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(db, sizeof db, "%s/s.db", dir);
  snprintf(csv, sizeof csv, "%s/seed.csv", dir);
  FILE *f = fopen(csv, "wb");
  fputs(SEED, f);
  fclose(f);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = db, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "aws-main", NULL, &clk, &prov,
                          &err))
    return -1;
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "aws-main");
  snprintf(o.region, sizeof o.region, "lab");
  snprintf(o.zone, sizeof o.zone, "lab-a");
  snprintf(o.instance_type, sizeof o.instance_type, "gpu8");
  snprintf(o.accel_name, sizeof o.accel_name, "a100");
  o.accel_count = 8;
  o.accel_memory_mib = 81920;
  o.vcpus = 64;
  o.memory_mib = 512 * 1024;
  o.market = TW_MARKET_SPOT;
  o.price_uusd_per_hour = 7000000;
  tw_offer_make_id(&o);
  tw_fake_add_offer(tw_fake_of(prov), &o);
  struct tw_catalog_file files[] = {{.name = "skypilot-aws",
                                     .path = csv,
                                     .provider = "aws",
                                     .account = "aws-main"}};
  struct tw_catalog_opts co = {.store = store,
                               .clock = &clk,
                               .adapters = tw_adapters_test,
                               .providers = &prov,
                               .n_providers = 1,
                               .files = files,
                               .n_files = 1,
                               .refresh_ms = 300000};
  if (tw_catalog_new(&co, &cat, &err))
    return -1;
  tw_catalog_refresh_due(cat, tw_clock_now_ms(&clk));
  struct tw_api_opts ao = {.listen = "127.0.0.1:0",
                           .store = store,
                           .clock = &clk,
                           .auth = {.open = true},
                           .catalog = cat};
  if (tw_api_start(&ao, &api, &err))
    return -1;
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(api));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_catalog_free(cat);
  tw_provider_free(prov);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  char p[200];
  const char *files[] = {"s.db", "s.db-wal", "s.db-shm", "seed.csv"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  curl_global_cleanup();
  return 0;
}

static const char *jstr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static void gpu_filter_spot_cheapest_first(void **state) {
  (void)state;
  long st;
  json_t *j = get(
      "/v1/offers?accelerator=A100-80GB:8&market=spot&provider=aws&limit=10",
      &st);
  assert_int_equal(st, 200);
  json_t *items = json_object_get(j, "items");
  assert_int_equal(json_array_size(items), 3);
  json_int_t last = 0;
  for (size_t i = 0; i < json_array_size(items); i++) {
    json_t *o = json_array_get(items, i);
    json_int_t p =
        json_integer_value(json_object_get(o, "price_uusd_per_hour"));
    assert_true(p >= last);
    last = p;
    json_t *acc = json_object_get(o, "accelerator");
    assert_string_equal(jstr(acc, "name"), "A100-80GB");
    assert_string_equal(jstr(o, "market"), "spot");
  }
  /* the cheapest: eu-central-1 at 11.0, with its on-demand price beside */
  json_t *o = json_array_get(items, 0);
  assert_string_equal(jstr(o, "id"),
                      "aws-main:eu-central-1:euc1-az2:p4de.24xlarge:spot");
  assert_int_equal(
      json_integer_value(json_object_get(o, "price_uusd_per_hour")), 11000000);
  assert_int_equal(
      json_integer_value(json_object_get(o, "on_demand_price_uusd_per_hour")),
      44000000);
  assert_string_equal(jstr(o, "jurisdiction"), "EU");
  assert_string_equal(jstr(o, "zone_id"), "euc1-az2");
  json_t *src = json_object_get(o, "source");
  assert_string_equal(jstr(src, "name"), "skypilot-aws");
  assert_string_equal(jstr(src, "file"), "seed.csv");
  assert_int_equal(json_integer_value(json_object_get(src, "row")), 4);
  assert_int_equal(json_integer_value(json_object_get(src, "price_micro")),
                   11000000);
  assert_string_equal(jstr(src, "currency"), "USD");
  assert_true(json_integer_value(json_object_get(src, "version")) > 0);
  /* the adapter's own A100 (80 GB per device) is an A100-80GB too */
  json_decref(j);
  j = get("/v1/offers?accelerator=A100&provider=fake&limit=5", &st);
  assert_int_equal(st, 200);
  items = json_object_get(j, "items");
  assert_int_equal(json_array_size(items), 1);
  assert_string_equal(
      jstr(json_object_get(json_array_get(items, 0), "accelerator"), "name"),
      "A100-80GB");
  json_decref(j);
}

static void paging_visits_every_offer_once(void **state) {
  (void)state;
  char path[256] = "/v1/offers?limit=2&sort=-price";
  size_t seen = 0;
  json_int_t last = INT64_MAX;
  for (int page = 0; page < 20; page++) {
    long st;
    json_t *j = get(path, &st);
    assert_int_equal(st, 200);
    json_t *items = json_object_get(j, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_int_t p = json_integer_value(
          json_object_get(json_array_get(items, i), "price_uusd_per_hour"));
      assert_true(p <= last);
      last = p;
      seen++;
    }
    const char *next = jstr(j, "next_cursor");
    if (!next) {
      json_decref(j);
      break;
    }
    snprintf(path, sizeof path, "/v1/offers?limit=2&sort=-price&cursor=%s",
             next);
    json_decref(j);
  }
  assert_int_equal(seen, 11); /* 10 seed offers and the adapter's one */
}

static void one_offer_by_id_with_history_and_sources(void **state) {
  (void)state;
  long st;
  json_t *j =
      get("/v1/offers?id=aws-main:us-east-1:use1-az4:p4de.24xlarge:spot", &st);
  assert_int_equal(st, 200);
  json_t *o = json_array_get(json_object_get(j, "items"), 0);
  assert_int_equal(
      json_integer_value(json_object_get(o, "price_uusd_per_hour")), 12500000);
  json_t *hist = json_object_get(o, "history");
  assert_int_equal(json_array_size(hist), 1);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(hist, 0),
                                                      "price_uusd_per_hour")),
                   12500000);
  json_t *catj = json_object_get(j, "catalog");
  assert_true(json_integer_value(json_object_get(catj, "offers")) == 11);
  json_t *srcs = json_object_get(catj, "sources");
  assert_int_equal(json_array_size(srcs), 2);
  bool seen_file = false;
  for (size_t i = 0; i < 2; i++) {
    json_t *s = json_array_get(srcs, i);
    assert_false(json_is_true(json_object_get(s, "stale")));
    if (!strcmp(jstr(s, "name"), "skypilot-aws")) {
      seen_file = true;
      assert_int_equal(json_integer_value(json_object_get(s, "rows")), 5);
      assert_int_equal(json_integer_value(json_object_get(s, "normalized")), 5);
      assert_int_equal(json_integer_value(json_object_get(
                           json_object_get(s, "notes"), "zone_name_unknown")),
                       5);
    }
  }
  assert_true(seen_file);
  json_decref(j);
  j = get("/v1/offers?id=aws-main:nowhere:x:y:spot", &st);
  assert_int_equal(st, 404);
  json_decref(j);
}

static void bad_parameters_are_named(void **state) {
  (void)state;
  const struct {
    const char *q, *field;
  } bad[] = {{"accelerator=A100:x", "accelerator"},
             {"cpus=0", "cpus"},
             {"arch=sparc", "arch"},
             {"market=cheap", "market"},
             {"sort=best", "sort"},
             {"limit=5000", "limit"},
             {"cursor=c1.p.1.zz", "cursor"},
             {"max_price_uusd=-1", "max_price_uusd"},
             {"memory_gib=lots", "memory_gib"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "/v1/offers?%s", bad[i].q);
    long st;
    json_t *j = get(path, &st);
    assert_int_equal(st, 400);
    if (!jstr(j, "field") || strcmp(jstr(j, "field"), bad[i].field))
      fail_msg("%s: field %s", bad[i].q,
               jstr(j, "field") ? jstr(j, "field") : "-");
    json_decref(j);
  }
  /* filters that match nothing are not errors */
  long st;
  json_t *j = get("/v1/offers?jurisdiction=CN&region=aws:eu-*", &st);
  assert_int_equal(st, 200);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 0);
  json_decref(j);
}

static void staleness_shows_in_metrics_and_the_answer(void **state) {
  (void)state;
  char *m = get_text("/metrics");
  assert_non_null(strstr(m, "tradewind_catalog_offers 11"));
  assert_non_null(
      strstr(m, "tradewind_catalog_source_stale{source=\"skypilot-aws\"} 0"));
  free(m);
  tw_clock_advance(&clk, 3600 * 1000);
  m = get_text("/metrics");
  assert_non_null(
      strstr(m, "tradewind_catalog_source_stale{source=\"skypilot-aws\"} 1"));
  assert_non_null(strstr(
      m, "tradewind_catalog_source_age_seconds{source=\"aws-main\"} 3600.000"));
  free(m);
  long st;
  json_t *j = get("/v1/offers?limit=1", &st);
  assert_true(
      json_is_true(json_object_get(json_object_get(j, "catalog"), "stale")));
  json_decref(j);
  /* a server given no catalog answers 503 */
  struct tw_api_opts bare = {.listen = "127.0.0.1:0",
                             .store = store,
                             .clock = &clk,
                             .auth = {.open = true}};
  struct tw_api *alone = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_api_start(&bare, &alone, &err), TW_OK);
  char saved[sizeof base];
  memcpy(saved, base, sizeof base);
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(alone));
  j = get("/v1/offers", &st);
  assert_int_equal(st, 503);
  json_decref(j);
  memcpy(base, saved, sizeof base);
  tw_api_stop(alone);
}

/* Runs `tradewind ARGS...` in-process against the server. */
static int cli(char *out, size_t outsz, char *errs, size_t errsz, ...) {
  char *argv[32] = {"tradewind", "--url", base};
  int argc = 3;
  va_list ap;
  va_start(ap, errsz);
  for (char *a; argc < 31 && (a = va_arg(ap, char *));)
    argv[argc++] = a;
  va_end(ap);
  FILE *o = fmemopen(out, outsz, "w"), *e = fmemopen(errs, errsz, "w");
  struct tw_cli_io io = {.out = o, .err = e, .in = stdin, .clock = &clk};
  int code = tw_cli_run(argc, argv, &io);
  fclose(o);
  fclose(e);
  return code;
}

static void the_cli_prints_a_table_or_json(void **state) {
  (void)state;
  static char out[65536], errs[4096];
  memset(out, 0, sizeof out);
  int code =
      cli(out, sizeof out, errs, sizeof errs, "offers", "--gpu", "A100-80GB:8",
          "--spot", "--provider", "aws", "--limit", "10", (char *)NULL);
  assert_int_equal(code, 0);
  assert_non_null(strstr(out, "PROVIDER"));
  assert_non_null(strstr(out, "$/H ON-DEMAND"));
  /* cheapest first: eu-central-1 at $11, beside its $44 on demand */
  char *first = strstr(out, "\n") + 1;
  assert_non_null(strstr(first, "eu-central-1"));
  assert_true(strstr(out, "eu-central-1") < strstr(out, "us-east-1"));
  assert_non_null(strstr(first, "$44.00"));
  assert_non_null(strstr(first, "$11.00"));
  assert_non_null(strstr(first, "A100-80GB x8"));
  memset(out, 0, sizeof out);
  code =
      cli(out, sizeof out, errs, sizeof errs, "offers", "--gpu", "A100-80GB:8",
          "--spot", "-o", "json", "--limit", "2", (char *)NULL);
  assert_int_equal(code, 0);
  json_t *j = json_loads(out, 0, NULL);
  assert_non_null(j);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
  assert_non_null(json_object_get(j, "catalog"));
  json_decref(j);
  /* --all follows the cursors */
  memset(out, 0, sizeof out);
  code = cli(out, sizeof out, errs, sizeof errs, "offers", "--all", "--limit",
             "3", "-o", "json", (char *)NULL);
  assert_int_equal(code, 0);
  j = json_loads(out, 0, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 11);
  json_decref(j);
  /* bad flags are usage errors, refused parameters rejections */
  assert_int_equal(cli(out, sizeof out, errs, sizeof errs, "offers", "--gpu",
                       ":8", (char *)NULL),
                   2);
  assert_int_equal(cli(out, sizeof out, errs, sizeof errs, "offers",
                       "--max-price", "cheap", (char *)NULL),
                   2);
  memset(errs, 0, sizeof errs);
  assert_int_equal(cli(out, sizeof out, errs, sizeof errs, "offers", "--sort",
                       "best", (char *)NULL),
                   5);
  assert_non_null(strstr(errs, "sort"));
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_cli_prints_a_table_or_json),
      cmocka_unit_test(gpu_filter_spot_cheapest_first),
      cmocka_unit_test(paging_visits_every_offer_once),
      cmocka_unit_test(one_offer_by_id_with_history_and_sources),
      cmocka_unit_test(bad_parameters_are_named),
      cmocka_unit_test(staleness_shows_in_metrics_and_the_answer),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
