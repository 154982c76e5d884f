/* The structured output formats of the CLI (cli/format.c): YAML read back
 * by the project's own YAML parser gives the same document, kubectl-style
 * JSONPath templates, -o name, --sort-by, and the "=" form of short
 * options. */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/node.h"
#include "cli/cli_int.h"

/* YAML text -> tw_node -> JSON text -> jansson, for comparison. */
static json_t *yaml_back(const char *yaml) {
  struct tw_node *n = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  assert_int_equal(tw_node_parse_yaml(yaml, strlen(yaml), &n, &err), TW_OK);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "");
  tw_node_to_json(n, &b);
  tw_node_free(n);
  json_t *v = json_loads(b.data, JSON_DECODE_ANY, NULL);
  tw_buf_release(&b);
  assert_non_null(v);
  return v;
}

static void yaml_reads_back_as_the_same_document(void **state) {
  (void)state;
  /* strings that plain YAML would take for something else stay strings:
   * tw_node_to_json keeps plain ints and booleans bare, so a lost quote
   * shows up as a type change */
  const char *doc =
      "{\"items\":[{\"id\":\"j-1\",\"name\":\"a: b\",\"n\":3,"
      "\"ok\":true,\"none\":null,\"s\":\"true\",\"num\":\"0123\","
      "\"neg\":\"-5\",\"hash\":\"# x\",\"nl\":\"line1\\nline2\","
      "\"empty\":\"\",\"o\":{},\"a\":[],\"nest\":[[1,2],{\"k\":[\"v\"]}],"
      "\"env\":{\"Y\":\"yes\",\"N\":\"no\",\"T\":\"~\"}}],"
      "\"next_cursor\":null}";
  json_t *v = json_loads(doc, 0, NULL);
  assert_non_null(v);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_yaml(v, &b);
  json_t *back = yaml_back(b.data);
  /* tw_node_to_json writes null as null and numbers bare: compare all */
  json_t *items = json_object_get(back, "items");
  json_t *it = json_array_get(items, 0);
  assert_string_equal(json_string_value(json_object_get(it, "name")), "a: b");
  assert_int_equal(json_integer_value(json_object_get(it, "n")), 3);
  assert_true(json_is_true(json_object_get(it, "ok")));
  assert_true(json_is_null(json_object_get(it, "none")));
  assert_string_equal(json_string_value(json_object_get(it, "s")), "true");
  assert_string_equal(json_string_value(json_object_get(it, "num")), "0123");
  assert_string_equal(json_string_value(json_object_get(it, "neg")), "-5");
  assert_string_equal(json_string_value(json_object_get(it, "hash")), "# x");
  assert_string_equal(json_string_value(json_object_get(it, "nl")),
                      "line1\nline2");
  assert_string_equal(json_string_value(json_object_get(it, "empty")), "");
  assert_true(json_equal(json_object_get(it, "nest"),
                         json_object_get(json_array_get(
                                             json_object_get(v, "items"), 0),
                                         "nest")));
  json_t *env = json_object_get(it, "env");
  assert_string_equal(json_string_value(json_object_get(env, "Y")), "yes");
  assert_string_equal(json_string_value(json_object_get(env, "N")), "no");
  assert_string_equal(json_string_value(json_object_get(env, "T")), "~");
  assert_true(json_is_object(json_object_get(it, "o")));
  assert_true(json_is_array(json_object_get(it, "a")));
  assert_true(json_equal(back, v));
  json_decref(back);
  json_decref(v);
  tw_buf_release(&b);
}

static void jsonpath_templates_as_kubectl_writes_them(void **state) {
  (void)state;
  json_t *v = json_loads("{\"items\":[{\"id\":\"j-1\",\"state\":\"running\","
                         "\"placement\":{\"zone\":\"us-east-1a\"}},"
                         "{\"id\":\"j-2\",\"state\":\"pending\","
                         "\"placement\":null}],\"n\":2}",
                         0, NULL);
  struct {
    const char *tmpl, *want;
  } cases[] = {
      {"{.items[*].id}", "j-1 j-2"},
      {"{.items[0].placement.zone}", "us-east-1a"},
      {"{.items[-1].state}", "pending"},
      {"{.items[*]['id']}", "j-1 j-2"},
      {"{$.n}", "2"},
      {".items[1].id", "j-2"},
      {"id={.items[0].id}{\"\\n\"}", "id=j-1\n"},
      {"{.items[0].id}\\t{.items[1].id}", "j-1\tj-2"},
      {"{.items[5].id}", ""},
      {"{.items[1].placement}", "null"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_buf b;
    struct tw_err err;
    tw_buf_init(&b);
    tw_err_clear(&err);
    assert_int_equal(tw_cli_jsonpath(cases[i].tmpl, v, &b, &err), TW_OK);
    assert_string_equal(b.data, cases[i].want);
    tw_buf_release(&b);
  }
  const char *bad[] = {"{.items[x]}", "{.items[0}", "{.items..id}",
                       "{range .items[*]}{.id}{end}", "{.a"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct tw_buf b;
    struct tw_err err;
    tw_buf_init(&b);
    tw_err_clear(&err);
    assert_int_equal(tw_cli_jsonpath(bad[i], v, &b, &err), TW_E_INVALID);
    assert_non_null(strstr(err.msg, "jsonpath"));
    tw_buf_release(&b);
  }
  json_decref(v);
}

static void names_and_sorting(void **state) {
  (void)state;
  json_t *v = json_loads(
      "{\"items\":[{\"id\":\"j-b\",\"name\":\"zeta\",\"p\":{\"x\":30}},"
      "{\"id\":\"j-a\",\"name\":\"alpha\",\"p\":{\"x\":4}},"
      "{\"id\":\"j-c\",\"name\":\"mid\"},"
      "{\"id\":\"j-d\",\"name\":\"beta\",\"p\":{\"x\":100}}]}",
      0, NULL);
  struct tw_buf b;
  struct tw_err err;
  tw_buf_init(&b);
  tw_cli_names(v, &b);
  assert_string_equal(b.data, "j-b\nj-a\nj-c\nj-d\n");
  tw_buf_release(&b);
  json_t *items = json_object_get(v, "items");
  tw_err_clear(&err);
  assert_int_equal(tw_cli_sort_items(items, ".name", &err), TW_OK);
  tw_buf_init(&b);
  tw_cli_names(v, &b);
  assert_string_equal(b.data, "j-a\nj-d\nj-c\nj-b\n");
  tw_buf_release(&b);
  /* numbers numerically (4 < 30 < 100), the missing one last */
  assert_int_equal(tw_cli_sort_items(items, "{.p.x}", &err), TW_OK);
  tw_buf_init(&b);
  tw_cli_names(v, &b);
  assert_string_equal(b.data, "j-a\nj-b\nj-d\nj-c\n");
  tw_buf_release(&b);
  assert_int_equal(tw_cli_sort_items(items, ".p[", &err), TW_E_INVALID);
  json_decref(v);
  /* a single object: its id */
  v = json_loads("{\"name\":\"n\",\"tenant\":\"t\"}", 0, NULL);
  tw_buf_init(&b);
  tw_cli_names(v, &b);
  assert_string_equal(b.data, "n\n");
  tw_buf_release(&b);
  json_decref(v);
}

static void short_options_take_the_equals_form(void **state) {
  (void)state;
  static const struct tw_cli_opt o[] = {{"output", 'o', true, 1},
                                        {"quiet", 'q', false, 2},
                                        {"state", 0, true, 3},
                                        {0}};
  static const struct tw_cli_opt *const t[] = {o, NULL};
  char *argv[] = {"-o=json", "--state=a", "--state", "b", "-q"};
  struct tw_cli_parsed p;
  struct tw_err err;
  tw_err_clear(&err);
  assert_int_equal(tw_cli_opts_parse(t, 5, argv, false, &p, &err), TW_OK);
  assert_int_equal(p.nopts, 4);
  assert_string_equal(p.opts[0].value, "json");
  assert_string_equal(p.opts[1].value, "a");
  assert_string_equal(p.opts[2].value, "b");
  assert_int_equal(p.opts[3].id, 2);
  tw_cli_parsed_release(&p);
  char *bad[] = {"-q=1"};
  assert_int_equal(tw_cli_opts_parse(t, 1, bad, false, &p, &err),
                   TW_E_INVALID);
  assert_non_null(strstr(err.msg, "takes no value"));
  tw_cli_parsed_release(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(yaml_reads_back_as_the_same_document),
      cmocka_unit_test(jsonpath_templates_as_kubectl_writes_them),
      cmocka_unit_test(names_and_sorting),
      cmocka_unit_test(short_options_take_the_equals_form),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
