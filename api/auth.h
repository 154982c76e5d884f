/* auth.h - the API's security settings: who may call (bearer tokens or
 * the open mode), how often (per-token rate limit), and over what (TLS).
 * The settings travel inside struct tw_api_opts (api.h); api/auth.c
 * applies them to every request before its handler runs. */
#ifndef TW_API_AUTH_H
#define TW_API_AUTH_H

#include <stdbool.h>
#include <stdint.h>

struct tw_tenancy;
struct tw_secrets;
struct tw_oidc_cfg;

struct tw_auth_opts {
  /* auth.mode: open.  Every request acts as the admin "anonymous", with
   * no token: for tests and a broker nobody else can reach.  The default
   * (false) requires a bearer token on every route but the probes. */
  bool open;
  /* Principals, tokens, quotas, budgets and the audit log.  Borrowed.
   * NULL: no token can be checked (every guarded route answers 401 unless
   * open) and nothing is audited. */
  struct tw_tenancy *tenancy;
  /* Sealed provider credentials (/v1/secrets); NULL: those routes answer
   * 503.  Borrowed. */
  struct tw_secrets *secrets;
  /* Requests per second per token, and the burst allowed above it.
   * 0: 50 and 100; rate < 0: no limit. */
  int64_t rate_per_s;
  int64_t rate_burst;
  /* PEM files of the certificate (chain) and its private key: serve
   * HTTPS.  Both or neither. */
  const char *tls_cert_file;
  const char *tls_key_file;
  /* Identity providers whose JWTs sign in (api/oidc.h); NULL: none.
   * Borrowed. */
  const struct tw_oidc_cfg *oidc;
};

#endif
