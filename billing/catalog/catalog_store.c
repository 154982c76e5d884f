/* catalog_store.c - the catalog's snapshots and spot price history in the
 * store: what a snapshot row holds (its offers as CSV, its report as JSON)
 * and which prices are worth recording.  The statements are the store's
 * (broker/core/store_catalog.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "billing/catalog/catalog_int.h"
#include "broker/base/mem.h"
#include "broker/core/store_catalog.h"

static char *report_json(const struct tw_cat_report *r) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b,
                "{\"rows\":%" PRIu64 ",\"normalized\":%" PRIu64
                ",\"offers\":%" PRIu64 ",\"rejected\":{",
                r->rows, r->normalized, r->offers);
  bool first = true;
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++)
    if (r->rejected[i]) {
      tw_buf_printf(&b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_reject_str((enum tw_cat_reject)i), r->rejected[i]);
      first = false;
    }
  tw_buf_adds(&b, "},\"notes\":{");
  first = true;
  for (int i = 0; i < TW_CAT_NOTE_COUNT; i++)
    if (r->notes[i]) {
      tw_buf_printf(&b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_note_str((enum tw_cat_note)i), r->notes[i]);
      first = false;
    }
  tw_buf_adds(&b, "}}");
  return tw_buf_detach(&b);
}

static void report_parse(const char *text, struct tw_cat_report *r) {
  memset(r, 0, sizeof *r);
  json_t *j = json_loads(text, 0, NULL);
  if (!j)
    return;
  r->rows = (uint64_t)json_integer_value(json_object_get(j, "rows"));
  r->normalized =
      (uint64_t)json_integer_value(json_object_get(j, "normalized"));
  r->offers = (uint64_t)json_integer_value(json_object_get(j, "offers"));
  json_t *rej = json_object_get(j, "rejected"),
         *notes = json_object_get(j, "notes");
  for (int i = 0; i < TW_CAT_REJ_COUNT; i++)
    r->rejected[i] = (uint64_t)json_integer_value(
        json_object_get(rej, tw_cat_reject_str((enum tw_cat_reject)i)));
  for (int i = 0; i < TW_CAT_NOTE_COUNT; i++)
    r->notes[i] = (uint64_t)json_integer_value(
        json_object_get(notes, tw_cat_note_str((enum tw_cat_note)i)));
  json_decref(j);
}

/* The spot prices of s that are new or changed since prev (NULL: all).
 * free() *out. */
static void changed_prices(const struct tw_cat_snap *s,
                           const struct tw_cat_snap *prev,
                           struct tw_store_cat_price **out, size_t *n) {
  const struct tw_cat_source_info *si = &s->srcs[0];
  struct tw_store_cat_price *p = NULL;
  size_t cap = 0;
  *n = 0;
  for (size_t i = 0; i < s->n_offers; i++) {
    const struct tw_cat_offer *o = &s->offers[i];
    if (o->market != TW_MARKET_SPOT)
      continue;
    if (prev) {
      int64_t k = tw_cat_snap_find_key(prev, o->key, o->market);
      if (k >= 0 && prev->offers[k].price_uusd == o->price_uusd)
        continue;
    }
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      p = tw_realloc(p, cap * sizeof *p);
    }
    struct tw_store_cat_price *x = &p[*n];
    if (!tw_cat_snap_offer_id(s, i, x->offer_id, sizeof x->offer_id))
      continue;
    x->price_uusd_per_hour = o->price_uusd;
    x->observed_ms = o->observed_ms ? o->observed_ms : si->fetched_ms;
    (*n)++;
  }
  *out = p;
}

enum tw_rc tw_cat_store_put(struct tw_store *st, const struct tw_cat_snap *s,
                            const struct tw_cat_snap *prev, int keep,
                            int64_t *version, struct tw_err *err) {
  if (!s->n_srcs)
    return tw_err_set(err, TW_E_INTERNAL, "catalog store: table has no source");
  const struct tw_cat_source_info *si = &s->srcs[0];
  struct tw_buf body;
  tw_buf_init(&body);
  tw_cat_snap_write_csv(s, &body);
  char *rep = report_json(&si->report);
  struct tw_store_cat_put p = {.source = si->name,
                               .kind = si->kind,
                               .mode = tw_cat_mode_str(si->mode),
                               .provider = si->provider,
                               .account = si->account,
                               .path = si->path,
                               .sha256 = si->sha256,
                               .currency = si->rate.currency,
                               .rate = si->rate.text,
                               .rate_date = si->rate.date,
                               .fetched_ms = si->fetched_ms,
                               .stored_ms = s->built_ms,
                               .rows = (int64_t)si->report.rows,
                               .normalized = (int64_t)si->report.normalized,
                               .offers = (int64_t)s->n_offers,
                               .report_json = rep,
                               .body = body.data,
                               .body_len = body.len,
                               .keep = keep > 0 ? keep : 2};
  struct tw_store_cat_price *prices;
  changed_prices(s, prev, &prices, &p.n_prices);
  p.prices = prices;
  enum tw_rc rc = tw_store_catalog_put(st, &p, version, err);
  free(prices);
  free(rep);
  tw_buf_release(&body);
  return rc;
}

enum tw_rc tw_cat_store_latest(struct tw_store *st, const char *name,
                               const struct tw_regions *regions,
                               struct tw_cat_snap **out, struct tw_err *err) {
  *out = NULL;
  struct tw_store_cat_latest l;
  bool found = false;
  enum tw_rc rc = tw_store_catalog_latest(st, name, &l, &found, err);
  if (rc || !found)
    return rc;
  struct tw_cat_source_info si;
  memset(&si, 0, sizeof si);
  snprintf(si.name, sizeof si.name, "%s", name);
  si.version = l.id;
  snprintf(si.kind, sizeof si.kind, "%s", l.kind);
  si.mode = !strcmp(l.mode, "override")  ? TW_CAT_OVERRIDE
            : !strcmp(l.mode, "adapter") ? TW_CAT_ADAPTER
                                         : TW_CAT_SEED;
  snprintf(si.provider, sizeof si.provider, "%s", l.provider);
  snprintf(si.account, sizeof si.account, "%s", l.account);
  snprintf(si.path, sizeof si.path, "%s", l.path);
  snprintf(si.sha256, sizeof si.sha256, "%s", l.sha256);
  snprintf(si.rate.currency, sizeof si.rate.currency, "%s", l.currency);
  snprintf(si.rate.text, sizeof si.rate.text, "%s", l.rate);
  snprintf(si.rate.date, sizeof si.rate.date, "%s", l.rate_date);
  tw_norm_decimal_nano(si.rate.text, strlen(si.rate.text),
                       &si.rate.nusd_per_unit, NULL);
  si.fetched_ms = l.fetched_ms;
  report_parse(l.report_json, &si.report);
  rc = tw_cat_snap_read_csv(l.body, l.body_len, &si, regions, out, err);
  tw_store_cat_latest_release(&l);
  return rc;
}

enum tw_rc tw_cat_store_history(struct tw_store *st, const char *offer_id,
                                size_t max, struct tw_cat_price_point **out,
                                size_t *n, struct tw_err *err) {
  struct tw_store_cat_point *pts;
  size_t np;
  *out = NULL;
  *n = 0;
  enum tw_rc rc = tw_store_catalog_history(st, offer_id, max, &pts, &np, err);
  if (rc)
    return rc;
  struct tw_cat_price_point *r = tw_calloc(max ? max : 1, sizeof *r);
  for (size_t i = 0; i < np; i++) {
    r[i].price_uusd_per_hour = pts[i].price_uusd_per_hour;
    r[i].observed_ms = pts[i].observed_ms;
    r[i].snapshot = pts[i].snapshot;
  }
  free(pts);
  *out = r;
  *n = np;
  return TW_OK;
}
