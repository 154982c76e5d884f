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

/* store_audit.c: appends one audit entry inside the transaction of the
 * calling write function (writer thread), linked to the last entry, so
 * the change it records and the entry commit together.  *seq_out may be
 * NULL. */
struct tw_audit_event;
enum tw_rc store__audit_append(struct tw_store *s, struct tw_db *db,
                               const struct tw_audit_event *ev, int64_t at_ms,
                               int64_t *seq_out, struct tw_err *err);

/* store.c: inside a write function, on PostgreSQL, waits for (and holds
 * until the commit) the lease row's lock, so that a check-then-write of
 * state every replica shares (the audit chain's last entry, the first
 * admin) runs for one broker at a time, as sqlite's single writer runs
 * it.  sqlite: nothing. */
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
