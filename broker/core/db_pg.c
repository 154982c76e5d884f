/* db_pg.c - PostgreSQL through libpq, behind the calls of db.h.
 *
 * The store's SQL is sqlite's dialect kept to what both engines read the
 * same way; what differs is translated here, once per statement when it
 * is prepared (translate()):
 *   ?N, ?           -> $N, $k
 *   INSERT OR IGNORE INTO ... -> INSERT INTO ... ON CONFLICT DO NOTHING
 *   BEGIN IMMEDIATE -> BEGIN
 *   INTEGER PRIMARY KEY [AUTOINCREMENT] -> BIGSERIAL PRIMARY KEY
 *   INTEGER -> BIGINT (sqlite's integers are 64-bit), BLOB -> BYTEA,
 *   REAL -> DOUBLE PRECISION, WITHOUT ROWID -> (nothing),
 *   IFNULL -> COALESCE, PRAGMA ...; -> (nothing)
 *   MIN(a, b), MAX(a, b) (sqlite's scalar forms) -> LEAST, GREATEST
 *   json_extract(col, '$.key') -> (col::jsonb ->> 'key') (a text key of
 *     a JSON object column, compared with text)
 *   CREATE TRIGGER t BEFORE UPDATE|DELETE ON x
 *     BEGIN SELECT RAISE(ABORT, 'why'); END;  (the one shape the schema
 *     uses: a table that refuses a change) -> a plpgsql function raising
 *     'why' and a row trigger calling it
 * Parameters go as text of unspecified type (the server infers each from
 * its use, as sqlite's affinity does), blobs in binary; a statement whose
 * parameter the server cannot infer (`?9 IS NULL OR tenant = ?9`) is
 * prepared at its first step instead, that parameter typed as what was
 * bound to it (bigint, text, bytea); one whose text tests a parameter for
 * NULL is known to be such without asking the server, whose refusal
 * would abort the transaction the statement runs in.  Results come as
 * text, bytea decoded on demand.  A statement is prepared once per
 * connection (PQprepare); a connection found broken is reset before the
 * next statement and its statements prepared again. */
#include <libpq-fe.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/db_int.h"

#define BYTEAOID 17
#define BOOLOID 16

struct pdb {
  struct tw_db base;
  PGconn *c;
  unsigned gen; /* bumped by every reset: statements prepare again */
  unsigned next_name;
  char msg[512];
  char state[6]; /* SQLSTATE of the last failure; "" none */
  bool broken;
  int changes;
  int64_t total;
  bool last_was_insert;
  /* constant SQL (by address) known to need its first step's types: the
   * store prepares some statements for each call, and asking the server
   * again each time would fail again */
  const char **late;
  int n_late, cap_late;
};

struct param {
  char *v; /* owned; NULL: SQL NULL */
  Oid type; /* what was bound: 20 bigint, 25 text, 17 bytea; 0 NULL */
  int len;
  int fmt; /* 0 text, 1 binary */
  char num[24];
  bool is_num;
};

struct pst {
  struct tw_db_stmt base;
  char *sql;   /* translated */
  char name[16];
  unsigned gen; /* of the connection it was prepared on */
  bool simple;  /* transaction control or empty: PQexec */
  bool deferred; /* prepared at the first step, with the bound types */
  bool insert;
  bool reads; /* a SELECT: may run again when the connection was dead */
  int nparams;
  uint64_t used; /* placeholders the text names (1 << (n - 1)) */
  uint64_t nulltest; /* of those, the ones tested `IS [NOT] NULL` */
  struct param *p;
  PGresult *res;
  int row, nrows;
  /* bytea columns of the current row, decoded on demand */
  unsigned char **blob;
  size_t *blob_len;
  int ncols;
};

#define D(db) ((struct pdb *)(db))
#define P(st) ((struct pst *)(st))

/* ---- translation ------------------------------------------------------- */

struct buf {
  char *p;
  size_t n, cap;
};
static void put(struct buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = tw_realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* If the words of pat (space separated) start at p, the end of the last
 * one; else NULL. */
static const char *words(const char *p, const char *pat) {
  while (*pat) {
    while (*p == ' ' || *p == '\n' || *p == '\t')
      p++;
    size_t n = strcspn(pat, " ");
    if (strncasecmp(p, pat, n) != 0 || is_word(p[n]))
      return NULL;
    p += n;
    pat += n;
    while (*pat == ' ')
      pat++;
  }
  return p;
}

/* An identifier at p into out (n bytes); the end, or NULL. */
static const char *ident(const char *p, char *out, size_t n) {
  while (*p == ' ' || *p == '\n' || *p == '\t')
    p++;
  size_t k = 0;
  while (is_word(*p) && k + 1 < n)
    out[k++] = *p++;
  out[k] = 0;
  return k ? p : NULL;
}

/* json_extract(col, '$.key') at p, written to b as (col::jsonb ->> 'key');
 * the end of its ")", or NULL when it is not that shape. */
static const char *json_key(const char *p, struct buf *b) {
  char col[64], key[64];
  const char *e = words(p, "json_extract");
  if (!e || *e != '(' || !(e = ident(e + 1, col, sizeof col)))
    return NULL;
  while (*e == ' ')
    e++;
  if (*e++ != ',')
    return NULL;
  while (*e == ' ')
    e++;
  if (strncmp(e, "'$.", 3))
    return NULL;
  e += 3;
  size_t k = 0;
  while (is_word(*e) && k + 1 < sizeof key)
    key[k++] = *e++;
  key[k] = 0;
  if (!k || *e++ != '\'')
    return NULL;
  while (*e == ' ')
    e++;
  if (*e++ != ')')
    return NULL;
  puts_(b, "(");
  puts_(b, col);
  puts_(b, "::jsonb ->> '");
  puts_(b, key);
  puts_(b, "')");
  return e;
}

/* sqlite's refusing trigger (see the head of the file) at p, written to
 * b in PostgreSQL's terms; the end of its END;, or NULL when it is not
 * that shape. */
static const char *trigger(const char *p, struct buf *b) {
  char name[64], ev[16], table[64];
  const char *e;
  if (!(e = words(p, "CREATE TRIGGER")) || !(e = ident(e, name, sizeof name)) ||
      !(e = words(e, "BEFORE")) || !(e = ident(e, ev, sizeof ev)) ||
      !(e = words(e, "ON")) || !(e = ident(e, table, sizeof table)) ||
      !(e = words(e, "BEGIN SELECT RAISE")))
    return NULL;
  while (*e == ' ')
    e++;
  if (*e != '(' || !(e = words(e + 1, "ABORT")))
    return NULL;
  while (*e == ' ' || *e == ',')
    e++;
  if (*e != '\'')
    return NULL;
  const char *m = e;
  const char *q = strchr(m + 1, '\'');
  if (!q)
    return NULL;
  const char *end = strstr(q, "END;");
  if (!end)
    return NULL;
  puts_(b, "CREATE FUNCTION ");
  puts_(b, name);
  puts_(b, "_fn() RETURNS trigger LANGUAGE plpgsql AS $tw$BEGIN RAISE "
           "EXCEPTION ");
  put(b, m, (size_t)(q + 1 - m));
  puts_(b, "; END$tw$; CREATE TRIGGER ");
  puts_(b, name);
  puts_(b, " BEFORE ");
  puts_(b, ev);
  puts_(b, " ON ");
  puts_(b, table);
  puts_(b, " FOR EACH ROW EXECUTE FUNCTION ");
  puts_(b, name);
  puts_(b, "_fn();");
  return end + 4;
}

/* Whether the parenthesis at p holds a comma at its own level: MIN(a, b)
 * rather than the aggregate MIN(a). */
static bool two_args(const char *p) {
  int depth = 0;
  for (; *p; p++) {
    if (*p == '\'') {
      p = strchr(p + 1, '\'');
      if (!p)
        return false;
    } else if (*p == '(') {
      depth++;
    } else if (*p == ')') {
      if (--depth == 0)
        return false;
    } else if (*p == ',' && depth == 1) {
      return true;
    }
  }
  return false;
}

/* The translated text; *nparams the highest placeholder. */
static char *translate(const char *sql, int *nparams, uint64_t *used) {
  struct buf b = {0};
  *used = 0;
  int k = 0, maxn = 0;
  bool on_conflict = false; /* INSERT OR IGNORE: append at the end */
  const char *p = sql;
  puts_(&b, "");
  while (*p) {
    if (*p == '\'') { /* a literal, verbatim */
      const char *q = p + 1;
      while (*q && !(*q == '\'' && q[1] != '\''))
        q += *q == '\'' ? 2 : 1;
      if (*q)
        q++;
      put(&b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    if (*p == '?') {
      char num[16];
      int n;
      if (isdigit((unsigned char)p[1])) {
        n = (int)strtol(p + 1, (char **)&p, 10);
      } else {
        n = ++k;
        p++;
      }
      if (n > maxn)
        maxn = n;
      if (n >= 1 && n <= 64)
        *used |= 1ull << (n - 1);
      snprintf(num, sizeof num, "$%d", n);
      puts_(&b, num);
      continue;
    }
    if (*p == ';') {
      if (on_conflict)
        puts_(&b, " ON CONFLICT DO NOTHING");
      on_conflict = false;
      put(&b, p, 1);
      p++;
      continue;
    }
    if (is_word(*p) && (p == sql || !is_word(p[-1]))) {
      const char *e;
      if ((e = trigger(p, &b)) || (e = json_key(p, &b))) {
        p = e;
        continue;
      }
      if ((e = words(p, "INSERT OR IGNORE INTO"))) {
        puts_(&b, "INSERT INTO");
        on_conflict = true;
        p = e;
        continue;
      }
      if ((e = words(p, "BEGIN IMMEDIATE"))) {
        puts_(&b, "BEGIN");
        p = e;
        continue;
      }
      if ((e = words(p, "INTEGER PRIMARY KEY AUTOINCREMENT")) ||
          (e = words(p, "INTEGER PRIMARY KEY"))) {
        puts_(&b, "BIGSERIAL PRIMARY KEY");
        p = e;
        continue;
      }
      if ((e = words(p, "WITHOUT ROWID"))) {
        p = e;
        continue;
      }
      if ((e = words(p, "PRAGMA"))) {
        p += strcspn(p, ";");
        if (*p)
          p++;
        continue;
      }
      if (((e = words(p, "MIN")) || (e = words(p, "MAX"))) && *e == '(' &&
          two_args(e)) {
        puts_(&b, toupper((unsigned char)p[1]) == 'I' ? "LEAST" : "GREATEST");
        p = e;
        continue;
      }
      static const char *const rep[][2] = {{"INTEGER", "BIGINT"},
                                           {"BLOB", "BYTEA"},
                                           {"REAL", "DOUBLE PRECISION"},
                                           {"IFNULL", "COALESCE"}};
      bool done = false;
      for (size_t i = 0; i < sizeof rep / sizeof rep[0] && !done; i++)
        if ((e = words(p, rep[i][0]))) {
          puts_(&b, rep[i][1]);
          p = e;
          done = true;
        }
      if (done)
        continue;
      const char *q = p;
      while (is_word(*q))
        q++;
      put(&b, p, (size_t)(q - p));
      p = q;
      continue;
    }
    put(&b, p, 1);
    p++;
  }
  if (on_conflict)
    puts_(&b, " ON CONFLICT DO NOTHING");
  *nparams = maxn;
  return b.p;
}

/* ---- errors ------------------------------------------------------------- */

static void set_err(struct pdb *d, const PGresult *r, const char *fallback) {
  const char *m = r ? PQresultErrorMessage(r) : NULL;
  if (!m || !*m)
    m = PQerrorMessage(d->c);
  if (!m || !*m)
    m = fallback;
  snprintf(d->msg, sizeof d->msg, "%s", m);
  size_t n = strlen(d->msg);
  while (n && (d->msg[n - 1] == '\n' || d->msg[n - 1] == ' '))
    d->msg[--n] = 0;
  const char *s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
  snprintf(d->state, sizeof d->state, "%s", s ? s : "");
  if (PQstatus(d->c) != CONNECTION_OK)
    d->broken = true;
}

static void clear_err(struct pdb *d) {
  d->msg[0] = 0;
  d->state[0] = 0;
}

/* Before a statement: a connection lost earlier (the server restarted, a
 * proxy cut it) is reset, outside any transaction (that one is gone). */
static bool ensure_conn(struct pdb *d) {
  if (!d->broken && PQstatus(d->c) == CONNECTION_OK)
    return true;
  PQreset(d->c);
  if (PQstatus(d->c) != CONNECTION_OK) {
    set_err(d, NULL, "connection lost");
    d->broken = true;
    snprintf(d->state, sizeof d->state, "08006");
    return false;
  }
  d->broken = false;
  d->gen++;
  return true;
}

static enum tw_db_class p_errclass(struct tw_db *db) {
  struct pdb *d = D(db);
  const char *s = d->state;
  if (d->broken)
    return TW_DB_C_STORAGE;
  if (!s[0])
    return d->msg[0] ? TW_DB_C_OTHER : TW_DB_C_NONE;
  if (!strcmp(s, "53100"))
    return TW_DB_C_FULL;
  if (!strncmp(s, "23", 2))
    return TW_DB_C_CONSTRAINT;
  if (!strcmp(s, "40001") || !strcmp(s, "40P01") || !strcmp(s, "55P03"))
    return TW_DB_C_BUSY;
  if (!strncmp(s, "08", 2) || !strncmp(s, "57P", 3) || !strncmp(s, "58", 2) ||
      !strncmp(s, "53", 2))
    return TW_DB_C_STORAGE;
  return TW_DB_C_OTHER;
}

static const char *p_errmsg(struct tw_db *db) {
  return D(db)->msg[0] ? D(db)->msg : "not an error";
}

/* ---- connection ---------------------------------------------------------- */

static void p_close(struct tw_db *db) {
  PQfinish(D(db)->c);
  free(D(db)->late);
  free(db);
}

static int run_simple(struct pdb *d, const char *sql, char **errmsg) {
  clear_err(d);
  if (!ensure_conn(d)) {
    if (errmsg)
      *errmsg = tw_strdup(d->msg);
    return TW_DB_ERROR;
  }
  PGresult *r = PQexec(d->c, sql);
  ExecStatusType t = PQresultStatus(r);
  if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK &&
      t != PGRES_EMPTY_QUERY) {
    set_err(d, r, "exec failed");
    PQclear(r);
    if (errmsg)
      *errmsg = tw_strdup(d->msg);
    return TW_DB_ERROR;
  }
  d->changes = atoi(PQcmdTuples(r));
  PQclear(r);
  return TW_DB_OK;
}

static int p_exec(struct tw_db *db, const char *sql, char **errmsg) {
  int np;
  uint64_t used;
  char *t = translate(sql, &np, &used);
  int rc = run_simple(D(db), t, errmsg);
  free(t);
  return rc;
}

static bool is_simple(const char *t) {
  while (*t == ' ' || *t == '\n')
    t++;
  return !*t || words(t, "BEGIN") || words(t, "COMMIT") ||
         words(t, "ROLLBACK") || words(t, "SAVEPOINT") || words(t, "RELEASE");
}

/* The parameter PostgreSQL could not type (42P18 or 42P08: "... of parameter
 * $N"), or 0. */
static int untyped_param(const PGresult *r) {
  const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  if (!s || (strcmp(s, "42P18") && strcmp(s, "42P08")) || !m ||
      !(m = strchr(m, '$')))
    return 0;
  return atoi(m + 1);
}

/* The placeholders sql tests for NULL (`?N IS NULL`, `?N IS NOT NULL`):
 * nothing else in such a test tells the server their type, so it cannot
 * prepare the statement before they are bound (42P18), and a prepare it
 * refuses inside a transaction aborts the transaction. */
static uint64_t null_tested(const char *sql) {
  uint64_t m = 0;
  for (const char *q = sql; (q = strchr(q, '?'));) {
    q++;
    int n = 0;
    while (isdigit((unsigned char)*q) && n <= 64)
      n = n * 10 + (*q++ - '0');
    while (*q == ' ')
      q++;
    if (n >= 1 && n <= 64 && !strncmp(q, "IS ", 3))
      m |= 1ull << (n - 1);
  }
  return m;
}

/* Prepares st on d.  A number the text skips (?1 ?2 ?4) has no use to
 * infer its type from: text, as the NULL it is bound to.  With bound, a
 * parameter the server cannot type takes the type of its binding. */
static int do_prepare(struct pdb *d, struct pst *st, bool bound) {
  Oid types[st->nparams ? st->nparams : 1];
  for (int i = 0; i < st->nparams; i++) {
    types[i] = i < 64 && !(st->used & (1ull << i)) ? 25 : 0;
    if (bound && i < 64 && (st->nulltest & (1ull << i)))
      types[i] = st->p[i].type ? st->p[i].type : 25;
  }
  for (int tries = 0; tries <= st->nparams; tries++) {
    PGresult *r = PQprepare(d->c, st->name, st->sql, st->nparams, types);
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
      PQclear(r);
      st->gen = d->gen;
      return TW_DB_OK;
    }
    int n = untyped_param(r);
    if (n >= 1 && n <= st->nparams && !types[n - 1] && !bound) {
      PQclear(r);
      st->deferred = true; /* typed at the first step */
      return TW_DB_OK;
    }
    if (n >= 1 && n <= st->nparams && !types[n - 1]) {
      types[n - 1] = st->p[n - 1].type ? st->p[n - 1].type : 25;
      PQclear(r);
      continue;
    }
    set_err(d, r, "prepare failed");
    PQclear(r);
    return TW_DB_ERROR;
  }
  return TW_DB_ERROR;
}

static int p_prepare(struct tw_db *db, const char *sql,
                     struct tw_db_stmt **out) {
  struct pdb *d = D(db);
  clear_err(d);
  struct pst *st = tw_calloc(1, sizeof *st);
  st->base.db = db;
  st->sql = translate(sql, &st->nparams, &st->used);
  st->simple = is_simple(st->sql);
  const char *w = st->sql;
  while (*w == ' ')
    w++;
  st->insert = words(w, "INSERT") != NULL;
  st->reads = words(w, "SELECT") != NULL;
  snprintf(st->name, sizeof st->name, "tw%u", d->next_name++);
  st->p = tw_calloc((size_t)(st->nparams ? st->nparams : 1), sizeof *st->p);
  st->row = -1;
  st->nulltest = null_tested(sql);
  st->deferred = st->nulltest != 0;
  for (int i = 0; i < d->n_late && !st->deferred; i++)
    st->deferred = d->late[i] == sql;
  bool idle = PQtransactionStatus(d->c) == PQTRANS_IDLE;
  if (!st->simple && !st->deferred &&
      (!ensure_conn(d) || (do_prepare(d, st, false) != TW_DB_OK &&
                           /* dead while idle: once more on a new one */
                           !(idle && d->broken && ensure_conn(d) &&
                             do_prepare(d, st, false) == TW_DB_OK)))) {
    free(st->sql);
    free(st->p);
    free(st);
    return TW_DB_ERROR;
  }
  if (st->deferred) {
    bool known = false;
    for (int i = 0; i < d->n_late && !known; i++)
      known = d->late[i] == sql;
    if (!known) {
      if (d->n_late == d->cap_late) {
        d->cap_late = d->cap_late ? 2 * d->cap_late : 16;
        d->late = tw_realloc(d->late, (size_t)d->cap_late * sizeof *d->late);
      }
      d->late[d->n_late++] = sql;
    }
  }
  *out = &st->base;
  return TW_DB_OK;
}

static void drop_row(struct pst *st) {
  for (int i = 0; i < st->ncols; i++)
    if (st->blob[i])
      PQfreemem(st->blob[i]);
  free(st->blob);
  free(st->blob_len);
  st->blob = NULL;
  st->blob_len = NULL;
  st->ncols = 0;
}

static int p_reset(struct tw_db_stmt *s) {
  struct pst *st = P(s);
  drop_row(st);
  PQclear(st->res);
  st->res = NULL;
  st->row = -1;
  st->nrows = 0;
  return TW_DB_OK;
}

static void free_param(struct param *p) {
  if (!p->is_num)
    free(p->v);
  memset(p, 0, sizeof *p);
}

static void p_clear_bindings(struct tw_db_stmt *s) {
  struct pst *st = P(s);
  for (int i = 0; i < st->nparams; i++)
    free_param(&st->p[i]);
}

static void p_finalize(struct tw_db_stmt *s) {
  struct pst *st = P(s);
  struct pdb *d = D(s->db);
  p_reset(s);
  p_clear_bindings(s);
  bool prepared = st->deferred ? st->gen == d->gen + 1u : st->gen == d->gen;
  PGTransactionStatusType ts = PQtransactionStatus(d->c);
  if (!st->simple && prepared && PQstatus(d->c) == CONNECTION_OK &&
      (ts == PQTRANS_IDLE || ts == PQTRANS_INTRANS)) {
    char sql[48];
    snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
    PQclear(PQexec(d->c, sql));
  }
  free(st->p);
  free(st->sql);
  free(st);
}

static struct param *slot(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  if (i < 1 || i > st->nparams)
    return NULL;
  free_param(&st->p[i - 1]);
  return &st->p[i - 1];
}

static int p_bind_int64(struct tw_db_stmt *s, int i, int64_t v) {
  struct param *p = slot(s, i);
  if (!p)
    return TW_DB_ERROR;
  p->len = snprintf(p->num, sizeof p->num, "%lld", (long long)v);
  p->v = p->num;
  p->is_num = true;
  p->type = 20;
  return TW_DB_OK;
}
static int p_bind_text(struct tw_db_stmt *s, int i, const char *v, int n) {
  struct param *p = slot(s, i);
  if (!p)
    return TW_DB_ERROR;
  size_t len = n < 0 ? strlen(v) : (size_t)n;
  p->v = tw_malloc(len + 1);
  memcpy(p->v, v, len);
  p->v[len] = 0;
  p->len = (int)len;
  p->type = 25;
  return TW_DB_OK;
}
static int p_bind_blob(struct tw_db_stmt *s, int i, const void *v, size_t n) {
  struct param *p = slot(s, i);
  if (!p)
    return TW_DB_ERROR;
  p->v = tw_malloc(n ? n : 1);
  if (n)
    memcpy(p->v, v, n);
  p->len = (int)n;
  p->fmt = 1;
  p->type = 17;
  return TW_DB_OK;
}
static int p_bind_null(struct tw_db_stmt *s, int i) {
  return slot(s, i) ? TW_DB_OK : TW_DB_ERROR;
}

static int p_step(struct tw_db_stmt *s) {
  struct pst *st = P(s);
  struct pdb *d = D(s->db);
  if (st->row >= 0 || st->res) {
    drop_row(st);
    if (!st->res)
      return TW_DB_DONE;
    if (++st->row < st->nrows)
      return TW_DB_ROW;
    return TW_DB_DONE;
  }
  clear_err(d);
  if (!ensure_conn(d))
    return TW_DB_ERROR;
  /* A connection that died while idle (the server restarted, a proxy cut
   * it) looks fine until used: outside a transaction, a prepare, a read
   * or BEGIN that finds it dead ran nothing, so it runs again, once, on
   * a new connection rather than failing its caller. */
  bool idle = PQtransactionStatus(d->c) == PQTRANS_IDLE;
  PGresult *r = NULL;
  for (int attempt = 0;; attempt++) {
    bool again = attempt == 0 && idle;
    if (st->simple) {
      r = PQexec(d->c, st->sql);
    } else {
      int prc = TW_DB_OK;
      if (st->deferred && st->gen != d->gen + 1u) {
        /* first step: prepare with the types bound; gen + 1 marks it done */
        if ((prc = do_prepare(d, st, true)) == TW_DB_OK)
          st->gen = d->gen + 1u;
      } else if (!st->deferred && st->gen != d->gen) {
        prc = do_prepare(d, st, false);
      }
      if (prc != TW_DB_OK) {
        if (again && d->broken && ensure_conn(d))
          continue;
        return TW_DB_ERROR;
      }
      const char *vals[st->nparams ? st->nparams : 1];
      int lens[st->nparams ? st->nparams : 1],
          fmts[st->nparams ? st->nparams : 1];
      for (int i = 0; i < st->nparams; i++) {
        vals[i] = st->p[i].v;
        lens[i] = st->p[i].len;
        fmts[i] = st->p[i].fmt;
      }
      r = PQexecPrepared(d->c, st->name, st->nparams, vals, lens, fmts, 0);
    }
    ExecStatusType rt = PQresultStatus(r);
    if (again && (st->simple || st->reads) && rt != PGRES_TUPLES_OK &&
        rt != PGRES_COMMAND_OK && PQstatus(d->c) != CONNECTION_OK) {
      PQclear(r);
      r = NULL;
      d->broken = true;
      if (ensure_conn(d))
        continue;
      return TW_DB_ERROR;
    }
    break;
  }
  ExecStatusType t = PQresultStatus(r);
  if (t == PGRES_TUPLES_OK) {
    st->res = r;
    st->nrows = PQntuples(r);
    st->row = 0;
    d->changes = 0;
    if (st->insert) { /* INSERT ... RETURNING */
      d->changes = st->nrows;
      d->total += st->nrows;
      d->last_was_insert = true;
    }
    return st->nrows > 0 ? TW_DB_ROW : TW_DB_DONE;
  }
  if (t == PGRES_COMMAND_OK || t == PGRES_EMPTY_QUERY) {
    d->changes = atoi(PQcmdTuples(r));
    d->total += d->changes;
    if (st->insert)
      d->last_was_insert = d->changes > 0;
    PQclear(r);
    st->row = 0;
    return TW_DB_DONE;
  }
  set_err(d, r, "statement failed");
  PQclear(r);
  return TW_DB_ERROR;
}

static bool have(struct pst *st, int i) {
  return st->res && st->row >= 0 && st->row < st->nrows && i >= 0 &&
         i < PQnfields(st->res);
}

static int64_t p_column_int64(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  if (!have(st, i) || PQgetisnull(st->res, st->row, i))
    return 0;
  const char *v = PQgetvalue(st->res, st->row, i);
  if (PQftype(st->res, i) == BOOLOID)
    return v[0] == 't';
  return strtoll(v, NULL, 10);
}
static const unsigned char *p_column_text(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  if (!have(st, i) || PQgetisnull(st->res, st->row, i))
    return NULL;
  return (const unsigned char *)PQgetvalue(st->res, st->row, i);
}
static bool decode(struct pst *st, int i) {
  if (!st->blob) {
    st->ncols = PQnfields(st->res);
    st->blob = tw_calloc((size_t)st->ncols, sizeof *st->blob);
    st->blob_len = tw_calloc((size_t)st->ncols, sizeof *st->blob_len);
  }
  if (!st->blob[i])
    st->blob[i] = PQunescapeBytea(
        (const unsigned char *)PQgetvalue(st->res, st->row, i),
        &st->blob_len[i]);
  return st->blob[i] != NULL;
}
static const void *p_column_blob(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  if (!have(st, i) || PQgetisnull(st->res, st->row, i))
    return NULL;
  if (PQftype(st->res, i) != BYTEAOID)
    return PQgetvalue(st->res, st->row, i);
  return decode(st, i) ? st->blob[i] : NULL;
}
static int p_column_bytes(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  if (!have(st, i) || PQgetisnull(st->res, st->row, i))
    return 0;
  if (PQftype(st->res, i) != BYTEAOID)
    return PQgetlength(st->res, st->row, i);
  return decode(st, i) ? (int)st->blob_len[i] : 0;
}
static int p_column_type(struct tw_db_stmt *s, int i) {
  struct pst *st = P(s);
  return !have(st, i) || PQgetisnull(st->res, st->row, i) ? TW_DB_NULL : 1;
}

static int p_changes(struct tw_db *db) { return D(db)->changes; }
static int64_t p_total_changes(struct tw_db *db) { return D(db)->total; }
static int64_t p_last_insert_id(struct tw_db *db) {
  struct pdb *d = D(db);
  if (!d->last_was_insert)
    return 0;
  PGresult *r = PQexec(d->c, "SELECT lastval()");
  int64_t v = 0;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
    v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  PQclear(r);
  return v;
}
static bool p_autocommit(struct tw_db *db) {
  PGTransactionStatusType t = PQtransactionStatus(D(db)->c);
  return t == PQTRANS_IDLE || t == PQTRANS_UNKNOWN;
}

static int p_user_version(struct tw_db *db, int *out) {
  struct pdb *d = D(db);
  *out = 0;
  if (run_simple(d,
                 "CREATE TABLE IF NOT EXISTS tw_user_version ("
                 " v BIGINT NOT NULL)",
                 NULL))
    return TW_DB_ERROR;
  PGresult *r = PQexec(d->c, "SELECT max(v) FROM tw_user_version");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    set_err(d, r, "read the schema version");
    PQclear(r);
    return TW_DB_ERROR;
  }
  if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
    *out = atoi(PQgetvalue(r, 0, 0));
  PQclear(r);
  return TW_DB_OK;
}
static int p_set_user_version(struct tw_db *db, int v) {
  char sql[128];
  snprintf(sql, sizeof sql,
           "DELETE FROM tw_user_version; INSERT INTO tw_user_version (v)"
           " VALUES (%d)",
           v);
  return run_simple(D(db), sql, NULL);
}
static int p_test_cap_pages(struct tw_db *db, bool cap) {
  (void)cap;
  snprintf(D(db)->msg, sizeof D(db)->msg,
           "capping the pages is a sqlite test hook");
  return TW_DB_ERROR;
}

/* The key of the schema lock: "tw" and "schema" in ASCII. */
static int p_schema_lock(struct tw_db *db, bool lock) {
  return run_simple(D(db),
                    lock ? "SELECT pg_advisory_lock(7477, 1935894381)"
                         : "SELECT pg_advisory_unlock(7477, 1935894381)",
                    NULL);
}

static const struct tw_db_ops OPS = {
    .close = p_close,
    .errmsg = p_errmsg,
    .errclass = p_errclass,
    .exec = p_exec,
    .prepare = p_prepare,
    .finalize = p_finalize,
    .reset = p_reset,
    .clear_bindings = p_clear_bindings,
    .bind_int64 = p_bind_int64,
    .bind_text = p_bind_text,
    .bind_blob = p_bind_blob,
    .bind_null = p_bind_null,
    .step = p_step,
    .column_int64 = p_column_int64,
    .column_text = p_column_text,
    .column_blob = p_column_blob,
    .column_bytes = p_column_bytes,
    .column_type = p_column_type,
    .changes = p_changes,
    .total_changes = p_total_changes,
    .last_insert_id = p_last_insert_id,
    .autocommit = p_autocommit,
    .user_version = p_user_version,
    .set_user_version = p_set_user_version,
    .test_cap_pages = p_test_cap_pages,
    .schema_lock = p_schema_lock,
};

static void quiet(void *arg, const char *message) {
  (void)arg, (void)message; /* NOTICEs (IF NOT EXISTS) are not errors */
}

enum tw_rc tw_db_pg_open(const struct tw_db_opts *o, struct tw_db **out,
                         struct tw_err *err) {
  if (!o->dsn || !*o->dsn)
    return tw_err_set(err, TW_E_INVALID, "store.dsn: empty for postgres");
  const char *keys[4] = {"dbname", "password", "connect_timeout", NULL};
  const char *vals[4] = {o->dsn, o->password, "10", NULL};
  if (!o->password || !*o->password) {
    keys[1] = "connect_timeout";
    vals[1] = "10";
    keys[2] = NULL;
  }
  PGconn *c = PQconnectdbParams(keys, vals, 1);
  if (!c)
    return tw_err_set(err, TW_E_IO, "store: postgres: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    /* libpq's message names the host and port, never the password */
    char m[400];
    snprintf(m, sizeof m, "%s", PQerrorMessage(c));
    size_t n = strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
      m[--n] = 0;
    PQfinish(c);
    tw_err_set(err, TW_E_IO, "store: cannot connect to postgres: %s", m);
    tw_err_detail(err, TW_DETAIL_STORE_IO);
    return TW_E_IO;
  }
  PQsetNoticeProcessor(c, quiet, NULL);
  PGresult *r = PQexec(c, "SET client_min_messages = warning");
  PQclear(r);
  char set[160];
  long long t = o->txn_timeout_ms > 0 ? (long long)o->txn_timeout_ms : 5000;
  snprintf(set, sizeof set,
           "SET idle_in_transaction_session_timeout = %lld;"
           " SET lock_timeout = %lld",
           t, t);
  PQclear(PQexec(c, set));
  if (o->readonly)
    PQclear(PQexec(c, "SET default_transaction_read_only = on"));
  struct pdb *d = tw_calloc(1, sizeof *d);
  d->base.ops = &OPS;
  d->base.backend = TW_DB_POSTGRES;
  d->c = c;
  *out = &d->base;
  return TW_OK;
}
