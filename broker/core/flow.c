/* flow.c - dependency expressions, array indices and workflow documents
 * (flow.h).  Pure: what the store does with a plan is store_flow.c. */
#include "broker/core/flow.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/node.h"
#include "broker/base/units.h"
#include "broker/core/spec.h"

/* ---- dependencies -------------------------------------------------------- */

static const char *const DEP_NAMES[] = {"after",      "afterany",  "afterok",
                                        "afternotok", "aftercorr", "singleton",
                                        NULL};

const char *tw_dep_kind_str(enum tw_dep_kind k) {
  return (unsigned)k <= TW_DEP_SINGLETON ? DEP_NAMES[k] : "unknown";
}

void tw_dep_release(struct tw_dep_expr *e) {
  if (!e)
    return;
  free(e->t);
  memset(e, 0, sizeof *e);
}

static bool id_char(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static enum tw_rc dep_term(const char *field, const char *s, size_t len,
                           struct tw_dep_expr *e, size_t *cap,
                           struct tw_err *err) {
  char word[32];
  size_t w = 0;
  while (w < len && s[w] != ':' && w + 1 < sizeof word) {
    word[w] = s[w];
    w++;
  }
  word[w] = '\0';
  int kind = -1;
  for (int k = 0; DEP_NAMES[k]; k++)
    if (!strcmp(word, DEP_NAMES[k]))
      kind = k;
  if (kind < 0) {
    const char *near = tw_closest(word, DEP_NAMES);
    if (near)
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: unknown dependency type \"%s\"; did you mean "
                          "\"%s\"?",
                          field, word, near);
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: unknown dependency type \"%s\" (after, afterany, "
                        "afterok, afternotok, aftercorr or singleton)",
                        field, word);
  }
  if (kind == TW_DEP_SINGLETON) {
    if (w != len)
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: singleton takes no job ids", field);
    if (e->n == *cap) {
      *cap = *cap ? *cap * 2 : 4;
      e->t = tw_realloc(e->t, *cap * sizeof *e->t);
    }
    memset(&e->t[e->n], 0, sizeof e->t[0]);
    e->t[e->n++].kind = TW_DEP_SINGLETON;
    return TW_OK;
  }
  if (w == len || w + 1 == len)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: %s needs at least one job id (%s:ID[:ID...])",
                        field, word, word);
  size_t i = w + 1;
  while (i <= len) {
    size_t j = i;
    while (j < len && s[j] != ':')
      j++;
    /* one id, maybe +delay (after only) */
    size_t idlen = 0;
    while (i + idlen < j && s[i + idlen] != '+')
      idlen++;
    if (idlen == 0 || idlen > TW_FLOW_ID_MAX)
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: a job id of 1 to %d characters expected after "
                          "\"%s:\"",
                          field, TW_FLOW_ID_MAX, word);
    for (size_t k = 0; k < idlen; k++)
      if (!id_char(s[i + k]))
        return tw_err_field(err, TW_E_INVALID, field,
                            "%s: job id \"%.*s\" may only contain letters, "
                            "digits, '-', '_' and '.'",
                            field, (int)idlen, s + i);
    int64_t delay = 0;
    if (i + idlen < j) { /* "+minutes" */
      if (kind != TW_DEP_AFTER)
        return tw_err_field(err, TW_E_INVALID, field,
                            "%s: a delay (+minutes) is only allowed with "
                            "after, not %s",
                            field, word);
      size_t k = i + idlen + 1;
      if (k == j)
        return tw_err_field(err, TW_E_INVALID, field,
                            "%s: expected minutes after '+'", field);
      for (; k < j; k++) {
        if (!isdigit((unsigned char)s[k]))
          return tw_err_field(err, TW_E_INVALID, field,
                              "%s: the delay after '+' is whole minutes",
                              field);
        delay = delay * 10 + (s[k] - '0');
        if (delay * 60 > TW_DEP_DELAY_MAX_S)
          return tw_err_field(err, TW_E_INVALID, field,
                              "%s: a delay of at most %lld minutes", field,
                              (long long)(TW_DEP_DELAY_MAX_S / 60));
      }
    }
    if (e->n >= TW_DEP_TERMS_MAX)
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: at most %d job ids", field, TW_DEP_TERMS_MAX);
    if (e->n == *cap) {
      *cap = *cap ? *cap * 2 : 4;
      e->t = tw_realloc(e->t, *cap * sizeof *e->t);
    }
    struct tw_dep_term *t = &e->t[e->n++];
    memset(t, 0, sizeof *t);
    t->kind = (enum tw_dep_kind)kind;
    memcpy(t->id, s + i, idlen);
    t->delay_s = delay * 60;
    i = j + 1;
    if (j == len)
      break;
    if (i == len + 1 || i == len)
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: empty job id after ':'", field);
  }
  return TW_OK;
}

enum tw_rc tw_dep_parse(const char *text, const char *field,
                        struct tw_dep_expr *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!text || !*text)
    return tw_err_field(err, TW_E_INVALID, field, "%s: empty dependency",
                        field);
  bool has_and = strchr(text, ',') != NULL, has_or = strchr(text, '?') != NULL;
  if (has_and && has_or)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: use either ',' (all) or '?' (any), not both, as "
                        "Slurm does",
                        field);
  out->any = has_or;
  char sep = has_or ? '?' : ',';
  size_t cap = 0;
  const char *p = text;
  for (;;) {
    const char *q = strchr(p, sep);
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == 0) {
      tw_dep_release(out);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: empty term around '%c'", field, sep);
    }
    enum tw_rc rc = dep_term(field, p, len, out, &cap, err);
    if (rc) {
      tw_dep_release(out);
      return rc;
    }
    if (!q)
      break;
    p = q + 1;
  }
  return TW_OK;
}

/* ---- edges ------------------------------------------------------------------ */

static const char *const COND_NAMES[] = {"succeeded", "failed", "ended",
                                         "started", NULL};

const char *tw_flow_cond_str(enum tw_flow_cond c) {
  return (unsigned)c <= TW_COND_START ? COND_NAMES[c] : "unknown";
}

bool tw_flow_cond_parse(const char *s, enum tw_flow_cond *out) {
  for (int i = 0; COND_NAMES[i]; i++)
    if (!strcmp(s, COND_NAMES[i])) {
      *out = (enum tw_flow_cond)i;
      return true;
    }
  /* Slurm's words too */
  static const struct {
    const char *w;
    enum tw_flow_cond c;
  } ALIAS[] = {{"ok", TW_COND_OK},       {"afterok", TW_COND_OK},
               {"notok", TW_COND_NOTOK}, {"afternotok", TW_COND_NOTOK},
               {"any", TW_COND_ANY},     {"afterany", TW_COND_ANY},
               {"after", TW_COND_START}};
  for (size_t i = 0; i < sizeof ALIAS / sizeof ALIAS[0]; i++)
    if (!strcmp(s, ALIAS[i].w)) {
      *out = ALIAS[i].c;
      return true;
    }
  return false;
}

enum tw_edge_res tw_flow_edge_resolve(enum tw_flow_cond c,
                                      enum tw_flow_event ev) {
  switch (c) {
  case TW_COND_START:
    return TW_EDGE_MET; /* started, or ended without starting */
  case TW_COND_ANY:
    return ev == TW_FLOW_STARTED ? TW_EDGE_OPEN : TW_EDGE_MET;
  case TW_COND_OK:
    return ev == TW_FLOW_STARTED     ? TW_EDGE_OPEN
           : ev == TW_FLOW_SUCCEEDED ? TW_EDGE_MET
                                     : TW_EDGE_NEVER;
  case TW_COND_NOTOK:
    return ev == TW_FLOW_STARTED     ? TW_EDGE_OPEN
           : ev == TW_FLOW_SUCCEEDED ? TW_EDGE_NEVER
                                     : TW_EDGE_MET;
  }
  return TW_EDGE_OPEN;
}

enum tw_edge_res tw_flow_task_readiness(bool any, int64_t n_in, int64_t n_met,
                                        int64_t n_never) {
  if (n_in == 0)
    return TW_EDGE_MET;
  if (any)
    return n_met > 0              ? TW_EDGE_MET
           : n_never >= n_in      ? TW_EDGE_NEVER
                                  : TW_EDGE_OPEN;
  return n_never > 0 ? TW_EDGE_NEVER
         : n_met >= n_in ? TW_EDGE_MET
                         : TW_EDGE_OPEN;
}

/* ---- arrays ------------------------------------------------------------------ */

void tw_array_release(struct tw_array *a) {
  if (!a)
    return;
  free(a->idx);
  memset(a, 0, sizeof *a);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static bool read_num(const char **p, int64_t *out) {
  const char *s = *p;
  if (!isdigit((unsigned char)*s))
    return false;
  int64_t v = 0;
  while (isdigit((unsigned char)*s)) {
    v = v * 10 + (*s - '0');
    if (v > TW_ARRAY_INDEX_MAX)
      return false;
    s++;
  }
  *out = v;
  *p = s;
  return true;
}

enum tw_rc tw_array_parse(const char *text, const char *field,
                          struct tw_array *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  size_t cap = 0;
  const char *p = text ? text : "";
  if (!*p)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: expected indices like \"0-999:2\" or \"1,3,5\"",
                        field);
  for (;;) {
    int64_t a, b, step = 1;
    if (!read_num(&p, &a))
      goto syntax;
    b = a;
    if (*p == '-') {
      p++;
      if (!read_num(&p, &b))
        goto syntax;
      if (b < a) {
        tw_array_release(out);
        return tw_err_field(err, TW_E_INVALID, field,
                            "%s: range %lld-%lld runs backwards", field,
                            (long long)a, (long long)b);
      }
      if (*p == ':') {
        p++;
        if (!read_num(&p, &step) || step < 1)
          goto syntax;
      }
    }
    for (int64_t v = a; v <= b; v += step) {
      if (out->n >= TW_ARRAY_TASKS_MAX) {
        tw_array_release(out);
        return tw_err_field(err, TW_E_INVALID, field,
                            "%s: at most %d tasks", field, TW_ARRAY_TASKS_MAX);
      }
      if (out->n == cap) {
        cap = cap ? cap * 2 : 64;
        out->idx = tw_realloc(out->idx, cap * sizeof *out->idx);
      }
      out->idx[out->n++] = v;
    }
    if (*p == ',') {
      p++;
      continue;
    }
    break;
  }
  if (*p == '%') {
    p++;
    int64_t m;
    if (!read_num(&p, &m) || m < 1 || m > TW_ARRAY_TASKS_MAX) {
      tw_array_release(out);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: %%N takes a number of tasks from 1 to %d",
                          field, TW_ARRAY_TASKS_MAX);
    }
    out->max_running = (int)m;
  }
  if (*p)
    goto syntax;
  qsort(out->idx, out->n, sizeof *out->idx, cmp_i64);
  for (size_t i = 1; i < out->n; i++)
    if (out->idx[i] == out->idx[i - 1]) {
      long long dup = (long long)out->idx[i];
      tw_array_release(out);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: index %lld given twice", field, dup);
    }
  return TW_OK;
syntax:
  tw_array_release(out);
  return tw_err_field(err, TW_E_INVALID, field,
                      "%s: expected indices like \"0-999:2\", \"1,3,5-7\" or "
                      "\"0-99%%10\", got \"%.40s\"",
                      field, text);
}

enum tw_rc tw_array_parse_node(const struct tw_node *n, const char *field,
                               struct tw_array *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (n && n->kind == TW_NODE_SCALAR)
    return tw_array_parse(n->str, field, out, err);
  if (!n || n->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: expected indices (\"0-999:2%%10\") or a mapping "
                        "{indices, max_running, sequential}",
                        field);
  static const char *const keys[] = {"indices", "max_running", "sequential",
                                     NULL};
  for (size_t i = 0; i < n->n; i++) {
    bool ok = false;
    for (int k = 0; keys[k]; k++)
      ok |= !strcmp(n->keys[i], keys[k]);
    if (!ok) {
      const char *near = tw_closest(n->keys[i], keys);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s.%s: unknown key%s%s%s", field, n->keys[i],
                          near ? "; did you mean \"" : "", near ? near : "",
                          near ? "\"?" : "");
    }
  }
  const struct tw_node *ix = tw_node_get(n, "indices");
  char sub[160];
  snprintf(sub, sizeof sub, "%s.indices", field);
  if (!ix || ix->kind != TW_NODE_SCALAR)
    return tw_err_field(err, TW_E_INVALID, sub, "%s: required, a string",
                        sub);
  enum tw_rc rc = tw_array_parse(ix->str, sub, out, err);
  if (rc)
    return rc;
  const struct tw_node *m = tw_node_get(n, "max_running");
  if (m && m->kind != TW_NODE_NULL) {
    int64_t v;
    if (!tw_node_as_int(m, &v) || v < 1 || v > TW_ARRAY_TASKS_MAX) {
      tw_array_release(out);
      snprintf(sub, sizeof sub, "%s.max_running", field);
      return tw_err_field(err, TW_E_INVALID, sub,
                          "%s: expected an integer from 1 to %d", sub,
                          TW_ARRAY_TASKS_MAX);
    }
    out->max_running = (int)v;
  }
  const struct tw_node *sq = tw_node_get(n, "sequential");
  if (sq && sq->kind != TW_NODE_NULL && !tw_node_as_bool(sq, &out->sequential)) {
    tw_array_release(out);
    snprintf(sub, sizeof sub, "%s.sequential", field);
    return tw_err_field(err, TW_E_INVALID, sub, "%s: expected true or false",
                        sub);
  }
  return TW_OK;
}

void tw_array_to_text(const struct tw_array *a, struct tw_buf *out) {
  size_t i = 0;
  bool first = true;
  while (i < a->n) {
    /* the longest run of one step from i */
    size_t j = i + 1;
    int64_t step = j < a->n ? a->idx[j] - a->idx[i] : 1;
    while (j < a->n && a->idx[j] - a->idx[j - 1] == step)
      j++;
    if (!first)
      tw_buf_addc(out, ',');
    first = false;
    if (j - i >= 3 || (j - i == 2 && step == 1)) {
      tw_buf_printf(out, "%lld-%lld", (long long)a->idx[i],
                    (long long)a->idx[j - 1]);
      if (step != 1)
        tw_buf_printf(out, ":%lld", (long long)step);
      i = j;
    } else {
      tw_buf_printf(out, "%lld", (long long)a->idx[i]);
      i++;
    }
  }
  if (a->max_running)
    tw_buf_printf(out, "%%%d", a->max_running);
}

/* ---- plans ------------------------------------------------------------------ */

static const char *const KIND_NAMES[] = {"job", "array", "workflow"};

const char *tw_flow_kind_str(enum tw_flow_kind k) {
  return (unsigned)k <= TW_FLOW_WORKFLOW ? KIND_NAMES[k] : "unknown";
}

void tw_flow_plan_release(struct tw_flow_plan *p) {
  if (!p)
    return;
  free(p->name);
  free(p->tenant);
  free(p->project);
  for (size_t i = 0; i < p->n_tmpl; i++) {
    free(p->tmpl[i].task);
    free(p->tmpl[i].spec_json);
    for (size_t k = 0; k < p->tmpl[i].n_outputs; k++) {
      free(p->tmpl[i].outputs[k].name);
      free(p->tmpl[i].outputs[k].uri);
    }
    free(p->tmpl[i].outputs);
  }
  free(p->tmpl);
  for (size_t i = 0; i < p->n_tasks; i++)
    free(p->tasks[i].param);
  free(p->tasks);
  free(p->edges);
  free(p->ext);
  memset(p, 0, sizeof *p);
}

static void add_edge(struct tw_flow_plan *p, uint32_t from, uint32_t to,
                     enum tw_flow_cond c, int64_t delay) {
  if (p->n_edges == p->cap_edges) {
    p->cap_edges = p->cap_edges ? p->cap_edges * 2 : 64;
    p->edges = tw_realloc(p->edges, p->cap_edges * sizeof *p->edges);
  }
  p->edges[p->n_edges++] =
      (struct tw_flow_edge){.from = from, .to = to, .cond = c,
                            .delay_s = delay};
}

static struct tw_flow_ext *add_ext(struct tw_flow_plan *p) {
  if (p->n_ext == p->cap_ext) {
    p->cap_ext = p->cap_ext ? p->cap_ext * 2 : 8;
    p->ext = tw_realloc(p->ext, p->cap_ext * sizeof *p->ext);
  }
  struct tw_flow_ext *e = &p->ext[p->n_ext++];
  memset(e, 0, sizeof *e);
  return e;
}

static enum tw_flow_cond dep_cond(enum tw_dep_kind k) {
  switch (k) {
  case TW_DEP_AFTER:
    return TW_COND_START;
  case TW_DEP_AFTERNOTOK:
    return TW_COND_NOTOK;
  case TW_DEP_AFTERANY:
  case TW_DEP_SINGLETON:
    return TW_COND_ANY;
  default:
    return TW_COND_OK;
  }
}

/* External edges of one dependency expression into every task. */
static enum tw_rc ext_deps(struct tw_flow_plan *p, const char *text,
                           const char *field, bool kill, struct tw_err *err) {
  struct tw_dep_expr e;
  enum tw_rc rc = tw_dep_parse(text, field, &e, err);
  if (rc)
    return rc;
  for (size_t t = 0; t < e.n; t++) {
    if (e.t[t].kind == TW_DEP_AFTERCORR && p->kind != TW_FLOW_ARRAY) {
      tw_dep_release(&e);
      return tw_err_field(err, TW_E_INVALID, field,
                          "%s: aftercorr is for arrays (task i after task i "
                          "of another array); this job has no array",
                          field);
    }
    for (size_t k = 0; k < p->n_tasks; k++) {
      struct tw_flow_ext *x = add_ext(p);
      snprintf(x->id, sizeof x->id, "%s", e.t[t].id);
      x->to = (uint32_t)k;
      x->cond = dep_cond(e.t[t].kind);
      x->delay_s = e.t[t].delay_s;
      x->corr = e.t[t].kind == TW_DEP_AFTERCORR;
      x->singleton = e.t[t].kind == TW_DEP_SINGLETON;
    }
  }
  for (size_t k = 0; k < p->n_tasks; k++) {
    p->tasks[k].any = e.any;
    p->tasks[k].kill = kill;
  }
  tw_dep_release(&e);
  return TW_OK;
}

enum tw_rc tw_flow_plan_from_spec(const struct tw_job_spec *spec,
                                  const char *spec_json,
                                  struct tw_flow_plan *out,
                                  struct tw_err *err) {
  memset(out, 0, sizeof *out);
  out->name = tw_strdup(spec->name);
  out->tenant = tw_strdup(spec->tenant ? spec->tenant : "default");
  out->project = tw_strdup(spec->project ? spec->project : "default");
  out->fail_fast = false; /* an array's tasks run on, as Slurm's do */
  out->n_tmpl = 1;
  out->tmpl = tw_calloc(1, sizeof *out->tmpl);
  out->tmpl[0].task = tw_strdup("");
  out->tmpl[0].spec_json = tw_strdup(spec_json);
  enum tw_rc rc = TW_OK;
  if (spec->array) {
    struct tw_array a;
    if ((rc = tw_array_parse(spec->array, "array", &a, err)))
      goto fail;
    out->kind = TW_FLOW_ARRAY;
    out->max_running = a.max_running;
    out->n_tasks = a.n;
    out->tasks = tw_calloc(a.n ? a.n : 1, sizeof *out->tasks);
    for (size_t i = 0; i < a.n; i++) {
      out->tasks[i].index = a.idx[i];
      out->tasks[i].kill = spec->kill_on_invalid_dep;
    }
    if (spec->array_sequential)
      for (size_t i = 1; i < a.n; i++)
        add_edge(out, (uint32_t)(i - 1), (uint32_t)i, TW_COND_OK, 0);
    tw_array_release(&a);
  } else {
    out->kind = TW_FLOW_JOB;
    out->n_tasks = 1;
    out->tasks = tw_calloc(1, sizeof *out->tasks);
    out->tasks[0].kill = spec->kill_on_invalid_dep;
  }
  out->tmpl[0].n_tasks = out->n_tasks;
  if (spec->depends_on &&
      (rc = ext_deps(out, spec->depends_on, "depends_on",
                     spec->kill_on_invalid_dep, err)))
    goto fail;
  return TW_OK;
fail:
  tw_flow_plan_release(out);
  return rc;
}

/* ---- workflow documents ------------------------------------------------------ */

static enum tw_rc doc_fail(struct tw_err *err, const char *path,
                           const struct tw_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum tw_rc doc_fail(struct tw_err *err, const char *path,
                           const struct tw_node *at, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (at && at->line > 0)
    return tw_err_field(err, TW_E_INVALID, path, "%s: %s (line %d)", path,
                        what, at->line);
  return tw_err_field(err, TW_E_INVALID, path, "%s: %s", path, what);
}

static enum tw_rc check_doc_keys(const struct tw_node *m, const char *path,
                                 const char *const *keys, struct tw_err *err) {
  for (size_t i = 0; i < m->n; i++) {
    bool ok = false;
    for (int k = 0; keys[k]; k++)
      ok |= !strcmp(m->keys[i], keys[k]);
    if (ok)
      continue;
    char sub[160];
    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", m->keys[i]);
    const char *near = tw_closest(m->keys[i], keys);
    if (near)
      return doc_fail(err, sub, m->items[i],
                      "unknown key; did you mean \"%s\"?", near);
    return doc_fail(err, sub, m->items[i], "unknown key");
  }
  return TW_OK;
}

static bool ident_ok(const char *s) {
  size_t n = strlen(s);
  if (!n || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
      return false;
  return true;
}

struct doc_task {
  const struct tw_node *node;
  const char *name;
  size_t first, count; /* its tasks in the plan */
};

/* The job spec of a task: its `job:` mapping with name, tenant and project
 * filled from the workflow where absent, through the spec parser. */
static enum tw_rc task_spec(const struct tw_flow_plan *p, const char *tname,
                            const struct tw_node *job, const char *path,
                            const struct tw_spec_opts *opts, char **json_out,
                            struct tw_err *err) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_addc(&b, '{');
  bool any = false;
  const char *fill[3][2] = {{"name", NULL}, {"tenant", p->tenant},
                            {"project", p->project}};
  char nm[200];
  snprintf(nm, sizeof nm, "%s.%s", p->name, tname);
  fill[0][1] = nm;
  for (int k = 0; k < 3; k++)
    if (!tw_node_get(job, fill[k][0]) && fill[k][1]) {
      if (any)
        tw_buf_addc(&b, ',');
      tw_buf_json_str(&b, fill[k][0]);
      tw_buf_addc(&b, ':');
      tw_buf_json_str(&b, fill[k][1]);
      any = true;
    }
  for (size_t i = 0; i < job->n; i++) {
    if (!strcmp(job->keys[i], "depends_on") || !strcmp(job->keys[i], "array")) {
      tw_buf_release(&b);
      char sub[200];
      snprintf(sub, sizeof sub, "%s.%s", path, job->keys[i]);
      return doc_fail(err, sub, job->items[i],
                      "not inside a workflow: use the task's depends or "
                      "for_each");
    }
    if (any)
      tw_buf_addc(&b, ',');
    tw_buf_json_str(&b, job->keys[i]);
    tw_buf_addc(&b, ':');
    tw_node_to_json(job->items[i], &b);
    any = true;
  }
  tw_buf_addc(&b, '}');
  struct tw_job_spec spec;
  struct tw_err e2 = {0};
  enum tw_rc rc = tw_spec_parse_opts(b.data, b.len, true, opts, &spec, &e2);
  tw_buf_release(&b);
  if (rc) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s.%s", path, e2.field);
    return tw_err_field(err, rc, sub, "%s.%s", path, e2.msg);
  }
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  tw_spec_release(&spec);
  *json_out = tw_buf_detach(&b);
  return TW_OK;
}

static enum tw_rc parse_outputs(const struct tw_node *n, const char *path,
                                struct tw_flow_tmpl *t, struct tw_err *err) {
  if (n->kind != TW_NODE_SEQ)
    return doc_fail(err, path, n, "expected a list of {name, uri, size}");
  if (n->n > 64)
    return doc_fail(err, path, n, "at most 64 outputs");
  t->outputs = tw_calloc(n->n ? n->n : 1, sizeof *t->outputs);
  static const char *const keys[] = {"name", "uri", "size", NULL};
  for (size_t i = 0; i < n->n; i++) {
    const struct tw_node *o = n->items[i];
    char sub[160];
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    if (o->kind != TW_NODE_MAP)
      return doc_fail(err, sub, o, "expected a mapping {name, uri, size}");
    enum tw_rc rc = check_doc_keys(o, sub, keys, err);
    if (rc)
      return rc;
    const struct tw_node *u = tw_node_get(o, "uri");
    if (!u || u->kind != TW_NODE_SCALAR || !strstr(u->str, "://") ||
        strlen(u->str) > 2048) {
      char s2[180];
      snprintf(s2, sizeof s2, "%s.uri", sub);
      return doc_fail(err, s2, o, "required: where the task writes it, "
                                  "like s3://bucket/path/");
    }
    struct tw_flow_output *out = &t->outputs[t->n_outputs++];
    out->uri = tw_strdup(u->str);
    const struct tw_node *nm = tw_node_get(o, "name");
    out->name = tw_strdup(nm && nm->kind == TW_NODE_SCALAR ? nm->str : "");
    const struct tw_node *sz = tw_node_get(o, "size");
    if (sz && sz->kind != TW_NODE_NULL) {
      if (sz->kind != TW_NODE_SCALAR ||
          tw_parse_size_bytes(sz->str, &out->size_bytes) != 0) {
        char s2[180];
        snprintf(s2, sizeof s2, "%s.size", sub);
        return doc_fail(err, s2, sz, "expected a size like 200GB");
      }
    }
  }
  return TW_OK;
}

/* The items of a fan-out: a list of scalars, or array indices as text. */
static enum tw_rc parse_items(const struct tw_node *n, const char *path,
                              char ***items, size_t *count,
                              struct tw_err *err) {
  *items = NULL;
  *count = 0;
  if (n->kind == TW_NODE_SCALAR) {
    struct tw_array a;
    enum tw_rc rc = tw_array_parse(n->str, path, &a, err);
    if (rc)
      return rc;
    *items = tw_calloc(a.n ? a.n : 1, sizeof **items);
    for (size_t i = 0; i < a.n; i++) {
      char v[24];
      snprintf(v, sizeof v, "%lld", (long long)a.idx[i]);
      (*items)[i] = tw_strdup(v);
    }
    *count = a.n;
    tw_array_release(&a);
    return TW_OK;
  }
  if (n->kind != TW_NODE_SEQ || n->n == 0)
    return doc_fail(err, path, n,
                    "expected a non-empty list of values, or indices like "
                    "\"0-99\"");
  if (n->n > TW_ARRAY_TASKS_MAX)
    return doc_fail(err, path, n, "at most %d items", TW_ARRAY_TASKS_MAX);
  *items = tw_calloc(n->n, sizeof **items);
  for (size_t i = 0; i < n->n; i++) {
    const struct tw_node *it = n->items[i];
    if (it->kind != TW_NODE_SCALAR || strlen(it->str) > 1024) {
      for (size_t k = 0; k < i; k++)
        free((*items)[k]);
      free(*items);
      *items = NULL;
      char sub[160];
      snprintf(sub, sizeof sub, "%s[%zu]", path, i);
      return doc_fail(err, sub, it, "expected a value of at most 1024 bytes");
    }
    (*items)[i] = tw_strdup(it->str);
  }
  *count = n->n;
  return TW_OK;
}

/* Kahn's order over the document's tasks: a cycle names one task on it. */
static enum tw_rc check_cycles(const struct doc_task *dt, size_t n,
                               const size_t *from, const size_t *to,
                               size_t n_e, struct tw_err *err) {
  size_t *indeg = tw_calloc(n, sizeof *indeg);
  size_t *queue = tw_calloc(n, sizeof *queue);
  /* the edges grouped by source (a counting sort): O(V + E) in all */
  size_t *start = tw_calloc(n + 1, sizeof *start);
  size_t *adj = tw_calloc(n_e ? n_e : 1, sizeof *adj);
  for (size_t e = 0; e < n_e; e++) {
    indeg[to[e]]++;
    start[from[e] + 1]++;
  }
  for (size_t i = 0; i < n; i++)
    start[i + 1] += start[i];
  size_t *fill = tw_calloc(n + 1, sizeof *fill);
  for (size_t e = 0; e < n_e; e++)
    adj[start[from[e]] + fill[from[e]]++] = to[e];
  free(fill);
  size_t qh = 0, qt = 0;
  for (size_t i = 0; i < n; i++)
    if (!indeg[i])
      queue[qt++] = i;
  while (qh < qt) {
    size_t v = queue[qh++];
    for (size_t k = start[v]; k < start[v + 1]; k++)
      if (--indeg[adj[k]] == 0)
        queue[qt++] = adj[k];
  }
  free(start);
  free(adj);
  enum tw_rc rc = TW_OK;
  if (qt < n)
    for (size_t i = 0; i < n; i++)
      if (indeg[i]) {
        char sub[64];
        snprintf(sub, sizeof sub, "tasks[%zu].depends", i);
        rc = doc_fail(err, sub, dt[i].node,
                      "task \"%s\" is on a cycle of dependencies", dt[i].name);
        break;
      }
  free(indeg);
  free(queue);
  return rc;
}

enum tw_rc tw_flow_doc_parse(const char *text, size_t len, bool is_json,
                             const struct tw_spec_opts *opts,
                             struct tw_flow_plan *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_node *root = NULL;
  enum tw_rc rc = is_json ? tw_node_parse_json(text, len, &root, err)
                          : tw_node_parse_yaml(text, len, &root, err);
  if (rc)
    return rc;
  struct doc_task *dt = NULL;
  size_t *efrom = NULL, *eto = NULL;
  enum tw_flow_cond *econd = NULL;
  size_t n_de = 0, cap_de = 0;
  out->kind = TW_FLOW_WORKFLOW;
  out->fail_fast = true;
  static const char *const keys[] = {"name",      "tenant",      "project",
                                     "fail_fast", "max_running", "tasks",
                                     "placement", NULL};
  static const char *const tkeys[] = {"name",    "depends", "fan_in",
                                      "for_each", "outputs", "on_invalid",
                                      "job",     NULL};
  const struct tw_node *n;
  if (!root || root->kind != TW_NODE_MAP) {
    rc = doc_fail(err, "", root, "a workflow is a mapping with name and tasks");
    goto done;
  }
  if ((rc = check_doc_keys(root, "", keys, err)))
    goto done;
  n = tw_node_get(root, "name");
  if (!n || n->kind != TW_NODE_SCALAR || !ident_ok(n->str)) {
    rc = doc_fail(err, "name", n ? n : root,
                  "required: 1 to 64 letters, digits, '_' or '-'");
    goto done;
  }
  out->name = tw_strdup(n->str);
  n = tw_node_get(root, "tenant");
  out->tenant = tw_strdup(n && n->kind == TW_NODE_SCALAR ? n->str : "default");
  n = tw_node_get(root, "project");
  out->project =
      tw_strdup(n && n->kind == TW_NODE_SCALAR ? n->str : "default");
  if ((n = tw_node_get(root, "fail_fast")) && n->kind != TW_NODE_NULL &&
      !tw_node_as_bool(n, &out->fail_fast)) {
    rc = doc_fail(err, "fail_fast", n, "expected true or false");
    goto done;
  }
  if ((n = tw_node_get(root, "max_running")) && n->kind != TW_NODE_NULL) {
    int64_t v;
    if (!tw_node_as_int(n, &v) || v < 1 || v > TW_ARRAY_TASKS_MAX) {
      rc = doc_fail(err, "max_running", n, "expected an integer from 1 to %d",
                    TW_ARRAY_TASKS_MAX);
      goto done;
    }
    out->max_running = (int)v;
  }
  if ((n = tw_node_get(root, "placement")) && n->kind != TW_NODE_NULL) {
    if (n->kind != TW_NODE_SCALAR ||
        (strcmp(n->str, "joint") && strcmp(n->str, "step"))) {
      rc = doc_fail(err, "placement", n, "expected joint or step");
      goto done;
    }
    out->step_placement = !strcmp(n->str, "step");
  }
  const struct tw_node *tasks = tw_node_get(root, "tasks");
  if (!tasks || tasks->kind != TW_NODE_SEQ || !tasks->n) {
    rc = doc_fail(err, "tasks", tasks ? tasks : root,
                  "required: a non-empty list of tasks");
    goto done;
  }
  if (tasks->n > 10000) {
    rc = doc_fail(err, "tasks", tasks, "at most 10000 named tasks");
    goto done;
  }
  size_t nt = tasks->n;
  dt = tw_calloc(nt, sizeof *dt);
  out->tmpl = tw_calloc(nt, sizeof *out->tmpl);
  size_t cap_tasks = 0;
  /* first pass: names, specs, fan-outs */
  for (size_t i = 0; i < nt; i++) {
    const struct tw_node *t = tasks->items[i];
    char path[64];
    snprintf(path, sizeof path, "tasks[%zu]", i);
    if (t->kind != TW_NODE_MAP) {
      rc = doc_fail(err, path, t, "expected a mapping with name and job");
      goto done;
    }
    if ((rc = check_doc_keys(t, path, tkeys, err)))
      goto done;
    const struct tw_node *nm = tw_node_get(t, "name");
    char sub[96];
    snprintf(sub, sizeof sub, "%s.name", path);
    if (!nm || nm->kind != TW_NODE_SCALAR || !ident_ok(nm->str)) {
      rc = doc_fail(err, sub, nm ? nm : t,
                    "required: 1 to 64 letters, digits, '_' or '-'");
      goto done;
    }
    for (size_t k = 0; k < i; k++)
      if (!strcmp(dt[k].name, nm->str)) {
        rc = doc_fail(err, sub, nm, "\"%s\" names tasks[%zu] already",
                      nm->str, k);
        goto done;
      }
    dt[i].node = t;
    dt[i].name = nm->str;
    const struct tw_node *job = tw_node_get(t, "job");
    snprintf(sub, sizeof sub, "%s.job", path);
    if (!job || job->kind != TW_NODE_MAP) {
      rc = doc_fail(err, sub, job ? job : t,
                    "required: the task's job spec (docs/jobspec.md)");
      goto done;
    }
    struct tw_flow_tmpl *tm = &out->tmpl[out->n_tmpl++];
    tm->task = tw_strdup(nm->str);
    if ((rc = task_spec(out, nm->str, job, sub, opts, &tm->spec_json, err)))
      goto done;
    const struct tw_node *o = tw_node_get(t, "outputs");
    snprintf(sub, sizeof sub, "%s.outputs", path);
    if (o && o->kind != TW_NODE_NULL && (rc = parse_outputs(o, sub, tm, err)))
      goto done;
    bool any = false, kill = true;
    const struct tw_node *fi = tw_node_get(t, "fan_in");
    if (fi && fi->kind != TW_NODE_NULL) {
      if (fi->kind != TW_NODE_SCALAR ||
          (strcmp(fi->str, "all") && strcmp(fi->str, "any"))) {
        snprintf(sub, sizeof sub, "%s.fan_in", path);
        rc = doc_fail(err, sub, fi, "expected all or any");
        goto done;
      }
      any = !strcmp(fi->str, "any");
    }
    const struct tw_node *oi = tw_node_get(t, "on_invalid");
    if (oi && oi->kind != TW_NODE_NULL) {
      if (oi->kind != TW_NODE_SCALAR ||
          (strcmp(oi->str, "fail") && strcmp(oi->str, "wait"))) {
        snprintf(sub, sizeof sub, "%s.on_invalid", path);
        rc = doc_fail(err, sub, oi, "expected fail or wait");
        goto done;
      }
      kill = !strcmp(oi->str, "fail");
    }
    char **items = NULL;
    size_t n_items = 0;
    const struct tw_node *fe = tw_node_get(t, "for_each");
    if (fe && fe->kind != TW_NODE_NULL) {
      snprintf(sub, sizeof sub, "%s.for_each", path);
      if ((rc = parse_items(fe, sub, &items, &n_items, err)))
        goto done;
    }
    size_t count = items ? n_items : 1;
    if (out->n_tasks + count > TW_ARRAY_TASKS_MAX) {
      for (size_t k = 0; k < n_items; k++)
        free(items[k]);
      free(items);
      rc = doc_fail(err, path, t, "a workflow has at most %d tasks",
                    TW_ARRAY_TASKS_MAX);
      goto done;
    }
    if (out->n_tasks + count > cap_tasks) {
      while (out->n_tasks + count > cap_tasks)
        cap_tasks = cap_tasks ? cap_tasks * 2 : 64;
      out->tasks = tw_realloc(out->tasks, cap_tasks * sizeof *out->tasks);
    }
    dt[i].first = out->n_tasks;
    dt[i].count = count;
    for (size_t k = 0; k < count; k++) {
      struct tw_flow_task *ft = &out->tasks[out->n_tasks++];
      memset(ft, 0, sizeof *ft);
      ft->tmpl = (uint32_t)i;
      ft->index = (int64_t)k;
      ft->param = items ? items[k] : NULL;
      ft->any = any;
      ft->kill = kill;
    }
    free(items);
    tm->n_tasks = count;
  }
  /* second pass: edges by name */
  const char **names = tw_calloc(nt + 1, sizeof *names);
  for (size_t i = 0; i < nt; i++)
    names[i] = dt[i].name;
  for (size_t i = 0; i < nt && !rc; i++) {
    const struct tw_node *d = tw_node_get(dt[i].node, "depends");
    if (!d || d->kind == TW_NODE_NULL)
      continue;
    char path[96];
    snprintf(path, sizeof path, "tasks[%zu].depends", i);
    if (d->kind == TW_NODE_SCALAR) { /* one name */
      rc = doc_fail(err, path, d, "expected a list of task names");
      break;
    }
    if (d->kind != TW_NODE_SEQ) {
      rc = doc_fail(err, path, d, "expected a list of task names");
      break;
    }
    for (size_t k = 0; k < d->n && !rc; k++) {
      const struct tw_node *it = d->items[k];
      char sub[128];
      snprintf(sub, sizeof sub, "%s[%zu]", path, k);
      if (it->kind != TW_NODE_SCALAR || strlen(it->str) > 100) {
        rc = doc_fail(err, sub, it, "expected \"task\" or \"task.succeeded\"");
        break;
      }
      char nm[104];
      snprintf(nm, sizeof nm, "%s", it->str);
      enum tw_flow_cond c = TW_COND_OK;
      char *dot = strchr(nm, '.');
      if (dot) {
        *dot = '\0';
        if (!tw_flow_cond_parse(dot + 1, &c)) {
          rc = doc_fail(err, sub, it,
                        "unknown condition \"%s\": succeeded, failed, "
                        "ended or started",
                        dot + 1);
          break;
        }
      }
      size_t src = nt;
      for (size_t m = 0; m < nt; m++)
        if (!strcmp(dt[m].name, nm))
          src = m;
      if (src == nt) {
        const char *near = tw_closest(nm, names);
        if (near)
          rc = doc_fail(err, sub, it, "no task named \"%s\"; did you mean "
                                      "\"%s\"?",
                        nm, near);
        else
          rc = doc_fail(err, sub, it, "no task named \"%s\"", nm);
        break;
      }
      if (src == i) {
        rc = doc_fail(err, sub, it, "a task cannot depend on itself");
        break;
      }
      if (n_de == cap_de) {
        cap_de = cap_de ? cap_de * 2 : 16;
        efrom = tw_realloc(efrom, cap_de * sizeof *efrom);
        eto = tw_realloc(eto, cap_de * sizeof *eto);
        econd = tw_realloc(econd, cap_de * sizeof *econd);
      }
      efrom[n_de] = src;
      eto[n_de] = i;
      econd[n_de++] = c;
      size_t ne = dt[src].count * dt[i].count;
      if (out->n_edges + ne > TW_FLOW_EDGES_MAX) {
        rc = doc_fail(err, sub, it,
                      "%zu edges: a workflow has at most %d (a fan-out "
                      "feeding a fan-out makes one edge per pair)",
                      out->n_edges + ne, TW_FLOW_EDGES_MAX);
        break;
      }
      for (size_t a = 0; a < dt[src].count; a++)
        for (size_t b = 0; b < dt[i].count; b++)
          add_edge(out, (uint32_t)(dt[src].first + a),
                   (uint32_t)(dt[i].first + b), c, 0);
    }
  }
  free(names);
  if (!rc)
    rc = check_cycles(dt, nt, efrom, eto, n_de, err);
done:
  free(dt);
  free(efrom);
  free(eto);
  free(econd);
  tw_node_free(root);
  if (rc)
    tw_flow_plan_release(out);
  return rc;
}

/* ---- a released task's spec ------------------------------------------------ */

static int kv_by_key(const void *a, const void *b) {
  return strcmp(((const struct tw_kv *)a)->key, ((const struct tw_kv *)b)->key);
}

static void env_put(struct tw_job_spec *s, const char *k, const char *v) {
  for (size_t i = 0; i < s->n_env; i++)
    if (!strcmp(s->env[i].key, k))
      return; /* the user's own value wins */
  if (s->n_env >= TW_SPEC_ENV_MAX)
    return; /* a spec at the bound keeps its own variables */
  s->env = tw_realloc(s->env, (s->n_env + 1) * sizeof *s->env);
  s->env[s->n_env].key = tw_strdup(k);
  s->env[s->n_env].value = tw_strdup(v);
  s->n_env++;
}

enum tw_rc tw_flow_task_spec(const char *tmpl_json, enum tw_flow_kind kind,
                             const char *group_id, const char *task_name,
                             int64_t index, const char *param,
                             const struct tw_dataset_ref *ds, size_t n_ds,
                             struct tw_buf *out, char *name_out,
                             size_t name_sz, struct tw_err *err) {
  struct tw_job_spec s;
  enum tw_rc rc =
      tw_spec_parse(tmpl_json, strlen(tmpl_json), true, &s, err);
  if (rc)
    return rc;
  /* the group holds the dependencies: the released task has none */
  free(s.depends_on);
  s.depends_on = NULL;
  free(s.array);
  s.array = NULL;
  s.array_sequential = false;
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)index);
  if (kind == TW_FLOW_ARRAY) {
    env_put(&s, "TW_ARRAY_INDEX", v);
    env_put(&s, "SLURM_ARRAY_TASK_ID", v);
    env_put(&s, "AWS_BATCH_JOB_ARRAY_INDEX", v);
    env_put(&s, "TW_ARRAY_ID", group_id);
    env_put(&s, "SLURM_ARRAY_JOB_ID", group_id);
    char nm[TW_SPEC_NAME_MAX + 40];
    snprintf(nm, sizeof nm, "%.100s_%.20s", s.name, v);
    free(s.name);
    s.name = tw_strdup(nm);
  } else {
    env_put(&s, "TW_WORKFLOW_ID", group_id);
    if (task_name && *task_name)
      env_put(&s, "TW_TASK", task_name);
    if (param) {
      env_put(&s, "TW_ITEM", param);
      env_put(&s, "TW_ITEM_INDEX", v);
      char nm[TW_SPEC_NAME_MAX + 40];
      snprintf(nm, sizeof nm, "%.100s_%.20s", s.name, v);
      free(s.name);
      s.name = tw_strdup(nm);
    }
  }
  /* canonical: the variables sorted by name, as the parser keeps them */
  qsort(s.env, s.n_env, sizeof *s.env, kv_by_key);
  if (n_ds && s.n_datasets + n_ds <= TW_SPEC_DATASETS_MAX) {
    s.datasets =
        tw_realloc(s.datasets, (s.n_datasets + n_ds) * sizeof *s.datasets);
    for (size_t i = 0; i < n_ds; i++) {
      struct tw_dataset_ref *d = &s.datasets[s.n_datasets++];
      d->uri = tw_strdup(ds[i].uri);
      d->size_bytes = ds[i].size_bytes;
      d->location = tw_strdup(ds[i].location);
    }
  }
  tw_spec_to_json(&s, out);
  if (name_out)
    snprintf(name_out, name_sz, "%s", s.name);
  tw_spec_release(&s);
  return TW_OK;
}
