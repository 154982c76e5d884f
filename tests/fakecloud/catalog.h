/* catalog.h - what the fake clouds sell: regions, zones, instance types
 * and prices, read from a JSON file of the project's own
 * (tests/fakecloud/catalog.json is built into the binary; --catalog
 * replaces it).  Each cloud has its own section; this holds "aws".
 *
 * Prices are decimal strings in the file ("0.0352", USD per hour) and
 * integer micro-USD here, never floats. */
#ifndef TW_TESTS_FAKECLOUD_CATALOG_H
#define TW_TESTS_FAKECLOUD_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

#define FC_MAX_ZONES 16
#define FC_MAX_ARCH 2

struct fc_zone {
  char name[32]; /* us-east-1a */
  char id[32];   /* use1-az1 */
};

struct fc_region {
  char name[32];
  struct fc_zone zones[FC_MAX_ZONES];
  size_t n_zones;
};

struct fc_itype {
  char name[32];
  int vcpus, cores, threads_per_core;
  int64_t memory_mib;
  char arch[FC_MAX_ARCH][16]; /* x86_64, arm64 */
  size_t n_arch;
  char clock_ghz[8]; /* sustained clock, as printed */
  char network[32];
  char hypervisor[16];
  bool has_gpu;
  struct {
    char name[32], manufacturer[32];
    int count;
    int64_t memory_mib; /* per GPU */
  } gpu;
};

struct fc_offer {
  size_t itype;  /* index into itypes */
  size_t region; /* index into regions */
  int64_t on_demand_uusd;
  size_t n_zones;
  struct {
    size_t zone;       /* index into the region's zones */
    int64_t spot_uusd; /* per hour */
  } zones[FC_MAX_ZONES];
};

struct fc_catalog {
  char owner_id[16];
  struct fc_region *regions;
  size_t n_regions;
  struct fc_itype *itypes;
  size_t n_itypes;
  struct fc_offer *offers;
  size_t n_offers;
};

/* Parses catalog JSON (len bytes).  *out is owned (fc_catalog_free).
 * Errors: TW_E_INVALID naming the JSON path. */
enum tw_rc fc_catalog_parse(const char *text, size_t len,
                            struct fc_catalog **out, struct tw_err *err);
enum tw_rc fc_catalog_load_file(const char *path, struct fc_catalog **out,
                                struct tw_err *err);
/* The catalog built from tests/fakecloud/catalog.json at build time. */
enum tw_rc fc_catalog_builtin(struct fc_catalog **out, struct tw_err *err);
void fc_catalog_free(struct fc_catalog *c);

const struct fc_region *fc_catalog_region(const struct fc_catalog *c,
                                          const char *name);
/* Index of zone name in r, or -1. */
int fc_region_zone(const struct fc_region *r, const char *name);
const struct fc_itype *fc_catalog_itype(const struct fc_catalog *c,
                                        const char *name);
const struct fc_offer *fc_catalog_offer(const struct fc_catalog *c,
                                        const char *itype, const char *region);
/* Spot price of offer o in zone index z of its region, -1 if not there. */
int64_t fc_offer_spot(const struct fc_offer *o, size_t z);

/* "0.0352" -> 35200.  At most 6 decimals, no sign, no exponent; false on
 * anything else or on overflow. */
bool fc_price_parse(const char *s, int64_t *uusd);
/* 35200 -> "0.035200" (EC2 prints six decimals). */
void fc_price_fmt(int64_t uusd, char out[32]);

#endif
