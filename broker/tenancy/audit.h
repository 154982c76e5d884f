/* audit.h - the append-only audit log, chained with SHA-256.
 *
 * Every mutating API request and every scheduler decision is one entry:
 * sequence number, time, principal, tenant, action, object, outcome,
 * request id and a free-text detail.  Each entry stores the hash of its
 * predecessor and its own:
 *
 *   hash(n) = SHA-256( hash(n-1) as 32 raw bytes ||
 *                      for each field in the order above:
 *                        decimal length ":" bytes "\n" )
 *
 * with 32 zero bytes before the first entry.  Length prefixes make the
 * encoding unambiguous (no field can smuggle a separator).  Altering an
 * entry breaks its own hash; removing or reordering entries breaks the
 * sequence or the links; tw_audit_verify() names the first entry where
 * the chain stops holding.  Removing the newest entries leaves a shorter
 * chain that still holds: the head (GET /v1/audit/verify) must be kept
 * elsewhere to detect that (docs/security.md).
 *
 * Appends go through the store's group commit; the writer thread computes
 * the link inside the transaction, so concurrent appends form one chain.
 * Thread-safe. */
#ifndef TW_BROKER_AUDIT_H
#define TW_BROKER_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"

struct tw_store;
struct tw_audit;
struct sqlite3;

#define TW_AUDIT_HASH_HEX 65 /* 64 hex digits and NUL */

/* One entry as written: strings are borrowed, NULL counts as "". */
struct tw_audit_event {
  const char *principal;  /* "admin", "sched", "anonymous" */
  const char *tenant;     /* "" for global actions */
  const char *action;     /* "POST /v1/jobs", "sched.place", "budget.stop" */
  const char *object;     /* "j-...", "tenant/ml", "" */
  const char *outcome;    /* "ok", "denied", "refused", "error" */
  const char *request_id; /* "" outside requests */
  const char *detail;     /* free text: status, reason, numbers */
};

/* One entry as read (owned strings: tw_audit_entry_release). */
struct tw_audit_entry {
  int64_t seq;
  int64_t at_ms;
  char *principal, *tenant, *action, *object, *outcome, *request_id, *detail;
  char prev_hash[TW_AUDIT_HASH_HEX];
  char hash[TW_AUDIT_HASH_HEX];
};
void tw_audit_entry_release(struct tw_audit_entry *e);
void tw_audit_entries_free(struct tw_audit_entry *e, size_t n);

/* The hash of e's fields after prev_hex (64 hex digits; all zeros for the
 * first entry), as 64 hex digits into out.  Pure: the CLI verifies
 * exported entries with it. */
void tw_audit_entry_hash(const struct tw_audit_entry *e, const char *prev_hex,
                         char out[TW_AUDIT_HASH_HEX]);

/* Walks entries in the order given and checks sequence, links and hashes.
 * first_seq is the sequence the first entry must carry (1 for a whole
 * log) and prev_hex the hash before it (NULL: zeros).  Returns TW_OK, or
 * TW_E_CONFLICT with err->msg naming the first bad entry and why:
 * "entry 7 was altered: ...", "entries 5..6 are missing before entry 7",
 * "entry 9 is out of place: ...". */
enum tw_rc tw_audit_verify_entries(const struct tw_audit_entry *e, size_t n,
                                   int64_t first_seq, const char *prev_hex,
                                   struct tw_err *err);

/* Opens the log over the store (migrates its table).  *out is owned. */
enum tw_rc tw_audit_open(struct tw_store *store, struct tw_clock *clock,
                         struct tw_audit **out, struct tw_err *err);
void tw_audit_free(struct tw_audit *a);

/* Appends one entry and returns once it is durable; *seq_out (may be
 * NULL) receives its sequence number. */
enum tw_rc tw_audit_append(struct tw_audit *a, const struct tw_audit_event *ev,
                           int64_t *seq_out, struct tw_err *err);

/* For a module's own tw_store_write() function: appends inside that
 * transaction, so the change and its entry commit together.  at_ms is the
 * entry's time.  Writer thread only. */
enum tw_rc tw_audit_append_in(struct tw_store *s, struct sqlite3 *db,
                              const struct tw_audit_event *ev, int64_t at_ms,
                              int64_t *seq_out, struct tw_err *err);

struct tw_audit_filter {
  int64_t after_seq;     /* entries with seq > after_seq */
  const char *tenant;    /* NULL: any */
  const char *principal; /* NULL: any */
  const char *action;    /* NULL: any; exact match */
  const char *outcome;   /* NULL: any */
  int64_t since_ms;      /* 0: no lower bound */
  int64_t until_ms;      /* 0: no upper bound (exclusive) */
  int limit;             /* 1..10000 */
};

/* Oldest first.  *next_after is the after_seq of the next page, 0 when
 * this was the last.  tw_audit_entries_free(*out, *n). */
enum tw_rc tw_audit_list(struct tw_audit *a, const struct tw_audit_filter *f,
                         struct tw_audit_entry **out, size_t *n,
                         int64_t *next_after, struct tw_err *err);

/* Verifies the whole chain in the store, page by page.  On success
 * *entries and head_hex (may be NULL) receive the count and the last
 * hash.  TW_E_CONFLICT names the first bad entry (see above). */
enum tw_rc tw_audit_verify(struct tw_audit *a, int64_t *entries,
                           char head_hex[TW_AUDIT_HASH_HEX],
                           struct tw_err *err);

/* Verifies a sqlite file directly (opened read-only, no daemon needed):
 * `tradewind audit verify --db FILE`. */
enum tw_rc tw_audit_verify_file(const char *db_path, int64_t *entries,
                                char head_hex[TW_AUDIT_HASH_HEX],
                                struct tw_err *err);

/* Appends e as one JSON object (no newline): the shape of GET /v1/audit
 * items and of the JSON lines export. */
void tw_audit_entry_json(const struct tw_audit_entry *e, struct tw_buf *out);

#endif
