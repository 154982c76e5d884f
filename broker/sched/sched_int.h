/* sched_int.h - what the scheduler's files share (sched.c: the loop and
 * placement; monitor.c: following attempts) and nobody else. */
#ifndef TW_BROKER_SCHED_INT_H
#define TW_BROKER_SCHED_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "policies/fallback/fallback_strategy.h"
#include "policies/place/plan.h"
#include "broker/sched/sched.h"

struct tw_provider;
struct tw_blocklist;
struct spot_state;

struct pcache {
  struct tw_provider *p;
  struct tw_offer_list offers;
  int64_t fetched_ms; /* 0: never */
};

struct tw_sched {
  struct tw_store *store;
  struct tw_clock *clock;
  struct pcache *pc;
  size_t n_pc;
  struct tw_offer_list all; /* every provider's offers, for placement */
  int64_t tick_ms, ttl_ms;
  int max_place;
  struct tw_tenancy *tenancy; /* quota filter, reservations, audit */
  struct tw_meter *meter;     /* egress of datasets moved for a launch */

  /* Jobs whose last launch failed for a reason that is not the offer's
   * (throttled, auth, provider down) wait before the next try, doubling
   * from 1 s to 60 s, so a broken provider is not hammered every pass.
   * In memory only: a restart simply tries at once. */
  struct backoff {
    char job_id[TW_JOB_ID_LEN + 1];
    int64_t not_before_ms;
    int64_t delay_ms;
  } * backoff;
  size_t n_backoff, cap_backoff;

  /* The spot lifecycle (monitor.c, docs/spot.md): what failed recently,
   * the default fallback strategy, and the monitor's own state (poll
   * schedule, notices seen). */
  struct tw_blocklist *blocklist;
  struct tw_fallback_cfg fallback;
  int64_t review_ms;
  struct spot_state *spot;

  pthread_t thread;
  bool started, stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

/* sched.c */
struct pcache *sched__provider(struct tw_sched *s, const char *account);
const struct tw_offer *sched__offer(struct tw_sched *s, const char *offer_id);
bool sched__parse_spec(const struct tw_job_rec *job, struct tw_job_spec *spec);
/* Calls the provider for attempt a on offer o and stores the outcome. */
enum tw_rc sched__launch(struct tw_sched *s, const struct tw_job_rec *job,
                         const struct tw_job_spec *spec,
                         const struct tw_attempt_rec *a,
                         const struct tw_offer *o, int64_t cost,
                         const char *explain);

/* Whether spec on the provider account is a gang launched as N instances
 * of one attempt (nodes > 1 on a cloud; a batch provider runs the N nodes
 * as one job of its own). */
bool sched__is_gang(struct tw_sched *s, const struct tw_job_spec *spec,
                    const char *account);
/* The client token of node k (1..N) of a gang attempt: "<token>-<k>". */
void sched__gang_token(const struct tw_attempt_rec *a, int k, char *out,
                       size_t sz);

/* Places one pending (or recovering) job: opens an attempt, launches the
 * best candidate, moves on at once after a capacity error.  Returns the
 * number of state changes. */
int sched__place_job(struct tw_sched *s, const struct tw_job_rec *job,
                     int64_t now);
/* Whether the plan of job under spec (the scheduler's offers, policy set
 * and snapshot; excl avoided) has a candidate now.  Scheduler thread. */
bool sched__placeable(struct tw_sched *s, const struct tw_job_rec *job,
                      const struct tw_job_spec *spec, const char *const *excl,
                      size_t n_excl, int64_t now);

/* monitor.c: notices, then every live attempt, then jobs a restart left
 * half way (placing, interrupted, recovering without a live attempt);
 * returns state changes. */
int sched__follow(struct tw_sched *s, int64_t now);

/* monitor.c: the spot lifecycle's part of placement. */
void sched__spot_init(struct tw_sched *s, const struct tw_sched_opts *o);
void sched__spot_free(struct tw_sched *s);

/* Whether a past attempt keeps its offer from the job: always when the
 * offer refused the request (rejected), for the blocklist's offer time
 * after a capacity error or an interruption (then the offer may have
 * capacity again). */
bool sched__spot_excludes(const struct tw_sched *s,
                          const struct tw_attempt_rec *past, int64_t now);

/* What placing job must take into account besides its spec. */
struct spot_plan {
  struct tw_fallback_decision d;
  enum tw_fallback_event event;
  char region[TW_MODEL_NAME_MAX]; /* of its last attempt that ran; "" none */
};
/* Decides the job's fallback (spec->market is set to the market to rank
 * with) and appends the ids of blocklisted offers to *excl (a malloc'd
 * array, grown here; the ids are borrowed from s->all). */
void sched__spot_plan(struct tw_sched *s, const struct tw_job_rec *job,
                      struct tw_job_spec *spec,
                      const struct tw_attempt_rec *past, size_t n_past,
                      int64_t now, const char ***excl, size_t *n_excl,
                      struct spot_plan *plan);
/* Applies the plan to the ranked candidates, prefixes explain with the
 * decision's reason, and stores the decision when a launch will follow. */
void sched__spot_order(struct tw_sched *s, const struct tw_job_rec *job,
                       const struct spot_plan *plan, struct tw_plan *pl,
                       char *explain, size_t explain_sz, int64_t now);
/* A launch on o succeeded: the blocklist forgets the failures remembered
 * in its zone (a streak of failures is what escalates). */
void sched__spot_launch_ok(struct tw_sched *s, const struct tw_offer *o,
                           int64_t now);
/* A launch on o failed with rc: capacity and quota errors blocklist it. */
void sched__spot_launch_failed(struct tw_sched *s, const struct tw_offer *o,
                               enum tw_rc rc, int64_t now);
/* The user data of attempt a: the spec's script, prefixed with the
 * checkpoint contract's environment when the spec has `checkpoint:`
 * (broker/sched/checkpoint.h).  Returns NULL when there is nothing to send,
 * else out->data. */
const char *sched__spot_user_data(struct tw_sched *s,
                                  const struct tw_job_rec *job,
                                  const struct tw_job_spec *spec,
                                  const struct tw_attempt_rec *a,
                                  const struct tw_offer *o, struct tw_buf *out);

#endif
