/* auth_daemon.h - the daemon's security, set up from its config in one
 * call: principals and the audit log (broker/tenancy/tenancy.h, with the first
 * start's admin token), sealed provider credentials (broker/tenancy/secrets.h),
 * the maintenance thread of budgets, and the API's struct tw_auth_opts.
 *
 * Config keys (broker/core/config.c; configs/tradewind.yaml documents them):
 *   auth.mode               tokens (default) | open
 *   auth.admin_token_file   default: admin.token beside the db
 *   auth.rate_limit_per_s   per token; 0: no limit.  auth.rate_limit_burst
 *   auth.oidc.issuers[]     identity providers (api/oidc.h)
 *   tls.cert_file, tls.key_file          PEM; both or neither
 *   secrets.key_file | secrets.key_env   32-byte key; no key: no secrets
 *   secrets.previous_key_file | _env     rotated away from at start
 *   tenancy.tick_ms                      budget alerts and stops */
#ifndef TW_API_AUTH_DAEMON_H
#define TW_API_AUTH_DAEMON_H

#include <stddef.h>

#include "api/auth.h"
#include "broker/base/err.h"

struct tw_cfg;
struct tw_store;
struct tw_provider;
struct tw_secrets;

struct tw_auth_daemon {
  struct tw_tenancy *tenancy; /* owned */
  struct tw_secrets *secrets; /* owned; NULL without a key */
  struct tw_oidc_cfg *oidc;   /* owned; NULL without issuers */
  struct tw_auth_opts opts;   /* for tw_api_opts.auth; borrows the above */
};

/* Opens the sealed secrets when the config names a key, rotating from a
 * previous key if one is named.  *out is owned (give it to
 * tw_auth_daemon_start, or tw_secrets_free it), NULL when the config names
 * no key.  Call before creating the providers and pass it to them as the
 * context of tw_auth_daemon_resolve_secret (struct tw_provider_opts in
 * providers/provider.h). */
enum tw_rc tw_auth_daemon_open_secrets(const struct tw_cfg *cfg,
                                       struct tw_store *store,
                                       struct tw_secrets **out,
                                       struct tw_err *err);

/* A tw_secret_resolver_fn over sealed secrets: ctx is the struct
 * tw_secrets * of tw_auth_daemon_open_secrets().  *value is owned. */
enum tw_rc tw_auth_daemon_resolve_secret(void *ctx, const char *name,
                                         char **value, struct tw_err *err);

/* Opens everything and starts the maintenance thread.  secrets (from
 * tw_auth_daemon_open_secrets; NULL: opened here if the config names a
 * key) is taken over, also on failure.  Errors name the config key.  *out
 * is owned (tw_auth_daemon_stop). */
enum tw_rc tw_auth_daemon_start(const struct tw_cfg *cfg,
                                struct tw_store *store,
                                struct tw_secrets *secrets,
                                struct tw_provider **providers,
                                size_t n_providers, struct tw_auth_daemon **out,
                                struct tw_err *err);
/* Stops the thread and frees; call before closing the store.  NULL ok. */
void tw_auth_daemon_stop(struct tw_auth_daemon *d);

#endif
