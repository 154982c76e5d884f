/* test_agent_wiring.c - the daemon's wiring of tradewind-agent's side
 * (broker/daemon.c, docs/agent.md): a provider with `agent: true` and
 * agents that fetch the binary refuses to start without agent.binary,
 * naming it; with it, GET /v1/agent/binary serves the file with its
 * SHA-256; `agent:` that is not a boolean is refused naming the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/mem.h"
#include "broker/daemon.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

extern const struct tw_provider_ops *const tw_adapters_test[];

static struct twtest_daemon dir; /* its temp dir and file names only */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

static enum tw_rc open_daemon(const char *config, struct tw_daemon **d,
                              struct tw_err *err) {
  write_file(dir.config, config);
  struct tw_daemon_opts o = {.config_path = dir.config,
                             .listen = "127.0.0.1:0",
                             .db = dir.db,
                             .adapters = tw_adapters_test};
  *d = NULL;
  return tw_daemon_new(&o, d, err);
}

static char sha_hdr[80];

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  (void)ud;
  size_t len = sz * n;
  static const char H[] = "x-tradewind-sha256:";
  if (len > sizeof H - 1 && !strncasecmp(p, H, sizeof H - 1)) {
    const char *v = p + sizeof H - 1;
    while (*v == ' ')
      v++;
    snprintf(sha_hdr, sizeof sha_hdr, "%.*s", (int)strcspn(v, "\r\n"), v);
  }
  return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(ud, p, sz * n);
  return sz * n;
}

static void the_binary_is_required_and_served_with_its_hash(void **state) {
  (void)state;
  char cfg[1024], bin[400];
  snprintf(bin, sizeof bin, "%s/tradewind-agent", dir.dir);
  snprintf(cfg, sizeof cfg,
           "log: {level: warn}\nreconcile: {interval_s: 0}\n"
           "auth: {mode: open}\n"
           "agent: {binary: %s}\n"
           "providers:\n  - {type: fake, name: lab, agent: true}\n",
           bin);
  struct tw_daemon *d = NULL;
  struct tw_err err = {0};
  /* no file there yet */
  assert_int_not_equal(open_daemon(cfg, &d, &err), TW_OK);
  TW_CHECK(strstr(err.msg, "agent.binary") != NULL, "refused with: %s",
           err.msg);
  assert_null(d);

  static const char BIN[] = "#!/bin/sh\necho an agent\n";
  write_file(bin, BIN);
  tw_err_clear(&err);
  if (open_daemon(cfg, &d, &err) || tw_daemon_start(d, &err))
    fail_msg("daemon: %s", err.msg);
  char url[128];
  snprintf(url, sizeof url, "%s/v1/agent/binary", tw_daemon_url(d));
  struct tw_buf body;
  tw_buf_init(&body);
  sha_hdr[0] = '\0';
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  assert_int_equal(curl_easy_perform(c), CURLE_OK);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  assert_int_equal(status, 200); /* the open mode's admin may fetch it */
  assert_int_equal(body.len, sizeof BIN - 1);
  assert_memory_equal(body.data, BIN, sizeof BIN - 1);
  unsigned char md[32];
  unsigned int mdlen = sizeof md;
  EVP_Digest(BIN, sizeof BIN - 1, md, &mdlen, EVP_sha256(), NULL);
  char want[65];
  for (int i = 0; i < 32; i++)
    snprintf(want + 2 * i, 3, "%02x", md[i]);
  assert_string_equal(sha_hdr, want);
  tw_buf_release(&body);
  tw_daemon_drain(d);
  tw_daemon_free(d);

  /* preinstalled agents need no binary */
  snprintf(cfg, sizeof cfg,
           "log: {level: warn}\nreconcile: {interval_s: 0}\n"
           "auth: {mode: open}\n"
           "agent: {install: preinstalled, binary: %s/none}\n"
           "providers:\n  - {type: fake, name: lab, agent: true}\n",
           dir.dir);
  tw_err_clear(&err);
  if (open_daemon(cfg, &d, &err))
    fail_msg("daemon (preinstalled): %s", err.msg);
  tw_daemon_free(d);
}

static void the_gate_is_a_boolean(void **state) {
  (void)state;
  struct tw_daemon *d = NULL;
  struct tw_err err = {0};
  assert_int_equal(open_daemon("log: {level: warn}\nauth: {mode: open}\n"
                               "providers:\n"
                               "  - {type: fake, name: lab, agent: maybe}\n",
                               &d, &err),
                   TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "agent: expected true or false, got maybe") != NULL,
           "refused with: %s", err.msg);
}

static int setup(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_ALL);
  return twtest_daemon_init(&dir, "log: {level: warn}\n") ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  twtest_daemon_cleanup(&dir, false);
  curl_global_cleanup();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_binary_is_required_and_served_with_its_hash),
      cmocka_unit_test(the_gate_is_a_boolean),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
