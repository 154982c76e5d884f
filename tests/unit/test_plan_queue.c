/* Queue order (priority, aging, dominant resource fairness), backfill
 * arithmetic, and shared replication decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/index.h"
#include "policies/place/queue.h"
#include "policies/place/replicate.h"
#include "tests/unit/test_plan_util.h"

#define H (3600LL * 1000)
#define NOW (1000 * H)

static struct tw_queue_params params(void) {
  return (struct tw_queue_params){.aging_per_hour = 10,
                                  .aging_max = 100,
                                  .fair_share_weight = 200,
                                  .capacity_vcpus = 1000,
                                  .capacity_memory_mib = 4000LL * 1024,
                                  .capacity_gpus = 100};
}

static void order_of(const struct tw_queue_job *jobs, size_t n,
                     const struct tw_queue_usage *u, size_t nu,
                     const char *want) {
  struct tw_queue_params p = params();
  size_t order[16];
  tw_queue_order(&p, NOW, jobs, n, u, nu, order, NULL);
  char got[128] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
             jobs[order[i]].id);
  assert_string_equal(got, want);
}

static void priority_then_age_then_given_order(void **state) {
  (void)state;
  struct tw_queue_job j[] = {
      {"a", "t", 0, NOW - 1000, 1, 1, 0},
      {"b", "t", 5, NOW - 1000, 1, 1, 0},
      {"c", "t", 0, NOW - 2000, 1, 1, 0},
      {"d", "t", 0, NOW - 2000, 1, 1, 0},
  };
  order_of(j, 4, NULL, 0, "b c d a");
}

static void aging_lifts_a_waiting_job_up_to_a_cap(void **state) {
  (void)state;
  /* 10 points an hour: a job of priority 0 waiting 6 h passes a fresh one
   * of priority 50, but not one of priority 101 (aging stops at 100) */
  struct tw_queue_job j[] = {
      {"new50", "t", 50, NOW, 0, 0, 0},
      {"old0", "t", 0, NOW - 6 * H, 0, 0, 0},
      {"new101", "t", 101, NOW, 0, 0, 0},
      {"ancient", "t", 0, NOW - 500 * H, 0, 0, 0},
  };
  order_of(j, 4, NULL, 0, "new101 ancient old0 new50");
  struct tw_queue_params p = params();
  size_t order[4];
  int64_t eff[4];
  tw_queue_order(&p, NOW, j, 4, NULL, 0, order, eff);
  assert_int_equal(eff[1], 60000); /* 6 h x 10 points, in milli-points */
  assert_int_equal(eff[3], 100000);
}

static void
a_tenant_holding_much_waits_behind_one_holding_little(void **state) {
  (void)state;
  /* tenant big holds 50% of the GPUs: 100 points behind, at weight 200 */
  struct tw_queue_usage u[] = {{"big", 100, 1024, 50}};
  struct tw_queue_job j[] = {
      {"big1", "big", 10, NOW, 8, 64, 8},
      {"small1", "small", 0, NOW, 8, 64, 8},
  };
  order_of(j, 2, u, 1, "small1 big1");
  /* without what big holds, priority decides */
  order_of(j, 2, NULL, 0, "big1 small1");
}

static void equal_tenants_take_turns(void **state) {
  (void)state;
  /* each job takes 10% of the GPUs: after one job a tenant is 20 points
   * behind the other, so they alternate */
  struct tw_queue_job j[] = {
      {"a1", "a", 0, NOW - 4, 0, 0, 10}, {"a2", "a", 0, NOW - 3, 0, 0, 10},
      {"a3", "a", 0, NOW - 2, 0, 0, 10}, {"b1", "b", 0, NOW - 1, 0, 0, 10},
      {"b2", "b", 0, NOW, 0, 0, 10},
  };
  order_of(j, 5, NULL, 0, "a1 b1 a2 b2 a3");
  struct tw_queue_params p = params();
  assert_int_equal(tw_queue_dominant_ppm(&p, 500, 1024, 10), 500000);
}

static void backfill_start_is_when_enough_nodes_return(void **state) {
  (void)state;
  struct tw_bf_running r[] = {{2, NOW + 3 * H}, {1, NOW + H}, {4, NOW + 5 * H}};
  assert_int_equal(tw_backfill_start_ms(4, r, 3, 4, NOW), NOW);
  assert_int_equal(tw_backfill_start_ms(1, r, 3, 2, NOW), NOW + H);
  assert_int_equal(tw_backfill_start_ms(1, r, 3, 4, NOW), NOW + 3 * H);
  assert_int_equal(tw_backfill_start_ms(1, r, 3, 8, NOW), NOW + 5 * H);
  assert_int_equal(tw_backfill_start_ms(1, r, 3, 9, NOW), INT64_MAX);
}

/* ---- shared replication ------------------------------------------------ */

/* 1 TB in azure:westeurope; compute at $10/h there, $2/h in aws:us-east-1;
 * 5 h jobs.  Alone a job stays by its data ($50 against $10 + $87 of
 * Azure's internet egress + transfer).  Three readers share one $87 copy
 * to us-east-1 ($117 in all against $150); two do not ($107 against
 * $100). */
static void replication_pays_off_with_enough_readers(void **state) {
  (void)state;
  struct tw_offer o[2];
  o[0] = tp_offer("azure", "westeurope", "1", "D8", TW_MARKET_ON_DEMAND,
                  10000000, 8, 32, NULL, 0, "EU");
  o[1] = tp_offer("aws", "us-east-1", "us-east-1a", "m5.2xlarge",
                  TW_MARKET_ON_DEMAND, 2000000, 8, 32, NULL, 0, "US");
  struct tw_offer_source src;
  tw_offer_source_array(&src, o, 2);
  struct tw_offer_index *ix;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_job_spec specs[3];
  const struct tw_job_spec *jobs[3];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tp_spec("name: r\nresources: {cpus: 8}\nduration: 5h\n"
                             "datasets: [{uri: s3://corpus/v3, size: 1TB,"
                             " location: azure:westeurope}]",
                             &specs[i]),
                     0);
    jobs[i] = &specs[i];
  }
  struct tw_place_snapshot snap = {.index = ix};
  struct tw_repl_choice c;
  assert_int_equal(tw_replicate_decide(set, &snap, "s3://corpus/v3", jobs, 3, 0,
                                       NULL, &c, NULL),
                   TW_OK);
  assert_true(c.replicate);
  assert_string_equal(c.target, "aws:us-east-1");
  assert_string_equal(c.source, "azure:westeurope");
  assert_int_equal(c.copy_uusd, 87000000);
  assert_int_equal(c.readers, 3);
  assert_int_equal(c.before_uusd, 3 * 50000000LL);
  assert_int_equal(c.after_uusd, 87000000 + 3 * 10000000LL);
  /* two readers: the copy would cost more than it saves */
  assert_int_equal(tw_replicate_decide(set, &snap, "s3://corpus/v3", jobs, 2, 0,
                                       NULL, &c, NULL),
                   TW_OK);
  assert_false(c.replicate);
  assert_int_equal(c.before_uusd, 2 * 50000000LL);
  /* and a dataset already where the readers want it is never copied */
  struct tw_dataset_set ds;
  tw_dataset_set_init(&ds);
  const char *locs[] = {"azure:westeurope", "aws:us-east-1"};
  tw_dataset_set_add(&ds, "s3://corpus/v3", 1000000000000LL, locs, 2);
  tw_dataset_set_seal(&ds);
  snap.datasets = &ds;
  assert_int_equal(tw_replicate_decide(set, &snap, "s3://corpus/v3", jobs, 3, 0,
                                       NULL, &c, NULL),
                   TW_OK);
  assert_false(c.replicate);
  tw_dataset_set_release(&ds);
  for (int i = 0; i < 3; i++)
    tw_spec_release(&specs[i]);
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix);
}

/* A dataset of tenant a, not shared, cannot steer tenant b's plan: for b
 * the registry's record is as unknown (issue 16, finding 9). */
static void another_tenants_dataset_does_not_steer_a_plan(void **state) {
  (void)state;
  struct tw_offer o[2];
  o[0] = tp_offer("azure", "westeurope", "1", "D8", TW_MARKET_ON_DEMAND,
                  10000000, 8, 32, NULL, 0, "EU");
  o[1] = tp_offer("aws", "us-east-1", "us-east-1a", "m5.2xlarge",
                  TW_MARKET_ON_DEMAND, 2000000, 8, 32, NULL, 0, "US");
  struct tw_offer_source src;
  tw_offer_source_array(&src, o, 2);
  struct tw_offer_index *ix;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_dataset_set ds;
  tw_dataset_set_init(&ds);
  const char *loc = "azure:westeurope";
  tw_dataset_set_add(&ds, "s3://a-private/data", 1000000000000LL, &loc, 1);
  tw_dataset_set_owner(&ds, "s3://a-private/data", "a", false);
  tw_dataset_set_seal(&ds);
  struct tw_place_snapshot snap = {.index = ix, .datasets = &ds};
  static const char *const tenants[] = {"a", "b"};
  static const char *const want[] = {"westeurope", "us-east-1"};
  for (int t = 0; t < 2; t++) {
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "name: r\ntenant: %s\nresources: {cpus: 8}\nduration: 5h\n"
             "datasets: [{uri: s3://a-private/data}]",
             tenants[t]);
    struct tw_job_spec spec;
    assert_int_equal(tp_spec(yaml, &spec), 0);
    struct tw_plan_input in = {.job = &spec, .now_ms = 0};
    struct tw_plan p;
    assert_int_equal(tw_plan_make(set, &snap, &in, NULL, NULL, &p, NULL),
                     TW_OK);
    assert_true(p.n > 0);
    /* a: the data is in westeurope and its egress keeps the job there;
     * b: the record is not b's, so nothing is known of where it is */
    assert_string_equal(p.cands[0].offer->region, want[t]);
    if (t == 1)
      assert_int_equal(p.cands[0].cost.egress_uusd, 0);
    tw_plan_release(&p);
    tw_spec_release(&spec);
  }
  /* shared, b plans with it as a does */
  tw_dataset_set_owner(&ds, "s3://a-private/data", "a", true);
  assert_non_null(tw_dataset_set_find_for(&ds, "s3://a-private/data", "b"));
  tw_dataset_set_owner(&ds, "s3://a-private/data", "a", false);
  assert_null(tw_dataset_set_find_for(&ds, "s3://a-private/data", "b"));
  assert_non_null(tw_dataset_set_find_for(&ds, "s3://a-private/data", "a"));
  tw_dataset_set_release(&ds);
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(another_tenants_dataset_does_not_steer_a_plan),
      cmocka_unit_test(priority_then_age_then_given_order),
      cmocka_unit_test(aging_lifts_a_waiting_job_up_to_a_cap),
      cmocka_unit_test(a_tenant_holding_much_waits_behind_one_holding_little),
      cmocka_unit_test(equal_tenants_take_turns),
      cmocka_unit_test(backfill_start_is_when_enough_nodes_return),
      cmocka_unit_test(replication_pays_off_with_enough_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
