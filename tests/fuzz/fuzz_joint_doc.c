/* fuzz_joint_doc.c - the workflow document joint placement reads
 * (policies/place/joint.h, tw_joint_doc_parse) on arbitrary bytes.
 *
 * Each input is read as YAML and as JSON.  Whatever validates must be a
 * DAG over its own tasks whose edges carry their source's output size;
 * then greedy and joint placement over a small table made from the input
 * must never put the joint placement above greedy, nor below the lower
 * bound, or the target aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/node.h"
#include "policies/place/joint.h"

#define R 3

static void solve(const struct tw_joint_problem *p, const uint8_t *data,
                  size_t size) {
  size_t n = p->n_tasks;
  struct tw_joint_table t = {
      .n_tasks = n, .n_regions = R, .n_rows = n, .round_trips = 3};
  t.row = malloc(n * sizeof *t.row);
  t.cells = calloc(n * R, sizeof *t.cells);
  int64_t eg[R * R], rtt[R * R], bw[R * R];
  for (size_t k = 0; k < R * R; k++) {
    eg[k] = 10000 + 7919 * (int64_t)(size ? data[k % size] : 1);
    rtt[k] = 20000;
    bw[k] = 1000000 + 1000 * (int64_t)k;
  }
  t.egress_uusd_per_gb = eg;
  t.rtt_us = rtt;
  t.bandwidth_kbps = bw;
  for (size_t v = 0; v < n; v++) {
    t.row[v] = (uint32_t)v;
    for (size_t r = 0; r < R; r++) {
      struct tw_joint_cell *c = &t.cells[v * R + r];
      uint8_t b = size ? data[(v * R + r) % size] : 0;
      c->compute_uusd = 100000 + 37 * (int64_t)b * (int64_t)(r + 1);
      c->wait_uusd_h = 1000000;
      c->base_uusd = b % 7 == 0 && r ? TW_JOINT_INF : c->compute_uusd;
    }
  }
  int32_t *ga = malloc(n * sizeof *ga), *ja = malloc(n * sizeof *ja);
  struct tw_joint_info info;
  if (tw_joint_solve_greedy(&t, p, ga, NULL) ||
      tw_joint_solve(&t, p, ja, &info, NULL))
    abort(); /* a parsed workflow is acyclic */
  int64_t g = tw_joint_eval(&t, p, ga, NULL);
  int64_t j = tw_joint_eval(&t, p, ja, NULL);
  if (j > g || j < info.lower_bound_uusd)
    abort();
  free(ga);
  free(ja);
  free(t.row);
  free(t.cells);
}

static void one(const uint8_t *data, size_t size, bool json) {
  struct tw_node *root = NULL;
  struct tw_err err = {0};
  enum tw_rc rc =
      json ? tw_node_parse_json((const char *)data, size, &root, &err)
           : tw_node_parse_yaml((const char *)data, size, &root, &err);
  if (rc)
    return;
  struct tw_joint_problem p;
  if (tw_joint_doc_parse(root, NULL, &p, &err) == TW_OK) {
    for (size_t e = 0; e < p.n_edges; e++)
      if (p.edges[e].from >= p.n_tasks || p.edges[e].to >= p.n_tasks ||
          p.edges[e].from == p.edges[e].to ||
          p.edges[e].bytes != p.tasks[p.edges[e].from].output_bytes)
        abort();
    if (p.n_tasks <= 64)
      solve(&p, data, size);
    tw_joint_problem_release(&p);
  } else if (!err.msg[0] || !err.field[0]) {
    abort(); /* every refusal names the field and the reason */
  }
  tw_node_free(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, false);
  one(data, size, true);
  return 0;
}
