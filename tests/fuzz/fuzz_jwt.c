/* Fuzz target: JWT and JWK Set parsing, and the signature check.
 *
 * The first byte picks a mode:
 *   0  the rest is a token: parsed, and verified with every key of the
 *      issuer's JWK Set when it parses;
 *   1  the rest is a JWK Set document;
 *   2  (position, byte) patches of a real RS256 or ES256 token (the
 *      second byte picks which, and whether positions count from the
 *      start or back from the end): parsed and verified with its key;
 *   3  (position, byte) patches of the issuer's real JWK Set: parsed, and
 *      its keys used to verify the real tokens.
 * Properties, beyond not crashing under the sanitizers:
 *   - a patched token verifies only when it is byte for byte the original
 *     (canonical base64url: no two texts decode to one token);
 *   - no input parses into more keys than it lists, every key has an
 *     OpenSSL key and the one alg of its type;
 *   - raw input (mode 0) never verifies: nobody but the issuer signs.
 * Keys are made at the first call (tests/integration/twtest_oidc.h). */
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jwt.h"
#include "tests/fuzz/fuzz.h"
#include "tests/integration/twtest_oidc.h"

static struct twtest_issuer *is;
static char *tokens[2]; /* RS256, ES256 */
static char *jwks;
static struct tw_jwks keys;

static void cleanup(void) {
  free(tokens[0]);
  free(tokens[1]);
  free(jwks);
  tw_jwks_release(&keys);
  twtest_issuer_stop(is);
}

static void init(void) {
  if (!(is = twtest_issuer_start()))
    abort();
  const char *claims = "{\"iss\":\"https://idp.example\",\"aud\":\"tw\","
                       "\"sub\":\"fuzz\",\"exp\":4102444800}";
  tokens[0] = twtest_jwt(is, TWT_RSA, NULL, claims);
  tokens[1] = twtest_jwt(is, TWT_EC, NULL, claims);
  jwks = twtest_issuer_jwks(is);
  if (tw_jwks_parse(jwks, strlen(jwks), &keys, NULL) || keys.n != 2)
    abort();
  atexit(cleanup);
}

/* Whether text verifies with a key of set. */
static bool verifies(const char *text, size_t len, const struct tw_jwks *set) {
  struct tw_jwt j;
  if (tw_jwt_parse(text, len, &j, NULL))
    return false;
  bool ok = false;
  for (size_t i = 0; i < set->n && !ok; i++) {
    if (set->keys[i].alg != j.alg)
      continue;
    ok = tw_jwt_verify(&j, set->keys[i].pkey, NULL) == TW_OK;
  }
  /* the accessors on whatever parsed */
  (void)tw_jwt_claim_str(&j, "sub");
  tw_jwt_release(&j);
  return ok;
}

static void check_set(const struct tw_jwks *s, size_t listed_max) {
  if (s->n + s->skipped > listed_max)
    abort();
  for (size_t i = 0; i < s->n; i++) {
    int t = EVP_PKEY_get_base_id(s->keys[i].pkey);
    if (!s->keys[i].pkey ||
        (s->keys[i].alg == TW_JWT_RS256 && t != EVP_PKEY_RSA) ||
        (s->keys[i].alg == TW_JWT_ES256 && t != EVP_PKEY_EC))
      abort();
  }
}

/* text with (position, byte) patches, *len out.  from_end: positions
 * count back from the last byte (where a signature's unused bits are),
 * else from the first; a position past the end appends. */
static char *patched(const char *orig, const uint8_t *p, size_t n,
                     bool from_end, size_t *len) {
  size_t ol = strlen(orig), l = ol;
  char *t = malloc(ol + n / 2 + 1);
  memcpy(t, orig, ol);
  for (size_t i = 0; i + 1 < n; i += 2) {
    size_t pos = p[i] % (ol + 2);
    if (from_end)
      pos = p[i] < ol ? ol - 1 - p[i] : ol;
    if (pos < l)
      t[pos] = (char)p[i + 1];
    else
      t[l++] = (char)p[i + 1];
  }
  t[l] = '\0';
  *len = l;
  return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!is)
    init();
  if (size == 0)
    return 0;
  uint8_t mode = data[0] % 4;
  data++;
  size--;
  if (mode == 0) {
    if (verifies((const char *)data, size, &keys))
      abort(); /* a made-up token verified */
    return 0;
  }
  if (mode == 1) {
    struct tw_jwks s;
    if (tw_jwks_parse((const char *)data, size, &s, NULL) == TW_OK) {
      check_set(&s, TW_JWKS_MAX_KEYS);
      tw_jwks_release(&s);
    }
    return 0;
  }
  if (!size)
    return 0;
  if (mode == 2) {
    const char *orig = tokens[data[0] & 1];
    size_t len;
    char *t = patched(orig, data + 1, size - 1, data[0] & 2, &len);
    /* positions past the end are appended; a NUL ends the text early */
    bool ok = verifies(t, strnlen(t, len), &keys);
    if (ok && strcmp(t, orig))
      abort(); /* a changed token still verifies */
    free(t);
    return 0;
  }
  size_t len;
  char *t = patched(jwks, data, size, false, &len);
  struct tw_jwks s;
  if (tw_jwks_parse(t, strnlen(t, len), &s, NULL) == TW_OK) {
    check_set(&s, TW_JWKS_MAX_KEYS);
    (void)verifies(tokens[0], strlen(tokens[0]), &s);
    (void)verifies(tokens[1], strlen(tokens[1]), &s);
    tw_jwks_release(&s);
  }
  free(t);
  return 0;
}
