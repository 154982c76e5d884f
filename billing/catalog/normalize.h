/* normalize.h - one vocabulary for every cloud's names, units and money.
 *
 * Each cloud publishes prices and shapes in its own units (GiB, fractional
 * GPU counts, decimal dollars, yuan), names (`A100` vs `NVIDIA A100 80GB`,
 * `use1-az4` vs `us-east-1a`) and billing rules.  The catalog turns them
 * into Tradewind's once, at ingestion, with the helpers below:
 *
 *   - decimals: exact text-to-integer conversion (money never goes through
 *     a double, so a normalized price reproduces its source text exactly);
 *   - accelerators: canonical names (A100-40GB, A100-80GB, H100-80GB, T4,
 *     MI300X, Ascend-910B, ...) with vendor, kind and memory per device;
 *   - CPU architecture from a catalog's column or the instance type's name;
 *   - regions: country, jurisdiction (for data residency) and coordinates,
 *     and zone ids ("use1-az4") resolved to their region;
 *   - currency: a rate table that records each rate's date and source;
 *   - billing rules per provider and market; interruption-risk bands.
 *
 * What differs per cloud (its billing rule, the architecture and
 * accelerators its type names imply) is not here but in the cloud's info
 * block (clouds.h); the helpers below apply a block they are given.
 *
 * Tables loaded here (regions, rates) are immutable once built and may be
 * read from any thread.  Everything else is a pure function. */
#ifndef TW_BILLING_NORMALIZE_H
#define TW_BILLING_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/spec.h" /* enum tw_market, enum tw_arch */

struct tw_provider_info;

/* ---- decimals ------------------------------------------------------------ */

/* Parses the non-negative decimal s[0..len) ("68.8", "0.009240", "12",
 * ".5") into millionths: "68.8" -> 68800000.  Digits past the sixth
 * decimal are rounded half up and *exact (may be NULL) is set to false;
 * otherwise it is set to true.  Returns false, leaving *out alone, for an
 * empty text, a sign, an exponent, any other character, or a value of a
 * trillion or more. */
bool tw_norm_decimal_micro(const char *s, size_t len, int64_t *out,
                           bool *exact);

/* The same with nine decimals (billionths), for currency rates. */
bool tw_norm_decimal_nano(const char *s, size_t len, int64_t *out, bool *exact);

/* Writes millionths as the shortest decimal text: 68800000 -> "68.8",
 * 9240 -> "0.00924", 0 -> "0", -1500000 -> "-1.5".  out holds at least
 * 24 bytes. */
void tw_norm_fmt_micro(int64_t v, char *out, size_t outsz);

/* GiB text ("16.0", "0.75") to MiB, rounded half up.  False when not a
 * decimal. */
bool tw_norm_gib_to_mib(const char *s, size_t len, int64_t *mib);

/* ---- accelerators ----------------------------------------------------------
 */

enum tw_accel_kind {
  TW_ACCEL_NONE = 0,
  TW_ACCEL_GPU,
  TW_ACCEL_NPU, /* neural ASICs: Ascend, Gaudi, Inferentia, Trainium */
  TW_ACCEL_TPU,
  TW_ACCEL_FPGA,
  TW_ACCEL_UNKNOWN /* a name the table does not know, kept as written */
};

/* "gpu", "npu", "tpu", "fpga", "unknown"; "" for NONE. */
const char *tw_accel_kind_str(enum tw_accel_kind k);

struct tw_accel_info {
  const char *name;   /* canonical: "A100-80GB"; static storage */
  const char *vendor; /* "NVIDIA", "AMD", "Huawei", ... */
  enum tw_accel_kind kind;
  int64_t memory_mib; /* per device; 0 unknown */
};

/* Finds the canonical accelerator for a provider's name raw[0..len).
 * Case, spaces, underscores and vendor prefixes ("NVIDIA", "Tesla") do not
 * matter.  A family name with memory variants ("A100", "V100", "H100")
 * takes the variant nearest mem_mib_hint (per device, from the catalog's
 * GpuInfo or the adapter), or the family's first variant when the hint is
 * 0: "A100" means A100-40GB, as SkyPilot's catalogs use it.  Returns false
 * for a name the table does not know. */
bool tw_norm_accel(const char *raw, size_t len, int64_t mem_mib_hint,
                   struct tw_accel_info *out);

/* Accelerators a catalog counts but does not name, known from the instance
 * type through the cloud's info block (its type_accels: Azure's
 * Standard_NP* carry Xilinx U250 FPGAs, AWS f1 Xilinx VU9P).  Returns
 * false when the type says nothing, or info is NULL. */
bool tw_norm_accel_from_type(const struct tw_provider_info *info,
                             const char *type, struct tw_accel_info *out);

/* Private clusters may expose an NPU as two resources, "npu.compute" (the
 * cores a job is given) and "npu.control" (the management unit that goes
 * with them).  True when name is one of those two. */
bool tw_norm_npu_resource(const char *name, bool *is_control);

/* ---- CPU architecture
 * -------------------------------------------------------- */

/* "x86_64", "amd64", "x86-64", "i386" -> x86_64; "arm64", "aarch64",
 * "arm64_mac" -> arm64; anything else TW_ARCH_ANY (unknown). */
enum tw_arch tw_norm_arch(const char *raw, size_t len);

/* The architecture an instance type's name implies, by the cloud's info
 * block (its arch_of_type: AWS families with a `g` attribute, Azure sizes
 * with the `p` feature, ...).  TW_ARCH_ANY when info is NULL or implies
 * nothing. */
enum tw_arch tw_norm_arch_guess(const struct tw_provider_info *info,
                                const char *type);

/* ---- regions
 * ------------------------------------------------------------------ */

struct tw_region {
  char provider[16];      /* "aws", "azure", "gcp", "alibaba", ... */
  char region[48];        /* "us-east-1" */
  char country[3];        /* ISO 3166-1 alpha-2: "US" */
  char jurisdiction[9];   /* for residency: "EU", "US", "UK", "CN", ... */
  int32_t lat_e6, lon_e6; /* coordinates in millionths of a degree */
  char zone_prefix[12];   /* zone-id prefix: "use1"; "" for clouds
                             without zone ids */
  char location[48];      /* "N. Virginia" */
};

struct tw_regions;

/* Builds a region table from CSV text with the header
 *   provider,region,country,jurisdiction,lat,lon,zone_prefix,location
 * ('#' lines are comments).  Errors name the line.  *out is owned
 * (tw_regions_free). */
enum tw_rc tw_regions_load_text(const char *text, size_t len,
                                struct tw_regions **out, struct tw_err *err);
enum tw_rc tw_regions_load_file(const char *path, struct tw_regions **out,
                                struct tw_err *err);
/* The table shipped in configs/catalog/regions.csv, compiled in. */
enum tw_rc tw_regions_builtin(struct tw_regions **out, struct tw_err *err);
void tw_regions_free(struct tw_regions *t);

size_t tw_regions_count(const struct tw_regions *t);
/* NULL when unknown.  The pointer lives as long as the table. */
const struct tw_region *tw_regions_find(const struct tw_regions *t,
                                        const char *provider,
                                        const char *region);

/* A zone id of provider: "use1-az4" (availability zone), "use1-atl2-az1"
 * (local zone), by the zone_prefix of the provider's regions.  Returns the
 * region it belongs to, or NULL when id is not shaped like one or its
 * prefix is unknown; *local (may be NULL) says local zone.  Which clouds
 * have zone ids is their info block's catalog_zone_ids. */
const struct tw_region *tw_regions_by_zone_id(const struct tw_regions *t,
                                              const char *provider,
                                              const char *zone_id, bool *local);

/* True when s is shaped like a zone id ("use1-az4"), not a zone name
 * ("us-east-1a"). */
bool tw_norm_is_zone_id(const char *s);

/* The jurisdiction of a country code: EU member states give "EU", "GB"
 * gives "UK", any other its own code. */
const char *tw_norm_jurisdiction_of(const char *country);

/* ---- currency
 * ------------------------------------------------------------------- */

struct tw_rate {
  char currency[4];      /* ISO 4217: "CNY" */
  int64_t nusd_per_unit; /* billionths of a USD per unit: 0.1373 USD ->
                            137300000 */
  char text[24];         /* the rate as written: "0.1373" */
  char date[11];         /* "2025-06-30": the day the rate is from */
  char source[64];       /* "ECB reference rate", ... */
};

struct tw_rates;

/* CSV text with the header `currency,usd_per_unit,date,source`.  USD is
 * always present at exactly 1.  *out is owned (tw_rates_free). */
enum tw_rc tw_rates_load_text(const char *text, size_t len,
                              struct tw_rates **out, struct tw_err *err);
enum tw_rc tw_rates_load_file(const char *path, struct tw_rates **out,
                              struct tw_err *err);
/* configs/catalog/rates.csv, compiled in. */
enum tw_rc tw_rates_builtin(struct tw_rates **out, struct tw_err *err);
void tw_rates_free(struct tw_rates *r);

size_t tw_rates_count(const struct tw_rates *r);
const struct tw_rate *tw_rates_at(const struct tw_rates *r, size_t i);
/* NULL when the table has no rate for currency. */
const struct tw_rate *tw_rates_find(const struct tw_rates *r,
                                    const char *currency);

/* micro-units of a currency to micro-USD at rate, rounded half up:
 * 1.000000 CNY at 0.1373 -> 137300 micro-USD.  Exact integer arithmetic;
 * TW_E_INVALID when the result would not fit. */
enum tw_rc tw_rate_convert(const struct tw_rate *rate, int64_t micro,
                           int64_t *uusd, struct tw_err *err);

/* ---- billing rules
 * ----------------------------------------------------------------- */

struct tw_billing_rule {
  int64_t granularity_s; /* 1 = per second; 0 unknown */
  int64_t min_charge_s;  /* charged at least this per start */
  int64_t protection_s;  /* spot: time guaranteed before a reclaim */
};

/* The published rule of a cloud's info block (struct
 * tw_provider_billing) in market: granularity and minimum for every
 * market, the protection period for spot only.  False (and a zeroed rule)
 * for a NULL info or one without a published rule (private clusters take
 * theirs from config). */
bool tw_norm_billing(const struct tw_provider_info *info, enum tw_market market,
                     struct tw_billing_rule *out);

/* ---- interruption risk
 * -------------------------------------------------------------- */

/* The bands of AWS's Spot Advisor, the public interruption-frequency data:
 * the share of spot instances reclaimed per month. */
enum tw_risk {
  TW_RISK_UNKNOWN = 0,
  TW_RISK_LT5,   /* < 5 % */
  TW_RISK_5_10,  /* 5-10 % */
  TW_RISK_10_15, /* 10-15 % */
  TW_RISK_15_20, /* 15-20 % */
  TW_RISK_GT20,  /* > 20 % */
  TW_RISK_COUNT
};

/* "<5%", "5-10%", "10-15%", "15-20%", ">20%", "unknown". */
const char *tw_risk_str(enum tw_risk r);
/* The band's upper edge in percent per month, as the Spot Advisor feed
 * states it (5, 11, 16, 22, 100); -1 for unknown.  Placement reads it as
 * struct tw_offer's interruption_pct. */
int tw_risk_pct(enum tw_risk r);
/* Parses the names of tw_risk_str(); TW_RISK_UNKNOWN otherwise. */
enum tw_risk tw_risk_parse(const char *s);

#endif
