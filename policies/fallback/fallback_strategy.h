/* fallback_strategy.h - what to do when a job needs an instance again:
 * after an interruption, after capacity errors, or while it runs on a
 * market it should leave.
 *
 * Four strategies, chosen per job (`fallback:` in the spec) or by policy
 * (`spot.fallback` in the config):
 *
 *   failover            retry within the region of the last attempt (any
 *                       market the spec allows, cheapest first), then
 *                       elsewhere.
 *   eager-next-region   leave the region at the first interruption: other
 *                       regions first, the old one last.
 *   on-demand-fallback  as failover until the job was interrupted N times
 *                       (cfg.on_demand_after), then on-demand only.
 *   deadline            Uniform Progress, after "Can't Be Late" (Wu et al.,
 *                       NSDI 2024): stay on spot while the job is on track
 *                       for its deadline; when spot is out, wait if ahead
 *                       of the uniform progress line and go on-demand if
 *                       behind; switch to on-demand as soon as the
 *                       remaining slack can no longer absorb another
 *                       interruption and restart, and back to spot once it
 *                       can again.  Without a deadline it acts as failover.
 *
 * Choosing an on-demand strategy is an opt-in: on-demand-fallback and
 * deadline may place a job whose spec says `market: spot` on on-demand.  A
 * spec that says `market: on-demand` is never moved to spot.
 *
 * Everything here is pure (no I/O, no clock: the time comes in the input),
 * so the daemon's scheduler and bench/bench_sim.c run the very same code.
 * The caller records each decision with its reason (the job's events). */
#ifndef TW_POLICIES_FALLBACK_STRATEGY_H
#define TW_POLICIES_FALLBACK_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/model.h"
#include "policies/place/plan.h"

enum tw_fallback_kind {
  TW_FALLBACK_FAILOVER = 0,
  TW_FALLBACK_EAGER_NEXT_REGION,
  TW_FALLBACK_ON_DEMAND,
  TW_FALLBACK_DEADLINE,
  TW_FALLBACK_COUNT
};

/* "failover", "eager-next-region", "on-demand-fallback", "deadline". */
const char *tw_fallback_name(enum tw_fallback_kind k);
/* false when name is none of the above. */
bool tw_fallback_parse(const char *name, enum tw_fallback_kind *out);
/* Fills names[0..max-1] with the strategies' names in enum order,
 * NULL-terminated (at most max - 1); returns the count.  For validation
 * and help texts that list the strategies (one table in
 * fallback_strategy.c holds each name with its code). */
size_t tw_fallback_names(const char **names, size_t max);

struct tw_fallback_cfg {
  enum tw_fallback_kind kind; /* for jobs whose spec names none */
  int on_demand_after;        /* on-demand-fallback: interruptions; 0 -> 2 */
  /* deadline: what a (re)start costs before work resumes: provisioning,
   * boot, restoring the checkpoint, plus the work lost at an interruption
   * and how late one may be noticed; 0 -> 300 s */
  int64_t restart_overhead_s;
  /* deadline: slack kept in reserve on top of one restart; default 0 */
  int64_t margin_s;
  /* deadline: how long until the strategy is asked again at the latest
   * (the scheduler's pass): a job that waits for spot spends that much
   * slack before anything can change; default 0 */
  int64_t step_s;
};

/* The defaults above (failover). */
void tw_fallback_cfg_default(struct tw_fallback_cfg *cfg);

enum tw_fallback_event {
  TW_FB_PLACE = 0,   /* the job needs an instance: first placement, or the
                        last launch failed */
  TW_FB_INTERRUPTED, /* its instance was interrupted (or is being) */
  TW_FB_REVIEW       /* periodic, while its attempt runs */
};

/* What the strategy knows of the job.  Strings are borrowed; "" when
 * unknown. */
struct tw_fallback_job {
  enum tw_fallback_event event;
  int64_t now_ms;
  int64_t submitted_ms;       /* the uniform progress line starts here */
  int64_t deadline_ms;        /* 0: none */
  int64_t work_s;             /* run time the job needs in all */
  int64_t done_s;             /* progress kept so far (checkpointed, or running
                                 now) */
  int interruptions;          /* so far, this one included */
  enum tw_market spec_market; /* what the spec asks: any, spot, on-demand */
  enum tw_market current_market; /* of the live or last attempt; ANY: none */
  const char *region;            /* of the live or last attempt */
  const char *zone;
  bool spot_offered; /* REVIEW: a spot candidate is placeable now (not
                        blocklisted); the caller ranks to know */
};

enum tw_fallback_action {
  TW_FB_ACT_PLACE = 0, /* place now, as below */
  TW_FB_ACT_STAY,      /* REVIEW: leave the running attempt alone */
  TW_FB_ACT_MOVE       /* REVIEW: checkpoint, end the attempt, place as
                          below */
};

enum tw_fallback_region {
  TW_FB_ANY_REGION = 0,
  TW_FB_SAME_REGION_FIRST,
  TW_FB_OTHER_REGIONS_FIRST
};

struct tw_fallback_decision {
  enum tw_fallback_kind kind;
  enum tw_fallback_action action;
  /* Which offers: SPOT or ON_DEMAND only, or ANY as ranked by cost.  With
   * SPOT, then_on_demand says whether on-demand offers follow the spot ones
   * in the same pass (false: when no spot launch succeeds, the job waits
   * for the next pass). */
  enum tw_market market;
  bool then_on_demand;
  enum tw_fallback_region region;
  /* The market to rank offers with (placement filters on it): the spec's,
   * or ANY when the strategy widens it. */
  enum tw_market rank_market;
  int64_t slack_s;  /* deadline: remaining slack; 0 otherwise */
  char reason[240]; /* "deadline: slack 3h12m absorbs an interruption
                       (2 x 5m): spot" */
};

/* Decides for job j under cfg and kind.  Pure. */
void tw_fallback_decide(const struct tw_fallback_cfg *cfg,
                        enum tw_fallback_kind kind,
                        const struct tw_fallback_job *j,
                        struct tw_fallback_decision *out);

/* Applies d to the candidates of plan pl (policies/place/plan.h, best
 * first): keeps the markets d allows and orders them (market groups first,
 * then region preference relative to region, the plan's order kept within
 * each group).  region may be "" (no preference applies).  Pure; pl->n may
 * shrink, and what else the plan says (counts, rejections) is left as it
 * was. */
void tw_fallback_apply(const struct tw_fallback_decision *d, const char *region,
                       struct tw_plan *pl);

/* The deadline strategy's arithmetic, exposed for tests and the
 * simulator.  slack = (deadline - now) - (work - done), in seconds. */
int64_t tw_fallback_slack_s(const struct tw_fallback_job *j);
/* Progress the uniform line expects by now: work * elapsed / window. */
int64_t tw_fallback_expected_done_s(const struct tw_fallback_job *j);

/* "1h05m", "42s", "-3m" into out (for reasons). */
void tw_fallback_fmt_dur(int64_t s, char *out, size_t outsz);

#endif
