/* reconcile.h - the reconciler: makes what the providers hold agree with
 * what the store says, at start and periodically.
 *
 * One pass lists, for every provider, each instance carrying Tradewind's
 * tags (tw_provider_list_managed), then reads the attempts those tags name,
 * in that order: an attempt is always written before its launch is sent,
 * so an instance seen in the listing has its attempt in the store by the
 * time the store is read, and a launch in flight is never mistaken for an
 * orphan.  For each instance not already shutting down:
 *
 *   attempt live, no instance recorded   adopt: the launch's answer was lost
 *                                        (daemon killed between the call
 *                                        and the store write); the attempt
 *                                        is marked launched with it
 *   attempt live, this instance          nothing to do
 *   attempt live, another instance       terminate: a duplicate
 *   attempt ended, or no such attempt    terminate: an orphan
 *
 * When several instances answer for one attempt that has none recorded,
 * the first launched is adopted and the others are duplicates.  Each action
 * is logged, stored in the table reconcile_log (module "reconcile"), noted
 * on the job (its events) when there is one, and handed to the on_action
 * hook: the audit log connects there.  A provider whose listing fails is
 * skipped for the pass (nothing is terminated on partial knowledge).
 *
 * Threads: tw_reconcile_pass() may run on any thread, including
 * concurrently with the scheduler (see the ordering above); passes of one
 * reconciler do not overlap.  tw_reconcile_start() runs them on a thread of
 * its own. */
#ifndef TW_BROKER_RECONCILE_H
#define TW_BROKER_RECONCILE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/core/store_reconcile.h"

struct tw_store;
struct tw_spec_cache;
struct tw_provider;
struct tw_reconcile;

/* struct tw_reconcile_action (one thing a pass did) and struct
 * tw_reconcile_logrec (one stored action) are in
 * broker/core/store_reconcile.h. */
struct tw_reconcile_opts {
  struct tw_store *store;         /* borrowed */
  struct tw_clock *clock;         /* borrowed; NULL: real */
  struct tw_provider **providers; /* borrowed; outlive the reconciler */
  size_t n_providers;
  int64_t interval_ms; /* between passes; default 60000 */
  /* Called after each action is recorded, on the pass's thread; NULL:
   * none.  The audit log (broker/tenancy/audit.h) plugs in here. */
  void (*on_action)(void *ctx, const struct tw_reconcile_action *a);
  void *ctx;
  struct tw_spec_cache *specs; /* borrowed: parsed job specs (the
                                  scheduler's); NULL: parsed when read */
};

struct tw_reconcile_stats {
  uint64_t passes;
  uint64_t listed; /* instances seen, all passes */
  uint64_t adopted;
  uint64_t terminated;
  uint64_t failures;    /* listings or terminations that failed */
  int64_t last_pass_ms; /* when the last pass ended; 0 never */
};

/* Creates a reconciler (migrates its table).  *out is owned:
 * tw_reconcile_free(). */
enum tw_rc tw_reconcile_new(const struct tw_reconcile_opts *opts,
                            struct tw_reconcile **out, struct tw_err *err);

/* Runs one pass now.  *done (may be NULL) receives this pass's counts
 * (passes = 1).  Returns TW_OK even when some provider failed (counted in
 * failures). */
enum tw_rc tw_reconcile_pass(struct tw_reconcile *r,
                             struct tw_reconcile_stats *done,
                             struct tw_err *err);

/* Runs a pass at once, then one every interval_ms, on its own thread,
 * until tw_reconcile_free(). */
enum tw_rc tw_reconcile_start(struct tw_reconcile *r, struct tw_err *err);

/* Totals since creation. */
void tw_reconcile_stats(struct tw_reconcile *r, struct tw_reconcile_stats *out);

/* Stops the thread (if started) and frees r.  NULL ok. */
void tw_reconcile_free(struct tw_reconcile *r);

/* The recorded actions, oldest first, at most limit (1..10000).  Strings
 * in each are owned by the array: free it with tw_reconcile_log_free. */
enum tw_rc tw_reconcile_log(struct tw_store *s, int limit,
                            struct tw_reconcile_logrec **out, size_t *n,
                            struct tw_err *err);
void tw_reconcile_log_free(struct tw_reconcile_logrec *l);

#endif
