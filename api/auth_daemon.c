/* auth_daemon.c - the daemon's security from its config (see
 * auth_daemon.h). */
#include "api/auth_daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/oidc.h"
#include "broker/core/config.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/tenancy/secrets.h"
#include "broker/tenancy/tenancy.h"
#include "providers/provider.h"

static const char *opt(const char *s) { return s && *s ? s : NULL; }

enum tw_rc tw_auth_daemon_resolve_secret(void *ctx, const char *name,
                                         char **value, struct tw_err *err) {
  char *v = NULL;
  size_t len = 0;
  enum tw_rc rc = tw_secrets_get(ctx, name, &v, &len, err);
  if (rc)
    return rc;
  *value = tw_strndup(v, len);
  tw_secrets_value_free(v, len);
  return TW_OK;
}

enum tw_rc tw_auth_daemon_open_secrets(const struct tw_cfg *cfg,
                                       struct tw_store *store,
                                       struct tw_secrets **out,
                                       struct tw_err *err) {
  *out = NULL;
  /* only with a key; a key named but unreadable is an error */
  const char *env = opt(cfg->secrets_key_env);
  if (!opt(cfg->secrets_key_file) && !(env && getenv(env) && *getenv(env)))
    return TW_OK;
  struct tw_secrets_opts so = {
      .store = store,
      .key_file = opt(cfg->secrets_key_file),
      .key_env = env,
      .previous_key_file = opt(cfg->secrets_previous_key_file),
      .previous_key_env = opt(cfg->secrets_previous_key_env)};
  struct tw_secrets *sec = NULL;
  enum tw_rc rc = tw_secrets_open(&so, &sec, err);
  if (rc)
    return rc;
  if (so.previous_key_file ||
      (so.previous_key_env && getenv(so.previous_key_env))) {
    size_t n = 0;
    struct tw_err rerr = {0};
    if (tw_secrets_rotate(sec, &n, &rerr))
      tw_log_warn("secrets", "rotation left values behind: %s", rerr.msg);
    tw_log_info("secrets", "rotated=%zu to key=%s", n, tw_secrets_key_id(sec));
  }
  *out = sec;
  return TW_OK;
}

enum tw_rc tw_auth_daemon_start(const struct tw_cfg *cfg,
                                struct tw_store *store,
                                struct tw_secrets *secrets,
                                struct tw_provider **providers,
                                size_t n_providers, struct tw_auth_daemon **out,
                                struct tw_err *err) {
  struct tw_auth_daemon *d = tw_calloc(1, sizeof *d);
  enum tw_rc rc;
  *out = NULL;
  d->secrets = secrets; /* ours from here, even on failure */
  char token_file[1024];
  if (opt(cfg->auth_admin_token_file))
    snprintf(token_file, sizeof token_file, "%s", cfg->auth_admin_token_file);
  else
    tw_tenancy_token_path(cfg->db, token_file, sizeof token_file);
  /* tenancy.webhook_allow: a list of strings */
  const struct tw_node *wa = cfg->tenancy_webhook_allow;
  const char **allow = tw_calloc(wa ? wa->n + 1 : 1, sizeof *allow);
  for (size_t i = 0; wa && i < wa->n; i++) {
    if (wa->items[i]->kind != TW_NODE_SCALAR) {
      free(allow);
      rc = tw_err_field(err, TW_E_INVALID, "tenancy.webhook_allow",
                        "tenancy.webhook_allow[%zu]: expected an address or "
                        "CIDR block",
                        i);
      goto fail;
    }
    allow[i] = wa->items[i]->str;
  }
  struct tw_tenancy_opts to = {.store = store,
                               .providers = providers,
                               .n_providers = n_providers,
                               .admin_token_file = token_file,
                               .webhook_allow = allow};
  rc = tw_tenancy_open(&to, &d->tenancy, err);
  free(allow);
  if (rc)
    goto fail;
  if (!d->secrets &&
      (rc = tw_auth_daemon_open_secrets(cfg, store, &d->secrets, err)))
    goto fail;
  d->opts.open = !strcmp(cfg->auth_mode, "open");
  d->opts.tenancy = d->tenancy;
  d->opts.secrets = d->secrets;
  d->opts.rate_per_s = cfg->auth_rate_per_s > 0 ? cfg->auth_rate_per_s : -1;
  d->opts.rate_burst = cfg->auth_rate_burst;
  d->opts.tls_cert_file = opt(cfg->tls_cert_file);
  d->opts.tls_key_file = opt(cfg->tls_key_file);
  if ((rc = tw_oidc_cfg_parse(cfg->auth_oidc, &d->oidc, err)))
    goto fail;
  d->opts.oidc = d->oidc;
  /* on a shared PostgreSQL store the leader alone ticks (docs/ha.md):
   * broker/daemon.c starts it once it holds the lease */
  if (strcmp(cfg->store_backend, "postgres") &&
      (rc = tw_tenancy_start(d->tenancy, cfg->tenancy_tick_ms, err)))
    goto fail;
  *out = d;
  return TW_OK;
fail:
  tw_auth_daemon_stop(d);
  return rc;
}

void tw_auth_daemon_stop(struct tw_auth_daemon *d) {
  if (!d)
    return;
  tw_tenancy_free(d->tenancy);
  tw_secrets_free(d->secrets);
  tw_oidc_cfg_free(d->oidc);
  free(d);
}
