/* The route x role test: every route the server has, for every role and
 * without a token, against the live server with real tokens.
 *
 * Two tenants, ml (the callers') and vision.  For each route and role the
 * request targets, as the route's rule says, an object of the caller's
 * own (a fresh job it submitted, its own token...), an object of a
 * colleague in ml, and one of vision; the answer must be what the policy
 * table (api/rbac.c) decides:
 *   no token                      401 with WWW-Authenticate: Bearer
 *   the rule denies the role      403
 *   another tenant's object       404 (for every role but the admin)
 *   a colleague's, rule says OWN  403 if the role reads it, else 404
 *   allowed                       anything but 401, 403, 404
 * A route without a rule fails the test.  Then: member listings are
 * scoped to ml, the token rate limit answers 429 with Retry-After on an
 * injected clock, and the audit trail of all this verifies. */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/oidc.h"
#include "api/rbac.h"
#include "broker/base/node.h"
#include "broker/tenancy/audit.h"
#include "broker/tenancy/secrets.h"
#include "broker/core/spec.h"
#include "broker/core/flow.h"
#include "broker/core/store.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_flow.h"
#include "broker/tenancy/tenancy.h"
#include "tests/integration/twtest_oidc.h"
#include "tests/twtest.h"

static char dir[64], path[128];
static struct tw_store *store;
static struct tw_tenancy *ten;
static struct tw_secrets *sec;
static struct tw_api *api;
static char base[64];

/* ---- HTTP -----------------------------------------------------------------
 */

struct resp {
  long status;
  char body[8192];
  size_t len;
  char www_auth[256];
  char retry_after[32];
  char etag[64];
  char ctype[128];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t k = sz * n, room = sizeof r->body - 1 - r->len;
  memcpy(r->body + r->len, p, k < room ? k : room);
  r->len += k < room ? k : room;
  r->body[r->len] = '\0';
  /* an event stream answers for as long as the client stays: its status
   * and first bytes are the answer */
  if (!strncmp(r->ctype, "text/event-stream", 17))
    return 0;
  return sz * n;
}

static void hdr_value(const char *line, size_t n, const char *name, char *out,
                      size_t outsz) {
  size_t l = strlen(name);
  if (n > l + 1 && !strncasecmp(line, name, l) && line[l] == ':') {
    const char *v = line + l + 1;
    while (*v == ' ')
      v++;
    size_t vl = n - (size_t)(v - line);
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
      vl--;
    snprintf(out, outsz, "%.*s", (int)vl, v);
  }
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  hdr_value(p, sz * n, "WWW-Authenticate", r->www_auth, sizeof r->www_auth);
  hdr_value(p, sz * n, "Retry-After", r->retry_after, sizeof r->retry_after);
  hdr_value(p, sz * n, "ETag", r->etag, sizeof r->etag);
  hdr_value(p, sz * n, "Content-Type", r->ctype, sizeof r->ctype);
  return sz * n;
}

static struct resp req(const char *token, const char *method, const char *pth,
                       const char *ctype, const char *body,
                       const char *if_match) {
  struct resp r;
  memset(&r, 0, sizeof r);
  CURL *c = curl_easy_init();
  char url[512], auth[4096], ct[128], im[128];
  snprintf(url, sizeof url, "%s%s", base, pth);
  struct curl_slist *h = NULL;
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
  }
  if (ctype) {
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    h = curl_slist_append(h, ct);
  }
  if (if_match) {
    snprintf(im, sizeof im, "If-Match: %s", if_match);
    h = curl_slist_append(h, im);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  } else if (strcmp(method, "GET") && strcmp(method, "DELETE")) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
  CURLcode cc = curl_easy_perform(c);
  if (cc == CURLE_OK ||
      (cc == CURLE_WRITE_ERROR && !strncmp(r.ctype, "text/event-stream", 17)))
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

/* ---- fixtures ---------------------------------------------------------------
 */

static int serial;

static void user(const char *name, const char *tenant, enum tw_role role) {
  struct tw_principal p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", name);
  snprintf(p.tenant, sizeof p.tenant, "%s", tenant);
  p.role = role;
  struct tw_err err = {0};
  if (tw_tenancy_user_create(ten, &p, &err))
    fprintf(stderr, "user %s: %s\n", name, err.msg), abort();
}

static void token_for(const char *principal, char out[TW_TOKEN_LEN + 1],
                      char id[TW_TOKEN_ID_LEN + 1]) {
  struct tw_token_info info;
  struct tw_err err = {0};
  if (tw_tenancy_token_create(ten, principal, "test", 0, out, &info, &err))
    fprintf(stderr, "token %s: %s\n", principal, err.msg), abort();
  if (id)
    memcpy(id, info.id, TW_TOKEN_ID_LEN + 1);
}

/* A job of tenant submitted by principal, as the API records it. */
static void job(const char *tenant, const char *principal,
                char id[TW_JOB_ID_LEN + 1]) {
  char spec[128];
  snprintf(spec, sizeof spec, "{\"name\":\"j%d\",\"tenant\":\"%s\"}", ++serial,
           tenant);
  struct tw_job_new jn = {
      .name = "j", .tenant = tenant, .project = "default", .spec_json = spec};
  struct tw_job_rec j;
  struct tw_err err = {0};
  if (tw_store_job_create(store, &jn, &j, NULL, &err))
    fprintf(stderr, "job: %s\n", err.msg), abort();
  struct tw_job_created jc = {.job_id = j.id,
                              .tenant = tenant,
                              .project = "default",
                              .principal = principal};
  struct tw_audit_event ev = {.principal = principal,
                              .tenant = tenant,
                              .action = "POST /v1/jobs",
                              .object = j.id,
                              .outcome = "ok"};
  tw_tenancy_request_done(ten, &ev, &jc, &err);
  memcpy(id, j.id, TW_JOB_ID_LEN + 1);
  tw_job_rec_release(&j);
}

/* An array of tenant, stored as POST /v1/jobs stores one. */
static void workflow(const char *tenant, char id[TW_FLOW_GID_LEN + 1]) {
  char spec[160];
  snprintf(spec, sizeof spec,
           "name: w%d\ntenant: %s\narray: \"0-1\"\n", ++serial, tenant);
  struct tw_job_spec js;
  struct tw_err err = {0};
  if (tw_spec_parse(spec, strlen(spec), false, &js, &err))
    fprintf(stderr, "workflow spec: %s\n", err.msg), abort();
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&js, &b);
  struct tw_flow_plan p;
  if (tw_flow_plan_from_spec(&js, b.data, &p, &err) ||
      tw_store_flow_submit(store, &p, 0, NULL, NULL, id, &err))
    fprintf(stderr, "workflow: %s\n", err.msg), abort();
  tw_flow_plan_release(&p);
  tw_buf_release(&b);
  tw_spec_release(&js);
}

static const char *const ROLE_USER[TW_ROLE_COUNT] = {
    "admin",      "ml-tadmin", "ml-member", "ml-viewer",
    "ml-finance", "ml-ci",     "ml-metrics"};
static char tokens[TW_ROLE_COUNT][TW_TOKEN_LEN + 1];

/* The same roles signed in through an identity provider (api/oidc.h):
 * the issuer's rules map the group "as-<role>" to the role in ml (admin
 * in "*"), naming the principal "idp:<preferred_username>". */
static const char *const OIDC_USER[TW_ROLE_COUNT] = {
    "idp:admin",      "idp:ml-tadmin", "idp:ml-member",
    "idp:ml-viewer",  "idp:ml-finance", "idp:ml-ci",
    "idp:ml-metrics"};
static char *jwts[TW_ROLE_COUNT];
static struct twtest_issuer *idp;
static struct tw_oidc_cfg *oidc_cfg;

/* Who the matrix acts as: the stored principals or the OIDC ones. */
static const char *const *callers = ROLE_USER;
static const char *bearer[TW_ROLE_COUNT];

/* ---- the matrix
 * --------------------------------------------------------------- */

enum scene { OWN_OBJECT, COLLEAGUES, OTHER_TENANT };
static const char *const SCENE[] = {"own", "colleague's", "other tenant's"};

/* Fills the path's parameters for the scene and says who owns the object
 * and in which tenant it lives; false when the scene does not apply. */
static bool build(const struct tw_rbac_rule *rule, enum tw_role role,
                  enum scene sc, char *pth, size_t pthsz, char *body,
                  size_t bodysz, const char **ctype, char *if_match,
                  size_t imsz) {
  const char *caller = callers[role];
  const char *tenant = sc == OTHER_TENANT ? "vision" : "ml";
  const char *owner = sc == OWN_OBJECT   ? caller
                      : sc == COLLEAGUES ? "ml-colleague"
                                         : "vision-member";
  char param[160] = "x", param2[64] = "default";
  if (!strcmp(rule->path, "/ui/{asset}"))
    snprintf(param, sizeof param, "app.js"); /* the console's files */
  *ctype = NULL;
  body[0] = '\0';
  if_match[0] = '\0';
  bool owned_target = rule->target == TW_TGT_JOB ||
                      rule->target == TW_TGT_TOKEN ||
                      rule->target == TW_TGT_USER;
  if (sc == COLLEAGUES && !owned_target && rule->target != TW_TGT_BODY)
    return false;
  if (sc != OWN_OBJECT &&
      (rule->target == TW_TGT_GLOBAL || rule->target == TW_TGT_PUBLIC))
    return false;
  if (role == TW_ROLE_ADMIN && sc == OWN_OBJECT && owned_target)
    owner = "ml-colleague"; /* the admin owns nothing in ml */
  /* principals from an identity provider are not stored: they hold no
   * tokens of their own (oidc_principals_own_no_tokens checks that) */
  if (callers == OIDC_USER && sc == OWN_OBJECT &&
      ((rule->target == TW_TGT_TOKEN && role != TW_ROLE_ADMIN) ||
       (!strcmp(rule->method, "POST") && !strcmp(rule->path, "/v1/tokens"))))
    return false;
  switch (rule->target) {
  case TW_TGT_JOB: {
    char id[TW_JOB_ID_LEN + 1];
    job(tenant, owner, id);
    snprintf(param, sizeof param, "%s", id);
    break;
  }
  case TW_TGT_WORKFLOW: {
    char id[TW_FLOW_GID_LEN + 1];
    workflow(tenant, id);
    snprintf(param, sizeof param, "%s", id);
    break;
  }
  case TW_TGT_TOKEN: {
    char tok[TW_TOKEN_LEN + 1], id[TW_TOKEN_ID_LEN + 1];
    token_for(owner, tok, id);
    snprintf(param, sizeof param, "%s", id);
    break;
  }
  case TW_TGT_USER: {
    char name[64];
    snprintf(name, sizeof name, "%s-u%d", tenant, ++serial);
    user(name, tenant, TW_ROLE_VIEWER);
    snprintf(param, sizeof param, "%s", name);
    break;
  }
  case TW_TGT_TENANT:
    snprintf(param, sizeof param, "%s", tenant);
    break;
  default:
    break;
  }
  /* the path */
  const char *t = rule->path;
  size_t o = 0;
  int np = 0;
  while (*t && o < pthsz - 1) {
    if (*t == '{') {
      o += (size_t)snprintf(pth + o, pthsz - o, "%s", np++ ? param2 : param);
      t = strchr(t, '}') + 1;
    } else {
      pth[o++] = *t++;
    }
  }
  pth[o] = '\0';
  if (rule->target == TW_TGT_QUERY_TENANT && sc == OTHER_TENANT)
    snprintf(pth + o, pthsz - o, "?tenant=vision");
  /* bodies and preconditions the handlers need */
  const char *p = rule->path;
  if (!strcmp(rule->method, "POST") && !strcmp(p, "/v1/jobs")) {
    *ctype = "application/yaml";
    snprintf(body, bodysz, "name: m%d\ntenant: %s\n", ++serial, tenant);
  } else if (!strcmp(rule->method, "POST") && !strcmp(p, "/v1/workflows")) {
    *ctype = "application/yaml";
    snprintf(body, bodysz,
             "name: w%d\ntenant: %s\ntasks:\n  - {name: a, job: {}}\n",
             ++serial, tenant);
  } else if (!strcmp(rule->method, "POST") && !strcmp(p, "/v1/tokens")) {
    *ctype = "application/json";
    snprintf(body, bodysz, "{\"principal\":\"%s\"}", owner);
  } else if (!strcmp(rule->method, "POST") && !strcmp(p, "/v1/users")) {
    *ctype = "application/json";
    snprintf(body, bodysz,
             "{\"name\":\"n%d\",\"tenant\":\"%s\",\"role\":\"viewer\"}",
             ++serial, tenant);
  } else if (!strcmp(rule->method, "POST") && !strcmp(p, "/v1/tenants")) {
    *ctype = "application/json";
    snprintf(body, bodysz, "{\"name\":\"t%d\"}", ++serial);
  } else if (!strcmp(rule->method, "PUT") && strstr(p, "/quota")) {
    struct tw_quota q;
    if (tw_tenancy_quota_get(ten, tenant, &q, NULL) == TW_OK)
      snprintf(if_match, imsz, "\"q%" PRId64 "\"", q.version);
    *ctype = "application/json";
    snprintf(body, bodysz, "{\"limits\":{\"vcpus\":1000}}");
  } else if (!strcmp(rule->method, "PUT") && strstr(p, "/budget")) {
    struct tw_budget b;
    if (tw_tenancy_budget_get(ten, tenant, np > 1 ? param2 : NULL, &b, NULL) ==
        TW_OK)
      snprintf(if_match, imsz, "\"b%" PRId64 "\"", b.version);
    *ctype = "application/json";
    snprintf(body, bodysz, "{\"limit_uusd\":100000000}");
  } else if (!strcmp(p, "/v1/secrets/{name}")) {
    tw_secrets_put(sec, "x", "v", 1, NULL);
    if (!strcmp(rule->method, "PUT")) {
      *ctype = "application/json";
      snprintf(body, bodysz, "{\"value\":\"v\"}");
    }
  } else if (strcmp(rule->method, "GET") && strcmp(rule->method, "DELETE")) {
    *ctype = "application/json";
    snprintf(body, bodysz, "{}");
  }
  if (!strcmp(rule->method, "GET") && strstr(p, "/budget") &&
      !strstr(p, "/budgets")) {
    /* a budget to read */
    struct tw_budget b;
    tw_budget_init(&b);
    snprintf(b.tenant, sizeof b.tenant, "%s", tenant);
    if (np > 1)
      snprintf(b.project, sizeof b.project, "%s", param2);
    b.limit_uusd = 1;
    tw_tenancy_budget_set(ten, &b, 0, NULL, NULL);
  }
  return true;
}

static bool role_reads(const struct tw_rbac_rule *rule, enum tw_role role) {
  const struct tw_rbac_rule *get = tw_rbac_find("GET", rule->path);
  return get && get->perm[role] >= TW_PERM_TENANT;
}

/* Every wrong cell of the matrix is named; one check at the end counts
 * them, so that a broken rule shows all it breaks. */
static int wrong_cells;
#define CELL_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      wrong_cells++;                                                           \
    }                                                                          \
  } while (0)

static void run_matrix(const char *who) {
  size_t n;
  const struct tw_api_route_info *routes = tw_api_route_table(&n);
  int cells = 0;
  wrong_cells = 0;
  for (size_t i = 0; i < n; i++) {
    const struct tw_rbac_rule *rule =
        tw_rbac_find(routes[i].method, routes[i].path);
    if (!rule) {
      CELL_CHECK(0, "%s %s has no rule in api/rbac.c", routes[i].method,
                 routes[i].path);
      continue;
    }
    char pth[512], body[512], im[64];
    const char *ct;
    /* without a token (objects of the stored member: always buildable) */
    const char *const *saved_callers = callers;
    callers = ROLE_USER;
    build(rule, TW_ROLE_MEMBER, OWN_OBJECT, pth, sizeof pth, body, sizeof body,
          &ct, im, sizeof im);
    callers = saved_callers;
    struct resp r =
        req(NULL, rule->method, pth, ct, body[0] ? body : NULL, NULL);
    if (rule->target == TW_TGT_PUBLIC) {
      CELL_CHECK(r.status != 401 && r.status != 403,
                 "%s %s without a token: %ld", rule->method, pth, r.status);
    } else {
      CELL_CHECK(r.status == 401 && !strncmp(r.www_auth, "Bearer", 6) &&
                     strstr(r.ctype, "problem+json"),
                 "%s %s without a token: %ld, WWW-Authenticate \"%s\"",
                 rule->method, pth, r.status, r.www_auth);
    }
    for (int role = 0; role < TW_ROLE_COUNT; role++)
      for (int sc = OWN_OBJECT; sc <= OTHER_TENANT; sc++) {
        if (!build(rule, (enum tw_role)role, (enum scene)sc, pth, sizeof pth,
                   body, sizeof body, &ct, im, sizeof im))
          continue;
        r = req(bearer[role], rule->method, pth, ct, body[0] ? body : NULL,
                im[0] ? im : NULL);
        cells++;
        enum tw_perm perm = (enum tw_perm)rule->perm[role];
        const char *what;
        bool ok;
        if (rule->target == TW_TGT_PUBLIC || perm == TW_PERM_ANY) {
          what = "allowed";
          ok = r.status != 401 && r.status != 403 && r.status != 404;
        } else if (perm == TW_PERM_DENY) {
          what = "403";
          ok = r.status == 403;
        } else if (sc == OTHER_TENANT) {
          what = "404";
          ok = r.status == 404;
        } else if (sc == COLLEAGUES && perm == TW_PERM_OWN) {
          bool reads = role_reads(rule, (enum tw_role)role);
          what = reads ? "403" : "404";
          ok = r.status == (reads ? 403 : 404);
        } else {
          what = "allowed";
          ok = r.status != 401 && r.status != 403 && r.status != 404;
        }
        if (ok && r.status >= 400)
          ok = strstr(r.ctype, "problem+json") != NULL;
        CELL_CHECK(ok, "%s %s as %s (%s object): %ld, expected %s: %.300s",
                   rule->method, pth, tw_role_str((enum tw_role)role),
                   SCENE[sc], r.status, what, r.body);
      }
  }
  free((void *)routes);
  printf("# %s: %d route x role x object cells over %zu routes\n", who, cells,
         n);
  TW_CHECK(wrong_cells == 0, "%d wrong cells (named above)", wrong_cells);
  TW_CHECK(cells > 100, "only %d cells", cells);
}

static void matrix(void **state) {
  callers = ROLE_USER;
  for (int i = 0; i < TW_ROLE_COUNT; i++)
    bearer[i] = tokens[i];
  run_matrix("bearer tokens");
}

/* Every row again, the callers signed in through the identity provider
 * with JWTs: the mapping grants exactly the role, and the role's rules
 * apply to an OIDC principal as to a stored one (its own jobs are its
 * own, the ci role submits and reads only those). */
static void matrix_oidc(void **state) {
  callers = OIDC_USER;
  for (int i = 0; i < TW_ROLE_COUNT; i++)
    bearer[i] = jwts[i];
  run_matrix("OIDC principals");
  callers = ROLE_USER;
}

/* What a stored principal has and an OIDC one has not: tokens.  And a
 * token that no rule maps is a principal without any role. */
static void oidc_principals_own_no_tokens(void **state) {
  struct resp r = req(jwts[TW_ROLE_MEMBER], "POST", "/v1/tokens",
                      "application/json", "{\"name\":\"laptop\"}", NULL);
  TW_CHECK(r.status == 404 && !strstr(r.body, "twt_"),
           "an OIDC member mints a bearer token: %ld %.200s", r.status, r.body);
  r = req(jwts[TW_ROLE_MEMBER], "GET", "/v1/tokens", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && !strstr(r.body, "\"principal\""),
           "an OIDC member's tokens: %ld %.200s", r.status, r.body);
  char *claims = tw_asprintf(
      "{\"iss\":\"%s\",\"aud\":\"tradewind\",\"sub\":\"nobody\","
      "\"preferred_username\":\"nobody\",\"groups\":[\"as-root\"],"
      "\"exp\":%lld}",
      twtest_issuer_url(idp), (long long)(time(NULL) + 600));
  char *jwt = twtest_jwt(idp, TWT_RSA, NULL, claims);
  size_t n;
  const struct tw_rbac_rule *rules = tw_rbac_rules(&n);
  for (size_t i = 0; i < n; i++) {
    if (rules[i].target == TW_TGT_PUBLIC || strcmp(rules[i].method, "GET") ||
        strchr(rules[i].path, '{'))
      continue;
    r = req(jwt, "GET", rules[i].path, NULL, NULL, NULL);
    TW_CHECK(r.status == 403, "GET %s without a role: %ld", rules[i].path,
             r.status);
  }
  free(jwt);
  free(claims);
}

/* ---- specific behaviour
 * ---------------------------------------------------------- */

static void listings_are_scoped(void **state) {
  char mine[TW_JOB_ID_LEN + 1], theirs[TW_JOB_ID_LEN + 1];
  job("ml", "ml-member", mine);
  job("vision", "vision-member", theirs);
  struct resp r = req(tokens[TW_ROLE_MEMBER], "GET", "/v1/jobs?limit=500", NULL,
                      NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, mine) && !strstr(r.body, theirs) &&
               !strstr(r.body, "\"tenant\":\"vision\""),
           "member's job list: %ld %.200s", r.status, r.body);
  r = req(tokens[TW_ROLE_ADMIN], "GET", "/v1/jobs?limit=500", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, mine) && strstr(r.body, theirs),
           "admin's job list: %ld", r.status);
  r = req(tokens[TW_ROLE_MEMBER], "GET", "/v1/jobs?tenant=", NULL, NULL, NULL);
  TW_CHECK(r.status == 404, "an empty ?tenant= is another tenant: %ld",
           r.status);
  /* a spec without tenant: goes to the caller's */
  r = req(tokens[TW_ROLE_CI], "POST", "/v1/jobs", "application/yaml",
          "name: ci-job\n", NULL);
  TW_CHECK(r.status == 201 && strstr(r.body, "\"tenant\":\"ml\""),
           "ci submit: %ld %.200s", r.status, r.body);
  r = req(tokens[TW_ROLE_TENANT_ADMIN], "GET", "/v1/tenants", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"ml\"") &&
               !strstr(r.body, "vision"),
           "tenant list: %.200s", r.body);
  r = req(tokens[TW_ROLE_VIEWER], "GET", "/v1/tokens", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "ml-viewer") &&
               !strstr(r.body, "ml-member"),
           "viewer's tokens: %.200s", r.body);
  r = req(tokens[TW_ROLE_VIEWER], "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"role\":\"viewer\"") &&
               !strstr(r.body, "twt_"),
           "whoami: %.200s", r.body);
  /* a token shown once: never in listings */
  r = req(tokens[TW_ROLE_MEMBER], "POST", "/v1/tokens", "application/json",
          "{\"name\":\"laptop\",\"ttl\":\"30d\"}", NULL);
  TW_CHECK(r.status == 201 && strstr(r.body, "\"token\":\"twt_") &&
               strstr(r.body, "expires_at\":\""),
           "token create: %.200s", r.body);
  r = req(tokens[TW_ROLE_MEMBER], "GET", "/v1/tokens", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && !strstr(r.body, "twt_"),
           "token list shows a token: %.200s", r.body);
}

static void quota_updates_need_the_etag(void **state) {
  const char *tok = tokens[TW_ROLE_ADMIN];
  struct resp g = req(tok, "GET", "/v1/tenants/ml/quota", NULL, NULL, NULL);
  TW_CHECK(g.status == 200 && g.etag[0] == '"', "quota get: %ld etag %s",
           g.status, g.etag);
  struct resp r = req(tok, "PUT", "/v1/tenants/ml/quota", "application/json",
                      "{\"limits\":{\"vcpus\":64}}", NULL);
  TW_CHECK(r.status == 428, "PUT without If-Match: %ld", r.status);
  r = req(tok, "PUT", "/v1/tenants/ml/quota", "application/json",
          "{\"limits\":{\"vcpus\":{\"limit\":64,\"borrow\":8}},\"gpus\":{"
          "\"A100\":8},"
          "\"cohort\":\"research\",\"spot_share_pct\":50}",
          g.etag);
  TW_CHECK(r.status == 200 && strcmp(r.etag, g.etag) &&
               strstr(r.body, "\"borrow\":8"),
           "PUT with If-Match: %ld %.200s", r.status, r.body);
  r = req(tok, "PUT", "/v1/tenants/ml/quota", "application/json", "{}", g.etag);
  TW_CHECK(r.status == 412, "PUT with a stale If-Match: %ld", r.status);
  /* admission names the quota and the numbers */
  r = req(tokens[TW_ROLE_MEMBER], "POST", "/v1/jobs", "application/yaml",
          "name: big\nresources: {accelerators: A100:8}\nnodes: 3\n", NULL);
  TW_CHECK(
      r.status == 403 && strstr(r.body, "/problems/quota-exceeded") &&
          strstr(r.body, "\"field\":\"quota.gpus.A100\"") &&
          strstr(
              r.body,
              "needs 24 A100 (3 nodes x 8), the limit is 8 (+0 borrowable)") ==
              NULL &&
          strstr(r.body, "needs 24 A100 (3 nodes x 8), the limit is 8"),
      "quota refusal: %ld %.300s", r.status, r.body);
  /* a job for a tenant that does not exist: 400 naming the field */
  r = req(tok, "POST", "/v1/jobs", "application/yaml",
          "name: stray\ntenant: nosuch\nresources: {cpus: 1}\n", NULL);
  TW_CHECK(r.status == 400 && strstr(r.body, "\"field\":\"tenant\"") &&
               strstr(r.body, "no tenant named \\\"nosuch\\\""),
           "unknown tenant: %ld %.300s", r.status, r.body);
}

/* The rate-limited server of rate_limit_answers_429 and the main
 * server's address while the requests go to it; its teardown stops it
 * and puts the address back. */
static struct tw_api *limited;
static char saved[64];

static int stop_limited(void **state) {
  if (limited) {
    tw_api_stop(limited);
    limited = NULL;
    snprintf(base, sizeof base, "%s", saved);
  }
  return 0;
}

static void rate_limit_answers_429(void **state) {
  static struct tw_clock fake;
  tw_clock_fake_init(&fake, 1764460800000);
  struct tw_err err = {0};
  struct tw_api_opts o = {
      .listen = "127.0.0.1:0",
      .store = store,
      .clock = &fake,
      .auth = {.tenancy = ten, .rate_per_s = 2, .rate_burst = 3}};
  if (tw_api_start(&o, &limited, &err)) {
    limited = NULL;
    TW_FAIL("second server: %s", err.msg);
  }
  snprintf(saved, sizeof saved, "%s", base);
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(limited));
  const char *tok = tokens[TW_ROLE_VIEWER];
  for (int i = 0; i < 3; i++) {
    struct resp r = req(tok, "GET", "/v1/whoami", NULL, NULL, NULL);
    TW_CHECK(r.status == 200, "request %d within the burst: %ld", i, r.status);
  }
  struct resp r = req(tok, "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 429 && !strcmp(r.retry_after, "1") &&
               strstr(r.body, "rate-limited"),
           "over the burst: %ld Retry-After \"%s\"", r.status, r.retry_after);
  /* another token has its own bucket */
  r = req(tokens[TW_ROLE_MEMBER], "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 200, "another token: %ld", r.status);
  /* half a second refills one request at 2/s */
  tw_clock_advance(&fake, 500);
  r = req(tok, "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 200, "after 500 ms: %ld", r.status);
  r = req(tok, "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 429, "and then none: %ld", r.status);
}

static void revoked_and_garbage_tokens(void **state) {
  char tok[TW_TOKEN_LEN + 1], id[TW_TOKEN_ID_LEN + 1];
  token_for("ml-member", tok, id);
  char pth[64];
  snprintf(pth, sizeof pth, "/v1/tokens/%s", id);
  struct resp r = req(tok, "DELETE", pth, NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "revoked_at\":\""),
           "revoke own: %ld", r.status);
  r = req(tok, "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 401 && strstr(r.www_auth, "invalid_token") &&
               strstr(r.body, "token revoked"),
           "revoked: %ld %s", r.status, r.www_auth);
  r = req("not-a-token", "GET", "/v1/whoami", NULL, NULL, NULL);
  TW_CHECK(r.status == 401 && strstr(r.body, "malformed token"), "garbage: %ld",
           r.status);
  r = req(NULL, "GET", "/healthz", NULL, NULL, NULL);
  TW_CHECK(r.status == 200, "healthz needs no token: %ld", r.status);
}

static void audit_is_scoped_and_verifies(void **state) {
  struct resp r = req(tokens[TW_ROLE_FINANCE], "GET", "/v1/audit?limit=10000",
                      NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"tenant\":\"ml\"") &&
               !strstr(r.body, "\"tenant\":\"vision\""),
           "finance's audit view: %ld", r.status);
  r = req(tokens[TW_ROLE_ADMIN], "GET", "/v1/audit?limit=3&format=jsonl", NULL,
          NULL, NULL);
  int lines = 0;
  for (const char *p = r.body; (p = strchr(p, '\n')); p++)
    lines++;
  TW_CHECK(r.status == 200 && lines == 3 && strstr(r.ctype, "jsonl"),
           "jsonl: %ld %d lines", r.status, lines);
  r = req(tokens[TW_ROLE_ADMIN], "GET",
          "/v1/audit?action=POST%20/v1/users&outcome=denied", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"principal\":\"ml-member\""),
           "denied user creations are audited: %.300s", r.body);
  r = req(tokens[TW_ROLE_ADMIN], "GET", "/v1/audit/verify", NULL, NULL, NULL);
  TW_CHECK(r.status == 200 && strstr(r.body, "\"ok\":true"), "verify: %.200s",
           r.body);
}

/* The store, tenancy, secrets and server, two tenants, a user and a token
 * per role. */
static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-rbac-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/r.db", dir);
  char tokfile[160], keyfile[160];
  snprintf(tokfile, sizeof tokfile, "%s/admin.token", dir);
  snprintf(keyfile, sizeof keyfile, "%s/key", dir);
  FILE *kf = fopen(keyfile, "w");
  fputs("1111111111111111111111111111111111111111111111111111111111111111\n",
        kf);
  fclose(kf);
  curl_global_init(CURL_GLOBAL_ALL);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .sync_full = false};
  struct tw_tenancy_opts to = {.admin_token_file = tokfile};
  struct tw_secrets_opts xo = {.key_file = keyfile};
  if (tw_store_open(&so, &store, &err) ||
      (to.store = store, xo.store = store, tw_tenancy_open(&to, &ten, &err)) ||
      tw_secrets_open(&xo, &sec, &err)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return -1;
  }
  FILE *tf = fopen(tokfile, "r");
  if (!tf || !fgets(tokens[TW_ROLE_ADMIN], sizeof tokens[0], tf))
    return -1;
  fclose(tf);
  tokens[TW_ROLE_ADMIN][strcspn(tokens[TW_ROLE_ADMIN], "\n")] = '\0';
  tw_tenancy_tenant_create(ten, "ml", NULL);
  tw_tenancy_tenant_create(ten, "vision", NULL);
  for (int role = 1; role < TW_ROLE_COUNT; role++) {
    user(ROLE_USER[role], "ml", (enum tw_role)role);
    token_for(ROLE_USER[role], tokens[role], NULL);
  }
  user("ml-colleague", "ml", TW_ROLE_MEMBER);
  user("vision-member", "vision", TW_ROLE_MEMBER);
  if (!(idp = twtest_issuer_start()))
    return -1;
  struct tw_buf y;
  tw_buf_init(&y);
  tw_buf_printf(&y,
                "issuers:\n"
                "  - name: idp\n"
                "    issuer: %s\n"
                "    audiences: [tradewind]\n"
                "    principal_claim: preferred_username\n"
                "    rules:\n",
                twtest_issuer_url(idp));
  for (int role = 0; role < TW_ROLE_COUNT; role++)
    tw_buf_printf(&y,
                  "      - {name: r%d, match: {groups: as-%s}, tenant: '%s', "
                  "role: %s}\n",
                  role, tw_role_str((enum tw_role)role),
                  role == TW_ROLE_ADMIN ? "*" : "ml",
                  tw_role_str((enum tw_role)role));
  struct tw_node *yn = NULL;
  if (tw_node_parse_yaml(y.data, y.len, &yn, &err) ||
      tw_oidc_cfg_parse(yn, &oidc_cfg, &err)) {
    fprintf(stderr, "oidc config: %s\n", err.msg);
    return -1;
  }
  tw_node_free(yn);
  tw_buf_release(&y);
  for (int role = 0; role < TW_ROLE_COUNT; role++) {
    char *claims = tw_asprintf(
        "{\"iss\":\"%s\",\"aud\":\"tradewind\",\"sub\":\"s-%d\","
        "\"preferred_username\":\"%s\",\"groups\":[\"staff\",\"as-%s\"],"
        "\"exp\":%lld}",
        twtest_issuer_url(idp), role, OIDC_USER[role] + 4,
        tw_role_str((enum tw_role)role), (long long)(time(NULL) + 3600));
    jwts[role] = twtest_jwt(idp, role % 2 ? TWT_EC : TWT_RSA, NULL, claims);
    free(claims);
  }
  struct tw_api_opts ao = {
      .listen = "127.0.0.1:0",
      .store = store,
      .auth = {.tenancy = ten, .secrets = sec, .rate_per_s = -1,
               .oidc = oidc_cfg}};
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "api: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d", tw_api_port(api));
  return 0;
}

static int teardown(void **state) {
  tw_api_stop(api);
  tw_oidc_cfg_free(oidc_cfg);
  twtest_issuer_stop(idp);
  for (int i = 0; i < TW_ROLE_COUNT; i++)
    free(jwts[i]);
  tw_secrets_free(sec);
  tw_tenancy_free(ten);
  tw_store_close(store);
  curl_global_cleanup();
  char p[200];
  const char *sfx[] = {"/r.db", "/r.db-wal", "/r.db-shm", "/admin.token",
                       "/key"};
  for (int i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "%s%s", dir, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

/* A workflow is admitted against the hard budgets as a whole: each task
 * fits on its own, a hundred of them do not; the one admitted is audited
 * under its own id. */
static void workflows_meet_budgets_and_the_audit(void **state) {
  (void)state;
  char tok[TW_TOKEN_LEN + 1];
  token_for("vision-member", tok, NULL);
  struct tw_budget b;
  tw_budget_init(&b);
  snprintf(b.tenant, sizeof b.tenant, "vision");
  snprintf(b.project, sizeof b.project, "wf");
  b.limit_uusd = 50000000; /* $50 */
  b.hard = true;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_tenancy_budget_set(ten, &b, 0, NULL, &err), TW_OK, err);
#define WF_DOC                                                                 \
  "name: sweep\ntenant: vision\nproject: wf\ntasks:\n"                        \
  "  - {name: t, for_each: \"%s\", job: {duration: 1h,"                       \
  " max_price_per_hour: \"1.00\"}}\n"
  char body[512];
  snprintf(body, sizeof body, WF_DOC, "0-99"); /* $100 projected */
  struct resp r = req(tok, "POST", "/v1/workflows", "application/yaml", body,
                      NULL);
  TW_CHECK(r.status == 403 && strstr(r.body, "budget-exceeded"), "%ld %s",
           r.status, r.body);
  snprintf(body, sizeof body, WF_DOC, "0-9"); /* $10 */
  r = req(tok, "POST", "/v1/workflows", "application/yaml", body, NULL);
  TW_CHECK(r.status == 201, "%ld %s", r.status, r.body);
  TW_CHECK(strstr(r.body, "\"projected_cost_usd\":\"10.000000\"") != NULL,
           "%s", r.body);
  const char *idp_ = strstr(r.body, "\"id\":\"w-");
  TW_CHECK(idp_ != NULL, "%s", r.body);
  char wid[40];
  snprintf(wid, sizeof wid, "%.28s", idp_ + 6);
  struct tw_audit_filter f = {.tenant = "vision", .limit = 10000};
  struct tw_audit_entry *e;
  size_t n;
  TW_CHECK_RC(tw_store_audit_list(store, &f, &e, &n, &err), TW_OK, err);
  bool stored = false, refused = false;
  for (size_t i = 0; i < n; i++) {
    /* the entry says how the workflow was placed (here no offer fits the
     * task: step by step, with the reason) */
    stored |= !strcmp(e[i].object, wid) &&
              !strcmp(e[i].action, "POST /v1/workflows") &&
              !strcmp(e[i].outcome, "ok") && e[i].detail &&
              strstr(e[i].detail, "placement=step: task t fits nowhere");
    refused |= !strcmp(e[i].action, "budget.refuse") &&
               strstr(e[i].object, "workflow/") != NULL;
  }
  tw_store_audit_entries_free(e, n);
  TW_CHECK(stored, "%s not audited", wid);
  TW_CHECK(refused, "the budget's refusal not audited");
}

int main(void) {
  /* In order: the audit checks see the denials the matrix provoked. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matrix),
      cmocka_unit_test(matrix_oidc),
      cmocka_unit_test(oidc_principals_own_no_tokens),
      cmocka_unit_test(listings_are_scoped),
      cmocka_unit_test(quota_updates_need_the_etag),
      cmocka_unit_test_teardown(rate_limit_answers_429, stop_limited),
      cmocka_unit_test(revoked_and_garbage_tokens),
      cmocka_unit_test(audit_is_scoped_and_verifies),
      cmocka_unit_test(workflows_meet_budgets_and_the_audit),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
