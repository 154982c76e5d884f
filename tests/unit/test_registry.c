/* test_registry.c - the extension points are tables: the adapter registry
 * generated from the list in providers/CMakeLists.txt holds every adapter
 * in the list's order, each with a complete info block; the spec refuses a
 * provider the registry does not hold, naming the field; the fallback
 * strategies' names come from their one table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "billing/catalog/normalize.h"
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
    /* the catalog still applies the rules by name (normalize.c): the two
     * must agree until it reads the info block */
    struct tw_billing_rule od, sp;
    bool known = tw_norm_billing(ops->name, TW_MARKET_ON_DEMAND, &od);
    tw_norm_billing(ops->name, TW_MARKET_SPOT, &sp);
    if (in->billing.kind == TW_BILLING_PUBLISHED) {
      assert_true(known);
      assert_int_equal(od.granularity_s, in->billing.granularity_s);
      assert_int_equal(od.min_charge_s, in->billing.min_charge_s);
      assert_int_equal(sp.protection_s, in->billing.spot_protection_s);
    } else {
      assert_false(known);
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

/* The core validates `fallback:` and spot.fallback with a list of its own
 * (it may not include policies/): it must name exactly the table's
 * strategies. */
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
    assert_non_null(tw_spec_fallbacks[i]);
    assert_string_equal(tw_spec_fallbacks[i], names[i]);
  }
  assert_null(tw_spec_fallbacks[n]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(registry_follows_the_adapter_list),
      cmocka_unit_test(every_adapter_has_a_complete_info_block),
      cmocka_unit_test(spec_refuses_a_provider_the_registry_lacks),
      cmocka_unit_test(fallback_names_come_from_the_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
