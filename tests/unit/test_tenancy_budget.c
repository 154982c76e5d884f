/* Money budgets over the real scheduler, the fake provider (a 1 USD/h
 * offer) and a fake clock.
 *
 *   hard_budget_refuses_then_stops: a 3 USD hard budget admits a 2-hour
 *     job (projected 2 USD from the cheapest feasible offer), refuses a
 *     second one with the numbers, alerts once at 50 % (audit entry and
 *     webhook), and when the limit is lowered under spent + committed
 *     stops the running job; the scheduler then terminates its instance.
 *     Spent is what the meter charged into the ledger, and budget status,
 *     the alert, the report's budget table and the hard stop's reason all
 *     show the same 1.60 USD;
 *   soft_budget_only_alerts;
 *   periods_are_calendar_months_weeks_and_days. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "billing/ledger/meter.h"
#include "billing/report/report.h"
#include "broker/base/mem.h"
#include "broker/tenancy/audit.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "broker/tenancy/tenancy_int.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_provider *prov;
static struct tw_fake *fake;
static struct tw_sched *sched;
static struct tw_tenancy *ten;
static struct tw_meter *meter;

/* ---- a webhook receiver -----------------------------------------------------
 */

static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static char hook_body[4096];
static int hook_calls;

static enum MHD_Result on_hook(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **ctx) {
  (void)cls, (void)url, (void)method, (void)version;
  if (!*ctx) {
    *ctx = (void *)1;
    pthread_mutex_lock(&hook_mu);
    hook_body[0] = '\0';
    pthread_mutex_unlock(&hook_mu);
    return MHD_YES;
  }
  if (*size) {
    pthread_mutex_lock(&hook_mu);
    strncat(hook_body, data,
            *size < sizeof hook_body - strlen(hook_body) - 1
                ? *size
                : sizeof hook_body - strlen(hook_body) - 1);
    pthread_mutex_unlock(&hook_mu);
    *size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&hook_mu);
  hook_calls++;
  pthread_mutex_unlock(&hook_mu);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(c, 204, r);
  MHD_destroy_response(r);
  return ret;
}

static struct MHD_Daemon *hook;
static int hook_port;

/* ---- fixture ----------------------------------------------------------------
 */

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-budget-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/b.db", dir);
  tw_clock_fake_init(&clk, 1764460800000); /* 2025-11-30 00:00 UTC */
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "fake-a", NULL, &clk, &prov, &err))
    return -1;
  fake = tw_fake_of(prov);
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "r1a");
  snprintf(o.instance_type, sizeof o.instance_type, "cpu.4");
  o.arch = TW_ARCH_X86_64;
  o.vcpus = 4;
  o.memory_mib = 16384;
  o.market = TW_MARKET_ON_DEMAND;
  o.price_uusd_per_hour = 1000000; /* 1 USD/h */
  o.billing_granularity_s = 1;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake, &o);
  /* the receiver is on loopback: listed, as an operator would */
  static const char *const allow[] = {"127.0.0.1/32", NULL};
  struct tw_tenancy_opts to = {.store = store,
                               .clock = &clk,
                               .providers = &prov,
                               .n_providers = 1,
                               .webhook_timeout_ms = 2000,
                               .webhook_allow = allow};
  if (tw_tenancy_open(&to, &ten, &err))
    return -1;
  /* Spend is what the meter charged: 6-minute periods, so 1 USD/h charges
   * exactly 0.10 USD per closed period. */
  struct tw_meter_cfg mc = {.charge_period_s = 360};
  struct tw_meter_opts mo = {.store = store, .cfg = &mc, .clock = &clk};
  if (tw_meter_new(&mo, &meter, &err))
    return -1;
  struct tw_sched_opts sopts = {.store = store,
                                .clock = &clk,
                                .providers = &prov,
                                .n_providers = 1,
                                .tenancy = ten};
  if (tw_sched_new(&sopts, &sched, &err) ||
      tw_tenancy_tenant_create(ten, "ml", &err))
    return -1;
  tw_sched_tick(sched); /* the scheduler sees the offers; admission too */
  hook_calls = 0;
  hook = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                          on_hook, NULL, MHD_OPTION_END);
  if (!hook)
    return -1;
  hook_port = MHD_get_daemon_info(hook, MHD_DAEMON_INFO_BIND_PORT)->port;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  MHD_stop_daemon(hook);
  tw_meter_free(meter);
  tw_sched_free(sched);
  tw_tenancy_free(ten);
  tw_provider_free(prov);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

/* Admits and stores a job as the API does: admission, the job, then its
 * owner and projected cost.  Returns the admission's rc. */
static enum tw_rc submit(const char *yaml, char id[TW_JOB_ID_LEN + 1],
                         struct tw_err *err) {
  struct tw_job_spec spec;
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, err))
    fail_msg("spec: %s", err->msg);
  struct tw_admission adm;
  enum tw_rc rc = tw_tenancy_admit(ten, &spec, "alice", "req", &adm, err);
  if (rc == TW_OK) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_spec_to_json(&spec, &b);
    struct tw_job_new req = {.name = spec.name,
                             .tenant = spec.tenant,
                             .project = spec.project,
                             .spec_json = b.data};
    struct tw_job_rec j;
    assert_int_equal(tw_store_job_create(store, &req, &j, NULL, err), TW_OK);
    memcpy(id, j.id, TW_JOB_ID_LEN + 1);
    struct tw_job_created jc = {.job_id = j.id,
                                .tenant = j.tenant,
                                .project = j.project,
                                .principal = "alice",
                                .projected_uusd = adm.projected_uusd};
    struct tw_audit_event ev = {.principal = "alice",
                                .action = "POST /v1/jobs",
                                .object = j.id,
                                .outcome = "ok"};
    assert_int_equal(tw_tenancy_request_done(ten, &ev, &jc, err), TW_OK);
    tw_job_rec_release(&j);
    tw_buf_release(&b);
  }
  tw_spec_release(&spec);
  return rc;
}

static enum tw_job_state state_of(const char *id) {
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  enum tw_job_state s = j.state;
  tw_job_rec_release(&j);
  return s;
}

static int audit_count(const char *action) {
  struct tw_audit_filter f = {.limit = 1000, .action = action};
  struct tw_audit_entry *e;
  size_t n;
  int64_t next;
  assert_int_equal(
      tw_audit_list(tw_tenancy_audit(ten), &f, &e, &n, &next, NULL), TW_OK);
  tw_audit_entries_free(e, n);
  return (int)n;
}

static void budget(int64_t limit, bool hard, bool stop, int64_t if_version,
                   struct tw_budget *out) {
  struct tw_budget b;
  tw_budget_init(&b);
  snprintf(b.tenant, sizeof b.tenant, "ml");
  b.limit_uusd = limit;
  b.hard = hard;
  b.stop_running = stop;
  snprintf(b.webhook, sizeof b.webhook, "http://127.0.0.1:%d/budget",
           hook_port);
  struct tw_err err = {0};
  if (tw_tenancy_budget_set(ten, &b, if_version, out, &err))
    fail_msg("budget: %s", err.msg);
}

/* The spent figure of tenant's budget in the report's budget table, as
 * the API renders it (the tenancy module's monthly budgets, this month). */
static int64_t report_budget_spent(const char *tenant) {
  struct tw_budget *bs = NULL;
  size_t n = 0;
  assert_int_equal(tw_tenancy_budget_list(ten, tenant, &bs, &n, NULL), TW_OK);
  struct tw_ledger_budget *lb = tw_calloc(n ? n : 1, sizeof *lb);
  for (size_t i = 0; i < n; i++) {
    snprintf(lb[i].tenant, sizeof lb[i].tenant, "%s", bs[i].tenant);
    snprintf(lb[i].project, sizeof lb[i].project, "%s", bs[i].project);
    lb[i].limit_uusd = bs[i].limit_uusd;
  }
  int64_t now = tw_clock_now_ms(&clk);
  struct tw_report_req q = {.format = NULL, /* json, the default */
                            .now_ms = now,
                            .budgets = lb,
                            .n_budgets = n,
                            .budgets_source = "tenancy"};
  assert_int_equal(
      tw_report_range_parse(NULL, NULL, now, &q.from_ms, &q.to_ms, NULL),
      TW_OK);
  struct tw_buf out;
  tw_buf_init(&out);
  const char *ctype;
  assert_int_equal(tw_report_render(store, &q, &out, &ctype, NULL), TW_OK);
  json_t *j = json_loadb(out.data, out.len, 0, NULL);
  assert_non_null(j);
  json_t *items = json_object_get(json_object_get(j, "budgets"), "items");
  assert_int_equal(json_array_size(items), 1);
  int64_t spent = json_integer_value(
      json_object_get(json_array_get(items, 0), "spent_uusd"));
  json_decref(j);
  tw_buf_release(&out);
  free(lb);
  free(bs);
  return spent;
}

static void hard_budget_refuses_then_stops(void **state) {
  (void)state;
  struct tw_budget b;
  budget(3000000, true, true, 0, &b);
  char j1[TW_JOB_ID_LEN + 1], j2[TW_JOB_ID_LEN + 1];
  struct tw_err err = {0};
  assert_int_equal(
      submit("name: one\ntenant: ml\nduration: 2h\nresources: {cpus: 4}\n", j1,
             &err),
      TW_OK);
  memset(&err, 0, sizeof err);
  assert_int_equal(
      submit("name: two\ntenant: ml\nduration: 2h\nresources: {cpus: 4}\n", j2,
             &err),
      TW_E_QUOTA);
  assert_string_equal(err.field, "budget.ml");
  assert_string_equal(err.msg,
                      "hard monthly budget of ml: limit $3.00, spent $0.00, "
                      "committed $2.00; this job is projected at $2.00, which "
                      "does not fit");
  assert_int_equal(audit_count("budget.refuse"), 1);
  /* a one-hour job still fits */
  char j3[TW_JOB_ID_LEN + 1];
  memset(&err, 0, sizeof err);
  assert_int_equal(
      submit("name: three\ntenant: ml\nduration: 1h\nresources: {cpus: 4}\n",
             j3, &err),
      TW_OK);
  struct tw_job_transition t = {
      .id = j3, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);

  tw_sched_tick(sched);
  tw_sched_tick(sched);
  assert_int_equal(state_of(j1), TW_JOB_RUNNING);
  /* 96 minutes at 1 USD/h: 1.60 USD spent, 53 % of 3 USD */
  tw_clock_advance(&clk, 96 * 60 * 1000);
  tw_meter_tick(meter); /* sees the attempt running */
  tw_meter_tick(meter); /* charges its closed periods */
  assert_int_equal(tw_tenancy_tick(ten), 0);
  struct tw_budget_status s;
  assert_int_equal(tw_tenancy_budget_status(ten, "ml", NULL, &s, NULL), TW_OK);
  assert_int_equal(s.spent_uusd, 1600000);
  assert_int_equal(s.committed_uusd, 400000);
  assert_int_equal(s.forecast_uusd, 2000000);
  assert_int_equal(s.alerted_pct, 50);
  assert_int_equal(audit_count("budget.alert"), 1);
  for (int i = 0; i < 100 && hook_calls < 1; i++)
    usleep(10000); /* the receiver's thread; the call itself was synchronous */
  pthread_mutex_lock(&hook_mu);
  assert_int_equal(hook_calls, 1);
  assert_non_null(strstr(hook_body, "\"threshold_pct\":50"));
  assert_non_null(strstr(hook_body, "\"spent_uusd\":1600000"));
  pthread_mutex_unlock(&hook_mu);
  /* once per threshold and period */
  assert_int_equal(tw_tenancy_tick(ten), 0);
  assert_int_equal(audit_count("budget.alert"), 1);

  /* one figure: the report's budget table says what budget status says */
  assert_int_equal(report_budget_spent("ml"), s.spent_uusd);

  /* finance lowers the limit to 2 USD: spent + committed reaches it */
  budget(2000000, true, true, b.version, &b);
  assert_int_equal(tw_tenancy_tick(ten), 1);
  assert_int_equal(state_of(j1), TW_JOB_CANCELLED);
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, j1, &j, NULL), TW_OK);
  assert_non_null(strstr(j.reason,
                         "stopped: hard monthly budget of ml reached: spent "
                         "$1.60 + committed $0.40 >= limit $2.00"));
  tw_job_rec_release(&j);
  assert_int_equal(audit_count("budget.stop"), 1);
  /* the scheduler gives the instance back */
  tw_sched_tick(sched);
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, "fake-a-1", &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  /* what is left (0.40 USD) admits a short job, not an hour */
  memset(&err, 0, sizeof err);
  assert_int_equal(
      submit("name: four\ntenant: ml\nduration: 1h\nresources: {cpus: 4}\n", j2,
             &err),
      TW_E_QUOTA);
  assert_non_null(strstr(err.msg, "limit $2.00, spent $1.60, committed $0.00"));
  assert_int_equal(
      submit("name: five\ntenant: ml\nduration: 10m\nresources: {cpus: 4}\n",
             j2, &err),
      TW_OK);
  /* a stale If-Match loses */
  struct tw_budget x;
  tw_budget_init(&x);
  snprintf(x.tenant, sizeof x.tenant, "ml");
  assert_int_equal(tw_tenancy_budget_set(ten, &x, b.version - 1, NULL, &err),
                   TW_E_CONFLICT);
}

/* One "spent": budget status, the report's budget table and the figure
 * the alerts and the hard stop compare are the ledger's effective cost
 * plus what the running attempt has accrued.  1 USD/h for 100 minutes
 * with 6-minute periods: 16 periods closed (1,600,000) and 4 minutes
 * accrued (240 s x 1e6 / 3600 = 66,666.7, rounded half up: 66,667). */
static void spent_is_the_ledger_plus_accrual(void **state) {
  (void)state;
  struct tw_budget b;
  budget(10000000, false, false, 0, &b);
  char j1[TW_JOB_ID_LEN + 1];
  struct tw_err err = {0};
  assert_int_equal(
      submit("name: one\ntenant: ml\nduration: 2h\nresources: {cpus: 4}\n", j1,
             &err),
      TW_OK);
  tw_sched_tick(sched);
  tw_sched_tick(sched);
  assert_int_equal(state_of(j1), TW_JOB_RUNNING);
  tw_clock_advance(&clk, 100 * 60 * 1000);
  tw_meter_tick(meter);
  tw_meter_tick(meter);
  struct tw_budget_status s;
  assert_int_equal(tw_tenancy_budget_status(ten, "ml", NULL, &s, NULL), TW_OK);
  assert_int_equal(s.accrued_uusd, 66667);
  assert_int_equal(s.spent_uusd, 1600000 + 66667);
  /* projected 2 USD, less charged and accrued */
  assert_int_equal(s.committed_uusd, 2000000 - 1600000 - 66667);
  assert_int_equal(report_budget_spent("ml"), s.spent_uusd);
  int64_t ledger_only;
  assert_int_equal(tw_ledger_spent(store, "ml", NULL, s.period_start_ms,
                                   s.period_end_ms, &ledger_only, NULL),
                   TW_OK);
  assert_int_equal(ledger_only, 1600000);
}

static void soft_budget_only_alerts(void **state) {
  (void)state;
  struct tw_budget b;
  budget(1000000, false, false, 0, &b);
  char j1[TW_JOB_ID_LEN + 1], j2[TW_JOB_ID_LEN + 1];
  struct tw_err err = {0};
  assert_int_equal(
      submit("name: a\ntenant: ml\nduration: 2h\nresources: {cpus: 4}\n", j1,
             &err),
      TW_OK);
  assert_int_equal(
      submit("name: b\ntenant: ml\nduration: 2h\nresources: {cpus: 4}\n", j2,
             &err),
      TW_OK);
  tw_sched_tick(sched);
  tw_sched_tick(sched);
  /* 2 jobs x 31 min: 5 closed periods each, 1.00 USD charged */
  tw_clock_advance(&clk, 31 * 60 * 1000);
  tw_meter_tick(meter); /* sees the attempt running */
  tw_meter_tick(meter); /* charges its closed periods */
  assert_int_equal(tw_tenancy_tick(ten), 0);
  assert_int_equal(state_of(j1), TW_JOB_RUNNING);
  assert_int_equal(audit_count("budget.alert"), 3); /* 50, 80, 100 */
  struct tw_err e2 = {0};
  struct tw_budget bad = b;
  bad.stop_running = true;
  assert_int_equal(tw_tenancy_budget_set(ten, &bad, b.version, NULL, &e2),
                   TW_E_INVALID);
  assert_string_equal(e2.field, "stop_running");
}

static void periods_are_calendar_months_weeks_and_days(void **state) {
  (void)state;
  int64_t s, e;
  /* 2025-11-30 12:00 UTC */
  int64_t t = 1764460800000 + 12 * 3600 * 1000LL;
  tn_period(TW_PERIOD_MONTHLY, t, &s, &e);
  assert_int_equal(s, 1761955200000); /* 2025-11-01 */
  assert_int_equal(e, 1764547200000); /* 2025-12-01 */
  tn_period(TW_PERIOD_WEEKLY, t, &s, &e);
  assert_int_equal(s, 1763942400000); /* Monday 2025-11-24 */
  assert_int_equal(e - s, 7 * 86400000LL);
  tn_period(TW_PERIOD_DAILY, t, &s, &e);
  assert_int_equal(s, 1764460800000);
  /* December wraps to the next year */
  tn_period(TW_PERIOD_MONTHLY, 1765584000000 /* 2025-12-13 */, &s, &e);
  assert_int_equal(s, 1764547200000);
  assert_int_equal(e, 1767225600000); /* 2026-01-01 */
  /* February of a leap year */
  tn_period(TW_PERIOD_MONTHLY, 1709251200000 - 1 /* 2024-02-29 23:59:59.999 */,
            &s, &e);
  assert_int_equal(s, 1706745600000); /* 2024-02-01 */
  assert_int_equal(e, 1709251200000); /* 2024-03-01 */
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(hard_budget_refuses_then_stops, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(soft_budget_only_alerts, setup, teardown),
      cmocka_unit_test_setup_teardown(spent_is_the_ledger_plus_accrual, setup,
                                      teardown),
      cmocka_unit_test(periods_are_calendar_months_weeks_and_days),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
