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

static struct tw_cat_snap *gcp_snap(const char *text) {
  struct tw_csv_opts o = {
      .provider = "gcp", .regions = regions, .adapters = tw_adapters};
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
  struct tw_cat_snap *s = gcp_snap(csv);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gpu_machines_carry_their_gpus_at_the_sum),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
