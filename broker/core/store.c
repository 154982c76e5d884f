#include "broker/core/store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <semaphore.h>
#include "broker/core/db.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/core/flow.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_ha.h"
#include "broker/core/store_int.h"

/* ---- schema ------------------------------------------------------------ */

/* Migrations are numbered in code; migration i brings user_version from i
 * to i + 1.  Only append. */
static const char *const MIGRATIONS[] = {
    /* 1: jobs and their events */
    "CREATE TABLE jobs ("
    "  seq INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  spec TEXT NOT NULL,"
    "  placement TEXT,"
    "  exit_code INTEGER,"
    "  idem_key TEXT,"
    "  idem_hash TEXT,"
    "  created_at_ms INTEGER NOT NULL,"
    "  updated_at_ms INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX jobs_idem ON jobs(tenant, idem_key)"
    "  WHERE idem_key IS NOT NULL;"
    "CREATE INDEX jobs_state ON jobs(state, seq);"
    "CREATE INDEX jobs_tenant ON jobs(tenant, seq);"
    "CREATE TABLE job_events ("
    "  seq INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL REFERENCES jobs(id),"
    "  at_ms INTEGER NOT NULL,"
    "  from_state TEXT,"
    "  to_state TEXT NOT NULL,"
    "  reason TEXT NOT NULL);"
    "CREATE INDEX job_events_job ON job_events(job_id, seq);",
    /* 2: attempts, written before the provider is called */
    "CREATE TABLE attempts ("
    "  id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL REFERENCES jobs(id),"
    "  n INTEGER NOT NULL,"
    "  client_token TEXT NOT NULL UNIQUE,"
    "  provider TEXT NOT NULL,"
    "  offer_id TEXT NOT NULL,"
    "  market TEXT NOT NULL,"
    "  price_uusd_per_hour INTEGER NOT NULL,"
    "  instance_id TEXT NOT NULL DEFAULT '',"
    "  state TEXT NOT NULL,"
    "  end_reason TEXT NOT NULL DEFAULT '',"
    "  started_at_ms INTEGER NOT NULL,"
    "  running_at_ms INTEGER NOT NULL DEFAULT 0,"
    "  ended_at_ms INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE (job_id, n));"
    "CREATE INDEX attempts_live ON attempts(state, id);",
    /* 3: the versions of modules that migrate themselves */
    "CREATE TABLE schema_modules ("
    "  name TEXT PRIMARY KEY,"
    "  version INTEGER NOT NULL);",
};
#define N_MIGRATIONS ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))

int tw_store_schema_version(void) { return N_MIGRATIONS; }

/* ---- SQL --------------------------------------------------------------- */

#define JOB_COLS                                                               \
  "seq, id, name, tenant, project, state, reason, priority, spec,"             \
  " placement, exit_code, created_at_ms, updated_at_ms"

static const char SQL_JOB_INSERT[] =
    "INSERT INTO jobs (id, tenant, project, name, state, reason, priority,"
    " spec, idem_key, idem_hash, created_at_ms, updated_at_ms, traceparent)"
    " VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)";
/* PostgreSQL, a submission whose seq may come later: the job and its
 * creation event in one statement (one execution instead of three with
 * lastval()), the job's seq its one answer */
static const char SQL_JOB_INSERT_PG[] =
    "WITH j AS (INSERT INTO jobs (id, tenant, project, name, state, reason,"
    " priority, spec, idem_key, idem_hash, created_at_ms, updated_at_ms,"
    " traceparent)"
    " VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)"
    " RETURNING seq, id),"
    " e AS (INSERT INTO job_events (job_id, at_ms, from_state, to_state,"
    " reason) SELECT id, ?10, NULL, 'pending', ?5 FROM j)"
    " SELECT seq FROM j";
static const char SQL_EVENT_INSERT[] =
    "INSERT INTO job_events (job_id, at_ms, from_state, to_state, reason)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_JOB_BY_IDEM[] =
    "SELECT " JOB_COLS
    ", idem_hash FROM jobs WHERE tenant = ?1 AND idem_key = ?2";
static const char SQL_JOB_BY_ID[] =
    "SELECT " JOB_COLS " FROM jobs WHERE id = ?1";
/* The writer's own look at a job before it changes it: its state (and
 * reason, for a note), not the whole row with its spec. */
static const char SQL_JOB_STATE_BY_ID[] =
    "SELECT state, reason FROM jobs WHERE id = ?1";
static const char SQL_JOB_SET_STATE[] =
    "UPDATE jobs SET state = ?1, reason = ?2, updated_at_ms = ?3,"
    " placement = COALESCE(?4, placement),"
    " exit_code = CASE WHEN ?5 THEN ?6 ELSE exit_code END"
    " WHERE id = ?7 AND state = ?8";
/* One constant statement per filter combination: no SQL is ever built. */
static const char SQL_JOB_LIST[] =
    "SELECT " JOB_COLS " FROM jobs WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2";
static const char SQL_JOB_LIST_STATE[] =
    "SELECT " JOB_COLS " FROM jobs WHERE state = ?3 AND seq < ?1"
    " ORDER BY seq DESC LIMIT ?2";
static const char SQL_JOB_LIST_TENANT[] =
    "SELECT " JOB_COLS " FROM jobs WHERE tenant = ?4 AND seq < ?1"
    " ORDER BY seq DESC LIMIT ?2";
static const char SQL_JOB_LIST_BOTH[] =
    "SELECT " JOB_COLS " FROM jobs WHERE state = ?3 AND tenant = ?4"
    " AND seq < ?1 ORDER BY seq DESC LIMIT ?2";
/* by provider (the placement's), the other filters optional: newest
 * first on the primary key, stopping at the page's end */
static const char SQL_JOB_LIST_PROVIDER[] =
    "SELECT " JOB_COLS " FROM jobs WHERE seq < ?1"
    " AND (?3 IS NULL OR state = ?3) AND (?4 IS NULL OR tenant = ?4)"
    " AND json_extract(placement, '$.provider') = ?5"
    " ORDER BY seq DESC LIMIT ?2";
static const char SQL_EVENTS[] =
    "SELECT seq, at_ms, from_state, to_state, reason FROM job_events"
    " WHERE job_id = ?1 ORDER BY seq";
static const char SQL_JOB_EXISTS[] = "SELECT 1 FROM jobs WHERE id = ?1";
static const char SQL_COUNTS[] =
    "SELECT state, count(*) FROM jobs GROUP BY state";
#define ATTEMPT_COLS                                                           \
  "id, job_id, n, client_token, provider, offer_id, market,"                   \
  " price_uusd_per_hour, instance_id, state, end_reason, started_at_ms,"       \
  " running_at_ms, ended_at_ms"
static const char SQL_ATTEMPT_LIVE_OF[] =
    "SELECT n FROM attempts WHERE job_id = ?1 AND state <> 'ended' LIMIT 1";
static const char SQL_ATTEMPT_NEXT_N[] =
    "SELECT COALESCE(MAX(n), 0) + 1 FROM attempts WHERE job_id = ?1";
static const char SQL_ATTEMPT_INSERT[] =
    "INSERT INTO attempts (job_id, n, client_token, provider, offer_id, market,"
    " price_uusd_per_hour, state, started_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'launching', ?8)";
static const char SQL_ATTEMPT_BY_ID[] =
    "SELECT " ATTEMPT_COLS " FROM attempts WHERE id = ?1";
static const char SQL_ATTEMPT_SET_LAUNCHED[] =
    "UPDATE attempts SET instance_id = ?2, state = 'provisioning'"
    " WHERE id = ?1 AND state = 'launching'";
static const char SQL_ATTEMPT_SET_RUNNING[] =
    "UPDATE attempts SET state = 'running', running_at_ms = ?2"
    " WHERE id = ?1 AND state = 'provisioning'";
static const char SQL_ATTEMPT_SET_ENDED[] =
    "UPDATE attempts SET state = 'ended', end_reason = ?2, ended_at_ms = ?3,"
    " running_at_ms = CASE WHEN running_at_ms = 0 THEN ?4"
    " ELSE running_at_ms END"
    " WHERE id = ?1 AND state <> 'ended'";
static const char SQL_ATTEMPTS_LIVE[] =
    "SELECT " ATTEMPT_COLS " FROM attempts WHERE state <> 'ended' ORDER BY id";
static const char SQL_ATTEMPTS_LIVE_ENDED[] =
    "SELECT a.id FROM attempts a JOIN jobs j ON j.id = a.job_id"
    " WHERE a.state <> 'ended'"
    " AND j.state IN ('succeeded', 'failed', 'cancelled') ORDER BY a.id";
static const char SQL_ATTEMPTS_OF[] =
    "SELECT " ATTEMPT_COLS " FROM attempts WHERE job_id = ?1 ORDER BY n";
static const char SQL_JOBS_QUEUED[] =
    "SELECT " JOB_COLS " FROM jobs WHERE state = ?1"
    " ORDER BY priority DESC, seq ASC LIMIT ?2";
static const char SQL_JOB_SET_REASON[] =
    "UPDATE jobs SET reason = ?2, updated_at_ms = ?3 WHERE id = ?1";
/* A note without reading the job first (tw_store_job_note_many): its
 * event, then the reason, both only when the reason changes; neither
 * returns a row, so a batch of them goes in one round trip. */
static const char SQL_NOTE_EVENT[] =
    "INSERT INTO job_events (job_id, at_ms, from_state, to_state, reason)"
    " SELECT id, CAST(?2 AS INTEGER), state, state, CAST(?3 AS TEXT)"
    " FROM jobs WHERE id = ?1 AND reason <> ?3";
static const char SQL_NOTE_SET[] =
    "UPDATE jobs SET reason = ?2, updated_at_ms = ?3"
    " WHERE id = ?1 AND reason <> ?2";
static const char SQL_BEGIN[] = "BEGIN IMMEDIATE";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";
static const char SQL_SAVEPOINT[] = "SAVEPOINT op";
static const char SQL_RELEASE[] = "RELEASE op";
static const char SQL_ROLLBACK_TO[] = "ROLLBACK TO op";
static const char SQL_SAVEPOINT_GROUP[] = "SAVEPOINT grp";
static const char SQL_RELEASE_GROUP[] = "RELEASE grp";
static const char SQL_ROLLBACK_TO_GROUP[] = "ROLLBACK TO grp";
/* The fence (store_ha.h): conditioned on the epoch, checked, and on
 * PostgreSQL the lease row locked until the commit. */
static const char SQL_FENCE[] = "UPDATE ha_lease SET epoch = epoch"
                                " WHERE id = 1 AND holder = ?1 AND epoch = ?2";

/* ---- connections with a statement cache --------------------------------- */

struct conn {
  struct tw_db *db;
  /* Keyed by the address of constant text.  It only grows: evicting would
   * finalize a statement a caller may still be stepping (a module holding
   * two at once), so every distinct statement stays prepared for the life
   * of the connection; there are a few dozen. */
  const char **sql;
  struct tw_db_stmt **st;
  int n, cap;
};

struct wop {
  tw_store_write_fn fn;
  const struct store_group *g; /* store__write_grouped; fn is g->one */
  void *arg;
  struct tw_err *err;
  enum tw_rc rc;
  /* this caller's own: a commit wakes only its callers, posted after the
   * writer let go of mu, so a woken caller never waits for it */
  sem_t done;
  /* tw_store_write_async: called instead of posting done, then the wop
   * (allocated by the store) freed */
  tw_store_done_fn done_fn;
  void *done_ctx;
  struct wop *next;
};

struct run_item {
  struct wop *o;
  int idx; /* its number in the batch */
};

struct tw_store {
  struct tw_clock *clock;
  int max_batch;
  enum tw_db_backend backend;
  char *db_path;  /* sqlite */
  char *dsn;      /* postgres */
  char *password; /* postgres; never logged */
  int64_t txn_timeout_ms;

  struct conn w; /* writer thread only */
  pthread_t writer;
  pthread_mutex_t mu;
  pthread_cond_t work; /* writer waits for ops */
  struct wop *head, *tail;
  bool stopping;

  struct conn *readers;
  bool *reader_busy;
  int n_readers;
  pthread_mutex_t rmu;
  pthread_cond_t rfree;

  uint64_t commits, ops, max_seen;
  uint64_t job_reads; /* atomic: tw_store_job_get calls */
  /* the leader's fence (store_ha.h): 0 none; under mu */
  int64_t fence_epoch;
  char fence_holder[128];
  uint64_t fence_refusals;
  /* Write health, under mu: TW_OK, or TW_E_FULL / TW_E_IO from the first
   * write that failed on the storage until a transaction commits a write
   * again (tw_store_write_health). */
  enum tw_rc health;
  int64_t unhealthy_since_ms;
  /* Also under mu: whether a caller's write committed since the store was
   * opened, when the last did, how many transactions in a row failed on
   * the storage, and when the last probe ran (tw_store_health). */
  bool committed_since_open;
  int64_t last_commit_ms;
  uint64_t consecutive_failures;
  int64_t last_probe_ms;
  /* SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look the
   * algorithm up at every use (about ten times the digest of a spec) */
  EVP_MD *sha256;
  /* opts->exclusive: the fd holding PATH.lock (-1: none), the path, and
   * whether this open already made its pre-migration backup */
  int lock_fd;
  char *path;
  bool backed_up;
  struct store_logs *logs; /* the agent's output in files; NULL: rows */
  /* the audit entries of the batch running (writer thread only) */
  struct store_audit_q audit_q;
  /* the attempts and jobs the running batch changed (writer thread only),
   * published to chg once its transaction ends (tw_store_changes_since) */
  struct tw_store_change *chg_w;
  size_t n_chg_w, cap_chg_w;
  /* under mu: the changes published, chg[0] numbered chg_base (from 1) */
  struct tw_store_change *chg;
  size_t n_chg, cap_chg;
  uint64_t chg_base;
  /* writer thread only: a run of grouped writes (max_batch each) */
  struct run_item *run;
  void **run_args;
  bool *run_done;
  /* store_obs.c: /metrics' last reading of the jobs (tw_store_gauges) */
  struct store_gauges *gauges;
};

/* Changes kept for tw_store_changes_since(); a follower further behind
 * reads afresh. */
#define CHG_KEEP 65536

static void chg_note(struct tw_store *s, int64_t attempt_id,
                     const char *job_id) {
  if (s->n_chg_w == s->cap_chg_w) {
    s->cap_chg_w = s->cap_chg_w ? s->cap_chg_w * 2 : 64;
    s->chg_w = tw_realloc(s->chg_w, s->cap_chg_w * sizeof *s->chg_w);
  }
  struct tw_store_change *c = &s->chg_w[s->n_chg_w++];
  c->attempt_id = attempt_id;
  snprintf(c->job_id, sizeof c->job_id, "%s", job_id ? job_id : "");
}

void store__job_ended(struct tw_store *s, const char *job_id) {
  chg_note(s, 0, job_id);
}

/* Under mu, after the batch's transaction ended (committed or not: a
 * change told that did not happen costs a read, one not told is missed):
 * the batch's changes published. */
static void chg_publish(struct tw_store *s) {
  if (!s->n_chg_w)
    return;
  if (s->n_chg + s->n_chg_w > CHG_KEEP) {
    size_t drop = s->n_chg + s->n_chg_w - CHG_KEEP / 2;
    if (drop > s->n_chg)
      drop = s->n_chg;
    if (drop) {
      memmove(s->chg, s->chg + drop, (s->n_chg - drop) * sizeof *s->chg);
      s->n_chg -= drop;
      s->chg_base += drop;
    }
  }
  if (s->n_chg + s->n_chg_w > s->cap_chg) {
    while (s->n_chg + s->n_chg_w > s->cap_chg)
      s->cap_chg = s->cap_chg ? s->cap_chg * 2 : 256;
    s->chg = tw_realloc(s->chg, s->cap_chg * sizeof *s->chg);
  }
  memcpy(s->chg + s->n_chg, s->chg_w, s->n_chg_w * sizeof *s->chg);
  s->n_chg += s->n_chg_w;
  s->n_chg_w = 0;
}

bool tw_store_changes_since(struct tw_store *s, uint64_t *cursor,
                            struct tw_store_change **out, size_t *n) {
  *out = NULL;
  *n = 0;
  pthread_mutex_lock(&s->mu);
  uint64_t end = s->chg_base + s->n_chg;
  bool known = *cursor && *cursor >= s->chg_base && *cursor <= end;
  if (known && *cursor < end) {
    size_t k = (size_t)(end - *cursor);
    *out = tw_malloc(k * sizeof **out);
    memcpy(*out, s->chg + (*cursor - s->chg_base), k * sizeof **out);
    *n = k;
  }
  *cursor = end;
  pthread_mutex_unlock(&s->mu);
  return known;
}

struct store_logs *store__logs(struct tw_store *s) { return s->logs; }
struct store_audit_q *store__audit_q(struct tw_store *s) {
  return &s->audit_q;
}

/* store__audit_flush's question: whether operation i of the batch failed
 * (in its function, or after it returned: a statement of it failed in
 * PostgreSQL's pipeline). */
struct batch_view {
  struct wop *batch;
  struct tw_db *db;
};
static bool batch_op_failed(void *ctx, int i) {
  struct batch_view *v = ctx;
  int k = 0;
  for (struct wop *o = v->batch; o; o = o->next, k++)
    if (k == i)
      return o->rc != TW_OK || tw_db_batch_failed(v->db, i);
  return true;
}

/* A failure of the storage under a statement that may well succeed later
 * (I/O, a lock, a lost connection), as opposed to a statement that is
 * wrong. */
static bool storage_class(enum tw_db_class c) {
  return c == TW_DB_C_STORAGE || c == TW_DB_C_BUSY;
}

static enum tw_rc db_err(struct tw_db *db, struct tw_err *err,
                         const char *what) {
  /* copy at once: the next call may overwrite tw_db_errmsg() */
  enum tw_db_class c = tw_db_errclass(db);
  if (c == TW_DB_C_FULL)
    return tw_err_set(err, TW_E_FULL, "the store's disk is full: %s: %s", what,
                      tw_db_errmsg(db));
  enum tw_rc rc =
      tw_err_set(err, TW_E_IO, "store: %s: %s", what, tw_db_errmsg(db));
  if (err && err->rc == TW_E_IO && storage_class(c) && !err->detail[0])
    tw_err_detail(err, TW_DETAIL_STORE_IO);
  return rc;
}

/* Whether a failed write failed on the storage (a full disk, an I/O
 * error) rather than on its own terms (a conflict, a transition refused).
 * The table groups' files (store_audit.c, store_ledger.c, ...) report
 * every database failure as TW_E_IO with their own prefix, so the
 * connection's own error class decides, read before anything else runs
 * on it; *rc and err are raised
 * to TW_E_FULL or given the TW_DETAIL_STORE_IO detail to match. */
static bool storage_failure(struct tw_db *db, enum tw_rc *rc,
                            struct tw_err *err) {
  if (*rc == TW_E_FULL)
    return true;
  if (*rc != TW_E_IO)
    return false;
  if (!strcmp(err->detail, TW_DETAIL_STORE_IO))
    return true;
  enum tw_db_class c = tw_db_errclass(db);
  if (c == TW_DB_C_FULL) {
    char was[sizeof err->msg];
    memcpy(was, err->msg, sizeof was);
    snprintf(err->msg, sizeof err->msg, "the store's disk is full: %.200s",
             was);
    err->rc = *rc = TW_E_FULL;
    return true;
  }
  if (storage_class(c)) {
    tw_err_detail(err, TW_DETAIL_STORE_IO);
    return true;
  }
  return false;
}

/* Fails operation o with rc and the text and detail of cause. */
static void fail_op(struct wop *o, enum tw_rc rc, const struct tw_err *cause) {
  o->rc = tw_err_set(o->err, rc, "%s", cause->msg);
  if (cause->detail[0] && !o->err->detail[0])
    tw_err_detail(o->err, cause->detail);
}

enum tw_rc store__db_err(struct tw_db *db, struct tw_err *err, const char *what) {
  return db_err(db, err, what);
}

enum tw_rc store__step_done(struct tw_db *db, struct tw_db_stmt *st, const char *what,
                            struct tw_err *err) {
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return db_err(db, err, what);
  return TW_OK;
}

void store__bind_text(struct tw_db_stmt *st, int i, const char *v) {
  tw_db_bind_text(st, i, v ? v : "", -1);
}

void store__bind_opt(struct tw_db_stmt *st, int i, const char *v) {
  if (v)
    tw_db_bind_text(st, i, v, -1);
  else
    tw_db_bind_null(st, i);
}

void store__col(struct tw_db_stmt *st, int i, char *out, size_t outsz) {
  const unsigned char *t = tw_db_column_text(st, i);
  snprintf(out, outsz, "%s", t ? (const char *)t : "");
}

static struct tw_db_stmt *prep(struct conn *c, const char *sql, struct tw_err *err) {
  for (int i = 0; i < c->n; i++)
    if (c->sql[i] == sql) {
      tw_db_reset(c->st[i]);
      tw_db_clear_bindings(c->st[i]);
      return c->st[i];
    }
  struct tw_db_stmt *st = NULL;
  if (tw_db_prepare(c->db, sql, &st) != TW_DB_OK) {
    db_err(c->db, err, "prepare");
    return NULL;
  }
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 32;
    c->sql = tw_realloc(c->sql, (size_t)c->cap * sizeof *c->sql);
    c->st = tw_realloc(c->st, (size_t)c->cap * sizeof *c->st);
  }
  c->sql[c->n] = sql;
  c->st[c->n++] = st;
  return st;
}

static void conn_close(struct conn *c) {
  for (int i = 0; i < c->n; i++)
    tw_db_finalize(c->st[i]);
  free(c->sql);
  free(c->st);
  c->sql = NULL;
  c->st = NULL;
  c->n = c->cap = 0;
  tw_db_close(c->db);
  c->db = NULL;
}

static enum tw_rc exec_simple(struct conn *c, const char *sql,
                              struct tw_err *err) {
  struct tw_db_stmt *st = prep(c, sql, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE && r != TW_DB_ROW)
    return db_err(c->db, err, sql);
  return TW_OK;
}

static enum tw_rc conn_open(struct tw_store *s, struct conn *c, bool readonly,
                            bool sync_full, struct tw_err *err) {
  memset(c, 0, sizeof *c);
  struct tw_db_opts o = {.backend = s->backend,
                         .path = s->db_path,
                         .readonly = readonly,
                         .sync_full = sync_full,
                         .dsn = s->dsn,
                         .password = s->password,
                         .txn_timeout_ms = s->txn_timeout_ms};
  return tw_db_open(&o, &c->db, err);
}

/* Before migrating an existing schema: a copy to fall back on. */
static enum tw_rc backup_before(struct tw_store *s, const char *what,
                                int version, struct tw_err *err) {
  if (!s->path || s->backed_up)
    return TW_OK;
  char *dest = tw_asprintf("%s.pre-migration-v%d.bak", s->path,
                           tw_store_schema_version());
  enum tw_rc rc = tw_store_backup(s->path, dest, err);
  if (rc == TW_OK) {
    s->backed_up = true;
    tw_log_info("store", "backed up to %s before migrating %s from version %d",
                dest, what, version);
  }
  free(dest);
  return rc;
}

static enum tw_rc migrate(struct tw_store *s, struct conn *c,
                          struct tw_err *err) {
  int version = 0;
  if (tw_db_user_version(c->db, &version) != TW_DB_OK)
    return db_err(c->db, err, "read user_version");
  if (version > N_MIGRATIONS)
    return tw_err_set(err, TW_E_IO,
                      "store: schema version %d is newer than this build (%d)",
                      version, N_MIGRATIONS);
  if (version > 0 && version < N_MIGRATIONS) {
    enum tw_rc brc = backup_before(s, "the core schema", version, err);
    if (brc)
      return brc;
  }
  for (int v = version; v < N_MIGRATIONS; v++) {
    char *msg = NULL;
    if (tw_db_exec(c->db, "BEGIN IMMEDIATE", &msg) != TW_DB_OK ||
        tw_db_exec(c->db, MIGRATIONS[v], &msg) != TW_DB_OK ||
        tw_db_set_user_version(c->db, v + 1) != TW_DB_OK ||
        tw_db_exec(c->db, "COMMIT", &msg) != TW_DB_OK) {
      enum tw_rc rc = tw_err_set(err, TW_E_IO, "store: migration %d failed: %s",
                                 v + 1, msg ? msg : tw_db_errmsg(c->db));
      tw_db_free(msg);
      tw_db_exec(c->db, "ROLLBACK", NULL);
      return rc;
    }
    tw_log_info("store", "migrated schema to version %d", v + 1);
  }
  return TW_OK;
}

/* ---- the writer -------------------------------------------------------- */

static enum tw_rc step_done(struct conn *c, struct tw_db_stmt *st,
                            const char *what, struct tw_err *err);

/* The first statement of a fenced transaction: TW_E_CONFLICT
 * (TW_DETAIL_STALE_EPOCH) when the lease is no longer holder's at epoch. */
static enum tw_rc check_fence(struct conn *c, const char *holder,
                              int64_t epoch, struct tw_err *err) {
  struct tw_db_stmt *st = prep(c, SQL_FENCE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, holder, -1);
  tw_db_bind_int64(st, 2, epoch);
  enum tw_rc rc = step_done(c, st, "fence", err);
  if (rc)
    return rc;
  if (tw_db_changes(c->db) != 1) {
    tw_err_set(err, TW_E_CONFLICT,
               "store: the leader lease has moved on from epoch %lld: this "
               "replica no longer leads, its write is refused",
               (long long)epoch);
    tw_err_detail(err, TW_DETAIL_STALE_EPOCH);
    return TW_E_CONFLICT;
  }
  return TW_OK;
}

/* One operation in its own savepoint (fn: its function, or its group's
 * one()); counts it in *committed when it is released.  True when sqlite
 * lost the whole transaction under it. */
static bool run_op(struct tw_store *s, struct wop *o, tw_store_write_fn fn,
                   int idx, int *committed, enum tw_rc *storage) {
  s->audit_q.op = idx;
  tw_db_batch_op(s->w.db, idx);
  if ((o->rc = exec_simple(&s->w, SQL_SAVEPOINT, o->err)))
    return false;
  o->rc = fn(s, s->w.db, o->arg, o->err);
  if (o->rc) {
    if (storage_failure(s->w.db, &o->rc, o->err) && !*storage)
      *storage = o->rc;
    if (tw_db_autocommit(s->w.db))
      return true;
    exec_simple(&s->w, SQL_ROLLBACK_TO, NULL);
    exec_simple(&s->w, SQL_RELEASE, NULL);
  } else if ((o->rc = exec_simple(&s->w, SQL_RELEASE, o->err)) == TW_OK) {
    (*committed)++;
  }
  return false;
}

/* A run of grouped writes (store__write_grouped): their group's many() in
 * one savepoint, then after() on each it wrote and one() on the others;
 * every one of them through one() when many() failed.  Non-zero: the
 * batch cannot go on (*err says why). */
static enum tw_rc write_run(struct tw_store *s, struct run_item *run, int n,
                            int *committed, enum tw_rc *storage,
                            struct tw_err *err) {
  const struct store_group *g = run[0].o->g;
  void **args = s->run_args;
  bool *done = s->run_done;
  for (int k = 0; k < n; k++) {
    args[k] = run[k].o->arg;
    done[k] = false;
  }
  s->audit_q.op = run[0].idx;
  tw_db_batch_op(s->w.db, run[0].idx);
  struct tw_err gerr = {0};
  enum tw_rc rc = exec_simple(&s->w, SQL_SAVEPOINT_GROUP, &gerr);
  if (rc == TW_OK) {
    if (g->many(s, s->w.db, args, (size_t)n, done, &gerr) == TW_OK) {
      rc = exec_simple(&s->w, SQL_RELEASE_GROUP, err);
    } else {
      for (int k = 0; k < n; k++)
        done[k] = false;
      /* the message's first line: a DETAIL may quote a row's values */
      tw_log_warn("store", "%d writes together failed, each alone now: %.*s",
                  n, (int)strcspn(gerr.msg, "\n"), gerr.msg);
      if ((rc = exec_simple(&s->w, SQL_ROLLBACK_TO_GROUP, err)) == TW_OK)
        rc = exec_simple(&s->w, SQL_RELEASE_GROUP, err);
      /* that failure was the run's, undone: not its first write's */
      tw_db_batch_forget(s->w.db, run[0].idx);
    }
  } else if (!tw_db_autocommit(s->w.db)) {
    rc = TW_OK; /* each alone */
  } else {
    *err = gerr;
  }
  if (rc)
    return rc;
  for (int k = 0; k < n; k++) {
    struct wop *o = run[k].o;
    if (!done[k]) {
      if (run_op(s, o, g->one, run[k].idx, committed, storage)) {
        *err = *o->err;
        return o->rc;
      }
      continue;
    }
    s->audit_q.op = run[k].idx;
    tw_db_batch_op(s->w.db, run[k].idx);
    if (g->after && (o->rc = g->after(s, s->w.db, o->arg, o->err))) {
      /* its row is in already: the batch cannot keep it alone */
      *err = *o->err;
      return o->rc;
    }
    (*committed)++;
  }
  return TW_OK;
}

static void *writer_main(void *arg) {
  struct tw_store *s = arg;
  s->run = tw_calloc((size_t)s->max_batch, sizeof *s->run);
  s->run_args = tw_calloc((size_t)s->max_batch, sizeof *s->run_args);
  s->run_done = tw_calloc((size_t)s->max_batch, sizeof *s->run_done);
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (!s->head && !s->stopping)
      pthread_cond_wait(&s->work, &s->mu);
    if (!s->head && s->stopping) {
      pthread_mutex_unlock(&s->mu);
      break;
    }
    /* take up to max_batch operations */
    struct wop *batch = s->head, *last = s->head;
    int n = 1;
    while (last->next && n < s->max_batch) {
      last = last->next;
      n++;
    }
    s->head = last->next;
    if (!s->head)
      s->tail = NULL;
    last->next = NULL;

    struct tw_err berr = {0};
    int64_t fence = s->fence_epoch;
    char holder[sizeof s->fence_holder];
    memcpy(holder, s->fence_holder, sizeof holder);
    pthread_mutex_unlock(&s->mu);
    tw_db_batch_begin(s->w.db);
    enum tw_rc brc = exec_simple(&s->w, SQL_BEGIN, &berr);
    enum tw_rc storage =
        brc && storage_failure(s->w.db, &brc, &berr) ? brc : TW_OK;
    if (!brc && fence > 0 &&
        (brc = check_fence(&s->w, holder, fence, &berr)) != TW_OK) {
      if (storage_failure(s->w.db, &brc, &berr))
        storage = brc;
      exec_simple(&s->w, SQL_ROLLBACK, NULL);
      if (brc == TW_E_CONFLICT) {
        pthread_mutex_lock(&s->mu);
        s->fence_refusals += (uint64_t)n;
        pthread_mutex_unlock(&s->mu);
      }
    }
    bool txn_lost = false;
    int committed = 0;
    /* a transaction that changed no row (a PRAGMA, a write with nothing
     * to do) proves nothing about the storage: it does not make the
     * store healthy again */
    int64_t changes0 = tw_db_total_changes(s->w.db);
    int idx = 0;
    /* the run of grouped writes not written yet (PostgreSQL) */
    bool grouping = tw_db_backend(s->w.db) == TW_DB_POSTGRES, run_lost = false;
    struct run_item *run = s->run;
    int nrun = 0;
    for (struct wop *o = batch; o; o = o->next) {
      if (brc) {
        fail_op(o, brc, &berr);
        continue;
      }
      bool joins = grouping && o->g;
      /* a run of another kind, or an operation that may read what the run
       * writes: the run is written first */
      if (nrun && (!joins || run[0].o->g != o->g)) {
        brc = write_run(s, run, nrun, &committed, &storage, &berr);
        nrun = 0;
        if (brc) {
          run_lost = true;
          fail_op(o, brc, &berr);
          continue;
        }
      }
      if (joins) {
        o->rc = TW_OK;
        run[nrun++] = (struct run_item){.o = o, .idx = idx++};
        continue;
      }
      if (run_op(s, o, o->fn, idx++, &committed, &storage)) {
        /* sqlite rolled the whole transaction back (it may on
         * SQLITE_FULL or an I/O error): the operations before this one
         * are undone too, and the rest must not run outside it. */
        txn_lost = true;
        brc = o->rc;
        berr = *o->err;
      }
    }
    if (nrun && !brc &&
        (brc = write_run(s, run, nrun, &committed, &storage, &berr)))
      run_lost = true;
    if (run_lost) {
      /* a run of grouped writes failed past its own savepoint: the batch
       * is rolled back whole, as when sqlite loses it */
      if (storage_failure(s->w.db, &brc, &berr) && !storage)
        storage = brc;
      exec_simple(&s->w, SQL_ROLLBACK, NULL);
      txn_lost = true;
    }
    if (txn_lost) {
      /* Nothing of this batch is on disk: no caller may hear otherwise. */
      for (struct wop *o = batch; o; o = o->next)
        if (o->rc == TW_OK)
          fail_op(o, brc, &berr);
      committed = 0;
      tw_log_error("store", "transaction rolled back: %s", berr.msg);
    } else if (!brc &&
               (tw_db_batch_op(s->w.db, idx),
                /* the batch's audit entries, then the commit */
                (brc = store__audit_flush(
                     s, s->w.db, batch_op_failed,
                     &(struct batch_view){.batch = batch, .db = s->w.db},
                     &berr)) != TW_OK ||
                    (brc = exec_simple(&s->w, SQL_COMMIT, &berr)) != TW_OK)) {
      if (storage_failure(s->w.db, &brc, &berr) && !storage)
        storage = brc;
      exec_simple(&s->w, SQL_ROLLBACK, NULL);
      for (struct wop *o = batch; o; o = o->next)
        if (o->rc == TW_OK)
          fail_op(o, brc, &berr);
      committed = 0;
      tw_log_error("store", "commit failed: %s", berr.msg);
    } else if (!brc) {
      /* PostgreSQL's pipeline: an operation whose statement failed after
       * its function returned was rolled back to its savepoint */
      idx = 0;
      for (struct wop *o = batch; o; o = o->next, idx++) {
        if (o->rc != TW_OK || !tw_db_batch_failed(s->w.db, idx))
          continue;
        o->rc = tw_db_errclass(s->w.db) == TW_DB_C_CONSTRAINT
                    ? tw_err_set(o->err, TW_E_CONFLICT, "store: write refused: %s",
                                 tw_db_errmsg(s->w.db))
                    : db_err(s->w.db, o->err, "write");
        if (storage_failure(s->w.db, &o->rc, o->err) && !storage)
          storage = o->rc;
        committed--;
      }
    }
    tw_db_batch_end(s->w.db);
    store__audit_clear(s);
    pthread_mutex_lock(&s->mu);
    chg_publish(s);
    if (!brc) {
      s->commits++;
      s->ops += (uint64_t)committed;
      if ((uint64_t)n > s->max_seen)
        s->max_seen = (uint64_t)n;
    }
    bool wrote = tw_db_total_changes(s->w.db) > changes0;
    if (!storage && !brc && committed && wrote) {
      s->committed_since_open = true;
      s->last_commit_ms = tw_clock_now_ms(s->clock);
      s->consecutive_failures = 0;
    } else if (storage) {
      s->consecutive_failures++;
    }
    if (storage) {
      if (s->health == TW_OK) {
        s->unhealthy_since_ms = tw_clock_now_ms(s->clock);
        tw_log_error("store", "writes fail on the storage: %s",
                     storage == TW_E_FULL ? "the disk is full"
                                          : "an I/O error");
      }
      s->health = storage; /* the latest cause, since the first failure */
    } else if (!storage && !brc && committed && wrote && s->health != TW_OK) {
      tw_log_info(
          "store", "writes commit again after %lld ms",
          (long long)(tw_clock_now_ms(s->clock) - s->unhealthy_since_ms));
      s->health = TW_OK;
    }
    pthread_mutex_unlock(&s->mu);
    for (struct wop *o = batch, *nx; o; o = nx) {
      nx = o->next; /* o lives on its caller's stack: read next first */
      if (o->done_fn) {
        o->done_fn(o->done_ctx, o->rc);
        free(o);
      } else {
        sem_post(&o->done);
      }
    }
  }
  free(s->run);
  free(s->run_args);
  free(s->run_done);
  return NULL;
}

enum tw_rc store__write_grouped(struct tw_store *s, const struct store_group *g,
                                void *arg, struct tw_err *err) {
  struct tw_err local = {0};
  struct wop one = {.fn = g->one, .g = g, .arg = arg, .err = err ? err : &local};
  pthread_mutex_lock(&s->mu);
  if (s->stopping) {
    pthread_mutex_unlock(&s->mu);
    return tw_err_set(err, TW_E_IO, "store: closing");
  }
  sem_init(&one.done, 0, 0);
  if (s->tail)
    s->tail->next = &one;
  else
    s->head = &one;
  s->tail = &one;
  pthread_mutex_unlock(&s->mu);
  pthread_cond_signal(&s->work);
  while (sem_wait(&one.done) != 0) /* EINTR: a signal's handler ran */
    ;
  sem_destroy(&one.done);
  return one.rc;
}

enum tw_rc tw_store_write_async(struct tw_store *s, tw_store_write_fn fn,
                                void *arg, struct tw_err *err,
                                tw_store_done_fn done, void *ctx) {
  /* the wop first, so that free(o) frees both; its own err for a caller
   * that keeps none */
  struct async_wop {
    struct wop o;
    struct tw_err err;
  } *w = tw_calloc(1, sizeof *w);
  struct wop *o = &w->o;
  *o = (struct wop){.fn = fn, .arg = arg, .done_fn = done, .done_ctx = ctx};
  o->err = err ? err : &w->err;
  pthread_mutex_lock(&s->mu);
  if (s->stopping) {
    pthread_mutex_unlock(&s->mu);
    free(o);
    return tw_err_set(err, TW_E_IO, "store: closing");
  }
  /* at the queue's end: its transaction is the next to start, as for a
   * caller that waits */
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  pthread_mutex_unlock(&s->mu);
  pthread_cond_signal(&s->work);
  return TW_OK;
}

enum tw_rc tw_store_write(struct tw_store *s, tw_store_write_fn fn, void *arg,
                          struct tw_err *err) {
  enum tw_rc rc;
  tw_store_write_many(s, fn, &arg, 1, &rc, err);
  return rc;
}

static void write_ops(struct tw_store *s, tw_store_write_fn fn,
                      void *const *args, const struct tw_store_op *each,
                      size_t n, enum tw_rc *rcs, struct tw_err *errs);

void tw_store_write_many(struct tw_store *s, tw_store_write_fn fn,
                         void *const *args, size_t n, enum tw_rc *rcs,
                         struct tw_err *errs) {
  write_ops(s, fn, args, NULL, n, rcs, errs);
}

void tw_store_write_ops(struct tw_store *s, const struct tw_store_op *ops,
                        size_t n, enum tw_rc *rcs, struct tw_err *errs) {
  write_ops(s, NULL, NULL, ops, n, rcs, errs);
}

/* fn on each of args, or each[i].fn on each[i].arg. */
static void write_ops(struct tw_store *s, tw_store_write_fn fn,
                      void *const *args, const struct tw_store_op *each,
                      size_t n, enum tw_rc *rcs, struct tw_err *errs) {
  if (!n)
    return;
  struct tw_err local = {0};
  struct wop one, *ops = n == 1 ? &one : tw_calloc(n, sizeof *ops);
  for (size_t i = 0; i < n; i++) {
    ops[i] = (struct wop){.fn = each ? each[i].fn : fn,
                          .arg = each ? each[i].arg : args[i],
                          .err = errs ? &errs[i] : &local};
    ops[i].next = i + 1 < n ? &ops[i + 1] : NULL;
  }
  pthread_mutex_lock(&s->mu);
  if (s->stopping) {
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
      rcs[i] = tw_err_set(errs ? &errs[i] : NULL, TW_E_IO, "store: closing");
    if (ops != &one)
      free(ops);
    return;
  }
  for (size_t i = 0; i < n; i++)
    sem_init(&ops[i].done, 0, 0);
  /* queued together: the writer takes them into one transaction (up to
   * max_batch), each in its own savepoint */
  if (s->tail)
    s->tail->next = &ops[0];
  else
    s->head = &ops[0];
  s->tail = &ops[n - 1];
  pthread_mutex_unlock(&s->mu);
  pthread_cond_signal(&s->work); /* the writer wakes to a free mu */
  for (size_t i = 0; i < n; i++) {
    while (sem_wait(&ops[i].done) != 0) /* EINTR: a signal's handler ran */
      ;
    sem_destroy(&ops[i].done);
    rcs[i] = ops[i].rc;
  }
  if (ops != &one)
    free(ops);
}

enum tw_rc tw_store_write_health(struct tw_store *s, int64_t *since_ms) {
  pthread_mutex_lock(&s->mu);
  enum tw_rc rc = s->health;
  if (since_ms)
    *since_ms = rc ? s->unhealthy_since_ms : 0;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void tw_store_health(struct tw_store *s, struct tw_store_health *out) {
  pthread_mutex_lock(&s->mu);
  out->state = s->health == TW_E_FULL    ? TW_STORE_FULL
               : s->health != TW_OK      ? TW_STORE_IO
               : s->committed_since_open ? TW_STORE_OK
                                         : TW_STORE_STARTING;
  out->unhealthy_since_ms = s->health ? s->unhealthy_since_ms : 0;
  out->last_commit_ms = s->last_commit_ms;
  out->consecutive_failures = s->consecutive_failures;
  out->last_probe_ms = s->last_probe_ms;
  pthread_mutex_unlock(&s->mu);
}

const char *tw_store_health_state_str(enum tw_store_health_state st) {
  switch (st) {
  case TW_STORE_STARTING:
    return "starting";
  case TW_STORE_OK:
    return "ok";
  case TW_STORE_FULL:
    return "full";
  case TW_STORE_IO:
    return "io";
  }
  return "io";
}

/* The probe needs this much room at once: more than one job's write, so
 * a probe that commits on a nearly full disk leaves the next writes the
 * pages it freed (they go back to sqlite's free list, the file does not
 * shrink). */
#define PROBE_BYTES 32768
static const char SQL_PROBE_ADD[] =
    "INSERT INTO store_probe (at_ms, pad) VALUES (?1, zeroblob(?2))";
/* PostgreSQL's own room is its administrator's: the probe proves a commit */
static const char SQL_PROBE_ADD_PG[] =
    "INSERT INTO store_probe (at_ms, pad) VALUES (?1, ''::bytea)";
static const char SQL_PROBE_DEL[] = "DELETE FROM store_probe";

static enum tw_rc op_probe(struct tw_store *s, struct tw_db *db, void *arg,
                           struct tw_err *err) {
  (void)arg;
  bool pg = tw_db_backend(db) == TW_DB_POSTGRES;
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, pg ? SQL_PROBE_ADD_PG : SQL_PROBE_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, tw_clock_now_ms(s->clock));
  if (!pg)
    tw_db_bind_int(st, 2, PROBE_BYTES);
  enum tw_rc rc = store__step_done(db, st, "probe", err);
  if (rc)
    return rc;
  if (!(st = tw_store_stmt(s, db, SQL_PROBE_DEL, err)))
    return TW_E_IO;
  return store__step_done(db, st, "probe", err);
}

enum tw_rc tw_store_probe(struct tw_store *s, struct tw_err *err) {
  pthread_mutex_lock(&s->mu);
  s->last_probe_ms = tw_clock_now_ms(s->clock);
  pthread_mutex_unlock(&s->mu);
  return tw_store_write(s, op_probe, NULL, err);
}

bool tw_store_probe_if_unready(struct tw_store *s, int64_t min_interval_ms) {
  pthread_mutex_lock(&s->mu);
  int64_t now = tw_clock_now_ms(s->clock);
  bool due =
      (s->health != TW_OK || !s->committed_since_open) &&
      (s->last_probe_ms == 0 || now - s->last_probe_ms >= min_interval_ms);
  if (due)
    s->last_probe_ms = now; /* one prober at a time in the interval */
  pthread_mutex_unlock(&s->mu);
  if (!due)
    return false;
  struct tw_err err = {0};
  if (tw_store_write(s, op_probe, NULL, &err))
    tw_log_debug("store", "probe: %s", err.msg);
  return true;
}

static enum tw_rc cap_pages_fn(struct tw_store *s, struct tw_db *db,
                               void *arg, struct tw_err *err) {
  (void)s;
  if (tw_db_test_cap_pages(db, *(const bool *)arg) != TW_DB_OK)
    return db_err(db, err, "max_page_count");
  return TW_OK;
}

enum tw_rc tw_store_test_cap_pages(struct tw_store *s, bool cap,
                                   struct tw_err *err) {
  return tw_store_write(s, cap_pages_fn, &cap, err);
}

int64_t store__now_ms(struct tw_store *s) { return tw_clock_now_ms(s->clock); }

struct store_gauges *store__gauges(struct tw_store *s) { return s->gauges; }

void tw_store_fence(struct tw_store *s, const char *holder, int64_t epoch) {
  pthread_mutex_lock(&s->mu);
  snprintf(s->fence_holder, sizeof s->fence_holder, "%s", holder ? holder : "");
  s->fence_epoch = holder && *holder ? epoch : 0;
  pthread_mutex_unlock(&s->mu);
}

static const char SQL_SERIALIZE[] =
    "UPDATE ha_lease SET epoch = epoch WHERE id = 1";

enum tw_rc store__serialize(struct tw_store *s, struct tw_db *db,
                            struct tw_err *err) {
  if (tw_db_backend(db) != TW_DB_POSTGRES)
    return TW_OK;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_SERIALIZE, err);
  if (!st)
    return TW_E_IO;
  return store__step_done(db, st, "wait for the other replicas", err);
}

int64_t tw_store_fenced_epoch(struct tw_store *s) {
  pthread_mutex_lock(&s->mu);
  int64_t e = s->fence_epoch;
  pthread_mutex_unlock(&s->mu);
  return e;
}

uint64_t tw_store_fence_refusals(struct tw_store *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t n = s->fence_refusals;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void tw_store_stats(struct tw_store *s, struct tw_store_stats *out) {
  pthread_mutex_lock(&s->mu);
  out->commits = s->commits;
  out->ops = s->ops;
  out->max_batch = s->max_seen;
  pthread_mutex_unlock(&s->mu);
  out->job_reads = __atomic_load_n(&s->job_reads, __ATOMIC_RELAXED);
}

/* ---- open / close ------------------------------------------------------ */

static void free_conf(struct tw_store *s) {
  free(s->db_path);
  free(s->dsn);
  if (s->password) {
    OPENSSL_cleanse(s->password, strlen(s->password));
    free(s->password);
  }
}

enum tw_db_backend tw_store_backend(const struct tw_store *s) {
  return s->backend;
}

/* On the writer's connection, which holds the schema lock. */
static enum tw_rc unlock_schema(struct tw_store *s, struct tw_db *db,
                                void *arg, struct tw_err *err) {
  (void)s, (void)arg;
  if (tw_db_schema_lock(db, false) != TW_DB_OK)
    return db_err(db, err, "let go of the schema lock");
  return TW_OK;
}

enum tw_rc tw_store_open(const struct tw_store_opts *opts,
                         struct tw_store **out, struct tw_err *err) {
  struct tw_store *s = tw_calloc(1, sizeof *s);
  enum tw_rc rc;
  *out = NULL;
  s->clock = opts->clock ? opts->clock : tw_clock_real();
  s->max_batch = opts->max_batch > 0 ? opts->max_batch : 512;
  s->n_readers = opts->readers > 0 ? opts->readers : 8;
  s->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL); /* NULL: EVP_sha256() */
  s->lock_fd = -1;
  s->chg_base = 1;
  s->gauges = store__gauges_new();
  s->backend = opts->backend;
  s->txn_timeout_ms = opts->txn_timeout_ms;
  s->db_path = opts->path ? tw_strdup(opts->path) : NULL;
  s->dsn = opts->dsn ? tw_strdup(opts->dsn) : NULL;
  s->password = opts->password ? tw_strdup(opts->password) : NULL;
  if (s->backend == TW_DB_SQLITE && !s->db_path) {
    rc = tw_err_set(err, TW_E_INVALID, "store.path: empty");
    goto fail;
  }
  if (s->backend == TW_DB_SQLITE && opts->exclusive &&
      tw_store_is_file_path(opts->path)) {
    if ((s->lock_fd = tw_store_lock(opts->path, err)) < 0) {
      rc = err->rc;
      goto fail;
    }
    s->path = tw_strdup(opts->path);
  }
  if ((rc = conn_open(s, &s->w, false, opts->sync_full, err)))
    goto fail;
  if (s->backend == TW_DB_SQLITE && tw_store_is_file_path(opts->path))
    s->logs = store__logs_open(opts->path, opts->sync_full);
  /* brokers started together on one PostgreSQL migrate in turn: the
   * lock is held until every module is migrated (unlock_schema) */
  if (tw_db_schema_lock(s->w.db, true) != TW_DB_OK) {
    rc = db_err(s->w.db, err, "wait for the schema lock");
    goto fail;
  }
  if ((rc = migrate(s, &s->w, err)))
    goto fail;
  s->readers = tw_calloc((size_t)s->n_readers, sizeof *s->readers);
  s->reader_busy = tw_calloc((size_t)s->n_readers, sizeof *s->reader_busy);
  for (int i = 0; i < s->n_readers; i++)
    if ((rc = conn_open(s, &s->readers[i], true, false, err)))
      goto fail;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_mutex_init(&s->rmu, NULL);
  pthread_cond_init(&s->rfree, NULL);
  if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
    rc =
        tw_err_set(err, TW_E_INTERNAL, "store: cannot start the writer thread");
    goto fail;
  }
  /* Every module's tables, at once and in order: a module never finds its
   * tables missing later, and a database this build cannot bring up to
   * date is refused here rather than failing one feature at a time. */
  rc = store__migrate_all(s, err);
  struct tw_err uerr = {0};
  tw_store_write(s, unlock_schema, NULL, &uerr);
  if (rc) {
    tw_store_close(s);
    return rc;
  }
  /* the statistics count what callers wrote, not the start-up's own steps;
   * the store is ready once a caller's write (or a probe) commits */
  pthread_mutex_lock(&s->mu);
  s->commits = s->ops = s->max_seen = 0;
  s->committed_since_open = false;
  s->last_commit_ms = 0;
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return TW_OK;
fail:
  if (s->readers)
    for (int i = 0; i < s->n_readers; i++)
      conn_close(&s->readers[i]);
  free(s->readers);
  free(s->reader_busy);
  conn_close(&s->w);
  EVP_MD_free(s->sha256);
  if (s->lock_fd >= 0)
    close(s->lock_fd);
  free(s->path);
  store__logs_close(s->logs);
  store__gauges_free(s->gauges);
  free_conf(s);
  free(s);
  return rc;
}

void tw_store_close(struct tw_store *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->writer, NULL);
  for (int i = 0; i < s->n_readers; i++)
    conn_close(&s->readers[i]);
  free(s->readers);
  free(s->reader_busy);
  conn_close(&s->w);
  store__audit_clear(s);
  free(s->audit_q.v);
  free(s->chg_w);
  free(s->chg);
  store__gauges_free(s->gauges);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->work);
  pthread_mutex_destroy(&s->rmu);
  pthread_cond_destroy(&s->rfree);
  EVP_MD_free(s->sha256);
  if (s->lock_fd >= 0)
    close(s->lock_fd); /* releases the flock */
  free(s->path);
  store__logs_close(s->logs);
  free_conf(s);
  free(s);
}

static struct conn *reader_get(struct tw_store *s) {
  pthread_mutex_lock(&s->rmu);
  for (;;) {
    for (int i = 0; i < s->n_readers; i++)
      if (!s->reader_busy[i]) {
        s->reader_busy[i] = true;
        pthread_mutex_unlock(&s->rmu);
        return &s->readers[i];
      }
    pthread_cond_wait(&s->rfree, &s->rmu);
  }
}

/* Reader i itself, once it is free.  A wake-up meant for another waiter
 * (another reader came free) is passed on. */
static struct conn *reader_take(struct tw_store *s, int i) {
  pthread_mutex_lock(&s->rmu);
  while (s->reader_busy[i]) {
    pthread_cond_wait(&s->rfree, &s->rmu);
    if (s->reader_busy[i])
      pthread_cond_signal(&s->rfree);
  }
  s->reader_busy[i] = true;
  pthread_mutex_unlock(&s->rmu);
  return &s->readers[i];
}

static void reader_put(struct tw_store *s, struct conn *c) {
  pthread_mutex_lock(&s->rmu);
  s->reader_busy[c - s->readers] = false;
  pthread_cond_signal(&s->rfree);
  pthread_mutex_unlock(&s->rmu);
}

/* ---- rows -------------------------------------------------------------- */

void tw_job_rec_release(struct tw_job_rec *r) {
  if (!r)
    return;
  free(r->name);
  free(r->tenant);
  free(r->project);
  free(r->reason);
  free(r->spec_json);
  free(r->placement_json);
  memset(r, 0, sizeof *r);
}

static char *col_dup(struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  return t ? tw_strdup((const char *)t) : NULL;
}

static void row_to_job(struct tw_db_stmt *st, struct tw_job_rec *r) {
  memset(r, 0, sizeof *r);
  r->seq = tw_db_column_int64(st, 0);
  snprintf(r->id, sizeof r->id, "%s", (const char *)tw_db_column_text(st, 1));
  r->name = col_dup(st, 2);
  r->tenant = col_dup(st, 3);
  r->project = col_dup(st, 4);
  const char *state = (const char *)tw_db_column_text(st, 5);
  if (!state || !tw_job_state_parse(state, &r->state))
    r->state = TW_JOB_FAILED; /* unreachable: states are written by us */
  r->reason = col_dup(st, 6);
  if (!r->reason)
    r->reason = tw_strdup("");
  r->priority = tw_db_column_int(st, 7);
  r->spec_json = col_dup(st, 8);
  r->placement_json = col_dup(st, 9);
  r->has_exit_code = tw_db_column_type(st, 10) != TW_DB_NULL;
  r->exit_code = tw_db_column_int(st, 10);
  r->created_ms = tw_db_column_int64(st, 11);
  r->updated_ms = tw_db_column_int64(st, 12);
}

/* Time-ordered id: 48 bits of milliseconds then 80 random bits, in
 * Crockford base32, so ids sort by creation and never collide.  The
 * random bits are drawn by the caller (store__job_prepare for jobs), off
 * the writer thread. */
void store__sortable_id(char prefix, int64_t now_ms,
                        const unsigned char rnd[10], char out[29]) {
  static const char b32[] = "0123456789abcdefghjkmnpqrstvwxyz";
  unsigned char bytes[16];
  for (int i = 0; i < 6; i++)
    bytes[i] = (unsigned char)((uint64_t)now_ms >> (40 - 8 * i));
  memcpy(bytes + 6, rnd, 10);
  out[0] = prefix;
  out[1] = '-';
  /* 128 bits -> 26 base32 digits (130 bits, top two zero) */
  int bit = -2;
  for (int i = 0; i < 26; i++, bit += 5) {
    int v = 0;
    for (int b = 0; b < 5; b++) {
      int pos = bit + b;
      v <<= 1;
      if (pos >= 0)
        v |= (bytes[pos / 8] >> (7 - pos % 8)) & 1;
    }
    out[2 + i] = b32[v];
  }
  out[28] = '\0';
}

static enum tw_rc step_done(struct conn *c, struct tw_db_stmt *st, const char *what,
                            struct tw_err *err) {
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return db_err(c->db, err, what);
  return TW_OK;
}

static enum tw_rc insert_event(struct tw_store *s, const char *id, int64_t at,
                               const char *from, const char *to,
                               const char *reason, struct tw_err *err) {
  struct tw_db_stmt *st = prep(&s->w, SQL_EVENT_INSERT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, id, -1);
  tw_db_bind_int64(st, 2, at);
  if (from)
    tw_db_bind_text(st, 3, from, -1);
  tw_db_bind_text(st, 4, to, -1);
  tw_db_bind_text(st, 5, reason, -1);
  return step_done(&s->w, st, "insert event", err);
}

/* The idempotency check compares SHA-256 digests of the canonical spec, so
 * the same spec sent as YAML or as JSON replays. */
enum tw_rc store__job_prepare(struct tw_store *s, const struct tw_job_new *req,
                              struct store_job_prep *out, struct tw_err *err) {
  static const char digits[] = "0123456789abcdef";
  unsigned char md[32];
  unsigned len = 0;
  out->seq_later = false;
  if (EVP_Digest(req->spec_json, strlen(req->spec_json), md, &len,
                 s->sha256 ? s->sha256 : EVP_sha256(), NULL) != 1 ||
      len != sizeof md || RAND_bytes(out->rnd, sizeof out->rnd) != 1)
    return tw_err_set(err, TW_E_INTERNAL, "store: no digest or random bytes");
  for (size_t i = 0; i < sizeof md; i++) {
    out->hash[2 * i] = digits[md[i] >> 4];
    out->hash[2 * i + 1] = digits[md[i] & 15];
  }
  out->hash[64] = '\0';
  return TW_OK;
}

struct create_arg {
  const struct tw_job_new *req;
  const struct store_job_prep *jp;
  struct tw_job_rec *out;
  bool replayed;
};

enum tw_rc store__job_insert(struct tw_store *s, const struct tw_job_new *req,
                             const struct store_job_prep *jp,
                             struct tw_job_rec *out, bool *replayed,
                             struct tw_err *err) {
  const char *hash = jp->hash;
  enum tw_rc rc;
  if (req->idem_key) {
    struct tw_db_stmt *st = prep(&s->w, SQL_JOB_BY_IDEM, err);
    if (!st)
      return TW_E_IO;
    tw_db_bind_text(st, 1, req->tenant, -1);
    tw_db_bind_text(st, 2, req->idem_key, -1);
    int r = tw_db_step(st);
    if (r == TW_DB_ROW) {
      const char *old = (const char *)tw_db_column_text(st, 13);
      bool same = old && strcmp(old, hash) == 0;
      if (same)
        row_to_job(st, out);
      tw_db_reset(st);
      if (!same)
        return tw_err_field(
            err, TW_E_CONFLICT, "Idempotency-Key",
            "Idempotency-Key: already used with a different job spec");
      *replayed = true;
      return TW_OK;
    }
    tw_db_reset(st);
    if (r != TW_DB_DONE)
      return db_err(s->w.db, err, "idempotency lookup");
  }
  int64_t now = tw_clock_now_ms(s->clock);
  char id[TW_JOB_ID_LEN + 1];
  store__sortable_id('j', now, jp->rnd, id);
  bool one = jp->seq_later && tw_db_backend(s->w.db) == TW_DB_POSTGRES;
  struct tw_db_stmt *st =
      prep(&s->w, one ? SQL_JOB_INSERT_PG : SQL_JOB_INSERT, err);
  if (!st)
    return TW_E_IO;
  const char *reason = "submitted";
  tw_db_bind_text(st, 1, id, -1);
  tw_db_bind_text(st, 2, req->tenant, -1);
  tw_db_bind_text(st, 3, req->project, -1);
  tw_db_bind_text(st, 4, req->name, -1);
  tw_db_bind_text(st, 5, reason, -1);
  tw_db_bind_int(st, 6, req->priority);
  tw_db_bind_text(st, 7, req->spec_json, -1);
  if (req->idem_key) {
    tw_db_bind_text(st, 8, req->idem_key, -1);
    tw_db_bind_text(st, 9, hash, -1);
  }
  tw_db_bind_int64(st, 10, now);
  if (req->traceparent) /* the context the job's spans join (store_obs.h) */
    tw_db_bind_text(st, 11, req->traceparent, -1);
  struct tw_job_rec *r = out;
  memset(r, 0, sizeof *r);
  if (one) {
    /* out outlives the write: the seq is read with the batch's next
     * answer, no round trip of its own */
    int sr = tw_db_step_into(st, &r->seq);
    tw_db_reset(st);
    if (sr != TW_DB_DONE)
      return db_err(s->w.db, err, "insert job");
  } else {
    if ((rc = step_done(&s->w, st, "insert job", err)))
      return rc;
    r->seq = tw_db_last_insert_id(s->w.db);
    if ((rc = insert_event(s, id, now, NULL, "pending", reason, err)))
      return rc;
  }
  enum tw_job_state state = TW_JOB_PENDING;
  if (req->flow && req->flow->n_ext && /* depends_on: store_flow.c */
      (rc = store__flow_job_created(s, s->w.db, id, req->flow, &state, err)))
    return rc;
  store__job_rec_new(r, req, id, state, now);
  return TW_OK;
}

void store__job_rec_new(struct tw_job_rec *r, const struct tw_job_new *req,
                        const char *id, enum tw_job_state state,
                        int64_t now_ms) {
  memcpy(r->id, id, sizeof r->id);
  r->name = tw_strdup(req->name);
  r->tenant = tw_strdup(req->tenant);
  r->project = tw_strdup(req->project);
  r->state = state;
  r->reason = tw_strdup(state == TW_JOB_PENDING ? "submitted"
                        : state == TW_JOB_WAITING ? "waiting on dependencies"
                                                  : "DependencyNeverSatisfied: "
                                                    "a dependency can never be "
                                                    "met");
  r->priority = req->priority;
  r->spec_json = tw_strdup(req->spec_json);
  r->created_ms = r->updated_ms = now_ms;
}

static enum tw_rc op_create(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  (void)db;
  struct create_arg *a = varg;
  return store__job_insert(s, a->req, a->jp, a->out, &a->replayed, err);
}

enum tw_rc tw_store_job_create(struct tw_store *s, const struct tw_job_new *req,
                               struct tw_job_rec *out, bool *replayed,
                               struct tw_err *err) {
  struct store_job_prep jp;
  struct create_arg a = {.req = req, .jp = &jp, .out = out};
  memset(out, 0, sizeof *out);
  enum tw_rc rc = store__job_prepare(s, req, &jp, err);
  jp.seq_later = true; /* out is the caller's, read after the commit */
  if (rc == TW_OK)
    rc = tw_store_write(s, op_create, &a, err);
  if (rc)
    tw_job_rec_release(out);
  if (replayed)
    *replayed = a.replayed;
  return rc;
}

static enum tw_rc get_on(struct conn *c, const char *id, struct tw_job_rec *out,
                         struct tw_err *err) {
  struct tw_db_stmt *st = prep(c, SQL_JOB_BY_ID, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, id, -1);
  int r = tw_db_step(st);
  enum tw_rc rc = TW_OK;
  if (r == TW_DB_ROW)
    row_to_job(st, out);
  else if (r == TW_DB_DONE)
    rc = tw_err_set(err, TW_E_NOTFOUND, "job %s not found", id);
  else
    rc = db_err(c->db, err, "get job");
  tw_db_reset(st);
  return rc;
}

/* A job's state on c; with same_reason, whether its reason is reason.
 * The same errors as get_on(). */
static enum tw_rc state_on(struct conn *c, const char *id,
                           enum tw_job_state *state, const char *reason,
                           bool *same_reason, struct tw_err *err) {
  struct tw_db_stmt *st = prep(c, SQL_JOB_STATE_BY_ID, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, id, -1);
  int r = tw_db_step(st);
  enum tw_rc rc = TW_OK;
  if (r == TW_DB_ROW) {
    const char *sv = (const char *)tw_db_column_text(st, 0);
    if (!sv || !tw_job_state_parse(sv, state))
      *state = TW_JOB_FAILED; /* unreachable: states are written by us */
    if (same_reason) {
      const char *rv = (const char *)tw_db_column_text(st, 1);
      *same_reason = !strcmp(rv ? rv : "", reason);
    }
  } else if (r == TW_DB_DONE) {
    rc = tw_err_set(err, TW_E_NOTFOUND, "job %s not found", id);
  } else {
    rc = db_err(c->db, err, "get job");
  }
  tw_db_reset(st);
  return rc;
}

enum tw_rc tw_store_job_get(struct tw_store *s, const char *id,
                            struct tw_job_rec *out, struct tw_err *err) {
  __atomic_fetch_add(&s->job_reads, 1, __ATOMIC_RELAXED);
  struct conn *c = reader_get(s);
  enum tw_rc rc = get_on(c, id, out, err);
  reader_put(s, c);
  return rc;
}

enum tw_rc tw_store_job_list(struct tw_store *s, const struct tw_job_filter *f,
                             struct tw_job_rec **out, size_t *n,
                             int64_t *next_before, struct tw_err *err) {
  const char *sql =
      f->provider ? SQL_JOB_LIST_PROVIDER
      : f->state  ? (f->tenant ? SQL_JOB_LIST_BOTH : SQL_JOB_LIST_STATE)
                  : (f->tenant ? SQL_JOB_LIST_TENANT : SQL_JOB_LIST);
  int limit = f->limit < 1 ? 1 : f->limit > 500 ? 500 : f->limit;
  *out = NULL;
  *n = 0;
  *next_before = 0;
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, sql, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  /* fetch one more than asked to know whether another page exists */
  tw_db_bind_int64(st, 1, f->before_seq > 0 ? f->before_seq : INT64_MAX);
  tw_db_bind_int(st, 2, limit + 1);
  if (f->state)
    tw_db_bind_text(st, 3, f->state, -1);
  if (f->tenant)
    tw_db_bind_text(st, 4, f->tenant, -1);
  if (f->provider)
    tw_db_bind_text(st, 5, f->provider, -1);
  struct tw_job_rec *recs = tw_calloc((size_t)limit, sizeof *recs);
  size_t k = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (k == (size_t)limit) {
      *next_before = recs[k - 1].seq;
      break;
    }
    row_to_job(st, &recs[k++]);
  }
  if (r != TW_DB_ROW && r != TW_DB_DONE) {
    rc = db_err(c->db, err, "list jobs");
    for (size_t i = 0; i < k; i++)
      tw_job_rec_release(&recs[i]);
    free(recs);
  } else {
    *out = recs;
    *n = k;
  }
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

struct transition_arg {
  const struct tw_job_transition *t;
  struct tw_job_rec *out;
  /* the job's state as the writer just read it in this transaction (the
   * update still checks it), or NULL to read it */
  const enum tw_job_state *from;
};

static enum tw_rc op_transition(struct tw_store *s, struct tw_db *db, void *varg,
                                struct tw_err *err) {
  (void)db;
  struct transition_arg *a = varg;
  const struct tw_job_transition *t = a->t;
  enum tw_job_state cur;
  enum tw_rc rc = TW_OK;
  if (a->from)
    cur = *a->from;
  else if ((rc = state_on(&s->w, t->id, &cur, NULL, NULL, err)))
    return rc;
  if ((rc = tw_job_transition_check(cur, t->to, err)))
    goto out;
  int64_t now = tw_clock_now_ms(s->clock);
  const char *from = tw_job_state_str(cur), *to = tw_job_state_str(t->to);
  const char *reason = t->reason ? t->reason : "";
  struct tw_db_stmt *st = prep(&s->w, SQL_JOB_SET_STATE, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  tw_db_bind_text(st, 1, to, -1);
  tw_db_bind_text(st, 2, reason, -1);
  tw_db_bind_int64(st, 3, now);
  if (t->placement_json)
    tw_db_bind_text(st, 4, t->placement_json, -1);
  tw_db_bind_int(st, 5, t->has_exit);
  tw_db_bind_int(st, 6, t->exit_code);
  tw_db_bind_text(st, 7, t->id, -1);
  tw_db_bind_text(st, 8, from, -1);
  if ((rc = step_done(&s->w, st, "update job state", err)))
    goto out;
  if (tw_db_changes(s->w.db) != 1) {
    rc = tw_err_set(err, TW_E_CONFLICT, "job %s changed state concurrently",
                    t->id);
    goto out;
  }
  if (tw_job_state_terminal(t->to))
    store__job_ended(s, t->id);
  if ((rc = insert_event(s, t->id, now, from, to, reason, err)))
    goto out;
  if (a->out)
    rc = get_on(&s->w, t->id, a->out, err);
out:
  return rc;
}

enum tw_rc tw_store_job_transition(struct tw_store *s,
                                   const struct tw_job_transition *t,
                                   struct tw_job_rec *out, struct tw_err *err) {
  struct transition_arg a = {.t = t, .out = out};
  if (out)
    memset(out, 0, sizeof *out);
  enum tw_rc rc = tw_store_write(s, op_transition, &a, err);
  if (rc && out)
    tw_job_rec_release(out);
  return rc;
}

enum tw_rc tw_store_job_events(struct tw_store *s, const char *id,
                               struct tw_job_event **out, size_t *n,
                               struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, SQL_JOB_EXISTS, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  tw_db_bind_text(st, 1, id, -1);
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r == TW_DB_DONE) {
    rc = tw_err_set(err, TW_E_NOTFOUND, "job %s not found", id);
    goto out;
  }
  if (r != TW_DB_ROW) {
    rc = db_err(c->db, err, "get job");
    goto out;
  }
  if (!(st = prep(c, SQL_EVENTS, err))) {
    rc = TW_E_IO;
    goto out;
  }
  tw_db_bind_text(st, 1, id, -1);
  size_t cap = 0;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      *out = tw_realloc(*out, cap * sizeof **out);
    }
    struct tw_job_event *e = &(*out)[(*n)++];
    memset(e, 0, sizeof *e);
    e->seq = tw_db_column_int64(st, 0);
    e->at_ms = tw_db_column_int64(st, 1);
    const char *from = (const char *)tw_db_column_text(st, 2);
    e->has_from = from && tw_job_state_parse(from, &e->from);
    const char *to = (const char *)tw_db_column_text(st, 3);
    if (!to || !tw_job_state_parse(to, &e->to))
      e->to = TW_JOB_FAILED;
    e->reason = col_dup(st, 4);
  }
  if (r != TW_DB_DONE)
    rc = db_err(c->db, err, "list events");
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

enum tw_rc tw_store_job_counts(struct tw_store *s,
                               int64_t counts[TW_JOB_NSTATES],
                               struct tw_err *err) {
  memset(counts, 0, sizeof(int64_t) * TW_JOB_NSTATES);
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, SQL_COUNTS, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    enum tw_job_state js;
    const char *name = (const char *)tw_db_column_text(st, 0);
    if (name && tw_job_state_parse(name, &js))
      counts[js] = tw_db_column_int64(st, 1);
  }
  if (r != TW_DB_DONE)
    rc = db_err(c->db, err, "count jobs");
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

/* ---- attempts ------------------------------------------------------------ */

static const char *const ATTEMPT_STATES[] = {"launching", "provisioning",
                                             "running", "ended"};

const char *tw_attempt_state_str(enum tw_attempt_state st) {
  return (unsigned)st < 4 ? ATTEMPT_STATES[st] : "unknown";
}

/* Column i's text into dst[n], cut as snprintf would cut it, without
 * its cost: the live attempts are read this way several times a pass. */
static void copy_col(char *dst, size_t n, struct tw_db_stmt *st, int i) {
  const unsigned char *t = tw_db_column_text(st, i);
  size_t len = t ? strnlen((const char *)t, n - 1) : 0;
  if (len)
    memcpy(dst, t, len);
  dst[len] = '\0';
}

static void row_to_attempt(struct tw_db_stmt *st, struct tw_attempt_rec *a) {
  memset(a, 0, sizeof *a);
  a->id = tw_db_column_int64(st, 0);
  copy_col(a->job_id, sizeof a->job_id, st, 1);
  a->n = tw_db_column_int(st, 2);
  copy_col(a->client_token, sizeof a->client_token, st, 3);
  copy_col(a->provider, sizeof a->provider, st, 4);
  copy_col(a->offer_id, sizeof a->offer_id, st, 5);
  copy_col(a->market, sizeof a->market, st, 6);
  a->price_uusd_per_hour = tw_db_column_int64(st, 7);
  copy_col(a->instance_id, sizeof a->instance_id, st, 8);
  const char *state = (const char *)tw_db_column_text(st, 9);
  a->state = TW_ATTEMPT_ENDED;
  for (int i = 0; i < 4; i++)
    if (state && !strcmp(state, ATTEMPT_STATES[i]))
      a->state = (enum tw_attempt_state)i;
  copy_col(a->end_reason, sizeof a->end_reason, st, 10);
  a->started_ms = tw_db_column_int64(st, 11);
  a->running_ms = tw_db_column_int64(st, 12);
  a->ended_ms = tw_db_column_int64(st, 13);
}

static enum tw_rc attempt_get_w(struct tw_store *s, int64_t id,
                                struct tw_attempt_rec *out,
                                struct tw_err *err) {
  struct tw_db_stmt *st = prep(&s->w, SQL_ATTEMPT_BY_ID, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, id);
  int r = tw_db_step(st);
  enum tw_rc rc = TW_OK;
  if (r == TW_DB_ROW)
    row_to_attempt(st, out);
  else if (r == TW_DB_DONE)
    rc =
        tw_err_set(err, TW_E_NOTFOUND, "attempt %lld not found", (long long)id);
  else
    rc = db_err(s->w.db, err, "get attempt");
  tw_db_reset(st);
  return rc;
}

/* The job transition used inside other write operations. */
static enum tw_rc transition_w(struct tw_store *s,
                               const struct tw_job_transition *t,
                               struct tw_err *err) {
  struct transition_arg a = {.t = t, .out = NULL};
  return op_transition(s, s->w.db, &a, err);
}

/* As transition_w() for a job whose state the operation has just read. */
static enum tw_rc transition_from(struct tw_store *s,
                                  const struct tw_job_transition *t,
                                  enum tw_job_state from, struct tw_err *err) {
  struct transition_arg a = {.t = t, .out = NULL, .from = &from};
  return op_transition(s, s->w.db, &a, err);
}

struct attempt_open_arg {
  const struct tw_attempt_new *req;
  struct tw_attempt_rec *out;
};

static enum tw_rc op_attempt_open(struct tw_store *s, struct tw_db *db, void *varg,
                                  struct tw_err *err) {
  (void)db;
  struct attempt_open_arg *a = varg;
  const struct tw_attempt_new *req = a->req;
  enum tw_job_state state;
  enum tw_rc rc = state_on(&s->w, req->job_id, &state, NULL, NULL, err);
  if (rc)
    return rc;
  if (state == TW_JOB_PENDING) {
    struct tw_job_transition t = {.id = req->job_id,
                                  .to = TW_JOB_PLACING,
                                  .reason =
                                      req->reason ? req->reason : "placing"};
    if ((rc = transition_from(s, &t, state, err)))
      return rc;
  } else if (state != TW_JOB_PLACING && state != TW_JOB_RECOVERING) {
    /* recovering: placed again right after an interruption, the job goes
     * on to provisioning when the launch succeeds */
    return tw_err_set(err, TW_E_CONFLICT, "job %s is %s, not pending",
                      req->job_id, tw_job_state_str(state));
  }
  /* One live attempt per job: a second one opened while the first may
   * still get its instance would buy a second machine for one job. */
  struct tw_db_stmt *st = prep(&s->w, SQL_ATTEMPT_LIVE_OF, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, req->job_id, -1);
  int live_n = tw_db_step(st) == TW_DB_ROW ? tw_db_column_int(st, 0) : 0;
  tw_db_reset(st);
  if (live_n)
    return tw_err_set(err, TW_E_CONFLICT, "job %s: attempt %d is still live",
                      req->job_id, live_n);
  if (!(st = prep(&s->w, SQL_ATTEMPT_NEXT_N, err)))
    return TW_E_IO;
  tw_db_bind_text(st, 1, req->job_id, -1);
  int n = tw_db_step(st) == TW_DB_ROW ? tw_db_column_int(st, 0) : 1;
  tw_db_reset(st);
  char token[48];
  snprintf(token, sizeof token, "%s-%d", req->job_id, n);
  int64_t now = tw_clock_now_ms(s->clock);
  if (!(st = prep(&s->w, SQL_ATTEMPT_INSERT, err)))
    return TW_E_IO;
  tw_db_bind_text(st, 1, req->job_id, -1);
  tw_db_bind_int(st, 2, n);
  tw_db_bind_text(st, 3, token, -1);
  tw_db_bind_text(st, 4, req->provider, -1);
  tw_db_bind_text(st, 5, req->offer_id, -1);
  tw_db_bind_text(st, 6, req->market, -1);
  tw_db_bind_int64(st, 7, req->price_uusd_per_hour);
  tw_db_bind_int64(st, 8, now);
  if ((rc = step_done(&s->w, st, "insert attempt", err)))
    return rc;
  int64_t id = tw_db_last_insert_id(s->w.db);
  chg_note(s, id, NULL);
  return attempt_get_w(s, id, a->out, err);
}

enum tw_rc tw_store_attempt_open(struct tw_store *s,
                                 const struct tw_attempt_new *req,
                                 struct tw_attempt_rec *out,
                                 struct tw_err *err) {
  struct attempt_open_arg a = {.req = req, .out = out};
  return tw_store_write(s, op_attempt_open, &a, err);
}

void tw_store_attempt_open_many(struct tw_store *s,
                                const struct tw_attempt_new *reqs,
                                struct tw_attempt_rec *outs, size_t n,
                                enum tw_rc *rcs, struct tw_err *errs) {
  struct attempt_open_arg *a = tw_calloc(n ? n : 1, sizeof *a);
  void **args = tw_calloc(n ? n : 1, sizeof *args);
  for (size_t i = 0; i < n; i++) {
    a[i] = (struct attempt_open_arg){.req = &reqs[i], .out = &outs[i]};
    args[i] = &a[i];
  }
  tw_store_write_many(s, op_attempt_open, args, n, rcs, errs);
  free(args);
  free(a);
}

enum tw_rc tw_store_attempt_open_op(struct tw_store *s, struct tw_db *db,
                                    void *arg, struct tw_err *err) {
  const struct tw_store_attempt_open *o = arg;
  struct attempt_open_arg a = {.req = o->req, .out = o->out};
  return op_attempt_open(s, db, &a, err);
}

struct attempt_step_arg {
  int64_t id;
  const char *instance_id;
  const char *placement_json;
  const struct tw_attempt_close *close;
  int kind;         /* 0 launched, 1 running, 2 close */
  int64_t at_ms;    /* running: the provider's time; 0 now */
};

/* A provider's time for an attempt, kept within [from, now]; 0: now. */
static int64_t clamp_time(int64_t t, int64_t from, int64_t now) {
  if (t <= 0 || t > now)
    return now;
  return t < from ? from : t;
}

static enum tw_rc op_attempt_step(struct tw_store *s, struct tw_db *db, void *varg,
                                  struct tw_err *err) {
  (void)db;
  struct attempt_step_arg *a = varg;
  struct tw_attempt_rec at;
  chg_note(s, a->id, NULL);
  enum tw_rc rc = attempt_get_w(s, a->id, &at, err);
  if (rc)
    return rc;
  int64_t now = tw_clock_now_ms(s->clock);
  struct tw_db_stmt *st;
  if (a->kind == 0) {
    if (!(st = prep(&s->w, SQL_ATTEMPT_SET_LAUNCHED, err)))
      return TW_E_IO;
    tw_db_bind_int64(st, 1, a->id);
    tw_db_bind_text(st, 2, a->instance_id, -1);
    if ((rc = step_done(&s->w, st, "attempt launched", err)))
      return rc;
    if (tw_db_changes(s->w.db) != 1)
      return tw_err_set(err, TW_E_CONFLICT, "attempt %lld is %s, not launching",
                        (long long)a->id, tw_attempt_state_str(at.state));
    char reason[256];
    snprintf(reason, sizeof reason, "launched %s on %s", a->instance_id,
             at.offer_id);
    enum tw_job_state js;
    if ((rc = state_on(&s->w, at.job_id, &js, NULL, NULL, err)))
      return rc;
    if (js == TW_JOB_PENDING) {
      /* sent back to the queue while its launch was unanswered (an older
       * build did): it goes on with the instance it got */
      struct tw_job_transition tp = {
          .id = at.job_id, .to = TW_JOB_PLACING, .reason = reason};
      if ((rc = transition_from(s, &tp, js, err)))
        return rc;
      js = TW_JOB_PLACING;
    }
    struct tw_job_transition t = {.id = at.job_id,
                                  .to = TW_JOB_PROVISIONING,
                                  .reason = reason,
                                  .placement_json = a->placement_json};
    return transition_from(s, &t, js, err);
  }
  if (a->kind == 1) {
    if (!(st = prep(&s->w, SQL_ATTEMPT_SET_RUNNING, err)))
      return TW_E_IO;
    tw_db_bind_int64(st, 1, a->id);
    tw_db_bind_int64(st, 2, clamp_time(a->at_ms, at.started_ms, now));
    if ((rc = step_done(&s->w, st, "attempt running", err)))
      return rc;
    if (tw_db_changes(s->w.db) != 1)
      return tw_err_set(err, TW_E_CONFLICT,
                        "attempt %lld is %s, not provisioning",
                        (long long)a->id, tw_attempt_state_str(at.state));
    char reason[192];
    snprintf(reason, sizeof reason, "instance %s running", at.instance_id);
    struct tw_job_transition t = {
        .id = at.job_id, .to = TW_JOB_RUNNING, .reason = reason};
    return transition_w(s, &t, err);
  }
  const struct tw_attempt_close *c = a->close;
  if (c->only_launching && at.state != TW_ATTEMPT_LAUNCHING)
    return tw_err_set(err, TW_E_CONFLICT, "attempt %lld is %s, not launching",
                      (long long)a->id, tw_attempt_state_str(at.state));
  if (!(st = prep(&s->w, SQL_ATTEMPT_SET_ENDED, err)))
    return TW_E_IO;
  /* the provider's times: ran from (when never recorded running) and
   * ended, in order and not in the future */
  int64_t ran = at.running_ms ? at.running_ms
                : c->ran_from_ms ? clamp_time(c->ran_from_ms, at.started_ms, now)
                                 : 0;
  int64_t ended = clamp_time(c->ended_at_ms, at.started_ms, now);
  if (ran && ended < ran)
    ended = ran;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_text(st, 2, c->end_reason, -1);
  tw_db_bind_int64(st, 3, ended);
  tw_db_bind_int64(st, 4, ran);
  if ((rc = step_done(&s->w, st, "attempt ended", err)))
    return rc;
  if (c->job_to == TW_JOB_NSTATES)
    return TW_OK;
  enum tw_job_state js;
  if ((rc = state_on(&s->w, at.job_id, &js, NULL, NULL, err)))
    return rc;
  bool finished = tw_job_state_terminal(js);
  if (finished)
    return TW_OK; /* cancelled meanwhile: the attempt still ends */
  struct tw_job_transition t = {.id = at.job_id,
                                .to = c->job_to,
                                .reason = c->job_reason,
                                .has_exit = c->has_exit,
                                .exit_code = c->exit_code};
  return transition_from(s, &t, js, err);
}

enum tw_rc tw_store_attempt_launched(struct tw_store *s, int64_t attempt_id,
                                     const char *instance_id,
                                     const char *placement_json,
                                     struct tw_err *err) {
  struct attempt_step_arg a = {.id = attempt_id,
                               .instance_id = instance_id,
                               .placement_json = placement_json,
                               .kind = 0};
  return tw_store_write(s, op_attempt_step, &a, err);
}

enum tw_rc tw_store_attempt_launched_op(struct tw_store *s, struct tw_db *db,
                                        void *arg, struct tw_err *err) {
  const struct tw_store_launched *l = arg;
  struct attempt_step_arg a = {.id = l->attempt_id,
                               .instance_id = l->instance_id,
                               .placement_json = l->placement_json,
                               .kind = 0};
  enum tw_rc rc = op_attempt_step(s, db, &a, err);
  if (rc == TW_OK && l->audit)
    rc = tw_store_audit_append_in(s, db, l->audit, l->audit_at_ms, NULL, err);
  return rc;
}

enum tw_rc tw_store_attempt_running(struct tw_store *s, int64_t attempt_id,
                                    struct tw_err *err) {
  return tw_store_attempt_running_at(s, attempt_id, 0, err);
}

enum tw_rc tw_store_attempt_running_at(struct tw_store *s, int64_t attempt_id,
                                       int64_t at_ms, struct tw_err *err) {
  struct attempt_step_arg a = {.id = attempt_id, .kind = 1, .at_ms = at_ms};
  return tw_store_write(s, op_attempt_step, &a, err);
}

enum tw_rc tw_store_attempt_close(struct tw_store *s,
                                  const struct tw_attempt_close *c,
                                  struct tw_err *err) {
  struct attempt_step_arg a = {.id = c->attempt_id, .close = c, .kind = 2};
  return tw_store_write(s, op_attempt_step, &a, err);
}

static enum tw_rc attempts_query(struct tw_store *s, const char *sql,
                                 const char *job_id,
                                 struct tw_attempt_rec **out, size_t *n,
                                 struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, sql, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  if (job_id)
    tw_db_bind_text(st, 1, job_id, -1);
  size_t cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      *out = tw_realloc(*out, cap * sizeof **out);
    }
    row_to_attempt(st, &(*out)[(*n)++]);
  }
  if (r != TW_DB_DONE)
    rc = db_err(c->db, err, "list attempts");
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

enum tw_rc tw_store_attempts_by_id(struct tw_store *s, const int64_t *ids,
                                   size_t n, struct tw_attempt_rec *out,
                                   bool *found, struct tw_err *err) {
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, SQL_ATTEMPT_BY_ID, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    tw_db_bind_int64(st, 1, ids[i]);
    int r = tw_db_step(st);
    found[i] = r == TW_DB_ROW;
    if (found[i])
      row_to_attempt(st, &out[i]);
    else if (r != TW_DB_DONE)
      rc = db_err(c->db, err, "get attempt");
    tw_db_reset(st);
  }
out:
  reader_put(s, c);
  return rc;
}

enum tw_rc tw_store_attempts_live(struct tw_store *s,
                                  struct tw_attempt_rec **out, size_t *n,
                                  struct tw_err *err) {
  return attempts_query(s, SQL_ATTEMPTS_LIVE, NULL, out, n, err);
}

enum tw_rc tw_store_attempts_live_ended(struct tw_store *s, int64_t **out,
                                        size_t *n, struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, SQL_ATTEMPTS_LIVE_ENDED, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  size_t cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      *out = tw_realloc(*out, cap * sizeof **out);
    }
    (*out)[(*n)++] = tw_db_column_int64(st, 0);
  }
  if (r != TW_DB_DONE) {
    rc = db_err(c->db, err, "list attempts of ended jobs");
    free(*out);
    *out = NULL;
    *n = 0;
  }
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

enum tw_rc tw_store_attempts_of(struct tw_store *s, const char *job_id,
                                struct tw_attempt_rec **out, size_t *n,
                                struct tw_err *err) {
  return attempts_query(s, SQL_ATTEMPTS_OF, job_id, out, n, err);
}

enum tw_rc tw_store_jobs_queued(struct tw_store *s, enum tw_job_state state,
                                int limit, struct tw_job_rec **out, size_t *n,
                                struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct conn *c = reader_get(s);
  enum tw_rc rc = TW_OK;
  struct tw_db_stmt *st = prep(c, SQL_JOBS_QUEUED, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  tw_db_bind_text(st, 1, tw_job_state_str(state), -1);
  tw_db_bind_int(st, 2, limit);
  size_t cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      *out = tw_realloc(*out, cap * sizeof **out);
    }
    row_to_job(st, &(*out)[(*n)++]);
  }
  if (r != TW_DB_DONE)
    rc = db_err(c->db, err, "queued jobs");
  tw_db_reset(st);
out:
  reader_put(s, c);
  return rc;
}

struct note_arg {
  const char *id, *reason;
};

static enum tw_rc op_note(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  (void)db;
  struct note_arg *a = varg;
  enum tw_job_state js;
  bool same = false;
  enum tw_rc rc = state_on(&s->w, a->id, &js, a->reason, &same, err);
  if (rc)
    return rc;
  /* the same reason again (a job that still fits nowhere) is not news */
  if (same)
    return TW_OK;
  int64_t now = tw_clock_now_ms(s->clock);
  const char *state = tw_job_state_str(js);
  struct tw_db_stmt *st = prep(&s->w, SQL_JOB_SET_REASON, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->id, -1);
  tw_db_bind_text(st, 2, a->reason, -1);
  tw_db_bind_int64(st, 3, now);
  if ((rc = step_done(&s->w, st, "set reason", err)))
    return rc;
  return insert_event(s, a->id, now, state, state, a->reason, err);
}

enum tw_rc tw_store_job_note(struct tw_store *s, const char *job_id,
                             const char *reason, struct tw_err *err) {
  struct note_arg a = {.id = job_id, .reason = reason};
  return tw_store_write(s, op_note, &a, err);
}

struct notes_arg {
  const struct tw_job_note *notes;
  size_t n;
};

static enum tw_rc op_notes(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  (void)db;
  const struct notes_arg *a = varg;
  int64_t now = tw_clock_now_ms(s->clock);
  for (size_t i = 0; i < a->n; i++) {
    const struct tw_job_note *nt = &a->notes[i];
    struct tw_db_stmt *st = prep(&s->w, SQL_NOTE_EVENT, err);
    if (!st)
      return TW_E_IO;
    tw_db_bind_text(st, 1, nt->job_id, -1);
    tw_db_bind_int64(st, 2, now);
    tw_db_bind_text(st, 3, nt->reason, -1);
    enum tw_rc rc = step_done(&s->w, st, "note event", err);
    if (rc)
      return rc;
    if (!(st = prep(&s->w, SQL_NOTE_SET, err)))
      return TW_E_IO;
    tw_db_bind_text(st, 1, nt->job_id, -1);
    tw_db_bind_text(st, 2, nt->reason, -1);
    tw_db_bind_int64(st, 3, now);
    if ((rc = step_done(&s->w, st, "set reason", err)))
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_store_job_note_many(struct tw_store *s,
                                  const struct tw_job_note *notes, size_t n,
                                  struct tw_err *err) {
  if (!n)
    return TW_OK;
  struct notes_arg a = {.notes = notes, .n = n};
  return tw_store_write(s, op_notes, &a, err);
}

static enum tw_rc op_warm(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  (void)db;
  (void)varg;
  if (!prep(&s->w, SQL_NOTE_EVENT, err) || !prep(&s->w, SQL_NOTE_SET, err))
    return TW_E_IO;
  return TW_OK;
}

enum tw_rc tw_store_warm(struct tw_store *s, struct tw_err *err) {
  static const char *const reads[] = {SQL_JOBS_QUEUED, SQL_ATTEMPTS_LIVE,
                                      SQL_ATTEMPTS_OF, SQL_JOB_BY_ID};
  enum tw_rc rc = TW_OK;
  /* each reader in turn, one held at a time */
  for (int i = 0; i < s->n_readers && !rc; i++) {
    struct conn *c = reader_take(s, i);
    for (size_t k = 0; k < sizeof reads / sizeof *reads && !rc; k++)
      if (!prep(c, reads[k], err))
        rc = TW_E_IO;
    reader_put(s, c);
  }
  if (rc)
    return rc;
  return tw_store_write(s, op_warm, NULL, err);
}

/* One attempt seen running, and its job's note (tw_store_attempt_running_many):
 * the note is written only when the step was, and its own failure does
 * not undo the step. */
static enum tw_rc op_running_noted(struct tw_store *s, struct tw_db *db,
                                   void *varg, struct tw_err *err) {
  const struct tw_attempt_running *r = varg;
  struct attempt_step_arg a = {.id = r->attempt_id, .kind = 1, .at_ms = r->at_ms};
  enum tw_rc rc = op_attempt_step(s, db, &a, err);
  if (rc || !r->note || !r->job_id)
    return rc;
  struct note_arg na = {.id = r->job_id, .reason = r->note};
  struct tw_err nerr = {0};
  if (exec_simple(&s->w, SQL_SAVEPOINT, &nerr) == TW_OK) {
    if (op_note(s, db, &na, &nerr)) {
      exec_simple(&s->w, SQL_ROLLBACK_TO, NULL);
      tw_log_warn("store", "job=%s note not recorded: %s", r->job_id,
                  nerr.msg);
    }
    exec_simple(&s->w, SQL_RELEASE, NULL);
  }
  return TW_OK;
}

void tw_store_attempt_running_many(struct tw_store *s,
                                   const struct tw_attempt_running *rs,
                                   size_t n, enum tw_rc *rcs,
                                   struct tw_err *errs) {
  void **args = tw_calloc(n ? n : 1, sizeof *args);
  for (size_t i = 0; i < n; i++)
    args[i] = (void *)&rs[i];
  tw_store_write_many(s, op_running_noted, args, n, rcs, errs);
  free(args);
}

/* ---- module schemas and statements ----------------------------------------
 */

static struct conn *conn_of(struct tw_store *s, struct tw_db *db) {
  if (s->w.db == db)
    return &s->w;
  for (int i = 0; i < s->n_readers; i++)
    if (s->readers[i].db == db)
      return &s->readers[i];
  return NULL;
}

struct tw_db_stmt *tw_store_stmt(struct tw_store *s, struct tw_db *db,
                                   const char *sql, struct tw_err *err) {
  struct conn *c = conn_of(s, db);
  if (!c) {
    tw_err_set(err, TW_E_INTERNAL,
               "store: statement asked for an unknown connection");
    return NULL;
  }
  return prep(c, sql, err);
}

enum tw_rc tw_store_read(struct tw_store *s, tw_store_read_fn fn, void *arg,
                         struct tw_err *err) {
  struct conn *c = reader_get(s);
  enum tw_rc rc = fn(s, c->db, arg, err);
  reader_put(s, c);
  return rc;
}

static const char SQL_MODULE_VERSION[] =
    "SELECT version FROM schema_modules WHERE name = ?1";
static const char SQL_MODULE_SET[] =
    "INSERT INTO schema_modules (name, version) VALUES (?1, ?2)"
    " ON CONFLICT (name) DO UPDATE SET version = excluded.version";

struct migrate_arg {
  const char *module;
  const char *sql;
  int version;
};

static enum tw_rc op_module_step(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  struct migrate_arg *a = varg;
  char *msg = NULL;
  /* the migration's text is constant SQL of the module, as ours is */
  if (tw_db_exec(db, a->sql, &msg) != TW_DB_OK) {
    enum tw_rc rc =
        tw_err_set(err, TW_E_IO, "store: %s migration %d failed: %s", a->module,
                   a->version, msg ? msg : "?");
    tw_db_free(msg);
    return rc;
  }
  struct tw_db_stmt *st = prep(&s->w, SQL_MODULE_SET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->module, -1);
  tw_db_bind_int(st, 2, a->version);
  return step_done(&s->w, st, "record module version", err);
}

static enum tw_rc read_module_version(struct tw_store *s, struct tw_db *db,
                                      void *arg, struct tw_err *err) {
  struct migrate_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_MODULE_VERSION, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, a->module, -1);
  int r = tw_db_step(st);
  a->version = r == TW_DB_ROW ? tw_db_column_int(st, 0) : 0;
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return db_err(db, err, "read module version");
  return TW_OK;
}

enum tw_rc tw_store_migrate_module(struct tw_store *s, const char *module,
                                   const char *const *migrations, int n,
                                   struct tw_err *err) {
  struct migrate_arg a = {.module = module};
  enum tw_rc rc = tw_store_read(s, read_module_version, &a, err);
  if (rc)
    return rc;
  if (a.version > n)
    return tw_err_set(
        err, TW_E_IO,
        "store: module %s is at schema version %d, newer than this build (%d)",
        module, a.version, n);
  if (a.version > 0 && a.version < n &&
      (rc = backup_before(s, module, a.version, err)))
    return rc;
  for (int v = a.version; v < n; v++) {
    struct migrate_arg step = {
        .module = module, .sql = migrations[v], .version = v + 1};
    if ((rc = tw_store_write(s, op_module_step, &step, err)))
      return rc;
    tw_log_info("store", "module=%s migrated to version %d", module, v + 1);
  }
  return TW_OK;
}

/* ---- gangs ------------------------------------------------------------------
 */

static const char SQL_GANG_PUT[] =
    "INSERT INTO attempt_instances (attempt_id, k, instance_id, state) VALUES "
    "(?1, ?2, ?3, ?4)"
    " ON CONFLICT (attempt_id, k) DO UPDATE SET instance_id = "
    "excluded.instance_id,"
    " state = excluded.state";
static const char SQL_GANG_OF[] =
    "SELECT attempt_id, k, instance_id, state FROM attempt_instances"
    " WHERE attempt_id = ?1 ORDER BY k";
static const char SQL_GANG_LIVE[] =
    "SELECT g.attempt_id, g.k, g.instance_id, g.state FROM attempt_instances g"
    " JOIN attempts a ON a.id = g.attempt_id WHERE a.state != 'ended'"
    " ORDER BY g.attempt_id, g.k";

static enum tw_rc op_gang_put(struct tw_store *s, struct tw_db *db, void *arg,
                              struct tw_err *err) {
  const struct tw_attempt_instance *g = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_GANG_PUT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, g->attempt_id);
  tw_db_bind_int(st, 2, g->k);
  tw_db_bind_text(st, 3, g->instance_id, -1);
  tw_db_bind_text(st, 4, g->state, -1);
  int r = tw_db_step(st);
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return db_err(db, err, "record a gang instance");
  return TW_OK;
}

enum tw_rc tw_store_attempt_instance_put(struct tw_store *s, int64_t attempt_id,
                                         int k, const char *instance_id,
                                         const char *state,
                                         struct tw_err *err) {
  struct tw_attempt_instance g = {.attempt_id = attempt_id, .k = k};
  snprintf(g.instance_id, sizeof g.instance_id, "%s", instance_id);
  snprintf(g.state, sizeof g.state, "%s", state);
  return tw_store_write(s, op_gang_put, &g, err);
}

struct gang_read {
  int64_t attempt_id;
  struct tw_attempt_instance *items;
  size_t n, cap;
};

static enum tw_rc op_gang_read(struct tw_store *s, struct tw_db *db, void *arg,
                               struct tw_err *err) {
  struct gang_read *a = arg;
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, a->attempt_id ? SQL_GANG_OF : SQL_GANG_LIVE, err);
  if (!st)
    return TW_E_IO;
  if (a->attempt_id)
    tw_db_bind_int64(st, 1, a->attempt_id);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 8;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_attempt_instance *g = &a->items[a->n++];
    memset(g, 0, sizeof *g);
    g->attempt_id = tw_db_column_int64(st, 0);
    g->k = tw_db_column_int(st, 1);
    const unsigned char *t = tw_db_column_text(st, 2);
    snprintf(g->instance_id, sizeof g->instance_id, "%s",
             t ? (const char *)t : "");
    t = tw_db_column_text(st, 3);
    snprintf(g->state, sizeof g->state, "%s", t ? (const char *)t : "");
  }
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return db_err(db, err, "list gang instances");
  return TW_OK;
}

enum tw_rc tw_store_attempt_instances(struct tw_store *s, int64_t attempt_id,
                                      struct tw_attempt_instance **out,
                                      size_t *n, struct tw_err *err) {
  struct gang_read a = {.attempt_id = attempt_id};
  enum tw_rc rc = tw_store_read(s, op_gang_read, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}
