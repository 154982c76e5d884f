/* format.c - the structured output formats of -o: yaml, jsonpath=..., name,
 * and --sort-by.  Every one works on the JSON document the server sent, so
 * a field the server adds is printed without a change here. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* --- YAML ---------------------------------------------------------------- */

/* True when s can be written as a plain scalar and read back as the same
 * string: no indicator characters, and not a word YAML 1.1 or 1.2 reads as
 * a boolean, null or number. */
static bool yaml_plain_ok(const char *s) {
  static const char *const special[] = {
      "true", "false", "yes", "no",  "on",   "off", "null",
      "y",    "n",     "~",   ".nan", ".inf", "-.inf", NULL};
  if (!*s || isspace((unsigned char)s[0]) ||
      isspace((unsigned char)s[strlen(s) - 1]))
    return false;
  for (size_t i = 0; special[i]; i++)
    if (strcasecmp(s, special[i]) == 0)
      return false;
  /* anything that starts like a number is quoted: 1e3, 0x1f, 012, -5 */
  if (isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+' ||
      s[0] == '.')
    return false;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f)
      return false;
    if (strchr(":#{}[],&*!|>'\"%@`?", *p))
      return false;
  }
  return true;
}

static void yaml_str(const char *s, struct tw_buf *out) {
  if (yaml_plain_ok(s)) {
    tw_buf_adds(out, s);
    return;
  }
  /* a JSON string is a valid YAML double-quoted scalar */
  json_t *j = json_string(s);
  char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  tw_buf_adds(out, q ? q : "\"\"");
  free(q);
  json_decref(j);
}

static void yaml_scalar(const json_t *v, struct tw_buf *out) {
  if (json_is_string(v)) {
    yaml_str(json_string_value(v), out);
  } else if (json_is_null(v)) {
    tw_buf_adds(out, "null");
  } else {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    tw_buf_adds(out, t ? t : "null");
    free(t);
  }
}

static bool yaml_empty_container(const json_t *v) {
  return (json_is_object(v) && json_object_size(v) == 0) ||
         (json_is_array(v) && json_array_size(v) == 0);
}

static void indent(struct tw_buf *out, int n) {
  for (int i = 0; i < n; i++)
    tw_buf_adds(out, " ");
}

static void yaml_node(const json_t *v, int ind, struct tw_buf *out);

/* A value after "key:" or "- ": scalars on the same line, containers on
 * the next lines. */
static void yaml_after(const json_t *v, int ind, bool in_seq,
                       struct tw_buf *out) {
  if (yaml_empty_container(v)) {
    tw_buf_adds(out, json_is_object(v) ? " {}\n" : " []\n");
  } else if (json_is_object(v) || json_is_array(v)) {
    if (in_seq && json_is_object(v)) {
      /* "- key: value" with the other keys aligned under the first */
      tw_buf_adds(out, " ");
      yaml_node(v, -(ind + 2), out);
    } else {
      tw_buf_adds(out, "\n");
      yaml_node(v, json_is_array(v) && !in_seq ? ind : ind + 2, out);
    }
  } else {
    tw_buf_adds(out, " ");
    yaml_scalar(v, out);
    tw_buf_adds(out, "\n");
  }
}

/* ind < 0: the first line is already indented (after "- "). */
static void yaml_node(const json_t *v, int ind, struct tw_buf *out) {
  bool first = true;
  int real = ind < 0 ? -ind : ind;
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
      if (!(first && ind < 0))
        indent(out, real);
      first = false;
      yaml_str(k, out);
      tw_buf_adds(out, ":");
      yaml_after(x, real, false, out);
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
      if (!(first && ind < 0))
        indent(out, real);
      first = false;
      tw_buf_adds(out, "-");
      yaml_after(x, real, true, out);
    }
  } else {
    if (!(first && ind < 0))
      indent(out, real);
    yaml_scalar(v, out);
    tw_buf_adds(out, "\n");
  }
}

void tw_cli_yaml(const json_t *v, struct tw_buf *out) {
  tw_buf_adds(out, "");
  if (yaml_empty_container(v)) {
    tw_buf_adds(out, json_is_object(v) ? "{}\n" : "[]\n");
    return;
  }
  yaml_node(v, 0, out);
}

/* --- JSONPath -------------------------------------------------------------- */

struct jp_set {
  const json_t **v;
  size_t n, cap;
};

static void jp_push(struct jp_set *s, const json_t *v) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 8;
    s->v = tw_realloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = v;
}

/* Evaluates expr (without braces) against root into out. */
static enum tw_rc jp_eval(const char *expr, size_t len, const json_t *root,
                          struct jp_set *out, struct tw_err *err) {
  struct jp_set cur = {0}, next = {0};
  const char *p = expr, *end = expr + len;
  while (p < end && isspace((unsigned char)*p))
    p++;
  while (end > p && isspace((unsigned char)end[-1]))
    end--;
  if (p < end && *p == '$')
    p++;
  jp_push(&cur, root);
  while (p < end) {
    next.n = 0;
    if (*p == '.') {
      p++;
      if (p < end && *p == '.') {
        free(cur.v);
        free(next.v);
        return tw_err_set(err, TW_E_INVALID,
                          "jsonpath: recursive descent (..) is not supported");
      }
      const char *k = p;
      while (p < end && *p != '.' && *p != '[')
        p++;
      if (p == k) {
        if (p == end && cur.n == 1 && cur.v[0] == root)
          break; /* "." alone: the document */
        free(cur.v);
        free(next.v);
        return tw_err_set(err, TW_E_INVALID,
                          "jsonpath: a key is missing after \".\" in \"%.*s\"",
                          (int)len, expr);
      }
      char *key = tw_strndup(k, (size_t)(p - k));
      for (size_t i = 0; i < cur.n; i++) {
        if (strcmp(key, "*") == 0 && json_is_object(cur.v[i])) {
          const char *kk;
          json_t *x;
          json_object_foreach((json_t *)cur.v[i], kk, x) jp_push(&next, x);
        } else {
          json_t *x = json_object_get(cur.v[i], key);
          if (x)
            jp_push(&next, x);
        }
      }
      free(key);
    } else if (*p == '[') {
      const char *close = memchr(p, ']', (size_t)(end - p));
      if (!close) {
        free(cur.v);
        free(next.v);
        return tw_err_set(err, TW_E_INVALID,
                          "jsonpath: \"[\" without \"]\" in \"%.*s\"",
                          (int)len, expr);
      }
      const char *in = p + 1;
      size_t n = (size_t)(close - in);
      if (n == 1 && *in == '*') {
        for (size_t i = 0; i < cur.n; i++) {
          size_t j;
          json_t *x;
          if (json_is_array(cur.v[i]))
            json_array_foreach(cur.v[i], j, x) jp_push(&next, x);
          else if (json_is_object(cur.v[i])) {
            const char *kk;
            json_object_foreach((json_t *)cur.v[i], kk, x) jp_push(&next, x);
          }
        }
      } else if (n >= 2 && (*in == '\'' || *in == '"') && in[n - 1] == *in) {
        char *key = tw_strndup(in + 1, n - 2);
        for (size_t i = 0; i < cur.n; i++) {
          json_t *x = json_object_get(cur.v[i], key);
          if (x)
            jp_push(&next, x);
        }
        free(key);
      } else {
        char *num = tw_strndup(in, n);
        long idx;
        int bad = tw_cli_parse_int(num, -1000000, 1000000, &idx);
        free(num);
        if (bad) {
          free(cur.v);
          free(next.v);
          return tw_err_set(err, TW_E_INVALID,
                            "jsonpath: expected [N], [*] or ['key'], got "
                            "\"[%.*s]\"",
                            (int)(n > 64 ? 64 : n), in);
        }
        for (size_t i = 0; i < cur.n; i++) {
          if (!json_is_array(cur.v[i]))
            continue;
          long sz = (long)json_array_size(cur.v[i]);
          long at = idx < 0 ? sz + idx : idx;
          if (at >= 0 && at < sz)
            jp_push(&next, json_array_get(cur.v[i], (size_t)at));
        }
      }
      p = close + 1;
    } else {
      /* kubectl accepts "items[0]" without the leading dot */
      const char *k = p;
      while (p < end && *p != '.' && *p != '[')
        p++;
      char *key = tw_strndup(k, (size_t)(p - k));
      for (size_t i = 0; i < cur.n; i++) {
        json_t *x = json_object_get(cur.v[i], key);
        if (x)
          jp_push(&next, x);
      }
      free(key);
    }
    struct jp_set t = cur;
    cur = next;
    next = t;
  }
  for (size_t i = 0; i < cur.n; i++)
    jp_push(out, cur.v[i]);
  free(cur.v);
  free(next.v);
  return TW_OK;
}

static void jp_print(const json_t *v, struct tw_buf *out) {
  if (json_is_string(v)) {
    tw_cli_add_clean(out, json_string_value(v));
  } else {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    tw_cli_add_clean(out, t ? t : "");
    free(t);
  }
}

/* Literal text of a template: \n and \t are kubectl's escapes. */
static void jp_literal(const char *s, size_t n, struct tw_buf *out) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'n' || s[i + 1] == 't')) {
      tw_buf_adds(out, s[i + 1] == 'n' ? "\n" : "\t");
      i++;
    } else {
      tw_buf_add(out, s + i, 1);
    }
  }
}

enum tw_rc tw_cli_jsonpath(const char *tmpl, const json_t *v,
                           struct tw_buf *out, struct tw_err *err) {
  tw_buf_adds(out, "");
  if (!strchr(tmpl, '{')) {
    struct jp_set r = {0};
    enum tw_rc rc = jp_eval(tmpl, strlen(tmpl), v, &r, err);
    for (size_t i = 0; rc == TW_OK && i < r.n; i++) {
      if (i)
        tw_buf_adds(out, " ");
      jp_print(r.v[i], out);
    }
    free(r.v);
    return rc;
  }
  const char *p = tmpl;
  while (*p) {
    const char *open = strchr(p, '{');
    if (!open) {
      jp_literal(p, strlen(p), out);
      break;
    }
    jp_literal(p, (size_t)(open - p), out);
    const char *close = strchr(open, '}');
    if (!close)
      return tw_err_set(err, TW_E_INVALID,
                        "jsonpath: \"{\" without \"}\" in the template");
    const char *in = open + 1;
    size_t n = (size_t)(close - in);
    if (n >= 2 && in[0] == '"' && in[n - 1] == '"') {
      jp_literal(in + 1, n - 2, out); /* {"\n"}: a quoted literal */
    } else {
      if (n >= 5 && strncmp(in, "range", 5) == 0)
        return tw_err_set(err, TW_E_INVALID,
                          "jsonpath: {range} is not supported; use "
                          "{.items[*].FIELD}");
      struct jp_set r = {0};
      enum tw_rc rc = jp_eval(in, n, v, &r, err);
      for (size_t i = 0; rc == TW_OK && i < r.n; i++) {
        if (i)
          tw_buf_adds(out, " ");
        jp_print(r.v[i], out);
      }
      free(r.v);
      if (rc != TW_OK)
        return rc;
    }
    p = close + 1;
  }
  return TW_OK;
}

/* --- -o name ----------------------------------------------------------------- */

static void name_of(const json_t *o, struct tw_buf *out) {
  static const char *const keys[] = {"id", "name", "tenant", NULL};
  for (size_t i = 0; keys[i]; i++) {
    json_t *x = json_object_get(o, keys[i]);
    if (json_is_string(x)) {
      tw_cli_add_clean(out, json_string_value(x));
      tw_buf_adds(out, "\n");
      return;
    }
  }
}

void tw_cli_names(const json_t *v, struct tw_buf *out) {
  tw_buf_adds(out, "");
  json_t *items = json_object_get(v, "items");
  if (json_is_array(items)) {
    size_t i;
    json_t *x;
    json_array_foreach(items, i, x) name_of(x, out);
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) name_of(x, out);
  } else {
    name_of(v, out);
  }
}

/* --- --sort-by ------------------------------------------------------------ */

struct sort_row {
  json_t *item;
  const json_t *key; /* NULL: missing */
  size_t pos;
};

static int cmp_rows(const void *a, const void *b) {
  const struct sort_row *x = a, *y = b;
  if (!x->key || !y->key) {
    if (x->key == y->key)
      return x->pos < y->pos ? -1 : 1;
    return x->key ? -1 : 1;
  }
  int r = 0;
  if (json_is_number(x->key) && json_is_number(y->key)) {
    double p = json_number_value(x->key), q = json_number_value(y->key);
    r = p < q ? -1 : p > q ? 1 : 0;
  } else if (json_is_string(x->key) && json_is_string(y->key)) {
    r = strcmp(json_string_value(x->key), json_string_value(y->key));
  } else {
    r = (int)json_typeof(x->key) - (int)json_typeof(y->key);
  }
  if (r == 0) /* stable */
    r = x->pos < y->pos ? -1 : 1;
  return r;
}

enum tw_rc tw_cli_sort_items(json_t *items, const char *expr,
                             struct tw_err *err) {
  size_t n = json_array_size(items), len = strlen(expr);
  const char *e = expr;
  if (len >= 2 && e[0] == '{' && e[len - 1] == '}') {
    e++;
    len -= 2;
  }
  if (!len)
    return tw_err_set(err, TW_E_INVALID, "--sort-by: empty expression");
  struct sort_row *rows = tw_calloc(n ? n : 1, sizeof *rows);
  for (size_t i = 0; i < n; i++) {
    struct jp_set r = {0};
    rows[i].item = json_incref(json_array_get(items, i));
    rows[i].pos = i;
    enum tw_rc rc = jp_eval(e, len, rows[i].item, &r, err);
    if (rc != TW_OK) {
      free(r.v);
      for (size_t k = 0; k <= i; k++)
        json_decref(rows[k].item);
      free(rows);
      return rc;
    }
    rows[i].key = r.n ? r.v[0] : NULL;
    free(r.v);
  }
  if (n == 0) {
    /* still check the expression */
    struct jp_set r = {0};
    json_t *empty = json_object();
    enum tw_rc rc = jp_eval(e, len, empty, &r, err);
    free(r.v);
    json_decref(empty);
    free(rows);
    return rc;
  }
  qsort(rows, n, sizeof *rows, cmp_rows);
  json_t *sorted = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append(sorted, rows[i].item);
  json_array_clear(items);
  json_array_extend(items, sorted);
  json_decref(sorted);
  for (size_t i = 0; i < n; i++)
    json_decref(rows[i].item);
  free(rows);
  return TW_OK;
}
