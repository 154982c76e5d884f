/* place.h - the first cut of placement, kept for what other modules build
 * on: struct tw_placement (the ranked candidates the fallback strategies
 * and tenancy's quota filter work on; tw_plan_to_placement() makes one
 * from a plan), the compute cost under billing rules, and accelerator
 * name matching.
 *
 * The scheduler places through policies/place/plan.h: filter and score plugins,
 * the full cost model (spot risk, egress, transfer, deadline) and the offer
 * index.  tw_place_rank() below is a plain scan over an array with the
 * fixed filters of the first cut, left for small callers and its tests.
 *
 * A pure function of (spec, offers, exclusions): no I/O, no clock, the same
 * input always gives the same ranking (ties break on the offer id). */
#ifndef TW_POLICIES_PLACE_H
#define TW_POLICIES_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/model.h"
#include "broker/core/spec.h"

/* Why an offer was filtered out; counted per reason for `plan` output. */
enum tw_reject {
  TW_REJ_PROVIDER = 0, /* not among placement.providers */
  TW_REJ_REGION,       /* matches no placement.regions selector */
  TW_REJ_RESIDENCY,    /* jurisdiction not allowed or unknown */
  TW_REJ_MARKET,
  TW_REJ_ARCH,
  TW_REJ_CPUS,
  TW_REJ_MEMORY,
  TW_REJ_ACCEL,    /* wrong accelerator or too few */
  TW_REJ_PRICE,    /* over max_price_per_hour */
  TW_REJ_EXCLUDED, /* failed this job before (capacity, interruption) */
  TW_REJ_COUNT
};

const char *tw_reject_str(enum tw_reject r);

struct tw_candidate {
  const struct tw_offer *offer; /* borrowed from the offers array */
  int64_t cost_uusd;            /* expected compute cost of the whole run */
};

struct tw_placement {
  struct tw_candidate *cands; /* cheapest first; owned */
  size_t n;
  size_t considered;
  size_t rejected[TW_REJ_COUNT];
};

/* Default run time assumed for the cost of a job that gives no duration. */
#define TW_PLACE_DEFAULT_DURATION_S 3600

/* Ranks offers for spec.  excluded holds offer ids this job must avoid.
 * out is filled (release with tw_placement_release). */
void tw_place_rank(const struct tw_job_spec *spec,
                   const struct tw_offer *offers, size_t n_offers,
                   const char *const *excluded, size_t n_excluded,
                   struct tw_placement *out);
void tw_placement_release(struct tw_placement *p);

/* "0 of 42 offers fit: 30 without the accelerator, 12 over max price". */
void tw_placement_explain(const struct tw_placement *p, char *out,
                          size_t outsz);

/* Compute cost of running for duration_s on nodes of offer o, under its
 * billing rules (granularity, minimum charge), rounded up to the
 * micro-dollar. */
int64_t tw_place_compute_cost(const struct tw_offer *o, int64_t duration_s,
                              int nodes);

/* Does accelerator name `have` (normalized, "A100-80GB") satisfy the
 * spec's `want` ("A100" matches every A100 variant, "A100-80GB" only
 * itself)?  Case-insensitive. */
bool tw_accel_matches(const char *want, const char *have);

#endif
