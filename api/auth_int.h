/* auth_int.h - what api/auth.c offers the rest of api/: the one call that
 * guards every route, the hooks of job submission, the TLS options, and
 * for the tenancy handlers, who is calling and with what permission.
 *
 * The flow of one request through tw_auth_dispatch():
 *   1. the route's rule (api/rbac.c); none: 403 for everybody;
 *   2. public routes (probes) run at once;
 *   3. authentication: `Authorization: Bearer <token>`, else 401 with
 *      `WWW-Authenticate: Bearer`; the open mode acts as admin;
 *   4. the token's rate limit: 429 with Retry-After;
 *   5. authorization against the route's target (the job, tenant, token
 *      or principal it names, or ?tenant=): 403, or 404 for what the
 *      caller may not know exists;
 *   6. the handler;
 *   7. for POST, PUT, PATCH and DELETE, an audit entry with the outcome,
 *      unless the handler's own write carried it (a job just created:
 *      job, owner and entry in one transaction, tw_auth_job_store).
 * Runs on the request's connection thread; thread-safe. */
#ifndef TW_API_AUTH_INT_H
#define TW_API_AUTH_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api_int.h"
#include "api/auth.h"
#include "api/rbac.h"
#include "broker/sched/agent.h"

struct tw_auth;
struct tw_job_spec;
struct tw_job_rec;

/* One request's security state; lives on tw_auth_dispatch()'s stack and
 * is reachable as r->auth while the handler runs. */
struct tw_auth_ctx {
  struct tw_principal who;
  const struct tw_rbac_rule *rule;
  enum tw_perm perm;              /* who's permission on this route */
  char tenant[TW_NAME_MAX];       /* the object's tenant (audit) */
  char object[192];               /* what was acted on (audit) */
  char query_tenant[TW_NAME_MAX]; /* ?tenant= added for the caller */
  bool denied;                    /* answered 403/404 by authorization */
  bool audited; /* the handler's write carried the entry: none after */
  int64_t projected_uusd; /* of the job being submitted (admission) */
  char note[96]; /* the handler's words for the audit detail; "" none */
  /* a `twa_` token: the agent of one attempt (docs/agent.md), which may
   * call its own attempt's TW_TGT_AGENT routes and nothing else; who is
   * then "agent:<attempt>" and holds no role */
  bool agent;
  struct tw_agent_caller caller;
};

enum tw_rc tw_auth_new(const struct tw_auth_opts *o, struct tw_clock *clock,
                       struct tw_auth **out, struct tw_err *err);
void tw_auth_free(struct tw_auth *a);

/* The PEM certificate (its chain following) and key the server serves
 * TLS with (api/door.h terminates it), both NULL without a certificate;
 * the texts stay a's.  TW_E_IO when a file cannot be read, TW_E_INVALID
 * when one is not PEM. */
enum tw_rc tw_auth_tls_pem(struct tw_auth *a, const char **cert,
                           const char **key, struct tw_err *err);
bool tw_auth_tls_on(const struct tw_auth *a);

/* Step 3 and 4 from the request head alone, before any body byte is read
 * or 100 Continue sent (server.c, the first call of the access handler):
 * false when answered (401, 429); true with r->head_auth set, which step 3
 * of tw_auth_dispatch then takes as the caller, or with nothing set for a
 * public route or one without a rule (dispatch answers those). */
bool tw_auth_head(struct tw_req *r);

/* Guards and runs one route's handler (see above). */
void tw_auth_dispatch(struct tw_req *r, tw_handler_fn fn);

/* POST /v1/jobs, after the spec parsed: a spec without `tenant:` (that is,
 * "default") goes to the caller's tenant; another tenant is 404, a role
 * that may not submit there 403; then quota and budget admission (403
 * quota-exceeded / budget-exceeded naming the quota and the numbers).
 * false: answered; the handler returns. */
bool tw_auth_admit_job(struct tw_req *r, struct tw_job_spec *spec);
/* POST /v1/workflows and an array's POST /v1/jobs: as tw_auth_admit_job
 * for the group's tenant (*tenant may be replaced by the caller's), every
 * task spec in that tenant, then tw_tenancy_admit_group (quotas per
 * template, the hard budgets against the whole group's projection, set in
 * *projected_uusd).  false: answered. */
bool tw_auth_admit_group(struct tw_req *r, char **tenant,
                         const struct tw_job_spec *const *specs,
                         const int64_t *counts, size_t n,
                         int64_t *projected_uusd);
/* POST /v1/jobs, once admitted: stores the job with its owner and the
 * request's audit entry in one transaction (tw_tenancy_job_submit), so no
 * crash leaves a stored job unaudited or without its owner; step 7 then
 * writes nothing.  Failures are audited by step 7 as before (nothing was
 * stored); a replay writes no second entry.  Without tenancy: the job
 * alone.  Arguments and result as tw_store_job_create(). */
struct tw_job_new;
enum tw_rc tw_auth_job_store(struct tw_req *r, const struct tw_job_new *req,
                             struct tw_job_rec *out, bool *replayed,
                             struct tw_err *err);

/* May the caller read job (GET /v1/jobs/{id}'s rule)?  For a replayed
 * Idempotency-Key: a replay answers with the job only to whom may read it. */
bool tw_auth_may_read_job(struct tw_req *r, const struct tw_job_rec *job);

/* For handlers of TW_TGT_BODY and TW_TGT_GLOBAL routes: may the caller act
 * on an object of tenant (NULL: none) owned by owner (NULL: nobody)?
 * false: answered 403, or 404 "<what> not found" (what: "principal bob"),
 * the very answer an absent object gets. */
bool tw_auth_check(struct tw_req *r, const char *tenant, const char *owner,
                   const char *what);
const struct tw_principal *tw_auth_who(struct tw_req *r);
/* The agent calling (a `twa_` token), else NULL. */
const struct tw_agent_caller *tw_auth_agent(struct tw_req *r);
enum tw_perm tw_auth_perm(struct tw_req *r);
struct tw_tenancy *tw_auth_tenancy(struct tw_req *r);
struct tw_secrets *tw_auth_secrets(struct tw_req *r);
/* What the audit entry names as acted on; tenant may be NULL. */
void tw_auth_set_object(struct tw_req *r, const char *tenant,
                        const char *object);

#endif
