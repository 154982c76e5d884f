/* test_spec.c - the job spec parser and validator (broker/core/spec.h).
 *
 * Bad inputs each name the exact field path and a message fragment; good
 * inputs in YAML and JSON must survive spec -> JSON -> spec -> JSON
 * unchanged; every example in configs/jobs/ must validate.  The parsers of
 * money, durations and sizes have their own tests (test_units.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"

/* The daemon's adapters, as the API passes them from the registry
 * (tests/unit/test_registry.c checks the registry itself). */
static const char *const PROVIDERS[] = {"aws", "azure", "alibaba", "slurm",
                                        NULL};
static const struct tw_spec_opts OPTS = {.providers = PROVIDERS};

static enum tw_rc parse(const char *text, bool json, struct tw_job_spec *s,
                        struct tw_err *err) {
  tw_err_clear(err);
  return tw_spec_parse_opts(text, strlen(text), json, &OPTS, s, err);
}

static char *to_json(const struct tw_job_spec *s) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_spec_to_json(s, &b);
  return tw_buf_detach(&b);
}

/* spec -> JSON -> spec -> JSON must be a fixed point, read back both as
 * strict JSON and through the YAML front-end. */
static void check_round_trip(const char *label, const struct tw_job_spec *s) {
  struct tw_job_spec a, y;
  struct tw_err err;
  char *j1 = to_json(s);
  enum tw_rc rc = parse(j1, true, &a, &err);
  TW_CHECK(rc == TW_OK, "%s: canonical JSON does not reparse: %s\n  %s", label,
           err.msg, j1);
  if (rc == TW_OK) {
    char *j2 = to_json(&a);
    TW_CHECK(!strcmp(j1, j2), "%s: round trip differs\n  %s\n  %s", label, j1,
             j2);
    free(j2);
    tw_spec_release(&a);
  }
  rc = parse(j1, false, &y, &err);
  TW_CHECK(rc == TW_OK, "%s: canonical JSON does not reparse as YAML: %s",
           label, err.msg);
  if (rc == TW_OK) {
    char *j3 = to_json(&y);
    TW_CHECK(!strcmp(j1, j3), "%s: YAML reading differs\n  %s\n  %s", label, j1,
             j3);
    free(j3);
    tw_spec_release(&y);
  }
  free(j1);
}

/* ---- bad inputs -------------------------------------------------------- */

struct bad {
  bool json;
  const char *text;
  const char *field; /* exact err->field */
  const char *frag;  /* must appear in err->msg */
};

static const struct bad bad_cases[] = {
    /* top level */
    {false, "- a\n- b\n", "", "expected a mapping at the top level"},
    {true, "[1,2]", "", "got a sequence"},
    {false, "tenant: t\n", "name", "name: required"},
    {false, "name: \"\"\n", "name", "must not be empty"},
    {false, "name: has space\n", "name", "may only contain letters"},
    {false, "name: [a]\n", "name", "expected a string, got a sequence"},
    {false, "name: a\ntenant: a/b\n", "tenant", "may only contain"},
    {false, "name: a\nproject: {x: 1}\n", "project", "got a mapping"},
    {false, "name: a\nnmae: b\n", "nmae",
     "unknown key; did you mean \"name\"?"},
    {false, "name: a\nzzzzzzzz: 1\n", "zzzzzzzz", "zzzzzzzz: unknown key"},
    {false, "name: a\nnum_nodes: 2\n", "num_nodes", "use \"nodes\" instead"},
    /* resources */
    {false, "name: a\nresources: {acelerators: A100}\n",
     "resources.acelerators",
     "resources.acelerators: unknown key; did you mean \"accelerators\"?"},
    {false, "name: a\nresources: {cloud: aws}\n", "resources.cloud",
     "use \"placement.providers\" instead"},
    {false, "name: a\nresources: 8\n", "resources", "expected a mapping"},
    {false, "name: a\nresources: {cpus: eight}\n", "resources.cpus",
     "resources.cpus: expected a number or N+, got \"eight\""},
    {false, "name: a\nresources: {cpus: 0}\n", "resources.cpus",
     "must be 1..1024, got 0"},
    {false, "name: a\nresources: {cpus: -4}\n", "resources.cpus",
     "must be 1..1024, got -4"},
    {false, "name: a\nresources: {cpus: 2.5}\n", "resources.cpus",
     "whole number of CPUs"},
    {false, "name: a\nresources: {cpus: 99999999999999999999999}\n",
     "resources.cpus", "must be 1..1024"},
    {false, "name: a\nresources: {cpus: true}\n", "resources.cpus",
     "got boolean true"},
    {false, "name: a\nresources: {cpus_at_least: true}\n",
     "resources.cpus_at_least", "needs resources.cpus"},
    {false, "name: a\nresources: {cpus: 8+, cpus_at_least: false}\n",
     "resources.cpus_at_least", "conflicts"},
    {false, "name: a\nresources: {memory: 0.3}\n", "resources.memory",
     "not a whole number of MiB"},
    {false, "name: a\nresources: {memory: 0}\n", "resources.memory",
     "must be > 0"},
    {false, "name: a\nresources: {memory: lots}\n", "resources.memory",
     "expected GiB as a number or N+"},
    {false, "name: a\nresources: {memory: 32, memory_mib: 1024}\n",
     "resources.memory_mib", "not both"},
    {false, "name: a\nresources: {accelerators: \"A100:0\"}\n",
     "resources.accelerators", "count after ':' must be 1..256"},
    {false, "name: a\nresources: {accelerators: \"A100:x\"}\n",
     "resources.accelerators", "must be 1..256"},
    {false, "name: a\nresources: {accelerators: \"8\"}\n",
     "resources.accelerators", "expected an accelerator name"},
    {false, "name: a\nresources: {accelerators: {A100: 8, a100: 8}}\n",
     "resources.accelerators", "a100 is listed twice"},
    {false, "name: a\nresources: {accelerators: []}\n",
     "resources.accelerators", "expected at least one accelerator"},
    {false, "name: a\nresources: {accelerators: \"A100:8++\"}\n",
     "resources.accelerators", "must be 1..256 or N+"},
    {false, "name: a\nresources: {instance_types: [\"m6i large\"]}\n",
     "resources.instance_types[0]", "expected a name or glob"},
    {false, "name: a\nresources: {families: {include: [m6i], omit: [t3]}}\n",
     "resources.families.omit", "unknown key"},
    {false, "name: a\nresources: {accelerators: {A100: \"8\"}}\n",
     "resources.accelerators.A100", "write it without quotes"},
    {false, "name: a\nresources: {accelerators: [[A100]]}\n",
     "resources.accelerators[0]", "expected a string like A100:8"},
    {false, "name: a\nresources: {accelerators: {name: A100, cnt: 2}}\n",
     "resources.accelerators.cnt", "did you mean \"count\"?"},
    {false, "name: a\nresources: {accelerators: {count: 8}}\n",
     "resources.accelerators.name", "required"},
    /* 62 zeros then 8 and garbage: never truncated into a valid "...08" */
    {false,
     "name: a\nresources: {cpus: "
     "\"000000000000000000000000000000000000000000000000000000000000008x\"}\n",
     "resources.cpus", "expected a number or N+"},
    {false, "name: a\nresources: {arch: x86-64}\n", "resources.arch",
     "did you mean \"x86_64\"?"},
    {false, "name: a\nresources: {arch: sparc}\n", "resources.arch",
     "expected x86_64, arm64 or any, got \"sparc\""},
    {false, "name: a\nresources: {market: spto}\n", "resources.market",
     "did you mean \"spot\"?"},
    {false, "name: a\nresources: {market: on-demand, use_spot: true}\n",
     "resources.use_spot", "true conflicts with market \"on-demand\""},
    {false, "name: a\nresources: {market: spot, use_spot: false}\n",
     "resources.use_spot", "false conflicts with market \"spot\""},
    {false, "name: a\nresources: {use_spot: \"yes\"}\n", "resources.use_spot",
     "expected true or false"},
    /* nodes, priority: strict integers */
    {false, "name: a\nnodes: \"8\"\n", "nodes",
     "expected an integer, got string \"8\" (write it without quotes)"},
    {true, "{\"name\":\"a\",\"nodes\":\"8\"}", "nodes", "string \"8\""},
    {false, "name: a\nnodes: 0\n", "nodes", "must be 1..4096, got 0"},
    {false, "name: a\nnodes: 4097\n", "nodes", "must be 1..4096"},
    {false, "name: a\nnodes: 1.5\n", "nodes", "expected a whole number"},
    {false, "name: a\npriority: 1001\n", "priority", "must be -1000..1000"},
    {false, "name: a\npriority: high\n", "priority", "expected an integer"},
    /* duration, deadline */
    {false, "name: a\nduration: 6x\n", "duration",
     "expected a duration like 6h"},
    {false, "name: a\nduration: 30m1h\n", "duration", "expected a duration"},
    {false, "name: a\nduration: 0\n", "duration", "must be > 0"},
    {false, "name: a\nduration: -5\n", "duration", "must be > 0"},
    {false, "name: a\nduration: 366d\n", "duration", "at most 365d"},
    {false, "name: a\nduration: 99999999999999999999d\n", "duration",
     "at most 365d"},
    {false, "name: a\nduration: 6h\nduration_s: 60\n", "duration_s",
     "not both"},
    {false, "name: a\ndeadline: tomorrow\n", "deadline", "RFC 3339"},
    {false, "name: a\ndeadline: 2026-02-30T00:00:00Z\n", "deadline",
     "RFC 3339"},
    {false, "name: a\ndeadline: 1960-01-01T00:00:00Z\n", "deadline",
     "after 1970"},
    /* money */
    {false, "name: a\nmax_price_per_hour: 0.0000001\n", "max_price_per_hour",
     "more than 6 decimals"},
    {false, "name: a\nmax_price_per_hour: 0\n", "max_price_per_hour",
     "must be > 0"},
    {false, "name: a\nmax_price_per_hour: -3\n", "max_price_per_hour",
     "must be > 0"},
    {false, "name: a\nmax_price_per_hour: 3 USD\n", "max_price_per_hour",
     "expected USD like 3.25"},
    {false, "name: a\nmax_price_per_hour: 3,25\n", "max_price_per_hour",
     "expected USD"},
    {false, "name: a\nmax_price_per_hour: 99999999999999\n",
     "max_price_per_hour", "at most 1000000 USD"},
    {true, "{\"name\":\"a\",\"max_price_per_hour\":1e-7}", "max_price_per_hour",
     "more than 6 decimals"},
    /* datasets */
    {false, "name: a\ndatasets: {uri: s3://b}\n", "datasets",
     "expected a sequence"},
    {false, "name: a\ndatasets:\n  - uri: s3://b\n  - size: 1GB\n",
     "datasets[1].uri", "required"},
    {false,
     "name: a\ndatasets:\n  - uri: s3://b\n  - uri: s3://c\n    size: 10QB\n",
     "datasets[1].size", "datasets[1].size: expected a size > 0"},
    {false, "name: a\ndatasets:\n  - uri: s3://b\n    size: 1.5B\n",
     "datasets[0].size", "expected a size"},
    {false, "name: a\ndatasets:\n  - uri: bucket/path\n", "datasets[0].uri",
     "expected a URI with a scheme"},
    {false, "name: a\ndatasets:\n  - uri: s3://b\n    location: aws\n",
     "datasets[0].location", "expected provider:region"},
    {false,
     "name: a\ndatasets:\n  - uri: s3://b\n    location: asw:us-east-1\n",
     "datasets[0].location", "did you mean \"aws\"?"},
    {false, "name: a\ndatasets:\n  - uri: s3://b\n    locaton: aws:x\n",
     "datasets[0].locaton", "did you mean \"location\"?"},
    /* placement */
    {false, "name: a\nplacement: {providers: [aws, gpc]}\n",
     "placement.providers[1]", "unknown provider"},
    {false, "name: a\nplacement: {providers: [AWS]}\n",
     "placement.providers[0]", "did you mean \"aws\"?"},
    {false, "name: a\nplacement: {providers: [azrue]}\n",
     "placement.providers[0]", "did you mean \"azure\"?"},
    {false, "name: a\nplacement: {providers: [aws, aws]}\n",
     "placement.providers[1]", "duplicate"},
    {false, "name: a\nplacement: {regions: [us-east-1]}\n",
     "placement.regions[0]", "expected provider:region"},
    {false, "name: a\nplacement: {regions: [\"aws:us east\"]}\n",
     "placement.regions[0]", "region may only contain"},
    {false, "name: a\nplacement: {residency: eu}\n", "placement.residency",
     "upper-case letters"},
    {false, "name: a\nplacement: {residency: [EU, X]}\n",
     "placement.residency[1]", "2..8 upper-case"},
    {false, "name: a\nplacement: {residnecy: EU}\n", "placement.residnecy",
     "did you mean \"residency\"?"},
    /* placement.selectors: the selector filter's syntax */
    {false, "name: a\nplacement: {selectors: {label: rack, exists: true}}\n",
     "placement.selectors", "expected a list of selectors"},
    {false, "name: a\nplacement: {selectors: [\"region in (us-east-1)\"]}\n",
     "placement.selectors[0]", "expected a mapping like {label: region"},
    {false, "name: a\nplacement: {selectors: [{in: [us-east-1]}]}\n",
     "placement.selectors[0].label", "required"},
    {false,
     "name: a\nplacement: {selectors: [{label: \"my label\", exists: true}]}\n",
     "placement.selectors[0].label", "must not contain spaces"},
    {false,
     "name: a\nplacement: {selectors: [{label: "
     "abcdefghijabcdefghijabcdefghijab, exists: true}]}\n",
     "placement.selectors[0].label", "longer than 31 bytes"},
    {false,
     "name: a\nplacement: {selectors: [{label: rack, exists: true}, "
     "{label: zone}]}\n",
     "placement.selectors[1]",
     "expected exactly one of in, not_in, exists, glob, got 0"},
    {false,
     "name: a\nplacement: {selectors: [{label: zone, in: [a], glob: "
     "\"b*\"}]}\n",
     "placement.selectors[0]",
     "expected exactly one of in, not_in, exists, glob, got 2"},
    {false, "name: a\nplacement: {selectors: [{label: zone, notin: [a]}]}\n",
     "placement.selectors[0].notin", "did you mean \"not_in\"?"},
    {false, "name: a\nplacement: {selectors: [{label: zone, in: []}]}\n",
     "placement.selectors[0].in", "expected at least one value"},
    {false, "name: a\nplacement: {selectors: [{label: zone, in: [a, a]}]}\n",
     "placement.selectors[0].in[1]", "duplicate"},
    {false,
     "name: a\nplacement: {selectors: [{label: zone, not_in: [{x: 1}]}]}\n",
     "placement.selectors[0].not_in[0]", "expected a string"},
    {false, "name: a\nplacement: {selectors: [{label: zone, glob: \"\"}]}\n",
     "placement.selectors[0].glob", "must not be empty"},
    {false, "name: a\nplacement: {selectors: [{label: rack, exists: maybe}]}\n",
     "placement.selectors[0].exists", "expected true or false"},
    {true,
     "{\"name\":\"a\",\"placement\":{\"selectors\":[{\"label\":\"r\","
     "\"in\":null}]}}",
     "placement.selectors[0].in", "expected a value or a list of values"},
    /* placement.max_rtt_ms, placement.near */
    {false, "name: a\nplacement: {max_rtt_ms: 0}\n", "placement.max_rtt_ms",
     "must be 1..10000, got 0"},
    {false, "name: a\nplacement: {max_rtt_ms: 10001}\n", "placement.max_rtt_ms",
     "must be 1..10000"},
    {false, "name: a\nplacement: {max_rtt_ms: 50ms}\n", "placement.max_rtt_ms",
     "expected an integer"},
    {false, "name: a\nplacement: {max_rtt_ms: 50, near: us-east-1}\n",
     "placement.near", "expected provider:region"},
    {false, "name: a\nplacement: {max_rtt_ms: 50, near: [\"aws:us-*\"]}\n",
     "placement.near[0]", "region may only contain"},
    {false, "name: a\nplacement: {max_rtt_ms: 50, near: [azrue:westeurope]}\n",
     "placement.near[0]", "did you mean \"azure\"?"},
    {false, "name: a\nplacement: {near: aws:us-east-1}\n", "placement.near",
     "needs placement.max_rtt_ms"},
    /* checkpoint, run, env */
    {false, "name: a\ncheckpoint: {interval: 10m}\n", "checkpoint.uri",
     "required"},
    {false, "name: a\ncheckpoint: {interval: often, uri: s3://b}\n",
     "checkpoint.interval", "expected a duration"},
    {false, "name: a\nrun: [echo, hi]\n", "run", "expected a string"},
    {false, "name: a\nenv: {1BAD: x}\n", "env.1BAD", "[A-Za-z_]"},
    {false, "name: a\nenv: {GOOD: [1]}\n", "env.GOOD",
     "expected a string, number or boolean"},
    {false, "name: a\nenv: [A]\n", "env", "expected a mapping"},
};

static void test_bad_inputs(void **state) {
  size_t n = sizeof bad_cases / sizeof bad_cases[0];
  TW_CHECK(n >= 40, "only %zu bad cases", n);
  for (size_t i = 0; i < n; i++) {
    const struct bad *c = &bad_cases[i];
    struct tw_job_spec s;
    struct tw_err err;
    enum tw_rc rc = parse(c->text, c->json, &s, &err);
    TW_CHECK(rc == TW_E_INVALID, "bad[%zu] %s: rc %s", i, c->text,
             tw_rc_str(rc));
    if (rc == TW_OK) {
      tw_spec_release(&s);
      continue;
    }
    TW_CHECK(err.rc == TW_E_INVALID, "bad[%zu]: err.rc %d", i, err.rc);
    TW_CHECK(!strcmp(err.field, c->field),
             "bad[%zu] %s: field \"%s\", want \"%s\"", i, c->text, err.field,
             c->field);
    TW_CHECK(strstr(err.msg, c->frag) != NULL,
             "bad[%zu] %s: message \"%s\" lacks \"%s\"", i, c->text, err.msg,
             c->frag);
    /* The message leads with the path. */
    if (*c->field)
      TW_CHECK(!strncmp(err.msg, c->field, strlen(c->field)) &&
                   err.msg[strlen(c->field)] == ':',
               "bad[%zu]: message \"%s\" does not start with the path", i,
               err.msg);
    /* A failed parse leaves nothing to free. */
    TW_CHECK(s.name == NULL && s.datasets == NULL && s.env == NULL,
             "bad[%zu]: spec not released", i);
  }
}

static void test_yaml_line_in_message(void **state) {
  struct tw_job_spec s;
  struct tw_err err;
  parse("name: a\nresources:\n  cpus: 4\n  acelerators: A100\n", false, &s,
        &err);
  TW_CHECK(strstr(err.msg, "(line 4)") != NULL, "no line in \"%s\"", err.msg);
}

static void test_syntax_errors_pass_through(void **state) {
  struct tw_job_spec s;
  struct tw_err err;
  TW_CHECK(parse("{\"name\": ", true, &s, &err) == TW_E_INVALID, "json");
  TW_CHECK(strstr(err.msg, "malformed JSON") != NULL, "%s", err.msg);
  TW_CHECK(parse("name: [a\n", false, &s, &err) == TW_E_INVALID, "yaml");
  TW_CHECK(strstr(err.msg, "malformed YAML") != NULL, "%s", err.msg);
  TW_CHECK(parse("", false, &s, &err) == TW_E_INVALID, "empty");
}

/* ---- good inputs ------------------------------------------------------- */

struct good {
  bool json;
  const char *text;
  const char *canon; /* expected canonical JSON, or NULL: round trip only */
};

static const struct good good_cases[] = {
    {false, "name: hello\nrun: echo hello\n",
     "{\"name\":\"hello\",\"tenant\":\"default\",\"project\":\"default\","
     "\"nodes\":1,\"priority\":0,\"run\":\"echo hello\"}"},
    /* SkyPilot's resources block */
    {false,
     "name: train\nresources: {accelerators: A100:8, use_spot: true, cpus: "
     "8+}\n",
     "{\"name\":\"train\",\"tenant\":\"default\",\"project\":\"default\","
     "\"resources\":{\"accelerators\":{\"name\":\"A100\",\"count\":8},"
     "\"cpus\":8,\"cpus_at_least\":true,\"market\":\"spot\"},\"nodes\":1,"
     "\"priority\":0}"},
    {false,
     "name: llm-train.v2\ntenant: research\nproject: llm\n"
     "resources:\n  accelerators: A100:8\n  cpus: 8+\n  memory: 32+\n"
     "  arch: amd64\n  market: spot\n"
     "nodes: 2\nduration: 6h\ndeadline: 2026-12-01T00:00:00Z\n"
     "max_price_per_hour: \"3.25\"\n"
     "datasets:\n  - uri: s3://corpus/tokens\n    size: 10GiB\n"
     "    location: aws:us-east-1\n  - gs://extra/shard\n"
     "placement:\n  providers: [aws, azure]\n  regions: [\"aws:us-*\", "
     "azure:westeurope]\n  residency: EU\n"
     "priority: -5\ncheckpoint: {interval: 30m, uri: s3://ckpt/llm}\n"
     "run: |\n  python train.py\n"
     "env: {ZETA: 1, ALPHA: true, MID: text}\n",
     "{\"name\":\"llm-train.v2\",\"tenant\":\"research\",\"project\":\"llm\","
     "\"resources\":{\"accelerators\":{\"name\":\"A100\",\"count\":8},"
     "\"cpus\":8,\"cpus_at_least\":true,\"memory_mib\":32768,"
     "\"memory_at_least\":true,\"arch\":\"x86_64\",\"market\":\"spot\"},"
     "\"nodes\":2,\"duration_s\":21600,"
     "\"deadline\":\"2026-12-01T00:00:00.000Z\","
     "\"max_price_uusd_per_hour\":3250000,"
     "\"datasets\":[{\"uri\":\"s3://corpus/tokens\",\"size_bytes\":"
     "10737418240,\"location\":\"aws:us-east-1\"},"
     "{\"uri\":\"gs://extra/shard\"}],"
     "\"placement\":{\"providers\":[\"aws\",\"azure\"],\"regions\":"
     "[\"aws:us-*\",\"azure:westeurope\"],\"residency\":[\"EU\"]},"
     "\"priority\":-5,\"checkpoint\":{\"interval_s\":1800,\"uri\":"
     "\"s3://ckpt/llm\"},\"run\":\"python train.py\\n\","
     "\"env\":{\"ALPHA\":\"true\",\"MID\":\"text\",\"ZETA\":\"1\"}}"},
    /* one-entry mapping, use_spot false, aarch64, fractional GiB */
    {false,
     "name: x\nresources:\n  accelerators: {A100-80GB: 4}\n  use_spot: false\n"
     "  arch: aarch64\n  memory: 0.5\n",
     "{\"name\":\"x\",\"tenant\":\"default\",\"project\":\"default\","
     "\"resources\":{\"accelerators\":{\"name\":\"A100-80GB\",\"count\":4},"
     "\"memory_mib\":512,\"memory_at_least\":false,\"arch\":\"arm64\","
     "\"market\":\"on-demand\"},\"nodes\":1,\"priority\":0}"},
    /* JSON, with reals that went through jansson's doubles */
    {true,
     "{\"name\":\"j\",\"resources\":{\"accelerators\":\"H100\",\"cpus\":16,"
     "\"memory\":1.5},\"max_price_per_hour\":3.1,\"duration\":\"1h30m\","
     "\"env\":{\"RATE\":0.1}}",
     "{\"name\":\"j\",\"tenant\":\"default\",\"project\":\"default\","
     "\"resources\":{\"accelerators\":{\"name\":\"H100\",\"count\":1},"
     "\"cpus\":16,\"cpus_at_least\":false,\"memory_mib\":1536,"
     "\"memory_at_least\":false},\"nodes\":1,\"duration_s\":5400,"
     "\"max_price_uusd_per_hour\":3100000,\"priority\":0,"
     "\"env\":{\"RATE\":\"0.1\"}}"},
    /* the canonical form itself is accepted */
    {true,
     "{\"name\":\"c\",\"tenant\":\"t\",\"project\":\"p\",\"resources\":"
     "{\"accelerators\":{\"name\":\"L4\",\"count\":2},\"cpus\":4,"
     "\"cpus_at_least\":true,\"memory_mib\":1000,\"memory_at_least\":true,"
     "\"market\":\"any\"},\"nodes\":3,\"duration_s\":45,"
     "\"max_price_uusd_per_hour\":1,\"datasets\":[{\"uri\":\"file:///d\","
     "\"size_bytes\":7}],\"priority\":1000,\"checkpoint\":{\"interval_s\":"
     "60,\"uri\":\"https://h/c\"}}",
     "{\"name\":\"c\",\"tenant\":\"t\",\"project\":\"p\",\"resources\":"
     "{\"accelerators\":{\"name\":\"L4\",\"count\":2},\"cpus\":4,"
     "\"cpus_at_least\":true,\"memory_mib\":1000,\"memory_at_least\":true},"
     "\"nodes\":3,\"duration_s\":45,\"max_price_uusd_per_hour\":1,"
     "\"datasets\":[{\"uri\":\"file:///d\",\"size_bytes\":7}],"
     "\"priority\":1000,\"checkpoint\":{\"interval_s\":60,\"uri\":"
     "\"https://h/c\"}}"},
    /* quoted strings where the field is naturally a string */
    {false,
     "name: q\nresources: {cpus: \"8\", memory: \"32+\"}\nduration: \"90\"\n"
     "max_price_per_hour: 1e1\n",
     "{\"name\":\"q\",\"tenant\":\"default\",\"project\":\"default\","
     "\"resources\":{\"cpus\":8,\"cpus_at_least\":false,\"memory_mib\":32768,"
     "\"memory_at_least\":true},\"nodes\":1,\"duration_s\":90,"
     "\"max_price_uusd_per_hour\":10000000,\"priority\":0}"},
    /* null means absent; a deadline with an offset is normalized to UTC */
    {false,
     "name: n\nresources:\nenv:\nplacement:\n  residency: [EU, UK]\n"
     "deadline: 2026-06-01T12:30:00.250+02:00\n",
     "{\"name\":\"n\",\"tenant\":\"default\",\"project\":\"default\","
     "\"nodes\":1,\"deadline\":\"2026-06-01T10:30:00.250Z\","
     "\"placement\":{\"residency\":[\"EU\",\"UK\"]},\"priority\":0}"},
    {false, "name: a\ndatasets: []\nenv: {}\nrun: \"\"\n", NULL},
    {false,
     "name: s\nplacement:\n  providers: slurm\n  regions: [\"slurm:hpc1/gpu\", "
     "\"*:eu-*\", \"alibaba:cn-hangzhou\"]\n",
     NULL},
    {true, "{\"name\":\"u\",\"run\":\"echo \\\"\\u00e9\\\"\\n\\ttab\"}", NULL},
    {false, "name: p\nmax_price_per_hour: 999999.999999\n", NULL},
    /* money as broker/base/units.h reads it: a dollar sign is fine */
    {false, "name: d\nmax_price_per_hour: $2.50\n",
     "{\"name\":\"d\",\"tenant\":\"default\",\"project\":\"default\","
     "\"nodes\":1,\"max_price_uusd_per_hour\":2500000,\"priority\":0}"},
    /* selectors, a latency bound and where it is measured from */
    {false,
     "name: sel\nplacement:\n  selectors:\n"
     "    - {label: region, in: [us-east-1, us-west-2]}\n"
     "    - {label: zone, not_in: us-east-1b}\n"
     "    - {label: rack, exists: true}\n"
     "    - {label: spot_pool, exists: false}\n"
     "    - {label: provider, glob: \"aw*\"}\n"
     "  max_rtt_ms: 80\n  near: [aws:us-east-1, azure:westeurope]\n",
     "{\"name\":\"sel\",\"tenant\":\"default\",\"project\":\"default\","
     "\"nodes\":1,\"placement\":{\"selectors\":["
     "{\"label\":\"region\",\"in\":[\"us-east-1\",\"us-west-2\"]},"
     "{\"label\":\"zone\",\"not_in\":[\"us-east-1b\"]},"
     "{\"label\":\"rack\",\"exists\":true},"
     "{\"label\":\"spot_pool\",\"exists\":false},"
     "{\"label\":\"provider\",\"glob\":[\"aw*\"]}],"
     "\"max_rtt_ms\":80,\"near\":[\"aws:us-east-1\",\"azure:westeurope\"]},"
     "\"priority\":0}"},
    /* a bound alone measures from the job's data */
    {false, "name: lat\nplacement: {max_rtt_ms: 10000}\n",
     "{\"name\":\"lat\",\"tenant\":\"default\",\"project\":\"default\","
     "\"nodes\":1,\"placement\":{\"max_rtt_ms\":10000},\"priority\":0}"},
    {true,
     "{\"name\":\"j\",\"placement\":{\"regions\":[\"aws:*\"],\"selectors\":"
     "[{\"label\":\"country\",\"in\":\"DE\"},{\"label\":\"tier\",\"glob\":"
     "[\"gold-*\",\"silver-?\"]}],\"max_rtt_ms\":1,\"near\":\"aws:eu-central-"
     "1\"}}",
     NULL},
};

static void test_good_inputs(void **state) {
  for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
    const struct good *c = &good_cases[i];
    struct tw_job_spec s;
    struct tw_err err;
    char label[32];
    snprintf(label, sizeof label, "good[%zu]", i);
    enum tw_rc rc = parse(c->text, c->json, &s, &err);
    TW_CHECK(rc == TW_OK, "%s: %s\n  %s", label, err.msg, c->text);
    if (rc)
      continue;
    char *j = to_json(&s);
    if (c->canon)
      TW_CHECK(!strcmp(j, c->canon), "%s: canonical JSON\n  got  %s\n  want %s",
               label, j, c->canon);
    free(j);
    check_round_trip(label, &s);
    tw_spec_release(&s);
  }
}

/* The selectors reach the struct the placement filters read. */
static void test_selector_fields(void **state) {
  struct tw_job_spec s;
  struct tw_err err;
  const char *text = NULL;
  for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0] && !text; i++)
    if (!strncmp(good_cases[i].text, "name: sel\n", 10))
      text = good_cases[i].text;
  TW_CHECK(text != NULL, "no selector case");
  if (!text || parse(text, false, &s, &err) != TW_OK) {
    TW_CHECK(0, "selector case: %s", err.msg);
    return;
  }
  TW_CHECK(s.n_selectors == 5, "n_selectors %zu", s.n_selectors);
  if (s.n_selectors == 5) {
    TW_CHECK(!strcmp(s.selectors[0].label, "region") &&
                 s.selectors[0].op == TW_SEL_IN &&
                 s.selectors[0].n_values == 2 &&
                 !strcmp(s.selectors[0].values[1], "us-west-2"),
             "in");
    TW_CHECK(s.selectors[1].op == TW_SEL_NOT_IN && s.selectors[1].n_values == 1,
             "not_in");
    TW_CHECK(s.selectors[2].op == TW_SEL_EXISTS && !s.selectors[2].values,
             "exists");
    TW_CHECK(s.selectors[3].op == TW_SEL_NOT_EXISTS, "exists false");
    TW_CHECK(s.selectors[4].op == TW_SEL_GLOB &&
                 !strcmp(s.selectors[4].values[0], "aw*"),
             "glob");
  }
  TW_CHECK(s.max_rtt_ms == 80, "max_rtt_ms %d", s.max_rtt_ms);
  TW_CHECK(s.n_near == 2 && !strcmp(s.near[1], "azure:westeurope"), "near");
  tw_spec_release(&s);
}

static void test_struct_fields(void **state) {
  struct tw_job_spec s;
  struct tw_err err;
  enum tw_rc rc = parse(good_cases[2].text, false, &s, &err);
  TW_CHECK(rc == TW_OK, "%s", err.msg);
  if (rc)
    return;
  TW_CHECK(!strcmp(s.accel_name, "A100") && s.accel_count == 8, "accel");
  TW_CHECK(s.cpus == 8 && s.cpus_at_least, "cpus");
  TW_CHECK(s.memory_mib == 32768 && s.memory_at_least, "memory");
  TW_CHECK(s.arch == TW_ARCH_X86_64 && s.market == TW_MARKET_SPOT,
           "arch/market");
  TW_CHECK(s.nodes == 2 && s.duration_s == 21600, "nodes/duration");
  int64_t dl;
  tw_time_parse_rfc3339("2026-12-01T00:00:00Z", &dl);
  TW_CHECK(s.deadline_ms == dl, "deadline %lld", (long long)s.deadline_ms);
  TW_CHECK(s.max_price_uusd_per_hour == 3250000, "price");
  TW_CHECK(s.n_datasets == 2 && s.datasets[0].size_bytes == 10737418240LL &&
               !strcmp(s.datasets[0].location, "aws:us-east-1") &&
               s.datasets[1].size_bytes == 0 && !s.datasets[1].location,
           "datasets");
  TW_CHECK(s.n_providers == 2 && s.n_regions == 2 && s.n_residency == 1 &&
               !strcmp(s.residency[0], "EU"),
           "placement");
  TW_CHECK(s.priority == -5 && s.checkpoint_interval_s == 1800 &&
               !strcmp(s.checkpoint_uri, "s3://ckpt/llm"),
           "priority/checkpoint");
  TW_CHECK(s.n_env == 3 && !strcmp(s.env[0].key, "ALPHA") &&
               !strcmp(s.env[0].value, "true"),
           "env sorted");
  tw_spec_release(&s);
  tw_spec_release(&s); /* a released spec is empty: harmless */

  rc = parse("name: d\n", false, &s, &err);
  TW_CHECK(rc == TW_OK && !strcmp(s.tenant, "default") &&
               !strcmp(s.project, "default") && s.nodes == 1 &&
               s.market == TW_MARKET_ANY && s.arch == TW_ARCH_ANY &&
               !s.accel_name && !s.run && s.priority == 0,
           "defaults");
  tw_spec_release(&s);
}

/* tw_spec_from_node works on a tree parsed by the caller. */
static void test_from_node(void **state) {
  struct tw_node *root;
  struct tw_err err;
  struct tw_job_spec s;
  const char *t = "{\"name\":\"n\",\"nodes\":4}";
  tw_err_clear(&err);
  TW_CHECK(tw_node_parse_json(t, strlen(t), &root, &err) == TW_OK, "%s",
           err.msg);
  TW_CHECK(tw_spec_from_node(root, &s, &err) == TW_OK && s.nodes == 4, "%s",
           err.msg);
  tw_spec_release(&s);
  tw_node_free(root);
  TW_CHECK(tw_spec_from_node(NULL, &s, &err) == TW_E_INVALID, "NULL root");
}

/* ---- exact helpers ----------------------------------------------------- */

static void test_names(void **state) {
  TW_CHECK(!strcmp(tw_market_str(TW_MARKET_ANY), "any"), "any");
  TW_CHECK(!strcmp(tw_market_str(TW_MARKET_SPOT), "spot"), "spot");
  TW_CHECK(!strcmp(tw_market_str(TW_MARKET_ON_DEMAND), "on-demand"), "od");
  TW_CHECK(!strcmp(tw_arch_str(TW_ARCH_ANY), "any"), "arch any");
  TW_CHECK(!strcmp(tw_arch_str(TW_ARCH_X86_64), "x86_64"), "x86_64");
  TW_CHECK(!strcmp(tw_arch_str(TW_ARCH_ARM64), "arm64"), "arm64");
}

/* ---- configs/jobs ------------------------------------------------------ */


static void test_example_jobs(void **state) {
  const char *src = getenv("TW_SOURCE_DIR");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/configs/jobs", src ? src : ".");
  DIR *d = opendir(dir);
  TW_CHECK(d != NULL, "cannot open %s", dir);
  if (!d)
    return;
  int seen = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    bool yaml = nl > 5 && (!strcmp(e->d_name + nl - 5, ".yaml") ||
                           !strcmp(e->d_name + nl - 4, ".yml"));
    bool json = nl > 5 && !strcmp(e->d_name + nl - 5, ".json");
    if (!yaml && !json)
      continue;
    char path[2048];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *text = tw_test_slurp(path, &len);
    TW_CHECK(text != NULL, "cannot read %s", path);
    if (!text)
      continue;
    struct tw_job_spec s;
    struct tw_err err;
    tw_err_clear(&err);
    enum tw_rc rc = tw_spec_parse_opts(text, len, json, &OPTS, &s, &err);
    TW_CHECK(rc == TW_OK, "configs/jobs/%s: %s", e->d_name, err.msg);
    if (rc == TW_OK) {
      check_round_trip(e->d_name, &s);
      tw_spec_release(&s);
    }
    free(text);
    seen++;
  }
  closedir(d);
  TW_CHECK(seen >= 3, "only %d example jobs in %s", seen, dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_yaml_line_in_message),
      cmocka_unit_test(test_syntax_errors_pass_through),
      cmocka_unit_test(test_good_inputs),
      cmocka_unit_test(test_struct_fields),
      cmocka_unit_test(test_selector_fields),
      cmocka_unit_test(test_from_node),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_example_jobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
