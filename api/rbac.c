/* rbac.c - the policy table and the decision (see rbac.h). */
#include "api/rbac.h"

#include <string.h>

#define D TW_PERM_DENY
#define O TW_PERM_OWN
#define T TW_PERM_TENANT
#define A TW_PERM_ANY

/* Columns: admin, tenant-admin, member, viewer, finance, ci, metrics (a
 * column left out is deny: the metrics role is named where it is allowed,
 * on /metrics alone).  Keep one row
 * per route of api/server.c, in its order; docs/security.md prints this
 * table for people. */
static const struct tw_rbac_rule RULES[] = {
    /* jobs */
    {"POST", "/v1/jobs", TW_TGT_BODY, {A, T, T, D, D, T}},
    {"GET", "/v1/jobs", TW_TGT_QUERY_TENANT, {A, T, T, T, T, D}},
    {"GET", "/v1/jobs/{id}", TW_TGT_JOB, {A, T, T, T, T, O}},
    {"DELETE", "/v1/jobs/{id}", TW_TGT_JOB, {A, T, O, D, D, O}},
    {"GET", "/v1/jobs/{id}/events", TW_TGT_JOB, {A, T, T, T, T, O}},
    {"GET", "/v1/jobs/{id}/logs", TW_TGT_JOB, {A, T, T, T, D, O}},
    /* arrays and workflows: the handler finds the group's tenant */
    {"POST", "/v1/workflows", TW_TGT_BODY, {A, T, T, D, D, T}},
    {"GET", "/v1/workflows", TW_TGT_QUERY_TENANT, {A, T, T, T, T, D}},
    {"GET", "/v1/workflows/{id}", TW_TGT_WORKFLOW, {A, T, T, T, T, T}},
    {"DELETE", "/v1/workflows/{id}", TW_TGT_WORKFLOW, {A, T, T, D, D, T}},
    {"GET", "/v1/workflows/{id}/tasks", TW_TGT_WORKFLOW, {A, T, T, T, T, T}},
    {"GET", "/v1/workflows/{id}/graph", TW_TGT_WORKFLOW, {A, T, T, T, T, T}},
    /* the offer catalog and spend reports */
    {"GET", "/v1/offers", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    {"GET", "/v1/reports/spend", TW_TGT_QUERY_TENANT, {A, T, D, T, T, D}},
    {"GET", "/v1/replicas", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    /* placement: plans read offers only; datasets are shared; the policy
     * set is the operator's */
    {"POST", "/v1/plan", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    {"POST", "/v1/datasets", TW_TGT_GLOBAL, {A, A, A, D, D, A}},
    {"GET", "/v1/datasets", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    {"GET", "/v1/policies", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    {"PUT", "/v1/policies", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    /* probes and metrics (metrics count every tenant's jobs) */
    {"GET", "/healthz", TW_TGT_PUBLIC, {A, A, A, A, A, A}},
    {"GET", "/readyz", TW_TGT_PUBLIC, {A, A, A, A, A, A}},
    {"GET", "/metrics", TW_TGT_GLOBAL, {A, D, D, D, D, D, A}},
    /* identity and tokens */
    {"GET", "/v1/whoami", TW_TGT_GLOBAL, {A, A, A, A, A, A}},
    {"POST", "/v1/tokens", TW_TGT_BODY, {A, T, O, O, O, D}},
    {"GET", "/v1/tokens", TW_TGT_GLOBAL, {A, T, O, O, O, O}},
    {"DELETE", "/v1/tokens/{id}", TW_TGT_TOKEN, {A, T, O, O, O, O}},
    /* principals and tenants */
    {"POST", "/v1/users", TW_TGT_BODY, {A, T, D, D, D, D}},
    {"GET", "/v1/users", TW_TGT_QUERY_TENANT, {A, T, D, D, D, D}},
    {"POST", "/v1/users/{name}/disable", TW_TGT_USER, {A, T, D, D, D, D}},
    {"POST", "/v1/tenants", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    {"GET", "/v1/tenants", TW_TGT_GLOBAL, {A, T, T, T, T, D}},
    /* quotas and budgets */
    {"GET", "/v1/tenants/{tenant}/quota", TW_TGT_TENANT, {A, T, T, T, T, D}},
    {"PUT", "/v1/tenants/{tenant}/quota", TW_TGT_TENANT, {A, D, D, D, D, D}},
    {"GET", "/v1/tenants/{tenant}/budgets", TW_TGT_TENANT, {A, T, T, T, T, D}},
    {"GET", "/v1/tenants/{tenant}/budget", TW_TGT_TENANT, {A, T, T, T, T, D}},
    {"PUT", "/v1/tenants/{tenant}/budget", TW_TGT_TENANT, {A, T, D, D, T, D}},
    {"GET",
     "/v1/tenants/{tenant}/projects/{project}/budget",
     TW_TGT_TENANT,
     {A, T, T, T, T, D}},
    {"PUT",
     "/v1/tenants/{tenant}/projects/{project}/budget",
     TW_TGT_TENANT,
     {A, T, D, D, T, D}},
    /* the audit log */
    {"GET", "/v1/audit", TW_TGT_QUERY_TENANT, {A, T, D, D, T, D}},
    {"GET", "/v1/audit/verify", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    /* provider credentials */
    {"GET", "/v1/secrets", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    {"PUT", "/v1/secrets/{name}", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    {"DELETE", "/v1/secrets/{name}", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    {"POST", "/v1/secrets/rotate", TW_TGT_GLOBAL, {A, D, D, D, D, D}},
    /* tradewind-agent: an agent token for its own attempt, nobody else
     * (api/auth.c); the binary it fetches, the admin too */
    {"POST",
     "/v1/agent/attempts/{attempt}/register",
     TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST",
     "/v1/agent/attempts/{attempt}/heartbeat",
     TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST", "/v1/agent/attempts/{attempt}/logs", TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST", "/v1/agent/attempts/{attempt}/phase", TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST",
     "/v1/agent/attempts/{attempt}/checkpoint",
     TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST", "/v1/agent/attempts/{attempt}/notice", TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"POST", "/v1/agent/attempts/{attempt}/exit", TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    {"GET", "/v1/agent/binary", TW_TGT_AGENT, {A, D, D, D, D, D}},
    /* a SkyPilot task's workdir: uploaded by who may submit to the
     * tenant, fetched by the attempt's agent alone */
    {"PUT", "/v1/workdirs/{sha256}", TW_TGT_QUERY_TENANT, {A, T, T, D, D, T}},
    {"GET", "/v1/agent/attempts/{attempt}/workdir", TW_TGT_AGENT,
     {D, D, D, D, D, D}},
    /* live job events: who may list the jobs (a tenant its own) */
    {"GET", "/v1/events/stream", TW_TGT_QUERY_TENANT, {A, T, T, T, T, D}},
    {"GET", "/v1/jobs/{id}/attempts", TW_TGT_JOB, {A, T, T, T, T, O}},
    /* the web console's files: public (its data comes from the API with
     * the user's own token) */
    {"GET", "/ui", TW_TGT_PUBLIC, {A, A, A, A, A, A}},
    {"GET", "/ui/{asset}", TW_TGT_PUBLIC, {A, A, A, A, A, A}},
};

#undef D
#undef O
#undef T
#undef A

const struct tw_rbac_rule *tw_rbac_rules(size_t *n) {
  *n = sizeof RULES / sizeof RULES[0];
  return RULES;
}

const struct tw_rbac_rule *tw_rbac_find(const char *method, const char *path) {
  for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++)
    if (!strcmp(RULES[i].method, method) && !strcmp(RULES[i].path, path))
      return &RULES[i];
  return NULL;
}

/* May the role read what this rule acts on?  An object the role cannot
 * even see is answered 404, not 403. */
static bool can_read(const struct tw_rbac_rule *rule, enum tw_role role) {
  const struct tw_rbac_rule *get = tw_rbac_find("GET", rule->path);
  return get && get->perm[role] >= TW_PERM_TENANT;
}

enum tw_rbac_verdict tw_rbac_decide(const struct tw_rbac_rule *rule,
                                    const struct tw_principal *p,
                                    const char *obj_tenant,
                                    const char *obj_owner) {
  if (!rule || (unsigned)p->role >= TW_ROLE_COUNT)
    return TW_RBAC_FORBID;
  enum tw_perm perm = (enum tw_perm)rule->perm[p->role];
  if (perm == TW_PERM_ANY)
    return TW_RBAC_ALLOW;
  /* other tenants' objects do not exist for this caller */
  if (obj_tenant && strcmp(obj_tenant, p->tenant))
    return TW_RBAC_HIDE;
  switch (perm) {
  case TW_PERM_TENANT:
    return TW_RBAC_ALLOW;
  case TW_PERM_OWN:
    if (obj_owner && !strcmp(obj_owner, p->name))
      return TW_RBAC_ALLOW;
    return can_read(rule, p->role) ? TW_RBAC_FORBID : TW_RBAC_HIDE;
  default:
    return TW_RBAC_FORBID;
  }
}

const char *tw_perm_str(enum tw_perm p) {
  static const char *const n[] = {"deny", "own", "tenant", "any"};
  return (unsigned)p < 4 ? n[p] : "?";
}

const char *tw_target_str(enum tw_target t) {
  static const char *const n[] = {"public", "global",       "job",
                                  "tenant", "token",        "user",
                                  "query-tenant", "body", "agent"};
  return (unsigned)t < 9 ? n[t] : "?";
}
