/* The store layer owns the schema: outside broker/core/store*.{c,h} and
 * the database interface under it (broker/core/db*.{c,h}), no source of
 * the broker's libraries includes sqlite3.h or calls sqlite3_*; outside
 * broker/core/db_pg.c, none includes libpq-fe.h or calls libpq (PQ*).
 *
 *   only_the_store_layer_touches_sqlite: walks api/, billing/, broker/,
 *     cli/, policies/ and providers/ under $TW_SOURCE_DIR; every file that
 *     does, other than the store layer, fails the test with its path and
 *     line.  There are no exceptions: every module's statements are in
 *     the store layer.
 *   only_the_postgres_backend_touches_libpq: the same walk for libpq. */
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
  return !strncmp(rel, "broker/core/store", 17) ||
         !strncmp(rel, "broker/core/db", 14);
}

static bool pq_mode; /* the walk looks for libpq rather than sqlite */

/* Whether line calls a libpq function: "PQ" + an upper-case letter at the
 * start of a word. */
static bool calls_libpq(const char *line) {
  for (const char *p = line; (p = strstr(p, "PQ")); p++)
    if ((p == line || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                        (p[-1] >= 'A' && p[-1] <= 'Z') ||
                        (p[-1] >= '0' && p[-1] <= '9'))) &&
        p[2] >= 'a' && p[2] <= 'z' && strchr(p, '('))
      return true;
  return false;
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
    bool comment = !strncmp(p, "/*", 2) || !strncmp(p, "*", 1);
    if (pq_mode) {
      if (!strncmp(p, "#include", 8) && strstr(p, "libpq-fe.h"))
        hit = n;
      else if (!comment && calls_libpq(line))
        hit = n;
    } else if (!strncmp(p, "#include", 8) && strstr(p, "sqlite3.h"))
      hit = n;
    else if (strstr(line, "sqlite3_") && !comment)
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
  if (pq_mode ? !strcmp(rel, "broker/core/db_pg.c") : is_store_layer(rel))
    return 0;
  int line = touches_sqlite(path);
  if (line) {
    fprintf(stderr,
            pq_mode ? "%s:%d: libpq outside broker/core/db_pg.c: go through "
                      "the database interface of broker/core/db.h\n"
                    : "%s:%d: sqlite outside the store layer: move the "
                      "statement into broker/core/store*.c behind a typed "
                      "function\n",
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
  pq_mode = false;
  violations = 0;
  walk();
  assert_int_equal(violations, 0);
}

static void only_the_postgres_backend_touches_libpq(void **state) {
  (void)state;
  pq_mode = true;
  violations = 0;
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
      cmocka_unit_test(only_the_postgres_backend_touches_libpq),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
