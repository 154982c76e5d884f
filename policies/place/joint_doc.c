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

/* outputs as the workflow submissions write them: [{name, uri, size}],
 * their sizes summed, the first uri as where. */
static enum tw_rc parse_output_list(const struct tw_node *o, const char *f,
                                    struct tw_joint_task *t,
                                    struct tw_err *err) {
  for (size_t k = 0; k < o->n; k++) {
    const struct tw_node *e = o->items[k];
    char fk[96];
    snprintf(fk, sizeof fk, "%s[%zu]", f, k);
    if (e->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, fk,
                          "%s: expected a mapping {name, uri, size}", fk);
    for (size_t q = 0; q < e->n; q++) {
      const char *key = e->keys[q];
      const struct tw_node *v = e->items[q];
      char fq[128];
      snprintf(fq, sizeof fq, "%s.%.16s", fk, key);
      if (!strcmp(key, "size")) {
        int64_t b;
        if (!scalar(v) || tw_parse_size_bytes(v->str, &b) || b < 0 ||
            t->output_bytes > INT64_MAX / 2 - b)
          return tw_err_field(err, TW_E_INVALID, fq,
                              "%s: expected a size such as 200GB", fq);
        t->output_bytes += b;
      } else if (!strcmp(key, "uri")) {
        if (!scalar(v) || strlen(v->str) >= sizeof t->output_where)
          return tw_err_field(err, TW_E_INVALID, fq,
                              "%s: expected a URI of at most %zu bytes", fq,
                              sizeof t->output_where - 1);
        if (!t->output_where[0])
          snprintf(t->output_where, sizeof t->output_where, "%s", v->str);
      } else if (strcmp(key, "name")) {
        return tw_err_field(err, TW_E_INVALID, fq,
                            "%s: unknown key (an output has name, uri and "
                            "size)",
                            fq);
      }
    }
  }
  return TW_OK;
}

/* outputs: {size: 200GB, where: gs://x}, or a list as above */
static enum tw_rc parse_outputs(const struct tw_node *o, size_t i,
                                struct tw_joint_task *t, struct tw_err *err) {
  char f[64];
  snprintf(f, sizeof f, "tasks[%zu].outputs", i);
  if (o->kind == TW_NODE_SEQ)
    return parse_output_list(o, f, t, err);
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

/* The keys of a task that are the workflow's, not its job's: edges,
 * outputs, and the submissions' scheduling words (fan_in, on_invalid),
 * which do not change where a task runs. */
static bool meta_key(const char *key) {
  static const char *const META[] = {
      "depends_on", "depends", "outputs", "fan_in", "on_invalid", "job", NULL};
  for (size_t i = 0; META[i]; i++)
    if (!strcmp(key, META[i]))
      return true;
  return false;
}

/* The task's job keys (its own, or those of its `job:` mapping, as the
 * workflow submissions write it) with its inputs as datasets, borrowed
 * from n; name is the task's when the job has none. */
static enum tw_rc task_spec(const struct tw_node *task, size_t i,
                            const struct tw_spec_opts *opts,
                            struct tw_job_spec *spec, struct tw_err *err) {
  const struct tw_node *job = tw_node_get(task, "job");
  const struct tw_node *n = job ? job : task;
  const struct tw_node *name = tw_node_get(task, "name");
  struct tw_node m = {.kind = TW_NODE_MAP, .line = n->line, .col = n->col};
  m.keys = tw_malloc((n->n + 2) * sizeof *m.keys);
  m.items = tw_malloc((n->n + 2) * sizeof *m.items);
  char ds[] = "datasets", nk[] = "name";
  for (size_t k = 0; k < n->n; k++) {
    const char *key = n->keys[k];
    if (!job && meta_key(key))
      continue;
    m.keys[m.n] = !strcmp(key, "inputs") ? ds : n->keys[k];
    m.items[m.n++] = n->items[k];
  }
  if (job && !tw_node_get(job, "name")) {
    m.keys[m.n] = nk;
    m.items[m.n++] = (struct tw_node *)name;
  }
  struct tw_err e = {0};
  enum tw_rc rc = tw_spec_from_node_opts(&m, opts, spec, &e);
  free(m.keys);
  free(m.items);
  if (rc) {
    char f[160];
    snprintf(f, sizeof f, "tasks[%zu].%s%s", i, job ? "job." : "",
             e.field[0] ? e.field : "");
    if (!e.field[0])
      f[strlen(f) - 1] = '\0';
    tw_err_field(err, rc, f, "tasks[%zu]%s: %s", i, job ? ".job" : "", e.msg);
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
    /* the submissions' words, which do not change where tasks run */
    if (!strcmp(key, "tasks") || !strcmp(key, "tenant") ||
        !strcmp(key, "project") || !strcmp(key, "fail_fast") ||
        !strcmp(key, "max_running") || !strcmp(key, "placement"))
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
                        "tasks, and accepts tenant, project, fail_fast "
                        "and max_running)",
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
    if (tw_node_get(t, "for_each")) {
      snprintf(f, sizeof f, "tasks[%zu].for_each", i);
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: a fanned-out task is not planned jointly yet; "
                        "plan one of its items as a task of its own",
                        f);
      break;
    }
    const struct tw_node *job = tw_node_get(t, "job");
    if (job && job->kind != TW_NODE_MAP) {
      snprintf(f, sizeof f, "tasks[%zu].job", i);
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: expected the task's job spec, a mapping", f);
      break;
    }
    if (tw_node_get(t, "depends") && tw_node_get(t, "depends_on")) {
      snprintf(f, sizeof f, "tasks[%zu].depends", i);
      rc = tw_err_field(err, TW_E_INVALID, f,
                        "%s: give depends or depends_on, not both", f);
      break;
    }
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
    bool cond = false; /* `depends`: "task" or "task.succeeded" */
    if (!d && (d = tw_node_get(tasks->items[i], "depends")))
      cond = true;
    if (!d)
      continue;
    snprintf(f, sizeof f, "tasks[%zu].%s", i, cond ? "depends" : "depends_on");
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
      /* the condition says when the task may start, not where */
      char nm[TW_MODEL_NAME_MAX + 1];
      snprintf(nm, sizeof nm, "%.*s",
               (int)(cond && strchr(x->str, '.')
                         ? (size_t)(strchr(x->str, '.') - x->str)
                         : strlen(x->str)),
               x->str);
      struct byname key = {nm, 0};
      const struct byname *hit = bsearch(&key, idx, n, sizeof *idx, byname_cmp);
      if (!hit) {
        rc = tw_err_field(err, TW_E_INVALID, fk, "%s: no task named \"%.64s\"",
                          fk, nm);
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
      if (dup && cond)
        continue; /* "a.succeeded" beside "a.failed": one edge of data */
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
