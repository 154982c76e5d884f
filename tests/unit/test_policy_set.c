/* The policy set: defaults, every validation error named by its path with
 * nothing built, score plugins from shared objects (and the ones refused),
 * and a swap that leaves plans on the old set untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/index.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"
#include "tests/unit/test_plan_util.h"

static void defaults_enable_every_filter_and_the_cost_score(void **state) {
  (void)state;
  struct tw_policy_set *s = tw_policy_set_default();
  assert_int_equal(s->n_filters, 22);
  assert_string_equal(s->filters[0].name, "provider");
  assert_string_equal(s->filters[12].name, "instance_types");
  assert_string_equal(s->filters[21].name, "deadline");
  assert_int_equal(s->n_scores, 1);
  assert_string_equal(s->scores[0].name, "cost");
  assert_int_equal(s->scores[0].weight, 1);
  assert_int_equal(s->candidates, 16);
  assert_int_equal(s->cost.default_duration_s, 3600);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_policy_set_to_json(s, &b);
  assert_non_null(
      strstr(b.data, "{\"name\":\"deadline\",\"stage\":\"offer\"}"));
  assert_non_null(
      strstr(b.data,
             "\"scores\":[{\"name\":\"cost\",\"weight\":1,\"builtin\":true}]"));
  assert_non_null(strstr(b.data, "\"network\":{\"source\":\"built-in\""));
  tw_buf_release(&b);
  tw_policy_set_unref(s);
}

static void a_full_section_is_read(void **state) {
  (void)state;
  static const char cfg[] =
      "policies:\n"
      "  filters: [provider, cpus, accelerators, market, price, deadline]\n"
      "  scores:\n"
      "    - {name: cost, weight: 10}\n"
      "    - {name: latency, weight: 2, from: [\"aws:us-east-1\"]}\n"
      "  candidates: 8\n"
      "  cost: {default_duration: 2h, launch_overhead: 90s, restart_overhead: "
      "10m,"
      " spot_interruption_pct: 12, transfer_round_trips: 4}\n"
      "  queue: {aging_per_hour: 5, aging_max: 100, fair_share_weight: 50,"
      " capacity: {vcpus: 2000, memory_gib: 8000, gpus: 64}}\n"
      "  replication: {enabled: false, min_jobs: 3}\n";
  struct tw_policy_set *s;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), NULL, &s, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(s->n_filters, 6);
  assert_string_equal(s->filters[5].name, "deadline");
  assert_int_equal(s->scores[0].weight, 10);
  assert_string_equal(s->scores[1].name, "latency");
  assert_int_equal(s->candidates, 8);
  assert_int_equal(s->cost.default_duration_s, 7200);
  assert_int_equal(s->cost.launch_overhead_s, 90);
  assert_int_equal(s->cost.restart_overhead_s, 600);
  assert_int_equal(s->cost.spot_default_interruption_pct, 12);
  assert_int_equal(s->cost.transfer_round_trips, 4);
  assert_int_equal(s->queue.aging_per_hour, 5);
  assert_int_equal(s->queue.capacity_memory_mib, 8000LL * 1024);
  assert_false(s->replication.enabled);
  assert_int_equal(s->replication.min_jobs, 3);
  assert_non_null(s->config_json);
  tw_policy_set_unref(s);
}

/* The example plugin's directory and file name. */
static const char *plugin_dir(void) {
  static char d[512];
  snprintf(d, sizeof d, "%s", TW_PLUGIN_FIT);
  *strrchr(d, '/') = '\0';
  return d;
}
static const char *plugin_base(void) { return strrchr(TW_PLUGIN_FIT, '/') + 1; }

static const struct {
  const char *cfg, *field, *msg;
} BAD[] = {
    {"filters: [provider, residncy]", "policies.filters[1]",
     "policies.filters[1]: unknown filter \"residncy\"; did you mean "
     "\"residency\"?"},
    {"filters: [cpus, cpus]", "policies.filters[1]",
     "policies.filters[1]: filter cpus is listed twice"},
    {"filters: cpus", "policies.filters",
     "policies.filters: expected a list of filter names, got string"},
    {"scores: [{name: cost, weight: -1}]", "policies.scores[0]",
     "policies.scores[0].weight: must be between 0 and 1000000, got -1"},
    {"scores: [{name: cots}]", "policies.scores[0]",
     "policies.scores[0]: unknown score \"cots\"; did you mean \"cost\"? (a "
     "plugin needs path:)"},
    {"scores: []", "policies.scores",
     "policies.scores: expected 1 to 8 scores, got 0"},
    {"candidates: 0", "policies",
     "policies.candidates: must be between 1 and 256, got 0"},
    {"cost: {restart_overhead: soon}", "policies.cost",
     "policies.cost.restart_overhead: expected a duration such as 90s, 5m or "
     "1h, got soon"},
    {"cost: {spot_interruption_pct: 101}", "policies.cost",
     "policies.cost.spot_interruption_pct: must be between 0 and 100, got 101"},
    {"queue: {aging_per_hours: 3}", "policies.queue",
     "policies.queue.aging_per_hours: unknown key; did you mean "
     "\"aging_per_hour\"?"},
    {"replication: {min_jobs: 1}", "policies.replication",
     "policies.replication.min_jobs: must be between 2 and 10000, got 1"},
    {"network: /nonexistent/x.net", "policies.network",
     "policies.network: \"/nonexistent/x.net\" cannot be used: the config "
     "file sets no policies.network_dir"},
    {"network_dir: /no/such/dir/tw", "policies.network_dir",
     "policies.network_dir: /no/such/dir/tw is not a directory"},
    {"network_dir: /\nnetwork: etc/hostname", "policies.network",
     "policies.network: expected a file name inside policies.network_dir, "
     "without '/' or control bytes, got \"etc/hostname\""},
    {"network_dir: /etc\nnetwork: nothere.net", "policies.network",
     "policies.network: nothere.net: cannot open: No such file or directory"},
    {"plugin_dir: [a]", "policies.plugin_dir",
     "policies.plugin_dir: expected the path of a directory"},
    {"scores: [{name: packing, mode: tight}]", "policies.scores[0]",
     "policies.scores[0].mode: expected binpack or spread, got tight"},
    {"filters: [{name: latency, max_rtt_ms: x}]", "policies.filters[0]",
     "policies.filters[0].max_rtt_ms: expected an integer, got string"},
    {"filters: [{name: selector, selectors: [{label: zone}]}]",
     "policies.filters[0].selectors[0]",
     "policies.filters[0].selectors[0]: expected exactly one of in, not_in, "
     "exists, glob"},
    {"scores: [{name: fit, path: nothere.so}]", "policies.scores[0]",
     "policies.scores[0].path: \"nothere.so\" cannot be used: the config "
     "file sets no policies.plugin_dir"},
    {"plugin_dir: /\nscores: [{name: fit, path: ..}]", "policies.scores[0]",
     "policies.scores[0].path: expected a file name inside "
     "policies.plugin_dir"},
    {"polcies: {}", "policies", "policies.polcies: unknown key"},
};

static void each_error_names_its_path(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_policy_set *s = (struct tw_policy_set *)1;
    struct tw_err err = {0};
    enum tw_rc rc =
        tw_policy_set_parse(BAD[i].cfg, strlen(BAD[i].cfg), NULL, &s, &err);
    if (rc == TW_OK)
      fail_msg("case %zu (%s): accepted", i, BAD[i].cfg);
    assert_null(s);
    if (strncmp(err.msg, BAD[i].msg, strlen(BAD[i].msg)))
      fail_msg("case %zu: \"%s\", want \"%s\"", i, err.msg, BAD[i].msg);
    assert_string_equal(err.field, BAD[i].field);
  }
}

static void plugin_from_a_shared_object_scores(void **state) {
  (void)state;
  /* two offers: a cheaper 32-vCPU machine and a snug 8-vCPU one */
  struct tw_offer o[2];
  o[0] = tp_offer("aws", "us-east-1", "us-east-1a", "big", TW_MARKET_ON_DEMAND,
                  300000, 32, 64, NULL, 0, "US");
  o[1] = tp_offer("aws", "us-east-1", "us-east-1a", "snug", TW_MARKET_ON_DEMAND,
                  400000, 8, 32, NULL, 0, "US");
  struct tw_offer_source src;
  tw_offer_source_array(&src, o, 2);
  struct tw_offer_index *ix;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  char cfg[1024];
  snprintf(cfg, sizeof cfg,
           "plugin_dir: %s\nscores: [{name: cost, weight: 1}, {name: fit, "
           "path: %s, weight: 2, by: vcpus}]",
           plugin_dir(), plugin_base());
  struct tw_policy_set *s;
  struct tw_err err = {0};
  if (tw_policy_set_parse(cfg, strlen(cfg), NULL, &s, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(s->n_dl, 1);
  struct tw_job_spec spec;
  assert_int_equal(tp_spec("name: t\nresources: {cpus: 8+}", &spec), 0);
  struct tw_place_snapshot snap = {.index = ix};
  struct tw_plan_input in = {.job = &spec, .now_ms = 0};
  struct tw_plan p;
  assert_int_equal(tw_plan_make(s, &snap, &in, NULL, NULL, &p, NULL), TW_OK);
  assert_int_equal(p.n, 2);
  /* fit: 8/32 of the maximum for the big one, all of it for the snug
   * one; weighted 2 against cost's 1, the snug machine wins */
  assert_string_equal(p.cands[0].offer->instance_type, "snug");
  assert_int_equal(p.cands[0].scores[1], TW_SCORE_MAX);
  assert_int_equal(p.cands[1].scores[1], TW_SCORE_MAX / 4);
  assert_int_equal(p.cands[1].scores[0], TW_SCORE_MAX);
  tw_plan_release(&p);
  tw_policy_set_unref(s);
  /* the same without the plugin: cost alone picks the big one */
  s = tw_policy_set_default();
  assert_int_equal(tw_plan_make(s, &snap, &in, NULL, NULL, &p, NULL), TW_OK);
  assert_string_equal(p.cands[0].offer->instance_type, "big");
  tw_plan_release(&p);
  tw_policy_set_unref(s);
  /* its own settings are validated by the plugin */
  snprintf(cfg, sizeof cfg,
           "plugin_dir: %s\nscores: [{name: fit, path: %s, by: disk}]",
           plugin_dir(), plugin_base());
  assert_int_equal(tw_policy_set_parse(cfg, strlen(cfg), NULL, &s, &err),
                   TW_E_INVALID);
  tw_spec_release(&spec);
  tw_offer_index_unref(ix);
}

static void
plugins_of_another_version_or_with_filters_are_refused(void **state) {
  (void)state;
  const struct tw_policy_ops *ops;
  void *h;
  struct tw_err err = {0};
  assert_int_equal(tw_policy_plugin_open(TW_PLUGIN_BAD_VERSION, &ops, &h, &err),
                   TW_E_INVALID);
  assert_non_null(
      strstr(err.msg,
             "built against policy interface version 2, this broker speaks 1"));
  tw_err_clear(&err);
  assert_int_equal(tw_policy_plugin_open(TW_PLUGIN_BAD_FILTER, &ops, &h, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(
      err.msg, "plugin bad has a filter; shared objects may only score"));
  tw_err_clear(&err);
  assert_int_equal(tw_policy_plugin_open(TW_PLUGIN_FIT, &ops, &h, &err), TW_OK);
  assert_string_equal(ops->name, "fit");
  tw_policy_plugin_close(h);
  /* the name in the config must be the plugin's */
  char cfg[1024];
  struct tw_policy_set *s;
  snprintf(cfg, sizeof cfg, "plugin_dir: %s\nscores: [{name: snug, path: %s}]",
           plugin_dir(), plugin_base());
  assert_int_equal(tw_policy_set_parse(cfg, strlen(cfg), NULL, &s, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(err.msg, "holds plugin \"fit\", not \"snug\""));
}

static void a_swap_leaves_plans_on_the_old_set_alone(void **state) {
  (void)state;
  struct tw_placer *pl = tw_placer_new(NULL);
  struct tw_policy_set *old, *now;
  struct tw_offer_index *ix;
  tw_placer_acquire(pl, &old, &ix);
  assert_null(ix);
  struct tw_policy_set *next;
  assert_int_equal(tw_policy_set_parse("candidates: 4", 13, NULL, &next, NULL),
                   TW_OK);
  tw_placer_set_policies(pl, next);
  assert_int_equal(tw_placer_reloads(pl), 1);
  /* the holder of the old set still has it, whole */
  assert_int_equal(old->candidates, 16);
  tw_placer_acquire(pl, &now, &ix);
  assert_int_equal(now->candidates, 4);
  assert_true(now->generation != old->generation);
  tw_placer_release(old, NULL);
  tw_placer_release(now, ix);
  tw_placer_free(pl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults_enable_every_filter_and_the_cost_score),
      cmocka_unit_test(a_full_section_is_read),
      cmocka_unit_test(each_error_names_its_path),
      cmocka_unit_test(plugin_from_a_shared_object_scores),
      cmocka_unit_test(plugins_of_another_version_or_with_filters_are_refused),
      cmocka_unit_test(a_swap_leaves_plans_on_the_old_set_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
