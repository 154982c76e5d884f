/* monitor.c - the spot lifecycle's part of the scheduler: follows every
 * live attempt to its end, reacts to interruption notices and
 * interruptions, places the job again through its fallback strategy,
 * keeps the blocklist, and picks up jobs a restart left half way.
 *
 *   running -> interrupted -> recovering -> provisioning -> running
 *
 * Polling is adaptive: an attempt whose instance is starting, has a notice
 * out or changed at the last look is described every pass; a quiet one
 * less and less often, up to SPOT_POLL_MAX_MS (spot) or OD_POLL_MAX_MS
 * (on-demand, which nobody takes away).  Notices are polled every pass:
 * they are what gives the job time to checkpoint.  See docs/spot.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/sched/blocklist.h"
#include "broker/sched/checkpoint.h"
#include "policies/place/cost.h"
#include "broker/base/log.h"
#include "providers/provider.h"
#include "broker/sched/sched_int.h"

/* Run time assumed on the fake clouds for a job that gives no duration. */
#define DEFAULT_RUN_S 60
/* Quiet attempts are described at least this often. */
#define SPOT_POLL_MAX_MS 30000
#define OD_POLL_MAX_MS 120000
/* A notice without a deadline (none known): assume the shortest any cloud
 * gives (Azure's Preempt event: at least 30 s). */
#define NOTICE_DEFAULT_LEAD_MS 30000

/* What the monitor remembers of one live attempt, in memory only: a
 * restart starts afresh (every attempt is described at the first pass, and
 * notices are reported again by the providers until their instance goes). */
struct att_state {
  int64_t attempt_id;
  int64_t next_poll_ms, interval_ms;
  int64_t notice_noticed_ms; /* the notice being acted on; 0 none */
  int64_t notice_deadline_ms;
  int64_t resume_s; /* progress it started from; -1 unknown */
  int64_t review_at_ms;
  bool blocked; /* its offer was blocklisted at the notice */
  bool seen;    /* live at this pass */
};

struct spot_state {
  struct att_state *a;
  size_t n, cap;
  int64_t offer_block_ms; /* the blocklist's time for one offer */
};

/* ---- life cycle ---------------------------------------------------------- */

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
        (s->tick_ms > SPOT_POLL_MAX_MS ? s->tick_ms : SPOT_POLL_MAX_MS) / 1000;
  s->spot = tw_calloc(1, sizeof *s->spot);
  s->spot->offer_block_ms = o->blocklist && o->blocklist->offer_ms > 0
                                ? o->blocklist->offer_ms
                                : 10 * 60 * 1000;
}

void sched__spot_free(struct tw_sched *s) {
  tw_blocklist_free(s->blocklist);
  if (s->spot)
    free(s->spot->a);
  free(s->spot);
}

static struct att_state *att_get(struct tw_sched *s,
                                 const struct tw_attempt_rec *a, int64_t now) {
  struct spot_state *m = s->spot;
  for (size_t i = 0; i < m->n; i++)
    if (m->a[i].attempt_id == a->id) {
      m->a[i].seen = true;
      return &m->a[i];
    }
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 32;
    m->a = tw_realloc(m->a, m->cap * sizeof *m->a);
  }
  struct att_state *st = &m->a[m->n++];
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
  struct spot_state *m = s->spot;
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->a[i].seen) {
      m->a[i].seen = false;
      m->a[k++] = m->a[i];
    }
  m->n = k;
}

/* Describe at once next pass (something moved). */
static void poll_soon(struct tw_sched *s, struct att_state *st, int64_t now) {
  st->interval_ms = s->tick_ms;
  st->next_poll_ms = now;
}

/* Nothing changed: look again later, twice as late as last time. */
static void poll_later(struct tw_sched *s, struct att_state *st,
                       const struct tw_attempt_rec *a, int64_t now) {
  int64_t max = !strcmp(a->market, "spot") ? SPOT_POLL_MAX_MS : OD_POLL_MAX_MS;
  if (max < s->tick_ms)
    max = s->tick_ms;
  st->interval_ms = st->interval_ms * 2 > max ? max : st->interval_ms * 2;
  if (st->notice_deadline_ms)
    st->interval_ms = s->tick_ms;
  st->next_poll_ms = now + st->interval_ms;
}

/* ---- gangs -----------------------------------------------------------------
 */

/* The nodes of one live attempt: a slice of the pass's list (none for an
 * attempt of one instance). */
struct nodes {
  const struct tw_attempt_instance *g;
  size_t n;
};

static struct nodes nodes_of(const struct tw_attempt_instance *all,
                             size_t n_all, int64_t attempt_id) {
  struct nodes r = {0};
  for (size_t i = 0; i < n_all; i++)
    if (all[i].attempt_id == attempt_id) {
      if (!r.g)
        r.g = &all[i];
      r.n++;
    }
  return r;
}

/* Terminates every instance of attempt a: its one instance, or each node
 * of its gang (each recorded as terminated).  The first failure is
 * returned; the others are still tried. */
static enum tw_rc terminate_all(struct tw_sched *s, struct pcache *pc,
                                const struct tw_attempt_rec *a, struct nodes nd,
                                struct tw_err *err) {
  if (!nd.n)
    return a->instance_id[0] ? tw_provider_terminate(pc->p, a->instance_id, err)
                             : TW_OK;
  enum tw_rc first = TW_OK;
  for (size_t i = 0; i < nd.n; i++) {
    if (!strcmp(nd.g[i].state, "terminated"))
      continue;
    struct tw_err terr = {0};
    enum tw_rc rc = tw_provider_terminate(pc->p, nd.g[i].instance_id, &terr);
    if (rc == TW_OK)
      tw_store_attempt_instance_put(s->store, a->id, nd.g[i].k,
                                    nd.g[i].instance_id, "terminated", &terr);
    else if (!first) {
      first = rc;
      if (err)
        *err = terr;
    }
  }
  return first;
}

/* Describes attempt a's instances as one: the first node gone (or
 * unknown: TW_E_NOTFOUND) decides, else one still starting, else all run.
 * *which names the instance that decided. */
static enum tw_rc describe_all(struct pcache *pc,
                               const struct tw_attempt_rec *a, struct nodes nd,
                               struct tw_instance *out, char which[128],
                               struct tw_err *err) {
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

/* ---- helpers ---------------------------------------------------------------
 */

/* The offer of a past attempt: from the current offers, else rebuilt from
 * its id (enough for the blocklist's keys). */
static struct tw_offer offer_of(struct tw_sched *s,
                                const struct tw_attempt_rec *a) {
  const struct tw_offer *o = sched__offer(s, a->offer_id);
  if (o)
    return *o;
  struct tw_offer r;
  tw_offer_init(&r);
  TW_SET(r.id, a->offer_id);
  TW_SET(r.account, a->provider);
  char f[5][TW_MODEL_NAME_MAX] = {{0}};
  const char *p = a->offer_id;
  for (int i = 0; i < 5 && p; i++) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    snprintf(f[i], sizeof f[i], "%.*s", (int)n, p);
    p = c ? c + 1 : NULL;
  }
  TW_SET(r.region, f[1]);
  TW_SET(r.zone, f[2]);
  TW_SET(r.instance_type, f[3]);
  r.market = !strcmp(a->market, "spot") ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
  return r;
}

static enum tw_fallback_kind kind_of(struct tw_sched *s,
                                     const struct tw_job_spec *spec) {
  enum tw_fallback_kind k;
  if (spec->fallback && tw_fallback_parse(spec->fallback, &k))
    return k;
  return s->fallback.kind;
}

static int64_t work_of(const struct tw_job_spec *spec) {
  return spec->duration_s > 0 ? spec->duration_s : TW_COST_DEFAULT_DURATION_S;
}

static int64_t resume_of(struct tw_sched *s, const char *job_id) {
  int64_t kept = 0;
  struct tw_err err = {0};
  if (tw_checkpoint_progress(s->store, job_id, &kept, &err))
    tw_log_warn("spot", "job=%s progress unknown: %s", job_id, err.msg);
  return kept;
}

/* Fills the strategy's view of job from its spec and attempts. */
static void job_view(struct tw_sched *s, const struct tw_job_rec *job,
                     const struct tw_job_spec *spec,
                     const struct tw_attempt_rec *past, size_t n_past,
                     int64_t now, struct tw_fallback_job *j,
                     char region[TW_MODEL_NAME_MAX],
                     char zone[TW_MODEL_NAME_MAX]) {
  memset(j, 0, sizeof *j);
  region[0] = zone[0] = '\0';
  j->now_ms = now;
  j->submitted_ms = job->created_ms;
  j->deadline_ms = spec->deadline_ms;
  j->work_s = work_of(spec);
  j->done_s = resume_of(s, job->id);
  j->spec_market = spec->market;
  j->current_market = TW_MARKET_ANY;
  for (size_t i = 0; i < n_past; i++) {
    if (!strcmp(past[i].end_reason, "interrupted"))
      j->interruptions++;
    if (past[i].instance_id[0]) {
      /* the last attempt that got an instance says where the job was */
      struct tw_offer o = offer_of(s, &past[i]);
      snprintf(region, TW_MODEL_NAME_MAX, "%s", o.region);
      snprintf(zone, TW_MODEL_NAME_MAX, "%s", o.zone);
      j->current_market = o.market;
    }
  }
  j->region = region;
  j->zone = zone;
}

static void record_decision(struct tw_sched *s, const char *job_id,
                            enum tw_fallback_event ev,
                            const struct tw_fallback_decision *d, int64_t now) {
  static const char *const EV[] = {"place", "interrupted", "review"};
  static const char *const ACT[] = {"place", "stay", "move"};
  struct tw_ckpt_decision r = {.at_ms = now};
  snprintf(r.job_id, sizeof r.job_id, "%s", job_id);
  snprintf(r.event, sizeof r.event, "%s", EV[ev]);
  snprintf(r.strategy, sizeof r.strategy, "%s", tw_fallback_name(d->kind));
  snprintf(r.action, sizeof r.action, "%s", ACT[d->action]);
  snprintf(r.market, sizeof r.market, "%s",
           d->market == TW_MARKET_SPOT && d->then_on_demand
               ? "spot>on-demand"
               : tw_market_str(d->market));
  snprintf(r.reason, sizeof r.reason, "%s", d->reason);
  struct tw_err err = {0};
  bool added = false;
  if (tw_checkpoint_decision_add(s->store, &r, &added, &err))
    tw_log_warn("spot", "job=%s decision not recorded: %s", job_id, err.msg);
  else if (added)
    tw_log_info("spot", "job=%s strategy=%s event=%s %s", job_id, r.strategy,
                r.event, d->reason);
}

/* Ids of the offers the blocklist covers now, appended to *ids (grown). */
static void blocked_ids(struct tw_sched *s, int64_t now, const char ***ids,
                        size_t *n) {
  struct tw_blocklist_snap snap;
  tw_blocklist_snapshot(s->blocklist, now, &snap);
  if (snap.n) {
    size_t cap = *n + 1;
    for (size_t i = 0; i < s->all.n; i++)
      if (tw_blocklist_snap_match(&snap, &s->all.items[i], now)) {
        if (*n + 1 >= cap) {
          cap = cap * 2 + 16;
          *ids = tw_realloc((void *)*ids, cap * sizeof **ids);
        }
        (*ids)[(*n)++] = s->all.items[i].id;
      }
  }
  tw_blocklist_snap_release(&snap);
}

/* ---- placement hooks (called by sched.c) -----------------------------------
 */

bool sched__spot_excludes(const struct tw_sched *s,
                          const struct tw_attempt_rec *past, int64_t now) {
  if (!strcmp(past->end_reason, "rejected"))
    return true;
  /* The blocklist keeps every job off a failed offer for a while; this is
   * the job's own memory of it, which survives a restart (ended_ms is
   * stored).  Forever would starve a long job of offers. */
  if (!strcmp(past->end_reason, "capacity") ||
      !strcmp(past->end_reason, "interrupted"))
    return now - past->ended_ms < s->spot->offer_block_ms;
  return false;
}

void sched__spot_plan(struct tw_sched *s, const struct tw_job_rec *job,
                      struct tw_job_spec *spec,
                      const struct tw_attempt_rec *past, size_t n_past,
                      int64_t now, const char ***excl, size_t *n_excl,
                      struct spot_plan *plan) {
  memset(plan, 0, sizeof *plan);
  blocked_ids(s, now, excl, n_excl);
  struct tw_fallback_job j;
  char zone[TW_MODEL_NAME_MAX];
  job_view(s, job, spec, past, n_past, now, &j, plan->region, zone);
  /* a job recovering from an interruption is placed as the strategy says
   * for interruptions; anything else (first placement, after capacity
   * errors, after a move) is an ordinary placement */
  plan->event = TW_FB_PLACE;
  if (job->state == TW_JOB_RECOVERING && n_past &&
      !strcmp(past[n_past - 1].end_reason, "interrupted"))
    plan->event = TW_FB_INTERRUPTED;
  j.event = plan->event;
  j.region = plan->region;
  tw_fallback_decide(&s->fallback, kind_of(s, spec), &j, &plan->d);
  /* a job moved off on-demand for spot goes back to on-demand at once
   * when the spot launch fails: it gave up a running instance for this */
  if (n_past && !strcmp(past[n_past - 1].end_reason, "moved") &&
      plan->d.market == TW_MARKET_SPOT)
    plan->d.then_on_demand = true;
  spec->market = plan->d.rank_market;
}

void sched__spot_order(struct tw_sched *s, const struct tw_job_rec *job,
                       const struct spot_plan *plan, struct tw_plan *pl,
                       char *explain, size_t explain_sz, int64_t now) {
  size_t before = pl->n;
  if (!before)
    return; /* nothing fits at all: the counts say why */
  struct tw_cand *all = tw_malloc(before * sizeof *all);
  memcpy(all, pl->cands, before * sizeof *all);
  tw_fallback_apply(&plan->d, plan->region, pl);
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", explain);
  struct tw_fallback_decision d = plan->d;
  if (!pl->n && d.market == TW_MARKET_ON_DEMAND) {
    /* Nothing on-demand fits at all (a provider that sells spot only, say):
     * running on spot beats never running. */
    free(pl->cands);
    pl->cands = all;
    pl->n = before;
    all = NULL;
    d.market = TW_MARKET_ANY;
    tw_fallback_apply(&d, plan->region, pl);
    size_t len = strlen(d.reason);
    snprintf(d.reason + len, sizeof d.reason - len,
             "; no on-demand offer fits, so spot");
  }
  free(all);
  if (!pl->n)
    /* No numbers in this text: a job waiting pass after pass keeps the same
     * reason, and the same reason is not recorded twice. */
    snprintf(explain, explain_sz, "%s; %s strategy: %s", tmp,
             tw_fallback_name(plan->d.kind),
             plan->d.market == TW_MARKET_SPOT
                 ? "no spot offer is placeable now and the job is ahead of its"
                   " deadline, so it waits for spot"
                 : "none of them is in the market it chose");
  else
    snprintf(explain, explain_sz, "%s; %s", d.reason, tmp);
  if (pl->n)
    record_decision(s, job->id, plan->event, &d, now);
}

void sched__spot_launch_ok(struct tw_sched *s, const struct tw_offer *o,
                           int64_t now) {
  tw_blocklist_report_ok(s->blocklist, o, now);
}

void sched__spot_launch_failed(struct tw_sched *s, const struct tw_offer *o,
                               enum tw_rc rc, int64_t now) {
  if (rc != TW_E_CAPACITY && rc != TW_E_QUOTA)
    return;
  enum tw_block_scope w;
  tw_blocklist_report(s->blocklist, o, TW_BLOCK_CAPACITY, now, &w);
  if (w != TW_BLOCK_OFFER)
    tw_log_info("spot",
                "offer=%s %s blocklisted after repeated capacity errors", o->id,
                tw_block_scope_str(w));
}

const char *sched__spot_user_data(struct tw_sched *s,
                                  const struct tw_job_rec *job,
                                  const struct tw_job_spec *spec,
                                  const struct tw_attempt_rec *a,
                                  const struct tw_offer *o,
                                  struct tw_buf *out) {
  if (!spec->checkpoint_uri && !spec->checkpoint_interval_s)
    return spec->run;
  /* resume_s comes from attempts that ended before this one was opened,
   * so it is the same every time this attempt is launched */
  struct pcache *pc = sched__provider(s, o->account);
  struct tw_ckpt_env e = {.job_id = job->id,
                          .attempt = a->n,
                          .uri = spec->checkpoint_uri,
                          .interval_s = spec->checkpoint_interval_s,
                          .resume_s = resume_of(s, job->id),
                          .info = pc ? tw_provider_info(pc->p) : NULL};
  tw_checkpoint_script(&e, spec->run, out);
  return out->data;
}

/* ---- interruptions and recovery -------------------------------------------
 */

/* Places a recovering job at once; when that fails it waits in the queue
 * with the reason. */
static int recover(struct tw_sched *s, const char *job_id, int64_t now) {
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
  if (job.state == TW_JOB_RECOVERING) {
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
static int to_recovering(struct tw_sched *s, const char *job_id, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, job_id, &job, &err))
    return 0;
  struct tw_job_spec spec;
  int changes = 0;
  char reason[300] = "placing again";
  if (sched__parse_spec(&job, &spec)) {
    struct tw_attempt_rec *past = NULL;
    size_t n_past = 0;
    tw_store_attempts_of(s->store, job_id, &past, &n_past, &err);
    struct tw_fallback_job j;
    char region[TW_MODEL_NAME_MAX], zone[TW_MODEL_NAME_MAX];
    job_view(s, &job, &spec, past, n_past, now, &j, region, zone);
    bool interrupted =
        n_past && !strcmp(past[n_past - 1].end_reason, "interrupted");
    j.event = interrupted ? TW_FB_INTERRUPTED : TW_FB_PLACE;
    struct tw_fallback_decision d;
    tw_fallback_decide(&s->fallback, kind_of(s, &spec), &j, &d);
    if (interrupted)
      record_decision(s, job_id, j.event, &d, now);
    snprintf(reason, sizeof reason, "%s", d.reason);
    free(past);
    tw_spec_release(&spec);
  }
  tw_job_rec_release(&job);
  struct tw_job_transition t = {
      .id = job_id, .to = TW_JOB_RECOVERING, .reason = reason};
  if (tw_store_job_transition(s->store, &t, NULL, &err))
    return 0;
  changes++;
  return changes + recover(s, job_id, now);
}

/* Ends attempt a (its instance is gone, or going: end_reason "interrupted",
 * or given up by a move: "moved"), records what it kept, and sends the job
 * through interrupted and recovering to its next placement. */
static int end_and_recover(struct tw_sched *s, const struct tw_attempt_rec *a,
                           struct att_state *st, const char *end_reason,
                           const char *why, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  struct tw_job_spec spec;
  bool have_spec = sched__parse_spec(&job, &spec);
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
      st && st->resume_s >= 0 ? st->resume_s : resume_of(s, a->job_id);
  struct tw_ckpt_calc c = {
      .enabled =
          have_spec && (spec.checkpoint_uri || spec.checkpoint_interval_s),
      .interval_s = have_spec ? spec.checkpoint_interval_s : 0,
      .work_s = have_spec ? work_of(&spec) : resume + run_s,
      .resume_s = resume,
      .run_s = run_s,
      .request_run_s = asked && a->running_ms
                           ? (req.requested_ms - a->running_ms) / 1000
                           : -1,
      .grace_s = asked ? (end - req.requested_ms) / 1000 : 0};
  const char *how = NULL;
  int64_t kept = tw_checkpoint_kept(&c, &how);
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
    struct tw_offer o = offer_of(s, a);
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
                                .job_reason = reason};
  if (have_spec)
    tw_spec_release(&spec);
  if (tw_store_attempt_close(s->store, &cl, &err)) {
    tw_log_warn("sched", "job=%s attempt=%d close failed: %s", a->job_id, a->n,
                err.msg);
    return 0;
  }
  tw_log_info("sched", "job=%s attempt=%d offer=%s %s: %s", a->job_id, a->n,
              a->offer_id, end_reason, reason);
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 1;
  bool interrupted = job.state == TW_JOB_INTERRUPTED;
  tw_job_rec_release(&job);
  /* 4. the strategy decides, and the job is placed again in this pass */
  return 1 + (interrupted ? to_recovering(s, a->job_id, now) : 0);
}

/* ---- one live attempt
 * --------------------------------------------------------- */

/* A deadline job on on-demand: back to spot when its slack allows. */
static int review(struct tw_sched *s, const struct tw_job_rec *job,
                  const struct tw_job_spec *spec,
                  const struct tw_attempt_rec *a, struct nodes nd,
                  struct att_state *st, int64_t now) {
  if (now < st->review_at_ms || strcmp(a->market, "on-demand") ||
      kind_of(s, spec) != TW_FALLBACK_DEADLINE)
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
  job_view(s, job, spec, past, n_past, now, &j, region, zone);
  free(past);
  j.event = TW_FB_REVIEW;
  j.done_s += run_s;
  j.current_market = TW_MARKET_ON_DEMAND;
  /* is a spot offer placeable for it now? */
  struct tw_job_spec spot = *spec;
  spot.market = TW_MARKET_SPOT;
  const char **excl = NULL;
  size_t n_excl = 0;
  blocked_ids(s, now, &excl, &n_excl);
  j.spot_offered = sched__placeable(s, job, &spot, excl, n_excl, now);
  free(excl);
  struct tw_fallback_decision d;
  tw_fallback_decide(&s->fallback, TW_FALLBACK_DEADLINE, &j, &d);
  if (d.action != TW_FB_ACT_MOVE)
    return 0;
  record_decision(s, job->id, TW_FB_REVIEW, &d, now);
  struct tw_ckpt_request req = {.attempt_id = a->id,
                                .job_id = a->job_id,
                                .cause = "move",
                                .requested_ms = now,
                                .deadline_ms = now};
  tw_checkpoint_request(s->store, &req, &err);
  struct pcache *pc = sched__provider(s, a->provider);
  if (!pc || terminate_all(s, pc, a, nd, &err))
    return 0; /* try again at the next review */
  char why[420];
  snprintf(why, sizeof why, "moved off on-demand instance %s: %s",
           a->instance_id, d.reason);
  return end_and_recover(s, a, st, "moved", why, now);
}

/* 3. one live attempt */
static int follow_attempt(struct tw_sched *s, const struct tw_attempt_rec *a,
                          struct nodes nd, int64_t now) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(s->store, a->job_id, &job, &err))
    return 0;
  int changes = 0;
  struct att_state *st = att_get(s, a, now);
  struct pcache *pc = sched__provider(s, a->provider);
  if (!pc) {
    tw_log_warn("sched",
                "job=%s attempt=%d provider=%s is no longer configured",
                a->job_id, a->n, a->provider);
    goto out;
  }
  if (tw_job_state_terminal(job.state)) {
    /* cancelled while the attempt lived: give the instances back */
    if (terminate_all(s, pc, a, nd, &err))
      goto out; /* try again next pass */
    struct tw_attempt_close c = {.attempt_id = a->id,
                                 .end_reason = "cancelled",
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
    if (sched__launch(s, &job, &spec, a, o, 0, "resumed after a restart") ==
        TW_OK)
      changes++;
    else if (job.state == TW_JOB_PLACING) {
      struct tw_job_transition t = {
          .id = job.id,
          .to = TW_JOB_PENDING,
          .reason = "launch failed; waiting to place again"};
      tw_store_job_transition(s->store, &t, NULL, &err);
    }
    tw_spec_release(&spec);
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
      terminate_all(s, pc, a, nd, &err);
    }
    changes += end_and_recover(s, a, st, "interrupted", why, now);
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
    if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
      changes++;
    goto out;
  }
  if (inst.state == TW_INST_TERMINATED || inst.state == TW_INST_SHUTTING_DOWN ||
      inst.state == TW_INST_STOPPED || inst.state == TW_INST_STOPPING ||
      notice_due) {
    char why[520];
    if (notice_due && !tw_instance_state_gone(inst.state)) {
      /* the notice ran out: the provider takes it now whatever it still
       * says, so the job moves on without waiting for that */
      terminate_all(s, pc, a, nd, &err);
      snprintf(why, sizeof why, "instance %s interrupted: its notice ran out",
               nd.n ? "of the gang" : a->instance_id);
    } else {
      snprintf(why, sizeof why, "instance %s interrupted: %s%s%s", which,
               inst.provider_state, inst.state_reason[0] ? ", " : "",
               inst.state_reason);
      if (nd.n) /* a gang runs whole or not at all: the others go too */
        terminate_all(s, pc, a, nd, &err);
    }
    changes += end_and_recover(s, a, st, "interrupted", why, now);
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
    struct tw_job_spec spec;
    if (!sched__parse_spec(&job, &spec))
      goto out;
    if (st->resume_s < 0)
      st->resume_s = resume_of(s, a->job_id);
    /* Nothing executes on the fake clouds: the attempt is done once the
     * work left after what earlier attempts kept has run. */
    int64_t run_s =
        (spec.duration_s > 0 ? spec.duration_s : DEFAULT_RUN_S) - st->resume_s;
    if (run_s < 1)
      run_s = 1;
    int64_t done_at = a->running_ms + run_s * 1000;
    if (now >= done_at) {
      tw_spec_release(&spec);
      if (terminate_all(s, pc, a, nd, &err))
        goto out;
      struct tw_attempt_close c = {
          .attempt_id = a->id,
          .end_reason = "completed",
          .job_to = TW_JOB_SUCCEEDED,
          .job_reason = "ran its expected duration; instance terminated",
          .has_exit = true,
          .exit_code = 0};
      if (tw_store_attempt_close(s->store, &c, &err) == TW_OK)
        changes++;
      goto out;
    }
    int moved = review(s, &job, &spec, a, nd, st, now);
    tw_spec_release(&spec);
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

/* 2. notices */
static void on_notice(struct tw_sched *s, const struct tw_attempt_rec *a,
                      const struct tw_event *ev, int64_t now) {
  struct att_state *st = att_get(s, a, now);
  struct tw_err err = {0};
  char at[40] = "", note[640];
  if (ev->kind != TW_EVENT_INTERRUPTION) {
    snprintf(note, sizeof note, "rebalance recommendation for %s",
             ev->instance_id);
    tw_store_job_note(s->store, a->job_id, note, &err);
    return;
  }
  /* a notice stays in force until its instance goes: act on it once */
  if (st->notice_noticed_ms == ev->noticed_ms && st->notice_deadline_ms)
    return;
  st->notice_noticed_ms = ev->noticed_ms;
  st->notice_deadline_ms =
      ev->deadline_ms ? ev->deadline_ms : now + NOTICE_DEFAULT_LEAD_MS;
  poll_soon(s, st, now);
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
  struct tw_offer o = offer_of(s, a);
  tw_blocklist_report(s->blocklist, &o, TW_BLOCK_INTERRUPTION, now, NULL);
  st->blocked = true;

  struct tw_job_rec job;
  const char *ckpt = "no checkpoint: the job will start over";
  if (tw_store_job_get(s->store, a->job_id, &job, &err) == TW_OK) {
    struct tw_job_spec spec;
    if (sched__parse_spec(&job, &spec)) {
      if (spec.checkpoint_uri || spec.checkpoint_interval_s)
        ckpt = "checkpoint requested";
      tw_spec_release(&spec);
    }
    tw_job_rec_release(&job);
  }
  snprintf(note, sizeof note, "interruption notice for %s: %s at %s; %s",
           ev->instance_id, ev->action[0] ? ev->action : "terminate", at, ckpt);
  tw_store_job_note(s->store, a->job_id, note, &err);
  tw_log_info("spot", "job=%s attempt=%d instance=%s notice deadline=%s",
              a->job_id, a->n, ev->instance_id, at);
}

/* Whether event instance id is one of attempt a's (a gang's: any node). */
static bool notice_is_of(const struct tw_attempt_rec *a, struct nodes nd,
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
              !strcmp(live[k].provider, tw_provider_account(s->pc[i].p)))
            on_notice(s, &live[k], &ev.items[e], now);
    }
    tw_event_list_release(&ev);
  }
}

/* 3b. jobs a restart left half way: an attempt ended but the job's next
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
          changes += to_recovering(s, jobs[i].id, now);
        } else {
          changes += recover(s, jobs[i].id, now);
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
