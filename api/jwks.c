/* jwks.c - JWK Set parsing into OpenSSL public keys (see jwt.h). */
#include "api/jwt.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

#define RSA_MIN_BITS 2048

void tw_jwks_release(struct tw_jwks *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    EVP_PKEY_free(s->keys[i].pkey);
  free(s->keys);
  memset(s, 0, sizeof *s);
}

/* A base64url member of a JWK, decoded; NULL when absent or bad. */
static unsigned char *member(json_t *k, const char *name, size_t *len) {
  const char *v = json_string_value(json_object_get(k, name));
  return v ? tw_b64url_decode(v, strlen(v), len) : NULL;
}

static EVP_PKEY *from_params(const char *type, OSSL_PARAM_BLD *bld) {
  OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
  EVP_PKEY *pkey = NULL;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
    pkey = NULL;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  if (pkey) {
    /* the point on the curve, the modulus odd and sane */
    EVP_PKEY_CTX *chk = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (!chk || EVP_PKEY_public_check(chk) != 1) {
      EVP_PKEY_free(pkey);
      pkey = NULL;
    }
    EVP_PKEY_CTX_free(chk);
  }
  return pkey;
}

static EVP_PKEY *rsa_key(json_t *k) {
  size_t nl = 0, el = 0;
  unsigned char *n = member(k, "n", &nl), *e = member(k, "e", &el);
  EVP_PKEY *pkey = NULL;
  if (n && e && nl >= RSA_MIN_BITS / 8 && nl <= 2048 && el >= 1 && el <= 8) {
    BIGNUM *bn = BN_bin2bn(n, (int)nl, NULL), *be = BN_bin2bn(e, (int)el, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bn && be && bld && BN_num_bits(bn) >= RSA_MIN_BITS &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
      pkey = from_params("RSA", bld);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
  }
  free(n);
  free(e);
  return pkey;
}

static EVP_PKEY *ec_key(json_t *k) {
  const char *crv = json_string_value(json_object_get(k, "crv"));
  if (!crv || strcmp(crv, "P-256"))
    return NULL;
  size_t xl = 0, yl = 0;
  unsigned char *x = member(k, "x", &xl), *y = member(k, "y", &yl);
  EVP_PKEY *pkey = NULL;
  if (x && y && xl == 32 && yl == 32) {
    unsigned char pt[65];
    pt[0] = 0x04; /* uncompressed */
    memcpy(pt + 1, x, 32);
    memcpy(pt + 33, y, 32);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld &&
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                        "prime256v1", 0) &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
                                         sizeof pt))
      pkey = from_params("EC", bld);
    OSSL_PARAM_BLD_free(bld);
  }
  free(x);
  free(y);
  return pkey;
}

/* Fills *out from one JWK; false when this key cannot be used. */
static bool one_key(json_t *k, struct tw_jwk *out) {
  if (!json_is_object(k))
    return false;
  const char *kty = json_string_value(json_object_get(k, "kty"));
  const char *use = json_string_value(json_object_get(k, "use"));
  const char *alg = json_string_value(json_object_get(k, "alg"));
  json_t *kidv = json_object_get(k, "kid");
  json_t *ops = json_object_get(k, "key_ops");
  if (!kty || (json_object_get(k, "use") && (!use || strcmp(use, "sig"))))
    return false;
  if (kidv && (!json_is_string(kidv) ||
               strlen(json_string_value(kidv)) >= sizeof out->kid))
    return false;
  if (ops) { /* RFC 7517 §4.3: must allow verify */
    bool verify = false;
    size_t i;
    json_t *op;
    if (!json_is_array(ops))
      return false;
    json_array_foreach(ops, i, op) {
      const char *s = json_string_value(op);
      if (s && !strcmp(s, "verify"))
        verify = true;
    }
    if (!verify)
      return false;
  }
  memset(out, 0, sizeof *out);
  if (!strcmp(kty, "RSA")) {
    if (json_object_get(k, "alg") && (!alg || strcmp(alg, "RS256")))
      return false;
    out->alg = TW_JWT_RS256;
    out->pkey = rsa_key(k);
  } else if (!strcmp(kty, "EC")) {
    if (json_object_get(k, "alg") && (!alg || strcmp(alg, "ES256")))
      return false;
    out->alg = TW_JWT_ES256;
    out->pkey = ec_key(k);
  } else {
    return false; /* oct (HMAC secrets) and others: never a verification key */
  }
  if (!out->pkey)
    return false;
  if (kidv)
    snprintf(out->kid, sizeof out->kid, "%s", json_string_value(kidv));
  return true;
}

enum tw_rc tw_jwks_parse(const char *text, size_t len, struct tw_jwks *out,
                         struct tw_err *err) {
  memset(out, 0, sizeof *out);
  json_error_t je;
  json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  json_t *keys = json_object_get(doc, "keys");
  if (!json_is_object(doc) || !json_is_array(keys)) {
    json_decref(doc);
    return tw_err_set(err, TW_E_INVALID,
                      "JWK Set: expected a JSON object with a \"keys\" array");
  }
  size_t n = json_array_size(keys);
  if (n > TW_JWKS_MAX_KEYS) {
    json_decref(doc);
    return tw_err_set(err, TW_E_INVALID, "JWK Set: %zu keys, at most %d", n,
                      TW_JWKS_MAX_KEYS);
  }
  out->keys = tw_calloc(n ? n : 1, sizeof *out->keys);
  for (size_t i = 0; i < n; i++) {
    if (one_key(json_array_get(keys, i), &out->keys[out->n]))
      out->n++;
    else
      out->skipped++;
  }
  ERR_clear_error();
  json_decref(doc);
  return TW_OK;
}
