/* slurm_json.h - slurmrestd's v0.0.38 JSON, read into plain C structs and
 * written from them, for the Slurm adapter only (providers/slurm/slurm.c).
 *
 * Pure functions: no I/O, no clock, no globals, so the unit tests feed them
 * recorded answers and the fuzz target feeds them anything.  jansson is
 * used here and in no header: nothing outside this file sees a json_t.
 *
 * Every parser accepts what slurmrestd 22.05 sends (numbers that may be
 * null, escaped slashes, fields it omits) and refuses, with TW_E_INVALID
 * and a message naming the field, only an answer it cannot use at all
 * (not JSON, or the expected top-level array missing). */
#ifndef TW_PROVIDERS_SLURM_SLURM_JSON_H
#define TW_PROVIDERS_SLURM_SLURM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"

#define SLURM_NAME_MAX 64
#define SLURM_NODE_PARTS_MAX 8

/* The first entry of an answer's "errors" array.  Submit spells its code
 * error_code, job and node calls error_number, some calls errno. */
struct slurm_error {
  int code;       /* 0: no error entry */
  char text[256]; /* "error", then ": description" when present */
};

struct slurm_node {
  char name[SLURM_NAME_MAX];
  char state[24]; /* base state as sent: "idle", "mixed", "down" */
  bool usable;    /* may take new jobs: up, and no DRAIN-like flag */
  bool down;      /* down, or not responding: jobs on it are lost */
  char why[64];   /* when !usable: the state or the first bad flag */
  enum tw_arch arch;
  int cpus, alloc_cpus;
  int64_t memory_mb, alloc_memory_mb;
  char gpu_type[32]; /* Slurm's GRES type ("a100"); "" untyped */
  int gpus, gpus_used;
  char rack[SLURM_NAME_MAX]; /* from a feature rack=X; "" none */
  char partitions[SLURM_NODE_PARTS_MAX][SLURM_NAME_MAX];
  size_t n_partitions;
};

struct slurm_partition {
  char name[SLURM_NAME_MAX];
  bool up;
  bool is_default;
  int64_t max_time_min; /* -1: unlimited */
};

struct slurm_job {
  int64_t id;
  char name[160];
  char comment[512];
  char state[24];  /* "PENDING", "RUNNING", "COMPLETED", ... */
  char reason[64]; /* state_reason: "None", "NodeDown", ... */
  char partition[SLURM_NAME_MAX];
  char nodes[256]; /* hostlist: "gpu[1-2],cpu1"; "" before it runs */
  char features[128];
  int64_t raw_exit; /* wait status as Slurm keeps it; -1 unknown */
  int restart_cnt;
  int64_t submit_time, start_time, end_time; /* unix seconds; 0 unknown */
  /* What it asked for, per node (used to hold capacity for pending jobs). */
  int cpus;
  int64_t memory_per_node_mb;
  char gpu_type[32];
  int gpus;
  int node_count;
};

/* The parsed "errors" array of any answer (0 when absent, body not JSON, or
 * empty); *first gets its first entry. */
size_t slurm_parse_errors(const char *body, size_t len,
                          struct slurm_error *first);

/* GET /nodes.  *out is malloc'd (free()), *n its length. */
enum tw_rc slurm_parse_nodes(const char *body, size_t len,
                             struct slurm_node **out, size_t *n,
                             struct tw_err *err);

/* GET /partitions. */
enum tw_rc slurm_parse_partitions(const char *body, size_t len,
                                  struct slurm_partition **out, size_t *n,
                                  struct tw_err *err);

/* GET /jobs and GET /job/{id}. */
enum tw_rc slurm_parse_jobs(const char *body, size_t len,
                            struct slurm_job **out, size_t *n,
                            struct tw_err *err);

/* POST /job/submit: *job_id, or -1 when the answer carries none (then
 * *first says why).  A job id next to errors is a success: a held job
 * comes back with error 2042. */
enum tw_rc slurm_parse_submit(const char *body, size_t len, int64_t *job_id,
                              struct slurm_error *first, struct tw_err *err);

/* A GRES string ("gpu:a100:2", "gpu:2", "gpu:a100:1(IDX:0)",
 * "gpu:a100:0(IDX:N/A)", "gres:gpu:a100:1", "(null)", "", lists joined by
 * commas): the GPU count, and the type of the first typed GPU entry into
 * type[type_size] ("" when untyped).  Entries other than gpu are ignored. */
int slurm_gres_gpus(const char *gres, char *type, size_t type_size);

/* Does hostlist ("gpu[1-3,5],cpu1", "node01") name host?  Ranges are
 * compared as numbers, never expanded, so a huge range costs nothing. */
bool slurm_hostlist_has(const char *hostlist, const char *host);

/* The exit code of a wait status: the process's own code, or 128 + the
 * signal that ended it. */
int slurm_exit_code(int64_t raw);

/* Tradewind's tags in a job comment: "tradewind job=J attempt=A tenant=T
 * type=X", values percent-encoded.  False when the comment is not ours. */
struct slurm_tags {
  char job[TW_MODEL_TAG_MAX];
  char attempt[TW_MODEL_TAG_MAX];
  char tenant[TW_MODEL_TAG_MAX];
  char type[TW_MODEL_NAME_MAX];
};
bool slurm_tags_parse(const char *comment, struct slurm_tags *out);
/* Appends the comment for tags to out. */
void slurm_tags_format(const struct slurm_tags *tags, struct tw_buf *out);

/* How a Slurm job state maps to an instance.  requeued: Slurm sent the job
 * back to its queue after a failure (restart_cnt > 0 and not ended). */
struct slurm_state_map {
  enum tw_instance_state state;
  bool finished; /* ended on its own: exit_code is the outcome */
  int exit_code;
  bool requeued;
};
void slurm_map_state(const struct slurm_job *j, struct slurm_state_map *out);

/* The times billing follows (struct tw_instance running_ms, ended_ms):
 * the allocation's StartTime once it runs, its EndTime once it ended
 * (while running Slurm's EndTime is the time limit's, not an end); 0
 * unknown. */
void slurm_run_times(const struct slurm_job *j, const struct slurm_state_map *m,
                     int64_t *running_ms, int64_t *ended_ms);

/* The class of a failed call: HTTP status plus Slurm's error code (0 when
 * none).  2017 (invalid job id) is TW_E_NOTFOUND; a request the cluster
 * cannot hold (2000 invalid partition, 2014/2015 node or partition
 * configuration unavailable, 2029 invalid feature: the offer went stale)
 * is TW_E_CAPACITY; 1800 and the 1001-1014 communication errors
 * (slurmctld down) TW_E_RETRYABLE; 1007 and 401 TW_E_AUTH; 5005 ("Zero
 * Bytes were transmitted", how slurmctld refuses a bad JWT) TW_E_AUTH;
 * other 2xxx codes TW_E_INVALID; the rest by HTTP status.  -1 ("Unspecified
 * error") is ambiguous (a refused token, or slurmctld down) and maps to
 * TW_E_RETRYABLE here: the adapter probes before calling it auth. */
enum tw_rc slurm_classify(long status, int code);

/* What one submission asks for. */
struct slurm_submit {
  const char *script; /* NULL: "true" */
  const char *name;   /* "tw-<token>" */
  const char *comment;
  const char *partition;
  const char *constraints; /* "rack=r1" or NULL */
  int nodes;               /* >= 1 */
  int cpus;                /* per node */
  int64_t memory_mb;       /* per node; 0: Slurm's default */
  const char *gpu_type;    /* NULL or "": untyped */
  int gpus;                /* per node */
  int64_t time_limit_min;  /* 0: the partition's default */
  const char *cwd;
  const char *output;      /* stdout and stderr, merged */
  const struct tw_kv *env; /* NAME=value pairs, in order; later wins */
  size_t n_env;
};
/* Appends the JSON body of POST /job/submit to out.  A script without a
 * "#!" line gets "#!/bin/sh" (slurmctld refuses a batch script without). */
void slurm_submit_json(const struct slurm_submit *s, struct tw_buf *out);

/* The "exp" claim of a JWT (unix seconds), or -1 when token is not a JWT
 * or has no exp.  The signature is not checked: only slurmctld has the
 * key. */
int64_t slurm_jwt_exp(const char *token);

#endif
