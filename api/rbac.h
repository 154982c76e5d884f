/* rbac.h - the one policy table: route x role -> allowed, and on what.
 *
 * Every route of the server (api/server.c's tw_routes[]) has exactly one
 * rule here, keyed by method and path template as the route table writes
 * them.  A route without a rule is refused for everybody (403) and fails
 * the route x role test, so a new route cannot ship unguarded.
 *
 * A rule says what the route acts on (its target) and, per role, how far
 * the permission reaches:
 *
 *   DENY    never (403)
 *   OWN     objects of the caller's tenant that the caller owns (its own
 *           jobs, its own tokens)
 *   TENANT  objects of the caller's tenant
 *   ANY     any object, any tenant: the global admin, and routes that
 *           touch no tenant's data (the offer catalog, whoami)
 *
 * An object of another tenant is answered 404 whatever the role, so that
 * its existence does not leak; so is an object of one's own tenant that
 * the role may not even read (another member's job, for CI).  Pure: no
 * I/O; api/auth.c resolves targets and applies the verdict. */
#ifndef TW_API_RBAC_H
#define TW_API_RBAC_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/tenancy/tenancy.h"

enum tw_perm { TW_PERM_DENY = 0, TW_PERM_OWN, TW_PERM_TENANT, TW_PERM_ANY };

enum tw_target {
  TW_TGT_PUBLIC = 0,   /* no authentication at all: health probes */
  TW_TGT_GLOBAL,       /* no tenant's object, or the handler scopes itself */
  TW_TGT_JOB,          /* {id} is a job: its tenant, its submitter */
  TW_TGT_TENANT,       /* the first path parameter is a tenant name */
  TW_TGT_TOKEN,        /* {id} is a token: its principal's tenant and name */
  TW_TGT_USER,         /* {name} is a principal: its tenant, itself */
  TW_TGT_QUERY_TENANT, /* ?tenant=, which defaults to the caller's */
  TW_TGT_BODY,         /* the handler finds the tenant in the body and
                          calls tw_auth_check() */
  TW_TGT_AGENT,        /* tradewind-agent's routes: only an agent token
                          (docs/agent.md), for the attempt in the path;
                          the roles' columns say who else may call */
  TW_TGT_WORKFLOW      /* {id} is an array or workflow: its tenant */
};

struct tw_rbac_rule {
  const char *method;
  const char *path;
  enum tw_target target;
  unsigned char perm[TW_ROLE_COUNT]; /* enum tw_perm, by enum tw_role */
};

/* The rule of a route, or NULL when it has none. */
const struct tw_rbac_rule *tw_rbac_find(const char *method, const char *path);
/* The whole table (tests and docs). */
const struct tw_rbac_rule *tw_rbac_rules(size_t *n);

enum tw_rbac_verdict {
  TW_RBAC_ALLOW = 0,
  TW_RBAC_FORBID, /* 403 */
  TW_RBAC_HIDE    /* 404 */
};

/* The verdict for principal p acting through rule on an object of
 * obj_tenant (NULL: none, or the caller's own scope) owned by obj_owner
 * (NULL: nobody known, which OWN never matches). */
enum tw_rbac_verdict tw_rbac_decide(const struct tw_rbac_rule *rule,
                                    const struct tw_principal *p,
                                    const char *obj_tenant,
                                    const char *obj_owner);

const char *tw_perm_str(enum tw_perm p);     /* "deny", "own", ... */
const char *tw_target_str(enum tw_target t); /* "job", "tenant", ... */

#endif
