/* focus.h - ledger rows as FOCUS 1.0 (FinOps Open Cost and Usage
 * Specification) CSV.
 *
 * Every column the specification makes mandatory, then RegionId,
 * RegionName, AvailabilityZone, ResourceId, ResourceType, SkuId,
 * PricingCategory, ChargeFrequency, ListUnitPrice, ConsumedQuantity,
 * ConsumedUnit, Tags (a JSON object carrying tradewind:tenant,
 * tradewind:project, tradewind:job) and Tradewind's own x_ columns.
 * Dates are ISO 8601 UTC to the second; amounts are decimal USD with six
 * places (exact micro-USD); BillingPeriod is the calendar month (UTC) of
 * the charge period's start.  docs/billing.md maps each column to the
 * ledger. */
#ifndef TW_BILLING_FOCUS_H
#define TW_BILLING_FOCUS_H

#include "billing/ledger/ledger.h"
#include "broker/base/mem.h"
#include "providers/provider.h"

/* The header line, ending in "\r\n" (RFC 4180). */
void tw_focus_header(struct tw_buf *out);
/* One row, ending in "\r\n".  The ProviderName and ServiceName columns
 * come from the info block of the row's adapter in registry reg
 * (providers/provider.h); an adapter reg does not hold (or reg NULL)
 * shows its own name, and "Compute" or "Data Transfer". */
void tw_focus_row(struct tw_buf *out, const struct tw_provider_ops *const *reg,
                  const struct tw_ledger_row *r);

/* The display name of an adapter ("AWS", "Microsoft Azure") from its info
 * block in reg, or the adapter's name itself. */
const char *tw_focus_provider_name(const struct tw_provider_ops *const *reg,
                                   const char *adapter);

#endif
