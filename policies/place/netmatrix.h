/* netmatrix.h - the network between regions: round-trip latency,
 * bandwidth, and the egress price per GB, by provider and direction.
 *
 * Regions are named "provider:region" ("aws:us-east-1", "azure:westeurope").
 * A matrix answers for every pair: explicit `link` lines first, then the
 * provider's egress rules and the bandwidth rules, then the region
 * coordinates (latency from great-circle distance), then the defaults.
 * Nothing is ever "unknown" to the caller; `how` says where an answer
 * came from.
 *
 * The file format (configs/network/default.net is the shipped default and
 * docs/placement.md documents it in full) is line-oriented text:
 *
 *   tradewind-network 1
 *   # comment
 *   default   rtt_ms=150 bandwidth_mbps=1000 egress_usd_per_gb=0.09
 *   bandwidth scope=same-provider mbps=5000
 *   egress    provider=aws scope=same-provider from=us-* to=us-*
 * usd_per_gb=0.02 region    aws:us-east-1 lat=38.95 lon=-77.45 country=US
 * jurisdiction=US link      aws:us-east-1 aws:eu-west-1 rtt_ms=68
 * bandwidth_mbps=4000
 *
 * Scopes: same-region, same-provider (another region of the provider),
 * inter-provider, internet (to a location that is no region).  Egress
 * rules are tried in file order; the first whose provider (the source's),
 * scope and optional from/to globs (on the region part) match wins.
 * Prices are exact decimals (no floating point): USD per GB of 10^9
 * bytes, held as micro-USD.  A `link` is directional for egress (the
 * source's provider charges) and applies to both directions for latency
 * and bandwidth unless the reverse has its own line.
 *
 * Errors name the file, line and key: `default.net:12: egress: unknown
 * scope "inter-cloud"`.  Limits: 1 MiB of text, 4096 regions, 262144
 * links, 1024 rules.
 *
 * Threads: a matrix is immutable once parsed; any thread may read it. */
#ifndef TW_POLICIES_NETMATRIX_H
#define TW_POLICIES_NETMATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_netmatrix;

#define TW_NET_TEXT_MAX (1u << 20)

enum tw_net_scope {
  TW_NET_SAME_REGION = 0,
  TW_NET_SAME_PROVIDER,
  TW_NET_INTER_PROVIDER,
  TW_NET_INTERNET
};
const char *tw_net_scope_str(enum tw_net_scope s);

struct tw_net_link {
  int64_t rtt_us;
  int64_t bandwidth_kbps;     /* kilobits per second */
  int64_t egress_uusd_per_gb; /* micro-USD per 10^9 bytes */
  enum tw_net_scope scope;
  /* where each came from: 'l' link, 'r' rule, 'g' geography, 'd' default */
  char rtt_how, bw_how, egress_how;
};

struct tw_net_region {
  const char *key; /* "aws:us-east-1" */
  bool has_geo;
  int32_t lat_e4, lon_e4; /* degrees x 10^4 */
  char country[8];
  char jurisdiction[16];
};

/* An empty matrix: the built-in defaults only (150 ms, 1 Gbit/s, $0.09/GB
 * across providers, $0.02 within one, nothing within a region). */
struct tw_netmatrix *tw_netmatrix_empty(void);

/* The shipped matrix, configs/network/default.net, compiled in (a new
 * matrix each call; free it). */
struct tw_netmatrix *tw_netmatrix_builtin(void);

/* Parses the text format; name is used in messages.  *out is owned. */
enum tw_rc tw_netmatrix_parse(const char *text, size_t len, const char *name,
                              struct tw_netmatrix **out, struct tw_err *err);
/* Reads and parses a file (TW_E_IO when unreadable, TW_E_TOOBIG over
 * TW_NET_TEXT_MAX). */
enum tw_rc tw_netmatrix_load(const char *path, struct tw_netmatrix **out,
                             struct tw_err *err);

/* Builds a matrix from the measured Skyplane profiles in dir
 * (latency.csv, throughput.csv, cost.csv): avg_rtt, throughput_received
 * and cost for every measured pair, GCP zones folded into their regions.
 * Defaults as tw_netmatrix_empty() for the rest.  TW_E_IO when a file is
 * missing. */
enum tw_rc tw_netmatrix_load_skyplane(const char *dir,
                                      struct tw_netmatrix **out,
                                      struct tw_err *err);

void tw_netmatrix_free(struct tw_netmatrix *m);

/* The link from src to dst ("provider:region", or anything else for an
 * internet location).  Always answers. */
void tw_netmatrix_link(const struct tw_netmatrix *m, const char *src,
                       const char *dst, struct tw_net_link *out);

/* A region's metadata, or NULL when the matrix does not name it. */
const struct tw_net_region *tw_netmatrix_region(const struct tw_netmatrix *m,
                                                const char *key);

/* Counts, for logs and tests. */
size_t tw_netmatrix_n_regions(const struct tw_netmatrix *m);
size_t tw_netmatrix_n_links(const struct tw_netmatrix *m);
/* Region i (0 <= i < n_regions), in the order first seen. */
const struct tw_net_region *tw_netmatrix_region_at(const struct tw_netmatrix *m,
                                                   size_t i);
/* Whether an explicit link src -> dst exists (measured or written). */
bool tw_netmatrix_has_link(const struct tw_netmatrix *m, const char *src,
                           const char *dst);

/* Great-circle estimate of the round trip between two points, the
 * formula the matrix uses without a link: 1 ms plus 18 us per km (light
 * in fibre at 200 km/ms, paths 1.8 times the great circle, both ways). */
int64_t tw_net_rtt_estimate_us(int32_t lat1_e4, int32_t lon1_e4,
                               int32_t lat2_e4, int32_t lon2_e4);

#endif
