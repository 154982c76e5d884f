/* agent.h - tradewind-agent: registers an attempt, runs its job, reports
 * what happened (docs/agent.md).  agent/main.c is the command line over
 * tw_agent_main(); tests run the same function in a child process. */
#ifndef TW_AGENT_AGENT_H
#define TW_AGENT_AGENT_H

#include <stdint.h>

#define TW_AGENT_VERSION "0.1.0"

enum tw_agent_cloud {
  TW_CLOUD_LOCAL,
  TW_CLOUD_AWS,
  TW_CLOUD_AZURE,
  TW_CLOUD_ALIBABA
};

struct tw_agent_opts {
  const char *broker;     /* http(s)://host:port */
  const char *attempt;    /* the attempt's client token */
  const char *token_file; /* holds twa_... */
  const char *ca;         /* CA bundle for an https broker, or NULL */
  enum tw_agent_cloud cloud;
  const char *dir;          /* the agent's directory: state, logs, token */
  int64_t max_buffer_bytes; /* unsent log bytes kept per stream */
  const char *metadata_url; /* TRADEWIND_METADATA_URL, or NULL */
  int node_rank;            /* --node-rank: a gang's node; -1 none */
};

/* Parses argv (docs/agent.md); returns 0, 1 for --help/--version (already
 * printed), or 2 with a message on stderr. */
int tw_agent_parse_args(int argc, char **argv, struct tw_agent_opts *o);

/* Runs the attempt to its reported end.  Returns the process exit code:
 * 0 once the exit report was accepted, 1 when the broker refused the
 * attempt for good (a 4xx at register or exit). */
int tw_agent_main(const struct tw_agent_opts *o);

#endif
