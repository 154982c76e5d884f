/* test_list_live.c - one list_managed costs what the live instances cost.
 *
 * EC2 keeps answering for terminated instances for about an hour, and a
 * reconcile pass or an event poll lists the managed instances every time:
 * unfiltered, the cost of each pass grew with the last hour's history.
 * Against tradewind-fakecloud (which honours instance-state-name as EC2
 * does), this launches a few live instances and thousands more that it
 * terminates, then checks that one tw_provider_list_managed() returns the
 * live ones only and makes as many DescribeInstances requests (pages) as
 * it did before the history existed.  The fake's per-action counters are
 * the witness for requests, the generic layer's stats for calls. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/integration/twtest_fakecloud.h"
#include "tests/twtest.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

#define LIVE 7
#define HISTORY 5000
#define PAGE 5 /* pages of 5: 7 live instances are two requests */

static long describes(void) {
  return twtest_fake_calls("/_fake/ec2/state", "DescribeInstances");
}

static struct tw_provider *provider(void) {
  char *doc = tw_asprintf("name: aws-list\n"
                          "type: aws\n"
                          "endpoint: %s\n"
                          "regions: [us-east-1]\n"
                          "access_key_env: TW_TEST_AWS_AK\n"
                          "secret_key_env: TW_TEST_AWS_SK\n"
                          "image: ami-0abcdef1234567890\n"
                          "page_size: %d\n"
                          "backoff_base_ms: 1\n"
                          "backoff_cap_ms: 5\n",
                          twtest_fake_url, PAGE);
  struct tw_node *cfg = NULL;
  struct tw_err err = {0};
  struct tw_provider *p = NULL;
  if (tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
      tw_provider_new(tw_adapters, cfg, NULL, &p, &err))
    TW_FAIL("provider: %s", err.msg);
  tw_node_free(cfg);
  free(doc);
  return p;
}

/* Launches one m5.large under token tok; its id into id. */
static void launch(struct tw_provider *p, const char *tok, char *id,
                   size_t size) {
  struct tw_offer o;
  tw_offer_init(&o);
  TW_SET(o.region, "us-east-1");
  TW_SET(o.zone, "us-east-1a");
  TW_SET(o.instance_type, "m5.large");
  o.market = TW_MARKET_ON_DEMAND;
  struct tw_launch req = {.offer = &o,
                          .client_token = tok,
                          .job_id = tok,
                          .attempt_id = tok,
                          .tenant = "physics"};
  struct tw_instance inst;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_provider_launch(p, &req, &inst, &err), TW_OK, err);
  snprintf(id, size, "%s", inst.id);
}

/* The fake's instances in state (its own view, not the adapter's). */
static size_t fake_in_state(const char *state) {
  json_t *s = twtest_fake_ctl("GET", "/_fake/ec2/state", NULL);
  size_t n = 0, i;
  json_t *in;
  json_array_foreach(json_object_get(s, "instances"), i, in) {
    const char *st = json_string_value(json_object_get(in, "state"));
    n += st && !strcmp(st, state);
  }
  json_decref(s);
  return n;
}

static void listing_skips_terminated_history(void **state) {
  struct tw_provider *p = provider();
  if (!p)
    return;
  char live[LIVE][TW_MODEL_ID_MAX];
  for (int i = 0; i < LIVE; i++) {
    char tok[32];
    snprintf(tok, sizeof tok, "tok-live-%d", i);
    launch(p, tok, live[i], sizeof live[i]);
  }
  struct tw_err err = {0};
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  long d0 = describes();
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  long before_history = describes() - d0;
  TW_CHECK(l.n == LIVE);
  TW_CHECK(before_history == (LIVE + PAGE - 1) / PAGE);
  tw_instance_list_release(&l);

  /* The history: launched and terminated through the adapter, as the
   * broker leaves it. */
  for (int i = 0; i < HISTORY; i++) {
    char tok[32], id[TW_MODEL_ID_MAX];
    snprintf(tok, sizeof tok, "tok-gone-%d", i);
    launch(p, tok, id, sizeof id);
    TW_CHECK_RC(tw_provider_terminate(p, id, &err), TW_OK, err);
  }
  twtest_fake_advance(1000); /* shutting-down ends at shutdown_ms 0 */
  TW_CHECK(fake_in_state("terminated") == HISTORY);
  TW_CHECK(fake_in_state("running") == LIVE);

  struct tw_provider_stats s0, s1;
  tw_provider_stats(p, TW_POP_LIST_MANAGED, &s0);
  d0 = describes();
  TW_CHECK_RC(tw_provider_list_managed(p, &l, &err), TW_OK, err);
  long with_history = describes() - d0;
  tw_provider_stats(p, TW_POP_LIST_MANAGED, &s1);
  /* Unfiltered, this was HISTORY / PAGE + 2 = 1002 requests. */
  TW_CHECK(with_history == before_history);
  TW_CHECK(s1.calls == s0.calls + 1 && s1.failures == s0.failures);
  TW_CHECK(l.n == LIVE);
  for (size_t k = 0; k < l.n; k++) {
    TW_CHECK(l.items[k].state == TW_INST_RUNNING);
    int found = 0;
    for (int i = 0; i < LIVE; i++)
      found += !strcmp(l.items[k].id, live[i]);
    TW_CHECK(found == 1);
  }
  tw_instance_list_release(&l);
  tw_provider_free(p);
}

static int setup(void **state) {
  tw_log_set_level(TW_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  setenv("TW_TEST_AWS_AK", "AKIDTRADEWINDFAKE", 1);
  setenv("TW_TEST_AWS_SK", "tradewind-fake-secret", 1);
  if (!twtest_fake_start((const char *[]){"--pending-ms", "0", NULL}))
    return -1;
  twtest_fake_ctl_ok("POST", "/_fake/ec2/config",
                     "{\"shutdown_ms\": 0, \"vcpu_limit_on_demand\": "
                     "1000000000}");
  return 0;
}

static int teardown(void **state) {
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
      cmocka_unit_test(listing_skips_terminated_history),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
