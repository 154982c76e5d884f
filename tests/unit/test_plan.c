/* The planner: the cheapest feasible offer under the model, counts per
 * reason, the index search agreeing with a full scan, the same plan for
 * the same input, and the cost model's components. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/cost.h"
#include "policies/place/index.h"
#include "policies/place/netmatrix.h"
#include "policies/place/plan.h"
#include "tests/unit/test_plan_util.h"

static struct tw_offer OFFERS[8];
static struct tw_offer_index *IX;
static struct tw_policy_set *SET;

static int setup(void **state) {
  (void)state;
  const enum tw_market S = TW_MARKET_SPOT, D = TW_MARKET_ON_DEMAND;
  OFFERS[0] = tp_offer("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", S,
                       9800000, 96, 1152, "A100-40GB", 8, "US");
  OFFERS[1] = tp_offer("aws", "us-east-1", "us-east-1a", "p4de.24xlarge", D,
                       40960000, 96, 1152, "A100-80GB", 8, "US");
  OFFERS[2] = tp_offer("azure", "westeurope", "1", "ND96amsr_A100_v4", S,
                       11000000, 96, 1900, "A100-80GB", 8, "EU");
  OFFERS[3] = tp_offer("aws", "us-west-2", "us-west-2b", "m6g.large", D, 77000,
                       2, 8, NULL, 0, "US");
  OFFERS[3].arch = TW_ARCH_ARM64;
  tw_offer_make_id(&OFFERS[3]);
  OFFERS[4] = tp_offer("aws", "us-west-2", "us-west-2b", "m5.large", D, 96000,
                       2, 8, NULL, 0, "US");
  OFFERS[5] = tp_offer("alibaba", "cn-hangzhou", "cn-hangzhou-h",
                       "ecs.g7.large", S, 20000, 2, 8, NULL, 0, "CN");
  OFFERS[6] = tp_offer("aws", "eu-west-1", "eu-west-1a", "c5.2xlarge", D,
                       384000, 8, 16, NULL, 0, "EU");
  OFFERS[7] = tp_offer("azure", "eastus", "", "D8s_v5", D, 384000, 8, 32, NULL,
                       0, "US");
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

static void plan_yaml(const char *yaml, bool counts, struct tw_plan *p) {
  struct tw_job_spec spec;
  assert_int_equal(tp_spec(yaml, &spec), 0);
  struct tw_place_snapshot snap = {.index = IX};
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
  struct tw_plan_opts o = {.counts = counts};
  assert_int_equal(tw_plan_make(SET, &snap, &in, &o, NULL, p, NULL), TW_OK);
  tw_spec_release(&spec);
}

static void cheapest_feasible_offer_comes_first(void **state) {
  (void)state;
  struct tw_plan p;
  plan_yaml("name: t\nresources: {accelerators: A100*:8}\nduration: 1h\n", false,
            &p);
  assert_int_equal(p.n, 3);
  assert_string_equal(p.cands[0].offer->instance_type, "p4d.24xlarge");
  assert_string_equal(p.cands[1].offer->instance_type, "ND96amsr_A100_v4");
  /* spot risk makes a spot offer dearer than its price alone */
  assert_true(p.cands[0].cost.spot_risk_uusd > 0);
  assert_int_equal(p.cands[0].cost.compute_uusd, 9800000);
  assert_int_equal(p.cands[0].cost.total_uusd,
                   p.cands[0].cost.compute_uusd +
                       p.cands[0].cost.spot_risk_uusd);
  assert_int_equal(p.cands[0].scores[0], TW_SCORE_MAX);
  assert_true(p.cands[1].scores[0] < TW_SCORE_MAX);
  tw_plan_release(&p);
}

static void counts_name_each_reason(void **state) {
  (void)state;
  struct tw_plan p;
  plan_yaml("name: t\nresources: {accelerators: A100-80GB:8}\nplacement: "
            "{residency: EU}\n",
            true, &p);
  assert_true(p.counted);
  assert_int_equal(p.feasible, 1);
  assert_int_equal(p.n, 1);
  assert_string_equal(p.cands[0].offer->provider, "azure");
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_explain(&p, &b);
  assert_string_equal(
      b.data,
      "8 offers, 1 fit: 6 outside jurisdiction EU, 1 without exactly 8 A100-80GB");
  tw_buf_release(&b);
  tw_plan_release(&p);
}

static void nothing_fits_gives_an_empty_plan(void **state) {
  (void)state;
  struct tw_plan p;
  plan_yaml("name: t\nresources: {accelerators: H100:8}\n", true, &p);
  assert_int_equal(p.n, 0);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_explain(&p, &b);
  assert_string_equal(b.data, "8 offers, 0 fit: 7 without exactly 8 H100, 1 not x86_64 (the default; "
                "arch: any allows arm64)");
  tw_buf_release(&b);
  tw_plan_release(&p);
  plan_yaml("name: t\nresources: {accelerators: H100:8}\n", false, &p);
  assert_int_equal(p.n, 0);
  assert_string_equal(p.strategy, "none");
  tw_plan_release(&p);
}

static void deadline_filter_says_by_how_much(void **state) {
  (void)state;
  struct tw_plan p;
  /* now is 2025-11-30T00:00Z; 1 h of work + 2 min launch cannot end by
   * 00:30 */
  plan_yaml("name: t\nresources: {cpus: 8}\nduration: 1h\ndeadline: "
            "2025-11-30T00:30:00Z\n",
            true, &p);
  assert_int_equal(p.n, 0);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_explain(&p, &b);
  assert_non_null(
      strstr(b.data, "2 cannot finish before the deadline: short by 32m00s"));
  tw_buf_release(&b);
  tw_plan_release(&p);
}

static void egress_moves_the_choice_to_the_data(void **state) {
  (void)state;
  struct tw_plan p;
  /* 2 TB in eu-west-1: $0.09/GB to move it elsewhere beats the cheaper
   * eastus machine */
  plan_yaml("name: t\nresources: {cpus: 8}\nduration: 1h\n"
            "datasets: [{uri: s3://b/x, size: 2TB, location: aws:eu-west-1}]\n",
            false, &p);
  assert_int_equal(p.n, 2);
  assert_string_equal(p.cands[0].offer->region, "eu-west-1");
  assert_int_equal(p.cands[0].cost.egress_uusd, 0);
  assert_int_equal(p.cands[1].cost.egress_uusd,
                   180000000); /* 2000 GB x $0.09 */
  assert_true(p.cands[1].cost.transfer_s > 0);
  assert_true(p.cands[1].cost.transfer_uusd > 0);
  tw_plan_release(&p);
}

static void cost_model_rounds_up_by_billing_rules(void **state) {
  (void)state;
  struct tw_cost_params cp;
  tw_cost_params_default(&cp);
  struct tw_cost_job j = {.duration_s = 30, .nodes = 2, .now_ms = 0};
  struct tw_cost_offer o = {
      .price_uusd_per_hour = 3600, .granularity_s = 1, .min_charge_s = 60};
  struct tw_cost c;
  tw_cost_eval(&cp, &j, &o, 0, 0, &c);
  assert_int_equal(c.compute_uusd,
                   120); /* 60 s minimum x 2 nodes at $0.0036/h */
  o.granularity_s = 3600;
  tw_cost_eval(&cp, &j, &o, 0, 0, &c);
  assert_int_equal(c.compute_uusd, 7200);
  /* spot: 10%/month, 30-day month, no checkpoint: 1 node, 720 h of work
   * loses 0.1 interruptions x (360 h + 5 min) */
  struct tw_cost_job long_job = {.duration_s = 720 * 3600, .nodes = 1};
  struct tw_cost_offer spot = {.price_uusd_per_hour = 1000000,
                               .granularity_s = 1,
                               .interruption_pct = 10,
                               .spot = true};
  tw_cost_eval(&cp, &long_job, &spot, 0, 0, &c);
  assert_int_equal(c.spot_extra_s, (360 * 3600 + 300) / 10);
  assert_int_equal(c.spot_risk_uusd,
                   ((int64_t)c.spot_extra_s * 1000000 + 3599) / 3600);
  /* a checkpoint every hour loses half an hour per interruption */
  long_job.checkpoint_s = 3600;
  tw_cost_eval(&cp, &long_job, &spot, 0, 0, &c);
  assert_int_equal(c.spot_extra_s, (1800 + 300 + 9) / 10);
  assert_int_equal(tw_cost_egress_uusd(1500000000, 90000), 135000);
  /* 1 GB over 1 Gbit/s = 8 s, plus 3 round trips of 100 ms */
  assert_int_equal(tw_cost_transfer_s(1000000000, 100000, 1000000, 3), 9);
}

/* ---- properties over random catalogs ------------------------------------- */

static const char *const JOBS[] = {
    "name: a\nresources: {cpus: 8+}\n",
    "name: b\nresources: {accelerators: A100:4}\nduration: 3h\n",
    "name: c\nresources: {accelerators: A100-80GB:2, use_spot: "
    "true}\nplacement: {residency: EU}\n",
    "name: d\nresources: {cpus: 4+, memory: 16+}\nplacement: {providers: [aws, "
    "alibaba]}\n",
    "name: e\nresources: {cpus: 2}\nplacement: {regions: [\"aws:us-*\", "
    "\"alibaba:eu-*\"]}\n",
    "name: f\nresources: {accelerators: H100:1}\nmax_price_per_hour: 20\n",
    "name: g\nresources: {cpus: 16+}\nduration: 2h\ndatasets: [{uri: s3://x/y, "
    "size: 800GB, location: aws:eu-west-1}]\n",
    "name: h\nresources: {accelerators: T4:1, market: on-demand}\ndatasets: "
    "[{uri: s3://x/z, size: 50TB, location: alibaba:ap-south-1}]\n",
    "name: i\nresources: {cpus: 32+}\nnodes: 4\nduration: 6h\ncheckpoint: "
    "{interval: 30m, uri: s3://c/}\n",
    "name: j\nresources: {cpus: 8+}\ndeadline: 2025-11-30T02:00:00Z\nduration: "
    "90m\n"
    "datasets: [{uri: s3://x/w, size: 30TB, location: azure:westeurope}]\n",
    "name: k\nresources: {accelerators: H100:8}\nplacement: {regions: "
    "[\"aws:eu-west-1\"]}\n",
    "name: l\nresources: {accelerators: MI300:1}\n",
};

static void index_search_agrees_with_a_full_scan(void **state) {
  (void)state;
  uint64_t seed = 0x5eed1234;
  const char *seen[8];
  size_t n_seen = 0;
  for (int round = 0; round < 6; round++) {
    size_t n = 200 + round * 700;
    struct tw_offer *cat = tp_catalog(seed + (uint64_t)round, n);
    struct tw_offer_source src;
    tw_offer_source_array(&src, cat, n);
    struct tw_offer_index *ix;
    assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
    struct tw_plan_ws *ws = tw_plan_ws_new();
    for (size_t j = 0; j < sizeof JOBS / sizeof *JOBS; j++) {
      struct tw_job_spec spec;
      assert_int_equal(tp_spec(JOBS[j], &spec), 0);
      struct tw_place_snapshot snap = {.index = ix};
      struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
      struct tw_plan_opts fast = {0}, full = {.counts = true};
      struct tw_plan a, b, c;
      assert_int_equal(tw_plan_make(SET, &snap, &in, &fast, ws, &a, NULL),
                       TW_OK);
      assert_int_equal(tw_plan_make(SET, &snap, &in, &full, ws, &b, NULL),
                       TW_OK);
      assert_int_equal(tw_plan_make(SET, &snap, &in, &fast, ws, &c, NULL),
                       TW_OK);
      /* every strategy, forced, finds the same candidates as the scan */
      static const char *const strategies[] = {
          "cells", "global", "shapes", "locations", "groups", "regions"};
      for (size_t q = 0; q < 6; q++) {
        struct tw_plan_opts fo = {.strategy = strategies[q]};
        struct tw_plan f;
        assert_int_equal(tw_plan_make(SET, &snap, &in, &fo, ws, &f, NULL),
                         TW_OK);
        if (f.n != b.n)
          fail_msg("seed %llu round %d job %zu: %s found %zu, scan %zu",
                   (unsigned long long)seed, round, j, strategies[q], f.n, b.n);
        for (size_t k = 0; k < f.n; k++)
          if (f.cands[k].index != b.cands[k].index)
            fail_msg(
                "seed %llu round %d job %zu rank %zu: %s chose %s, scan %s",
                (unsigned long long)seed, round, j, k, strategies[q],
                f.cands[k].offer->id, b.cands[k].offer->id);
        tw_plan_release(&f);
      }
      size_t q;
      for (q = 0; q < n_seen && strcmp(seen[q], a.strategy); q++)
        ;
      if (q == n_seen && n_seen < 8)
        seen[n_seen++] = a.strategy;
      if (a.n != b.n)
        fail_msg("seed %llu round %d job %zu: search found %zu, scan %zu "
                 "(strategy %s)",
                 (unsigned long long)seed, round, j, a.n, b.n, a.strategy);
      for (size_t k = 0; k < a.n; k++) {
        if (a.cands[k].index != b.cands[k].index)
          fail_msg("seed %llu round %d job %zu rank %zu: %s vs %s (%s)",
                   (unsigned long long)seed, round, j, k, a.cands[k].offer->id,
                   b.cands[k].offer->id, a.strategy);
        assert_int_equal(a.cands[k].index,
                         c.cands[k].index); /* same input, same plan */
      }
      /* the chosen offer is never dearer than any feasible offer: the
       * scan's candidates are the cheapest of all feasible ones */
      if (b.n) {
        assert_true(b.feasible >= b.n);
        for (size_t k = 1; k < b.n; k++)
          assert_true(b.cands[0].cost.total_uusd <= b.cands[k].cost.total_uusd);
      }
      uint64_t total = b.feasible;
      for (size_t k = 0; k < b.n_rejects; k++)
        total += b.rejects[k].count;
      assert_int_equal(total, n);
      tw_plan_release(&a);
      tw_plan_release(&b);
      tw_plan_release(&c);
      tw_spec_release(&spec);
    }
    tw_plan_ws_free(ws);
    tw_offer_index_unref(ix);
    free(cat);
  }
  /* the jobs above exercise every search strategy */
  for (size_t q = 0; q < n_seen; q++)
    printf("strategy used: %s\n", seen[q]);
  assert_true(n_seen >= 5);
}

/* Every feasible offer, priced by the model one by one, costs at least as
 * much as the first candidate: checked against a brute force that does
 * not use the planner's search at all. */
static void chosen_offer_is_never_dearer_than_any_feasible_one(void **state) {
  (void)state;
  uint64_t seed = 0xc0ffee;
  size_t n = 1500;
  struct tw_offer *cat = tp_catalog(seed, n);
  struct tw_offer_source src;
  tw_offer_source_array(&src, cat, n);
  struct tw_offer_index *ix;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  for (size_t j = 0; j < sizeof JOBS / sizeof *JOBS; j++) {
    struct tw_job_spec spec;
    assert_int_equal(tp_spec(JOBS[j], &spec), 0);
    struct tw_place_snapshot snap = {.index = ix};
    struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
    struct tw_plan best;
    assert_int_equal(tw_plan_make(SET, &snap, &in, NULL, NULL, &best, NULL),
                     TW_OK);
    /* brute force: plan each offer alone (an index of one) */
    size_t feasible = 0;
    for (size_t i = 0; i < n; i++) {
      struct tw_offer_index *one;
      struct tw_offer_source s1;
      tw_offer_source_array(&s1, &cat[i], 1);
      assert_int_equal(tw_offer_index_build(&s1, &one, NULL), TW_OK);
      struct tw_place_snapshot snap1 = {.index = one};
      struct tw_plan p1;
      assert_int_equal(tw_plan_make(SET, &snap1, &in, NULL, NULL, &p1, NULL),
                       TW_OK);
      if (p1.n) {
        feasible++;
        if (!best.n)
          fail_msg("seed %llu job %zu: %s is feasible but the plan is empty",
                   (unsigned long long)seed, j, cat[i].id);
        if (p1.cands[0].cost.total_uusd < best.cands[0].cost.total_uusd)
          fail_msg("seed %llu job %zu: %s costs %lld, less than the chosen %s "
                   "(%lld)",
                   (unsigned long long)seed, j, cat[i].id,
                   (long long)p1.cands[0].cost.total_uusd,
                   best.cands[0].offer->id,
                   (long long)best.cands[0].cost.total_uusd);
      }
      tw_plan_release(&p1);
      tw_offer_index_unref(one);
    }
    if (best.n)
      assert_true(feasible > 0);
    tw_plan_release(&best);
    tw_spec_release(&spec);
  }
  tw_offer_index_unref(ix);
  free(cat);
}

static void same_input_gives_the_same_json(void **state) {
  (void)state;
  struct tw_plan a, b;
  plan_yaml("name: t\nresources: {cpus: 2}\n", true, &a);
  plan_yaml("name: t\nresources: {cpus: 2}\n", true, &b);
  struct tw_buf x, y;
  tw_buf_init(&x);
  tw_buf_init(&y);
  tw_plan_to_json(&a, 0, &x);
  tw_plan_to_json(&b, 0, &y);
  assert_string_equal(x.data, y.data);
  assert_non_null(strstr(
      x.data, "\"candidates\":[{\"rank\":1,\"offer_id\":\"alibaba-main:"));
  tw_buf_release(&x);
  tw_buf_release(&y);
  tw_plan_release(&a);
  tw_plan_release(&b);
}

/* The stored plan read back by a JSON parser: every candidate's money,
 * times and scores are the plan's own numbers. */
static void json_numbers_are_the_plans(void **state) {
  (void)state;
  struct tw_plan a;
  plan_yaml("name: t\nresources: {cpus: 2}\n", true, &a);
  assert_true(a.n > 0);
  struct tw_buf x;
  tw_buf_init(&x);
  tw_plan_to_json(&a, 0, &x);
  json_error_t je;
  json_t *root = json_loads(x.data, 0, &je);
  assert_non_null(root);
  json_t *cands = json_object_get(root, "candidates");
  assert_int_equal(json_array_size(cands), a.n);
  for (size_t j = 0; j < a.n; j++) {
    const struct tw_cand *c = &a.cands[j];
    json_t *o = json_array_get(cands, j), *cost = json_object_get(o, "cost");
    assert_int_equal(json_integer_value(json_object_get(o, "rank")), j + 1);
    assert_int_equal(
        json_integer_value(json_object_get(o, "price_uusd_per_hour")),
        c->offer->price_uusd_per_hour);
    assert_string_equal(json_string_value(json_object_get(o, "market")),
                        tw_market_str(c->offer->market));
    assert_int_equal(json_integer_value(json_object_get(cost, "total_uusd")),
                     c->cost.total_uusd);
    assert_int_equal(
        json_integer_value(json_object_get(cost, "compute_uusd")),
        c->cost.compute_uusd);
    assert_int_equal(
        json_integer_value(json_object_get(cost, "spot_risk_uusd")),
        c->cost.spot_risk_uusd);
    assert_int_equal(json_integer_value(json_object_get(cost, "transfer_s")),
                     c->cost.transfer_s);
    assert_int_equal(
        json_integer_value(json_object_get(cost, "spot_extra_s")),
        c->cost.spot_extra_s);
    assert_non_null(json_string_value(json_object_get(cost, "finish")));
    json_t *sc = json_object_get(o, "scores");
    assert_int_equal(json_object_size(sc), a.n_scores);
    for (size_t i = 0; i < a.n_scores; i++)
      assert_int_equal(
          json_integer_value(json_object_get(sc, a.score_names[i])),
          c->scores[i]);
    assert_int_equal(json_integer_value(json_object_get(o, "total_score")),
                     c->total);
  }
  json_decref(root);
  tw_buf_release(&x);
  tw_plan_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_numbers_are_the_plans),
      cmocka_unit_test(cheapest_feasible_offer_comes_first),
      cmocka_unit_test(counts_name_each_reason),
      cmocka_unit_test(nothing_fits_gives_an_empty_plan),
      cmocka_unit_test(deadline_filter_says_by_how_much),
      cmocka_unit_test(egress_moves_the_choice_to_the_data),
      cmocka_unit_test(cost_model_rounds_up_by_billing_rules),
      cmocka_unit_test(index_search_agrees_with_a_full_scan),
      cmocka_unit_test(chosen_offer_is_never_dearer_than_any_feasible_one),
      cmocka_unit_test(same_input_gives_the_same_json),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
