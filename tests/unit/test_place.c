/* Placement: each filter, table-driven; cost under billing rules; the
 * ranking is the cheapest first and the same for the same input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/place.h"

static struct tw_offer mk(const char *prov, const char *region,
                          const char *zone, const char *type, enum tw_market m,
                          int64_t price, int vcpus, int64_t mem_gib,
                          const char *accel, int accels, enum tw_arch arch,
                          const char *juris) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "%s", prov);
  snprintf(o.account, sizeof o.account, "%s-main", prov);
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.market = m;
  o.price_uusd_per_hour = price;
  o.vcpus = vcpus;
  o.memory_mib = mem_gib * 1024;
  if (accel) {
    snprintf(o.accel_name, sizeof o.accel_name, "%s", accel);
    o.accel_count = accels;
  }
  o.arch = arch;
  o.billing_granularity_s = 1;
  o.min_charge_s = 60;
  if (juris) {
    snprintf(o.labels[0].key, sizeof o.labels[0].key, "jurisdiction");
    snprintf(o.labels[0].value, sizeof o.labels[0].value, "%s", juris);
    o.n_labels = 1;
  }
  tw_offer_make_id(&o);
  return o;
}

static struct tw_offer OFFERS[8];

static int setup(void **state) {
  (void)state;
  const enum tw_market S = TW_MARKET_SPOT, D = TW_MARKET_ON_DEMAND;
  const enum tw_arch X = TW_ARCH_X86_64, A = TW_ARCH_ARM64;
  OFFERS[0] = mk("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", S, 9800000,
                 96, 1152, "A100-40GB", 8, X, "US");
  OFFERS[1] = mk("aws", "us-east-1", "us-east-1a", "p4de.24xlarge", D, 40960000,
                 96, 1152, "A100-80GB", 8, X, "US");
  OFFERS[2] = mk("azure", "westeurope", "1", "ND96amsr_A100_v4", S, 11000000,
                 96, 1900, "A100-80GB", 8, X, "EU");
  OFFERS[3] = mk("aws", "us-west-2", "us-west-2b", "m6g.large", D, 77000, 2, 8,
                 NULL, 0, A, "US");
  OFFERS[4] = mk("aws", "us-west-2", "us-west-2b", "m5.large", D, 96000, 2, 8,
                 NULL, 0, X, "US");
  OFFERS[5] = mk("alibaba", "cn-hangzhou", "cn-hangzhou-h", "ecs.g7.large", S,
                 20000, 2, 8, NULL, 0, X, "CN");
  OFFERS[6] = mk("aws", "eu-west-1", "eu-west-1a", "c5.2xlarge", D, 384000, 8,
                 16, NULL, 0, X, "EU");
  OFFERS[7] =
      mk("azure", "eastus", "", "D8s_v5", D, 384000, 8, 32, NULL, 0, X, "US");
  return 0;
}

static struct {
  const char *spec;
  const char *first;  /* instance type of the best candidate; NULL: none */
  size_t n;           /* candidates */
  enum tw_reject why; /* a reason that must be counted */
} CASES[] = {
    {"name: a\nresources: {accelerators: A100:8}\n", "p4d.24xlarge", 3,
     TW_REJ_ACCEL},
    {"name: a\nresources: {accelerators: A100-80GB:8}\n", "ND96amsr_A100_v4", 2,
     TW_REJ_ACCEL},
    {"name: a\nresources: {accelerators: A100:16}\n", NULL, 0, TW_REJ_ACCEL},
    {"name: a\nresources: {accelerators: A100:8, market: on-demand}\n",
     "p4de.24xlarge", 1, TW_REJ_MARKET},
    {"name: a\nresources: {cpus: 2, arch: arm64}\n", "m6g.large", 1,
     TW_REJ_ARCH},
    {"name: a\nresources: {cpus: 8+}\n", "c5.2xlarge", 5,
     TW_REJ_CPUS}, /* tie with D8s_v5: id order */
    {"name: a\nresources: {cpus: 8}\n", "c5.2xlarge", 2, TW_REJ_CPUS},
    {"name: a\nresources: {cpus: 8, memory: 32+}\n", "D8s_v5", 1,
     TW_REJ_MEMORY},
    {"name: a\nresources: {cpus: 2}\nplacement: {providers: [aws]}\n",
     "m6g.large", 2, TW_REJ_PROVIDER},
    {"name: a\nresources: {cpus: 2}\nplacement: {residency: CN}\n",
     "ecs.g7.large", 1, TW_REJ_RESIDENCY},
    {"name: a\nresources: {cpus: 8}\nplacement: {regions: ['aws:eu-*']}\n",
     "c5.2xlarge", 1, TW_REJ_REGION},
    {"name: a\nresources: {cpus: 2}\nmax_price_per_hour: 0.08\n",
     "ecs.g7.large", 2, TW_REJ_PRICE},
};

static void each_filter(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    struct tw_job_spec spec;
    struct tw_err err = {0};
    if (tw_spec_parse(CASES[i].spec, strlen(CASES[i].spec), false, &spec, &err))
      fail_msg("case %zu: %s", i, err.msg);
    struct tw_placement p;
    tw_place_rank(&spec, OFFERS, 8, NULL, 0, &p);
    if (p.n != CASES[i].n)
      fail_msg("case %zu: %zu candidates, want %zu", i, p.n, CASES[i].n);
    if (CASES[i].first)
      assert_string_equal(p.cands[0].offer->instance_type, CASES[i].first);
    assert_true(p.rejected[CASES[i].why] > 0);
    size_t total = p.n;
    for (int r = 0; r < TW_REJ_COUNT; r++)
      total += p.rejected[r];
    assert_int_equal(total,
                     8); /* every offer is either a candidate or counted */
    for (size_t k = 1; k < p.n; k++)
      assert_true(p.cands[k - 1].cost_uusd <= p.cands[k].cost_uusd);
    tw_placement_release(&p);
    tw_spec_release(&spec);
  }
}

static void exclusions_and_explanation(void **state) {
  (void)state;
  struct tw_job_spec spec;
  const char *y = "name: a\nresources: {accelerators: A100:8}\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  const char *excl[] = {OFFERS[0].id};
  struct tw_placement p;
  tw_place_rank(&spec, OFFERS, 8, excl, 1, &p);
  assert_int_equal(p.n, 2);
  assert_string_equal(p.cands[0].offer->instance_type, "ND96amsr_A100_v4");
  char why[256];
  tw_placement_explain(&p, why, sizeof why);
  assert_string_equal(why, "2 of 8 offers fit: 5 without the accelerators, 1 "
                           "failed this job before");
  tw_placement_release(&p);
  tw_spec_release(&spec);
}

static void cost_follows_billing_rules(void **state) {
  (void)state;
  struct tw_offer o = OFFERS[6]; /* $0.384/h, per second, 60 s minimum */
  assert_int_equal(tw_place_compute_cost(&o, 59, 1), 6400); /* 60 s billed */
  assert_int_equal(tw_place_compute_cost(&o, 3600, 1), 384000);
  assert_int_equal(tw_place_compute_cost(&o, 3600, 4), 1536000);
  o.billing_granularity_s = 60; /* per minute */
  o.min_charge_s = 0;
  assert_int_equal(tw_place_compute_cost(&o, 61, 1), 12800); /* 2 minutes */
  o.price_uusd_per_hour = 1;
  assert_int_equal(tw_place_compute_cost(&o, 1, 1), 1); /* rounds up */
}

static void accelerator_names(void **state) {
  (void)state;
  assert_true(tw_accel_matches("A100", "A100-80GB"));
  assert_true(tw_accel_matches("a100-80gb", "A100-80GB"));
  assert_false(tw_accel_matches("A10", "A100-40GB"));
  assert_true(tw_accel_matches("A10G", "A10G"));
  assert_false(tw_accel_matches("A100-80GB", "A100-40GB"));
}

static void same_input_same_plan(void **state) {
  (void)state;
  struct tw_job_spec spec;
  const char *y = "name: a\nresources: {cpus: 2}\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  struct tw_placement a, b;
  tw_place_rank(&spec, OFFERS, 8, NULL, 0, &a);
  tw_place_rank(&spec, OFFERS, 8, NULL, 0, &b);
  assert_int_equal(a.n, b.n);
  for (size_t i = 0; i < a.n; i++)
    assert_ptr_equal(a.cands[i].offer, b.cands[i].offer);
  tw_placement_release(&a);
  tw_placement_release(&b);
  tw_spec_release(&spec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(each_filter),
      cmocka_unit_test(exclusions_and_explanation),
      cmocka_unit_test(cost_follows_billing_rules),
      cmocka_unit_test(accelerator_names),
      cmocka_unit_test(same_input_same_plan),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
