/* az_assert.c - the certificate credential's client assertion
 * (az_assert.h). */
#include "providers/azure/az_assert.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

struct tw_az_cert {
  EVP_PKEY *key;
  char x5t[40]; /* base64url SHA-1 of the certificate's DER */
};

void tw_az_b64url(const unsigned char *in, size_t n, char *out) {
  static const char T[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[o++] = T[(v >> 18) & 63];
    out[o++] = T[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = T[(v >> 6) & 63];
    if (i + 2 < n)
      out[o++] = T[v & 63];
  }
  out[o] = '\0';
}

enum tw_rc tw_az_cert_load(const char *path, struct tw_az_cert **out,
                           struct tw_err *err) {
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f)
    return tw_err_field(err, TW_E_AUTH, "certificate_file",
                        "certificate_file: cannot open %s", path);
  EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
  rewind(f);
  X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
  fclose(f);
  enum tw_rc rc = TW_OK;
  if (!key || !x)
    rc = tw_err_field(err, TW_E_AUTH, "certificate_file",
                      "certificate_file %s: needs the private key and the "
                      "certificate in PEM (%s missing)",
                      path, !key ? "key" : "certificate");
  else if (EVP_PKEY_base_id(key) != EVP_PKEY_RSA)
    rc = tw_err_field(err, TW_E_AUTH, "certificate_file",
                      "certificate_file %s: the key is not RSA (Entra ID "
                      "takes RS256 assertions)",
                      path);
  if (rc) {
    EVP_PKEY_free(key);
    X509_free(x);
    return rc;
  }
  unsigned char md[SHA_DIGEST_LENGTH];
  unsigned int mdlen = 0;
  X509_digest(x, EVP_sha1(), md, &mdlen);
  X509_free(x);
  struct tw_az_cert *c = tw_calloc(1, sizeof *c);
  c->key = key;
  tw_az_b64url(md, mdlen, c->x5t);
  *out = c;
  return TW_OK;
}

void tw_az_cert_free(struct tw_az_cert *c) {
  if (!c)
    return;
  EVP_PKEY_free(c->key);
  free(c);
}

static char *b64url_str(const char *s) {
  size_t n = strlen(s);
  char *o = tw_malloc(4 * n / 3 + 4);
  tw_az_b64url((const unsigned char *)s, n, o);
  return o;
}

enum tw_rc tw_az_client_assertion(const struct tw_az_cert *c,
                                  const char *client_id, const char *aud,
                                  int64_t now_ms, const char *jti, char **out,
                                  struct tw_err *err) {
  *out = NULL;
  long long now = (long long)(now_ms / 1000);
  struct tw_buf h, p;
  tw_buf_init(&h);
  tw_buf_init(&p);
  tw_buf_printf(&h, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"x5t\":\"%s\"}",
                c->x5t);
  tw_buf_adds(&p, "{\"aud\":");
  tw_buf_json_str(&p, aud);
  tw_buf_adds(&p, ",\"iss\":");
  tw_buf_json_str(&p, client_id);
  tw_buf_adds(&p, ",\"sub\":");
  tw_buf_json_str(&p, client_id);
  tw_buf_adds(&p, ",\"jti\":");
  tw_buf_json_str(&p, jti);
  tw_buf_printf(&p, ",\"nbf\":%lld,\"iat\":%lld,\"exp\":%lld}", now, now,
                now + 600);
  char *eh = b64url_str(h.data), *ep = b64url_str(p.data);
  tw_buf_release(&h);
  tw_buf_release(&p);
  struct tw_buf in;
  tw_buf_init(&in);
  tw_buf_printf(&in, "%s.%s", eh, ep);
  free(eh);
  free(ep);
  unsigned char sig[1024];
  size_t siglen = sizeof sig;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  enum tw_rc rc = TW_OK;
  if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, c->key) != 1 ||
      EVP_DigestSign(md, sig, &siglen, (const unsigned char *)in.data,
                     in.len) != 1)
    rc = tw_err_set(err, TW_E_INTERNAL,
                    "azure certificate: signing the assertion failed");
  EVP_MD_CTX_free(md);
  if (rc == TW_OK) {
    char *es = tw_malloc(4 * siglen / 3 + 4);
    tw_az_b64url(sig, siglen, es);
    tw_buf_addc(&in, '.');
    tw_buf_adds(&in, es);
    free(es);
    *out = tw_buf_detach(&in);
  } else {
    tw_buf_release(&in);
  }
  return rc;
}
