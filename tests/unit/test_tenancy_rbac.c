/* The policy table (api/rbac.c) against the server's route table and
 * against what issue 9 asks of each role.
 *
 *   every_route_has_a_rule: a route added to api/server.c without a rule
 *     fails here (and is refused for everybody at run time);
 *   rules_are_well_formed: admin may do everything; only global routes
 *     give other roles ANY (nobody else reaches across tenants); OWN only
 *     where an owner exists;
 *   roles_match_the_model: the cells the model fixes, written out again;
 *   decide_hides_other_tenants: 404 for other tenants' objects, 403 or 404
 *     for another owner's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/rbac.h"

static void every_route_has_a_rule(void **state) {
  (void)state;
  size_t n;
  const struct tw_api_route_info *routes = tw_api_route_table(&n);
  assert_true(n > 0);
  int missing = 0;
  for (size_t i = 0; i < n; i++)
    if (!tw_rbac_find(routes[i].method, routes[i].path)) {
      fprintf(stderr, "no rule in api/rbac.c for %s %s\n", routes[i].method,
              routes[i].path);
      missing++;
    }
  free((void *)routes);
  assert_int_equal(missing, 0);
}

static bool tenant_scoped(enum tw_target t) {
  return t == TW_TGT_JOB || t == TW_TGT_TENANT || t == TW_TGT_TOKEN ||
         t == TW_TGT_USER || t == TW_TGT_QUERY_TENANT || t == TW_TGT_BODY;
}

static void rules_are_well_formed(void **state) {
  (void)state;
  size_t n;
  const struct tw_rbac_rule *rules = tw_rbac_rules(&n);
  for (size_t i = 0; i < n; i++) {
    const struct tw_rbac_rule *r = &rules[i];
    char what[128];
    snprintf(what, sizeof what, "%s %s", r->method, r->path);
    /* but an attempt's own reports, which only its agent's token makes
     * (docs/agent.md): nobody may report for an agent */
    bool agent_report =
        r->target == TW_TGT_AGENT && strstr(r->path, "{attempt}");
    if (r->perm[TW_ROLE_ADMIN] != TW_PERM_ANY && !agent_report)
      fail_msg("%s: the admin must reach everything", what);
    if (agent_report)
      for (int role = 0; role < TW_ROLE_COUNT; role++)
        if (r->perm[role] != TW_PERM_DENY)
          fail_msg("%s: %s may report for an agent", what,
                   tw_role_str((enum tw_role)role));
    for (int role = 1; role < TW_ROLE_COUNT; role++) {
      if (tenant_scoped(r->target) && r->perm[role] == TW_PERM_ANY)
        fail_msg("%s: %s would reach other tenants", what,
                 tw_role_str((enum tw_role)role));
      if (r->perm[role] == TW_PERM_OWN && r->target != TW_TGT_JOB &&
          r->target != TW_TGT_TOKEN && r->target != TW_TGT_BODY &&
          r->target != TW_TGT_GLOBAL)
        fail_msg("%s: OWN on a target without an owner", what);
    }
    for (size_t k = 0; k < i; k++)
      if (!strcmp(rules[k].method, r->method) &&
          !strcmp(rules[k].path, r->path))
        fail_msg("%s: two rules", what);
  }
}

static enum tw_perm perm(const char *method, const char *path,
                         enum tw_role role) {
  const struct tw_rbac_rule *r = tw_rbac_find(method, path);
  if (!r)
    fail_msg("no rule for %s %s", method, path);
  return (enum tw_perm)r->perm[role];
}

static void roles_match_the_model(void **state) {
  (void)state;
  /* member: submits, reads the tenant's jobs, cancels its own */
  assert_int_equal(perm("POST", "/v1/jobs", TW_ROLE_MEMBER), TW_PERM_TENANT);
  assert_int_equal(perm("GET", "/v1/jobs/{id}", TW_ROLE_MEMBER),
                   TW_PERM_TENANT);
  assert_int_equal(perm("DELETE", "/v1/jobs/{id}", TW_ROLE_MEMBER),
                   TW_PERM_OWN);
  /* viewer: reads, never writes */
  assert_int_equal(perm("POST", "/v1/jobs", TW_ROLE_VIEWER), TW_PERM_DENY);
  assert_int_equal(perm("DELETE", "/v1/jobs/{id}", TW_ROLE_VIEWER),
                   TW_PERM_DENY);
  assert_int_equal(perm("GET", "/v1/jobs", TW_ROLE_VIEWER), TW_PERM_TENANT);
  /* ci: submits and reads its own jobs only */
  assert_int_equal(perm("POST", "/v1/jobs", TW_ROLE_CI), TW_PERM_TENANT);
  assert_int_equal(perm("GET", "/v1/jobs/{id}", TW_ROLE_CI), TW_PERM_OWN);
  assert_int_equal(perm("GET", "/v1/jobs", TW_ROLE_CI), TW_PERM_DENY);
  /* finance: budgets and the audit trail, no submissions */
  assert_int_equal(perm("PUT", "/v1/tenants/{tenant}/budget", TW_ROLE_FINANCE),
                   TW_PERM_TENANT);
  assert_int_equal(perm("GET", "/v1/audit", TW_ROLE_FINANCE), TW_PERM_TENANT);
  assert_int_equal(perm("POST", "/v1/jobs", TW_ROLE_FINANCE), TW_PERM_DENY);
  /* tenant-admin: its tenant's people and budgets, not the quota */
  assert_int_equal(perm("POST", "/v1/users", TW_ROLE_TENANT_ADMIN),
                   TW_PERM_TENANT);
  assert_int_equal(
      perm("PUT", "/v1/tenants/{tenant}/quota", TW_ROLE_TENANT_ADMIN),
      TW_PERM_DENY);
  /* the admin's own */
  for (int role = 1; role < TW_ROLE_COUNT; role++) {
    assert_int_equal(perm("POST", "/v1/tenants", (enum tw_role)role),
                     TW_PERM_DENY);
    assert_int_equal(perm("PUT", "/v1/secrets/{name}", (enum tw_role)role),
                     TW_PERM_DENY);
    assert_int_equal(perm("GET", "/metrics", (enum tw_role)role),
                     role == TW_ROLE_METRICS ? TW_PERM_ANY : TW_PERM_DENY);
    assert_int_equal(perm("GET", "/v1/audit/verify", (enum tw_role)role),
                     TW_PERM_DENY);
  }
  /* metrics: the scrape, and nothing else of the API */
  size_t nr;
  const struct tw_rbac_rule *rules = tw_rbac_rules(&nr);
  for (size_t i = 0; i < nr; i++)
    if (strcmp(rules[i].path, "/metrics") &&
        rules[i].target != TW_TGT_PUBLIC)
      assert_int_equal(rules[i].perm[TW_ROLE_METRICS], TW_PERM_DENY);
  /* probes need nobody */
  assert_int_equal(tw_rbac_find("GET", "/healthz")->target, TW_TGT_PUBLIC);
  assert_int_equal(tw_rbac_find("GET", "/readyz")->target, TW_TGT_PUBLIC);
}

static struct tw_principal who(const char *name, const char *tenant,
                               enum tw_role role) {
  struct tw_principal p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", name);
  snprintf(p.tenant, sizeof p.tenant, "%s", tenant);
  p.role = role;
  return p;
}

static void decide_hides_other_tenants(void **state) {
  (void)state;
  const struct tw_rbac_rule *get = tw_rbac_find("GET", "/v1/jobs/{id}");
  const struct tw_rbac_rule *del = tw_rbac_find("DELETE", "/v1/jobs/{id}");
  struct tw_principal alice = who("alice", "ml", TW_ROLE_MEMBER);
  struct tw_principal bot = who("bot", "ml", TW_ROLE_CI);
  struct tw_principal root = who("admin", "*", TW_ROLE_ADMIN);
  struct tw_principal vera = who("vera", "ml", TW_ROLE_VIEWER);
  /* other tenants do not exist, for every role but the admin */
  assert_int_equal(tw_rbac_decide(get, &alice, "vision", "bob"), TW_RBAC_HIDE);
  assert_int_equal(tw_rbac_decide(del, &vera, "vision", "bob"), TW_RBAC_HIDE);
  assert_int_equal(tw_rbac_decide(get, &root, "vision", "bob"), TW_RBAC_ALLOW);
  /* own tenant */
  assert_int_equal(tw_rbac_decide(get, &alice, "ml", "carol"), TW_RBAC_ALLOW);
  assert_int_equal(tw_rbac_decide(del, &alice, "ml", "alice"), TW_RBAC_ALLOW);
  /* a member sees a colleague's job, so cancelling it is 403, not 404 */
  assert_int_equal(tw_rbac_decide(del, &alice, "ml", "carol"), TW_RBAC_FORBID);
  /* CI may not even see a job it did not submit */
  assert_int_equal(tw_rbac_decide(get, &bot, "ml", "carol"), TW_RBAC_HIDE);
  assert_int_equal(tw_rbac_decide(get, &bot, "ml", "bot"), TW_RBAC_ALLOW);
  assert_int_equal(tw_rbac_decide(get, &bot, "ml", NULL), TW_RBAC_HIDE);
  /* deny is 403 in one's own tenant */
  assert_int_equal(tw_rbac_decide(del, &vera, "ml", "vera"), TW_RBAC_FORBID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_route_has_a_rule),
      cmocka_unit_test(rules_are_well_formed),
      cmocka_unit_test(roles_match_the_model),
      cmocka_unit_test(decide_hides_other_tenants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
