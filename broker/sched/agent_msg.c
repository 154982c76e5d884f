/* agent_msg.c - the agent's report bodies parsed (agent_msg.h). */
#include "broker/sched/agent_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/base/node.h"

/* Bodies are small; anything larger is not an agent's. */
#define MSG_MAX (64 * 1024)
/* Times up to the year 2255 in ms; progress up to ~285 years. */
#define TIME_MAX ((int64_t)9000000000000)

static enum tw_rc parse_obj(const char *body, size_t len, struct tw_node **out,
                            struct tw_err *err) {
  *out = NULL;
  if (!body || !len)
    return tw_err_field(err, TW_E_INVALID, "(body)",
                        "(body): expected a JSON object, got nothing");
  if (len > MSG_MAX)
    return tw_err_field(err, TW_E_INVALID, "(body)",
                        "(body): at most %d bytes, got %zu", MSG_MAX, len);
  struct tw_err perr = {0};
  if (tw_node_parse_json(body, len, out, &perr)) {
    tw_node_free(*out);
    *out = NULL;
    return tw_err_field(err, TW_E_INVALID, "(body)", "(body): %s", perr.msg);
  }
  if ((*out)->kind != TW_NODE_MAP) {
    enum tw_rc rc = tw_err_field(err, TW_E_INVALID, "(body)",
                                 "(body): expected a JSON object, got %s",
                                 tw_node_type_name(*out));
    tw_node_free(*out);
    *out = NULL;
    return rc;
  }
  return TW_OK;
}

/* A string field into dst (at most cap-1 bytes, printable ASCII without
 * quotes or backslashes); required or "" when absent. */
static enum tw_rc get_str(const struct tw_node *m, const char *key,
                          bool required, char *dst, size_t cap,
                          struct tw_err *err) {
  const struct tw_node *v = tw_node_get(m, key);
  dst[0] = '\0';
  if (!v || v->kind == TW_NODE_NULL) {
    if (required)
      return tw_err_field(err, TW_E_INVALID, key, "%s: required", key);
    return TW_OK;
  }
  if (!tw_node_is_string(v))
    return tw_err_field(err, TW_E_INVALID, key, "%s: expected a string, got %s",
                        key, tw_node_type_name(v));
  size_t n = strlen(v->str);
  if (n >= cap)
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: at most %zu characters, got %zu", key, cap - 1, n);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v->str[i];
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
      return tw_err_field(err, TW_E_INVALID, key,
                          "%s: printable ASCII without quotes only", key);
  }
  if (required && !n)
    return tw_err_field(err, TW_E_INVALID, key, "%s: must not be empty", key);
  memcpy(dst, v->str, n + 1);
  return TW_OK;
}

static enum tw_rc get_int(const struct tw_node *m, const char *key,
                          bool required, int64_t min, int64_t max, int64_t *out,
                          struct tw_err *err) {
  const struct tw_node *v = tw_node_get(m, key);
  *out = 0;
  if (!v || v->kind == TW_NODE_NULL) {
    if (required)
      return tw_err_field(err, TW_E_INVALID, key, "%s: required", key);
    return TW_OK;
  }
  int64_t x;
  if (!tw_node_as_int(v, &x))
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: expected an integer, got %s", key,
                        tw_node_type_name(v));
  if (x < min || x > max)
    return tw_err_field(err, TW_E_INVALID, key,
                        "%s: must be between %lld and %lld, got %lld", key,
                        (long long)min, (long long)max, (long long)x);
  *out = x;
  return TW_OK;
}

static enum tw_rc get_word(const struct tw_node *m, const char *key,
                           const char *const *allowed, char *dst, size_t cap,
                           struct tw_err *err) {
  enum tw_rc rc = get_str(m, key, true, dst, cap, err);
  if (rc)
    return rc;
  char list[128] = "";
  for (size_t i = 0; allowed[i]; i++) {
    if (!strcmp(dst, allowed[i]))
      return TW_OK;
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i ? (allowed[i + 1] ? ", " : " or ") : "", allowed[i]);
  }
  return tw_err_field(err, TW_E_INVALID, key, "%s: expected %s, got \"%s\"",
                      key, list, dst);
}

enum tw_rc tw_agent_parse_register(const char *body, size_t len,
                                   struct tw_agent_register_msg *out,
                                   struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_node *m;
  enum tw_rc rc = parse_obj(body, len, &m, err);
  if (rc)
    return rc;
  if ((rc = get_str(m, "instance_id", true, out->instance_id,
                    sizeof out->instance_id, err)) ||
      (rc = get_str(m, "cloud", false, out->cloud, sizeof out->cloud, err)) ||
      (rc = get_str(m, "agent_version", false, out->agent_version,
                    sizeof out->agent_version, err)))
    goto out;
  int64_t rank = 0;
  bool has_rank = tw_node_get(m, "node_rank") &&
                  tw_node_get(m, "node_rank")->kind != TW_NODE_NULL;
  if ((rc = get_int(m, "node_rank", false, 0, 4095, &rank, err)) ||
      (rc = get_str(m, "ip", false, out->ip, sizeof out->ip, err)))
    goto out;
  out->node_rank = has_rank ? (int)rank : -1;
  for (const char *q = out->ip; *q; q++)
    if (!strchr("0123456789abcdefABCDEF.:", *q)) {
      rc = tw_err_field(err, TW_E_INVALID, "ip",
                        "ip: expected an IPv4 or IPv6 address, got \"%s\"",
                        out->ip);
      goto out;
    }
  const struct tw_node *md = tw_node_get(m, "metadata");
  struct tw_buf b;
  tw_buf_init(&b);
  if (md && md->kind != TW_NODE_NULL) {
    if (md->kind != TW_NODE_MAP) {
      rc = tw_err_field(err, TW_E_INVALID, "metadata",
                        "metadata: expected an object, got %s",
                        tw_node_type_name(md));
      tw_buf_release(&b);
      goto out;
    }
    tw_node_to_json(md, &b);
  } else {
    tw_buf_adds(&b, "{}");
  }
  out->metadata_json = tw_buf_detach(&b);
out:
  tw_node_free(m);
  if (rc)
    tw_agent_register_msg_release(out);
  return rc;
}

void tw_agent_register_msg_release(struct tw_agent_register_msg *m) {
  if (!m)
    return;
  free(m->metadata_json);
  m->metadata_json = NULL;
}

static enum tw_rc parse_phase(const char *body, size_t len,
                              const char *const *phases,
                              struct tw_agent_phase_msg *out,
                              struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_node *m;
  enum tw_rc rc = parse_obj(body, len, &m, err);
  if (rc)
    return rc;
  if (!(rc = get_word(m, "phase", phases, out->phase, sizeof out->phase, err)))
    rc = get_int(m, "at_ms", false, 0, TIME_MAX, &out->at_ms, err);
  tw_node_free(m);
  return rc;
}

enum tw_rc tw_agent_parse_heartbeat(const char *body, size_t len,
                                    struct tw_agent_phase_msg *out,
                                    struct tw_err *err) {
  static const char *const P[] = {"setup", "run", "exited", NULL};
  return parse_phase(body, len, P, out, err);
}

enum tw_rc tw_agent_parse_phase(const char *body, size_t len,
                                struct tw_agent_phase_msg *out,
                                struct tw_err *err) {
  static const char *const P[] = {"setup", "run", NULL};
  return parse_phase(body, len, P, out, err);
}

enum tw_rc tw_agent_parse_checkpoint(const char *body, size_t len,
                                     struct tw_agent_checkpoint_msg *out,
                                     struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_node *m;
  enum tw_rc rc = parse_obj(body, len, &m, err);
  if (rc)
    return rc;
  if (!(rc = get_int(m, "at_ms", false, 0, TIME_MAX, &out->at_ms, err)))
    rc = get_int(m, "progress_s", true, 0, TIME_MAX / 1000, &out->progress_s,
                 err);
  tw_node_free(m);
  return rc;
}

enum tw_rc tw_agent_parse_notice(const char *body, size_t len,
                                 struct tw_agent_notice_msg *out,
                                 struct tw_err *err) {
  static const char *const KINDS[] = {"interruption", "rebalance", NULL};
  static const char *const SOURCES[] = {"imds", "scheduled-events",
                                        "meta-server", "local", NULL};
  memset(out, 0, sizeof *out);
  struct tw_node *m;
  enum tw_rc rc = parse_obj(body, len, &m, err);
  if (rc)
    return rc;
  if (!(rc = get_word(m, "kind", KINDS, out->kind, sizeof out->kind, err)) &&
      !(rc = get_str(m, "action", false, out->action, sizeof out->action,
                     err)) &&
      !(rc = get_word(m, "source", SOURCES, out->source, sizeof out->source,
                      err)) &&
      !(rc = get_str(m, "event_id", true, out->event_id, sizeof out->event_id,
                     err)))
    rc = get_int(m, "deadline_ms", false, 0, TIME_MAX, &out->deadline_ms, err);
  tw_node_free(m);
  return rc;
}

enum tw_rc tw_agent_parse_exit(const char *body, size_t len,
                               struct tw_agent_exit_msg *out,
                               struct tw_err *err) {
  memset(out, 0, sizeof *out);
  struct tw_node *m;
  enum tw_rc rc = parse_obj(body, len, &m, err);
  if (rc)
    return rc;
  const struct tw_node *code = tw_node_get(m, "exit_code");
  const struct tw_node *sig = tw_node_get(m, "signal");
  bool has_code = code && code->kind != TW_NODE_NULL;
  bool has_sig = sig && sig->kind != TW_NODE_NULL;
  int64_t v = 0;
  if (has_code == has_sig) {
    rc = tw_err_field(err, TW_E_INVALID, "exit_code",
                      "exit_code: give exit_code or signal, exactly one");
    goto out;
  }
  if (has_code)
    rc = get_int(m, "exit_code", true, 0, 255, &v, err);
  else
    rc = get_int(m, "signal", true, 1, 127, &v, err);
  if (rc)
    goto out;
  out->has_code = has_code;
  if (has_code)
    out->exit_code = (int)v;
  else
    out->signal = (int)v;
  if ((rc = get_int(m, "started_ms", false, 0, TIME_MAX, &out->started_ms,
                    err)) ||
      (rc = get_int(m, "ended_ms", false, 0, TIME_MAX, &out->ended_ms, err)))
    goto out;
  const struct tw_node *an = tw_node_get(m, "after_notice");
  if (an && an->kind != TW_NODE_NULL &&
      !tw_node_as_bool(an, &out->after_notice)) {
    rc = tw_err_field(err, TW_E_INVALID, "after_notice",
                      "after_notice: expected true or false, got %s",
                      tw_node_type_name(an));
    goto out;
  }
  const struct tw_node *nr = tw_node_get(m, "node_rank");
  out->node_rank = -1;
  if (nr && nr->kind != TW_NODE_NULL) {
    int64_t rank = 0;
    if ((rc = get_int(m, "node_rank", false, 0, 4095, &rank, err)))
      goto out;
    out->node_rank = (int)rank;
  }
out:
  tw_node_free(m);
  return rc;
}

enum tw_rc tw_agent_parse_log_query(const char *stream, const char *offset,
                                    bool *stderr_out, int64_t *offset_out,
                                    struct tw_err *err) {
  *stderr_out = false;
  *offset_out = 0;
  if (!stream || (strcmp(stream, "stdout") && strcmp(stream, "stderr")))
    return tw_err_field(err, TW_E_INVALID, "stream",
                        "stream: expected stdout or stderr, got \"%s\"",
                        stream ? stream : "");
  *stderr_out = !strcmp(stream, "stderr");
  if (!offset || !*offset || strlen(offset) > 16)
    return tw_err_field(err, TW_E_INVALID, "offset",
                        "offset: expected an integer >= 0, got \"%s\"",
                        offset ? offset : "");
  int64_t v = 0;
  for (const char *p = offset; *p; p++) {
    if (*p < '0' || *p > '9')
      return tw_err_field(err, TW_E_INVALID, "offset",
                          "offset: expected an integer >= 0, got \"%s\"",
                          offset);
    v = v * 10 + (*p - '0');
  }
  *offset_out = v;
  return TW_OK;
}

bool tw_agent_exit_holds(const struct tw_agent_exit_msg *m) {
  return m->node_rank > 0 && m->has_code && m->exit_code == 0 &&
         !m->after_notice;
}
