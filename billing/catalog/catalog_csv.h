/* catalog_csv.h - reading catalog CSV files: a zero-copy record reader and
 * the importer of SkyPilot-style catalogs.
 *
 * The reader splits RFC 4180 text (quoted fields, "" escapes, CRLF or LF)
 * into records without copying: each field is a pointer and a length into
 * the input, or into the reader's scratch buffer when the field held
 * escaped quotes.  Fields are NOT NUL-terminated.
 *
 * The importer understands the public catalog formats (see
 * docs/catalog.md): the columns are found by their header names, so the
 * AWS, Azure and GCP variants (which order them differently) share one
 * code path, and the known quirks are handled per row:
 *   - AWS `AvailabilityZone` holds zone ids ("use1-az4"), not names;
 *   - an empty `SpotPrice` means "not offered on spot";
 *   - Azure rows whose `Generation` holds an unquoted "V1,V2" have one
 *     field too many: the extra fields are joined back into that column;
 *   - GCP rows without an `InstanceType` price an accelerator to attach to
 *     another machine, not something to buy alone: a machine that always
 *     carries it (a2-highgpu-8g) is offered at the sum of both rows, a
 *     machine it may be attached to (n1-highmem-8) once more per such
 *     row, as "n1-highmem-8+V100x1" (the cloud's info block says which,
 *     providers/provider.h); the row counts as normalized when its price
 *     went into an offer, else as `no_instance_type`.
 * Every data row is normalized into one or two offers (on-demand, spot) or
 * rejected with a reason; struct tw_cat_report counts both.  Nothing is
 * dropped without being counted. */
#ifndef TW_BILLING_CATALOG_CSV_H
#define TW_BILLING_CATALOG_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

/* ---- records ---------------------------------------------------------------
 */

#define TW_CSV_MAX_FIELDS 32

struct tw_csv_reader {
  const char *p, *end;
  size_t line;   /* line number of the next record (1-based) */
  char *scratch; /* unescaped fields; owned */
  size_t scratch_len, scratch_cap;
};

struct tw_csv_record {
  size_t line;    /* where the record starts (1-based) */
  size_t n;       /* fields read, at most TW_CSV_MAX_FIELDS */
  bool overflow;  /* the record had more fields than that */
  bool bad_quote; /* a quoted field was not closed before the end */
  const char *f[TW_CSV_MAX_FIELDS];
  size_t len[TW_CSV_MAX_FIELDS];
};

void tw_csv_reader_init(struct tw_csv_reader *r, const char *data, size_t len);
/* Frees the scratch buffer. */
void tw_csv_reader_release(struct tw_csv_reader *r);
/* Reads the next record; false at the end of the input.  Blank lines are
 * skipped.  The fields stay valid until the next call. */
bool tw_csv_read(struct tw_csv_reader *r, struct tw_csv_record *rec);

/* ---- the importer
 * ------------------------------------------------------------ */

/* Why a row was rejected.  The names (tw_cat_reject_str) are what the API,
 * the metrics and the tests use. */
enum tw_cat_reject {
  TW_CAT_REJ_FIELDS = 0,    /* "fields": too few or too many fields */
  TW_CAT_REJ_BAD_TEXT,      /* "bad_text": control bytes, bad quoting */
  TW_CAT_REJ_TOO_LONG,      /* "too_long": a name over 63 bytes */
  TW_CAT_REJ_NO_TYPE,       /* "no_instance_type": nothing to launch */
  TW_CAT_REJ_NO_REGION,     /* "no_region" */
  TW_CAT_REJ_ZONE_MISMATCH, /* "zone_mismatch": zone of another region */
  TW_CAT_REJ_BAD_NUMBER,    /* "bad_number": vCPUs, memory, GPU count */
  TW_CAT_REJ_BAD_PRICE,     /* "bad_price": not a decimal, too large */
  TW_CAT_REJ_NO_PRICE,      /* "no_price": neither price is offered */
  TW_CAT_REJ_NO_RATE,       /* "no_rate": currency without a rate
                               (not produced today: a file's currency
                               is checked at start, adapters price in
                               USD) */
  TW_CAT_REJ_DUPLICATE,     /* "duplicate": same offer earlier in the
                               source */
  TW_CAT_REJ_NO_ACCEL_PRICE, /* "no_accelerator_price": a machine whose
                                bundled accelerators the catalog prices
                                in rows of their own, none of which is
                                there (never offered without them) */
  TW_CAT_REJ_COUNT
};

/* What was noticed about a row that was still normalized. */
enum tw_cat_note {
  TW_CAT_NOTE_SPOT_NOT_OFFERED = 0, /* "spot_not_offered": empty SpotPrice */
  TW_CAT_NOTE_OD_NOT_OFFERED,       /* "on_demand_not_offered" */
  TW_CAT_NOTE_ZERO_PRICE,           /* "zero_price": a 0 price, read as
                                       "not offered" */
  TW_CAT_NOTE_EXTRA_FIELDS,         /* "extra_fields_joined": the Azure
                                       Generation quirk */
  TW_CAT_NOTE_REGION_UNKNOWN,       /* "region_unknown": no country or
                                       jurisdiction */
  TW_CAT_NOTE_ZONE_NAME_UNKNOWN,    /* "zone_name_unknown": an AWS zone id
                                       without its name */
  TW_CAT_NOTE_ACCEL_UNKNOWN,        /* "accelerator_unknown": kept as
                                       written */
  TW_CAT_NOTE_ACCEL_FROM_TYPE,      /* "accelerator_from_type": unnamed,
                                       named from the type */
  TW_CAT_NOTE_ACCEL_UNNAMED,        /* "accelerator_unnamed": a count
                                       without a name, dropped */
  TW_CAT_NOTE_ACCEL_FRACTION,       /* "accelerator_fraction": a share of
                                       one device */
  TW_CAT_NOTE_VCPU_FRACTION,        /* "vcpu_fraction": rounded down */
  TW_CAT_NOTE_ARCH_GUESSED,         /* "arch_from_type" */
  TW_CAT_NOTE_PRICE_ROUNDED,        /* "price_rounded": more than six
                                       decimals */
  TW_CAT_NOTE_ACCEL_BUNDLED,        /* "accelerator_bundled": a machine's
                                       accelerators priced in their own
                                       row, added to its price */
  TW_CAT_NOTE_ACCEL_ATTACHED,       /* "accelerator_attached": an
                                       accelerator-only row whose price
                                       went into machine offers */
  TW_CAT_NOTE_COUNT
};

const char *tw_cat_reject_str(enum tw_cat_reject r);
const char *tw_cat_note_str(enum tw_cat_note n);

/* Rows that named an accelerator and were rejected, per accelerator (its
 * canonical name, else as written): what a plan for it that fits nowhere
 * tells (api/h_plan.c).  The first TW_CAT_ACCEL_REJ_MAX names. */
#define TW_CAT_ACCEL_REJ_MAX 24
struct tw_cat_accel_rej {
  char accel[32];
  uint64_t rows;
  uint64_t first_line;          /* an example */
  enum tw_cat_reject first_why; /* its reason */
};

/* Counts of one ingestion. */
struct tw_cat_report {
  uint64_t rows;       /* data rows read (header excluded) */
  uint64_t normalized; /* rows that gave at least one offer */
  uint64_t offers;     /* offers made (a row gives one or two) */
  uint64_t rejected[TW_CAT_REJ_COUNT];
  uint64_t notes[TW_CAT_NOTE_COUNT];
  uint64_t first_rejected_line[TW_CAT_REJ_COUNT]; /* an example; 0 none */
  struct tw_cat_accel_rej accel_rejected[TW_CAT_ACCEL_REJ_MAX];
  size_t n_accel_rejected;
};

/* Counts one rejected row of accelerator accel in r. */
void tw_cat_report_accel_reject(struct tw_cat_report *r, const char *accel,
                                uint64_t line, enum tw_cat_reject why);

/* rows == normalized + sum(rejected): the invariant the tests check. */
uint64_t tw_cat_report_rejected(const struct tw_cat_report *r);
void tw_cat_report_add(struct tw_cat_report *into,
                       const struct tw_cat_report *from);

struct tw_cat_builder; /* catalog_int.h */
struct tw_regions;
struct tw_rate;
struct tw_provider_ops;

/* One source file of the SkyPilot catalog format. */
struct tw_csv_opts {
  const char *provider;       /* "aws", "azure", "gcp", "alibaba"; required */
  const char *account;        /* NULL: the provider's name */
  const struct tw_rate *rate; /* the source's currency; NULL: USD */
  const char *columns;        /* the header for a file without one
                                 ("Price,SpotPrice,Region,AvailabilityZone");
                                 NULL: the first line is the header */
  const char *instance_type;  /* for files without an InstanceType column */
  const struct tw_csv_specs *specs; /* joined on InstanceType; may be NULL */
  const struct tw_regions *regions; /* NULL: no geography labels */
  /* The adapter registry (providers/registry.h), borrowed: the provider's
   * info block gives its billing rule, zone ids and what its type names
   * imply (billing/catalog/clouds.h; the catalog-only clouds such as gcp
   * need none).  NULL: only the catalog-only clouds have rules. */
  const struct tw_provider_ops *const *adapters;
  uint16_t source;     /* source index recorded in each offer */
  int64_t observed_ms; /* when these prices were seen (file time) */
};

/* Reads every row of data[0..len) into builder b and adds the counts to
 * *rep.  TW_E_INVALID (with nothing added) when the file itself is
 * unusable: no header, or no Region, price or instance type column. */
enum tw_rc tw_csv_ingest(const char *data, size_t len,
                         const struct tw_csv_opts *o, struct tw_cat_builder *b,
                         struct tw_cat_report *rep, struct tw_err *err);

/* A specs table: the columns of a catalog's shape (InstanceType,
 * AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Arch) for
 * files that carry only prices and locations per row. */
struct tw_csv_specs;
enum tw_rc tw_csv_specs_load(const char *data, size_t len,
                             struct tw_csv_specs **out, struct tw_err *err);
void tw_csv_specs_free(struct tw_csv_specs *s);

#endif
