/* Quotas at placement, over the real scheduler, the in-process fake
 * provider and a fake clock.
 *
 *   cohort_borrowing_and_reclaim: two tenants of one cohort, 8 vCPUs each,
 *     8 more borrowable.  vision runs two 8-vCPU jobs (the second on ml's
 *     idle quota); when ml submits, vision's newest job is preempted (its
 *     instance terminated, back to pending, audited) and ml's runs; vision's
 *     job waits, noted once, and runs again when capacity frees up.
 *   reservations_end_with_their_attempts: a finished job's share returns;
 *   concurrent_jobs_limit_holds_the_next_job;
 *   spot_share_zero_places_on_demand: the cheaper spot offer is skipped;
 *   quota_set_after_the_pass_began_is_seen: the quotas are read again
 *     after the queue, so a pass that began before a quota change and a
 *     submission judges the job by the new quota;
 *   the reservations kept between phases: released by ends and cancels
 *     without a whole read, another replica's writes seen after the
 *     re-read, and many of them agreeing with a whole read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/tenancy/audit.h"
#include "broker/sched/sched.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_tenancy.h"
#include "broker/tenancy/tenancy.h"
#include "tests/fakes/fake_provider.h"
#include "tests/unit/agent_play.h"
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
/* tradewind-agent played on the instances: jobs end by its exit report */
static struct tw_play *play;

static void add_offer(const char *type, enum tw_market m, int64_t price,
                      int vcpus) {
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.provider, sizeof o.provider, "fake");
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.region, sizeof o.region, "r1");
  snprintf(o.zone, sizeof o.zone, "r1a");
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = TW_ARCH_X86_64;
  o.vcpus = vcpus;
  o.memory_mib = vcpus * 4096;
  o.market = m;
  o.price_uusd_per_hour = price;
  o.billing_granularity_s = 1;
  tw_offer_make_id(&o);
  tw_fake_add_offer(fake, &o);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-quota-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/q.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  struct tw_node *cfg = tw_play_provider_cfg();
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err) ||
      tw_provider_new_ops(&tw_provider_fake, "fake-a", cfg, &clk, &prov, &err))
    return -1;
  tw_node_free(cfg);
  fake = tw_fake_of(prov);
  play = tw_play_new(store, &clk, prov);
  if (!play)
    return -1;
  add_offer("cpu.8", TW_MARKET_ON_DEMAND, 400000, 8);
  add_offer("cpu.8s", TW_MARKET_SPOT, 120000, 8);
  struct tw_tenancy_opts to = {
      .store = store, .clock = &clk, .providers = &prov, .n_providers = 1};
  if (tw_tenancy_open(&to, &ten, &err))
    return -1;
  struct tw_sched_opts o = {.store = store,
                            .clock = &clk,
                            .providers = &prov,
                            .n_providers = 1,
                            .tenancy = ten,
                            .agent = tw_play_agent(play)};
  return tw_sched_new(&o, &sched, &err) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  tw_sched_free(sched);
  tw_play_free(play);
  play = NULL;
  tw_tenancy_free(ten);
  tw_provider_free(prov);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  tw_test_store_remove(path, dir);
  return 0;
}

static void tenant(const char *name, const char *cohort, int64_t vcpus,
                   int64_t borrow, int64_t jobs, int spot_pct) {
  assert_int_equal(tw_tenancy_tenant_create(ten, name, NULL), TW_OK);
  struct tw_quota q, out;
  tw_quota_init(&q);
  snprintf(q.cohort, sizeof q.cohort, "%s", cohort);
  q.vcpus = (struct tw_quota_limit){vcpus, borrow};
  q.jobs = (struct tw_quota_limit){jobs, 0};
  q.spot_share_pct = spot_pct;
  assert_int_equal(tw_tenancy_quota_set(ten, name, &q, 0, &out, NULL), TW_OK);
}

static void submit(const char *yaml, char id[TW_JOB_ID_LEN + 1]) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  if (tw_spec_parse(yaml, strlen(yaml), false, &spec, &err))
    fail_msg("spec: %s", err.msg);
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
  tw_clock_advance(&clk, 1000); /* distinct submission and start times */
}

static struct tw_job_rec get(const char *id) {
  struct tw_job_rec j;
  assert_int_equal(tw_store_job_get(store, id, &j, NULL), TW_OK);
  return j;
}

static enum tw_job_state state_of(const char *id) {
  struct tw_job_rec j = get(id);
  enum tw_job_state s = j.state;
  tw_job_rec_release(&j);
  return s;
}

static void ticks(int n) {
  for (int i = 0; i < n; i++) {
    tw_play_step(play);
    tw_sched_tick(sched);
    tw_clock_advance(&clk, 1000);
  }
}

/* How many events of job id carry reason text. */
static int events_with(const char *id, const char *text) {
  struct tw_job_event *ev;
  size_t n;
  int hits = 0;
  assert_int_equal(tw_store_job_events(store, id, &ev, &n, NULL), TW_OK);
  for (size_t i = 0; i < n; i++) {
    hits += strstr(ev[i].reason, text) != NULL;
    free(ev[i].reason);
  }
  free(ev);
  return hits;
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

static void cohort_borrowing_and_reclaim(void **state) {
  (void)state;
  tenant("ml", "research", 8, 8, -1, 100);
  tenant("vision", "research", 8, 8, -1, 100);
  char v1[TW_JOB_ID_LEN + 1], v2[TW_JOB_ID_LEN + 1], m1[TW_JOB_ID_LEN + 1];
  const char *vjob =
      "name: v\ntenant: vision\nduration: 2h\nresources: {cpus: 8, "
      "market: on-demand}\n";
  submit(vjob, v1);
  ticks(2);
  assert_int_equal(state_of(v1), TW_JOB_RUNNING);
  /* the second goes above vision's 8 on ml's idle quota */
  submit(vjob, v2);
  ticks(2);
  assert_int_equal(state_of(v2), TW_JOB_RUNNING);
  assert_int_equal(tw_fake_instances_created(fake), 2);
  /* ml wants its own quota back */
  submit("name: m\ntenant: ml\nduration: 1h\nresources: {cpus: 8, market: "
         "on-demand}\n",
         m1);
  ticks(1);
  enum tw_job_state ms = state_of(m1);
  assert_true(ms == TW_JOB_PROVISIONING || ms == TW_JOB_RUNNING);
  assert_int_equal(state_of(v1), TW_JOB_RUNNING);
  assert_int_equal(state_of(v2), TW_JOB_PENDING); /* the newest borrower */
  struct tw_attempt_rec *a;
  size_t n;
  assert_int_equal(tw_store_attempts_of(store, v2, &a, &n, NULL), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(a[0].end_reason, "preempted");
  struct tw_instance inst;
  assert_int_equal(tw_fake_get(fake, a[0].instance_id, &inst), TW_OK);
  assert_int_equal(inst.state, TW_INST_TERMINATED);
  free(a);
  assert_int_equal(
      events_with(v2, "preempted: tenant ml reclaims its vcpus quota"), 1);
  assert_int_equal(audit_count("quota.reclaim"), 1);
  /* vision's job waits, said once however many passes go by */
  ticks(5);
  assert_int_equal(state_of(v2), TW_JOB_PENDING);
  assert_int_equal(
      events_with(v2, "waiting for quota: quota vcpus of tenant vision"), 1);
  assert_int_equal(audit_count("quota.hold"), 1);
  /* ml's hour ends; its share goes back to the cohort, vision borrows again */
  tw_clock_advance(&clk, 3600 * 1000);
  ticks(3);
  assert_int_equal(state_of(m1), TW_JOB_SUCCEEDED);
  enum tw_job_state vs = state_of(v2);
  assert_true(vs == TW_JOB_PROVISIONING || vs == TW_JOB_RUNNING);
}

static void reservations_end_with_their_attempts(void **state) {
  (void)state;
  tenant("ml", "", 8, 0, -1, 100);
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nduration: 10m\nresources: {cpus: 8, market: "
         "on-demand}\n",
         a);
  submit("name: b\ntenant: ml\nduration: 10m\nresources: {cpus: 8, market: "
         "on-demand}\n",
         b);
  ticks(3);
  assert_int_equal(state_of(a), TW_JOB_RUNNING);
  assert_int_equal(state_of(b), TW_JOB_PENDING);
  assert_int_equal(
      events_with(b, "quota vcpus of tenant ml: using 8, job needs 8, limit 8"),
      1);
  /* cancelling a gives its share back at the next pass */
  struct tw_job_transition t = {
      .id = a, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);
  ticks(3);
  assert_int_equal(state_of(b), TW_JOB_RUNNING);
}

static void concurrent_jobs_limit_holds_the_next_job(void **state) {
  (void)state;
  tenant("ml", "", -1, 0, 1, 100);
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nduration: 10m\nresources: {cpus: 8}\n", a);
  submit("name: b\ntenant: ml\nduration: 10m\nresources: {cpus: 8}\n", b);
  ticks(2);
  assert_int_equal(state_of(b), TW_JOB_PENDING);
  assert_int_equal(
      events_with(b, "quota jobs of tenant ml: using 1, job needs 1, limit 1"),
      1);
  tw_clock_advance(&clk, 10 * 60 * 1000);
  ticks(3);
  assert_int_equal(state_of(a), TW_JOB_SUCCEEDED);
  assert_int_equal(state_of(b), TW_JOB_RUNNING);
}

static void spot_share_zero_places_on_demand(void **state) {
  (void)state;
  tenant("ml", "", 64, 0, -1, 0);
  tenant("free", "", 64, 0, -1, 100);
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nresources: {cpus: 8}\n", a);
  submit("name: b\ntenant: free\nresources: {cpus: 8}\n", b);
  ticks(1);
  struct tw_job_rec ja = get(a), jb = get(b);
  assert_non_null(ja.placement_json);
  assert_non_null(strstr(ja.placement_json, "\"market\":\"on-demand\""));
  assert_non_null(strstr(jb.placement_json, "\"market\":\"spot\""));
  tw_job_rec_release(&ja);
  tw_job_rec_release(&jb);
}

/* More spot offers cheaper than the on-demand one than a plan keeps
 * (candidates: 16): the spot share is checked in the search, so the job
 * still goes on demand at once. */
static void spot_share_zero_goes_on_demand_past_many_spot_offers(void **state) {
  (void)state;
  for (int i = 0; i < 20; i++) {
    char t[32];
    snprintf(t, sizeof t, "cpu.8.s%02d", i);
    add_offer(t, TW_MARKET_SPOT, 100000 + i, 8);
  }
  tenant("ml", "", 64, 0, -1, 0);
  char a[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nresources: {cpus: 8}\n", a);
  ticks(1);
  struct tw_job_rec ja = get(a);
  assert_int_equal(ja.state, TW_JOB_PROVISIONING);
  assert_non_null(ja.placement_json);
  assert_non_null(strstr(ja.placement_json, "\"market\":\"on-demand\""));
  tw_job_rec_release(&ja);
}

/* A quota set after a pass began but before a job's submission is the
 * one that job is placed under: the scheduler reads the quotas again
 * after its queue (tw_tenancy_quotas_reload), so the view of
 * place_begin, older than both, is not what judges the job. */
static void quota_set_after_the_pass_began_is_seen(void **state) {
  (void)state;
  tenant("ml", "", 64, 0, -1, 100);
  char a[TW_JOB_ID_LEN + 1];
  tw_tenancy_place_begin(ten); /* the pass's first view: share 100 % */
  struct tw_quota q, out;
  tw_quota_init(&q);
  q.vcpus = (struct tw_quota_limit){64, 0};
  q.spot_share_pct = 0;
  assert_int_equal(tw_tenancy_quota_set(ten, "ml", &q, 0, &out, NULL), TW_OK);
  submit("name: a\ntenant: ml\nresources: {cpus: 8}\n", a);
  struct tw_job_rec ja = get(a);
  assert_true(tw_tenancy_spot_vcpus_left(ten, &ja) > 8); /* stale view */
  assert_true(tw_tenancy_quotas_reload(ten));
  assert_int_equal(tw_tenancy_spot_vcpus_left(ten, &ja), 0);
  tw_job_rec_release(&ja);
  /* and the pass itself: the job goes on demand at its first placement */
  ticks(1);
  ja = get(a);
  assert_non_null(ja.placement_json);
  assert_non_null(strstr(ja.placement_json, "\"market\":\"on-demand\""));
  tw_job_rec_release(&ja);
}

/* ---- the reservations kept between placement phases ---------------------
 *
 * A phase brings the reservations in memory up to date from the store's
 * change feed rather than reading them all; these cases hold it to what a
 * whole read would find.  The tenant's spot share shows what it holds:
 * tw_tenancy_spot_vcpus_left is its spot limit less the spot vCPUs its
 * reservations hold. */

/* Spot vCPUs tenant ml may still take, as seen by a job holding none. */
static int64_t ml_spot_left(void) {
  struct tw_job_rec j = {.tenant = "ml"};
  snprintf(j.id, sizeof j.id, "j-nobody");
  return tw_tenancy_spot_vcpus_left(ten, &j);
}

static size_t stored_reservations(void) {
  struct tw_store_resv *rows = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_reservations(store, &rows, &n, NULL), TW_OK);
  free(rows);
  return n;
}

/* Ticks of 100 ms until job id is in state want (at most n). */
static void quick_ticks_until(const char *id, enum tw_job_state want, int n) {
  for (int i = 0; i < n && state_of(id) != want; i++) {
    tw_play_step(play);
    tw_sched_tick(sched);
    tw_clock_advance(&clk, 100);
  }
  assert_int_equal(state_of(id), want);
}

/* Jobs that end and a job cancelled give their shares back at the next
 * phase, without a whole read in between (the fake clock stays within
 * one re-read period of the first pass), and the view kept is the one a
 * whole read finds. */
static void reservations_kept_are_released_by_ends_and_cancels(void **state) {
  (void)state;
  tenant("ml", "", 64, 0, -1, 50); /* 32 spot vCPUs */
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1], c[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nduration: 2s\nresources: {cpus: 8, market: "
         "spot}\n",
         a);
  submit("name: b\ntenant: ml\nduration: 1h\nresources: {cpus: 8, market: "
         "spot}\n",
         b);
  submit("name: c\ntenant: ml\nduration: 1h\nresources: {cpus: 8, market: "
         "spot}\n",
         c);
  int64_t t0 = tw_clock_now_ms(&clk);
  quick_ticks_until(b, TW_JOB_RUNNING, 20);
  quick_ticks_until(c, TW_JOB_RUNNING, 20);
  if (state_of(a) != TW_JOB_SUCCEEDED)
    assert_int_equal(ml_spot_left(), 32 - 3 * 8);
  /* a's work done: its share back */
  quick_ticks_until(a, TW_JOB_SUCCEEDED, 40);
  tw_play_step(play);
  tw_sched_tick(sched);
  assert_int_equal(ml_spot_left(), 32 - 2 * 8);
  assert_int_equal(stored_reservations(), 2);
  /* b cancelled: its share back once its attempt ended */
  struct tw_job_transition t = {
      .id = b, .to = TW_JOB_CANCELLED, .reason = "user"};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, NULL), TW_OK);
  for (int i = 0; i < 10 && ml_spot_left() != 32 - 8; i++) {
    tw_play_step(play);
    tw_sched_tick(sched);
    tw_clock_advance(&clk, 100);
  }
  assert_int_equal(ml_spot_left(), 32 - 8);
  assert_int_equal(stored_reservations(), 1);
  /* all of it within one re-read period: the view kept did this */
  assert_true(tw_clock_now_ms(&clk) - t0 < 10000);
  tw_tenancy_place_begin(ten); /* a whole read finds the same */
  assert_int_equal(ml_spot_left(), 32 - 8);
}

/* The live attempts as stored now, handed to the phase as the scheduler
 * would. */
static void begin_with_stored_live(void) {
  struct tw_attempt_rec *live = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_attempts_live(store, &live, &n, NULL), TW_OK);
  tw_tenancy_place_begin_live(ten, live, n);
  free(live);
}

static int64_t open_attempt(struct tw_store *s, const char *job_id) {
  struct tw_attempt_new an = {.job_id = job_id,
                              .provider = "fake-a",
                              .offer_id = "o-1",
                              .market = "spot",
                              .price_uusd_per_hour = 120000,
                              .reason = "test"};
  struct tw_attempt_rec a;
  struct tw_err err = {0};
  if (tw_store_attempt_open(s, &an, &a, &err))
    fail_msg("attempt open: %s", err.msg);
  return a.id;
}

static void reserve(struct tw_store *s, const char *job_id, int64_t vcpus) {
  struct tw_store_resv v = {.vcpus = vcpus, .spot = true, .at_ms = 1};
  snprintf(v.job_id, sizeof v.job_id, "%s", job_id);
  snprintf(v.tenant, sizeof v.tenant, "ml");
  assert_int_equal(tw_store_reservation_put(s, &v, "o-1", NULL), TW_OK);
}

static void end_attempt(struct tw_store *s, int64_t id) {
  struct tw_attempt_close cl = {.attempt_id = id,
                                .end_reason = "completed",
                                .job_to = TW_JOB_NSTATES};
  struct tw_err err = {0};
  if (tw_store_attempt_close(s, &cl, &err))
    fail_msg("attempt close: %s", err.msg);
}

/* Another replica's writes (a former leader's, on the same database) are
 * not in this process's change feed: they are seen at the next whole
 * read, at once when the live attempts are not as many as the view
 * follows, else after the re-read period. */
static void another_replicas_writes_are_seen_after_the_re_read(void **state) {
  (void)state;
  tenant("ml", "", 64, 0, -1, 50); /* 32 spot vCPUs */
  char a[TW_JOB_ID_LEN + 1], b[TW_JOB_ID_LEN + 1], c[TW_JOB_ID_LEN + 1];
  submit("name: a\ntenant: ml\nresources: {cpus: 8}\n", a);
  submit("name: b\ntenant: ml\nresources: {cpus: 8}\n", b);
  submit("name: c\ntenant: ml\nresources: {cpus: 8}\n", c);
  int64_t at_a = open_attempt(store, a), at_c = open_attempt(store, c);
  reserve(store, a, 8);
  reserve(store, c, 8);
  begin_with_stored_live();
  assert_int_equal(ml_spot_left(), 16);
  struct tw_store *other = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path, .clock = &clk};
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &other, &err))
    fail_msg("second store: %s", err.msg);
  /* the other ends c's attempt: one live attempt fewer, read whole now */
  end_attempt(other, at_c);
  tw_clock_advance(&clk, 100);
  begin_with_stored_live();
  assert_int_equal(ml_spot_left(), 24);
  assert_int_equal(stored_reservations(), 1);
  /* it ends a's attempt and places b on 16 vCPUs: as many live attempts
   * as before, so seen once the re-read period passed */
  end_attempt(other, at_a);
  open_attempt(other, b);
  reserve(other, b, 16);
  tw_store_close(other);
  tw_clock_advance(&clk, 10000);
  begin_with_stored_live();
  assert_int_equal(ml_spot_left(), 16);
  struct tw_store_resv *rows = NULL;
  size_t n = 0;
  assert_int_equal(tw_store_reservations(store, &rows, &n, NULL), TW_OK);
  assert_int_equal(n, 1); /* a's given back, b's kept */
  assert_string_equal(rows[0].job_id, b);
  free(rows);
}

/* Many reservations, most matched to attempts that open and end at
 * different phases: the view kept (its job index shuffled by every
 * removal) agrees with a whole read at each step. */
static void many_reservations_agree_with_a_whole_read(void **state) {
  (void)state;
  enum { N = 240 };
  tenant("ml", "", 100000, 0, -1, 50); /* 50,000 spot vCPUs */
  static char ids[N][TW_JOB_ID_LEN + 1];
  int64_t att[N] = {0};
  for (int i = 0; i < N; i++) {
    char yaml[128];
    snprintf(yaml, sizeof yaml,
             "name: m%d\ntenant: ml\nresources: {cpus: 8, market: spot}\n", i);
    submit(yaml, ids[i]);
  }
  begin_with_stored_live(); /* the first phase: a whole read of nothing */
  struct tw_offer o;
  tw_offer_init(&o);
  snprintf(o.account, sizeof o.account, "fake-a");
  snprintf(o.id, sizeof o.id, "o-spot");
  o.vcpus = 8;
  o.market = TW_MARKET_SPOT;
  struct tw_job_spec spec = {.nodes = 1};
  int held = 0;
  for (int i = 0; i < N; i++) {
    struct tw_job_rec j = {.tenant = "ml"};
    memcpy(j.id, ids[i], sizeof j.id);
    tw_tenancy_place_commit(ten, &j, &spec, &o);
    if (i % 3) { /* every third one's attempt never opens */
      att[i] = open_attempt(store, ids[i]);
      held++;
    }
  }
  tw_clock_advance(&clk, 100);
  begin_with_stored_live();
  assert_int_equal(ml_spot_left(), 50000 - 8 * held);
  assert_int_equal(stored_reservations(), (size_t)held);
  for (int round = 2; round <= 7; round++) {
    for (int i = 0; i < N; i++)
      if (att[i] && i % round == 1) {
        end_attempt(store, att[i]);
        att[i] = 0;
        held--;
      }
    tw_clock_advance(&clk, 100);
    begin_with_stored_live();
    int64_t kept = ml_spot_left();
    assert_int_equal(kept, 50000 - 8 * held);
    assert_int_equal(stored_reservations(), (size_t)held);
    tw_tenancy_place_begin(ten);
    assert_int_equal(ml_spot_left(), kept);
  }
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(cohort_borrowing_and_reclaim, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(reservations_end_with_their_attempts,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(concurrent_jobs_limit_holds_the_next_job,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(spot_share_zero_places_on_demand, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          spot_share_zero_goes_on_demand_past_many_spot_offers, setup,
          teardown),
      cmocka_unit_test_setup_teardown(quota_set_after_the_pass_began_is_seen,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          reservations_kept_are_released_by_ends_and_cancels, setup, teardown),
      cmocka_unit_test_setup_teardown(
          another_replicas_writes_are_seen_after_the_re_read, setup, teardown),
      cmocka_unit_test_setup_teardown(many_reservations_agree_with_a_whole_read,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
