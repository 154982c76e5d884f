/* test_store_workdirs.c - the tasks' working directories in the store
 * (broker/core/store_workdirs.h): an archive kept per tenant under its
 * hash, written once, held by the jobs that name it, and swept once no
 * job that has not ended holds it and it went unused.  On sqlite, or on
 * PostgreSQL with --backend=postgres (tests/unit/pg_store.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"
#include "broker/core/store_workdirs.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static char dir[64], path[128];
static struct tw_clock clk;
static struct tw_test_pg pg; /* on: the suite runs on PostgreSQL */

static const char SHA_A[] =
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char SHA_B[] =
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-store-wd-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1764460800000);
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

static void kept_held_and_swept(void **state) {
  (void)state;
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk};
  tw_test_pg_opts(&pg, &o);
  TW_CHECK_RC(tw_store_open(&o, &s, &err), TW_OK, err);
  const int64_t t0 = 1764460800000;
  bool created = false, found = false;
  int64_t size = 0;
  static const char data[] = "not really an archive: the API checks that";
  TW_CHECK_RC(tw_store_workdir_put(s, "t1", SHA_A, data, sizeof data, t0,
                                   &created, &err),
              TW_OK, err);
  TW_CHECK(created);
  /* the same again: not written, only marked used */
  TW_CHECK_RC(tw_store_workdir_put(s, "t1", SHA_A, data, sizeof data, t0 + 5,
                                   &created, &err),
              TW_OK, err);
  TW_CHECK(!created);
  TW_CHECK_RC(tw_store_workdir_has(s, "t1", SHA_A, &found, &size, &err), TW_OK,
              err);
  TW_CHECK(found);
  TW_CHECK_INT(size, (int64_t)sizeof data);
  /* another tenant has no such archive */
  TW_CHECK_RC(tw_store_workdir_has(s, "t2", SHA_A, &found, NULL, &err), TW_OK,
              err);
  TW_CHECK(!found);
  struct tw_buf b;
  tw_buf_init(&b);
  TW_CHECK_RC(tw_store_workdir_get(s, "t1", SHA_A, &b, &err), TW_OK, err);
  TW_CHECK_INT((int64_t)b.len, (int64_t)sizeof data);
  TW_CHECK(!memcmp(b.data, data, sizeof data));
  tw_buf_reset(&b);
  TW_CHECK_INT(tw_store_workdir_get(s, "t2", SHA_A, &b, &err), TW_E_NOTFOUND);
  tw_buf_release(&b);

  /* a job holds it: not swept, however old its last use */
  struct tw_job_new req = {.name = "j",
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = "{\"name\":\"j\"}"};
  struct tw_job_rec j;
  TW_CHECK_RC(tw_store_job_create(s, &req, &j, NULL, &err), TW_OK, err);
  TW_CHECK_INT(tw_store_workdir_hold(s, j.id, "t2", SHA_A, t0, &err),
               TW_E_NOTFOUND);
  TW_CHECK_RC(tw_store_workdir_hold(s, j.id, "t1", SHA_A, t0 + 10, &err), TW_OK,
              err);
  int64_t removed = -1;
  TW_CHECK_RC(tw_store_workdir_sweep(s, t0 + 1000000, &removed, &err), TW_OK,
              err);
  TW_CHECK_INT(removed, 0);
  TW_CHECK_RC(tw_store_workdir_has(s, "t1", SHA_A, &found, NULL, &err), TW_OK,
              err);
  TW_CHECK(found);

  /* an archive nobody holds, used recently: kept until it is old */
  TW_CHECK_RC(
      tw_store_workdir_put(s, "t1", SHA_B, "b", 1, t0 + 500, &created, &err),
      TW_OK, err);
  TW_CHECK_RC(tw_store_workdir_sweep(s, t0 + 400, &removed, &err), TW_OK, err);
  TW_CHECK_INT(removed, 0);
  TW_CHECK_RC(tw_store_workdir_sweep(s, t0 + 600, &removed, &err), TW_OK, err);
  TW_CHECK_INT(removed, 1);
  TW_CHECK_RC(tw_store_workdir_has(s, "t1", SHA_B, &found, NULL, &err), TW_OK,
              err);
  TW_CHECK(!found);

  /* the job ends: its archive goes at the next sweep */
  struct tw_job_transition t = {
      .id = j.id, .to = TW_JOB_CANCELLED, .reason = "test"};
  TW_CHECK_RC(tw_store_job_transition(s, &t, NULL, &err), TW_OK, err);
  TW_CHECK_RC(tw_store_workdir_sweep(s, t0 + 1000000, &removed, &err), TW_OK,
              err);
  TW_CHECK_INT(removed, 1);
  TW_CHECK_RC(tw_store_workdir_has(s, "t1", SHA_A, &found, NULL, &err), TW_OK,
              err);
  TW_CHECK(!found);
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
      cmocka_unit_test(kept_held_and_swept),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
