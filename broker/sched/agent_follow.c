/* agent_follow.c - what an attempt run by tradewind-agent comes to, from
 * what its agent reported (docs/agent.md): called by follow.c for each
 * live attempt of an agent-enabled provider, on the scheduler's thread, so
 * reports (stored by the REST handlers, broker/sched/agent.h) are applied
 * in one place and never race follow.c:
 *
 *   - the job cancelled: the agent is told so at its next heartbeat
 *     (agent.c); its exit report ends the attempt as cancelled and the
 *     instance is terminated after; without an exit within grace_s +
 *     heartbeat_timeout_s the instance is terminated anyway (follow.c);
 *   - the agent's notices: each goes through sched__spot_notice(), as a
 *     provider's would;
 *   - the exit report: code 0 succeeded, else failed with the code (a
 *     signal N as 128 + N), the end recorded before the terminate; after
 *     a notice (the agent's, or a provider's the broker acted on), the
 *     instance is terminated first (follow.c's end_after_terminate), then
 *     the attempt is interrupted and the job recovers (spot.c);
 *   - registered: the attempt is running; a deadline job's attempt on
 *     on-demand is reviewed for its move back to spot (spot.c);
 *   - silent for heartbeat_timeout_s (twice that before it first
 *     registered: the boot and the fetch; the time the broker heard it
 *     last, tw_agent_last_seen_ms): the instance is described by a call
 *     on the account's workers (follow.c), and its answer decides
 *     (sched__agent_lost_applied): gone is an interruption, alive is
 *     terminated (follow.c's end_after_terminate) and placed again.
 *
 * No provider is called here: a hung cloud never holds the pass.  A
 * cancel's attempt without an exit report in time is given back as any
 * cancelled job's (follow.c's give_back).
 *
 * An attempt whose notice ran out is left to follow.c's own rule.  Calls
 * spot.c and launch.c only (sched_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/core/store_agent.h"
#include "broker/sched/agent.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched_int.h"

/* Whether the broker passed a notice on to attempt a as a checkpoint
 * request (stored: it holds across a restart, when the notice's deadline
 * kept in memory is gone). */
static bool asked_at_notice(struct tw_sched *s,
                            const struct tw_attempt_rec *a) {
  struct tw_ckpt_request req;
  bool asked = false;
  char cause[16] = "";
  struct tw_err err = {0};
  return tw_checkpoint_request_get(s->store, a->id, &asked, &req, cause,
                                   &err) == TW_OK &&
         asked && !strcmp(cause, "notice");
}

/* The end the exit report gives attempt a; returns state changes. */
static int apply_exit(struct tw_sched *s, const struct tw_job_rec *job,
                      const struct tw_attempt_rec *a, struct sched_nodes nd,
                      struct sched_att *st, const struct tw_store_agent *g,
                      int64_t now, struct sched_agent_step *out) {
  struct tw_err err = {0};
  char why[160];
  int code = g->has_code ? g->exit_code : 128 + g->signal;
  if (g->has_code)
    snprintf(why, sizeof why, "exited with code %d", g->exit_code);
  else
    snprintf(why, sizeof why, "killed by signal %d", g->signal);
  int changes = 0;
  /* metered from the provider's times where a look gave them, else from
   * the agent's: its registration, and the job's exit it reports */
  int64_t ran_from = 0, ended_at = 0;
  sched__agent_times(st, g->registered_ms ? g->registered_ms : g->started_ms,
                     g->ended_ms, &ran_from, &ended_at);
  if (a->state == TW_ATTEMPT_PROVISIONING &&
      tw_store_attempt_running_at(s->store, a->id, ran_from, &err) == TW_OK)
    changes++;
  /* After a notice, the agent's or one the broker had from the provider
   * (and passed on as a checkpoint request), the job's exit is its answer
   * to the notice, not its completion: the work goes on in the next
   * attempt, from what it saved. */
  bool after_notice = g->after_notice || (st && st->notice_deadline_ms) ||
                      asked_at_notice(s, a);
  if (after_notice && !tw_job_state_terminal(job->state)) {
    /* the instance is terminated first and the interruption recorded
     * once that is confirmed (follow.c), so the job's next instance
     * never runs beside this one, whose notice may still have time */
    snprintf(out->end_why, sizeof out->end_why,
             "instance %s interrupted: the job %s after its notice",
             a->instance_id, why);
    out->end_after_terminate = true;
    if (st && !st->ended_at_ms)
      st->ended_at_ms = ended_at; /* the attempt ends here: spot.c's */
    return changes;
  } else {
    bool cancelled = tw_job_state_terminal(job->state);
    struct tw_attempt_close c = {.attempt_id = a->id,
                                 .end_reason =
                                     cancelled ? "cancelled" : "completed",
                                 .job_to = cancelled   ? TW_JOB_NSTATES
                                           : code == 0 ? TW_JOB_SUCCEEDED
                                                       : TW_JOB_FAILED,
                                 .job_reason = why,
                                 .has_exit = !cancelled,
                                 .exit_code = code,
                                 .ran_from_ms = ran_from,
                                 .ended_at_ms = ended_at};
    if (tw_store_attempt_close(s->store, &c, &err)) {
      tw_log_warn("agent", "job=%s attempt=%d end not recorded: %s", a->job_id,
                  a->n, err.msg);
      return changes; /* not recorded: nothing terminated, next pass */
    }
    changes++;
    /* its nodes are free for the next pass, not once offers are listed
     * again */
    sched__capacity_return(s, a, sched__job_nodes(s, job, nd.n));
    tw_log_info("agent", "job=%s attempt=%d %s", a->job_id, a->n, why);
    tw_agent_forget_secrets(s->agent, a->job_id); /* the job ended */
  }
  tw_spec_cache_forget(s->specs, job->id);
  /* terminated by the account's workers (follow.c's owed terminates),
   * so a hung cloud never holds the pass */
  out->owe_terminate = true;
  return changes;
}

/* The agent's notices not yet acted on, through the providers' path. */
static void apply_notices(struct tw_sched *s, const struct tw_attempt_rec *a,
                          struct sched_att *st, int64_t now) {
  struct tw_store_agent_notice *ns = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_store_agent_notices_new(s->store, a->id, &ns, &n, &err))
    return;
  for (size_t i = 0; i < n; i++) {
    struct tw_event ev = {.kind = !strcmp(ns[i].kind, "interruption")
                                      ? TW_EVENT_INTERRUPTION
                                      : TW_EVENT_REBALANCE,
                          .noticed_ms = ns[i].at_ms,
                          .deadline_ms = ns[i].deadline_ms};
    snprintf(ev.instance_id, sizeof ev.instance_id, "%s", a->instance_id);
    snprintf(ev.action, sizeof ev.action, "%.15s",
             ns[i].action[0] ? ns[i].action : "terminate");
    sched__spot_notice(s, a, st, &ev, now);
    /* the agent signalled the job itself: no checkpoint to hand over */
    if (ev.kind == TW_EVENT_INTERRUPTION)
      tw_store_agent_ckpt_sent(s->store, a->id, now, NULL, &err);
    tw_store_agent_notice_applied(s->store, a->id, ns[i].event_id, &err);
  }
  free(ns);
}

static void heartbeat_lost_count(struct tw_sched *s,
                                 const struct tw_attempt_rec *a) {
  char lab[96];
  snprintf(lab, sizeof lab, "provider=\"%s\"", a->provider);
  sched__obs_count(s, "tradewind_agent_heartbeats_lost_total", lab);
}

/* How long attempt g's agent has been silent (ms) and how long it may be:
 * heartbeat_timeout_s from its last report, twice that before it first
 * registered (the boot and the fetch). */
static int64_t silence_ms(struct tw_sched *s, const struct tw_store_agent *g,
                          int64_t now, int64_t *allow_ms) {
  int64_t timeout_ms = tw_agent_heartbeat_timeout_s(s->agent) * 1000;
  int64_t last = tw_agent_last_seen_ms(s->agent, g->attempt_id,
                                       g->last_hb_ms > g->registered_ms
                                           ? g->last_hb_ms
                                           : g->registered_ms);
  *allow_ms = timeout_ms;
  if (!last) {
    last = g->created_ms; /* booting: the bootstrap fetches and starts it */
    *allow_ms = 2 * timeout_ms;
  }
  return now - last;
}

int sched__agent_lost_applied(struct tw_sched *s, const struct tw_attempt_rec *a,
                              struct sched_nodes nd, struct sched_att *st,
                              enum tw_rc rc, const struct tw_instance *inst,
                              int64_t now, struct sched_agent_step *out) {
  memset(out, 0, sizeof *out);
  struct tw_store_agent g;
  bool found = false;
  struct tw_err err = {0};
  if (tw_store_agent_get(s->store, a->id, &found, &g, &err) || !found ||
      g.exit_ms)
    return 0; /* its exit came meanwhile: the next pass applies it */
  int64_t allow = 0, silent = silence_ms(s, &g, now, &allow);
  if (silent <= allow)
    return 0; /* heard from meanwhile */
  if (rc == TW_E_NOTFOUND || (rc == TW_OK && tw_instance_state_gone(inst->state))) {
    heartbeat_lost_count(s, a);
    char why[400];
    snprintf(why, sizeof why,
             "instance %s interrupted: no heartbeat for %llds and the "
             "instance is %s",
             a->instance_id, (long long)(silent / 1000),
             rc ? "unknown to the provider" : inst->provider_state);
    if (nd.n) { /* a gang's other nodes go first */
      snprintf(out->end_why, sizeof out->end_why, "%s", why);
      out->end_after_terminate = true;
      return 0;
    }
    return sched__spot_end(s, a, st, "interrupted", why, now);
  }
  if (rc)
    return 0; /* no answer: asked again at the next look */
  heartbeat_lost_count(s, a);
  snprintf(out->end_why, sizeof out->end_why,
           "instance %s terminated: its agent sent no heartbeat for %llds "
           "while the instance is %s; placing again",
           a->instance_id, (long long)(silent / 1000), inst->provider_state);
  out->end_after_terminate = true; /* ended once the terminate confirms */
  return 0;
}

void sched__agent_follow(struct tw_sched *s, struct pcache *pc,
                         const struct tw_job_rec *job,
                         const struct tw_attempt_rec *a, struct sched_nodes nd,
                         struct sched_att *st, int64_t now,
                         struct sched_agent_step *out) {
  memset(out, 0, sizeof *out);
  /* attempts of providers without `agent: true` have an agent too when
   * their script outgrew the user data (launch.c): its row says so */
  if (!s->agent || a->state == TW_ATTEMPT_LAUNCHING || st->agent_absent ||
      (!tw_provider_agent(pc->p) && !tw_provider_info(pc->p)->user_data_max))
    return;
  struct tw_store_agent g;
  bool found = false;
  struct tw_err err = {0};
  if (tw_store_agent_get(s->store, a->id, &found, &g, &err))
    return;
  if (!found) {
    /* its row is made with its launch's user data: launched without one,
     * it never has one */
    st->agent_absent = true;
    return;
  }
  bool cancelled = tw_job_state_terminal(job->state);
  if (cancelled && !g.registered_ms && !g.exit_ms)
    return; /* nobody to tell: follow.c gives the instance back at once */
  out->handled = true;
  st->agent_saved = g.checkpoint_ms > 0;
  st->agent_kept_s = g.progress_s;
  if (g.exit_ms) {
    out->changes += apply_exit(s, job, a, nd, st, &g, now, out);
    return;
  }
  int64_t grace_ms = tw_agent_grace_s(s->agent) * 1000;
  int64_t timeout_ms = tw_agent_heartbeat_timeout_s(s->agent) * 1000;
  if (cancelled) {
    /* told at its heartbeat; ends on its exit report, or on this */
    if (!g.cancel_ms) {
      tw_store_agent_cancel(s->store, a->id, now, &err);
      g.cancel_ms = now;
    }
    if (now < g.cancel_ms + grace_ms + timeout_ms)
      return;
    /* given back as any cancelled job's instances are (follow.c's
     * give_back: a terminate call on the account's workers, the attempt
     * closed as cancelled once it confirms), so a hung cloud never holds
     * the pass */
    tw_log_info("agent",
                "job=%s attempt=%d no exit report %llds after the cancel; "
                "terminating the instance",
                a->job_id, a->n, (long long)((now - g.cancel_ms) / 1000));
    out->handled = false;
    return;
  }
  apply_notices(s, a, st, now);
  if (st->notice_deadline_ms && now >= st->notice_deadline_ms) {
    out->handled = false; /* the notice ran out: follow.c's rule */
    return;
  }
  int64_t ran_from = 0, ended_unused = 0;
  sched__agent_times(st, g.registered_ms, 0, &ran_from, &ended_unused);
  if (g.registered_ms && a->state == TW_ATTEMPT_PROVISIONING &&
      tw_store_attempt_running_at(s->store, a->id, ran_from, &err) == TW_OK) {
    out->changes++;
    return;
  }
  int64_t allow = 0;
  if (silence_ms(s, &g, now, &allow) > allow) {
    /* described by a call on the account's workers (follow.c); its
     * answer decides (sched__agent_lost_applied) */
    out->heartbeat_lost = true;
    return;
  }
  if (a->state == TW_ATTEMPT_RUNNING && !st->notice_deadline_ms &&
      !strcmp(a->market, "on-demand")) {
    /* a deadline job on on-demand goes back to spot when its slack
     * allows, as one followed by describes does (spot.c) */
    const struct tw_job_spec *spec = sched__spec(s, job);
    int moved = spec ? sched__spot_review(s, job, spec, a, nd, st, now) : 0;
    sched__spec_release(s, spec);
    if (moved) {
      out->changes += moved;
      return;
    }
  }
  if (a->state == TW_ATTEMPT_RUNNING && !st->notice_deadline_ms) {
    /* nothing to decide: quiet until news or the next look */
    int64_t look_ms = timeout_ms / 4 < SCHED_AGENT_LOOK_MS
                          ? timeout_ms / 4
                          : SCHED_AGENT_LOOK_MS;
    st->agent_news_seen = s->agent_news;
    st->agent_look_ms = now + look_ms;
  }
}

bool sched__agent_quiet(const struct tw_sched *s, struct pcache *pc,
                        const struct tw_job_rec *job,
                        const struct tw_attempt_rec *a,
                        const struct sched_att *st, int64_t now) {
  return s->agent && tw_provider_agent(pc->p) &&
         a->state == TW_ATTEMPT_RUNNING && !tw_job_state_terminal(job->state) &&
         !st->notice_deadline_ms && st->agent_news_seen == s->agent_news &&
         now < st->agent_look_ms;
}
