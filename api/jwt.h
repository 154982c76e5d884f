/* jwt.h - JSON Web Tokens as OpenID Connect issuers sign them: the JWS
 * compact serialization (RFC 7515 §7.1), the keys of a JWK Set (RFC 7517),
 * and the two algorithms accepted, RS256 and ES256 (RFC 7518 §3.3, §3.4).
 *
 * Parsing is strict, for input nobody vouched for:
 *   - three base64url parts without padding, canonical (unused bits zero),
 *     the whole token at most TW_JWT_MAX_LEN bytes;
 *   - header and claims are JSON objects without duplicate names;
 *   - the header's alg is RS256 or ES256: "none", HS* and every other
 *     value are refused before any key is looked at (RFC 8725 §3.1), and
 *     a header that lists crit extensions is refused (none is understood);
 *     jku, x5u and jwk in a header are never followed: keys come only from
 *     the issuer's configured JWK Set;
 *   - a key is used only with the alg of its type (RSA for RS256, EC P-256
 *     for ES256), RSA keys have at least 2048 bits, EC points lie on the
 *     curve, and a key marked for another use or algorithm is skipped.
 * ES256 signatures travel as the raw 64 bytes R || S; they are converted
 * to the DER ECDSA-Sig-Value that EVP_DigestVerify() takes.
 *
 * Pure: no I/O, no clock (claims are checked by api/oidc.c).  Thread-safe. */
#ifndef TW_API_JWT_H
#define TW_API_JWT_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/err.h"

struct json_t;
typedef struct evp_pkey_st EVP_PKEY;

#define TW_JWT_MAX_LEN 16384
#define TW_JWKS_MAX_KEYS 64
#define TW_JWK_KID_MAX 128

enum tw_jwt_alg { TW_JWT_RS256 = 1, TW_JWT_ES256 };

/* One parsed token.  header and claims are owned (json_decref through
 * tw_jwt_release); kid is "" when the header has none. */
struct tw_jwt {
  enum tw_jwt_alg alg;
  char kid[TW_JWK_KID_MAX];
  struct json_t *header;
  struct json_t *claims;
  const char *signed_part; /* borrowed from the text: header.payload */
  size_t signed_len;
  unsigned char *sig; /* owned */
  size_t sig_len;
};

/* Parses len bytes of compact JWS.  TW_E_AUTH with the reason ("alg none
 * is not accepted", "part 2 is not base64url", ...) for anything wrong;
 * *out is then empty.  The text must outlive *out (signed_part). */
enum tw_rc tw_jwt_parse(const char *text, size_t len, struct tw_jwt *out,
                        struct tw_err *err);
void tw_jwt_release(struct tw_jwt *j);

/* A string claim, or NULL when absent or not a string. */
const char *tw_jwt_claim_str(const struct tw_jwt *j, const char *name);

/* One usable verification key of a JWK Set. */
struct tw_jwk {
  char kid[TW_JWK_KID_MAX]; /* "" when the key has none */
  enum tw_jwt_alg alg;      /* the only alg this key verifies */
  EVP_PKEY *pkey;           /* owned */
};

struct tw_jwks {
  struct tw_jwk *keys;
  size_t n;
  size_t skipped; /* keys present but not usable (other type, use, size) */
};

/* Parses a JWK Set document ({"keys":[...]}).  Keys this module cannot
 * use (enc keys, other types, curves or algs, short RSA moduli, bad
 * points) are skipped and counted, not fatal: issuers publish such keys
 * beside their signing keys.  TW_E_INVALID when the document is not a
 * JSON object with a "keys" array, or has more than TW_JWKS_MAX_KEYS.
 * *out is owned (tw_jwks_release). */
enum tw_rc tw_jwks_parse(const char *text, size_t len, struct tw_jwks *out,
                         struct tw_err *err);
void tw_jwks_release(struct tw_jwks *s);

/* Verifies j's signature with key: TW_OK, or TW_E_AUTH naming why (the
 * key's type does not match the alg, the signature does not verify). */
enum tw_rc tw_jwt_verify(const struct tw_jwt *j, EVP_PKEY *key,
                         struct tw_err *err);

/* Strict base64url without padding (RFC 4648 §5): *out owned, NULL for
 * text that is not canonical base64url.  Exposed for tests. */
unsigned char *tw_b64url_decode(const char *s, size_t len, size_t *out_len);
/* Encodes without padding into a NUL-terminated owned string. */
char *tw_b64url_encode(const unsigned char *p, size_t len);

#endif
