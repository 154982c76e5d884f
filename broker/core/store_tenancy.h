/* store_tenancy.h - the tables of broker/tenancy/ other than budgets
 * (store_budgets.h): tenants, principals, tokens, jobs' owners, quotas and
 * reservations.  Plain rows in, plain rows out: the tenancy module
 * validates names and roles, makes and checks tokens, and turns quota rows
 * into limits.  Where a change and its check must be one transaction (a
 * principal for a tenant that exists, a token for a principal that is
 * enabled, a quota set against the version read), the check is here.
 * Thread-safe, as the store. */
#ifndef TW_CORE_STORE_TENANCY_H
#define TW_CORE_STORE_TENANCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/store.h"

struct tw_store;
struct tw_audit_event;

/* ---- tenants ------------------------------------------------------------- */

struct tw_store_tenant {
  char name[64];
  char cohort[64]; /* "" when in none */
  int64_t created_ms;
};

/* TW_E_CONFLICT (field "name") when it exists. */
enum tw_rc tw_store_tenant_create(struct tw_store *s, const char *name,
                                  int64_t at_ms, struct tw_err *err);
/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_tenant_get(struct tw_store *s, const char *name,
                               struct tw_store_tenant *out, struct tw_err *err);
/* By name; free() *out. */
enum tw_rc tw_store_tenant_list(struct tw_store *s,
                                struct tw_store_tenant **out, size_t *n,
                                struct tw_err *err);

/* ---- principals ---------------------------------------------------------- */

struct tw_store_principal {
  char name[64];
  char tenant[64];
  char role[32]; /* as the tenancy module names it */
  bool service, disabled;
  int64_t created_ms;
};

/* Stores p (disabled ignored) created at p->created_ms.  When in_tenant,
 * p->tenant must exist (TW_E_NOTFOUND); TW_E_CONFLICT (field "name") when
 * the name is taken. */
enum tw_rc tw_store_principal_create(struct tw_store *s,
                                     const struct tw_store_principal *p,
                                     bool in_tenant, struct tw_err *err);
/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_principal_get(struct tw_store *s, const char *name,
                                  struct tw_store_principal *out,
                                  struct tw_err *err);
/* Of tenant (NULL: all), by name; free() *out. */
enum tw_rc tw_store_principal_list(struct tw_store *s, const char *tenant,
                                   struct tw_store_principal **out, size_t *n,
                                   struct tw_err *err);
/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_principal_disable(struct tw_store *s, const char *name,
                                      struct tw_err *err);
enum tw_rc tw_store_principal_count(struct tw_store *s, int64_t *n,
                                    struct tw_err *err);

/* ---- tokens -------------------------------------------------------------- */

struct tw_store_token {
  char id[17]; /* 16 hex digits */
  char principal[64];
  char tenant[64]; /* the principal's */
  char name[64];
  int64_t created_ms, expires_ms, revoked_ms; /* 0: never, live */
};

struct tw_store_token_new {
  const char *id, *principal, *name;
  const unsigned char *hash; /* 32 bytes: SHA-256 of the token's text */
  int64_t created_ms, expires_ms;
};

/* Stores a token of an existing (TW_E_NOTFOUND), enabled (TW_E_CONFLICT)
 * principal; *out (may be NULL) receives it as stored. */
enum tw_rc tw_store_token_create(struct tw_store *s,
                                 const struct tw_store_token_new *t,
                                 struct tw_store_token *out,
                                 struct tw_err *err);

/* What authenticating token id needs, in one read: the stored hash
 * (found false when the id is unknown or its hash is not 32 bytes) and
 * the principal. */
struct tw_store_token_auth {
  bool found;
  unsigned char hash[32];
  int64_t expires_ms, revoked_ms;
  struct tw_store_principal p;
};
enum tw_rc tw_store_token_auth(struct tw_store *s, const char *id,
                               struct tw_store_token_auth *out,
                               struct tw_err *err);

/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_token_get(struct tw_store *s, const char *id,
                              struct tw_store_token *out, struct tw_err *err);
/* Of principal and of tenant (NULL: any), oldest first; free() *out. */
enum tw_rc tw_store_token_list(struct tw_store *s, const char *principal,
                               const char *tenant, struct tw_store_token **out,
                               size_t *n, struct tw_err *err);
/* Sets revoked_ms = at_ms unless revoked already.  TW_E_NOTFOUND. */
enum tw_rc tw_store_token_revoke(struct tw_store *s, const char *id,
                                 int64_t at_ms, struct tw_err *err);

/* ---- the first start ----------------------------------------------------- */

/* On a database without principals only, in one transaction: the tenant
 * (unless it exists), the principal admin (global: no tenant check), its
 * token and the audit entry, all at at_ms.  *made says whether it did
 * (false: somebody made a principal meanwhile). */
struct tw_store_bootstrap {
  const char *tenant;
  const struct tw_store_principal *admin;
  const struct tw_store_token_new *token;
  const struct tw_audit_event *audit;
  int64_t at_ms;
};
enum tw_rc tw_store_tenancy_bootstrap(struct tw_store *s,
                                      const struct tw_store_bootstrap *b,
                                      bool *made, struct tw_err *err);

/* ---- jobs' owners -------------------------------------------------------- */

struct tw_store_owner {
  const char *job_id, *tenant, *project, *principal;
  int64_t projected_uusd;
};

struct tw_store_owner_rec {
  char principal[64];
  char tenant[64];
  char project[64];
  int64_t projected_uusd;
};

/* Records o (NULL: none; a job keeps its first owner) and appends audit
 * (NULL: none), both at at_ms and in one transaction. */
enum tw_rc tw_store_job_owner_put(struct tw_store *s,
                                  const struct tw_store_owner *o,
                                  const struct tw_audit_event *audit,
                                  int64_t at_ms, struct tw_err *err);
/* A submission in one write: the new job as tw_store_job_create() stores
 * it (pending, its creation event, the idempotency key), its owner and
 * the request's audit entry, in one group-committed transaction, durable
 * before returning (on sqlite in a savepoint of its own; on PostgreSQL
 * with the submissions next to it in the batch, in one statement, one
 * savepoint for them all: store_int.h, store__write_grouped).  A crash leaves all of them or
 * none: never a job that runs unaudited, or without the owner row whose
 * projection counts against its budget.  The new job's id is the owner's
 * job and the entry's object (owner->job_id and audit->object are
 * ignored); both are at the job's creation time.  owner or audit NULL:
 * that one is not written.  A replay (*replayed true) writes neither: the
 * first submission did.  TW_E_CONFLICT as tw_store_job_create(); any
 * failure stores nothing and leaves *out empty. */
enum tw_rc tw_store_job_submit(struct tw_store *s, const struct tw_job_new *job,
                               const struct tw_store_owner *owner,
                               const struct tw_audit_event *audit,
                               struct tw_job_rec *out, bool *replayed,
                               struct tw_err *err);
/* *found false when the job has no recorded owner. */
enum tw_rc tw_store_job_owner_get(struct tw_store *s, const char *job_id,
                                  bool *found, struct tw_store_owner_rec *out,
                                  struct tw_err *err);

/* ---- quotas -------------------------------------------------------------- */

struct tw_store_quota_tenant {
  char tenant[64];
  char cohort[64];
  int spot_share_pct;
  int64_t version;
};

/* One limited resource of a tenant: "vcpus", "jobs", "gpu:<name>". */
struct tw_store_quota_row {
  char tenant[64];
  char resource[48];
  int64_t limit, borrow;
};

/* Tenants and their rows, by tenant then resource, from one read. */
struct tw_store_quotas {
  struct tw_store_quota_tenant *tenants;
  size_t n_tenants;
  struct tw_store_quota_row *rows;
  size_t n_rows;
};
void tw_store_quotas_release(struct tw_store_quotas *q);

/* Of tenant (NULL: every tenant); an unknown tenant gives none.
 * tw_store_quotas_release(out). */
enum tw_rc tw_store_quotas_get(struct tw_store *s, const char *tenant,
                               struct tw_store_quotas *out, struct tw_err *err);

/* Replaces tenant's rows with rows (their tenant ignored), sets cohort and
 * spot share and bumps the version, in one transaction.  TW_E_NOTFOUND
 * for an unknown tenant; TW_E_CONFLICT when if_version > 0 and the stored
 * version differs.  *out (release it) receives the tenant as stored. */
struct tw_store_quota_set {
  const char *tenant, *cohort;
  int spot_share_pct;
  const struct tw_store_quota_row *rows;
  size_t n_rows;
  int64_t if_version;
};
enum tw_rc tw_store_quota_set(struct tw_store *s,
                              const struct tw_store_quota_set *q,
                              struct tw_store_quotas *out, struct tw_err *err);

/* ---- reservations: what a job's live attempt holds ----------------------- */

struct tw_store_resv {
  char job_id[40];
  char tenant[64];
  char accel[32];
  int64_t vcpus, gpus;
  bool spot;
  int64_t at_ms;
};

/* Every reservation; free() *out. */
enum tw_rc tw_store_reservations(struct tw_store *s, struct tw_store_resv **out,
                                 size_t *n, struct tw_err *err);
/* Creates or replaces the job's reservation, on offer_id. */
enum tw_rc tw_store_reservation_put(struct tw_store *s,
                                    const struct tw_store_resv *v,
                                    const char *offer_id, struct tw_err *err);
/* tw_store_reservation_put as one operation of tw_store_write_ops(): arg
 * is a struct tw_store_resv_put. */
struct tw_store_resv_put {
  const struct tw_store_resv *v;
  const char *offer_id;
};
enum tw_rc tw_store_reservation_put_op(struct tw_store *s, struct tw_db *db,
                                       void *arg, struct tw_err *err);
enum tw_rc tw_store_reservation_delete(struct tw_store *s, const char *job_id,
                                       struct tw_err *err);

#endif
