/* test_daemon_inprocess.c - the whole daemon in the test's own process
 * (broker/daemon.h): built from a config file on a temp dir and port 0,
 * a job submitted over HTTP, a reload applied and one refused, a drain and
 * a clean stop; then a second daemon on the same database finds the job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "broker/daemon.h"
#include "providers/registry.h"
#include "tests/integration/twtest_daemon.h"

static struct twtest_daemon dir; /* only its temp dir and file names */

static const char CONFIG[] = "log:\n"
                             "  level: warn\n"
                             "api:\n"
                             "  max_body_bytes: 65536\n"
                             "reconcile:\n"
                             "  interval_s: 0\n"
                             "auth:\n"
                             "  mode: open\n";

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

static struct tw_daemon *start(void) {
  struct tw_daemon_opts o = {.config_path = dir.config,
                             .listen = "127.0.0.1:0",
                             .db = dir.db,
                             .adapters = tw_adapters};
  struct tw_daemon *d = NULL;
  struct tw_err err = {0};
  if (tw_daemon_new(&o, &d, &err) || tw_daemon_start(d, &err))
    fail_msg("daemon: %s", err.msg);
  assert_true(tw_daemon_port(d) > 0);
  return d;
}

static json_t *call(struct tw_daemon *d, const char *method, const char *path,
                    const char *body, long want) {
  struct twtest_resp r;
  int rc = twtest_http(tw_daemon_url(d), method, path,
                       body ? "application/json" : NULL, body, &r);
  if (rc || r.status != want)
    fail_msg("%s %s: status %ld (%s), expected %ld: %.300s", method, path,
             r.status, r.error, want, r.body);
  json_t *j = r.len ? json_loads(r.body, 0, NULL) : NULL;
  twtest_resp_release(&r);
  return j;
}

static void a_daemon_runs_in_process_and_stops_cleanly(void **state) {
  (void)state;
  struct tw_daemon *d = start();
  char want_url[64];
  snprintf(want_url, sizeof want_url, "http://127.0.0.1:%d", tw_daemon_port(d));
  assert_string_equal(tw_daemon_url(d), want_url);
  json_decref(call(d, "GET", "/readyz", NULL, 200));

  json_t *job = call(d, "POST", "/v1/jobs",
                     "{\"name\":\"inproc\",\"resources\":{\"cpus\":2}}", 201);
  const char *id = json_string_value(json_object_get(job, "id"));
  assert_non_null(id);
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *got = call(d, "GET", path, NULL, 200);
  assert_string_equal(json_string_value(json_object_get(got, "name")),
                      "inproc");
  json_decref(got);

  /* A reload applies a reloadable key (a body over the new limit is
   * refused); a broken file is refused whole and the old limit stays. */
  char big[3000];
  snprintf(big, sizeof big,
           "{\"name\":\"big\",\"resources\":{\"cpus\":1},"
           "\"labels\":{\"pad\":\"%02000d\"}}",
           0);
  write_file(dir.config, "log:\n  level: warn\napi:\n  max_body_bytes: 1024\n"
                         "reconcile:\n  interval_s: 0\nauth:\n  mode: open\n");
  struct tw_err err = {0};
  assert_int_equal(tw_daemon_reload(d, &err), TW_OK);
  json_decref(call(d, "POST", "/v1/jobs", big, 413));
  write_file(dir.config, "api: [unclosed\n");
  assert_int_not_equal(tw_daemon_reload(d, &err), TW_OK);
  assert_true(err.msg[0] != '\0');
  json_decref(call(d, "POST", "/v1/jobs", big, 413));
  write_file(dir.config, CONFIG);

  tw_daemon_drain(d);
  tw_daemon_free(d);

  /* a second daemon on the same files: the job was stored, the store
   * closed cleanly, the port is free for another */
  d = start();
  got = call(d, "GET", path, NULL, 200);
  assert_string_equal(json_string_value(json_object_get(got, "id")), id);
  json_decref(got);
  json_decref(job);
  tw_daemon_free(d); /* without a drain first: free drains */
}

static void a_bad_config_fails_before_the_store_is_created(void **state) {
  (void)state;
  char bad[400];
  snprintf(bad, sizeof bad, "%s/bad.yaml", dir.dir);
  write_file(bad, "api:\n  max_body_bytes: -5\n");
  char db[400];
  snprintf(db, sizeof db, "%s/never.db", dir.dir);
  struct tw_daemon_opts o = {.config_path = bad,
                             .listen = "127.0.0.1:0",
                             .db = db,
                             .adapters = tw_adapters};
  struct tw_daemon *d = NULL;
  struct tw_err err = {0};
  assert_int_not_equal(tw_daemon_new(&o, &d, &err), TW_OK);
  assert_null(d);
  assert_non_null(strstr(err.msg, "max_body_bytes"));
  assert_int_not_equal(access(db, F_OK), 0);
  unlink(bad);
}

static int setup(void **state) {
  (void)state;
  signal(SIGPIPE, SIG_IGN);
  if (twtest_daemon_init(&dir, CONFIG))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  twtest_daemon_cleanup(&dir, false);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_daemon_runs_in_process_and_stops_cleanly),
      cmocka_unit_test(a_bad_config_fails_before_the_store_is_created),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
