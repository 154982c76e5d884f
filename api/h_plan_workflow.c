/* h_plan_workflow.c - POST /v1/plan with a workflow (a document with
 * `tasks:`): the joint placement of its tasks beside step-by-step
 * placement, per task where and why, and the saving
 * (policies/place/joint.h).  Nothing is stored. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "api/h_placement.h"
#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "broker/core/datasets.h"
#include "broker/core/spec.h"
#include "policies/place/joint.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"

void tw_h_joint_datasets(struct tw_req *r, const struct tw_joint_problem *p,
                         struct tw_dataset_set *ds) {
  tw_dataset_set_init(ds);
  const struct tw_principal *who = tw_auth_who(r);
  for (size_t t = 0; t < p->n_tasks; t++) {
    const struct tw_job_spec *spec = p->tasks[t].spec;
    for (size_t i = 0; i < spec->n_datasets; i++) {
      struct tw_dataset_rec rec;
      if (tw_datasets_get(tw_api_store(r->api), spec->datasets[i].uri, &rec,
                          NULL))
        continue;
      if (!tw_dataset_readable(
              &rec, who && who->role != TW_ROLE_ADMIN ? who->tenant : NULL)) {
        tw_dataset_rec_release(&rec);
        continue;
      }
      const char *locs[TW_DATASET_LOCATIONS];
      size_t n = 0;
      for (size_t l = 0; l < rec.n_locations && n < TW_DATASET_LOCATIONS; l++)
        locs[n++] = rec.locations[l].location;
      tw_dataset_set_add(ds, rec.uri, rec.size_bytes, locs, n);
      tw_dataset_rec_release(&rec); /* a second reader merges into it */
    }
  }
  tw_dataset_set_seal(ds);
}

bool tw_h_plan_workflow(struct tw_req *r, bool is_json) {
  const char *text = r->body.data ? r->body.data : "";
  struct tw_node *root = NULL;
  struct tw_err err = {0};
  enum tw_rc rc = is_json ? tw_node_parse_json(text, r->body.len, &root, &err)
                          : tw_node_parse_yaml(text, r->body.len, &root, &err);
  if (rc || !tw_joint_doc_is_workflow(root)) {
    tw_node_free(root);
    return false; /* a job's plan answers, errors included */
  }
  struct tw_spec_opts sopts = {.providers = tw_api_provider_names(r->api),
                               .fallbacks = tw_api_fallback_names(r->api)};
  struct tw_joint_problem p;
  rc = tw_joint_doc_parse(root, &sopts, &p, &err);
  tw_node_free(root);
  if (rc) {
    tw_problem_err(r, &err);
    return true;
  }
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *ix = NULL;
  tw_h_placement_view(r, &set, &ix);
  struct tw_dataset_set ds;
  tw_h_joint_datasets(r, &p, &ds);
  struct tw_place_snapshot snap = {.index = ix, .datasets = &ds};
  struct tw_joint_result res;
  if (tw_joint_plan(set, &snap, &p, tw_clock_now_ms(tw_api_clock(r->api)), &res,
                    &err)) {
    tw_problem_err(r, &err);
  } else {
    struct tw_buf jb;
    tw_buf_init(&jb);
    tw_joint_to_json(&res, &p, &jb);
    tw_buf_printf(&r->out, "{\"policies\":{\"generation\":%llu,\"network\":",
                  (unsigned long long)set->generation);
    tw_buf_json_str(&r->out, set->net_source ? set->net_source : "built-in");
    tw_buf_adds(&r->out, "},");
    tw_buf_add(&r->out, jb.data + 1, jb.len - 1);
    tw_buf_release(&jb);
    tw_req_json(r, 200);
    tw_joint_result_release(&res);
  }
  tw_dataset_set_release(&ds);
  tw_placer_release(set, ix);
  tw_joint_problem_release(&p);
  return true;
}
