/* test_fakecloud_cli.c - the tradewind-fakecloud binary itself: --help,
 * bad flags, port 0 with the `listening` line, a fault schedule file that
 * is loaded at start and reloaded by /_fake/reset, and a clean exit on
 * SIGTERM.  argv[1] is the binary. */
#include <errno.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"

static const char *bin;

/* Runs bin with args, stdout into *out; returns the exit status. */
static int run(char *const argv[], struct tw_buf *out) {
  int fd[2];
  if (pipe(fd))
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execv(bin, argv);
    _exit(127);
  }
  close(fd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd[0], buf, sizeof buf)) > 0)
    tw_buf_add(out, buf, (size_t)n);
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  tw_buf_add(ud, p, s * n);
  return s * n;
}

static long http(const char *method, const char *url, struct tw_buf *body) {
  CURL *c = curl_easy_init();
  long status = 0;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (!strcmp(method, "POST"))
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

/* --help, bad flags, port 0, the fault file and SIGTERM. */
static void command_line(void **state) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct tw_buf out;
  tw_buf_init(&out);
  char *help[] = {"tradewind-fakecloud", "--help", NULL};
  TW_CHECK(run(help, &out) == 0, "--help exit");
  static const char *const must[] = {"--listen",
                                     "--seed",
                                     "--catalog",
                                     "--clock-speed",
                                     "--faults",
                                     "--credentials",
                                     "AKIDTRADEWINDFAKE",
                                     "tradewind-fake-secret",
                                     "/_fake/clock",
                                     "/_fake/faults",
                                     "/_fake/reset",
                                     "/_fake/ec2/state",
                                     "spot/instance-action",
                                     "events/recommendations/rebalance",
                                     NULL};
  for (const char *const *m = must; *m; m++)
    TW_CHECK(out.data && strstr(out.data, *m), "--help mentions %s", *m);
  tw_buf_reset(&out);
  char *badflag[] = {"tradewind-fakecloud", "--colour", "red", NULL};
  TW_CHECK(run(badflag, &out) == 2, "unknown flag exits 2");
  char *badspeed[] = {"tradewind-fakecloud", "--clock-speed", "fast", NULL};
  TW_CHECK(run(badspeed, &out) == 2, "bad speed exits 2");

  char faults[] = "/tmp/fakecloud-faults-XXXXXX";
  int fd = mkstemp(faults);
  const char *rules = "{\"faults\":[{\"kind\":\"throttle\",\"count\":1}]}";
  TW_CHECK(fd >= 0 && write(fd, rules, strlen(rules)) == (ssize_t)strlen(rules),
           "write faults");
  close(fd);
  char *missing[] = {"tradewind-fakecloud", "--faults", "/nonexistent.json",
                     NULL};
  TW_CHECK(run(missing, &out) == 1, "unreadable fault file exits 1");

  /* Port 0: the first line names the port; the server answers there. */
  int pfd[2];
  TW_CHECK(pipe(pfd) == 0, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 1);
    close(pfd[0]);
    close(pfd[1]);
    execl(bin, "tradewind-fakecloud", "--listen", "127.0.0.1:0", "--seed", "3",
          "--faults", faults, (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  FILE *f = fdopen(pfd[0], "r");
  char line[128] = "";
  TW_CHECK(fgets(line, sizeof line, f) != NULL, "a first line");
  unsigned port = 0;
  TW_CHECK(sscanf(line, "listening http://127.0.0.1:%u\n", &port) == 1 &&
               port > 0,
           "line: %s", line);
  char url[128];
  struct tw_buf body;
  tw_buf_init(&body);
  snprintf(url, sizeof url, "http://127.0.0.1:%u/_fake/health", port);
  TW_CHECK(http("GET", url, &body) == 200 && strstr(body.data, "\"ok\":true"),
           "health");
  tw_buf_reset(&body);
  snprintf(url, sizeof url, "http://127.0.0.1:%u/_fake/faults", port);
  TW_CHECK(http("GET", url, &body) == 200 &&
               strstr(body.data, "\"kind\":\"throttle\""),
           "schedule loaded: %s", body.data);
  tw_buf_reset(&body);
  TW_CHECK(http("DELETE", url, &body) == 200, "clear");
  tw_buf_reset(&body);
  snprintf(url, sizeof url, "http://127.0.0.1:%u/_fake/reset", port);
  TW_CHECK(http("POST", url, &body) == 200, "reset");
  tw_buf_reset(&body);
  snprintf(url, sizeof url, "http://127.0.0.1:%u/_fake/faults", port);
  TW_CHECK(http("GET", url, &body) == 200 &&
               strstr(body.data, "\"kind\":\"throttle\""),
           "reset reloads the schedule: %s", body.data);
  tw_buf_release(&body);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  TW_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean exit on SIGTERM");
  fclose(f);
  unlink(faults);
  tw_buf_release(&out);
  curl_global_cleanup();
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_fakecloud_cli PATH-TO-tradewind-fakecloud\n");
    return 2;
  }
  bin = argv[1];
  const struct CMUnitTest tests[] = {cmocka_unit_test(command_line)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
