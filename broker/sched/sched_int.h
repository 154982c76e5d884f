/* sched_int.h - what the scheduler's files share, and nobody else.
 *
 * Five files, and calls between them go one way only, down this order:
 *
 *   loop.c  ->  follow.c  ->  spot.c  ->  place.c  ->  launch.c
 *
 * (agent_follow.c sits between follow.c and spot.c: follow.c calls it for
 * the attempts run by tradewind-agent; it calls spot.c and launch.c.)
 *
 * A file may skip a step down (loop.c calls place.c for the queue and
 * spot.c for its set-up; follow.c and spot.c call launch.c) but never
 * calls one above it: each section of this header below names the file
 * that defines it.
 *
 *   loop.c    the pass: tw_sched_new/start/tick/free, the offers from the
 *             catalog, the order of the steps.
 *   follow.c  every live attempt: notices matched to it, described,
 *             running, completed, vanished, cancelled; jobs a restart left
 *             half way.
 *   spot.c    what an interruption does: the notice (checkpoint request,
 *             blocklist), the attempt ended with the progress it kept, the
 *             strategy's decision (interrupted, review), placed again.
 *   place.c   choosing an offer for a pending (or recovering) job through
 *             the plan code and its fallback strategy; the queue, backfill,
 *             shared replication.
 *   launch.c  one attempt's launch call (gangs all or nothing), the
 *             candidates of one placement tried in order with a move to
 *             the next after a capacity error, and the outcome stored.
 *
 * So one placement crosses files once: place.c hands its ranked
 * candidates to sched__launch_best().  blocklist.c, checkpoint.c and
 * reconcile.c are modules of their own with their own headers.
 *
 * Everything here runs on the scheduler's thread (or the test's, through
 * tw_sched_tick); nothing is shared with other threads except what the
 * borrowed objects (store, catalog, placer, spec cache) guard themselves,
 * and the calls handed to the providers' workers (calls.c), which own
 * copies of all they use until they are collected. */
#ifndef TW_BROKER_SCHED_INT_H
#define TW_BROKER_SCHED_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/base/trace.h"
#include "broker/core/spec.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_checkpoints.h"
#include "broker/core/store_tenancy.h"
#include "broker/sched/sched.h"
#include "policies/fallback/fallback_strategy.h"
#include "policies/place/cost.h"
#include "policies/place/plan.h"
#include "providers/provider.h"

struct tw_blocklist;
struct tw_catalog;
struct tw_placer;
struct tw_netmatrix;
struct sched_place;
struct sched_follow;
struct sched_pool;
struct sched_calls;
struct tw_policy_set;
struct tw_agent;

struct pcache {
  struct tw_provider *p;
  struct tw_offer_list offers;
  int64_t fetched_ms;      /* 0: never */
  struct sched_pool *pool; /* its calls' workers (calls.c) */
  /* follow.c: monotonic ms before which no notice poll is sent (the
   * provider's notice_poll_ms after the last one) */
  int64_t notices_next_ms;
  /* launch.c: launches of this pass's queue waiting for their attempts'
   * batched open (sched__launch_flush), counted against the pool's room */
  size_t deferred;
};

/* obs.c: what /metrics shows of the scheduler (tw_sched_metrics).  Fixed
 * tables under their own mutex: written by the scheduler's thread and the
 * workers, read by the API's. */
#define SCHED_OBS_BUCKETS 14
#define SCHED_OBS_KEYS 64
struct sched_hist {
  char key[96]; /* the label values, "" for an unlabelled histogram */
  uint64_t b[SCHED_OBS_BUCKETS + 1];
  uint64_t count;
  double sum_s;
};
struct sched_count {
  char key[160]; /* label="value",... */
  uint64_t n;
};
struct sched_obs {
  pthread_mutex_t mu;
  struct sched_hist pass;                    /* pass duration */
  struct sched_hist wait[SCHED_OBS_KEYS];    /* per tenant: submit to launch */
  struct sched_hist launch[SCHED_OBS_KEYS];  /* per provider: a launch call */
  struct sched_count counts[SCHED_OBS_KEYS]; /* errors, interruptions, ... */
  size_t n_wait, n_launch, n_counts;
};

struct tw_sched {
  /* sched__mono_ms() when the loop thread last began or finished a pass
   * (0: not started); atomic, read by tw_sched_stalled_ms */
  int64_t beat_ms;
  /* this pass's steps as they are timed (loop.c, place.c: scheduler
   * thread), and the last complete pass's (under mu) */
  struct tw_sched_pass_stats pass, last_pass;
  /* obs.c: spans of placements, launches and provider calls (NULL: none);
   * the job being placed, on the scheduler's thread (its context, for the
   * launch call made while placing it, and its stored traceparent) */
  struct tw_tracer *tracer;
  struct tw_trace_ctx cur_trace;
  char cur_traceparent[64];
  struct sched_obs obs;
  struct tw_store *store;
  struct tw_clock *clock;
  struct pcache *pc;
  size_t n_pc;
  struct tw_offer_list all; /* every provider's offers, for placement */
  int64_t tick_ms, ttl_ms;
  int max_place;
  struct tw_tenancy *tenancy; /* quota filter, reservations, audit */
  struct tw_meter *meter;     /* egress of datasets moved for a launch */
  struct tw_spec_cache *specs;
  bool own_specs;
  /* tradewind-agent (agent.h): the bootstraps of agent-enabled providers'
   * attempts and the reports that end them; NULL: none */
  struct tw_agent *agent;
  /* follow.c: tw_agent_news() as the pass began (agent_follow.c) */
  uint64_t agent_news;

  /* loop.c: the catalog the offers come from, and the version of the
   * snapshot s->all was built from (0: none yet).  A catalog made for
   * this scheduler (none given) is refreshed by the pass and freed with
   * it; the daemon's refreshes on its own threads. */
  struct tw_catalog *cat;
  bool own_cat;
  uint64_t cat_version;

  /* place.c: the policy set in force and where the offer index is
   * published for the REST handlers' plans; borrowed unless own_placer. */
  struct tw_placer *placer;
  bool own_placer;
  struct sched_place *place; /* placement's own state (place.c) */
  /* launch.c: while place.c places the queue, the attempts to open are
   * gathered here and opened in one transaction at the end of the queue
   * (sched__launch_flush), their launches sent then */
  bool batch_opens;
  struct sched_open *opens;
  size_t n_opens, cap_opens;
  /* place.c: the fallback decisions of the queue's pass, stored in that
   * transaction too (sched__fallback_record while s->batch_opens) */
  struct tw_ckpt_decision *decs;
  /* each decision's log trace ids as they were when it was made (its
   * placement span's; empty: untraced), for its line logged at the end */
  struct sched_dec_trace {
    char trace[33], span[17];
  } *dec_trace;
  size_t n_decs, cap_decs;

  /* Jobs whose last launch failed for a reason that is not the offer's
   * (throttled, auth, provider down) wait before the next try, doubling
   * from 1 s to 60 s, so a broken provider is not hammered every pass.
   * In memory only: a restart simply tries at once.  place.c. */
  struct backoff {
    char job_id[TW_JOB_ID_LEN + 1];
    int64_t not_before_ms;
    int64_t delay_ms;
  } * backoff;
  size_t n_backoff, cap_backoff;

  /* The spot lifecycle (docs/spot.md): what failed recently, the default
   * fallback strategy, how long a past attempt keeps a job off its offer,
   * and what follow.c remembers of each live attempt. */
  struct tw_blocklist *blocklist;
  struct tw_fallback_cfg fallback;
  int64_t review_ms;
  int64_t offer_block_ms;
  struct sched_follow *follow;
  /* follow.c: while loop.c applies a collect's answers, the attempts seen
   * running are gathered here and stored together after it
   * (sched__follow_flush): one transaction, not one per attempt */
  bool defer_running;
  struct sched_running {
    int64_t attempt_id, at_ms;
    char job_id[TW_JOB_ID_LEN + 1];
    char note[320]; /* "": none */
  } * runs;
  size_t n_runs, cap_runs;

  /* calls.c: the cloud calls in flight, per account; a pass waits for
   * their completions at most pass_budget_ms (real time). */
  struct sched_calls *calls;
  int64_t pass_budget_ms;
  /* place.c, per pass: the queue had more than the pass may place and
   * the pass sent that many (the next pass follows at once and this one
   * does not wait for its calls: they come back while it places), and
   * the jobs that found every account's pool full (the pass waits for
   * completions to make room, then the next follows at once) */
  bool backlog;
  size_t no_room;
  size_t collected; /* calls.c: calls whose answers were applied */

  pthread_t thread;
  bool started, stopping;
  bool woken; /* tw_sched_wake: the next pass starts without waiting */
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

/* Whether a drain has begun (tw_sched_drain): the pass in progress stops
 * making cloud calls between two of them, so the drain's deadline holds
 * however many live attempts wait for a look.  Any thread. */
static inline bool sched__stopping(struct tw_sched *s) {
  pthread_mutex_lock(&s->mu);
  bool v = s->stopping;
  pthread_mutex_unlock(&s->mu);
  return v;
}

/* ---- lookups every file uses --------------------------------------------- */

static inline struct pcache *sched__provider(struct tw_sched *s,
                                             const char *account) {
  for (size_t i = 0; i < s->n_pc; i++)
    if (!strcmp(tw_provider_account(s->pc[i].p), account))
      return &s->pc[i];
  return NULL;
}

static inline const struct tw_offer *sched__offer(struct tw_sched *s,
                                                  const char *offer_id) {
  for (size_t i = 0; i < s->all.n; i++)
    if (!strcmp(s->all.items[i].id, offer_id))
      return &s->all.items[i];
  return NULL;
}

/* The parsed spec of job from the spec cache (parsed once per version of
 * the job's record); NULL, logged, when the stored text does not parse.
 * Give it back with sched__spec_release(). */
static inline const struct tw_job_spec *
sched__spec(struct tw_sched *s, const struct tw_job_rec *job) {
  struct tw_err err = {0};
  const struct tw_job_spec *spec = tw_spec_cache_acquire(s->specs, job, &err);
  enum tw_fallback_kind k;
  if (!spec) {
    tw_log_error("sched", "job=%s stored spec does not parse: %s", job->id,
                 err.msg);
  } else if (spec->fallback && !tw_fallback_parse(spec->fallback, &k)) {
    /* The cache parses without the fallback table (the core cannot see
     * it): a strategy the table lacks is refused here, loudly, rather
     * than run as the default. */
    tw_log_error("sched",
                 "job=%s stored spec names fallback \"%s\", which "
                 "is no strategy of the fallback table",
                 job->id, spec->fallback);
    tw_spec_cache_release(s->specs, spec);
    spec = NULL;
  }
  return spec;
}

static inline void sched__spec_release(struct tw_sched *s,
                                       const struct tw_job_spec *spec) {
  tw_spec_cache_release(s->specs, spec);
}

/* The work a job asks for, in seconds (the fallback strategies' unit). */
static inline int64_t sched__work_s(const struct tw_job_spec *spec) {
  return spec->duration_s > 0 ? spec->duration_s : TW_COST_DEFAULT_DURATION_S;
}

/* Quiet spot attempts are described at least this often (follow.c); the
 * deadline strategy is asked again as often when the config gives no
 * step (spot.c). */
#define SCHED_SPOT_POLL_MAX_MS 30000

/* What follow.c remembers of one live attempt, in memory only: a restart
 * starts afresh (every attempt is described at the first pass, and
 * notices are reported again by the providers until their instance goes).
 * spot.c reads and sets the notice, review and progress fields. */
struct sched_att {
  int64_t attempt_id;
  int64_t next_poll_ms, interval_ms;
  int64_t notice_noticed_ms; /* the notice being acted on; 0 none */
  int64_t notice_deadline_ms;
  int64_t resume_s; /* progress it started from; -1 unknown */
  int64_t review_at_ms;
  bool blocked;           /* its offer was blocklisted at the notice */
  enum tw_rc settle_rc;   /* launching: its resend's refusal, settling */
  int64_t launch_wait_ms; /* launching: the wait before the next question
                             to the provider (doubles to 60 s) */
  bool seen;              /* live at this pass */
  /* The times billing follows, from the last look (sched__run_times):
   * when the instance started running and when it stopped at the
   * provider; 0 unknown (the store then records its own now). */
  int64_t ran_from_ms, ended_at_ms;
  /* agent_follow.c: the progress the attempt's agent reported saved
   * (docs/agent.md), which spot.c keeps when it ends the attempt */
  bool agent_saved;
  int64_t agent_kept_s;
  /* agent_follow.c: a running attempt whose reports decided nothing at
   * its last look is read again when an agent's news came in since
   * (agent_news_seen) or at agent_look_ms, whichever is first */
  uint64_t agent_news_seen;
  int64_t agent_look_ms;
  /* agent_follow.c: launched, and no agent row of its own (its script
   * fitted the user data): none will ever come, so its reports are not
   * read again, and follow.c reads its job only when the job ended */
  bool agent_absent;
};

/* Sets st's billing times from what the provider reported of inst (its
 * running_ms and ended_ms, providers/provider.h).  With
 * sched__agent_times, the one place an attempt's run times are chosen
 * (docs/billing.md, "Metering"). */
void sched__run_times(struct sched_att *st, const struct tw_instance *inst);
/* The run times of an attempt run by tradewind-agent: the provider's (st,
 * from a look; st may be NULL) where it gave them, else the agent's own,
 * agent_from_ms (its registration) and agent_to_ms (the job's exit as
 * the agent reported it); 0 where neither is known (the store then
 * records its own now).  The store keeps both within [the attempt's
 * start, now]. */
void sched__agent_times(const struct sched_att *st, int64_t agent_from_ms,
                        int64_t agent_to_ms, int64_t *ran_from_ms,
                        int64_t *ended_at_ms);

/* The nodes of one live attempt: a slice of the pass's list (none for an
 * attempt of one instance). */
struct sched_nodes {
  const struct tw_attempt_instance *g;
  size_t n;
};

/* ---- launch.c ------------------------------------------------------------ */

/* The progress job_id's earlier attempts kept, in seconds (0: none or
 * unknown, logged). */
int64_t sched__resume_s(struct tw_sched *s, const char *job_id);

/* Whether a launch's rc is a definite refusal: the provider answered and
 * made nothing (capacity, quota, invalid, auth; a token already taken by
 * another job's instance).  Anything else (TW_E_RETRYABLE after the http
 * helper's tries, a transport error, an answer that could not be read)
 * leaves the outcome unknown: the cloud may have made the instance. */
static inline bool sched__launch_refused(enum tw_rc rc) {
  return rc == TW_E_CAPACITY || rc == TW_E_QUOTA || rc == TW_E_INVALID ||
         rc == TW_E_AUTH || rc == TW_E_CONFLICT;
}

/* What one launch call came to for its attempt. */
enum sched_launch_outcome {
  SCHED_LAUNCH_OK,      /* the attempt has its instance (launched now, or
                           adopted meanwhile by the reconciler) */
  SCHED_LAUNCH_UNKNOWN, /* no answer: the attempt stays launching */
  SCHED_LAUNCH_REFUSED, /* a definite refusal: the attempt is closed */
  /* a launch sent again after no answer was refused: the first send may
   * still make the instance, so the attempt stays launching and its token
   * is asked for once more a settle time later (follow.c) */
  SCHED_LAUNCH_SETTLE
};

/* Calls the provider for attempt a on offer o (the same client token,
 * every time) and stores the outcome: the placement (with plan_json, the
 * plan behind it, when not NULL) on success; nothing on an unknown
 * outcome (noted on the job when first, the attempt's first call); the
 * attempt closed as capacity, rejected or failed and a note on the job on
 * a refusal, unless the attempt got an instance meanwhile, when the
 * refusal is ignored.  The blocklist learns definite outcomes.  *rc_out
 * (may be NULL) is the launch's rc. */
enum sched_launch_outcome
sched__launch(struct tw_sched *s, const struct tw_job_rec *job,
              const struct tw_job_spec *spec, const struct tw_attempt_rec *a,
              const struct tw_offer *o, int64_t cost, const char *explain,
              const char *plan_json, bool first, enum tw_rc *rc_out);

/* Attempt a's instance was found by its client token (follow.c): stored
 * as the launch's answer would have been. */
void sched__launch_found(struct tw_sched *s, const struct tw_job_rec *job,
                         const struct tw_attempt_rec *a,
                         const struct tw_offer *o,
                         const struct tw_instance *inst);

/* Builds the call that launches attempt a on o for the pool of o's
 * account (calls.c); resolve: first ask the provider for a's client
 * token, and launch only when it definitely has none (follow.c's settling
 * of a launching attempt).  The call owns copies of all it uses.  NULL
 * when o's account is not configured. */
struct sched_call *
sched__launch_call(struct tw_sched *s, const struct tw_job_rec *job,
                   const struct tw_job_spec *spec,
                   const struct tw_attempt_rec *a, const struct tw_offer *o,
                   int64_t cost, const char *explain, const char *plan_json,
                   bool first, bool resolve);

/* Stores the outcome of a completed launch call c as sched__launch did
 * (timed_out: the call passed its deadline, so the outcome is unknown).
 * *rc_out is the launch's rc. */
enum sched_launch_outcome sched__launch_apply(struct tw_sched *s,
                                              struct sched_call *c,
                                              bool timed_out,
                                              enum tw_rc *rc_out);

/* What trying one placement's candidates came to. */
struct sched_launched {
  int changes;
  bool opened;      /* an attempt was opened */
  bool placed;      /* and launched: offer is where */
  bool retry_later; /* a failure that is not the offer's: back off */
  bool unknown;     /* the launch went unanswered, or is in flight: its
                       attempt stays launching (offer is where it was
                       sent) */
  bool inflight;    /* the launch was handed to the account's workers;
                       its outcome comes with a later collect */
  const struct tw_offer *offer;
};
/* Tries pl's candidates in order: reserves the tenant's share, opens an
 * attempt (stored before the call), launches it, and moves on to the next
 * candidate at once after a capacity, quota or rejected error.  The data
 * the launch moves is metered at net's prices (NULL: none).  Stops at the
 * first success, at an unanswered launch (its attempt is resolved by
 * follow.c), at a refusal that is not the offer's, or when an attempt
 * cannot be opened (the job was cancelled meanwhile). */
void sched__launch_best(struct tw_sched *s, const struct tw_job_rec *job,
                        const struct tw_job_spec *spec,
                        const struct tw_plan *pl, const char *explain,
                        const char *plan_json, struct tw_policy_set *set,
                        int64_t now, struct sched_launched *out);

/* One attempt of the queue to open at the pass's end, and its launch
 * (launch.c, while s->batch_opens). */
struct sched_open {
  const struct tw_job_rec *job; /* borrowed from the pass's queue */
  struct tw_offer o;
  char *why, *explain, *plan_json;
  int64_t cost;
  struct tw_policy_set *set; /* a reference */
  struct tw_trace_ctx trace;
  char traceparent[64];
  /* the tenant's reservation for it (tw_tenancy_place_hold), stored in
   * the same transaction; has_resv false: none (no tenancy) */
  bool has_resv;
  struct tw_store_resv resv;
};
/* Opens the gathered attempts in one transaction, with the pass's
 * fallback decisions and the attempts' reservations, and sends each
 * launch to its account's workers; a job whose attempt cannot be opened
 * (cancelled meanwhile) is left as it is.  Returns how many were sent. */
int sched__launch_flush(struct tw_sched *s);

/* Terminates every instance of attempt a: its one instance, or each node
 * of its gang (each recorded as terminated).  The first failure is
 * returned; the others are still tried.  On the caller's thread: only a
 * deadline job's move (spot.c) still uses it; follow.c's terminates are
 * calls on the accounts' workers. */
enum tw_rc sched__terminate_all(struct tw_sched *s, struct pcache *pc,
                                const struct tw_attempt_rec *a,
                                struct sched_nodes nd, struct tw_err *err);

/* ---- calls.c ------------------------------------------------------------- */

/* What a call is: its maker (launch.c, follow.c) and how loop.c applies
 * it. */
enum sched_call_kind {
  SCHED_CALL_LAUNCH = 0, /* launch.c: a launch, or a launching attempt's
                            settling by its token */
  SCHED_CALL_DESCRIBE,   /* follow.c: a live attempt's instances described */
  SCHED_CALL_TERMINATE,  /* follow.c: instances given back */
  SCHED_CALL_NOTICES     /* follow.c: the account's notices polled */
};

/* A provider call run by an account's worker.  The fields above `run` are
 * calls.c's; the rest belong to whoever made the call (launch.c,
 * follow.c). */
struct sched_call {
  int status;
  bool abandoned;      /* past its deadline: its answer will be dropped */
  int64_t deadline_ms; /* monotonic */
  struct sched_call *next, *late_next;
  int64_t attempt_id;                /* the one attempt it concerns; 0 none */
  void (*run)(struct sched_call *c); /* on the worker */

  /* launch.c: what the call needs, owned */
  struct tw_provider *p;
  struct tw_store *store;
  bool resolve, first, found;
  /* resolving after a resend was refused (SCHED_LAUNCH_SETTLE): only the
   * token asked for, and none found means this refusal; else TW_OK */
  enum tw_rc settle_rc;
  /* the job has secrets and the provider runs no agent, the one path
   * they reach a job by: refused without a call (its next offer tried) */
  bool secrets_undeliverable;
  struct tw_job_rec job;
  const struct tw_job_spec *spec;
  struct tw_attempt_rec a;
  struct tw_offer o;
  int64_t cost;
  char *explain, *plan_json;
  struct tw_policy_set *set; /* a reference, for the data metered */
  struct tw_buf ud;
  struct tw_launch req;
  int nodes;
  struct tw_buf *ud_nodes; /* a gang under the agent: node k's user data
                              at k - 1 (its rank); NULL: req's for all */
  char (*ids)[128];
  /* the answer */
  enum tw_rc rc;
  struct tw_err err;
  struct tw_instance inst;
  /* obs.c: the call's span is a child of trace (valid: traced); took_us is
   * how long run() took on the worker */
  struct tw_tracer *tracer;
  struct tw_trace_ctx trace;
  int64_t took_us;
  struct tw_kv *env; /* the job's environment with TRACEPARENT; owned */
  size_t n_env;

  /* follow.c: a describe or terminate call, owned.  g: the attempt's
   * nodes described (none for one instance), or the instances to
   * terminate (k 0: not a gang's node); g_rc: each one's terminate rc. */
  enum sched_call_kind kind;
  struct tw_attempt_instance *g;
  size_t n_g;
  enum tw_rc *g_rc;
  bool by_token;       /* terminate: the instance of a's token, if any */
  bool describe_first; /* terminate: describe first, for the run times */
  bool seen;           /* terminate: inst holds what the worker saw */
  bool cancel;         /* terminate: a's job ended; close a when done */
  bool job_succeeded;  /* cancel: the job ended as succeeded */
  char which[128];     /* describe: the instance that decided */
  bool end_after;      /* terminate: then end a as interrupted, end_why */
  char end_why[520];
  /* describe: a's agent went silent (agent_follow.c decides on the
   * answer, sched__agent_lost_applied) */
  bool agent_lost;
  struct tw_event_list ev; /* notices: what the poll reported */
  /* describe: a batch of live attempts of one instance each, described
   * together (tw_provider_describe_many); b_inst[i] and b_rc[i] answer
   * batch[i].  n_batch 0: a describe of a alone.  Every member counts as
   * busy (sched__call_busy) while the call is. */
  struct tw_attempt_rec *batch;
  size_t n_batch;
  struct tw_instance *b_inst;
  enum tw_rc *b_rc;
  /* launch.c: a launch's outcome stored by the worker itself (the
   * placement and its audit entry, one write), queued without waiting so
   * that the workers' outcomes commit together and the worker goes on;
   * stored: done (store_rc its rc).  The write's arguments live here
   * until the store answers. */
  struct tw_tenancy *tenancy; /* borrowed */
  bool stored;
  enum tw_rc store_rc;
  struct tw_err store_err;
  struct tw_buf store_pj;
  char store_detail[900];
  struct tw_audit_event store_ev;
  struct tw_store_launched store_l;
  /* calls.c: run() left the call storing (sched__call_storing); the
   * store answered (sched__call_stored), under the pools' mutex */
  bool storing, store_answered;
  struct sched_calls *owner; /* calls.c: set at submit */
};

/* obs.c */
void sched__obs_init(struct tw_sched *s);
void sched__obs_release(struct tw_sched *s);
void sched__obs_pass(struct tw_sched *s, int64_t us);
void sched__obs_wait(struct tw_sched *s, const char *tenant, int64_t ms);
void sched__obs_launch(struct tw_sched *s, const char *provider, int64_t us,
                       enum tw_rc rc);
/* counter name{labels} += 1; labels like `provider="aws"` */
void sched__obs_count(struct tw_sched *s, const char *name,
                      const char *labels);
/* The job's stored trace context into *out (false: untraced). */
bool sched__obs_job_trace(struct tw_sched *s, const char *job_id,
                          struct tw_trace_ctx *out, char *tp, size_t tpsz);
/* On the worker: c->run(c) inside a CLIENT span when c->trace is valid. */
void sched__obs_run_call(struct sched_call *c);
/* A provider call made on the scheduler's thread itself, as a CLIENT span
 * of the job's trace: begin returns NULL when the job is untraced; end
 * takes the outcome and frees it (NULL ok). */
struct tw_span *sched__obs_call_begin(struct tw_sched *s, const char *job_id,
                                      const char *op, struct tw_provider *p,
                                      const char *resource);
void sched__obs_call_end(struct tw_span *sp, enum tw_rc rc,
                         const struct tw_err *err);
/* A short span under the job's trace for an event of its life (a spot
 * notice, a fallback decision); nothing when the job is untraced. */
void sched__obs_event(struct tw_sched *s, const char *job_id,
                      const char *name, const char *k1, const char *v1,
                      const char *k2, const char *v2);

/* A worker's queue holds at most this many calls per worker. */
#define SCHED_CALLS_QUEUE_PER_WORKER 16

/* Monotonic milliseconds (the pass budget and the calls' deadlines are
 * real time, whatever the injected clock says). */
int64_t sched__mono_ms(void);

/* One pool per provider of s (s->pc[i].pool), and its release: calls
 * never started are dropped; running ones are waited for, unless a drain
 * abandoned them (then the workers are left to the process's exit). */
void sched__calls_init(struct tw_sched *s);
void sched__calls_release(struct tw_sched *s);
/* Frees call c (launch.c). */
void sched__call_free(struct tw_sched *s, struct sched_call *c);

/* Whether pc's pool takes another call now (its deferred launches
 * counted). */
bool sched__call_room(struct tw_sched *s, struct pcache *pc);
/* Whether any account's pool takes a call now (sched__call_room of one). */
bool sched__any_room(struct tw_sched *s);
/* On the worker running c: whether c was abandoned (past its deadline, or
 * a drain's): its answer will be dropped, so it stores nothing. */
bool sched__call_abandoned(const struct sched_call *c);
/* On the worker running c, from its run(): c's answer is being stored
 * (tw_store_write_async) and c is done only once sched__call_stored(c)
 * says so, from the store's writer; the worker goes on to its next call
 * meanwhile. */
void sched__call_storing(struct sched_call *c);
/* The store's answer for a call that was storing: c is done (collected
 * by the next sched__calls_collect).  Any thread. */
void sched__call_stored(struct sched_call *c);
/* Whether attempt_id has a call queued, running (an abandoned one
 * included) or done but not yet collected: one call in flight per
 * attempt, and none sent on a stored state its answer is about to
 * change. */
bool sched__call_busy(struct tw_sched *s, int64_t attempt_id);
/* Queues c on pc's pool, its deadline from now; false (c still the
 * caller's) when the pool is stopping or has no worker. */
bool sched__call_submit(struct tw_sched *s, struct pcache *pc,
                        struct sched_call *c);

/* Applies a completion (timed_out: c passed its deadline and is still
 * running; it must not be freed).  Returns state changes. */
typedef int (*sched_apply_fn)(struct tw_sched *s, struct sched_call *c,
                              bool timed_out, int64_t now);
/* Applies the completions that arrived, and those that arrive until
 * until_mono_ms while calls are waited for (apply may submit more).
 * Returns state changes. */
int sched__calls_collect(struct tw_sched *s, int64_t until_mono_ms,
                         sched_apply_fn apply, int64_t now);
/* Gives up the calls still running (a drain's deadline): returns how
 * many; their attempts stay launching with their tokens. */
size_t sched__calls_abandon(struct tw_sched *s);

/* ---- place.c ------------------------------------------------------------- */

void sched__place_init(struct tw_sched *s);
void sched__place_release(struct tw_sched *s);

/* s->all is about to be replaced (or freed): the index built over it
 * takes the array over, and private capacity taken starts again. */
void sched__offers_changing(struct tw_sched *s);

/* The nodes an attempt of job holds on private capacity: what placement
 * took (the spec's node count), never fewer than its instances; a batch
 * provider runs a gang as one job with one instance id. */
size_t sched__job_nodes(struct tw_sched *s, const struct tw_job_rec *job,
                        size_t n_instances);

/* Attempt a (of nodes instances; 0 counts as 1) ended: on private
 * capacity its nodes are free again for the next pass, without waiting
 * for the offers to be listed again. */
void sched__capacity_return(struct tw_sched *s, const struct tw_attempt_rec *a,
                            size_t nodes);

/* The pending jobs of this pass in queue order; returns state changes. */
int sched__place_pending(struct tw_sched *s, int64_t now);
/* tw_sched_warm's part in placement: the datasets, the reads of
 * sched__place_pending (the window's specs parsed) and of one job's
 * placement; nothing written. */
void sched__place_warm(struct tw_sched *s);
/* sched_flow.c: dependencies met and tasks released, before the queue. */
int sched__flow(struct tw_sched *s, int64_t now);

/* Places one pending (or recovering) job: ranks the offers through the
 * plan code and the job's fallback strategy, then hands the candidates to
 * sched__launch_best().  Returns the number of state changes. */
int sched__place_job(struct tw_sched *s, const struct tw_job_rec *job,
                     int64_t now);

/* A first launch of job_id was refused with rc (its attempt closed): the
 * job goes back to pending, with a back-off when the refusal is not the
 * offer's, and is placed again at once when it is (its next candidate).
 * Returns state changes. */
int sched__place_refused(struct tw_sched *s, const char *job_id, enum tw_rc rc,
                         int64_t now);

/* The fallback strategies' view of a job, shared with spot.c. */

/* The offer of a past attempt: from the current offers, else rebuilt from
 * its id (enough for the blocklist's keys). */
struct tw_offer sched__offer_of(struct tw_sched *s,
                                const struct tw_attempt_rec *a);
/* The job's strategy: its spec's, else the scheduler's default. */
enum tw_fallback_kind sched__fallback_kind(struct tw_sched *s,
                                           const struct tw_job_spec *spec);
/* Fills the strategy's view of job from its spec and attempts; region and
 * zone (where it ran last) are pointed to by j. */
void sched__fallback_view(struct tw_sched *s, const struct tw_job_rec *job,
                          const struct tw_job_spec *spec,
                          const struct tw_attempt_rec *past, size_t n_past,
                          int64_t now, struct tw_fallback_job *j,
                          char region[TW_MODEL_NAME_MAX],
                          char zone[TW_MODEL_NAME_MAX]);
/* Stores the strategy's decision d for job_id (once per change); while
 * s->batch_opens, in the queue's transaction (sched__launch_flush), which
 * then reports it (sched__fallback_recorded). */
void sched__fallback_record(struct tw_sched *s, const char *job_id,
                            enum tw_fallback_event ev,
                            const struct tw_fallback_decision *d, int64_t now);
/* Decision r was stored (added: not the same as the job's last one): its
 * log line, counter and span. */
void sched__fallback_recorded(struct tw_sched *s,
                              const struct tw_ckpt_decision *r, bool added);
/* Whether the plan of job under spec (the scheduler's offers, policy set
 * and snapshot; excl avoided) has a candidate now. */
bool sched__placeable(struct tw_sched *s, const struct tw_job_rec *job,
                      const struct tw_job_spec *spec, const char *const *excl,
                      size_t n_excl, int64_t now);
/* Ids of the offers the blocklist covers now, appended to *ids (a malloc'd
 * array, grown here; the ids are borrowed from s->all). */
void sched__blocked_offers(struct tw_sched *s, int64_t now, const char ***ids,
                           size_t *n);

/* ---- spot.c -------------------------------------------------------------- */

void sched__spot_init(struct tw_sched *s, const struct tw_sched_opts *o);
void sched__spot_release(struct tw_sched *s);

/* An event for live attempt a: a rebalance recommendation is noted; an
 * interruption notice (once per notice) requests a checkpoint, blocklists
 * the offer and sets st's deadline.  True when a is to be described at
 * once. */
bool sched__spot_notice(struct tw_sched *s, const struct tw_attempt_rec *a,
                        struct sched_att *st, const struct tw_event *ev,
                        int64_t now);

/* Ends attempt a (its instance is gone, or going: end_reason
 * "interrupted", or given up by a move: "moved"), records what it kept,
 * and sends the job through interrupted and recovering to its next
 * placement.  st may be NULL.  Returns state changes. */
int sched__spot_end(struct tw_sched *s, const struct tw_attempt_rec *a,
                    struct sched_att *st, const char *end_reason,
                    const char *why, int64_t now);

/* A deadline job on on-demand: moved back to spot when its slack allows.
 * Returns state changes (0: it stays). */
int sched__spot_review(struct tw_sched *s, const struct tw_job_rec *job,
                       const struct tw_job_spec *spec,
                       const struct tw_attempt_rec *a, struct sched_nodes nd,
                       struct sched_att *st, int64_t now);

/* interrupted -> recovering with the strategy's decision, then placed. */
int sched__spot_to_recovering(struct tw_sched *s, const char *job_id,
                              int64_t now);
/* Places a recovering job at once; when that fails it waits in the queue
 * with the reason. */
int sched__spot_recover(struct tw_sched *s, const char *job_id, int64_t now);

/* ---- agent_follow.c ------------------------------------------------------ */

/* What the agent's reports did to one live attempt (follow.c calls it
 * first, for every pass). */
/* Whether attempt a (of job, stored as it is now) may be passed over this
 * pass: run by an agent, running, its job live, no notice out, nothing
 * from any agent that decides something since its last look, and that
 * look less than SCHED_AGENT_LOOK_MS ago (a quarter of the heartbeat
 * timeout when that is less).  Its heartbeats and logs need no pass; the
 * next look finds lost heartbeats. */
#define SCHED_AGENT_LOOK_MS 5000
bool sched__agent_quiet(const struct tw_sched *s, struct pcache *pc,
                        const struct tw_job_rec *job,
                        const struct tw_attempt_rec *a,
                        const struct sched_att *st, int64_t now);

struct sched_agent_step {
  int changes;
  bool handled;       /* the attempt is the agent's: follow.c stops here */
  bool owe_terminate; /* ended: its instances to terminate (follow.c) */
  /* the job exited after a notice: its instances are terminated, then
   * the interruption recorded with end_why (follow.c) */
  bool end_after_terminate;
  char end_why[512];
  /* its heartbeats were lost: its instance is described by a call on
   * the account's workers (follow.c), answered in
   * sched__agent_lost_applied */
  bool heartbeat_lost;
};
/* Applies the stored reports of attempt a (docs/agent.md): the exit
 * report ends it, a cancel is handed to the agent and ends on its exit
 * (or after grace + heartbeat timeout), notices go through
 * sched__spot_notice(), registration marks it running, heartbeats lost
 * describe its instance.  Not handled: not an agent's attempt, still
 * launching, cancelled before its agent registered, or its notice ran
 * out (follow.c's own rules). */
void sched__agent_follow(struct tw_sched *s, struct pcache *pc,
                         const struct tw_job_rec *job,
                         const struct tw_attempt_rec *a, struct sched_nodes nd,
                         struct sched_att *st, int64_t now,
                         struct sched_agent_step *out);
/* The answer rc (inst) to the describe of attempt a whose heartbeats were
 * lost, a read again from the store: gone (or unknown) is an
 * interruption, alive is terminated and placed again (out's
 * end_after_terminate, follow.c's call), no answer is asked again at the
 * next look; an agent heard from meanwhile changes nothing.  Returns
 * state changes. */
int sched__agent_lost_applied(struct tw_sched *s, const struct tw_attempt_rec *a,
                              struct sched_nodes nd, struct sched_att *st,
                              enum tw_rc rc, const struct tw_instance *inst,
                              int64_t now, struct sched_agent_step *out);

/* ---- follow.c ------------------------------------------------------------ */

/* Notices (a poll per account on its workers, at most every
 * notice_poll_ms, matched to the live attempts when it answers), then
 * every live attempt (a launching one settled by its client
 * token, any other described when due: calls on the accounts' workers,
 * applied by sched__follow_applied), the terminates still owed, then jobs
 * left half way (every non-terminal state but pending without a live
 * attempt); returns state changes. */
int sched__follow(struct tw_sched *s, int64_t now);
/* The live attempts (ascending id) as the store has them now: read whole
 * the first time and every LIVE_FULL_MS, else only those the store's
 * committed writes changed since the last call (tw_store_changes_since).
 * *out is the scheduler's own, valid until the next call.  Scheduler
 * thread. */
enum tw_rc sched__live(struct tw_sched *s, const struct tw_attempt_rec **out,
                       size_t *n, struct tw_err *err);
/* The answer r to the settling call c of a launching attempt (applied by
 * sched__launch_apply): found or launched, the attempt is described soon;
 * refused, a placing job goes back to pending.  Returns state changes. */
int sched__follow_resolved(struct tw_sched *s, const struct sched_call *c,
                           enum sched_launch_outcome r, int64_t now);
/* Applies follow.c's describe, terminate or notice call c (timed_out: past its
 * deadline, still running: no answer, so a describe looks again later and
 * a terminate is tried again; nothing is concluded from it).  Returns
 * state changes. */
int sched__follow_applied(struct tw_sched *s, struct sched_call *c,
                          bool timed_out, int64_t now);
void sched__follow_release(struct tw_sched *s);
/* Stores the attempts gathered as running while s->defer_running (one
 * transaction); returns how many were stored. */
int sched__follow_flush(struct tw_sched *s);

#endif
