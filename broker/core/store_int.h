/* store_int.h - what the files of the store layer (broker/core/store*.c)
 * share and nobody else: the module schema list and small sqlite helpers.
 * Only store*.c include it (and sqlite3.h). */
#ifndef TW_CORE_STORE_INT_H
#define TW_CORE_STORE_INT_H

#include "broker/core/db.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/core/store.h"

/* One module's migrations, numbered from 1 (store_schema.c). */
struct tw_store_module {
  const char *name;
  const char *const *migrations;
  int n_migrations;
};
extern const struct tw_store_module TW_STORE_MODULES[];
extern const size_t TW_STORE_N_MODULES;

/* Applies every module's missing migrations in the order of
 * TW_STORE_MODULES; the first failure stops and names the module and the
 * step ("store: ledger migration 1 failed: ..."). */
enum tw_rc store__migrate_all(struct tw_store *s, struct tw_err *err);

/* store_agent.c: the agent's output beside a sqlite file's database, in
 * append-only segment files (NULL for PostgreSQL and in-memory stores:
 * the output stays in rows).  Opened with the store, closed with it. */
struct store_logs;
struct store_logs *store__logs_open(const char *db_path, bool sync);
void store__logs_close(struct store_logs *l);
struct store_logs *store__logs(struct tw_store *s);
/* On the writer, inside an operation: job id moved to a terminal state,
 * told to tw_store_changes_since() once the batch's transaction ends. */
void store__job_ended(struct tw_store *s, const char *job_id);

/* store_obs.c: the last reading of /metrics' figures (tw_store_gauges),
 * made with the store and freed with it. */
struct store_gauges;
struct store_gauges *store__gauges_new(void);
void store__gauges_free(struct store_gauges *g);
struct store_gauges *store__gauges(struct tw_store *s);

/* TW_E_IO with sqlite's message, copied at once. */
enum tw_rc store__db_err(struct tw_db *db, struct tw_err *err, const char *what);
/* Steps a statement that returns no row; TW_E_IO otherwise. */
enum tw_rc store__step_done(struct tw_db *db, struct tw_db_stmt *st, const char *what,
                            struct tw_err *err);
/* Binds text, NULL as "". */
void store__bind_text(struct tw_db_stmt *st, int i, const char *s);
/* Binds text, NULL as SQL NULL (an optional filter). */
void store__bind_opt(struct tw_db_stmt *st, int i, const char *s);
/* Copies column i into out ("" for NULL), truncating. */
void store__col(struct tw_db_stmt *st, int i, char *out, size_t outsz);

/* store.c: what a new job's write needs that does not depend on the
 * database (the spec's digest for the idempotency check, the random part
 * of the id), computed by the caller's thread before tw_store_write():
 * the writer thread is the one every submission waits for. */
struct store_job_prep {
  char hash[65];
  unsigned char rnd[10];
  /* the job's record outlives the write (the caller's, read after its
   * commit): its seq may be filled when the batch reads its next answer
   * (tw_db_step_into); false: at once */
  bool seq_later;
};
enum tw_rc store__job_prepare(struct tw_store *s, const struct tw_job_new *req,
                              struct store_job_prep *out, struct tw_err *err);
/* store.c: tw_store_job_create's work inside the calling write function
 * (writer thread), so a write that records more about the new job (its
 * owner, its audit entry: store_tenancy.c) commits with it.  *out is
 * filled on TW_OK (the stored job on a replay, with *replayed true; the
 * caller releases it on any failure). */
enum tw_rc store__job_insert(struct tw_store *s, const struct tw_job_new *req,
                             const struct store_job_prep *jp,
                             struct tw_job_rec *out, bool *replayed,
                             struct tw_err *err);
/* store.c: *r filled as a new job id in state, created now_ms (its seq
 * left to the caller), as store__job_insert fills it. */
void store__job_rec_new(struct tw_job_rec *r, const struct tw_job_new *req,
                        const char *id, enum tw_job_state state,
                        int64_t now_ms);

/* store_audit.c: appends one audit entry inside the transaction of the
 * calling write function (writer thread), linked to the last entry, so
 * the change it records and the entry commit together.  The entry is
 * queued with the number of the batch's operation running now (struct
 * store_audit_q) and written by store__audit_flush() at the end of the
 * batch, before its COMMIT: the chain's head is read and advanced once
 * per batch.  *seq_out (may be NULL) is set by that flush, so it must
 * outlive the write function (the caller's, read after the commit). */
struct tw_audit_event;
enum tw_rc store__audit_append(struct tw_store *s, struct tw_db *db,
                               const struct tw_audit_event *ev, int64_t at_ms,
                               int64_t *seq_out, struct tw_err *err);
/* The entries queued during the writer's batch (store.c holds one, the
 * writer sets op before each operation). */
struct store_audit_item;
struct store_audit_q {
  struct store_audit_item *v;
  size_t n, cap;
  int op;
};
struct store_audit_q *store__audit_q(struct tw_store *s);
/* The end of a batch, before its COMMIT: the queued entries of the
 * operations that did not fail (failed(ctx, op) false, asked after every
 * earlier statement's outcome is known), in order, linked to the chain's
 * last entry and inserted.  On PostgreSQL it first takes the chain's
 * transaction lock (one per schema), held until the commit, so the
 * replicas' batches append in turn; nothing else of a batch waits for
 * it.  A failure fails the whole batch.  store__audit_clear drops what
 * is queued (every batch's end). */
enum tw_rc store__audit_flush(struct tw_store *s, struct tw_db *db,
                              bool (*failed)(void *ctx, int op), void *ctx,
                              struct tw_err *err);
void store__audit_clear(struct tw_store *s);

/* store.c: a write that, on PostgreSQL, joins the writes of the same
 * kind next to it in its batch in one statement: no savepoint and no
 * statement of its own.  The writer gathers the run of consecutive such
 * operations (a write of another kind first writes the run before it, so
 * it reads what ran before it, as always) and calls many() on their args;
 * many() marks done[k] for each one it wrote, fills what its caller reads
 * back, and the writer then calls after() on each done one (its audit
 * entry, numbered as that operation) and one() -- the write alone, in its
 * own savepoint -- on each that many() left undone (a conflict that a row
 * of its own decides: an idempotency key already used).  When many()
 * fails, its savepoint is rolled back and every one of the run goes
 * through one().  On sqlite every such write is one() in its savepoint,
 * as any write. */
struct store_group {
  tw_store_write_fn one;
  enum tw_rc (*many)(struct tw_store *s, struct tw_db *db, void *const *args,
                     size_t n, bool *done, struct tw_err *err);
  tw_store_write_fn after;
};
enum tw_rc store__write_grouped(struct tw_store *s, const struct store_group *g,
                                void *arg, struct tw_err *err);

/* store.c: inside a write function, on PostgreSQL, waits for (and holds
 * until the commit) the lease row's lock, so that a check-then-write of
 * state every replica shares (the first admin) runs for one broker at a
 * time, as sqlite's single writer runs it.  sqlite: nothing.  (The audit
 * chain has a lock of its own: store__audit_flush.) */
enum tw_rc store__serialize(struct tw_store *s, struct tw_db *db,
                            struct tw_err *err);

/* store.c: the store's clock, now. */
int64_t store__now_ms(struct tw_store *s);

/* store_flow.c: the hook of store__job_insert for a job with depends_on
 * (tw_job_new.flow): its group of one task and edges, the job moved to
 * waiting (or failed: a dependency that can never be met, with kill)
 * inside the submission's write; *state_out is the job's state after. */
struct tw_flow_plan;
enum tw_rc store__flow_job_created(struct tw_store *s, struct tw_db *db,
                                   const char *job_id,
                                   const struct tw_flow_plan *p,
                                   enum tw_job_state *state_out,
                                   struct tw_err *err);

/* store_backup.c: a path sqlite opens as a file (not :memory: or a URI);
 * the exclusive lock of PATH.lock, its fd or -1 with err set. */
bool tw_store_is_file_path(const char *path);
int tw_store_lock(const char *db_path, struct tw_err *err);

/* A time-ordered id "<prefix>-" + 26 Crockford base32 digits of now_ms's
 * 48 bits and rnd's 80 (store.c): jobs 'j', arrays 'a', workflows 'w'. */
void store__sortable_id(char prefix, int64_t now_ms,
                        const unsigned char rnd[10], char out[29]);

#endif
