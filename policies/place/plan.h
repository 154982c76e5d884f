/* plan.h - placement: for one job, the ranked candidates with their cost
 * breakdown and scores, and what was filtered out, per reason.
 *
 * A plan is a pure function of (policy set, snapshot, job, clock value):
 *
 *   1. filters, in stages: location-scope filters once per distinct
 *      location, shape-scope filters once per distinct machine shape
 *      (both cached per distinct job key in the workspace), then
 *      offer-scope filters for each offer the search visits;
 *   2. the search: the `candidates` cheapest feasible offers under the
 *      cost model (cost.h), found through the index without a scan: a
 *      best-first walk over price-ordered lists (per shape, per
 *      (shape, region) when data costs differ by region, per location
 *      when locations are the selective side, or the (shape, location)
 *      cells when both are), stopping once no unvisited offer can beat
 *      the candidates kept (every list is bounded below by the model);
 *   3. scores over those candidates, normalized, weighted and summed;
 *      best first; ties break on the expected cost, then the offer id.
 *
 * So with the default set (cost the only score) the first candidate is
 * the cheapest feasible offer under the model, and the same input always
 * gives the same plan.  Other scores trade cost for something else among
 * the cheapest `candidates` offers only: that bound is what keeps a
 * decision in microseconds.
 *
 * With opts.counts the plan also walks every offer once to count the
 * rejections per filter exactly (the same candidates result): what
 * `tradewind plan` shows, and what the scheduler stores with a placement.
 *
 * Threads: a workspace belongs to one thread at a time; plans may run on
 * many threads at once over the same set and snapshot. */
#ifndef TW_POLICIES_PLAN_H
#define TW_POLICIES_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "policies/place/inputs.h"
#include "policies/place/policy.h"

struct tw_offer_index;

/* What placement reads besides the job.  NULL members mean the defaults:
 * no datasets, nothing blocklisted, every provider healthy, no quota
 * limits, no private capacity used, no reservations. */
struct tw_place_snapshot {
  const struct tw_offer_index *index; /* required */
  const struct tw_dataset_set *datasets;
  const struct tw_place_blocklist *blocklist;
  const struct tw_health *health;
  const struct tw_quota_state *quota;
  const struct tw_capacity_view *capacity;
  const struct tw_reservations *reservations;
};

struct tw_plan_input {
  const struct tw_job_spec *job; /* required */
  const char *job_id;            /* NULL: not submitted */
  int64_t now_ms;
  const char *const *excluded; /* offer ids to avoid */
  size_t n_excluded;
};

struct tw_plan_opts {
  bool counts;       /* count rejections per filter (walks every offer) */
  bool scan;         /* find candidates by walking every offer (tests:
                        the reference the index must agree with) */
  size_t candidates; /* 0: the set's */
  /* Force a search strategy (tests): "cells", "global", "shapes",
   * "locations"; with data costs "cells", "groups" or "regions".  NULL:
   * the cheapest by the planner's estimate. */
  const char *strategy;
};

struct tw_plan_reject {
  char filter[TW_POLICY_NAME_MAX];
  const char *stage; /* "location", "shape", "offer" */
  uint64_t count;
  char reason[128]; /* the closest miss (smallest amount) */
  int64_t amount;
  char example[TW_MODEL_ID_MAX]; /* one offer it refused; "" none */
};

/* How candidates of equal total score are ordered, as plans state it. */
#define TW_PLAN_TIE_BREAK                                                      \
  "equal total scores rank by the lower expected cost, then by offer id "     \
  "(ascending)"

struct tw_plan {
  struct tw_cand *cands; /* best first; owned */
  size_t n;
  uint64_t considered; /* offers in the snapshot */
  bool counted;        /* rejects[] and feasible are exact */
  uint64_t feasible;
  struct tw_plan_reject rejects[TW_POLICY_MAX_FILTERS]; /* stage order */
  size_t n_rejects;
  const char *strategy; /* "shapes", "groups", "locations", "cells",
                           "scan", "none" */
  uint64_t visited;     /* offers the search evaluated */
  uint64_t steps;       /* list entries it looked at */
  size_t n_scores;
  char score_names[TW_POLICY_MAX_SCORES][TW_POLICY_NAME_MAX];
  int64_t weights[TW_POLICY_MAX_SCORES];
  int64_t duration_s; /* what the model assumed */
  int nodes;
  char data[256];         /* the datasets the model moved, "" none */
  /* what the caller adds to the explanation ("12 catalog rows for A100
   * were rejected ..."); "" none */
  char note[320];
  struct tw_offer *store; /* copies of candidates from non-stable sources */
};

struct tw_plan_ws;

struct tw_plan_ws *tw_plan_ws_new(void);
void tw_plan_ws_free(struct tw_plan_ws *ws);

/* Plans in->job over snap under set.  ws may be NULL (a temporary one:
 * no caching).  *out is filled even when nothing fits (n == 0);
 * tw_plan_release() it.  TW_E_INVALID when the snapshot has no index. */
enum tw_rc tw_plan_make(const struct tw_policy_set *set,
                        const struct tw_place_snapshot *snap,
                        const struct tw_plan_input *in,
                        const struct tw_plan_opts *opts, struct tw_plan_ws *ws,
                        struct tw_plan *out, struct tw_err *err);
void tw_plan_release(struct tw_plan *p);

/* "41203 offers, 2 fit: 40880 without A100-80GB, 190 outside jurisdiction
 * EU, 131 over max price $30/h".  Without counts: "N offers, M candidates
 * (rejections not counted)". */
void tw_plan_explain(const struct tw_plan *p, struct tw_buf *out);

/* The plan as JSON (the body of POST /v1/plan and the `explain` of a
 * stored placement): at most max_cands candidates (0: all). */
void tw_plan_to_json(const struct tw_plan *p, size_t max_cands,
                     struct tw_buf *out);

#endif
