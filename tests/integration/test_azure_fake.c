/* test_azure_fake.c - the Azure adapter against tradewind-fakecloud.
 *
 * Makes a throwaway certificate, starts the fake as a subprocess serving
 * HTTPS with its clock frozen, then drives the adapter through the generic
 * layer: offers (Resource SKUs and Retail Prices, paged), on-demand and
 * Spot launches through the long-running operation, describe, Scheduled
 * Events, terminate, listing by tag, and every error class provoked by the
 * fake's fault injection, both synchronous and in failed operations.  The
 * adapter's waits move the fake's clock (and the adapter's own) through
 * the control API instead of sleeping.  /_fake/azure/state is the witness:
 * which VMs exist, with which tags, and how many calls each action got. */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/azure/azure.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakecloud/azure_cert.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/integration/twtest_fakecloud.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

/* The fake's clock starts here; the adapter's fake clock follows it. */
#define START "2026-06-15T00:00:00Z"
#define START_MS 1781481600000LL

static char tmp_dir[] = "/tmp/tw-azure-XXXXXX";
static char cert[256], key[256];
static struct tw_clock clk;
static int64_t slept_ms;

/* ---- the fake as a subprocess ------------------------------------------ */

static bool start_fake(void) {
  twtest_fake_set_cainfo(cert);
  if (!twtest_fake_start((const char *[]){"--start-time", START, "--pending-ms",
                                          "5000", "--tls-cert", cert,
                                          "--tls-key", key, NULL}))
    return false;
  if (strncmp(twtest_fake_url, "https://", 8)) {
    fprintf(stderr, "fakecloud did not start over https: \"%s\"\n",
            twtest_fake_url);
    twtest_fake_stop();
    return false;
  }
  return true;
}

static void fault(const char *rule) {
  twtest_fake_clear_faults();
  if (rule)
    twtest_fake_add_fault(rule);
}

static void advance(int64_t ms) {
  twtest_fake_advance(ms);
  tw_clock_advance(&clk, ms);
}

/* The adapter's waits: Retry-After between polls, backoff between
 * retries.  Both clocks move, nothing sleeps. */
static void fake_sleep(void *ctx, int64_t ms) {
  slept_ms += ms;
  if (ms > 0)
    advance(ms);
}

static int64_t calls(const char *action) {
  return twtest_fake_calls("/_fake/azure/state", action);
}

/* The fake's view of one VM (json_decref it), NULL when gone. */
static json_t *fake_vm(const char *name) {
  json_t *s = twtest_fake_ctl("GET", "/_fake/azure/state", NULL);
  json_t *vms = json_object_get(s, "vms"), *v, *found = NULL;
  size_t i;
  json_array_foreach(vms, i, v) {
    if (!strcmp(json_string_value(json_object_get(v, "name")), name))
      found = json_incref(v);
  }
  json_decref(s);
  return found;
}

static size_t fake_vm_count(void) {
  json_t *s = twtest_fake_ctl("GET", "/_fake/azure/state", NULL);
  size_t n = json_array_size(json_object_get(s, "vms"));
  json_decref(s);
  return n;
}

/* ---- the adapter --------------------------------------------------------- */

static struct tw_provider *provider(const char *extra, const char *secret,
                                    struct tw_err *err) {
  setenv("TW_TEST_AZURE_SECRET", secret, 1);
  bool own_events = extra && strstr(extra, "scheduled_events_url");
  struct tw_buf y;
  tw_buf_init(&y);
  tw_buf_printf(&y,
                "type: azure\n"
                "name: azure-test\n"
                "tenant_id: " FC_AZ_TENANT "\n"
                "client_id: " FC_AZ_CLIENT_ID "\n"
                "client_secret_env: TW_TEST_AZURE_SECRET\n"
                "subscription_id: " FC_AZ_SUBSCRIPTION "\n"
                "resource_group: " FC_AZ_RESOURCE_GROUP "\n"
                "regions: [eastus, westus2]\n"
                "authority: %s\n"
                "management_endpoint: %s\n"
                "prices_url: %s/api/retail/prices\n"
                "%s%s%s"
                "ca_file: %s\n"
                "image: Canonical:ubuntu-24_04-lts:server:latest\n"
                "ssh_public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake\n"
                "subnet_id: /subscriptions/" FC_AZ_SUBSCRIPTION
                "/resourceGroups/tradewind/providers/Microsoft.Network/"
                "virtualNetworks/vnet/subnets/default\n"
                "backoff_base_ms: 50\n"
                "%s",
                twtest_fake_url, twtest_fake_url, twtest_fake_url,
                own_events ? "" : "scheduled_events_url: ",
                own_events ? "" : twtest_fake_url,
                own_events ? ""
                           : "/metadata/scheduledevents"
                             "?api-version=2020-07-01\n",
                cert, extra ? extra : "");
  struct tw_node *cfg = NULL;
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(y.data, y.len, &cfg, err) == TW_OK &&
      tw_provider_new(tw_adapters, cfg, &clk, &p, err) == TW_OK)
    tw_azure_set_sleep(p, fake_sleep, NULL);
  tw_node_free(cfg);
  tw_buf_release(&y);
  return p;
}

static struct tw_offer offer(const char *region, const char *zone,
                             const char *type, enum tw_market m) {
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.account, "azure-test");
  TW_SET(o.region, region);
  TW_SET(o.zone, zone);
  TW_SET(o.instance_type, type);
  o.market = m;
  o.vcpus = 2;
  return o;
}

static enum tw_rc launch(struct tw_provider *p, const struct tw_offer *o,
                         const char *token, const char *attempt,
                         int64_t max_uusd, struct tw_instance *out,
                         struct tw_err *err) {
  struct tw_launch req = {.offer = o,
                          .client_token = token,
                          .job_id = "job-1",
                          .attempt_id = attempt,
                          .tenant = "acme",
                          .max_price_uusd_per_hour = max_uusd};
  tw_err_clear(err);
  return tw_provider_launch(p, &req, out, err);
}

/* ---- scenarios ----------------------------------------------------------- */

static const struct tw_offer *find_offer(const struct tw_offer_list *l,
                                         const char *region, const char *type,
                                         enum tw_market m) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].region, region) &&
        !strcmp(l->items[i].instance_type, type) && l->items[i].market == m)
      return &l->items[i];
  return NULL;
}

static void offers(void **state) {
  struct tw_provider *p = *state;
  struct tw_err err = {0};
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  /* Small pages, so nextLink and NextPageLink are followed. */
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"page_size\":7}");
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  /* 10 sizes x 2 markets x 2 regions, all with both prices. */
  TW_CHECK(l.n == 40);
  const struct tw_offer *o =
      find_offer(&l, "eastus", "Standard_D2s_v5", TW_MARKET_ON_DEMAND);
  TW_CHECK(o && o->price_uusd_per_hour == 96000 && o->vcpus == 2 &&
           o->memory_mib == 8192 && !o->zone[0] && o->arch == TW_ARCH_X86_64);
  o = find_offer(&l, "eastus", "Standard_D2s_v5", TW_MARKET_SPOT);
  TW_CHECK(o && o->price_uusd_per_hour == 20362);
  o = find_offer(&l, "westus2", "Standard_NC24ads_A100_v4", TW_MARKET_SPOT);
  TW_CHECK(o && o->price_uusd_per_hour == 1298406 && o->accel_count == 1 &&
           !strcmp(o->accel_name, "A100-80GB"));
  o = find_offer(&l, "eastus", "Standard_D2ps_v5", TW_MARKET_ON_DEMAND);
  TW_CHECK(o && o->arch == TW_ARCH_ARM64);
  TW_CHECK(o &&
           !strcmp(o->id, "azure-test:eastus::Standard_D2ps_v5:on-demand"));
  /* Prices are cached per region: a second listing reads SKUs again but
   * not the price pages. */
  int64_t before = calls("RetailPrices");
  /* 40 Linux and Windows Consumption rows a region: 6 pages of 7. */
  TW_CHECK(before == 12);
  tw_offer_list_release(&l);
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  TW_CHECK(l.n == 40 && calls("RetailPrices") == before);
  tw_offer_list_release(&l);
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"page_size\":100}");
}

static void zonal_offers(void **state) {
  struct tw_err err = {0};
  struct tw_provider *p =
      provider("zonal: true\ninstance_types: [Standard_D2s_v5]\n",
               FC_AZ_CLIENT_SECRET, &err);
  TW_CHECK(p != NULL);
  if (!p)
    return;
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  TW_CHECK_RC(tw_provider_list_offers(p, &l, &err), TW_OK, err);
  TW_CHECK(l.n == 12); /* 3 zones x 2 markets x 2 regions */
  TW_CHECK(l.n && !strcmp(l.items[0].zone, "1"));
  tw_offer_list_release(&l);
  tw_provider_free(p);
}

static void launches(void **state) {
  struct tw_provider *p = *state;
  struct tw_err err = {0};
  struct tw_instance od, sp, d;
  struct tw_offer o1 =
      offer("eastus", "", "Standard_D2s_v5", TW_MARKET_ON_DEMAND);
  struct tw_offer o2 = offer("westus2", "", "Standard_D4s_v5", TW_MARKET_SPOT);

  int64_t slept = slept_ms;
  TW_CHECK_RC(launch(p, &o1, "tok-od-1", "att-od", 0, &od, &err), TW_OK, err);
  /* The create took 5 s of fake time, waited in Retry-After steps. */
  TW_CHECK(slept_ms - slept >= 5000);
  TW_CHECK(od.state == TW_INST_RUNNING);
  char name[64];
  tw_azure_vm_name("tw-", "tok-od-1", name, sizeof name);
  TW_CHECK(!strcmp(od.id, name));
  TW_CHECK(od.market == TW_MARKET_ON_DEMAND && !strcmp(od.region, "eastus"));
  TW_CHECK(!strcmp(od.job_id, "job-1") && !strcmp(od.attempt_id, "att-od") &&
           !strcmp(od.tenant, "acme") && !strcmp(od.client_token, "tok-od-1"));
  json_t *v = fake_vm(od.id);
  TW_CHECK(v && !strcmp(json_string_value(json_object_get(v, "priority")),
                        "Regular"));
  TW_CHECK(v && !strcmp(json_string_value(json_object_get(
                            json_object_get(v, "tags"), "tradewind:tenant")),
                        "acme"));
  json_decref(v);

  TW_CHECK_RC(launch(p, &o2, "tok-spot-1", "att-spot", 75678, &sp, &err), TW_OK,
              err);
  TW_CHECK(sp.market == TW_MARKET_SPOT && sp.state == TW_INST_RUNNING);
  v = fake_vm(sp.id);
  /* maxPrice takes five decimals: 0.075678 is cut to 0.07567. */
  TW_CHECK(v &&
           json_integer_value(json_object_get(v, "max_price_uusd")) == 75670);
  TW_CHECK(v &&
           !strcmp(json_string_value(json_object_get(v, "eviction_policy")),
                   "Delete"));
  json_decref(v);

  TW_CHECK_RC(tw_provider_describe(p, od.id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_RUNNING &&
           !strcmp(d.provider_state, "Succeeded/running"));
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_describe(p, "tw-nosuchvm", &d, &err), TW_E_NOTFOUND,
              err);
  TW_CHECK(!strcmp(err.detail, "ResourceNotFound"));

  /* Listing by tag, one resource a page. */
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"page_size\":1}");
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  TW_CHECK(l.n == 2);
  for (size_t i = 0; i < l.n; i++)
    TW_CHECK(!strcmp(l.items[i].job_id, "job-1") &&
             l.items[i].state == TW_INST_RUNNING);
  tw_instance_list_release(&l);
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"page_size\":100}");

  /* Eviction: the Preempt notice, at least 30 s ahead. */
  struct tw_event_list ev;
  tw_event_list_init(&ev);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 0);
  char path[160];
  snprintf(path, sizeof path, "/_fake/azure/vms/%s/evict", sp.id);
  twtest_fake_ctl_ok("POST", path, "{\"lead_ms\":30000}");
  int64_t noticed = tw_clock_now_ms(&clk);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev, &err), TW_OK, err);
  TW_CHECK(ev.n == 1);
  if (ev.n == 1) {
    TW_CHECK(ev.items[0].kind == TW_EVENT_INTERRUPTION);
    TW_CHECK(!strcmp(ev.items[0].instance_id, sp.id));
    TW_CHECK(!strcmp(ev.items[0].action, "terminate"));
    /* NotBefore has whole seconds. */
    TW_CHECK(ev.items[0].deadline_ms / 1000 == (noticed + 30000) / 1000);
    TW_CHECK(ev.items[0].noticed_ms == ev.items[0].deadline_ms - 30000);
  }
  /* Still in force on the next poll, with the same times. */
  struct tw_event_list ev2;
  tw_event_list_init(&ev2);
  advance(10000);
  TW_CHECK_RC(tw_provider_poll_events(p, &ev2, &err), TW_OK, err);
  TW_CHECK(ev2.n == 1 && ev.n == 1 &&
           ev2.items[0].noticed_ms == ev.items[0].noticed_ms);
  tw_event_list_release(&ev);
  tw_event_list_release(&ev2);
  /* A per-VM relay ({name} in the URL): asked for each live Spot VM. */
  struct tw_buf extra;
  tw_buf_init(&extra);
  tw_buf_printf(&extra,
                "scheduled_events_url: %s/_fake/azure/vms/{name}/"
                "scheduledevents\n",
                twtest_fake_url);
  struct tw_provider *relay = provider(extra.data, FC_AZ_CLIENT_SECRET, &err);
  tw_buf_release(&extra);
  TW_CHECK(relay != NULL);
  if (relay) {
    tw_event_list_init(&ev);
    TW_CHECK_RC(tw_provider_poll_events(relay, &ev, &err), TW_OK, err);
    TW_CHECK(ev.n == 1 && !strcmp(ev.items[0].instance_id, sp.id));
    tw_event_list_release(&ev);
    tw_provider_free(relay);
  }
  advance(21000); /* evicted: Delete policy */
  TW_CHECK_RC(tw_provider_describe(p, sp.id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_SHUTTING_DOWN);
  advance(3000);
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_describe(p, sp.id, &d, &err), TW_E_NOTFOUND, err);

  /* Terminate: accepted, Deleting, then gone; idempotent throughout. */
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_terminate(p, od.id, &err), TW_OK, err);
  TW_CHECK_RC(tw_provider_describe(p, od.id, &d, &err), TW_OK, err);
  TW_CHECK(d.state == TW_INST_SHUTTING_DOWN);
  TW_CHECK_RC(tw_provider_terminate(p, od.id, &err), TW_OK, err);
  advance(3000);
  TW_CHECK_RC(tw_provider_terminate(p, od.id, &err), TW_OK, err);
  TW_CHECK(fake_vm_count() == 0);
}

/* A launch must fail with want, the provider's code in detail, and leave
 * no VM running. */
static void launch_fails(struct tw_provider *p, const struct tw_offer *o,
                         const char *rule, enum tw_rc want, const char *detail,
                         int64_t max_uusd) {
  static int n;
  char token[32];
  snprintf(token, sizeof token, "tok-fail-%d", ++n);
  struct tw_err err = {0};
  struct tw_instance in;
  fault(rule);
  TW_CHECK_RC(launch(p, o, token, "att-f", max_uusd, &in, &err), want, err);
  if (strcmp(err.detail, detail))
    fprintf(stderr, "launch_fails: detail %s, want %s\n", err.detail, detail);
  TW_CHECK(!strcmp(err.detail, detail));
  advance(5000); /* a failed create's VM is being deleted */
  TW_CHECK(fake_vm_count() == 0);
  fault(NULL);
}

static void errors(void **state) {
  struct tw_provider *p = *state;
  struct tw_err err = {0};
  struct tw_instance in;
  struct tw_offer od =
      offer("eastus", "", "Standard_D2s_v5", TW_MARKET_ON_DEMAND);
  struct tw_offer zonal =
      offer("eastus", "2", "Standard_D2s_v5", TW_MARKET_ON_DEMAND);
  struct tw_offer spot = offer("eastus", "", "Standard_D2s_v5", TW_MARKET_SPOT);

  /* Capacity: in a failed operation (regional, zonal, overconstrained),
   * and synchronously (SkuNotAvailable). */
  launch_fails(p, &od, "{\"kind\":\"capacity\",\"service\":\"azure\"}",
               TW_E_CAPACITY, "AllocationFailed", 0);
  launch_fails(p, &zonal, "{\"kind\":\"capacity\",\"zone\":\"2\"}",
               TW_E_CAPACITY, "ZonalAllocationFailed", 0);
  launch_fails(p, &spot,
               "{\"kind\":\"capacity\",\"market\":\"spot\",\"code\":"
               "\"OverconstrainedAllocationRequest\"}",
               TW_E_CAPACITY, "OverconstrainedAllocationRequest", 0);
  launch_fails(p, &od, "{\"kind\":\"capacity\",\"status\":409}", TW_E_CAPACITY,
               "SkuNotAvailable", 0);
  /* Quota: OperationNotAllowed naming the quota, or QuotaExceeded. */
  launch_fails(p, &spot, "{\"kind\":\"quota\"}", TW_E_QUOTA,
               "OperationNotAllowed", 0);
  launch_fails(p, &od, "{\"kind\":\"quota\",\"code\":\"QuotaExceeded\"}",
               TW_E_QUOTA, "QuotaExceeded", 0);
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"vcpu_limit\":1}");
  launch_fails(p, &od, NULL, TW_E_QUOTA, "OperationNotAllowed", 0);
  twtest_fake_ctl_ok("POST", "/_fake/azure/config", "{\"vcpu_limit\":350}");
  /* A max price under the Spot price is the caller's mistake. */
  launch_fails(p, &spot, NULL, TW_E_INVALID, "OperationNotAllowed", 10000);
  /* A region the account does not use. */
  struct tw_offer far =
      offer("westeurope", "", "Standard_D2s_v5", TW_MARKET_ON_DEMAND);
  TW_CHECK_RC(launch(p, &far, "tok-far", "att", 0, &in, &err), TW_E_INVALID,
              err);

  /* 429: retried after Retry-After, then reported as retryable. */
  int64_t before = calls("GetVirtualMachine"), slept = slept_ms;
  fault("{\"kind\":\"throttle\",\"action\":\"GetVirtualMachine\"}");
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_describe(p, "tw-x", &in, &err), TW_E_RETRYABLE, err);
  TW_CHECK(!strcmp(err.detail, "TooManyRequests"));
  TW_CHECK(calls("GetVirtualMachine") - before == 4); /* max_attempts */
  TW_CHECK(slept_ms - slept == 3000);                 /* Retry-After: 1 */
  /* A 500 once: the retry answers. */
  fault("{\"kind\":\"error\",\"status\":500,\"count\":1,\"action\":"
        "\"GetVirtualMachine\"}");
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_describe(p, "tw-x", &in, &err), TW_E_NOTFOUND, err);
  fault(NULL);

  /* 401: an expired token is replaced once, transparently. */
  int64_t tokens = calls("Token");
  twtest_fake_ctl_ok("POST", "/_fake/azure/tokens/expire", NULL);
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_describe(p, "tw-x", &in, &err), TW_E_NOTFOUND, err);
  TW_CHECK(calls("Token") == tokens + 1);
  /* The token's own lifetime, on the adapter's clock: a new one is
   * fetched ahead of expiry (3599 s less the 300 s margin). */
  advance(3400 * 1000LL);
  TW_CHECK_RC(tw_provider_describe(p, "tw-x", &in, &err), TW_E_NOTFOUND, err);
  TW_CHECK(calls("Token") == tokens + 2);
  /* A wrong secret: the identity platform refuses the client. */
  struct tw_provider *bad = provider(NULL, "not-the-secret", &err);
  TW_CHECK(bad != NULL);
  if (bad) {
    tw_err_clear(&err);
    TW_CHECK_RC(tw_provider_describe(bad, "tw-x", &in, &err), TW_E_AUTH, err);
    TW_CHECK(!strcmp(err.detail, "invalid_client"));
    tw_provider_free(bad);
  }
}

/* The first PUT is answered too late: the http helper's retry finds the
 * VM by its name (412, then GET), and so does a second launch with the
 * same token.  One VM in the end. */
static void retried_launch(void **state) {
  struct tw_err err = {0};
  struct tw_provider *p =
      provider("timeout_ms: 400\n", FC_AZ_CLIENT_SECRET, &err);
  TW_CHECK(p != NULL);
  if (!p)
    return;
  struct tw_offer o = offer("eastus", "", "Standard_D2s_v5", TW_MARKET_SPOT);
  struct tw_instance a, b;
  fault("{\"kind\":\"slow\",\"action\":\"CreateOrUpdateVirtualMachine\","
        "\"delay_ms\":1200,\"count\":1}");
  int64_t puts = calls("CreateOrUpdateVirtualMachine");
  TW_CHECK_RC(launch(p, &o, "tok-retry", "att-r", 0, &a, &err), TW_OK, err);
  TW_CHECK(calls("CreateOrUpdateVirtualMachine") - puts == 2);
  TW_CHECK(a.state == TW_INST_RUNNING);
  TW_CHECK_RC(launch(p, &o, "tok-retry", "att-r", 0, &b, &err), TW_OK, err);
  TW_CHECK(!strcmp(a.id, b.id));
  TW_CHECK(fake_vm_count() == 1);
  /* The same token from another job: the VM is handed back untouched and
   * the generic layer flags the reuse. */
  struct tw_launch req = {.offer = &o,
                          .client_token = "tok-retry",
                          .job_id = "job-2",
                          .attempt_id = "att-x",
                          .tenant = "acme"};
  tw_err_clear(&err);
  TW_CHECK_RC(tw_provider_launch(p, &req, &b, &err), TW_E_CONFLICT, err);
  json_t *v = fake_vm(a.id);
  TW_CHECK(v && !strcmp(json_string_value(json_object_get(
                            json_object_get(v, "tags"), "tradewind:job")),
                        "job-1"));
  json_decref(v);
  TW_CHECK_RC(tw_provider_terminate(p, a.id, &err), TW_OK, err);
  advance(3000);
  TW_CHECK(fake_vm_count() == 0);

  /* Operation-Location instead of Azure-AsyncOperation. */
  twtest_fake_ctl_ok("POST", "/_fake/azure/config",
                     "{\"lro_header\":\"Operation-Location\"}");
  TW_CHECK_RC(launch(p, &o, "tok-oploc", "att-o", 0, &a, &err), TW_OK, err);
  TW_CHECK(a.state == TW_INST_RUNNING);
  TW_CHECK_RC(tw_provider_terminate(p, a.id, &err), TW_OK, err);
  advance(3000);
  twtest_fake_ctl_ok("POST", "/_fake/azure/config",
                     "{\"lro_header\":\"Azure-AsyncOperation\"}");
  fault(NULL);
  tw_provider_free(p);
}

/* The binary's TLS flags: they go together, and a file that is not PEM
 * stops the start (exit 2 for the flags, 1 for the file). */
/* ---- ARM fidelity, over raw HTTPS ----------------------------------------
 * What clients other than the adapter see: the v1 token endpoint, the
 * correlation id echoed, subscriptions, locations, groups, sizes, power
 * actions, DELETE's monitors and the api-version refusal's text. */

struct raw {
  long status;
  struct tw_buf body, headers;
};

static size_t raw_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

static void raw_free(struct raw *r) {
  tw_buf_release(&r->body);
  tw_buf_release(&r->headers);
}

/* One request; token NULL sends no Authorization.  The header text is
 * lower-cased so callers can strstr for names. */
static void arm_raw(const char *method, const char *path, const char *token,
                    const char *body, const char *extra_header, struct raw *r) {
  char url[1024], auth[256];
  snprintf(url, sizeof url, "%s%s", twtest_fake_url, path);
  memset(r, 0, sizeof *r);
  tw_buf_init(&r->body);
  tw_buf_init(&r->headers);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
  }
  if (body)
    h = curl_slist_append(h, strncmp(body, "grant_type", 10)
                                 ? "Content-Type: application/json"
                                 : "Content-Type: "
                                   "application/x-www-form-urlencoded");
  if (extra_header)
    h = curl_slist_append(h, extra_header);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (!strcmp(method, "HEAD"))
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  else if (!strcmp(method, "POST"))
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_CAINFO, cert);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, raw_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, raw_body);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  CURLcode cc = curl_easy_perform(c);
  if (cc != CURLE_OK)
    fprintf(stderr, "curl %s %s: %s\n", method, path, curl_easy_strerror(cc));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
  for (size_t i = 0; i < r->headers.len; i++)
    if (r->headers.data[i] >= 'A' && r->headers.data[i] <= 'Z')
      r->headers.data[i] = (char)(r->headers.data[i] - 'A' + 'a');
}

/* A power state of the VM's instance view, or "" (static buffer). */
static const char *power_state(const char *token, const char *vm) {
  static char out[64];
  char path[512];
  struct raw r;
  snprintf(path, sizeof path,
           "/subscriptions/" FC_AZ_SUBSCRIPTION
           "/resourceGroups/" FC_AZ_RESOURCE_GROUP
           "/providers/Microsoft.Compute/"
           "virtualMachines/%s/instanceView?api-version=2024-07-01",
           vm);
  arm_raw("GET", path, token, NULL, NULL, &r);
  const char *p = r.body.data ? strstr(r.body.data, "PowerState/") : NULL;
  snprintf(out, sizeof out, "%.*s", p ? (int)strcspn(p + 11, "\"") : 0,
           p ? p + 11 : "");
  raw_free(&r);
  return out;
}

#define SUBP "/subscriptions/" FC_AZ_SUBSCRIPTION

static void arm_fidelity(void **state) {
  struct raw r;
  arm_raw("POST", "/" FC_AZ_TENANT "/oauth2/token", NULL,
          "grant_type=client_credentials&client_id=" FC_AZ_CLIENT_ID
          "&client_secret=" FC_AZ_CLIENT_SECRET
          "&resource=https%3A%2F%2Fmanagement.azure.com%2F",
          NULL, &r);
  json_t *j = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
  TW_CHECK(r.status == 200);
  TW_CHECK(json_is_string(json_object_get(j, "expires_in"))); /* v1: strings */
  TW_CHECK(json_is_string(json_object_get(j, "expires_on")));
  TW_CHECK(!strcmp(json_string_value(json_object_get(j, "resource")),
                   "https://management.azure.com/"));
  char token[128];
  snprintf(token, sizeof token, "%s",
           json_string_value(json_object_get(j, "access_token"))
               ? json_string_value(json_object_get(j, "access_token"))
               : "");
  json_decref(j);
  raw_free(&r);
  arm_raw("POST", "/" FC_AZ_TENANT "/oauth2/token", NULL,
          "grant_type=client_credentials&client_id=" FC_AZ_CLIENT_ID
          "&client_secret=" FC_AZ_CLIENT_SECRET,
          NULL, &r);
  TW_CHECK(r.status == 400 && strstr(r.body.data, "'resource'"));
  raw_free(&r);

  /* The caller's correlation id comes back; the request id is ARM's. */
  arm_raw("GET", "/subscriptions?api-version=2022-12-01", token, NULL,
          "x-ms-correlation-request-id: 9d1c6a1e-corr-tw", &r);
  TW_CHECK(r.status == 200);
  TW_CHECK(
      strstr(r.headers.data, "x-ms-correlation-request-id: 9d1c6a1e-corr-tw"));
  TW_CHECK(strstr(r.headers.data, "x-ms-request-id: "));
  TW_CHECK(
      strstr(r.body.data, "\"subscriptionId\":\"" FC_AZ_SUBSCRIPTION "\""));
  raw_free(&r);
  arm_raw("GET", SUBP "?api-version=2022-12-01", token, NULL, NULL, &r);
  TW_CHECK(r.status == 200 && strstr(r.body.data, "\"state\":\"Enabled\""));
  raw_free(&r);
  arm_raw("GET", SUBP "/locations?api-version=2022-12-01", token, NULL, NULL,
          &r);
  TW_CHECK(r.status == 200 && strstr(r.body.data, "\"name\":\"westeurope\"") &&
           strstr(r.body.data, "\"displayName\":\"East US\""));
  raw_free(&r);

  arm_raw("HEAD",
          SUBP "/resourcegroups/" FC_AZ_RESOURCE_GROUP
               "?api-version=2021-04-01",
          token, NULL, NULL, &r);
  TW_CHECK(r.status == 204);
  raw_free(&r);
  arm_raw("HEAD", SUBP "/resourcegroups/nope?api-version=2021-04-01", token,
          NULL, NULL, &r);
  TW_CHECK(r.status == 404);
  raw_free(&r);
  arm_raw("GET", SUBP "/resourcegroups?api-version=2021-04-01", token, NULL,
          NULL, &r);
  TW_CHECK(r.status == 200 &&
           strstr(r.body.data, "\"name\":\"" FC_AZ_RESOURCE_GROUP "\""));
  raw_free(&r);

  arm_raw("GET",
          SUBP "/providers/Microsoft.Compute/locations/eastus/vmSizes"
               "?api-version=2024-07-01",
          token, NULL, NULL, &r);
  j = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
  TW_CHECK(r.status == 200 && json_array_size(json_object_get(j, "value")) > 0);
  bool d2 = false;
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(j, "value"), i, v) {
    if (!strcmp(json_string_value(json_object_get(v, "name")),
                "Standard_D2s_v5"))
      d2 = json_integer_value(json_object_get(v, "numberOfCores")) == 2 &&
           json_integer_value(json_object_get(v, "memoryInMB")) == 8192;
  }
  TW_CHECK(d2);
  json_decref(j);
  raw_free(&r);

  /* An api-version Compute does not have: its real wording, every version
   * newest first. */
  arm_raw("GET",
          SUBP "/providers/Microsoft.Compute/virtualMachines"
               "?api-version=2015-06-15",
          token, NULL, NULL, &r);
  TW_CHECK(r.status == 400 &&
           strstr(r.body.data, "NoRegisteredProviderFound") &&
           strstr(r.body.data, "for location 'eastus' and API version "
                               "'2015-06-15' for type 'virtualMachines'. The "
                               "supported api-versions are '2026-03-01, "
                               "2025-11-01, ") &&
           strstr(r.body.data, "2022-08-01'. The supported locations are '"));
  raw_free(&r);

  /* A VM through its power actions, then DELETE's two monitors. */
  const char *vm_body =
      "{\"location\":\"eastus\",\"properties\":{\"hardwareProfile\":"
      "{\"vmSize\":"
      "\"Standard_D2s_v5\"},\"storageProfile\":{\"imageReference\":"
      "{\"publisher\":\"Canonical\",\"offer\":\"ubuntu-24_04-lts\",\"sku\":"
      "\"server\",\"version\":\"latest\"}},\"osProfile\":{\"computerName\":"
      "\"raw1\",\"adminUsername\":\"tradewind\",\"linuxConfiguration\":"
      "{\"disablePasswordAuthentication\":true,\"ssh\":{\"publicKeys\":[{"
      "\"path\":\"/home/tradewind/.ssh/authorized_keys\",\"keyData\":"
      "\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake\"}]}}},"
      "\"networkProfile\":{\"networkInterfaces\":[{\"id\":\"" SUBP
      "/resourceGroups/tradewind/providers/Microsoft.Network/"
      "networkInterfaces/nic1\"}]}}}";
  const char *vm_path = SUBP "/resourceGroups/" FC_AZ_RESOURCE_GROUP
                             "/providers/Microsoft.Compute/virtualMachines/"
                             "raw1";
  char path[512];
  snprintf(path, sizeof path, "%s?api-version=2024-07-01", vm_path);
  fault(NULL);
  arm_raw("PUT", path, token, vm_body, NULL, &r);
  TW_CHECK(r.status == 201);
  if (r.status != 201)
    fprintf(stderr, "PUT: %ld %s\n", r.status, r.body.data);
  raw_free(&r);
  advance(5000);
  TW_CHECK(!strcmp(power_state(token, "raw1"), "running"));
  static const struct {
    const char *action, *during, *after;
  } steps[] = {{"powerOff", "stopping", "stopped"},
               {"start", "starting", "running"},
               {"deallocate", "deallocating", "deallocated"},
               {"start", "starting", "running"}};
  for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
    snprintf(path, sizeof path, "%s/%s?api-version=2024-07-01", vm_path,
             steps[k].action);
    arm_raw("POST", path, token, NULL, NULL, &r);
    TW_CHECK(r.status == 202 && strstr(r.headers.data, "\nlocation: ") &&
             strstr(r.headers.data, "\nazure-asyncoperation: "));
    raw_free(&r);
    TW_CHECK(!strcmp(power_state(token, "raw1"), steps[k].during));
    advance(5000);
    TW_CHECK(!strcmp(power_state(token, "raw1"), steps[k].after));
  }
  snprintf(path, sizeof path, "%s?api-version=2024-07-01", vm_path);
  arm_raw("DELETE", path, token, NULL, NULL, &r);
  TW_CHECK(r.status == 202);
  const char *loc = strstr(r.headers.data, "\nlocation: ");
  TW_CHECK(loc && strstr(loc, "monitor=true"));
  TW_CHECK(strstr(r.headers.data, "\nazure-asyncoperation: "));
  char mon[512] = "";
  if (loc) {
    const char *u = strstr(loc, "/subscriptions/");
    if (u)
      snprintf(mon, sizeof mon, "%.*s", (int)strcspn(u, "\r\n"), u);
  }
  raw_free(&r);
  arm_raw("GET", mon, token, NULL, NULL, &r);
  TW_CHECK(r.status == 202); /* the Location monitor: still deleting */
  raw_free(&r);
  advance(5000);
  arm_raw("GET", mon, token, NULL, NULL, &r);
  TW_CHECK(r.status == 200);
  raw_free(&r);
  snprintf(path, sizeof path, "%s/start?api-version=2024-07-01", vm_path);
  arm_raw("POST", path, token, NULL, NULL, &r);
  TW_CHECK(r.status == 404 && strstr(r.body.data, "ResourceNotFound"));
  raw_free(&r);
}

static int run_fake(const char *const *args) {
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(TW_FAKECLOUD_PATH, (char *const *)args);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void tls_flags(void **state) {
  const char *only_cert[] = {"tradewind-fakecloud", "--tls-cert", cert, NULL};
  TW_CHECK(run_fake(only_cert) == 2);
  const char *not_pem[] = {"tradewind-fakecloud", "--tls-cert", cert,
                           "--tls-key",           "/dev/null",  NULL};
  TW_CHECK(run_fake(not_pem) == 1);
}

/* A test certificate, the fake serving HTTPS with it and one adapter
 * over it, for the group. */
static int setup(void **state) {
  tw_log_set_level(TW_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct tw_err err = {0};
  if (!mkdtemp(tmp_dir) ||
      fc_az_make_cert(tmp_dir, 1, cert, sizeof cert, key, sizeof key, &err)) {
    fprintf(stderr, "cannot make a certificate: %s\n", err.msg);
    return -1;
  }
  if (!start_fake())
    return -1;
  tw_clock_fake_init(&clk, START_MS);
  *state = provider(NULL, FC_AZ_CLIENT_SECRET, &err);
  if (!*state)
    fprintf(stderr, "provider: %s\n", err.msg);
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  tw_provider_free(*state);
  twtest_fake_stop();
  unlink(cert);
  unlink(key);
  rmdir(tmp_dir);
  curl_global_cleanup();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tls_flags),    cmocka_unit_test(offers),
      cmocka_unit_test(zonal_offers), cmocka_unit_test(launches),
      cmocka_unit_test(errors),       cmocka_unit_test(retried_launch),
      cmocka_unit_test(arm_fidelity),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
