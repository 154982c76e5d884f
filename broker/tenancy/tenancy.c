/* tenancy.c - tenants, principals, tokens, job owners, the first start's
 * admin token, and the maintenance thread (see tenancy.h). */
#include "broker/tenancy/tenancy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker/tenancy/audit.h"
#include "broker/base/log.h"
#include "broker/core/store.h"
#include "broker/core/store_tenancy.h"
#include "broker/core/store_workdirs.h"
#include "broker/tenancy/tenancy_int.h"
#include "policies/place/index.h"
#include "policies/place/policy.h"
#include "providers/http.h"

/* ---- small helpers ----------------------------------------------------------
 */

static const char *const ROLE_NAMES[TW_ROLE_COUNT] = {
    "admin", "tenant-admin", "member", "viewer", "finance", "ci", "metrics"};

const char *tw_role_str(enum tw_role r) {
  return (unsigned)r < TW_ROLE_COUNT ? ROLE_NAMES[r] : "none";
}

bool tw_role_parse(const char *s, enum tw_role *out) {
  for (int i = 0; s && i < TW_ROLE_COUNT; i++)
    if (!strcmp(s, ROLE_NAMES[i])) {
      *out = (enum tw_role)i;
      return true;
    }
  return false;
}

bool tw_tenancy_name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= TW_NAME_MAX || s[0] == '.' || s[0] == '-')
    return false;
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* The store's row of a principal, as the module's struct; an unknown role
 * reads as viewer (never more than it should be). */
static void principal_from(const struct tw_store_principal *r,
                           struct tw_principal *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "%s", r->name);
  snprintf(o->tenant, sizeof o->tenant, "%s", r->tenant);
  o->service = r->service;
  o->disabled = r->disabled;
  o->created_ms = r->created_ms;
  if (!tw_role_parse(r->role, &o->role))
    o->role = TW_ROLE_VIEWER;
}

static void token_from(const struct tw_store_token *r,
                       struct tw_token_info *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->id, sizeof o->id, "%s", r->id);
  snprintf(o->principal, sizeof o->principal, "%s", r->principal);
  snprintf(o->tenant, sizeof o->tenant, "%s", r->tenant);
  snprintf(o->name, sizeof o->name, "%s", r->name);
  o->created_ms = r->created_ms;
  o->expires_ms = r->expires_ms;
  o->revoked_ms = r->revoked_ms;
}

static void tenant_from(const struct tw_store_tenant *r,
                        struct tw_tenant_info *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "%s", r->name);
  snprintf(o->cohort, sizeof o->cohort, "%s", r->cohort);
  o->created_ms = r->created_ms;
}

void tn_audit(struct tw_tenancy *t, const char *principal, const char *tenant,
              const char *action, const char *object, const char *outcome,
              const char *request_id, const char *detail) {
  struct tw_audit_event ev = {.principal = principal,
                              .tenant = tenant,
                              .action = action,
                              .object = object,
                              .outcome = outcome,
                              .request_id = request_id,
                              .detail = detail};
  struct tw_err err = {0};
  if (tw_audit_append(t->audit, &ev, NULL, &err))
    tw_log_error("audit", "action=%s object=%s not recorded: %s", action,
                 object ? object : "", err.msg);
}

struct tw_audit *tw_tenancy_audit(struct tw_tenancy *t) {
  return t->audit;
}
struct tw_store *tw_tenancy_store(struct tw_tenancy *t) {
  return t->store;
}
struct tw_clock *tw_tenancy_clock(struct tw_tenancy *t) {
  return t->clock;
}

/* ---- tokens ---------------------------------------------------------------
 */

static void sha256(const EVP_MD *md, const void *data, size_t n,
                   unsigned char out[32]) {
  unsigned int len = 0;
  EVP_Digest(data, n, out, &len, md ? md : EVP_sha256(), NULL);
}

static void hex(const unsigned char *in, size_t n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = d[in[i] >> 4];
    out[2 * i + 1] = d[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static void b64url(const unsigned char *in, size_t n, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 8) | in[i];
    bits += 8;
    while (bits >= 6) {
      out[o++] = a[(acc >> (bits - 6)) & 63];
      bits -= 6;
    }
  }
  if (bits)
    out[o++] = a[(acc << (6 - bits)) & 63];
  out[o] = '\0';
}

/* The shape of a token, checked before anything is looked up:
 * "twt_" 16 lower hex "_" 43 base64url. */
static bool token_shape(const char *tok, char id[TW_TOKEN_ID_LEN + 1]) {
  if (!tok || strlen(tok) != TW_TOKEN_LEN || strncmp(tok, "twt_", 4) ||
      tok[4 + TW_TOKEN_ID_LEN] != '_')
    return false;
  for (int i = 0; i < TW_TOKEN_ID_LEN; i++) {
    char c = tok[4 + i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  }
  for (const char *p = tok + 5 + TW_TOKEN_ID_LEN; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return false;
  }
  memcpy(id, tok + 4, TW_TOKEN_ID_LEN);
  id[TW_TOKEN_ID_LEN] = '\0';
  return true;
}

/* A fresh token: 64 random bits of public id, 256 of secret. */
static enum tw_rc token_new(char tok[TW_TOKEN_LEN + 1],
                            char id[TW_TOKEN_ID_LEN + 1],
                            unsigned char hash[32], struct tw_err *err) {
  unsigned char idb[8], sec[32];
  char sec64[48];
  if (RAND_bytes(idb, sizeof idb) != 1 || RAND_bytes(sec, sizeof sec) != 1)
    return tw_err_set(err, TW_E_INTERNAL, "tenancy: no randomness for a token");
  hex(idb, sizeof idb, id);
  b64url(sec, sizeof sec, sec64);
  snprintf(tok, TW_TOKEN_LEN + 1, "twt_%s_%s", id, sec64);
  OPENSSL_cleanse(sec, sizeof sec);
  OPENSSL_cleanse(sec64, sizeof sec64);
  sha256(NULL, tok, strlen(tok), hash);
  return TW_OK;
}

enum tw_rc tw_tenancy_authenticate(struct tw_tenancy *t, const char *token,
                                   struct tw_principal *out,
                                   struct tw_err *err) {
  char id[TW_TOKEN_ID_LEN + 1];
  memset(out, 0, sizeof *out);
  if (!token_shape(token, id))
    return tw_err_set(err, TW_E_AUTH, "malformed token");
  struct tw_store_token_auth a;
  enum tw_rc rc = tw_store_token_auth(t->store, id, &a, err);
  if (rc)
    return rc;
  unsigned char h[32];
  sha256(t->sha256, token, strlen(token), h);
  /* Compare whether or not the id was found, so an unknown id costs what
   * a wrong secret costs. */
  static const unsigned char dummy[32] = {0};
  int differ = CRYPTO_memcmp(h, a.found ? a.hash : dummy, 32);
  if (!a.found || differ)
    return tw_err_set(err, TW_E_AUTH, "unknown token");
  if (a.revoked_ms)
    return tw_err_set(err, TW_E_AUTH, "token revoked");
  if (a.expires_ms && tw_clock_now_ms(t->clock) >= a.expires_ms)
    return tw_err_set(err, TW_E_AUTH, "token expired");
  if (a.p.disabled)
    return tw_err_set(err, TW_E_AUTH, "principal disabled");
  enum tw_role role;
  if (!tw_role_parse(a.p.role, &role))
    return tw_err_set(err, TW_E_AUTH, "principal has an unknown role");
  principal_from(&a.p, out);
  out->role = role;
  memcpy(out->token_id, id, sizeof id);
  return TW_OK;
}

enum tw_rc tw_tenancy_token_create(struct tw_tenancy *t, const char *principal,
                                   const char *name, int64_t ttl_ms,
                                   char token_out[TW_TOKEN_LEN + 1],
                                   struct tw_token_info *info,
                                   struct tw_err *err) {
  char id[TW_TOKEN_ID_LEN + 1];
  unsigned char hash[32];
  enum tw_rc rc;
  token_out[0] = '\0';
  if (name && strlen(name) >= TW_NAME_MAX)
    return tw_err_field(err, TW_E_INVALID, "name",
                        "name: at most %d characters", TW_NAME_MAX - 1);
  /* a label for people, shown in lists and logs: no control bytes */
  for (const unsigned char *p = (const unsigned char *)name; p && *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return tw_err_field(err, TW_E_INVALID, "name",
                          "name: control characters (byte 0x%02x) are not "
                          "accepted",
                          *p);
  if (ttl_ms < 0)
    return tw_err_field(err, TW_E_INVALID, "ttl", "ttl: must not be negative");
  if ((rc = token_new(token_out, id, hash, err)))
    return rc;
  int64_t now = tw_clock_now_ms(t->clock);
  struct tw_store_token_new a = {.principal = principal,
                                 .name = name ? name : "",
                                 .id = id,
                                 .hash = hash,
                                 .created_ms = now,
                                 .expires_ms = ttl_ms ? now + ttl_ms : 0};
  struct tw_store_token stored;
  rc = tw_store_token_create(t->store, &a, &stored, err);
  if (rc) {
    OPENSSL_cleanse(token_out, TW_TOKEN_LEN + 1);
    token_out[0] = '\0';
    return rc;
  }
  if (info)
    token_from(&stored, info);
  tw_log_info("tenancy", "principal=%s token=%s created", principal, id);
  return TW_OK;
}

enum tw_rc tw_tenancy_token_get(struct tw_tenancy *t, const char *id,
                                struct tw_token_info *out, struct tw_err *err) {
  struct tw_store_token r;
  enum tw_rc rc = tw_store_token_get(t->store, id, &r, err);
  if (rc == TW_OK)
    token_from(&r, out);
  return rc;
}

enum tw_rc tw_tenancy_token_list(struct tw_tenancy *t, const char *principal,
                                 const char *tenant, struct tw_token_info **out,
                                 size_t *n, struct tw_err *err) {
  struct tw_store_token *rows = NULL;
  size_t nr = 0;
  enum tw_rc rc =
      tw_store_token_list(t->store, principal, tenant, &rows, &nr, err);
  if (rc)
    return rc;
  struct tw_token_info *items = nr ? tw_calloc(nr, sizeof *items) : NULL;
  for (size_t i = 0; i < nr; i++)
    token_from(&rows[i], &items[i]);
  free(rows);
  *out = items;
  *n = nr;
  return TW_OK;
}

enum tw_rc tw_tenancy_token_revoke(struct tw_tenancy *t, const char *id,
                                   struct tw_err *err) {
  enum tw_rc rc =
      tw_store_token_revoke(t->store, id, tw_clock_now_ms(t->clock), err);
  if (rc == TW_OK)
    tw_log_info("tenancy", "token=%s revoked", id);
  return rc;
}

/* ---- principals -------------------------------------------------------------
 */

static enum tw_rc check_principal(const struct tw_principal *p,
                                  struct tw_err *err) {
  if (!tw_tenancy_name_ok(p->name))
    return tw_err_field(
        err, TW_E_INVALID, "name",
        "name: expected 1 to 63 of [A-Za-z0-9._-], got \"%.64s\"", p->name);
  if ((unsigned)p->role >= TW_ROLE_COUNT)
    return tw_err_field(err, TW_E_INVALID, "role", "role: unknown");
  bool global = !strcmp(p->tenant, TW_TENANT_GLOBAL);
  if (p->role == TW_ROLE_ADMIN && !global)
    return tw_err_field(err, TW_E_INVALID, "role",
                        "role: admin is global; give tenant \"*\" (or pick "
                        "tenant-admin for one tenant)");
  if (p->role != TW_ROLE_ADMIN && global)
    return tw_err_field(err, TW_E_INVALID, "tenant",
                        "tenant: \"*\" is only for the admin role");
  if (!global && !tw_tenancy_name_ok(p->tenant))
    return tw_err_field(
        err, TW_E_INVALID, "tenant",
        "tenant: expected 1 to 63 of [A-Za-z0-9._-], got \"%.64s\"", p->tenant);
  return TW_OK;
}

enum tw_rc tw_tenancy_user_create(struct tw_tenancy *t,
                                  const struct tw_principal *p,
                                  struct tw_err *err) {
  enum tw_rc rc = check_principal(p, err);
  if (rc)
    return rc;
  struct tw_store_principal r = {.service = p->service,
                                 .created_ms = tw_clock_now_ms(t->clock)};
  snprintf(r.name, sizeof r.name, "%s", p->name);
  snprintf(r.tenant, sizeof r.tenant, "%s", p->tenant);
  snprintf(r.role, sizeof r.role, "%s", tw_role_str(p->role));
  bool global = !strcmp(p->tenant, TW_TENANT_GLOBAL);
  if ((rc = tw_store_principal_create(t->store, &r, !global, err)) == TW_OK)
    tw_log_info("tenancy", "principal=%s tenant=%s role=%s created", p->name,
                p->tenant, tw_role_str(p->role));
  return rc;
}

enum tw_rc tw_tenancy_user_get(struct tw_tenancy *t, const char *name,
                               struct tw_principal *out, struct tw_err *err) {
  struct tw_store_principal r;
  enum tw_rc rc = tw_store_principal_get(t->store, name, &r, err);
  if (rc == TW_OK)
    principal_from(&r, out);
  return rc;
}

enum tw_rc tw_tenancy_user_list(struct tw_tenancy *t, const char *tenant,
                                struct tw_principal **out, size_t *n,
                                struct tw_err *err) {
  struct tw_store_principal *rows = NULL;
  size_t nr = 0;
  enum tw_rc rc = tw_store_principal_list(t->store, tenant, &rows, &nr, err);
  if (rc)
    return rc;
  struct tw_principal *items = nr ? tw_calloc(nr, sizeof *items) : NULL;
  for (size_t i = 0; i < nr; i++)
    principal_from(&rows[i], &items[i]);
  free(rows);
  *out = items;
  *n = nr;
  return TW_OK;
}

enum tw_rc tw_tenancy_user_disable(struct tw_tenancy *t, const char *name,
                                   struct tw_err *err) {
  enum tw_rc rc = tw_store_principal_disable(t->store, name, err);
  if (rc == TW_OK)
    tw_log_info("tenancy", "principal=%s disabled", name);
  return rc;
}

/* ---- tenants
 * ------------------------------------------------------------------ */

enum tw_rc tw_tenancy_tenant_create(struct tw_tenancy *t, const char *name,
                                    struct tw_err *err) {
  if (!tw_tenancy_name_ok(name))
    return tw_err_field(
        err, TW_E_INVALID, "name",
        "name: expected 1 to 63 of [A-Za-z0-9._-], got \"%.64s\"",
        name ? name : "");
  enum tw_rc rc =
      tw_store_tenant_create(t->store, name, tw_clock_now_ms(t->clock), err);
  if (rc == TW_OK) {
    tn_cache_changed(t);
    tw_log_info("tenancy", "tenant=%s created", name);
  }
  return rc;
}

enum tw_rc tw_tenancy_tenant_get(struct tw_tenancy *t, const char *name,
                                 struct tw_tenant_info *out,
                                 struct tw_err *err) {
  struct tw_store_tenant r;
  enum tw_rc rc = tw_store_tenant_get(t->store, name, &r, err);
  if (rc == TW_OK)
    tenant_from(&r, out);
  return rc;
}

enum tw_rc tw_tenancy_tenant_list(struct tw_tenancy *t,
                                  struct tw_tenant_info **out, size_t *n,
                                  struct tw_err *err) {
  struct tw_store_tenant *rows = NULL;
  size_t nr = 0;
  enum tw_rc rc = tw_store_tenant_list(t->store, &rows, &nr, err);
  if (rc)
    return rc;
  struct tw_tenant_info *items = nr ? tw_calloc(nr, sizeof *items) : NULL;
  for (size_t i = 0; i < nr; i++)
    tenant_from(&rows[i], &items[i]);
  free(rows);
  *out = items;
  *n = nr;
  return TW_OK;
}

/* ---- job owners and request records
 * ------------------------------------------- */

enum tw_rc tw_tenancy_job_owner(struct tw_tenancy *t, const char *job_id,
                                struct tw_job_owner *out, struct tw_err *err) {
  struct tw_store_owner_rec r;
  bool found = false;
  enum tw_rc rc = tw_store_job_owner_get(t->store, job_id, &found, &r, err);
  if (rc)
    return rc;
  if (!found)
    return tw_err_set(err, TW_E_NOTFOUND, "job %s has no recorded owner",
                      job_id);
  memset(out, 0, sizeof *out);
  snprintf(out->principal, sizeof out->principal, "%s", r.principal);
  snprintf(out->tenant, sizeof out->tenant, "%s", r.tenant);
  snprintf(out->project, sizeof out->project, "%s", r.project);
  out->projected_uusd = r.projected_uusd;
  return TW_OK;
}

enum tw_rc tw_tenancy_request_done(struct tw_tenancy *t,
                                   const struct tw_audit_event *ev,
                                   const struct tw_job_created *job,
                                   struct tw_err *err) {
  struct tw_store_owner o;
  if (job)
    o = (struct tw_store_owner){.job_id = job->job_id,
                                .tenant = job->tenant,
                                .project = job->project,
                                .principal = job->principal,
                                .projected_uusd = job->projected_uusd};
  return tw_store_job_owner_put(t->store, job ? &o : NULL, ev,
                                tw_clock_now_ms(t->clock), err);
}

enum tw_rc tw_tenancy_job_submit(struct tw_tenancy *t,
                                 const struct tw_job_new *job,
                                 const struct tw_job_created *owner,
                                 const struct tw_audit_event *ev,
                                 struct tw_job_rec *out, bool *replayed,
                                 struct tw_err *err) {
  struct tw_store_owner o;
  if (owner)
    o = (struct tw_store_owner){.tenant = owner->tenant,
                                .project = owner->project,
                                .principal = owner->principal,
                                .projected_uusd = owner->projected_uusd};
  return tw_store_job_submit(t->store, job, owner ? &o : NULL, ev, out,
                             replayed, err);
}

/* ---- the quota and budget cache
 * -------------------------------------------------- */

void tn_cache_changed(struct tw_tenancy *t) {
  __atomic_add_fetch(&t->gen, 1, __ATOMIC_ACQ_REL);
}

/* Reloads when stale; called with cmu held.  On a failed load the cache
 * stays stale and the next lookup tries again. */
static void cache_fresh(struct tw_tenancy *t) {
  uint64_t gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
  if (gen == t->loaded_gen)
    return;
  struct tw_quota *q = NULL;
  struct tw_budget *b = NULL;
  size_t nq = 0, nb = 0;
  struct tw_err err = {0};
  if (tn_load_all_quotas(t, &q, &nq, &err) ||
      tn_load_all_budgets(t, &b, &nb, &err)) {
    tw_log_warn("tenancy", "quotas and budgets not reloaded: %s", err.msg);
    free(q);
    free(b);
    return;
  }
  free(t->cq);
  free(t->cb);
  t->cq = q;
  t->n_cq = nq;
  t->cb = b;
  t->n_cb = nb;
  t->loaded_gen = gen;
}

bool tn_cache_quota(struct tw_tenancy *t, const char *tenant,
                    struct tw_quota *out) {
  bool found = false;
  pthread_mutex_lock(&t->cmu);
  cache_fresh(t);
  for (size_t i = 0; i < t->n_cq && !found; i++)
    if (!strcmp(t->cq[i].tenant, tenant)) {
      *out = t->cq[i];
      found = true;
    }
  pthread_mutex_unlock(&t->cmu);
  return found;
}

#define KNOWN_MAX 1024 /* more tenants than that: the rest looked up */

bool tn_tenant_known(struct tw_tenancy *t, const char *tenant) {
  bool found = false;
  if (!tenant)
    return false;
  pthread_mutex_lock(&t->cmu);
  for (size_t i = 0; i < t->n_known && !found; i++)
    found = !strcmp(t->known[i], tenant);
  pthread_mutex_unlock(&t->cmu);
  return found;
}

void tn_tenant_seen(struct tw_tenancy *t, const char *tenant) {
  if (!tenant || strlen(tenant) >= sizeof t->known[0])
    return;
  pthread_mutex_lock(&t->cmu);
  bool found = false;
  for (size_t i = 0; i < t->n_known && !found; i++)
    found = !strcmp(t->known[i], tenant);
  if (!found && t->n_known < KNOWN_MAX) {
    if (!t->known)
      t->known = tw_calloc(KNOWN_MAX, sizeof *t->known);
    snprintf(t->known[t->n_known++], sizeof t->known[0], "%s", tenant);
  }
  pthread_mutex_unlock(&t->cmu);
}

size_t tn_cache_budgets(struct tw_tenancy *t, const char *tenant,
                        const char *project, struct tw_budget out[2]) {
  size_t n = 0;
  pthread_mutex_lock(&t->cmu);
  cache_fresh(t);
  for (size_t i = 0; i < t->n_cb && n < 2; i++)
    if (!strcmp(t->cb[i].tenant, tenant) &&
        (!t->cb[i].project[0] ||
         (project && !strcmp(t->cb[i].project, project))))
      out[n++] = t->cb[i];
  pthread_mutex_unlock(&t->cmu);
  return n;
}

/* ---- opening and the first admin token
 * ------------------------------------------ */

void tw_tenancy_token_path(const char *db_path, char *out, size_t outsz) {
  const char *slash = db_path ? strrchr(db_path, '/') : NULL;
  if (!slash)
    snprintf(out, outsz, "admin.token");
  else if (slash == db_path)
    snprintf(out, outsz, "/admin.token");
  else
    snprintf(out, outsz, "%.*s/admin.token", (int)(slash - db_path), db_path);
}

/* Writes text to path readable by its owner only: a temporary file made
 * with mode 0600 (never wider, whatever the umask), then renamed. */
static enum tw_rc write_private(const char *path, const char *text,
                                struct tw_err *err) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  int fd =
      open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return tw_err_set(err, TW_E_IO, "tenancy: cannot create %s: %s", tmp,
                      strerror(errno));
  size_t n = strlen(text);
  bool bad = fchmod(fd, 0600) != 0 || write(fd, text, n) != (ssize_t)n ||
             write(fd, "\n", 1) != 1 || fsync(fd) != 0;
  bad |= close(fd) != 0;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return tw_err_set(err, TW_E_IO, "tenancy: cannot write %s: %s", path,
                      strerror(e));
  }
  return TW_OK;
}

static enum tw_rc bootstrap(struct tw_tenancy *t, const char *file,
                            struct tw_err *err) {
  int64_t n = 0;
  enum tw_rc rc = tw_store_principal_count(t->store, &n, err);
  if (rc || n > 0 || !file || !*file)
    return rc;
  char tok[TW_TOKEN_LEN + 1], id[TW_TOKEN_ID_LEN + 1];
  unsigned char hash[32];
  if ((rc = token_new(tok, id, hash, err)))
    return rc;
  /* The file first: a database holding an admin whose token nobody has
   * would lock everybody out. */
  rc = write_private(file, tok, err);
  OPENSSL_cleanse(tok, sizeof tok);
  if (rc)
    return rc;
  /* the tenant "default", the global admin, its token and the entry, in
   * one transaction */
  struct tw_store_principal admin = {.name = "admin",
                                     .tenant = TW_TENANT_GLOBAL};
  snprintf(admin.role, sizeof admin.role, "%s", tw_role_str(TW_ROLE_ADMIN));
  struct tw_store_token_new first = {
      .id = id, .principal = "admin", .name = "bootstrap", .hash = hash};
  struct tw_audit_event ev = {
      .principal = "tradewindd",
      .action = "tenancy.bootstrap",
      .object = "principal/admin",
      .outcome = "ok",
      .detail = "first start: admin principal and token made"};
  struct tw_store_bootstrap b = {.tenant = "default",
                                 .admin = &admin,
                                 .token = &first,
                                 .audit = &ev,
                                 .at_ms = tw_clock_now_ms(t->clock)};
  bool made = false;
  if ((rc = tw_store_tenancy_bootstrap(t->store, &b, &made, err))) {
    unlink(file);
    return rc;
  }
  if (!made) {
    unlink(file);
    return TW_OK;
  }
  tw_log_info("tenancy",
              "first start: admin token %s written to %s (mode 0600)", id,
              file);
  return TW_OK;
}

enum tw_rc tw_tenancy_open(const struct tw_tenancy_opts *opts,
                           struct tw_tenancy **out, struct tw_err *err) {
  enum tw_rc rc;
  *out = NULL;
  struct tw_tenancy *t = tw_calloc(1, sizeof *t);
  t->store = opts->store;
  t->clock = opts->clock ? opts->clock : tw_clock_real();
  t->providers = opts->providers;
  t->n_providers = opts->n_providers;
  t->webhook_timeout_ms =
      opts->webhook_timeout_ms > 0 ? opts->webhook_timeout_ms : 5000;
  if ((rc = tn_webhook_allow_set(t, opts->webhook_allow, err))) {
    free(t->hook_allow);
    free(t);
    return rc;
  }
  t->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  pthread_mutex_init(&t->mu, NULL);
  pthread_mutex_init(&t->cmu, NULL);
  t->gen = 1;
  pthread_mutex_init(&t->tmu, NULL);
  pthread_cond_init(&t->tcv, NULL);
  if ((rc = tw_audit_open(t->store, t->clock, &t->audit, err)) ||
      (rc = bootstrap(t, opts->admin_token_file, err))) {
    tw_tenancy_free(t);
    return rc;
  }
  *out = t;
  return TW_OK;
}

/* ---- maintenance thread
 * ------------------------------------------------------------ */

/* SkyPilot tasks' workdirs (store_workdirs.h): once a minute, those no
 * job that has not ended holds and nobody used for an hour go. */
#define WORKDIR_SWEEP_MS 60000
#define WORKDIR_KEEP_MS 3600000

static void sweep_workdirs(struct tw_tenancy *t) {
  int64_t now = tw_clock_now_ms(t->clock);
  if (now - t->workdirs_swept_ms < WORKDIR_SWEEP_MS)
    return;
  t->workdirs_swept_ms = now;
  int64_t removed = 0;
  struct tw_err err = {0};
  if (tw_store_workdir_sweep(t->store, now - WORKDIR_KEEP_MS, &removed, &err))
    tw_log_warn("tenancy", "workdirs not swept: %s", err.msg);
  else if (removed)
    tw_log_info("tenancy", "workdirs removed=%lld (no job holds them)",
                (long long)removed);
}

static void *tick_main(void *arg) {
  struct tw_tenancy *t = arg;
  pthread_mutex_lock(&t->tmu);
  while (!t->stopping) {
    pthread_mutex_unlock(&t->tmu);
    tw_tenancy_tick(t);
    sweep_workdirs(t);
    pthread_mutex_lock(&t->tmu);
    if (t->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += t->interval_ms / 1000;
    ts.tv_nsec += (t->interval_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&t->tcv, &t->tmu, &ts);
  }
  pthread_mutex_unlock(&t->tmu);
  return NULL;
}

enum tw_rc tw_tenancy_start(struct tw_tenancy *t, int64_t interval_ms,
                            struct tw_err *err) {
  t->interval_ms = interval_ms > 0 ? interval_ms : 5000;
  if (pthread_create(&t->thread, NULL, tick_main, t) != 0)
    return tw_err_set(err, TW_E_INTERNAL,
                      "tenancy: cannot start the maintenance thread");
  t->started = true;
  return TW_OK;
}

void tw_tenancy_free(struct tw_tenancy *t) {
  if (!t)
    return;
  if (t->started) {
    pthread_mutex_lock(&t->tmu);
    t->stopping = true;
    pthread_cond_signal(&t->tcv);
    pthread_mutex_unlock(&t->tmu);
    pthread_join(t->thread, NULL);
  }
  tw_audit_free(t->audit);
  tw_http_free(t->http);
  free(t->hook_allow);
  tw_offer_index_unref(t->offers);
  tw_policy_set_unref(t->place_set);
  tn_resv_free(t);
  free(t->quotas);
  free(t->known);
  free(t->cq);
  free(t->cb);
  pthread_mutex_destroy(&t->mu);
  pthread_mutex_destroy(&t->cmu);
  pthread_mutex_destroy(&t->tmu);
  pthread_cond_destroy(&t->tcv);
  EVP_MD_free(t->sha256);
  free(t);
}
