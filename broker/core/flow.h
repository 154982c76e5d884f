/* flow.h - dependencies, arrays and workflow documents, parsed (pure: no
 * I/O).  What the store keeps of them and how a pass moves them on is
 * broker/core/store_flow.h; docs/workflows.md has the semantics beside
 * Slurm's, AWS Batch's and Argo's.
 *
 * A submission with dependencies, an array or a workflow document becomes
 * one plan: templates (a canonical job spec each), tasks (a template, an
 * index, a parameter), edges between tasks and edges from outside sources
 * (jobs or groups already stored).  Every task waits on its in-edges: with
 * fan-in "all" it becomes ready when every edge is met and can never run
 * once one cannot be; with "any" when one is met, never when none can be. */
#ifndef TW_BROKER_FLOW_H
#define TW_BROKER_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

struct tw_node;
struct tw_spec_opts;
struct tw_dataset_ref;

#define TW_DEP_TERMS_MAX 100       /* ids in one depends_on */
#define TW_DEP_DELAY_MAX_S (365LL * 86400)
#define TW_ARRAY_TASKS_MAX 1000000 /* tasks of one array or workflow */
#define TW_ARRAY_INDEX_MAX 999999999LL
#define TW_FLOW_EDGES_MAX 4000000
#define TW_FLOW_ID_MAX 47 /* a job's or group's id in a dependency */

/* ---- dependencies (Slurm's --dependency) --------------------------------- */

enum tw_dep_kind {
  TW_DEP_AFTER = 0,  /* started (or ended without starting), + delay */
  TW_DEP_AFTERANY,   /* ended, any way */
  TW_DEP_AFTEROK,    /* succeeded */
  TW_DEP_AFTERNOTOK, /* failed or cancelled */
  TW_DEP_AFTERCORR,  /* task i of this array after task i of that one, ok */
  TW_DEP_SINGLETON   /* after every earlier live job of the same name and
                        tenant has ended */
};

struct tw_dep_term {
  enum tw_dep_kind kind;
  char id[TW_FLOW_ID_MAX + 1]; /* "" for singleton */
  int64_t delay_s;             /* after only: "+MINUTES" */
};

struct tw_dep_expr {
  bool any; /* joined by '?' (OR); else ',' (AND) */
  struct tw_dep_term *t;
  size_t n;
};

/* Parses Slurm's syntax: "afterok:ID[:ID...]", "after:ID[+minutes]",
 * "afterany", "afternotok", "aftercorr", "singleton", terms joined by ','
 * (all) or '?' (any), not both.  IDs are Tradewind job ids (j-...) or
 * group ids (a-..., w-...).  Errors name `field`. */
enum tw_rc tw_dep_parse(const char *text, const char *field,
                        struct tw_dep_expr *out, struct tw_err *err);
void tw_dep_release(struct tw_dep_expr *e);
const char *tw_dep_kind_str(enum tw_dep_kind k);

/* ---- edges ---------------------------------------------------------------- */

enum tw_flow_cond {
  TW_COND_OK = 0, /* the source succeeded */
  TW_COND_NOTOK,  /* the source failed or was cancelled */
  TW_COND_ANY,    /* the source ended */
  TW_COND_START   /* the source started running, or ended without */
};
const char *tw_flow_cond_str(enum tw_flow_cond c);
bool tw_flow_cond_parse(const char *s, enum tw_flow_cond *out);

/* What happened to a source. */
enum tw_flow_event {
  TW_FLOW_STARTED = 0,
  TW_FLOW_SUCCEEDED,
  TW_FLOW_FAILED,
  TW_FLOW_CANCELLED
};

enum tw_edge_res { TW_EDGE_OPEN = 0, TW_EDGE_MET = 1, TW_EDGE_NEVER = 2 };
/* What the event means for an edge of that condition. */
enum tw_edge_res tw_flow_edge_resolve(enum tw_flow_cond c,
                                      enum tw_flow_event ev);

/* A task's readiness from its counters: TW_EDGE_MET (ready),
 * TW_EDGE_NEVER (can never run) or TW_EDGE_OPEN (still waiting). */
enum tw_edge_res tw_flow_task_readiness(bool any, int64_t n_in, int64_t n_met,
                                        int64_t n_never);

/* ---- arrays ---------------------------------------------------------------- */

struct tw_array {
  int64_t *idx; /* ascending, distinct */
  size_t n;
  int max_running; /* "%N"; 0: no limit */
  bool sequential; /* AWS Batch SEQUENTIAL: task k after task k-1, ok */
};

/* "0-999:2", "1,3,5-7", each optionally "%N"; or a mapping
 * {indices: "...", max_running: N, sequential: bool}. */
enum tw_rc tw_array_parse_node(const struct tw_node *n, const char *field,
                               struct tw_array *out, struct tw_err *err);
enum tw_rc tw_array_parse(const char *text, const char *field,
                          struct tw_array *out, struct tw_err *err);
void tw_array_release(struct tw_array *a);
/* Canonical text: "0-998:2,1001%4" (ranges with steps, then %N). */
void tw_array_to_text(const struct tw_array *a, struct tw_buf *out);

/* ---- plans ------------------------------------------------------------------ */

struct tw_flow_output {
  char *name, *uri;
  int64_t size_bytes;
};

struct tw_flow_tmpl {
  char *task;      /* the task's name in the document ("" for an array) */
  char *spec_json; /* canonical job spec */
  struct tw_flow_output *outputs;
  size_t n_outputs;
  size_t n_tasks; /* tasks made from it */
};

struct tw_flow_task {
  uint32_t tmpl;
  int64_t index;   /* array index, or position in the fan-out */
  char *param;     /* for_each item, NULL when none */
  bool any;        /* fan-in any */
  bool kill;       /* never satisfiable: fail (true) or keep waiting */
};

struct tw_flow_edge {
  uint32_t from, to;
  enum tw_flow_cond cond;
  int64_t delay_s;
};

/* An edge from something already stored. */
struct tw_flow_ext {
  char id[TW_FLOW_ID_MAX + 1];
  uint32_t to;
  enum tw_flow_cond cond;
  int64_t delay_s;
  bool corr;      /* aftercorr: from task `to`'s index of group id */
  bool singleton; /* id empty: every earlier live job of the same name */
};

enum tw_flow_kind { TW_FLOW_JOB = 0, TW_FLOW_ARRAY, TW_FLOW_WORKFLOW };
const char *tw_flow_kind_str(enum tw_flow_kind k);

struct tw_flow_plan {
  enum tw_flow_kind kind;
  char *name, *tenant, *project;
  bool fail_fast;
  int max_running;
  /* a workflow's `placement: step`: every task placed on its own when it
   * is released; false: the whole workflow placed jointly at submission */
  bool step_placement;
  struct tw_flow_tmpl *tmpl;
  size_t n_tmpl;
  struct tw_flow_task *tasks;
  size_t n_tasks;
  struct tw_flow_edge *edges;
  size_t n_edges, cap_edges;
  struct tw_flow_ext *ext;
  size_t n_ext, cap_ext;
};
void tw_flow_plan_release(struct tw_flow_plan *p);

/* The plan of one job spec's depends_on, kill_on_invalid_dep and array
 * (spec_json is its canonical JSON, name/tenant/project its own).  A spec
 * without either is kind TW_FLOW_JOB with no edges. */
struct tw_job_spec;
enum tw_rc tw_flow_plan_from_spec(const struct tw_job_spec *spec,
                                  const char *spec_json,
                                  struct tw_flow_plan *out,
                                  struct tw_err *err);

/* A workflow document (YAML or JSON): validated in full, every task's job
 * through the spec parser with opts; errors name the field
 * ("tasks[2].depends[0]: no task named \"trian\"; did you mean
 * \"train\"?"), cycles included. */
enum tw_rc tw_flow_doc_parse(const char *text, size_t len, bool is_json,
                             const struct tw_spec_opts *opts,
                             struct tw_flow_plan *out, struct tw_err *err);

/* The job spec of one task when it is released: its template with the
 * index and the parameter in the environment (TW_ARRAY_INDEX,
 * SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX for arrays; TW_ITEM for a
 * fan-out), the group's id as TW_WORKFLOW_ID or SLURM_ARRAY_JOB_ID, and
 * the datasets its predecessors wrote, added to its own.  name is "<name>_<index>" for arrays. */
enum tw_rc tw_flow_task_spec(const char *tmpl_json, enum tw_flow_kind kind,
                             const char *group_id, const char *task_name,
                             int64_t index, const char *param,
                             const struct tw_dataset_ref *ds, size_t n_ds,
                             struct tw_buf *out, char *name_out,
                             size_t name_sz, struct tw_err *err);

#endif
