/* Joint placement over the real public catalogs (shared/data/catalogs),
 * issue 18's chain: 1 TB in Google Cloud Storage -> a CPU step -> 200 GB
 * -> an A100:8 step, an hour each.  Placed jointly it costs $22.34 or
 * less, with both steps in one region; both placements are printed, and
 * step by step is dearer (the CPU step alone goes where the A100s are
 * not).
 *
 * SKIPPED (exit 77) when the data folder is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/integration/twtest_real_catalog.h"
#include "tests/twtest.h"
#include "billing/catalog/catalog.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "policies/place/index.h"
#include "policies/place/joint.h"
#include "policies/place/plan.h"
#include "policies/place/policy.h"
#include "providers/registry.h"

static char dir[1100];
static int failed;

/* Every ask is checked and reported; the test fails at the end. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL: " __VA_ARGS__);                                   \
      fputc('\n', stderr);                                                     \
      failed++;                                                                \
    }                                                                          \
  } while (0)


/* The issue's chain.  The 1 TB sits in a GCS bucket of the EU
 * multi-region, registered as readable in place from europe-west1 and
 * europe-west4: the CPU step is a little cheaper in the first, the A100:8
 * step much cheaper in the second. */
static const char *const CHAIN =
    "name: gcs-chain\n"
    "tasks:\n"
    "  - name: prep\n"
    "    resources: {cpus: 8+, memory: 32+, market: on-demand}\n"
    "    duration: 1h\n"
    "    inputs: ['gs://corpus/raw']\n"
    "    outputs: {size: 200GB, where: 'gs://corpus/features'}\n"
    "  - name: train\n"
    "    resources: {accelerators: 'A100:8', market: on-demand}\n"
    "    duration: 1h\n"
    "    depends_on: [prep]\n";

#define ISSUE_JOINT_UUSD 22340000

static void gcs_chain_jointly_at_the_issues_price_or_below(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct twtest_real cat;
  int bad = twtest_real_open(&cat, dir);
  failed += bad;
  assert_int_equal(bad, 0);
  struct tw_offer_index *ix = cat.ix;
  struct tw_policy_set *set = tw_policy_set_default();
  struct tw_node *root = NULL;
  assert_int_equal(tw_node_parse_yaml(CHAIN, strlen(CHAIN), &root, &err),
                   TW_OK);
  struct tw_joint_problem p;
  assert_int_equal(tw_joint_doc_parse(root, NULL, &p, &err), TW_OK);
  tw_node_free(root);
  struct tw_dataset_set ds;
  tw_dataset_set_init(&ds);
  const char *eu[] = {"gcp:europe-west1", "gcp:europe-west4"};
  tw_dataset_set_add(&ds, "gs://corpus/raw", 1000000000000LL, eu, 2);
  tw_dataset_set_seal(&ds);
  struct tw_place_snapshot snap = {.index = ix, .datasets = &ds};
  struct tw_joint_result r;
  assert_int_equal(tw_joint_plan(set, &snap, &p, 1764460800000, &r, &err),
                   TW_OK);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_joint_explain(&r, &p, &b);
  printf("%zu offers, %llu plans\n%s", tw_cat_snap_count(cat.merged),
         (unsigned long long)r.plans, b.data);
  printf("greedy %.6f joint %.6f (issue: greedy 33.71, joint 22.34)\n",
         r.greedy.total_uusd / 1e6, r.joint.total_uusd / 1e6);
  tw_buf_release(&b);
  CHECK(!r.infeasible[0], "%s fits nowhere", r.infeasible);
  CHECK(r.joint.total_uusd <= ISSUE_JOINT_UUSD,
        "joint %" PRId64 " uUSD, over the issue's %d", r.joint.total_uusd,
        ISSUE_JOINT_UUSD);
  CHECK(r.joint.total_uusd <= r.greedy.total_uusd,
        "joint %" PRId64 " dearer than greedy %" PRId64, r.joint.total_uusd,
        r.greedy.total_uusd);
  CHECK(r.info.exact, "a chain is solved exactly");
  /* step by step, prep takes the cheaper CPU and train pays for the move */
  CHECK(r.greedy.total_uusd > r.joint.total_uusd,
        "greedy %" PRId64 " no dearer than joint %" PRId64, r.greedy.total_uusd,
        r.joint.total_uusd);
  /* both steps run where the data is read without egress */
  if (r.joint.tasks)
    CHECK(!strcmp(r.joint.tasks[0].where, r.joint.tasks[1].where),
          "the steps run apart: %s and %s", r.joint.tasks[0].where,
          r.joint.tasks[1].where);
  tw_joint_result_release(&r);
  tw_joint_problem_release(&p);
  tw_dataset_set_release(&ds);
  tw_policy_set_unref(set);
  twtest_real_close(&cat);
  assert_int_equal(failed, 0);
}

int main(void) {
  char data[1000];
  tw_testdata_dir(data, sizeof data);
  snprintf(dir, sizeof dir, "%s/catalogs", data);
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    printf("SKIPPED: no catalog data at %s\n", dir);
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gcs_chain_jointly_at_the_issues_price_or_below)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
