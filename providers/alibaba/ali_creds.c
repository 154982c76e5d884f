/* ali_creds.c - the Alibaba Cloud credential chain (ali_creds.h). */
#include "providers/alibaba/ali_creds.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "providers/alibaba/ali_sign.h"
#include "providers/http.h"

#define ADVISORY_MS (15 * 60 * 1000LL)

enum kind { K_AK = 1, K_STS, K_RAM, K_ASSUME };
static const char *const kind_names[] = {[K_AK] = "access-key",
                                         [K_STS] = "sts-token",
                                         [K_RAM] = "ram-role",
                                         [K_ASSUME] = "assume-role"};

struct tw_ali_creds {
  enum kind kind;
  struct tw_clock *clock;
  struct tw_http *http;
  char *ca_file;
  char *ram_role, *metadata;      /* K_RAM */
  char *role_arn, *session, *sts; /* K_ASSUME */
  int64_t duration_s;
  struct tw_ali_creds *source;
  pthread_mutex_t mu;
  bool have;
  struct tw_ali_key cur;
  int64_t fetched_ms;
};

void tw_ali_key_wipe(struct tw_ali_key *k) { OPENSSL_cleanse(k, sizeof *k); }

static bool set(char *dst, size_t sz, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n >= sz)
    return false;
  memcpy(dst, s ? s : "", n + 1);
  return true;
}

static struct tw_ali_creds *node(enum kind k,
                                 const struct tw_ali_creds_opts *o) {
  struct tw_ali_creds *c = tw_calloc(1, sizeof *c);
  c->kind = k;
  c->clock = o->clock ? o->clock : tw_clock_real();
  c->http = o->http;
  c->ca_file = o->ca_file ? tw_strdup(o->ca_file) : NULL;
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

void tw_ali_creds_free(struct tw_ali_creds *c) {
  if (!c)
    return;
  tw_ali_creds_free(c->source);
  free(c->ca_file);
  free(c->ram_role);
  free(c->metadata);
  free(c->role_arn);
  free(c->session);
  free(c->sts);
  tw_ali_key_wipe(&c->cur);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

const char *tw_ali_creds_source(const struct tw_ali_creds *c) {
  return kind_names[c->kind];
}

void tw_ali_creds_invalidate(struct tw_ali_creds *c) {
  if (!c || c->kind == K_AK || c->kind == K_STS)
    return;
  pthread_mutex_lock(&c->mu);
  c->have = false;
  pthread_mutex_unlock(&c->mu);
  tw_ali_creds_invalidate(c->source);
}

/* {AccessKeyId, AccessKeySecret, SecurityToken, Expiration} of obj. */
static enum tw_rc read_key(json_t *obj, const char *what,
                           struct tw_ali_key *out, struct tw_err *err) {
  const char *id = json_string_value(json_object_get(obj, "AccessKeyId"));
  const char *sk = json_string_value(json_object_get(obj, "AccessKeySecret"));
  const char *tok = json_string_value(json_object_get(obj, "SecurityToken"));
  const char *exp = json_string_value(json_object_get(obj, "Expiration"));
  memset(out, 0, sizeof *out);
  if (!id || !sk || !*id || !*sk || !set(out->id, sizeof out->id, id) ||
      !set(out->secret, sizeof out->secret, sk) ||
      !set(out->token, sizeof out->token, tok) ||
      (exp && tw_time_parse_rfc3339(exp, &out->expires_ms) != 0)) {
    tw_ali_key_wipe(out);
    return tw_err_set(err, TW_E_AUTH, "alibaba %s: no complete credentials",
                      what);
  }
  return TW_OK;
}

static enum tw_rc get(struct tw_ali_creds *c, const char *method,
                      const char *url, const char *body,
                      const struct tw_http_header *h, size_t nh,
                      struct tw_http_response *resp, struct tw_err *err) {
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = nh,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = 5000,
                                .connect_timeout_ms = 2000,
                                .max_attempts = 2,
                                .max_body_bytes = 64 * 1024,
                                .ca_file = c->ca_file};
  return tw_http_do(c->http, &req, resp, err);
}

static enum tw_rc fetch_ram(struct tw_ali_creds *c, struct tw_ali_key *out,
                            struct tw_err *err) {
  char url[1024];
  struct tw_http_response r;
  enum tw_rc rc = TW_OK;
  tw_http_response_init(&r);
  if (!c->ram_role) {
    snprintf(url, sizeof url, "%s/latest/meta-data/ram/security-credentials/",
             c->metadata);
    rc = get(c, "GET", url, NULL, NULL, 0, &r, err);
    size_t n = rc == TW_OK && r.status == 200 && r.body.data
                   ? strcspn(r.body.data, "\r\n")
                   : 0;
    if (rc == TW_OK && (!n || n > 64))
      rc = tw_err_set(err, TW_E_AUTH,
                      "alibaba ram role: the metadata service at %s names "
                      "no role (HTTP %ld)",
                      url, r.status);
    if (rc == TW_OK)
      c->ram_role = tw_strndup(r.body.data, n);
    tw_http_response_release(&r);
    if (rc)
      return rc;
    tw_http_response_init(&r);
  }
  for (const char *p = c->ram_role; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
      return tw_err_set(err, TW_E_AUTH, "alibaba ram role: a name with '%c'",
                        *p);
  snprintf(url, sizeof url, "%s/latest/meta-data/ram/security-credentials/%s",
           c->metadata, c->ram_role);
  rc = get(c, "GET", url, NULL, NULL, 0, &r, err);
  if (rc == TW_OK && r.status != 200)
    rc = tw_err_set(err, TW_E_AUTH, "alibaba ram role: %s answered HTTP %ld",
                    url, r.status);
  json_t *j = rc == TW_OK ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
  const char *code = json_string_value(json_object_get(j, "Code"));
  if (rc == TW_OK && code && strcmp(code, "Success"))
    rc = tw_err_set(err, TW_E_AUTH, "alibaba ram role: Code %.64s", code);
  if (rc == TW_OK)
    rc = read_key(j, "ram role", out, err);
  json_decref(j);
  if (r.body.data)
    OPENSSL_cleanse(r.body.data, r.body.len);
  tw_http_response_release(&r);
  return rc;
}

static void enc(struct tw_buf *b, const char *s) {
  tw_ali_encode(b, s, strlen(s));
}

static enum tw_rc fetch_assume(struct tw_ali_creds *c, struct tw_ali_key *out,
                               struct tw_err *err) {
  struct tw_ali_key src;
  enum tw_rc rc = tw_ali_creds_get(c->source, &src, err);
  if (rc)
    return rc;
  char ts[32], non[40], dur[24];
  time_t t = (time_t)(tw_clock_now_ms(c->clock) / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  unsigned char rnd[16];
  if (RAND_bytes(rnd, sizeof rnd) != 1)
    memset(rnd, 0x5a, sizeof rnd);
  for (size_t i = 0; i < sizeof rnd; i++)
    snprintf(non + 2 * i, 3, "%02x", rnd[i]);
  snprintf(dur, sizeof dur, "%lld", (long long)c->duration_s);
  struct tw_ali_pair p[12] = {{"Action", "AssumeRole"},
                              {"Version", "2015-04-01"},
                              {"Format", "JSON"},
                              {"AccessKeyId", src.id},
                              {"SignatureMethod", "HMAC-SHA1"},
                              {"SignatureVersion", "1.0"},
                              {"SignatureNonce", non},
                              {"Timestamp", ts},
                              {"RoleArn", c->role_arn},
                              {"RoleSessionName", c->session},
                              {"DurationSeconds", dur}};
  size_t n = 11;
  if (*src.token)
    p[n++] = (struct tw_ali_pair){"SecurityToken", src.token};
  char sig[32];
  if ((rc = tw_ali_rpc_sign("POST", p, n, src.secret, sig, NULL, err))) {
    tw_ali_key_wipe(&src);
    return rc;
  }
  struct tw_buf body;
  tw_buf_init(&body);
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&body, '&');
    enc(&body, p[i].name);
    tw_buf_addc(&body, '=');
    enc(&body, p[i].value);
  }
  tw_buf_adds(&body, "&Signature=");
  enc(&body, sig);
  tw_ali_key_wipe(&src);
  const struct tw_http_header h[] = {
      {"Content-Type", "application/x-www-form-urlencoded"}};
  struct tw_http_response r;
  tw_http_response_init(&r);
  char url[1024];
  snprintf(url, sizeof url, "%s/", c->sts);
  rc = get(c, "POST", url, body.data, h, 1, &r, err);
  OPENSSL_cleanse(body.data, body.len);
  tw_buf_release(&body);
  json_t *j = rc == TW_OK ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
  if (rc == TW_OK && r.status != 200) {
    const char *code = json_string_value(json_object_get(j, "Code"));
    const char *msg = json_string_value(json_object_get(j, "Message"));
    tw_err_detail(err, code ? code : "HTTP");
    rc = tw_err_set(err, r.status >= 500 ? TW_E_RETRYABLE : TW_E_AUTH,
                    "alibaba sts AssumeRole: HTTP %ld %s: %s", r.status,
                    code ? code : "error", msg ? msg : "");
  }
  if (rc == TW_OK)
    rc =
        read_key(json_object_get(j, "Credentials"), "sts AssumeRole", out, err);
  json_decref(j);
  if (r.body.data)
    OPENSSL_cleanse(r.body.data, r.body.len);
  tw_http_response_release(&r);
  return rc;
}

enum tw_rc tw_ali_creds_get(struct tw_ali_creds *c, struct tw_ali_key *out,
                            struct tw_err *err) {
  pthread_mutex_lock(&c->mu);
  int64_t now = tw_clock_now_ms(c->clock);
  int64_t life = c->cur.expires_ms - c->fetched_ms;
  int64_t adv = life / 2 < ADVISORY_MS ? life / 2 : ADVISORY_MS;
  enum tw_rc rc = TW_OK;
  if (!c->have || (c->cur.expires_ms && now >= c->cur.expires_ms - adv)) {
    /* refreshed under the lock: the calls of one account wait for it,
     * which happens once per lifetime of the keys */
    struct tw_ali_key k;
    struct tw_err e = {0};
    rc = c->kind == K_RAM ? fetch_ram(c, &k, &e) : fetch_assume(c, &k, &e);
    if (rc == TW_OK) {
      c->cur = k;
      c->have = true;
      c->fetched_ms = now;
      tw_log_info("alibaba", "credentials fetched source=%s",
                  kind_names[c->kind]);
    } else if (c->have && now < c->cur.expires_ms - 60000) {
      tw_log_warn("alibaba", "credentials refresh failed source=%s err=\"%s\"",
                  kind_names[c->kind], e.msg);
      rc = TW_OK;
    } else if (err && err->rc == TW_OK) {
      *err = e;
    }
    tw_ali_key_wipe(&k);
  }
  if (rc == TW_OK)
    *out = c->cur;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

static const char *env(const char *n) {
  const char *v = getenv(n);
  return v && *v ? v : NULL;
}

enum tw_rc tw_ali_creds_new(const struct tw_ali_creds_opts *o,
                            struct tw_ali_creds **out, struct tw_err *err) {
  *out = NULL;
  const char *ak = o->access_key, *sk = o->secret_key, *tok = o->security_token;
  if (!ak && !sk) {
    ak = env("ALIBABA_CLOUD_ACCESS_KEY_ID");
    sk = env("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    tok = env("ALIBABA_CLOUD_SECURITY_TOKEN");
  }
  struct tw_ali_creds *c = NULL;
  if (ak && sk) {
    c = node(tok ? K_STS : K_AK, o);
    if (!set(c->cur.id, sizeof c->cur.id, ak) ||
        !set(c->cur.secret, sizeof c->cur.secret, sk) ||
        !set(c->cur.token, sizeof c->cur.token, tok)) {
      tw_ali_creds_free(c);
      return tw_err_field(err, TW_E_INVALID, "access_key_env",
                          "access_key: too long");
    }
    c->have = true;
  } else if (ak || sk) {
    return tw_err_field(err, TW_E_AUTH,
                        ak ? "secret_key_env" : "access_key_env",
                        "alibaba: an AccessKey needs both its id and its "
                        "secret");
  } else {
    const char *role =
        o->ram_role ? o->ram_role : env("ALIBABA_CLOUD_ECS_METADATA");
    const char *dis = env("ALIBABA_CLOUD_ECS_METADATA_DISABLED");
    if (!role && dis && !strcasecmp(dis, "true"))
      return tw_err_set(err, TW_E_AUTH,
                        "alibaba: no credentials (no AccessKey in the config "
                        "or ALIBABA_CLOUD_ACCESS_KEY_ID, and the ECS metadata "
                        "service disabled)");
    c = node(K_RAM, o);
    c->ram_role = role ? tw_strdup(role) : NULL;
    c->metadata = tw_strdup(o->metadata_endpoint ? o->metadata_endpoint
                                                 : "http://100.100.100.200");
  }
  const char *arn = o->role_arn ? o->role_arn : env("ALIBABA_CLOUD_ROLE_ARN");
  if (arn) {
    struct tw_ali_creds *r = node(K_ASSUME, o);
    r->source = c;
    r->role_arn = tw_strdup(arn);
    const char *sess = o->role_session_name
                           ? o->role_session_name
                           : env("ALIBABA_CLOUD_ROLE_SESSION_NAME");
    r->session = tw_strdup(sess ? sess : "tradewind");
    r->duration_s = o->duration_s > 0 ? o->duration_s : 3600;
    r->sts = tw_strdup(o->sts_endpoint ? o->sts_endpoint
                                       : "https://sts.aliyuncs.com");
    size_t n = strlen(r->sts);
    while (n && r->sts[n - 1] == '/')
      r->sts[--n] = '\0';
    c = r;
  }
  *out = c;
  return TW_OK;
}
