/* Each built-in plugin, table-driven: a job, an offer (and the inputs it
 * reads) in; a verdict and its reason, or a score, out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/node.h"
#include "policies/place/cost.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy.h"
#include "tests/unit/test_plan_util.h"

#define NOW 1764460800000LL /* 2025-11-30T00:00:00Z */

/* ---- inputs the hooks read ----------------------------------------------- */

static bool block_zone_b(const void *ctx, const struct tw_offer *o, int64_t now,
                         char *why, size_t whysz) {
  (void)ctx;
  (void)now;
  if (strcmp(o->zone, "us-east-1b"))
    return false;
  snprintf(why, whysz, "zone us-east-1b (spot) until 00:30Z");
  return true;
}

static int64_t quota_headroom(const void *ctx, const char *tenant,
                              const char *res) {
  (void)ctx;
  if (strcmp(tenant, "ml"))
    return TW_QUOTA_UNLIMITED;
  if (!strcmp(res, "vcpus"))
    return 128;
  if (!strcmp(res, "gpus:A100-80GB"))
    return 8;
  if (!strcmp(res, "jobs"))
    return 3;
  return 0;
}

struct row {
  const char *filter;
  const char *job;   /* YAML */
  const char *offer; /* a preset, see make_offer */
  bool pass;
  const char *reason; /* substring of the reason; NULL: pass */
  int64_t amount;     /* -1: not checked */
};

/* Presets: a few offers that differ in one thing each. */
static struct tw_offer make_offer(const char *preset) {
  struct tw_offer o =
      tp_offer("aws", "us-east-1", "us-east-1a", "p4de.24xlarge",
               TW_MARKET_SPOT, 12000000, 96, 1152, "A100-80GB", 8, "US");
  o.interruption_pct = 5;
  if (!strcmp(preset, "eu"))
    o = tp_offer("azure", "westeurope", "1", "ND96amsr_A100_v4",
                 TW_MARKET_ON_DEMAND, 32000000, 96, 1900, "A100-80GB", 8, "EU");
  else if (!strcmp(preset, "nolabel")) {
    o.n_labels = 0;
    snprintf(o.region, sizeof o.region, "mars-1");
  } else if (!strcmp(preset, "zone-b"))
    snprintf(o.zone, sizeof o.zone, "us-east-1b");
  else if (!strcmp(preset, "regional"))
    o.zone[0] = '\0';
  else if (!strcmp(preset, "cpu"))
    o = tp_offer("aws", "us-east-1", "us-east-1a", "c7g.2xlarge",
                 TW_MARKET_ON_DEMAND, 290000, 8, 16, NULL, 0, "US"),
    o.arch = TW_ARCH_ARM64;
  else if (!strcmp(preset, "private"))
    o = tp_offer("slurm", "hpc", "gpu", "gpu-node", TW_MARKET_PRIVATE, 1000000,
                 64, 512, "A100-80GB", 8, "EU"),
    o.capacity = 3;
  tw_offer_make_id(&o);
  return o;
}

static const struct row ROWS[] = {
    /* provider */
    {"provider", "name: t", "aws", true, NULL, -1},
    {"provider", "name: t\nplacement: {providers: [aws]}", "aws", true, NULL,
     -1},
    {"provider", "name: t\nplacement: {providers: [azure, slurm]}", "aws",
     false, "not among the allowed providers (azure, slurm)", -1},
    /* selector: the spec's region globs, zone-level too */
    {"selector", "name: t\nplacement: {regions: [\"aws:us-*\"]}", "aws", true,
     NULL, -1},
    {"selector", "name: t\nplacement: {regions: [\"aws:us-east-?\"]}", "zone-b",
     true, NULL, -1},
    {"selector", "name: t\nplacement: {regions: [\"aws:eu-*\", \"azure:*\"]}",
     "aws", false, "outside the region selectors (aws:eu-*, azure:*)", -1},
    /* residency: the offer's label, else the matrix's region metadata */
    {"residency", "name: t\nplacement: {residency: [US]}", "aws", true, NULL,
     -1},
    {"residency", "name: t\nplacement: {residency: EU}", "aws", false,
     "outside jurisdiction EU", -1},
    {"residency", "name: t\nplacement: {residency: EU}", "nolabel", false,
     "of unknown jurisdiction (need EU)", -1},
    /* health */
    {"health", "name: t", "aws", false,
     "on an unhealthy provider (aws-main: AuthFailure)", -1},
    {"health", "name: t", "eu", true, NULL, -1},
    /* gang */
    {"gang", "name: t\nnodes: 4", "regional", false,
     "regional: no single zone for a gang of 4 nodes", -1},
    {"gang", "name: t\nnodes: 4", "aws", true, NULL, -1},
    {"gang", "name: t", "regional", true, NULL, -1},
    /* arch, cpus, memory, accelerators */
    {"arch", "name: t\nresources: {arch: arm64}", "cpu", true, NULL, -1},
    /* unwritten: x86_64; any: every architecture */
    {"arch", "name: t", "cpu", false, "not x86_64 (the default", -1},
    {"arch", "name: t\nresources: {arch: any}", "cpu", true, NULL, -1},
    {"arch", "name: t", "aws", true, NULL, -1},
    {"arch", "name: t\nresources: {arch: arm64}", "aws", false, "not arm64",
     -1},
    {"cpus", "name: t\nresources: {cpus: 8+}", "cpu", true, NULL, -1},
    {"cpus", "name: t\nresources: {cpus: 16+}", "cpu", false,
     "without 16 vCPUs", -1},
    {"cpus", "name: t\nresources: {cpus: 4}", "cpu", false,
     "without exactly 4 vCPUs", -1},
    {"memory", "name: t\nresources: {memory: 16}", "cpu", true, NULL, -1},
    {"memory", "name: t\nresources: {memory: 32+}", "cpu", false,
     "without 32 GiB of memory", -1},
    /* exact asks: the offer has 8 A100-80GB */
    {"accelerators", "name: t\nresources: {accelerators: A100-80GB:8}", "aws",
     true, NULL, -1},
    {"accelerators", "name: t\nresources: {accelerators: A100:8}", "aws",
     false, "without exactly 8 A100", -1}, /* A100 is the 40 GB one */
    {"accelerators", "name: t\nresources: {accelerators: A100*:8}", "aws",
     true, NULL, -1},
    {"accelerators", "name: t\nresources: {accelerators: [A100:8, A100-80GB:8]}",
     "aws", true, NULL, -1},
    {"accelerators", "name: t\nresources: {accelerators: A100-40GB:8}", "aws",
     false, "without exactly 8 A100-40GB", -1},
    {"accelerators", "name: t\nresources: {accelerators: A100-80GB:4}", "aws",
     false, "without exactly 4 A100-80GB", -1},
    {"accelerators", "name: t\nresources: {accelerators: A100-80GB:4+}", "aws",
     true, NULL, -1},
    {"accelerators", "name: t\nresources: {accelerators: A100*:16+}", "aws",
     false, "without at least 16 A100*", -1},
    {"accelerators", "name: t\nresources: {accelerators: H100:1}", "cpu", false,
     "without exactly 1 H100", -1},
    /* quota: the tenancy hook */
    {"quota", "name: t\ntenant: ml\nresources: {accelerators: A100:8}", "aws",
     true, NULL, -1},
    {"quota",
     "name: t\ntenant: ml\nresources: {accelerators: A100:8}\nnodes: 2", "aws",
     false, "over quota: tenant ml has 128 vCPUs free", 64},
    {"quota", "name: t\ntenant: other\nnodes: 2", "aws", true, NULL, -1},
    /* market: private capacity serves on-demand requests */
    {"market", "name: t\nresources: {use_spot: true}", "aws", true, NULL, -1},
    {"market", "name: t\nresources: {market: on-demand}", "aws", false,
     "not in the on-demand market", -1},
    {"market", "name: t\nresources: {market: on-demand}", "private", true, NULL,
     -1},
    {"market", "name: t\nresources: {market: spot}", "private", false,
     "not in the spot market", -1},
    /* price */
    {"price", "name: t\nmax_price_per_hour: 12", "aws", true, NULL, -1},
    {"price", "name: t\nmax_price_per_hour: \"11.50\"", "aws", false,
     "over max price $11.50/h", 500000},
    /* excluded, blocklist */
    {"excluded", "name: t", "aws", false, "failed this job before", -1},
    {"excluded", "name: t", "eu", true, NULL, -1},
    {"blocklist", "name: t", "zone-b", false,
     "blocklisted: zone us-east-1b (spot) until 00:30Z", -1},
    {"blocklist", "name: t", "aws", true, NULL, -1},
    /* capacity: private offers only */
    {"capacity", "name: t\nnodes: 2", "private", true, NULL, -1},
    {"capacity", "name: t\nnodes: 3", "private", false,
     "short of free nodes (3 wanted, 2 free)", 1},
    {"capacity", "name: t\nnodes: 64", "aws", true, NULL, -1},
    /* backfill: the head job reserved 2 nodes of the private pool from
     * 02:00; 1 node beside it, or ending before it, passes */
    {"backfill", "name: t\nduration: 1h", "private", true, NULL, -1},
    {"backfill", "name: t\nnodes: 2\nduration: 1h", "private", true, NULL, -1},
    {"backfill", "name: t\nnodes: 2\nduration: 3h", "private", false,
     "reserved for job j-head from 2025-11-30T02:00:00.000Z", -1},
    /* deadline: 2 min launch + 1 h; the spot risk adds a little */
    {"deadline", "name: t\nduration: 1h\ndeadline: 2025-11-30T02:00:00Z", "aws",
     true, NULL, -1},
    {"deadline", "name: t\nduration: 1h\ndeadline: 2025-11-30T01:00:00Z", "eu",
     false, "cannot finish before the deadline: short by 2m00s", 120},
};

static void each_filter_gives_its_verdict(void **state) {
  (void)state;
  struct tw_netmatrix *net = tw_netmatrix_empty();
  struct tw_place_blocklist bl = {.blocked = block_zone_b, .generation = 1};
  struct tw_quota_state q = {.headroom = quota_headroom, .generation = 1};
  struct tw_health h = {.n = 1, .generation = 1};
  snprintf(h.account[0], sizeof h.account[0], "aws-main");
  snprintf(h.reason[0], sizeof h.reason[0], "AuthFailure");
  struct tw_capacity_view cap;
  tw_capacity_view_init(&cap);
  struct tw_reservations res;
  tw_reservations_init(&res);
  struct tw_offer priv = make_offer("private");
  tw_capacity_view_take(&cap, priv.id, 1); /* 3 listed, 1 taken since: 2 free */
  struct tw_reservation rv = {.start_ms = NOW + 2 * 3600000, .nodes = 1};
  snprintf(rv.offer_id, sizeof rv.offer_id, "%s", priv.id);
  snprintf(rv.job_id, sizeof rv.job_id, "j-head");
  tw_reservations_add(&res, &rv);
  struct tw_cost_params cp;
  tw_cost_params_default(&cp);
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
    const struct row *r = &ROWS[i];
    const struct tw_policy_ops *ops = tw_policy_find_filter(r->filter);
    assert_non_null(ops);
    assert_non_null(ops->filter);
    struct tw_job_spec spec;
    assert_int_equal(tp_spec(r->job, &spec), 0);
    struct tw_offer o = make_offer(r->offer);
    const char *excl[] = {make_offer("aws").id};
    struct tw_offer aws = make_offer("aws");
    excl[0] = aws.id;
    struct tw_place_ctx ctx = {
        .version = TW_POLICY_ABI_VERSION,
        .job = &spec,
        .now_ms = NOW,
        .duration_s = spec.duration_s ? spec.duration_s : cp.default_duration_s,
        .nodes = spec.nodes ? spec.nodes : 1,
        .cost = &cp,
        .net = net,
        .datasets = &tw_dataset_set_empty,
        .quota = &q,
        .blocklist = &bl,
        .health = &h,
        .capacity = &cap,
        .reservations = &res,
        .excluded = excl,
        .n_excluded = 1,
        .job_id = "j-other",
        .tenant = spec.tenant ? spec.tenant : "default",
        .region = -1};
    struct tw_cost c;
    struct tw_cost_offer co = {.price_uusd_per_hour = o.price_uusd_per_hour,
                               .granularity_s = o.billing_granularity_s,
                               .min_charge_s = o.min_charge_s,
                               .interruption_pct = o.interruption_pct,
                               .spot = o.market == TW_MARKET_SPOT};
    struct tw_cost_job cj = {
        .duration_s = ctx.duration_s, .nodes = ctx.nodes, .now_ms = NOW};
    tw_cost_eval(&cp, &cj, &co, 0, 0, &c);
    if (ops->scope == TW_SCOPE_OFFER || !ops->scope)
      ctx.offer_cost = &c;
    struct tw_policy self = {.ops = ops};
    if (ops->configure)
      assert_int_equal(
          ops->configure(NULL, "policies.filters[0]", &self.state, NULL),
          TW_OK);
    struct tw_verdict v = {.pass = true};
    ops->filter(&self, &ctx, &o, &v);
    if (v.pass != r->pass)
      fail_msg("row %zu (%s, %s): pass %d, want %d (%s)", i, r->filter,
               r->offer, v.pass, r->pass, v.reason);
    if (r->reason && !strstr(v.reason, r->reason))
      fail_msg("row %zu (%s): reason \"%s\", want \"%s\"", i, r->filter,
               v.reason, r->reason);
    if (r->amount >= 0 && v.amount != r->amount)
      fail_msg("row %zu (%s): amount %lld, want %lld", i, r->filter,
               (long long)v.amount, (long long)r->amount);
    if (ops->release)
      ops->release(self.state);
    else
      free(self.state);
    tw_spec_release(&spec);
  }
  tw_capacity_view_release(&cap);
  tw_reservations_release(&res);
  tw_netmatrix_free(net);
}

/* Filters configured from the policy set: label selectors and latency. */
static void configured_filters_read_their_settings(void **state) {
  (void)state;
  static const char cfg[] =
      "filters:\n"
      "  - {name: selector, selectors: [{label: jurisdiction, not_in: [CN]},"
      " {label: zone, glob: \"us-east-1*\"}]}\n"
      "  - {name: latency, max_rtt_ms: 50, from: [\"aws:us-east-1\"]}\n"
      "network_dir: .\n"
      "network: x.net\n";
  char dir[] = "/tmp/tw-pol-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/x.net", dir);
  FILE *f = fopen(path, "w");
  fputs("tradewind-network 1\nregion aws:us-east-1 lat=39 lon=-77\n"
        "region aws:us-west-2 lat=45.8 lon=-119.7\n",
        f);
  fclose(f);
  struct tw_policy_set *set;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), dir, &set, &err))
    fail_msg("%s", err.msg);
  unlink(path);
  rmdir(dir);
  struct tw_job_spec spec;
  assert_int_equal(tp_spec("name: t", &spec), 0);
  struct tw_place_ctx ctx = {.job = &spec,
                             .net = set->net,
                             .nodes = 1,
                             .region = -1,
                             .datasets = &tw_dataset_set_empty};
  struct {
    const char *region, *zone, *juris;
    bool sel, lat;
  } cases[] = {
      {"us-east-1", "us-east-1a", "US", true, true},
      {"us-east-1", "us-east-1a", "CN", false, true},
      {"us-west-2", "us-west-2a", "US", false, false},
  };
  for (size_t i = 0; i < 3; i++) {
    struct tw_offer o =
        tp_offer("aws", cases[i].region, cases[i].zone, "m5.large",
                 TW_MARKET_ON_DEMAND, 96000, 2, 8, NULL, 0, cases[i].juris);
    struct tw_verdict v = {.pass = true};
    set->filters[0].ops->filter(&set->filters[0], &ctx, &o, &v);
    assert_int_equal(v.pass, cases[i].sel);
    v = (struct tw_verdict){.pass = true};
    set->filters[1].ops->filter(&set->filters[1], &ctx, &o, &v);
    assert_int_equal(v.pass, cases[i].lat);
    if (!cases[i].lat)
      assert_non_null(strstr(v.reason, "over 50 ms from aws:us-east-1"));
  }
  tw_spec_release(&spec);
  tw_policy_set_unref(set);
}

/* Scores: raw values and normalization. */
static void scores_rank_as_documented(void **state) {
  (void)state;
  int64_t costs[] = {200, 100, 400, 0};
  tw_policy_normalize_inverse(costs, 3);
  assert_int_equal(costs[0], TW_SCORE_MAX / 2);
  assert_int_equal(costs[1], TW_SCORE_MAX);
  assert_int_equal(costs[2], TW_SCORE_MAX / 4);
  int64_t zero[] = {0, 0};
  tw_policy_normalize_inverse(zero, 2);
  assert_int_equal(zero[0], TW_SCORE_MAX);

  static const char cfg[] =
      "scores:\n"
      "  - {name: cost, weight: 1}\n"
      "  - {name: packing, weight: 1, mode: binpack}\n"
      "  - {name: preference, weight: 1, prefer: [{match: \"slurm:*\","
      " bonus: 700000}, {match: \"aws:us-*\", bonus: 300000}]}\n";
  struct tw_policy_set *set;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), NULL, &set, &err))
    fail_msg("%s", err.msg);
  struct tw_job_spec spec;
  assert_int_equal(tp_spec("name: t\nnodes: 2", &spec), 0);
  struct tw_place_ctx ctx = {.job = &spec,
                             .nodes = 2,
                             .capacity = &tw_capacity_view_empty,
                             .net = set->net};
  struct tw_offer pool = make_offer("private"), cloud = make_offer("aws");
  pool.capacity = 4;
  struct tw_cand a = {.offer = &pool}, b = {.offer = &cloud};
  /* bin-packing: 2 of 4 nodes left after the job: half the maximum */
  assert_int_equal(set->scores[1].ops->score(&set->scores[1], &ctx, &a),
                   TW_SCORE_MAX / 2);
  assert_int_equal(set->scores[1].ops->score(&set->scores[1], &ctx, &b),
                   TW_SCORE_MAX / 2);
  pool.capacity = 2;
  assert_int_equal(set->scores[1].ops->score(&set->scores[1], &ctx, &a),
                   TW_SCORE_MAX);
  assert_int_equal(set->scores[2].ops->score(&set->scores[2], &ctx, &a),
                   700000);
  assert_int_equal(set->scores[2].ops->score(&set->scores[2], &ctx, &b),
                   300000);
  struct tw_offer eu = make_offer("eu");
  struct tw_cand c = {.offer = &eu};
  assert_int_equal(set->scores[2].ops->score(&set->scores[2], &ctx, &c), 0);
  tw_spec_release(&spec);
  tw_policy_set_unref(set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(each_filter_gives_its_verdict),
      cmocka_unit_test(configured_filters_read_their_settings),
      cmocka_unit_test(scores_rank_as_documented),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
