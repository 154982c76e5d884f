/* Placement through the one engine (policies/place/plan.h): each filter of
 * the default set, table-driven, with every offer either a candidate or
 * counted against a filter; exclusions and the explanation; the compute
 * cost under billing rules; accelerator names; the same input gives the
 * same candidates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "policies/place/cost.h"
#include "policies/place/index.h"
#include "policies/place/plan.h"

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
static struct tw_offer_index *IX;
static struct tw_policy_set *SET;

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
  struct tw_offer_source src;
  tw_offer_source_array(&src, OFFERS, 8);
  if (tw_offer_index_build(&src, &IX, NULL))
    return -1;
  SET = tw_policy_set_default();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_offer_index_unref(IX);
  tw_policy_set_unref(SET);
  return 0;
}

/* The plan of spec over OFFERS with counts, avoiding excl. */
static void plan_of(const struct tw_job_spec *spec, const char *const *excl,
                    size_t n_excl, struct tw_plan *p) {
  struct tw_place_snapshot snap = {.index = IX};
  struct tw_plan_input in = {.job = spec,
                             .now_ms = 1764460800000,
                             .excluded = excl,
                             .n_excluded = n_excl};
  struct tw_plan_opts o = {.counts = true};
  assert_int_equal(tw_plan_make(SET, &snap, &in, &o, NULL, p, NULL), TW_OK);
}

static uint64_t rejected_by(const struct tw_plan *p, const char *filter) {
  for (size_t i = 0; i < p->n_rejects; i++)
    if (!strcmp(p->rejects[i].filter, filter))
      return p->rejects[i].count;
  return 0;
}

static struct {
  const char *spec;
  const char *first; /* instance type of the best candidate; NULL: none */
  size_t n;          /* candidates */
  const char *why;   /* a filter that must have counted a rejection */
} CASES[] = {
    {"name: a\nresources: {accelerators: A100*:8}\n", "p4d.24xlarge", 3,
     "accelerators"},
    /* A100 is the catalog's A100, the 40 GB one: p4d alone */
    {"name: a\nresources: {accelerators: A100:8}\n", "p4d.24xlarge", 1,
     "accelerators"},
    {"name: a\nresources: {accelerators: A100-80GB:8}\n", "ND96amsr_A100_v4", 2,
     "accelerators"},
    {"name: a\nresources: {accelerators: A100:16}\n", NULL, 0, "accelerators"},
    {"name: a\nresources: {accelerators: A100*:8, market: on-demand}\n",
     "p4de.24xlarge", 1, "market"},
    {"name: a\nresources: {cpus: 2, arch: arm64}\n", "m6g.large", 1, "arch"},
    {"name: a\nresources: {cpus: 8+}\n", "c5.2xlarge", 5,
     "cpus"}, /* tie with D8s_v5: id order */
    {"name: a\nresources: {cpus: 8}\n", "c5.2xlarge", 2, "cpus"},
    {"name: a\nresources: {cpus: 8, memory: 32+}\n", "D8s_v5", 1, "memory"},
    {"name: a\nresources: {cpus: 2, arch: any}\nplacement: {providers: [aws]}\n",
     "m6g.large", 2, "provider"},
    {"name: a\nresources: {cpus: 2}\nplacement: {residency: CN}\n",
     "ecs.g7.large", 1, "residency"},
    {"name: a\nresources: {cpus: 8}\nplacement: {regions: ['aws:eu-*']}\n",
     "c5.2xlarge", 1, "selector"},
    {"name: a\nresources: {cpus: 2, arch: any}\nmax_price_per_hour: 0.08\n",
     "ecs.g7.large", 2, "price"},
};

static void each_filter(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    struct tw_job_spec spec;
    struct tw_err err = {0};
    if (tw_spec_parse(CASES[i].spec, strlen(CASES[i].spec), false, &spec, &err))
      fail_msg("case %zu: %s", i, err.msg);
    struct tw_plan p;
    plan_of(&spec, NULL, 0, &p);
    if (p.n != CASES[i].n)
      fail_msg("case %zu: %zu candidates, want %zu", i, p.n, CASES[i].n);
    if (CASES[i].first)
      assert_string_equal(p.cands[0].offer->instance_type, CASES[i].first);
    if (!rejected_by(&p, CASES[i].why)) {
      for (size_t k = 0; k < p.n_rejects; k++)
        fprintf(stderr, "  %s: %llu\n", p.rejects[k].filter,
                (unsigned long long)p.rejects[k].count);
      fail_msg("case %zu: nothing rejected by %s", i, CASES[i].why);
    }
    /* every offer is either a candidate or counted */
    uint64_t total = p.n;
    for (size_t k = 0; k < p.n_rejects; k++)
      total += p.rejects[k].count;
    assert_int_equal(total, 8);
    for (size_t k = 1; k < p.n; k++)
      assert_true(p.cands[k - 1].cost.total_uusd <= p.cands[k].cost.total_uusd);
    tw_plan_release(&p);
    tw_spec_release(&spec);
  }
}

static void exclusions_and_explanation(void **state) {
  (void)state;
  struct tw_job_spec spec;
  const char *y = "name: a\nresources: {accelerators: A100*:8}\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  const char *excl[] = {OFFERS[0].id};
  struct tw_plan p;
  plan_of(&spec, excl, 1, &p);
  assert_int_equal(p.n, 2);
  assert_string_equal(p.cands[0].offer->instance_type, "ND96amsr_A100_v4");
  assert_int_equal(rejected_by(&p, "excluded"), 1);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_explain(&p, &b);
  if (!strstr(b.data, "8 offers, 2 fit: 4 without exactly 8 A100*"))
    fail_msg("%s", b.data);
  tw_buf_release(&b);
  tw_plan_release(&p);
  tw_spec_release(&spec);
}

static void cost_follows_billing_rules(void **state) {
  (void)state;
  struct tw_offer o = OFFERS[6]; /* $0.384/h, per second, 60 s minimum */
  assert_int_equal(tw_cost_compute_uusd(&o, 59, 1), 6400); /* 60 s billed */
  assert_int_equal(tw_cost_compute_uusd(&o, 3600, 1), 384000);
  assert_int_equal(tw_cost_compute_uusd(&o, 3600, 4), 1536000);
  assert_int_equal(tw_cost_compute_uusd(&o, 3600, 0), 384000); /* one node */
  o.billing_granularity_s = 60;                                /* per minute */
  o.min_charge_s = 0;
  assert_int_equal(tw_cost_compute_uusd(&o, 61, 1), 12800); /* 2 minutes */
  o.price_uusd_per_hour = 1;
  assert_int_equal(tw_cost_compute_uusd(&o, 1, 1), 1); /* rounds up */
  /* the model's compute part is the same figure */
  struct tw_cost_params cp;
  tw_cost_params_default(&cp);
  struct tw_cost_job j = {.duration_s = 61, .nodes = 1};
  struct tw_cost_offer co = {.price_uusd_per_hour = 384000,
                             .granularity_s = 60,
                             .interruption_pct = -1};
  struct tw_cost c;
  tw_cost_eval(&cp, &j, &co, 0, 0, &c);
  assert_int_equal(c.compute_uusd, 12800);
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
  struct tw_plan a, b;
  plan_of(&spec, NULL, 0, &a);
  plan_of(&spec, NULL, 0, &b);
  assert_int_equal(a.n, b.n);
  for (size_t i = 0; i < a.n; i++)
    assert_ptr_equal(a.cands[i].offer, b.cands[i].offer);
  tw_plan_release(&a);
  tw_plan_release(&b);
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
  return cmocka_run_group_tests(tests, setup, teardown);
}
