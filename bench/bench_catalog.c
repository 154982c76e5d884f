/* bench_catalog.c - bench-catalog: what the catalog costs.
 *
 *   bench-catalog [--quick | --smoke] [--data DIR]
 *
 * Figures, one `key value unit` line each:
 *   ingest_synthetic_rows_per_s   SkyPilot AWS-format CSV rows read,
 *                                 normalized and built into a snapshot
 *                                 (1M rows, 2M offers), CPU time
 *   ingest_<file>_rows_per_s      the same for the real catalogs of
 *                                 shared/data when present (DIR, default
 *                                 $TRADEWIND_TESTDATA or ../shared/data)
 *   merge_offers_per_s            offers merged from two sources into one
 *                                 published snapshot
 *   bytes_per_offer_<n>           memory of a snapshot of n offers, as it
 *                                 accounts itself, and heap_bytes_per_offer_<n>
 *                                 as the allocator saw it (mallinfo2)
 *   query_<name>_<n>_p50_us, _p99_us
 *                                 latency of typical queries over n offers
 *                                 (10k, 100k, 1M)
 *
 * Times are CPU time of this process (CLOCK_PROCESS_CPUTIME_ID), so the
 * figures move less with the load of a shared machine than wall time
 * would; the wall time of each ingestion is printed as a comment.
 * --quick takes well under a minute (fewer query repetitions, one pass
 * over each real file); --smoke runs a small catalog and checks results
 * only (ctest runs it so the benchmark cannot rot). */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "billing/catalog/catalog.h"
#include "broker/base/mem.h"
#include "providers/registry.h"

static int failed;

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

static struct tw_regions *regions;

/* ---- a synthetic catalog
 * ----------------------------------------------------------- */

/* AWS regions and their zone-id prefixes: the importer checks that a zone
 * id belongs to its row's region. */
static const char *const REGIONS[][2] = {
    {"us-east-1", "use1"},       {"us-east-2", "use2"},
    {"us-west-1", "usw1"},       {"us-west-2", "usw2"},
    {"af-south-1", "afs1"},      {"ap-east-1", "ape1"},
    {"ap-northeast-1", "apne1"}, {"ap-northeast-2", "apne2"},
    {"ap-northeast-3", "apne3"}, {"ap-south-1", "aps1"},
    {"ap-south-2", "aps2"},      {"ap-southeast-1", "apse1"},
    {"ap-southeast-2", "apse2"}, {"ap-southeast-3", "apse3"},
    {"ap-southeast-4", "apse4"}, {"ca-central-1", "cac1"},
    {"ca-west-1", "caw1"},       {"eu-central-1", "euc1"},
    {"eu-central-2", "euc2"},    {"eu-north-1", "eun1"},
    {"eu-south-1", "eus1"},      {"eu-south-2", "eus2"},
    {"eu-west-1", "euw1"},       {"eu-west-2", "euw2"},
    {"eu-west-3", "euw3"},       {"il-central-1", "ilc1"},
    {"me-central-1", "mec1"},    {"me-south-1", "mes1"},
    {"sa-east-1", "sae1"},       {"mx-central-1", "mxc1"}};
#define NREGIONS (sizeof REGIONS / sizeof REGIONS[0])

/* accelerator, count, vCPUs, GiB per instance family */
static const struct {
  const char *family, *accel, *count;
  int vcpus, gib;
} FAMILIES[] = {{"p5", "H100", "8.0", 192, 2048},
                {"p4de", "A100-80GB", "8.0", 96, 1152},
                {"p4d", "A100", "8.0", 96, 1152},
                {"p3", "V100", "4.0", 32, 244},
                {"g5", "A10G", "1.0", 8, 32},
                {"g6", "L4", "1.0", 8, 32},
                {"g4dn", "T4", "1.0", 4, 16},
                {"m6i", "", "", 8, 32},
                {"c7g", "", "", 4, 8},
                {"r6i", "", "", 16, 128},
                {"m7a", "", "", 8, 32},
                {"c6in", "", "", 32, 64}};
#define NFAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])
static const char *const SIZES[] = {
    "large",    "xlarge",   "2xlarge",  "4xlarge",  "8xlarge",
    "12xlarge", "16xlarge", "24xlarge", "32xlarge", "48xlarge"};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* rows distinct (type, region, zone) rows: types x regions x zones */
static void synth(size_t rows, struct tw_buf *b) {
  tw_buf_reset(b);
  tw_buf_adds(b, "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,"
                 "MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
                 "AvailabilityZone,Arch\n");
  size_t ntypes = NFAMILIES * NSIZES;
  size_t zones = rows / (ntypes * NREGIONS) + 1;
  size_t made = 0;
  for (size_t z = 1; z <= zones && made < rows; z++)
    for (size_t r = 0; r < NREGIONS && made < rows; r++)
      for (size_t t = 0; t < ntypes && made < rows; t++, made++) {
        size_t f = t % NFAMILIES, sz = t / NFAMILIES;
        int mult = 1 << (sz < 6 ? sz : 6);
        uint64_t base = 20000 + next_rand() % 50000000;
        uint64_t spot = base / 4 + next_rand() % (base / 2 + 1);
        bool no_spot = next_rand() % 20 == 0;
        char spot_text[32] = ""; /* empty: "not offered" on spot */
        if (!no_spot)
          snprintf(spot_text, sizeof spot_text, "%" PRIu64 ".%06" PRIu64,
                   spot / 1000000, spot % 1000000);
        char line[320];
        int n = snprintf(line, sizeof line,
                         "%s.%s,%s,%s,%d.0,%d.0,,%" PRIu64 ".%06" PRIu64
                         ",%s,%s,%s-az%zu,%s\n",
                         FAMILIES[f].family, SIZES[sz], FAMILIES[f].accel,
                         FAMILIES[f].count, FAMILIES[f].vcpus * mult / 8 + 1,
                         FAMILIES[f].gib * mult / 8 + 1, base / 1000000,
                         base % 1000000, spot_text, REGIONS[r][0],
                         REGIONS[r][1], z, f == 8 ? "arm64" : "x86_64");
        tw_buf_add(b, line, (size_t)n);
      }
}

static struct tw_cat_snap *ingest(const char *text, size_t len,
                                  const char *provider, const char *name,
                                  double *cpu, double *wall) {
  struct tw_csv_opts o = {
      .provider = provider, .regions = regions, .adapters = tw_adapters};
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%s", name);
  snprintf(info.kind, sizeof info.kind, "file");
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  double c0 = cpu_s(), w0 = wall_s();
  if (tw_cat_snap_from_csv(text, len, &o, &info, &s, &err)) {
    fprintf(stderr, "bench-catalog: %s: %s\n", name, err.msg);
    failed = 1;
    return NULL;
  }
  *cpu = cpu_s() - c0;
  *wall = wall_s() - w0;
  return s;
}

/* ---- queries
 * ----------------------------------------------------------------------------
 */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct qdef {
  const char *name;
  struct tw_cat_query q;
  bool next_page; /* time the second page (through the cursor) */
};

static void time_query(const struct tw_cat_snap *s, const struct qdef *d,
                       size_t offers_label, int reps) {
  double *lat = tw_malloc((size_t)reps * sizeof *lat);
  struct tw_cat_query q = d->q;
  char cursor[64] = "";
  if (d->next_page) {
    struct tw_cat_page p;
    struct tw_err err = {0};
    if (tw_cat_snap_query(s, &q, &p, &err) == TW_OK) {
      snprintf(cursor, sizeof cursor, "%s", p.next_cursor);
      tw_cat_page_release(&p);
    }
    q.cursor = cursor;
  }
  size_t got = 0, scanned = 0;
  for (int i = 0; i < reps; i++) {
    struct tw_cat_page p;
    struct tw_err err = {0};
    double t0 = cpu_s();
    enum tw_rc rc = tw_cat_snap_query(s, &q, &p, &err);
    lat[i] = (cpu_s() - t0) * 1e6;
    if (rc) {
      fprintf(stderr, "bench-catalog: query %s: %s\n", d->name, err.msg);
      failed = 1;
      break;
    }
    got = p.n;
    scanned = p.scanned;
    tw_cat_page_release(&p);
  }
  qsort(lat, (size_t)reps, sizeof *lat, cmp_d);
  char n[24];
  snprintf(n, sizeof n, "%zuk", offers_label / 1000);
  if (offers_label >= 1000000)
    snprintf(n, sizeof n, "%zuM", offers_label / 1000000);
  printf("query_%s_%s_p50_us %.1f us\n", d->name, n, lat[reps / 2]);
  printf("query_%s_%s_p99_us %.1f us\n", d->name, n,
         lat[(size_t)((double)reps * 0.99)]);
  printf("# %s over %zu offers: %zu results, %zu offers examined\n", d->name,
         offers_label, got, scanned);
  if (!got && strcmp(d->name, "none")) {
    fprintf(stderr, "bench-catalog: query %s found nothing\n", d->name);
    failed = 1;
  }
  free(lat);
}

static void query_set(const struct tw_cat_snap *s, size_t label, int reps) {
  struct qdef defs[] = {
      {"gpu_a100_80gb_8_spot",
       {.accel = "A100-80GB",
        .accel_count = 8,
        .market = TW_MARKET_SPOT,
        .limit = 10},
       false},
      {"h100_any_price", {.accel = "H100", .limit = 50}, false},
      {"cpus16_eu_ondemand",
       {.cpus = 16,
        .market = TW_MARKET_ON_DEMAND,
        .jurisdictions = {"EU"},
        .n_jurisdictions = 1,
        .limit = 50},
       false},
      {"cheapest_100", {.limit = 100}, false},
      {"cheapest_page2", {.limit = 100}, true},
      {"region_glob_arm",
       {.regions = {"aws:eu-*"},
        .n_regions = 1,
        .arch = TW_ARCH_ARM64,
        .limit = 20},
       false},
      {"sort_vcpus_desc", {.sort = TW_CAT_SORT_VCPUS_DESC, .limit = 20}, false},
      {"zone_id", {.zone = "use1-az1", .limit = 50}, false},
      {"max_price_spot",
       {.market = TW_MARKET_SPOT, .max_price_uusd = 100000, .limit = 50},
       false},
  };
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
    time_query(s, &defs[i], label, reps);
}

/* ---- main
 * --------------------------------------------------------------------------------
 */

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return b.data ? tw_buf_detach(&b) : calloc(1, 1);
}

int main(int argc, char **argv) {
  bool quick = false, smoke = false;
  const char *data = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--smoke"))
      smoke = true;
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else {
      fprintf(stderr,
              "usage: bench-catalog [--quick | --smoke] [--data DIR]\n");
      return 2;
    }
  }
  struct tw_err err = {0};
  if (tw_regions_builtin(&regions, &err)) {
    fprintf(stderr, "bench-catalog: %s\n", err.msg);
    return 1;
  }
  int reps = smoke ? 5 : quick ? 30 : 300;
  size_t sizes[] = {10000, 100000, 1000000};
  size_t nsizes = smoke ? 1 : 3;
  struct tw_buf csv;
  tw_buf_init(&csv);
  printf("# bench-catalog %s\n", smoke ? "--smoke" : quick ? "--quick" : "");

  /* ingestion and memory at each size (offers = 2 x rows, less the rows
   * without a spot price) */
  for (size_t k = 0; k < nsizes; k++) {
    size_t rows = sizes[k] / 2 + sizes[k] / 40;
    synth(rows, &csv);
    size_t heap0 = heap_in_use();
    double cpu, wall;
    struct tw_cat_snap *s =
        ingest(csv.data, csv.len, "aws", "synthetic", &cpu, &wall);
    if (!s)
      break;
    size_t heap = heap_in_use() - heap0;
    size_t n = tw_cat_snap_count(s);
    const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
    if (r->normalized != rows || r->rows != rows) {
      fprintf(stderr, "bench-catalog: %zu rows, %" PRIu64 " normalized\n", rows,
              r->normalized);
      failed = 1;
    }
    char label[24];
    snprintf(label, sizeof label, "%zuk", sizes[k] / 1000);
    if (sizes[k] >= 1000000)
      snprintf(label, sizeof label, "%zuM", sizes[k] / 1000000);
    printf("# synthetic catalog: %zu rows, %zu bytes of CSV, %zu offers; "
           "ingestion %.3f s CPU, %.3f s wall\n",
           rows, csv.len, n, cpu, wall);
    if (k == nsizes - 1)
      printf("ingest_synthetic_rows_per_s %.0f rows/s\n", (double)rows / cpu);
    printf("bytes_per_offer_%s %.1f bytes\n", label,
           (double)tw_cat_snap_bytes(s) / (double)n);
    printf("heap_bytes_per_offer_%s %.1f bytes\n", label,
           (double)heap / (double)n);
    if ((double)tw_cat_snap_bytes(s) / (double)n > 200) {
      fprintf(stderr, "bench-catalog: over 200 bytes per offer\n");
      failed = 1;
    }
    query_set(s, sizes[k], reps);
    if (k == nsizes - 1 && !smoke) {
      /* merging: the snapshot with a second source of the same offers */
      struct tw_cat_snap *srcs[] = {s, s};
      struct tw_cat_snap *m = NULL;
      double c0 = cpu_s();
      tw_cat_snap_merge(srcs, 2, NULL, tw_adapters, 2, 0, &m);
      double dt = cpu_s() - c0;
      printf("merge_offers_per_s %.0f offers/s\n", (double)(2 * n) / dt);
      tw_cat_snap_release(m);
    }
    tw_cat_snap_release(s);
  }
  tw_buf_release(&csv);

  /* the real catalogs */
  char dir[1024];
  const char *env = getenv("TRADEWIND_TESTDATA");
  const char *srcdir = getenv("TW_SOURCE_DIR");
  if (data)
    snprintf(dir, sizeof dir, "%s", data);
  else if (env && *env)
    snprintf(dir, sizeof dir, "%s", env);
  else
    snprintf(dir, sizeof dir, "%s/../shared/data", srcdir ? srcdir : ".");
  static const struct {
    const char *rel, *provider, *key;
  } REAL[] = {{"catalogs/anycloud/azure/vms.csv", "azure", "azure"},
              {"catalogs/anycloud/gcp/vms.csv", "gcp", "gcp"}};
  for (size_t i = 0; !smoke && i < sizeof REAL / sizeof REAL[0]; i++) {
    char path[2048];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, REAL[i].rel);
    char *text = slurp(path, &len);
    if (!text) {
      printf("# %s: absent, skipped\n", path);
      continue;
    }
    double best = 1e9, wall = 0, cpu;
    size_t rows = 0;
    for (int rep = 0; rep < (quick ? 1 : 5); rep++) {
      double w;
      struct tw_cat_snap *s =
          ingest(text, len, REAL[i].provider, REAL[i].key, &cpu, &w);
      if (!s)
        break;
      rows = tw_cat_snap_source(s, 0)->report.rows;
      if (cpu < best) {
        best = cpu;
        wall = w;
      }
      tw_cat_snap_release(s);
    }
    printf("ingest_%s_rows_per_s %.0f rows/s\n", REAL[i].key,
           (double)rows / best);
    printf("# %s: %zu rows in %.3f s CPU (%.3f s wall), best of %d\n",
           REAL[i].rel, rows, best, wall, quick ? 1 : 5);
    free(text);
  }
  tw_regions_free(regions);
  if (failed)
    fprintf(stderr, "bench-catalog: FAILED\n");
  return failed ? 1 : 0;
}
