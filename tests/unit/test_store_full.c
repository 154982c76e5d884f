/* Store: a full disk.  The database is capped at its size with sqlite's
 * PRAGMA max_page_count (tw_store_test_cap_pages), so writes fail with a
 * real SQLITE_FULL from the pager, as on a full filesystem, without a
 * mount.  Checks that the failing write says TW_E_FULL, that the store
 * reports itself unhealthy from then until a write commits again, and
 * that every write acknowledged before, during and after is on disk.
 * Where the test may mount (root, as in CI), the same runs on a tmpfs of
 * 2 MiB in a mount namespace of its own, so the failure is the
 * filesystem's ENOSPC under the WAL; elsewhere that case is skipped with
 * the reason. */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "broker/core/store.h"
#include "tests/unit/tmp_store.h"

static char dir[64];
static char path[128];
static struct tw_clock clk;

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-full-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1764460800000); /* 2025-11-30T00:00:00Z */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_test_store_remove(path, dir);
  return 0;
}

static struct tw_store *open_store(void) {
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  assert_int_equal(tw_store_open(&o, &s, &err), TW_OK);
  return s;
}

/* A spec of about 1 KB, so a few jobs fill a page. */
static char spec[1100];

static enum tw_rc create(struct tw_store *s, int i, char *id_out,
                         struct tw_err *err) {
  char name[32], key[32];
  snprintf(name, sizeof name, "job-%d", i);
  snprintf(key, sizeof key, "key-%d", i);
  struct tw_job_new req = {.name = name,
                           .tenant = "t1",
                           .project = "p",
                           .spec_json = spec,
                           .idem_key = key};
  struct tw_job_rec rec;
  bool replayed = false;
  memset(err, 0, sizeof *err);
  enum tw_rc rc = tw_store_job_create(s, &req, &rec, &replayed, err);
  if (rc == TW_OK) {
    snprintf(id_out, TW_JOB_ID_LEN + 1, "%s", rec.id);
    tw_job_rec_release(&rec);
  }
  return rc;
}

static int64_t count_jobs(struct tw_store *s) {
  int64_t c[TW_JOB_NSTATES], total = 0;
  assert_int_equal(tw_store_job_counts(s, c, NULL), TW_OK);
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    total += c[i];
  return total;
}

static void full_disk_fails_writes_and_keeps_the_acknowledged(void **state) {
  (void)state;
  memset(spec, 0, sizeof spec);
  snprintf(spec, sizeof spec, "{\"pad\":\"%01000d\"}", 0);
  struct tw_store *s = open_store();
  static char ids[4096][TW_JOB_ID_LEN + 1];
  int acked = 0, i = 0;
  struct tw_err err;
  for (; i < 20; i++)
    assert_int_equal(create(s, i, ids[acked++], &err), TW_OK);
  assert_int_equal(tw_store_write_health(s, NULL), TW_OK);

  /* The disk fills: what fits in the pages already there still goes in,
   * then a write needs a page and fails. */
  assert_int_equal(tw_store_test_cap_pages(s, true, &err), TW_OK);
  enum tw_rc rc = TW_OK;
  for (; i < 4000 && rc == TW_OK; i++) {
    rc = create(s, i, ids[acked], &err);
    if (rc == TW_OK)
      acked++;
  }
  assert_int_equal(rc, TW_E_FULL);
  assert_int_equal(err.rc, TW_E_FULL);
  assert_non_null(strstr(err.msg, "the store's disk is full"));
  int64_t since = 0;
  assert_int_equal(tw_store_write_health(s, &since), TW_E_FULL);
  assert_true(since == tw_clock_now_ms(&clk));
  /* it stays so while writes keep failing */
  assert_int_equal(create(s, i++, ids[acked], &err), TW_E_FULL);
  assert_int_equal(tw_store_write_health(s, NULL), TW_E_FULL);
  assert_int_equal(count_jobs(s), acked);

  /* Space returns: the next write commits and the store is healthy. */
  assert_int_equal(tw_store_test_cap_pages(s, false, &err), TW_OK);
  assert_int_equal(create(s, i++, ids[acked++], &err), TW_OK);
  assert_int_equal(tw_store_write_health(s, NULL), TW_OK);
  tw_store_close(s);

  /* Every acknowledged job is on disk, and nothing else. */
  s = open_store();
  assert_int_equal(count_jobs(s), acked);
  for (int k = 0; k < acked; k++) {
    struct tw_job_rec rec;
    assert_int_equal(tw_store_job_get(s, ids[k], &rec, NULL), TW_OK);
    tw_job_rec_release(&rec);
  }
  tw_store_close(s);
}

/* The same on a real full filesystem: a small tmpfs, then a larger one.
 * Small, but with room for a new store's schema and its WAL (every
 * module's migrations) plus a few jobs. */
static void full_tmpfs_fails_writes_and_keeps_the_acknowledged(void **state) {
  (void)state;
  if (unshare(CLONE_NEWNS) ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
      mount("tmpfs", dir, "tmpfs", 0, "size=2m")) {
    char why[160];
    snprintf(why, sizeof why, "cannot mount a tmpfs here (%s): needs root",
             strerror(errno));
    print_message("SKIPPED: %s\n", why);
    skip();
  }
  memset(spec, 0, sizeof spec);
  snprintf(spec, sizeof spec, "{\"pad\":\"%01000d\"}", 0);
  struct tw_store *s = open_store();
  static char ids[4096][TW_JOB_ID_LEN + 1];
  int acked = 0, i = 0;
  struct tw_err err;
  enum tw_rc rc = TW_OK;
  for (; i < 4000 && rc == TW_OK; i++) {
    rc = create(s, i, ids[acked], &err);
    if (rc == TW_OK)
      acked++;
  }
  assert_int_equal(rc, TW_E_FULL);
  assert_non_null(strstr(err.msg, "the store's disk is full"));
  assert_int_equal(tw_store_write_health(s, NULL), TW_E_FULL);
  assert_true(acked > 0);
  assert_int_equal(count_jobs(s), acked);
  /* space returns */
  assert_int_equal(mount(NULL, dir, NULL, MS_REMOUNT, "size=16m"), 0);
  assert_int_equal(create(s, i++, ids[acked++], &err), TW_OK);
  assert_int_equal(tw_store_write_health(s, NULL), TW_OK);
  tw_store_close(s);
  s = open_store();
  assert_int_equal(count_jobs(s), acked);
  for (int k = 0; k < acked; k++) {
    struct tw_job_rec rec;
    assert_int_equal(tw_store_job_get(s, ids[k], &rec, NULL), TW_OK);
    tw_job_rec_release(&rec);
  }
  tw_store_close(s);
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int k = 0; k < 3; k++) {
    char p[160];
    snprintf(p, sizeof p, "%s%s", path, sfx[k]);
    unlink(p);
  }
  umount(dir);
}

/* Not ready until a write commits after the store is opened; the probe
 * is such a write, and it needs room: it fails on the full disk and
 * commits once space returns, with no job written in between. */
static void
a_store_is_ready_only_after_a_commit_and_a_probe_needs_room(void **state) {
  (void)state;
  memset(spec, 0, sizeof spec);
  snprintf(spec, sizeof spec, "{\"pad\":\"%01000d\"}", 0);
  struct tw_store *s = open_store();
  struct tw_store_health h;
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_STARTING);
  assert_int_equal(h.last_commit_ms, 0);
  /* a store that is not ready is probed; a ready one is not */
  struct tw_err err = {0};
  assert_true(tw_store_probe_if_unready(s, 1000));
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_OK);
  assert_int_equal(h.last_commit_ms, tw_clock_now_ms(&clk));
  assert_int_equal(h.consecutive_failures, 0);
  tw_clock_advance(&clk, 5000);
  assert_false(tw_store_probe_if_unready(s, 1000));

  static char ids[4096][TW_JOB_ID_LEN + 1];
  int acked = 0, i = 0;
  for (; i < 20; i++)
    assert_int_equal(create(s, i, ids[acked++], &err), TW_OK);
  assert_int_equal(tw_store_test_cap_pages(s, true, &err), TW_OK);
  enum tw_rc rc = TW_OK;
  for (; i < 4000 && rc == TW_OK; i++) {
    rc = create(s, i, ids[acked], &err);
    if (rc == TW_OK)
      acked++;
  }
  assert_int_equal(rc, TW_E_FULL);
  int64_t full_at = tw_clock_now_ms(&clk);
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_FULL);
  assert_int_equal(h.unhealthy_since_ms, full_at);
  assert_int_equal(h.consecutive_failures, 1);
  int64_t last_commit = h.last_commit_ms;
  assert_true(last_commit > 0);
  /* the probe finds the disk full too, and counts */
  tw_clock_advance(&clk, 1000);
  struct tw_err perr = {0};
  assert_int_equal(tw_store_probe(s, &perr), TW_E_FULL);
  assert_non_null(strstr(perr.msg, "probe"));
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_FULL);
  assert_int_equal(h.consecutive_failures, 2);
  assert_int_equal(h.last_commit_ms, last_commit); /* a failure is none */
  /* within the interval nobody probes; after it, the probe runs */
  assert_false(tw_store_probe_if_unready(s, 1000));
  tw_clock_advance(&clk, 1000);
  assert_true(tw_store_probe_if_unready(s, 1000));
  tw_store_health(s, &h);
  assert_int_equal(h.consecutive_failures, 3);

  /* space returns: a probe alone makes the store ready again (lifting the
   * cap is a PRAGMA that changes no row: it proves nothing) */
  assert_int_equal(tw_store_test_cap_pages(s, false, &err), TW_OK);
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_FULL);
  tw_clock_advance(&clk, 1000);
  assert_true(tw_store_probe_if_unready(s, 1000));
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_OK);
  assert_int_equal(h.unhealthy_since_ms, 0);
  assert_int_equal(h.consecutive_failures, 0);
  assert_int_equal(h.last_commit_ms, tw_clock_now_ms(&clk));
  assert_int_equal(count_jobs(s), acked); /* the probe keeps nothing */
  tw_store_close(s);

  /* a store opened again starts not ready */
  s = open_store();
  tw_store_health(s, &h);
  assert_int_equal(h.state, TW_STORE_STARTING);
  tw_store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          full_disk_fails_writes_and_keeps_the_acknowledged, setup, teardown),
      cmocka_unit_test_setup_teardown(
          full_tmpfs_fails_writes_and_keeps_the_acknowledged, setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_store_is_ready_only_after_a_commit_and_a_probe_needs_room, setup,
          teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
