/* monitor.c - follows every live attempt to its end: interruption notices,
 * launches whose answer was lost, running, completion, vanished instances
 * (interruptions), and instances of jobs cancelled meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/log.h"
#include "providers/provider.h"
#include "sched_int.h"

/* Run time assumed on the fake clouds for a job that gives no duration. */
#define DEFAULT_RUN_S 60

/* Sends a job whose instance is gone back to the queue, through
 * interrupted and recovering so its history says what happened. */
static int requeue_after_interruption(struct tw_sched *s,
                                      const struct tw_attempt_rec *a,
                                      const char *why) {
  struct tw_err err = {0};
  char reason[512];
  snprintf(reason, sizeof reason, "instance %s interrupted: %s", a->instance_id, why);
  struct tw_attempt_close c = {.attempt_id = a->id, .end_reason = "interrupted",
                               .job_to = TW_JOB_INTERRUPTED, .job_reason = reason};
  if (tw_store_attempt_close(s->store, &c, &err)) {
    tw_log_warn("sched", "job=%s attempt=%d close failed: %s", a->job_id, a->n, err.msg);
    return 0;
  }
  struct tw_job_transition t1 = {.id = a->job_id, .to = TW_JOB_RECOVERING,
                                 .reason = "placing again, avoiding the interrupted offer"};
  struct tw_job_transition t2 = {.id = a->job_id, .to = TW_JOB_PENDING,
                                 .reason = "waiting for placement after an interruption"};
  if (tw_store_job_transition(s->store, &t1, NULL, &err) == TW_OK)
    tw_store_job_transition(s->store, &t2, NULL, &err);
  tw_log_info("sched", "job=%s attempt=%d offer=%s interrupted: %s", a->job_id, a->n,
              a->offer_id, why);
  return 1;
}

/* 3. one live attempt */
static int follow_attempt(struct tw_sched *s, const struct tw_attempt_rec *a,
                          int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  int changes = 0;
  struct pcache *pc = sched__provider(s, a->provider);
  if (!pc) {
    tw_log_warn("sched", "job=%s attempt=%d provider=%s is no longer configured", a->job_id,
                a->n, a->provider);
    goto out;
  }
  if (tw_job_state_terminal(job.state)) {
    /* cancelled while the attempt lived: give the instance back */
    if (a->instance_id[0] && tw_provider_terminate(pc->p, a->instance_id, &err))
      goto out; /* try again next pass */
    struct tw_attempt_close c = {.attempt_id = a->id, .end_reason = "cancelled",
                                 .job_to = TW_JOB_NSTATES};
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
      changes++;
    goto out;
  }
  if (a->state == TW_ATTEMPT_LAUNCHING) {
    /* The launch was sent but its answer never stored (the daemon stopped
     * in between).  Send it again with the same client token: the provider
     * answers with the instance it already made, if it made one. */
    const struct tw_offer *o = sched__offer(s, a->offer_id);
    if (!o)
      goto out;
    struct tw_job_spec spec;
    if (!sched__parse_spec(&job, &spec))
      goto out;
    if (sched__launch(s, &job, &spec, a, o, 0, "resumed after a restart") == TW_OK)
      changes++;
    else if (job.state == TW_JOB_PLACING) {
      struct tw_job_transition t = {.id = job.id, .to = TW_JOB_PENDING,
                                    .reason = "launch failed; waiting to place again"};
      tw_store_job_transition(s->store, &t, NULL, &err);
    }
    tw_spec_release(&spec);
    goto out;
  }
  struct tw_instance inst;
  enum tw_rc rc = tw_provider_describe(pc->p, a->instance_id, &inst, &err);
  if (rc == TW_E_NOTFOUND) {
    changes += requeue_after_interruption(s, a, "the provider no longer knows it");
    goto out;
  }
  if (rc)
    goto out; /* throttled or down: look again next pass */
  if (inst.finished) {
    /* a batch provider ran the script to its end */
    char why[96];
    snprintf(why, sizeof why, "exited with code %d", inst.exit_code);
    struct tw_attempt_close c = {.attempt_id = a->id, .end_reason = "completed",
                                 .job_to = inst.exit_code == 0 ? TW_JOB_SUCCEEDED : TW_JOB_FAILED,
                                 .job_reason = why, .has_exit = true,
                                 .exit_code = inst.exit_code};
    /* a job that finished before we saw it running still passes through
     * running, so its history is complete */
    if (a->state == TW_ATTEMPT_PROVISIONING)
      tw_store_attempt_running(s->store, a->id, &err);
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
      changes++;
    goto out;
  }
  if (inst.state == TW_INST_TERMINATED || inst.state == TW_INST_SHUTTING_DOWN ||
      inst.state == TW_INST_STOPPED || inst.state == TW_INST_STOPPING) {
    char why[320];
    snprintf(why, sizeof why, "%s%s%s", inst.provider_state, inst.state_reason[0] ? ", " : "",
             inst.state_reason);
    changes += requeue_after_interruption(s, a, why);
    goto out;
  }
  if (a->state == TW_ATTEMPT_PROVISIONING && inst.state == TW_INST_RUNNING) {
    if (tw_store_attempt_running(s->store, a->id, &err) == TW_OK)
      changes++;
    goto out;
  }
  if (a->state == TW_ATTEMPT_RUNNING) {
    struct tw_job_spec spec;
    if (!sched__parse_spec(&job, &spec))
      goto out;
    int64_t run_s = spec.duration_s > 0 ? spec.duration_s : DEFAULT_RUN_S;
    tw_spec_release(&spec);
    if (now - a->running_ms < run_s * 1000)
      goto out;
    if (tw_provider_terminate(pc->p, a->instance_id, &err))
      goto out;
    struct tw_attempt_close c = {.attempt_id = a->id, .end_reason = "completed",
                                 .job_to = TW_JOB_SUCCEEDED,
                                 .job_reason = "ran its expected duration; instance terminated",
                                 .has_exit = true, .exit_code = 0};
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
      changes++;
  }
out:
  tw_job_rec_release(&job);
  return changes;
}

/* 2. notices */
static void poll_notices(struct tw_sched *s, const struct tw_attempt_rec *live,
                         size_t n_live) {
  for (size_t i = 0; i < s->n_pc; i++) {
    struct tw_event_list ev;
    struct tw_err err = {0};
    tw_event_list_init(&ev);
    if (tw_provider_poll_events(s->pc[i].p, &ev, &err) == TW_OK) {
      for (size_t e = 0; e < ev.n; e++)
        for (size_t k = 0; k < n_live; k++) {
          if (strcmp(live[k].instance_id, ev.items[e].instance_id))
            continue;
          char at[40] = "", note[512];
          if (ev.items[e].deadline_ms)
            tw_time_fmt_rfc3339(ev.items[e].deadline_ms, at, sizeof at);
          if (ev.items[e].kind == TW_EVENT_INTERRUPTION)
            snprintf(note, sizeof note, "interruption notice for %s: %s at %s",
                     live[k].instance_id, ev.items[e].action, at);
          else
            snprintf(note, sizeof note, "rebalance recommendation for %s",
                     live[k].instance_id);
          tw_store_job_note(s->store, live[k].job_id, note, &err);
        }
    }
    tw_event_list_release(&ev);
  }
}

int sched__follow(struct tw_sched *s, int64_t now) {
  struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  struct tw_err err = {0};
  int changes = 0;
  if (tw_store_attempts_live(s->store, &live, &n_live, &err) == TW_OK) {
    poll_notices(s, live, n_live);
    for (size_t i = 0; i < n_live; i++)
      changes += follow_attempt(s, &live[i], now);
  }
  free(live);
  return changes;
}
