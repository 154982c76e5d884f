/* catalog_adapt.c - source tables from adapters and files, the merge of
 * source tables into one snapshot, interruption-risk data, and the
 * normalized CSV form the store keeps. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "billing/catalog/catalog_int.h"
#include "billing/catalog/clouds.h"
#include "broker/base/mem.h"

void tw_cat_sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
  for (unsigned i = 0; i < n && i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  out[64] = '\0';
}

/* ---- files
 * ------------------------------------------------------------------------ */

/* The rate a source table records: the one its prices went through, or
 * USD's identity. */
static void set_rate(struct tw_cat_source_info *si, const struct tw_rate *r) {
  if (r) {
    si->rate = *r;
    return;
  }
  memset(&si->rate, 0, sizeof si->rate);
  snprintf(si->rate.currency, sizeof si->rate.currency, "USD");
  si->rate.nusd_per_unit = 1000000000;
  snprintf(si->rate.text, sizeof si->rate.text, "1");
  snprintf(si->rate.source, sizeof si->rate.source, "identity");
}

enum tw_rc tw_cat_snap_from_csv(const char *data, size_t len,
                                const struct tw_csv_opts *o,
                                const struct tw_cat_source_info *info,
                                struct tw_cat_snap **out, struct tw_err *err) {
  struct tw_cat_builder b;
  struct tw_cat_report rep;
  memset(&rep, 0, sizeof rep);
  tw_cat_builder_init(&b);
  struct tw_cat_source_info si = *info;
  memset(&si.report, 0, sizeof si.report);
  set_rate(&si, o->rate);
  uint16_t src = tw_cat_bld_source(&b, &si);
  struct tw_csv_opts oo = *o;
  oo.source = src;
  enum tw_rc rc = tw_csv_ingest(data, len, &oo, &b, &rep, err);
  if (rc) {
    tw_cat_builder_release(&b);
    *out = NULL;
    return rc;
  }
  struct tw_cat_source_info *s = tw_cat_bld_source_at(&b, src);
  s->report = rep;
  s->offers = rep.offers;
  *out = tw_cat_bld_finish(&b, 0, info->fetched_ms);
  (*out)->adapters = o->adapters;
  return TW_OK;
}

/* ---- adapters
 * --------------------------------------------------------------------- */

static bool is_reserved(const char *k) {
  static const char *const R[] = {"jurisdiction", "country", "geo",
                                  "interruption", "id",      NULL};
  for (int i = 0; R[i]; i++)
    if (!strcmp(R[i], k))
      return true;
  return false;
}

/* One adapter offer into the builder; returns the reason it was rejected,
 * or TW_CAT_REJ_COUNT. */
static enum tw_cat_reject adapt_one(struct tw_cat_builder *b,
                                    const struct tw_offer *in, size_t row,
                                    const struct tw_cat_adapter_opts *o,
                                    const struct tw_rate *rate, uint16_t src,
                                    struct tw_cat_report *rep) {
  if (!in->instance_type[0])
    return TW_CAT_REJ_NO_TYPE;
  if (!in->region[0])
    return TW_CAT_REJ_NO_REGION;
  /* a colon in a name would make offer ids ambiguous */
  if (strchr(in->instance_type, ':') || strchr(in->region, ':') ||
      strchr(in->zone, ':') || strchr(in->zone_id, ':') ||
      strchr(in->account, ':') || strchr(in->rack, ':') ||
      strchr(in->zone, '/') || strchr(in->zone_id, '/'))
    return TW_CAT_REJ_BAD_TEXT;
  if (in->vcpus < 0 || in->vcpus > 100000 || in->memory_mib < 0 ||
      in->memory_mib > ((int64_t)1 << 40) || in->accel_count < 0 ||
      in->accel_count > 100000 || in->accel_memory_mib < 0 ||
      (in->market != TW_MARKET_SPOT && in->market != TW_MARKET_ON_DEMAND &&
       in->market != TW_MARKET_PRIVATE))
    return TW_CAT_REJ_BAD_NUMBER;
  if (in->price_uusd_per_hour < 0 ||
      in->price_uusd_per_hour > TW_MODEL_PRICE_MAX_UUSD)
    return TW_CAT_REJ_BAD_PRICE;
  enum tw_cat_note notes[4];
  int nn = 0;

  /* money: adapters hand over micro-USD (struct tw_offer's unit), or
   * their own price in another currency, converted here with the rate
   * table (the one source of rates) at the source's rate: one currency
   * per listing */
  int64_t micro = in->price_uusd_per_hour, uusd = micro;
  bool foreign = *in->price_currency && strcmp(in->price_currency, "USD");
  if (foreign || strcmp(rate->currency, "USD")) {
    if (!foreign || strcmp(rate->currency, in->price_currency) ||
        rate->nusd_per_unit <= 0)
      return TW_CAT_REJ_NO_RATE;
    micro = in->price_micro_per_hour;
    if (micro < 0 || tw_rate_convert(rate, micro, &uusd, NULL) ||
        uusd > TW_MODEL_PRICE_MAX_UUSD)
      return TW_CAT_REJ_BAD_PRICE;
  }
  int accel_count = in->accel_count;
  if (uusd == 0 && (o->chargeback_vcpu_uusd || o->chargeback_gib_uusd ||
                    o->chargeback_accel_uusd)) {
    /* a private cluster's chargeback: per vCPU, GiB and device hour */
    __int128 c =
        (__int128)o->chargeback_vcpu_uusd * in->vcpus +
        ((__int128)o->chargeback_gib_uusd * in->memory_mib + 512) / 1024 +
        (__int128)o->chargeback_accel_uusd * accel_count;
    if (c > TW_MODEL_PRICE_MAX_UUSD)
      return TW_CAT_REJ_BAD_PRICE;
    uusd = (int64_t)c;
    micro = uusd;
  }

  struct tw_cat_loc l;
  memset(&l, 0, sizeof l);
  l.provider = tw_cat_bld_cstr(b, in->provider);
  l.account = tw_cat_bld_cstr(b, in->account[0] ? in->account : in->provider);
  l.region = tw_cat_bld_cstr(b, in->region);
  l.zone = tw_cat_bld_cstr(b, in->zone);
  l.zone_id = tw_cat_bld_cstr(b, in->zone_id);
  l.rack = tw_cat_bld_cstr(b, in->rack);
  const char *zt = tw_offer_label(in, "zone_type");
  l.local_zone = zt && !strcmp(zt, "local-zone");
  if (!tw_cat_loc_geo(b, &l, o->regions, in->provider, in->region))
    notes[nn++] = TW_CAT_NOTE_REGION_UNKNOWN;

  /* the source's own adapter knows best; else the registry, by name */
  const struct tw_provider_info *cloud =
      o->info ? o->info : tw_cat_cloud(o->adapters, in->provider);
  struct tw_cat_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.provider = l.provider;
  sh.type = tw_cat_bld_cstr(b, in->instance_type);
  sh.vcpus = in->vcpus;
  sh.memory_mib = in->memory_mib;
  enum tw_arch arch = in->arch;
  if (arch == TW_ARCH_ANY) {
    arch = tw_norm_arch_guess(cloud, in->instance_type);
    if (arch != TW_ARCH_ANY)
      notes[nn++] = TW_CAT_NOTE_ARCH_GUESSED;
  }
  sh.arch = (uint8_t)arch;
  if (in->accel_name[0] && accel_count > 0) {
    struct tw_accel_info ai;
    bool control;
    const char *name = in->accel_name;
    if (tw_norm_npu_resource(name, &control)) {
      /* npu.compute carries the devices; the model comes with it as a
       * label (npu.control stays a label of its own) */
      const char *model = tw_offer_label(in, "npu.model");
      name = model ? model : "Ascend-910B";
    }
    if (tw_norm_accel(name, strlen(name), in->accel_memory_mib, &ai)) {
      sh.accel = tw_cat_bld_cstr(b, ai.name);
      if (strcmp(ai.name, in->accel_name))
        sh.accel_listed = tw_cat_bld_cstr(b, in->accel_name);
      sh.accel_vendor = tw_cat_bld_cstr(b, ai.vendor);
      sh.accel_kind = (uint8_t)ai.kind;
      sh.accel_memory_mib =
          in->accel_memory_mib > 0 ? in->accel_memory_mib : ai.memory_mib;
    } else {
      notes[nn++] = TW_CAT_NOTE_ACCEL_UNKNOWN;
      sh.accel = tw_cat_bld_cstr(b, name);
      sh.accel_vendor = ai.vendor ? tw_cat_bld_cstr(b, ai.vendor) : 0;
      sh.accel_kind = (uint8_t)ai.kind;
      sh.accel_memory_mib = in->accel_memory_mib;
    }
    sh.accel_milli = accel_count * 1000;
  }

  /* the adapter's own labels, minus those computed here */
  char lab[TW_OFFER_LABELS_MAX * 100 + 128 + TW_MODEL_ID_MAX];
  size_t ll = 0;
  /* an adapter that names its offers its own way keeps its names: the
   * scheduler's attempts and the adapter's launches refer to them */
  if (in->id[0]) {
    /* room for every field at its longest, so nothing is cut */
    char canon[6 * TW_MODEL_NAME_MAX + 32];
    snprintf(canon, sizeof canon, "%s:%s:%s%s%s:%s:%s",
             in->account[0] ? in->account : in->provider, in->region,
             in->zone[0] ? in->zone : in->zone_id, in->rack[0] ? "/" : "",
             in->rack, in->instance_type, tw_market_str(in->market));
    if (strcmp(canon, in->id)) {
      int w = snprintf(lab + ll, sizeof lab - ll, "%sid=%s", ll ? "\x1f" : "",
                       in->id);
      if (w > 0 && (size_t)w < sizeof lab - ll)
        ll += (size_t)w;
    }
  }
  for (size_t i = 0; i < in->n_labels && i < TW_OFFER_LABELS_MAX; i++) {
    if (is_reserved(in->labels[i].key))
      continue;
    int w = snprintf(lab + ll, sizeof lab - ll, "%s%s=%s", ll ? "\x1f" : "",
                     in->labels[i].key, in->labels[i].value);
    if (w < 0 || (size_t)w >= sizeof lab - ll)
      break;
    ll += (size_t)w;
  }

  const char *zone_key = in->zone_id[0] ? in->zone_id : in->zone;
  const char *acct = in->account[0] ? in->account : in->provider;
  struct tw_cat_offer x;
  memset(&x, 0, sizeof x);
  x.key =
      tw_cat_offer_key(acct, strlen(acct), in->region, strlen(in->region),
                       zone_key, strlen(zone_key), in->rack, strlen(in->rack),
                       in->instance_type, strlen(in->instance_type));
  x.market = (uint8_t)in->market;
  if (tw_cat_bld_find(b, x.key, x.market) >= 0)
    return TW_CAT_REJ_DUPLICATE;
  x.loc = tw_cat_bld_loc(b, &l);
  x.shape = tw_cat_bld_shape(b, &sh);
  x.price_uusd = uusd;
  x.src_price_micro = micro;
  x.observed_ms = in->price_observed_ms;
  x.row = (uint32_t)row;
  x.labels = tw_cat_bld_str(b, lab, ll);
  x.capacity = in->capacity < 0           ? -1
               : in->capacity > INT32_MAX ? INT32_MAX
                                          : (int32_t)in->capacity;
  x.src = src;
  x.risk = tw_cat_risk_of_pct(in->interruption_pct);
  struct tw_billing_rule rule;
  tw_norm_billing(cloud, in->market, &rule);
  int64_t gran = in->billing_granularity_s > 0 ? in->billing_granularity_s
                 : o->granularity_s > 0        ? o->granularity_s
                                               : rule.granularity_s;
  int64_t minc = in->min_charge_s > 0  ? in->min_charge_s
                 : o->min_charge_s > 0 ? o->min_charge_s
                                       : rule.min_charge_s;
  x.granularity_s = (int32_t)(gran > INT32_MAX ? INT32_MAX : gran);
  x.min_charge_s = (int32_t)(minc > INT32_MAX ? INT32_MAX : minc);
  tw_cat_bld_offer(b, &x);
  for (int i = 0; i < nn; i++)
    rep->notes[notes[i]]++;
  return TW_CAT_REJ_COUNT;
}

enum tw_rc tw_cat_snap_from_offers(const struct tw_offer *offers, size_t n,
                                   const struct tw_cat_adapter_opts *o,
                                   const struct tw_cat_source_info *info,
                                   struct tw_cat_snap **out,
                                   struct tw_err *err) {
  (void)err;
  struct tw_cat_builder b;
  struct tw_cat_report rep;
  memset(&rep, 0, sizeof rep);
  tw_cat_builder_init(&b);
  struct tw_cat_source_info si = *info;
  memset(&si.report, 0, sizeof si.report);
  /* An adapter prices in USD or reports its own currency (see adapt_one):
   * the source records the rate of the first other currency it names, or
   * USD's identity.  A currency the table lacks rejects those offers as
   * no_rate. */
  set_rate(&si, NULL);
  for (size_t i = 0; i < n; i++) {
    const char *cur = offers[i].price_currency;
    if (*cur && strcmp(cur, "USD")) {
      const struct tw_rate *r = o->rates ? tw_rates_find(o->rates, cur) : NULL;
      if (r)
        set_rate(&si, r);
      else { /* no rate: nothing of this source converts */
        snprintf(si.rate.currency, sizeof si.rate.currency, "%.3s", cur);
        si.rate.nusd_per_unit = 0;
        si.rate.text[0] = '\0';
        snprintf(si.rate.source, sizeof si.rate.source, "no rate");
      }
      break;
    }
  }
  uint16_t src = tw_cat_bld_source(&b, &si);
  for (size_t i = 0; i < n; i++) {
    rep.rows++;
    enum tw_cat_reject why =
        adapt_one(&b, &offers[i], i + 1, o, &si.rate, src, &rep);
    if (why == TW_CAT_REJ_COUNT) {
      rep.normalized++;
      rep.offers++;
    } else {
      rep.rejected[why]++;
      if (!rep.first_rejected_line[why])
        rep.first_rejected_line[why] = i + 1;
    }
  }
  struct tw_cat_source_info *s = tw_cat_bld_source_at(&b, src);
  s->report = rep;
  s->offers = rep.offers;
  *out = tw_cat_bld_finish(&b, 0, info->fetched_ms);
  (*out)->adapters = o->adapters;
  return TW_OK;
}

/* ---- interruption risk
 * -------------------------------------------------------------- */

struct tw_cat_risk {
  uint64_t *keys; /* hash of region and type; 0 = empty */
  uint8_t *bands;
  size_t mask, n;
};

static uint64_t risk_key(const char *region, const char *type) {
  uint64_t k = tw_cat_hash(region, strlen(region), 0x51);
  k = tw_cat_hash(type, strlen(type), k);
  return k ? k : 1;
}

static void risk_put(struct tw_cat_risk *r, uint64_t k, uint8_t band) {
  for (size_t i = k & r->mask;; i = (i + 1) & r->mask) {
    if (!r->keys[i]) {
      r->keys[i] = k;
      r->bands[i] = band;
      r->n++;
      return;
    }
    if (r->keys[i] == k) {
      r->bands[i] = band;
      return;
    }
  }
}

enum tw_rc tw_cat_risk_load(const char *text, size_t len,
                            struct tw_cat_risk **out, struct tw_err *err) {
  json_error_t je;
  *out = NULL;
  json_t *root = json_loadb(text, len, 0, &je);
  if (!root)
    return tw_err_set(err, TW_E_INVALID, "interruption data: line %d: %s",
                      je.line, je.text);
  json_t *adv = json_object_get(root, "spot_advisor");
  json_t *ranges = json_object_get(root, "ranges");
  if (!json_is_object(adv) || !json_is_array(ranges)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID,
                      "interruption data: expected the Spot Advisor feed "
                      "(spot_advisor and ranges)");
  }
  /* the feed's band index -> ours, by the band's label */
  uint8_t band_of[16] = {0};
  size_t nr = json_array_size(ranges);
  for (size_t i = 0; i < nr; i++) {
    json_t *g = json_array_get(ranges, i);
    json_t *idx = json_object_get(g, "index");
    json_t *label = json_object_get(g, "label");
    if (json_is_integer(idx) && json_is_string(label) &&
        json_integer_value(idx) >= 0 && json_integer_value(idx) < 16)
      band_of[json_integer_value(idx)] =
          (uint8_t)tw_risk_parse(json_string_value(label));
  }
  size_t total = 0;
  const char *region;
  json_t *rv;
  json_object_foreach(adv, region, rv) {
    json_t *lin = json_object_get(rv, "Linux");
    total += json_is_object(lin) ? json_object_size(lin) : 0;
  }
  struct tw_cat_risk *r = tw_calloc(1, sizeof *r);
  size_t sz = 64;
  while (sz < total * 2)
    sz *= 2;
  r->keys = tw_calloc(sz, sizeof *r->keys);
  r->bands = tw_calloc(sz, 1);
  r->mask = sz - 1;
  json_object_foreach(adv, region, rv) {
    json_t *lin = json_object_get(rv, "Linux");
    const char *type;
    json_t *tv;
    if (!json_is_object(lin))
      continue;
    json_object_foreach(lin, type, tv) {
      json_t *rr = json_object_get(tv, "r");
      if (!json_is_integer(rr) || json_integer_value(rr) < 0 ||
          json_integer_value(rr) >= 16)
        continue;
      uint8_t band = band_of[json_integer_value(rr)];
      if (band != TW_RISK_UNKNOWN)
        risk_put(r, risk_key(region, type), band);
    }
  }
  json_decref(root);
  *out = r;
  return TW_OK;
}

void tw_cat_risk_free(struct tw_cat_risk *r) {
  if (!r)
    return;
  free(r->keys);
  free(r->bands);
  free(r);
}

size_t tw_cat_risk_count(const struct tw_cat_risk *r) { return r ? r->n : 0; }

enum tw_risk tw_cat_risk_find(const struct tw_cat_risk *r, const char *region,
                              const char *type) {
  if (!r)
    return TW_RISK_UNKNOWN;
  uint64_t k = risk_key(region, type);
  for (size_t i = k & r->mask;; i = (i + 1) & r->mask) {
    if (!r->keys[i])
      return TW_RISK_UNKNOWN;
    if (r->keys[i] == k)
      return (enum tw_risk)r->bands[i];
  }
}

/* ---- merging
 * -------------------------------------------------------------------------- */

/* (account, zone id) -> zone name, learned from every offer that carries
 * both (AWS adapters do): files that only name zone ids get the names. */
struct zmap {
  uint64_t *keys;
  const char **names;
  size_t mask;
};

static uint64_t zkey(const char *account, const char *zone_id) {
  uint64_t k = tw_cat_hash(account, strlen(account), 0x20);
  k = tw_cat_hash(zone_id, strlen(zone_id), k);
  return k ? k : 1;
}

static void zmap_build(struct zmap *z, struct tw_cat_snap *const *srcs,
                       size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += srcs[i]->n_locs;
  size_t sz = 16;
  while (sz < total * 2)
    sz *= 2;
  z->keys = tw_calloc(sz, sizeof *z->keys);
  z->names = tw_calloc(sz, sizeof *z->names);
  z->mask = sz - 1;
  for (size_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < srcs[i]->n_locs; k++) {
      const struct tw_cat_loc *l = &srcs[i]->locs[k];
      if (!l->zone || !l->zone_id)
        continue;
      uint64_t key = zkey(tw_strpool_str(&srcs[i]->pool, l->account),
                          tw_strpool_str(&srcs[i]->pool, l->zone_id));
      for (size_t j = key & z->mask;; j = (j + 1) & z->mask) {
        if (!z->keys[j]) {
          z->keys[j] = key;
          z->names[j] = tw_strpool_str(&srcs[i]->pool, l->zone);
          break;
        }
        if (z->keys[j] == key)
          break;
      }
    }
}

static const char *zmap_find(const struct zmap *z, const char *account,
                             const char *zone_id) {
  uint64_t key = zkey(account, zone_id);
  for (size_t j = key & z->mask;; j = (j + 1) & z->mask) {
    if (!z->keys[j])
      return NULL;
    if (z->keys[j] == key)
      return z->names[j];
  }
}

void tw_cat_snap_merge(struct tw_cat_snap *const *srcs, size_t n,
                       const struct tw_cat_risk *risk,
                       const struct tw_provider_ops *const *adapters,
                       uint64_t version, int64_t now_ms,
                       struct tw_cat_snap **out) {
  /* precedence: override, adapter, seed; the given order within a mode */
  size_t *order = tw_malloc((n ? n : 1) * sizeof *order);
  size_t no = 0;
  for (int mode = TW_CAT_OVERRIDE; mode >= TW_CAT_SEED; mode--)
    for (size_t i = 0; i < n; i++)
      if (srcs[i]->n_srcs && (int)srcs[i]->srcs[0].mode == mode)
        order[no++] = i;
  struct zmap zm;
  zmap_build(&zm, srcs, n);
  struct tw_cat_builder b;
  tw_cat_builder_init(&b);
  for (size_t oi = 0; oi < no; oi++) {
    const struct tw_cat_snap *s = srcs[order[oi]];
    const struct tw_strpool *p = &s->pool;
    uint16_t *src_map =
        tw_malloc((s->n_srcs ? s->n_srcs : 1) * sizeof *src_map);
    for (size_t k = 0; k < s->n_srcs; k++) {
      struct tw_cat_source_info si = s->srcs[k];
      si.offers = si.superseded = 0;
      src_map[k] = tw_cat_bld_source(&b, &si);
    }
    uint32_t *loc_map = tw_malloc(((size_t)s->n_locs + 1) * sizeof *loc_map);
    /* whether the feed's bands apply at each location: by its provider's
     * info block (catalog_risk_feed) */
    bool *loc_feed = tw_malloc(((size_t)s->n_locs + 1) * sizeof *loc_feed);
    for (uint32_t k = 0; k < s->n_locs; k++) {
      const struct tw_cat_loc *l = &s->locs[k];
      struct tw_cat_loc x = *l;
      x.provider = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->provider));
      x.account = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->account));
      x.region = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->region));
      x.zone = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->zone));
      x.zone_id = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->zone_id));
      x.rack = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->rack));
      x.country = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->country));
      x.jurisdiction = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->jurisdiction));
      x.location = tw_cat_bld_cstr(&b, tw_strpool_str(p, l->location));
      if (!l->zone && l->zone_id) {
        const char *name = zmap_find(&zm, tw_strpool_str(p, l->account),
                                     tw_strpool_str(p, l->zone_id));
        if (name)
          x.zone = tw_cat_bld_cstr(&b, name);
      }
      loc_map[k] = tw_cat_bld_loc(&b, &x);
      const struct tw_provider_info *cloud =
          risk ? tw_cat_cloud(adapters, tw_strpool_str(p, l->provider)) : NULL;
      loc_feed[k] = cloud && cloud->catalog_risk_feed;
    }
    uint32_t *shape_map =
        tw_malloc(((size_t)s->n_shapes + 1) * sizeof *shape_map);
    for (uint32_t k = 0; k < s->n_shapes; k++) {
      const struct tw_cat_shape *sh = &s->shapes[k];
      struct tw_cat_shape x = *sh;
      x.provider = tw_cat_bld_cstr(&b, tw_strpool_str(p, sh->provider));
      x.type = tw_cat_bld_cstr(&b, tw_strpool_str(p, sh->type));
      x.accel = tw_cat_bld_cstr(&b, tw_strpool_str(p, sh->accel));
      x.accel_vendor = tw_cat_bld_cstr(&b, tw_strpool_str(p, sh->accel_vendor));
      x.accel_listed = tw_cat_bld_cstr(&b, tw_strpool_str(p, sh->accel_listed));
      shape_map[k] = tw_cat_bld_shape(&b, &x);
    }
    for (size_t i = 0; i < s->n_offers; i++) {
      struct tw_cat_offer x = s->offers[i];
      const struct tw_cat_loc *l = &s->locs[x.loc];
      x.src = x.src < s->n_srcs ? src_map[x.src] : 0;
      /* the feed's band where the source had no estimate of its own */
      if (risk && loc_feed[x.loc] && x.market == TW_MARKET_SPOT &&
          x.risk == TW_CAT_RISK_NONE) {
        enum tw_risk r =
            tw_cat_risk_find(risk, tw_strpool_str(p, l->region),
                             tw_strpool_str(p, s->shapes[x.shape].type));
        if (r != TW_RISK_UNKNOWN)
          x.risk = tw_cat_risk_of_band(r);
      }
      x.loc = loc_map[x.loc];
      x.shape = shape_map[x.shape];
      x.labels =
          x.labels ? tw_cat_bld_cstr(&b, tw_strpool_str(p, x.labels)) : 0;
      struct tw_cat_source_info *si = tw_cat_bld_source_at(&b, x.src);
      if (tw_cat_bld_offer(&b, &x)) {
        if (si)
          si->offers++;
      } else if (si) {
        si->superseded++;
      }
    }
    free(src_map);
    free(loc_map);
    free(loc_feed);
    free(shape_map);
  }
  free(zm.keys);
  free(zm.names);
  free(order);
  *out = tw_cat_bld_finish(&b, version, now_ms);
  (*out)->adapters = adapters;
}

/* ---- the normalized CSV form
 * --------------------------------------------------------- */

static const char NORM_HEADER[] =
    "row,provider,account,region,zone,zone_id,local_zone,rack,instance_type,"
    "arch,vcpus,memory_mib,accelerator,accelerator_vendor,accelerator_kind,"
    "accelerator_milli,accelerator_memory_mib,market,price_uusd,"
    "source_price_micro,granularity_s,min_charge_s,risk,capacity,observed_ms,"
    "labels,accelerator_listed\n";
#define NORM_NFIELDS 27

static void csv_str(struct tw_buf *b, const char *s) {
  bool quote = strpbrk(s, ",\"\n\r") != NULL ||
               (*s && (s[0] == ' ' || s[strlen(s) - 1] == ' '));
  if (!quote) {
    tw_buf_adds(b, s);
    return;
  }
  tw_buf_addc(b, '"');
  for (; *s; s++) {
    if (*s == '"')
      tw_buf_addc(b, '"');
    tw_buf_addc(b, *s);
  }
  tw_buf_addc(b, '"');
}

void tw_cat_snap_write_csv(const struct tw_cat_snap *s, struct tw_buf *out) {
  tw_buf_adds(out, NORM_HEADER);
  for (size_t i = 0; i < s->n_offers; i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, i, &v);
    tw_buf_printf(out, "%" PRIu32 ",", v.source_row);
    const char *strs[] = {v.provider, v.account, v.region, v.zone, v.zone_id};
    for (size_t k = 0; k < 5; k++) {
      csv_str(out, strs[k]);
      tw_buf_addc(out, ',');
    }
    tw_buf_printf(out, "%d,", v.local_zone ? 1 : 0);
    csv_str(out, v.rack);
    tw_buf_addc(out, ',');
    csv_str(out, v.instance_type);
    tw_buf_printf(out, ",%s,%d,%" PRId64 ",",
                  v.arch == TW_ARCH_ANY ? "" : tw_arch_str(v.arch), v.vcpus,
                  v.memory_mib);
    csv_str(out, v.accel);
    tw_buf_addc(out, ',');
    csv_str(out, v.accel_vendor);
    /* risk: a percentage of the source's own, or a band */
    const struct tw_cat_offer *o = &s->offers[i];
    char risk[16] = "";
    if (o->risk != TW_CAT_RISK_NONE && o->risk >= TW_CAT_RISK_BAND)
      snprintf(risk, sizeof risk, "%s", tw_risk_str(v.risk));
    else if (o->risk != TW_CAT_RISK_NONE)
      snprintf(risk, sizeof risk, "%d", o->risk);
    tw_buf_printf(out,
                  ",%s,%d,%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64
                  ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",",
                  tw_accel_kind_str(v.accel_kind), v.accel_milli,
                  v.accel_memory_mib, tw_market_str(v.market),
                  v.price_uusd_per_hour, v.source_price_micro, v.granularity_s,
                  v.min_charge_s, risk, v.capacity, v.observed_ms);
    csv_str(out, v.labels);
    tw_buf_addc(out, ',');
    csv_str(out, s->shapes[o->shape].accel_listed ? v.accel_listed : "");
    tw_buf_addc(out, '\n');
  }
}

static bool fld_int(const struct tw_csv_record *r, size_t i, int64_t min,
                    int64_t max, int64_t *out) {
  char buf[24];
  if (r->len[i] == 0 || r->len[i] >= sizeof buf)
    return false;
  memcpy(buf, r->f[i], r->len[i]);
  buf[r->len[i]] = '\0';
  char *end;
  long long v = strtoll(buf, &end, 10);
  if (*end || v < min || v > max)
    return false;
  *out = v;
  return true;
}

static enum tw_accel_kind kind_parse(const char *s, size_t n) {
  static const enum tw_accel_kind K[] = {TW_ACCEL_GPU, TW_ACCEL_NPU,
                                         TW_ACCEL_TPU, TW_ACCEL_FPGA,
                                         TW_ACCEL_UNKNOWN};
  for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) {
    const char *name = tw_accel_kind_str(K[i]);
    if (strlen(name) == n && !memcmp(name, s, n))
      return K[i];
  }
  return TW_ACCEL_NONE;
}

enum tw_rc tw_cat_snap_read_csv(const char *data, size_t len,
                                const struct tw_cat_source_info *info,
                                const struct tw_regions *regions,
                                struct tw_cat_snap **out, struct tw_err *err) {
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  struct tw_cat_builder b;
  enum tw_rc rc = TW_OK;
  *out = NULL;
  tw_csv_reader_init(&r, data, len);
  if (!tw_csv_read(&r, &rec) || rec.n != NORM_NFIELDS ||
      strncmp(rec.f[0], "row", rec.len[0])) {
    tw_csv_reader_release(&r);
    return tw_err_set(err, TW_E_INVALID,
                      "stored catalog: not a normalized catalog table");
  }
  tw_cat_builder_init(&b);
  uint16_t src = tw_cat_bld_source(&b, info);
  while (tw_csv_read(&r, &rec)) {
    int64_t row, local, vcpus, mem, milli, amem, price, sprice, gran, minc, cap,
        obs;
    if (rec.n != NORM_NFIELDS || rec.bad_quote ||
        !fld_int(&rec, 0, 0, UINT32_MAX, &row) ||
        !fld_int(&rec, 6, 0, 1, &local) ||
        !fld_int(&rec, 10, 0, 100000, &vcpus) ||
        !fld_int(&rec, 11, 0, (int64_t)1 << 40, &mem) ||
        !fld_int(&rec, 15, 0, 100000000, &milli) ||
        !fld_int(&rec, 16, 0, (int64_t)1 << 40, &amem) ||
        !fld_int(&rec, 18, 0, TW_MODEL_PRICE_MAX_UUSD, &price) ||
        !fld_int(&rec, 19, 0, INT64_MAX / 2, &sprice) ||
        !fld_int(&rec, 20, 0, INT32_MAX, &gran) ||
        !fld_int(&rec, 21, 0, INT32_MAX, &minc) ||
        !fld_int(&rec, 23, -1, INT32_MAX, &cap) ||
        !fld_int(&rec, 24, 0, INT64_MAX / 2, &obs)) {
      rc = tw_err_set(err, TW_E_INVALID, "stored catalog line %zu: malformed",
                      rec.line);
      break;
    }
    struct tw_cat_loc l;
    memset(&l, 0, sizeof l);
    l.provider = tw_cat_bld_str(&b, rec.f[1], rec.len[1]);
    l.account = tw_cat_bld_str(&b, rec.f[2], rec.len[2]);
    l.region = tw_cat_bld_str(&b, rec.f[3], rec.len[3]);
    l.zone = tw_cat_bld_str(&b, rec.f[4], rec.len[4]);
    l.zone_id = tw_cat_bld_str(&b, rec.f[5], rec.len[5]);
    l.local_zone = (uint8_t)local;
    l.rack = tw_cat_bld_str(&b, rec.f[7], rec.len[7]);
    char prov[32], reg[64];
    snprintf(prov, sizeof prov, "%.*s", (int)rec.len[1], rec.f[1]);
    snprintf(reg, sizeof reg, "%.*s", (int)rec.len[3], rec.f[3]);
    tw_cat_loc_geo(&b, &l, regions, prov, reg);
    struct tw_cat_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.provider = l.provider;
    sh.type = tw_cat_bld_str(&b, rec.f[8], rec.len[8]);
    sh.arch = (uint8_t)tw_norm_arch(rec.f[9], rec.len[9]);
    sh.vcpus = (int32_t)vcpus;
    sh.memory_mib = mem;
    sh.accel = tw_cat_bld_str(&b, rec.f[12], rec.len[12]);
    sh.accel_vendor = tw_cat_bld_str(&b, rec.f[13], rec.len[13]);
    sh.accel_kind = (uint8_t)kind_parse(rec.f[14], rec.len[14]);
    sh.accel_milli = (int32_t)milli;
    sh.accel_memory_mib = amem;
    sh.accel_listed = tw_cat_bld_str(&b, rec.f[26], rec.len[26]);
    struct tw_cat_offer x;
    memset(&x, 0, sizeof x);
    bool spot = rec.len[17] == 4 && !memcmp(rec.f[17], "spot", 4);
    bool priv = rec.len[17] == 7 && !memcmp(rec.f[17], "private", 7);
    x.market = spot   ? TW_MARKET_SPOT
               : priv ? TW_MARKET_PRIVATE
                      : TW_MARKET_ON_DEMAND;
    const char *zk = rec.len[5] ? rec.f[5] : rec.f[4];
    size_t zl = rec.len[5] ? rec.len[5] : rec.len[4];
    x.key = tw_cat_offer_key(rec.f[2], rec.len[2], rec.f[3], rec.len[3], zk, zl,
                             rec.f[7], rec.len[7], rec.f[8], rec.len[8]);
    x.loc = tw_cat_bld_loc(&b, &l);
    x.shape = tw_cat_bld_shape(&b, &sh);
    x.price_uusd = price;
    x.src_price_micro = sprice;
    x.observed_ms = obs;
    x.row = (uint32_t)row;
    x.labels = tw_cat_bld_str(&b, rec.f[25], rec.len[25]);
    x.capacity = (int32_t)cap;
    x.granularity_s = (int32_t)gran;
    x.min_charge_s = (int32_t)minc;
    x.src = src;
    char band[8];
    snprintf(band, sizeof band, "%.*s",
             (int)(rec.len[22] < 7 ? rec.len[22] : 7), rec.f[22]);
    int64_t pct;
    x.risk = fld_int(&rec, 22, 0, 100, &pct)
                 ? (uint8_t)pct
                 : tw_cat_risk_of_band(tw_risk_parse(band));
    tw_cat_bld_offer(&b, &x);
  }
  tw_csv_reader_release(&r);
  if (rc) {
    tw_cat_builder_release(&b);
    return rc;
  }
  struct tw_cat_source_info *si = tw_cat_bld_source_at(&b, src);
  si->offers = b.s->n_offers;
  *out = tw_cat_bld_finish(&b, 0, info->fetched_ms);
  return TW_OK;
}
