/* report.h - spend reports over the ledger: JSON and CSV for scripts and
 * spreadsheets, FOCUS 1.0 for FinOps tools (focus.h), and one
 * self-contained HTML page with SVG charts (html.h).
 *
 * A report covers [from, to), grouped by any of tenant, project,
 * provider, region, day and job.  Grouped sums come from the ledger's
 * rollups (ledger.h), so a report over a year costs what a few thousand
 * rollup rows cost; FOCUS lists the ledger rows themselves.
 *
 * The forecast extrapolates the recent run rate (the last 7 days of the
 * range that have passed, or less when the range started later, but a
 * day at least: less is not extrapolated) to the end of the range,
 * overall and per tenant.  Budgets (monthly limits) are
 * compared with the range, which by default is the current month. */
#ifndef TW_BILLING_REPORT_H
#define TW_BILLING_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "billing/catalog/normalize.h"
#include "billing/ledger/ledger.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"

struct tw_provider_ops;

struct tw_store;

struct tw_report_req;

struct tw_catalog;
struct tw_cat_source_info;

/* A provider (adapter name, as the ledger's `provider`) whose prices come
 * in another currency, and the catalog's rate its offers went through.
 * The ledger keeps micro-USD only, so a report derives the amount in that
 * currency from the USD amount at this rate (tw_report_fx_amount). */
struct tw_report_fx {
  char provider[64];
  struct tw_rate rate; /* never USD */
};

/* The providers of the catalog's current snapshot whose sources (adapters
 * and price files) all went through one rate other than USD (Alibaba's
 * China site: CNY).
 * A provider with sources in two currencies, or in USD and another, is
 * left out: its groups could not be stated in one currency.  *out: an
 * owned array of *n (free()); NULL c gives none. */
void tw_report_fx_from_catalog(struct tw_catalog *c, struct tw_report_fx **out,
                               size_t *n);
/* The same from sources src[0..ns) (a snapshot's, tw_cat_snap_source). */
void tw_report_fx_of(const struct tw_cat_source_info *const *src, size_t ns,
                     struct tw_report_fx **out, size_t *n);

/* micro-USD to micro-units of rate's currency, rounded half up (away from
 * zero for a credit) as the catalog rounds the other way:
 * round(uusd x 10^9 / nusd_per_unit).  False when it does not fit. */
bool tw_report_fx_amount(const struct tw_rate *rate, int64_t uusd,
                         int64_t *micro);

/* One report format: its name as the API's `format=` and the CLI's
 * --format give it, and how it is served and rendered.  Every format is one
 * row of the table in report.c; nothing else lists them. */
struct tw_report_format {
  const char *name;         /* "json" */
  const char *summary;      /* one line for help texts */
  const char *content_type; /* MIME type of the rendering */
  const char *filename;     /* served as an attachment of this name; NULL:
                               inline */
  /* Appends the report req asks for to out (req->format is this row). */
  enum tw_rc (*render)(struct tw_store *s, const struct tw_report_req *req,
                       struct tw_buf *out, struct tw_err *err);
};

/* The formats, in the order help texts list them, ended by a row with a
 * NULL name; the first is the default when a request names none. */
extern const struct tw_report_format tw_report_formats[];

/* The row named s.  TW_E_INVALID with field "format" otherwise, the
 * message listing the valid names ("format: expected json, csv, focus or
 * html, got \"xlsx\""). */
enum tw_rc tw_report_format_parse(const char *s,
                                  const struct tw_report_format **out,
                                  struct tw_err *err);

/* Appends the names to out as "json, csv, focus or html", for messages. */
void tw_report_format_list(struct tw_buf *out);

/* The default grouping when a request names none. */
#define TW_REPORT_DEFAULT_GROUPS                                               \
  (TW_GROUP_TENANT | TW_GROUP_PROVIDER | TW_GROUP_DAY)

/* How far back the run rate of the forecast looks. */
#define TW_REPORT_RUN_RATE_MS (7 * TW_DAY_MS)

/* Most ledger rows one FOCUS export lists; a larger range is TW_E_TOOBIG
 * (export month by month). */
#define TW_REPORT_FOCUS_MAX_ROWS 2000000

struct tw_report_req {
  int64_t from_ms, to_ms; /* [from, to) */
  unsigned group_mask;    /* TW_GROUP_*; 0: TW_REPORT_DEFAULT_GROUPS */
  const char *tenant;     /* NULL: every tenant */
  const char *project;    /* NULL: every project */
  const struct tw_report_format *format; /* NULL: tw_report_formats[0] */
  int64_t now_ms;                        /* "now" of the forecast */
  /* Monthly budgets to compare with.  budgets_source NULL: the ones the
   * daemon stored from the config's `billing.budgets`
   * (tw_ledger_budgets_get), reported as "config".  The API passes the
   * tenancy module's budgets here when it keeps any ("tenancy"). */
  const struct tw_ledger_budget *budgets;
  size_t n_budgets;
  const char *budgets_source;
  /* The adapter registry (providers/registry.h), borrowed: FOCUS and HTML
   * name providers by their info blocks.  NULL: by adapter name. */
  const struct tw_provider_ops *const *adapters;
  /* Providers priced in another currency (tw_report_fx_from_catalog),
   * borrowed: a group of one of them (grouped by provider) also carries
   * its effective cost in that currency and the rate.  NULL: USD only. */
  const struct tw_report_fx *fx;
  size_t n_fx;
};

/* Parses the range: each bound is RFC 3339 or a date (YYYY-MM-DD, midnight
 * UTC); `to` may also be a date meaning the end of that day when
 * to_inclusive_date is set.  NULL bounds default to the calendar month
 * (UTC) holding now_ms.  TW_E_INVALID names "from" or "to"; an empty or
 * reversed range, or one longer than 3660 days, is refused. */
enum tw_rc tw_report_range_parse(const char *from, const char *to,
                                 int64_t now_ms, int64_t *from_ms,
                                 int64_t *to_ms, struct tw_err *err);

/* Renders the report into out (appended) in req->format; *content_type
 * gets the format's MIME type (a static string). */
enum tw_rc tw_report_render(struct tw_store *s, const struct tw_report_req *req,
                            struct tw_buf *out, const char **content_type,
                            struct tw_err *err);

/* Formats micro-USD as a decimal dollar amount with six places
 * ("-0.000001", "1234.500000"): exact, for CSV and FOCUS. */
void tw_report_fmt_usd(int64_t uusd, char *out, size_t outsz);

/* "2026-11-30" for a day number (days since 1970-01-01 UTC). */
void tw_report_fmt_day(int64_t day, char *out, size_t outsz);

/* "2026-11-30T13:00:00Z": ISO 8601 UTC to the second, as FOCUS wants. */
void tw_report_fmt_time(int64_t ms, char *out, size_t outsz);

/* Start of the calendar month (UTC) holding ms, and of the next one. */
int64_t tw_report_month_start(int64_t ms);
int64_t tw_report_next_month(int64_t ms);

#endif
