/* test_sigv4.c - SigV4 signer and verifier against independent references.
 *
 *   test_sigv4 --suites      every header-signing case of the two AWS test
 *                            suites in $TRADEWIND_TESTDATA/sigv4: canonical
 *                            request, string to sign, signature and
 *                            Authorization compared byte for byte, and each
 *                            suite-signed request accepted by the verifier
 *   test_sigv4 --verify      verifier outcomes, one per AWS error code
 *   test_sigv4 --botocore N  N seeded random EC2-like requests signed by us
 *                            and by botocore (botocore_sign.py); the seed is
 *                            printed, TW_SEED=<seed> replays a run
 *
 * Exit 0 on success, 1 on any failure, 77 (skipped) when the data or
 * botocore is missing. */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "tests/twtest.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "providers/sigv4.h"

static const char AK[] = "AKIDEXAMPLE";
static const char SK[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  if (len)
    *len = b.len;
  return tw_buf_detach(&b);
}

static const char *testdata_dir(void) {
  static char path[4096];
  const char *e = getenv("TRADEWIND_TESTDATA");
  if (e && *e)
    return e;
  const char *src = getenv("TW_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/../shared/data", src ? src : ".");
  return path;
}

/* ---- request files (.req, request.txt) ---- */

struct req_file {
  char *storage[128];
  size_t n_storage;
  struct tw_sigv4_header hdrs[64];
  size_t n;
  struct tw_sigv4_request req;
};

static char *keep(struct req_file *r, char *s) {
  if (r->n_storage < 128)
    r->storage[r->n_storage++] = s;
  return s;
}

static void req_file_release(struct req_file *r) {
  for (size_t i = 0; i < r->n_storage; i++)
    free(r->storage[i]);
  memset(r, 0, sizeof *r);
}

static void add_header(struct req_file *r, const char *name, const char *v) {
  if (r->n < 64) {
    r->hdrs[r->n].name = keep(r, tw_strdup(name));
    r->hdrs[r->n].value = keep(r, tw_strdup(v));
    r->n++;
  }
  r->req.headers = r->hdrs;
  r->req.n_headers = r->n;
}

/* Parses "METHOD target HTTP/1.1", header lines, a blank line and the
 * body.  A line starting with whitespace continues the previous header:
 * the 2015 suite (fold_as_values) expects each folded line as a value of
 * its own, joined by ',' (get-header-value-multiline: "value1,value2,
 * value3"); aws-c-auth expects the obsolete fold kept in the value, which
 * trimming turns into spaces ("value1 value2 value3"). */
static bool parse_req(const char *text, size_t len, bool fold_as_values,
                      struct req_file *r) {
  memset(r, 0, sizeof *r);
  const char *end = text + len;
  const char *nl = memchr(text, '\n', len);
  const char *le = nl ? nl : end;
  const char *sp = memchr(text, ' ', (size_t)(le - text));
  if (!sp)
    return false;
  const char *ver = NULL;
  for (const char *p = sp; p + 6 <= le; p++)
    if (!memcmp(p, " HTTP/", 6))
      ver = p;
  if (!ver || ver <= sp)
    return false;
  r->req.method = keep(r, tw_strndup(text, (size_t)(sp - text)));
  const char *tgt = sp + 1;
  const char *q = memchr(tgt, '?', (size_t)(ver - tgt));
  r->req.path = keep(r, tw_strndup(tgt, (size_t)((q ? q : ver) - tgt)));
  r->req.query = q ? keep(r, tw_strndup(q + 1, (size_t)(ver - q - 1))) : NULL;
  const char *p = nl ? nl + 1 : end;
  while (p < end) {
    nl = memchr(p, '\n', (size_t)(end - p));
    le = nl ? nl : end;
    if (le == p) { /* blank line: the body follows */
      p = nl ? nl + 1 : end;
      break;
    }
    if ((*p == ' ' || *p == '\t') && r->n) {
      char *line = tw_strndup(p, (size_t)(le - p));
      if (fold_as_values) {
        add_header(r, r->hdrs[r->n - 1].name, line);
      } else {
        char *v = tw_asprintf("%s\n%s", r->hdrs[r->n - 1].value, line);
        r->hdrs[r->n - 1].value = keep(r, v);
      }
      free(line);
    } else {
      const char *colon = memchr(p, ':', (size_t)(le - p));
      if (!colon)
        return false;
      char *name = tw_strndup(p, (size_t)(colon - p));
      char *v = tw_strndup(colon + 1, (size_t)(le - colon - 1));
      add_header(r, name, v);
      free(name);
      free(v);
    }
    p = nl ? nl + 1 : end;
  }
  r->req.headers = r->hdrs;
  r->req.n_headers = r->n;
  r->req.body = p < end ? p : NULL;
  r->req.body_len = p < end ? (size_t)(end - p) : 0;
  return true;
}

static const char *suite_secret(void *ctx, const char *ak) {
  (void)ctx;
  return strcmp(ak, AK) == 0 ? SK : NULL;
}

static int64_t amz_to_ms(const char *d) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (sscanf(d, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (int64_t)timegm(&tm) * 1000;
}

static bool same(const char *what, const char *name, const char *got,
                 const char *want) {
  if (want && got && strcmp(got, want) == 0)
    return true;
  fprintf(stderr, "FAIL %s: %s differs\n--- expected\n%s\n--- got\n%s\n", name,
          what, want ? want : "(missing file)", got ? got : "(null)");
  return false;
}

static struct tw_sigv4_key_cache suite_keys;

/* Signs r and compares with the expected texts (NULL: not compared), then
 * checks that the verifier accepts the request carrying the expected
 * Authorization.  Returns true when everything matched. */
static bool run_case(const char *name, struct req_file *r,
                     const struct tw_sigv4_params *p, bool check_verify,
                     const char *creq, const char *sts, const char *sig,
                     const char *authz) {
  struct tw_sigv4_result res;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_sigv4_sign(&r->req, p, &res, &err) != TW_OK) {
    fprintf(stderr, "FAIL %s: sign: %s\n", name, err.msg);
    return false;
  }
  bool ok = same("canonical request", name, res.canonical_request, creq);
  ok = same("string to sign", name, res.string_to_sign, sts) && ok;
  if (sig)
    ok = same("signature", name, res.signature, sig) && ok;
  ok = same("authorization", name, res.authorization, authz) && ok;

  /* The same through a key cache shared by every case: derived the first
   * time, kept after. */
  for (int k = 0; k < 2; k++) {
    struct tw_sigv4_params pc = *p;
    struct tw_sigv4_result rc2;
    pc.key_cache = &suite_keys;
    if (tw_sigv4_sign(&r->req, &pc, &rc2, NULL) != TW_OK) {
      fprintf(stderr, "FAIL %s: sign with a key cache\n", name);
      ok = false;
      break;
    }
    ok = same("signature with a key cache", name, rc2.signature,
              res.signature) &&
         ok;
    tw_sigv4_result_release(&rc2);
  }
  tw_sigv4_result_release(&res);

  /* The suite's own signed request must pass verification.  The verifier
   * normalizes paths for every service but s3, so the suite's
   * "-unnormalized" cases (S3 semantics under service "service") are not
   * verified. */
  if (!check_verify)
    return ok;
  add_header(r, "Authorization", authz ? authz : "");
  tw_err_clear(&err);
  enum tw_rc rc =
      tw_sigv4_verify(&r->req, suite_secret, NULL, amz_to_ms(p->amz_date),
                      5 * 60 * 1000, NULL, NULL, &err);
  if (rc != TW_OK) {
    fprintf(stderr, "FAIL %s: verify: %s (%s)\n", name, err.msg, err.detail);
    ok = false;
  }
  return ok;
}

static char *strip_nl(char *s) {
  if (s) {
    size_t l = strlen(s);
    while (l && (s[l - 1] == '\n' || s[l - 1] == '\r'))
      s[--l] = '\0';
  }
  return s;
}

/* Classic suite: every directory holding <dir>/<dir>.req is a case. */
static void classic_walk(const char *dir, int *pass, int *total) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    names = tw_realloc(names, (n + 1) * sizeof *names);
    names[n++] = tw_strdup(e->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < n; i++) {
    char *sub = tw_asprintf("%s/%s", dir, names[i]);
    struct stat st;
    if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
      char *reqp = tw_asprintf("%s/%s.req", sub, names[i]);
      size_t len;
      char *text = read_file(reqp, &len);
      if (text) {
        char *f_creq = tw_asprintf("%s/%s.creq", sub, names[i]);
        char *f_sts = tw_asprintf("%s/%s.sts", sub, names[i]);
        char *f_authz = tw_asprintf("%s/%s.authz", sub, names[i]);
        char *creq = read_file(f_creq, NULL), *sts = read_file(f_sts, NULL);
        char *authz = read_file(f_authz, NULL);
        struct req_file r;
        struct tw_sigv4_params p = {.access_key = AK,
                                    .secret_key = SK,
                                    .region = "us-east-1",
                                    .service = "service",
                                    .amz_date = "20150830T123600Z",
                                    .normalize_path = 1};
        char *label = tw_asprintf("classic/%s", names[i]);
        (*total)++;
        if (!parse_req(text, len, true, &r)) {
          fprintf(stderr, "FAIL %s: cannot parse %s\n", label, reqp);
        } else if (run_case(label, &r, &p, true, creq, sts, NULL, authz)) {
          (*pass)++;
        }
        req_file_release(&r);
        free(label);
        free(creq);
        free(sts);
        free(authz);
        free(f_creq);
        free(f_sts);
        free(f_authz);
        free(text);
      } else {
        classic_walk(sub, pass, total);
      }
      free(reqp);
    }
    free(sub);
    free(names[i]);
  }
  free(names);
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* aws-c-auth query (pre-signed URL) variant: the X-Amz-* parameters go
 * into the query, nothing is added to the headers, the payload is still
 * hashed, and no Authorization exists to compare or verify.  The signer
 * has no pre-signing entry point; this drives tw_sigv4_sign() the way one
 * would, which checks the query canonicalization on the suite's exact
 * expectations. */
static bool crt_query_case(const char *cd, const char *label, const char *text,
                           size_t len, const struct tw_sigv4_params *p,
                           bool add_token) {
  char *f_creq = tw_asprintf("%s/query-canonical-request.txt", cd);
  char *f_sts = tw_asprintf("%s/query-string-to-sign.txt", cd);
  char *f_sig = tw_asprintf("%s/query-signature.txt", cd);
  char *creq = read_file(f_creq, NULL), *sts = read_file(f_sts, NULL);
  char *sig = strip_nl(read_file(f_sig, NULL));
  bool ok = false;
  struct req_file r;
  struct tw_sigv4_result res;
  memset(&res, 0, sizeof res);
  if (!creq || !parse_req(text, len, false, &r)) {
    fprintf(stderr, "FAIL %s: query case unreadable\n", label);
    goto out;
  }
  /* A first pass names the signed headers for X-Amz-SignedHeaders. */
  if (tw_sigv4_sign(&r.req, p, &res, NULL) != TW_OK)
    goto out_req;
  char *cred = tw_asprintf("%s/%.8s/%s/%s/aws4_request", p->access_key,
                           p->amz_date, p->region, p->service);
  char *ecred, *esh, *etok = NULL;
  tw_sigv4_uri_encode(cred, strlen(cred), 0, &ecred);
  tw_sigv4_uri_encode(res.signed_headers, strlen(res.signed_headers), 0, &esh);
  if (add_token)
    tw_sigv4_uri_encode(p->session_token, strlen(p->session_token), 0, &etok);
  char *q = tw_asprintf(
      "%s%sX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
      "&X-Amz-Date=%s&X-Amz-SignedHeaders=%s&X-Amz-Expires=3600%s%s",
      r.req.query ? r.req.query : "", r.req.query ? "&" : "", ecred,
      p->amz_date, esh, etok ? "&X-Amz-Security-Token=" : "", etok ? etok : "");
  tw_sigv4_result_release(&res);
  r.req.query = keep(&r, q);
  if (tw_sigv4_sign(&r.req, p, &res, NULL) == TW_OK) {
    ok = same("query canonical request", label, res.canonical_request, creq);
    ok = same("query string to sign", label, res.string_to_sign, sts) && ok;
    ok = same("query signature", label, res.signature, sig) && ok;
  }
  free(cred);
  free(ecred);
  free(esh);
  free(etok);
out_req:
  req_file_release(&r);
out:
  tw_sigv4_result_release(&res);
  free(creq);
  free(sts);
  free(sig);
  free(f_creq);
  free(f_sts);
  free(f_sig);
  return ok;
}

/* aws-c-auth suite: the harness adds what the signer leaves to its caller:
 * X-Amz-Date, X-Amz-Security-Token (unless omit_session_token: the
 * post-sts-header-after case adds it after signing) and, with sign_body,
 * X-Amz-Content-Sha256. */
static void crt_run(const char *dir, int *pass, int *total, int *qpass,
                    int *qtotal) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] != '.') {
      names = tw_realloc(names, (n + 1) * sizeof *names);
      names[n++] = tw_strdup(e->d_name);
    }
  }
  closedir(d);
  qsort(names, n, sizeof *names, name_cmp);
  for (size_t i = 0; i < n; i++) {
    char *cd = tw_asprintf("%s/%s", dir, names[i]);
    char *f_ctx = tw_asprintf("%s/context.json", cd);
    char *f_req = tw_asprintf("%s/request.txt", cd);
    char *f_creq = tw_asprintf("%s/header-canonical-request.txt", cd);
    char *f_sts = tw_asprintf("%s/header-string-to-sign.txt", cd);
    char *f_sig = tw_asprintf("%s/header-signature.txt", cd);
    char *f_sreq = tw_asprintf("%s/header-signed-request.txt", cd);
    size_t len = 0;
    char *text = read_file(f_req, &len);
    json_error_t jerr;
    json_t *ctx = json_load_file(f_ctx, 0, &jerr);
    char *creq = read_file(f_creq, NULL), *sts = read_file(f_sts, NULL);
    char *sig = strip_nl(read_file(f_sig, NULL));
    char *sreq = read_file(f_sreq, NULL);
    char *label = tw_asprintf("aws-c-auth/%s", names[i]);
    if (text && ctx) {
      (*total)++;
      char *authz = NULL;
      for (char *l = sreq; l && *l;) {
        char *nl = strchr(l, '\n');
        if (!strncasecmp(l, "Authorization:", 14)) {
          const char *v = l + 14;
          while (*v == ' ')
            v++;
          authz = tw_strndup(v, nl ? (size_t)(nl - v) : strlen(v));
          strip_nl(authz);
          break;
        }
        l = nl ? nl + 1 : NULL;
      }
      json_t *cr = json_object_get(ctx, "credentials");
      const char *ts = json_string_value(json_object_get(ctx, "timestamp"));
      char amz[17] = "";
      int j = 0;
      for (const char *c = ts ? ts : ""; *c && j < 16; c++)
        if (*c != '-' && *c != ':')
          amz[j++] = *c;
      amz[j] = '\0';
      const char *token = json_string_value(json_object_get(cr, "token"));
      struct tw_sigv4_params p = {
          .access_key = json_string_value(json_object_get(cr, "access_key_id")),
          .secret_key =
              json_string_value(json_object_get(cr, "secret_access_key")),
          .session_token = token,
          .region = json_string_value(json_object_get(ctx, "region")),
          .service = json_string_value(json_object_get(ctx, "service")),
          .amz_date = amz,
          .normalize_path = json_is_true(json_object_get(ctx, "normalize")),
      };
      struct req_file r;
      if (!parse_req(text, len, false, &r)) {
        fprintf(stderr, "FAIL %s: cannot parse request.txt\n", label);
      } else {
        add_header(&r, "X-Amz-Date", amz);
        if (token && !json_is_true(json_object_get(ctx, "omit_session_token")))
          add_header(&r, "X-Amz-Security-Token", token);
        if (json_is_true(json_object_get(ctx, "sign_body"))) {
          char h[65];
          tw_sha256_hex(r.req.body, r.req.body_len, h);
          add_header(&r, "X-Amz-Content-Sha256", h);
        }
        if (run_case(label, &r, &p, p.normalize_path != 0, creq, sts, sig,
                     authz))
          (*pass)++;
      }
      (*qtotal)++;
      if (crt_query_case(cd, label, text, len, &p,
                         token && !json_is_true(json_object_get(
                                      ctx, "omit_session_token"))))
        (*qpass)++;
      req_file_release(&r);
      free(authz);
    }
    json_decref(ctx);
    free(label);
    free(text);
    free(creq);
    free(sts);
    free(sig);
    free(sreq);
    free(f_ctx);
    free(f_req);
    free(f_creq);
    free(f_sts);
    free(f_sig);
    free(f_sreq);
    free(cd);
    free(names[i]);
  }
  free(names);
}

/* Both suites are in the shared data; says SKIPPED when not. */
static bool suites_present(void) {
  const char *data = testdata_dir();
  char *classic = tw_asprintf("%s/sigv4/aws-sig-v4-test-suite", data);
  char *crt =
      tw_asprintf("%s/sigv4/aws-c-auth/aws-signing-test-suite/v4", data);
  struct stat st;
  bool ok = stat(classic, &st) == 0 && stat(crt, &st) == 0;
  if (!ok)
    printf("SKIPPED: SigV4 test suites not found under %s/sigv4 "
           "(set TRADEWIND_TESTDATA)\n",
           data);
  free(classic);
  free(crt);
  return ok;
}

static void suites(void **state) {
  const char *data = testdata_dir();
  char *classic = tw_asprintf("%s/sigv4/aws-sig-v4-test-suite", data);
  char *crt =
      tw_asprintf("%s/sigv4/aws-c-auth/aws-signing-test-suite/v4", data);
  int cpass = 0, ctotal = 0, apass = 0, atotal = 0, qpass = 0, qtotal = 0;
  classic_walk(classic, &cpass, &ctotal);
  crt_run(crt, &apass, &atotal, &qpass, &qtotal);
  printf("aws-sig-v4-test-suite: %d/%d cases passed\n", cpass, ctotal);
  printf("aws-c-auth v4 (header signing): %d/%d cases passed\n", apass, atotal);
  printf("aws-c-auth v4 (query signing): %d/%d cases passed\n", qpass, qtotal);
  free(classic);
  free(crt);
  /* 31 and 38 cases at the time of writing: fewer found means the walk
   * broke, not that everything passed. */
  TW_CHECK(ctotal >= 31 && atotal >= 38,
           "expected at least 31 + 38 cases, found %d + %d", ctotal, atotal);
  TW_CHECK(cpass == ctotal && apass == atotal && qpass == qtotal,
           "%d/%d, %d/%d and %d/%d cases passed", cpass, ctotal, apass, atotal,
           qpass, qtotal);
}

/* ---- verifier ---- */

struct vreq {
  struct tw_sigv4_header h[8];
  size_t n;
  struct tw_sigv4_request req;
  char authz[512];
};

static const char BODY[] = "Action=DescribeInstances&Version=2016-11-15";
static const int64_t NOW_MS = 1440938160000; /* 2015-08-30T12:36:00Z */
static const int64_t SKEW_MS = 5 * 60 * 1000;

/* A botocore-shaped EC2 request signed with secret (x-amz-content-sha256
 * included when with_sha). */
static void vreq_make(struct vreq *v, const char *ak, const char *secret,
                      const char *date, bool with_sha) {
  static char sha[65];
  memset(v, 0, sizeof *v);
  tw_sha256_hex(BODY, strlen(BODY), sha);
  v->h[v->n++] = (struct tw_sigv4_header){
      "Content-Type", "application/x-www-form-urlencoded; charset=utf-8"};
  v->h[v->n++] =
      (struct tw_sigv4_header){"Host", "ec2.us-east-1.amazonaws.com"};
  v->h[v->n++] = (struct tw_sigv4_header){"X-Amz-Date", date};
  if (with_sha)
    v->h[v->n++] = (struct tw_sigv4_header){"X-Amz-Content-SHA256", sha};
  v->req = (struct tw_sigv4_request){.method = "POST",
                                     .path = "/",
                                     .query = NULL,
                                     .headers = v->h,
                                     .n_headers = v->n,
                                     .body = BODY,
                                     .body_len = strlen(BODY)};
  struct tw_sigv4_params p = {.access_key = ak,
                              .secret_key = secret,
                              .region = "us-east-1",
                              .service = "ec2",
                              .amz_date = date,
                              .normalize_path = 1};
  struct tw_sigv4_result res;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_sigv4_sign(&v->req, &p, &res, &err) != TW_OK) {
    TW_CHECK(0, "sign failed: %s", err.msg);
    return;
  }
  snprintf(v->authz, sizeof v->authz, "%s", res.authorization);
  tw_sigv4_result_release(&res);
  v->h[v->n++] = (struct tw_sigv4_header){"Authorization", v->authz};
  v->req.n_headers = v->n;
}

static const char *v_secret(void *ctx, const char *ak) {
  int *calls = ctx;
  (*calls)++;
  return strcmp(ak, AK) == 0 ? SK : NULL;
}

/* Verifies v; expects detail ("" for success). */
static void expect_verify(const char *what, struct vreq *v, const char *service,
                          const char *detail) {
  struct tw_err err;
  tw_err_clear(&err);
  char *who = NULL;
  int calls = 0;
  enum tw_rc rc = tw_sigv4_verify(&v->req, v_secret, &calls, NOW_MS, SKEW_MS,
                                  service, &who, &err);
  if (!*detail) {
    TW_CHECK(rc == TW_OK, "%s: expected success, got %s %s: %s", what,
             tw_rc_str(rc), err.detail, err.msg);
    TW_CHECK(who && !strcmp(who, AK), "%s: access key not returned", what);
  } else {
    TW_CHECK(rc == TW_E_AUTH && !strcmp(err.detail, detail),
             "%s: expected auth/%s, got %s/%s (%s)", what, detail,
             tw_rc_str(rc), err.detail, err.msg);
    TW_CHECK(who == NULL, "%s: access key returned on failure", what);
  }
  TW_CHECK(calls <= 1, "%s: secret looked up %d times", what, calls);
  free(who);
}

/* A key cache of 4 scopes under secrets, days, regions and services
 * that change in turn: every signature is the one derived afresh. */
static void key_cache_scopes(void **state) {
  (void)state;
  static const char *const secrets[] = {SK, "other-secret", "other-secreT"};
  static const char *const dates[] = {"20150830T123600Z", "20150831T000000Z",
                                      "20150830T235959Z"};
  static const char *const regions[] = {"us-east-1", "eu-west-1",
                                        "ap-south-1"};
  static const char *const services[] = {"ec2", "sts"};
  struct tw_sigv4_key_cache c;
  tw_sigv4_key_cache_init(&c);
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 300; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    struct tw_sigv4_header h[] = {{"host", "ec2.amazonaws.com"},
                                  {"x-amz-date", dates[x % 3]}};
    struct tw_sigv4_request req = {.method = "POST",
                                   .path = "/",
                                   .headers = h,
                                   .n_headers = 2,
                                   .body = "Action=DescribeInstances",
                                   .body_len = 24};
    struct tw_sigv4_params p = {.access_key = AK,
                                .secret_key = secrets[(x >> 8) % 3],
                                .region = regions[(x >> 16) % 3],
                                .service = services[(x >> 24) % 2],
                                .amz_date = dates[x % 3],
                                .normalize_path = 1};
    struct tw_sigv4_result a, b;
    TW_CHECK(tw_sigv4_sign(&req, &p, &a, NULL) == TW_OK);
    p.key_cache = &c;
    TW_CHECK(tw_sigv4_sign(&req, &p, &b, NULL) == TW_OK);
    TW_CHECK_STR(a.signature, b.signature);
    TW_CHECK_STR(a.authorization, b.authorization);
    tw_sigv4_result_release(&a);
    tw_sigv4_result_release(&b);
  }
  tw_sigv4_key_cache_release(&c);
}

/* Threads signing at once through one cache, each its own region. */
static struct tw_sigv4_key_cache shared_keys;

static void *sign_many(void *arg) {
  static const char *const regions[] = {"us-east-1", "eu-west-1",
                                        "ap-south-1", "us-west-2",
                                        "sa-east-1", "eu-north-1"};
  long bad = 0;
  const char *region = regions[(intptr_t)arg % 6];
  for (int i = 0; i < 200; i++) {
    struct tw_sigv4_header h[] = {{"host", "ec2.amazonaws.com"},
                                  {"x-amz-date", "20150830T123600Z"}};
    struct tw_sigv4_request req = {.method = "POST",
                                   .path = "/",
                                   .headers = h,
                                   .n_headers = 2,
                                   .body = "Action=RunInstances",
                                   .body_len = 19};
    struct tw_sigv4_params p = {.access_key = AK,
                                .secret_key = SK,
                                .region = region,
                                .service = "ec2",
                                .amz_date = "20150830T123600Z",
                                .normalize_path = 1};
    struct tw_sigv4_result a, b;
    if (tw_sigv4_sign(&req, &p, &a, NULL) != TW_OK)
      return (void *)-1;
    p.key_cache = &shared_keys;
    if (tw_sigv4_sign(&req, &p, &b, NULL) != TW_OK) {
      tw_sigv4_result_release(&a);
      return (void *)-1;
    }
    bad += strcmp(a.signature, b.signature) != 0;
    tw_sigv4_result_release(&a);
    tw_sigv4_result_release(&b);
  }
  return (void *)bad;
}

static void key_cache_threads(void **state) {
  (void)state;
  pthread_t t[6];
  tw_sigv4_key_cache_init(&shared_keys);
  for (intptr_t i = 0; i < 6; i++)
    TW_CHECK(pthread_create(&t[i], NULL, sign_many, (void *)i) == 0);
  for (int i = 0; i < 6; i++) {
    void *bad = NULL;
    pthread_join(t[i], &bad);
    TW_CHECK(bad == NULL, "thread %d: %ld differing signatures", i,
             (long)bad);
  }
  tw_sigv4_key_cache_release(&shared_keys);
}

static void verify(void **state) {
  struct vreq v;
  const char *date = "20150830T123600Z";

  vreq_make(&v, AK, SK, date, false);
  expect_verify("correct request", &v, "ec2", "");
  vreq_make(&v, AK, SK, date, true);
  expect_verify("correct request with x-amz-content-sha256", &v, "ec2", "");

  /* An unsigned header added on the way (a proxy's Via) changes nothing. */
  vreq_make(&v, AK, SK, date, false);
  v.h[v.n++] = (struct tw_sigv4_header){"Via", "1.1 proxy"};
  v.req.n_headers = v.n;
  expect_verify("unsigned header added", &v, "ec2", "");

  vreq_make(&v, AK, "wrong-secret", date, false);
  expect_verify("wrong secret", &v, "ec2", "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, date, false);
  v.req.body = "Action=TerminateInstances&Version=2016-11-15";
  v.req.body_len = strlen(v.req.body);
  expect_verify("altered body", &v, "ec2", "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, date, true);
  v.req.body = "Action=TerminateInstances&Version=2016-11-15";
  v.req.body_len = strlen(v.req.body);
  expect_verify("altered body under x-amz-content-sha256", &v, "ec2",
                "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, date, false);
  v.req.query = "DryRun=true";
  expect_verify("query added", &v, "ec2", "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, date, false);
  v.h[1].value = "ec2.eu-west-1.amazonaws.com";
  expect_verify("signed header altered", &v, "ec2", "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, date, false);
  v.h[0] = v.h[1]; /* drops content-type, which was signed */
  expect_verify("signed header removed", &v, "ec2", "SignatureDoesNotMatch");

  vreq_make(&v, AK, SK, "20150830T124200Z", false); /* 6 min late */
  expect_verify("stale date", &v, "ec2", "RequestExpired");
  vreq_make(&v, AK, SK, "20150830T123000Z", false); /* 6 min early */
  expect_verify("date ahead", &v, "ec2", "RequestExpired");
  vreq_make(&v, AK, SK, "20150830T124000Z", false); /* 4 min: allowed */
  expect_verify("date within skew", &v, "ec2", "");

  vreq_make(&v, "AKIDUNKNOWN", SK, date, false);
  expect_verify("unknown key", &v, "ec2", "AuthFailure");

  vreq_make(&v, AK, SK, date, false);
  expect_verify("wrong service", &v, "monitoring", "SignatureDoesNotMatch");

  /* Scope date differs from x-amz-date (signed a day earlier). */
  vreq_make(&v, AK, SK, "20150829T123600Z", false);
  v.h[2].value = date;
  expect_verify("scope date mismatch", &v, "ec2", "SignatureDoesNotMatch");

  static const char *const garbage[] = {
      "garbage",
      "AWS4-HMAC-SHA256",
      "AWS4-HMAC-SHA1 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, SignedHeaders=host, Signature=" /* 64 zeros */
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2, "
      "SignedHeaders=host;x-amz-date, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, SignedHeaders=host;;x-amz-date, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015083/us-east-1/ec2/"
      "aws4_request, SignedHeaders=host;x-amz-date, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, SignedHeaders=x-amz-date, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000",
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/"
      "aws4_request, SignedHeaders=host;x-amz-date, Signature="
      "0000000000000000000000000000000000000000000000000000000000000000, "
      "Extra=1",
  };
  for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++) {
    char what[64];
    snprintf(what, sizeof what, "garbage header #%zu", i);
    vreq_make(&v, AK, SK, date, false);
    v.h[v.n - 1].value = garbage[i];
    expect_verify(what, &v, "ec2", "IncompleteSignature");
  }

  vreq_make(&v, AK, SK, date, false);
  v.req.n_headers = --v.n; /* drop Authorization */
  expect_verify("no Authorization", &v, "ec2", "MissingAuthenticationToken");

  vreq_make(&v, AK, SK, date, false);
  v.h[2].value = "2015-08-30T12:36:00Z";
  expect_verify("malformed x-amz-date", &v, "ec2", "IncompleteSignature");

  /* A Date header instead of x-amz-date (the signer signs the date given in
   * params; the header carries the same instant in HTTP format). */
  vreq_make(&v, AK, SK, date, false);
  v.h[2] = (struct tw_sigv4_header){"Date", "Sun, 30 Aug 2015 12:36:00 GMT"};
  {
    struct tw_sigv4_params p = {.access_key = AK,
                                .secret_key = SK,
                                .region = "us-east-1",
                                .service = "ec2",
                                .amz_date = date,
                                .normalize_path = 1};
    struct tw_sigv4_result res;
    v.req.n_headers = v.n - 1;
    TW_CHECK(tw_sigv4_sign(&v.req, &p, &res, NULL) == TW_OK, "sign with Date");
    snprintf(v.authz, sizeof v.authz, "%s", res.authorization);
    tw_sigv4_result_release(&res);
    v.req.n_headers = v.n;
    expect_verify("Date header", &v, "ec2", "");
  }

  /* Signer input errors. */
  {
    struct tw_sigv4_request r = {.method = "GET", .path = "/"};
    struct tw_sigv4_params p = {.access_key = AK,
                                .secret_key = SK,
                                .region = "us-east-1",
                                .service = "ec2",
                                .amz_date = "2015-08-30",
                                .normalize_path = 1};
    struct tw_sigv4_result res;
    struct tw_err err;
    tw_err_clear(&err);
    TW_CHECK(tw_sigv4_sign(&r, &p, &res, &err) == TW_E_INVALID &&
                 res.authorization == NULL,
             "bad amz_date accepted");
    p.amz_date = "20150830T123600Z";
    p.region = NULL;
    TW_CHECK(tw_sigv4_sign(&r, &p, &res, NULL) == TW_E_INVALID,
             "missing region accepted");
  }

  /* Encoder and date helpers. */
  {
    char *e;
    tw_sigv4_uri_encode("a b/c~d%\xe1\x88\xb4", 11, 1, &e);
    TW_CHECK(!strcmp(e, "a%20b/c~d%25%E1%88%B4"), "uri_encode: %s", e);
    free(e);
    tw_sigv4_uri_encode("a/b", 3, 0, &e);
    TW_CHECK(!strcmp(e, "a%2Fb"), "uri_encode no slash: %s", e);
    free(e);
    char d[17];
    tw_sigv4_amz_date(NOW_MS + 999, d);
    TW_CHECK(!strcmp(d, date), "amz_date: %s", d);
  }
}

/* ---- differential test against botocore ---- */

static uint64_t rng_state;
static uint64_t rng(void) {
  /* splitmix64: any seed, including 0, gives a good sequence. */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static size_t rnd(size_t n) { return (size_t)(rng() % n); }

/* A random string mixing unreserved, reserved and non-ASCII characters
 * (valid UTF-8, as JSON needs it). */
static char *rnd_text(size_t maxlen, bool allow_empty) {
  static const char *const pieces[] = {"a",
                                       "Z",
                                       "0",
                                       "9",
                                       "-",
                                       "_",
                                       ".",
                                       "~",
                                       " ",
                                       "+",
                                       "=",
                                       "&",
                                       "/",
                                       "?",
                                       "#",
                                       "%",
                                       ":",
                                       "@",
                                       "!",
                                       "$",
                                       "'",
                                       "(",
                                       ")",
                                       "*",
                                       ",",
                                       ";",
                                       "[",
                                       "]",
                                       "\"",
                                       "<",
                                       ">",
                                       "{",
                                       "}",
                                       "|",
                                       "\\",
                                       "^",
                                       "`",
                                       "\xc3\xa9",
                                       "\xe1\x88\xb4",
                                       "\xf0\x9f\x98\x80",
                                       "Action",
                                       "Instance",
                                       "Id"};
  struct tw_buf b;
  tw_buf_init(&b);
  size_t n = rnd(maxlen + 1);
  if (n == 0 && !allow_empty)
    n = 1;
  for (size_t i = 0; i < n; i++)
    tw_buf_adds(&b, pieces[rnd(sizeof pieces / sizeof *pieces)]);
  return tw_buf_detach(&b);
}

/* The wire encoding of a query component or path segment, done by curl
 * (independent of the signer's encoder): everything but ALPHA DIGIT -._~
 * percent-encoded, as botocore's quote(safe='-_.~') does. */
static char *wire_escape(CURL *c, const char *s) {
  char *e = curl_easy_escape(c, s, (int)strlen(s));
  char *r = tw_strdup(e);
  curl_free(e);
  return r;
}

/* A header value with runs of spaces and tabs inside and around it. */
static char *rnd_header_value(void) {
  static const char *const pieces[] = {
      "x", "Value", "a  b",  "  ", "\t",         " ",      "1",
      "=", ";",     "\"q\"", ",",  "text/plain", "  lead", "trail  "};
  struct tw_buf b;
  tw_buf_init(&b);
  size_t n = 1 + rnd(6);
  for (size_t i = 0; i < n; i++)
    tw_buf_adds(&b, pieces[rnd(sizeof pieces / sizeof *pieces)]);
  return tw_buf_detach(&b);
}

struct diff_case {
  char *method, *host, *path, *query, *url, *token, *region, *service;
  char amz_date[17];
  char *body;
  size_t body_len;
  struct tw_sigv4_header h[16];
  char *hv[16], *hn[16];
  size_t n;
};

static void diff_case_release(struct diff_case *c) {
  free(c->method);
  free(c->host);
  free(c->path);
  free(c->query);
  free(c->url);
  free(c->token);
  free(c->region);
  free(c->service);
  free(c->body);
  for (size_t i = 0; i < c->n; i++) {
    free(c->hn[i]);
    free(c->hv[i]);
  }
  memset(c, 0, sizeof *c);
}

static void diff_case_header(struct diff_case *c, const char *n,
                             const char *v) {
  c->hn[c->n] = tw_strdup(n);
  c->hv[c->n] = tw_strdup(v);
  c->h[c->n].name = c->hn[c->n];
  c->h[c->n].value = c->hv[c->n];
  c->n++;
}

static void diff_case_make(CURL *curl, struct diff_case *c) {
  static const char *const regions[] = {"us-east-1", "eu-west-1",
                                        "ap-southeast-2", "us-gov-west-1"};
  static const char *const services[] = {"ec2", "ec2", "ec2", "sts",
                                         "monitoring"};
  static const char *const names[] = {
      "Content-Type", "X-Amz-Target",    "my-header",
      "MY-HEADER",    "X-Custom",        "Accept",
      "User-Agent",   "x-amz-meta-note", "Idempotency-Token"};
  memset(c, 0, sizeof *c);
  c->method = tw_strdup(rnd(2) ? "POST" : "GET");
  c->region = tw_strdup(regions[rnd(4)]);
  c->service = tw_strdup(services[rnd(5)]);
  bool local = rnd(4) == 0;
  c->host = local ? tw_asprintf("127.0.0.1:%zu", 1024 + rnd(60000))
                  : tw_asprintf("%s.%s.amazonaws.com", c->service, c->region);
  /* Path: "/" most of the time, as EC2 uses; otherwise encoded segments,
   * with dot segments and doubled slashes for normalization. */
  struct tw_buf p;
  tw_buf_init(&p);
  if (rnd(3) == 0) {
    tw_buf_addc(&p, '/');
  } else {
    size_t segs = 1 + rnd(4);
    for (size_t i = 0; i < segs; i++) {
      tw_buf_addc(&p, '/');
      size_t kind = rnd(8);
      if (kind == 0) {
        tw_buf_adds(&p, ".");
      } else if (kind == 1) {
        tw_buf_adds(&p, "..");
      } else if (kind == 2) {
        /* empty segment: "//" */
      } else {
        char *t = rnd_text(6, false);
        char *e = wire_escape(curl, t);
        tw_buf_adds(&p, e);
        free(e);
        free(t);
      }
    }
    if (rnd(3) == 0)
      tw_buf_addc(&p, '/');
  }
  c->path = tw_buf_detach(&p);
  struct tw_buf q;
  tw_buf_init(&q);
  size_t nq = rnd(3) ? rnd(6) : 0;
  for (size_t i = 0; i < nq; i++) {
    char *k = rnd_text(4, false);
    char *v = rnd_text(5, true);
    char *ek = wire_escape(curl, k), *ev = wire_escape(curl, v);
    if (i)
      tw_buf_addc(&q, '&');
    tw_buf_adds(&q, ek);
    if (*ev || rnd(2)) {
      tw_buf_addc(&q, '=');
      tw_buf_adds(&q, ev);
    }
    if (rnd(5) == 0) { /* a repeated key */
      tw_buf_printf(&q, "&%s=%s", ek, ev);
    }
    free(k);
    free(v);
    free(ek);
    free(ev);
  }
  c->query = q.len ? tw_buf_detach(&q) : NULL;
  tw_buf_release(&q);
  c->url = tw_asprintf("%s://%s%s%s%s", local ? "http" : "https", c->host,
                       c->path, c->query ? "?" : "", c->query ? c->query : "");

  /* 2000-01-01 .. ~2033 */
  tw_sigv4_amz_date((int64_t)(946684800 + (int64_t)rnd(1000000000)) * 1000,
                    c->amz_date);

  if (!strcmp(c->method, "POST")) {
    if (rnd(3)) {
      char *a = rnd_text(8, false), *e = wire_escape(curl, a);
      c->body = tw_asprintf("Action=DescribeInstances&Version=2016-11-15"
                            "&Filter.1.Value.1=%s",
                            e);
      free(a);
      free(e);
      c->body_len = strlen(c->body);
      diff_case_header(c, "Content-Type",
                       "application/x-www-form-urlencoded; charset=utf-8");
    } else {
      c->body_len = rnd(200);
      c->body = tw_malloc(c->body_len + 1);
      for (size_t i = 0; i < c->body_len; i++)
        c->body[i] = (char)rnd(256); /* binary, NULs included */
    }
  } else {
    c->body = tw_strdup("");
  }
  size_t nh = rnd(5);
  for (size_t i = 0; i < nh; i++) {
    char *v = rnd_header_value();
    diff_case_header(c, names[rnd(sizeof names / sizeof *names)], v);
    free(v);
  }
  if (rnd(4) == 0) {
    char h[65];
    tw_sha256_hex(c->body, c->body_len, h);
    diff_case_header(c, "X-Amz-Content-SHA256", h);
  }
  if (rnd(4) == 0)
    c->token = tw_asprintf("FQoGZXIvYXdzE%" PRIu64 "//token+/=", rng());
}

static char *b64(const void *d, size_t n) {
  char *o = tw_malloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)o, d, (int)n);
  return o;
}

/* python3 with botocore and the helper script are there; says SKIPPED
 * when not. */
static bool botocore_present(void) {
  const char *py = "/usr/bin/python3";
  if (access(py, X_OK) != 0 ||
      system("/usr/bin/python3 -c 'import botocore.auth' 2>/dev/null") != 0) {
    printf("SKIPPED: %s cannot import botocore (apt install "
           "python3-botocore)\n",
           py);
    return false;
  }
  const char *src = getenv("TW_SOURCE_DIR");
  char *script = tw_asprintf("%s/tests/unit/botocore_sign.py", src ? src : ".");
  bool ok = access(script, R_OK) == 0;
  if (!ok)
    printf("SKIPPED: %s not found (set TW_SOURCE_DIR)\n", script);
  free(script);
  return ok;
}

static long botocore_n = 1000; /* requests, from the command line */

static void botocore(void **state) {
  long n = botocore_n;
  const char *src = getenv("TW_SOURCE_DIR");
  char *script = tw_asprintf("%s/tests/unit/botocore_sign.py", src ? src : ".");
  uint64_t seed;
  const char *es = getenv("TW_SEED");
  if (es && *es)
    seed = strtoull(es, NULL, 10);
  else
    seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  printf("botocore differential: %ld requests, seed %" PRIu64
         " (TW_SEED=%" PRIu64 " replays)\n",
         n, seed, seed);
  fflush(stdout);
  rng_state = seed;

  char tmpl[] = "/tmp/tw_sigv4_XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    free(script);
    TW_FAIL("mkstemp: %s", strerror(errno));
  }
  FILE *in = fdopen(fd, "w");
  CURL *curl = curl_easy_init();
  struct diff_case *cases = tw_calloc((size_t)n, sizeof *cases);
  for (long i = 0; i < n; i++) {
    struct diff_case *c = &cases[i];
    diff_case_make(curl, c);
    json_t *o = json_object();
    json_object_set_new(o, "method", json_string(c->method));
    json_object_set_new(o, "url", json_string(c->url));
    json_t *hs = json_array();
    for (size_t j = 0; j < c->n; j++)
      json_array_append_new(hs, json_pack("[ss]", c->h[j].name, c->h[j].value));
    json_object_set_new(o, "headers", hs);
    char *b = b64(c->body, c->body_len);
    json_object_set_new(o, "body_b64", json_string(b));
    free(b);
    json_object_set_new(o, "access_key", json_string(AK));
    json_object_set_new(o, "secret_key", json_string(SK));
    json_object_set_new(o, "token",
                        c->token ? json_string(c->token) : json_null());
    json_object_set_new(o, "region", json_string(c->region));
    json_object_set_new(o, "service", json_string(c->service));
    json_object_set_new(o, "amz_date", json_string(c->amz_date));
    char *line = json_dumps(o, JSON_COMPACT);
    fprintf(in, "%s\n", line);
    free(line);
    json_decref(o);
  }
  fclose(in);
  curl_easy_cleanup(curl);

  char *cmd = tw_asprintf("/usr/bin/python3 '%s' < '%s'", script, tmpl);
  FILE *out = popen(cmd, "r");
  free(cmd);
  long pass = 0, shown = 0, answered = 0;
  char *line = NULL;
  size_t cap = 0;
  for (long i = 0; out && i < n && getline(&line, &cap, out) > 0; i++) {
    answered++;
    struct diff_case *c = &cases[i];
    json_error_t jerr;
    json_t *a = json_loads(line, 0, &jerr);
    const char *want = json_string_value(json_object_get(a, "authorization"));
    const char *want_cr =
        json_string_value(json_object_get(a, "canonical_request"));
    /* What our adapter does: add host, x-amz-date and the token, sign. */
    diff_case_header(c, "Host", c->host);
    diff_case_header(c, "X-Amz-Date", c->amz_date);
    if (c->token)
      diff_case_header(c, "X-Amz-Security-Token", c->token);
    struct tw_sigv4_request r = {.method = c->method,
                                 .path = c->path,
                                 .query = c->query,
                                 .headers = c->h,
                                 .n_headers = c->n,
                                 .body = c->body,
                                 .body_len = c->body_len};
    struct tw_sigv4_params p = {.access_key = AK,
                                .secret_key = SK,
                                .session_token = c->token,
                                .region = c->region,
                                .service = c->service,
                                .amz_date = c->amz_date,
                                .normalize_path = 1};
    struct tw_sigv4_result res;
    struct tw_err err;
    tw_err_clear(&err);
    bool ok = tw_sigv4_sign(&r, &p, &res, &err) == TW_OK && want &&
              !strcmp(res.authorization, want);
    if (ok) {
      /* And the verifier accepts botocore's request. */
      diff_case_header(c, "Authorization", want);
      r.n_headers = c->n;
      int calls = 0;
      tw_err_clear(&err);
      ok = tw_sigv4_verify(&r, v_secret, &calls, amz_to_ms(c->amz_date),
                           SKEW_MS, c->service, NULL, &err) == TW_OK;
      if (!ok && shown < 3)
        fprintf(stderr, "verify rejected botocore's request %ld: %s\n", i,
                err.msg);
    }
    if (ok) {
      pass++;
    } else if (shown++ < 3) {
      fprintf(stderr,
              "DIFF request %ld: %s %s\n  botocore: %s\n  ours:     %s\n"
              "--- botocore canonical request\n%s\n--- ours\n%s\n",
              i, c->method, c->url,
              want ? want : json_string_value(json_object_get(a, "error")),
              res.authorization ? res.authorization : err.msg,
              want_cr ? want_cr : "",
              res.canonical_request ? res.canonical_request : "");
    }
    tw_sigv4_result_release(&res);
    json_decref(a);
  }
  free(line);
  int prc = out ? pclose(out) : -1;
  unlink(tmpl);
  for (long i = 0; i < n; i++)
    diff_case_release(&cases[i]);
  free(cases);
  free(script);
  printf("botocore differential: %ld/%ld requests identical (seed %" PRIu64
         ")\n",
         pass, n, seed);
  TW_CHECK(prc == 0 && answered == n,
           "botocore_sign.py answered %ld of %ld (status %d)", answered, n,
           prc);
  TW_CHECK(pass == n, "%ld of %ld requests identical", pass, n);
}

int main(int argc, char **argv) {
  const char *mode = argc >= 2 ? argv[1] : "";
  const struct CMUnitTest suite_tests[] = {cmocka_unit_test(suites)};
  const struct CMUnitTest verify_tests[] = {
      cmocka_unit_test(verify), cmocka_unit_test(key_cache_scopes),
      cmocka_unit_test(key_cache_threads)};
  tw_sigv4_key_cache_init(&suite_keys);
  const struct CMUnitTest botocore_tests[] = {cmocka_unit_test(botocore)};
  if (!strcmp(mode, "--suites"))
    return suites_present() ? cmocka_run_group_tests(suite_tests, NULL, NULL)
                            : TW_SKIP;
  if (!strcmp(mode, "--verify"))
    return cmocka_run_group_tests(verify_tests, NULL, NULL);
  if (!strcmp(mode, "--botocore")) {
    if (argc >= 3)
      botocore_n = strtol(argv[2], NULL, 10);
    return botocore_present()
               ? cmocka_run_group_tests(botocore_tests, NULL, NULL)
               : TW_SKIP;
  }
  fprintf(stderr, "usage: %s --suites | --verify | --botocore [N]\n", argv[0]);
  return 2;
}
