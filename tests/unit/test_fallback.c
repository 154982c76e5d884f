/* The fallback strategies: decisions with their reasons, the order they
 * give the candidates, and the deadline strategy's promise (an adversary
 * interrupting every spot start cannot make the job late). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/spec.h"
#include "policies/fallback/fallback_strategy.h"
#include "policies/place/index.h"
#include "policies/place/plan.h"

static const int64_t T0 = 1764460800000;
#define H 3600LL

static struct tw_fallback_cfg cfg(void) {
  struct tw_fallback_cfg c;
  tw_fallback_cfg_default(&c);
  return c;
}

static struct tw_fallback_job job(enum tw_fallback_event ev,
                                  int interruptions) {
  struct tw_fallback_job j = {.event = ev,
                              .now_ms = T0,
                              .submitted_ms = T0,
                              .work_s = 4 * H,
                              .interruptions = interruptions,
                              .spec_market = TW_MARKET_ANY,
                              .current_market = TW_MARKET_SPOT,
                              .region = "us-east-1",
                              .zone = "us-east-1a"};
  return j;
}

/* ---- names -------------------------------------------------------------- */

static void names_round_trip(void **state) {
  (void)state;
  for (int k = 0; k < TW_FALLBACK_COUNT; k++) {
    enum tw_fallback_kind got;
    assert_true(
        tw_fallback_parse(tw_fallback_name((enum tw_fallback_kind)k), &got));
    assert_int_equal(got, k);
  }
  enum tw_fallback_kind got;
  assert_false(tw_fallback_parse("eager", &got));
  assert_false(tw_fallback_parse(NULL, &got));
  char t[24];
  tw_fallback_fmt_dur(3 * H + 5 * 60, t, sizeof t);
  assert_string_equal(t, "3h05m");
  tw_fallback_fmt_dur(-300, t, sizeof t);
  assert_string_equal(t, "-5m");
  tw_fallback_fmt_dur(42, t, sizeof t);
  assert_string_equal(t, "42s");
}

/* ---- decisions, table-driven ------------------------------------------- */

struct row {
  const char *name;
  enum tw_fallback_kind kind;
  enum tw_fallback_event ev;
  int interruptions;
  int64_t deadline_h; /* 0: none; else hours after T0 */
  int64_t now_h;      /* hours after T0 */
  int64_t done_h;
  enum tw_market spec, current;
  bool spot_offered;
  /* expected */
  enum tw_fallback_action action;
  enum tw_market market;
  bool then_on_demand;
  enum tw_fallback_region region;
  enum tw_market rank_market;
  const char *reason; /* a substring */
};

#define A TW_MARKET_ANY
#define S TW_MARKET_SPOT
#define O TW_MARKET_ON_DEMAND
static const struct row ROWS[] = {
    {"failover first placement", TW_FALLBACK_FAILOVER, TW_FB_PLACE, 0, 0, 0, 0,
     A, A, false, TW_FB_ACT_PLACE, A, false, TW_FB_ANY_REGION, A,
     "failover: cheapest feasible offer"},
    {"failover after an interruption", TW_FALLBACK_FAILOVER, TW_FB_INTERRUPTED,
     1, 0, 0, 0, S, S, false, TW_FB_ACT_PLACE, A, false,
     TW_FB_SAME_REGION_FIRST, S,
     "failover: interruption 1: retrying within us-east-1, then elsewhere"},
    {"failover never moves a running job", TW_FALLBACK_FAILOVER, TW_FB_REVIEW,
     0, 0, 0, 0, A, O, true, TW_FB_ACT_STAY, A, false, TW_FB_ANY_REGION, A,
     "stays"},
    {"eager leaves the region", TW_FALLBACK_EAGER_NEXT_REGION,
     TW_FB_INTERRUPTED, 1, 0, 0, 0, A, S, false, TW_FB_ACT_PLACE, A, false,
     TW_FB_OTHER_REGIONS_FIRST, A, "leaving us-east-1 for another region"},
    {"on-demand-fallback before its limit", TW_FALLBACK_ON_DEMAND,
     TW_FB_INTERRUPTED, 1, 0, 0, 0, S, S, false, TW_FB_ACT_PLACE, A, false,
     TW_FB_SAME_REGION_FIRST, S, "(on-demand after 2 interruptions)"},
    {"on-demand-fallback at its limit, even for a spot spec",
     TW_FALLBACK_ON_DEMAND, TW_FB_INTERRUPTED, 2, 0, 0, 0, S, S, false,
     TW_FB_ACT_PLACE, O, false, TW_FB_SAME_REGION_FIRST, A,
     "2 interruptions (limit 2): on-demand from now on"},
    {"on-demand-fallback stays on-demand while pending", TW_FALLBACK_ON_DEMAND,
     TW_FB_PLACE, 3, 0, 0, 0, A, O, false, TW_FB_ACT_PLACE, O, false,
     TW_FB_SAME_REGION_FIRST, A, "on-demand from now on"},
    {"deadline without one acts as failover", TW_FALLBACK_DEADLINE,
     TW_FB_INTERRUPTED, 1, 0, 0, 0, A, S, false, TW_FB_ACT_PLACE, A, false,
     TW_FB_SAME_REGION_FIRST, A, "deadline (none set, as failover)"},
    {"deadline with room: spot, waits when ahead", TW_FALLBACK_DEADLINE,
     TW_FB_PLACE, 0, 8, 0, 0, A, A, false, TW_FB_ACT_PLACE, S, false,
     TW_FB_ANY_REGION, A,
     "deadline: slack 4h00m absorbs an interruption and restart (2 x 5m): "
     "spot; ahead by 0s, "
     "so waits if no spot is left"},
    {"deadline behind the line: spot, else on-demand", TW_FALLBACK_DEADLINE,
     TW_FB_INTERRUPTED, 1, 8, 2, 0, A, S, false, TW_FB_ACT_PLACE, S, true,
     TW_FB_ANY_REGION, A, "behind by 1h00m, so on-demand if no spot is left"},
    {"deadline out of slack: on-demand", TW_FALLBACK_DEADLINE,
     TW_FB_INTERRUPTED, 1, 5, 1, 0, S, S, false, TW_FB_ACT_PLACE, O, false,
     TW_FB_ANY_REGION, A,
     "deadline: slack 0s cannot absorb another interruption and restart (2 x "
     "5m): on-demand"},
    {"deadline on on-demand with room goes back to spot", TW_FALLBACK_DEADLINE,
     TW_FB_REVIEW, 1, 8, 2, 2, A, O, true, TW_FB_ACT_MOVE, S, true,
     TW_FB_ANY_REGION, A, "back to spot"},
    {"deadline stays on on-demand when no spot is placeable",
     TW_FALLBACK_DEADLINE, TW_FB_REVIEW, 1, 8, 2, 2, A, O, false,
     TW_FB_ACT_STAY, O, false, TW_FB_ANY_REGION, A, "stays on on-demand"},
    {"deadline stays on on-demand when behind", TW_FALLBACK_DEADLINE,
     TW_FB_REVIEW, 1, 8, 4, 1, A, O, true, TW_FB_ACT_STAY, O, false,
     TW_FB_ANY_REGION, A, "stays on on-demand"},
    {"deadline never moves a spot job", TW_FALLBACK_DEADLINE, TW_FB_REVIEW, 0,
     5, 1, 0, A, S, true, TW_FB_ACT_STAY, S, false, TW_FB_ANY_REGION, A,
     "stays on spot"},
    {"deadline keeps an on-demand spec on-demand", TW_FALLBACK_DEADLINE,
     TW_FB_PLACE, 0, 48, 0, 0, O, A, false, TW_FB_ACT_PLACE, A, false,
     TW_FB_ANY_REGION, O, "the spec asks for on-demand"},
};

static void decisions_follow_the_table(void **state) {
  (void)state;
  struct tw_fallback_cfg c = cfg();
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
    const struct row *r = &ROWS[i];
    struct tw_fallback_job j = job(r->ev, r->interruptions);
    j.deadline_ms = r->deadline_h ? T0 + r->deadline_h * H * 1000 : 0;
    j.now_ms = T0 + r->now_h * H * 1000;
    j.done_s = r->done_h * H;
    j.spec_market = r->spec;
    j.current_market = r->current;
    j.spot_offered = r->spot_offered;
    struct tw_fallback_decision d;
    tw_fallback_decide(&c, r->kind, &j, &d);
    if (d.action != r->action || d.market != r->market ||
        d.then_on_demand != r->then_on_demand || d.region != r->region ||
        d.rank_market != r->rank_market || !strstr(d.reason, r->reason))
      fail_msg(
          "%s: action %d market %s then_od %d region %d rank %s reason \"%s\"",
          r->name, d.action, tw_market_str(d.market), d.then_on_demand,
          d.region, tw_market_str(d.rank_market), d.reason);
    assert_int_equal(d.kind, r->kind);
  }
}

static void slack_and_the_uniform_line(void **state) {
  (void)state;
  struct tw_fallback_job j = job(TW_FB_PLACE, 0);
  j.deadline_ms = T0 + 8 * H * 1000;
  j.now_ms = T0 + 2 * H * 1000;
  j.done_s = H;
  /* 6 h left, 3 h of work left */
  assert_int_equal(tw_fallback_slack_s(&j), 3 * H);
  /* a quarter of the window gone: a quarter of 4 h expected */
  assert_int_equal(tw_fallback_expected_done_s(&j), H);
  j.now_ms = T0 + 9 * H * 1000;
  assert_int_equal(tw_fallback_expected_done_s(&j), 4 * H);
}

/* ---- the order of candidates -------------------------------------------- */

static struct tw_offer OFFERS[5];

static void fill(struct tw_offer *o, const char *region, const char *zone,
                 enum tw_market m, int64_t price) {
  tw_offer_init(o);
  snprintf(o->provider, sizeof o->provider, "aws");
  snprintf(o->account, sizeof o->account, "aws");
  snprintf(o->region, sizeof o->region, "%s", region);
  snprintf(o->zone, sizeof o->zone, "%s", zone);
  snprintf(o->instance_type, sizeof o->instance_type, "p3.2xlarge");
  o->market = m;
  o->vcpus = 8;
  o->price_uusd_per_hour = price;
  o->billing_granularity_s = 1;
  tw_offer_make_id(o);
}

/* The plan of a one-hour job over OFFERS, as the scheduler makes it. */
static void rank(struct tw_plan *pl) {
  fill(&OFFERS[0], "us-east-1", "us-east-1a", S, 900000);
  fill(&OFFERS[1], "us-west-2", "us-west-2a", S, 800000);
  fill(&OFFERS[2], "us-east-1", "us-east-1b", S, 1000000);
  fill(&OFFERS[3], "us-east-1", "", O, 3060000);
  fill(&OFFERS[4], "us-west-2", "", O, 3060000);
  struct tw_job_spec spec = {.name = "t", .nodes = 1, .duration_s = H};
  struct tw_offer_source src;
  tw_offer_source_array(&src, OFFERS, 5);
  struct tw_offer_index *ix = NULL;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_place_snapshot snap = {.index = ix};
  struct tw_plan_input in = {.job = &spec, .now_ms = T0};
  struct tw_plan_opts o = {0};
  assert_int_equal(tw_plan_make(set, &snap, &in, &o, NULL, pl, NULL), TW_OK);
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix); /* the candidates point into OFFERS */
}

static void expect_order(const struct tw_plan *pl, const int *idx, size_t n) {
  assert_int_equal(pl->n, n);
  for (size_t i = 0; i < n; i++)
    if (pl->cands[i].offer != &OFFERS[idx[i]])
      fail_msg("position %zu: %s, expected %s", i, pl->cands[i].offer->id,
               OFFERS[idx[i]].id);
}

static void apply_orders_candidates_by_decision(void **state) {
  (void)state;
  struct tw_plan pl;
  struct tw_fallback_decision d = {.market = A};

  rank(&pl); /* by cost: west spot, east-a, east-b, the two on-demand */
  tw_fallback_apply(&d, "us-east-1", &pl);
  expect_order(&pl, (int[]){1, 0, 2, 3, 4}, 5);
  tw_plan_release(&pl);

  rank(&pl); /* failover: the region first, on-demand included */
  d.region = TW_FB_SAME_REGION_FIRST;
  tw_fallback_apply(&d, "us-east-1", &pl);
  expect_order(&pl, (int[]){0, 2, 3, 1, 4}, 5);
  tw_plan_release(&pl);

  rank(&pl); /* eager: the region last */
  d.region = TW_FB_OTHER_REGIONS_FIRST;
  tw_fallback_apply(&d, "us-east-1", &pl);
  expect_order(&pl, (int[]){1, 4, 0, 2, 3}, 5);
  tw_plan_release(&pl);

  rank(&pl); /* deadline, ahead: spot only */
  d = (struct tw_fallback_decision){.market = S};
  tw_fallback_apply(&d, "us-east-1", &pl);
  expect_order(&pl, (int[]){1, 0, 2}, 3);
  tw_plan_release(&pl);

  rank(&pl); /* deadline, behind: spot, then on-demand */
  d.then_on_demand = true;
  tw_fallback_apply(&d, "", &pl);
  expect_order(&pl, (int[]){1, 0, 2, 3, 4}, 5);
  tw_plan_release(&pl);

  rank(&pl); /* on-demand only */
  d = (struct tw_fallback_decision){.market = O,
                                    .region = TW_FB_SAME_REGION_FIRST};
  tw_fallback_apply(&d, "us-west-2", &pl);
  expect_order(&pl, (int[]){4, 3}, 2);
  tw_plan_release(&pl);
}

/* ---- the deadline strategy's promise ------------------------------------ */

/* A job of 4 h due in 6 h; spot is always launchable and an adversary
 * takes every spot instance away 8 minutes after it starts working.  Each
 * start costs the restart overhead (5 min) before work resumes; progress is
 * kept at each notice.  Steps of one minute; returns the minute the work
 * was done, or -1 past 24 h.  *od_min counts minutes on on-demand. */
static int64_t adversary(enum tw_fallback_kind kind, int *od_min) {
  struct tw_fallback_cfg c = cfg();
  int64_t work = 4 * H, done = 0, boot_left = 0;
  int interruptions = 0, up_min = 0;
  enum tw_market on = TW_MARKET_ANY; /* ANY: no instance */
  *od_min = 0;
  for (int64_t t = 0; t < 24 * 60; t++) {
    struct tw_fallback_job j = {.now_ms = T0 + t * 60000,
                                .submitted_ms = T0,
                                .deadline_ms = T0 + 6 * H * 1000,
                                .work_s = work,
                                .done_s = done,
                                .interruptions = interruptions,
                                .spec_market = TW_MARKET_ANY,
                                .current_market = on,
                                .region = "r",
                                .zone = "r-a",
                                .spot_offered = true};
    if (on == TW_MARKET_SPOT && boot_left == 0 && up_min >= 8) {
      interruptions++;
      on = TW_MARKET_ANY;
      j.event = TW_FB_INTERRUPTED;
      j.interruptions = interruptions;
      j.current_market = TW_MARKET_SPOT;
    } else if (on == TW_MARKET_ANY) {
      j.event = TW_FB_PLACE;
    } else {
      j.event = TW_FB_REVIEW;
    }
    struct tw_fallback_decision d;
    tw_fallback_decide(&c, kind, &j, &d);
    if (j.event != TW_FB_REVIEW || d.action == TW_FB_ACT_MOVE) {
      /* spot is cheaper and always launchable here */
      on = d.market == TW_MARKET_ON_DEMAND ? TW_MARKET_ON_DEMAND
                                           : TW_MARKET_SPOT;
      boot_left = c.restart_overhead_s / 60;
      up_min = 0;
    }
    if (on == TW_MARKET_ON_DEMAND)
      (*od_min)++;
    if (boot_left > 0) {
      boot_left--;
      continue;
    }
    done += 60;
    up_min++;
    if (done >= work)
      return t + 1;
  }
  return -1;
}

static void an_adversary_cannot_make_a_deadline_job_late(void **state) {
  (void)state;
  int od;
  int64_t end = adversary(TW_FALLBACK_DEADLINE, &od);
  assert_true(end > 0);
  assert_true(end <= 6 * 60);
  assert_true(od > 0); /* it had to use on-demand to make it */
  /* failover keeps going back to spot and is late */
  int64_t late = adversary(TW_FALLBACK_FAILOVER, &od);
  assert_true(late < 0 || late > 6 * 60);
  assert_int_equal(od, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_round_trip),
      cmocka_unit_test(decisions_follow_the_table),
      cmocka_unit_test(slack_and_the_uniform_line),
      cmocka_unit_test(apply_orders_candidates_by_decision),
      cmocka_unit_test(an_adversary_cannot_make_a_deadline_job_late),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
