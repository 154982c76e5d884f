/* agent.h - the broker's side of tradewind-agent (docs/agent.md): the
 * daemon's agent key, each attempt's token and bootstrap, and the reports
 * the agent sends, checked and stored.
 *
 * The token of an attempt is HMAC-SHA256(agent key, client token), written
 * `twa_` + 64 hex digits: the same attempt always gets the same token, so
 * a launch sent again with its client token carries the same bootstrap
 * byte for byte.  Only its SHA-256 is stored; it is valid while its
 * attempt is live (the lookup joins the attempt's row), so it is revoked
 * when the attempt ends, whichever way it ends.
 *
 * Reports are stored here (the REST handlers' threads); what they do to
 * the attempt (running, ended by the exit report, a notice acted on,
 * heartbeats lost) is applied by the scheduler's pass
 * (broker/sched/agent_follow.c), so nothing races follow.c.
 *
 * Thread-safe: the object is read-only after tw_agent_new() but for the
 * broker URL, set once before the scheduler starts. */
#ifndef TW_BROKER_AGENT_H
#define TW_BROKER_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/core/store_agent.h"
#include "broker/sched/agent_msg.h"

struct tw_store;
struct tw_secrets;
struct tw_agent;

#define TW_AGENT_TOKEN_LEN 68 /* "twa_" + 64 hex */
/* The sealed secret that holds the key when `secrets:` is configured. */
#define TW_AGENT_KEY_SECRET "tradewind.agent-key"

/* ---- pure ---------------------------------------------------------------- */

/* out = "twa_" + hex(HMAC-SHA256(key, client_token)). */
void tw_agent_token_derive(const unsigned char key[32],
                           const char *client_token,
                           char out[TW_AGENT_TOKEN_LEN + 1]);
/* hex = hex(SHA-256(token)), what the store keeps. */
void tw_agent_token_hash(const char *token, char hex[65]);
/* Whether text has the shape of an agent token. */
bool tw_agent_token_shape(const char *text);

/* What one attempt's bootstrap says (docs/agent.md, "The bootstrap"). */
struct tw_agent_boot {
  const char *job_id;
  int attempt_n;
  const char *client_token;
  const char *token;         /* twa_... */
  const char *broker_url;    /* no trailing '/' */
  const char *ca_pem;        /* NULL: the broker serves plain HTTP */
  bool preinstalled;         /* agent.install */
  const char *agent_path;    /* preinstalled: agent.path */
  const char *binary_sha256; /* fetch: hex of the served binary */
  const char *cloud;         /* aws | azure | alibaba | local */
  bool has_rank;             /* a gang's node: --node-rank node_rank */
  int node_rank;             /* 0..N-1, 0 the head */
};
/* Appends the bootstrap script to out.  The same b, the same bytes. */
void tw_agent_bootstrap(const struct tw_agent_boot *b, struct tw_buf *out);

/* What the agent is told at register about its job (pure over the stored
 * spec): the JSON answer of POST .../register. */
struct tw_job_spec;
struct tw_kv;
struct tw_agent_job {
  const char *job_id;
  int attempt_n;
  const struct tw_job_spec *spec;
  int64_t resume_s; /* progress earlier attempts kept */
  int64_t grace_s, heartbeat_s;
  /* the node: its rank, the gang's size, and every node's address in rank
   * order once all registered (ips NULL until then: "ready" false) */
  int node_rank, nodes;
  const char *const *ips;
  const char *traceparent; /* the job's trace context, given to the job as
                              TRACEPARENT; NULL: none */
  /* the job's secrets, opened (docs/jobspec.md#secrets): in the env after
   * the spec's own variables */
  const struct tw_kv *secrets;
  size_t n_secrets;
};
void tw_agent_register_answer(const struct tw_agent_job *j, struct tw_buf *out);

/* ---- the module ---------------------------------------------------------- */

struct tw_tracer;
struct tw_agent_opts {
  struct tw_store *store;     /* borrowed; outlives the module */
  struct tw_secrets *secrets; /* borrowed, outlives the module: the agent
                                 key's and the jobs' secrets; NULL: the key
                                 is kept in plain in the store, and jobs
                                 with secrets are refused */
  struct tw_clock *clock;     /* NULL: real */
  bool preinstalled;          /* agent.install */
  const char *agent_path;     /* agent.path */
  /* agent.binary: read and hashed at start.  Required (TW_E_IO naming
   * agent.binary when unreadable) when need_binary. */
  const char *binary_path;
  bool need_binary;
  const char *broker_url;  /* NULL or "": set later (tw_agent_set_url) */
  const char *ca_pem_file; /* the TLS certificate (chain) agents trust;
                              NULL: plain HTTP */
  int64_t heartbeat_s, heartbeat_timeout_s, max_log_bytes, grace_s;
  /* Spans of the agent's phases (register, phase reports, exit) under
   * the job's trace (docs/observability.md); borrowed, NULL: none. */
  struct tw_tracer *tracer;
};

/* Loads (or makes, at the first start) the agent key: sealed under
 * TW_AGENT_KEY_SECRET with secrets, else in plain in the store; a plain
 * key found once secrets are configured is sealed and its plain row
 * dropped.  *out is owned (tw_agent_free). */
enum tw_rc tw_agent_new(const struct tw_agent_opts *o, struct tw_agent **out,
                        struct tw_err *err);
void tw_agent_free(struct tw_agent *a);

/* fn(ctx) is called when a report the scheduler acts on is stored (an
 * exit, a new notice): the daemon wakes the scheduler's loop with it
 * (tw_sched_wake).  Call before the API serves. */
void tw_agent_set_wake(struct tw_agent *a, void (*fn)(void *ctx), void *ctx);

/* The URL agents call, when the options gave none (the daemon's own, once
 * its port is known).  Call before the scheduler starts. */
void tw_agent_set_url(struct tw_agent *a, const char *url);
const char *tw_agent_url(const struct tw_agent *a);
int64_t tw_agent_heartbeat_s(const struct tw_agent *a);
int64_t tw_agent_heartbeat_timeout_s(const struct tw_agent *a);
int64_t tw_agent_grace_s(const struct tw_agent *a);
/* How many reports that decide something (an exit, a new notice) were
 * stored so far: the scheduler reads the quiet attempts' reports again
 * only when it moved (agent_follow.c). */
uint64_t tw_agent_news(struct tw_agent *a);

/* When attempt_id's agent was last heard from: the later of stored_ms
 * (its stored last heartbeat or registration, 0: never) and what this
 * broker heard and has not stored yet (heartbeats that change nothing but
 * the time are stored in batches, at most a quarter of the heartbeat
 * timeout and 30 s behind); an attempt that had reported is not silent
 * from before this broker started.  Any thread. */
int64_t tw_agent_last_seen_ms(struct tw_agent *a, int64_t attempt_id,
                              int64_t stored_ms);
/* Stores the heartbeats kept in memory now (the daemon, stopping). */
void tw_agent_flush_heartbeats(struct tw_agent *a);

/* Deletes job_id's sealed secrets, if any (its job ended); failures are
 * logged.  Nothing without secrets. */
void tw_agent_forget_secrets(struct tw_agent *a, const char *job_id);

/* The served binary: its path and SHA-256 hex; false when none. */
bool tw_agent_binary(const struct tw_agent *a, const char **path,
                     const char **sha256_hex);

/* The user data of an attempt run by the agent: the token's hash stored
 * beside the attempt (once), then the bootstrap appended to out.  cloud
 * is the adapter's name (aws, azure, alibaba; anything else: local). */
enum tw_rc tw_agent_user_data(struct tw_agent *a, const char *job_id,
                              int64_t attempt_id, int attempt_n,
                              const char *client_token, const char *cloud,
                              struct tw_buf *out, struct tw_err *err);
/* The same for node node_rank (0..N-1) of a gang: its bootstrap names
 * its rank (--node-rank), the token is the attempt's. */
enum tw_rc tw_agent_user_data_node(struct tw_agent *a, const char *job_id,
                                   int64_t attempt_id, int attempt_n,
                                   const char *client_token, const char *cloud,
                                   int node_rank, struct tw_buf *out,
                                   struct tw_err *err);

/* ---- reports (the REST handlers) ----------------------------------------- */

/* Who a token is. */
struct tw_agent_caller {
  int64_t attempt_id;
  char job_id[32];
  char client_token[48];
  bool live;    /* its attempt has not ended: the token is valid */
  bool exited;  /* its exit report is stored */
  char tag[17]; /* 16 hex of the token's hash: safe to log */
};
/* TW_E_AUTH for a token of the wrong shape or that no attempt has. */
enum tw_rc tw_agent_authenticate(struct tw_agent *a, const char *token,
                                 struct tw_agent_caller *out,
                                 struct tw_err *err);

/* Each report of caller c (live, but exit, which answers a replay after
 * the end too).  Answers are JSON appended to out where the route has one.
 * TW_E_NOTFOUND when the job is gone. */
enum tw_rc tw_agent_on_register(struct tw_agent *a,
                                const struct tw_agent_caller *c,
                                const struct tw_agent_register_msg *m,
                                struct tw_buf *out, struct tw_err *err);
/* action: "none", "cancel" (the job was cancelled) or "checkpoint" (the
 * broker asked for one: a provider's notice, a move). */
enum tw_rc tw_agent_on_heartbeat(struct tw_agent *a,
                                 const struct tw_agent_caller *c,
                                 const struct tw_agent_phase_msg *m,
                                 const char **action, struct tw_err *err);
enum tw_rc tw_agent_on_phase(struct tw_agent *a,
                             const struct tw_agent_caller *c,
                             const struct tw_agent_phase_msg *m,
                             struct tw_err *err);
enum tw_rc tw_agent_on_checkpoint(struct tw_agent *a,
                                  const struct tw_agent_caller *c,
                                  const struct tw_agent_checkpoint_msg *m,
                                  struct tw_err *err);
enum tw_rc tw_agent_on_notice(struct tw_agent *a,
                              const struct tw_agent_caller *c,
                              const struct tw_agent_notice_msg *m,
                              struct tw_err *err);
/* *first false for a replay (nothing changed). */
enum tw_rc tw_agent_on_exit(struct tw_agent *a, const struct tw_agent_caller *c,
                            const struct tw_agent_exit_msg *m, bool *first,
                            struct tw_err *err);
/* *res and *next as tw_store_agent_log_append, bounded by
 * agent.max_log_bytes. */
enum tw_rc tw_agent_on_logs(struct tw_agent *a, const struct tw_agent_caller *c,
                            bool is_stderr, int64_t offset, const void *data,
                            size_t len, enum tw_store_log_result *res,
                            int64_t *next, struct tw_err *err);

#endif
