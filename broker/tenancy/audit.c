/* audit.c - the SHA-256 chained audit log (see audit.h). */
#include "broker/tenancy/audit.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/core/store.h"

static const char SQL_LAST[] =
    "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1";
static const char SQL_INSERT[] =
    "INSERT INTO audit_log (seq, at_ms, principal, tenant, action, object,"
    " outcome, request_id, detail, prev_hash, hash)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
static const char SQL_LIST[] =
    "SELECT seq, at_ms, principal, tenant, action, object, outcome,"
    " request_id, detail, prev_hash, hash FROM audit_log"
    " WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2)"
    " AND (?3 IS NULL OR principal = ?3) AND (?4 IS NULL OR action = ?4)"
    " AND (?5 IS NULL OR outcome = ?5) AND at_ms >= ?6"
    " AND (?7 = 0 OR at_ms < ?7)"
    " ORDER BY seq LIMIT ?8";

static const char ZERO_HASH[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct tw_audit {
  struct tw_store *store;
  struct tw_clock *clock;
};

/* ---- hashing ------------------------------------------------------------- */

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

void tw_audit_entry_hash(const struct tw_audit_entry *e, const char *prev_hex,
                         char out[TW_AUDIT_HASH_HEX]) {
  unsigned char prev[32], h[32];
  char num[24];
  unsigned hl = 0;
  hex_decode32(prev_hex ? prev_hex : ZERO_HASH, prev);
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

void tw_audit_entry_release(struct tw_audit_entry *e) {
  if (!e)
    return;
  free(e->principal);
  free(e->tenant);
  free(e->action);
  free(e->object);
  free(e->outcome);
  free(e->request_id);
  free(e->detail);
  memset(e, 0, sizeof *e);
}

void tw_audit_entries_free(struct tw_audit_entry *e, size_t n) {
  for (size_t i = 0; e && i < n; i++)
    tw_audit_entry_release(&e[i]);
  free(e);
}

/* An entry whose hash fails may still be a genuine record moved to
 * another place: its content hashes right under the sequence it was
 * written with.  Looks nearby (reordering moves entries a little) and
 * returns that sequence, or 0. */
static int64_t written_as(const struct tw_audit_entry *e) {
  struct tw_audit_entry probe = *e;
  char h[TW_AUDIT_HASH_HEX];
  for (int64_t d = 1; d <= 64; d++)
    for (int sgn = -1; sgn <= 1; sgn += 2) {
      probe.seq = e->seq + sgn * d;
      if (probe.seq < 1)
        continue;
      tw_audit_entry_hash(&probe, e->prev_hash, h);
      if (!strcmp(h, e->hash))
        return probe.seq;
    }
  return 0;
}

enum tw_rc tw_audit_verify_entries(const struct tw_audit_entry *e, size_t n,
                                   int64_t first_seq, const char *prev_hex,
                                   struct tw_err *err) {
  char prev[TW_AUDIT_HASH_HEX], h[TW_AUDIT_HASH_HEX];
  snprintf(prev, sizeof prev, "%s", prev_hex ? prev_hex : ZERO_HASH);
  int64_t want = first_seq;
  for (size_t i = 0; i < n; i++, want++) {
    const struct tw_audit_entry *x = &e[i];
    tw_audit_entry_hash(x, x->prev_hash, h);
    if (strcmp(h, x->hash)) {
      int64_t orig = written_as(x);
      if (orig)
        return tw_err_set(
            err, TW_E_CONFLICT,
            "entry %" PRId64 " is out of place: it holds the record "
            "written as entry %" PRId64 " (entries were reordered)",
            x->seq, orig);
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64 " was altered: its content does not "
                        "match its hash",
                        x->seq);
    }
    if (x->seq > want)
      return tw_err_set(
          err, TW_E_CONFLICT,
          want == x->seq - 1
              ? "entry %" PRId64 " was removed (the log goes from "
                "entry %" PRId64 " to entry %" PRId64 ")"
              : "entries from %" PRId64 " were removed (the log "
                "goes from entry %" PRId64 " to entry %" PRId64 ")",
          want, want - 1, x->seq);
    if (x->seq < want)
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64
                        " is out of place: it follows entry %" PRId64,
                        x->seq, want - 1);
    if (strcmp(x->prev_hash, prev))
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64 " does not follow entry %" PRId64
                        ": its link does not match (an entry was replaced, "
                        "removed or reordered)",
                        x->seq, x->seq - 1);
    memcpy(prev, x->hash, sizeof prev);
  }
  return TW_OK;
}

/* ---- store ----------------------------------------------------------------
 */

enum tw_rc tw_audit_open(struct tw_store *store, struct tw_clock *clock,
                         struct tw_audit **out, struct tw_err *err) {
  (void)err;
  struct tw_audit *a = tw_calloc(1, sizeof *a);
  a->store = store;
  a->clock = clock ? clock : tw_clock_real();
  *out = a;
  return TW_OK;
}

void tw_audit_free(struct tw_audit *a) { free(a); }

static enum tw_rc db_fail(sqlite3 *db, struct tw_err *err, const char *what) {
  return tw_err_set(err, TW_E_IO, "audit: %s: %s", what, sqlite3_errmsg(db));
}

static void bind_str(sqlite3_stmt *st, int i, const char *s) {
  sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

enum tw_rc tw_audit_append_in(struct tw_store *s, sqlite3 *db,
                              const struct tw_audit_event *ev, int64_t at_ms,
                              int64_t *seq_out, struct tw_err *err) {
  sqlite3_stmt *st = tw_store_stmt(s, db, SQL_LAST, err);
  if (!st)
    return TW_E_IO;
  struct tw_audit_entry e = {0};
  char prev[TW_AUDIT_HASH_HEX];
  int r = sqlite3_step(st);
  if (r == SQLITE_ROW) {
    e.seq = sqlite3_column_int64(st, 0) + 1;
    const unsigned char *h = sqlite3_column_text(st, 1);
    snprintf(prev, sizeof prev, "%s", h ? (const char *)h : ZERO_HASH);
  } else if (r == SQLITE_DONE) {
    e.seq = 1;
    memcpy(prev, ZERO_HASH, sizeof prev);
  } else {
    sqlite3_reset(st);
    return db_fail(db, err, "read the last entry");
  }
  sqlite3_reset(st);
  e.at_ms = at_ms;
  /* the hash reads the fields; they stay borrowed from ev */
  e.principal = (char *)(ev->principal ? ev->principal : "");
  e.tenant = (char *)(ev->tenant ? ev->tenant : "");
  e.action = (char *)(ev->action ? ev->action : "");
  e.object = (char *)(ev->object ? ev->object : "");
  e.outcome = (char *)(ev->outcome ? ev->outcome : "");
  e.request_id = (char *)(ev->request_id ? ev->request_id : "");
  e.detail = (char *)(ev->detail ? ev->detail : "");
  char h[TW_AUDIT_HASH_HEX];
  tw_audit_entry_hash(&e, prev, h);
  if (!(st = tw_store_stmt(s, db, SQL_INSERT, err)))
    return TW_E_IO;
  sqlite3_bind_int64(st, 1, e.seq);
  sqlite3_bind_int64(st, 2, e.at_ms);
  bind_str(st, 3, e.principal);
  bind_str(st, 4, e.tenant);
  bind_str(st, 5, e.action);
  bind_str(st, 6, e.object);
  bind_str(st, 7, e.outcome);
  bind_str(st, 8, e.request_id);
  bind_str(st, 9, e.detail);
  bind_str(st, 10, prev);
  bind_str(st, 11, h);
  r = sqlite3_step(st);
  sqlite3_reset(st);
  if (r != SQLITE_DONE)
    return db_fail(db, err, "append");
  if (seq_out)
    *seq_out = e.seq;
  return TW_OK;
}

struct append_arg {
  const struct tw_audit_event *ev;
  int64_t at_ms;
  int64_t seq;
};

static enum tw_rc op_append(struct tw_store *s, sqlite3 *db, void *varg,
                            struct tw_err *err) {
  struct append_arg *a = varg;
  return tw_audit_append_in(s, db, a->ev, a->at_ms, &a->seq, err);
}

enum tw_rc tw_audit_append(struct tw_audit *a, const struct tw_audit_event *ev,
                           int64_t *seq_out, struct tw_err *err) {
  struct append_arg arg = {.ev = ev, .at_ms = tw_clock_now_ms(a->clock)};
  enum tw_rc rc = tw_store_write(a->store, op_append, &arg, err);
  if (rc == TW_OK && seq_out)
    *seq_out = arg.seq;
  return rc;
}

static char *col_dup(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return tw_strdup(t ? (const char *)t : "");
}

static void col_hash(sqlite3_stmt *st, int i, char out[TW_AUDIT_HASH_HEX]) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(out, TW_AUDIT_HASH_HEX, "%s", t ? (const char *)t : "");
}

struct list_arg {
  const struct tw_audit_filter *f;
  struct tw_audit_entry *items;
  size_t n;
};

static void bind_opt(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static enum tw_rc run_list(sqlite3 *db, sqlite3_stmt *st, struct list_arg *a,
                           struct tw_err *err) {
  const struct tw_audit_filter *f = a->f;
  sqlite3_bind_int64(st, 1, f->after_seq);
  bind_opt(st, 2, f->tenant);
  bind_opt(st, 3, f->principal);
  bind_opt(st, 4, f->action);
  bind_opt(st, 5, f->outcome);
  sqlite3_bind_int64(st, 6, f->since_ms);
  sqlite3_bind_int64(st, 7, f->until_ms);
  sqlite3_bind_int(st, 8, f->limit);
  a->items = tw_calloc((size_t)f->limit, sizeof *a->items);
  a->n = 0;
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW && a->n < (size_t)f->limit) {
    struct tw_audit_entry *e = &a->items[a->n++];
    e->seq = sqlite3_column_int64(st, 0);
    e->at_ms = sqlite3_column_int64(st, 1);
    e->principal = col_dup(st, 2);
    e->tenant = col_dup(st, 3);
    e->action = col_dup(st, 4);
    e->object = col_dup(st, 5);
    e->outcome = col_dup(st, 6);
    e->request_id = col_dup(st, 7);
    e->detail = col_dup(st, 8);
    col_hash(st, 9, e->prev_hash);
    col_hash(st, 10, e->hash);
  }
  sqlite3_reset(st);
  if (r != SQLITE_ROW && r != SQLITE_DONE) {
    tw_audit_entries_free(a->items, a->n);
    a->items = NULL;
    a->n = 0;
    return db_fail(db, err, "list");
  }
  return TW_OK;
}

static enum tw_rc op_list(struct tw_store *s, sqlite3 *db, void *varg,
                          struct tw_err *err) {
  sqlite3_stmt *st = tw_store_stmt(s, db, SQL_LIST, err);
  if (!st)
    return TW_E_IO;
  return run_list(db, st, varg, err);
}

enum tw_rc tw_audit_list(struct tw_audit *a, const struct tw_audit_filter *f,
                         struct tw_audit_entry **out, size_t *n,
                         int64_t *next_after, struct tw_err *err) {
  struct tw_audit_filter g = *f;
  if (g.limit < 1 || g.limit > 10000)
    return tw_err_field(err, TW_E_INVALID, "limit",
                        "limit: expected 1 to 10000, got %d", g.limit);
  struct list_arg arg = {.f = &g};
  enum tw_rc rc = tw_store_read(a->store, op_list, &arg, err);
  if (rc)
    return rc;
  *out = arg.items;
  *n = arg.n;
  if (next_after)
    *next_after = arg.n == (size_t)g.limit ? arg.items[arg.n - 1].seq : 0;
  return TW_OK;
}

/* The walk shared by the store and file forms: pages of 1000 oldest first,
 * each checked against the last hash of the page before. */
typedef enum tw_rc (*page_fn)(void *ctx, struct list_arg *a,
                              struct tw_err *err);

static enum tw_rc walk(page_fn page, void *ctx, int64_t *entries,
                       char head_hex[TW_AUDIT_HASH_HEX], struct tw_err *err) {
  struct tw_audit_filter f = {.limit = 1000};
  char prev[TW_AUDIT_HASH_HEX];
  memcpy(prev, ZERO_HASH, sizeof prev);
  int64_t count = 0, next_seq = 1;
  for (;;) {
    struct list_arg a = {.f = &f};
    enum tw_rc rc = page(ctx, &a, err);
    if (rc)
      return rc;
    if (a.n == 0) {
      free(a.items);
      break;
    }
    rc = tw_audit_verify_entries(a.items, a.n, next_seq, prev, err);
    if (rc == TW_OK) {
      memcpy(prev, a.items[a.n - 1].hash, sizeof prev);
      next_seq = a.items[a.n - 1].seq + 1;
      f.after_seq = a.items[a.n - 1].seq;
      count += (int64_t)a.n;
    }
    bool last = a.n < (size_t)f.limit;
    tw_audit_entries_free(a.items, a.n);
    if (rc)
      return rc;
    if (last)
      break;
  }
  if (entries)
    *entries = count;
  if (head_hex)
    memcpy(head_hex, prev, TW_AUDIT_HASH_HEX);
  return TW_OK;
}

static enum tw_rc page_store(void *ctx, struct list_arg *a,
                             struct tw_err *err) {
  struct tw_audit *au = ctx;
  return tw_store_read(au->store, op_list, a, err);
}

enum tw_rc tw_audit_verify(struct tw_audit *a, int64_t *entries,
                           char head_hex[TW_AUDIT_HASH_HEX],
                           struct tw_err *err) {
  return walk(page_store, a, entries, head_hex, err);
}

struct file_ctx {
  sqlite3 *db;
  sqlite3_stmt *st;
};

static enum tw_rc page_file(void *ctx, struct list_arg *a, struct tw_err *err) {
  struct file_ctx *fc = ctx;
  return run_list(fc->db, fc->st, a, err);
}

enum tw_rc tw_audit_verify_file(const char *db_path, int64_t *entries,
                                char head_hex[TW_AUDIT_HASH_HEX],
                                struct tw_err *err) {
  struct file_ctx fc = {0};
  enum tw_rc rc;
  if (sqlite3_open_v2(db_path, &fc.db, SQLITE_OPEN_READONLY, NULL) !=
      SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "audit: cannot open %s: %s", db_path,
                    fc.db ? sqlite3_errmsg(fc.db) : "out of memory");
    goto out;
  }
  sqlite3_busy_timeout(fc.db, 5000);
  if (sqlite3_prepare_v2(fc.db, SQL_LIST, -1, &fc.st, NULL) != SQLITE_OK) {
    rc = tw_err_set(err, TW_E_IO, "audit: %s holds no audit log: %s", db_path,
                    sqlite3_errmsg(fc.db));
    goto out;
  }
  rc = walk(page_file, &fc, entries, head_hex, err);
out:
  sqlite3_finalize(fc.st);
  sqlite3_close(fc.db);
  return rc;
}

void tw_audit_entry_json(const struct tw_audit_entry *e, struct tw_buf *out) {
  char at[40];
  tw_time_fmt_rfc3339(e->at_ms, at, sizeof at);
  tw_buf_printf(out,
                "{\"seq\":%" PRId64 ",\"at\":\"%s\",\"at_ms\":%" PRId64
                ",\"principal\":",
                e->seq, at, e->at_ms);
  tw_buf_json_str(out, e->principal ? e->principal : "");
  tw_buf_adds(out, ",\"tenant\":");
  tw_buf_json_str(out, e->tenant ? e->tenant : "");
  tw_buf_adds(out, ",\"action\":");
  tw_buf_json_str(out, e->action ? e->action : "");
  tw_buf_adds(out, ",\"object\":");
  tw_buf_json_str(out, e->object ? e->object : "");
  tw_buf_adds(out, ",\"outcome\":");
  tw_buf_json_str(out, e->outcome ? e->outcome : "");
  tw_buf_adds(out, ",\"request_id\":");
  tw_buf_json_str(out, e->request_id ? e->request_id : "");
  tw_buf_adds(out, ",\"detail\":");
  tw_buf_json_str(out, e->detail ? e->detail : "");
  tw_buf_printf(out, ",\"prev_hash\":\"%s\",\"hash\":\"%s\"}", e->prev_hash,
                e->hash);
}
