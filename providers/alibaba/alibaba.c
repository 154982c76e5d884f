/* alibaba.c - the Alibaba Cloud ECS adapter: the RPC API (version
 * 2014-05-26) signed with the legacy HMAC-SHA1 form or ACS3-HMAC-SHA256
 * (ali_sign.h), JSON answers read by ecs_json.c, spot reclaim notices from
 * CloudMonitor (version 2019-01-01).
 *
 * Translation only: retries, backoff and jitter are the http helper's
 * (providers/http.h), which calls ali_sign_attempt() before every attempt
 * so each attempt carries a fresh timestamp and nonce (ECS refuses a
 * nonce it has seen: a retry must never repeat one).  Prices arrive in
 * CNY (USD on the international site) and are reported as they are: the
 * catalog converts them with its rate table (docs/catalog.md).  Config
 * keys, the error table and the event mapping: docs/alibaba.md. */
#include "providers/alibaba/alibaba.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/base/units.h"
#include "providers/adapter_util.h"
#include "providers/alibaba/ali_creds.h"
#include "providers/alibaba/ali_sign.h"
#include "providers/alibaba/ecs_json.h"
#include "providers/http.h"

#define ALI_ECS_VERSION "2014-05-26"
#define ALI_CMS_VERSION "2019-01-01"
#define ALI_FORM "application/x-www-form-urlencoded"
/* ECS raises the reclaim event five minutes before it releases a spot
 * instance. */
#define ALI_NOTICE_LEAD_MS 300000
/* Pay-as-you-go ECS is billed by the second. */
#define ALI_BILLING_GRANULARITY_S 1
/* DescribeInstanceTypes takes at most 10 InstanceTypes.N. */
#define ALI_TYPES_PER_CALL 10

struct ali_vswitch {
  char zone[TW_MODEL_NAME_MAX]; /* "" = default */
  char *id;
};

struct ali_ctx {
  atomic_ulong nonce_seq; /* nonce()'s fallback */
  char *endpoint;         /* may hold "{region}" */
  char *cms_endpoint;     /* CloudMonitor; NULL: no reclaim times */
  char **regions;
  size_t n_regions;
  struct tw_ali_creds *creds; /* ali_creds.h; never logged */
  bool acs3;                  /* sign ACS3-HMAC-SHA256, else HMAC-SHA1 */
  long timeout_ms, connect_timeout_ms;
  char *ca_file;
  struct tw_adapter_images images;
  struct ali_vswitch *vswitches;
  size_t n_vswitches;
  int64_t disk_gb;                     /* SystemDisk.Size; 0 the image's */
  char *disk_category, *ram_role_name; /* SystemDisk.Category, RamRoleName */
  char *security_group_id, *key_pair_name;
  char **types; /* instance_types: only these are offered; NULL all */
  size_t n_types;
  int64_t spot_duration_h;
  char *spot_behavior;
  int64_t spot_window_ms;
  int64_t max_pages;
  int64_t page_size;
  struct tw_http *http;

  /* Mutable after init. */
  atomic_llong skew_ms;        /* server clock minus ours, learnt from Date */
  struct tw_region_memo where; /* the region of each known instance */
};

/* ---- config ------------------------------------------------------------- */

static const char *const ali_keys[] = {"endpoint",
                                       "cms_endpoint",
                                       "region",
                                       "regions",
                                       "access_key_env",
                                       "access_key_file",
                                       "secret_key_env",
                                       "secret_key_file",
                                       "access_key",
                                       "secret_key",
                                       "security_token_env",
                                       "security_token_file",
                                       "ram_role",
                                       "metadata_endpoint",
                                       "role_arn",
                                       "role_session_name",
                                       "role_duration_s",
                                       "sts_endpoint",
                                       "signature",
                                       "timeout_ms",
                                       "connect_timeout_ms",
                                       "max_attempts",
                                       "backoff_base_ms",
                                       "backoff_cap_ms",
                                       "ca_file",
                                       "image",
                                       "images",
                                       "vswitch_id",
                                       "vswitch_ids",
                                       "security_group_id",
                                       "key_pair_name",
                                       "system_disk_size_gb",
                                       "system_disk_category",
                                       "ram_role_name",
                                       "instance_types",
                                       "cny_usd_rate",
                                       "cny_usd_rate_date",
                                       "spot_duration_h",
                                       "spot_interruption_behavior",
                                       "spot_history_s",
                                       "max_pages",
                                       "page_size",
                                       NULL};

static void ali_free(struct tw_provider *p) {
  struct ali_ctx *a = p->ctx;
  if (!a)
    return;
  tw_http_free(a->http);
  free(a->endpoint);
  free(a->cms_endpoint);
  tw_provider_strv_free(a->regions, a->n_regions);
  /* wiped, not just freed (ali_creds.c) */
  tw_ali_creds_free(a->creds);
  free(a->ca_file);
  tw_adapter_images_release(&a->images);
  for (size_t i = 0; i < a->n_vswitches; i++)
    free(a->vswitches[i].id);
  free(a->vswitches);
  free(a->disk_category);
  free(a->ram_role_name);
  free(a->security_group_id);
  free(a->key_pair_name);
  tw_provider_strv_free(a->types, a->n_types);
  free(a->spot_behavior);
  tw_region_memo_release(&a->where);
  free(a);
  p->ctx = NULL;
}

static bool url_ok(const char *u) {
  return !strncmp(u, "http://", 7) || !strncmp(u, "https://", 8);
}

/* name: scalar for every key, or {key: value} per region or zone. */
static enum tw_rc read_per_key(const struct tw_node *cfg, const char *one,
                               const char *many,
                               char (**keys)[TW_MODEL_NAME_MAX], char ***vals,
                               size_t *n, struct tw_err *err) {
  const char *v;
  enum tw_rc rc = tw_provider_cfg_str(cfg, one, NULL, &v, err);
  if (rc)
    return rc;
  const struct tw_node *m = tw_node_get(cfg, many);
  if (m && m->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, many,
                        "%s: expected a mapping of names to ids", many);
  size_t cap = (m ? m->n : 0) + 1;
  *keys = tw_calloc(cap, sizeof **keys);
  *vals = tw_calloc(cap, sizeof **vals);
  *n = 0;
  if (v) {
    (*vals)[(*n)++] = tw_strdup(v);
  }
  for (size_t i = 0; m && i < m->n; i++) {
    if (m->items[i]->kind != TW_NODE_SCALAR || !*m->items[i]->str ||
        strlen(m->keys[i]) >= TW_MODEL_NAME_MAX)
      return tw_err_field(err, TW_E_INVALID, many, "%s.%s: expected an id",
                          many, m->keys[i]);
    TW_SET((*keys)[*n], m->keys[i]);
    (*vals)[(*n)++] = tw_strdup(m->items[i]->str);
  }
  return TW_OK;
}

/* The config's keys when it names them (access_key_*, secret_key_*,
 * security_token_*), else the SDK's chain (ali_creds.h). */
static enum tw_rc init_creds(struct tw_provider *p, struct ali_ctx *a,
                             const struct tw_node *cfg, struct tw_err *err) {
  static const char *const named[] = {
      "access_key_env", "access_key_file", "access_key_secret",
      "secret_key_env", "secret_key_file", "secret_key_secret",
      "access_key",     "secret_key",      NULL};
  bool given = false;
  for (const char *const *k = named; *k; k++)
    given = given || tw_node_get(cfg, *k) != NULL;
  char *ak = NULL, *sk = NULL, *tok = NULL;
  enum tw_rc rc = TW_OK;
  if (given && ((rc = tw_provider_cfg_secret(p, cfg, "access_key",
                                             "ALIBABA_CLOUD_ACCESS_KEY_ID",
                                             true, &ak, err)) ||
                (rc = tw_provider_cfg_secret(p, cfg, "secret_key",
                                             "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                                             true, &sk, err)) ||
                (rc = tw_provider_cfg_secret(p, cfg, "security_token",
                                             "ALIBABA_CLOUD_SECURITY_TOKEN",
                                             false, &tok, err))))
    goto out;
  struct tw_ali_creds_opts o = {.access_key = ak,
                                .secret_key = sk,
                                .security_token = tok,
                                .ca_file = a->ca_file,
                                .clock = p->clock,
                                .http = a->http};
  if ((rc = tw_provider_cfg_str(cfg, "ram_role", NULL, &o.ram_role, err)) ||
      (rc = tw_provider_cfg_str(cfg, "metadata_endpoint", NULL,
                                &o.metadata_endpoint, err)) ||
      (rc = tw_provider_cfg_str(cfg, "role_arn", NULL, &o.role_arn, err)) ||
      (rc = tw_provider_cfg_str(cfg, "role_session_name", NULL,
                                &o.role_session_name, err)) ||
      (rc = tw_provider_cfg_str(cfg, "sts_endpoint", NULL, &o.sts_endpoint,
                                err)) ||
      (rc = tw_provider_cfg_int(cfg, "role_duration_s", 900, 43200, 3600,
                                &o.duration_s, err)))
    goto out;
  if ((rc = tw_ali_creds_new(&o, &a->creds, err)))
    goto out;
  tw_log_info("alibaba", "account=%s credentials=%s", p->account,
              tw_ali_creds_source(a->creds));
out:
  free(ak);
  if (sk)
    OPENSSL_cleanse(sk, strlen(sk));
  if (tok)
    OPENSSL_cleanse(tok, strlen(tok));
  free(sk);
  free(tok);
  return rc;
}

static enum tw_rc ali_init(struct tw_provider *p, const struct tw_node *cfg,
                           struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_check_keys(cfg, ali_keys, err);
  if (rc)
    return rc;
  struct ali_ctx *a = tw_calloc(1, sizeof *a);
  tw_region_memo_init(&a->where);
  atomic_init(&a->skew_ms, 0);
  p->ctx = a;

  int64_t v;
  const char *s;
  if ((rc = tw_provider_cfg_strdup(cfg, "endpoint",
                                   "https://ecs.{region}.aliyuncs.com",
                                   &a->endpoint, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "cms_endpoint",
                                   "https://metrics.{region}.aliyuncs.com",
                                   &a->cms_endpoint, err)))
    return rc;
  if (!url_ok(a->endpoint))
    return tw_err_field(err, TW_E_INVALID, "endpoint",
                        "endpoint: expected an http:// or https:// URL");
  if (!*a->cms_endpoint) { /* "": reclaim notices without their time */
    free(a->cms_endpoint);
    a->cms_endpoint = NULL;
  } else if (!url_ok(a->cms_endpoint)) {
    return tw_err_field(err, TW_E_INVALID, "cms_endpoint",
                        "cms_endpoint: expected an http:// or https:// URL "
                        "or \"\"");
  }
  if ((rc = tw_provider_cfg_regions(cfg, &a->regions, &a->n_regions, err)))
    return rc;
  for (size_t i = 0; i < a->n_regions; i++)
    if (strlen(a->regions[i]) >= TW_MODEL_NAME_MAX)
      return tw_err_field(err, TW_E_INVALID, "regions",
                          "regions[%zu]: too long", i);
  a->where.regions = a->regions;
  a->where.n_regions = a->n_regions;

  if ((rc = tw_provider_cfg_str(cfg, "signature", "hmac-sha1", &s, err)))
    return rc;
  if (!strcmp(s, "acs3"))
    a->acs3 = true;
  else if (strcmp(s, "hmac-sha1"))
    return tw_err_field(err, TW_E_INVALID, "signature",
                        "signature: expected hmac-sha1 or acs3, got \"%s\"", s);

  /* The adapter once converted CNY at a rate of its own; the catalog's
   * rate table is the one source now.  A config still giving one is told
   * where the rate went rather than silently ignored. */
  static const char *const gone[] = {"cny_usd_rate", "cny_usd_rate_date"};
  for (size_t g = 0; g < 2; g++)
    if (tw_node_get(cfg, gone[g]))
      return tw_err_field(err, TW_E_INVALID, gone[g],
                          "%s: no longer read; prices are reported in CNY "
                          "and the catalog converts them with its rate "
                          "table (catalog.rates, configs/catalog/rates.csv)",
                          gone[g]);

  /* Retries and timeouts of every call (providers/http.h). */
  static const struct tw_provider_http_limits http_limits =
      TW_PROVIDER_HTTP_CLOUD;
  struct tw_http_opts ho = {.clock = p->clock};
  if ((rc = tw_provider_cfg_http(cfg, &http_limits, &a->timeout_ms,
                                 &a->connect_timeout_ms, &ho, err)) ||
      (rc = tw_provider_cfg_int(cfg, "spot_history_s", 60, 30 * 86400, 3600, &v,
                                err)))
    return rc;
  a->spot_window_ms = v * 1000;
  /* SpotDuration: hours of protection from reclaim after launch (ECS: 0
   * none, 1 the default, up to 6 where offered). */
  if ((rc = tw_provider_cfg_int(cfg, "spot_duration_h", 0, 6, 1,
                                &a->spot_duration_h, err)) ||
      (rc = tw_provider_cfg_int(cfg, "max_pages", 1, 100000, 1000,
                                &a->max_pages, err)) ||
      (rc = tw_provider_cfg_int(cfg, "page_size", 1, 100, 100, &a->page_size,
                                err)))
    return rc;
  if ((rc = tw_provider_cfg_strdup(cfg, "spot_interruption_behavior",
                                   "Terminate", &a->spot_behavior, err)))
    return rc;
  if (strcmp(a->spot_behavior, "Terminate") && strcmp(a->spot_behavior, "Stop"))
    return tw_err_field(err, TW_E_INVALID, "spot_interruption_behavior",
                        "spot_interruption_behavior: expected Terminate or "
                        "Stop");
  if ((rc = tw_provider_cfg_strdup(cfg, "ca_file", NULL, &a->ca_file, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "security_group_id", NULL,
                                   &a->security_group_id, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "key_pair_name", NULL,
                                   &a->key_pair_name, err)) ||
      (rc = tw_provider_cfg_list(cfg, "instance_types", &a->types, &a->n_types,
                                 err)))
    return rc;

  char(*keys)[TW_MODEL_NAME_MAX] = NULL;
  char **vals = NULL;
  size_t nv = 0;
  /* image: every region's; images: {region: image} or {region:
   * {x86_64: image, arm64: image}}, region "*" every region */
  if ((rc = tw_adapter_images_read(cfg, "an image id", &a->images, err)))
    return rc;
  if ((rc = tw_provider_cfg_int(cfg, "system_disk_size_gb", 0, 2048, 0,
                                &a->disk_gb, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "system_disk_category", NULL,
                                   &a->disk_category, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "ram_role_name", NULL,
                                   &a->ram_role_name, err)))
    return rc;
  rc = read_per_key(cfg, "vswitch_id", "vswitch_ids", &keys, &vals, &nv, err);
  a->vswitches = tw_calloc(nv + 1, sizeof *a->vswitches);
  for (size_t i = 0; i < nv; i++) {
    TW_SET(a->vswitches[i].zone, keys[i]);
    a->vswitches[i].id = vals[i];
  }
  a->n_vswitches = nv;
  free(keys);
  free(vals);
  if (rc)
    return rc;

  if ((rc = tw_http_new(&ho, &a->http, err)))
    return rc;
  return init_creds(p, a, cfg, err);
}

static const char *vswitch_for(const struct ali_ctx *a, const char *zone) {
  const char *def = NULL;
  for (size_t i = 0; i < a->n_vswitches; i++) {
    if (!strcmp(a->vswitches[i].zone, zone))
      return a->vswitches[i].id;
    if (!a->vswitches[i].zone[0])
      def = a->vswitches[i].id;
  }
  return def;
}

/* ---- request parameters ------------------------------------------------- */

struct ali_params {
  struct tw_ali_pair *v; /* names and values owned */
  size_t n;
};

static void ap_add(struct ali_params *p, const char *name, const char *value) {
  p->v = tw_realloc(p->v, (p->n + 1) * sizeof *p->v);
  p->v[p->n].name = tw_strdup(name);
  p->v[p->n].value = tw_strdup(value ? value : "");
  p->n++;
}

static void ap_addf(struct ali_params *p, const char *value, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));
static void ap_addf(struct ali_params *p, const char *value, const char *fmt,
                    ...) {
  char name[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  ap_add(p, name, value);
}

static void ap_release(struct ali_params *p) {
  for (size_t i = 0; i < p->n; i++) {
    free((char *)p->v[i].name);
    free((char *)p->v[i].value);
  }
  free(p->v);
  p->v = NULL;
  p->n = 0;
}

/* "name=value&..." percent-encoded as signed. */
static void ap_encode(struct tw_buf *b, const struct tw_ali_pair *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(b, '&');
    tw_ali_encode(b, v[i].name, strlen(v[i].name));
    tw_buf_addc(b, '=');
    tw_ali_encode(b, v[i].value, strlen(v[i].value));
  }
}

/* ---- signed calls ------------------------------------------------------- */

static void nonce(struct ali_ctx *a, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char r[16];
  if (RAND_bytes(r, sizeof r) != 1) {
    /* Uniqueness is what matters, not secrecy: fall back on time and the
     * adapter's own counter. */
    unsigned long long t = (unsigned long long)tw_mono_us();
    unsigned long k = atomic_fetch_add(&a->nonce_seq, 1);
    memcpy(r, &t, 8);
    memcpy(r + 8, &k, sizeof k < 8 ? sizeof k : 8);
  }
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hex[r[i] >> 4];
    out[2 * i + 1] = hex[r[i] & 15];
  }
  out[32] = '\0';
}

struct ali_req {
  struct tw_provider *p;
  struct ali_ctx *a;
  const char *action;
  const char *version;
  const struct ali_params *params; /* the action's own */
  char host[256];
  char url[4096];
  /* The request the http helper sends.  The legacy form carries its
   * timestamp, nonce and signature in the body, so the prepare hook
   * rebuilds body (and points hreq at it) before every attempt; the
   * helper reads the body only after the hook has run. */
  struct tw_http_request hreq;
  struct tw_buf body;
};

/* Splits the endpoint (its {region} replaced) into URL and host. */
static enum tw_rc endpoint_for(struct ali_req *r, const char *tmpl,
                               const char *region, struct tw_err *err) {
  struct tw_buf u;
  tw_buf_init(&u);
  const char *e = tmpl, *at;
  while ((at = strstr(e, "{region}"))) {
    tw_buf_add(&u, e, (size_t)(at - e));
    tw_buf_adds(&u, region);
    e = at + strlen("{region}");
  }
  tw_buf_adds(&u, e);
  const char *hs = strstr(u.data, "://") + 3;
  size_t hl = strcspn(hs, "/?#");
  enum tw_rc rc = TW_OK;
  if (hl == 0 || hl >= sizeof r->host || u.len + 2 >= 1024) {
    rc = tw_err_set(err, TW_E_INVALID, "alibaba: endpoint %s: malformed", tmpl);
  } else {
    memcpy(r->host, hs, hl);
    r->host[hl] = '\0';
    /* RPC APIs are served at "/" of the host. */
    snprintf(r->url, sizeof r->url, "%.*s/", (int)(hs + hl - u.data), u.data);
  }
  tw_buf_release(&u);
  return rc;
}

/* The http helper's prepare hook: sign this attempt with a fresh time and
 * nonce. */
static enum tw_rc ali_sign_attempt(void *vctx, struct tw_http_attempt *att,
                                   struct tw_err *err) {
  struct ali_req *r = vctx;
  struct ali_ctx *a = r->a;
  struct tw_ali_key key;
  enum tw_rc krc = tw_ali_creds_get(a->creds, &key, err);
  if (krc)
    return krc;
  const char *token = *key.token ? key.token : NULL;
  char ts[32], non[33];
  tw_adapter_iso_time(tw_clock_now_ms(r->p->clock) + atomic_load(&a->skew_ms),
                      ts);
  nonce(a, non);
  if (!a->acs3) {
    struct ali_params all = {0};
    ap_add(&all, "Action", r->action);
    ap_add(&all, "Version", r->version);
    ap_add(&all, "Format", "JSON");
    ap_add(&all, "AccessKeyId", key.id);
    if (token)
      ap_add(&all, "SecurityToken", token);
    ap_add(&all, "SignatureMethod", "HMAC-SHA1");
    ap_add(&all, "SignatureVersion", "1.0");
    ap_add(&all, "SignatureNonce", non);
    ap_add(&all, "Timestamp", ts);
    for (size_t i = 0; i < r->params->n; i++)
      ap_add(&all, r->params->v[i].name, r->params->v[i].value);
    char sig[32];
    enum tw_rc rc =
        tw_ali_rpc_sign("POST", all.v, all.n, key.secret, sig, NULL, err);
    if (rc == TW_OK) {
      ap_add(&all, "Signature", sig);
      tw_buf_reset(&r->body);
      ap_encode(&r->body, all.v, all.n);
      r->hreq.body = r->body.data;
      r->hreq.body_len = r->body.len;
    }
    ap_release(&all);
    tw_ali_key_wipe(&key);
    return rc;
  }
  char hash[65];
  tw_ali_sha256_hex("", 0, hash);
  struct tw_ali_pair h[7] = {{"host", r->host},
                             {"x-acs-action", r->action},
                             {"x-acs-version", r->version},
                             {"x-acs-date", ts},
                             {"x-acs-signature-nonce", non},
                             {"x-acs-content-sha256", hash}};
  size_t nh = 6;
  if (token)
    h[nh++] = (struct tw_ali_pair){"x-acs-security-token", token};
  struct tw_ali_acs3_request sr = {.method = "POST",
                                   .path = "/",
                                   .query = r->params->v,
                                   .n_query = r->params->n,
                                   .headers = h,
                                   .n_headers = nh,
                                   .payload_hash = hash};
  struct tw_ali_acs3_result res;
  enum tw_rc rc = tw_ali_acs3_sign(&sr, key.secret, &res, err);
  if (rc == TW_OK) {
    char *authz =
        tw_asprintf("%s Credential=%s,SignedHeaders=%s,Signature=%s",
                    TW_ALI_ACS3, key.id, res.signed_headers, res.signature);
    for (size_t i = 1; i < nh; i++)
      tw_http_attempt_add_header(att, h[i].name, h[i].value);
    tw_http_attempt_add_header(att, "Authorization", authz);
    OPENSSL_cleanse(authz, strlen(authz));
    free(authz);
  }
  tw_ali_acs3_result_release(&res);
  tw_ali_key_wipe(&key);
  return rc;
}

/* The http helper retries 429 and 5xx; some ECS errors with those statuses
 * are not worth another attempt. */
static bool ali_should_retry(void *ctx, long status,
                             const struct tw_buf *body) {
  struct tw_ecs_error e;
  if (body && tw_ecs_parse_error(body->data, body->len, &e))
    return tw_ecs_error_class(e.code, status) == TW_E_RETRYABLE;
  return true;
}

/* Calls action (of API version) at the endpoint tmpl in region with the
 * parameters params; on success *out holds the answer's body. */
static enum tw_rc ali_call(struct tw_provider *p, const char *tmpl,
                           const char *region, const char *action,
                           const char *version, const struct ali_params *params,
                           struct tw_buf *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  struct ali_req *r = tw_calloc(1, sizeof *r);
  r->p = p;
  r->a = a;
  r->action = action;
  r->version = version;
  r->params = params;
  tw_buf_init(&r->body);
  enum tw_rc rc = endpoint_for(r, tmpl, region, err);
  if (rc) {
    free(r);
    return rc;
  }
  if (a->acs3 && params->n) {
    /* ACS3 carries the parameters in the query, as the SDK does. */
    struct tw_buf q;
    tw_buf_init(&q);
    tw_buf_adds(&q, r->url);
    tw_buf_addc(&q, '?');
    ap_encode(&q, params->v, params->n);
    if (q.len >= sizeof r->url)
      rc = tw_err_set(err, TW_E_TOOBIG, "alibaba %s: request too long", action);
    else
      memcpy(r->url, q.data, q.len + 1);
    tw_buf_release(&q);
    if (rc) {
      free(r);
      return rc;
    }
  }
  const struct tw_http_header form[] = {{"Host", r->host},
                                        {"Content-Type", ALI_FORM}};
  r->hreq =
      (struct tw_http_request){.method = "POST",
                               .url = r->url,
                               .headers = form,
                               .n_headers = a->acs3 ? 1 : 2,
                               .timeout_ms = a->timeout_ms,
                               .connect_timeout_ms = a->connect_timeout_ms,
                               .max_body_bytes = TW_ECS_JSON_MAX_BYTES,
                               .ca_file = a->ca_file,
                               .prepare = ali_sign_attempt,
                               .prepare_ctx = r,
                               .should_retry = ali_should_retry};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  for (int round = 0;; round++) {
    struct tw_err e = {0};
    rc = tw_http_do(a->http, &r->hreq, &resp, &e);
    if (rc) {
      if (!*e.detail)
        tw_err_detail(&e, "transport");
      if (err && err->rc == TW_OK)
        *err = e;
      break;
    }
    if (resp.status == 200) {
      /* CloudMonitor reports some failures with a 200 and Success
       * false. */
      if (tw_ecs_parse_error(resp.body.data, resp.body.len,
                             &(struct tw_ecs_error){0})) {
        rc = tw_ecs_response_error(action, resp.status, resp.body.data,
                                   resp.body.len, err);
        break;
      }
      tw_buf_release(out);
      *out = resp.body;
      tw_buf_init(&resp.body);
      break;
    }
    rc = tw_ecs_response_error(action, resp.status, resp.body.data,
                               resp.body.len, &e);
    /* Our clock is off (or the server's is, as a fast-forwarded fake
     * cloud's): learn the offset from its Date and sign again once. */
    int64_t server_ms =
        tw_adapter_http_date_ms(tw_http_response_header(&resp, "Date"));
    if (round == 0 && server_ms > 0 &&
        !strcmp(e.detail, "InvalidTimeStamp.Expired")) {
      atomic_store(&a->skew_ms, server_ms - tw_clock_now_ms(p->clock));
      continue;
    }
    /* temporary keys expired early: new ones, signed again once */
    if (round == 0 && !strcmp(e.detail, "InvalidSecurityToken.Expired")) {
      tw_ali_creds_invalidate(a->creds);
      continue;
    }
    if (err && err->rc == TW_OK)
      *err = e;
    break;
  }
  if (!strcmp(action, "RunInstances"))
    rc = tw_adapter_refusal_settled(rc, resp.unanswered,
                                    "alibaba RunInstances", err);
  tw_http_response_release(&resp);
  tw_buf_release(&r->body);
  free(r);
  return rc;
}

static enum tw_rc ecs_call(struct tw_provider *p, const char *region,
                           const char *action, const struct ali_params *params,
                           struct tw_buf *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  return ali_call(p, a->endpoint, region, action, ALI_ECS_VERSION, params, out,
                  err);
}

/* ---- launch, describe, terminate ---------------------------------------- */

static enum tw_rc ali_launch(struct tw_provider *p, const struct tw_launch *req,
                             struct tw_instance *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  const struct tw_offer *o = req->offer;
  if (!tw_provider_strv_has(a->regions, a->n_regions, o->region))
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba launch: region %s is not configured for %s",
                      o->region, p->account);
  const char *image =
      req->image ? req->image
                 : tw_adapter_image_for(&a->images, o->region, o->arch);
  if (!image)
    return tw_err_field(err, TW_E_INVALID, "image",
                        "alibaba launch: no image for region %s (set image "
                        "or images.%s)",
                        o->region, o->region);
  struct ali_params f = {0};
  struct tw_buf body;
  tw_buf_init(&body);
  enum tw_rc rc = TW_OK;
  ap_add(&f, "RegionId", o->region);
  if (*o->zone)
    ap_add(&f, "ZoneId", o->zone);
  ap_add(&f, "ImageId", image);
  ap_add(&f, "InstanceType", o->instance_type);
  ap_add(&f, "InstanceChargeType", "PostPaid");
  ap_add(&f, "Amount", "1");
  ap_add(&f, "MinAmount", "1");
  /* The attempt's token: if a first call timed out after ECS accepted it,
   * the retry (here or in the http helper) returns the same instance
   * instead of buying a second one. */
  ap_add(&f, "ClientToken", req->client_token);
  if (o->market == TW_MARKET_SPOT) {
    char price[48], dur[8];
    if (req->max_price_uusd_per_hour > 0) {
      /* SpotPriceLimit is in the offer's currency per hour with three
       * decimals, at the rate the catalog priced the offer with; rounded
       * down so the limit never exceeds the caller's. */
      int64_t rate = TW_ECS_NANO; /* USD */
      if (*o->price_currency && strcmp(o->price_currency, "USD"))
        rate = o->fx_nusd_per_unit;
      if (rate <= 0) {
        rc = tw_err_field(err, TW_E_INVALID, "max_price",
                          "alibaba launch: offer %s is priced in %s without "
                          "a rate; the catalog converts it (catalog.rates)",
                          o->id, o->price_currency);
        goto out;
      }
      int64_t milli = tw_ecs_uusd_to_milli(req->max_price_uusd_per_hour, rate);
      if (milli <= 0) {
        rc = tw_err_field(err, TW_E_INVALID, "max_price",
                          "alibaba launch: a maximum price of %lld micro-USD "
                          "is below 0.001 CNY",
                          (long long)req->max_price_uusd_per_hour);
        goto out;
      }
      snprintf(price, sizeof price, "%lld.%03lld", (long long)(milli / 1000),
               (long long)(milli % 1000));
      ap_add(&f, "SpotStrategy", "SpotWithPriceLimit");
      ap_add(&f, "SpotPriceLimit", price);
    } else {
      ap_add(&f, "SpotStrategy", "SpotAsPriceGo");
    }
    snprintf(dur, sizeof dur, "%lld", (long long)a->spot_duration_h);
    ap_add(&f, "SpotDuration", dur);
    ap_add(&f, "SpotInterruptionBehavior", a->spot_behavior);
  } else {
    ap_add(&f, "SpotStrategy", "NoSpot");
  }
  const char *tags[][2] = {{TW_TAG_JOB, req->job_id},
                           {TW_TAG_ATTEMPT, req->attempt_id},
                           {TW_TAG_TENANT, req->tenant}};
  for (int i = 0; i < 3; i++) {
    ap_addf(&f, tags[i][0], "Tag.%d.Key", i + 1);
    ap_addf(&f, tags[i][1], "Tag.%d.Value", i + 1);
  }
  const char *vsw = vswitch_for(a, o->zone);
  if (vsw)
    ap_add(&f, "VSwitchId", vsw);
  if (a->security_group_id)
    ap_add(&f, "SecurityGroupId", a->security_group_id);
  if (a->key_pair_name)
    ap_add(&f, "KeyPairName", a->key_pair_name);
  /* the system disk: the job's, else the config's, else the image's */
  int64_t gb = req->disk_size_gb ? req->disk_size_gb : a->disk_gb;
  /* tier words as system disk categories */
  static const char *const tiers[4] = {"cloud_efficiency", "cloud_essd",
                                       "cloud_essd", "cloud_essd"};
  const char *cat = tw_adapter_disk_tier(
      tiers, req->disk_type ? req->disk_type : a->disk_category);
  if (gb) {
    char gbs[24];
    snprintf(gbs, sizeof gbs, "%lld", (long long)gb);
    ap_add(&f, "SystemDisk.Size", gbs);
  }
  if (cat)
    ap_add(&f, "SystemDisk.Category", cat);
  if (a->ram_role_name)
    ap_add(&f, "RamRoleName", a->ram_role_name);
  if (req->user_data) {
    size_t n = strlen(req->user_data);
    /* ECS takes at most 32 KiB of user data once encoded. */
    if (4 * ((n + 2) / 3) > 32768) {
      rc = tw_err_field(err, TW_E_INVALID, "user_data",
                        "alibaba launch: user data is %zu bytes, ECS takes "
                        "at most 32 KiB once base64-encoded",
                        n);
      goto out;
    }
    unsigned char *b64 = tw_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock(b64, (const unsigned char *)req->user_data, (int)n);
    ap_add(&f, "UserData", (const char *)b64);
    free(b64);
  }

  if ((rc = ecs_call(p, o->region, "RunInstances", &f, &body, err)))
    goto out;
  char **ids = NULL;
  size_t n_ids = 0;
  if ((rc = tw_ecs_parse_run(body.data, body.len, &ids, &n_ids, NULL, err)))
    goto out;
  if (n_ids != 1) {
    rc = tw_err_set(err, TW_E_INTERNAL,
                    "alibaba RunInstances: %zu instances in the answer, "
                    "asked 1",
                    n_ids);
  } else {
    /* RunInstances answers ids only: what was asked is what was bought,
     * and DescribeInstances tells the rest later. */
    tw_instance_init(out);
    TW_SET(out->id, ids[0]);
    TW_SET(out->region, o->region);
    TW_SET(out->zone, o->zone);
    TW_SET(out->instance_type, o->instance_type);
    out->arch = o->arch;
    out->market = o->market;
    out->state = TW_INST_PENDING;
    TW_SET(out->provider_state, "Pending");
    tw_region_memo_put(&a->where, out->id, o->region);
  }
  for (size_t i = 0; i < n_ids; i++)
    free(ids[i]);
  free(ids);
out:
  ap_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc describe_fn(struct tw_provider *p, const char *region,
                              const char *id, void *vout, struct tw_err *err) {
  struct tw_instance *out = vout;
  struct ali_params f = {0};
  struct tw_buf body, ids;
  tw_buf_init(&body);
  tw_buf_init(&ids);
  /* InstanceIds is a JSON array in a string. */
  tw_buf_adds(&ids, "[");
  tw_buf_json_str(&ids, id);
  tw_buf_adds(&ids, "]");
  ap_add(&f, "RegionId", region);
  ap_add(&f, "InstanceIds", ids.data);
  enum tw_rc rc = ecs_call(p, region, "DescribeInstances", &f, &body, err);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  if (rc == TW_OK)
    rc = tw_ecs_parse_instances(body.data, body.len, &l, NULL, err);
  if (rc == TW_OK && !tw_adapter_find_instance(&l, id, region, out)) {
    /* ECS forgets released instances: an empty answer. */
    tw_err_detail(err, "InvalidInstanceId.NotFound");
    rc = tw_err_set(err, TW_E_NOTFOUND, "alibaba: no instance %s in %s", id,
                    region);
  }
  tw_instance_list_release(&l);
  ap_release(&f);
  tw_buf_release(&body);
  tw_buf_release(&ids);
  return rc;
}

static enum tw_rc ali_describe(struct tw_provider *p, const char *id,
                               struct tw_instance *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  return tw_region_memo_run(&a->where, p, id, describe_fn, out, err);
}

static enum tw_rc terminate_fn(struct tw_provider *p, const char *region,
                               const char *id, void *arg, struct tw_err *err) {
  struct ali_params f = {0};
  struct tw_buf body;
  tw_buf_init(&body);
  ap_add(&f, "RegionId", region);
  ap_add(&f, "InstanceId.1", id);
  /* Force: release a running instance without stopping it first. */
  ap_add(&f, "Force", "true");
  enum tw_rc rc = ecs_call(p, region, "DeleteInstances", &f, &body, err);
  ap_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc ali_terminate(struct tw_provider *p, const char *id,
                                struct tw_err *err) {
  struct tw_err e = {0};
  struct ali_ctx *a = p->ctx;
  enum tw_rc rc = tw_region_memo_run(&a->where, p, id, terminate_fn, NULL, &e);
  /* Released already (or by a reclaim): that is what was asked. */
  if (rc == TW_E_NOTFOUND)
    return TW_OK;
  if (rc && err && err->rc == TW_OK)
    *err = e;
  return rc;
}

/* ---- paged listings ----------------------------------------------------- */

/* Tradewind's instances in one region, every page (a tag filter with a key
 * and no value matches every value). */
static enum tw_rc managed_in(struct tw_provider *p, const char *region,
                             struct tw_instance_list *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  char next[256] = "", size[24];
  enum tw_rc rc = TW_OK;
  struct tw_buf body;
  tw_buf_init(&body);
  snprintf(size, sizeof size, "%lld", (long long)a->page_size);
  int64_t pages = 0;
  do {
    if (++pages > a->max_pages) {
      rc = tw_err_set(err, TW_E_TOOBIG,
                      "alibaba DescribeInstances %s: more than %lld pages",
                      region, (long long)a->max_pages);
      break;
    }
    struct ali_params f = {0};
    ap_add(&f, "RegionId", region);
    ap_add(&f, "Tag.1.Key", TW_TAG_JOB);
    ap_add(&f, "MaxResults", size);
    if (next[0])
      ap_add(&f, "NextToken", next);
    struct tw_ecs_page pg;
    size_t first = out->n;
    rc = ecs_call(p, region, "DescribeInstances", &f, &body, err);
    ap_release(&f);
    if (rc || (rc = tw_ecs_parse_instances(body.data, body.len, out, &pg, err)))
      break;
    for (size_t i = first; i < out->n; i++) {
      TW_SET(out->items[i].region, region);
      tw_region_memo_put(&a->where, out->items[i].id, region);
    }
    if (pg.next_token[0] && !strcmp(pg.next_token, next)) {
      rc = tw_err_set(err, TW_E_INTERNAL,
                      "alibaba DescribeInstances %s: the same NextToken "
                      "twice",
                      region);
      break;
    }
    memcpy(next, pg.next_token, sizeof next);
  } while (next[0]);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc ali_list_managed(struct tw_provider *p,
                                   struct tw_instance_list *out,
                                   struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  for (size_t r = 0; r < a->n_regions; r++) {
    enum tw_rc rc = managed_in(p, a->regions[r], out, err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

/* The instance a launch with client token `token` made.  ECS takes the
 * token for RunInstances' idempotency but does not filter on it, so the
 * attempt tag (which the scheduler sets to the attempt's token) is asked
 * for: DescribeInstances with Tag.1 tradewind:attempt = token, in the
 * launch's region (every configured one when none is given).  A gang
 * node's own token is not an attempt tag and is not found; its launch is
 * then sent again with that token, which RunInstances answers with the
 * instance it made. */
static enum tw_rc ali_find_by_token(struct tw_provider *p, const char *token,
                                    const char *region, struct tw_instance *out,
                                    struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  enum tw_rc rc = TW_OK;
  bool found = false;
  struct tw_buf body;
  tw_buf_init(&body);
  for (size_t r = 0; r < a->n_regions && rc == TW_OK && !found; r++) {
    if (*region && strcmp(region, a->regions[r]))
      continue;
    struct ali_params f = {0};
    ap_add(&f, "RegionId", a->regions[r]);
    ap_add(&f, "Tag.1.Key", TW_TAG_ATTEMPT);
    ap_add(&f, "Tag.1.Value", token);
    ap_add(&f, "MaxResults", "10");
    struct tw_instance_list l;
    tw_instance_list_init(&l);
    struct tw_ecs_page pg;
    rc = ecs_call(p, a->regions[r], "DescribeInstances", &f, &body, err);
    ap_release(&f);
    if (rc == TW_OK)
      rc = tw_ecs_parse_instances(body.data, body.len, &l, &pg, err);
    for (size_t i = 0; rc == TW_OK && i < l.n && !found; i++)
      if (!strcmp(l.items[i].attempt_id, token)) {
        *out = l.items[i];
        TW_SET(out->region, a->regions[r]);
        tw_region_memo_put(&a->where, out->id, a->regions[r]);
        found = true;
      }
    tw_instance_list_release(&l);
  }
  tw_buf_release(&body);
  if (rc == TW_OK && !found) {
    tw_err_detail(err, "InvalidInstanceId.NotFound");
    rc = tw_err_set(err, TW_E_NOTFOUND, "alibaba: no instance for token %s%s%s",
                    token, *region ? " in " : "", region);
  }
  return rc;
}

/* ---- offers ------------------------------------------------------------- */

/* The currencies ECS answers in: CNY (the China site; also when the answer
 * names none) and USD (the international site). */
static const char *currency_of(const char *currency) {
  if (!*currency || !strcmp(currency, "CNY"))
    return "CNY";
  if (!strcmp(currency, "USD"))
    return "USD";
  return NULL;
}

/* A price of nano-units of currency onto o: USD as the offer's price,
 * anything else as the provider's own price for the catalog to convert. */
static enum tw_rc set_price(struct tw_offer *o, int64_t nano,
                            const char *currency, struct tw_err *err) {
  int64_t micro;
  if (nano < 0 || !tw_units_div_round(nano, 1000, &micro) ||
      micro > TW_MODEL_PRICE_MAX_UUSD)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba price: negative or above the largest price "
                      "accepted");
  if (!strcmp(currency, "USD")) {
    o->price_uusd_per_hour = micro;
    return TW_OK;
  }
  TW_SET(o->price_currency, currency);
  o->price_micro_per_hour = micro;
  o->price_uusd_per_hour = 0; /* the catalog's to say */
  return TW_OK;
}

static enum tw_rc stock_in(struct tw_provider *p, const char *region, bool spot,
                           struct tw_ecs_stock_list *out, struct tw_err *err) {
  struct ali_params f = {0};
  struct tw_buf body;
  tw_buf_init(&body);
  ap_add(&f, "RegionId", region);
  ap_add(&f, "DestinationResource", "InstanceType");
  ap_add(&f, "ResourceType", "instance");
  ap_add(&f, "InstanceChargeType", "PostPaid");
  if (spot)
    ap_add(&f, "SpotStrategy", "SpotAsPriceGo");
  enum tw_rc rc =
      ecs_call(p, region, "DescribeAvailableResource", &f, &body, err);
  if (rc == TW_OK)
    rc = tw_ecs_parse_available(body.data, body.len, "InstanceType", out, err);
  ap_release(&f);
  tw_buf_release(&body);
  return rc;
}

static bool wanted(const struct ali_ctx *a, const char *type) {
  if (!a->n_types)
    return true;
  for (size_t i = 0; i < a->n_types; i++)
    if (!strcmp(a->types[i], type))
      return true;
  return false;
}

static enum tw_rc types_in(struct tw_provider *p, const char *region,
                           char **names, size_t n,
                           struct tw_ecs_itype_list *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  enum tw_rc rc = TW_OK;
  struct tw_buf body;
  tw_buf_init(&body);
  for (size_t at = 0; at < n && !rc; at += ALI_TYPES_PER_CALL) {
    char next[256] = "";
    int64_t pages = 0;
    do {
      if (++pages > a->max_pages) {
        rc = tw_err_set(err, TW_E_TOOBIG,
                        "alibaba DescribeInstanceTypes: more than %lld "
                        "pages",
                        (long long)a->max_pages);
        break;
      }
      struct ali_params f = {0};
      ap_add(&f, "RegionId", region);
      for (size_t k = 0; k < ALI_TYPES_PER_CALL && at + k < n; k++)
        ap_addf(&f, names[at + k], "InstanceTypes.%zu", k + 1);
      ap_add(&f, "MaxResults", "100");
      if (next[0])
        ap_add(&f, "NextToken", next);
      rc = ecs_call(p, region, "DescribeInstanceTypes", &f, &body, err);
      ap_release(&f);
      char tok[256];
      if (rc || (rc = tw_ecs_parse_instance_types(body.data, body.len, out, tok,
                                                  err)))
        break;
      if (tok[0] && !strcmp(tok, next)) {
        rc = tw_err_set(err, TW_E_INTERNAL,
                        "alibaba DescribeInstanceTypes: the same NextToken "
                        "twice");
        break;
      }
      memcpy(next, tok, sizeof next);
    } while (next[0]);
  }
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc price_of(struct tw_provider *p, const char *region,
                           const char *type, int64_t *nano, char currency[8],
                           struct tw_err *err) {
  struct ali_params f = {0};
  struct tw_buf body;
  tw_buf_init(&body);
  ap_add(&f, "RegionId", region);
  ap_add(&f, "ResourceType", "instance");
  ap_add(&f, "InstanceType", type);
  ap_add(&f, "InstanceNetworkType", "vpc");
  ap_add(&f, "PriceUnit", "Hour");
  ap_add(&f, "Period", "1");
  struct tw_ecs_price pr;
  enum tw_rc rc = ecs_call(p, region, "DescribePrice", &f, &body, err);
  if (rc == TW_OK)
    rc = tw_ecs_parse_price(body.data, body.len, &pr, err);
  if (rc == TW_OK) {
    const char *cur = currency_of(pr.currency);
    if (!cur)
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba DescribePrice %s: unknown currency %s", type,
                      pr.currency);
    else
      snprintf(currency, 8, "%s", cur);
    *nano = pr.trade_nano;
  }
  ap_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc spot_history(struct tw_provider *p, const char *region,
                               const char *type,
                               struct tw_ecs_spot_price_list *out,
                               char currency[8], struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  char start[32], off[24];
  enum tw_rc rc = TW_OK;
  struct tw_buf body;
  tw_buf_init(&body);
  /* ECS also returns the price in force at StartTime, so every zone that
   * sells the type has a row in the window. */
  tw_adapter_iso_time(tw_clock_now_ms(p->clock) + atomic_load(&a->skew_ms) -
                          a->spot_window_ms,
                      start);
  int64_t offset = 0, pages = 0;
  do {
    if (++pages > a->max_pages) {
      rc = tw_err_set(err, TW_E_TOOBIG,
                      "alibaba DescribeSpotPriceHistory %s: more than %lld "
                      "pages",
                      type, (long long)a->max_pages);
      break;
    }
    struct ali_params f = {0};
    ap_add(&f, "RegionId", region);
    ap_add(&f, "InstanceType", type);
    ap_add(&f, "NetworkType", "vpc");
    ap_add(&f, "OSType", "linux");
    ap_add(&f, "StartTime", start);
    if (offset) {
      snprintf(off, sizeof off, "%lld", (long long)offset);
      ap_add(&f, "Offset", off);
    }
    int64_t next = 0;
    rc = ecs_call(p, region, "DescribeSpotPriceHistory", &f, &body, err);
    ap_release(&f);
    if (rc || (rc = tw_ecs_parse_spot_prices(body.data, body.len, out, &next,
                                             currency, err)))
      break;
    if (next && next <= offset) {
      rc = tw_err_set(err, TW_E_INTERNAL,
                      "alibaba DescribeSpotPriceHistory: NextOffset went "
                      "back");
      break;
    }
    offset = next;
  } while (offset);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc offer_from(const struct ali_ctx *a, struct tw_offer *o,
                             const struct tw_ecs_itype *t, const char *region,
                             const char *zone, enum tw_market market,
                             int64_t nano, const char *currency,
                             struct tw_err *err) {
  TW_SET(o->region, region);
  TW_SET(o->zone, zone);
  TW_SET(o->zone_id, zone);
  TW_SET(o->instance_type, t->name);
  o->arch = t->arch;
  o->vcpus = t->vcpus;
  o->memory_mib = t->memory_mib;
  TW_SET(o->accel_name, t->accel_name);
  o->accel_count = t->accel_count;
  o->accel_memory_mib = t->accel_memory_mib;
  o->market = market;
  o->billing_granularity_s = ALI_BILLING_GRANULARITY_S;
  if (market == TW_MARKET_SPOT) {
    char h[8];
    snprintf(h, sizeof h, "%lld", (long long)a->spot_duration_h);
    tw_offer_set_label(o, "spot_protection_h", h);
  }
  return set_price(o, nano, currency, err);
}

static int spot_cmp(const void *x, const void *y) {
  const struct tw_ecs_spot_price *a = x, *b = y;
  int c = strcmp(a->zone, b->zone);
  if (!c) /* newest first */
    c = (a->timestamp_ms < b->timestamp_ms) -
        (a->timestamp_ms > b->timestamp_ms);
  return c;
}

static bool in_stock(const struct tw_ecs_stock_list *l, const char *zone,
                     const char *type) {
  for (size_t i = 0; i < l->n; i++)
    if (l->items[i].available && !strcmp(l->items[i].zone, zone) &&
        !strcmp(l->items[i].value, type) &&
        strcmp(l->items[i].category, "WithoutStock"))
      return true;
  return false;
}

static enum tw_rc offers_in(struct tw_provider *p, const char *region,
                            struct tw_offer_list *out, struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  struct tw_ecs_stock_list od, sp;
  struct tw_ecs_itype_list types;
  char **names = NULL;
  size_t n_names = 0;
  tw_ecs_stock_list_init(&od);
  tw_ecs_stock_list_init(&sp);
  tw_ecs_itype_list_init(&types);
  enum tw_rc rc;
  if ((rc = stock_in(p, region, false, &od, err)) ||
      (rc = stock_in(p, region, true, &sp, err)))
    goto out;
  /* The types sold here, that the config wants. */
  const struct tw_ecs_stock_list *both[] = {&od, &sp};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < both[k]->n; i++) {
      const char *t = both[k]->items[i].value;
      bool seen = !wanted(a, t);
      for (size_t j = 0; j < n_names && !seen; j++)
        seen = !strcmp(names[j], t);
      if (seen)
        continue;
      names = tw_realloc(names, (n_names + 1) * sizeof *names);
      names[n_names++] = tw_strdup(t);
    }
  if (!n_names)
    goto out;
  if ((rc = types_in(p, region, names, n_names, &types, err)))
    goto out;
  for (size_t t = 0; t < types.n; t++) {
    const struct tw_ecs_itype *ty = &types.items[t];
    if (ty->vcpus < 1 || !wanted(a, ty->name))
      continue;
    bool any_od = false, any_spot = false;
    for (size_t i = 0; i < od.n; i++)
      any_od |= !strcmp(od.items[i].value, ty->name);
    for (size_t i = 0; i < sp.n; i++)
      any_spot |= !strcmp(sp.items[i].value, ty->name);
    if (any_od) {
      /* Pay-as-you-go prices are regional: one DescribePrice a type. */
      int64_t nano;
      char cur[8];
      if ((rc = price_of(p, region, ty->name, &nano, cur, err)))
        goto out;
      for (size_t i = 0; i < od.n; i++) {
        const struct tw_ecs_stock *s = &od.items[i];
        if (strcmp(s->value, ty->name) || !in_stock(&od, s->zone, ty->name))
          continue;
        if ((rc = offer_from(a, tw_offer_list_add(out), ty, region, s->zone,
                             TW_MARKET_ON_DEMAND, nano, cur, err)))
          goto out;
      }
    }
    if (any_spot) {
      struct tw_ecs_spot_price_list hist;
      char cur[8] = "";
      tw_ecs_spot_price_list_init(&hist);
      rc = spot_history(p, region, ty->name, &hist, cur, err);
      if (rc == TW_OK && !currency_of(cur))
        rc = tw_err_set(err, TW_E_INVALID,
                        "alibaba DescribeSpotPriceHistory %s: unknown "
                        "currency %s",
                        ty->name, cur);
      if (rc) {
        tw_ecs_spot_price_list_release(&hist);
        goto out;
      }
      /* The newest price of each zone in the window. */
      qsort(hist.items, hist.n, sizeof *hist.items, spot_cmp);
      for (size_t i = 0; i < hist.n; i++) {
        const struct tw_ecs_spot_price *s = &hist.items[i];
        if ((i > 0 && !strcmp(s->zone, hist.items[i - 1].zone)) ||
            strcmp(s->instance_type, ty->name) ||
            !in_stock(&sp, s->zone, ty->name))
          continue;
        struct tw_offer *o = tw_offer_list_add(out);
        if ((rc = offer_from(a, o, ty, region, s->zone, TW_MARKET_SPOT,
                             s->price_nano, currency_of(cur), err))) {
          tw_ecs_spot_price_list_release(&hist);
          goto out;
        }
        o->price_observed_ms = s->timestamp_ms;
      }
      tw_ecs_spot_price_list_release(&hist);
    }
  }
out:
  tw_provider_strv_free(names, n_names);
  tw_ecs_stock_list_release(&od);
  tw_ecs_stock_list_release(&sp);
  tw_ecs_itype_list_release(&types);
  return rc;
}

static enum tw_rc ali_list_offers(struct tw_provider *p,
                                  struct tw_offer_list *out,
                                  struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  return tw_adapter_offers_by_region(p, a->regions, a->n_regions, offers_in,
                                     out, err);
}

/* ---- events ------------------------------------------------------------- */

/* The reclaim events CloudMonitor holds for region over the last hour. */
static enum tw_rc reclaim_events(struct tw_provider *p, const char *region,
                                 struct tw_ecs_notice_list *out,
                                 struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  int64_t now = tw_clock_now_ms(p->clock) + atomic_load(&a->skew_ms);
  char from[24], to[24];
  snprintf(from, sizeof from, "%lld", (long long)(now - 3600000));
  snprintf(to, sizeof to, "%lld", (long long)(now + 60000));
  struct ali_params f = {0};
  struct tw_buf body;
  tw_buf_init(&body);
  ap_add(&f, "Product", "ECS");
  ap_add(&f, "EventType", "StatusNotification");
  ap_add(&f, "Name", TW_ECS_RECLAIM_EVENT);
  ap_add(&f, "StartTime", from);
  ap_add(&f, "EndTime", to);
  ap_add(&f, "PageSize", "100");
  enum tw_rc rc =
      ali_call(p, a->cms_endpoint, region, "DescribeSystemEventAttribute",
               ALI_CMS_VERSION, &f, &body, err);
  if (rc == TW_OK)
    rc = tw_ecs_parse_reclaim_events(body.data, body.len, out, err);
  ap_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc ali_poll_events(struct tw_provider *p,
                                  struct tw_event_list *out,
                                  struct tw_err *err) {
  struct ali_ctx *a = p->ctx;
  enum tw_rc rc = TW_OK;
  for (size_t r = 0; r < a->n_regions && !rc; r++) {
    struct tw_instance_list l;
    struct tw_ecs_notice_list notes;
    tw_instance_list_init(&l);
    tw_ecs_notice_list_init(&notes);
    rc = managed_in(p, a->regions[r], &l, err);
    /* A spot instance ECS is about to reclaim carries the OperationLocks
     * reason "Recycling" from the notice on; CloudMonitor tells when the
     * notice went out. */
    bool any = false;
    for (size_t i = 0; i < l.n && !rc; i++)
      any |= l.items[i].market == TW_MARKET_SPOT &&
             !strcmp(l.items[i].state_reason, "Recycling");
    if (!rc && any && a->cms_endpoint)
      rc = reclaim_events(p, a->regions[r], &notes, err);
    for (size_t i = 0; i < l.n && !rc; i++) {
      const struct tw_instance *in = &l.items[i];
      if (in->market != TW_MARKET_SPOT || strcmp(in->state_reason, "Recycling"))
        continue;
      struct tw_event *e = tw_event_list_add(out);
      e->kind = TW_EVENT_INTERRUPTION;
      TW_SET(e->instance_id, in->id);
      TW_SET(e->action,
             strcmp(a->spot_behavior, "Stop") ? "terminate" : "stop");
      /* The newest event of this instance; without CloudMonitor the time
       * is unknown (0), which still dedups from poll to poll. */
      for (size_t k = 0; k < notes.n; k++)
        if (!strcmp(notes.items[k].instance_id, in->id) &&
            notes.items[k].time_ms > e->noticed_ms) {
          e->noticed_ms = notes.items[k].time_ms;
          e->deadline_ms = e->noticed_ms + ALI_NOTICE_LEAD_MS;
        }
    }
    tw_instance_list_release(&l);
    tw_ecs_notice_list_release(&notes);
  }
  return rc;
}

/* Families ending in y or r after the generation digit are Arm:
 * ecs.g8y.large (Yitian 710), ecs.c6r.large (Ampere); the rest x86_64. */
static enum tw_arch ali_arch_of_type(const char *type) {
  const char *f = !strncmp(type, "ecs.", 4) ? type + 4 : type;
  const char *dot = strchr(f, '.');
  size_t n = dot ? (size_t)(dot - f) : strlen(f);
  if (n >= 3 && isdigit((unsigned char)f[n - 2]) &&
      (f[n - 1] == 'y' || f[n - 1] == 'r'))
    return TW_ARCH_ARM64;
  return TW_ARCH_X86_64;
}

/* The family of ecs.g7.large is g7. */
static bool ali_type_family(const char *type, char *out, size_t outsz) {
  const char *f = !strncmp(type, "ecs.", 4) ? type + 4 : type;
  const char *dot = strchr(f, '.');
  size_t n = dot ? (size_t)(dot - f) : strlen(f);
  snprintf(out, outsz, "%.*s", (int)n, f);
  return n > 0;
}

/* Burstable t5 and t6; the SGX families g7t, c7t and r7t keep memory
 * encrypted (security-enhanced instances). */
static unsigned ali_type_traits(const char *type) {
  char fam[32];
  if (!ali_type_family(type, fam, sizeof fam))
    return 0;
  if (!strcmp(fam, "t5") || !strcmp(fam, "t6"))
    return TW_TYPE_BURSTABLE;
  size_t n = strlen(fam);
  if (n >= 3 && isdigit((unsigned char)fam[n - 2]) && fam[n - 1] == 't')
    return TW_TYPE_CONFIDENTIAL;
  return 0;
}

/* ecs.f3 carries Xilinx VU9P FPGAs the price lists do not name. */
static const struct tw_provider_type_accel ali_type_accels[] = {
    {"ecs.f3.", "VU9P"}, {NULL, NULL}};

/* ECS bills per second without a minimum; a preemptible instance is
 * protected for its first hour. */
static const struct tw_provider_info ali_info = {
    .billing = {.kind = TW_BILLING_PUBLISHED,
                .granularity_s = 1,
                .min_charge_s = 0,
                .spot_protection_s = 3600,
                .source = "ECS billing: pay-as-you-go instances billed by "
                          "the second (hourly cycle); preemptible instances "
                          "billed by the second, 1-hour protection period"},
    .notice_url = "http://100.100.100.200/latest/meta-data/instance/spot/"
                  "termination-time",
    .notice_signal = "",
    .focus_provider = "Alibaba Cloud",
    .focus_compute_service = "Elastic Compute Service",
    .focus_network_service = "Data Transfer",
    .focus_resource_type = "Virtual Machine",
    .user_data_max = 24576, /* 32 KiB once base64-encoded */
    .catalog_zone_ids = false,
    .catalog_risk_feed = false,
    .arch_of_type = ali_arch_of_type,
    .type_accels = ali_type_accels,
    .type_bundle = NULL,
    .accel_attach = NULL,
    .type_family = ali_type_family,
    .type_traits = ali_type_traits};

const struct tw_provider_ops tw_provider_alibaba = {
    .name = "alibaba",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports =
        TW_PROV_SPOT | TW_PROV_EVENTS | TW_PROV_ZONES | TW_PROV_CLIENT_TOKEN,
    .init = ali_init,
    .list_offers = ali_list_offers,
    .launch = ali_launch,
    .describe = ali_describe,
    .terminate = ali_terminate,
    .list_managed = ali_list_managed,
    .poll_events = ali_poll_events,
    .free = ali_free,
    .info = &ali_info,
    .find_by_token = ali_find_by_token,
};
