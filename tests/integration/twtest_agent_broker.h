/* twtest_agent_broker.h - a tiny broker for tradewind-agent's tests: the
 * /v1/agent/attempts/{attempt}/... routes of docs/agent.md over
 * libmicrohttpd, with what it was told kept in memory across a stop and
 * a start (as a real broker keeps it in its store).  Also starts and
 * stops the agent binary as a child process. */
#ifndef TW_TESTS_TWTEST_AGENT_BROKER_H
#define TW_TESTS_TWTEST_AGENT_BROKER_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tb_log {
  char *data;
  size_t len;
};

struct tb {
  struct MHD_Daemon *d;
  unsigned port;
  pthread_mutex_t mu;
  char token[96];
  char attempt[64];
  char *register_answer; /* JSON the register route answers */
  int registers, heartbeats, phases, notices, checkpoints, exits, log_posts;
  char last_phase[16];
  struct tb_log log[2]; /* stdout, stderr */
  int64_t dup_bytes;    /* bytes posted that the broker already had */
  json_t *exit_body;    /* the first exit report */
  json_t *notice_body;  /* the first notice */
  json_t *checkpoint_body;
  char action[16];           /* the next heartbeat's action, once */
  int fail_logs_after_store; /* store the bytes, answer 503, this often */
  int64_t max_log_bytes;     /* 0: no bound */
  int unauthorized;          /* requests refused with 401 */
};

/* Starts the broker on 127.0.0.1:port (0: any); the register answer is
 * answer (copied).  Returns 0 or -1. */
int tb_start(struct tb *b, unsigned port, const char *attempt,
             const char *token, const char *answer);
/* Stops serving; keeps what it was told (tb_serve starts it again on the
 * same port). */
void tb_pause(struct tb *b);
int tb_serve(struct tb *b);
void tb_free(struct tb *b);
void tb_set_action(struct tb *b, const char *action);
/* Waits until cond(b) holds under the lock or timeout_ms passes. */
bool tb_wait(struct tb *b, bool (*cond)(struct tb *), int timeout_ms);
bool tb_exited(struct tb *b);

/* Starts tradewind-agent on dir (made here) for the broker: cloud is
 * aws|azure|alibaba|local; metadata_url may be NULL.  extra: more
 * arguments, NULL-terminated (may be NULL).  Returns its pid. */
pid_t tb_agent_start(const struct tb *b, const char *dir, const char *cloud,
                     const char *metadata_url, const char *const *extra);
/* Waits for the agent up to timeout_ms; returns its exit code, or -1 if
 * it had to be killed (or died by a signal).  With b, its lock is taken
 * once after, so the test reads what the broker was told after every
 * write of it (the agent no longer writes). */
int tb_agent_wait(struct tb *b, pid_t pid, int timeout_ms);
/* Prints the agent's log (dir/agent.log) to stderr. */
void tb_agent_log(const char *dir);

int64_t tb_now_ms(void);

#endif
