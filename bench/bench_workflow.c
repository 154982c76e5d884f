/* bench_workflow.c - admitting and running large workflows and arrays
 * through the store's engine (broker/core/store_flow.h), on one core.
 *
 *   bench-workflow [--quick] [--smoke] [--tasks N] [--drain N]
 *
 * Figures, one `key value unit` line each (`#` lines give context):
 *   workflow_parse_ms, workflow_store_ms, workflow_admit_ms
 *       a document of N fanned-out tasks feeding one fan-in task (N edges)
 *       parsed, then stored in one write (default N = 100,000)
 *   workflow_admit_cpu_ms     the same in CPU time of the process (every
 *                             thread): what a loaded machine does not blur
 *   array_admit_ms, array_admit_cpu_ms
 *                             an array of N tasks ("0-(N-1)"), parsed and
 *                             stored
 *   pass_idle_ms, pass_idle_cpu_ms
 *                             a pass with nothing changed, beside the
 *                             N-task groups (the mean of 50)
 *   pass_100_small_ms, pass_100_large_ms
 *       a pass after 100 released jobs ended, with a 1,000-task array and
 *       with the N-task ones stored: the cost follows the change, not the
 *       size of the graph
 *   drain_tasks_per_s         an array of --drain tasks run to the end:
 *                             released by the passes, each job moved
 *                             through its states and ended (default 20,000;
 *                             --quick 5,000)
 * The store is a sqlite file in a fresh temp dir, synchronous=NORMAL (the
 * daemon's default is FULL; the figures are the engine's, not the disk's).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/core/flow.h"
#include "broker/core/job.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_flow.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, const struct tw_err *err) {
  fprintf(stderr, "bench-workflow: %s: %s\n", what, err ? err->msg : "");
  exit(1);
}

static struct tw_clock clk;
static char dir[64], path[128];

static struct tw_store *open_store(void) {
  snprintf(dir, sizeof dir, "/tmp/twbenchflowXXXXXX");
  if (!mkdtemp(dir))
    die("mkdtemp", NULL);
  snprintf(path, sizeof path, "%s/b.db", dir);
  tw_clock_fake_init(&clk, 1764460800000LL);
  struct tw_store_opts o = {.path = path, .clock = &clk, .sync_full = false};
  struct tw_store *s;
  struct tw_err err = {0};
  if (tw_store_open(&o, &s, &err))
    die("open store", &err);
  return s;
}

static void close_store(struct tw_store *s) {
  tw_store_close(s);
  static const char *const sfx[] = {"", "-wal", "-shm"};
  char p[256];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", path, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void array_plan(int n, struct tw_flow_plan *p) {
  char y[160];
  snprintf(y, sizeof y,
           "name: sweep\narray: \"0-%d\"\nresources: {cpus: 2}\nrun: x\n",
           n - 1);
  struct tw_job_spec s;
  struct tw_err err = {0};
  if (tw_spec_parse(y, strlen(y), false, &s, &err))
    die("array spec", &err);
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&s, &b);
  if (tw_flow_plan_from_spec(&s, b.data, p, &err))
    die("array plan", &err);
  tw_buf_release(&b);
  tw_spec_release(&s);
}

static void submit(struct tw_store *s, struct tw_flow_plan *p, char *gid) {
  struct tw_err err = {0};
  if (tw_store_flow_submit(s, p, 0, NULL, NULL, gid, &err))
    die("submit", &err);
}

static void pass(struct tw_store *s, int max_release,
                 struct tw_flow_pass_stats *st) {
  struct tw_err err = {0};
  if (tw_store_flow_pass(s, tw_clock_now_ms(&clk), max_release, st, &err))
    die("pass", &err);
}

static void move(struct tw_store *s, const char *id, enum tw_job_state to) {
  struct tw_job_transition t = {.id = id, .to = to, .reason = "bench"};
  struct tw_err err = {0};
  if (tw_store_job_transition(s, &t, NULL, &err))
    die("transition", &err);
}

static void finish(struct tw_store *s, const char *id) {
  move(s, id, TW_JOB_PLACING);
  move(s, id, TW_JOB_PROVISIONING);
  move(s, id, TW_JOB_RUNNING);
  move(s, id, TW_JOB_SUCCEEDED);
}

/* Ends up to n of the group's released jobs; how many it ended. */
static int end_released(struct tw_store *s, const char *gid, int n) {
  int done = 0;
  int64_t after = -1;
  while (done < n) {
    struct tw_flow_task_rec *t;
    size_t k;
    struct tw_err err = {0};
    if (tw_store_flow_tasks(s, gid, after, 5000, &t, &k, &err))
      die("tasks", &err);
    if (!k) {
      tw_store_flow_tasks_free(t, k);
      break;
    }
    for (size_t i = 0; i < k && done < n; i++)
      if (!strcmp(t[i].state, "released") &&
          !strcmp(t[i].job_state, "pending")) {
        finish(s, t[i].job_id);
        done++;
      }
    after = t[k - 1].idx;
    tw_store_flow_tasks_free(t, k);
  }
  return done;
}

/* A pass after `changes` released jobs of gid ended. */
static double pass_after_changes(struct tw_store *s, const char *gid,
                                 int changes) {
  struct tw_flow_pass_stats st;
  pass(s, changes, &st); /* release a batch */
  pass(s, 0, &st);       /* settle */
  end_released(s, gid, changes);
  double t0 = now_ms();
  pass(s, changes, &st);
  return now_ms() - t0;
}

int main(int argc, char **argv) {
  int n = 100000, drain = 20000;
  bool smoke = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      drain = 5000;
    else if (!strcmp(argv[i], "--smoke")) {
      smoke = true;
      n = 5000;
      drain = 500;
    } else if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
      n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--drain") && i + 1 < argc)
      drain = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench-workflow [--quick] [--smoke] [--tasks N] "
                      "[--drain N]\n");
      return 2;
    }
  }
  if (n < 1000 || n > TW_ARRAY_TASKS_MAX - 1 || drain < 1) {
    fprintf(stderr, "bench-workflow: --tasks 1000..%d, --drain >= 1\n",
            TW_ARRAY_TASKS_MAX - 1);
    return 2;
  }
  tw_log_set_level(TW_LOG_WARN);
  double load = 0;
  FILE *la = fopen("/proc/loadavg", "r");
  if (la) {
    if (fscanf(la, "%lf", &load) != 1)
      load = 0;
    fclose(la);
  }
  printf("# bench-workflow: %d tasks, drain %d, load average %.1f\n", n,
         drain, load);

  /* 1. a workflow document of n fanned-out tasks and one fan-in */
  struct tw_store *s = open_store();
  char doc[512];
  snprintf(doc, sizeof doc,
           "name: sweep\ntasks:\n"
           "  - {name: t, for_each: \"0-%d\", job: {resources: {cpus: 2}, "
           "run: train.sh}}\n"
           "  - {name: best, depends: [t.ended], job: {run: pick.sh}}\n",
           n - 1);
  struct tw_flow_plan p;
  struct tw_err err = {0};
  double c0 = cpu_ms(), t0 = now_ms();
  if (tw_flow_doc_parse(doc, strlen(doc), false, NULL, &p, &err))
    die("workflow", &err);
  double t1 = now_ms();
  char wid[TW_FLOW_GID_LEN + 1];
  submit(s, &p, wid);
  double t2 = now_ms(), c2 = cpu_ms();
  printf("workflow_parse_ms %.1f ms\n", t1 - t0);
  printf("workflow_store_ms %.1f ms\n", t2 - t1);
  printf("workflow_admit_ms %.1f ms\n", t2 - t0);
  printf("workflow_admit_cpu_ms %.1f ms\n", c2 - c0);
  printf("# %zu tasks, %zu edges\n", p.n_tasks, p.n_edges);
  tw_flow_plan_release(&p);

  /* 2. an array of n tasks */
  c0 = cpu_ms();
  t0 = now_ms();
  array_plan(n, &p);
  char aid[TW_FLOW_GID_LEN + 1];
  submit(s, &p, aid);
  t1 = now_ms();
  printf("array_admit_ms %.1f ms\n", t1 - t0);
  printf("array_admit_cpu_ms %.1f ms\n", cpu_ms() - c0);
  tw_flow_plan_release(&p);

  /* 3. what a pass costs: nothing changed, then 100 changes beside the
   * large groups */
  struct tw_flow_pass_stats st;
  pass(s, 256, &st);
  pass(s, 0, &st);
  c0 = cpu_ms();
  t0 = now_ms();
  for (int i = 0; i < 50; i++)
    pass(s, 0, &st);
  printf("pass_idle_ms %.2f ms\n", (now_ms() - t0) / 50);
  printf("pass_idle_cpu_ms %.3f ms\n", (cpu_ms() - c0) / 50);
  double large = pass_after_changes(s, aid, 100);
  close_store(s);

  s = open_store();
  array_plan(1000, &p);
  char small_id[TW_FLOW_GID_LEN + 1];
  submit(s, &p, small_id);
  tw_flow_plan_release(&p);
  double small = pass_after_changes(s, small_id, 100);
  close_store(s);
  printf("pass_100_small_ms %.2f ms\n", small);
  printf("pass_100_large_ms %.2f ms\n", large);
  printf("# the same 100 changes with a 1000-task graph and with two "
         "%d-task graphs stored\n",
         n);

  /* 4. an array run to the end */
  s = open_store();
  array_plan(drain, &p);
  char did[TW_FLOW_GID_LEN + 1];
  submit(s, &p, did);
  tw_flow_plan_release(&p);
  t0 = now_ms();
  int ended = 0;
  for (int round = 0; round < 100000; round++) {
    pass(s, 1024, &st);
    int k = end_released(s, did, 1 << 30);
    ended += k;
    struct tw_flow_rec g;
    if (tw_store_flow_get(s, did, &g, &err))
      die("get", &err);
    if (strcmp(g.state, "running")) {
      if (strcmp(g.state, "succeeded") || g.succeeded != drain) {
        fprintf(stderr, "bench-workflow: drained to %s with %lld of %d\n",
                g.state, (long long)g.succeeded, drain);
        return 1;
      }
      break;
    }
  }
  t1 = now_ms();
  close_store(s);
  printf("drain_tasks_per_s %.0f tasks/s\n", ended / ((t1 - t0) / 1e3));
  printf("# each task: released, 4 job transitions, its end seen by a pass\n");
  if (smoke && (large > 50 * (small + 1)))
    return 1;
  return 0;
}
