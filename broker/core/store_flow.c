/* store_flow.c - groups, tasks and edges of dependencies, arrays and
 * workflows (store_flow.h).  Every statement is constant text, prepared
 * once per connection (tw_store_stmt). */
#include "broker/core/store_flow.h"

#include <openssl/rand.h>
#include "broker/core/db.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/core/job.h"
#include "broker/core/spec.h"
#include "broker/core/store_audit.h"
#include "broker/core/store_int.h"

/* task states */
#define T_WAITING "waiting"
#define T_READY "ready"
#define T_RELEASED "released"

static const char SQL_GROUP_INSERT[] =
    "INSERT INTO flow_groups (id, kind, name, tenant, project, state, reason,"
    " fail_fast, max_running, n_tasks, n_ready, n_done, projected_uusd,"
    " created_at_ms, updated_at_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, 'running', '', ?6, ?7, ?8, 0, 0, ?9, ?10,"
    " ?10)";
static const char SQL_TMPL_INSERT[] =
    "INSERT INTO flow_tmpl (gid, t, task, spec, outputs) VALUES (?1, ?2, ?3,"
    " ?4, ?5)";
static const char SQL_TASK_INSERT[] =
    "INSERT INTO flow_tasks (gid, idx, tmpl, aindex, param, state, job_id,"
    " fan_any, kill, n_in, n_met, n_never, reason)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
/* Many rows per statement: a 100,000-task submission is one write */
#define TASK_ROW "(?,?,?,?,?,?,?,?,?,?,?,?,?)"
#define TASK_ROW4 TASK_ROW "," TASK_ROW "," TASK_ROW "," TASK_ROW
#define TASK_BATCH 16
static const char SQL_TASK_INSERT_BATCH[] =
    "INSERT INTO flow_tasks (gid, idx, tmpl, aindex, param, state, job_id,"
    " fan_any, kill, n_in, n_met, n_never, reason) VALUES " TASK_ROW4
    "," TASK_ROW4 "," TASK_ROW4 "," TASK_ROW4;
#define EDGE_ROW "(?,?,?,?,?,?,?)"
#define EDGE_ROW4 EDGE_ROW "," EDGE_ROW "," EDGE_ROW "," EDGE_ROW
#define EDGE_ROW16 EDGE_ROW4 "," EDGE_ROW4 "," EDGE_ROW4 "," EDGE_ROW4
#define EDGE_BATCH 32
static const char SQL_EDGE_INSERT_BATCH[] =
    "INSERT INTO flow_edges (src, sidx, dgid, didx, cond, delay_s, res)"
    " VALUES " EDGE_ROW16 "," EDGE_ROW16;
static const char SQL_EDGE_INSERT[] =
    "INSERT INTO flow_edges (src, sidx, dgid, didx, cond, delay_s, res)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_JOB_STATE[] =
    "SELECT state, name, tenant FROM jobs WHERE id = ?1";
static const char SQL_GROUP_STATE[] =
    "SELECT state FROM flow_groups WHERE id = ?1";
static const char SQL_GROUP_SIZE[] =
    "SELECT n_tasks, kind FROM flow_groups WHERE id = ?1";
static const char SQL_TASK_AT[] =
    "SELECT aindex, state FROM flow_tasks WHERE gid = ?1 AND idx = ?2";
static const char SQL_SINGLETON[] =
    "SELECT id FROM jobs WHERE state IN ('waiting', 'pending', 'placing',"
    " 'provisioning', 'running', 'interrupted', 'recovering')"
    " AND name = ?1 AND tenant = ?2 AND id <> ?3";
static const char SQL_CURSOR[] = "SELECT seq FROM flow_cursor WHERE id = 1";
static const char SQL_ANY_RUNNING[] =
    "SELECT EXISTS (SELECT 1 FROM flow_groups WHERE state = 'running')";
static const char SQL_CURSOR_START[] =
    "UPDATE flow_cursor SET seq = (SELECT COALESCE(MAX(seq), 0)"
    " FROM job_events) WHERE id = 1 AND seq < 0";
static const char SQL_CURSOR_SET[] =
    "UPDATE flow_cursor SET seq = ?1 WHERE id = 1";
static const char SQL_EVENTS_SINCE[] =
    "SELECT seq, job_id, to_state, at_ms FROM job_events WHERE seq > ?1"
    " ORDER BY seq LIMIT ?2";
static const char SQL_STARTED_AT[] =
    "SELECT at_ms FROM job_events WHERE job_id = ?1 AND to_state = 'running'"
    " ORDER BY seq LIMIT 1";
static const char SQL_TASK_OF_JOB[] =
    "SELECT gid, idx, state FROM flow_tasks WHERE job_id = ?1";
static const char SQL_EDGES_FROM[] =
    "SELECT id, dgid, didx, cond, delay_s FROM flow_edges"
    " WHERE src = ?1 AND sidx = ?2 AND res = 0";
static const char SQL_EDGE_SET[] =
    "UPDATE flow_edges SET res = ?2 WHERE id = ?1 AND res IN (0, 3)";
static const char SQL_EDGE_GET[] =
    "SELECT dgid, didx FROM flow_edges WHERE id = ?1";
static const char SQL_TIMER_INSERT[] =
    "INSERT INTO flow_timers (due_ms, edge) VALUES (?1, ?2)";
static const char SQL_TIMERS_DUE[] =
    "SELECT id, edge FROM flow_timers WHERE due_ms <= ?1 ORDER BY due_ms"
    " LIMIT 1000";
static const char SQL_TIMER_DEL[] = "DELETE FROM flow_timers WHERE id = ?1";
static const char SQL_TASK_COUNT[] =
    "UPDATE flow_tasks SET n_met = n_met + ?3, n_never = n_never + ?4"
    " WHERE gid = ?1 AND idx = ?2"
    " RETURNING state, fan_any, kill, n_in, n_met, n_never, job_id";
static const char SQL_TASK_SET[] =
    "UPDATE flow_tasks SET state = ?3, reason = ?4 WHERE gid = ?1 AND idx = ?2";
static const char SQL_TASK_RELEASED[] =
    "UPDATE flow_tasks SET state = 'released', job_id = ?3"
    " WHERE gid = ?1 AND idx = ?2";
static const char SQL_GROUP_ADD[] =
    "UPDATE flow_groups SET n_ready = n_ready + ?2, n_done = n_done + ?3,"
    " n_active = n_active + ?4, n_failed = n_failed + ?5,"
    " n_cancelled = n_cancelled + ?6, updated_at_ms = ?7 WHERE id = ?1"
    " RETURNING state, n_tasks, n_done, n_failed, n_cancelled, fail_fast,"
    " cancel_asked";
static const char SQL_GROUP_END[] =
    "UPDATE flow_groups SET state = ?2, reason = ?3, updated_at_ms = ?4"
    " WHERE id = ?1 AND state = 'running'";
static const char SQL_ZERO_READY[] =
    "UPDATE flow_groups SET n_ready = 0 WHERE id = ?1";
static const char SQL_GROUP_CANCEL_ASK[] =
    "UPDATE flow_groups SET cancel_asked = 1, reason = ?2 WHERE id = ?1";
static const char SQL_GROUPS_READY[] =
    "SELECT id, kind, max_running, n_active, n_ready FROM flow_groups"
    " WHERE n_ready > 0 AND state = 'running' ORDER BY created_at_ms"
    " LIMIT 256";
static const char SQL_READY_TASKS[] =
    "SELECT idx, tmpl, aindex, param, job_id FROM flow_tasks"
    " WHERE gid = ?1 AND state = 'ready' ORDER BY idx LIMIT ?2";
static const char SQL_GROUP_ROW[] =
    "SELECT kind, name, tenant, project FROM flow_groups WHERE id = ?1";
static const char SQL_TMPL_GET[] =
    "SELECT task, spec FROM flow_tmpl WHERE gid = ?1 AND t = ?2";
static const char SQL_PRED_OUTPUTS[] =
    "SELECT m.outputs, j.placement FROM flow_edges e"
    " JOIN flow_tasks p ON p.gid = e.src AND p.idx = e.sidx"
    " JOIN flow_tmpl m ON m.gid = p.gid AND m.t = p.tmpl"
    " LEFT JOIN jobs j ON j.id = p.job_id"
    " WHERE e.dgid = ?1 AND e.didx = ?2 AND e.sidx >= 0 AND m.outputs <> ''"
    " LIMIT 64";
static const char SQL_CANCEL_OPEN[] =
    "UPDATE flow_tasks SET state = 'cancelled', reason = ?2"
    " WHERE gid = ?1 AND state IN ('waiting', 'ready')";
static const char SQL_RELEASED_JOBS[] =
    "SELECT job_id FROM flow_tasks WHERE gid = ?1 AND state = 'released'";
static const char SQL_OUT_EDGES_OF_GROUP[] =
    "SELECT e.id, e.dgid, e.didx, e.cond, e.delay_s FROM flow_edges e"
    " JOIN flow_tasks t ON t.gid = e.src AND t.idx = e.sidx"
    " WHERE e.src = ?1 AND e.sidx >= 0 AND e.dgid <> ?1 AND e.res = 0"
    " AND t.state = 'cancelled'";
static const char SQL_JOB_MOVE[] =
    "UPDATE jobs SET state = ?2, reason = ?3, updated_at_ms = ?4"
    " WHERE id = ?1 AND state = ?5";
static const char SQL_JOB_GET_STATE[] = "SELECT state FROM jobs WHERE id = ?1";
static const char SQL_JOB_EVENT[] =
    "INSERT INTO job_events (job_id, at_ms, from_state, to_state, reason)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_GET[] =
    "SELECT id, kind, name, tenant, project, state, reason, fail_fast,"
    " max_running, n_tasks, projected_uusd, created_at_ms, updated_at_ms"
    " FROM flow_groups WHERE id = ?1";
static const char SQL_LIST[] =
    "SELECT created_at_ms, id FROM flow_groups WHERE kind <> 'job'"
    " AND (?1 IS NULL OR tenant = ?1) AND (?2 IS NULL OR state = ?2)"
    " AND (created_at_ms < ?3 OR (created_at_ms = ?3 AND id < ?4))"
    " ORDER BY created_at_ms DESC, id DESC LIMIT ?5";
static const char SQL_COUNT_TASKS[] =
    "SELECT state, count(*) FROM flow_tasks WHERE gid = ?1 GROUP BY state";
static const char SQL_COUNT_JOBS[] =
    "SELECT j.state, count(*) FROM flow_tasks t JOIN jobs j ON j.id = t.job_id"
    " WHERE t.gid = ?1 AND t.state = 'released' GROUP BY j.state";
static const char SQL_COST[] =
    "SELECT COALESCE(SUM(l.effective_uusd), 0) FROM flow_tasks t"
    " JOIN ledger_job_day l ON l.job_id = t.job_id"
    " WHERE t.gid = ?1 AND t.job_id IS NOT NULL";
static const char SQL_TASKS[] =
    "SELECT t.idx, t.aindex, m.task, t.param, t.state, t.job_id, j.state,"
    " t.reason FROM flow_tasks t JOIN flow_tmpl m ON m.gid = t.gid AND"
    " m.t = t.tmpl LEFT JOIN jobs j ON j.id = t.job_id"
    " WHERE t.gid = ?1 AND t.idx > ?2 ORDER BY t.idx LIMIT ?3";
static const char SQL_EDGES_INTO[] =
    "SELECT id, src, sidx, didx, cond, res FROM flow_edges"
    " WHERE dgid = ?1 AND id > ?2 ORDER BY id LIMIT ?3";

/* ---- helpers ------------------------------------------------------------- */

static struct tw_db_stmt *st_of(struct tw_store *s, struct tw_db *db, const char *sql,
                           struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, sql, err);
  if (st)
    tw_db_reset(st);
  return st;
}

static const char *col_text(struct tw_db_stmt *st, int i) {
  const char *t = (const char *)tw_db_column_text(st, i);
  return t ? t : "";
}

static void new_gid(char prefix, int64_t now_ms,
                    char out[TW_FLOW_GID_LEN + 1]) {
  unsigned char rnd[10];
  if (RAND_bytes(rnd, 10) != 1)
    memset(rnd, 0x5a, 10);
  store__sortable_id(prefix, now_ms, rnd, out);
}

static bool live_state(enum tw_job_state js) {
  return !tw_job_state_terminal(js);
}

/* What a job's state says about it as a source. */
static bool job_event_of(enum tw_job_state js, enum tw_flow_event *ev) {
  switch (js) {
  case TW_JOB_RUNNING:
  case TW_JOB_INTERRUPTED:
  case TW_JOB_RECOVERING:
    *ev = TW_FLOW_STARTED;
    return true;
  case TW_JOB_SUCCEEDED:
    *ev = TW_FLOW_SUCCEEDED;
    return true;
  case TW_JOB_FAILED:
    *ev = TW_FLOW_FAILED;
    return true;
  case TW_JOB_CANCELLED:
    *ev = TW_FLOW_CANCELLED;
    return true;
  default:
    return false;
  }
}

static enum tw_rc job_move(struct tw_store *s, struct tw_db *db, const char *id,
                           enum tw_job_state from, enum tw_job_state to,
                           const char *reason, int64_t now, bool *moved,
                           struct tw_err *err) {
  struct tw_db_stmt *st = st_of(s, db, SQL_JOB_MOVE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, id);
  store__bind_text(st, 2, tw_job_state_str(to));
  store__bind_text(st, 3, reason);
  tw_db_bind_int64(st, 4, now);
  store__bind_text(st, 5, tw_job_state_str(from));
  enum tw_rc rc = store__step_done(db, st, "flow: move job", err);
  if (rc)
    return rc;
  *moved = tw_db_changes(db) > 0;
  if (!*moved)
    return TW_OK;
  if (tw_job_state_terminal(to))
    store__job_ended(s, id);
  if (!(st = st_of(s, db, SQL_JOB_EVENT, err)))
    return TW_E_IO;
  store__bind_text(st, 1, id);
  tw_db_bind_int64(st, 2, now);
  store__bind_text(st, 3, tw_job_state_str(from));
  store__bind_text(st, 4, tw_job_state_str(to));
  store__bind_text(st, 5, reason);
  return store__step_done(db, st, "flow: job event", err);
}

/* Moves a live job to `to` from whatever live state it is in. */
static enum tw_rc job_end(struct tw_store *s, struct tw_db *db, const char *id,
                          enum tw_job_state to, const char *reason, int64_t now,
                          struct tw_err *err) {
  struct tw_db_stmt *st = st_of(s, db, SQL_JOB_GET_STATE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, id);
  enum tw_job_state js = TW_JOB_SUCCEEDED;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW)
    tw_job_state_parse(col_text(st, 0), &js);
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(db, err, "flow: job state");
  if (r == TW_DB_DONE || !live_state(js) ||
      tw_job_transition_check(js, to, NULL) != TW_OK)
    return TW_OK;
  bool moved;
  return job_move(s, db, id, js, to, reason, now, &moved, err);
}

/* The cursor starts at the newest job event when the first group is
 * stored (or the first pass runs): events before concern no group. */
static enum tw_rc cursor_start(struct tw_store *s, struct tw_db *db,
                               struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_CURSOR_START, err);
  if (!st)
    return TW_E_IO;
  tw_db_reset(st);
  return store__step_done(db, st, "flow: cursor", err);
}

/* ---- the engine: one write's worth ---------------------------------------- */

struct eng {
  struct tw_store *s;
  struct tw_db *db;
  int64_t now;
  int64_t event_ms; /* when the event being applied happened; 0: now */
  struct tw_flow_pass_stats *st;
  int depth;
};

static enum tw_rc task_finished(struct eng *e, const char *gid, int64_t idx,
                                const char *from_state, enum tw_flow_event ev,
                                const char *reason, struct tw_err *err);
static enum tw_rc group_cancel(struct eng *e, const char *gid,
                               const char *reason, int64_t *n,
                               struct tw_err *err);

static enum tw_rc group_add(struct eng *e, const char *gid, int64_t ready,
                            int64_t done, int64_t active, int64_t failed,
                            int64_t cancelled, struct tw_err *err);

/* A task's edge met or never met: its counters, then its readiness. */
static enum tw_rc task_count(struct eng *e, const char *gid, int64_t idx,
                             enum tw_edge_res res, struct tw_err *err) {
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_TASK_COUNT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  tw_db_bind_int64(st, 2, idx);
  tw_db_bind_int(st, 3, res == TW_EDGE_MET);
  tw_db_bind_int(st, 4, res == TW_EDGE_NEVER);
  int r = tw_db_step(st);
  if (r != TW_DB_ROW) {
    tw_db_reset(st);
    return r == TW_DB_DONE ? TW_OK : store__db_err(e->db, err, "flow: count");
  }
  char state[16], job_id[TW_JOB_ID_LEN + 1];
  snprintf(state, sizeof state, "%s", col_text(st, 0));
  bool any = tw_db_column_int(st, 1), kill = tw_db_column_int(st, 2);
  int64_t n_in = tw_db_column_int64(st, 3), n_met = tw_db_column_int64(st, 4),
          n_never = tw_db_column_int64(st, 5);
  snprintf(job_id, sizeof job_id, "%s", col_text(st, 6));
  while (r == TW_DB_ROW)
    r = tw_db_step(st);
  tw_db_reset(st);
  e->st->resolved++;
  if (strcmp(state, T_WAITING))
    return TW_OK;
  enum tw_edge_res rd = tw_flow_task_readiness(any, n_in, n_met, n_never);
  if (rd == TW_EDGE_MET) {
    if (!(st = st_of(e->s, e->db, SQL_TASK_SET, err)))
      return TW_E_IO;
    store__bind_text(st, 1, gid);
    tw_db_bind_int64(st, 2, idx);
    store__bind_text(st, 3, T_READY);
    store__bind_text(st, 4, "dependencies met");
    enum tw_rc rc = store__step_done(e->db, st, "flow: ready", err);
    return rc ? rc : group_add(e, gid, 1, 0, 0, 0, 0, err);
  }
  if (rd != TW_EDGE_NEVER)
    return TW_OK;
  const char *why = "DependencyNeverSatisfied: a dependency can never be met";
  if (!kill) { /* keeps waiting, as Slurm without --kill-on-invalid-dep */
    if (!(st = st_of(e->s, e->db, SQL_TASK_SET, err)))
      return TW_E_IO;
    store__bind_text(st, 1, gid);
    tw_db_bind_int64(st, 2, idx);
    store__bind_text(st, 3, T_WAITING);
    store__bind_text(st, 4, why);
    return store__step_done(e->db, st, "flow: never", err);
  }
  if (job_id[0]) { /* a plain job: it fails, its event finishes the task */
    bool moved;
    return job_move(e->s, e->db, job_id, TW_JOB_WAITING, TW_JOB_FAILED, why,
                    e->now, &moved, err);
  }
  return task_finished(e, gid, idx, T_WAITING, TW_FLOW_FAILED, why, err);
}

static enum tw_rc edge_resolve(struct eng *e, int64_t rowid, const char *dgid,
                               int64_t didx, enum tw_edge_res res,
                               int64_t delay_s, struct tw_err *err) {
  if (res == TW_EDGE_OPEN)
    return TW_OK;
  if (res == TW_EDGE_MET && delay_s > 0) { /* after:ID+minutes */
    struct tw_db_stmt *st = st_of(e->s, e->db, SQL_EDGE_SET, err);
    if (!st)
      return TW_E_IO;
    tw_db_bind_int64(st, 1, rowid);
    tw_db_bind_int(st, 2, 3);
    enum tw_rc rc = store__step_done(e->db, st, "flow: edge", err);
    if (rc || !tw_db_changes(e->db))
      return rc;
    if (!(st = st_of(e->s, e->db, SQL_TIMER_INSERT, err)))
      return TW_E_IO;
    /* the delay runs from the start, as Slurm's after:ID+time */
    tw_db_bind_int64(st, 1,
                       (e->event_ms ? e->event_ms : e->now) + delay_s * 1000);
    tw_db_bind_int64(st, 2, rowid);
    return store__step_done(e->db, st, "flow: timer", err);
  }
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_EDGE_SET, err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_int64(st, 1, rowid);
  tw_db_bind_int(st, 2, (int)res);
  enum tw_rc rc = store__step_done(e->db, st, "flow: edge", err);
  if (rc || !tw_db_changes(e->db))
    return rc;
  return task_count(e, dgid, didx, res, err);
}

struct edge_row {
  int64_t rowid, didx, delay_s;
  char dgid[TW_FLOW_ID_MAX + 1];
  enum tw_flow_cond cond;
};

static enum tw_rc collect_edges(struct eng *e, const char *sql, const char *src,
                                int64_t sidx, bool bind_sidx,
                                struct edge_row **out, size_t *n,
                                struct tw_err *err) {
  *out = NULL;
  *n = 0;
  struct tw_db_stmt *st = st_of(e->s, e->db, sql, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, src);
  if (bind_sidx)
    tw_db_bind_int64(st, 2, sidx);
  size_t cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      *out = tw_realloc(*out, cap * sizeof **out);
    }
    struct edge_row *er = &(*out)[(*n)++];
    er->rowid = tw_db_column_int64(st, 0);
    snprintf(er->dgid, sizeof er->dgid, "%s", col_text(st, 1));
    er->didx = tw_db_column_int64(st, 2);
    er->cond = (enum tw_flow_cond)tw_db_column_int(st, 3);
    er->delay_s = tw_db_column_int64(st, 4);
  }
  tw_db_reset(st);
  if (r != TW_DB_DONE) {
    free(*out);
    *out = NULL;
    return store__db_err(e->db, err, "flow: edges");
  }
  return TW_OK;
}

/* Resolves the open edges from (src, sidx) with what happened to it. */
static enum tw_rc source_event(struct eng *e, const char *src, int64_t sidx,
                               enum tw_flow_event ev, struct tw_err *err) {
  struct edge_row *rows;
  size_t n;
  enum tw_rc rc =
      collect_edges(e, SQL_EDGES_FROM, src, sidx, true, &rows, &n, err);
  for (size_t i = 0; i < n && !rc; i++)
    rc = edge_resolve(e, rows[i].rowid, rows[i].dgid, rows[i].didx,
                      tw_flow_edge_resolve(rows[i].cond, ev), rows[i].delay_s,
                      err);
  free(rows);
  return rc;
}

static enum tw_rc group_add(struct eng *e, const char *gid, int64_t ready,
                            int64_t done, int64_t active, int64_t failed,
                            int64_t cancelled, struct tw_err *err) {
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_GROUP_ADD, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  tw_db_bind_int64(st, 2, ready);
  tw_db_bind_int64(st, 3, done);
  tw_db_bind_int64(st, 4, active);
  tw_db_bind_int64(st, 5, failed);
  tw_db_bind_int64(st, 6, cancelled);
  tw_db_bind_int64(st, 7, e->now);
  int r = tw_db_step(st);
  if (r != TW_DB_ROW) {
    tw_db_reset(st);
    return r == TW_DB_DONE ? TW_OK : store__db_err(e->db, err, "flow: group");
  }
  char state[16];
  snprintf(state, sizeof state, "%s", col_text(st, 0));
  int64_t n_tasks = tw_db_column_int64(st, 1),
          n_done = tw_db_column_int64(st, 2),
          n_failed = tw_db_column_int64(st, 3),
          n_cancelled = tw_db_column_int64(st, 4);
  bool fail_fast = tw_db_column_int(st, 5),
       asked = tw_db_column_int(st, 6);
  while (r == TW_DB_ROW)
    r = tw_db_step(st);
  tw_db_reset(st);
  if (strcmp(state, "running"))
    return TW_OK;
  enum tw_rc rc = TW_OK;
  if (failed > 0 && fail_fast && n_done < n_tasks && e->depth < 8) {
    e->depth++;
    rc = group_cancel(e, gid, "fail_fast: a task failed", NULL, err);
    e->depth--;
    return rc; /* the cancel's own accounting ends the group */
  }
  if (n_done < n_tasks)
    return TW_OK;
  const char *end = asked            ? "cancelled"
                    : n_failed > 0   ? "failed"
                    : n_cancelled > 0 ? "cancelled"
                                     : "succeeded";
  char why[96];
  snprintf(why, sizeof why, "%s%lld of %lld tasks succeeded",
           asked ? "cancelled by request; " : "",
           (long long)(n_tasks - n_failed - n_cancelled), (long long)n_tasks);
  if (!(st = st_of(e->s, e->db, SQL_GROUP_END, err)))
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  store__bind_text(st, 2, end);
  store__bind_text(st, 3, why);
  tw_db_bind_int64(st, 4, e->now);
  if ((rc = store__step_done(e->db, st, "flow: group end", err)))
    return rc;
  enum tw_flow_event ev = !strcmp(end, "succeeded") ? TW_FLOW_SUCCEEDED
                          : !strcmp(end, "failed")  ? TW_FLOW_FAILED
                                                    : TW_FLOW_CANCELLED;
  return source_event(e, gid, -2, ev, err);
}

/* A task ended (its job did, or it can never run, or it was cancelled). */
static enum tw_rc task_finished(struct eng *e, const char *gid, int64_t idx,
                                const char *from_state, enum tw_flow_event ev,
                                const char *reason, struct tw_err *err) {
  const char *to = ev == TW_FLOW_SUCCEEDED ? "succeeded"
                   : ev == TW_FLOW_FAILED  ? "failed"
                                           : "cancelled";
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_TASK_SET, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  tw_db_bind_int64(st, 2, idx);
  store__bind_text(st, 3, to);
  store__bind_text(st, 4, reason ? reason : "");
  enum tw_rc rc = store__step_done(e->db, st, "flow: task end", err);
  if (rc)
    return rc;
  e->st->finished++;
  bool was_ready = !strcmp(from_state, T_READY),
       was_released = !strcmp(from_state, T_RELEASED);
  if ((rc = source_event(e, gid, idx, ev, err)))
    return rc;
  return group_add(e, gid, was_ready ? -1 : 0, 1, was_released ? -1 : 0,
                   ev == TW_FLOW_FAILED, ev == TW_FLOW_CANCELLED, err);
}

static enum tw_rc group_cancel(struct eng *e, const char *gid,
                               const char *reason, int64_t *n,
                               struct tw_err *err) {
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_CANCEL_OPEN, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  store__bind_text(st, 2, reason);
  enum tw_rc rc = store__step_done(e->db, st, "flow: cancel", err);
  if (rc)
    return rc;
  int64_t ch = tw_db_changes(e->db);
  if (n)
    *n = ch;
  /* the jobs released: cancelled now, their events finish their tasks */
  if (!(st = st_of(e->s, e->db, SQL_RELEASED_JOBS, err)))
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  char (*ids)[TW_JOB_ID_LEN + 1] = NULL;
  size_t nj = 0, cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (nj == cap) {
      cap = cap ? cap * 2 : 16;
      ids = tw_realloc(ids, cap * sizeof *ids);
    }
    snprintf(ids[nj++], TW_JOB_ID_LEN + 1, "%s", col_text(st, 0));
  }
  tw_db_reset(st);
  for (size_t i = 0; i < nj && !rc; i++)
    rc = job_end(e->s, e->db, ids[i], TW_JOB_CANCELLED, reason, e->now, err);
  free(ids);
  if (n)
    *n += (int64_t)nj;
  if (rc)
    return rc;
  /* edges from the cancelled tasks into other groups (aftercorr) */
  struct edge_row *rows;
  size_t ne;
  if ((rc = collect_edges(e, SQL_OUT_EDGES_OF_GROUP, gid, 0, false, &rows, &ne,
                          err)))
    return rc;
  for (size_t i = 0; i < ne && !rc; i++)
    rc = edge_resolve(e, rows[i].rowid, rows[i].dgid, rows[i].didx,
                      tw_flow_edge_resolve(rows[i].cond, TW_FLOW_CANCELLED),
                      rows[i].delay_s, err);
  free(rows);
  if (rc)
    return rc;
  e->st->finished += ch;
  /* n_ready drops to 0: every ready task was cancelled */
  if (!(st = st_of(e->s, e->db, SQL_ZERO_READY, err)))
    return TW_E_IO;
  store__bind_text(st, 1, gid);
  if ((rc = store__step_done(e->db, st, "flow: cancel", err)))
    return rc;
  return group_add(e, gid, 0, ch, 0, 0, ch, err);
}

/* ---- submission ------------------------------------------------------------- */

struct submit_arg {
  const struct tw_flow_plan *p;
  int64_t projected;
  const struct tw_audit_event *audit;
  const char *field;
  char id[TW_FLOW_GID_LEN + 1];
  const char *job_id; /* the plain job's, or NULL */
  enum tw_job_state job_state;
};

static void outputs_json(const struct tw_flow_tmpl *t, struct tw_buf *b) {
  if (!t->n_outputs)
    return;
  tw_buf_addc(b, '[');
  for (size_t i = 0; i < t->n_outputs; i++) {
    tw_buf_adds(b, i ? ",{\"name\":" : "{\"name\":");
    tw_buf_json_str(b, t->outputs[i].name);
    tw_buf_adds(b, ",\"uri\":");
    tw_buf_json_str(b, t->outputs[i].uri);
    tw_buf_printf(b, ",\"size_bytes\":%lld}",
                  (long long)t->outputs[i].size_bytes);
  }
  tw_buf_addc(b, ']');
}

struct ext_src {
  char src[TW_FLOW_ID_MAX + 1];
  int64_t sidx;
  bool known;
  bool has_ev;
  enum tw_flow_event ev;
};

/* Where an outside id's edges come from, and what it did already. */
static enum tw_rc ext_lookup(struct tw_store *s, struct tw_db *db,
                             const struct tw_flow_ext *x, int64_t aindex,
                             struct ext_src *o, struct tw_err *err) {
  memset(o, 0, sizeof *o);
  snprintf(o->src, sizeof o->src, "%s", x->id);
  if (x->id[0] == 'j' && x->id[1] == '-') {
    struct tw_db_stmt *st = st_of(s, db, SQL_JOB_STATE, err);
    if (!st)
      return TW_E_IO;
    store__bind_text(st, 1, x->id);
    int r = tw_db_step(st);
    if (r == TW_DB_ROW) {
      enum tw_job_state js;
      o->known = true;
      o->sidx = -1;
      if (tw_job_state_parse(col_text(st, 0), &js))
        o->has_ev = job_event_of(js, &o->ev);
    }
    tw_db_reset(st);
    return r == TW_DB_ROW || r == TW_DB_DONE
               ? TW_OK
               : store__db_err(db, err, "flow: dependency");
  }
  if (x->corr) { /* the task of that array with the same index */
    struct tw_db_stmt *g = st_of(s, db, SQL_GROUP_SIZE, err);
    if (!g)
      return TW_E_IO;
    store__bind_text(g, 1, x->id);
    int64_t n = -1;
    if (tw_db_step(g) == TW_DB_ROW && !strcmp(col_text(g, 1), "array"))
      n = tw_db_column_int64(g, 0);
    tw_db_reset(g);
    if (n < 0)
      return TW_OK; /* not an array: unknown */
    o->known = true;
    o->sidx = -3; /* no such index: nothing to wait for there */
    /* an array's tasks are in index order: a binary search over its key */
    int64_t lo = 0, hi = n - 1;
    while (lo <= hi) {
      int64_t mid = lo + (hi - lo) / 2;
      struct tw_db_stmt *st = st_of(s, db, SQL_TASK_AT, err);
      if (!st)
        return TW_E_IO;
      store__bind_text(st, 1, x->id);
      tw_db_bind_int64(st, 2, mid);
      int r = tw_db_step(st);
      if (r != TW_DB_ROW) {
        tw_db_reset(st);
        return store__db_err(db, err, "flow: dependency");
      }
      int64_t ai = tw_db_column_int64(st, 0);
      char ts[16];
      snprintf(ts, sizeof ts, "%s", col_text(st, 1));
      tw_db_reset(st);
      if (ai < aindex) {
        lo = mid + 1;
      } else if (ai > aindex) {
        hi = mid - 1;
      } else {
        o->sidx = mid;
        o->has_ev = true;
        if (!strcmp(ts, "succeeded"))
          o->ev = TW_FLOW_SUCCEEDED;
        else if (!strcmp(ts, "failed"))
          o->ev = TW_FLOW_FAILED;
        else if (!strcmp(ts, "cancelled"))
          o->ev = TW_FLOW_CANCELLED;
        else
          o->has_ev = false;
        break;
      }
    }
    return TW_OK;
  }
  struct tw_db_stmt *st = st_of(s, db, SQL_GROUP_STATE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, x->id);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    o->known = true;
    o->sidx = -2;
    const char *gs = col_text(st, 0);
    o->has_ev = strcmp(gs, "running") != 0;
    o->ev = !strcmp(gs, "succeeded") ? TW_FLOW_SUCCEEDED
            : !strcmp(gs, "failed")  ? TW_FLOW_FAILED
                                     : TW_FLOW_CANCELLED;
  }
  tw_db_reset(st);
  return r == TW_DB_ROW || r == TW_DB_DONE
             ? TW_OK
             : store__db_err(db, err, "flow: dependency");
}

static enum tw_rc edge_put(struct tw_store *s, struct tw_db *db, const char *src,
                           int64_t sidx, const char *dgid, int64_t didx,
                           enum tw_flow_cond c, int64_t delay, int res,
                           int64_t *rowid, struct tw_err *err) {
  struct tw_db_stmt *st = st_of(s, db, SQL_EDGE_INSERT, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, src);
  tw_db_bind_int64(st, 2, sidx);
  store__bind_text(st, 3, dgid);
  tw_db_bind_int64(st, 4, didx);
  tw_db_bind_int(st, 5, (int)c);
  tw_db_bind_int64(st, 6, delay);
  tw_db_bind_int(st, 7, res);
  enum tw_rc rc = store__step_done(db, st, "flow: insert edge", err);
  if (rowid)
    *rowid = tw_db_last_insert_id(db);
  return rc;
}

static enum tw_rc op_submit(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct submit_arg *a = varg;
  const struct tw_flow_plan *p = a->p;
  struct tw_flow_pass_stats dummy = {0};
  struct eng e = {.s = s, .db = db, .st = &dummy};
  e.now = store__now_ms(s);
  enum tw_rc rc = cursor_start(s, db, err);
  if (rc)
    return rc;
  if (!a->job_id)
    new_gid(p->kind == TW_FLOW_ARRAY ? 'a' : 'w', e.now, a->id);
  else
    snprintf(a->id, sizeof a->id, "%s", a->job_id);
  size_t n = p->n_tasks;
  /* a large group's rows and index pages stay in the writer's cache until
   * the commit instead of spilling to the WAL mid-transaction (64 MiB;
   * sqlite's default is 2 MiB) */
  if (n + p->n_edges > 20000)
    tw_db_exec(db, "PRAGMA cache_size = -65536", NULL);
  int64_t *n_in = tw_calloc(n ? n : 1, sizeof *n_in);
  int64_t *n_met = tw_calloc(n ? n : 1, sizeof *n_met);
  int64_t *n_never = tw_calloc(n ? n : 1, sizeof *n_never);
  struct pending_edge {
    int64_t rowid;
    uint32_t to;
    int64_t due;
  } *timers = NULL;
  size_t n_timers = 0, cap_timers = 0;
  struct tw_buf b;
  tw_buf_init(&b);
  struct tw_db_stmt *st = st_of(s, db, SQL_GROUP_INSERT, err);
  if (!st) {
    rc = TW_E_IO;
    goto out;
  }
  store__bind_text(st, 1, a->id);
  store__bind_text(st, 2, tw_flow_kind_str(p->kind));
  store__bind_text(st, 3, p->name);
  store__bind_text(st, 4, p->tenant);
  store__bind_text(st, 5, p->project);
  tw_db_bind_int(st, 6, p->fail_fast);
  tw_db_bind_int(st, 7, p->max_running);
  tw_db_bind_int64(st, 8, (int64_t)n);
  tw_db_bind_int64(st, 9, a->projected);
  tw_db_bind_int64(st, 10, e.now);
  if ((rc = store__step_done(db, st, "flow: insert group", err))) {
    if (tw_db_errclass(db) == TW_DB_C_CONSTRAINT)
      rc = tw_err_set(err, TW_E_CONFLICT, "flow: group %s exists", a->id);
    goto out;
  }
  for (size_t t = 0; t < p->n_tmpl; t++) {
    if (!(st = st_of(s, db, SQL_TMPL_INSERT, err))) {
      rc = TW_E_IO;
      goto out;
    }
    tw_buf_reset(&b);
    outputs_json(&p->tmpl[t], &b);
    store__bind_text(st, 1, a->id);
    tw_db_bind_int64(st, 2, (int64_t)t);
    store__bind_text(st, 3, p->tmpl[t].task);
    /* a plain job's spec is the job's own: none kept twice */
    store__bind_text(st, 4, a->job_id ? "" : p->tmpl[t].spec_json);
    store__bind_text(st, 5, b.data ? b.data : "");
    if ((rc = store__step_done(db, st, "flow: insert template", err)))
      goto out;
  }
  /* internal edges: all open at submission, EDGE_BATCH rows a statement */
  size_t full = p->n_edges - p->n_edges % EDGE_BATCH;
  for (size_t k = 0; k < full; k += EDGE_BATCH) {
    if (!(st = st_of(s, db, SQL_EDGE_INSERT_BATCH, err))) {
      rc = TW_E_IO;
      goto out;
    }
    for (int j = 0; j < EDGE_BATCH; j++) {
      const struct tw_flow_edge *fe = &p->edges[k + (size_t)j];
      int o = j * 7;
      n_in[fe->to]++;
      store__bind_text(st, o + 1, a->id);
      tw_db_bind_int64(st, o + 2, fe->from);
      store__bind_text(st, o + 3, a->id);
      tw_db_bind_int64(st, o + 4, fe->to);
      tw_db_bind_int(st, o + 5, (int)fe->cond);
      tw_db_bind_int64(st, o + 6, fe->delay_s);
      tw_db_bind_int(st, o + 7, 0);
    }
    if ((rc = store__step_done(db, st, "flow: insert edges", err)))
      goto out;
  }
  for (size_t k = full; k < p->n_edges; k++) {
    const struct tw_flow_edge *fe = &p->edges[k];
    n_in[fe->to]++;
    if ((rc = edge_put(s, db, a->id, fe->from, a->id, fe->to, fe->cond,
                       fe->delay_s, 0, NULL, err)))
      goto out;
  }
  /* outside sources: met, never met or open now */
  for (size_t k = 0; k < p->n_ext; k++) {
    const struct tw_flow_ext *x = &p->ext[k];
    if (x->singleton) {
      const char *jname = p->name;
      if (!(st = st_of(s, db, SQL_SINGLETON, err))) {
        rc = TW_E_IO;
        goto out;
      }
      store__bind_text(st, 1, jname);
      store__bind_text(st, 2, p->tenant);
      store__bind_text(st, 3, a->job_id ? a->job_id : "");
      char (*ids)[TW_JOB_ID_LEN + 1] = NULL;
      size_t nid = 0, cap = 0;
      int r;
      while ((r = tw_db_step(st)) == TW_DB_ROW) {
        if (nid == cap) {
          cap = cap ? cap * 2 : 8;
          ids = tw_realloc(ids, cap * sizeof *ids);
        }
        snprintf(ids[nid++], TW_JOB_ID_LEN + 1, "%s", col_text(st, 0));
      }
      tw_db_reset(st);
      for (size_t i = 0; i < nid && !rc; i++) {
        n_in[x->to]++;
        rc = edge_put(s, db, ids[i], -1, a->id, x->to, TW_COND_ANY, 0, 0, NULL,
                      err);
      }
      free(ids);
      if (rc)
        goto out;
      continue;
    }
    struct ext_src o;
    if ((rc = ext_lookup(s, db, x, p->tasks[x->to].index, &o, err)))
      goto out;
    if (!o.known) {
      rc = tw_err_field(err, TW_E_INVALID, a->field,
                        "%s: no job or group %s (Slurm: \"Job dependency "
                        "problem\")",
                        a->field, x->id);
      goto out;
    }
    if (o.sidx == -3)
      continue; /* aftercorr without a corresponding task: nothing to wait */
    n_in[x->to]++;
    enum tw_edge_res res =
        o.has_ev ? tw_flow_edge_resolve(x->cond, o.ev) : TW_EDGE_OPEN;
    int64_t rowid;
    bool delayed = res == TW_EDGE_MET && x->delay_s > 0;
    if ((rc = edge_put(s, db, o.src, o.sidx, a->id, x->to, x->cond, x->delay_s,
                       delayed ? 3 : (int)res, &rowid, err)))
      goto out;
    int64_t due = 0;
    if (delayed) { /* started already: the delay runs from its start */
      struct tw_db_stmt *q = st_of(s, db, SQL_STARTED_AT, err);
      if (!q) {
        rc = TW_E_IO;
        goto out;
      }
      store__bind_text(q, 1, o.src);
      due = e.now + x->delay_s * 1000; /* ended without starting: from now */
      if (tw_db_step(q) == TW_DB_ROW)
        due = tw_db_column_int64(q, 0) + x->delay_s * 1000;
      tw_db_reset(q);
    }
    if (delayed) {
      if (n_timers == cap_timers) {
        cap_timers = cap_timers ? cap_timers * 2 : 8;
        timers = tw_realloc(timers, cap_timers * sizeof *timers);
      }
      timers[n_timers++] =
          (struct pending_edge){.rowid = rowid, .to = x->to, .due = due};
    } else if (res == TW_EDGE_MET) {
      n_met[x->to]++;
    } else if (res == TW_EDGE_NEVER) {
      n_never[x->to]++;
    }
  }
  for (size_t i = 0; i < n_timers; i++) {
    if (!(st = st_of(s, db, SQL_TIMER_INSERT, err))) {
      rc = TW_E_IO;
      goto out;
    }
    tw_db_bind_int64(st, 1, timers[i].due);
    tw_db_bind_int64(st, 2, timers[i].rowid);
    if ((rc = store__step_done(db, st, "flow: timer", err)))
      goto out;
  }
  /* the tasks, their state from their counters */
  int64_t ready = 0;
  size_t *doomed = NULL, n_doomed = 0;
  for (size_t k = 0; k < n; k++) {
    const struct tw_flow_task *t = &p->tasks[k];
    enum tw_edge_res rd =
        tw_flow_task_readiness(t->any, n_in[k], n_met[k], n_never[k]);
    const char *state = rd == TW_EDGE_MET ? T_READY : T_WAITING;
    const char *reason = rd == TW_EDGE_MET ? "" : "dependencies";
    if (rd == TW_EDGE_NEVER) {
      reason = "DependencyNeverSatisfied: a dependency can never be met";
      if (t->kill) {
        doomed = tw_realloc(doomed, (n_doomed + 1) * sizeof *doomed);
        doomed[n_doomed++] = k;
      }
    }
    if (a->job_id && rd == TW_EDGE_MET) {
      state = T_RELEASED; /* the job stays pending */
    } else if (rd == TW_EDGE_MET) {
      ready++;
    }
    /* TASK_BATCH rows a statement while a whole batch is left */
    bool batch = k - k % TASK_BATCH + TASK_BATCH <= n;
    int j = batch ? (int)(k % TASK_BATCH) : 0, o = j * 13;
    if (!batch || j == 0) {
      st = st_of(s, db, batch ? SQL_TASK_INSERT_BATCH : SQL_TASK_INSERT, err);
      if (!st) {
        rc = TW_E_IO;
        free(doomed);
        goto out;
      }
    }
    store__bind_text(st, o + 1, a->id);
    tw_db_bind_int64(st, o + 2, (int64_t)k);
    tw_db_bind_int64(st, o + 3, t->tmpl);
    tw_db_bind_int64(st, o + 4, t->index);
    store__bind_opt(st, o + 5, t->param);
    store__bind_text(st, o + 6, state);
    store__bind_opt(st, o + 7, a->job_id);
    tw_db_bind_int(st, o + 8, t->any);
    tw_db_bind_int(st, o + 9, t->kill);
    tw_db_bind_int64(st, o + 10, n_in[k]);
    tw_db_bind_int64(st, o + 11, n_met[k]);
    tw_db_bind_int64(st, o + 12, n_never[k]);
    store__bind_text(st, o + 13, reason);
    if ((!batch || j == TASK_BATCH - 1) &&
        (rc = store__step_done(db, st, "flow: insert task", err))) {
      free(doomed);
      goto out;
    }
  }
  /* a plain job whose dependencies are met already is released: live */
  bool job_live = a->job_id && tw_flow_task_readiness(p->tasks[0].any, n_in[0],
                                                      n_met[0], n_never[0]) ==
                                   TW_EDGE_MET;
  if (ready || job_live) {
    if ((rc = group_add(&e, a->id, ready, 0, job_live ? 1 : 0, 0, 0, err))) {
      free(doomed);
      goto out;
    }
  }
  a->job_state = TW_JOB_PENDING;
  if (a->job_id) {
    bool waiting = n_in[0] > 0 &&
                   tw_flow_task_readiness(p->tasks[0].any, n_in[0], n_met[0],
                                          n_never[0]) != TW_EDGE_MET;
    if (waiting) {
      bool moved;
      const char *why = n_doomed ? "DependencyNeverSatisfied: a dependency "
                                   "can never be met"
                                 : "waiting on dependencies";
      rc = job_move(s, db, a->job_id, TW_JOB_PENDING,
                    n_doomed ? TW_JOB_FAILED : TW_JOB_WAITING, why, e.now,
                    &moved, err);
      a->job_state = n_doomed ? TW_JOB_FAILED : TW_JOB_WAITING;
    }
  } else {
    for (size_t i = 0; i < n_doomed && !rc; i++)
      rc = task_finished(&e, a->id, (int64_t)doomed[i], T_WAITING,
                         TW_FLOW_FAILED,
                         "DependencyNeverSatisfied: a dependency can never be "
                         "met",
                         err);
  }
  free(doomed);
  if (rc)
    goto out;
  if (a->audit) {
    struct tw_audit_event ev = *a->audit;
    ev.object = a->id;
    rc = store__audit_append(s, db, &ev, e.now, NULL, err);
  }
out:
  tw_buf_release(&b);
  free(n_in);
  free(n_met);
  free(n_never);
  free(timers);
  return rc;
}

enum tw_rc tw_store_flow_submit(struct tw_store *s,
                                const struct tw_flow_plan *p,
                                int64_t projected_uusd,
                                const struct tw_audit_event *audit,
                                const char *field,
                                char id_out[TW_FLOW_GID_LEN + 1],
                                struct tw_err *err) {
  struct submit_arg a = {.p = p,
                         .projected = projected_uusd,
                         .audit = audit,
                         .field = field ? field : "depends_on"};
  enum tw_rc rc = tw_store_write(s, op_submit, &a, err);
  if (rc == TW_OK)
    snprintf(id_out, TW_FLOW_GID_LEN + 1, "%s", a.id);
  return rc;
}

enum tw_rc store__flow_job_created(struct tw_store *s, struct tw_db *db,
                                   const char *job_id,
                                   const struct tw_flow_plan *p,
                                   enum tw_job_state *state_out,
                                   struct tw_err *err) {
  struct submit_arg a = {
      .p = p, .job_id = job_id, .field = "depends_on", .job_state = 0};
  enum tw_rc rc = op_submit(s, db, &a, err);
  *state_out = a.job_state;
  return rc;
}

/* ---- the pass ----------------------------------------------------------------- */

/* The datasets a task reads from its predecessors' outputs, located where
 * each predecessor ran. */
static void pred_datasets(struct eng *e, const char *gid, int64_t idx,
                          struct tw_dataset_ref **out, size_t *n) {
  *out = NULL;
  *n = 0;
  struct tw_err err = {0};
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_PRED_OUTPUTS, &err);
  if (!st)
    return;
  store__bind_text(st, 1, gid);
  tw_db_bind_int64(st, 2, idx);
  while (tw_db_step(st) == TW_DB_ROW) {
    const char *outs = col_text(st, 0), *pl = col_text(st, 1);
    /* the placement's provider and region ("provider":"aws",...,
     * "region":"us-east-1") */
    char loc[160] = "";
    const char *pp = strstr(pl, "\"provider\":\""),
               *rr = strstr(pl, "\"region\":\"");
    if (pp && rr) {
      pp += 12;
      rr += 10;
      int lp = (int)strcspn(pp, "\""), lr = (int)strcspn(rr, "\"");
      if (lp < 60 && lr < 90)
        snprintf(loc, sizeof loc, "%.*s:%.*s", lp, pp, lr, rr);
    }
    /* outputs: [{"name":..,"uri":"..","size_bytes":N},...] */
    const char *q = outs;
    while ((q = strstr(q, "\"uri\":\"")) && *n < 64) {
      q += 7;
      size_t lu = 0;
      while (q[lu] && q[lu] != '"')
        lu += q[lu] == '\\' && q[lu + 1] ? 2 : 1;
      const char *sz = strstr(q + lu, "\"size_bytes\":");
      *out = tw_realloc(*out, (*n + 1) * sizeof **out);
      struct tw_dataset_ref *d = &(*out)[(*n)++];
      d->uri = tw_calloc(1, lu + 1);
      memcpy(d->uri, q, lu);
      d->size_bytes = sz ? strtoll(sz + 13, NULL, 10) : 0;
      d->location = loc[0] ? tw_strdup(loc) : NULL;
      q += lu;
    }
  }
  tw_db_reset(st);
}

static enum tw_rc release_one(struct eng *e, const char *gid,
                              enum tw_flow_kind kind, const char *name,
                              const char *tenant, const char *project,
                              int64_t idx, int64_t tmpl, int64_t aindex,
                              const char *param, const char *job_id,
                              struct tw_err *err) {
  enum tw_rc rc;
  if (kind == TW_FLOW_JOB) { /* the job waits already: queue it */
    bool moved;
    if ((rc = job_move(e->s, e->db, job_id, TW_JOB_WAITING, TW_JOB_PENDING,
                       "dependencies met", e->now, &moved, err)))
      return rc;
  } else {
    struct tw_db_stmt *st = st_of(e->s, e->db, SQL_TMPL_GET, err);
    if (!st)
      return TW_E_IO;
    store__bind_text(st, 1, gid);
    tw_db_bind_int64(st, 2, tmpl);
    char *task = NULL, *spec = NULL;
    if (tw_db_step(st) == TW_DB_ROW) {
      task = tw_strdup(col_text(st, 0));
      spec = tw_strdup(col_text(st, 1));
    }
    tw_db_reset(st);
    if (!spec) {
      free(task);
      return tw_err_set(err, TW_E_INTERNAL, "flow: %s has no template %lld",
                        gid, (long long)tmpl);
    }
    struct tw_dataset_ref *ds;
    size_t nds;
    pred_datasets(e, gid, idx, &ds, &nds);
    struct tw_buf b;
    tw_buf_init(&b);
    char jname[TW_SPEC_NAME_MAX + 1];
    rc = tw_flow_task_spec(spec, kind, gid, task, aindex, param, ds, nds, &b,
                           jname, sizeof jname, err);
    for (size_t i = 0; i < nds; i++) {
      free(ds[i].uri);
      free(ds[i].location);
    }
    free(ds);
    free(task);
    free(spec);
    if (rc) {
      tw_buf_release(&b);
      return rc;
    }
    (void)name;
    struct tw_job_new req = {.name = jname,
                             .tenant = tenant,
                             .project = project,
                             .priority = 0,
                             .spec_json = b.data};
    /* the priority is the spec's own */
    const char *pr = strstr(b.data, "\"priority\":");
    if (pr)
      req.priority = (int)strtol(pr + 11, NULL, 10);
    struct store_job_prep jp;
    struct tw_job_rec rec;
    bool replayed = false;
    rc = store__job_prepare(e->s, &req, &jp, err);
    if (!rc)
      rc = store__job_insert(e->s, &req, &jp, &rec, &replayed, err);
    tw_buf_release(&b);
    if (rc)
      return rc;
    if (!(st = st_of(e->s, e->db, SQL_TASK_RELEASED, err))) {
      tw_job_rec_release(&rec);
      return TW_E_IO;
    }
    store__bind_text(st, 1, gid);
    tw_db_bind_int64(st, 2, idx);
    store__bind_text(st, 3, rec.id);
    rc = store__step_done(e->db, st, "flow: released", err);
    tw_job_rec_release(&rec);
    if (rc)
      return rc;
  }
  if (kind == TW_FLOW_JOB) {
    struct tw_db_stmt *st = st_of(e->s, e->db, SQL_TASK_SET, err);
    if (!st)
      return TW_E_IO;
    store__bind_text(st, 1, gid);
    tw_db_bind_int64(st, 2, idx);
    store__bind_text(st, 3, T_RELEASED);
    store__bind_text(st, 4, "");
    if ((rc = store__step_done(e->db, st, "flow: released", err)))
      return rc;
  }
  e->st->released++;
  return group_add(e, gid, -1, 0, 1, 0, 0, err);
}

struct ready_row {
  int64_t idx, tmpl, aindex;
  char *param;
  char job_id[TW_JOB_ID_LEN + 1];
};

static enum tw_rc release_ready(struct eng *e, int budget, struct tw_err *err) {
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_GROUPS_READY, err);
  if (!st)
    return TW_E_IO;
  struct grow {
    char id[TW_FLOW_GID_LEN + 1];
    enum tw_flow_kind kind;
    int64_t max_running, active, ready;
  } *g = NULL;
  size_t ng = 0, cap = 0;
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (ng == cap) {
      cap = cap ? cap * 2 : 8;
      g = tw_realloc(g, cap * sizeof *g);
    }
    snprintf(g[ng].id, sizeof g[ng].id, "%s", col_text(st, 0));
    const char *k = col_text(st, 1);
    g[ng].kind = !strcmp(k, "array")      ? TW_FLOW_ARRAY
                 : !strcmp(k, "workflow") ? TW_FLOW_WORKFLOW
                                          : TW_FLOW_JOB;
    g[ng].max_running = tw_db_column_int64(st, 2);
    g[ng].active = tw_db_column_int64(st, 3);
    g[ng].ready = tw_db_column_int64(st, 4);
    ng++;
  }
  tw_db_reset(st);
  enum tw_rc rc = r == TW_DB_DONE ? TW_OK : store__db_err(e->db, err, "flow");
  for (size_t i = 0; i < ng && !rc && budget > 0; i++) {
    int64_t k = g[i].ready < budget ? g[i].ready : budget;
    if (g[i].max_running > 0) {
      int64_t room = g[i].max_running - g[i].active;
      if (room < k)
        k = room;
    }
    if (k <= 0)
      continue;
    struct tw_db_stmt *q = st_of(e->s, e->db, SQL_GROUP_ROW, err);
    if (!q) {
      rc = TW_E_IO;
      break;
    }
    store__bind_text(q, 1, g[i].id);
    char name[160] = "", tenant[129] = "", project[129] = "";
    if (tw_db_step(q) == TW_DB_ROW) {
      snprintf(name, sizeof name, "%s", col_text(q, 1));
      snprintf(tenant, sizeof tenant, "%s", col_text(q, 2));
      snprintf(project, sizeof project, "%s", col_text(q, 3));
    }
    tw_db_reset(q);
    if (!(q = st_of(e->s, e->db, SQL_READY_TASKS, err))) {
      rc = TW_E_IO;
      break;
    }
    store__bind_text(q, 1, g[i].id);
    tw_db_bind_int64(q, 2, k);
    struct ready_row *rows = tw_calloc((size_t)k, sizeof *rows);
    size_t nr = 0;
    while (nr < (size_t)k && tw_db_step(q) == TW_DB_ROW) {
      rows[nr].idx = tw_db_column_int64(q, 0);
      rows[nr].tmpl = tw_db_column_int64(q, 1);
      rows[nr].aindex = tw_db_column_int64(q, 2);
      rows[nr].param = tw_db_column_type(q, 3) == TW_DB_NULL
                           ? NULL
                           : tw_strdup(col_text(q, 3));
      snprintf(rows[nr].job_id, sizeof rows[nr].job_id, "%s", col_text(q, 4));
      nr++;
    }
    tw_db_reset(q);
    for (size_t j = 0; j < nr; j++) {
      if (!rc)
        rc = release_one(e, g[i].id, g[i].kind, name, tenant, project,
                         rows[j].idx, rows[j].tmpl, rows[j].aindex,
                         rows[j].param, rows[j].job_id, err);
      free(rows[j].param);
    }
    free(rows);
    budget -= (int)nr;
  }
  free(g);
  return rc;
}

struct pass_arg {
  int64_t now;
  int max_release;
  struct tw_flow_pass_stats st;
};

struct ev_row {
  int64_t seq, at_ms;
  char job_id[TW_JOB_ID_LEN + 1];
  enum tw_job_state to;
};

static enum tw_rc one_event(struct eng *e, const struct ev_row *ev,
                            struct tw_err *err) {
  enum tw_flow_event fe;
  if (!job_event_of(ev->to, &fe))
    return TW_OK;
  if (ev->to == TW_JOB_INTERRUPTED || ev->to == TW_JOB_RECOVERING)
    return TW_OK; /* it started before */
  /* its task, when a group made it */
  struct tw_db_stmt *st = st_of(e->s, e->db, SQL_TASK_OF_JOB, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, ev->job_id);
  char gid[TW_FLOW_ID_MAX + 1] = "", tstate[16] = "";
  int64_t idx = 0;
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    snprintf(gid, sizeof gid, "%s", col_text(st, 0));
    idx = tw_db_column_int64(st, 1);
    snprintf(tstate, sizeof tstate, "%s", col_text(st, 2));
  }
  tw_db_reset(st);
  if (r != TW_DB_ROW && r != TW_DB_DONE)
    return store__db_err(e->db, err, "flow: task of job");
  enum tw_rc rc = TW_OK;
  if (gid[0]) {
    bool open = !strcmp(tstate, T_RELEASED) || !strcmp(tstate, T_WAITING) ||
                !strcmp(tstate, T_READY);
    if (fe == TW_FLOW_STARTED)
      rc = source_event(e, gid, idx, fe, err);
    else if (open)
      rc = task_finished(e, gid, idx, tstate, fe, NULL, err);
    if (rc)
      return rc;
  }
  /* edges from the job itself (depends_on naming it) */
  return source_event(e, ev->job_id, -1, fe, err);
}

static enum tw_rc op_pass(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct pass_arg *a = varg;
  struct eng e = {.s = s, .db = db, .now = a->now, .st = &a->st};
  enum tw_rc rc0 = cursor_start(s, db, err);
  if (rc0)
    return rc0;
  struct tw_db_stmt *st = st_of(s, db, SQL_CURSOR, err);
  if (!st)
    return TW_E_IO;
  int64_t cursor = 0;
  if (tw_db_step(st) == TW_DB_ROW)
    cursor = tw_db_column_int64(st, 0);
  tw_db_reset(st);
  enum tw_rc rc = TW_OK;
  /* the events since the cursor, a bounded batch at a time */
  for (int round = 0; round < 8 && !rc; round++) {
    if (!(st = st_of(s, db, SQL_EVENTS_SINCE, err)))
      return TW_E_IO;
    tw_db_bind_int64(st, 1, cursor);
    tw_db_bind_int(st, 2, 4096);
    struct ev_row *evs = NULL;
    size_t n = 0, cap = 0;
    int r;
    while ((r = tw_db_step(st)) == TW_DB_ROW) {
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        evs = tw_realloc(evs, cap * sizeof *evs);
      }
      evs[n].seq = tw_db_column_int64(st, 0);
      snprintf(evs[n].job_id, sizeof evs[n].job_id, "%s", col_text(st, 1));
      if (!tw_job_state_parse(col_text(st, 2), &evs[n].to))
        evs[n].to = TW_JOB_PENDING;
      evs[n].at_ms = tw_db_column_int64(st, 3);
      n++;
    }
    tw_db_reset(st);
    if (r != TW_DB_DONE) {
      free(evs);
      return store__db_err(db, err, "flow: events");
    }
    for (size_t i = 0; i < n && !rc; i++) {
      e.event_ms = evs[i].at_ms;
      rc = one_event(&e, &evs[i], err);
      e.event_ms = 0;
      cursor = evs[i].seq;
      a->st.events++;
    }
    free(evs);
    if (n < 4096)
      break;
  }
  if (rc)
    return rc;
  /* delays that fell due */
  if (!(st = st_of(s, db, SQL_TIMERS_DUE, err)))
    return TW_E_IO;
  tw_db_bind_int64(st, 1, a->now);
  int64_t (*due)[2] = NULL;
  size_t nd = 0, capd = 0;
  while (tw_db_step(st) == TW_DB_ROW) {
    if (nd == capd) {
      capd = capd ? capd * 2 : 16;
      due = tw_realloc(due, capd * sizeof *due);
    }
    due[nd][0] = tw_db_column_int64(st, 0);
    due[nd][1] = tw_db_column_int64(st, 1);
    nd++;
  }
  tw_db_reset(st);
  for (size_t i = 0; i < nd && !rc; i++) {
    struct tw_db_stmt *g = st_of(s, db, SQL_EDGE_GET, err);
    if (!g) {
      rc = TW_E_IO;
      break;
    }
    tw_db_bind_int64(g, 1, due[i][1]);
    char dgid[TW_FLOW_ID_MAX + 1] = "";
    int64_t didx = -1;
    if (tw_db_step(g) == TW_DB_ROW) {
      snprintf(dgid, sizeof dgid, "%s", col_text(g, 0));
      didx = tw_db_column_int64(g, 1);
    }
    tw_db_reset(g);
    if (dgid[0])
      rc = edge_resolve(&e, due[i][1], dgid, didx, TW_EDGE_MET, 0, err);
    if (rc)
      break;
    if (!(g = st_of(s, db, SQL_TIMER_DEL, err))) {
      rc = TW_E_IO;
      break;
    }
    tw_db_bind_int64(g, 1, due[i][0]);
    rc = store__step_done(db, g, "flow: timer", err);
  }
  free(due);
  if (rc)
    return rc;
  if ((rc = release_ready(&e, a->max_release, err)))
    return rc;
  if (a->st.events) {
    if (!(st = st_of(s, db, SQL_CURSOR_SET, err)))
      return TW_E_IO;
    tw_db_bind_int64(st, 1, cursor);
    rc = store__step_done(db, st, "flow: cursor", err);
  }
  return rc;
}

static enum tw_rc op_any_running(struct tw_store *s, struct tw_db *db, void *varg,
                                 struct tw_err *err) {
  struct tw_db_stmt *st = tw_store_stmt(s, db, SQL_ANY_RUNNING, err);
  if (!st)
    return TW_E_IO;
  tw_db_reset(st);
  *(bool *)varg = tw_db_step(st) == TW_DB_ROW && tw_db_column_int(st, 0);
  tw_db_reset(st);
  return TW_OK;
}

enum tw_rc tw_store_flow_pass(struct tw_store *s, int64_t now_ms,
                              int max_release, struct tw_flow_pass_stats *st,
                              struct tw_err *err) {
  struct pass_arg a = {.now = now_ms,
                       .max_release = max_release >= 0 ? max_release : 256};
  if (st)
    memset(st, 0, sizeof *st);
  /* no group running: no open edge, no timer, nothing to release, and
   * the job events concern nobody; the writer is not asked (a group
   * stored later reads its sources' states at submission) */
  bool any = true;
  if (tw_store_read(s, op_any_running, &any, err) == TW_OK && !any)
    return TW_OK;
  enum tw_rc rc = tw_store_write(s, op_pass, &a, err);
  if (st)
    *st = a.st;
  return rc;
}

/* ---- cancel ------------------------------------------------------------------ */

struct cancel_arg {
  const char *gid, *reason;
  const struct tw_audit_event *audit;
  int64_t n;
  int64_t now;
};

static enum tw_rc op_cancel(struct tw_store *s, struct tw_db *db, void *varg,
                            struct tw_err *err) {
  struct cancel_arg *a = varg;
  struct tw_flow_pass_stats dummy = {0};
  struct eng e = {.s = s, .db = db, .now = a->now, .st = &dummy};
  struct tw_db_stmt *st = st_of(s, db, SQL_GROUP_STATE, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  int r = tw_db_step(st);
  char state[16] = "";
  if (r == TW_DB_ROW)
    snprintf(state, sizeof state, "%s", col_text(st, 0));
  tw_db_reset(st);
  if (r == TW_DB_DONE)
    return tw_err_set(err, TW_E_NOTFOUND, "workflow %s not found", a->gid);
  if (r != TW_DB_ROW)
    return store__db_err(db, err, "flow: cancel");
  if (strcmp(state, "running"))
    return tw_err_set(err, TW_E_CONFLICT, "%s already %s", a->gid, state);
  if (!(st = st_of(s, db, SQL_GROUP_CANCEL_ASK, err)))
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  store__bind_text(st, 2, a->reason);
  enum tw_rc rc = store__step_done(db, st, "flow: cancel", err);
  if (!rc)
    rc = group_cancel(&e, a->gid, a->reason, &a->n, err);
  if (!rc && a->audit) {
    struct tw_audit_event ev = *a->audit;
    ev.object = a->gid;
    rc = store__audit_append(s, db, &ev, a->now, NULL, err);
  }
  return rc;
}

enum tw_rc tw_store_flow_cancel(struct tw_store *s, const char *gid,
                                const char *reason,
                                const struct tw_audit_event *audit,
                                int64_t *n_cancelled, struct tw_err *err) {
  struct cancel_arg a = {.gid = gid,
                         .reason = reason ? reason : "cancelled by request",
                         .audit = audit,
                         .now = store__now_ms(s)};
  enum tw_rc rc = tw_store_write(s, op_cancel, &a, err);
  if (n_cancelled)
    *n_cancelled = a.n;
  return rc;
}

/* ---- reads -------------------------------------------------------------------- */

struct get_arg {
  const char *gid;
  struct tw_flow_rec *out;
  bool found;
};

static enum tw_rc op_get(struct tw_store *s, struct tw_db *db, void *varg,
                         struct tw_err *err) {
  struct get_arg *a = varg;
  struct tw_flow_rec *o = a->out;
  struct tw_db_stmt *st = st_of(s, db, SQL_GET, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  int r = tw_db_step(st);
  if (r == TW_DB_ROW) {
    a->found = true;
    snprintf(o->id, sizeof o->id, "%s", col_text(st, 0));
    const char *k = col_text(st, 1);
    o->kind = !strcmp(k, "array")      ? TW_FLOW_ARRAY
              : !strcmp(k, "workflow") ? TW_FLOW_WORKFLOW
                                       : TW_FLOW_JOB;
    snprintf(o->name, sizeof o->name, "%s", col_text(st, 2));
    snprintf(o->tenant, sizeof o->tenant, "%s", col_text(st, 3));
    snprintf(o->project, sizeof o->project, "%s", col_text(st, 4));
    snprintf(o->state, sizeof o->state, "%s", col_text(st, 5));
    snprintf(o->reason, sizeof o->reason, "%s", col_text(st, 6));
    o->fail_fast = tw_db_column_int(st, 7);
    o->max_running = tw_db_column_int(st, 8);
    o->n_tasks = tw_db_column_int64(st, 9);
    o->projected_uusd = tw_db_column_int64(st, 10);
    o->created_ms = tw_db_column_int64(st, 11);
    o->updated_ms = tw_db_column_int64(st, 12);
  }
  tw_db_reset(st);
  if (r == TW_DB_DONE)
    return TW_OK;
  if (r != TW_DB_ROW)
    return store__db_err(db, err, "flow: get");
  if (!(st = st_of(s, db, SQL_COUNT_TASKS, err)))
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  while (tw_db_step(st) == TW_DB_ROW) {
    const char *ts = col_text(st, 0);
    int64_t c = tw_db_column_int64(st, 1);
    if (!strcmp(ts, "waiting"))
      o->waiting += c;
    else if (!strcmp(ts, "ready"))
      o->ready += c;
    else if (!strcmp(ts, "succeeded"))
      o->succeeded += c;
    else if (!strcmp(ts, "failed"))
      o->failed += c;
    else if (!strcmp(ts, "cancelled"))
      o->cancelled += c;
  }
  tw_db_reset(st);
  if (!(st = st_of(s, db, SQL_COUNT_JOBS, err)))
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  while (tw_db_step(st) == TW_DB_ROW) {
    enum tw_job_state js;
    int64_t c = tw_db_column_int64(st, 1);
    if (!tw_job_state_parse(col_text(st, 0), &js))
      continue;
    switch (js) {
    case TW_JOB_WAITING:
      o->waiting += c;
      break;
    case TW_JOB_PENDING:
    case TW_JOB_PLACING:
      o->pending += c;
      break;
    case TW_JOB_SUCCEEDED:
      o->succeeded += c;
      break;
    case TW_JOB_FAILED:
      o->failed += c;
      break;
    case TW_JOB_CANCELLED:
      o->cancelled += c;
      break;
    default:
      o->running += c;
    }
  }
  tw_db_reset(st);
  if (!(st = st_of(s, db, SQL_COST, err)))
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  if (tw_db_step(st) == TW_DB_ROW)
    o->cost_uusd = tw_db_column_int64(st, 0);
  tw_db_reset(st);
  return TW_OK;
}

enum tw_rc tw_store_flow_get(struct tw_store *s, const char *gid,
                             struct tw_flow_rec *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct get_arg a = {.gid = gid, .out = out};
  enum tw_rc rc = tw_store_read(s, op_get, &a, err);
  if (rc == TW_OK && !a.found)
    return tw_err_set(err, TW_E_NOTFOUND, "workflow %s not found", gid);
  return rc;
}

struct list_arg {
  const char *tenant, *state, *before_id;
  int64_t before_ms, next_ms;
  int limit;
  char (*ids)[TW_FLOW_GID_LEN + 1];
  size_t n;
};

static enum tw_rc op_list(struct tw_store *s, struct tw_db *db, void *varg,
                          struct tw_err *err) {
  struct list_arg *a = varg;
  struct tw_db_stmt *st = st_of(s, db, SQL_LIST, err);
  if (!st)
    return TW_E_IO;
  store__bind_opt(st, 1, a->tenant);
  store__bind_opt(st, 2, a->state);
  /* the first page: every group is before (INT64_MAX, "") */
  tw_db_bind_int64(st, 3, a->before_id ? a->before_ms : INT64_MAX);
  store__bind_text(st, 4, a->before_id ? a->before_id : "");
  tw_db_bind_int(st, 5, a->limit + 1);
  int r;
  int64_t last = 0;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == (size_t)a->limit) {
      a->next_ms = last; /* one more row exists: this page ends at last */
      break;
    }
    last = tw_db_column_int64(st, 0);
    snprintf(a->ids[a->n++], TW_FLOW_GID_LEN + 1, "%s", col_text(st, 1));
  }
  tw_db_reset(st);
  return r == TW_DB_DONE || r == TW_DB_ROW ? TW_OK
                                           : store__db_err(db, err, "list");
}

enum tw_rc tw_store_flow_list(struct tw_store *s, const char *tenant,
                              const char *state, int64_t before_ms,
                              const char *before_id, int limit,
                              char (*ids)[TW_FLOW_GID_LEN + 1], size_t *n,
                              int64_t *next_ms, struct tw_err *err) {
  struct list_arg a = {.tenant = tenant,
                       .state = state,
                       .before_id = before_id,
                       .before_ms = before_ms,
                       .next_ms = -1,
                       .limit = limit < 1 ? 1 : limit > 500 ? 500 : limit,
                       .ids = ids};
  enum tw_rc rc = tw_store_read(s, op_list, &a, err);
  *n = rc ? 0 : a.n;
  *next_ms = rc ? -1 : a.next_ms;
  return rc;
}

struct tasks_arg {
  const char *gid;
  int64_t after;
  int limit;
  struct tw_flow_task_rec *out;
  size_t n;
};

static enum tw_rc op_tasks(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct tasks_arg *a = varg;
  struct tw_db_stmt *st = st_of(s, db, SQL_TASKS, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  tw_db_bind_int64(st, 2, a->after);
  tw_db_bind_int(st, 3, a->limit);
  a->out = tw_calloc((size_t)a->limit, sizeof *a->out);
  int r;
  while ((r = tw_db_step(st)) == TW_DB_ROW && a->n < (size_t)a->limit) {
    struct tw_flow_task_rec *t = &a->out[a->n++];
    t->idx = tw_db_column_int64(st, 0);
    t->index = tw_db_column_int64(st, 1);
    snprintf(t->task, sizeof t->task, "%s", col_text(st, 2));
    t->param = tw_db_column_type(st, 3) == TW_DB_NULL
                   ? NULL
                   : tw_strdup(col_text(st, 3));
    snprintf(t->state, sizeof t->state, "%s", col_text(st, 4));
    snprintf(t->job_id, sizeof t->job_id, "%s", col_text(st, 5));
    snprintf(t->job_state, sizeof t->job_state, "%s", col_text(st, 6));
    snprintf(t->reason, sizeof t->reason, "%s", col_text(st, 7));
  }
  tw_db_reset(st);
  return r == TW_DB_DONE || r == TW_DB_ROW ? TW_OK
                                             : store__db_err(db, err, "tasks");
}

void tw_store_flow_tasks_free(struct tw_flow_task_rec *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(t[i].param);
  free(t);
}

enum tw_rc tw_store_flow_tasks(struct tw_store *s, const char *gid,
                               int64_t after, int limit,
                               struct tw_flow_task_rec **out, size_t *n,
                               struct tw_err *err) {
  struct tasks_arg a = {.gid = gid,
                        .after = after,
                        .limit = limit < 1 ? 1 : limit > 5000 ? 5000 : limit};
  enum tw_rc rc = tw_store_read(s, op_tasks, &a, err);
  if (rc) {
    tw_store_flow_tasks_free(a.out, a.n);
    a.out = NULL;
    a.n = 0;
  }
  *out = a.out;
  *n = a.n;
  return rc;
}

struct edges_arg {
  const char *gid;
  int64_t after, next;
  int limit;
  struct tw_flow_edge_rec *out;
  size_t n;
};

static enum tw_rc op_edges(struct tw_store *s, struct tw_db *db, void *varg,
                           struct tw_err *err) {
  struct edges_arg *a = varg;
  struct tw_db_stmt *st = st_of(s, db, SQL_EDGES_INTO, err);
  if (!st)
    return TW_E_IO;
  store__bind_text(st, 1, a->gid);
  tw_db_bind_int64(st, 2, a->after);
  tw_db_bind_int(st, 3, a->limit + 1);
  a->out = tw_calloc((size_t)a->limit, sizeof *a->out);
  int r;
  int64_t last = 0;
  while ((r = tw_db_step(st)) == TW_DB_ROW) {
    if (a->n == (size_t)a->limit) {
      a->next = last;
      break;
    }
    struct tw_flow_edge_rec *e = &a->out[a->n++];
    last = tw_db_column_int64(st, 0);
    snprintf(e->src, sizeof e->src, "%s", col_text(st, 1));
    e->sidx = tw_db_column_int64(st, 2);
    e->didx = tw_db_column_int64(st, 3);
    e->cond = (enum tw_flow_cond)tw_db_column_int(st, 4);
    e->res = tw_db_column_int(st, 5);
  }
  tw_db_reset(st);
  return r == TW_DB_DONE || r == TW_DB_ROW ? TW_OK
                                             : store__db_err(db, err, "edges");
}

enum tw_rc tw_store_flow_edges(struct tw_store *s, const char *gid,
                               int64_t after, int limit,
                               struct tw_flow_edge_rec **out, size_t *n,
                               int64_t *next, struct tw_err *err) {
  struct edges_arg a = {.gid = gid,
                        .after = after,
                        .limit = limit < 1 ? 1 : limit > 5000 ? 5000 : limit};
  enum tw_rc rc = tw_store_read(s, op_edges, &a, err);
  if (rc) {
    free(a.out);
    a.out = NULL;
    a.n = 0;
  }
  *out = a.out;
  *n = a.n;
  *next = a.next;
  return rc;
}
