/* test_aws_fake.c - the AWS adapter against tradewind-fakecloud.
 *
 * Starts the fake as a subprocess on a free loopback port with its clock
 * frozen, then drives the adapter through the generic layer: offers,
 * on-demand and spot launches, describe until running (moving the fake's
 * clock through its control API instead of sleeping), notices, terminate,
 * listing, and every error class provoked by the fake's fault injection.
 * The fake's /_fake/ec2/state is the witness: how many instances exist,
 * with which tags and tokens, and how many calls each action received. */
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
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/integration/twtest_fakecloud.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

static bool start_fake(void) {
  return twtest_fake_start((const char *[]){"--pending-ms", "5000", NULL});
}

/* Calls of one EC2 action so far, from the fake's counters. */
static long calls_of(const char *action) {
  return twtest_fake_calls("/_fake/ec2/state", action);
}

/* The fake's instances carrying client token tok. */
static size_t instances_with_token(const char *tok) {
  json_t *s = twtest_fake_ctl("GET", "/_fake/ec2/state", NULL);
  size_t n = 0, i;
  json_t *in;
  json_array_foreach(json_object_get(s, "instances"), i, in) {
    const char *t = json_string_value(json_object_get(in, "client_token"));
    if (t && !strcmp(t, tok))
      n++;
  }
  json_decref(s);
  return n;
}

static json_t *fake_instance(const char *id) {
  char path[256];
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s", id);
  return twtest_fake_ctl("GET", path, NULL);
}

/* ---- providers ------------------------------------------------------ */

/* A provider on the fake with the given credentials' variables, the
 * fake's metadata_url when metadata, and extra config lines. */
static struct tw_provider *provider_on(const char *ak_env, const char *sk_env,
                                       bool metadata, const char *extra) {
  char *doc = tw_asprintf("name: aws-test\n"
                          "type: aws\n"
                          "endpoint: %s\n"
                          "regions: [us-east-1]\n"
                          "access_key_env: %s\n"
                          "secret_key_env: %s\n"
                          "image: ami-0abcdef1234567890\n"
                          "instance_types: [m5.large, p4d.24xlarge]\n"
                          "on_demand_prices: {m5.large: \"0.096\"}\n"
                          "backoff_base_ms: 1\n"
                          "backoff_cap_ms: 5\n"
                          "%s%s%s"
                          "%s",
                          twtest_fake_url, ak_env, sk_env,
                          metadata ? "metadata_url: " : "",
                          metadata ? twtest_fake_url : "",
                          metadata ? "/_fake/ec2/instances/{id}\n" : "",
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

static struct tw_provider *provider_as(const char *ak_env, const char *sk_env,
                                       const char *extra) {
  return provider_on(ak_env, sk_env, true, extra);
}

static struct tw_provider *provider(const char *extra) {
  return provider_as("TW_TEST_AWS_AK", "TW_TEST_AWS_SK", extra);
}

/* A string member, "" when absent. */
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

static void offers_from_the_fake(void **state) {
  struct tw_provider *p = *state;
  /* A price the fake did not make up: it must come back exactly. */
  twtest_fake_ctl_ok(
      "POST", "/_fake/ec2/spot-price",
      "{\"instance_type\": \"m5.large\", \"zone\": \"us-east-1a\", "
      "\"price\": \"0.041234\"}");
  struct tw_err err = {0};
  tw_offer_list_init(&offers);
  TW_CHECK_RC(tw_provider_list_offers(p, &offers, &err), TW_OK, err);
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1a", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "m5.large", "us-east-1a", TW_MARKET_SPOT);
  TW_CHECK(od && sp);
  if (od) {
    TW_CHECK(od->price_uusd_per_hour == 96000);
    TW_CHECK(od->vcpus == 2 && od->memory_mib == 8192);
    TW_CHECK(od->arch == TW_ARCH_X86_64);
    TW_CHECK(!strcmp(od->zone_id, "use1-az1"));
    TW_CHECK(!strcmp(od->provider, "aws") && !strcmp(od->account, "aws-test"));
    TW_CHECK(
        !strcmp(od->id, "aws-test:us-east-1:us-east-1a:m5.large:on-demand"));
    TW_CHECK(od->min_charge_s == 60);
  }
  if (sp) {
    TW_CHECK(sp->price_uusd_per_hour == 41234);
    TW_CHECK(sp->price_observed_ms > 0);
  }
  size_t od_zones = 0, spot_zones = 0, p4d_spot = 0, p4d_od = 0;
  for (size_t i = 0; i < offers.n; i++) {
    const struct tw_offer *o = &offers.items[i];
    if (!strcmp(o->instance_type, "m5.large"))
      o->market == TW_MARKET_ON_DEMAND ? od_zones++ : spot_zones++;
    if (!strcmp(o->instance_type, "p4d.24xlarge")) {
      TW_CHECK(!strcmp(o->accel_name, "A100") && o->accel_count == 8);
      TW_CHECK(o->price_uusd_per_hour > 0);
      if (o->market == TW_MARKET_SPOT) {
        p4d_spot++;
      } else {
        /* no on-demand price configured: the Price List's (GetProducts,
         * the fake serving its catalog's list price) */
        TW_CHECK(o->price_uusd_per_hour == 21957642, "p4d on demand: %lld",
                 (long long)o->price_uusd_per_hour);
        p4d_od++;
      }
    }
    TW_CHECK(!strcmp(o->region, "us-east-1"));
  }
  TW_CHECK(od_zones == 6 && spot_zones == 6 && p4d_spot >= 1 && p4d_od == 6,
           "od %zu spot %zu p4d spot %zu p4d od %zu", od_zones, spot_zones,
           p4d_spot, p4d_od);
  tw_offer_list_release(&offers);
  /* price_list: false: on demand only at configured prices */
  struct tw_provider *q =
      provider_as("TW_TEST_AWS_AK", "TW_TEST_AWS_SK", "price_list: false\n");
  struct tw_offer_list only;
  tw_offer_list_init(&only);
  TW_CHECK_RC(tw_provider_list_offers(q, &only, &err), TW_OK, err);
  size_t od_p4d = 0;
  for (size_t i = 0; i < only.n; i++)
    od_p4d += !strcmp(only.items[i].instance_type, "p4d.24xlarge") &&
              only.items[i].market == TW_MARKET_ON_DEMAND;
  TW_CHECK(od_p4d == 0);
  tw_offer_list_release(&only);
  tw_provider_free(q);
  tw_offer_list_init(&offers);
  TW_CHECK_RC(tw_provider_list_offers(p, &offers, &err), TW_OK, err);
}

static char od_id[TW_MODEL_ID_MAX], spot_id[TW_MODEL_ID_MAX];

static void launch_describe_list_terminate(void **state) {
  struct tw_provider *p = *state;
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1a", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "m5.large", "us-east-1b", TW_MARKET_SPOT);
  if (!od || !sp)
    return;
  struct tw_err err = {0};
  struct tw_instance a, b, d;

  struct tw_launch req = launch_req(od, "tok-od-1", "job-od");
  TW_CHECK_RC(tw_provider_launch(p, &req, &a, &err), TW_OK, err);
  TW_CHECK(!strncmp(a.id, "i-", 2) && a.state == TW_INST_PENDING);
  TW_CHECK(a.market == TW_MARKET_ON_DEMAND && !strcmp(a.zone, "us-east-1a"));
  TW_CHECK(!strcmp(a.region, "us-east-1") &&
           !strcmp(a.client_token, "tok-od-1"));
  snprintf(od_id, sizeof od_id, "%s", a.id);

  req = launch_req(sp, "tok-spot-1", "job-spot");
  req.max_price_uusd_per_hour = 50000;
  TW_CHECK_RC(tw_provider_launch(p, &req, &b, &err), TW_OK, err);
  TW_CHECK(b.market == TW_MARKET_SPOT && !strcmp(b.zone, "us-east-1b"));
  snprintf(spot_id, sizeof spot_id, "%s", b.id);

  /* What the fake holds: tags, token, market and the spot price cap. */
  json_t *fi = fake_instance(b.id);
  json_t *tags = json_object_get(fi, "tags");
  TW_CHECK(!strcmp(js(tags, "tradewind:job"), "job-spot"));
  TW_CHECK(!strcmp(js(tags, "tradewind:attempt"), "att-1"));
  TW_CHECK(!strcmp(js(tags, "tradewind:tenant"), "physics"));
  TW_CHECK(!strcmp(js(fi, "lifecycle"), "spot"));
  TW_CHECK(!strcmp(js(fi, "client_token"), "tok-spot-1"));
  TW_CHECK(!strcmp(js(json_object_get(fi, "spot"), "max_price"), "0.050000"));
  json_decref(fi);

  /* The same token again buys nothing. */
  long runs = calls_of("RunInstances");
  req = launch_req(od, "tok-od-1", "job-od");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(!strcmp(d.id, od_id));
  TW_CHECK(calls_of("RunInstances") == runs + 1);
  TW_CHECK(instances_with_token("tok-od-1") == 1);

  /* Pending until the fake's clock passes its pending time. */
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_PENDING);
  twtest_fake_advance(6000);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_RUNNING && !strcmp(d.provider_state, "running"));
  TW_CHECK(!strcmp(d.job_id, "job-od") && !strcmp(d.tenant, "physics"));
  TW_CHECK(!strcmp(d.instance_type, "m5.large") &&
           !strcmp(d.region, "us-east-1"));
  TW_CHECK(d.launched_ms > 0);

  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  bool seen_od = false, seen_spot = false;
  for (size_t i = 0; i < l.n; i++) {
    seen_od |=
        !strcmp(l.items[i].id, od_id) && !strcmp(l.items[i].job_id, "job-od");
    seen_spot |= !strcmp(l.items[i].id, spot_id) &&
                 l.items[i].market == TW_MARKET_SPOT &&
                 l.items[i].state == TW_INST_RUNNING;
  }
  TW_CHECK(seen_od && seen_spot);
  tw_instance_list_release(&l);
}

/* Many instances described at once: one DescribeInstances for the lot;
 * an id EC2 does not know fails its batch as a whole, which is split
 * until that id is alone and asked about by itself, and answered
 * NotFound while the others are answered as found. */
static void describe_many_batches(void **state) {
  struct tw_provider *p = *state;
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1a", TW_MARKET_ON_DEMAND);
  if (!od)
    return;
  struct tw_err err = {0};
  char ids[3][TW_MODEL_ID_MAX];
  for (int i = 0; i < 3; i++) {
    char tok[32], job[32];
    snprintf(tok, sizeof tok, "tok-many-%d", i);
    snprintf(job, sizeof job, "job-many-%d", i);
    struct tw_launch req = launch_req(od, tok, job);
    struct tw_instance a;
    TW_CHECK_RC(tw_provider_launch(p, &req, &a, &err), TW_OK, err);
    snprintf(ids[i], sizeof ids[i], "%s", a.id);
  }
  const char *all[4] = {ids[0], ids[1], ids[2], "i-0123456789abcdef0"};
  struct tw_instance out[4];
  enum tw_rc rc[4];
  long before = calls_of("DescribeInstances");
  TW_CHECK_RC(tw_provider_describe_many(p, all, 3, out, rc, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeInstances") == before + 1, "%ld calls",
           calls_of("DescribeInstances") - before);
  for (int i = 0; i < 3; i++) {
    TW_CHECK(rc[i] == TW_OK && !strcmp(out[i].id, ids[i]));
    char job[32];
    snprintf(job, sizeof job, "job-many-%d", i);
    TW_CHECK(!strcmp(out[i].job_id, job) &&
             !strcmp(out[i].region, "us-east-1"));
    TW_CHECK(out[i].state == TW_INST_PENDING ||
             out[i].state == TW_INST_RUNNING);
  }
  /* with an id EC2 does not know: 4 -> 2 + 2 (one fails) -> 1 + 1 (one
   * fails, alone) -> that one described alone: 6 calls */
  before = calls_of("DescribeInstances");
  TW_CHECK_RC(tw_provider_describe_many(p, all, 4, out, rc, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeInstances") == before + 6, "%ld calls",
           calls_of("DescribeInstances") - before);
  for (int i = 0; i < 3; i++)
    TW_CHECK(rc[i] == TW_OK && !strcmp(out[i].id, ids[i]));
  TW_CHECK(rc[3] == TW_E_NOTFOUND);
  /* the same answers as one describe each */
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, ids[1], &d, &err), TW_OK, err);
  TW_CHECK(d.state == out[1].state && !strcmp(d.job_id, out[1].job_id));
  for (int i = 0; i < 3; i++)
    TW_CHECK_RC(tw_provider_terminate(p, ids[i], &err), TW_OK, err);
}

static void spot_notices(void **state) {
  struct tw_provider *p = *state;
  struct tw_err err = {0};
  struct tw_event_list ev;
  tw_event_list_init(&ev);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  tw_event_list_release(&ev);

  char path[256];
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/interrupt", spot_id);
  json_t *n = twtest_fake_ctl("POST", path, "{\"lead_ms\": 120000}");
  int64_t deadline = 0;
  tw_time_parse_rfc3339(js(n, "time"), &deadline);
  json_decref(n);
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/rebalance", spot_id);
  twtest_fake_ctl_ok("POST", path, "{}");

  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 2);
  for (size_t i = 0; i < ev.n; i++) {
    TW_CHECK(!strcmp(ev.items[i].instance_id, spot_id));
    if (ev.items[i].kind == TW_EVENT_INTERRUPTION) {
      TW_CHECK(!strcmp(ev.items[i].action, "terminate"));
      TW_CHECK(deadline > 0 && ev.items[i].deadline_ms == deadline);
      TW_CHECK(ev.items[i].noticed_ms == deadline - 120000);
    } else {
      TW_CHECK(ev.items[i].kind == TW_EVENT_REBALANCE);
      TW_CHECK(ev.items[i].noticed_ms > 0);
    }
  }
  /* Stable from poll to poll, so the monitor can dedup. */
  struct tw_event_list again;
  tw_event_list_init(&again);
  TW_CHECK_RC(tw_provider_poll_events(p, &again, &err), TW_OK, err);
  TW_CHECK(again.n == ev.n);
  for (size_t i = 0; i < again.n && i < ev.n; i++)
    TW_CHECK(again.items[i].noticed_ms == ev.items[i].noticed_ms);
  tw_event_list_release(&again);
  tw_event_list_release(&ev);

  /* Two minutes on, EC2 has taken the instance back. */
  twtest_fake_advance(125000);
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_describe(p, spot_id, &d, &err), TW_OK, err);
  TW_CHECK(tw_instance_state_gone(d.state));
  TW_CHECK(!strcmp(d.state_reason, "Server.SpotInstanceTermination"));
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  tw_event_list_release(&ev);
}

/* notice_source spot-requests (the default without metadata_url): one
 * DescribeSpotInstanceRequests per region and page, whatever the number
 * of live spot instances, answering only the marked ones. */
static void spot_request_notices(void **state) {
  (void)state;
  const struct tw_offer *sp =
      find_offer(&offers, "m5.large", "us-east-1b", TW_MARKET_SPOT);
  if (!sp)
    return;
  struct tw_provider *p =
      provider_on("TW_TEST_AWS_AK", "TW_TEST_AWS_SK", false, "page_size: 5\n");
  struct tw_err err = {0};
  enum { N = 8 };
  char id[N][TW_MODEL_ID_MAX];
  for (int i = 0; i < N; i++) {
    char tok[32], job[32];
    snprintf(tok, sizeof tok, "tok-sirn-%d", i);
    snprintf(job, sizeof job, "job-sirn-%d", i);
    struct tw_launch req = launch_req(sp, tok, job);
    req.max_price_uusd_per_hour = 50000;
    struct tw_instance b;
    TW_CHECK_RC(tw_provider_launch(p, &req, &b, &err), TW_OK, err);
    snprintf(id[i], sizeof id[i], "%s", b.id);
  }
  struct tw_event_list ev;
  tw_event_list_init(&ev);
  long sirs = calls_of("DescribeSpotInstanceRequests");
  long dis = calls_of("DescribeInstances");
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0, "%zu events before any notice", ev.n);
  TW_CHECK(calls_of("DescribeSpotInstanceRequests") == sirs + 1);
  TW_CHECK(calls_of("DescribeInstances") == dis, "no per-instance listing");

  /* Six notices (one a stop): two pages of five at most. */
  int64_t noticed[N] = {0};
  for (int i = 0; i < 6; i++) {
    char path[N * TW_MODEL_ID_MAX + 64];
    snprintf(path, sizeof path, "/_fake/ec2/instances/%s/interrupt", id[i]);
    json_t *n = twtest_fake_ctl("POST", path,
                                i == 3 ? "{\"lead_ms\": 120000, \"action\": "
                                         "\"stop\"}"
                                       : "{\"lead_ms\": 120000}");
    TW_CHECK(!tw_time_parse_rfc3339(js(n, "notice_time"), &noticed[i]));
    json_decref(n);
  }
  /* a rebalance recommendation is not in the spot request's status */
  char path[N * TW_MODEL_ID_MAX + 64];
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/rebalance", id[7]);
  twtest_fake_ctl_ok("POST", path, "{}");
  sirs = calls_of("DescribeSpotInstanceRequests");
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeSpotInstanceRequests") == sirs + 2, "%ld calls",
           calls_of("DescribeSpotInstanceRequests") - sirs);
  TW_CHECK(calls_of("DescribeInstances") == dis);
  TW_CHECK(ev.n == 6, "%zu events", ev.n);
  for (int i = 0; i < N; i++) {
    int seen = 0;
    for (size_t k = 0; k < ev.n; k++) {
      const struct tw_event *e = &ev.items[k];
      if (strcmp(e->instance_id, id[i]))
        continue;
      seen++;
      TW_CHECK(e->kind == TW_EVENT_INTERRUPTION);
      TW_CHECK(!strcmp(e->action, i == 3 ? "stop" : "terminate"), "%s",
               e->action);
      /* updateTime is whole seconds */
      TW_CHECK(e->noticed_ms == noticed[i] / 1000 * 1000, "%lld vs %lld",
               (long long)e->noticed_ms, (long long)noticed[i]);
      TW_CHECK(e->deadline_ms == e->noticed_ms + 120000);
    }
    TW_CHECK(seen == (i < 6), "%s seen %d times", id[i], seen);
  }
  /* Stable from poll to poll. */
  struct tw_event_list again;
  tw_event_list_init(&again);
  TW_CHECK_RC(tw_provider_poll_events(p, &again, &err), TW_OK, err);
  TW_CHECK(again.n == ev.n);
  for (size_t i = 0; i < again.n && i < ev.n; i++)
    TW_CHECK(!strcmp(again.items[i].instance_id, ev.items[i].instance_id) &&
             again.items[i].noticed_ms == ev.items[i].noticed_ms);
  tw_event_list_release(&again);
  tw_event_list_release(&ev);

  /* Ended by the user: the request closes, no notice is left in force. */
  for (int i = 0; i < N; i++)
    TW_CHECK_RC(tw_provider_terminate(p, id[i], &err), TW_OK, err);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0, "%zu events after terminate", ev.n);
  tw_event_list_release(&ev);

  /* notice_source is checked */
  struct tw_node *cfg = NULL;
  struct tw_provider *bad = NULL;
  const char *doc = "name: aws-bad\ntype: aws\nregions: [us-east-1]\n"
                    "access_key: AKIDX\nsecret_key: x\n"
                    "notice_source: metadata\n";
  TW_CHECK_RC(tw_node_parse_yaml(doc, strlen(doc), &cfg, &err), TW_OK, err);
  memset(&err, 0, sizeof err);
  TW_CHECK(tw_provider_new(tw_adapters, cfg, NULL, &bad, &err) ==
           TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "notice_source") != NULL, "%s", err.msg);
  tw_node_free(cfg);
  tw_provider_free(bad);
  tw_provider_free(p);
}

static void terminate(void **state) {
  struct tw_provider *p = *state;
  struct tw_err err = {0};
  struct tw_instance d;
  TW_CHECK_RC(tw_provider_terminate(p, od_id, &err), TW_OK, err);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(tw_instance_state_gone(d.state));
  /* Again: still fine. */
  TW_CHECK_RC(tw_provider_terminate(p, od_id, &err), TW_OK, err);
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, "i-0123456789abcdef0", &d, &err),
              TW_E_NOTFOUND, err);
  TW_CHECK(!strcmp(err.detail, "InvalidInstanceID.NotFound"));
}

static void error_classes(void **state) {
  struct tw_provider *p = *state;
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1c", TW_MARKET_ON_DEMAND);
  const struct tw_offer *sp =
      find_offer(&offers, "m5.large", "us-east-1c", TW_MARKET_SPOT);
  if (!od || !sp)
    return;
  struct tw_instance d;
  struct tw_err err = {0};
  struct tw_launch req;

  /* Capacity: not retried (one RunInstances), class capacity. */
  twtest_fake_add_fault("{\"kind\": \"capacity\", \"count\": 1}");
  long runs = calls_of("RunInstances");
  req = launch_req(od, "tok-cap", "job-cap");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CAPACITY, err);
  TW_CHECK(!strcmp(err.detail, "InsufficientInstanceCapacity"));
  TW_CHECK(calls_of("RunInstances") == runs + 1);
  TW_CHECK(instances_with_token("tok-cap") == 0);
  twtest_fake_clear_faults();

  /* Quota, on demand and spot. */
  twtest_fake_add_fault("{\"kind\": \"quota\", \"count\": 2}");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_QUOTA, err);
  TW_CHECK(!strcmp(err.detail, "VcpuLimitExceeded"));
  memset(&err, 0, sizeof err);
  req = launch_req(sp, "tok-quota-spot", "job-q");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_QUOTA, err);
  TW_CHECK(!strcmp(err.detail, "MaxSpotInstanceCountExceeded"));
  twtest_fake_clear_faults();

  /* Spot price cap below the market: capacity (try elsewhere). */
  memset(&err, 0, sizeof err);
  req = launch_req(sp, "tok-lowball", "job-q");
  req.max_price_uusd_per_hour = 1;
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_CAPACITY, err);
  TW_CHECK(!strcmp(err.detail, "SpotMaxPriceTooLow"));

  /* Throttled twice, then served: retried by the http helper. */
  twtest_fake_add_fault(
      "{\"kind\": \"throttle\", \"action\": \"DescribeInstances\", "
      "\"count\": 2}");
  long desc = calls_of("DescribeInstances");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeInstances") == desc + 3);
  twtest_fake_clear_faults();

  /* Throttled on every attempt: retryable once attempts run out (4). */
  twtest_fake_add_fault(
      "{\"kind\": \"throttle\", \"action\": \"DescribeInstances\"}");
  desc = calls_of("DescribeInstances");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_E_RETRYABLE, err);
  TW_CHECK(!strcmp(err.detail, "RequestLimitExceeded"));
  TW_CHECK(calls_of("DescribeInstances") == desc + 4);
  twtest_fake_clear_faults();

  /* A server fault once: retried, then served. */
  twtest_fake_add_fault(
      "{\"kind\": \"error\", \"action\": \"DescribeInstances\", "
      "\"status\": 500, \"code\": \"InternalError\", \"count\": 1}");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_describe(p, od_id, &d, &err), TW_OK, err);
  twtest_fake_clear_faults();

  /* Invalid: a type the region does not have; a malformed id. */
  struct tw_offer bogus = *od;
  TW_SET(bogus.instance_type, "m5.nonexistent");
  TW_SET(bogus.id, "");
  req = launch_req(&bogus, "tok-bogus", "job-b");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_INVALID, err);
  TW_CHECK(err.detail[0] != '\0');
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_terminate(p, "not-an-id", &err), TW_E_INVALID, err);

  /* Auth: a wrong secret, and an unknown access key. */
  setenv("TW_TEST_AWS_SK_BAD", "not-the-secret", 1);
  struct tw_provider *bad =
      provider_as("TW_TEST_AWS_AK", "TW_TEST_AWS_SK_BAD", NULL);
  if (bad) {
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_list_managed(bad, &l, &err), TW_E_AUTH, err);
    TW_CHECK(!strcmp(err.detail, "SignatureDoesNotMatch"));
    tw_instance_list_release(&l);
    tw_provider_free(bad);
  }
  setenv("TW_TEST_AWS_AK_BAD", "AKIDNOBODYKNOWS", 1);
  bad = provider_as("TW_TEST_AWS_AK_BAD", "TW_TEST_AWS_SK", NULL);
  if (bad) {
    memset(&err, 0, sizeof err);
    TW_CHECK_RC(tw_provider_describe(bad, od_id, &d, &err), TW_E_AUTH, err);
    TW_CHECK(!strcmp(err.detail, "AuthFailure"));
    tw_provider_free(bad);
  }
}

/* A launch whose answer arrives after the client gave up: the retry
 * carries the same client token, so exactly one instance exists. */
static void timeout_then_retry_buys_once(void **state) {
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1d", TW_MARKET_ON_DEMAND);
  if (!od)
    return;
  struct tw_err err = {0};
  struct tw_instance d;

  /* Retried inside the http helper. */
  struct tw_provider *p = provider("timeout_ms: 400\n");
  twtest_fake_add_fault("{\"kind\": \"slow\", \"action\": \"RunInstances\", "
                        "\"delay_ms\": 1500, \"count\": 1}");
  struct tw_launch req = launch_req(od, "tok-slow-1", "job-slow");
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(instances_with_token("tok-slow-1") == 1);
  twtest_fake_clear_faults();
  tw_provider_free(p);

  /* Retried by the caller after the provider call itself timed out. */
  p = provider("timeout_ms: 400\nmax_attempts: 1\n");
  twtest_fake_add_fault("{\"kind\": \"slow\", \"action\": \"RunInstances\", "
                        "\"delay_ms\": 1500, \"count\": 1}");
  req = launch_req(od, "tok-slow-2", "job-slow2");
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_E_RETRYABLE, err);
  TW_CHECK(instances_with_token("tok-slow-2") == 1); /* bought, answer lost */
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(instances_with_token("tok-slow-2") == 1);
  TW_CHECK(!strcmp(d.job_id, "job-slow2"));
  twtest_fake_clear_faults();
  tw_provider_free(p);
}

/* A try that times out, a retry refused for capacity, then the first try
 * acted on after all (the fake's `late` fault: EC2 took the request in
 * and ran it after the client gave up).  The refusal came after an
 * unanswered try, so it says nothing of what that try did: the launch's
 * outcome is unknown (TW_E_RETRYABLE, settled by its token), never a
 * definite capacity refusal that would close the attempt while its
 * instance comes up. */
static void refusal_after_an_unanswered_try_is_no_refusal(void **state) {
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1d", TW_MARKET_ON_DEMAND);
  if (!od)
    return;
  struct tw_err err = {0};
  struct tw_instance d;
  struct tw_provider *p = provider("timeout_ms: 400\nmax_attempts: 2\n");
  twtest_fake_add_fault("{\"kind\": \"late\", \"action\": \"RunInstances\", "
                        "\"delay_ms\": 1500, \"count\": 1}");
  twtest_fake_add_fault("{\"kind\": \"capacity\", \"instance_type\": "
                        "\"m5.large\", \"count\": 1}");
  struct tw_launch req = launch_req(od, "tok-late-1", "job-late");
  enum tw_rc rc = tw_provider_launch(p, &req, &d, &err);
  TW_CHECK(rc == TW_E_RETRYABLE,
           "a capacity refusal after an unanswered try: rc %s (%s)",
           tw_rc_str(rc), err.msg);
  TW_CHECK(strstr(err.msg, "unanswered"), "%s", err.msg);
  /* the first try is acted on once its delay has passed */
  size_t n = 0;
  for (int i = 0; i < 40 && (n = instances_with_token("tok-late-1")) == 0; i++)
    usleep(100 * 1000);
  TW_CHECK(n == 1, "the late try made %zu instances", n);
  /* and asking with the token finds it: one instance, this job's */
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &d, &err), TW_OK, err);
  TW_CHECK(instances_with_token("tok-late-1") == 1);
  TW_CHECK(!strcmp(d.job_id, "job-late"));
  twtest_fake_clear_faults();
  tw_provider_free(p);
}

/* The fake's clock an hour ahead of ours: the first call is refused as
 * expired, the adapter learns the offset from Date and signs again. */
static void clock_skew_is_corrected(void **state) {
  struct tw_provider *p = *state;
  twtest_fake_advance(3600 * 1000);
  struct tw_err err = {0};
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK(l.n >= 2);
  tw_instance_list_release(&l);
}

/* Paging: DescribeInstances and spot history in small pages. */
static void paging(void **state) {
  struct tw_provider *p = provider("page_size: 5\nspot_history_s: 86400\n");
  const struct tw_offer *od =
      find_offer(&offers, "m5.large", "us-east-1e", TW_MARKET_ON_DEMAND);
  if (!p || !od)
    return;
  struct tw_err err = {0};
  struct tw_instance d;
  for (int i = 0; i < 7; i++) {
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
  int pages_seen = 0;
  for (size_t i = 0; i < l.n; i++)
    pages_seen += !strncmp(l.items[i].job_id, "job-page-", 9);
  TW_CHECK(pages_seen == 7);
  /* Pages of 5: one call per page (maybe one more for an empty last
   * page), never one call for everything. */
  long used = calls_of("DescribeInstances") - desc;
  TW_CHECK(used >= 2 && (size_t)used >= (l.n + 4) / 5 &&
           (size_t)used <= l.n / 5 + 1);
  /* No instance twice. */
  for (size_t i = 0; i < l.n; i++)
    for (size_t j = i + 1; j < l.n; j++)
      TW_CHECK(strcmp(l.items[i].id, l.items[j].id));
  tw_instance_list_release(&l);

  long hist = calls_of("DescribeSpotPriceHistory");
  struct tw_offer_list ol;
  tw_offer_list_init(&ol);
  TW_CHECK_RC(tw_provider_list_offers(p, &ol, &err), TW_OK, err);
  TW_CHECK(calls_of("DescribeSpotPriceHistory") - hist > 1);
  const struct tw_offer *sp =
      find_offer(&ol, "m5.large", "us-east-1a", TW_MARKET_SPOT);
  TW_CHECK(sp && sp->price_uusd_per_hour == 41234); /* still the newest */
  tw_offer_list_release(&ol);
  tw_provider_free(p);

  /* A bound on pages is an error, not a silent cut. */
  p = provider("page_size: 5\nspot_history_s: 86400\nmax_pages: 1\n");
  tw_offer_list_init(&ol);
  memset(&err, 0, sizeof err);
  TW_CHECK_RC(tw_provider_list_offers(p, &ol, &err), TW_E_TOOBIG, err);
  TW_CHECK(ol.n == 0);
  tw_offer_list_release(&ol);
  tw_provider_free(p);
}

/* Every launch so far was counted, failures too. */
static void launch_stats(void **state) {
  struct tw_provider *p = *state;
  struct tw_provider_stats st;
  tw_provider_stats(p, TW_POP_LAUNCH, &st);
  TW_CHECK(st.calls >= 8 && st.failures >= 5, "%llu calls, %llu failures",
           (unsigned long long)st.calls, (unsigned long long)st.failures);
}

/* The fake as a subprocess and one adapter over it, for the group. */
static int setup(void **state) {
  tw_log_set_level(TW_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!start_fake())
    return -1;
  setenv("TW_TEST_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_TEST_AWS_SK", "tradewind-fake-secret", 1);
  *state = provider(NULL);
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  tw_offer_list_release(&offers);
  tw_provider_free(*state);
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
      cmocka_unit_test(offers_from_the_fake),
      cmocka_unit_test(launch_describe_list_terminate),
      cmocka_unit_test(describe_many_batches),
      cmocka_unit_test(spot_notices),
      cmocka_unit_test(spot_request_notices),
      cmocka_unit_test(error_classes),
      cmocka_unit_test(terminate),
      cmocka_unit_test(timeout_then_retry_buys_once),
      cmocka_unit_test(refusal_after_an_unanswered_try_is_no_refusal),
      cmocka_unit_test(paging),
      cmocka_unit_test(clock_skew_is_corrected),
      cmocka_unit_test(launch_stats),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
