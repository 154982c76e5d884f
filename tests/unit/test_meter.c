/* Metering: each provider's billing rule (a 59-second AWS attempt is
 * charged 60 s, a reclaimed spot attempt to the second it ended, hourly
 * units charged as they start and credited back with an Adjustment), the
 * price in force per charge period, node counts, discounts, chargeback,
 * egress, restarts that neither skip nor repeat a period, and the
 * `billing:` section's validation.  Attempts go through the real store on
 * a fake clock; the meter's pass is driven by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/ledger/ledger.h"
#include "billing/ledger/meter.h"
#include "billing/report/report.h"
#include <jansson.h>
#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/core/store.h"
#include "broker/core/store_tenancy.h"
#include "providers/registry.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define T0 1764460800000LL /* 2025-11-30T00:00:00Z */
#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_store *store;
static struct tw_meter *meter;
static struct tw_offer offers[8];
static size_t n_offers;

static const struct tw_provider_ops *const *registry; /* NULL: none */
/* --by-tick: every pass is tw_meter_tick's, on the live attempts the
 * meter keeps from the store's changes, the offers listed through its
 * offers function; else the pass is tw_meter_observe on the live
 * attempts read whole.  Both give the same ledger. */
static bool by_tick;

/* The meter's offers function: the test's offers as they are now. */
static void list_offers(void *ctx, struct tw_offer_list *out) {
  (void)ctx;
  for (size_t i = 0; i < n_offers; i++)
    tw_offer_list_push(out, &offers[i]);
}

static struct tw_meter *new_meter(const char *billing_yaml) {
  struct tw_err err = {0};
  struct tw_meter_cfg cfg;
  struct tw_node *n = NULL;
  if (billing_yaml)
    assert_int_equal(
        tw_node_parse_yaml(billing_yaml, strlen(billing_yaml), &n, &err),
        TW_OK);
  assert_int_equal(tw_meter_cfg_parse(n, &cfg, &err), TW_OK);
  struct tw_meter_opts o = {
      .store = store, .cfg = &cfg, .clock = &clk, .adapters = registry};
  if (by_tick) { /* listed again at every pass, as pass_at hands them */
    o.offers = list_offers;
    o.offers_ttl_ms = 1;
  }
  struct tw_meter *m = NULL;
  assert_int_equal(tw_meter_new(&o, &m, &err), TW_OK);
  tw_meter_cfg_release(&cfg);
  tw_node_free(n);
  return m;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-meter-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, T0);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &store, &err))
    return -1;
  meter = NULL;
  n_offers = 0;
  registry = NULL;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_meter_free(meter);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

/* An AWS-like offer: per second, 60 s minimum. */
static struct tw_offer *add_offer(const char *account, const char *provider,
                                  enum tw_market market, int64_t price,
                                  int64_t gran, int64_t min) {
  /* built aside: snprintf into the array it reads from upsets -Wrestrict */
  struct tw_offer tmp, *o = &tmp;
  tw_offer_init(o);
  snprintf(o->provider, sizeof o->provider, "%s", provider);
  snprintf(o->account, sizeof o->account, "%s", account);
  snprintf(o->region, sizeof o->region, "us-east-1");
  snprintf(o->zone, sizeof o->zone, "us-east-1a");
  snprintf(o->instance_type, sizeof o->instance_type, "m5.large");
  o->market = market;
  o->price_uusd_per_hour = price;
  o->billing_granularity_s = gran;
  o->min_charge_s = min;
  o->vcpus = 8;
  o->memory_mib = 32768;
  o->accel_count = 2;
  tw_offer_make_id(o);
  assert_true(n_offers < sizeof offers / sizeof offers[0]);
  offers[n_offers] = tmp;
  o = &offers[n_offers++];
  return o;
}

/* A job with one attempt on o, launched; returns the attempt id. */
static int64_t start_attempt(const struct tw_offer *o, const char *tenant,
                             int nodes) {
  struct tw_err err = {0};
  char spec[128];
  snprintf(spec, sizeof spec, "{\"name\":\"train\",\"nodes\":%d}", nodes);
  struct tw_job_new jn = {.name = "train",
                          .tenant = tenant,
                          .project = "vision",
                          .spec_json = spec};
  struct tw_job_rec job;
  bool replayed;
  assert_int_equal(tw_store_job_create(store, &jn, &job, &replayed, &err),
                   TW_OK);
  struct tw_attempt_new an = {
      .job_id = job.id,
      .provider = o->account,
      .offer_id = o->id,
      .market = o->market == TW_MARKET_SPOT ? "spot" : "on-demand",
      .price_uusd_per_hour = o->price_uusd_per_hour,
      .reason = "test"};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(store, &an, &a, &err), TW_OK);
  assert_int_equal(tw_store_attempt_launched(store, a.id, "i-0abc", "{}", &err),
                   TW_OK);
  tw_job_rec_release(&job);
  return a.id;
}

static void set_running(int64_t id) {
  struct tw_err err = {0};
  assert_int_equal(tw_store_attempt_running(store, id, &err), TW_OK);
}

static void end_attempt(int64_t id, const char *reason) {
  struct tw_err err = {0};
  struct tw_attempt_close c = {
      .attempt_id = id, .end_reason = reason, .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(store, &c, &err), TW_OK);
}

/* One meter pass at the clock's time, as the meter's thread does it. */
static void pass_at(int64_t t) {
  clk.fake_ms = t;
  if (by_tick) {
    tw_meter_tick(meter);
    return;
  }
  struct tw_attempt_rec *live = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  assert_int_equal(tw_store_attempts_live(store, &live, &n, &err), TW_OK);
  tw_meter_observe(meter, live, n, offers, n_offers, t);
  free(live);
}

#define MAXR 64
static struct tw_ledger_row got[MAXR];
static size_t n_got;

static int collect(void *ctx, const struct tw_ledger_row *r) {
  (void)ctx;
  assert_true(n_got < MAXR);
  got[n_got++] = *r;
  return 0;
}

static void read_rows(void) {
  struct tw_err err = {0};
  n_got = 0;
  assert_int_equal(tw_ledger_scan(store, T0 - TW_DAY_MS, T0 + 30 * TW_DAY_MS,
                                  NULL, collect, NULL, &err),
                   TW_OK);
}

static int64_t total_quantity(void) {
  int64_t q = 0;
  for (size_t i = 0; i < n_got; i++)
    q += got[i].quantity;
  return q;
}

static int64_t total_list(void) {
  int64_t v = 0;
  for (size_t i = 0; i < n_got; i++)
    v += got[i].list_uusd;
  return v;
}

/* ---- the rules alone ---------------------------------------------------- */

static void billing_rules_table(void **state) {
  (void)state;
  static const struct {
    int64_t gran, min, elapsed_ms;
    enum tw_bill_phase phase;
    int64_t want_s;
    int64_t reclaim_free_s;
    bool reclaim_min;
  } cases[] = {
      {1, 60, 59000, TW_BILL_ENDED, 60, 0, false},     /* AWS: 59 s -> 60 s */
      {1, 60, 59000, TW_BILL_RECLAIMED, 59, 0, false}, /* reclaimed spot: to the second */
      {1, 60, 59000, TW_BILL_RUNNING, 59, 0, false},   /* the minimum waits for the end */
      {1, 60, 59001, TW_BILL_ENDED, 60, 0, false},     /* a started second is a second */
      {1, 60, 61001, TW_BILL_ENDED, 62, 0, false},
      {1, 60, 0, TW_BILL_ENDED, 60, 0, false},
      {3600, 0, 1, TW_BILL_RUNNING, 3600, 0, false}, /* hourly: charged as it starts */
      {3600, 0, 3600001, TW_BILL_RUNNING, 7200, 0, false},
      {3600, 0, 5000, TW_BILL_RECLAIMED, 5, 0, false},
      {60, 0, 61000, TW_BILL_ENDED, 120, 0, false}, /* per minute */
      {0, 0, 1500, TW_BILL_ENDED, 2, 0, false},     /* unknown granularity: seconds */
      /* AWS Linux Spot interrupted by EC2: nothing in the first
       * instance-hour, the seconds used after it */
      {1, 60, 59000, TW_BILL_RECLAIMED, 0, 3600, false},
      {1, 60, 3599999, TW_BILL_RECLAIMED, 0, 3600, false},
      {1, 60, 3600000, TW_BILL_RECLAIMED, 3600, 3600, false},
      {1, 60, 3600001, TW_BILL_RECLAIMED, 3601, 3600, false},
      {1, 60, 59000, TW_BILL_ENDED, 60, 3600, false}, /* stopped by us */
      /* Azure: per second, 5 minutes at least, evictions included */
      {1, 300, 90000, TW_BILL_ENDED, 300, 0, true},
      {1, 300, 90000, TW_BILL_RECLAIMED, 300, 0, true},
      {1, 300, 300001, TW_BILL_ENDED, 301, 0, true},
      /* Alibaba: per second, no minimum, preemptible alike */
      {1, 0, 1500, TW_BILL_ENDED, 2, 0, false},
      {1, 0, 1500, TW_BILL_RECLAIMED, 2, 0, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_bill_rule r = {cases[i].gran, cases[i].min,
                             cases[i].reclaim_free_s, cases[i].reclaim_min};
    int64_t got_s = tw_bill_seconds(&r, cases[i].elapsed_ms, cases[i].phase);
    if (got_s != cases[i].want_s)
      fail_msg("case %zu: %lld s, want %lld", i, (long long)got_s,
               (long long)cases[i].want_s);
  }
  assert_int_equal(tw_bill_cost(3600000, 60), 60000); /* $3.60/h, 60 s */
  assert_int_equal(tw_bill_cost(1, 1800), 1);         /* half rounds up */
  assert_int_equal(tw_bill_cost(1, 1799), 0);
  assert_int_equal(tw_bill_cost(3600000, -3510), -3510000);
  assert_int_equal(tw_bill_cost(98000000, 3600 * 4), 392000000); /* p4d x 4 h */
  assert_int_equal(tw_bill_discount(1000000, 1250), 875000);
  assert_int_equal(tw_bill_discount(1000000, 0), 1000000);
  assert_int_equal(tw_bill_discount(-1000, 1000), -900);
}

/* ---- attempts through the store -------------------------------------------
 */

static void aws_59_second_attempt_is_charged_60_seconds(void **state) {
  (void)state;
  meter = new_meter(NULL);
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 10 * MIN;
  set_running(a);
  pass_at(T0 + 10 * MIN + 1 * SEC);
  pass_at(T0 + 10 * MIN + 30 * SEC);
  clk.fake_ms = T0 + 10 * MIN + 59 * SEC;
  end_attempt(a, "completed");
  pass_at(T0 + 10 * MIN + 60 * SEC);
  read_rows();
  assert_int_equal(n_got, 1);
  assert_int_equal(got[0].quantity, 60);
  assert_int_equal(got[0].usage_ms, 59 * SEC);
  assert_int_equal(got[0].list_uusd, 60000); /* $1 per 1000 s */
  assert_int_equal(got[0].start_ms, T0 + 10 * MIN);
  assert_int_equal(got[0].end_ms, T0 + 10 * MIN + 59 * SEC);
  assert_string_equal(got[0].tenant, "ml");
  assert_string_equal(got[0].project, "vision");
  assert_string_equal(got[0].provider, "aws");
  assert_string_equal(got[0].account, "aws-main");
  assert_string_equal(got[0].region, "us-east-1");
  assert_string_equal(got[0].resource_id, "i-0abc");
  assert_int_equal(got[0].attempt_id, a);
  struct tw_meter_stats st;
  tw_meter_stats(meter, &st);
  assert_int_equal(st.attempts, 1);
  assert_int_equal(st.open, 0);
  /* nothing more on later passes */
  pass_at(T0 + 3 * HOUR);
  read_rows();
  assert_int_equal(n_got, 1);
}

static void reclaimed_spot_attempt_is_charged_to_the_second(void **state) {
  (void)state;
  meter = new_meter(NULL);
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_SPOT, 3600000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 5 * MIN;
  set_running(a);
  pass_at(T0 + 5 * MIN + 2 * SEC);
  clk.fake_ms = T0 + 5 * MIN + 30 * SEC;
  end_attempt(a, "interrupted");
  pass_at(T0 + 5 * MIN + 31 * SEC);
  read_rows();
  assert_int_equal(n_got, 1);
  assert_int_equal(got[0].quantity, 30);
  assert_int_equal(got[0].list_uusd, 30000);
  assert_string_equal(got[0].market, "spot");

  /* the same 30 s on spot ended by us pays the minimum */
  int64_t b = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 20 * MIN;
  set_running(b);
  pass_at(T0 + 20 * MIN + 1 * SEC);
  clk.fake_ms = T0 + 20 * MIN + 30 * SEC;
  end_attempt(b, "cancelled");
  pass_at(T0 + 20 * MIN + 31 * SEC);
  read_rows();
  assert_int_equal(n_got, 2);
  assert_int_equal(got[1].quantity, 60);
}

/* The adapters' published rules (their info blocks), through the store:
 * the offers here carry no rule of their own (granularity 0), so what
 * applies is each cloud's data. */
static void published_rules_per_cloud(void **state) {
  (void)state;
  registry = tw_adapters;
  meter = new_meter("providers:\n"
                    "  ali-cn: {min_charge_s: 30}\n");
  /* $3.60/h = 1000 micro-USD a second */
  const struct tw_offer *aws_spot =
      add_offer("aws-main", "aws", TW_MARKET_SPOT, 3600000, 0, 0);
  const struct tw_offer *az =
      add_offer("azure-main", "azure", TW_MARKET_ON_DEMAND, 3600000, 0, 0);
  struct tw_bill_rule r;
  tw_bill_rule_resolve(tw_provider_info_find(tw_adapters, "alibaba"), 0, 0,
                       NULL, &r);
  assert_int_equal(r.granularity_s, 1);
  assert_int_equal(r.min_charge_s, 0);

  /* AWS spot interrupted by EC2 after 20 min: no charge */
  int64_t a = start_attempt(aws_spot, "ml", 1);
  clk.fake_ms = T0 + 1 * HOUR;
  set_running(a);
  pass_at(T0 + 1 * HOUR + 1 * SEC);
  clk.fake_ms = T0 + 1 * HOUR + 20 * MIN;
  end_attempt(a, "interrupted");
  pass_at(T0 + 1 * HOUR + 20 * MIN + 1 * SEC);
  read_rows();
  assert_int_equal(total_quantity(), 0);
  assert_int_equal(total_list(), 0);

  /* AWS spot interrupted after 1 h 0 min 30 s: the 3630 s used */
  int64_t b = start_attempt(aws_spot, "ml", 1);
  clk.fake_ms = T0 + 3 * HOUR;
  set_running(b);
  pass_at(T0 + 3 * HOUR + 1 * SEC);
  pass_at(T0 + 4 * HOUR + 10 * SEC);
  pass_at(T0 + 4 * HOUR + 20 * SEC); /* closes 03:00-04:00: 3600 s */
  clk.fake_ms = T0 + 4 * HOUR + 30 * SEC;
  end_attempt(b, "interrupted");
  pass_at(T0 + 4 * HOUR + 31 * SEC);
  read_rows();
  assert_int_equal(total_quantity(), 3600 + 30);
  assert_int_equal(total_list(), 3630 * 1000);

  /* Azure on-demand ended by us after 90 s: 300 s */
  int64_t c = start_attempt(az, "ml", 1);
  clk.fake_ms = T0 + 6 * HOUR;
  set_running(c);
  pass_at(T0 + 6 * HOUR + 1 * SEC);
  clk.fake_ms = T0 + 6 * HOUR + 90 * SEC;
  end_attempt(c, "completed");
  pass_at(T0 + 6 * HOUR + 91 * SEC);
  read_rows();
  assert_int_equal(total_quantity(), 3630 + 300);
  assert_int_equal(total_list(), (3630 + 300) * 1000);

  /* a configured minimum over the published one (Alibaba has none) */
  const struct tw_offer *ali =
      add_offer("ali-cn", "alibaba", TW_MARKET_ON_DEMAND, 7200000, 0, 0);
  int64_t d = start_attempt(ali, "ml", 1);
  clk.fake_ms = T0 + 8 * HOUR;
  set_running(d);
  pass_at(T0 + 8 * HOUR + 1 * SEC);
  clk.fake_ms = T0 + 8 * HOUR + 10 * SEC;
  end_attempt(d, "completed");
  pass_at(T0 + 8 * HOUR + 11 * SEC);
  read_rows();
  /* 30 s at $7.20/h = 30 x 2000 micro-USD */
  assert_int_equal(got[n_got - 1].quantity, 30);
  assert_int_equal(got[n_got - 1].list_uusd, 60000);
  /* every published rule names its source (docs/billing.md) */
  for (size_t i = 0; tw_adapters[i]; i++) {
    const struct tw_provider_info *in = tw_provider_ops_info(tw_adapters[i]);
    if (in->billing.kind != TW_BILLING_UNSET)
      assert_true(in->billing.source && in->billing.source[0]);
  }
}

/* Metering follows the provider's times, not the broker's looks: a
 * Slurm job that started at 10 s and ended at 50 s is charged 40 s even
 * though the broker saw it run at 14.9 s and end at 75 s; an AWS instance
 * cancelled 0.2 s after the provider started it (the broker never saw it
 * running) is charged EC2's 60-second minimum. */
static void charged_from_the_providers_times(void **state) {
  (void)state;
  registry = tw_adapters;
  meter = new_meter(NULL);
  struct tw_err err = {0};
  const struct tw_offer *lab =
      add_offer("lab", "slurm", TW_MARKET_ON_DEMAND, 3600000, 1, 0);
  int64_t a = start_attempt(lab, "ml", 1);
  pass_at(T0 + 1 * SEC); /* seen provisioning */
  clk.fake_ms = T0 + 14900;
  assert_int_equal(tw_store_attempt_running_at(store, a, T0 + 10 * SEC, &err),
                   TW_OK);
  pass_at(T0 + 15 * SEC);
  clk.fake_ms = T0 + 75 * SEC;
  struct tw_attempt_close c = {.attempt_id = a,
                               .end_reason = "completed",
                               .job_to = TW_JOB_NSTATES,
                               .ended_at_ms = T0 + 50 * SEC};
  assert_int_equal(tw_store_attempt_close(store, &c, &err), TW_OK);
  pass_at(T0 + 76 * SEC);
  read_rows();
  assert_int_equal(total_quantity(), 40);
  assert_int_equal(total_list(), 40 * 1000); /* $3.60/h: 1000 a second */
  assert_int_equal(got[0].start_ms, T0 + 10 * SEC);

  const struct tw_offer *aws =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 0, 0);
  clk.fake_ms = T0 + 2 * HOUR;
  int64_t b = start_attempt(aws, "ml", 1);
  pass_at(T0 + 2 * HOUR + 1 * SEC); /* seen provisioning, never running */
  clk.fake_ms = T0 + 2 * HOUR + 5200;
  struct tw_attempt_close cb = {.attempt_id = b,
                                .end_reason = "cancelled",
                                .job_to = TW_JOB_NSTATES,
                                .ran_from_ms = T0 + 2 * HOUR + 5 * SEC};
  assert_int_equal(tw_store_attempt_close(store, &cb, &err), TW_OK);
  pass_at(T0 + 2 * HOUR + 6 * SEC);
  read_rows();
  assert_int_equal(total_quantity(), 40 + 60);
  assert_int_equal(total_list(), (40 + 60) * 1000);

  /* times out of order or in the future are kept in bounds */
  clk.fake_ms = T0 + 3 * HOUR;
  int64_t d = start_attempt(aws, "ml", 1);
  assert_int_equal(
      tw_store_attempt_running_at(store, d, T0 + 5 * HOUR, &err), TW_OK);
  struct tw_attempt_rec *all = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_live(store, &all, &n, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_int_equal(all[0].running_ms, T0 + 3 * HOUR); /* not the future */
  free(all);
}

/* Accrual: a running attempt counts up to now, marked accrued, before its
 * charge period closes; once the period closes the row is exact and only
 * the time since is accrued.  AWS on-demand at $3.60/h (1000 uusd a
 * second), 12.5 % off: effective 875 a second. */
static void running_attempts_accrue_up_to_now(void **state) {
  (void)state;
  registry = tw_adapters;
  meter = new_meter("providers:\n  aws-main: {discount_pct: \"12.5\"}\n");
  struct tw_err err = {0};
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 0, 0);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 10 * HOUR;
  set_running(a);
  pass_at(T0 + 10 * HOUR + 1 * SEC);
  int64_t spent, accrued;
  /* 10:30: nothing in the ledger, 1800 s accrued */
  assert_int_equal(tw_ledger_spent_now(store, "ml", NULL, T0, T0 + TW_DAY_MS,
                                       T0 + 10 * HOUR + 30 * MIN, &spent,
                                       &accrued, &err),
                   TW_OK);
  assert_int_equal(spent, 1800 * 875);
  assert_int_equal(accrued, 1800 * 875);
  assert_int_equal(tw_ledger_spent(store, "ml", NULL, T0, T0 + TW_DAY_MS,
                                   &spent, &err),
                   TW_OK);
  assert_int_equal(spent, 0);
  /* 11:00:20, after the pass that closed 10:00-11:00: the hour is a row,
   * 20 s accrued */
  pass_at(T0 + 11 * HOUR + 10 * SEC);
  pass_at(T0 + 11 * HOUR + 20 * SEC);
  assert_int_equal(tw_ledger_spent_now(store, "ml", NULL, T0, T0 + TW_DAY_MS,
                                       T0 + 11 * HOUR + 20 * SEC, &spent,
                                       &accrued, &err),
                   TW_OK);
  assert_int_equal(spent, 3600 * 875 + 20 * 875);
  assert_int_equal(accrued, 20 * 875);
  /* grouped, the list cost and what of it is accrued */
  struct tw_ledger_group *g;
  size_t n;
  assert_int_equal(tw_ledger_sum_now(store, T0, T0 + TW_DAY_MS,
                                     T0 + 11 * HOUR + 20 * SEC, TW_GROUP_TENANT,
                                     NULL, &g, &n, &err),
                   TW_OK);
  assert_int_equal(n, 1);
  assert_int_equal(g[0].list_uusd, 3620 * 1000);
  assert_int_equal(g[0].accrued_list_uusd, 20 * 1000);
  assert_int_equal(g[0].rows, 1);
  free(g);
  /* a range splits what is accrued by time: [11:00:05, 11:00:15) */
  assert_int_equal(tw_ledger_spent_now(store, "ml", NULL,
                                       T0 + 11 * HOUR + 5 * SEC,
                                       T0 + 11 * HOUR + 15 * SEC,
                                       T0 + 11 * HOUR + 20 * SEC, &spent,
                                       &accrued, &err),
                   TW_OK);
  assert_int_equal(accrued, 10 * 875);

  /* across midnight: running from 23:30, at 00:15 before any pass closes
   * a period, 1800 s fall on the first day and 900 s on the next */
  int64_t b = start_attempt(o, "web", 1);
  clk.fake_ms = T0 + 23 * HOUR + 30 * MIN;
  set_running(b);
  pass_at(T0 + 23 * HOUR + 30 * MIN + 1 * SEC);
  assert_int_equal(tw_ledger_accrued(store, T0, T0 + 2 * TW_DAY_MS,
                                     T0 + 24 * HOUR + 15 * MIN,
                                     TW_GROUP_TENANT | TW_GROUP_DAY,
                                     &(struct tw_ledger_filter){.tenant = "web"},
                                     &g, &n, &err),
                   TW_OK);
  int64_t day1 = 0, day2 = 0;
  for (size_t i = 0; i < n; i++) {
    if (g[i].day == tw_ledger_day(T0))
      day1 += g[i].list_uusd;
    else if (g[i].day == tw_ledger_day(T0) + 1)
      day2 += g[i].list_uusd;
  }
  free(g);
  assert_int_equal(day1, 1800 * 1000);
  assert_int_equal(day2, 900 * 1000);
}

/* The README demo's scenario, reported exactly: finetune-a100's first
 * attempt on AWS spot p4d.24xlarge ($9.8304/h) is interrupted by EC2
 * after 4 minutes (nothing: its first instance-hour); its second, on
 * demand ($32.7726/h), is cancelled 0.2 s after AWS started it, before
 * the broker saw it running (EC2's 60 s minimum: 32,772,600 x 60 / 3600
 * = 546,210); batch-inference runs on g5.xlarge spot ($0.40/h) and has
 * run 25 minutes at the report's now, none of them closed (400,000 x
 * 1500 / 3600 = 166,666.7, rounded half up: 166,667 accrued).
 * Total 712,877 micro-USD, of which 166,667 accrued. */
static void the_demo_scenario_is_reported_exactly(void **state) {
  (void)state;
  registry = tw_adapters;
  meter = new_meter(NULL);
  struct tw_err err = {0};
  const struct tw_offer *spot =
      add_offer("aws-demo", "aws", TW_MARKET_SPOT, 9830400, 0, 0);
  const struct tw_offer *od =
      add_offer("aws-demo", "aws", TW_MARKET_ON_DEMAND, 32772600, 0, 0);
  const struct tw_offer *g5 =
      add_offer("aws-demo", "aws", TW_MARKET_SPOT, 400000, 0, 0);
  int64_t t = T0 + 9 * HOUR;
  clk.fake_ms = t;
  int64_t a1 = start_attempt(spot, "research", 1);
  set_running(a1);
  pass_at(t + 1 * SEC);
  clk.fake_ms = t + 4 * MIN;
  end_attempt(a1, "interrupted");
  pass_at(t + 4 * MIN + 1 * SEC);
  /* the second attempt: provisioning, cancelled right after AWS started
   * it */
  clk.fake_ms = t + 5 * MIN;
  int64_t a2 = start_attempt(od, "research", 1);
  pass_at(t + 5 * MIN + 1 * SEC);
  clk.fake_ms = t + 6 * MIN + 200;
  struct tw_attempt_close c = {.attempt_id = a2,
                               .end_reason = "cancelled",
                               .job_to = TW_JOB_NSTATES,
                               .ran_from_ms = t + 6 * MIN};
  assert_int_equal(tw_store_attempt_close(store, &c, &err), TW_OK);
  pass_at(t + 6 * MIN + 1 * SEC);
  /* the running job */
  clk.fake_ms = t + 10 * MIN;
  int64_t a3 = start_attempt(g5, "research", 1);
  set_running(a3);
  pass_at(t + 10 * MIN + 1 * SEC);
  int64_t now = t + 35 * MIN;
  pass_at(now - 1 * SEC);

  struct tw_report_req q = {.from_ms = T0,
                            .to_ms = T0 + TW_DAY_MS,
                            .group_mask = TW_GROUP_TENANT,
                            .now_ms = now,
                            .adapters = tw_adapters};
  struct tw_buf out;
  tw_buf_init(&out);
  const char *ctype;
  assert_int_equal(tw_report_render(store, &q, &out, &ctype, &err), TW_OK);
  json_t *j = json_loadb(out.data, out.len, 0, NULL);
  assert_non_null(j);
  json_t *total = json_object_get(j, "total");
  assert_int_equal(
      json_integer_value(json_object_get(total, "effective_cost_uusd")),
      0 + 546210 + 166667);
  assert_int_equal(
      json_integer_value(json_object_get(total, "accrued_effective_cost_uusd")),
      166667);
  json_decref(j);
  tw_buf_release(&out);
  /* the two ended attempts are rows: $0 and the 60 s minimum */
  read_rows();
  assert_int_equal(n_got, 2);
  assert_int_equal(got[0].attempt_id, a1);
  assert_int_equal(got[0].list_uusd, 0);
  assert_int_equal(got[1].attempt_id, a2);
  assert_int_equal(got[1].quantity, 60);
  assert_int_equal(got[1].list_uusd, 546210);

  /* by job: each job's name and who submitted it */
  char job[32];
  snprintf(job, sizeof job, "%s", got[1].job_id);
  struct tw_store_owner own = {.job_id = job,
                               .tenant = "research",
                               .project = "vision",
                               .principal = "alice"};
  assert_int_equal(tw_store_job_owner_put(store, &own, NULL, now, &err), TW_OK);
  q.group_mask = TW_GROUP_JOB;
  tw_buf_init(&out);
  assert_int_equal(tw_report_render(store, &q, &out, &ctype, &err), TW_OK);
  j = json_loadb(out.data, out.len, 0, NULL);
  assert_non_null(j);
  json_t *items = json_object_get(j, "items");
  bool seen = false;
  for (size_t i = 0; i < json_array_size(items); i++) {
    json_t *it = json_array_get(items, i);
    if (strcmp(json_string_value(json_object_get(it, "job")), job))
      continue;
    seen = true;
    assert_string_equal(json_string_value(json_object_get(it, "job_name")),
                        "train");
    assert_string_equal(json_string_value(json_object_get(it, "owner")),
                        "alice");
    assert_int_equal(
        json_integer_value(json_object_get(it, "effective_cost_uusd")),
        546210);
  }
  assert_true(seen);
  json_decref(j);
  tw_buf_release(&out);
}

/* A private cluster at its chargeback rates: 8 vCPUs x $0.02 + 2 GPUs x
 * $1.10 + 32 GiB x $0.003 = $2.456 an hour; 30 min = $1.228. */
static void private_cluster_at_chargeback_rate(void **state) {
  (void)state;
  registry = tw_adapters;
  meter = new_meter("providers:\n"
                    "  lab: {chargeback: {vcpu_hour_usd: \"0.02\", "
                    "gpu_hour_usd: \"1.10\", memory_gib_hour_usd: "
                    "\"0.003\"}}\n");
  const struct tw_offer *o =
      add_offer("lab", "slurm", TW_MARKET_ON_DEMAND, 0, 1, 0);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 2 * HOUR;
  set_running(a);
  pass_at(T0 + 2 * HOUR + 1 * SEC);
  clk.fake_ms = T0 + 2 * HOUR + 30 * MIN;
  end_attempt(a, "completed");
  pass_at(T0 + 2 * HOUR + 30 * MIN + 1 * SEC);
  read_rows();
  int64_t per_hour = 8 * 20000 + 2 * 1100000 + 32 * 3000;
  assert_int_equal(per_hour, 2456000);
  assert_int_equal(got[n_got - 1].unit_price_uusd, per_hour);
  assert_int_equal(total_list(), per_hour / 2);
}

static void
hourly_units_charged_ahead_are_credited_when_spot_is_reclaimed(void **state) {
  (void)state;
  meter = new_meter(NULL);
  const struct tw_offer *o =
      add_offer("azure-main", "azure", TW_MARKET_SPOT, 3600000, 3600, 0);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 10 * HOUR + 59 * MIN;
  set_running(a);
  pass_at(T0 + 10 * HOUR + 59 * MIN + 30 * SEC);
  pass_at(T0 + 11 * HOUR + 10 * SEC);
  pass_at(T0 + 11 * HOUR + 20 * SEC); /* closes the 10:00 period */
  read_rows();
  assert_int_equal(n_got, 1);
  assert_int_equal(got[0].quantity, 3600); /* the hour started is charged */
  assert_int_equal(got[0].end_ms, T0 + 11 * HOUR);
  int64_t first = got[0].seq;
  clk.fake_ms = T0 + 11 * HOUR + 30 * SEC;
  end_attempt(a, "interrupted");
  pass_at(T0 + 11 * HOUR + 31 * SEC);
  read_rows();
  assert_int_equal(n_got, 3);
  assert_int_equal(got[1].category, TW_CHARGE_USAGE);
  assert_int_equal(got[1].quantity, 0);
  assert_int_equal(got[1].usage_ms, 30 * SEC);
  assert_int_equal(got[2].category, TW_CHARGE_ADJUSTMENT);
  assert_true(got[2].correction);
  assert_int_equal(got[2].corrects_seq, first);
  assert_int_equal(got[2].quantity, -(3600 - 90));
  /* 90 s used: 60 before 11:00 and 30 after */
  assert_int_equal(total_quantity(), 90);
  assert_int_equal(total_list(), 90000);
}

static void spot_price_in_force_per_charge_period(void **state) {
  (void)state;
  meter = new_meter(NULL);
  struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_SPOT, 1000000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1); /* launched at $1.00/h */
  clk.fake_ms = T0 + 10 * HOUR + 30 * MIN;
  set_running(a);
  pass_at(T0 + 10 * HOUR + 31 * MIN);
  o->price_uusd_per_hour = 1300000; /* the market moved: $1.30/h */
  pass_at(T0 + 10 * HOUR + 59 * MIN);
  pass_at(T0 + 11 * HOUR + 1 * SEC);
  pass_at(T0 + 11 * HOUR + 2 * SEC); /* closes 10:30-11:00, a tick late */
  o->price_uusd_per_hour = 900000;   /* moved again within the period */
  pass_at(T0 + 11 * HOUR + 20 * MIN);
  clk.fake_ms = T0 + 11 * HOUR + 30 * MIN;
  end_attempt(a, "completed");
  pass_at(T0 + 11 * HOUR + 30 * MIN + 1 * SEC);
  read_rows();
  assert_int_equal(n_got, 2);
  assert_int_equal(got[0].unit_price_uusd, 1000000); /* the launch price */
  assert_int_equal(got[0].list_uusd, 500000);
  /* the price seen when the second period began holds for all of it */
  assert_int_equal(got[1].unit_price_uusd, 1300000);
  assert_int_equal(got[1].list_uusd, 650000);
}

static void nodes_discounts_and_chargeback(void **state) {
  (void)state;
  meter = new_meter(
      "providers:\n"
      "  aws: {discount_pct: \"12.5\"}\n"
      "  slurm-lab:\n"
      "    chargeback: {vcpu_hour_usd: \"0.02\", gpu_hour_usd: \"1.10\",\n"
      "                 memory_gib_hour_usd: \"0.003\"}\n");
  const struct tw_offer *od =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  const struct tw_offer *lab =
      add_offer("slurm-lab", "slurm", TW_MARKET_ON_DEMAND, 0, 1, 0);
  int64_t a = start_attempt(od, "ml", 3);
  int64_t b = start_attempt(lab, "web", 1);
  clk.fake_ms = T0 + 1 * HOUR;
  set_running(a);
  set_running(b);
  pass_at(T0 + 1 * HOUR + 1 * SEC);
  clk.fake_ms = T0 + 2 * HOUR;
  end_attempt(a, "completed");
  end_attempt(b, "completed");
  pass_at(T0 + 2 * HOUR + 1 * SEC);
  read_rows();
  assert_int_equal(n_got, 2);
  const struct tw_ledger_row *ra = got[0].attempt_id == a ? &got[0] : &got[1];
  const struct tw_ledger_row *rb = got[0].attempt_id == a ? &got[1] : &got[0];
  assert_int_equal(ra->nodes, 3);
  assert_int_equal(ra->quantity, 3 * 3600);
  assert_int_equal(ra->list_uusd, 3 * 3600000);
  assert_int_equal(ra->effective_uusd, 3 * 3600000 - 3 * 450000);
  /* 8 vCPU x 0.02 + 2 GPU x 1.10 + 32 GiB x 0.003 = 2.456 per hour */
  assert_int_equal(rb->unit_price_uusd, 2456000);
  assert_int_equal(rb->list_uusd, 2456000);
  assert_int_equal(rb->effective_uusd, 2456000);
  assert_string_equal(rb->provider, "slurm");
}

static void a_restart_neither_skips_nor_repeats_a_period(void **state) {
  (void)state;
  meter = new_meter(NULL);
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1);
  clk.fake_ms = T0 + 1 * HOUR + 30 * MIN;
  set_running(a);
  pass_at(T0 + 1 * HOUR + 31 * MIN);
  pass_at(T0 + 2 * HOUR + 1 * SEC);
  pass_at(T0 + 2 * HOUR + 2 * SEC); /* 1:30-2:00 charged */
  read_rows();
  assert_int_equal(n_got, 1);
  tw_meter_free(meter); /* the daemon stops */
  meter = new_meter(NULL);
  struct tw_meter_stats st;
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 1); /* progress came back from the store */
  pass_at(T0 + 3 * HOUR + 5 * SEC);
  pass_at(T0 + 3 * HOUR + 6 * SEC); /* 2:00-3:00 charged once */
  clk.fake_ms = T0 + 3 * HOUR + 10 * MIN;
  end_attempt(a, "completed");
  pass_at(T0 + 3 * HOUR + 11 * MIN);
  read_rows();
  assert_int_equal(n_got, 3);
  assert_int_equal(got[1].start_ms, T0 + 2 * HOUR);
  assert_int_equal(got[1].end_ms, T0 + 3 * HOUR);
  assert_int_equal(total_quantity(), 100 * 60);
  assert_int_equal(total_list(), 6000000);
}

static void attempt_that_never_ran_costs_nothing(void **state) {
  (void)state;
  meter = new_meter(NULL);
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1);
  pass_at(T0 + 1 * SEC);
  clk.fake_ms = T0 + 2 * MIN;
  end_attempt(a, "cancelled");
  pass_at(T0 + 3 * MIN);
  read_rows();
  assert_int_equal(n_got, 0);
  struct tw_meter_stats st;
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 0);
}

/* The meter's own pass (tw_meter_tick) keeps the live attempts from the
 * store's changes, which tell only this process's writes: what another
 * replica writes on the same database (a former leader's last steps) is
 * read at the next whole read, at most 10 s later by the meter's clock,
 * and charged then from the times the store recorded, to the same
 * amounts. */
static void another_replicas_writes_are_metered_at_the_whole_read(
    void **state) {
  (void)state;
  bool was = by_tick;
  by_tick = true;
  meter = new_meter(NULL);
  by_tick = was;
  const struct tw_offer *o =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  const struct tw_offer *spot =
      add_offer("aws-main", "aws", TW_MARKET_SPOT, 3600000, 1, 60);
  struct tw_err err = {0};
  struct tw_store *other = NULL; /* the other replica, on the same data */
  struct tw_store_opts so = {.path = path, .clock = &clk, .sync_full = false};
  tw_test_pg_opts(&pg, &so);
  assert_int_equal(tw_store_open(&so, &other, &err), TW_OK);
  /* a: started and ended here, seen at the next tick */
  int64_t a = start_attempt(o, "ml", 1);
  /* b: started here, ended by the other replica */
  int64_t b = start_attempt(spot, "ml", 1);
  /* c: set running and ended by the other replica */
  int64_t c = start_attempt(o, "ml", 2);
  struct tw_meter_stats st;
  clk.fake_ms = T0 + 10 * MIN;
  set_running(a);
  set_running(b);
  tw_meter_tick(meter); /* the first tick reads them whole */
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 2);
  clk.fake_ms = T0 + 10 * MIN + 1 * SEC;
  assert_int_equal(tw_store_attempt_running(other, c, &err), TW_OK);
  clk.fake_ms = T0 + 10 * MIN + 2 * SEC;
  tw_meter_tick(meter);
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 2); /* c not told: not in this feed */
  clk.fake_ms = T0 + 10 * MIN + 11 * SEC; /* 10 s after the whole read */
  tw_meter_tick(meter);
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 3);
  clk.fake_ms = T0 + 10 * MIN + 15 * SEC;
  end_attempt(a, "completed");
  clk.fake_ms = T0 + 10 * MIN + 16 * SEC;
  struct tw_attempt_close cb = {
      .attempt_id = b, .end_reason = "interrupted", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(other, &cb, &err), TW_OK);
  clk.fake_ms = T0 + 10 * MIN + 17 * SEC;
  tw_meter_tick(meter); /* a's end told; b's not */
  read_rows();
  assert_int_equal(n_got, 1);
  assert_int_equal(got[0].attempt_id, a);
  assert_int_equal(got[0].quantity, 60); /* 15 s, the minimum 60 */
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 2);
  clk.fake_ms = T0 + 10 * MIN + 20 * SEC;
  struct tw_attempt_close cc = {
      .attempt_id = c, .end_reason = "completed", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(other, &cc, &err), TW_OK);
  clk.fake_ms = T0 + 10 * MIN + 21 * SEC;
  tw_meter_tick(meter); /* whole again: b and c ended */
  read_rows();
  assert_int_equal(n_got, 3);
  for (size_t i = 0; i < n_got; i++) {
    if (got[i].attempt_id == b) { /* reclaimed spot: to the second */
      assert_int_equal(got[i].quantity, 16);
      assert_int_equal(got[i].end_ms, T0 + 10 * MIN + 16 * SEC);
    } else if (got[i].attempt_id == c) { /* 19 s, the minimum, 2 nodes */
      assert_int_equal(got[i].quantity, 120);
      assert_int_equal(got[i].usage_ms, 19 * SEC);
      assert_int_equal(got[i].start_ms, T0 + 10 * MIN + 1 * SEC);
      assert_int_equal(got[i].end_ms, T0 + 10 * MIN + 20 * SEC);
      assert_int_equal(got[i].list_uusd, 120000);
    } else {
      assert_int_equal(got[i].attempt_id, a);
    }
  }
  tw_meter_stats(meter, &st);
  assert_int_equal(st.open, 0);
  assert_int_equal(st.attempts, 3);
  tw_store_close(other);
}

static void egress_is_charged_per_gigabyte(void **state) {
  (void)state;
  meter = new_meter(
      "providers:\n  aws: {egress_usd_per_gb: \"0.09\", discount_pct: 10}\n");
  struct tw_err err = {0};
  struct tw_meter_egress e = {.tenant = "ml",
                              .project = "vision",
                              .job_id = "j-1",
                              .provider = "aws",
                              .account = "aws-main",
                              .region = "us-east-1",
                              .dest_region = "eu-west-1",
                              .bytes = 5000000000LL,
                              .at_ms = T0 + HOUR};
  struct tw_ledger_row r;
  assert_int_equal(tw_meter_egress(meter, &e, &r, &err), TW_OK);
  assert_int_equal(r.list_uusd, 450000);
  assert_int_equal(r.effective_uusd, 405000);
  assert_int_equal(r.service, TW_SERVICE_NETWORK);
  e.price_uusd_per_gb = 20000; /* a price given by the caller wins */
  e.bytes = 1500000000LL;
  assert_int_equal(tw_meter_egress(meter, &e, &r, &err), TW_OK);
  assert_int_equal(r.list_uusd, 30000);
  e.tenant = "";
  assert_int_equal(tw_meter_egress(meter, &e, &r, &err), TW_E_INVALID);
}

static void billing_section_is_validated(void **state) {
  (void)state;
  static const struct {
    const char *yaml, *want;
  } bad[] = {
      {"charge_period_s: 7000\n", "billing.charge_period_s"},
      {"providers:\n  aws: {discount_pct: \"101\"}\n",
       "billing.providers.aws.discount_pct"},
      {"providers:\n  aws: {discount_pct: \"1.234\"}\n", "discount_pct"},
      {"providers:\n  azure: {min_charge_s: -1}\n",
       "billing.providers.azure.min_charge_s: expected seconds"},
      {"providers:\n  azure: {granularity_s: 0}\n",
       "billing.providers.azure.granularity_s: expected seconds from 1"},
      {"providers:\n  aws: {discont_pct: 5}\n",
       "did you mean \"discount_pct\""},
      {"providers:\n  aws: {egress_usd_per_gb: cheap}\n", "egress_usd_per_gb"},
      {"budgets:\n  - {tenant: ml}\n", "limit_usd is required"},
      {"budgets:\n  - {project: x, limit_usd: 5}\n", "needs its tenant"},
      {"budgets:\n  - {tenant: ml, limit_usd: 5}\n  - {tenant: ml, limit_usd: "
       "6}\n",
       "the same tenant"},
      {"budget: []\n", "did you mean \"budgets\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct tw_err err = {0};
    struct tw_node *n = NULL;
    assert_int_equal(
        tw_node_parse_yaml(bad[i].yaml, strlen(bad[i].yaml), &n, &err), TW_OK);
    struct tw_meter_cfg cfg;
    assert_int_equal(tw_meter_cfg_parse(n, &cfg, &err), TW_E_INVALID);
    if (!strstr(err.msg, bad[i].want))
      fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, bad[i].want);
    tw_meter_cfg_release(&cfg);
    tw_node_free(n);
  }
  const char *good =
      "charge_period_s: 900\n"
      "providers:\n  aws: {discount_pct: 7.5, discount_spot: true}\n"
      "budgets:\n  - {tenant: ml, limit_usd: \"5000\"}\n";
  struct tw_err err = {0};
  struct tw_node *n = NULL;
  assert_int_equal(tw_node_parse_yaml(good, strlen(good), &n, &err), TW_OK);
  struct tw_meter_cfg cfg;
  assert_int_equal(tw_meter_cfg_parse(n, &cfg, &err), TW_OK);
  assert_int_equal(cfg.charge_period_s, 900);
  assert_int_equal(cfg.n_rates, 1);
  assert_int_equal(cfg.rates[0].discount_bp, 750);
  assert_true(cfg.rates[0].discount_spot);
  assert_int_equal(cfg.budgets[0].limit_uusd, 5000000000LL);
  assert_non_null(tw_meter_cfg_rate(&cfg, "aws-main", "aws"));
  assert_null(tw_meter_cfg_rate(&cfg, "az", "azure"));
  tw_meter_cfg_release(&cfg);
  tw_node_free(n);
}

/* Alibaba sells in CNY: each row keeps the amount as billed in CNY, from
 * the offer's own price (10 CNY an hour), not converted back from USD,
 * so a later rate restates nothing; a credit keeps its CNY too.  By
 * hand: 3000 s = 8.333333 CNY (8333333.3), 1000 s = 2.777778 CNY
 * (2777777.8); in USD at 0.1393 (1.393 USD an hour): 1160833 and 386944
 * micro-USD. */
static void alibaba_rows_keep_the_cny_amount_as_billed(void **state) {
  (void)state;
  meter = new_meter(NULL);
  struct tw_offer *o =
      add_offer("ali", "alibaba", TW_MARKET_ON_DEMAND, 1393000, 1, 0);
  snprintf(o->price_currency, sizeof o->price_currency, "CNY");
  o->price_micro_per_hour = 10000000;
  o->fx_nusd_per_unit = 139300000;
  struct tw_offer *usd =
      add_offer("aws-main", "aws", TW_MARKET_ON_DEMAND, 3600000, 1, 60);
  int64_t a = start_attempt(o, "ml", 1);
  int64_t b = start_attempt(usd, "ml", 1);
  clk.fake_ms = T0 + 10 * MIN;
  set_running(a);
  set_running(b);
  pass_at(T0 + 10 * MIN + SEC);
  /* the rate moves before the next period: its CNY price is what it was,
   * its USD price follows the new rate */
  o->price_uusd_per_hour = 1500000;
  o->fx_nusd_per_unit = 150000000;
  pass_at(T0 + HOUR + SEC);
  clk.fake_ms = T0 + HOUR + 1000 * SEC;
  end_attempt(a, "completed");
  end_attempt(b, "completed");
  pass_at(T0 + HOUR + 1001 * SEC);
  read_rows();
  int64_t cny = 0, seen = 0;
  for (size_t i = 0; i < n_got; i++) {
    if (!strcmp(got[i].provider, "aws")) {
      assert_string_equal(got[i].source_currency, "");
      assert_int_equal(got[i].source_effective_micro, 0);
      continue;
    }
    assert_string_equal(got[i].source_currency, "CNY");
    if (got[i].start_ms == T0 + 10 * MIN) {
      assert_int_equal(got[i].quantity, 3000);
      assert_int_equal(got[i].effective_uusd, 1160833);
      assert_int_equal(got[i].source_effective_micro, 8333333);
    } else {
      assert_int_equal(got[i].start_ms, T0 + HOUR);
      assert_int_equal(got[i].quantity, 1000);
      assert_int_equal(got[i].effective_uusd, 416667); /* 1.5 USD an hour */
      assert_int_equal(got[i].source_effective_micro, 2777778);
    }
    cny += got[i].source_effective_micro;
    seen++;
  }
  assert_int_equal(seen, 2);
  assert_int_equal(cny, 11111111);

  /* a correction keeps the rate of the row it corrects: half of the
   * first row back is half of its CNY */
  struct tw_ledger_row first = {0};
  for (size_t i = 0; i < n_got; i++)
    if (got[i].start_ms == T0 + 10 * MIN && !strcmp(got[i].provider, "alibaba"))
      first = got[i];
  struct tw_ledger_row adj;
  struct tw_err err = {0};
  assert_int_equal(tw_ledger_adjust(store, first.seq, -580416, -580416,
                                    "half back", T0 + 2 * HOUR, &adj, &err),
                   TW_OK);
  assert_string_equal(adj.source_currency, "CNY");
  /* -580416 x 8333333 / 1160833 = -4166662.91: -4166663 */
  assert_int_equal(adj.source_effective_micro, -4166663);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    by_tick |= !strcmp(argv[i], "--by-tick");
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(billing_rules_table),
      cmocka_unit_test_setup_teardown(alibaba_rows_keep_the_cny_amount_as_billed,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          aws_59_second_attempt_is_charged_60_seconds, setup, teardown),
      cmocka_unit_test_setup_teardown(
          reclaimed_spot_attempt_is_charged_to_the_second, setup, teardown),
      cmocka_unit_test_setup_teardown(
          hourly_units_charged_ahead_are_credited_when_spot_is_reclaimed, setup,
          teardown),
      cmocka_unit_test_setup_teardown(published_rules_per_cloud, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(charged_from_the_providers_times, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(running_attempts_accrue_up_to_now, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_demo_scenario_is_reported_exactly,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(private_cluster_at_chargeback_rate,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(spot_price_in_force_per_charge_period,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(nodes_discounts_and_chargeback, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          a_restart_neither_skips_nor_repeats_a_period, setup, teardown),
      cmocka_unit_test_setup_teardown(attempt_that_never_ran_costs_nothing,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          another_replicas_writes_are_metered_at_the_whole_read, setup,
          teardown),
      cmocka_unit_test_setup_teardown(egress_is_charged_per_gigabyte, setup,
                                      teardown),
      cmocka_unit_test(billing_section_is_validated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
