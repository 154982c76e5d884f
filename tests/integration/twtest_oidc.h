/* twtest_oidc.h - an OpenID Connect issuer the tests run on loopback: a
 * small libmicrohttpd server answering the discovery document and the JWK
 * Set, with keys made at start (RSA 2048 and EC P-256) and tokens signed
 * by the test itself.
 *
 *   struct twtest_issuer *is = twtest_issuer_start();
 *   char *jwt = twtest_jwt(is, TWT_RSA, NULL, "{\"iss\":...}");
 *
 * The published JWK Set is a choice of the keys (twtest_issuer_publish),
 * so a test can rotate keys and count the fetches the broker makes. */
#ifndef TW_TESTS_TWTEST_OIDC_H
#define TW_TESTS_TWTEST_OIDC_H

#include <stddef.h>

enum twtest_key {
  TWT_RSA = 0, /* kid "rsa-1", RS256 */
  TWT_EC,      /* kid "ec-1", ES256 */
  TWT_RSA2,    /* kid "rsa-2", RS256: published only when asked */
  TWT_NKEYS
};

struct twtest_issuer;

/* Starts on 127.0.0.1 with a free port; publishes TWT_RSA and TWT_EC
 * (beside an HMAC key the broker must skip).  NULL (after printing why)
 * when it cannot. */
struct twtest_issuer *twtest_issuer_start(void);
void twtest_issuer_stop(struct twtest_issuer *is);
/* "http://127.0.0.1:PORT", the issuer's iss. */
const char *twtest_issuer_url(const struct twtest_issuer *is);
/* Which keys the JWK Set holds: a bit per enum twtest_key. */
void twtest_issuer_publish(struct twtest_issuer *is, unsigned mask);
/* Requests served so far for the JWK Set and the discovery document. */
unsigned twtest_issuer_jwks_hits(struct twtest_issuer *is);
unsigned twtest_issuer_discovery_hits(struct twtest_issuer *is);
/* The JWK Set document as served now.  Owned. */
char *twtest_issuer_jwks(struct twtest_issuer *is);

/* A compact JWS of claims (a JSON object) signed with key: RS256 or
 * ES256 as the key's type says; kid NULL: the key's own, "" none.
 * Owned. */
char *twtest_jwt(struct twtest_issuer *is, enum twtest_key key,
                 const char *kid, const char *claims);
/* As twtest_jwt with the header's alg forced to alg (a key-type
 * mismatch: an RSA signature labelled ES256). */
char *twtest_jwt_alg(struct twtest_issuer *is, enum twtest_key key,
                     const char *alg, const char *kid, const char *claims);
/* A token with header and claims as given and sig bytes as its
 * signature (alg none: sig_len 0).  Owned. */
char *twtest_jwt_raw(const char *header, const char *claims,
                     const unsigned char *sig, size_t sig_len);
/* HS256 over header.claims with the PEM text of key's public key as the
 * HMAC secret: the algorithm-confusion attack.  Owned. */
char *twtest_jwt_hs256_confused(struct twtest_issuer *is, enum twtest_key key,
                                const char *claims);

#endif
