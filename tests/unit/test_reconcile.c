/* The reconciler over the in-process fake provider and a real store:
 * orphans terminated, a lost launch answer adopted, duplicates removed,
 * nothing done on a failed listing, every action recorded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/sched/reconcile.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_fake *fake;
static struct tw_reconcile *rec;
static struct tw_offer offer;

/* what the audit hook saw */
static char hooked[8][160];
static int n_hooked;

static void hook(void *ctx, const struct tw_reconcile_action *a) {
  (void)ctx;
  if (n_hooked < 8)
    snprintf(hooked[n_hooked++], sizeof hooked[0], "%s %s", a->action,
             a->instance_id);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-reconcile-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/s.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err))
    return -1;
  if (tw_provider_new_ops(&tw_provider_fake, "fake-a", NULL, &clk, &prov, &err))
    return -1;
  fake = tw_fake_of(prov);
  tw_offer_init(&offer);
  snprintf(offer.provider, sizeof offer.provider, "fake");
  snprintf(offer.account, sizeof offer.account, "fake-a");
  snprintf(offer.region, sizeof offer.region, "r1");
  snprintf(offer.zone, sizeof offer.zone, "r1a");
  snprintf(offer.instance_type, sizeof offer.instance_type, "cpu.small");
  offer.market = TW_MARKET_SPOT;
  offer.vcpus = 4;
  offer.memory_mib = 16384;
  offer.price_uusd_per_hour = 50000;
  offer.billing_granularity_s = 1;
  tw_offer_make_id(&offer);
  tw_fake_add_offer(fake, &offer);
  struct tw_reconcile_opts ro = {.store = store,
                                 .clock = &clk,
                                 .providers = &prov,
                                 .n_providers = 1,
                                 .on_action = hook};
  n_hooked = 0;
  return tw_reconcile_new(&ro, &rec, &err) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_reconcile_free(rec);
  tw_provider_free(prov);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static void submit(const char *name, char id[TW_JOB_ID_LEN + 1]) {
  char yaml[128];
  snprintf(yaml, sizeof yaml, "name: %s\nresources: {cpus: 4}\n", name);
  struct tw_job_spec spec;
  struct tw_err err = {0};
  assert_int_equal(tw_spec_parse(yaml, strlen(yaml), false, &spec, &err),
                   TW_OK);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_job_new req = {.name = spec.name,
                           .tenant = spec.tenant,
                           .project = spec.project,
                           .spec_json = b.data};
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_create(store, &req, &j, NULL, &err), TW_OK);
  memcpy(id, j.id, TW_JOB_ID_LEN + 1);
  tw_job_rec_release(&j);
  tw_buf_release(&b);
  tw_spec_release(&spec);
}

static struct tw_attempt_rec open_attempt(const char *job) {
  struct tw_attempt_new an = {.job_id = job,
                              .provider = "fake-a",
                              .offer_id = offer.id,
                              .market = "spot",
                              .price_uusd_per_hour = 50000};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(store, &an, &a, NULL), TW_OK);
  return a;
}

/* Launches straight through the provider, as a daemon killed before it
 * could store the answer would have. */
static struct tw_instance launch(const char *job, const char *token,
                                 const char *attempt) {
  struct tw_launch req = {.offer = &offer,
                          .client_token = token,
                          .job_id = job,
                          .attempt_id = attempt,
                          .tenant = "default"};
  struct tw_instance inst;
  assert_int_equal(tw_provider_launch(prov, &req, &inst, NULL), TW_OK);
  return inst;
}

static enum tw_instance_state state_of(const char *id) {
  struct tw_instance i;
  assert_int_equal(tw_fake_get(fake, id, &i), TW_OK);
  return i.state;
}

static void instance_without_an_attempt_is_terminated(void **state) {
  (void)state;
  struct tw_instance x =
      launch("j-00000000000000000000000000", "j-0-1", "j-0-1");
  struct tw_reconcile_stats st;
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.listed, 1);
  assert_int_equal(st.terminated, 1);
  assert_int_equal(state_of(x.id), TW_INST_TERMINATED);
  struct tw_reconcile_logrec *log;
  size_t n;
  assert_int_equal(tw_reconcile_log(store, 100, &log, &n, NULL), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(log[0].action, "terminated");
  assert_string_equal(log[0].instance_id, x.id);
  assert_string_equal(log[0].reason, "no such attempt in the store");
  tw_reconcile_log_free(log);
  assert_int_equal(n_hooked, 1);
  char want[160];
  snprintf(want, sizeof want, "terminated %s", x.id);
  assert_string_equal(hooked[0], want);
  /* gone: the next pass leaves it alone */
  assert_int_equal(tw_reconcile_pass(rec, &st, NULL), TW_OK);
  assert_int_equal(st.terminated, 0);
}

static void instance_of_an_ended_attempt_is_terminated_and_noted(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("ended", id);
  struct tw_attempt_rec a = open_attempt(id);
  struct tw_instance x = launch(id, a.client_token, a.client_token);
  /* the attempt was closed as a capacity failure, but the provider had
   * made the instance after all */
  struct tw_attempt_close c = {
      .attempt_id = a.id, .end_reason = "capacity", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(store, &c, NULL), TW_OK);
  struct tw_reconcile_stats st;
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.terminated, 1);
  assert_int_equal(state_of(x.id), TW_INST_TERMINATED);
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  char want[256];
  snprintf(want, sizeof want,
           "reconciler terminated instance %s of attempt %s: its attempt ended "
           "(capacity)",
           x.id, a.client_token);
  assert_string_equal(j.reason, want);
  tw_job_rec_release(&j);
}

static void lost_launch_answer_is_adopted_not_bought_again(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("lost", id);
  struct tw_attempt_rec a = open_attempt(id);
  struct tw_instance x = launch(id, a.client_token, a.client_token);
  struct tw_reconcile_stats st;
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.adopted, 1);
  assert_int_equal(st.terminated, 0);
  assert_int_equal(state_of(x.id), TW_INST_RUNNING);
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  assert_int_equal(j.state, TW_JOB_PROVISIONING);
  assert_non_null(strstr(j.placement_json, x.id));
  assert_non_null(strstr(j.reason, "reconciler adopted instance"));
  tw_job_rec_release(&j);
  /* the scheduler then follows it like any other: no second instance */
  size_t made = tw_fake_instances_created(fake);
  struct tw_sched *s;
  struct tw_sched_opts o = {
      .store = store, .clock = &clk, .providers = &prov, .n_providers = 1};
  assert_int_equal(tw_sched_new(&o, &s, NULL), TW_OK);
  tw_sched_tick(s);
  tw_sched_free(s);
  assert_int_equal(tw_fake_instances_created(fake), made);
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  assert_int_equal(j.state, TW_JOB_RUNNING);
  tw_job_rec_release(&j);
  /* and a second pass has nothing to do */
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.adopted + st.terminated, 0);
}

static void second_instance_of_one_attempt_is_a_duplicate(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("dup", id);
  struct tw_attempt_rec a = open_attempt(id);
  /* a provider that did not honour the token bought twice */
  struct tw_instance first = launch(id, a.client_token, a.client_token);
  tw_clock_advance(&clk, 1000);
  struct tw_instance second = launch(id, "another-token", a.client_token);
  struct tw_reconcile_stats st;
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.adopted, 1);
  assert_int_equal(st.terminated, 1);
  assert_int_equal(state_of(first.id), TW_INST_RUNNING);
  assert_int_equal(state_of(second.id), TW_INST_TERMINATED);
  struct tw_reconcile_logrec *log;
  size_t n;
  assert_int_equal(tw_reconcile_log(store, 100, &log, &n, NULL), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(log[0].action, "adopted");
  assert_string_equal(log[1].action, "terminated");
  char want[200];
  snprintf(want, sizeof want, "a duplicate: attempt 1 runs on %s", first.id);
  assert_string_equal(log[1].reason, want);
  tw_reconcile_log_free(log);
}

static void live_attempts_and_gone_instances_are_left_alone(void **state) {
  (void)state;
  char id[TW_JOB_ID_LEN + 1];
  submit("fine", id);
  struct tw_attempt_rec a = open_attempt(id);
  struct tw_instance x = launch(id, a.client_token, a.client_token);
  assert_int_equal(tw_store_attempt_launched(store, a.id, x.id, "{}", NULL),
                   TW_OK);
  /* an orphan already on its way out is not terminated again */
  struct tw_instance y =
      launch("j-11111111111111111111111111", "j-1-1", "j-1-1");
  assert_int_equal(tw_provider_terminate(prov, y.id, NULL), TW_OK);
  size_t before = tw_fake_calls(fake, TW_POP_TERMINATE);
  struct tw_reconcile_stats st;
  tw_reconcile_pass(rec, &st, NULL);
  /* the terminated one is history: not even listed */
  assert_int_equal(st.listed, 1);
  assert_int_equal(st.adopted + st.terminated, 0);
  assert_int_equal(tw_fake_calls(fake, TW_POP_TERMINATE), before);
  assert_int_equal(state_of(x.id), TW_INST_RUNNING);
}

static void failed_listing_terminates_nothing(void **state) {
  (void)state;
  struct tw_instance x =
      launch("j-22222222222222222222222222", "j-2-1", "j-2-1");
  tw_fake_fail(fake, TW_POP_LIST_MANAGED, TW_E_RETRYABLE,
               "RequestLimitExceeded", 1);
  struct tw_reconcile_stats st;
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.failures, 1);
  assert_int_equal(st.terminated, 0);
  assert_int_not_equal(state_of(x.id), TW_INST_TERMINATED);
  /* a failed terminate is retried at the next pass */
  tw_fake_fail(fake, TW_POP_TERMINATE, TW_E_RETRYABLE, "RequestLimitExceeded",
               1);
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.failures, 1);
  assert_int_equal(state_of(x.id), TW_INST_RUNNING);
  tw_reconcile_pass(rec, &st, NULL);
  assert_int_equal(st.terminated, 1);
  assert_int_equal(state_of(x.id), TW_INST_TERMINATED);
  struct tw_reconcile_stats all;
  tw_reconcile_stats(rec, &all);
  assert_int_equal(all.passes, 3);
  assert_int_equal(all.failures, 2);
}

static void the_thread_runs_a_pass_at_once(void **state) {
  (void)state;
  struct tw_instance x =
      launch("j-33333333333333333333333333", "j-3-1", "j-3-1");
  assert_int_equal(tw_reconcile_start(rec, NULL), TW_OK);
  /* the first pass starts as the thread does; wait for it (bounded) */
  struct tw_reconcile_stats st = {0};
  for (int i = 0; i < 500 && !st.passes; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tw_reconcile_stats(rec, &st);
  }
  assert_true(st.passes >= 1);
  assert_int_equal(state_of(x.id), TW_INST_TERMINATED);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(instance_without_an_attempt_is_terminated),
      T(instance_of_an_ended_attempt_is_terminated_and_noted),
      T(lost_launch_answer_is_adopted_not_bought_again),
      T(second_instance_of_one_attempt_is_a_duplicate),
      T(live_attempts_and_gone_instances_are_left_alone),
      T(failed_listing_terminates_nothing),
      T(the_thread_runs_a_pass_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
