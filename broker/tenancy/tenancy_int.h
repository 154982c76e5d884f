/* tenancy_int.h - what the files of the tenancy module share and nobody
 * else: the struct and the usage ledger of a placement phase.  The tables
 * are the store's (broker/core/store_tenancy.h, store_budgets.h). */
#ifndef TW_BROKER_TENANCY_INT_H
#define TW_BROKER_TENANCY_INT_H

#include <openssl/types.h>
#include <pthread.h>

#include "broker/tenancy/audit.h"
#include "broker/base/model.h"
#include "broker/tenancy/tenancy.h"

struct tw_offer_index;
struct tw_policy_set;

struct tw_http;

/* What one tenant's live attempts hold, rebuilt at each placement phase. */
struct tn_usage {
  char tenant[TW_NAME_MAX];
  int64_t vcpus, spot_vcpus, jobs;
  struct {
    char accel[32]; /* the offers' normalized names: "A100-80GB" */
    int64_t n;
  } gpus[TW_QUOTA_GPU_TYPES];
  size_t n_gpus;
};

/* One reservation: the share of a job's live attempt. */
struct tn_resv {
  char job_id[40];
  char tenant[TW_NAME_MAX];
  char accel[32];
  int64_t vcpus, gpus;
  bool spot;
  int64_t at_ms;
  /* the live attempt holding it, filled at place_begin */
  int64_t attempt_id;                /* 0 when not live */
  char instance_id[TW_MODEL_ID_MAX]; /* "" while launching */
  char provider[TW_MODEL_NAME_MAX];  /* account */
};

/* An index of positions by a 64-bit key (an attempt id, or a job id's
 * hash: then several entries may share a key, and the caller compares the
 * ids).  Open addressing, at most half full; entries can be removed.
 * tenancy_quota.c. */
struct tn_ix_slot {
  uint64_t key;
  size_t pos1; /* position + 1; 0: free */
};
struct tn_ix {
  struct tn_ix_slot *slot;
  size_t cap, n; /* cap: a power of two, or 0 */
};

/* A live attempt the reservations are matched to. */
struct tn_att {
  int64_t id;
  char job_id[40];
};

/* The last reason a job waited for, so it is noted and audited once. */
struct tn_held {
  char job_id[40];
  char reason[400];
};

struct tw_tenancy {
  struct tw_store *store;
  struct tw_clock *clock;
  /* SHA-256 fetched once for the token check of every request:
   * EVP_sha256() makes OpenSSL 3 look the algorithm up at each use, about
   * ten times the cost of hashing a token.  NULL: EVP_sha256(). */
  EVP_MD *sha256;
  struct tw_audit *audit;
  struct tw_provider **providers;
  size_t n_providers;
  int64_t webhook_timeout_ms;
  struct tn_cidr *hook_allow; /* tenancy.webhook_allow (webhook_guard.c) */
  size_t n_hook_allow;

  pthread_mutex_t mu; /* offers, http */
  /* The offers the scheduler last saw, indexed for the projection's plans
   * (a reference; NULL: none yet), and the policy set they run under. */
  struct tw_offer_index *offers;
  struct tw_policy_set *place_set;
  struct tw_placer *placer; /* borrowed; when set, projections use it */
  struct tw_http *http;     /* webhooks; made on first use */

  /* placement phase: scheduler thread only.  The reservations are kept
   * between phases and brought up to date from what changed (see
   * tenancy_quota.c): resv by job id in resv_ix, the live attempts the
   * scheduler handed over by id and by job id, the jobs reserved for
   * since the last phase, and the attempts the last phase's changes
   * named (looked at once more). */
  struct tn_resv *resv;
  size_t n_resv, cap_resv;
  struct tn_ix resv_ix;
  struct tn_att *att;
  size_t n_att, cap_att;
  struct tn_ix att_ix, att_job_ix;
  char (*fresh)[40];
  size_t n_fresh, cap_fresh;
  int64_t *recheck;
  size_t n_recheck, cap_recheck;
  uint64_t resv_cursor; /* the store's change feed (tw_store_changes_since) */
  bool resv_have;       /* false: read whole at the next phase */
  int64_t resv_full_ms; /* t->clock's time of the last whole read */
  struct tw_quota *quotas; /* every tenant's, loaded at place_begin */
  size_t n_quotas;
  struct tn_held held[64];
  size_t n_held;

  /* Quotas and budgets change rarely and are read at every submission:
   * a copy of all of them, reloaded when a write of this process bumped
   * gen (the daemon is their only writer). */
  pthread_mutex_t cmu;
  uint64_t gen, loaded_gen; /* gen: atomic */
  struct tw_quota *cq;
  size_t n_cq;
  struct tw_budget *cb;
  size_t n_cb;
  /* Tenants an admission found to exist (under cmu): a tenant is never
   * deleted, so one seen once exists for good and its submissions skip
   * the lookup (a round trip to the store each); one not found is asked
   * again every time (another replica may create it). */
  char (*known)[64];
  size_t n_known;

  /* maintenance thread */
  pthread_t thread;
  bool started, stopping;
  pthread_mutex_t tmu;
  pthread_cond_t tcv;
  int64_t interval_ms;
  int64_t workdirs_swept_ms; /* the maintenance thread's last sweep */
};

/* tenancy.c: whether an admission found tenant to exist before (then it
 * exists: tenants are never deleted); tn_tenant_seen records one found. */
bool tn_tenant_known(struct tw_tenancy *t, const char *tenant);
void tn_tenant_seen(struct tw_tenancy *t, const char *tenant);

void tn_audit(struct tw_tenancy *t, const char *principal, const char *tenant,
              const char *action, const char *object, const char *outcome,
              const char *request_id, const char *detail);

/* The cache: tn_cache_changed() after every write to tenants, quotas or
 * budgets; the lookups copy under the lock.  false: not configured. */
void tn_cache_changed(struct tw_tenancy *t);
bool tn_cache_quota(struct tw_tenancy *t, const char *tenant,
                    struct tw_quota *out);
/* The budgets of tenant that apply to project (tenant-wide and the
 * project's), at most 2, into out; returns how many. */
size_t tn_cache_budgets(struct tw_tenancy *t, const char *tenant,
                        const char *project, struct tw_budget out[2]);
enum tw_rc tn_load_all_budgets(struct tw_tenancy *t, struct tw_budget **out,
                               size_t *n, struct tw_err *err);
enum tw_rc tn_load_all_quotas(struct tw_tenancy *t, struct tw_quota **out,
                              size_t *n, struct tw_err *err);

/* tenancy_quota.c: frees what the placement phases keep. */
void tn_resv_free(struct tw_tenancy *t);

/* tenancy_budget.c: the period [start, end) holding now. */
void tn_period(enum tw_budget_period p, int64_t now_ms, int64_t *start,
               int64_t *end);
/* Projected cost of spec over the offers seen (see tenancy.h). */
int64_t tn_project_cost(struct tw_tenancy *t, const struct tw_job_spec *spec,
                        char *how, size_t howsz);
/* Hard-budget admission (tenancy_budget.c) and quota admission
 * (tenancy_quota.c); both TW_E_QUOTA with field and numbers. */
enum tw_rc tn_budget_admit(struct tw_tenancy *t, const struct tw_job_spec *spec,
                           int64_t projected, struct tw_err *err);
enum tw_rc tn_quota_admit(struct tw_tenancy *t, const struct tw_job_spec *spec,
                          struct tw_err *err);
/* Micro-USD as "$1.234567" trimmed to cents at least. */
void tn_fmt_usd(int64_t uusd, char *out, size_t outsz);

/* ---- webhook_guard.c: where a budget webhook may go ---------------------- */

struct tn_cidr;
struct sockaddr;
/* Parses the allow-list (CIDR blocks, NULL-terminated) into t. */
enum tw_rc tn_webhook_allow_set(struct tw_tenancy *t, const char *const *cidrs,
                                struct tw_err *err);
/* NULL when the daemon may connect to sa; else what sa is ("a loopback
 * address"): loopback, link-local, private and other special ranges are
 * refused unless tenancy.webhook_allow lists them. */
const char *tn_webhook_addr_refused(const struct tw_tenancy *t,
                                    const struct sockaddr *sa);
/* When a budget is set: a URL with user information, or whose host is an
 * address literal (or localhost) that would be refused: TW_E_INVALID on
 * field webhook.  A name is checked when the webhook is sent. */
enum tw_rc tn_webhook_url_check(const struct tw_tenancy *t, const char *url,
                                struct tw_err *err);

#endif
