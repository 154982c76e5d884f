/* oidc.c - OpenID Connect sign-in: the config, the issuers' keys, the
 * checks of a token, the mapping rules and the sessions (see oidc.h). */
#include "api/oidc.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jwt.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/tenancy/audit.h"
#include "providers/http.h"

#define SESSIONS 1024
#define SESSION_PROBE 8
#define MAX_ISSUERS 16
#define MAX_RULES 256
#define JWKS_MAX_BYTES (512 * 1024)
#define FETCH_TIMEOUT_MS 5000

/* ---- the config ---------------------------------------------------------- */

struct match {
  char *claim;
  char **globs;
  size_t n;
};

struct rule {
  char *name;
  char *tenant;
  enum tw_role role;
  char *principal; /* template; NULL: the issuer's principal_claim */
  struct match *m;
  size_t n_m;
};

struct issuer_cfg {
  char *name, *issuer, *jwks_uri; /* jwks_uri "" : discovery */
  char **aud;
  size_t n_aud;
  int64_t skew_s, refresh_s, min_refetch_s;
  char *principal_claim;
  struct rule *rules;
  size_t n_rules;
};

struct tw_oidc_cfg {
  struct issuer_cfg *iss;
  size_t n;
};

static void strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void tw_oidc_cfg_free(struct tw_oidc_cfg *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++) {
    struct issuer_cfg *ic = &c->iss[i];
    free(ic->name);
    free(ic->issuer);
    free(ic->jwks_uri);
    free(ic->principal_claim);
    strv_free(ic->aud, ic->n_aud);
    for (size_t r = 0; r < ic->n_rules; r++) {
      struct rule *ru = &ic->rules[r];
      free(ru->name);
      free(ru->tenant);
      free(ru->principal);
      for (size_t m = 0; m < ru->n_m; m++) {
        free(ru->m[m].claim);
        strv_free(ru->m[m].globs, ru->m[m].n);
      }
      free(ru->m);
    }
    free(ic->rules);
  }
  free(c->iss);
  free(c);
}

static enum tw_rc bad(struct tw_err *err, const char *path, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));
static enum tw_rc bad(struct tw_err *err, const char *path, const char *fmt,
                      ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tw_err_field(err, TW_E_INVALID, path, "%s: %s", path, msg);
}

/* Only the keys in allowed[] (NULL-terminated) may appear in map m. */
static enum tw_rc known_keys(const struct tw_node *m, const char *path,
                             const char *const *allowed, struct tw_err *err) {
  for (size_t i = 0; i < m->n; i++) {
    bool ok = false;
    for (int k = 0; allowed[k] && !ok; k++)
      ok = !strcmp(m->keys[i], allowed[k]);
    if (!ok) {
      char p[512];
      snprintf(p, sizeof p, "%.200s.%s", path, m->keys[i]);
      const char *near = tw_closest(m->keys[i], allowed);
      if (near)
        return bad(err, p, "unknown key; did you mean \"%s\"?", near);
      return bad(err, p, "unknown key");
    }
  }
  return TW_OK;
}

/* A string value of m[key]; def when absent; NULL (and err) when not a
 * string. */
static char *str_key(const struct tw_node *m, const char *path,
                     const char *key, const char *def, struct tw_err *err) {
  const struct tw_node *v = tw_node_get(m, key);
  char p[512];
  snprintf(p, sizeof p, "%.200s.%s", path, key);
  if (!v) {
    if (!def)
      bad(err, p, "required");
    return def ? tw_strdup(def) : NULL;
  }
  if (v->kind != TW_NODE_SCALAR || !tw_node_is_string(v)) {
    bad(err, p, "expected a string, got %s", tw_node_type_name(v));
    return NULL;
  }
  return tw_strdup(v->str);
}

static bool int_key(const struct tw_node *m, const char *path, const char *key,
                    int64_t def, int64_t lo, int64_t hi, int64_t *out,
                    struct tw_err *err) {
  const struct tw_node *v = tw_node_get(m, key);
  char p[512];
  snprintf(p, sizeof p, "%.200s.%s", path, key);
  *out = def;
  if (!v)
    return true;
  int64_t x;
  if (!tw_node_as_int(v, &x) || x < lo || x > hi) {
    char range[64];
    snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, lo, hi);
    bad(err, p, "expected a number of seconds in %s", range);
    return false;
  }
  *out = x;
  return true;
}

/* One string or a list of strings, into *out (owned). */
static bool str_list(const struct tw_node *v, const char *p, char ***out,
                     size_t *n, struct tw_err *err) {
  *out = NULL;
  *n = 0;
  if (v->kind == TW_NODE_SCALAR && tw_node_is_string(v)) {
    *out = tw_calloc(1, sizeof **out);
    (*out)[(*n)++] = tw_strdup(v->str);
    return true;
  }
  if (v->kind != TW_NODE_SEQ || !v->n) {
    bad(err, p, "expected a string or a non-empty list of strings, got %s",
        tw_node_type_name(v));
    return false;
  }
  *out = tw_calloc(v->n, sizeof **out);
  for (size_t i = 0; i < v->n; i++) {
    if (v->items[i]->kind != TW_NODE_SCALAR ||
        !tw_node_is_string(v->items[i]) || !*v->items[i]->str) {
      char q[512];
      snprintf(q, sizeof q, "%.200s[%zu]", p, i);
      bad(err, q, "expected a non-empty string");
      return false;
    }
    (*out)[(*n)++] = tw_strdup(v->items[i]->str);
  }
  return true;
}

/* https, or http to a loopback host (a test or a local issuer). */
static bool url_ok(const char *u) {
  if (!strncmp(u, "https://", 8))
    return u[8] && u[8] != '/';
  if (strncmp(u, "http://", 7))
    return false;
  const char *h = u + 7;
  static const char *const LOOP[] = {"127.0.0.1", "localhost", "[::1]"};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(LOOP[i]);
    if (!strncmp(h, LOOP[i], l) &&
        (h[l] == ':' || h[l] == '/' || h[l] == '\0'))
      return true;
  }
  return false;
}

/* A principal-name-safe literal: the bytes names may hold. */
static bool name_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || strchr("._@/:+=-", c);
}

static enum tw_rc parse_rule(const struct tw_node *r, const char *path,
                             struct rule *out, struct tw_err *err) {
  static const char *const KEYS[] = {"name", "match", "tenant", "role",
                                     "principal", NULL};
  if (r->kind != TW_NODE_MAP)
    return bad(err, path, "expected a mapping, got %s", tw_node_type_name(r));
  if (known_keys(r, path, KEYS, err))
    return TW_E_INVALID;
  char p[512];
  if (!(out->name = str_key(r, path, "name", NULL, err)) ||
      !(out->tenant = str_key(r, path, "tenant", NULL, err)))
    return TW_E_INVALID;
  char *role = str_key(r, path, "role", NULL, err);
  if (!role)
    return TW_E_INVALID;
  snprintf(p, sizeof p, "%.200s.role", path);
  bool known = tw_role_parse(role, &out->role);
  if (!known) {
    bad(err, p, "unknown role \"%s\"", role);
    free(role);
    return TW_E_INVALID;
  }
  free(role);
  snprintf(p, sizeof p, "%.200s.tenant", path);
  bool global = !strcmp(out->tenant, TW_TENANT_GLOBAL);
  if (out->role == TW_ROLE_ADMIN && !global)
    return bad(err, p, "role admin is granted only in tenant \"*\", not %s",
               out->tenant);
  if (out->role != TW_ROLE_ADMIN && !tw_tenancy_name_ok(out->tenant))
    return bad(err, p, "\"%s\" is not a tenant name", out->tenant);
  const struct tw_node *pr = tw_node_get(r, "principal");
  if (pr) {
    if (!(out->principal = str_key(r, path, "principal", NULL, err)))
      return TW_E_INVALID;
    snprintf(p, sizeof p, "%.200s.principal", path);
    for (const char *c = out->principal; *c; c++) {
      if (*c == '{') {
        const char *e = strchr(c, '}');
        if (!e || e == c + 1)
          return bad(err, p, "\"{\" without a claim name and \"}\"");
        c = e;
      } else if (!name_byte((unsigned char)*c)) {
        return bad(err, p, "'%s' cannot be part of a principal name",
                   (char[]){*c, 0});
      }
    }
    if (!*out->principal)
      return bad(err, p, "must not be empty");
  }
  const struct tw_node *m = tw_node_get(r, "match");
  snprintf(p, sizeof p, "%.200s.match", path);
  if (!m || m->kind != TW_NODE_MAP || !m->n)
    return bad(err, p,
               "a mapping of claims to globs is required (grant everybody "
               "with sub: \"*\")");
  out->m = tw_calloc(m->n, sizeof *out->m);
  for (size_t i = 0; i < m->n; i++) {
    char q[512];
    snprintf(q, sizeof q, "%.200s.%s", p, m->keys[i]);
    out->m[out->n_m].claim = tw_strdup(m->keys[i]);
    if (!str_list(m->items[i], q, &out->m[out->n_m].globs,
                  &out->m[out->n_m].n, err)) {
      out->n_m++;
      return TW_E_INVALID;
    }
    out->n_m++;
  }
  return TW_OK;
}

static enum tw_rc parse_issuer(const struct tw_node *n, const char *path,
                               struct issuer_cfg *ic, struct tw_err *err) {
  static const char *const KEYS[] = {
      "name",           "issuer",         "audiences",
      "jwks_uri",       "clock_skew_s",   "jwks_refresh_s",
      "jwks_min_refetch_s", "principal_claim", "rules", NULL};
  if (n->kind != TW_NODE_MAP)
    return bad(err, path, "expected a mapping, got %s", tw_node_type_name(n));
  if (known_keys(n, path, KEYS, err))
    return TW_E_INVALID;
  char p[512];
  if (!(ic->name = str_key(n, path, "name", NULL, err)) ||
      !(ic->issuer = str_key(n, path, "issuer", NULL, err)) ||
      !(ic->jwks_uri = str_key(n, path, "jwks_uri", "", err)) ||
      !(ic->principal_claim = str_key(n, path, "principal_claim", "sub", err)))
    return TW_E_INVALID;
  snprintf(p, sizeof p, "%.200s.name", path);
  if (!tw_tenancy_name_ok(ic->name) || strlen(ic->name) > 24)
    return bad(err, p,
               "\"%s\" is not a name of 1..24 of [A-Za-z0-9._-] (it prefixes "
               "principal names)",
               ic->name);
  snprintf(p, sizeof p, "%.200s.issuer", path);
  if (!url_ok(ic->issuer))
    return bad(err, p,
               "\"%s\" must be an https URL (http only to a loopback host)",
               ic->issuer);
  snprintf(p, sizeof p, "%.200s.jwks_uri", path);
  if (*ic->jwks_uri && !url_ok(ic->jwks_uri))
    return bad(err, p,
               "\"%s\" must be an https URL (http only to a loopback host)",
               ic->jwks_uri);
  const struct tw_node *aud = tw_node_get(n, "audiences");
  snprintf(p, sizeof p, "%.200s.audiences", path);
  if (!aud)
    return bad(err, p, "required: the aud values meant for this broker");
  if (!str_list(aud, p, &ic->aud, &ic->n_aud, err))
    return TW_E_INVALID;
  if (!int_key(n, path, "clock_skew_s", 60, 0, 600, &ic->skew_s, err) ||
      !int_key(n, path, "jwks_refresh_s", 3600, 60, 86400, &ic->refresh_s,
               err) ||
      !int_key(n, path, "jwks_min_refetch_s", 30, 1, 3600, &ic->min_refetch_s,
               err))
    return TW_E_INVALID;
  const struct tw_node *rules = tw_node_get(n, "rules");
  snprintf(p, sizeof p, "%.200s.rules", path);
  if (rules && rules->kind != TW_NODE_SEQ)
    return bad(err, p, "expected a list of rules, got %s",
               tw_node_type_name(rules));
  if (rules && rules->n > MAX_RULES)
    return bad(err, p, "at most 256 rules");
  if (rules && rules->n) {
    ic->rules = tw_calloc(rules->n, sizeof *ic->rules);
    for (size_t i = 0; i < rules->n; i++) {
      char q[512];
      snprintf(q, sizeof q, "%.200s[%zu]", p, i);
      ic->n_rules++;
      if (parse_rule(rules->items[i], q, &ic->rules[i], err))
        return TW_E_INVALID;
      for (size_t j = 0; j < i; j++)
        if (!strcmp(ic->rules[j].name, ic->rules[i].name)) {
          snprintf(q, sizeof q, "%.200s[%zu].name", p, i);
          return bad(err, q, "\"%s\" names another rule too",
                     ic->rules[i].name);
        }
    }
  }
  return TW_OK;
}

enum tw_rc tw_oidc_cfg_parse(const struct tw_node *oidc,
                             struct tw_oidc_cfg **out, struct tw_err *err) {
  static const char *const KEYS[] = {"issuers", NULL};
  const char *path = "auth.oidc";
  *out = NULL;
  if (!oidc || oidc->kind == TW_NODE_NULL)
    return TW_OK;
  if (oidc->kind != TW_NODE_MAP)
    return bad(err, path, "expected a mapping, got %s",
               tw_node_type_name(oidc));
  if (known_keys(oidc, path, KEYS, err))
    return TW_E_INVALID;
  const struct tw_node *iss = tw_node_get(oidc, "issuers");
  if (!iss || iss->kind == TW_NODE_NULL || (iss->kind == TW_NODE_SEQ && !iss->n))
    return TW_OK;
  if (iss->kind != TW_NODE_SEQ)
    return bad(err, "auth.oidc.issuers", "expected a list of issuers, got %s",
               tw_node_type_name(iss));
  if (iss->n > MAX_ISSUERS)
    return bad(err, "auth.oidc.issuers", "at most 16 issuers");
  struct tw_oidc_cfg *c = tw_calloc(1, sizeof *c);
  c->iss = tw_calloc(iss->n, sizeof *c->iss);
  for (size_t i = 0; i < iss->n; i++) {
    char p[512];
    snprintf(p, sizeof p, "auth.oidc.issuers[%zu]", i);
    c->n++;
    if (parse_issuer(iss->items[i], p, &c->iss[i], err)) {
      tw_oidc_cfg_free(c);
      return TW_E_INVALID;
    }
    for (size_t j = 0; j < i; j++) {
      if (!strcmp(c->iss[j].name, c->iss[i].name) ||
          !strcmp(c->iss[j].issuer, c->iss[i].issuer)) {
        snprintf(p, sizeof p, "auth.oidc.issuers[%zu]", i);
        enum tw_rc rc = bad(err, p, "repeats the name or issuer of issuer %s",
                            c->iss[j].name);
        tw_oidc_cfg_free(c);
        return rc;
      }
    }
  }
  *out = c;
  return TW_OK;
}

/* ---- the verifier ---------------------------------------------------------- */

struct issuer {
  const struct issuer_cfg *cfg;
  pthread_mutex_t mu;       /* keys, jwks_uri, the times */
  pthread_mutex_t fetch_mu; /* one fetch at a time */
  struct tw_jwks keys;
  char *jwks_uri; /* resolved; NULL until discovery ran */
  int64_t fetched_ms, attempt_ms;
  uint64_t fetches;
};

struct session {
  unsigned char h[32]; /* SHA-256 of tenant hint, NUL, token; zero: free */
  int64_t until_ms;    /* exp + skew */
  int64_t used_ms;
  enum tw_oidc_result res;
  struct tw_principal who;
  char why[160];
};

struct tw_oidc {
  const struct tw_oidc_cfg *cfg;
  struct issuer *iss;
  size_t n;
  struct tw_http *http;
  struct tw_clock *clock;
  struct tw_tenancy *ten;
  pthread_mutex_t smu;
  struct session s[SESSIONS];
  /* refusal log lines: at most LOG_PER_S per second (under smu) */
  int64_t log_s;
  unsigned log_n, log_dropped;
};

#define LOG_PER_S 10

enum tw_rc tw_oidc_new(const struct tw_oidc_cfg *cfg, struct tw_clock *clock,
                       struct tw_tenancy *ten, struct tw_oidc **out,
                       struct tw_err *err) {
  *out = NULL;
  struct tw_oidc *o = tw_calloc(1, sizeof *o);
  struct tw_http_opts ho = {.max_attempts = 1, .clock = clock};
  enum tw_rc rc = tw_http_new(&ho, &o->http, err);
  if (rc) {
    free(o);
    return rc;
  }
  o->cfg = cfg;
  o->clock = clock ? clock : tw_clock_real();
  o->ten = ten;
  o->n = cfg ? cfg->n : 0;
  o->iss = tw_calloc(o->n ? o->n : 1, sizeof *o->iss);
  for (size_t i = 0; i < o->n; i++) {
    o->iss[i].cfg = &cfg->iss[i];
    pthread_mutex_init(&o->iss[i].mu, NULL);
    pthread_mutex_init(&o->iss[i].fetch_mu, NULL);
    if (*cfg->iss[i].jwks_uri)
      o->iss[i].jwks_uri = tw_strdup(cfg->iss[i].jwks_uri);
  }
  pthread_mutex_init(&o->smu, NULL);
  *out = o;
  return TW_OK;
}

void tw_oidc_free(struct tw_oidc *o) {
  if (!o)
    return;
  for (size_t i = 0; i < o->n; i++) {
    tw_jwks_release(&o->iss[i].keys);
    free(o->iss[i].jwks_uri);
    pthread_mutex_destroy(&o->iss[i].mu);
    pthread_mutex_destroy(&o->iss[i].fetch_mu);
  }
  free(o->iss);
  tw_http_free(o->http);
  OPENSSL_cleanse(o->s, sizeof o->s);
  pthread_mutex_destroy(&o->smu);
  free(o);
}

uint64_t tw_oidc_jwks_fetches(struct tw_oidc *o, const char *name) {
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->iss[i].cfg->name, name)) {
      pthread_mutex_lock(&o->iss[i].mu);
      uint64_t n = o->iss[i].fetches;
      pthread_mutex_unlock(&o->iss[i].mu);
      return n;
    }
  return 0;
}

bool tw_oidc_log_ok(struct tw_oidc *o, unsigned *dropped) {
  int64_t s = tw_clock_now_ms(o->clock) / 1000;
  pthread_mutex_lock(&o->smu);
  if (s != o->log_s) {
    o->log_s = s;
    o->log_n = 0;
  }
  bool ok = o->log_n < LOG_PER_S;
  if (ok) {
    o->log_n++;
    *dropped = o->log_dropped;
    o->log_dropped = 0;
  } else {
    o->log_dropped++;
  }
  pthread_mutex_unlock(&o->smu);
  return ok;
}

bool tw_oidc_is_jwt(const char *t) {
  int dots = 0;
  size_t n = 0;
  for (; t[n] && n <= TW_JWT_MAX_LEN; n++) {
    unsigned char c = (unsigned char)t[n];
    if (c == '.')
      dots++;
    else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return false;
  }
  return dots == 2 && n >= 5;
}

/* ---- fetching keys ---------------------------------------------------------- */

static enum tw_rc get_json(struct tw_oidc *o, const char *url,
                           struct tw_http_response *resp, struct tw_err *err) {
  struct tw_http_header h[] = {{"Accept", "application/json"}};
  struct tw_http_request rq = {.method = "GET",
                               .url = url,
                               .headers = h,
                               .n_headers = 1,
                               .timeout_ms = FETCH_TIMEOUT_MS,
                               .connect_timeout_ms = FETCH_TIMEOUT_MS,
                               .max_body_bytes = JWKS_MAX_BYTES,
                               .max_attempts = 1};
  enum tw_rc rc = tw_http_do(o->http, &rq, resp, err);
  if (rc)
    return rc;
  if (resp->status != 200)
    return tw_err_set(err, TW_E_IO, "GET %s answered %ld", url, resp->status);
  return TW_OK;
}

/* The discovery document's jwks_uri (its issuer must be ours). */
static char *discover(struct tw_oidc *o, const struct issuer_cfg *ic,
                      struct tw_err *err) {
  char url[1024];
  size_t l = strlen(ic->issuer);
  while (l && ic->issuer[l - 1] == '/')
    l--;
  snprintf(url, sizeof url, "%.*s/.well-known/openid-configuration", (int)l,
           ic->issuer);
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  char *out = NULL;
  if (get_json(o, url, &resp, err) == TW_OK) {
    json_error_t je;
    json_t *d = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len,
                           JSON_REJECT_DUPLICATES, &je);
    const char *iss = json_string_value(json_object_get(d, "issuer"));
    const char *ju = json_string_value(json_object_get(d, "jwks_uri"));
    if (!iss || strcmp(iss, ic->issuer))
      tw_err_set(err, TW_E_IO,
                 "discovery of %s: its \"issuer\" is not the configured one",
                 ic->name);
    else if (!ju || !url_ok(ju) || strlen(ju) > 1000)
      tw_err_set(err, TW_E_IO,
                 "discovery of %s: no usable jwks_uri (https, or http to a "
                 "loopback host)",
                 ic->name);
    else
      out = tw_strdup(ju);
    json_decref(d);
  }
  tw_http_response_release(&resp);
  return out;
}

/* Fetches the issuer's keys unless another thread just did or the last
 * attempt was under min_refetch_s ago (force: the periodic refresh or the
 * first fetch still honour the interval after a failure).  Called without
 * is->mu. */
static void refetch(struct tw_oidc *o, struct issuer *is, int64_t seen_ms) {
  const struct issuer_cfg *ic = is->cfg;
  pthread_mutex_lock(&is->fetch_mu);
  int64_t now = tw_clock_now_ms(o->clock);
  pthread_mutex_lock(&is->mu);
  bool skip = is->fetched_ms > seen_ms || /* another thread fetched */
              (is->attempt_ms &&
               now - is->attempt_ms < ic->min_refetch_s * 1000);
  if (!skip)
    is->attempt_ms = now;
  char *uri = !skip && is->jwks_uri ? tw_strdup(is->jwks_uri) : NULL;
  pthread_mutex_unlock(&is->mu);
  if (skip) {
    pthread_mutex_unlock(&is->fetch_mu);
    return;
  }
  struct tw_err err = {0};
  if (!uri && (uri = discover(o, ic, &err))) {
    pthread_mutex_lock(&is->mu);
    free(is->jwks_uri);
    is->jwks_uri = tw_strdup(uri);
    pthread_mutex_unlock(&is->mu);
  }
  struct tw_jwks ks = {0};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  bool ok = uri && get_json(o, uri, &resp, &err) == TW_OK &&
            tw_jwks_parse(resp.body.data ? resp.body.data : "", resp.body.len,
                          &ks, &err) == TW_OK;
  tw_http_response_release(&resp);
  if (ok) {
    pthread_mutex_lock(&is->mu);
    tw_jwks_release(&is->keys);
    is->keys = ks;
    is->fetched_ms = now > seen_ms ? now : seen_ms + 1;
    is->fetches++;
    pthread_mutex_unlock(&is->mu);
    tw_log_info("oidc", "issuer=%s keys=%zu skipped=%zu fetched from %s",
                ic->name, ks.n, ks.skipped, uri);
  } else {
    tw_log_warn("oidc", "issuer=%s keys not fetched: %s", ic->name, err.msg);
  }
  free(uri);
  pthread_mutex_unlock(&is->fetch_mu);
}

/* A reference to the key for j (EVP_PKEY_free it), or NULL. */
static EVP_PKEY *find_key(struct issuer *is, const struct tw_jwt *j,
                          bool *ambiguous) {
  EVP_PKEY *k = NULL;
  size_t found = 0;
  for (size_t i = 0; i < is->keys.n; i++) {
    const struct tw_jwk *w = &is->keys.keys[i];
    if (w->alg != j->alg || (j->kid[0] && strcmp(w->kid, j->kid)))
      continue;
    if (!found++)
      k = w->pkey;
  }
  /* without a kid, only a set with one key of the alg's type says which */
  *ambiguous = !j->kid[0] && found > 1;
  if (!k || *ambiguous)
    return NULL;
  EVP_PKEY_up_ref(k);
  return k;
}

/* ---- claims -------------------------------------------------------------- */

static bool num_claim(const struct tw_jwt *j, const char *name, double *out,
                      bool *present) {
  json_t *v = json_object_get(j->claims, name);
  *present = v != NULL;
  if (!v)
    return true;
  if (!json_is_number(v))
    return false;
  *out = json_number_value(v);
  return true;
}

static bool aud_ok(const struct tw_jwt *j, const struct issuer_cfg *ic) {
  json_t *a = json_object_get(j->claims, "aud");
  size_t i;
  json_t *v;
  for (size_t k = 0; k < ic->n_aud; k++) {
    if (json_is_string(a) && !strcmp(json_string_value(a), ic->aud[k]))
      return true;
    if (json_is_array(a))
      json_array_foreach(a, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), ic->aud[k]))
          return true;
      }
  }
  return false;
}

static bool claim_matches(const struct tw_jwt *j, const struct match *m) {
  json_t *v = json_object_get(j->claims, m->claim);
  for (size_t g = 0; g < m->n; g++) {
    if (json_is_string(v) && !fnmatch(m->globs[g], json_string_value(v), 0))
      return true;
    if (json_is_array(v)) {
      size_t i;
      json_t *e;
      json_array_foreach(v, i, e) {
        if (json_is_string(e) && !fnmatch(m->globs[g], json_string_value(e), 0))
          return true;
      }
    }
  }
  return false;
}

/* The principal name of rule ru for j: "<issuer>:<expansion>".  false
 * with why when a claim is missing or the result cannot be a name. */
static bool principal_name(const struct issuer_cfg *ic, const struct rule *ru,
                           const struct tw_jwt *j, char *out, size_t outsz,
                           char *why, size_t whysz) {
  char tmpl[160];
  if (ru->principal)
    snprintf(tmpl, sizeof tmpl, "%s", ru->principal);
  else
    snprintf(tmpl, sizeof tmpl, "{%s}", ic->principal_claim);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b, "%s:", ic->name);
  for (const char *c = tmpl; *c; c++) {
    if (*c != '{') {
      tw_buf_addc(&b, *c);
      continue;
    }
    const char *e = strchr(c, '}');
    char claim[128];
    snprintf(claim, sizeof claim, "%.*s", (int)(e - c - 1), c + 1);
    const char *v = tw_jwt_claim_str(j, claim);
    if (!v || !*v) {
      snprintf(why, whysz, "rule %s names the principal by claim %s, which "
               "the token lacks", ru->name, claim);
      tw_buf_release(&b);
      return false;
    }
    for (const char *p = v; *p; p++)
      if (!name_byte((unsigned char)*p)) {
        snprintf(why, whysz, "claim %s holds bytes a principal name cannot",
                 claim);
        tw_buf_release(&b);
        return false;
      }
    tw_buf_adds(&b, v);
    c = e;
  }
  bool fits = b.len < outsz;
  if (fits)
    snprintf(out, outsz, "%s", b.data);
  else
    snprintf(why, whysz, "the principal name of rule %s is longer than %zu "
             "bytes", ru->name, outsz - 1);
  tw_buf_release(&b);
  return fits;
}

/* Printable ASCII for an audit detail; other bytes as %XX. */
static void clean(struct tw_buf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p > 0x20 && *p < 0x7f && *p != '"' && *p != '\\' && *p != '%')
      tw_buf_addc(b, (char)*p);
    else
      tw_buf_printf(b, "%%%02X", *p);
  }
}

static void audit_signin(struct tw_oidc *o, const struct issuer_cfg *ic,
                         const struct tw_jwt *j, const struct rule *ru,
                         const struct tw_principal *who, bool ok,
                         int64_t exp_ms, const char *request_id,
                         const char *why) {
  if (!o->ten)
    return;
  struct tw_buf d;
  tw_buf_init(&d);
  char exp[40];
  tw_time_fmt_rfc3339(exp_ms, exp, sizeof exp);
  tw_buf_adds(&d, "iss=");
  clean(&d, ic->issuer);
  tw_buf_adds(&d, " sub=");
  clean(&d, tw_jwt_claim_str(j, "sub"));
  const char *jti = tw_jwt_claim_str(j, "jti");
  if (jti && strlen(jti) <= 128) {
    tw_buf_adds(&d, " jti=");
    clean(&d, jti);
  }
  if (ru)
    tw_buf_printf(&d, " rule=%s role=%s", ru->name, tw_role_str(ru->role));
  else {
    tw_buf_adds(&d, " rule=- role=- reason=");
    clean(&d, why);
  }
  tw_buf_printf(&d, " exp=%s", exp);
  char object[160];
  snprintf(object, sizeof object, "oidc/%s", ic->name);
  struct tw_audit_event ev = {.principal = who->name,
                              .tenant = who->tenant,
                              .action = "oidc sign-in",
                              .object = object,
                              .outcome = ok ? "ok" : "denied",
                              .request_id = request_id ? request_id : "",
                              .detail = d.data};
  struct tw_err err = {0};
  if (tw_tenancy_request_done(o->ten, &ev, NULL, &err))
    tw_log_error("audit", "request=%s oidc sign-in not recorded: %s",
                 request_id ? request_id : "-", err.msg);
  tw_buf_release(&d);
}

/* ---- sessions -------------------------------------------------------------- */

static void session_key(const char *tenant, const char *token,
                        unsigned char h[32]) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  unsigned int n = 32;
  EVP_DigestInit_ex(c, EVP_sha256(), NULL);
  EVP_DigestUpdate(c, tenant, strlen(tenant) + 1);
  EVP_DigestUpdate(c, token, strlen(token));
  EVP_DigestFinal_ex(c, h, &n);
  EVP_MD_CTX_free(c);
  h[0] |= 1; /* never all zeros: zero marks a free slot */
}

static bool session_get(struct tw_oidc *o, const unsigned char h[32],
                        int64_t now, struct session *out) {
  uint32_t at;
  memcpy(&at, h + 4, sizeof at);
  bool hit = false;
  pthread_mutex_lock(&o->smu);
  for (int i = 0; i < SESSION_PROBE && !hit; i++) {
    struct session *s = &o->s[(at + (uint32_t)i) % SESSIONS];
    if (!CRYPTO_memcmp(s->h, h, 32)) {
      if (now < s->until_ms) {
        s->used_ms = now;
        *out = *s;
        hit = true;
      } else {
        memset(s, 0, sizeof *s); /* expired: the token must pass again */
      }
    }
  }
  pthread_mutex_unlock(&o->smu);
  return hit;
}

static void session_put(struct tw_oidc *o, const struct session *ns) {
  uint32_t at;
  memcpy(&at, ns->h + 4, sizeof at);
  pthread_mutex_lock(&o->smu);
  struct session *slot = NULL;
  for (int i = 0; i < SESSION_PROBE; i++) {
    struct session *s = &o->s[(at + (uint32_t)i) % SESSIONS];
    if (!s->h[0] || !slot || s->used_ms < slot->used_ms)
      slot = s;
    if (!s->h[0])
      break;
  }
  /* full: the least recently used of the probed slots gives way (its
   * token is verified again on its next use) */
  *slot = *ns;
  pthread_mutex_unlock(&o->smu);
}

/* ---- authentication --------------------------------------------------------- */

static enum tw_oidc_result refuse(char *why, size_t whysz, const char *msg) {
  snprintf(why, whysz, "%s", msg);
  return TW_OIDC_REFUSED;
}

enum tw_oidc_result tw_oidc_authenticate(struct tw_oidc *o, const char *token,
                                         const char *tenant,
                                         const char *request_id,
                                         struct tw_principal *out, char *why,
                                         size_t whysz) {
  memset(out, 0, sizeof *out);
  why[0] = '\0';
  if (!tenant)
    tenant = "";
  if (*tenant && strcmp(tenant, TW_TENANT_GLOBAL) &&
      !tw_tenancy_name_ok(tenant)) {
    snprintf(why, whysz, "X-Tradewind-Tenant: not a tenant name");
    return TW_OIDC_NO_ROLE;
  }
  int64_t now = tw_clock_now_ms(o->clock);
  struct session s;
  memset(&s, 0, sizeof s);
  session_key(tenant, token, s.h);
  struct session hit;
  if (session_get(o, s.h, now, &hit)) {
    *out = hit.who;
    snprintf(why, whysz, "%s", hit.why);
    return hit.res;
  }
  struct tw_jwt j;
  struct tw_err err = {0};
  if (tw_jwt_parse(token, strlen(token), &j, &err))
    return refuse(why, whysz, err.msg);
  enum tw_oidc_result res = TW_OIDC_REFUSED;
  struct issuer *is = NULL;
  const char *iss = tw_jwt_claim_str(&j, "iss");
  for (size_t i = 0; iss && i < o->n && !is; i++)
    if (!strcmp(o->iss[i].cfg->issuer, iss))
      is = &o->iss[i];
  if (!is) {
    refuse(why, whysz, iss ? "iss is not a configured issuer"
                           : "the token has no iss claim");
    goto out;
  }
  const struct issuer_cfg *ic = is->cfg;
  /* times, with the skew; fractions of a second are allowed (RFC 7519
   * NumericDate) */
  double exp = 0, nbf = 0, iat = 0, now_s = (double)now / 1000.0;
  double skew = (double)ic->skew_s;
  bool has_exp, has_nbf, has_iat;
  if (!num_claim(&j, "exp", &exp, &has_exp) || !has_exp) {
    refuse(why, whysz, "exp is required and must be a number");
    goto out;
  }
  if (!num_claim(&j, "nbf", &nbf, &has_nbf) ||
      !num_claim(&j, "iat", &iat, &has_iat)) {
    refuse(why, whysz, "nbf and iat must be numbers");
    goto out;
  }
  if (exp > 32503680000.0 || exp < 0) { /* past the year 3000 */
    refuse(why, whysz, "exp is out of range");
    goto out;
  }
  if (now_s >= exp + skew) {
    refuse(why, whysz, "token expired");
    goto out;
  }
  if (has_nbf && now_s + skew < nbf) {
    refuse(why, whysz, "token not yet valid (nbf)");
    goto out;
  }
  if (has_iat && now_s + skew < iat) {
    refuse(why, whysz, "token issued in the future (iat)");
    goto out;
  }
  if (!aud_ok(&j, ic)) {
    snprintf(why, whysz, "aud holds no audience of issuer %s", ic->name);
    goto out;
  }
  const char *sub = tw_jwt_claim_str(&j, "sub");
  if (!sub || !*sub || strlen(sub) > 255) {
    refuse(why, whysz, "sub must be a string of 1..255 bytes");
    goto out;
  }
  /* the key: cached, refreshed when stale, refetched for an unknown kid */
  pthread_mutex_lock(&is->mu);
  int64_t seen = is->fetched_ms;
  bool stale = !seen || now - seen >= ic->refresh_s * 1000;
  bool ambiguous = false;
  EVP_PKEY *key = stale ? NULL : find_key(is, &j, &ambiguous);
  pthread_mutex_unlock(&is->mu);
  if (!key && !ambiguous) {
    refetch(o, is, seen);
    pthread_mutex_lock(&is->mu);
    key = find_key(is, &j, &ambiguous);
    seen = is->fetched_ms;
    pthread_mutex_unlock(&is->mu);
  }
  if (!key) {
    if (!seen) {
      snprintf(why, whysz, "the keys of issuer %s could not be fetched",
               ic->name);
      res = TW_OIDC_UNAVAILABLE;
    } else if (ambiguous) {
      snprintf(why, whysz, "the token has no kid and issuer %s has several "
               "keys", ic->name);
    } else {
      bool plain = strlen(j.kid) <= 64;
      for (const char *k = j.kid; plain && *k; k++)
        plain = name_byte((unsigned char)*k);
      snprintf(why, whysz, "issuer %s has no %s key%s%s", ic->name,
               j.alg == TW_JWT_RS256 ? "RSA" : "EC P-256",
               j.kid[0] ? " with kid " : " (the token names no kid)",
               !j.kid[0] ? "" : plain ? j.kid : "(unprintable)");
    }
    goto out;
  }
  enum tw_rc vrc = tw_jwt_verify(&j, key, &err);
  EVP_PKEY_free(key);
  if (vrc) {
    refuse(why, whysz, err.msg);
    goto out;
  }
  /* the mapping: the first rule that matches (in the tenant asked for) */
  const struct rule *granted = NULL;
  char name[TW_NAME_MAX] = "";
  for (size_t r = 0; r < ic->n_rules && !granted; r++) {
    const struct rule *ru = &ic->rules[r];
    if (*tenant && strcmp(ru->tenant, tenant))
      continue;
    bool all = true;
    for (size_t m = 0; m < ru->n_m && all; m++)
      all = claim_matches(&j, &ru->m[m]);
    if (!all)
      continue;
    if (!principal_name(ic, ru, &j, name, sizeof name, why, whysz))
      break;
    struct tw_tenant_info ti;
    if (ru->role != TW_ROLE_ADMIN && o->ten &&
        tw_tenancy_tenant_get(o->ten, ru->tenant, &ti, NULL) != TW_OK) {
      snprintf(why, whysz, "rule %s grants in tenant %s, which does not exist",
               ru->name, ru->tenant);
      break;
    }
    granted = ru;
  }
  s.until_ms = (int64_t)(exp + skew) * 1000;
  s.used_ms = now;
  /* sessions and the rate limit know the identity by a digest of it */
  unsigned char idh[SHA256_DIGEST_LENGTH];
  char idsrc[640];
  snprintf(idsrc, sizeof idsrc, "%s\n%s", ic->issuer, sub);
  SHA256((const unsigned char *)idsrc, strlen(idsrc), idh);
  char tid[24] = "oidc";
  for (int i = 0; i < 6; i++)
    snprintf(tid + 4 + 2 * i, sizeof tid - 4 - 2 * (size_t)i, "%02x", idh[i]);
  if (granted) {
    snprintf(s.who.name, sizeof s.who.name, "%s", name);
    snprintf(s.who.tenant, sizeof s.who.tenant, "%s", granted->tenant);
    s.who.role = granted->role;
    s.who.service = granted->role == TW_ROLE_CI;
    s.res = TW_OIDC_OK;
  } else {
    /* nobody to act as: named for the audit and the answer only */
    snprintf(s.who.name, sizeof s.who.name, "%s:%.*s", ic->name,
             (int)(sizeof s.who.name - strlen(ic->name) - 2), sub);
    for (char *p = s.who.name; *p; p++)
      if (!name_byte((unsigned char)*p))
        *p = '?';
    if (!why[0])
      snprintf(why, whysz, "no rule of issuer %s grants a role to this "
               "identity%s%s", ic->name, *tenant ? " in tenant " : "", tenant);
    snprintf(s.why, sizeof s.why, "%s", why);
    s.res = TW_OIDC_NO_ROLE;
  }
  s.who.created_ms = now;
  snprintf(s.who.token_id, sizeof s.who.token_id, "%s", tid);
  audit_signin(o, ic, &j, granted, &s.who, granted != NULL, s.until_ms,
               request_id, why);
  tw_log_info("oidc", "request=%s issuer=%s principal=%s tenant=%s role=%s "
              "signed in%s", request_id ? request_id : "-", ic->name,
              s.who.name, granted ? granted->tenant : "-",
              granted ? tw_role_str(granted->role) : "none",
              granted ? "" : " without a role");
  session_put(o, &s);
  *out = s.who;
  res = s.res;
out:
  tw_jwt_release(&j);
  return res;
}
