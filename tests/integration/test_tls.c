/* The API over TLS from a configured certificate.
 *
 * Makes a self-signed P-256 certificate for 127.0.0.1 (OpenSSL), starts
 * the server with it (TLS ended by the front door, OpenSSL) and checks that a client
 * trusting that certificate gets its answers over HTTPS with a token, that
 * plain HTTP to the same port gets nothing, that a client trusting nothing
 * refuses the server, and that half a TLS configuration or a file that is
 * not PEM stops the start with a reason.  With the tradewind binary's path
 * (TW_CLI_BIN), runs it against the server: trusting the certificate by
 * --cacert or TRADEWIND_CACERT it gets answers; trusting only the
 * system's store it is refused.  A key that is not the certificate's
 * stops the start too. */
#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/log.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "tests/twtest.h"

static char dir[64], certf[128], keyf[128], tokfile[128];
static struct tw_store *store;
static struct tw_tenancy *ten;
static struct tw_api *api;
static char tok[TW_TOKEN_LEN + 2];

static int make_cert(void) {
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  if (!key || !x)
    return -1;
  X509_set_version(x, 2); /* v3: extensions follow */
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24);
  X509_set_pubkey(x, key);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)"127.0.0.1", -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
  X509_EXTENSION *san =
      X509V3_EXT_nconf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
  X509_EXTENSION *bc = X509V3_EXT_nconf_nid(NULL, &ctx, NID_basic_constraints,
                                            "critical,CA:TRUE");
  X509_add_ext(x, san, -1);
  X509_add_ext(x, bc, -1);
  X509_EXTENSION_free(san);
  X509_EXTENSION_free(bc);
  if (!X509_sign(x, key, EVP_sha256()))
    return -1;
  FILE *f = fopen(certf, "w");
  PEM_write_X509(f, x);
  fclose(f);
  f = fopen(keyf, "w");
  PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
  fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
  return 0;
}

struct resp {
  long status;
  char body[4096];
  size_t len;
  CURLcode rc;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t k = sz * n, room = sizeof r->body - 1 - r->len;
  memcpy(r->body + r->len, p, k < room ? k : room);
  r->len += k < room ? k : room;
  r->body[r->len] = '\0';
  return sz * n;
}

static struct resp get(const char *url, const char *token, const char *ca) {
  struct resp r;
  memset(&r, 0, sizeof r);
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  char auth[128];
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  if (ca)
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  else
    curl_easy_setopt(c, CURLOPT_CAINFO, "/dev/null");
  curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
  r.rc = curl_easy_perform(c);
  if (r.rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

#ifdef TW_CLI_BIN
static char outf[128];

/* Runs the CLI with argv[1..] and exactly the environment env (no HOME,
 * no CURL_CA_BUNDLE: nothing else may make it trust the certificate);
 * stdout and stderr go to outf.  Returns the exit code, -1 when it died. */
static int run_cli(const char *const *args, char *const *env) {
  char *argv[16];
  int argc = 0;
  argv[argc++] = (char *)TW_CLI_BIN;
  for (size_t i = 0; args[i] && argc < 15; i++)
    argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
      _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    execve(TW_CLI_BIN, argv, env);
    _exit(127);
  }
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static const char *cli_output(void) {
  static char buf[2048];
  FILE *f = fopen(outf, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
  return buf;
}

static void cli_checks(int port, const char *token_value) {
  char url[96], token[TW_TOKEN_LEN + 24], cacert[160];
  snprintf(outf, sizeof outf, "%s/cli.out", dir);
  snprintf(url, sizeof url, "TRADEWIND_URL=https://127.0.0.1:%d", port);
  snprintf(token, sizeof token, "TRADEWIND_TOKEN=%s", token_value);
  snprintf(cacert, sizeof cacert, "TRADEWIND_CACERT=%s", certf);
  char *plain[] = {url, token, NULL};
  char *with_ca[] = {url, token, cacert, NULL};
  const char *list[] = {"jobs", "list", "-o", "json", NULL};
  const char *flag[] = {"--cacert", certf, "jobs", "list", "-o", "json", NULL};
  int code = run_cli(flag, plain);
  TW_CHECK(code == 0 && strstr(cli_output(), "["), "cli --cacert: exit %d: %s",
           code, cli_output());
  code = run_cli(list, with_ca);
  TW_CHECK(code == 0, "cli with TRADEWIND_CACERT: exit %d: %s", code,
           cli_output());
  code = run_cli(list, plain);
  TW_CHECK(code == 3 && strstr(cli_output(), "cannot reach https://"),
           "cli trusting the system's store: exit %d: %s", code, cli_output());
  /* the certificate is for 127.0.0.1: another name for the host fails */
  char local[96];
  snprintf(local, sizeof local, "https://localhost:%d", port);
  const char *byname[] = {"--url", local,  "--cacert", certf,
                          "jobs",  "list", NULL};
  code = run_cli(byname, plain);
  TW_CHECK(code == 3, "cli to a name the certificate lacks: exit %d: %s", code,
           cli_output());
  unlink(outf);
}
#endif

/* Answers over HTTPS with a token to a client trusting the certificate;
 * without a token 401. */
static void https_with_the_certificate(void **state) {
  char https[128];
  snprintf(https, sizeof https, "https://127.0.0.1:%d/v1/whoami",
           tw_api_port(api));
  struct resp r = get(https, tok, certf);
  TW_CHECK(r.rc == CURLE_OK && r.status == 200 &&
               strstr(r.body, "\"role\":\"admin\""),
           "https with the certificate: curl %d status %ld %s", r.rc, r.status,
           r.body);
  r = get(https, NULL, certf);
  TW_CHECK(r.rc == CURLE_OK && r.status == 401, "https without a token: %ld",
           r.status);
}

/* A client trusting nothing refuses the server; plain HTTP to the same
 * port gets nothing. */
static void untrusted_or_plain_get_nothing(void **state) {
  char https[128], http[128];
  snprintf(https, sizeof https, "https://127.0.0.1:%d/v1/whoami",
           tw_api_port(api));
  snprintf(http, sizeof http, "http://127.0.0.1:%d/v1/whoami",
           tw_api_port(api));
  struct resp r = get(https, tok, NULL);
  TW_CHECK(r.rc != CURLE_OK, "a client trusting nothing accepted the server");
  r = get(http, tok, NULL);
  TW_CHECK(r.rc != CURLE_OK || r.status != 200, "plain HTTP got an answer: %ld",
           r.status);
}

/* The tradewind binary trusts the certificate by --cacert or
 * TRADEWIND_CACERT, and nothing else. */
static void cli_trusts_the_configured_certificate(void **state) {
#ifdef TW_CLI_BIN
  cli_checks(tw_api_port(api), tok);
#else
  printf("# the CLI part needs TW_CLI_BIN: not run\n");
  skip();
#endif
}

/* Half a configuration, or not PEM: the start fails and says why. */
static void bad_tls_config_stops_the_start(void **state) {
  struct tw_api *other = NULL;
  struct tw_err err = {0};
  struct tw_api_opts half = {.listen = "127.0.0.1:0",
                             .store = store,
                             .auth = {.tenancy = ten, .tls_cert_file = certf}};
  enum tw_rc rc = tw_api_start(&half, &other, &err);
  if (rc == TW_OK)
    tw_api_stop(other);
  TW_CHECK(rc == TW_E_INVALID && strstr(err.msg, "both"),
           "cert without key: %s", err.msg);
  struct tw_api_opts notpem = {
      .listen = "127.0.0.1:0",
      .store = store,
      .auth = {.tenancy = ten, .tls_cert_file = tokfile, .tls_key_file = keyf}};
  memset(&err, 0, sizeof err);
  rc = tw_api_start(&notpem, &other, &err);
  if (rc == TW_OK)
    tw_api_stop(other);
  TW_CHECK(rc == TW_E_INVALID && strstr(err.msg, "not a PEM"), "not PEM: %s",
           err.msg);
  /* a key of another certificate */
  char otherkey[160];
  snprintf(otherkey, sizeof otherkey, "%s/other.key", dir);
  EVP_PKEY *k = EVP_EC_gen("P-256");
  FILE *f = fopen(otherkey, "w");
  TW_CHECK(k && f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
  if (f)
    fclose(f);
  EVP_PKEY_free(k);
  struct tw_api_opts mismatch = {
      .listen = "127.0.0.1:0",
      .store = store,
      .auth = {.tenancy = ten, .tls_cert_file = certf,
               .tls_key_file = otherkey}};
  memset(&err, 0, sizeof err);
  rc = tw_api_start(&mismatch, &other, &err);
  if (rc == TW_OK)
    tw_api_stop(other);
  TW_CHECK(rc == TW_E_INVALID && strstr(err.msg, "does not match") &&
               !strcmp(err.field, "tls"),
           "a key of another certificate: %s", err.msg);
  unlink(otherkey);
}

/* A certificate, the store, the tenancy (its admin token) and the server
 * over TLS. */
static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/tw-tls-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(certf, sizeof certf, "%s/tls.crt", dir);
  snprintf(keyf, sizeof keyf, "%s/tls.key", dir);
  if (make_cert()) {
    fprintf(stderr, "cannot make a certificate\n");
    return -1;
  }
  tw_log_set_debug("http"); /* the door's reasons, should a start fail */
  curl_global_init(CURL_GLOBAL_ALL);
  char path[128];
  snprintf(path, sizeof path, "%s/t.db", dir);
  snprintf(tokfile, sizeof tokfile, "%s/admin.token", dir);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = path};
  if (tw_store_open(&so, &store, &err))
    return -1;
  struct tw_tenancy_opts to = {.store = store, .admin_token_file = tokfile};
  if (tw_tenancy_open(&to, &ten, &err))
    return -1;
  FILE *tf = fopen(tokfile, "r");
  if (!tf || !fgets(tok, sizeof tok, tf))
    return -1;
  fclose(tf);
  tok[strcspn(tok, "\n")] = '\0';
  struct tw_api_opts ao = {
      .listen = "127.0.0.1:0",
      .store = store,
      .auth = {.tenancy = ten, .tls_cert_file = certf, .tls_key_file = keyf}};
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  tw_api_stop(api);
  tw_tenancy_free(ten);
  tw_store_close(store);
  curl_global_cleanup();
  const char *files[] = {"t.db",        "t.db-wal", "t.db-shm",
                         "admin.token", "tls.crt",  "tls.key"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[200];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(https_with_the_certificate),
      cmocka_unit_test(untrusted_or_plain_get_nothing),
      cmocka_unit_test(cli_trusts_the_configured_certificate),
      cmocka_unit_test(bad_tls_config_stops_the_start),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
