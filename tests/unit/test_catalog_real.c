/* The real public catalogs in shared/data/catalogs (see its README): every
 * row normalized or rejected, with the counts per reason asserted, and
 * every offer's price traced back to its row exactly.  The expected counts
 * were worked out from the files with an independent script (Python's csv
 * module and Decimal) applying the rules of docs/catalog.md.
 *
 * SKIPPED (exit 77) when the data folder is absent. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/twtest.h"
#include "billing/catalog/catalog.h"
#include "providers/registry.h"

#define CHECK_EQ(got, want, what)                                              \
  TW_CHECK((uint64_t)(got) == (uint64_t)(want),                                \
           "%s: got %" PRIu64 ", want %" PRIu64, what, (uint64_t)(got),        \
           (uint64_t)(want))


static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct tw_regions *regions;

static struct tw_cat_snap *load(const char *dir, const char *rel,
                                const char *provider, const char *columns,
                                const char *type, struct tw_csv_specs *specs,
                                char **text, size_t *len) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  *text = tw_test_slurp(path, len);
  if (!*text) {
    TW_FAIL("FAIL: cannot read %s", path);
    return NULL;
  }
  struct tw_csv_opts o = {.provider = provider,
                          .columns = columns,
                          .instance_type = type,
                          .specs = specs,
                          .regions = regions,
                          .adapters = tw_adapters};
  struct tw_cat_source_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%.60s", rel);
  snprintf(info.kind, sizeof info.kind, "file");
  struct tw_cat_snap *s = NULL;
  struct tw_err err = {0};
  double t0 = now_s();
  if (tw_cat_snap_from_csv(*text, *len, &o, &info, &s, &err)) {
    TW_FAIL("FAIL %s: %s", rel, err.msg);
    return NULL;
  }
  double dt = now_s() - t0;
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  printf("%-48s rows %7" PRIu64 "  offers %7zu  %.0f rows/s\n", rel, r->rows,
         tw_cat_snap_count(s), dt > 0 ? (double)r->rows / dt : 0.0);
  TW_CHECK(r->rows == r->normalized + tw_cat_report_rejected(r),
           "%s: rows %" PRIu64 " != normalized + rejected", rel, r->rows);
  return s;
}

/* Every offer's row, read again, gives its price to the micro-dollar. */
static void round_trip(const struct tw_cat_snap *s, const char *text,
                       size_t len, bool header, int price_col, int spot_col,
                       const char *what) {
  size_t lines = 2;
  for (size_t k = 0; k < len; k++)
    lines += text[k] == '\n';
  const char **starts = calloc(lines + 1, sizeof *starts);
  size_t ln = 1;
  starts[1] = text;
  for (size_t k = 0; k + 1 < len; k++)
    if (text[k] == '\n')
      starts[++ln] = text + k + 1;
  size_t bad = 0;
  for (size_t i = 0; i < tw_cat_snap_count(s); i++) {
    struct tw_cat_view v;
    tw_cat_snap_view(s, i, &v);
    if (v.source_row < (header ? 2u : 1u) || v.source_row > ln) {
      bad++;
      continue;
    }
    struct tw_csv_reader r;
    struct tw_csv_record rec;
    const char *p = starts[v.source_row];
    tw_csv_reader_init(&r, p, (size_t)(text + len - p));
    int col = v.market == TW_MARKET_SPOT ? spot_col : price_col;
    int64_t micro = -1, acc = 0;
    /* a machine with accelerators priced in a row of their own: the sum */
    const char *ar = strstr(v.labels, "accelerator_row=");
    if (ar) {
      size_t al = strtoul(ar + 16, NULL, 10);
      struct tw_csv_reader r2;
      struct tw_csv_record rec2;
      acc = -1;
      if (al >= 2 && al <= ln) {
        tw_csv_reader_init(&r2, starts[al], (size_t)(text + len - starts[al]));
        if (!tw_csv_read(&r2, &rec2) || (size_t)col >= rec2.n ||
            rec2.len[0] != 0 ||
            !tw_norm_decimal_micro(rec2.f[col], rec2.len[col], &acc, NULL))
          acc = -1;
        tw_csv_reader_release(&r2);
      }
    }
    if (acc < 0 || !tw_csv_read(&r, &rec) || (size_t)col >= rec.n ||
        !tw_norm_decimal_micro(rec.f[col], rec.len[col], &micro, NULL) ||
        micro + acc != v.source_price_micro ||
        micro + acc != v.price_uusd_per_hour)
      bad++;
    tw_csv_reader_release(&r);
  }
  TW_CHECK(bad == 0, "%s: %zu offers do not reproduce their row's price", what,
           bad);
  free(starts);
}

static void check_report(const struct tw_cat_snap *s, const char *what,
                         uint64_t rows, uint64_t normalized, uint64_t offers) {
  const struct tw_cat_report *r = &tw_cat_snap_source(s, 0)->report;
  char w[128];
  snprintf(w, sizeof w, "%s rows", what);
  CHECK_EQ(r->rows, rows, w);
  snprintf(w, sizeof w, "%s normalized", what);
  CHECK_EQ(r->normalized, normalized, w);
  snprintf(w, sizeof w, "%s offers", what);
  CHECK_EQ(tw_cat_snap_count(s), offers, w);
}

static char dir[1024]; /* the catalogs of the shared data */

static void real_catalogs(void **state) {
  struct tw_err err = {0};
  TW_CHECK(tw_regions_builtin(&regions, &err) == TW_OK, "regions: %s", err.msg);
  char *text;
  size_t len;

  /* Azure (anycloud, SkyPilot's Azure schema): regional, 27,141 rows with
   * the unquoted "V1,V2" Generation, 2,846 without a spot price, partial
   * A10s, NP sizes whose FPGAs are unnamed. */
  struct tw_cat_snap *az = load(dir, "anycloud/azure/vms.csv", "azure", NULL,
                                NULL, NULL, &text, &len);
  if (az) {
    const struct tw_cat_report *r = &tw_cat_snap_source(az, 0)->report;
    check_report(az, "azure", 56671, 56671, 110496);
    CHECK_EQ(tw_cat_report_rejected(r), 0, "azure rejected");
    CHECK_EQ(r->notes[TW_CAT_NOTE_EXTRA_FIELDS], 27141, "azure extra fields");
    CHECK_EQ(r->notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 2846, "azure no spot");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ACCEL_FRACTION], 108, "azure fractions");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ACCEL_FROM_TYPE], 21, "azure NP FPGAs");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ACCEL_UNKNOWN], 0, "azure unknown accel");
    CHECK_EQ(r->notes[TW_CAT_NOTE_REGION_UNKNOWN], 0, "azure unknown regions");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ARCH_GUESSED], 56671, "azure arch");
    round_trip(az, text, len, true, 6, 7, "azure");
    /* price sanity: 7 on-demand offers under a quarter of their shape's
     * on-demand median, and their 7 spot offers (the same independent
     * script), most of them newzealandnorth's Fams_v6 sizes: F8ams_v6 at
     * $0.0898/h against a median of $0.865/h */
    size_t held = 0;
    for (size_t i = 0; i < tw_cat_snap_count(az); i++) {
      struct tw_cat_view v;
      tw_cat_snap_view(az, i, &v);
      held += v.quarantine_peers > 0;
    }
    CHECK_EQ(held, 14, "azure offers held by the price sanity rule");
    size_t fi;
    struct tw_cat_view fv;
    TW_CHECK(tw_cat_snap_find(
                 az, "azure:newzealandnorth::Standard_F8ams_v6:on-demand", &fi),
             "newzealandnorth F8ams_v6 is missing");
    tw_cat_snap_view(az, fi, &fv);
    TW_CHECK(fv.quarantine_peers > 0 && fv.quarantine_median_uusd == 865000,
             "F8ams_v6 newzealandnorth: peers %u median %lld",
             fv.quarantine_peers, (long long)fv.quarantine_median_uusd);
    /* GPU names across the file are canonical */
    struct tw_cat_query q = {.accel = "A100-80GB",
                             .accel_count = 8,
                             .market = TW_MARKET_SPOT,
                             .limit = 1000};
    struct tw_cat_page p;
    if (tw_cat_snap_query(az, &q, &p, &err) == TW_OK) {
      TW_CHECK(p.n > 0 && p.n < 100, "azure A100-80GB:8 spot: %zu offers", p.n);
      tw_cat_page_release(&p);
    }
  }
  free(text);

  /* GCP (anycloud): zonal; 2,395 accelerator-only rows have no machine
   * type: 705 of them price the GPUs of a2/a3/a4/g2 machines (added to the
   * machine's row) or GPUs attached to N1 machines within Compute
   * Engine's limits ("n1-highmem-8+V100x1"), the other 1,690 (TPUs, GPUs
   * of zones without a host) stay no_instance_type; 2 GPU machine rows
   * have no GPU price in their zone; 11 rows price nothing (0.0 and 0.0).
   * 57,750 machine offers + 10,122 N1 offers with attached GPUs = 67,872
   * (worked out with the same independent script). */
  struct tw_cat_snap *gcp =
      load(dir, "anycloud/gcp/vms.csv", "gcp", NULL, NULL, NULL, &text, &len);
  if (gcp) {
    const struct tw_cat_report *r = &tw_cat_snap_source(gcp, 0)->report;
    check_report(gcp, "gcp", 31285, 29582, 67872);
    CHECK_EQ(r->rejected[TW_CAT_REJ_NO_TYPE], 1690, "gcp no type");
    CHECK_EQ(r->rejected[TW_CAT_REJ_NO_ACCEL_PRICE], 2, "gcp no gpu price");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ACCEL_ATTACHED], 705, "gcp gpu rows used");
    CHECK_EQ(r->rejected[TW_CAT_REJ_NO_PRICE], 11, "gcp no price");
    CHECK_EQ(tw_cat_report_rejected(r), 1703, "gcp rejected");
    /* whole prices, as the bill (and SkyPilot) adds them */
    static const struct {
      const char *id, *accel;
      int count;
      int64_t uusd;
    } WHOLE[] = {
        {"gcp:europe-west4:europe-west4-a:a2-highgpu-8g:on-demand",
         "A100-40GB", 8, 6512510 + 12909190},
        {"gcp:us-central1:us-central1-a:a3-highgpu-8g:on-demand", "H100-80GB",
         8, 9460060 + 33606090},
        {"gcp:us-central1:us-central1-a:g2-standard-8:on-demand", "L4", 1,
         293580 + 560040},
        {"gcp:us-central1:us-central1-a:n1-highmem-8+V100x1:on-demand",
         "V100-16GB", 1, 473210 + 2480000},
        {"gcp:us-central1:us-central1-a:n1-highmem-8:on-demand", "", 0,
         473210},
    };
    for (size_t k = 0; k < sizeof WHOLE / sizeof WHOLE[0]; k++) {
      size_t i;
      struct tw_cat_view v;
      if (!tw_cat_snap_find(gcp, WHOLE[k].id, &i)) {
        TW_FAIL("FAIL: %s is missing", WHOLE[k].id);
        continue;
      }
      tw_cat_snap_view(gcp, i, &v);
      TW_CHECK(v.price_uusd_per_hour == WHOLE[k].uusd &&
                   v.accel_milli == WHOLE[k].count * 1000 &&
                   !strcmp(v.accel, WHOLE[k].accel),
               "%s: %lld uUSD/h, %s x %d", WHOLE[k].id,
               (long long)v.price_uusd_per_hour, v.accel, v.accel_milli);
    }
    /* no GPU machine is offered without its GPUs */
    size_t bare_gpu = 0;
    for (size_t i = 0; i < tw_cat_snap_count(gcp); i++) {
      struct tw_cat_view v;
      tw_cat_snap_view(gcp, i, &v);
      if (!v.accel_milli && (!strncmp(v.instance_type, "a2-", 3) ||
                             !strncmp(v.instance_type, "a3-", 3) ||
                             !strncmp(v.instance_type, "g2-", 3)))
        bare_gpu++;
    }
    CHECK_EQ(bare_gpu, 0, "gcp GPU machines offered without their GPUs");
    CHECK_EQ(r->rejected[TW_CAT_REJ_ZONE_MISMATCH], 0, "gcp zone mismatch");
    CHECK_EQ(r->notes[TW_CAT_NOTE_REGION_UNKNOWN], 0, "gcp unknown regions");
    round_trip(gcp, text, len, true, 8, 9, "gcp");
  }
  free(text);

  /* AWS (SkyPilot v8 excerpt): zone ids, one Local Zone, 4 rows without a
   * spot price (the README says 5; the file has 4). */
  struct tw_cat_snap *aws =
      load(dir, "skypilot/aws_vms_v8_excerpt_p5.48xlarge.csv", "aws", NULL,
           NULL, NULL, &text, &len);
  if (aws) {
    const struct tw_cat_report *r = &tw_cat_snap_source(aws, 0)->report;
    check_report(aws, "aws excerpt", 33, 33, 62);
    CHECK_EQ(r->notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 4, "aws no spot");
    CHECK_EQ(r->notes[TW_CAT_NOTE_ZONE_NAME_UNKNOWN], 33, "aws zone ids");
    CHECK_EQ(r->notes[TW_CAT_NOTE_REGION_UNKNOWN], 0, "aws unknown regions");
    round_trip(aws, text, len, true, 6, 7, "aws excerpt");
    size_t i;
    struct tw_cat_view v;
    TW_CHECK(tw_cat_snap_find(
                 aws, "aws:us-east-1:use1-atl2-az1:p5.48xlarge:on-demand", &i),
             "the Local Zone offer is missing");
    tw_cat_snap_view(aws, i, &v);
    TW_CHECK(v.local_zone, "use1-atl2-az1 is a local zone");
    TW_CHECK(!strcmp(v.accel, "H100-80GB") && v.accel_milli == 8000,
             "p5.48xlarge: %s x %d", v.accel, v.accel_milli);
  }
  free(text);

  /* AWS (SkyPilot v8 subset): header-less rows per type joined with the
   * specs table; p5e.48xlarge has no on-demand price anywhere. */
  char sp_path[2048];
  snprintf(sp_path, sizeof sp_path, "%s/skypilot/aws_v8_subset/specs.csv", dir);
  size_t sp_len;
  char *sp_text = tw_test_slurp(sp_path, &sp_len);
  struct tw_csv_specs *specs = NULL;
  if (sp_text && tw_csv_specs_load(sp_text, sp_len, &specs, &err) == TW_OK) {
    char sub[2048];
    snprintf(sub, sizeof sub, "%s/skypilot/aws_v8_subset", dir);
    DIR *d = opendir(sub);
    struct dirent *e;
    struct tw_cat_report tot;
    memset(&tot, 0, sizeof tot);
    size_t offers = 0, files = 0;
    while (d && (e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (l < 6 || strcmp(e->d_name + l - 5, ".rows"))
        continue;
      char rel[512], type[256];
      snprintf(rel, sizeof rel, "skypilot/aws_v8_subset/%s", e->d_name);
      snprintf(type, sizeof type, "%.*s", (int)(l - 5), e->d_name);
      struct tw_cat_snap *s =
          load(dir, rel, "aws", "Price,SpotPrice,Region,AvailabilityZone", type,
               specs, &text, &len);
      if (s) {
        tw_cat_report_add(&tot, &tw_cat_snap_source(s, 0)->report);
        offers += tw_cat_snap_count(s);
        round_trip(s, text, len, false, 0, 1, rel);
        tw_cat_snap_release(s);
      }
      free(text);
      files++;
    }
    if (d)
      closedir(d);
    CHECK_EQ(files, 13, "aws subset files");
    CHECK_EQ(tot.rows, 374, "aws subset rows");
    CHECK_EQ(tot.normalized, 370, "aws subset normalized");
    CHECK_EQ(tot.rejected[TW_CAT_REJ_NO_PRICE], 4, "aws subset no price");
    CHECK_EQ(tot.notes[TW_CAT_NOTE_SPOT_NOT_OFFERED], 30, "aws subset no spot");
    CHECK_EQ(tot.notes[TW_CAT_NOTE_OD_NOT_OFFERED], 4,
             "aws subset no on-demand");
    CHECK_EQ(offers, 706, "aws subset offers");
  } else {
    TW_FAIL("FAIL: specs %s: %s", sp_path, err.msg);
  }
  tw_csv_specs_free(specs);
  free(sp_text);

  /* AWS Spot Advisor: interruption bands for the p5.48xlarge spot offers
   * (28 of the 29 regions' types are in the feed). */
  char ra_path[2048];
  snprintf(ra_path, sizeof ra_path,
           "%s/../spot/aws-spot-advisor/spot-advisor-data.json", dir);
  char *ra = tw_test_slurp(ra_path, &len);
  struct tw_cat_risk *risk = NULL;
  if (ra && tw_cat_risk_load(ra, len, &risk, &err) == TW_OK && aws) {
    CHECK_EQ(tw_cat_risk_count(risk), 14962, "spot advisor entries");
    TW_CHECK(tw_cat_risk_find(risk, "us-east-1", "p5.48xlarge") == TW_RISK_GT20,
             "us-east-1 p5.48xlarge band");
    struct tw_cat_snap *srcs[] = {aws, az, gcp};
    struct tw_cat_snap *m = NULL;
    tw_cat_snap_merge(srcs, 3, risk, tw_adapters, 1, 0, &m);
    size_t banded = 0, spot = 0;
    for (size_t i = 0; i < tw_cat_snap_count(m); i++) {
      struct tw_cat_view v;
      tw_cat_snap_view(m, i, &v);
      if (strcmp(v.provider, "aws") || v.market != TW_MARKET_SPOT)
        continue;
      spot++;
      banded += v.risk != TW_RISK_UNKNOWN;
    }
    CHECK_EQ(spot, 29, "aws spot offers");
    CHECK_EQ(banded, 28, "aws spot offers with a band");
    CHECK_EQ(tw_cat_snap_count(m), 62 + 110496 + 67872, "merged offers");
    printf("merged snapshot: %zu offers, %zu bytes (%.1f bytes/offer)\n",
           tw_cat_snap_count(m), tw_cat_snap_bytes(m),
           (double)tw_cat_snap_bytes(m) / (double)tw_cat_snap_count(m));
    TW_CHECK(tw_cat_snap_bytes(m) / tw_cat_snap_count(m) <= 200,
             "memory per offer over 200 bytes");
    tw_cat_snap_release(m);
  } else if (!ra) {
    printf("note: no Spot Advisor data at %s\n", ra_path);
  } else {
    TW_FAIL("FAIL: spot advisor: %s", err.msg);
  }
  tw_cat_risk_free(risk);
  free(ra);
  tw_cat_snap_release(az);
  tw_cat_snap_release(gcp);
  tw_cat_snap_release(aws);
  tw_regions_free(regions);
}

int main(void) {
  char data[1000];
  tw_testdata_dir(data, sizeof data);
  snprintf(dir, sizeof dir, "%s/catalogs", data);
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    printf("SKIPPED: no catalog data at %s\n", dir);
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(real_catalogs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
