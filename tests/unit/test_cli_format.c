/* The CLI's pure parts: option parsing, durations, the exit-code table,
 * problem lines, indented JSON and aligned tables. */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

/* --- options -------------------------------------------------------------- */

enum { O_WAIT = 1, O_TIMEOUT, O_OUT };
static const struct tw_cli_opt opts_a[] = {
    {"wait", 0, false, O_WAIT}, {"timeout", 0, true, O_TIMEOUT}, {0}};
static const struct tw_cli_opt opts_b[] = {{"output", 'o', true, O_OUT}, {0}};
static const struct tw_cli_opt *const tables[] = {opts_a, opts_b, NULL};

static enum tw_rc parse(struct tw_cli_parsed *p, struct tw_err *err, bool stop,
                        int argc, ...) {
  static char *argv[32];
  va_list ap;
  va_start(ap, argc);
  for (int i = 0; i < argc; i++)
    argv[i] = va_arg(ap, char *);
  va_end(ap);
  tw_err_clear(err);
  return tw_cli_opts_parse(tables, argc, argv, stop, p, err);
}

static void options_accept_every_spelling(void **state) {
  struct tw_cli_parsed p;
  struct tw_err err;
  assert_int_equal(parse(&p, &err, false, 7, "f.yaml", "--wait", "--timeout",
                         "5m", "-ojson", "--output=table", "-"),
                   TW_OK);
  assert_int_equal(p.nopts, 4);
  assert_int_equal(p.opts[0].id, O_WAIT);
  assert_null(p.opts[0].value);
  assert_int_equal(p.opts[1].id, O_TIMEOUT);
  assert_string_equal(p.opts[1].value, "5m");
  assert_string_equal(p.opts[2].value, "json");
  assert_string_equal(p.opts[3].value, "table");
  assert_int_equal(p.npos, 2);
  assert_string_equal(p.pos[0], "f.yaml");
  assert_string_equal(p.pos[1], "-");
  tw_cli_parsed_release(&p);

  /* "-o json" as two words, and -- ending the options. */
  assert_int_equal(parse(&p, &err, false, 4, "-o", "json", "--", "--wait"),
                   TW_OK);
  assert_int_equal(p.nopts, 1);
  assert_int_equal(p.npos, 1);
  assert_string_equal(p.pos[0], "--wait");
  tw_cli_parsed_release(&p);
}

static void options_stop_at_the_first_word_when_asked(void **state) {
  struct tw_cli_parsed p;
  struct tw_err err;
  assert_int_equal(parse(&p, &err, true, 4, "-o", "json", "jobs", "--bogus"),
                   TW_OK);
  assert_int_equal(p.nopts, 1);
  assert_int_equal(p.npos, 2);
  assert_string_equal(p.pos[1], "--bogus");
  tw_cli_parsed_release(&p);
}

static void options_errors_name_the_option(void **state) {
  struct tw_cli_parsed p;
  struct tw_err err;
  assert_int_equal(parse(&p, &err, false, 1, "--wiat"), TW_E_INVALID);
  assert_string_equal(err.msg,
                      "unknown option \"--wiat\"; did you mean \"--wait\"?");
  tw_cli_parsed_release(&p);
  assert_int_equal(parse(&p, &err, false, 1, "--timeout"), TW_E_INVALID);
  assert_string_equal(err.msg, "option \"--timeout\" needs a value");
  tw_cli_parsed_release(&p);
  assert_int_equal(parse(&p, &err, false, 1, "--wait=yes"), TW_E_INVALID);
  assert_string_equal(err.msg, "option \"--wait\" takes no value");
  tw_cli_parsed_release(&p);
  assert_int_equal(parse(&p, &err, false, 1, "-x"), TW_E_INVALID);
  assert_string_equal(err.msg, "unknown option \"-x\"");
  tw_cli_parsed_release(&p);
  assert_int_equal(parse(&p, &err, false, 1, "-o"), TW_E_INVALID);
  assert_string_equal(err.msg, "option \"-o\" needs a value");
  tw_cli_parsed_release(&p);
  assert_int_equal(parse(&p, &err, false, 1, "--zzzzzzzzzz"), TW_E_INVALID);
  assert_string_equal(err.msg, "unknown option \"--zzzzzzzzzz\"");
  tw_cli_parsed_release(&p);
}

static void durations_parse_units_and_reject_nonsense(void **state) {
  static const struct {
    const char *in;
    int64_t ms; /* -1: rejected */
  } cases[] = {
      {"90", 90000},    {"500ms", 500},      {"30s", 30000},
      {"5m", 300000},   {"1h30m", 5400000},  {"2d", 172800000},
      {"1m30s", 90000}, {"30d", 2592000000}, {"31d", -1},
      {"0", -1},        {"0s", -1},          {"", -1},
      {"5x", -1},       {"h", -1},           {"1.5h", -1},
      {"-5s", -1},      {"5m3", -1},         {"9999999999s", -1},
      {" 5s", -1},      {"12345678", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t ms = 0;
    int r = tw_cli_parse_duration_ms(cases[i].in, &ms);
    if (cases[i].ms < 0) {
      if (r != -1)
        fail_msg("\"%s\" was accepted as %lld ms", cases[i].in, (long long)ms);
    } else {
      if (r != 0 || ms != cases[i].ms)
        fail_msg("\"%s\": got r=%d ms=%lld, want %lld", cases[i].in, r,
                 (long long)ms, (long long)cases[i].ms);
    }
  }
}

static void integers_parse_within_bounds(void **state) {
  long v;
  assert_int_equal(tw_cli_parse_int("50", 1, 500, &v), 0);
  assert_int_equal(v, 50);
  assert_int_equal(tw_cli_parse_int("0", 1, 500, &v), -1);
  assert_int_equal(tw_cli_parse_int("501", 1, 500, &v), -1);
  assert_int_equal(tw_cli_parse_int("5x", 1, 500, &v), -1);
  assert_int_equal(tw_cli_parse_int("", 1, 500, &v), -1);
  assert_int_equal(tw_cli_parse_int(" 5", 1, 500, &v), -1);
  assert_int_equal(tw_cli_parse_int("99999999999999999999", 1, 500, &v), -1);
}

/* --- exit codes ----------------------------------------------------------- */

static void exit_codes_follow_the_documented_table(void **state) {
  assert_int_equal(tw_cli_exit_for_rc(TW_OK), 0);
  /* Every 4xx the server can send is a rejection... */
  static const long rejected[] = {400, 401, 403, 404, 405, 409,
                                  412, 413, 415, 422, 429, 418};
  for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
    if (tw_cli_exit_for_rc(tw_cli_http_status_rc(rejected[i])) != 5)
      fail_msg("status %ld does not exit 5", rejected[i]);
  /* ...and every 5xx, like no answer at all, is exit 3. */
  static const long unreachable[] = {500, 502, 503, 504, 599, 302, 101};
  for (size_t i = 0; i < sizeof unreachable / sizeof unreachable[0]; i++)
    if (tw_cli_exit_for_rc(tw_cli_http_status_rc(unreachable[i])) != 3)
      fail_msg("status %ld does not exit 3", unreachable[i]);
  assert_int_equal(tw_cli_http_status_rc(200), TW_OK);
  assert_int_equal(tw_cli_http_status_rc(201), TW_OK);
  assert_int_equal(tw_cli_http_status_rc(409), TW_E_CONFLICT);
  assert_int_equal(tw_cli_http_status_rc(404), TW_E_NOTFOUND);
  assert_int_equal(tw_cli_exit_for_rc(TW_E_IO), 3);

  assert_int_equal(tw_cli_exit_for_state("succeeded"), 0);
  assert_int_equal(tw_cli_exit_for_state("failed"), 1);
  assert_int_equal(tw_cli_exit_for_state("cancelled"), 4);
  assert_int_equal(tw_cli_exit_for_state("running"), -1);
  assert_int_equal(tw_cli_exit_for_state("interrupted"), -1);
  assert_int_equal(tw_cli_exit_for_state(NULL), -1);
  /* The values scripts rely on. */
  assert_int_equal(TW_EXIT_USAGE, 2);
  assert_int_equal(TW_EXIT_CANCELLED, 4);
  assert_int_equal(TW_EXIT_TIMEOUT, 6);
}

/* --- problem lines -------------------------------------------------------- */

static char *problem(long status, const char *body) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_problem_line(status, body, body ? strlen(body) : 0, &b);
  return tw_buf_detach(&b);
}

#define ASSERT_PROBLEM(status, body, want)                                     \
  do {                                                                         \
    char *got_ = problem(status, body);                                        \
    assert_string_equal(got_, want);                                           \
    free(got_);                                                                \
  } while (0)

static void problem_lines_read_rfc9457(void **state) {
  /* The contract's example: the detail already names the field. */
  ASSERT_PROBLEM(400,
                 "{\"type\":\"/problems/invalid-field\",\"title\":\"Invalid "
                 "field\",\"status\":400,\"detail\":\"resources.cpus: expected "
                 "a number or N+, got \\\"eight\\\"\",\"field\":"
                 "\"resources.cpus\",\"request_id\":\"r1\"}",
                 "rejected (400): resources.cpus: expected a number or N+, got "
                 "\"eight\"");
  /* A detail that does not name the field gets it in front. */
  ASSERT_PROBLEM(400,
                 "{\"title\":\"Invalid field\",\"detail\":\"expected a "
                 "number\",\"field\":\"nodes\"}",
                 "rejected (400): nodes: expected a number");
  /* No detail: the title, still with the field. */
  ASSERT_PROBLEM(409, "{\"title\":\"Conflict\",\"status\":409}",
                 "rejected (409): Conflict");
  ASSERT_PROBLEM(409,
                 "{\"detail\":\"job j-1 is already cancelled\",\"status\":409}",
                 "rejected (409): job j-1 is already cancelled");
  /* 5xx carry the request id for the operator's log. */
  ASSERT_PROBLEM(503,
                 "{\"title\":\"Service Unavailable\",\"detail\":\"draining\","
                 "\"request_id\":\"r-77\"}",
                 "server error (503): draining (request r-77)");
}

static void problem_lines_survive_other_bodies(void **state) {
  ASSERT_PROBLEM(404, NULL, "rejected (404): Not Found");
  ASSERT_PROBLEM(404, "", "rejected (404): Not Found");
  ASSERT_PROBLEM(502, "\n<html>bad gateway</html>\nmore",
                 "server error (502): <html>bad gateway</html>");
  ASSERT_PROBLEM(400, "{\"detail\":42}", "rejected (400): {\"detail\":42}");
  ASSERT_PROBLEM(418, NULL, "rejected (418): no details");
  /* Control characters cannot reach the terminal. */
  ASSERT_PROBLEM(400, "{\"detail\":\"a\\u001b[31mred\\nline\"}",
                 "rejected (400): a?[31mred?line");
  /* Long details are cut, on a character boundary. */
  struct tw_buf big;
  tw_buf_init(&big);
  tw_buf_adds(&big, "{\"detail\":\"x"); /* é then starts at odd offsets */
  for (int i = 0; i < 300; i++)
    tw_buf_adds(&big, "\xc3\xa9"); /* é, two bytes */
  tw_buf_adds(&big, "\"}");
  char *line = problem(400, big.data);
  assert_non_null(strstr(line, "..."));
  size_t prefix = strlen("rejected (400): ");
  /* Byte 400 is the second half of an é: the cut moves back to 399. */
  assert_int_equal(strlen(line), prefix + 399 + 3);
  assert_int_equal((unsigned char)line[prefix + 397], 0xc3);
  assert_int_equal((unsigned char)line[prefix + 398], 0xa9);
  free(line);
  tw_buf_release(&big);
}

/* --- JSON ------------------------------------------------------------------
 */

static void json_is_indented_token_for_token(void **state) {
  const char *in =
      "{\"id\":\"j-1\",\"n\":1.10,\"s\":\"a, b: {c}\\\"\","
      "\"e\":{},\"a\":[],\"l\":[1, {\"x\":null}],\"u\":\"\\u00e9\"}";
  const char *want = "{\n"
                     "  \"id\": \"j-1\",\n"
                     "  \"n\": 1.10,\n"
                     "  \"s\": \"a, b: {c}\\\"\",\n"
                     "  \"e\": {},\n"
                     "  \"a\": [],\n"
                     "  \"l\": [\n"
                     "    1,\n"
                     "    {\n"
                     "      \"x\": null\n"
                     "    }\n"
                     "  ],\n"
                     "  \"u\": \"\\u00e9\"\n"
                     "}";
  struct tw_buf b;
  struct tw_err err;
  tw_buf_init(&b);
  tw_err_clear(&err);
  assert_int_equal(tw_cli_json_pretty(in, strlen(in), &b, &err), TW_OK);
  assert_string_equal(b.data, want);
  tw_buf_release(&b);

  assert_int_equal(tw_cli_json_pretty("{\"a\":", 5, &b, &err), TW_E_INVALID);
  assert_non_null(strstr(err.msg, "not JSON"));
  assert_null(b.data);
  tw_err_clear(&err);
  assert_int_equal(tw_cli_json_pretty("{} x", 4, &b, &err), TW_E_INVALID);
  tw_err_clear(&err);
  assert_int_equal(tw_cli_json_pretty("\"s\"", 3, &b, &err), TW_OK);
  assert_string_equal(b.data, "\"s\"");
  tw_buf_release(&b);
}

/* --- tables and small formats ------------------------------------------- */

static void tables_align_columns_by_characters(void **state) {
  static const char *const headers[] = {"ID", "NAME", "STATE"};
  struct tw_cli_table t;
  struct tw_buf b;
  tw_cli_table_init(&t, 3, headers);
  const char *r1[] = {"j-1", "tr\xc3\xa4in", "pending"};
  const char *r2[] = {"j-200", NULL, "running"};
  const char *r3[] = {"j-3", "evil\x1b[2J", ""};
  tw_cli_table_add(&t, r1);
  tw_cli_table_add(&t, r2);
  tw_cli_table_add(&t, r3);
  tw_buf_init(&b);
  tw_cli_table_render(&t, &b);
  assert_string_equal(b.data, "ID     NAME      STATE\n"
                              "j-1    tr\xc3\xa4in     pending\n"
                              "j-200  -         running\n"
                              "j-3    evil?[2J  -\n");
  tw_buf_release(&b);
  tw_cli_table_release(&t);

  /* No header row: key-value lists. */
  tw_cli_table_init(&t, 2, NULL);
  tw_buf_init(&b);
  tw_cli_table_render(&t, &b);
  assert_string_equal(b.data, "");
  tw_buf_release(&b);
  const char *kv[] = {"Exit code", "3"};
  tw_cli_table_add(&t, kv);
  tw_buf_init(&b);
  tw_cli_table_render(&t, &b);
  assert_string_equal(b.data, "Exit code  3\n");
  tw_buf_release(&b);
  tw_cli_table_release(&t);
}

static void money_and_ages_format_without_floats(void **state) {
  char s[48];
  tw_cli_fmt_uusd(12345678, s, sizeof s);
  assert_string_equal(s, "$12.345678");
  tw_cli_fmt_uusd(1500000, s, sizeof s);
  assert_string_equal(s, "$1.50");
  tw_cli_fmt_uusd(0, s, sizeof s);
  assert_string_equal(s, "$0.00");
  tw_cli_fmt_uusd(1, s, sizeof s);
  assert_string_equal(s, "$0.000001");
  tw_cli_fmt_uusd(-2500, s, sizeof s);
  assert_string_equal(s, "-$0.0025");
  tw_cli_fmt_uusd(INT64_MIN, s, sizeof s);
  assert_string_equal(s, "-$9223372036854.775808");

  tw_cli_fmt_age(0, s, sizeof s);
  assert_string_equal(s, "0s");
  tw_cli_fmt_age(59999, s, sizeof s);
  assert_string_equal(s, "59s");
  tw_cli_fmt_age(60000, s, sizeof s);
  assert_string_equal(s, "1m");
  tw_cli_fmt_age(3 * 3600000 + 1, s, sizeof s);
  assert_string_equal(s, "3h");
  tw_cli_fmt_age(50 * 3600000LL, s, sizeof s);
  assert_string_equal(s, "2d");
  tw_cli_fmt_age(-5, s, sizeof s);
  assert_string_equal(s, "-");

  tw_cli_fmt_duration(5400000, s, sizeof s);
  assert_string_equal(s, "1h30m");
  tw_cli_fmt_duration(1500, s, sizeof s);
  assert_string_equal(s, "1s500ms");
  tw_cli_fmt_duration(0, s, sizeof s);
  assert_string_equal(s, "0s");
}

static void escaping_keeps_only_unreserved_characters(void **state) {
  char *e = tw_cli_http_escape("j-1_a.b~c");
  assert_string_equal(e, "j-1_a.b~c");
  free(e);
  e = tw_cli_http_escape("a/b c?&=\xc3\xa9");
  assert_string_equal(e, "a%2Fb%20c%3F%26%3D%C3%A9");
  free(e);
  e = tw_cli_http_escape("");
  assert_string_equal(e, "");
  free(e);
}

int main(void) {
  /* as the program does (cli/main.c): a peer closing mid-write is an
   * error, not a signal */
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(options_accept_every_spelling),
      cmocka_unit_test(options_stop_at_the_first_word_when_asked),
      cmocka_unit_test(options_errors_name_the_option),
      cmocka_unit_test(durations_parse_units_and_reject_nonsense),
      cmocka_unit_test(integers_parse_within_bounds),
      cmocka_unit_test(exit_codes_follow_the_documented_table),
      cmocka_unit_test(problem_lines_read_rfc9457),
      cmocka_unit_test(problem_lines_survive_other_bodies),
      cmocka_unit_test(json_is_indented_token_for_token),
      cmocka_unit_test(tables_align_columns_by_characters),
      cmocka_unit_test(money_and_ages_format_without_floats),
      cmocka_unit_test(escaping_keeps_only_unreserved_characters),
  };
  return cmocka_run_group_tests_name("cli_format", tests, NULL, NULL);
}
