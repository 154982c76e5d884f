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
#include "broker/tenancy/tenancy_int.h"
#include "policies/place/index.h"
#include "policies/place/policy.h"
#include "providers/http.h"

/* Hot statements (every request) use the store's cache; the rest are
 * prepared per call (tn_prepare). */
static const char SQL_AUTH[] =
    "SELECT t.hash, t.expires_at_ms, t.revoked_at_ms, p.name, p.tenant,"
    " p.role, p.service, p.disabled, p.created_at_ms"
    " FROM tenancy_tokens t JOIN tenancy_principals p ON p.name = t.principal"
    " WHERE t.id = ?1";
static const char SQL_OWNER[] =
    "SELECT principal, tenant, project, projected_uusd FROM tenancy_jobs"
    " WHERE job_id = ?1";
static const char SQL_OWNER_INSERT[] =
    "INSERT OR IGNORE INTO tenancy_jobs (job_id, tenant, project, principal,"
    " projected_uusd, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

static const char SQL_COUNT_PRINCIPALS[] =
    "SELECT count(*) FROM tenancy_principals";
static const char SQL_TENANT_INSERT[] =
    "INSERT INTO tenancy_tenants (name, created_at_ms) VALUES (?1, ?2)";
static const char SQL_TENANT_GET[] =
    "SELECT name, cohort, created_at_ms FROM tenancy_tenants WHERE name = ?1";
static const char SQL_TENANT_LIST[] =
    "SELECT name, cohort, created_at_ms FROM tenancy_tenants ORDER BY name";
static const char SQL_PRINCIPAL_INSERT[] =
    "INSERT INTO tenancy_principals (name, tenant, role, service, "
    "created_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_PRINCIPAL_GET[] =
    "SELECT name, tenant, role, service, disabled, created_at_ms"
    " FROM tenancy_principals WHERE name = ?1";
static const char SQL_PRINCIPAL_LIST[] =
    "SELECT name, tenant, role, service, disabled, created_at_ms"
    " FROM tenancy_principals WHERE (?1 IS NULL OR tenant = ?1) ORDER BY name";
static const char SQL_PRINCIPAL_DISABLE[] =
    "UPDATE tenancy_principals SET disabled = 1 WHERE name = ?1";
static const char SQL_TOKEN_INSERT[] =
    "INSERT INTO tenancy_tokens (id, principal, hash, name, created_at_ms,"
    " expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
#define TOKEN_COLS                                                             \
  "t.id, t.principal, p.tenant, t.name, t.created_at_ms, t.expires_at_ms,"     \
  " t.revoked_at_ms FROM tenancy_tokens t JOIN tenancy_principals p"           \
  " ON p.name = t.principal"
static const char SQL_TOKEN_GET[] = "SELECT " TOKEN_COLS " WHERE t.id = ?1";
static const char SQL_TOKEN_LIST[] =
    "SELECT " TOKEN_COLS " WHERE (?1 IS NULL OR t.principal = ?1)"
    " AND (?2 IS NULL OR p.tenant = ?2) ORDER BY t.created_at_ms, t.id";
static const char SQL_TOKEN_REVOKE[] =
    "UPDATE tenancy_tokens SET revoked_at_ms = ?2"
    " WHERE id = ?1 AND revoked_at_ms = 0";
static const char SQL_TOKEN_EXISTS[] =
    "SELECT 1 FROM tenancy_tokens WHERE id = ?1";

/* ---- small helpers ----------------------------------------------------------
 */

static const char *const ROLE_NAMES[TW_ROLE_COUNT] = {
    "admin", "tenant-admin", "member", "viewer", "finance", "ci"};

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

sqlite3_stmt *tn_prepare(sqlite3 *db, const char *sql, struct tw_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    tn_db_err(db, err, "prepare");
    return NULL;
  }
  return st;
}

enum tw_rc tn_db_err(sqlite3 *db, struct tw_err *err, const char *what) {
  return tw_err_set(err, TW_E_IO, "tenancy: %s: %s", what, sqlite3_errmsg(db));
}

void tn_col(sqlite3_stmt *st, int i, char *out, size_t outsz) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(out, outsz, "%s", t ? (const char *)t : "");
}

static void bind_str(sqlite3_stmt *st, int i, const char *s) {
  sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

static void bind_opt(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
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

static void sha256(const void *data, size_t n, unsigned char out[32]) {
  unsigned int len = 0;
  EVP_Digest(data, n, out, &len, EVP_sha256(), NULL);
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
  sha256(tok, strlen(tok), hash);
  return TW_OK;
}

struct auth_arg {
  const char *id;
  bool found;
  unsigned char hash[32];
  int64_t expires, revoked;
  struct tw_principal p;
  char role[32];
};

static enum tw_rc op_auth(struct tw_store *s, sqlite3 *db, void *varg,
                          struct tw_err *err) {
  struct auth_arg *a = varg;
  sqlite3_stmt *st = tw_store_stmt(s, db, SQL_AUTH, err);
  if (!st)
    return TW_E_IO;
  sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    const void *h = sqlite3_column_blob(st, 0);
    if (h && sqlite3_column_bytes(st, 0) == 32) {
      a->found = true;
      memcpy(a->hash, h, 32);
    }
    a->expires = sqlite3_column_int64(st, 1);
    a->revoked = sqlite3_column_int64(st, 2);
    tn_col(st, 3, a->p.name, sizeof a->p.name);
    tn_col(st, 4, a->p.tenant, sizeof a->p.tenant);
    tn_col(st, 5, a->role, sizeof a->role);
    a->p.service = sqlite3_column_int(st, 6) != 0;
    a->p.disabled = sqlite3_column_int(st, 7) != 0;
    a->p.created_ms = sqlite3_column_int64(st, 8);
  }
  sqlite3_reset(st);
  if (r != SQLITE_ROW && r != SQLITE_DONE)
    return tn_db_err(db, err, "token lookup");
  return TW_OK;
}

enum tw_rc tw_tenancy_authenticate(struct tw_tenancy *t, const char *token,
                                   struct tw_principal *out,
                                   struct tw_err *err) {
  char id[TW_TOKEN_ID_LEN + 1];
  memset(out, 0, sizeof *out);
  if (!token_shape(token, id))
    return tw_err_set(err, TW_E_AUTH, "malformed token");
  struct auth_arg a = {.id = id};
  enum tw_rc rc = tw_store_read(t->store, op_auth, &a, err);
  if (rc)
    return rc;
  unsigned char h[32];
  sha256(token, strlen(token), h);
  /* Compare whether or not the id was found, so an unknown id costs what
   * a wrong secret costs. */
  static const unsigned char dummy[32] = {0};
  int differ = CRYPTO_memcmp(h, a.found ? a.hash : dummy, 32);
  if (!a.found || differ)
    return tw_err_set(err, TW_E_AUTH, "unknown token");
  if (a.revoked)
    return tw_err_set(err, TW_E_AUTH, "token revoked");
  if (a.expires && tw_clock_now_ms(t->clock) >= a.expires)
    return tw_err_set(err, TW_E_AUTH, "token expired");
  if (a.p.disabled)
    return tw_err_set(err, TW_E_AUTH, "principal disabled");
  if (!tw_role_parse(a.role, &a.p.role))
    return tw_err_set(err, TW_E_AUTH, "principal has an unknown role");
  *out = a.p;
  memcpy(out->token_id, id, sizeof id);
  return TW_OK;
}

static void read_token(sqlite3_stmt *st, struct tw_token_info *o) {
  memset(o, 0, sizeof *o);
  tn_col(st, 0, o->id, sizeof o->id);
  tn_col(st, 1, o->principal, sizeof o->principal);
  tn_col(st, 2, o->tenant, sizeof o->tenant);
  tn_col(st, 3, o->name, sizeof o->name);
  o->created_ms = sqlite3_column_int64(st, 4);
  o->expires_ms = sqlite3_column_int64(st, 5);
  o->revoked_ms = sqlite3_column_int64(st, 6);
}

struct token_new_arg {
  const char *principal, *name;
  const char *id;
  const unsigned char *hash;
  int64_t now, expires;
  struct tw_token_info info;
};

static enum tw_rc get_principal(sqlite3 *db, const char *name,
                                struct tw_principal *out, struct tw_err *err);

static enum tw_rc op_token_new(struct tw_store *s, sqlite3 *db, void *varg,
                               struct tw_err *err) {
  (void)s;
  struct token_new_arg *a = varg;
  struct tw_principal p;
  enum tw_rc rc = get_principal(db, a->principal, &p, err);
  if (rc)
    return rc;
  if (p.disabled)
    return tw_err_set(err, TW_E_CONFLICT, "principal %s is disabled",
                      a->principal);
  sqlite3_stmt *st = tn_prepare(db, SQL_TOKEN_INSERT, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, a->id);
  bind_str(st, 2, a->principal);
  sqlite3_bind_blob(st, 3, a->hash, 32, SQLITE_STATIC);
  bind_str(st, 4, a->name);
  sqlite3_bind_int64(st, 5, a->now);
  sqlite3_bind_int64(st, 6, a->expires);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  if (r != SQLITE_DONE)
    return tn_db_err(db, err, "token insert");
  struct tw_token_info *o = &a->info;
  snprintf(o->id, sizeof o->id, "%s", a->id);
  snprintf(o->principal, sizeof o->principal, "%s", a->principal);
  snprintf(o->tenant, sizeof o->tenant, "%s", p.tenant);
  snprintf(o->name, sizeof o->name, "%s", a->name ? a->name : "");
  o->created_ms = a->now;
  o->expires_ms = a->expires;
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
  if (ttl_ms < 0)
    return tw_err_field(err, TW_E_INVALID, "ttl", "ttl: must not be negative");
  if ((rc = token_new(token_out, id, hash, err)))
    return rc;
  int64_t now = tw_clock_now_ms(t->clock);
  struct token_new_arg a = {.principal = principal,
                            .name = name ? name : "",
                            .id = id,
                            .hash = hash,
                            .now = now,
                            .expires = ttl_ms ? now + ttl_ms : 0};
  rc = tw_store_write(t->store, op_token_new, &a, err);
  if (rc) {
    OPENSSL_cleanse(token_out, TW_TOKEN_LEN + 1);
    token_out[0] = '\0';
    return rc;
  }
  if (info)
    *info = a.info;
  tw_log_info("tenancy", "principal=%s token=%s created", principal, id);
  return TW_OK;
}

struct token_get_arg {
  const char *id, *principal, *tenant;
  struct tw_token_info *items;
  size_t n, cap;
};

static enum tw_rc op_token_list(struct tw_store *s, sqlite3 *db, void *varg,
                                struct tw_err *err) {
  (void)s;
  struct token_get_arg *a = varg;
  sqlite3_stmt *st =
      tn_prepare(db, a->id ? SQL_TOKEN_GET : SQL_TOKEN_LIST, err);
  if (!st)
    return TW_E_IO;
  if (a->id) {
    bind_str(st, 1, a->id);
  } else {
    bind_opt(st, 1, a->principal);
    bind_opt(st, 2, a->tenant);
  }
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 16;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    read_token(st, &a->items[a->n++]);
  }
  sqlite3_finalize(st);
  if (r != SQLITE_DONE)
    return tn_db_err(db, err, "token list");
  return TW_OK;
}

enum tw_rc tw_tenancy_token_get(struct tw_tenancy *t, const char *id,
                                struct tw_token_info *out, struct tw_err *err) {
  struct token_get_arg a = {.id = id};
  enum tw_rc rc = tw_store_read(t->store, op_token_list, &a, err);
  if (rc == TW_OK && a.n == 0)
    rc = tw_err_set(err, TW_E_NOTFOUND, "token %s not found", id);
  if (rc == TW_OK)
    *out = a.items[0];
  free(a.items);
  return rc;
}

enum tw_rc tw_tenancy_token_list(struct tw_tenancy *t, const char *principal,
                                 const char *tenant, struct tw_token_info **out,
                                 size_t *n, struct tw_err *err) {
  struct token_get_arg a = {.principal = principal, .tenant = tenant};
  enum tw_rc rc = tw_store_read(t->store, op_token_list, &a, err);
  if (rc) {
    free(a.items);
    return rc;
  }
  *out = a.items;
  *n = a.n;
  return TW_OK;
}

struct revoke_arg {
  const char *id;
  int64_t now;
};

static enum tw_rc op_revoke(struct tw_store *s, sqlite3 *db, void *varg,
                            struct tw_err *err) {
  (void)s;
  struct revoke_arg *a = varg;
  sqlite3_stmt *st = tn_prepare(db, SQL_TOKEN_EXISTS, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, a->id);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  if (r == SQLITE_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "token %s not found", a->id);
  if (r != SQLITE_ROW)
    return tn_db_err(db, err, "token lookup");
  if (!(st = tn_prepare(db, SQL_TOKEN_REVOKE, err)))
    return TW_E_IO;
  bind_str(st, 1, a->id);
  sqlite3_bind_int64(st, 2, a->now);
  r = sqlite3_step(st);
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? TW_OK : tn_db_err(db, err, "token revoke");
}

enum tw_rc tw_tenancy_token_revoke(struct tw_tenancy *t, const char *id,
                                   struct tw_err *err) {
  struct revoke_arg a = {.id = id, .now = tw_clock_now_ms(t->clock)};
  enum tw_rc rc = tw_store_write(t->store, op_revoke, &a, err);
  if (rc == TW_OK)
    tw_log_info("tenancy", "token=%s revoked", id);
  return rc;
}

/* ---- principals -------------------------------------------------------------
 */

static enum tw_rc read_principal(sqlite3_stmt *st, struct tw_principal *o) {
  char role[32];
  memset(o, 0, sizeof *o);
  tn_col(st, 0, o->name, sizeof o->name);
  tn_col(st, 1, o->tenant, sizeof o->tenant);
  tn_col(st, 2, role, sizeof role);
  o->service = sqlite3_column_int(st, 3) != 0;
  o->disabled = sqlite3_column_int(st, 4) != 0;
  o->created_ms = sqlite3_column_int64(st, 5);
  if (!tw_role_parse(role, &o->role))
    o->role = TW_ROLE_VIEWER; /* never more than it should be */
  return TW_OK;
}

static enum tw_rc get_principal(sqlite3 *db, const char *name,
                                struct tw_principal *out, struct tw_err *err) {
  sqlite3_stmt *st = tn_prepare(db, SQL_PRINCIPAL_GET, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, name);
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW)
    read_principal(st, out);
  sqlite3_finalize(st);
  if (r == SQLITE_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "principal %s not found", name);
  return r == SQLITE_ROW ? TW_OK : tn_db_err(db, err, "principal lookup");
}

static enum tw_rc tenant_exists(sqlite3 *db, const char *name,
                                struct tw_err *err) {
  sqlite3_stmt *st = tn_prepare(db, SQL_TENANT_GET, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, name);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  if (r == SQLITE_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", name);
  return r == SQLITE_ROW ? TW_OK : tn_db_err(db, err, "tenant lookup");
}

struct user_arg {
  const struct tw_principal *p;
  int64_t now;
};

static enum tw_rc op_user_create(struct tw_store *s, sqlite3 *db, void *varg,
                                 struct tw_err *err) {
  (void)s;
  struct user_arg *a = varg;
  enum tw_rc rc;
  if (strcmp(a->p->tenant, TW_TENANT_GLOBAL) &&
      (rc = tenant_exists(db, a->p->tenant, err)))
    return rc;
  struct tw_principal old;
  struct tw_err ignore = {0};
  if (get_principal(db, a->p->name, &old, &ignore) == TW_OK)
    return tw_err_field(err, TW_E_CONFLICT, "name",
                        "principal %s already exists", a->p->name);
  sqlite3_stmt *st = tn_prepare(db, SQL_PRINCIPAL_INSERT, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, a->p->name);
  bind_str(st, 2, a->p->tenant);
  bind_str(st, 3, tw_role_str(a->p->role));
  sqlite3_bind_int(st, 4, a->p->service);
  sqlite3_bind_int64(st, 5, a->now);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? TW_OK : tn_db_err(db, err, "principal insert");
}

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
  struct user_arg a = {.p = p, .now = tw_clock_now_ms(t->clock)};
  if ((rc = tw_store_write(t->store, op_user_create, &a, err)) == TW_OK)
    tw_log_info("tenancy", "principal=%s tenant=%s role=%s created", p->name,
                p->tenant, tw_role_str(p->role));
  return rc;
}

struct user_get_arg {
  const char *name, *tenant;
  struct tw_principal *items;
  size_t n, cap;
};

static enum tw_rc op_user_get(struct tw_store *s, sqlite3 *db, void *varg,
                              struct tw_err *err) {
  (void)s;
  struct user_get_arg *a = varg;
  a->items = tw_calloc(1, sizeof *a->items);
  a->cap = 1;
  enum tw_rc rc = get_principal(db, a->name, a->items, err);
  if (rc == TW_OK)
    a->n = 1;
  return rc;
}

static enum tw_rc op_user_list(struct tw_store *s, sqlite3 *db, void *varg,
                               struct tw_err *err) {
  (void)s;
  struct user_get_arg *a = varg;
  sqlite3_stmt *st = tn_prepare(db, SQL_PRINCIPAL_LIST, err);
  if (!st)
    return TW_E_IO;
  bind_opt(st, 1, a->tenant);
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 16;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    read_principal(st, &a->items[a->n++]);
  }
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? TW_OK : tn_db_err(db, err, "principal list");
}

enum tw_rc tw_tenancy_user_get(struct tw_tenancy *t, const char *name,
                               struct tw_principal *out, struct tw_err *err) {
  struct user_get_arg a = {.name = name};
  enum tw_rc rc = tw_store_read(t->store, op_user_get, &a, err);
  if (rc == TW_OK)
    *out = a.items[0];
  free(a.items);
  return rc;
}

enum tw_rc tw_tenancy_user_list(struct tw_tenancy *t, const char *tenant,
                                struct tw_principal **out, size_t *n,
                                struct tw_err *err) {
  struct user_get_arg a = {.tenant = tenant};
  enum tw_rc rc = tw_store_read(t->store, op_user_list, &a, err);
  if (rc) {
    free(a.items);
    return rc;
  }
  *out = a.items;
  *n = a.n;
  return TW_OK;
}

static enum tw_rc op_user_disable(struct tw_store *s, sqlite3 *db, void *varg,
                                  struct tw_err *err) {
  (void)s;
  const char *name = varg;
  sqlite3_stmt *st = tn_prepare(db, SQL_PRINCIPAL_DISABLE, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, name);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  if (r != SQLITE_DONE)
    return tn_db_err(db, err, "principal disable");
  if (sqlite3_changes(db) == 0)
    return tw_err_set(err, TW_E_NOTFOUND, "principal %s not found", name);
  return TW_OK;
}

enum tw_rc tw_tenancy_user_disable(struct tw_tenancy *t, const char *name,
                                   struct tw_err *err) {
  enum tw_rc rc = tw_store_write(t->store, op_user_disable, (void *)name, err);
  if (rc == TW_OK)
    tw_log_info("tenancy", "principal=%s disabled", name);
  return rc;
}

/* ---- tenants
 * ------------------------------------------------------------------ */

struct tenant_arg {
  const char *name;
  int64_t now;
  struct tw_tenant_info *items;
  size_t n, cap;
};

static enum tw_rc op_tenant_create(struct tw_store *s, sqlite3 *db, void *varg,
                                   struct tw_err *err) {
  (void)s;
  struct tenant_arg *a = varg;
  struct tw_err ignore = {0};
  if (tenant_exists(db, a->name, &ignore) == TW_OK)
    return tw_err_field(err, TW_E_CONFLICT, "name", "tenant %s already exists",
                        a->name);
  sqlite3_stmt *st = tn_prepare(db, SQL_TENANT_INSERT, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, a->name);
  sqlite3_bind_int64(st, 2, a->now);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? TW_OK : tn_db_err(db, err, "tenant insert");
}

enum tw_rc tw_tenancy_tenant_create(struct tw_tenancy *t, const char *name,
                                    struct tw_err *err) {
  if (!tw_tenancy_name_ok(name))
    return tw_err_field(
        err, TW_E_INVALID, "name",
        "name: expected 1 to 63 of [A-Za-z0-9._-], got \"%.64s\"",
        name ? name : "");
  struct tenant_arg a = {.name = name, .now = tw_clock_now_ms(t->clock)};
  enum tw_rc rc = tw_store_write(t->store, op_tenant_create, &a, err);
  if (rc == TW_OK) {
    tn_cache_changed(t);
    tw_log_info("tenancy", "tenant=%s created", name);
  }
  return rc;
}

static enum tw_rc op_tenant_list(struct tw_store *s, sqlite3 *db, void *varg,
                                 struct tw_err *err) {
  (void)s;
  struct tenant_arg *a = varg;
  sqlite3_stmt *st =
      tn_prepare(db, a->name ? SQL_TENANT_GET : SQL_TENANT_LIST, err);
  if (!st)
    return TW_E_IO;
  if (a->name)
    bind_str(st, 1, a->name);
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 16;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_tenant_info *o = &a->items[a->n++];
    memset(o, 0, sizeof *o);
    tn_col(st, 0, o->name, sizeof o->name);
    tn_col(st, 1, o->cohort, sizeof o->cohort);
    o->created_ms = sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  return r == SQLITE_DONE ? TW_OK : tn_db_err(db, err, "tenant list");
}

enum tw_rc tw_tenancy_tenant_get(struct tw_tenancy *t, const char *name,
                                 struct tw_tenant_info *out,
                                 struct tw_err *err) {
  struct tenant_arg a = {.name = name};
  enum tw_rc rc = tw_store_read(t->store, op_tenant_list, &a, err);
  if (rc == TW_OK && a.n == 0)
    rc = tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", name);
  if (rc == TW_OK)
    *out = a.items[0];
  free(a.items);
  return rc;
}

enum tw_rc tw_tenancy_tenant_list(struct tw_tenancy *t,
                                  struct tw_tenant_info **out, size_t *n,
                                  struct tw_err *err) {
  struct tenant_arg a = {0};
  enum tw_rc rc = tw_store_read(t->store, op_tenant_list, &a, err);
  if (rc) {
    free(a.items);
    return rc;
  }
  *out = a.items;
  *n = a.n;
  return TW_OK;
}

/* ---- job owners and request records
 * ------------------------------------------- */

struct owner_arg {
  const char *job_id;
  bool found;
  struct tw_job_owner o;
};

static enum tw_rc op_owner(struct tw_store *s, sqlite3 *db, void *varg,
                           struct tw_err *err) {
  struct owner_arg *a = varg;
  sqlite3_stmt *st = tw_store_stmt(s, db, SQL_OWNER, err);
  if (!st)
    return TW_E_IO;
  bind_str(st, 1, a->job_id);
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    a->found = true;
    tn_col(st, 0, a->o.principal, sizeof a->o.principal);
    tn_col(st, 1, a->o.tenant, sizeof a->o.tenant);
    tn_col(st, 2, a->o.project, sizeof a->o.project);
    a->o.projected_uusd = sqlite3_column_int64(st, 3);
  }
  sqlite3_reset(st);
  return r == SQLITE_ROW || r == SQLITE_DONE
             ? TW_OK
             : tn_db_err(db, err, "owner lookup");
}

enum tw_rc tw_tenancy_job_owner(struct tw_tenancy *t, const char *job_id,
                                struct tw_job_owner *out, struct tw_err *err) {
  struct owner_arg a = {.job_id = job_id};
  enum tw_rc rc = tw_store_read(t->store, op_owner, &a, err);
  if (rc)
    return rc;
  if (!a.found)
    return tw_err_set(err, TW_E_NOTFOUND, "job %s has no recorded owner",
                      job_id);
  *out = a.o;
  return TW_OK;
}

struct done_arg {
  const struct tw_audit_event *ev;
  const struct tw_job_created *job;
  int64_t now;
};

static enum tw_rc op_request_done(struct tw_store *s, sqlite3 *db, void *varg,
                                  struct tw_err *err) {
  struct done_arg *a = varg;
  if (a->job) {
    sqlite3_stmt *st = tw_store_stmt(s, db, SQL_OWNER_INSERT, err);
    if (!st)
      return TW_E_IO;
    bind_str(st, 1, a->job->job_id);
    bind_str(st, 2, a->job->tenant);
    bind_str(st, 3, a->job->project);
    bind_str(st, 4, a->job->principal);
    sqlite3_bind_int64(st, 5, a->job->projected_uusd);
    sqlite3_bind_int64(st, 6, a->now);
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    if (r != SQLITE_DONE)
      return tn_db_err(db, err, "owner insert");
  }
  return a->ev ? tw_audit_append_in(s, db, a->ev, a->now, NULL, err) : TW_OK;
}

enum tw_rc tw_tenancy_request_done(struct tw_tenancy *t,
                                   const struct tw_audit_event *ev,
                                   const struct tw_job_created *job,
                                   struct tw_err *err) {
  struct done_arg a = {.ev = ev, .job = job, .now = tw_clock_now_ms(t->clock)};
  return tw_store_write(t->store, op_request_done, &a, err);
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

static enum tw_rc op_count(struct tw_store *s, sqlite3 *db, void *varg,
                           struct tw_err *err) {
  (void)s;
  int64_t *n = varg;
  sqlite3_stmt *st = tn_prepare(db, SQL_COUNT_PRINCIPALS, err);
  if (!st)
    return TW_E_IO;
  int r = sqlite3_step(st);
  *n = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return r == SQLITE_ROW ? TW_OK : tn_db_err(db, err, "count principals");
}

struct boot_arg {
  const char *id;
  const unsigned char *hash;
  int64_t now;
  bool made;
};

static enum tw_rc op_bootstrap(struct tw_store *s, sqlite3 *db, void *varg,
                               struct tw_err *err) {
  struct boot_arg *a = varg;
  int64_t n = 0;
  enum tw_rc rc = op_count(s, db, &n, err);
  if (rc || n > 0)
    return rc; /* somebody else made one meanwhile: nothing to do */
  struct tenant_arg ta = {.name = "default", .now = a->now};
  struct tw_err ignore = {0};
  if (tenant_exists(db, "default", &ignore) != TW_OK &&
      (rc = op_tenant_create(s, db, &ta, err)))
    return rc;
  struct tw_principal p = {
      .name = "admin", .tenant = TW_TENANT_GLOBAL, .role = TW_ROLE_ADMIN};
  struct user_arg ua = {.p = &p, .now = a->now};
  if ((rc = op_user_create(s, db, &ua, err)))
    return rc;
  struct token_new_arg tn = {.principal = "admin",
                             .name = "bootstrap",
                             .id = a->id,
                             .hash = a->hash,
                             .now = a->now};
  if ((rc = op_token_new(s, db, &tn, err)))
    return rc;
  struct tw_audit_event ev = {
      .principal = "tradewindd",
      .action = "tenancy.bootstrap",
      .object = "principal/admin",
      .outcome = "ok",
      .detail = "first start: admin principal and token made"};
  if ((rc = tw_audit_append_in(s, db, &ev, a->now, NULL, err)))
    return rc;
  a->made = true;
  return TW_OK;
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
  enum tw_rc rc = tw_store_read(t->store, op_count, &n, err);
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
  struct boot_arg a = {
      .id = id, .hash = hash, .now = tw_clock_now_ms(t->clock)};
  if ((rc = tw_store_write(t->store, op_bootstrap, &a, err))) {
    unlink(file);
    return rc;
  }
  if (!a.made) {
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

static void *tick_main(void *arg) {
  struct tw_tenancy *t = arg;
  pthread_mutex_lock(&t->tmu);
  while (!t->stopping) {
    pthread_mutex_unlock(&t->tmu);
    tw_tenancy_tick(t);
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
  tw_offer_index_unref(t->offers);
  tw_policy_set_unref(t->place_set);
  free(t->resv);
  free(t->quotas);
  free(t->cq);
  free(t->cb);
  pthread_mutex_destroy(&t->mu);
  pthread_mutex_destroy(&t->cmu);
  pthread_mutex_destroy(&t->tmu);
  pthread_cond_destroy(&t->tcv);
  free(t);
}
