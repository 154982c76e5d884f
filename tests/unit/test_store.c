/* Store: durability of creates, idempotency, paging, transitions and their
 * events, group commit under concurrency, migrations on reopen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "broker/core/store_agent.h"
#include "broker/core/store_obs.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64];
static char path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-store-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1764460800000); /* 2025-11-30T00:00:00Z */
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_store_remove(path, dir);
  tw_test_pg_schema_drop(&pg);
  return 0;
}

static struct tw_store *open_store(void) {
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &s, &err) != TW_OK)
    fail_msg("%s", err.msg);
  return s;
}

static void create(struct tw_store *s, const char *name, const char *key,
                   const char *spec, struct tw_job_rec *out, bool *replayed,
                   enum tw_rc want) {
  struct tw_job_new req = {.name = name,
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = spec,
                           .idem_key = key};
  struct tw_err err = {0};
  enum tw_rc rc = tw_store_job_create(s, &req, out, replayed, &err);
  assert_int_equal(rc, want);
}

static void create_get_and_reopen(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, g;
  bool rep;
  create(s, "train", NULL, "{\"name\":\"train\"}", &j, &rep, TW_OK);
  assert_false(rep);
  assert_int_equal(j.state, TW_JOB_PENDING);
  assert_int_equal(strlen(j.id), TW_JOB_ID_LEN);
  assert_int_equal(j.created_ms, 1764460800000);
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_string_equal(g.name, "train");
  assert_string_equal(g.tenant, "t1");
  assert_string_equal(g.spec_json, "{\"name\":\"train\"}");
  tw_job_rec_release(&g);
  tw_store_close(s);
  /* reopening migrates nothing and keeps the job */
  s = open_store();
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_string_equal(g.id, j.id);
  tw_job_rec_release(&g);
  err.rc = TW_OK;
  assert_int_equal(tw_store_job_get(s, "j-nope", &g, &err), TW_E_NOTFOUND);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

/* Token hashes, sealed secrets, the audit log and job specs live there:
 * a new database and its WAL are readable by their owner only, whatever
 * the umask; an existing file keeps its mode. */
static void a_new_database_and_its_wal_are_the_owners_alone(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  mode_t old = umask(022);
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  bool rep;
  create(s, "train", NULL, "{\"name\":\"train\"}", &j, &rep, TW_OK);
  tw_job_rec_release(&j);
  struct stat st;
  char wal[160];
  snprintf(wal, sizeof wal, "%s-wal", path);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(stat(wal, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  tw_store_close(s);
  assert_int_equal(chmod(path, 0640), 0);
  s = open_store();
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  tw_store_close(s);
  umask(old);
}

static void ids_are_time_ordered_and_unique(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char prev[TW_JOB_ID_LEN + 1] = "";
  for (int i = 0; i < 50; i++) {
    struct tw_job_rec j;
    bool rep;
    tw_clock_advance(&clk, 1);
    create(s, "x", NULL, "{}", &j, &rep, TW_OK);
    assert_true(strcmp(j.id, prev) > 0);
    memcpy(prev, j.id, sizeof prev);
    tw_job_rec_release(&j);
  }
  tw_store_close(s);
}

static void idempotency_replays_and_conflicts(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec a, b, c;
  bool rep;
  create(s, "a", "key-1", "{\"name\":\"a\"}", &a, &rep, TW_OK);
  assert_false(rep);
  create(s, "a", "key-1", "{\"name\":\"a\"}", &b, &rep, TW_OK);
  assert_true(rep);
  assert_string_equal(a.id, b.id);
  /* same key, another spec: refused, nothing stored */
  create(s, "a", "key-1", "{\"name\":\"a2\"}", &c, &rep, TW_E_CONFLICT);
  int64_t counts[TW_JOB_NSTATES];
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_counts(s, counts, &err), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], 1);
  tw_job_rec_release(&a);
  tw_job_rec_release(&b);
  tw_store_close(s);
}

static void list_pages_newest_first_with_filters(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char ids[25][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 25; i++) {
    struct tw_job_rec j;
    bool rep;
    create(s, "j", NULL, "{}", &j, &rep, TW_OK);
    memcpy(ids[i], j.id, sizeof ids[i]);
    tw_job_rec_release(&j);
  }
  struct tw_err err = {0};
  struct tw_job_transition t = {
      .id = ids[3], .to = TW_JOB_CANCELLED, .reason = "test"};
  assert_int_equal(tw_store_job_transition(s, &t, NULL, &err), TW_OK);

  struct tw_job_filter f = {.limit = 10};
  int seen = 0, pages = 0;
  for (;;) {
    struct tw_job_rec *recs;
    size_t n;
    int64_t next;
    assert_int_equal(tw_store_job_list(s, &f, &recs, &n, &next, &err), TW_OK);
    for (size_t i = 0; i < n; i++) {
      assert_string_equal(recs[i].id, ids[24 - seen]);
      seen++;
      tw_job_rec_release(&recs[i]);
    }
    free(recs);
    pages++;
    if (!next)
      break;
    f.before_seq = next;
  }
  assert_int_equal(seen, 25);
  assert_int_equal(pages, 3);

  struct tw_job_filter fs = {.limit = 100, .state = "cancelled"};
  struct tw_job_rec *recs;
  size_t n;
  int64_t next;
  assert_int_equal(tw_store_job_list(s, &fs, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(recs[0].id, ids[3]);
  tw_job_rec_release(&recs[0]);
  free(recs);
  struct tw_job_filter ft = {.limit = 100, .tenant = "other"};
  assert_int_equal(tw_store_job_list(s, &ft, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 0);
  free(recs);
  tw_store_close(s);
}

/* By the placement's provider (a key of its JSON): only the jobs placed
 * there, newest first, with the other filters too; the same answers on
 * both backends. */
static void list_filters_by_the_placements_provider(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  const char *where[] = {"aws", "gcp", NULL, "aws", "azure", "aws"};
  char ids[6][64];
  for (int i = 0; i < 6; i++) {
    struct tw_job_rec j, u;
    bool rep;
    char name[16];
    snprintf(name, sizeof name, "p%d", i);
    create(s, name, NULL, "{}", &j, &rep, TW_OK);
    snprintf(ids[i], sizeof ids[i], "%s", j.id);
    tw_job_rec_release(&j);
    if (!where[i])
      continue; /* still pending: no placement */
    char pl[64];
    snprintf(pl, sizeof pl, "{\"provider\":\"%s\",\"region\":\"r\"}", where[i]);
    struct tw_job_transition t1 = {.id = ids[i], .to = TW_JOB_PLACING};
    struct tw_job_transition t2 = {
        .id = ids[i], .to = TW_JOB_PROVISIONING, .placement_json = pl};
    assert_int_equal(tw_store_job_transition(s, &t1, NULL, &err), TW_OK);
    assert_int_equal(tw_store_job_transition(s, &t2, &u, &err), TW_OK);
    tw_job_rec_release(&u);
  }
  struct tw_job_filter f = {.limit = 2, .provider = "aws"};
  struct tw_job_rec *recs;
  size_t n;
  int64_t next;
  assert_int_equal(tw_store_job_list(s, &f, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(recs[0].id, ids[5]);
  assert_string_equal(recs[1].id, ids[3]);
  assert_true(next > 0);
  for (size_t i = 0; i < n; i++)
    tw_job_rec_release(&recs[i]);
  free(recs);
  f.before_seq = next;
  assert_int_equal(tw_store_job_list(s, &f, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(recs[0].id, ids[0]);
  tw_job_rec_release(&recs[0]);
  free(recs);
  struct tw_job_filter fs = {
      .limit = 10, .provider = "gcp", .state = "provisioning"};
  assert_int_equal(tw_store_job_list(s, &fs, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(recs[0].id, ids[1]);
  tw_job_rec_release(&recs[0]);
  free(recs);
  struct tw_job_filter fn = {.limit = 10, .provider = "oci"};
  assert_int_equal(tw_store_job_list(s, &fn, &recs, &n, &next, &err), TW_OK);
  assert_int_equal(n, 0);
  free(recs);
  tw_store_close(s);
}

/* The per-tenant gauges of /metrics: pending jobs and the oldest of them,
 * live attempts and what they spend, one row per tenant in name order; the
 * same on both backends. */
struct gauges {
  int n;
  struct tw_tenant_gauge g[4];
  char names[4][16];
};

static void on_gauge(void *ctx, const struct tw_tenant_gauge *g) {
  struct gauges *a = ctx;
  if (a->n >= 4)
    return;
  a->g[a->n] = *g;
  snprintf(a->names[a->n], sizeof a->names[a->n], "%s", g->tenant);
  a->g[a->n].tenant = a->names[a->n];
  a->n++;
}

static void tenant_gauges_count_pending_and_live(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  struct tw_job_rec j1, j2, j3;
  bool rep;
  create(s, "a", NULL, "{}", &j1, &rep, TW_OK);
  int64_t oldest = j1.created_ms;
  tw_clock_advance(&clk, 1000);
  create(s, "b", NULL, "{}", &j2, &rep, TW_OK);
  struct tw_job_new other = {
      .name = "c", .tenant = "a-team", .project = "p", .spec_json = "{}"};
  assert_int_equal(tw_store_job_create(s, &other, &j3, &rep, &err), TW_OK);
  struct tw_attempt_new an = {.job_id = j3.id,
                              .provider = "aws",
                              .offer_id = "aws:r:z:t:spot",
                              .market = "spot",
                              .price_uusd_per_hour = 1500000,
                              .reason = "cheapest offer"};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(s, &an, &a, &err), TW_OK);
  struct gauges got = {0};
  assert_int_equal(tw_store_tenant_gauges(s, on_gauge, &got, &err), TW_OK);
  assert_int_equal(got.n, 2);
  assert_string_equal(got.g[0].tenant, "a-team");
  assert_int_equal(got.g[0].pending, 0);
  assert_int_equal(got.g[0].oldest_pending_ms, 0);
  assert_int_equal(got.g[0].live_attempts, 1);
  assert_int_equal(got.g[0].spend_uusd_per_hour, 1500000);
  assert_string_equal(got.g[1].tenant, "t1");
  assert_int_equal(got.g[1].pending, 2);
  assert_int_equal(got.g[1].oldest_pending_ms, oldest);
  assert_int_equal(got.g[1].live_attempts, 0);
  assert_int_equal(got.g[1].spend_uusd_per_hour, 0);
  tw_job_rec_release(&j1);
  tw_job_rec_release(&j2);
  tw_job_rec_release(&j3);
  tw_store_close(s);
}

/* The gauges as tw_store_gauges tells them, checked against the store's
 * uncached count of every state. */
static void check_jobs(struct tw_store *s, const struct tw_store_gauges *g) {
  int64_t c[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(s, c, NULL), TW_OK);
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    assert_int_equal(g->jobs[i], c[i]);
}

static const struct tw_tenant_gauge *tenant_of(const struct tw_store_gauges *g,
                                               const char *t) {
  for (size_t i = 0; i < g->n_tenants; i++)
    if (!strcmp(g->tenants[i].tenant, t))
      return &g->tenants[i];
  return NULL;
}

static void metrics_gauges_follow_submissions_placements_and_ends(
    void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  struct tw_store_gauges g;
  assert_int_equal(tw_store_gauges(s, 0, &g, &err), TW_OK);
  assert_int_equal(g.n_tenants, 0);
  check_jobs(s, &g);
  tw_store_gauges_release(&g);

  /* submissions: two of t1's, one of a-team's */
  struct tw_job_rec j1, j2, j3;
  bool rep;
  create(s, "a", NULL, "{}", &j1, &rep, TW_OK);
  tw_clock_advance(&clk, 1000);
  create(s, "b", NULL, "{}", &j2, &rep, TW_OK);
  struct tw_job_new other = {
      .name = "c", .tenant = "a-team", .project = "p", .spec_json = "{}"};
  assert_int_equal(tw_store_job_create(s, &other, &j3, &rep, &err), TW_OK);
  assert_int_equal(tw_store_gauges(s, 0, &g, &err), TW_OK);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 3);
  check_jobs(s, &g);
  assert_int_equal(g.n_tenants, 2);
  assert_string_equal(g.tenants[0].tenant, "a-team"); /* name order */
  assert_int_equal(g.tenants[0].pending, 1);
  assert_int_equal(g.tenants[1].pending, 2);
  assert_int_equal(g.tenants[1].oldest_pending_ms, j1.created_ms);
  assert_int_equal(g.tenants[1].live_attempts, 0);
  tw_store_gauges_release(&g);

  /* placements: a-team's job and t1's oldest each get an attempt */
  struct tw_attempt_new an = {.job_id = j3.id,
                              .provider = "aws",
                              .offer_id = "aws:r:z:t:spot",
                              .market = "spot",
                              .price_uusd_per_hour = 1500000,
                              .reason = "cheapest offer"};
  struct tw_attempt_rec a3, a1;
  assert_int_equal(tw_store_attempt_open(s, &an, &a3, &err), TW_OK);
  an.job_id = j1.id;
  an.price_uusd_per_hour = 250001;
  assert_int_equal(tw_store_attempt_open(s, &an, &a1, &err), TW_OK);
  assert_int_equal(tw_store_attempt_launched(s, a3.id, "i-3", NULL, &err),
                   TW_OK);
  assert_int_equal(tw_store_attempt_running(s, a3.id, &err), TW_OK);
  assert_int_equal(tw_store_gauges(s, 0, &g, &err), TW_OK);
  check_jobs(s, &g);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 1);
  const struct tw_tenant_gauge *t = tenant_of(&g, "a-team");
  assert_non_null(t);
  assert_int_equal(t->pending, 0);
  assert_int_equal(t->oldest_pending_ms, 0);
  assert_int_equal(t->live_attempts, 1);
  assert_int_equal(t->spend_uusd_per_hour, 1500000);
  t = tenant_of(&g, "t1");
  assert_non_null(t);
  assert_int_equal(t->pending, 1);
  assert_int_equal(t->oldest_pending_ms, j2.created_ms);
  assert_int_equal(t->live_attempts, 1);
  assert_int_equal(t->spend_uusd_per_hour, 250001);
  tw_store_gauges_release(&g);

  /* ends: a-team's job succeeds (nothing of it left to show); t1's
   * attempt fails on capacity and its job stays placing */
  struct tw_attempt_close c3 = {.attempt_id = a3.id,
                                .end_reason = "completed",
                                .job_to = TW_JOB_SUCCEEDED,
                                .job_reason = "done",
                                .has_exit = true};
  assert_int_equal(tw_store_attempt_close(s, &c3, &err), TW_OK);
  struct tw_attempt_close c1 = {
      .attempt_id = a1.id, .end_reason = "capacity", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(s, &c1, &err), TW_OK);
  assert_int_equal(tw_store_gauges(s, 0, &g, &err), TW_OK);
  check_jobs(s, &g);
  assert_int_equal(g.jobs[TW_JOB_SUCCEEDED], 1);
  assert_null(tenant_of(&g, "a-team"));
  t = tenant_of(&g, "t1");
  assert_non_null(t);
  assert_int_equal(t->pending, 1);
  assert_int_equal(t->live_attempts, 0);
  assert_int_equal(t->spend_uusd_per_hour, 0);
  int64_t read_ms = g.read_ms;
  tw_store_gauges_release(&g);

  /* kept for max_age_ms: a submission shows once the reading is that old */
  struct tw_job_rec j4;
  create(s, "d", NULL, "{}", &j4, &rep, TW_OK);
  tw_clock_advance(&clk, 999);
  assert_int_equal(tw_store_gauges(s, 1000, &g, &err), TW_OK);
  assert_int_equal(g.read_ms, read_ms);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 1);
  assert_int_equal(tenant_of(&g, "t1")->pending, 1);
  tw_store_gauges_release(&g);
  tw_clock_advance(&clk, 1);
  assert_int_equal(tw_store_gauges(s, 1000, &g, &err), TW_OK);
  assert_int_equal(g.read_ms, read_ms + 1000);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 2);
  assert_int_equal(tenant_of(&g, "t1")->pending, 2);
  check_jobs(s, &g);
  tw_store_gauges_release(&g);
  tw_store_close(s);

  /* a restart reads the same figures from the store */
  s = open_store();
  assert_int_equal(tw_store_gauges(s, 1000, &g, &err), TW_OK);
  check_jobs(s, &g);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 2);
  assert_int_equal(g.jobs[TW_JOB_SUCCEEDED], 1);
  assert_int_equal(g.n_tenants, 1);
  assert_int_equal(g.tenants[0].pending, 2);
  assert_int_equal(g.tenants[0].oldest_pending_ms, j2.created_ms);
  tw_store_gauges_release(&g);
  tw_job_rec_release(&j1);
  tw_job_rec_release(&j2);
  tw_job_rec_release(&j3);
  tw_job_rec_release(&j4);
  tw_store_close(s);
}

struct scraper {
  struct tw_store *s;
  int64_t max_age_ms;
  int reads, failed;
};

static void *scrape(void *varg) {
  struct scraper *a = varg;
  for (int i = 0; i < a->reads; i++) {
    struct tw_store_gauges g;
    struct tw_err err = {0};
    if (tw_store_gauges(a->s, a->max_age_ms, &g, &err) != TW_OK)
      a->failed++;
    else if (g.n_tenants > 1 || g.jobs[TW_JOB_PENDING] < 0)
      a->failed++;
    tw_store_gauges_release(&g);
  }
  return NULL;
}

/* Scrapes from several threads while jobs arrive share the one reading;
 * the last reading once they stop holds every job. */
static void metrics_gauges_shared_by_concurrent_scrapes(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct scraper sc[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    sc[i] = (struct scraper){.s = s, .max_age_ms = i % 2 ? 1000 : 0,
                             .reads = 50};
    assert_int_equal(pthread_create(&th[i], NULL, scrape, &sc[i]), 0);
  }
  for (int i = 0; i < 40; i++) {
    struct tw_job_rec j;
    bool rep;
    create(s, "x", NULL, "{}", &j, &rep, TW_OK);
    tw_job_rec_release(&j);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(sc[i].failed, 0);
  }
  struct tw_store_gauges g;
  struct tw_err err = {0};
  assert_int_equal(tw_store_gauges(s, 0, &g, &err), TW_OK);
  assert_int_equal(g.jobs[TW_JOB_PENDING], 40);
  assert_int_equal(g.n_tenants, 1);
  assert_int_equal(g.tenants[0].pending, 40);
  tw_store_gauges_release(&g);
  tw_store_close(s);
}

static void transitions_are_validated_and_recorded(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, u;
  bool rep;
  struct tw_err err = {0};
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  struct tw_job_transition steps[] = {
      {.id = j.id, .to = TW_JOB_PLACING, .reason = "scheduler picked it"},
      {.id = j.id,
       .to = TW_JOB_PROVISIONING,
       .reason = "launching",
       .placement_json = "{\"provider\":\"aws\"}"},
      {.id = j.id, .to = TW_JOB_RUNNING, .reason = "instance running"},
      {.id = j.id,
       .to = TW_JOB_SUCCEEDED,
       .reason = "exit 0",
       .has_exit = true},
  };
  for (size_t i = 0; i < 4; i++) {
    tw_clock_advance(&clk, 1000);
    assert_int_equal(tw_store_job_transition(s, &steps[i], &u, &err), TW_OK);
    assert_int_equal(u.state, steps[i].to);
    tw_job_rec_release(&u);
  }
  assert_int_equal(tw_store_job_get(s, j.id, &u, &err), TW_OK);
  assert_string_equal(u.placement_json, "{\"provider\":\"aws\"}");
  assert_true(u.has_exit_code);
  assert_int_equal(u.exit_code, 0);
  assert_int_equal(u.updated_ms - u.created_ms, 4000);
  tw_job_rec_release(&u);
  /* finished: cancel is a conflict and changes nothing */
  struct tw_job_transition cancel = {
      .id = j.id, .to = TW_JOB_CANCELLED, .reason = "x"};
  assert_int_equal(tw_store_job_transition(s, &cancel, NULL, &err),
                   TW_E_CONFLICT);
  assert_non_null(strstr(err.msg, "already succeeded"));
  struct tw_job_event *ev;
  size_t n;
  assert_int_equal(tw_store_job_events(s, j.id, &ev, &n, &(struct tw_err){0}),
                   TW_OK);
  assert_int_equal(n, 5);
  assert_false(ev[0].has_from);
  assert_int_equal(ev[0].to, TW_JOB_PENDING);
  assert_string_equal(ev[0].reason, "submitted");
  assert_true(ev[4].has_from);
  assert_int_equal(ev[4].from, TW_JOB_RUNNING);
  assert_int_equal(ev[4].to, TW_JOB_SUCCEEDED);
  assert_int_equal(ev[4].at_ms - ev[0].at_ms, 4000);
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_job_events(s, "j-missing", &ev, &n, &e2),
                   TW_E_NOTFOUND);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

struct burst {
  struct tw_store *s;
  int n;
  int ok;
};

static void *burst_main(void *arg) {
  struct burst *b = arg;
  for (int i = 0; i < b->n; i++) {
    struct tw_job_new req = {
        .name = "b", .tenant = "t", .project = "p", .spec_json = "{}"};
    struct tw_job_rec j;
    bool rep;
    if (tw_store_job_create(b->s, &req, &j, &rep, NULL) == TW_OK) {
      b->ok++;
      tw_job_rec_release(&j);
    }
  }
  return NULL;
}

static void concurrent_writes_share_commits(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  enum { T = 32, N = 40 };
  pthread_t th[T];
  struct burst b[T];
  for (int i = 0; i < T; i++) {
    b[i] = (struct burst){.s = s, .n = N};
    pthread_create(&th[i], NULL, burst_main, &b[i]);
  }
  int ok = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    ok += b[i].ok;
  }
  assert_int_equal(ok, T * N);
  struct tw_store_stats st;
  tw_store_stats(s, &st);
  assert_int_equal(st.ops, T * N);
  /* 32 writers at once: the writer must have committed several per
   * transaction, or group commit is not happening */
  assert_true(st.commits < st.ops);
  assert_true(st.max_batch > 1);
  int64_t counts[TW_JOB_NSTATES];
  assert_int_equal(tw_store_job_counts(s, counts, NULL), TW_OK);
  assert_int_equal(counts[TW_JOB_PENDING], T * N);
  tw_store_close(s);
}

static void schema_version_is_recorded(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  tw_store_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), tw_store_schema_version());
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void newer_schema_is_refused(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  tw_store_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk};
  assert_int_equal(tw_store_open(&o, &s, &err), TW_E_IO);
  assert_non_null(strstr(err.msg, "newer than this build"));
}

static void attempts_carry_tokens_and_move_the_job(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j, g;
  bool rep;
  struct tw_err err = {0};
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "aws",
                              .offer_id = "aws:r:z:t:spot",
                              .market = "spot",
                              .price_uusd_per_hour = 1500000,
                              .reason = "cheapest offer"};
  struct tw_attempt_rec a1, a2;
  assert_int_equal(tw_store_attempt_open(s, &an, &a1, &err), TW_OK);
  assert_int_equal(a1.n, 1);
  char tok[64];
  snprintf(tok, sizeof tok, "%s-1", j.id);
  assert_string_equal(a1.client_token, tok);
  assert_int_equal(a1.state, TW_ATTEMPT_LAUNCHING);
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_PLACING);
  tw_job_rec_release(&g);
  /* a capacity error: the attempt ends, the job stays placing for the next */
  struct tw_attempt_close c1 = {
      .attempt_id = a1.id, .end_reason = "capacity", .job_to = TW_JOB_NSTATES};
  assert_int_equal(tw_store_attempt_close(s, &c1, &err), TW_OK);
  assert_int_equal(tw_store_attempt_open(s, &an, &a2, &err), TW_OK);
  assert_int_equal(a2.n, 2);
  assert_int_equal(tw_store_attempt_launched(s, a2.id, "i-123",
                                             "{\"provider\":\"aws\"}", &err),
                   TW_OK);
  /* launched twice is a conflict */
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_attempt_launched(s, a2.id, "i-999", NULL, &e2),
                   TW_E_CONFLICT);
  assert_int_equal(tw_store_attempt_running(s, a2.id, &err), TW_OK);
  struct tw_attempt_rec *live;
  size_t n;
  assert_int_equal(tw_store_attempts_live(s, &live, &n, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(live[0].instance_id, "i-123");
  assert_int_equal(live[0].state, TW_ATTEMPT_RUNNING);
  free(live);
  struct tw_attempt_close c2 = {.attempt_id = a2.id,
                                .end_reason = "completed",
                                .job_to = TW_JOB_SUCCEEDED,
                                .job_reason = "done",
                                .has_exit = true,
                                .exit_code = 0};
  assert_int_equal(tw_store_attempt_close(s, &c2, &err), TW_OK);
  assert_int_equal(tw_store_job_get(s, j.id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_SUCCEEDED);
  assert_string_equal(g.placement_json, "{\"provider\":\"aws\"}");
  tw_job_rec_release(&g);
  struct tw_attempt_rec *all;
  assert_int_equal(tw_store_attempts_of(s, j.id, &all, &n, &err), TW_OK);
  assert_int_equal(n, 2);
  assert_string_equal(all[0].end_reason, "capacity");
  assert_string_equal(all[1].end_reason, "completed");
  free(all);
  /* a finished job cannot open another attempt */
  e2 = (struct tw_err){0};
  assert_int_equal(tw_store_attempt_open(s, &an, &a1, &e2), TW_E_CONFLICT);
  struct tw_job_event *ev;
  assert_int_equal(tw_store_job_events(s, j.id, &ev, &n, &err), TW_OK);
  /* submitted, placing, provisioning, running, succeeded */
  assert_int_equal(n, 5);
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

/* tw_store_changes_since: each attempt opened or moved and each job that
 * ended, told once its write committed; a cursor of 0 (or one too old)
 * says "read afresh"; a refused write may be told too, never missed. */
static void committed_changes_are_told_once_in_order(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  uint64_t cur = 0;
  struct tw_store_change *ch = NULL;
  size_t n = 0;
  assert_false(tw_store_changes_since(s, &cur, &ch, &n)); /* nothing known */
  assert_int_equal(n, 0);
  assert_true(cur > 0);
  struct tw_job_rec j, k;
  bool rep;
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  create(s, "k", NULL, "{}", &k, &rep, TW_OK);
  /* a submission changes no attempt and ends no job */
  assert_true(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 0);
  free(ch);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "aws",
                              .offer_id = "aws:r:z:t:spot",
                              .market = "spot",
                              .reason = "best offer"};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(s, &an, &a, &err), TW_OK);
  assert_int_equal(tw_store_attempt_launched(s, a.id, "i-1", NULL, &err),
                   TW_OK);
  assert_true(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 2);
  assert_int_equal(ch[0].attempt_id, a.id);
  assert_int_equal(ch[1].attempt_id, a.id);
  free(ch);
  /* asked again: nothing new */
  assert_true(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 0);
  free(ch);
  /* k cancelled: its job told, with no attempt */
  struct tw_job_transition t = {
      .id = k.id, .to = TW_JOB_CANCELLED, .reason = "test"};
  assert_int_equal(tw_store_job_transition(s, &t, NULL, &err), TW_OK);
  assert_true(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 1);
  assert_int_equal(ch[0].attempt_id, 0);
  assert_string_equal(ch[0].job_id, k.id);
  free(ch);
  /* the attempts read back by id, one of them unknown */
  int64_t ids[2] = {a.id, a.id + 1000};
  struct tw_attempt_rec got[2];
  bool found[2];
  assert_int_equal(tw_store_attempts_by_id(s, ids, 2, got, found, &err), TW_OK);
  assert_true(found[0]);
  assert_false(found[1]);
  assert_string_equal(got[0].instance_id, "i-1");
  assert_int_equal(got[0].state, TW_ATTEMPT_PROVISIONING);
  /* a follower too far behind is told to read afresh */
  size_t flood = 70000; /* more than the store keeps */
  struct tw_attempt_running *rs = calloc(flood, sizeof *rs);
  enum tw_rc *rcs = calloc(flood, sizeof *rcs);
  struct tw_err *errs = calloc(flood, sizeof *errs);
  for (size_t i = 0; i < flood; i++)
    rs[i] = (struct tw_attempt_running){.attempt_id = a.id + 1000 + (int64_t)i};
  tw_store_attempt_running_many(s, rs, flood, rcs, errs); /* each refused */
  assert_int_equal(rcs[0], TW_E_NOTFOUND);
  free(rs);
  free(rcs);
  free(errs);
  assert_false(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 0);
  /* read afresh from here: what follows is told again */
  assert_int_equal(tw_store_attempt_running(s, a.id, &err), TW_OK);
  assert_true(tw_store_changes_since(s, &cur, &ch, &n));
  assert_int_equal(n, 1);
  assert_int_equal(ch[0].attempt_id, a.id);
  free(ch);
  tw_job_rec_release(&j);
  tw_job_rec_release(&k);
  tw_store_close(s);
}

/* tw_store_write_many and the batches over it: one transaction for
 * the lot, each operation's own outcome (a refused one undoes nothing of
 * its neighbours). */
static void batched_writes_commit_together_each_with_its_outcome(
    void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j[3];
  bool rep;
  struct tw_err err = {0};
  for (int i = 0; i < 3; i++)
    create(s, "j", NULL, "{}", &j[i], &rep, TW_OK);
  /* the middle job ends first: its attempt cannot be opened */
  struct tw_job_transition t = {.id = j[1].id, .to = TW_JOB_CANCELLED,
                                .reason = "cancelled"};
  assert_int_equal(tw_store_job_transition(s, &t, NULL, &err), TW_OK);
  struct tw_attempt_new an[3];
  for (int i = 0; i < 3; i++)
    an[i] = (struct tw_attempt_new){.job_id = j[i].id,
                                    .provider = "aws",
                                    .offer_id = "aws:r:z:t:spot",
                                    .market = "spot",
                                    .price_uusd_per_hour = 1500000,
                                    .reason = "cheapest offer"};
  struct tw_attempt_rec a[3];
  enum tw_rc rc[3];
  struct tw_err errs[3] = {{0}};
  struct tw_store_stats st0, st1;
  tw_store_stats(s, &st0);
  tw_store_attempt_open_many(s, an, a, 3, rc, errs);
  tw_store_stats(s, &st1);
  assert_int_equal(rc[0], TW_OK);
  assert_int_equal(rc[1], TW_E_CONFLICT);
  assert_non_null(strstr(errs[1].msg, j[1].id));
  assert_int_equal(rc[2], TW_OK);
  assert_int_equal(st1.commits - st0.commits, 1); /* one transaction */
  assert_int_equal(st1.ops - st0.ops, 2);         /* the two that wrote */
  assert_int_equal(a[0].n, 1);
  assert_int_equal(a[2].n, 1);
  struct tw_job_rec g;
  assert_int_equal(tw_store_job_get(s, j[2].id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_PLACING);
  tw_job_rec_release(&g);
  /* running, with a note on one of them; an attempt that is not launched
   * yet cannot run, and its neighbours do */
  assert_int_equal(tw_store_attempt_launched(s, a[0].id, "i-1", "{}", &err),
                   TW_OK);
  struct tw_attempt_running r[2] = {
      {.attempt_id = a[2].id, .job_id = j[2].id, .note = "never"},
      {.attempt_id = a[0].id, .job_id = j[0].id, .note = "no agent here"}};
  tw_store_stats(s, &st0);
  tw_store_attempt_running_many(s, r, 2, rc, errs);
  tw_store_stats(s, &st1);
  assert_int_not_equal(rc[0], TW_OK);
  assert_int_equal(rc[1], TW_OK);
  assert_int_equal(st1.commits - st0.commits, 1);
  assert_int_equal(tw_store_job_get(s, j[0].id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_RUNNING);
  assert_string_equal(g.reason, "no agent here");
  tw_job_rec_release(&g);
  assert_int_equal(tw_store_job_get(s, j[2].id, &g, &err), TW_OK);
  assert_int_equal(g.state, TW_JOB_PLACING); /* nothing of its note */
  assert_string_not_equal(g.reason, "never");
  tw_job_rec_release(&g);
  for (int i = 0; i < 3; i++)
    tw_job_rec_release(&j[i]);
  tw_store_close(s);
}

static void queue_order_and_notes(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  const int prio[] = {0, 5, 0, 5};
  char ids[4][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 4; i++) {
    struct tw_job_new req = {.name = "q",
                             .tenant = "t",
                             .project = "p",
                             .spec_json = "{}",
                             .priority = prio[i]};
    struct tw_job_rec j;
    assert_int_equal(tw_store_job_create(s, &req, &j, NULL, &err), TW_OK);
    memcpy(ids[i], j.id, sizeof ids[i]);
    tw_job_rec_release(&j);
  }
  struct tw_job_rec *q;
  size_t n;
  assert_int_equal(tw_store_jobs_queued(s, TW_JOB_PENDING, 10, &q, &n, &err),
                   TW_OK);
  assert_int_equal(n, 4);
  const int want[] = {1, 3, 0, 2};
  for (int i = 0; i < 4; i++) {
    assert_string_equal(q[i].id, ids[want[i]]);
    tw_job_rec_release(&q[i]);
  }
  free(q);
  assert_int_equal(tw_store_job_note(s, ids[0], "no offer fits", &err), TW_OK);
  assert_int_equal(tw_store_job_note(s, ids[0], "no offer fits", &err), TW_OK);
  struct tw_job_event *ev;
  assert_int_equal(tw_store_job_events(s, ids[0], &ev, &n, &err), TW_OK);
  assert_int_equal(n, 2); /* submitted + one note: the repeat is not news */
  assert_string_equal(ev[1].reason, "no offer fits");
  for (size_t i = 0; i < n; i++)
    free(ev[i].reason);
  free(ev);
  tw_store_close(s);
}

/* The scheduler's notes of one pass: one commit for all, each job's
 * reason and one event when the reason is news, none when it is not, a
 * job that is not there skipped; the statements prepared ahead at
 * start-up (tw_store_warm) serve the reads and the notes after it. */
static void notes_of_a_pass_commit_once(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  assert_int_equal(tw_store_warm(s, &err), TW_OK);
  char ids[3][TW_JOB_ID_LEN + 1];
  for (int i = 0; i < 3; i++) {
    struct tw_job_rec j;
    create(s, "n", NULL, "{\"name\":\"n\"}", &j, NULL, TW_OK);
    memcpy(ids[i], j.id, sizeof ids[i]);
    tw_job_rec_release(&j);
  }
  struct tw_job_transition t = {
      .id = ids[2], .to = TW_JOB_CANCELLED, .reason = "by hand"};
  assert_int_equal(tw_store_job_transition(s, &t, NULL, &err), TW_OK);
  struct tw_job_note notes[] = {
      {ids[0], "no offer fits: gpu 12"},
      {ids[1], "submitted"}, /* its reason already */
      {"j-00000000000000000000000000", "nobody"},
      {ids[2], "no offer fits: gpu 12"}};
  struct tw_store_stats before, after;
  tw_store_stats(s, &before);
  tw_clock_advance(&clk, 1000);
  assert_int_equal(tw_store_job_note_many(s, notes, 4, &err), TW_OK);
  tw_store_stats(s, &after);
  assert_int_equal(after.commits - before.commits, 1);
  assert_int_equal(tw_store_job_note_many(s, notes, 0, &err), TW_OK);
  const char *want_reason[] = {"no offer fits: gpu 12", "submitted",
                               "no offer fits: gpu 12"};
  const size_t want_events[] = {2, 1, 3};
  for (int i = 0; i < 3; i++) {
    struct tw_job_rec g;
    assert_int_equal(tw_store_job_get(s, ids[i], &g, &err), TW_OK);
    assert_string_equal(g.reason, want_reason[i]);
    /* a note changes no state, and only a new reason moves the stamp */
    assert_int_equal(g.state, i == 2 ? TW_JOB_CANCELLED : TW_JOB_PENDING);
    assert_int_equal(g.updated_ms,
                     i == 1 ? 1764460800000 : 1764460801000);
    enum tw_job_state now_in = g.state;
    tw_job_rec_release(&g);
    struct tw_job_event *ev;
    size_t n;
    assert_int_equal(tw_store_job_events(s, ids[i], &ev, &n, &err), TW_OK);
    assert_int_equal(n, want_events[i]);
    if (i != 1) {
      assert_string_equal(ev[n - 1].reason, "no offer fits: gpu 12");
      assert_true(ev[n - 1].has_from);
      assert_int_equal(ev[n - 1].from, ev[n - 1].to);
      assert_int_equal(ev[n - 1].to, now_in);
      assert_int_equal(ev[n - 1].at_ms, 1764460801000);
    }
    for (size_t k = 0; k < n; k++)
      free(ev[k].reason);
    free(ev);
  }
  /* the same notes again: nothing is news */
  assert_int_equal(tw_store_job_note_many(s, notes, 4, &err), TW_OK);
  struct tw_job_event *ev;
  size_t n;
  assert_int_equal(tw_store_job_events(s, ids[0], &ev, &n, &err), TW_OK);
  assert_int_equal(n, 2);
  for (size_t k = 0; k < n; k++)
    free(ev[k].reason);
  free(ev);
  tw_store_close(s);
}

static const char *const MOD_V1[] = {
    "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    "ALTER TABLE widgets ADD COLUMN size INTEGER NOT NULL DEFAULT 0;",
};

static enum tw_rc put_widget(struct tw_store *s, struct tw_db *db, void *arg,
                             struct tw_err *err) {
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, "INSERT INTO widgets (name) VALUES (?1)", err);
  if (!st)
    return TW_E_IO;
  tw_db_bind_text(st, 1, arg, -1);
  int r = tw_db_step(st);
  tw_db_reset(st);
  return r == TW_DB_DONE ? TW_OK : tw_err_set(err, TW_E_IO, "insert");
}

static enum tw_rc count_widgets(struct tw_store *s, struct tw_db *db,
                                void *arg, struct tw_err *err) {
  struct tw_db_stmt *st =
      tw_store_stmt(s, db, "SELECT count(*), sum(size + 3) FROM widgets", err);
  if (!st)
    return TW_E_IO;
  int r = tw_db_step(st);
  ((int *)arg)[0] = tw_db_column_int(st, 0);
  ((int *)arg)[1] = tw_db_column_int(st, 1);
  tw_db_reset(st);
  return r == TW_DB_ROW ? TW_OK : TW_E_IO;
}

static void modules_migrate_themselves(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_err err = {0};
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 1, &err),
                   TW_OK);
  if (tw_store_write(s, put_widget, "a", &err))
    fail_msg("%s", err.msg);
  /* a later build adds a migration: only that one runs, data is kept */
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 2, &err),
                   TW_OK);
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 2, &err),
                   TW_OK);
  assert_int_equal(tw_store_write(s, put_widget, "b", &err), TW_OK);
  int got[2];
  assert_int_equal(tw_store_read(s, count_widgets, got, &err), TW_OK);
  assert_int_equal(got[0], 2);
  assert_int_equal(got[1], 6);
  /* an older build refuses the newer module schema */
  struct tw_err e2 = {0};
  assert_int_equal(tw_store_migrate_module(s, "widgets", MOD_V1, 1, &e2),
                   TW_E_IO);
  assert_non_null(strstr(e2.msg, "newer than this build"));
  tw_store_close(s);
}

/* A database of the earlier layout, where each module migrated itself when
 * it first started, lacks the modules its daemon never ran (here the
 * reconciler and the checkpoints): opening it keeps what is there and
 * creates the rest, under the same module names and numbers. */
static void earlier_layout_opens_and_gains_missing_modules(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* the sqlite file itself */
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  create(s, "old", NULL, "{}", &j, NULL, TW_OK);
  tw_store_close(s);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db,
                   "DROP TABLE reconcile_log; DROP TABLE spot_requests;"
                   " DROP TABLE spot_progress; DROP TABLE spot_decisions;"
                   " DELETE FROM schema_modules"
                   " WHERE name IN ('reconcile', 'spot')",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  s = open_store();
  struct tw_job_rec again;
  assert_int_equal(tw_store_job_get(s, j.id, &again, NULL), TW_OK);
  tw_job_rec_release(&again);
  tw_job_rec_release(&j);
  tw_store_close(s);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(
      sqlite3_prepare_v2(db,
                         "SELECT count(*) FROM schema_modules WHERE version = 1"
                         " AND name IN ('reconcile', 'spot')"
                         " AND EXISTS (SELECT 1 FROM sqlite_master"
                         " WHERE name = 'reconcile_log')",
                         -1, &st, NULL),
      SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 2);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void expect_log(struct tw_store *s, int64_t id, enum tw_agent_stream st,
                       int64_t from, size_t limit, const char *want,
                       int64_t want_total) {
  struct tw_buf out;
  tw_buf_init(&out);
  int64_t total = -1;
  struct tw_err err = {0};
  assert_int_equal(
      tw_store_agent_log_read(s, id, st, from, limit, &out, &total, &err),
      TW_OK);
  assert_int_equal(out.len, strlen(want));
  assert_memory_equal(out.len ? out.data : "", want, strlen(want));
  assert_int_equal(total, want_total);
  tw_buf_release(&out);
}

/* The agent's output: appended by offset (resent bytes skipped, a gap
 * refused, the bound kept) and read back from any offset, on either
 * backend: in segment files beside a sqlite database, in rows on
 * PostgreSQL; the same after a reopen. */
static void agent_output_appends_and_reads_back(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  bool rep;
  struct tw_err err = {0};
  create(s, "j", NULL, "{}", &j, &rep, TW_OK);
  struct tw_attempt_new an = {.job_id = j.id,
                              .provider = "fake",
                              .offer_id = "fake:r:z:t:on-demand",
                              .market = "on-demand",
                              .price_uusd_per_hour = 1000,
                              .reason = "test"};
  struct tw_attempt_rec a;
  assert_int_equal(tw_store_attempt_open(s, &an, &a, &err), TW_OK);
  char hash[65];
  memset(hash, 'a', 64);
  hash[64] = '\0';
  assert_int_equal(tw_store_agent_add(s, a.id, j.id, a.client_token, hash,
                                      1000, &err),
                   TW_OK);
  enum tw_store_log_result res;
  int64_t next = -1;
#define APPEND(stream, off, text, want_res, want_next)                         \
  do {                                                                         \
    assert_int_equal(tw_store_agent_log_append(s, a.id, stream, off, text,     \
                                               strlen(text), 40, &res, &next,  \
                                               &err),                          \
                     TW_OK);                                                   \
    assert_int_equal(res, want_res);                                           \
    assert_int_equal(next, want_next);                                         \
  } while (0)
  APPEND(TW_AGENT_STDOUT, 0, "one\n", TW_STORE_LOG_OK, 4);
  APPEND(TW_AGENT_STDERR, 0, "err\n", TW_STORE_LOG_OK, 4);
  APPEND(TW_AGENT_STDOUT, 0, "one\ntwo\n", TW_STORE_LOG_OK, 8);
  APPEND(TW_AGENT_STDOUT, 12, "x", TW_STORE_LOG_GAP, 8);
  APPEND(TW_AGENT_STDOUT, 8, "three\n", TW_STORE_LOG_OK, 14);
  /* 14 + 4 stored, the bound 40: 23 more would pass it */
  APPEND(TW_AGENT_STDOUT, 14, "aaaaaaaaaaaaaaaaaaaaaaa", TW_STORE_LOG_FULL, 14);
#undef APPEND
  expect_log(s, a.id, TW_AGENT_STDOUT, 0, 1 << 20, "one\ntwo\nthree\n", 14);
  expect_log(s, a.id, TW_AGENT_STDOUT, 2, 5, "e\ntwo", 14);
  expect_log(s, a.id, TW_AGENT_STDOUT, 14, 100, "", 14);
  expect_log(s, a.id, TW_AGENT_STDERR, 1, 100, "rr\n", 4);
  char segs[160];
  snprintf(segs, sizeof segs, "%s-logs", path);
  struct stat st;
  if (pg.on)
    assert_int_not_equal(stat(segs, &st), 0); /* rows: every replica */
  else
    assert_int_equal(stat(segs, &st), 0);
  tw_store_close(s);
  s = open_store();
  expect_log(s, a.id, TW_AGENT_STDOUT, 4, 100, "two\nthree\n", 14);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

/* sqlite's memory statistics take a process-wide mutex around every
 * allocation of every connection; the store turns them off at the first
 * open (db_sqlite.c), so they count nothing. */
static void sqlite_keeps_no_memory_statistics(void **state) {
  (void)state;
  if (pg.on)
    skip(); /* no sqlite connection */
  struct tw_store *s = open_store();
  struct tw_job_rec j;
  create(s, "m", NULL, "{}", &j, NULL, TW_OK);
  assert_int_equal(sqlite3_memory_used(), 0);
  tw_job_rec_release(&j);
  tw_store_close(s);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(create_get_and_reopen, setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_new_database_and_its_wal_are_the_owners_alone, setup, teardown),
      cmocka_unit_test_setup_teardown(ids_are_time_ordered_and_unique, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(idempotency_replays_and_conflicts, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(list_pages_newest_first_with_filters,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(list_filters_by_the_placements_provider,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(tenant_gauges_count_pending_and_live,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          metrics_gauges_follow_submissions_placements_and_ends, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          metrics_gauges_shared_by_concurrent_scrapes, setup, teardown),
      cmocka_unit_test_setup_teardown(transitions_are_validated_and_recorded,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(concurrent_writes_share_commits, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(schema_version_is_recorded, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(attempts_carry_tokens_and_move_the_job,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(queue_order_and_notes, setup, teardown),
      cmocka_unit_test_setup_teardown(committed_changes_are_told_once_in_order,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(notes_of_a_pass_commit_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          batched_writes_commit_together_each_with_its_outcome, setup,
          teardown),
      cmocka_unit_test_setup_teardown(modules_migrate_themselves, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(newer_schema_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(
          earlier_layout_opens_and_gains_missing_modules, setup, teardown),
      cmocka_unit_test_setup_teardown(agent_output_appends_and_reads_back,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(sqlite_keeps_no_memory_statistics, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
