/* sigv4.c - AWS Signature Version 4, signer and verifier (see sigv4.h).
 *
 * The canonical request follows botocore (botocore/auth.py, SigV4Auth),
 * since botocore and the AWS SDKs are what the fake cloud must accept and
 * what AWS accepts from us; where the AWS test suites expect more (raw UTF-8
 * in a query string), the rule is a superset that leaves botocore's output
 * unchanged. */
#include "providers/sigv4.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "broker/base/hex.h"
#include "broker/base/mem.h"

#define SIGV4_ALGO "AWS4-HMAC-SHA256"

static const char HEX_LOWER[] = "0123456789abcdef";
static const char HEX_UPPER[] = "0123456789ABCDEF";

/* Headers botocore never signs (SIGNED_HEADERS_BLACKLIST in
 * botocore/auth.py): hop-by-hop headers a proxy may rewrite, and
 * user-agent / x-amzn-trace-id which middleboxes touch.  Signing them
 * would make a request fail on its way through a proxy. */
static const char *const UNSIGNED_HEADERS[] = {"connection",
                                               "expect",
                                               "keep-alive",
                                               "proxy-authenticate",
                                               "proxy-authorization",
                                               "te",
                                               "trailer",
                                               "transfer-encoding",
                                               "upgrade",
                                               "user-agent",
                                               "x-amzn-trace-id",
                                               NULL};

/* Python's str.split() treats these as whitespace too; botocore trims
 * header values with it, so the same set keeps signatures identical. */
static bool sigv4_is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f' || (c >= 0x1c && c <= 0x1f);
}

static bool sigv4_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

static void sigv4_hex(const unsigned char *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = HEX_LOWER[d[i] >> 4];
    out[2 * i + 1] = HEX_LOWER[d[i] & 15];
  }
  out[2 * n] = '\0';
}

void tw_sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data ? data : "", len, md, &n, EVP_sha256(), NULL);
  sigv4_hex(md, 32, out);
}

static void sigv4_encode_into(struct tw_buf *b, const char *s, size_t len,
                              bool keep_slash) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (sigv4_unreserved(c) || (keep_slash && c == '/')) {
      tw_buf_addc(b, (char)c);
    } else {
      tw_buf_addc(b, '%');
      tw_buf_addc(b, HEX_UPPER[c >> 4]);
      tw_buf_addc(b, HEX_UPPER[c & 15]);
    }
  }
}

void tw_sigv4_uri_encode(const char *s, size_t len, int keep_slash,
                         char **out) {
  struct tw_buf b;
  tw_buf_init(&b);
  sigv4_encode_into(&b, s ? s : "", s ? len : 0, keep_slash != 0);
  *out = tw_buf_detach(&b);
}

/* Decodes valid %XX escapes and leaves anything else as is, so that
 * decode-then-encode maps both a raw UTF-8 query (the AWS test suite's
 * get-vanilla-utf8-query) and an already encoded one (what botocore and
 * curl put on the wire) to the same canonical form. */
static void sigv4_canon_component(struct tw_buf *b, const char *s, size_t len) {
  struct tw_buf raw;
  tw_buf_init(&raw);
  for (size_t i = 0; i < len; i++) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < len &&
        (hi = tw_hexval((unsigned char)s[i + 1])) >= 0 &&
        (lo = tw_hexval((unsigned char)s[i + 2])) >= 0) {
      tw_buf_addc(&raw, (char)(hi * 16 + lo));
      i += 2;
    } else {
      tw_buf_addc(&raw, s[i]);
    }
  }
  sigv4_encode_into(b, raw.data ? raw.data : "", raw.len, false);
  tw_buf_release(&raw);
}

/* RFC 3986 section 5.2.4 plus the removal of empty segments, exactly as
 * botocore's remove_dot_segments(): AWS services other than S3 collapse
 * "//" too (the suite's get-slashes case). */
static void sigv4_normalize_path(const char *p, struct tw_buf *out) {
  size_t len = strlen(p);
  if (len == 0) {
    tw_buf_addc(out, '/');
    return;
  }
  size_t cap = 1;
  for (size_t i = 0; i < len; i++)
    cap += p[i] == '/';
  const char **seg = tw_malloc(cap * sizeof *seg);
  size_t *seglen = tw_malloc(cap * sizeof *seglen);
  size_t n = 0;
  const char *s = p, *end = p + len;
  while (s <= end) {
    const char *e = memchr(s, '/', (size_t)(end - s));
    if (!e)
      e = end;
    size_t l = (size_t)(e - s);
    if (l == 2 && s[0] == '.' && s[1] == '.') {
      if (n)
        n--;
    } else if (l > 0 && !(l == 1 && s[0] == '.')) {
      seg[n] = s;
      seglen[n] = l;
      n++;
    }
    s = e + 1;
  }
  if (p[0] == '/')
    tw_buf_addc(out, '/');
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(out, '/');
    tw_buf_add(out, seg[i], seglen[i]);
  }
  if (p[len - 1] == '/' && n > 0)
    tw_buf_addc(out, '/');
  free(seg);
  free(seglen);
}

struct sigv4_qparam {
  char *key;
  char *value;
};

static int sigv4_qparam_cmp(const void *a, const void *b) {
  const struct sigv4_qparam *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : strcmp(x->value, y->value);
}

/* Sorted by encoded key, then encoded value (botocore sorts the pairs, not
 * the "k=v" strings: "a=1" comes before "a-b=1").  A key without '=' gets an
 * empty value. */
static void sigv4_canonical_query(const char *q, struct tw_buf *out) {
  if (!q || !*q)
    return;
  size_t cap = 1;
  for (const char *c = q; *c; c++)
    cap += *c == '&';
  struct sigv4_qparam *ps = tw_calloc(cap, sizeof *ps);
  size_t n = 0;
  const char *s = q;
  for (;;) {
    const char *e = strchr(s, '&');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    const char *eq = memchr(s, '=', l);
    size_t kl = eq ? (size_t)(eq - s) : l;
    struct tw_buf k, v;
    tw_buf_init(&k);
    tw_buf_init(&v);
    sigv4_canon_component(&k, s, kl);
    if (eq)
      sigv4_canon_component(&v, eq + 1, l - kl - 1);
    ps[n].key = tw_buf_detach(&k);
    ps[n].value = tw_buf_detach(&v);
    n++;
    if (!e)
      break;
    s = e + 1;
  }
  qsort(ps, n, sizeof *ps, sigv4_qparam_cmp);
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(out, '&');
    tw_buf_adds(out, ps[i].key);
    tw_buf_addc(out, '=');
    tw_buf_adds(out, ps[i].value);
    free(ps[i].key);
    free(ps[i].value);
  }
  free(ps);
}

/* Lower case, surrounding whitespace removed. */
static char *sigv4_header_name(const char *name) {
  const char *s = name ? name : "";
  while (*s && sigv4_is_ws((unsigned char)*s))
    s++;
  size_t l = strlen(s);
  while (l && sigv4_is_ws((unsigned char)s[l - 1]))
    l--;
  char *r = tw_strndup(s, l);
  for (char *c = r; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  return r;
}

/* Trimall: surrounding whitespace removed, inner runs made one space. */
static char *sigv4_trimall(const char *v) {
  struct tw_buf b;
  tw_buf_init(&b);
  bool pending = false;
  for (const char *c = v ? v : ""; *c; c++) {
    if (sigv4_is_ws((unsigned char)*c)) {
      pending = true;
      continue;
    }
    if (pending && b.len)
      tw_buf_addc(&b, ' ');
    pending = false;
    tw_buf_addc(&b, *c);
  }
  return tw_buf_detach(&b);
}

static bool sigv4_name_is(const char *name, const char *lower) {
  char *n = sigv4_header_name(name);
  bool eq = strcmp(n, lower) == 0;
  free(n);
  return eq;
}

/* Index of the first header named lower, or -1. */
static long sigv4_find_header(const struct tw_sigv4_request *req,
                              const char *lower) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (sigv4_name_is(req->headers[i].name, lower))
      return (long)i;
  return -1;
}

/* Whether name is one of the ';'-separated tokens of list. */
static bool sigv4_in_list(const char *list, const char *name) {
  size_t nl = strlen(name);
  const char *s = list;
  for (;;) {
    const char *e = strchr(s, ';');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l == nl && memcmp(s, name, nl) == 0)
      return true;
    if (!e)
      return false;
    s = e + 1;
  }
}

struct sigv4_hdr {
  char *name;
  char *value;
  size_t idx;
};

static int sigv4_hdr_cmp(const void *a, const void *b) {
  const struct sigv4_hdr *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool sigv4_valid_amz_date(const char *d) {
  if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
    return false;
  for (int i = 0; i < 15; i++)
    if (i != 8 && (d[i] < '0' || d[i] > '9'))
      return false;
  return true;
}

static bool sigv4_valid_param(const char *s) {
  return s && *s && !strchr(s, '/');
}

static void sigv4_hmac(const void *key, size_t klen, const void *msg,
                       size_t mlen, unsigned char out[32]) {
  unsigned int n = 32;
  HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &n);
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region),
 * service), "aws4_request"). */
static void derive_key(const struct tw_sigv4_params *p, const char *date8,
                       unsigned char key[32]) {
  unsigned char k1[32];
  char *ksecret = tw_asprintf("AWS4%s", p->secret_key);
  sigv4_hmac(ksecret, strlen(ksecret), date8, 8, k1);
  OPENSSL_cleanse(ksecret, strlen(ksecret));
  free(ksecret);
  sigv4_hmac(k1, 32, p->region, strlen(p->region), key);
  sigv4_hmac(key, 32, p->service, strlen(p->service), k1);
  sigv4_hmac(k1, 32, "aws4_request", 12, key);
  OPENSSL_cleanse(k1, sizeof k1);
}

void tw_sigv4_key_cache_init(struct tw_sigv4_key_cache *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
}

void tw_sigv4_key_cache_release(struct tw_sigv4_key_cache *c) {
  if (!c)
    return;
  pthread_mutex_destroy(&c->mu);
  OPENSSL_cleanse(c, sizeof *c);
}

/* The signing key of p's secret, date8, region and service, from
 * p->key_cache when it holds it (and into it when not). */
static void signing_key(const struct tw_sigv4_params *p, const char *date8,
                        unsigned char key[32]) {
  struct tw_sigv4_key_cache *c = p->key_cache;
  char secret[TW_SIGV4_KEY_SECRET_MAX + 1], scope[128];
  size_t sl = strlen(p->secret_key);
  if (!c || sl > TW_SIGV4_KEY_SECRET_MAX ||
      snprintf(scope, sizeof scope, "%s/%s/%s", date8, p->region,
               p->service) >= (int)sizeof scope) {
    derive_key(p, date8, key);
    return;
  }
  memset(secret, 0, sizeof secret);
  memcpy(secret, p->secret_key, sl);
  pthread_mutex_lock(&c->mu);
  for (unsigned i = 0; i < TW_SIGV4_KEY_CACHE_N; i++)
    if (c->e[i].used && !strcmp(c->e[i].scope, scope) &&
        !CRYPTO_memcmp(c->e[i].secret, secret, sizeof secret)) {
      memcpy(key, c->e[i].key, 32);
      pthread_mutex_unlock(&c->mu);
      OPENSSL_cleanse(secret, sizeof secret);
      return;
    }
  pthread_mutex_unlock(&c->mu);
  derive_key(p, date8, key);
  pthread_mutex_lock(&c->mu);
  unsigned i = c->next++ % TW_SIGV4_KEY_CACHE_N;
  c->e[i].used = true;
  memcpy(c->e[i].secret, secret, sizeof secret);
  memcpy(c->e[i].scope, scope, sizeof scope);
  memcpy(c->e[i].key, key, 32);
  pthread_mutex_unlock(&c->mu);
  OPENSSL_cleanse(secret, sizeof secret);
}

/* only_signed: when non-NULL (verification), the headers named in this
 * ';'-list are the ones signed, whatever they are; when NULL (signing), all
 * headers but UNSIGNED_HEADERS are. */
static enum tw_rc sigv4_sign(const struct tw_sigv4_request *req,
                             const struct tw_sigv4_params *p,
                             const char *only_signed,
                             struct tw_sigv4_result *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!req || !p || !req->method || !*req->method)
    return tw_err_set(err, TW_E_INVALID, "sigv4: request method missing");
  if (!p->access_key || !*p->access_key || strchr(p->access_key, '/') ||
      !p->secret_key)
    return tw_err_set(err, TW_E_INVALID, "sigv4: credentials missing");
  if (!sigv4_valid_param(p->region) || !sigv4_valid_param(p->service))
    return tw_err_set(err, TW_E_INVALID,
                      "sigv4: region and service must be non-empty and "
                      "contain no '/'");
  if (!sigv4_valid_amz_date(p->amz_date))
    return tw_err_set(err, TW_E_INVALID,
                      "sigv4: amz_date: expected YYYYMMDDTHHMMSSZ, got '%s'",
                      p->amz_date ? p->amz_date : "(null)");
  if (req->n_headers && !req->headers)
    return tw_err_set(err, TW_E_INVALID, "sigv4: headers missing");

  struct tw_buf cr;
  tw_buf_init(&cr);

  /* Method, upper case as botocore sends it. */
  for (const char *c = req->method; *c; c++)
    tw_buf_addc(&cr, (*c >= 'a' && *c <= 'z') ? (char)(*c - 'a' + 'A') : *c);
  tw_buf_addc(&cr, '\n');

  /* Path: the path as given is encoded once more, so a wire path
   * "/a%20b" becomes "/a%2520b", as botocore and AWS do for every service
   * but S3; the test suites give raw paths ("/example space/"), which this
   * encodes once. */
  const char *path = req->path && *req->path ? req->path : "/";
  if (p->normalize_path) {
    struct tw_buf np;
    tw_buf_init(&np);
    sigv4_normalize_path(path, &np);
    sigv4_encode_into(&cr, np.data ? np.data : "", np.len, true);
    tw_buf_release(&np);
  } else {
    sigv4_encode_into(&cr, path, strlen(path), true);
  }
  tw_buf_addc(&cr, '\n');

  sigv4_canonical_query(req->query, &cr);
  tw_buf_addc(&cr, '\n');

  /* Headers: lower-cased names, sorted; repeated names merged in the order
   * sent, values joined by ','. */
  struct sigv4_hdr *hs =
      tw_calloc(req->n_headers ? req->n_headers : 1, sizeof *hs);
  size_t nh = 0;
  const char *payload_hdr = NULL;
  for (size_t i = 0; i < req->n_headers; i++) {
    char *name = sigv4_header_name(req->headers[i].name);
    bool keep = *name != '\0';
    if (keep && only_signed) {
      keep = sigv4_in_list(only_signed, name);
    } else if (keep) {
      for (const char *const *u = UNSIGNED_HEADERS; *u; u++)
        if (!strcmp(name, *u))
          keep = false;
    }
    if (!keep) {
      free(name);
      continue;
    }
    hs[nh].name = name;
    hs[nh].value = sigv4_trimall(req->headers[i].value);
    hs[nh].idx = i;
    if (!payload_hdr && !strcmp(name, "x-amz-content-sha256"))
      payload_hdr = hs[nh].value;
    nh++;
  }
  qsort(hs, nh, sizeof *hs, sigv4_hdr_cmp);
  struct tw_buf sh;
  tw_buf_init(&sh);
  for (size_t i = 0; i < nh; i++) {
    bool first = i == 0 || strcmp(hs[i].name, hs[i - 1].name) != 0;
    if (first) {
      if (i)
        tw_buf_addc(&cr, '\n');
      tw_buf_adds(&cr, hs[i].name);
      tw_buf_addc(&cr, ':');
      if (sh.len)
        tw_buf_addc(&sh, ';');
      tw_buf_adds(&sh, hs[i].name);
    } else {
      tw_buf_addc(&cr, ',');
    }
    tw_buf_adds(&cr, hs[i].value);
  }
  tw_buf_adds(&cr, "\n\n");
  tw_buf_adds(&cr, sh.data ? sh.data : "");
  tw_buf_addc(&cr, '\n');

  /* Payload: a declared x-amz-content-sha256 is used as is, as botocore
   * does (it may be UNSIGNED-PAYLOAD for S3); tw_sigv4_verify() checks it
   * against the body separately. */
  enum tw_rc rc = TW_OK;
  if (payload_hdr) {
    if (strlen(payload_hdr) > 64) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "sigv4: x-amz-content-sha256 longer than 64 bytes");
      goto out;
    }
    snprintf(out->payload_hash, sizeof out->payload_hash, "%s", payload_hdr);
  } else {
    tw_sha256_hex(req->body, req->body ? req->body_len : 0, out->payload_hash);
  }
  tw_buf_adds(&cr, out->payload_hash);

  char date8[9];
  memcpy(date8, p->amz_date, 8);
  date8[8] = '\0';
  char cr_hash[65];
  tw_sha256_hex(cr.data, cr.len, cr_hash);
  out->string_to_sign =
      tw_asprintf(SIGV4_ALGO "\n%s\n%s/%s/%s/aws4_request\n%s", p->amz_date,
                  date8, p->region, p->service, cr_hash);

  unsigned char k1[32], k2[32];
  signing_key(p, date8, k2);
  sigv4_hmac(k2, 32, out->string_to_sign, strlen(out->string_to_sign), k1);
  sigv4_hex(k1, 32, out->signature);
  OPENSSL_cleanse(k1, sizeof k1);
  OPENSSL_cleanse(k2, sizeof k2);

  out->authorization = tw_asprintf(
      SIGV4_ALGO " Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                 "Signature=%s",
      p->access_key, date8, p->region, p->service, sh.data ? sh.data : "",
      out->signature);
  out->signed_headers = tw_buf_detach(&sh);
  out->canonical_request = tw_buf_detach(&cr);

out:
  for (size_t i = 0; i < nh; i++) {
    free(hs[i].name);
    free(hs[i].value);
  }
  free(hs);
  tw_buf_release(&sh);
  tw_buf_release(&cr);
  if (rc)
    tw_sigv4_result_release(out);
  return rc;
}

enum tw_rc tw_sigv4_sign(const struct tw_sigv4_request *req,
                         const struct tw_sigv4_params *params,
                         struct tw_sigv4_result *out, struct tw_err *err) {
  return sigv4_sign(req, params, NULL, out, err);
}

void tw_sigv4_result_release(struct tw_sigv4_result *r) {
  if (!r)
    return;
  free(r->canonical_request);
  free(r->string_to_sign);
  free(r->authorization);
  free(r->signed_headers);
  memset(r, 0, sizeof *r);
}

void tw_sigv4_amz_date(int64_t ms, char out[17]) {
  time_t t = (time_t)(ms / 1000 - (ms % 1000 < 0));
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* ---- verification ---- */

static enum tw_rc sigv4_deny(struct tw_err *err, const char *code,
                             const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum tw_rc sigv4_deny(struct tw_err *err, const char *code,
                             const char *fmt, ...) {
  if (err && err->rc == TW_OK) {
    va_list ap;
    va_start(ap, fmt);
    tw_err_setv(err, TW_E_AUTH, fmt, ap);
    va_end(ap);
    tw_err_detail(err, code);
  }
  return TW_E_AUTH;
}

static int64_t sigv4_amz_date_ms(const char *d) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int v[6];
  static const int off[6] = {0, 4, 6, 9, 11, 13};
  static const int len[6] = {4, 2, 2, 2, 2, 2};
  for (int i = 0; i < 6; i++) {
    v[i] = 0;
    for (int j = 0; j < len[i]; j++)
      v[i] = v[i] * 10 + (d[off[i] + j] - '0');
  }
  if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 ||
      v[4] > 59 || v[5] > 60)
    return INT64_MIN;
  tm.tm_year = v[0] - 1900;
  tm.tm_mon = v[1] - 1;
  tm.tm_mday = v[2];
  tm.tm_hour = v[3];
  tm.tm_min = v[4];
  tm.tm_sec = v[5];
  return (int64_t)timegm(&tm) * 1000;
}

struct sigv4_authz {
  char *access_key, *date8, *region, *service;
  char *signed_headers;
  char signature[65];
};

static void sigv4_authz_release(struct sigv4_authz *a) {
  free(a->access_key);
  free(a->date8);
  free(a->region);
  free(a->service);
  free(a->signed_headers);
  memset(a, 0, sizeof *a);
}

static bool sigv4_token_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '!' || c == '#' || c == '$' || c == '%' ||
         c == '&' || c == '\'' || c == '*' || c == '+' || c == '^' ||
         c == '`' || c == '|' || c == '~';
}

/* Parses "AWS4-HMAC-SHA256 Credential=AK/YYYYMMDD/region/service/
 * aws4_request, SignedHeaders=a;b, Signature=<64 hex>" (components in any
 * order, ',' with optional spaces).  Returns false when malformed. */
static bool sigv4_parse_authz(const char *v, struct sigv4_authz *a,
                              const char **why) {
  memset(a, 0, sizeof *a);
  size_t al = strlen(SIGV4_ALGO);
  if (strncmp(v, SIGV4_ALGO, al) != 0 || (v[al] != ' ' && v[al] != '\t')) {
    *why = "unsupported algorithm, expected " SIGV4_ALGO;
    return false;
  }
  const char *s = v + al;
  bool have_sig = false;
  for (;;) {
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *e = strchr(s, ',');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
      l--;
    if (l > 11 && !strncmp(s, "Credential=", 11)) {
      if (a->access_key) {
        *why = "Credential given twice";
        return false;
      }
      const char *c = s + 11, *ce = s + l;
      char *parts[5] = {0};
      int np = 0;
      while (np < 5) {
        const char *slash = memchr(c, '/', (size_t)(ce - c));
        const char *pe = slash ? slash : ce;
        parts[np++] = tw_strndup(c, (size_t)(pe - c));
        if (!slash)
          break;
        c = slash + 1;
      }
      bool ok = np == 5 && c <= ce && !memchr(c, '/', (size_t)(ce - c)) &&
                *parts[0] && strlen(parts[1]) == 8 && *parts[2] && *parts[3] &&
                !strcmp(parts[4], "aws4_request");
      for (int i = 0; ok && i < 8; i++)
        ok = parts[1][i] >= '0' && parts[1][i] <= '9';
      if (!ok) {
        for (int i = 0; i < np; i++)
          free(parts[i]);
        *why = "Credential must be access-key/YYYYMMDD/region/service/"
               "aws4_request";
        return false;
      }
      a->access_key = parts[0];
      a->date8 = parts[1];
      a->region = parts[2];
      a->service = parts[3];
      free(parts[4]);
    } else if (l > 14 && !strncmp(s, "SignedHeaders=", 14)) {
      if (a->signed_headers) {
        *why = "SignedHeaders given twice";
        return false;
      }
      a->signed_headers = tw_strndup(s + 14, l - 14);
      const char *h = a->signed_headers;
      bool tok = false;
      for (; *h; h++) {
        if (*h == ';') {
          if (!tok)
            break;
          tok = false;
        } else if (sigv4_token_char((unsigned char)*h)) {
          tok = true;
        } else {
          break;
        }
      }
      if (*h || !tok) {
        *why = "SignedHeaders must be lower-case names separated by ';'";
        return false;
      }
    } else if (l > 10 && !strncmp(s, "Signature=", 10)) {
      if (have_sig || l != 10 + 64) {
        *why = "Signature must be 64 hex digits";
        return false;
      }
      for (size_t i = 0; i < 64; i++) {
        char c = s[10 + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
          *why = "Signature must be 64 lower-case hex digits";
          return false;
        }
        a->signature[i] = c;
      }
      a->signature[64] = '\0';
      have_sig = true;
    } else {
      *why = "unknown or empty Authorization component";
      return false;
    }
    if (!e)
      break;
    s = e + 1;
  }
  if (!a->access_key || !a->signed_headers || !have_sig) {
    *why = "Authorization needs Credential, SignedHeaders and Signature";
    return false;
  }
  return true;
}

enum tw_rc tw_sigv4_verify(const struct tw_sigv4_request *req,
                           tw_sigv4_secret_fn secret, void *ctx, int64_t now_ms,
                           int64_t skew_ms, const char *expect_service,
                           char **access_key_out, struct tw_err *err) {
  if (access_key_out)
    *access_key_out = NULL;
  if (!req || !secret || (req->n_headers && !req->headers))
    return tw_err_set(err, TW_E_INVALID, "sigv4: verify: missing argument");

  long ai = sigv4_find_header(req, "authorization");
  if (ai < 0)
    return sigv4_deny(err, "MissingAuthenticationToken",
                      "Request is missing Authentication Token");

  struct sigv4_authz a;
  const char *why = "";
  enum tw_rc rc = TW_OK;
  char *authz = sigv4_trimall(req->headers[ai].value);
  char *secret_copy = NULL;
  struct tw_sigv4_result res;
  memset(&res, 0, sizeof res);
  if (!sigv4_parse_authz(authz, &a, &why)) {
    rc =
        sigv4_deny(err, "IncompleteSignature", "Authorization header: %s", why);
    goto out;
  }
  if (!sigv4_in_list(a.signed_headers, "host")) {
    rc = sigv4_deny(err, "IncompleteSignature",
                    "'Host' must be a 'SignedHeader' in the AWS "
                    "Authorization");
    goto out;
  }

  /* The request time: x-amz-date, else an HTTP Date header, whose value is
   * what the client put in its string to sign. */
  char amz_date[17];
  long di = sigv4_find_header(req, "x-amz-date");
  if (di >= 0) {
    char *d = sigv4_trimall(req->headers[di].value);
    bool ok = sigv4_valid_amz_date(d);
    if (ok)
      memcpy(amz_date, d, 17);
    free(d);
    if (!ok || sigv4_amz_date_ms(amz_date) == INT64_MIN) {
      rc = sigv4_deny(err, "IncompleteSignature",
                      "X-Amz-Date must be in the ISO8601 basic format "
                      "YYYYMMDD'T'HHMMSS'Z'");
      goto out;
    }
  } else if ((di = sigv4_find_header(req, "date")) >= 0) {
    char *d = sigv4_trimall(req->headers[di].value);
    time_t t = curl_getdate(d, NULL);
    free(d);
    if (t == (time_t)-1) {
      rc = sigv4_deny(err, "IncompleteSignature", "Date header malformed");
      goto out;
    }
    tw_sigv4_amz_date((int64_t)t * 1000, amz_date);
  } else {
    rc = sigv4_deny(err, "IncompleteSignature",
                    "Authorization header requires existence of either a "
                    "'X-Amz-Date' or a 'Date' header");
    goto out;
  }
  if (memcmp(amz_date, a.date8, 8) != 0) {
    rc = sigv4_deny(err, "SignatureDoesNotMatch",
                    "Date in Credential scope does not match YYYYMMDD from "
                    "ISO-8601 version of date from HTTP: '%s' != '%.8s'",
                    a.date8, amz_date);
    goto out;
  }
  if (expect_service && strcmp(a.service, expect_service) != 0) {
    rc = sigv4_deny(err, "SignatureDoesNotMatch",
                    "Credential should be scoped to correct service: '%s'",
                    expect_service);
    goto out;
  }
  int64_t t_ms = sigv4_amz_date_ms(amz_date);
  int64_t delta = now_ms > t_ms ? now_ms - t_ms : t_ms - now_ms;
  if (delta > skew_ms) {
    rc = sigv4_deny(err, "RequestExpired",
                    "Request has expired: signed at %s, more than %lld ms "
                    "from the server's time",
                    amz_date, (long long)skew_ms);
    goto out;
  }

  const char *sk = secret(ctx, a.access_key);
  if (!sk) {
    rc = sigv4_deny(err, "AuthFailure",
                    "AWS was not able to validate the provided access "
                    "credentials");
    goto out;
  }
  secret_copy = tw_strdup(sk);

  /* botocore and the SDKs send x-amz-content-sha256 and sign over its
   * value, not over the body: without this check an altered body with the
   * original header would pass. */
  long pi = sigv4_find_header(req, "x-amz-content-sha256");
  if (pi >= 0) {
    char body_hash[65];
    tw_sha256_hex(req->body, req->body ? req->body_len : 0, body_hash);
    char *declared = sigv4_trimall(req->headers[pi].value);
    bool ok = strcmp(declared, body_hash) == 0;
    free(declared);
    if (!ok) {
      rc = sigv4_deny(err, "SignatureDoesNotMatch",
                      "x-amz-content-sha256 does not match the payload");
      goto out;
    }
  }

  /* Every header named in SignedHeaders must be present. */
  for (const char *h = a.signed_headers;;) {
    const char *e = strchr(h, ';');
    char *name = tw_strndup(h, e ? (size_t)(e - h) : strlen(h));
    bool present = sigv4_find_header(req, name) >= 0;
    if (!present)
      rc = sigv4_deny(err, "SignatureDoesNotMatch",
                      "signed header '%s' is not in the request", name);
    free(name);
    if (!present)
      goto out;
    if (!e)
      break;
    h = e + 1;
  }

  struct tw_sigv4_params p = {
      .access_key = a.access_key,
      .secret_key = secret_copy,
      .region = a.region,
      .service = a.service,
      .amz_date = amz_date,
      .normalize_path = strcmp(a.service, "s3") != 0,
  };
  struct tw_err serr;
  tw_err_clear(&serr);
  if (sigv4_sign(req, &p, a.signed_headers, &res, &serr) != TW_OK) {
    rc = sigv4_deny(err, "IncompleteSignature", "%s", serr.msg);
    goto out;
  }
  if (strcmp(res.signed_headers, a.signed_headers) != 0 ||
      CRYPTO_memcmp(res.signature, a.signature, 64) != 0) {
    rc = sigv4_deny(err, "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the "
                    "signature you provided. Check your AWS Secret Access "
                    "Key and signing method.");
    goto out;
  }
  if (access_key_out)
    *access_key_out = tw_strdup(a.access_key);

out:
  tw_sigv4_result_release(&res);
  if (secret_copy) {
    OPENSSL_cleanse(secret_copy, strlen(secret_copy));
    free(secret_copy);
  }
  sigv4_authz_release(&a);
  free(authz);
  return rc;
}
