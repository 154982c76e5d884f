/* sched.h - the scheduler loop: places pending jobs, launches them through
 * the providers, and follows each attempt to its end.
 *
 * One pass (tw_sched_tick) does, in order:
 *   1. refresh each provider's offers when older than offers_ttl_ms (a
 *      provider that fails keeps its previous offers);
 *   2. poll each provider's interruption notices: request a checkpoint,
 *      blocklist the offer, note them on the job (docs/spot.md);
 *   3. follow every live attempt: re-send a launch whose answer was lost
 *      (same client token), mark it running, complete it, or treat an
 *      instance that vanished (or whose notice ran out) as an
 *      interruption: record the progress kept, and place the job again at
 *      once through its fallback strategy; terminate the instance of a job
 *      cancelled meanwhile; pick up jobs a restart left half way;
 *   4. place pending jobs in queue order (policies/place/plan.h): open an
 *      attempt (stored before the call), launch the best candidate under
 *      the blocklist and the job's fallback strategy, and on a capacity or
 *      quota error move on to the next at once.
 * Jobs that fit nowhere stay pending with the reason (counts per filter).
 *
 * Placement is pure; this loop does the I/O around it.  On the fake clouds
 * nothing really executes, so a running attempt completes (exit 0) once its
 * job's expected duration has passed on the injected clock; jobs placed on
 * Slurm run for real (a later adapter reports their exit code).
 *
 * Threads: tw_sched_start() runs passes on a thread of its own every
 * tick_ms; tests call tw_sched_tick() directly with a fake clock instead. */
#ifndef TW_BROKER_SCHED_H
#define TW_BROKER_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"

struct tw_store;
struct tw_provider;
struct tw_sched;
struct tw_meter;
struct tw_fallback_cfg;
struct tw_blocklist_opts;

struct tw_sched_opts {
  struct tw_store *store;         /* borrowed */
  struct tw_clock *clock;         /* borrowed; NULL: real */
  struct tw_provider **providers; /* borrowed array; outlives the loop */
  size_t n_providers;
  int64_t tick_ms;            /* default 1000 */
  int64_t offers_ttl_ms;      /* default 300000 */
  int max_place_per_tick;     /* default 64 */
  struct tw_tenancy *tenancy; /* borrowed: quotas, audit; NULL none */
  struct tw_meter *meter;     /* borrowed: data moved for a launch is
                                 metered as egress; NULL none */
  /* The spot lifecycle (docs/spot.md); NULL: the defaults. */
  const struct tw_fallback_cfg *fallback;    /* policies/fallback/fallback_strategy.h */
  const struct tw_blocklist_opts *blocklist; /* broker/sched/blocklist.h */
  int64_t review_ms; /* running attempts reviewed by their strategy; 60000 */
};

enum tw_rc tw_sched_new(const struct tw_sched_opts *opts, struct tw_sched **out,
                        struct tw_err *err);
/* Runs passes on a thread until tw_sched_free(). */
enum tw_rc tw_sched_start(struct tw_sched *s, struct tw_err *err);
/* One pass; returns the number of state changes it made. */
int tw_sched_tick(struct tw_sched *s);
/* Stops the thread (if started) and frees s.  NULL ok. */
void tw_sched_free(struct tw_sched *s);

#endif
