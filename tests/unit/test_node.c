/* The document tree: YAML and JSON front-ends, positions, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "broker/base/node.h"

static struct tw_node *yaml(const char *t, enum tw_rc want,
                            struct tw_err *err) {
  struct tw_node *n = NULL;
  tw_err_clear(err);
  assert_int_equal(tw_node_parse_yaml(t, strlen(t), &n, err), want);
  return n;
}

static struct tw_node *json(const char *t, enum tw_rc want,
                            struct tw_err *err) {
  struct tw_node *n = NULL;
  tw_err_clear(err);
  assert_int_equal(tw_node_parse_json(t, strlen(t), &n, err), want);
  return n;
}

static void yaml_and_json_build_the_same_tree(void **state) {
  (void)state;
  struct tw_err err;
  struct tw_node *a = yaml(
      "name: x\nn: 8\nq: \"8\"\nl: [1, two]\nz: ~\nb: true\n", TW_OK, &err);
  struct tw_node *b = json("{\"name\":\"x\",\"n\":8,\"q\":\"8\",\"l\":[1,"
                           "\"two\"],\"z\":null,\"b\":true}",
                           TW_OK, &err);
  struct tw_buf ja, jb;
  tw_buf_init(&ja);
  tw_buf_init(&jb);
  tw_node_to_json(a, &ja);
  tw_node_to_json(b, &jb);
  assert_string_equal(ja.data, jb.data);
  assert_string_equal(ja.data, "{\"name\":\"x\",\"n\":8,\"q\":\"8\",\"l\":[1,"
                               "\"two\"],\"z\":null,\"b\":true}");
  int64_t v;
  assert_true(tw_node_as_int(tw_node_get(a, "n"), &v));
  assert_int_equal(v, 8);
  /* a quoted "8" is a string */
  assert_false(tw_node_as_int(tw_node_get(a, "q"), &v));
  assert_string_equal(tw_node_type_name(tw_node_get(a, "q")), "string");
  assert_string_equal(tw_node_type_name(tw_node_get(b, "b")), "boolean");
  assert_int_equal(tw_node_get(a, "l")->line, 4);
  tw_buf_release(&ja);
  tw_buf_release(&jb);
  tw_node_free(a);
  tw_node_free(b);
}

static void bad_input_is_refused_with_a_position(void **state) {
  (void)state;
  struct tw_err err;
  yaml("a: [1, 2\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "malformed YAML at line"));
  yaml("a: 1\na: 2\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "duplicate key \"a\""));
  yaml("a: &x 1\nb: *x\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "aliases are not supported"));
  yaml("a: 1\n---\nb: 2\n", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "single document"));
  yaml("", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "empty"));
  json("{\"a\": 1,}", TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "malformed JSON at line 1"));
  json("{\"a\":1,\"a\":2}", TW_E_INVALID, &err);
  json("{a: 1}", TW_E_INVALID, &err);
}

static void nesting_is_bounded(void **state) {
  (void)state;
  struct tw_err err;
  char deep[400];
  int d = 100;
  for (int i = 0; i < d; i++)
    deep[i] = '[';
  for (int i = 0; i < d; i++)
    deep[d + i] = ']';
  deep[2 * d] = '\0';
  yaml(deep, TW_E_INVALID, &err);
  assert_non_null(strstr(err.msg, "nested deeper"));
  json(deep, TW_E_INVALID, &err);
}

static void closest_key(void **state) {
  (void)state;
  const char *c[] = {"accelerators", "cpus", "memory", NULL};
  assert_string_equal(tw_closest("acelerators", c), "accelerators");
  assert_string_equal(tw_closest("cpu", c), "cpus");
  assert_null(tw_closest("zebra", c));
  assert_int_equal(tw_edit_distance("kitten", "sitting"), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(yaml_and_json_build_the_same_tree),
      cmocka_unit_test(bad_input_is_refused_with_a_position),
      cmocka_unit_test(nesting_is_bounded),
      cmocka_unit_test(closest_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
