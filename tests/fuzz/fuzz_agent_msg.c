/* fuzz_agent_msg.c - every parser of what tradewind-agent sends the broker
 * (broker/sched/agent_msg.h) and the agent token's shape check, on
 * arbitrary bytes.  The first byte picks the parser (register, heartbeat,
 * phase, checkpoint, notice, exit, the logs query, the token); the rest is
 * its input.
 *
 * Besides not crashing: a body that parses yields fields inside the
 * contract's bounds (NUL-terminated strings within their buffers, the
 * phase one of its words, exit_code or signal exactly one and in range,
 * register's metadata a JSON object that parses again); one that does not
 * names the field it fails on; a token passes the shape check only when it
 * is twa_ and 64 lower-case hex digits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/node.h"
#include "broker/sched/agent.h"
#include "broker/sched/agent_msg.h"
#include "tests/fuzz/fuzz.h"

static void str_ok(const char *s, size_t cap) {
  if (!memchr(s, '\0', cap))
    abort();
}

static void named(const struct tw_err *e) {
  if (!e->field[0] || !e->msg[0])
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size)
    return 0;
  unsigned which = data[0] % 8;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  struct tw_err err = {0};
  switch (which) {
  case 0: {
    struct tw_agent_register_msg m;
    if (tw_agent_parse_register(body, len, &m, &err) == TW_OK) {
      str_ok(m.instance_id, sizeof m.instance_id);
      str_ok(m.cloud, sizeof m.cloud);
      str_ok(m.agent_version, sizeof m.agent_version);
      if (!m.instance_id[0] || !m.metadata_json)
        abort();
      struct tw_node *n = NULL;
      if (tw_node_parse_json(m.metadata_json, strlen(m.metadata_json), &n,
                             NULL) ||
          n->kind != TW_NODE_MAP)
        abort();
      tw_node_free(n);
      tw_agent_register_msg_release(&m);
    } else {
      named(&err);
    }
    break;
  }
  case 1:
  case 2: {
    struct tw_agent_phase_msg m;
    enum tw_rc rc = which == 1 ? tw_agent_parse_heartbeat(body, len, &m, &err)
                               : tw_agent_parse_phase(body, len, &m, &err);
    if (rc == TW_OK) {
      str_ok(m.phase, sizeof m.phase);
      if (strcmp(m.phase, "setup") && strcmp(m.phase, "run") &&
          (which == 2 || strcmp(m.phase, "exited")))
        abort();
      if (m.at_ms < 0)
        abort();
    } else {
      named(&err);
    }
    break;
  }
  case 3: {
    struct tw_agent_checkpoint_msg m;
    if (tw_agent_parse_checkpoint(body, len, &m, &err) == TW_OK) {
      if (m.progress_s < 0 || m.at_ms < 0)
        abort();
    } else {
      named(&err);
    }
    break;
  }
  case 4: {
    struct tw_agent_notice_msg m;
    if (tw_agent_parse_notice(body, len, &m, &err) == TW_OK) {
      str_ok(m.kind, sizeof m.kind);
      str_ok(m.action, sizeof m.action);
      str_ok(m.source, sizeof m.source);
      str_ok(m.event_id, sizeof m.event_id);
      if ((strcmp(m.kind, "interruption") && strcmp(m.kind, "rebalance")) ||
          !m.event_id[0] || m.deadline_ms < 0)
        abort();
    } else {
      named(&err);
    }
    break;
  }
  case 5: {
    struct tw_agent_exit_msg m;
    if (tw_agent_parse_exit(body, len, &m, &err) == TW_OK) {
      if (m.has_code ? (m.exit_code < 0 || m.exit_code > 255 || m.signal)
                     : (m.signal < 1 || m.signal > 127 || m.exit_code))
        abort();
    } else {
      named(&err);
    }
    break;
  }
  case 6: {
    /* stream NUL offset */
    char buf[64];
    size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, body, n);
    buf[n] = '\0';
    const char *offset = strlen(buf) < n ? buf + strlen(buf) + 1 : "";
    bool is_err;
    int64_t off;
    if (tw_agent_parse_log_query(buf, offset, &is_err, &off, &err) == TW_OK) {
      if (off < 0 || (is_err != !strcmp(buf, "stderr")))
        abort();
    } else {
      named(&err);
    }
    break;
  }
  default: {
    char tok[128];
    size_t n = len < sizeof tok - 1 ? len : sizeof tok - 1;
    memcpy(tok, body, n);
    tok[n] = '\0';
    if (tw_agent_token_shape(tok)) {
      if (strlen(tok) != TW_AGENT_TOKEN_LEN || strncmp(tok, "twa_", 4) ||
          strspn(tok + 4, "0123456789abcdef") != 64)
        abort();
    }
    break;
  }
  }
  return 0;
}
