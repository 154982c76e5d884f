/* queue.h - the order pending jobs are placed in: priority, aging, and
 * fair share between tenants by dominant resource fairness (Ghodsi et
 * al., NSDI 2011), and the arithmetic of backfilling private capacity.
 *
 * Effective priority, in milli-points:
 *
 *   priority x 1000
 *   + min(aging_max, hours waited x aging_per_hour) x 1000
 *   - fair_share_weight x the tenant's dominant share x 1000
 *
 * where a tenant's dominant share is the largest of its vCPUs, memory and
 * GPUs (held by its live jobs, plus the jobs already ordered before in
 * this pass) over the capacity the config names.  The order is built one
 * job at a time: the tenant whose next job has the highest effective
 * priority goes next, and what that job asks for is added to its tenant
 * before the next choice; so a tenant that already holds much waits
 * behind one that holds little, by as many points as the weight says,
 * and aging lifts a job that has waited long over both.  Ties go to the
 * job submitted first, then to the one given first (the store lists jobs
 * of one millisecond in the order they were stored).
 *
 * Pure; thread-safe. */
#ifndef TW_POLICIES_QUEUE_H
#define TW_POLICIES_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "policies/place/policy.h"

struct tw_queue_job {
  const char *id; /* borrowed */
  const char *tenant;
  int priority; /* -1000..1000 */
  int64_t created_ms;
  int64_t vcpus, memory_mib, gpus; /* what the whole job asks (x nodes) */
};

struct tw_queue_usage {
  const char *tenant; /* borrowed */
  int64_t vcpus, memory_mib, gpus;
};

/* Writes the order into order[0..n) (indexes into jobs) and, when eff is
 * not NULL, each job's effective priority in milli-points at the moment
 * it was chosen into eff[index]. */
void tw_queue_order(const struct tw_queue_params *p, int64_t now_ms,
                    const struct tw_queue_job *jobs, size_t n,
                    const struct tw_queue_usage *usage, size_t n_usage,
                    size_t *order, int64_t *eff);

/* A tenant's dominant share of the capacity, in parts per million. */
int64_t tw_queue_dominant_ppm(const struct tw_queue_params *p, int64_t vcpus,
                              int64_t memory_mib, int64_t gpus);

/* ---- backfill on private capacity -----------------------------------------
 */

/* A job holding nodes of a private pool until end_ms. */
struct tw_bf_running {
  int64_t nodes;
  int64_t end_ms;
};

/* When `need` nodes of a pool with `free_now` free nodes will be free,
 * given the jobs running there (each gives its nodes back at its end):
 * now_ms when they are free now, INT64_MAX when never (need exceeds what
 * is free plus everything running).  That is the head job's reservation;
 * the backfill filter (filter_offer.c) then lets a later job use the pool
 * only if it fits beside the reservation or ends before it starts, so the
 * head job is never delayed (EASY backfilling). */
int64_t tw_backfill_start_ms(int64_t free_now,
                             const struct tw_bf_running *running, size_t n,
                             int64_t need, int64_t now_ms);

#endif
