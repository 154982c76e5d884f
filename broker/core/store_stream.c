/* store_stream.c - the SQL of the event stream (store_stream.h). */
#include "broker/core/store_stream.h"

#include <string.h>

#include "broker/core/store_int.h"

static const char SQL_LAST[] = "SELECT COALESCE(MAX(seq), 0) FROM job_events";
/* One constant statement: the optional filters are bound as NULL.  The
 * range on the primary key comes first, so a reader near the head reads
 * only the few newest rows whatever the filters. */
static const char SQL_SINCE[] =
    "SELECT e.seq, e.at_ms, e.job_id, j.tenant, e.from_state, e.to_state,"
    " e.reason FROM job_events e JOIN jobs j ON j.id = e.job_id"
    " WHERE e.seq > ?1 AND (?3 IS NULL OR j.tenant = ?3)"
    " AND (?4 IS NULL OR e.job_id = ?4) ORDER BY e.seq LIMIT ?2";

struct last_arg {
  int64_t *seq;
};

static enum tw_rc op_last(struct tw_store *s, struct tw_db *db, void *arg,
                          struct tw_err *err) {
  struct last_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LAST, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    *a->seq = tw_db_column_int64(st, 0);
  tw_db_reset(st);
  if (r != TW_DB_ROW)
    return store__db_err(db, err, "events: last seq");
  return TW_OK;
}

enum tw_rc tw_store_events_last_seq(struct tw_store *s, int64_t *seq,
                                    struct tw_err *err) {
  struct last_arg a = {.seq = seq};
  *seq = 0;
  return tw_store_read(s, op_last, &a, err);
}

struct since_arg {
  int64_t after;
  const char *tenant, *job;
  struct tw_stream_event *out;
  size_t max, *n;
};

static enum tw_rc op_since(struct tw_store *s, struct tw_db *db, void *arg,
                           struct tw_err *err) {
  struct since_arg *a = arg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_SINCE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->after);
  tw_db_bind_int64(st, 2, (int64_t)a->max);
  store__bind_opt(st, 3, a->tenant);
  store__bind_opt(st, 4, a->job);
  int r = TW_DB_DONE;
  while (*a->n < a->max && (r = tw_db_step(st)) == TW_DB_ROW) {
    struct tw_stream_event *e = &a->out[(*a->n)++];
    e->seq = tw_db_column_int64(st, 0);
    e->at_ms = tw_db_column_int64(st, 1);
    store__col(st, 2, e->job_id, sizeof e->job_id);
    store__col(st, 3, e->tenant, sizeof e->tenant);
    store__col(st, 4, e->from, sizeof e->from);
    store__col(st, 5, e->to, sizeof e->to);
    store__col(st, 6, e->reason, sizeof e->reason);
  }
  if (*a->n < a->max && r != TW_DB_DONE) {
    tw_db_reset(st);
    return store__db_err(db, err, "events: since");
  }
  tw_db_reset(st);
  return TW_OK;
}

enum tw_rc tw_store_events_since(struct tw_store *s, int64_t after,
                                 const char *tenant, const char *job,
                                 struct tw_stream_event *out, size_t max,
                                 size_t *n, struct tw_err *err) {
  struct since_arg a = {.after = after,
                        .tenant = tenant,
                        .job = job,
                        .out = out,
                        .max = max,
                        .n = n};
  *n = 0;
  return tw_store_read(s, op_since, &a, err);
}
