/* store_agent.h - what tradewind-agent reports, as kept (module "agent":
 * agent_key, agent_attempts, agent_notices, agent_logs).  The rules (who
 * may report, what a report does to the attempt) are the agent module's
 * (broker/sched/agent.h); the store keeps the rows and makes each report
 * idempotent: a report sent twice changes nothing the second time.
 * Thread-safe, as the store. */
#ifndef TW_CORE_STORE_AGENT_H
#define TW_CORE_STORE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

struct tw_store;

/* ---- the daemon's agent key (32 bytes) ------------------------------------
 * Kept here in plain only when no `secrets:` key is configured; the agent
 * module seals it otherwise and drops the plain row. */

/* *found false when none is stored. */
enum tw_rc tw_store_agent_key_get(struct tw_store *s, bool *found,
                                  unsigned char key[32], struct tw_err *err);
/* Stores key unless one is stored already, then reads back the one kept
 * (two first starts racing agree). */
enum tw_rc tw_store_agent_key_init(struct tw_store *s, unsigned char key[32],
                                   struct tw_err *err);
enum tw_rc tw_store_agent_key_drop(struct tw_store *s, struct tw_err *err);

/* ---- attempts ------------------------------------------------------------ */

/* One agent-run attempt as stored.  Times are Unix ms, 0: not yet. */
struct tw_store_agent {
  int64_t attempt_id;
  char job_id[32];
  char client_token[48];
  int64_t created_ms;
  int64_t registered_ms;
  char instance_id[128];
  char cloud[16];
  char agent_version[32];
  char phase[16]; /* "", "setup", "run", "exited" */
  int64_t phase_ms, last_hb_ms;
  int64_t checkpoint_ms, progress_s;
  int64_t exit_ms; /* when the first exit report arrived */
  bool has_code;   /* exit_code, else signal */
  int exit_code, signal;
  int64_t started_ms, ended_ms;
  bool after_notice;
  int64_t cancel_ms; /* when the broker first asked it to cancel */
  int64_t out_bytes, err_bytes;
  /* the attempt's own row */
  bool attempt_ended;
};

/* Records attempt_id as run by an agent, with the hex SHA-256 of its
 * token; a second call keeps the first row. */
enum tw_rc tw_store_agent_add(struct tw_store *s, int64_t attempt_id,
                              const char *job_id, const char *client_token,
                              const char *token_hash_hex, int64_t at_ms,
                              struct tw_err *err);
/* The attempt whose token hashes to token_hash_hex; *found false when
 * none. */
enum tw_rc tw_store_agent_by_hash(struct tw_store *s,
                                  const char *token_hash_hex, bool *found,
                                  struct tw_store_agent *out,
                                  struct tw_err *err);
/* attempt_id's row; *found false when it is not run by an agent. */
enum tw_rc tw_store_agent_get(struct tw_store *s, int64_t attempt_id,
                              bool *found, struct tw_store_agent *out,
                              struct tw_err *err);

/* The first registration is kept (instance, cloud, metadata, version);
 * every one counts as a heartbeat.  *first says whether this one was
 * the first. */
struct tw_store_agent_reg {
  int64_t attempt_id;
  const char *instance_id, *cloud, *metadata_json, *agent_version;
  int64_t at_ms;
};
enum tw_rc tw_store_agent_register(struct tw_store *s,
                                   const struct tw_store_agent_reg *r,
                                   bool *first, struct tw_err *err);
/* A heartbeat (phase may be NULL: unchanged) at at_ms; the latest time
 * wins. */
enum tw_rc tw_store_agent_heartbeat(struct tw_store *s, int64_t attempt_id,
                                    const char *phase, int64_t at_ms,
                                    struct tw_err *err);
/* Heartbeats kept in memory (broker/sched/agent.c), stored in one write:
 * attempt ids[i] was heard from at at_ms[i]; the latest time wins. */
enum tw_rc tw_store_agent_heartbeats(struct tw_store *s, const int64_t *ids,
                                     const int64_t *at_ms, size_t n,
                                     struct tw_err *err);
/* A saved checkpoint: the largest progress is kept. */
enum tw_rc tw_store_agent_checkpoint(struct tw_store *s, int64_t attempt_id,
                                     int64_t at_ms, int64_t progress_s,
                                     struct tw_err *err);
/* The broker first asked the attempt to cancel at at_ms (kept first). */
enum tw_rc tw_store_agent_cancel(struct tw_store *s, int64_t attempt_id,
                                 int64_t at_ms, struct tw_err *err);

/* A checkpoint request made at requested_ms is handed to the agent (or
 * known to it: its own notice); *first false when it was already. */
enum tw_rc tw_store_agent_ckpt_sent(struct tw_store *s, int64_t attempt_id,
                                    int64_t requested_ms, bool *first,
                                    struct tw_err *err);

/* The exit report: the first is kept, *first false for a later one. */
struct tw_store_agent_exit {
  int64_t attempt_id;
  bool has_code;
  int exit_code, signal;
  int64_t started_ms, ended_ms, at_ms;
  bool after_notice;
};
enum tw_rc tw_store_agent_exit(struct tw_store *s,
                               const struct tw_store_agent_exit *e, bool *first,
                               struct tw_err *err);

/* ---- notices ------------------------------------------------------------- */

struct tw_store_agent_notice {
  int64_t attempt_id;
  char event_id[128];
  char kind[16];   /* "interruption", "rebalance" */
  char action[32]; /* the cloud's word: "terminate", "Preempt" */
  char source[24]; /* "imds", "scheduled-events", "meta-server" */
  int64_t deadline_ms, at_ms;
};
/* Stores a notice unless one with its event id is stored; *added. */
enum tw_rc tw_store_agent_notice_add(struct tw_store *s,
                                     const struct tw_store_agent_notice *n,
                                     bool *added, struct tw_err *err);
/* The attempt's notices the scheduler has not applied, oldest first;
 * free() *out. */
enum tw_rc tw_store_agent_notices_new(struct tw_store *s, int64_t attempt_id,
                                      struct tw_store_agent_notice **out,
                                      size_t *n, struct tw_err *err);
enum tw_rc tw_store_agent_notice_applied(struct tw_store *s, int64_t attempt_id,
                                         const char *event_id,
                                         struct tw_err *err);

/* ---- logs ---------------------------------------------------------------- */

enum tw_agent_stream { TW_AGENT_STDOUT = 0, TW_AGENT_STDERR = 1 };

enum tw_store_log_result {
  TW_STORE_LOG_OK = 0, /* stored (or already stored: nothing new) */
  TW_STORE_LOG_GAP,    /* offset beyond what is stored */
  TW_STORE_LOG_FULL    /* the attempt's bound would be passed */
};
/* Appends the part of data (len bytes, at offset of stream) not stored
 * yet, unless both streams would then hold more than max_total bytes.
 * *next is what the stream holds after. */
enum tw_rc tw_store_agent_log_append(struct tw_store *s, int64_t attempt_id,
                                     enum tw_agent_stream stream,
                                     int64_t offset, const void *data,
                                     size_t len, int64_t max_total,
                                     enum tw_store_log_result *res,
                                     int64_t *next, struct tw_err *err);
/* Appends to out at most limit bytes of stream from offset; *total is
 * the stream's stored length. */
enum tw_rc tw_store_agent_log_read(struct tw_store *s, int64_t attempt_id,
                                   enum tw_agent_stream stream, int64_t offset,
                                   size_t limit, struct tw_buf *out,
                                   int64_t *total, struct tw_err *err);

#endif
