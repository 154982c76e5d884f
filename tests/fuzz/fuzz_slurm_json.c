/* fuzz_slurm_json.c - every slurmrestd answer parser of the Slurm adapter
 * over the same bytes, and the string readers over them as text: none may
 * crash, leak or read out of bounds; a failed parse hands back nothing, and
 * what a successful one hands back stays within its bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "providers/slurm/slurm_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct tw_err err = {0};
  size_t n = 0;

  struct slurm_node *nodes = NULL;
  enum tw_rc rc = slurm_parse_nodes(s, size, &nodes, &n, &err);
  if (rc != TW_OK && (nodes || n))
    abort();
  for (size_t i = 0; i < n; i++)
    if (!nodes[i].name[0] || nodes[i].cpus < 0 || nodes[i].gpus < 0 ||
        nodes[i].n_partitions > SLURM_NODE_PARTS_MAX ||
        (nodes[i].usable && nodes[i].down))
      abort();
  free(nodes);

  struct slurm_partition *parts = NULL;
  rc = slurm_parse_partitions(s, size, &parts, &n, &err);
  if (rc != TW_OK && (parts || n))
    abort();
  free(parts);

  struct slurm_job *jobs = NULL;
  rc = slurm_parse_jobs(s, size, &jobs, &n, &err);
  if (rc != TW_OK && (jobs || n))
    abort();
  for (size_t i = 0; i < n; i++) {
    struct slurm_state_map m;
    struct slurm_tags t;
    if (jobs[i].id <= 0 || jobs[i].node_count < 1)
      abort();
    slurm_map_state(&jobs[i], &m);
    if (m.finished && (m.state != TW_INST_TERMINATED || m.exit_code < 0))
      abort();
    slurm_tags_parse(jobs[i].comment, &t);
    slurm_hostlist_has(jobs[i].nodes, "gpu1");
  }
  free(jobs);

  int64_t id;
  struct slurm_error se;
  slurm_parse_submit(s, size, &id, &se, &err);
  slurm_parse_errors(s, size, &se);
  slurm_classify(500, se.code);

  /* the same bytes as one string */
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char type[32];
  if (slurm_gres_gpus(text, type, sizeof type) < 0)
    abort();
  slurm_hostlist_has(text, "node07");
  slurm_hostlist_has("n[01-10],gpu[1-3]", text);
  struct slurm_tags t;
  if (slurm_tags_parse(text, &t)) {
    struct tw_buf b;
    struct slurm_tags back;
    tw_buf_init(&b);
    slurm_tags_format(&t, &b);
    /* what was read writes back and reads back the same */
    if (!slurm_tags_parse(b.data, &back) || strcmp(back.job, t.job) ||
        strcmp(back.attempt, t.attempt) || strcmp(back.tenant, t.tenant) ||
        strcmp(back.type, t.type))
      abort();
    tw_buf_release(&b);
  }
  slurm_jwt_exp(text);
  slurm_exit_code((int64_t)size * 37 - 100);
  free(text);
  return 0;
}
