/* clouds.c - the catalog-only clouds and the lookup that prefers the
 * adapters' own info blocks (clouds.h). */
#include "billing/catalog/clouds.h"

#include <string.h>

/* GCP's Arm families: Tau T2A, Axion C4A and N4A, the A4X GPU hosts. */
static enum tw_arch gcp_arch_of_type(const char *type) {
  static const char *const ARM[] = {"t2a-", "c4a-", "n4a-", "a4x-", NULL};
  for (int i = 0; ARM[i]; i++)
    if (!strncmp(type, ARM[i], strlen(ARM[i])))
      return TW_ARCH_ARM64;
  return TW_ARCH_X86_64;
}

/* Clouds the catalog's file sources may name without an adapter.  Each
 * row sets every field an adapter's block sets (tests/unit/test_registry.c
 * checks them); nothing launches there, so no notice and no FOCUS rows
 * ever come from them, but the names are filled all the same. */
static const struct {
  const char *name;
  struct tw_provider_info info;
} CATALOG_ONLY[] = {
    /* Compute Engine bills per second with a one-minute minimum. */
    {"gcp",
     {.billing = {.kind = TW_BILLING_PUBLISHED,
                  .granularity_s = 1,
                  .min_charge_s = 60},
      .notice_url = "",
      .notice_signal = "",
      .focus_provider = "Google Cloud",
      .focus_compute_service = "Compute Engine",
      .focus_network_service = "Networking",
      .catalog_zone_ids = false,
      .catalog_risk_feed = false,
      .arch_of_type = gcp_arch_of_type,
      .type_accels = NULL}},
};

#define NCATALOG_ONLY (sizeof CATALOG_ONLY / sizeof CATALOG_ONLY[0])

const struct tw_provider_info *
tw_cat_cloud(const struct tw_provider_ops *const *reg, const char *provider) {
  if (!provider)
    return NULL;
  const struct tw_provider_info *in = tw_provider_info_find(reg, provider);
  if (in)
    return in;
  for (size_t i = 0; i < NCATALOG_ONLY; i++)
    if (!strcmp(CATALOG_ONLY[i].name, provider))
      return &CATALOG_ONLY[i].info;
  return NULL;
}

size_t tw_cat_catalog_only_names(const char **names, size_t max) {
  size_t n = 0;
  if (!max)
    return 0;
  for (size_t i = 0; i < NCATALOG_ONLY && n + 1 < max; i++)
    names[n++] = CATALOG_ONLY[i].name;
  names[n] = NULL;
  return n;
}
