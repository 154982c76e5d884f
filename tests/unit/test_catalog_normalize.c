/* Normalization: exact decimals, canonical accelerators, architecture,
 * regions and AWS zone ids, currency rates, billing rules, risk bands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/catalog/clouds.h"
#include "billing/catalog/normalize.h"
#include "policies/place/policy.h"
#include "providers/registry.h"

/* The rules the catalog applies to a cloud: its adapter's info block, or
 * the catalog-only table's (gcp). */
static const struct tw_provider_info *cloud(const char *provider) {
  return tw_cat_cloud(tw_adapters, provider);
}

static int64_t micro(const char *s, bool *exact) {
  int64_t v = -1;
  assert_true(tw_norm_decimal_micro(s, strlen(s), &v, exact));
  return v;
}

static void decimals_convert_exactly_or_say_they_rounded(void **state) {
  (void)state;
  bool exact;
  assert_int_equal(micro("68.8", &exact), 68800000);
  assert_true(exact);
  assert_int_equal(micro("0.009240", &exact), 9240);
  assert_int_equal(micro("68.800000", &exact), 68800000);
  assert_int_equal(micro(".5", &exact), 500000);
  assert_int_equal(micro("12.", &exact), 12000000);
  assert_int_equal(micro("0", &exact), 0);
  /* a seventh decimal rounds half up and is reported */
  assert_int_equal(micro("0.0000005", &exact), 1);
  assert_false(exact);
  assert_int_equal(micro("0.0000004999", &exact), 0);
  assert_false(exact);
  assert_int_equal(micro("1.0000000", &exact), 1000000);
  assert_true(exact);
  int64_t v = 42;
  const char *bad[] = {"",    "-1",  "+1", "1e3",           "1.2.3",
                       ".",   "1,5", " 1", "1000000000000", "abc",
                       "0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_false(tw_norm_decimal_micro(bad[i], strlen(bad[i]), &v, NULL));
  assert_int_equal(v, 42); /* untouched on failure */
  assert_true(tw_norm_decimal_micro("999999999999.999999", 19, &v, NULL));
  assert_int_equal(v, 999999999999999999LL);
  assert_true(tw_norm_decimal_nano("0.1393", 6, &v, NULL));
  assert_int_equal(v, 139300000);

  char out[32];
  const struct {
    int64_t v;
    const char *s;
  } fmt[] = {{68800000, "68.8"}, {9240, "0.00924"}, {0, "0"},
             {-1500000, "-1.5"}, {1, "0.000001"},   {5000000, "5"}};
  for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
    tw_norm_fmt_micro(fmt[i].v, out, sizeof out);
    assert_string_equal(out, fmt[i].s);
  }
  /* every price text with at most six decimals survives the round trip */
  const char *prices[] = {"68.8", "0.00924", "113.9328", "0.069800", "3.06"};
  for (size_t i = 0; i < sizeof prices / sizeof prices[0]; i++) {
    int64_t a = micro(prices[i], NULL), b;
    tw_norm_fmt_micro(a, out, sizeof out);
    assert_true(tw_norm_decimal_micro(out, strlen(out), &b, NULL));
    assert_int_equal(a, b);
  }
  int64_t mib;
  assert_true(tw_norm_gib_to_mib("16.0", 4, &mib));
  assert_int_equal(mib, 16384);
  assert_true(tw_norm_gib_to_mib("0.75", 4, &mib));
  assert_int_equal(mib, 768);
  assert_true(tw_norm_gib_to_mib("1.7", 3, &mib)); /* 1740.8 */
  assert_int_equal(mib, 1741);
  assert_false(tw_norm_gib_to_mib("", 0, &mib));
}

static void accelerators_get_one_canonical_name(void **state) {
  (void)state;
  const struct {
    const char *raw;
    int64_t hint;
    const char *name, *vendor;
    enum tw_accel_kind kind;
  } cases[] = {
      {"A100", 0, "A100-40GB", "NVIDIA", TW_ACCEL_GPU},
      {"A100", 81920, "A100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"A100", 40960, "A100-40GB", "NVIDIA", TW_ACCEL_GPU},
      {"A100-80GB", 0, "A100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"NVIDIA A100 80GB", 0, "A100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"nvidia_a100_sxm4_80gb", 0, "A100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"H100", 81920, "H100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"H100-MEGA", 0, "H100-80GB", "NVIDIA", TW_ACCEL_GPU},
      {"H100 NVL", 0, "H100-94GB", "NVIDIA", TW_ACCEL_GPU},
      {"V100", 0, "V100-16GB", "NVIDIA", TW_ACCEL_GPU},
      {"V100", 32768, "V100-32GB", "NVIDIA", TW_ACCEL_GPU},
      {"Tesla V100-32GB", 0, "V100-32GB", "NVIDIA", TW_ACCEL_GPU},
      {"T4", 0, "T4", "NVIDIA", TW_ACCEL_GPU},
      {"t4g", 0, "T4G", "NVIDIA", TW_ACCEL_GPU},
      {"A10G", 0, "A10G", "NVIDIA", TW_ACCEL_GPU},
      {"A10", 0, "A10", "NVIDIA", TW_ACCEL_GPU},
      {"L4", 0, "L4", "NVIDIA", TW_ACCEL_GPU},
      {"H200", 0, "H200", "NVIDIA", TW_ACCEL_GPU},
      {"MI300X", 0, "MI300X", "AMD", TW_ACCEL_GPU},
      {"AMD Instinct MI300X", 0, "MI300X", "AMD", TW_ACCEL_GPU},
      {"Radeon Pro V520", 0, "V520", "AMD", TW_ACCEL_GPU},
      {"Ascend 910B", 0, "Ascend-910B", "Huawei", TW_ACCEL_NPU},
      {"ascend910b", 0, "Ascend-910B", "Huawei", TW_ACCEL_NPU},
      {"Inferentia2", 0, "Inferentia2", "AWS", TW_ACCEL_NPU},
      {"Gaudi HL-205", 0, "Gaudi", "Intel", TW_ACCEL_NPU},
      {"Xilinx U250", 0, "U250", "Xilinx", TW_ACCEL_FPGA},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_accel_info ai;
    if (!tw_norm_accel(cases[i].raw, strlen(cases[i].raw), cases[i].hint, &ai))
      fail_msg("%s: not recognized", cases[i].raw);
    assert_string_equal(ai.name, cases[i].name);
    assert_string_equal(ai.vendor, cases[i].vendor);
    assert_int_equal(ai.kind, cases[i].kind);
    assert_true(ai.memory_mib > 0);
  }
  struct tw_accel_info ai;
  assert_false(tw_norm_accel("A100x", 5, 0, &ai));
  assert_int_equal(ai.kind, TW_ACCEL_UNKNOWN);
  assert_false(tw_norm_accel("tpu-v5litepod-8", 15, 0, &ai));
  assert_int_equal(ai.kind, TW_ACCEL_TPU);
  assert_string_equal(ai.vendor, "Google");
  assert_false(tw_norm_accel("", 0, 0, &ai));
  assert_false(tw_norm_accel("NVIDIA", 6, 0, &ai));

  assert_true(tw_norm_accel_from_type(cloud("azure"), "Standard_NP10s", &ai));
  assert_string_equal(ai.name, "U250");
  assert_int_equal(ai.kind, TW_ACCEL_FPGA);
  assert_true(tw_norm_accel_from_type(cloud("aws"), "f1.2xlarge", &ai));
  assert_string_equal(ai.name, "VU9P");
  assert_false(tw_norm_accel_from_type(cloud("aws"), "m6i.large", &ai));

  bool control;
  assert_true(tw_norm_npu_resource("npu.compute", &control));
  assert_false(control);
  assert_true(tw_norm_npu_resource("NPU.control", &control));
  assert_true(control);
  assert_false(tw_norm_npu_resource("npu", &control));
  assert_string_equal(tw_accel_kind_str(TW_ACCEL_FPGA), "fpga");
}

static void architecture_from_column_or_type_name(void **state) {
  (void)state;
  assert_int_equal(tw_norm_arch("x86_64", 6), TW_ARCH_X86_64);
  assert_int_equal(tw_norm_arch("aarch64", 7), TW_ARCH_ARM64);
  assert_int_equal(tw_norm_arch("ARM64", 5), TW_ARCH_ARM64);
  assert_int_equal(tw_norm_arch("sparc", 5), TW_ARCH_ANY);
  const struct {
    const char *provider, *type;
    enum tw_arch arch;
  } cases[] = {
      {"aws", "m6g.large", TW_ARCH_ARM64},
      {"aws", "c7gn.16xlarge", TW_ARCH_ARM64},
      {"aws", "t4g.micro", TW_ARCH_ARM64},
      {"aws", "g5g.xlarge", TW_ARCH_ARM64},
      {"aws", "im4gn.large", TW_ARCH_ARM64},
      {"aws", "a1.medium", TW_ARCH_ARM64},
      {"aws", "g4dn.xlarge", TW_ARCH_X86_64},
      {"aws", "p5.48xlarge", TW_ARCH_X86_64},
      {"aws", "m6i.2xlarge", TW_ARCH_X86_64},
      {"aws", "p6-b200.48xlarge", TW_ARCH_X86_64},
      {"azure", "Standard_D2ps_v5", TW_ARCH_ARM64},
      {"azure", "Standard_E16pds_v5", TW_ARCH_ARM64},
      {"azure", "Standard_NP10s", TW_ARCH_X86_64},
      {"azure", "Standard_D2s_v5", TW_ARCH_X86_64},
      {"azure", "Standard_NC24ads_A100_v4", TW_ARCH_X86_64},
      {"gcp", "t2a-standard-4", TW_ARCH_ARM64},
      {"gcp", "c4a-highcpu-8", TW_ARCH_ARM64},
      {"gcp", "a2-highgpu-1g", TW_ARCH_X86_64},
      {"alibaba", "ecs.g8y.large", TW_ARCH_ARM64},
      {"alibaba", "ecs.c6r.xlarge", TW_ARCH_ARM64},
      {"alibaba", "ecs.g7.large", TW_ARCH_X86_64},
      {"slurm", "gpu-node", TW_ARCH_ANY},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (tw_norm_arch_guess(cloud(cases[i].provider), cases[i].type) !=
        cases[i].arch)
      fail_msg("%s %s: wrong architecture", cases[i].provider, cases[i].type);
}

static void regions_carry_country_jurisdiction_and_coordinates(void **state) {
  (void)state;
  struct tw_regions *t = NULL;
  struct tw_err err = {0};
  if (tw_regions_builtin(&t, &err))
    fail_msg("%s", err.msg);
  assert_true(tw_regions_count(t) > 150);
  const struct tw_region *r = tw_regions_find(t, "aws", "eu-central-1");
  assert_non_null(r);
  assert_string_equal(r->country, "DE");
  assert_string_equal(r->jurisdiction, "EU");
  assert_int_equal(r->lat_e6, 50110000);
  assert_int_equal(r->lon_e6, 8680000);
  r = tw_regions_find(t, "azure", "uksouth");
  assert_string_equal(r->jurisdiction, "UK");
  r = tw_regions_find(t, "gcp", "us-west2");
  assert_string_equal(r->jurisdiction, "US");
  assert_true(r->lon_e6 < 0);
  r = tw_regions_find(t, "alibaba", "cn-hangzhou");
  assert_string_equal(r->jurisdiction, "CN");
  assert_null(tw_regions_find(t, "aws", "mars-north-1"));
  assert_null(tw_regions_find(t, "nope", "eu-central-1"));

  /* AWS zone ids resolve to their region; names are not ids */
  bool local = true;
  r = tw_regions_by_zone_id(t, "aws", "use1-az4", &local);
  assert_non_null(r);
  assert_string_equal(r->region, "us-east-1");
  assert_false(local);
  r = tw_regions_by_zone_id(t, "aws", "use1-atl2-az1", &local);
  assert_string_equal(r->region, "us-east-1");
  assert_true(local);
  r = tw_regions_by_zone_id(t, "aws", "apse2-az3", NULL);
  assert_string_equal(r->region, "ap-southeast-2");
  assert_null(tw_regions_by_zone_id(t, "aws", "us-east-1a", NULL));
  assert_null(tw_regions_by_zone_id(t, "aws", "zzz9-az1", NULL));
  /* zone ids belong to the provider whose regions carry the prefix */
  assert_null(tw_regions_by_zone_id(t, "azure", "use1-az4", NULL));
  assert_true(tw_norm_is_zone_id("usw2-az4"));
  assert_false(tw_norm_is_zone_id("us-west-2a"));
  assert_false(tw_norm_is_zone_id("usw2-az"));
  assert_false(tw_norm_is_zone_id("1"));
  tw_regions_free(t);

  /* a table of one's own, and its errors naming the line */
  const char *ok = "# comment\nprovider,region,country,jurisdiction,lat,lon,"
                   "zone_prefix,location\nslurm,lab-a,NO,,59.9,10.7,,Oslo\n";
  assert_int_equal(tw_regions_load_text(ok, strlen(ok), &t, &err), TW_OK);
  assert_string_equal(tw_regions_find(t, "slurm", "lab-a")->jurisdiction, "NO");
  tw_regions_free(t);
  const struct {
    const char *text, *msg;
  } bad[] = {
      {"provider,region\n", "expected the header"},
      {"provider,region,country,jurisdiction,lat,lon,zone_prefix,location\n"
       "aws,x,us,,1,1,,X\n",
       "line 2: country"},
      {"provider,region,country,jurisdiction,lat,lon,zone_prefix,location\n"
       "aws,x,US,,91,1,,X\n",
       "lat/lon"},
      {"provider,region,country,jurisdiction,lat,lon,zone_prefix,location\n"
       "aws,x,US,,1,1,,X\naws,x,US,,1,1,,Y\n",
       "listed twice"},
      {"", "no header"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tw_err_clear(&err);
    t = (struct tw_regions *)1;
    assert_int_equal(
        tw_regions_load_text(bad[i].text, strlen(bad[i].text), &t, &err),
        TW_E_INVALID);
    assert_null(t);
    if (!strstr(err.msg, bad[i].msg))
      fail_msg("case %zu: %s", i, err.msg);
  }
}

static void foreign_prices_convert_at_a_recorded_rate(void **state) {
  (void)state;
  struct tw_rates *r = NULL;
  struct tw_err err = {0};
  const char *text = "currency,usd_per_unit,date,source\n"
                     "CNY,0.1393,2025-06-30,test rate\n";
  assert_int_equal(tw_rates_load_text(text, strlen(text), &r, &err), TW_OK);
  const struct tw_rate *cny = tw_rates_find(r, "CNY");
  assert_non_null(cny);
  assert_string_equal(cny->date, "2025-06-30");
  assert_string_equal(cny->text, "0.1393");
  int64_t uusd;
  /* 10 CNY/h -> 1.393 USD/h, exactly */
  assert_int_equal(tw_rate_convert(cny, 10000000, &uusd, &err), TW_OK);
  assert_int_equal(uusd, 1393000);
  /* 0.000004 CNY * 0.1393 = 0.0000005572 USD: rounds half up to 1 */
  assert_int_equal(tw_rate_convert(cny, 4, &uusd, &err), TW_OK);
  assert_int_equal(uusd, 1);
  assert_int_equal(tw_rate_convert(cny, 3, &uusd, &err), TW_OK);
  assert_int_equal(uusd, 0);
  const struct tw_rate *usd = tw_rates_find(r, "usd");
  assert_non_null(usd);
  assert_int_equal(tw_rate_convert(usd, 68800000, &uusd, &err), TW_OK);
  assert_int_equal(uusd, 68800000);
  assert_null(tw_rates_find(r, "EUR"));
  assert_int_equal(tw_rate_convert(cny, -1, &uusd, &err), TW_E_INVALID);
  tw_rates_free(r);

  const char *bad[] = {
      "currency,usd_per_unit,date,source\nCNY,abc,2025-06-30,x\n",
      "currency,usd_per_unit,date,source\nCNY,0.1,2025-13-30,x\n",
      "currency,usd_per_unit,date,source\nCNY,0.1,2025-06-30,x\nCNY,0.2,2025-"
      "06-30,x\n",
      "currency,usd_per_unit,date,source\nUSD,2,2025-06-30,x\n",
      "currency,usd_per_unit,date,source\nCNY,0.0000000001,2025-06-30,x\n",
      "currency,rate\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tw_err_clear(&err);
    if (tw_rates_load_text(bad[i], strlen(bad[i]), &r, &err) != TW_E_INVALID)
      fail_msg("case %zu accepted", i);
  }
  /* the shipped table loads and knows CNY */
  assert_int_equal(tw_rates_builtin(&r, &err), TW_OK);
  assert_non_null(tw_rates_find(r, "CNY"));
  assert_true(tw_rates_count(r) >= 2);
  tw_rates_free(r);
}

static void billing_rules_per_provider_and_market(void **state) {
  (void)state;
  struct tw_billing_rule b;
  assert_true(tw_norm_billing(cloud("aws"), TW_MARKET_SPOT, &b));
  assert_int_equal(b.granularity_s, 1);
  assert_int_equal(b.min_charge_s, 60);
  assert_true(tw_norm_billing(cloud("azure"), TW_MARKET_ON_DEMAND, &b));
  /* per second, 5 minutes at least (docs/billing.md cites the rule) */
  assert_int_equal(b.granularity_s, 1);
  assert_int_equal(b.min_charge_s, 300);
  assert_true(tw_norm_billing(cloud("alibaba"), TW_MARKET_SPOT, &b));
  assert_int_equal(b.granularity_s, 1);
  assert_int_equal(b.protection_s, 3600);
  assert_true(tw_norm_billing(cloud("alibaba"), TW_MARKET_ON_DEMAND, &b));
  assert_int_equal(b.protection_s, 0);
  assert_false(tw_norm_billing(cloud("slurm"), TW_MARKET_ON_DEMAND, &b));
  assert_int_equal(b.granularity_s, 0);
  assert_true(tw_norm_billing(cloud("gcp"), TW_MARKET_SPOT, &b));
  assert_int_equal(b.min_charge_s, 60);
  /* a cloud the catalog knows nothing of has no rule */
  assert_null(cloud("oracle"));
  assert_false(tw_norm_billing(cloud("oracle"), TW_MARKET_ON_DEMAND, &b));

  assert_string_equal(tw_risk_str(TW_RISK_LT5), "<5%");
  assert_int_equal(tw_risk_parse(">20%"), TW_RISK_GT20);
  assert_int_equal(tw_risk_parse("often"), TW_RISK_UNKNOWN);
  assert_int_equal(tw_risk_pct(TW_RISK_5_10), 11);
  assert_int_equal(tw_risk_pct(TW_RISK_UNKNOWN), -1);
  assert_string_equal(tw_norm_jurisdiction_of("FR"), "EU");
  assert_string_equal(tw_norm_jurisdiction_of("GB"), "UK");
  assert_string_equal(tw_norm_jurisdiction_of("CH"), "CH");
}

/* Placement's exact asks read a family's bare name as the catalog does:
 * the same variant, for every family with memory variants. */
static void bare_family_names_mean_the_same_variant_everywhere(void **state) {
  (void)state;
  static const char *const FAMILIES[] = {"A100", "H100", "V100", "T4", "L4",
                                         "A10G", NULL};
  for (int i = 0; FAMILIES[i]; i++) {
    struct tw_accel_info ai;
    assert_true(tw_norm_accel(FAMILIES[i], strlen(FAMILIES[i]), 0, &ai));
    const char *def = tw_place_accel_default(FAMILIES[i]);
    if (strcmp(ai.name, FAMILIES[i]))
      assert_string_equal(def ? def : "(none)", ai.name);
    else
      assert_null(def);
    assert_true(tw_place_accel_name_matches(FAMILIES[i], ai.name));
  }
  assert_false(tw_place_accel_name_matches("A100", "A100-80GB"));
  assert_false(tw_place_accel_name_matches("V100", "V100-32GB"));
  assert_true(tw_place_accel_name_matches("a100-80gb", "A100-80GB"));
  assert_true(tw_place_accel_name_matches("A100*", "A100-80GB"));
  assert_false(tw_place_accel_name_matches("A10", "A100-40GB"));
  assert_true(tw_place_accel_name_matches("A10?", "A10G"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decimals_convert_exactly_or_say_they_rounded),
      cmocka_unit_test(accelerators_get_one_canonical_name),
      cmocka_unit_test(bare_family_names_mean_the_same_variant_everywhere),
      cmocka_unit_test(architecture_from_column_or_type_name),
      cmocka_unit_test(regions_carry_country_jurisdiction_and_coordinates),
      cmocka_unit_test(foreign_prices_convert_at_a_recorded_rate),
      cmocka_unit_test(billing_rules_per_provider_and_market),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
