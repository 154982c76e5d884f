/* datasets.c - the dataset registry (datasets.h): what a URI and a
 * location may be.  The statements of the store module "datasets" are
 * the store's (broker/core/store_datasets.c). */
#include "broker/core/datasets.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/spec.h"
#include "broker/core/store_datasets.h"

void tw_dataset_rec_release(struct tw_dataset_rec *r) {
  if (!r)
    return;
  free(r->uri);
  free(r->locations);
  memset(r, 0, sizeof *r);
}

/* ---- validation ------------------------------------------------------------
 */

enum tw_rc tw_datasets_check_uri(const char *uri, struct tw_err *err) {
  size_t n = uri ? strlen(uri) : 0;
  if (!n || n > TW_DATASET_URI_MAX)
    return tw_err_field(err, TW_E_INVALID, "uri",
                        "uri: expected 1 to %d printable characters, got %zu",
                        TW_DATASET_URI_MAX, n);
  for (const unsigned char *p = (const unsigned char *)uri; *p; p++)
    if (*p <= 0x20 || *p == 0x7f)
      return tw_err_field(err, TW_E_INVALID, "uri",
                          "uri: spaces and control characters are not allowed");
  return TW_OK;
}

enum tw_rc tw_datasets_check_location(const char *loc, const char *field,
                                      const char *const *providers,
                                      struct tw_err *err) {
  const char *c = loc ? strchr(loc, ':') : NULL;
  if (!c || c == loc || !c[1] || strlen(loc) >= 160)
    return tw_err_field(
        err, TW_E_INVALID, field,
        "%s: expected provider:region such as aws:us-east-1, got \"%.60s\"",
        field, loc ? loc : "");
  size_t pl = (size_t)(c - loc);
  bool known = !providers;
  for (size_t i = 0; providers && providers[i] && !known; i++)
    known = strlen(providers[i]) == pl && !strncmp(providers[i], loc, pl);
  if (!known)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: unknown provider \"%.*s\"", field,
                        (int)(pl > 40 ? 40 : pl), loc);
  for (const char *p = c + 1; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.' &&
        *p != ':')
      return tw_err_field(
          err, TW_E_INVALID, field,
          "%s: a region is letters, digits, '-', '_' and '.', got \"%.60s\"",
          field, loc);
  return TW_OK;
}

/* ---- reading and writing ------------------------------------------------- */

enum tw_rc tw_datasets_get(struct tw_store *s, const char *uri,
                           struct tw_dataset_rec *out, struct tw_err *err) {
  return tw_store_dataset_get(s, uri, out, err);
}

bool tw_dataset_readable(const struct tw_dataset_rec *r, const char *tenant) {
  return !tenant || !strcmp(tenant, "*") || r->shared ||
         !strcmp(r->owner, tenant);
}

enum tw_rc tw_datasets_list(struct tw_store *s, const char *after,
                            const char *tenant, int limit,
                            struct tw_dataset_rec **out, size_t *n, bool *more,
                            struct tw_err *err) {
  *out = NULL;
  *n = 0;
  *more = false;
  if (limit < 1 || limit > 500)
    return tw_err_field(err, TW_E_INVALID, "limit",
                        "limit: expected 1 to 500, got %d", limit);
  if (tenant && !strcmp(tenant, "*"))
    tenant = NULL;
  return tw_store_datasets_list(s, after, tenant, limit, out, n, more, err);
}

enum tw_rc tw_datasets_each(struct tw_store *s, tw_datasets_each_fn fn,
                            void *ctx, int64_t *version, struct tw_err *err) {
  return tw_store_datasets_each(s, fn, ctx, version, err);
}

enum tw_rc tw_datasets_version(struct tw_store *s, int64_t *version,
                               struct tw_err *err) {
  return tw_store_datasets_version(s, version, err);
}

enum tw_rc tw_datasets_put(struct tw_store *s, const struct tw_dataset_put *req,
                           int64_t now, struct tw_dataset_rec *out,
                           bool *created, struct tw_err *err) {
  enum tw_rc rc = tw_datasets_check_uri(req->uri, err);
  if (rc)
    return rc;
  if (req->size_bytes < 0)
    return tw_err_field(err, TW_E_INVALID, "size_bytes",
                        "size_bytes: must be >= 0");
  if (req->n_locations > TW_DATASET_LOCATIONS)
    return tw_err_field(err, TW_E_TOOBIG, "locations",
                        "locations: at most %d, got %zu", TW_DATASET_LOCATIONS,
                        req->n_locations);
  for (size_t i = 0; i < req->n_locations; i++) {
    char field[32];
    snprintf(field, sizeof field, "locations[%zu]", i);
    if ((rc = tw_datasets_check_location(req->locations[i], field,
                                         req->providers, err)))
      return rc;
  }
  if (req->shared < -1 || req->shared > 1)
    return tw_err_field(err, TW_E_INVALID, "shared",
                        "shared: expected true or false");
  struct tw_store_dataset_write w = {.owner = req->owner,
                                     .shared = req->shared > 0   ? 1
                                               : req->shared < 0 ? 0
                                                                 : -1,
                                     .learn = req->learn};
  if ((rc = tw_store_dataset_put(s, req->uri, req->size_bytes, req->locations,
                                 req->n_locations, &w, now, created, err)))
    return rc;
  return out ? tw_datasets_get(s, req->uri, out, err) : TW_OK;
}

enum tw_rc tw_datasets_add_replica(struct tw_store *s, const char *uri,
                                   const char *location, int64_t cost_uusd,
                                   const char *note, int64_t now,
                                   struct tw_err *err) {
  enum tw_rc rc = tw_datasets_check_uri(uri, err);
  if (!rc)
    rc = tw_datasets_check_location(location, "location", NULL, err);
  if (rc)
    return rc;
  return tw_store_dataset_add_replica(s, uri, location, cost_uusd, note, now,
                                      err);
}
