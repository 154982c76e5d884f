/* opt.c - command-line options.  getopt_long() is not used: it permutes a
 * process-global argv, keeps global state between calls (the tests run many
 * command lines in one process), and cannot say "did you mean". */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/node.h"
#include "cli/cli_int.h"

void tw_cli_parsed_release(struct tw_cli_parsed *p) {
  free(p->opts);
  free(p->pos);
  memset(p, 0, sizeof *p);
}

static const struct tw_cli_opt *
find_long(const struct tw_cli_opt *const *tables, const char *name,
          size_t len) {
  for (size_t t = 0; tables[t]; t++)
    for (const struct tw_cli_opt *o = tables[t]; o->name; o++)
      if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
        return o;
  return NULL;
}

static const struct tw_cli_opt *
find_short(const struct tw_cli_opt *const *tables, char c) {
  for (size_t t = 0; tables[t]; t++)
    for (const struct tw_cli_opt *o = tables[t]; o->name; o++)
      if (o->short_name && o->short_name == c)
        return o;
  return NULL;
}

static enum tw_rc unknown_long(const struct tw_cli_opt *const *tables,
                               const char *name, size_t len,
                               struct tw_err *err) {
  const char *names[64];
  size_t n = 0;
  for (size_t t = 0; tables[t]; t++)
    for (const struct tw_cli_opt *o = tables[t]; o->name && n < 63; o++)
      names[n++] = o->name;
  names[n] = NULL;
  char *word = tw_strndup(name, len);
  const char *near = tw_closest(word, names);
  enum tw_rc rc;
  if (near)
    rc = tw_err_set(err, TW_E_INVALID,
                    "unknown option \"--%.64s\"; did you mean \"--%s\"?", word,
                    near);
  else
    rc = tw_err_set(err, TW_E_INVALID, "unknown option \"--%.64s\"", word);
  free(word);
  return rc;
}

static void add_opt(struct tw_cli_parsed *out, const struct tw_cli_opt *o,
                    const char *value) {
  out->opts = tw_realloc(out->opts, (out->nopts + 1) * sizeof *out->opts);
  out->opts[out->nopts++] = (struct tw_cli_optval){o->id, o->name, value};
}

enum tw_rc tw_cli_opts_parse(const struct tw_cli_opt *const *tables, int argc,
                             char **argv, bool stop_at_pos,
                             struct tw_cli_parsed *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  out->pos = tw_calloc((size_t)argc + 1, sizeof *out->pos);
  bool only_pos = false;
  for (int i = 0; i < argc; i++) {
    char *a = argv[i];
    if (only_pos || a[0] != '-' || a[1] == '\0') {
      if (stop_at_pos) {
        for (; i < argc; i++)
          out->pos[out->npos++] = argv[i];
        break;
      }
      out->pos[out->npos++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_pos = true;
      continue;
    }
    if (a[1] == '-') {
      const char *name = a + 2, *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      const struct tw_cli_opt *o = find_long(tables, name, len);
      if (!o)
        return unknown_long(tables, name, len, err);
      if (!o->has_arg) {
        if (eq)
          return tw_err_set(err, TW_E_INVALID, "option \"--%s\" takes no value",
                            o->name);
        add_opt(out, o, NULL);
      } else if (eq) {
        add_opt(out, o, eq + 1);
      } else if (i + 1 < argc) {
        add_opt(out, o, argv[++i]);
      } else {
        return tw_err_set(err, TW_E_INVALID, "option \"--%s\" needs a value",
                          o->name);
      }
      continue;
    }
    /* Short options: "-h", "-o json", "-ojson".  Flags do not bundle: the
     * CLI has too few short options for "-abc" to be worth the ambiguity. */
    const struct tw_cli_opt *o = find_short(tables, a[1]);
    if (!o)
      return tw_err_set(err, TW_E_INVALID, "unknown option \"-%c\"",
                        isprint((unsigned char)a[1]) ? a[1] : '?');
    if (!o->has_arg) {
      if (a[2] == '=')
        return tw_err_set(err, TW_E_INVALID, "option \"-%c\" takes no value",
                          o->short_name);
      if (a[2])
        return tw_err_set(err, TW_E_INVALID, "unknown option \"%.64s\"", a);
      add_opt(out, o, NULL);
    } else if (a[2]) {
      /* "-o=json" as well as "-ojson" */
      add_opt(out, o, a[2] == '=' ? a + 3 : a + 2);
    } else if (i + 1 < argc) {
      add_opt(out, o, argv[++i]);
    } else {
      return tw_err_set(err, TW_E_INVALID, "option \"-%c\" needs a value",
                        o->short_name);
    }
  }
  return TW_OK;
}

int tw_cli_parse_int(const char *s, long min, long max, long *out) {
  if (!s || !*s || isspace((unsigned char)*s))
    return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int tw_cli_parse_duration_ms(const char *s, int64_t *out) {
  static const int64_t max_ms = 30LL * 24 * 3600 * 1000;
  int64_t total = 0;
  const char *p = s;
  if (!s || !*s)
    return -1;
  /* A bare number is seconds: "--timeout 90". */
  bool bare = true;
  for (const char *q = s; *q; q++)
    if (!isdigit((unsigned char)*q))
      bare = false;
  if (bare) {
    if (strlen(s) > 7)
      return -1;
    total = strtoll(s, NULL, 10) * 1000;
  } else {
    while (*p) {
      if (!isdigit((unsigned char)*p))
        return -1;
      int64_t n = 0;
      int digits = 0;
      while (isdigit((unsigned char)*p)) {
        if (++digits > 9)
          return -1;
        n = n * 10 + (*p++ - '0');
      }
      int64_t unit;
      if (strncmp(p, "ms", 2) == 0) {
        unit = 1;
        p += 2;
      } else if (*p == 's') {
        unit = 1000;
        p++;
      } else if (*p == 'm') {
        unit = 60 * 1000;
        p++;
      } else if (*p == 'h') {
        unit = 3600 * 1000;
        p++;
      } else if (*p == 'd') {
        unit = 24 * 3600 * 1000;
        p++;
      } else {
        return -1; /* a number without a unit after the first part */
      }
      total += n * unit;
      if (total > max_ms)
        return -1;
    }
  }
  if (total < 1 || total > max_ms)
    return -1;
  *out = total;
  return 0;
}
