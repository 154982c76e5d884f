/* catalog.c - see catalog.h. */
#include "tests/fakecloud/catalog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

extern const unsigned char fc_catalog_json[];
extern const size_t fc_catalog_json_len;

bool fc_price_parse(const char *s, int64_t *uusd) {
  int64_t whole = 0, frac = 0;
  int fdigits = 0;
  const char *p = s;
  if (!*p || *p == '.')
    return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (whole > 1000000000)
      return false;
    whole = whole * 10 + (*p - '0');
  }
  if (*p == '.') {
    p++;
    if (!(*p >= '0' && *p <= '9'))
      return false;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++fdigits > 6)
        return false;
      frac = frac * 10 + (*p - '0');
    }
  }
  if (*p)
    return false;
  for (; fdigits < 6; fdigits++)
    frac *= 10;
  *uusd = whole * 1000000 + frac;
  return true;
}

void fc_price_fmt(int64_t uusd, char out[32]) {
  snprintf(out, 32, "%lld.%06lld", (long long)(uusd / 1000000),
           (long long)(uusd % 1000000));
}

static enum tw_rc str_field(json_t *o, const char *key, char *out, size_t sz,
                            bool required, const char *path,
                            struct tw_err *err) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    if (!required)
      return TW_OK;
    return tw_err_set(err, TW_E_INVALID, "%s/%s: missing", path, key);
  }
  if (!json_is_string(v) || json_string_length(v) >= sz ||
      json_string_length(v) == 0)
    return tw_err_set(err, TW_E_INVALID,
                      "%s/%s: expected a string of 1..%zu bytes", path, key,
                      sz - 1);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return TW_OK;
}

static enum tw_rc int_field(json_t *o, const char *key, int64_t lo, int64_t hi,
                            int64_t *out, const char *path,
                            struct tw_err *err) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi)
    return tw_err_set(err, TW_E_INVALID,
                      "%s/%s: expected an integer in %lld..%lld", path, key,
                      (long long)lo, (long long)hi);
  *out = json_integer_value(v);
  return TW_OK;
}

static enum tw_rc parse_itype(json_t *t, struct fc_itype *it, const char *path,
                              struct tw_err *err) {
  enum tw_rc rc;
  int64_t v;
  if ((rc = str_field(t, "name", it->name, sizeof it->name, true, path, err)))
    return rc;
  if ((rc = int_field(t, "vcpus", 1, 4096, &v, path, err)))
    return rc;
  it->vcpus = (int)v;
  if ((rc = int_field(t, "cores", 1, 4096, &v, path, err)))
    return rc;
  it->cores = (int)v;
  if ((rc = int_field(t, "threads_per_core", 1, 8, &v, path, err)))
    return rc;
  it->threads_per_core = (int)v;
  if ((rc = int_field(t, "memory_mib", 1, INT64_C(1) << 40, &it->memory_mib,
                      path, err)))
    return rc;
  json_t *arch = json_object_get(t, "arch");
  if (!json_is_array(arch) || json_array_size(arch) < 1 ||
      json_array_size(arch) > FC_MAX_ARCH)
    return tw_err_set(err, TW_E_INVALID, "%s/arch: expected 1..%d names", path,
                      FC_MAX_ARCH);
  for (size_t i = 0; i < json_array_size(arch); i++) {
    json_t *a = json_array_get(arch, i);
    if (!json_is_string(a) || json_string_length(a) >= sizeof it->arch[0])
      return tw_err_set(err, TW_E_INVALID, "%s/arch/%zu: expected a name", path,
                        i);
    snprintf(it->arch[i], sizeof it->arch[i], "%s", json_string_value(a));
  }
  it->n_arch = json_array_size(arch);
  if ((rc = str_field(t, "clock_ghz", it->clock_ghz, sizeof it->clock_ghz,
                      false, path, err)) ||
      (rc = str_field(t, "network", it->network, sizeof it->network, false,
                      path, err)) ||
      (rc = str_field(t, "hypervisor", it->hypervisor, sizeof it->hypervisor,
                      false, path, err)))
    return rc;
  json_t *g = json_object_get(t, "gpu");
  if (g) {
    char gp[160];
    snprintf(gp, sizeof gp, "%s/gpu", path);
    it->has_gpu = true;
    if ((rc = str_field(g, "name", it->gpu.name, sizeof it->gpu.name, true, gp,
                        err)) ||
        (rc = str_field(g, "manufacturer", it->gpu.manufacturer,
                        sizeof it->gpu.manufacturer, true, gp, err)) ||
        (rc = int_field(g, "count", 1, 64, &v, gp, err)) ||
        (rc = int_field(g, "memory_mib", 1, INT64_C(1) << 30,
                        &it->gpu.memory_mib, gp, err)))
      return rc;
    it->gpu.count = (int)v;
  }
  return TW_OK;
}

static enum tw_rc parse_aws(json_t *aws, struct fc_catalog *c,
                            struct tw_err *err) {
  enum tw_rc rc;
  if ((rc = str_field(aws, "owner_id", c->owner_id, sizeof c->owner_id, true,
                      "/aws", err)))
    return rc;
  json_t *regions = json_object_get(aws, "regions");
  json_t *types = json_object_get(aws, "instance_types");
  json_t *offers = json_object_get(aws, "offers");
  if (!json_is_array(regions) || !json_array_size(regions) ||
      !json_is_array(types) || !json_is_array(offers))
    return tw_err_set(err, TW_E_INVALID,
                      "/aws: needs arrays regions (non-empty), "
                      "instance_types and offers");
  c->n_regions = json_array_size(regions);
  c->regions = tw_calloc(c->n_regions, sizeof *c->regions);
  for (size_t i = 0; i < c->n_regions; i++) {
    char path[64];
    snprintf(path, sizeof path, "/aws/regions/%zu", i);
    json_t *r = json_array_get(regions, i);
    struct fc_region *reg = &c->regions[i];
    if ((rc = str_field(r, "name", reg->name, sizeof reg->name, true, path,
                        err)))
      return rc;
    json_t *zones = json_object_get(r, "zones");
    if (!json_is_array(zones) || !json_array_size(zones) ||
        json_array_size(zones) > FC_MAX_ZONES)
      return tw_err_set(err, TW_E_INVALID, "%s/zones: expected 1..%d zones",
                        path, FC_MAX_ZONES);
    reg->n_zones = json_array_size(zones);
    for (size_t z = 0; z < reg->n_zones; z++) {
      char zp[96];
      snprintf(zp, sizeof zp, "%s/zones/%zu", path, z);
      json_t *zo = json_array_get(zones, z);
      if ((rc = str_field(zo, "name", reg->zones[z].name,
                          sizeof reg->zones[z].name, true, zp, err)) ||
          (rc = str_field(zo, "id", reg->zones[z].id, sizeof reg->zones[z].id,
                          true, zp, err)))
        return rc;
    }
  }
  c->n_itypes = json_array_size(types);
  c->itypes = tw_calloc(c->n_itypes ? c->n_itypes : 1, sizeof *c->itypes);
  for (size_t i = 0; i < c->n_itypes; i++) {
    char path[64];
    snprintf(path, sizeof path, "/aws/instance_types/%zu", i);
    if ((rc = parse_itype(json_array_get(types, i), &c->itypes[i], path, err)))
      return rc;
  }
  c->n_offers = json_array_size(offers);
  c->offers = tw_calloc(c->n_offers ? c->n_offers : 1, sizeof *c->offers);
  for (size_t i = 0; i < c->n_offers; i++) {
    char path[64], tname[32], rname[32], od[32];
    snprintf(path, sizeof path, "/aws/offers/%zu", i);
    json_t *o = json_array_get(offers, i);
    struct fc_offer *of = &c->offers[i];
    if ((rc = str_field(o, "instance_type", tname, sizeof tname, true, path,
                        err)) ||
        (rc = str_field(o, "region", rname, sizeof rname, true, path, err)) ||
        (rc = str_field(o, "on_demand", od, sizeof od, true, path, err)))
      return rc;
    const struct fc_itype *it = fc_catalog_itype(c, tname);
    const struct fc_region *reg = fc_catalog_region(c, rname);
    if (!it || !reg)
      return tw_err_set(err, TW_E_INVALID,
                        "%s: unknown instance_type or region", path);
    of->itype = (size_t)(it - c->itypes);
    of->region = (size_t)(reg - c->regions);
    if (!fc_price_parse(od, &of->on_demand_uusd))
      return tw_err_set(err, TW_E_INVALID, "%s/on_demand: bad price \"%s\"",
                        path, od);
    json_t *spot = json_object_get(o, "spot");
    if (!json_is_object(spot) || !json_object_size(spot))
      return tw_err_set(err, TW_E_INVALID,
                        "%s/spot: expected {zone: price, ...}", path);
    const char *zname;
    json_t *pv;
    json_object_foreach(spot, zname, pv) {
      int z = fc_region_zone(reg, zname);
      int64_t p;
      if (z < 0 || !json_is_string(pv) ||
          !fc_price_parse(json_string_value(pv), &p))
        return tw_err_set(err, TW_E_INVALID,
                          "%s/spot/%s: unknown zone or bad price", path, zname);
      of->zones[of->n_zones].zone = (size_t)z;
      of->zones[of->n_zones].spot_uusd = p;
      of->n_zones++;
    }
  }
  return TW_OK;
}

enum tw_rc fc_catalog_parse(const char *text, size_t len,
                            struct fc_catalog **out, struct tw_err *err) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return tw_err_set(err, TW_E_INVALID, "catalog:%d:%d: %s", je.line,
                      je.column, je.text);
  struct fc_catalog *c = tw_calloc(1, sizeof *c);
  enum tw_rc rc;
  json_t *aws = json_object_get(root, "aws");
  if (!json_is_object(aws))
    rc = tw_err_set(err, TW_E_INVALID, "/aws: missing section");
  else
    rc = parse_aws(aws, c, err);
  json_decref(root);
  if (rc) {
    fc_catalog_free(c);
    return rc;
  }
  *out = c;
  return TW_OK;
}

enum tw_rc fc_catalog_load_file(const char *path, struct fc_catalog **out,
                                struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_set(err, TW_E_IO, "%s: cannot open", path);
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b.len + n > (16u << 20)) {
      fclose(f);
      tw_buf_release(&b);
      return tw_err_set(err, TW_E_TOOBIG, "%s: larger than 16 MiB", path);
    }
    tw_buf_add(&b, chunk, n);
  }
  fclose(f);
  enum tw_rc rc = fc_catalog_parse(b.data ? b.data : "", b.len, out, err);
  tw_buf_release(&b);
  return rc;
}

enum tw_rc fc_catalog_builtin(struct fc_catalog **out, struct tw_err *err) {
  return fc_catalog_parse((const char *)fc_catalog_json, fc_catalog_json_len,
                          out, err);
}

void fc_catalog_free(struct fc_catalog *c) {
  if (!c)
    return;
  free(c->regions);
  free(c->itypes);
  free(c->offers);
  free(c);
}

const struct fc_region *fc_catalog_region(const struct fc_catalog *c,
                                          const char *name) {
  for (size_t i = 0; i < c->n_regions; i++)
    if (!strcmp(c->regions[i].name, name))
      return &c->regions[i];
  return NULL;
}

int fc_region_zone(const struct fc_region *r, const char *name) {
  for (size_t i = 0; i < r->n_zones; i++)
    if (!strcmp(r->zones[i].name, name))
      return (int)i;
  return -1;
}

const struct fc_itype *fc_catalog_itype(const struct fc_catalog *c,
                                        const char *name) {
  for (size_t i = 0; i < c->n_itypes; i++)
    if (!strcmp(c->itypes[i].name, name))
      return &c->itypes[i];
  return NULL;
}

const struct fc_offer *fc_catalog_offer(const struct fc_catalog *c,
                                        const char *itype, const char *region) {
  const struct fc_itype *it = fc_catalog_itype(c, itype);
  const struct fc_region *r = fc_catalog_region(c, region);
  if (!it || !r)
    return NULL;
  for (size_t i = 0; i < c->n_offers; i++)
    if (c->offers[i].itype == (size_t)(it - c->itypes) &&
        c->offers[i].region == (size_t)(r - c->regions))
      return &c->offers[i];
  return NULL;
}

int64_t fc_offer_spot(const struct fc_offer *o, size_t z) {
  for (size_t i = 0; i < o->n_zones; i++)
    if (o->zones[i].zone == z)
      return o->zones[i].spot_uusd;
  return -1;
}
