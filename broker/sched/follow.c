/* follow.c - every live attempt followed to its end, each pass:
 *
 *   1. the providers' notices, matched to the attempts they concern
 *      (spot.c acts on them);
 *   2. each live attempt: a launch whose answer was lost is sent again
 *      (same client token), a started instance marks it running, a
 *      finished one (batch providers) or one that ran its expected
 *      duration completes it, a vanished instance (or one whose notice ran
 *      out) is an interruption (spot.c), the instances of a job cancelled
 *      meanwhile are given back;
 *   3. jobs a restart left half way (placing, interrupted, recovering
 *      without a live attempt) are picked up again.
 *
 * Polling is adaptive: an attempt whose instance is starting, has a notice
 * out or changed at the last look is described every pass; a quiet one
 * less and less often, up to SCHED_SPOT_POLL_MAX_MS (spot) or
 * OD_POLL_MAX_MS (on-demand, which nobody takes away).  Notices are polled
 * every pass: they are what gives the job time to checkpoint.  Calls
 * spot.c and launch.c (sched_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/sched/sched_int.h"
#include "providers/provider.h"

/* Run time assumed on a cloud for a job that gives no duration. */
#define DEFAULT_RUN_S 60
/* Quiet on-demand attempts are described at least this often. */
#define OD_POLL_MAX_MS 120000

/* What follow.c remembers of the live attempts (struct sched_att). */
struct sched_follow {
  struct sched_att *a;
  size_t n, cap;
};

void sched__follow_release(struct tw_sched *s) {
  if (s->follow)
    free(s->follow->a);
  free(s->follow);
  s->follow = NULL;
}

static struct sched_att *att_get(struct tw_sched *s,
                                 const struct tw_attempt_rec *a, int64_t now) {
  if (!s->follow)
    s->follow = tw_calloc(1, sizeof *s->follow);
  struct sched_follow *m = s->follow;
  for (size_t i = 0; i < m->n; i++)
    if (m->a[i].attempt_id == a->id) {
      m->a[i].seen = true;
      return &m->a[i];
    }
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 32;
    m->a = tw_realloc(m->a, m->cap * sizeof *m->a);
  }
  struct sched_att *st = &m->a[m->n++];
  memset(st, 0, sizeof *st);
  st->attempt_id = a->id;
  st->next_poll_ms = now;
  st->interval_ms = s->tick_ms;
  st->resume_s = -1;
  st->seen = true;
  return st;
}

/* Forgets attempts that are no longer live. */
static void att_prune(struct tw_sched *s) {
  struct sched_follow *m = s->follow;
  if (!m)
    return;
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->a[i].seen) {
      m->a[i].seen = false;
      m->a[k++] = m->a[i];
    }
  m->n = k;
}

/* Describe at once next pass (something moved). */
static void poll_soon(struct tw_sched *s, struct sched_att *st, int64_t now) {
  st->interval_ms = s->tick_ms;
  st->next_poll_ms = now;
}

/* Nothing changed: look again later, twice as late as last time. */
static void poll_later(struct tw_sched *s, struct sched_att *st,
                       const struct tw_attempt_rec *a, int64_t now) {
  int64_t max =
      !strcmp(a->market, "spot") ? SCHED_SPOT_POLL_MAX_MS : OD_POLL_MAX_MS;
  if (max < s->tick_ms)
    max = s->tick_ms;
  st->interval_ms = st->interval_ms * 2 > max ? max : st->interval_ms * 2;
  if (st->notice_deadline_ms)
    st->interval_ms = s->tick_ms;
  st->next_poll_ms = now + st->interval_ms;
}

static struct sched_nodes nodes_of(const struct tw_attempt_instance *all,
                                   size_t n_all, int64_t attempt_id) {
  struct sched_nodes r = {0};
  for (size_t i = 0; i < n_all; i++)
    if (all[i].attempt_id == attempt_id) {
      if (!r.g)
        r.g = &all[i];
      r.n++;
    }
  return r;
}

/* Describes attempt a's instances as one: the first node gone (or
 * unknown: TW_E_NOTFOUND) decides, else one still starting, else all run.
 * *which names the instance that decided. */
static enum tw_rc describe_all(struct pcache *pc,
                               const struct tw_attempt_rec *a,
                               struct sched_nodes nd, struct tw_instance *out,
                               char which[128], struct tw_err *err) {
  snprintf(which, 128, "%s", a->instance_id);
  if (!nd.n)
    return tw_provider_describe(pc->p, a->instance_id, out, err);
  bool starting = false;
  for (size_t i = 0; i < nd.n; i++) {
    struct tw_instance in;
    enum tw_rc rc = tw_provider_describe(pc->p, nd.g[i].instance_id, &in, err);
    if (rc == TW_E_NOTFOUND) {
      snprintf(which, 128, "%s", nd.g[i].instance_id);
      return rc;
    }
    if (rc)
      return rc;
    if (in.state == TW_INST_TERMINATED || in.state == TW_INST_SHUTTING_DOWN ||
        in.state == TW_INST_STOPPED || in.state == TW_INST_STOPPING) {
      snprintf(which, 128, "%s", nd.g[i].instance_id);
      *out = in;
      return TW_OK;
    }
    if (!starting && (i == 0 || in.state != TW_INST_RUNNING)) {
      *out = in;
      starting = in.state != TW_INST_RUNNING;
    }
  }
  return TW_OK;
}

/* 2. one live attempt */
static int follow_attempt(struct tw_sched *s, const struct tw_attempt_rec *a,
                          struct sched_nodes nd, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  int changes = 0;
  struct sched_att *st = att_get(s, a, now);
  struct pcache *pc = sched__provider(s, a->provider);
  if (!pc) {
    tw_log_warn("sched",
                "job=%s attempt=%d provider=%s is no longer configured",
                a->job_id, a->n, a->provider);
    goto out;
  }
  if (tw_job_state_terminal(job.state)) {
    /* cancelled while the attempt lived: give the instances back */
    if (sched__terminate_all(s, pc, a, nd, &err))
      goto out; /* try again next pass */
    struct tw_attempt_close c = {.attempt_id = a->id,
                                 .end_reason = "cancelled",
                                 .job_to = TW_JOB_NSTATES};
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
      changes++;
    tw_spec_cache_forget(s->specs, job.id); /* it ended: no more passes */
    goto out;
  }
  if (a->state == TW_ATTEMPT_LAUNCHING) {
    /* The launch was sent but its answer never stored (the daemon stopped
     * in between).  Send it again with the same client token: the provider
     * answers with the instance it already made, if it made one. */
    const struct tw_offer *o = sched__offer(s, a->offer_id);
    if (!o)
      goto out;
    const struct tw_job_spec *spec = sched__spec(s, &job);
    if (!spec)
      goto out;
    /* the plan behind the first launch is not kept: the placement stored
     * is the one the provider answered */
    if (sched__launch(s, &job, spec, a, o, 0, "resumed after a restart",
                      NULL) == TW_OK)
      changes++;
    else if (job.state == TW_JOB_PLACING) {
      struct tw_job_transition t = {
          .id = job.id,
          .to = TW_JOB_PENDING,
          .reason = "launch failed; waiting to place again"};
      tw_store_job_transition(s->store, &t, NULL, &err);
    }
    sched__spec_release(s, spec);
    goto out;
  }
  bool notice_due = st->notice_deadline_ms && now >= st->notice_deadline_ms;
  if (now < st->next_poll_ms && !notice_due)
    goto out;
  struct tw_instance inst;
  char which[128];
  enum tw_rc rc = describe_all(pc, a, nd, &inst, which, &err);
  if (rc == TW_E_NOTFOUND) {
    char why[320] = "the provider no longer knows its instance";
    if (nd.n) { /* a gang runs whole or not at all: the others go too */
      snprintf(why, sizeof why,
               "the provider no longer knows instance %s of its gang of %zu",
               which, nd.n);
      sched__terminate_all(s, pc, a, nd, &err);
    }
    changes += sched__spot_end(s, a, st, "interrupted", why, now);
    goto out;
  }
  if (rc) {
    poll_later(s, st, a, now); /* throttled or down: look again later */
    goto out;
  }
  if (inst.finished) {
    /* a batch provider ran the script to its end */
    char why[96];
    snprintf(why, sizeof why, "exited with code %d", inst.exit_code);
    struct tw_attempt_close c = {
        .attempt_id = a->id,
        .end_reason = "completed",
        .job_to = inst.exit_code == 0 ? TW_JOB_SUCCEEDED : TW_JOB_FAILED,
        .job_reason = why,
        .has_exit = true,
        .exit_code = inst.exit_code};
    /* a job that finished before we saw it running still passes through
     * running, so its history is complete */
    if (a->state == TW_ATTEMPT_PROVISIONING)
      tw_store_attempt_running(s->store, a->id, &err);
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK) {
      changes++;
      tw_spec_cache_forget(s->specs, job.id);
    }
    goto out;
  }
  if (inst.state == TW_INST_TERMINATED || inst.state == TW_INST_SHUTTING_DOWN ||
      inst.state == TW_INST_STOPPED || inst.state == TW_INST_STOPPING ||
      notice_due) {
    char why[520];
    if (notice_due && !tw_instance_state_gone(inst.state)) {
      /* the notice ran out: the provider takes it now whatever it still
       * says, so the job moves on without waiting for that */
      sched__terminate_all(s, pc, a, nd, &err);
      snprintf(why, sizeof why, "instance %s interrupted: its notice ran out",
               nd.n ? "of the gang" : a->instance_id);
    } else {
      snprintf(why, sizeof why, "instance %s interrupted: %s%s%s", which,
               inst.provider_state, inst.state_reason[0] ? ", " : "",
               inst.state_reason);
      if (nd.n) /* a gang runs whole or not at all: the others go too */
        sched__terminate_all(s, pc, a, nd, &err);
    }
    changes += sched__spot_end(s, a, st, "interrupted", why, now);
    goto out;
  }
  if (a->state == TW_ATTEMPT_PROVISIONING && inst.state == TW_INST_RUNNING) {
    /* a gang runs once all its nodes do (describe_all) */
    for (size_t i = 0; i < nd.n; i++)
      tw_store_attempt_instance_put(s->store, a->id, nd.g[i].k,
                                    nd.g[i].instance_id, "running", &err);
    if (tw_store_attempt_running(s->store, a->id, &err) == TW_OK)
      changes++;
    poll_soon(s, st, now);
    goto out;
  }
  if (a->state == TW_ATTEMPT_RUNNING &&
      tw_provider_supports(pc->p, TW_PROV_BATCH)) {
    /* the batch system runs the script and reports its end (finished,
     * above): nothing to decide from the clock */
    poll_later(s, st, a, now);
    goto out;
  }
  if (a->state == TW_ATTEMPT_RUNNING) {
    const struct tw_job_spec *spec = sched__spec(s, &job);
    if (!spec)
      goto out;
    if (st->resume_s < 0)
      st->resume_s = sched__resume_s(s, a->job_id);
    /* The broker does not learn when the script ends on a cloud (nothing
     * executes on the fake ones): the attempt is done once the work left
     * after what earlier attempts kept has run. */
    int64_t run_s = (spec->duration_s > 0 ? spec->duration_s : DEFAULT_RUN_S) -
                    st->resume_s;
    if (run_s < 1)
      run_s = 1;
    int64_t done_at = a->running_ms + run_s * 1000;
    if (now >= done_at) {
      sched__spec_release(s, spec);
      if (sched__terminate_all(s, pc, a, nd, &err))
        goto out;
      struct tw_attempt_close c = {
          .attempt_id = a->id,
          .end_reason = "completed",
          .job_to = TW_JOB_SUCCEEDED,
          .job_reason = "ran its expected duration; instance terminated",
          .has_exit = true,
          .exit_code = 0};
      if (tw_store_attempt_close(s->store, &c, &err) == TW_OK) {
        changes++;
        tw_spec_cache_forget(s->specs, job.id);
      }
      goto out;
    }
    int moved = sched__spot_review(s, &job, spec, a, nd, st, now);
    sched__spec_release(s, spec);
    if (moved) {
      changes += moved;
      goto out;
    }
    poll_later(s, st, a, now);
    if (st->next_poll_ms > done_at)
      st->next_poll_ms = done_at;
    goto out;
  }
  poll_later(s, st, a, now);
out:
  tw_job_rec_release(&job);
  return changes;
}

/* Whether event instance id is one of attempt a's (a gang's: any node). */
static bool notice_is_of(const struct tw_attempt_rec *a, struct sched_nodes nd,
                         const char *id) {
  if (a->instance_id[0] && !strcmp(a->instance_id, id))
    return true;
  for (size_t i = 0; i < nd.n; i++)
    if (!strcmp(nd.g[i].instance_id, id))
      return true;
  return false;
}

static void poll_notices(struct tw_sched *s, const struct tw_attempt_rec *live,
                         size_t n_live, const struct tw_attempt_instance *g,
                         size_t n_g, int64_t now) {
  for (size_t i = 0; i < s->n_pc; i++) {
    struct tw_event_list ev;
    struct tw_err err = {0};
    tw_event_list_init(&ev);
    if (tw_provider_poll_events(s->pc[i].p, &ev, &err) == TW_OK) {
      for (size_t e = 0; e < ev.n; e++)
        for (size_t k = 0; k < n_live; k++)
          if (notice_is_of(&live[k], nodes_of(g, n_g, live[k].id),
                           ev.items[e].instance_id) &&
              !strcmp(live[k].provider, tw_provider_account(s->pc[i].p))) {
            struct sched_att *st = att_get(s, &live[k], now);
            if (sched__spot_notice(s, &live[k], st, &ev.items[e], now))
              poll_soon(s, st, now);
          }
    }
    tw_event_list_release(&ev);
  }
}

/* 3. jobs a restart left half way: an attempt ended but the job's next
 * move was never written.  Nothing else would ever pick them up. */
static int sweep(struct tw_sched *s, const struct tw_attempt_rec *live,
                 size_t n_live, int64_t now) {
  static const enum tw_job_state STATES[] = {TW_JOB_PLACING, TW_JOB_INTERRUPTED,
                                             TW_JOB_RECOVERING};
  int changes = 0;
  for (size_t k = 0; k < sizeof STATES / sizeof STATES[0]; k++) {
    struct tw_job_rec *jobs = NULL;
    size_t n = 0;
    struct tw_err err = {0};
    if (tw_store_jobs_queued(s->store, STATES[k], s->max_place, &jobs, &n,
                             &err))
      continue;
    for (size_t i = 0; i < n; i++) {
      bool has_live = false;
      for (size_t l = 0; l < n_live && !has_live; l++)
        has_live = !strcmp(live[l].job_id, jobs[i].id);
      /* attempts opened during this pass are not in live: read again */
      struct tw_attempt_rec *mine = NULL;
      size_t n_mine = 0;
      if (!has_live && tw_store_attempts_of(s->store, jobs[i].id, &mine,
                                            &n_mine, &err) == TW_OK)
        for (size_t l = 0; l < n_mine && !has_live; l++)
          has_live = mine[l].state != TW_ATTEMPT_ENDED;
      free(mine);
      if (!has_live) {
        tw_log_info("spot", "job=%s found %s without a live attempt; resuming",
                    jobs[i].id, tw_job_state_str(jobs[i].state));
        if (jobs[i].state == TW_JOB_PLACING) {
          struct tw_job_transition t = {
              .id = jobs[i].id,
              .to = TW_JOB_PENDING,
              .reason = "placement was cut short; waiting to place again"};
          if (tw_store_job_transition(s->store, &t, NULL, &err) == TW_OK)
            changes++;
        } else if (jobs[i].state == TW_JOB_INTERRUPTED) {
          changes += sched__spot_to_recovering(s, jobs[i].id, now);
        } else {
          changes += sched__spot_recover(s, jobs[i].id, now);
        }
      }
      tw_job_rec_release(&jobs[i]);
    }
    free(jobs);
  }
  return changes;
}

int sched__follow(struct tw_sched *s, int64_t now) {
  struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  struct tw_err err = {0};
  int changes = 0;
  if (tw_store_attempts_live(s->store, &live, &n_live, &err) == TW_OK) {
    /* the nodes of the live gangs, read once per pass */
    struct tw_attempt_instance *g = NULL;
    size_t n_g = 0;
    if (tw_store_attempt_instances(s->store, 0, &g, &n_g, &err))
      tw_log_warn("spot", "gang nodes unreadable: %s", err.msg);
    poll_notices(s, live, n_live, g, n_g, now);
    for (size_t i = 0; i < n_live; i++)
      changes += follow_attempt(s, &live[i], nodes_of(g, n_g, live[i].id), now);
    free(g);
    att_prune(s);
    changes += sweep(s, live, n_live, now);
  }
  free(live);
  return changes;
}
