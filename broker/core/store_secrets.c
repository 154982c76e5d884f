/* store_secrets.c - the SQL of the sealed secrets (store_secrets.h). */
#include "broker/core/store_secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

/* Rarely used: prepared per call rather than kept in every connection's
 * cache (which only grows). */
static const char SQL_PUT[] =
    "INSERT INTO secrets (name, key_id, nonce, ciphertext, tag, updated_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (name) DO UPDATE SET"
    " key_id = excluded.key_id, nonce = excluded.nonce,"
    " ciphertext = excluded.ciphertext, tag = excluded.tag,"
    " updated_at_ms = excluded.updated_at_ms";
static const char SQL_GET[] =
    "SELECT key_id, nonce, ciphertext, tag FROM secrets WHERE name = ?1";
static const char SQL_LIST[] =
    "SELECT name, key_id, updated_at_ms FROM secrets ORDER BY name";
static const char SQL_DELETE[] = "DELETE FROM secrets WHERE name = ?1";

static enum tw_rc sec_err(struct tw_db *db, struct tw_err *err) {
  return tw_err_set(err, TW_E_IO, "secrets: %s", tw_db_errmsg(db));
}

static struct tw_db_stmt *prepare(struct tw_db *db, const char *sql, struct tw_err *err) {
  struct tw_db_stmt *st = NULL;
  if (tw_db_prepare(db, sql, &st) != TW_DB_OK) {
    sec_err(db, err);
    return NULL;
  }
  return st;
}

struct put_arg {
  const char *name;
  const struct tw_store_secret *v;
  int64_t at_ms;
};

static enum tw_rc op_put(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  (void)s;
  struct put_arg *a = varg;
  const struct tw_store_secret *v = a->v;
  struct tw_db_stmt *st = prepare(db, SQL_PUT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->name, -1);
  tw_db_bind_text(st, 2, v->key_id, -1);
  tw_db_bind_blob(st, 3, v->nonce, sizeof v->nonce);
  tw_db_bind_blob(st, 4, v->len ? (const void *)v->ct : "", (int)v->len);
  tw_db_bind_blob(st, 5, v->tag, sizeof v->tag);
  tw_db_bind_int64(st, 6, a->at_ms);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : sec_err(db, err);
}

enum tw_rc tw_store_secret_put(struct tw_store *s, const char *name,
                               const struct tw_store_secret *v, int64_t at_ms,
                               struct tw_err *err) {
  struct put_arg a = {.name = name, .v = v, .at_ms = at_ms};
  return tw_store_write(s, op_put, &a, err);
}

struct get_arg {
  const char *name;
  bool found;
  struct tw_store_secret *out;
};

static enum tw_rc op_get(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  (void)s;
  struct get_arg *a = varg;
  struct tw_store_secret *o = a->out;
  struct tw_db_stmt *st = prepare(db, SQL_GET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->name, -1);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW && tw_db_column_bytes(st, 1) == sizeof o->nonce &&
      tw_db_column_bytes(st, 3) == sizeof o->tag) {
    a->found = true;
    store__col(st, 0, o->key_id, sizeof o->key_id);
    memcpy(o->nonce, tw_db_column_blob(st, 1), sizeof o->nonce);
    memcpy(o->tag, tw_db_column_blob(st, 3), sizeof o->tag);
    o->len = (size_t)tw_db_column_bytes(st, 2);
    o->ct = tw_malloc(o->len ? o->len : 1);
    if (o->len)
      memcpy(o->ct, tw_db_column_blob(st, 2), o->len);
  }
  tw_db_finalize(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return sec_err(db, err);
  return TW_OK;
}

enum tw_rc tw_store_secret_get(struct tw_store *s, const char *name,
                               bool *found, struct tw_store_secret *out,
                               struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct get_arg a = {.name = name, .out = out};
  enum tw_rc rc = tw_store_read(s, op_get, &a, err);
  *found = rc == TW_OK && a.found;
  if (rc) {
    free(out->ct);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

struct list_arg {
  struct tw_store_secret_info *items;
  size_t n, cap;
};

static enum tw_rc op_list(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  (void)s;
  struct list_arg *a = varg;
  struct tw_db_stmt *st = prepare(db, SQL_LIST, err);
  if (!st)
    return TW_E_IO;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? 2 * a->cap : 8;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_store_secret_info *i = &a->items[a->n++];
    memset(i, 0, sizeof *i);
    store__col(st, 0, i->name, sizeof i->name);
    store__col(st, 1, i->key_id, sizeof i->key_id);
    i->updated_ms = tw_db_column_int64(st, 2);
  }
  tw_db_finalize(st);
  return r == TW_DB_DONE ? TW_OK : sec_err(db, err);
}

enum tw_rc tw_store_secret_list(struct tw_store *s,
                                struct tw_store_secret_info **out, size_t *n,
                                struct tw_err *err) {
  struct list_arg a = {0};
  enum tw_rc rc = tw_store_read(s, op_list, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

static enum tw_rc op_delete(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  (void)s;
  struct tw_db_stmt *st = prepare(db, SQL_DELETE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, varg, -1);
  int r = tw_db_step(st);
  tw_db_finalize(st);
  if (r != TW_DB_DONE)
    return sec_err(db, err);
  if (tw_db_changes(db) == 0)
    return tw_err_set(err, TW_E_NOTFOUND, "secret %s not found",
                      (const char *)varg);
  return TW_OK;
}

enum tw_rc tw_store_secret_delete(struct tw_store *s, const char *name,
                                  struct tw_err *err) {
  return tw_store_write(s, op_delete, (void *)name, err);
}
