/* store_audit.c - the SQL of the audit log and the link of its chain
 * (store_audit.h). */
#include "broker/core/store_audit.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/store_int.h"

static const char SQL_LAST[] =
    "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1";
static const char SQL_INSERT[] =
    "INSERT INTO audit_log (seq, at_ms, principal, tenant, action, object,"
    " outcome, request_id, detail, prev_hash, hash)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
/* Eight entries at once: a batch's entries cost one execution per eight
 * rather than one each (the rest go one by one); entry r's fields are
 * ?(11r + 1) .. ?(11r + 11), in SQL_INSERT's order. */
#define AUDIT_ROWS 8
static const char SQL_INSERT8[] =
    "INSERT INTO audit_log (seq, at_ms, principal, tenant, action, object,"
    " outcome, request_id, detail, prev_hash, hash) VALUES"
    " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11),"
    " (?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22),"
    " (?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33),"
    " (?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44),"
    " (?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52, ?53, ?54, ?55),"
    " (?56, ?57, ?58, ?59, ?60, ?61, ?62, ?63, ?64, ?65, ?66),"
    " (?67, ?68, ?69, ?70, ?71, ?72, ?73, ?74, ?75, ?76, ?77),"
    " (?78, ?79, ?80, ?81, ?82, ?83, ?84, ?85, ?86, ?87, ?88)";
static const char SQL_LIST[] =
    "SELECT seq, at_ms, principal, tenant, action, object, outcome,"
    " request_id, detail, prev_hash, hash FROM audit_log"
    " WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2)"
    " AND (?3 IS NULL OR principal = ?3) AND (?4 IS NULL OR action = ?4)"
    " AND (?5 IS NULL OR outcome = ?5) AND at_ms >= ?6"
    " AND (?7 = 0 OR at_ms < ?7)"
    " ORDER BY seq LIMIT ?8";

/* ---- the chain ----------------------------------------------------------- */

static void hex_decode32(const char *hex, unsigned char out[32]) {
  memset(out, 0, 32);
  for (int i = 0; i < 32 && hex && hex[2 * i] && hex[2 * i + 1]; i++) {
    unsigned v = 0;
    for (int k = 0; k < 2; k++) {
      char c = hex[2 * i + k];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= (unsigned)(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= (unsigned)(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= (unsigned)(c - 'A' + 10);
    }
    out[i] = (unsigned char)v;
  }
}

static void field(EVP_MD_CTX *md, const char *s) {
  char len[24];
  size_t n = s ? strlen(s) : 0;
  int k = snprintf(len, sizeof len, "%zu:", n);
  EVP_DigestUpdate(md, len, (size_t)k);
  if (n)
    EVP_DigestUpdate(md, s, n);
  EVP_DigestUpdate(md, "\n", 1);
}

void tw_store_audit_hash(const struct tw_audit_entry *e, const char *prev_hex,
                         char out[TW_AUDIT_HASH_HEX]) {
  unsigned char prev[32], h[32];
  char num[24];
  unsigned hl = 0;
  hex_decode32(prev_hex ? prev_hex : TW_AUDIT_HASH_ZERO, prev);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(md, EVP_sha256(), NULL);
  EVP_DigestUpdate(md, prev, sizeof prev);
  snprintf(num, sizeof num, "%" PRId64, e->seq);
  field(md, num);
  snprintf(num, sizeof num, "%" PRId64, e->at_ms);
  field(md, num);
  field(md, e->principal);
  field(md, e->tenant);
  field(md, e->action);
  field(md, e->object);
  field(md, e->outcome);
  field(md, e->request_id);
  field(md, e->detail);
  EVP_DigestFinal_ex(md, h, &hl);
  EVP_MD_CTX_free(md);
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = digits[h[i] >> 4];
    out[2 * i + 1] = digits[h[i] & 15];
  }
  out[64] = '\0';
}

void tw_store_audit_entries_free(struct tw_audit_entry *e, size_t n) {
  for (size_t i = 0; e && i < n; i++) {
    free(e[i].principal);
    free(e[i].tenant);
    free(e[i].action);
    free(e[i].object);
    free(e[i].outcome);
    free(e[i].request_id);
    free(e[i].detail);
  }
  free(e);
}

/* ---- appending ----------------------------------------------------------- */

static enum tw_rc audit_err(struct tw_db *db, struct tw_err *err, const char *what) {
  return tw_err_set(err, TW_E_IO, "audit: %s: %s", what, tw_db_errmsg(db));
}

/* One queued entry: the event's fields copied (the write function's
 * event may live on its stack). */
struct store_audit_item {
  int op;
  int64_t at_ms;
  int64_t *seq_out;
  char *principal, *tenant, *action, *object, *outcome, *request_id, *detail;
};

static void item_free(struct store_audit_item *it) {
  free(it->principal);
  free(it->tenant);
  free(it->action);
  free(it->object);
  free(it->outcome);
  free(it->request_id);
  free(it->detail);
}

enum tw_rc store__audit_append(struct tw_store *s, struct tw_db *db,
                               const struct tw_audit_event *ev, int64_t at_ms,
                               int64_t *seq_out, struct tw_err *err) {
  (void)db, (void)err;
  struct store_audit_q *q = store__audit_q(s);
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 64;
    q->v = tw_realloc(q->v, q->cap * sizeof *q->v);
  }
  struct store_audit_item *it = &q->v[q->n++];
  it->op = q->op;
  it->at_ms = at_ms;
  it->seq_out = seq_out;
  it->principal = tw_strdup(ev->principal ? ev->principal : "");
  it->tenant = tw_strdup(ev->tenant ? ev->tenant : "");
  it->action = tw_strdup(ev->action ? ev->action : "");
  it->object = tw_strdup(ev->object ? ev->object : "");
  it->outcome = tw_strdup(ev->outcome ? ev->outcome : "");
  it->request_id = tw_strdup(ev->request_id ? ev->request_id : "");
  it->detail = tw_strdup(ev->detail ? ev->detail : "");
  if (seq_out)
    *seq_out = 0;
  return TW_OK;
}

void store__audit_clear(struct tw_store *s) {
  struct store_audit_q *q = store__audit_q(s);
  for (size_t i = 0; i < q->n; i++)
    item_free(&q->v[i]);
  q->n = 0;
  q->op = 0;
}

/* The chain's lock on PostgreSQL: a transaction-level advisory lock of
 * this schema's chain (several schemas, several chains, on one server).
 * Its own statement, before the read of the last entry: that read's
 * snapshot (READ COMMITTED: one per statement) then sees the entries of
 * whoever held the lock before.  Sent without waiting (db_pg.c): the
 * lock and the read cost one round trip. */
static const char SQL_LOCK_PG[] =
    "SELECT pg_advisory_xact_lock(7477, hashtext('audit ' || current_schema()))";

/* PostgreSQL: a batch's entries in one statement, from arrays (one
 * element per entry, in SQL_INSERT's order). */
static const char SQL_INSERT_MANY_PG[] =
    "INSERT INTO audit_log (seq, at_ms, principal, tenant, action, object,"
    " outcome, request_id, detail, prev_hash, hash)"
    " SELECT * FROM unnest(?1::bigint[], ?2::bigint[], ?3::text[],"
    " ?4::text[], ?5::text[], ?6::text[], ?7::text[], ?8::text[], ?9::text[],"
    " ?10::text[], ?11::text[])";

static enum tw_rc insert_many(struct tw_store *s, struct tw_db *db,
                              const struct tw_audit_entry *e,
                              char (*prevs)[TW_AUDIT_HASH_HEX],
                              char (*hs)[TW_AUDIT_HASH_HEX], size_t n,
                              struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_INSERT_MANY_PG, err);
  if (!st)
    return TW_E_IO;
  int64_t *num = tw_calloc(2 * n, sizeof *num);
  const char **t = tw_calloc(9 * n, sizeof *t);
  for (size_t k = 0; k < n; k++) {
    num[k] = e[k].seq;
    num[n + k] = e[k].at_ms;
    const char *row[9] = {e[k].principal, e[k].tenant,     e[k].action,
                          e[k].object,    e[k].outcome,    e[k].request_id,
                          e[k].detail,    prevs[k],        hs[k]};
    for (int c = 0; c < 9; c++)
      t[(size_t)c * n + k] = row[c] ? row[c] : "";
  }
  tw_db_bind_int64_array(st, 1, num, n);
  tw_db_bind_int64_array(st, 2, num + n, n);
  for (int c = 0; c < 9; c++)
    tw_db_bind_text_array(st, 3 + c, t + (size_t)c * n, n);
  int r = tw_db_step(st);
  tw_db_reset(st);
  free(num);
  free(t);
  return r == TW_DB_DONE ? TW_OK : audit_err(db, err, "append");
}

enum tw_rc store__audit_flush(struct tw_store *s, struct tw_db *db,
                              bool (*failed)(void *ctx, int op), void *ctx,
                              struct tw_err *err) {
  struct store_audit_q *q = store__audit_q(s);
  if (!q->n)
    return TW_OK;
  struct tw_db_stmt *st;
  int r;
  if (tw_db_backend(db) == TW_DB_POSTGRES) {
    if (!(st = tw_store_stmt(s, db, SQL_LOCK_PG, err)))
      return TW_E_IO;
    r = tw_db_step(st);
    tw_db_reset(st);
    if (r != TW_DB_ROW && r != TW_DB_DONE)
      return audit_err(db, err, "wait for the chain");
  }
  if (!(st = tw_store_stmt(s, db, SQL_LAST, err)))
    return TW_E_IO;
  int64_t seq;
  char prev[TW_AUDIT_HASH_HEX];
  r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    seq = tw_db_column_int64(st, 0);
    const unsigned char *h = tw_db_column_text(st, 1);
    snprintf(prev, sizeof prev, "%s", h ? (const char *)h : TW_AUDIT_HASH_ZERO);
  } else if (r == TW_DB_DONE) {
    seq = 0;
    memcpy(prev, TW_AUDIT_HASH_ZERO, sizeof prev);
  } else {
    tw_db_reset(st);
    return audit_err(db, err, "read the last entry");
  }
  tw_db_reset(st);
  /* every earlier statement's outcome is known now (that read waited for
   * them): the entries of the operations that failed are left out; the
   * others are linked in order, then inserted: on PostgreSQL all in one
   * statement, on sqlite eight at a time (the rest one by one) */
  struct tw_audit_entry *e = tw_calloc(q->n, sizeof *e);
  char(*prevs)[TW_AUDIT_HASH_HEX] = tw_calloc(q->n, sizeof *prevs);
  char(*hs)[TW_AUDIT_HASH_HEX] = tw_calloc(q->n, sizeof *hs);
  struct store_audit_item **its = tw_calloc(q->n, sizeof *its);
  size_t k = 0;
  for (size_t i = 0; i < q->n; i++) {
    struct store_audit_item *it = &q->v[i];
    if (failed && failed(ctx, it->op))
      continue;
    e[k] = (struct tw_audit_entry){.seq = ++seq,
                                   .at_ms = it->at_ms,
                                   .principal = it->principal,
                                   .tenant = it->tenant,
                                   .action = it->action,
                                   .object = it->object,
                                   .outcome = it->outcome,
                                   .request_id = it->request_id,
                                   .detail = it->detail};
    memcpy(prevs[k], prev, sizeof prev);
    tw_store_audit_hash(&e[k], prev, hs[k]);
    memcpy(prev, hs[k], sizeof prev);
    its[k++] = it;
  }
  enum tw_rc rc = TW_OK;
  if (k && tw_db_backend(db) == TW_DB_POSTGRES)
    rc = insert_many(s, db, e, prevs, hs, k, err);
  for (size_t j = 0; j < k && rc == TW_OK && tw_db_backend(db) != TW_DB_POSTGRES;) {
    /* eight rows in one statement, or the rest one by one */
    int rows = k - j >= AUDIT_ROWS ? AUDIT_ROWS : 1;
    if (!(st = tw_store_stmt(s, db, rows > 1 ? SQL_INSERT8 : SQL_INSERT,
                             err))) {
      rc = TW_E_IO;
      break;
    }
    for (int m = 0; m < rows; m++) {
      const struct tw_audit_entry *x = &e[j + (size_t)m];
      int b0 = 11 * m;
      tw_db_bind_int64(st, b0 + 1, x->seq);
      tw_db_bind_int64(st, b0 + 2, x->at_ms);
      store__bind_text(st, b0 + 3, x->principal);
      store__bind_text(st, b0 + 4, x->tenant);
      store__bind_text(st, b0 + 5, x->action);
      store__bind_text(st, b0 + 6, x->object);
      store__bind_text(st, b0 + 7, x->outcome);
      store__bind_text(st, b0 + 8, x->request_id);
      store__bind_text(st, b0 + 9, x->detail);
      store__bind_text(st, b0 + 10, prevs[j + (size_t)m]);
      store__bind_text(st, b0 + 11, hs[j + (size_t)m]);
    }
    r = tw_db_step(st);
    tw_db_reset(st);
    if (r != TW_DB_DONE)
      rc = audit_err(db, err, "append");
    j += (size_t)rows;
  }
  for (size_t j = 0; j < k && rc == TW_OK; j++)
    if (its[j]->seq_out)
      *its[j]->seq_out = e[j].seq;
  free(e);
  free(prevs);
  free(hs);
  free(its);
  return rc;
}

enum tw_rc tw_store_audit_append_in(struct tw_store *s, struct tw_db *db,
                                    const struct tw_audit_event *ev,
                                    int64_t at_ms, int64_t *seq_out,
                                    struct tw_err *err) {
  return store__audit_append(s, db, ev, at_ms, seq_out, err);
}

struct append_arg {
  const struct tw_audit_event *ev;
  int64_t at_ms;
  int64_t seq;
};

static enum tw_rc op_append(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct append_arg *a = varg;
  return store__audit_append(s, db, a->ev, a->at_ms, &a->seq, err);
}

enum tw_rc tw_store_audit_append(struct tw_store *s,
                                 const struct tw_audit_event *ev, int64_t at_ms,
                                 int64_t *seq_out, struct tw_err *err) {
  struct append_arg a = {.ev = ev, .at_ms = at_ms};
  enum tw_rc rc = tw_store_write(s, op_append, &a, err);
  if (rc == TW_OK && seq_out)
    *seq_out = a.seq;
  return rc;
}

/* ---- reading ------------------------------------------------------------- */

static char *col_dup(struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  return tw_strdup(t ? (const char *)t : "");
}

struct list_arg {
  const struct tw_audit_filter *f;
  struct tw_audit_entry *items;
  size_t n;
};

/* Binds f, steps st and fills a; shared by the store's connections and a
 * file opened directly. */
static enum tw_rc run_list(struct tw_db *db, struct tw_db_stmt *st, struct list_arg *a,
                           struct tw_err *err) {
  const struct tw_audit_filter *f = a->f;
  tw_db_bind_int64(st, 1, f->after_seq);
  store__bind_opt(st, 2, f->tenant);
  store__bind_opt(st, 3, f->principal);
  store__bind_opt(st, 4, f->action);
  store__bind_opt(st, 5, f->outcome);
  tw_db_bind_int64(st, 6, f->since_ms);
  tw_db_bind_int64(st, 7, f->until_ms);
  tw_db_bind_int(st, 8, f->limit);
  a->items = tw_calloc((size_t)f->limit, sizeof *a->items);
  a->n = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW && a->n < (size_t)f->limit) {
    struct tw_audit_entry *e = &a->items[a->n++];
    e->seq = tw_db_column_int64(st, 0);
    e->at_ms = tw_db_column_int64(st, 1);
    e->principal = col_dup(st, 2);
    e->tenant = col_dup(st, 3);
    e->action = col_dup(st, 4);
    e->object = col_dup(st, 5);
    e->outcome = col_dup(st, 6);
    e->request_id = col_dup(st, 7);
    e->detail = col_dup(st, 8);
    store__col(st, 9, e->prev_hash, sizeof e->prev_hash);
    store__col(st, 10, e->hash, sizeof e->hash);
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE) {
    tw_store_audit_entries_free(a->items, a->n);
    a->items = NULL;
    a->n = 0;
    return audit_err(db, err, "list");
  }
  return TW_OK;
}

static enum tw_rc op_list(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LIST, err);
  if (!st)
    return TW_E_IO;
  return run_list(db, st, varg, err);
}

enum tw_rc tw_store_audit_list(struct tw_store *s,
                               const struct tw_audit_filter *f,
                               struct tw_audit_entry **out, size_t *n,
                               struct tw_err *err) {
  struct list_arg a = {.f = f};
  *out = NULL;
  *n = 0;
  enum tw_rc rc = tw_store_read(s, op_list, &a, err);
  if (rc == TW_OK) {
    *out = a.items;
    *n = a.n;
  }
  return rc;
}

/* ---- a file read directly ------------------------------------------------ */

struct tw_store_audit_file {
  struct tw_db *db;
  struct tw_db_stmt *st;
};

void tw_store_audit_file_close(struct tw_store_audit_file *f) {
  if (!f)
    return;
  tw_db_finalize(f->st);
  tw_db_close(f->db);
  free(f);
}

enum tw_rc tw_store_audit_file_open(const char *path,
                                    struct tw_store_audit_file **out,
                                    struct tw_err *err) {
  struct tw_store_audit_file *f = tw_calloc(1, sizeof *f);
  enum tw_rc rc;
  *out = NULL;
  struct tw_db_opts o = {
      .backend = TW_DB_SQLITE, .path = path, .readonly = true};
  struct tw_err oerr = {0};
  if (tw_db_open(&o, &f->db, &oerr) != TW_OK) {
    rc = tw_err_set(err, TW_E_IO, "audit: cannot open %s: %s", path,
                    oerr.msg);
    tw_store_audit_file_close(f);
    return rc;
  }
  if (tw_db_prepare(f->db, SQL_LIST, &f->st) != TW_DB_OK) {
    rc = tw_err_set(err, TW_E_IO, "audit: %s holds no audit log: %s", path,
                    tw_db_errmsg(f->db));
    tw_store_audit_file_close(f);
    return rc;
  }
  *out = f;
  return TW_OK;
}

enum tw_rc tw_store_audit_file_list(struct tw_store_audit_file *f,
                                    const struct tw_audit_filter *flt,
                                    struct tw_audit_entry **out, size_t *n,
                                    struct tw_err *err) {
  struct list_arg a = {.f = flt};
  tw_db_clear_bindings(f->st);
  enum tw_rc rc = run_list(f->db, f->st, &a, err);
  *out = a.items;
  *n = a.n;
  return rc;
}
