/* live.h - the live attempts, kept in memory from the store's changes.
 *
 * The scheduler (every pass) and the meter (every tick) each need every
 * attempt not yet ended; reading them whole each time made a pass cost as
 * much as everything live.  A tw_live holds them in ascending id order and
 * is brought up to date by tw_live_sync(): read whole the first time,
 * when the store no longer holds every change since the last look, and
 * at least every full_every_ms (the feed tells this process's writes
 * only: another replica's on the same database are seen then); otherwise
 * only the attempts the changes name are read again.
 *
 * Threads: none of its own; one caller at a time per tw_live. */
#ifndef TW_CORE_LIVE_H
#define TW_CORE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/store.h"

struct tw_live {
  struct tw_attempt_rec *at; /* ascending id */
  size_t n, cap;
  uint64_t cursor; /* the store's change feed */
  bool have;       /* read whole at least once, and not failed since */
  int64_t full_ms; /* the caller's clock: when last read whole */
};

/* What one tw_live_sync() did. */
struct tw_live_sync {
  bool whole;   /* read whole */
  bool changed; /* whole, or an attempt named became, stayed or left live */
  bool dropped; /* an attempt held left the set (not when whole) */
  bool ended;   /* an attempt named is not live, held or not (ditto) */
  /* not when whole: the changes that name a job and no attempt (a job
   * that ended), oldest first; free() it */
  struct tw_store_change *jobs;
  size_t n_jobs;
};

/* Brings l up to date with store s at now_ms (any clock, the caller's;
 * one going back reads whole).  A failed read of the named attempts falls
 * back to a whole read; when that fails too the error is returned, l
 * keeps what it held and reads whole next time.  *out is always set. */
enum tw_rc tw_live_sync(struct tw_live *l, struct tw_store *s, int64_t now_ms,
                        int64_t full_every_ms, struct tw_live_sync *out,
                        struct tw_err *err);

/* Where attempt id is in l->at, or where it would go. */
size_t tw_live_pos(const struct tw_live *l, int64_t id);

/* Attempt id as held, or NULL. */
const struct tw_attempt_rec *tw_live_find(const struct tw_live *l, int64_t id);

void tw_live_release(struct tw_live *l);

#endif
