/* store_datasets.h - the dataset registry's tables (datasets,
 * dataset_locations, dataset_version).  The records are the registry's
 * (broker/core/datasets.h); broker/core/datasets.c checks what comes in
 * and the store keeps it.  Every write bumps the version in the same
 * transaction.  Thread-safe, as the store. */
#ifndef TW_CORE_STORE_DATASETS_H
#define TW_CORE_STORE_DATASETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/datasets.h"

struct tw_store;

/* The dataset and its locations (oldest first); TW_E_NOTFOUND when
 * absent.  Release *out with tw_dataset_rec_release(). */
enum tw_rc tw_store_dataset_get(struct tw_store *s, const char *uri,
                                struct tw_dataset_rec *out, struct tw_err *err);

/* Up to limit datasets after `after` (NULL: from the start) in URI order,
 * with their locations, of those tenant may read (its own and the shared;
 * NULL: all); *more when another follows. */
enum tw_rc tw_store_datasets_list(struct tw_store *s, const char *after,
                                  const char *tenant, int limit,
                                  struct tw_dataset_rec **out, size_t *n,
                                  bool *more, struct tw_err *err);

/* As tw_datasets_each(): the datasets, then every location, in one read. */
enum tw_rc tw_store_datasets_each(struct tw_store *s, tw_datasets_each_fn fn,
                                  void *ctx, int64_t *version,
                                  struct tw_err *err);

enum tw_rc tw_store_datasets_version(struct tw_store *s, int64_t *version,
                                     struct tw_err *err);

/* Who writes (tw_dataset_put's owner, shared, learn); NULL: the
 * operator ("*"), sharing unchanged. */
struct tw_store_dataset_write {
  const char *owner;
  int shared;
  bool learn;
};

/* Creates the dataset (owned by w->owner) or updates it (size when
 * size_bytes > 0, updated_ms, shared when given) and adds locations[0..n)
 * as "registered", in one transaction; *created says which.  A dataset of
 * another owner is TW_E_FORBIDDEN (field uri) unless the writer is "*",
 * or, with w->learn, left as it is (TW_OK, nothing written).  TW_E_TOOBIG
 * when a location would be past TW_DATASET_LOCATIONS (nothing is
 * written). */
enum tw_rc tw_store_dataset_put(struct tw_store *s, const char *uri,
                                int64_t size_bytes,
                                const char *const *locations, size_t n,
                                const struct tw_store_dataset_write *w,
                                int64_t now_ms, bool *created,
                                struct tw_err *err);

/* Adds a "replicated" location with its cost and note (an existing
 * location stays as it is).  TW_E_NOTFOUND when the dataset is unknown,
 * TW_E_TOOBIG past TW_DATASET_LOCATIONS. */
enum tw_rc tw_store_dataset_add_replica(struct tw_store *s, const char *uri,
                                        const char *location, int64_t cost_uusd,
                                        const char *note, int64_t now_ms,
                                        struct tw_err *err);

#endif
