/* pricing.c - the Price List Query API's GetProducts, built and read. */
#include "providers/aws/pricing.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/units.h"

void tw_aws_od_price_list_init(struct tw_aws_od_price_list *l) {
  memset(l, 0, sizeof *l);
}

void tw_aws_od_price_list_release(struct tw_aws_od_price_list *l) {
  free(l->items);
  memset(l, 0, sizeof *l);
}

static void filter(struct tw_buf *b, bool first, const char *field,
                   const char *value) {
  tw_buf_adds(b, first ? "" : ",");
  tw_buf_adds(b, "{\"Type\":\"TERM_MATCH\",\"Field\":");
  tw_buf_json_str(b, field);
  tw_buf_adds(b, ",\"Value\":");
  tw_buf_json_str(b, value);
  tw_buf_addc(b, '}');
}

void tw_aws_products_request(const char *region, const char *next,
                             struct tw_buf *out) {
  tw_buf_adds(out, "{\"ServiceCode\":\"AmazonEC2\",\"FormatVersion\":"
                   "\"aws_v1\",\"MaxResults\":100,\"Filters\":[");
  filter(out, true, "regionCode", region);
  filter(out, false, "operatingSystem", "Linux");
  filter(out, false, "tenancy", "Shared");
  filter(out, false, "preInstalledSw", "NA");
  filter(out, false, "capacitystatus", "Used");
  tw_buf_addc(out, ']');
  if (next && *next) {
    tw_buf_adds(out, ",\"NextToken\":");
    tw_buf_json_str(out, next);
  }
  tw_buf_addc(out, '}');
}

static const char *attr(json_t *attrs, const char *key) {
  json_t *v = json_object_get(attrs, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool attr_is(json_t *attrs, const char *key, const char *want) {
  const char *v = attr(attrs, key);
  return v && !strcmp(v, want);
}

/* The one hourly USD rate of a product's OnDemand term, in micro-USD
 * ("0.0960000000": rounded half up to the micro-dollar). */
static bool od_rate(json_t *product, int64_t *uusd) {
  json_t *od = json_object_get(json_object_get(product, "terms"), "OnDemand");
  if (!json_is_object(od) || json_object_size(od) != 1)
    return false;
  json_t *term = json_object_iter_value(json_object_iter(od));
  json_t *dims = json_object_get(term, "priceDimensions");
  if (!json_is_object(dims) || json_object_size(dims) != 1)
    return false;
  json_t *dim = json_object_iter_value(json_object_iter(dims));
  json_t *unit = json_object_get(dim, "unit");
  json_t *usd = json_object_get(json_object_get(dim, "pricePerUnit"), "USD");
  if (!json_is_string(unit) || strcmp(json_string_value(unit), "Hrs") ||
      !json_is_string(usd))
    return false;
  const char *end;
  int64_t v = 0;
  enum tw_dec_rc r =
      tw_dec_scaled(json_string_value(usd), &end, 1000000, 0, &v);
  if ((r != TW_DEC_OK && r != TW_DEC_FRACTION) || *end || v <= 0 ||
      v > 1000000LL * 1000000)
    return false;
  *uusd = v;
  return true;
}

enum tw_rc tw_aws_parse_products(const char *json, size_t len,
                                 struct tw_aws_od_price_list *out, char **next,
                                 struct tw_err *err) {
  *next = NULL;
  if (len > TW_AWS_PRICING_MAX_BYTES)
    return tw_err_set(err, TW_E_INVALID,
                      "aws pricing: GetProducts answer over %u bytes",
                      TW_AWS_PRICING_MAX_BYTES);
  json_error_t je;
  json_t *root = json_loadb(json, len, 0, &je);
  json_t *list = root ? json_object_get(root, "PriceList") : NULL;
  if (!json_is_array(list)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID,
                      "aws pricing: GetProducts answer without a PriceList");
  }
  json_t *nt = json_object_get(root, "NextToken");
  if (nt && !json_is_null(nt) &&
      (!json_is_string(nt) || json_string_length(nt) > 4096)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID,
                      "aws pricing: NextToken not a string of at most 4096 "
                      "bytes");
  }
  size_t i;
  json_t *item;
  json_array_foreach(list, i, item) {
    if (!json_is_string(item))
      continue;
    json_t *prod = json_loadb(json_string_value(item),
                              json_string_length(item), 0, &je);
    json_t *attrs =
        json_object_get(json_object_get(prod, "product"), "attributes");
    const char *type = attr(attrs, "instanceType");
    const char *region = attr(attrs, "regionCode");
    int64_t uusd;
    if (type && region && *type && *region &&
        strlen(type) < sizeof out->items[0].type &&
        strlen(region) < sizeof out->items[0].region &&
        attr_is(attrs, "operatingSystem", "Linux") &&
        attr_is(attrs, "tenancy", "Shared") &&
        attr_is(attrs, "preInstalledSw", "NA") &&
        attr_is(attrs, "capacitystatus", "Used") && od_rate(prod, &uusd)) {
      if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->items = tw_realloc(out->items, out->cap * sizeof *out->items);
      }
      struct tw_aws_od_price *p = &out->items[out->n++];
      memset(p, 0, sizeof *p);
      memcpy(p->type, type, strlen(type));
      memcpy(p->region, region, strlen(region));
      p->uusd = uusd;
    }
    json_decref(prod);
  }
  if (json_is_string(nt) && json_string_length(nt) > 0)
    *next = tw_strdup(json_string_value(nt));
  json_decref(root);
  return TW_OK;
}
