/* store_ha.h - the leader lease of several brokers on one database, and
 * the replicas that share it (docs/ha.md).
 *
 * One row holds the lease: its holder, its epoch and when it expires.
 * A replica takes it when it has expired (the epoch goes up by one: a new
 * fencing token) and renews it while it holds it (the epoch stays); both
 * in one conditional UPDATE, so two replicas can never both take the same
 * epoch.  Once leading, the replica fences its store with
 * tw_store_fence(): every transaction of its writer then begins with an
 * UPDATE of the lease row conditioned on that epoch, checked, so a write
 * of a replica whose epoch has moved on is refused whole, before any of
 * it lands (TW_E_CONFLICT, TW_DETAIL_STALE_EPOCH).  On PostgreSQL that
 * UPDATE also locks the row until the commit: a takeover waits for the
 * leader's transaction in flight and every later one sees the new epoch;
 * on sqlite the writer's BEGIN IMMEDIATE orders all writers already. */
#ifndef TW_CORE_STORE_HA_H
#define TW_CORE_STORE_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/store.h"

/* err->detail of a write refused by the fence. */
#define TW_DETAIL_STALE_EPOCH "stale-epoch"

struct tw_lease {
  char holder[128]; /* "" never held */
  int64_t epoch;    /* 0 never held */
  int64_t acquired_ms, renewed_ms, expires_ms;
  int64_t takeovers; /* times the epoch went up */
  bool mine;         /* held by the caller after the call */
};

/* Takes the lease for holder when it has expired at now_ms, or renews it
 * when holder holds it at epoch (epoch 0: the caller holds none), until
 * now_ms + lease_ms.  *out is the row after the call; out->mine says
 * whether holder now leads (at out->epoch). */
enum tw_rc tw_store_lease_try(struct tw_store *s, const char *holder,
                              int64_t epoch, int64_t now_ms, int64_t lease_ms,
                              struct tw_lease *out, struct tw_err *err);
/* Gives the lease up (it expires at once) when holder holds it at epoch:
 * a clean stop hands over without waiting for the lease to run out. */
enum tw_rc tw_store_lease_release(struct tw_store *s, const char *holder,
                                  int64_t epoch, struct tw_err *err);
enum tw_rc tw_store_lease_read(struct tw_store *s, struct tw_lease *out,
                               struct tw_err *err);

/* From now on, every write transaction of s is conditioned on the lease
 * being holder's at epoch (0: no fence, the default).  Any thread. */
void tw_store_fence(struct tw_store *s, const char *holder, int64_t epoch);
/* The epoch s is fenced at: > 0 while this replica leads, 0 otherwise. */
int64_t tw_store_fenced_epoch(struct tw_store *s);
/* Writes refused by the fence since the store opened. */
uint64_t tw_store_fence_refusals(struct tw_store *s);

struct tw_replica {
  char name[128];
  char url[256];
  int64_t started_ms, seen_ms;
  int64_t epoch; /* > 0: it led at that epoch when last seen */
};
/* Records that replica name (serving at url) is alive at now_ms, leading
 * at epoch (0: following). */
enum tw_rc tw_store_replica_beat(struct tw_store *s,
                                 const struct tw_replica *r,
                                 struct tw_err *err);
/* Every replica ever seen, by name; free() the array. */
enum tw_rc tw_store_replicas(struct tw_store *s, struct tw_replica **out,
                             size_t *n, struct tw_err *err);

#endif
