/* agent_parse.h - what tradewind-agent reads from outside: the broker's
 * answers, the clouds' metadata documents and its own state file
 * (docs/agent.md).  Pure functions over bytes: no I/O, so each has a fuzz
 * target (tests/fuzz/fuzz_agent_parse.c). */
#ifndef TW_AGENT_AGENT_PARSE_H
#define TW_AGENT_AGENT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What to run, from the register answer. */
struct tw_agent_job {
  char *job_id;
  int attempt;
  char *setup; /* "" when none */
  char *run;
  /* the job's working directory to fetch and unpack before setup: its
   * SHA-256, 64 lower-case hex digits; "" when the job has none */
  char workdir_sha[65];
  char **env; /* "NAME=value", NULL-terminated */
  size_t n_env;
  int64_t time_limit_s; /* 0: none */
  int64_t grace_s;
  int64_t heartbeat_s;
  char *user; /* NULL: run as the agent */
  bool has_checkpoint;
  char *checkpoint_uri;
  int64_t checkpoint_interval_s, checkpoint_resume_s;
  /* gang: this node's rank and the gang's size; ready once every node
   * registered (env then holds the node list).  Absent: rank 0 of 1,
   * ready. */
  int gang_rank, gang_nodes;
  bool gang_ready;
};

/* Parses a register answer into *job (freed with tw_agent_job_free).
 * Returns 0, or -1 with a message naming the field in err. */
int tw_agent_parse_register(const char *body, size_t len,
                            struct tw_agent_job *job, char *err, size_t cap);
void tw_agent_job_free(struct tw_agent_job *job);

enum tw_agent_action {
  TW_ACTION_BAD = -1,
  TW_ACTION_NONE,
  TW_ACTION_CANCEL,
  TW_ACTION_CHECKPOINT
};

/* The heartbeat answer's "action". */
enum tw_agent_action tw_agent_parse_action(const char *body, size_t len);

/* The logs answer's (200 or 409) "next_offset".  Returns 0 or -1. */
int tw_agent_parse_next_offset(const char *body, size_t len, int64_t *next);

enum tw_notice_kind { TW_NOTICE_INTERRUPTION, TW_NOTICE_REBALANCE };

/* A notice as the agent forwards it (POST .../notice). */
struct tw_agent_notice {
  enum tw_notice_kind kind;
  char action[32];     /* terminate, stop, hibernate, Preempt, reclaim, ... */
  int64_t deadline_ms; /* 0: not given */
  char source[24];     /* imds, scheduled-events, meta-server */
  char event_id[80];
};

/* AWS spot/instance-action: {"action": "...", "time": "RFC 3339"}. */
int tw_agent_parse_aws_action(const char *body, size_t len,
                              struct tw_agent_notice *n);
/* AWS events/recommendations/rebalance: {"noticeTime": "RFC 3339"}. */
int tw_agent_parse_aws_rebalance(const char *body, size_t len,
                                 struct tw_agent_notice *n);
/* Azure Scheduled Events: the first Preempt event (Scheduled or Started)
 * whose Resources name vm (any event when vm is NULL or empty, or when
 * Resources is empty).  Returns 1 with *n filled, 0 when there is none,
 * -1 when the document is malformed.  *incarnation gets
 * DocumentIncarnation when given. */
int tw_agent_parse_azure_events(const char *body, size_t len, const char *vm,
                                struct tw_agent_notice *n,
                                int64_t *incarnation);
/* Alibaba instance/spot/termination-time: an ISO 8601 UTC time. */
int tw_agent_parse_alibaba_time(const char *body, size_t len,
                                struct tw_agent_notice *n);

/* RFC 1123 / IMF-fixdate ("Mon, 19 Sep 2016 18:29:47 GMT"), as Azure's
 * NotBefore.  Returns 0 and sets *ms, or -1. */
int tw_agent_parse_http_date(const char *s, int64_t *ms);

#endif
