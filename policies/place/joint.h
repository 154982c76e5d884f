/* joint.h - placing a workflow as a whole: one offer per task, chosen so
 * that compute plus moving data between the tasks costs least, beside the
 * step-by-step (greedy) placement it is compared with.
 *
 * The problem.  Tasks are resolved asks like a job's (resources,
 * constraints, datasets as inputs, duration); an edge u -> v carries
 * `bytes` (u's `outputs:` estimate), written where u ran and read by v.
 * A task's cost at a placement is the cost model's (cost.h) for its
 * offer: compute and spot risk over its expected duration, egress and
 * transfer of its own datasets, plus for every edge into it the egress of
 * `bytes` from where its predecessor ran (the network matrix's price per
 * GB) and the transfer: inputs are fetched in parallel, so the instances
 * wait for the slowest of its datasets and its incoming edges, at the
 * offer's price for every node.
 *
 * States.  Placement is decided per region ("provider:region", the
 * index's regions): for each task and region the cheapest feasible offer
 * there under the task's own cost (a plan restricted to that region, all
 * of the policy set's filters applying).  Data moves only between
 * regions: within one it is read in place, as the cost model reads
 * datasets (no egress, no wait).  So within a region that offer is also
 * the best joint choice, but for the wait for data from elsewhere, which
 * is priced at that offer (a dearer one there never waits for less).
 *
 * Greedy (step by step).  Tasks in topological order, each at its
 * cheapest region given where its predecessors already run: what placing
 * every step as a job on its own does.
 *
 * Joint.  A chain (every task has at most one predecessor and one
 * successor) is solved exactly by dynamic programming over the regions of
 * consecutive steps: f(v, r) = cost(v at r) + min over a of f(u, a) +
 * edge(u -> v, a -> r), O(L R^2) for L steps over R regions at worst: the
 * previous step's regions are scanned cheapest first, from the bound of
 * staying in r, and the scan stops where even the cheapest egress into r
 * cannot be repaid.
 *
 * General DAGs: a documented heuristic.
 *   1. Heavy-path chain decomposition: in topological order, a task not
 *      yet in a chain starts one, which follows its heaviest edge (most
 *      bytes) to a successor not yet in a chain, and so on.
 *   2. Chains are placed in that order, each by the exact chain DP with
 *      the tasks placed so far fixed (their edges into and out of the
 *      chain become per-region costs of its steps; edges to tasks not yet
 *      placed are ignored).
 *   3. Descent: each chain is placed again by the DP with every other task
 *      fixed, and the new placement kept only when the workflow's exact
 *      cost falls; rounds repeat until one changes nothing (at most
 *      TW_JOINT_ROUNDS_MAX).  The same descent runs from the greedy
 *      placement; the cheaper result wins.
 * Bounds, as a plan states them: the result is never dearer than greedy
 * (descent from it only ever lowers the cost); it is optimal for a chain,
 * for disjoint chains and for tasks without edges (info.exact); for other
 * DAGs it is a local
 * optimum against re-placing any one chain, and the plan reports the
 * lower bound sum over tasks of their cheapest cost alone (moving no data
 * between them), so the gap to the optimum is at most total - lower
 * bound.  Time O(rounds x (N R^2 + E R^2)), memory O(N R).
 *
 * Pure; thread-safe over distinct results. */
#ifndef TW_POLICIES_JOINT_H
#define TW_POLICIES_JOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"

/* At most this many tasks in a document: a plan of 10,000 takes about
 * five seconds of one core over 164 regions (bench-joint), and a request
 * may not hold a worker much longer. */
#define TW_JOINT_TASKS_MAX 10000
#define TW_JOINT_ROUNDS_MAX 16
/* "no placement": a task with no feasible offer in a region */
#define TW_JOINT_INF (INT64_MAX / 4)

struct tw_joint_task {
  char name[TW_MODEL_NAME_MAX];
  struct tw_job_spec *spec; /* the resolved ask; owned by the problem */
  int64_t output_bytes;     /* outputs: size estimate; 0 none */
  char output_where[256];   /* outputs: where; "" unsaid */
};

struct tw_joint_edge {
  uint32_t from, to; /* task indices: `to` depends on `from` */
  int64_t bytes;     /* what it carries: from's output_bytes */
};

struct tw_joint_problem {
  char name[TW_MODEL_NAME_MAX];
  struct tw_joint_task *tasks;
  size_t n_tasks;
  struct tw_joint_edge *edges;
  size_t n_edges;
};

void tw_joint_problem_release(struct tw_joint_problem *p);

/* The minimal workflow document `tradewind plan` and POST /v1/plan read:
 *
 *   name: pipeline            (optional)
 *   tasks:
 *     - name: prep            [A-Za-z0-9._-], unique
 *       resources: {...}      as a job's, and any other job key
 *       run: ./prep.sh        (duration: 1h: the expected run time)
 *       depends_on: [a, b]    names of tasks in this document
 *       inputs: [gs://raw/x]  dataset names (registry) or {uri, size,
 *                             location} as a job's datasets
 *       outputs: {size: 200GB, where: gs://feat/x}
 *
 * Also the form workflow submissions write: the job's keys under `job:`,
 * `depends: [a, b.succeeded]` (the condition dropped), outputs as a list
 * of {name, uri, size} (sizes summed), and tenant, project, fail_fast,
 * max_running, placement, fan_in and on_invalid accepted and ignored;
 * for_each is refused.
 *
 * Every task becomes a job spec (through tw_spec_from_node_opts with
 * opts) with its inputs as datasets.  Errors name the field:
 * "tasks[1].depends_on[0]: no task named \"prepp\"", "tasks: the
 * dependencies form a cycle through train".  Whether a document is a
 * workflow: tw_joint_doc_is_workflow (a top-level `tasks:`). */
struct tw_node;
struct tw_spec_opts;
bool tw_joint_doc_is_workflow(const struct tw_node *root);
enum tw_rc tw_joint_doc_parse(const struct tw_node *root,
                              const struct tw_spec_opts *opts,
                              struct tw_joint_problem *out, struct tw_err *err);

/* ---- the table the solvers work on ------------------------------------ */

/* The best offer of one task in one region. */
struct tw_joint_cell {
  int64_t base_uusd; /* compute + spot risk + dataset egress; INF: none */
  int64_t compute_uusd, spot_uusd, ds_egress_uusd;
  int64_t ds_wait_s;   /* its datasets' transfer time */
  int64_t wait_uusd_h; /* what waiting costs per hour: price x nodes */
  uint32_t offer;      /* in the index */
};

struct tw_joint_table {
  size_t n_tasks, n_regions;
  /* cells[row[t] * n_regions + r]: tasks with the same ask share a row */
  struct tw_joint_cell *cells;
  uint32_t *row;
  size_t n_rows;
  /* the network between the regions: [a * n_regions + b] */
  int64_t *egress_uusd_per_gb, *rtt_us, *bandwidth_kbps;
  int round_trips;
};

void tw_joint_table_release(struct tw_joint_table *t);

/* What one placement costs, task by task. */
struct tw_joint_cost {
  int64_t compute_uusd;  /* compute + spot risk */
  int64_t egress_uusd;   /* its datasets + its incoming edges */
  int64_t transfer_uusd; /* waiting for the slowest input */
  int64_t transfer_s;
  int64_t total_uusd; /* TW_JOINT_INF when the region has no offer */
};

/* The exact cost of assign[] (a region per task; -1 unplaced: its edges
 * count nothing) into per[] (may be NULL); returns the total. */
int64_t tw_joint_eval(const struct tw_joint_table *t,
                      const struct tw_joint_problem *p, const int32_t *assign,
                      struct tw_joint_cost *per);

struct tw_joint_info {
  const char *method; /* "chain-dp" (exact), "none" (no edges: exact),
                         "chains+descent" (heuristic) */
  bool exact;
  size_t n_chains;
  unsigned rounds;
  int64_t lower_bound_uusd;
};

/* Greedy and joint over the table.  order: a topological order (NULL:
 * computed; TW_E_INVALID on a cycle).  Both assignments have n_tasks
 * entries; a task with no offer anywhere gets -1 and the totals are
 * TW_JOINT_INF. */
enum tw_rc tw_joint_solve_greedy(const struct tw_joint_table *t,
                                 const struct tw_joint_problem *p,
                                 int32_t *assign, struct tw_err *err);
enum tw_rc tw_joint_solve(const struct tw_joint_table *t,
                          const struct tw_joint_problem *p, int32_t *assign,
                          struct tw_joint_info *info, struct tw_err *err);

/* A topological order into order[n_tasks]; TW_E_INVALID naming a task on
 * a cycle. */
enum tw_rc tw_joint_topo(const struct tw_joint_problem *p, uint32_t *order,
                         struct tw_err *err);

/* ---- plans ------------------------------------------------------------ */

struct tw_joint_place {
  int32_t region; /* -1: fits nowhere */
  struct tw_joint_cost cost;
  char offer_id[TW_MODEL_ID_MAX];
  char where[2 * TW_MODEL_NAME_MAX + 2]; /* "gcp:us-central1" */
  char zone[TW_MODEL_NAME_MAX];
  char instance_type[TW_MODEL_NAME_MAX];
  const char *market;
  int64_t price_uusd_per_hour;
};

struct tw_joint_placement {
  struct tw_joint_place *tasks; /* n_tasks */
  int64_t compute_uusd, egress_uusd, transfer_uusd, total_uusd;
};

struct tw_joint_result {
  size_t n_tasks, n_regions;
  struct tw_joint_placement joint, greedy;
  /* each task's cheapest region alone, and its cost there (its datasets,
   * none of its edges) */
  int32_t *alone_region;
  int64_t *alone_uusd;
  struct tw_joint_info info;
  uint64_t plans;                     /* per-region plans made */
  char infeasible[TW_MODEL_NAME_MAX]; /* a task fitting nowhere; "" */
  char **region_keys;                 /* copies of the index's */
};

/* The table of p over snap under set: for each distinct ask, one plan
 * anywhere and, where it fits, one per region of the index; the network
 * between the regions from set's matrix.  plans counts the plans made;
 * infeasible receives the name of a task no offer fits ("" none).
 * Release *t. */
enum tw_rc tw_joint_table_build(const struct tw_policy_set *set,
                                const struct tw_place_snapshot *snap,
                                const struct tw_joint_problem *p,
                                int64_t now_ms, struct tw_joint_table *t,
                                uint64_t *plans, char *infeasible,
                                size_t infeasible_sz, struct tw_err *err);

/* Plans problem p over snap under set: the table from per-region plans,
 * then greedy and joint.  TW_E_INVALID on a cycle.  *out is filled even
 * when a task fits nowhere (infeasible names it); release it. */
enum tw_rc tw_joint_plan(const struct tw_policy_set *set,
                         const struct tw_place_snapshot *snap,
                         const struct tw_joint_problem *p, int64_t now_ms,
                         struct tw_joint_result *out, struct tw_err *err);
void tw_joint_result_release(struct tw_joint_result *r);

/* Both placements task by task, where and why, and the saving, one line
 * each (what `tradewind plan WORKFLOW` prints). */
void tw_joint_explain(const struct tw_joint_result *r,
                      const struct tw_joint_problem *p, struct tw_buf *out);
/* The same as JSON: {"workflow":..., "joint":{...}, "greedy":{...},
 * "saving_uusd":..., "explain":[lines]} (the body of POST /v1/plan for a
 * workflow, without the enclosing braces' policies member). */
void tw_joint_to_json(const struct tw_joint_result *r,
                      const struct tw_joint_problem *p, struct tw_buf *out);

#endif
