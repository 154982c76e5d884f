/* The daemon's placement policies: a bad `policies:` section stops the
 * start with its key named; SIGHUP validates the whole section first and
 * refuses it (nothing applied) or swaps it in; PUT /v1/policies names
 * network files inside the config file's policies.network_dir only, and
 * may not name a directory itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/twtest_daemon.h"

#define WAIT_MS 10000

static bool get_policies(struct twtest_daemon *d, const char *want) {
  struct twtest_resp r;
  bool ok = !twtest_http(d->url, "GET", "/v1/policies", NULL, NULL, &r) &&
            r.status == 200 && strstr(r.body, want) != NULL;
  if (!ok)
    fprintf(stderr, "GET /v1/policies (%ld), want %s: %s\n", r.status, want,
            r.body);
  twtest_resp_release(&r);
  return ok;
}

static void a_bad_section_stops_the_start(void **state) {
  (void)state;
  struct twtest_daemon d;
  if (twtest_daemon_init(&d,
                         "policies:\n  scores: [{name: cost, weight: -1}]\n"))
    skip();
  assert_int_not_equal(twtest_daemon_start(&d), 0);
  assert_int_equal(twtest_daemon_wait(&d, WAIT_MS), 1);
  assert_true(
      twtest_daemon_log_count(
          &d,
          "policies.scores[0].weight: must be between 0 and 1000000, got -1") >=
      1);
  twtest_daemon_cleanup(&d, false);
}

static void sighup_validates_then_swaps_the_whole_set(void **state) {
  (void)state;
  struct twtest_daemon d;
  if (twtest_daemon_init(&d, "policies:\n  candidates: 8\n"))
    skip();
  if (twtest_daemon_start(&d)) {
    twtest_daemon_cleanup(&d, true);
    fail_msg("tradewindd did not start");
  }
  assert_true(get_policies(&d, "\"reloads\":0"));
  assert_true(get_policies(&d, "\"candidates\":8"));
  /* a section with one bad key: refused whole, the good key too */
  assert_int_equal(
      twtest_daemon_write_config(
          &d, "policies:\n  candidates: 2\n  filters: [provider, residncy]\n"),
      0);
  twtest_daemon_signal(&d, SIGHUP);
  assert_true(twtest_daemon_wait_log(&d, "reload refused, nothing applied", 1,
                                     WAIT_MS));
  assert_true(twtest_daemon_log_count(
                  &d, "policies.filters[1]: unknown filter \"residncy\"") >= 1);
  assert_true(get_policies(&d, "\"reloads\":0"));
  assert_true(get_policies(&d, "\"candidates\":8"));
  /* a good one applies at once */
  assert_int_equal(
      twtest_daemon_write_config(
          &d,
          "policies:\n  candidates: 4\n  scores: [{name: cost, weight: 3}]\n"
          "  network_dir: .\n"),
      0);
  twtest_daemon_signal(&d, SIGHUP);
  assert_true(twtest_daemon_wait_log(&d, "configuration reloaded", 1, WAIT_MS));
  assert_true(get_policies(&d, "\"reloads\":1"));
  assert_true(get_policies(&d, "\"candidates\":4"));
  assert_true(
      get_policies(&d, "{\"name\":\"cost\",\"weight\":3,\"builtin\":true}"));
  /* PUT: a network file named inside policies.network_dir (the config
   * file's directory, as the config file says) */
  char net[400];
  snprintf(net, sizeof net, "%s/lab.net", d.dir);
  FILE *f = fopen(net, "w");
  fputs("tradewind-network 1\nregion aws:lab-1 lat=1 lon=1 jurisdiction=EU\n",
        f);
  fclose(f);
  struct twtest_resp r;
  assert_int_equal(twtest_http(d.url, "PUT", "/v1/policies", "application/yaml",
                               "network: lab.net\n", &r),
                   0);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body, "lab.net\",\"regions\":1"));
  twtest_resp_release(&r);
  assert_int_equal(twtest_http(d.url, "PUT", "/v1/policies", "application/yaml",
                               "network: missing.net\n", &r),
                   0);
  assert_int_equal(r.status, 400);
  assert_non_null(strstr(r.body, "\"field\":\"policies.network\""));
  twtest_resp_release(&r);
  /* a path, or a directory of the request's own: refused, nothing opened */
  static const char *const refused[][2] = {
      {"network: ../lab.net\n", "policies.network"},
      {"network: /etc/hostname\n", "policies.network"},
      {"network_dir: /etc\nnetwork: hostname\n", "policies.network_dir"},
      {"plugin_dir: /usr/lib\nscores: [{name: x, path: libc.so.6}]\n",
       "policies.plugin_dir"}};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    assert_int_equal(twtest_http(d.url, "PUT", "/v1/policies",
                                 "application/yaml", refused[i][0], &r),
                     0);
    assert_int_equal(r.status, 400);
    char want[96];
    snprintf(want, sizeof want, "\"field\":\"%s\"", refused[i][1]);
    if (!strstr(r.body, want))
      fail_msg("%s: %s", refused[i][0], r.body);
    twtest_resp_release(&r);
  }
  assert_true(get_policies(&d, "lab.net"));
  assert_true(get_policies(&d, "\"reloads\":2"));
  assert_int_equal(twtest_daemon_stop(&d, WAIT_MS), 0);
  twtest_daemon_cleanup(&d, false);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_bad_section_stops_the_start),
      cmocka_unit_test(sighup_validates_then_swaps_the_whole_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
