/* twtest_real_catalog.c - see twtest_real_catalog.h. */
#include "tests/integration/twtest_real_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "providers/registry.h"
#include "tests/twtest.h"

struct tw_cat_snap *twtest_real_load(const char *dir, const char *rel,
                                     const char *provider, const char *columns,
                                     const char *type,
                                     const struct tw_csv_specs *specs,
                                     struct tw_regions *regions, char *why,
                                     size_t why_sz) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  size_t len;
  char *text = tw_test_slurp(path, &len);
  if (!text) {
    snprintf(why, why_sz, "cannot read %s", path);
    return NULL;
  }
  struct tw_csv_opts o = {.provider = provider,
                          .columns = columns,
                          .instance_type = type,
                          .specs = specs,
                          .regions = regions,
                          .adapters = tw_adapters};
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%.60s", rel);
  snprintf(info.kind, sizeof info.kind, "file");
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  if (tw_cat_snap_from_csv(text, len, &o, &info, &s, &err))
    snprintf(why, why_sz, "%s: %s", rel, err.msg);
  free(text);
  return s;
}

const struct tw_offer *twtest_snap_get(const struct tw_offer_source *src,
                                       size_t i, struct tw_offer *scratch) {
  tw_cat_snap_to_offer(src->ctx, i, scratch);
  return scratch;
}
