/* test_registry.c - the extension points are tables: the adapter registry
 * generated from the list in providers/CMakeLists.txt holds every adapter
 * in the list's order, each with a complete info block that the catalog
 * applies as it is (and so do the catalog-only clouds); the spec refuses a
 * provider the registry does not hold, naming the field; the spec and the
 * config check fallback strategies against the names of their one table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/catalog/catalog.h"
#include "billing/catalog/clouds.h"
#include "billing/catalog/normalize.h"
#include "broker/core/config.h"
#include "broker/core/spec.h"
#include "policies/fallback/fallback_strategy.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakes/fake_provider.h"

/* TW_ADAPTER_LIST: the list TW_ADAPTERS, comma separated, from the build. */
static void registry_follows_the_adapter_list(void **state) {
  (void)state;
  char list[256];
  snprintf(list, sizeof list, "%s", TW_ADAPTER_LIST);
  size_t i = 0;
  for (char *save = NULL, *a = strtok_r(list, ",", &save); a;
       a = strtok_r(NULL, ",", &save), i++) {
    assert_non_null(tw_adapters[i]);
    assert_string_equal(tw_adapters[i]->name, a);
    /* the tests' registry: the same list, then the fake */
    assert_ptr_equal(tw_adapters_test[i], tw_adapters[i]);
  }
  assert_true(i > 0);
  assert_null(tw_adapters[i]);
  assert_ptr_equal(tw_adapters_test[i], &tw_provider_fake);
  assert_null(tw_adapters_test[i + 1]);
}

static void every_adapter_has_a_complete_info_block(void **state) {
  (void)state;
  for (size_t i = 0; tw_adapters_test[i]; i++) {
    const struct tw_provider_ops *ops = tw_adapters_test[i];
    const struct tw_provider_info *in = ops->info;
    print_message("adapter %s\n", ops->name);
    assert_int_equal(ops->version, TW_PROVIDER_OPS_VERSION);
    assert_non_null(in);
    assert_ptr_equal(tw_provider_ops_info(ops), in);
    assert_ptr_equal(tw_provider_info_find(tw_adapters_test, ops->name), in);
    assert_int_not_equal(in->billing.kind, TW_BILLING_UNSET);
    if (in->billing.kind == TW_BILLING_PUBLISHED) {
      assert_true(in->billing.granularity_s >= 1);
      assert_true(in->billing.min_charge_s >= 0);
      assert_true(in->billing.spot_protection_s >= 0);
    }
    /* "" is a deliberate none; NULL is a field forgotten */
    assert_non_null(in->notice_url);
    assert_non_null(in->notice_signal);
    assert_non_null(in->focus_provider);
    assert_non_null(in->focus_compute_service);
    assert_non_null(in->focus_network_service);
    assert_true(*in->focus_provider && *in->focus_compute_service &&
                *in->focus_network_service);
    /* the catalog reads this block (not a copy of its own) */
    assert_ptr_equal(tw_cat_cloud(tw_adapters_test, ops->name), in);
    for (const struct tw_provider_type_accel *h = in->type_accels;
         h && h->type_prefix; h++) {
      struct tw_accel_info ai;
      assert_true(tw_norm_accel(h->accel, strlen(h->accel), 0, &ai));
    }
    /* an adapter name is a provider word the spec accepts */
    assert_true(strspn(ops->name, "abcdefghijklmnopqrstuvwxyz0123456789-_") ==
                strlen(ops->name));
  }
  /* an adapter without one gets the empty block */
  static const struct tw_provider_ops old = {.name = "old", .version = 2};
  assert_string_equal(tw_provider_ops_info(&old)->focus_provider, "");
  assert_int_equal(tw_provider_ops_info(&old)->billing.kind, TW_BILLING_UNSET);
}

/* One small price list per cloud the catalog knows (every adapter of the
 * tests' registry, then the catalog-only clouds), ingested as a file
 * source: the billing fields of the offers are the info block's, and a
 * zone column holding a zone id is read as one exactly where the block
 * says catalog_zone_ids (elsewhere it is a zone name that does not begin
 * with its region, and the row is refused). */
static void catalog_applies_each_info_block(void **state) {
  (void)state;
  static const char CSV[] =
      "InstanceType,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
      "t.large,2,8,0.1,0.05,us-east-1,us-east-1a\n"
      "t.large,2,8,0.1,0.05,us-east-1,use1-az4\n";
  struct tw_regions *regions = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_regions_builtin(&regions, &err), TW_OK);
  const char *names[32];
  size_t n = tw_provider_names(tw_adapters_test, names, 32);
  size_t nc = tw_cat_catalog_only_names(names + n, 32 - n);
  assert_true(nc >= 1);
  for (size_t i = 0; i < n + nc; i++) {
    const struct tw_provider_info *in =
        tw_cat_cloud(tw_adapters_test, names[i]);
    print_message("cloud %s\n", names[i]);
    assert_non_null(in);
    if (i >= n) {
      /* a catalog-only cloud has no adapter, and a complete block */
      assert_null(tw_provider_find(tw_adapters_test, names[i]));
      assert_int_not_equal(in->billing.kind, TW_BILLING_UNSET);
      assert_non_null(in->notice_url);
      assert_non_null(in->notice_signal);
      assert_non_null(in->focus_provider);
    }
    struct tw_csv_opts o = {
        .provider = names[i], .regions = regions, .adapters = tw_adapters_test};
    struct tw_cat_source_info info = {.kind = "file"};
    snprintf(info.name, sizeof info.name, "%s", names[i]);
    snprintf(info.provider, sizeof info.provider, "%s", names[i]);
    struct tw_cat_snap *s = NULL;
    assert_int_equal(
        tw_cat_snap_from_csv(CSV, sizeof CSV - 1, &o, &info, &s, &err), TW_OK);
    const struct tw_cat_report *rep = &tw_cat_snap_source(s, 0)->report;
    assert_int_equal(rep->normalized, in->catalog_zone_ids ? 2 : 1);
    assert_int_equal(rep->rejected[TW_CAT_REJ_ZONE_MISMATCH],
                     in->catalog_zone_ids ? 0 : 1);
    bool published = in->billing.kind == TW_BILLING_PUBLISHED;
    size_t ids = 0;
    for (size_t k = 0; k < tw_cat_snap_count(s); k++) {
      struct tw_cat_view v;
      tw_cat_snap_view(s, k, &v);
      ids += *v.zone_id != '\0';
      assert_int_equal(v.granularity_s,
                       published ? in->billing.granularity_s : 0);
      assert_int_equal(v.min_charge_s,
                       published ? in->billing.min_charge_s : 0);
      assert_int_equal(v.protection_s, published && v.market == TW_MARKET_SPOT
                                           ? in->billing.spot_protection_s
                                           : 0);
    }
    assert_int_equal(ids, in->catalog_zone_ids ? 2 : 0); /* both markets */
    tw_cat_snap_release(s);
  }
  /* a cloud nobody knows gets no rule at all */
  assert_null(tw_cat_cloud(tw_adapters_test, "oracle"));
  tw_regions_free(regions);
}

static void spec_refuses_a_provider_the_registry_lacks(void **state) {
  (void)state;
  const char *names[32];
  tw_provider_names(tw_adapters, names, 32);
  struct tw_spec_opts opts = {.providers = names};
  static const struct {
    const char *yaml, *field, *msg;
  } cases[] = {
      {"name: a\nplacement: {providers: [aws, fake]}\n",
       "placement.providers[1]", "unknown provider \"fake\""},
      {"name: a\nplacement: {providers: [slrum]}\n", "placement.providers[0]",
       "did you mean \"slurm\"?"},
      {"name: a\nplacement: {regions: [\"oracle:us-*\"]}\n",
       "placement.regions[0]", "unknown provider \"oracle\""},
      {"name: a\ndatasets:\n  - uri: s3://b\n    location: azur:westeurope\n",
       "datasets[0].location", "did you mean \"azure\"?"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_job_spec spec;
    struct tw_err err = {0};
    const char *y = cases[i].yaml;
    assert_int_equal(
        tw_spec_parse_opts(y, strlen(y), false, &opts, &spec, &err),
        TW_E_INVALID);
    assert_string_equal(err.field, cases[i].field);
    assert_non_null(strstr(err.msg, cases[i].msg));
  }
  /* the tests' registry holds the fake, so the same spec passes there */
  tw_provider_names(tw_adapters_test, names, 32);
  struct tw_job_spec spec;
  struct tw_err err = {0};
  const char *y = cases[0].yaml;
  assert_int_equal(tw_spec_parse_opts(y, strlen(y), false, &opts, &spec, &err),
                   TW_OK);
  tw_spec_release(&spec);
}

/* `fallback:` and spot.fallback are checked against the fallback table's
 * names, handed to the core by the callers (the core may not include
 * policies/); without them only the shape is checked. */
static void fallback_names_come_from_the_table(void **state) {
  (void)state;
  const char *names[16];
  size_t n = tw_fallback_names(names, 16);
  assert_int_equal(n, TW_FALLBACK_COUNT);
  for (size_t i = 0; i < n; i++) {
    enum tw_fallback_kind k;
    assert_true(tw_fallback_parse(names[i], &k));
    assert_int_equal(k, (enum tw_fallback_kind)i);
    assert_string_equal(tw_fallback_name(k), names[i]);
    assert_true(tw_spec_name_word(names[i]));
  }
  assert_null(names[n]);
  char list[256];
  tw_spec_names_join(names, list, sizeof list);
  assert_string_equal(list, "failover, eager-next-region, on-demand-fallback "
                            "or deadline");

  /* the spec: every name of the table passes, another is refused naming
   * the field and listing the table */
  struct tw_spec_opts opts = {.fallbacks = names};
  struct tw_job_spec spec;
  struct tw_err err = {0};
  for (size_t i = 0; i < n; i++) {
    char *y = tw_asprintf("name: a\nfallback: %s\n", names[i]);
    assert_int_equal(
        tw_spec_parse_opts(y, strlen(y), false, &opts, &spec, &err), TW_OK);
    assert_string_equal(spec.fallback, names[i]);
    tw_spec_release(&spec);
    free(y);
  }
  const char *bad = "name: a\nfallback: deadlne\n";
  assert_int_equal(
      tw_spec_parse_opts(bad, strlen(bad), false, &opts, &spec, &err),
      TW_E_INVALID);
  assert_string_equal(err.field, "fallback");
  assert_non_null(strstr(err.msg, list));
  assert_non_null(strstr(err.msg, "did you mean \"deadline\"?"));
  /* without the names: any strategy-shaped word, for whoever has the
   * table to check */
  assert_int_equal(tw_spec_parse(bad, strlen(bad), false, &spec, &err), TW_OK);
  assert_string_equal(spec.fallback, "deadlne");
  tw_spec_release(&spec);
  tw_err_clear(&err); /* the first failure wins */
  const char *shape = "name: a\nfallback: \"Dead line\"\n";
  assert_int_equal(tw_spec_parse(shape, strlen(shape), false, &spec, &err),
                   TW_E_INVALID);
  assert_string_equal(err.field, "fallback");

  /* the config: the same, and its default is one of the table's names */
  struct tw_cfg_load_opts lopts = {.fallbacks = names};
  struct tw_cfg *c = NULL;
  assert_int_equal(tw_cfg_load_text_opts("", 0, &lopts, &c, &err), TW_OK);
  enum tw_fallback_kind k;
  assert_true(tw_fallback_parse(c->spot_fallback, &k));
  tw_cfg_free(c);
  tw_err_clear(&err);
  const char *cb = "spot: {fallback: eager}\n";
  assert_int_equal(tw_cfg_load_text_opts(cb, strlen(cb), &lopts, &c, &err),
                   TW_E_INVALID);
  assert_string_equal(err.field, "spot.fallback");
  assert_non_null(strstr(err.msg, list));
  assert_int_equal(tw_cfg_load_text(cb, strlen(cb), &c, &err), TW_OK);
  tw_cfg_free(c);
  tw_err_clear(&err);
  const char *cs = "spot: {fallback: \"Eager!\"}\n";
  assert_int_equal(tw_cfg_load_text(cs, strlen(cs), &c, &err), TW_E_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(registry_follows_the_adapter_list),
      cmocka_unit_test(every_adapter_has_a_complete_info_block),
      cmocka_unit_test(catalog_applies_each_info_block),
      cmocka_unit_test(spec_refuses_a_provider_the_registry_lacks),
      cmocka_unit_test(fallback_names_come_from_the_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
