/* clouds.h - what the catalog knows of each cloud, in one place.
 *
 * Everything per-cloud the catalog applies to offers (billing rules, zone
 * ids, the interruption feed, architecture and accelerators implied by
 * type names) is a provider info block (struct tw_provider_info,
 * providers/provider.h).  An adapter's block lives in its own folder and
 * reaches the catalog through the adapter registry handed to it in its
 * options (struct tw_catalog_opts.adapters).
 *
 * File sources may name clouds that have no adapter: SkyPilot's catalogs
 * cover GCP, which Tradewind does not launch on.  Their blocks are the
 * rows of the catalog-only table in clouds.c, with the same fields; a
 * cloud that gains an adapter leaves that table (the adapter's block then
 * wins, as it is looked up first). */
#ifndef TW_BILLING_CATALOG_CLOUDS_H
#define TW_BILLING_CATALOG_CLOUDS_H

#include <stddef.h>

#include "providers/provider.h"

/* The info block the catalog applies to offers of provider: the adapter's
 * of registry reg (may be NULL), else the catalog-only table's, else NULL
 * (no billing rule, no zone ids, no interruption bands, nothing implied
 * by type names).  Borrowed: static storage, or reg's. */
const struct tw_provider_info *
tw_cat_cloud(const struct tw_provider_ops *const *reg, const char *provider);

/* The family of an instance type by the cloud's info block (may be NULL):
 * its type_family, else the type's text before its first '.' or '-'
 * ("m6i" of "m6i.large", "n2" of "n2-standard-8"). */
void tw_cat_type_family(const struct tw_provider_info *info, const char *type,
                        char *out, size_t outsz);
/* TW_TYPE_* traits (broker/base/model.h) by the info block; 0 without one. */
unsigned tw_cat_type_traits(const struct tw_provider_info *info,
                            const char *type);

/* The names of the catalog-only table into names[0..max-1],
 * NULL-terminated (at most max - 1); returns the count. */
size_t tw_cat_catalog_only_names(const char **names, size_t max);

#endif
