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
 * next statement and its statements prepared again.
 *
 * A batch (tw_db_batch_begin .. tw_db_batch_end: the writer's group
 * commit) runs in libpq's pipeline mode.  A statement whose result the
 * caller cannot look at (an INSERT, UPDATE or DELETE without RETURNING,
 * BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO, SELECT pg_advisory_xact_lock)
 * is sent and its step answers DONE at once; the first call that needs
 * an answer (a statement that returns rows, changes(), last_insert_id(),
 * COMMIT, ROLLBACK, a prepare) sends a sync and reads every result owed,
 * in order; a step_into()'s row is read with that next answer.  Each
 * statement sent carries the number of the batch's operation it belongs
 * to (tw_db_batch_op) and a copy of its parameters.  When one failed, the
 * server skipped everything after it up to the sync: if it belongs to an
 * earlier operation than the current one, that operation is marked failed
 * (tw_db_batch_failed), its savepoint rolled back, and the skipped
 * statements of the others sent again -- they looked at no result after
 * the failure, so sending them again is running them again.  A failure in
 * the current operation is its step's error, as without a pipeline. */
#include <libpq-fe.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/db_int.h"

#define BYTEAOID 17
#define BOOLOID 16

/* A statement sent in pipeline mode whose result is not read yet. */
struct ent {
  char name[16]; /* prepared statement; "" for sql */
  char *sql;     /* simple statement text (owned) */
  int tag;       /* the batch's operation (tw_db_batch_op), or TAG_* */
  bool want;     /* the caller waits for this result */
  bool commit;   /* COMMIT: "ROLLBACK" as its status is a failure */
  bool insert;   /* an INSERT: whether it inserted is last_was_insert */
  int64_t *dst;  /* the first column of its row read into *dst (step_into) */
  int n;
  char **v; /* owned copies; NULL for SQL NULL */
  int *len, *fmt;
};
#define TAG_TXN (-1)  /* BEGIN, the fence: before the first operation */
#define TAG_FIX (-2)  /* the savepoint rolled back after a failure */
#define PIPE_MAX 256  /* results owed at most before a sync */

struct fail {
  int tag;
  char state[6];
  char msg[256];
};

struct pdb {
  struct tw_db base;
  PGconn *c;
  /* the batch in pipeline mode (see the head of the file) */
  bool pipe;
  bool dead; /* the batch's transaction is lost: every statement fails */
  int tag;
  struct ent *q;
  int nq, capq;
  PGresult *wanted; /* the result of the entry with want, after a drain */
  struct fail *fails;
  int nfails, capfails;
  unsigned gen; /* bumped by every reset: statements prepare again */
  unsigned lastval_gen; /* gen + 1 when "tw_lastval" is prepared */
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
  if (d->pipe) { /* the batch's transaction went with the connection */
    set_err(d, NULL, "connection lost");
    d->broken = true;
    snprintf(d->state, sizeof d->state, "08006");
    return false;
  }
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

static void ent_free(struct ent *e) {
  for (int i = 0; i < e->n; i++)
    free(e->v[i]);
  free(e->v);
  free(e->len);
  free(e->fmt);
  free(e->sql);
  memset(e, 0, sizeof *e);
}

static void q_clear(struct pdb *d) {
  for (int i = 0; i < d->nq; i++)
    ent_free(&d->q[i]);
  d->nq = 0;
}

static int drain(struct pdb *d);
static int go_dead(struct pdb *d);

static void p_close(struct tw_db *db) {
  q_clear(D(db));
  free(D(db)->q);
  free(D(db)->fails);
  PQclear(D(db)->wanted);
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
  if (d->pipe) {
    /* several statements, or a lock: outside the pipeline, inside its
     * transaction (what is owed is read first) */
    if (drain(d) != TW_DB_OK || PQexitPipelineMode(d->c) != 1) {
      if (!d->msg[0])
        set_err(d, NULL, "pipeline: cannot leave");
      if (errmsg)
        *errmsg = tw_strdup(d->msg);
      return TW_DB_ERROR;
    }
    d->pipe = false;
    int rc = run_simple(d, sql, errmsg);
    if (PQenterPipelineMode(d->c) == 1) {
      d->pipe = true;
    } else {
      d->pipe = true;
      set_err(d, NULL, "pipeline: cannot enter again");
      go_dead(d);
      rc = TW_DB_ERROR;
    }
    return rc;
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
  struct pdb *d = D(db);
  char *t = translate(sql, &np, &used);
  int rc;
  const char *w = t;
  while (*w == ' ' || *w == '\n' || *w == ';')
    w++;
  rc = d->pipe && !*w ? TW_DB_OK /* a PRAGMA: nothing to send */
                      : run_simple(d, t, errmsg);
  free(t);
  return rc;
}

static bool is_simple(const char *t) {
  while (*t == ' ' || *t == '\n')
    t++;
  return !*t || words(t, "BEGIN") || words(t, "COMMIT") ||
         words(t, "ROLLBACK") || words(t, "SAVEPOINT") || words(t, "RELEASE");
}

/* ---- pipeline mode (a batch) ------------------------------------------- */

static void add_fail(struct pdb *d, int tag, const char *state,
                     const char *msg) {
  for (int i = 0; i < d->nfails; i++)
    if (d->fails[i].tag == tag)
      return; /* the first failure of an operation is its cause */
  if (d->nfails == d->capfails) {
    d->capfails = d->capfails ? 2 * d->capfails : 8;
    d->fails = tw_realloc(d->fails, (size_t)d->capfails * sizeof *d->fails);
  }
  struct fail *f = &d->fails[d->nfails++];
  f->tag = tag;
  snprintf(f->state, sizeof f->state, "%s", state);
  snprintf(f->msg, sizeof f->msg, "%s", msg);
}

static struct ent *q_push(struct pdb *d) {
  if (d->nq == d->capq) {
    d->capq = d->capq ? 2 * d->capq : 64;
    d->q = tw_realloc(d->q, (size_t)d->capq * sizeof *d->q);
  }
  struct ent *e = &d->q[d->nq++];
  memset(e, 0, sizeof *e);
  e->tag = d->tag;
  return e;
}

static bool ent_send(struct pdb *d, const struct ent *e) {
  if (e->name[0])
    return PQsendQueryPrepared(d->c, e->name, e->n, (const char *const *)e->v,
                               e->len, e->fmt, 0) == 1;
  return PQsendQueryParams(d->c, e->sql, 0, NULL, NULL, NULL, NULL, 0) == 1;
}

/* The batch's transaction is lost (the connection broke, BEGIN failed):
 * what was owed is dropped, and every statement until the batch ends
 * fails with the message now in d->msg. */
static int go_dead(struct pdb *d) {
  d->dead = true;
  q_clear(d);
  PQclear(d->wanted);
  d->wanted = NULL;
  if (PQstatus(d->c) != CONNECTION_OK)
    d->broken = true;
  add_fail(d, TAG_TXN, d->state, d->msg);
  return TW_DB_ERROR;
}

static int dead_err(struct pdb *d) {
  for (int i = 0; i < d->nfails; i++)
    if (d->fails[i].tag == TAG_TXN) {
      snprintf(d->msg, sizeof d->msg, "%s", d->fails[i].msg);
      snprintf(d->state, sizeof d->state, "%s", d->fails[i].state);
    }
  return TW_DB_ERROR;
}

static bool sends(struct pdb *d, struct ent *e) {
  if (ent_send(d, e))
    return true;
  set_err(d, NULL, "pipeline: cannot send");
  return false;
}

/* Sends a sync and reads every result owed.  The wanted entry's result
 * is left in d->wanted.  TW_DB_ERROR with d->msg when a statement of the
 * current operation failed, or the transaction is lost. */
static int drain(struct pdb *d) {
  if (d->dead)
    return dead_err(d);
  while (d->nq > 0) {
    if (PQpipelineSync(d->c) != 1) {
      set_err(d, NULL, "pipeline: cannot sync");
      return go_dead(d);
    }
    int failed = -1;
    bool *aborted = tw_calloc((size_t)d->nq, sizeof *aborted);
    for (int i = 0; i < d->nq; i++) {
      struct ent *e = &d->q[i];
      PGresult *r = PQgetResult(d->c);
      if (!r) {
        free(aborted);
        set_err(d, NULL, "pipeline: connection lost");
        return go_dead(d);
      }
      ExecStatusType t = PQresultStatus(r);
      bool keep = false;
      if (t == PGRES_PIPELINE_ABORTED) {
        aborted[i] = true;
      } else if (t == PGRES_FATAL_ERROR ||
                 (e->commit && !strcmp(PQcmdStatus(r), "ROLLBACK"))) {
        if (t == PGRES_FATAL_ERROR)
          set_err(d, r, "statement failed");
        else {
          snprintf(d->msg, sizeof d->msg,
                   "COMMIT: the transaction was rolled back");
          snprintf(d->state, sizeof d->state, "40000");
        }
        if (failed < 0)
          failed = i;
      } else if (e->dst) { /* INSERT ... RETURNING: rows changed */
        bool rows = t == PGRES_TUPLES_OK && PQntuples(r) >= 1;
        *e->dst = rows ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
        d->changes = rows ? PQntuples(r) : 0;
        d->total += d->changes;
        d->last_was_insert = d->changes > 0;
      } else if (e->want) {
        PQclear(d->wanted);
        d->wanted = r;
        keep = true;
      } else {
        d->changes = atoi(PQcmdTuples(r));
        d->total += d->changes;
        if (e->insert)
          d->last_was_insert = d->changes > 0;
      }
      if (!keep)
        PQclear(r);
      PGresult *nul = PQgetResult(d->c); /* the end of this one's results */
      PQclear(nul);
    }
    PGresult *sync = PQgetResult(d->c);
    bool synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    if (!synced) {
      free(aborted);
      set_err(d, NULL, "pipeline: no sync");
      return go_dead(d);
    }
    if (failed < 0) {
      free(aborted);
      q_clear(d);
      return TW_DB_OK;
    }
    int tag = d->q[failed].tag;
    add_fail(d, tag, d->state, d->msg);
    if (tag < 0 || tag > d->tag || d->broken) {
      free(aborted);
      return go_dead(d);
    }
    if (tag == d->tag) {
      /* the current operation's: its error, as without a pipeline; the
       * transaction waits for the operation's ROLLBACK TO */
      free(aborted);
      q_clear(d);
      PQclear(d->wanted);
      d->wanted = NULL;
      return TW_DB_ERROR;
    }
    /* An earlier operation's, found after it returned: undo it, and run
     * again what the server skipped of the later ones. */
    char keep_msg[sizeof d->msg], keep_state[sizeof d->state];
    memcpy(keep_msg, d->msg, sizeof keep_msg);
    memcpy(keep_state, d->state, sizeof keep_state);
    struct ent *old = d->q;
    int nold = d->nq, capold = d->capq;
    d->q = NULL;
    d->nq = d->capq = 0;
    int cur = d->tag;
    d->tag = TAG_FIX;
    q_push(d)->sql = tw_strdup("ROLLBACK TO op");
    q_push(d)->sql = tw_strdup("RELEASE op");
    d->tag = cur;
    for (int i = 0; i < nold; i++) {
      if (aborted[i] && old[i].tag != tag) {
        struct ent *e = q_push(d);
        *e = old[i];
        memset(&old[i], 0, sizeof old[i]);
      } else {
        ent_free(&old[i]);
      }
    }
    (void)capold;
    free(old);
    free(aborted);
    for (int i = 0; i < d->nq; i++)
      if (!sends(d, &d->q[i]))
        return go_dead(d);
    memcpy(d->msg, keep_msg, sizeof d->msg);
    memcpy(d->state, keep_state, sizeof d->state);
  }
  return TW_DB_OK;
}

/* Queues st with its parameters as they are bound now. */
static bool q_stmt(struct pdb *d, struct pst *st, bool want) {
  struct ent *e = q_push(d);
  e->want = want;
  if (st->simple) {
    e->sql = tw_strdup(st->sql);
    const char *w = st->sql;
    while (*w == ' ' || *w == '\n')
      w++;
    e->commit = words(w, "COMMIT") != NULL;
  } else {
    memcpy(e->name, st->name, sizeof e->name);
    e->insert = st->insert;
    e->n = st->nparams;
    size_t k = (size_t)(e->n ? e->n : 1);
    e->v = tw_calloc(k, sizeof *e->v);
    e->len = tw_calloc(k, sizeof *e->len);
    e->fmt = tw_calloc(k, sizeof *e->fmt);
    for (int i = 0; i < e->n; i++) {
      const struct param *p = &st->p[i];
      if (p->v) {
        e->v[i] = tw_malloc((size_t)p->len + 1);
        memcpy(e->v[i], p->v, (size_t)p->len);
        e->v[i][p->len] = 0;
      }
      e->len[i] = p->len;
      e->fmt[i] = p->fmt;
    }
  }
  return sends(d, e);
}

/* Whether a step of st must wait for its result in a pipeline: it
 * returns rows, or it ends the transaction. */
static bool must_wait(const struct pst *st) {
  const char *w = st->sql;
  while (*w == ' ' || *w == '\n' || *w == '\t' || *w == '(')
    w++;
  if (st->simple)
    return (words(w, "COMMIT") || words(w, "ROLLBACK") || words(w, "END")) &&
           !words(w, "ROLLBACK TO");
  if (words(w, "SELECT pg_advisory_xact_lock"))
    return false; /* a lock until the commit: nothing to read but a void */
  if (!words(w, "INSERT") && !words(w, "UPDATE") && !words(w, "DELETE"))
    return true; /* SELECT, WITH, anything else */
  for (const char *p = w; *p; p++)
    if ((p == w || !is_word(p[-1])) && words(p, "RETURNING"))
      return true;
  return false;
}

static void p_batch_begin(struct tw_db *db) {
  struct pdb *d = D(db);
  d->dead = false;
  d->nfails = 0;
  d->tag = TAG_TXN;
  if (ensure_conn(d) && PQenterPipelineMode(d->c) == 1)
    d->pipe = true;
}

static void p_batch_op(struct tw_db *db, int i) { D(db)->tag = i; }

static bool p_batch_failed(struct tw_db *db, int i) {
  struct pdb *d = D(db);
  for (int k = 0; k < d->nfails; k++)
    if (d->fails[k].tag == i) {
      snprintf(d->msg, sizeof d->msg, "%s", d->fails[k].msg);
      snprintf(d->state, sizeof d->state, "%s", d->fails[k].state);
      return true;
    }
  return false;
}

static void p_batch_forget(struct tw_db *db, int i) {
  struct pdb *d = D(db);
  int n = 0;
  for (int k = 0; k < d->nfails; k++)
    if (d->fails[k].tag != i)
      d->fails[n++] = d->fails[k];
  d->nfails = n;
}

static void p_batch_end(struct tw_db *db) {
  struct pdb *d = D(db);
  if (!d->pipe)
    return;
  if (d->nq)
    drain(d);
  PQclear(d->wanted);
  d->wanted = NULL;
  if (PQexitPipelineMode(d->c) != 1) {
    /* results still owed (a lost connection): start afresh */
    d->broken = true;
  }
  d->pipe = false;
  d->dead = false;
  d->tag = TAG_TXN;
}

/* Prepares name on a connection in pipeline mode: what is owed first,
 * then the prepare and a sync.  No failure of it is an operation's. */
static PGresult *pipe_prepare(struct pdb *d, const char *name, const char *sql,
                              int n, const Oid *types) {
  if (drain(d) != TW_DB_OK)
    return NULL;
  if (PQsendPrepare(d->c, name, sql, n, types) != 1 ||
      PQpipelineSync(d->c) != 1) {
    set_err(d, NULL, "pipeline: cannot prepare");
    go_dead(d);
    return NULL;
  }
  PGresult *r = PQgetResult(d->c);
  PQclear(PQgetResult(d->c));
  PGresult *sync = PQgetResult(d->c);
  PQclear(sync);
  return r;
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
    PGresult *r =
        d->pipe ? pipe_prepare(d, st->name, st->sql, st->nparams, types)
                : PQprepare(d->c, st->name, st->sql, st->nparams, types);
    if (!r && d->pipe)
      return TW_DB_ERROR; /* d->msg says why */
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

/* st prepared on d's connection as it is now: once per connection (gen),
 * a deferred one again with its first bindings' types (gen + 1). */
static int prepared_on(struct pdb *d, struct pst *st) {
  if (st->deferred && st->gen != d->gen + 1u) {
    if (do_prepare(d, st, true) != TW_DB_OK)
      return TW_DB_ERROR;
    st->gen = d->gen + 1u;
  } else if (!st->deferred && st->gen != d->gen &&
             do_prepare(d, st, false) != TW_DB_OK) {
    return TW_DB_ERROR;
  }
  return TW_DB_OK;
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
  if (!st->simple && prepared && !d->pipe && PQstatus(d->c) == CONNECTION_OK &&
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
  if (d->pipe && d->dead)
    return dead_err(d);
  if (!ensure_conn(d))
    return d->pipe ? go_dead(d) : TW_DB_ERROR;
  PGresult *r = NULL;
  if (d->pipe) {
    if (!st->simple && prepared_on(d, st) != TW_DB_OK)
      return TW_DB_ERROR;
    bool wait = must_wait(st);
    if (!q_stmt(d, st, wait))
      return go_dead(d);
    if (!wait && d->nq < PIPE_MAX) {
      st->row = 0; /* answered when its result is read */
      if (st->insert)
        d->last_was_insert = true;
      return TW_DB_DONE;
    }
    if (drain(d) != TW_DB_OK)
      return TW_DB_ERROR;
    if (!wait) {
      st->row = 0;
      return TW_DB_DONE;
    }
    r = d->wanted;
    d->wanted = NULL;
    if (!r) {
      snprintf(d->msg, sizeof d->msg, "pipeline: no result");
      return go_dead(d);
    }
  } else {
    /* A connection that died while idle (the server restarted, a proxy cut
     * it) looks fine until used: outside a transaction, a prepare, a read
     * or BEGIN that finds it dead ran nothing, so it runs again, once, on
     * a new connection rather than failing its caller. */
    bool idle = PQtransactionStatus(d->c) == PQTRANS_IDLE;
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
  if ((t == PGRES_COMMAND_OK || t == PGRES_EMPTY_QUERY) && st->simple &&
      !strcmp(PQcmdStatus(r), "ROLLBACK") && words(st->sql, "COMMIT")) {
    /* COMMIT of a transaction a failure had aborted */
    PQclear(r);
    snprintf(d->msg, sizeof d->msg, "COMMIT: the transaction was rolled back");
    snprintf(d->state, sizeof d->state, "40000");
    return TW_DB_ERROR;
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

static int64_t p_column_int64(struct tw_db_stmt *s, int i);

/* In a batch: st sent without waiting, its row's first column read
 * into *dst with the batch's next answer (see db.h). */
static int p_step_into(struct tw_db_stmt *s, int64_t *dst) {
  struct pst *st = P(s);
  struct pdb *d = D(s->db);
  *dst = 0;
  if (!d->pipe || st->simple || st->res || st->row >= 0) {
    int r = p_step(s);
    if (r == TW_DB_ROW)
      *dst = p_column_int64(s, 0);
    while (r == TW_DB_ROW)
      r = p_step(s);
    return r;
  }
  clear_err(d);
  if (d->dead)
    return dead_err(d);
  if (!ensure_conn(d))
    return go_dead(d);
  if (prepared_on(d, st) != TW_DB_OK)
    return TW_DB_ERROR;
  if (!q_stmt(d, st, false))
    return go_dead(d);
  d->q[d->nq - 1].dst = dst;
  d->last_was_insert = true;
  st->row = 0; /* answered when its result is read */
  if (d->nq >= PIPE_MAX && drain(d) != TW_DB_OK)
    return TW_DB_ERROR;
  return TW_DB_DONE;
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

static int p_changes(struct tw_db *db) {
  struct pdb *d = D(db);
  if (d->pipe && d->nq && drain(d) != TW_DB_OK)
    return 0;
  return d->changes;
}
static int64_t p_total_changes(struct tw_db *db) { return D(db)->total; }
/* prepared once per connection: asked after every job's insert */
static const char LASTVAL[] = "SELECT lastval()";
static bool lastval_prepared(struct pdb *d) {
  if (d->lastval_gen != d->gen + 1u) {
    PGresult *p = d->pipe ? pipe_prepare(d, "tw_lastval", LASTVAL, 0, NULL)
                          : PQprepare(d->c, "tw_lastval", LASTVAL, 0, NULL);
    if (PQresultStatus(p) == PGRES_COMMAND_OK)
      d->lastval_gen = d->gen + 1u;
    PQclear(p);
  }
  return d->lastval_gen == d->gen + 1u;
}

static int64_t p_last_insert_id(struct tw_db *db) {
  struct pdb *d = D(db);
  if (!d->last_was_insert)
    return 0;
  PGresult *r = NULL;
  bool named = lastval_prepared(d);
  if (d->pipe) {
    struct ent *e = q_push(d);
    if (named)
      snprintf(e->name, sizeof e->name, "tw_lastval");
    else
      e->sql = tw_strdup(LASTVAL);
    e->want = true;
    if (!sends(d, e)) {
      go_dead(d);
      return 0;
    }
    if (drain(d) != TW_DB_OK)
      return 0;
    r = d->wanted;
    d->wanted = NULL;
    if (!d->last_was_insert) { /* known only now: it inserted nothing */
      PQclear(r);
      return 0;
    }
  } else {
    r = named ? PQexecPrepared(d->c, "tw_lastval", 0, NULL, NULL, NULL, 0)
              : PQexec(d->c, LASTVAL);
  }
  int64_t v = 0;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
    v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  PQclear(r);
  return v;
}
static bool p_autocommit(struct tw_db *db) {
  if (D(db)->pipe)
    return D(db)->dead; /* a lost batch is as sqlite's rolled-back one */
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
    .step_into = p_step_into,
    .autocommit = p_autocommit,
    .user_version = p_user_version,
    .set_user_version = p_set_user_version,
    .test_cap_pages = p_test_cap_pages,
    .schema_lock = p_schema_lock,
    .batch_begin = p_batch_begin,
    .batch_op = p_batch_op,
    .batch_failed = p_batch_failed,
    .batch_forget = p_batch_forget,
    .batch_end = p_batch_end,
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
