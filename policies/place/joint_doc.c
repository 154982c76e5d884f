/* joint_doc.c - the minimal workflow document joint placement reads
 * (joint.h, tw_joint_doc_parse): named tasks, each a job's keys plus
 * depends_on, inputs and outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/node.h"
#include "broker/base/units.h"
#include "broker/core/spec.h"
#include "policies/place/joint.h"

bool tw_joint_doc_is_workflow(const struct tw_node *root) {
  return root && root->kind == TW_NODE_MAP && tw_node_get(root, "tasks");
}

static bool name_ok(const char *s) {
  size_t n = strlen(s);
  if (!n || n >= TW_MODEL_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

static bool scalar(const struct tw_node *n) {
  return n && n->kind == TW_NODE_SCALAR && n->str;
}

struct byname {
  const char *name;
  uint32_t task;
};

static int byname_cmp(const void *a, const void *b) {
  return strcmp(((const struct byname *)a)->name,
                ((const struct byname *)b)->name);
}

/* outputs: {size: 200GB, where: gs://x} */
static enum tw_rc parse_outputs(const struct tw_node *o, size_t i,
                                struct tw_joint_task *t, struct tw_err *err) {
  char f[64];
  snprintf(f, sizeof f, "tasks[%zu].outputs", i);
  if (o->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, f,
                        "%s: expected a mapping {size, where}, got %s", f,
                        tw_node_type_name(o));
  for (size_t k = 0; k < o->n; k++) {
    const char *key = o->keys[k];
    const struct tw_node *v = o->items[k];
    char fk[96];
    snprintf(fk, sizeof fk, "%s.%s", f, key);
    if (!strcmp(key, "size")) {
      int64_t b;
      if (!scalar(v) || tw_parse_size_bytes(v->str, &b) || b < 0)
        return tw_err_field(err, TW_E_INVALID, fk,
                            "%s: expected a size such as 200GB, got %.40s", fk,
                            scalar(v) ? v->str : tw_node_type_name(v));
      t->output_bytes = b;
    } else if (!strcmp(key, "where")) {
      if (!scalar(v) || strlen(v->str) >= sizeof t->output_where)
        return tw_err_field(err, TW_E_INVALID, fk,
                            "%s: expected a location or URI of at most %zu "
                            "bytes",
                            fk, sizeof t->output_where - 1);
      snprintf(t->output_where, sizeof t->output_where, "%s", v->str);
    } else {
      return tw_err_field(err, TW_E_INVALID, fk,
                          "%s: unknown key (outputs take size and where)", fk);
    }
  }
  return TW_OK;
}

/* The task's job keys with its inputs as datasets, borrowed from n. */
static enum tw_rc task_spec(const struct tw_node *n, size_t i,
                            const struct tw_spec_opts *opts,
                            struct tw_job_spec *spec, struct tw_err *err) {
  struct tw_node m = {.kind = TW_NODE_MAP, .line = n->line, .col = n->col};
  m.keys = tw_malloc((n->n + 1) * sizeof *m.keys);
  m.items = tw_malloc((n->n + 1) * sizeof *m.items);
  char ds[] = "datasets";
  for (size_t k = 0; k < n->n; k++) {
    const char *key = n->keys[k];
    if (!strcmp(key, "depends_on") || !strcmp(key, "outputs"))
      continue;
    m.keys[m.n] = !strcmp(key, "inputs") ? ds : n->keys[k];
    m.items[m.n++] = n->items[k];
  }
  struct tw_err e = {0};
  enum tw_rc rc = tw_spec_from_node_opts(&m, opts, spec, &e);
  free(m.keys);
  free(m.items);
  if (rc) {
    char f[160];
    snprintf(f, sizeof f, "tasks[%zu].%s", i, e.field[0] ? e.field : "");
    if (!e.field[0])
      f[strlen(f) - 1] = '\0';
    tw_err_field(err, rc, f, "tasks[%zu]: %s", i, e.msg);
  }
  return rc;
}

enum tw_rc tw_joint_doc_parse(const struct tw_node *root,
                              const struct tw_spec_opts *opts,
                              struct tw_joint_problem *out,
                              struct tw_err *err) {
  memset(out, 0, sizeof *out);
  if (!root || root->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "tasks",
                        "workflow: expected a mapping with tasks");
  for (size_t k = 0; k < root->n; k++) {
    const char *key = root->keys[k];
    if (!strcmp(key, "tasks"))
      continue;
    if (!strcmp(key, "name")) {
      const struct tw_node *v = root->items[k];
      if (!scalar(v) || !name_ok(v->str))
        return tw_err_field(err, TW_E_INVALID, "name",
                            "name: expected 1 to %d of [A-Za-z0-9._-]",
                            TW_MODEL_NAME_MAX - 1);
      snprintf(out->name, sizeof out->name, "%s", v->str);
      continue;
    }
    return tw_err_field(err, TW_E_INVALID, *key ? key : "(empty key)",
                        "%.64s: unknown key (a workflow plan reads name and "
                        "tasks)",
                        *key ? key : "(empty key)");
  }
  const struct tw_node *tasks = tw_node_get(root, "tasks");
  if (!tasks || tasks->kind != TW_NODE_SEQ || !tasks->n)
    return tw_err_field(err, TW_E_INVALID, "tasks",
                        "tasks: expected a non-empty sequence of tasks");
  if (tasks->n > TW_JOINT_TASKS_MAX)
    return tw_err_field(err, TW_E_INVALID, "tasks",
                        "tasks: at most %d, got %zu", TW_JOINT_TASKS_MAX,
                        tasks->n);
  size_t n = tasks->n;
  out->tasks = tw_calloc(n, sizeof *out->tasks);
  struct byname *idx = tw_calloc(n, sizeof *idx);
  enum tw_rc rc = TW_OK;
  char f[96];
  for (size_t i = 0; i < n && !rc; i++) {
    const struct tw_node *t = tasks->items[i];
    if (t->kind != TW_NODE_MAP) {
      snprintf(f, sizeof f, "tasks[%zu]", i);
      rc = tw_err_field(err, TW_E_INVALID, f, "%s: expected a mapping, got %s",
                        f, tw_node_type_name(t));
      break;
    }
    const struct tw_node *nm = tw_node_get(t, "name");
    snprintf(f, sizeof f, "tasks[%zu].name", i);
    if (!scalar(nm) || !name_ok(nm->str)) {
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: expected 1 to %d of [A-Za-z0-9._-]", f,
                        TW_MODEL_NAME_MAX - 1);
      break;
    }
    struct tw_joint_task *jt = &out->tasks[i];
    snprintf(jt->name, sizeof jt->name, "%s", nm->str);
    idx[i] = (struct byname){jt->name, (uint32_t)i};
    const struct tw_node *o = tw_node_get(t, "outputs");
    if (o && (rc = parse_outputs(o, i, jt, err)))
      break;
    if (tw_node_get(t, "inputs") && tw_node_get(t, "datasets")) {
      snprintf(f, sizeof f, "tasks[%zu].inputs", i);
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: give inputs or datasets, not both", f);
      break;
    }
    jt->spec = tw_calloc(1, sizeof *jt->spec);
    out->n_tasks = i + 1;
    if ((rc = task_spec(t, i, opts, jt->spec, err))) {
      free(jt->spec);
      jt->spec = NULL;
      break;
    }
  }
  if (!rc) {
    qsort(idx, n, sizeof *idx, byname_cmp);
    for (size_t i = 1; i < n && !rc; i++)
      if (!strcmp(idx[i].name, idx[i - 1].name)) {
        uint32_t later =
            idx[i].task > idx[i - 1].task ? idx[i].task : idx[i - 1].task;
        snprintf(f, sizeof f, "tasks[%u].name", later);
        rc = tw_err_field(err, TW_E_INVALID, f, "%s: \"%s\" names two tasks", f,
                          idx[i].name);
      }
  }
  size_t cap = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const struct tw_node *d = tw_node_get(tasks->items[i], "depends_on");
    if (!d)
      continue;
    snprintf(f, sizeof f, "tasks[%zu].depends_on", i);
    size_t nd = d->kind == TW_NODE_SEQ ? d->n : 1;
    if (d->kind != TW_NODE_SEQ && !scalar(d)) {
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: expected a list of task names, got %s", f,
                        tw_node_type_name(d));
      break;
    }
    size_t first = out->n_edges;
    for (size_t k = 0; k < nd && !rc; k++) {
      const struct tw_node *x = d->kind == TW_NODE_SEQ ? d->items[k] : d;
      char fk[128];
      snprintf(fk, sizeof fk, "%s[%zu]", f, k);
      if (!scalar(x)) {
        rc = tw_err_field(err, TW_E_INVALID, fk,
                          "%s: expected a task name, got %s", fk,
                          tw_node_type_name(x));
        break;
      }
      struct byname key = {x->str, 0};
      const struct byname *hit = bsearch(&key, idx, n, sizeof *idx, byname_cmp);
      if (!hit) {
        rc = tw_err_field(err, TW_E_INVALID, fk, "%s: no task named \"%.64s\"",
                          fk, x->str);
        break;
      }
      if (hit->task == i) {
        rc = tw_err_field(err, TW_E_INVALID, fk,
                          "%s: a task cannot depend on itself", fk);
        break;
      }
      bool dup = false;
      for (size_t e = first; e < out->n_edges && !dup; e++)
        dup = out->edges[e].from == hit->task;
      if (dup) {
        rc = tw_err_field(err, TW_E_INVALID, fk, "%s: \"%s\" is named twice",
                          fk, x->str);
        break;
      }
      if (out->n_edges == cap) {
        cap = cap ? 2 * cap : 16;
        out->edges = tw_realloc(out->edges, cap * sizeof *out->edges);
      }
      out->edges[out->n_edges++] =
          (struct tw_joint_edge){.from = hit->task,
                                 .to = (uint32_t)i,
                                 .bytes = out->tasks[hit->task].output_bytes};
    }
  }
  free(idx);
  if (!rc) {
    uint32_t *order = tw_malloc(n * sizeof *order);
    rc = tw_joint_topo(out, order, err);
    free(order);
  }
  if (rc)
    tw_joint_problem_release(out);
  return rc;
}
