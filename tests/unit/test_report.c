/* Reports: JSON and CSV totals equal the ledger to the micro-dollar for
 * every grouping; the FOCUS export carries every mandatory column with
 * the right types and allowed values (checked here independently of the
 * writer); the forecast extrapolates the recent run rate; budgets are
 * compared; the HTML page is self-contained; ranges parse; every format of
 * the table renders, an unknown one is refused listing the table's names,
 * and the OpenAPI document lists the same names; groups of a provider
 * priced in CNY carry the amount in CNY and the rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/catalog/catalog.h"
#include "billing/catalog/normalize.h"
#include "billing/ledger/ledger.h"
#include "billing/ledger/meter.h"
#include "providers/registry.h"
#include "billing/report/report.h"
#include "broker/core/store.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define NOV1 1761955200000LL /* 2025-11-01T00:00:00Z */
#define DEC1 1764547200000LL /* 2025-12-01T00:00:00Z */
#define HOUR 3600000LL

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-report-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, NOV1);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &store, &err))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static struct tw_ledger_row row(const char *tenant, const char *project,
                                const char *provider, const char *region,
                                const char *job, int64_t start, int64_t len,
                                int64_t list, int64_t eff) {
  struct tw_ledger_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
  snprintf(r.project, sizeof r.project, "%s", project);
  snprintf(r.provider, sizeof r.provider, "%s", provider);
  snprintf(r.account, sizeof r.account, "%s-main", provider);
  snprintf(r.region, sizeof r.region, "%s", region);
  snprintf(r.zone, sizeof r.zone, "%sa", region);
  snprintf(r.instance_type, sizeof r.instance_type, "m5.large");
  snprintf(r.resource_id, sizeof r.resource_id, "i-0123456789abcdef0");
  snprintf(r.job_id, sizeof r.job_id, "%s", job);
  snprintf(r.market, sizeof r.market, "%s", list % 2 ? "spot" : "on-demand");
  snprintf(r.description, sizeof r.description, "m5.large, \"quoted\", in %s",
           region);
  r.start_ms = start;
  r.end_ms = start + len;
  r.usage_ms = len;
  r.nodes = 1;
  r.quantity = len / 1000;
  r.unit_price_uusd = 96000;
  r.list_uusd = list;
  r.effective_uusd = eff;
  return r;
}

static int64_t all_list, all_eff;
static size_t all_rows;

/* A compute row priced as the meter prices it: `len` ms charged in whole
 * seconds at price per hour, the effective cost at bp basis points off
 * (negotiated, or a commitment). */
static struct tw_ledger_row priced(const char *tenant, const char *project,
                                   const char *provider, const char *region,
                                   const char *job, int64_t start, int64_t len,
                                   int64_t price, int64_t bp, bool commitment) {
  struct tw_ledger_row r =
      row(tenant, project, provider, region, job, start, len, 0, 0);
  snprintf(r.account, sizeof r.account, "%s-main", provider);
  snprintf(r.market, sizeof r.market, "on-demand");
  r.quantity = (len + 999) / 1000;
  r.unit_price_uusd = price;
  r.list_uusd = tw_bill_cost(price, r.quantity);
  r.effective_uusd = tw_bill_cost_at(price, r.quantity, bp);
  r.discount_bp = bp;
  r.commitment = commitment;
  return r;
}

/* Three tenants over November on three providers (AWS at a negotiated
 * 12.5 %, Azure under a 20 % savings plan, a Slurm cluster), an egress
 * row, a spot credit, a correction within November and one recorded in
 * December. */
static void seed(void) {
  struct tw_err err = {0};
  static const char *tenants[] = {"ml", "web", "etl, \"quoted\""};
  static const char *providers[] = {"aws", "azure", "slurm"};
  struct tw_ledger_row rows[200];
  size_t n = 0;
  all_list = all_eff = 0;
  for (int d = 0; d < 20; d++)
    for (int k = 0; k < 9; k++) {
      const char *prov = providers[k % 3];
      bool az = k % 3 == 1;
      int64_t bp = k % 3 == 0 ? 1250 : az ? 2000 : 0;
      if (k == 3)
        bp = 0; /* AWS spot: no discount */
      rows[n++] = priced(tenants[k % 3], k % 2 ? "vision" : "nlp", prov,
                         k % 3 == 2 ? "lab" : k % 4 ? "us-east-1" : "eu-west-1",
                         k % 3 ? "j-1" : "j-2", NOV1 + d * TW_DAY_MS + k * HOUR,
                         HOUR - k * 61001, 96000 + 1001 * k + 7 * d, bp, az);
      if (k == 3)
        snprintf(rows[n - 1].market, sizeof rows[n - 1].market, "spot");
    }
  struct tw_ledger_row eg = row("ml", "nlp", "aws", "us-east-1", "j-1",
                                NOV1 + 3 * HOUR, 0, 450000, 405000);
  eg.service = TW_SERVICE_NETWORK;
  eg.quantity = 5000000000LL;
  eg.unit_price_uusd = 90000; /* 5 GB at $0.09, 10 % off */
  eg.discount_bp = 1000;
  eg.instance_type[0] = eg.zone[0] = eg.resource_id[0] = eg.market[0] = '\0';
  rows[n++] = eg;
  /* a reclaimed spot attempt's 1800 s charged ahead, credited */
  struct tw_ledger_row cr =
      priced("ml", "nlp", "aws", "us-east-1", "j-2", NOV1 + 2 * TW_DAY_MS + HOUR,
             0, 96000, 0, false);
  cr.category = TW_CHARGE_ADJUSTMENT;
  cr.correction = true;
  cr.quantity = -1800;
  cr.list_uusd = cr.effective_uusd = tw_bill_cost(96000, -1800);
  rows[n++] = cr;
  assert_int_equal(tw_ledger_append(store, rows, n, NOV1, &err), TW_OK);
  for (size_t i = 0; i < n; i++) {
    all_list += rows[i].list_uusd;
    all_eff += rows[i].effective_uusd;
  }
  all_rows = n;
  struct tw_ledger_row adj;
  assert_int_equal(tw_ledger_adjust(store, rows[5].seq, -123457, -100001,
                                    "rate fixed", NOV1 + 25 * TW_DAY_MS, &adj,
                                    &err),
                   TW_OK);
  assert_int_equal(tw_ledger_adjust(store, rows[7].seq, -5000, -4000,
                                    "refund after the invoice",
                                    DEC1 + 2 * TW_DAY_MS, &adj, &err),
                   TW_OK);
  all_list += -123457 - 5000;
  all_eff += -100001 - 4000;
  all_rows += 2;
  struct tw_ledger_account acc[2] = {
      {.account = "aws-main",
       .account_id = "123456789012",
       .account_name = "Research",
       .account_type = "Linked Account"},
      {.account = "azure-main",
       .account_id = "8611537",
       .account_name = "Contoso EA",
       .commitment_id = "/providers/Microsoft.BillingBenefits/savingsPlans/sp1",
       .commitment_name = "Compute savings plan",
       .commitment_type = "Savings Plan",
       .commitment_category = "Spend"}};
  assert_int_equal(tw_ledger_accounts_set(store, acc, 2, &err), TW_OK);
}

/* The report in the format named fmt, over November. */
static char *render(const char *fmt, unsigned mask, const char *tenant,
                    int64_t now) {
  struct tw_report_req q = {.from_ms = NOV1,
                            .to_ms = DEC1,
                            .group_mask = mask,
                            .tenant = tenant,
                            .now_ms = now,
                            .adapters = tw_adapters};
  struct tw_buf b;
  struct tw_err err = {0};
  const char *ctype;
  assert_int_equal(tw_report_format_parse(fmt, &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_non_null(ctype);
  return tw_buf_detach(&b);
}

/* "12.345678" -> 12345678; fails the test on anything else */
static int64_t usd_to_uusd(const char *s) {
  regex_t re;
  assert_int_equal(regcomp(&re, "^-?[0-9]+\\.[0-9]{6}$", REG_EXTENDED), 0);
  int bad = regexec(&re, s, 0, NULL, 0);
  regfree(&re);
  if (bad)
    fail_msg("not a six-place amount: \"%s\"", s);
  bool neg = s[0] == '-';
  const char *p = s + neg;
  int64_t whole = strtoll(p, NULL, 10);
  int64_t frac = strtoll(strchr(p, '.') + 1, NULL, 10);
  int64_t v = whole * 1000000 + frac;
  return neg ? -v : v;
}

/* RFC 4180: splits one record of text at *pos into fields (owned). */
static size_t csv_record(const char *text, size_t *pos, char **fields,
                         size_t max) {
  size_t n = 0, i = *pos;
  if (!text[i])
    return 0;
  for (;;) {
    char buf[4096];
    size_t k = 0;
    if (text[i] == '"') {
      i++;
      for (;;) {
        if (text[i] == '"' && text[i + 1] == '"') {
          buf[k++] = '"';
          i += 2;
        } else if (text[i] == '"') {
          i++;
          break;
        } else {
          assert_true(text[i] != '\0');
          buf[k++] = text[i++];
        }
      }
    } else {
      while (text[i] && text[i] != ',' && text[i] != '\r' && text[i] != '\n')
        buf[k++] = text[i++];
    }
    buf[k] = '\0';
    assert_true(n < max);
    fields[n++] = strdup(buf);
    if (text[i] == ',') {
      i++;
      continue;
    }
    assert_true(text[i] == '\r' && text[i + 1] == '\n'); /* CRLF */
    i += 2;
    break;
  }
  *pos = i;
  return n;
}

static void free_fields(char **f, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(f[i]);
}

static void json_and_csv_totals_equal_the_ledger(void **state) {
  (void)state;
  seed();
  static const unsigned masks[] = {
      TW_GROUP_TENANT | TW_GROUP_PROVIDER | TW_GROUP_DAY,
      TW_GROUP_TENANT | TW_GROUP_PROJECT | TW_GROUP_PROVIDER | TW_GROUP_REGION |
          TW_GROUP_DAY,
      TW_GROUP_REGION, TW_GROUP_PROJECT | TW_GROUP_DAY};
  for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
    char *text = render("json", masks[m], NULL, DEC1);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    json_t *items = json_object_get(j, "items");
    int64_t list = 0, eff = 0, rows = 0;
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *it = json_array_get(items, i);
      list += json_integer_value(json_object_get(it, "list_cost_uusd"));
      eff += json_integer_value(json_object_get(it, "effective_cost_uusd"));
      rows += json_integer_value(json_object_get(it, "rows"));
    }
    assert_int_equal(list, all_list);
    assert_int_equal(eff, all_eff);
    assert_int_equal(rows, (int64_t)all_rows);
    json_t *total = json_object_get(j, "total");
    assert_int_equal(
        json_integer_value(json_object_get(total, "effective_cost_uusd")),
        all_eff);
    assert_int_equal(
        json_integer_value(json_object_get(total, "list_cost_uusd")), all_list);
    /* the split by market adds up to the total, spot among them */
    json_t *bm = json_object_get(total, "by_market");
    int64_t by_market = 0;
    bool spot = false;
    for (size_t i = 0; i < json_array_size(bm); i++) {
      json_t *x = json_array_get(bm, i);
      by_market += json_integer_value(json_object_get(x, "effective_cost_uusd"));
      spot |= !strcmp(json_string_value(json_object_get(x, "market")), "spot");
    }
    assert_int_equal(by_market, all_eff);
    assert_true(spot);
    json_decref(j);
    free(text);

    text = render("csv", masks[m], NULL, DEC1);
    size_t pos = 0, nf;
    char *f[16];
    nf = csv_record(text, &pos, f, 16);
    int ci_list = -1, ci_eff = -1;
    for (size_t i = 0; i < nf; i++) {
      if (!strcmp(f[i], "list_cost_usd"))
        ci_list = (int)i;
      if (!strcmp(f[i], "effective_cost_usd"))
        ci_eff = (int)i;
    }
    assert_true(ci_list >= 0 && ci_eff >= 0);
    size_t ncols = nf;
    free_fields(f, nf);
    list = eff = 0;
    while ((nf = csv_record(text, &pos, f, 16))) {
      assert_int_equal(nf, ncols);
      list += usd_to_uusd(f[ci_list]);
      eff += usd_to_uusd(f[ci_eff]);
      free_fields(f, nf);
    }
    assert_int_equal(list, all_list);
    assert_int_equal(eff, all_eff);
    free(text);
  }
  /* one tenant: only its rows */
  char *text = render("json", TW_GROUP_TENANT, "web", DEC1);
  json_t *j = json_loads(text, 0, NULL);
  json_t *items = json_object_get(j, "items");
  assert_int_equal(json_array_size(items), 1);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(items, 0), "tenant")),
      "web");
  int64_t spent;
  struct tw_err err = {0};
  assert_int_equal(
      tw_ledger_spent(store, "web", NULL, NOV1, DEC1, &spent, &err), TW_OK);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "total"), "effective_cost_uusd")),
                   spent);
  json_decref(j);
  free(text);
}

/* A running attempt's progress as the meter stores it: running since
 * `from`, metered to `to`, at price per hour, discount_bp off. */
static void open_attempt(int64_t id, const char *tenant, int64_t running,
                         int64_t metered_to, int64_t price, int64_t bp) {
  struct tw_store_meter_progress p;
  memset(&p, 0, sizeof p);
  p.attempt_id = id;
  snprintf(p.job_id, sizeof p.job_id, "j-run-%lld", (long long)id);
  snprintf(p.tenant, sizeof p.tenant, "%s", tenant);
  snprintf(p.project, sizeof p.project, "default");
  snprintf(p.provider, sizeof p.provider, "aws");
  snprintf(p.account, sizeof p.account, "aws-main");
  snprintf(p.region, sizeof p.region, "us-east-1");
  snprintf(p.market, sizeof p.market, "on-demand");
  p.nodes = 1;
  p.granularity_s = 1;
  p.min_charge_s = 60;
  p.price_uusd_per_hour = price;
  p.running_ms = running;
  p.metered_to_ms = metered_to;
  p.discount_bp = bp;
  struct tw_store_meter_work w = {.rows = NULL, .n_rows = 0, .progress = &p};
  struct tw_err err = {0};
  assert_int_equal(tw_store_meter_commit(store, &w, 1, running, &err), TW_OK);
}

/* The report counts what running attempts have accrued up to now,
 * marked as accrued, in its groups, total and budget table.  An attempt
 * at $3.60/h 10 % off, running since Nov 20 10:00, at 10:45: 2700 s x
 * 900 uusd = 2,430,000 effective, 2,700,000 list. */
static void reports_include_accrued_cost(void **state) {
  (void)state;
  seed();
  struct tw_err err = {0};
  struct tw_ledger_budget bud = {.tenant = "web", .limit_uusd = 900000000};
  assert_int_equal(tw_ledger_budgets_set(store, &bud, 1, &err), TW_OK);
  int64_t t = NOV1 + 19 * TW_DAY_MS + 10 * HOUR;
  open_attempt(901, "web", t, t, 3600000, 1000);
  int64_t now = t + 45 * 60000;
  char *text = render("json", TW_GROUP_TENANT, NULL, now);
  json_t *j = json_loads(text, 0, NULL);
  assert_non_null(j);
  json_t *total = json_object_get(j, "total");
  assert_int_equal(
      json_integer_value(json_object_get(total, "accrued_effective_cost_uusd")),
      2430000);
  assert_int_equal(
      json_integer_value(json_object_get(total, "accrued_list_cost_uusd")),
      2700000);
  assert_int_equal(
      json_integer_value(json_object_get(total, "effective_cost_uusd")),
      all_eff + 2430000);
  json_t *b0 = json_array_get(
      json_object_get(json_object_get(j, "budgets"), "items"), 0);
  assert_int_equal(json_integer_value(json_object_get(b0, "accrued_uusd")),
                   2430000);
  int64_t spent;
  assert_int_equal(tw_ledger_spent_now(store, "web", NULL, NOV1, DEC1, now,
                                       &spent, NULL, &err),
                   TW_OK);
  assert_int_equal(json_integer_value(json_object_get(b0, "spent_uusd")),
                   spent);
  json_decref(j);
  free(text);
}

static bool in_set(const char *v, const char *const *set) {
  for (size_t i = 0; set[i]; i++)
    if (!strcmp(v, set[i]))
      return true;
  return false;
}

static size_t col_of(char **hdr, size_t nh, const char *name) {
  size_t c;
  for (c = 0; c < nh && strcmp(hdr[c], name); c++)
    ;
  if (c == nh)
    fail_msg("no column %s", name);
  return c;
}

/* ---- the FOCUS checker ------------------------------------------------
 *
 * Written from the specification, not from the writer: it reads the CSV
 * back and checks each rule the export must keep.  Each rule the issue
 * found broken is one check below. */

/* A decimal as an exact fraction num / 10^places; false when s is not one. */
struct dec {
  __int128 num;
  int places;
};
static bool dec_parse(const char *s, struct dec *out) {
  const char *p = s;
  bool neg = *p == '-';
  p += neg;
  if (!(*p >= '0' && *p <= '9'))
    return false;
  __int128 v = 0;
  int places = 0;
  bool dot = false;
  for (; *p; p++) {
    if (*p == '.' && !dot) {
      dot = true;
      continue;
    }
    if (*p < '0' || *p > '9' || places > 30)
      return false;
    v = v * 10 + (*p - '0');
    if (dot)
      places++;
  }
  if (dot && !places)
    return false;
  out->num = neg ? -v : v;
  out->places = places;
  return true;
}

/* a x b rounded half away from zero to 6 places, in micro-units */
static int64_t dec_mul_6(struct dec a, struct dec b) {
  __int128 n = a.num * b.num;
  int places = a.places + b.places;
  bool neg = n < 0;
  if (neg)
    n = -n;
  __int128 den = 1;
  for (int i = 6; i < places; i++)
    den *= 10;
  __int128 v = places >= 6 ? (n + den / 2) / den : n;
  for (int i = places; i < 6; i++)
    v *= 10;
  return neg ? -(int64_t)v : (int64_t)v;
}

static int64_t dec_uusd(const char *s) {
  struct dec d;
  if (!dec_parse(s, &d) || d.places != 6)
    fail_msg("not a six-place amount: \"%s\"", s);
  return (int64_t)d.num;
}

struct focus_seen {
  size_t rows, corrections, network, committed, negotiated, batch, nulls;
  int64_t billed, list;
};

static void check_focus(const char *text, bool v12, struct focus_seen *seen) {
  static const char *const cols10[] = {
      "AvailabilityZone", "BilledCost", "BillingAccountId",
      "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
      "BillingPeriodStart", "ChargeCategory", "ChargeClass",
      "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd",
      "ChargePeriodStart", "CommitmentDiscountCategory",
      "CommitmentDiscountId", "CommitmentDiscountName",
      "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity",
      "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
      "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory",
      "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName",
      "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
      "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId",
      "SubAccountName", "Tags", NULL};
  static const char *const cols12[] = {
      "BillingAccountType", "CapacityReservationId",
      "CapacityReservationStatus", "CommitmentDiscountQuantity",
      "CommitmentDiscountUnit", "InvoiceId", "PricingCurrency",
      "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
      "PricingCurrencyListUnitPrice", "ServiceSubcategory", "SkuMeter",
      "SkuPriceDetails", "SubAccountType", NULL};
  static const char *const categories[] = {"Usage",  "Purchase",   "Tax",
                                           "Credit", "Adjustment", NULL};
  static const char *const services[] = {
      "AI and Machine Learning", "Analytics", "Business Applications",
      "Compute", "Databases", "Developer Tools", "Multicloud", "Identity",
      "Integration", "Internet of Things", "Management and Governance",
      "Media", "Migration", "Mobile", "Networking", "Security", "Storage",
      "Web", "Other", NULL};
  static const char *const pricing_categories[] = {"Standard", "Dynamic",
                                                   "Committed", "Other", NULL};
  static const char *const frequencies[] = {"One-Time", "Recurring",
                                            "Usage-Based", NULL};
  /* never null */
  static const char *const required[] = {
      "BilledCost", "BillingAccountId", "BillingCurrency", "BillingPeriodEnd",
      "BillingPeriodStart", "ChargeCategory", "ChargeDescription",
      "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost",
      "EffectiveCost", "InvoiceIssuerName", "ListCost", "ProviderName",
      "PublisherName", "ServiceCategory", "ServiceName", "RegionId", NULL};
  static const char *const decimals[] = {
      "BilledCost", "ContractedCost", "EffectiveCost", "ListCost",
      "PricingQuantity", "ListUnitPrice", "ContractedUnitPrice",
      "ConsumedQuantity", NULL};
  static const char *const dates[] = {"BillingPeriodStart", "BillingPeriodEnd",
                                      "ChargePeriodStart", "ChargePeriodEnd",
                                      NULL};
  regex_t iso;
  assert_int_equal(
      regcomp(&iso, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$",
              REG_EXTENDED),
      0);
  size_t pos = 0;
  char *hdr[128];
  size_t nh = csv_record(text, &pos, hdr, 128);
  for (size_t i = 0; cols10[i]; i++)
    col_of(hdr, nh, cols10[i]); /* fails when missing */
  for (size_t i = 0; cols12[i]; i++) {
    size_t k;
    for (k = 0; k < nh && strcmp(hdr[k], cols12[i]); k++)
      ;
    if (v12 != (k < nh))
      fail_msg("FOCUS %s: column %s %s", v12 ? "1.2" : "1.0", cols12[i],
               v12 ? "missing" : "present");
  }
#define COL(name) col_of(hdr, nh, name)
#define V(name) f[COL(name)]
#define IS_NULL(name) (!*V(name))
  char *f[128];
  size_t nf;
  while ((nf = csv_record(text, &pos, f, 128))) {
    assert_int_equal(nf, nh);
    size_t row = ++seen->rows;
    for (size_t i = 0; required[i]; i++)
      if (IS_NULL(required[i]))
        fail_msg("row %zu: %s is null", row, required[i]);
    for (size_t i = 0; decimals[i]; i++) {
      struct dec d;
      if (!IS_NULL(decimals[i]) && !dec_parse(V(decimals[i]), &d))
        fail_msg("row %zu: %s is not a decimal: \"%s\"", row, decimals[i],
                 V(decimals[i]));
    }
    for (size_t i = 0; dates[i]; i++)
      if (regexec(&iso, V(dates[i]), 0, NULL, 0))
        fail_msg("row %zu: %s is not ISO 8601 UTC: \"%s\"", row, dates[i],
                 V(dates[i]));
    assert_string_equal(V("BillingCurrency"), "USD");
    assert_true(in_set(V("ChargeCategory"), categories));
    assert_true(in_set(V("ServiceCategory"), services));
    assert_true(in_set(V("PricingCategory"), pricing_categories));
    assert_true(in_set(V("ChargeFrequency"), frequencies));
    bool usage = !strcmp(V("ChargeCategory"), "Usage");

    /* ChargeClass: "Correction" only for a charge of an earlier billing
     * period, null within the current one (ISO text compares as time) */
    assert_true(strcmp(V("ChargePeriodStart"), V("ChargePeriodEnd")) < 0);
    assert_true(strcmp(V("BillingPeriodStart"), V("BillingPeriodEnd")) < 0);
    if (!strcmp(V("ChargeClass"), "Correction")) {
      seen->corrections++;
      assert_false(usage);
      assert_true(strcmp(V("ChargePeriodStart"), V("BillingPeriodStart")) < 0);
    } else {
      assert_true(IS_NULL("ChargeClass"));
      assert_true(strcmp(V("BillingPeriodStart"), V("ChargePeriodStart")) <= 0);
      assert_true(strcmp(V("ChargePeriodEnd"), V("BillingPeriodEnd")) <= 0);
    }

    /* ListUnitPrice x PricingQuantity = ListCost, and the contracted
     * price likewise, at the cost's precision */
    assert_int_equal(IS_NULL("PricingQuantity"), IS_NULL("PricingUnit"));
    assert_int_equal(IS_NULL("PricingQuantity"), IS_NULL("ListUnitPrice"));
    assert_int_equal(IS_NULL("ListUnitPrice"), IS_NULL("ContractedUnitPrice"));
    if (usage)
      assert_false(IS_NULL("PricingQuantity"));
    if (!IS_NULL("PricingQuantity")) {
      struct dec q, lp, cp;
      assert_true(dec_parse(V("PricingQuantity"), &q));
      assert_true(dec_parse(V("ListUnitPrice"), &lp));
      assert_true(dec_parse(V("ContractedUnitPrice"), &cp));
      if (dec_mul_6(lp, q) != dec_uusd(V("ListCost")))
        fail_msg("row %zu: ListUnitPrice %s x PricingQuantity %s != ListCost "
                 "%s",
                 row, V("ListUnitPrice"), V("PricingQuantity"), V("ListCost"));
      if (dec_mul_6(cp, q) != dec_uusd(V("ContractedCost")))
        fail_msg("row %zu: ContractedUnitPrice %s x PricingQuantity %s != "
                 "ContractedCost %s",
                 row, V("ContractedUnitPrice"), V("PricingQuantity"),
                 V("ContractedCost"));
    } else {
      seen->nulls++;
    }

    /* ConsumedQuantity and ConsumedUnit: Usage rows only */
    assert_int_equal(IS_NULL("ConsumedQuantity"), !usage);
    assert_int_equal(IS_NULL("ConsumedUnit"), !usage);

    /* the discount as what it is */
    int64_t listc = dec_uusd(V("ListCost")),
            contracted = dec_uusd(V("ContractedCost")),
            effective = dec_uusd(V("EffectiveCost"));
    assert_int_equal(dec_uusd(V("BilledCost")), effective);
    if (!IS_NULL("CommitmentDiscountId")) {
      seen->committed++;
      assert_string_equal(V("PricingCategory"), "Committed");
      assert_true(!strcmp(V("CommitmentDiscountCategory"), "Spend") ||
                  !strcmp(V("CommitmentDiscountCategory"), "Usage"));
      assert_true(!strcmp(V("CommitmentDiscountStatus"), "Used") ||
                  !strcmp(V("CommitmentDiscountStatus"), "Unused"));
      assert_false(IS_NULL("CommitmentDiscountType"));
      assert_int_equal(contracted, listc); /* no negotiated rate */
      if (usage)
        assert_true(effective < contracted);
    } else {
      assert_true(IS_NULL("CommitmentDiscountCategory"));
      assert_true(IS_NULL("CommitmentDiscountStatus"));
      assert_int_equal(contracted, effective);
      if (contracted != listc && !IS_NULL("ListUnitPrice")) {
        seen->negotiated++;
        struct dec lp, cp;
        assert_true(dec_parse(V("ListUnitPrice"), &lp));
        assert_true(dec_parse(V("ContractedUnitPrice"), &cp));
        /* a lower unit price, not just a lower cost */
        assert_true(dec_mul_6(cp, (struct dec){1, 0}) <
                    dec_mul_6(lp, (struct dec){1, 0}));
      }
    }

    /* SkuPriceId wherever there is a SkuId; x_CorrectsSeq null or a row */
    if (!IS_NULL("SkuId"))
      assert_false(IS_NULL("SkuPriceId"));
    if (!IS_NULL("x_CorrectsSeq"))
      assert_true(strtoll(V("x_CorrectsSeq"), NULL, 10) > 0);

    /* RegionName: a display name, not the id again */
    if (!IS_NULL("RegionName"))
      assert_string_not_equal(V("RegionName"), V("RegionId"));
    if (!strcmp(V("ProviderName"), "AWS") && !strcmp(V("RegionId"), "us-east-1"))
      assert_false(IS_NULL("RegionName"));

    /* ResourceType: a Slurm job is not a virtual machine */
    if (!strcmp(V("ProviderName"), "Slurm")) {
      seen->batch++;
      assert_string_not_equal(V("ResourceType"), "Virtual Machine");
    }

    /* BillingAccountId: the provider's account, as configured */
    if (!strcmp(V("ProviderName"), "AWS"))
      assert_string_equal(V("BillingAccountId"), "123456789012");
    if (!strcmp(V("ProviderName"), "Microsoft Azure"))
      assert_string_equal(V("BillingAccountId"), "8611537");

    if (!strcmp(V("ServiceCategory"), "Networking")) {
      seen->network++;
      assert_string_equal(V("PricingUnit"), "GB");
      assert_string_equal(V("PricingQuantity"), "5.000000000");
    } else if (!IS_NULL("PricingUnit")) {
      assert_string_equal(V("PricingUnit"), "Hours");
    }
    if (v12) {
      assert_int_equal(IS_NULL("PricingCurrency"),
                       IS_NULL("PricingCurrencyListUnitPrice"));
      assert_false(IS_NULL("ServiceSubcategory"));
      if (!IS_NULL("CommitmentDiscountId"))
        assert_false(IS_NULL("CommitmentDiscountQuantity"));
      if (!IS_NULL("SkuPriceDetails")) {
        json_t *d = json_loads(V("SkuPriceDetails"), 0, NULL);
        assert_true(json_is_object(d));
        json_decref(d);
      }
    }
    json_t *tags = json_loads(V("Tags"), 0, NULL);
    assert_true(json_is_object(tags));
    assert_true(json_is_string(json_object_get(tags, "tradewind:tenant")));
    assert_true(json_is_string(json_object_get(tags, "tradewind:project")));
    assert_true(json_is_string(json_object_get(tags, "tradewind:job")));
    json_decref(tags);
    seen->billed += dec_uusd(V("BilledCost"));
    seen->list += dec_uusd(V("ListCost"));
    free_fields(f, nf);
  }
#undef COL
#undef V
#undef IS_NULL
  free_fields(hdr, nh);
  regfree(&iso);
}

static void focus_export_has_every_column_with_valid_values(void **state) {
  (void)state;
  seed();
  for (int v = 0; v < 2; v++) {
    char *text = render(v ? "focus-1.2" : "focus", 0, NULL, DEC1);
    struct focus_seen seen = {0};
    check_focus(text, v == 1, &seen);
    assert_int_equal(seen.rows, all_rows);
    assert_int_equal(seen.corrections, 1); /* the one of December */
    assert_int_equal(seen.network, 1);
    assert_int_equal(seen.nulls, 2); /* the corrections of cost alone */
    /* k = 1, 4, 7 each day, and the correction of rows[7] (Azure) */
    assert_int_equal(seen.committed, 20 * 3 + 1);
    /* AWS on-demand (k = 0, 6; k = 3 is spot) and the egress */
    assert_int_equal(seen.negotiated, 20 * 2 + 1);
    /* k = 2, 5, 8 each day, and the correction of rows[5] (Slurm) */
    assert_int_equal(seen.batch, 20 * 3 + 1);
    assert_int_equal(seen.billed, all_eff);
    assert_int_equal(seen.list, all_list);
    free(text);
  }
}

static void forecast_extrapolates_the_recent_run_rate(void **state) {
  (void)state;
  struct tw_err err = {0};
  /* $10 a day for tenant a on Nov 1..10, $2 a day for b on Nov 8..10 */
  for (int d = 0; d < 10; d++) {
    struct tw_ledger_row r =
        row("a", "p", "aws", "us-east-1", "j-a",
            NOV1 + d * TW_DAY_MS + 12 * HOUR, HOUR, 10000000, 10000000);
    assert_int_equal(tw_ledger_append(store, &r, 1, NOV1, &err), TW_OK);
    if (d >= 7) {
      r = row("b", "p", "aws", "us-east-1", "j-b",
              NOV1 + d * TW_DAY_MS + 13 * HOUR, HOUR, 2000000, 2000000);
      assert_int_equal(tw_ledger_append(store, &r, 1, NOV1, &err), TW_OK);
    }
  }
  struct tw_ledger_budget b[2] = {{.tenant = "a", .limit_uusd = 250000000},
                                  {.tenant = "b", .limit_uusd = 500000000}};
  assert_int_equal(tw_ledger_budgets_set(store, b, 2, &err), TW_OK);
  int64_t now = NOV1 + 10 * TW_DAY_MS; /* Nov 11, 00:00 */
  char *text = render("json", TW_GROUP_TENANT, NULL, now);
  json_t *j = json_loads(text, 0, NULL);
  json_t *fc = json_object_get(j, "forecast");
  /* last 7 days: $70 of a and $6 of b -> $76 / 7 days; 20 days remain */
  int64_t rate = (76000000LL * 1 + 3) / 7; /* rounded */
  assert_int_equal(
      json_integer_value(json_object_get(fc, "run_rate_uusd_per_day")), rate);
  int64_t want = 106000000 + (76000000LL * 20 + 3) / 7;
  assert_int_equal(
      json_integer_value(json_object_get(fc, "effective_cost_uusd")), want);
  json_t *tenants = json_object_get(fc, "tenants");
  assert_int_equal(json_array_size(tenants), 2);
  json_t *ta = json_array_get(tenants, 0); /* largest first */
  assert_string_equal(json_string_value(json_object_get(ta, "tenant")), "a");
  assert_int_equal(json_integer_value(json_object_get(ta, "forecast_uusd")),
                   300000000);
  json_t *tb = json_array_get(tenants, 1);
  assert_int_equal(json_integer_value(json_object_get(tb, "forecast_uusd")),
                   6000000 + (6000000LL * 20 + 3) / 7);
  json_t *budgets = json_object_get(json_object_get(j, "budgets"), "items");
  assert_int_equal(json_array_size(budgets), 2);
  json_t *ba = json_array_get(budgets, 0);
  assert_int_equal(json_integer_value(json_object_get(ba, "spent_uusd")),
                   100000000);
  assert_int_equal(json_integer_value(json_object_get(ba, "forecast_uusd")),
                   300000000);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(j, "budgets"), "source")),
                      "config");
  json_decref(j);
  free(text);
  /* after the range: the forecast is what was spent */
  text = render("json", 0, NULL, DEC1 + HOUR);
  j = json_loads(text, 0, NULL);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "forecast"), "effective_cost_uusd")),
                   106000000);
  json_decref(j);
  free(text);
}

static void html_page_is_self_contained_with_three_charts(void **state) {
  (void)state;
  seed();
  char *html = render("html", TW_GROUP_TENANT | TW_GROUP_PROVIDER, NULL,
                      NOV1 + 21 * TW_DAY_MS);
  assert_non_null(strstr(html, "<svg class=\"chart\" id=\"chart-time\""));
  assert_non_null(strstr(html, "<svg class=\"chart\" id=\"chart-tenants\""));
  assert_non_null(strstr(html, "<svg class=\"chart\" id=\"chart-burndown\""));
  assert_non_null(strstr(html, "<table id=\"detail\">"));
  char want[96];
  snprintf(want, sizeof want, "id=\"total-effective\" data-uusd=\"%lld\"",
           (long long)all_eff);
  assert_non_null(strstr(html, want));
  /* nothing to fetch: no src or href, no URL but the SVG namespace */
  assert_null(strstr(html, "src="));
  assert_null(strstr(html, "href"));
  for (const char *p = strstr(html, "http"); p; p = strstr(p + 1, "http"))
    assert_true(!strncmp(p, "http://www.w3.org/2000/svg", 26) ||
                !strncmp(p, "http-equiv=", 11));
  assert_non_null(strstr(html, "default-src 'none'"));
  /* text from the ledger is escaped */
  assert_non_null(strstr(html, "etl, &quot;quoted&quot;"));
  assert_null(strstr(html, "etl, \"quoted\""));
  free(html);
}

/* Renders html over [from, to) at now (budgets as stored). */
static char *render_range(int64_t from, int64_t to, int64_t now) {
  struct tw_report_req q = {.from_ms = from,
                            .to_ms = to,
                            .group_mask = TW_GROUP_TENANT,
                            .now_ms = now,
                            .adapters = tw_adapters};
  struct tw_buf b;
  struct tw_err err = {0};
  const char *ctype;
  assert_int_equal(tw_report_format_parse("html", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  return tw_buf_detach(&b);
}

/* "$1,234.025" -> micro-USD */
static int64_t label_uusd(const char *s) {
  bool neg = *s == '-';
  s += neg;
  assert_true(*s == '$');
  s++;
  int64_t whole = 0, frac = 0;
  int places = 0;
  for (; *s && *s != '.' && *s != '<'; s++)
    if (*s != ',')
      whole = whole * 10 + (*s - '0');
  if (*s == '.')
    for (s++; *s >= '0' && *s <= '9'; s++, places++)
      frac = frac * 10 + (*s - '0');
  for (; places < 6; places++)
    frac *= 10;
  int64_t v = whole * 1000000 + frac;
  return neg ? -v : v;
}

/* Every gridline's label says the gridline's own value, and the steps are
 * 1, 2 or 5 x 10^k micro-USD. */
static void check_ticks(const char *html) {
  int n = 0;
  for (const char *p = strstr(html, "class=\"tick\""); p;
       p = strstr(p + 1, "class=\"tick\"")) {
    const char *d = strstr(p, "data-uusd=\"");
    const char *end = strchr(p, '>');
    if (!d || d > end)
      continue; /* a date, not an amount */
    int64_t v = strtoll(d + 11, NULL, 10);
    assert_int_equal(label_uusd(end + 1), v);
    n++;
  }
  assert_true(n >= 2);
}

/* The HTML page a finance person reads: ticks at nice numbers labelled
 * with their value, a burn-down over the budget's own scope, hours for a
 * short range, accrued cost and savings shown, no month extrapolated
 * from hours. */
static void html_follows_the_range_and_the_budget_scope(void **state) {
  (void)state;
  struct tw_err err = {0};
  /* tenant a: $0.026 of a $0.03 budget; tenant b, with no budget, $5 */
  struct tw_ledger_row ra = row("a", "p", "aws", "us-east-1", "j-a",
                                NOV1 + 2 * TW_DAY_MS, HOUR, 26000, 26000);
  struct tw_ledger_row rb = row("b", "p", "aws", "us-east-1", "j-b",
                                NOV1 + 3 * TW_DAY_MS, HOUR, 5000000, 5000000);
  assert_int_equal(tw_ledger_append(store, &ra, 1, NOV1, &err), TW_OK);
  assert_int_equal(tw_ledger_append(store, &rb, 1, NOV1, &err), TW_OK);
  struct tw_ledger_budget bud = {.tenant = "a", .limit_uusd = 30000};
  assert_int_equal(tw_ledger_budgets_set(store, &bud, 1, &err), TW_OK);
  char *html = render_range(NOV1, DEC1, NOV1 + 20 * TW_DAY_MS);
  check_ticks(html);
  /* the burn-down spends tenant a's $0.026 against a's $0.03 */
  assert_non_null(strstr(html, "data-spent-uusd=\"26000\" "
                               "data-limit-uusd=\"30000\""));
  assert_null(strstr(html, "over budget"));
  assert_non_null(strstr(html, "data-resolution=\"day\""));
  /* the spot / on-demand split: both rows on demand (even list) */
  assert_non_null(strstr(html, "data-market=\"on-demand\" data-uusd=\"5026000\""));
  assert_null(strstr(html, "data-market=\"spot\""));
  /* savings and accrued, exactly */
  assert_non_null(strstr(html, "id=\"savings\" data-uusd=\"0\""));
  assert_non_null(strstr(html, "id=\"accrued\" data-uusd=\"0\""));
  free(html);

  /* two hours of a day: hourly bars, no monthly budget line, and the
   * forecast is not those hours times a month */
  int64_t t = NOV1 + 2 * TW_DAY_MS;
  html = render_range(t, t + 2 * HOUR, t + HOUR + HOUR / 2);
  assert_non_null(strstr(html, "data-resolution=\"hour\""));
  assert_non_null(strstr(html, "data-limit-uusd=\"-1\""));
  assert_non_null(strstr(html, "not a calendar month"));
  assert_non_null(strstr(html, "not extrapolated"));
  /* tenant a's hour ran within the range: $0.026 */
  assert_non_null(strstr(html, "id=\"total-effective\" data-uusd=\"26000\""));
  assert_non_null(strstr(html, "id=\"forecast\" data-uusd=\"26000\""));
  check_ticks(html);
  free(html);
}

/* Every row of tw_report_formats renders the seeded ledger with its own
 * content type; a name not in the table is refused on the field "format",
 * the message naming every row; api/openapi.yaml's enum is the table. */
static void every_format_of_the_table_renders(void **state) {
  (void)state;
  seed();
  struct tw_buf names;
  tw_buf_init(&names);
  size_t n = 0;
  for (const struct tw_report_format *f = tw_report_formats; f->name; f++) {
    print_message("format %s\n", f->name);
    assert_non_null(f->summary);
    assert_non_null(f->content_type);
    assert_non_null(f->render);
    struct tw_report_req q = {
        .from_ms = NOV1, .to_ms = DEC1, .format = f, .now_ms = DEC1};
    struct tw_buf b;
    struct tw_err err = {0};
    const char *ctype = NULL;
    tw_buf_init(&b);
    assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
    assert_string_equal(ctype, f->content_type);
    assert_true(b.len > 0);
    tw_buf_release(&b);
    tw_buf_printf(&names, "%s%s", n++ ? ", " : "", f->name);
  }
  assert_true(n >= 4);
  /* the default is the first row */
  struct tw_report_req q = {.from_ms = NOV1, .to_ms = DEC1, .now_ms = DEC1};
  struct tw_buf b;
  struct tw_err err = {0};
  const char *ctype = NULL;
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_string_equal(ctype, tw_report_formats[0].content_type);
  tw_buf_release(&b);

  const struct tw_report_format *fmt = NULL;
  assert_int_equal(tw_report_format_parse("xlsx", &fmt, &err), TW_E_INVALID);
  assert_null(fmt);
  assert_string_equal(err.field, "format");
  assert_non_null(strstr(err.msg, "got \"xlsx\""));
  for (const struct tw_report_format *f = tw_report_formats; f->name; f++)
    assert_non_null(strstr(err.msg, f->name));
  assert_int_equal(tw_report_format_parse(NULL, &fmt, &err), TW_E_INVALID);

  /* the API's document declares the same names, in the same order */
  const char *src = getenv("TW_SOURCE_DIR");
  if (src) {
    char p[512];
    snprintf(p, sizeof p, "%s/api/openapi.yaml", src);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char line[1024];
    bool found = false;
    char *want = tw_asprintf("{name: format, in: query, schema: {type: string, "
                             "enum: [%s], default: %s}}",
                             names.data, tw_report_formats[0].name);
    while (fgets(line, sizeof line, fp))
      found |= strstr(line, want) != NULL;
    fclose(fp);
    if (!found)
      print_error("api/openapi.yaml lacks %s\n", want);
    free(want);
    assert_true(found);
  }
  tw_buf_release(&names);
}

static void ranges_parse_and_default_to_the_month(void **state) {
  (void)state;
  struct tw_err err = {0};
  int64_t f, t;
  int64_t now = NOV1 + 17 * TW_DAY_MS + 5 * HOUR;
  assert_int_equal(tw_report_range_parse(NULL, NULL, now, &f, &t, &err), TW_OK);
  assert_int_equal(f, NOV1);
  assert_int_equal(t, DEC1);
  assert_int_equal(tw_report_range_parse("2025-11-03", "2025-11-05T12:00:00Z",
                                         now, &f, &t, &err),
                   TW_OK);
  assert_int_equal(f, NOV1 + 2 * TW_DAY_MS);
  assert_int_equal(t, NOV1 + 4 * TW_DAY_MS + 12 * HOUR);
  assert_int_equal(
      tw_report_range_parse("2025-11-05", "2025-11-03", now, &f, &t, &err),
      TW_E_INVALID);
  tw_err_clear(&err); /* the first failure's text would win */
  assert_int_equal(tw_report_range_parse("2025-02-30", NULL, now, &f, &t, &err),
                   TW_E_INVALID);
  assert_string_equal(err.field, "from");
  assert_int_equal(tw_report_range_parse("yesterday", NULL, now, &f, &t, &err),
                   TW_E_INVALID);
  assert_int_equal(
      tw_report_range_parse("2000-01-01", "2020-01-01", now, &f, &t, &err),
      TW_E_INVALID);
  const struct tw_report_format *fmt;
  assert_int_equal(tw_report_format_parse("focus", &fmt, &err), TW_OK);
  assert_string_equal(fmt->name, "focus");
  char buf[32];
  tw_report_fmt_usd(-1, buf, sizeof buf);
  assert_string_equal(buf, "-0.000001");
  tw_report_fmt_usd(INT64_MIN, buf, sizeof buf);
  assert_string_equal(buf, "-9223372036854.775808");
}

/* A source of the catalog as a snapshot records it. */
static struct tw_cat_source_info source(const char *kind, const char *provider,
                                        const struct tw_rate *rate) {
  struct tw_cat_source_info si;
  memset(&si, 0, sizeof si);
  snprintf(si.kind, sizeof si.kind, "%s", kind);
  snprintf(si.provider, sizeof si.provider, "%s", provider);
  snprintf(si.name, sizeof si.name, "%s-x", provider);
  si.rate = *rate;
  return si;
}

/* Alibaba prices in CNY: a group of it carries its effective cost in CNY,
 * derived from the ledger's USD at the catalog's rate, and the rate; USD
 * groups, groupings without the provider and FOCUS stay USD. */
static void cny_groups_carry_the_amount_and_the_rate(void **state) {
  (void)state;
  static const char RATES[] = "currency,usd_per_unit,date,source\n"
                              "CNY,0.1393,2025-06-30,reference rate\n"
                              "EUR,1.1720,2025-06-30,reference rate\n";
  struct tw_rates *rates = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_rates_load_text(RATES, strlen(RATES), &rates, &err),
                   TW_OK);
  const struct tw_rate *cny = tw_rates_find(rates, "CNY");
  const struct tw_rate *eur = tw_rates_find(rates, "EUR");
  const struct tw_rate *usd = tw_rates_find(rates, "USD");
  assert_non_null(cny);
  assert_non_null(eur);
  assert_non_null(usd);

  /* which providers: their sources all in one other currency */
  struct tw_cat_source_info src[6] = {
      source("adapter", "alibaba", cny), source("adapter", "alibaba", cny),
      source("adapter", "aws", usd),     source("adapter", "azure", eur),
      source("adapter", "azure", usd),   source("file", "alibaba", cny)};
  const struct tw_cat_source_info *sp[6];
  for (int i = 0; i < 6; i++)
    sp[i] = &src[i];
  struct tw_report_fx *fx = NULL;
  size_t n_fx = 0;
  tw_report_fx_of(sp, 6, &fx, &n_fx);
  assert_int_equal(n_fx, 1); /* azure mixes EUR and USD */
  assert_string_equal(fx[0].provider, "alibaba");
  assert_string_equal(fx[0].rate.currency, "CNY");

  /* 10 CNY an hour at 0.1393 is $1.393000: an hour and 1000 s of it */
  struct tw_ledger_row rows[3] = {
      priced("ml", "nlp", "alibaba", "cn-hangzhou", "j-1", NOV1 + HOUR, HOUR,
             1393000, 0, false),
      priced("ml", "nlp", "alibaba", "cn-hangzhou", "j-1", NOV1 + 2 * HOUR,
             1000 * 1000, 1393000, 0, false),
      priced("ml", "nlp", "aws", "us-east-1", "j-2", NOV1 + HOUR, HOUR, 96000,
             0, false)};
  assert_int_equal(tw_ledger_append(store, rows, 3, NOV1, &err), TW_OK);
  /* 1393000 + 386944 (1393000 x 1000 / 3600 = 386944.4) = 1779944 uusd;
   * 1779944 / 0.1393 = 12777774.587 micro-CNY, half up: 12777775 */
  assert_int_equal(rows[0].effective_uusd + rows[1].effective_uusd, 1779944);
  int64_t micro = 0;
  assert_true(tw_report_fx_amount(cny, 1779944, &micro));
  assert_int_equal(micro, 12777775);
  assert_true(tw_report_fx_amount(cny, -1779944, &micro)); /* a credit */
  assert_int_equal(micro, -12777775);

  struct tw_report_req q = {.from_ms = NOV1,
                            .to_ms = DEC1,
                            .group_mask = TW_GROUP_PROVIDER,
                            .now_ms = NOV1 + TW_DAY_MS,
                            .adapters = tw_adapters,
                            .fx = fx,
                            .n_fx = n_fx};
  struct tw_buf b;
  const char *ctype;
  /* JSON */
  assert_int_equal(tw_report_format_parse("json", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  json_t *j = json_loads(b.data, 0, NULL);
  assert_non_null(j);
  json_t *items = json_object_get(j, "items");
  assert_int_equal(json_array_size(items), 2);
  size_t seen = 0;
  for (size_t i = 0; i < json_array_size(items); i++) {
    json_t *g = json_array_get(items, i);
    const char *prov = json_string_value(json_object_get(g, "provider"));
    if (!strcmp(prov, "alibaba")) {
      assert_int_equal(
          json_integer_value(json_object_get(g, "effective_cost_uusd")),
          1779944);
      assert_string_equal(
          json_string_value(json_object_get(g, "source_currency")), "CNY");
      assert_string_equal(
          json_string_value(json_object_get(g, "source_amount")), "12.777775");
      assert_string_equal(json_string_value(json_object_get(g, "rate")),
                          "0.1393");
      assert_string_equal(json_string_value(json_object_get(g, "rate_date")),
                          "2025-06-30");
      assert_string_equal(
          json_string_value(json_object_get(g, "source_amount_basis")),
          "derived");
      seen++;
    } else {
      assert_string_equal(prov, "aws");
      assert_null(json_object_get(g, "source_currency"));
      assert_null(json_object_get(g, "rate"));
      seen++;
    }
  }
  assert_int_equal(seen, 2);
  assert_null(json_object_get(json_object_get(j, "total"), "source_currency"));
  json_decref(j);
  tw_buf_release(&b);
  /* without the provider in the grouping a group may mix currencies */
  q.group_mask = TW_GROUP_TENANT;
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_null(strstr(b.data, "source_currency"));
  tw_buf_release(&b);

  /* CSV: the columns after the USD ones, empty for USD groups */
  q.group_mask = TW_GROUP_PROVIDER | TW_GROUP_DAY;
  assert_int_equal(tw_report_format_parse("csv", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  size_t pos = 0;
  char *f[32];
  size_t nh = csv_record(b.data, &pos, f, 32);
  assert_int_equal(nh, 11);
  assert_string_equal(f[7], "source_currency");
  assert_string_equal(f[8], "source_amount");
  assert_string_equal(f[9], "rate");
  assert_string_equal(f[10], "rate_date");
  free_fields(f, nh);
  size_t nr, lines = 0;
  while ((nr = csv_record(b.data, &pos, f, 32))) {
    assert_int_equal(nr, 11);
    if (!strcmp(f[0], "alibaba")) {
      assert_int_equal(usd_to_uusd(f[3]), 1779944);
      assert_string_equal(f[7], "CNY");
      assert_string_equal(f[8], "12.777775");
      assert_string_equal(f[9], "0.1393");
      assert_string_equal(f[10], "2025-06-30");
    } else {
      assert_string_equal(f[7], "");
      assert_string_equal(f[8], "");
    }
    free_fields(f, nr);
    lines++;
  }
  assert_int_equal(lines, 2);
  tw_buf_release(&b);

  /* HTML: beside the USD figure */
  assert_int_equal(tw_report_format_parse("html", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_non_null(strstr(b.data, "data-uusd=\"1779944\">1.779944<br><span "
                                 "class=\"fx\" data-currency=\"CNY\" "
                                 "data-source-micro=\"12777775\""));
  assert_non_null(strstr(b.data, "\xc2\xa5"
                                 "12.777775 at 0.1393 USD/CNY (2025-06-30, "
                                 "reference rate; derived from USD)"));
  tw_buf_release(&b);

  /* FOCUS 1.0 bills in USD: nothing of CNY there */
  assert_int_equal(tw_report_format_parse("focus", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_null(strstr(b.data, "CNY"));
  assert_non_null(strstr(b.data, "USD"));
  tw_buf_release(&b);
  free(fx);
  tw_rates_free(rates);
}

/* Rows the meter wrote with their CNY amount are reported with that
 * amount ("metered"), whatever the rate table says today; a range that
 * cuts a row takes its CNY by time like its USD; a group with a row
 * metered before amounts were kept is derived as a whole. */
static void metered_cny_amounts_are_reported_as_billed(void **state) {
  (void)state;
  /* a rate table newer than the one the rows were metered at (0.1393) */
  static const char RATES[] = "currency,usd_per_unit,date,source\n"
                              "CNY,0.1500,2025-12-01,newer rate\n";
  struct tw_rates *rates = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_rates_load_text(RATES, strlen(RATES), &rates, &err),
                   TW_OK);
  const struct tw_rate *cny = tw_rates_find(rates, "CNY");
  assert_non_null(cny);
  struct tw_cat_source_info src[1] = {source("adapter", "alibaba", cny)};
  const struct tw_cat_source_info *sp[1] = {&src[0]};
  struct tw_report_fx *fx = NULL;
  size_t n_fx = 0;
  tw_report_fx_of(sp, 1, &fx, &n_fx);
  assert_int_equal(n_fx, 1);

  /* 10 CNY an hour, billed 1.393 USD an hour: an hour (10 CNY) and
   * 1000 s (2.777778 CNY) */
  struct tw_ledger_row rows[2] = {
      priced("ml", "nlp", "alibaba", "cn-hangzhou", "j-1", NOV1 + HOUR, HOUR,
             1393000, 0, false),
      priced("ml", "nlp", "alibaba", "cn-hangzhou", "j-1", NOV1 + 2 * HOUR,
             1000 * 1000, 1393000, 0, false)};
  for (int i = 0; i < 2; i++)
    snprintf(rows[i].source_currency, sizeof rows[i].source_currency, "CNY");
  rows[0].source_effective_micro = 10000000;
  rows[1].source_effective_micro = 2777778;
  assert_int_equal(tw_ledger_append(store, rows, 2, NOV1, &err), TW_OK);

  struct tw_report_req q = {.from_ms = NOV1,
                            .to_ms = DEC1,
                            .group_mask = TW_GROUP_PROVIDER,
                            .now_ms = NOV1 + TW_DAY_MS,
                            .adapters = tw_adapters,
                            .fx = fx,
                            .n_fx = n_fx};
  assert_int_equal(tw_report_format_parse("json", &q.format, &err), TW_OK);
  /* the whole month (its days from the rollup), then from half way
   * through the first row (the day's rows, cut by time): 5 + 2.777778 */
  static const struct {
    int64_t from;
    const char *amount;
  } cases[] = {{NOV1, "12.777778"}, {NOV1 + HOUR + 1800 * 1000, "7.777778"}};
  for (size_t c = 0; c < 2; c++) {
    q.from_ms = cases[c].from;
    struct tw_buf b;
    const char *ctype;
    tw_buf_init(&b);
    assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
    json_t *j = json_loads(b.data, 0, NULL);
    assert_non_null(j);
    json_t *g = json_array_get(json_object_get(j, "items"), 0);
    assert_non_null(g);
    assert_string_equal(json_string_value(json_object_get(g, "provider")),
                        "alibaba");
    assert_string_equal(
        json_string_value(json_object_get(g, "source_amount")),
        cases[c].amount);
    assert_string_equal(
        json_string_value(json_object_get(g, "source_amount_basis")),
        "metered");
    assert_string_equal(json_string_value(json_object_get(g, "rate")),
                        "0.1500");
    json_decref(j);
    tw_buf_release(&b);
  }
  q.from_ms = NOV1;
  assert_int_equal(tw_report_format_parse("html", &q.format, &err), TW_OK);
  struct tw_buf b;
  const char *ctype;
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  assert_non_null(strstr(b.data, "data-source-micro=\"12777778\""));
  assert_non_null(strstr(b.data, "(2025-12-01, newer rate; as metered)"));
  tw_buf_release(&b);

  /* a row metered before amounts were kept: the group is derived whole,
   * at today's rate (1779944 + 1393000 = 3172944 uusd / 0.15) */
  struct tw_ledger_row old = priced("ml", "nlp", "alibaba", "cn-hangzhou",
                                    "j-0", NOV1 + 3 * HOUR, HOUR, 1393000, 0,
                                    false);
  assert_int_equal(tw_ledger_append(store, &old, 1, NOV1, &err), TW_OK);
  assert_int_equal(tw_report_format_parse("json", &q.format, &err), TW_OK);
  tw_buf_init(&b);
  assert_int_equal(tw_report_render(store, &q, &b, &ctype, &err), TW_OK);
  json_t *j = json_loads(b.data, 0, NULL);
  json_t *g = json_array_get(json_object_get(j, "items"), 0);
  assert_int_equal(json_integer_value(json_object_get(g, "effective_cost_uusd")),
                   3172944);
  assert_string_equal(json_string_value(json_object_get(g, "source_amount")),
                      "21.152960");
  assert_string_equal(
      json_string_value(json_object_get(g, "source_amount_basis")), "derived");
  json_decref(j);
  tw_buf_release(&b);
  free(fx);
  tw_rates_free(rates);
}

/* The API's way: the providers come from the catalog's own sources, at
 * the rate of its table (here the compiled-in one: CNY at 0.1393). */
static void catalog_names_the_providers_priced_in_cny(void **state) {
  (void)state;
  char ali[192], aws[192];
  snprintf(ali, sizeof ali, "%s/ali.csv", dir);
  snprintf(aws, sizeof aws, "%s/aws.csv", dir);
  FILE *fp = fopen(ali, "w");
  assert_non_null(fp);
  fputs("InstanceType,vCPUs,MemoryGiB,Price,Region\n"
        "ecs.g7.large,2,8,0.693,cn-hangzhou\n",
        fp);
  fclose(fp);
  fp = fopen(aws, "w");
  assert_non_null(fp);
  fputs("InstanceType,vCPUs,MemoryGiB,Price,Region\n"
        "m5.large,2,8,0.096,us-east-1\n",
        fp);
  fclose(fp);
  struct tw_catalog_file files[] = {
      {.name = "ali", .path = ali, .provider = "alibaba", .currency = "CNY"},
      {.name = "aws", .path = aws, .provider = "aws"}};
  struct tw_catalog_opts o = {
      .clock = &clk, .files = files, .n_files = 2, .adapters = tw_adapters};
  struct tw_catalog *c = NULL;
  struct tw_err err = {0};
  if (tw_catalog_new(&o, &c, &err))
    fail_msg("%s", err.msg);
  assert_int_equal(tw_catalog_refresh_due(c, tw_clock_now_ms(&clk)), 2);
  struct tw_report_fx *fx = NULL;
  size_t n = 0;
  tw_report_fx_from_catalog(c, &fx, &n);
  assert_int_equal(n, 1);
  assert_string_equal(fx[0].provider, "alibaba");
  assert_string_equal(fx[0].rate.currency, "CNY");
  assert_int_equal(fx[0].rate.nusd_per_unit, 139300000);
  assert_string_equal(fx[0].rate.date, "2025-06-30");
  free(fx);
  tw_catalog_free(c);
  tw_report_fx_from_catalog(NULL, &fx, &n);
  assert_int_equal(n, 0);
  assert_null(fx);
  unlink(ali);
  unlink(aws);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(reports_include_accrued_cost, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          html_follows_the_range_and_the_budget_scope, setup, teardown),
      cmocka_unit_test_setup_teardown(json_and_csv_totals_equal_the_ledger,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          focus_export_has_every_column_with_valid_values, setup, teardown),
      cmocka_unit_test_setup_teardown(forecast_extrapolates_the_recent_run_rate,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          html_page_is_self_contained_with_three_charts, setup, teardown),
      cmocka_unit_test_setup_teardown(every_format_of_the_table_renders, setup,
                                      teardown),
      cmocka_unit_test(ranges_parse_and_default_to_the_month),
      cmocka_unit_test_setup_teardown(cny_groups_carry_the_amount_and_the_rate,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          metered_cny_amounts_are_reported_as_billed, setup, teardown),
      cmocka_unit_test_setup_teardown(catalog_names_the_providers_priced_in_cny,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
