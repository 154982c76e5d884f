#include "policies/place/place.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/mem.h"

static const char *const REJECT_NAMES[TW_REJ_COUNT] = {
    "not an allowed provider",
    "outside the region selectors",
    "outside the allowed jurisdictions",
    "in another market",
    "of another architecture",
    "without the cpus",
    "without the memory",
    "without the accelerators",
    "over max price",
    "failed this job before"};

const char *tw_reject_str(enum tw_reject r) {
  return (unsigned)r < TW_REJ_COUNT ? REJECT_NAMES[r] : "unknown";
}

bool tw_accel_matches(const char *want, const char *have) {
  size_t n = strlen(want);
  if (strncasecmp(want, have, n))
    return false;
  return have[n] == '\0' || have[n] == '-';
}

static const char *label(const struct tw_offer *o, const char *key) {
  for (size_t i = 0; i < o->n_labels; i++)
    if (!strcmp(o->labels[i].key, key))
      return o->labels[i].value;
  return NULL;
}

int64_t tw_place_compute_cost(const struct tw_offer *o, int64_t duration_s,
                              int nodes) {
  int64_t billed = duration_s;
  if (o->min_charge_s > billed)
    billed = o->min_charge_s;
  if (o->billing_granularity_s > 1)
    billed = (billed + o->billing_granularity_s - 1) /
             o->billing_granularity_s * o->billing_granularity_s;
  /* price per hour * seconds / 3600, rounded up: never under-estimate */
  __int128 c =
      (__int128)o->price_uusd_per_hour * billed * (nodes > 0 ? nodes : 1);
  return (int64_t)((c + 3599) / 3600);
}

static enum tw_reject check(const struct tw_job_spec *s,
                            const struct tw_offer *o, const char *const *excl,
                            size_t n_excl, int *ok) {
  *ok = 0;
  if (s->n_providers) {
    size_t i;
    for (i = 0; i < s->n_providers; i++)
      if (!strcmp(s->providers[i], o->provider) ||
          !strcmp(s->providers[i], o->account))
        break;
    if (i == s->n_providers)
      return TW_REJ_PROVIDER;
  }
  if (s->n_regions) {
    /* selectors read "provider:region" or "provider:region:zone", globs */
    char where[3][192];
    snprintf(where[0], sizeof where[0], "%s:%s", o->provider, o->region);
    snprintf(where[1], sizeof where[1], "%s:%s", o->account, o->region);
    snprintf(where[2], sizeof where[2], "%s:%s:%s", o->provider, o->region,
             o->zone);
    size_t i;
    for (i = 0; i < s->n_regions; i++)
      if (!fnmatch(s->regions[i], where[0], 0) ||
          !fnmatch(s->regions[i], where[1], 0) ||
          !fnmatch(s->regions[i], where[2], 0))
        break;
    if (i == s->n_regions)
      return TW_REJ_REGION;
  }
  if (s->n_residency) {
    const char *j = label(o, "jurisdiction");
    size_t i = s->n_residency;
    if (j)
      for (i = 0; i < s->n_residency; i++)
        if (!strcasecmp(s->residency[i], j))
          break;
    if (i == s->n_residency)
      return TW_REJ_RESIDENCY;
  }
  if (s->market == TW_MARKET_SPOT && o->market != TW_MARKET_SPOT)
    return TW_REJ_MARKET;
  /* on-demand means "not interruptible": private capacity is that too */
  if (s->market == TW_MARKET_ON_DEMAND && o->market != TW_MARKET_ON_DEMAND &&
      o->market != TW_MARKET_PRIVATE)
    return TW_REJ_MARKET;
  if (s->arch != TW_ARCH_ANY && o->arch != s->arch)
    return TW_REJ_ARCH;
  if (s->cpus && (s->cpus_at_least ? o->vcpus < s->cpus : o->vcpus != s->cpus))
    return TW_REJ_CPUS;
  if (s->memory_mib && (s->memory_at_least ? o->memory_mib < s->memory_mib
                                           : o->memory_mib != s->memory_mib))
    return TW_REJ_MEMORY;
  if (s->accel_name) {
    if (!o->accel_name[0] || !tw_accel_matches(s->accel_name, o->accel_name) ||
        o->accel_count < s->accel_count)
      return TW_REJ_ACCEL;
  }
  if (s->max_price_uusd_per_hour &&
      o->price_uusd_per_hour > s->max_price_uusd_per_hour)
    return TW_REJ_PRICE;
  for (size_t i = 0; i < n_excl; i++)
    if (!strcmp(excl[i], o->id))
      return TW_REJ_EXCLUDED;
  *ok = 1;
  return TW_REJ_COUNT;
}

static int by_cost(const void *a, const void *b) {
  const struct tw_candidate *x = a, *y = b;
  if (x->cost_uusd != y->cost_uusd)
    return x->cost_uusd < y->cost_uusd ? -1 : 1;
  return strcmp(x->offer->id, y->offer->id);
}

void tw_place_rank(const struct tw_job_spec *spec,
                   const struct tw_offer *offers, size_t n_offers,
                   const char *const *excluded, size_t n_excluded,
                   struct tw_placement *out) {
  memset(out, 0, sizeof *out);
  out->considered = n_offers;
  int64_t duration =
      spec->duration_s > 0 ? spec->duration_s : TW_PLACE_DEFAULT_DURATION_S;
  for (size_t i = 0; i < n_offers; i++) {
    int ok;
    enum tw_reject r = check(spec, &offers[i], excluded, n_excluded, &ok);
    if (!ok) {
      out->rejected[r]++;
      continue;
    }
    if (out->n % 64 == 0)
      out->cands = tw_realloc(out->cands, (out->n + 64) * sizeof *out->cands);
    out->cands[out->n].offer = &offers[i];
    out->cands[out->n].cost_uusd = tw_place_compute_cost(
        &offers[i], duration, spec->nodes > 0 ? spec->nodes : 1);
    out->n++;
  }
  if (out->n > 1) /* qsort wants a non-NULL base even for nothing */
    qsort(out->cands, out->n, sizeof *out->cands, by_cost);
}

void tw_placement_release(struct tw_placement *p) {
  free(p->cands);
  memset(p, 0, sizeof *p);
}

void tw_placement_explain(const struct tw_placement *p, char *out,
                          size_t outsz) {
  int n = snprintf(out, outsz, "%zu of %zu offers fit", p->n, p->considered);
  for (int r = 0; r < TW_REJ_COUNT && n > 0 && (size_t)n < outsz; r++)
    if (p->rejected[r])
      n += snprintf(out + n, outsz - (size_t)n, "%s %zu %s",
                    n && strchr(out, ':') ? "," : ":", p->rejected[r],
                    tw_reject_str((enum tw_reject)r));
}
