/* clouds.c - the catalog-only clouds and the lookup that prefers the
 * adapters' own info blocks (clouds.h). */
#include "billing/catalog/clouds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* GCP's Arm families: Tau T2A, Axion C4A and N4A, the A4X GPU hosts. */
static enum tw_arch gcp_arch_of_type(const char *type) {
  static const char *const ARM[] = {"t2a-", "c4a-", "n4a-", "a4x-", NULL};
  for (int i = 0; ARM[i]; i++)
    if (!strncmp(type, ARM[i], strlen(ARM[i])))
      return TW_ARCH_ARM64;
  return TW_ARCH_X86_64;
}

/* The GPU machines whose GPUs Compute Engine bills as their own SKU: the
 * catalog's rows price the machine without them and list the GPUs in
 * accelerator-only rows (a2-highgpu-8g = machine + 8 x A100).  Accelerator
 * names are the rows' own. */
static bool gcp_type_bundle(const char *type, const char **accel,
                            int *count) {
  static const struct {
    const char *prefix, *accel;
  } GPU_FAMILIES[] = {{"a2-highgpu-", "A100"},    {"a2-megagpu-", "A100"},
                      {"a2-ultragpu-", "A100-80GB"}, {"a3-highgpu-", "H100"},
                      {"a3-edgegpu-", "H100"},    {"a3-megagpu-", "H100-MEGA"},
                      {"a3-ultragpu-", "H200"},   {"a4-highgpu-", "B200"},
                      {"a4x-highgpu-", "GB200"},  {NULL, NULL}};
  for (int i = 0; GPU_FAMILIES[i].prefix; i++) {
    size_t n = strlen(GPU_FAMILIES[i].prefix);
    if (strncmp(type, GPU_FAMILIES[i].prefix, n))
      continue;
    /* "<count>g", then the end or a variant ("-nolssd") */
    char *end;
    long c = strtol(type + n, &end, 10);
    if (c < 1 || c > 64 || *end != 'g' || (end[1] && end[1] != '-'))
      return false;
    *accel = GPU_FAMILIES[i].accel;
    *count = (int)c;
    return true;
  }
  /* G2: one L4 up to g2-standard-32, then 2, 4, 8 */
  if (!strncmp(type, "g2-standard-", 12)) {
    char *end;
    long v = strtol(type + 12, &end, 10);
    if (*end || v < 4)
      return false;
    *accel = "L4";
    *count = v <= 32 ? (v == 24 ? 2 : 1) : v == 48 ? 4 : v == 96 ? 8 : 0;
    return *count > 0;
  }
  return false;
}

/* GPUs attached to N1 machines, within Compute Engine's published limits
 * per GPU count (vCPUs and memory of the machine). */
static bool gcp_accel_attach(const char *type, int vcpus, int64_t memory_mib,
                             const char *accel, int count) {
  static const struct {
    const char *accel;
    int count, max_vcpus, max_gib;
  } N1_GPU_LIMITS[] = {
      {"T4", 1, 48, 312},   {"T4", 2, 48, 312},   {"T4", 4, 96, 624},
      {"P4", 1, 24, 156},   {"P4", 2, 48, 312},   {"P4", 4, 96, 624},
      {"V100", 1, 12, 78},  {"V100", 2, 24, 156}, {"V100", 4, 48, 312},
      {"V100", 8, 96, 624}, {"P100", 1, 16, 104}, {"P100", 2, 32, 208},
      {"P100", 4, 64, 208}, {NULL, 0, 0, 0}};
  if (strncmp(type, "n1-", 3))
    return false;
  for (int i = 0; N1_GPU_LIMITS[i].accel; i++)
    if (!strcasecmp(N1_GPU_LIMITS[i].accel, accel) &&
        N1_GPU_LIMITS[i].count == count)
      return vcpus <= N1_GPU_LIMITS[i].max_vcpus &&
             memory_mib <= (int64_t)N1_GPU_LIMITS[i].max_gib * 1024;
  return false;
}

/* Shared-core machines run on CPU bursts; Compute Engine's confidential
 * VMs are an option of a machine, not a type of their own. */
static unsigned gcp_type_traits(const char *type) {
  static const char *const SHARED_CORE[] = {"e2-micro", "e2-small",
                                            "e2-medium", "f1-micro",
                                            "g1-small", NULL};
  for (int i = 0; SHARED_CORE[i]; i++)
    if (!strcmp(type, SHARED_CORE[i]))
      return TW_TYPE_BURSTABLE;
  return 0;
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
      .type_accels = NULL,
      .type_bundle = gcp_type_bundle,
      .accel_attach = gcp_accel_attach,
      .type_family = NULL, /* "n2" of "n2-standard-8" */
      .type_traits = gcp_type_traits}},
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

void tw_cat_type_family(const struct tw_provider_info *info, const char *type,
                        char *out, size_t outsz) {
  if (!outsz)
    return;
  out[0] = '\0';
  if (info && info->type_family) {
    info->type_family(type, out, outsz);
    return;
  }
  size_t n = strcspn(type, ".-");
  snprintf(out, outsz, "%.*s", (int)n, type);
}

unsigned tw_cat_type_traits(const struct tw_provider_info *info,
                            const char *type) {
  return info && info->type_traits ? info->type_traits(type) : 0u;
}
