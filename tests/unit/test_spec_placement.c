/* test_spec_placement.c - a job's placement.selectors, max_rtt_ms and near
 * read by the selector and latency filters, through whole plans with
 * rejections counted: which offers remain, how many each filter refused
 * and the reason it shows.  Table-driven, under two policy sets: one with
 * no selectors or bound of its own, one with the operator's (the job's
 * narrow them, never widen them; the tighter bound wins).  Every row runs
 * twice through one workspace, so that a verdict cached for one job is
 * never reused for another that differs only in these fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/place/index.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"
#include "tests/unit/test_plan_util.h"

#define NOW 1764460800000LL /* 2025-11-30T00:00:00Z */

/* Round trips (ms): us-east-1 to us-west-2 60, to eu-west-1 68, to
 * westeurope 80, to cn-hangzhou 200; westeurope to eu-west-1 15;
 * anything else the default 150. */
static const char NET[] = "tradewind-network 1\n"
                          "default rtt_ms=150\n"
                          "link aws:us-east-1 aws:us-west-2 rtt_ms=60\n"
                          "link aws:us-east-1 aws:eu-west-1 rtt_ms=68\n"
                          "link aws:us-east-1 azure:westeurope rtt_ms=80\n"
                          "link aws:us-east-1 alibaba:cn-hangzhou rtt_ms=200\n"
                          "link azure:westeurope aws:eu-west-1 rtt_ms=15\n";

static const char PLAIN[] = "network_dir: .\nnetwork: x.net\n";
static const char OPERATOR[] =
    "filters:\n"
    "  - provider\n"
    "  - {name: selector, selectors: [{label: jurisdiction, not_in: [CN]}]}\n"
    "  - {name: latency, max_rtt_ms: 100, from: [\"aws:us-east-1\"]}\n"
    "  - cpus\n"
    "network_dir: .\n"
    "network: x.net\n";

#define N_OFFERS 6
static struct tw_offer OFFERS[N_OFFERS];
static struct tw_offer_index *IX;
static struct tw_policy_set *SETS[2];

static struct tw_policy_set *parse_set(const char *cfg, const char *dir) {
  struct tw_policy_set *set = NULL;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), dir, &set, &err))
    fail_msg("policy set: %s", err.msg);
  return set;
}

static int setup(void **state) {
  (void)state;
  const enum tw_market D = TW_MARKET_ON_DEMAND;
  OFFERS[0] = tp_offer("aws", "us-east-1", "us-east-1a", "m5.large", D, 96000,
                       2, 8, NULL, 0, "US");
  snprintf(OFFERS[0].rack, sizeof OFFERS[0].rack, "r12");
  tw_offer_make_id(&OFFERS[0]);
  OFFERS[1] = tp_offer("aws", "us-east-1", "us-east-1b", "m5.large", D, 97000,
                       2, 8, NULL, 0, "US");
  OFFERS[2] = tp_offer("aws", "us-west-2", "us-west-2a", "m5.large", D, 98000,
                       2, 8, NULL, 0, "US");
  OFFERS[3] = tp_offer("azure", "westeurope", "1", "D2s_v5", D, 99000, 2, 8,
                       NULL, 0, "EU");
  OFFERS[4] = tp_offer("alibaba", "cn-hangzhou", "cn-hangzhou-h",
                       "ecs.g7.large", D, 50000, 2, 8, NULL, 0, "CN");
  OFFERS[5] = tp_offer("aws", "eu-west-1", "eu-west-1a", "m5.large", D, 101000,
                       2, 8, NULL, 0, "EU");
  struct tw_offer_source src;
  tw_offer_source_array(&src, OFFERS, N_OFFERS);
  if (tw_offer_index_build(&src, &IX, NULL))
    return -1;
  char dir[] = "/tmp/tw-specpl-XXXXXX";
  if (!mkdtemp(dir))
    return -1;
  char path[128];
  snprintf(path, sizeof path, "%s/x.net", dir);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(NET, f);
  fclose(f);
  SETS[0] = parse_set(PLAIN, dir);
  SETS[1] = parse_set(OPERATOR, dir);
  unlink(path);
  rmdir(dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_policy_set_unref(SETS[0]);
  tw_policy_set_unref(SETS[1]);
  tw_offer_index_unref(IX);
  return 0;
}

struct want {
  const char *filter;
  uint64_t count;
  const char *reason; /* substring; NULL: not checked */
};

struct row {
  int set;         /* 0: PLAIN, 1: OPERATOR */
  const char *job; /* YAML */
  uint64_t feasible;
  struct want rej[2]; /* every other filter refuses nothing */
};

static const struct row ROWS[] = {
    /* no selectors, no bound: everything fits */
    {0, "name: t", 6, {{0}}},
    /* in, not_in, exists, glob on topology labels */
    {0,
     "name: t\nplacement: {selectors: [{label: region, in: [us-east-1, "
     "us-west-2]}]}",
     3,
     {{"selector", 3, "label region not in (us-east-1, us-west-2)"}}},
    {0,
     "name: t\nplacement: {selectors: [{label: zone, not_in: us-east-1b}]}",
     5,
     {{"selector", 1, "label zone in (us-east-1b)"}}},
    {0,
     "name: t\nplacement: {selectors: [{label: rack, exists: true}]}",
     1,
     {{"selector", 5, "without label rack (job selector)"}}},
    {0,
     "name: t\nplacement: {selectors: [{label: rack, exists: false}]}",
     5,
     {{"selector", 1, "with label rack (job selector)"}}},
    {0,
     "name: t\nplacement: {selectors: [{label: provider, glob: \"aw*\"}]}",
     4,
     {{"selector", 2, "label provider not matching (aw*)"}}},
    /* the offer's own labels: jurisdiction; every selector must match */
    {0,
     "name: t\nplacement: {selectors: [{label: jurisdiction, in: [EU]},"
     " {label: provider, glob: \"az*\"}]}",
     1,
     {{"selector", 5, NULL}}},
    /* with the region globs of placement.regions too */
    {0,
     "name: t\nplacement: {regions: [\"aws:*\"], selectors: [{label: zone, "
     "glob: \"*a\"}]}",
     3,
     {{"selector", 3, NULL}}},
    /* a bound from the users' location: 80 and 200 ms are over 70 */
    {0,
     "name: t\nplacement: {max_rtt_ms: 70, near: aws:us-east-1}",
     4,
     {{"latency", 2, "over 70 ms from aws:us-east-1 (80 ms)"}}},
    /* a bound alone measures from the job's data */
    {0,
     "name: t\ndatasets: [{uri: s3://b/k, size: 1GB, location: "
     "aws:us-east-1}]\n"
     "placement: {max_rtt_ms: 65}",
     3,
     {{"latency", 3, "over 65 ms from the data (68 ms)"}}},
    /* and with no data nor near, it has nothing to measure from */
    {0, "name: t\nplacement: {max_rtt_ms: 1}", 6, {{0}}},
    /* selectors first (stage order), then the bound */
    {0,
     "name: t\nplacement: {selectors: [{label: region, not_in: [us-east-1]}],"
     " max_rtt_ms: 70, near: [aws:us-east-1]}",
     2,
     {{"selector", 2, "label region in (us-east-1)"},
      {"latency", 2, "(80 ms)"}}},
    /* the operator's: CN refused by its selector, 100 ms from us-east-1 */
    {1, "name: t", 5, {{"selector", 1, "label jurisdiction not not in CN"}}},
    /* a job's tighter bound wins over the operator's, from its origins */
    {1,
     "name: t\nplacement: {max_rtt_ms: 70}",
     4,
     {{"selector", 1, NULL},
      {"latency", 1, "over 70 ms from aws:us-east-1 (80 ms)"}}},
    /* a looser one does not widen it */
    {1, "name: t\nplacement: {max_rtt_ms: 5000}", 5, {{"selector", 1, NULL}}},
    /* the job's near adds an origin to the operator's from */
    {1,
     "name: t\nplacement: {max_rtt_ms: 100, near: [azure:westeurope]}",
     4,
     {{"selector", 1, NULL},
      {"latency", 1, "over 100 ms from azure:westeurope (150 ms)"}}},
    /* the job cannot bring back what the operator refused */
    {1,
     "name: t\nplacement: {selectors: [{label: jurisdiction, in: [CN]}]}",
     0,
     {{"selector", 6, NULL}}},
};

static const struct tw_plan_reject *find_reject(const struct tw_plan *p,
                                                const char *filter) {
  for (size_t i = 0; i < p->n_rejects; i++)
    if (!strcmp(p->rejects[i].filter, filter))
      return &p->rejects[i];
  return NULL;
}

static void check_row(size_t i, const struct row *r, struct tw_plan_ws *ws) {
  struct tw_job_spec spec;
  if (tp_spec(r->job, &spec))
    fail_msg("row %zu: spec does not parse", i);
  struct tw_place_snapshot snap = {.index = IX};
  struct tw_plan_input in = {.job = &spec, .now_ms = NOW};
  struct tw_plan_opts o = {.counts = true};
  struct tw_plan p;
  assert_int_equal(tw_plan_make(SETS[r->set], &snap, &in, &o, ws, &p, NULL),
                   TW_OK);
  assert_true(p.counted);
  if (p.feasible != r->feasible || p.n != r->feasible)
    fail_msg("row %zu (%s): %llu feasible, %zu candidates, want %llu", i,
             r->job, (unsigned long long)p.feasible, p.n,
             (unsigned long long)r->feasible);
  uint64_t total = 0;
  for (size_t k = 0; k < p.n_rejects; k++) {
    const struct tw_plan_reject *rj = &p.rejects[k];
    total += rj->count;
    bool wanted = false;
    for (size_t w = 0; w < 2 && r->rej[w].filter; w++)
      wanted |= !strcmp(r->rej[w].filter, rj->filter);
    if (!wanted && rj->count)
      fail_msg("row %zu (%s): %s refused %llu (%s)", i, r->job, rj->filter,
               (unsigned long long)rj->count, rj->reason);
  }
  for (size_t w = 0; w < 2 && r->rej[w].filter; w++) {
    const struct want *wt = &r->rej[w];
    const struct tw_plan_reject *rj = find_reject(&p, wt->filter);
    if (!rj || rj->count != wt->count)
      fail_msg("row %zu (%s): %s refused %llu, want %llu", i, r->job,
               wt->filter, rj ? (unsigned long long)rj->count : 0ULL,
               (unsigned long long)wt->count);
    if (wt->reason && !strstr(rj->reason, wt->reason))
      fail_msg("row %zu (%s): %s reason \"%s\", want \"%s\"", i, r->job,
               wt->filter, rj->reason, wt->reason);
  }
  /* every offer is either feasible or counted once */
  assert_int_equal(total + p.feasible, N_OFFERS);
  tw_plan_release(&p);
  tw_spec_release(&spec);
}

static void job_selectors_and_bound_filter_offers(void **state) {
  (void)state;
  size_t n = sizeof ROWS / sizeof ROWS[0];
  struct tw_plan_ws *ws = tw_plan_ws_new();
  /* forwards, then backwards: a cached verdict of another job would show */
  for (size_t i = 0; i < n; i++)
    check_row(i, &ROWS[i], ws);
  for (size_t i = n; i-- > 0;)
    check_row(i, &ROWS[i], ws);
  tw_plan_ws_free(ws);
}

/* A job's placement fields change the filters' keys, so cached verdicts
 * are per distinct selectors and bound. */
static void keys_follow_the_job(void **state) {
  (void)state;
  static const char *const jobs[] = {
      "name: t",
      "name: t\nplacement: {selectors: [{label: zone, in: [a]}]}",
      "name: t\nplacement: {selectors: [{label: zone, not_in: [a]}]}",
      "name: t\nplacement: {selectors: [{label: zone, in: [b]}]}",
      "name: t\nplacement: {selectors: [{label: rack, in: [a]}]}",
      "name: t\nplacement: {max_rtt_ms: 10}",
      "name: t\nplacement: {max_rtt_ms: 11}",
      "name: t\nplacement: {max_rtt_ms: 10, near: aws:us-east-1}",
  };
  const size_t n = sizeof jobs / sizeof jobs[0];
  const struct tw_policy_ops *sel = tw_policy_find_filter("selector");
  const struct tw_policy_ops *lat = tw_policy_find_filter("latency");
  assert_non_null(sel);
  assert_non_null(lat);
  char *keys[sizeof jobs / sizeof jobs[0]];
  size_t lens[sizeof jobs / sizeof jobs[0]];
  for (size_t i = 0; i < n; i++) {
    struct tw_job_spec spec;
    assert_int_equal(tp_spec(jobs[i], &spec), 0);
    struct tw_place_ctx ctx = {.job = &spec, .datasets = &tw_dataset_set_empty};
    struct tw_policy self = {0};
    struct tw_buf b;
    tw_buf_init(&b);
    self.ops = sel;
    sel->key(&self, &ctx, &b);
    tw_buf_addc(&b, '|');
    self.ops = lat;
    lat->key(&self, &ctx, &b);
    lens[i] = b.len; /* binary: integers are raw bytes */
    keys[i] = tw_buf_detach(&b);
    tw_spec_release(&spec);
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (lens[i] == lens[j] && !memcmp(keys[i], keys[j], lens[i]))
        fail_msg("jobs %zu and %zu share a filter key", i, j);
  for (size_t i = 0; i < n; i++)
    free(keys[i]);
}

/* The latency score measures from the job's near as the filter does. */
static void latency_score_reads_near(void **state) {
  (void)state;
  const struct tw_policy_ops *lat = tw_policy_find_score("latency");
  assert_non_null(lat);
  struct tw_job_spec none, near;
  assert_int_equal(tp_spec("name: t", &none), 0);
  assert_int_equal(
      tp_spec("name: t\nplacement: {max_rtt_ms: 100, near: aws:us-east-1}",
              &near),
      0);
  struct tw_policy self = {.ops = lat};
  struct tw_cand west = {.offer = &OFFERS[2], .region = -1};
  struct tw_cand cn = {.offer = &OFFERS[4], .region = -1};
  struct tw_place_ctx ctx = {.job = &none,
                             .net = SETS[0]->net,
                             .region = -1,
                             .datasets = &tw_dataset_set_empty};
  /* nothing to measure from: the floor for all */
  assert_int_equal(lat->score(&self, &ctx, &west), 1000);
  assert_int_equal(lat->score(&self, &ctx, &cn), 1000);
  ctx.job = &near;
  assert_int_equal(lat->score(&self, &ctx, &west), 60000);
  assert_int_equal(lat->score(&self, &ctx, &cn), 200000);
  tw_spec_release(&none);
  tw_spec_release(&near);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(job_selectors_and_bound_filter_offers),
      cmocka_unit_test(keys_follow_the_job),
      cmocka_unit_test(latency_score_reads_near),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
