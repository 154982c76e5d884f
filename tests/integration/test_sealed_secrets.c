/* Provider credentials as sealed secrets: stored through the API under an
 * AES-256-GCM key, named by the provider's config (`<base>_secret`), opened
 * at start, and good enough for the fake EC2, which checks every
 * signature.  The values never reach the log; a missing secret stops the
 * start with the key named. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

static pid_t fake_pid;

/* Starts tradewind-fakecloud on port 0 and copies its URL. */
static int start_fake(char *url, size_t urlsz) {
  const char *bin_dir = getenv("TW_BINARY_DIR");
  char bin[1024];
  snprintf(bin, sizeof bin, "%s/tests/tradewind-fakecloud",
           bin_dir ? bin_dir : ".");
  if (access(bin, X_OK))
    return -1;
  int pfd[2];
  if (pipe(pfd))
    return -1;
  fake_pid = fork();
  if (fake_pid == 0) {
    dup2(pfd[1], 1);
    close(pfd[0]);
    execl(bin, bin, "--listen", "127.0.0.1:0", "--seed", "3", "--pending-ms",
          "500", (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  char line[256];
  size_t n = 0;
  while (n + 1 < sizeof line && read(pfd[0], line + n, 1) == 1 &&
         line[n] != '\n')
    n++;
  line[n] = '\0';
  close(pfd[0]);
  if (strncmp(line, "listening ", 10))
    return -1;
  snprintf(url, urlsz, "%s", line + 10);
  return 0;
}

static char fake[256];
static struct twtest_daemon d;
static const char base[] = "secrets: {key_env: TW_TEST_SECRETS_KEY}\n"
                           "scheduler: {tick_ms: 100}\n";

/* The secrets go in through the API; listing shows names and key ids,
 * never values. */
static void secrets_are_stored_and_listed_without_values(void **state) {
  (void)state;
  struct twtest_resp r;
  twtest_http(d.url, "PUT", "/v1/secrets/aws-ak", "application/json",
              "{\"value\":\"AKIDTRADEWINDFAKE\"}", &r);
  TW_CHECK(r.status == 200 || r.status == 201, "status %ld", r.status);
  twtest_resp_release(&r);
  twtest_http(d.url, "PUT", "/v1/secrets/aws-sk", "application/json",
              "{\"value\":\"tradewind-fake-secret\"}", &r);
  TW_CHECK(r.status == 200 || r.status == 201, "status %ld", r.status);
  twtest_resp_release(&r);
  twtest_http(d.url, "GET", "/v1/secrets", NULL, NULL, &r);
  TW_CHECK(r.status == 200 && strstr(r.body, "aws-sk") &&
               !strstr(r.body, "fake-secret"),
           "%ld %s", r.status, r.body);
  twtest_resp_release(&r);
  TW_CHECK(twtest_daemon_stop(&d, 10000) == 0);
}

/* The provider names its credentials as sealed secrets; a launch means
 * RunInstances passed the fake's signature check. */
static void provider_signs_with_sealed_secrets(void **state) {
  (void)state;
  char cfg[2048];
  snprintf(cfg, sizeof cfg,
           "%sproviders:\n"
           "  - name: aws-sealed\n"
           "    type: aws\n"
           "    endpoint: %s\n"
           "    regions: [us-east-1]\n"
           "    image: ami-0123456789abcdef0\n"
           "    access_key_secret: aws-ak\n"
           "    secret_key_secret: aws-sk\n",
           base, fake);
  TW_CHECK(twtest_daemon_write_config(&d, cfg) == 0);
  TW_CHECK(twtest_daemon_start(&d) == 0);
  struct twtest_resp r;
  twtest_http(d.url, "POST", "/v1/jobs", "application/json",
              "{\"name\":\"sealed\",\"resources\":{\"cpus\":\"2+\"},"
              "\"duration\":\"1h\"}",
              &r);
  long status = r.status;
  char id[64] = "";
  const char *p = strstr(r.body, "\"id\":\"");
  if (p)
    sscanf(p + 6, "%63[^\"]", id);
  twtest_resp_release(&r);
  TW_CHECK(status == 201, "status %ld", status);
  bool launched = false;
  for (int i = 0; i < 100 && !launched && id[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    twtest_http(d.url, "GET", path, NULL, NULL, &r);
    launched = strstr(r.body, "\"state\":\"provisioning\"") ||
               strstr(r.body, "\"state\":\"running\"");
    twtest_resp_release(&r);
    if (!launched)
      usleep(100000);
  }
  TW_CHECK(launched);
  TW_CHECK(twtest_daemon_stop(&d, 10000) == 0);
  TW_CHECK(twtest_daemon_log_count(&d, "tradewind-fake-secret") == 0);
  TW_CHECK(twtest_daemon_log_count(&d, "AKIDTRADEWINDFAKE") == 0);
}

/* A secret that is not there stops the start, naming the key. */
static void missing_secret_stops_the_start(void **state) {
  (void)state;
  char cfg[2048];
  snprintf(
      cfg, sizeof cfg,
      "%sproviders:\n"
      "  - {name: aws-bad, type: aws, endpoint: %s, regions: [us-east-1],\n"
      "     access_key_secret: aws-ak, secret_key_secret: nope}\n",
      base, fake);
  TW_CHECK(twtest_daemon_write_config(&d, cfg) == 0);
  TW_CHECK(twtest_daemon_start(&d) != 0);
  TW_CHECK(twtest_daemon_wait(&d, 10000) == 1);
  TW_CHECK(twtest_daemon_log_count(&d, "secret_key_secret") >= 1);
}

static int setup(void **state) {
  (void)state;
  setenv("TW_TEST_SECRETS_KEY",
         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
  if (twtest_daemon_init(&d, base) || twtest_daemon_start(&d)) {
    fprintf(stderr, "cannot start tradewindd\n");
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  twtest_daemon_cleanup(&d, tw_failures() > 0);
  return 0;
}

int main(void) {
  if (start_fake(fake, sizeof fake)) {
    printf("SKIPPED: tradewind-fakecloud is not built\n");
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(secrets_are_stored_and_listed_without_values),
      cmocka_unit_test(provider_signs_with_sealed_secrets),
      cmocka_unit_test(missing_secret_stops_the_start),
  };
  int rc = cmocka_run_group_tests(tests, setup, teardown);
  kill(fake_pid, SIGTERM);
  waitpid(fake_pid, NULL, 0);
  return rc;
}
