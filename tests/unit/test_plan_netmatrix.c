/* The network matrix: the file format (every error named by file, line
 * and key), how a pair is answered, the shipped default, and the default
 * held against the measured Skyplane profiles when they are at hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/netmatrix.h"

static struct tw_netmatrix *parse(const char *text) {
  struct tw_netmatrix *m = NULL;
  struct tw_err err = {0};
  if (tw_netmatrix_parse(text, strlen(text), "t.net", &m, &err))
    fail_msg("%s", err.msg);
  return m;
}

static void
links_rules_geography_and_defaults_answer_in_that_order(void **state) {
  (void)state;
  struct tw_netmatrix *m = parse(
      "tradewind-network 1\n"
      "# comment\n"
      "default rtt_ms=100 bandwidth_mbps=800 egress_usd_per_gb=0.10\n"
      "bandwidth scope=same-provider mbps=4000\n"
      "egress provider=aws scope=same-provider from=ap-* usd_per_gb=0.09\n"
      "egress provider=aws scope=same-provider usd_per_gb=0.02\n"
      "egress provider=aws scope=inter-provider usd_per_gb=0.09\n"
      "region aws:us-east-1 lat=38.95 lon=-77.45 country=US jurisdiction=US\n"
      "region aws:eu-west-1 lat=53.35 lon=-6.26 country=IE jurisdiction=EU\n"
      "region aws:ap-northeast-1 lat=35.68 lon=139.69\n"
      "link aws:us-east-1 aws:eu-west-1 rtt_ms=68.5 bandwidth_mbps=2500\n"
      "link azure:eastus aws:us-east-1 egress_usd_per_gb=0.087\n");
  struct tw_net_link l;
  /* an explicit link, and its reverse for latency and bandwidth */
  tw_netmatrix_link(m, "aws:us-east-1", "aws:eu-west-1", &l);
  assert_int_equal(l.rtt_us, 68500);
  assert_int_equal(l.rtt_how, 'l');
  assert_int_equal(l.bandwidth_kbps, 2500000);
  assert_int_equal(l.egress_uusd_per_gb, 20000);
  assert_int_equal(l.egress_how, 'r');
  tw_netmatrix_link(m, "aws:eu-west-1", "aws:us-east-1", &l);
  assert_int_equal(l.rtt_us, 68500);
  assert_int_equal(l.bandwidth_kbps, 2500000);
  /* rules by source region, in file order */
  tw_netmatrix_link(m, "aws:ap-northeast-1", "aws:us-east-1", &l);
  assert_int_equal(l.egress_uusd_per_gb, 90000);
  assert_int_equal(l.bandwidth_kbps, 4000000);
  assert_int_equal(l.scope, TW_NET_SAME_PROVIDER);
  /* geography: Tokyo to N. Virginia, about 10,900 km */
  assert_int_equal(l.rtt_how, 'g');
  assert_true(l.rtt_us > 190000 && l.rtt_us < 205000);
  /* egress is directional: azure's rule is none, the link's price counts */
  tw_netmatrix_link(m, "azure:eastus", "aws:us-east-1", &l);
  assert_int_equal(l.egress_uusd_per_gb, 87000);
  assert_int_equal(l.egress_how, 'l');
  tw_netmatrix_link(m, "aws:us-east-1", "azure:eastus", &l);
  assert_int_equal(l.egress_uusd_per_gb, 90000);
  assert_int_equal(l.scope, TW_NET_INTER_PROVIDER);
  /* the defaults, and a region to itself */
  tw_netmatrix_link(m, "gcp:us-central1", "azure:westeurope", &l);
  assert_int_equal(l.rtt_us, 100000);
  assert_int_equal(l.bandwidth_kbps, 800000);
  assert_int_equal(l.egress_uusd_per_gb, 100000);
  assert_int_equal(l.egress_how, 'd');
  tw_netmatrix_link(m, "aws:us-east-1", "aws:us-east-1", &l);
  assert_int_equal(l.scope, TW_NET_SAME_REGION);
  assert_int_equal(l.egress_uusd_per_gb, 0);
  assert_int_equal(l.rtt_us, 1000);
  tw_netmatrix_link(m, "aws:us-east-1", "https://example.org", &l);
  assert_int_equal(l.scope, TW_NET_INTERNET);
  const struct tw_net_region *r = tw_netmatrix_region(m, "aws:eu-west-1");
  assert_non_null(r);
  assert_string_equal(r->jurisdiction, "EU");
  assert_int_equal(r->lat_e4, 533500);
  assert_int_equal(tw_netmatrix_n_regions(m), 4);
  tw_netmatrix_free(m);
}

static const struct {
  const char *text, *msg;
} BAD[] = {
    {"", "t.net: empty: expected \"tradewind-network 1\""},
    {"tradewind-network 2\n",
     "t.net:1: expected the header \"tradewind-network 1\""},
    {"tradewind-network 1\negress provider=aws scope=inter-cloud "
     "usd_per_gb=1\n",
     "t.net:2: egress: unknown scope \"inter-cloud\""},
    {"tradewind-network 1\negress provider=aws scope=internet "
     "usd_per_gb=0.1234567\n",
     "t.net:2: usd_per_gb: expected a price in USD from 0 to 1000, got "
     "\"0.1234567\""},
    {"tradewind-network 1\negress scope=internet usd_per_gb=1\n",
     "t.net:2: egress: provider= is required"},
    {"tradewind-network 1\nbandwidth scope=internet\n",
     "t.net:2: bandwidth: mbps= is required"},
    {"tradewind-network 1\n\nregion aws lat=1 lon=2\n",
     "t.net:3: region: expected provider:region first, got \"aws\""},
    {"tradewind-network 1\nregion aws:x lat=91 lon=0\n",
     "t.net:2: region: lat: expected degrees within +-90"},
    {"tradewind-network 1\nregion aws:x lat=1\n",
     "t.net:2: region: lat and lon go together"},
    {"tradewind-network 1\nlink aws:a aws:b rtt_ms=-1\n",
     "t.net:2: rtt_ms: expected milliseconds from 0 to 3600000"},
    {"tradewind-network 1\nlink aws:a aws:b speed=3\n",
     "t.net:2: link: unknown key \"speed\""},
    {"tradewind-network 1\nroute aws:a aws:b\n",
     "t.net:2: unknown line \"route\""},
    {"tradewind-network 1\ndefault rtt_ms\n",
     "t.net:2: default: expected key=value, got \"rtt_ms\""},
};

static void errors_name_file_line_and_key(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_netmatrix *m = (struct tw_netmatrix *)1;
    struct tw_err err = {0};
    assert_int_equal(
        tw_netmatrix_parse(BAD[i].text, strlen(BAD[i].text), "t.net", &m, &err),
        TW_E_INVALID);
    assert_null(m);
    if (strncmp(err.msg, BAD[i].msg, strlen(BAD[i].msg)))
      fail_msg("case %zu: \"%s\", want \"%s\"", i, err.msg, BAD[i].msg);
  }
  char *big = calloc(1, TW_NET_TEXT_MAX + 2);
  memset(big, '#', TW_NET_TEXT_MAX + 1);
  struct tw_netmatrix *m;
  assert_int_equal(
      tw_netmatrix_parse(big, TW_NET_TEXT_MAX + 1, "big", &m, NULL),
      TW_E_TOOBIG);
  free(big);
}

static char *source_path(const char *rel) {
  const char *src = getenv("TW_SOURCE_DIR");
  char *p = malloc(1024);
  snprintf(p, 1024, "%s/%s", src ? src : ".", rel);
  return p;
}

static void
the_shipped_default_loads_and_covers_every_catalog_region(void **state) {
  (void)state;
  char *path = source_path("configs/network/default.net");
  struct tw_netmatrix *m;
  struct tw_err err = {0};
  if (tw_netmatrix_load(path, &m, &err))
    fail_msg("%s", err.msg);
  free(path);
  assert_true(tw_netmatrix_n_regions(m) >= 160);
  static const char *const regions[] = {"aws:us-east-1", "azure:westeurope",
                                        "gcp:asia-east1", "alibaba:cn-hangzhou",
                                        "aws:eu-west-2"};
  for (size_t i = 0; i < 5; i++) {
    const struct tw_net_region *r = tw_netmatrix_region(m, regions[i]);
    assert_non_null(r);
    assert_true(r->has_geo);
    assert_true(r->jurisdiction[0] != '\0');
  }
  assert_string_equal(tw_netmatrix_region(m, "aws:eu-west-2")->jurisdiction,
                      "UK");
  assert_string_equal(tw_netmatrix_region(m, "aws:eu-central-1")->jurisdiction,
                      "EU");
  /* the list prices it was built from */
  struct tw_net_link l;
  tw_netmatrix_link(m, "aws:us-east-1", "aws:us-west-2", &l);
  assert_int_equal(l.egress_uusd_per_gb, 20000);
  tw_netmatrix_link(m, "aws:sa-east-1", "aws:us-east-1", &l);
  assert_int_equal(l.egress_uusd_per_gb, 138000);
  tw_netmatrix_link(m, "aws:us-east-1", "azure:eastus", &l);
  assert_int_equal(l.egress_uusd_per_gb, 90000);
  tw_netmatrix_link(m, "azure:eastus", "azure:westus", &l);
  assert_int_equal(l.egress_uusd_per_gb, 20000);
  tw_netmatrix_link(m, "gcp:europe-west1", "gcp:europe-west4", &l);
  assert_int_equal(l.egress_uusd_per_gb, 20000);
  tw_netmatrix_link(m, "alibaba:cn-hangzhou", "aws:us-east-1", &l);
  assert_int_equal(l.egress_uusd_per_gb, 117000);
  tw_netmatrix_free(m);
}

/* The default's estimates against 2022's measurements between AWS, Azure
 * and GCP regions: most round trips within a factor of 2, most egress
 * prices within 1.5 (the measured prices are the same public list
 * prices, two years older). */
static void the_default_agrees_with_measured_profiles(void **state) {
  (void)state;
  const char *data = getenv("TRADEWIND_TESTDATA");
  char dir[1024];
  if (data)
    snprintf(dir, sizeof dir, "%s/network/skyplane", data);
  else
    snprintf(dir, sizeof dir, "%s/../shared/data/network/skyplane",
             getenv("TW_SOURCE_DIR") ? getenv("TW_SOURCE_DIR") : ".");
  struct tw_netmatrix *meas;
  struct tw_err err = {0};
  if (tw_netmatrix_load_skyplane(dir, &meas, &err)) {
    printf("SKIPPED: measured matrices absent (%s)\n", err.msg);
    skip();
  }
  char *path = source_path("configs/network/default.net");
  struct tw_netmatrix *def;
  assert_int_equal(tw_netmatrix_load(path, &def, NULL), TW_OK);
  free(path);
  size_t pairs = 0, rtt_ok = 0, eg = 0, eg_ok = 0;
  for (size_t i = 0; i < tw_netmatrix_n_regions(meas); i++)
    for (size_t j = 0; j < tw_netmatrix_n_regions(meas); j++) {
      const char *a = tw_netmatrix_region_at(meas, i)->key;
      const char *b = tw_netmatrix_region_at(meas, j)->key;
      if (i == j || !tw_netmatrix_has_link(meas, a, b))
        continue;
      struct tw_net_link lm, ld;
      tw_netmatrix_link(meas, a, b, &lm);
      tw_netmatrix_link(def, a, b, &ld);
      if (lm.rtt_how == 'l' && lm.rtt_us > 0) {
        pairs++;
        rtt_ok += ld.rtt_us * 2 >= lm.rtt_us && ld.rtt_us <= lm.rtt_us * 2;
      }
      if (lm.egress_how == 'l') {
        eg++;
        eg_ok += ld.egress_uusd_per_gb * 3 >= lm.egress_uusd_per_gb * 2 &&
                 ld.egress_uusd_per_gb * 2 <= lm.egress_uusd_per_gb * 3;
      }
    }
  printf("measured pairs: %zu round trips, %zu%% within 2x; %zu egress prices, "
         "%zu%% within "
         "1.5x\n",
         pairs, pairs ? rtt_ok * 100 / pairs : 0, eg,
         eg ? eg_ok * 100 / eg : 0);
  assert_true(pairs > 4000);
  assert_true(rtt_ok * 100 >= pairs * 90);
  assert_true(eg > 3000);
  assert_true(eg_ok * 100 >= eg * 85);
  tw_netmatrix_free(def);
  tw_netmatrix_free(meas);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(links_rules_geography_and_defaults_answer_in_that_order),
      cmocka_unit_test(errors_name_file_line_and_key),
      cmocka_unit_test(
          the_shipped_default_loads_and_covers_every_catalog_region),
      cmocka_unit_test(the_default_agrees_with_measured_profiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
