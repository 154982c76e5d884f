/* test_validation.c - wrong input gets a clear answer naming the field,
 * and what is stored or logged cannot be turned against its reader
 * (issue 16, findings 5, 6 and 7), against a real tradewindd with tokens:
 *
 *   bad_fields_are_named: a budget whose project is not a name (400
 *     naming it, not the stale 404 of the lookup before), a deadline in
 *     the past, a tenant that does not exist, YAML tags, a number out of
 *     range and \u0000 in JSON (the member named, no library flag
 *     leaked), audit and offer filters that cannot match, an unknown
 *     query parameter;
 *   control_bytes_refused_in_names: a token name with an escape sequence;
 *   audit_detail_keeps_escaped_quotes: the detail of a refused request
 *     whose message quotes a `"` is recorded whole;
 *   replay_applies_the_read_rule: a `ci` principal replaying a member's
 *     Idempotency-Key gets 409 without the job, as GET of it is 404;
 *   datasets_are_their_tenants: another tenant can neither shrink, move
 *     nor list a dataset; sharing lets it read, still not change;
 *   refused_tokens_logged_escaped_and_bounded: a token holding terminal
 *     escapes reaches the log without them and without its text; a burst
 *     of bad tokens writes a bounded number of lines. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

static struct twtest_daemon d;
static int failures_before;
static char admin[128];
static char alice_tok[128]; /* member of ml (replay_applies_the_read_rule) */

struct answer {
  int status;
  char text[16384];
  const char *body;
};

/* One request with Connection: close; auth is a token or NULL. */
static void call(const char *method, const char *path, const char *auth,
                 const char *ctype, const char *body, const char *extra,
                 struct answer *a) {
  char req[8192];
  size_t bl = body ? strlen(body) : 0;
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n", method,
                   path);
  if (auth)
    n += snprintf(req + n, sizeof req - (size_t)n,
                  "Authorization: Bearer %s\r\n", auth);
  if (ctype)
    n += snprintf(req + n, sizeof req - (size_t)n, "Content-Type: %s\r\n",
                  ctype);
  if (extra)
    n += snprintf(req + n, sizeof req - (size_t)n, "%s\r\n", extra);
  n += snprintf(req + n, sizeof req - (size_t)n,
                "Content-Length: %zu\r\n\r\n%s", bl, body ? body : "");
  memset(a, 0, sizeof *a);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)d.port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
      send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
    close(fd);
    return;
  }
  size_t got = 0;
  ssize_t k;
  while (got + 1 < sizeof a->text &&
         (k = recv(fd, a->text + got, sizeof a->text - 1 - got, 0)) > 0)
    got += (size_t)k;
  close(fd);
  a->text[got] = '\0';
  sscanf(a->text, "HTTP/1.1 %d", &a->status);
  const char *b = strstr(a->text, "\r\n\r\n");
  a->body = b ? b + 4 : "";
}

static void expect_field(const char *what, const struct answer *a, int status,
                         const char *field, const char *detail) {
  char want[128];
  snprintf(want, sizeof want, "\"field\":\"%s\"", field);
  TW_CHECK(a->status == status, "%s: status %d, want %d: %s", what, a->status,
           status, a->body);
  TW_CHECK(strstr(a->text, "application/problem+json"), "%s: %s", what,
           a->text);
  TW_CHECK(strstr(a->body, want), "%s: no %s in %s", what, want, a->body);
  TW_CHECK(!detail || strstr(a->body, detail), "%s: no \"%s\" in %s", what,
           detail, a->body);
}

/* The token in a 201 answer of POST /v1/tokens. */
static void token_of(const struct answer *a, char *out, size_t cap) {
  const char *t = strstr(a->body, "\"token\":\"");
  TW_CHECK(t, "no token in %s", a->body);
  t += 9;
  size_t n = strcspn(t, "\"");
  snprintf(out, cap, "%.*s", (int)n, t);
}

static void bad_fields_are_named(void **state) {
  (void)state;
  struct answer a;
  call("POST", "/v1/tenants", admin, "application/json", "{\"name\":\"ml\"}",
       NULL, &a);
  TW_CHECK(a.status == 201 || a.status == 409, "%s", a.body);
  call("PUT", "/v1/tenants/ml/projects/p%21x/budget", admin, "application/json",
       "{\"limit_uusd\":5}", NULL, &a);
  expect_field("a budget's bad project", &a, 400, "project", "project:");
  TW_CHECK(!strstr(a.body, "no budget"), "stale answer: %s", a.body);
  call("POST", "/v1/jobs", admin, "application/json",
       "{\"name\":\"late\",\"tenant\":\"ml\",\"deadline\":\"2001-01-01T00:00:"
       "00Z\"}",
       NULL, &a);
  expect_field("a deadline in the past", &a, 400, "deadline", "in the past");
  call("POST", "/v1/jobs", admin, "application/json",
       "{\"name\":\"x\",\"tenant\":\"nosuch\"}", NULL, &a);
  expect_field("a tenant that does not exist", &a, 400, "tenant",
               "no tenant named");
  call("POST", "/v1/jobs", admin, "application/yaml",
       "name: x\ntenant: !!str ml\n", NULL, &a);
  expect_field("a !!str tag", &a, 400, "tenant", "YAML tags");
  call("POST", "/v1/jobs", admin, "application/yaml",
       "name: x\nresources: !!python/object {cpus: 1}\n", NULL, &a);
  expect_field("a !!python/object tag", &a, 400, "resources", "YAML tags");
  call("POST", "/v1/jobs", admin, "application/json",
       "{\"name\":\"x\",\"resources\":{\"cpus\":1e400}}", NULL, &a);
  expect_field("a real out of range", &a, 400, "resources.cpus",
               "out of range");
  call("POST", "/v1/jobs", admin, "application/json",
       "{\"name\":\"x\",\"priority\":99999999999999999999}", NULL, &a);
  expect_field("an integer out of range", &a, 400, "priority", "out of range");
  call("POST", "/v1/jobs", admin, "application/json",
       "{\"name\":\"x\\u0000y\"}", NULL, &a);
  expect_field("\\u0000", &a, 400, "name", "NUL");
  TW_CHECK(!strstr(a.body, "JSON_ALLOW_NUL"), "jansson's flag: %s", a.body);
  /* the tenancy routes read JSON themselves: the same there */
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"name\":\"a\\u0000b\"}", NULL, &a);
  expect_field("\\u0000 in a token name", &a, 400, "name", "NUL");
  TW_CHECK(!strstr(a.body, "JSON_ALLOW_NUL"), "jansson's flag: %s", a.body);
  call("PUT", "/v1/tenants/ml/budget", admin, "application/json",
       "{\"limit_uusd\":1e999}", NULL, &a);
  expect_field("a budget limit out of range", &a, 400, "limit_uusd",
               "out of range");
  call("GET", "/v1/audit?outcome=maybe", admin, NULL, NULL, NULL, &a);
  expect_field("audit outcome", &a, 400, "outcome", NULL);
  call("GET", "/v1/audit?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
       admin, NULL, NULL, NULL, &a);
  expect_field("audit until before since", &a, 400, "until", NULL);
  call("GET", "/v1/audit?outcom=ok", admin, NULL, NULL, NULL, &a);
  expect_field("an unknown audit parameter", &a, 400, "outcom",
               "unknown query parameter");
  call("GET", "/v1/offers?provider=nosuch", admin, NULL, NULL, NULL, &a);
  expect_field("offers provider", &a, 400, "provider", "nosuch");
  call("GET", "/v1/offers?jurisdiction=us", admin, NULL, NULL, NULL, &a);
  expect_field("offers jurisdiction", &a, 400, "jurisdiction", NULL);
  call("GET", "/v1/offers?gpu=A100", admin, NULL, NULL, NULL, &a);
  expect_field("an unknown offers parameter", &a, 400, "gpu", NULL);
  /* the good forms still answer */
  call("GET", "/v1/audit?outcome=refused", admin, NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 200);
}

static void control_bytes_refused_in_names(void **state) {
  (void)state;
  struct answer a;
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"name\":\"laptop\\u001b[31m\"}", NULL, &a);
  expect_field("a token name with ESC", &a, 400, "name", "control");
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"name\":\"two\\nlines\"}", NULL, &a);
  expect_field("a token name with a newline", &a, 400, "name", "control");
  call("POST", "/v1/users", admin, "application/json",
       "{\"name\":\"eve\\u0007\",\"tenant\":\"ml\",\"role\":\"member\"}", NULL,
       &a);
  expect_field("a principal name with BEL", &a, 400, "name", NULL);
}

static void audit_detail_keeps_escaped_quotes(void **state) {
  (void)state;
  struct answer a;
  call("POST", "/v1/tenants", admin, "application/json",
       "{\"name\":\"q\\\"tail-marker\"}", NULL, &a);
  TW_CHECK_INT(a.status, 400);
  call("GET", "/v1/audit?outcome=refused&action=POST%20/v1/tenants", admin,
       NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 200);
  TW_CHECK(strstr(a.body, "tail-marker"),
           "the detail was cut at the escaped quote: %s", a.body);
}

static void replay_applies_the_read_rule(void **state) {
  (void)state;
  struct answer a;
  char alice[128], bot[128];
  call("POST", "/v1/users", admin, "application/json",
       "{\"name\":\"alice\",\"tenant\":\"ml\",\"role\":\"member\"}", NULL, &a);
  TW_CHECK_INT(a.status, 201);
  call("POST", "/v1/users", admin, "application/json",
       "{\"name\":\"bot\",\"tenant\":\"ml\",\"role\":\"ci\",\"service\":true}",
       NULL, &a);
  TW_CHECK_INT(a.status, 201);
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"principal\":\"alice\"}", NULL, &a);
  TW_CHECK_INT(a.status, 201);
  token_of(&a, alice, sizeof alice);
  snprintf(alice_tok, sizeof alice_tok, "%s", alice);
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"principal\":\"bot\"}", NULL, &a);
  TW_CHECK_INT(a.status, 201);
  token_of(&a, bot, sizeof bot);
  static const char spec[] = "{\"name\":\"secret-run\",\"env\":{\"K\":\"v\"}}";
  call("POST", "/v1/jobs", alice, "application/json", spec,
       "Idempotency-Key: shared-key-1", &a);
  TW_CHECK_INT(a.status, 201);
  const char *id = strstr(a.body, "\"id\":\"");
  TW_CHECK(id);
  char job[64], path[96];
  snprintf(job, sizeof job, "%.*s", (int)strcspn(id + 6, "\""), id + 6);
  snprintf(path, sizeof path, "/v1/jobs/%s", job);
  call("GET", path, bot, NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 404);
  /* the attack: the same request with alice's key */
  call("POST", "/v1/jobs", bot, "application/json", spec,
       "Idempotency-Key: shared-key-1", &a);
  TW_CHECK(a.status == 409, "replay by ci: %d %s", a.status, a.body);
  TW_CHECK(!strstr(a.text, job), "the replay shows the job: %s", a.text);
  TW_CHECK(!strstr(a.text, "Idempotent-Replayed"), "%s", a.text);
  /* alice's own replay still replays */
  call("POST", "/v1/jobs", alice, "application/json", spec,
       "Idempotency-Key: shared-key-1", &a);
  TW_CHECK_INT(a.status, 200);
  TW_CHECK(strstr(a.text, "Idempotent-Replayed: true") && strstr(a.body, job),
           "%s", a.text);
}

static void datasets_are_their_tenants(void **state) {
  (void)state;
  struct answer a;
  char mallory[128];
  TW_CHECK(alice_tok[0], "runs after replay_applies_the_read_rule");
  call("POST", "/v1/tenants", admin, "application/json", "{\"name\":\"rival\"}",
       NULL, &a);
  TW_CHECK_INT(a.status, 201);
  call("POST", "/v1/users", admin, "application/json",
       "{\"name\":\"mallory\",\"tenant\":\"rival\",\"role\":\"member\"}", NULL,
       &a);
  TW_CHECK_INT(a.status, 201);
  call("POST", "/v1/tokens", admin, "application/json",
       "{\"principal\":\"mallory\"}", NULL, &a);
  token_of(&a, mallory, sizeof mallory);
  call("POST", "/v1/datasets", alice_tok, "application/json",
       "{\"uri\":\"s3://ml-private/corpus/\",\"size\":\"1TB\","
       "\"location\":\"aws:us-east-1\"}",
       NULL, &a);
  TW_CHECK(a.status == 201, "%d %s", a.status, a.body);
  TW_CHECK(strstr(a.body, "\"owner\":\"ml\"") &&
               strstr(a.body, "\"shared\":false"),
           "%s", a.body);
  /* the attack: shrink it and move it */
  static const char shrink[] =
      "{\"uri\":\"s3://ml-private/corpus/\",\"size_bytes\":1,"
      "\"location\":\"aws:eu-west-1\"}";
  call("POST", "/v1/datasets", mallory, "application/json", shrink, NULL, &a);
  expect_field("another tenant's dataset", &a, 403, "uri", "another tenant");
  call("GET", "/v1/datasets", mallory, NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 200);
  TW_CHECK(!strstr(a.body, "ml-private"), "listed to another tenant: %s",
           a.body);
  call("GET", "/v1/datasets?uri=s3://ml-private/corpus/", mallory, NULL, NULL,
       NULL, &a);
  TW_CHECK_INT(a.status, 404);
  /* untouched */
  call("GET", "/v1/datasets?uri=s3://ml-private/corpus/", alice_tok, NULL, NULL,
       NULL, &a);
  TW_CHECK_INT(a.status, 200);
  TW_CHECK(strstr(a.body, "\"size_bytes\":1000000000000") &&
               !strstr(a.body, "eu-west-1"),
           "changed by another tenant: %s", a.body);
  /* shared: readable, still not theirs to change */
  call("POST", "/v1/datasets", alice_tok, "application/json",
       "{\"uri\":\"s3://ml-private/corpus/\",\"shared\":true}", NULL, &a);
  TW_CHECK_INT(a.status, 200);
  call("GET", "/v1/datasets", mallory, NULL, NULL, NULL, &a);
  TW_CHECK(strstr(a.body, "ml-private"), "shared but not listed: %s", a.body);
  call("POST", "/v1/datasets", mallory, "application/json", shrink, NULL, &a);
  TW_CHECK_INT(a.status, 403);
  /* the admin sees and may change every dataset */
  call("GET", "/v1/datasets?uri=s3://ml-private/corpus/", admin, NULL, NULL,
       NULL, &a);
  TW_CHECK_INT(a.status, 200);
}

static void refused_tokens_logged_escaped_and_bounded(void **state) {
  (void)state;
  struct answer a;
  /* 64 bytes, the shape of a token, holding escapes */
  char evil[65];
  memset(evil, 'A', 64);
  evil[64] = '\0';
  static const char esc[] = "twt_\x1b[2J\x1b]0;pwned\x07";
  memcpy(evil, esc, sizeof esc - 1);
  call("GET", "/v1/jobs", evil, NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 401);
  TW_CHECK(twtest_daemon_wait_log(&d, "token=- refused", 1, 5000),
           "no refused line naming no id");
  /* a path holding an escape, in the api debug line */
  call("GET", "/v1/jobs%1b%5b2J", admin, NULL, NULL, NULL, &a);
  TW_CHECK_INT(a.status, 404);
  TW_CHECK(twtest_daemon_wait_log(&d, "path=/v1/jobs\\x1b[2J", 1, 5000),
           "the path's escape is not written escaped");
  char *log = twtest_daemon_log_read(&d);
  TW_CHECK(!strchr(log, '\x1b') && !strchr(log, '\x07'),
           "control bytes reached the log");
  TW_CHECK(!strstr(log, "pwned"), "the token's text reached the log");
  free(log);
  /* a burst of unknown but well-formed tokens */
  size_t before = twtest_daemon_log_count(&d, " refused: ");
  char fake[80];
  for (int i = 0; i < 60; i++) {
    snprintf(fake, sizeof fake, "twt_%016x_%043d", i, 0);
    call("GET", "/v1/jobs", fake, NULL, NULL, NULL, &a);
    TW_CHECK_INT(a.status, 401);
  }
  usleep(300 * 1000);
  size_t lines = twtest_daemon_log_count(&d, " refused: ") - before;
  TW_CHECK(lines >= 1 && lines <= 30,
           "%zu refused-token lines for 60 bad tokens", lines);
  /* a well-formed id is named */
  TW_CHECK(twtest_daemon_log_count(&d, "token=0000000000000000 refused") +
                   twtest_daemon_log_count(&d, "refused tokens not logged") >=
               1,
           "neither the id nor the count of lines held back");
}

static int setup(void **state) {
  (void)state;
  failures_before = tw_failures();
  char path[400];
  snprintf(path, sizeof path, "%s/admin.token", d.dir);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(admin, sizeof admin, f)) {
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  admin[strcspn(admin, "\r\n")] = '\0';
  return 0;
}

static int teardown(void **state) {
  (void)state;
  /* a clean exit, and no sanitizer report on the way (ASan builds) */
  int code = twtest_daemon_stop(&d, 10000);
  bool reported = twtest_daemon_log_count(&d, "runtime error") +
                      twtest_daemon_log_count(&d, "Sanitizer") >
                  0;
  bool bad = code != 0 || reported || tw_failures() != failures_before;
  if (code != 0 || reported)
    fprintf(stderr, "tradewindd exited %d%s\n", code,
            reported ? ", with a sanitizer report in its log" : "");
  twtest_daemon_cleanup(&d, bad);
  return code != 0 || reported ? -1 : 0;
}

int main(void) {
  if (twtest_daemon_init(&d, "log:\n  level: info\n  debug: [api]\n"
                             "auth:\n  mode: tokens\n"
                             "  rate_limit_per_s: 0\n") != 0) {
    printf("SKIPPED: cannot prepare a daemon directory\n");
    return TW_SKIP;
  }
  if (twtest_daemon_start(&d) != 0) {
    twtest_daemon_cleanup(&d, true);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_fields_are_named),
      cmocka_unit_test(control_bytes_refused_in_names),
      cmocka_unit_test(audit_detail_keeps_escaped_quotes),
      cmocka_unit_test(replay_applies_the_read_rule),
      cmocka_unit_test(datasets_are_their_tenants),
      cmocka_unit_test(refused_tokens_logged_escaped_and_bounded),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
