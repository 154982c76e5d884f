/* twtest_fakecloud.c - see twtest_fakecloud.h. */
#include "tests/integration/twtest_fakecloud.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker/base/mem.h"

#ifndef TW_FAKECLOUD_PATH
#define TW_FAKECLOUD_PATH "tradewind-fakecloud"
#endif

char twtest_fake_url[64];

static pid_t fake_pid;
static const char *fake_cainfo;

void twtest_fake_stop(void) {
  if (fake_pid > 0) {
    kill(fake_pid, SIGTERM);
    waitpid(fake_pid, NULL, 0);
    fake_pid = 0;
  }
}

bool twtest_fake_start(const char *const extra_args[]) {
  const char *argv[48] = {
      "tradewind-fakecloud", "--listen", "127.0.0.1:0", "--seed", "7",
      "--clock-speed",       "0"};
  size_t n = 7;
  for (size_t i = 0; extra_args && extra_args[i]; i++) {
    if (n + 1 >= sizeof argv / sizeof argv[0])
      return false;
    argv[n++] = extra_args[i];
  }
  argv[n] = NULL;
  int fds[2];
  if (pipe(fds))
    return false;
  fake_pid = fork();
  if (fake_pid < 0)
    return false;
  if (fake_pid == 0) {
    /* Dies with the test, even when the test crashes. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv(TW_FAKECLOUD_PATH, (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[256] = "";
  bool ok = f && fgets(line, sizeof line, f) &&
            sscanf(line, "listening %63s", twtest_fake_url) == 1;
  /* Keep the pipe open (the fake may write more); it closes with us. */
  if (!ok) {
    fprintf(stderr, "fakecloud did not start: \"%s\"\n", line);
    twtest_fake_stop();
  }
  return ok;
}

void twtest_fake_set_cainfo(const char *path) { fake_cainfo = path; }

static size_t collect(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

json_t *twtest_fake_ctl(const char *method, const char *path,
                        const char *body) {
  CURL *c = curl_easy_init();
  struct tw_buf b;
  tw_buf_init(&b);
  char url[256];
  snprintf(url, sizeof url, "%s%s", twtest_fake_url, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  if (fake_cainfo)
    curl_easy_setopt(c, CURLOPT_CAINFO, fake_cainfo);
  struct curl_slist *h = NULL;
  if (body) {
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  }
  CURLcode cc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  json_t *j = NULL;
  if (cc == CURLE_OK && b.data)
    j = json_loads(b.data, 0, NULL);
  if (cc != CURLE_OK || status >= 300)
    fprintf(stderr, "control %s %s: curl %d HTTP %ld %s\n", method, path,
            (int)cc, status, b.data ? b.data : "");
  tw_buf_release(&b);
  return j;
}

void twtest_fake_ctl_ok(const char *method, const char *path,
                        const char *body) {
  json_t *j = twtest_fake_ctl(method, path, body);
  TW_CHECK(j != NULL, "%s %s", method, path);
  json_decref(j);
}

void twtest_fake_advance(int64_t ms) {
  char body[64];
  snprintf(body, sizeof body, "{\"advance_ms\": %lld}", (long long)ms);
  twtest_fake_ctl_ok("POST", "/_fake/clock", body);
}

void twtest_fake_add_fault(const char *rule) {
  twtest_fake_ctl_ok("POST", "/_fake/faults", rule);
}

void twtest_fake_clear_faults(void) {
  twtest_fake_ctl_ok("DELETE", "/_fake/faults", NULL);
}

long twtest_fake_calls(const char *state_path, const char *action) {
  json_t *s = twtest_fake_ctl("GET", state_path, NULL);
  long n = (long)json_integer_value(
      json_object_get(json_object_get(s, "calls"), action));
  json_decref(s);
  return n;
}
