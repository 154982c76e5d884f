/* sched.h - the scheduler loop: places pending jobs, launches them through
 * the providers, and follows each attempt to its end.
 *
 * One pass (tw_sched_tick) does, in order:
 *   1. take the offers of its providers from the catalog's latest snapshot
 *      (the daemon's catalog refreshes on its own threads; a scheduler
 *      given none refreshes a catalog of its own when offers_ttl_ms has
 *      passed); a provider whose refresh fails keeps its previous offers;
 *   2. poll each provider's interruption notices: request a checkpoint,
 *      blocklist the offer, note them on the job (docs/spot.md);
 *   3. follow every live attempt: re-send a launch whose answer was lost
 *      (same client token), mark it running, complete it, or treat an
 *      instance that vanished (or whose notice ran out) as an
 *      interruption: record the progress kept, and place the job again at
 *      once through its fallback strategy; terminate the instances of a
 *      job cancelled meanwhile; pick up jobs a restart left half way;
 *   4. place up to max_place_per_tick pending jobs in queue order
 *      (policies/place/queue.h: priority, aging, fair share), after shared
 *      replication of datasets several of them read: each job is planned
 *      through policies/place/plan.h (the policy set in force, the offer
 *      index, the cost model) and its fallback strategy, an attempt is
 *      opened (stored before the call) and the best candidate launched,
 *      moving on to the next at once after a capacity, quota or rejected
 *      error.  A job that fits nowhere stays pending with the reason
 *      (counts per filter) and may hold a backfill reservation on a
 *      private pool.
 *
 * Placement is pure (policies/); this loop does the I/O around it.  On a
 * provider with `agent: true` an attempt runs under tradewind-agent and
 * ends on its exit report (broker/sched/agent.h, docs/agent.md).  On the
 * other clouds the broker does not learn when a job's script ends: a
 * running attempt on a provider without TW_PROV_BATCH completes (exit 0) and its
 * instances are terminated once the job's expected duration (duration_s,
 * else 60 s), less the progress earlier attempts kept, has passed on the
 * injected clock.  A batch provider (Slurm) runs the script and reports
 * its exit code, which ends the attempt.
 *
 * Parsed specs come from the spec cache (broker/core/spec_cache.h): a
 * stored spec is parsed once per version of its job, not at every pass.
 *
 * Threads: tw_sched_start() runs passes on a thread of its own every
 * tick_ms; tests call tw_sched_tick() directly with a fake clock instead.
 * The split of the loop into files: broker/sched/sched_int.h. */
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
struct tw_catalog;
struct tw_placer;
struct tw_spec_cache;
struct tw_tenancy;
struct tw_agent;
struct tw_tracer;

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
  /* The spot lifecycle (docs/spot.md); NULL: the defaults.  fallback:
   * policies/fallback/fallback_strategy.h; blocklist: blocklist.h. */
  const struct tw_fallback_cfg *fallback;
  const struct tw_blocklist_opts *blocklist;
  int64_t review_ms; /* running attempts reviewed by their strategy; 60000 */
  /* Borrowed, and outlive the scheduler.  NULL: one of its own (tests). */
  struct tw_catalog *catalog;  /* the offers; its own is a private catalog
                                  over the providers, refreshed by the pass */
  struct tw_placer *placer;    /* the policy set in force; the scheduler
                                  publishes its offer index there for the
                                  REST handlers' plans; its own has the
                                  default set */
  struct tw_spec_cache *specs; /* parsed specs, shared with the reconciler
                                  and the meter */
  /* tradewind-agent (broker/sched/agent.h), borrowed: attempts of
   * providers with `agent: true` get its bootstrap as user data and end on
   * its exit report.  NULL: every attempt runs as before. */
  struct tw_agent *agent;
  /* The longest a pass waits for the cloud calls it made (launches,
   * settling of unanswered ones), in real time; what answers later is
   * applied by a later pass.  Default 500.  A pass that sent as many
   * launches as it may place while more jobs wait does not wait at all:
   * the next pass follows at once and collects them.  The calls
   * themselves run on each provider's workers (tw_provider_concurrency)
   * with a deadline of tw_provider_call_deadline_ms. */
  int64_t pass_budget_ms;
  /* Spans of placements, launches and provider calls for jobs stored with
   * a trace context (docs/observability.md); borrowed, NULL: none. */
  struct tw_tracer *tracer;
};

enum tw_rc tw_sched_new(const struct tw_sched_opts *opts, struct tw_sched **out,
                        struct tw_err *err);
/* 0 while the loop thread comes round; the milliseconds since its last
 * pass began or ended once that is more than 20 ticks (at least 60 s);
 * -1 before tw_sched_start().  For /readyz. */
int64_t tw_sched_stalled_ms(struct tw_sched *s);
/* Runs passes on a thread until tw_sched_free(). */
enum tw_rc tw_sched_start(struct tw_sched *s, struct tw_err *err);
/* Something happened that a pass acts on (an agent's exit report or
 * notice): the running loop starts its next pass without waiting for the
 * tick.  Thread-safe; NULL ok. */
void tw_sched_wake(struct tw_sched *s);
/* One pass; returns the number of state changes it made. */
int tw_sched_tick(struct tw_sched *s);
/* The start-up work of the first pass, done before it (the daemon runs
 * it before it starts the loop): the datasets loaded, the store's
 * statements of a pass prepared (tw_store_warm), the reads of a pass run
 * once (live attempts, the queue's window, the first queued job's
 * attempts and progress: the connection's caches and the index pages
 * they read) and the window's specs parsed into the spec cache, where the
 * pass finds them.  Not the offers (the first pass takes them from the
 * catalog, waiting for its first listing as before).  Places nothing,
 * writes no job, calls no provider.  Returns the milliseconds it took;
 * call it before tw_sched_start (not thread-safe with the loop). */
int64_t tw_sched_warm(struct tw_sched *s);
/* What the last pass took, step by step (wall-clock microseconds, each
 * step's own), and how much it did: for the benchmarks (bench-scale
 * prints the first pass's) and the logs.  Thread-safe; zeros before the
 * first pass. */
struct tw_sched_pass_stats {
  int64_t total_us;
  int64_t offers_us;  /* 1. the offers from the catalog */
  int64_t follow_us;  /* answers collected, notices, live attempts */
  int64_t flow_us;    /* dependencies, arrays, workflows */
  int64_t queue_us;   /* the queue's window read, its specs, its order */
  int64_t plan_us;    /* the jobs of the window placed (their reads, plans) */
  int64_t notes_us;   /* the notes of those that fit nowhere, one commit */
  int64_t launch_us;  /* attempts opened, launches sent and waited for */
  size_t queued;      /* jobs in the window */
  size_t looked_at;   /* of which placed or found to fit nowhere */
  size_t notes;       /* notes sent (a job whose reason is already the
                         text keeps it: tw_store_job_note_many) */
};
void tw_sched_last_pass(struct tw_sched *s, struct tw_sched_pass_stats *out);
/* The placer s plans with and publishes its offer index to (the one in
 * its options, else its own); borrowed for s's lifetime.  What the REST
 * handlers read of the scheduler's state (its last offer index) they read
 * here. */
struct tw_placer *tw_sched_placer(struct tw_sched *s);
/* The drain of a stopping daemon: stops the passes (the one running ends
 * within its budget), then applies the answers of the calls in flight as
 * they come, until deadline_mono_ms (tw_sched_mono_ms's clock).  Calls
 * still running then are abandoned: their attempts stay launching with
 * their tokens, and the next start settles them by asking for those.
 * Returns how many were abandoned; when not 0, the providers (and the
 * spec cache) those calls use must not be freed: the process is to exit.
 * NULL ok (0). */
size_t tw_sched_drain(struct tw_sched *s, int64_t deadline_mono_ms);
/* Monotonic milliseconds, the clock of tw_sched_drain's deadline. */
int64_t tw_sched_mono_ms(void);
/* Stops the thread (if started) and frees s.  NULL ok. */
void tw_sched_free(struct tw_sched *s);
/* The scheduler's metrics in Prometheus text (broker/sched/obs.c): pass
 * time, queue depth and waits per tenant, launch latency and errors per
 * provider, interruptions, fallbacks, agents' heartbeats lost, spend rate
 * per tenant.  NULL s: nothing. */
struct tw_buf;
void tw_sched_metrics(struct tw_sched *s, struct tw_buf *out);

#endif
