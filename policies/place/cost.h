/* cost.h - the expected total cost of running a job on an offer, in
 * integer micro-USD.
 *
 *   compute    the hourly price over the expected duration, rounded by the
 *              offer's billing rules (minimum charge, granularity), times
 *              the node count (tw_cost_compute_uusd below).
 *   spot risk  spot offers only.  The interruption band (% of instances
 *              interrupted per month, AWS Spot Advisor's "frequency of
 *              interruption") gives a rate per node-hour; a gang of n
 *              nodes is interrupted when any node is.  Each interruption
 *              loses the work since the last checkpoint (half the
 *              interval on average; half the run without checkpoints)
 *              plus the restart overhead.  Expected extra time = expected
 *              interruptions x that loss; its cost is that time at the
 *              offer's price for every node.
 *   egress     per dataset: size x the egress price per GB from the
 *              cheapest location holding it to the offer's region (the
 *              network matrix; nothing within one region).  A planned
 *              replica's location adds its per-reader share of the copy.
 *   transfer   datasets are fetched in parallel before the work starts:
 *              the slowest (round trips + size over bandwidth) delays the
 *              start, and the instances are paid while they wait.
 *   finish     now + launch overhead + transfer + duration + spot extra;
 *              the deadline filter compares it with the job's deadline.
 *
 * Every step rounds up (never under-estimates) and uses 128-bit
 * intermediates, so no input in the model's bounds overflows.
 *
 * Pure; thread-safe. */
#ifndef TW_POLICIES_COST_H
#define TW_POLICIES_COST_H

#include <stddef.h>
#include <stdint.h>

#include "policies/place/policy.h"

struct tw_netmatrix;
struct tw_dataset_set;

/* The run time assumed for a job that gives no duration (the default of
 * tw_cost_params.default_duration_s). */
#define TW_COST_DEFAULT_DURATION_S 3600

/* The defaults documented in policy.h. */
void tw_cost_params_default(struct tw_cost_params *p);

/* The compute part of the model alone: running for duration_s on nodes
 * (< 1: one) of offer o, billed by its rules (minimum charge, granularity),
 * rounded up to the micro-dollar (an estimate never under-estimates); what
 * tw_cost_eval() puts in compute_uusd.  Metering of actual use follows the
 * ledger's rules instead (billing/ledger/meter.h). */
int64_t tw_cost_compute_uusd(const struct tw_offer *o, int64_t duration_s,
                             int nodes);

/* What the model needs of an offer. */
struct tw_cost_offer {
  int64_t price_uusd_per_hour;
  int64_t granularity_s;
  int64_t min_charge_s;
  int interruption_pct; /* -1 unknown */
  bool spot;
  bool private_capacity; /* launch_overhead_private_s applies */
  int64_t launch_overhead_s; /* its provider's, when has_launch_overhead */
  bool has_launch_overhead;
};

/* What it needs of the job. */
struct tw_cost_job {
  int64_t duration_s;
  int nodes;
  int64_t checkpoint_s; /* 0: none */
  int64_t now_ms;
};

/* One job's data costs for every region of a list (the index's regions):
 * egress_uusd[r], transfer_s[r] and the largest round trip to a dataset
 * rtt_us[r]. */
struct tw_job_data {
  size_t n_regions;
  int64_t *egress_uusd;
  int64_t *transfer_s;
  int64_t *rtt_us;
  int64_t min_egress_uusd; /* over all regions: bounds for the search */
  int64_t min_transfer_s;
  size_t n_datasets; /* datasets with a known location and size */
  char source[256];  /* "s3://x (1.5 TB) at aws:us-east-1; ..." */
};

/* Row provider: the link from src to every region of the list; may come
 * from a cache (plan.c keeps one per workspace).  NULL: computed. */
struct tw_net_link;
typedef const struct tw_net_link *(*tw_cost_rows_fn)(void *ctx,
                                                     const char *src);

/* Fills d for spec's datasets over regions[0..n) ("provider:region").
 * Sizes and locations come from the spec, completed by the registry's
 * (datasets may be NULL).  Returns false (d zeroed, nothing allocated)
 * when no dataset has both a size and a location: the job moves no data. */
bool tw_job_data_build(const struct tw_job_spec *spec,
                       const struct tw_dataset_set *datasets,
                       const struct tw_netmatrix *net,
                       const struct tw_cost_params *p,
                       const char *const *regions, size_t n,
                       tw_cost_rows_fn rows, void *rows_ctx,
                       struct tw_job_data *d);
void tw_job_data_release(struct tw_job_data *d);

/* The model for one offer in region r (egress and transfer from d, or
 * none when d is NULL).  Fills *out. */
void tw_cost_eval(const struct tw_cost_params *p, const struct tw_cost_job *j,
                  const struct tw_cost_offer *o, int64_t egress_uusd,
                  int64_t transfer_s, struct tw_cost *out);

/* A lower bound of total_uusd for any offer at this price in a region
 * with these data costs (the search orders lists by it). */
int64_t tw_cost_lower_bound(const struct tw_cost_job *j,
                            int64_t price_uusd_per_hour, int64_t egress_uusd,
                            int64_t transfer_s);

/* Transfer time in seconds of size bytes over a link: round trips plus
 * size over bandwidth, rounded up. */
int64_t tw_cost_transfer_s(int64_t size_bytes, int64_t rtt_us,
                           int64_t bandwidth_kbps, int round_trips);
/* size x price per GB (10^9 bytes), rounded up. */
int64_t tw_cost_egress_uusd(int64_t size_bytes, int64_t uusd_per_gb);

#endif
