/* focus.h - ledger rows as FOCUS (FinOps Open Cost and Usage
 * Specification) CSV: version 1.0, and 1.2 as an option (format
 * "focus-1.2": its added columns too).
 *
 * Every column of the version, alphabetically, then Tradewind's own x_
 * columns (x_LedgerSeq, x_CorrectsSeq, x_AttemptId, x_Nodes, x_Market).
 * Empty fields are nulls.  Dates are ISO 8601 UTC to the second; costs
 * are decimal USD with six places (exact micro-USD); unit prices and
 * quantities carry the places that make ListUnitPrice x PricingQuantity
 * and ContractedUnitPrice x PricingQuantity give ListCost and
 * ContractedCost at the micro-dollar.  docs/billing.md maps each column to
 * the ledger. */
#ifndef TW_BILLING_FOCUS_H
#define TW_BILLING_FOCUS_H

#include "billing/ledger/ledger.h"
#include "broker/base/mem.h"
#include "providers/provider.h"

#define TW_FOCUS_1_0 10
#define TW_FOCUS_1_2 12

struct tw_regions;

/* What the writer needs beside a row. */
struct tw_focus_opts {
  /* ProviderName, ServiceName and ResourceType come from the info block
   * of the row's adapter in this registry (providers/provider.h); an
   * adapter it does not hold (or NULL) shows its own name. */
  const struct tw_provider_ops *const *adapters;
  /* The accounts' invoice ids and commitments (ledger_accounts); a row of
   * an account not listed shows the account's name. */
  const struct tw_ledger_account *accounts;
  size_t n_accounts;
  const struct tw_regions *regions; /* RegionName; NULL: null */
  int version;                      /* TW_FOCUS_1_0 (0) or TW_FOCUS_1_2 */
};

/* The header line, ending in "\r\n" (RFC 4180). */
void tw_focus_header(struct tw_buf *out, int version);
/* One row, ending in "\r\n". */
void tw_focus_row(struct tw_buf *out, const struct tw_focus_opts *o,
                  const struct tw_ledger_row *r);

/* The display name of an adapter ("AWS", "Microsoft Azure") from its info
 * block in reg, or the adapter's name itself. */
const char *tw_focus_provider_name(const struct tw_provider_ops *const *reg,
                                   const char *adapter);

#endif
