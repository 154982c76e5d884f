/* fuzz_catalog_csv.c - the catalog CSV importer on arbitrary bytes.
 *
 * The first byte picks the provider and options (header-less rows with a
 * specs table, a foreign currency); the rest is the file.  Beyond not
 * crashing, every ingestion must account for every row (rows = normalized
 * + rejected), offers must reproduce through the stored form, and queries
 * over the result must hold their page limits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "billing/catalog/catalog.h"
#include "billing/catalog/catalog_int.h"
#include "providers/registry.h"

/* abort() calls are merged by the compiler: say which check failed */
#define FAIL(what)                                                             \
  do {                                                                         \
    fprintf(stderr, "fuzz_catalog_csv: %s\n", what);                           \
    abort();                                                                   \
  } while (0)

static struct tw_regions *regions;
static struct tw_rates *rates;
static struct tw_csv_specs *specs;

static void init(void) {
  struct tw_err err = {0};
  const char *r =
      "currency,usd_per_unit,date,source\nCNY,0.1393,2025-06-30,x\n";
  const char *sp =
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,"
      "MemoryGiB,GpuInfo,Arch\np3.2xlarge,V100,1.0,8.0,61.0,,x86_64\n";
  if (tw_regions_builtin(&regions, &err) ||
      tw_rates_load_text(r, strlen(r), &rates, &err) ||
      tw_csv_specs_load(sp, strlen(sp), &specs, &err))
    FAIL(err.msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!regions)
    init();
  if (size < 1)
    return 0;
  static const char *const PROVIDERS[] = {"aws", "azure", "gcp", "alibaba"};
  uint8_t sel = data[0];
  struct tw_csv_opts o = {.provider = PROVIDERS[sel & 3],
                          .regions = regions,
                          .adapters = tw_adapters};
  if (sel & 4) {
    o.columns = "Price,SpotPrice,Region,AvailabilityZone";
    o.instance_type = "p3.2xlarge";
    o.specs = specs;
  }
  if (sel & 8)
    o.rate = tw_rates_find(rates, "CNY");
  if (sel & 16)
    o.account = "acct";
  struct tw_cat_source_info info = {.name = "fuzz", .kind = "file"};
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  if (tw_cat_snap_from_csv((const char *)data + 1, size - 1, &o, &info, &s,
                           &err) != TW_OK)
    return 0;
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  if (r->rows != r->normalized + tw_cat_report_rejected(r) ||
      r->offers != tw_cat_snap_count(s))
    FAIL("a row is not accounted for");
  /* every offer is found by its own id */
  for (size_t i = 0; i < tw_cat_snap_count(s) && i < 64; i++) {
    char id[TW_MODEL_ID_MAX];
    size_t k;
    if (tw_cat_snap_offer_id(s, i, id, sizeof id) &&
        (!tw_cat_snap_find(s, id, &k)))
      FAIL(id);
    struct tw_offer off;
    tw_cat_snap_to_offer(s, i, &off);
  }
  /* the stored form reads back the same number of offers */
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cat_snap_write_csv(s, &b);
  struct tw_cat_snap *back = NULL;
  if (tw_cat_snap_read_csv(b.data, b.len, tw_cat_snap_source(s, 0), regions,
                           &back, &err) != TW_OK ||
      tw_cat_snap_count(back) != tw_cat_snap_count(s))
    FAIL(err.msg[0] ? err.msg : "the stored form lost offers");
  tw_cat_snap_release(back);
  tw_buf_release(&b);
  struct tw_cat_query q = {.limit = 3, .sort = (enum tw_cat_sort)(sel % 7)};
  struct tw_cat_page p;
  if (tw_cat_snap_query(s, &q, &p, &err) == TW_OK) {
    if (p.n > 3)
      FAIL("a page over its limit");
    if (p.next_cursor[0]) {
      struct tw_cat_page p2;
      q.cursor = p.next_cursor;
      if (tw_cat_snap_query(s, &q, &p2, &err) == TW_OK)
        tw_cat_page_release(&p2);
    }
    tw_cat_page_release(&p);
  }
  tw_cat_snap_release(s);
  return 0;
}
