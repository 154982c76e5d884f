/* The store layer owns the schema: outside broker/core/store*.{c,h}, no
 * source of the broker's libraries includes sqlite3.h or calls sqlite3_*.
 *
 *   only_the_store_layer_touches_sqlite: walks api/, billing/, broker/,
 *     cli/, policies/ and providers/ under $TW_SOURCE_DIR; every file that
 *     does, other than the store layer and the files still listed in
 *     PENDING, fails the test with its path and line;
 *   pending_files_still_need_their_entry: a PENDING file that no longer
 *     touches sqlite must leave the list, so the list only shrinks. */
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

/* Modules whose statements have not moved behind the store layer yet
 * (issue 13, "one owner of the schema").  Remove a line when its file
 * moves; never add one. */
static const char *const PENDING[] = {
    "broker/tenancy/audit.c",
    "broker/tenancy/tenancy.c",
    "broker/tenancy/tenancy_int.h", "broker/tenancy/tenancy_quota.c",
};
#define N_PENDING (sizeof PENDING / sizeof PENDING[0])

static const char *root;
static size_t root_len;
static int violations;
static bool pending_seen[N_PENDING];

static bool is_store_layer(const char *rel) {
  return !strncmp(rel, "broker/core/store", 17);
}

static int pending_index(const char *rel) {
  for (size_t i = 0; i < N_PENDING; i++)
    if (!strcmp(rel, PENDING[i]))
      return (int)i;
  return -1;
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
  int pi = pending_index(rel);
  if (pi >= 0) {
    pending_seen[pi] = line > 0;
    return 0;
  }
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
  static bool done;
  if (done)
    return;
  done = true;
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

static void pending_files_still_need_their_entry(void **state) {
  (void)state;
  walk();
  int stale = 0;
  for (size_t i = 0; i < N_PENDING; i++)
    if (!pending_seen[i]) {
      fprintf(stderr, "%s no longer touches sqlite: remove it from PENDING\n",
              PENDING[i]);
      stale++;
    }
  assert_int_equal(stale, 0);
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
      cmocka_unit_test(pending_files_still_need_their_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
