/* agent.c - tradewind-agent's run: register, run the job in its own
 * process group, ship its output by offset, heartbeat, poll the cloud's
 * notices, report the end (docs/agent.md).
 *
 * One thread, one loop every 100 ms.  The job runs under a keeper: a
 * child of the agent, leader of the job's process group, that runs
 * `setup` then `run` and writes what became of them into files of the
 * agent's directory.  So the job outlives the agent, and an agent started
 * again on the same directory adopts the job from its state file
 * (`state.json`) and reports nothing twice. */
#define _GNU_SOURCE /* fallocate(FALLOC_FL_PUNCH_HOLE) */
#include "agent/agent.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <grp.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_parse.h"
#include "broker/base/tar.h"

extern char **environ;

#define CHUNK_MAX (1u << 20) /* one log report: at most 1 MiB */
/* A stream's output is sent at once after a quiet spell, then at most
 * every LOG_EVERY_MS while the job keeps printing, unless LOG_BATCH bytes
 * wait (and all of it once the job ended): a chatty job costs the broker
 * one report per stream per LOG_EVERY_MS, not one per line. */
#define LOG_EVERY_MS 5000
#define LOG_BATCH (64u << 10)
#define RESP_MAX (4u << 20)  /* largest answer read */
#define NOTICE_POLL_MS 2000  /* docs/agent.md: every 2 s */
#define BACKOFF_MIN_MS 1000  /* retries: 1 s doubling to 30 s */
#define BACKOFF_MAX_MS 30000
#define KILL_BEFORE_DEADLINE_MS 5000
#define WORKDIR_MAX ((curl_off_t)1 << 30) /* the largest archive fetched */

/* ---- small helpers ------------------------------------------------------ */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

static void say(const char *fmt, ...) {
  char t[32];
  time_t s = time(NULL);
  struct tm tm;
  gmtime_r(&s, &tm);
  strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s tradewind-agent: ", t);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Reads a whole small file; NULL when absent.  *len gets its size. */
static char *slurp(const char *path, size_t max, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(max + 1);
  size_t n = buf ? fread(buf, 1, max, f) : 0;
  fclose(f);
  if (!buf)
    return NULL;
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

/* Writes a file whole or not at all (temporary + rename), mode 0600. */
static int write_atomic(const char *path, const char *data, size_t len) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      unlink(tmp);
      return -1;
    }
    off += (size_t)w;
  }
  if (close(fd) || rename(tmp, path)) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* ---- the command line ---------------------------------------------------- */

static const char usage[] =
    "usage: tradewind-agent --broker URL --attempt TOKEN --token-file FILE\n"
    "                       --cloud aws|azure|alibaba|local --dir DIR\n"
    "                       [--ca FILE] [--max-buffer-bytes N]\n"
    "                       [--node-rank N]\n"
    "\n"
    "Runs one attempt of a Tradewind job on this machine: registers with the\n"
    "broker, runs the job's setup and run scripts, ships their output,\n"
    "forwards the cloud's interruption notices and reports the exit\n"
    "(docs/agent.md).  Started by the attempt's bootstrap.\n"
    "\n"
    "  --broker URL           the broker, http://HOST:PORT or https://...\n"
    "  --attempt TOKEN        the attempt's client token (<job id>-<n>)\n"
    "  --token-file FILE      file holding the attempt's twa_ token\n"
    "  --ca FILE              CA certificate(s) the broker's TLS is signed "
    "with\n"
    "  --cloud NAME           aws, azure, alibaba or local: whose metadata\n"
    "                         service to poll for notices\n"
    "  --dir DIR              the agent's directory (state, output, token)\n"
    "  --max-buffer-bytes N   unsent output kept on disk per stream\n"
    "                         (default 67108864)\n"
    "  --node-rank N          this machine is node N (0: the head) of a gang\n"
    "\n"
    "TRADEWIND_METADATA_URL, when set, replaces the cloud's metadata "
    "address.\n";

static bool token_chars_ok(const char *s) {
  if (!*s || strlen(s) > 128)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
      return false;
  return true;
}

int tw_agent_parse_args(int argc, char **argv, struct tw_agent_opts *o) {
  memset(o, 0, sizeof *o);
  o->max_buffer_bytes = INT64_C(64) << 20;
  o->cloud = -1;
  o->node_rank = -1;
  const char *e = getenv("TRADEWIND_METADATA_URL");
  o->metadata_url = e && *e ? e : NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 1;
    }
    if (!strcmp(a, "--version")) {
      printf("tradewind-agent %s\n", TW_AGENT_VERSION);
      return 1;
    }
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "tradewind-agent: %s: missing value (see --help)\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--broker")) {
      if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
        fprintf(stderr,
                "tradewind-agent: --broker: \"%s\" is not an http:// or "
                "https:// URL\n",
                v);
        return 2;
      }
      o->broker = v;
    } else if (!strcmp(a, "--attempt")) {
      if (!token_chars_ok(v)) {
        fprintf(stderr,
                "tradewind-agent: --attempt: \"%s\" is not a client token "
                "(1..128 of A-Z a-z 0-9 . _ -)\n",
                v);
        return 2;
      }
      o->attempt = v;
    } else if (!strcmp(a, "--token-file")) {
      o->token_file = v;
    } else if (!strcmp(a, "--ca")) {
      o->ca = v;
    } else if (!strcmp(a, "--dir")) {
      o->dir = v;
    } else if (!strcmp(a, "--cloud")) {
      if (!strcmp(v, "aws"))
        o->cloud = TW_CLOUD_AWS;
      else if (!strcmp(v, "azure"))
        o->cloud = TW_CLOUD_AZURE;
      else if (!strcmp(v, "alibaba"))
        o->cloud = TW_CLOUD_ALIBABA;
      else if (!strcmp(v, "local"))
        o->cloud = TW_CLOUD_LOCAL;
      else {
        fprintf(stderr,
                "tradewind-agent: --cloud: \"%s\" is not aws, azure, "
                "alibaba or local\n",
                v);
        return 2;
      }
    } else if (!strcmp(a, "--max-buffer-bytes")) {
      char *end;
      long long n = strtoll(v, &end, 10);
      if (*end || !*v || n < 4096 || n > (INT64_C(1) << 40)) {
        fprintf(stderr,
                "tradewind-agent: --max-buffer-bytes: \"%s\" is not a "
                "number in 4096..2^40\n",
                v);
        return 2;
      }
      o->max_buffer_bytes = n;
    } else if (!strcmp(a, "--node-rank")) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || !*v || n < 0 || n > 4095) {
        fprintf(stderr,
                "tradewind-agent: --node-rank: \"%s\" is not a number in "
                "0..4095\n",
                v);
        return 2;
      }
      o->node_rank = (int)n;
    } else {
      fprintf(stderr, "tradewind-agent: unknown option %s (see --help)\n", a);
      return 2;
    }
  }
  const char *missing = !o->broker          ? "--broker"
                        : !o->attempt       ? "--attempt"
                        : !o->token_file    ? "--token-file"
                        : (int)o->cloud < 0 ? "--cloud"
                        : !o->dir           ? "--dir"
                                            : NULL;
  if (missing) {
    fprintf(stderr, "tradewind-agent: %s is required (see --help)\n", missing);
    return 2;
  }
  return 0;
}

/* ---- HTTP ---------------------------------------------------------------- */

struct resp {
  long status; /* 0: no answer (refused, timed out) */
  char *body;
  size_t len;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
  struct resp *r = ud;
  size_t add = sz * n;
  if (r->len + add > RESP_MAX)
    return 0;
  char *b = realloc(r->body, r->len + add + 1);
  if (!b)
    return 0;
  memcpy(b + r->len, p, add);
  r->body = b;
  r->len += add;
  r->body[r->len] = '\0';
  return add;
}

static void resp_free(struct resp *r) {
  free(r->body);
  memset(r, 0, sizeof *r);
}

/* One request; r->status 0 when nothing came back. */
static void http(CURL *h, const char *method, const char *url,
                 struct curl_slist *hdrs, const void *body, size_t len,
                 long timeout_ms, const char *ca, struct resp *r) {
  memset(r, 0, sizeof *r);
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   timeout_ms < 5000 ? timeout_ms : 5000L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "tradewind-agent/" TW_AGENT_VERSION);
  if (ca)
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  if (!strcmp(method, "GET")) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    if (strcmp(method, "POST"))
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  if (curl_easy_perform(h) != CURLE_OK) {
    r->status = 0;
    return;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
}

/* ---- state ----------------------------------------------------------------
 */

enum { S_OUT, S_ERR, N_STREAMS };
static const char *const stream_name[N_STREAMS] = {"stdout", "stderr"};

struct stream {
  int64_t file_pos;   /* bytes of the file the broker has */
  int64_t stream_pos; /* the broker's offset (file bytes + drop lines) */
  int64_t punched;    /* bytes at the file's start given back to the disk */
  int64_t dropped;    /* unsent bytes dropped, still to be told */
  bool stopped;       /* 413 or a final 4xx: no more sending */
  int fd;             /* read side of the file */
  int64_t sent_ms;    /* when output was last sent (not kept: 0 at start) */
};

struct notice_state {
  bool seen, sent, acked;
  struct tw_agent_notice n;
};

struct state {
  bool started;
  int64_t keeper_pid;
  int64_t started_ms, run_ms;
  bool setup_sent, run_sent;
  struct stream st[N_STREAMS];
  struct notice_state notice, rebalance;
  int64_t ckpt_mtime_ns; /* last checkpoint-saved file seen */
  int64_t ckpt_at_ms, ckpt_progress_s;
  bool ckpt_pending;
  bool cancelled, limit_hit;
  int64_t kill_at_ms; /* SIGKILL the group then; 0: not planned */
  bool after_notice;
  bool ended;
  int exit_code, exit_signal; /* one of them, -1 for the other */
  int64_t ended_ms;
  bool exit_sent;
  /* a gang's node other than the head whose exit the broker held: it
   * heartbeats until the attempt ends, as a machine that stays up */
  bool held;
};

struct agent {
  const struct tw_agent_opts *o;
  char token[128];
  char auth[160];
  CURL *broker, *meta;
  struct tw_agent_job job;
  bool have_job;
  char instance_id[128];
  char vm_name[128];
  struct state s;
  bool keeper_is_child;
  int64_t next_try_ms; /* broker backoff */
  int failures;
  int64_t next_heartbeat_ms, next_poll_ms;
  char imds_token[256];
  int64_t imds_token_until_ms;
  char path_state[4096], path_phase[4096], path_exit[4096], path_ckpt[4096],
      path_register[4096], workdir[4096];
  char rundir[4200]; /* where setup and run run: workdir, or its
                        sky_workdir when the job has one */
};

static void p(char *out, size_t cap, const char *dir, const char *name) {
  int n = snprintf(out, cap, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= cap)
    out[0] = '\0'; /* too long: opening "" fails cleanly */
}

static json_t *notice_json(const struct notice_state *ns) {
  return json_pack("{s:b,s:b,s:b,s:i,s:s,s:I,s:s,s:s}", "seen", ns->seen,
                   "sent", ns->sent, "acked", ns->acked, "kind",
                   (int)ns->n.kind, "action", ns->n.action, "deadline_ms",
                   (json_int_t)ns->n.deadline_ms, "source", ns->n.source,
                   "event_id", ns->n.event_id);
}

static void save_state(struct agent *a) {
  const struct state *s = &a->s;
  json_t *st = json_object();
  for (int i = 0; i < N_STREAMS; i++)
    json_object_set_new(st, stream_name[i],
                        json_pack("{s:I,s:I,s:I,s:I,s:b}", "file_pos",
                                  (json_int_t)s->st[i].file_pos, "stream_pos",
                                  (json_int_t)s->st[i].stream_pos, "punched",
                                  (json_int_t)s->st[i].punched, "dropped",
                                  (json_int_t)s->st[i].dropped, "stopped",
                                  s->st[i].stopped));
  json_t *o = json_pack(
      "{s:b,s:I,s:I,s:I,s:b,s:b,s:o,s:o,s:o,s:I,s:I,s:I,s:b,s:b,s:b,s:I,"
      "s:b,s:b,s:i,s:i,s:I,s:b}",
      "started", s->started, "keeper_pid", (json_int_t)s->keeper_pid,
      "started_ms", (json_int_t)s->started_ms, "run_ms", (json_int_t)s->run_ms,
      "setup_sent", s->setup_sent, "run_sent", s->run_sent, "streams", st,
      "notice", notice_json(&s->notice), "rebalance",
      notice_json(&s->rebalance), "ckpt_mtime_ns", (json_int_t)s->ckpt_mtime_ns,
      "ckpt_at_ms", (json_int_t)s->ckpt_at_ms, "ckpt_progress_s",
      (json_int_t)s->ckpt_progress_s, "ckpt_pending", s->ckpt_pending,
      "cancelled", s->cancelled, "limit_hit", s->limit_hit, "kill_at_ms",
      (json_int_t)s->kill_at_ms, "after_notice", s->after_notice, "ended",
      s->ended, "exit_code", s->exit_code, "exit_signal", s->exit_signal,
      "ended_ms", (json_int_t)s->ended_ms, "exit_sent", s->exit_sent);
  json_object_set_new(o, "held", json_boolean(s->held));
  char *txt = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!txt || write_atomic(a->path_state, txt, strlen(txt)))
    say("cannot write %s: %s", a->path_state, strerror(errno));
  free(txt);
}

static int64_t jint(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static bool jbool(json_t *o, const char *k) {
  return json_is_true(json_object_get(o, k));
}

static void jstr(json_t *o, const char *k, char *out, size_t cap) {
  json_t *v = json_object_get(o, k);
  snprintf(out, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static void load_notice(json_t *o, struct notice_state *ns) {
  if (!json_is_object(o))
    return;
  ns->seen = jbool(o, "seen");
  ns->sent = jbool(o, "sent");
  ns->acked = jbool(o, "acked");
  ns->n.kind = jint(o, "kind") == TW_NOTICE_REBALANCE ? TW_NOTICE_REBALANCE
                                                      : TW_NOTICE_INTERRUPTION;
  jstr(o, "action", ns->n.action, sizeof ns->n.action);
  ns->n.deadline_ms = jint(o, "deadline_ms");
  jstr(o, "source", ns->n.source, sizeof ns->n.source);
  jstr(o, "event_id", ns->n.event_id, sizeof ns->n.event_id);
}

/* A state file that cannot be read is a fresh start (the broker's
 * idempotency then keeps the reports from counting twice). */
static void load_state(struct agent *a) {
  struct state *s = &a->s;
  memset(s, 0, sizeof *s);
  s->exit_code = s->exit_signal = -1;
  size_t len = 0;
  char *txt = slurp(a->path_state, 1 << 20, &len);
  if (!txt)
    return;
  json_t *o = json_loadb(txt, len, 0, NULL);
  free(txt);
  if (!json_is_object(o)) {
    say("state file unreadable; starting afresh");
    json_decref(o);
    return;
  }
  s->started = jbool(o, "started");
  s->keeper_pid = jint(o, "keeper_pid");
  s->started_ms = jint(o, "started_ms");
  s->run_ms = jint(o, "run_ms");
  s->setup_sent = jbool(o, "setup_sent");
  s->run_sent = jbool(o, "run_sent");
  json_t *st = json_object_get(o, "streams");
  for (int i = 0; i < N_STREAMS; i++) {
    json_t *x = json_object_get(st, stream_name[i]);
    s->st[i].file_pos = jint(x, "file_pos");
    s->st[i].stream_pos = jint(x, "stream_pos");
    s->st[i].punched = jint(x, "punched");
    s->st[i].dropped = jint(x, "dropped");
    s->st[i].stopped = jbool(x, "stopped");
    if (s->st[i].file_pos < 0 || s->st[i].stream_pos < 0 ||
        s->st[i].punched < 0 || s->st[i].punched > s->st[i].file_pos)
      memset(&s->st[i], 0, sizeof s->st[i]);
  }
  load_notice(json_object_get(o, "notice"), &s->notice);
  load_notice(json_object_get(o, "rebalance"), &s->rebalance);
  s->ckpt_mtime_ns = jint(o, "ckpt_mtime_ns");
  s->ckpt_at_ms = jint(o, "ckpt_at_ms");
  s->ckpt_progress_s = jint(o, "ckpt_progress_s");
  s->ckpt_pending = jbool(o, "ckpt_pending");
  s->cancelled = jbool(o, "cancelled");
  s->limit_hit = jbool(o, "limit_hit");
  s->kill_at_ms = jint(o, "kill_at_ms");
  s->after_notice = jbool(o, "after_notice");
  s->ended = jbool(o, "ended");
  s->exit_code = (int)jint(o, "exit_code");
  s->exit_signal = (int)jint(o, "exit_signal");
  s->ended_ms = jint(o, "ended_ms");
  s->exit_sent = jbool(o, "exit_sent");
  s->held = jbool(o, "held");
  json_decref(o);
}

/* ---- talking to the broker ------------------------------------------------
 */

enum sent { SENT_OK, SENT_RETRY, SENT_FINAL };

static int64_t jitter(int64_t ms) {
  unsigned char b[4];
  uint32_t x = 0;
  if (RAND_bytes(b, sizeof b) == 1)
    x = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
        (uint32_t)b[3] << 24;
  /* in [ms/2, ms] */
  return ms / 2 + (int64_t)(x % (uint32_t)(ms / 2 + 1));
}

static void backoff(struct agent *a, const char *what, long status) {
  int64_t d = BACKOFF_MIN_MS;
  for (int i = 0; i < a->failures && d < BACKOFF_MAX_MS; i++)
    d *= 2;
  if (d > BACKOFF_MAX_MS)
    d = BACKOFF_MAX_MS;
  d = jitter(d);
  a->failures++;
  a->next_try_ms = now_ms() + d;
  if (status)
    say("%s: broker answered %ld; retrying in %lld ms", what, status,
        (long long)d);
  else
    say("%s: broker unreachable; retrying in %lld ms", what, (long long)d);
}

/* Sends one report; classifies the answer (docs/agent.md "Retries"). */
static enum sent report(struct agent *a, const char *what, const char *route,
                        const char *ctype, const void *body, size_t len,
                        struct resp *r) {
  char url[8192];
  snprintf(url, sizeof url, "%s/v1/agent/attempts/%s/%s", a->o->broker,
           a->o->attempt, route);
  char ct[96];
  snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
  struct curl_slist *h = curl_slist_append(NULL, a->auth);
  h = curl_slist_append(h, ct);
  h = curl_slist_append(h, "Accept: application/json");
  h = curl_slist_append(h, "Expect:");
  http(a->broker, "POST", url, h, body, len, 10000, a->o->ca, r);
  curl_slist_free_all(h);
  if (r->status == 0 || r->status >= 500 || r->status == 429) {
    backoff(a, what, r->status);
    return SENT_RETRY;
  }
  a->failures = 0;
  if (r->status >= 200 && r->status < 300)
    return SENT_OK;
  if (r->status == 409 || r->status == 413)
    return SENT_OK; /* the caller reads these */
  say("%s: broker refused it (%ld); not sent again", what, r->status);
  return SENT_FINAL;
}

static enum sent report_json(struct agent *a, const char *what,
                             const char *route, json_t *body, struct resp *r) {
  char *txt = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  enum sent e =
      report(a, what, route, "application/json", txt, txt ? strlen(txt) : 0, r);
  free(txt);
  return e;
}

static enum sent simple(struct agent *a, const char *what, const char *route,
                        json_t *body) {
  struct resp r;
  enum sent e = report_json(a, what, route, body, &r);
  resp_free(&r);
  return e;
}

/* ---- metadata ---------------------------------------------------------- */

static const char *meta_base(const struct agent *a) {
  if (a->o->metadata_url)
    return a->o->metadata_url;
  return a->o->cloud == TW_CLOUD_ALIBABA ? "http://100.100.100.200"
                                         : "http://169.254.169.254";
}

static void meta_get(struct agent *a, const char *method, const char *path,
                     struct curl_slist *h, const char *body, struct resp *r) {
  char url[8192];
  snprintf(url, sizeof url, "%s%s", meta_base(a), path);
  curl_easy_reset(a->meta);
  http(a->meta, method, url, h, body, body ? strlen(body) : 0, 1500, NULL, r);
}

/* IMDSv2: a session token, kept until shortly before its TTL ends. */
static bool imds_token(struct agent *a) {
  if (a->imds_token[0] && now_ms() < a->imds_token_until_ms)
    return true;
  struct curl_slist *h =
      curl_slist_append(NULL, "X-aws-ec2-metadata-token-ttl-seconds: 21600");
  struct resp r;
  meta_get(a, "PUT", "/latest/api/token", h, "", &r);
  curl_slist_free_all(h);
  bool ok = r.status == 200 && r.len > 0 && r.len < sizeof a->imds_token &&
            !memchr(r.body, '\n', r.len) && !memchr(r.body, '\r', r.len) &&
            strlen(r.body) == r.len;
  if (ok) {
    memcpy(a->imds_token, r.body, r.len + 1);
    a->imds_token_until_ms = now_ms() + (21600 - 60) * INT64_C(1000);
  }
  resp_free(&r);
  return ok;
}

/* GET under IMDSv2; a 401 drops the token for the next round. */
static void imds_get(struct agent *a, const char *path, struct resp *r) {
  memset(r, 0, sizeof *r);
  if (!imds_token(a))
    return;
  char hdr[320];
  snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", a->imds_token);
  struct curl_slist *h = curl_slist_append(NULL, hdr);
  meta_get(a, "GET", path, h, NULL, r);
  curl_slist_free_all(h);
  if (r->status == 401)
    a->imds_token[0] = '\0';
}

static void text_into(const struct resp *r, char *out, size_t cap) {
  if (r->status != 200 || !r->len || r->len >= cap || strlen(r->body) != r->len)
    return;
  size_t n = strcspn(r->body, "\r\n");
  snprintf(out, cap, "%.*s", (int)n, r->body);
}

/* Who this machine is, for register (best effort). */
static json_t *discover(struct agent *a) {
  json_t *md = json_object();
  struct resp r;
  char buf[256] = "";
  switch (a->o->cloud) {
  case TW_CLOUD_AWS:
    imds_get(a, "/latest/meta-data/instance-id", &r);
    text_into(&r, a->instance_id, sizeof a->instance_id);
    resp_free(&r);
    imds_get(a, "/latest/meta-data/instance-type", &r);
    text_into(&r, buf, sizeof buf);
    resp_free(&r);
    if (*buf)
      json_object_set_new(md, "instance_type", json_string(buf));
    break;
  case TW_CLOUD_AZURE: {
    struct curl_slist *h = curl_slist_append(NULL, "Metadata: true");
    meta_get(a, "GET",
             "/metadata/instance/compute/name?api-version=2021-02-01"
             "&format=text",
             h, NULL, &r);
    text_into(&r, a->vm_name, sizeof a->vm_name);
    resp_free(&r);
    meta_get(a, "GET",
             "/metadata/instance/compute/vmId?api-version=2021-02-01"
             "&format=text",
             h, NULL, &r);
    text_into(&r, a->instance_id, sizeof a->instance_id);
    resp_free(&r);
    curl_slist_free_all(h);
    if (*a->vm_name)
      json_object_set_new(md, "name", json_string(a->vm_name));
    if (!*a->instance_id)
      snprintf(a->instance_id, sizeof a->instance_id, "%s", a->vm_name);
    break;
  }
  case TW_CLOUD_ALIBABA:
    meta_get(a, "GET", "/latest/meta-data/instance-id", NULL, NULL, &r);
    text_into(&r, a->instance_id, sizeof a->instance_id);
    resp_free(&r);
    break;
  case TW_CLOUD_LOCAL:
    break;
  }
  const char *e = getenv("TRADEWIND_INSTANCE_ID");
  if (!*a->instance_id && e && *e)
    snprintf(a->instance_id, sizeof a->instance_id, "%s", e);
  if (!*a->instance_id)
    gethostname(a->instance_id, sizeof a->instance_id - 1);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  json_object_set_new(md, "hostname", json_string(host));
  return md;
}

/* One poll of the cloud's notice documents.  Returns true when a new
 * interruption notice was seen. */
static bool poll_notices(struct agent *a) {
  struct tw_agent_notice n;
  struct resp r;
  bool fresh = false;
  switch (a->o->cloud) {
  case TW_CLOUD_AWS:
    if (!a->s.notice.seen) {
      imds_get(a, "/latest/meta-data/spot/instance-action", &r);
      if (r.status == 200 && !tw_agent_parse_aws_action(r.body, r.len, &n)) {
        a->s.notice.seen = true;
        a->s.notice.n = n;
        fresh = true;
      }
      resp_free(&r);
    }
    if (!a->s.rebalance.seen) {
      imds_get(a, "/latest/meta-data/events/recommendations/rebalance", &r);
      if (r.status == 200 && !tw_agent_parse_aws_rebalance(r.body, r.len, &n)) {
        a->s.rebalance.seen = true;
        a->s.rebalance.n = n;
        save_state(a);
      }
      resp_free(&r);
    }
    break;
  case TW_CLOUD_AZURE:
    if (!a->s.notice.seen) {
      struct curl_slist *h = curl_slist_append(NULL, "Metadata: true");
      meta_get(a, "GET", "/metadata/scheduledevents?api-version=2020-07-01", h,
               NULL, &r);
      curl_slist_free_all(h);
      int64_t inc = 0;
      if (r.status == 200 && tw_agent_parse_azure_events(
                                 r.body, r.len, a->vm_name, &n, &inc) == 1) {
        if (!n.deadline_ms)
          n.deadline_ms = now_ms();
        a->s.notice.seen = true;
        a->s.notice.n = n;
        fresh = true;
      }
      resp_free(&r);
    }
    break;
  case TW_CLOUD_ALIBABA:
    if (!a->s.notice.seen) {
      meta_get(a, "GET", "/latest/meta-data/instance/spot/termination-time",
               NULL, NULL, &r);
      if (r.status == 200 && !tw_agent_parse_alibaba_time(r.body, r.len, &n)) {
        a->s.notice.seen = true;
        a->s.notice.n = n;
        fresh = true;
      }
      resp_free(&r);
    }
    break;
  case TW_CLOUD_LOCAL:
    break;
  }
  return fresh;
}

/* Azure: tell the platform it may go ahead (once the job exited or saved). */
static void azure_ack(struct agent *a) {
  if (a->o->cloud != TW_CLOUD_AZURE || !a->s.notice.seen || a->s.notice.acked)
    return;
  json_t *b = json_pack("{s:[{s:s}]}", "StartRequests", "EventId",
                        a->s.notice.n.event_id);
  char *txt = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  struct curl_slist *h = curl_slist_append(NULL, "Metadata: true");
  h = curl_slist_append(h, "Content-Type: application/json");
  struct resp r;
  meta_get(a, "POST", "/metadata/scheduledevents?api-version=2020-07-01", h,
           txt, &r);
  curl_slist_free_all(h);
  free(txt);
  if (r.status >= 200 && r.status < 300) {
    a->s.notice.acked = true;
    save_state(a);
    say("acknowledged scheduled event %s", a->s.notice.n.event_id);
  }
  resp_free(&r);
}

/* ---- the job --------------------------------------------------------------
 */

static void signal_group(struct agent *a, int sig) {
  if (a->s.keeper_pid > 0 && !a->s.ended)
    kill(-(pid_t)a->s.keeper_pid, sig);
}

static void plan_kill(struct agent *a, int64_t at) {
  if (!a->s.kill_at_ms || at < a->s.kill_at_ms)
    a->s.kill_at_ms = at;
}

/* The job's environment: a small base, then what the broker gave. */
static char **job_env(struct agent *a, const struct passwd *pw) {
  size_t cap = a->job.n_env + 8, n = 0;
  char **env = calloc(cap + 1, sizeof *env);
  const char *path = getenv("PATH");
  if (asprintf(&env[n++], "PATH=%s",
               path && *path ? path
                             : "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                               "/usr/bin:/sbin:/bin") < 0)
    env[--n] = NULL;
  if (asprintf(&env[n++], "HOME=%s", pw ? pw->pw_dir : a->workdir) < 0)
    env[--n] = NULL;
  if (pw && asprintf(&env[n++], "USER=%s", pw->pw_name) < 0)
    env[--n] = NULL;
  if (asprintf(&env[n++], "TRADEWIND_CHECKPOINT_SAVED=%s", a->path_ckpt) < 0)
    env[--n] = NULL;
  if (a->o->metadata_url &&
      asprintf(&env[n++], "TRADEWIND_METADATA_URL=%s", a->o->metadata_url) < 0)
    env[--n] = NULL;
  for (size_t i = 0; i < a->job.n_env; i++) {
    size_t kl = strcspn(a->job.env[i], "=") + 1;
    size_t j;
    for (j = 0; j < n; j++)
      if (!strncmp(env[j], a->job.env[i], kl))
        break;
    char *d = strdup(a->job.env[i]);
    if (j < n) {
      free(env[j]);
      env[j] = d;
    } else {
      env[n++] = d;
    }
  }
  env[n] = NULL;
  return env;
}

static void free_env(char **env) {
  for (size_t i = 0; env && env[i]; i++)
    free(env[i]);
  free(env);
}

/* In the keeper: runs one script as the job's user; returns its wait
 * status. */
static int run_step(const char *script, char **env, const struct passwd *pw,
                    const char *workdir) {
  pid_t c = fork();
  if (c < 0)
    return -1;
  if (c == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
      sigaction(s, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (pw) {
      if (initgroups(pw->pw_name, pw->pw_gid) || setgid(pw->pw_gid) ||
          setuid(pw->pw_uid)) {
        dprintf(2, "tradewind-agent: cannot become %s: %s\n", pw->pw_name,
                strerror(errno));
        _exit(126);
      }
    }
    if (chdir(workdir)) {
      dprintf(2, "tradewind-agent: cannot enter %s: %s\n", workdir,
              strerror(errno));
      _exit(126);
    }
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    execve("/bin/sh", argv, env);
    dprintf(2, "tradewind-agent: cannot run /bin/sh: %s\n", strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(c, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return st;
}

static void keeper_write(const char *path, const char *what, int n) {
  char line[96];
  int len =
      snprintf(line, sizeof line, "%s %d %lld\n", what, n, (long long)now_ms());
  write_atomic(path, line, (size_t)len);
}

/* The keeper: the job's process group leader.  It ignores the signals the
 * group gets (the scripts do not), runs setup then run, and writes what
 * became of them. */
static void keeper(struct agent *a, char **env, const struct passwd *pw) {
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int st = 0;
  if (a->job.setup[0]) {
    st = run_step(a->job.setup, env, pw, a->rundir);
    if (st < 0) {
      keeper_write(a->path_exit, "exit", 127);
      _exit(0);
    }
  }
  if (!a->job.setup[0] || (WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    keeper_write(a->path_phase, "run", 0);
    st = run_step(a->job.run, env, pw, a->rundir);
  }
  if (st < 0)
    keeper_write(a->path_exit, "exit", 127);
  else if (WIFSIGNALED(st))
    keeper_write(a->path_exit, "signal", WTERMSIG(st));
  else
    keeper_write(a->path_exit, "exit", WEXITSTATUS(st));
  _exit(0);
}

static int open_log(const char *dir, const char *name) {
  char path[4200];
  p(path, sizeof path, dir, name);
  return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

/* ---- the job's working directory ---------------------------------------
 * GET .../workdir into a file of the directory, its SHA-256 checked, then
 * unpacked (broker/base/tar.h: no absolute path, no "..", no link out,
 * never through a link) into sky_workdir beside the job's files, as
 * SkyPilot's ~/sky_workdir: setup and run run in it. */

static size_t to_file(char *p, size_t sz, size_t n, void *ud) {
  return fwrite(p, sz, n, ud) == n ? sz * n : 0;
}

/* While the archive comes down (the broker's handle is busy with it), a
 * heartbeat every heartbeat_s on the other handle, so a long fetch is not
 * taken for a lost agent.  Its answer waits for the loop's next one. */
static int fetch_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                          curl_off_t ultotal, curl_off_t ulnow) {
  (void)ultotal, (void)ulnow;
  struct agent *a = ud;
  int64_t now = now_ms();
  if (now < a->next_heartbeat_ms)
    return 0;
  a->next_heartbeat_ms = now + a->job.heartbeat_s * 1000;
  char url[8192], body[96];
  snprintf(url, sizeof url, "%s/v1/agent/attempts/%s/heartbeat", a->o->broker,
           a->o->attempt);
  int n = snprintf(body, sizeof body, "{\"phase\":\"setup\",\"at_ms\":%lld}",
                   (long long)now);
  struct curl_slist *h = curl_slist_append(NULL, a->auth);
  h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  struct resp r;
  http(a->meta, "POST", url, h, body, (size_t)n, 5000, a->o->ca, &r);
  curl_slist_free_all(h);
  say("workdir: %lld of %lld bytes fetched; heartbeat answered %ld",
      (long long)dlnow, (long long)dltotal, r.status);
  resp_free(&r);
  return 0;
}

/* Downloads the archive into path; 0, 1 to retry later, -1 for good. */
static int workdir_get(struct agent *a, const char *path, char *why,
                       size_t cap) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    snprintf(why, cap, "cannot write %.300s: %s", path, strerror(errno));
    return -1;
  }
  char url[8192];
  snprintf(url, sizeof url, "%s/v1/agent/attempts/%s/workdir", a->o->broker,
           a->o->attempt);
  struct curl_slist *h = curl_slist_append(NULL, a->auth);
  CURL *c = a->broker;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  /* a large archive on a slow link: bounded by progress, not a total */
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_file);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, WORKDIR_MAX);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, fetch_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, a);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "tradewind-agent/" TW_AGENT_VERSION);
  if (a->o->ca)
    curl_easy_setopt(c, CURLOPT_CAINFO, a->o->ca);
  CURLcode cr = curl_easy_perform(c);
  long status = 0;
  if (cr == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  bool wrote = fclose(f) == 0;
  if (cr == CURLE_FILESIZE_EXCEEDED) {
    snprintf(why, cap, "the archive is over %lld bytes",
             (long long)WORKDIR_MAX);
    return -1;
  }
  if (status == 0 || status >= 500 || status == 429) {
    backoff(a, "workdir", status);
    return 1;
  }
  a->failures = 0;
  if (status != 200) {
    snprintf(why, cap, "the broker refused it (%ld)", status);
    return -1;
  }
  if (!wrote) {
    snprintf(why, cap, "cannot write %.300s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* Fetches, checks and unpacks the job's workdir into a->rundir; 0, or -1
 * with the reason in why. */
static int prepare_workdir(struct agent *a, const struct passwd *pw, char *why,
                           size_t cap) {
  char tar[4200], part[4300];
  p(tar, sizeof tar, a->o->dir, "workdir.tar");
  snprintf(a->rundir, sizeof a->rundir, "%s/sky_workdir", a->workdir);
  snprintf(part, sizeof part, "%s.part", a->rundir);
  struct stat st;
  if (lstat(a->rundir, &st) == 0 && S_ISDIR(st.st_mode))
    return 0; /* unpacked before this agent started again */
  int rc;
  while ((rc = workdir_get(a, tar, why, cap)) == 1) {
    int64_t wait = a->next_try_ms - now_ms();
    if (wait > 0)
      sleep_ms(wait);
  }
  if (rc)
    return -1;
  int fd = open(tar, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st)) {
    snprintf(why, cap, "cannot read %.300s: %s", tar, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  size_t len = (size_t)st.st_size;
  void *data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len && data == MAP_FAILED) {
    snprintf(why, cap, "cannot map %.300s: %s", tar, strerror(errno));
    return -1;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  char hex[65] = "";
  if (EVP_Digest(len ? data : "", len, md, &mdlen, EVP_sha256(), NULL))
    for (unsigned i = 0; i < 32; i++)
      snprintf(hex + 2 * i, 3, "%02x", md[i]);
  rc = -1;
  if (strcmp(hex, a->job.workdir_sha)) {
    snprintf(why, cap, "the archive's SHA-256 is %s, not %s", hex,
             a->job.workdir_sha);
  } else if (tw_tar_remove_tree(part)) {
    snprintf(why, cap, "cannot remove %.300s: %s", part, strerror(errno));
  } else {
    struct tw_tar_limits lim = {.max_bytes = (uint64_t)1 << 34};
    char terr[512] = "";
    if (tw_tar_unpack(data, len, &lim, part, pw ? (int)pw->pw_uid : -1,
                      pw ? (int)pw->pw_gid : -1, terr, sizeof terr)) {
      snprintf(why, cap, "%s", terr);
      tw_tar_remove_tree(part);
    } else if (rename(part, a->rundir)) {
      snprintf(why, cap, "cannot rename %.300s: %s", part, strerror(errno));
    } else {
      rc = 0;
    }
  }
  if (len)
    munmap(data, len);
  unlink(tar);
  return rc;
}

static int start_job(struct agent *a) {
  const struct passwd *pw = NULL;
  if (geteuid() == 0 && a->job.user) {
    pw = getpwnam(a->job.user);
    if (!pw)
      say("user %s does not exist here; running as root", a->job.user);
  }
  if (pw) {
    p(a->workdir, sizeof a->workdir, a->o->dir, "work");
    if (mkdir(a->workdir, 0700) && errno != EEXIST)
      return -1;
    if (chown(a->workdir, pw->pw_uid, pw->pw_gid) || chmod(a->o->dir, 0711))
      say("cannot hand %s to %s: %s", a->workdir, pw->pw_name, strerror(errno));
    p(a->path_ckpt, sizeof a->path_ckpt, a->workdir, ".checkpoint-saved");
  }
  int out = open_log(a->o->dir, "stdout"), err = open_log(a->o->dir, "stderr");
  snprintf(a->rundir, sizeof a->rundir, "%s", a->workdir);
  if (a->job.workdir_sha[0]) {
    char why[768];
    if (prepare_workdir(a, pw, why, sizeof why)) {
      /* the job's end, and its output says why */
      say("workdir: %s", why);
      if (err >= 0)
        dprintf(err, "tradewind-agent: workdir: %s\n", why);
      if (out >= 0)
        close(out);
      if (err >= 0)
        close(err);
      errno = EINVAL;
      return -1;
    }
    say("workdir unpacked into %s", a->rundir);
  }
  int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out < 0 || err < 0 || nul < 0) {
    say("cannot open the job's output files: %s", strerror(errno));
    return -1;
  }
  char **env = job_env(a, pw);
  fflush(stderr);
  pid_t k = fork();
  if (k < 0) {
    free_env(env);
    return -1;
  }
  if (k == 0) {
    setpgid(0, 0);
    dup2(nul, 0);
    dup2(out, 1);
    dup2(err, 2);
    keeper(a, env, pw);
  }
  setpgid(k, k);
  close(out);
  close(err);
  close(nul);
  free_env(env);
  a->keeper_is_child = true;
  a->s.started = true;
  a->s.keeper_pid = k;
  a->s.started_ms = now_ms();
  save_state(a);
  say("job started (process group %d)", (int)k);
  return 0;
}

/* Reads the keeper's "what n ms" line. */
static bool read_mark(const char *path, char *what, size_t cap, int *n,
                      int64_t *ms) {
  char *t = slurp(path, 200, NULL);
  if (!t)
    return false;
  char w[16];
  long long x = 0;
  int v = 0;
  bool ok = sscanf(t, "%15s %d %lld", w, &v, &x) == 3;
  free(t);
  if (ok) {
    snprintf(what, cap, "%s", w);
    *n = v;
    *ms = x;
  }
  return ok;
}

/* Notices the keeper's phase change and the job's end. */
static void check_job(struct agent *a) {
  if (!a->s.started || a->s.ended)
    return;
  char what[16];
  int n;
  int64_t ms;
  if (!a->s.run_ms && read_mark(a->path_phase, what, sizeof what, &n, &ms)) {
    a->s.run_ms = ms;
    save_state(a);
  }
  bool gone = false;
  int st = 0;
  if (a->keeper_is_child) {
    pid_t w = waitpid((pid_t)a->s.keeper_pid, &st, WNOHANG);
    gone = w == (pid_t)a->s.keeper_pid || (w < 0 && errno == ECHILD);
  } else {
    gone = kill((pid_t)a->s.keeper_pid, 0) < 0 && errno == ESRCH;
    st = 0;
  }
  if (!gone)
    return;
  a->s.ended = true;
  if (read_mark(a->path_exit, what, sizeof what, &n, &ms)) {
    a->s.ended_ms = ms;
    if (!strcmp(what, "signal"))
      a->s.exit_signal = n;
    else
      a->s.exit_code = n;
  } else {
    /* The keeper itself was killed: SIGKILL to the group. */
    a->s.ended_ms = now_ms();
    a->s.exit_signal =
        a->keeper_is_child && WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
  }
  /* The group may hold stragglers that left the scripts' tree. */
  kill(-(pid_t)a->s.keeper_pid, SIGKILL);
  save_state(a);
  if (a->s.exit_signal >= 0)
    say("job ended by signal %d", a->s.exit_signal);
  else
    say("job exited with %d", a->s.exit_code);
}

static void enforce(struct agent *a) {
  if (!a->s.started || a->s.ended)
    return;
  int64_t now = now_ms();
  if (a->job.time_limit_s > 0 && !a->s.limit_hit &&
      now >= a->s.started_ms + a->job.time_limit_s * 1000) {
    say("time limit of %lld s reached: SIGTERM",
        (long long)a->job.time_limit_s);
    a->s.limit_hit = true;
    signal_group(a, SIGTERM);
    plan_kill(a, now + a->job.grace_s * 1000);
    save_state(a);
  }
  if (a->s.kill_at_ms && now >= a->s.kill_at_ms) {
    signal_group(a, SIGKILL);
  }
}

static void on_notice(struct agent *a) {
  const struct tw_agent_notice *n = &a->s.notice.n;
  say("interruption notice (%s, %s)", n->source, n->action);
  if (a->s.started && !a->s.ended) {
    a->s.after_notice = true;
    signal_group(a, SIGTERM);
    int64_t at = n->deadline_ms ? n->deadline_ms - KILL_BEFORE_DEADLINE_MS
                                : now_ms() + a->job.grace_s * 1000;
    plan_kill(a, at);
  }
  save_state(a);
}

/* The checkpoint-saved file: each new mtime is one checkpoint report. */
static void check_checkpoint(struct agent *a) {
  struct stat st;
  if (stat(a->path_ckpt, &st))
    return;
  int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  if (m == a->s.ckpt_mtime_ns)
    return;
  char *t = slurp(a->path_ckpt, 64, NULL);
  long long prog = t ? strtoll(t, NULL, 10) : 0;
  free(t);
  a->s.ckpt_mtime_ns = m;
  a->s.ckpt_at_ms =
      (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
  a->s.ckpt_progress_s = prog > 0 ? prog : 0;
  a->s.ckpt_pending = true;
  save_state(a);
}

/* ---- logs ----------------------------------------------------------------
 */

static int stream_fd(struct agent *a, int i) {
  if (a->s.st[i].fd > 0)
    return a->s.st[i].fd;
  char path[4200];
  p(path, sizeof path, a->o->dir, stream_name[i]);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0)
    a->s.st[i].fd = fd;
  return fd;
}

/* Keeps the unsent bytes within --max-buffer-bytes and gives back to the
 * disk what the broker has (beyond half the bound, kept for a rewind). */
static void bound_buffer(struct agent *a, int i, int64_t size) {
  struct stream *s = &a->s.st[i];
  int fd = stream_fd(a, i);
  int64_t max = a->o->max_buffer_bytes;
  if (size - s->file_pos > max) {
    int64_t drop = size - s->file_pos - max;
    s->dropped += drop;
    s->file_pos += drop;
    say("%s: %lld unsent bytes dropped (buffer full)", stream_name[i],
        (long long)drop);
    save_state(a);
  }
  if (fd >= 0 && s->file_pos - s->punched > max / 2) {
    int64_t upto = s->file_pos - max / 4;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)s->punched, (off_t)(upto - s->punched)) == 0) {
      s->punched = upto;
      save_state(a);
    }
  }
}

/* Sends one chunk of stream i when due (LOG_EVERY_MS; always: all).
 * Returns SENT_OK when nothing is left or something moved, SENT_RETRY
 * when the broker is away. */
static enum sent ship(struct agent *a, int i, bool all, bool *more) {
  struct stream *s = &a->s.st[i];
  *more = false;
  if (s->stopped)
    return SENT_OK;
  int fd = stream_fd(a, i);
  if (fd < 0)
    return SENT_OK;
  struct stat st;
  if (fstat(fd, &st))
    return SENT_OK;
  bound_buffer(a, i, (int64_t)st.st_size);
  char *buf = NULL;
  size_t len = 0;
  bool marker = s->dropped > 0;
  if (marker) {
    int n = asprintf(&buf, "[tradewind-agent: %lld bytes of %s dropped]\n",
                     (long long)s->dropped, stream_name[i]);
    len = n > 0 ? (size_t)n : 0;
  } else {
    int64_t avail = (int64_t)st.st_size - s->file_pos;
    if (avail <= 0)
      return SENT_OK;
    if (!all && avail < (int64_t)LOG_BATCH &&
        now_ms() - s->sent_ms < LOG_EVERY_MS)
      return SENT_OK; /* more may come: sent together */
    len = avail > CHUNK_MAX ? CHUNK_MAX : (size_t)avail;
    buf = malloc(len);
    ssize_t r = pread(fd, buf, len, (off_t)s->file_pos);
    if (r <= 0) {
      free(buf);
      return SENT_OK;
    }
    len = (size_t)r;
  }
  char route[128];
  snprintf(route, sizeof route, "logs?stream=%s&offset=%lld", stream_name[i],
           (long long)s->stream_pos);
  struct resp r;
  enum sent e =
      report(a, "logs", route, "application/octet-stream", buf, len, &r);
  free(buf);
  if (e == SENT_OK)
    s->sent_ms = now_ms();
  int64_t next;
  if (e == SENT_OK && r.status == 413) {
    say("%s: the broker keeps no more output of this attempt", stream_name[i]);
    s->stopped = true;
  } else if (e == SENT_OK && r.status == 409 &&
             !tw_agent_parse_next_offset(r.body, r.len, &next)) {
    /* The broker has less than we thought: rewind if we still can. */
    int64_t back = s->stream_pos - next;
    if (back > 0 && back <= s->file_pos - s->punched && !marker)
      s->file_pos -= back;
    s->stream_pos = next;
    *more = true;
  } else if (e == SENT_OK && r.status < 300 &&
             !tw_agent_parse_next_offset(r.body, r.len, &next) &&
             next >= s->stream_pos) {
    int64_t took = next - s->stream_pos;
    if (marker) {
      if (took >= (int64_t)len)
        s->dropped = 0;
    } else {
      s->file_pos += took;
      if (s->file_pos > (int64_t)st.st_size)
        s->file_pos = (int64_t)st.st_size;
    }
    s->stream_pos = next;
    *more = took > 0;
  } else if (e == SENT_OK) {
    say("%s: answer without next_offset (%ld); stopping this stream",
        stream_name[i], r.status);
    s->stopped = true;
  } else if (e == SENT_FINAL) {
    s->stopped = true;
  }
  resp_free(&r);
  if (e != SENT_RETRY)
    save_state(a);
  return e == SENT_RETRY ? SENT_RETRY : SENT_OK;
}

static bool logs_drained(struct agent *a) {
  for (int i = 0; i < N_STREAMS; i++) {
    struct stream *s = &a->s.st[i];
    if (s->stopped)
      continue;
    int fd = stream_fd(a, i);
    struct stat st;
    if (fd >= 0 && !fstat(fd, &st) &&
        ((int64_t)st.st_size > s->file_pos || s->dropped))
      return false;
  }
  return true;
}

/* ---- the reports, in order ---------------------------------------------- */

static json_t *notice_body(const struct tw_agent_notice *n) {
  return json_pack(
      "{s:s,s:s,s:I,s:s,s:s}", "kind",
      n->kind == TW_NOTICE_REBALANCE ? "rebalance" : "interruption", "action",
      n->action, "deadline_ms", (json_int_t)n->deadline_ms, "source", n->source,
      "event_id", n->event_id);
}

static const char *phase_now(const struct agent *a) {
  return a->s.ended ? "exited" : a->s.run_ms ? "run" : "setup";
}

/* Sends what is due; stops at the first report the broker did not take
 * (the backoff then holds every report).  Returns true when the attempt
 * is fully reported. */
static bool flush(struct agent *a) {
  if (now_ms() < a->next_try_ms)
    return false;
  struct state *s = &a->s;
#define SEND(cond, what, route, body, done)                                    \
  if (cond) {                                                                  \
    enum sent e_ = simple(a, what, route, body);                               \
    if (e_ == SENT_RETRY)                                                      \
      return false;                                                            \
    done = true;                                                               \
    save_state(a);                                                             \
  }
  SEND(s->started && !s->setup_sent, "phase", "phase",
       json_pack("{s:s,s:I}", "phase", "setup", "at_ms",
                 (json_int_t)s->started_ms),
       s->setup_sent);
  SEND(s->run_ms && !s->run_sent, "phase", "phase",
       json_pack("{s:s,s:I}", "phase", "run", "at_ms", (json_int_t)s->run_ms),
       s->run_sent);
  SEND(s->notice.seen && !s->notice.sent, "notice", "notice",
       notice_body(&s->notice.n), s->notice.sent);
  SEND(s->rebalance.seen && !s->rebalance.sent, "notice", "notice",
       notice_body(&s->rebalance.n), s->rebalance.sent);
  if (s->ckpt_pending) {
    bool done = false;
    SEND(true, "checkpoint", "checkpoint",
         json_pack("{s:I,s:I}", "at_ms", (json_int_t)s->ckpt_at_ms,
                   "progress_s", (json_int_t)s->ckpt_progress_s),
         done);
    if (done) {
      s->ckpt_pending = false;
      save_state(a);
      if (s->notice.seen)
        azure_ack(a);
    }
  }
#undef SEND
  if (now_ms() >= a->next_heartbeat_ms && !s->exit_sent) {
    struct resp r;
    enum sent e = report_json(a, "heartbeat", "heartbeat",
                              json_pack("{s:s,s:I}", "phase", phase_now(a),
                                        "at_ms", (json_int_t)now_ms()),
                              &r);
    if (e == SENT_RETRY) {
      resp_free(&r);
      return false;
    }
    a->next_heartbeat_ms = now_ms() + a->job.heartbeat_s * 1000;
    enum tw_agent_action act =
        e == SENT_OK ? tw_agent_parse_action(r.body, r.len) : TW_ACTION_NONE;
    resp_free(&r);
    if (act == TW_ACTION_CANCEL && !s->cancelled && s->started && !s->ended) {
      say("cancelled by the broker: SIGTERM");
      s->cancelled = true;
      signal_group(a, SIGTERM);
      plan_kill(a, now_ms() + a->job.grace_s * 1000);
      save_state(a);
    } else if (act == TW_ACTION_CHECKPOINT && s->started && !s->ended) {
      say("checkpoint asked: SIGTERM");
      signal_group(a, SIGTERM);
    }
  }
  /* the attempt's output is the head's: a gang's other nodes keep theirs
   * in their directory (the streams have one offset each) */
  bool ships = a->job.gang_rank == 0;
  for (int i = 0; ships && i < N_STREAMS; i++) {
    bool more = true;
    for (int k = 0; k < 8 && more; k++)
      if (ship(a, i, s->ended || s->cancelled, &more) == SENT_RETRY)
        return false;
  }
  if (s->ended && !s->exit_sent && (!ships || logs_drained(a))) {
    json_t *b = json_pack(
        "{s:I,s:I,s:b}", "started_ms", (json_int_t)s->started_ms, "ended_ms",
        (json_int_t)s->ended_ms, "after_notice", s->after_notice);
    if (s->exit_signal >= 0)
      json_object_set_new(b, "signal", json_integer(s->exit_signal));
    else
      json_object_set_new(b, "exit_code", json_integer(s->exit_code));
    if (a->o->node_rank >= 0)
      json_object_set_new(b, "node_rank", json_integer(a->o->node_rank));
    struct resp r;
    enum sent e = report_json(a, "exit", "exit", b, &r);
    if (e == SENT_RETRY) {
      resp_free(&r);
      return false;
    }
    json_t *ans = e == SENT_OK && r.body ? json_loadb(r.body, r.len, 0, NULL)
                                         : NULL;
    a->s.held = json_is_true(json_object_get(ans, "held"));
    json_decref(ans);
    resp_free(&r);
    s->exit_sent = true;
    save_state(a);
    say(a->s.held ? "exit reported; the gang's head decides the attempt: "
                  "waiting for its end"
                : "exit reported");
  }
  if (s->exit_sent && a->s.held) {
    if (now_ms() < a->next_heartbeat_ms)
      return false;
    struct resp r;
    enum sent e = report_json(a, "heartbeat", "heartbeat",
                              json_pack("{s:s,s:I}", "phase", "run", "at_ms",
                                        (json_int_t)now_ms()),
                              &r);
    a->next_heartbeat_ms = now_ms() + a->job.heartbeat_s * 1000;
    enum tw_agent_action act =
        e == SENT_OK ? tw_agent_parse_action(r.body, r.len) : TW_ACTION_NONE;
    resp_free(&r);
    if (e == SENT_FINAL || act == TW_ACTION_CANCEL) {
      say("the attempt ended");
      return true;
    }
    return false;
  }
  if (s->exit_sent) {
    azure_ack(a);
    return true;
  }
  return false;
}

/* This machine's address for its gang's peers: the first IPv4 address of
 * an interface that is up and not loopback, else 127.0.0.1. */
static void local_ip(char *out, size_t cap) {
  snprintf(out, cap, "127.0.0.1");
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs))
    return;
  for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
        !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
      continue;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
    if (inet_ntop(AF_INET, &sin->sin_addr, out, (socklen_t)cap))
      break;
  }
  freeifaddrs(ifs);
}

/* ---- register and the loop --------------------------------------------- */

/* Returns 0 with a->job filled, 1 when the broker refused for good. */
static int do_register(struct agent *a) {
  size_t len = 0;
  char *cached = slurp(a->path_register, 16 << 20, &len);
  char err[256];
  if (cached) {
    int rc = tw_agent_parse_register(cached, len, &a->job, err, sizeof err);
    free(cached);
    if (!rc) {
      a->have_job = true;
      return 0;
    }
  }
  json_t *md = discover(a);
  char ip[INET6_ADDRSTRLEN];
  local_ip(ip, sizeof ip);
  bool said_wait = false;
  for (;;) {
    int64_t wait = a->next_try_ms - now_ms();
    if (wait > 0)
      sleep_ms(wait);
    json_t *b =
        json_pack("{s:s,s:s,s:O,s:s,s:s}", "instance_id", a->instance_id,
                  "cloud",
                  a->o->cloud == TW_CLOUD_AWS       ? "aws"
                  : a->o->cloud == TW_CLOUD_AZURE   ? "azure"
                  : a->o->cloud == TW_CLOUD_ALIBABA ? "alibaba"
                                                    : "local",
                  "metadata", md, "agent_version", TW_AGENT_VERSION, "ip", ip);
    if (a->o->node_rank >= 0)
      json_object_set_new(b, "node_rank", json_integer(a->o->node_rank));
    struct resp r;
    enum sent e = report_json(a, "register", "register", b, &r);
    if (e == SENT_RETRY) {
      resp_free(&r);
      continue;
    }
    if (e == SENT_FINAL || r.status != 200) {
      say("register refused (%ld): giving up", r.status);
      resp_free(&r);
      json_decref(md);
      return 1;
    }
    tw_agent_job_free(&a->job);
    if (tw_agent_parse_register(r.body, r.len, &a->job, err, sizeof err)) {
      say("register answer is malformed: %s; retrying", err);
      resp_free(&r);
      backoff(a, "register", 200);
      continue;
    }
    if (!a->job.gang_ready) {
      /* the node list is known once every node registered: `run` needs
       * it, so nothing starts before (register again, 1 s apart; each
       * one counts as a heartbeat) */
      if (!said_wait)
        say("node %d of %d: waiting for the gang's other nodes",
            a->job.gang_rank, a->job.gang_nodes);
      said_wait = true;
      resp_free(&r);
      a->next_try_ms = now_ms() + 1000;
      continue;
    }
    write_atomic(a->path_register, r.body, r.len);
    resp_free(&r);
    json_decref(md);
    a->have_job = true;
    say("registered: job %s attempt %d", a->job.job_id, a->job.attempt);
    return 0;
  }
}

int tw_agent_main(const struct tw_agent_opts *o) {
  struct agent *a = calloc(1, sizeof *a);
  if (!a)
    return 1;
  a->o = o;
  int rc = 1;
  signal(SIGPIPE, SIG_IGN);
  size_t tl = 0;
  char *tok = slurp(o->token_file, sizeof a->token - 1, &tl);
  if (!tok) {
    say("cannot read the token file %s: %s", o->token_file, strerror(errno));
    free(a);
    return 1;
  }
  while (tl &&
         (tok[tl - 1] == '\n' || tok[tl - 1] == '\r' || tok[tl - 1] == ' '))
    tok[--tl] = '\0';
  snprintf(a->token, sizeof a->token, "%s", tok);
  free(tok);
  /* The job may run as another user: the token is the agent's alone,
   * whatever umask wrote it. */
  if (chmod(o->token_file, 0600))
    say("cannot make %s private: %s", o->token_file, strerror(errno));
  snprintf(a->auth, sizeof a->auth, "Authorization: Bearer %s", a->token);
  if (mkdir(o->dir, 0700) && errno != EEXIST) {
    say("cannot make %s: %s", o->dir, strerror(errno));
    free(a);
    return 1;
  }
  p(a->path_state, sizeof a->path_state, o->dir, "state.json");
  p(a->path_phase, sizeof a->path_phase, o->dir, "phase");
  p(a->path_exit, sizeof a->path_exit, o->dir, "exit");
  p(a->path_ckpt, sizeof a->path_ckpt, o->dir, ".checkpoint-saved");
  p(a->path_register, sizeof a->path_register, o->dir, "register.json");
  snprintf(a->workdir, sizeof a->workdir, "%s", o->dir);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  a->broker = curl_easy_init();
  a->meta = curl_easy_init();
  load_state(a);
  if (do_register(a))
    goto out;
  if (a->job.user && geteuid() == 0 && getpwnam(a->job.user)) {
    p(a->workdir, sizeof a->workdir, o->dir, "work");
    p(a->path_ckpt, sizeof a->path_ckpt, a->workdir, ".checkpoint-saved");
  }
  if (!a->s.started) {
    if (start_job(a)) {
      say("cannot start the job: %s", strerror(errno));
      a->s.started = true;
      a->s.started_ms = a->s.ended_ms = now_ms();
      a->s.ended = true;
      a->s.exit_code = 127;
      save_state(a);
    }
  } else if (!a->s.ended) {
    say("adopting the running job (process group %lld)",
        (long long)a->s.keeper_pid);
  }
  for (;;) {
    check_job(a);
    check_checkpoint(a);
    int64_t now = now_ms();
    if (o->cloud != TW_CLOUD_LOCAL && now >= a->next_poll_ms &&
        !a->s.exit_sent) {
      a->next_poll_ms = now + NOTICE_POLL_MS;
      if (poll_notices(a))
        on_notice(a);
    }
    enforce(a);
    if (flush(a)) {
      rc = 0;
      break;
    }
    sleep_ms(100);
  }
out:
  for (int i = 0; i < N_STREAMS; i++)
    if (a->s.st[i].fd > 0)
      close(a->s.st[i].fd);
  curl_easy_cleanup(a->broker);
  curl_easy_cleanup(a->meta);
  curl_global_cleanup();
  tw_agent_job_free(&a->job);
  free(a);
  return rc;
}
