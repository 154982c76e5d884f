/* jwt.c - compact JWS parsing and RS256/ES256 verification (see jwt.h). */
#include "api/jwt.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

static int b64url_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}

unsigned char *tw_b64url_decode(const char *s, size_t len, size_t *out_len) {
  if (len % 4 == 1)
    return NULL;
  unsigned char *out = tw_malloc(len / 4 * 3 + 3);
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64url_val((unsigned char)s[i]);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc) { /* unused bits must be zero: one text per byte string */
    free(out);
    return NULL;
  }
  *out_len = o;
  return out;
}

char *tw_b64url_encode(const unsigned char *p, size_t len) {
  static const char A[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char *out = tw_malloc(len / 3 * 4 + 5);
  size_t o = 0, i = 0;
  for (; i + 2 < len; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    out[o++] = A[v >> 18];
    out[o++] = A[(v >> 12) & 63];
    out[o++] = A[(v >> 6) & 63];
    out[o++] = A[v & 63];
  }
  if (len - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    out[o++] = A[v >> 18];
    out[o++] = A[(v >> 12) & 63];
  } else if (len - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    out[o++] = A[v >> 18];
    out[o++] = A[(v >> 12) & 63];
    out[o++] = A[(v >> 6) & 63];
  }
  out[o] = '\0';
  return out;
}

void tw_jwt_release(struct tw_jwt *j) {
  if (!j)
    return;
  json_decref(j->header);
  json_decref(j->claims);
  free(j->sig);
  memset(j, 0, sizeof *j);
}

/* A base64url part holding a JSON object. */
static json_t *json_part(const char *s, size_t len, int part,
                         struct tw_err *err) {
  size_t n;
  unsigned char *raw = tw_b64url_decode(s, len, &n);
  if (!raw) {
    tw_err_set(err, TW_E_AUTH, "token part %d is not base64url", part);
    return NULL;
  }
  json_error_t je;
  json_t *v = json_loadb((const char *)raw, n,
                         JSON_REJECT_DUPLICATES, &je);
  free(raw);
  if (!v || !json_is_object(v)) {
    json_decref(v);
    tw_err_set(err, TW_E_AUTH, "token %s is not a JSON object",
               part == 1 ? "header" : "claims");
    return NULL;
  }
  return v;
}

enum tw_rc tw_jwt_parse(const char *text, size_t len, struct tw_jwt *out,
                        struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (len > TW_JWT_MAX_LEN)
    return tw_err_set(err, TW_E_AUTH, "token longer than %d bytes",
                      TW_JWT_MAX_LEN);
  const char *d1 = memchr(text, '.', len);
  const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - text))
                      : NULL;
  if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - text)))
    return tw_err_set(err, TW_E_AUTH,
                      "not a JWT: expected three parts separated by dots");
  json_t *h = json_part(text, (size_t)(d1 - text), 1, err);
  if (!h)
    return TW_E_AUTH;
  out->header = h;
  const char *alg = json_string_value(json_object_get(h, "alg"));
  if (!alg) {
    tw_jwt_release(out);
    return tw_err_set(err, TW_E_AUTH, "token header has no alg");
  }
  if (!strcmp(alg, "RS256"))
    out->alg = TW_JWT_RS256;
  else if (!strcmp(alg, "ES256"))
    out->alg = TW_JWT_ES256;
  else {
    /* none, HS256 (the RSA-key-as-HMAC-secret confusion), and the rest */
    bool printable = strlen(alg) < 16;
    for (const char *p = alg; printable && *p; p++)
      printable = *p > 0x20 && *p < 0x7f && *p != '"' && *p != '\\';
    tw_err_set(err, TW_E_AUTH,
               "alg %s is not accepted (only RS256 and ES256)",
               printable ? alg : "(unprintable)");
    tw_jwt_release(out);
    return TW_E_AUTH;
  }
  if (json_object_get(h, "crit")) {
    tw_jwt_release(out);
    return tw_err_set(err, TW_E_AUTH,
                      "token header lists crit extensions; none is understood");
  }
  json_t *kid = json_object_get(h, "kid");
  if (kid) {
    const char *k = json_string_value(kid);
    if (!k || !*k || strlen(k) >= sizeof out->kid) {
      tw_jwt_release(out);
      return tw_err_set(err, TW_E_AUTH,
                        "token header kid must be a string of 1..%d bytes",
                        TW_JWK_KID_MAX - 1);
    }
    snprintf(out->kid, sizeof out->kid, "%s", k);
  }
  out->claims = json_part(d1 + 1, (size_t)(d2 - d1 - 1), 2, err);
  if (!out->claims) {
    tw_jwt_release(out);
    return TW_E_AUTH;
  }
  out->sig = tw_b64url_decode(d2 + 1, len - (size_t)(d2 + 1 - text),
                              &out->sig_len);
  if (!out->sig || !out->sig_len) {
    tw_jwt_release(out);
    return tw_err_set(err, TW_E_AUTH, "token signature is not base64url");
  }
  out->signed_part = text;
  out->signed_len = (size_t)(d2 - text);
  return TW_OK;
}

const char *tw_jwt_claim_str(const struct tw_jwt *j, const char *name) {
  return json_string_value(json_object_get(j->claims, name));
}

/* R || S (32 bytes each) as a DER ECDSA-Sig-Value; *der owned. */
static bool es256_der(const unsigned char *raw, size_t len,
                      unsigned char **der, size_t *der_len) {
  if (len != 64)
    return false;
  ECDSA_SIG *s = ECDSA_SIG_new();
  BIGNUM *r = BN_bin2bn(raw, 32, NULL), *ss = BN_bin2bn(raw + 32, 32, NULL);
  if (!s || !r || !ss || !ECDSA_SIG_set0(s, r, ss)) {
    BN_free(r);
    BN_free(ss);
    ECDSA_SIG_free(s);
    return false;
  }
  unsigned char *p = NULL;
  int n = i2d_ECDSA_SIG(s, &p);
  ECDSA_SIG_free(s);
  if (n <= 0)
    return false;
  *der = p;
  *der_len = (size_t)n;
  return true;
}

enum tw_rc tw_jwt_verify(const struct tw_jwt *j, EVP_PKEY *key,
                         struct tw_err *err) {
  int type = EVP_PKEY_get_base_id(key);
  if ((j->alg == TW_JWT_RS256 && type != EVP_PKEY_RSA) ||
      (j->alg == TW_JWT_ES256 && type != EVP_PKEY_EC))
    return tw_err_set(err, TW_E_AUTH, "the key's type does not match alg %s",
                      j->alg == TW_JWT_RS256 ? "RS256" : "ES256");
  const unsigned char *sig = j->sig;
  size_t sig_len = j->sig_len;
  unsigned char *der = NULL;
  if (j->alg == TW_JWT_ES256) {
    if (!es256_der(j->sig, j->sig_len, &der, &sig_len))
      return tw_err_set(err, TW_E_AUTH,
                        "ES256 signature must be 64 bytes (R || S), got %zu",
                        j->sig_len);
    sig = der;
  } else if (sig_len != (size_t)EVP_PKEY_get_size(key)) {
    return tw_err_set(err, TW_E_AUTH,
                      "RS256 signature of %zu bytes for a %d-byte key",
                      sig_len, EVP_PKEY_get_size(key));
  }
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int ok = ctx &&
           EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
           EVP_DigestVerify(ctx, sig, sig_len,
                            (const unsigned char *)j->signed_part,
                            j->signed_len) == 1;
  EVP_MD_CTX_free(ctx);
  OPENSSL_free(der);
  ERR_clear_error(); /* a failed check leaves its reasons queued */
  if (!ok)
    return tw_err_set(err, TW_E_AUTH, "token signature does not verify");
  return TW_OK;
}
