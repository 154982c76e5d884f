/* placer.h - the placement state the daemon shares between its scheduler
 * and its REST handlers: the policy set in force and the last offer index
 * the scheduler built.
 *
 * The scheduler publishes a new index whenever its offers change; a
 * reload (SIGHUP, PUT /v1/policies) swaps the policy set whole.  Readers
 * take references (tw_placer_acquire) and plan without a lock, so neither
 * a reload nor a new index ever waits for a plan, and a plan always sees
 * one set and one index, never a mix.
 *
 * The daemon owns one placer and hands it to the REST handlers
 * (tw_api_opts.placer) and the scheduler.
 *
 * Threads: every function is thread-safe. */
#ifndef TW_POLICIES_PLACER_H
#define TW_POLICIES_PLACER_H

#include <stdint.h>

#include "policies/place/index.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"

struct tw_placer;

/* A placer with set (one reference taken over; NULL: the defaults) and no
 * offers yet.  Free with tw_placer_free(). */
struct tw_placer *tw_placer_new(struct tw_policy_set *set);
void tw_placer_free(struct tw_placer *p);

/* Swaps the policy set (takes over the caller's reference).  Plans
 * already running finish on the old one. */
void tw_placer_set_policies(struct tw_placer *p, struct tw_policy_set *set);

/* Publishes ix (a reference is taken; NULL: no offers). */
void tw_placer_set_index(struct tw_placer *p, struct tw_offer_index *ix);

/* A consistent pair: *set and *ix hold one reference each (*ix may be
 * NULL before the first publication).  Give them back with
 * tw_placer_release(). */
void tw_placer_acquire(struct tw_placer *p, struct tw_policy_set **set,
                       struct tw_offer_index **ix);
void tw_placer_release(struct tw_policy_set *set, struct tw_offer_index *ix);

/* How many times the set was swapped (for /metrics and tests). */
uint64_t tw_placer_reloads(struct tw_placer *p);

#endif
