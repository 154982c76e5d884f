/* agent_msg.h - the bodies tradewind-agent sends to /v1/agent/... parsed
 * into plain structs (docs/agent.md, "The protocol").  Pure: no I/O, no
 * state; every parser refuses what is not the contract's with TW_E_INVALID
 * naming the field (err->field) and the reason.  Keys the contract does
 * not name are ignored, so an agent one version ahead still reports. */
#ifndef TW_BROKER_AGENT_MSG_H
#define TW_BROKER_AGENT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_agent_register_msg {
  char instance_id[128];
  char cloud[16];
  char agent_version[32];
  char *metadata_json; /* compact JSON of `metadata` ("{}" when absent);
                          owned: tw_agent_register_msg_release() */
  int node_rank;       /* node_rank: a gang's node 0..N-1; -1 when absent */
  char ip[48];         /* ip: the node's address for its peers; "" absent */
};
enum tw_rc tw_agent_parse_register(const char *body, size_t len,
                                   struct tw_agent_register_msg *out,
                                   struct tw_err *err);
void tw_agent_register_msg_release(struct tw_agent_register_msg *m);

/* heartbeat (phase setup | run | exited) and phase (setup | run) */
struct tw_agent_phase_msg {
  char phase[8];
  int64_t at_ms;
};
enum tw_rc tw_agent_parse_heartbeat(const char *body, size_t len,
                                    struct tw_agent_phase_msg *out,
                                    struct tw_err *err);
enum tw_rc tw_agent_parse_phase(const char *body, size_t len,
                                struct tw_agent_phase_msg *out,
                                struct tw_err *err);

struct tw_agent_checkpoint_msg {
  int64_t at_ms, progress_s;
};
enum tw_rc tw_agent_parse_checkpoint(const char *body, size_t len,
                                     struct tw_agent_checkpoint_msg *out,
                                     struct tw_err *err);

struct tw_agent_notice_msg {
  char kind[16];   /* interruption | rebalance */
  char action[32]; /* the cloud's own word */
  char source[24]; /* imds | scheduled-events | meta-server | local */
  char event_id[128];
  int64_t deadline_ms; /* 0: none given */
};
enum tw_rc tw_agent_parse_notice(const char *body, size_t len,
                                 struct tw_agent_notice_msg *out,
                                 struct tw_err *err);

struct tw_agent_exit_msg {
  bool has_code; /* exit_code, else signal */
  int exit_code; /* 0..255 */
  int signal;    /* 1..127 */
  int64_t started_ms, ended_ms;
  bool after_notice;
  int node_rank; /* node_rank: a gang's node; -1 when absent */
};

/* Whether exit report m leaves its attempt running: a gang's node other
 * than rank 0 that exited 0 (not after a notice).  The attempt's exit is
 * rank 0's, or the first non-zero of any node (docs/agent.md). */
bool tw_agent_exit_holds(const struct tw_agent_exit_msg *m);
enum tw_rc tw_agent_parse_exit(const char *body, size_t len,
                               struct tw_agent_exit_msg *out,
                               struct tw_err *err);

/* The query of POST .../logs: stream=stdout|stderr (required), offset=N
 * (required, 0..2^53).  *stderr_out true for stderr. */
enum tw_rc tw_agent_parse_log_query(const char *stream, const char *offset,
                                    bool *stderr_out, int64_t *offset_out,
                                    struct tw_err *err);

#endif
