/* store_tenancy.c - the SQL of tenants, principals, tokens, owners, quotas
 * and reservations (store_tenancy.h). */
#include "broker/core/store_tenancy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/flow.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_int.h"

/* Hot statements (every request: authentication, the submission's owner)
 * use the connection's cache; the rest are prepared per call (prepare()),
 * since the cache keeps every statement it was ever given for the life of
 * each connection. */
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

static const char SQL_QUOTA_TENANTS[] =
    "SELECT name, cohort, spot_share_pct, quota_version FROM tenancy_tenants"
    " WHERE (?1 IS NULL OR name = ?1) ORDER BY name";
static const char SQL_QUOTA_ROWS[] =
    "SELECT tenant, resource, lim, borrow FROM tenancy_quota"
    " WHERE (?1 IS NULL OR tenant = ?1) ORDER BY tenant, resource";
static const char SQL_QUOTA_DELETE[] =
    "DELETE FROM tenancy_quota WHERE tenant = ?1";
static const char SQL_QUOTA_INSERT[] =
    "INSERT INTO tenancy_quota (tenant, resource, lim, borrow) VALUES (?1, ?2, "
    "?3, ?4)";
static const char SQL_TENANT_QUOTA_SET[] =
    "UPDATE tenancy_tenants SET cohort = ?2, spot_share_pct = ?3,"
    " quota_version = quota_version + 1 WHERE name = ?1";
static const char SQL_RESV_ALL[] = "SELECT job_id, tenant, vcpus, accel, gpus, "
                                   "spot, at_ms FROM tenancy_reservations";
static const char SQL_RESV_PUT[] =
    "INSERT INTO tenancy_reservations (job_id, tenant, offer_id, vcpus,"
    " accel, gpus, spot, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    " ON CONFLICT (job_id) DO UPDATE SET tenant = excluded.tenant,"
    " offer_id = excluded.offer_id, vcpus = excluded.vcpus,"
    " accel = excluded.accel, gpus = excluded.gpus, spot = excluded.spot,"
    " at_ms = excluded.at_ms";
static const char SQL_RESV_DELETE[] =
    "DELETE FROM tenancy_reservations WHERE job_id = ?1";

/* ---- helpers ------------------------------------------------------------- */

static enum tw_rc tn_err(struct tw_db *db, struct tw_err *err, const char *what) {
  return tw_err_set(err, TW_E_IO, "tenancy: %s: %s", what, tw_db_errmsg(db));
}

/* A statement for this call only: finalize it. */
static struct tw_db_stmt *prepare(struct tw_db *db, const char *sql, struct tw_err *err) {
  struct tw_db_stmt *st = NULL;
  if (tw_db_prepare(db, sql, &st) != TW_DB_OK) {
    tn_err(db, err, "prepare");
    return NULL;
  }
  return st;
}

/* Makes room for one more item in the array items of n (capacity cap)
 * and yields the new slot, zeroed. */
#define PUSH(items, n, cap)                                                    \
  ((n) == (cap) ? ((cap) = (cap) ? 2 * (cap) : 16,                             \
                   (items) = tw_realloc((items), (cap) * sizeof *(items)))     \
                : (items),                                                     \
   memset(&(items)[(n)], 0, sizeof *(items)), &(items)[(n)++])

/* ---- tenants ------------------------------------------------------------- */

static enum tw_rc tenant_exists(struct tw_db *db, const char *name,
                                struct tw_err *err) {
  struct tw_db_stmt *st = prepare(db, SQL_TENANT_GET, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, name);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", name);
  return r == TW_DB_ROW ? TW_OK : tn_err(db, err, "tenant lookup");
}

struct tenant_arg {
  const char *name;
  int64_t at_ms;
  struct tw_store_tenant *items;
  size_t n, cap;
};

static enum tw_rc tenant_create(struct tw_db *db, const char *name, int64_t at_ms,
                                struct tw_err *err) {
  struct tw_err ignore = {0};
  if (tenant_exists(db, name, &ignore) == TW_OK)
    return tw_err_field(err, TW_E_CONFLICT, "name", "tenant %s already exists",
                        name);
  struct tw_db_stmt *st = prepare(db, SQL_TENANT_INSERT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, name);
  tw_db_bind_int64(st, 2, at_ms);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "tenant insert");
}

static enum tw_rc op_tenant_create(struct tw_store *s, struct tw_db *db, void *varg,
                                   struct tw_err *err) {
  (void)s;
  struct tenant_arg *a = varg;
  return tenant_create(db, a->name, a->at_ms, err);
}

enum tw_rc tw_store_tenant_create(struct tw_store *s, const char *name,
                                  int64_t at_ms, struct tw_err *err) {
  struct tenant_arg a = {.name = name, .at_ms = at_ms};
  return tw_store_write(s, op_tenant_create, &a, err);
}

/* Every submission asks for its tenant (admission): the statements are the
 * connection's cached ones, not prepared per call. */
static enum tw_rc op_tenant_list(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  struct tenant_arg *a = varg;
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, a->name ? SQL_TENANT_GET : SQL_TENANT_LIST, err);
  if (!st)
    return TW_E_IO;
  if (a->name)
    store__bind_text(st, 1, a->name);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_store_tenant *o = PUSH(a->items, a->n, a->cap);
    store__col(st, 0, o->name, sizeof o->name);
    store__col(st, 1, o->cohort, sizeof o->cohort);
    o->created_ms = tw_db_column_int64(st, 2);
  }
  enum tw_rc rc = r == TW_DB_DONE ? TW_OK : tn_err(db, err, "tenant list");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_tenant_get(struct tw_store *s, const char *name,
                               struct tw_store_tenant *out,
                               struct tw_err *err) {
  struct tenant_arg a = {.name = name};
  enum tw_rc rc = tw_store_read(s, op_tenant_list, &a, err);
  if (rc == TW_OK && a.n == 0)
    rc = tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", name);
  if (rc == TW_OK)
    *out = a.items[0];
  free(a.items);
  return rc;
}

enum tw_rc tw_store_tenant_list(struct tw_store *s,
                                struct tw_store_tenant **out, size_t *n,
                                struct tw_err *err) {
  struct tenant_arg a = {0};
  enum tw_rc rc = tw_store_read(s, op_tenant_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

/* ---- principals ---------------------------------------------------------- */

/* Columns name, tenant, role, service, disabled, created_at_ms from i. */
static void read_principal(struct tw_db_stmt *st, int i,
                           struct tw_store_principal *o) {
  memset(o, 0, sizeof *o);
  store__col(st, i, o->name, sizeof o->name);
  store__col(st, i + 1, o->tenant, sizeof o->tenant);
  store__col(st, i + 2, o->role, sizeof o->role);
  o->service = tw_db_column_int(st, i + 3) != 0;
  o->disabled = tw_db_column_int(st, i + 4) != 0;
  o->created_ms = tw_db_column_int64(st, i + 5);
}

static enum tw_rc get_principal(struct tw_db *db, const char *name,
                                struct tw_store_principal *out,
                                struct tw_err *err) {
  struct tw_db_stmt *st = prepare(db, SQL_PRINCIPAL_GET, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, name);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    read_principal(st, 0, out);
  tw_db_finalize(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "principal %s not found", name);
  return r == TW_DB_ROW ? TW_OK : tn_err(db, err, "principal lookup");
}

struct principal_arg {
  const struct tw_store_principal *p;
  bool in_tenant;
  const char *name, *tenant;
  struct tw_store_principal *items;
  size_t n, cap;
};

static enum tw_rc principal_create(struct tw_db *db,
                                   const struct tw_store_principal *p,
                                   bool in_tenant, struct tw_err *err) {
  enum tw_rc rc;
  if (in_tenant && (rc = tenant_exists(db, p->tenant, err)))
    return rc;
  struct tw_store_principal old;
  struct tw_err ignore = {0};
  if (get_principal(db, p->name, &old, &ignore) == TW_OK)
    return tw_err_field(err, TW_E_CONFLICT, "name",
                        "principal %s already exists", p->name);
  struct tw_db_stmt *st = prepare(db, SQL_PRINCIPAL_INSERT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, p->name);
  store__bind_text(st, 2, p->tenant);
  store__bind_text(st, 3, p->role);
  tw_db_bind_int(st, 4, p->service);
  tw_db_bind_int64(st, 5, p->created_ms);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "principal insert");
}

static enum tw_rc op_principal_create(struct tw_store *s, struct tw_db *db,
                                      void *varg, struct tw_err *err) {
  (void)s;
  struct principal_arg *a = varg;
  return principal_create(db, a->p, a->in_tenant, err);
}

enum tw_rc tw_store_principal_create(struct tw_store *s,
                                     const struct tw_store_principal *p,
                                     bool in_tenant, struct tw_err *err) {
  struct principal_arg a = {.p = p, .in_tenant = in_tenant};
  return tw_store_write(s, op_principal_create, &a, err);
}

static enum tw_rc op_principal_get(struct tw_store *s, struct tw_db *db, void *varg,
                                   struct tw_err *err) {
  (void)s;
  struct principal_arg *a = varg;
  return get_principal(db, a->name, a->items, err);
}

enum tw_rc tw_store_principal_get(struct tw_store *s, const char *name,
                                  struct tw_store_principal *out,
                                  struct tw_err *err) {
  struct principal_arg a = {.name = name, .items = out};
  return tw_store_read(s, op_principal_get, &a, err);
}

static enum tw_rc op_principal_list(struct tw_store *s, struct tw_db *db, void *varg,
                                    struct tw_err *err) {
  (void)s;
  struct principal_arg *a = varg;
  struct tw_db_stmt *st = prepare(db, SQL_PRINCIPAL_LIST, err);
  if (!st)
    return TW_E_IO;
  store__bind_opt(st, 1, a->tenant);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW)
    read_principal(st, 0, PUSH(a->items, a->n, a->cap));
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "principal list");
}

enum tw_rc tw_store_principal_list(struct tw_store *s, const char *tenant,
                                   struct tw_store_principal **out, size_t *n,
                                   struct tw_err *err) {
  struct principal_arg a = {.tenant = tenant};
  enum tw_rc rc = tw_store_read(s, op_principal_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

static enum tw_rc op_principal_disable(struct tw_store *s, struct tw_db *db,
                                       void *varg, struct tw_err *err) {
  (void)s;
  const char *name = varg;
  struct tw_db_stmt *st = prepare(db, SQL_PRINCIPAL_DISABLE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, name);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return tn_err(db, err, "principal disable");
  if (tw_db_changes(db) == 0)
    return tw_err_set(err, TW_E_NOTFOUND, "principal %s not found", name);
  return TW_OK;
}

enum tw_rc tw_store_principal_disable(struct tw_store *s, const char *name,
                                      struct tw_err *err) {
  return tw_store_write(s, op_principal_disable, (void *)name, err);
}

static enum tw_rc op_count(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  (void)s;
  int64_t *n = varg;
  struct tw_db_stmt *st = prepare(db, SQL_COUNT_PRINCIPALS, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  *n = r == TW_DB_ROW ? tw_db_column_int64(st, 0) : -1;
  tw_db_finalize(st);
  return r == TW_DB_ROW ? TW_OK : tn_err(db, err, "count principals");
}

enum tw_rc tw_store_principal_count(struct tw_store *s, int64_t *n,
                                    struct tw_err *err) {
  return tw_store_read(s, op_count, n, err);
}

/* ---- tokens -------------------------------------------------------------- */

static void read_token(struct tw_db_stmt *st, struct tw_store_token *o) {
  memset(o, 0, sizeof *o);
  store__col(st, 0, o->id, sizeof o->id);
  store__col(st, 1, o->principal, sizeof o->principal);
  store__col(st, 2, o->tenant, sizeof o->tenant);
  store__col(st, 3, o->name, sizeof o->name);
  o->created_ms = tw_db_column_int64(st, 4);
  o->expires_ms = tw_db_column_int64(st, 5);
  o->revoked_ms = tw_db_column_int64(st, 6);
}

static enum tw_rc token_create(struct tw_db *db, const struct tw_store_token_new *t,
                               struct tw_store_token *out, struct tw_err *err) {
  struct tw_store_principal p;
  enum tw_rc rc = get_principal(db, t->principal, &p, err);
  if (rc)
    return rc;
  if (p.disabled)
    return tw_err_set(err, TW_E_CONFLICT, "principal %s is disabled",
                      t->principal);
  struct tw_db_stmt *st = prepare(db, SQL_TOKEN_INSERT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, t->id);
  store__bind_text(st, 2, t->principal);
  tw_db_bind_blob(st, 3, t->hash, 32);
  store__bind_text(st, 4, t->name);
  tw_db_bind_int64(st, 5, t->created_ms);
  tw_db_bind_int64(st, 6, t->expires_ms);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return tn_err(db, err, "token insert");
  if (out) {
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", t->id);
    snprintf(out->principal, sizeof out->principal, "%s", t->principal);
    snprintf(out->tenant, sizeof out->tenant, "%s", p.tenant);
    snprintf(out->name, sizeof out->name, "%s", t->name ? t->name : "");
    out->created_ms = t->created_ms;
    out->expires_ms = t->expires_ms;
  }
  return TW_OK;
}

struct token_arg {
  const struct tw_store_token_new *t;
  const char *id, *principal, *tenant;
  int64_t at_ms;
  struct tw_store_token *items;
  size_t n, cap;
  struct tw_store_token_auth *auth;
};

static enum tw_rc op_token_create(struct tw_store *s, struct tw_db *db, void *varg,
                                  struct tw_err *err) {
  (void)s;
  struct token_arg *a = varg;
  return token_create(db, a->t, a->items, err);
}

enum tw_rc tw_store_token_create(struct tw_store *s,
                                 const struct tw_store_token_new *t,
                                 struct tw_store_token *out,
                                 struct tw_err *err) {
  struct token_arg a = {.t = t, .items = out};
  return tw_store_write(s, op_token_create, &a, err);
}

static enum tw_rc op_auth(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct token_arg *a = varg;
  struct tw_store_token_auth *o = a->auth;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_AUTH, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->id, -1);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    const void *h = tw_db_column_blob(st, 0);
    if (h && tw_db_column_bytes(st, 0) == 32) {
      o->found = true;
      memcpy(o->hash, h, 32);
    }
    o->expires_ms = tw_db_column_int64(st, 1);
    o->revoked_ms = tw_db_column_int64(st, 2);
    read_principal(st, 3, &o->p);
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return tn_err(db, err, "token lookup");
  return TW_OK;
}

enum tw_rc tw_store_token_auth(struct tw_store *s, const char *id,
                               struct tw_store_token_auth *out,
                               struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct token_arg a = {.id = id, .auth = out};
  return tw_store_read(s, op_auth, &a, err);
}

static enum tw_rc op_token_list(struct tw_store *s, struct tw_db *db, void *varg,
                                struct tw_err *err) {
  (void)s;
  struct token_arg *a = varg;
  struct tw_db_stmt *st = prepare(db, a->id ? SQL_TOKEN_GET : SQL_TOKEN_LIST, err);
  if (!st)
    return TW_E_IO;
  if (a->id) {
    store__bind_text(st, 1, a->id);
  } else {
    store__bind_opt(st, 1, a->principal);
    store__bind_opt(st, 2, a->tenant);
  }
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW)
    read_token(st, PUSH(a->items, a->n, a->cap));
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "token list");
}

enum tw_rc tw_store_token_get(struct tw_store *s, const char *id,
                              struct tw_store_token *out, struct tw_err *err) {
  struct token_arg a = {.id = id};
  enum tw_rc rc = tw_store_read(s, op_token_list, &a, err);
  if (rc == TW_OK && a.n == 0)
    rc = tw_err_set(err, TW_E_NOTFOUND, "token %s not found", id);
  if (rc == TW_OK)
    *out = a.items[0];
  free(a.items);
  return rc;
}

enum tw_rc tw_store_token_list(struct tw_store *s, const char *principal,
                               const char *tenant, struct tw_store_token **out,
                               size_t *n, struct tw_err *err) {
  struct token_arg a = {.principal = principal, .tenant = tenant};
  enum tw_rc rc = tw_store_read(s, op_token_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

static enum tw_rc op_revoke(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  (void)s;
  struct token_arg *a = varg;
  struct tw_db_stmt *st = prepare(db, SQL_TOKEN_EXISTS, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->id);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "token %s not found", a->id);
  if (r != TW_DB_ROW)
    return tn_err(db, err, "token lookup");
  if (!(st = prepare(db, SQL_TOKEN_REVOKE, err)))
    return TW_E_IO;
  store__bind_text(st, 1, a->id);
  tw_db_bind_int64(st, 2, a->at_ms);
  r = tw_db_step(st);
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "token revoke");
}

enum tw_rc tw_store_token_revoke(struct tw_store *s, const char *id,
                                 int64_t at_ms, struct tw_err *err) {
  struct token_arg a = {.id = id, .at_ms = at_ms};
  return tw_store_write(s, op_revoke, &a, err);
}

/* ---- the first start ----------------------------------------------------- */

struct boot_arg {
  const struct tw_store_bootstrap *b;
  bool made;
};

static enum tw_rc op_bootstrap(struct tw_store *s, struct tw_db *db, void *varg,
                               struct tw_err *err) {
  struct boot_arg *a = varg;
  const struct tw_store_bootstrap *b = a->b;
  int64_t n = 0;
  /* brokers starting together on one PostgreSQL: one makes the admin */
  enum tw_rc rc = store__serialize(s, db, err);
  if (rc)
    return rc;
  rc = op_count(s, db, &n, err);
  if (rc || n > 0)
    return rc; /* somebody else made one meanwhile: nothing to do */
  struct tw_err ignore = {0};
  if (tenant_exists(db, b->tenant, &ignore) != TW_OK &&
      (rc = tenant_create(db, b->tenant, b->at_ms, err)))
    return rc;
  struct tw_store_principal p = *b->admin;
  p.created_ms = b->at_ms;
  if ((rc = principal_create(db, &p, false, err)))
    return rc;
  struct tw_store_token_new t = *b->token;
  t.created_ms = b->at_ms;
  if ((rc = token_create(db, &t, NULL, err)))
    return rc;
  if (b->audit &&
      (rc = store__audit_append(s, db, b->audit, b->at_ms, NULL, err)))
    return rc;
  a->made = true;
  return TW_OK;
}

enum tw_rc tw_store_tenancy_bootstrap(struct tw_store *s,
                                      const struct tw_store_bootstrap *b,
                                      bool *made, struct tw_err *err) {
  struct boot_arg a = {.b = b};
  enum tw_rc rc = tw_store_write(s, op_bootstrap, &a, err);
  *made = rc == TW_OK && a.made;
  return rc;
}

/* ---- jobs' owners -------------------------------------------------------- */

struct owner_arg {
  const struct tw_store_owner *o;
  const struct tw_audit_event *audit;
  int64_t at_ms;
  const char *job_id;
  bool found;
  struct tw_store_owner_rec *rec;
};

static enum tw_rc owner_insert(struct tw_store *s, struct tw_db *db,
                               const struct tw_store_owner *o,
                               const char *job_id, int64_t at_ms,
                               struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_OWNER_INSERT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, job_id);
  store__bind_text(st, 2, o->tenant);
  store__bind_text(st, 3, o->project);
  store__bind_text(st, 4, o->principal);
  tw_db_bind_int64(st, 5, o->projected_uusd);
  tw_db_bind_int64(st, 6, at_ms);
  int r = tw_db_step(st);
  tw_db_reset(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "owner insert");
}

static enum tw_rc op_owner_put(struct tw_store *s, struct tw_db *db, void *varg,
                               struct tw_err *err) {
  struct owner_arg *a = varg;
  enum tw_rc rc;
  if (a->o && (rc = owner_insert(s, db, a->o, a->o->job_id, a->at_ms, err)))
    return rc;
  return a->audit ? store__audit_append(s, db, a->audit, a->at_ms, NULL, err)
                  : TW_OK;
}

enum tw_rc tw_store_job_owner_put(struct tw_store *s,
                                  const struct tw_store_owner *o,
                                  const struct tw_audit_event *audit,
                                  int64_t at_ms, struct tw_err *err) {
  struct owner_arg a = {.o = o, .audit = audit, .at_ms = at_ms};
  return tw_store_write(s, op_owner_put, &a, err);
}

/* ---- a submission -------------------------------------------------------- */

struct submit_arg {
  const struct tw_job_new *job;
  const struct store_job_prep *prep;
  const struct tw_store_owner *owner;
  const struct tw_audit_event *audit;
  struct tw_job_rec *out;
  bool replayed;
};

/* The job, its creation event, its owner and the request's audit entry in
 * one savepoint: the writer rolls back all of them when any step fails. */
static enum tw_rc op_submit(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct submit_arg *a = varg;
  enum tw_rc rc =
      store__job_insert(s, a->job, a->prep, a->out, &a->replayed, err);
  if (rc || a->replayed)
    return rc; /* a replay was recorded by its first submission */
  const char *id = a->out->id;
  int64_t at = a->out->created_ms;
  if (a->owner && (rc = owner_insert(s, db, a->owner, id, at, err)))
    return rc;
  if (!a->audit)
    return TW_OK;
  struct tw_audit_event ev = *a->audit;
  ev.object = id;
  return store__audit_append(s, db, &ev, at, NULL, err);
}

/* PostgreSQL: a batch's submissions in one statement (store__write_grouped):
 * their jobs, creation events and owners, from arrays (one element per
 * submission) rather than a savepoint and two statements each.  A job
 * whose idempotency key is taken (by a committed job or by an earlier one
 * of the same statement) is not inserted, nor its owner: it is not
 * returned, and op_submit then decides it alone (a replay, or a
 * conflict), its lookup seeing the row that took the key. */
static const char SQL_SUBMIT_MANY_PG[] =
    "WITH x AS (SELECT * FROM unnest(?1::text[], ?2::text[], ?3::text[],"
    " ?4::text[], ?5::bigint[], ?6::text[], ?7::text[], ?8::text[],"
    " ?9::bigint[], ?10::text[], ?11::text[], ?12::text[], ?13::text[],"
    " ?14::bigint[]) WITH ORDINALITY AS u(id, tenant, project, name,"
    " priority, spec, idem_key, idem_hash, at_ms, traceparent, o_tenant,"
    " o_project, o_principal, o_uusd, ord)),"
    " j AS (INSERT INTO jobs (id, tenant, project, name, state, reason,"
    " priority, spec, idem_key, idem_hash, created_at_ms, updated_at_ms,"
    " traceparent) SELECT id, tenant, project, name, 'pending', 'submitted',"
    " priority, spec, idem_key, idem_hash, at_ms, at_ms, traceparent"
    " FROM x ORDER BY ord ON CONFLICT DO NOTHING"
    " RETURNING seq, id, created_at_ms),"
    " e AS (INSERT INTO job_events (job_id, at_ms, from_state, to_state,"
    " reason) SELECT id, created_at_ms, NULL, 'pending', 'submitted'"
    " FROM j ORDER BY seq),"
    " o AS (INSERT INTO tenancy_jobs (job_id, tenant, project, principal,"
    " projected_uusd, created_at_ms) SELECT x.id, x.o_tenant, x.o_project,"
    " x.o_principal, x.o_uusd, x.at_ms FROM x JOIN j ON j.id = x.id"
    " WHERE x.o_principal IS NOT NULL ON CONFLICT DO NOTHING)"
    " SELECT seq, id FROM j";

/* As store__bind_text binds the owner's fields: NULL as "". */
static const char *nz(const char *v) { return v ? v : ""; }

static enum tw_rc submit_many(struct tw_store *s, struct tw_db *db,
                              void *const *args, size_t n, bool *done,
                              struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_SUBMIT_MANY_PG, err);
  if (!st)
    return TW_E_IO;
  int64_t now = store__now_ms(s);
  char(*ids)[TW_JOB_ID_LEN + 1] = tw_calloc(n, sizeof *ids);
  const char **t = tw_calloc(n * 11, sizeof *t);
  int64_t *num = tw_calloc(n * 3, sizeof *num);
  for (size_t k = 0; k < n; k++) {
    const struct submit_arg *a = args[k];
    const struct tw_job_new *j = a->job;
    const struct tw_store_owner *o = a->owner;
    store__sortable_id('j', now, a->prep->rnd, ids[k]);
    const char *row[11] = {ids[k],
                           j->tenant,
                           j->project,
                           j->name,
                           j->spec_json,
                           j->idem_key,
                           j->idem_key ? a->prep->hash : NULL,
                           j->traceparent,
                           o ? nz(o->tenant) : NULL,
                           o ? nz(o->project) : NULL,
                           o ? nz(o->principal) : NULL};
    for (int c = 0; c < 11; c++)
      t[(size_t)c * n + k] = row[c];
    num[k] = j->priority;
    num[n + k] = now;
    num[2 * n + k] = o ? o->projected_uusd : 0;
  }
  /* the parameters in the statement's order: text columns 0..3, then
   * priority, spec, idem_key, idem_hash, at_ms, traceparent, the owner */
  static const int text_param[11] = {1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13};
  for (int c = 0; c < 11; c++)
    tw_db_bind_text_array(st, text_param[c], t + (size_t)c * n, n);
  tw_db_bind_int64_array(st, 5, num, n);
  tw_db_bind_int64_array(st, 9, num + n, n);
  tw_db_bind_int64_array(st, 14, num + 2 * n, n);
  int r;
  size_t next = 0; /* rows come back in the order given, as a rule */
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    const char *id = (const char *)tw_db_column_text(st, 1);
    size_t k = n;
    for (size_t m = 0; id && m < n && k == n; m++) {
      size_t c = (next + m) % n;
      if (!done[c] && strcmp(ids[c], id) == 0)
        k = c;
    }
    if (k == n)
      continue;
    struct submit_arg *a = args[k];
    store__job_rec_new(a->out, a->job, ids[k], TW_JOB_PENDING, now);
    a->out->seq = tw_db_column_int64(st, 0);
    done[k] = true;
    next = k + 1;
  }
  tw_db_reset(st);
  free(ids);
  free(t);
  free(num);
  if (r != TW_DB_DONE) {
    for (size_t k = 0; k < n; k++)
      if (done[k]) { /* the writer runs each alone now */
        struct submit_arg *a = args[k];
        tw_job_rec_release(a->out);
        memset(a->out, 0, sizeof *a->out);
      }
    return tn_err(db, err, "submissions together");
  }
  return TW_OK;
}

/* After submit_many wrote a submission: its audit entry, as op_submit's. */
static enum tw_rc submit_after(struct tw_store *s, struct tw_db *db,
                               void *varg, struct tw_err *err) {
  struct submit_arg *a = varg;
  if (!a->audit)
    return TW_OK;
  struct tw_audit_event ev = *a->audit;
  ev.object = a->out->id;
  return store__audit_append(s, db, &ev, a->out->created_ms, NULL, err);
}

static const struct store_group SUBMIT_GROUP = {
    .one = op_submit, .many = submit_many, .after = submit_after};

enum tw_rc tw_store_job_submit(struct tw_store *s, const struct tw_job_new *job,
                               const struct tw_store_owner *owner,
                               const struct tw_audit_event *audit,
                               struct tw_job_rec *out, bool *replayed,
                               struct tw_err *err) {
  struct store_job_prep prep;
  struct submit_arg a = {
      .job = job, .prep = &prep, .owner = owner, .audit = audit, .out = out};
  memset(out, 0, sizeof *out);
  enum tw_rc rc = store__job_prepare(s, job, &prep, err);
  prep.seq_later = true; /* out is the caller's, read after the commit */
  /* a job with depends_on writes its group and edges too: alone */
  if (rc == TW_OK)
    rc = job->flow && job->flow->n_ext
             ? tw_store_write(s, op_submit, &a, err)
             : store__write_grouped(s, &SUBMIT_GROUP, &a, err);
  if (rc)
    tw_job_rec_release(out);
  if (replayed)
    *replayed = rc == TW_OK && a.replayed;
  return rc;
}

static enum tw_rc op_owner_get(struct tw_store *s, struct tw_db *db, void *varg,
                               struct tw_err *err) {
  struct owner_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_OWNER, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->job_id);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    a->found = true;
    store__col(st, 0, a->rec->principal, sizeof a->rec->principal);
    store__col(st, 1, a->rec->tenant, sizeof a->rec->tenant);
    store__col(st, 2, a->rec->project, sizeof a->rec->project);
    a->rec->projected_uusd = tw_db_column_int64(st, 3);
  }
  tw_db_reset(st);
  return r == TW_DB_ROW || r == TW_DB_DONE ? TW_OK
                                             : tn_err(db, err, "owner lookup");
}

enum tw_rc tw_store_job_owner_get(struct tw_store *s, const char *job_id,
                                  bool *found, struct tw_store_owner_rec *out,
                                  struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct owner_arg a = {.job_id = job_id, .rec = out};
  enum tw_rc rc = tw_store_read(s, op_owner_get, &a, err);
  *found = rc == TW_OK && a.found;
  return rc;
}

/* ---- quotas -------------------------------------------------------------- */

void tw_store_quotas_release(struct tw_store_quotas *q) {
  if (!q)
    return;
  free(q->tenants);
  free(q->rows);
  memset(q, 0, sizeof *q);
}

struct quota_arg {
  const char *tenant; /* NULL: all */
  struct tw_store_quotas *out;
  size_t cap_t, cap_r;
  const struct tw_store_quota_set *set;
};

static enum tw_rc load_quotas(struct tw_db *db, struct quota_arg *a,
                              struct tw_err *err) {
  struct tw_store_quotas *q = a->out;
  struct tw_db_stmt *st = prepare(db, SQL_QUOTA_TENANTS, err);
  if (!st)
    return TW_E_IO;
  store__bind_opt(st, 1, a->tenant);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_store_quota_tenant *t = PUSH(q->tenants, q->n_tenants, a->cap_t);
    store__col(st, 0, t->tenant, sizeof t->tenant);
    store__col(st, 1, t->cohort, sizeof t->cohort);
    t->spot_share_pct = tw_db_column_int(st, 2);
    t->version = tw_db_column_int64(st, 3);
  }
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return tn_err(db, err, "tenant quota");
  if (!(st = prepare(db, SQL_QUOTA_ROWS, err)))
    return TW_E_IO;
  store__bind_opt(st, 1, a->tenant);
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_store_quota_row *w = PUSH(q->rows, q->n_rows, a->cap_r);
    store__col(st, 0, w->tenant, sizeof w->tenant);
    store__col(st, 1, w->resource, sizeof w->resource);
    w->limit = tw_db_column_int64(st, 2);
    w->borrow = tw_db_column_int64(st, 3);
  }
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "quota rows");
}

static enum tw_rc op_quota_load(struct tw_store *s, struct tw_db *db, void *varg,
                                struct tw_err *err) {
  (void)s;
  return load_quotas(db, varg, err);
}

enum tw_rc tw_store_quotas_get(struct tw_store *s, const char *tenant,
                               struct tw_store_quotas *out,
                               struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct quota_arg a = {.tenant = tenant, .out = out};
  enum tw_rc rc = tw_store_read(s, op_quota_load, &a, err);
  if (rc)
    tw_store_quotas_release(out);
  return rc;
}

static enum tw_rc op_quota_set(struct tw_store *s, struct tw_db *db, void *varg,
                               struct tw_err *err) {
  (void)s;
  struct quota_arg *a = varg;
  const struct tw_store_quota_set *q = a->set;
  enum tw_rc rc = load_quotas(db, a, err);
  if (rc)
    return rc;
  if (a->out->n_tenants == 0)
    return tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", q->tenant);
  int64_t version = a->out->tenants[0].version;
  if (q->if_version > 0 && q->if_version != version)
    return tw_err_set(err, TW_E_CONFLICT,
                      "the quota of %s changed meanwhile (now version %" PRId64
                      ", If-Match named %" PRId64 "): read it again",
                      q->tenant, version, q->if_version);
  struct tw_db_stmt *st = prepare(db, SQL_QUOTA_DELETE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, q->tenant);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return tn_err(db, err, "quota delete");
  if (!(st = prepare(db, SQL_QUOTA_INSERT, err)))
    return TW_E_IO;
  for (size_t i = 0; i < q->n_rows && !rc; i++) {
    tw_db_reset(st);
    store__bind_text(st, 1, q->tenant);
    store__bind_text(st, 2, q->rows[i].resource);
    tw_db_bind_int64(st, 3, q->rows[i].limit);
    tw_db_bind_int64(st, 4, q->rows[i].borrow);
    if (tw_db_step(st) != TW_DB_DONE)
      rc = tn_err(db, err, "quota insert");
  }
  tw_db_finalize(st);
  if (rc)
    return rc;
  if (!(st = prepare(db, SQL_TENANT_QUOTA_SET, err)))
    return TW_E_IO;
  store__bind_text(st, 1, q->tenant);
  store__bind_text(st, 2, q->cohort);
  tw_db_bind_int(st, 3, q->spot_share_pct);
  r = tw_db_step(st);
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return tn_err(db, err, "tenant quota update");
  tw_store_quotas_release(a->out);
  a->cap_t = a->cap_r = 0;
  return load_quotas(db, a, err);
}

enum tw_rc tw_store_quota_set(struct tw_store *s,
                              const struct tw_store_quota_set *q,
                              struct tw_store_quotas *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct quota_arg a = {.tenant = q->tenant, .out = out, .set = q};
  enum tw_rc rc = tw_store_write(s, op_quota_set, &a, err);
  if (rc)
    tw_store_quotas_release(out);
  return rc;
}

/* ---- reservations -------------------------------------------------------- */

struct resv_arg {
  const struct tw_store_resv *v;
  const char *offer_id;
  struct tw_store_resv *items;
  size_t n, cap;
};

static enum tw_rc op_resv_load(struct tw_store *s, struct tw_db *db, void *varg,
                               struct tw_err *err) {
  (void)s;
  struct resv_arg *a = varg;
  struct tw_db_stmt *st = prepare(db, SQL_RESV_ALL, err);
  if (!st)
    return TW_E_IO;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_store_resv *v = PUSH(a->items, a->n, a->cap);
    store__col(st, 0, v->job_id, sizeof v->job_id);
    store__col(st, 1, v->tenant, sizeof v->tenant);
    v->vcpus = tw_db_column_int64(st, 2);
    store__col(st, 3, v->accel, sizeof v->accel);
    v->gpus = tw_db_column_int64(st, 4);
    v->spot = tw_db_column_int(st, 5) != 0;
    v->at_ms = tw_db_column_int64(st, 6);
  }
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : tn_err(db, err, "reservations");
}

enum tw_rc tw_store_reservations(struct tw_store *s, struct tw_store_resv **out,
                                 size_t *n, struct tw_err *err) {
  struct resv_arg a = {0};
  enum tw_rc rc = tw_store_read(s, op_resv_load, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

static enum tw_rc op_resv_put(struct tw_store *s, struct tw_db *db, void *varg,
                              struct tw_err *err) {
  struct resv_arg *a = varg;
  /* one per job launched: prepared once for the connection */
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_RESV_PUT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->v->job_id);
  store__bind_text(st, 2, a->v->tenant);
  store__bind_text(st, 3, a->offer_id);
  tw_db_bind_int64(st, 4, a->v->vcpus);
  store__bind_text(st, 5, a->v->accel);
  tw_db_bind_int64(st, 6, a->v->gpus);
  tw_db_bind_int(st, 7, a->v->spot);
  tw_db_bind_int64(st, 8, a->v->at_ms);
  int r = tw_db_step(st);
  enum tw_rc rc =
      r == TW_DB_DONE ? TW_OK : tn_err(db, err, "reservation insert");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_reservation_put(struct tw_store *s,
                                    const struct tw_store_resv *v,
                                    const char *offer_id, struct tw_err *err) {
  struct resv_arg a = {.v = v, .offer_id = offer_id};
  return tw_store_write(s, op_resv_put, &a, err);
}

enum tw_rc tw_store_reservation_put_op(struct tw_store *s, struct tw_db *db,
                                       void *arg, struct tw_err *err) {
  const struct tw_store_resv_put *p = arg;
  struct resv_arg a = {.v = p->v, .offer_id = p->offer_id};
  return op_resv_put(s, db, &a, err);
}

static enum tw_rc op_resv_delete(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  /* one per attempt ended: prepared once for the connection */
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_RESV_DELETE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, varg, -1);
  int r = tw_db_step(st);
  enum tw_rc rc =
      r == TW_DB_DONE ? TW_OK : tn_err(db, err, "reservation delete");
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_reservation_delete(struct tw_store *s, const char *job_id,
                                       struct tw_err *err) {
  return tw_store_write(s, op_resv_delete, (void *)job_id, err);
}
