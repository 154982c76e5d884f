/* h_workflows.c - arrays and workflows over HTTP: POST /v1/workflows (a
 * workflow document), an array's POST /v1/jobs, GET /v1/workflows/{id}
 * (status, progress, cost so far), DELETE (bulk cancel), /graph (its
 * edges) and /tasks (per-task status).  Semantics: docs/workflows.md. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "api/h_placement.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/core/flow.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"
#include "policies/place/joint.h"
#include "policies/place/placer.h"
#include "policies/place/plan.h"

static void add_usd(struct tw_buf *b, const char *key, int64_t uusd) {
  tw_buf_printf(b, ",\"%s\":\"%s%lld.%06lld\"", key, uusd < 0 ? "-" : "",
                (long long)(uusd < 0 ? -uusd : uusd) / 1000000,
                (long long)(uusd < 0 ? -uusd : uusd) % 1000000);
}

static void add_time(struct tw_buf *b, const char *key, int64_t ms) {
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

static void render(struct tw_buf *b, const struct tw_flow_rec *g) {
  tw_buf_adds(b, "{\"id\":");
  tw_buf_json_str(b, g->id);
  tw_buf_printf(b, ",\"kind\":\"%s\",\"name\":", tw_flow_kind_str(g->kind));
  tw_buf_json_str(b, g->name);
  tw_buf_adds(b, ",\"tenant\":");
  tw_buf_json_str(b, g->tenant);
  tw_buf_adds(b, ",\"project\":");
  tw_buf_json_str(b, g->project);
  tw_buf_printf(b, ",\"state\":\"%s\",\"reason\":", g->state);
  tw_buf_json_str(b, g->reason);
  tw_buf_printf(b,
                ",\"fail_fast\":%s,\"max_running\":%d,\"tasks\":%lld,"
                "\"progress\":{\"waiting\":%lld,\"ready\":%lld,"
                "\"pending\":%lld,\"running\":%lld,\"succeeded\":%lld,"
                "\"failed\":%lld,\"cancelled\":%lld}",
                g->fail_fast ? "true" : "false", g->max_running,
                (long long)g->n_tasks, (long long)g->waiting,
                (long long)g->ready, (long long)g->pending,
                (long long)g->running, (long long)g->succeeded,
                (long long)g->failed, (long long)g->cancelled);
  add_usd(b, "projected_cost_usd", g->projected_uusd);
  add_usd(b, "cost_so_far_usd", g->cost_uusd);
  add_time(b, "created_at", g->created_ms);
  add_time(b, "updated_at", g->updated_ms);
  tw_buf_addc(b, '}');
}

/* The group just stored, answered 201 with its Location; extra (may be
 * NULL) is a member or more appended to the group's object. */
static void created(struct tw_req *r, const char *gid,
                    const struct tw_buf *extra) {
  struct tw_flow_rec g;
  struct tw_err err = {0};
  if (tw_store_flow_get(tw_api_store(r->api), gid, &g, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render(&r->out, &g);
  if (extra && extra->len) {
    r->out.len--; /* the group's closing brace */
    tw_buf_add(&r->out, extra->data, extra->len);
    tw_buf_addc(&r->out, '}');
  }
  char loc[64];
  snprintf(loc, sizeof loc, "/v1/workflows/%s", gid);
  tw_req_add_header(r, "Location", loc);
  tw_req_json(r, 201);
}

/* ---- joint placement at submission (docs/workflows.md#placement) ---- */

/* The joint problem of a workflow's plan: one ask per template (a
 * fanned-out template is one ask: its tasks share one region), its
 * outputs' sizes summed; one edge per pair of templates with an edge
 * between their tasks, carrying the source's outputs. */
static enum tw_rc joint_problem_of(const struct tw_flow_plan *p,
                                   struct tw_joint_problem *jp,
                                   struct tw_err *err) {
  memset(jp, 0, sizeof *jp);
  snprintf(jp->name, sizeof jp->name, "%s", p->name ? p->name : "");
  jp->tasks = tw_calloc(p->n_tmpl ? p->n_tmpl : 1, sizeof *jp->tasks);
  for (size_t i = 0; i < p->n_tmpl; i++) {
    const struct tw_flow_tmpl *t = &p->tmpl[i];
    struct tw_joint_task *jt = &jp->tasks[jp->n_tasks];
    snprintf(jt->name, sizeof jt->name, "%s", t->task ? t->task : "");
    jt->spec = tw_calloc(1, sizeof *jt->spec);
    if (tw_spec_parse(t->spec_json, strlen(t->spec_json), true, jt->spec,
                      err)) {
      free(jt->spec);
      jt->spec = NULL;
      return TW_E_INTERNAL;
    }
    jp->n_tasks++;
    for (size_t o = 0; o < t->n_outputs; o++)
      if (t->outputs[o].size_bytes > 0 &&
          jt->output_bytes <= INT64_MAX / 2 - t->outputs[o].size_bytes)
        jt->output_bytes += t->outputs[o].size_bytes;
    if (t->n_outputs && t->outputs[0].uri)
      snprintf(jt->output_where, sizeof jt->output_where, "%s",
               t->outputs[0].uri);
  }
  /* template pairs, deduplicated through a bitmap of n_tmpl^2 bits (at
   * most 10,000 named tasks: 12.5 MB at worst, freed at once) */
  size_t nt = p->n_tmpl;
  uint8_t *seen = tw_calloc((nt * nt + 7) / 8 + 1, 1);
  size_t cap = 0;
  for (size_t e = 0; e < p->n_edges; e++) {
    uint32_t a = p->tasks[p->edges[e].from].tmpl;
    uint32_t b = p->tasks[p->edges[e].to].tmpl;
    size_t bit = (size_t)a * nt + b;
    if (a == b || (seen[bit / 8] & (1u << (bit % 8))))
      continue;
    seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
    if (jp->n_edges == cap) {
      cap = cap ? 2 * cap : 16;
      jp->edges = tw_realloc(jp->edges, cap * sizeof *jp->edges);
    }
    jp->edges[jp->n_edges++] = (struct tw_joint_edge){
        .from = a, .to = b, .bytes = jp->tasks[a].output_bytes};
  }
  free(seen);
  return TW_OK;
}

/* The spec's region selectors narrowed to `where` ("provider:region"):
 * where itself when no selector was given or a region selector matches
 * it, else the zone selectors inside it; never wider than what the spec
 * allowed.  false (spec unchanged) when nothing of it is left. */
static bool narrow_regions(struct tw_job_spec *s, const char *where) {
  char **keep = tw_calloc(s->n_regions + 1, sizeof *keep);
  size_t n = 0;
  bool region_ok = s->n_regions == 0;
  for (size_t i = 0; i < s->n_regions; i++) {
    const char *sel = s->regions[i];
    const char *c1 = strchr(sel, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) {
      region_ok |= !fnmatch(sel, where, 0);
      continue;
    }
    char rp[256];
    snprintf(rp, sizeof rp, "%.*s", (int)(c2 - sel), sel);
    if (!fnmatch(rp, where, 0))
      keep[n++] = tw_strdup(sel);
  }
  if (region_ok) {
    for (size_t i = 0; i < n; i++)
      free(keep[i]);
    n = 0;
    keep[n++] = tw_strdup(where);
  }
  if (!n) {
    free(keep);
    return false;
  }
  for (size_t i = 0; i < s->n_regions; i++)
    free(s->regions[i]);
  free(s->regions);
  s->regions = keep;
  s->n_regions = n;
  return true;
}

/* The placement mode in the request's audit detail. */
static void audit_note(struct tw_req *r, const char *mode, const char *why) {
  if (r->auth)
    snprintf(r->auth->note, sizeof r->auth->note, "placement=%s%s%.60s", mode,
             why && *why ? ": " : "", why ? why : "");
}

static void step_because(struct tw_req *r, struct tw_buf *pl,
                         const char *why) {
  audit_note(r, "step", why);
  tw_buf_adds(pl, ",\"placement\":{\"mode\":\"step\",\"reason\":");
  tw_buf_json_str(pl, why);
  tw_buf_addc(pl, '}');
}

/* Plans p's templates jointly over the placer's snapshot and pins each to
 * its region (its spec_json rewritten, specs[] narrowed alike); falls
 * back to step by step, saying why in pl, when a task fits nowhere or the
 * plan cannot be made.  pl receives the answer's placement member. */
static void place_jointly(struct tw_req *r, struct tw_flow_plan *p,
                          struct tw_job_spec *specs, struct tw_buf *pl) {
  if (p->step_placement) {
    step_because(r, pl, "placement: step in the document");
    return;
  }
  if (p->n_tmpl > TW_JOINT_TASKS_MAX) {
    step_because(r, pl, "too many tasks to plan jointly");
    return;
  }
  struct tw_joint_problem jp;
  struct tw_err err = {0};
  if (joint_problem_of(p, &jp, &err)) {
    tw_log_error("api", "request=%s joint problem: %s", r->request_id,
                 err.msg);
    step_because(r, pl, "the joint problem could not be built");
    tw_joint_problem_release(&jp);
    return;
  }
  struct tw_policy_set *set = NULL;
  struct tw_offer_index *ix = NULL;
  tw_h_placement_view(r, &set, &ix);
  struct tw_dataset_set ds;
  tw_h_joint_datasets(r, &jp, &ds);
  struct tw_place_snapshot snap = {.index = ix, .datasets = &ds};
  struct tw_joint_result res;
  memset(&res, 0, sizeof res);
  bool planned = !tw_joint_plan(set, &snap, &jp,
                                tw_clock_now_ms(tw_api_clock(r->api)), &res,
                                &err);
  if (!planned) {
    char why[300];
    snprintf(why, sizeof why, "the joint plan failed: %s", err.msg);
    step_because(r, pl, why);
  } else if (res.infeasible[0]) {
    char why[300];
    snprintf(why, sizeof why,
             "task %s fits nowhere jointly: placed step by step",
             res.infeasible);
    step_because(r, pl, why);
  } else {
    size_t pinned = 0;
    for (size_t i = 0; i < p->n_tmpl; i++) {
      const char *where = res.joint.tasks[i].where;
      if (!where[0] || !narrow_regions(&specs[i], where))
        continue;
      struct tw_buf j;
      tw_buf_init(&j);
      tw_spec_to_json(&specs[i], &j);
      free(p->tmpl[i].spec_json);
      p->tmpl[i].spec_json = tw_buf_detach(&j);
      pinned++;
    }
    int64_t saving = res.greedy.total_uusd - res.joint.total_uusd;
    char why[64];
    snprintf(why, sizeof why, "saving %lld uUSD over step by step",
             (long long)saving);
    audit_note(r, "joint", why);
    tw_buf_adds(pl, ",\"placement\":{\"mode\":\"joint\",\"method\":");
    tw_buf_json_str(pl, res.info.method ? res.info.method : "");
    tw_buf_printf(pl, ",\"exact\":%s", res.info.exact ? "true" : "false");
    add_usd(pl, "joint_cost_usd", res.joint.total_uusd);
    add_usd(pl, "step_cost_usd", res.greedy.total_uusd);
    add_usd(pl, "saving_usd", saving);
    tw_buf_adds(pl, ",\"tasks\":[");
    for (size_t i = 0; i < p->n_tmpl; i++) {
      tw_buf_adds(pl, i ? ",{\"task\":" : "{\"task\":");
      tw_buf_json_str(pl, jp.tasks[i].name);
      tw_buf_adds(pl, ",\"where\":");
      tw_buf_json_str(pl, res.joint.tasks[i].where);
      tw_buf_adds(pl, ",\"step_where\":");
      tw_buf_json_str(pl, res.greedy.tasks[i].where);
      tw_buf_addc(pl, '}');
    }
    tw_buf_adds(pl, "]}");
    tw_log_info("api",
                "request=%s workflow %s placed jointly: %zu of %zu tasks "
                "pinned, saving %lld uUSD over step by step",
                r->request_id, p->name ? p->name : "", pinned, p->n_tmpl,
                (long long)saving);
  }
  if (planned)
    tw_joint_result_release(&res);
  tw_dataset_set_release(&ds);
  tw_placer_release(set, ix);
  tw_joint_problem_release(&jp);
}

/* Admission over the plan's templates (quotas, budgets on the whole
 * projection), then one write; false when answered. */
static void admit_and_store(struct tw_req *r, struct tw_flow_plan *p) {
  size_t n = p->n_tmpl;
  struct tw_job_spec *specs = tw_calloc(n ? n : 1, sizeof *specs);
  const struct tw_job_spec **sp = tw_calloc(n ? n : 1, sizeof *sp);
  int64_t *counts = tw_calloc(n ? n : 1, sizeof *counts);
  struct tw_err err = {0};
  struct tw_buf pl; /* the placement member of the answer */
  tw_buf_init(&pl);
  size_t parsed = 0;
  for (; parsed < n; parsed++) {
    const char *j = p->tmpl[parsed].spec_json;
    if (tw_spec_parse(j, strlen(j), true, &specs[parsed], &err)) {
      tw_problem_err(r, &err);
      goto out;
    }
    sp[parsed] = &specs[parsed];
    counts[parsed] = (int64_t)p->tmpl[parsed].n_tasks;
    if (specs[parsed].n_secrets) { /* tasks come from the canonical spec */
      tw_problem(r, 400, "invalid-field", "secrets",
                 "secrets: not in a workflow's tasks (their specs keep no "
                 "values); submit the task as a job of its own");
      parsed++;
      goto out;
    }
    if (specs[parsed].workdir) { /* no task holds it (h_workdirs.h) */
      tw_problem(r, 400, "invalid-field", "workdir",
                 "workdir: not in a workflow's tasks yet; submit the task "
                 "as a job of its own");
      parsed++;
      goto out;
    }
  }
  int64_t projected = 0;
  if (!tw_auth_admit_group(r, &p->tenant, sp, counts, n, &projected))
    goto out;
  /* Where a whole workflow's placement is decided: jointly (the
   * default) by pinning every template to its region in the joint plan,
   * or step by step (`placement: step`, an array, a job with
   * dependencies), each task placed by the scheduler's placer when it is
   * released (store_flow.c, release_one). */
  if (p->kind == TW_FLOW_WORKFLOW)
    place_jointly(r, p, specs, &pl);
  char gid[TW_FLOW_GID_LEN + 1];
  if (tw_store_flow_submit(tw_api_store(r->api), p, projected, NULL,
                           "depends_on", gid, &err)) {
    if (err.rc != TW_E_INVALID)
      tw_log_error("api", "request=%s store workflow failed: %s",
                   r->request_id, err.msg);
    tw_problem_err(r, &err);
    goto out;
  }
  tw_log_info("api", "request=%s %s %s stored: %zu tasks", r->request_id,
              tw_flow_kind_str(p->kind), gid, p->n_tasks);
  created(r, gid, &pl);
out:
  tw_buf_release(&pl);
  for (size_t i = 0; i < parsed; i++)
    tw_spec_release(&specs[i]);
  free(specs);
  free(sp);
  free(counts);
}

void tw_h_array_submit(struct tw_req *r, const struct tw_job_spec *spec) {
  struct tw_buf canon;
  tw_buf_init(&canon);
  tw_spec_to_json(spec, &canon);
  struct tw_flow_plan p;
  struct tw_err err = {0};
  if (tw_flow_plan_from_spec(spec, canon.data, &p, &err)) {
    tw_buf_release(&canon);
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_release(&canon);
  admit_and_store(r, &p);
  tw_flow_plan_release(&p);
}

void tw_h_workflows_create(struct tw_req *r) {
  bool is_json;
  if (!tw_h_placement_media(r, &is_json))
    return;
  struct tw_spec_opts sopts = {.providers = tw_api_provider_names(r->api),
                               .fallbacks = tw_api_fallback_names(r->api)};
  struct tw_flow_plan p;
  struct tw_err err = {0};
  if (tw_flow_doc_parse(r->body.data ? r->body.data : "", r->body.len, is_json,
                        &sopts, &p, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  admit_and_store(r, &p);
  tw_flow_plan_release(&p);
}

/* The group (its tenant was checked by the route's rule,
 * TW_TGT_WORKFLOW). */
static bool load(struct tw_req *r, struct tw_flow_rec *g) {
  struct tw_err err = {0};
  if (tw_store_flow_get(tw_api_store(r->api), r->params[0], g, &err)) {
    tw_problem_err(r, &err);
    return false;
  }
  return true;
}

void tw_h_workflows_get(struct tw_req *r) {
  struct tw_flow_rec g;
  if (!load(r, &g))
    return;
  render(&r->out, &g);
  tw_req_json(r, 200);
}

void tw_h_workflows_cancel(struct tw_req *r) {
  struct tw_flow_rec g;
  if (!load(r, &g))
    return;
  struct tw_err err = {0};
  int64_t n = 0;
  if (tw_store_flow_cancel(tw_api_store(r->api), r->params[0],
                           "cancelled by request", NULL, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  if (tw_store_flow_get(tw_api_store(r->api), r->params[0], &g, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render(&r->out, &g);
  tw_req_json(r, 200);
}

/* GET /v1/workflows: the tenant's arrays and workflows, newest first
 * (?tenant= is set by the route's rule for a tenant's principal), each as
 * GET /v1/workflows/{id} renders it. */
void tw_h_workflows_list(struct tw_req *r) {
  static const char *const STATES[] = {"running", "succeeded", "failed",
                                       "cancelled"};
  const char *state = tw_req_query(r, "state");
  const char *tenant = tw_req_query(r, "tenant");
  const char *l = tw_req_query(r, "limit"), *c = tw_req_query(r, "cursor");
  if (state && !*state)
    state = NULL;
  if (state) {
    bool ok = false;
    for (size_t i = 0; i < sizeof STATES / sizeof *STATES; i++)
      ok = ok || !strcmp(state, STATES[i]);
    if (!ok) {
      tw_problem(r, 400, "invalid-field", "state",
                 "state: expected running, succeeded, failed or cancelled, "
                 "got \"%.32s\"",
                 state);
      return;
    }
  }
  int limit = 50;
  if (l) {
    char *end;
    long v = strtol(l, &end, 10);
    if (!*l || *end || v < 1 || v > 500) {
      tw_problem(r, 400, "invalid-field", "limit",
                 "limit: expected an integer from 1 to 500, got \"%.32s\"",
                 l);
      return;
    }
    limit = (int)v;
  }
  /* the cursor: "c" + the last group's created_at_ms + "_" + its id */
  int64_t before_ms = 0;
  char before_id[TW_FLOW_GID_LEN + 1] = "";
  if (c && *c) {
    char *end;
    long long v = strtoll(c + 1, &end, 10);
    size_t idlen = *end == '_' ? strlen(end + 1) : 0;
    if (c[0] != 'c' || !isdigit((unsigned char)c[1]) || v < 0 || !idlen ||
        idlen > TW_FLOW_GID_LEN) {
      tw_problem(r, 400, "invalid-field", "cursor",
                 "cursor: not a cursor this server issued");
      return;
    }
    before_ms = v;
    memcpy(before_id, end + 1, idlen + 1);
  }
  char(*ids)[TW_FLOW_GID_LEN + 1] = tw_calloc((size_t)limit, sizeof *ids);
  size_t n = 0;
  int64_t next_ms = -1;
  struct tw_err err = {0};
  if (tw_store_flow_list(tw_api_store(r->api), tenant && *tenant ? tenant : NULL,
                         state, before_ms, before_id[0] ? before_id : NULL,
                         limit, ids, &n, &next_ms, &err)) {
    free(ids);
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  size_t shown = 0;
  for (size_t i = 0; i < n; i++) {
    struct tw_flow_rec g;
    if (tw_store_flow_get(tw_api_store(r->api), ids[i], &g, &err)) {
      if (err.rc == TW_E_NOTFOUND)
        continue; /* gone between the two reads */
      free(ids);
      tw_buf_reset(&r->out);
      tw_problem_err(r, &err);
      return;
    }
    if (shown++)
      tw_buf_addc(&r->out, ',');
    render(&r->out, &g);
  }
  if (next_ms >= 0 && n) {
    tw_buf_printf(&r->out, "],\"next_cursor\":\"c%lld_", (long long)next_ms);
    tw_buf_adds(&r->out, ids[n - 1]);
    tw_buf_adds(&r->out, "\"}");
  } else
    tw_buf_adds(&r->out, "],\"next_cursor\":null}");
  free(ids);
  tw_req_json(r, 200);
}

static bool page_args(struct tw_req *r, int64_t *after, int *limit) {
  const char *c = tw_req_query(r, "cursor"), *l = tw_req_query(r, "limit");
  *after = -1;
  *limit = 500;
  if (l) {
    char *end;
    long v = strtol(l, &end, 10);
    if (!*l || *end || v < 1 || v > 5000) {
      tw_problem(r, 400, "invalid-field", "limit",
                 "limit: expected an integer from 1 to 5000, got \"%.32s\"",
                 l);
      return false;
    }
    *limit = (int)v;
  }
  if (c && *c) {
    char *end;
    long long v = strtoll(c + 1, &end, 10);
    if (c[0] != 'c' || !c[1] || *end || v < 0) {
      tw_problem(r, 400, "invalid-field", "cursor",
                 "cursor: not a cursor this server issued");
      return false;
    }
    *after = v;
  }
  return true;
}

void tw_h_workflows_tasks(struct tw_req *r) {
  struct tw_flow_rec g;
  if (!load(r, &g))
    return;
  int64_t after;
  int limit;
  if (!page_args(r, &after, &limit))
    return;
  struct tw_flow_task_rec *t;
  size_t n;
  struct tw_err err = {0};
  if (tw_store_flow_tasks(tw_api_store(r->api), r->params[0], after, limit,
                          &t, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    tw_buf_printf(&r->out, "%s{\"idx\":%lld,\"index\":%lld,\"task\":",
                  i ? "," : "", (long long)t[i].idx, (long long)t[i].index);
    tw_buf_json_str(&r->out, t[i].task);
    tw_buf_adds(&r->out, ",\"param\":");
    if (t[i].param)
      tw_buf_json_str(&r->out, t[i].param);
    else
      tw_buf_adds(&r->out, "null");
    /* a released task's state is its job's */
    tw_buf_adds(&r->out, ",\"state\":");
    tw_buf_json_str(&r->out, t[i].job_id[0] && t[i].job_state[0]
                                 ? t[i].job_state
                                 : t[i].state);
    tw_buf_adds(&r->out, ",\"job_id\":");
    if (t[i].job_id[0])
      tw_buf_json_str(&r->out, t[i].job_id);
    else
      tw_buf_adds(&r->out, "null");
    tw_buf_adds(&r->out, ",\"reason\":");
    tw_buf_json_str(&r->out, t[i].reason);
    tw_buf_addc(&r->out, '}');
  }
  bool more = n == (size_t)limit;
  if (more)
    tw_buf_printf(&r->out, "],\"next_cursor\":\"c%lld\"}",
                  (long long)t[n - 1].idx);
  else
    tw_buf_adds(&r->out, "],\"next_cursor\":null}");
  tw_store_flow_tasks_free(t, n);
  tw_req_json(r, 200);
}

void tw_h_workflows_graph(struct tw_req *r) {
  struct tw_flow_rec g;
  if (!load(r, &g))
    return;
  int64_t after;
  int limit;
  if (!page_args(r, &after, &limit))
    return;
  struct tw_flow_edge_rec *e;
  size_t n;
  int64_t next;
  struct tw_err err = {0};
  if (tw_store_flow_edges(tw_api_store(r->api), r->params[0],
                          after < 0 ? 0 : after, limit, &e, &n, &next, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  static const char *const RES[] = {"open", "met", "never", "delayed"};
  tw_buf_adds(&r->out, "{\"id\":");
  tw_buf_json_str(&r->out, g.id);
  tw_buf_printf(&r->out, ",\"tasks\":%lld,\"edges\":[", (long long)g.n_tasks);
  for (size_t i = 0; i < n; i++) {
    tw_buf_adds(&r->out, i ? ",{\"from\":" : "{\"from\":");
    /* a task of this group by its idx; else the job or group named */
    if (!strcmp(e[i].src, g.id) && e[i].sidx >= 0)
      tw_buf_printf(&r->out, "%lld", (long long)e[i].sidx);
    else
      tw_buf_json_str(&r->out, e[i].src);
    if (strcmp(e[i].src, g.id) && e[i].sidx >= 0)
      tw_buf_printf(&r->out, ",\"from_task\":%lld", (long long)e[i].sidx);
    tw_buf_printf(&r->out, ",\"to\":%lld,\"when\":\"%s\",\"state\":\"%s\"}",
                  (long long)e[i].didx, tw_flow_cond_str(e[i].cond),
                  (unsigned)e[i].res < 4 ? RES[e[i].res] : "open");
  }
  if (next)
    tw_buf_printf(&r->out, "],\"next_cursor\":\"c%lld\"}", (long long)next);
  else
    tw_buf_adds(&r->out, "],\"next_cursor\":null}");
  free(e);
  tw_req_json(r, 200);
}
