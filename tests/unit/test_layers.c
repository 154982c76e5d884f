/* test_layers.c - every #include points down the layers.
 *
 * The layers, bottom up, and what each may include besides itself
 * (docs/architecture.md draws the same picture):
 *
 *   base        broker/base/        nothing of ours
 *   core        broker/core/        base
 *   providers   providers/ (files)  core, base
 *   adapter     providers/<cloud>/  providers, core, base, and its own folder
 *   place       policies/place/     core, base
 *   fallback    policies/fallback/  place, core, base
 *   plugins     policies/plugins/   place, core, base
 *   catalog     billing/catalog/    providers, place, fallback, core, base
 *   ledger      billing/ledger/     catalog and what it may include
 *   report      billing/report/     ledger, catalog and below
 *   tenancy     broker/tenancy/     billing, policies, providers and below
 *   sched       broker/sched/       tenancy and below
 *   api         api/                sched and below
 *   cli         cli/                sched and below (never api)
 *   daemon      broker/daemon.*, broker/main.c   everything above
 *   agent       agent/              base only (tradewind-agent runs on the
 *                                   instance, apart from the daemon)
 *
 * providers and policies are siblings: neither includes the other.  No file
 * outside an adapter's folder includes that folder: a new cloud is one
 * folder.  tests/ and bench/ may include anything, but what they include
 * must exist.  Every quoted include names its header from the source root.
 *
 * The test reads the tree named by TW_SOURCE_DIR (or argv[1]). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum layer {
  L_NONE = -1,
  L_BASE,
  L_CORE,
  L_PROVIDERS,
  L_ADAPTER,
  L_PLACE,
  L_FALLBACK,
  L_PLUGINS,
  L_CATALOG,
  L_LEDGER,
  L_REPORT,
  L_TENANCY,
  L_SCHED,
  L_API,
  L_CLI,
  L_DAEMON,
  L_AGENT,
  L_TESTS, /* tests/ and bench/: may include anything */
  L_COUNT
};

#define B(l) (1u << (l))
#define BELOW_PROVIDERS (B(L_BASE) | B(L_CORE))
#define POLICIES (B(L_PLACE) | B(L_FALLBACK))
#define BILLING (B(L_CATALOG) | B(L_LEDGER) | B(L_REPORT))
#define BELOW_BILLING (BELOW_PROVIDERS | B(L_PROVIDERS) | POLICIES)

static const struct {
  const char *name;
  unsigned may; /* layers this one may include, besides itself */
} layers[L_COUNT] = {
    [L_BASE] = {"base", 0},
    [L_CORE] = {"core", B(L_BASE)},
    [L_PROVIDERS] = {"providers", BELOW_PROVIDERS},
    [L_ADAPTER] = {"adapter", BELOW_PROVIDERS | B(L_PROVIDERS)},
    [L_PLACE] = {"place", BELOW_PROVIDERS},
    [L_FALLBACK] = {"fallback", BELOW_PROVIDERS | B(L_PLACE)},
    [L_PLUGINS] = {"plugins", BELOW_PROVIDERS | B(L_PLACE)},
    [L_CATALOG] = {"catalog", BELOW_BILLING},
    [L_LEDGER] = {"ledger", BELOW_BILLING | B(L_CATALOG)},
    [L_REPORT] = {"report", BELOW_BILLING | B(L_CATALOG) | B(L_LEDGER)},
    [L_TENANCY] = {"tenancy", BELOW_BILLING | BILLING},
    [L_SCHED] = {"sched", BELOW_BILLING | BILLING | B(L_TENANCY)},
    [L_API] = {"api", BELOW_BILLING | BILLING | B(L_TENANCY) | B(L_SCHED)},
    [L_CLI] = {"cli", BELOW_BILLING | BILLING | B(L_TENANCY) | B(L_SCHED)},
    [L_DAEMON] = {"daemon", BELOW_BILLING | BILLING | B(L_TENANCY) |
                                B(L_SCHED) | B(L_API) | B(L_CLI)},
    [L_AGENT] = {"agent", B(L_BASE)},
    [L_TESTS] = {"tests", ~0u},
};

static bool prefix(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* The layer of a path relative to the source root; *adapter gets the
 * adapter's folder ("providers/aws/") for L_ADAPTER. */
static enum layer layer_of(const char *path, char *adapter, size_t cap) {
  static const struct {
    const char *prefix;
    enum layer l;
  } map[] = {
      {"broker/base/", L_BASE},
      {"broker/core/", L_CORE},
      {"broker/tenancy/", L_TENANCY},
      {"broker/sched/", L_SCHED},
      {"broker/daemon.", L_DAEMON},
      {"broker/main.c", L_DAEMON},
      {"policies/place/", L_PLACE},
      {"policies/fallback/", L_FALLBACK},
      {"policies/plugins/", L_PLUGINS},
      {"billing/catalog/", L_CATALOG},
      {"billing/ledger/", L_LEDGER},
      {"billing/report/", L_REPORT},
      {"api/", L_API},
      {"cli/", L_CLI},
      {"agent/", L_AGENT},
      {"tests/", L_TESTS},
      {"bench/", L_TESTS},
  };
  if (adapter && cap)
    adapter[0] = '\0';
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (prefix(path, map[i].prefix))
      return map[i].l;
  if (prefix(path, "providers/")) {
    const char *rest = path + strlen("providers/");
    const char *slash = strchr(rest, '/');
    if (!slash)
      return L_PROVIDERS;
    if (adapter)
      snprintf(adapter, cap, "%.*s", (int)(slash + 1 - path), path);
    return L_ADAPTER;
  }
  return L_NONE;
}

/* Checks one include of `from` (a path from the root) naming `target`.
 * Returns NULL when allowed, else a reason written into buf. */
static const char *check_include(const char *from, const char *target,
                                 bool target_exists, char *buf, size_t cap) {
  char fa[128], ta[128];
  enum layer lf = layer_of(from, fa, sizeof fa);
  enum layer lt = layer_of(target, ta, sizeof ta);
  if (!target_exists) {
    snprintf(buf, cap,
             "includes \"%s\", which is no file under the source root "
             "(name headers from the root: \"broker/base/err.h\")",
             target);
    return buf;
  }
  if (lf == L_NONE || lf == L_TESTS)
    return NULL;
  if (lt == L_NONE) {
    snprintf(buf, cap, "includes %s, which belongs to no layer", target);
    return buf;
  }
  if (lt == L_ADAPTER && strcmp(fa, ta) != 0) {
    snprintf(buf, cap,
             "includes %s from outside %s: only the adapter's own folder "
             "may (a new cloud is one folder)",
             target, ta);
    return buf;
  }
  if (lt == lf || (layers[lf].may & B(lt)))
    return NULL;
  snprintf(buf, cap,
           "includes %s (layer %s) from layer %s: includes must point down "
           "the layers (docs/architecture.md)",
           target, layers[lt].name, layers[lf].name);
  return buf;
}

/* ---- the checker itself ------------------------------------------------ */

static void rule_allows_downward_includes(void **state) {
  (void)state;
  char buf[256];
  assert_null(check_include("broker/core/store.c", "broker/base/err.h", true,
                            buf, sizeof buf));
  assert_null(check_include("broker/sched/loop.c", "billing/ledger/ledger.h",
                            true, buf, sizeof buf));
  assert_null(check_include("providers/aws/aws.c", "providers/aws/ec2_xml.h",
                            true, buf, sizeof buf));
  assert_null(check_include("providers/aws/aws.c", "providers/http.h", true,
                            buf, sizeof buf));
  assert_null(
      check_include("broker/main.c", "api/api.h", true, buf, sizeof buf));
  assert_null(check_include("tests/unit/x.c", "providers/aws/aws.h", true, buf,
                            sizeof buf));
  assert_null(check_include("agent/agent.c", "broker/base/clock.h", true, buf,
                            sizeof buf));
}

static void rule_refuses_climbing_and_sideways_includes(void **state) {
  (void)state;
  char buf[256];
  const char *r;
  r = check_include("broker/base/model.h", "broker/core/spec.h", true, buf,
                    sizeof buf);
  assert_non_null(r);
  assert_non_null(strstr(r, "layer core) from layer base"));
  assert_non_null(check_include("policies/place/plan.c", "providers/provider.h",
                                true, buf, sizeof buf));
  assert_non_null(check_include("providers/provider.c", "policies/place/plan.h",
                                true, buf, sizeof buf));
  assert_non_null(
      check_include("cli/cli.c", "api/api.h", true, buf, sizeof buf));
  assert_non_null(check_include("billing/catalog/catalog.c",
                                "billing/ledger/ledger.h", true, buf,
                                sizeof buf));
  assert_non_null(check_include("broker/tenancy/tenancy.c",
                                "broker/sched/sched.h", true, buf, sizeof buf));
  r = check_include("providers/registry.c", "providers/aws/aws.h", true, buf,
                    sizeof buf);
  assert_non_null(r);
  assert_non_null(strstr(r, "one folder"));
  assert_non_null(check_include("providers/azure/azure.c",
                                "providers/aws/aws.h", true, buf, sizeof buf));
  assert_non_null(
      check_include("tests/unit/x.c", "store.h", false, buf, sizeof buf));
  /* the agent stands apart: base only, and nothing includes it */
  r = check_include("agent/agent.c", "broker/core/store.h", true, buf,
                    sizeof buf);
  assert_non_null(r);
  assert_non_null(strstr(r, "from layer agent"));
  assert_non_null(
      check_include("broker/daemon.c", "agent/agent.h", true, buf, sizeof buf));
}

/* ---- the tree ---------------------------------------------------------- */

struct scan {
  const char *root;
  int files, includes, bad;
};

static bool exists_under(const char *root, const char *rel) {
  char p[8192];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", root, rel);
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void scan_file(struct scan *s, const char *rel) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", s->root, rel);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot read\n", rel);
    s->bad++;
    return;
  }
  s->files++;
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p != '#')
      continue;
    p++;
    while (*p == ' ' || *p == '\t')
      p++;
    if (strncmp(p, "include", 7) != 0)
      continue;
    p += 7;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p != '"')
      continue; /* <system> headers */
    const char *q = strchr(p + 1, '"');
    if (!q)
      continue;
    char target[512];
    snprintf(target, sizeof target, "%.*s", (int)(q - p - 1), p + 1);
    s->includes++;
    char buf[512];
    const char *why = check_include(rel, target, exists_under(s->root, target),
                                    buf, sizeof buf);
    if (why) {
      fprintf(stderr, "%s:%d: %s\n", rel, lineno, why);
      s->bad++;
    }
  }
  fclose(f);
}

static void scan_dir(struct scan *s, const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", s->root, rel);
  DIR *d = opendir(path);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules"))
      continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", s->root, sub);
    struct stat st;
    if (stat(full, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      scan_dir(s, sub);
      continue;
    }
    size_t n = strlen(sub);
    if (n > 2 && (!strcmp(sub + n - 2, ".c") || !strcmp(sub + n - 2, ".h")))
      scan_file(s, sub);
  }
  closedir(d);
}

static const char *root;

static void every_include_points_down_the_layers(void **state) {
  (void)state;
  static const char *const top[] = {"broker",  "providers", "policies",
                                    "billing", "api",       "cli",
                                    "agent",   "tests",     "bench"};
  struct scan s = {.root = root};
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    scan_dir(&s, top[i]);
  fprintf(stderr, "# %d files, %d quoted includes, %d refused\n", s.files,
          s.includes, s.bad);
  assert_true(s.files > 100); /* the tree was found */
  assert_int_equal(s.bad, 0);
}

int main(int argc, char **argv) {
  root = argc > 1 ? argv[1] : getenv("TW_SOURCE_DIR");
  if (!root) {
    fprintf(stderr, "usage: test_layers SOURCE_DIR (or TW_SOURCE_DIR)\n");
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rule_allows_downward_includes),
      cmocka_unit_test(rule_refuses_climbing_and_sideways_includes),
      cmocka_unit_test(every_include_points_down_the_layers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
