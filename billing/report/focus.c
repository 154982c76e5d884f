/* focus.c - FOCUS 1.0 CSV from ledger rows. */
#include "billing/report/focus.h"

#include <stdio.h>
#include <string.h>

#include "billing/report/report.h"
#include "billing/report/report_int.h"

/* Mandatory columns first, in the specification's alphabetical order, then
 * the optional ones this ledger can fill, then Tradewind's own (x_). */
static const char HEADER[] =
    "BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,"
    "BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass,"
    "ChargeDescription,ChargePeriodEnd,ChargePeriodStart,ContractedCost,"
    "EffectiveCost,InvoiceIssuerName,ListCost,PricingQuantity,PricingUnit,"
    "ProviderName,PublisherName,ServiceCategory,ServiceName,"
    "RegionId,RegionName,AvailabilityZone,ResourceId,ResourceType,SkuId,"
    "PricingCategory,ChargeFrequency,ListUnitPrice,ConsumedQuantity,"
    "ConsumedUnit,Tags,x_LedgerSeq,x_CorrectsSeq,x_AttemptId,x_Nodes,x_"
    "Market\r\n";

void tw_focus_header(struct tw_buf *out) { tw_buf_adds(out, HEADER); }

const char *tw_focus_provider_name(const struct tw_provider_ops *const *reg,
                                   const char *adapter) {
  const struct tw_provider_info *in = tw_provider_info_find(reg, adapter);
  return in && *in->focus_provider ? in->focus_provider : adapter;
}

static const char *service_name(const struct tw_provider_ops *const *reg,
                                const struct tw_ledger_row *r) {
  bool net = r->service == TW_SERVICE_NETWORK;
  const struct tw_provider_info *in = tw_provider_info_find(reg, r->provider);
  const char *s =
      in ? (net ? in->focus_network_service : in->focus_compute_service) : "";
  return *s ? s : net ? "Data Transfer" : "Compute";
}

static void field(struct tw_buf *b, const char *s) {
  if (strpbrk(s, ",\"\r\n")) {
    tw_buf_addc(b, '"');
    for (; *s; s++) {
      if (*s == '"')
        tw_buf_addc(b, '"');
      tw_buf_addc(b, *s);
    }
    tw_buf_addc(b, '"');
  } else {
    tw_buf_adds(b, s);
  }
  tw_buf_addc(b, ',');
}

static void money(struct tw_buf *b, int64_t uusd) {
  char t[32];
  tw_report_fmt_usd(uusd, t, sizeof t);
  field(b, t);
}

/* num / den as a decimal with `places` places, rounded half away from 0 */
static void decimal(struct tw_buf *b, __int128 num, int64_t den, int places) {
  int64_t scale = 1;
  for (int i = 0; i < places; i++)
    scale *= 10;
  bool neg = num < 0;
  __int128 a = neg ? -num : num;
  __int128 v = (a * scale + den / 2) / den;
  char t[64];
  snprintf(t, sizeof t, "%s%lld.%0*lld", neg && v ? "-" : "",
           (long long)(v / scale), places, (long long)(v % scale));
  field(b, t);
}

static void time_field(struct tw_buf *b, int64_t ms) {
  char t[32];
  tw_report_fmt_time(ms, t, sizeof t);
  field(b, t);
}

/* JSON string body (the caller adds the quotes) */
static void json_chars(struct tw_buf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      tw_buf_printf(b, "\\%c", c);
    else if (c < 0x20)
      tw_buf_printf(b, "\\u%04x", c);
    else
      tw_buf_addc(b, (char)c);
  }
}

void tw_focus_row(struct tw_buf *b, const struct tw_provider_ops *const *reg,
                  const struct tw_ledger_row *r) {
  bool net = r->service == TW_SERVICE_NETWORK;
  money(b, r->effective_uusd); /* BilledCost */
  field(b, r->account);        /* BillingAccountId */
  field(b, r->account);        /* BillingAccountName */
  field(b, "USD");             /* BillingCurrency */
  time_field(b, tw_report_next_month(r->start_ms));
  time_field(b, tw_report_month_start(r->start_ms));
  field(b, tw_charge_category_str(r->category));
  field(b, r->correction ? "Correction" : "");
  field(b, r->description);
  /* Whole seconds, and a charge with no duration (data moved, a minimum
   * charge at the end) gets the second it happened in: FOCUS periods are
   * non-empty. */
  int64_t s0 = r->start_ms - ((r->start_ms % 1000) + 1000) % 1000;
  int64_t s1 = r->end_ms + (1000 - ((r->end_ms % 1000) + 1000) % 1000) % 1000;
  if (s1 <= s0)
    s1 = s0 + 1000;
  time_field(b, s1);           /* ChargePeriodEnd */
  time_field(b, s0);           /* ChargePeriodStart */
  money(b, r->effective_uusd); /* ContractedCost */
  money(b, r->effective_uusd); /* EffectiveCost */
  const char *prov = tw_focus_provider_name(reg, r->provider);
  field(b, prov);         /* InvoiceIssuerName */
  money(b, r->list_uusd); /* ListCost */
  if (net)
    decimal(b, r->quantity, 1000000000, 9); /* PricingQuantity: GB */
  else
    decimal(b, r->quantity, 3600, 6); /* PricingQuantity: hours */
  field(b, net ? "GB" : "Hours");
  field(b, prov); /* ProviderName */
  field(b, prov); /* PublisherName */
  field(b, net ? "Networking" : "Compute");
  field(b, service_name(reg, r));
  field(b, r->region); /* RegionId */
  field(b, r->region); /* RegionName */
  field(b, r->zone);
  field(b, r->resource_id);
  field(b, net ? "" : "Virtual Machine");
  field(b, r->instance_type); /* SkuId */
  field(b, !strcmp(r->market, "spot") ? "Dynamic" : "Standard");
  field(b, "Usage-Based");
  money(b, r->unit_price_uusd); /* ListUnitPrice */
  if (net)
    decimal(b, r->quantity, 1000000000, 9);
  else
    decimal(b, (__int128)r->usage_ms * (r->nodes > 0 ? r->nodes : 1), 3600000,
            6);
  field(b, net ? "GB" : "Hours"); /* ConsumedUnit */
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
  field(b, tags.data);
  tw_buf_release(&tags);
  tw_buf_printf(b, "%lld,%lld,%lld,%d,%s\r\n", (long long)r->seq,
                (long long)r->corrects_seq, (long long)r->attempt_id, r->nodes,
                r->market);
}

struct focus_ctx {
  struct tw_buf *out;
  const struct tw_provider_ops *const *adapters;
  int64_t rows;
  bool too_many;
};

static int focus_one(void *arg, const struct tw_ledger_row *r) {
  struct focus_ctx *c = arg;
  if (++c->rows > TW_REPORT_FOCUS_MAX_ROWS) {
    c->too_many = true;
    return 1;
  }
  tw_focus_row(c->out, c->adapters, r);
  return 0;
}

enum tw_rc focus__render(struct tw_store *s, const struct tw_report_req *req,
                         struct tw_buf *out, struct tw_err *err) {
  struct tw_ledger_filter f = {.tenant = req->tenant, .project = req->project};
  struct focus_ctx c = {.out = out, .adapters = req->adapters};
  size_t mark = out->len;
  tw_focus_header(out);
  enum tw_rc rc =
      tw_ledger_scan(s, req->from_ms, req->to_ms, &f, focus_one, &c, err);
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
  return rc;
}
