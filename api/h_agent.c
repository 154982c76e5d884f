/* h_agent.c - the routes of tradewind-agent (h_agent.h).  api/auth.c has
 * already made sure the caller is the agent of the attempt in the path
 * (or, for GET /v1/agent/binary, any live attempt's agent). */
#include "api/h_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "broker/base/log.h"
#include "broker/sched/agent.h"
#include "broker/sched/agent_msg.h"

/* The module and the caller, else answered (503 / 401). */
static bool caller_of(struct tw_req *r, struct tw_agent **a,
                      const struct tw_agent_caller **c) {
  *a = tw_api_agent(r->api);
  *c = tw_auth_agent(r);
  if (!*a) {
    tw_problem(r, 503, "unavailable", NULL, "this server runs no agents");
    return false;
  }
  if (!*c) {
    tw_problem(r, 401, "unauthenticated", NULL, "an agent token is required");
    return false;
  }
  return true;
}

static void answer_empty(struct tw_req *r) {
  tw_buf_adds(&r->out, "{}");
  tw_req_json(r, 200);
}

static void answer_err(struct tw_req *r, const struct tw_err *err) {
  tw_problem_err(r, err);
}

void tw_h_agent_register(struct tw_req *r) {
  struct tw_agent *a;
  const struct tw_agent_caller *c;
  if (!caller_of(r, &a, &c))
    return;
  struct tw_agent_register_msg m;
  struct tw_err err = {0};
  if (tw_agent_parse_register(r->body.data, r->body.len, &m, &err)) {
    answer_err(r, &err);
    return;
  }
  if (tw_agent_on_register(a, c, &m, &r->out, &err)) {
    tw_buf_reset(&r->out);
    answer_err(r, &err);
  } else {
    tw_req_json(r, 200);
  }
  tw_agent_register_msg_release(&m);
}

void tw_h_agent_heartbeat(struct tw_req *r) {
  struct tw_agent *a;
  const struct tw_agent_caller *c;
  if (!caller_of(r, &a, &c))
    return;
  struct tw_agent_phase_msg m;
  struct tw_err err = {0};
  const char *action = "none";
  if (tw_agent_parse_heartbeat(r->body.data, r->body.len, &m, &err) ||
      tw_agent_on_heartbeat(a, c, &m, &action, &err)) {
    answer_err(r, &err);
    return;
  }
  tw_buf_printf(&r->out, "{\"action\":\"%s\"}", action);
  tw_req_json(r, 200);
}

/* A report answered with {} once applied: parsed, then stored through
 * tw_agent_on_<kind> (broker/sched/agent.h). */
#define REPORT_HANDLER(kind)                                                   \
  void tw_h_agent_##kind(struct tw_req *r) {                                   \
    struct tw_agent *a;                                                        \
    const struct tw_agent_caller *c;                                           \
    if (!caller_of(r, &a, &c))                                                 \
      return;                                                                  \
    struct tw_agent_##kind##_msg m;                                            \
    struct tw_err err = {0};                                                   \
    if (tw_agent_parse_##kind(r->body.data, r->body.len, &m, &err) ||          \
        tw_agent_on_##kind(a, c, &m, &err)) {                                  \
      answer_err(r, &err);                                                     \
      return;                                                                  \
    }                                                                          \
    answer_empty(r);                                                           \
  }

REPORT_HANDLER(phase)
REPORT_HANDLER(checkpoint)
REPORT_HANDLER(notice)

void tw_h_agent_exit(struct tw_req *r) {
  struct tw_agent *a;
  const struct tw_agent_caller *c;
  if (!caller_of(r, &a, &c))
    return;
  struct tw_agent_exit_msg m;
  struct tw_err err = {0};
  bool first = false;
  if (tw_agent_parse_exit(r->body.data, r->body.len, &m, &err)) {
    answer_err(r, &err);
    return;
  }
  if (tw_agent_exit_holds(&m)) {
    /* a gang's node other than rank 0 exited 0: the attempt goes on, and
     * the node waits for its end (heartbeats) */
    tw_buf_adds(&r->out, "{\"held\":true}");
    tw_req_json(r, 200);
    return;
  }
  if (tw_agent_on_exit(a, c, &m, &first, &err)) {
    answer_err(r, &err);
    return;
  }
  if (!first)
    tw_req_add_header(r, "Idempotent-Replayed", "true");
  answer_empty(r);
}

void tw_h_agent_logs(struct tw_req *r) {
  struct tw_agent *a;
  const struct tw_agent_caller *c;
  if (!caller_of(r, &a, &c))
    return;
  bool is_err = false;
  int64_t offset = 0, next = 0;
  struct tw_err err = {0};
  if (tw_agent_parse_log_query(tw_req_query(r, "stream"),
                               tw_req_query(r, "offset"), &is_err, &offset,
                               &err)) {
    answer_err(r, &err);
    return;
  }
  if (r->body.len > (1u << 20)) {
    tw_problem(r, 413, "too-large", NULL,
               "a log chunk is at most 1048576 bytes, got %zu", r->body.len);
    return;
  }
  enum tw_store_log_result res = TW_STORE_LOG_OK;
  if (tw_agent_on_logs(a, c, is_err, offset, r->body.data ? r->body.data : "",
                       r->body.len, &res, &next, &err)) {
    answer_err(r, &err);
    return;
  }
  if (res == TW_STORE_LOG_GAP) {
    tw_problem(r, 409, "log-gap", "offset",
               "offset %lld is beyond the %lld bytes stored; send from "
               "next_offset",
               (long long)offset, (long long)next);
    /* the problem body with next_offset as a member of its own */
    if (r->out.len && r->out.data[r->out.len - 1] == '}') {
      r->out.data[--r->out.len] = '\0';
      tw_buf_printf(&r->out, ",\"next_offset\":%lld}", (long long)next);
    }
    return;
  }
  if (res == TW_STORE_LOG_FULL) {
    tw_problem(r, 413, "too-large", NULL,
               "the attempt's output is bounded by agent.max_log_bytes; "
               "nothing more is kept");
    return;
  }
  tw_buf_printf(&r->out, "{\"next_offset\":%lld}", (long long)next);
  tw_req_json(r, 200);
}

void tw_h_agent_binary(struct tw_req *r) {
  struct tw_agent *a = tw_api_agent(r->api);
  const char *path = NULL, *sha = NULL;
  if (!a) {
    tw_problem(r, 503, "unavailable", NULL, "this server runs no agents");
    return;
  }
  if (!tw_agent_binary(a, &path, &sha)) {
    tw_problem(r, 404, "not-found", NULL, "this server serves no agent binary");
    return;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    tw_log_error("agent", "request=%s agent binary %s unreadable",
                 r->request_id, path);
    tw_problem(r, 503, "unavailable", NULL, "the agent binary is unreadable");
    return;
  }
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&r->out, chunk, n);
  fclose(f);
  tw_req_add_header(r, "X-Tradewind-SHA256", sha);
  r->status = 200;
  r->content_type = "application/octet-stream";
}
