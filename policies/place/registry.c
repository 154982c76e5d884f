/* registry.c - the built-in plugins.  The order is the default order of
 * the filters (policy.c enables them all unless the config lists its own):
 * the cheap, selective location checks first, then the machine, then what
 * varies per offer, the deadline last since it needs the cost model. */
#include <string.h>

#include "policies/place/policy.h"

const struct tw_policy_ops *const tw_policy_registry[] = {
    &tw_filter_provider,
    &tw_filter_launchable,
    &tw_filter_selector,
    &tw_filter_zones,
    &tw_filter_residency,
    &tw_filter_health,
    &tw_filter_latency,
    &tw_filter_gang,
    &tw_filter_arch,
    &tw_filter_cpus,
    &tw_filter_memory,
    &tw_filter_accelerators,
    &tw_filter_instance_types,
    &tw_filter_quota,
    &tw_filter_market,
    &tw_filter_price,
    &tw_filter_price_sanity,
    &tw_filter_excluded,
    &tw_filter_blocklist,
    &tw_filter_capacity,
    &tw_filter_backfill,
    &tw_filter_deadline,
    &tw_score_cost,
    &tw_score_latency,
    &tw_score_packing,
    &tw_score_preference,
    NULL,
};

const struct tw_policy_ops *tw_policy_find(const char *name) {
  for (size_t i = 0; tw_policy_registry[i]; i++)
    if (!strcmp(tw_policy_registry[i]->name, name))
      return tw_policy_registry[i];
  return NULL;
}

const struct tw_policy_ops *tw_policy_find_filter(const char *name) {
  for (size_t i = 0; tw_policy_registry[i]; i++)
    if (tw_policy_registry[i]->filter &&
        !strcmp(tw_policy_registry[i]->name, name))
      return tw_policy_registry[i];
  return NULL;
}

const struct tw_policy_ops *tw_policy_find_score(const char *name) {
  for (size_t i = 0; tw_policy_registry[i]; i++)
    if (tw_policy_registry[i]->score &&
        !strcmp(tw_policy_registry[i]->name, name))
      return tw_policy_registry[i];
  return NULL;
}
