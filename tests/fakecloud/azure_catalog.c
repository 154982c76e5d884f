/* azure_catalog.c - see azure_catalog.h. */
#include "tests/fakecloud/azure_catalog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/mem.h"
#include "tests/fakecloud/catalog.h"

extern const unsigned char fc_azure_catalog_json[];
extern const size_t fc_azure_catalog_json_len;

void fc_az_catalog_free(struct fc_az_catalog *c) {
  if (!c)
    return;
  free(c->regions);
  free(c->sizes);
  free(c->prices);
  free(c);
}

static enum tw_rc str_into(json_t *o, const char *key, char *out, size_t size,
                           const char *path, struct tw_err *err) {
  json_t *v = json_object_get(o, key);
  if (!json_is_string(v) || !json_string_length(v) ||
      json_string_length(v) >= size)
    return tw_err_set(err, TW_E_INVALID,
                      "azure catalog %s/%s: expected a string of 1..%zu bytes",
                      path, key, size - 1);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return TW_OK;
}

static enum tw_rc parse_section(json_t *az, struct fc_az_catalog *c,
                                struct tw_err *err) {
  json_t *regions = json_object_get(az, "regions");
  json_t *sizes = json_object_get(az, "sizes");
  json_t *prices = json_object_get(az, "prices");
  char path[64];
  size_t i, j;
  json_t *v, *z;
  enum tw_rc rc;
  if (!json_is_array(regions) || !json_is_array(sizes) ||
      !json_is_array(prices))
    return tw_err_set(err, TW_E_INVALID,
                      "azure catalog: regions, sizes and prices must be "
                      "arrays");
  c->regions = tw_calloc(json_array_size(regions) + 1, sizeof *c->regions);
  json_array_foreach(regions, i, v) {
    struct fc_az_region *r = &c->regions[c->n_regions++];
    snprintf(path, sizeof path, "/azure/regions/%zu", i);
    if ((rc = str_into(v, "name", r->name, sizeof r->name, path, err)) ||
        (rc = str_into(v, "display", r->display, sizeof r->display, path, err)))
      return rc;
    json_array_foreach(json_object_get(v, "zones"), j, z) {
      if (r->n_zones == 3 || !json_is_string(z) ||
          json_string_length(z) >= sizeof r->zones[0])
        return tw_err_set(err, TW_E_INVALID,
                          "azure catalog %s/zones: at most 3 short names",
                          path);
      snprintf(r->zones[r->n_zones++], sizeof r->zones[0], "%s",
               json_string_value(z));
    }
  }
  c->sizes = tw_calloc(json_array_size(sizes) + 1, sizeof *c->sizes);
  json_array_foreach(sizes, i, v) {
    struct fc_az_size *s = &c->sizes[c->n_sizes++];
    snprintf(path, sizeof path, "/azure/sizes/%zu", i);
    json_t *vc = json_object_get(v, "vcpus"), *g = json_object_get(v, "gpus");
    if ((rc = str_into(v, "name", s->name, sizeof s->name, path, err)) ||
        (rc = str_into(v, "family", s->family, sizeof s->family, path, err)) ||
        (rc = str_into(v, "memory_gb", s->memory_gb, sizeof s->memory_gb, path,
                       err)) ||
        (rc = str_into(v, "arch", s->arch, sizeof s->arch, path, err)) ||
        (rc = str_into(v, "meter", s->meter, sizeof s->meter, path, err)) ||
        (rc = str_into(v, "product", s->product, sizeof s->product, path, err)))
      return rc;
    if (!json_is_integer(vc) || json_integer_value(vc) < 1 ||
        json_integer_value(vc) > 1024 || (g && !json_is_integer(g)))
      return tw_err_set(err, TW_E_INVALID,
                        "azure catalog %s: vcpus 1..1024 and gpus integers",
                        path);
    s->vcpus = (int)json_integer_value(vc);
    s->gpus = g ? (int)json_integer_value(g) : 0;
  }
  c->prices = tw_calloc(json_array_size(prices) + 1, sizeof *c->prices);
  json_array_foreach(prices, i, v) {
    struct fc_az_price *p = &c->prices[c->n_prices++];
    char size[48], region[32], od[24], spot[24] = "";
    snprintf(path, sizeof path, "/azure/prices/%zu", i);
    if ((rc = str_into(v, "size", size, sizeof size, path, err)) ||
        (rc = str_into(v, "region", region, sizeof region, path, err)) ||
        (rc = str_into(v, "on_demand", od, sizeof od, path, err)))
      return rc;
    if (json_object_get(v, "spot") &&
        (rc = str_into(v, "spot", spot, sizeof spot, path, err)))
      return rc;
    const struct fc_az_size *sz = fc_az_catalog_size(c, size);
    const struct fc_az_region *rg = fc_az_catalog_region(c, region);
    if (!sz || !rg)
      return tw_err_set(err, TW_E_INVALID,
                        "azure catalog %s: unknown size or region", path);
    p->size = (size_t)(sz - c->sizes);
    p->region = (size_t)(rg - c->regions);
    p->spot_uusd = -1;
    if (!fc_price_parse(od, &p->on_demand_uusd) ||
        (*spot && !fc_price_parse(spot, &p->spot_uusd)))
      return tw_err_set(err, TW_E_INVALID,
                        "azure catalog %s: prices are decimal USD strings",
                        path);
  }
  return TW_OK;
}

enum tw_rc fc_az_catalog_parse(const char *text, size_t len,
                               struct fc_az_catalog **out, struct tw_err *err) {
  *out = NULL;
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return tw_err_set(err, TW_E_INVALID, "azure catalog: %s (line %d)", je.text,
                      je.line);
  json_t *az = json_object_get(root, "azure");
  enum tw_rc rc = TW_E_NOTFOUND;
  if (json_is_object(az)) {
    struct fc_az_catalog *c = tw_calloc(1, sizeof *c);
    rc = parse_section(az, c, err);
    if (rc)
      fc_az_catalog_free(c);
    else
      *out = c;
  }
  json_decref(root);
  return rc;
}

enum tw_rc fc_az_catalog_load(const char *path, struct fc_az_catalog **out,
                              struct tw_err *err) {
  if (path) {
    FILE *f = fopen(path, "rb");
    if (!f)
      return tw_err_set(err, TW_E_INVALID, "catalog %s: cannot open", path);
    struct tw_buf b;
    tw_buf_init(&b);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
      tw_buf_add(&b, chunk, n);
    fclose(f);
    enum tw_rc rc = fc_az_catalog_parse(b.data ? b.data : "", b.len, out, err);
    tw_buf_release(&b);
    if (rc != TW_E_NOTFOUND)
      return rc;
  }
  return fc_az_catalog_parse((const char *)fc_azure_catalog_json,
                             fc_azure_catalog_json_len, out, err);
}

const struct fc_az_region *fc_az_catalog_region(const struct fc_az_catalog *c,
                                                const char *name) {
  for (size_t i = 0; i < c->n_regions; i++)
    if (!strcasecmp(c->regions[i].name, name))
      return &c->regions[i];
  return NULL;
}

const struct fc_az_size *fc_az_catalog_size(const struct fc_az_catalog *c,
                                            const char *name) {
  for (size_t i = 0; i < c->n_sizes; i++)
    if (!strcasecmp(c->sizes[i].name, name))
      return &c->sizes[i];
  return NULL;
}

const struct fc_az_price *fc_az_catalog_price(const struct fc_az_catalog *c,
                                              const char *size,
                                              const char *region) {
  for (size_t i = 0; i < c->n_prices; i++)
    if (!strcasecmp(c->sizes[c->prices[i].size].name, size) &&
        !strcasecmp(c->regions[c->prices[i].region].name, region))
      return &c->prices[i];
  return NULL;
}
