/* azure_catalog.h - what the fake Azure sells: regions with zones, VM
 * sizes (Resource SKUs' capabilities and the Retail Prices API's meter
 * and product names) and regional Linux pay-as-you-go and Spot prices.
 *
 * Read from the "azure" section of a catalog JSON file: the file given
 * with --catalog when it has that section, else the built-in
 * tests/fakecloud/azure_catalog.json.  Prices are decimal strings in the
 * file and integer micro-USD here. */
#ifndef TW_TESTS_FAKECLOUD_AZURE_CATALOG_H
#define TW_TESTS_FAKECLOUD_AZURE_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct fc_az_region {
  char name[32];    /* "eastus" */
  char display[48]; /* "East US" */
  char zones[3][4];
  size_t n_zones;
};

struct fc_az_size {
  char name[48];   /* "Standard_D2s_v5" */
  char family[48]; /* "standardDSv5Family": quota messages, SKUs */
  int vcpus;
  char memory_gb[16]; /* as Resource SKUs print it: "8", "0.75" */
  int gpus;
  char arch[8];     /* CpuArchitectureType: "x64", "Arm64" */
  char meter[48];   /* "D2s v5" */
  char product[64]; /* "Virtual Machines Dsv5 Series" */
};

struct fc_az_price {
  size_t size;   /* index into sizes */
  size_t region; /* index into regions */
  int64_t on_demand_uusd;
  int64_t spot_uusd; /* -1: no Spot offer */
};

struct fc_az_catalog {
  struct fc_az_region *regions;
  size_t n_regions;
  struct fc_az_size *sizes;
  size_t n_sizes;
  struct fc_az_price *prices;
  size_t n_prices;
};

/* Parses the "azure" section of catalog JSON.  TW_E_NOTFOUND when the
 * text has no such section, TW_E_INVALID naming the JSON path otherwise.
 * *out is owned (fc_az_catalog_free). */
enum tw_rc fc_az_catalog_parse(const char *text, size_t len,
                               struct fc_az_catalog **out, struct tw_err *err);

/* The catalog of path when it has an "azure" section, else the built-in
 * one (path NULL: the built-in one). */
enum tw_rc fc_az_catalog_load(const char *path, struct fc_az_catalog **out,
                              struct tw_err *err);

void fc_az_catalog_free(struct fc_az_catalog *c);

/* Lookups (case-insensitive names, as ARM's); NULL when absent. */
const struct fc_az_region *fc_az_catalog_region(const struct fc_az_catalog *c,
                                                const char *name);
const struct fc_az_size *fc_az_catalog_size(const struct fc_az_catalog *c,
                                            const char *name);
const struct fc_az_price *fc_az_catalog_price(const struct fc_az_catalog *c,
                                              const char *size,
                                              const char *region);

#endif
