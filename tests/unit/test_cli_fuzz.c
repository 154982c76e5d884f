/* test_cli_fuzz.c - fuzz target for what the CLI does with a server's
 * answer (built by tw_add_fuzz against tests/fuzz/driver.c; it lives here
 * with the CLI's other tests).
 *
 * Properties checked, beyond "no crash, no sanitizer report":
 *  - tw_cli_json_pretty() output parses to the same value as its input;
 *  - a problem line never holds a control character, and without a request
 *    id it is at most the prefix, 400 bytes and "...";
 *  - a rendered table never holds a control character but its newlines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/fuzz/fuzz.h"
#include "cli/cli_int.h"

static void check_clean(const char *s, size_t len, bool newlines_ok) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && !(newlines_ok && c == '\n')) || c == 0x7f) {
      fprintf(stderr, "control byte 0x%02x at %zu in \"%s\"\n", c, i, s);
      abort();
    }
  }
}

static void fuzz_problem(long status, const char *body, size_t len) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_problem_line(status, body, len, &b);
  check_clean(b.data, b.len, false);
  if (!strstr(b.data, "(request ") &&
      b.len > strlen("server error (599): ") + 400 + 3) {
    fprintf(stderr, "problem line of %zu bytes\n", b.len);
    abort();
  }
  tw_buf_release(&b);
}

/* A valid JSON document spelled out by the input bytes, with odd spacing,
 * escapes and number forms: mutations of random bytes seldom parse, and the
 * indenter has to be checked on documents that do. */
struct gen {
  const uint8_t *p, *end;
  struct tw_buf out;
};

static unsigned next(struct gen *g) { return g->p < g->end ? *g->p++ : 0; }

static void gen_space(struct gen *g) {
  static const char *const ws[] = {"", " ", "\n", "\t ", "\r\n  "};
  tw_buf_adds(&g->out, ws[next(g) % 5]);
}

static void gen_value(struct gen *g, int depth) {
  static const char *const atoms[] = {
      "0",           "-1.50",         "1e+30",          "true",
      "false",       "null",          "\"\"",           "\"a,b\"",
      "\"{[:]}\"",   "\"q\\\"\\\\\"", "\"\\u00e9\\n\"", "-9223372036854775808",
      "\"\xc3\xa9\""};
  unsigned k = next(g);
  gen_space(g);
  if (depth < 8 && k % 4 == 0) {
    unsigned n = next(g) % 4;
    tw_buf_addc(&g->out, '{');
    for (unsigned i = 0; i < n; i++) {
      if (i)
        tw_buf_addc(&g->out, ',');
      gen_space(g);
      tw_buf_printf(&g->out, "\"k%u\"", i);
      gen_space(g);
      tw_buf_addc(&g->out, ':');
      gen_value(g, depth + 1);
    }
    gen_space(g);
    tw_buf_addc(&g->out, '}');
  } else if (depth < 8 && k % 4 == 1) {
    unsigned n = next(g) % 4;
    tw_buf_addc(&g->out, '[');
    for (unsigned i = 0; i < n; i++) {
      if (i)
        tw_buf_addc(&g->out, ',');
      gen_value(g, depth + 1);
    }
    gen_space(g);
    tw_buf_addc(&g->out, ']');
  } else {
    tw_buf_adds(&g->out, atoms[next(g) % (sizeof atoms / sizeof atoms[0])]);
  }
  gen_space(g);
}

static void check_pretty(const char *text, size_t size) {
  struct tw_buf pretty;
  struct tw_err err;
  tw_buf_init(&pretty);
  tw_err_clear(&err);
  if (tw_cli_json_pretty(text, size, &pretty, &err) == TW_OK) {
    json_t *a = json_loadb(text, size, JSON_DECODE_ANY, NULL);
    json_t *b = json_loadb(pretty.data, pretty.len, JSON_DECODE_ANY, NULL);
    if (!a || !b || !json_equal(a, b)) {
      fprintf(stderr, "indenting changed the value:\n%.*s\n---\n%s\n",
              (int)size, text, pretty.data);
      abort();
    }
    json_decref(a);
    json_decref(b);
  }
  tw_buf_release(&pretty);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  long status = 400 + (long)(size % 200);

  /* The raw answer as a problem body and as JSON to indent. */
  fuzz_problem(status, text, size);
  check_pretty(text, size);
  struct gen g = {data, data + size, {0}};
  tw_buf_init(&g.out);
  gen_value(&g, 0);
  struct tw_err gerr;
  tw_err_clear(&gerr);
  struct tw_buf scratch;
  tw_buf_init(&scratch);
  if (tw_cli_json_pretty(g.out.data, g.out.len, &scratch, &gerr) != TW_OK) {
    fprintf(stderr, "generated JSON refused (%s): %s\n", gerr.msg, g.out.data);
    abort();
  }
  tw_buf_release(&scratch);
  check_pretty(g.out.data, g.out.len);
  tw_buf_release(&g.out);

  /* The input inside a well-formed problem, so detail and field handling
   * see arbitrary text, not only what survives the JSON parser. */
  char *s = tw_strndup(text, size); /* stops at the first NUL */
  struct tw_buf doc;
  tw_buf_init(&doc);
  tw_buf_adds(&doc, "{\"title\":\"t\",\"detail\":");
  tw_buf_json_str(&doc, s);
  tw_buf_adds(&doc, ",\"field\":");
  tw_buf_json_str(&doc, size > 8 ? s + strlen(s) / 2 : s);
  tw_buf_adds(&doc, "}");
  fuzz_problem(status, doc.data, doc.len);
  tw_buf_release(&doc);

  /* Cells split at tabs, three to a row. */
  static const char *const headers[] = {"A", "B", "C"};
  struct tw_cli_table t;
  tw_cli_table_init(&t, 3, headers);
  const char *row[3] = {NULL, NULL, NULL};
  int col = 0;
  for (char *p = s, *tab; p; p = tab ? tab + 1 : NULL) {
    tab = strchr(p, '\t');
    if (tab)
      *tab = '\0';
    row[col++] = p;
    if (col == 3) {
      tw_cli_table_add(&t, row);
      col = 0;
    }
  }
  struct tw_buf out;
  tw_buf_init(&out);
  tw_cli_table_render(&t, &out);
  check_clean(out.data, out.len, true);
  tw_buf_release(&out);
  tw_cli_table_release(&t);
  free(s);
  return 0;
}
