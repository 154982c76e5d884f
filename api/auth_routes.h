/* auth_routes.h - the routes of api/h_tenancy.c, as rows of the server's
 * route table (api/server.c expands TW_TENANCY_ROUTES inside tw_routes[]),
 * and their handlers.  Each has its rule in api/rbac.c. */
#ifndef TW_API_AUTH_ROUTES_H
#define TW_API_AUTH_ROUTES_H

struct tw_req;

void tw_h_whoami(struct tw_req *r);
void tw_h_tokens_create(struct tw_req *r);
void tw_h_tokens_list(struct tw_req *r);
void tw_h_tokens_revoke(struct tw_req *r);
void tw_h_users_create(struct tw_req *r);
void tw_h_users_list(struct tw_req *r);
void tw_h_users_disable(struct tw_req *r);
void tw_h_tenants_create(struct tw_req *r);
void tw_h_tenants_list(struct tw_req *r);
void tw_h_quota_get(struct tw_req *r);
void tw_h_quota_put(struct tw_req *r);
void tw_h_budgets_list(struct tw_req *r);
void tw_h_budget_get(struct tw_req *r);
void tw_h_budget_put(struct tw_req *r);
void tw_h_audit_list(struct tw_req *r);
void tw_h_audit_verify(struct tw_req *r);
void tw_h_secrets_list(struct tw_req *r);
void tw_h_secrets_put(struct tw_req *r);
void tw_h_secrets_delete(struct tw_req *r);
void tw_h_secrets_rotate(struct tw_req *r);

/* "/v1/secrets/rotate" comes before "/v1/secrets/{name}" so the literal
 * wins; budget and project paths are distinct templates. */
#define TW_TENANCY_ROUTES                                                      \
  {"GET", "/v1/whoami", tw_h_whoami, "whoami"},                                \
      {"POST", "/v1/tokens", tw_h_tokens_create, "tokens_create"},             \
      {"GET", "/v1/tokens", tw_h_tokens_list, "tokens_list"},                  \
      {"DELETE", "/v1/tokens/{id}", tw_h_tokens_revoke, "tokens_revoke"},      \
      {"POST", "/v1/users", tw_h_users_create, "users_create"},                \
      {"GET", "/v1/users", tw_h_users_list, "users_list"},                     \
      {"POST", "/v1/users/{name}/disable", tw_h_users_disable,                 \
       "users_disable"},                                                       \
      {"POST", "/v1/tenants", tw_h_tenants_create, "tenants_create"},          \
      {"GET", "/v1/tenants", tw_h_tenants_list, "tenants_list"},               \
      {"GET", "/v1/tenants/{tenant}/quota", tw_h_quota_get, "quota_get"},      \
      {"PUT", "/v1/tenants/{tenant}/quota", tw_h_quota_put, "quota_put"},      \
      {"GET", "/v1/tenants/{tenant}/budgets", tw_h_budgets_list,               \
       "budgets_list"},                                                        \
      {"GET", "/v1/tenants/{tenant}/budget", tw_h_budget_get, "budget_get"},   \
      {"PUT", "/v1/tenants/{tenant}/budget", tw_h_budget_put, "budget_put"},   \
      {"GET", "/v1/tenants/{tenant}/projects/{project}/budget",                \
       tw_h_budget_get, "project_budget_get"},                                 \
      {"PUT", "/v1/tenants/{tenant}/projects/{project}/budget",                \
       tw_h_budget_put, "project_budget_put"},                                 \
      {"GET", "/v1/audit", tw_h_audit_list, "audit_list"},                     \
      {"GET", "/v1/audit/verify", tw_h_audit_verify, "audit_verify"},          \
      {"GET", "/v1/secrets", tw_h_secrets_list, "secrets_list"},               \
      {"POST", "/v1/secrets/rotate", tw_h_secrets_rotate, "secrets_rotate"},   \
      {"PUT", "/v1/secrets/{name}", tw_h_secrets_put, "secrets_put"},          \
      {"DELETE", "/v1/secrets/{name}", tw_h_secrets_delete, "secrets_delete"},

#endif
