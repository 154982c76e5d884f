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
 * the link inside the transaction (broker/core/store_audit.c), so
 * concurrent appends form one chain, and a change another module records
 * through the store (a budget alert, a job's owner) carries its entry in
 * its own transaction.  Thread-safe. */
#ifndef TW_BROKER_AUDIT_H
#define TW_BROKER_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/core/store_audit.h"

struct tw_store;
struct tw_audit;

/* struct tw_audit_event (one entry as written), struct tw_audit_entry (as
 * read), struct tw_audit_filter and TW_AUDIT_HASH_HEX are declared in
 * broker/core/store_audit.h, with the table. */
void tw_audit_entry_release(struct tw_audit_entry *e);
void tw_audit_entries_free(struct tw_audit_entry *e, size_t n);

/* The hash of e's fields after prev_hex (64 hex digits; all zeros for the
 * first entry), as 64 hex digits into out: tw_store_audit_hash, the one
 * the store links entries with.  Pure: the CLI verifies exported entries
 * with it. */
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

/* Opens the log over the store (tw_store_open migrated its table).  *out
 * is owned. */
enum tw_rc tw_audit_open(struct tw_store *store, struct tw_clock *clock,
                         struct tw_audit **out, struct tw_err *err);
void tw_audit_free(struct tw_audit *a);

/* Appends one entry and returns once it is durable; *seq_out (may be
 * NULL) receives its sequence number. */
enum tw_rc tw_audit_append(struct tw_audit *a, const struct tw_audit_event *ev,
                           int64_t *seq_out, struct tw_err *err);

/* Oldest first; f->limit 1..10000 (TW_E_INVALID otherwise).  *next_after
 * is the after_seq of the next page, 0 when
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
