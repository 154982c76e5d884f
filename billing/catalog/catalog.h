/* catalog.h - one normalized, versioned table of every cloud's offers.
 *
 * Sources:
 *   - adapters: each configured provider's list_offers, refreshed on its
 *     own interval by a thread of its own;
 *   - files: SkyPilot-style catalog CSVs (catalog_csv.h), as a `seed`
 *     (offers for places no adapter lists) or an `override` (replacing
 *     what the adapters say for the same offer);
 *   - interruption-frequency data (AWS Spot Advisor's feed), giving spot
 *     offers their risk band.
 * Precedence when two sources list the same offer (same account, region,
 * zone, instance type and market): override > adapter > seed; the loser is
 * counted as `superseded` on its source.
 *
 * Snapshots: each source's last complete ingestion is kept as an immutable
 * table, and the catalog publishes one immutable, reference-counted
 * snapshot merging them all.  A refresh builds the new source table aside
 * and publishes a new merged snapshot only once it is complete: readers
 * (placement, the API) keep the previous one until they release it, and a
 * source whose refresh fails keeps its previous table.  With a store, each
 * source table is written as a versioned snapshot (source, time, content
 * hash, counts per reason, and the normalized offers), spot prices are
 * appended to a price history, and the last snapshots are loaded back at
 * start so a restarted broker has offers before any cloud answers.
 *
 * Snapshot memory: an offer is a packed 64-byte record pointing at shared
 * location and shape records and interned strings; with its indexes it
 * costs about 90 bytes (bench-catalog measures it).  struct tw_offer (the
 * placement model, ~2 KB) is made only for the offers that placement
 * reads: tw_cat_snap_offers_of().
 *
 * Threads: every function is thread-safe.  A snapshot may be read from any
 * thread while its holder keeps a reference. */
#ifndef TW_BILLING_CATALOG_H
#define TW_BILLING_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "billing/catalog/catalog_csv.h"
#include "billing/catalog/normalize.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"

struct tw_clock;
struct tw_store;
struct tw_provider;
struct tw_provider_info;
struct tw_provider_ops;
struct tw_cfg;

/* ---- sources
 * ------------------------------------------------------------------ */

enum tw_cat_mode { TW_CAT_SEED = 0, TW_CAT_ADAPTER, TW_CAT_OVERRIDE };
const char *tw_cat_mode_str(enum tw_cat_mode m); /* "seed", ... */

/* What a snapshot records about each source it holds offers from. */
struct tw_cat_source_info {
  char name[64]; /* the provider account, or the file source's name */
  char kind[8];  /* "adapter" or "file" */
  enum tw_cat_mode mode;
  char provider[32];
  char account[64];
  char path[256];      /* file sources */
  char sha256[65];     /* of the file's bytes, or of the normalized offers */
  struct tw_rate rate; /* the currency rate the prices went through */
  int64_t fetched_ms;  /* when the data was read */
  int64_t version;     /* id of the stored snapshot; 0 when not stored */
  struct tw_cat_report report;
  uint64_t offers;     /* offers of this source in the merged snapshot */
  uint64_t superseded; /* offers hidden by a source of higher precedence */
};

/* ---- snapshots
 * ------------------------------------------------------------------ */

struct tw_cat_snap;

void tw_cat_snap_retain(struct tw_cat_snap *s);
/* Drops a reference; the last one frees.  NULL is a no-op. */
void tw_cat_snap_release(struct tw_cat_snap *s);

uint64_t tw_cat_snap_version(const struct tw_cat_snap *s); /* 1, 2, ... */
int64_t tw_cat_snap_built_ms(const struct tw_cat_snap *s);
size_t tw_cat_snap_count(const struct tw_cat_snap *s);
/* Bytes held by the snapshot: offers, locations, shapes, strings and
 * indexes. */
size_t tw_cat_snap_bytes(const struct tw_cat_snap *s);
size_t tw_cat_snap_nsources(const struct tw_cat_snap *s);
const struct tw_cat_source_info *tw_cat_snap_source(const struct tw_cat_snap *s,
                                                    size_t i);

/* One offer, flattened.  Strings are borrowed from the snapshot: valid
 * while the caller holds it; "" when unknown. */
struct tw_cat_view {
  const char *provider, *account, *region, *zone, *zone_id, *rack;
  const char *country, *jurisdiction, *location;
  bool has_geo;
  int32_t lat_e6, lon_e6;
  bool local_zone;
  const char *instance_type;
  enum tw_arch arch;
  int vcpus;
  int64_t memory_mib;
  const char *accel;        /* canonical name; "" none */
  const char *accel_listed; /* as the adapter listed it ("a100"), else the
                               canonical name */
  const char *accel_vendor;
  enum tw_accel_kind accel_kind;
  int accel_milli;          /* devices in thousandths: 8000 = 8, 333 = 1/3 */
  int64_t accel_memory_mib; /* per device */
  enum tw_market market;
  int64_t price_uusd_per_hour;
  int64_t source_price_micro; /* per hour in the source's currency */
  /* the rate the source's prices went through (adapters hand over USD;
   * their own conversions are in their labels) */
  char currency[4];   /* sizes as struct tw_rate's */
  char rate[24];      /* as written: "0.1393" */
  char rate_date[11]; /* "2025-06-30"; "" for USD */
  int64_t granularity_s, min_charge_s, protection_s;
  enum tw_risk risk;    /* the band */
  int interruption_pct; /* the source's own estimate, or the band's
                           upper edge; -1 unknown */
  int64_t capacity;     /* -1 unknown */
  int64_t observed_ms;  /* 0 unknown */
  const struct tw_cat_source_info *source;
  uint32_t source_row; /* line of the file; position in the list */
  const char *labels;  /* the adapter's labels "k=v\x1fk=v"; "" none */
  /* the price sanity rule (docs/catalog.md): when peers > 0 the offer is
   * held, priced under a quarter of the median of the peers offers of its
   * shape and market */
  int64_t quarantine_median_uusd;
  uint32_t quarantine_peers;
};

void tw_cat_snap_view(const struct tw_cat_snap *s, size_t i,
                      struct tw_cat_view *out);
/* "account:region:zone:type:market" (tw_offer_make_id's form; the zone is
 * the zone's name when known, else its id).  False when it does not fit. */
bool tw_cat_snap_offer_id(const struct tw_cat_snap *s, size_t i, char *out,
                          size_t outsz);
/* Finds an offer by id; for AWS the zone part may be the zone's name or
 * its id.  False when absent. */
bool tw_cat_snap_find(const struct tw_cat_snap *s, const char *id, size_t *i);
/* The same place and type in the other market (the on-demand offer of a
 * spot one); false when there is none. */
bool tw_cat_snap_companion(const struct tw_cat_snap *s, size_t i,
                           size_t *other);
/* Fills a placement offer: its fields (the accelerator as the adapter
 * listed it, since adapters read their offers back at launch), the
 * adapter's own labels, then jurisdiction, country, geo ("lat,lon") and
 * interruption (the band), as many as TW_OFFER_LABELS_MAX allows.  An
 * offer an adapter named its own way keeps that id. */
void tw_cat_snap_to_offer(const struct tw_cat_snap *s, size_t i,
                          struct tw_offer *out);
/* Appends the offers of the given accounts (all when n_accounts is 0) to
 * out; returns how many. */
size_t tw_cat_snap_offers_of(const struct tw_cat_snap *s,
                             const char *const *accounts, size_t n_accounts,
                             struct tw_offer_list *out);
/* Appends the file sources' offers of every other account (a seed
 * catalog's cloud or account no provider is configured for), marked
 * no_account: plans show them, the scheduler never launches them. */
size_t tw_cat_snap_offers_unserved(const struct tw_cat_snap *s,
                                   const char *const *accounts,
                                   size_t n_accounts,
                                   struct tw_offer_list *out);

/* ---- queries
 * ------------------------------------------------------------------- */

enum tw_cat_sort {
  TW_CAT_SORT_PRICE = 0, /* cheapest first (the default) */
  TW_CAT_SORT_PRICE_DESC,
  TW_CAT_SORT_VCPUS,
  TW_CAT_SORT_VCPUS_DESC,
  TW_CAT_SORT_MEMORY,
  TW_CAT_SORT_MEMORY_DESC,
  TW_CAT_SORT_RISK, /* lowest interruption band first, unknown last */
  TW_CAT_SORT_COUNT
};
/* "price", "-price", "vcpus", "-vcpus", "memory", "-memory", "risk". */
const char *tw_cat_sort_str(enum tw_cat_sort s);
bool tw_cat_sort_parse(const char *s, enum tw_cat_sort *out);

#define TW_CAT_QUERY_LIST_MAX 16
#define TW_CAT_PAGE_MAX 1000

/* Filters: every one set must hold.  Lists match any of their items. */
struct tw_cat_query {
  const char *accel;     /* "A100" matches every A100 variant,
                            "A100-80GB" only itself; NULL: any */
  int accel_count;       /* at least this many devices (with accel) */
  bool no_accel;         /* only offers without accelerators */
  int cpus;              /* at least; 0 any */
  int64_t memory_mib;    /* at least; 0 any */
  enum tw_arch arch;     /* TW_ARCH_ANY: any */
  enum tw_market market; /* TW_MARKET_ANY: any */
  const char *providers[TW_CAT_QUERY_LIST_MAX]; /* provider or account */
  size_t n_providers;
  /* "provider:region" or "provider:region:zone" globs, as placement's
   * region selectors ("aws:us-*", "azure:westeurope"); the account may
   * stand for the provider.  Only a selector with two colons is tried on
   * zones ("aws:us-east-1:use1-az*"). */
  const char *regions[TW_CAT_QUERY_LIST_MAX];
  size_t n_regions;
  const char *jurisdictions[TW_CAT_QUERY_LIST_MAX];
  size_t n_jurisdictions;
  const char *zone;       /* a zone's name or (AWS) id; NULL any */
  int64_t max_price_uusd; /* per hour; 0 no cap */
  enum tw_cat_sort sort;
  int limit;          /* 1..TW_CAT_PAGE_MAX */
  const char *cursor; /* next_cursor of the previous page; NULL */
};

struct tw_cat_page {
  uint32_t *items; /* offer indexes in order; owned */
  size_t n;
  char next_cursor[64]; /* "" on the last page */
  size_t scanned;       /* offers examined (for the benchmark) */
};

/* Runs q over s.  Paging is by key (the sort value and a stable hash of
 * the offer id), so a cursor stays valid across snapshots: the next page
 * starts after the last offer seen, wherever it is now.  TW_E_INVALID for
 * a malformed cursor or a cursor of another sort.  Release the page with
 * tw_cat_page_release. */
enum tw_rc tw_cat_snap_query(const struct tw_cat_snap *s,
                             const struct tw_cat_query *q,
                             struct tw_cat_page *out, struct tw_err *err);
void tw_cat_page_release(struct tw_cat_page *p);

/* ---- standalone snapshots (tests, the benchmark, the fuzzer)
 * ---------------------- */

/* Ingests one CSV into a new snapshot holding only it.  info describes the
 * source (name, provider, mode...); its report is filled.  *out is owned
 * (tw_cat_snap_release). */
enum tw_rc tw_cat_snap_from_csv(const char *data, size_t len,
                                const struct tw_csv_opts *o,
                                const struct tw_cat_source_info *info,
                                struct tw_cat_snap **out, struct tw_err *err);

/* Normalizes adapter offers (accelerator names, architecture, billing
 * rules, geography; prices in micro-USD, or in the adapter's own currency
 * converted here with rates, the one source of exchange rates) into a new
 * snapshot holding only them; each offer is normalized or rejected with a
 * reason in info's report (no_rate: a currency rates lacks, or a second
 * currency in one listing). */
struct tw_cat_adapter_opts {
  const struct tw_regions *regions;
  const struct tw_rates *rates;
  /* The per-cloud rules (billing, architecture implied by type names,
   * clouds.h): info, the listing adapter's own block, when set; else each
   * offer's provider looked up in adapters (borrowed; NULL: none, or only
   * the catalog-only clouds).  adapters also stays with the snapshot for
   * its views. */
  const struct tw_provider_info *info;
  const struct tw_provider_ops *const *adapters;
  int64_t granularity_s, min_charge_s; /* private clusters; 0: the rule */
  /* Private clusters price nothing: when an offer's price is 0 and these
   * are set, it is priced at this chargeback per hour (micro-USD). */
  int64_t chargeback_vcpu_uusd, chargeback_gib_uusd, chargeback_accel_uusd;
};
enum tw_rc tw_cat_snap_from_offers(const struct tw_offer *offers, size_t n,
                                   const struct tw_cat_adapter_opts *o,
                                   const struct tw_cat_source_info *info,
                                   struct tw_cat_snap **out,
                                   struct tw_err *err);

/* Interruption risk per (region, instance type) from AWS Spot Advisor's
 * feed (spot-advisor-data.json): the Linux bands. */
struct tw_cat_risk;
enum tw_rc tw_cat_risk_load(const char *json, size_t len,
                            struct tw_cat_risk **out, struct tw_err *err);
void tw_cat_risk_free(struct tw_cat_risk *r);
size_t tw_cat_risk_count(const struct tw_cat_risk *r);
enum tw_risk tw_cat_risk_find(const struct tw_cat_risk *r, const char *region,
                              const char *type);

/* Merges source snapshots into one, by precedence (mode, then order in
 * srcs), giving spot offers their band from risk (may be NULL) where their
 * provider's info block says the feed covers it (catalog_risk_feed,
 * looked up in adapters: clouds.h).  adapters (borrowed, may be NULL)
 * stays with the merged snapshot for its views.  version is the new
 * snapshot's number.  *out is owned. */
void tw_cat_snap_merge(struct tw_cat_snap *const *srcs, size_t n,
                       const struct tw_cat_risk *risk,
                       const struct tw_provider_ops *const *adapters,
                       uint64_t version, int64_t now_ms,
                       struct tw_cat_snap **out);

/* ---- the catalog
 * ------------------------------------------------------------------- */

struct tw_catalog;

/* A file source. */
struct tw_catalog_file {
  const char *name; /* unique among sources; default: the path */
  const char *path;
  const char *provider;      /* required */
  const char *account;       /* NULL: the provider */
  const char *currency;      /* NULL: USD */
  enum tw_cat_mode mode;     /* TW_CAT_SEED or TW_CAT_OVERRIDE */
  const char *columns;       /* header of a header-less file */
  const char *instance_type; /* for files without an InstanceType column */
  const char *specs;         /* path of a specs CSV joined on the type */
  int64_t refresh_ms;        /* 0: the catalog's */
};

/* Per-account settings of an adapter source. */
struct tw_catalog_account {
  const char *account;
  int64_t refresh_ms; /* 0: the catalog's */
  int64_t granularity_s, min_charge_s;
  int64_t chargeback_vcpu_uusd, chargeback_gib_uusd, chargeback_accel_uusd;
};

struct tw_catalog_opts {
  struct tw_store *store;         /* borrowed; NULL: memory only */
  struct tw_clock *clock;         /* borrowed; NULL: real */
  struct tw_provider **providers; /* borrowed; outlive the catalog */
  size_t n_providers;
  /* The adapter registry (providers/registry.h), borrowed: the per-cloud
   * rules of file sources and of the merged snapshot come from its info
   * blocks, or the catalog-only table (clouds.h).  Adapter sources use
   * their own adapter's block.  NULL: file sources of adapter clouds get
   * no billing rule, zone ids or bands. */
  const struct tw_provider_ops *const *adapters;
  const struct tw_catalog_account *accounts;
  size_t n_accounts;
  const struct tw_catalog_file *files;
  size_t n_files;
  int64_t refresh_ms;            /* default interval; 0: 300 s */
  const char *regions_path;      /* NULL: the compiled-in table */
  const char *rates_path;        /* NULL: the compiled-in table */
  const char *interruption_path; /* NULL: no risk bands */
  int keep_snapshots;            /* per source in the store; 0: 2 */
};

/* Loads the tables, checks the file sources exist, migrates the store's
 * catalog tables and loads the last stored snapshot of each configured
 * source.  Does no provider I/O.  *out is owned (tw_catalog_free). */
enum tw_rc tw_catalog_new(const struct tw_catalog_opts *o,
                          struct tw_catalog **out, struct tw_err *err);

/* The same from the daemon's config (`catalog:` section, see
 * docs/catalog.md); errors name the config key. */
enum tw_rc
tw_catalog_new_from_cfg(const struct tw_cfg *cfg, struct tw_store *store,
                        struct tw_clock *clock, struct tw_provider **providers,
                        size_t n_providers,
                        const struct tw_provider_ops *const *adapters,
                        struct tw_catalog **out, struct tw_err *err);

/* Starts one refresh thread per source. */
enum tw_rc tw_catalog_start(struct tw_catalog *c, struct tw_err *err);

/* Refreshes, on the calling thread, every source whose interval has passed
 * at now_ms (or that never ran), then publishes.  Returns how many sources
 * were attempted.  For tests and for a scheduler without threads. */
int tw_catalog_refresh_due(struct tw_catalog *c, int64_t now_ms);

/* Refreshes one source now (by name); TW_E_NOTFOUND for an unknown name,
 * or the source's failure. */
enum tw_rc tw_catalog_refresh(struct tw_catalog *c, const char *name,
                              struct tw_err *err);

/* Blocks until every source has finished its first attempt (success or
 * failure) or the catalog stops. */
void tw_catalog_wait_ready(struct tw_catalog *c);

/* The current snapshot, retained: release it with tw_cat_snap_release.
 * Never NULL (an empty snapshot before the first refresh). */
struct tw_cat_snap *tw_catalog_acquire(struct tw_catalog *c);

/* The state of each source, for the API and /metrics. */
struct tw_catalog_status {
  struct tw_cat_source_info info; /* of its current table */
  int64_t refresh_ms;
  int64_t attempted_ms;   /* last attempt; 0 never */
  int64_t age_ms;         /* now - info.fetched_ms; -1 never fetched */
  bool stale;             /* older than twice its refresh interval */
  bool loaded_from_store; /* the table came from the store, not a fetch */
  uint64_t refreshes, failures, unchanged;
  char last_error[256]; /* "" after a success */
};
/* *out is an owned array of *n (free()). */
void tw_catalog_status(struct tw_catalog *c, struct tw_catalog_status **out,
                       size_t *n);

/* The rate table in use. */
const struct tw_rates *tw_catalog_rates(const struct tw_catalog *c);

/* Price history of an offer id from the store (spot prices, newest
 * first, at most max).  *n 0 without a store. */
struct tw_cat_price_point {
  int64_t price_uusd_per_hour;
  int64_t observed_ms;
  int64_t snapshot;
};
enum tw_rc tw_catalog_history(struct tw_catalog *c, const char *offer_id,
                              size_t max, struct tw_cat_price_point **out,
                              size_t *n, struct tw_err *err);

/* Appends Prometheus lines (snapshot version, offers, per source: age,
 * staleness, refreshes and failures, rows per outcome).  NULL c: nothing. */
void tw_catalog_metrics(struct tw_catalog *c, struct tw_buf *out);

/* Stops the threads and frees c.  NULL is a no-op. */
void tw_catalog_free(struct tw_catalog *c);

#endif
