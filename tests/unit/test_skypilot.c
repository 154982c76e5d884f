/* test_skypilot.c - SkyPilot task files read as job specs
 * (broker/core/skypilot.h): the three task files of tests/ux/skypilot/
 * translated to the spec they mean, a bad file's every error reported at
 * once with its key path and line, detection, and the round trip of the
 * printed spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/node.h"
#include "broker/core/skypilot.h"
#include "broker/core/spec.h"

static const char *const PROVIDERS[] = {"aws", "azure", "alibaba", "slurm",
                                        "local", NULL};
static const char *const FALLBACKS[] = {"failover", "eager-next-region",
                                        "on-demand-fallback", "deadline", NULL};
static const struct tw_spec_opts OPTS = {.providers = PROVIDERS,
                                         .fallbacks = FALLBACKS};

static char *slurp(const char *name, size_t *len) {
  const char *src = getenv("TW_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/ux/skypilot/%s", src ? src : ".",
           name);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(1 << 16);
  *len = fread(buf, 1, (1 << 16) - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

/* The canonical JSON of a task file, read through tw_spec_parse_any. */
static char *canon_of(const char *text, size_t len, bool *sky,
                      struct tw_spec_errs *errs) {
  struct tw_job_spec s;
  struct tw_err err = {0};
  if (tw_spec_parse_any(text, len, false, &OPTS, &s, errs, sky, &err)) {
    for (size_t i = 0; i < errs->n; i++)
      fprintf(stderr, "  %s\n", errs->v[i].msg);
    return NULL;
  }
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&s, &b);
  tw_spec_release(&s);
  return tw_buf_detach(&b);
}

static char *canon_file(const char *name) {
  size_t len = 0;
  char *text = slurp(name, &len);
  if (!text)
    return NULL;
  bool sky = false;
  struct tw_spec_errs errs;
  char *c = canon_of(text, len, &sky, &errs);
  free(text);
  if (c && !sky) {
    free(c);
    return NULL;
  }
  return c;
}

static void contains(const char *hay, const char *needle) {
  TW_CHECK(hay && strstr(hay, needle), "%s lacks %s", hay ? hay : "(null)",
           needle);
}

static void test_training_job(void **state) {
  (void)state;
  char *c = canon_file("train.yaml");
  TW_CHECK(c != NULL, "train.yaml was refused");
  contains(c, "\"name\":\"finetune-llama\"");
  /* {A100:8, H100:8}: either one */
  contains(c, "\"accelerators\":[{\"name\":\"A100\",\"count\":8},"
              "{\"name\":\"H100\",\"count\":8}]");
  contains(c, "\"cpus\":8,\"cpus_at_least\":true");
  contains(c, "\"memory_mib\":32768,\"memory_at_least\":true");
  contains(c, "\"market\":\"spot\"");
  contains(c, "\"disk\":{\"size_gb\":256,\"type\":\"medium\"}");
  /* any_of over infra: both regions */
  contains(c, "\"regions\":[\"aws:us-east-1\",\"aws:us-west-2\"]");
  contains(c, "\"setup\":\"echo");
  contains(c, "\"env\":{\"EPOCHS\":\"1\",\"MODEL\":\"llama-3-8b\"}");
  free(c);
}

static void test_distributed_job(void **state) {
  (void)state;
  char *c = canon_file("distributed.yaml");
  TW_CHECK(c != NULL, "distributed.yaml was refused");
  contains(c, "\"nodes\":2");
  contains(c, "\"fallback\":\"failover\"");
  contains(c, "SKYPILOT_NODE_IPS");
  free(c);
}

static void test_batch_job(void **state) {
  (void)state;
  char *c = canon_file("batch.yaml");
  TW_CHECK(c != NULL, "batch.yaml was refused");
  contains(c, "\"memory_mib\":1024,\"memory_at_least\":true");
  contains(c, "\"fallback\":\"eager-next-region\"");
  contains(c, "\"datasets\":[{\"uri\":\"s3://tradewind-ux-data/eval/\"}]");
  contains(c, "\"VERBOSE\":\"true\"");
  free(c);
}

/* Every problem of bad.yaml, each with its path and line, in one answer. */
static void test_bad_file_all_errors(void **state) {
  (void)state;
  size_t len = 0;
  char *text = slurp("bad.yaml", &len);
  TW_CHECK(text != NULL, "no bad.yaml");
  struct tw_spec_errs errs;
  struct tw_job_spec s;
  struct tw_err err = {0};
  bool sky = false;
  TW_CHECK_INT(
      tw_spec_parse_any(text, len, false, &OPTS, &s, &errs, &sky, &err),
      TW_E_INVALID);
  free(text);
  TW_CHECK(sky, "bad.yaml was not read as a SkyPilot task");
  static const struct {
    const char *field, *part;
    int line;
  } want[] = {
      {"name", "may only contain", 2},
      {"workdir", "only a local directory is taken", 3},
      {"num_nodes", "without quotes", 4},
      {"resources.infra", "no provider \"lambda\"", 6},
      {"resources.accelerators.H100", "many", 7},
      {"resources.cpus", "expected a number", 8},
      {"resources.disk_tier", "expected low, medium", 9},
      {"resources.labels", "tagged by the broker", 11},
      {"resources.job_recovery", "always recovers", 12},
      {"envs.1BAD", "variable names", 14},
      {"secrets.HF-TOKEN", "variable names", 16},
      {"file_mounts./remote/code", "a local path", 18},
  };
  size_t nw = sizeof want / sizeof want[0];
  TW_CHECK_INT(errs.n, nw);
  for (size_t i = 0; i < nw && i < errs.n; i++) {
    const struct tw_err *e = &errs.v[i];
    TW_CHECK_STR(e->field, want[i].field);
    TW_CHECK(strstr(e->msg, want[i].part), "%s lacks \"%s\"", e->msg,
             want[i].part);
    char line[24];
    snprintf(line, sizeof line, "(line %d)", want[i].line);
    TW_CHECK(strstr(e->msg, line), "%s lacks %s", e->msg, line);
    TW_CHECK(!strncmp(e->msg, want[i].field, strlen(want[i].field)),
             "%s does not start with its path", e->msg);
  }
  /* the first, with the count of the others */
  TW_CHECK(strstr(err.msg, "(and 11 more)"), "%s", err.msg);
}

static void test_detection(void **state) {
  (void)state;
  static const struct {
    const char *text;
    bool sky;
  } cases[] = {
      {"name: a\nrun: x\n", false},
      {"name: a\nnodes: 2\nrun: x\n", false},
      {"name: a\nresources: {accelerators: A100:8}\n", false},
      {"num_nodes: 2\nrun: x\n", true},
      {"resources: {infra: aws}\nrun: x\n", true},
      {"envs: {A: b}\nrun: x\n", true},
      /* a native key wins: its own error says where the SkyPilot one goes */
      {"name: a\nnodes: 2\nnum_nodes: 2\n", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_node *root = NULL;
    struct tw_err err = {0};
    TW_CHECK_RC(tw_node_parse_yaml(cases[i].text, strlen(cases[i].text), &root,
                                   &err),
                TW_OK, err);
    TW_CHECK(tw_skypilot_is_task(root) == cases[i].sky, "%s", cases[i].text);
    tw_node_free(root);
  }
}

/* Small tasks and the spec they become. */
static void test_mappings(void **state) {
  (void)state;
  static const struct {
    const char *task, *has;
  } cases[] = {
      {"resources: {infra: aws/us-east-1/us-east-1a}\nrun: x\n",
       "\"placement\":{\"regions\":[\"aws:us-east-1\"],\"selectors\":[{"
       "\"label\":\"zone\",\"in\":[\"us-east-1a\"]}]}"},
      {"resources: {cloud: AWS, region: eu-west-1}\nrun: x\n",
       "\"regions\":[\"aws:eu-west-1\"]"},
      {"resources: {infra: azure}\nrun: x\n", "\"regions\":[\"azure:*\"]"},
      {"resources: {accelerators: [L4:1, A10G:1], infra: aws}\n",
       "[{\"name\":\"L4\",\"count\":1},{\"name\":\"A10G\",\"count\":1}]"},
      {"resources:\n  accelerators: {'L4:1', 'A10G:1'}\n  infra: aws\n",
       "[{\"name\":\"L4\",\"count\":1},{\"name\":\"A10G\",\"count\":1}]"},
      {"resources:\n  infra: aws\n  ordered:\n    - accelerators: H100:8\n"
       "    - accelerators: A100:8\n",
       "[{\"name\":\"H100\",\"count\":8},{\"name\":\"A100\",\"count\":8}]"},
      {"resources: {instance_type: p4d.24xlarge, infra: aws}\n",
       "\"instance_types\":{\"include\":[\"p4d.24xlarge\"]}"},
      {"resources: {memory: 64GB, infra: aws}\n", "\"memory_mib\":65536,"
                                                  "\"memory_at_least\":false"},
      {"resources: {disk_size: 1TB, infra: aws}\n", "\"size_gb\":1024"},
      {"resources: {disk_size: 2000MB, infra: aws}\n", "\"size_gb\":1"},
      {"resources: {image_id: ami-0868a20f5a3bf9702, ports: [8080, "
       "10022-10040], infra: aws}\n",
       "\"image\":\"ami-0868a20f5a3bf9702\",\"ports\":[8080,\"10022-10040\"]"},
      {"resources: {ports: 8081, infra: aws}\n", "\"ports\":[8081]"},
      {"resources: {network_tier: standard, infra: aws}\nrun: x\n",
       "\"run\":\"x\""},
      {"num_nodes: 3\nrun: x\n", "\"name\":\"sky-task\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bool sky = false;
    struct tw_spec_errs errs;
    char *c = canon_of(cases[i].task, strlen(cases[i].task), &sky, &errs);
    TW_CHECK(c != NULL, "refused: %s", cases[i].task);
    TW_CHECK(sky, "not read as SkyPilot: %s", cases[i].task);
    contains(c, cases[i].has);
    free(c);
  }
}

static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *task, *field, *part;
  } cases[] = {
      {"resources:\n  infra: aws\n  any_of:\n    - {infra: aws/us-east-1, "
       "accelerators: A100:8}\n    - {infra: aws/us-west-2, accelerators: "
       "H100:8}\n",
       "resources.any_of", "every combination"},
      {"resources:\n  infra: aws\n  any_of:\n    - {cpus: 4}\n",
       "resources.any_of[0].cpus", "only change"},
      {"resources: {image_id: 'docker:ubuntu:latest', infra: aws}\n",
       "resources.image_id", "containers"},
      {"resources: {image_id: {us-east-1: ami-1}, infra: aws}\n",
       "resources.image_id", "per region"},
      {"resources: {infra: k8s}\n", "resources.infra", "Kubernetes"},
      {"resources: {infra: aws, autostop: 10m}\n", "resources.autostop",
       "no idle cluster"},
      {"resources: {infra: aws, job_recovery: {strategy: FAILOVER, "
       "max_restarts_on_errors: 3}}\n",
       "resources.job_recovery.max_restarts_on_errors", "not run again"},
      {"file_mounts: {/mnt/v: {name: vol, store: volume}}\n",
       "file_mounts./mnt/v.store", "volumes"},
      {"file_mounts: {/ckpt: {name: my-bucket}}\n", "file_mounts./ckpt.name",
       "creates no storage"},
      {"envs: {TOKEN: }\n", "envs.TOKEN", "no value"},
      {"num_nodes: 2\nservice: {replicas: 2}\n", "service", "SkyServe"},
      {"num_nodes: 2\nrsources: {cpus: 2}\n", "rsources", "did you mean"},
      {"resources: {infra: aws, acelerators: A100}\n",
       "resources.acelerators", "did you mean \"accelerators\""},
      {"resources: {infra: aws, ports: 70000}\n", "resources.ports",
       "1..65535"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct tw_job_spec s;
    struct tw_spec_errs errs;
    struct tw_err err = {0};
    bool sky = false;
    TW_CHECK_INT(tw_spec_parse_any(cases[i].task, strlen(cases[i].task), false,
                                   &OPTS, &s, &errs, &sky, &err),
                 TW_E_INVALID);
    TW_CHECK(sky, "not read as SkyPilot: %s", cases[i].task);
    TW_CHECK(errs.n >= 1, "no error: %s", cases[i].task);
    if (errs.n) {
      TW_CHECK_STR(errs.v[0].field, cases[i].field);
      TW_CHECK(strstr(errs.v[0].msg, cases[i].part), "%s lacks \"%s\"",
               errs.v[0].msg, cases[i].part);
    }
  }
}

/* secrets: the same key in a task and a spec; the canonical JSON (what is
 * stored, shown and converted) names them only, the parsed spec has the
 * values; a null one waits for the submission. */
static void test_secrets(void **state) {
  (void)state;
  size_t len = 0;
  char *text = slurp("secrets.yaml", &len);
  TW_CHECK(text != NULL, "no secrets.yaml");
  struct tw_job_spec s;
  struct tw_spec_errs errs;
  struct tw_err err = {0};
  bool sky = false;
  TW_CHECK_RC(tw_spec_parse_any(text, len, false, &OPTS, &s, &errs, &sky, &err),
              TW_OK, err);
  free(text);
  TW_CHECK(sky, "secrets.yaml not read as SkyPilot");
  TW_CHECK_INT(s.n_secrets, 2);
  TW_CHECK_STR(s.secrets[0].key, "HF_TOKEN");
  TW_CHECK(s.secrets[0].value == NULL, "a null secret got a value");
  TW_CHECK_STR(s.secrets[1].key, "WANDB_API_KEY");
  TW_CHECK_STR(s.secrets[1].value, "wandb-0f3c9a7e5b2d4c1a");
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(&s, &b);
  contains(b.data, "\"secrets\":{\"HF_TOKEN\":null,\"WANDB_API_KEY\":null}");
  TW_CHECK(!strstr(b.data, "wandb-0f3c"), "a secret value in %s", b.data);
  contains(b.data, "\"env\":{\"MODEL\":\"llama-3-8b\"}");
  tw_spec_release(&s);
  /* the canonical form is a spec, read back with the names and no value */
  TW_CHECK_RC(tw_spec_parse(b.data, b.len, true, &s, &err), TW_OK, err);
  TW_CHECK_INT(s.n_secrets, 2);
  TW_CHECK(!s.secrets[1].value, "a stored spec has a value");
  tw_spec_release(&s);
  tw_buf_release(&b);

  static const struct {
    const char *text, *field, *part;
  } bad[] = {
      {"name: a\nenv: {T: x}\nsecrets: {T: y}\n", "secrets.T", "also in env"},
      {"name: a\nsecrets: [T]\n", "secrets", "expected a mapping"},
      {"name: a\nsecrets: {T: {a: 1}}\n", "secrets.T", "expected a string"},
      {"name: a\nsecrets: {1T: x}\n", "secrets.1T", "variable names"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err = (struct tw_err){0};
    TW_CHECK_INT(tw_spec_parse(bad[i].text, strlen(bad[i].text), false, &s,
                               &err),
                 TW_E_INVALID);
    TW_CHECK_STR(err.field, bad[i].field);
    TW_CHECK(strstr(err.msg, bad[i].part), "%s lacks \"%s\"", err.msg,
             bad[i].part);
  }
}

/* What `tradewind convert` prints, submitted as a native spec, is the
 * same job; and a native spec goes through tw_spec_parse_any unchanged. */
static void test_convert_round_trip(void **state) {
  (void)state;
  static const char *const files[] = {"train.yaml", "distributed.yaml",
                                      "batch.yaml"};
  for (size_t i = 0; i < 3; i++) {
    char *c = canon_file(files[i]);
    TW_CHECK(c != NULL, "%s refused", files[i]);
    if (!c)
      continue;
    bool sky = true;
    struct tw_spec_errs errs;
    char *again = canon_of(c, strlen(c), &sky, &errs);
    TW_CHECK(!sky, "the converted %s read as SkyPilot", files[i]);
    TW_CHECK_STR(again, c);
    free(again);
    free(c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_training_job),
      cmocka_unit_test(test_distributed_job),
      cmocka_unit_test(test_batch_job),
      cmocka_unit_test(test_bad_file_all_errors),
      cmocka_unit_test(test_detection),
      cmocka_unit_test(test_mappings),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_convert_round_trip),
      cmocka_unit_test(test_secrets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
