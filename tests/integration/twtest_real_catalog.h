/* twtest_real_catalog.h - the real catalog files of $TRADEWIND_TESTDATA
 * read as the catalog reads them, for the tests that plan over them
 * (test_place_real, test_joint_real). */
#ifndef TW_TESTS_INTEGRATION_TWTEST_REAL_CATALOG_H
#define TW_TESTS_INTEGRATION_TWTEST_REAL_CATALOG_H

#include <stddef.h>

#include "billing/catalog/normalize.h"

#include "billing/catalog/catalog.h"
#include "policies/place/index.h"

/* dir/rel as a CSV source of provider (tw_cat_snap_from_csv with the
 * built-in adapters); NULL with why filled when it cannot be read or
 * parsed. */
struct tw_cat_snap *twtest_real_load(const char *dir, const char *rel,
                                     const char *provider, const char *columns,
                                     const char *type,
                                     const struct tw_csv_specs *specs,
                                     struct tw_regions *regions, char *why,
                                     size_t why_sz);

/* An offer source's get over a merged snapshot (src->ctx), one offer at a
 * time into scratch. */
const struct tw_offer *twtest_snap_get(const struct tw_offer_source *src,
                                       size_t i, struct tw_offer *scratch);

/* The catalogs both tests plan over, as one index: the anycloud Azure and
 * GCP files, SkyPilot's AWS v8 subset (its specs and .rows files), then
 * the transcribed p5.48xlarge excerpt (after the subset, so the subset
 * wins where both list an offer: the first source does). */
struct twtest_real {
  struct tw_regions *regions;
  struct tw_cat_snap *srcs[32];
  size_t n;
  struct tw_csv_specs *specs;
  struct tw_cat_snap *merged;
  struct tw_offer_index *ix;
};

/* Loads dir's catalogs into r; every file that cannot be read or parsed
 * is counted in the return value and printed to stderr (0: all loaded,
 * r->ix built).  Release r with twtest_real_close whatever it returns. */
int twtest_real_open(struct twtest_real *r, const char *dir);
void twtest_real_close(struct twtest_real *r);

#endif
