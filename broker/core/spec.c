/* spec.c - job spec validation and canonical JSON.  The contract is in
 * spec.h; the user-facing description of every field is docs/jobspec.md. */
#include "broker/core/spec.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "broker/base/units.h"
#include "broker/core/flow.h"

/* Field paths are at most this long before err->field truncates them. */
#define PATH_MAX_LEN 192

/* 9999-12-31T23:59:59.999Z: the last instant tw_time_fmt_rfc3339 writes
 * with a four-digit year, so a deadline always survives the round trip. */
#define DEADLINE_MAX_MS 253402300799999LL

const char *tw_market_str(enum tw_market m) {
  switch (m) {
  case TW_MARKET_SPOT:
    return "spot";
  case TW_MARKET_ON_DEMAND:
    return "on-demand";
  case TW_MARKET_PRIVATE:
    return "private";
  case TW_MARKET_ANY:
    break;
  }
  return "any";
}

const char *tw_arch_str(enum tw_arch a) {
  switch (a) {
  case TW_ARCH_X86_64:
    return "x86_64";
  case TW_ARCH_ARM64:
    return "arm64";
  case TW_ARCH_ANY:
    break;
  }
  return "any";
}

const char *tw_sel_op_str(enum tw_sel_op op) {
  switch (op) {
  case TW_SEL_NOT_IN:
    return "not_in";
  case TW_SEL_EXISTS:
  case TW_SEL_NOT_EXISTS:
    return "exists";
  case TW_SEL_GLOB:
    return "glob";
  case TW_SEL_IN:
    break;
  }
  return "in";
}

/* ---- messages ---------------------------------------------------------- */

static enum tw_rc fail(struct tw_err *err, const char *path,
                       const struct tw_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Every validation error goes through here: the message starts with the
 * path, and YAML input adds the line (the JSON front-end has none). */
static enum tw_rc fail(struct tw_err *err, const char *path,
                       const struct tw_node *at, const char *fmt, ...) {
  char what[224];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (at && at->line > 0)
    return tw_err_field(err, TW_E_INVALID, path, "%s: %s (line %d)", path, what,
                        at->line);
  return tw_err_field(err, TW_E_INVALID, path, "%s: %s", path, what);
}

/* Quotes s for a message: at most 40 bytes, control characters as '?'. */
static void quote(const char *s, char *out, size_t sz) {
  size_t o = 0, i;
  out[o++] = '"';
  for (i = 0; s[i] && i < 40 && o + 4 < sz; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      out[o++] = '\\';
    out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  if (s[i] && o + 7 < sz) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o++] = '"';
  out[o] = '\0';
}

/* What the user wrote, for "expected X, got Y". */
static const char *describe(const struct tw_node *n, char *buf, size_t sz) {
  char q[64];
  if (!n || n->kind == TW_NODE_NULL)
    return "null";
  if (n->kind == TW_NODE_MAP)
    return "a mapping";
  if (n->kind == TW_NODE_SEQ)
    return "a sequence";
  const char *type = tw_node_type_name(n);
  quote(n->str, q, sizeof q);
  if (strcmp(type, "string") != 0) {
    snprintf(buf, sz, "%s %s", type, n->str);
    if (strlen(n->str) > 40)
      snprintf(buf, sz, "%s %s", type, q);
  } else if (n->quoted &&
             (strspn(n->str, "0123456789+-.eE") == strlen(n->str) ||
              !strcmp(n->str, "true") || !strcmp(n->str, "false"))) {
    snprintf(buf, sz, "string %s (write it without quotes)", q);
  } else {
    snprintf(buf, sz, "%s", q);
  }
  return buf;
}

static void path_key(char *out, const char *parent, const char *key) {
  char k[96];
  size_t i;
  for (i = 0; key[i] && i + 1 < sizeof k; i++) {
    unsigned char c = (unsigned char)key[i];
    k[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  k[i] = '\0';
  if (parent && *parent)
    snprintf(out, PATH_MAX_LEN, "%s.%s", parent, k);
  else
    snprintf(out, PATH_MAX_LEN, "%s", k);
}

static void path_idx(char *out, const char *parent, size_t i) {
  snprintf(out, PATH_MAX_LEN, "%s[%zu]", parent, i);
}

/* SkyPilot keys that have a home elsewhere in a Tradewind spec. */
struct hint {
  const char *key, *use;
};
static const struct hint key_hints[] = {
    {"num_nodes", "nodes"},
    {"cloud", "placement.providers"},
    {"region", "placement.regions"},
    {"zone", "placement.regions"},
    {"infra", "placement.regions"},
    {"envs", "env"},
    {NULL, NULL},
};

/* Rejects the first key of m not in known, with the nearest suggested. */
static enum tw_rc check_keys(const struct tw_node *m, const char *parent,
                             const char *const *known, struct tw_err *err) {
  for (size_t i = 0; i < m->n; i++) {
    const char *k = m->keys[i];
    const char *const *c;
    for (c = known; *c; c++)
      if (!strcmp(*c, k))
        break;
    if (*c)
      continue;
    char path[PATH_MAX_LEN];
    path_key(path, parent, k);
    for (const struct hint *h = key_hints; h->key; h++)
      if (!strcmp(h->key, k))
        return fail(err, path, m->items[i], "unknown key; use \"%s\" instead",
                    h->use);
    const char *best = tw_closest(k, known);
    if (best)
      return fail(err, path, m->items[i], "unknown key; did you mean \"%s\"?",
                  best);
    return fail(err, path, m->items[i], "unknown key");
  }
  return TW_OK;
}

/* ---- scalars ----------------------------------------------------------- */

/* The text of a scalar as the user most likely wrote it.  The JSON
 * front-end prints reals with %.17g, so 3.1 arrives as
 * "3.1000000000000001"; when a plain scalar is exactly such a rendering we
 * take the shortest text that reads back to the same double.  The double is
 * only used to recover the text: the value itself is then parsed exactly. */
static const char *scalar_text(const struct tw_node *n, char *tmp, size_t sz) {
  const char *s = n->str;
  if (n->quoted || strlen(s) < 17 || !strpbrk(s, ".eE") ||
      strspn(s, "0123456789+-.eE") != strlen(s))
    return s;
  char *end, b[40];
  errno = 0;
  double d = strtod(s, &end);
  if (errno || *end)
    return s;
  snprintf(b, sizeof b, "%.17g", d);
  if (strcmp(b, s) != 0)
    return s;
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sz, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d)
      return tmp;
  }
  return s;
}

static bool is_null(const struct tw_node *n) {
  return !n || n->kind == TW_NODE_NULL;
}

/* Any scalar, its text copied. */
static enum tw_rc get_text(const struct tw_node *n, const char *path,
                           size_t max, char **out, struct tw_err *err) {
  char d[128], tmp[40];
  if (n->kind != TW_NODE_SCALAR)
    return fail(err, path, n, "expected a string, got %s",
                describe(n, d, sizeof d));
  const char *s = scalar_text(n, tmp, sizeof tmp);
  if (strlen(s) > max)
    return fail(err, path, n, "longer than %zu bytes", max);
  *out = tw_strdup(s);
  return TW_OK;
}

static bool ident_char(char c) {
  return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/* name, tenant, project: [A-Za-z0-9._-], 1..128. */
static enum tw_rc get_ident(const struct tw_node *n, const char *path,
                            char **out, struct tw_err *err) {
  char d[128];
  if (n->kind != TW_NODE_SCALAR)
    return fail(err, path, n, "expected a string, got %s",
                describe(n, d, sizeof d));
  const char *s = n->str;
  size_t len = strlen(s);
  if (len == 0)
    return fail(err, path, n, "must not be empty");
  if (len > TW_SPEC_NAME_MAX)
    return fail(err, path, n, "longer than %d characters", TW_SPEC_NAME_MAX);
  for (size_t i = 0; i < len; i++)
    if (!ident_char(s[i]))
      return fail(err, path, n,
                  "may only contain letters, digits, '.', '_' and '-', got %s",
                  describe(n, d, sizeof d));
  *out = tw_strdup(s);
  return TW_OK;
}

/* A plain (unquoted) integer within [min, max]. */
static enum tw_rc get_int(const struct tw_node *n, const char *path,
                          int64_t min, int64_t max, int64_t *out,
                          struct tw_err *err) {
  char d[128], tmp[40];
  int64_t v;
  if (n->kind == TW_NODE_SCALAR && !n->quoted) {
    const char *s = scalar_text(n, tmp, sizeof tmp);
    const char *end;
    enum tw_dec_rc r = tw_dec_scaled(s, &end, 1, 0, &v);
    if (r == TW_DEC_OK && *end)
      r = TW_DEC_SYNTAX;
    if (r == TW_DEC_RANGE || (r == TW_DEC_OK && (v < min || v > max)))
      return fail(err, path, n, "must be %lld..%lld, got %s", (long long)min,
                  (long long)max, s);
    if (r == TW_DEC_FRACTION)
      return fail(err, path, n, "expected a whole number, got %s", s);
    if (r == TW_DEC_OK) {
      *out = v;
      return TW_OK;
    }
  }
  return fail(err, path, n, "expected an integer, got %s",
              describe(n, d, sizeof d));
}

static enum tw_rc get_bool(const struct tw_node *n, const char *path, bool *out,
                           struct tw_err *err) {
  char d[128];
  if (!tw_node_as_bool(n, out))
    return fail(err, path, n, "expected true or false, got %s",
                describe(n, d, sizeof d));
  return TW_OK;
}

/* A duration: a plain number of seconds or "1h30m"; 1s..365d. */
static enum tw_rc get_duration(const struct tw_node *n, const char *path,
                               int64_t *out, struct tw_err *err) {
  char d[128];
  int64_t v;
  if (n->kind != TW_NODE_SCALAR)
    return fail(err, path, n,
                "expected a duration like 6h, 90m, 1h30m or seconds, got %s",
                describe(n, d, sizeof d));
  const char *s = n->str;
  if (*s == '-')
    return fail(err, path, n, "must be > 0, got %s", s);
  enum tw_dec_rc r = tw_duration_parse(s, &v);
  if (r == TW_DEC_RANGE)
    return fail(err, path, n, "must be at most 365d, got %s",
                describe(n, d, sizeof d));
  if (r != TW_DEC_OK)
    return fail(err, path, n,
                "expected a duration like 6h, 90m, 1h30m or seconds, got %s",
                describe(n, d, sizeof d));
  if (v <= 0)
    return fail(err, path, n, "must be > 0, got %s", s);
  if (v > TW_SPEC_DURATION_MAX_S)
    return fail(err, path, n, "must be at most 365d, got %s",
                describe(n, d, sizeof d));
  *out = v;
  return TW_OK;
}

static enum tw_rc get_uri(const struct tw_node *n, const char *path, char **out,
                          struct tw_err *err) {
  char d[128];
  if (n->kind != TW_NODE_SCALAR || strcmp(tw_node_type_name(n), "string"))
    return fail(err, path, n, "expected a URI like s3://bucket/path, got %s",
                describe(n, d, sizeof d));
  const char *s = n->str;
  size_t len = strlen(s);
  if (len > TW_SPEC_URI_MAX)
    return fail(err, path, n, "longer than %d bytes", TW_SPEC_URI_MAX);
  size_t sl = 0;
  if (isalpha((unsigned char)s[0])) {
    sl = 1;
    while (isalnum((unsigned char)s[sl]) || s[sl] == '+' || s[sl] == '-' ||
           s[sl] == '.')
      sl++;
  }
  if (sl == 0 || strncmp(s + sl, "://", 3) != 0 || !s[sl + 3])
    return fail(err, path, n,
                "expected a URI with a scheme like s3://, gs://, az://, "
                "oss://, https:// or file://, got %s",
                describe(n, d, sizeof d));
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
      return fail(err, path, n,
                  "must not contain spaces or control "
                  "characters, got %s",
                  describe(n, d, sizeof d));
  *out = tw_strdup(s);
  return TW_OK;
}

/* Suggests a known provider for a misspelt one, case folded. */
static const char *provider_hint(const char *p, const char *const *known) {
  char low[64];
  size_t i;
  for (i = 0; p[i] && i + 1 < sizeof low; i++)
    low[i] = (char)tolower((unsigned char)p[i]);
  low[i] = '\0';
  return tw_closest(low, known);
}

/* The names are the registry's (struct tw_spec_opts), checked after the
 * shape (check_provider_names); while parsing, a provider is only a word. */
static bool provider_word(const char *p, size_t len) {
  if (!len || len > 63 || !isalpha((unsigned char)p[0]))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_')
      return false;
  return true;
}

static bool known_provider(const char *p, size_t len,
                           const char *const *known) {
  for (const char *const *c = known; *c; c++)
    if (strlen(*c) == len && !strncmp(*c, p, len))
      return true;
  return false;
}

static enum tw_rc bad_provider(const struct tw_node *n, const char *path,
                               const char *p, size_t len,
                               const char *const *known, struct tw_err *err) {
  char name[64], q[64];
  snprintf(name, sizeof name, "%.*s", (int)(len < 60 ? len : 60), p);
  quote(name, q, sizeof q);
  if (!known)
    return fail(err, path, n,
                "expected a provider name (letters, digits, '-', '_'), got %s",
                q);
  const char *best = provider_hint(name, known);
  if (best)
    return fail(err, path, n, "unknown provider %s; did you mean \"%s\"?", q,
                best);
  char list[256];
  size_t o = 0;
  list[0] = '\0';
  for (const char *const *c = known; *c && o + 1 < sizeof list; c++)
    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s",
                          c == known ? "" : ", ", *c);
  return fail(err, path, n, "unknown provider %s (known: %s)", q, list);
}

/* "provider:region"; with glob, the region part may hold * and ?, and the
 * provider may be "*". */
static enum tw_rc check_location(const struct tw_node *n, const char *path,
                                 bool glob, struct tw_err *err) {
  char d[128];
  const char *example =
      glob ? "\"aws:us-east-1\" or \"aws:us-*\"" : "\"aws:us-east-1\"";
  if (n->kind != TW_NODE_SCALAR || strcmp(tw_node_type_name(n), "string"))
    return fail(err, path, n, "expected provider:region like %s, got %s",
                example, describe(n, d, sizeof d));
  const char *s = n->str, *colon = strchr(s, ':');
  if (!colon || colon == s || !colon[1] || strlen(colon + 1) > 64)
    return fail(err, path, n, "expected provider:region like %s, got %s",
                example, describe(n, d, sizeof d));
  size_t plen = (size_t)(colon - s);
  if (!(glob && plen == 1 && *s == '*') && !provider_word(s, plen))
    return bad_provider(n, path, s, plen, NULL, err);
  /* a selector may name zones: provider:region:zone */
  const char *zone = glob ? strchr(colon + 1, ':') : NULL;
  if (zone && (zone == colon + 1 || !zone[1] || strchr(zone + 1, ':')))
    return fail(err, path, n,
                "expected provider:region or provider:region:zone, got %s",
                describe(n, d, sizeof d));
  for (const char *r = colon + 1; *r; r++)
    if (!ident_char(*r) && *r != '/' && r != zone &&
        !(glob && (*r == '*' || *r == '?')))
      return fail(err, path, n,
                  "region may only contain letters, digits, '.', '_', '-', "
                  "'/'%s, got %s",
                  glob ? ", '*' and '?'" : "", describe(n, d, sizeof d));
  return TW_OK;
}

/* ---- resources --------------------------------------------------------- */

static bool glob_char(char c) { return c == '*' || c == '?'; }

static enum tw_rc accel_name_check(const struct tw_node *at, const char *path,
                                   const char *name, size_t len,
                                   struct tw_err *err) {
  char nm[80], q[64];
  snprintf(nm, sizeof nm, "%.*s", (int)(len < 70 ? len : 70), name);
  quote(nm, q, sizeof q);
  if (len == 0 || len > 64 || !isalpha((unsigned char)name[0]))
    return fail(err, path, at,
                "expected an accelerator name like A100 or A100-80GB, got %s",
                q);
  for (size_t i = 0; i < len; i++)
    if (!ident_char(name[i]) && !glob_char(name[i]))
      return fail(err, path, at,
                  "accelerator names may only contain letters, digits, '.', "
                  "'_' and '-' (and '*' or '?' in a glob), got %s",
                  q);
  return TW_OK;
}

static const char *at_least_text(const struct tw_node *n, char *tmp, size_t sz,
                                 bool *plus);

/* A count: 1..256, or N+ for at least N. */
static enum tw_rc accel_count_of(const struct tw_node *n, const char *path,
                                 const char *text, int *count, bool *at_least,
                                 struct tw_err *err) {
  char d[128], t[40];
  if (!text) {
    if (n->kind != TW_NODE_SCALAR || !strcmp(tw_node_type_name(n), "boolean"))
      return fail(err, path, n, "expected a count 1..%d or N+, got %s",
                  TW_SPEC_ACCEL_COUNT_MAX, describe(n, d, sizeof d));
    size_t sl = strlen(n->str);
    if (!sl || n->str[sl - 1] != '+') { /* a plain integer, as before */
      int64_t v;
      enum tw_rc rc = get_int(n, path, 1, TW_SPEC_ACCEL_COUNT_MAX, &v, err);
      if (!rc)
        *count = (int)v, *at_least = false;
      return rc;
    }
    text = at_least_text(n, t, sizeof t, at_least);
  } else {
    size_t len = strlen(text);
    *at_least = len > 0 && text[len - 1] == '+';
    snprintf(t, sizeof t, "%.*s", (int)(*at_least ? len - 1 : len), text);
    text = t;
  }
  const char *end;
  int64_t v;
  enum tw_dec_rc r = tw_dec_scaled(text, &end, 1, 0, &v);
  if (r != TW_DEC_OK || *end || v < 1 || v > TW_SPEC_ACCEL_COUNT_MAX)
    return fail(err, path, n, "count after ':' must be 1..%d or N+, got %s",
                TW_SPEC_ACCEL_COUNT_MAX, describe(n, d, sizeof d));
  *count = (int)v;
  return TW_OK;
}

static enum tw_rc accel_add(struct tw_job_spec *spec, const struct tw_node *at,
                            const char *path, const char *name, size_t len,
                            int count, bool at_least, struct tw_err *err) {
  for (size_t i = 0; i < spec->n_accels; i++)
    if (strlen(spec->accels[i].name) == len &&
        !strncasecmp(spec->accels[i].name, name, len))
      return fail(err, path, at, "%.*s is listed twice", (int)len, name);
  if (spec->n_accels == TW_SPEC_ACCELS_MAX)
    return fail(err, path, at, "at most %d accelerators", TW_SPEC_ACCELS_MAX);
  spec->accels =
      tw_realloc(spec->accels, (spec->n_accels + 1) * sizeof *spec->accels);
  struct tw_accel_ask *a = &spec->accels[spec->n_accels++];
  a->name = tw_strndup(name, len);
  a->count = count;
  a->at_least = at_least;
  return TW_OK;
}

/* One accelerator: "A100:8", "A100:8+", "A100*" or {name: A100, count: 8,
 * at_least: false}. */
static enum tw_rc parse_accel_one(const struct tw_node *n, const char *path,
                                  struct tw_job_spec *spec,
                                  struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN];
  int count = 1;
  bool at_least = false;
  enum tw_rc rc;
  if (n->kind == TW_NODE_SCALAR) {
    const char *s = n->str, *colon = strchr(s, ':');
    size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
    if ((rc = accel_name_check(n, path, s, nlen, err)))
      return rc;
    if (colon &&
        (rc = accel_count_of(n, path, colon + 1, &count, &at_least, err)))
      return rc;
    return accel_add(spec, n, path, s, nlen, count, at_least, err);
  }
  if (n->kind == TW_NODE_MAP &&
      (tw_node_get(n, "name") || tw_node_get(n, "count"))) {
    static const char *const keys[] = {"name", "count", "at_least", NULL};
    const struct tw_node *nm = tw_node_get(n, "name"),
                         *cn = tw_node_get(n, "count"),
                         *al = tw_node_get(n, "at_least");
    if ((rc = check_keys(n, path, keys, err)))
      return rc;
    path_key(sub, path, "name");
    if (is_null(nm))
      return fail(err, sub, n, "required");
    if (nm->kind != TW_NODE_SCALAR)
      return fail(err, sub, nm, "expected an accelerator name, got %s",
                  describe(nm, d, sizeof d));
    if ((rc = accel_name_check(nm, sub, nm->str, strlen(nm->str), err)))
      return rc;
    if (!is_null(cn)) {
      path_key(sub, path, "count");
      if ((rc = accel_count_of(cn, sub, NULL, &count, &at_least, err)))
        return rc;
    }
    if (!is_null(al)) {
      bool b;
      path_key(sub, path, "at_least");
      if ((rc = get_bool(al, sub, &b, err)))
        return rc;
      if (at_least && !b)
        return fail(err, sub, al, "false conflicts with a count written N+");
      at_least = b;
    }
    return accel_add(spec, n, path, nm->str, strlen(nm->str), count, at_least,
                     err);
  }
  return fail(err, path, n,
              "expected a string like A100:8 or a mapping like "
              "{A100: 8}, got %s",
              describe(n, d, sizeof d));
}

/* accelerators: one ("A100:8", "A100:8+", {name: A100, count: 8}), or the
 * alternatives any of which will do: a list of those, or a mapping of
 * names to counts ({A100: 8, A100-80GB: 8}). */
static enum tw_rc parse_accel(const struct tw_node *n, const char *path,
                              struct tw_job_spec *spec, struct tw_err *err) {
  char sub[PATH_MAX_LEN];
  enum tw_rc rc;
  if (n->kind == TW_NODE_SEQ) {
    if (!n->n)
      return fail(err, path, n, "expected at least one accelerator");
    for (size_t i = 0; i < n->n; i++) {
      path_idx(sub, path, i);
      if ((rc = parse_accel_one(n->items[i], sub, spec, err)))
        return rc;
    }
  } else if (n->kind == TW_NODE_MAP && !tw_node_get(n, "name") &&
             !tw_node_get(n, "count")) {
    if (!n->n)
      return fail(err, path, n, "expected at least one accelerator");
    for (size_t i = 0; i < n->n; i++) {
      int count = 1;
      bool at_least = false;
      if ((rc = accel_name_check(n->items[i], path, n->keys[i],
                                 strlen(n->keys[i]), err)))
        return rc;
      path_key(sub, path, n->keys[i]);
      if (!is_null(n->items[i]) &&
          (rc = accel_count_of(n->items[i], sub, NULL, &count, &at_least,
                               err)))
        return rc;
      if ((rc = accel_add(spec, n->items[i], path, n->keys[i],
                          strlen(n->keys[i]), count, at_least, err)))
        return rc;
    }
  } else if ((rc = parse_accel_one(n, path, spec, err))) {
    return rc;
  }
  spec->accel_name = tw_strdup(spec->accels[0].name);
  spec->accel_count = spec->accels[0].count;
  return TW_OK;
}

/* Splits a trailing '+' ("8+", "32+") off a scalar's text into tmp.  Text
 * too long for tmp comes back as "" (a syntax error to the caller) rather
 * than cut short, which could turn garbage into a valid number. */
static const char *at_least_text(const struct tw_node *n, char *tmp, size_t sz,
                                 bool *plus) {
  char t[40];
  const char *s = scalar_text(n, t, sizeof t);
  size_t len = strlen(s);
  *plus = len > 0 && s[len - 1] == '+';
  if (*plus)
    len--;
  if (len >= sz)
    len = 0;
  memcpy(tmp, s, len);
  tmp[len] = '\0';
  return tmp;
}

static enum tw_rc parse_cpus(const struct tw_node *n, const char *path,
                             struct tw_job_spec *spec, struct tw_err *err) {
  char d[128], t[64];
  if (n->kind != TW_NODE_SCALAR || !strcmp(tw_node_type_name(n), "boolean"))
    return fail(err, path, n, "expected a number or N+, got %s",
                describe(n, d, sizeof d));
  bool plus;
  const char *s = at_least_text(n, t, sizeof t, &plus), *end;
  int64_t v;
  enum tw_dec_rc r = tw_dec_scaled(s, &end, 1, 0, &v);
  if (r == TW_DEC_SYNTAX || *end)
    return fail(err, path, n, "expected a number or N+, got %s",
                describe(n, d, sizeof d));
  if (r == TW_DEC_FRACTION)
    return fail(err, path, n, "expected a whole number of CPUs, got %s",
                describe(n, d, sizeof d));
  if (r == TW_DEC_RANGE || v < 1 || v > TW_SPEC_CPUS_MAX)
    return fail(err, path, n, "must be 1..%d, got %s", TW_SPEC_CPUS_MAX,
                n->str);
  spec->cpus = (int)v;
  spec->cpus_at_least = plus;
  return TW_OK;
}

/* memory: GiB as a number or N+, exact to the MiB. */
static enum tw_rc parse_memory_gib(const struct tw_node *n, const char *path,
                                   struct tw_job_spec *spec,
                                   struct tw_err *err) {
  char d[128], t[64];
  if (n->kind != TW_NODE_SCALAR || !strcmp(tw_node_type_name(n), "boolean"))
    return fail(err, path, n, "expected GiB as a number or N+, got %s",
                describe(n, d, sizeof d));
  bool plus;
  const char *s = at_least_text(n, t, sizeof t, &plus), *end;
  int64_t v;
  enum tw_dec_rc r = tw_dec_scaled(s, &end, 1024, 0, &v);
  if (r == TW_DEC_SYNTAX || *end)
    return fail(err, path, n, "expected GiB as a number or N+, got %s",
                describe(n, d, sizeof d));
  if (r == TW_DEC_FRACTION)
    return fail(err, path, n, "%s GiB is not a whole number of MiB", s);
  if (r == TW_DEC_RANGE || v <= 0 || v > TW_SPEC_MEMORY_MIB_MAX)
    return fail(err, path, n, "must be > 0 and at most %lld GiB, got %s",
                TW_SPEC_MEMORY_MIB_MAX / 1024, n->str);
  spec->memory_mib = v;
  spec->memory_at_least = plus;
  return TW_OK;
}

static enum tw_rc parse_choice(const struct tw_node *n, const char *path,
                               const char *const *names, const int *values,
                               const char *expected, int *out,
                               struct tw_err *err) {
  char d[128];
  if (n->kind == TW_NODE_SCALAR) {
    for (size_t i = 0; names[i]; i++)
      if (!strcmp(names[i], n->str)) {
        *out = values[i];
        return TW_OK;
      }
    const char *best = tw_closest(n->str, names);
    if (best)
      return fail(err, path, n, "expected %s, got %s; did you mean \"%s\"?",
                  expected, describe(n, d, sizeof d), best);
  }
  return fail(err, path, n, "expected %s, got %s", expected,
              describe(n, d, sizeof d));
}

static enum tw_rc parse_str_list(const struct tw_node *n, const char *path,
                                 size_t max,
                                 enum tw_rc (*check)(const struct tw_node *,
                                                     const char *,
                                                     struct tw_err *),
                                 const char *expected, char ***out,
                                 size_t *nout, struct tw_err *err);

/* An instance type or family glob: letters, digits, '.', '_', '-', '*',
 * '?', 1..63 bytes. */
static enum tw_rc check_name_glob(const struct tw_node *n, const char *path,
                                  struct tw_err *err) {
  char d[128];
  size_t len = strlen(n->str);
  bool ok = len >= 1 && len <= 63;
  for (size_t i = 0; ok && i < len; i++)
    ok = ident_char(n->str[i]) || glob_char(n->str[i]);
  if (!ok)
    return fail(err, path, n,
                "expected a name or glob of 1..63 letters, digits, '.', '_', "
                "'-', '*' or '?', got %s",
                describe(n, d, sizeof d));
  return TW_OK;
}

/* instance_types / families: a list of globs to include, or
 * {include: [...], exclude: [...]}. */
static enum tw_rc parse_name_filter(const struct tw_node *n, const char *path,
                                    struct tw_name_filter *f,
                                    struct tw_err *err) {
  char sub[PATH_MAX_LEN];
  enum tw_rc rc;
  const char *expected = "a list of names or globs, or {include: [...], "
                         "exclude: [...]}";
  if (n->kind != TW_NODE_MAP)
    return parse_str_list(n, path, TW_SPEC_NAME_FILTER_MAX, check_name_glob,
                          expected, &f->include, &f->n_include, err);
  static const char *const keys[] = {"include", "exclude", NULL};
  if ((rc = check_keys(n, path, keys, err)))
    return rc;
  const struct tw_node *in = tw_node_get(n, "include"),
                       *out = tw_node_get(n, "exclude");
  path_key(sub, path, "include");
  if (!is_null(in) &&
      (rc = parse_str_list(in, sub, TW_SPEC_NAME_FILTER_MAX, check_name_glob,
                           expected, &f->include, &f->n_include, err)))
    return rc;
  path_key(sub, path, "exclude");
  if (!is_null(out) &&
      (rc = parse_str_list(out, sub, TW_SPEC_NAME_FILTER_MAX, check_name_glob,
                           expected, &f->exclude, &f->n_exclude, err)))
    return rc;
  return TW_OK;
}

static enum tw_rc parse_resources(const struct tw_node *m,
                                  struct tw_job_spec *spec,
                                  struct tw_err *err) {
  static const char *const keys[] = {
      "accelerators",    "cpus",     "cpus_at_least",  "memory",
      "memory_mib",      "memory_at_least", "arch", "market",
      "use_spot",        "instance_types",  "families", NULL};
  const char *path = "resources";
  char d[128];
  enum tw_rc rc;
  const struct tw_node *n;
  if (m->kind != TW_NODE_MAP)
    return fail(err, path, m, "expected a mapping, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, path, keys, err)))
    return rc;

  if (!is_null(n = tw_node_get(m, "accelerators")) &&
      (rc = parse_accel(n, "resources.accelerators", spec, err)))
    return rc;

  if (!is_null(n = tw_node_get(m, "cpus")) &&
      (rc = parse_cpus(n, "resources.cpus", spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "cpus_at_least"))) {
    bool b;
    if ((rc = get_bool(n, "resources.cpus_at_least", &b, err)))
      return rc;
    if (!spec->cpus)
      return fail(err, "resources.cpus_at_least", n, "needs resources.cpus");
    if (spec->cpus_at_least && !b)
      return fail(err, "resources.cpus_at_least", n,
                  "false conflicts with cpus written as N+");
    spec->cpus_at_least = b;
  }

  const struct tw_node *mem = tw_node_get(m, "memory");
  if (!is_null(mem) &&
      (rc = parse_memory_gib(mem, "resources.memory", spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "memory_mib"))) {
    int64_t v;
    if (!is_null(mem))
      return fail(err, "resources.memory_mib", n,
                  "give either memory (GiB) or memory_mib, not both");
    if ((rc = get_int(n, "resources.memory_mib", 1, TW_SPEC_MEMORY_MIB_MAX, &v,
                      err)))
      return rc;
    spec->memory_mib = v;
  }
  if (!is_null(n = tw_node_get(m, "memory_at_least"))) {
    bool b;
    if ((rc = get_bool(n, "resources.memory_at_least", &b, err)))
      return rc;
    if (!spec->memory_mib)
      return fail(err, "resources.memory_at_least", n,
                  "needs resources.memory or resources.memory_mib");
    if (spec->memory_at_least && !b)
      return fail(err, "resources.memory_at_least", n,
                  "false conflicts with memory written as N+");
    spec->memory_at_least = b;
  }

  if (!is_null(n = tw_node_get(m, "arch"))) {
    static const char *const names[] = {"x86_64",  "arm64", "amd64",
                                        "aarch64", "any",   NULL};
    static const int values[] = {TW_ARCH_X86_64, TW_ARCH_ARM64, TW_ARCH_X86_64,
                                 TW_ARCH_ARM64, TW_ARCH_ANY};
    int v;
    if ((rc = parse_choice(n, "resources.arch", names, values,
                           "x86_64, arm64 or any", &v, err)))
      return rc;
    spec->arch = (enum tw_arch)v;
    spec->arch_any = v == TW_ARCH_ANY;
  }
  if (!is_null(n = tw_node_get(m, "instance_types")) &&
      (rc = parse_name_filter(n, "resources.instance_types",
                              &spec->instance_types, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "families")) &&
      (rc = parse_name_filter(n, "resources.families", &spec->families, err)))
    return rc;

  const struct tw_node *mk = tw_node_get(m, "market");
  bool have_market = !is_null(mk);
  if (have_market) {
    static const char *const names[] = {"spot", "on-demand", "any", NULL};
    static const int values[] = {TW_MARKET_SPOT, TW_MARKET_ON_DEMAND,
                                 TW_MARKET_ANY};
    int v;
    if ((rc = parse_choice(mk, "resources.market", names, values,
                           "spot, on-demand or any", &v, err)))
      return rc;
    spec->market = (enum tw_market)v;
  }
  if (!is_null(n = tw_node_get(m, "use_spot"))) {
    bool b;
    if ((rc = get_bool(n, "resources.use_spot", &b, err)))
      return rc;
    enum tw_market want = b ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
    if (have_market && spec->market != want)
      return fail(err, "resources.use_spot", n,
                  "%s conflicts with market \"%s\"", b ? "true" : "false",
                  tw_market_str(spec->market));
    spec->market = want;
  }
  return TW_OK;
}

/* ---- lists ------------------------------------------------------------- */

/* A string list: a sequence, or one string standing for a list of one. */
typedef enum tw_rc (*item_check)(const struct tw_node *n, const char *path,
                                 struct tw_err *err);

static enum tw_rc parse_str_list(const struct tw_node *n, const char *path,
                                 size_t max, item_check check,
                                 const char *expected, char ***out,
                                 size_t *nout, struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  const struct tw_node *const *items;
  const struct tw_node *one = n;
  size_t count;
  if (n->kind == TW_NODE_SEQ) {
    items = (const struct tw_node *const *)n->items;
    count = n->n;
  } else if (n->kind == TW_NODE_SCALAR) {
    items = &one;
    count = 1;
  } else {
    return fail(err, path, n, "expected %s, got %s", expected,
                describe(n, d, sizeof d));
  }
  if (count > max)
    return fail(err, path, n, "at most %zu entries, got %zu", max, count);
  for (size_t i = 0; i < count; i++) {
    const struct tw_node *it = items[i];
    if (n->kind == TW_NODE_SEQ)
      path_idx(sub, path, i);
    else
      snprintf(sub, sizeof sub, "%s", path);
    if (it->kind != TW_NODE_SCALAR)
      return fail(err, sub, it, "expected a string, got %s",
                  describe(it, d, sizeof d));
    if ((rc = check(it, sub, err)))
      return rc;
    for (size_t j = 0; j < *nout; j++)
      if (!strcmp((*out)[j], it->str))
        return fail(err, sub, it, "duplicate %s", describe(it, d, sizeof d));
    *out = tw_realloc(*out, (*nout + 1) * sizeof **out);
    (*out)[(*nout)++] = tw_strdup(it->str);
  }
  return TW_OK;
}

static enum tw_rc check_provider(const struct tw_node *n, const char *path,
                                 struct tw_err *err) {
  if (provider_word(n->str, strlen(n->str)))
    return TW_OK;
  return bad_provider(n, path, n->str, strlen(n->str), NULL, err);
}

static enum tw_rc check_region(const struct tw_node *n, const char *path,
                               struct tw_err *err) {
  return check_location(n, path, true, err);
}

static enum tw_rc check_jurisdiction(const struct tw_node *n, const char *path,
                                     struct tw_err *err) {
  char d[128];
  size_t len = strlen(n->str);
  bool ok = len >= 2 && len <= 8 &&
            strspn(n->str, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == len;
  if (!ok)
    return fail(err, path, n,
                "expected a jurisdiction of 2..8 upper-case letters like EU, "
                "US or CN, got %s",
                describe(n, d, sizeof d));
  return TW_OK;
}

/* A label or a label value: printable, no spaces, 1..max bytes. */
static enum tw_rc check_label_text(const struct tw_node *n, const char *path,
                                   size_t max, struct tw_err *err) {
  char d[128];
  const char *s = n->str;
  size_t len = strlen(s);
  if (!len)
    return fail(err, path, n, "must not be empty");
  if (len > max)
    return fail(err, path, n, "longer than %zu bytes", max);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
      return fail(err, path, n,
                  "must not contain spaces or control characters, got %s",
                  describe(n, d, sizeof d));
  return TW_OK;
}

static enum tw_rc check_label_value(const struct tw_node *n, const char *path,
                                    struct tw_err *err) {
  return check_label_text(n, path, TW_SPEC_LABEL_VALUE_MAX, err);
}

static enum tw_rc check_near(const struct tw_node *n, const char *path,
                             struct tw_err *err) {
  return check_location(n, path, false, err);
}

/* One selector, in the selector filter's config syntax so that an
 * operator's selector can be copied into a job and back. */
static enum tw_rc parse_selector(const struct tw_node *m, const char *path,
                                 struct tw_label_selector *sel,
                                 struct tw_err *err) {
  static const char *const keys[] = {"label",  "in",   "not_in",
                                     "exists", "glob", NULL};
  static const struct {
    const char *key;
    enum tw_sel_op op;
  } lists[] = {
      {"in", TW_SEL_IN}, {"not_in", TW_SEL_NOT_IN}, {"glob", TW_SEL_GLOB}};
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  const struct tw_node *n;
  if (m->kind != TW_NODE_MAP)
    return fail(err, path, m,
                "expected a mapping like {label: region, in: [us-east-1]}, "
                "got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, path, keys, err)))
    return rc;
  path_key(sub, path, "label");
  n = tw_node_get(m, "label");
  if (is_null(n))
    return fail(err, sub, m, "required");
  if (n->kind != TW_NODE_SCALAR)
    return fail(err, sub, n, "expected a label name, got %s",
                describe(n, d, sizeof d));
  if ((rc = check_label_text(n, sub, TW_SPEC_LABEL_MAX, err)))
    return rc;
  sel->label = tw_strdup(n->str);
  int ops = 0;
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
    if (tw_node_get(m, lists[i].key))
      ops++;
  if (tw_node_get(m, "exists"))
    ops++;
  if (ops != 1)
    return fail(err, path, m,
                "expected exactly one of in, not_in, exists, glob, got %d",
                ops);
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
    if (!(n = tw_node_get(m, lists[i].key)))
      continue;
    path_key(sub, path, lists[i].key);
    sel->op = lists[i].op;
    if (is_null(n))
      return fail(err, sub, n,
                  "expected a value or a list of values, got null");
    if ((rc = parse_str_list(n, sub, TW_SPEC_SELECTOR_VALUES_MAX,
                             check_label_value, "a value or a list of values",
                             &sel->values, &sel->n_values, err)))
      return rc;
    if (!sel->n_values)
      return fail(err, sub, n, "expected at least one value");
  }
  if ((n = tw_node_get(m, "exists"))) {
    bool b;
    path_key(sub, path, "exists");
    if ((rc = get_bool(n, sub, &b, err)))
      return rc;
    sel->op = b ? TW_SEL_EXISTS : TW_SEL_NOT_EXISTS;
  }
  return TW_OK;
}

static enum tw_rc parse_selectors(const struct tw_node *n,
                                  struct tw_job_spec *spec,
                                  struct tw_err *err) {
  static const char *const path = "placement.selectors";
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  if (n->kind != TW_NODE_SEQ)
    return fail(err, path, n, "expected a list of selectors, got %s",
                describe(n, d, sizeof d));
  if (n->n > TW_SPEC_SELECTORS_MAX)
    return fail(err, path, n, "at most %d entries, got %zu",
                TW_SPEC_SELECTORS_MAX, n->n);
  spec->selectors = tw_calloc(n->n ? n->n : 1, sizeof *spec->selectors);
  for (size_t i = 0; i < n->n; i++) {
    path_idx(sub, path, i);
    /* counted first so that release frees a half-parsed selector */
    spec->n_selectors++;
    if ((rc = parse_selector(n->items[i], sub, &spec->selectors[i], err)))
      return rc;
  }
  return TW_OK;
}

static enum tw_rc parse_placement(const struct tw_node *m,
                                  struct tw_job_spec *spec,
                                  struct tw_err *err) {
  static const char *const keys[] = {"providers", "regions",    "residency",
                                     "selectors", "max_rtt_ms", "near",
                                     NULL};
  char d[128];
  enum tw_rc rc;
  const struct tw_node *n;
  if (m->kind != TW_NODE_MAP)
    return fail(err, "placement", m, "expected a mapping, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, "placement", keys, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "providers")) &&
      (rc = parse_str_list(n, "placement.providers", TW_SPEC_PROVIDERS_MAX,
                           check_provider, "a list of providers",
                           &spec->providers, &spec->n_providers, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "regions")) &&
      (rc = parse_str_list(n, "placement.regions", TW_SPEC_REGIONS_MAX,
                           check_region, "a list of region selectors",
                           &spec->regions, &spec->n_regions, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "residency")) &&
      (rc = parse_str_list(n, "placement.residency", TW_SPEC_RESIDENCY_MAX,
                           check_jurisdiction,
                           "a jurisdiction or a list of them", &spec->residency,
                           &spec->n_residency, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "selectors")) &&
      (rc = parse_selectors(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "max_rtt_ms"))) {
    int64_t v;
    if ((rc = get_int(n, "placement.max_rtt_ms", 1, TW_SPEC_RTT_MS_MAX, &v,
                      err)))
      return rc;
    spec->max_rtt_ms = (int)v;
  }
  if (!is_null(n = tw_node_get(m, "near")) &&
      (rc = parse_str_list(n, "placement.near", TW_SPEC_NEAR_MAX, check_near,
                           "a location like \"aws:us-east-1\" or a list of "
                           "them",
                           &spec->near, &spec->n_near, err)))
    return rc;
  if (spec->n_near && !spec->max_rtt_ms)
    return fail(err, "placement.near", tw_node_get(m, "near"),
                "needs placement.max_rtt_ms: it is where that bound is "
                "measured from");
  return TW_OK;
}

static enum tw_rc parse_dataset(const struct tw_node *m, const char *path,
                                struct tw_dataset_ref *ds, struct tw_err *err) {
  static const char *const keys[] = {"uri", "size", "size_bytes", "location",
                                     NULL};
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  const struct tw_node *n;
  if (m->kind == TW_NODE_SCALAR) /* a bare URI */
    return get_uri(m, path, &ds->uri, err);
  if (m->kind != TW_NODE_MAP)
    return fail(err, path, m, "expected a mapping with a uri, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, path, keys, err)))
    return rc;
  path_key(sub, path, "uri");
  if (is_null(n = tw_node_get(m, "uri")))
    return fail(err, sub, m, "required");
  if ((rc = get_uri(n, sub, &ds->uri, err)))
    return rc;
  const struct tw_node *sz = tw_node_get(m, "size");
  if (!is_null(sz)) {
    char tmp[40];
    path_key(sub, path, "size");
    if (sz->kind != TW_NODE_SCALAR || !strcmp(tw_node_type_name(sz), "boolean"))
      return fail(err, sub, sz, "expected a size like 10GiB, got %s",
                  describe(sz, d, sizeof d));
    const char *s = scalar_text(sz, tmp, sizeof tmp);
    if (*s == '-' || tw_parse_size_bytes(s, &ds->size_bytes) != 0)
      return fail(err, sub, sz,
                  "expected a size > 0 like 10GiB, 500GB, 1.5TB or bytes, "
                  "got %s",
                  describe(sz, d, sizeof d));
    if (ds->size_bytes <= 0)
      return fail(err, sub, sz, "must be > 0, got %s",
                  describe(sz, d, sizeof d));
  }
  if (!is_null(n = tw_node_get(m, "size_bytes"))) {
    path_key(sub, path, "size_bytes");
    if (!is_null(sz))
      return fail(err, sub, n, "give either size or size_bytes, not both");
    if ((rc = get_int(n, sub, 1, INT64_MAX, &ds->size_bytes, err)))
      return rc;
  }
  if (!is_null(n = tw_node_get(m, "location"))) {
    path_key(sub, path, "location");
    if ((rc = check_location(n, sub, false, err)))
      return rc;
    ds->location = tw_strdup(n->str);
  }
  return TW_OK;
}

static enum tw_rc parse_datasets(const struct tw_node *n,
                                 struct tw_job_spec *spec, struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  if (n->kind != TW_NODE_SEQ)
    return fail(err, "datasets", n, "expected a sequence of datasets, got %s",
                describe(n, d, sizeof d));
  if (n->n > TW_SPEC_DATASETS_MAX)
    return fail(err, "datasets", n, "at most %d entries, got %zu",
                TW_SPEC_DATASETS_MAX, n->n);
  if (n->n == 0)
    return TW_OK;
  spec->datasets = tw_calloc(n->n, sizeof *spec->datasets);
  for (size_t i = 0; i < n->n; i++) {
    path_idx(sub, "datasets", i);
    spec->n_datasets = i + 1; /* so release frees a partial entry */
    if ((rc = parse_dataset(n->items[i], sub, &spec->datasets[i], err)))
      return rc;
  }
  return TW_OK;
}

static enum tw_rc parse_checkpoint(const struct tw_node *m,
                                   struct tw_job_spec *spec,
                                   struct tw_err *err) {
  static const char *const keys[] = {"interval", "interval_s", "uri", NULL};
  char d[128];
  enum tw_rc rc;
  const struct tw_node *n, *iv;
  if (m->kind != TW_NODE_MAP)
    return fail(err, "checkpoint", m, "expected a mapping, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, "checkpoint", keys, err)))
    return rc;
  if (!is_null(iv = tw_node_get(m, "interval")) &&
      (rc = get_duration(iv, "checkpoint.interval",
                         &spec->checkpoint_interval_s, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "interval_s"))) {
    if (!is_null(iv))
      return fail(err, "checkpoint.interval_s", n,
                  "give either interval or interval_s, not both");
    if ((rc = get_int(n, "checkpoint.interval_s", 1, TW_SPEC_DURATION_MAX_S,
                      &spec->checkpoint_interval_s, err)))
      return rc;
  }
  /* Without a uri there is nowhere to write checkpoints or resume from. */
  if (is_null(n = tw_node_get(m, "uri")))
    return fail(err, "checkpoint.uri", m, "required");
  return get_uri(n, "checkpoint.uri", &spec->checkpoint_uri, err);
}

static int kv_cmp(const void *a, const void *b) {
  return strcmp(((const struct tw_kv *)a)->key, ((const struct tw_kv *)b)->key);
}

/* env and secrets: a mapping of NAME: value, sorted by name.  secrets'
 * values may be null (given at submission, docs/jobspec.md#secrets); a
 * value never appears in an error. */
static enum tw_rc parse_kv(const struct tw_node *m, const char *field,
                           bool secret, struct tw_kv **out, size_t *n_out,
                           struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  size_t max = secret ? TW_SPEC_SECRETS_MAX : TW_SPEC_ENV_MAX;
  if (m->kind != TW_NODE_MAP)
    return fail(err, field, m, "expected a mapping of NAME: value, got %s",
                describe(m, d, sizeof d));
  if (m->n > max)
    return fail(err, field, m, "at most %zu variables, got %zu", max, m->n);
  if (m->n == 0)
    return TW_OK;
  *out = tw_calloc(m->n, sizeof **out);
  for (size_t i = 0; i < m->n; i++) {
    const char *k = m->keys[i];
    const struct tw_node *v = m->items[i];
    path_key(sub, field, k);
    bool ok = (isalpha((unsigned char)k[0]) || k[0] == '_') && strlen(k) <= 128;
    for (const char *p = k; ok && *p; p++)
      ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok) {
      char q[64];
      quote(k, q, sizeof q);
      return fail(err, sub, v,
                  "variable names must match [A-Za-z_][A-Za-z0-9_]* "
                  "(at most 128), got %s",
                  q);
    }
    *n_out = i + 1;
    (*out)[i].key = tw_strdup(k);
    if (secret && is_null(v))
      continue; /* the value comes with the submission */
    if (v->kind != TW_NODE_SCALAR)
      return fail(err, sub, v, "expected a string, number or boolean, got %s",
                  describe(v, d, sizeof d));
    if ((rc = get_text(v, sub,
                       secret ? TW_SPEC_SECRET_VALUE_MAX : TW_SPEC_ENV_VALUE_MAX,
                       &(*out)[i].value, err)))
      return rc;
  }
  /* Sorted, so equal specs give equal canonical JSON whatever the order
   * they were written in. */
  qsort(*out, *n_out, sizeof **out, kv_cmp);
  return TW_OK;
}

static enum tw_rc parse_env(const struct tw_node *m, struct tw_job_spec *spec,
                            struct tw_err *err) {
  return parse_kv(m, "env", false, &spec->env, &spec->n_env, err);
}

/* After env: a name is a variable or a secret, not both. */
static enum tw_rc parse_secrets(const struct tw_node *m,
                                struct tw_job_spec *spec, struct tw_err *err) {
  enum tw_rc rc =
      parse_kv(m, "secrets", true, &spec->secrets, &spec->n_secrets, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < spec->n_secrets; i++)
    for (size_t j = 0; j < spec->n_env; j++)
      if (!strcmp(spec->secrets[i].key, spec->env[j].key)) {
        char sub[PATH_MAX_LEN];
        path_key(sub, "secrets", spec->secrets[i].key);
        return fail(err, sub, m,
                    "also in env; a variable is either a secret or not");
      }
  return TW_OK;
}

static enum tw_rc parse_price(const struct tw_node *n, const char *path,
                              struct tw_job_spec *spec, struct tw_err *err) {
  char d[128], tmp[40];
  const char *s;
  int64_t v;
  bool rounded;
  if (n->kind != TW_NODE_SCALAR || !strcmp(tw_node_type_name(n), "boolean"))
    return fail(err, path, n, "expected USD like 3.25, got %s",
                describe(n, d, sizeof d));
  s = scalar_text(n, tmp, sizeof tmp);
  enum tw_rc rc = tw_money_parse(s, &v, &rounded, NULL);
  if (rc == TW_E_TOOBIG || (rc == TW_OK && v > TW_SPEC_PRICE_MAX_UUSD))
    return fail(err, path, n, "must be at most %lld USD, got %s",
                TW_SPEC_PRICE_MAX_UUSD / 1000000, s);
  if (rc)
    return fail(err, path, n, "expected USD like 3.25, got %s",
                describe(n, d, sizeof d));
  /* a limit the user wrote must mean what it says: no silent rounding */
  if (rounded)
    return fail(err, path, n, "more than 6 decimals (micro-USD), got %s", s);
  if (v <= 0)
    return fail(err, path, n, "must be > 0, got %s", s);
  spec->max_price_uusd_per_hour = v;
  return TW_OK;
}

/* depends_on, kill_on_invalid_dep, array: checked by flow.c's parsers and
 * kept in their canonical text. */
static enum tw_rc parse_flow(const struct tw_node *root,
                             struct tw_job_spec *spec, struct tw_err *err) {
  const struct tw_node *n;
  enum tw_rc rc;
  spec->kill_on_invalid_dep = true;
  if (!is_null(n = tw_node_get(root, "kill_on_invalid_dep")) &&
      (rc = get_bool(n, "kill_on_invalid_dep", &spec->kill_on_invalid_dep,
                     err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "depends_on"))) {
    char d[128];
    if (n->kind != TW_NODE_SCALAR || !n->str[0])
      return fail(err, "depends_on", n,
                  "expected a dependency like \"afterok:j-...\", got %s",
                  describe(n, d, sizeof d));
    struct tw_dep_expr e;
    if ((rc = tw_dep_parse(n->str, "depends_on", &e, err)))
      return rc;
    tw_dep_release(&e);
    spec->depends_on = tw_strdup(n->str);
  }
  if (!is_null(n = tw_node_get(root, "array"))) {
    struct tw_array a;
    if ((rc = tw_array_parse_node(n, "array", &a, err)))
      return rc;
    struct tw_buf b;
    tw_buf_init(&b);
    tw_array_to_text(&a, &b);
    spec->array = tw_buf_detach(&b);
    spec->array_sequential = a.sequential;
    tw_array_release(&a);
  }
  return TW_OK;
}

/* ---- the working directory ---------------------------------------------- */

bool tw_spec_workdir_ref(const char *s) {
  if (!s || strncmp(s, "sha256:", 7) || strlen(s) != 7 + 64)
    return false;
  for (const char *q = s + 7; *q; q++)
    if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
      return false;
  return true;
}

static enum tw_rc parse_workdir(const struct tw_node *n,
                                struct tw_job_spec *spec, struct tw_err *err) {
  char d[128];
  if (n->kind != TW_NODE_SCALAR || !tw_spec_workdir_ref(n->str))
    return fail(err, "workdir", n,
                "expected sha256: and the 64 lower-case hex digits of an "
                "uploaded workdir (tradewind submit packs and uploads a "
                "local directory), got %s",
                describe(n, d, sizeof d));
  spec->workdir = tw_strdup(n->str);
  return TW_OK;
}

/* ---- the machine: image, disk, ports ------------------------------------ */

static bool image_char(char c) {
  return isalnum((unsigned char)c) || strchr("._-:/@+=", c) != NULL;
}

static enum tw_rc parse_image(const struct tw_node *n, struct tw_job_spec *spec,
                              struct tw_err *err) {
  char d[128];
  if (n->kind != TW_NODE_SCALAR || !*n->str)
    return fail(err, "image", n, "expected an image id or name, got %s",
                describe(n, d, sizeof d));
  size_t len = strlen(n->str);
  if (len > TW_SPEC_IMAGE_MAX)
    return fail(err, "image", n, "longer than %d bytes", TW_SPEC_IMAGE_MAX);
  for (size_t i = 0; i < len; i++)
    if (!image_char(n->str[i]))
      return fail(err, "image", n,
                  "may only contain letters, digits and ._-:/@+=, got %s",
                  describe(n, d, sizeof d));
  spec->image = tw_strdup(n->str);
  return TW_OK;
}

static enum tw_rc parse_disk(const struct tw_node *m, struct tw_job_spec *spec,
                             struct tw_err *err) {
  static const char *const keys[] = {"size_gb", "type", NULL};
  char d[128];
  enum tw_rc rc;
  const struct tw_node *n;
  if (m->kind != TW_NODE_MAP)
    return fail(err, "disk", m,
                "expected a mapping {size_gb: N, type: NAME}, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, "disk", keys, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "size_gb")) &&
      (rc = get_int(n, "disk.size_gb", 1, TW_SPEC_DISK_GB_MAX,
                    &spec->disk_size_gb, err)))
    return rc;
  if (!is_null(n = tw_node_get(m, "type"))) {
    bool ok = n->kind == TW_NODE_SCALAR && *n->str && strlen(n->str) <= 64;
    for (const char *c = ok ? n->str : ""; ok && *c; c++)
      ok = ident_char(*c);
    if (!ok)
      return fail(err, "disk.type", n,
                  "expected a disk type such as gp3 or Premium_LRS "
                  "(letters, digits, '.', '_', '-'), got %s",
                  describe(n, d, sizeof d));
    spec->disk_type = tw_strdup(n->str);
  }
  return TW_OK;
}

/* "8080" or "8000-8100": 1..65535 each, lo <= hi; 0 when malformed. */
static bool port_range(const char *s, struct tw_port_range *out) {
  char *end;
  if (!isdigit((unsigned char)*s))
    return false;
  long lo = strtol(s, &end, 10), hi = lo;
  if (*end == '-') {
    if (!isdigit((unsigned char)end[1]))
      return false;
    hi = strtol(end + 1, &end, 10);
  }
  if (*end || lo < 1 || hi > 65535 || lo > hi)
    return false;
  out->lo = (int)lo;
  out->hi = (int)hi;
  return true;
}

static int port_cmp(const void *a, const void *b) {
  const struct tw_port_range *x = a, *y = b;
  return x->lo != y->lo ? (x->lo < y->lo ? -1 : 1)
                        : (x->hi < y->hi ? -1 : x->hi > y->hi);
}

static enum tw_rc parse_ports(const struct tw_node *m, struct tw_job_spec *spec,
                              struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN];
  /* SkyPilot writes one port as a scalar */
  if (m->kind == TW_NODE_SCALAR) {
    spec->ports = tw_calloc(1, sizeof *spec->ports);
    if (!port_range(m->str, &spec->ports[0]))
      return fail(err, "ports", m,
                  "expected a port 1..65535 or a range \"A-B\", got %s",
                  describe(m, d, sizeof d));
    spec->n_ports = 1;
    return TW_OK;
  }
  if (m->kind != TW_NODE_SEQ)
    return fail(err, "ports", m,
                "expected a list of ports and ranges like [8080, "
                "\"9000-9100\"], got %s",
                describe(m, d, sizeof d));
  if (m->n > TW_SPEC_PORTS_MAX)
    return fail(err, "ports", m, "at most %d entries, got %zu",
                TW_SPEC_PORTS_MAX, m->n);
  if (!m->n)
    return TW_OK;
  spec->ports = tw_calloc(m->n, sizeof *spec->ports);
  for (size_t i = 0; i < m->n; i++) {
    const struct tw_node *v = m->items[i];
    path_idx(sub, "ports", i);
    if (v->kind != TW_NODE_SCALAR || !port_range(v->str, &spec->ports[i]))
      return fail(err, sub, v,
                  "expected a port 1..65535 or a range \"A-B\", got %s",
                  describe(v, d, sizeof d));
    spec->n_ports = i + 1;
  }
  qsort(spec->ports, spec->n_ports, sizeof *spec->ports, port_cmp);
  return TW_OK;
}

static bool in_names(const char *const *names, const char *s, bool globs) {
  for (; names && *names; names++)
    if (globs ? fnmatch(*names, s, 0) == 0 : strcmp(*names, s) == 0)
      return true;
  return false;
}

/* The spec's image, disk and ports against the operator's allow-list. */
static enum tw_rc check_machine(const struct tw_node *root,
                                const struct tw_job_spec *spec,
                                const struct tw_spec_machine *mc,
                                struct tw_err *err) {
  const struct tw_node *disk = tw_node_get(root, "disk");
  if (spec->image && !in_names(mc->images, spec->image, true))
    return fail(err, "image", tw_node_get(root, "image"),
                "%s is not in the operator's allow-list (machine.images)",
                spec->image);
  if (spec->disk_type && !in_names(mc->disk_types, spec->disk_type, false))
    return fail(err, "disk.type", tw_node_get(disk, "type"),
                "%s is not in the operator's allow-list "
                "(machine.disk_types)",
                spec->disk_type);
  if (spec->disk_size_gb > mc->disk_max_gb)
    return fail(err, "disk.size_gb", tw_node_get(disk, "size_gb"),
                "%lld GB is more than the operator allows "
                "(machine.disk_max_gb: %lld)",
                (long long)spec->disk_size_gb, (long long)mc->disk_max_gb);
  const struct tw_node *pn = tw_node_get(root, "ports");
  for (size_t i = 0; i < spec->n_ports; i++) {
    const struct tw_port_range *r = &spec->ports[i];
    bool ok = false;
    for (size_t j = 0; j < mc->n_ports && !ok; j++)
      ok = r->lo >= mc->ports[j].lo && r->hi <= mc->ports[j].hi;
    if (ok)
      continue;
    /* name the entry as written: the list is sorted, the node is not */
    char sub[PATH_MAX_LEN] = "ports";
    const struct tw_node *at = pn;
    for (size_t k = 0; pn && pn->kind == TW_NODE_SEQ && k < pn->n; k++) {
      struct tw_port_range w;
      if (port_range(pn->items[k]->str, &w) && w.lo == r->lo && w.hi == r->hi) {
        path_idx(sub, "ports", k);
        at = pn->items[k];
        break;
      }
    }
    char pr[16];
    if (r->lo == r->hi)
      snprintf(pr, sizeof pr, "%d", r->lo);
    else
      snprintf(pr, sizeof pr, "%d-%d", r->lo, r->hi);
    return fail(err, sub, at,
                "%s is not in the operator's allow-list (machine.ports)", pr);
  }
  return TW_OK;
}

static enum tw_rc machine_list(const struct tw_node *m, const char *key,
                               bool ident, const char *const **out,
                               struct tw_err *err) {
  char d[128], sub[PATH_MAX_LEN], path[64];
  const struct tw_node *n = tw_node_get(m, key);
  snprintf(path, sizeof path, "machine.%s", key);
  if (is_null(n))
    return TW_OK;
  if (n->kind != TW_NODE_SEQ)
    return fail(err, path, n, "expected a list, got %s",
                describe(n, d, sizeof d));
  char **v = tw_calloc(n->n + 1, sizeof *v);
  *out = (const char *const *)v;
  for (size_t i = 0; i < n->n; i++) {
    const struct tw_node *e = n->items[i];
    path_idx(sub, path, i);
    bool ok = e->kind == TW_NODE_SCALAR && *e->str &&
              strlen(e->str) <= TW_SPEC_IMAGE_MAX;
    for (const char *c = ok ? e->str : ""; ok && *c; c++)
      ok = ident ? ident_char(*c) : (image_char(*c) || *c == '*' || *c == '?');
    if (!ok)
      return fail(err, sub, e, "expected %s, got %s",
                  ident ? "a disk type" : "an image id, name or glob",
                  describe(e, d, sizeof d));
    v[i] = tw_strdup(e->str);
  }
  return TW_OK;
}

enum tw_rc tw_spec_machine_parse(const struct tw_node *m,
                                 struct tw_spec_machine *out,
                                 struct tw_err *err) {
  static const char *const keys[] = {"images", "disk_types", "disk_max_gb",
                                     "ports", NULL};
  char d[128], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  memset(out, 0, sizeof *out);
  if (is_null(m))
    return TW_OK;
  if (m->kind != TW_NODE_MAP)
    return fail(err, "machine", m, "expected a mapping, got %s",
                describe(m, d, sizeof d));
  if ((rc = check_keys(m, "machine", keys, err)) ||
      (rc = machine_list(m, "images", false, &out->images, err)) ||
      (rc = machine_list(m, "disk_types", true, &out->disk_types, err)))
    goto fail;
  const struct tw_node *n = tw_node_get(m, "disk_max_gb");
  if (!is_null(n) &&
      (rc = get_int(n, "machine.disk_max_gb", 1, TW_SPEC_DISK_GB_MAX,
                    &out->disk_max_gb, err)))
    goto fail;
  n = tw_node_get(m, "ports");
  if (!is_null(n)) {
    if (n->kind != TW_NODE_SEQ) {
      rc = fail(err, "machine.ports", n, "expected a list, got %s",
                describe(n, d, sizeof d));
      goto fail;
    }
    struct tw_port_range *p = tw_calloc(n->n + 1, sizeof *p);
    out->ports = p;
    for (size_t i = 0; i < n->n; i++) {
      path_idx(sub, "machine.ports", i);
      if (n->items[i]->kind != TW_NODE_SCALAR ||
          !port_range(n->items[i]->str, &p[i])) {
        rc = fail(err, sub, n->items[i],
                  "expected a port 1..65535 or a range \"A-B\", got %s",
                  describe(n->items[i], d, sizeof d));
        goto fail;
      }
      out->n_ports = i + 1;
    }
  }
  return TW_OK;
fail:
  tw_spec_machine_release(out);
  return rc;
}

void tw_spec_machine_release(struct tw_spec_machine *m) {
  if (!m)
    return;
  const char *const *lists[] = {m->images, m->disk_types};
  for (size_t k = 0; k < 2; k++) {
    for (size_t i = 0; lists[k] && lists[k][i]; i++)
      free((char *)lists[k][i]);
    free((void *)lists[k]);
  }
  free((void *)m->ports);
  memset(m, 0, sizeof *m);
}

static enum tw_rc parse_top(const struct tw_node *root,
                            struct tw_job_spec *spec, struct tw_err *err) {
  static const char *const keys[] = {"name",
                                     "tenant",
                                     "project",
                                     "resources",
                                     "nodes",
                                     "duration",
                                     "duration_s",
                                     "deadline",
                                     "max_price_per_hour",
                                     "max_price_uusd_per_hour",
                                     "datasets",
                                     "placement",
                                     "priority",
                                     "checkpoint",
                                     "setup",
                                     "run",
                                     "env",
                                     "secrets",
                                     "fallback",
                                     "depends_on",
                                     "kill_on_invalid_dep",
                                     "array",
                                     "image",
                                     "disk",
                                     "ports",
                                     "workdir",
                                     NULL};
  char d[128];
  enum tw_rc rc;
  const struct tw_node *n;
  int64_t v;

  if (!root || root->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "",
                        "spec: expected a mapping at the top level, got %s",
                        describe(root, d, sizeof d));
  if ((rc = check_keys(root, "", keys, err)))
    return rc;

  if (is_null(n = tw_node_get(root, "name")))
    return fail(err, "name", root, "required");
  if ((rc = get_ident(n, "name", &spec->name, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "tenant")) &&
      (rc = get_ident(n, "tenant", &spec->tenant, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "project")) &&
      (rc = get_ident(n, "project", &spec->project, err)))
    return rc;

  if (!is_null(n = tw_node_get(root, "resources")) &&
      (rc = parse_resources(n, spec, err)))
    return rc;

  if (!is_null(n = tw_node_get(root, "nodes"))) {
    if ((rc = get_int(n, "nodes", 1, TW_SPEC_NODES_MAX, &v, err)))
      return rc;
    spec->nodes = (int)v;
  }

  const struct tw_node *dur = tw_node_get(root, "duration");
  if (!is_null(dur) &&
      (rc = get_duration(dur, "duration", &spec->duration_s, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "duration_s"))) {
    if (!is_null(dur))
      return fail(err, "duration_s", n,
                  "give either duration or duration_s, not both");
    if ((rc = get_int(n, "duration_s", 1, TW_SPEC_DURATION_MAX_S,
                      &spec->duration_s, err)))
      return rc;
  }

  if (!is_null(n = tw_node_get(root, "deadline"))) {
    if (n->kind != TW_NODE_SCALAR ||
        tw_time_parse_rfc3339(n->str, &spec->deadline_ms) != 0)
      return fail(err, "deadline", n,
                  "expected an RFC 3339 time like 2026-12-01T00:00:00Z, "
                  "got %s",
                  describe(n, d, sizeof d));
    if (spec->deadline_ms <= 0 || spec->deadline_ms > DEADLINE_MAX_MS)
      return fail(err, "deadline", n,
                  "must be after 1970 and before the year 10000, got %s",
                  describe(n, d, sizeof d));
  }

  const struct tw_node *price = tw_node_get(root, "max_price_per_hour");
  if (!is_null(price) &&
      (rc = parse_price(price, "max_price_per_hour", spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "max_price_uusd_per_hour"))) {
    if (!is_null(price))
      return fail(err, "max_price_uusd_per_hour", n,
                  "give either max_price_per_hour or "
                  "max_price_uusd_per_hour, not both");
    if ((rc = get_int(n, "max_price_uusd_per_hour", 1, TW_SPEC_PRICE_MAX_UUSD,
                      &spec->max_price_uusd_per_hour, err)))
      return rc;
  }

  if (!is_null(n = tw_node_get(root, "datasets")) &&
      (rc = parse_datasets(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "placement")) &&
      (rc = parse_placement(n, spec, err)))
    return rc;

  if (!is_null(n = tw_node_get(root, "priority"))) {
    if ((rc = get_int(n, "priority", TW_SPEC_PRIORITY_MIN, TW_SPEC_PRIORITY_MAX,
                      &v, err)))
      return rc;
    spec->priority = (int)v;
  }

  if (!is_null(n = tw_node_get(root, "checkpoint")) &&
      (rc = parse_checkpoint(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "setup")) &&
      (rc = get_text(n, "setup", TW_SPEC_RUN_MAX, &spec->setup, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "run")) &&
      (rc = get_text(n, "run", TW_SPEC_RUN_MAX, &spec->run, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "env")) && (rc = parse_env(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "secrets")) &&
      (rc = parse_secrets(n, spec, err)))
    return rc;
  /* The strategy's name is checked against the fallback table's names
   * after the shape (check_fallback_name), when the caller has them. */
  if (!is_null(n = tw_node_get(root, "fallback"))) {
    char what[128];
    if (n->kind != TW_NODE_SCALAR || !tw_spec_name_word(n->str))
      return fail(err, "fallback", n,
                  "expected a strategy name (lower-case letters, digits, "
                  "'-'), got %s",
                  describe(n, what, sizeof what));
    spec->fallback = tw_strdup(n->str);
  }
  if (!is_null(n = tw_node_get(root, "image")) &&
      (rc = parse_image(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "workdir")) &&
      (rc = parse_workdir(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "disk")) &&
      (rc = parse_disk(n, spec, err)))
    return rc;
  if (!is_null(n = tw_node_get(root, "ports")) &&
      (rc = parse_ports(n, spec, err)))
    return rc;
  return parse_flow(root, spec, err);
}

bool tw_spec_name_word(const char *s) {
  size_t len = s ? strlen(s) : 0;
  if (!len || len > 63 || !islower((unsigned char)s[0]))
    return false;
  return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

void tw_spec_names_join(const char *const *names, char *out, size_t outsz) {
  size_t o = 0;
  if (!outsz)
    return;
  out[0] = '\0';
  for (size_t i = 0; names && names[i] && o + 1 < outsz; i++) {
    int w = snprintf(out + o, outsz - o, "%s%s",
                     !i             ? ""
                     : names[i + 1] ? ", "
                                    : " or ",
                     names[i]);
    if (w < 0)
      break;
    o += (size_t)w;
  }
}

/* Second pass: the `fallback:` a document names must be one of known. */
static enum tw_rc check_fallback_name(const struct tw_node *root,
                                      const char *const *known,
                                      struct tw_err *err) {
  const struct tw_node *n = tw_node_get(root, "fallback");
  if (is_null(n))
    return TW_OK;
  for (size_t i = 0; known[i]; i++)
    if (!strcmp(known[i], n->str))
      return TW_OK;
  char list[256], d[128];
  tw_spec_names_join(known, list, sizeof list);
  const char *best = tw_closest(n->str, known);
  if (best)
    return fail(err, "fallback", n, "expected %s, got %s; did you mean \"%s\"?",
                list, describe(n, d, sizeof d), best);
  return fail(err, "fallback", n, "expected %s, got %s", list,
              describe(n, d, sizeof d));
}

/* The provider of a location node ("aws:us-east-1"; "*" of a glob passes)
 * or of a provider name node, against the registry's names. */
static enum tw_rc check_provider_node(const struct tw_node *n, const char *path,
                                      bool location, const char *const *known,
                                      struct tw_err *err) {
  const char *s = n->str;
  size_t len = strlen(s);
  if (location) {
    const char *colon = strchr(s, ':');
    len = colon ? (size_t)(colon - s) : len;
    if (len == 1 && *s == '*')
      return TW_OK;
  }
  if (known_provider(s, len, known))
    return TW_OK;
  return bad_provider(n, path, s, len, known, err);
}

/* Each item of a list the parser accepted (a sequence, or one scalar),
 * with its path as the parser names it. */
static enum tw_rc check_provider_list(const struct tw_node *n, const char *path,
                                      bool location, const char *const *known,
                                      struct tw_err *err) {
  char sub[PATH_MAX_LEN];
  if (is_null(n))
    return TW_OK;
  if (n->kind == TW_NODE_SCALAR)
    return check_provider_node(n, path, location, known, err);
  enum tw_rc rc = TW_OK;
  for (size_t i = 0; !rc && i < n->n; i++) {
    path_idx(sub, path, i);
    rc = check_provider_node(n->items[i], sub, location, known, err);
  }
  return rc;
}

/* Second pass over a document parse_top() accepted: every provider it
 * names (placement.providers, .regions, .near, datasets[].location) must
 * be one of known. */
static enum tw_rc check_provider_names(const struct tw_node *root,
                                       const char *const *known,
                                       struct tw_err *err) {
  char item[PATH_MAX_LEN], sub[PATH_MAX_LEN];
  enum tw_rc rc;
  const struct tw_node *ds = tw_node_get(root, "datasets");
  for (size_t i = 0; !is_null(ds) && i < ds->n; i++) {
    const struct tw_node *loc = tw_node_get(ds->items[i], "location");
    path_idx(item, "datasets", i);
    path_key(sub, item, "location");
    if (!is_null(loc) && (rc = check_provider_node(loc, sub, true, known, err)))
      return rc;
  }
  const struct tw_node *pl = tw_node_get(root, "placement");
  if (is_null(pl))
    return TW_OK;
  if ((rc = check_provider_list(tw_node_get(pl, "providers"),
                                "placement.providers", false, known, err)) ||
      (rc = check_provider_list(tw_node_get(pl, "regions"), "placement.regions",
                                true, known, err)) ||
      (rc = check_provider_list(tw_node_get(pl, "near"), "placement.near", true,
                                known, err)))
    return rc;
  return TW_OK;
}

enum tw_rc tw_spec_from_node_opts(const struct tw_node *root,
                                  const struct tw_spec_opts *opts,
                                  struct tw_job_spec *spec,
                                  struct tw_err *err) {
  memset(spec, 0, sizeof *spec);
  spec->nodes = 1;
  enum tw_rc rc = parse_top(root, spec, err);
  if (!rc && opts && opts->providers)
    rc = check_provider_names(root, opts->providers, err);
  if (!rc && opts && opts->fallbacks)
    rc = check_fallback_name(root, opts->fallbacks, err);
  if (!rc && opts && opts->machine)
    rc = check_machine(root, spec, opts->machine, err);
  if (rc) {
    tw_spec_release(spec);
    return rc;
  }
  if (!spec->tenant)
    spec->tenant = tw_strdup("default");
  if (!spec->project)
    spec->project = tw_strdup("default");
  return TW_OK;
}

enum tw_rc tw_spec_from_node(const struct tw_node *root,
                             struct tw_job_spec *spec, struct tw_err *err) {
  return tw_spec_from_node_opts(root, NULL, spec, err);
}

enum tw_rc tw_spec_parse_opts(const char *text, size_t len, bool is_json,
                              const struct tw_spec_opts *opts,
                              struct tw_job_spec *spec, struct tw_err *err) {
  struct tw_node *root = NULL;
  enum tw_rc rc = is_json ? tw_node_parse_json(text, len, &root, err)
                          : tw_node_parse_yaml(text, len, &root, err);
  if (rc) {
    memset(spec, 0, sizeof *spec);
    return rc;
  }
  rc = tw_spec_from_node_opts(root, opts, spec, err);
  tw_node_free(root);
  return rc;
}

enum tw_rc tw_spec_parse(const char *text, size_t len, bool is_json,
                         struct tw_job_spec *spec, struct tw_err *err) {
  return tw_spec_parse_opts(text, len, is_json, NULL, spec, err);
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Zeroes then frees a secret's value (the stores through a volatile
 * pointer are not optimized away). */
static void wipe_free(char *v) {
  for (volatile char *p = v; *p; p++)
    *p = 0;
  free(v);
}

void tw_spec_secrets_wipe(struct tw_job_spec *spec) {
  for (size_t i = 0; i < spec->n_secrets; i++) {
    free(spec->secrets[i].key);
    if (spec->secrets[i].value)
      wipe_free(spec->secrets[i].value);
  }
  free(spec->secrets);
  spec->secrets = NULL;
  spec->n_secrets = 0;
}

void tw_spec_release(struct tw_job_spec *spec) {
  if (!spec)
    return;
  free(spec->name);
  free(spec->tenant);
  free(spec->project);
  free(spec->accel_name);
  for (size_t i = 0; i < spec->n_accels; i++)
    free(spec->accels[i].name);
  free(spec->accels);
  free_list(spec->instance_types.include, spec->instance_types.n_include);
  free_list(spec->instance_types.exclude, spec->instance_types.n_exclude);
  free_list(spec->families.include, spec->families.n_include);
  free_list(spec->families.exclude, spec->families.n_exclude);
  for (size_t i = 0; i < spec->n_datasets; i++) {
    free(spec->datasets[i].uri);
    free(spec->datasets[i].location);
  }
  free(spec->datasets);
  free_list(spec->providers, spec->n_providers);
  free_list(spec->regions, spec->n_regions);
  free_list(spec->residency, spec->n_residency);
  for (size_t i = 0; i < spec->n_selectors; i++) {
    free(spec->selectors[i].label);
    free_list(spec->selectors[i].values, spec->selectors[i].n_values);
  }
  free(spec->selectors);
  free_list(spec->near, spec->n_near);
  free(spec->checkpoint_uri);
  free(spec->fallback);
  free(spec->setup);
  free(spec->run);
  free(spec->depends_on);
  free(spec->array);
  for (size_t i = 0; i < spec->n_env; i++) {
    free(spec->env[i].key);
    free(spec->env[i].value);
  }
  free(spec->env);
  tw_spec_secrets_wipe(spec);
  free(spec->image);
  free(spec->workdir);
  free(spec->disk_type);
  free(spec->ports);
  memset(spec, 0, sizeof *spec);
}

/* ---- canonical JSON ---------------------------------------------------- */

static void json_key(struct tw_buf *b, bool *first, const char *k) {
  if (!*first)
    tw_buf_addc(b, ',');
  *first = false;
  tw_buf_json_str(b, k);
  tw_buf_addc(b, ':');
}

static void json_list(struct tw_buf *b, bool *first, const char *k,
                      char *const *v, size_t n) {
  if (!n)
    return;
  json_key(b, first, k);
  tw_buf_addc(b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(b, ',');
    tw_buf_json_str(b, v[i]);
  }
  tw_buf_addc(b, ']');
}

void tw_spec_to_json(const struct tw_job_spec *s, struct tw_buf *b) {
  bool first = true, f2;
  tw_buf_addc(b, '{');
  json_key(b, &first, "name");
  tw_buf_json_str(b, s->name ? s->name : "");
  json_key(b, &first, "tenant");
  tw_buf_json_str(b, s->tenant ? s->tenant : "default");
  json_key(b, &first, "project");
  tw_buf_json_str(b, s->project ? s->project : "default");

  bool filters = s->instance_types.n_include || s->instance_types.n_exclude ||
                 s->families.n_include || s->families.n_exclude;
  if (s->accel_name || s->cpus || s->memory_mib || s->arch != TW_ARCH_ANY ||
      s->arch_any || s->market != TW_MARKET_ANY || filters) {
    json_key(b, &first, "resources");
    tw_buf_addc(b, '{');
    f2 = true;
    if (s->accel_name) {
      json_key(b, &f2, "accelerators");
      if (s->n_accels > 1)
        tw_buf_addc(b, '[');
      for (size_t i = 0; i < s->n_accels; i++) {
        if (i)
          tw_buf_addc(b, ',');
        tw_buf_adds(b, "{\"name\":");
        tw_buf_json_str(b, s->accels[i].name);
        tw_buf_printf(b, ",\"count\":%d", s->accels[i].count);
        if (s->accels[i].at_least)
          tw_buf_adds(b, ",\"at_least\":true");
        tw_buf_addc(b, '}');
      }
      if (s->n_accels > 1)
        tw_buf_addc(b, ']');
    }
    if (s->cpus) {
      json_key(b, &f2, "cpus");
      tw_buf_printf(b, "%d", s->cpus);
      json_key(b, &f2, "cpus_at_least");
      tw_buf_adds(b, s->cpus_at_least ? "true" : "false");
    }
    if (s->memory_mib) {
      json_key(b, &f2, "memory_mib");
      tw_buf_printf(b, "%lld", (long long)s->memory_mib);
      json_key(b, &f2, "memory_at_least");
      tw_buf_adds(b, s->memory_at_least ? "true" : "false");
    }
    if (s->arch != TW_ARCH_ANY || s->arch_any) {
      json_key(b, &f2, "arch");
      tw_buf_json_str(b, tw_arch_str(s->arch));
    }
    const struct {
      const char *key;
      const struct tw_name_filter *f;
    } NF[] = {{"instance_types", &s->instance_types},
              {"families", &s->families}};
    for (size_t k = 0; k < 2; k++) {
      const struct tw_name_filter *f = NF[k].f;
      if (!f->n_include && !f->n_exclude)
        continue;
      json_key(b, &f2, NF[k].key);
      tw_buf_addc(b, '{');
      bool f3 = true;
      const struct {
        const char *key;
        char *const *v;
        size_t n;
      } L[] = {{"include", f->include, f->n_include},
               {"exclude", f->exclude, f->n_exclude}};
      for (size_t j = 0; j < 2; j++) {
        if (!L[j].n)
          continue;
        json_key(b, &f3, L[j].key);
        tw_buf_addc(b, '[');
        for (size_t i = 0; i < L[j].n; i++) {
          if (i)
            tw_buf_addc(b, ',');
          tw_buf_json_str(b, L[j].v[i]);
        }
        tw_buf_addc(b, ']');
      }
      tw_buf_addc(b, '}');
    }
    if (s->market != TW_MARKET_ANY) {
      json_key(b, &f2, "market");
      tw_buf_json_str(b, tw_market_str(s->market));
    }
    tw_buf_addc(b, '}');
  }

  json_key(b, &first, "nodes");
  tw_buf_printf(b, "%d", s->nodes);
  if (s->duration_s) {
    json_key(b, &first, "duration_s");
    tw_buf_printf(b, "%lld", (long long)s->duration_s);
  }
  if (s->deadline_ms) {
    char t[40];
    tw_time_fmt_rfc3339(s->deadline_ms, t, sizeof t);
    json_key(b, &first, "deadline");
    tw_buf_json_str(b, t);
  }
  if (s->max_price_uusd_per_hour) {
    json_key(b, &first, "max_price_uusd_per_hour");
    tw_buf_printf(b, "%lld", (long long)s->max_price_uusd_per_hour);
  }
  if (s->n_datasets) {
    json_key(b, &first, "datasets");
    tw_buf_addc(b, '[');
    for (size_t i = 0; i < s->n_datasets; i++) {
      const struct tw_dataset_ref *ds = &s->datasets[i];
      if (i)
        tw_buf_addc(b, ',');
      tw_buf_adds(b, "{\"uri\":");
      tw_buf_json_str(b, ds->uri ? ds->uri : "");
      if (ds->size_bytes)
        tw_buf_printf(b, ",\"size_bytes\":%lld", (long long)ds->size_bytes);
      if (ds->location) {
        tw_buf_adds(b, ",\"location\":");
        tw_buf_json_str(b, ds->location);
      }
      tw_buf_addc(b, '}');
    }
    tw_buf_addc(b, ']');
  }
  if (s->n_providers || s->n_regions || s->n_residency || s->n_selectors ||
      s->max_rtt_ms || s->n_near) {
    json_key(b, &first, "placement");
    tw_buf_addc(b, '{');
    f2 = true;
    json_list(b, &f2, "providers", s->providers, s->n_providers);
    json_list(b, &f2, "regions", s->regions, s->n_regions);
    json_list(b, &f2, "residency", s->residency, s->n_residency);
    if (s->n_selectors) {
      json_key(b, &f2, "selectors");
      tw_buf_addc(b, '[');
      for (size_t i = 0; i < s->n_selectors; i++) {
        const struct tw_label_selector *sel = &s->selectors[i];
        bool f3 = true;
        if (i)
          tw_buf_addc(b, ',');
        tw_buf_addc(b, '{');
        json_key(b, &f3, "label");
        tw_buf_json_str(b, sel->label ? sel->label : "");
        if (sel->op == TW_SEL_EXISTS || sel->op == TW_SEL_NOT_EXISTS) {
          json_key(b, &f3, "exists");
          tw_buf_adds(b, sel->op == TW_SEL_EXISTS ? "true" : "false");
        } else {
          json_list(b, &f3, tw_sel_op_str(sel->op), sel->values, sel->n_values);
        }
        tw_buf_addc(b, '}');
      }
      tw_buf_addc(b, ']');
    }
    if (s->max_rtt_ms) {
      json_key(b, &f2, "max_rtt_ms");
      tw_buf_printf(b, "%d", s->max_rtt_ms);
    }
    json_list(b, &f2, "near", s->near, s->n_near);
    tw_buf_addc(b, '}');
  }
  json_key(b, &first, "priority");
  tw_buf_printf(b, "%d", s->priority);
  if (s->checkpoint_interval_s || s->checkpoint_uri) {
    json_key(b, &first, "checkpoint");
    tw_buf_addc(b, '{');
    f2 = true;
    if (s->checkpoint_interval_s) {
      json_key(b, &f2, "interval_s");
      tw_buf_printf(b, "%lld", (long long)s->checkpoint_interval_s);
    }
    if (s->checkpoint_uri) {
      json_key(b, &f2, "uri");
      tw_buf_json_str(b, s->checkpoint_uri);
    }
    tw_buf_addc(b, '}');
  }
  if (s->fallback) {
    json_key(b, &first, "fallback");
    tw_buf_json_str(b, s->fallback);
  }
  if (s->setup) {
    json_key(b, &first, "setup");
    tw_buf_json_str(b, s->setup);
  }
  if (s->run) {
    json_key(b, &first, "run");
    tw_buf_json_str(b, s->run);
  }
  if (s->n_env) {
    json_key(b, &first, "env");
    tw_buf_addc(b, '{');
    for (size_t i = 0; i < s->n_env; i++) {
      if (i)
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, s->env[i].key);
      tw_buf_addc(b, ':');
      tw_buf_json_str(b, s->env[i].value);
    }
    tw_buf_addc(b, '}');
  }
  if (s->n_secrets) { /* names only: the values are sealed apart */
    json_key(b, &first, "secrets");
    tw_buf_addc(b, '{');
    for (size_t i = 0; i < s->n_secrets; i++) {
      if (i)
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, s->secrets[i].key);
      tw_buf_adds(b, ":null");
    }
    tw_buf_addc(b, '}');
  }
  if (s->image) {
    json_key(b, &first, "image");
    tw_buf_json_str(b, s->image);
  }
  if (s->workdir) {
    json_key(b, &first, "workdir");
    tw_buf_json_str(b, s->workdir);
  }
  if (s->disk_size_gb || s->disk_type) {
    json_key(b, &first, "disk");
    tw_buf_addc(b, '{');
    f2 = true;
    if (s->disk_size_gb) {
      json_key(b, &f2, "size_gb");
      tw_buf_printf(b, "%lld", (long long)s->disk_size_gb);
    }
    if (s->disk_type) {
      json_key(b, &f2, "type");
      tw_buf_json_str(b, s->disk_type);
    }
    tw_buf_addc(b, '}');
  }
  if (s->n_ports) {
    json_key(b, &first, "ports");
    tw_buf_addc(b, '[');
    for (size_t i = 0; i < s->n_ports; i++) {
      if (i)
        tw_buf_addc(b, ',');
      if (s->ports[i].lo == s->ports[i].hi)
        tw_buf_printf(b, "%d", s->ports[i].lo);
      else
        tw_buf_printf(b, "\"%d-%d\"", s->ports[i].lo, s->ports[i].hi);
    }
    tw_buf_addc(b, ']');
  }
  if (s->depends_on) {
    json_key(b, &first, "depends_on");
    tw_buf_json_str(b, s->depends_on);
  }
  if (s->depends_on && !s->kill_on_invalid_dep) {
    json_key(b, &first, "kill_on_invalid_dep");
    tw_buf_adds(b, "false");
  }
  if (s->array) {
    json_key(b, &first, "array");
    if (s->array_sequential) {
      tw_buf_adds(b, "{\"indices\":");
      tw_buf_json_str(b, s->array);
      tw_buf_adds(b, ",\"sequential\":true}");
    } else {
      tw_buf_json_str(b, s->array);
    }
  }
  tw_buf_addc(b, '}');
}
