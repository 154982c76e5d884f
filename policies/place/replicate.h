/* replicate.h - shared replication: when several pending jobs read the
 * same dataset, copy it once to one region and let every reader fetch it
 * there, instead of each paying egress from where it lives.
 *
 * For a dataset and its pending readers, the decision compares
 *
 *   the readers' best plans as things are (each pays its own egress),
 *   with, for each candidate region R (where the readers' best offers
 *   are, and the dataset is not), the copy's egress to R once plus the
 *   readers' best plans with a replica at R, its cost shared among them,
 *
 * and keeps the region that saves the most, if any saves at all.  The
 * candidate regions are those of each reader's cheapest candidates,
 * planned with the dataset moved for free: where the readers would like
 * it to be.  Everything is planned under the same policy set and
 * snapshot, so the choice is a pure function of them.
 *
 * The scheduler records a chosen replica in the dataset registry (origin
 * "replicated", with the copy's cost) and places the readers against it.
 * Moving the bytes is the job of whatever the operator uses for data
 * (docs/placement.md): the broker decides and accounts, once. */
#ifndef TW_POLICIES_REPLICATE_H
#define TW_POLICIES_REPLICATE_H

#include <stddef.h>
#include <stdint.h>

#include "policies/place/plan.h"

struct tw_repl_choice {
  bool replicate;
  char target[160];    /* "aws:eu-west-1" */
  char source[160];    /* where the copy comes from */
  int64_t copy_uusd;   /* the copy's egress, paid once */
  int64_t before_uusd; /* the readers' best plans, summed, as things are */
  int64_t after_uusd;  /* the same with the replica, copy included */
  size_t readers;      /* readers that place at the target */
  size_t candidates;   /* regions considered */
};

/* Decides for dataset uri (its size and locations from snap->datasets or
 * the readers' specs) and its readers (jobs[0..n), all reading uri).
 * Needs at least set->replication.min_jobs readers; *out->replicate is
 * false otherwise, or when no region saves.  ws may be NULL. */
enum tw_rc tw_replicate_decide(const struct tw_policy_set *set,
                               const struct tw_place_snapshot *snap,
                               const char *uri,
                               const struct tw_job_spec *const *jobs, size_t n,
                               int64_t now_ms, struct tw_plan_ws *ws,
                               struct tw_repl_choice *out, struct tw_err *err);

#endif
