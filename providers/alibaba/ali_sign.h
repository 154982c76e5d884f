/* ali_sign.h - Alibaba Cloud's API signatures: the legacy RPC form
 * (SignatureVersion 1.0, HMAC-SHA1 over the sorted parameters) and the
 * current ACS3-HMAC-SHA256 form (a canonical request over method, path,
 * query, headers and payload hash, in an Authorization header).
 *
 * One implementation serves both sides, as providers/sigv4.c does for AWS:
 * the ECS adapter signs with it and the fake cloud checks requests with the
 * same primitives.  Conformance: the published vectors in
 * shared/data/signatures/aliyun (tests/unit/test_alibaba_sign.c) and the
 * official SDK (@alicloud/ecs20140526) talking to the fake in
 * tests/conformance/alibaba/.
 *
 * Legacy RPC (what `signatureAlgorithm: "v2"` makes the SDK send):
 *   canonical = the parameters but Signature, sorted by name (byte order),
 *               each name and value percent-encoded, joined "k=v" with '&'
 *   string    = METHOD "&" enc("/") "&" enc(canonical)
 *   Signature = base64(HMAC-SHA1(secret + "&", string))
 * ACS3-HMAC-SHA256 (the SDK's default):
 *   request   = METHOD \n path \n canonical query \n "name:value\n" per
 *               signed header \n signed names joined by ';' \n payload hash
 *   string    = "ACS3-HMAC-SHA256\n" hex(SHA-256(request))
 *   Signature = hex(HMAC-SHA256(secret, string))
 *   Authorization: ACS3-HMAC-SHA256 Credential=AK,SignedHeaders=a;b,
 *                  Signature=hex
 * Percent-encoding keeps A-Z a-z 0-9 - _ . ~ and writes every other byte as
 * %XX in upper case (so a space is %20, '*' is %2A).
 *
 * All functions are reentrant and keep no state. */
#ifndef TW_PROVIDERS_ALIBABA_ALI_SIGN_H
#define TW_PROVIDERS_ALIBABA_ALI_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

#define TW_ALI_ACS3 "ACS3-HMAC-SHA256"

/* A name and a value: a request parameter or a header.  Borrowed. */
struct tw_ali_pair {
  const char *name;
  const char *value;
};

/* Appends s[0..len) percent-encoded as above to out. */
void tw_ali_encode(struct tw_buf *out, const char *s, size_t len);

/* Appends the canonical query of p[0..n) to out: sorted by name, then by
 * value; "name=value" encoded, joined by '&'.  Pairs named skip (may be
 * NULL) are left out: the legacy form never signs "Signature". */
void tw_ali_canonical_query(struct tw_buf *out, const struct tw_ali_pair *p,
                            size_t n, const char *skip);

/* Signs a legacy RPC request: p holds every parameter that is sent
 * (AccessKeyId, SignatureMethod, SignatureNonce, SignatureVersion,
 * Timestamp included; a "Signature" pair is ignored).  sig_out receives
 * the base64 signature (28 characters and a NUL).  string_to_sign (may be
 * NULL) receives an owned copy of the string signed (free()).
 * TW_E_INVALID when method or secret is missing. */
enum tw_rc tw_ali_rpc_sign(const char *method, const struct tw_ali_pair *p,
                           size_t n, const char *secret, char sig_out[32],
                           char **string_to_sign, struct tw_err *err);

/* What ACS3 signs. */
struct tw_ali_acs3_request {
  const char *method;              /* "POST" */
  const char *path;                /* "/" for the RPC APIs */
  const struct tw_ali_pair *query; /* decoded query parameters */
  size_t n_query;
  const struct tw_ali_pair *headers; /* as sent; names any case */
  size_t n_headers;
  /* The names to sign, lower case, ';'-separated, as the Authorization
   * header lists them.  NULL: every header named host, content-type or
   * x-acs-* (what the SDK signs). */
  const char *signed_headers;
  const char *payload_hash; /* hex SHA-256 of the body */
};

struct tw_ali_acs3_result {
  char signature[65];      /* lower-case hex */
  char *canonical_request; /* owned */
  char *string_to_sign;    /* owned */
  char *signed_headers;    /* owned: "host;x-acs-action;..." */
};

/* Signs r with secret.  Every name in signed_headers must be among the
 * headers (TW_E_AUTH "IncompleteSignature" otherwise, as the service
 * answers).  Release out with tw_ali_acs3_result_release(), also after a
 * failure. */
enum tw_rc tw_ali_acs3_sign(const struct tw_ali_acs3_request *r,
                            const char *secret, struct tw_ali_acs3_result *out,
                            struct tw_err *err);
void tw_ali_acs3_result_release(struct tw_ali_acs3_result *r);

/* The fields of an ACS3 Authorization header value. */
struct tw_ali_acs3_authz {
  char access_key[128];
  char signed_headers[1024];
  char signature[65];
};

/* Parses "ACS3-HMAC-SHA256 Credential=AK,SignedHeaders=a;b,Signature=hex"
 * (spaces after commas tolerated).  TW_E_AUTH with err->detail
 * "IncompleteSignature" when malformed. */
enum tw_rc tw_ali_acs3_parse_authz(const char *value,
                                   struct tw_ali_acs3_authz *out,
                                   struct tw_err *err);

/* Lower-case hex SHA-256 of data into out[65]. */
void tw_ali_sha256_hex(const void *data, size_t len, char out[65]);

/* Constant-time comparison of two NUL-terminated strings. */
bool tw_ali_equal(const char *a, const char *b);

#endif
