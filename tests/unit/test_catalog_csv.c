/* The catalog importer, snapshots, queries and merging, on small catalogs
 * written here: every rejection reason, the known quirks, exact prices
 * traced back to their row, filters, sorting, paging and precedence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/catalog/catalog.h"
#include "billing/catalog/catalog_int.h"
#include "providers/registry.h"

static struct tw_regions *regions;
static struct tw_rates *rates;

static int setup(void **state) {
  (void)state;
  struct tw_err err = {0};
  const char *r = "currency,usd_per_unit,date,source\n"
                  "CNY,0.1393,2025-06-30,test\n";
  if (tw_regions_builtin(&regions, &err) ||
      tw_rates_load_text(r, strlen(r), &rates, &err))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_regions_free(regions);
  tw_rates_free(rates);
  return 0;
}

/* ---- the record reader
 * ---------------------------------------------------------- */

static void reader_splits_quoted_fields_and_counts_lines(void **state) {
  (void)state;
  const char text[] = "a,\"b,c\",\"say \"\"hi\"\"\"\r\n"
                      "\n"
                      "\"multi\nline\",x\n"
                      "last,,\n"
                      "\"open";
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  tw_csv_reader_init(&r, text, sizeof text - 1);
  assert_true(tw_csv_read(&r, &rec));
  assert_int_equal(rec.line, 1);
  assert_int_equal(rec.n, 3);
  assert_memory_equal(rec.f[1], "b,c", 3);
  assert_int_equal(rec.len[2], 8);
  assert_memory_equal(rec.f[2], "say \"hi\"", 8);
  assert_true(tw_csv_read(&r, &rec));
  assert_int_equal(rec.line, 3); /* the blank line is skipped */
  assert_int_equal(rec.len[0], 10);
  assert_memory_equal(rec.f[0], "multi\nline", 10);
  assert_true(tw_csv_read(&r, &rec));
  assert_int_equal(rec.line, 5);
  assert_int_equal(rec.n, 3);
  assert_int_equal(rec.len[1] + rec.len[2], 0);
  assert_true(tw_csv_read(&r, &rec));
  assert_true(rec.bad_quote);
  assert_false(tw_csv_read(&r, &rec));
  tw_csv_reader_release(&r);

  /* more fields than the reader keeps: flagged, never overrun */
  char wide[200];
  memset(wide, ',', 60);
  wide[60] = '\n';
  tw_csv_reader_init(&r, wide, 61);
  assert_true(tw_csv_read(&r, &rec));
  assert_int_equal(rec.n, TW_CSV_MAX_FIELDS);
  assert_true(rec.overflow);
  tw_csv_reader_release(&r);
}

/* ---- ingestion
 * ------------------------------------------------------------------------ */

#define AWS_HEADER                                                             \
  "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"     \
  "Price,SpotPrice,Region,AvailabilityZone,Arch\n"
#define H100_INFO                                                              \
  "\"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8, "        \
  "'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}\""

static const char AWS_CSV[] = AWS_HEADER
    /* 2 */
    "p5.48xlarge,H100,8.0,192.0,2048.0," H100_INFO
    ",68.8,23.144900,us-east-1,use1-az4,x86_64\n"
    /* 3 */ "p5.48xlarge,H100,8.0,192.0,2048.0," H100_INFO
    ",68.8,,us-east-1,use1-az6,x86_64\n"
    /* 4 */ "p4de.24xlarge,A100,8.0,96.0,1152.0,\"{'Gpus': [{'MemoryInfo': "
    "{'SizeInMiB': 81920}}]}\",40.96,12.5,us-east-1,us-east-1a,x86_64\n"
    /* 5 */ "m6g.large,,,2.0,8.0,,0.077,0.0311,eu-central-1,euc1-az2,\n"
    /* 6 */ "short.row,,,2,8,,0.1,0.05,us-east-1\n"
    /* 7 */ ",,,2,8,,0.1,0.05,us-east-1,use1-az1,x86_64\n"
    /* 8 */ "x.large,,,2,8,,0.1,0.05,,use1-az1,x86_64\n"
    /* 9 */ "y.large,,,2,8,,0.1,0.05,us-east-1,usw2-az1,x86_64\n"
    /* 10 */ "z.large,,,two,8,,0.1,0.05,us-east-1,use1-az1,x86_64\n"
    /* 11 */ "w.large,,,2,8,,$0.10,0.05,us-east-1,use1-az1,x86_64\n"
    /* 12 */ "v.large,,,2,8,,,,us-east-1,use1-az1,x86_64\n"
    /* 13 */ "p5.48xlarge,H100,8.0,192.0,2048.0," H100_INFO
    ",68.8,23.1,us-east-1,use1-az4,x86_64\n"
    /* 14 */ "u.large,,,2,8,,0.0,0.0,us-east-1,use1-az1,x86_64\n"
    /* 15 */ "t.large,,,2,8,,0.2,0.0,us-east-1,use1-az2,x86_64\n"
    /* 16 */ "\"q\"\"uoted.large\",,,2,8,,0.1,0.05,us-east-1,use1-az3,x86_64\n"
    /* 17 */ "s.large,,,2,8,,0.1,0.05,us-east-1,use1-az5,x86_64,extra\n"
    /* 18 */ "r.large\x01,,,2,8,,0.1,0.05,us-east-1,use1-az5,x86_64\n"
    /* 19 */ "a-type-name-that-is-far-too-long-to-be-an-instance-type-anywhere-"
    "at-all,,,2,8,,0.1,0.05,us-east-1,use1-az5,x86_64\n"
    /* 20 */ "n.large,,,2,8,,0.12345678,,us-east-1,use1-az5,x86_64\n"
    /* 21 */ "o.large,,,2,8,,0.1,0.05,mars-north-1,,x86_64\n";

static struct tw_cat_snap *ingest(const char *csv, size_t len,
                                  const char *provider, const char *name,
                                  const struct tw_rate *rate,
                                  enum tw_cat_mode mode) {
  struct tw_csv_opts o = {.provider = provider,
                          .rate = rate,
                          .regions = regions,
                          .adapters = tw_adapters,
                          .observed_ms = 1000};
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%s", name);
  snprintf(info.kind, sizeof info.kind, "file");
  snprintf(info.provider, sizeof info.provider, "%s", provider);
  info.mode = mode;
  info.fetched_ms = 1000;
  if (rate)
    info.rate = *rate;
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  if (tw_cat_snap_from_csv(csv, len, &o, &info, &s, &err))
    fail_msg("ingest: %s", err.msg);
  return s;
}

static void every_row_is_normalized_or_rejected_with_a_reason(void **state) {
  (void)state;
  struct tw_cat_snap *s =
      ingest(AWS_CSV, sizeof AWS_CSV - 1, "aws", "t", NULL, TW_CAT_SEED);
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(r->rows, 20);
  assert_int_equal(r->rejected[TW_CAT_REJ_FIELDS], 2);        /* 6, 17 */
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_TYPE], 1);       /* 7 */
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_REGION], 1);     /* 8 */
  assert_int_equal(r->rejected[TW_CAT_REJ_ZONE_MISMATCH], 1); /* 9 */
  assert_int_equal(r->rejected[TW_CAT_REJ_BAD_NUMBER], 1);    /* 10 */
  assert_int_equal(r->rejected[TW_CAT_REJ_BAD_PRICE], 1);     /* 11 */
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_PRICE], 2);      /* 12, 14 */
  assert_int_equal(r->rejected[TW_CAT_REJ_DUPLICATE], 1);     /* 13 */
  assert_int_equal(r->rejected[TW_CAT_REJ_BAD_TEXT], 1);      /* 18 */
  assert_int_equal(r->rejected[TW_CAT_REJ_TOO_LONG], 1);      /* 19 */
  assert_int_equal(r->first_rejected_line[TW_CAT_REJ_DUPLICATE], 13);
  assert_int_equal(r->first_rejected_line[TW_CAT_REJ_FIELDS], 6);
  assert_int_equal(r->normalized, 8); /* 2 3 4 5 15 16 20 21 */
  assert_int_equal(r->rows, r->normalized + tw_cat_report_rejected(r));
  assert_int_equal(r->notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 2); /* 3, 20 */
  assert_int_equal(r->notes[TW_CAT_NOTE_ZERO_PRICE], 1);       /* 15 */
  assert_int_equal(r->notes[TW_CAT_NOTE_ARCH_GUESSED], 1);     /* 5 */
  assert_int_equal(r->notes[TW_CAT_NOTE_PRICE_ROUNDED], 1);    /* 20 */
  assert_int_equal(r->notes[TW_CAT_NOTE_REGION_UNKNOWN], 1);   /* 21 */
  /* zone ids without names: 2 3 5 15 16 20 */
  assert_int_equal(r->notes[TW_CAT_NOTE_ZONE_NAME_UNKNOWN], 6);
  /* two offers for each row with both prices: 2 4 5 16 21 */
  assert_int_equal(r->offers, 13);
  assert_int_equal(tw_cat_snap_count(s), 13);

  size_t i;
  assert_true(
      tw_cat_snap_find(s, "aws:us-east-1:use1-az4:p5.48xlarge:spot", &i));
  struct tw_cat_view v;
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "H100-80GB");
  assert_int_equal(v.accel_milli, 8000);
  assert_int_equal(v.accel_memory_mib, 81920);
  assert_int_equal(v.price_uusd_per_hour, 23144900);
  assert_int_equal(v.vcpus, 192);
  assert_int_equal(v.memory_mib, 2048 * 1024);
  assert_int_equal(v.arch, TW_ARCH_X86_64);
  assert_string_equal(v.zone_id, "use1-az4");
  assert_string_equal(v.zone, "");
  assert_string_equal(v.jurisdiction, "US");
  assert_int_equal(v.granularity_s, 1);
  assert_int_equal(v.min_charge_s, 60);
  assert_int_equal(v.source_row, 2);
  /* the A100 with 80 GB per device is an A100-80GB */
  assert_true(tw_cat_snap_find(
      s, "aws:us-east-1:us-east-1a:p4de.24xlarge:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "A100-80GB");
  assert_true(
      tw_cat_snap_find(s, "aws:eu-central-1:euc1-az2:m6g.large:spot", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.arch, TW_ARCH_ARM64);
  assert_string_equal(v.jurisdiction, "EU");
  assert_true(tw_cat_snap_find(
      s, "aws:us-east-1:use1-az3:q\"uoted.large:on-demand", &i));
  /* rounded beyond six decimals: 0.12345678 -> 0.123457 */
  assert_true(
      tw_cat_snap_find(s, "aws:us-east-1:use1-az5:n.large:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 123457);
  assert_false(tw_cat_snap_find(s, "aws:us-east-1:use1-az2:t.large:spot", &i));
  assert_false(tw_cat_snap_find(s, "nonsense", &i));
  tw_cat_snap_release(s);
}

/* Re-reads the source row of every offer and checks its price. */
static void check_round_trip(const struct tw_cat_snap *s, const char *csv,
                             size_t len, const char *price_col,
                             const char *spot_col) {
  size_t lines = 1;
  for (size_t k = 0; k < len; k++)
    lines += csv[k] == '\n';
  const char **starts = calloc(lines + 2, sizeof *starts);
  size_t ln = 1;
  starts[1] = csv;
  for (size_t k = 0; k < len; k++)
    if (csv[k] == '\n' && ln + 1 <= lines)
      starts[++ln] = csv + k + 1;
  /* the header names the price columns */
  struct tw_csv_reader r;
  struct tw_csv_record rec;
  tw_csv_reader_init(&r, csv, len);
  assert_true(tw_csv_read(&r, &rec));
  int pc = -1, sc = -1;
  for (size_t f = 0; f < rec.n; f++) {
    if (rec.len[f] == strlen(price_col) &&
        !memcmp(rec.f[f], price_col, rec.len[f]))
      pc = (int)f;
    if (rec.len[f] == strlen(spot_col) &&
        !memcmp(rec.f[f], spot_col, rec.len[f]))
      sc = (int)f;
  }
  tw_csv_reader_release(&r);
  assert_true(pc >= 0 && sc >= 0);
  for (size_t i = 0; i < tw_cat_snap_count(s); i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, i, &v);
    assert_true(v.source_row >= 2 && v.source_row <= lines);
    const char *p = starts[v.source_row];
    tw_csv_reader_init(&r, p, (size_t)(csv + len - p));
    assert_true(tw_csv_read(&r, &rec));
    int col = v.market == TW_MARKET_SPOT ? sc : pc;
    assert_true((size_t)col < rec.n);
    int64_t micro;
    bool exact;
    assert_true(
        tw_norm_decimal_micro(rec.f[col], rec.len[col], &micro, &exact));
    assert_int_equal(micro, v.source_price_micro);
    int64_t uusd;
    assert_string_equal(v.currency, v.source->rate.currency);
    assert_int_equal(tw_rate_convert(&v.source->rate, micro, &uusd, NULL),
                     TW_OK);
    assert_int_equal(uusd, v.price_uusd_per_hour);
    if (exact) {
      /* and the decimal text comes back from the integer */
      char back[32];
      int64_t again;
      tw_norm_fmt_micro(v.source_price_micro, back, sizeof back);
      assert_true(tw_norm_decimal_micro(back, strlen(back), &again, NULL));
      assert_int_equal(again, micro);
    }
    /* the row also names the offer's type */
    char id[TW_MODEL_ID_MAX];
    assert_true(tw_cat_snap_offer_id(s, i, id, sizeof id));
    assert_non_null(strstr(id, v.instance_type));
    tw_csv_reader_release(&r);
  }
  free(starts);
}

static void offers_trace_back_to_their_row_and_price(void **state) {
  (void)state;
  struct tw_cat_snap *s =
      ingest(AWS_CSV, sizeof AWS_CSV - 1, "aws", "t", NULL, TW_CAT_SEED);
  check_round_trip(s, AWS_CSV, sizeof AWS_CSV - 1, "Price", "SpotPrice");
  tw_cat_snap_release(s);

  /* a price list in yuan goes through the recorded rate */
  static const char CNY_CSV[] =
      "InstanceType,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
      "ecs.g7.large,2,8,10,1.234567,cn-hangzhou,cn-hangzhou-h\n"
      "ecs.g8y.large,2,8,0.000004,,cn-hangzhou,cn-hangzhou-i\n";
  const struct tw_rate *cny = tw_rates_find(rates, "CNY");
  s = ingest(CNY_CSV, sizeof CNY_CSV - 1, "alibaba", "ali", cny, TW_CAT_SEED);
  size_t i;
  struct tw_cat_view v;
  assert_true(tw_cat_snap_find(
      s, "alibaba:cn-hangzhou:cn-hangzhou-h:ecs.g7.large:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.source_price_micro, 10000000);
  assert_int_equal(v.price_uusd_per_hour, 1393000);
  assert_string_equal(v.source->rate.currency, "CNY");
  assert_string_equal(v.source->rate.date, "2025-06-30");
  assert_true(tw_cat_snap_find(
      s, "alibaba:cn-hangzhou:cn-hangzhou-h:ecs.g7.large:spot", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.protection_s, 3600); /* Alibaba's protection period */
  assert_int_equal(v.price_uusd_per_hour, 171975); /* 0.1719751831 */
  assert_true(tw_cat_snap_find(
      s, "alibaba:cn-hangzhou:cn-hangzhou-i:ecs.g8y.large:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 1); /* 0.557 micro-USD rounds up */
  assert_int_equal(v.arch, TW_ARCH_ARM64);
  check_round_trip(s, CNY_CSV, sizeof CNY_CSV - 1, "Price", "SpotPrice");
  tw_cat_snap_release(s);
}

static void azure_quirks_fractions_and_unnamed_accelerators(void **state) {
  (void)state;
  static const char AZ[] =
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"
      "Price,SpotPrice,Region,Generation\n"
      "Standard_NC24ads_A100_v4,A100-80GB,1,24,220,A100-80GB,3.673,0.7346,"
      "eastus,V1,V2\n"
      "Standard_NV12ads_A10_v5,A10,0.333,12,110,A10,1.317,0.243382,westeurope,"
      "V1\n"
      "Standard_NP10s,,1,10,168,,1.65,0.30492,eastus,V1\n"
      "Standard_D2ps_v5,,,2,8,,0.077,,eastus,V2\n"
      "Standard_X2,,,2,8,,0.1,0.05,eastus,V1,V2,V3\n"
      "Standard_Y2,,9,2,8,,0.1,0.05,eastus,V1\n";
  struct tw_cat_snap *s =
      ingest(AZ, sizeof AZ - 1, "azure", "az", NULL, TW_CAT_SEED);
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(r->rows, 6);
  assert_int_equal(r->normalized, 6);
  assert_int_equal(r->notes[TW_CAT_NOTE_EXTRA_FIELDS], 2);
  assert_int_equal(r->notes[TW_CAT_NOTE_ACCEL_FRACTION], 1);
  assert_int_equal(r->notes[TW_CAT_NOTE_ACCEL_FROM_TYPE], 1);
  assert_int_equal(r->notes[TW_CAT_NOTE_ACCEL_UNNAMED], 1);
  assert_int_equal(r->notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 1);
  size_t i;
  struct tw_cat_view v;
  assert_true(
      tw_cat_snap_find(s, "azure:eastus::Standard_NC24ads_A100_v4:spot", &i));
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "A100-80GB");
  assert_int_equal(v.granularity_s, 1);
  assert_int_equal(v.min_charge_s, 300);
  assert_true(tw_cat_snap_find(
      s, "azure:westeurope::Standard_NV12ads_A10_v5:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.accel_milli, 333);
  assert_string_equal(v.jurisdiction, "EU");
  /* a third of a GPU is not a GPU to placement */
  struct tw_offer o;
  tw_cat_snap_to_offer(s, i, &o);
  assert_string_equal(o.accel_name, "");
  assert_int_equal(o.accel_count, 0);
  assert_true(
      tw_cat_snap_find(s, "azure:eastus::Standard_NP10s:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "U250");
  assert_int_equal(v.accel_kind, TW_ACCEL_FPGA);
  assert_true(
      tw_cat_snap_find(s, "azure:eastus::Standard_D2ps_v5:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.arch, TW_ARCH_ARM64);
  assert_true(tw_cat_snap_find(s, "azure:eastus::Standard_Y2:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, ""); /* a count without a name is dropped */
  check_round_trip(s, AZ, sizeof AZ - 1, "Price", "SpotPrice");
  tw_cat_snap_release(s);
}

static void headerless_rows_join_a_specs_table(void **state) {
  (void)state;
  static const char SPECS[] =
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"
      "Arch\n"
      "p3.2xlarge,V100,1.0,8.0,61.0,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': "
      "16384}}]}\",x86_64\n";
  static const char ROWS[] = "3.06,0.4995,us-east-1,use1-az1\n"
                             "3.06,,us-east-1,use1-az3\n";
  struct tw_csv_specs *sp = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_csv_specs_load(SPECS, sizeof SPECS - 1, &sp, &err),
                   TW_OK);
  struct tw_csv_opts o = {.provider = "aws",
                          .account = "aws-main",
                          .columns = "Price,SpotPrice,Region,AvailabilityZone",
                          .instance_type = "p3.2xlarge",
                          .specs = sp,
                          .regions = regions,
                          .adapters = tw_adapters};
  struct tw_cat_source_info info = {.name = "p3", .kind = "file"};
  struct tw_cat_snap *s = NULL;
  assert_int_equal(
      tw_cat_snap_from_csv(ROWS, sizeof ROWS - 1, &o, &info, &s, &err), TW_OK);
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(r->rows, 2);
  assert_int_equal(r->normalized, 2);
  assert_int_equal(tw_cat_snap_count(s), 3);
  size_t i;
  assert_true(
      tw_cat_snap_find(s, "aws-main:us-east-1:use1-az1:p3.2xlarge:spot", &i));
  struct tw_cat_view v;
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "V100-16GB");
  assert_int_equal(v.vcpus, 8);
  assert_int_equal(v.source_row, 1);
  assert_string_equal(v.account, "aws-main");
  tw_cat_snap_release(s);
  tw_csv_specs_free(sp);

  /* a file the importer cannot use at all is an error, not rows */
  o = (struct tw_csv_opts){
      .provider = "aws", .regions = regions, .adapters = tw_adapters};
  const char *bad[] = {"", "Foo,Bar\n1,2\n", "InstanceType,Region\nx,y\n",
                       "Price,Region,vCPUs\n1,y,2\n"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    tw_err_clear(&err);
    s = (struct tw_cat_snap *)1;
    assert_int_equal(
        tw_cat_snap_from_csv(bad[k], strlen(bad[k]), &o, &info, &s, &err),
        TW_E_INVALID);
    assert_null(s);
  }
}

/* ---- adapters and merging
 * ------------------------------------------------------------- */

static void offer(struct tw_offer *o, const char *acct, const char *region,
                  const char *zone, const char *zone_id, const char *type,
                  enum tw_market m, int64_t price) {
  tw_offer_init(o);
  TW_SET(o->provider, "aws");
  TW_SET(o->account, acct);
  TW_SET(o->region, region);
  TW_SET(o->zone, zone);
  TW_SET(o->zone_id, zone_id);
  TW_SET(o->instance_type, type);
  o->vcpus = 192;
  o->memory_mib = 2048 * 1024;
  o->market = m;
  o->price_uusd_per_hour = price;
  TW_SET(o->accel_name, "H100");
  o->accel_count = 8;
  o->accel_memory_mib = 81920;
  tw_offer_make_id(o);
}

static struct tw_cat_snap *adapt(const struct tw_offer *offers, size_t n,
                                 const char *name,
                                 const struct tw_cat_adapter_opts *extra) {
  struct tw_cat_adapter_opts o = {
      .regions = regions, .rates = rates, .adapters = tw_adapters};
  if (extra) {
    o.chargeback_vcpu_uusd = extra->chargeback_vcpu_uusd;
    o.chargeback_gib_uusd = extra->chargeback_gib_uusd;
    o.chargeback_accel_uusd = extra->chargeback_accel_uusd;
    o.granularity_s = extra->granularity_s;
  }
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%s", name);
  snprintf(info.kind, sizeof info.kind, "adapter");
  info.mode = TW_CAT_ADAPTER;
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_cat_snap_from_offers(offers, n, &o, &info, &s, &err),
                   TW_OK);
  return s;
}

static void adapter_offers_are_normalized_too(void **state) {
  (void)state;
  struct tw_offer in[8];
  offer(&in[0], "aws-main", "us-east-1", "us-east-1a", "use1-az4",
        "p5.48xlarge", TW_MARKET_SPOT, 20000000);
  offer(&in[1], "aws-main", "us-east-1", "us-east-1a", "use1-az4",
        "p5.48xlarge", TW_MARKET_SPOT, 21000000); /* duplicate */
  offer(&in[2], "aws-main", "us-east-1", "us-east-1b", "use1-az6", "",
        TW_MARKET_SPOT, 1);
  offer(&in[3], "aws-main", "us-east-1", "us-east-1b", "use1-az6",
        "p5.48xlarge", TW_MARKET_ON_DEMAND, -5);
  /* an Alibaba price converted from yuan by its adapter, labelled so */
  offer(&in[4], "ali", "cn-hangzhou", "cn-hangzhou-h", "", "ecs.gn7.xlarge",
        TW_MARKET_ON_DEMAND, 10000000);
  TW_SET(in[4].provider, "alibaba");
  tw_offer_set_label(&in[4], "currency", "CNY");
  tw_offer_set_label(&in[4], "zone_type", "availability-zone");
  offer(&in[5], "ali", "cn-hangzhou", "cn-hangzhou-h", "", "ecs.x",
        TW_MARKET_SPOT, 1);
  TW_SET(in[5].provider, "alibaba");
  tw_offer_set_label(&in[5], "currency", "XYZ"); /* a label like any */
  /* a private NPU node, priced by chargeback */
  offer(&in[6], "lab", "rack-a", "", "", "npu-node", TW_MARKET_ON_DEMAND, 0);
  TW_SET(in[6].provider, "slurm");
  TW_SET(in[6].accel_name, "npu.compute");
  in[6].accel_count = 8;
  in[6].accel_memory_mib = 0;
  in[6].vcpus = 4;
  in[6].memory_mib = 2048;
  tw_offer_set_label(&in[6], "npu.control", "1");
  offer(&in[7], "aws-main", "us-east-1", "us-east-1a", "use1-az4", "m6g.large",
        TW_MARKET_SPOT, 30000);
  in[7].accel_count = 0;
  in[7].accel_name[0] = '\0';
  in[7].interruption_pct = 7;
  struct tw_cat_adapter_opts cb = {.chargeback_vcpu_uusd = 10000,
                                   .chargeback_gib_uusd = 2000,
                                   .chargeback_accel_uusd = 1000000};
  struct tw_cat_snap *s = adapt(in, 8, "mixed", &cb);
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  assert_int_equal(r->rows, 8);
  assert_int_equal(r->rejected[TW_CAT_REJ_DUPLICATE], 1);
  assert_int_equal(r->rejected[TW_CAT_REJ_NO_TYPE], 1);
  assert_int_equal(r->rejected[TW_CAT_REJ_BAD_PRICE], 1);
  assert_int_equal(r->normalized, 5);
  assert_int_equal(r->notes[TW_CAT_NOTE_ARCH_GUESSED], 4); /* aws, alibaba x2 */
  size_t i;
  struct tw_cat_view v;
  /* found by zone name or zone id */
  assert_true(tw_cat_snap_find(
      s, "aws-main:us-east-1:us-east-1a:p5.48xlarge:spot", &i));
  size_t j;
  assert_true(
      tw_cat_snap_find(s, "aws-main:us-east-1:use1-az4:p5.48xlarge:spot", &j));
  assert_int_equal(i, j);
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "H100-80GB");
  assert_string_equal(v.accel_listed, "H100");
  assert_int_equal(v.granularity_s, 1);
  assert_int_equal(v.min_charge_s, 60);
  assert_int_equal(v.source_row, 1);
  /* the adapter gets its own accelerator name back at launch */
  struct tw_offer lo;
  tw_cat_snap_to_offer(s, i, &lo);
  assert_string_equal(lo.accel_name, "H100");
  assert_int_equal(lo.accel_count, 8);
  assert_true(tw_cat_snap_find(
      s, "ali:cn-hangzhou:cn-hangzhou-h:ecs.gn7.xlarge:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  /* adapters hand over micro-USD: the one that converted from yuan keeps
   * saying so in its labels, and is not converted twice */
  assert_int_equal(v.price_uusd_per_hour, 10000000);
  assert_int_equal(v.source_price_micro, 10000000);
  assert_string_equal(v.currency, "USD");
  assert_non_null(strstr(v.labels, "currency=CNY"));
  assert_non_null(strstr(v.labels, "zone_type=availability-zone"));
  struct tw_offer ao;
  tw_cat_snap_to_offer(s, i, &ao);
  assert_string_equal(tw_offer_label(&ao, "currency"), "CNY");
  assert_string_equal(tw_offer_label(&ao, "zone_type"), "availability-zone");
  assert_true(tw_cat_snap_find(s, "lab:rack-a::npu-node:on-demand", &i));
  tw_cat_snap_view(s, i, &v);
  assert_string_equal(v.accel, "Ascend-910B");
  assert_int_equal(v.accel_kind, TW_ACCEL_NPU);
  /* 4 vCPU x 0.01 + 2 GiB x 0.002 + 8 NPU x 1.00 = 8.044 USD/h */
  assert_int_equal(v.price_uusd_per_hour, 8044000);
  struct tw_offer o;
  tw_cat_snap_to_offer(s, i, &o);
  assert_string_equal(tw_offer_label(&o, "npu.control"), "1");
  assert_true(
      tw_cat_snap_find(s, "aws-main:us-east-1:us-east-1a:m6g.large:spot", &i));
  tw_cat_snap_view(s, i, &v);
  assert_int_equal(v.risk, TW_RISK_5_10);
  assert_int_equal(v.arch, TW_ARCH_ARM64);
  tw_cat_snap_to_offer(s, i, &o);
  assert_string_equal(o.id, "aws-main:us-east-1:us-east-1a:m6g.large:spot");
  assert_string_equal(tw_offer_label(&o, "jurisdiction"), "US");
  assert_string_equal(tw_offer_label(&o, "country"), "US");
  assert_string_equal(tw_offer_label(&o, "interruption"), "5-10%");
  assert_non_null(tw_offer_label(&o, "geo"));
  assert_int_equal(o.interruption_pct, 7); /* the adapter's own figure */
  tw_cat_snap_release(s);

  /* private capacity per rack, named as the Slurm adapter names it */
  struct tw_offer pv[3];
  for (int k = 0; k < 3; k++) {
    offer(&pv[k], "lab", "cluster-a", "gpu", "", "a100x2", TW_MARKET_PRIVATE,
          2400000);
    TW_SET(pv[k].provider, "slurm");
    TW_SET(pv[k].rack, k == 0 ? "r1" : "r2");
    pv[k].capacity = 4;
    snprintf(pv[k].id, sizeof pv[k].id, "lab:cluster-a:gpu/%s:a100x2:private",
             k == 0 ? "r1" : "r2");
  }
  TW_SET(pv[2].instance_type, "cpu16"); /* named its own way */
  snprintf(pv[2].id, sizeof pv[2].id, "lab/cpu16@r2");
  s = adapt(pv, 3, "lab", NULL);
  assert_int_equal(tw_cat_snap_source(s, 0)->report.normalized, 3);
  assert_true(tw_cat_snap_find(s, "lab:cluster-a:gpu/r1:a100x2:private", &i));
  tw_cat_snap_to_offer(s, i, &o);
  assert_string_equal(o.id, "lab:cluster-a:gpu/r1:a100x2:private");
  assert_int_equal(o.market, TW_MARKET_PRIVATE);
  assert_int_equal(o.capacity, 4);
  assert_string_equal(o.rack, "r1");
  assert_true(tw_cat_snap_find(s, "lab:cluster-a:gpu/r2:a100x2:private", &j));
  assert_int_not_equal(i, j);
  assert_false(tw_cat_snap_companion(s, i, &j));
  assert_true(tw_cat_snap_find(s, "lab/cpu16@r2", &i));
  tw_cat_snap_to_offer(s, i, &o);
  assert_string_equal(o.id, "lab/cpu16@r2");
  assert_null(tw_offer_label(&o, "id"));
  struct tw_cat_query pq = {.market = TW_MARKET_PRIVATE, .limit = 10};
  struct tw_cat_page pg;
  struct tw_err qerr = {0};
  assert_int_equal(tw_cat_snap_query(s, &pq, &pg, &qerr), TW_OK);
  assert_int_equal(pg.n, 3);
  tw_cat_page_release(&pg);
  tw_cat_snap_release(s);
}

static void merge_keeps_precedence_and_learns_zone_names(void **state) {
  (void)state;
  /* the adapter knows us-east-1a is use1-az4 and prices it at 20 USD */
  struct tw_offer in[1];
  offer(&in[0], "aws", "us-east-1", "us-east-1a", "use1-az4", "p5.48xlarge",
        TW_MARKET_SPOT, 20000000);
  struct tw_cat_snap *ad = adapt(in, 1, "aws", NULL);
  /* a seed lists the same offer (by zone id) and one more */
  struct tw_cat_snap *seed =
      ingest(AWS_CSV, sizeof AWS_CSV - 1, "aws", "seed", NULL, TW_CAT_SEED);
  /* an override pins the on-demand price of the same place */
  static const char OV[] = AWS_HEADER
      "p5.48xlarge,H100,8,192,2048,,55.5,,us-east-1,use1-az4,x86_64\n";
  struct tw_cat_snap *ov =
      ingest(OV, sizeof OV - 1, "aws", "pin", NULL, TW_CAT_OVERRIDE);
  struct tw_cat_snap *srcs[] = {seed, ad, ov};
  struct tw_cat_snap *m = NULL;
  tw_cat_snap_merge(srcs, 3, NULL, tw_adapters, 7, 5000, &m);
  assert_int_equal(tw_cat_snap_version(m), 7);
  assert_int_equal(tw_cat_snap_nsources(m), 3);
  size_t i;
  struct tw_cat_view v;
  /* the adapter beats the seed for the spot offer; the zone got its name */
  assert_true(
      tw_cat_snap_find(m, "aws:us-east-1:us-east-1a:p5.48xlarge:spot", &i));
  tw_cat_snap_view(m, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 20000000);
  assert_string_equal(v.source->name, "aws");
  assert_true(tw_cat_snap_find(
      m, "aws:us-east-1:us-east-1a:p5.48xlarge:on-demand", &i));
  tw_cat_snap_view(m, i, &v);
  assert_int_equal(v.price_uusd_per_hour, 55500000);
  assert_string_equal(v.source->name, "pin");
  /* the seed's own offers stay, with learnt names where known */
  assert_true(
      tw_cat_snap_find(m, "aws:us-east-1:use1-az6:p5.48xlarge:on-demand", &i));
  for (size_t k = 0; k < 3; k++) {
    const struct tw_cat_source_info *si = tw_cat_snap_source(m, k);
    if (!strcmp(si->name, "seed")) {
      assert_int_equal(si->superseded, 2);
      assert_int_equal(si->offers, 11);
    } else {
      assert_int_equal(si->superseded, 0);
      assert_int_equal(si->offers, 1);
    }
  }
  assert_int_equal(tw_cat_snap_count(m), 13);
  /* a companion: the on-demand offer of a spot one */
  assert_true(
      tw_cat_snap_find(m, "aws:us-east-1:us-east-1a:p5.48xlarge:spot", &i));
  size_t od;
  assert_true(tw_cat_snap_companion(m, i, &od));
  tw_cat_snap_view(m, od, &v);
  assert_int_equal(v.market, TW_MARKET_ON_DEMAND);
  assert_int_equal(v.price_uusd_per_hour, 55500000);
  /* placement's view: only the offers of configured accounts */
  struct tw_offer_list l;
  tw_offer_list_init(&l);
  const char *accts[] = {"aws"};
  assert_int_equal(tw_cat_snap_offers_of(m, accts, 1, &l), 13);
  const char *none[] = {"azure-x"};
  assert_int_equal(tw_cat_snap_offers_of(m, none, 1, &l), 0);
  tw_offer_list_release(&l);
  tw_cat_snap_release(m);
  tw_cat_snap_release(seed);
  tw_cat_snap_release(ad);
  tw_cat_snap_release(ov);
}

static void stored_form_reads_back_the_same_offers(void **state) {
  (void)state;
  struct tw_cat_snap *s =
      ingest(AWS_CSV, sizeof AWS_CSV - 1, "aws", "t", NULL, TW_CAT_SEED);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cat_snap_write_csv(s, &b);
  struct tw_cat_snap *back = NULL;
  struct tw_err err = {0};
  if (tw_cat_snap_read_csv(b.data, b.len, tw_cat_snap_source(s, 0), regions,
                           &back, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(tw_cat_snap_count(back), tw_cat_snap_count(s));
  for (size_t i = 0; i < tw_cat_snap_count(s); i++) {
    char id[TW_MODEL_ID_MAX];
    size_t k;
    tw_cat_snap_offer_id(s, i, id, sizeof id);
    assert_true(tw_cat_snap_find(back, id, &k));
    struct tw_cat_view a, c;
    tw_cat_snap_view(s, i, &a);
    tw_cat_snap_view(back, k, &c);
    assert_int_equal(a.price_uusd_per_hour, c.price_uusd_per_hour);
    assert_int_equal(a.source_price_micro, c.source_price_micro);
    assert_int_equal(a.source_row, c.source_row);
    assert_int_equal(a.vcpus, c.vcpus);
    assert_int_equal(a.memory_mib, c.memory_mib);
    assert_int_equal(a.arch, c.arch);
    assert_int_equal(a.accel_milli, c.accel_milli);
    assert_string_equal(a.accel, c.accel);
    assert_string_equal(a.jurisdiction, c.jurisdiction);
    assert_string_equal(a.zone_id, c.zone_id);
    assert_int_equal(a.granularity_s, c.granularity_s);
  }
  /* the same text again: the same content hash */
  struct tw_buf b2;
  tw_buf_init(&b2);
  tw_cat_snap_write_csv(back, &b2);
  assert_int_equal(b.len, b2.len);
  tw_buf_release(&b2);
  tw_buf_release(&b);
  tw_cat_snap_release(back);
  tw_cat_snap_release(s);
  assert_int_equal(
      tw_cat_snap_read_csv("junk\n", 5, NULL, regions, &back, &err),
      TW_E_INVALID);
}

/* ---- queries
 * -------------------------------------------------------------------------- */

/* A generated catalog of n offers across three clouds. */
static struct tw_cat_snap *generated(int rows) {
  static const char *const TYPES[][4] = {
      {"p5.48xlarge", "H100", "8", "192"},
      {"p4de.24xlarge", "A100-80GB", "8", "96"},
      {"p4d.24xlarge", "A100", "8", "96"},
      {"g4dn.xlarge", "T4", "1", "4"},
      {"m6i.2xlarge", "", "", "8"},
      {"m6g.large", "", "", "2"}};
  static const char *const REGIONS[][2] = {{"us-east-1", "use1"},
                                           {"eu-central-1", "euc1"},
                                           {"ap-northeast-1", "apne1"},
                                           {"eu-west-2", "euw2"}};
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, AWS_HEADER);
  for (int i = 0; i < rows; i++) {
    const char *const *t = TYPES[i % 6];
    const char *const *r = REGIONS[(i / 6) % 4];
    int az = i / 24 + 1;
    tw_buf_printf(&b, "%s,%s,%s,%s,16,,%d.%02d,%d.%02d,%s,%s-az%d,\n", t[0],
                  t[1], t[2], t[3], 1 + (i * 7) % 50, i % 100, (i * 3) % 20,
                  1 + (i * 13) % 99, r[0], r[1], az);
  }
  struct tw_cat_snap *s =
      ingest(b.data, b.len, "aws", "gen", NULL, TW_CAT_SEED);
  tw_buf_release(&b);
  return s;
}

static size_t run(const struct tw_cat_snap *s, struct tw_cat_query *q,
                  struct tw_cat_page *p) {
  struct tw_err err = {0};
  if (tw_cat_snap_query(s, q, p, &err))
    fail_msg("query: %s", err.msg);
  return p->n;
}

/* The same query answered by brute force: every offer, filtered by
 * string comparison. */
static size_t brute(const struct tw_cat_snap *s, const struct tw_cat_query *q) {
  size_t n = 0;
  for (size_t i = 0; i < tw_cat_snap_count(s); i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, i, &v);
    if (q->accel && (strncmp(v.accel, q->accel, strlen(q->accel)) ||
                     v.accel_milli < q->accel_count * 1000))
      continue;
    if (q->market != TW_MARKET_ANY && v.market != q->market)
      continue;
    if (q->cpus && v.vcpus < q->cpus)
      continue;
    if (q->max_price_uusd && v.price_uusd_per_hour > q->max_price_uusd)
      continue;
    if (q->n_jurisdictions && strcmp(v.jurisdiction, q->jurisdictions[0]))
      continue;
    if (q->zone && strcmp(v.zone_id, q->zone))
      continue;
    if (q->arch != TW_ARCH_ANY && v.arch != q->arch)
      continue;
    n++;
  }
  return n;
}

static void queries_filter_sort_and_page(void **state) {
  (void)state;
  struct tw_cat_snap *s = generated(2400);
  assert_int_equal(tw_cat_snap_count(s), 4800);
  struct tw_cat_query q = {.limit = 10};
  struct tw_cat_page p;

  /* GPU A100-80GB:8 spot, cheapest first */
  q.accel = "A100-80GB";
  q.accel_count = 8;
  q.market = TW_MARKET_SPOT;
  assert_int_equal(run(s, &q, &p), 10);
  int64_t last = -1;
  for (size_t i = 0; i < p.n; i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, p.items[i], &v);
    assert_string_equal(v.accel, "A100-80GB");
    assert_int_equal(v.market, TW_MARKET_SPOT);
    assert_true(v.price_uusd_per_hour >= last);
    last = v.price_uusd_per_hour;
  }
  assert_true(p.next_cursor[0]);
  tw_cat_page_release(&p);

  /* "A100" matches both variants; paging visits each match exactly once,
   * in order, whichever strategy the query uses */
  const enum tw_cat_sort sorts[] = {TW_CAT_SORT_PRICE, TW_CAT_SORT_PRICE_DESC,
                                    TW_CAT_SORT_VCPUS_DESC, TW_CAT_SORT_MEMORY,
                                    TW_CAT_SORT_RISK};
  /* templates that make the query read the price index, the shapes'
   * ranges and the locations' ranges */
  const struct tw_cat_query templates[] = {
      {.accel = "A100"},
      {.market = TW_MARKET_ANY},
      {.jurisdictions = {"EU"}, .n_jurisdictions = 1, .zone = "euc1-az3"},
      {.accel = "T4", .jurisdictions = {"EU"}, .n_jurisdictions = 1}};
  for (size_t a = 0; a < sizeof templates / sizeof templates[0]; a++)
    for (size_t k = 0; k < sizeof sorts / sizeof sorts[0]; k++) {
      struct tw_cat_query pq = templates[a];
      pq.limit = 7;
      pq.sort = sorts[k];
      size_t want = brute(s, &pq), seen = 0;
      char cursor[64] = "";
      uint8_t *hit = calloc(tw_cat_snap_count(s), 1);
      int64_t prev_price = -1;
      for (int page = 0; page < 5000; page++) {
        pq.cursor = cursor[0] ? cursor : NULL;
        run(s, &pq, &p);
        for (size_t i = 0; i < p.n; i++) {
          assert_false(hit[p.items[i]]);
          hit[p.items[i]] = 1;
          struct tw_cat_view v;
          tw_cat_snap_view(s, p.items[i], &v);
          if (sorts[k] == TW_CAT_SORT_PRICE)
            assert_true(v.price_uusd_per_hour >= prev_price);
          if (sorts[k] == TW_CAT_SORT_PRICE_DESC)
            assert_true(prev_price < 0 || v.price_uusd_per_hour <= prev_price);
          prev_price = v.price_uusd_per_hour;
        }
        seen += p.n;
        snprintf(cursor, sizeof cursor, "%s", p.next_cursor);
        tw_cat_page_release(&p);
        if (!cursor[0])
          break;
      }
      free(hit);
      if (seen != want || !want)
        fail_msg("template %zu sort %s: %zu of %zu", a,
                 tw_cat_sort_str(sorts[k]), seen, want);
    }

  /* filters against brute force */
  struct tw_cat_query f = {.limit = 1000,
                           .cpus = 8,
                           .max_price_uusd = 20000000,
                           .jurisdictions = {"EU"},
                           .n_jurisdictions = 1};
  assert_int_equal(run(s, &f, &p), brute(s, &f));
  assert_true(p.n > 0);
  for (size_t i = 0; i < p.n; i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, p.items[i], &v);
    assert_string_equal(v.country, "DE"); /* eu-west-2 is UK */
  }
  tw_cat_page_release(&p);
  struct tw_cat_query arm = {.limit = 1000, .arch = TW_ARCH_ARM64};
  assert_int_equal(run(s, &arm, &p), brute(s, &arm));
  assert_int_equal(p.n, 800);
  tw_cat_page_release(&p);
  struct tw_cat_query noacc = {
      .limit = 1000, .no_accel = true, .regions = {"aws:eu-*"}, .n_regions = 1};
  run(s, &noacc, &p);
  assert_int_equal(p.n, 800); /* 2 types x 2 EU regions x 100 rows x 2 */
  tw_cat_page_release(&p);
  struct tw_cat_query prov = {
      .limit = 5, .providers = {"azure"}, .n_providers = 1};
  assert_int_equal(run(s, &prov, &p), 0);
  tw_cat_page_release(&p);
  /* a selector with two colons names zones */
  struct tw_cat_query zsel = {.limit = 1000,
                              .regions = {"aws:eu-central-1:euc1-az1", "gcp:*"},
                              .n_regions = 2};
  run(s, &zsel, &p);
  assert_int_equal(p.n, 12);
  tw_cat_page_release(&p);
  struct tw_cat_query zone = {.limit = 1000, .zone = "use1-az1"};
  run(s, &zone, &p);
  assert_int_equal(p.n, 12); /* 6 types x 2 markets in that zone */
  tw_cat_page_release(&p);

  /* bad input is refused with the field named */
  struct tw_err err = {0};
  struct tw_cat_query bad = {.limit = 0};
  assert_int_equal(tw_cat_snap_query(s, &bad, &p, &err), TW_E_INVALID);
  assert_string_equal(err.field, "limit");
  bad = (struct tw_cat_query){.limit = 5, .cursor = "c1.p.12.zz"};
  tw_err_clear(&err);
  assert_int_equal(tw_cat_snap_query(s, &bad, &p, &err), TW_E_INVALID);
  assert_string_equal(err.field, "cursor");
  bad.cursor = "c1.v.12.0000000000000001"; /* a cursor of another sort */
  assert_int_equal(tw_cat_snap_query(s, &bad, &p, &err), TW_E_INVALID);
  bad.cursor = "c1.p.-9223372036854775808.0000000000000001";
  assert_int_equal(tw_cat_snap_query(s, &bad, &p, &err), TW_E_INVALID);

  enum tw_cat_sort so;
  assert_true(tw_cat_sort_parse("-price", &so));
  assert_int_equal(so, TW_CAT_SORT_PRICE_DESC);
  assert_false(tw_cat_sort_parse("cheapest", &so));
  tw_cat_snap_release(s);
}

static void a_cursor_survives_a_new_snapshot(void **state) {
  (void)state;
  struct tw_cat_snap *a = generated(600);
  struct tw_cat_query q = {.limit = 20};
  struct tw_cat_page p1, p2;
  run(a, &q, &p1);
  char last_id[TW_MODEL_ID_MAX];
  tw_cat_snap_offer_id(a, p1.items[19], last_id, sizeof last_id);
  /* a new snapshot of the same offers with more added continues after the
   * last offer seen, wherever it sits now */
  struct tw_cat_snap *b = generated(1200);
  q.cursor = p1.next_cursor;
  run(b, &q, &p2);
  struct tw_cat_view lv, fv;
  size_t li;
  assert_true(tw_cat_snap_find(b, last_id, &li));
  tw_cat_snap_view(b, li, &lv);
  tw_cat_snap_view(b, p2.items[0], &fv);
  assert_true(fv.price_uusd_per_hour >= lv.price_uusd_per_hour);
  for (size_t i = 0; i < p2.n; i++)
    assert_int_not_equal(p2.items[i], li);
  tw_cat_page_release(&p1);
  tw_cat_page_release(&p2);
  tw_cat_snap_release(a);
  tw_cat_snap_release(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reader_splits_quoted_fields_and_counts_lines),
      cmocka_unit_test(every_row_is_normalized_or_rejected_with_a_reason),
      cmocka_unit_test(offers_trace_back_to_their_row_and_price),
      cmocka_unit_test(azure_quirks_fractions_and_unnamed_accelerators),
      cmocka_unit_test(headerless_rows_join_a_specs_table),
      cmocka_unit_test(adapter_offers_are_normalized_too),
      cmocka_unit_test(merge_keeps_precedence_and_learns_zone_names),
      cmocka_unit_test(stored_form_reads_back_the_same_offers),
      cmocka_unit_test(queries_filter_sort_and_page),
      cmocka_unit_test(a_cursor_survives_a_new_snapshot),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
