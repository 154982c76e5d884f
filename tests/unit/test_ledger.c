/* Ledger: rows land with their rollups; grouped sums over any range (whole
 * days from the rollups, edge days from the rows) equal the rows summed
 * one by one, to the micro-dollar; the ledger refuses updates and
 * deletes; corrections are new rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing/ledger/ledger.h"
#include "broker/core/store.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

#define T0 1764460800000LL /* 2025-11-30T00:00:00Z */
#define HOUR 3600000LL

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */
static struct tw_store *store;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-ledger-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  if (pg.on && tw_test_pg_schema_new(&pg))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, T0);
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  tw_test_pg_opts(&pg, &o);
  if (tw_store_open(&o, &store, &err)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_pg_schema_drop(&pg);
  tw_store_close(store);
  tw_test_store_remove(path, dir);
  return 0;
}

static struct tw_ledger_row mkrow(const char *tenant, const char *project,
                                  const char *provider, const char *region,
                                  const char *job, int64_t start, int64_t end,
                                  int64_t list, int64_t eff) {
  struct tw_ledger_row r;
  memset(&r, 0, sizeof r);
  snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
  snprintf(r.project, sizeof r.project, "%s", project);
  snprintf(r.provider, sizeof r.provider, "%s", provider);
  snprintf(r.account, sizeof r.account, "%s-main", provider);
  snprintf(r.region, sizeof r.region, "%s", region);
  snprintf(r.job_id, sizeof r.job_id, "%s", job);
  snprintf(r.market, sizeof r.market, "%s", list % 3 ? "on-demand" : "spot");
  r.start_ms = start;
  r.end_ms = end;
  r.usage_ms = end - start;
  r.nodes = 1;
  r.quantity = (end - start) / 1000;
  r.list_uusd = list;
  r.effective_uusd = eff;
  return r;
}

/* ---- random rows against brute force ------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define NROWS 3000
static struct tw_ledger_row rows[NROWS];

struct brute {
  int64_t from, to;
  const char *tenant;
  int64_t list, eff, n;
};

/* c's part over [from, to) of a row charged over [s, e): the row split by
 * time, the parts of one row in adjacent ranges adding up to c exactly
 * (docs/billing.md, "The ledger"); an instant counts where it is. */
static int64_t part(int64_t c, int64_t s, int64_t e, int64_t from,
                    int64_t to) {
  if (e == s)
    return s >= from && s < to ? c : 0;
  int64_t a = s > from ? s : from, b = e < to ? e : to;
  if (b <= a)
    return 0;
  int64_t p = (int64_t)((__int128)c * (b - s) / (e - s) -
                        (__int128)c * (a - s) / (e - s));
  /* within a micro-dollar of the exact proportion */
  long double exact = (long double)c * (long double)(b - a) / (e - s);
  assert_true(p - exact < 1.0L && exact - p < 1.0L);
  return p;
}

static bool overlaps(const struct tw_ledger_row *r, int64_t from, int64_t to) {
  if (r->end_ms == r->start_ms)
    return r->start_ms >= from && r->start_ms < to;
  return r->start_ms < to && r->end_ms > from;
}

static void brute_sum(struct brute *b) {
  b->list = b->eff = b->n = 0;
  for (size_t i = 0; i < NROWS; i++)
    if (overlaps(&rows[i], b->from, b->to) &&
        (!b->tenant || !strcmp(b->tenant, rows[i].tenant))) {
      b->list += part(rows[i].list_uusd, rows[i].start_ms, rows[i].end_ms,
                      b->from, b->to);
      b->eff += part(rows[i].effective_uusd, rows[i].start_ms, rows[i].end_ms,
                     b->from, b->to);
      b->n++;
    }
}

static void sums_over_any_range_equal_the_rows(void **state) {
  (void)state;
  static const char *tenants[] = {"ml", "web", "etl"};
  static const char *providers[] = {"aws", "azure", "slurm"};
  static const char *regions[] = {"us-east-1", "eu-west-1"};
  unsigned seed = (unsigned)(getenv("TW_SEED") ? atoi(getenv("TW_SEED")) : 42);
  rng ^= seed;
  printf("seed %u\n", seed);
  for (size_t i = 0; i < NROWS; i++) {
    int64_t h = (int64_t)(next_rand() % (10 * 24)); /* ten days of hours */
    int64_t start = T0 + h * HOUR + (int64_t)(next_rand() % 1800000);
    int64_t list = (int64_t)(next_rand() % 5000000) - 100000; /* some credits */
    rows[i] =
        mkrow(tenants[next_rand() % 3], next_rand() % 2 ? "a" : "b",
              providers[next_rand() % 3], regions[next_rand() % 2],
              next_rand() % 4 ? "j-1" : "", start,
              start + (int64_t)(next_rand() % 1800000), list, list * 9 / 10);
  }
  struct tw_err err = {0};
  /* in batches, as the meter writes them */
  for (size_t i = 0; i < NROWS; i += 500)
    assert_int_equal(tw_ledger_append(store, rows + i, 500, T0, &err), TW_OK);
  int64_t count;
  assert_int_equal(tw_ledger_count(store, &count, &err), TW_OK);
  assert_int_equal(count, NROWS);

  static const unsigned masks[] = {
      0,
      TW_GROUP_TENANT,
      TW_GROUP_TENANT | TW_GROUP_PROVIDER | TW_GROUP_DAY,
      TW_GROUP_PROJECT | TW_GROUP_REGION,
      TW_GROUP_JOB | TW_GROUP_DAY,
      TW_GROUP_TENANT | TW_GROUP_PROJECT | TW_GROUP_PROVIDER | TW_GROUP_REGION |
          TW_GROUP_DAY,
      TW_GROUP_MARKET, TW_GROUP_TENANT | TW_GROUP_MARKET | TW_GROUP_DAY};
  for (int k = 0; k < 60; k++) {
    struct brute b = {0};
    /* whole days, partial days, one hour, all of it */
    b.from = T0 - TW_DAY_MS + (int64_t)(next_rand() % (12 * 24)) * HOUR;
    if (k % 3 == 0)
      b.from = b.from / TW_DAY_MS * TW_DAY_MS;
    b.to = b.from + (int64_t)(next_rand() % (6 * 24) + 1) * HOUR;
    if (k % 5 == 0)
      b.from += (int64_t)(next_rand() % HOUR); /* not even on the hour */
    b.tenant = k % 4 == 0 ? "web" : NULL;
    brute_sum(&b);
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
      struct tw_ledger_filter f = {.tenant = b.tenant};
      struct tw_ledger_group *g;
      size_t n;
      assert_int_equal(
          tw_ledger_sum(store, b.from, b.to, masks[m], &f, &g, &n, &err),
          TW_OK);
      int64_t list = 0, eff = 0, cnt = 0;
      for (size_t i = 0; i < n; i++) {
        list += g[i].list_uusd;
        eff += g[i].effective_uusd;
        cnt += g[i].rows;
        if (i)
          /* merged: no two groups with the same key */
          assert_true(memcmp(&g[i - 1], &g[i],
                             offsetof(struct tw_ledger_group, list_uusd)));
      }
      free(g);
      if (masks[m] & TW_GROUP_JOB) {
        /* per-job sums leave out rows of no job */
        struct brute nb = b;
        int64_t l2 = 0, n2 = 0;
        for (size_t i = 0; i < NROWS; i++)
          if (overlaps(&rows[i], nb.from, nb.to) && rows[i].job_id[0] &&
              (!nb.tenant || !strcmp(nb.tenant, rows[i].tenant))) {
            l2 += part(rows[i].list_uusd, rows[i].start_ms, rows[i].end_ms,
                       nb.from, nb.to);
            n2++;
          }
        assert_int_equal(list, l2);
        assert_int_equal(cnt, n2);
      } else {
        assert_int_equal(list, b.list);
        assert_int_equal(eff, b.eff);
        assert_int_equal(cnt, b.n);
      }
    }
    int64_t spent;
    assert_int_equal(
        tw_ledger_spent(store, b.tenant, NULL, b.from, b.to, &spent, &err),
        TW_OK);
    assert_int_equal(spent, b.eff);
    /* by market: each market's rows, split by time the same way */
    struct tw_ledger_filter fm = {.tenant = b.tenant};
    struct tw_ledger_group *gm;
    size_t nm;
    assert_int_equal(tw_ledger_sum(store, b.from, b.to, TW_GROUP_MARKET, &fm,
                                   &gm, &nm, &err),
                     TW_OK);
    for (size_t i = 0; i < nm; i++) {
      int64_t want = 0;
      for (size_t r = 0; r < NROWS; r++)
        if (!strcmp(rows[r].market, gm[i].market) &&
            overlaps(&rows[r], b.from, b.to) &&
            (!b.tenant || !strcmp(b.tenant, rows[r].tenant)))
          want += part(rows[r].list_uusd, rows[r].start_ms, rows[r].end_ms,
                       b.from, b.to);
      assert_int_equal(gm[i].list_uusd, want);
    }
    free(gm);
    /* split anywhere, the two parts add up to the whole */
    int64_t mid = b.from + (int64_t)(next_rand() % (uint64_t)(b.to - b.from));
    int64_t s1, s2;
    assert_int_equal(
        tw_ledger_spent(store, b.tenant, NULL, b.from, mid, &s1, &err), TW_OK);
    assert_int_equal(
        tw_ledger_spent(store, b.tenant, NULL, mid, b.to, &s2, &err), TW_OK);
    assert_int_equal(s1 + s2, spent);
  }
}

/* The case: [07:59, 08:01) while two instances ran through that
 * minute on hourly rows.  Row A: 07:00-08:00 at $3.60 (3,600,000 uusd);
 * row B: 08:00-09:00 at $7.20.  The range holds A's last minute (60000)
 * and B's first (120000): 180000 uusd, not A's whole hour nor nothing. */
static void a_range_splits_a_row_by_time(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_row r[2] = {
      mkrow("t", "p", "aws", "us-east-1", "j-a", T0 + 7 * HOUR, T0 + 8 * HOUR,
            3600000, 3600000),
      mkrow("t", "p", "aws", "us-east-1", "j-b", T0 + 8 * HOUR, T0 + 9 * HOUR,
            7200000, 7200000)};
  assert_int_equal(tw_ledger_append(store, r, 2, T0, &err), TW_OK);
  int64_t spent;
  const int64_t MINUTE = 60000;
  assert_int_equal(tw_ledger_spent(store, NULL, NULL, T0 + 8 * HOUR - MINUTE,
                                   T0 + 8 * HOUR + MINUTE, &spent, &err),
                   TW_OK);
  assert_int_equal(spent, 60000 + 120000);
  struct tw_ledger_group *g;
  size_t n;
  assert_int_equal(tw_ledger_sum(store, T0 + 8 * HOUR - MINUTE,
                                 T0 + 8 * HOUR + MINUTE, TW_GROUP_JOB, NULL,
                                 &g, &n, &err),
                   TW_OK);
  assert_int_equal(n, 2);
  assert_int_equal(g[0].list_uusd, 60000);
  assert_int_equal(g[0].usage_ms, MINUTE);
  assert_int_equal(g[1].list_uusd, 120000);
  free(g);
  /* a third of an hour of $1 (1,000,000 / 3 = 333333.3): the three
   * thirds add up to the row */
  struct tw_ledger_row c = mkrow("u", "p", "aws", "us-east-1", "j-c",
                                 T0 + 12 * HOUR, T0 + 13 * HOUR, 1000000, 1000000);
  assert_int_equal(tw_ledger_append(store, &c, 1, T0, &err), TW_OK);
  int64_t t1, t2, t3;
  int64_t base = T0 + 12 * HOUR;
  assert_int_equal(tw_ledger_spent(store, "u", NULL, base, base + 20 * MINUTE,
                                   &t1, &err),
                   TW_OK);
  assert_int_equal(tw_ledger_spent(store, "u", NULL, base + 20 * MINUTE,
                                   base + 40 * MINUTE, &t2, &err),
                   TW_OK);
  assert_int_equal(tw_ledger_spent(store, "u", NULL, base + 40 * MINUTE,
                                   base + 60 * MINUTE, &t3, &err),
                   TW_OK);
  assert_int_equal(t1, 333333);
  assert_int_equal(t2, 333333);
  assert_int_equal(t3, 333334);
}

static void day_groups_carry_the_day(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_row r[3] = {mkrow("t", "p", "aws", "us-east-1", "j-a",
                                     T0 + 1 * HOUR, T0 + 2 * HOUR, 100, 90),
                               mkrow("t", "p", "aws", "us-east-1", "j-a",
                                     T0 + 25 * HOUR, T0 + 26 * HOUR, 200, 180),
                               mkrow("t", "p", "aws", "us-east-1", "j-b",
                                     T0 + 26 * HOUR, T0 + 27 * HOUR, 300, 270)};
  assert_int_equal(tw_ledger_append(store, r, 3, T0, &err), TW_OK);
  struct tw_ledger_group *g;
  size_t n;
  /* a range starting mid-day: the first day from rows, the second from the
   * rollup */
  assert_int_equal(tw_ledger_sum(store, T0 + HOUR / 2, T0 + 48 * HOUR,
                                 TW_GROUP_DAY, NULL, &g, &n, &err),
                   TW_OK);
  assert_int_equal(n, 2);
  assert_int_equal(g[0].day, T0 / TW_DAY_MS);
  assert_int_equal(g[0].list_uusd, 100);
  assert_int_equal(g[1].day, T0 / TW_DAY_MS + 1);
  assert_int_equal(g[1].list_uusd, 500);
  assert_int_equal(g[1].rows, 2);
  free(g);
  int64_t l, e;
  assert_int_equal(tw_ledger_job_cost(store, "j-a", &l, &e, &err), TW_OK);
  assert_int_equal(l, 300);
  assert_int_equal(e, 270);
}

static void ledger_refuses_updates_and_deletes(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_row r =
      mkrow("t", "p", "aws", "us-east-1", "j-a", T0, T0 + HOUR, 1000, 900);
  assert_int_equal(tw_ledger_append(store, &r, 1, T0, &err), TW_OK);
  assert_true(r.seq > 0);
  if (pg.on) {
    char m[512];
    assert_int_not_equal(
        tw_test_pg_try(&pg, "UPDATE ledger SET list_uusd = 0", m, sizeof m),
        TW_DB_OK);
    assert_non_null(strstr(m, "append-only"));
    assert_int_not_equal(
        tw_test_pg_try(&pg, "DELETE FROM ledger", m, sizeof m), TW_DB_OK);
    assert_non_null(strstr(m, "append-only"));
    return;
  }
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  assert_int_not_equal(
      sqlite3_exec(db, "UPDATE ledger SET list_uusd = 0", NULL, NULL, &msg),
      SQLITE_OK);
  assert_non_null(strstr(msg, "append-only"));
  sqlite3_free(msg);
  msg = NULL;
  assert_int_not_equal(sqlite3_exec(db, "DELETE FROM ledger", NULL, NULL, &msg),
                       SQLITE_OK);
  sqlite3_free(msg);
  sqlite3_close(db);

  /* a correction is a new row, in the same day and groups */
  struct tw_ledger_row adj;
  assert_int_equal(tw_ledger_adjust(store, r.seq, -400, -360, "price was wrong",
                                    T0 + 2 * HOUR, &adj, &err),
                   TW_OK);
  assert_int_equal(adj.category, TW_CHARGE_ADJUSTMENT);
  assert_true(adj.correction);
  assert_int_equal(adj.corrects_seq, r.seq);
  assert_true(adj.seq > r.seq);
  int64_t spent;
  assert_int_equal(
      tw_ledger_spent(store, "t", "p", T0, T0 + TW_DAY_MS, &spent, &err),
      TW_OK);
  assert_int_equal(spent, 900 - 360);
  assert_int_equal(tw_ledger_adjust(store, 999999, 1, 1, "x", T0, NULL, &err),
                   TW_E_NOTFOUND);
}

static void rows_that_cross_midnight_are_refused(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_row r[2] = {
      mkrow("t", "p", "aws", "r", "j", T0 + 2 * HOUR, T0 + 3 * HOUR, 1, 1),
      mkrow("t", "p", "aws", "r", "j", T0 + 23 * HOUR, T0 + 25 * HOUR, 1, 1)};
  assert_int_equal(tw_ledger_append(store, r, 2, T0, &err), TW_E_INVALID);
  assert_non_null(strstr(err.msg, "row 1"));
  int64_t count;
  assert_int_equal(tw_ledger_count(store, &count, &err), TW_OK);
  assert_int_equal(count, 0); /* nothing of the batch landed */
  /* ending exactly at midnight is the same day */
  r[1].end_ms = T0 + 24 * HOUR;
  assert_int_equal(tw_ledger_append(store, &r[1], 1, T0, &err), TW_OK);
}

static void market_combines_with_tenant_project_and_day_only(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_group *g = NULL;
  size_t n = 0;
  assert_int_equal(tw_ledger_sum(store, T0, T0 + TW_DAY_MS,
                                 TW_GROUP_MARKET | TW_GROUP_PROVIDER, NULL, &g,
                                 &n, &err),
                   TW_E_INVALID);
  assert_string_equal(err.field, "group_by");
  free(g);
}

static void group_by_words(void **state) {
  (void)state;
  unsigned m;
  struct tw_err err = {0};
  assert_int_equal(tw_ledger_group_parse("tenant,day,provider", &m, &err),
                   TW_OK);
  assert_int_equal(m, TW_GROUP_TENANT | TW_GROUP_DAY | TW_GROUP_PROVIDER);
  assert_int_equal(tw_ledger_group_parse("", &m, &err), TW_OK);
  assert_int_equal(m, 0);
  assert_int_equal(tw_ledger_group_parse("tenant,zone", &m, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(err.msg, "\"zone\""));
  assert_string_equal(err.field, "group_by");
}

static void budgets_are_replaced_whole(void **state) {
  (void)state;
  struct tw_err err = {0};
  struct tw_ledger_budget b[2] = {
      {.tenant = "ml", .limit_uusd = 5000000000},
      {.tenant = "ml", .project = "vision", .limit_uusd = 1}};
  assert_int_equal(tw_ledger_budgets_set(store, b, 2, &err), TW_OK);
  assert_int_equal(tw_ledger_budgets_set(store, b + 1, 1, &err), TW_OK);
  struct tw_ledger_budget *out;
  size_t n;
  assert_int_equal(tw_ledger_budgets_get(store, &out, &n, &err), TW_OK);
  assert_int_equal(n, 1);
  assert_string_equal(out[0].project, "vision");
  free(out);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_range_splits_a_row_by_time, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sums_over_any_range_equal_the_rows, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(day_groups_carry_the_day, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(ledger_refuses_updates_and_deletes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(rows_that_cross_midnight_are_refused,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(group_by_words, setup, teardown),
      cmocka_unit_test_setup_teardown(
          market_combines_with_tenant_project_and_day_only, setup, teardown),
      cmocka_unit_test_setup_teardown(budgets_are_replaced_whole, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
