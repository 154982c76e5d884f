/* The server's route table and api/openapi.yaml describe the same routes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "broker/base/node.h"
#include "tests/twtest.h"


static void routes_match_the_document(void **state) {
  (void)state;
  const char *src = getenv("TW_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/api/openapi.yaml", src ? src : ".");
  size_t len = 0;
  char *text = tw_test_slurp(path, &len);
  assert_non_null(text);
  struct tw_node *doc = NULL;
  struct tw_err err = {0};
  if (tw_node_parse_yaml(text, len, &doc, &err))
    fail_msg("%s: %s", path, err.msg);
  free(text);
  assert_string_equal(tw_node_get(doc, "openapi")->str, "3.0.3");
  const struct tw_node *paths = tw_node_get(doc, "paths");
  assert_non_null(paths);

  size_t n;
  const struct tw_api_route_info *routes = tw_api_route_table(&n);
  static const char *const methods[] = {"get",    "post",  "put",
                                        "delete", "patch", NULL};
  size_t documented = 0;
  for (size_t i = 0; i < paths->n; i++)
    for (int m = 0; methods[m]; m++) {
      if (!tw_node_get(paths->items[i], methods[m]))
        continue;
      documented++;
      bool found = false;
      for (size_t k = 0; k < n; k++)
        if (!strcmp(routes[k].path, paths->keys[i]) &&
            !strcasecmp(routes[k].method, methods[m]))
          found = true;
      if (!found)
        fail_msg("documented but not served: %s %s", methods[m],
                 paths->keys[i]);
    }
  for (size_t k = 0; k < n; k++) {
    const struct tw_node *p = tw_node_get(paths, routes[k].path);
    char lower[16];
    snprintf(lower, sizeof lower, "%s", routes[k].method);
    for (char *c = lower; *c; c++)
      *c = (char)(*c - 'A' + 'a');
    if (!p || !tw_node_get(p, lower))
      fail_msg("served but not documented: %s %s", routes[k].method,
               routes[k].path);
  }
  free((void *)routes);
  assert_int_equal(documented, n);
  tw_node_free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(routes_match_the_document)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
