/* registry.c - the adapters built into this binary.
 *
 * Each adapter directory carries a header <name>/<name>.h declaring its
 * one export, `extern const struct tw_provider_ops tw_provider_<name>;`,
 * and providers/CMakeLists.txt compiles the adapter's sources when they
 * exist.  An adapter is listed here when its header is present, so a new
 * adapter lands with its own files only. */
#include "providers/provider.h"

#include <string.h>

#if __has_include("aws/aws.h")
#include "providers/aws/aws.h"
#define TW_HAVE_AWS 1
#endif
#if __has_include("azure/azure.h")
#include "providers/azure/azure.h"
#define TW_HAVE_AZURE 1
#endif
#if __has_include("alibaba/alibaba.h")
#include "providers/alibaba/alibaba.h"
#define TW_HAVE_ALIBABA 1
#endif
#if __has_include("slurm/slurm.h")
#include "providers/slurm/slurm.h"
#define TW_HAVE_SLURM 1
#endif

const struct tw_provider_ops *const tw_provider_registry[] = {
#ifdef TW_HAVE_AWS
    &tw_provider_aws,
#endif
#ifdef TW_HAVE_AZURE
    &tw_provider_azure,
#endif
#ifdef TW_HAVE_ALIBABA
    &tw_provider_alibaba,
#endif
#ifdef TW_HAVE_SLURM
    &tw_provider_slurm,
#endif
    NULL};

const struct tw_provider_ops *tw_provider_find(const char *name) {
  for (size_t i = 0; name && tw_provider_registry[i]; i++)
    if (!strcmp(tw_provider_registry[i]->name, name))
      return tw_provider_registry[i];
  return NULL;
}
