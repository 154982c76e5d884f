/* twtest_oidc.c - the loopback OpenID Connect issuer (twtest_oidc.h). */
#include "tests/integration/twtest_oidc.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jwt.h"
#include "broker/base/mem.h"

static const char *const KID[TWT_NKEYS] = {"rsa-1", "ec-1", "rsa-2"};

struct twtest_issuer {
  struct MHD_Daemon *d;
  char url[64];
  EVP_PKEY *key[TWT_NKEYS];
  char *jwk[TWT_NKEYS]; /* each key's public JWK */
  pthread_mutex_t mu;
  unsigned mask, jwks_hits, disc_hits;
};

static char *bn_b64(const BIGNUM *bn, int pad) {
  int n = pad ? pad : BN_num_bytes(bn);
  unsigned char *buf = tw_malloc((size_t)n);
  BN_bn2binpad(bn, buf, n);
  char *s = tw_b64url_encode(buf, (size_t)n);
  free(buf);
  return s;
}

static char *make_jwk(EVP_PKEY *k, const char *kid) {
  BIGNUM *a = NULL, *b = NULL;
  char *out;
  if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA) {
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &a);
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &b);
    char *n = bn_b64(a, 0), *e = bn_b64(b, 0);
    out = tw_asprintf("{\"kty\":\"RSA\",\"use\":\"sig\",\"alg\":\"RS256\","
                      "\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"}",
                      kid, n, e);
    free(n);
    free(e);
  } else {
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &a);
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &b);
    char *x = bn_b64(a, 32), *y = bn_b64(b, 32);
    out = tw_asprintf("{\"kty\":\"EC\",\"crv\":\"P-256\",\"use\":\"sig\","
                      "\"kid\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}",
                      kid, x, y);
    free(x);
    free(y);
  }
  BN_free(a);
  BN_free(b);
  return out;
}

/* The JWK Set of the published keys; called with is->mu held. */
static void jwks_text(struct twtest_issuer *is, struct tw_buf *b) {
  /* an HMAC key beside the signing keys: to be skipped */
  tw_buf_adds(b, "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"hmac\","
                 "\"k\":\"c2VjcmV0\"}");
  for (int i = 0; i < TWT_NKEYS; i++)
    if (is->mask & (1u << i))
      tw_buf_printf(b, ",%s", is->jwk[i]);
  tw_buf_adds(b, "]}");
}

char *twtest_issuer_jwks(struct twtest_issuer *is) {
  struct tw_buf b;
  tw_buf_init(&b);
  pthread_mutex_lock(&is->mu);
  jwks_text(is, &b);
  pthread_mutex_unlock(&is->mu);
  return tw_buf_detach(&b);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_len, void **state) {
  struct twtest_issuer *is = cls;
  struct tw_buf b;
  tw_buf_init(&b);
  unsigned status = 200;
  pthread_mutex_lock(&is->mu);
  if (!strcmp(url, "/.well-known/openid-configuration")) {
    is->disc_hits++;
    tw_buf_printf(&b,
                  "{\"issuer\":\"%s\",\"jwks_uri\":\"%s/keys\","
                  "\"id_token_signing_alg_values_supported\":[\"RS256\","
                  "\"ES256\"]}",
                  is->url, is->url);
  } else if (!strcmp(url, "/keys")) {
    is->jwks_hits++;
    jwks_text(is, &b);
  } else {
    status = 404;
    tw_buf_adds(&b, "{}");
  }
  pthread_mutex_unlock(&is->mu);
  struct MHD_Response *r = MHD_create_response_from_buffer(
      b.len, b.data, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  tw_buf_release(&b);
  return ret;
}

struct twtest_issuer *twtest_issuer_start(void) {
  struct twtest_issuer *is = tw_calloc(1, sizeof *is);
  pthread_mutex_init(&is->mu, NULL);
  is->key[TWT_RSA] = EVP_RSA_gen(2048);
  is->key[TWT_EC] = EVP_EC_gen("P-256");
  is->key[TWT_RSA2] = EVP_RSA_gen(2048);
  for (int i = 0; i < TWT_NKEYS; i++) {
    if (!is->key[i]) {
      fprintf(stderr, "issuer: key %d not made\n", i);
      return NULL;
    }
    is->jwk[i] = make_jwk(is->key[i], KID[i]);
  }
  is->mask = (1u << TWT_RSA) | (1u << TWT_EC);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  is->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                               MHD_USE_THREAD_PER_CONNECTION,
                           0, NULL, NULL, answer, is, MHD_OPTION_SOCK_ADDR,
                           &sa, MHD_OPTION_END);
  if (!is->d) {
    fprintf(stderr, "issuer: no server\n");
    return NULL;
  }
  const union MHD_DaemonInfo *inf =
      MHD_get_daemon_info(is->d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(is->url, sizeof is->url, "http://127.0.0.1:%u",
           (unsigned)inf->port);
  return is;
}

void twtest_issuer_stop(struct twtest_issuer *is) {
  if (!is)
    return;
  if (is->d)
    MHD_stop_daemon(is->d);
  for (int i = 0; i < TWT_NKEYS; i++) {
    EVP_PKEY_free(is->key[i]);
    free(is->jwk[i]);
  }
  pthread_mutex_destroy(&is->mu);
  free(is);
}

const char *twtest_issuer_url(const struct twtest_issuer *is) {
  return is->url;
}

void twtest_issuer_publish(struct twtest_issuer *is, unsigned mask) {
  pthread_mutex_lock(&is->mu);
  is->mask = mask;
  pthread_mutex_unlock(&is->mu);
}

unsigned twtest_issuer_jwks_hits(struct twtest_issuer *is) {
  pthread_mutex_lock(&is->mu);
  unsigned n = is->jwks_hits;
  pthread_mutex_unlock(&is->mu);
  return n;
}

unsigned twtest_issuer_discovery_hits(struct twtest_issuer *is) {
  pthread_mutex_lock(&is->mu);
  unsigned n = is->disc_hits;
  pthread_mutex_unlock(&is->mu);
  return n;
}

char *twtest_jwt_raw(const char *header, const char *claims,
                     const unsigned char *sig, size_t sig_len) {
  char *h = tw_b64url_encode((const unsigned char *)header, strlen(header));
  char *c = tw_b64url_encode((const unsigned char *)claims, strlen(claims));
  char *s = tw_b64url_encode(sig, sig_len);
  char *out = tw_asprintf("%s.%s.%s", h, c, s);
  free(h);
  free(c);
  free(s);
  return out;
}

/* "b64(header).b64(claims)" */
static char *signing_input(const char *header, const char *claims) {
  char *h = tw_b64url_encode((const unsigned char *)header, strlen(header));
  char *c = tw_b64url_encode((const unsigned char *)claims, strlen(claims));
  char *out = tw_asprintf("%s.%s", h, c);
  free(h);
  free(c);
  return out;
}

char *twtest_jwt(struct twtest_issuer *is, enum twtest_key key,
                 const char *kid, const char *claims) {
  return twtest_jwt_alg(is, key, NULL, kid, claims);
}

char *twtest_jwt_alg(struct twtest_issuer *is, enum twtest_key key,
                     const char *alg, const char *kid, const char *claims) {
  bool rsa = EVP_PKEY_get_base_id(is->key[key]) == EVP_PKEY_RSA;
  if (!kid)
    kid = KID[key];
  if (!alg)
    alg = rsa ? "RS256" : "ES256";
  char *header =
      *kid ? tw_asprintf("{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}",
                         alg, kid)
           : tw_asprintf("{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
  char *in = signing_input(header, claims);
  free(header);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  size_t len = 0;
  EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, is->key[key]);
  EVP_DigestSign(ctx, NULL, &len, (unsigned char *)in, strlen(in));
  unsigned char *sig = tw_malloc(len);
  EVP_DigestSign(ctx, sig, &len, (unsigned char *)in, strlen(in));
  EVP_MD_CTX_free(ctx);
  unsigned char raw[64];
  const unsigned char *out = sig;
  size_t out_len = len;
  if (!rsa) { /* DER to R || S, as JWS carries it */
    const unsigned char *p = sig;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)len);
    BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32);
    ECDSA_SIG_free(es);
    out = raw;
    out_len = 64;
  }
  char *s = tw_b64url_encode(out, out_len);
  char *tok = tw_asprintf("%s.%s", in, s);
  free(s);
  free(sig);
  free(in);
  return tok;
}

char *twtest_jwt_hs256_confused(struct twtest_issuer *is, enum twtest_key key,
                                const char *claims) {
  BIO *bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, is->key[key]);
  char *pem = NULL;
  long pl = BIO_get_mem_data(bio, &pem);
  char header[96];
  snprintf(header, sizeof header, "{\"alg\":\"HS256\",\"kid\":\"%s\"}",
           KID[key]);
  char *in = signing_input(header, claims);
  unsigned char mac[32];
  unsigned int ml = sizeof mac;
  HMAC(EVP_sha256(), pem, (int)pl, (unsigned char *)in, strlen(in), mac, &ml);
  BIO_free(bio);
  char *s = tw_b64url_encode(mac, ml);
  char *tok = tw_asprintf("%s.%s", in, s);
  free(s);
  free(in);
  return tok;
}
