/* auth.c - authentication, authorization, rate limiting, the audit entry
 * of each mutating request, and the server's TLS options (see
 * auth_int.h). */
#include "api/auth_int.h"

#include "api/oidc.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/tenancy/audit.h"
#include "broker/base/log.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"
#include "broker/tenancy/tenancy.h"

#define BUCKETS 1024
#define PROBE 8

struct bucket {
  char id[TW_TOKEN_ID_LEN + 1]; /* "" free */
  int64_t milli;                /* thousandths of a request */
  int64_t at_ms;
};

struct tw_auth {
  bool open;
  struct tw_tenancy *ten;
  struct tw_secrets *sec;
  struct tw_clock *clock;
  int64_t rate, burst; /* rate < 0: none */
  pthread_mutex_t mu;
  struct bucket b[BUCKETS];
  char *cert_file, *key_file;
  char *tls_cert, *tls_key; /* PEM, read at the start */
  struct tw_oidc *oidc;     /* NULL: no identity provider */
  /* refused-token log lines: at most REFUSED_LINES_PER_S a second, the
   * rest counted and reported with the next line written (under mu) */
  int64_t refused_s;
  int refused_n;
  int64_t refused_dropped;
};

#define REFUSED_LINES_PER_S 10

enum tw_rc tw_auth_new(const struct tw_auth_opts *o, struct tw_clock *clock,
                       struct tw_auth **out, struct tw_err *err) {
  bool c = o->tls_cert_file && *o->tls_cert_file;
  bool k = o->tls_key_file && *o->tls_key_file;
  *out = NULL;
  if (c != k)
    return tw_err_field(err, TW_E_INVALID, "tls",
                        "tls: give both cert_file and key_file, or neither");
  struct tw_auth *a = tw_calloc(1, sizeof *a);
  a->open = o->open;
  a->ten = o->tenancy;
  a->sec = o->secrets;
  a->clock = clock ? clock : tw_clock_real();
  a->rate = o->rate_per_s ? o->rate_per_s : 50;
  a->burst = o->rate_burst > 0 ? o->rate_burst : 100;
  a->cert_file = c ? tw_strdup(o->tls_cert_file) : NULL;
  a->key_file = k ? tw_strdup(o->tls_key_file) : NULL;
  pthread_mutex_init(&a->mu, NULL);
  if (o->oidc) {
    enum tw_rc rc = tw_oidc_new(o->oidc, a->clock, a->ten, &a->oidc, err);
    if (rc) {
      tw_auth_free(a);
      return rc;
    }
  }
  *out = a;
  if (a->open)
    tw_log_warn("auth", "auth.mode is open: every request acts as the admin, "
                        "without a token");
  return TW_OK;
}

void tw_auth_free(struct tw_auth *a) {
  if (!a)
    return;
  pthread_mutex_destroy(&a->mu);
  tw_oidc_free(a->oidc);
  if (a->tls_key)
    OPENSSL_cleanse(a->tls_key, strlen(a->tls_key));
  free(a->tls_key);
  free(a->tls_cert);
  free(a->cert_file);
  free(a->key_file);
  free(a);
}

/* ---- TLS -------------------------------------------------------------------
 */

static char *read_pem(const char *path, struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    tw_err_set(err, TW_E_IO, "tls: cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (1u << 20))
    tw_buf_add(&b, chunk, n);
  fclose(f);
  if (!b.len || !strstr(b.data, "-----BEGIN ")) {
    tw_buf_release(&b);
    tw_err_set(err, TW_E_INVALID, "tls: %s is not a PEM file", path);
    return NULL;
  }
  return tw_buf_detach(&b);
}

bool tw_auth_tls_on(const struct tw_auth *a) { return a->cert_file != NULL; }

enum tw_rc tw_auth_tls_pem(struct tw_auth *a, const char **cert,
                           const char **key, struct tw_err *err) {
  *cert = *key = NULL;
  if (!a->cert_file)
    return TW_OK;
  if (!a->tls_cert && !(a->tls_cert = read_pem(a->cert_file, err)))
    return err ? err->rc : TW_E_IO;
  if (!a->tls_key && !(a->tls_key = read_pem(a->key_file, err)))
    return err ? err->rc : TW_E_IO;
  *cert = a->tls_cert;
  *key = a->tls_key;
  return TW_OK;
}

/* ---- rate limiting
 * ------------------------------------------------------------ */

/* A token bucket per token id in a small open-addressed table: full of
 * other tokens, the stalest of the probed slots is reused (its owner
 * starts again with a full bucket, which errs on the generous side).
 * Returns 0 when the request may go, else the seconds to wait. */
static int64_t rate_take(struct tw_auth *a, const char *id) {
  if (a->rate < 0)
    return 0;
  uint32_t h = 2166136261u;
  for (const char *p = id; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  int64_t now = tw_clock_now_ms(a->clock), wait = 0;
  pthread_mutex_lock(&a->mu);
  struct bucket *slot = NULL, *stalest = NULL;
  for (int i = 0; i < PROBE && !slot; i++) {
    struct bucket *b = &a->b[(h + (uint32_t)i) % BUCKETS];
    if (!strcmp(b->id, id))
      slot = b;
    else if (!stalest || !b->id[0] ||
             (stalest->id[0] && b->at_ms < stalest->at_ms))
      stalest = b;
  }
  if (!slot) {
    slot = stalest;
    snprintf(slot->id, sizeof slot->id, "%.16s", id);
    slot->milli = a->burst * 1000;
    slot->at_ms = now;
  }
  /* refill: rate requests per second is rate thousandths per ms */
  if (now > slot->at_ms) {
    slot->milli += (now - slot->at_ms) * a->rate;
    if (slot->milli > a->burst * 1000)
      slot->milli = a->burst * 1000;
    slot->at_ms = now;
  }
  if (slot->milli >= 1000) {
    slot->milli -= 1000;
  } else {
    int64_t ms = (1000 - slot->milli + a->rate - 1) / a->rate;
    wait = (ms + 999) / 1000;
    if (wait < 1)
      wait = 1;
  }
  pthread_mutex_unlock(&a->mu);
  return wait;
}

/* ---- helpers
 * ---------------------------------------------------------------------- */

static struct tw_auth *auth_of(struct tw_req *r) { return tw_api_auth(r->api); }

const struct tw_agent_caller *tw_auth_agent(struct tw_req *r) {
  return r->auth && r->auth->agent ? &r->auth->caller : NULL;
}

const struct tw_principal *tw_auth_who(struct tw_req *r) {
  return r->auth ? &r->auth->who : NULL;
}
enum tw_perm tw_auth_perm(struct tw_req *r) {
  return r->auth ? r->auth->perm : TW_PERM_DENY;
}
struct tw_tenancy *tw_auth_tenancy(struct tw_req *r) {
  return auth_of(r)->ten;
}
struct tw_secrets *tw_auth_secrets(struct tw_req *r) {
  return auth_of(r)->sec;
}

void tw_auth_set_object(struct tw_req *r, const char *tenant,
                        const char *object) {
  if (!r->auth)
    return;
  if (tenant)
    snprintf(r->auth->tenant, sizeof r->auth->tenant, "%s", tenant);
  if (object)
    snprintf(r->auth->object, sizeof r->auth->object, "%s", object);
}

static void unauthorized(struct tw_req *r, const char *why, bool invalid) {
  char hdr[256];
  if (invalid)
    snprintf(hdr, sizeof hdr,
             "Bearer realm=\"tradewind\", error=\"invalid_token\", "
             "error_description=\"%s\"",
             why);
  else
    snprintf(hdr, sizeof hdr, "Bearer realm=\"tradewind\"");
  tw_req_add_header(r, "WWW-Authenticate", hdr);
  tw_problem(r, 401, "unauthenticated", NULL, "%s", why);
}

/* Answers the verdict; true when allowed. */
static bool verdict(struct tw_req *r, enum tw_rbac_verdict v,
                    const char *what) {
  if (v == TW_RBAC_ALLOW)
    return true;
  r->auth->denied = true;
  if (v == TW_RBAC_HIDE)
    tw_problem(r, 404, "not-found", NULL, "%s not found", what);
  else
    tw_problem(r, 403, "forbidden", NULL, "role %s may not %s %s",
               tw_role_str(r->auth->who.role), r->method,
               tw_routes[r->route].path);
  return false;
}

bool tw_auth_check(struct tw_req *r, const char *tenant, const char *owner,
                   const char *what) {
  struct tw_auth_ctx *c = r->auth;
  if (!c)
    return false;
  if (tenant)
    snprintf(c->tenant, sizeof c->tenant, "%s", tenant);
  return verdict(r, tw_rbac_decide(c->rule, &c->who, tenant, owner), what);
}

/* ---- authentication
 * ------------------------------------------------------------- */

/* A `twa_` token: the agent of one attempt (docs/agent.md), whatever
 * auth.mode says.  Its principal holds no role: authorize_agent() alone
 * decides what it may call. */
static bool authenticate_agent(struct tw_auth *a, struct tw_req *r,
                               struct tw_auth_ctx *c, const char *tok) {
  char token[TW_AGENT_TOKEN_LEN + 1];
  size_t n = strcspn(tok, " \t\r\n");
  if (n != TW_AGENT_TOKEN_LEN || tok[n]) {
    unauthorized(r, "malformed agent token", true);
    return false;
  }
  memcpy(token, tok, n);
  token[n] = '\0';
  struct tw_agent *ag = tw_api_agent(r->api);
  struct tw_err err = {0};
  enum tw_rc rc = ag ? tw_agent_authenticate(ag, token, &c->caller, &err)
                     : tw_err_set(&err, TW_E_AUTH, "this server runs no agents");
  OPENSSL_cleanse(token, sizeof token);
  if (rc == TW_E_AUTH) {
    tw_log_info("auth", "request=%s agent token refused: %s", r->request_id,
                err.msg);
    unauthorized(r, err.msg, true);
    return false;
  }
  if (rc) {
    tw_log_error("auth", "request=%s agent token check failed: %s",
                 r->request_id, err.msg);
    tw_problem_err(r, &err);
    return false;
  }
  c->agent = true;
  snprintf(c->who.name, sizeof c->who.name, "agent:%.40s",
           c->caller.client_token);
  snprintf(c->who.token_id, sizeof c->who.token_id, "%s", c->caller.tag);
  int64_t wait = rate_take(a, c->caller.tag);
  if (wait) {
    char s[24];
    snprintf(s, sizeof s, "%" PRId64, wait);
    tw_req_add_header(r, "Retry-After", s);
    tw_problem(r, 429, "rate-limited", NULL,
               "agent of %s is over %" PRId64
               " requests per second; retry in %" PRId64 " s",
               c->caller.client_token, a->rate, wait);
    return false;
  }
  return true;
}

/* An agent may call the agent routes of its own attempt, while that
 * attempt lives (a replayed exit report after its end too), and nothing
 * else. */
static bool authorize_agent(struct tw_req *r, struct tw_auth_ctx *c) {
  const struct tw_rbac_rule *rule = c->rule;
  c->perm = TW_PERM_DENY;
  if (rule->target != TW_TGT_AGENT) {
    c->denied = true;
    tw_problem(r, 403, "forbidden", NULL,
               "an agent token may not %s %s: it reports for its attempt only",
               r->method, rule->path);
    return false;
  }
  bool exit_route = strstr(rule->path, "/exit") != NULL;
  if (!c->caller.live && !exit_route) {
    unauthorized(r, "agent token revoked: its attempt has ended", true);
    return false;
  }
  if (strstr(rule->path, "{attempt}") &&
      (!r->params[0] || strcmp(r->params[0], c->caller.client_token))) {
    c->denied = true;
    tw_problem(r, 403, "forbidden", NULL,
               "this agent token is for attempt %s, not %s",
               c->caller.client_token, r->params[0] ? r->params[0] : "");
    return false;
  }
  c->perm = TW_PERM_OWN;
  return true;
}

/* One line per refused token, naming it only by a well-formed id
 * (`twt_` + 16 hex digits: public, and it names the attempt); text of
 * any other shape might be somebody's secret and is not logged.  Bounded
 * to REFUSED_LINES_PER_S a second, so bad tokens cannot flood the log. */
static void refused_log(struct tw_auth *a, struct tw_req *r, const char *tok,
                        const char *why) {
  char id[TW_TOKEN_ID_LEN + 1] = "-";
  if (!strncmp(tok, "twt_", 4) &&
      strspn(tok + 4, "0123456789abcdef") >= TW_TOKEN_ID_LEN &&
      tok[4 + TW_TOKEN_ID_LEN] == '_')
    snprintf(id, sizeof id, "%.*s", TW_TOKEN_ID_LEN, tok + 4);
  int64_t now_s = tw_clock_now_ms(a->clock) / 1000, dropped = 0;
  bool write = false;
  pthread_mutex_lock(&a->mu);
  if (now_s != a->refused_s) {
    a->refused_s = now_s;
    a->refused_n = 0;
  }
  if (a->refused_n < REFUSED_LINES_PER_S) {
    a->refused_n++;
    write = true;
    dropped = a->refused_dropped;
    a->refused_dropped = 0;
  } else {
    a->refused_dropped++;
  }
  pthread_mutex_unlock(&a->mu);
  if (!write)
    return;
  if (dropped)
    tw_log_info("auth",
                "request=%s token=%s refused: %s (and %" PRId64
                " refused tokens not logged before it)",
                r->request_id, id, why, dropped);
  else
    tw_log_info("auth", "request=%s token=%s refused: %s", r->request_id, id,
                why);
}

static bool authenticate(struct tw_auth *a, struct tw_req *r,
                         struct tw_auth_ctx *c) {
  {
    const char *h = tw_req_header(r, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
      const char *t = h + 7;
      while (*t == ' ')
        t++;
      if (!strncmp(t, "twa_", 4))
        return authenticate_agent(a, r, c, t);
    }
  }
  if (a->open) {
    snprintf(c->who.name, sizeof c->who.name, "anonymous");
    snprintf(c->who.tenant, sizeof c->who.tenant, "%s", TW_TENANT_GLOBAL);
    c->who.role = TW_ROLE_ADMIN;
    return true;
  }
  const char *h = tw_req_header(r, "Authorization");
  if (!h || !*h) {
    unauthorized(
        r, "a bearer token is required (Authorization: Bearer <token>)", false);
    return false;
  }
  if (strncasecmp(h, "Bearer ", 7)) {
    unauthorized(r, "only Bearer tokens are accepted", true);
    return false;
  }
  const char *tok = h + 7;
  while (*tok == ' ')
    tok++;
  if (a->oidc && tw_oidc_is_jwt(tok)) { /* from an identity provider */
    if (!tw_auth_oidc(r, a->oidc, tok, &c->who))
      return false;
    goto signed_in;
  }
  char token[TW_TOKEN_LEN + 1];
  size_t n = strcspn(tok, " \t\r\n");
  if (n != TW_TOKEN_LEN || tok[n]) {
    unauthorized(r, "malformed token", true);
    return false;
  }
  memcpy(token, tok, n);
  token[n] = '\0';
  if (!a->ten) {
    OPENSSL_cleanse(token, sizeof token);
    unauthorized(r, "this server has no principals configured", true);
    return false;
  }
  struct tw_err err = {0};
  enum tw_rc rc = tw_tenancy_authenticate(a->ten, token, &c->who, &err);
  OPENSSL_cleanse(token, sizeof token);
  if (rc == TW_E_AUTH) {
    refused_log(a, r, tok, err.msg);
    unauthorized(r, err.msg, true);
    return false;
  }
  if (rc) {
    tw_log_error("auth", "request=%s token check failed: %s", r->request_id,
                 err.msg);
    tw_problem_err(r, &err);
    return false;
  }
signed_in:;
  int64_t wait = rate_take(a, c->who.token_id);
  if (wait) {
    char s[24];
    snprintf(s, sizeof s, "%" PRId64, wait);
    tw_req_add_header(r, "Retry-After", s);
    tw_problem(r, 429, "rate-limited", NULL,
               "token %s is over %" PRId64
               " requests per second (burst %" PRId64 "); retry in %" PRId64
               " s",
               c->who.token_id, a->rate, a->burst, wait);
    return false;
  }
  return true;
}

/* ---- authorization
 * --------------------------------------------------------------- */

static bool authorize(struct tw_auth *a, struct tw_req *r,
                      struct tw_auth_ctx *c, bool mutating) {
  const struct tw_rbac_rule *rule = c->rule;
  if (c->agent)
    return authorize_agent(r, c);
  c->perm = (enum tw_perm)rule->perm[c->who.role];
  if (c->perm == TW_PERM_DENY) {
    c->denied = true;
    tw_problem(r, 403, "forbidden", NULL, "role %s may not %s %s",
               tw_role_str(c->who.role), r->method, rule->path);
    return false;
  }
  if (strcmp(c->who.tenant, TW_TENANT_GLOBAL))
    snprintf(c->tenant, sizeof c->tenant, "%s", c->who.tenant);
  /* the admin reading needs no lookups; writes resolve for the audit */
  bool resolve = c->perm != TW_PERM_ANY || mutating;
  struct tw_err err = {0};
  char what[160];
  switch (rule->target) {
  case TW_TGT_PUBLIC:
  case TW_TGT_GLOBAL:
  case TW_TGT_BODY:
  case TW_TGT_AGENT: /* a role the row allows (the admin: the binary) */
    return true;
  case TW_TGT_QUERY_TENANT: {
    if (c->perm == TW_PERM_ANY)
      return true;
    const char *q = tw_req_query(r, "tenant");
    if (q && strcmp(q, c->who.tenant)) {
      c->denied = true;
      tw_problem(r, 404, "not-found", "tenant", "tenant %s not found", q);
      return false;
    }
    if (!q) {
      /* handlers read ?tenant=; the value must outlive this call only
       * until the handler returns, which it does inside dispatch */
      snprintf(c->query_tenant, sizeof c->query_tenant, "%s", c->who.tenant);
      tw_req_set_query(r, "tenant", c->query_tenant);
    }
    return true;
  }
  case TW_TGT_TENANT:
    snprintf(c->tenant, sizeof c->tenant, "%s",
             r->params[0] ? r->params[0] : "");
    snprintf(c->object, sizeof c->object, "tenant/%s", c->tenant);
    snprintf(what, sizeof what, "tenant %s", c->tenant);
    return verdict(r, tw_rbac_decide(rule, &c->who, c->tenant, NULL), what);
  case TW_TGT_JOB: {
    snprintf(c->object, sizeof c->object, "%s", r->params[0]);
    if (!resolve)
      return true;
    struct tw_job_rec job;
    if (tw_store_job_get(tw_api_store(r->api), r->params[0], &job, &err)) {
      tw_problem_err(r, &err);
      return false;
    }
    snprintf(c->tenant, sizeof c->tenant, "%s", job.tenant);
    tw_job_rec_release(&job);
    struct tw_job_owner owner;
    memset(&owner, 0, sizeof owner);
    bool owned = a->ten && tw_tenancy_job_owner(a->ten, r->params[0], &owner,
                                                NULL) == TW_OK;
    snprintf(what, sizeof what, "job %s", r->params[0]);
    return verdict(
        r,
        tw_rbac_decide(rule, &c->who, c->tenant,
                       owned && owner.principal[0] ? owner.principal : NULL),
        what);
  }
  case TW_TGT_WORKFLOW: {
    snprintf(c->object, sizeof c->object, "%s", r->params[0]);
    if (!resolve)
      return true;
    struct tw_flow_rec g;
    if (tw_store_flow_get(tw_api_store(r->api), r->params[0], &g, &err)) {
      tw_problem_err(r, &err);
      return false;
    }
    snprintf(c->tenant, sizeof c->tenant, "%.63s", g.tenant);
    snprintf(what, sizeof what, "workflow %s", r->params[0]);
    return verdict(r, tw_rbac_decide(rule, &c->who, c->tenant, NULL), what);
  }
  case TW_TGT_TOKEN: {
    snprintf(c->object, sizeof c->object, "token/%s", r->params[0]);
    snprintf(what, sizeof what, "token %s", r->params[0]);
    if (!resolve)
      return true;
    struct tw_token_info ti;
    if (!a->ten || tw_tenancy_token_get(a->ten, r->params[0], &ti, &err)) {
      tw_problem(r, 404, "not-found", NULL, "%s not found", what);
      return false;
    }
    snprintf(c->tenant, sizeof c->tenant, "%s", ti.tenant);
    return verdict(r, tw_rbac_decide(rule, &c->who, ti.tenant, ti.principal),
                   what);
  }
  case TW_TGT_USER: {
    snprintf(c->object, sizeof c->object, "principal/%s", r->params[0]);
    snprintf(what, sizeof what, "principal %s", r->params[0]);
    if (!resolve)
      return true;
    struct tw_principal p;
    if (!a->ten || tw_tenancy_user_get(a->ten, r->params[0], &p, &err)) {
      tw_problem(r, 404, "not-found", NULL, "%s not found", what);
      return false;
    }
    snprintf(c->tenant, sizeof c->tenant, "%s", p.tenant);
    return verdict(r, tw_rbac_decide(rule, &c->who, p.tenant, p.name), what);
  }
  }
  return false;
}

/* ---- the audit entry
 * ------------------------------------------------------------------ */

static const char *header_of(struct tw_req *r, const char *name) {
  for (int i = 0; i < r->n_hdr; i++)
    if (!strcasecmp(r->hdr_name[i], name))
      return r->hdr_value[i];
  return NULL;
}

static void record(struct tw_auth *a, struct tw_req *r, struct tw_auth_ctx *c) {
  const char *outcome = r->status < 300 ? "ok"
                        : c->denied || r->status == 401 || r->status == 403
                            ? "denied"
                        : r->status < 500 ? "refused"
                                          : "error";
  char action[160], detail[320];
  snprintf(action, sizeof action, "%s %s", r->method, tw_routes[r->route].path);
  if (!c->object[0]) {
    const char *loc = header_of(r, "Location");
    const char *slash = loc ? strrchr(loc, '/') : NULL;
    if (slash && slash[1])
      snprintf(c->object, sizeof c->object, "%s", slash + 1);
    else if (r->params[0])
      snprintf(c->object, sizeof c->object, "%s", r->params[0]);
  }
  snprintf(detail, sizeof detail, "status=%u%s%s", r->status,
           c->note[0] ? " " : "", c->note);
  if (r->status >= 400 && r->out.data) {
    /* the problem's detail, without the JSON around it */
    const char *d = strstr(r->out.data, "\"detail\":\"");
    if (d) {
      /* up to the closing quote, not the first escaped one: \" and \\
       * read as themselves, other escapes stay as written */
      size_t o = strlen(detail), start = o;
      detail[o++] = ' ';
      for (d += 10;
           *d && *d != '"' && o + 1 < sizeof detail && o - start <= 200; d++) {
        if (*d == '\\' && (d[1] == '"' || d[1] == '\\'))
          d++;
        else if (*d == '\\' && d[1])
          detail[o++] = *d++;
        if (o + 1 < sizeof detail)
          detail[o++] = *d;
      }
      detail[o] = '\0';
    }
  }
  struct tw_audit_event ev = {.principal = c->who.name[0] ? c->who.name : "-",
                              .tenant = c->tenant,
                              .action = action,
                              .object = c->object,
                              .outcome = outcome,
                              .request_id = r->request_id,
                              .detail = detail};
  struct tw_err err = {0};
  if (tw_tenancy_request_done(a->ten, &ev, NULL, &err))
    tw_log_error("audit", "request=%s %s not recorded: %s", r->request_id,
                 action, err.msg);
}

/* ---- dispatch
 * -----------------------------------------------------------------------------
 */

void tw_auth_dispatch(struct tw_req *r, tw_handler_fn fn) {
  struct tw_auth *a = auth_of(r);
  const struct tw_route *route = &tw_routes[r->route];
  struct tw_auth_ctx c;
  memset(&c, 0, sizeof c);
  c.rule = tw_rbac_find(route->method, route->path);
  r->auth = &c;
  bool mutating = strcmp(r->method, "GET") && strcmp(r->method, "HEAD");
  if (!c.rule) {
    /* fail closed: a route nobody wrote a rule for serves nobody */
    tw_log_error("auth", "request=%s no access rule for %s %s: refused",
                 r->request_id, route->method, route->path);
    tw_problem(r, 403, "forbidden", NULL, "no access rule covers %s %s",
               route->method, route->path);
    goto out;
  }
  if (c.rule->target == TW_TGT_PUBLIC) {
    fn(r);
    goto out;
  }
  if (r->head_auth) { /* authenticated from the head (tw_auth_head) */
    const struct tw_rbac_rule *rule = c.rule;
    c = *r->head_auth;
    c.rule = rule;
  }
  else if (!authenticate(a, r, &c))
    goto out; /* 401s and 429s are not audited: nobody to name, or flooding */
  if (authorize(a, r, &c, mutating))
    fn(r);
  /* The open mode has nobody to name: its requests are not audited (the
   * scheduler's decisions still are).  A job created was audited in its
   * own transaction (tw_auth_job_store). */
  /* an agent's reports (a heartbeat every few seconds) are not audited:
   * what they change is in the job's events */
  if (mutating && a->ten && !a->open && !c.audited && !c.agent)
    record(a, r, &c);
out:
  r->auth = NULL;
}

bool tw_auth_head(struct tw_req *r) {
  const struct tw_route *route = &tw_routes[r->route];
  struct tw_auth_ctx c;
  memset(&c, 0, sizeof c);
  c.rule = tw_rbac_find(route->method, route->path);
  if (!c.rule || c.rule->target == TW_TGT_PUBLIC)
    return true; /* tw_auth_dispatch answers: 403, or the probe */
  r->auth = &c;
  bool ok = authenticate(auth_of(r), r, &c);
  r->auth = NULL;
  if (ok) {
    r->head_auth = tw_malloc(sizeof *r->head_auth);
    *r->head_auth = c; /* the principal, and an agent's attempt */
  }
  return ok;
}

bool tw_auth_may_read_job(struct tw_req *r, const struct tw_job_rec *job) {
  struct tw_auth_ctx *c = r->auth;
  struct tw_auth *a = auth_of(r);
  if (!c || a->open)
    return true;
  const struct tw_rbac_rule *rule = tw_rbac_find("GET", "/v1/jobs/{id}");
  struct tw_job_owner owner;
  memset(&owner, 0, sizeof owner);
  bool owned =
      a->ten && tw_tenancy_job_owner(a->ten, job->id, &owner, NULL) == TW_OK;
  return rule &&
         tw_rbac_decide(rule, &c->who, job->tenant,
                        owned && owner.principal[0] ? owner.principal : NULL) ==
             TW_RBAC_ALLOW;
}

/* ---- job submission
 * ---------------------------------------------------------------------------
 */

static bool problem_admission(struct tw_req *r, const struct tw_err *err) {
  if (err->rc == TW_E_QUOTA) {
    bool budget = !strncmp(err->field, "budget.", 7);
    tw_problem(r, 403, budget ? "budget-exceeded" : "quota-exceeded",
               err->field, "%s", err->msg);
  } else {
    tw_problem_err(r, err);
  }
  return false;
}

bool tw_auth_admit_job(struct tw_req *r, struct tw_job_spec *spec) {
  struct tw_auth_ctx *c = r->auth;
  struct tw_auth *a = auth_of(r);
  if (!c)
    return true;
  if (c->who.role != TW_ROLE_ADMIN && !strcmp(spec->tenant, "default") &&
      strcmp(c->who.tenant, "default")) {
    /* a spec without tenant: goes to the caller's own */
    free(spec->tenant);
    spec->tenant = tw_strdup(c->who.tenant);
  }
  snprintf(c->tenant, sizeof c->tenant, "%s", spec->tenant);
  char what[192];
  snprintf(what, sizeof what, "tenant %s", spec->tenant);
  if (!verdict(r, tw_rbac_decide(c->rule, &c->who, spec->tenant, NULL), what))
    return false;
  if (!a->ten)
    return true;
  struct tw_admission adm;
  struct tw_err err = {0};
  if (tw_tenancy_admit(a->ten, spec, c->who.name, r->request_id, &adm, &err))
    return problem_admission(r, &err);
  c->projected_uusd = adm.projected_uusd;
  return true;
}

bool tw_auth_admit_group(struct tw_req *r, char **tenant,
                         const struct tw_job_spec *const *specs,
                         const int64_t *counts, size_t n,
                         int64_t *projected_uusd) {
  struct tw_auth_ctx *c = r->auth;
  struct tw_auth *a = auth_of(r);
  *projected_uusd = 0;
  if (!c)
    return true;
  if (c->who.role != TW_ROLE_ADMIN && !strcmp(*tenant, "default") &&
      strcmp(c->who.tenant, "default")) {
    free(*tenant);
    *tenant = tw_strdup(c->who.tenant);
  }
  snprintf(c->tenant, sizeof c->tenant, "%s", *tenant);
  char what[192];
  snprintf(what, sizeof what, "tenant %s", *tenant);
  if (!verdict(r, tw_rbac_decide(c->rule, &c->who, *tenant, NULL), what))
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcmp(specs[i]->tenant, *tenant)) {
      tw_problem(r, 400, "invalid-field", "tenant",
                 "tenant: every task runs in the workflow's tenant %s, not "
                 "%s",
                 *tenant, specs[i]->tenant);
      return false;
    }
  if (!a->ten)
    return true;
  struct tw_admission adm;
  struct tw_err err = {0};
  if (tw_tenancy_admit_group(a->ten, specs, counts, n, c->who.name,
                             r->request_id, &adm, &err))
    return problem_admission(r, &err);
  c->projected_uusd = adm.projected_uusd;
  *projected_uusd = adm.projected_uusd;
  return true;
}

enum tw_rc tw_auth_job_store(struct tw_req *r, const struct tw_job_new *req,
                             struct tw_job_rec *out, bool *replayed,
                             struct tw_err *err) {
  struct tw_auth_ctx *c = r->auth;
  struct tw_auth *a = auth_of(r);
  if (!c || !a->ten)
    return tw_store_job_create(tw_api_store(r->api), req, out, replayed, err);
  /* The entry record() would write after a 201, written now: the answer
   * to a stored job is always 201 (a replay, 200, writes nothing). */
  char action[160];
  snprintf(action, sizeof action, "%s %s", r->method, tw_routes[r->route].path);
  struct tw_audit_event ev = {.principal = c->who.name[0] ? c->who.name : "-",
                              .tenant = c->tenant,
                              .action = action,
                              .outcome = "ok",
                              .request_id = r->request_id,
                              .detail = "status=201"};
  struct tw_job_created owner = {.tenant = req->tenant,
                                 .project = req->project,
                                 .principal = c->who.name,
                                 .projected_uusd = c->projected_uusd};
  /* the open mode audits no request and keeps an owner only for the
   * projection a budget asked for */
  bool keep_owner = !a->open || c->projected_uusd > 0;
  enum tw_rc rc =
      tw_tenancy_job_submit(a->ten, req, keep_owner ? &owner : NULL,
                            a->open ? NULL : &ev, out, replayed, err);
  if (rc == TW_OK) {
    c->audited = true;
    snprintf(c->object, sizeof c->object, "%s", out->id);
  }
  return rc;
}
