/* fallback_deadline.c - the deadline strategy: Uniform Progress, after
 * "Can't Be Late: Optimizing Spot Instance Savings under Deadlines"
 * (Wu et al., NSDI 2024).
 *
 * The arithmetic, in seconds, with d the restart overhead and m the margin:
 *
 *   slack    S = (deadline - now) - (work - done)
 *   expected E = work * (now - submitted) / (deadline - submitted)
 *
 * with s the step (the longest time before the strategy is asked again).
 * A job that needs an instance goes to spot only when S >= 2d + m: one d
 * to start there and one more to restart on on-demand if spot is taken
 * away (d includes the work lost at an interruption and how late one may
 * be noticed), so an interruption can never make it late.  Otherwise
 * on-demand.  When no spot launch succeeds it waits for spot if it is on
 * track (done + d >= E: at most one restart behind the uniform line;
 * waiting costs nothing) and can afford to (S - s >= d + m still leaves
 * room for on-demand at the next step), and takes on-demand at once
 * otherwise.  A job running on on-demand moves back to spot when
 * S >= 3d + s + m (a d and a step of hysteresis, so the job does not
 * bounce), it is on track, and a spot offer is placeable.  A job on spot stays
 * there: its slack does not shrink while it runs, and the rule above left it
 * room for one restart.
 *
 * The paper's policy decides each tick over a single spot pool; here the
 * same rules decide at the points where Tradewind acts (placement,
 * interruption, periodic review), over every offer placement allows. */
#include <stdio.h>
#include <string.h>

#include "broker/core/spec.h"
#include "policies/fallback/fallback_int.h"

int64_t tw_fallback_slack_s(const struct tw_fallback_job *j) {
  return (j->deadline_ms - j->now_ms) / 1000 - (j->work_s - j->done_s);
}

int64_t tw_fallback_expected_done_s(const struct tw_fallback_job *j) {
  int64_t window = j->deadline_ms - j->submitted_ms;
  int64_t elapsed = j->now_ms - j->submitted_ms;
  if (window <= 0 || elapsed >= window)
    return j->work_s;
  if (elapsed <= 0)
    return 0;
  return (int64_t)((__int128)j->work_s * elapsed / window);
}

void fb__deadline(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j,
                  struct tw_fallback_decision *out) {
  if (!j->deadline_ms) {
    fb__failover(cfg, j, "deadline (none set, as failover)", out);
    return;
  }
  if (j->spec_market == TW_MARKET_ON_DEMAND) {
    fb__failover(cfg, j, "deadline (the spec asks for on-demand)", out);
    return;
  }
  int64_t d = cfg->restart_overhead_s > 0 ? cfg->restart_overhead_s : 300;
  int64_t m = cfg->margin_s > 0 ? cfg->margin_s : 0;
  int64_t step = cfg->step_s > 0 ? cfg->step_s : 0;
  int64_t slack = tw_fallback_slack_s(j);
  /* On track means at most one restart behind the uniform line: a job that
   * just arrived (or just lost its instance) is always a little behind it,
   * and waiting minutes for spot beats an on-demand start that must be
   * undone later. */
  int64_t ahead = j->done_s - tw_fallback_expected_done_s(j);
  bool on_track = ahead + d >= 0;
  /* what an interruption and restart cost, as the reasons spell it */
  char s_txt[24], d_txt[24], a_txt[24], r_txt[64];
  tw_fallback_fmt_dur(slack, s_txt, sizeof s_txt);
  tw_fallback_fmt_dur(d, d_txt, sizeof d_txt);
  snprintf(r_txt, sizeof r_txt, "2 x %s", d_txt);
  tw_fallback_fmt_dur(ahead < 0 ? -ahead : ahead, a_txt, sizeof a_txt);
  out->slack_s = slack;
  out->rank_market = TW_MARKET_ANY;
  out->region = TW_FB_ANY_REGION;

  if (j->event == TW_FB_REVIEW) {
    out->action = TW_FB_ACT_STAY;
    out->market = j->current_market;
    if (j->current_market == TW_MARKET_ON_DEMAND && slack >= 3 * d + step + m &&
        ahead >= 0 && j->spot_offered) {
      out->action = TW_FB_ACT_MOVE;
      out->market = TW_MARKET_SPOT;
      /* the on-demand attempt is given up for this: if spot is gone by the
       * time the launch is sent, on-demand takes over again at once */
      out->then_on_demand = true;
      snprintf(out->reason, sizeof out->reason,
               "deadline: slack %s absorbs an interruption again (%s, with"
               " hysteresis), ahead by %s: back to spot",
               s_txt, r_txt, a_txt);
    } else {
      snprintf(out->reason, sizeof out->reason,
               "deadline: slack %s: stays on %s", s_txt,
               tw_market_str(j->current_market));
    }
    return;
  }
  out->action = TW_FB_ACT_PLACE;
  if (slack >= 2 * d + m) {
    out->market = TW_MARKET_SPOT;
    out->then_on_demand = !on_track || slack - step < d + m;
    snprintf(out->reason, sizeof out->reason,
             "deadline: slack %s absorbs an interruption and restart (%s): "
             "spot; %s by %s, so %s",
             s_txt, r_txt, ahead < 0 ? "behind" : "ahead", a_txt,
             out->then_on_demand ? "on-demand if no spot is left"
                                 : "waits if no spot is left");
  } else {
    out->market = TW_MARKET_ON_DEMAND;
    snprintf(out->reason, sizeof out->reason,
             "deadline: slack %s cannot absorb another interruption and restart"
             " (%s): on-demand",
             s_txt, r_txt);
  }
}
