/* Placement a user can trust (docs/placement.md, docs/jobspec.md): whole
 * prices where a catalog prices machines and their accelerators apart,
 * exact asks, price sanity and explanations, on small catalogs written
 * here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/catalog/catalog.h"
#include "broker/core/spec.h"
#include "policies/place/cost.h"
#include "policies/place/inputs.h"
#include "policies/place/index.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"
#include "providers/registry.h"

static struct tw_regions *regions;

static int setup(void **state) {
  (void)state;
  struct tw_err err = {0};
  return tw_regions_builtin(&regions, &err) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_regions_free(regions);
  return 0;
}

static struct tw_cat_snap *snap_of(const char *provider, const char *text) {
  struct tw_csv_opts o = {
      .provider = provider, .regions = regions, .adapters = tw_adapters};
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "gcp-test");
  snprintf(info.kind, sizeof info.kind, "file");
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_cat_snap_from_csv(text, strlen(text), &o, &info, &s, &err),
                   TW_OK);
  return s;
}

static bool find(const struct tw_cat_snap *s, const char *id,
                 struct tw_cat_view *v) {
  size_t i;
  if (!tw_cat_snap_find(s, id, &i))
    return false;
  tw_cat_snap_view(s, i, v);
  return true;
}

#define GCP_HEADER                                                             \
  "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,"     \
  "Region,AvailabilityZone,Price,SpotPrice\n"
#define GI(mib) "\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': " #mib "}}]}\""

/* ---- 1. whole prices
 * ----------------------------------------------------------- */

static void gpu_machines_carry_their_gpus_at_the_sum(void **state) {
  (void)state;
  const char *csv =
      GCP_HEADER
      /* 2 */ "a2-highgpu-8g,96.0,680.0,,,,europe-west4,europe-west4-a,"
      "6.51251,2.67308\n"
      /* 3 */ "g2-standard-8,8.0,32.0,,,,europe-west4,europe-west4-a,"
      "0.30857,0.15426\n"
      /* 4: no L4 price in this zone */
      "g2-standard-8,8.0,32.0,,,,europe-west4,europe-west4-b,0.30857,0.15426\n"
      /* 5 */ "n1-highmem-8,8.0,52.0,,,,europe-west4,europe-west4-a,"
      "0.52094,0.20628\n"
      /* 6: 16 vCPUs, over V100:1's limit of 12 */
      "n1-standard-16,16.0,60.0,,,,europe-west4,europe-west4-a,0.8,0.3\n"
      /* 7 */ ",,,A100,8," GI(40960) ",europe-west4,europe-west4-a,"
      "12.90919,9.8208\n"
      /* 8 */ ",,,L4,1," GI(24576) ",europe-west4,europe-west4-a,0.58804,\n"
      /* 9 */ ",,,V100,1," GI(16384) ",europe-west4,europe-west4-a,2.604,"
      "0.7656\n"
      /* 10: a TPU: nothing to attach it to */
      ",,,tpu-v3-8,1,tpu-v3-8,europe-west4,europe-west4-a,8.8,2.244\n";
  struct tw_cat_snap *s = snap_of("gcp", csv);
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(r->rows, 9);
  /* machines 2, 3, 5, 6 and accelerator rows 7, 8, 9 */
  assert_int_equal(r->normalized, 7);
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_ACCEL_PRICE], 1);
  assert_int_equal(r->first_rejected_line[TW_CAT_REJ_NO_ACCEL_PRICE], 4);
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_TYPE], 1);
  assert_int_equal(r->first_rejected_line[TW_CAT_REJ_NO_TYPE], 10);
  assert_int_equal(r->notes[TW_CAT_NOTE_ACCEL_ATTACHED], 3);
  assert_int_equal(r->rows, r->normalized + tw_cat_report_rejected(r));

  struct tw_cat_view v;
  assert_true(
      find(s, "gcp:europe-west4:europe-west4-a:a2-highgpu-8g:on-demand", &v));
  assert_int_equal(v.price_uusd_per_hour, 19421700); /* SkyPilot's sum */
  assert_string_equal(v.accel, "A100-40GB");
  assert_int_equal(v.accel_milli, 8000);
  assert_true(find(s, "gcp:europe-west4:europe-west4-a:a2-highgpu-8g:spot", &v));
  assert_int_equal(v.price_uusd_per_hour, 2673080 + 9820800);
  /* the L4 has no spot price: the g2 machine has none either */
  assert_true(
      find(s, "gcp:europe-west4:europe-west4-a:g2-standard-8:on-demand", &v));
  assert_int_equal(v.price_uusd_per_hour, 308570 + 588040);
  assert_string_equal(v.accel, "L4");
  assert_false(find(s, "gcp:europe-west4:europe-west4-a:g2-standard-8:spot", &v));
  /* never CPU-only at the machine's price */
  assert_false(
      find(s, "gcp:europe-west4:europe-west4-b:g2-standard-8:on-demand", &v));
  /* N1: bare, and with the V100 it may take */
  assert_true(
      find(s, "gcp:europe-west4:europe-west4-a:n1-highmem-8:on-demand", &v));
  assert_int_equal(v.price_uusd_per_hour, 520940);
  assert_int_equal(v.accel_milli, 0);
  assert_true(find(
      s, "gcp:europe-west4:europe-west4-a:n1-highmem-8+V100x1:on-demand", &v));
  assert_int_equal(v.price_uusd_per_hour, 520940 + 2604000);
  assert_string_equal(v.accel, "V100-16GB");
  assert_int_equal(v.vcpus, 8);
  assert_non_null(strstr(v.labels, "accelerator_row=9"));
  assert_false(find(
      s, "gcp:europe-west4:europe-west4-a:n1-standard-16+V100x1:on-demand",
      &v));
  /* placement sees the whole price and the GPUs */
  struct tw_offer o;
  assert_true(tw_cat_snap_find(
      s, "gcp:europe-west4:europe-west4-a:a2-highgpu-8g:on-demand",
      &(size_t){0}));
  size_t i;
  tw_cat_snap_find(s, "gcp:europe-west4:europe-west4-a:a2-highgpu-8g:on-demand",
                   &i);
  tw_cat_snap_to_offer(s, i, &o);
  assert_int_equal(o.price_uusd_per_hour, 19421700);
  assert_int_equal(o.accel_count, 8);
  assert_null(tw_offer_label(&o, "accelerator_row"));
  tw_cat_snap_release(s);
}


/* ---- plans over a catalog
 * ------------------------------------------------------- */

struct world {
  struct tw_offer_list offers;
  struct tw_offer_index *ix;
  struct tw_policy_set *set;
};

static void world_of(struct tw_cat_snap *s, struct world *w) {
  tw_offer_list_init(&w->offers);
  tw_cat_snap_offers_of(s, NULL, 0, &w->offers);
  struct tw_offer_source src;
  tw_offer_source_array(&src, w->offers.items, w->offers.n);
  assert_int_equal(tw_offer_index_build(&src, &w->ix, NULL), TW_OK);
  w->set = tw_policy_set_default();
}

static void world_release(struct world *w) {
  tw_offer_index_unref(w->ix);
  tw_offer_list_release(&w->offers);
  tw_policy_set_unref(w->set);
}

/* The plan of yaml; the best candidate's instance type into best ("" when
 * none) and the explanation into why. */
static size_t plan(struct world *w, const char *yaml, char *best, size_t bsz,
                   struct tw_buf *why) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, &err))
    fail_msg("spec: %s", err.msg);
  struct tw_place_snapshot snap = {.index = w->ix};
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
  struct tw_plan_opts o = {.counts = true};
  struct tw_plan p;
  assert_int_equal(tw_plan_make(w->set, &snap, &in, &o, NULL, &p, NULL), TW_OK);
  snprintf(best, bsz, "%s", p.n ? p.cands[0].offer->instance_type : "");
  /* a chosen offer satisfies the ask exactly */
  for (size_t i = 0; i < p.n; i++)
    assert_true(tw_place_accel_satisfies(&spec, p.cands[i].offer->accel_name,
                                         p.cands[i].offer->accel_count));
  if (why) {
    why->len = 0;
    tw_plan_explain(&p, why);
  }
  size_t n = p.n;
  tw_plan_release(&p);
  tw_spec_release(&spec);
  return n;
}

#define AZ_HEADER                                                              \
  "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"     \
  "Price,SpotPrice,Region,Generation\n"

/* ---- 2. exact asks
 * ------------------------------------------------------------- */

static void asks_are_exact_by_default(void **state) {
  (void)state;
  const char *csv =
      AZ_HEADER
      "Standard_B8ms,,,8,32,,0.20,0.05,eastus,V1\n"
      "Standard_B8ps_v2,,,8,32,,0.21,0.06,eastus,V2\n"
      "Standard_DC8as_v5,,,8,32,,0.30,0.07,eastus,V2\n"
      "Standard_D8s_v5,,,8,32,,0.384,0.08,eastus,V2\n"
      "Standard_D16s_v5,,,16,64,,0.768,0.16,eastus,V2\n"
      "Standard_ND96asr_v4,A100,8,96,900,,27.2,,eastus,V2\n"
      "Standard_ND96amsr_A100_v4,A100-80GB,8,96,1900,,32.77,,eastus,V2\n"
      "Standard_NC24ads_A100_v4,A100-80GB,1,24,220,,3.67,,eastus,V2\n"
      "Standard_NC6s_v3,V100,1,6,112,,3.06,,eastus,V2\n"
      "Standard_NC24s_v3,V100,4,24,448,,12.24,,eastus,V2\n";
  struct tw_cat_snap *s = snap_of("azure", csv);
  struct world w;
  world_of(s, &w);
  char best[64];
  struct tw_buf why;
  tw_buf_init(&why);
  /* burstable, arm64 and confidential sizes do not compete unasked */
  plan(&w, "name: t\nresources: {cpus: 8+, memory: 32+}\n", best, sizeof best,
       &why);
  if (strcmp(best, "Standard_D8s_v5"))
    fail_msg("%s: %s", best, why.data);
  if (!strstr(why.data, "4 burstable or confidential"))
    fail_msg("%s", why.data);
  assert_non_null(strstr(why.data, "2 not x86_64"));
  /* named, they do */
  plan(&w, "name: t\nresources: {cpus: 8+, families: [Bms]}\n", best,
       sizeof best, NULL);
  assert_string_equal(best, "Standard_B8ms");
  plan(&w, "name: t\nresources: {cpus: 8+, arch: any, instance_types: "
           "['*_B*']}\n",
       best, sizeof best, NULL);
  assert_string_equal(best, "Standard_B8ms");
  plan(&w, "name: t\nresources: {cpus: 8+, arch: arm64, families: [Bps_v2]}\n",
       best, sizeof best, NULL);
  assert_string_equal(best, "Standard_B8ps_v2");
  plan(&w, "name: t\nresources: {cpus: 8+, instance_types: "
           "{exclude: ['Standard_D8*']}}\n",
       best, sizeof best, NULL);
  assert_string_equal(best, "Standard_D16s_v5");
  /* A100 is the 40 GB one; A100:8 exactly eight */
  assert_int_equal(plan(&w, "name: t\nresources: {accelerators: A100:8}\n",
                        best, sizeof best, &why),
                   1);
  assert_string_equal(best, "Standard_ND96asr_v4");
  plan(&w, "name: t\nresources: {accelerators: A100-80GB:8}\n", best,
       sizeof best, NULL);
  assert_string_equal(best, "Standard_ND96amsr_A100_v4");
  assert_int_equal(plan(&w, "name: t\nresources: {accelerators: \"A100*:1+\"}\n",
                        best, sizeof best, NULL),
                   3);
  assert_string_equal(best, "Standard_NC24ads_A100_v4");
  assert_int_equal(
      plan(&w, "name: t\nresources: {accelerators: [A100:8, A100-80GB:1]}\n",
           best, sizeof best, NULL),
      2);
  /* V100:1 is not feasible on the four-GPU size; V100:1+ is */
  assert_int_equal(plan(&w, "name: t\nresources: {accelerators: V100:1}\n",
                        best, sizeof best, NULL),
                   1);
  assert_int_equal(plan(&w, "name: t\nresources: {accelerators: V100:1+}\n",
                        best, sizeof best, NULL),
                   2);
  assert_int_equal(plan(&w, "name: t\nresources: {accelerators: V100:2}\n",
                        best, sizeof best, &why),
                   0);
  assert_non_null(strstr(why.data, "without exactly 2 V100"));
  tw_buf_release(&why);
  world_release(&w);
  tw_cat_snap_release(s);
}

static void exact_asks_round_trip_through_json(void **state) {
  (void)state;
  static const char *const SPECS[] = {
      "name: t\nresources: {accelerators: A100:8+, arch: any}\n",
      "name: t\nresources: {accelerators: [A100:8, \"H100*:4+\"]}\n",
      "name: t\nresources: {accelerators: {A100-80GB: 8, H100: \"8+\"}}\n",
      "name: t\nresources: {instance_types: {include: ['m6i.*'], exclude: "
      "[m6i.metal]}, families: [m6i, c7i]}\n",
  };
  for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
    struct tw_job_spec a, b;
    struct tw_err err = {0};
    if (tw_spec_parse(SPECS[i], strlen(SPECS[i]), false, &a, &err))
      fail_msg("spec %zu: %s", i, err.msg);
    struct tw_buf j1, j2;
    tw_buf_init(&j1);
    tw_buf_init(&j2);
    tw_spec_to_json(&a, &j1);
    if (tw_spec_parse(j1.data, j1.len, true, &b, &err))
      fail_msg("spec %zu again: %s (%s)", i, err.msg, j1.data);
    tw_spec_to_json(&b, &j2);
    assert_string_equal(j1.data, j2.data);
    assert_int_equal(a.n_accels, b.n_accels);
    for (size_t k = 0; k < a.n_accels; k++)
      assert_int_equal(a.accels[k].at_least, b.accels[k].at_least);
    assert_int_equal(a.arch_any, b.arch_any);
    tw_buf_release(&j1);
    tw_buf_release(&j2);
    tw_spec_release(&a);
    tw_spec_release(&b);
  }
  struct tw_job_spec a;
  const char *y = "name: t\nresources: {accelerators: \"A100:8+\"}\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &a, NULL), TW_OK);
  assert_true(a.accels[0].at_least);
  assert_int_equal(a.accel_count, 8);
  assert_true(tw_place_accel_satisfies(&a, "A100-40GB", 16));
  assert_false(tw_place_accel_satisfies(&a, "A100-80GB", 8));
  assert_false(tw_place_accel_satisfies(&a, "A100-40GB", 4));
  tw_spec_release(&a);
}

/* ---- 3. clouds without an account
 * ----------------------------------------------------- */

static void offers_no_account_can_launch_are_planned_not_placed(void **state) {
  (void)state;
  const char *csv = GCP_HEADER
      "n2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.38,0.09\n";
  struct tw_cat_snap *s = snap_of("gcp", csv);
  const char *accounts[] = {"aws-main"};
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  assert_int_equal(tw_cat_snap_offers_of(s, accounts, 1, &l), 0);
  assert_int_equal(tw_cat_snap_offers_unserved(s, accounts, 1, &l), 2);
  assert_true(l.items[0].no_account && l.items[1].no_account);
  struct tw_offer_source src;
  tw_offer_source_array(&src, l.items, l.n);
  struct tw_offer_index *ix = NULL;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_job_spec spec;
  const char *y = "name: t\nresources: {cpus: 8}\nplacement: {providers: [gcp]}\n";
  const char *names[] = {"aws", "gcp", NULL};
  struct tw_spec_opts so = {.providers = names};
  assert_int_equal(tw_spec_parse_opts(y, strlen(y), false, &so, &spec, NULL),
                   TW_OK);
  struct tw_place_snapshot snap = {.index = ix};
  struct tw_plan_opts o = {.counts = true};
  struct tw_plan p;
  /* a plan (no job id) ranks them and says so */
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
  assert_int_equal(tw_plan_make(set, &snap, &in, &o, NULL, &p, NULL), TW_OK);
  assert_int_equal(p.n, 2);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_to_json(&p, 10, &b);
  assert_non_null(strstr(b.data, "\"launchable\":false,\"note\":\"no account "
                                 "can launch this\""));
  assert_non_null(strstr(b.data, "\"vcpus\":8,\"memory_mib\":32768"));
  tw_plan_release(&p);
  /* the scheduler's placement of a job never goes there */
  in.job_id = "j-1";
  assert_int_equal(tw_plan_make(set, &snap, &in, &o, NULL, &p, NULL), TW_OK);
  assert_int_equal(p.n, 0);
  b.len = 0;
  tw_plan_explain(&p, &b);
  assert_string_equal(b.data, "2 offers, 0 fit: 2 no account can launch this");
  tw_plan_release(&p);
  tw_buf_release(&b);
  tw_spec_release(&spec);
  tw_policy_set_unref(set);
  tw_offer_index_unref(ix);
  tw_offer_list_release(&l);
  tw_cat_snap_release(s);
}

/* ---- 4. price sanity
 * ----------------------------------------------------------- */

static void implausible_prices_are_held_unless_allowed(void **state) {
  (void)state;
  const char *csv = AZ_HEADER
      "Standard_F8ams_v6,,,8,32,,0.865,,eastus,V2\n"
      "Standard_F8ams_v6,,,8,32,,0.80,,westus2,V2\n"
      "Standard_F8ams_v6,,,8,32,,0.90,,westeurope,V2\n"
      "Standard_F8ams_v6,,,8,32,,0.95,,japaneast,V2\n"
      "Standard_F8ams_v6,,,8,32,,0.0898,,newzealandnorth,V2\n";
  struct tw_cat_snap *s = snap_of("azure", csv);
  struct tw_cat_view v;
  assert_true(
      find(s, "azure:newzealandnorth::Standard_F8ams_v6:on-demand", &v));
  assert_int_equal(v.quarantine_peers, 5);
  assert_int_equal(v.quarantine_median_uusd, 865000);
  assert_true(find(s, "azure:westus2::Standard_F8ams_v6:on-demand", &v));
  assert_int_equal(v.quarantine_peers, 0); /* 0.80 is not under 0.216 */
  struct world w;
  world_of(s, &w);
  char best[64];
  struct tw_buf why;
  tw_buf_init(&why);
  size_t n = plan(&w, "name: t\nresources: {cpus: 8}\n", best, sizeof best,
                  &why);
  assert_int_equal(n, 4);
  if (!strstr(why.data, "1 quarantined: $0.0898/h is under a quarter of the "
                        "median $0.865/h of 5 such offers"))
    fail_msg("%s", why.data);
  /* the operator's key lets them compete */
  struct tw_policy_set *allow = NULL;
  const char *cfg = "policies: {allow_quarantined: true}\n";
  assert_int_equal(tw_policy_set_parse(cfg, strlen(cfg), NULL, &allow, NULL),
                   TW_OK);
  tw_policy_set_unref(w.set);
  w.set = allow;
  assert_int_equal(plan(&w, "name: t\nresources: {cpus: 8}\n", best,
                        sizeof best, NULL),
                   5);
  tw_buf_release(&why);
  world_release(&w);
  tw_cat_snap_release(s);
  const char *bad = "policies: {allow_quarantined: maybe}\n";
  struct tw_err err = {0};
  assert_int_equal(tw_policy_set_parse(bad, strlen(bad), NULL, &allow, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(err.msg, "policies.allow_quarantined"));
}

/* ---- 5. explanations
 * ----------------------------------------------------------- */

static void explanations_say_what_and_give_an_example(void **state) {
  (void)state;
  const char *csv =
      GCP_HEADER
      "n2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.38,0.09\n"
      "n2-standard-8,8.0,32.0,,,,us-central1,us-central1-b,0.38,0.09\n"
      "n2-standard-8,8.0,32.0,,,,europe-west4,europe-west4-a,0.42,0.1\n"
      /* a GPU of a zone without a host: its row is dropped, and counted */
      ",,,V100,1," GI(16384) ",us-west1,us-west1-b,2.48,1.24\n";
  struct tw_cat_snap *s = snap_of("gcp", csv);
  const struct tw_cat_report *rep = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(rep->n_accel_rejected, 1);
  assert_string_equal(rep->accel_rejected[0].accel, "V100-16GB");
  assert_int_equal(rep->accel_rejected[0].rows, 1);
  assert_int_equal(rep->accel_rejected[0].first_line, 5);
  assert_int_equal(rep->accel_rejected[0].first_why, TW_CAT_REJ_NO_TYPE);
  struct world w;
  world_of(s, &w);
  char best[64];
  struct tw_buf why;
  tw_buf_init(&why);
  /* a zone selector's refusals are the zone selectors' */
  plan(&w,
       "name: t\nresources: {cpus: 8}\nplacement: {regions: "
       "['gcp:us-central1:us-central1-a']}\n",
       best, sizeof best, &why);
  if (!strstr(why.data, "2 outside the region selectors "
                        "(gcp:us-central1:us-central1-a), 2 outside the zone "
                        "selectors (gcp:us-central1:us-central1-a)"))
    fail_msg("%s", why.data);
  /* every refusal names one offer it refused */
  struct tw_job_spec spec;
  const char *y = "name: t\nresources: {cpus: 8}\nmax_price_per_hour: 0.1\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  struct tw_place_snapshot snap = {.index = w.ix};
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
  struct tw_plan_opts o = {.counts = true};
  struct tw_plan p;
  assert_int_equal(tw_plan_make(w.set, &snap, &in, &o, NULL, &p, NULL), TW_OK);
  size_t checked = 0;
  for (size_t i = 0; i < p.n_rejects; i++) {
    if (!p.rejects[i].count)
      continue;
    assert_true(p.rejects[i].example[0] != '\0');
    assert_non_null(strstr(p.rejects[i].example, "gcp:"));
    checked++;
  }
  assert_int_equal(checked, 1); /* price: the three on-demand offers */
  tw_plan_release(&p);
  tw_spec_release(&spec);
  tw_buf_release(&why);
  world_release(&w);
  tw_cat_snap_release(s);
}

/* ---- 7. the queue: launch overhead per kind of capacity
 * ------------------------ */

static void private_capacity_launches_in_seconds(void **state) {
  (void)state;
  struct tw_cost_params p;
  tw_cost_params_default(&p);
  struct tw_cost_job j = {.duration_s = 10, .nodes = 1, .now_ms = 1000000};
  struct tw_cost_offer cloud = {.price_uusd_per_hour = 3600000,
                                .granularity_s = 1,
                                .interruption_pct = -1};
  struct tw_cost_offer lab = cloud;
  lab.private_capacity = true;
  struct tw_cost c;
  tw_cost_eval(&p, &j, &cloud, 0, 0, &c);
  assert_int_equal(c.finish_ms, 1000000 + (120 + 10) * 1000);
  tw_cost_eval(&p, &j, &lab, 0, 0, &c);
  assert_int_equal(c.finish_ms, 1000000 + (5 + 10) * 1000);
  /* configurable */
  struct tw_policy_set *set = NULL;
  const char *cfg = "policies: {cost: {launch_overhead_private: 1s}}\n";
  assert_int_equal(tw_policy_set_parse(cfg, strlen(cfg), NULL, &set, NULL),
                   TW_OK);
  assert_int_equal(set->cost.launch_overhead_private_s, 1);
  tw_policy_set_unref(set);

  /* per provider, through a plan: a 10 s job due in 20 s fits a cluster
   * whose nodes start in 5 s, not one configured at 30 s */
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "slurm");
  snprintf(o.account, sizeof o.account, "lab");
  snprintf(o.region, sizeof o.region, "hpc");
  snprintf(o.zone, sizeof o.zone, "gpu");
  snprintf(o.instance_type, sizeof o.instance_type, "node");
  o.arch = TW_ARCH_X86_64;
  o.vcpus = 8;
  o.memory_mib = 32768;
  o.market = TW_MARKET_PRIVATE;
  o.price_uusd_per_hour = 100000;
  o.billing_granularity_s = 1;
  o.capacity = 4;
  tw_offer_make_id(&o);
  struct tw_offer_source src;
  tw_offer_source_array(&src, &o, 1);
  struct tw_offer_index *ix = NULL;
  assert_int_equal(tw_offer_index_build(&src, &ix, NULL), TW_OK);
  struct tw_job_spec spec;
  const char *y = "name: t\nduration: 10s\ndeadline: 2025-12-01T00:00:20Z\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  struct tw_place_snapshot snap = {.index = ix};
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764547200000};
  struct tw_plan_opts po = {.counts = true};
  struct tw_plan pl;
  struct tw_policy_set *def = tw_policy_set_default();
  assert_int_equal(tw_plan_make(def, &snap, &in, &po, NULL, &pl, NULL), TW_OK);
  assert_int_equal(pl.n, 1);
  tw_plan_release(&pl);
  const char *slow =
      "policies: {cost: {launch_overheads: {slurm: 30s, aws: 90s}}}\n";
  assert_int_equal(tw_policy_set_parse(slow, strlen(slow), NULL, &set, NULL),
                   TW_OK);
  assert_int_equal(set->cost.n_launch_by, 2);
  assert_int_equal(tw_plan_make(set, &snap, &in, &po, NULL, &pl, NULL), TW_OK);
  assert_int_equal(pl.n, 0);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_plan_explain(&pl, &b);
  assert_non_null(strstr(b.data, "cannot finish before the deadline"));
  tw_buf_release(&b);
  tw_plan_release(&pl);
  tw_policy_set_unref(set);
  tw_policy_set_unref(def);
  tw_spec_release(&spec);
  tw_offer_index_unref(ix);
}

/* ---- 8. data moved within one cloud costs its egress
 * --------------------------- */

static void egress_between_regions_of_one_cloud_counts(void **state) {
  (void)state;
  const char *csv =
      GCP_HEADER
      "n2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.40,0.09\n"
      "n2-standard-8,8.0,32.0,,,,europe-west4,europe-west4-a,0.38,0.09\n";
  struct tw_cat_snap *s = snap_of("gcp", csv);
  struct world w;
  world_of(s, &w);
  struct tw_job_spec spec;
  const char *y = "name: t\nresources: {cpus: 8, market: on-demand}\n"
                  "duration: 1h\ndatasets: [{uri: 'gs://ref/hg38', size: 1TB, "
                  "location: 'gcp:us-central1'}]\n";
  assert_int_equal(tw_spec_parse(y, strlen(y), false, &spec, NULL), TW_OK);
  struct tw_dataset_set ds;
  tw_dataset_set_init(&ds);
  const char *loc[] = {"gcp:us-central1"};
  tw_dataset_set_add(&ds, "gs://ref/hg38", 1000000000000LL, loc, 1);
  tw_dataset_set_seal(&ds);
  struct tw_place_snapshot snap = {.index = w.ix, .datasets = &ds};
  struct tw_plan_input in = {.job = &spec, .now_ms = 1764460800000};
  struct tw_plan_opts o = {.counts = true};
  struct tw_plan p;
  assert_int_equal(tw_plan_make(w.set, &snap, &in, &o, NULL, &p, NULL), TW_OK);
  assert_int_equal(p.n, 2);
  /* the dearer machine next to the data wins: 1,000 GB out of
   * us-central1 to europe-west4 is $0.08/GB within Google's network */
  assert_string_equal(p.cands[0].offer->region, "us-central1");
  assert_int_equal(p.cands[0].cost.egress_uusd, 0);
  assert_string_equal(p.cands[1].offer->region, "europe-west4");
  assert_int_equal(p.cands[1].cost.egress_uusd, 80000000);
  tw_plan_release(&p);
  tw_dataset_set_release(&ds);
  tw_spec_release(&spec);
  world_release(&w);
  tw_cat_snap_release(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gpu_machines_carry_their_gpus_at_the_sum),
      cmocka_unit_test(asks_are_exact_by_default),
      cmocka_unit_test(exact_asks_round_trip_through_json),
      cmocka_unit_test(offers_no_account_can_launch_are_planned_not_placed),
      cmocka_unit_test(implausible_prices_are_held_unless_allowed),
      cmocka_unit_test(explanations_say_what_and_give_an_example),
      cmocka_unit_test(private_capacity_launches_in_seconds),
      cmocka_unit_test(egress_between_regions_of_one_cloud_counts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
