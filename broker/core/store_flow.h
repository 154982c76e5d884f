/* store_flow.h - dependencies, arrays and workflows in the store
 * (tables flow_*; the plans are broker/core/flow.h).
 *
 * A submission is a group: its tasks, compact rows (a template, an index,
 * a parameter, counters of in-edges met and never met), and its edges.  A
 * task becomes a job only when it is released: its dependencies met and
 * its group under max_running; a plain job with depends_on is a group of
 * one task whose job exists from the start, in state waiting.
 *
 * tw_store_flow_pass() moves everything on in one write: the job events
 * since its cursor (a job started or ended: its task and the edges from
 * it), the delays that fell due, then releases what is ready.  Its work is
 * proportional to what changed since the last pass, never to the size of
 * the groups. */
#ifndef TW_CORE_STORE_FLOW_H
#define TW_CORE_STORE_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/flow.h"
#include "broker/core/store.h"

struct tw_audit_event;

#define TW_FLOW_GID_LEN 28 /* "a-" or "w-" + 26 characters */

/* Stores a plan of kind array or workflow: the group, its templates,
 * tasks and edges, edges from the jobs and groups it names (met at once
 * when those already ended), an audit entry (NULL: none), in one write.
 * An id that names no job or group is TW_E_INVALID naming field.  id_out
 * gets the group's id. */
enum tw_rc tw_store_flow_submit(struct tw_store *s,
                                const struct tw_flow_plan *p,
                                int64_t projected_uusd,
                                const struct tw_audit_event *audit,
                                const char *field,
                                char id_out[TW_FLOW_GID_LEN + 1],
                                struct tw_err *err);

struct tw_flow_pass_stats {
  int64_t events;   /* job events read */
  int64_t resolved; /* edges met or never met */
  int64_t released; /* tasks made jobs (or waiting jobs queued) */
  int64_t finished; /* tasks ended */
};

/* One pass (the scheduler's, before it places): releases at most
 * max_release tasks (0: none, events and delays only; negative: 256). */
enum tw_rc tw_store_flow_pass(struct tw_store *s, int64_t now_ms,
                              int max_release, struct tw_flow_pass_stats *st,
                              struct tw_err *err);

/* Cancels a group: tasks not released are cancelled at once, released
 * ones' jobs move to cancelled (their attempts are ended as any cancelled
 * job's).  TW_E_NOTFOUND, or TW_E_CONFLICT when it already ended.
 * *n_cancelled (may be NULL) counts the tasks. */
enum tw_rc tw_store_flow_cancel(struct tw_store *s, const char *gid,
                                const char *reason,
                                const struct tw_audit_event *audit,
                                int64_t *n_cancelled, struct tw_err *err);

/* Task states: waiting, ready, released (then its job's state counts),
 * succeeded, failed, cancelled. */
struct tw_flow_rec {
  char id[TW_FLOW_GID_LEN + 1];
  enum tw_flow_kind kind;
  char name[160], tenant[129], project[129];
  char state[16]; /* running, succeeded, failed, cancelled */
  char reason[256];
  bool fail_fast;
  int max_running;
  int64_t n_tasks;
  /* progress: tasks by state; the released ones by their job's state */
  int64_t waiting, ready, pending, running, succeeded, failed, cancelled;
  int64_t projected_uusd;
  int64_t cost_uusd; /* metered so far (effective) over its jobs */
  int64_t created_ms, updated_ms;
};

enum tw_rc tw_store_flow_get(struct tw_store *s, const char *gid,
                             struct tw_flow_rec *out, struct tw_err *err);

/* Groups of kind array or workflow, newest first (created_at_ms, then
 * id, both descending): tenant and state (NULL: any) filter; a page
 * starts after the group (before_ms, before_id) (before_id NULL: from the
 * newest), at most limit (1..500) ids into ids (caller's, limit long).
 * *next_ms is the last id's created_at_ms when another page follows (its
 * cursor is that and ids[*n - 1]), -1 on the last page. */
enum tw_rc tw_store_flow_list(struct tw_store *s, const char *tenant,
                              const char *state, int64_t before_ms,
                              const char *before_id, int limit,
                              char (*ids)[TW_FLOW_GID_LEN + 1], size_t *n,
                              int64_t *next_ms, struct tw_err *err);

struct tw_flow_task_rec {
  int64_t idx, index;
  char task[72];
  char *param; /* owned, NULL when none */
  char state[16];
  char job_id[TW_JOB_ID_LEN + 1]; /* "" until released */
  char job_state[16];             /* "" until released */
  char reason[160];
};

/* Tasks from idx > after, at most limit (1..5000), in order. */
enum tw_rc tw_store_flow_tasks(struct tw_store *s, const char *gid,
                               int64_t after, int limit,
                               struct tw_flow_task_rec **out, size_t *n,
                               struct tw_err *err);
void tw_store_flow_tasks_free(struct tw_flow_task_rec *t, size_t n);

struct tw_flow_edge_rec {
  char src[TW_FLOW_ID_MAX + 1];
  int64_t sidx; /* task index in src; -1: src is a job, -2: a whole group */
  int64_t didx;
  enum tw_flow_cond cond;
  int res; /* enum tw_edge_res; 3: met after a delay still running */
};

/* Edges into the group's tasks, by rowid after `after` (a cursor),
 * at most limit; *next is the cursor of the next page (0: last). */
enum tw_rc tw_store_flow_edges(struct tw_store *s, const char *gid,
                               int64_t after, int limit,
                               struct tw_flow_edge_rec **out, size_t *n,
                               int64_t *next, struct tw_err *err);

#endif
