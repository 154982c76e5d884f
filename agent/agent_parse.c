/* agent_parse.c - the agent's parsers of outside input (agent_parse.h). */
#include "agent/agent_parse.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"

static json_t *load(const char *body, size_t len) {
  if (!body || !len)
    return NULL;
  return json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d)
    memcpy(d, s, n + 1);
  return d;
}

void tw_agent_job_free(struct tw_agent_job *job) {
  if (!job)
    return;
  free(job->job_id);
  free(job->setup);
  free(job->run);
  for (size_t i = 0; i < job->n_env; i++)
    free(job->env[i]);
  free(job->env);
  free(job->user);
  free(job->checkpoint_uri);
  memset(job, 0, sizeof *job);
}

static int fail(char *err, size_t cap, const char *field, const char *why) {
  if (err && cap)
    snprintf(err, cap, "%s: %s", field, why);
  return -1;
}

/* An optional integer member in [lo, hi]; absent or null keeps *out. */
static int opt_int(json_t *o, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, char *err, size_t cap) {
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v))
    return fail(err, cap, key, "expected an integer");
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail(err, cap, key, "out of range");
  *out = (int64_t)x;
  return 0;
}

/* An environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_ok(const char *s) {
  if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
    return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_'))
      return false;
  return true;
}

int tw_agent_parse_register(const char *body, size_t len,
                            struct tw_agent_job *job, char *err, size_t cap) {
  memset(job, 0, sizeof *job);
  job->grace_s = 30;
  job->heartbeat_s = 10;
  json_t *o = load(body, len);
  if (!json_is_object(o)) {
    json_decref(o);
    return fail(err, cap, "(body)", "expected a JSON object");
  }
  int rc = -1;
  json_t *v = json_object_get(o, "job_id");
  if (!json_is_string(v) || !json_string_length(v)) {
    fail(err, cap, "job_id", "expected a non-empty string");
    goto out;
  }
  job->job_id = dup_str(json_string_value(v));
  int64_t attempt = 0;
  if (opt_int(o, "attempt", 0, 1000000, &attempt, err, cap))
    goto out;
  job->attempt = (int)attempt;
  v = json_object_get(o, "setup");
  if (v && !json_is_null(v) &&
      (!json_is_string(v) ||
       strlen(json_string_value(v)) != json_string_length(v))) {
    fail(err, cap, "setup", "expected a string without NUL, or null");
    goto out;
  }
  job->setup = dup_str(json_is_string(v) ? json_string_value(v) : "");
  v = json_object_get(o, "run");
  if (!json_is_string(v) ||
      strlen(json_string_value(v)) != json_string_length(v)) {
    fail(err, cap, "run", "expected a string without NUL");
    goto out;
  }
  job->run = dup_str(json_string_value(v));
  v = json_object_get(o, "workdir");
  if (v && !json_is_null(v)) {
    json_t *h = json_is_object(v) ? json_object_get(v, "sha256") : NULL;
    const char *hs = json_is_string(h) ? json_string_value(h) : "";
    bool ok = strlen(hs) == 64 && json_string_length(h) == 64;
    for (size_t i = 0; ok && i < 64; i++)
      ok = (hs[i] >= '0' && hs[i] <= '9') || (hs[i] >= 'a' && hs[i] <= 'f');
    if (!ok) {
      fail(err, cap, "workdir",
           "expected {\"sha256\": 64 lower-case hex digits} or null");
      goto out;
    }
    memcpy(job->workdir_sha, hs, 65);
  }
  if (opt_int(o, "time_limit_s", 0, INT64_C(1) << 40, &job->time_limit_s, err,
              cap) ||
      opt_int(o, "grace_s", 0, 86400, &job->grace_s, err, cap) ||
      opt_int(o, "heartbeat_s", 1, 3600, &job->heartbeat_s, err, cap))
    goto out;
  v = json_object_get(o, "env");
  if (v && !json_is_null(v)) {
    if (!json_is_object(v)) {
      fail(err, cap, "env", "expected an object of strings");
      goto out;
    }
    size_t n = json_object_size(v);
    if (n > 4096) {
      fail(err, cap, "env", "more than 4096 variables");
      goto out;
    }
    job->env = calloc(n + 1, sizeof *job->env);
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val) {
      if (!env_name_ok(k)) {
        fail(err, cap, "env", "a name is not [A-Za-z_][A-Za-z0-9_]*");
        goto out;
      }
      if (!json_is_string(val) ||
          strlen(json_string_value(val)) != json_string_length(val)) {
        fail(err, cap, "env", "values must be strings without NUL");
        goto out;
      }
      size_t kl = strlen(k), vl = json_string_length(val);
      char *e = malloc(kl + vl + 2);
      memcpy(e, k, kl);
      e[kl] = '=';
      memcpy(e + kl + 1, json_string_value(val), vl + 1);
      job->env[job->n_env++] = e;
    }
  }
  job->gang_nodes = 1;
  job->gang_ready = true;
  v = json_object_get(o, "gang");
  if (v && !json_is_null(v)) {
    int64_t rank = 0, nodes = 1;
    json_t *ready = json_object_get(v, "ready");
    if (!json_is_object(v) || !json_is_boolean(ready)) {
      fail(err, cap, "gang", "expected {rank, nodes, ready} or null");
      goto out;
    }
    if (opt_int(v, "rank", 0, 4095, &rank, err, cap) ||
        opt_int(v, "nodes", 1, 4096, &nodes, err, cap))
      goto out;
    if (rank >= nodes) {
      fail(err, cap, "gang", "rank beyond the gang's nodes");
      goto out;
    }
    job->gang_rank = (int)rank;
    job->gang_nodes = (int)nodes;
    job->gang_ready = json_is_true(ready);
  }
  v = json_object_get(o, "user");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v) || !json_string_length(v) ||
        json_string_length(v) > 32 ||
        strlen(json_string_value(v)) != json_string_length(v)) {
      fail(err, cap, "user", "expected a user name or null");
      goto out;
    }
    job->user = dup_str(json_string_value(v));
  }
  v = json_object_get(o, "checkpoint");
  if (v && !json_is_null(v)) {
    if (!json_is_object(v)) {
      fail(err, cap, "checkpoint", "expected an object or null");
      goto out;
    }
    json_t *u = json_object_get(v, "uri");
    if (u && !json_is_null(u) && !json_is_string(u)) {
      fail(err, cap, "checkpoint.uri", "expected a string");
      goto out;
    }
    job->has_checkpoint = true;
    job->checkpoint_uri =
        dup_str(json_is_string(u) ? json_string_value(u) : "");
    if (opt_int(v, "interval_s", 0, INT64_C(1) << 40,
                &job->checkpoint_interval_s, err, cap) ||
        opt_int(v, "resume_s", 0, INT64_C(1) << 40, &job->checkpoint_resume_s,
                err, cap))
      goto out;
  }
  rc = 0;
out:
  json_decref(o);
  if (rc)
    tw_agent_job_free(job);
  return rc;
}

enum tw_agent_action tw_agent_parse_action(const char *body, size_t len) {
  json_t *o = load(body, len);
  enum tw_agent_action a = TW_ACTION_BAD;
  json_t *v = json_is_object(o) ? json_object_get(o, "action") : NULL;
  if (!v || json_is_null(v))
    a = json_is_object(o) ? TW_ACTION_NONE : TW_ACTION_BAD;
  else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "none"))
      a = TW_ACTION_NONE;
    else if (!strcmp(s, "cancel"))
      a = TW_ACTION_CANCEL;
    else if (!strcmp(s, "checkpoint"))
      a = TW_ACTION_CHECKPOINT;
  }
  json_decref(o);
  return a;
}

int tw_agent_parse_next_offset(const char *body, size_t len, int64_t *next) {
  json_t *o = load(body, len);
  json_t *v = json_is_object(o) ? json_object_get(o, "next_offset") : NULL;
  int rc = -1;
  if (json_is_integer(v) && json_integer_value(v) >= 0) {
    *next = (int64_t)json_integer_value(v);
    rc = 0;
  }
  json_decref(o);
  return rc;
}

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src);
}

int tw_agent_parse_aws_action(const char *body, size_t len,
                              struct tw_agent_notice *n) {
  memset(n, 0, sizeof *n);
  json_t *o = load(body, len);
  int rc = -1;
  json_t *a = json_is_object(o) ? json_object_get(o, "action") : NULL;
  json_t *t = json_is_object(o) ? json_object_get(o, "time") : NULL;
  int64_t ms;
  if (json_is_string(a) && json_string_length(a) &&
      json_string_length(a) < sizeof n->action && json_is_string(t) &&
      tw_time_parse_rfc3339(json_string_value(t), &ms) == 0) {
    n->kind = TW_NOTICE_INTERRUPTION;
    copy(n->action, sizeof n->action, json_string_value(a));
    n->deadline_ms = ms;
    copy(n->source, sizeof n->source, "imds");
    snprintf(n->event_id, sizeof n->event_id, "instance-action-%lld",
             (long long)ms);
    rc = 0;
  }
  json_decref(o);
  return rc;
}

int tw_agent_parse_aws_rebalance(const char *body, size_t len,
                                 struct tw_agent_notice *n) {
  memset(n, 0, sizeof *n);
  json_t *o = load(body, len);
  int rc = -1;
  json_t *t = json_is_object(o) ? json_object_get(o, "noticeTime") : NULL;
  int64_t ms;
  if (json_is_string(t) &&
      tw_time_parse_rfc3339(json_string_value(t), &ms) == 0) {
    n->kind = TW_NOTICE_REBALANCE;
    copy(n->action, sizeof n->action, "rebalance");
    n->deadline_ms = 0;
    copy(n->source, sizeof n->source, "imds");
    snprintf(n->event_id, sizeof n->event_id, "rebalance-%lld", (long long)ms);
    rc = 0;
  }
  json_decref(o);
  return rc;
}

int tw_agent_parse_http_date(const char *s, int64_t *ms) {
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  /* "Mon, 19 Sep 2016 18:29:47 GMT" */
  const char *p = strchr(s, ',');
  if (!p || p - s != 3)
    return -1;
  p++;
  int day, year, hh, mm, ss, used = 0;
  char mon[4], zone[4];
  if (sscanf(p, " %2d %3s %4d %2d:%2d:%2d %3s%n", &day, mon, &year, &hh, &mm,
             &ss, zone, &used) != 7 ||
      p[used] != '\0' || strcmp(zone, "GMT"))
    return -1;
  int m = -1;
  for (int i = 0; i < 12; i++)
    if (!strcmp(mon, months[i]))
      m = i;
  if (m < 0 || day < 1 || day > 31 || year < 1970 || year > 9999 || hh > 23 ||
      mm > 59 || ss > 60 || hh < 0 || mm < 0 || ss < 0)
    return -1;
  struct tm tm = {0};
  tm.tm_year = year - 1900;
  tm.tm_mon = m;
  tm.tm_mday = day;
  tm.tm_hour = hh;
  tm.tm_min = mm;
  tm.tm_sec = ss;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *ms = (int64_t)t * 1000;
  return 0;
}

int tw_agent_parse_azure_events(const char *body, size_t len, const char *vm,
                                struct tw_agent_notice *n,
                                int64_t *incarnation) {
  memset(n, 0, sizeof *n);
  json_t *o = load(body, len);
  if (!json_is_object(o)) {
    json_decref(o);
    return -1;
  }
  json_t *inc = json_object_get(o, "DocumentIncarnation");
  if (incarnation && json_is_integer(inc))
    *incarnation = (int64_t)json_integer_value(inc);
  json_t *evs = json_object_get(o, "Events");
  int rc = 0;
  if (evs && !json_is_array(evs)) {
    rc = -1;
    goto out;
  }
  size_t i;
  json_t *e;
  json_array_foreach(evs, i, e) {
    if (!json_is_object(e)) {
      rc = -1;
      goto out;
    }
    json_t *type = json_object_get(e, "EventType");
    json_t *id = json_object_get(e, "EventId");
    json_t *status = json_object_get(e, "EventStatus");
    if (!json_is_string(type) || strcmp(json_string_value(type), "Preempt"))
      continue;
    if (!json_is_string(id) || !json_string_length(id) ||
        json_string_length(id) >= sizeof n->event_id) {
      rc = -1;
      goto out;
    }
    if (json_is_string(status) &&
        strcmp(json_string_value(status), "Scheduled") &&
        strcmp(json_string_value(status), "Started"))
      continue;
    json_t *res = json_object_get(e, "Resources");
    if (vm && *vm && json_is_array(res) && json_array_size(res)) {
      bool mine = false;
      size_t j;
      json_t *r;
      json_array_foreach(res, j, r) if (json_is_string(r) &&
                                        !strcasecmp(json_string_value(r), vm))
          mine = true;
      if (!mine)
        continue;
    }
    n->kind = TW_NOTICE_INTERRUPTION;
    copy(n->action, sizeof n->action, "Preempt");
    copy(n->source, sizeof n->source, "scheduled-events");
    copy(n->event_id, sizeof n->event_id, json_string_value(id));
    json_t *nb = json_object_get(e, "NotBefore");
    int64_t ms = 0;
    /* Empty once the event has Started: the deadline is now. */
    if (json_is_string(nb) && json_string_length(nb) &&
        tw_agent_parse_http_date(json_string_value(nb), &ms)) {
      rc = -1;
      goto out;
    }
    n->deadline_ms = ms;
    rc = 1;
    break;
  }
out:
  json_decref(o);
  return rc;
}

int tw_agent_parse_alibaba_time(const char *body, size_t len,
                                struct tw_agent_notice *n) {
  memset(n, 0, sizeof *n);
  char s[64];
  /* trim blanks and a trailing newline */
  while (len && isspace((unsigned char)*body))
    body++, len--;
  while (len && isspace((unsigned char)body[len - 1]))
    len--;
  if (!len || len >= sizeof s || memchr(body, '\0', len))
    return -1;
  memcpy(s, body, len);
  s[len] = '\0';
  int64_t ms;
  if (tw_time_parse_rfc3339(s, &ms))
    return -1;
  n->kind = TW_NOTICE_INTERRUPTION;
  copy(n->action, sizeof n->action, "terminate");
  n->deadline_ms = ms;
  copy(n->source, sizeof n->source, "meta-server");
  snprintf(n->event_id, sizeof n->event_id, "termination-time-%lld",
           (long long)ms);
  return 0;
}
