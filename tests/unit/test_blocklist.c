/* The blocklist: offers, then zones, then regions as failures repeat, each
 * for a while, and the read-only snapshot placement consults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "broker/sched/blocklist.h"
#include "policies/place/inputs.h"

#define MIN (60 * 1000LL)
static const int64_t T0 = 1764460800000;

static struct tw_offer offer(const char *region, const char *zone,
                             const char *type, enum tw_market m) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "aws");
  snprintf(o.account, sizeof o.account, "aws-main");
  snprintf(o.region, sizeof o.region, "%s", region);
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.market = m;
  tw_offer_make_id(&o);
  return o;
}

/* The scope of the widest block on o at now, or -1. */
static int blocked(struct tw_blocklist *bl, const struct tw_offer *o,
                   int64_t now) {
  struct tw_blocklist_snap s;
  tw_blocklist_snapshot(bl, now, &s);
  const struct tw_block *b = tw_blocklist_snap_match(&s, o, now);
  int r = b ? (int)b->scope : -1;
  tw_blocklist_snap_release(&s);
  return r;
}

static void capacity_error_blocks_the_offer_for_a_while(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  struct tw_offer a =
      offer("us-east-1", "us-east-1a", "p3.2xlarge", TW_MARKET_SPOT);
  struct tw_offer b =
      offer("us-east-1", "us-east-1a", "p3.8xlarge", TW_MARKET_SPOT);
  enum tw_block_scope w;
  tw_blocklist_report(bl, &a, TW_BLOCK_CAPACITY, T0, &w);
  assert_int_equal(w, TW_BLOCK_OFFER);
  assert_int_equal(blocked(bl, &a, T0), TW_BLOCK_OFFER);
  assert_int_equal(blocked(bl, &b, T0), -1);
  assert_int_equal(blocked(bl, &a, T0 + 10 * MIN - 1), TW_BLOCK_OFFER);
  assert_int_equal(blocked(bl, &a, T0 + 10 * MIN), -1);
  tw_blocklist_free(bl);
}

static void repeated_failures_of_one_offer_double_its_block(void **state) {
  (void)state;
  struct tw_blocklist_opts o = {.zone_after = 99};
  struct tw_blocklist *bl = tw_blocklist_new(&o);
  struct tw_offer a =
      offer("us-east-1", "us-east-1a", "p3.2xlarge", TW_MARKET_SPOT);
  tw_blocklist_report(bl, &a, TW_BLOCK_CAPACITY, T0, NULL);
  tw_blocklist_report(bl, &a, TW_BLOCK_INTERRUPTION, T0 + MIN, NULL);
  struct tw_blocklist_snap s;
  tw_blocklist_snapshot(bl, T0 + MIN, &s);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.items[0].failures, 2);
  assert_string_equal(s.items[0].reason,
                      "1 capacity error and 1 interruption in 30 min");
  char text[400];
  tw_block_describe(&s.items[0], text, sizeof text);
  assert_string_equal(
      text, "offer aws-main:us-east-1:us-east-1a:p3.2xlarge:spot (spot)"
            " until 2025-11-30T00:21:00.000Z: 1 capacity error and 1"
            " interruption in 30 min");
  tw_blocklist_snap_release(&s);
  /* the second failure: 20 minutes from then */
  assert_int_equal(blocked(bl, &a, T0 + 20 * MIN), TW_BLOCK_OFFER);
  assert_int_equal(blocked(bl, &a, T0 + 21 * MIN), -1);
  tw_blocklist_free(bl);
}

static void
failures_across_a_zone_block_the_zone_for_that_market(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  const char *types[] = {"p3.2xlarge", "p3.8xlarge", "g5.xlarge"};
  enum tw_block_scope w = TW_BLOCK_OFFER;
  for (int i = 0; i < 3; i++) {
    struct tw_offer o =
        offer("us-east-1", "us-east-1a", types[i], TW_MARKET_SPOT);
    tw_blocklist_report(bl, &o, TW_BLOCK_CAPACITY, T0 + i * MIN, &w);
    assert_int_equal(w, i < 2 ? TW_BLOCK_OFFER : TW_BLOCK_ZONE);
  }
  struct tw_offer other =
      offer("us-east-1", "us-east-1a", "m5.large", TW_MARKET_SPOT);
  struct tw_offer od =
      offer("us-east-1", "us-east-1a", "m5.large", TW_MARKET_ON_DEMAND);
  struct tw_offer next =
      offer("us-east-1", "us-east-1b", "m5.large", TW_MARKET_SPOT);
  assert_int_equal(blocked(bl, &other, T0 + 3 * MIN), TW_BLOCK_ZONE);
  /* spot running out says nothing about on-demand, nor the next zone */
  assert_int_equal(blocked(bl, &od, T0 + 3 * MIN), -1);
  assert_int_equal(blocked(bl, &next, T0 + 3 * MIN), -1);
  /* the zone block lasts 30 minutes from the third failure */
  assert_int_equal(blocked(bl, &other, T0 + 32 * MIN - 1), TW_BLOCK_ZONE);
  assert_int_equal(blocked(bl, &other, T0 + 32 * MIN), -1);
  tw_blocklist_free(bl);
}

static void two_zones_blocked_block_the_region(void **state) {
  (void)state;
  struct tw_blocklist_opts opts = {.zone_after = 2};
  struct tw_blocklist *bl = tw_blocklist_new(&opts);
  enum tw_block_scope w;
  const char *zones[] = {"us-east-1a", "us-east-1b"};
  for (int z = 0; z < 2; z++)
    for (int i = 0; i < 2; i++) {
      struct tw_offer o =
          offer("us-east-1", zones[z], i ? "p3.8xlarge" : "p3.2xlarge",
                TW_MARKET_SPOT);
      tw_blocklist_report(bl, &o, TW_BLOCK_INTERRUPTION, T0, &w);
    }
  assert_int_equal(w, TW_BLOCK_REGION);
  struct tw_offer c =
      offer("us-east-1", "us-east-1c", "c5.xlarge", TW_MARKET_SPOT);
  struct tw_offer west =
      offer("us-west-2", "us-west-2a", "c5.xlarge", TW_MARKET_SPOT);
  assert_int_equal(blocked(bl, &c, T0 + MIN), TW_BLOCK_REGION);
  assert_int_equal(blocked(bl, &west, T0 + MIN), -1);
  /* the region outlives its zones' blocks */
  assert_int_equal(blocked(bl, &c, T0 + 59 * MIN), TW_BLOCK_REGION);
  assert_int_equal(blocked(bl, &c, T0 + 60 * MIN), -1);
  tw_blocklist_free(bl);
}

static void regional_offers_escalate_to_the_region(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  enum tw_block_scope w = TW_BLOCK_OFFER;
  for (int i = 0; i < 3; i++) {
    struct tw_offer o = offer(
        "cn-hangzhou", "", i ? "ecs.g7.large" : "ecs.c7.large", TW_MARKET_SPOT);
    tw_blocklist_report(bl, &o, TW_BLOCK_CAPACITY, T0, &w);
  }
  assert_int_equal(w, TW_BLOCK_REGION);
  struct tw_offer o = offer("cn-hangzhou", "", "ecs.r7.large", TW_MARKET_SPOT);
  assert_int_equal(blocked(bl, &o, T0), TW_BLOCK_REGION);
  tw_blocklist_free(bl);
}

static void a_success_in_the_zone_breaks_the_streak(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  const char *types[] = {"p3.2xlarge", "p3.8xlarge", "g5.xlarge", "g5.2xlarge"};
  enum tw_block_scope w = TW_BLOCK_OFFER;
  struct tw_offer ok =
      offer("us-east-1", "us-east-1a", "m5.large", TW_MARKET_SPOT);
  for (int i = 0; i < 4; i++) {
    struct tw_offer o =
        offer("us-east-1", "us-east-1a", types[i], TW_MARKET_SPOT);
    tw_blocklist_report(bl, &o, TW_BLOCK_CAPACITY, T0 + i * MIN, &w);
    /* one launch in two succeeds there: random failures, not a shortage */
    if (i % 2)
      tw_blocklist_report_ok(bl, &ok, T0 + i * MIN);
    assert_int_equal(w, TW_BLOCK_OFFER);
  }
  /* the failed offers themselves stay blocked */
  struct tw_offer first =
      offer("us-east-1", "us-east-1a", types[0], TW_MARKET_SPOT);
  assert_int_equal(blocked(bl, &first, T0 + 4 * MIN), TW_BLOCK_OFFER);
  assert_int_equal(blocked(bl, &ok, T0 + 4 * MIN), -1);
  tw_blocklist_free(bl);
}

static void failures_outside_the_window_are_forgotten(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  const char *types[] = {"p3.2xlarge", "p3.8xlarge", "g5.xlarge"};
  enum tw_block_scope w = TW_BLOCK_OFFER;
  for (int i = 0; i < 3; i++) {
    struct tw_offer o =
        offer("us-east-1", "us-east-1a", types[i], TW_MARKET_SPOT);
    /* 20 minutes apart: never three inside one 30-minute window */
    tw_blocklist_report(bl, &o, TW_BLOCK_CAPACITY, T0 + i * 20 * MIN, &w);
    assert_int_equal(w, TW_BLOCK_OFFER);
  }
  tw_blocklist_free(bl);
}

static void a_snapshot_does_not_change_with_the_blocklist(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  struct tw_offer a =
      offer("us-east-1", "us-east-1a", "p3.2xlarge", TW_MARKET_SPOT);
  tw_blocklist_report(bl, &a, TW_BLOCK_CAPACITY, T0, NULL);
  struct tw_blocklist_snap s;
  tw_blocklist_snapshot(bl, T0, &s);
  tw_blocklist_clear(bl);
  assert_non_null(tw_blocklist_snap_match(&s, &a, T0 + MIN));
  /* a snapshot still honours each block's end */
  assert_null(tw_blocklist_snap_match(&s, &a, T0 + 10 * MIN));
  tw_blocklist_snap_release(&s);
  assert_int_equal(blocked(bl, &a, T0), -1);
  tw_blocklist_free(bl);
}

static void placement_hook_answers_from_the_snapshot(void **state) {
  (void)state;
  struct tw_blocklist *bl = tw_blocklist_new(NULL);
  struct tw_offer a =
      offer("us-east-1", "us-east-1a", "p3.2xlarge", TW_MARKET_SPOT);
  struct tw_offer b =
      offer("us-east-1", "us-east-1b", "p3.2xlarge", TW_MARKET_SPOT);
  struct tw_blocklist_snap s0;
  tw_blocklist_snapshot(bl, T0, &s0);
  tw_blocklist_report(bl, &a, TW_BLOCK_CAPACITY, T0, NULL);
  struct tw_blocklist_snap s;
  tw_blocklist_snapshot(bl, T0, &s);
  /* placement caches verdicts per generation: it must change */
  assert_true(s.generation != s0.generation);
  struct tw_place_blocklist hook;
  tw_blocklist_place_hook(&s, &hook);
  assert_int_equal(hook.generation, s.generation);
  char why[200] = "";
  assert_true(hook.blocked(hook.ctx, &a, T0 + MIN, why, sizeof why));
  assert_non_null(strstr(
      why, "offer aws-main:us-east-1:us-east-1a:p3.2xlarge:spot (spot)"));
  assert_false(hook.blocked(hook.ctx, &b, T0 + MIN, why, sizeof why));
  assert_false(hook.blocked(hook.ctx, &a, T0 + 10 * MIN, NULL, 0));
  tw_blocklist_snap_release(&s);
  tw_blocklist_snap_release(&s0);
  /* expiry changes the answers too */
  tw_blocklist_snapshot(bl, T0 + 10 * MIN, &s0);
  assert_int_equal(s0.n, 0);
  assert_true(s0.generation != hook.generation);
  tw_blocklist_snap_release(&s0);
  tw_blocklist_free(bl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(capacity_error_blocks_the_offer_for_a_while),
      cmocka_unit_test(repeated_failures_of_one_offer_double_its_block),
      cmocka_unit_test(failures_across_a_zone_block_the_zone_for_that_market),
      cmocka_unit_test(two_zones_blocked_block_the_region),
      cmocka_unit_test(regional_offers_escalate_to_the_region),
      cmocka_unit_test(failures_outside_the_window_are_forgotten),
      cmocka_unit_test(a_success_in_the_zone_breaks_the_streak),
      cmocka_unit_test(a_snapshot_does_not_change_with_the_blocklist),
      cmocka_unit_test(placement_hook_answers_from_the_snapshot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
