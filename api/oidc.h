/* oidc.h - sign-in through an OpenID Connect identity provider: bearer
 * tokens that are JWTs (api/jwt.h) from the issuers the config lists,
 * mapped to a principal of a tenant by the config's rules.
 *
 * Config (auth.oidc, docs/security.md "Identity providers"):
 *
 *   auth:
 *     oidc:
 *       issuers:
 *         - name: corp                    # principals are "corp:<...>"
 *           issuer: https://login.example.com
 *           audiences: [tradewind]        # aud must hold one of them
 *           jwks_uri: ""                  # "": discovery, from
 *                                         # <issuer>/.well-known/openid-configuration
 *           clock_skew_s: 60
 *           jwks_refresh_s: 3600          # keys re-read this often
 *           jwks_min_refetch_s: 30        # an unknown kid refetches at
 *                                         # most this often
 *           principal_claim: sub          # names the principal
 *           rules:                        # in order; the first that
 *             - name: ml-admins           # matches grants
 *               match: {groups: ml-admins}
 *               tenant: ml
 *               role: tenant-admin
 *               principal: "{email}"      # optional template
 *
 * A rule matches when every claim it names matches one of its globs
 * (fnmatch(3), no flags: '*' also crosses '/'); a claim that is a list of
 * strings matches when one element does; a missing claim, or one that is
 * not a string, never matches.  A rule with an empty match is refused:
 * granting everybody must be written (`sub: "*"`).  Nothing is granted
 * unless a rule says so: a valid token that no rule maps is a principal
 * without a role, answered 403 on every route.  Role admin can only be
 * granted with tenant "*", and every other role only in a named tenant.
 *
 * What a token must pass (in this order, each failure a 401 naming it):
 *   the JWS shape and alg (api/jwt.h: RS256 or ES256 only), iss equal to a
 *   configured issuer, exp (required), nbf and iat within clock_skew_s of
 *   now, aud holding a configured audience, sub present; then a key of the
 *   issuer's JWK Set with the token's kid and the alg's type, and the
 *   signature.  Keys come only from the configured jwks_uri or the
 *   discovery document of the configured issuer (whose "issuer" must be
 *   the configured one), over https, or http to a loopback address; they
 *   are cached, re-read after jwks_refresh_s, and re-read at once for an
 *   unknown kid, at most once per jwks_min_refetch_s, so a flood of
 *   made-up kids costs the issuer one request per interval.
 *
 * A sign-in is the first request with a given token: it is audited (action
 * "oidc sign-in", outcome ok or denied; the detail names the issuer, the
 * subject, the rule that granted the role and the token's expiry, never
 * the token).  The verified token is then a session: later requests with
 * it are answered from a cache keyed by the token's SHA-256 until it
 * expires, without verifying or auditing it again.
 *
 * Thread-safe: the API's connection threads call it concurrently. */
#ifndef TW_API_OIDC_H
#define TW_API_OIDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/tenancy/tenancy.h"

struct tw_node;
struct tw_clock;
struct tw_oidc_cfg;
struct tw_oidc;

/* Parses the auth.oidc mapping (NULL: no issuer, *out NULL).  Errors are
 * TW_E_INVALID naming the key path ("auth.oidc.issuers[1].rules[0].role:
 * unknown role \"root\"").  *out is owned (tw_oidc_cfg_free). */
enum tw_rc tw_oidc_cfg_parse(const struct tw_node *oidc,
                             struct tw_oidc_cfg **out, struct tw_err *err);
void tw_oidc_cfg_free(struct tw_oidc_cfg *c);

/* Builds the verifier over cfg (borrowed: outlives *out).  ten (borrowed)
 * receives the sign-in audit entries and is asked whether a rule's tenant
 * exists; NULL: neither.  clock NULL: real.  Fetches nothing yet: the
 * first token of an issuer fetches its keys.  *out is owned. */
enum tw_rc tw_oidc_new(const struct tw_oidc_cfg *cfg, struct tw_clock *clock,
                       struct tw_tenancy *ten, struct tw_oidc **out,
                       struct tw_err *err);
void tw_oidc_free(struct tw_oidc *o);

/* Whether a bearer value has the shape of a JWT (three base64url parts):
 * the tokens this module is asked about. */
bool tw_oidc_is_jwt(const char *token);

enum tw_oidc_result {
  TW_OIDC_OK = 0,      /* *out is the principal */
  TW_OIDC_REFUSED,     /* 401: why says what failed */
  TW_OIDC_NO_ROLE,     /* 403: a valid identity no rule grants a role */
  TW_OIDC_UNAVAILABLE, /* 503: the issuer's keys could not be fetched */
};

/* Checks token (NUL-terminated) and maps it.  tenant (NULL or "": any)
 * picks, among the rules that match, the first that grants in that tenant
 * (the X-Tradewind-Tenant header: one identity, several tenants).
 * request_id goes into the audit entry.  why (whysz bytes) receives a
 * reason fit for the answer and the log: it never holds the token. */
enum tw_oidc_result tw_oidc_authenticate(struct tw_oidc *o, const char *token,
                                         const char *tenant,
                                         const char *request_id,
                                         struct tw_principal *out, char *why,
                                         size_t whysz);

/* Successful JWK Set fetches of the issuer named name (tests, metrics);
 * 0 for an unknown name. */
uint64_t tw_oidc_jwks_fetches(struct tw_oidc *o, const char *name);

/* Whether a refused token may be logged now: at most 10 lines a second,
 * so a flood of bad tokens cannot flood the log.  *dropped receives the
 * lines left out since the last one allowed. */
bool tw_oidc_log_ok(struct tw_oidc *o, unsigned *dropped);

/* For api/auth.c (api/auth_oidc.c): authenticates the request's bearer
 * JWT into *who, the X-Tradewind-Tenant header picking the tenant; false
 * when answered: 401 with WWW-Authenticate (refused), 403 (no rule grants
 * a role), 503 with Retry-After (the issuer's keys are out of reach). */
struct tw_req;
bool tw_auth_oidc(struct tw_req *r, struct tw_oidc *o, const char *jwt,
                  struct tw_principal *who);

#endif
