/* The store layer owns the schema: outside broker/core/store*.{c,h}, no
 * source of the broker's libraries includes sqlite3.h or calls sqlite3_*.
 *
 *   only_the_store_layer_touches_sqlite: walks api/, billing/, broker/,
 *     cli/, policies/ and providers/ under $TW_SOURCE_DIR; every file that
 *     does, other than the store layer, fails the test with its path and
 *     line.  There are no exceptions: every module's statements are in
 *     the store layer. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *root;
static size_t root_len;
static int violations;

static bool is_store_layer(const char *rel) {
  return !strncmp(rel, "broker/core/store", 17);
}

/* First line of path that includes sqlite3.h or calls sqlite3_*, or 0. */
static int touches_sqlite(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char line[4096];
  int n = 0, hit = 0;
  while (!hit && fgets(line, sizeof line, f)) {
    n++;
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (!strncmp(p, "#include", 8) && strstr(p, "sqlite3.h"))
      hit = n;
    else if (strstr(line, "sqlite3_") && strncmp(p, "/*", 2) &&
             strncmp(p, "*", 1))
      hit = n;
  }
  fclose(f);
  return hit;
}

static int visit(const char *path, const struct stat *sb, int type,
                 struct FTW *ftw) {
  (void)sb, (void)ftw;
  size_t len = strlen(path);
  if (type != FTW_F || len < 3 ||
      (strcmp(path + len - 2, ".c") && strcmp(path + len - 2, ".h")))
    return 0;
  const char *rel = path + root_len + 1;
  if (is_store_layer(rel))
    return 0;
  int line = touches_sqlite(path);
  if (line) {
    fprintf(stderr,
            "%s:%d: sqlite outside the store layer: move the statement "
            "into broker/core/store*.c behind a typed function\n",
            rel, line);
    violations++;
  }
  return 0;
}

static void walk(void) {
  static const char *const dirs[] = {"api", "billing",  "broker",
                                     "cli", "policies", "providers"};
  char p[4096];
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
    nftw(p, visit, 16, FTW_PHYS);
  }
}

static void only_the_store_layer_touches_sqlite(void **state) {
  (void)state;
  walk();
  assert_int_equal(violations, 0);
}

int main(void) {
  root = getenv("TW_SOURCE_DIR");
  if (!root || !*root) {
    fprintf(stderr, "TW_SOURCE_DIR is not set\n");
    return 77;
  }
  root_len = strlen(root);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(only_the_store_layer_touches_sqlite),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
