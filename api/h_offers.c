/* h_offers.c - GET /v1/offers: the catalog (billing/catalog/catalog.h),
 * filtered, sorted and paged, with each offer's source and the staleness of
 * every source.
 *
 *   accelerator  NAME or NAME:COUNT ("A100" matches every A100 variant)
 *   cpus, memory_gib                 at least
 *   arch         x86_64 | arm64
 *   market       spot | on-demand | private | any
 *   provider, region, jurisdiction   comma-separated; region selectors
 *                                    are placement's ("aws:us-*")
 *   zone         a zone's name or (AWS) id
 *   max_price_uusd                   per hour
 *   sort         price | -price | vcpus | -vcpus | memory | -memory | risk
 *   limit        1..1000 (50); cursor: next_cursor of the previous page
 *   id           one offer, by id, with its spot price history
 *
 * The answer reads one snapshot from start to end: a refresh published
 * meanwhile is seen by the next request.  Without a catalog (a server
 * started alone) it answers 503. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "billing/catalog/catalog.h"
#include "broker/base/clock.h"

static void add_time(struct tw_buf *b, int64_t ms) {
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, "\"%s\"", t);
}

/* Millionths as a JSON number: 38.9 for 38900000. */
static void add_micro(struct tw_buf *b, int64_t v) {
  char t[32];
  tw_norm_fmt_micro(v, t, sizeof t);
  tw_buf_adds(b, t);
}

static void str_or_null(struct tw_buf *b, const char *s) {
  if (s && *s)
    tw_buf_json_str(b, s);
  else
    tw_buf_adds(b, "null");
}

static void render_offer(struct tw_buf *b, const struct tw_cat_snap *s,
                         size_t i, bool with_companion) {
  struct tw_cat_view v;
  char id[TW_MODEL_ID_MAX];
  tw_cat_snap_view(s, i, &v);
  tw_cat_snap_offer_id(s, i, id, sizeof id);
  tw_buf_adds(b, "{\"id\":");
  tw_buf_json_str(b, id);
  tw_buf_adds(b, ",\"provider\":");
  tw_buf_json_str(b, v.provider);
  tw_buf_adds(b, ",\"account\":");
  tw_buf_json_str(b, v.account);
  tw_buf_adds(b, ",\"region\":");
  tw_buf_json_str(b, v.region);
  tw_buf_adds(b, ",\"zone\":");
  str_or_null(b, *v.zone ? v.zone : v.zone_id);
  tw_buf_adds(b, ",\"zone_id\":");
  str_or_null(b, v.zone_id);
  tw_buf_adds(b, ",\"rack\":");
  str_or_null(b, v.rack);
  tw_buf_adds(b, ",\"country\":");
  str_or_null(b, v.country);
  tw_buf_adds(b, ",\"jurisdiction\":");
  str_or_null(b, v.jurisdiction);
  tw_buf_adds(b, ",\"location\":");
  str_or_null(b, v.location);
  if (v.has_geo) {
    tw_buf_adds(b, ",\"coordinates\":{\"lat\":");
    add_micro(b, v.lat_e6);
    tw_buf_adds(b, ",\"lon\":");
    add_micro(b, v.lon_e6);
    tw_buf_addc(b, '}');
  } else {
    tw_buf_adds(b, ",\"coordinates\":null");
  }
  tw_buf_adds(b, ",\"instance_type\":");
  tw_buf_json_str(b, v.instance_type);
  tw_buf_printf(b, ",\"arch\":");
  str_or_null(b, v.arch == TW_ARCH_ANY ? NULL : tw_arch_str(v.arch));
  tw_buf_printf(b, ",\"vcpus\":%d,\"memory_mib\":%" PRId64, v.vcpus,
                v.memory_mib);
  if (*v.accel) {
    tw_buf_adds(b, ",\"accelerator\":{\"name\":");
    tw_buf_json_str(b, v.accel);
    tw_buf_adds(b, ",\"vendor\":");
    str_or_null(b, v.accel_vendor);
    tw_buf_printf(
        b, ",\"kind\":\"%s\",\"count\":", tw_accel_kind_str(v.accel_kind));
    /* thousandths: a third of a GPU is 0.333 */
    tw_buf_printf(b, "%d", v.accel_milli / 1000);
    if (v.accel_milli % 1000)
      tw_buf_printf(b, ".%03d", v.accel_milli % 1000);
    tw_buf_printf(b, ",\"memory_mib\":%" PRId64 "}", v.accel_memory_mib);
  } else {
    tw_buf_adds(b, ",\"accelerator\":null");
  }
  tw_buf_printf(b, ",\"market\":\"%s\",\"price_uusd_per_hour\":%" PRId64,
                tw_market_str(v.market), v.price_uusd_per_hour);
  size_t od;
  if (with_companion && v.market == TW_MARKET_SPOT &&
      tw_cat_snap_companion(s, i, &od)) {
    struct tw_cat_view ov;
    tw_cat_snap_view(s, od, &ov);
    tw_buf_printf(b, ",\"on_demand_price_uusd_per_hour\":%" PRId64,
                  ov.price_uusd_per_hour);
  } else {
    tw_buf_adds(b, ",\"on_demand_price_uusd_per_hour\":null");
  }
  tw_buf_printf(b,
                ",\"billing\":{\"granularity_s\":%" PRId64
                ",\"min_charge_s\":%" PRId64 ",\"protection_s\":%" PRId64 "}",
                v.granularity_s, v.min_charge_s, v.protection_s);
  tw_buf_adds(b, ",\"interruption\":");
  if (v.risk != TW_RISK_UNKNOWN)
    tw_buf_printf(b, "{\"band\":\"%s\",\"pct\":%d}", tw_risk_str(v.risk),
                  v.interruption_pct);
  else
    tw_buf_adds(b, "null");
  /* the price sanity rule (docs/catalog.md) */
  tw_buf_adds(b, ",\"quarantine\":");
  if (v.quarantine_peers)
    tw_buf_printf(b,
                  "{\"reason\":\"under a quarter of the median price of its "
                  "shape and market\",\"median_uusd_per_hour\":%" PRId64
                  ",\"peers\":%" PRIu32 "}",
                  v.quarantine_median_uusd, v.quarantine_peers);
  else
    tw_buf_adds(b, "null");
  if (v.capacity >= 0)
    tw_buf_printf(b, ",\"capacity\":%" PRId64, v.capacity);
  else
    tw_buf_adds(b, ",\"capacity\":null");
  tw_buf_adds(b, ",\"observed_at\":");
  if (v.observed_ms > 0)
    add_time(b, v.observed_ms);
  else
    tw_buf_adds(b, "null");
  /* where it came from: enough to find the row and redo the arithmetic */
  const struct tw_cat_source_info *si = v.source;
  tw_buf_adds(b, ",\"source\":{\"name\":");
  tw_buf_json_str(b, si ? si->name : "");
  tw_buf_adds(b, ",\"kind\":");
  tw_buf_json_str(b, si ? si->kind : "");
  tw_buf_printf(b, ",\"mode\":\"%s\",\"row\":%" PRIu32 ",\"version\":%" PRId64,
                tw_cat_mode_str(si ? si->mode : TW_CAT_SEED), v.source_row,
                si ? si->version : 0);
  const char *file = si ? strrchr(si->path, '/') : NULL;
  tw_buf_adds(b, ",\"file\":");
  str_or_null(b, file ? file + 1 : si ? si->path : NULL);
  tw_buf_adds(b, ",\"sha256\":");
  str_or_null(b, si ? si->sha256 : NULL);
  tw_buf_adds(b, ",\"currency\":");
  tw_buf_json_str(b, v.currency);
  tw_buf_printf(b,
                ",\"price_micro\":%" PRId64 ",\"rate\":", v.source_price_micro);
  tw_buf_json_str(b, v.rate);
  tw_buf_adds(b, ",\"rate_date\":");
  str_or_null(b, v.rate_date);
  tw_buf_addc(b, '}');
  /* the adapter's labels */
  tw_buf_adds(b, ",\"labels\":{");
  bool first = true;
  for (const char *p = v.labels; *p;) {
    const char *e = strchr(p, '\x1f');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (eq) {
      char *k = tw_strndup(p, (size_t)(eq - p));
      char *val = tw_strndup(eq + 1, n - (size_t)(eq - p) - 1);
      if (strcmp(k, "id")) {
        tw_buf_adds(b, first ? "" : ",");
        tw_buf_json_str(b, k);
        tw_buf_addc(b, ':');
        tw_buf_json_str(b, val);
        first = false;
      }
      free(k);
      free(val);
    }
    if (!e)
      break;
    p = e + 1;
  }
  tw_buf_addc(b, '}');
}

static void render_report(struct tw_buf *b, const struct tw_cat_report *r) {
  tw_buf_printf(
      b, "\"rows\":%" PRIu64 ",\"normalized\":%" PRIu64 ",\"rejected\":{",
      r->rows, r->normalized);
  bool first = true;
  for (int k = 0; k < TW_CAT_REJ_COUNT; k++)
    if (r->rejected[k]) {
      tw_buf_printf(b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_reject_str((enum tw_cat_reject)k), r->rejected[k]);
      first = false;
    }
  tw_buf_adds(b, "},\"notes\":{");
  first = true;
  for (int k = 0; k < TW_CAT_NOTE_COUNT; k++)
    if (r->notes[k]) {
      tw_buf_printf(b, "%s\"%s\":%" PRIu64, first ? "" : ",",
                    tw_cat_note_str((enum tw_cat_note)k), r->notes[k]);
      first = false;
    }
  tw_buf_addc(b, '}');
}

/* The snapshot and every source's staleness and ingestion counts. */
static void render_catalog(struct tw_buf *b, struct tw_catalog *cat,
                           const struct tw_cat_snap *s) {
  tw_buf_printf(b, "\"catalog\":{\"version\":%" PRIu64 ",\"built_at\":",
                tw_cat_snap_version(s));
  add_time(b, tw_cat_snap_built_ms(s));
  tw_buf_printf(b, ",\"offers\":%zu,\"sources\":[", tw_cat_snap_count(s));
  struct tw_catalog_status *st;
  size_t n;
  bool stale = false;
  tw_catalog_status(cat, &st, &n);
  for (size_t i = 0; i < n; i++) {
    const struct tw_catalog_status *x = &st[i];
    stale = stale || x->stale;
    tw_buf_adds(b, i ? ",{\"name\":" : "{\"name\":");
    tw_buf_json_str(b, x->info.name);
    tw_buf_printf(b, ",\"kind\":\"%s\",\"mode\":\"%s\",\"provider\":",
                  x->info.kind, tw_cat_mode_str(x->info.mode));
    tw_buf_json_str(b, x->info.provider);
    tw_buf_adds(b, ",\"account\":");
    tw_buf_json_str(b, x->info.account);
    tw_buf_adds(b, ",\"fetched_at\":");
    if (x->info.fetched_ms > 0)
      add_time(b, x->info.fetched_ms);
    else
      tw_buf_adds(b, "null");
    if (x->age_ms >= 0)
      tw_buf_printf(b, ",\"age_s\":%" PRId64, x->age_ms / 1000);
    else
      tw_buf_adds(b, ",\"age_s\":null");
    tw_buf_printf(b,
                  ",\"refresh_s\":%" PRId64
                  ",\"stale\":%s,\"loaded_from_store\":%s"
                  ",\"refreshes\":%" PRIu64 ",\"failures\":%" PRIu64
                  ",\"unchanged\":%" PRIu64 ",\"last_error\":",
                  x->refresh_ms / 1000, x->stale ? "true" : "false",
                  x->loaded_from_store ? "true" : "false", x->refreshes,
                  x->failures, x->unchanged);
    str_or_null(b, x->last_error);
    tw_buf_printf(b, ",\"version\":%" PRId64 ",\"sha256\":", x->info.version);
    str_or_null(b, x->info.sha256);
    tw_buf_adds(b, ",\"currency\":");
    tw_buf_json_str(b,
                    x->info.rate.currency[0] ? x->info.rate.currency : "USD");
    tw_buf_adds(b, ",\"rate\":");
    str_or_null(b, x->info.rate.text);
    tw_buf_adds(b, ",\"rate_date\":");
    str_or_null(b, x->info.rate.date);
    tw_buf_printf(b, ",\"offers\":%" PRIu64 ",\"superseded\":%" PRIu64 ",",
                  x->info.offers, x->info.superseded);
    render_report(b, &x->info.report);
    tw_buf_addc(b, '}');
  }
  free(st);
  tw_buf_printf(b, "],\"stale\":%s}", stale ? "true" : "false");
}

static bool parse_int(const char *s, int64_t min, int64_t max, int64_t *out) {
  if (!s || !*s || strlen(s) > 18)
    return false;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p))
      return false;
  *out = strtoll(s, NULL, 10);
  return *out >= min && *out <= max;
}

/* Splits a comma-separated value into list (borrowing from buf). */
static bool split_list(char *buf, const char **list, size_t *n) {
  *n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ')
      tok++;
    if (!*tok)
      continue;
    if (*n == TW_CAT_QUERY_LIST_MAX)
      return false;
    list[(*n)++] = tok;
  }
  return true;
}

static void one_offer(struct tw_req *r, struct tw_catalog *cat,
                      const struct tw_cat_snap *s, const char *id) {
  size_t i;
  if (!tw_cat_snap_find(s, id, &i)) {
    tw_problem(r, 404, "not-found", "id",
               "no offer %s in catalog version %" PRIu64, id,
               tw_cat_snap_version(s));
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  render_offer(&r->out, s, i, true);
  /* the spot price history, newest first */
  char canon[TW_MODEL_ID_MAX];
  tw_cat_snap_offer_id(s, i, canon, sizeof canon);
  struct tw_cat_price_point *pts = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  tw_catalog_history(cat, canon, 100, &pts, &n, &err);
  tw_buf_adds(&r->out, ",\"history\":[");
  for (size_t k = 0; k < n; k++) {
    tw_buf_printf(&r->out,
                  "%s{\"price_uusd_per_hour\":%" PRId64 ",\"observed_at\":",
                  k ? "," : "", pts[k].price_uusd_per_hour);
    add_time(&r->out, pts[k].observed_ms);
    tw_buf_printf(&r->out, ",\"snapshot\":%" PRId64 "}", pts[k].snapshot);
  }
  free(pts);
  tw_buf_adds(&r->out, "]}],\"next_cursor\":null,");
  render_catalog(&r->out, cat, s);
  tw_buf_addc(&r->out, '}');
  tw_req_json(r, 200);
}

/* A value of provider=, region= or jurisdiction=: a word, or for a
 * jurisdiction upper-case letters. */
static bool query_word(const char *v, bool jurisdiction) {
  size_t n = strlen(v);
  if (!n || n > 64)
    return false;
  for (const char *p = v; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    bool ok = jurisdiction
                  ? (ch >= 'A' && ch <= 'Z')
                  : ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || strchr("-_.:*", ch));
    if (!ok)
      return false;
  }
  return true;
}

void tw_h_offers_list(struct tw_req *r) {
  struct tw_catalog *cat = tw_api_catalog(r->api);
  if (!cat) {
    tw_problem(r, 503, "unavailable", NULL, "this server has no offer catalog");
    return;
  }
  static const char *const params[] = {
      "accelerator", "cpus",   "memory_gib",   "arch", "market",
      "provider",    "region", "jurisdiction", "zone", "max_price_uusd",
      "sort",        "limit",  "cursor",       "id",   NULL};
  if (!tw_req_known_query(r, params))
    return;
  struct tw_cat_query q = {.limit = 50};
  char accel[64] = "", providers[512] = "", regions[1024] = "",
       jurisdictions[256] = "";
  const char *v;
  int64_t n;
  if ((v = tw_req_query(r, "accelerator")) && *v) {
    snprintf(accel, sizeof accel, "%s", v);
    char *colon = strchr(accel, ':');
    if (colon) {
      *colon = '\0';
      if (!parse_int(colon + 1, 1, 1024, &n)) {
        tw_problem(r, 400, "invalid-field", "accelerator",
                   "accelerator: expected NAME or NAME:COUNT with a count of "
                   "1..1024, got \"%s\"",
                   v);
        return;
      }
      q.accel_count = (int)n;
    }
    if (!accel[0] || strlen(v) >= sizeof accel) {
      tw_problem(r, 400, "invalid-field", "accelerator",
                 "accelerator: expected NAME or NAME:COUNT, got \"%s\"", v);
      return;
    }
    q.accel = accel;
  }
  if ((v = tw_req_query(r, "cpus"))) {
    if (!parse_int(v, 1, 100000, &n)) {
      tw_problem(r, 400, "invalid-field", "cpus",
                 "cpus: expected an integer from 1 to 100000, got \"%s\"", v);
      return;
    }
    q.cpus = (int)n;
  }
  if ((v = tw_req_query(r, "memory_gib"))) {
    if (!parse_int(v, 1, 1 << 24, &n)) {
      tw_problem(r, 400, "invalid-field", "memory_gib",
                 "memory_gib: expected a positive integer, got \"%s\"", v);
      return;
    }
    q.memory_mib = n * 1024;
  }
  if ((v = tw_req_query(r, "arch"))) {
    if (!strcmp(v, "x86_64"))
      q.arch = TW_ARCH_X86_64;
    else if (!strcmp(v, "arm64"))
      q.arch = TW_ARCH_ARM64;
    else {
      tw_problem(r, 400, "invalid-field", "arch",
                 "arch: expected x86_64 or arm64, got \"%s\"", v);
      return;
    }
  }
  if ((v = tw_req_query(r, "market"))) {
    if (!strcmp(v, "spot"))
      q.market = TW_MARKET_SPOT;
    else if (!strcmp(v, "on-demand"))
      q.market = TW_MARKET_ON_DEMAND;
    else if (!strcmp(v, "private"))
      q.market = TW_MARKET_PRIVATE;
    else if (strcmp(v, "any")) {
      tw_problem(r, 400, "invalid-field", "market",
                 "market: expected spot, on-demand, private or any, got \"%s\"",
                 v);
      return;
    }
  }
  const struct {
    const char *name;
    char *buf;
    size_t size;
    const char **list;
    size_t *n;
  } lists[] = {
      {"provider", providers, sizeof providers, q.providers, &q.n_providers},
      {"region", regions, sizeof regions, q.regions, &q.n_regions},
      {"jurisdiction", jurisdictions, sizeof jurisdictions, q.jurisdictions,
       &q.n_jurisdictions},
  };
  for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
    if (!(v = tw_req_query(r, lists[k].name)) || !*v)
      continue;
    if (strlen(v) >= lists[k].size) {
      tw_problem(r, 400, "invalid-field", lists[k].name, "%s: too long",
                 lists[k].name);
      return;
    }
    snprintf(lists[k].buf, lists[k].size, "%s", v);
    if (!split_list(lists[k].buf, lists[k].list, lists[k].n)) {
      tw_problem(r, 400, "invalid-field", lists[k].name,
                 "%s: at most %d comma-separated values", lists[k].name,
                 TW_CAT_QUERY_LIST_MAX);
      return;
    }
    for (size_t i = 0; i < *lists[k].n; i++)
      if (!query_word(lists[k].list[i], k == 2)) {
        tw_problem(r, 400, "invalid-field", lists[k].name,
                   "%s: \"%.64s\" is not a %s", lists[k].name, lists[k].list[i],
                   k == 2 ? "jurisdiction (upper-case letters, such as US "
                            "or EU)"
                          : "name (letters, digits, '-', '_', '.', ':', '*')");
        return;
      }
  }
  const char *const *known = tw_api_provider_names(r->api);
  for (size_t i = 0; known && i < q.n_providers; i++) {
    size_t k = 0;
    while (known[k] && strcmp(known[k], q.providers[i]))
      k++;
    if (!known[k]) {
      tw_problem(r, 400, "invalid-field", "provider",
                 "provider: no provider is called \"%.64s\"", q.providers[i]);
      return;
    }
  }
  if ((v = tw_req_query(r, "zone")) && *v)
    q.zone = v;
  if ((v = tw_req_query(r, "max_price_uusd"))) {
    if (!parse_int(v, 1, TW_MODEL_PRICE_MAX_UUSD, &n)) {
      tw_problem(r, 400, "invalid-field", "max_price_uusd",
                 "max_price_uusd: expected micro-USD per hour, a positive "
                 "integer, got \"%s\"",
                 v);
      return;
    }
    q.max_price_uusd = n;
  }
  if ((v = tw_req_query(r, "sort")) && !tw_cat_sort_parse(v, &q.sort)) {
    tw_problem(
        r, 400, "invalid-field", "sort",
        "sort: expected price, -price, vcpus, -vcpus, memory, -memory or "
        "risk, got \"%s\"",
        v);
    return;
  }
  if ((v = tw_req_query(r, "limit"))) {
    if (!parse_int(v, 1, TW_CAT_PAGE_MAX, &n)) {
      tw_problem(r, 400, "invalid-field", "limit",
                 "limit: expected an integer from 1 to %d, got \"%s\"",
                 TW_CAT_PAGE_MAX, v);
      return;
    }
    q.limit = (int)n;
  }
  q.cursor = tw_req_query(r, "cursor");

  struct tw_cat_snap *s = tw_catalog_acquire(cat);
  const char *id = tw_req_query(r, "id");
  if (id && *id) {
    one_offer(r, cat, s, id);
    tw_cat_snap_release(s);
    return;
  }
  struct tw_cat_page page;
  struct tw_err err = {0};
  if (tw_cat_snap_query(s, &q, &page, &err)) {
    tw_cat_snap_release(s);
    tw_problem(r, 400, "invalid-field", err.field[0] ? err.field : NULL, "%s",
               err.msg);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < page.n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    render_offer(&r->out, s, page.items[i], true);
    tw_buf_addc(&r->out, '}');
  }
  tw_buf_adds(&r->out, "],\"next_cursor\":");
  str_or_null(&r->out, page.next_cursor);
  tw_buf_addc(&r->out, ',');
  render_catalog(&r->out, cat, s);
  tw_buf_addc(&r->out, '}');
  tw_cat_page_release(&page);
  tw_cat_snap_release(s);
  tw_req_json(r, 200);
}
