/* h_policies.c - GET /v1/policies (the policy set in force, with every
 * value it uses) and PUT /v1/policies (a new `policies:` section, YAML or
 * JSON: validated whole, then swapped in at once; on any error the answer
 * names the key and nothing changes).  A PUT lasts until the next SIGHUP,
 * which reads the config file again. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "broker/base/log.h"
#include "api/h_placement.h"
#include "policies/place/placer.h"

static void render(struct tw_req *r, struct tw_placer *pl,
                   const struct tw_policy_set *set) {
  tw_buf_printf(&r->out, "{\"reloads\":%llu,\"policies\":",
                (unsigned long long)(pl ? tw_placer_reloads(pl) : 0));
  tw_policy_set_to_json(set, &r->out);
  tw_buf_addc(&r->out, '}');
  tw_req_json(r, 200);
}

void tw_h_policies_get(struct tw_req *r) {
  struct tw_placer *pl = tw_api_placer(r->api);
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *ix = NULL;
  if (pl)
    tw_placer_acquire(pl, &set, &ix);
  else
    set = tw_policy_set_default();
  render(r, pl, set);
  tw_placer_release(set, ix);
}

void tw_h_policies_put(struct tw_req *r) {
  bool is_json;
  if (!tw_h_placement_media(r, &is_json))
    return;
  struct tw_placer *pl = tw_api_placer(r->api);
  if (!pl) {
    tw_problem(r, 503, "unavailable", NULL,
               "placement is not running in this server");
    return;
  }
  struct tw_policy_set *next = NULL, *now = NULL;
  struct tw_offer_index *ix = NULL;
  struct tw_err err = {0};
  /* files only from the directories of the config file's set */
  tw_placer_acquire(pl, &now, &ix);
  enum tw_rc rc = tw_policy_set_parse_request(r->body.data ? r->body.data : "",
                                              r->body.len, now, &next, &err);
  tw_placer_release(now, ix);
  if (rc) {
    tw_log_warn("api", "request=%s policies refused, nothing applied: %s",
                r->request_id, err.msg);
    tw_problem_err(r, &err);
    return;
  }
  tw_policy_set_ref(next);
  tw_placer_set_policies(pl, next); /* takes one reference */
  tw_log_info("api", "request=%s policies=%llu applied", r->request_id,
              (unsigned long long)next->generation);
  render(r, pl, next);
  tw_policy_set_unref(next);
}
