/* spot.c - what an interruption does to a job (docs/spot.md):
 *
 *   running -> interrupted -> recovering -> provisioning -> running
 *
 * A notice requests a checkpoint and blocklists the offer; an attempt
 * whose instance went (or whose notice ran out) is ended with the progress
 * it kept; the job's fallback strategy decides, and the job is placed
 * again in the same pass (place.c).  A deadline job on on-demand is
 * reviewed and moved back to spot when its slack allows.  Calls place.c
 * and launch.c, never follow.c or loop.c (sched_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/sched/blocklist.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched_int.h"
#include "providers/provider.h"

/* A notice without a deadline (none known): assume the shortest any cloud
 * gives (Azure's Preempt event: at least 30 s). */
#define NOTICE_DEFAULT_LEAD_MS 30000

void sched__spot_init(struct tw_sched *s, const struct tw_sched_opts *o) {
  s->blocklist = tw_blocklist_new(o->blocklist);
  if (o->fallback)
    s->fallback = *o->fallback;
  else
    tw_fallback_cfg_default(&s->fallback);
  s->review_ms = o->review_ms > 0 ? o->review_ms : 60000;
  /* the deadline strategy is asked again at the next pass at the latest,
   * and an interruption without notice is seen at the next describe */
  if (s->fallback.step_s <= 0)
    s->fallback.step_s =
        (s->tick_ms > SCHED_SPOT_POLL_MAX_MS ? s->tick_ms
                                             : SCHED_SPOT_POLL_MAX_MS) /
        1000;
  s->offer_block_ms = o->blocklist && o->blocklist->offer_ms > 0
                          ? o->blocklist->offer_ms
                          : 10 * 60 * 1000;
}

void sched__spot_release(struct tw_sched *s) {
  tw_blocklist_free(s->blocklist);
  s->blocklist = NULL;
}

/* ---- interruptions and recovery -------------------------------------------
 */

/* Places a recovering job at once; when that fails it waits in the queue
 * with the reason (unless its launch went unanswered: then it stays
 * recovering with its attempt launching). */
int sched__spot_recover(struct tw_sched *s, const char *job_id, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, job_id, &job, &err))
    return 0;
  int changes = 0;
  if (job.state == TW_JOB_RECOVERING)
    changes += sched__place_job(s, &job, now);
  tw_job_rec_release(&job);
  if (tw_store_job_get(s->store, job_id, &job, &err))
    return changes;
  /* a launch left unanswered keeps its attempt launching, and the job
   * recovering until follow.c settles it: it must not be queued for a
   * second attempt meanwhile */
  struct tw_attempt_rec *mine = NULL;
  size_t n_mine = 0;
  bool live = false;
  if (job.state == TW_JOB_RECOVERING &&
      tw_store_attempts_of(s->store, job_id, &mine, &n_mine, &err) == TW_OK)
    for (size_t i = 0; i < n_mine && !live; i++)
      live = mine[i].state != TW_ATTEMPT_ENDED;
  free(mine);
  if (job.state == TW_JOB_RECOVERING && !live) {
    char why[600];
    snprintf(why, sizeof why, "waiting for placement after an interruption: %s",
             job.reason);
    struct tw_job_transition t = {
        .id = job_id, .to = TW_JOB_PENDING, .reason = why};
    if (tw_store_job_transition(s->store, &t, NULL, &err) == TW_OK)
      changes++;
  }
  tw_job_rec_release(&job);
  return changes;
}

/* interrupted -> recovering with the strategy's decision, then placed. */
int sched__spot_to_recovering(struct tw_sched *s, const char *job_id,
                              int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, job_id, &job, &err))
    return 0;
  int changes = 0;
  char reason[300] = "placing again";
  const struct tw_job_spec *spec = sched__spec(s, &job);
  if (spec) {
    struct tw_attempt_rec *past = NULL;
    size_t n_past = 0;
    tw_store_attempts_of(s->store, job_id, &past, &n_past, &err);
    struct tw_fallback_job j;
    char region[TW_MODEL_NAME_MAX], zone[TW_MODEL_NAME_MAX];
    sched__fallback_view(s, &job, spec, past, n_past, now, &j, region, zone);
    bool interrupted =
        n_past && !strcmp(past[n_past - 1].end_reason, "interrupted");
    j.event = interrupted ? TW_FB_INTERRUPTED : TW_FB_PLACE;
    struct tw_fallback_decision d;
    tw_fallback_decide(&s->fallback, sched__fallback_kind(s, spec), &j, &d);
    if (interrupted)
      sched__fallback_record(s, job_id, j.event, &d, now);
    snprintf(reason, sizeof reason, "%s", d.reason);
    free(past);
    sched__spec_release(s, spec);
  }
  tw_job_rec_release(&job);
  struct tw_job_transition t = {
      .id = job_id, .to = TW_JOB_RECOVERING, .reason = reason};
  if (tw_store_job_transition(s->store, &t, NULL, &err))
    return 0;
  changes++;
  return changes + sched__spot_recover(s, job_id, now);
}

int sched__spot_end(struct tw_sched *s, const struct tw_attempt_rec *a,
                    struct sched_att *st, const char *end_reason,
                    const char *why, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  const struct tw_job_spec *spec = sched__spec(s, &job);
  bool have_spec = spec != NULL;
  tw_job_rec_release(&job);

  /* 1. what it kept, stored before the attempt ends: a restart in between
   * computes the same figures again and the first ones stay */
  int64_t end = now;
  if (st && st->notice_deadline_ms && st->notice_deadline_ms < now)
    end = st->notice_deadline_ms;
  int64_t run_s =
      a->running_ms && end > a->running_ms ? (end - a->running_ms) / 1000 : 0;
  struct tw_ckpt_request req;
  char cause[16];
  bool asked = false;
  tw_checkpoint_request_get(s->store, a->id, &asked, &req, cause, &err);
  /* a move is timed right after a periodic checkpoint: that is what the
   * job keeps, not a save on request */
  if (asked && !strcmp(cause, "move"))
    asked = false;
  int64_t resume =
      st && st->resume_s >= 0 ? st->resume_s : sched__resume_s(s, a->job_id);
  struct tw_ckpt_calc c = {
      .enabled =
          have_spec && (spec->checkpoint_uri || spec->checkpoint_interval_s),
      .interval_s = have_spec ? spec->checkpoint_interval_s : 0,
      .work_s = have_spec ? sched__work_s(spec) : resume + run_s,
      .resume_s = resume,
      .run_s = run_s,
      .request_run_s = asked && a->running_ms
                           ? (req.requested_ms - a->running_ms) / 1000
                           : -1,
      .grace_s = asked ? (end - req.requested_ms) / 1000 : 0};
  const char *how = NULL;
  int64_t kept = tw_checkpoint_kept(&c, &how);
  if (st && st->agent_saved && st->agent_kept_s > kept) {
    /* its agent saw the job save: what happened, not what the contract
     * lets the broker assume */
    kept = st->agent_kept_s < c.work_s ? st->agent_kept_s : c.work_s;
    how = "saved, as its agent reported";
  }
  struct tw_ckpt_outcome out = {.attempt_id = a->id,
                                .job_id = a->job_id,
                                .attempt_n = a->n,
                                .resume_s = resume,
                                .run_s = run_s,
                                .kept_s = kept,
                                .how = how,
                                .at_ms = now};
  if (tw_checkpoint_record(s->store, &out, &err))
    tw_log_warn("spot", "job=%s attempt=%d progress not recorded: %s",
                a->job_id, a->n, err.msg);

  /* 2. avoid where it was taken away */
  if (!strcmp(end_reason, "interrupted") && (!st || !st->blocked)) {
    struct tw_offer o = sched__offer_of(s, a);
    tw_blocklist_report(s->blocklist, &o, TW_BLOCK_INTERRUPTION, now, NULL);
  }

  /* 3. end the attempt; the job is interrupted */
  char k_txt[24], w_txt[24], reason[700];
  tw_fallback_fmt_dur(kept, k_txt, sizeof k_txt);
  tw_fallback_fmt_dur(c.work_s, w_txt, sizeof w_txt);
  snprintf(reason, sizeof reason, "%s; progress kept: %s of %s (%s)", why,
           k_txt, w_txt, how);
  struct tw_attempt_close cl = {.attempt_id = a->id,
                                .end_reason = end_reason,
                                .job_to = TW_JOB_INTERRUPTED,
                                .job_reason = reason,
                                .ran_from_ms = st ? st->ran_from_ms : 0,
                                .ended_at_ms = st ? st->ended_at_ms : 0};
  size_t nodes = have_spec && spec->nodes > 0 ? (size_t)spec->nodes : 1;
  sched__spec_release(s, spec);
  if (tw_store_attempt_close(s->store, &cl, &err)) {
    tw_log_warn("sched", "job=%s attempt=%d close failed: %s", a->job_id, a->n,
                err.msg);
    return 0;
  }
  sched__capacity_return(s, a, nodes);
  tw_log_info("sched", "job=%s attempt=%d offer=%s %s: %s", a->job_id, a->n,
              a->offer_id, end_reason, reason);
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 1;
  bool interrupted = job.state == TW_JOB_INTERRUPTED;
  tw_job_rec_release(&job);
  /* 4. the strategy decides, and the job is placed again in this pass */
  return 1 + (interrupted ? sched__spot_to_recovering(s, a->job_id, now) : 0);
}

/* ---- reviews ---------------------------------------------------------------
 */

int sched__spot_review(struct tw_sched *s, const struct tw_job_rec *job,
                       const struct tw_job_spec *spec,
                       const struct tw_attempt_rec *a, struct sched_nodes nd,
                       struct sched_att *st, int64_t now) {
  if (now < st->review_at_ms || strcmp(a->market, "on-demand") ||
      sched__fallback_kind(s, spec) != TW_FALLBACK_DEADLINE)
    return 0;
  st->review_at_ms = now + s->review_ms;
  /* A move loses what the job did since its last checkpoint: only jobs
   * with periodic checkpoints move, right after one. */
  int64_t run_s = (now - a->running_ms) / 1000;
  int64_t interval = spec->checkpoint_interval_s;
  if (interval <= 0 || run_s < interval ||
      run_s % interval > s->review_ms / 1000)
    return 0;
  struct tw_attempt_rec *past = NULL;
  size_t n_past = 0;
  struct tw_err err = {0};
  tw_store_attempts_of(s->store, job->id, &past, &n_past, &err);
  struct tw_fallback_job j;
  char region[TW_MODEL_NAME_MAX], zone[TW_MODEL_NAME_MAX];
  sched__fallback_view(s, job, spec, past, n_past, now, &j, region, zone);
  free(past);
  j.event = TW_FB_REVIEW;
  j.done_s += run_s;
  j.current_market = TW_MARKET_ON_DEMAND;
  /* is a spot offer placeable for it now? */
  struct tw_job_spec spot = *spec;
  spot.market = TW_MARKET_SPOT;
  const char **excl = NULL;
  size_t n_excl = 0;
  sched__blocked_offers(s, now, &excl, &n_excl);
  j.spot_offered = sched__placeable(s, job, &spot, excl, n_excl, now);
  free(excl);
  struct tw_fallback_decision d;
  tw_fallback_decide(&s->fallback, TW_FALLBACK_DEADLINE, &j, &d);
  if (d.action != TW_FB_ACT_MOVE)
    return 0;
  sched__fallback_record(s, job->id, TW_FB_REVIEW, &d, now);
  struct tw_ckpt_request req = {.attempt_id = a->id,
                                .job_id = a->job_id,
                                .cause = "move",
                                .requested_ms = now,
                                .deadline_ms = now};
  tw_checkpoint_request(s->store, &req, &err);
  struct pcache *pc = sched__provider(s, a->provider);
  if (!pc || sched__terminate_all(s, pc, a, nd, &err))
    return 0; /* try again at the next review */
  char why[420];
  snprintf(why, sizeof why, "moved off on-demand instance %s: %s",
           a->instance_id, d.reason);
  return sched__spot_end(s, a, st, "moved", why, now);
}

/* ---- notices ---------------------------------------------------------------
 */

bool sched__spot_notice(struct tw_sched *s, const struct tw_attempt_rec *a,
                        struct sched_att *st, const struct tw_event *ev,
                        int64_t now) {
  struct tw_err err = {0};
  char at[40] = "", note[640];
  if (ev->kind != TW_EVENT_INTERRUPTION) {
    snprintf(note, sizeof note, "rebalance recommendation for %s",
             ev->instance_id);
    tw_store_job_note(s->store, a->job_id, note, &err);
    return false;
  }
  /* a notice stays in force until its instance goes: act on it once,
   * also when it comes from two sources (the provider's API and the
   * instance's agent, docs/agent.md), which see the same deadline */
  if (st->notice_deadline_ms &&
      (st->notice_noticed_ms == ev->noticed_ms ||
       (ev->deadline_ms && ev->deadline_ms == st->notice_deadline_ms)))
    return false;
  st->notice_noticed_ms = ev->noticed_ms;
  {
    char lab[96];
    snprintf(lab, sizeof lab, "provider=\"%s\"", a->provider);
    sched__obs_count(s, "tradewind_interruptions_total", lab);
    sched__obs_event(s, a->job_id, "spot.notice", "tradewind.instance",
                     ev->instance_id, "tradewind.provider", a->provider);
  }
  st->notice_deadline_ms =
      ev->deadline_ms ? ev->deadline_ms : now + NOTICE_DEFAULT_LEAD_MS;
  tw_time_fmt_rfc3339(st->notice_deadline_ms, at, sizeof at);

  /* the job is told through its provider (checkpoint.h); the request is
   * what the progress it kept is computed from */
  struct tw_ckpt_request req = {.attempt_id = a->id,
                                .job_id = a->job_id,
                                .cause = "notice",
                                .requested_ms = now,
                                .deadline_ms = st->notice_deadline_ms};
  tw_checkpoint_request(s->store, &req, &err);
  /* the replacement must not land where this one is being taken from */
  struct tw_offer o = sched__offer_of(s, a);
  tw_blocklist_report(s->blocklist, &o, TW_BLOCK_INTERRUPTION, now, NULL);
  st->blocked = true;

  struct tw_job_rec job;
  const char *ckpt = "no checkpoint: the job will start over";
  if (tw_store_job_get(s->store, a->job_id, &job, &err) == TW_OK) {
    const struct tw_job_spec *spec = sched__spec(s, &job);
    if (spec && (spec->checkpoint_uri || spec->checkpoint_interval_s))
      ckpt = "checkpoint requested";
    sched__spec_release(s, spec);
    tw_job_rec_release(&job);
  }
  snprintf(note, sizeof note, "interruption notice for %s: %s at %s; %s",
           ev->instance_id, ev->action[0] ? ev->action : "terminate", at, ckpt);
  tw_store_job_note(s->store, a->job_id, note, &err);
  tw_log_info("spot", "job=%s attempt=%d instance=%s notice deadline=%s",
              a->job_id, a->n, ev->instance_id, at);
  return true;
}
