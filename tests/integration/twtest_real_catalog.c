/* twtest_real_catalog.c - see twtest_real_catalog.h. */
#include "tests/integration/twtest_real_catalog.h"

#include <dirent.h>
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

static void real_add(struct twtest_real *r, const char *dir, const char *rel,
                     const char *provider, const char *columns,
                     const char *type, int *bad) {
  char why[1024] = "";
  struct tw_cat_snap *s = twtest_real_load(dir, rel, provider, columns, type,
                                           r->specs, r->regions, why,
                                           sizeof why);
  if (!s) {
    fprintf(stderr, "FAIL: %s\n", why);
    (*bad)++;
    return;
  }
  r->srcs[r->n++] = s;
}

int twtest_real_open(struct twtest_real *r, const char *dir) {
  memset(r, 0, sizeof *r);
  struct tw_err err = {0};
  int bad = 0;
  if (tw_regions_builtin(&r->regions, &err)) {
    fprintf(stderr, "FAIL: regions: %s\n", err.msg);
    return 1;
  }
  real_add(r, dir, "anycloud/azure/vms.csv", "azure", NULL, NULL, &bad);
  real_add(r, dir, "anycloud/gcp/vms.csv", "gcp", NULL, NULL, &bad);
  char path[2048];
  snprintf(path, sizeof path, "%s/skypilot/aws_v8_subset/specs.csv", dir);
  size_t len;
  char *text = tw_test_slurp(path, &len);
  if (!text || tw_csv_specs_load(text, len, &r->specs, &err)) {
    fprintf(stderr, "FAIL: specs %s: %s\n", path, text ? err.msg : "unread");
    bad++;
  } else {
    snprintf(path, sizeof path, "%s/skypilot/aws_v8_subset", dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) && r->n < 30) {
      size_t l = strlen(e->d_name);
      if (l < 6 || strcmp(e->d_name + l - 5, ".rows"))
        continue;
      char rel[512], type[256];
      snprintf(rel, sizeof rel, "skypilot/aws_v8_subset/%s", e->d_name);
      snprintf(type, sizeof type, "%.*s", (int)(l - 5), e->d_name);
      real_add(r, dir, rel, "aws", "Price,SpotPrice,Region,AvailabilityZone",
               type, &bad);
    }
    if (d)
      closedir(d);
  }
  free(text);
  real_add(r, dir, "skypilot/aws_vms_v8_excerpt_p5.48xlarge.csv", "aws", NULL,
           NULL, &bad);
  if (bad)
    return bad;
  tw_cat_snap_merge(r->srcs, r->n, NULL, tw_adapters, 1, 0, &r->merged);
  struct tw_offer_source src = {.n = tw_cat_snap_count(r->merged),
                                .get = twtest_snap_get,
                                .ctx = r->merged,
                                .stable = false};
  if (tw_offer_index_build(&src, &r->ix, &err)) {
    fprintf(stderr, "FAIL: index: %s\n", err.msg);
    return 1;
  }
  return 0;
}

void twtest_real_close(struct twtest_real *r) {
  tw_offer_index_unref(r->ix);
  tw_cat_snap_release(r->merged);
  for (size_t i = 0; i < r->n; i++)
    tw_cat_snap_release(r->srcs[i]);
  tw_csv_specs_free(r->specs);
  tw_regions_free(r->regions);
  memset(r, 0, sizeof *r);
}
