/* store.h - the store: embedded sqlite in WAL mode (the default), or a
 * PostgreSQL database shared by several brokers (docs/ha.md).
 *
 * One writer thread owns the write connection.  Callers hand it write
 * operations and block until the transaction holding theirs has committed:
 * writes that arrive together commit together (group commit), so a burst of
 * N concurrent submissions costs one fsync, not N, and each caller still
 * gets its answer only after its row is durable.  Each operation runs inside
 * its own SAVEPOINT, so one failing operation never undoes its neighbours.
 * Reads use a small pool of read connections (WAL readers never block
 * the writer).  All functions are thread-safe.
 *
 * The store layer is broker/core/store*.c and the database interface
 * under it, broker/core/db*.c: the only files that may include sqlite3.h
 * or call sqlite3_* (test_sql_owner checks it, with no exceptions; libpq
 * only in db_pg.c).  Modules above call typed functions (structs in,
 * structs out) declared in broker/core/store*.h.  SQL is kept as
 * constant text in the store*.c file of its table group beside the code
 * that binds it, in sqlite's dialect restricted to what PostgreSQL reads
 * the same way; db_pg.c translates the rest (placeholders, INSERT OR
 * IGNORE, DDL types).  The backend is chosen at tw_store_open(); the
 * callers do not change. */
#ifndef TW_BROKER_STORE_H
#define TW_BROKER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/core/db.h"
#include "broker/core/job.h"

struct tw_store;
struct tw_db;

struct tw_store_opts {
  /* TW_DB_SQLITE (0, the default): the file at path.  TW_DB_POSTGRES:
   * the database of the libpq connection string dsn, with password
   * (NULL: none or ~/.pgpass; never logged).  docs/ha.md. */
  enum tw_db_backend backend;
  const char *dsn;
  const char *password;
  int64_t txn_timeout_ms; /* postgres: tw_db_opts.txn_timeout_ms */
  const char *path;       /* sqlite file; created when absent */
  struct tw_clock *clock; /* NULL: the real clock */
  bool sync_full;         /* PRAGMA synchronous=FULL (default) vs NORMAL */
  int max_batch;          /* operations per transaction; 0: 512 */
  int readers;            /* read connections; 0: 8 */
  /* Take PATH.lock (flock, held until close) so that a second daemon on
   * the same file is refused with TW_E_CONFLICT naming the holder's pid,
   * and copy the file to PATH.pre-migration-vN.bak (tw_store_backup)
   * before the first migration of an existing schema.  The daemon sets
   * it; tools that read a database beside a running daemon do not. */
  bool exclusive;
};

/* Opens the store, starts its writer thread and migrates every table: the
 * core's, then each module's in the order of store_schema.c.  A database
 * this build cannot bring up to date (a newer schema, a migration that
 * fails) is refused with TW_E_IO and a message naming the module and the
 * step; nothing is left open.  *out is owned; tw_store_close() it. */
enum tw_rc tw_store_open(const struct tw_store_opts *opts,
                         struct tw_store **out, struct tw_err *err);
/* The backend the store was opened on. */
enum tw_db_backend tw_store_backend(const struct tw_store *s);
/* Finishes queued writes, stops the writer, closes every connection.
 * NULL is a no-op. */
void tw_store_close(struct tw_store *s);

/* Copies the database at db_path to dest with sqlite's online backup API:
 * consistent even while a daemon writes, dest written as dest.partial
 * (mode 0600) and renamed into place once complete, in rollback-journal
 * mode so it stands alone. */
enum tw_rc tw_store_backup(const char *db_path, const char *dest,
                           struct tw_err *err);

/* The schema version this build migrates to (PRAGMA user_version). */
int tw_store_schema_version(void);

/* ---- jobs -------------------------------------------------------------- */

#define TW_JOB_ID_LEN 28 /* "j-" + 26 characters, time-ordered */

struct tw_job_rec {
  int64_t seq;
  char id[TW_JOB_ID_LEN + 1];
  char *name, *tenant, *project; /* owned */
  enum tw_job_state state;
  char *reason; /* owned, never NULL */
  int priority;
  char *spec_json;      /* canonical spec (owned) */
  char *placement_json; /* owned; NULL until placed */
  bool has_exit_code;
  int exit_code;
  int64_t created_ms, updated_ms;
};

void tw_job_rec_release(struct tw_job_rec *r);

struct tw_flow_plan;
struct tw_job_new {
  const char *name, *tenant, *project;
  int priority;
  const char *spec_json; /* canonical JSON of the validated spec */
  const char *idem_key;  /* NULL: none */
  const char *traceparent; /* W3C trace context its spans join (module
                              "trace", store_obs.h); NULL: none */
  /* its depends_on (broker/core/flow.h, tw_flow_plan_from_spec), NULL:
   * none; the job is stored waiting on it (store_flow.h) */
  const struct tw_flow_plan *flow;
};

/* Stores a new pending job with its first event, durably, before
 * returning.  With an idempotency key already used by the same tenant:
 * the same spec returns the stored job with *replayed = true; another spec
 * returns TW_E_CONFLICT. */
enum tw_rc tw_store_job_create(struct tw_store *s, const struct tw_job_new *req,
                               struct tw_job_rec *out, bool *replayed,
                               struct tw_err *err);

/* TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_job_get(struct tw_store *s, const char *id,
                            struct tw_job_rec *out, struct tw_err *err);

struct tw_job_filter {
  const char *state;  /* NULL: any */
  const char *tenant; /* NULL: any */
  const char *provider; /* NULL: any; else the placement's provider */
  int64_t before_seq; /* 0: from the newest; else only seq < before_seq */
  int limit;          /* 1..500 */
};

/* Newest first.  *out is an array of *n records (free each with
 * tw_job_rec_release, then free() the array).  *next_before is the seq to
 * pass as before_seq for the next page, or 0 when this was the last. */
enum tw_rc tw_store_job_list(struct tw_store *s, const struct tw_job_filter *f,
                             struct tw_job_rec **out, size_t *n,
                             int64_t *next_before, struct tw_err *err);

/* Moves a job to `to`, validated by tw_job_transition_check() against its
 * current state inside the write transaction, and records the event.
 * placement_json and exit_code (when has_exit) are stored if given.  On
 * success *out (if non-NULL) holds the updated job. */
struct tw_job_transition {
  const char *id;
  enum tw_job_state to;
  const char *reason;
  const char *placement_json; /* NULL: unchanged */
  bool has_exit;
  int exit_code;
};
enum tw_rc tw_store_job_transition(struct tw_store *s,
                                   const struct tw_job_transition *t,
                                   struct tw_job_rec *out, struct tw_err *err);

struct tw_job_event {
  int64_t seq;
  int64_t at_ms;
  bool has_from;
  enum tw_job_state from, to;
  char *reason; /* owned */
};

/* Oldest first; TW_E_NOTFOUND when the job does not exist.  free() each
 * reason and the array. */
enum tw_rc tw_store_job_events(struct tw_store *s, const char *id,
                               struct tw_job_event **out, size_t *n,
                               struct tw_err *err);

/* counts[state] = number of jobs in that state. */
enum tw_rc tw_store_job_counts(struct tw_store *s,
                               int64_t counts[TW_JOB_NSTATES],
                               struct tw_err *err);

/* ---- generic write operations ------------------------------------------ */

/* Runs fn inside the next group-committed transaction (in its own
 * savepoint) and returns its result once that transaction is durable.  fn
 * runs on the writer thread; it must use only db and its arg.  Later
 * modules (attempts, ledger, audit) add their writes through this. */
typedef enum tw_rc (*tw_store_write_fn)(struct tw_store *s, struct tw_db *db,
                                        void *arg, struct tw_err *err);
enum tw_rc tw_store_write(struct tw_store *s, tw_store_write_fn fn, void *arg,
                          struct tw_err *err);
/* tw_store_write of fn on each of the n args, queued at once so that they
 * commit in one transaction (up to max_batch operations each), every one
 * in its own savepoint: rcs[i] (and errs[i], errs may be NULL) is args[i]'s
 * own outcome.  Returns once all are durable or failed. */
void tw_store_write_many(struct tw_store *s, tw_store_write_fn fn,
                         void *const *args, size_t n, enum tw_rc *rcs,
                         struct tw_err *errs);

/* tw_store_write_async's answer, called on the writer thread once the
 * transaction that held the write has ended: rc is its outcome (TW_OK:
 * durable; else the write's err says why).  It must be quick and must
 * not call the store (the writer would wait for itself). */
typedef void (*tw_store_done_fn)(void *ctx, enum tw_rc rc);
/* tw_store_write without waiting: fn(arg) is queued for the next group
 * commit and done(ctx, rc) called once its transaction has ended, so a
 * caller with more to do (a provider worker and its next call) is not held
 * for the commit, and the writes of many such callers share one.  arg and
 * err (may be NULL) must live until done is called.  TW_OK when queued;
 * else (the store closing) the error, and done is not called. */
enum tw_rc tw_store_write_async(struct tw_store *s, tw_store_write_fn fn,
                                void *arg, struct tw_err *err,
                                tw_store_done_fn done, void *ctx);

/* One write of tw_store_write_ops(): fn on arg. */
struct tw_store_op {
  tw_store_write_fn fn;
  void *arg;
};
/* tw_store_write_many of different functions: each ops[i].fn on its arg,
 * queued at once and in order, so that they commit in one transaction
 * (up to max_batch operations each), every one in its own savepoint:
 * rcs[i] (and errs[i]; errs may be NULL) is ops[i]'s own outcome.
 * Returns once all are durable or failed. */
void tw_store_write_ops(struct tw_store *s, const struct tw_store_op *ops,
                        size_t n, enum tw_rc *rcs, struct tw_err *errs);

/* Statistics for /metrics and the benchmark. */
struct tw_store_stats {
  uint64_t commits;   /* transactions committed */
  uint64_t ops;       /* write operations committed */
  uint64_t max_batch; /* largest batch so far */
  uint64_t job_reads; /* one job's row read by id (tw_store_job_get) */
};
void tw_store_stats(struct tw_store *s, struct tw_store_stats *out);

/* Whether writes commit: TW_OK, or the class of the storage failure in
 * force: TW_E_FULL (SQLITE_FULL, the disk is full) or TW_E_IO (sqlite's
 * I/O class) from the first write or commit that failed on the storage
 * until a later transaction commits a write that changed a row.  *since_ms (may
 * be NULL) gets the time of that first failure.  A write that failed so
 * returned TW_E_FULL, or TW_E_IO with detail TW_DETAIL_STORE_IO, to its
 * caller, and nothing of it is on disk: a write is acknowledged only
 * after its transaction committed.  Any thread; for /readyz. */
enum tw_rc tw_store_write_health(struct tw_store *s, int64_t *since_ms);

/* The store's health as /readyz and /metrics tell it. */
enum tw_store_health_state {
  TW_STORE_STARTING, /* no write committed since the store was opened */
  TW_STORE_OK,       /* the last write on the storage committed */
  TW_STORE_FULL,     /* writes fail: the disk is full */
  TW_STORE_IO        /* writes fail: the storage reports I/O errors */
};
struct tw_store_health {
  enum tw_store_health_state state;
  int64_t unhealthy_since_ms;    /* first failure of FULL/IO; else 0 */
  int64_t last_commit_ms;        /* last write committed since open; 0 none */
  uint64_t consecutive_failures; /* transactions failed on the storage in a
                                    row since the last commit */
  int64_t last_probe_ms;         /* last tw_store_probe*; 0 none */
};
/* Any thread. */
void tw_store_health(struct tw_store *s, struct tw_store_health *out);
const char *tw_store_health_state_str(enum tw_store_health_state st);

/* A write that proves the store can commit: it takes PROBE_BYTES (32 KiB)
 * of new room in one transaction and gives it back, so it fails on a disk
 * too full for a job's write.  The daemon probes once at start, so a
 * quiet broker is ready without waiting for a submission. */
enum tw_rc tw_store_probe(struct tw_store *s, struct tw_err *err);
/* Probes when the store is not OK (starting, full, I/O errors) and no
 * probe ran in the last min_interval_ms: a broker that nobody writes to
 * becomes ready again once space returns.  Returns whether it probed.
 * For /readyz; any thread (it waits for the writer). */
bool tw_store_probe_if_unready(struct tw_store *s, int64_t min_interval_ms);

/* For tests only: caps the database at its current size (PRAGMA
 * max_page_count on the write connection), so the next write that needs
 * a new page fails with SQLITE_FULL as on a full disk; cap false lifts
 * the cap.  The daemon never calls it. */
enum tw_rc tw_store_test_cap_pages(struct tw_store *s, bool cap,
                                   struct tw_err *err);

/* ---- attempts ------------------------------------------------------------
 *
 * An attempt is one launch of a job on one offer.  It is written before the
 * provider is called, with its client token, so a launch that was sent but
 * whose answer was lost (timeout, daemon killed) is retried with the same
 * token and never buys a second instance. */

enum tw_attempt_state {
  /* Written before the call; the provider may or may not have it.  An
   * attempt stays here until a definite answer: an instance (launched, or
   * found by its client token), or a refusal (capacity, quota, invalid,
   * auth).  A timeout or a lost connection is no answer (docs/spot.md,
   * "Attempt states"). */
  TW_ATTEMPT_LAUNCHING = 0,
  TW_ATTEMPT_PROVISIONING, /* the provider returned an instance */
  TW_ATTEMPT_RUNNING,
  TW_ATTEMPT_ENDED
};

struct tw_attempt_rec {
  int64_t id; /* store-wide sequence */
  char job_id[TW_JOB_ID_LEN + 1];
  int n;                 /* 1, 2, ... within the job */
  char client_token[48]; /* "<job id>-<n>" */
  char provider[64];     /* account name of the provider */
  char offer_id[192];
  char market[16]; /* "spot" | "on-demand" */
  int64_t price_uusd_per_hour;
  char instance_id[128]; /* "" until launched */
  enum tw_attempt_state state;
  char end_reason[32]; /* completed interrupted capacity failed
                          cancelled; "" while live */
  int64_t started_ms, running_ms, ended_ms; /* 0 when not yet */
};

const char *tw_attempt_state_str(enum tw_attempt_state s);

struct tw_attempt_new {
  const char *job_id;
  const char *provider, *offer_id, *market;
  int64_t price_uusd_per_hour;
  const char *reason; /* for the job's event when it moves */
};

/* Opens attempt n+1 of a pending, placing or recovering job; a pending job
 * moves to placing in the same transaction (a recovering one stays
 * recovering until launched).  TW_E_CONFLICT when the job is in any other
 * state (cancelled meanwhile, say), or when one of its attempts is still
 * live: a job has one live attempt at a time. */
enum tw_rc tw_store_attempt_open(struct tw_store *s,
                                 const struct tw_attempt_new *req,
                                 struct tw_attempt_rec *out,
                                 struct tw_err *err);
/* tw_store_attempt_open of each of the n requests, in one transaction
 * (tw_store_write_many): outs[i], rcs[i] and errs[i] (errs may be NULL)
 * are reqs[i]'s. */
void tw_store_attempt_open_many(struct tw_store *s,
                                const struct tw_attempt_new *reqs,
                                struct tw_attempt_rec *outs, size_t n,
                                enum tw_rc *rcs, struct tw_err *errs);
/* tw_store_attempt_open as one operation of tw_store_write_ops(), beside
 * writes of other kinds in the same transaction: arg is a struct
 * tw_store_attempt_open. */
struct tw_store_attempt_open {
  const struct tw_attempt_new *req;
  struct tw_attempt_rec *out;
};
enum tw_rc tw_store_attempt_open_op(struct tw_store *s, struct tw_db *db,
                                    void *arg, struct tw_err *err);

/* The provider returned instance_id: the attempt is provisioning and the
 * job moves placing (or recovering; pending through placing) ->
 * provisioning with its placement.  TW_E_CONFLICT when the attempt is no
 * longer launching. */
enum tw_rc tw_store_attempt_launched(struct tw_store *s, int64_t attempt_id,
                                     const char *instance_id,
                                     const char *placement_json,
                                     struct tw_err *err);

/* tw_store_attempt_launched as one write function (tw_store_write,
 * tw_store_write_async, tw_store_write_ops): arg is a struct
 * tw_store_launched.  With audit set, that entry is appended in the same
 * transaction (tw_store_audit_append_in), so the launch and the entry
 * that records it commit together, or neither does. */
struct tw_audit_event;
struct tw_store_launched {
  int64_t attempt_id;
  const char *instance_id;
  const char *placement_json;
  const struct tw_audit_event *audit; /* NULL: none */
  int64_t audit_at_ms;
};
enum tw_rc tw_store_attempt_launched_op(struct tw_store *s, struct tw_db *db,
                                        void *arg, struct tw_err *err);

/* The instance runs: attempt running, job provisioning -> running.
 * running_ms is recorded as now. */
/* Attempts seen running, in one transaction (tw_store_write_many): each
 * as tw_store_attempt_running_at, then, when note is set and the step
 * was made, job_id noted with it (tw_store_job_note).  rcs[i] (and
 * errs[i]; errs may be NULL) are the step's. */
struct tw_attempt_running {
  int64_t attempt_id;
  int64_t at_ms; /* the provider's time; 0: now */
  const char *job_id, *note; /* note NULL: none */
};
void tw_store_attempt_running_many(struct tw_store *s,
                                   const struct tw_attempt_running *rs,
                                   size_t n, enum tw_rc *rcs,
                                   struct tw_err *errs);
enum tw_rc tw_store_attempt_running(struct tw_store *s, int64_t attempt_id,
                                    struct tw_err *err);
/* The same, recording when the provider says the instance started
 * running (struct tw_instance.running_ms; billing follows it): at_ms,
 * kept within [the attempt's start, now]; 0: now. */
enum tw_rc tw_store_attempt_running_at(struct tw_store *s, int64_t attempt_id,
                                       int64_t at_ms, struct tw_err *err);

/* Ends the attempt with end_reason and, when job_to is not
 * TW_JOB_NSTATES, moves the job there (validated) with job_reason and the
 * exit code when has_exit.  The attempt is ended even if the job's move is
 * refused because the job already finished (cancelled meanwhile).  With
 * only_launching, an attempt that is no longer launching (the reconciler
 * adopted its instance meanwhile, or it ended) is left as it is and
 * TW_E_CONFLICT returned: a refusal that arrives after an adoption must
 * not end the attempt that now owns the instance. */
struct tw_attempt_close {
  int64_t attempt_id;
  const char *end_reason;
  enum tw_job_state job_to; /* TW_JOB_NSTATES: leave the job alone */
  const char *job_reason;
  bool has_exit;
  int exit_code;
  bool only_launching;
  /* The provider's (or the workload's own) times, which billing follows:
   * ran_from_ms, when an attempt never recorded running did run at the
   * provider (cancelled right after it started: it is still charged);
   * ended_at_ms, when it stopped running there.  Both are kept within
   * [the attempt's start, now]; 0: unknown (not run; ended now). */
  int64_t ran_from_ms;
  int64_t ended_at_ms;
};
enum tw_rc tw_store_attempt_close(struct tw_store *s,
                                  const struct tw_attempt_close *c,
                                  struct tw_err *err);

/* Every attempt not yet ended, oldest first (the monitor's work list).
 * free() the array. */
enum tw_rc tw_store_attempts_live(struct tw_store *s,
                                  struct tw_attempt_rec **out, size_t *n,
                                  struct tw_err *err);
/* What the committed writes of this store changed that a follower of the
 * live attempts must read again: an attempt opened or moved (attempt_id
 * > 0), or a job moved to a terminal state (attempt_id 0, job_id). */
struct tw_store_change {
  int64_t attempt_id;
  char job_id[TW_JOB_ID_LEN + 1];
};
/* The changes committed through this store since *cursor, oldest first,
 * into *out (free() it), *cursor moved past them.  False when they are
 * not all known (a *cursor of 0, or one older than the changes kept): the
 * caller reads what it follows afresh, having taken *cursor first, so
 * that what commits meanwhile comes with the next call.  Writes of other
 * processes on the same database are not seen: a follower reads afresh
 * now and then. */
bool tw_store_changes_since(struct tw_store *s, uint64_t *cursor,
                            struct tw_store_change **out, size_t *n);
/* The attempts ids[0..n) as stored now, into out[] (found[i] false: none
 * with that id). */
enum tw_rc tw_store_attempts_by_id(struct tw_store *s, const int64_t *ids,
                                   size_t n, struct tw_attempt_rec *out,
                                   bool *found, struct tw_err *err);
/* The ids of the live attempts whose job has ended (succeeded, failed or
 * cancelled), ascending, in one read: the scheduler's pass reads the job
 * of only these and of the attempts it must decide on.  free() *out. */
enum tw_rc tw_store_attempts_live_ended(struct tw_store *s, int64_t **out,
                                        size_t *n, struct tw_err *err);
/* A job's attempts, oldest first; free() the array. */
enum tw_rc tw_store_attempts_of(struct tw_store *s, const char *job_id,
                                struct tw_attempt_rec **out, size_t *n,
                                struct tw_err *err);

/* Jobs in a state, in queue order: priority (high first), then age.  For
 * the scheduler.  Release as tw_store_job_list's. */
enum tw_rc tw_store_jobs_queued(struct tw_store *s, enum tw_job_state state,
                                int limit, struct tw_job_rec **out, size_t *n,
                                struct tw_err *err);

/* Records an event on a job without changing its state (a provider notice,
 * a placement decision).  from and to are the job's current state. */
enum tw_rc tw_store_job_note(struct tw_store *s, const char *job_id,
                             const char *reason, struct tw_err *err);
/* Several notes in one transaction (one commit instead of one each), for
 * the scheduler's pass: each as tw_store_job_note, except that a job not
 * found is skipped, and nothing is read back (a job whose reason is the
 * text already keeps it, and no event).  On a failure none is written. */
struct tw_job_note {
  const char *job_id, *reason;
};
enum tw_rc tw_store_job_note_many(struct tw_store *s,
                                  const struct tw_job_note *notes, size_t n,
                                  struct tw_err *err);
/* Start-up work of a scheduler's pass done before its first one: the
 * statements of the queue's reads (the window, live attempts, a job's
 * attempts, a job by id) prepared on every reader connection, and those
 * of tw_store_job_note_many on the writer (one empty transaction).  A
 * reader busy elsewhere is waited for.  sqlite: the same, and cheap. */
enum tw_rc tw_store_warm(struct tw_store *s, struct tw_err *err);

/* ---- module schemas and statements ------------------------------------------
 *
 * Every table of every module is created here, in the store layer:
 * broker/core/store_schema.c holds each module's migrations (catalog,
 * ledger, meter, audit, tenancy, secrets, spot, reconcile, ...), numbered
 * from 1 per module, the version reached kept in the table schema_modules
 * so modules never contend for PRAGMA user_version.  tw_store_open()
 * applies them all in a fixed order and fails, naming the module and the
 * step, when one cannot be applied; nothing migrates lazily later.  Writes
 * go through tw_store_write() (group-committed like every write) and reads
 * through tw_store_read(); inside either, tw_store_stmt() hands out a
 * cached prepared statement for constant SQL text. */

/* Applies the migrations of `module` that this database lacks, each in its
 * own transaction.  tw_store_open() calls it for every module of
 * store_schema.c; tests use it for modules of their own.  A database whose
 * module version is newer than n is refused (TW_E_IO). */
enum tw_rc tw_store_migrate_module(struct tw_store *s, const char *module,
                                   const char *const *migrations, int n,
                                   struct tw_err *err);

/* Runs fn with a read-only connection of the pool (WAL: sees the last
 * commit, never blocks the writer). */
typedef enum tw_rc (*tw_store_read_fn)(struct tw_store *s, struct tw_db *db,
                                       void *arg, struct tw_err *err);
enum tw_rc tw_store_read(struct tw_store *s, tw_store_read_fn fn, void *arg,
                         struct tw_err *err);

/* Inside a tw_store_write or tw_store_read function only: the prepared
 * statement for sql (constant text; cached by its address, reset and
 * cleared), or NULL with err set. */
struct tw_db_stmt *tw_store_stmt(struct tw_store *s, struct tw_db *db,
                                   const char *sql, struct tw_err *err);

/* ---- gangs: the instances of one attempt -----------------------------------
 *
 * A gang (spec `nodes: N` > 1 on a cloud) is one attempt with N instances,
 * node k launched with the client token "<attempt token>-<k>".  Its
 * instances are kept in the module table attempt_instances (module "gang");
 * attempts.instance_id stays the first one so readers of one instance per
 * attempt keep working. */

struct tw_attempt_instance {
  int64_t attempt_id;
  int k; /* 1..N */
  char instance_id[128];
  char state[16]; /* "launched" | "running" | "terminated" */
};

/* Records (or replaces) node k of attempt_id. */
enum tw_rc tw_store_attempt_instance_put(struct tw_store *s, int64_t attempt_id,
                                         int k, const char *instance_id,
                                         const char *state, struct tw_err *err);

/* The nodes of attempt_id (attempt_id > 0), or of every attempt not yet
 * ended (attempt_id 0), by attempt then k.  free() the array. */
enum tw_rc tw_store_attempt_instances(struct tw_store *s, int64_t attempt_id,
                                      struct tw_attempt_instance **out,
                                      size_t *n, struct tw_err *err);

#endif
