/* POST /v1/workflows places a workflow jointly (issue 18, item 4): the
 * chain's templates are pinned to the joint plan's regions before it is
 * stored, so the jobs the scheduler releases run where the plan said;
 * `placement: step` keeps step-by-step placement, and a task that fits
 * nowhere jointly falls back to it (in-process server, scheduler and
 * fake provider, open mode). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/core/store.h"
#include "broker/sched/sched.h"
#include "policies/place/placer.h"
#include "tests/fakes/fake_provider.h"
#include "tests/integration/twtest_plan_server.h"

static struct twtest_ps F;

static int setup(void **state) {
  (void)state;
  if (twtest_ps_open(&F, "jsub"))
    return -1;
  twtest_ps_offer(&F, "eu-west-1", "eu-west-1a", "p4de.24xlarge",
                  TW_MARKET_ON_DEMAND, 45000000, 96, "A100-80GB", 8, "EU");
  twtest_ps_offer(&F, "eu-west-1", "eu-west-1b", "c5.2xlarge",
                  TW_MARKET_ON_DEMAND, 384000, 8, NULL, 0, "EU");
  twtest_ps_offer(&F, "us-east-1", "us-east-1b", "c5.2xlarge",
                  TW_MARKET_ON_DEMAND, 340000, 8, NULL, 0, "US");
  return twtest_ps_start(&F, false);
}

static int teardown(void **state) {
  (void)state;
  twtest_ps_close(&F);
  return 0;
}

/* prep writes 500 GB that train reads: step by step prep runs in
 * us-east-1 and its output crosses the Atlantic; jointly it runs beside
 * train in eu-west-1. */
static char *workflow(const char *mode, const char *train_accel) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(
      &b,
      "name: etl-train\n"
      "%s%s%s"
      "tasks:\n"
      "  - name: prep\n"
      "    outputs:\n"
      "      - {name: features, uri: 's3://corpus/features', "
      "size: 500GB}\n"
      "    job: {resources: {cpus: 8}, duration: 1h, run: ./prep.sh}\n"
      "  - name: train\n"
      "    depends: [prep]\n"
      "    job:\n"
      "      resources: {accelerators: '%s:8', market: on-demand}\n"
      "      placement: {residency: [EU]}\n"
      "      duration: 1h\n"
      "      run: ./train.sh\n",
      mode ? "placement: " : "", mode ? mode : "", mode ? "\n" : "",
      train_accel);
  return tw_buf_detach(&b);
}

/* The group's id from a 201's body. */
static void group_id(const char *body, char *gid, size_t sz) {
  const char *p = strstr(body, "{\"id\":\"");
  assert_non_null(p);
  p += 7;
  size_t n = strcspn(p, "\"");
  assert_true(n < sz);
  snprintf(gid, sz, "%.*s", (int)n, p);
}

/* The placement of the job released for task idx (ticking the scheduler
 * until it has one). */
static char *released_placement(const char *gid, int idx) {
  char url[160];
  snprintf(url, sizeof url, "/v1/workflows/%s/tasks", gid);
  for (int tick = 0; tick < 10; tick++) {
    tw_sched_tick(F.sched);
    struct twtest_ps_resp r = twtest_ps_call(&F, "GET", url, NULL, NULL);
    assert_int_equal(r.status, 200);
    char key[40];
    snprintf(key, sizeof key, "{\"idx\":%d,", idx);
    const char *t = strstr(r.body.data, key);
    assert_non_null(t);
    const char *j = strstr(t, "\"job_id\":\"");
    const char *end = strchr(t, '}');
    if (j && j < end) {
      char jurl[128];
      j += 10;
      snprintf(jurl, sizeof jurl, "/v1/jobs/%.*s", (int)strcspn(j, "\""), j);
      tw_buf_release(&r.body);
      for (int k = 0; k < 10; k++) {
        struct twtest_ps_resp jr = twtest_ps_call(&F, "GET", jurl, NULL, NULL);
        assert_int_equal(jr.status, 200);
        /* the job's placement, not its spec's */
        const char *pl = strstr(jr.body.data, "\"placement\":{\"provider\"");
        if (pl) {
          char *copy = strdup(pl);
          tw_buf_release(&jr.body);
          return copy;
        }
        tw_buf_release(&jr.body);
        tw_sched_tick(F.sched);
      }
      fail_msg("job %s never placed", jurl);
    }
    tw_buf_release(&r.body);
  }
  fail_msg("task %d never released", idx);
  return NULL;
}

/* Whether the job's placement (its first members) is in region. */
static bool ran_in(const char *pl, const char *region) {
  char want[128];
  snprintf(want, sizeof want,
           "\"placement\":{\"provider\":\"aws\",\"account\":\"lab\","
           "\"region\":\"%s\"",
           region);
  if (strncmp(pl, want, strlen(want))) {
    fprintf(stderr, "not in %s: %.160s\n", region, pl);
    return false;
  }
  return true;
}

static void submit(const char *doc, char *gid, size_t sz,
                   struct twtest_ps_resp *out) {
  *out = twtest_ps_call(&F, "POST", "/v1/workflows", "application/yaml", doc);
  if (out->status != 201)
    fail_msg("POST /v1/workflows: %ld %s", out->status, out->body.data);
  group_id(out->body.data, gid, sz);
}

static void a_workflow_runs_where_the_joint_plan_puts_it(void **state) {
  (void)state;
  char *doc = workflow(NULL, "A100-80GB");
  char gid[64];
  struct twtest_ps_resp r;
  submit(doc, gid, sizeof gid, &r);
  const char *j = r.body.data;
  printf("%s\n", j);
  assert_non_null(strstr(j, "\"placement\":{\"mode\":\"joint\""));
  assert_non_null(strstr(j, "{\"task\":\"prep\",\"where\":\"aws:eu-west-1\","
                            "\"step_where\":\"aws:us-east-1\"}"));
  assert_non_null(strstr(j, "{\"task\":\"train\",\"where\":\"aws:eu-west-1\""));
  /* the saving: at least the $10 of 500 GB across regions, less the
   * cheaper CPU step */
  const char *sv = strstr(j, "\"saving_usd\":\"");
  assert_non_null(sv);
  assert_true(atof(sv + 14) > 9.9);
  tw_buf_release(&r.body);
  free(doc);
  char *pl = released_placement(gid, 0);
  assert_true(ran_in(pl, "eu-west-1"));
  free(pl);
}

static void step_placement_keeps_step_by_step(void **state) {
  (void)state;
  char *doc = workflow("step", "A100-80GB");
  char gid[64];
  struct twtest_ps_resp r;
  submit(doc, gid, sizeof gid, &r);
  assert_non_null(strstr(r.body.data, "\"placement\":{\"mode\":\"step\","
                                      "\"reason\":\"placement: step"));
  tw_buf_release(&r.body);
  free(doc);
  char *pl = released_placement(gid, 0);
  assert_true(ran_in(pl, "us-east-1"));
  free(pl);
  /* a bad mode names the field */
  doc = workflow("together", "A100-80GB");
  r = twtest_ps_call(&F, "POST", "/v1/workflows", "application/yaml", doc);
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body.data, "\"field\":\"placement\""));
  tw_buf_release(&r.body);
  free(doc);
}

static void a_task_fitting_nowhere_falls_back(void **state) {
  (void)state;
  char *doc = workflow("joint", "H100");
  char gid[64];
  struct twtest_ps_resp r;
  submit(doc, gid, sizeof gid, &r);
  printf("%s\n", r.body.data);
  assert_non_null(strstr(r.body.data,
                         "\"placement\":{\"mode\":\"step\","
                         "\"reason\":\"task train fits nowhere jointly"));
  tw_buf_release(&r.body);
  free(doc);
  /* prep still runs, step by step */
  char *pl = released_placement(gid, 0);
  assert_true(ran_in(pl, "us-east-1"));
  free(pl);
}

/* A user's region selectors are narrowed, never widened: a zone selector
 * inside the chosen region stays as written, the other region goes; a
 * fanned-out successor is one ask, its items sharing the region. */
static void constraints_narrow_and_fan_outs_share(void **state) {
  (void)state;
  const char *doc =
      "name: zoned\n"
      "tasks:\n"
      "  - name: prep\n"
      "    outputs: [{name: f, uri: 's3://corpus/f', size: 500GB}]\n"
      "    job:\n"
      "      resources: {cpus: 8}\n"
      "      duration: 1h\n"
      "      placement: {regions: ['aws:eu-west-1:eu-west-1b', "
      "'aws:us-east-1']}\n"
      "      run: ./prep.sh\n"
      "  - name: train\n"
      "    depends: [prep]\n"
      "    for_each: [a, b, c]\n"
      "    job:\n"
      "      resources: {accelerators: 'A100-80GB:8', market: on-demand}\n"
      "      duration: 1h\n"
      "      run: ./train.sh\n";
  char gid[64];
  struct twtest_ps_resp r;
  submit(doc, gid, sizeof gid, &r);
  assert_non_null(strstr(r.body.data, "{\"task\":\"prep\",\"where\":"
                                      "\"aws:eu-west-1\",\"step_where\":"
                                      "\"aws:us-east-1\"}"));
  tw_buf_release(&r.body);
  char *pl = released_placement(gid, 0);
  assert_true(ran_in(pl, "eu-west-1"));
  free(pl);
  /* the released job's spec: only the zone selector is left */
  char url[160];
  snprintf(url, sizeof url, "/v1/workflows/%s/tasks", gid);
  r = twtest_ps_call(&F, "GET", url, NULL, NULL);
  const char *j = strstr(r.body.data, "\"job_id\":\"");
  assert_non_null(j);
  j += 10;
  snprintf(url, sizeof url, "/v1/jobs/%.*s", (int)strcspn(j, "\""), j);
  tw_buf_release(&r.body);
  r = twtest_ps_call(&F, "GET", url, NULL, NULL);
  assert_non_null(
      strstr(r.body.data, "\"regions\":[\"aws:eu-west-1:eu-west-1b\"]"));
  tw_buf_release(&r.body);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(a_workflow_runs_where_the_joint_plan_puts_it),
      T(step_placement_keeps_step_by_step),
      T(a_task_fitting_nowhere_falls_back),
      T(constraints_narrow_and_fan_outs_share),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
