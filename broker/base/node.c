#include "broker/base/node.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static struct tw_node *node_new(enum tw_node_kind kind, int line, int col) {
  struct tw_node *n = tw_calloc(1, sizeof *n);
  n->kind = kind;
  n->line = line;
  n->col = col;
  return n;
}

void tw_node_free(struct tw_node *n) {
  if (!n)
    return;
  for (size_t i = 0; i < n->n; i++) {
    if (n->keys)
      free(n->keys[i]);
    tw_node_free(n->items[i]);
  }
  free(n->keys);
  free(n->items);
  free(n->str);
  free(n);
}

static void push(struct tw_node *parent, char *key, struct tw_node *child) {
  parent->items =
      tw_realloc(parent->items, (parent->n + 1) * sizeof *parent->items);
  if (parent->kind == TW_NODE_MAP) {
    parent->keys =
        tw_realloc(parent->keys, (parent->n + 1) * sizeof *parent->keys);
    parent->keys[parent->n] = key;
  }
  parent->items[parent->n++] = child;
}

struct tw_node *tw_node_get(const struct tw_node *m, const char *key) {
  if (!m || m->kind != TW_NODE_MAP)
    return NULL;
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->keys[i], key) == 0)
      return m->items[i];
  return NULL;
}

/* ---- YAML front-end ---------------------------------------------------- */

struct yctx {
  yaml_parser_t p;
  size_t count;
  struct tw_err *err;
};

static enum tw_rc y_fail(struct yctx *c, const char *what) {
  if (c->p.error != YAML_NO_ERROR) {
    return tw_err_set(
        c->err, TW_E_INVALID, "malformed YAML at line %zu column %zu: %s%s%s",
        c->p.problem_mark.line + 1, c->p.problem_mark.column + 1,
        c->p.problem ? c->p.problem : "syntax error", c->p.context ? " " : "",
        c->p.context ? c->p.context : "");
  }
  return tw_err_set(c->err, TW_E_INVALID, "malformed YAML: %s", what);
}

static bool plain_null(const yaml_event_t *ev) {
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return false;
  const char *v = (const char *)ev->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
         !strcmp(v, "NULL");
}

static enum tw_rc y_node(struct yctx *c, yaml_event_t *ev, int depth,
                         const char *path, struct tw_node **out);

/* An explicit tag (`!!str`, `!!python/object`, `!custom`): refused rather
 * than dropped, so nothing is read differently from how it was meant. */
static enum tw_rc y_tag(struct yctx *c, const yaml_char_t *tag,
                        const yaml_mark_t *m, const char *path) {
  if (!tag)
    return TW_OK;
  const char *t = (const char *)tag;
  static const char core[] = "tag:yaml.org,2002:";
  bool short_form = !strncmp(t, core, sizeof core - 1);
  return tw_err_field(c->err, TW_E_INVALID, path,
                      "%s: YAML tags are not accepted, got %s%.40s (line %zu "
                      "column %zu)",
                      *path ? path : "document", short_form ? "!!" : "",
                      short_form ? t + sizeof core - 1 : t, m->line + 1,
                      m->column + 1);
}

static enum tw_rc y_next(struct yctx *c, yaml_event_t *ev) {
  if (!yaml_parser_parse(&c->p, ev))
    return y_fail(c, "parser error");
  return TW_OK;
}

static enum tw_rc y_node(struct yctx *c, yaml_event_t *ev, int depth,
                         const char *path, struct tw_node **out) {
  int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
  enum tw_rc rc = TW_OK;
  if (++c->count > TW_NODE_MAX_NODES)
    return tw_err_set(c->err, TW_E_TOOBIG, "document has more than %d nodes",
                      TW_NODE_MAX_NODES);
  if (depth > TW_NODE_MAX_DEPTH)
    return tw_err_set(
        c->err, TW_E_INVALID,
        "malformed YAML at line %d column %d: nested deeper than %d", line, col,
        TW_NODE_MAX_DEPTH);
  switch (ev->type) {
  case YAML_ALIAS_EVENT:
    return tw_err_set(
        c->err, TW_E_INVALID,
        "malformed YAML at line %d column %d: aliases are not supported", line,
        col);
  case YAML_SCALAR_EVENT:
    if ((rc = y_tag(c, ev->data.scalar.tag, &ev->start_mark, path)))
      return rc;
    if (plain_null(ev)) {
      *out = node_new(TW_NODE_NULL, line, col);
    } else {
      *out = node_new(TW_NODE_SCALAR, line, col);
      (*out)->str = tw_strndup((const char *)ev->data.scalar.value,
                               ev->data.scalar.length);
      (*out)->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
      if (strlen((*out)->str) != ev->data.scalar.length) {
        tw_node_free(*out);
        *out = NULL;
        return tw_err_field(c->err, TW_E_INVALID, path,
                            "%s: a NUL byte in a string (line %d column %d)",
                            *path ? path : "document", line, col);
      }
    }
    return TW_OK;
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    if ((rc = y_tag(
             c, map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag,
             &ev->start_mark, path)))
      return rc;
    struct tw_node *n = node_new(map ? TW_NODE_MAP : TW_NODE_SEQ, line, col);
    for (size_t idx = 0;; idx++) {
      yaml_event_t kev;
      if ((rc = y_next(c, &kev)))
        break;
      if (kev.type == YAML_SEQUENCE_END_EVENT ||
          kev.type == YAML_MAPPING_END_EVENT) {
        yaml_event_delete(&kev);
        break;
      }
      char *key = NULL;
      if (map) {
        if (kev.type != YAML_SCALAR_EVENT) {
          rc = tw_err_set(c->err, TW_E_INVALID,
                          "malformed YAML at line %zu column %zu: mapping keys "
                          "must be strings",
                          kev.start_mark.line + 1, kev.start_mark.column + 1);
          yaml_event_delete(&kev);
          break;
        }
        if ((rc = y_tag(c, kev.data.scalar.tag, &kev.start_mark, path))) {
          yaml_event_delete(&kev);
          break;
        }
        key = tw_strndup((const char *)kev.data.scalar.value,
                         kev.data.scalar.length);
        int kl = (int)kev.start_mark.line + 1,
            kc = (int)kev.start_mark.column + 1;
        yaml_event_delete(&kev);
        if (tw_node_get(n, key)) {
          rc = tw_err_set(
              c->err, TW_E_INVALID,
              "malformed YAML at line %d column %d: duplicate key \"%s\"", kl,
              kc, key);
          free(key);
          break;
        }
        if ((rc = y_next(c, &kev))) {
          free(key);
          break;
        }
      }
      struct tw_node *child = NULL;
      char sub[256];
      if (map)
        snprintf(sub, sizeof sub, "%s%s%.64s", path, *path ? "." : "", key);
      else
        snprintf(sub, sizeof sub, "%s[%zu]", path, idx);
      rc = y_node(c, &kev, depth + 1, sub, &child);
      yaml_event_delete(&kev);
      if (rc) {
        free(key);
        break;
      }
      push(n, key, child);
    }
    if (rc) {
      tw_node_free(n);
      return rc;
    }
    *out = n;
    return TW_OK;
  }
  default:
    return tw_err_set(c->err, TW_E_INVALID,
                      "malformed YAML at line %d column %d", line, col);
  }
}

enum tw_rc tw_node_parse_yaml(const char *text, size_t len,
                              struct tw_node **out, struct tw_err *err) {
  struct yctx c = {.err = err};
  yaml_event_t ev;
  enum tw_rc rc = TW_OK;
  struct tw_node *root = NULL;
  *out = NULL;
  if (!yaml_parser_initialize(&c.p))
    return tw_err_set(err, TW_E_INTERNAL, "cannot initialize the YAML parser");
  yaml_parser_set_input_string(&c.p, (const unsigned char *)text, len);
  /* stream start, document start (or stream end for empty input) */
  if ((rc = y_next(&c, &ev)))
    goto out;
  yaml_event_delete(&ev);
  if ((rc = y_next(&c, &ev)))
    goto out;
  if (ev.type == YAML_STREAM_END_EVENT) {
    yaml_event_delete(&ev);
    rc = tw_err_set(err, TW_E_INVALID, "malformed YAML: the document is empty");
    goto out;
  }
  yaml_event_delete(&ev);
  if ((rc = y_next(&c, &ev)))
    goto out;
  rc = y_node(&c, &ev, 0, "", &root);
  yaml_event_delete(&ev);
  if (rc)
    goto out;
  /* document end, then stream end: a second document is an error */
  if ((rc = y_next(&c, &ev)))
    goto out;
  yaml_event_delete(&ev);
  if ((rc = y_next(&c, &ev)))
    goto out;
  if (ev.type != YAML_STREAM_END_EVENT)
    rc = tw_err_set(
        err, TW_E_INVALID,
        "malformed YAML: expected a single document, found another at line %zu",
        ev.start_mark.line + 1);
  yaml_event_delete(&ev);
out:
  yaml_parser_delete(&c.p);
  if (rc) {
    tw_node_free(root);
    return rc;
  }
  *out = root;
  return TW_OK;
}

/* ---- JSON front-end (strict, through jansson) -------------------------- */

static struct tw_node *from_json(json_t *j) {
  struct tw_node *n;
  switch (json_typeof(j)) {
  case JSON_OBJECT: {
    n = node_new(TW_NODE_MAP, 0, 0);
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) push(n, tw_strdup(k), from_json(v));
    return n;
  }
  case JSON_ARRAY: {
    n = node_new(TW_NODE_SEQ, 0, 0);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) push(n, NULL, from_json(v));
    return n;
  }
  case JSON_STRING:
    n = node_new(TW_NODE_SCALAR, 0, 0);
    n->str = tw_strndup(json_string_value(j), json_string_length(j));
    n->quoted = true;
    return n;
  case JSON_INTEGER:
    n = node_new(TW_NODE_SCALAR, 0, 0);
    n->str = tw_asprintf("%" JSON_INTEGER_FORMAT, json_integer_value(j));
    return n;
  case JSON_REAL:
    n = node_new(TW_NODE_SCALAR, 0, 0);
    n->str = tw_asprintf("%.17g", json_real_value(j));
    return n;
  case JSON_TRUE:
  case JSON_FALSE:
    n = node_new(TW_NODE_SCALAR, 0, 0);
    n->str = tw_strdup(json_is_true(j) ? "true" : "false");
    return n;
  default:
    return node_new(TW_NODE_NULL, 0, 0);
  }
}

static int json_depth(json_t *j, int d) {
  if (d > TW_NODE_MAX_DEPTH)
    return d;
  int m = d;
  if (json_is_object(j)) {
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
      int x = json_depth(v, d + 1);
      if (x > m)
        m = x;
    }
  } else if (json_is_array(j)) {
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) {
      int x = json_depth(v, d + 1);
      if (x > m)
        m = x;
    }
  }
  return m;
}

void tw_json_path_at(const char *t, size_t len, size_t pos, char *out,
                     size_t cap) {
  struct {
    bool arr;
    size_t idx;
    char key[64];
  } st[16];
  int depth = 0;
  bool in_str = false, esc = false, want_key = false, is_key = false;
  char cur[64];
  size_t cl = 0;
  for (size_t i = 0; i < pos && i < len; i++) {
    char ch = t[i];
    if (in_str) {
      if (esc)
        esc = false;
      else if (ch == '\\')
        esc = true;
      else if (ch == '"') {
        in_str = false;
        cur[cl] = '\0';
        if (is_key && depth > 0 && depth <= 16)
          snprintf(st[depth - 1].key, sizeof st[0].key, "%s", cur);
        continue;
      }
      if (cl + 1 < sizeof cur)
        cur[cl++] = ch;
      continue;
    }
    switch (ch) {
    case '"':
      in_str = true;
      cl = 0;
      is_key = want_key && depth > 0 && depth <= 16 && !st[depth - 1].arr;
      break;
    case '{':
    case '[':
      if (depth < 16) {
        st[depth].arr = ch == '[';
        st[depth].idx = 0;
        st[depth].key[0] = '\0';
      }
      depth++;
      want_key = ch == '{';
      break;
    case '}':
    case ']':
      if (depth > 0)
        depth--;
      want_key = false;
      break;
    case ':':
      want_key = false;
      break;
    case ',':
      if (depth > 0 && depth <= 16) {
        if (st[depth - 1].arr)
          st[depth - 1].idx++;
        else
          want_key = true;
      }
      break;
    default:
      break;
    }
  }
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < depth && k < 16 && n + 1 < cap; k++) {
    if (st[k].arr)
      n += (size_t)snprintf(out + n, cap - n, "[%zu]", st[k].idx);
    else if (st[k].key[0])
      n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "." : "", st[k].key);
    if (n >= cap)
      n = cap - 1;
  }
}

enum tw_rc tw_node_parse_json(const char *text, size_t len,
                              struct tw_node **out, struct tw_err *err) {
  json_error_t je;
  *out = NULL;
  /* jansson's own parser bounds nesting depth (JSON_PARSER_MAX_DEPTH). */
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    /* a value jansson cannot hold: name the member, not jansson's flags */
    bool range = strstr(je.text, "too big integer") ||
                 strstr(je.text, "real number overflow");
    bool nul = strstr(je.text, "\\u0000") != NULL;
    if (range || nul) {
      char path[256];
      tw_json_path_at(text, len, (size_t)je.position, path, sizeof path);
      return tw_err_field(err, TW_E_INVALID, path, "%s: %s (line %d column %d)",
                          *path ? path : "body",
                          range ? "number out of range"
                                : "\\u0000 (a NUL byte) is not accepted",
                          je.line, je.column);
    }
    return tw_err_set(err, TW_E_INVALID,
                      "malformed JSON at line %d column %d: %s", je.line,
                      je.column, je.text);
  }
  if (json_depth(j, 0) > TW_NODE_MAX_DEPTH) {
    json_decref(j);
    return tw_err_set(err, TW_E_INVALID,
                      "malformed JSON: nested deeper than %d",
                      TW_NODE_MAX_DEPTH);
  }
  *out = from_json(j);
  json_decref(j);
  return TW_OK;
}

/* ---- scalars ----------------------------------------------------------- */

bool tw_node_is_string(const struct tw_node *n) {
  return n && n->kind == TW_NODE_SCALAR;
}

bool tw_node_as_int(const struct tw_node *n, int64_t *out) {
  if (!n || n->kind != TW_NODE_SCALAR || n->quoted || !*n->str)
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(n->str, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

bool tw_node_as_bool(const struct tw_node *n, bool *out) {
  if (!n || n->kind != TW_NODE_SCALAR || n->quoted)
    return false;
  if (!strcmp(n->str, "true") || !strcmp(n->str, "True") ||
      !strcmp(n->str, "TRUE")) {
    *out = true;
    return true;
  }
  if (!strcmp(n->str, "false") || !strcmp(n->str, "False") ||
      !strcmp(n->str, "FALSE")) {
    *out = false;
    return true;
  }
  return false;
}

static bool looks_number(const char *s) {
  char *end;
  if (!*s)
    return false;
  errno = 0;
  (void)strtod(s, &end);
  return !errno && !*end && strspn(s, "0123456789+-.eE") == strlen(s);
}

const char *tw_node_type_name(const struct tw_node *n) {
  bool b;
  if (!n)
    return "nothing";
  switch (n->kind) {
  case TW_NODE_NULL:
    return "null";
  case TW_NODE_MAP:
    return "mapping";
  case TW_NODE_SEQ:
    return "sequence";
  case TW_NODE_SCALAR:
    if (n->quoted)
      return "string";
    if (tw_node_as_bool(n, &b))
      return "boolean";
    return looks_number(n->str) ? "number" : "string";
  }
  return "unknown";
}

void tw_node_to_json(const struct tw_node *n, struct tw_buf *b) {
  bool bv;
  int64_t iv;
  switch (n->kind) {
  case TW_NODE_NULL:
    tw_buf_adds(b, "null");
    return;
  case TW_NODE_SCALAR:
    if (tw_node_as_bool(n, &bv))
      tw_buf_adds(b, bv ? "true" : "false");
    else if (tw_node_as_int(n, &iv))
      tw_buf_printf(b, "%lld", (long long)iv);
    else
      tw_buf_json_str(b, n->str);
    return;
  case TW_NODE_MAP:
  case TW_NODE_SEQ:
    tw_buf_addc(b, n->kind == TW_NODE_MAP ? '{' : '[');
    for (size_t i = 0; i < n->n; i++) {
      if (i)
        tw_buf_addc(b, ',');
      if (n->kind == TW_NODE_MAP) {
        tw_buf_json_str(b, n->keys[i]);
        tw_buf_addc(b, ':');
      }
      tw_node_to_json(n->items[i], b);
    }
    tw_buf_addc(b, n->kind == TW_NODE_MAP ? '}' : ']');
    return;
  }
}

size_t tw_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64)
    return la > lb ? la : lb;
  size_t prev[65], cur[65];
  for (size_t j = 0; j <= lb; j++)
    prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, (lb + 1) * sizeof *prev);
  }
  return prev[lb];
}

const char *tw_closest(const char *word, const char *const *candidates) {
  const char *best = NULL;
  size_t bestd = (size_t)-1;
  size_t limit = strlen(word) / 3;
  if (limit < 2)
    limit = 2;
  for (const char *const *c = candidates; *c; c++) {
    size_t d = tw_edit_distance(word, *c);
    if (d < bestd) {
      bestd = d;
      best = *c;
    }
  }
  return bestd <= limit ? best : NULL;
}
