/* Dependencies, arrays and workflows: the parsers (broker/core/flow.h) and
 * the store's engine (broker/core/store_flow.h) driven the way the
 * scheduler drives it, one tw_store_flow_pass() per pass.  The dependency
 * and array cases come from tests/workflow/cases.txt, which
 * tests/workflow/slurm_cases.sh runs through sbatch with the same
 * expected outcomes.  Every dependency case runs twice: the dependent
 * submitted before its upstreams end (woken by their events) and after
 * (resolved at submission). */
#include "tests/twtest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/core/flow.h"
#include "broker/core/job.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"
#include "tests/unit/pg_store.h"
#include "tests/unit/tmp_store.h"

static struct tw_clock clk;
static char dir[64], path[128];
static struct tw_test_pg pg; /* --backend=postgres: the same cases there */

static struct tw_store *open_store(void) {
  snprintf(dir, sizeof dir, "/tmp/twflowXXXXXX");
  TW_CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/t.db", dir);
  tw_clock_fake_init(&clk, 1700000000000LL);
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  if (pg.on)
    TW_CHECK(tw_test_pg_schema_new(&pg) == 0, "a PostgreSQL schema");
  tw_test_pg_opts(&pg, &o);
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_open(&o, &s, &err), TW_OK, err);
  return s;
}

static void close_store(struct tw_store *s) {
  tw_store_close(s);
  tw_test_store_remove(path, dir);
  tw_test_pg_schema_drop(&pg);
}

static void pass(struct tw_store *s) {
  struct tw_err err = {0};
  struct tw_flow_pass_stats st;
  TW_CHECK_RC(tw_store_flow_pass(s, tw_clock_now_ms(&clk), 1000, &st, &err),
              TW_OK, err);
}

/* A job from a spec text (YAML), with its dependencies; its id. */
static void submit(struct tw_store *s, const char *yaml, char id[32],
                   enum tw_rc want) {
  struct tw_job_spec spec;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_spec_parse(yaml, strlen(yaml), false, &spec, &err), TW_OK,
              err);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_flow_plan plan;
  TW_CHECK_RC(tw_flow_plan_from_spec(&spec, b.data, &plan, &err), TW_OK, err);
  if (spec.array) {
    char gid[TW_FLOW_GID_LEN + 1] = "";
    enum tw_rc rc = tw_store_flow_submit(s, &plan, 0, NULL, "depends_on", gid,
                                         &err);
    TW_CHECK(rc == want, "%s: %s", tw_rc_str(rc), err.msg);
    snprintf(id, 32, "%s", gid);
  } else {
    struct tw_job_new req = {.name = spec.name,
                             .tenant = spec.tenant,
                             .project = spec.project,
                             .spec_json = b.data,
                             .flow = &plan};
    struct tw_job_rec rec;
    enum tw_rc rc = tw_store_job_create(s, &req, &rec, NULL, &err);
    TW_CHECK(rc == want, "%s: %s", tw_rc_str(rc), err.msg);
    if (rc == TW_OK) {
      snprintf(id, 32, "%s", rec.id);
      tw_job_rec_release(&rec);
    }
  }
  tw_flow_plan_release(&plan);
  tw_buf_release(&b);
  tw_spec_release(&spec);
}

static void move(struct tw_store *s, const char *id, enum tw_job_state to) {
  struct tw_job_transition t = {.id = id, .to = to, .reason = "test"};
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_job_transition(s, &t, NULL, &err), TW_OK, err);
}

static enum tw_job_state state_of(struct tw_store *s, const char *id,
                                  char *reason, size_t rsz) {
  struct tw_job_rec r;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_job_get(s, id, &r, &err), TW_OK, err);
  enum tw_job_state st = r.state;
  if (reason)
    snprintf(reason, rsz, "%s", r.reason);
  tw_job_rec_release(&r);
  return st;
}

/* An upstream job to its outcome, from pending. */
static void drive(struct tw_store *s, const char *id, const char *outcome) {
  if (!strcmp(outcome, "hold"))
    return;
  if (!strcmp(outcome, "cancel")) {
    move(s, id, TW_JOB_CANCELLED);
    return;
  }
  move(s, id, TW_JOB_PLACING);
  move(s, id, TW_JOB_PROVISIONING);
  move(s, id, TW_JOB_RUNNING);
  if (!strcmp(outcome, "ok"))
    move(s, id, TW_JOB_SUCCEEDED);
  else if (!strcmp(outcome, "fail"))
    move(s, id, TW_JOB_FAILED);
}

/* ---- the case file ---------------------------------------------------------- */

struct fields {
  char f[6][256];
  int n;
};

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  size_t i = 0;
  while (isspace((unsigned char)s[i]))
    i++;
  memmove(s, s + i, strlen(s + i) + 1);
}

/* The cases of one kind ("dep", "arr", ...): fields split at '|'. */
static size_t load_cases(const char *kind, struct fields **out) {
  char p[512];
  const char *src = getenv("TW_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/tests/workflow/cases.txt", src ? src : ".");
  FILE *f = fopen(p, "r");
  TW_CHECK(f != NULL, "%s", p);
  char line[1024];
  size_t n = 0;
  *out = NULL;
  size_t kl = strlen(kind);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, kind, kl) || line[kl] != ' ')
      continue;
    *out = tw_realloc(*out, (n + 1) * sizeof **out);
    struct fields *fl = &(*out)[n++];
    memset(fl, 0, sizeof *fl);
    char *save = NULL, *tok = strtok_r(line + kl, "|", &save);
    while (tok && fl->n < 6) {
      snprintf(fl->f[fl->n], sizeof fl->f[0], "%s", tok);
      trim(fl->f[fl->n++]);
      tok = strtok_r(NULL, "|", &save);
    }
  }
  fclose(f);
  return n;
}

/* Replaces %1.. with ids[0].. and %A with aid. */
static void subst(const char *in, char ids[][32], const char *aid, char *out,
                  size_t sz) {
  size_t o = 0;
  for (const char *p = in; *p && o + 40 < sz; p++) {
    if (*p == '%' && isdigit((unsigned char)p[1])) {
      o += (size_t)snprintf(out + o, sz - o, "%s", ids[p[1] - '1']);
      p++;
    } else if (*p == '%' && p[1] == 'A') {
      o += (size_t)snprintf(out + o, sz - o, "%s", aid);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
}

/* What a dependent job's state says, as the case file writes it. */
static const char *outcome_of_job(struct tw_store *s, const char *id) {
  char reason[256];
  enum tw_job_state st = state_of(s, id, reason, sizeof reason);
  if (st == TW_JOB_PENDING)
    return "run";
  if (st == TW_JOB_FAILED && strstr(reason, "DependencyNeverSatisfied"))
    return "never";
  if (st == TW_JOB_WAITING) {
    struct tw_flow_task_rec *t;
    size_t n;
    struct tw_err err = {0};
    TW_CHECK_RC(tw_store_flow_tasks(s, id, -1, 1, &t, &n, &err), TW_OK, err);
    bool stuck = n == 1 && strstr(t[0].reason, "DependencyNeverSatisfied");
    tw_store_flow_tasks_free(t, n);
    return stuck ? "stuck" : "wait";
  }
  return tw_job_state_str(st);
}

static void run_dep_case(const struct fields *c, bool before) {
  struct tw_store *s = open_store();
  char ids[8][32] = {{0}};
  char outs[8][16] = {{0}};
  char up[256];
  snprintf(up, sizeof up, "%s", c->f[1]);
  int n_up = 0;
  char *save = NULL;
  for (char *w = strtok_r(up, " ", &save); w && n_up < 8;
       w = strtok_r(NULL, " ", &save), n_up++) {
    char *eq = strchr(w, '=');
    const char *name = "upstream";
    if (eq) {
      *eq = '\0';
      name = "dependent";
    }
    snprintf(outs[n_up], sizeof outs[0], "%s", w);
    char y[128];
    snprintf(y, sizeof y, "name: %s\n", name);
    submit(s, y, ids[n_up], TW_OK);
    /* a "run" or "hold" upstream is in that state before the dependent
     * comes in either way, as in Slurm */
    if (!before || !strcmp(w, "run"))
      drive(s, ids[n_up], w);
    pass(s);
  }
  char dep[512], y[768], me[32];
  subst(c->f[2], ids, "", dep, sizeof dep);
  snprintf(y, sizeof y,
           "name: dependent\ndepends_on: \"%s\"\nkill_on_invalid_dep: %s\n",
           dep, !strcmp(c->f[3], "yes") ? "true" : "false");
  submit(s, y, me, TW_OK);
  pass(s);
  if (before)
    for (int i = 0; i < n_up; i++)
      if (strcmp(outs[i], "run")) {
        drive(s, ids[i], outs[i]);
        pass(s);
      }
  pass(s);
  const char *got = outcome_of_job(s, me);
  TW_CHECK(!strcmp(got, c->f[4]), "case %s (%s): got %s, want %s", c->f[0],
           before ? "submitted first" : "submitted after", got, c->f[4]);
  close_store(s);
}

static void dependency_cases(void **state) {
  (void)state;
  struct fields *c;
  size_t n = load_cases("dep", &c);
  TW_CHECK(n >= 25, "%zu dependency cases", n);
  for (size_t i = 0; i < n; i++) {
    run_dep_case(&c[i], false);
    run_dep_case(&c[i], true);
  }
  free(c);
}

/* The jobs of a group's released tasks, in task order. */
static size_t task_jobs(struct tw_store *s, const char *gid, char jobs[][32],
                        size_t max) {
  struct tw_flow_task_rec *t;
  size_t n;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_tasks(s, gid, -1, (int)max, &t, &n, &err), TW_OK,
              err);
  for (size_t i = 0; i < n; i++)
    snprintf(jobs[i], 32, "%s", t[i].job_id);
  tw_store_flow_tasks_free(t, n);
  return n;
}

static const char *outcome_of_task(const struct tw_flow_task_rec *t) {
  if (!strcmp(t->state, "released"))
    return "run";
  if (!strcmp(t->state, "failed") && strstr(t->reason, "DependencyNever"))
    return "never";
  if (!strcmp(t->state, "waiting"))
    return strstr(t->reason, "DependencyNever") ? "stuck" : "wait";
  return t->state;
}

static void array_cases(void **state) {
  (void)state;
  struct fields *c;
  size_t n = load_cases("arr", &c);
  TW_CHECK(n >= 5, "%zu array cases", n);
  for (size_t i = 0; i < n; i++) {
    struct tw_store *s = open_store();
    char aid[32] = "";
    if (strcmp(c[i].f[1], "-")) {
      char spec[256], y[512];
      snprintf(spec, sizeof spec, "%s", c[i].f[1]);
      char *eq = strchr(spec, '=');
      TW_CHECK(eq != NULL, "%s", c[i].f[0]);
      *eq = '\0';
      snprintf(y, sizeof y, "name: up\narray: \"%s\"\n", spec);
      submit(s, y, aid, TW_OK);
      pass(s);
      char jobs[64][32];
      size_t nj = task_jobs(s, aid, jobs, 64);
      char *save = NULL;
      size_t k = 0;
      for (char *w = strtok_r(eq + 1, ",", &save); w && k < nj;
           w = strtok_r(NULL, ",", &save), k++) {
        TW_CHECK(jobs[k][0], "%s: task %zu not released", c[i].f[0], k);
        drive(s, jobs[k], w);
      }
      pass(s);
    }
    char dep[256], y[768], me[32];
    char none[1][32] = {{0}};
    subst(c[i].f[2], none, aid, dep, sizeof dep);
    int o = snprintf(y, sizeof y, "name: down\n");
    if (strcmp(dep, "-"))
      o += snprintf(y + o, sizeof y - (size_t)o, "depends_on: \"%s\"\n", dep);
    if (strcmp(c[i].f[3], "-"))
      snprintf(y + o, sizeof y - (size_t)o, "array: \"%s\"\n", c[i].f[3]);
    submit(s, y, me, TW_OK);
    pass(s);
    pass(s);
    char got[256] = "";
    if (!strcmp(c[i].f[3], "-")) {
      snprintf(got, sizeof got, "%s", outcome_of_job(s, me));
    } else {
      struct tw_flow_task_rec *t;
      size_t nt;
      struct tw_err err = {0};
      TW_CHECK_RC(tw_store_flow_tasks(s, me, -1, 100, &t, &nt, &err), TW_OK,
                  err);
      size_t g = 0;
      for (size_t k = 0; k < nt; k++)
        g += (size_t)snprintf(got + g, sizeof got - g, "%s%s", k ? "," : "",
                              outcome_of_task(&t[k]));
      tw_store_flow_tasks_free(t, nt);
    }
    TW_CHECK(!strcmp(got, c[i].f[4]), "case %s: got %s, want %s", c[i].f[0],
             got, c[i].f[4]);
    close_store(s);
  }
  free(c);
}

/* Indices: the parser's, and the environment of each released task. */
static void index_cases(void **state) {
  (void)state;
  struct fields *c;
  size_t n = load_cases("idx", &c);
  TW_CHECK(n >= 3);
  for (size_t i = 0; i < n; i++) {
    struct tw_store *s = open_store();
    char y[512], gid[32];
    snprintf(y, sizeof y, "name: ix\narray: \"%s\"\nrun: echo $TW_ARRAY_INDEX\n",
             c[i].f[1]);
    submit(s, y, gid, TW_OK);
    pass(s);
    char jobs[64][32];
    size_t nj = task_jobs(s, gid, jobs, 64);
    char got[256] = "";
    size_t g = 0;
    for (size_t k = 0; k < nj; k++) {
      struct tw_job_rec r;
      struct tw_err err = {0};
      TW_CHECK_RC(tw_store_job_get(s, jobs[k], &r, &err), TW_OK, err);
      const char *e = strstr(r.spec_json, "\"TW_ARRAY_INDEX\":\"");
      TW_CHECK(e != NULL, "%s", r.spec_json);
      long idx = strtol(e + 18, NULL, 10);
      const char *sl = strstr(r.spec_json, "\"SLURM_ARRAY_TASK_ID\":\"");
      TW_CHECK(sl && strtol(sl + 23, NULL, 10) == idx, "%s", r.spec_json);
      char nm[64];
      snprintf(nm, sizeof nm, "ix_%ld", idx);
      TW_CHECK_STR(r.name, nm);
      g += (size_t)snprintf(got + g, sizeof got - g, "%s%ld", k ? " " : "",
                            idx);
      tw_job_rec_release(&r);
    }
    TW_CHECK(!strcmp(got, c[i].f[2]), "case %s: got %s, want %s", c[i].f[0],
             got, c[i].f[2]);
    close_store(s);
  }
  free(c);
}

/* %N: never more than N released at once, and all of them run. */
static void throttle_cases(void **state) {
  (void)state;
  struct fields *c;
  size_t n = load_cases("thr", &c);
  TW_CHECK(n >= 1);
  for (size_t i = 0; i < n; i++) {
    struct tw_store *s = open_store();
    char y[512], gid[32];
    snprintf(y, sizeof y, "name: th\narray: \"%s\"\n", c[i].f[1]);
    submit(s, y, gid, TW_OK);
    int most = 0, rounds = 0;
    for (;;) {
      pass(s);
      struct tw_flow_task_rec *t;
      size_t nt;
      struct tw_err err = {0};
      TW_CHECK_RC(tw_store_flow_tasks(s, gid, -1, 100, &t, &nt, &err), TW_OK,
                  err);
      int live = 0;
      for (size_t k = 0; k < nt; k++)
        if (!strcmp(t[k].state, "released")) {
          live++;
          drive(s, t[k].job_id, "ok");
        }
      tw_store_flow_tasks_free(t, nt);
      if (live > most)
        most = live;
      if (!live || ++rounds > 50)
        break;
    }
    struct tw_flow_rec g;
    struct tw_err err = {0};
    TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
    TW_CHECK_STR(g.state, "succeeded");
    TW_CHECK_INT(g.succeeded, g.n_tasks);
    TW_CHECK_INT(most, atoi(c[i].f[2]));
    close_store(s);
  }
  free(c);
}

/* ---- the parsers ------------------------------------------------------------ */

static void dependency_syntax(void **state) {
  (void)state;
  struct tw_dep_expr e;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_dep_parse("afterok:j-1:j-2,after:j-3+5", "d", &e, &err),
              TW_OK, err);
  TW_CHECK_INT(e.n, 3);
  TW_CHECK(!e.any);
  TW_CHECK_INT(e.t[2].kind, TW_DEP_AFTER);
  TW_CHECK_INT(e.t[2].delay_s, 300);
  TW_CHECK_STR(e.t[1].id, "j-2");
  tw_dep_release(&e);
  TW_CHECK_RC(tw_dep_parse("afterok:a?afternotok:b", "d", &e, &err), TW_OK,
              err);
  TW_CHECK(e.any);
  tw_dep_release(&e);
  static const struct {
    const char *in, *msg;
  } BAD[] = {
      {"afterok:a,afterok:b?afterok:c", "not both"},
      {"aftrok:a", "did you mean \"afterok\""},
      {"afterok", "needs at least one job id"},
      {"afterok:", "needs at least one job id"},
      {"afterok:a+5", "only allowed with after"},
      {"after:a+x", "whole minutes"},
      {"singleton:a", "singleton takes no job ids"},
      {"afterok:a,,afterok:b", "empty term"},
      {"afterok:a b", "may only contain"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_err e2 = {0};
    TW_CHECK(tw_dep_parse(BAD[i].in, "depends_on", &e, &e2) == TW_E_INVALID,
             "%s", BAD[i].in);
    TW_CHECK(strstr(e2.msg, BAD[i].msg) != NULL, "%s: %s", BAD[i].in, e2.msg);
    TW_CHECK_STR(e2.field, "depends_on");
  }
}

static void array_syntax(void **state) {
  (void)state;
  struct tw_array a;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_array_parse("0-999:2%10", "array", &a, &err), TW_OK, err);
  TW_CHECK_INT(a.n, 500);
  TW_CHECK_INT(a.idx[499], 998);
  TW_CHECK_INT(a.max_running, 10);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_array_to_text(&a, &b);
  TW_CHECK_STR(b.data, "0-998:2%10");
  tw_buf_release(&b);
  tw_array_release(&a);
  static const struct {
    const char *in, *msg;
  } BAD[] = {{"5-1", "runs backwards"},   {"1,1", "given twice"},
             {"0-9%0", "%N takes"},       {"a", "expected indices"},
             {"0-2000000", "at most"},    {"", "expected indices"}};
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_err e2 = {0};
    TW_CHECK(tw_array_parse(BAD[i].in, "array", &a, &e2) == TW_E_INVALID,
             "%s", BAD[i].in);
    TW_CHECK(strstr(e2.msg, BAD[i].msg) != NULL, "%s: %s", BAD[i].in, e2.msg);
  }
  /* the spec's field, canonical and back */
  const char *y = "name: a\narray: {indices: \"1,3,5-7\", max_running: 2, "
                  "sequential: true}\n";
  struct tw_job_spec spec;
  TW_CHECK_RC(tw_spec_parse(y, strlen(y), false, &spec, &err), TW_OK, err);
  TW_CHECK_STR(spec.array, "1-5:2,6-7%2");
  TW_CHECK(spec.array_sequential);
  tw_buf_init(&b);
  tw_spec_to_json(&spec, &b);
  struct tw_job_spec back;
  TW_CHECK_RC(tw_spec_parse(b.data, b.len, true, &back, &err), TW_OK, err);
  TW_CHECK_STR(back.array, "1-5:2,6-7%2");
  TW_CHECK(back.array_sequential);
  tw_spec_release(&back);
  tw_spec_release(&spec);
  tw_buf_release(&b);
  const char *bad = "name: a\ndepends_on: \"afterok\"\n";
  struct tw_err e3 = {0};
  TW_CHECK(tw_spec_parse(bad, strlen(bad), false, &spec, &e3) ==
           TW_E_INVALID);
  TW_CHECK_STR(e3.field, "depends_on");
}

/* AWS Batch SEQUENTIAL: task k after task k-1 succeeded; one failure stops
 * the rest. */
static void sequential_array(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char gid[32];
  submit(s, "name: sq\narray: {indices: \"0-3\", sequential: true}\n", gid,
         TW_OK);
  pass(s);
  char jobs[8][32];
  TW_CHECK_INT(task_jobs(s, gid, jobs, 8), 4);
  TW_CHECK(jobs[0][0] && !jobs[1][0], "only the first runs: [%s] [%s]",
           jobs[0], jobs[1]);
  drive(s, jobs[0], "ok");
  pass(s);
  task_jobs(s, gid, jobs, 8);
  TW_CHECK(jobs[1][0] && !jobs[2][0]);
  drive(s, jobs[1], "fail");
  pass(s);
  pass(s);
  struct tw_flow_rec g;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_STR(g.state, "failed");
  TW_CHECK_INT(g.succeeded, 1);
  TW_CHECK_INT(g.failed, 3); /* one ran and failed, two never could */
  close_store(s);
}

/* ---- workflows --------------------------------------------------------------- */

#define WF \
    "name: pipe\n" \
    "fail_fast: %s\n" \
    "tasks:\n" \
    "  - name: prep\n" \
    "    outputs: [{name: shards, uri: \"s3://b/shards/\", size: 200GB}]\n" \
    "    job: {resources: {cpus: 4}, run: prep.sh}\n" \
    "  - name: train\n" \
    "    depends: [prep]\n" \
    "    for_each: [\"0.1\", \"0.01\", \"0.001\"]\n" \
    "    job: {run: train.sh}\n" \
    "  - name: pick\n" \
    "    depends: [train]\n" \
    "    fan_in: %s\n" \
    "    job: {run: pick.sh}\n" \
    "  - name: report\n" \
    "    depends: [pick.ended]\n" \
    "    job: {run: report.sh}\n"

static void submit_wf(struct tw_store *s, const char *text, char gid[32]) {
  struct tw_flow_plan p;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_flow_doc_parse(text, strlen(text), false, NULL, &p, &err),
              TW_OK, err);
  char id[TW_FLOW_GID_LEN + 1];
  TW_CHECK_RC(tw_store_flow_submit(s, &p, 0, NULL, NULL, id, &err), TW_OK,
              err);
  snprintf(gid, 32, "%s", id);
  tw_flow_plan_release(&p);
}

static void workflow_fan_out_fan_in(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char doc[2048], gid[32];
  snprintf(doc, sizeof doc, WF, "false", "all");
  submit_wf(s, doc, gid);
  pass(s);
  char jobs[8][32];
  TW_CHECK_INT(task_jobs(s, gid, jobs, 8), 6);
  TW_CHECK(jobs[0][0] && !jobs[1][0], "prep first, alone");
  /* prep ran in aws:us-east-1: train reads its output there */
  struct tw_job_transition t = {.id = jobs[0],
                                .to = TW_JOB_PLACING,
                                .reason = "t",
                                .placement_json = "{\"provider\":\"aws\","
                                                  "\"region\":\"us-east-1\"}"};
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_job_transition(s, &t, NULL, &err), TW_OK, err);
  move(s, jobs[0], TW_JOB_PROVISIONING);
  move(s, jobs[0], TW_JOB_RUNNING);
  move(s, jobs[0], TW_JOB_SUCCEEDED);
  pass(s);
  task_jobs(s, gid, jobs, 8);
  for (int k = 1; k <= 3; k++) {
    TW_CHECK(jobs[k][0], "train %d released", k);
    struct tw_job_rec r;
    TW_CHECK_RC(tw_store_job_get(s, jobs[k], &r, &err), TW_OK, err);
    TW_CHECK(strstr(r.spec_json, "\"uri\":\"s3://b/shards/\"") &&
                 strstr(r.spec_json, "\"location\":\"aws:us-east-1\"") &&
                 strstr(r.spec_json, "\"size_bytes\":200000000000"),
             "%s", r.spec_json);
    TW_CHECK(strstr(r.spec_json, "\"TW_ITEM\":\"0.") != NULL);
    tw_job_rec_release(&r);
  }
  TW_CHECK(!jobs[4][0], "pick waits for every train");
  drive(s, jobs[1], "ok");
  drive(s, jobs[2], "ok");
  pass(s);
  task_jobs(s, gid, jobs, 8);
  TW_CHECK(!jobs[4][0], "fan-in all: still one train running");
  drive(s, jobs[3], "fail");
  pass(s);
  pass(s);
  /* pick can never run; report (pick.ended) runs anyway */
  struct tw_flow_task_rec *tr;
  size_t nt;
  TW_CHECK_RC(tw_store_flow_tasks(s, gid, -1, 10, &tr, &nt, &err), TW_OK, err);
  TW_CHECK_STR(tr[4].state, "failed");
  TW_CHECK_STR(tr[5].state, "released");
  tw_store_flow_tasks_free(tr, nt);
  task_jobs(s, gid, jobs, 8);
  drive(s, jobs[5], "ok");
  pass(s);
  struct tw_flow_rec g;
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_STR(g.state, "failed");
  TW_CHECK_INT(g.succeeded, 4);
  TW_CHECK_INT(g.failed, 2);
  /* the graph: every edge into the group, with its resolution */
  struct tw_flow_edge_rec *e;
  size_t ne;
  int64_t next;
  TW_CHECK_RC(tw_store_flow_edges(s, gid, 0, 100, &e, &ne, &next, &err), TW_OK,
              err);
  TW_CHECK_INT(ne, 3 + 3 + 1);
  TW_CHECK_INT(next, 0);
  free(e);
  close_store(s);
}

static void workflow_fan_in_any_and_fail_fast(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char doc[2048], gid[32], jobs[8][32];
  snprintf(doc, sizeof doc, WF, "false", "any");
  submit_wf(s, doc, gid);
  pass(s);
  task_jobs(s, gid, jobs, 8);
  drive(s, jobs[0], "ok");
  pass(s);
  task_jobs(s, gid, jobs, 8);
  drive(s, jobs[2], "ok");
  pass(s);
  task_jobs(s, gid, jobs, 8);
  TW_CHECK(jobs[4][0], "fan-in any: one train is enough");
  close_store(s);

  /* fail_fast: the first failure cancels the rest */
  s = open_store();
  snprintf(doc, sizeof doc, WF, "true", "all");
  submit_wf(s, doc, gid);
  pass(s);
  task_jobs(s, gid, jobs, 8);
  drive(s, jobs[0], "ok");
  pass(s);
  task_jobs(s, gid, jobs, 8);
  drive(s, jobs[1], "fail");
  pass(s);
  pass(s);
  TW_CHECK_INT(state_of(s, jobs[2], NULL, 0), TW_JOB_CANCELLED);
  struct tw_flow_rec g;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_STR(g.state, "failed");
  /* the train that failed and pick, which never could run; the other two
   * trains and report cancelled */
  TW_CHECK_INT(g.failed, 2);
  TW_CHECK_INT(g.cancelled, 3);
  TW_CHECK_INT(g.succeeded, 1);
  close_store(s);
}

static void bulk_cancel_and_progress(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char gid[32], jobs[64][32];
  submit(s, "name: big\narray: \"0-49%5\"\n", gid, TW_OK);
  pass(s);
  task_jobs(s, gid, jobs, 64);
  drive(s, jobs[0], "ok");
  drive(s, jobs[1], "run");
  pass(s);
  struct tw_flow_rec g;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_INT(g.n_tasks, 50);
  TW_CHECK_INT(g.succeeded, 1);
  TW_CHECK_INT(g.running, 1);
  TW_CHECK_INT(g.pending, 4);
  TW_CHECK_INT(g.ready, 44);
  int64_t n = 0;
  TW_CHECK_RC(tw_store_flow_cancel(s, gid, "by test", NULL, &n, &err), TW_OK,
              err);
  TW_CHECK_INT(n, 49);
  pass(s);
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_STR(g.state, "cancelled");
  TW_CHECK_INT(g.cancelled, 49);
  TW_CHECK_INT(state_of(s, jobs[1], NULL, 0), TW_JOB_CANCELLED);
  TW_CHECK(tw_store_flow_cancel(s, gid, "again", NULL, NULL, &err) ==
           TW_E_CONFLICT);
  TW_CHECK(tw_store_flow_cancel(s, "a-nope", "x", NULL, NULL, &err) ==
           TW_E_NOTFOUND);
  close_store(s);
}

static void unknown_dependency_is_refused(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char id[32];
  submit(s, "name: x\ndepends_on: \"afterok:j-doesnotexist\"\n", id,
         TW_E_INVALID);
  /* nothing stored */
  int64_t counts[TW_JOB_NSTATES];
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_job_counts(s, counts, &err), TW_OK, err);
  int64_t total = 0;
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    total += counts[i];
  TW_CHECK_INT(total, 0);
  close_store(s);
}

/* after:ID+minutes: met once the delay ran from the start. */
static void after_delay_elapses(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char up[32], me[32], y[256];
  submit(s, "name: u\n", up, TW_OK);
  snprintf(y, sizeof y, "name: d\ndepends_on: \"after:%s+2\"\n", up);
  submit(s, y, me, TW_OK);
  drive(s, up, "run");
  pass(s);
  TW_CHECK_INT(state_of(s, me, NULL, 0), TW_JOB_WAITING);
  tw_clock_advance(&clk, 119000);
  pass(s);
  TW_CHECK_INT(state_of(s, me, NULL, 0), TW_JOB_WAITING);
  tw_clock_advance(&clk, 2000);
  pass(s);
  TW_CHECK_INT(state_of(s, me, NULL, 0), TW_JOB_PENDING);
  /* the delay runs from the upstream's start, also when it started
   * before the dependent came: 3 minutes ago, +2 is due at once */
  char up2[32], me2[32];
  submit(s, "name: u2\n", up2, TW_OK);
  drive(s, up2, "run");
  tw_clock_advance(&clk, 180000);
  snprintf(y, sizeof y, "name: d2\ndepends_on: \"after:%s+2\"\n", up2);
  submit(s, y, me2, TW_OK);
  TW_CHECK_INT(state_of(s, me2, NULL, 0), TW_JOB_WAITING);
  pass(s);
  TW_CHECK_INT(state_of(s, me2, NULL, 0), TW_JOB_PENDING);
  close_store(s);
}

static void workflow_documents_refused(void **state) {
  (void)state;
  static const struct {
    const char *doc, *field, *msg;
  } BAD[] = {
      {"name: w\ntasks: []\n", "tasks", "non-empty"},
      {"name: w\ntasks:\n  - {name: a, job: {run: x}}\n  - {name: a, job: "
       "{run: y}}\n",
       "tasks[1].name", "names tasks[0] already"},
      {"name: w\ntasks:\n  - {name: a, job: {run: x}}\n  - {name: b, depends: "
       "[aa], job: {run: y}}\n",
       "tasks[1].depends[0]", "did you mean \"a\""},
      {"name: w\ntasks:\n  - {name: a, depends: [b], job: {run: x}}\n  - "
       "{name: b, depends: [a], job: {run: y}}\n",
       "tasks[0].depends", "cycle"},
      {"name: w\ntasks:\n  - {name: a, job: {resources: {cpus: eight}}}\n",
       "tasks[0].job.resources.cpus", "tasks[0].job.resources.cpus"},
      {"name: w\ntasks:\n  - {name: a, dependss: [b], job: {}}\n",
       "tasks[0].dependss", "did you mean \"depends\""},
      {"name: w\ntasks:\n  - {name: a, depends: [a.done], job: {}}\n",
       "tasks[0].depends[0]", "unknown condition"},
      {"name: w\ntasks:\n  - {name: a, job: {depends_on: \"afterok:j-1\"}}\n",
       "tasks[0].job.depends_on", "not inside a workflow"},
      {"name: w\nfail_fast: maybe\ntasks:\n  - {name: a, job: {}}\n",
       "fail_fast", "true or false"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    struct tw_flow_plan p;
    struct tw_err err = {0};
    TW_CHECK(tw_flow_doc_parse(BAD[i].doc, strlen(BAD[i].doc), false, NULL, &p,
                               &err) == TW_E_INVALID,
             "case %zu", i);
    TW_CHECK_STR(err.field, BAD[i].field);
    TW_CHECK(strstr(err.msg, BAD[i].msg) != NULL, "case %zu: %s", i, err.msg);
  }
}

/* A large fan-out: stored in one write, released a bounded batch per
 * pass (the figures are bench-workflow's). */
static void large_fan_out(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  const char *doc = "name: sweep\ntasks:\n"
                    "  - {name: t, for_each: \"0-19999\", job: {run: x}}\n"
                    "  - {name: best, depends: [t.ended], job: {run: y}}\n";
  char gid[32];
  submit_wf(s, doc, gid);
  pass(s);
  struct tw_flow_rec g;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_store_flow_get(s, gid, &g, &err), TW_OK, err);
  TW_CHECK_INT(g.n_tasks, 20001);
  TW_CHECK_INT(g.pending, 1000); /* the pass's release budget */
  TW_CHECK_INT(g.ready, 19000);
  TW_CHECK_INT(g.waiting, 1);
  close_store(s);
}

/* tw_store_flow_list: arrays and workflows (not a job's group of one),
 * newest first by created_at_ms then id, paged by that pair, filtered by
 * tenant and state.  Two groups share each millisecond, so the id breaks
 * the ties across a page boundary. */
static void list_pages_and_filters(void **state) {
  (void)state;
  struct tw_store *s = open_store();
  char g[5][32], dep[32];
  submit_wf(s, "name: w0\ntasks:\n  - {name: a, job: {run: a}}\n", g[0]);
  submit_wf(s, "name: w1\ntasks:\n  - {name: a, job: {run: a}}\n", g[1]);
  tw_clock_advance(&clk, 1000);
  submit(s, "name: arr\narray: \"0-3\"\n", g[2], TW_OK);
  submit_wf(s, "name: w3\ntenant: t2\ntasks:\n  - {name: a, job: {run: a}}\n",
            g[3]);
  tw_clock_advance(&clk, 1000);
  submit_wf(s, "name: w4\ntasks:\n  - {name: a, job: {run: a}}\n", g[4]);
  char y[128];
  snprintf(y, sizeof y, "name: after\ndepends_on: \"afterok:%s\"\n", g[0]);
  submit(s, y, dep, TW_OK); /* a job's group: never listed */
  /* the expected order: newest millisecond first, then id descending */
  const char *want[5] = {g[4], g[2], g[3], g[0], g[1]};
  if (strcmp(want[1], want[2]) < 0) {
    want[1] = g[3];
    want[2] = g[2];
  }
  if (strcmp(want[3], want[4]) < 0) {
    want[3] = g[1];
    want[4] = g[0];
  }
  struct tw_err err = {0};
  char ids[2][TW_FLOW_GID_LEN + 1];
  size_t n, seen = 0;
  int64_t next_ms = -1, before_ms = 0;
  char before_id[TW_FLOW_GID_LEN + 1] = "";
  int pages = 0;
  do {
    TW_CHECK_RC(tw_store_flow_list(s, NULL, NULL, before_ms,
                                   pages ? before_id : NULL, 2, ids, &n,
                                   &next_ms, &err),
                TW_OK, err);
    for (size_t i = 0; i < n; i++, seen++) {
      TW_CHECK(seen < 5, "more than five groups listed");
      TW_CHECK_STR(ids[i], want[seen]);
    }
    if (next_ms >= 0) {
      TW_CHECK_INT(n, 2);
      struct tw_flow_rec r;
      TW_CHECK_RC(tw_store_flow_get(s, ids[n - 1], &r, &err), TW_OK, err);
      TW_CHECK_INT(next_ms, r.created_ms);
      before_ms = next_ms;
      snprintf(before_id, sizeof before_id, "%s", ids[n - 1]);
    }
    pages++;
  } while (next_ms >= 0 && pages < 10);
  TW_CHECK_INT(seen, 5);
  TW_CHECK_INT(pages, 3);
  /* filters */
  TW_CHECK_RC(tw_store_flow_list(s, "t2", NULL, 0, NULL, 2, ids, &n, &next_ms,
                                 &err),
              TW_OK, err);
  TW_CHECK_INT(n, 1);
  TW_CHECK_STR(ids[0], g[3]);
  TW_CHECK_INT(next_ms, -1);
  TW_CHECK_RC(tw_store_flow_cancel(s, g[4], "by test", NULL, NULL, &err),
              TW_OK, err);
  pass(s);
  TW_CHECK_RC(tw_store_flow_list(s, NULL, "cancelled", 0, NULL, 2, ids, &n,
                                 &next_ms, &err),
              TW_OK, err);
  TW_CHECK_INT(n, 1);
  TW_CHECK_STR(ids[0], g[4]);
  TW_CHECK_RC(tw_store_flow_list(s, "nobody", NULL, 0, NULL, 2, ids, &n,
                                 &next_ms, &err),
              TW_OK, err);
  TW_CHECK_INT(n, 0);
  close_store(s);
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dependency_syntax),
      cmocka_unit_test(array_syntax),
      cmocka_unit_test(dependency_cases),
      cmocka_unit_test(array_cases),
      cmocka_unit_test(index_cases),
      cmocka_unit_test(throttle_cases),
      cmocka_unit_test(sequential_array),
      cmocka_unit_test(after_delay_elapses),
      cmocka_unit_test(unknown_dependency_is_refused),
      cmocka_unit_test(workflow_fan_out_fan_in),
      cmocka_unit_test(workflow_fan_in_any_and_fail_fast),
      cmocka_unit_test(bulk_cancel_and_progress),
      cmocka_unit_test(workflow_documents_refused),
      cmocka_unit_test(large_fan_out),
      cmocka_unit_test(list_pages_and_filters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
