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

static int failures;
#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);    \
      failures++;                                                              \
    }                                                                          \
  } while (0)

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

int main(void) {
  char fake[256];
  if (start_fake(fake, sizeof fake)) {
    printf("SKIPPED: tradewind-fakecloud is not built\n");
    return 77;
  }
  setenv("TW_TEST_SECRETS_KEY",
         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
  static const char base[] = "secrets: {key_env: TW_TEST_SECRETS_KEY}\n"
                             "scheduler: {tick_ms: 100}\n";
  struct twtest_daemon d;
  if (twtest_daemon_init(&d, base) || twtest_daemon_start(&d)) {
    fprintf(stderr, "cannot start tradewindd\n");
    kill(fake_pid, SIGTERM);
    return 1;
  }
  struct twtest_resp r;
  twtest_http(d.url, "PUT", "/v1/secrets/aws-ak", "application/json",
              "{\"value\":\"AKIDTRADEWINDFAKE\"}", &r);
  CHECK(r.status == 200 || r.status == 201);
  twtest_resp_release(&r);
  twtest_http(d.url, "PUT", "/v1/secrets/aws-sk", "application/json",
              "{\"value\":\"tradewind-fake-secret\"}", &r);
  CHECK(r.status == 200 || r.status == 201);
  twtest_resp_release(&r);
  /* listing shows names and key ids, never values */
  twtest_http(d.url, "GET", "/v1/secrets", NULL, NULL, &r);
  CHECK(r.status == 200 && strstr(r.body, "aws-sk") &&
        !strstr(r.body, "fake-secret"));
  twtest_resp_release(&r);
  CHECK(twtest_daemon_stop(&d, 10000) == 0);

  /* the provider names its credentials as sealed secrets */
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
  CHECK(twtest_daemon_write_config(&d, cfg) == 0);
  CHECK(twtest_daemon_start(&d) == 0);
  twtest_http(d.url, "POST", "/v1/jobs", "application/json",
              "{\"name\":\"sealed\",\"resources\":{\"cpus\":\"2+\"},"
              "\"duration\":\"1h\"}",
              &r);
  CHECK(r.status == 201);
  char id[64] = "";
  const char *p = strstr(r.body, "\"id\":\"");
  if (p)
    sscanf(p + 6, "%63[^\"]", id);
  twtest_resp_release(&r);
  /* launched means RunInstances passed the fake's signature check */
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
  CHECK(launched);
  CHECK(twtest_daemon_stop(&d, 10000) == 0);
  CHECK(twtest_daemon_log_count(&d, "tradewind-fake-secret") == 0);
  CHECK(twtest_daemon_log_count(&d, "AKIDTRADEWINDFAKE") == 0);

  /* a secret that is not there stops the start, naming the key */
  snprintf(
      cfg, sizeof cfg,
      "%sproviders:\n"
      "  - {name: aws-bad, type: aws, endpoint: %s, regions: [us-east-1],\n"
      "     access_key_secret: aws-ak, secret_key_secret: nope}\n",
      base, fake);
  CHECK(twtest_daemon_write_config(&d, cfg) == 0);
  CHECK(twtest_daemon_start(&d) != 0);
  CHECK(twtest_daemon_wait(&d, 10000) == 1);
  CHECK(twtest_daemon_log_count(&d, "secret_key_secret") >= 1);

  kill(fake_pid, SIGTERM);
  waitpid(fake_pid, NULL, 0);
  twtest_daemon_cleanup(&d, failures > 0);
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
