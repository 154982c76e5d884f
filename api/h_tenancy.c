/* h_tenancy.c - the routes of identity and money: whoami, tokens, users,
 * tenants, quotas, budgets, the audit log and sealed secrets.
 *
 * api/auth.c has authenticated the caller and applied the route's rule
 * before any of these runs; handlers of body and global routes narrow
 * what they touch to the caller's reach with tw_auth_check() and
 * tw_auth_perm().  Bodies are JSON, parsed into C structs here; money is
 * integer micro-USD on the wire. */
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/auth_int.h"
#include "api/auth_routes.h"
#include "broker/base/node.h"
#include "broker/tenancy/audit.h"
#include "broker/base/clock.h"
#include "broker/tenancy/secrets.h"
#include "broker/core/spec.h"
#include "broker/tenancy/tenancy.h"

/* Tokens live this long unless the request says otherwise. */
#define DEFAULT_TOKEN_TTL_S (90LL * 86400)

/* ---- helpers ----------------------------------------------------------------
 */

static struct tw_tenancy *need_tenancy(struct tw_req *r) {
  struct tw_tenancy *t = tw_auth_tenancy(r);
  if (!t)
    tw_problem(r, 503, "unavailable", NULL,
               "this server runs without principals and quotas (no tenancy)");
  return t;
}

/* The body as a JSON object, or NULL after answering 400/415. */
static json_t *body_object(struct tw_req *r) {
  const char *ct = tw_req_header(r, "Content-Type");
  if (ct && strncasecmp(ct, "application/json", 16)) {
    tw_problem(r, 415, "unsupported-media-type", NULL,
               "Content-Type %s is not accepted: use application/json", ct);
    return NULL;
  }
  json_error_t je;
  json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len,
                         JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    /* a value jansson cannot hold is named by its member, not by
     * jansson's text (which names its own flags) */
    bool range = strstr(je.text, "too big integer") ||
                 strstr(je.text, "real number overflow");
    if (range || strstr(je.text, "\\u0000")) {
      char path[256];
      tw_json_path_at(r->body.data ? r->body.data : "", r->body.len,
                      (size_t)je.position, path, sizeof path);
      tw_problem(r, 400, "invalid-field", *path ? path : NULL,
                 "%s: %s (line %d, column %d)", *path ? path : "body",
                 range ? "number out of range"
                       : "\\u0000 (a NUL byte) is not accepted",
                 je.line, je.column);
      return NULL;
    }
    tw_problem(r, 400, "malformed", NULL,
               "body: not JSON: %s (line %d, column %d)", je.text, je.line,
               je.column);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    tw_problem(r, 400, "malformed", NULL, "body: expected a JSON object");
    return NULL;
  }
  return j;
}

/* Refuses members the handler does not know, naming the closest. */
static bool known_keys(struct tw_req *r, json_t *j, const char *const *keys) {
  const char *k;
  json_t *v;
  json_object_foreach(j, k, v) {
    size_t i;
    for (i = 0; keys[i]; i++)
      if (!strcmp(keys[i], k))
        break;
    if (!keys[i]) {
      tw_problem(r, 400, "invalid-field", k, "/%s: unknown member", k);
      return false;
    }
  }
  return true;
}

/* An optional string member: *out NULL when absent.  false: answered. */
static bool get_str(struct tw_req *r, json_t *j, const char *key,
                    const char **out) {
  json_t *v = json_object_get(j, key);
  *out = NULL;
  if (!v || json_is_null(v))
    return true;
  if (!json_is_string(v)) {
    tw_problem(r, 400, "invalid-field", key, "/%s: expected a string", key);
    return false;
  }
  *out = json_string_value(v);
  return true;
}

static bool get_int(struct tw_req *r, json_t *j, const char *key, int64_t min,
                    int64_t max, bool *present, int64_t *out) {
  json_t *v = json_object_get(j, key);
  *present = false;
  if (!v || json_is_null(v))
    return true;
  if (!json_is_integer(v) || json_integer_value(v) < min ||
      json_integer_value(v) > max) {
    tw_problem(r, 400, "invalid-field", key,
               "/%s: expected an integer from %" PRId64 " to %" PRId64, key,
               min, max);
    return false;
  }
  *present = true;
  *out = json_integer_value(v);
  return true;
}

static bool get_bool(struct tw_req *r, json_t *j, const char *key, bool *out) {
  json_t *v = json_object_get(j, key);
  if (!v || json_is_null(v))
    return true;
  if (!json_is_boolean(v)) {
    tw_problem(r, 400, "invalid-field", key, "/%s: expected true or false",
               key);
    return false;
  }
  *out = json_is_true(v);
  return true;
}

static void add_time(struct tw_buf *b, const char *key, int64_t ms) {
  if (!ms) {
    tw_buf_printf(b, ",\"%s\":null", key);
    return;
  }
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

/* "\"q7\"" or W/"q7" -> 7; 0 when absent or not ours. */
static int64_t if_match(struct tw_req *r, char kind) {
  const char *h = tw_req_header(r, "If-Match");
  if (!h)
    return 0;
  if (!strncmp(h, "W/", 2))
    h += 2;
  if (h[0] != '"' || h[1] != kind)
    return -1;
  char *end;
  long long v = strtoll(h + 2, &end, 10);
  return *end == '"' && v > 0 ? v : -1;
}

static void etag(struct tw_req *r, char kind, int64_t version) {
  char e[32];
  snprintf(e, sizeof e, "\"%c%" PRId64 "\"", kind, version);
  tw_req_add_header(r, "ETag", e);
}

/* ---- whoami -----------------------------------------------------------------
 */

static void render_principal(struct tw_buf *b, const struct tw_principal *p) {
  tw_buf_adds(b, "{\"name\":");
  tw_buf_json_str(b, p->name);
  tw_buf_adds(b, ",\"tenant\":");
  tw_buf_json_str(b, p->tenant);
  tw_buf_printf(b, ",\"role\":\"%s\",\"service\":%s,\"disabled\":%s",
                tw_role_str(p->role), p->service ? "true" : "false",
                p->disabled ? "true" : "false");
  add_time(b, "created_at", p->created_ms);
  tw_buf_addc(b, '}');
}

void tw_h_whoami(struct tw_req *r) {
  const struct tw_principal *p = tw_auth_who(r);
  render_principal(&r->out, p);
  /* the token id is public; the token itself is never echoed */
  r->out.len--;
  tw_buf_adds(&r->out, ",\"token_id\":");
  if (p->token_id[0])
    tw_buf_json_str(&r->out, p->token_id);
  else
    tw_buf_adds(&r->out, "null");
  tw_buf_addc(&r->out, '}');
  tw_req_json(r, 200);
}

/* ---- tokens
 * ------------------------------------------------------------------- */

static void render_token(struct tw_buf *b, const struct tw_token_info *t) {
  tw_buf_adds(b, "{\"id\":");
  tw_buf_json_str(b, t->id);
  tw_buf_adds(b, ",\"principal\":");
  tw_buf_json_str(b, t->principal);
  tw_buf_adds(b, ",\"tenant\":");
  tw_buf_json_str(b, t->tenant);
  tw_buf_adds(b, ",\"name\":");
  tw_buf_json_str(b, t->name);
  add_time(b, "created_at", t->created_ms);
  add_time(b, "expires_at", t->expires_ms);
  add_time(b, "revoked_at", t->revoked_ms);
  tw_buf_addc(b, '}');
}

void tw_h_tokens_create(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {"principal", "name", "ttl", NULL};
  const char *principal, *name, *ttl;
  if (!known_keys(r, j, keys) || !get_str(r, j, "principal", &principal) ||
      !get_str(r, j, "name", &name) || !get_str(r, j, "ttl", &ttl))
    goto out;
  const struct tw_principal *who = tw_auth_who(r);
  if (!principal)
    principal = who->name;
  int64_t ttl_s = DEFAULT_TOKEN_TTL_S;
  if (ttl && !strcmp(ttl, "never"))
    ttl_s = 0;
  else if (ttl && (tw_parse_duration_s(ttl, &ttl_s) || ttl_s < 60 ||
                   ttl_s > 10LL * 365 * 86400)) {
    tw_problem(
        r, 400, "invalid-field", "ttl",
        "/ttl: expected a duration from 1m to 3650d (\"90d\", \"12h\") or "
        "\"never\", got \"%.40s\"",
        ttl);
    goto out;
  }
  struct tw_principal p;
  struct tw_err err = {0};
  char what[96];
  snprintf(what, sizeof what, "principal %.63s", principal);
  if (tw_tenancy_user_get(t, principal, &p, &err)) {
    tw_problem(r, 404, "not-found", "principal", "%s not found", what);
    goto out;
  }
  if (!tw_auth_check(
          r, strcmp(p.tenant, TW_TENANT_GLOBAL) ? p.tenant : TW_TENANT_GLOBAL,
          p.name, what))
    goto out;
  char tok[TW_TOKEN_LEN + 1];
  struct tw_token_info info;
  if (tw_tenancy_token_create(t, principal, name, ttl_s * 1000, tok, &info,
                              &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  tw_auth_set_object(r, NULL, info.id);
  render_token(&r->out, &info);
  r->out.len--;
  tw_buf_adds(&r->out, ",\"token\":");
  tw_buf_json_str(&r->out, tok);
  tw_buf_addc(&r->out, '}');
  OPENSSL_cleanse(tok, sizeof tok);
  tw_req_add_header(r, "Cache-Control", "no-store");
  tw_req_json(r, 201);
out:
  json_decref(j);
}

void tw_h_tokens_list(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  const struct tw_principal *who = tw_auth_who(r);
  const char *principal = tw_req_query(r, "principal");
  const char *tenant = tw_req_query(r, "tenant");
  switch (tw_auth_perm(r)) {
  case TW_PERM_ANY:
    break;
  case TW_PERM_TENANT:
    if (tenant && strcmp(tenant, who->tenant)) {
      tw_problem(r, 404, "not-found", "tenant", "tenant %s not found", tenant);
      return;
    }
    tenant = who->tenant;
    break;
  default:
    if (principal && strcmp(principal, who->name)) {
      tw_problem(r, 404, "not-found", "principal", "principal %s not found",
                 principal);
      return;
    }
    principal = who->name;
    break;
  }
  struct tw_token_info *items = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_tenancy_token_list(t, principal && *principal ? principal : NULL,
                            tenant && *tenant ? tenant : NULL, &items, &n,
                            &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    render_token(&r->out, &items[i]);
  }
  tw_buf_adds(&r->out, "]}");
  free(items);
  tw_req_json(r, 200);
}

void tw_h_tokens_revoke(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  struct tw_err err = {0};
  struct tw_token_info info;
  if (tw_tenancy_token_revoke(t, r->params[0], &err) ||
      tw_tenancy_token_get(t, r->params[0], &info, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render_token(&r->out, &info);
  tw_req_json(r, 200);
}

/* ---- users
 * ---------------------------------------------------------------------- */

void tw_h_users_create(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {"name", "tenant", "role", "service", NULL};
  const char *name, *tenant, *role;
  struct tw_principal p;
  memset(&p, 0, sizeof p);
  if (!known_keys(r, j, keys) || !get_str(r, j, "name", &name) ||
      !get_str(r, j, "tenant", &tenant) || !get_str(r, j, "role", &role) ||
      !get_bool(r, j, "service", &p.service))
    goto out;
  const struct tw_principal *who = tw_auth_who(r);
  if (!name || !role) {
    tw_problem(r, 400, "invalid-field", name ? "role" : "name", "/%s: required",
               name ? "role" : "name");
    goto out;
  }
  if (!tw_role_parse(role, &p.role)) {
    tw_problem(
        r, 400, "invalid-field", "role",
        "/role: expected admin, tenant-admin, member, viewer, finance, ci or metrics, "
        "got \"%.40s\"",
        role);
    goto out;
  }
  if (!tenant)
    tenant = p.role == TW_ROLE_ADMIN ? TW_TENANT_GLOBAL : who->tenant;
  if (strlen(name) >= sizeof p.name || strlen(tenant) >= sizeof p.tenant) {
    tw_problem(r, 400, "invalid-field", "name", "/name: at most 63 characters");
    goto out;
  }
  snprintf(p.name, sizeof p.name, "%s", name);
  snprintf(p.tenant, sizeof p.tenant, "%s", tenant);
  char what[96];
  snprintf(what, sizeof what, "tenant %.63s", tenant);
  if (!tw_auth_check(r, tenant, NULL, what))
    goto out;
  tw_auth_set_object(r, NULL, name);
  struct tw_err err = {0};
  if (tw_tenancy_user_create(t, &p, &err) ||
      tw_tenancy_user_get(t, name, &p, &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  render_principal(&r->out, &p);
  tw_req_json(r, 201);
out:
  json_decref(j);
}

void tw_h_users_list(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  const char *tenant = tw_req_query(r, "tenant");
  struct tw_principal *items = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_tenancy_user_list(t, tenant && *tenant ? tenant : NULL, &items, &n,
                           &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    render_principal(&r->out, &items[i]);
  }
  tw_buf_adds(&r->out, "]}");
  free(items);
  tw_req_json(r, 200);
}

void tw_h_users_disable(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  if (!strcmp(r->params[0], tw_auth_who(r)->name)) {
    tw_problem(r, 409, "conflict", NULL,
               "principal %s may not disable itself: ask another admin",
               r->params[0]);
    return;
  }
  struct tw_principal p;
  struct tw_err err = {0};
  if (tw_tenancy_user_disable(t, r->params[0], &err) ||
      tw_tenancy_user_get(t, r->params[0], &p, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render_principal(&r->out, &p);
  tw_req_json(r, 200);
}

/* ---- tenants
 * ----------------------------------------------------------------------- */

static void render_tenant(struct tw_buf *b, const struct tw_tenant_info *t) {
  tw_buf_adds(b, "{\"name\":");
  tw_buf_json_str(b, t->name);
  tw_buf_adds(b, ",\"cohort\":");
  if (t->cohort[0])
    tw_buf_json_str(b, t->cohort);
  else
    tw_buf_adds(b, "null");
  add_time(b, "created_at", t->created_ms);
  tw_buf_addc(b, '}');
}

void tw_h_tenants_create(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {"name", NULL};
  const char *name;
  if (!known_keys(r, j, keys) || !get_str(r, j, "name", &name))
    goto out;
  if (!name) {
    tw_problem(r, 400, "invalid-field", "name", "/name: required");
    goto out;
  }
  tw_auth_set_object(r, name, name);
  struct tw_err err = {0};
  struct tw_tenant_info info;
  if (tw_tenancy_tenant_create(t, name, &err) ||
      tw_tenancy_tenant_get(t, name, &info, &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  render_tenant(&r->out, &info);
  tw_req_json(r, 201);
out:
  json_decref(j);
}

void tw_h_tenants_list(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  struct tw_tenant_info *items = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_tenancy_tenant_list(t, &items, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  const struct tw_principal *who = tw_auth_who(r);
  bool all = tw_auth_perm(r) == TW_PERM_ANY;
  tw_buf_adds(&r->out, "{\"items\":[");
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    if (!all && strcmp(items[i].name, who->tenant))
      continue;
    if (!first)
      tw_buf_addc(&r->out, ',');
    first = false;
    render_tenant(&r->out, &items[i]);
  }
  tw_buf_adds(&r->out, "]}");
  free(items);
  tw_req_json(r, 200);
}

/* ---- quotas
 * ----------------------------------------------------------------------------
 */

static void render_limit(struct tw_buf *b, const char *key,
                         const struct tw_quota_limit *l, bool *first) {
  if (l->limit < 0)
    return;
  tw_buf_printf(b, "%s\"%s\":{\"limit\":%" PRId64 ",\"borrow\":%" PRId64 "}",
                *first ? "" : ",", key, l->limit, l->borrow);
  *first = false;
}

static void render_quota(struct tw_buf *b, const struct tw_quota *q) {
  tw_buf_adds(b, "{\"tenant\":");
  tw_buf_json_str(b, q->tenant);
  tw_buf_adds(b, ",\"cohort\":");
  if (q->cohort[0])
    tw_buf_json_str(b, q->cohort);
  else
    tw_buf_adds(b, "null");
  tw_buf_printf(b, ",\"spot_share_pct\":%d,\"limits\":{", q->spot_share_pct);
  bool first = true;
  render_limit(b, "vcpus", &q->vcpus, &first);
  render_limit(b, "jobs", &q->jobs, &first);
  tw_buf_adds(b, "},\"gpus\":{");
  first = true;
  for (size_t i = 0; i < q->n_gpus; i++)
    render_limit(b, q->gpus[i].name, &q->gpus[i].q, &first);
  tw_buf_printf(b, "},\"version\":%" PRId64 "}", q->version);
}

void tw_h_quota_get(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  struct tw_quota q;
  struct tw_err err = {0};
  if (tw_tenancy_quota_get(t, r->params[0], &q, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render_quota(&r->out, &q);
  etag(r, 'q', q.version);
  tw_req_json(r, 200);
}

/* {"limit": N, "borrow": M} or a bare N into *l; false: answered. */
static bool parse_limit(struct tw_req *r, json_t *v, const char *path,
                        struct tw_quota_limit *l) {
  l->limit = -1;
  l->borrow = 0;
  if (json_is_null(v))
    return true;
  json_t *lim = v, *bor = NULL;
  if (json_is_object(v)) {
    lim = json_object_get(v, "limit");
    bor = json_object_get(v, "borrow");
    const char *k;
    json_t *x;
    json_object_foreach(v, k,
                        x) if (strcmp(k, "limit") && strcmp(k, "borrow")) {
      tw_problem(r, 400, "invalid-field", path, "%s/%s: unknown member", path,
                 k);
      return false;
    }
  }
  if (!lim || !json_is_integer(lim) || json_integer_value(lim) < 0 ||
      (bor && (!json_is_integer(bor) || json_integer_value(bor) < 0))) {
    tw_problem(r, 400, "invalid-field", path,
               "%s: expected a count >= 0, or {\"limit\": N, \"borrow\": M}",
               path);
    return false;
  }
  l->limit = json_integer_value(lim);
  l->borrow = bor ? json_integer_value(bor) : 0;
  return true;
}

void tw_h_quota_put(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  int64_t ver = if_match(r, 'q');
  if (ver == 0) {
    tw_problem(r, 428, "precondition-required", "If-Match",
               "If-Match is required: GET the quota and send its ETag back");
    return;
  }
  if (ver < 0) {
    tw_problem(r, 412, "precondition-failed", "If-Match",
               "If-Match does not name a version of this quota");
    return;
  }
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {
      "cohort", "spot_share_pct", "limits", "gpus", "tenant", "version", NULL};
  struct tw_quota q;
  tw_quota_init(&q);
  const char *cohort;
  bool has;
  int64_t share = 100;
  if (!known_keys(r, j, keys) || !get_str(r, j, "cohort", &cohort) ||
      !get_int(r, j, "spot_share_pct", 0, 100, &has, &share))
    goto out;
  q.spot_share_pct = (int)share;
  if (cohort)
    snprintf(q.cohort, sizeof q.cohort, "%.63s", cohort);
  json_t *limits = json_object_get(j, "limits"),
         *gpus = json_object_get(j, "gpus");
  if (limits && !json_is_null(limits)) {
    if (!json_is_object(limits)) {
      tw_problem(r, 400, "invalid-field", "limits",
                 "/limits: expected an object");
      goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(limits, k, v) {
      char path[80];
      snprintf(path, sizeof path, "/limits/%.40s", k);
      struct tw_quota_limit *dst = !strcmp(k, "vcpus")  ? &q.vcpus
                                   : !strcmp(k, "jobs") ? &q.jobs
                                                        : NULL;
      if (!dst) {
        tw_problem(r, 400, "invalid-field", "limits",
                   "%s: unknown limit (vcpus or jobs; GPUs go under /gpus)",
                   path);
        goto out;
      }
      if (!parse_limit(r, v, path, dst))
        goto out;
    }
  }
  if (gpus && !json_is_null(gpus)) {
    if (!json_is_object(gpus)) {
      tw_problem(r, 400, "invalid-field", "gpus",
                 "/gpus: expected an object of accelerator names");
      goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(gpus, k, v) {
      char path[80];
      snprintf(path, sizeof path, "/gpus/%.40s", k);
      if (q.n_gpus == TW_QUOTA_GPU_TYPES ||
          strlen(k) >= sizeof q.gpus[0].name) {
        tw_problem(r, 400, "invalid-field", "gpus",
                   "%s: too many types or too long", path);
        goto out;
      }
      struct tw_quota_gpu *g = &q.gpus[q.n_gpus];
      snprintf(g->name, sizeof g->name, "%s", k);
      if (!parse_limit(r, v, path, &g->q))
        goto out;
      if (g->q.limit >= 0)
        q.n_gpus++;
    }
  }
  struct tw_quota out;
  struct tw_err err = {0};
  if (tw_tenancy_quota_set(t, r->params[0], &q, ver, &out, &err)) {
    if (err.rc == TW_E_CONFLICT)
      tw_problem(r, 412, "precondition-failed", "If-Match", "%s", err.msg);
    else
      tw_problem_err(r, &err);
    goto out;
  }
  render_quota(&r->out, &out);
  etag(r, 'q', out.version);
  tw_req_json(r, 200);
out:
  json_decref(j);
}

/* ---- budgets
 * ------------------------------------------------------------------------------
 */

static void render_budget(struct tw_buf *b, const struct tw_budget_status *s) {
  const struct tw_budget *x = &s->budget;
  tw_buf_adds(b, "{\"tenant\":");
  tw_buf_json_str(b, x->tenant);
  tw_buf_adds(b, ",\"project\":");
  if (x->project[0])
    tw_buf_json_str(b, x->project);
  else
    tw_buf_adds(b, "null");
  tw_buf_printf(
      b, ",\"period\":\"%s\",\"limit_uusd\":%" PRId64 ",\"thresholds_pct\":[",
      tw_budget_period_str(x->period), x->limit_uusd);
  for (size_t i = 0; i < x->n_thresholds; i++)
    tw_buf_printf(b, "%s%d", i ? "," : "", x->thresholds_pct[i]);
  tw_buf_printf(b, "],\"mode\":\"%s\",\"stop_running\":%s,\"webhook\":",
                x->hard ? "hard" : "soft", x->stop_running ? "true" : "false");
  if (x->webhook[0])
    tw_buf_json_str(b, x->webhook);
  else
    tw_buf_adds(b, "null");
  tw_buf_printf(b, ",\"version\":%" PRId64 ",\"status\":{", x->version);
  char t0[40], t1[40];
  tw_time_fmt_rfc3339(s->period_start_ms, t0, sizeof t0);
  tw_time_fmt_rfc3339(s->period_end_ms, t1, sizeof t1);
  tw_buf_printf(
      b,
      "\"period_start\":\"%s\",\"period_end\":\"%s\",\"spent_uusd\":%" PRId64
      ",\"accrued_uusd\":%" PRId64 ",\"committed_uusd\":%" PRId64
      ",\"forecast_uusd\":%" PRId64 ",\"remaining_uusd\":%" PRId64
      ",\"alerted_pct\":%d}}",
      t0, t1, s->spent_uusd, s->accrued_uusd, s->committed_uusd,
      s->forecast_uusd,
      x->limit_uusd - s->spent_uusd - s->committed_uusd, s->alerted_pct);
}

void tw_h_budgets_list(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  struct tw_budget *items = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  struct tw_tenant_info ti;
  if (tw_tenancy_tenant_get(t, r->params[0], &ti, &err) ||
      tw_tenancy_budget_list(t, r->params[0], &items, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    struct tw_budget_status s;
    if (tw_tenancy_budget_status(t, items[i].tenant, items[i].project, &s,
                                 &err)) {
      free(items);
      tw_problem_err(r, &err);
      return;
    }
    if (i)
      tw_buf_addc(&r->out, ',');
    render_budget(&r->out, &s);
  }
  tw_buf_adds(&r->out, "]}");
  free(items);
  tw_req_json(r, 200);
}

void tw_h_budget_get(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  struct tw_budget_status s;
  struct tw_err err = {0};
  if (tw_tenancy_budget_status(t, r->params[0],
                               r->params[1] ? r->params[1] : "", &s, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render_budget(&r->out, &s);
  etag(r, 'b', s.budget.version);
  tw_req_json(r, 200);
}

void tw_h_budget_put(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  const char *tenant = r->params[0],
             *project = r->params[1] ? r->params[1] : "";
  struct tw_budget cur;
  struct tw_err err = {0};
  bool exists = tw_tenancy_budget_get(t, tenant, project, &cur, &err) == TW_OK;
  tw_err_clear(&err); /* its 404 is no answer: the first error would stick */
  int64_t ver = if_match(r, 'b');
  if (exists && ver == 0) {
    tw_problem(r, 428, "precondition-required", "If-Match",
               "If-Match is required to change a budget: GET it and send its "
               "ETag back");
    return;
  }
  if (ver < 0 || (!exists && ver > 0)) {
    tw_problem(r, 412, "precondition-failed", "If-Match",
               "If-Match does not name a version of this budget");
    return;
  }
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {
      "limit_uusd", "period", "thresholds_pct", "mode",    "stop_running",
      "webhook",    "tenant", "project",        "version", "status",
      NULL};
  struct tw_budget b;
  tw_budget_init(&b);
  snprintf(b.tenant, sizeof b.tenant, "%s", tenant);
  snprintf(b.project, sizeof b.project, "%s", project);
  const char *period, *mode, *hook;
  bool has;
  if (!known_keys(r, j, keys) ||
      !get_int(r, j, "limit_uusd", 0, 1000000000LL * 1000000, &has,
               &b.limit_uusd) ||
      !get_str(r, j, "period", &period) || !get_str(r, j, "mode", &mode) ||
      !get_str(r, j, "webhook", &hook) ||
      !get_bool(r, j, "stop_running", &b.stop_running))
    goto out;
  if (!has) {
    tw_problem(r, 400, "invalid-field", "limit_uusd",
               "/limit_uusd: required (micro-USD: 100 USD is 100000000)");
    goto out;
  }
  if (period && !tw_budget_period_parse(period, &b.period)) {
    tw_problem(r, 400, "invalid-field", "period",
               "/period: expected monthly, weekly or daily, got \"%.20s\"",
               period);
    goto out;
  }
  if (mode && strcmp(mode, "hard") && strcmp(mode, "soft")) {
    tw_problem(r, 400, "invalid-field", "mode", "/mode: expected hard or soft");
    goto out;
  }
  b.hard = mode && !strcmp(mode, "hard");
  if (hook) {
    if (strlen(hook) >= sizeof b.webhook) {
      tw_problem(r, 400, "invalid-field", "webhook", "/webhook: too long");
      goto out;
    }
    snprintf(b.webhook, sizeof b.webhook, "%s", hook);
  }
  json_t *thr = json_object_get(j, "thresholds_pct");
  if (thr && !json_is_null(thr)) {
    if (!json_is_array(thr) || json_array_size(thr) > TW_BUDGET_THRESHOLDS) {
      tw_problem(r, 400, "invalid-field", "thresholds_pct",
                 "/thresholds_pct: expected up to %d percentages",
                 TW_BUDGET_THRESHOLDS);
      goto out;
    }
    b.n_thresholds = 0;
    size_t i;
    json_t *v;
    json_array_foreach(thr, i, v) {
      if (!json_is_integer(v) || json_integer_value(v) < 1 ||
          json_integer_value(v) > 1000) {
        tw_problem(r, 400, "invalid-field", "thresholds_pct",
                   "/thresholds_pct/%zu: expected a percentage from 1 to 1000",
                   i);
        goto out;
      }
      b.thresholds_pct[b.n_thresholds++] = (int)json_integer_value(v);
    }
  }
  tw_auth_set_object(r, tenant, project[0] ? project : tenant);
  struct tw_budget saved;
  if (tw_tenancy_budget_set(t, &b, ver, &saved, &err)) {
    if (err.rc == TW_E_CONFLICT)
      tw_problem(r, 412, "precondition-failed", "If-Match", "%s", err.msg);
    else
      tw_problem_err(r, &err);
    goto out;
  }
  struct tw_budget_status s;
  if (tw_tenancy_budget_status(t, tenant, project, &s, &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  render_budget(&r->out, &s);
  etag(r, 'b', saved.version);
  tw_req_json(r, exists ? 200 : 201);
out:
  json_decref(j);
}

/* ---- audit
 * ------------------------------------------------------------------------------------
 */

static bool parse_seq(const char *s, int64_t *out) {
  if (!s || !*s || strlen(s) > 18)
    return false;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  *out = strtoll(s, NULL, 10);
  return true;
}

void tw_h_audit_list(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  static const char *const params[] = {
      "after",     "limit",  "since",   "until",  "tenant",
      "principal", "action", "outcome", "format", NULL};
  if (!tw_req_known_query(r, params))
    return;
  struct tw_audit_filter f = {.limit = 100};
  const char *v;
  int64_t n;
  if ((v = tw_req_query(r, "after")) && !parse_seq(v, &f.after_seq)) {
    tw_problem(r, 400, "invalid-field", "after",
               "after: expected a sequence number");
    return;
  }
  if ((v = tw_req_query(r, "limit")) &&
      (!parse_seq(v, &n) || n < 1 || n > 10000)) {
    tw_problem(r, 400, "invalid-field", "limit", "limit: expected 1 to 10000");
    return;
  } else if (v) {
    f.limit = (int)n;
  }
  if ((v = tw_req_query(r, "since")) && tw_time_parse_rfc3339(v, &f.since_ms)) {
    tw_problem(r, 400, "invalid-field", "since",
               "since: expected an RFC 3339 time");
    return;
  }
  if ((v = tw_req_query(r, "until")) && tw_time_parse_rfc3339(v, &f.until_ms)) {
    tw_problem(r, 400, "invalid-field", "until",
               "until: expected an RFC 3339 time");
    return;
  }
  if (f.since_ms && f.until_ms && f.since_ms > f.until_ms) {
    tw_problem(r, 400, "invalid-field", "until",
               "until: before since, so nothing could match");
    return;
  }
  const char *tenant = tw_req_query(r, "tenant");
  f.tenant = tenant && *tenant ? tenant : NULL;
  f.principal = tw_req_query(r, "principal");
  f.action = tw_req_query(r, "action");
  f.outcome = tw_req_query(r, "outcome");
  static const char *const outcomes[] = {"ok", "denied", "refused", "error",
                                         NULL};
  size_t o = 0;
  while (f.outcome && outcomes[o] && strcmp(outcomes[o], f.outcome))
    o++;
  if (f.outcome && !outcomes[o]) {
    tw_problem(r, 400, "invalid-field", "outcome",
               "outcome: expected ok, denied, refused or error, got \"%.32s\"",
               f.outcome);
    return;
  }
  const char *const named[][2] = {
      {"tenant", f.tenant}, {"principal", f.principal}, {"action", f.action}};
  for (size_t i = 0; i < 3; i++) {
    const char *x = named[i][1];
    bool ok = !x || (*x && strlen(x) <= 160);
    for (const unsigned char *p = (const unsigned char *)x; ok && p && *p; p++)
      ok = *p >= 0x20 && *p != 0x7f;
    if (!ok) {
      tw_problem(r, 400, "invalid-field", named[i][0],
                 "%s: expected 1 to 160 printable characters", named[i][0]);
      return;
    }
  }
  const char *format = tw_req_query(r, "format");
  bool jsonl = format && !strcmp(format, "jsonl");
  if (format && !jsonl && strcmp(format, "json")) {
    tw_problem(r, 400, "invalid-field", "format",
               "format: expected json or jsonl");
    return;
  }
  struct tw_audit_entry *items = NULL;
  size_t count = 0;
  int64_t next = 0;
  struct tw_err err = {0};
  if (tw_audit_list(tw_tenancy_audit(t), &f, &items, &count, &next, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  char cur[32];
  snprintf(cur, sizeof cur, "%" PRId64, next);
  if (jsonl) {
    for (size_t i = 0; i < count; i++) {
      tw_audit_entry_json(&items[i], &r->out);
      tw_buf_addc(&r->out, '\n');
    }
    if (next)
      tw_req_add_header(r, "Tradewind-Next-Cursor", cur);
    r->status = 200;
    r->content_type = "application/jsonl";
  } else {
    tw_buf_adds(&r->out, "{\"items\":[");
    for (size_t i = 0; i < count; i++) {
      if (i)
        tw_buf_addc(&r->out, ',');
      tw_audit_entry_json(&items[i], &r->out);
    }
    if (next)
      tw_buf_printf(&r->out, "],\"next_cursor\":\"%s\"}", cur);
    else
      tw_buf_adds(&r->out, "],\"next_cursor\":null}");
    tw_req_json(r, 200);
  }
  tw_audit_entries_free(items, count);
}

void tw_h_audit_verify(struct tw_req *r) {
  struct tw_tenancy *t = need_tenancy(r);
  if (!t)
    return;
  int64_t entries = 0;
  char head[TW_AUDIT_HASH_HEX] = "";
  struct tw_err err = {0};
  enum tw_rc rc = tw_audit_verify(tw_tenancy_audit(t), &entries, head, &err);
  if (rc && rc != TW_E_CONFLICT) {
    tw_problem_err(r, &err);
    return;
  }
  if (rc == TW_OK) {
    tw_buf_printf(&r->out,
                  "{\"ok\":true,\"entries\":%" PRId64 ",\"head\":\"%s\"}",
                  entries, head);
  } else {
    tw_buf_adds(&r->out, "{\"ok\":false,\"problem\":");
    tw_buf_json_str(&r->out, err.msg);
    tw_buf_addc(&r->out, '}');
  }
  tw_req_json(r, 200);
}

/* ---- secrets
 * ----------------------------------------------------------------------------------
 */

static struct tw_secrets *need_secrets(struct tw_req *r) {
  struct tw_secrets *s = tw_auth_secrets(r);
  if (!s)
    tw_problem(
        r, 503, "unavailable", NULL,
        "no secrets key is configured (secrets.key_file or secrets.key_env)");
  return s;
}

void tw_h_secrets_list(struct tw_req *r) {
  struct tw_secrets *s = need_secrets(r);
  if (!s)
    return;
  struct tw_secret_info *items = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  if (tw_secrets_list(s, &items, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_printf(&r->out, "{\"key_id\":\"%s\",\"items\":[",
                tw_secrets_key_id(s));
  for (size_t i = 0; i < n; i++) {
    tw_buf_adds(&r->out, i ? ",{\"name\":" : "{\"name\":");
    tw_buf_json_str(&r->out, items[i].name);
    tw_buf_printf(&r->out, ",\"key_id\":\"%s\"", items[i].key_id);
    add_time(&r->out, "updated_at", items[i].updated_ms);
    tw_buf_addc(&r->out, '}');
  }
  tw_buf_adds(&r->out, "]}");
  free(items);
  tw_req_json(r, 200);
}

void tw_h_secrets_put(struct tw_req *r) {
  struct tw_secrets *s = need_secrets(r);
  if (!s)
    return;
  json_t *j = body_object(r);
  if (!j)
    return;
  static const char *const keys[] = {"value", NULL};
  json_t *v = json_object_get(j, "value");
  if (!known_keys(r, j, keys))
    goto out;
  if (!v || !json_is_string(v)) {
    tw_problem(r, 400, "invalid-field", "value", "/value: required, a string");
    goto out;
  }
  tw_auth_set_object(r, NULL, r->params[0]);
  struct tw_err err = {0};
  if (tw_secrets_put(s, r->params[0], json_string_value(v),
                     json_string_length(v), &err)) {
    tw_problem_err(r, &err);
    goto out;
  }
  tw_buf_adds(&r->out, "{\"name\":");
  tw_buf_json_str(&r->out, r->params[0]);
  tw_buf_printf(&r->out, ",\"key_id\":\"%s\"}", tw_secrets_key_id(s));
  tw_req_json(r, 200);
out:
  /* the value sat in the request body and the parsed tree */
  if (v && json_is_string(v))
    OPENSSL_cleanse((void *)json_string_value(v), json_string_length(v));
  if (r->body.data)
    OPENSSL_cleanse(r->body.data, r->body.len);
  json_decref(j);
}

void tw_h_secrets_delete(struct tw_req *r) {
  struct tw_secrets *s = need_secrets(r);
  if (!s)
    return;
  struct tw_err err = {0};
  if (tw_secrets_delete(s, r->params[0], &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"name\":");
  tw_buf_json_str(&r->out, r->params[0]);
  tw_buf_adds(&r->out, ",\"deleted\":true}");
  tw_req_json(r, 200);
}

void tw_h_secrets_rotate(struct tw_req *r) {
  struct tw_secrets *s = need_secrets(r);
  if (!s)
    return;
  size_t n = 0;
  struct tw_err err = {0};
  enum tw_rc rc = tw_secrets_rotate(s, &n, &err);
  if (rc && rc != TW_E_AUTH) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_printf(&r->out, "{\"key_id\":\"%s\",\"rotated\":%zu,\"problem\":",
                tw_secrets_key_id(s), n);
  if (rc)
    tw_buf_json_str(&r->out, err.msg);
  else
    tw_buf_adds(&r->out, "null");
  tw_buf_addc(&r->out, '}');
  tw_req_json(r, 200);
}
