/* store_audit.h - the audit log's table (audit_log) and its hash chain.
 *
 * The structs are the audit module's (broker/tenancy/audit.h includes this
 * header and documents the chain); the store keeps them.  The store also
 * computes each entry's link: the writer reads the last entry and hashes
 * the new ones inside the transaction that appends them (once per group
 * commit, at its end: the entries of its operations that did not fail,
 * in their order), so concurrent appends form one chain, and a store
 * function that changes something
 * another table records (a budget alert, a job's owner, the first admin)
 * appends its entry in its own transaction: the change and its entry
 * commit together or not at all.  Thread-safe, as the store. */
#ifndef TW_CORE_STORE_AUDIT_H
#define TW_CORE_STORE_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

#define TW_AUDIT_HASH_HEX 65 /* 64 hex digits and NUL */
/* The link before the first entry. */
#define TW_AUDIT_HASH_ZERO                                                     \
  "0000000000000000000000000000000000000000000000000000000000000000"

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

/* One entry as read (owned strings: tw_store_audit_entries_free, or
 * tw_audit_entry_release of audit.h). */
struct tw_audit_entry {
  int64_t seq;
  int64_t at_ms;
  char *principal, *tenant, *action, *object, *outcome, *request_id, *detail;
  char prev_hash[TW_AUDIT_HASH_HEX];
  char hash[TW_AUDIT_HASH_HEX];
};

struct tw_audit_filter {
  int64_t after_seq;     /* entries with seq > after_seq */
  const char *tenant;    /* NULL: any */
  const char *principal; /* NULL: any */
  const char *action;    /* NULL: any; exact match */
  const char *outcome;   /* NULL: any */
  int64_t since_ms;      /* 0: no lower bound */
  int64_t until_ms;      /* 0: no upper bound (exclusive) */
  int limit;             /* 1..10000 (the caller checks) */
};

/* The hash of e's fields after prev_hex (64 hex digits; NULL: the zero
 * link), as 64 hex digits into out: the chain's one definition (audit.h
 * gives the encoding).  Pure. */
void tw_store_audit_hash(const struct tw_audit_entry *e, const char *prev_hex,
                         char out[TW_AUDIT_HASH_HEX]);

/* Frees the strings of n entries and the array.  NULL is a no-op. */
void tw_store_audit_entries_free(struct tw_audit_entry *e, size_t n);

/* Appends one entry at at_ms as the last + 1, linked to the last, and
 * returns once it is durable; *seq_out (may be NULL) receives its
 * sequence number. */
enum tw_rc tw_store_audit_append(struct tw_store *s,
                                 const struct tw_audit_event *ev, int64_t at_ms,
                                 int64_t *seq_out, struct tw_err *err);

/* The same inside a write function (tw_store_write's fn, the writer
 * thread, db its connection): the entry commits with that write, and
 * not at all when the write fails.  *seq_out (may be NULL) is set when
 * the batch's entries are linked, after fn returned: it must outlive
 * fn (the caller of tw_store_write's). */
struct tw_db;
enum tw_rc tw_store_audit_append_in(struct tw_store *s, struct tw_db *db,
                                    const struct tw_audit_event *ev,
                                    int64_t at_ms, int64_t *seq_out,
                                    struct tw_err *err);

/* Up to f->limit entries matching f, oldest first, into *out (an array of
 * *n; tw_store_audit_entries_free).  f->limit must be positive. */
enum tw_rc tw_store_audit_list(struct tw_store *s,
                               const struct tw_audit_filter *f,
                               struct tw_audit_entry **out, size_t *n,
                               struct tw_err *err);

/* A database file read directly, without a daemon (`tradewind audit
 * verify --db FILE`): opened read-only.  TW_E_IO when it cannot be opened
 * or holds no audit log. */
struct tw_store_audit_file;
enum tw_rc tw_store_audit_file_open(const char *path,
                                    struct tw_store_audit_file **out,
                                    struct tw_err *err);
/* As tw_store_audit_list, from the file. */
enum tw_rc tw_store_audit_file_list(struct tw_store_audit_file *f,
                                    const struct tw_audit_filter *flt,
                                    struct tw_audit_entry **out, size_t *n,
                                    struct tw_err *err);
/* NULL is a no-op. */
void tw_store_audit_file_close(struct tw_store_audit_file *f);

#endif
