/* The HTML spend report in a real browser: the API serves the page and the
 * CSV of the same report; headless Chromium (Debian's chromium package)
 * renders the page, and the DOM it dumps must show the three charts drawn
 * (the page's own script counts shapes with a non-empty box after layout)
 * and totals equal to the CSV's, to the micro-dollar.  The catalog prices
 * Alibaba in CNY: its groups carry the CNY amount at the catalog's rate in
 * the CSV, and the page shows it beside the USD figure.  A screenshot is
 * taken too; with TW_REPORT_SCREENSHOT=FILE it is kept there (the one in
 * docs/ comes from this test).
 *
 * SKIPPED when chromium is absent (scripts/deps.sh installs it). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "billing/catalog/catalog.h"
#include "billing/ledger/ledger.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"
#include "tests/twtest.h"

#define NOV1 1761955200000LL /* 2025-11-01T00:00:00Z */
#define HOUR 3600000LL

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

static long get(int port, const char *path, struct tw_buf *out) {
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

static const char *find_chromium(void) {
  static char found[512];
  const char *env = getenv("TW_CHROMIUM");
  if (env && *env)
    return access(env, X_OK) == 0 ? env : NULL;
  const char *names[] = {"chromium", "chromium-browser", "google-chrome"};
  const char *path = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
  for (size_t i = 0; i < 3; i++) {
    char *copy = tw_strdup(path), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d;
         d = strtok_r(NULL, ":", &save)) {
      snprintf(found, sizeof found, "%s/%s", d, names[i]);
      if (access(found, X_OK) == 0) {
        free(copy);
        return found;
      }
    }
    free(copy);
  }
  return NULL;
}

/* "123.456789" -> 123456789 */
static int64_t uusd(const char *s) {
  bool neg = *s == '-';
  s += neg;
  int64_t whole = strtoll(s, NULL, 10);
  const char *dot = strchr(s, '.');
  int64_t frac = dot ? strtoll(dot + 1, NULL, 10) : 0;
  return (neg ? -1 : 1) * (whole * 1000000 + frac);
}

/* The integer in attr="N" after `after` in text, or -1. */
static int64_t attr_after(const char *text, const char *after,
                          const char *attr) {
  const char *p = strstr(text, after);
  if (!p)
    return -1;
  p = strstr(p, attr);
  return p ? strtoll(p + strlen(attr), NULL, 10) : -1;
}

static char *slurp(const char *path) {
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
  return tw_buf_detach(&b);
}

static void seed(struct tw_store *s) {
  static const char *tenants[] = {"ml-research", "web", "etl", "analytics"};
  static const char *providers[] = {"aws", "azure", "alibaba", "slurm"};
  static const char *regions[] = {"us-east-1", "westeurope", "cn-hangzhou",
                                  "lab"};
  struct tw_ledger_row rows[19 * 16];
  size_t n = 0;
  uint64_t x = 0x2545f4914f6cdd1dULL;
  for (int d = 0; d < 19; d++)
    for (int k = 0; k < 16; k++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      struct tw_ledger_row *r = &rows[n++];
      memset(r, 0, sizeof *r);
      int t = k % 4, p = (k / 4) % 4;
      snprintf(r->tenant, sizeof r->tenant, "%s", tenants[t]);
      snprintf(r->project, sizeof r->project, "%s", k % 2 ? "train" : "serve");
      snprintf(r->provider, sizeof r->provider, "%s", providers[p]);
      snprintf(r->account, sizeof r->account, "%s-main", providers[p]);
      snprintf(r->region, sizeof r->region, "%s", regions[p]);
      snprintf(r->job_id, sizeof r->job_id, "j-%02d", k);
      snprintf(r->market, sizeof r->market, "%s", k % 3 ? "spot" : "on-demand");
      r->start_ms = NOV1 + d * TW_DAY_MS + k * HOUR;
      r->end_ms = r->start_ms + HOUR;
      r->usage_ms = HOUR;
      r->nodes = 1;
      r->quantity = 3600;
      /* ml-research grows through the month: the burn-down bends */
      int64_t base = (int64_t)(x % 9000000) + 500000;
      r->list_uusd = t == 0 ? base * (d + 4) / 6 : base;
      r->effective_uusd = r->list_uusd - r->list_uusd / 10;
      r->unit_price_uusd = r->list_uusd;
    }
  struct tw_err err = {0};
  if (tw_ledger_append(s, rows, n, NOV1, &err))
    fprintf(stderr, "seed: %s\n", err.msg), exit(1);
  struct tw_ledger_budget b[2] = {
      {.tenant = "", .limit_uusd = 3200000000LL},
      {.tenant = "ml-research", .limit_uusd = 1200000000LL}};
  if (tw_ledger_budgets_set(s, b, 2, &err))
    fprintf(stderr, "budgets: %s\n", err.msg), exit(1);
}

static const char *chromium;
static char dir[64], page[160], dom[160], png[160], profile[160], log_[160];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_api *api;
static struct tw_catalog *catalog;
static int64_t cny_rows;
static int port;
static struct tw_buf html, csv;
static int64_t csv_total;

static const char FLAGS[] =
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update "
    "--disable-sync --hide-scrollbars";

/* The API serves the page and the CSV of the same report; the CSV's
 * effective total, summed here, is what the page must show. */
static void html_and_csv_served(void **state) {
  const char *q =
      "/v1/reports/"
      "spend?from=2025-11-01&to=2025-12-01&group_by=tenant,provider";
  char path[256];
  snprintf(path, sizeof path, "%s&format=html", q);
  TW_CHECK(get(port, path, &html) == 200);
  snprintf(path, sizeof path, "%s&format=csv", q);
  TW_CHECK(get(port, path, &csv) == 200);

  int col = -1, cur = -1, amt = -1, rate = -1;
  char *save = NULL;
  for (char *line = strtok_r(csv.data, "\r\n", &save); line;
       line = strtok_r(NULL, "\r\n", &save)) {
    char *fields[16], *rest = line, *f;
    int nf = 0;
    /* no field here is quoted; empty ones count */
    while (nf < 16 && (f = strsep(&rest, ",")))
      fields[nf++] = f;
    if (col < 0) {
      for (int i = 0; i < nf; i++) {
        if (!strcmp(fields[i], "effective_cost_usd"))
          col = i;
        else if (!strcmp(fields[i], "source_currency"))
          cur = i;
        else if (!strcmp(fields[i], "source_amount"))
          amt = i;
        else if (!strcmp(fields[i], "rate"))
          rate = i;
      }
      TW_CHECK(cur > col && amt > cur && rate > amt);
      continue;
    }
    if (col < nf)
      csv_total += uusd(fields[col]);
    if (rate < nf && !strcmp(fields[1], "alibaba")) {
      /* the effective cost over 0.1393 USD/CNY, half up (positive here) */
      int64_t e = uusd(fields[col]);
      int64_t want = (e * 1000000000 + 139300000 / 2) / 139300000;
      TW_CHECK(!strcmp(fields[cur], "CNY"));
      TW_CHECK(uusd(fields[amt]) == want);
      TW_CHECK(!strcmp(fields[rate], "0.1393"));
      cny_rows++;
    } else if (cur < nf) {
      TW_CHECK(!strcmp(fields[cur], "") && !strcmp(fields[amt], ""));
    }
  }
  TW_CHECK(col >= 0);
  TW_CHECK(csv_total > 0);
  TW_CHECK(cny_rows == 4); /* four tenants ran on Alibaba */
}

/* Chromium renders the page: the page's script ran after layout and
 * counted drawn shapes, and the totals shown equal the CSV's. */
static void chromium_draws_the_charts_and_the_csv_totals(void **state) {
  FILE *f = fopen(page, "wb");
  fwrite(html.data, 1, html.len, f);
  fclose(f);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "timeout 90 '%s' %s --user-data-dir='%s' --virtual-time-budget=3000 "
           "--dump-dom 'file://%s' > '%s' 2>> '%s'",
           chromium, FLAGS, profile, page, dom, log_);
  int rc = system(cmd);
  TW_CHECK(rc == 0);
  char *d = slurp(dom);
  TW_CHECK(d != NULL);
  TW_CHECK(attr_after(d, "<body", "data-charts-drawn=\"") == 3);
  TW_CHECK(attr_after(d, "id=\"chart-time\"", "data-drawn=\"") > 0);
  TW_CHECK(attr_after(d, "id=\"chart-tenants\"", "data-drawn=\"") >= 4);
  TW_CHECK(attr_after(d, "id=\"chart-burndown\"", "data-drawn=\"") >= 2);
  TW_CHECK(attr_after(d, "id=\"total-effective\"", "data-uusd=\"") ==
           csv_total);
  const char *tfoot = strstr(d, "id=\"total-row\"");
  TW_CHECK(tfoot != NULL);
  /* list, then effective */
  const char *eff = strstr(strstr(tfoot, "data-uusd=\"") + 1, "data-uusd=\"");
  TW_CHECK(eff && strtoll(eff + 11, NULL, 10) == csv_total);
  /* and the rows of the table add up to it */
  int64_t rows_total = 0;
  const char *detail = strstr(d, "id=\"detail\"");
  const char *body = detail ? strstr(detail, "<tbody>") : NULL;
  const char *end = body ? strstr(body, "</tbody>") : NULL;
  for (const char *tr = body;
       tr && end && (tr = strstr(tr, "<tr>")) && tr < end; tr++) {
    const char *c1 = strstr(tr, "data-uusd=\"");
    const char *c2 = c1 ? strstr(c1 + 1, "data-uusd=\"") : NULL;
    if (c2 && c2 < end)
      rows_total += strtoll(c2 + 11, NULL, 10);
  }
  TW_CHECK(rows_total == csv_total);
  /* Alibaba's rows show CNY and the rate beside the USD figure */
  int64_t fx = 0;
  for (const char *p = body;
       p && end && (p = strstr(p, "class=\"fx\"")) && p < end; p++)
    fx++;
  TW_CHECK(fx == cny_rows);
  TW_CHECK(strstr(d, " at 0.1393 USD/CNY (2025-06-30") != NULL);
  printf("charts drawn: time=%lld tenants=%lld burndown=%lld; total %lld "
         "uusd = CSV\n",
         (long long)attr_after(d, "id=\"chart-time\"", "data-drawn=\""),
         (long long)attr_after(d, "id=\"chart-tenants\"", "data-drawn=\""),
         (long long)attr_after(d, "id=\"chart-burndown\"", "data-drawn=\""),
         (long long)csv_total);
  free(d);
}

/* A screenshot: the page really paints (a PNG of some size). */
static void the_page_paints(void **state) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "timeout 90 '%s' %s --user-data-dir='%s' --window-size=1000,2000 "
           "--screenshot='%s' 'file://%s' >> '%s' 2>&1",
           chromium, FLAGS, profile, png, page, log_);
  TW_CHECK(system(cmd) == 0);
  struct stat st;
  TW_CHECK(stat(png, &st) == 0 && st.st_size > 20000);
  const char *keep = getenv("TW_REPORT_SCREENSHOT");
  if (keep && *keep) {
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s.html'", png, keep,
             page, keep);
    TW_CHECK(system(cmd) == 0);
  }
}

/* A store seeded with November's ledger, the API over it on a clock at
 * November 20. */
static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-report-html-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(page, sizeof page, "%s/spend.html", dir);
  snprintf(dom, sizeof dom, "%s/dom.html", dir);
  snprintf(png, sizeof png, "%s/spend.png", dir);
  snprintf(profile, sizeof profile, "%s/profile", dir);
  snprintf(log_, sizeof log_, "%s/chromium.log", dir);
  char db[128];
  snprintf(db, sizeof db, "%s/t.db", dir);
  tw_clock_fake_init(&clk, NOV1 + 19 * TW_DAY_MS + 10 * HOUR); /* Nov 20 */
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = db, .clock = &clk, .sync_full = false};
  if (tw_store_open(&so, &store, &err)) {
    fprintf(stderr, "store: %s\n", err.msg);
    return -1;
  }
  seed(store);
  /* a price file for Alibaba in CNY: the catalog's rate table converts it
   * (the compiled-in one: 0.1393 USD/CNY, 2025-06-30) */
  char ali[160];
  snprintf(ali, sizeof ali, "%s/ali.csv", dir);
  FILE *fp = fopen(ali, "w");
  if (!fp)
    return -1;
  fputs("InstanceType,vCPUs,MemoryGiB,Price,Region\n"
        "ecs.g7.large,2,8,0.693,cn-hangzhou\n",
        fp);
  fclose(fp);
  struct tw_catalog_file files[] = {
      {.name = "ali", .path = ali, .provider = "alibaba", .currency = "CNY"}};
  struct tw_catalog_opts co = {.clock = &clk, .files = files, .n_files = 1};
  if (tw_catalog_new(&co, &catalog, &err)) {
    fprintf(stderr, "catalog: %s\n", err.msg);
    return -1;
  }
  tw_catalog_refresh_due(catalog, tw_clock_now_ms(&clk));
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct tw_api_opts ao = {.listen = "127.0.0.1:0",
                           .store = store,
                           .catalog = catalog,
                           .clock = &clk,
                           .max_body_bytes = 1 << 20,
                           .max_connections = 16,
                           .timeout_s = 30,
                           .auth = {.open = true}};
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "api: %s\n", err.msg);
    return -1;
  }
  port = tw_api_port(api);
  tw_buf_init(&html);
  tw_buf_init(&csv);
  return 0;
}

static int teardown(void **state) {
  if (api)
    tw_api_drain(api);
  tw_api_stop(api);
  tw_catalog_free(catalog);
  tw_store_close(store);
  tw_buf_release(&html);
  tw_buf_release(&csv);
  curl_global_cleanup();
  if (!tw_failures()) {
    /* chromium's helpers may still be closing the profile: try again */
    char cmd[512];
    snprintf(
        cmd, sizeof cmd,
        "rm -rf '%s' 2>/dev/null || rm -rf '%s' 2>/dev/null || rm -rf '%s'",
        dir, dir, dir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", dir);
  } else {
    fprintf(stderr, "kept %s (chromium.log, dom.html)\n", dir);
  }
  return 0;
}

int main(void) {
  chromium = find_chromium();
  if (!chromium) {
    printf(
        "SKIPPED: chromium is not installed (scripts/deps.sh installs Debian's "
        "chromium package)\n");
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(html_and_csv_served),
      cmocka_unit_test(chromium_draws_the_charts_and_the_csv_totals),
      cmocka_unit_test(the_page_paints),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
