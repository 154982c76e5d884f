/* focus.c - FOCUS 1.0 (and, as an option, 1.2) CSV from ledger rows.
 *
 * Each row's columns are filled into a fixed table (enum col) and written
 * in the header's order; a column a version lacks is not written.  Empty
 * text is FOCUS's null. */
#include "billing/report/focus.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/catalog/normalize.h"
#include "billing/report/report.h"
#include "billing/report/report_int.h"

/* Every column, in the order written: the specification's columns
 * alphabetically, then Tradewind's own (x_). */
enum col {
  C_AvailabilityZone,
  C_BilledCost,
  C_BillingAccountId,
  C_BillingAccountName,
  C_BillingAccountType, /* 1.2 */
  C_BillingCurrency,
  C_BillingPeriodEnd,
  C_BillingPeriodStart,
  C_CapacityReservationId,     /* 1.2 */
  C_CapacityReservationStatus, /* 1.2 */
  C_ChargeCategory,
  C_ChargeClass,
  C_ChargeDescription,
  C_ChargeFrequency,
  C_ChargePeriodEnd,
  C_ChargePeriodStart,
  C_CommitmentDiscountCategory,
  C_CommitmentDiscountId,
  C_CommitmentDiscountName,
  C_CommitmentDiscountQuantity, /* 1.2 */
  C_CommitmentDiscountStatus,
  C_CommitmentDiscountType,
  C_CommitmentDiscountUnit, /* 1.2 */
  C_ConsumedQuantity,
  C_ConsumedUnit,
  C_ContractedCost,
  C_ContractedUnitPrice,
  C_EffectiveCost,
  C_InvoiceId, /* 1.2 */
  C_InvoiceIssuerName,
  C_ListCost,
  C_ListUnitPrice,
  C_PricingCategory,
  C_PricingCurrency,                    /* 1.2 */
  C_PricingCurrencyContractedUnitPrice, /* 1.2 */
  C_PricingCurrencyEffectiveCost,       /* 1.2 */
  C_PricingCurrencyListUnitPrice,       /* 1.2 */
  C_PricingQuantity,
  C_PricingUnit,
  C_ProviderName,
  C_PublisherName,
  C_RegionId,
  C_RegionName,
  C_ResourceId,
  C_ResourceName,
  C_ResourceType,
  C_ServiceCategory,
  C_ServiceName,
  C_ServiceSubcategory, /* 1.2 */
  C_SkuId,
  C_SkuMeter,        /* 1.2 */
  C_SkuPriceDetails, /* 1.2 */
  C_SkuPriceId,
  C_SubAccountId,
  C_SubAccountName,
  C_SubAccountType, /* 1.2 */
  C_Tags,
  C_x_LedgerSeq,
  C_x_CorrectsSeq,
  C_x_AttemptId,
  C_x_Nodes,
  C_x_Market,
  NCOLS
};

static const struct {
  const char *name;
  int since; /* TW_FOCUS_1_0 or TW_FOCUS_1_2 */
} COLS[NCOLS] = {
#define C10(n) [C_##n] = {#n, TW_FOCUS_1_0}
#define C12(n) [C_##n] = {#n, TW_FOCUS_1_2}
    C10(AvailabilityZone),
    C10(BilledCost),
    C10(BillingAccountId),
    C10(BillingAccountName),
    C12(BillingAccountType),
    C10(BillingCurrency),
    C10(BillingPeriodEnd),
    C10(BillingPeriodStart),
    C12(CapacityReservationId),
    C12(CapacityReservationStatus),
    C10(ChargeCategory),
    C10(ChargeClass),
    C10(ChargeDescription),
    C10(ChargeFrequency),
    C10(ChargePeriodEnd),
    C10(ChargePeriodStart),
    C10(CommitmentDiscountCategory),
    C10(CommitmentDiscountId),
    C10(CommitmentDiscountName),
    C12(CommitmentDiscountQuantity),
    C10(CommitmentDiscountStatus),
    C10(CommitmentDiscountType),
    C12(CommitmentDiscountUnit),
    C10(ConsumedQuantity),
    C10(ConsumedUnit),
    C10(ContractedCost),
    C10(ContractedUnitPrice),
    C10(EffectiveCost),
    C12(InvoiceId),
    C10(InvoiceIssuerName),
    C10(ListCost),
    C10(ListUnitPrice),
    C10(PricingCategory),
    C12(PricingCurrency),
    C12(PricingCurrencyContractedUnitPrice),
    C12(PricingCurrencyEffectiveCost),
    C12(PricingCurrencyListUnitPrice),
    C10(PricingQuantity),
    C10(PricingUnit),
    C10(ProviderName),
    C10(PublisherName),
    C10(RegionId),
    C10(RegionName),
    C10(ResourceId),
    C10(ResourceName),
    C10(ResourceType),
    C10(ServiceCategory),
    C10(ServiceName),
    C12(ServiceSubcategory),
    C10(SkuId),
    C12(SkuMeter),
    C12(SkuPriceDetails),
    C10(SkuPriceId),
    C10(SubAccountId),
    C10(SubAccountName),
    C12(SubAccountType),
    C10(Tags),
    C10(x_LedgerSeq),
    C10(x_CorrectsSeq),
    C10(x_AttemptId),
    C10(x_Nodes),
    C10(x_Market),
#undef C10
#undef C12
};

void tw_focus_header(struct tw_buf *out, int version) {
  bool first = true;
  for (int c = 0; c < NCOLS; c++)
    if (COLS[c].since <= version) {
      tw_buf_printf(out, "%s%s", first ? "" : ",", COLS[c].name);
      first = false;
    }
  tw_buf_adds(out, "\r\n");
}

const char *tw_focus_provider_name(const struct tw_provider_ops *const *reg,
                                   const char *adapter) {
  const struct tw_provider_info *in = tw_provider_info_find(reg, adapter);
  return in && *in->focus_provider ? in->focus_provider : adapter;
}

/* ---- values ---------------------------------------------------------- */

/* One row's values: text kept in one arena, each column pointing into it
 * (NULL: null). */
struct vals {
  const char *v[NCOLS];
  char arena[4096];
  size_t used;
};

static void put(struct vals *x, enum col c, const char *s) {
  size_t n = strlen(s) + 1;
  if (x->used + n > sizeof x->arena)
    n = sizeof x->arena - x->used; /* cut (never with ledger sizes) */
  if (!n)
    return;
  char *d = x->arena + x->used;
  memcpy(d, s, n - 1);
  d[n - 1] = '\0';
  x->used += n;
  x->v[c] = d;
}

static void putf(struct vals *x, enum col c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void putf(struct vals *x, enum col c, const char *fmt, ...) {
  char t[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  put(x, c, t);
}

static void money(struct vals *x, enum col c, int64_t uusd) {
  char t[32];
  tw_report_fmt_usd(uusd, t, sizeof t);
  put(x, c, t);
}

/* num / den as a decimal with `places` places; up: |value| rounded up
 * (away from zero), else half away from zero. */
static void decimal(struct vals *x, enum col c, __int128 num, __int128 den,
                    int places, bool up) {
  __int128 scale = 1;
  for (int i = 0; i < places; i++)
    scale *= 10;
  bool neg = num < 0;
  __int128 a = neg ? -num : num;
  __int128 v = up ? (a * scale + den - 1) / den : (a * scale + den / 2) / den;
  char t[64];
  snprintf(t, sizeof t, "%s%lld.%0*lld", neg && v ? "-" : "",
           (long long)(v / scale), places, (long long)(v % scale));
  put(x, c, t);
}

static void time_val(struct vals *x, enum col c, int64_t ms) {
  char t[32];
  tw_report_fmt_time(ms, t, sizeof t);
  put(x, c, t);
}

/* JSON string body (the caller adds the quotes) */
static void json_chars(struct tw_buf *b, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      tw_buf_printf(b, "\\%c", ch);
    else if (ch < 0x20)
      tw_buf_printf(b, "\\u%04x", ch);
    else
      tw_buf_addc(b, (char)ch);
  }
}

static const struct tw_ledger_account *
account_of(const struct tw_focus_opts *o, const char *name) {
  for (size_t i = 0; o && i < o->n_accounts; i++)
    if (!strcmp(o->accounts[i].account, name))
      return &o->accounts[i];
  return NULL;
}

/* PricingQuantity of a compute row, exact enough that ListUnitPrice and
 * ContractedUnitPrice times it give ListCost and ContractedCost once
 * rounded to the micro-dollar as the meter rounds them: node-hours with
 * 15 places, rounded away from zero (the error, under 1e-15 h, stays
 * below the 1/3600 of a micro-dollar that separates two costs). */
#define HOURS_PLACES 15

static void fill(struct vals *x, const struct tw_focus_opts *o,
                 const struct tw_ledger_row *r) {
  memset(x->v, 0, sizeof x->v);
  x->used = 0;
  bool net = r->service == TW_SERVICE_NETWORK;
  bool usage = r->category == TW_CHARGE_USAGE;
  const struct tw_provider_ops *const *reg = o ? o->adapters : NULL;
  const struct tw_provider_info *in = tw_provider_info_find(reg, r->provider);
  const struct tw_ledger_account *acct = account_of(o, r->account);
  const char *prov = tw_focus_provider_name(reg, r->provider);

  if (r->zone[0])
    put(x, C_AvailabilityZone, r->zone);
  money(x, C_BilledCost, r->effective_uusd);
  put(x, C_BillingAccountId,
      acct && acct->account_id[0] ? acct->account_id : r->account);
  put(x, C_BillingAccountName,
      acct && acct->account_name[0] ? acct->account_name : r->account);
  put(x, C_BillingAccountType,
      acct && acct->account_type[0] ? acct->account_type : "Billing Account");
  put(x, C_BillingCurrency, "USD");
  /* A row belongs to the billing period of its charge; a correction
   * recorded in a later month is invoiced then, and only that is a
   * Correction (ChargeClass is null within the current period). */
  int64_t bp = tw_report_month_start(r->start_ms);
  bool correction = !usage && r->recorded_ms &&
                    tw_report_month_start(r->recorded_ms) > bp;
  if (correction)
    bp = tw_report_month_start(r->recorded_ms);
  time_val(x, C_BillingPeriodEnd, tw_report_next_month(bp));
  time_val(x, C_BillingPeriodStart, bp);
  put(x, C_ChargeCategory, tw_charge_category_str(r->category));
  if (correction)
    put(x, C_ChargeClass, "Correction");
  put(x, C_ChargeDescription, r->description);
  put(x, C_ChargeFrequency, "Usage-Based");
  /* Whole seconds, and a charge with no duration (data moved, a minimum
   * charge at the end) gets the second it happened in: FOCUS periods are
   * non-empty. */
  int64_t s0 = r->start_ms - ((r->start_ms % 1000) + 1000) % 1000;
  int64_t s1 = r->end_ms + (1000 - ((r->end_ms % 1000) + 1000) % 1000) % 1000;
  if (s1 <= s0)
    s1 = s0 + 1000;
  time_val(x, C_ChargePeriodEnd, s1);
  time_val(x, C_ChargePeriodStart, s0);

  /* quantity and unit prices: none on a correction of costs alone */
  bool priced = usage || r->quantity != 0;
  bool negotiated = r->discount_bp > 0 && !r->commitment;
  if (r->commitment && acct && acct->commitment_id[0]) {
    put(x, C_CommitmentDiscountCategory, acct->commitment_category);
    put(x, C_CommitmentDiscountId, acct->commitment_id);
    put(x, C_CommitmentDiscountName, acct->commitment_name);
    put(x, C_CommitmentDiscountStatus, "Used");
    put(x, C_CommitmentDiscountType, acct->commitment_type);
    if (!strcmp(acct->commitment_category, "Usage") && priced && !net) {
      decimal(x, C_CommitmentDiscountQuantity, r->quantity, 3600,
              HOURS_PLACES, true);
      put(x, C_CommitmentDiscountUnit, "Hours");
    } else {
      money(x, C_CommitmentDiscountQuantity, r->effective_uusd);
      put(x, C_CommitmentDiscountUnit, "USD");
    }
  }
  if (usage) {
    if (net)
      decimal(x, C_ConsumedQuantity, r->quantity, 1000000000, 9, false);
    else
      decimal(x, C_ConsumedQuantity,
              (__int128)r->usage_ms * (r->nodes > 0 ? r->nodes : 1), 3600000,
              6, false);
    put(x, C_ConsumedUnit, net ? "GB" : "Hours");
  }
  /* ContractedCost: at the negotiated rate; a commitment discounts the
   * effective cost only */
  money(x, C_ContractedCost, r->commitment ? r->list_uusd : r->effective_uusd);
  if (priced) {
    /* the negotiated unit price: exact with four more places */
    if (negotiated)
      decimal(x, C_ContractedUnitPrice,
              (__int128)r->unit_price_uusd * (10000 - r->discount_bp),
              (__int128)10000 * 1000000, 10, false);
    else
      money(x, C_ContractedUnitPrice, r->unit_price_uusd);
    x->v[C_PricingCurrencyContractedUnitPrice] = x->v[C_ContractedUnitPrice];
  }
  money(x, C_EffectiveCost, r->effective_uusd);
  x->v[C_PricingCurrencyEffectiveCost] = x->v[C_EffectiveCost];
  put(x, C_InvoiceIssuerName, prov);
  money(x, C_ListCost, r->list_uusd);
  if (priced) {
    money(x, C_ListUnitPrice, r->unit_price_uusd);
    x->v[C_PricingCurrencyListUnitPrice] = x->v[C_ListUnitPrice];
    put(x, C_PricingCurrency, "USD");
    if (net)
      decimal(x, C_PricingQuantity, r->quantity, 1000000000, 9, false);
    else
      decimal(x, C_PricingQuantity, r->quantity, 3600, HOURS_PLACES, true);
    put(x, C_PricingUnit, net ? "GB" : "Hours");
  }
  put(x, C_PricingCategory, r->commitment ? "Committed"
                            : !strcmp(r->market, "spot") ? "Dynamic"
                                                         : "Standard");
  put(x, C_ProviderName, prov);
  put(x, C_PublisherName, prov);
  if (r->region[0]) {
    put(x, C_RegionId, r->region);
    const struct tw_region *rg =
        o && o->regions ? tw_regions_find(o->regions, r->provider, r->region)
                        : NULL;
    if (rg && rg->location[0])
      put(x, C_RegionName, rg->location);
  }
  if (r->resource_id[0])
    put(x, C_ResourceId, r->resource_id);
  const char *rtype = in && in->focus_resource_type ? in->focus_resource_type
                                                    : "";
  if (!net && *rtype)
    put(x, C_ResourceType, rtype);
  put(x, C_ServiceCategory, net ? "Networking" : "Compute");
  const char *svc =
      in ? (net ? in->focus_network_service : in->focus_compute_service) : "";
  put(x, C_ServiceName, *svc ? svc : net ? "Data Transfer" : "Compute");
  put(x, C_ServiceSubcategory, net ? "Other (Networking)"
                               : !strcmp(rtype, "Virtual Machine")
                                   ? "Virtual Machines"
                                   : "Other (Compute)");
  const char *sku = net ? "data-transfer-out" : r->instance_type;
  if (*sku) {
    put(x, C_SkuId, sku);
    put(x, C_SkuMeter, net ? "Data Transfer Out" : "Compute Usage");
    putf(x, C_SkuPriceId, "%s:%s:%s%s%s", r->provider, r->region, sku,
         net ? "" : ":", net ? "" : r->market);
    struct tw_buf d;
    tw_buf_init(&d);
    tw_buf_adds(&d, net ? "{\"x_Direction\":\"out\"}" : "{\"x_InstanceType\":\"");
    if (!net) {
      json_chars(&d, r->instance_type);
      tw_buf_adds(&d, "\",\"x_Market\":\"");
      json_chars(&d, r->market);
      tw_buf_adds(&d, "\"}");
    }
    put(x, C_SkuPriceDetails, d.data);
    tw_buf_release(&d);
  }
  struct tw_buf tags;
  tw_buf_init(&tags);
  tw_buf_adds(&tags, "{\"tradewind:tenant\":\"");
  json_chars(&tags, r->tenant);
  tw_buf_adds(&tags, "\",\"tradewind:project\":\"");
  json_chars(&tags, r->project);
  tw_buf_adds(&tags, "\"");
  if (r->job_id[0]) {
    tw_buf_adds(&tags, ",\"tradewind:job\":\"");
    json_chars(&tags, r->job_id);
    tw_buf_adds(&tags, "\"");
  }
  tw_buf_addc(&tags, '}');
  put(x, C_Tags, tags.data);
  tw_buf_release(&tags);
  putf(x, C_x_LedgerSeq, "%lld", (long long)r->seq);
  if (r->corrects_seq)
    putf(x, C_x_CorrectsSeq, "%lld", (long long)r->corrects_seq);
  if (r->attempt_id)
    putf(x, C_x_AttemptId, "%lld", (long long)r->attempt_id);
  putf(x, C_x_Nodes, "%d", r->nodes);
  if (r->market[0])
    put(x, C_x_Market, r->market);
}

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
static void field(struct tw_buf *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    tw_buf_adds(b, s);
    return;
  }
  tw_buf_addc(b, '"');
  for (; *s; s++) {
    if (*s == '"')
      tw_buf_addc(b, '"');
    tw_buf_addc(b, *s);
  }
  tw_buf_addc(b, '"');
}

void tw_focus_row(struct tw_buf *b, const struct tw_focus_opts *o,
                  const struct tw_ledger_row *r) {
  struct vals *x = tw_malloc(sizeof *x);
  fill(x, o, r);
  int version = o && o->version ? o->version : TW_FOCUS_1_0;
  bool first = true;
  for (int c = 0; c < NCOLS; c++)
    if (COLS[c].since <= version) {
      if (!first)
        tw_buf_addc(b, ',');
      field(b, x->v[c] ? x->v[c] : "");
      first = false;
    }
  tw_buf_adds(b, "\r\n");
  free(x);
}

/* ---- the export -------------------------------------------------------- */

struct focus_ctx {
  struct tw_buf *out;
  const struct tw_focus_opts *opts;
  int64_t rows;
  bool too_many;
};

static int focus_one(void *arg, const struct tw_ledger_row *r) {
  struct focus_ctx *c = arg;
  if (++c->rows > TW_REPORT_FOCUS_MAX_ROWS) {
    c->too_many = true;
    return 1;
  }
  tw_focus_row(c->out, c->opts, r);
  return 0;
}

static enum tw_rc render_version(struct tw_store *s,
                                 const struct tw_report_req *req, int version,
                                 struct tw_buf *out, struct tw_err *err) {
  struct tw_ledger_filter f = {.tenant = req->tenant, .project = req->project};
  struct tw_focus_opts o = {.adapters = req->adapters, .version = version};
  struct tw_ledger_account *accounts = NULL;
  struct tw_regions *regions = NULL;
  struct tw_err e2 = {0};
  enum tw_rc rc = tw_ledger_accounts_get(s, &accounts, &o.n_accounts, err);
  if (rc)
    return rc;
  o.accounts = accounts;
  if (tw_regions_builtin(&regions, &e2) == TW_OK)
    o.regions = regions; /* else RegionName stays null */
  struct focus_ctx c = {.out = out, .opts = &o};
  size_t mark = out->len;
  tw_focus_header(out, version);
  rc = tw_ledger_scan(s, req->from_ms, req->to_ms, &f, focus_one, &c, err);
  if (rc == TW_OK && c.too_many)
    rc = tw_err_set(err, TW_E_TOOBIG,
                    "format=focus lists ledger rows, at most %d at once: "
                    "export a shorter range",
                    TW_REPORT_FOCUS_MAX_ROWS);
  if (rc) {
    out->len = mark;
    if (out->data)
      out->data[mark] = '\0';
  }
  free(accounts);
  tw_regions_free(regions);
  return rc;
}

enum tw_rc focus__render(struct tw_store *s, const struct tw_report_req *req,
                         struct tw_buf *out, struct tw_err *err) {
  return render_version(s, req, TW_FOCUS_1_0, out, err);
}

enum tw_rc focus__render_12(struct tw_store *s,
                            const struct tw_report_req *req, struct tw_buf *out,
                            struct tw_err *err) {
  return render_version(s, req, TW_FOCUS_1_2, out, err);
}
