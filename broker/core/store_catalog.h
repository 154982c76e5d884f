/* store_catalog.h - the catalog's tables: one row per stored snapshot of a
 * source (catalog_snapshots, its offers kept as CSV text in `body`) and
 * the spot price history (catalog_prices).  Plain rows in, plain rows out:
 * the catalog (billing/catalog/catalog_store.c) writes and parses the CSV
 * and the report, and decides which prices changed.  Thread-safe, as the
 * store. */
#ifndef TW_CORE_STORE_CATALOG_H
#define TW_CORE_STORE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/model.h"

struct tw_store;

/* A spot price seen in a snapshot. */
struct tw_store_cat_price {
  char offer_id[TW_MODEL_ID_MAX];
  int64_t price_uusd_per_hour;
  int64_t observed_ms;
};

/* A snapshot to store.  Strings are borrowed for the call; NULL is "". */
struct tw_store_cat_put {
  const char *source, *kind, *mode, *provider, *account, *path, *sha256;
  const char *currency, *rate, *rate_date;
  int64_t fetched_ms, stored_ms;
  int64_t rows, normalized, offers;
  const char *report_json;
  const void *body; /* the offers; body_len bytes */
  size_t body_len;
  const struct tw_store_cat_price *prices; /* recorded with its id */
  size_t n_prices;
  int keep; /* > 0: the newest `keep` of the source keep their body */
};

/* Inserts the snapshot and its prices and clears the body of the older
 * snapshots of its source past `keep` (their rows stay as the record), in
 * one transaction.  *id receives the snapshot's id. */
enum tw_rc tw_store_catalog_put(struct tw_store *s,
                                const struct tw_store_cat_put *p, int64_t *id,
                                struct tw_err *err);

/* The newest snapshot of a source that still has its body. */
struct tw_store_cat_latest {
  int64_t id;
  char kind[8], mode[16], provider[32], account[64], path[256], sha256[65];
  char currency[4], rate[24], rate_date[11];
  int64_t fetched_ms;
  char *report_json; /* owned; "{}" when NULL */
  char *body;        /* owned, NUL-terminated; body_len bytes before it */
  size_t body_len;
};
void tw_store_cat_latest_release(struct tw_store_cat_latest *l);

/* *found false (and *out untouched) when the source has none. */
enum tw_rc tw_store_catalog_latest(struct tw_store *s, const char *source,
                                   struct tw_store_cat_latest *out, bool *found,
                                   struct tw_err *err);

struct tw_store_cat_point {
  int64_t price_uusd_per_hour;
  int64_t observed_ms;
  int64_t snapshot;
};

/* An offer's prices, newest first, at most max; free() *out (never NULL
 * on success). */
enum tw_rc tw_store_catalog_history(struct tw_store *s, const char *offer_id,
                                    size_t max, struct tw_store_cat_point **out,
                                    size_t *n, struct tw_err *err);

#endif
