/* aws_creds.c - the AWS credential chain and its refreshing cache
 * (aws_creds.h).  Wire formats: STS's Query API (2011-06-15) for
 * AssumeRole and AssumeRoleWithWebIdentity, the ECS container endpoint's
 * and IMDSv2's JSON. */
#include "providers/aws/aws_creds.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "providers/http.h"
#include "providers/sigv4.h"

#define STS_VERSION "2011-06-15"
#define STS_FORM "application/x-www-form-urlencoded; charset=utf-8"
#define ADVISORY_MS (15 * 60 * 1000LL) /* botocore's refresh windows */
#define MANDATORY_MS (10 * 60 * 1000LL)
#define IMDS_DEFAULT "http://169.254.169.254"
#define ECS_HOST "http://169.254.170.2"
#define FILE_MAX (1 << 20)
#define PROFILE_DEPTH_MAX 8

enum kind {
  K_STATIC = 1,
  K_ENV,
  K_ASSUME,
  K_WEB,
  K_CRED_FILE,
  K_CONFIG_FILE,
  K_CONTAINER,
  K_IMDS
};

static const char *const kind_names[] = {[K_STATIC] = "static",
                                         [K_ENV] = "environment",
                                         [K_ASSUME] = "assume-role",
                                         [K_WEB] = "web-identity",
                                         [K_CRED_FILE] =
                                             "shared-credentials-file",
                                         [K_CONFIG_FILE] = "config-file",
                                         [K_CONTAINER] = "container",
                                         [K_IMDS] = "instance-metadata"};

struct tw_aws_creds {
  enum kind kind;
  struct tw_clock *clock;
  struct tw_http *http;
  char *ca_file;
  /* assume-role and web identity */
  char *role_arn, *session_name, *external_id, *region, *sts_endpoint;
  int64_t duration_s;
  struct tw_aws_creds *source; /* assume-role: whose keys sign the call */
  char *token_file;            /* web identity */
  /* container */
  char *uri, *auth_token, *auth_token_file;
  /* instance metadata */
  char *imds;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool refreshing, have;
  struct tw_aws_key cur;
  int64_t fetched_ms;
};

void tw_aws_key_wipe(struct tw_aws_key *k) { OPENSSL_cleanse(k, sizeof *k); }

static bool set_str(char *dst, size_t sz, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n >= sz)
    return false;
  memcpy(dst, s ? s : "", n + 1);
  return true;
}

static struct tw_aws_creds *node_new(enum kind k,
                                     const struct tw_aws_creds_opts *o) {
  struct tw_aws_creds *c = tw_calloc(1, sizeof *c);
  c->kind = k;
  c->clock = o && o->clock ? o->clock : tw_clock_real();
  c->http = o ? o->http : NULL;
  c->ca_file = o && o->ca_file ? tw_strdup(o->ca_file) : NULL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

static struct tw_aws_creds *static_node(enum kind k, const char *ak,
                                        const char *sk, const char *tok) {
  struct tw_aws_creds *c = node_new(k, NULL);
  if (!set_str(c->cur.access_key, sizeof c->cur.access_key, ak) ||
      !set_str(c->cur.secret_key, sizeof c->cur.secret_key, sk) ||
      !set_str(c->cur.session_token, sizeof c->cur.session_token, tok)) {
    tw_aws_creds_free(c);
    return NULL;
  }
  c->have = true;
  return c;
}

struct tw_aws_creds *tw_aws_creds_static(const char *ak, const char *sk,
                                         const char *tok) {
  return static_node(K_STATIC, ak, sk, tok);
}

static void wipe_free(char *s) {
  if (s)
    OPENSSL_cleanse(s, strlen(s));
  free(s);
}

void tw_aws_creds_free(struct tw_aws_creds *c) {
  if (!c)
    return;
  tw_aws_creds_free(c->source);
  free(c->ca_file);
  free(c->role_arn);
  free(c->session_name);
  free(c->external_id);
  free(c->region);
  free(c->sts_endpoint);
  free(c->token_file);
  free(c->uri);
  wipe_free(c->auth_token);
  free(c->auth_token_file);
  free(c->imds);
  tw_aws_key_wipe(&c->cur);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

const char *tw_aws_creds_source(const struct tw_aws_creds *c) {
  return c ? kind_names[c->kind] : "none";
}

void tw_aws_creds_invalidate(struct tw_aws_creds *c) {
  if (!c || c->kind == K_STATIC || c->kind == K_ENV || c->kind == K_CRED_FILE ||
      c->kind == K_CONFIG_FILE)
    return;
  pthread_mutex_lock(&c->mu);
  c->have = false;
  pthread_mutex_unlock(&c->mu);
  tw_aws_creds_invalidate(c->source);
}

/* ---- INI ---------------------------------------------------------------- */

static const char *trim(const char *s, const char *end, size_t *len) {
  while (s < end && isspace((unsigned char)*s))
    s++;
  while (end > s && isspace((unsigned char)end[-1]))
    end--;
  *len = (size_t)(end - s);
  return s;
}

/* Calls fn on each key = value of section; stops when fn returns true. */
static bool ini_walk(const char *text, const char *section,
                     bool (*fn)(void *, const char *, size_t, const char *,
                                size_t),
                     void *arg, bool *found_section) {
  bool in = false;
  size_t slen = strlen(section);
  if (found_section)
    *found_section = false;
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    const char *end = nl ? nl : line + strlen(line);
    size_t len;
    const char *l = trim(line, end, &len);
    if (len && l[0] == '[') {
      const char *close = memchr(l, ']', len);
      size_t nlen;
      const char *name = close ? trim(l + 1, close, &nlen) : NULL;
      in = name && nlen == slen && !memcmp(name, section, slen);
      if (in && found_section)
        *found_section = true;
    } else if (in && len && l[0] != '#' && l[0] != ';') {
      const char *eq = memchr(l, '=', len);
      if (eq) {
        size_t klen, vlen;
        const char *k = trim(l, eq, &klen);
        const char *v = trim(eq + 1, l + len, &vlen);
        if (fn(arg, k, klen, v, vlen))
          return true;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  return false;
}

struct ini_find {
  const char *key;
  char *out;
  size_t outsz;
};

static bool ini_match(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen) {
  struct ini_find *f = arg;
  if (klen != strlen(f->key) || strncasecmp(k, f->key, klen))
    return false;
  if (f->outsz) {
    size_t n = vlen < f->outsz - 1 ? vlen : f->outsz - 1;
    memcpy(f->out, v, n);
    f->out[n] = '\0';
  }
  return true;
}

bool tw_aws_ini_get(const char *text, const char *section, const char *key,
                    char *out, size_t outsz) {
  struct ini_find f = {key, out, outsz};
  if (outsz)
    *out = '\0';
  return text && ini_walk(text, section, ini_match, &f, NULL);
}

static bool ini_none(void *arg, const char *k, size_t kl, const char *v,
                     size_t vl) {
  (void)arg, (void)k, (void)kl, (void)v, (void)vl;
  return false;
}

bool tw_aws_ini_has(const char *text, const char *section) {
  bool found = false;
  if (text)
    ini_walk(text, section, ini_none, NULL, &found);
  return found;
}

/* ---- answers ------------------------------------------------------------ */

/* The text of the first <tag>...</tag> inside [s, end), entities of
 * tokens left as they are (STS's keys and tokens hold none). */
static bool xml_text(const char *s, const char *end, const char *tag, char *out,
                     size_t outsz) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  size_t ol = strlen(open), cl = strlen(close);
  for (const char *p = s; p + ol <= end; p++) {
    if (memcmp(p, open, ol))
      continue;
    const char *v = p + ol;
    for (const char *q = v; q + cl <= end; q++)
      if (!memcmp(q, close, cl)) {
        size_t n;
        const char *t = trim(v, q, &n);
        if (n >= outsz)
          return false;
        memcpy(out, t, n);
        out[n] = '\0';
        return true;
      }
    return false;
  }
  return false;
}

enum tw_rc tw_aws_parse_sts(const char *body, size_t len, long status,
                            struct tw_aws_key *out, struct tw_err *err) {
  const char *end = body ? body + len : NULL;
  char code[128] = "", msg[256] = "", exp[64] = "";
  memset(out, 0, sizeof *out);
  if (!body)
    return tw_err_set(err, TW_E_AUTH, "sts: empty answer (HTTP %ld)", status);
  if (status != 200) {
    xml_text(body, end, "Code", code, sizeof code);
    xml_text(body, end, "Message", msg, sizeof msg);
    tw_err_detail(err, *code ? code : "HTTP");
    return tw_err_set(err, status >= 500 ? TW_E_RETRYABLE : TW_E_AUTH,
                      "sts: HTTP %ld %s%s%s", status, *code ? code : "error",
                      *msg ? ": " : "", msg);
  }
  const char *cr = NULL;
  for (const char *p = body; p + 13 <= end; p++)
    if (!memcmp(p, "<Credentials>", 13)) {
      cr = p;
      break;
    }
  if (!cr ||
      !xml_text(cr, end, "AccessKeyId", out->access_key,
                sizeof out->access_key) ||
      !xml_text(cr, end, "SecretAccessKey", out->secret_key,
                sizeof out->secret_key) ||
      !xml_text(cr, end, "SessionToken", out->session_token,
                sizeof out->session_token) ||
      !xml_text(cr, end, "Expiration", exp, sizeof exp) || !*out->access_key ||
      !*out->secret_key || tw_time_parse_rfc3339(exp, &out->expires_ms) != 0) {
    tw_aws_key_wipe(out);
    return tw_err_set(err, TW_E_AUTH,
                      "sts: the answer has no complete Credentials element");
  }
  return TW_OK;
}

enum tw_rc tw_aws_parse_cred_json(const char *body, size_t len,
                                  struct tw_aws_key *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  json_t *j = body ? json_loadb(body, len, 0, NULL) : NULL;
  enum tw_rc rc = TW_OK;
  const char *code = json_string_value(json_object_get(j, "Code"));
  const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
  const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
  const char *tok = json_string_value(json_object_get(j, "Token"));
  const char *exp = json_string_value(json_object_get(j, "Expiration"));
  if (!json_is_object(j))
    rc = tw_err_set(err, TW_E_AUTH, "credentials: the answer is not JSON");
  else if (code && strcmp(code, "Success"))
    rc = tw_err_set(err, TW_E_AUTH, "credentials: Code %.64s", code);
  else if (!ak || !sk || !*ak || !*sk ||
           !set_str(out->access_key, sizeof out->access_key, ak) ||
           !set_str(out->secret_key, sizeof out->secret_key, sk) ||
           !set_str(out->session_token, sizeof out->session_token, tok))
    rc = tw_err_set(err, TW_E_AUTH,
                    "credentials: AccessKeyId or SecretAccessKey missing");
  else if (exp && tw_time_parse_rfc3339(exp, &out->expires_ms) != 0)
    rc = tw_err_set(err, TW_E_AUTH, "credentials: Expiration %.40s unreadable",
                    exp);
  json_decref(j);
  if (rc)
    tw_aws_key_wipe(out);
  return rc;
}

/* ---- fetching ----------------------------------------------------------- */

static char *read_file(const char *path) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < FILE_MAX)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  tw_buf_addc(&b, '\0');
  return tw_buf_detach(&b);
}

static char *subst_region(const char *tmpl, const char *region) {
  struct tw_buf u;
  tw_buf_init(&u);
  const char *at;
  while ((at = strstr(tmpl, "{region}"))) {
    tw_buf_add(&u, tmpl, (size_t)(at - tmpl));
    tw_buf_adds(&u, region);
    tmpl = at + 8;
  }
  tw_buf_adds(&u, tmpl);
  return tw_buf_detach(&u);
}

static void form_add(struct tw_buf *b, const char *name, const char *value) {
  char *enc = NULL;
  if (b->len)
    tw_buf_addc(b, '&');
  tw_buf_adds(b, name);
  tw_buf_addc(b, '=');
  tw_sigv4_uri_encode(value, strlen(value), 0, &enc);
  tw_buf_adds(b, enc);
  free(enc);
}

struct sts_sign {
  struct tw_aws_creds *c;
  const struct tw_aws_key *k;
  const struct tw_buf *body;
  char host[256], path[512];
};

static enum tw_rc sts_prepare(void *vctx, struct tw_http_attempt *att,
                              struct tw_err *err) {
  struct sts_sign *s = vctx;
  char date[17];
  tw_sigv4_amz_date(tw_clock_now_ms(s->c->clock), date);
  struct tw_sigv4_header h[4] = {
      {"host", s->host}, {"content-type", STS_FORM}, {"x-amz-date", date}};
  size_t nh = 3;
  bool tok = *s->k->session_token;
  if (tok)
    h[nh++] =
        (struct tw_sigv4_header){"x-amz-security-token", s->k->session_token};
  struct tw_sigv4_request sr = {.method = "POST",
                                .path = s->path,
                                .headers = h,
                                .n_headers = nh,
                                .body = s->body->data,
                                .body_len = s->body->len};
  struct tw_sigv4_params sp = {.access_key = s->k->access_key,
                               .secret_key = s->k->secret_key,
                               .session_token =
                                   tok ? s->k->session_token : NULL,
                               .region = s->c->region,
                               .service = "sts",
                               .amz_date = date,
                               .normalize_path = 1};
  struct tw_sigv4_result res;
  memset(&res, 0, sizeof res);
  enum tw_rc rc = tw_sigv4_sign(&sr, &sp, &res, err);
  if (rc == TW_OK) {
    tw_http_attempt_add_header(att, "X-Amz-Date", date);
    tw_http_attempt_add_header(att, "Authorization", res.authorization);
    if (tok)
      tw_http_attempt_add_header(att, "X-Amz-Security-Token",
                                 s->k->session_token);
  }
  tw_sigv4_result_release(&res);
  return rc;
}

/* STS's Action with form in body; signed with k unless NULL. */
static enum tw_rc sts_call(struct tw_aws_creds *c, const struct tw_buf *body,
                           const struct tw_aws_key *k, struct tw_aws_key *out,
                           struct tw_err *err) {
  char *url = subst_region(c->sts_endpoint, c->region);
  struct sts_sign s = {.c = c, .k = k, .body = body};
  const char *hs = strstr(url, "://");
  hs = hs ? hs + 3 : url;
  size_t hl = strcspn(hs, "/?#");
  const char *path = hs + hl;
  if (!hl || hl >= sizeof s.host || strlen(path) >= sizeof s.path) {
    free(url);
    return tw_err_set(err, TW_E_INVALID, "sts: endpoint malformed");
  }
  memcpy(s.host, hs, hl);
  s.host[hl] = '\0';
  snprintf(s.path, sizeof s.path, "%s", *path ? path : "/");
  char full[1100];
  snprintf(full, sizeof full, "%s%s", url, *path ? "" : "/");
  const struct tw_http_header hdrs[] = {{"Content-Type", STS_FORM},
                                        {"Accept", "text/xml"}};
  struct tw_http_request req = {.method = "POST",
                                .url = full,
                                .headers = hdrs,
                                .n_headers = 2,
                                .body = body->data,
                                .body_len = body->len,
                                .timeout_ms = 10000,
                                .connect_timeout_ms = 3000,
                                .max_body_bytes = 64 * 1024,
                                .ca_file = c->ca_file,
                                .prepare = k ? sts_prepare : NULL,
                                .prepare_ctx = &s};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  enum tw_rc rc = tw_http_do(c->http, &req, &resp, err);
  if (rc == TW_OK)
    rc = tw_aws_parse_sts(resp.body.data, resp.body.len, resp.status, out, err);
  if (resp.body.data)
    OPENSSL_cleanse(resp.body.data, resp.body.len);
  tw_http_response_release(&resp);
  free(url);
  return rc;
}

static void role_form(struct tw_aws_creds *c, const char *action,
                      struct tw_buf *b) {
  char dur[24];
  snprintf(dur, sizeof dur, "%lld", (long long)c->duration_s);
  form_add(b, "Action", action);
  form_add(b, "Version", STS_VERSION);
  form_add(b, "RoleArn", c->role_arn);
  form_add(b, "RoleSessionName", c->session_name);
  form_add(b, "DurationSeconds", dur);
  if (c->external_id)
    form_add(b, "ExternalId", c->external_id);
}

static enum tw_rc fetch_assume(struct tw_aws_creds *c, struct tw_aws_key *out,
                               struct tw_err *err) {
  struct tw_aws_key src;
  enum tw_rc rc = tw_aws_creds_get(c->source, &src, err);
  if (rc)
    return rc;
  struct tw_buf b;
  tw_buf_init(&b);
  role_form(c, "AssumeRole", &b);
  rc = sts_call(c, &b, &src, out, err);
  tw_aws_key_wipe(&src);
  tw_buf_release(&b);
  return rc;
}

static enum tw_rc fetch_web(struct tw_aws_creds *c, struct tw_aws_key *out,
                            struct tw_err *err) {
  /* read on every refresh: the token file is rotated under us */
  char *tok = read_file(c->token_file);
  size_t n = tok ? strlen(tok) : 0;
  while (n && isspace((unsigned char)tok[n - 1]))
    tok[--n] = '\0';
  if (!n) {
    free(tok);
    return tw_err_set(err, TW_E_AUTH,
                      "aws web identity: cannot read a token from %s",
                      c->token_file);
  }
  struct tw_buf b;
  tw_buf_init(&b);
  role_form(c, "AssumeRoleWithWebIdentity", &b);
  form_add(&b, "WebIdentityToken", tok);
  wipe_free(tok);
  enum tw_rc rc = sts_call(c, &b, NULL, out, err);
  OPENSSL_cleanse(b.data, b.len);
  tw_buf_release(&b);
  return rc;
}

/* GET or PUT url with headers; the body into *body (owned). */
static enum tw_rc meta_call(struct tw_aws_creds *c, const char *method,
                            const char *url, const struct tw_http_header *h,
                            size_t nh, struct tw_buf *body, long *status,
                            struct tw_err *err) {
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = nh,
                                .body = !strcmp(method, "PUT") ? "" : NULL,
                                .timeout_ms = 2000,
                                .connect_timeout_ms = 1000,
                                .max_attempts = 2,
                                .max_body_bytes = 64 * 1024,
                                .ca_file = c->ca_file};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  enum tw_rc rc = tw_http_do(c->http, &req, &resp, err);
  *status = resp.status;
  if (rc == TW_OK) {
    *body = resp.body;
    tw_buf_init(&resp.body);
    tw_buf_addc(body, '\0');
    body->len--;
  }
  tw_http_response_release(&resp);
  return rc;
}

static enum tw_rc fetch_container(struct tw_aws_creds *c,
                                  struct tw_aws_key *out, struct tw_err *err) {
  char *auth = c->auth_token ? tw_strdup(c->auth_token) : NULL;
  if (c->auth_token_file) {
    auth = read_file(c->auth_token_file);
    if (!auth)
      return tw_err_set(err, TW_E_AUTH,
                        "aws container credentials: cannot read %s",
                        c->auth_token_file);
    auth[strcspn(auth, "\r\n")] = '\0';
  }
  struct tw_http_header h[1] = {{"Authorization", auth}};
  struct tw_buf body;
  tw_buf_init(&body);
  long status = 0;
  enum tw_rc rc =
      meta_call(c, "GET", c->uri, h, auth ? 1 : 0, &body, &status, err);
  wipe_free(auth);
  if (rc == TW_OK && status != 200)
    rc = tw_err_set(err, TW_E_AUTH,
                    "aws container credentials: %s answered HTTP %ld", c->uri,
                    status);
  if (rc == TW_OK)
    rc = tw_aws_parse_cred_json(body.data, body.len, out, err);
  if (body.data)
    OPENSSL_cleanse(body.data, body.len);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc fetch_imds(struct tw_aws_creds *c, struct tw_aws_key *out,
                             struct tw_err *err) {
  char url[1024], token[1024] = "";
  struct tw_buf body;
  long status = 0;
  tw_buf_init(&body);
  snprintf(url, sizeof url, "%s/latest/api/token", c->imds);
  const struct tw_http_header th[] = {
      {"X-aws-ec2-metadata-token-ttl-seconds", "21600"}};
  enum tw_rc rc = meta_call(c, "PUT", url, th, 1, &body, &status, err);
  if (rc == TW_OK && (status != 200 || !body.len || body.len >= sizeof token))
    rc = tw_err_set(err, TW_E_AUTH,
                    "aws instance metadata: no IMDSv2 session token from %s "
                    "(HTTP %ld)",
                    url, status);
  if (rc == TW_OK)
    memcpy(token, body.data, body.len + 1);
  tw_buf_release(&body);
  if (rc)
    return rc;
  const struct tw_http_header h[] = {{"X-aws-ec2-metadata-token", token}};
  snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/",
           c->imds);
  char role[256] = "";
  rc = meta_call(c, "GET", url, h, 1, &body, &status, err);
  if (rc == TW_OK && status == 200 && body.len) {
    size_t n = strcspn(body.data, "\r\n");
    if (n && n < sizeof role) {
      memcpy(role, body.data, n);
      role[n] = '\0';
    }
  }
  tw_buf_release(&body);
  if (rc == TW_OK && !*role)
    rc = tw_err_set(err, TW_E_AUTH,
                    "aws instance metadata: no instance role at %s (HTTP %ld)",
                    url, status);
  for (const char *p = role; rc == TW_OK && *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("+=,.@_-", *p))
      rc = tw_err_set(err, TW_E_AUTH,
                      "aws instance metadata: a role name with '%c'", *p);
  if (rc)
    return rc;
  snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s",
           c->imds, role);
  rc = meta_call(c, "GET", url, h, 1, &body, &status, err);
  if (rc == TW_OK && status != 200)
    rc = tw_err_set(err, TW_E_AUTH,
                    "aws instance metadata: %s answered HTTP %ld", url, status);
  if (rc == TW_OK)
    rc = tw_aws_parse_cred_json(body.data, body.len, out, err);
  if (body.data)
    OPENSSL_cleanse(body.data, body.len);
  tw_buf_release(&body);
  OPENSSL_cleanse(token, sizeof token);
  return rc;
}

static enum tw_rc fetch(struct tw_aws_creds *c, struct tw_aws_key *out,
                        struct tw_err *err) {
  switch (c->kind) {
  case K_ASSUME:
    return fetch_assume(c, out, err);
  case K_WEB:
    return fetch_web(c, out, err);
  case K_CONTAINER:
    return fetch_container(c, out, err);
  case K_IMDS:
    return fetch_imds(c, out, err);
  default:
    break;
  }
  return tw_err_set(err, TW_E_INTERNAL, "aws credentials: nothing to fetch");
}

/* The refresh windows of credentials fetched at fetched_ms. */
static void windows(const struct tw_aws_creds *c, int64_t *adv, int64_t *mand) {
  int64_t life = c->cur.expires_ms - c->fetched_ms;
  *adv = life / 2 < ADVISORY_MS ? life / 2 : ADVISORY_MS;
  *mand = life / 4 < MANDATORY_MS ? life / 4 : MANDATORY_MS;
}

enum tw_rc tw_aws_creds_get(struct tw_aws_creds *c, struct tw_aws_key *out,
                            struct tw_err *err) {
  pthread_mutex_lock(&c->mu);
  for (;;) {
    int64_t now = tw_clock_now_ms(c->clock), adv, mand;
    if (c->have && !c->cur.expires_ms)
      goto copy;
    windows(c, &adv, &mand);
    if (c->have && now < c->cur.expires_ms - adv)
      goto copy;
    /* due: someone else is at it; sign with the current ones while they
     * are far enough from expiry */
    if (c->refreshing) {
      if (c->have && now < c->cur.expires_ms - mand)
        goto copy;
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    break;
  }
  c->refreshing = true;
  pthread_mutex_unlock(&c->mu);

  struct tw_aws_key k;
  struct tw_err e = {0};
  int64_t t0 = tw_clock_now_ms(c->clock);
  enum tw_rc rc = fetch(c, &k, &e);

  pthread_mutex_lock(&c->mu);
  c->refreshing = false;
  pthread_cond_broadcast(&c->cv);
  if (rc == TW_OK) {
    c->cur = k;
    c->have = true;
    c->fetched_ms = t0;
    char exp[40] = "never";
    if (k.expires_ms)
      tw_time_fmt_rfc3339(k.expires_ms, exp, sizeof exp);
    tw_log_info("aws", "credentials fetched source=%s expires=%s",
                kind_names[c->kind], exp);
  } else if (c->have && tw_clock_now_ms(c->clock) < c->cur.expires_ms - 60000) {
    /* keep the ones we have while they last; the next call tries again */
    tw_log_warn("aws", "credentials refresh failed source=%s err=\"%s\"",
                kind_names[c->kind], e.msg);
    rc = TW_OK;
  } else {
    c->have = false;
    if (err && err->rc == TW_OK)
      *err = e;
  }
  tw_aws_key_wipe(&k);
  if (rc) {
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
copy:
  *out = c->cur;
  pthread_mutex_unlock(&c->mu);
  return TW_OK;
}

/* ---- the chain ---------------------------------------------------------- */

struct chain {
  const struct tw_aws_creds_opts *o;
  char *config, *credentials; /* the files' text; NULL absent */
  char *config_path, *credentials_path;
};

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* The profile's key: the credentials file's [name] first, then the config
 * file's [profile name] ([default] for default). */
static bool prof_get(const struct chain *ch, const char *name, const char *key,
                     char *out, size_t outsz) {
  char sec[300];
  if (tw_aws_ini_get(ch->credentials, name, key, out, outsz))
    return true;
  snprintf(sec, sizeof sec, "profile %s", name);
  if (tw_aws_ini_get(ch->config, sec, key, out, outsz))
    return true;
  return !strcmp(name, "default") &&
         tw_aws_ini_get(ch->config, "default", key, out, outsz);
}

static bool prof_exists(const struct chain *ch, const char *name) {
  char sec[300];
  snprintf(sec, sizeof sec, "profile %s", name);
  return tw_aws_ini_has(ch->credentials, name) ||
         tw_aws_ini_has(ch->config, sec) ||
         (!strcmp(name, "default") && tw_aws_ini_has(ch->config, "default"));
}

/* Static keys of a profile, NULL when it has none. */
static struct tw_aws_creds *prof_keys(const struct chain *ch,
                                      const char *name) {
  char ak[TW_AWS_KEY_MAX], sk[TW_AWS_KEY_MAX], tok[TW_AWS_TOKEN_MAX];
  char sec[300];
  enum kind k = K_CRED_FILE;
  if (!tw_aws_ini_get(ch->credentials, name, "aws_access_key_id", ak,
                      sizeof ak) ||
      !tw_aws_ini_get(ch->credentials, name, "aws_secret_access_key", sk,
                      sizeof sk)) {
    k = K_CONFIG_FILE;
    snprintf(sec, sizeof sec, "%s%s", strcmp(name, "default") ? "profile " : "",
             name);
    if (!tw_aws_ini_get(ch->config, sec, "aws_access_key_id", ak, sizeof ak) ||
        !tw_aws_ini_get(ch->config, sec, "aws_secret_access_key", sk,
                        sizeof sk))
      return NULL;
  }
  if (!prof_get(ch, name, "aws_session_token", tok, sizeof tok))
    *tok = '\0';
  struct tw_aws_creds *c = static_node(k, ak, sk, tok);
  OPENSSL_cleanse(sk, sizeof sk);
  OPENSSL_cleanse(tok, sizeof tok);
  return c;
}

static struct tw_aws_creds *container_node(const struct chain *ch) {
  const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  if (!full && !rel)
    return NULL;
  struct tw_aws_creds *c = node_new(K_CONTAINER, ch->o);
  if (rel) {
    c->uri = tw_malloc(strlen(ECS_HOST) + strlen(rel) + 2);
    sprintf(c->uri, "%s%s%s", ECS_HOST, *rel == '/' ? "" : "/", rel);
  } else {
    c->uri = tw_strdup(full);
  }
  const char *f = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  const char *t = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (f)
    c->auth_token_file = tw_strdup(f);
  else if (t)
    c->auth_token = tw_strdup(t);
  return c;
}

static struct tw_aws_creds *imds_node(const struct chain *ch) {
  const char *dis = env("AWS_EC2_METADATA_DISABLED");
  if (dis && !strcasecmp(dis, "true"))
    return NULL;
  struct tw_aws_creds *c = node_new(K_IMDS, ch->o);
  const char *e = ch->o->imds_endpoint
                      ? ch->o->imds_endpoint
                      : env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  c->imds = tw_strdup(e ? e : IMDS_DEFAULT);
  size_t n = strlen(c->imds);
  while (n && c->imds[n - 1] == '/')
    c->imds[--n] = '\0';
  return c;
}

static struct tw_aws_creds *env_node(void) {
  const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
  if (!ak || !sk)
    return NULL;
  return static_node(K_ENV, ak, sk, env("AWS_SESSION_TOKEN"));
}

static struct tw_aws_creds *role_node(const struct chain *ch, enum kind k,
                                      const char *arn, const char *session,
                                      const char *external_id,
                                      int64_t duration_s) {
  struct tw_aws_creds *c = node_new(k, ch->o);
  c->role_arn = tw_strdup(arn);
  c->session_name = tw_strdup(session && *session ? session : "tradewind");
  c->external_id = external_id && *external_id ? tw_strdup(external_id) : NULL;
  c->duration_s = duration_s > 0 ? duration_s : 3600;
  c->region = tw_strdup(ch->o->region ? ch->o->region : "us-east-1");
  c->sts_endpoint =
      tw_strdup(ch->o->sts_endpoint ? ch->o->sts_endpoint
                                    : "https://sts.{region}.amazonaws.com");
  return c;
}

static enum tw_rc resolve_profile(const struct chain *ch, const char *name,
                                  int depth, struct tw_aws_creds **out,
                                  struct tw_err *err);

/* The profile's role_arn with source_profile or credential_source. */
static enum tw_rc profile_role(const struct chain *ch, const char *name,
                               int depth, struct tw_aws_creds **out,
                               struct tw_err *err) {
  char arn[512], src[256], csrc[64], sess[128], ext[256], dur[32];
  *out = NULL;
  if (!prof_get(ch, name, "role_arn", arn, sizeof arn) || !*arn)
    return TW_OK;
  bool has_src = prof_get(ch, name, "source_profile", src, sizeof src);
  bool has_csrc = prof_get(ch, name, "credential_source", csrc, sizeof csrc);
  if (!has_src && !has_csrc)
    return TW_OK; /* role_arn with a web identity token, or nothing */
  if (has_src && has_csrc)
    return tw_err_field(err, TW_E_AUTH, "profile",
                        "aws profile %s: give source_profile or "
                        "credential_source, not both",
                        name);
  struct tw_aws_creds *source = NULL;
  enum tw_rc rc = TW_OK;
  if (has_src) {
    /* a profile naming itself uses its own keys (botocore) */
    if (!strcmp(src, name))
      source = prof_keys(ch, name);
    else if ((rc = resolve_profile(ch, src, depth + 1, &source, err)))
      return rc;
    if (!source)
      return tw_err_field(err, TW_E_AUTH, "profile",
                          "aws profile %s: source_profile %s has no "
                          "credentials",
                          name, src);
  } else {
    struct chain sub = *ch;
    if (!strcmp(csrc, "Environment"))
      source = env_node();
    else if (!strcmp(csrc, "Ec2InstanceMetadata"))
      source = imds_node(&sub);
    else if (!strcmp(csrc, "EcsContainer"))
      source = container_node(&sub);
    else
      return tw_err_field(err, TW_E_AUTH, "profile",
                          "aws profile %s: credential_source %s: expected "
                          "Environment, Ec2InstanceMetadata or EcsContainer",
                          name, csrc);
    if (!source)
      return tw_err_field(err, TW_E_AUTH, "profile",
                          "aws profile %s: credential_source %s has no "
                          "credentials",
                          name, csrc);
  }
  if (!prof_get(ch, name, "role_session_name", sess, sizeof sess))
    *sess = '\0';
  if (!prof_get(ch, name, "external_id", ext, sizeof ext))
    *ext = '\0';
  int64_t d = prof_get(ch, name, "duration_seconds", dur, sizeof dur)
                  ? strtoll(dur, NULL, 10)
                  : 0;
  *out = role_node(ch, K_ASSUME, arn, sess, ext, d);
  (*out)->source = source;
  return TW_OK;
}

static struct tw_aws_creds *profile_web(const struct chain *ch,
                                        const char *name) {
  char arn[512], file[1024], sess[128];
  if (!prof_get(ch, name, "web_identity_token_file", file, sizeof file) ||
      !prof_get(ch, name, "role_arn", arn, sizeof arn) || !*file || !*arn)
    return NULL;
  if (!prof_get(ch, name, "role_session_name", sess, sizeof sess))
    *sess = '\0';
  struct tw_aws_creds *c = role_node(ch, K_WEB, arn, sess, NULL, 0);
  c->token_file = tw_strdup(file);
  return c;
}

/* A profile's credentials: its role, its web identity, its keys. */
static enum tw_rc resolve_profile(const struct chain *ch, const char *name,
                                  int depth, struct tw_aws_creds **out,
                                  struct tw_err *err) {
  *out = NULL;
  if (depth > PROFILE_DEPTH_MAX)
    return tw_err_field(err, TW_E_AUTH, "profile",
                        "aws profile %s: source_profile chain longer than %d "
                        "(a loop?)",
                        name, PROFILE_DEPTH_MAX);
  if (!prof_exists(ch, name))
    return tw_err_field(err, TW_E_AUTH, "profile",
                        "aws profile %s: not in %s nor %s", name,
                        ch->credentials_path, ch->config_path);
  enum tw_rc rc = profile_role(ch, name, depth, out, err);
  if (rc || *out)
    return rc;
  if ((*out = profile_web(ch, name)))
    return TW_OK;
  *out = prof_keys(ch, name);
  return TW_OK;
}

static char *home_path(const char *rel) {
  const char *h = env("HOME");
  if (!h)
    return tw_strdup(rel);
  char *p = tw_malloc(strlen(h) + strlen(rel) + 2);
  sprintf(p, "%s/%s", h, rel);
  return p;
}

enum tw_rc tw_aws_creds_assume(struct tw_aws_creds *base,
                               const struct tw_aws_creds_opts *o,
                               struct tw_aws_creds **out, struct tw_err *err) {
  struct chain ch = {.o = o};
  if (!o->role_arn) {
    tw_aws_creds_free(base);
    return tw_err_set(err, TW_E_INVALID, "aws: assume what role?");
  }
  *out = role_node(&ch, K_ASSUME, o->role_arn, o->role_session_name,
                   o->external_id, o->duration_s);
  (*out)->source = base;
  return TW_OK;
}

enum tw_rc tw_aws_creds_new(const struct tw_aws_creds_opts *o,
                            struct tw_aws_creds **out, struct tw_err *err) {
  struct chain ch = {.o = o};
  *out = NULL;
  const char *cf = o->config_file ? o->config_file : env("AWS_CONFIG_FILE");
  const char *sf = o->credentials_file ? o->credentials_file
                                       : env("AWS_SHARED_CREDENTIALS_FILE");
  ch.config_path = cf ? tw_strdup(cf) : home_path(".aws/config");
  ch.credentials_path = sf ? tw_strdup(sf) : home_path(".aws/credentials");
  ch.config = read_file(ch.config_path);
  ch.credentials = read_file(ch.credentials_path);
  const char *profile = o->profile ? o->profile : env("AWS_PROFILE");
  bool named = profile != NULL;
  if (!profile)
    profile = "default";

  struct tw_aws_creds *c = NULL;
  enum tw_rc rc = TW_OK;
  /* 1. environment, unless the config names the profile */
  if (!o->profile)
    c = env_node();
  /* 2. the profile's role */
  if (!c && prof_exists(&ch, profile))
    rc = profile_role(&ch, profile, 0, &c, err);
  /* 3. web identity: the profile's, then the environment's */
  if (!c && !rc)
    c = profile_web(&ch, profile);
  if (!c && !rc && env("AWS_WEB_IDENTITY_TOKEN_FILE") && env("AWS_ROLE_ARN")) {
    c = role_node(&ch, K_WEB, env("AWS_ROLE_ARN"), env("AWS_ROLE_SESSION_NAME"),
                  NULL, 0);
    c->token_file = tw_strdup(env("AWS_WEB_IDENTITY_TOKEN_FILE"));
  }
  /* 4. the files' keys */
  if (!c && !rc)
    c = prof_keys(&ch, profile);
  if (!c && !rc && named && !prof_exists(&ch, profile))
    rc = tw_err_field(err, TW_E_AUTH, "profile",
                      "aws profile %s: not in %s nor %s", profile,
                      ch.credentials_path, ch.config_path);
  /* 5. the container, 6. the instance */
  if (!c && !rc)
    c = container_node(&ch);
  if (!c && !rc)
    c = imds_node(&ch);
  if (!c && !rc)
    rc = tw_err_set(err, TW_E_AUTH,
                    "aws: no credentials (environment, profile %s in %s and "
                    "%s, web identity, container; instance metadata "
                    "disabled)",
                    profile, ch.credentials_path, ch.config_path);
  /* the config's role_arn: assumed with whatever was found */
  if (!rc && o->role_arn) {
    struct tw_aws_creds *r =
        role_node(&ch, K_ASSUME, o->role_arn, o->role_session_name,
                  o->external_id, o->duration_s);
    r->source = c;
    c = r;
  }
  if (ch.credentials)
    OPENSSL_cleanse(ch.credentials, strlen(ch.credentials));
  if (ch.config)
    OPENSSL_cleanse(ch.config, strlen(ch.config));
  free(ch.config);
  free(ch.credentials);
  free(ch.config_path);
  free(ch.credentials_path);
  if (rc) {
    tw_aws_creds_free(c);
    return rc;
  }
  *out = c;
  return TW_OK;
}
