/* store_workdirs.h - the working directories of SkyPilot tasks (tables
 * workdirs and workdir_jobs; docs/skypilot.md, "workdir").  An archive is
 * kept per tenant under its SHA-256, as uploaded (PUT /v1/workdirs/{sha256},
 * checked there); a job that names it holds it, and the sweep removes an
 * archive no job that has not ended holds once it went unused for a while.
 * Thread-safe, as the store. */
#ifndef TW_CORE_STORE_WORKDIRS_H
#define TW_CORE_STORE_WORKDIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;
struct tw_buf;

/* Keeps tenant's archive sha (64 hex digits) of len bytes (data borrowed),
 * used at at_ms; an archive already stored is not written again, only
 * marked used (*created false). */
enum tw_rc tw_store_workdir_put(struct tw_store *s, const char *tenant,
                                const char *sha, const void *data, size_t len,
                                int64_t at_ms, bool *created,
                                struct tw_err *err);

/* Whether tenant has archive sha; *size its length when it has. */
enum tw_rc tw_store_workdir_has(struct tw_store *s, const char *tenant,
                                const char *sha, bool *found, int64_t *size,
                                struct tw_err *err);

/* Job job_id of tenant holds archive sha (marked used at at_ms).
 * TW_E_NOTFOUND when the tenant has no such archive. */
enum tw_rc tw_store_workdir_hold(struct tw_store *s, const char *job_id,
                                 const char *tenant, const char *sha,
                                 int64_t at_ms, struct tw_err *err);

/* Appends tenant's archive sha to out; TW_E_NOTFOUND when absent. */
enum tw_rc tw_store_workdir_get(struct tw_store *s, const char *tenant,
                                const char *sha, struct tw_buf *out,
                                struct tw_err *err);

/* Forgets what ended jobs held, then removes every archive no job holds
 * that was last used before unused_before_ms; *removed the archives
 * removed (may be NULL). */
enum tw_rc tw_store_workdir_sweep(struct tw_store *s, int64_t unused_before_ms,
                                  int64_t *removed, struct tw_err *err);

#endif
