/* test_machine_api.c - the job's machine through the API of a running
 * tradewindd: without a `machine:` section a spec naming an image, disk or
 * ports is refused with a 400 problem naming the field; with one, what it
 * allows is accepted (and kept in the stored spec) and what it does not is
 * refused naming the field; a bad `machine:` stops the start.
 * SKIPPED when tradewindd is not built. */
#include "tests/twtest.h"

#include <jansson.h>
#include <sys/stat.h>

#include "tests/integration/twtest_daemon.h"

/* POSTs spec (YAML), returns the status; the problem's field into field. */
static long submit(const char *url, const char *spec, char *field, size_t cap) {
  struct twtest_resp r;
  TW_CHECK(twtest_http(url, "POST", "/v1/jobs", "application/yaml", spec, &r) ==
           0);
  long st = r.status;
  json_t *j = json_loadb(r.body, r.len, 0, NULL);
  const char *f = json_string_value(json_object_get(j, "field"));
  snprintf(field, cap, "%s", f ? f : "");
  json_decref(j);
  twtest_resp_release(&r);
  return st;
}

static void no_allow_list(void **state) {
  (void)state;
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, "auth: {mode: open}\n") == 0 &&
               twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  char f[64];
  TW_CHECK_INT(submit(d.url, "name: a\nimage: ami-0abc\n", f, sizeof f), 400);
  TW_CHECK_STR(f, "image");
  TW_CHECK_INT(submit(d.url, "name: a\nports: [22]\n", f, sizeof f), 400);
  TW_CHECK_STR(f, "ports[0]");
  TW_CHECK_INT(submit(d.url, "name: a\n", f, sizeof f), 201);
  twtest_daemon_cleanup(&d, tw_failures() != 0);
}

static void with_allow_list(void **state) {
  (void)state;
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(
               &d, "auth: {mode: open}\nmachine:\n  images: [\"ami-0*\"]\n"
                   "  disk_types: [gp3]\n  disk_max_gb: 500\n"
                   "  ports: [22, \"8000-8100\"]\n") == 0 &&
               twtest_daemon_start(&d) == 0,
           "tradewindd did not start");
  char f[64];
  TW_CHECK_INT(submit(d.url,
                      "name: ok\nimage: ami-0abc\ndisk: {size_gb: 200, type: "
                      "gp3}\nports: [8080, 22]\n",
                      f, sizeof f),
               201);
  TW_CHECK_INT(submit(d.url, "name: a\ndisk: {size_gb: 501}\n", f, sizeof f),
               400);
  TW_CHECK_STR(f, "disk.size_gb");
  TW_CHECK_INT(submit(d.url, "name: a\ndisk: {type: io2}\n", f, sizeof f), 400);
  TW_CHECK_STR(f, "disk.type");
  TW_CHECK_INT(submit(d.url, "name: a\nimage: debian-12\n", f, sizeof f), 400);
  TW_CHECK_STR(f, "image");
  /* plans are checked the same way */
  struct twtest_resp r;
  TW_CHECK(twtest_http(d.url, "POST", "/v1/plan", "application/yaml",
                       "name: a\nports: [9000]\n", &r) == 0);
  TW_CHECK_INT(r.status, 400);
  TW_CHECK(strstr(r.body, "ports[0]"), "%s", r.body);
  twtest_resp_release(&r);
  twtest_daemon_cleanup(&d, tw_failures() != 0);
}

static void bad_allow_list(void **state) {
  (void)state;
  struct twtest_daemon d;
  TW_CHECK(twtest_daemon_init(&d, "auth: {mode: open}\nmachine: {ports: "
                                  "[\"9-1\"]}\n") == 0);
  TW_CHECK(twtest_daemon_start(&d) != 0, "started with a bad machine:");
  char *log = twtest_daemon_log_read(&d);
  TW_CHECK(log && strstr(log, "machine.ports[0]"), "log: %s", log ? log : "");
  free(log);
  twtest_daemon_cleanup(&d, tw_failures() != 0);
}

int main(void) {
  struct stat st;
  if (stat(twtest_daemon_binary(), &st)) {
    printf("SKIPPED: tradewindd is not built\n");
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_allow_list),
      cmocka_unit_test(with_allow_list),
      cmocka_unit_test(bad_allow_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
