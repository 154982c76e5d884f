/* datasets.h - the dataset registry: which datasets exist, how big they
 * are, and where their copies live, for placement's egress and transfer
 * costs (policies/place/cost.h) and for shared replication
 * (policies/place/replicate.h).
 *
 * A dataset is named by its URI ("s3://corpus/tokenized/v3/"); its
 * locations are "provider:region" ("aws:us-east-1").  A location is
 * `registered` (someone said a copy is there: POST /v1/datasets, or the
 * scheduler learning it from a job's spec) or `replicated` (the scheduler
 * chose to copy it there once for several jobs; the copy's cost is kept
 * with the location).  Registering merges: a size replaces the old one,
 * locations are added, none is ever removed by a registration.
 *
 * A dataset belongs to the tenant that registered it: only that tenant
 * (or the operator) changes it, and other tenants read it only when it is
 * shared.  tw_datasets_each hands the scheduler every dataset with its
 * owner; placement applies the same rule per job
 * (tw_dataset_set_find_for, policies/place/inputs.h).
 *
 * Tables of the store module "datasets" (migrated by tw_store_open);
 * writes are group-committed like every write.  Errors: TW_E_INVALID
 * naming the field ("uri: expected 1 to 2048 printable characters"),
 * TW_E_NOTFOUND, TW_E_IO.
 *
 * Threads: every function is thread-safe (the store's). */
#ifndef TW_BROKER_DATASETS_H
#define TW_BROKER_DATASETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

#define TW_DATASET_URI_MAX 2048
#define TW_DATASET_LOCATIONS 16 /* per dataset */

struct tw_dataset_location {
  char location[160];
  char origin[16];   /* "registered" | "replicated" */
  int64_t cost_uusd; /* replicated: what the copy cost; else 0 */
  int64_t created_ms;
  char note[256]; /* replicated: why ("3 pending jobs read it") */
};

struct tw_dataset_rec {
  char *uri;          /* owned */
  char owner[64];     /* the tenant that registered it; "*": the operator */
  bool shared;        /* readable by every tenant ("*": always) */
  int64_t size_bytes; /* 0 unknown */
  int64_t created_ms, updated_ms;
  struct tw_dataset_location *locations; /* owned */
  size_t n_locations;
};
void tw_dataset_rec_release(struct tw_dataset_rec *r);

/* Checks what POST /v1/datasets accepts: a URI of 1..2048 printable
 * characters without spaces, a location "provider:region" whose provider
 * is one of providers (NULL-terminated names of the adapter registry,
 * handed down by the caller; NULL: any).  field names the offending
 * part. */
enum tw_rc tw_datasets_check_uri(const char *uri, struct tw_err *err);
enum tw_rc tw_datasets_check_location(const char *location, const char *field,
                                      const char *const *providers,
                                      struct tw_err *err);

struct tw_dataset_put {
  const char *uri;
  int64_t size_bytes;           /* 0: keep the known size */
  const char *const *locations; /* registered copies to add */
  size_t n_locations;
  /* the providers a location may name (tw_datasets_check_location());
   * NULL: any, for locations taken from offers already */
  const char *const *providers;
  /* The writing tenant: a new dataset is its own, and a dataset of another
   * tenant is TW_E_FORBIDDEN (field uri) to change.  NULL or "*": the
   * operator, who owns what it creates and may change anything. */
  const char *owner;
  int shared; /* 1: share, -1: stop sharing, 0: keep (a new one: not) */
  /* the scheduler learning from a job's spec: another tenant's dataset is
   * left as it is, without an error */
  bool learn;
};

/* May tenant (NULL or "*": the operator) read r: its own, or shared. */
bool tw_dataset_readable(const struct tw_dataset_rec *r, const char *tenant);

/* Creates or merges (see above); *created says which.  *out (may be NULL)
 * receives the stored record.  TW_E_TOOBIG past TW_DATASET_LOCATIONS
 * locations. */
enum tw_rc tw_datasets_put(struct tw_store *s, const struct tw_dataset_put *req,
                           int64_t now_ms, struct tw_dataset_rec *out,
                           bool *created, struct tw_err *err);

/* Records a replica made (or decided) by the scheduler at location, with
 * its cost and note.  TW_E_NOTFOUND when the dataset is unknown. */
enum tw_rc tw_datasets_add_replica(struct tw_store *s, const char *uri,
                                   const char *location, int64_t cost_uusd,
                                   const char *note, int64_t now_ms,
                                   struct tw_err *err);

enum tw_rc tw_datasets_get(struct tw_store *s, const char *uri,
                           struct tw_dataset_rec *out, struct tw_err *err);

/* In URI order, after `after` (NULL or "": from the start), at most limit
 * (1..500), of the datasets tenant may read (NULL or "*": all).  *out is an
 * array of *n records (release each, free the array); *more says whether
 * another page follows. */
enum tw_rc tw_datasets_list(struct tw_store *s, const char *after,
                            const char *tenant, int limit,
                            struct tw_dataset_rec **out, size_t *n, bool *more,
                            struct tw_err *err);

/* Calls fn once for every dataset (location NULL), then once for each of
 * its locations, in one read transaction (a consistent view).  *version
 * (may be NULL) receives a number that changes with every write.  The
 * scheduler builds placement's dataset set (policies/place/inputs.h) this way.
 */
/* owner and shared come with the dataset's own call (location NULL) */
typedef void (*tw_datasets_each_fn)(void *ctx, const char *uri,
                                    int64_t size_bytes, const char *location,
                                    const char *owner, bool shared);
enum tw_rc tw_datasets_each(struct tw_store *s, tw_datasets_each_fn fn,
                            void *ctx, int64_t *version, struct tw_err *err);

/* The number above alone: cheap, for "did anything change?". */
enum tw_rc tw_datasets_version(struct tw_store *s, int64_t *version,
                               struct tw_err *err);

#endif
