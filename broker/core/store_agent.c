/* store_agent.c - the SQL of what tradewind-agent reports
 * (store_agent.h). */
#include "broker/core/store_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/base/log.h"
#include "broker/core/store_int.h"

/* ---- statements ---------------------------------------------------------- */

static const char SQL_KEY_GET[] = "SELECT key FROM agent_key WHERE id = 1";
static const char SQL_KEY_ADD[] =
    "INSERT OR IGNORE INTO agent_key (id, key) VALUES (1, ?1)";
static const char SQL_KEY_DROP[] = "DELETE FROM agent_key WHERE id = 1";

static const char SQL_ADD[] =
    "INSERT OR IGNORE INTO agent_attempts (attempt_id, job_id, client_token,"
    " token_hash, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)";

#define AGENT_COLS                                                             \
  "g.attempt_id, g.job_id, g.client_token, g.created_ms, g.registered_ms,"     \
  " g.instance_id, g.cloud, g.agent_version, g.phase, g.phase_ms,"             \
  " g.last_hb_ms, g.checkpoint_ms, g.progress_s, g.exit_ms, g.has_code,"       \
  " g.exit_code, g.signal, g.started_ms, g.ended_ms, g.after_notice,"          \
  " g.cancel_ms, g.out_bytes, g.err_bytes, a.state"

static const char SQL_BY_HASH[] =
    "SELECT " AGENT_COLS " FROM agent_attempts g JOIN attempts a"
    " ON a.id = g.attempt_id WHERE g.token_hash = ?1";
static const char SQL_GET[] =
    "SELECT " AGENT_COLS " FROM agent_attempts g JOIN attempts a"
    " ON a.id = g.attempt_id WHERE g.attempt_id = ?1";

static const char SQL_REG[] =
    "UPDATE agent_attempts SET registered_ms = ?2, instance_id = ?3,"
    " cloud = ?4, metadata = ?5, agent_version = ?6"
    " WHERE attempt_id = ?1 AND registered_ms = 0";
static const char SQL_HB[] =
    "UPDATE agent_attempts SET last_hb_ms = max(last_hb_ms, ?2),"
    " phase = CASE WHEN ?3 = '' OR phase = 'exited' THEN phase ELSE ?3 END,"
    " phase_ms = CASE WHEN ?3 = '' OR phase = ?3 OR phase = 'exited'"
    " THEN phase_ms ELSE ?2 END"
    " WHERE attempt_id = ?1";
static const char SQL_CKPT[] =
    "UPDATE agent_attempts SET checkpoint_ms = max(checkpoint_ms, ?2),"
    " progress_s = max(progress_s, ?3) WHERE attempt_id = ?1";
static const char SQL_CANCEL[] = "UPDATE agent_attempts SET cancel_ms = ?2"
                                 " WHERE attempt_id = ?1 AND cancel_ms = 0";
static const char SQL_CKPT_SENT[] =
    "UPDATE agent_attempts SET ckpt_sent_ms = ?2"
    " WHERE attempt_id = ?1 AND ckpt_sent_ms < ?2";
static const char SQL_EXIT[] =
    "UPDATE agent_attempts SET exit_ms = ?2, has_code = ?3, exit_code = ?4,"
    " signal = ?5, started_ms = ?6, ended_ms = ?7, after_notice = ?8,"
    " phase = 'exited', last_hb_ms = max(last_hb_ms, ?2)"
    " WHERE attempt_id = ?1 AND exit_ms = 0";

static const char SQL_NOTICE_ADD[] =
    "INSERT OR IGNORE INTO agent_notices (attempt_id, event_id, kind, action,"
    " source, deadline_ms, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_NOTICE_NEW[] =
    "SELECT event_id, kind, action, source, deadline_ms, at_ms"
    " FROM agent_notices WHERE attempt_id = ?1 AND applied = 0"
    " ORDER BY at_ms, event_id";
static const char SQL_NOTICE_DONE[] =
    "UPDATE agent_notices SET applied = 1 WHERE attempt_id = ?1"
    " AND event_id = ?2";

static const char SQL_LOG_LEN[] =
    "SELECT out_bytes, err_bytes FROM agent_attempts WHERE attempt_id = ?1";
static const char SQL_LOG_ADD[] =
    "INSERT INTO agent_logs (attempt_id, stream, off, data, seg, pos, len)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_LOG_OUT[] =
    "UPDATE agent_attempts SET out_bytes = ?2 WHERE attempt_id = ?1";
static const char SQL_LOG_ERR[] =
    "UPDATE agent_attempts SET err_bytes = ?2 WHERE attempt_id = ?1";
static const char SQL_LOG_READ[] =
    "SELECT off, data, seg, pos, len FROM agent_logs WHERE attempt_id = ?1"
    " AND stream = ?2 AND off + len > ?3 ORDER BY off";

/* ---- the key ------------------------------------------------------------- */

struct key_arg {
  bool found;
  unsigned char *key;
};

static enum tw_rc op_key_get(struct tw_store *s, struct tw_db *db, void *varg,
                             struct tw_err *err) {
  struct key_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_KEY_GET, err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW && tw_db_column_bytes(st, 0) == 32) {
    memcpy(a->key, tw_db_column_blob(st, 0), 32);
    a->found = true;
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read key");
  return TW_OK;
}

enum tw_rc tw_store_agent_key_get(struct tw_store *s, bool *found,
                                  unsigned char key[32], struct tw_err *err) {
  struct key_arg a = {.key = key};
  enum tw_rc rc = tw_store_read(s, op_key_get, &a, err);
  *found = rc == TW_OK && a.found;
  return rc;
}

static enum tw_rc op_key_init(struct tw_store *s, struct tw_db *db, void *varg,
                              struct tw_err *err) {
  struct key_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_KEY_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_blob(st, 1, a->key, 32);
  enum tw_rc rc = store__step_done(db, st, "agent: store key", err);
  if (rc)
    return rc;
  rc = op_key_get(s, db, a, err);
  if (rc == TW_OK && !a->found)
    return tw_err_set(err, TW_E_IO, "agent: the stored key is not 32 bytes");
  return rc;
}

enum tw_rc tw_store_agent_key_init(struct tw_store *s, unsigned char key[32],
                                   struct tw_err *err) {
  struct key_arg a = {.key = key};
  return tw_store_write(s, op_key_init, &a, err);
}

static enum tw_rc op_key_drop(struct tw_store *s, struct tw_db *db, void *varg,
                              struct tw_err *err) {
  (void)varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_KEY_DROP, err);
  if (!st)
    return TW_E_IO;
  return store__step_done(db, st, "agent: drop key", err);
}

enum tw_rc tw_store_agent_key_drop(struct tw_store *s, struct tw_err *err) {
  return tw_store_write(s, op_key_drop, NULL, err);
}

/* ---- attempts ------------------------------------------------------------ */

struct add_arg {
  int64_t id, at;
  const char *job, *token, *hash;
};

static enum tw_rc op_add(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct add_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  store__bind_text(st, 2, a->job);
  store__bind_text(st, 3, a->token);
  store__bind_text(st, 4, a->hash);
  tw_db_bind_int64(st, 5, a->at);
  return store__step_done(db, st, "agent: add attempt", err);
}

enum tw_rc tw_store_agent_add(struct tw_store *s, int64_t attempt_id,
                              const char *job_id, const char *client_token,
                              const char *token_hash_hex, int64_t at_ms,
                              struct tw_err *err) {
  struct add_arg a = {.id = attempt_id,
                      .at = at_ms,
                      .job = job_id,
                      .token = client_token,
                      .hash = token_hash_hex};
  return tw_store_write(s, op_add, &a, err);
}

static void row_of(struct tw_db_stmt *st, struct tw_store_agent *o) {
  memset(o, 0, sizeof *o);
  o->attempt_id = tw_db_column_int64(st, 0);
  store__col(st, 1, o->job_id, sizeof o->job_id);
  store__col(st, 2, o->client_token, sizeof o->client_token);
  o->created_ms = tw_db_column_int64(st, 3);
  o->registered_ms = tw_db_column_int64(st, 4);
  store__col(st, 5, o->instance_id, sizeof o->instance_id);
  store__col(st, 6, o->cloud, sizeof o->cloud);
  store__col(st, 7, o->agent_version, sizeof o->agent_version);
  store__col(st, 8, o->phase, sizeof o->phase);
  o->phase_ms = tw_db_column_int64(st, 9);
  o->last_hb_ms = tw_db_column_int64(st, 10);
  o->checkpoint_ms = tw_db_column_int64(st, 11);
  o->progress_s = tw_db_column_int64(st, 12);
  o->exit_ms = tw_db_column_int64(st, 13);
  o->has_code = tw_db_column_int(st, 14) != 0;
  o->exit_code = tw_db_column_int(st, 15);
  o->signal = tw_db_column_int(st, 16);
  o->started_ms = tw_db_column_int64(st, 17);
  o->ended_ms = tw_db_column_int64(st, 18);
  o->after_notice = tw_db_column_int(st, 19) != 0;
  o->cancel_ms = tw_db_column_int64(st, 20);
  o->out_bytes = tw_db_column_int64(st, 21);
  o->err_bytes = tw_db_column_int64(st, 22);
  const unsigned char *state = tw_db_column_text(st, 23);
  o->attempt_ended = state && !strcmp((const char *)state, "ended");
}

struct get_arg {
  const char *sql;
  const char *hash;
  int64_t id;
  bool found;
  struct tw_store_agent *out;
};

static enum tw_rc op_get(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct get_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, a->sql, err);
  if (!st)
    return TW_E_IO;
  if (a->hash)
    store__bind_text(st, 1, a->hash);
  else
    tw_db_bind_int64(st, 1, a->id);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    row_of(st, a->out);
    a->found = true;
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read attempt");
  return TW_OK;
}

enum tw_rc tw_store_agent_by_hash(struct tw_store *s,
                                  const char *token_hash_hex, bool *found,
                                  struct tw_store_agent *out,
                                  struct tw_err *err) {
  struct get_arg a = {.sql = SQL_BY_HASH, .hash = token_hash_hex, .out = out};
  memset(out, 0, sizeof *out);
  enum tw_rc rc = tw_store_read(s, op_get, &a, err);
  *found = rc == TW_OK && a.found;
  return rc;
}

enum tw_rc tw_store_agent_get(struct tw_store *s, int64_t attempt_id,
                              bool *found, struct tw_store_agent *out,
                              struct tw_err *err) {
  struct get_arg a = {.sql = SQL_GET, .id = attempt_id, .out = out};
  memset(out, 0, sizeof *out);
  enum tw_rc rc = tw_store_read(s, op_get, &a, err);
  *found = rc == TW_OK && a.found;
  return rc;
}

/* ---- reports ------------------------------------------------------------- */

struct reg_arg {
  const struct tw_store_agent_reg *r;
  bool first;
};

static enum tw_rc op_reg(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct reg_arg *a = varg;
  const struct tw_store_agent_reg *r = a->r;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_REG, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, r->attempt_id);
  tw_db_bind_int64(st, 2, r->at_ms > 0 ? r->at_ms : 1);
  store__bind_text(st, 3, r->instance_id);
  store__bind_text(st, 4, r->cloud);
  store__bind_text(st, 5, r->metadata_json ? r->metadata_json : "{}");
  store__bind_text(st, 6, r->agent_version);
  enum tw_rc rc = store__step_done(db, st, "agent: register", err);
  if (rc)
    return rc;
  a->first = tw_db_changes(db) > 0;
  if (!(st = tw_store_stmt(s, db, SQL_HB, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, r->attempt_id);
  tw_db_bind_int64(st, 2, r->at_ms);
  store__bind_text(st, 3, "");
  return store__step_done(db, st, "agent: register", err);
}

enum tw_rc tw_store_agent_register(struct tw_store *s,
                                   const struct tw_store_agent_reg *r,
                                   bool *first, struct tw_err *err) {
  struct reg_arg a = {.r = r};
  enum tw_rc rc = tw_store_write(s, op_reg, &a, err);
  if (first)
    *first = rc == TW_OK && a.first;
  return rc;
}

struct upd_arg {
  const char *sql, *what;
  int64_t id, a, b;
  const char *text;
  bool changed;
};

static enum tw_rc op_upd(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct upd_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, a->sql, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_int64(st, 2, a->a);
  if (a->text)
    store__bind_text(st, 3, a->text);
  else
    tw_db_bind_int64(st, 3, a->b);
  enum tw_rc rc = store__step_done(db, st, a->what, err);
  a->changed = rc == TW_OK && tw_db_changes(db) > 0;
  return rc;
}

/* op_upd for statements with two parameters */
static enum tw_rc op_upd_2(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct upd_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, a->sql, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_int64(st, 2, a->a);
  enum tw_rc rc = store__step_done(db, st, a->what, err);
  a->changed = rc == TW_OK && tw_db_changes(db) > 0;
  return rc;
}

enum tw_rc tw_store_agent_heartbeat(struct tw_store *s, int64_t attempt_id,
                                    const char *phase, int64_t at_ms,
                                    struct tw_err *err) {
  struct upd_arg a = {.sql = SQL_HB,
                      .what = "agent: heartbeat",
                      .id = attempt_id,
                      .a = at_ms,
                      .text = phase ? phase : ""};
  return tw_store_write(s, op_upd, &a, err);
}

struct beats_arg {
  const int64_t *ids, *at;
  size_t n;
};

static enum tw_rc op_beats(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct beats_arg *a = varg;
  for (size_t i = 0; i < a->n; i++) {
    struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_HB, err);
    if (!st)
      return TW_E_IO;
    tw_db_bind_int64(st, 1, a->ids[i]);
    tw_db_bind_int64(st, 2, a->at[i]);
    store__bind_text(st, 3, "");
    enum tw_rc rc = store__step_done(db, st, "agent: heartbeats", err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_store_agent_heartbeats(struct tw_store *s, const int64_t *ids,
                                     const int64_t *at_ms, size_t n,
                                     struct tw_err *err) {
  if (!n)
    return TW_OK;
  struct beats_arg a = {.ids = ids, .at = at_ms, .n = n};
  return tw_store_write(s, op_beats, &a, err);
}

enum tw_rc tw_store_agent_checkpoint(struct tw_store *s, int64_t attempt_id,
                                     int64_t at_ms, int64_t progress_s,
                                     struct tw_err *err) {
  struct upd_arg a = {.sql = SQL_CKPT,
                      .what = "agent: checkpoint",
                      .id = attempt_id,
                      .a = at_ms,
                      .b = progress_s};
  return tw_store_write(s, op_upd, &a, err);
}

enum tw_rc tw_store_agent_cancel(struct tw_store *s, int64_t attempt_id,
                                 int64_t at_ms, struct tw_err *err) {
  struct upd_arg a = {.sql = SQL_CANCEL,
                      .what = "agent: cancel",
                      .id = attempt_id,
                      .a = at_ms > 0 ? at_ms : 1};
  return tw_store_write(s, op_upd_2, &a, err);
}

enum tw_rc tw_store_agent_ckpt_sent(struct tw_store *s, int64_t attempt_id,
                                    int64_t requested_ms, bool *first,
                                    struct tw_err *err) {
  struct upd_arg a = {.sql = SQL_CKPT_SENT,
                      .what = "agent: checkpoint sent",
                      .id = attempt_id,
                      .a = requested_ms > 0 ? requested_ms : 1,
                      .b = 0};
  enum tw_rc rc = tw_store_write(s, op_upd_2, &a, err);
  if (first)
    *first = rc == TW_OK && a.changed;
  return rc;
}

struct exit_arg {
  const struct tw_store_agent_exit *e;
  bool first;
};

static enum tw_rc op_exit(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct exit_arg *a = varg;
  const struct tw_store_agent_exit *e = a->e;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_EXIT, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, e->attempt_id);
  tw_db_bind_int64(st, 2, e->at_ms > 0 ? e->at_ms : 1);
  tw_db_bind_int(st, 3, e->has_code);
  tw_db_bind_int(st, 4, e->exit_code);
  tw_db_bind_int(st, 5, e->signal);
  tw_db_bind_int64(st, 6, e->started_ms);
  tw_db_bind_int64(st, 7, e->ended_ms);
  tw_db_bind_int(st, 8, e->after_notice);
  enum tw_rc rc = store__step_done(db, st, "agent: exit", err);
  a->first = rc == TW_OK && tw_db_changes(db) > 0;
  return rc;
}

enum tw_rc tw_store_agent_exit(struct tw_store *s,
                               const struct tw_store_agent_exit *e, bool *first,
                               struct tw_err *err) {
  struct exit_arg a = {.e = e};
  enum tw_rc rc = tw_store_write(s, op_exit, &a, err);
  if (first)
    *first = rc == TW_OK && a.first;
  return rc;
}

/* ---- notices ------------------------------------------------------------- */

struct notice_arg {
  const struct tw_store_agent_notice *n;
  bool added;
};

static enum tw_rc op_notice_add(struct tw_store *s, struct tw_db *db, void *varg,
                                struct tw_err *err) {
  struct notice_arg *a = varg;
  const struct tw_store_agent_notice *n = a->n;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_NOTICE_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, n->attempt_id);
  store__bind_text(st, 2, n->event_id);
  store__bind_text(st, 3, n->kind);
  store__bind_text(st, 4, n->action);
  store__bind_text(st, 5, n->source);
  tw_db_bind_int64(st, 6, n->deadline_ms);
  tw_db_bind_int64(st, 7, n->at_ms);
  enum tw_rc rc = store__step_done(db, st, "agent: add notice", err);
  a->added = rc == TW_OK && tw_db_changes(db) > 0;
  return rc;
}

enum tw_rc tw_store_agent_notice_add(struct tw_store *s,
                                     const struct tw_store_agent_notice *n,
                                     bool *added, struct tw_err *err) {
  struct notice_arg a = {.n = n};
  enum tw_rc rc = tw_store_write(s, op_notice_add, &a, err);
  if (added)
    *added = rc == TW_OK && a.added;
  return rc;
}

struct notices_arg {
  int64_t id;
  struct tw_store_agent_notice *items;
  size_t n, cap;
};

static enum tw_rc op_notices_new(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  struct notices_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_NOTICE_NEW, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == a->cap) {
      a->cap = a->cap ? a->cap * 2 : 4;
      a->items = tw_realloc(a->items, a->cap * sizeof *a->items);
    }
    struct tw_store_agent_notice *n = &a->items[a->n++];
    memset(n, 0, sizeof *n);
    n->attempt_id = a->id;
    store__col(st, 0, n->event_id, sizeof n->event_id);
    store__col(st, 1, n->kind, sizeof n->kind);
    store__col(st, 2, n->action, sizeof n->action);
    store__col(st, 3, n->source, sizeof n->source);
    n->deadline_ms = tw_db_column_int64(st, 4);
    n->at_ms = tw_db_column_int64(st, 5);
  }
  tw_db_reset(st);
  if (r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read notices");
  return TW_OK;
}

enum tw_rc tw_store_agent_notices_new(struct tw_store *s, int64_t attempt_id,
                                      struct tw_store_agent_notice **out,
                                      size_t *n, struct tw_err *err) {
  struct notices_arg a = {.id = attempt_id};
  enum tw_rc rc = tw_store_read(s, op_notices_new, &a, err);
  if (rc) {
    free(a.items);
    a.items = NULL;
    a.n = 0;
  }
  *out = a.items;
  *n = a.n;
  return rc;
}

struct done_arg {
  int64_t id;
  const char *event;
};

static enum tw_rc op_notice_done(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  struct done_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_NOTICE_DONE, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  store__bind_text(st, 2, a->event);
  return store__step_done(db, st, "agent: notice applied", err);
}

enum tw_rc tw_store_agent_notice_applied(struct tw_store *s, int64_t attempt_id,
                                         const char *event_id,
                                         struct tw_err *err) {
  struct done_arg a = {.id = attempt_id, .event = event_id};
  return tw_store_write(s, op_notice_done, &a, err);
}

/* ---- logs ----------------------------------------------------------------
 *
 * A sqlite file's store keeps the agent's output out of its rows: the
 * bytes are appended to segment files in DB-logs/ (seg-000001, ...; a new
 * one past SEG_MAX), synced, and only then is the chunk's row (its
 * segment, position and length; data empty) committed with the stream's
 * length.  One fdatasync covers every chunk written before it, whatever
 * its attempt (a group: the first waiter syncs for all, the others wait
 * for it), and the rows commit in the writer's batches.  A read follows
 * the committed rows only, so bytes a crash left beyond them are never
 * shown.  PostgreSQL keeps the bytes in the rows (seg -1): every replica
 * reads them there. */

#define SEG_MAX ((int64_t)256 << 20)

struct store_logs {
  char *dir;
  bool sync;
  pthread_mutex_t mu;
  pthread_cond_t synced_cv;
  bool ready;      /* the directory exists and the segment is open */
  int fd;          /* the segment written: seg */
  int seg;
  int64_t size;    /* its length, what was written included */
  int64_t synced;  /* its bytes known on disk */
  bool syncing;    /* a waiter is in fdatasync for all */
  int *rfd;        /* read side, by segment number (-1: not open) */
  int n_rfd;
};

struct store_logs *store__logs_open(const char *db_path, bool sync) {
  struct store_logs *l = tw_calloc(1, sizeof *l);
  size_t n = strlen(db_path) + 8;
  l->dir = tw_calloc(1, n);
  snprintf(l->dir, n, "%s-logs", db_path);
  l->sync = sync;
  l->fd = -1;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->synced_cv, NULL);
  return l;
}

void store__logs_close(struct store_logs *l) {
  if (!l)
    return;
  if (l->fd >= 0)
    close(l->fd);
  for (int i = 0; i < l->n_rfd; i++)
    if (l->rfd[i] >= 0)
      close(l->rfd[i]);
  free(l->rfd);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->synced_cv);
  free(l->dir);
  free(l);
}

static void seg_path(const struct store_logs *l, int seg, char *out,
                     size_t n) {
  snprintf(out, n, "%s/seg-%06d", l->dir, seg);
}

/* Opens segment seg for appending at its end; mu held. */
static enum tw_rc seg_open(struct store_logs *l, int seg, struct tw_err *err) {
  char path[4200];
  seg_path(l, seg, path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return tw_err_set(err, e == ENOSPC ? TW_E_FULL : TW_E_IO,
                      "agent: log segment %s: %s", path, strerror(e));
  }
  if (l->fd >= 0)
    close(l->fd);
  l->fd = fd;
  l->seg = seg;
  l->size = l->synced = (int64_t)st.st_size;
  return TW_OK;
}

/* The directory and the newest segment, at the first write; mu held. */
static enum tw_rc logs_ready(struct store_logs *l, struct tw_err *err) {
  if (l->ready)
    return TW_OK;
  if (mkdir(l->dir, 0700) && errno != EEXIST)
    return tw_err_set(err, errno == ENOSPC ? TW_E_FULL : TW_E_IO,
                      "agent: log directory %s: %s", l->dir, strerror(errno));
  int seg = 1;
  char path[4200];
  for (;;) { /* the newest one: segments are numbered from 1, none skipped */
    seg_path(l, seg + 1, path, sizeof path);
    if (access(path, F_OK))
      break;
    seg++;
  }
  enum tw_rc rc = seg_open(l, seg, err);
  l->ready = rc == TW_OK;
  return rc;
}

/* Appends len bytes and returns once they are on disk (with the store's
 * sync setting), with where they are. */
static enum tw_rc logs_append(struct store_logs *l, const void *data,
                              size_t len, int *seg, int64_t *pos,
                              struct tw_err *err) {
  pthread_mutex_lock(&l->mu);
  enum tw_rc rc = logs_ready(l, err);
  if (rc == TW_OK && l->size > 0 && l->size + (int64_t)len > SEG_MAX) {
    /* the full segment is synced before the next one takes writes */
    while (l->syncing)
      pthread_cond_wait(&l->synced_cv, &l->mu);
    if (l->sync && l->synced < l->size && fdatasync(l->fd))
      rc = tw_err_set(err, TW_E_IO, "agent: log segment sync: %s",
                      strerror(errno));
    if (rc == TW_OK) {
      l->synced = l->size;
      rc = seg_open(l, l->seg + 1, err);
    }
  }
  if (rc) {
    pthread_mutex_unlock(&l->mu);
    return rc;
  }
  *seg = l->seg;
  *pos = l->size;
  size_t done = 0;
  while (done < len) {
    ssize_t w = pwrite(l->fd, (const char *)data + done, len - done,
                       (off_t)(*pos + (int64_t)done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      pthread_mutex_unlock(&l->mu);
      return tw_err_set(err, e == ENOSPC ? TW_E_FULL : TW_E_IO,
                        "agent: log segment write: %s", strerror(e));
    }
    done += (size_t)w;
  }
  l->size += (int64_t)len;
  int64_t want = l->size;
  int my_seg = l->seg;
  /* group sync: one waiter syncs what all wrote so far */
  while (l->sync && l->seg == my_seg && l->synced < want) {
    if (l->syncing) {
      pthread_cond_wait(&l->synced_cv, &l->mu);
      continue;
    }
    l->syncing = true;
    int fd = l->fd;
    int64_t upto = l->size;
    pthread_mutex_unlock(&l->mu);
    int r = fdatasync(fd);
    int e = errno;
    pthread_mutex_lock(&l->mu);
    l->syncing = false;
    pthread_cond_broadcast(&l->synced_cv);
    if (r) {
      rc = tw_err_set(err, TW_E_IO, "agent: log segment sync: %s",
                      strerror(e));
      break;
    }
    if (upto > l->synced)
      l->synced = upto;
  }
  pthread_mutex_unlock(&l->mu);
  return rc;
}

/* Reads len bytes of segment seg at pos into out; *short_read when the
 * segment ends first (its bytes lost with the page cache, when the store
 * does not sync): what is there is added. */
static enum tw_rc logs_read(struct store_logs *l, int seg, int64_t pos,
                            size_t len, struct tw_buf *out, bool *short_read,
                            struct tw_err *err) {
  *short_read = false;
  pthread_mutex_lock(&l->mu);
  if (seg >= l->n_rfd) {
    int n = seg + 16;
    l->rfd = tw_realloc(l->rfd, (size_t)n * sizeof *l->rfd);
    for (int i = l->n_rfd; i < n; i++)
      l->rfd[i] = -1;
    l->n_rfd = n;
  }
  if (l->rfd[seg] < 0) {
    char path[4200];
    seg_path(l, seg, path, sizeof path);
    l->rfd[seg] = open(path, O_RDONLY | O_CLOEXEC);
  }
  int fd = l->rfd[seg];
  pthread_mutex_unlock(&l->mu);
  if (fd < 0)
    return tw_err_set(err, TW_E_IO, "agent: log segment %d: %s", seg,
                      strerror(errno));
  char *buf = tw_malloc(len ? len : 1);
  size_t done = 0;
  while (done < len) {
    ssize_t r = pread(fd, buf + done, len - done, (off_t)(pos + (int64_t)done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      free(buf);
      return tw_err_set(err, TW_E_IO, "agent: log segment %d: %s", seg,
                        strerror(errno));
    }
    if (r == 0) {
      *short_read = true;
      break;
    }
    done += (size_t)r;
  }
  tw_buf_add(out, buf, done);
  free(buf);
  return TW_OK;
}

struct log_arg {
  int64_t id, offset, max_total;
  int stream;
  const unsigned char *data;
  size_t len;
  /* in a segment already (seg >= 0): where, and the stream's length it
   * was written for (anything else: written again) */
  int seg;
  int64_t pos, at;
  bool moved;
  enum tw_store_log_result res;
  int64_t next;
};

/* What chunk a would add to the stored stream (have, both streams'
 * total): *skip bytes already stored, *add new; false when the result is
 * decided without a write (a->res). */
static bool log_plan(struct log_arg *a, int64_t have, int64_t total,
                     int64_t *skip, int64_t *add) {
  a->next = have;
  if (a->offset > have) {
    a->res = TW_STORE_LOG_GAP;
    return false;
  }
  *skip = have - a->offset;
  if ((int64_t)a->len <= *skip) {
    a->res = TW_STORE_LOG_OK; /* all of it stored already */
    return false;
  }
  *add = (int64_t)a->len - *skip;
  if (total + *add > a->max_total) {
    a->res = TW_STORE_LOG_FULL;
    return false;
  }
  return true;
}

static enum tw_rc log_len(struct tw_store *s, struct tw_db *db, int64_t id,
                          int64_t *out, int64_t *errb, struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOG_LEN, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, id);
  int r = tw_db_step(st);
  *out = *errb = 0;
  if (r == TW_DB_ROW) {
    *out = tw_db_column_int64(st, 0);
    *errb = tw_db_column_int64(st, 1);
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read log length");
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "agent: attempt %lld not known",
                      (long long)id);
  return TW_OK;
}

static enum tw_rc op_log_len(struct tw_store *s, struct tw_db *db, void *varg,
                             struct tw_err *err) {
  int64_t *v = varg;
  return log_len(s, db, v[0], &v[1], &v[2], err);
}

static enum tw_rc op_log_append(struct tw_store *s, struct tw_db *db, void *varg,
                                struct tw_err *err) {
  struct log_arg *a = varg;
  int64_t out = 0, errb = 0;
  enum tw_rc rc = log_len(s, db, a->id, &out, &errb, err);
  if (rc)
    return rc;
  int64_t have = a->stream ? errb : out, skip = 0, add = 0;
  if (!log_plan(a, have, out + errb, &skip, &add))
    return TW_OK;
  if (a->seg >= 0 && have != a->at) {
    a->moved = true; /* another report moved the stream meanwhile */
    return TW_OK;
  }
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOG_ADD, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_int(st, 2, a->stream);
  tw_db_bind_int64(st, 3, have);
  if (a->seg >= 0)
    tw_db_bind_blob(st, 4, "", 0);
  else
    tw_db_bind_blob(st, 4, a->data + skip, (int)add);
  tw_db_bind_int64(st, 5, a->seg);
  tw_db_bind_int64(st, 6, a->seg >= 0 ? a->pos : 0);
  tw_db_bind_int64(st, 7, add);
  rc = store__step_done(db, st, "agent: store log", err);
  if (rc)
    return rc;
  if (!(st = tw_store_stmt(s, db, a->stream ? SQL_LOG_ERR : SQL_LOG_OUT, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_int64(st, 2, have + add);
  rc = store__step_done(db, st, "agent: store log length", err);
  if (rc == TW_OK) {
    a->next = have + add;
    a->res = TW_STORE_LOG_OK;
  }
  return rc;
}

enum tw_rc tw_store_agent_log_append(struct tw_store *s, int64_t attempt_id,
                                     enum tw_agent_stream stream,
                                     int64_t offset, const void *data,
                                     size_t len, int64_t max_total,
                                     enum tw_store_log_result *res,
                                     int64_t *next, struct tw_err *err) {
  struct log_arg a = {.id = attempt_id,
                      .offset = offset,
                      .max_total = max_total,
                      .stream = stream == TW_AGENT_STDERR,
                      .data = data,
                      .len = len,
                      .seg = -1};
  *res = TW_STORE_LOG_OK;
  *next = 0;
  if (len > (size_t)1 << 30)
    return tw_err_set(err, TW_E_INVALID, "agent: log chunk too large");
  struct store_logs *l = store__logs(s);
  enum tw_rc rc = TW_OK;
  for (int tries = 0; l && tries < 4; tries++) {
    /* the bytes to a segment first, synced; then their row */
    int64_t v[3] = {attempt_id, 0, 0};
    if ((rc = tw_store_read(s, op_log_len, v, err)))
      return rc;
    int64_t have = a.stream ? v[2] : v[1], skip = 0, add = 0;
    if (!log_plan(&a, have, v[1] + v[2], &skip, &add)) {
      *res = a.res;
      *next = a.next;
      return TW_OK;
    }
    if ((rc = logs_append(l, a.data + skip, (size_t)add, &a.seg, &a.pos,
                          err)))
      return rc;
    a.at = have;
    a.moved = false;
    if ((rc = tw_store_write(s, op_log_append, &a, err)) || !a.moved) {
      *res = a.res;
      *next = a.next;
      return rc;
    }
    /* the stream moved between the read and the write (the same chunk
     * sent twice at once): its bytes in the segment are left unread */
  }
  a.seg = -1; /* rows: PostgreSQL, or a stream that kept moving */
  rc = tw_store_write(s, op_log_append, &a, err);
  *res = a.res;
  *next = a.next;
  return rc;
}

struct read_arg {
  int64_t id, offset;
  int stream;
  size_t limit;
  struct tw_buf *out;
  int64_t total;
  struct store_logs *logs;
};

static enum tw_rc op_log_read(struct tw_store *s, struct tw_db *db, void *varg,
                              struct tw_err *err) {
  struct read_arg *a = varg;
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_LOG_LEN, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    a->total = tw_db_column_int64(st, a->stream ? 1 : 0);
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read log length");
  if (!(st = tw_store_stmt(s, db, SQL_LOG_READ, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->id);
  tw_db_bind_int(st, 2, a->stream);
  tw_db_bind_int64(st, 3, a->offset);
  size_t got = 0;
  enum tw_rc rc = TW_OK;
  while (got < a->limit && (r = tw_db_step(st)) == TW_DB_ROW) {
    int64_t off = tw_db_column_int64(st, 0);
    int64_t seg = tw_db_column_int64(st, 2);
    int64_t n = tw_db_column_int64(st, 4);
    int64_t from = a->offset > off ? a->offset - off : 0;
    int64_t take = n - from;
    if (take > (int64_t)(a->limit - got))
      take = (int64_t)(a->limit - got);
    if (take <= 0)
      continue;
    if (seg < 0) {
      const unsigned char *d = tw_db_column_blob(st, 1);
      if (d && tw_db_column_bytes(st, 1) >= from + take)
        tw_buf_add(a->out, d + from, (size_t)take);
      else
        take = 0;
    } else if (!a->logs || seg > 1 << 30) {
      rc = tw_err_set(err, TW_E_IO,
                      "agent: log segment %lld of a store without them",
                      (long long)seg);
      break;
    } else {
      bool short_read = false;
      size_t before = a->out->len;
      if ((rc = logs_read(a->logs, (int)seg, tw_db_column_int64(st, 3) + from,
                          (size_t)take, a->out, &short_read, err)))
        break;
      if (short_read) {
        tw_log_warn("agent", "attempt %lld: log segment %lld is shorter than "
                    "its rows; output read up to there",
                    (long long)a->id, (long long)seg);
        got += a->out->len - before;
        break;
      }
    }
    got += (size_t)take;
  }
  tw_db_reset(st);
  if (rc)
    return rc;
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "agent: read log");
  return TW_OK;
}

enum tw_rc tw_store_agent_log_read(struct tw_store *s, int64_t attempt_id,
                                   enum tw_agent_stream stream, int64_t offset,
                                   size_t limit, struct tw_buf *out,
                                   int64_t *total, struct tw_err *err) {
  struct read_arg a = {.id = attempt_id,
                       .offset = offset,
                       .stream = stream == TW_AGENT_STDERR,
                       .limit = limit,
                       .out = out,
                       .logs = store__logs(s)};
  enum tw_rc rc = tw_store_read(s, op_log_read, &a, err);
  *total = a.total;
  return rc;
}
