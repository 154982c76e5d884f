/* The catalog object over the in-process fake provider, files and the
 * store, on a fake clock: refresh per source, a failed refresh keeping
 * the previous table, readers keeping their snapshot, staleness, versions
 * and price history in the store, reloading at start, precedence, the
 * metrics, and the `catalog:` config section. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/catalog/catalog.h"
#include "broker/core/config.h"
#include "broker/core/store.h"
#include "tests/fakes/fake_provider.h"
#include "providers/registry.h"
#include "tests/unit/pg_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], db[128], csv[128], cfgfile[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_fake *fake;

static void add_offer(const char *zone, const char *type, enum tw_market m,
                      int64_t price, const char *accel, int accels) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = 32;
  o.memory_mib = 131072;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.market = m;
  o.price_uusd_per_hour = price;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake, &o);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char SEED_V1[] =
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,Price,"
    "SpotPrice,Region,AvailabilityZone\n"
    "gpu.spot,32,128,A100-80GB,8,9.5,1.9,r1,r1a\n" /* under the adapter */
    "p5.48xlarge,192,2048,H100,8,68.8,23.1449,us-east-1,us-east-1a\n"
    "m6i.large,2,8,,,0.096,0.04,eu-central-1,eu-central-1b\n";
static const char SEED_V2[] =
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,Price,"
    "SpotPrice,Region,AvailabilityZone\n"
    "gpu.spot,32,128,A100-80GB,8,9.5,1.9,r1,r1a\n"
    "p5.48xlarge,192,2048,H100,8,68.8,19.5,us-east-1,us-east-1a\n"
    "m6i.large,2,8,,,0.096,0.04,eu-central-1,eu-central-1b\n";

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-catalog-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(db, sizeof db, "%s/s.db", dir);
  snprintf(csv, sizeof csv, "%s/seed.csv", dir);
  snprintf(cfgfile, sizeof cfgfile, "%s/c.yaml", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = db, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err))
    return -1;
  if (tw_provider_new_ops(&tw_provider_fake, "fake-a", NULL, &clk, &prov, &err))
    return -1;
  fake = tw_fake_of(prov);
  add_offer("r1a", "gpu.spot", TW_MARKET_SPOT, 2000000, "A100-80GB", 8);
  add_offer("r1b", "gpu.spot", TW_MARKET_SPOT, 2500000, "A100-80GB", 8);
  add_offer("r1a", "cpu.small", TW_MARKET_ON_DEMAND, 100000, NULL, 0);
  FILE *f = fopen(csv, "wb");
  fputs(SEED_V1, f);
  fclose(f);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_provider_free(prov);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  char p[200];
  const char *files[] = {"s.db",   "s.db-wal", "s.db-shm",     "seed.csv",
                         "c.yaml", "other.db", "other.db-wal", "other.db-shm"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

static struct tw_catalog *make(struct tw_store *st) {
  struct tw_catalog_file files[] = {{.name = "seed",
                                     .path = csv,
                                     .provider = "fake",
                                     .account = "fake-a",
                                     .mode = TW_CAT_SEED,
                                     .refresh_ms = 60000}};
  struct tw_catalog_opts o = {.store = st,
                              .clock = &clk,
                              .adapters = tw_adapters_test,
                              .providers = &prov,
                              .n_providers = 1,
                              .files = files,
                              .n_files = 1,
                              .refresh_ms = 300000};
  struct tw_catalog *c = NULL;
  struct tw_err err = {0};
  if (tw_catalog_new(&o, &c, &err))
    fail_msg("%s", err.msg);
  return c;
}

static const struct tw_catalog_status *status_of(struct tw_catalog_status *st,
                                                 size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(st[i].info.name, name))
      return &st[i];
  fail_msg("no source %s", name);
  return NULL;
}

static void refresh_publishes_a_merged_snapshot(void **state) {
  (void)state;
  struct tw_catalog *c = make(store);
  struct tw_cat_snap *s0 = tw_catalog_acquire(c);
  assert_int_equal(tw_cat_snap_count(s0), 0);
  /* both sources are due at once; the adapter beats the seed for the same
   * offer, the seed adds what the adapter does not list */
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 2);
  struct tw_cat_snap *s1 = tw_catalog_acquire(c);
  assert_true(tw_cat_snap_version(s1) > tw_cat_snap_version(s0));
  assert_int_equal(tw_cat_snap_count(s0), 0); /* a reader's snapshot stays */
  size_t i;
  struct tw_cat_view v;
  assert_true(tw_cat_snap_find(s1, "fake-a:r1:r1a:gpu.spot:spot", &i));
  tw_cat_snap_view(s1, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 2000000);
  assert_string_equal(v.source->name, "fake-a");
  assert_true(tw_cat_snap_find(s1, "fake-a:r1:r1a:gpu.spot:on-demand", &i));
  tw_cat_snap_view(s1, i, &v);
  assert_string_equal(v.source->name, "seed");
  assert_true(
      tw_cat_snap_find(s1, "fake-a:us-east-1:us-east-1a:p5.48xlarge:spot", &i));
  tw_cat_snap_view(s1, i, &v);
  assert_string_equal(v.accel, "H100-80GB");
  /* the region table knows us-east-1 for aws, not for this provider */
  assert_string_equal(v.jurisdiction, "");
  /* 3 adapter offers + 6 seed offers, one of which the adapter hides */
  assert_int_equal(tw_cat_snap_count(s1), 8);

  /* nothing due until an interval passes */
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk) + 1000), 0);
  tw_clock_advance(&clk, 61000);
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 1);
  struct tw_catalog_status *st;
  size_t n;
  tw_catalog_status(c, &st, &n);
  assert_int_equal(n, 2);
  const struct tw_catalog_status *seed = status_of(st, n, "seed");
  assert_int_equal(seed->unchanged, 1); /* same file: not ingested again */
  assert_int_equal(seed->refreshes, 2);
  assert_int_equal(seed->info.offers, 5);
  assert_int_equal(seed->info.superseded, 1);
  assert_string_equal(seed->info.kind, "file");
  assert_true(seed->info.version > 0);
  assert_int_equal(seed->info.report.rows, 3);
  const struct tw_catalog_status *ad = status_of(st, n, "fake-a");
  assert_int_equal(ad->age_ms, 61000);
  assert_false(ad->stale);
  free(st);
  tw_cat_snap_release(s0);
  tw_cat_snap_release(s1);
  tw_catalog_free(c);
}

static void a_failed_refresh_keeps_the_previous_table(void **state) {
  (void)state;
  struct tw_catalog *c = make(NULL);
  tw_catalog_refresh_due(c, tw_clock_now_ms(&clk));
  struct tw_cat_snap *before = tw_catalog_acquire(c);
  size_t n_before = tw_cat_snap_count(before);
  tw_fake_fail(fake, TW_POP_LIST_OFFERS, TW_E_RETRYABLE, "RequestLimitExceeded",
               -1);
  struct tw_err err = {0};
  assert_int_equal(tw_catalog_refresh(c, "fake-a", &err), TW_E_RETRYABLE);
  struct tw_cat_snap *after = tw_catalog_acquire(c);
  assert_int_equal(tw_cat_snap_count(after), n_before);
  /* a source that failed is due again at every call, as the scheduler
   * retried a failing provider at every pass */
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 0);
  tw_clock_advance(&clk, 700000);
  struct tw_catalog_status *st;
  size_t n;
  tw_catalog_status(c, &st, &n);
  const struct tw_catalog_status *ad = status_of(st, n, "fake-a");
  assert_int_equal(ad->failures, 1);
  assert_true(ad->last_error[0]);
  assert_true(ad->stale); /* 700 s > twice 300 s */
  free(st);

  struct tw_buf m;
  tw_buf_init(&m);
  tw_catalog_metrics(c, &m);
  assert_non_null(
      strstr(m.data, "tradewind_catalog_source_stale{source=\"fake-a\"} 1"));
  assert_non_null(strstr(
      m.data, "tradewind_catalog_refresh_failures_total{source=\"fake-a\"} 1"));
  assert_non_null(strstr(
      m.data, "tradewind_catalog_source_age_seconds{source=\"seed\"} 700.000"));
  assert_non_null(strstr(m.data, "tradewind_catalog_rows_total{source=\"seed\","
                                 "outcome=\"normalized\"} 3"));
  assert_non_null(strstr(m.data, "tradewind_catalog_offers 8"));
  tw_buf_release(&m);
  tw_catalog_metrics(NULL, &m); /* no catalog: nothing */
  assert_int_equal(m.len, 0);
  tw_buf_release(&m);

  tw_fake_clear_faults(fake);
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 2);
  tw_cat_snap_release(before);
  tw_cat_snap_release(after);
  assert_int_equal(tw_catalog_refresh(c, "nope", &err), TW_E_NOTFOUND);
  tw_catalog_free(c);
}

static void snapshots_are_stored_and_loaded_back(void **state) {
  (void)state;
  char other[160];
  snprintf(other, sizeof other, "%s/other.db", dir);
  struct tw_store *st2 = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = other, .clock = &clk};
  struct tw_test_pg pg2 = pg; /* on PostgreSQL: a schema of its own */
  pg2.schema[0] = 0;
  if (pg.on)
    assert_int_equal(tw_test_pg_schema_new(&pg2), 0);
  tw_test_pg_opts(&pg2, &so);
  assert_int_equal(tw_store_open(&so, &st2, &err), TW_OK);
  struct tw_catalog *c = make(st2);
  tw_catalog_refresh_due(c, tw_clock_now_ms(&clk));
  /* a new spot price in the file: a new version and a history point */
  tw_clock_advance(&clk, 120000);
  write_file(csv, SEED_V2);
  assert_int_equal(tw_catalog_refresh(c, "seed", &err), TW_OK);
  struct tw_cat_price_point *pts;
  size_t n;
  assert_int_equal(
      tw_catalog_history(c, "fake-a:us-east-1:us-east-1a:p5.48xlarge:spot", 10,
                         &pts, &n, &err),
      TW_OK);
  assert_int_equal(n, 2);
  assert_int_equal(pts[0].price_uusd_per_hour, 19500000); /* newest first */
  assert_int_equal(pts[1].price_uusd_per_hour, 23144900);
  assert_true(pts[0].snapshot > pts[1].snapshot);
  free(pts);
  /* an unchanged spot price adds no point */
  assert_int_equal(
      tw_catalog_history(c, "fake-a:eu-central-1:eu-central-1b:m6i.large:spot",
                         10, &pts, &n, &err),
      TW_OK);
  assert_int_equal(n, 1);
  free(pts);
  struct tw_cat_snap *s = tw_catalog_acquire(c);
  size_t count = tw_cat_snap_count(s);
  tw_cat_snap_release(s);
  tw_catalog_free(c);

  /* a restarted catalog has the offers before any source answers */
  c = make(st2);
  s = tw_catalog_acquire(c);
  assert_int_equal(tw_cat_snap_count(s), count);
  size_t i;
  assert_true(
      tw_cat_snap_find(s, "fake-a:us-east-1:us-east-1a:p5.48xlarge:spot", &i));
  struct tw_cat_view v;
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 19500000);
  assert_string_equal(v.accel, "H100-80GB");
  assert_int_equal(v.source_row, 3);
  struct tw_catalog_status *stt;
  tw_catalog_status(c, &stt, &n);
  const struct tw_catalog_status *seed = status_of(stt, n, "seed");
  assert_true(seed->loaded_from_store);
  assert_int_equal(seed->info.report.rows, 3);
  assert_int_equal(seed->age_ms, 0);
  assert_int_equal(seed->refreshes, 0);
  free(stt);
  tw_cat_snap_release(s);
  tw_catalog_free(c);
  tw_store_close(st2);
  tw_test_pg_schema_drop(&pg2);
  write_file(csv, SEED_V1);
}

static void threads_refresh_on_their_own(void **state) {
  (void)state;
  struct tw_catalog *c = make(NULL);
  struct tw_err err = {0};
  assert_int_equal(tw_catalog_start(c, &err), TW_OK);
  tw_catalog_wait_ready(c); /* both first attempts done */
  struct tw_cat_snap *s = tw_catalog_acquire(c);
  assert_int_equal(tw_cat_snap_count(s), 8);
  tw_cat_snap_release(s);
  tw_catalog_free(c); /* stops and joins the threads */
}

static void config_section_is_validated(void **state) {
  (void)state;
  const struct {
    const char *yaml;
    enum tw_rc rc;
    const char *msg;
  } cases[] = {
      {"catalog: {refresh_s: 5}\n", TW_E_INVALID, "catalog.refresh_s"},
      {"catalog: {refresh: 60}\n", TW_E_INVALID, "did you mean \"refresh_s\""},
      {"catalog: {files: [{path: x.csv}]}\n", TW_E_INVALID,
       "catalog.files[0]: path and provider are required"},
      {"catalog: {files: [{path: /nonexistent.csv, provider: aws}]}\n", TW_E_IO,
       "cannot read /nonexistent.csv"},
      {"catalog: {files: [{path: x, provider: aws, mode: replace}]}\n",
       TW_E_INVALID, "catalog.files[0].mode: expected seed or override"},
      {"catalog: {accounts: {fake-a: {chargeback: {vcpu_hour: cheap}}}}\n",
       TW_E_INVALID, "catalog.accounts.fake-a.chargeback.vcpu_hour"},
      {"catalog: {rates: /nonexistent-rates.csv}\n", TW_E_IO, "cannot open"},
      {"catalog: {files: [{path: SEED, provider: aws, account: \"a:b\"}]}\n",
       TW_E_INVALID, "may not hold"},
      {"catalog: {files: [{path: SEED, provider: aws, currency: XYZ}]}\n",
       TW_E_INVALID, "no rate for currency XYZ"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char yaml[512];
    const char *at = strstr(cases[k].yaml, "SEED");
    if (at)
      snprintf(yaml, sizeof yaml, "%.*s%s%s", (int)(at - cases[k].yaml),
               cases[k].yaml, csv, at + 4);
    else
      snprintf(yaml, sizeof yaml, "%s", cases[k].yaml);
    struct tw_cfg *cfg = NULL;
    struct tw_err err = {0};
    if (tw_cfg_load_text(yaml, strlen(yaml), &cfg, &err))
      fail_msg("case %zu: %s", k, err.msg);
    struct tw_catalog *c = NULL;
    enum tw_rc rc = tw_catalog_new_from_cfg(cfg, NULL, &clk, &prov, 1,
                                            tw_adapters_test, &c, &err);
    if (rc != cases[k].rc || !strstr(err.msg, cases[k].msg))
      fail_msg("case %zu: rc %s, %s", k, tw_rc_str(rc), err.msg);
    assert_null(c);
    tw_cfg_free(cfg);
  }
  char yaml[512];
  snprintf(yaml, sizeof yaml,
           "catalog:\n  refresh_s: 120\n  keep_snapshots: 3\n"
           "  accounts:\n    fake-a: {refresh_s: 30, granularity_s: 60,\n"
           "      chargeback: {vcpu_hour: \"0.01\"}}\n"
           "  files:\n    - {name: seed, path: %s, provider: fake,\n"
           "       account: fake-a, mode: override, refresh_s: 600}\n",
           csv);
  struct tw_cfg *cfg = NULL;
  struct tw_err err = {0};
  if (tw_cfg_load_text(yaml, strlen(yaml), &cfg, &err))
    fail_msg("%s", err.msg);
  {
    struct tw_catalog *c = NULL;
    if (tw_catalog_new_from_cfg(cfg, NULL, &clk, &prov, 1, tw_adapters_test, &c,
                                &err))
      fail_msg("%s", err.msg);
    struct tw_catalog_status *st;
    size_t n;
    tw_catalog_status(c, &st, &n);
    assert_int_equal(status_of(st, n, "fake-a")->refresh_ms, 30000);
    assert_int_equal(status_of(st, n, "seed")->refresh_ms, 600000);
    assert_int_equal(status_of(st, n, "seed")->info.mode, TW_CAT_OVERRIDE);
    free(st);
    tw_catalog_refresh_due(c, tw_clock_now_ms(&clk));
    struct tw_cat_snap *s = tw_catalog_acquire(c);
    size_t i;
    struct tw_cat_view v;
    /* the override now beats the adapter */
    assert_true(tw_cat_snap_find(s, "fake-a:r1:r1a:gpu.spot:spot", &i));
    tw_cat_snap_view(s, i, &v);
    assert_int_equal(v.price_uusd_per_hour, 1900000);
    tw_cat_snap_release(s);
    tw_catalog_free(c);
    tw_cfg_free(cfg);
  }
  /* a catalog section that is not a mapping is refused by the config */
  const char *bad = "catalog: [1, 2]\n";
  assert_int_equal(tw_cfg_load_text(bad, strlen(bad), &cfg, &err),
                   TW_E_INVALID);
  /* and a change to it is reported as needing a restart */
  struct tw_cfg *a = NULL, *b = NULL;
  const char *ya = "catalog: {refresh_s: 60}\n",
             *yb = "catalog: {refresh_s: 90}\n";
  assert_int_equal(tw_cfg_load_text(ya, strlen(ya), &a, &err), TW_OK);
  assert_int_equal(tw_cfg_load_text(yb, strlen(yb), &b, &err), TW_OK);
  char *report = NULL;
  tw_cfg_keep_fixed(a, b, &report);
  assert_non_null(report);
  assert_non_null(strstr(report, "catalog: changed in the file"));
  free(report);
  tw_cfg_free(a);
  tw_cfg_free(b);
}

/* An adapter reports its own currency; the rate table converts it, and the
 * offer keeps the provider's price and the rate it went through. */
static void adapter_currency_goes_through_the_rate_table(void **state) {
  (void)state;
  static const char RATES[] = "currency,usd_per_unit,date,source\n"
                              "CNY,0.138,2024-05-01,test\n";
  struct tw_rates *rates = NULL;
  assert_int_equal(tw_rates_load_text(RATES, strlen(RATES), &rates, NULL),
                   TW_OK);
  struct tw_offer in[3];
  for (int i = 0; i < 3; i++) {
    tw_offer_init(&in[i]);
    snprintf(in[i].provider, sizeof in[i].provider, "alibaba");
    snprintf(in[i].account, sizeof in[i].account, "ali");
    snprintf(in[i].region, sizeof in[i].region, "cn-hangzhou");
    snprintf(in[i].zone, sizeof in[i].zone, "cn-hangzhou-%c", 'h' + i);
    snprintf(in[i].instance_type, sizeof in[i].instance_type, "ecs.g7.large");
    in[i].vcpus = 2;
    in[i].memory_mib = 8192;
    in[i].market = TW_MARKET_ON_DEMAND;
    snprintf(in[i].price_currency, sizeof in[i].price_currency, "CNY");
    in[i].price_micro_per_hour = 693000;
  }
  snprintf(in[2].price_currency, sizeof in[2].price_currency, "EUR");
  struct tw_cat_adapter_opts ao = {.rates = rates,
                                   .adapters = tw_adapters_test};
  struct tw_cat_source_info si;
  memset(&si, 0, sizeof si);
  snprintf(si.name, sizeof si.name, "ali");
  struct tw_cat_snap *snap = NULL;
  assert_int_equal(tw_cat_snap_from_offers(in, 3, &ao, &si, &snap, NULL),
                   TW_OK);
  /* one currency per listing: the EUR offer is refused */
  assert_int_equal(tw_cat_snap_count(snap), 2);
  struct tw_offer o;
  tw_cat_snap_to_offer(snap, 0, &o);
  assert_int_equal(o.price_uusd_per_hour, 95634); /* 0.693 x 0.138 */
  assert_string_equal(o.price_currency, "CNY");
  assert_int_equal(o.price_micro_per_hour, 693000);
  assert_int_equal(o.fx_nusd_per_unit, 138000000);
  assert_string_equal(o.fx_date, "2024-05-01");
  tw_cat_snap_release(snap);
  /* a currency the table lacks converts nothing */
  snprintf(in[0].price_currency, sizeof in[0].price_currency, "JPY");
  assert_int_equal(tw_cat_snap_from_offers(in, 1, &ao, &si, &snap, NULL),
                   TW_OK);
  assert_int_equal(tw_cat_snap_count(snap), 0);
  tw_cat_snap_release(snap);
  tw_rates_free(rates);
}

static void shipped_tables_and_demo_catalog_load(void **state) {
  (void)state;
  const char *src = getenv("TW_SOURCE_DIR");
  char p[1024];
  struct tw_err err = {0};
  struct tw_regions *r1 = NULL, *r2 = NULL;
  snprintf(p, sizeof p, "%s/configs/catalog/regions.csv", src ? src : ".");
  if (tw_regions_load_file(p, &r1, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(tw_regions_builtin(&r2, &err), TW_OK);
  assert_int_equal(tw_regions_count(r1), tw_regions_count(r2)); /* same table */
  tw_regions_free(r1);
  tw_regions_free(r2);
  struct tw_rates *rt = NULL;
  snprintf(p, sizeof p, "%s/configs/catalog/rates.csv", src ? src : ".");
  if (tw_rates_load_file(p, &rt, &err))
    fail_msg("%s", err.msg);
  assert_non_null(tw_rates_find(rt, "CNY"));
  tw_rates_free(rt);

  snprintf(p, sizeof p, "%s/configs/catalog/demo-aws.csv", src ? src : ".");
  struct tw_catalog_file files[] = {
      {.name = "demo", .path = p, .provider = "aws", .account = "aws-demo"}};
  struct tw_catalog_opts o = {.clock = &clk,
                              .files = files,
                              .n_files = 1,
                              .adapters = tw_adapters_test};
  struct tw_catalog *c = NULL;
  if (tw_catalog_new(&o, &c, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 1);
  struct tw_catalog_status *st;
  size_t n;
  tw_catalog_status(c, &st, &n);
  const struct tw_cat_report *rep = &st[0].info.report;
  assert_int_equal(rep->rows, 10);
  assert_int_equal(rep->normalized, 10);
  assert_int_equal(rep->notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 1);
  assert_int_equal(rep->notes[TW_CAT_NOTE_ZERO_PRICE], 1);
  assert_int_equal(rep->notes[TW_CAT_NOTE_REGION_UNKNOWN], 0);
  assert_int_equal(st[0].info.offers, 18);
  free(st);
  struct tw_cat_snap *s = tw_catalog_acquire(c);
  struct tw_cat_query q = {
      .accel = "A100", .market = TW_MARKET_SPOT, .limit = 10};
  struct tw_cat_page page;
  assert_int_equal(tw_cat_snap_query(s, &q, &page, &err), TW_OK);
  assert_int_equal(page.n, 3); /* two A100-80GB and one A100-40GB on spot */
  tw_cat_page_release(&page);
  tw_cat_snap_release(s);
  tw_catalog_free(c);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shipped_tables_and_demo_catalog_load),
      cmocka_unit_test(adapter_currency_goes_through_the_rate_table),
      cmocka_unit_test(refresh_publishes_a_merged_snapshot),
      cmocka_unit_test(a_failed_refresh_keeps_the_previous_table),
      cmocka_unit_test(snapshots_are_stored_and_loaded_back),
      cmocka_unit_test(threads_refresh_on_their_own),
      cmocka_unit_test(config_section_is_validated),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
