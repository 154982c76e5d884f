/* test_slurm_json.c - the slurmrestd v0.0.38 parsers and builders of the
 * Slurm adapter (providers/slurm/slurm_json.c).
 *
 * Two sources of real answers:
 *  - the samples recorded by the reference setup, read from
 *    $TRADEWIND_SLURM_SAMPLES (default $TW_SOURCE_DIR/../shared/slurm/
 *    samples); those checks are skipped when the directory is absent;
 *  - answers recorded from the project's own cluster (scripts/slurm.sh)
 *    kept as the fuzz corpus, tests/fuzz/corpus/slurm_json/recorded-*.
 * The rest are tables: GRES strings, hostlists, wait statuses, job states
 * and error classes. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/slurm/slurm_json.h"
#include "broker/core/spec.h"

static char *slurp(const char *dir, const char *name, size_t *len) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return tw_buf_detach(&b);
}

/* ---- the reference samples --------------------------------------------- */

static void test_samples(void **state) {
  char dir[1024];
  const char *env = getenv("TRADEWIND_SLURM_SAMPLES");
  const char *src = getenv("TW_SOURCE_DIR");
  if (env && *env)
    snprintf(dir, sizeof dir, "%s", env);
  else
    snprintf(dir, sizeof dir, "%s/../shared/slurm/samples", src ? src : ".");
  size_t len;
  char *nodes_body = slurp(dir, "nodes-get-v0.0.38.json", &len);
  if (!nodes_body) {
    printf("samples: SKIPPED: no recorded samples in %s\n", dir);
    skip();
  }
  struct tw_err err = {0};
  struct slurm_node *nodes = NULL;
  size_t n = 0;
  TW_CHECK(slurm_parse_nodes(nodes_body, len, &nodes, &n, &err) == TW_OK);
  TW_CHECK_INT(n, 2);
  if (n == 2) {
    TW_CHECK_STR(nodes[0].name, "node1");
    TW_CHECK_STR(nodes[1].name, "node2");
    TW_CHECK_STR(nodes[0].state, "idle");
    TW_CHECK(nodes[0].usable && !nodes[0].down);
    TW_CHECK_INT(nodes[0].cpus, 8);
    TW_CHECK_INT(nodes[0].alloc_cpus, 0);
    TW_CHECK_INT(nodes[0].memory_mb, 8000);
    TW_CHECK_INT(nodes[0].gpus, 2); /* "gpu:2": untyped */
    TW_CHECK_STR(nodes[0].gpu_type, "");
    TW_CHECK_INT(nodes[0].gpus_used, 0);
    TW_CHECK_INT(nodes[0].n_partitions, 1);
    TW_CHECK_STR(nodes[0].partitions[0], "debug");
    TW_CHECK(nodes[0].arch == TW_ARCH_X86_64);
    TW_CHECK_STR(nodes[0].rack, "");
  }
  free(nodes);
  free(nodes_body);

  char *job_body = slurp(dir, "job-get-v0.0.38.json", &len);
  TW_CHECK(job_body != NULL);
  if (job_body) {
    struct slurm_job *jobs = NULL;
    TW_CHECK(slurm_parse_jobs(job_body, len, &jobs, &n, &err) == TW_OK);
    TW_CHECK_INT(n, 1);
    if (n == 1) {
      TW_CHECK_INT(jobs[0].id, 7);
      TW_CHECK_STR(jobs[0].name, "rest-test");
      TW_CHECK_STR(jobs[0].state, "RUNNING");
      TW_CHECK_STR(jobs[0].partition, "debug");
      TW_CHECK_STR(jobs[0].nodes, "node1");
      TW_CHECK_INT(jobs[0].gpus, 1); /* tres_per_node "gres:gpu:1" */
      TW_CHECK_INT(jobs[0].cpus, 2);
      TW_CHECK_INT(jobs[0].memory_per_node_mb, 1024);
      TW_CHECK_INT(jobs[0].start_time, 1795993016);
      struct slurm_state_map m;
      slurm_map_state(&jobs[0], &m);
      TW_CHECK(m.state == TW_INST_RUNNING && !m.finished && !m.requeued);
    }
    free(jobs);
    free(job_body);
  }

  char *sub_body = slurp(dir, "submit-response-v0.0.38.json", &len);
  TW_CHECK(sub_body != NULL);
  if (sub_body) {
    int64_t id;
    struct slurm_error se;
    TW_CHECK(slurm_parse_submit(sub_body, len, &id, &se, &err) == TW_OK);
    TW_CHECK_INT(id, 7);
    TW_CHECK_INT(se.code, 0);
    free(sub_body);
  }

  /* Our builder, given the values of the recorded request, writes the
   * same job fields (the request is known to be accepted). */
  char *req_body = slurp(dir, "submit-request-v0.0.38.json", &len);
  TW_CHECK(req_body != NULL);
  if (req_body) {
    json_error_t je;
    json_t *want = json_loadb(req_body, len, 0, &je);
    TW_CHECK(want != NULL);
    struct tw_kv kv[] = {{"PATH", "/usr/bin:/bin"}, {"BROKER_TAG", "abc"}};
    struct slurm_submit s = {
        .script = json_string_value(json_object_get(want, "script")),
        .name = "rest-test",
        .partition = "debug",
        .nodes = 1,
        .cpus = 2,
        .memory_mb = 1024,
        .gpus = 1,
        .time_limit_min = 5,
        .cwd = "/tmp/slurm-ci/jobs",
        .output = "/tmp/slurm-ci/jobs/rest-%j.out",
        .env = kv,
        .n_env = 2};
    struct tw_buf out;
    tw_buf_init(&out);
    slurm_submit_json(&s, &out);
    json_t *got = json_loadb(out.data, out.len, 0, &je);
    TW_CHECK(got != NULL);
    if (want && got) {
      TW_CHECK(json_equal(json_object_get(want, "script"),
                          json_object_get(got, "script")));
      json_t *wj = json_object_get(want, "job"),
             *gj = json_object_get(got, "job");
      const char *key;
      json_t *v;
      json_object_foreach(wj, key, v) {
        int same = json_equal(v, json_object_get(gj, key));
        if (!same)
          fprintf(stderr, "submit field %s differs\n", key);
        TW_CHECK(same);
      }
    }
    json_decref(want);
    json_decref(got);
    tw_buf_release(&out);
    free(req_body);
  }
}

/* ---- answers recorded from the project's cluster ------------------------ */

static void test_recorded(void **state) {
  char dir[1024];
  const char *src = getenv("TW_SOURCE_DIR");
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/slurm_json", src ? src : ".");
  size_t len;
  struct tw_err err = {0};
  size_t n = 0;

  char *b = slurp(dir, "recorded-nodes-typed-gres.json", &len);
  TW_CHECK(b != NULL);
  struct slurm_node *nodes = NULL;
  if (b && slurm_parse_nodes(b, len, &nodes, &n, &err) == TW_OK) {
    TW_CHECK_INT(n, 4);
    int seen_gpu1 = 0;
    for (size_t i = 0; i < n; i++) {
      if (!strcmp(nodes[i].name, "gpu1")) {
        seen_gpu1 = 1;
        TW_CHECK_STR(nodes[i].state, "mixed");
        TW_CHECK(nodes[i].usable);
        TW_CHECK_STR(nodes[i].gpu_type, "a100");
        TW_CHECK_INT(nodes[i].gpus, 2);
        TW_CHECK_INT(nodes[i].gpus_used, 1); /* "gpu:a100:1(IDX:0)" */
        TW_CHECK_INT(nodes[i].alloc_cpus, 4);
        TW_CHECK_INT(nodes[i].alloc_memory_mb, 4000);
        TW_CHECK_STR(nodes[i].rack, "r1");
        TW_CHECK_STR(nodes[i].partitions[0], "gpu");
      }
      if (!strcmp(nodes[i].name, "cpu2")) {
        TW_CHECK_INT(nodes[i].gpus, 0);
        TW_CHECK_STR(nodes[i].rack, "r2");
      }
    }
    TW_CHECK(seen_gpu1);
  }
  free(nodes);
  free(b);

  b = slurp(dir, "recorded-partitions.json", &len);
  struct slurm_partition *parts = NULL;
  TW_CHECK(b && slurm_parse_partitions(b, len, &parts, &n, &err) == TW_OK);
  if (parts) {
    TW_CHECK_INT(n, 2);
    for (size_t i = 0; i < n; i++) {
      TW_CHECK(parts[i].up);
      TW_CHECK_INT(parts[i].max_time_min, -1);
      TW_CHECK(parts[i].is_default == !strcmp(parts[i].name, "cpu"));
    }
  }
  free(parts);
  free(b);

  b = slurp(dir, "recorded-jobs-mixed.json", &len);
  struct slurm_job *jobs = NULL;
  TW_CHECK(b && slurm_parse_jobs(b, len, &jobs, &n, &err) == TW_OK);
  int found = 0;
  for (size_t i = 0; jobs && i < n; i++) {
    struct slurm_state_map m;
    slurm_map_state(&jobs[i], &m);
    if (!strcmp(jobs[i].name, "tw-tok0")) { /* echo; exit 0 */
      found++;
      TW_CHECK(m.state == TW_INST_TERMINATED && m.finished && m.exit_code == 0);
    } else if (!strcmp(jobs[i].name, "tw-tok3")) { /* exit 3: status 768 */
      found++;
      TW_CHECK_INT(jobs[i].raw_exit, 768);
      TW_CHECK(m.state == TW_INST_TERMINATED && m.finished && m.exit_code == 3);
    } else if (!strcmp(jobs[i].name, "tw-tokA")) { /* sleeping */
      found++;
      TW_CHECK(m.state == TW_INST_RUNNING && !m.finished);
      TW_CHECK_STR(jobs[i].features, "rack=r1");
      TW_CHECK_STR(jobs[i].gpu_type, "a100");
      TW_CHECK_INT(jobs[i].gpus, 1);
      struct slurm_tags t;
      TW_CHECK(slurm_tags_parse(jobs[i].comment, &t));
      TW_CHECK_STR(t.job, "j-1");
      TW_CHECK_STR(t.attempt, "tokA");
      TW_CHECK_STR(t.tenant, "acme");
      TW_CHECK_STR(t.type, "c4-m4000-a100x1");
    } else if (!strcmp(jobs[i].name, "tw-tokB")) { /* held */
      found++;
      TW_CHECK(m.state == TW_INST_PENDING);
      TW_CHECK_INT(jobs[i].memory_per_node_mb, 1000);
    }
  }
  TW_CHECK_INT(found, 4);
  free(jobs);
  free(b);

  struct slurm_error se;
  int64_t id;
  b = slurp(dir, "recorded-submit-held.json", &len);
  TW_CHECK(b && slurm_parse_submit(b, len, &id, &se, &err) == TW_OK);
  TW_CHECK(id > 0); /* a job id next to an error is a success */
  TW_CHECK_INT(se.code, 2042);
  free(b);
  b = slurp(dir, "recorded-submit-2014.json", &len);
  TW_CHECK(b && slurm_parse_submit(b, len, &id, &se, &err) == TW_OK);
  TW_CHECK_INT(id, -1);
  TW_CHECK_INT(se.code, 2014);
  TW_CHECK(slurm_classify(500, se.code) == TW_E_CAPACITY);
  free(b);
  b = slurp(dir, "recorded-job-2017.json", &len);
  TW_CHECK(b && slurm_parse_errors(b, len, &se) == 1);
  TW_CHECK_INT(se.code, 2017);
  TW_CHECK(strstr(se.text, "JobId=999") != NULL);
  TW_CHECK(slurm_classify(500, se.code) == TW_E_NOTFOUND);
  free(b);
  b = slurp(dir, "recorded-nodes-badjwt.json", &len);
  TW_CHECK(b && slurm_parse_errors(b, len, &se) == 1);
  TW_CHECK_INT(se.code, -1); /* ambiguous: the adapter probes */
  free(b);
  b = slurp(dir, "recorded-delete-badjwt.json", &len);
  TW_CHECK(b && slurm_parse_errors(b, len, &se) == 1);
  TW_CHECK_INT(se.code, 5005);
  TW_CHECK(slurm_classify(500, se.code) == TW_E_AUTH);
  free(b);
}

/* ---- tables ------------------------------------------------------------- */

static void test_gres(void **state) {
  static const struct {
    const char *in;
    int gpus;
    const char *type;
  } cases[] = {
      {"gpu:2", 2, ""},
      {"gpu:a100:2", 2, "a100"},
      {"gpu:a100:1(IDX:0)", 1, "a100"},
      {"gpu:a100:0(IDX:N/A)", 0, ""},
      {"gres:gpu:a100:1", 1, "a100"},
      {"gres:gpu:1", 1, ""},
      {"gpu", 1, ""},
      {"gpu:h100", 1, "h100"},
      {"(null)", 0, ""},
      {"", 0, ""},
      {"shard:4,gpu:v100:2(S:0-1),gpu:a100:1", 3, "v100"},
      {"gpu:a100:2(IDX:0,1),license:3", 2, "a100"},
      {"gpu:x:-3", 0, ""},
      {"gpus:3", 0, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char type[32];
    int g = slurm_gres_gpus(cases[i].in, type, sizeof type);
    if (g != cases[i].gpus || strcmp(type, cases[i].type))
      fprintf(stderr, "gres \"%s\": got %d \"%s\"\n", cases[i].in, g, type);
    TW_CHECK_INT(g, cases[i].gpus);
    TW_CHECK_STR(type, cases[i].type);
  }
  TW_CHECK_INT(slurm_gres_gpus(NULL, NULL, 0), 0);
}

static void test_hostlist(void **state) {
  TW_CHECK(slurm_hostlist_has("gpu1", "gpu1"));
  TW_CHECK(!slurm_hostlist_has("gpu1", "gpu10"));
  TW_CHECK(slurm_hostlist_has("gpu[1-2],cpu1", "gpu2"));
  TW_CHECK(slurm_hostlist_has("gpu[1-2],cpu1", "cpu1"));
  TW_CHECK(!slurm_hostlist_has("gpu[1-2],cpu1", "cpu2"));
  TW_CHECK(!slurm_hostlist_has("gpu[1-2],cpu1", "gpu3"));
  TW_CHECK(slurm_hostlist_has("node[1-3,7]", "node7"));
  TW_CHECK(!slurm_hostlist_has("node[1-3,7]", "node5"));
  TW_CHECK(slurm_hostlist_has("n[01-10]", "n07"));
  TW_CHECK(!slurm_hostlist_has("n[01-10]", "n7")); /* padded: width matters */
  TW_CHECK(slurm_hostlist_has("rack1-n[1-4000000000]", "rack1-n3999999999"));
  TW_CHECK(slurm_hostlist_has("a[1-2]b", "a2b"));
  TW_CHECK(!slurm_hostlist_has("a[1-2]b", "a2"));
  TW_CHECK(!slurm_hostlist_has("", "gpu1"));
  TW_CHECK(!slurm_hostlist_has("gpu[", "gpu1"));
  TW_CHECK(!slurm_hostlist_has(NULL, "gpu1"));
}

static void test_exit_and_states(void **state) {
  TW_CHECK_INT(slurm_exit_code(0), 0);
  TW_CHECK_INT(slurm_exit_code(768), 3);
  TW_CHECK_INT(slurm_exit_code(255 << 8), 255);
  TW_CHECK_INT(slurm_exit_code(9), 137); /* killed by SIGKILL */
  TW_CHECK_INT(slurm_exit_code(15), 143);
  TW_CHECK_INT(slurm_exit_code(-1), -1);

  static const struct {
    const char *state;
    int64_t raw;
    int restarts;
    enum tw_instance_state want;
    bool finished;
    int code;
    bool requeued;
  } cases[] = {
      {"PENDING", -1, 0, TW_INST_PENDING, false, 0, false},
      {"PENDING", -1, 1, TW_INST_PENDING, false, 0, true},
      {"RUNNING", 0, 0, TW_INST_RUNNING, false, 0, false},
      {"RUNNING", 0, 2, TW_INST_RUNNING, false, 0, true},
      {"COMPLETING", 0, 0, TW_INST_RUNNING, false, 0, false},
      {"COMPLETED", 0, 0, TW_INST_TERMINATED, true, 0, false},
      {"FAILED", 768, 0, TW_INST_TERMINATED, true, 3, false},
      {"FAILED", 0, 0, TW_INST_TERMINATED, true, 1, false},
      {"TIMEOUT", 0, 0, TW_INST_TERMINATED, true, 124, false},
      {"OUT_OF_MEMORY", 0, 0, TW_INST_TERMINATED, true, 137, false},
      {"CANCELLED", 15, 0, TW_INST_TERMINATED, false, 0, false},
      {"NODE_FAIL", 0, 0, TW_INST_TERMINATED, false, 0, false},
      {"PREEMPTED", 0, 0, TW_INST_TERMINATED, false, 0, false},
      {"BOOT_FAIL", 0, 0, TW_INST_TERMINATED, false, 0, false},
      {"NODE_FAIL", 0, 1, TW_INST_TERMINATED, false, 0, false},
      {"SOMETHING_NEW", 0, 0, TW_INST_UNKNOWN, false, 0, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct slurm_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.state, sizeof j.state, "%s", cases[i].state);
    j.raw_exit = cases[i].raw;
    j.restart_cnt = cases[i].restarts;
    struct slurm_state_map m;
    slurm_map_state(&j, &m);
    if (m.state != cases[i].want || m.finished != cases[i].finished ||
        m.exit_code != cases[i].code || m.requeued != cases[i].requeued)
      fprintf(stderr,
              "state %s restarts %d: got %s finished=%d code=%d "
              "requeued=%d\n",
              cases[i].state, cases[i].restarts, tw_instance_state_str(m.state),
              m.finished, m.exit_code, m.requeued);
    TW_CHECK(m.state == cases[i].want);
    TW_CHECK(m.finished == cases[i].finished);
    TW_CHECK_INT(m.exit_code, cases[i].code);
    TW_CHECK(m.requeued == cases[i].requeued);
  }
}

static void test_classify(void **state) {
  TW_CHECK(slurm_classify(401, 0) == TW_E_AUTH);
  TW_CHECK(slurm_classify(500, 5005) == TW_E_AUTH);
  TW_CHECK(slurm_classify(500, 1007) == TW_E_AUTH);
  TW_CHECK(slurm_classify(500, 1800) == TW_E_RETRYABLE); /* slurmctld down */
  TW_CHECK(slurm_classify(500, 1003) == TW_E_RETRYABLE);
  TW_CHECK(slurm_classify(500, 2017) == TW_E_NOTFOUND);
  TW_CHECK(slurm_classify(500, 2000) == TW_E_CAPACITY);
  TW_CHECK(slurm_classify(500, 2014) == TW_E_CAPACITY);
  TW_CHECK(slurm_classify(500, 2015) == TW_E_CAPACITY);
  TW_CHECK(slurm_classify(500, 2029) == TW_E_CAPACITY);
  TW_CHECK(slurm_classify(500, 2051) == TW_E_INVALID);
  TW_CHECK(slurm_classify(500, -1) == TW_E_RETRYABLE);
  TW_CHECK(slurm_classify(500, 0) == TW_E_RETRYABLE);
  TW_CHECK(slurm_classify(503, 0) == TW_E_RETRYABLE);
  TW_CHECK(slurm_classify(400, 0) == TW_E_INVALID);
  TW_CHECK(slurm_classify(404, 0) == TW_E_NOTFOUND);
  TW_CHECK(slurm_classify(0, 0) == TW_E_RETRYABLE);
}

static void test_tags(void **state) {
  struct slurm_tags t, back;
  memset(&t, 0, sizeof t);
  snprintf(t.job, sizeof t.job, "job 1=%%x");
  snprintf(t.attempt, sizeof t.attempt, "a-2");
  snprintf(t.tenant, sizeof t.tenant, "acme corp");
  snprintf(t.type, sizeof t.type, "c4-m4000-a100x1");
  struct tw_buf b;
  tw_buf_init(&b);
  slurm_tags_format(&t, &b);
  TW_CHECK(strchr(b.data + 10, '=') != NULL);
  TW_CHECK(strstr(b.data, "job 1") == NULL); /* spaces are encoded */
  TW_CHECK(slurm_tags_parse(b.data, &back));
  TW_CHECK_STR(back.job, t.job);
  TW_CHECK_STR(back.attempt, t.attempt);
  TW_CHECK_STR(back.tenant, t.tenant);
  TW_CHECK_STR(back.type, t.type);
  tw_buf_release(&b);
  TW_CHECK(!slurm_tags_parse("tradewinds job=x", &back));
  TW_CHECK(!slurm_tags_parse("", &back));
  TW_CHECK(!slurm_tags_parse(NULL, &back));
  TW_CHECK(slurm_tags_parse("tradewind job=%zz attempt=ok", &back));
  TW_CHECK_STR(back.job, ""); /* malformed escape: dropped, not guessed */
  TW_CHECK_STR(back.attempt, "ok");
  TW_CHECK(slurm_tags_parse("tradewind job=%00 x y=", &back));
  TW_CHECK_STR(back.job, "");
}

static void test_submit_json(void **state) {
  struct slurm_submit s = {.name = "tw-abc",
                           .comment = "tradewind job=j",
                           .partition = "gpu",
                           .constraints = "rack=r1",
                           .nodes = 2,
                           .cpus = 4,
                           .memory_mb = 4000,
                           .gpu_type = "a100",
                           .gpus = 1,
                           .time_limit_min = 3,
                           .cwd = "/o",
                           .output = "/o/tw-%j.out"};
  struct tw_buf b;
  tw_buf_init(&b);
  slurm_submit_json(&s, &b);
  json_error_t je;
  json_t *root = json_loadb(b.data, b.len, 0, &je);
  TW_CHECK(root != NULL);
  json_t *job = json_object_get(root, "job");
  TW_CHECK_STR(json_string_value(json_object_get(root, "script")),
               "#!/bin/sh\ntrue\n"); /* no script: true */
  TW_CHECK_STR(json_string_value(json_object_get(job, "gres")), "gpu:a100:1");
  TW_CHECK_STR(json_string_value(json_object_get(job, "constraints")),
               "rack=r1");
  TW_CHECK_INT(json_integer_value(json_object_get(job, "nodes")), 2);
  TW_CHECK_INT(json_integer_value(json_object_get(job, "tasks")), 2);
  TW_CHECK_INT(json_integer_value(json_object_get(job, "tasks_per_node")), 1);
  TW_CHECK_INT(json_integer_value(json_object_get(job, "cpus_per_task")), 4);
  TW_CHECK_INT(json_integer_value(json_object_get(job, "time_limit")), 3);
  TW_CHECK_STR(json_string_value(json_object_get(job, "standard_error")),
               "/o/tw-%j.out");
  /* slurmrestd refuses a submission without an environment */
  TW_CHECK(json_object_size(json_object_get(job, "environment")) == 1);
  json_decref(root);

  tw_buf_reset(&b);
  s.script = "echo hi";
  s.gpus = 0;
  s.nodes = 1;
  slurm_submit_json(&s, &b);
  root = json_loadb(b.data, b.len, 0, &je);
  TW_CHECK_STR(json_string_value(json_object_get(root, "script")),
               "#!/bin/sh\necho hi\n");
  TW_CHECK(json_object_get(json_object_get(root, "job"), "gres") == NULL);
  TW_CHECK(json_object_get(json_object_get(root, "job"), "tasks_per_node") ==
           NULL);
  json_decref(root);

  tw_buf_reset(&b);
  s.script = "#!/bin/bash\necho \xff\n"; /* not UTF-8: kept, replaced */
  slurm_submit_json(&s, &b);
  root = json_loadb(b.data, b.len, 0, &je);
  TW_CHECK(root != NULL);
  TW_CHECK(!strncmp(json_string_value(json_object_get(root, "script")),
                    "#!/bin/bash\necho ", 17));
  json_decref(root);
  tw_buf_release(&b);
}

static void b64url(const char *in, char *out) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t n = strlen(in), k = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned char)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned char)in[i + 1] << 8;
    if (i + 2 < n)
      v |= (unsigned char)in[i + 2];
    out[k++] = a[(v >> 18) & 63];
    out[k++] = a[(v >> 12) & 63];
    if (i + 1 < n)
      out[k++] = a[(v >> 6) & 63];
    if (i + 2 < n)
      out[k++] = a[v & 63];
  }
  out[k] = '\0';
}

static void test_jwt(void **state) {
  char h[64], p[128], tok[256];
  b64url("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", h);
  b64url("{\"exp\":1795997268,\"iat\":1795990000,\"sun\":\"root\"}", p);
  snprintf(tok, sizeof tok, "%s.%s.c2lnbmF0dXJl", h, p);
  TW_CHECK_INT(slurm_jwt_exp(tok), 1795997268);
  b64url("{\"iat\":1,\"sun\":\"root\"}", p);
  snprintf(tok, sizeof tok, "%s.%s.x", h, p);
  TW_CHECK_INT(slurm_jwt_exp(tok), -1);
  TW_CHECK_INT(slurm_jwt_exp("not-a-jwt"), -1);
  TW_CHECK_INT(slurm_jwt_exp("a.!!!.b"), -1);
  TW_CHECK_INT(slurm_jwt_exp(NULL), -1);
}

static void test_malformed(void **state) {
  struct tw_err err = {0};
  struct slurm_node *nodes = NULL;
  struct slurm_job *jobs = NULL;
  size_t n = 9;
  TW_CHECK(slurm_parse_nodes("Authentication failure", 22, &nodes, &n, &err) ==
           TW_E_INVALID);
  TW_CHECK(nodes == NULL && n == 0);
  memset(&err, 0, sizeof err);
  TW_CHECK(slurm_parse_jobs("{\"errors\":[]}", 13, &jobs, &n, &err) ==
           TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "jobs") != NULL);
  /* nulls and wrong types read as defaults */
  const char *odd = "{\"jobs\":[{\"job_id\":5,\"name\":null,\"cpus\":\"x\","
                    "\"exit_code\":null,\"job_state\":7},{\"job_id\":-3}]}";
  TW_CHECK(slurm_parse_jobs(odd, strlen(odd), &jobs, &n, &err) == TW_OK);
  TW_CHECK_INT(n, 1);
  if (n == 1) {
    TW_CHECK_INT(jobs[0].raw_exit, -1);
    TW_CHECK_STR(jobs[0].state, "");
  }
  free(jobs);
  struct slurm_error se;
  TW_CHECK_INT(slurm_parse_errors("[1,2]", 5, &se), 0);
  TW_CHECK_INT(slurm_parse_errors("{\"errors\":[{}]}", 15, &se), 1);
  TW_CHECK_STR(se.text, "unspecified error");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_recorded),
      cmocka_unit_test(test_gres),
      cmocka_unit_test(test_hostlist),
      cmocka_unit_test(test_exit_and_states),
      cmocka_unit_test(test_classify),
      cmocka_unit_test(test_tags),
      cmocka_unit_test(test_submit_json),
      cmocka_unit_test(test_jwt),
      cmocka_unit_test(test_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
