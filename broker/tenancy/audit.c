/* audit.c - the SHA-256 chained audit log (see audit.h). */
#include "broker/tenancy/audit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/core/store.h"

struct tw_audit {
  struct tw_store *store;
  struct tw_clock *clock;
};

/* ---- hashing ------------------------------------------------------------- */

void tw_audit_entry_hash(const struct tw_audit_entry *e, const char *prev_hex,
                         char out[TW_AUDIT_HASH_HEX]) {
  tw_store_audit_hash(e, prev_hex, out);
}

void tw_audit_entry_release(struct tw_audit_entry *e) {
  if (!e)
    return;
  free(e->principal);
  free(e->tenant);
  free(e->action);
  free(e->object);
  free(e->outcome);
  free(e->request_id);
  free(e->detail);
  memset(e, 0, sizeof *e);
}

void tw_audit_entries_free(struct tw_audit_entry *e, size_t n) {
  tw_store_audit_entries_free(e, n);
}

/* An entry whose hash fails may still be a genuine record moved to
 * another place: its content hashes right under the sequence it was
 * written with.  Looks nearby (reordering moves entries a little) and
 * returns that sequence, or 0. */
static int64_t written_as(const struct tw_audit_entry *e) {
  struct tw_audit_entry probe = *e;
  char h[TW_AUDIT_HASH_HEX];
  for (int64_t d = 1; d <= 64; d++)
    for (int sgn = -1; sgn <= 1; sgn += 2) {
      probe.seq = e->seq + sgn * d;
      if (probe.seq < 1)
        continue;
      tw_audit_entry_hash(&probe, e->prev_hash, h);
      if (!strcmp(h, e->hash))
        return probe.seq;
    }
  return 0;
}

enum tw_rc tw_audit_verify_entries(const struct tw_audit_entry *e, size_t n,
                                   int64_t first_seq, const char *prev_hex,
                                   struct tw_err *err) {
  char prev[TW_AUDIT_HASH_HEX], h[TW_AUDIT_HASH_HEX];
  snprintf(prev, sizeof prev, "%s", prev_hex ? prev_hex : TW_AUDIT_HASH_ZERO);
  int64_t want = first_seq;
  for (size_t i = 0; i < n; i++, want++) {
    const struct tw_audit_entry *x = &e[i];
    tw_audit_entry_hash(x, x->prev_hash, h);
    if (strcmp(h, x->hash)) {
      int64_t orig = written_as(x);
      if (orig)
        return tw_err_set(
            err, TW_E_CONFLICT,
            "entry %" PRId64 " is out of place: it holds the record "
            "written as entry %" PRId64 " (entries were reordered)",
            x->seq, orig);
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64 " was altered: its content does not "
                        "match its hash",
                        x->seq);
    }
    if (x->seq > want)
      return tw_err_set(
          err, TW_E_CONFLICT,
          want == x->seq - 1
              ? "entry %" PRId64 " was removed (the log goes from "
                "entry %" PRId64 " to entry %" PRId64 ")"
              : "entries from %" PRId64 " were removed (the log "
                "goes from entry %" PRId64 " to entry %" PRId64 ")",
          want, want - 1, x->seq);
    if (x->seq < want)
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64
                        " is out of place: it follows entry %" PRId64,
                        x->seq, want - 1);
    if (strcmp(x->prev_hash, prev))
      return tw_err_set(err, TW_E_CONFLICT,
                        "entry %" PRId64 " does not follow entry %" PRId64
                        ": its link does not match (an entry was replaced, "
                        "removed or reordered)",
                        x->seq, x->seq - 1);
    memcpy(prev, x->hash, sizeof prev);
  }
  return TW_OK;
}

/* ---- store ----------------------------------------------------------------
 */

enum tw_rc tw_audit_open(struct tw_store *store, struct tw_clock *clock,
                         struct tw_audit **out, struct tw_err *err) {
  (void)err;
  struct tw_audit *a = tw_calloc(1, sizeof *a);
  a->store = store;
  a->clock = clock ? clock : tw_clock_real();
  *out = a;
  return TW_OK;
}

void tw_audit_free(struct tw_audit *a) { free(a); }

enum tw_rc tw_audit_append(struct tw_audit *a, const struct tw_audit_event *ev,
                           int64_t *seq_out, struct tw_err *err) {
  return tw_store_audit_append(a->store, ev, tw_clock_now_ms(a->clock), seq_out,
                               err);
}

enum tw_rc tw_audit_list(struct tw_audit *a, const struct tw_audit_filter *f,
                         struct tw_audit_entry **out, size_t *n,
                         int64_t *next_after, struct tw_err *err) {
  struct tw_audit_filter g = *f;
  if (g.limit < 1 || g.limit > 10000)
    return tw_err_field(err, TW_E_INVALID, "limit",
                        "limit: expected 1 to 10000, got %d", g.limit);
  enum tw_rc rc = tw_store_audit_list(a->store, &g, out, n, err);
  if (rc)
    return rc;
  if (next_after)
    *next_after = *n == (size_t)g.limit ? (*out)[*n - 1].seq : 0;
  return TW_OK;
}

/* The walk shared by the store and file forms: pages of 1000 oldest first,
 * each checked against the last hash of the page before. */
typedef enum tw_rc (*page_fn)(void *ctx, const struct tw_audit_filter *f,
                              struct tw_audit_entry **out, size_t *n,
                              struct tw_err *err);

static enum tw_rc walk(page_fn page, void *ctx, int64_t *entries,
                       char head_hex[TW_AUDIT_HASH_HEX], struct tw_err *err) {
  struct tw_audit_filter f = {.limit = 1000};
  char prev[TW_AUDIT_HASH_HEX];
  memcpy(prev, TW_AUDIT_HASH_ZERO, sizeof prev);
  int64_t count = 0, next_seq = 1;
  for (;;) {
    struct tw_audit_entry *items = NULL;
    size_t n = 0;
    enum tw_rc rc = page(ctx, &f, &items, &n, err);
    if (rc)
      return rc;
    if (n == 0) {
      free(items);
      break;
    }
    rc = tw_audit_verify_entries(items, n, next_seq, prev, err);
    if (rc == TW_OK) {
      memcpy(prev, items[n - 1].hash, sizeof prev);
      next_seq = items[n - 1].seq + 1;
      f.after_seq = items[n - 1].seq;
      count += (int64_t)n;
    }
    bool last = n < (size_t)f.limit;
    tw_audit_entries_free(items, n);
    if (rc)
      return rc;
    if (last)
      break;
  }
  if (entries)
    *entries = count;
  if (head_hex)
    memcpy(head_hex, prev, TW_AUDIT_HASH_HEX);
  return TW_OK;
}

static enum tw_rc page_store(void *ctx, const struct tw_audit_filter *f,
                             struct tw_audit_entry **out, size_t *n,
                             struct tw_err *err) {
  struct tw_audit *au = ctx;
  return tw_store_audit_list(au->store, f, out, n, err);
}

enum tw_rc tw_audit_verify(struct tw_audit *a, int64_t *entries,
                           char head_hex[TW_AUDIT_HASH_HEX],
                           struct tw_err *err) {
  return walk(page_store, a, entries, head_hex, err);
}

static enum tw_rc page_file(void *ctx, const struct tw_audit_filter *f,
                            struct tw_audit_entry **out, size_t *n,
                            struct tw_err *err) {
  return tw_store_audit_file_list(ctx, f, out, n, err);
}

enum tw_rc tw_audit_verify_file(const char *db_path, int64_t *entries,
                                char head_hex[TW_AUDIT_HASH_HEX],
                                struct tw_err *err) {
  struct tw_store_audit_file *f = NULL;
  enum tw_rc rc = tw_store_audit_file_open(db_path, &f, err);
  if (rc == TW_OK)
    rc = walk(page_file, f, entries, head_hex, err);
  tw_store_audit_file_close(f);
  return rc;
}

void tw_audit_entry_json(const struct tw_audit_entry *e, struct tw_buf *out) {
  char at[40];
  tw_time_fmt_rfc3339(e->at_ms, at, sizeof at);
  tw_buf_printf(out,
                "{\"seq\":%" PRId64 ",\"at\":\"%s\",\"at_ms\":%" PRId64
                ",\"principal\":",
                e->seq, at, e->at_ms);
  tw_buf_json_str(out, e->principal ? e->principal : "");
  tw_buf_adds(out, ",\"tenant\":");
  tw_buf_json_str(out, e->tenant ? e->tenant : "");
  tw_buf_adds(out, ",\"action\":");
  tw_buf_json_str(out, e->action ? e->action : "");
  tw_buf_adds(out, ",\"object\":");
  tw_buf_json_str(out, e->object ? e->object : "");
  tw_buf_adds(out, ",\"outcome\":");
  tw_buf_json_str(out, e->outcome ? e->outcome : "");
  tw_buf_adds(out, ",\"request_id\":");
  tw_buf_json_str(out, e->request_id ? e->request_id : "");
  tw_buf_adds(out, ",\"detail\":");
  tw_buf_json_str(out, e->detail ? e->detail : "");
  tw_buf_printf(out, ",\"prev_hash\":\"%s\",\"hash\":\"%s\"}", e->prev_hash,
                e->hash);
}
