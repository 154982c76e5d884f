/* The tradewind commands end to end against a scripted fake server: what is
 * sent, what is printed, and the exit code of each outcome.  Waiting runs
 * on a fake clock whose sleep only advances it, so the backoff is checked
 * to the millisecond without sleeping. */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "billing/report/report.h"
#include "broker/base/clock.h"
#include "cli/cli.h"
#include "tests/unit/test_cli_fake.h"

/* 2026-11-30T00:10:00Z: ten minutes after the fixtures' created_at. */
#define NOW_MS 1795997400000LL

struct sleeper {
  struct tw_clock clock;
  int64_t naps[64];
  size_t n;
};

static struct sleeper sleeper;

static void fake_sleep(void *ctx, int64_t ms) {
  struct sleeper *s = ctx;
  if (s->n < 64)
    s->naps[s->n++] = ms;
  tw_clock_advance(&s->clock, ms);
}

struct result {
  int code;
  char *out, *err;
};

static struct result last;

static void forget_last(void) {
  free(last.out);
  free(last.err);
  memset(&last, 0, sizeof last);
}

/* Runs tradewind with args (NULL-terminated) against url (NULL: none in the
 * environment), feeding stdin_text, with env_token as TRADEWIND_TOKEN. */
static struct result *run(const char *url, const char *env_token,
                          const char *stdin_text, const char *const *args) {
  char *argv[32];
  int argc = 0;
  size_t outlen, errlen;
  forget_last();
  argv[argc++] = "tradewind";
  for (size_t i = 0; args[i] && argc < 31; i++)
    argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  FILE *out = open_memstream(&last.out, &outlen);
  FILE *err = open_memstream(&last.err, &errlen);
  /* fmemopen refuses a zero size: an empty stdin is /dev/null. */
  FILE *in = stdin_text && *stdin_text
                 ? fmemopen((void *)stdin_text, strlen(stdin_text), "r")
                 : fopen("/dev/null", "r");
  struct tw_cli_io io = {.out = out,
                         .err = err,
                         .in = in,
                         .env_url = url,
                         .env_token = env_token,
                         .clock = &sleeper.clock,
                         .sleep_ms = fake_sleep,
                         .sleep_ctx = &sleeper};
  last.code = tw_cli_run(argc, argv, &io);
  fclose(out);
  fclose(err);
  fclose(in);
  return &last;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
/* The common case: the fake server's URL from the environment. */
#define RUN(srv, ...) run(fake_url(srv), NULL, NULL, ARGS(__VA_ARGS__))

#define JOB(id, state, reason)                                                 \
  "{\"id\":\"" id "\",\"name\":\"train\",\"tenant\":\"default\","              \
  "\"project\":\"default\",\"state\":\"" state "\",\"reason\":\"" reason "\"," \
  "\"priority\":0,\"created_at\":\"2026-11-30T00:00:00.000Z\","                \
  "\"updated_at\":\"2026-11-30T00:05:00.000Z\",\"spec\":{\"name\":\"train\"}," \
  "\"placement\":null,\"exit_code\":null}"

/* A finished job with an exit code of its own. */
#define JOB_CODE(id, state, code)                                              \
  "{\"id\":\"" id "\",\"name\":\"train\",\"tenant\":\"default\","              \
  "\"project\":\"default\",\"state\":\"" state "\",\"reason\":\"exit " code     \
  "\",\"priority\":0,\"created_at\":\"2026-11-30T00:00:00.000Z\","               \
  "\"updated_at\":\"2026-11-30T00:05:00.000Z\",\"spec\":{\"name\":\"train\"}," \
  "\"placement\":null,\"exit_code\":" code "}"

#define PLACED_JOB                                                             \
  "{\"id\":\"j-2\",\"name\":\"big\",\"tenant\":\"ml\",\"project\":\"p\","      \
  "\"state\":\"running\",\"reason\":\"\",\"priority\":5,"                      \
  "\"created_at\":\"2026-11-29T22:10:00.000Z\","                               \
  "\"updated_at\":\"2026-11-30T00:00:00.000Z\",\"spec\":{},"                   \
  "\"placement\":{\"provider\":\"aws\",\"region\":\"us-east-1\","              \
  "\"zone\":\"us-east-1a\",\"instance_type\":\"p4d.24xlarge\","                \
  "\"market\":\"spot\",\"price_uusd_per_hour\":12345678},\"exit_code\":3}"

#define PROBLEM_CPUS                                                           \
  "{\"type\":\"/problems/invalid-field\",\"title\":\"Invalid field\","         \
  "\"status\":400,\"detail\":\"resources.cpus: expected a number or N+, got "  \
  "\\\"eight\\\"\",\"field\":\"resources.cpus\",\"request_id\":\"r-1\"}"

#define PROBLEM_JSON "application/problem+json"
#define NO_STREAM                                                              \
  "{\"status\":403,\"detail\":\"role ci may not GET /v1/jobs/{id}/events\"}"

static int setup(void **state) {
  tw_clock_fake_init(&sleeper.clock, NOW_MS);
  sleeper.n = 0;
  *state = fake_start();
  return 0;
}

static int teardown(void **state) {
  fake_stop(*state);
  forget_last();
  return 0;
}

/* Writes text to a fresh temp file ending in suffix; caller unlinks. */
static char *temp_file(const char *suffix, const char *text) {
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  size_t n = strlen(dir) + strlen(suffix) + 32;
  char *path = malloc(n);
  snprintf(path, n, "%s/tw-cli-test-XXXXXX%s", dir, suffix);
  int fd = mkstemps(path, (int)strlen(suffix));
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

static void assert_naps(const int64_t *want, size_t n) {
  if (sleeper.n != n)
    fail_msg("slept %zu times, want %zu", sleeper.n, n);
  for (size_t i = 0; i < n; i++)
    if (sleeper.naps[i] != want[i])
      fail_msg("nap %zu: %lld ms, want %lld", i, (long long)sleeper.naps[i],
               (long long)want[i]);
}

/* --- submit ------------------------------------------------------------- */

static void submit_sends_yaml_and_prints_the_id(void **state) {
  struct fake_srv *srv = *state;
  const char *spec = "name: train\nresources:\n  cpus: 8\n";
  char *file = temp_file(".yaml", spec);
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", "submitted"),
             "Location: /v1/jobs/j-1");
  struct result *r = RUN(srv, "submit", file);
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-1\n");
  assert_string_equal(r->err, "");
  assert_int_equal(fake_nreq(srv), 1);
  const struct fake_req *q = fake_req(srv, 0);
  assert_string_equal(q->method, "POST");
  assert_string_equal(q->target, "/v1/jobs");
  assert_string_equal(q->content_type, "application/yaml");
  assert_string_equal(q->body, spec);
  assert_string_equal(q->authorization, "");
  assert_string_equal(q->idempotency_key, "");
  unlink(file);
  free(file);
}

static void submit_sends_json_with_token_and_key(void **state) {
  struct fake_srv *srv = *state;
  const char *spec = "{\"name\":\"train\"}";
  char *file = temp_file(".json", spec);
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", "submitted"),
             NULL);
  struct result *r =
      run(fake_url(srv), "s3cret-token", NULL,
          ARGS("submit", file, "--idempotency-key", "key-1", "-o", "json"));
  assert_int_equal(r->code, 0);
  /* The server's JSON, indented. */
  static const char head[] = "{\n  \"id\": \"j-1\",\n  \"name\": \"train\",";
  assert_memory_equal(r->out, head, strlen(head));
  json_t *j = json_loads(r->out, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "state")),
                      "pending");
  json_decref(j);
  const struct fake_req *q = fake_req(srv, 0);
  assert_string_equal(q->content_type, "application/json");
  assert_string_equal(q->authorization, "Bearer s3cret-token");
  assert_string_equal(q->idempotency_key, "key-1");
  assert_null(strstr(r->out, "s3cret"));
  assert_null(strstr(r->err, "s3cret"));
  unlink(file);
  free(file);
}

static void submit_reads_stdin_and_sniffs_json(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", ""), NULL);
  fake_reply(srv, 201, "application/json", JOB("j-2", "pending", ""), NULL);
  struct result *r =
      run(fake_url(srv), NULL, "  {\"name\":\"a\"}", ARGS("submit", "-"));
  assert_int_equal(r->code, 0);
  r = run(fake_url(srv), NULL, "name: b\n", ARGS("submit", "-"));
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-2\n");
  assert_string_equal(fake_req(srv, 0)->content_type, "application/json");
  assert_string_equal(fake_req(srv, 0)->body, "  {\"name\":\"a\"}");
  assert_string_equal(fake_req(srv, 1)->content_type, "application/yaml");
  assert_string_equal(fake_req(srv, 1)->body, "name: b\n");
}

static void submit_notes_an_idempotent_replay(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 200, "application/json", JOB("j-1", "running", ""),
             "Idempotent-Replayed: true");
  struct result *r = run(fake_url(srv), NULL, "name: a\n",
                         ARGS("submit", "-", "--idempotency-key", "k"));
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-1\n");
  assert_string_equal(r->err,
                      "tradewind: job j-1 was already submitted with this "
                      "idempotency key; not submitted again\n");
}

static void submit_invalid_spec_exits_5_naming_the_field(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 400, PROBLEM_JSON, PROBLEM_CPUS, NULL);
  struct result *r = run(fake_url(srv), NULL,
                         "name: a\nresources:\n  cpus: "
                         "eight\n",
                         ARGS("submit", "-"));
  assert_int_equal(r->code, 5);
  assert_string_equal(r->out, "");
  assert_string_equal(r->err, "tradewind: rejected (400): resources.cpus: "
                              "expected a number or N+, got \"eight\"\n");
}

static void submit_usage_errors_exit_2_without_a_request(void **state) {
  struct fake_srv *srv = *state;
  struct result *r = RUN(srv, "submit", "/nonexistent/job.yaml");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "cannot read /nonexistent/job.yaml: No such "
                                 "file or directory"));
  assert_non_null(strstr(r->err, "tradewind submit --help"));
  r = RUN(srv, "submit", "/tmp");
  assert_int_equal(r->code, 2);
  char *empty = temp_file(".yaml", "");
  r = RUN(srv, "submit", empty);
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "is empty"));
  unlink(empty);
  free(empty);
  r = RUN(srv, "submit");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "missing FILE"));
  r = RUN(srv, "submit", "a.yaml", "b.yaml");
  assert_int_equal(r->code, 2);
  r = run(fake_url(srv), NULL, "name: a\n",
          ARGS("submit", "-", "--timeout", "5m"));
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "--timeout applies to --wait only"));
  r = run(fake_url(srv), NULL, "name: a\n",
          ARGS("submit", "-", "--wait", "--timeout", "soon"));
  assert_int_equal(r->code, 2);
  r = run(fake_url(srv), NULL, "name: a\n",
          ARGS("submit", "-", "--idempotency-key", "has space"));
  assert_int_equal(r->code, 2);
  r = run(fake_url(srv), NULL, "name: a\n", ARGS("submit", "-", "--wiat"));
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "did you mean \"--wait\"?"));
  assert_int_equal(fake_nreq(srv), 0);
}

/* --secret fills the file's secrets (KEY=VALUE, or KEY from the
 * environment), adding what the file lacks; the result goes as JSON. */
static void submit_secret_fills_the_secrets(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", ""), NULL);
  setenv("TW_TEST_HF_TOKEN", "hf_from_env", 1);
  struct result *r = run(
      fake_url(srv), NULL,
      "name: a\nsecrets:\n  TW_TEST_HF_TOKEN: null\n  KEEP: kept\nrun: x\n",
      ARGS("submit", "-", "--secret", "TW_TEST_HF_TOKEN", "--secret",
           "EXTRA=a=b"));
  unsetenv("TW_TEST_HF_TOKEN");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-1\n");
  const struct fake_req *q = fake_req(srv, 0);
  assert_string_equal(q->content_type, "application/json");
  json_t *j = json_loads(q->body, 0, NULL);
  assert_non_null(j);
  json_t *sec = json_object_get(j, "secrets");
  assert_string_equal(
      json_string_value(json_object_get(sec, "TW_TEST_HF_TOKEN")),
      "hf_from_env");
  assert_string_equal(json_string_value(json_object_get(sec, "KEEP")), "kept");
  assert_string_equal(json_string_value(json_object_get(sec, "EXTRA")), "a=b");
  assert_string_equal(json_string_value(json_object_get(j, "run")), "x");
  json_decref(j);
  /* a KEY not in the environment, a bad name: usage errors, no request */
  r = run(fake_url(srv), NULL, "name: a\n",
          ARGS("submit", "-", "--secret", "TW_TEST_UNSET_SECRET"));
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "TW_TEST_UNSET_SECRET: not set"));
  r = run(fake_url(srv), NULL, "name: a\n",
          ARGS("submit", "-", "--secret", "1BAD=x"));
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "--secret: expected KEY"));
  assert_null(strstr(r->err, "=x"));
  assert_int_equal(fake_nreq(srv), 1);
}

static void submit_wait_follows_states_to_success(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json",
             JOB("j-1", "pending", "waiting for placement"), NULL);
  fake_json(srv, JOB("j-1", "pending", "waiting for placement"));
  /* a caller the event stream refuses: the wait polls */
  fake_reply(srv, 403, PROBLEM_JSON, NO_STREAM, NULL);
  fake_json(srv, JOB("j-1", "pending", "waiting for placement"));
  fake_json(srv, JOB("j-1", "running", ""));
  fake_json(srv, JOB("j-1", "running", ""));
  fake_json(srv, JOB("j-1", "succeeded", "exit 0"));
  struct result *r =
      run(fake_url(srv), NULL, "name: a\n", ARGS("submit", "-", "--wait"));
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-1\n");
  assert_string_equal(r->err, "j-1: pending (waiting for placement)\n"
                              "j-1: pending -> running\n"
                              "j-1: running -> succeeded (exit 0)\n");
  /* The backoff doubles, and starts over when the state changes. */
  static const int64_t want[] = {200, 400, 200, 400};
  assert_naps(want, 4);
  assert_int_equal(fake_nreq(srv), 7);
  assert_string_equal(fake_req(srv, 1)->method, "GET");
  assert_string_equal(fake_req(srv, 1)->target, "/v1/jobs/j-1");
  assert_string_equal(fake_req(srv, 2)->target, "/v1/jobs/j-1/events");
}

static void submit_wait_json_prints_only_the_final_job(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", ""), NULL);
  fake_json(srv, JOB("j-1", "failed", "exit 3"));
  struct result *r = run(fake_url(srv), NULL, "name: a\n",
                         ARGS("-o", "json", "submit", "-", "--wait"));
  assert_int_equal(r->code, 1);
  json_t *j = json_loads(r->out, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "state")), "failed");
  json_decref(j);
}

static void submit_wait_exits_with_the_jobs_own_code(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", ""), NULL);
  fake_json(srv, JOB("j-1", "running", ""));
  /* a caller the event stream refuses: the wait polls */
  fake_reply(srv, 403, PROBLEM_JSON, NO_STREAM, NULL);
  fake_json(srv, JOB_CODE("j-1", "failed", "42"));
  struct result *r =
      run(fake_url(srv), NULL, "name: a\n", ARGS("submit", "-", "--wait"));
  assert_int_equal(r->code, 42);
  assert_string_equal(r->out, "j-1\n");
  assert_non_null(strstr(r->err, "j-1: running -> failed (exit 42)\n"));
}

static int closed_port(void);

/* A job's 3 coincides with "unreachable": stdout says which it was. */
static void a_job_code_that_collides_is_told_apart_by_stdout(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 201, "application/json", JOB("j-1", "pending", ""), NULL);
  fake_json(srv, JOB_CODE("j-1", "failed", "3"));
  struct result *r = run(fake_url(srv), NULL, "name: a\n",
                         ARGS("-o", "json", "submit", "-", "--wait"));
  assert_int_equal(r->code, 3);
  json_t *j = json_loads(r->out, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "state")), "failed");
  assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
  json_decref(j);
  /* The CLI's own 3 prints no job. */
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  r = run(url, NULL, NULL, ARGS("-o", "json", "jobs", "wait", "j-1"));
  assert_int_equal(r->code, 3);
  assert_string_equal(r->out, "");
}

/* --- jobs wait --------------------------------------------------------------
 */

static void wait_exit_code_follows_the_job(void **state) {
  struct fake_srv *srv = *state;
  static const struct {
    const char *job;
    int want;
  } rows[] = {
      {JOB_CODE("j-1", "failed", "3"), 3},
      {JOB_CODE("j-1", "failed", "1"), 1},
      {JOB_CODE("j-1", "failed", "4"), 4},
      {JOB_CODE("j-1", "failed", "137"), 137},
      {JOB_CODE("j-1", "failed", "255"), 255},
      /* no code of its own, or a code that would read as success: 1 */
      {JOB_CODE("j-1", "failed", "null"), 1},
      {JOB_CODE("j-1", "failed", "0"), 1},
      {JOB_CODE("j-1", "succeeded", "0"), 0},
      /* a cancelled job is 4 whatever its script returned */
      {JOB_CODE("j-1", "cancelled", "143"), 4},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    fake_json(srv, rows[i].job);
    struct result *r = RUN(srv, "jobs", "wait", "j-1");
    if (r->code != rows[i].want)
      fail_msg("row %zu: exit %d, want %d", i, r->code, rows[i].want);
  }
}

static void wait_backoff_caps_at_two_seconds(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, JOB("j-1", "running", ""));
  /* a caller the event stream refuses: the wait polls */
  fake_reply(srv, 403, PROBLEM_JSON, NO_STREAM, NULL);
  for (int i = 0; i < 6; i++)
    fake_json(srv, JOB("j-1", "running", ""));
  fake_json(srv, JOB("j-1", "failed", "exit 3"));
  struct result *r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 1);
  static const int64_t want[] = {200, 400, 800, 1600, 2000, 2000, 2000};
  assert_naps(want, 7);
  assert_string_equal(r->err,
                      "j-1: running\nj-1: running -> failed (exit 3)\n");
  assert_string_equal(r->out, "");
}

/* Where the event stream serves the caller, the wait follows it: every
 * change as it comes, no polling, then one GET for the outcome. */
static void wait_follows_the_event_stream(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, JOB("j-1", "pending", "submitted"));
  fake_json(srv, "{\"items\":[{\"seq\":7,\"from\":null,\"to\":\"pending\","
                 "\"reason\":\"submitted\"}]}");
  fake_reply(srv, 200, "text/event-stream",
             "retry: 3000\nid: 7\nevent: hello\ndata: {\"seq\":7}\n\n"
             ": heartbeat\n\n"
             "id: 9\nevent: job\ndata: {\"seq\":9,\"job\":\"j-1\","
             "\"to\":\"running\",\"reason\":\"up\"}\n\n"
             "id: 12\nevent: job\ndata: {\"seq\":12,\"job\":\"j-1\","
             "\"to\":\"succeeded\",\"reason\":\"exit 0\"}\n\n",
             NULL);
  fake_json(srv, JOB("j-1", "succeeded", "exit 0"));
  struct result *r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->err, "j-1: pending (submitted)\n"
                              "j-1: pending -> running (up)\n"
                              "j-1: running -> succeeded (exit 0)\n");
  assert_int_equal(sleeper.n, 0);
  assert_int_equal(fake_nreq(srv), 4);
  assert_string_equal(fake_req(srv, 2)->target,
                      "/v1/events/stream?job=j-1&after=7");
  assert_string_equal(fake_req(srv, 3)->target, "/v1/jobs/j-1");
}

static void wait_on_a_cancelled_job_exits_4(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, JOB("j-1", "cancelled", "cancelled by user"));
  struct result *r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 4);
  assert_int_equal(sleeper.n, 0);
  fake_json(srv, JOB("j-1", "succeeded", ""));
  r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 0);
}

static void wait_times_out_with_exit_6(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, JOB("j-1", "pending", ""));
  /* a caller the event stream refuses: the wait polls */
  fake_reply(srv, 403, PROBLEM_JSON, NO_STREAM, NULL);
  for (int i = 0; i < 9; i++)
    fake_json(srv, JOB("j-1", "pending", ""));
  struct result *r = RUN(srv, "jobs", "wait", "j-1", "--timeout", "1s");
  assert_int_equal(r->code, 6);
  /* 200 + 400, then only the 400 ms left of the second. */
  static const int64_t want[] = {200, 400, 400};
  assert_naps(want, 3);
  assert_int_equal(fake_nreq(srv), 5);
  assert_non_null(strstr(r->err, "tradewind: timed out after 1s waiting for "
                                 "job j-1 (still pending)\n"));
}

static void wait_rides_out_brief_outages_but_not_long_ones(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 503, PROBLEM_JSON, "{\"detail\":\"draining\"}", NULL);
  fake_reply(srv, 502, "text/plain", "bad gateway", NULL);
  fake_json(srv, JOB("j-1", "succeeded", ""));
  struct result *r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->err, "tradewind: server error (503): draining; "
                                 "retrying\n"));

  for (int i = 0; i < 4; i++)
    fake_reply(srv, 500, PROBLEM_JSON, "{\"title\":\"Internal error\"}", NULL);
  size_t before = fake_nreq(srv);
  r = RUN(srv, "jobs", "wait", "j-1");
  assert_int_equal(r->code, 3);
  assert_int_equal(fake_nreq(srv) - before, 4);
}

static void wait_on_an_unknown_job_exits_5_at_once(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 404, PROBLEM_JSON,
             "{\"title\":\"Not found\",\"detail\":\"no job j-9\"}", NULL);
  struct result *r = RUN(srv, "jobs", "wait", "j-9");
  assert_int_equal(r->code, 5);
  assert_string_equal(r->err, "tradewind: rejected (404): no job j-9\n");
  assert_int_equal(fake_nreq(srv), 1);
}

/* --- jobs list ---------------------------------------------------------- */

static void list_renders_a_table_and_passes_filters(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv,
            "{\"items\":[" JOB("j-1", "pending",
                               "") "," PLACED_JOB "],\"next_cursor\":\"c2\"}");
  struct result *r = RUN(srv, "jobs", "list", "--state", "running", "--tenant",
                         "a b", "--limit", "2");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out,
                      "ID   NAME   STATE    TENANT   PLACEMENT                 "
                      "   AGE\n"
                      "j-1  train  pending  default  -                         "
                      "   10m\n"
                      "j-2  big    running  ml       aws/us-east-1a/p4d.24xlar"
                      "ge  2h\n");
  assert_string_equal(r->err,
                      "tradewind: more jobs: add --cursor c2, or --all\n");
  assert_string_equal(fake_req(srv, 0)->target,
                      "/v1/jobs?state=running&tenant=a b&limit=2");
}

/* A provider priced in CNY gets its amount and rate beside the USD ones;
 * a report of USD alone has no such column. */
static void report_spend_shows_the_source_currency(void **state) {
  struct fake_srv *srv = *state;
  fake_json(
      srv, "{\"from\":\"2025-11-01T00:00:00Z\",\"to\":\"2025-12-01T00:00:00Z\","
           "\"group_by\":[\"provider\"],\"currency\":\"USD\",\"items\":["
           "{\"provider\":\"alibaba\",\"list_cost_uusd\":1779944,"
           "\"effective_cost_uusd\":1779944,\"rows\":2,"
           "\"source_currency\":\"CNY\",\"source_amount\":\"12.777775\","
           "\"rate\":\"0.1393\",\"rate_date\":\"2025-06-30\"},"
           "{\"provider\":\"aws\",\"list_cost_uusd\":96000,"
           "\"effective_cost_uusd\":96000,\"rows\":1}],"
           "\"total\":{\"list_cost_uusd\":1875944,"
           "\"effective_cost_uusd\":1875944},\"forecast\":{},"
           "\"budgets\":{\"items\":[]}}");
  struct result *r = RUN(srv, "report", "spend", "--group-by", "provider");
  assert_int_equal(r->code, 0);
  const char *hdr = strstr(r->out, "IN SOURCE CURRENCY");
  assert_non_null(hdr);
  const char *ali = strstr(r->out, "alibaba");
  assert_non_null(ali);
  assert_non_null(strstr(ali, "CNY 12.777775 at 0.1393 (2025-06-30)"));
  const char *aws = strstr(r->out, "\naws");
  assert_non_null(aws);
  assert_null(strstr(aws, "CNY"));
  fake_json(srv, "{\"group_by\":[\"provider\"],\"items\":["
                 "{\"provider\":\"aws\",\"list_cost_uusd\":96000,"
                 "\"effective_cost_uusd\":96000,\"rows\":1}],"
                 "\"total\":{},\"forecast\":{},\"budgets\":{\"items\":[]}}");
  r = RUN(srv, "report", "spend", "--group-by", "provider");
  assert_int_equal(r->code, 0);
  assert_null(strstr(r->out, "SOURCE CURRENCY"));
}

static void list_all_follows_next_cursor(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, "{\"items\":[" JOB("j-3", "pending", "") "," JOB(
                     "j-2", "pending", "") "],\"next_cursor\":\"c2\"}");
  fake_json(srv,
            "{\"items\":[" JOB("j-1", "pending", "") "],"
                                                     "\"next_cursor\":null}");
  struct result *r =
      RUN(srv, "jobs", "list", "--all", "--limit", "2", "-o", "json");
  assert_int_equal(r->code, 0);
  json_t *j = json_loads(r->out, 0, NULL);
  assert_non_null(j);
  json_t *items = json_object_get(j, "items");
  assert_int_equal(json_array_size(items), 3);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(items, 2), "id")),
      "j-1");
  assert_true(json_is_null(json_object_get(j, "next_cursor")));
  json_decref(j);
  assert_int_equal(fake_nreq(srv), 2);
  assert_string_equal(fake_req(srv, 0)->target, "/v1/jobs?limit=2");
  assert_string_equal(fake_req(srv, 1)->target, "/v1/jobs?limit=2&cursor=c2");

  /* Table mode through the pages, starting at a given cursor. */
  fake_json(srv,
            "{\"items\":[" JOB("j-5", "pending", "") "],"
                                                     "\"next_cursor\":\"c9\"}");
  fake_json(srv, "{\"items\":[],\"next_cursor\":null}");
  r = RUN(srv, "jobs", "list", "--all", "--cursor", "c8");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "\nj-5 "));
  assert_string_equal(r->err, "");
  assert_string_equal(fake_req(srv, 2)->target, "/v1/jobs?cursor=c8");
}

static void list_all_stops_on_a_repeated_cursor(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, "{\"items\":[],\"next_cursor\":\"same\"}");
  fake_json(srv, "{\"items\":[],\"next_cursor\":\"same\"}");
  struct result *r = RUN(srv, "jobs", "list", "--all");
  assert_int_equal(r->code, 3);
  assert_non_null(strstr(r->err, "cursor repeated"));
  assert_int_equal(fake_nreq(srv), 2);
}

static void list_rejects_bad_flags_locally(void **state) {
  struct fake_srv *srv = *state;
  struct result *r = RUN(srv, "jobs", "list", "--state", "runing");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "did you mean \"running\"?"));
  r = RUN(srv, "jobs", "list", "--limit", "0");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "jobs", "list", "--limit", "501");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "--limit: expected 1..500, got \"501\""));
  r = RUN(srv, "jobs", "list", "extra");
  assert_int_equal(r->code, 2);
  assert_int_equal(fake_nreq(srv), 0);
}

static void list_with_a_malformed_answer_exits_3(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, "{\"jobs\":[]}");
  struct result *r = RUN(srv, "jobs", "list");
  assert_int_equal(r->code, 3);
  fake_json(srv, "not json");
  r = RUN(srv, "jobs", "list");
  assert_int_equal(r->code, 3);
  assert_non_null(strstr(r->err, "is not JSON"));
}

/* --- jobs get, cancel, events -------------------------------------------- */

static void get_shows_the_job(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, PLACED_JOB);
  struct result *r = RUN(srv, "jobs", "get", "j-2");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out,
                      "ID         j-2\n"
                      "Name       big\n"
                      "Tenant     ml\n"
                      "Project    p\n"
                      "State      running\n"
                      "Reason     -\n"
                      "Priority   5\n"
                      "Created    2026-11-29T22:10:00.000Z\n"
                      "Updated    2026-11-30T00:00:00.000Z\n"
                      "Placement  aws us-east-1 us-east-1a p4d.24xlarge spot\n"
                      "Price      $12.345678/h\n"
                      "Exit code  3\n");
  assert_string_equal(fake_req(srv, 0)->target, "/v1/jobs/j-2");

  /* Global options after the command; the server's text comes back. */
  fake_json(srv, JOB("j-1", "pending", ""));
  r = RUN(srv, "jobs", "get", "j-1", "-o", "json");
  assert_int_equal(r->code, 0);
  json_t *a = json_loads(r->out, 0, NULL);
  json_t *b = json_loads(JOB("j-1", "pending", ""), 0, NULL);
  assert_true(json_equal(a, b));
  json_decref(a);
  json_decref(b);
}

static void get_unknown_job_exits_5(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 404, PROBLEM_JSON,
             "{\"type\":\"/problems/not-found\",\"title\":\"Not found\","
             "\"status\":404,\"detail\":\"job j-x not found\"}",
             NULL);
  struct result *r = RUN(srv, "jobs", "get", "j-x");
  assert_int_equal(r->code, 5);
  assert_string_equal(r->err, "tradewind: rejected (404): job j-x not found\n");
  assert_string_equal(r->out, "");
  r = RUN(srv, "jobs", "get", "");
  assert_int_equal(r->code, 2);
}

static void cancel_twice_exits_5_with_the_conflict(void **state) {
  struct fake_srv *srv = *state;
  fake_json(srv, JOB("j-1", "cancelled", "cancelled by user"));
  fake_reply(srv, 409, PROBLEM_JSON,
             "{\"title\":\"Conflict\",\"status\":409,\"detail\":\"job j-1 is "
             "already cancelled\"}",
             NULL);
  struct result *r = RUN(srv, "jobs", "cancel", "j-1");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "j-1 cancelled\n");
  assert_string_equal(fake_req(srv, 0)->method, "DELETE");
  assert_string_equal(fake_req(srv, 0)->target, "/v1/jobs/j-1");
  r = RUN(srv, "jobs", "cancel", "j-1");
  assert_int_equal(r->code, 5);
  assert_string_equal(
      r->err, "tradewind: rejected (409): job j-1 is already cancelled\n");
}

static void events_render_oldest_first(void **state) {
  struct fake_srv *srv = *state;
  const char *body =
      "{\"items\":[{\"seq\":1,\"at\":\"2026-11-30T00:00:00.000Z\",\"from\":"
      "null,\"to\":\"pending\",\"reason\":\"submitted\"},{\"seq\":2,\"at\":"
      "\"2026-11-30T00:01:00.000Z\",\"from\":\"pending\",\"to\":\"cancelled\","
      "\"reason\":\"cancelled by user\"}]}";
  fake_json(srv, body);
  struct result *r = RUN(srv, "jobs", "events", "j-1");
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out,
                      "SEQ  AT                        FROM     TO         "
                      "REASON\n"
                      "1    2026-11-30T00:00:00.000Z  -        pending    "
                      "submitted\n"
                      "2    2026-11-30T00:01:00.000Z  pending  cancelled  "
                      "cancelled by user\n");
  assert_string_equal(fake_req(srv, 0)->target, "/v1/jobs/j-1/events");
}

/* --- server faults, URLs and tokens ------------------------------------- */

static void server_errors_exit_3(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 500, PROBLEM_JSON,
             "{\"title\":\"Internal error\",\"status\":500,\"request_id\":"
             "\"r-42\"}",
             NULL);
  struct result *r = RUN(srv, "jobs", "get", "j-1");
  assert_int_equal(r->code, 3);
  assert_string_equal(r->err,
                      "tradewind: server error (500): Internal error (request "
                      "r-42)\n");
}

static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  socklen_t len = sizeof sa;
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, (struct sockaddr *)&sa, sizeof sa);
  getsockname(fd, (struct sockaddr *)&sa, &len);
  close(fd); /* nobody listens there now */
  return ntohs(sa.sin_port);
}

static void unreachable_server_exits_3(void **state) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  struct result *r = run(NULL, NULL, NULL, ARGS("--url", url, "jobs", "list"));
  assert_int_equal(r->code, 3);
  assert_non_null(strstr(r->err, "tradewind: cannot reach http://127.0.0.1:"));
  /* Credentials in the URL are not printed. */
  snprintf(url, sizeof url, "http://user:pw@127.0.0.1:%d/", closed_port());
  r = run(NULL, NULL, NULL, ARGS("jobs", "list", "--url", url));
  assert_int_equal(r->code, 3);
  assert_null(strstr(r->err, "pw"));
  /* Waiting gives up after a few tries, not at once and not never. */
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  r = run(url, NULL, NULL, ARGS("jobs", "wait", "j-1"));
  assert_int_equal(r->code, 3);
  assert_int_equal(sleeper.n, 3);
}

static void url_flag_beats_the_environment(void **state) {
  struct fake_srv *srv = *state;
  char url[96];
  snprintf(url, sizeof url, "%s/", fake_url(srv));
  fake_json(srv, "{\"items\":[],\"next_cursor\":null}");
  struct result *r =
      run("http://127.0.0.1:1", NULL, NULL, ARGS("jobs", "list", "--url", url));
  assert_int_equal(r->code, 0);
  assert_string_equal(r->out, "ID  NAME  STATE  TENANT  PLACEMENT  AGE\n");
  assert_string_equal(fake_req(srv, 0)->target, "/v1/jobs");
  r = RUN(srv, "jobs", "list", "--url", "ftp://example");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "jobs", "list", "--url", "http://a b");
  assert_int_equal(r->code, 2);
}

static void the_token_is_sent_but_never_printed(void **state) {
  struct fake_srv *srv = *state;
  fake_reply(srv, 401, PROBLEM_JSON,
             "{\"title\":\"Unauthorized\",\"detail\":\"bad token\"}", NULL);
  struct result *r = RUN(srv, "jobs", "get", "j-1", "--token", "tok-xyz");
  assert_int_equal(r->code, 5);
  assert_string_equal(fake_req(srv, 0)->authorization, "Bearer tok-xyz");
  assert_null(strstr(r->out, "tok-xyz"));
  assert_null(strstr(r->err, "tok-xyz"));
  /* A token that would split the header is refused before sending. */
  r = run(fake_url(srv), "evil\r\nX-Injected: 1", NULL,
          ARGS("jobs", "get", "j-1"));
  assert_int_equal(r->code, 2);
  assert_null(strstr(r->err, "Injected"));
  assert_int_equal(fake_nreq(srv), 1);
}

/* --- help and usage ----------------------------------------------------- */

static void help_and_version_exit_0(void **state) {
  struct fake_srv *srv = *state;
  struct result *r = RUN(srv, "--help");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "Exit codes:"));
  assert_non_null(strstr(r->out, "  6  timed out waiting\n"));
  assert_non_null(strstr(r->out, "jobs events ID"));
  r = RUN(srv, "help", "submit");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "Usage: tradewind submit FILE"));
  assert_non_null(strstr(r->out, "--idempotency-key"));
  r = RUN(srv, "submit", "--help");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "--wait"));
  r = RUN(srv, "help", "jobs", "list");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "--all"));
  r = RUN(srv, "jobs", "--help");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "jobs cancel ID"));
  r = RUN(srv, "jobs", "wait", "-h");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "--timeout"));
  /* the report formats are listed from their table */
  r = RUN(srv, "report", "spend", "--help");
  assert_int_equal(r->code, 0);
  assert_non_null(strstr(r->out, "Formats:\n"));
  for (const struct tw_report_format *f = tw_report_formats; f->name; f++) {
    char line[128];
    snprintf(line, sizeof line, "\n  %-20s  %s\n", f->name, f->summary);
    assert_non_null(strstr(r->out, line));
  }
  r = RUN(srv, "--version");
  assert_int_equal(r->code, 0);
  assert_memory_equal(r->out, "tradewind ", 10);
  assert_int_equal(fake_nreq(srv), 0);
}

static void usage_errors_exit_2(void **state) {
  struct fake_srv *srv = *state;
  struct result *r = run(fake_url(srv), NULL, NULL, ARGS("-o", "json"));
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "Usage: tradewind"));
  r = RUN(srv, "sbumit", "x");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "did you mean \"submit\"?"));
  r = RUN(srv, "jobs");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "jobs", "lst");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(r->err, "did you mean \"jobs list\"?"));
  r = RUN(srv, "jobs", "list", "-o", "xml");
  assert_int_equal(r->code, 2);
  assert_non_null(
      strstr(r->err, "-o: expected table, wide, json, yaml, name or jsonpath"));
  r = RUN(srv, "jobs", "list", "-o=jsonpath=");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "--bogus", "jobs", "list");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "help", "nothing");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "jobs", "wait", "j-1", "--timeout", "-1s");
  assert_int_equal(r->code, 2);
  r = RUN(srv, "report", "spend", "--format", "xlsx");
  assert_int_equal(r->code, 2);
  assert_non_null(strstr(
      r->err, "--format: expected json, csv, focus, focus-1.2 or html, got \"xlsx\""));
  assert_int_equal(fake_nreq(srv), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
  /* as the program does (cli/main.c): a peer closing mid-write is an
   * error, not a signal */
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
      T(submit_sends_yaml_and_prints_the_id),
      T(submit_sends_json_with_token_and_key),
      T(submit_reads_stdin_and_sniffs_json),
      T(submit_notes_an_idempotent_replay),
      T(submit_invalid_spec_exits_5_naming_the_field),
      T(submit_usage_errors_exit_2_without_a_request),
      T(submit_secret_fills_the_secrets),
      T(submit_wait_follows_states_to_success),
      T(submit_wait_json_prints_only_the_final_job),
      T(submit_wait_exits_with_the_jobs_own_code),
      T(a_job_code_that_collides_is_told_apart_by_stdout),
      T(wait_exit_code_follows_the_job),
      T(wait_backoff_caps_at_two_seconds),
      T(wait_follows_the_event_stream),
      T(wait_on_a_cancelled_job_exits_4),
      T(wait_times_out_with_exit_6),
      T(wait_rides_out_brief_outages_but_not_long_ones),
      T(wait_on_an_unknown_job_exits_5_at_once),
      T(list_renders_a_table_and_passes_filters),
      T(report_spend_shows_the_source_currency),
      T(list_all_follows_next_cursor),
      T(list_all_stops_on_a_repeated_cursor),
      T(list_rejects_bad_flags_locally),
      T(list_with_a_malformed_answer_exits_3),
      T(get_shows_the_job),
      T(get_unknown_job_exits_5),
      T(cancel_twice_exits_5_with_the_conflict),
      T(events_render_oldest_first),
      T(server_errors_exit_3),
      T(unreachable_server_exits_3),
      T(url_flag_beats_the_environment),
      T(the_token_is_sent_but_never_printed),
      T(help_and_version_exit_0),
      T(usage_errors_exit_2),
  };
  int rc = cmocka_run_group_tests_name("cli_commands", tests, NULL, NULL);
  curl_global_cleanup();
  return rc;
}
