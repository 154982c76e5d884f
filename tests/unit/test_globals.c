/* test_globals.c - no process-wide mutable state in the libraries.
 *
 * What modules need from each other travels in their options structs
 * (docs/architecture.md, "Process-wide state").  This test lists the data
 * symbols every libtw_*.a defines in a writable section (.data, .bss,
 * .tdata, .tbss and their subsections, common symbols; not .rodata or
 * .data.rel.ro) with objdump, and fails on any that is not in the short
 * allow-list below, each entry with its reason.
 *
 * Usage: test_globals OBJDUMP LIB.a...  (tests/globals.cmake passes every
 * library made with tw_library()).  Skips (77) without objdump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct allowed {
  const char *object; /* archive member, "log.c.o" */
  const char *symbol; /* without a function static's ".N" suffix */
  const char *reason;
  bool seen;
};

#define ALLOW(o, s, r)                                                         \
  { .object = o, .symbol = s, .reason = r }

static struct allowed allow[] = {
    ALLOW("log.c.o", "min_level",
          "the logger's level: one switch for the process, set by the "
          "daemon (broker/base/log.h)"),
    ALLOW("log.c.o", "debug_subsys", "the logger's debug subsystems (log.h)"),
    ALLOW("log.c.o", "log_format",
          "the logger's line format, one for the process (log.h)"),
    ALLOW("log.c.o", "debug_some",
          "whether the logger's debug subsystems name any, for the test "
          "without its lock (log.h)"),
    ALLOW("log.c.o", "log_mu", "keeps log lines whole across threads (log.h)"),
    ALLOW("log.c.o", "log_trace",
          "thread-local: the ids of the span the thread works for, which "
          "its log lines carry (log.h)"),
    ALLOW("trace.c.o", "ids",
          "thread-local: the thread's stream of trace and span ids, seeded "
          "once per thread by getrandom() (broker/base/trace.c)"),
    ALLOW("http.c.o", "http_once",
          "curl_global_init() once per process (providers/http.h)"),
    ALLOW("http.c.o", "http_global_rc",
          "curl_global_init()'s outcome, written once under http_once"),
    ALLOW("ec2_xml.c.o", "xml_once",
          "xmlInitParser() once per process (providers/aws/ec2_xml.h)"),
    ALLOW("ec2_xml.c.o", "xml_key",
          "the key of each thread's own parser context, made under "
          "xml_once (providers/aws/ec2_xml.c)"),
};
#define N_ALLOW (sizeof allow / sizeof allow[0])

static const char *objdump;
static char **libs;
static int n_libs;

static bool starts(const char *s, const char *p) {
  return !strncmp(s, p, strlen(p));
}

/* Writable data: what a static or global variable lands in. */
static bool mutable_section(const char *sec) {
  if (starts(sec, ".data.rel.ro"))
    return false;
  static const char *const names[] = {".data", ".bss", ".tdata", ".tbss"};
  for (size_t i = 0; i < 4; i++) {
    size_t n = strlen(names[i]);
    if (!strncmp(sec, names[i], n) && (sec[n] == '\0' || sec[n] == '.'))
      return true;
  }
  return !strcmp(sec, "*COM*");
}

/* Instrumentation's own (sanitizers, coverage), not ours. */
static bool tool_symbol(const char *name) {
  return starts(name, "__asan") || starts(name, "___asan") ||
         starts(name, "__odr_asan") || starts(name, "__sancov") ||
         starts(name, "__tsan") || starts(name, "__ubsan");
}

static struct allowed *find_allowed(const char *object, const char *symbol) {
  for (size_t i = 0; i < N_ALLOW; i++)
    if (!strcmp(allow[i].object, object) && !strcmp(allow[i].symbol, symbol))
      return &allow[i];
  return NULL;
}

/* Reads `objdump -t lib` and reports each mutable symbol not allowed;
 * returns how many. */
static int scan(const char *lib) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' -t '%s' 2>&1", objdump, lib);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[1024], object[256] = "";
  int bad = 0, members = 0;
  const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    /* "log.c.o:     file format elf64-x86-64" starts a member */
    char *ff = strstr(line, ":     file format ");
    if (ff) {
      snprintf(object, sizeof object, "%.*s", (int)(ff - line), line);
      members++;
      continue;
    }
    /* "0000000000000000 l     O .bss\t0000000000000008 preopened" */
    char *tab = strchr(line, '\t');
    if (!tab || strlen(line) < 26 || !isxdigit((unsigned char)line[0]))
      continue;
    char *sp = strchr(line, ' ');
    if (!sp || tab - sp < 9)
      continue;
    const char *flags = sp + 1; /* seven columns */
    if (memchr(flags, 'd', 7) || memchr(flags, 'f', 7) || memchr(flags, 'F', 7))
      continue; /* section, file and function symbols */
    *tab = '\0';
    char *sec = strrchr(line, ' ');
    if (!sec || !mutable_section(sec + 1))
      continue;
    char *name = strrchr(tab + 1, ' ');
    name = name ? name + 1 : tab + 1;
    if (!*name || *name == '.' || tool_symbol(name))
      continue;
    /* a function's static is "seq.2": the number is the compiler's */
    char sym[256];
    snprintf(sym, sizeof sym, "%s", name);
    char *dot = strrchr(sym, '.');
    if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1))
      *dot = '\0';
    struct allowed *a = find_allowed(object, sym);
    if (a) {
      a->seen = true;
      continue;
    }
    fprintf(stderr,
            "%s: %s: `%s' in %s is process-wide mutable state: pass it in "
            "an options struct or an object the daemon owns, or add it to "
            "the allow-list of tests/unit/test_globals.c with the reason\n",
            base, object, sym, sec + 1);
    bad++;
  }
  int st = pclose(f);
  if (st != 0 || members == 0)
    fail_msg("%s -t %s: status %d, %d members", objdump, lib, st, members);
  return bad;
}

static void
libraries_define_no_mutable_globals_outside_the_allow_list(void **state) {
  (void)state;
  assert_true(n_libs > 0);
  int bad = 0;
  for (int i = 0; i < n_libs; i++)
    bad += scan(libs[i]);
  int stale = 0;
  for (size_t i = 0; i < N_ALLOW; i++)
    if (!allow[i].seen) {
      fprintf(stderr,
              "allow-list entry %s `%s' matches nothing any more: delete it\n",
              allow[i].object, allow[i].symbol);
      stale++;
    }
  if (bad || stale)
    fail_msg("%d mutable global(s) outside the allow-list, %d stale "
             "allow-list entries",
             bad, stale);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OBJDUMP LIB.a...\n", argv[0]);
    return 2;
  }
  objdump = argv[1];
  if (!*objdump || access(objdump, X_OK) != 0) {
    fprintf(stderr, "no objdump (%s): skipped\n", objdump);
    return 77;
  }
  libs = argv + 2;
  n_libs = argc - 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(
          libraries_define_no_mutable_globals_outside_the_allow_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
