/* --cacert and TRADEWIND_CACERT: the option and the variable are parsed
 * and checked (a missing, empty or unreadable file is a usage error that
 * names its source), listed in the help, and the file reaches libcurl.
 *
 * That last part is seen from outside: an https:// URL with a CA file that
 * holds no certificate makes libcurl fail while loading that file, and its
 * message names the file; without a CA file, against the scripted (plain
 * HTTP) fake server, the failure is the TLS handshake's and names none.
 * libcurl (7.88 with OpenSSL) loads the CA file lazily, after it has sent
 * its ClientHello: a server that answered at once could make the handshake
 * fail before the file is read, so the rows with a CA file go to a socket
 * that listens and never answers.
 * Plain http:// is unaffected by a CA file.  The daemon over real TLS is
 * tests/integration/test_tls.c. */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "broker/base/clock.h"
#include "cli/cli.h"
#include "tests/unit/test_cli_fake.h"

static struct tw_clock clk;
static char dir[64], bad1[128], bad2[128], empty[128], good[128];

struct result {
  int code;
  char *out, *err;
};

static struct result last;

static void no_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  tw_clock_advance(&clk, ms);
}

/* Runs tradewind with args (NULL-terminated), url and cacert standing for
 * TRADEWIND_URL and TRADEWIND_CACERT (NULL: unset). */
static struct result *run(const char *url, const char *cacert,
                          const char *const *args) {
  char *argv[32];
  int argc = 0;
  size_t outlen, errlen;
  free(last.out);
  free(last.err);
  memset(&last, 0, sizeof last);
  argv[argc++] = "tradewind";
  for (size_t i = 0; args[i] && argc < 31; i++)
    argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  FILE *out = open_memstream(&last.out, &outlen);
  FILE *err = open_memstream(&last.err, &errlen);
  FILE *in = fopen("/dev/null", "r");
  struct tw_cli_io io = {.out = out,
                         .err = err,
                         .in = in,
                         .env_url = url,
                         .env_cacert = cacert,
                         .clock = &clk,
                         .sleep_ms = no_sleep};
  last.code = tw_cli_run(argc, argv, &io);
  fclose(out);
  fclose(err);
  fclose(in);
  return &last;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state) {
  tw_clock_fake_init(&clk, 1795997400000LL);
  snprintf(dir, sizeof dir, "/tmp/tw-cacert-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(bad1, sizeof bad1, "%s/one.pem", dir);
  snprintf(bad2, sizeof bad2, "%s/two.pem", dir);
  snprintf(empty, sizeof empty, "%s/empty.pem", dir);
  snprintf(good, sizeof good, "%s/any.pem", dir);
  write_file(bad1, "not a certificate\n");
  write_file(bad2, "not one either\n");
  write_file(empty, "");
  /* for http:// the content is never read */
  write_file(good, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
  *state = fake_start();
  return 0;
}

static int teardown(void **state) {
  fake_stop(*state);
  unlink(bad1);
  unlink(bad2);
  unlink(empty);
  unlink(good);
  rmdir(dir);
  free(last.out);
  free(last.err);
  memset(&last, 0, sizeof last);
  return 0;
}

static void help_lists_the_option_and_the_variable(void **state) {
  (void)state;
  struct result *r = run(NULL, NULL, ARGS("--help"));
  assert_int_equal(r->code, TW_EXIT_OK);
  assert_non_null(strstr(r->out, "--cacert FILE"));
  assert_non_null(strstr(r->out, "$TRADEWIND_CACERT"));
  r = run(NULL, NULL, ARGS("jobs", "list", "--help"));
  assert_int_equal(r->code, TW_EXIT_OK);
  assert_non_null(strstr(r->out, "--cacert"));
}

static void bad_files_are_usage_errors(void **state) {
  struct fake_srv *srv = *state;
  struct {
    const char *env;  /* TRADEWIND_CACERT */
    const char *flag; /* --cacert, NULL: none */
    const char *want; /* in stderr */
  } rows[] = {
      {NULL, "/nonexistent/ca.pem",
       "--cacert: cannot read \"/nonexistent/ca.pem\""},
      {"/nonexistent/ca.pem", NULL,
       "TRADEWIND_CACERT: cannot read \"/nonexistent/ca.pem\""},
      {NULL, dir, "Is a directory"},
      {NULL, empty, "is empty"},
      {NULL, "", "--cacert: expected a file"},
      /* the flag overrides the variable, a bad one included */
      {good, "/nonexistent/x.pem", "--cacert: cannot read"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct result *r =
        rows[i].flag ? run(fake_url(srv), rows[i].env,
                           ARGS("jobs", "list", "--cacert", rows[i].flag))
                     : run(fake_url(srv), rows[i].env, ARGS("jobs", "list"));
    if (r->code != TW_EXIT_USAGE || !strstr(r->err, rows[i].want))
      fail_msg("row %zu: exit %d, stderr %s (want \"%s\")", i, r->code, r->err,
               rows[i].want);
  }
  /* the option needs its argument */
  struct result *r = run(fake_url(srv), NULL, ARGS("jobs", "list", "--cacert"));
  assert_int_equal(r->code, TW_EXIT_USAGE);
  /* nothing was sent for any of them */
  assert_int_equal(fake_nreq(srv), 0);
}

static void plain_http_is_unaffected(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, "{\"items\":[],\"next_cursor\":null}");
  fake_json(srv, "{\"items\":[],\"next_cursor\":null}");
  struct result *r =
      run(fake_url(srv), NULL, ARGS("--cacert", good, "jobs", "list"));
  assert_int_equal(r->code, TW_EXIT_OK);
  r = run(fake_url(srv), good, ARGS("jobs", "list"));
  assert_int_equal(r->code, TW_EXIT_OK);
  assert_int_equal(fake_nreq(srv), 2);
}

/* A TCP listener on 127.0.0.1 that never accepts: the kernel completes the
 * connections, nothing ever answers.  Returns the socket; *port is set. */
static int silent_listener(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 16), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

static void the_file_reaches_libcurl(void **state) {
  struct fake_srv *srv = *state;
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  if (!v->ssl_version || strncmp(v->ssl_version, "OpenSSL", 7)) {
    printf("SKIPPED: libcurl's TLS is %s, whose messages may not name the CA "
           "file\n",
           v->ssl_version ? v->ssl_version : "absent");
    skip();
  }
  char https[128], silent[64];
  snprintf(https, sizeof https, "https://%s",
           fake_url(srv) + strlen("http://"));
  int port, lfd = silent_listener(&port);
  snprintf(silent, sizeof silent, "https://127.0.0.1:%d", port);
  struct {
    const char *env, *flag;
    const char *want, *not_want; /* in stderr */
  } rows[] = {
      /* no CA file: the handshake fails, no file named */
      {NULL, NULL, "cannot reach https://", ".pem"},
      {NULL, bad1, bad1, bad2},
      {bad2, NULL, bad2, bad1},
      {bad2, bad1, bad1, bad2}, /* the flag wins */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *url = rows[i].env || rows[i].flag ? silent : https;
    struct result *r = rows[i].flag
                           ? run(url, rows[i].env,
                                 ARGS("--cacert", rows[i].flag, "jobs", "list"))
                           : run(url, rows[i].env, ARGS("jobs", "list"));
    if (r->code != TW_EXIT_UNREACHABLE || !strstr(r->err, rows[i].want) ||
        strstr(r->err, rows[i].not_want))
      fail_msg("row %zu: exit %d, stderr %s (want \"%s\", not \"%s\")", i,
               r->code, r->err, rows[i].want, rows[i].not_want);
  }
  close(lfd);
}

int main(void) {
  /* as the program does (cli/main.c): a peer closing mid-write is an
   * error, not a signal */
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(help_lists_the_option_and_the_variable),
      cmocka_unit_test_setup_teardown(bad_files_are_usage_errors, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(plain_http_is_unaffected, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_file_reaches_libcurl, setup,
                                      teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  curl_global_cleanup();
  return rc;
}
