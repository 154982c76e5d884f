/* follow.c - every live attempt followed to its end, each pass:
 *
 *   1. the providers' notices, matched to the attempts they concern
 *      (spot.c acts on them);
 *   2. each live attempt: a launch whose answer was lost is looked up by
 *      its client token, and sent again with it when the provider has
 *      none, a started instance marks it running, a
 *      finished one (batch providers) completes it with its exit code, a
 *      vanished instance (or one whose notice ran out) is an interruption
 *      (spot.c), the instances of a job cancelled meanwhile are given
 *      back.  An attempt run by tradewind-agent ends from its reports
 *      (agent_follow.c); the broker never takes the time an instance
 *      lived for the job's success;
 *   3. jobs left half way (every state but pending and the terminal
 *      ones, without a live attempt) are picked up again.
 *
 * A launching attempt is one whose launch has no answer yet: the provider
 * is asked for its client token until it answers (resolve_launch), and
 * only a definite refusal ends it.  A finished attempt is recorded before
 * its instance is terminated, and terminates that fail are tried again
 * at the next passes.
 *
 * Describes and terminates are calls on the account's workers (calls.c),
 * like launches: the pass submits them and goes on, and their answers are
 * applied when collected (decide(), ending_applied()) to the attempt as
 * the store has it then: the live set kept from the store's changes
 * (sched__live), the job's row read only for an answer that may end the
 * attempt.  One call per attempt at a time.  A call past its
 * deadline is no answer: a describe is looked at again later (never taken
 * for a vanished instance), a terminate tried again (never taken for
 * done).
 *
 * Polling is adaptive: an attempt whose instance is starting, has a notice
 * out or changed at the last look is described every pass; a quiet one
 * less and less often (a running one after QUIET_RUNNING_MIN_MS at the
 * earliest), up to SCHED_SPOT_POLL_MAX_MS (spot) or
 * OD_POLL_MAX_MS (on-demand, which nobody takes away), a running batch
 * job up to BATCH_POLL_MAX_MS (its end is seen only so).  Notices are polled
 * every pass: they are what gives the job time to checkpoint.  Calls
 * spot.c and launch.c (sched_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/idix.h"
#include "broker/base/log.h"
#include "broker/core/live.h"
#include "broker/sched/agent.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched_int.h"
#include "providers/provider.h"

/* Quiet on-demand attempts are described at least this often. */
#define OD_POLL_MAX_MS 120000
/* A running attempt found quiet is described again after this at the
 * earliest (then twice as late each time): with a tick of 100 ms the ramp
 * would otherwise describe every new instance five times in its first
 * three seconds. */
#define QUIET_RUNNING_MIN_MS 1000
/* A running batch job (Slurm) is described at least this often: its end
 * is known only from the describe (no agent reports it), so a quiet job's
 * end is seen within this, not after a doubling ramp of a minute. */
#define BATCH_POLL_MAX_MS 5000

/* Terminates ended attempts owe (completed, or interrupted with the
 * instance still up), sent each pass until confirmed: the attempt is
 * already ended (completion is recorded first), so the monitor no longer
 * looks at it; what this misses (a restart, too many failures) the
 * reconciler ends. */
#define ENDING_MAX_TRIES 10

struct sched_ending {
  char account[64];
  int64_t attempt_id; /* the ended attempt: its terminate call's key */
  char job_id[TW_JOB_ID_LEN + 1]; /* its job: a traced job's span */
  int k;              /* its gang's node, 0 for one instance */
  char instance_id[128];
  int tries;
};

/* What follow.c remembers of the live attempts (struct sched_att), and the
 * instances still to terminate. */
struct sched_follow {
  struct sched_att *a;
  size_t n, cap;
  /* a's index by attempt id, rebuilt when a is pruned: a pass looks up
   * every live attempt, which a scan made quadratic */
  struct tw_idix ix;
  /* where the walk of the live attempts (ascending id, as a is) expects
   * the next one: a hit costs no look-up in ix */
  size_t hint;
  struct sched_ending *end;
  size_t n_end, cap_end;
  /* describes of this pass's attempts of one instance, sent together per
   * account at the pass's end (describes_flush) */
  struct sched_batched {
    struct pcache *pc;
    struct tw_attempt_rec a;
  } * q;
  size_t n_q, cap_q;
  /* the live attempts (ascending id) and those of them whose job ended
   * (ascending), kept from the store's changes (sched__live) */
  struct tw_live lv; /* its clock: sched__mono_ms() */
  int64_t *lv_ended;
  size_t n_lv_ended;
  bool lv_ended_known;
  /* the sweep (sweep()) is owed when the set was read whole or an attempt
   * ended, else it runs every SWEEP_MS at the latest */
  bool sweep_owed;
  int64_t swept_ms; /* sched__mono_ms() */
};

/* The live attempts are read whole at the first pass, when the store no
 * longer holds every change since the last look, and at least this often
 * (what another process wrote on the same database: the store tells only
 * its own writes). */
#define LIVE_FULL_MS 10000

/* A job left half way has no live attempt: one whose attempt ended (the
 * store's changes name it) or that a restart left (the first read is
 * whole) is looked for at once; this bounds the wait of any other (a
 * write that failed between two others), and keeps a backlog's passes
 * from reading the same started jobs again each time. */
#define SWEEP_MS 1000

/* Attempts one batched describe call asks about (at most
 * TW_PROVIDER_DESCRIBE_MAX; the EC2 adapter sends them in calls of its
 * own size per region). */
#define DESCRIBE_BATCH 500

void sched__follow_release(struct tw_sched *s) {
  if (s->follow) {
    tw_live_release(&s->follow->lv);
    free(s->follow->lv_ended);
    free(s->follow->a);
    tw_idix_free(&s->follow->ix);
    free(s->follow->end);
    free(s->follow->q);
  }
  free(s->follow);
  s->follow = NULL;
  free(s->runs); /* emptied by every flush */
  s->runs = NULL;
  s->n_runs = s->cap_runs = 0;
}

void sched__run_times(struct sched_att *st, const struct tw_instance *inst) {
  if (inst->running_ms > 0)
    st->ran_from_ms = inst->running_ms;
  if (inst->ended_ms > 0)
    st->ended_at_ms = inst->ended_ms;
}

void sched__agent_times(const struct sched_att *st, int64_t agent_from_ms,
                        int64_t agent_to_ms, int64_t *ran_from_ms,
                        int64_t *ended_at_ms) {
  *ran_from_ms = st && st->ran_from_ms > 0 ? st->ran_from_ms
                 : agent_from_ms > 0       ? agent_from_ms
                                           : 0;
  *ended_at_ms = st && st->ended_at_ms > 0 ? st->ended_at_ms
                 : agent_to_ms > 0         ? agent_to_ms
                                           : 0;
}

static struct sched_follow *follow_of(struct tw_sched *s) {
  if (!s->follow)
    s->follow = tw_calloc(1, sizeof *s->follow);
  return s->follow;
}

/* ---- the live attempts, kept from the store's changes ---------------- */

static int id_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

static int job_cmp(const void *x, const void *y) {
  return strcmp((const char *)x, (const char *)y);
}

/* The live attempts whose job ended, after sync y: read whole with the
 * live attempts; else those of the jobs that ended marked, and the marks
 * of attempts no longer live dropped. */
static void ended_follow(struct tw_sched *s, struct sched_follow *m,
                         const struct tw_live_sync *y) {
  if (y->whole) {
    free(m->lv_ended);
    m->lv_ended = NULL;
    m->n_lv_ended = 0;
    struct tw_err eerr = {0};
    m->lv_ended_known = tw_store_attempts_live_ended(
                            s->store, &m->lv_ended, &m->n_lv_ended, &eerr) ==
                        TW_OK;
    return;
  }
  if (y->n_jobs) {
    char(*jobs)[TW_JOB_ID_LEN + 1] = tw_calloc(y->n_jobs, sizeof *jobs);
    for (size_t i = 0; i < y->n_jobs; i++)
      memcpy(jobs[i], y->jobs[i].job_id, sizeof *jobs);
    qsort(jobs, y->n_jobs, sizeof *jobs, job_cmp);
    for (size_t i = 0; i < m->lv.n; i++)
      if (bsearch(m->lv.at[i].job_id, jobs, y->n_jobs, sizeof *jobs,
                  job_cmp)) {
        m->lv_ended = tw_realloc(m->lv_ended, (m->n_lv_ended + 1) *
                                                  sizeof *m->lv_ended);
        m->lv_ended[m->n_lv_ended++] = m->lv.at[i].id;
      }
    free(jobs);
  }
  if ((y->n_jobs || y->dropped) && m->n_lv_ended) {
    qsort(m->lv_ended, m->n_lv_ended, sizeof *m->lv_ended, id_cmp);
    size_t w = 0;
    for (size_t i = 0; i < m->n_lv_ended; i++) {
      int64_t id = m->lv_ended[i];
      if ((!w || m->lv_ended[w - 1] != id) && tw_live_find(&m->lv, id))
        m->lv_ended[w++] = id;
    }
    m->n_lv_ended = w;
  }
}

enum tw_rc sched__live(struct tw_sched *s, const struct tw_attempt_rec **out,
                       size_t *n, struct tw_err *err) {
  struct sched_follow *m = follow_of(s);
  struct tw_live_sync y;
  enum tw_rc rc =
      tw_live_sync(&m->lv, s->store, sched__mono_ms(), LIVE_FULL_MS, &y, err);
  if (rc) {
    *out = NULL;
    *n = 0;
    return rc;
  }
  if (y.whole || y.ended)
    m->sweep_owed = true;
  ended_follow(s, m, &y);
  free(y.jobs);
  *out = m->lv.at;
  *n = m->lv.n;
  return TW_OK;
}

static void ending_add(struct tw_sched *s, const char *account,
                       const char *job_id, int64_t attempt_id, int k,
                       const char *instance_id) {
  struct sched_follow *m = follow_of(s);
  for (size_t i = 0; i < m->n_end; i++)
    if (!strcmp(m->end[i].instance_id, instance_id) &&
        !strcmp(m->end[i].account, account))
      return;
  if (m->n_end == m->cap_end) {
    m->cap_end = m->cap_end ? m->cap_end * 2 : 16;
    m->end = tw_realloc(m->end, m->cap_end * sizeof *m->end);
  }
  struct sched_ending *e = &m->end[m->n_end++];
  memset(e, 0, sizeof *e);
  e->attempt_id = attempt_id;
  e->k = k;
  snprintf(e->account, sizeof e->account, "%s", account);
  snprintf(e->job_id, sizeof e->job_id, "%s", job_id);
  snprintf(e->instance_id, sizeof e->instance_id, "%s", instance_id);
}

/* Every instance of ended attempt a whose terminate may not have taken
 * (a gang: each node not recorded terminated) is terminated by the next
 * ending_send(). */
static void ending_add_all(struct tw_sched *s, const struct tw_attempt_rec *a,
                           struct sched_nodes nd) {
  if (!nd.n && a->instance_id[0])
    ending_add(s, a->provider, a->job_id, a->id, 0, a->instance_id);
  for (size_t i = 0; i < nd.n; i++)
    if (strcmp(nd.g[i].state, "terminated"))
      ending_add(s, a->provider, a->job_id, a->id, nd.g[i].k,
                 nd.g[i].instance_id);
}

static void ending_remove(struct sched_follow *m, size_t i) {
  memmove(&m->end[i], &m->end[i + 1], (m->n_end - i - 1) * sizeof *m->end);
  m->n_end--;
}

/* On the worker: a terminate call.  by_token: the instance of the
 * attempt's token, if the provider has one still up; else each of c->g.
 * c->rc is the first failure (an instance the provider no longer knows is
 * gone, which is what was asked). */
static enum tw_rc describe_all(struct tw_provider *p,
                               const struct tw_attempt_rec *a,
                               struct sched_nodes nd, struct tw_instance *out,
                               char which[128], struct tw_err *err);

static void terminate_run(struct sched_call *c) {
  c->rc = TW_OK;
  if (c->by_token) {
    struct tw_instance inst;
    enum tw_rc rc = tw_provider_find_by_token(
        c->p, c->a.client_token, c->o.region[0] ? c->o.region : NULL, &inst,
        &c->err);
    if (rc == TW_E_NOTFOUND)
      return;
    if (rc) {
      c->rc = rc; /* no answer: asked again next pass */
      return;
    }
    c->inst = inst; /* its run times, for billing (sched__run_times) */
    c->seen = true;
    if (tw_instance_state_gone(inst.state))
      return;
    rc = tw_provider_terminate(c->p, inst.id, &c->err);
    c->rc = rc == TW_E_NOTFOUND ? TW_OK : rc;
    return;
  }
  if (c->describe_first) {
    /* not seen running yet: the provider may have started it, and bills
     * it from then even when it goes a moment later */
    struct tw_err derr = {0};
    struct sched_nodes nd = {.g = c->g, .n = c->n_g};
    if (c->n_g == 1 && c->g[0].k == 0)
      nd.n = 0; /* one instance: a's own */
    if (describe_all(c->p, &c->a, nd, &c->inst, c->which, &derr) == TW_OK)
      c->seen = true;
  }
  for (size_t i = 0; i < c->n_g; i++) {
    struct tw_err terr = {0};
    enum tw_rc rc = tw_provider_terminate(c->p, c->g[i].instance_id, &terr);
    c->g_rc[i] = rc == TW_E_NOTFOUND ? TW_OK : rc;
    if (c->g_rc[i] && !c->rc) {
      c->rc = rc;
      c->err = terr;
    }
  }
}

/* A terminate call for attempt a (its id and provider are enough) on pc,
 * with room for n targets. */
static struct sched_call *
terminate_call(struct tw_sched *s, struct pcache *pc,
               const struct tw_attempt_rec *a, size_t n) {
  struct sched_call *c = tw_calloc(1, sizeof *c);
  c->kind = SCHED_CALL_TERMINATE;
  /* a traced job's terminate is a span of its trace (obs.c) */
  c->tracer = s->tracer;
  sched__obs_job_trace(s, a->job_id, &c->trace, NULL, 0);
  c->run = terminate_run;
  c->attempt_id = a->id;
  c->p = pc->p;
  c->a = *a;
  if (n) {
    c->g = tw_calloc(n, sizeof *c->g);
    c->g_rc = tw_calloc(n, sizeof *c->g_rc);
  }
  return c;
}

/* The terminates ended attempts still owe, one call per attempt to its
 * account's workers (none while one is in flight for it). */
static void ending_send(struct tw_sched *s) {
  struct sched_follow *m = s->follow;
  if (!m)
    return;
  for (size_t i = 0; i < m->n_end;) {
    struct sched_ending *e = &m->end[i];
    struct pcache *pc = sched__provider(s, e->account);
    if (!pc) {
      ending_remove(m, i); /* no longer configured: the reconciler's */
      continue;
    }
    bool first = true;
    for (size_t j = 0; j < i && first; j++)
      first = m->end[j].attempt_id != e->attempt_id;
    if (!first || sched__call_busy(s, e->attempt_id) ||
        !sched__call_room(s, pc)) {
      i++;
      continue;
    }
    size_t n = 0;
    for (size_t j = i; j < m->n_end; j++)
      n += m->end[j].attempt_id == e->attempt_id;
    struct tw_attempt_rec a = {.id = e->attempt_id};
    snprintf(a.provider, sizeof a.provider, "%s", e->account);
    snprintf(a.job_id, sizeof a.job_id, "%s", e->job_id);
    struct sched_call *c = terminate_call(s, pc, &a, n);
    for (size_t j = i; j < m->n_end; j++)
      if (m->end[j].attempt_id == e->attempt_id) {
        struct tw_attempt_instance *t = &c->g[c->n_g++];
        t->attempt_id = e->attempt_id;
        t->k = m->end[j].k;
        snprintf(t->instance_id, sizeof t->instance_id, "%s",
                 m->end[j].instance_id);
      }
    if (!sched__call_submit(s, pc, c))
      sched__call_free(s, c);
    i++;
  }
}

/* The answer to an ending terminate call: each instance given back is
 * done with (a gang's node recorded terminated); one that failed, or a
 * call past its deadline (not confirmed), is tried again, at most
 * ENDING_MAX_TRIES times. */
static void ending_applied(struct tw_sched *s, const struct sched_call *c,
                           bool timed_out) {
  struct sched_follow *m = follow_of(s);
  for (size_t i = 0; i < c->n_g; i++) {
    const struct tw_attempt_instance *t = &c->g[i];
    for (size_t j = 0; j < m->n_end; j++) {
      struct sched_ending *e = &m->end[j];
      if (e->attempt_id != t->attempt_id ||
          strcmp(e->instance_id, t->instance_id))
        continue;
      if (!timed_out && c->g_rc[i] == TW_OK) {
        struct tw_err err = {0};
        if (t->k > 0)
          tw_store_attempt_instance_put(s->store, t->attempt_id, t->k,
                                        t->instance_id, "terminated", &err);
        ending_remove(m, j);
      } else if (++e->tries >= ENDING_MAX_TRIES) {
        tw_log_warn("sched",
                    "instance=%s not terminated after %d tries; left to the "
                    "reconciler",
                    e->instance_id, e->tries);
        ending_remove(m, j);
      } else if (timed_out) {
        tw_log_info("sched",
                    "instance=%s terminate unanswered within %lld ms; tried "
                    "again",
                    e->instance_id,
                    (long long)tw_provider_call_deadline_ms(c->p));
      }
      break;
    }
  }
}

static struct sched_att *att_find(struct sched_follow *m, int64_t id) {
  size_t k = m->hint < m->n && m->a[m->hint].attempt_id == id
                 ? m->hint
                 : tw_idix_get(&m->ix, id);
  if (k == SIZE_MAX)
    return NULL;
  m->hint = k + 1;
  return &m->a[k];
}

static struct sched_att *att_get(struct tw_sched *s,
                                 const struct tw_attempt_rec *a, int64_t now) {
  struct sched_follow *m = follow_of(s);
  struct sched_att *found = att_find(m, a->id);
  if (found) {
    found->seen = true;
    return found;
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
  tw_idix_put(&m->ix, st->attempt_id, m->n - 1);
  m->hint = m->n;
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
  tw_idix_reset(&m->ix, k);
  for (size_t i = 0; i < k; i++)
    tw_idix_put(&m->ix, m->a[i].attempt_id, i);
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
  int64_t next = st->interval_ms * 2;
  /* a quiet running instance: notices come by their own poll every
   * pass, so its describes start at a second, not at a fast tick */
  if (a->state == TW_ATTEMPT_RUNNING && next < QUIET_RUNNING_MIN_MS)
    next = QUIET_RUNNING_MIN_MS;
  st->interval_ms = next > max ? max : next;
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
static enum tw_rc describe_all(struct tw_provider *p,
                               const struct tw_attempt_rec *a,
                               struct sched_nodes nd, struct tw_instance *out,
                               char which[128], struct tw_err *err) {
  snprintf(which, 128, "%s", a->instance_id);
  if (!nd.n)
    return tw_provider_describe(p, a->instance_id, out, err);
  bool starting = false;
  for (size_t i = 0; i < nd.n; i++) {
    struct tw_instance in;
    enum tw_rc rc = tw_provider_describe(p, nd.g[i].instance_id, &in, err);
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

/* The next question to the provider about a launching attempt waits
 * twice as long as the last, from 1 s to 60 s. */
#define LAUNCH_WAIT_MIN_MS 1000
#define LAUNCH_WAIT_MAX_MS 60000

static void launch_wait(struct sched_att *st, int64_t now) {
  st->launch_wait_ms = !st->launch_wait_ms ? LAUNCH_WAIT_MIN_MS
                       : st->launch_wait_ms * 2 > LAUNCH_WAIT_MAX_MS
                           ? LAUNCH_WAIT_MAX_MS
                           : st->launch_wait_ms * 2;
  st->next_poll_ms = now + st->launch_wait_ms;
}

/* A launching attempt: its launch was sent (or about to be, when the
 * daemon stopped) and no answer is stored.  The provider is asked for the
 * instance of its client token until it answers (docs/spot.md, "Attempt
 * states"): found, the attempt goes on with it; definitely none, the
 * launch is sent again with the same token (the provider's idempotency
 * makes that safe even if the answer was wrong); no answer, it is asked
 * again later.  A gang's missing nodes are sent again with their own
 * tokens (launch.c keeps the nodes already known).  Only a definite
 * refusal ends the attempt.  Returns state changes. */
static int resolve_launch(struct tw_sched *s, struct pcache *pc,
                          const struct tw_job_rec *job,
                          const struct tw_attempt_rec *a, struct sched_att *st,
                          int64_t now) {
  if (now < st->next_poll_ms || !sched__call_room(s, pc))
    return 0;
  const struct tw_job_spec *spec = sched__spec(s, job);
  if (!spec)
    return 0;
  /* the offer it was sent to, as the catalog has it now, else rebuilt
   * from its id: an offer gone from the catalog must not leave the
   * attempt unresolved */
  struct tw_offer rebuilt;
  const struct tw_offer *o = sched__offer(s, a->offer_id);
  if (!o) {
    rebuilt = sched__offer_of(s, a);
    o = &rebuilt;
  }
  /* the question goes to the account's workers; its answer comes back
   * through sched__follow_resolved() */
  struct sched_call *c = sched__launch_call(
      s, job, spec, a, o, 0, "sent again with its client token after no answer",
      NULL, false, true);
  if (c)
    c->settle_rc = st->settle_rc;
  sched__spec_release(s, spec);
  if (c && !sched__call_submit(s, pc, c))
    sched__call_free(s, c);
  launch_wait(st, now); /* asked again after the wait, if still unsettled */
  return 0;
}

int sched__follow_resolved(struct tw_sched *s, const struct sched_call *c,
                           enum sched_launch_outcome r, int64_t now) {
  struct sched_att *st = s->follow ? att_find(s->follow, c->a.id) : NULL;
  if (r == SCHED_LAUNCH_SETTLE) {
    /* asked for its token again after twice the call's deadline (the
     * longest its first send waited unanswered, and as long again), at
     * most a minute */
    if (st) {
      int64_t d = 2 * tw_provider_call_deadline_ms(c->p);
      st->settle_rc = c->rc;
      st->next_poll_ms = now + (d < 60000 ? d : 60000);
    }
    return 0;
  }
  if (r == SCHED_LAUNCH_OK) {
    if (st) {
      st->launch_wait_ms = 0;
      poll_soon(s, st, now);
    }
    return 1;
  }
  if (r == SCHED_LAUNCH_UNKNOWN)
    return 0;
  /* refused and closed: a placing job waits to be placed again; a
   * recovering one is picked up by the sweep (3.) */
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, c->a.job_id, &job, &err) == TW_OK) {
    if (job.state == TW_JOB_PLACING) {
      struct tw_job_transition t = {
          .id = job.id,
          .to = TW_JOB_PENDING,
          .reason = "launch failed; waiting to place again"};
      tw_store_job_transition(s->store, &t, NULL, &err);
    }
    tw_job_rec_release(&job);
  }
  return 1;
}

/* What was asked of attempt a before its instance went: "move" (spot.c
 * decided to move it, stored before the terminate), "notice" (its
 * interruption notice), else "". */
static void request_cause(struct tw_sched *s, const struct tw_attempt_rec *a,
                          char cause[16]) {
  struct tw_ckpt_request req;
  bool asked = false;
  struct tw_err err = {0};
  if (tw_checkpoint_request_get(s->store, a->id, &asked, &req, cause, &err) ||
      !asked)
    cause[0] = '\0';
}

/* Closes live attempt a of a job that ended meanwhile, its instances
 * given back: completed when the job succeeded (a look after its success
 * changes nothing), else cancelled.  Returns state changes. */
static int close_ended(struct tw_sched *s, const struct tw_attempt_rec *a,
                       size_t nodes, bool job_succeeded, int64_t ran_from_ms) {
  struct tw_err err = {0};
  struct tw_attempt_close c = {.attempt_id = a->id,
                               .end_reason =
                                   job_succeeded ? "completed" : "cancelled",
                               .job_to = TW_JOB_NSTATES,
                               .ran_from_ms = ran_from_ms};
  int changes = tw_store_attempt_close(s->store, &c, &err) == TW_OK;
  if (changes)
    sched__capacity_return(s, a, nodes);
  tw_spec_cache_forget(s->specs, a->job_id); /* it ended: no more passes */
  return changes;
}

/* Attempt a's job ended while it lived (cancelled): its instances are
 * given back by a terminate call, and the attempt closed once the call
 * confirms it (sched__follow_applied).  A launch left unanswered may have
 * made one: it is asked for by its token first.  Returns state changes. */
static int give_back(struct tw_sched *s, struct pcache *pc,
                     const struct tw_job_rec *job,
                     const struct tw_attempt_rec *a, struct sched_nodes nd,
                     struct sched_att *st) {
  bool by_token = a->state == TW_ATTEMPT_LAUNCHING && !nd.n;
  size_t n = 0;
  for (size_t i = 0; i < nd.n; i++)
    n += strcmp(nd.g[i].state, "terminated") != 0;
  if (!nd.n && !by_token && a->instance_id[0])
    n = 1;
  size_t held = sched__job_nodes(s, job, nd.n);
  if (!by_token && !n)
    return close_ended(s, a, held, job->state == TW_JOB_SUCCEEDED,
                       st->ran_from_ms);
  if (!sched__call_room(s, pc))
    return 0; /* the account's workers are busy: next pass */
  struct sched_call *c = terminate_call(s, pc, a, n);
  c->cancel = true;
  c->by_token = by_token;
  c->describe_first = a->state == TW_ATTEMPT_PROVISIONING && !st->ran_from_ms;
  c->job_succeeded = job->state == TW_JOB_SUCCEEDED;
  c->nodes = (int)held; /* given back to the capacity view when closed */
  const struct tw_offer *o = sched__offer(s, a->offer_id);
  if (o)
    c->o = *o;
  if (!nd.n && n) {
    c->g[0].attempt_id = a->id;
    snprintf(c->g[0].instance_id, sizeof c->g[0].instance_id, "%s",
             a->instance_id);
    c->n_g = 1;
  }
  for (size_t i = 0; i < nd.n; i++)
    if (strcmp(nd.g[i].state, "terminated"))
      c->g[c->n_g++] = nd.g[i];
  if (!sched__call_submit(s, pc, c))
    sched__call_free(s, c);
  return 0;
}

/* Attempt a must end while its instances are still up (its notice ran
 * out, or a node of its gang is lost): they are terminated by a call
 * first, and the interruption is recorded (the job placed again) only
 * when the call confirms every one of them (ended_after_terminate).
 * Until then the attempt stays live: no answer, a failure or a restart
 * leaves it to be described and decided again, so the job's next
 * instance never runs beside this one.  A notice's time is the
 * provider's word, in whole seconds: the instance may outlive it.  A
 * restart that then finds the broker's own terminate reads it by the
 * notice's cause (request_cause), or as the gang's loss.  Returns state
 * changes. */
static int end_after_terminate(struct tw_sched *s, struct pcache *pc,
                               const struct tw_attempt_rec *a,
                               struct sched_nodes nd, struct sched_att *st,
                               const char *why, int64_t now) {
  size_t n = 0;
  for (size_t i = 0; i < nd.n; i++)
    n += strcmp(nd.g[i].state, "terminated") != 0;
  if (!nd.n && a->instance_id[0])
    n = 1;
  if (!n)
    return sched__spot_end(s, a, st, "interrupted", why, now);
  if (!sched__call_room(s, pc)) {
    poll_soon(s, st, now); /* decided again next pass */
    return 0;
  }
  struct sched_call *c = terminate_call(s, pc, a, n);
  c->end_after = true;
  snprintf(c->end_why, sizeof c->end_why, "%s", why);
  if (!nd.n) {
    c->g[0].attempt_id = a->id;
    snprintf(c->g[0].instance_id, sizeof c->g[0].instance_id, "%s",
             a->instance_id);
    c->n_g = 1;
  }
  for (size_t i = 0; i < nd.n; i++)
    if (strcmp(nd.g[i].state, "terminated"))
      c->g[c->n_g++] = nd.g[i];
  if (!sched__call_submit(s, pc, c))
    sched__call_free(s, c); /* stopping: the next start decides again */
  return 0;
}

/* The answer to end_after_terminate()'s call: every instance confirmed
 * gone, the interruption is recorded and the job placed again; anything
 * less (no answer within the deadline, a failure) leaves the attempt live
 * and looked at again at once. */
static int ended_after_terminate(struct tw_sched *s, const struct sched_call *c,
                                 bool timed_out, int64_t now) {
  struct tw_err err = {0};
  bool confirmed = !timed_out;
  for (size_t i = 0; i < c->n_g; i++) {
    const struct tw_attempt_instance *t = &c->g[i];
    if (!timed_out && c->g_rc[i] == TW_OK) {
      if (t->k > 0)
        tw_store_attempt_instance_put(s->store, c->a.id, t->k, t->instance_id,
                                      "terminated", &err);
    } else {
      confirmed = false;
    }
  }
  /* the attempt and its job as they are stored now */
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, c->a.job_id, &job, &err))
    return 0;
  int changes = 0;
  struct tw_attempt_rec *mine = NULL;
  size_t n = 0;
  const struct tw_attempt_rec *a = NULL;
  if (tw_store_attempts_of(s->store, job.id, &mine, &n, &err) == TW_OK)
    for (size_t i = 0; i < n; i++)
      if (mine[i].id == c->a.id)
        a = &mine[i];
  if (!a || a->state == TW_ATTEMPT_ENDED || tw_job_state_terminal(job.state))
    goto out; /* ended another way meanwhile, or cancelled: follow's */
  struct sched_att *st = att_get(s, a, now);
  if (!confirmed) {
    tw_log_info("sched",
                "job=%s attempt=%d instances not confirmed terminated (%s); "
                "the attempt stays live and is decided again",
                job.id, a->n,
                timed_out ? "no answer within the deadline" : tw_rc_str(c->rc));
    poll_soon(s, st, now);
    goto out;
  }
  changes = sched__spot_end(s, a, st, "interrupted", c->end_why, now);
out:
  free(mine);
  tw_job_rec_release(&job);
  return changes;
}

/* The answer rc (inst, which) to the describe of live attempt a (as the
 * store has it when the answer came): running, completed, interrupted or
 * unchanged.  job is NULL when the answer cannot end the attempt
 * (decide_reads_job).  Returns state changes. */
static int decide(struct tw_sched *s, struct pcache *pc,
                  const struct tw_job_rec *job, const struct tw_attempt_rec *a,
                  struct sched_nodes nd, struct sched_att *st, enum tw_rc rc,
                  const struct tw_instance *in, const char *which,
                  int64_t now) {
  struct tw_err err = {0};
  int changes = 0;
  struct tw_instance inst = *in;
  bool notice_due = st->notice_deadline_ms && now >= st->notice_deadline_ms;
  if (rc == TW_E_NOTFOUND) {
    char why[320] = "the provider no longer knows its instance";
    if (nd.n) { /* a gang runs whole or not at all: the others go too */
      snprintf(why, sizeof why,
               "the provider no longer knows instance %s of its gang of %zu",
               which, nd.n);
      return end_after_terminate(s, pc, a, nd, st, why, now);
    }
    return sched__spot_end(s, a, st, "interrupted", why, now);
  }
  if (rc) {
    poll_later(s, st, a, now); /* throttled or down: look again later */
    return 0;
  }
  sched__run_times(st, &inst);
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
        .exit_code = inst.exit_code,
        .ran_from_ms = st->ran_from_ms,
        .ended_at_ms = st->ended_at_ms};
    /* a job that finished before we saw it running still passes through
     * running, so its history is complete */
    if (a->state == TW_ATTEMPT_PROVISIONING)
      tw_store_attempt_running_at(s->store, a->id, st->ran_from_ms, &err);
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK) {
      changes++;
      sched__capacity_return(s, a, sched__job_nodes(s, job, nd.n));
      tw_spec_cache_forget(s->specs, job->id);
    }
    return changes;
  }
  if (inst.state == TW_INST_TERMINATED || inst.state == TW_INST_SHUTTING_DOWN ||
      inst.state == TW_INST_STOPPED || inst.state == TW_INST_STOPPING ||
      notice_due) {
    /* Gone: an interruption, the broker's own move, or its notice run
     * out.  Never a success: only what ran says the work is done (an
     * agent's exit report, agent_follow.c; a batch provider's report,
     * above), not the time the instance lived. */
    char why[520], cause[16];
    request_cause(s, a, cause);
    if (!notice_due && !strcmp(cause, "move")) {
      /* a move (spot.c) terminates the instance before it records the
       * move: when that answer was lost or the daemon stopped in between,
       * this look finds the broker's own terminate, not an interruption */
      snprintf(why, sizeof why,
               "moved off on-demand instance %s: it was terminated for the "
               "move before the move was recorded",
               which);
      return sched__spot_end(s, a, st, "moved", why, now);
    }
    if (notice_due && !tw_instance_state_gone(inst.state)) {
      /* the notice ran out: the provider takes it now whatever it still
       * says, so the job moves on without waiting for that */
      snprintf(why, sizeof why, "instance %s interrupted: its notice ran out",
               nd.n ? "of the gang" : a->instance_id);
      return end_after_terminate(s, pc, a, nd, st, why, now);
    }
    if (!strcmp(cause, "notice"))
      /* its notice was out: taken at the deadline, by the provider or by
       * the broker's terminate of a pass whose record a restart cut short */
      snprintf(why, sizeof why,
               "instance %s interrupted: its notice ran out (%s)", which,
               inst.provider_state);
    else
      snprintf(why, sizeof why, "instance %s interrupted: %s%s%s", which,
               inst.provider_state, inst.state_reason[0] ? ", " : "",
               inst.state_reason);
    if (nd.n) /* a gang runs whole or not at all: the others go too */
      return end_after_terminate(s, pc, a, nd, st, why, now);
    return sched__spot_end(s, a, st, "interrupted", why, now);
  }
  if (a->state == TW_ATTEMPT_PROVISIONING && inst.state == TW_INST_RUNNING) {
    /* a gang runs once all its nodes do (describe_all) */
    for (size_t i = 0; i < nd.n; i++)
      tw_store_attempt_instance_put(s->store, a->id, nd.g[i].k,
                                    nd.g[i].instance_id, "running", &err);
    bool no_agent = !tw_provider_supports(pc->p, TW_PROV_BATCH) &&
                    !(s->agent && tw_provider_agent(pc->p));
    if (s->defer_running) {
      /* stored with the others of this collect (sched__follow_flush) */
      if (s->n_runs == s->cap_runs) {
        s->cap_runs = s->cap_runs ? s->cap_runs * 2 : 64;
        s->runs = tw_realloc(s->runs, s->cap_runs * sizeof *s->runs);
      }
      struct sched_running *r = &s->runs[s->n_runs++];
      r->attempt_id = a->id;
      r->at_ms = st->ran_from_ms;
      snprintf(r->job_id, sizeof r->job_id, "%s", a->job_id);
      r->note[0] = '\0';
      if (no_agent)
        snprintf(r->note, sizeof r->note,
                 "running on %s, which has no agent: nothing reports this "
                 "job's end, so it runs until cancelled or its instance "
                 "goes (set agent: true; docs/agent.md)",
                 a->provider);
      poll_soon(s, st, now);
      return changes + 1;
    }
    if (tw_store_attempt_running_at(s->store, a->id, st->ran_from_ms, &err) ==
        TW_OK) {
      changes++;
      if (no_agent) {
        /* a describe sees the instance, never the job (see below) */
        char note[320];
        snprintf(note, sizeof note,
                 "running on %s, which has no agent: nothing reports this "
                 "job's end, so it runs until cancelled or its instance "
                 "goes (set agent: true; docs/agent.md)",
                 a->provider);
        tw_store_job_note(s->store, a->job_id, note, &err);
      }
    }
    poll_soon(s, st, now);
    return changes;
  }
  if (a->state == TW_ATTEMPT_RUNNING &&
      tw_provider_supports(pc->p, TW_PROV_BATCH)) {
    /* the batch system runs the script and reports its end (finished,
     * above): nothing to decide from the clock */
    poll_later(s, st, a, now);
    int64_t bound = s->tick_ms > BATCH_POLL_MAX_MS ? s->tick_ms
                                                   : BATCH_POLL_MAX_MS;
    if (st->interval_ms > bound) {
      st->interval_ms = bound;
      st->next_poll_ms = now + bound;
    }
    return 0;
  }
  if (a->state == TW_ATTEMPT_RUNNING) {
    /* Nobody inside reports (no `agent: true`, not a batch provider):
     * the broker sees the instance, not the job, so the attempt runs
     * until its instance goes or the job is cancelled; its outcome is
     * never guessed (docs/agent.md, "Without the agent"). */
    if (!job) { /* no review due (decide_reads_job) */
      poll_later(s, st, a, now);
      return 0;
    }
    const struct tw_job_spec *spec = sched__spec(s, job);
    if (!spec)
      return 0;
    int moved = sched__spot_review(s, job, spec, a, nd, st, now);
    sched__spec_release(s, spec);
    if (moved)
      return moved;
    poll_later(s, st, a, now);
    return 0;
  }
  poll_later(s, st, a, now);
  return 0;
}

/* On the worker: a describe call. */
static void describe_run(struct sched_call *c) {
  struct sched_nodes nd = {.g = c->g, .n = c->n_g};
  c->rc = describe_all(c->p, &c->a, nd, &c->inst, c->which, &c->err);
}

/* A describe call for live attempt a on its account's workers (none when
 * they are busy: due still, next pass); the answer comes back through
 * sched__follow_applied().  agent_lost: its agent went silent. */
static void describe_send(struct tw_sched *s, struct pcache *pc,
                          const struct tw_attempt_rec *a,
                          struct sched_nodes nd, bool agent_lost) {
  if (!nd.n && !agent_lost && a->instance_id[0]) {
    /* one instance: described with the others at the pass's end */
    struct sched_follow *m = follow_of(s);
    if (m->n_q == m->cap_q) {
      m->cap_q = m->cap_q ? m->cap_q * 2 : 64;
      m->q = tw_realloc(m->q, m->cap_q * sizeof *m->q);
    }
    m->q[m->n_q].pc = pc;
    m->q[m->n_q++].a = *a;
    return;
  }
  if (!sched__call_room(s, pc))
    return;
  struct sched_call *c = tw_calloc(1, sizeof *c);
  c->kind = SCHED_CALL_DESCRIBE;
  c->run = describe_run;
  c->attempt_id = a->id;
  c->p = pc->p;
  c->a = *a;
  c->agent_lost = agent_lost;
  if (nd.n) {
    c->g = tw_calloc(nd.n, sizeof *c->g);
    memcpy(c->g, nd.g, nd.n * sizeof *c->g);
    c->n_g = nd.n;
  }
  if (!sched__call_submit(s, pc, c))
    sched__call_free(s, c);
}

/* On the worker: a batched describe call. */
static void describe_many_run(struct sched_call *c) {
  const char **ids = tw_calloc(c->n_batch, sizeof *ids);
  for (size_t i = 0; i < c->n_batch; i++) {
    ids[i] = c->batch[i].instance_id;
    c->b_rc[i] = TW_E_INTERNAL; /* no answer unless the provider gives one */
  }
  c->rc = tw_provider_describe_many(c->p, ids, c->n_batch, c->b_inst, c->b_rc,
                                    &c->err);
  free(ids);
}

/* The describes gathered by describe_send, one call per account for up
 * to DESCRIBE_BATCH attempts (none when its workers are busy: they are
 * still due, and asked at the next pass). */
static void describes_flush(struct tw_sched *s) {
  struct sched_follow *m = s->follow;
  if (!m || !m->n_q)
    return;
  bool *sent = tw_calloc(m->n_q, sizeof *sent);
  for (size_t i = 0; i < m->n_q; i++) {
    if (sent[i])
      continue;
    struct pcache *pc = m->q[i].pc;
    size_t k = 0;
    for (size_t j = i; j < m->n_q; j++)
      k += !sent[j] && m->q[j].pc == pc;
    for (size_t j = i; j < m->n_q && k;) {
      size_t n = k < DESCRIBE_BATCH ? k : DESCRIBE_BATCH;
      if (!sched__call_room(s, pc)) {
        for (; j < m->n_q; j++)
          if (m->q[j].pc == pc)
            sent[j] = true; /* left for the next pass */
        break;
      }
      struct sched_call *c = tw_calloc(1, sizeof *c);
      c->kind = SCHED_CALL_DESCRIBE;
      c->run = describe_many_run;
      c->p = pc->p;
      c->batch = tw_calloc(n, sizeof *c->batch);
      c->b_inst = tw_calloc(n, sizeof *c->b_inst);
      c->b_rc = tw_calloc(n, sizeof *c->b_rc);
      for (; j < m->n_q && c->n_batch < n; j++)
        if (!sent[j] && m->q[j].pc == pc) {
          c->batch[c->n_batch++] = m->q[j].a;
          sent[j] = true;
        }
      k -= n;
      if (!sched__call_submit(s, pc, c))
        sched__call_free(s, c);
    }
  }
  free(sent);
  m->n_q = 0;
}

/* 2. one live attempt: a launching one settled by its token, one whose
 * job ended given back, any other described when due.  Returns state
 * changes. */
static int follow_attempt(struct tw_sched *s, const struct tw_attempt_rec *a,
                          struct sched_nodes nd, bool job_ended,
                          bool ended_known, int64_t now) {
  struct tw_err err = {0};
  struct sched_att *st = att_get(s, a, now);
  struct pcache *pc = sched__provider(s, a->provider);
  /* nothing an agent reports can decide it (agent_follow.c) */
  bool agentless = pc && !tw_provider_agent(pc->p) &&
                   (!s->agent || st->agent_absent ||
                    !tw_provider_info(pc->p)->user_data_max);
  if (agentless && ended_known && !job_ended &&
      a->state != TW_ATTEMPT_LAUNCHING) {
    /* launched, no agent, its job still live (read for the whole pass at
     * once): nothing to do but a look when due, which needs no job */
    bool due = now >= st->next_poll_ms ||
               (st->notice_deadline_ms && now >= st->notice_deadline_ms);
    if (due && !sched__call_busy(s, a->id))
      describe_send(s, pc, a, nd, false);
    return 0;
  }
  if (!pc) {
    tw_log_warn("sched",
                "job=%s attempt=%d provider=%s is no longer configured",
                a->job_id, a->n, a->provider);
    return 0;
  }
  /* a call of its own is in flight (its launch, mostly): one at a time,
   * and its job is not read for nothing */
  if (sched__call_busy(s, a->id))
    return 0;
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  int changes = 0;
  /* run by tradewind-agent: its reports decide (agent_follow.c) */
  if (sched__agent_quiet(s, pc, &job, a, st, now))
    goto out; /* nothing new from its agent: no read this pass */
  struct sched_agent_step ag;
  sched__agent_follow(s, pc, &job, a, nd, st, now, &ag);
  changes += ag.changes;
  if (ag.owe_terminate)
    ending_add_all(s, a, nd);
  if (ag.end_after_terminate)
    changes += end_after_terminate(s, pc, a, nd, st, ag.end_why, now);
  if (ag.heartbeat_lost)
    describe_send(s, pc, a, nd, true);
  if (ag.handled)
    goto out;
  if (tw_job_state_terminal(job.state)) {
    changes += give_back(s, pc, &job, a, nd, st);
    goto out;
  }
  if (a->state == TW_ATTEMPT_LAUNCHING) {
    changes += resolve_launch(s, pc, &job, a, st, now);
    goto out;
  }
  bool notice_due = st->notice_deadline_ms && now >= st->notice_deadline_ms;
  if (now < st->next_poll_ms && !notice_due)
    goto out;
  describe_send(s, pc, a, nd, false);
out:
  tw_job_rec_release(&job);
  return changes;
}

/* Attempt id as the store has it now, from the live set (sched__live:
 * the store's changes since its last look applied first, so no row is
 * read unless one changed): true and *out when it is live.  *job_ended
 * tells whether its job ended, *ended_known false when that is not known
 * (then its job must be read).  False with *known true: not live any
 * more; *known false: the set could not be read. */
static bool live_now(struct tw_sched *s, int64_t id, struct tw_attempt_rec *out,
                     bool *job_ended, bool *ended_known, bool *known) {
  const struct tw_attempt_rec *live = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  *known = sched__live(s, &live, &n, &err) == TW_OK;
  if (!*known)
    return false;
  struct sched_follow *m = s->follow;
  const struct tw_attempt_rec *at = tw_live_find(&m->lv, id);
  if (!at)
    return false;
  *out = *at;
  *ended_known = m->lv_ended_known;
  *job_ended = false;
  if (m->n_lv_ended)
    *job_ended = bsearch(&id, m->lv_ended, m->n_lv_ended, sizeof id,
                         id_cmp) != NULL;
  return true;
}

/* Whether decide() must see attempt a's job to apply answer rc (inst):
 * only for what ends the attempt or reviews its market, which is rare.
 * Seeing it running, or looking again later, needs nothing of the job:
 * the live set says the job has not ended (sched__live), and the store
 * refuses the running step of a job another replica ended since. */
static bool decide_reads_job(const struct pcache *pc,
                             const struct tw_attempt_rec *a,
                             const struct sched_att *st, enum tw_rc rc,
                             const struct tw_instance *inst, int64_t now) {
  if (rc == TW_E_NOTFOUND)
    return true;
  if (rc)
    return false; /* looked at again later */
  if (inst->finished || (st->notice_deadline_ms &&
                         now >= st->notice_deadline_ms))
    return true;
  if (inst->state == TW_INST_TERMINATED ||
      inst->state == TW_INST_SHUTTING_DOWN ||
      inst->state == TW_INST_STOPPED || inst->state == TW_INST_STOPPING)
    return true;
  /* running without a batch system: only an on-demand attempt due for
   * its review (sched__spot_review) reads the job's spec */
  return a->state == TW_ATTEMPT_RUNNING &&
         !tw_provider_supports(pc->p, TW_PROV_BATCH) &&
         !strcmp(a->market, "on-demand") && now >= st->review_at_ms;
}

/* A describe's answer rc (inst, which) about attempt `asked` (as it was
 * when asked; nd its gang's nodes): applied to the attempt as it is stored
 * now, which the live set holds (live_now).  One that moved meanwhile
 * (ended, or started by another way) is left to the next pass's look; no
 * answer within the deadline is "unknown, look again later".  An
 * instance still starting under a provisioning attempt changes nothing
 * whatever the store says now, so it is not even looked up: the attempt
 * is looked at later.  The job's row is read only when the answer may
 * end the attempt (decide_reads_job), its job's end is unknown, or the
 * live set cannot be read. */
static int describe_answer(struct tw_sched *s, struct tw_provider *p,
                           const struct tw_attempt_rec *asked,
                           struct sched_nodes nd, bool agent_lost,
                           enum tw_rc rc, const struct tw_instance *inst,
                           const char *which, bool timed_out, int64_t now) {
  if (!timed_out && rc == TW_OK && !agent_lost && !nd.n &&
      inst->state == TW_INST_PENDING && !inst->finished &&
      asked->state == TW_ATTEMPT_PROVISIONING) {
    struct sched_att *st = att_find(follow_of(s), asked->id);
    if (st && !(st->notice_deadline_ms && now >= st->notice_deadline_ms)) {
      sched__run_times(st, inst);
      poll_later(s, st, asked, now);
      return 0;
    }
  }
  struct tw_err err = {0};
  struct tw_job_rec job;
  bool have_job = false;
  int changes = 0;
  struct tw_attempt_rec *mine = NULL;
  size_t n = 0;
  const struct tw_attempt_rec *a = NULL;
  struct tw_attempt_rec held;
  bool job_ended = false, ended_known = false, known = false;
  struct pcache *pc = sched__provider(s, asked->provider);
  if (live_now(s, asked->id, &held, &job_ended, &ended_known, &known))
    a = &held;
  else if (known)
    goto out; /* ended meanwhile */
  if (a && ended_known && job_ended)
    goto out; /* its job ended: give_back's */
  if (!a || !ended_known || !pc || agent_lost ||
      (!timed_out &&
       decide_reads_job(pc, a, att_get(s, a, now), rc, inst, now))) {
    /* the job as stored now, and the attempt too when the set failed */
    if (tw_store_job_get(s->store, asked->job_id, &job, &err))
      goto out;
    have_job = true;
    if (!a && tw_store_attempts_of(s->store, job.id, &mine, &n, &err) == TW_OK)
      for (size_t i = 0; i < n; i++)
        if (mine[i].id == asked->id)
          a = &mine[i];
    if (tw_job_state_terminal(job.state))
      goto out;
  }
  if (!a || !pc || a->state != asked->state ||
      strcmp(a->instance_id, asked->instance_id))
    goto out;
  struct sched_att *st = att_get(s, a, now);
  if (timed_out) {
    tw_log_info("sched",
                "job=%s attempt=%d describe unanswered within %lld ms; "
                "looked at again later",
                a->job_id, a->n, (long long)tw_provider_call_deadline_ms(p));
    poll_later(s, st, a, now);
    goto out;
  }
  if (agent_lost) {
    /* its agent went silent: agent_follow.c decides */
    struct sched_agent_step ag;
    changes = sched__agent_lost_applied(s, a, nd, st, rc, inst, now, &ag);
    if (ag.end_after_terminate)
      changes += end_after_terminate(s, pc, a, nd, st, ag.end_why, now);
    goto out;
  }
  changes = decide(s, pc, have_job ? &job : NULL, a, nd, st, rc, inst, which,
                   now);
out:
  free(mine);
  if (have_job)
    tw_job_rec_release(&job);
  return changes;
}

/* A call past its deadline is abandoned, not finished: its worker may
 * still be writing the answer fields, so they are not read then (only
 * what the scheduler put in the call before it was sent). */
static int describe_applied(struct tw_sched *s, const struct sched_call *c,
                            bool timed_out, int64_t now) {
  int changes = 0;
  if (c->n_batch) {
    for (size_t i = 0; i < c->n_batch; i++)
      changes += describe_answer(
          s, c->p, &c->batch[i], (struct sched_nodes){0}, false,
          timed_out ? TW_E_RETRYABLE : c->b_rc[i],
          timed_out ? NULL : &c->b_inst[i], c->batch[i].instance_id,
          timed_out, now);
  } else {
    changes = describe_answer(s, c->p, &c->a,
                              (struct sched_nodes){c->g, c->n_g}, c->agent_lost,
                              timed_out ? TW_E_RETRYABLE : c->rc,
                              timed_out ? NULL : &c->inst, c->which, timed_out,
                              now);
  }
  if (!timed_out)
    ending_send(s); /* what it finished is given back in this pass */
  return changes;
}

static int notices_applied(struct tw_sched *s, struct sched_call *c,
                           bool timed_out, int64_t now);

int sched__follow_applied(struct tw_sched *s, struct sched_call *c,
                          bool timed_out, int64_t now) {
  (void)now;
  if (c->kind == SCHED_CALL_DESCRIBE)
    return describe_applied(s, c, timed_out, now);
  if (c->kind == SCHED_CALL_NOTICES)
    return notices_applied(s, c, timed_out, now);
  if (c->end_after)
    return ended_after_terminate(s, c, timed_out, now);
  if (!c->cancel) {
    ending_applied(s, c, timed_out);
    return 0;
  }
  /* a cancelled job's instances: the attempt is closed once they are
   * confirmed gone; no answer, or a failure, and the next pass tries
   * again */
  if (timed_out || c->rc) {
    tw_log_info("sched",
                "job=%s attempt=%d instances not confirmed terminated (%s); "
                "tried again",
                c->a.job_id, c->a.n,
                timed_out ? "no answer within the deadline" : tw_rc_str(c->rc));
    return 0;
  }
  struct tw_err err = {0};
  for (size_t i = 0; i < c->n_g; i++)
    if (c->g[i].k > 0)
      tw_store_attempt_instance_put(s->store, c->a.id, c->g[i].k,
                                    c->g[i].instance_id, "terminated", &err);
  int64_t ran_from = 0;
  if (s->follow)
    for (size_t i = 0; i < s->follow->n; i++)
      if (s->follow->a[i].attempt_id == c->a.id) {
        if (c->seen)
          sched__run_times(&s->follow->a[i], &c->inst);
        ran_from = s->follow->a[i].ran_from_ms;
      }
  if (!ran_from && c->seen && c->inst.running_ms > 0)
    ran_from = c->inst.running_ms;
  /* a gang's nodes, every one of them (the call held only those up) */
  struct tw_attempt_instance *g = NULL;
  size_t nodes = 0;
  if (tw_store_attempt_instances(s->store, c->a.id, &g, &nodes, &err))
    nodes = 0;
  free(g);
  if (c->nodes > 0 && (size_t)c->nodes > nodes)
    nodes = (size_t)c->nodes; /* one batch job for a gang: no rows */
  return close_ended(s, &c->a, nodes, c->job_succeeded, ran_from);
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

/* On the worker: the account's notices in force. */
static void notices_run(struct sched_call *c) {
  c->rc = tw_provider_poll_events(c->p, &c->ev, &c->err);
}

/* The pseudo attempt id of account i's notice poll, for sched__call_busy:
 * one poll in flight per account (attempt ids are positive). */
static int64_t notices_key(size_t i) { return -(int64_t)(i + 1); }

/* Sends each account's notice poll to its workers when one is due: none
 * in flight (an abandoned one included) and notice_poll_ms passed since
 * the last one was sent.  The poll costs the cloud requests per live
 * instance (EC2: two metadata documents each), which is why it is never
 * made on the scheduler's thread. */
static void notices_send(struct tw_sched *s) {
  int64_t mono = sched__mono_ms();
  for (size_t i = 0; i < s->n_pc && !sched__stopping(s); i++) {
    struct pcache *pc = &s->pc[i];
    if (!tw_provider_supports(pc->p, TW_PROV_EVENTS) ||
        mono < pc->notices_next_ms || sched__call_busy(s, notices_key(i)) ||
        !sched__call_room(s, pc))
      continue;
    struct sched_call *c = tw_calloc(1, sizeof *c);
    c->kind = SCHED_CALL_NOTICES;
    c->run = notices_run;
    c->p = pc->p;
    c->attempt_id = notices_key(i);
    tw_event_list_init(&c->ev);
    if (!sched__call_submit(s, pc, c)) {
      sched__call_free(s, c);
      continue;
    }
    pc->notices_next_ms = mono + tw_provider_notice_poll_ms(pc->p);
  }
}

/* A notice poll answered: each notice matched to the live attempt whose
 * instance (or gang node) it names, on the poll's account, read now. */
static int notices_applied(struct tw_sched *s, struct sched_call *c,
                           bool timed_out, int64_t now) {
  if (timed_out || c->rc) {
    if (!timed_out)
      tw_log_warn("spot", "provider=%s notices not read: %s",
                  tw_provider_account(c->p), c->err.msg);
    return 0;
  }
  if (!c->ev.n)
    return 0;
  struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  struct tw_err err = {0};
  if (tw_store_attempts_live(s->store, &live, &n_live, &err)) {
    tw_log_warn("spot", "notices not matched: %s", err.msg);
    return 0;
  }
  struct tw_attempt_instance *g = NULL;
  size_t n_g = 0;
  if (tw_store_attempt_instances(s->store, 0, &g, &n_g, &err))
    tw_log_warn("spot", "gang nodes unreadable: %s", err.msg);
  const char *account = tw_provider_account(c->p);
  for (size_t e = 0; e < c->ev.n; e++)
    for (size_t k = 0; k < n_live; k++)
      if (notice_is_of(&live[k], nodes_of(g, n_g, live[k].id),
                       c->ev.items[e].instance_id) &&
          !strcmp(live[k].provider, account)) {
        struct sched_att *st = att_get(s, &live[k], now);
        if (sched__spot_notice(s, &live[k], st, &c->ev.items[e], now))
          poll_soon(s, st, now);
      }
  free(g);
  free(live);
  return 0;
}

/* A provisioning or running job whose attempts all ended without moving
 * it (a late failure closed the attempt that owned its instance, a crash
 * between two writes): placed again, unless its last attempt completed,
 * when it is finished as that attempt said.  Returns state changes. */
static int repair_started(struct tw_sched *s, const struct tw_job_rec *job,
                          const struct tw_attempt_rec *last, int64_t now) {
  struct tw_err err = {0};
  int changes = 0;
  if (last && !strcmp(last->end_reason, "completed")) {
    if (job->state == TW_JOB_PROVISIONING) {
      struct tw_job_transition t = {
          .id = job->id,
          .to = TW_JOB_RUNNING,
          .reason = "its attempt completed before it was seen running"};
      if (tw_store_job_transition(s->store, &t, NULL, &err))
        return 0;
      changes++;
    }
    struct tw_job_transition t = {
        .id = job->id,
        .to = TW_JOB_SUCCEEDED,
        .reason = "its attempt completed; the job's move was not recorded"};
    if (tw_store_job_transition(s->store, &t, NULL, &err) == TW_OK)
      changes++;
    return changes;
  }
  if (job->state == TW_JOB_PROVISIONING) {
    /* nothing ran: back to the queue (provisioning -> placing -> pending) */
    struct tw_job_transition t = {
        .id = job->id,
        .to = TW_JOB_PLACING,
        .reason = "its attempt ended without an instance; placing again"};
    if (tw_store_job_transition(s->store, &t, NULL, &err))
      return 0;
    struct tw_job_transition p = {
        .id = job->id,
        .to = TW_JOB_PENDING,
        .reason = "its attempt ended without an instance; waiting to place "
                  "again"};
    tw_store_job_transition(s->store, &p, NULL, &err);
    return 2;
  }
  /* it ran: what it kept is what an interruption keeps */
  struct tw_job_transition t = {
      .id = job->id,
      .to = TW_JOB_INTERRUPTED,
      .reason = "its attempt ended without moving the job; placing again"};
  if (tw_store_job_transition(s->store, &t, NULL, &err))
    return 0;
  return 1 + sched__spot_to_recovering(s, job->id, now);
}

/* FNV-1a of a job id. */
static size_t job_hash(const char *id) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *id; id++)
    h = (h ^ (unsigned char)*id) * 0x100000001b3ull;
  return (size_t)(h ^ (h >> 29));
}

/* 3. jobs left half way: every non-terminal state but pending (which
 * placement serves) without a live attempt.  A restart between two
 * writes, or a late answer that closed the attempt that owned the
 * instance, leaves them; nothing else would ever pick them up.  Each pass
 * reads at most max_place jobs of each state. */
static int sweep(struct tw_sched *s, const struct tw_attempt_rec *live,
                 size_t n_live, int64_t now) {
  static const enum tw_job_state STATES[] = {
      TW_JOB_PLACING, TW_JOB_PROVISIONING, TW_JOB_RUNNING, TW_JOB_INTERRUPTED,
      TW_JOB_RECOVERING};
  int changes = 0;
  /* the live attempts' jobs in a hash set: a lookup each rather than a
   * scan, built in one walk */
  size_t cap = 64;
  while (cap < n_live * 2)
    cap *= 2;
  const char **live_jobs = tw_calloc(cap, sizeof *live_jobs);
  for (size_t l = 0; l < n_live; l++) {
    size_t i = job_hash(live[l].job_id) & (cap - 1);
    while (live_jobs[i] && strcmp(live_jobs[i], live[l].job_id))
      i = (i + 1) & (cap - 1);
    live_jobs[i] = live[l].job_id;
  }
  for (size_t k = 0; k < sizeof STATES / sizeof STATES[0]; k++) {
    struct tw_job_rec *jobs = NULL;
    size_t n = 0;
    struct tw_err err = {0};
    if (tw_store_jobs_queued(s->store, STATES[k], s->max_place, &jobs, &n,
                             &err))
      continue;
    for (size_t i = 0; i < n; i++) {
      bool has_live = false;
      for (size_t h = job_hash(jobs[i].id) & (cap - 1); live_jobs[h] && !has_live;
           h = (h + 1) & (cap - 1))
        has_live = !strcmp(live_jobs[h], jobs[i].id);
      /* attempts opened during this pass are not in live: read again */
      struct tw_attempt_rec *mine = NULL;
      size_t n_mine = 0;
      bool read = false;
      if (!has_live && tw_store_attempts_of(s->store, jobs[i].id, &mine,
                                            &n_mine, &err) == TW_OK) {
        read = true;
        for (size_t l = 0; l < n_mine && !has_live; l++)
          has_live = mine[l].state != TW_ATTEMPT_ENDED;
        /* an interrupted attempt's instance being terminated: the job is
         * placed again by that call's answer */
        if (n_mine && sched__call_busy(s, mine[n_mine - 1].id))
          has_live = true;
      }
      if (!has_live && read) {
        /* the job's state may have moved since the list was read */
        struct tw_job_rec now_job;
        bool same =
            tw_store_job_get(s->store, jobs[i].id, &now_job, &err) == TW_OK;
        if (same) {
          same = now_job.state == jobs[i].state;
          tw_job_rec_release(&now_job);
        }
        if (same) {
          tw_log_info("spot",
                      "job=%s found %s without a live attempt; resuming",
                      jobs[i].id, tw_job_state_str(jobs[i].state));
          if (jobs[i].state == TW_JOB_PLACING) {
            struct tw_job_transition t = {
                .id = jobs[i].id,
                .to = TW_JOB_PENDING,
                .reason = "placement was cut short; waiting to place again"};
            if (tw_store_job_transition(s->store, &t, NULL, &err) == TW_OK)
              changes++;
          } else if (jobs[i].state == TW_JOB_PROVISIONING ||
                     jobs[i].state == TW_JOB_RUNNING) {
            changes += repair_started(s, &jobs[i],
                                      n_mine ? &mine[n_mine - 1] : NULL, now);
          } else if (jobs[i].state == TW_JOB_INTERRUPTED) {
            changes += sched__spot_to_recovering(s, jobs[i].id, now);
          } else {
            changes += sched__spot_recover(s, jobs[i].id, now);
          }
        }
      }
      free(mine);
      tw_job_rec_release(&jobs[i]);
    }
    free(jobs);
  }
  free(live_jobs);
  return changes;
}

int sched__follow(struct tw_sched *s, int64_t now) {
  const struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  struct tw_err err = {0};
  int changes = 0;
  /* read before the attempts: a report stored after this is seen at the
   * next pass (sched__agent_quiet) */
  s->agent_news = s->agent ? tw_agent_news(s->agent) : 0;
  /* the live attempts as the store has them now, read again only where
   * its writes changed them (sched__live) */
  if (sched__live(s, &live, &n_live, &err) == TW_OK) {
    /* the nodes of the live gangs, read once per pass */
    struct tw_attempt_instance *g = NULL;
    size_t n_g = 0;
    if (tw_store_attempt_instances(s->store, 0, &g, &n_g, &err))
      tw_log_warn("spot", "gang nodes unreadable: %s", err.msg);
    notices_send(s); /* answered at this pass's end, or a later one */
    /* the live attempts whose job ended (cancelled, mostly), kept with
     * them: the others' jobs are read only when something is to be
     * decided */
    const int64_t *ended = s->follow->lv_ended;
    size_t n_ended = s->follow->n_lv_ended;
    bool ended_known = s->follow->lv_ended_known;
    size_t e = 0;
    /* describes go to the accounts' workers; a drain stops the pass
     * between two attempts (the ones not looked at are followed by the
     * next start; nothing of theirs is lost) */
    s->follow->hint = 0;
    for (size_t i = 0; i < n_live && !sched__stopping(s); i++) {
      /* both ascending by id */
      while (e < n_ended && ended[e] < live[i].id)
        e++;
      bool job_ended = e < n_ended && ended[e] == live[i].id;
      changes += follow_attempt(s, &live[i], nodes_of(g, n_g, live[i].id),
                                job_ended, ended_known, now);
    }
    describes_flush(s);
    ending_send(s); /* the terminates still owed, this pass's included */
    free(g);
    att_prune(s);
    struct sched_follow *m = s->follow;
    int64_t mono = sched__mono_ms();
    if (m->sweep_owed || mono - m->swept_ms >= SWEEP_MS) {
      m->sweep_owed = false;
      m->swept_ms = mono;
      changes += sweep(s, live, n_live, now);
    }
  }
  return changes;
}

int sched__follow_flush(struct tw_sched *s) {
  size_t n = s->n_runs;
  if (!n)
    return 0;
  struct tw_attempt_running *rs = tw_calloc(n, sizeof *rs);
  enum tw_rc *rc = tw_calloc(n, sizeof *rc);
  struct tw_err *err = tw_calloc(n, sizeof *err);
  for (size_t i = 0; i < n; i++)
    rs[i] = (struct tw_attempt_running){
        .attempt_id = s->runs[i].attempt_id,
        .at_ms = s->runs[i].at_ms,
        .job_id = s->runs[i].job_id,
        .note = s->runs[i].note[0] ? s->runs[i].note : NULL};
  tw_store_attempt_running_many(s->store, rs, n, rc, err);
  int done = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc[i] == TW_OK)
      done++;
    else /* moved meanwhile (ended, cancelled): the next look decides */
      tw_log_info("sched", "job=%s attempt running not recorded: %s",
                  s->runs[i].job_id, err[i].msg);
  }
  s->n_runs = 0;
  free(rs);
  free(rc);
  free(err);
  return done;
}
