/* test_alibaba_fake.c - the Alibaba ECS adapter against tradewind-fakecloud.
 *
 * Starts the fake as a subprocess on a free loopback port with its clock
 * frozen, then drives the adapter through the generic layer: offers (in
 * CNY as ECS answers, converted by the catalog's rate table), on-demand and
 * spot launches, describe until running (moving the fake's clock through its
 * control API instead of sleeping), the spot reclaim notice after the
 * protection period, terminate, listing with paging, every error class provoked
 * by the fake's fault injection, a launch retried after a timeout, both
 * signature forms and clock skew.  The fake's /_fake/alibaba/state is the
 * witness: how many instances exist, with which tags and tokens, and how many
 * calls each action received. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "billing/catalog/catalog.h"
#include "billing/catalog/normalize.h"
#include "providers/alibaba/ali_sign.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/integration/twtest_fakecloud.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

static bool start_fake(void) {
  return twtest_fake_start((const char *[]){
      "--pending-ms", "5000", "--credentials", "testid:testsecret", NULL});
}

/* Calls of one ECS action so far, from the fake's counters. */
static long calls_of(const char *action) {
  return twtest_fake_calls("/_fake/alibaba/state", action);
}

/* The fake's instances carrying client token tok. */
static size_t instances_with_token(const char *tok) {
  json_t *s = twtest_fake_ctl("GET", "/_fake/alibaba/state", NULL);
  size_t n = 0, i;
  json_t *in;
  json_array_foreach(json_object_get(s, "instances"), i, in) {
    const char *t = json_string_value(json_object_get(in, "ClientToken"));
    if (t && !strcmp(t, tok))
      n++;
  }
  json_decref(s);
  return n;
}

static json_t *fake_instance(const char *id) {
  char path[256];
  snprintf(path, sizeof path, "/_fake/alibaba/instances/%s", id);
  return twtest_fake_ctl("GET", path, NULL);
}

/* ---- providers ---------------------------------------------------------- */

static struct tw_provider *provider_as(const char *ak_env, const char *sk_env,
                                       const char *extra) {
  char *doc = tw_asprintf("name: ali-test\n"
                          "type: alibaba\n"
                          "endpoint: %s\n"
                          "cms_endpoint: %s\n"
                          "regions: [cn-hangzhou]\n"
                          "access_key_env: %s\n"
                          "secret_key_env: %s\n"
                          "image: ubuntu_22_04_x64_20G_alibase_20240101.vhd\n"
                          "instance_types: [ecs.g7.large, "
                          "ecs.gn7-c12g1.3xlarge]\n"
                          "backoff_base_ms: 1\n"
                          "backoff_cap_ms: 5\n"
                          "%s",
                          twtest_fake_url, twtest_fake_url, ak_env, sk_env,
                          extra ? extra : "");
  struct tw_node *cfg = NULL;
  struct tw_err err = {0};
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err)) {
    TW_FAIL("provider: %s", err.msg);
  }
  tw_node_free(cfg);
  free(doc);
  return p;
}

static struct tw_provider *provider(const char *extra) {
  return provider_as("TW_TEST_ALI_AK", "TW_TEST_ALI_SK", extra);
}

static const char *js(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static const struct tw_offer *find_offer(const struct tw_offer_list *l,
                                         const char *type, const char *zone,
                                         enum tw_market m) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].instance_type, type) &&
        !strcmp(l->items[i].zone, zone) && l->items[i].market == m)
      return &l->items[i];
  return NULL;
}

static struct tw_launch launch_req(const struct tw_offer *o, const char *tok,
                                   const char *job) {
  struct tw_launch l = {0};
  l.offer = o;
  l.client_token = tok;
  l.job_id = job;
  l.attempt_id = "att-1";
  l.tenant = "physics";
  return l;
}

/* ---- scenarios ---------------------------------------------------------- */

static struct tw_offer_list offers;

/* The fake's built-in specs against ECS's documentation
 * (shared/data/catalogs/aliyun/ecs_instance_families.csv: family, type,
 * vcpus, memory_gib, ...), when the data is there. */
static void specs_match_the_docs(const struct tw_offer_list *l) {
  char path[4096];
  const char *dir = getenv("TRADEWIND_TESTDATA");
  if (dir)
    snprintf(path, sizeof path, "%s/catalogs/aliyun/ecs_instance_families.csv",
             dir);
  else
    snprintf(path, sizeof path,
             "%s/../shared/data/catalogs/aliyun/ecs_instance_families.csv",
             getenv("TW_SOURCE_DIR") ? getenv("TW_SOURCE_DIR") : ".");
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("note: %s absent, specs not compared\n", path);
    return;
  }
  char line[4096];
  int compared = 0;
  while (fgets(line, sizeof line, f)) {
    /* The family cell is quoted and holds commas: skip past it. */
    char *p = line;
    if (*p == '"') {
      p = strchr(p + 1, '"');
      if (!p)
        continue;
      p++;
    } else {
      p = strchr(p, ',');
      if (!p)
        continue;
    }
    char type[64];
    int vcpus;
    double gib;
    if (sscanf(p, ",%63[^,],%d,%lf", type, &vcpus, &gib) != 3)
      continue;
    for (size_t i = 0; i < l->n; i++)
      if (!strcmp(l->items[i].instance_type, type)) {
        TW_CHECK(l->items[i].vcpus == vcpus);
        TW_CHECK(l->items[i].memory_mib == (int64_t)(gib * 1024 + 0.5));
        compared++;
      }
  }
  fclose(f);
  TW_CHECK(compared > 0);
}

/* raw through the catalog, as the daemon lists them: CNY at 0.138 USD
 * (the rate table is the one source of exchange rates). */
static void convert(const struct tw_offer_list *raw,
                    struct tw_offer_list *out) {
  static const char RATES[] = "currency,usd_per_unit,date,source\n"
                              "CNY,0.138,2024-05-01,test\n";
  struct tw_rates *rates = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_rates_load_text(RATES, strlen(RATES), &rates, &err), TW_OK,
              err);
  struct tw_cat_adapter_opts ao = {.rates = rates, .adapters = tw_adapters};
  struct tw_cat_source_info si;
  memset(&si, 0, sizeof si);
  snprintf(si.name, sizeof si.name, "ali-test");
  snprintf(si.kind, sizeof si.kind, "adapter");
  snprintf(si.provider, sizeof si.provider, "alibaba");
  snprintf(si.account, sizeof si.account, "ali-test");
  struct tw_cat_snap *snap = NULL;
  TW_CHECK_RC(
      tw_cat_snap_from_offers(raw->items, raw->n, &ao, &si, &snap, &err), TW_OK,
      err);
  TW_CHECK(snap && tw_cat_snap_count(snap) == raw->n);
  for (size_t i = 0; snap && i < tw_cat_snap_count(snap); i++)
    tw_cat_snap_to_offer(snap, i, tw_offer_list_add(out));
  tw_cat_snap_release(snap);
  tw_rates_free(rates);
}

/* The rate is the catalog's: the adapter's old key is an error naming it. */
static void own_rate_is_refused(void **state) {
  char *doc = tw_asprintf("name: ali-old\ntype: alibaba\nendpoint: %s\n"
                          "regions: [cn-hangzhou]\n"
                          "access_key_env: TW_TEST_ALI_AK\n"
                          "secret_key_env: TW_TEST_ALI_SK\n"
                          "image: ubuntu_22_04_x64_20G_alibase_20240101.vhd\n"
                          "cny_usd_rate: \"0.138\"\n",
                          twtest_fake_url);
  struct tw_node *cfg = NULL;
  struct tw_err err = {0};
  struct tw_provider *p = NULL;
  TW_CHECK(tw_node_parse_yaml(doc, strlen(doc), &cfg, NULL) == TW_OK);
  TW_CHECK(tw_provider_new(tw_adapters, cfg, NULL, &p, &err) == TW_E_INVALID &&
           !p);
  TW_CHECK(strstr(err.msg, "cny_usd_rate") && strstr(err.msg, "catalog.rates"));
  tw_node_free(cfg);
  free(doc);
}

static void offers_from_the_fake(void **state) {
  struct tw_provider *p = *state;
  /* A known spot price from now on: 0.200 CNY in cn-hangzhou-i. */
  twtest_fake_ctl_ok(
      "POST", "/_fake/alibaba/spot-price",
      "{\"instance_type\": \"ecs.g7.large\", \"zone\": \"cn-hangzhou-i\", "
      "\"price\": \"0.200\"}");
  struct tw_err err = {0};
  struct tw_offer_list raw;
  tw_offer_list_init(&raw);
  TW_CHECK_RC(tw_provider_list_offers(p, &raw, &err), TW_OK, err);
  /* The adapter reports ECS's own price and currency, nothing converted. */
  const struct tw_offer *r =
      find_offer(&raw, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_ON_DEMAND);
  TW_CHECK(r && !strcmp(r->price_currency, "CNY") &&
           r->price_micro_per_hour == 693000 && r->price_uusd_per_hour == 0 &&
           r->fx_nusd_per_unit == 0);
  convert(&raw, &offers);
  tw_offer_list_release(&raw);
  const struct tw_offer *od =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_SPOT);
  TW_CHECK(od && sp);
  if (od) {
    /* 0.693 CNY/h at 0.138 USD per CNY = 0.095634 USD/h, exactly. */
    TW_CHECK(od->price_uusd_per_hour == 95634);
    TW_CHECK(od->vcpus == 2 && od->memory_mib == 8192);
    TW_CHECK(!strcmp(od->region, "cn-hangzhou"));
    TW_CHECK(!strcmp(od->price_currency, "CNY"));
    TW_CHECK(od->price_micro_per_hour == 693000);
    TW_CHECK(od->fx_nusd_per_unit == 138000000);
    TW_CHECK(!strcmp(od->fx_date, "2024-05-01"));
    TW_CHECK(!strcmp(od->provider, "alibaba") &&
             !strcmp(od->account, "ali-test"));
  }
  if (sp) {
    TW_CHECK(sp->price_uusd_per_hour == 27600); /* 0.200 * 0.138 */
    TW_CHECK(sp->price_observed_ms > 0);
    TW_CHECK(!strcmp(tw_offer_label(sp, "spot_protection_h"), "1"));
  }
  /* The A100 type: sold in two zones only, its GPU normalized. */
  const struct tw_offer *gpu = find_offer(&offers, "ecs.gn7-c12g1.3xlarge",
                                          "cn-hangzhou-j", TW_MARKET_ON_DEMAND);
  TW_CHECK(gpu && !strcmp(gpu->accel_name, "A100") && gpu->accel_count == 1 &&
           gpu->accel_memory_mib == 40960 && gpu->vcpus == 12);
  TW_CHECK(!find_offer(&offers, "ecs.gn7-c12g1.3xlarge", "cn-hangzhou-h",
                       TW_MARKET_ON_DEMAND));
  specs_match_the_docs(&offers);
  /* Only the configured types. */
  for (size_t i = 0; i < offers.n; i++)
    TW_CHECK(!strcmp(offers.items[i].instance_type, "ecs.g7.large") ||
             !strcmp(offers.items[i].instance_type, "ecs.gn7-c12g1.3xlarge"));

  /* A zone sold out: its offer is gone. */
  twtest_fake_ctl_ok(
      "POST", "/_fake/alibaba/stock",
      "{\"instance_type\": \"ecs.g7.large\", \"zone\": \"cn-hangzhou-k\", "
      "\"status\": \"WithoutStock\"}");
  struct tw_offer_list l2;
  tw_offer_list_init(&l2);
  TW_CHECK_RC(tw_provider_list_offers(p, &l2, &err), TW_OK, err);
  TW_CHECK(
      !find_offer(&l2, "ecs.g7.large", "cn-hangzhou-k", TW_MARKET_ON_DEMAND));
  TW_CHECK(
      find_offer(&l2, "ecs.g7.large", "cn-hangzhou-h", TW_MARKET_ON_DEMAND));
  tw_offer_list_release(&l2);
}

static char od_id[TW_MODEL_ID_MAX], spot_id[TW_MODEL_ID_MAX];

static void launch_describe_list(void **state) {
  struct tw_provider *p = *state;
  const struct tw_offer *od =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_SPOT);
  if (!od || !sp)
    return;
  struct tw_instance in;
  struct tw_err err = {0};
  struct tw_launch req = launch_req(od, "tok-od-1", "job-od");
  TW_CHECK_RC(tw_provider_launch(p, &req, &in, &err), TW_OK, err);
  TW_CHECK(in.state == TW_INST_PENDING && in.market == TW_MARKET_ON_DEMAND);
  TW_CHECK(!strcmp(in.client_token, "tok-od-1"));
  TW_CHECK(!strncmp(in.id, "i-bp", 4));
  TW_SET(od_id, in.id);

  req = launch_req(sp, "tok-spot-1", "job-spot");
  req.max_price_uusd_per_hour = 50000; /* 0.362 CNY: above 0.200 */
  TW_CHECK_RC(tw_provider_launch(p, &req, &in, &err), TW_OK, err);
  TW_CHECK(in.market == TW_MARKET_SPOT);
  TW_SET(spot_id, in.id);
  json_t *fi = fake_instance(spot_id);
  TW_CHECK(!strcmp(js(fi, "SpotStrategy"), "SpotWithPriceLimit"));
  TW_CHECK(json_real_value(json_object_get(fi, "SpotPriceLimit")) == 0.362);
  TW_CHECK(json_integer_value(json_object_get(fi, "SpotDuration")) == 1);
  TW_CHECK(!strcmp(js(fi, "ZoneId"), "cn-hangzhou-i"));
  json_decref(fi);

  /* Describe until running: the fake's clock moves, nobody sleeps. */
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_PENDING && !strcmp(d.provider_state, "Pending"));
  int rounds = 0;
  while (d.state != TW_INST_RUNNING && rounds++ < 10) {
    twtest_fake_advance(1000);
    TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  }
  TW_CHECK(d.state == TW_INST_RUNNING && rounds >= 5);
  TW_CHECK(!strcmp(d.job_id, "job-od") && !strcmp(d.attempt_id, "att-1") &&
           !strcmp(d.tenant, "physics"));
  TW_CHECK(!strcmp(d.zone, "cn-hangzhou-i") && d.private_ip[0]);
  TW_CHECK(d.launched_ms > 0);
  TW_CHECK_RC(tw_provider_describe(p, spot_id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_RUNNING && d.market == TW_MARKET_SPOT);

  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  int seen = 0;
  for (size_t i = 0; i < l.n; i++)
    seen += !strcmp(l.items[i].id, od_id) || !strcmp(l.items[i].id, spot_id);
  TW_CHECK(seen == 2);
  tw_instance_list_release(&l);

  /* The same token again: the same instance, no second purchase. */
  req = launch_req(od, "tok-od-1", "job-od");
  TW_CHECK_RC(tw_provider_launch(p, &req, &in, &err), TW_OK, err);
  TW_CHECK(!strcmp(in.id, od_id) && instances_with_token("tok-od-1") == 1);
}

/* The reclaim notice: never inside the protection period, five minutes
 * ahead, reported with CloudMonitor's time; then the instance is gone. */
static void spot_reclaim(void **state) {
  struct tw_provider *p = *state;
  if (!spot_id[0])
    return;
  struct tw_err err = {0};
  struct tw_event_list ev;
  tw_event_list_init(&ev);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  char path[256];
  snprintf(path, sizeof path, "/_fake/alibaba/instances/%s/interrupt", spot_id);
  json_t *r = twtest_fake_ctl("POST", path, "{\"delay_ms\": 0}");
  int64_t notice = 0, reclaim = 0, launched = 0;
  TW_CHECK(!tw_time_parse_rfc3339(js(r, "notice_time"), &notice));
  TW_CHECK(!tw_time_parse_rfc3339(js(r, "reclaim_time"), &reclaim));
  json_decref(r);
  TW_CHECK(reclaim - notice == 5 * 60000);
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, spot_id, &d, &err), TW_OK, err);
  launched = d.launched_ms;
  /* SpotDuration 1: released no earlier than an hour after launch
   * (CreationTime has minutes only, hence the minute of slack). */
  TW_CHECK(reclaim >= launched + 3600000 &&
           reclaim < launched + 3660000 + 60000);
  json_t *clk = twtest_fake_ctl("GET", "/_fake/clock", NULL);
  int64_t now = json_integer_value(json_object_get(clk, "now_ms"));
  json_decref(clk);
  /* Just before the notice: nothing yet (and the fake's clock is now far
   * from ours: the adapter corrects the skew from Date). */
  twtest_fake_advance(notice - now - 1000);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  twtest_fake_advance(2000);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 1);
  if (ev.n == 1) {
    TW_CHECK(ev.items[0].kind == TW_EVENT_INTERRUPTION);
    TW_CHECK(!strcmp(ev.items[0].instance_id, spot_id));
    /* (the control API prints whole seconds) */
    TW_CHECK(ev.items[0].noticed_ms / 1000 == notice / 1000);
    TW_CHECK(ev.items[0].deadline_ms - ev.items[0].noticed_ms == 5 * 60000);
    TW_CHECK(ev.items[0].deadline_ms / 1000 == reclaim / 1000);
    TW_CHECK(!strcmp(ev.items[0].action, "terminate"));
  }
  /* Reported again while in force, with the same notice time. */
  struct tw_event_list ev2;
  tw_event_list_init(&ev2);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev2, &err), TW_OK, err);
  TW_CHECK(ev2.n == 1 && ev.n == 1 &&
           ev2.items[0].noticed_ms == ev.items[0].noticed_ms);
  tw_event_list_release(&ev2);
  twtest_fake_advance(5 * 60000);
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, spot_id, &d, &err), TW_E_NOTFOUND, err);
  tw_event_list_release(&ev);
  tw_event_list_init(&ev);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  tw_event_list_release(&ev);

  /* Without protection (spot_duration_h: 0) the notice comes at once. */
  struct tw_provider *q = provider("spot_duration_h: 0\n");
  const struct tw_offer *sp =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-i", TW_MARKET_SPOT);
  if (!q || !sp)
    return;
  struct tw_launch req = launch_req(sp, "tok-spot-0", "job-spot0");
  struct tw_instance in;
  TW_CHECK_RC(tw_provider_launch(q, &req, &in, &err), TW_OK, err);
  snprintf(path, sizeof path, "/_fake/alibaba/instances/%s/interrupt", in.id);
  r = twtest_fake_ctl("POST", path, "{}");
  clk = twtest_fake_ctl("GET", "/_fake/clock", NULL);
  now = json_integer_value(json_object_get(clk, "now_ms"));
  TW_CHECK(!tw_time_parse_rfc3339(js(r, "notice_time"), &notice));
  TW_CHECK(notice / 1000 == now / 1000);
  json_decref(clk);
  json_decref(r);
  tw_event_list_init(&ev);
  TW_CHECK_RC(tw_provider_poll_events(q, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 1 && !strcmp(ev.items[0].instance_id, in.id));
  tw_event_list_release(&ev);
  tw_provider_free(q);
}

static void terminate(void **state) {
  struct tw_provider *p = *state;
  if (!od_id[0])
    return;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_provider_terminate(p, od_id, &err), TW_OK, err);
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_STOPPING);
  twtest_fake_advance(3000);
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_E_NOTFOUND, err);
  /* Idempotent: released already is what was asked. */
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_terminate(p, od_id, &err), TW_OK, err);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  for (size_t i = 0; i < l.n; i++)
    TW_CHECK(strcmp(l.items[i].id, od_id));
  tw_instance_list_release(&l);
}

static void error_classes(void **state) {
  struct tw_provider *p = *state;
  const struct tw_offer *od =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-h", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-h", TW_MARKET_SPOT);
  if (!od || !sp)
    return;
  struct tw_instance d;
  struct tw_err err = {0};
  struct tw_launch req;

  /* Capacity: NoStock (403, not retried) and Zone.NotOnSale. */
  twtest_fake_add_fault(
      "{\"kind\": \"capacity\", \"service\": \"ecs\", \"count\": 1}");
  long runs = calls_of("RunInstances");
  req = launch_req(od, "tok-cap", "job-cap");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CAPACITY, err);
  TW_CHECK(!strcmp(err.detail, "OperationDenied.NoStock"));
  TW_CHECK(calls_of("RunInstances") == runs + 1);
  TW_CHECK(instances_with_token("tok-cap") == 0);
  twtest_fake_clear_faults();
  twtest_fake_add_fault(
      "{\"kind\": \"capacity\", \"code\": \"Zone.NotOnSale\", "
      "\"count\": 1}");
  memset(&err, 0, sizeof err);
  req = launch_req(od, "tok-cap2", "job-cap");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CAPACITY, err);
  TW_CHECK(!strcmp(err.detail, "Zone.NotOnSale"));
  twtest_fake_clear_faults();

  /* Provider quota. */
  twtest_fake_add_fault("{\"kind\": \"quota\", \"count\": 1}");
  memset(&err, 0, sizeof err);
  req = launch_req(sp, "tok-quota", "job-q");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_QUOTA, err);
  TW_CHECK(!strncmp(err.detail, "QuotaExceed.", 12));
  twtest_fake_clear_faults();

  /* A spot limit under the market: capacity at that price. */
  memset(&err, 0, sizeof err);
  req = launch_req(sp, "tok-lowball", "job-q");
  req.max_price_uusd_per_hour = 200; /* 0.001 CNY */
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CAPACITY, err);
  TW_CHECK(!strcmp(err.detail, "InvalidSpotPriceLimit.LowerThanPublicPrice"));

  /* Throttling: ECS sends it with 400, which no retry is made for; the
   * class tells the caller to come back. */
  twtest_fake_add_fault(
      "{\"kind\": \"throttle\", \"action\": \"DescribeInstances\", "
      "\"count\": 1}");
  long desc = calls_of("DescribeInstances");
  memset(&err, 0, sizeof err);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_E_RETRYABLE, err);
  TW_CHECK(!strcmp(err.detail, "Throttling"));
  TW_CHECK(calls_of("DescribeInstances") == desc + 1);
  twtest_fake_clear_faults();
  /* Throttled with a 503: retried by the http helper, then served. */
  twtest_fake_add_fault(
      "{\"kind\": \"throttle\", \"action\": \"DescribeInstances\", "
      "\"status\": 503, \"count\": 2}");
  desc = calls_of("DescribeInstances");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeInstances") == desc + 3);
  twtest_fake_clear_faults();
  /* A server fault once: retried, then served. */
  twtest_fake_add_fault(
      "{\"kind\": \"error\", \"action\": \"DescribeInstances\", "
      "\"count\": 1}");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  twtest_fake_clear_faults();
  tw_instance_list_release(&l);

  /* Invalid: a type ECS does not have. */
  struct tw_offer bogus = *od;
  TW_SET(bogus.instance_type, "ecs.nonexistent.large");
  req = launch_req(&bogus, "tok-bogus", "job-b");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_INVALID, err);
  TW_CHECK(!strcmp(err.detail, "InvalidInstanceType.ValueNotSupported"));

  /* The same token with other parameters: conflict. */
  const struct tw_offer *od2 =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-j", TW_MARKET_ON_DEMAND);
  if (od2) {
    req = launch_req(od2, "tok-od-1", "job-od");
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CONFLICT, err);
    TW_CHECK(!strcmp(err.detail, "IdempotentParameterMismatch"));
  }

  /* Auth: a wrong secret, and an unknown access key. */
  setenv("TW_TEST_ALI_SK_BAD", "not-the-secret", 1);
  struct tw_provider *bad =
      provider_as("TW_TEST_ALI_AK", "TW_TEST_ALI_SK_BAD", NULL);
  if (bad) {
    tw_instance_list_init(&l);
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_list_managed(bad, &l, &err), TW_E_AUTH, err);
    TW_CHECK(!strcmp(err.detail, "SignatureDoesNotMatch"));
    tw_instance_list_release(&l);
    tw_provider_free(bad);
  }
  setenv("TW_TEST_ALI_AK_BAD", "LTAInobodyknows", 1);
  bad =
      provider_as("TW_TEST_ALI_AK_BAD", "TW_TEST_ALI_SK", "signature: acs3\n");
  if (bad) {
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_describe(bad, "i-bp0000", &d, &err), TW_E_AUTH,
                err);
    TW_CHECK(!strcmp(err.detail, "InvalidAccessKeyId.NotFound"));
    tw_provider_free(bad);
  }
}

/* A launch whose answer arrives after the client gave up: the retry
 * carries the same client token (and a fresh nonce), so exactly one
 * instance exists. */
static void timeout_then_retry_buys_once(const char *sig) {
  const struct tw_offer *od =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-j", TW_MARKET_ON_DEMAND);
  if (!od)
    return;
  struct tw_err err = {0};
  struct tw_instance d;
  char extra[128], tok[64];

  /* Retried inside the http helper. */
  snprintf(extra, sizeof extra, "timeout_ms: 400\nsignature: %s\n", sig);
  struct tw_provider *p = provider(extra);
  twtest_fake_add_fault("{\"kind\": \"slow\", \"action\": \"RunInstances\", "
                        "\"delay_ms\": 1500, \"count\": 1}");
  snprintf(tok, sizeof tok, "tok-slow-1-%s", sig);
  struct tw_launch req = launch_req(od, tok, "job-slow");
  long runs = calls_of("RunInstances");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(calls_of("RunInstances") == runs + 2);
  TW_CHECK(instances_with_token(tok) == 1);
  twtest_fake_clear_faults();
  tw_provider_free(p);

  /* Retried by the caller after the provider call itself timed out. */
  snprintf(extra, sizeof extra,
           "timeout_ms: 400\nmax_attempts: 1\n"
           "signature: %s\n",
           sig);
  p = provider(extra);
  twtest_fake_add_fault("{\"kind\": \"slow\", \"action\": \"RunInstances\", "
                        "\"delay_ms\": 1500, \"count\": 1}");
  snprintf(tok, sizeof tok, "tok-slow-2-%s", sig);
  req = launch_req(od, tok, "job-slow2");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_RETRYABLE, err);
  TW_CHECK(instances_with_token(tok) == 1); /* bought, answer lost */
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(instances_with_token(tok) == 1);
  twtest_fake_clear_faults();
  tw_provider_free(p);
}

/* DescribeInstances in pages of 2. */
static void paging(void **state) {
  struct tw_provider *p = provider("page_size: 2\nsignature: acs3\n");
  const struct tw_offer *od =
      find_offer(&offers, "ecs.g7.large", "cn-hangzhou-j", TW_MARKET_ON_DEMAND);
  if (!p || !od)
    return;
  struct tw_err err = {0};
  struct tw_instance d;
  for (int i = 0; i < 5; i++) {
    char tok[32], job[32];
    snprintf(tok, sizeof tok, "tok-page-%d", i);
    snprintf(job, sizeof job, "job-page-%d", i);
    struct tw_launch req = launch_req(od, tok, job);
    TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  }
  long desc = calls_of("DescribeInstances");
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  int seen = 0;
  for (size_t i = 0; i < l.n; i++)
    seen += !strncmp(l.items[i].job_id, "job-page-", 9);
  TW_CHECK(seen == 5);
  long used = calls_of("DescribeInstances") - desc;
  TW_CHECK(used == (long)(l.n + 1) / 2);
  for (size_t i = 0; i < l.n; i++)
    for (size_t j = i + 1; j < l.n; j++)
      TW_CHECK(strcmp(l.items[i].id, l.items[j].id));
  tw_instance_list_release(&l);
  tw_provider_free(p);
}

static void timeout_then_retry_buys_once_hmac_sha1(void **state) {
  timeout_then_retry_buys_once("hmac-sha1");
}

static void timeout_then_retry_buys_once_acs3(void **state) {
  timeout_then_retry_buys_once("acs3");
}

/* The fake as a subprocess and one adapter over it, for the group. */
/* ---- the fake's ECS API, signed by hand ----------------------------------
 * Actions the adapter does not use yet but other ECS clients do (and a
 * broker resolving launches may): regions, zones, images, security groups
 * and the one-instance lifecycle CreateInstance, StartInstance,
 * StopInstance, DeleteInstance. */

static size_t ecs_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

/* A legacy-signed GET of Action with the name/value pairs kv (NULL-ended);
 * the answer's JSON (json_decref it) and *status. */
static json_t *ecs(const char *action, const char *const *kv, long *status) {
  static int nonce;
  json_t *clk = twtest_fake_ctl("GET", "/_fake/clock", NULL);
  int64_t now = json_integer_value(json_object_get(clk, "now_ms"));
  json_decref(clk);
  char ts[32], nn[32];
  tw_time_fmt_rfc3339(now, ts, sizeof ts);
  snprintf(ts + 19, sizeof ts - 19, "Z"); /* whole seconds */
  snprintf(nn, sizeof nn, "tw-nonce-%d-%d", (int)getpid(), ++nonce);
  struct tw_ali_pair p[32] = {{"Action", action},
                              {"Version", "2014-05-26"},
                              {"Format", "JSON"},
                              {"AccessKeyId", "testid"},
                              {"SignatureMethod", "HMAC-SHA1"},
                              {"SignatureVersion", "1.0"},
                              {"SignatureNonce", nn},
                              {"Timestamp", ts}};
  size_t n = 8;
  for (size_t i = 0; kv && kv[i] && n < 31; i += 2)
    p[n++] = (struct tw_ali_pair){kv[i], kv[i + 1]};
  char sig[32];
  struct tw_err err = {0};
  TW_CHECK_RC(tw_ali_rpc_sign("GET", p, n, "testsecret", sig, NULL, &err),
              TW_OK, err);
  struct tw_buf url, body;
  tw_buf_init(&url);
  tw_buf_init(&body);
  tw_buf_printf(&url, "%s/?", twtest_fake_url);
  tw_ali_canonical_query(&url, p, n, NULL);
  tw_buf_adds(&url, "&Signature=");
  tw_ali_encode(&url, sig, strlen(sig));
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.data);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ecs_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(c);
  json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, NULL);
  tw_buf_release(&url);
  tw_buf_release(&body);
  return j;
}

static const char *status_of(const char *id) {
  static char out[32];
  json_t *in = fake_instance(id);
  snprintf(out, sizeof out, "%s", js(in, "Status"));
  json_decref(in);
  return out;
}

static void ecs_catalog_and_lifecycle(void **state) {
  long st;
  json_t *j = ecs("DescribeRegions", (const char *[]){NULL}, &st);
  json_t *rs = json_object_get(json_object_get(j, "Regions"), "Region");
  TW_CHECK(st == 200 && json_array_size(rs) == 3);
  TW_CHECK(!strcmp(js(json_array_get(rs, 0), "RegionEndpoint"),
                   "ecs.cn-hangzhou.aliyuncs.com"));
  json_decref(j);
  j = ecs("DescribeRegions", (const char *[]){"AcceptLanguage", "en-US", NULL},
          &st);
  rs = json_object_get(json_object_get(j, "Regions"), "Region");
  TW_CHECK(!strcmp(js(json_array_get(rs, 0), "LocalName"), "China (Hangzhou)"));
  json_decref(j);

  j = ecs("DescribeZones", (const char *[]){"RegionId", "cn-hangzhou", NULL},
          &st);
  json_t *zs = json_object_get(json_object_get(j, "Zones"), "Zone");
  TW_CHECK(st == 200 && json_array_size(zs) == 4);
  json_t *zi = json_array_get(zs, 1);
  TW_CHECK(!strcmp(js(zi, "ZoneId"), "cn-hangzhou-i"));
  json_t *types = json_object_get(json_object_get(zi, "AvailableInstanceTypes"),
                                  "InstanceTypes");
  bool a100 = false;
  size_t i;
  json_t *v;
  json_array_foreach(types, i, v) a100 |=
      !strcmp(json_string_value(v), "ecs.gn7-c12g1.3xlarge");
  TW_CHECK(a100); /* sold in Hangzhou i */
  json_decref(j);
  j = ecs("DescribeZones", (const char *[]){NULL}, &st);
  TW_CHECK(st == 400 && !strcmp(js(j, "Code"), "MissingParameter"));
  json_decref(j);

  j = ecs("DescribeImages",
          (const char *[]){"RegionId", "cn-hangzhou", "Architecture", "arm64",
                           NULL},
          &st);
  TW_CHECK(st == 200 &&
           json_integer_value(json_object_get(j, "TotalCount")) == 1);
  json_t *im =
      json_array_get(json_object_get(json_object_get(j, "Images"), "Image"), 0);
  TW_CHECK(!strcmp(js(im, "ImageOwnerAlias"), "system") &&
           !strcmp(js(im, "Status"), "Available"));
  json_decref(j);

  j = ecs("DescribeSecurityGroups",
          (const char *[]){"RegionId", "cn-shanghai", NULL}, &st);
  json_t *sg = json_array_get(
      json_object_get(json_object_get(j, "SecurityGroups"), "SecurityGroup"),
      0);
  TW_CHECK(st == 200 && !strncmp(js(sg, "SecurityGroupId"), "sg-uf", 5));
  json_decref(j);

  /* CreateInstance: one instance, Stopped until StartInstance. */
  j = ecs("CreateInstance",
          (const char *[]){"RegionId", "cn-hangzhou", "ZoneId", "cn-hangzhou-j",
                           "InstanceType", "ecs.g7.large", "ImageId",
                           "ubuntu_24_04_x64_20G_alibase_20250722.vhd",
                           "ClientToken", "tok-create-1", NULL},
          &st);
  char id[64];
  snprintf(id, sizeof id, "%s", js(j, "InstanceId"));
  TW_CHECK(st == 200 && !strncmp(id, "i-bp", 4) && js(j, "OrderId")[0]);
  json_decref(j);
  TW_CHECK(!strcmp(status_of(id), "Stopped"));
  j = ecs("StopInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  TW_CHECK(st == 403 && !strcmp(js(j, "Code"), "IncorrectInstanceStatus"));
  json_decref(j);
  j = ecs("StartInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  TW_CHECK(st == 200 && js(j, "RequestId")[0]);
  json_decref(j);
  TW_CHECK(!strcmp(status_of(id), "Starting"));
  twtest_fake_advance(5000);
  TW_CHECK(!strcmp(status_of(id), "Running"));
  /* DeleteInstance of a running instance without Force: refused. */
  j = ecs("DeleteInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  TW_CHECK(st == 403 && !strcmp(js(j, "Code"), "IncorrectInstanceStatus"));
  json_decref(j);
  j = ecs(
      "StopInstance",
      (const char *[]){"InstanceId", id, "StoppedMode", "StopCharging", NULL},
      &st);
  TW_CHECK(st == 200);
  json_decref(j);
  TW_CHECK(!strcmp(status_of(id), "Stopping"));
  twtest_fake_advance(5000);
  TW_CHECK(!strcmp(status_of(id), "Stopped"));
  j = ecs("DeleteInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  TW_CHECK(st == 200);
  json_decref(j);
  j = ecs("DeleteInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  TW_CHECK(st == 404 && !strcmp(js(j, "Code"), "InvalidInstanceId.NotFound"));
  json_decref(j);
  /* Force releases a running one. */
  j = ecs("CreateInstance",
          (const char *[]){"RegionId", "cn-hangzhou", "InstanceType",
                           "ecs.g7.large", "ImageId",
                           "ubuntu_24_04_x64_20G_alibase_20250722.vhd", NULL},
          &st);
  snprintf(id, sizeof id, "%s", js(j, "InstanceId"));
  json_decref(j);
  j = ecs("StartInstance", (const char *[]){"InstanceId", id, NULL}, &st);
  json_decref(j);
  twtest_fake_advance(5000);
  j = ecs("DeleteInstance",
          (const char *[]){"InstanceId", id, "Force", "true", NULL}, &st);
  TW_CHECK(st == 200);
  json_decref(j);
  twtest_fake_advance(5000);
  char ids[96];
  snprintf(ids, sizeof ids, "[\"%s\"]", id);
  j = ecs("DescribeInstances",
          (const char *[]){"RegionId", "cn-hangzhou", "InstanceIds", ids, NULL},
          &st);
  TW_CHECK(st == 200 &&
           json_integer_value(json_object_get(j, "TotalCount")) == 0);
  json_decref(j);
}

static int setup(void **state) {
  tw_log_set_level(TW_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!start_fake())
    return -1;
  setenv("TW_TEST_ALI_AK", "testid", 1);
  setenv("TW_TEST_ALI_SK", "testsecret", 1);
  tw_offer_list_init(&offers);
  *state = provider(NULL);
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  tw_provider_free(*state);
  tw_offer_list_release(&offers);
  twtest_fake_stop();
  curl_global_cleanup();
  return 0;
}

int main(void) {
  if (access(TW_FAKECLOUD_PATH, X_OK)) {
    printf("SKIPPED: %s not built\n", TW_FAKECLOUD_PATH);
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(own_rate_is_refused),
      cmocka_unit_test(offers_from_the_fake),
      cmocka_unit_test(launch_describe_list),
      cmocka_unit_test(error_classes),
      cmocka_unit_test(timeout_then_retry_buys_once_hmac_sha1),
      cmocka_unit_test(timeout_then_retry_buys_once_acs3),
      cmocka_unit_test(paging),
      cmocka_unit_test(terminate),
      cmocka_unit_test(spot_reclaim),
      cmocka_unit_test(ecs_catalog_and_lifecycle),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
