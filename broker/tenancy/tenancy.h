/* tenancy.h - who may do what, and how much: tenants, principals and their
 * bearer tokens, per-tenant quotas (with cohorts that lend idle quota),
 * money budgets, and the hooks the API and the scheduler call.
 *
 * The model (docs/security.md tells it for operators):
 *
 *   - A tenant is a name ("ml", "default").  Jobs carry one (spec.h).
 *   - A principal is a user or a service account (CI).  It belongs to one
 *     tenant and holds one role there; the global admin belongs to "*".
 *     Somebody who works for two tenants gets two principals: a role never
 *     leaks from one tenant to another by accident.
 *   - A token is 256 random bits with a public id, shown once when made
 *     and stored only as its SHA-256; it has an optional expiry and can be
 *     revoked.  Comparison is constant-time (CRYPTO_memcmp).
 *   - A quota limits what a tenant's live attempts hold at once: vCPUs,
 *     GPUs by type, jobs, and the share of vCPUs on spot.  Tenants of one
 *     cohort may borrow each other's idle quota up to a borrowing limit;
 *     an owner that needs its quota back takes it by preempting the
 *     borrowers' newest attempts.
 *   - A budget limits money per tenant or per project and period, with
 *     alert thresholds, soft or hard.
 *
 * Every function is thread-safe unless it says otherwise: the API calls
 * from its connection threads, the scheduler from its loop, the
 * maintenance pass from its own thread. */
#ifndef TW_BROKER_TENANCY_H
#define TW_BROKER_TENANCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"

struct tw_store;
struct tw_provider;
struct tw_offer;
struct tw_job_spec;
struct tw_job_rec;
struct tw_audit;
struct tw_audit_event;
struct tw_tenancy;

#define TW_NAME_MAX 64 /* tenant, principal, project names incl. NUL */

/* Roles, from most to least powerful.  The order is the table order of
 * api/rbac.c; append only. */
enum tw_role {
  TW_ROLE_ADMIN = 0,    /* global: everything, every tenant */
  TW_ROLE_TENANT_ADMIN, /* one tenant: users, tokens, budgets, all jobs */
  TW_ROLE_MEMBER,       /* submits; reads the tenant's jobs; cancels its own */
  TW_ROLE_VIEWER,       /* reads the tenant's jobs, quota and budgets */
  TW_ROLE_FINANCE,      /* budgets, spend and the tenant's audit trail */
  TW_ROLE_CI,           /* submits, and reads and cancels its own jobs */
  TW_ROLE_METRICS,      /* scrapes /metrics, and nothing else */
  TW_ROLE_COUNT
};

const char *tw_role_str(enum tw_role r); /* "tenant-admin" */
bool tw_role_parse(const char *s, enum tw_role *out);

/* Tenant, principal and project names: 1..63 of [A-Za-z0-9._-], not
 * starting with '.' or '-'.  "*" is the global admin's tenant. */
bool tw_tenancy_name_ok(const char *s);
#define TW_TENANT_GLOBAL "*"

struct tw_principal {
  char name[TW_NAME_MAX];
  char tenant[TW_NAME_MAX]; /* "*" for the global admin */
  enum tw_role role;
  bool service; /* a service account (CI), not a person */
  bool disabled;
  int64_t created_ms;
  char token_id[24]; /* the token that authenticated; "" otherwise */
};

/* ---- opening ------------------------------------------------------------ */

struct tw_tenancy_opts {
  struct tw_store *store;         /* borrowed; outlives t */
  struct tw_clock *clock;         /* NULL: real */
  struct tw_provider **providers; /* borrowed: to preempt for reclaim */
  size_t n_providers;
  /* Where the first start writes the admin token (mode 0600); NULL or ""
   * writes none (tests make their own). */
  const char *admin_token_file;
  /* Budget webhooks: timeout per call; 0: 5000. */
  int64_t webhook_timeout_ms;
  /* tenancy.webhook_allow: CIDR blocks ("10.1.0.0/16", "::1") a webhook
   * may reach although loopback, link-local or private (refused
   * otherwise); NULL-terminated, NULL for none. */
  const char *const *webhook_allow;
};

/* Opens the module over the store (which migrated its tables at open).
 * On a database without principals, creates the tenant "default", the
 * principal "admin" (role admin) and its first token, written to
 * admin_token_file.  *out is owned (tw_tenancy_free).  TW_E_IO when the
 * store or the file fails. */
enum tw_rc tw_tenancy_open(const struct tw_tenancy_opts *opts,
                           struct tw_tenancy **out, struct tw_err *err);
/* "DIR/admin.token" for a database at "DIR/NAME" ("admin.token" for a
 * bare name), into out. */
void tw_tenancy_token_path(const char *db_path, char *out, size_t outsz);

/* Stops the maintenance thread if started; NULL is a no-op. */
void tw_tenancy_free(struct tw_tenancy *t);

/* The audit log the module writes to (borrowed; lives as long as t). */
struct tw_audit *tw_tenancy_audit(struct tw_tenancy *t);
struct tw_store *tw_tenancy_store(struct tw_tenancy *t);
struct tw_clock *tw_tenancy_clock(struct tw_tenancy *t);

/* ---- tokens ------------------------------------------------------------- */

/* "twt_" + 16 hex (the public id) + "_" + 43 base64url (256 bits). */
#define TW_TOKEN_LEN 64
#define TW_TOKEN_ID_LEN 16

struct tw_token_info {
  char id[TW_TOKEN_ID_LEN + 1];
  char principal[TW_NAME_MAX];
  char tenant[TW_NAME_MAX]; /* the principal's */
  char name[TW_NAME_MAX];   /* what it is for: "laptop", "ci-main" */
  int64_t created_ms;
  int64_t expires_ms; /* 0: never */
  int64_t revoked_ms; /* 0: live */
};

/* Makes a token for principal (which must exist and be enabled), valid
 * for ttl_ms (0: no expiry).  The token text goes to token_out exactly
 * once: only its hash is kept.  TW_E_NOTFOUND for an unknown principal,
 * TW_E_CONFLICT when it is disabled. */
enum tw_rc tw_tenancy_token_create(struct tw_tenancy *t, const char *principal,
                                   const char *name, int64_t ttl_ms,
                                   char token_out[TW_TOKEN_LEN + 1],
                                   struct tw_token_info *info,
                                   struct tw_err *err);

/* Checks a presented token and fills *out with its principal.  TW_E_AUTH
 * with a reason that reveals nothing about other tokens: "malformed
 * token", "unknown token" (also for a wrong secret), and only after the
 * secret matched "token expired", "token revoked", "principal disabled".
 * The work done is the same whether the id exists or not. */
enum tw_rc tw_tenancy_authenticate(struct tw_tenancy *t, const char *token,
                                   struct tw_principal *out,
                                   struct tw_err *err);

/* TW_E_NOTFOUND when unknown. */
enum tw_rc tw_tenancy_token_get(struct tw_tenancy *t, const char *id,
                                struct tw_token_info *out, struct tw_err *err);
/* Tokens of one principal (principal non-NULL), of one tenant (tenant
 * non-NULL), or all; oldest first.  free() *out. */
enum tw_rc tw_tenancy_token_list(struct tw_tenancy *t, const char *principal,
                                 const char *tenant, struct tw_token_info **out,
                                 size_t *n, struct tw_err *err);
/* Revokes at once (the next request with it gets 401).  Revoking twice is
 * fine.  TW_E_NOTFOUND when unknown. */
enum tw_rc tw_tenancy_token_revoke(struct tw_tenancy *t, const char *id,
                                   struct tw_err *err);

/* ---- principals and tenants --------------------------------------------- */

/* Creates a principal from p's name, tenant, role and service flag.
 * TW_E_INVALID for a bad name or an admin outside "*" (and a non-admin in
 * "*"), TW_E_NOTFOUND for an unknown tenant, TW_E_CONFLICT when the name
 * is taken. */
enum tw_rc tw_tenancy_user_create(struct tw_tenancy *t,
                                  const struct tw_principal *p,
                                  struct tw_err *err);
enum tw_rc tw_tenancy_user_get(struct tw_tenancy *t, const char *name,
                               struct tw_principal *out, struct tw_err *err);
/* tenant NULL: all.  free() *out. */
enum tw_rc tw_tenancy_user_list(struct tw_tenancy *t, const char *tenant,
                                struct tw_principal **out, size_t *n,
                                struct tw_err *err);
/* Disables a principal: its tokens stop working at once.  TW_E_NOTFOUND. */
enum tw_rc tw_tenancy_user_disable(struct tw_tenancy *t, const char *name,
                                   struct tw_err *err);

struct tw_tenant_info {
  char name[TW_NAME_MAX];
  char cohort[TW_NAME_MAX]; /* "" when in none */
  int64_t created_ms;
};

/* TW_E_CONFLICT when it exists, TW_E_INVALID for a bad name. */
enum tw_rc tw_tenancy_tenant_create(struct tw_tenancy *t, const char *name,
                                    struct tw_err *err);
enum tw_rc tw_tenancy_tenant_get(struct tw_tenancy *t, const char *name,
                                 struct tw_tenant_info *out,
                                 struct tw_err *err);
enum tw_rc tw_tenancy_tenant_list(struct tw_tenancy *t,
                                  struct tw_tenant_info **out, size_t *n,
                                  struct tw_err *err);

/* ---- jobs' owners ---------------------------------------------------------
 */

struct tw_job_owner {
  char principal[TW_NAME_MAX]; /* "" when unknown (made before tenancy) */
  char tenant[TW_NAME_MAX];
  char project[TW_NAME_MAX];
  int64_t projected_uusd; /* the cost projected at admission */
};

/* The owner recorded at submission; TW_E_NOTFOUND when none was. */
enum tw_rc tw_tenancy_job_owner(struct tw_tenancy *t, const char *job_id,
                                struct tw_job_owner *out, struct tw_err *err);

/* A job the request just created. */
struct tw_job_created {
  const char *job_id, *tenant, *project, *principal;
  int64_t projected_uusd;
};

/* Appends a request's audit entry (unless ev is NULL) and, when job is
 * not NULL, records the job's owner and projected cost, both in one
 * transaction. */
enum tw_rc tw_tenancy_request_done(struct tw_tenancy *t,
                                   const struct tw_audit_event *ev,
                                   const struct tw_job_created *job,
                                   struct tw_err *err);

/* Stores a submission: the job (as tw_store_job_create() does), its owner
 * (job_id ignored: the new job's) and the request's audit entry (object
 * ignored: the new job's id), in one transaction, so no crash leaves a
 * stored job without its audit entry or its owner.  owner or ev NULL: not
 * written.  A replay of an idempotency key (*replayed) writes neither.
 * *out as tw_store_job_create's (tw_job_rec_release). */
struct tw_job_new;
enum tw_rc tw_tenancy_job_submit(struct tw_tenancy *t,
                                 const struct tw_job_new *job,
                                 const struct tw_job_created *owner,
                                 const struct tw_audit_event *ev,
                                 struct tw_job_rec *out, bool *replayed,
                                 struct tw_err *err);

/* ---- quotas ---------------------------------------------------------------
 */

#define TW_QUOTA_GPU_TYPES 16

/* limit < 0: unlimited.  borrow: how far above limit the tenant may go on
 * its cohort's idle quota. */
struct tw_quota_limit {
  int64_t limit;
  int64_t borrow;
};

struct tw_quota_gpu {
  char name[32]; /* "A100" covers every A100 variant (tw_accel_matches) */
  struct tw_quota_limit q;
};

struct tw_quota {
  char tenant[TW_NAME_MAX];
  char cohort[TW_NAME_MAX]; /* "" when in none */
  struct tw_quota_limit vcpus;
  struct tw_quota_limit jobs; /* jobs holding an attempt at once */
  struct tw_quota_gpu gpus[TW_QUOTA_GPU_TYPES];
  size_t n_gpus;
  int spot_share_pct; /* vCPUs that may be on spot, % of the
                         vCPU limit (of usage when unlimited) */
  int64_t version;    /* the ETag: "q<version>" */
};

/* Every limit unlimited, share 100, no cohort. */
void tw_quota_init(struct tw_quota *q);

/* TW_E_NOTFOUND when the tenant does not exist. */
enum tw_rc tw_tenancy_quota_get(struct tw_tenancy *t, const char *tenant,
                                struct tw_quota *out, struct tw_err *err);
/* Replaces the tenant's quota with q (q->tenant is ignored).  When
 * if_version > 0 it must equal the stored version (TW_E_CONFLICT
 * otherwise: somebody changed it meanwhile).  *out holds the stored
 * result with its new version. */
enum tw_rc tw_tenancy_quota_set(struct tw_tenancy *t, const char *tenant,
                                const struct tw_quota *q, int64_t if_version,
                                struct tw_quota *out, struct tw_err *err);

/* ---- budgets --------------------------------------------------------------
 */

enum tw_budget_period {
  TW_PERIOD_MONTHLY = 0, /* calendar months, UTC */
  TW_PERIOD_WEEKLY,      /* from Monday 00:00 UTC */
  TW_PERIOD_DAILY
};
const char *tw_budget_period_str(enum tw_budget_period p);
bool tw_budget_period_parse(const char *s, enum tw_budget_period *out);

#define TW_BUDGET_THRESHOLDS 8
#define TW_BUDGET_WEBHOOK_MAX 512

struct tw_budget {
  char tenant[TW_NAME_MAX];
  char project[TW_NAME_MAX]; /* "" for the whole tenant */
  enum tw_budget_period period;
  int64_t limit_uusd;
  int thresholds_pct[TW_BUDGET_THRESHOLDS]; /* ascending, 1..1000 */
  size_t n_thresholds;
  bool hard;         /* refuse jobs that do not fit; else alert only */
  bool stop_running; /* hard only: stop live jobs once the limit is hit */
  char webhook[TW_BUDGET_WEBHOOK_MAX]; /* "" none; http(s) URL */
  int64_t version;                     /* the ETag: "b<version>" */
};

/* Monthly, no limit (0), thresholds 50/80/100, soft. */
void tw_budget_init(struct tw_budget *b);

/* project NULL or "": the tenant-wide budget.  TW_E_NOTFOUND when none is
 * set. */
enum tw_rc tw_tenancy_budget_get(struct tw_tenancy *t, const char *tenant,
                                 const char *project, struct tw_budget *out,
                                 struct tw_err *err);
/* Creates or replaces; if_version as for quotas (0 creates, or replaces
 * without a check).  TW_E_NOTFOUND when the tenant does not exist. */
enum tw_rc tw_tenancy_budget_set(struct tw_tenancy *t,
                                 const struct tw_budget *b, int64_t if_version,
                                 struct tw_budget *out, struct tw_err *err);
/* Every budget of a tenant; free() *out. */
enum tw_rc tw_tenancy_budget_list(struct tw_tenancy *t, const char *tenant,
                                  struct tw_budget **out, size_t *n,
                                  struct tw_err *err);

/* Spend of a budget's scope in its current period.  Actual spend is the
 * ledger's effective cost over the period plus what running attempts have
 * accrued up to now (tw_ledger_spent_now, what the meter charges under the
 * providers' billing rules): the figure the report's budget table, the
 * alerts and the hard stop use too. */
struct tw_budget_status {
  struct tw_budget budget;
  int64_t period_start_ms, period_end_ms;
  int64_t spent_uusd;     /* actual, this period, accrual included */
  int64_t accrued_uusd;   /* of spent: accrued, not yet a ledger row */
  int64_t committed_uusd; /* live jobs: projected cost not yet spent */
  int64_t forecast_uusd;  /* spent + what live jobs will still spend
                             before the period ends */
  int alerted_pct;        /* highest threshold alerted this period; 0 */
};
enum tw_rc tw_tenancy_budget_status(struct tw_tenancy *t, const char *tenant,
                                    const char *project,
                                    struct tw_budget_status *out,
                                    struct tw_err *err);

/* ---- admission (API: POST /v1/jobs) ----------------------------------------
 */

struct tw_admission {
  int64_t projected_uusd; /* the job's projected cost; 0 unknown */
  char projection[256];   /* how it was projected, for the answer */
};

/* Checks a job against its tenant's quota (the job alone must fit in the
 * limit plus what may be borrowed; spot only when a spot share is
 * allowed) and its hard budgets (tenant-wide and project): the projected
 * cost must fit in limit - spent - committed.  The projection is the
 * expected cost of the best candidate of a plan (policies/place/plan.h,
 * the default policy set) over the offers the scheduler last saw, for
 * duration_s or one hour; with none known it is max_price_per_hour times
 * that, else 0 (documented).
 *   TW_E_QUOTA  refused; err->field names the quota ("quota.gpus.A100",
 *               "budget.ml/train") and err->msg the numbers.
 *   TW_E_INVALID  the tenant does not exist (field "tenant"): nothing
 *               would pay for the job.
 * The quota and budget refusals are audited (principal may be NULL). */
enum tw_rc tw_tenancy_admit(struct tw_tenancy *t,
                            const struct tw_job_spec *spec,
                            const char *principal, const char *request_id,
                            struct tw_admission *out, struct tw_err *err);

/* An array's or a workflow's admission: every template as
 * tw_tenancy_admit() (tenant, quotas, each budget), then the hard budgets
 * against the whole group's projection, each template's times its count
 * of tasks (out->projected_uusd).  Refusals audited as above. */
enum tw_rc tw_tenancy_admit_group(struct tw_tenancy *t,
                                  const struct tw_job_spec *const *specs,
                                  const int64_t *counts, size_t n,
                                  const char *principal,
                                  const char *request_id,
                                  struct tw_admission *out,
                                  struct tw_err *err);

/* ---- the scheduler's hooks -------------------------------------------------
 */

/* The offers the scheduler placed against, copied and indexed for
 * admission's cost projection.  Scheduler thread. */
/* Projections read the placer's policy set and offer index from now on:
 * the set in force and the index the scheduler publishes, so admission
 * projects with the very plan the scheduler makes.  placer is borrowed
 * and outlives t; tw_tenancy_set_offers is then ignored.  Call before the
 * API or the scheduler start. */
struct tw_placer;
void tw_tenancy_use_placer(struct tw_tenancy *t, struct tw_placer *placer);

void tw_tenancy_set_offers(struct tw_tenancy *t, const struct tw_offer *offers,
                           size_t n);

/* Starts a placement phase: what each tenant holds is read afresh, the
 * reservations from the store matched to the attempts still live (those
 * of ended attempts are dropped: this is where reservations are
 * released).  Scheduler thread. */
void tw_tenancy_place_begin(struct tw_tenancy *t);
/* The same over live[0..n_live), the live attempts (ascending ids) as the
 * caller read them just now (the scheduler keeps them from the store's
 * changes).  The reservations are kept between phases: only the jobs
 * whose attempts the store's change feed names, and those reserved for
 * since the last phase, are looked at; everything is read afresh at the
 * first phase, when the feed is too old, every 10 s (other replicas'
 * writes) and when live[] is not as many attempts as the view follows. */
struct tw_attempt_rec;
void tw_tenancy_place_begin_live(struct tw_tenancy *t,
                                 const struct tw_attempt_rec *live,
                                 size_t n_live);

/* Reads the quotas again for the placements that follow: the scheduler
 * calls it after reading its queue, so every queued job is judged by a
 * quota at least as new as its submission (a quota set before a job was
 * submitted is never missed because the pass began before both).  On a
 * store error the previous view stays and false is returned.  Scheduler
 * thread. */
bool tw_tenancy_quotas_reload(struct tw_tenancy *t);

/* Drops from pl's candidates the offers job cannot take within its
 * tenant's quota now (pl is the job's plan, policies/place/plan.h; its
 * order is kept).  When none is left but the cheapest would fit in the
 * tenant's own quota once borrowers give back what they took from the
 * cohort, their newest attempts are preempted (instance terminated, job
 * back to pending, audited) and that candidate alone is kept.  Returns
 * true when nothing is left: the job waits, and the reason is noted on the
 * job and audited once (not at every pass).  Scheduler thread. */
struct tw_plan;
bool tw_tenancy_place_filter(struct tw_tenancy *t, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             struct tw_plan *pl);

/* The vCPUs job's tenant may still run on spot under its quota's
 * spot_share_pct (its own reservations aside); INT64_MAX without a share
 * limit.  The scheduler plans a job of any market on demand when this
 * cannot hold it, so the search itself avoids spot rather than the
 * candidates being dropped after it.  Scheduler thread. */
int64_t tw_tenancy_spot_vcpus_left(struct tw_tenancy *t,
                                   const struct tw_job_rec *job);

/* Reserves job's share of offer o, right before its attempt is opened.
 * The reservation lasts as long as the job has a live attempt (a later
 * place_begin drops it once none is).  Scheduler thread. */
void tw_tenancy_place_commit(struct tw_tenancy *t, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_offer *o);
/* As tw_tenancy_place_commit, with the reservation's row handed to the
 * caller in *row instead of stored here: the scheduler stores it in the
 * transaction that opens the attempt (tw_store_reservation_put_op, on
 * o->id).  Scheduler thread. */
struct tw_store_resv;
void tw_tenancy_place_hold(struct tw_tenancy *t, const struct tw_job_rec *job,
                           const struct tw_job_spec *spec,
                           const struct tw_offer *o, struct tw_store_resv *row);

/* Audits a launch: "sched.place" when rc is TW_OK, else "sched.fallback"
 * with the provider's message (the scheduler moves on or retries).
 * Scheduler thread. */
void tw_tenancy_audit_launch(struct tw_tenancy *t, const struct tw_job_rec *job,
                             int attempt, const struct tw_offer *o,
                             enum tw_rc rc, const char *msg,
                             const char *explain);

/* The entry tw_tenancy_audit_launch appends for a launch that got its
 * instance, not appended: *ev (its strings borrowed from job and detail,
 * a buffer of detail_size bytes) and *at_ms, for the store to append in
 * the transaction that records the launch (struct tw_store_launched).
 * Any thread. */
struct tw_audit_event;
void tw_tenancy_audit_launch_entry(struct tw_tenancy *t,
                                   const struct tw_job_rec *job, int attempt,
                                   const struct tw_offer *o,
                                   const char *explain,
                                   struct tw_audit_event *ev, char *detail,
                                   size_t detail_size, int64_t *at_ms);

/* Audits one scheduler or reconciler decision under principal "sched". */
void tw_tenancy_sched_audit(struct tw_tenancy *t, const char *job_id,
                            const char *tenant, const char *action,
                            const char *outcome, const char *detail);

/* ---- maintenance -----------------------------------------------------------
 */

/* One pass: budget thresholds (audit entry, log line, webhook once per
 * threshold and period) and hard budgets with stop_running (live jobs,
 * newest first, are cancelled with the numbers as reason until actual
 * plus committed falls below the limit; the scheduler then terminates
 * their instances).  Returns how many jobs it stopped. */
int tw_tenancy_tick(struct tw_tenancy *t);
/* Runs tw_tenancy_tick every interval_ms on a thread until freed. */
enum tw_rc tw_tenancy_start(struct tw_tenancy *t, int64_t interval_ms,
                            struct tw_err *err);

#endif
