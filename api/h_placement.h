/* h_placement.h - the placement routes: plans without submitting
 * (h_plan.c), the dataset registry (h_datasets.c) and the policy set in
 * force (h_policies.c), as rows of the server's route table (api/server.c
 * expands TW_PLACEMENT_ROUTES inside tw_routes[]).  Each has its rule in
 * api/rbac.c and its path in api/openapi.yaml.
 *
 * They reach placement through the daemon's placer (policies/place/placer.h,
 * given in tw_api_opts.placer): the policy set in force and the scheduler's
 * last offer index.  Without one (a server started alone, in tests) plans use
 * the default set over no offers, and PUT /v1/policies answers 503. */
#ifndef TW_API_H_PLACEMENT_H
#define TW_API_H_PLACEMENT_H

struct tw_req;

void tw_h_plan(struct tw_req *r);
void tw_h_datasets_create(struct tw_req *r);
void tw_h_datasets_list(struct tw_req *r);
void tw_h_policies_get(struct tw_req *r);
void tw_h_policies_put(struct tw_req *r);

#define TW_PLACEMENT_ROUTES                                                    \
  {"POST", "/v1/plan", tw_h_plan, "plan"},                                     \
      {"POST", "/v1/datasets", tw_h_datasets_create, "datasets_create"},       \
      {"GET", "/v1/datasets", tw_h_datasets_list, "datasets_list"},            \
      {"GET", "/v1/policies", tw_h_policies_get, "policies_get"},              \
      {"PUT", "/v1/policies", tw_h_policies_put, "policies_put"},

/* h_plan.c: the policy set and offer index a plan is made over: the
 * scheduler's placer's (references: unref both), or the default set over
 * an empty index before anything was listed. */
struct tw_policy_set;
struct tw_offer_index;
void tw_h_placement_view(struct tw_req *r, struct tw_policy_set **set,
                         struct tw_offer_index **ix);

/* h_plan.c: the body's media type, JSON or YAML (415 answered when
 * neither); false when r was answered.  Every route that takes a job,
 * workflow, plan, dataset or policy document reads it this way. */
bool tw_h_placement_media(struct tw_req *r, bool *is_json);

/* h_plan_workflow.c: POST /v1/plan for a workflow document (`tasks:`),
 * the joint placement beside step by step; false (nothing answered) when
 * the body is no workflow. */
bool tw_h_plan_workflow(struct tw_req *r, bool is_json);

/* h_plan_workflow.c: the registry's view of every task's datasets (those
 * the caller may read), as a job's plan has it; release *ds. */
struct tw_joint_problem;
struct tw_dataset_set;
void tw_h_joint_datasets(struct tw_req *r, const struct tw_joint_problem *p,
                         struct tw_dataset_set *ds);

#endif
