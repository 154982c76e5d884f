/* fuzz_sigv4_authz.c - the SigV4 verifier on hostile input.
 *
 * Input, '\n'-separated: Authorization value, x-amz-date value, path,
 * query, one extra header "name:value", then the body.  Two checks:
 *   1. tw_sigv4_verify() on that request never crashes and answers TW_OK
 *      or TW_E_AUTH with an AWS error code in err->detail;
 *   2. the same path, query, extra header and body, signed by
 *      tw_sigv4_sign() with a fresh Authorization, always verify: whatever
 *      the signer canonicalizes, the verifier canonicalizes the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/err.h"
#include "providers/sigv4.h"

static const char AK[] = "AKIDEXAMPLE";
static const char SK[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
static const int64_t NOW_MS = 1440938160000; /* 20150830T123600Z */

static const char *secret(void *ctx, const char *ak) {
  (void)ctx;
  return strcmp(ak, AK) == 0 ? SK : NULL;
}

/* Next '\n'-terminated field as a NUL-terminated copy. */
static char *field(const uint8_t **p, const uint8_t *end) {
  const uint8_t *s = *p;
  const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
  const uint8_t *e = nl ? nl : end;
  char *r = malloc((size_t)(e - s) + 1);
  memcpy(r, s, (size_t)(e - s));
  r[e - s] = '\0';
  *p = nl ? nl + 1 : end;
  return r;
}

/* Extra header names for which check 2 must hold: plain tokens that do not
 * change the request's meaning for the verifier. */
static int plain_name(const char *n) {
  if (!*n)
    return 0;
  for (const char *c = n; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9') || *c == '-'))
      return 0;
  static const char *const special[] = {"authorization", "x-amz-date",
                                        "date",          "x-amz-content-sha256",
                                        "host",          NULL};
  for (const char *const *s = special; *s; s++)
    if (!strcasecmp(n, *s))
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  char *authz = field(&p, end), *date = field(&p, end);
  char *path = field(&p, end), *query = field(&p, end);
  char *extra = field(&p, end);
  char *colon = strchr(extra, ':');
  const char *xname = colon ? (*colon = '\0', extra) : "x-extra";
  const char *xvalue = colon ? colon + 1 : extra;

  struct tw_sigv4_header h[5] = {
      {"Host", "ec2.us-east-1.amazonaws.com"},
      {"X-Amz-Date", date},
      {xname, xvalue},
      {"Authorization", authz},
  };
  struct tw_sigv4_request req = {.method = "POST",
                                 .path = path,
                                 .query = *query ? query : NULL,
                                 .headers = h,
                                 .n_headers = 4,
                                 .body = p,
                                 .body_len = (size_t)(end - p)};
  struct tw_err err;
  tw_err_clear(&err);
  char *who = NULL;
  enum tw_rc rc =
      tw_sigv4_verify(&req, secret, NULL, NOW_MS, 300000, "ec2", &who, &err);
  if (rc != TW_OK && (rc != TW_E_AUTH || !err.detail[0]))
    abort();
  free(who);

  /* Check 2: sign the same request properly, then verify. */
  h[1].value = "20150830T123600Z";
  req.n_headers = 3;
  struct tw_sigv4_params prm = {.access_key = AK,
                                .secret_key = SK,
                                .region = "us-east-1",
                                .service = "ec2",
                                .amz_date = "20150830T123600Z",
                                .normalize_path = 1};
  struct tw_sigv4_result res;
  if (plain_name(xname) && tw_sigv4_sign(&req, &prm, &res, NULL) == TW_OK) {
    h[3].value = res.authorization;
    req.n_headers = 4;
    tw_err_clear(&err);
    if (tw_sigv4_verify(&req, secret, NULL, NOW_MS, 300000, "ec2", NULL,
                        &err) != TW_OK) {
      fprintf(stderr, "signed request rejected: %s (%s)\n", err.msg,
              err.detail);
      abort();
    }
    tw_sigv4_result_release(&res);
  }
  free(authz);
  free(date);
  free(path);
  free(query);
  free(extra);
  return 0;
}
