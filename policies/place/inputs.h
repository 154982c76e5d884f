/* inputs.h - what placement reads besides the job and the offers: the
 * datasets known to the registry, the capacity blocklist, provider health,
 * quota headroom, private capacity in use, and backfill reservations.
 *
 * Each is a read-only snapshot for the length of a plan.  The blocklist
 * and the quota state are hooks: the modules that own them (the spot
 * lifecycle's blocklist, tenancy's quotas) fill in a callback over their
 * own snapshot, so placement neither knows their representation nor takes
 * their locks.  A hook must answer from its snapshot only (pure), and
 * bump `generation` whenever an answer may have changed: placement caches
 * verdicts keyed by it.
 *
 * Not thread-safe while being built; immutable (and shareable) after. */
#ifndef TW_POLICIES_INPUTS_H
#define TW_POLICIES_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tw_offer;

/* ---- datasets ----------------------------------------------------------- */

#define TW_DATASET_LOCATIONS_MAX 16

struct tw_dataset_info {
  char *uri;                                 /* owned */
  int64_t size_bytes;                        /* 0 unknown */
  char *locations[TW_DATASET_LOCATIONS_MAX]; /* "aws:us-east-1"; owned */
  /* What a reader pays on top of egress when fetching from location i: 0
   * for a replica that exists, a share of the copy for one that the
   * scheduler plans to make (shared replication). */
  int64_t location_cost_uusd[TW_DATASET_LOCATIONS_MAX];
  size_t n_locations;
  /* The registry's owner ("" or "*": everybody's) and whether it is
   * shared: a job of another tenant plans as if the dataset were unknown
   * (tw_dataset_set_find_for). */
  char owner[64];
  bool shared;
};

struct tw_dataset_set {
  struct tw_dataset_info *items; /* sorted by uri after seal */
  size_t n, cap;
  uint64_t generation;
};

void tw_dataset_set_init(struct tw_dataset_set *s);
void tw_dataset_set_release(struct tw_dataset_set *s);
/* Adds (or merges into) uri: size replaces 0, new locations are appended
 * (at most TW_DATASET_LOCATIONS_MAX; extra ones are ignored). */
void tw_dataset_set_add(struct tw_dataset_set *s, const char *uri,
                        int64_t size_bytes, const char *const *locations,
                        size_t n_locations);
/* Says whose uri is (it must have been added; see tw_dataset_info). */
void tw_dataset_set_owner(struct tw_dataset_set *s, const char *uri,
                          const char *owner, bool shared);
/* Adds a planned replica of uri at location, charging each reader
 * share_uusd for it (the dataset must have been added). */
void tw_dataset_set_plan_replica(struct tw_dataset_set *s, const char *uri,
                                 const char *location, int64_t share_uusd);
/* A deep copy of src into dst (initialized here). */
void tw_dataset_set_copy(struct tw_dataset_set *dst,
                         const struct tw_dataset_set *src);
/* Sorts for lookup; call once after the last add. */
void tw_dataset_set_seal(struct tw_dataset_set *s);
const struct tw_dataset_info *
tw_dataset_set_find(const struct tw_dataset_set *s, const char *uri);
/* As tw_dataset_set_find, for a job of tenant: NULL when the dataset is
 * another tenant's and not shared. */
const struct tw_dataset_info *
tw_dataset_set_find_for(const struct tw_dataset_set *s, const char *uri,
                        const char *tenant);
extern const struct tw_dataset_set tw_dataset_set_empty;

/* ---- capacity blocklist (filled by the spot lifecycle) ------------------ */

struct tw_place_blocklist {
  const void *ctx;
  /* true when o must not be used at now_ms; why (at most whysz bytes)
   * says what blocks it ("zone us-east-1a (spot) until 12:30Z"). */
  bool (*blocked)(const void *ctx, const struct tw_offer *o, int64_t now_ms,
                  char *why, size_t whysz);
  uint64_t generation;
};
/* Blocks nothing. */
extern const struct tw_place_blocklist tw_place_blocklist_none;

/* ---- provider health ---------------------------------------------------- */

#define TW_HEALTH_MAX 64

/* Accounts whose provider is failing now (auth refused, down), with why. */
struct tw_health {
  char account[TW_HEALTH_MAX][64];
  char reason[TW_HEALTH_MAX][96];
  size_t n;
  uint64_t generation;
};
extern const struct tw_health tw_health_all_good;
/* The reason account is unhealthy, or NULL. */
const char *tw_health_down(const struct tw_health *h, const char *account);

/* ---- quota headroom (filled by tenancy) ---------------------------------- */

/* Resources asked about: "vcpus", "jobs", "gpus:<NAME>" with the offer's
 * normalized accelerator name ("gpus:A100-80GB"). */
#define TW_QUOTA_UNLIMITED INT64_MAX

struct tw_quota_state {
  const void *ctx;
  /* Units of resource tenant may still take now; TW_QUOTA_UNLIMITED when
   * it has no limit.  NULL: everything unlimited. */
  int64_t (*headroom)(const void *ctx, const char *tenant,
                      const char *resource);
  uint64_t generation;
};
/* "No limits": the default until tenancy provides its state. */
extern const struct tw_quota_state tw_quota_unlimited;

/* ---- private capacity in use -------------------------------------------- */

/* Nodes of private offers taken by this broker since the offers were
 * listed (an offer's `capacity` is what was free when listed). */
struct tw_capacity_use {
  char offer_id[128];
  int64_t nodes;
};
struct tw_capacity_view {
  struct tw_capacity_use *items;
  size_t n, cap;
  uint64_t generation;
};
void tw_capacity_view_init(struct tw_capacity_view *v);
void tw_capacity_view_release(struct tw_capacity_view *v);
void tw_capacity_view_take(struct tw_capacity_view *v, const char *offer_id,
                           int64_t nodes);
int64_t tw_capacity_view_used(const struct tw_capacity_view *v,
                              const char *offer_id);
extern const struct tw_capacity_view tw_capacity_view_empty;

/* ---- backfill reservations ----------------------------------------------- */

/* The head job waiting for private capacity holds `nodes` of offer_id from
 * start_ms on; a job placed there now must fit beside it or end first. */
struct tw_reservation {
  char offer_id[128];
  char job_id[32];
  int64_t start_ms;
  int64_t nodes;
};
struct tw_reservations {
  struct tw_reservation *items;
  size_t n, cap;
  uint64_t generation;
};
void tw_reservations_init(struct tw_reservations *r);
void tw_reservations_release(struct tw_reservations *r);
void tw_reservations_add(struct tw_reservations *r,
                         const struct tw_reservation *item);
const struct tw_reservation *
tw_reservations_find(const struct tw_reservations *r, const char *offer_id);
extern const struct tw_reservations tw_reservations_none;

#endif
