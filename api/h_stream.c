/* h_stream.c - GET /v1/events/stream (h_stream.h). */
#include "api/h_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "api/api_int.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/core/store_stream.h"

#define HUB_TICK_MS 200            /* how often the hub reads the store */
#define BEAT_US (15 * 1000000LL)   /* a heartbeat comment this often */
#define LIFE_US (3600 * 1000000LL) /* a stream ends after this long */
#define MAX_UNSENT (1u << 20)      /* a stream's unsent bytes at most */
#define BATCH 128                  /* events read per stream and tick */
#define DEFAULT_MAX 256u

struct stream {
  struct stream *next;
  struct tw_door_conn *conn;
  char tenant[64], job[64]; /* "" : any */
  int64_t last_seq;         /* hub thread only */
  int64_t next_beat_us, end_us;
  /* under hub->mu */
  struct tw_buf buf;
  size_t off;
  bool suspended, ended, gone;
};

struct tw_stream_hub {
  struct tw_store *store;
  unsigned max;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool running, stopping, refusing; /* under mu */
  struct stream *list;              /* under mu */
  unsigned n;                       /* under mu: streams not gone */
  uint64_t opened, ended_slow;      /* under mu: counters */
};

/* ---- the response: a pool thread sends what the hub wrote --------------- */

#define PULL_MAX 8192 /* bytes taken per pull */

static int stream_pull(void *cls, struct tw_buf *out) {
  struct stream *s = cls;
  struct tw_stream_hub *hub = *(struct tw_stream_hub **)(s + 1);
  pthread_mutex_lock(&hub->mu);
  size_t have = s->buf.len - s->off;
  if (have) {
    size_t n = have < PULL_MAX ? have : PULL_MAX;
    tw_buf_add(out, s->buf.data + s->off, n);
    s->off += n;
    if (s->off == s->buf.len) {
      tw_buf_reset(&s->buf);
      s->off = 0;
    }
    pthread_mutex_unlock(&hub->mu);
    return (int)n;
  }
  if (s->ended) {
    pthread_mutex_unlock(&hub->mu);
    return -1;
  }
  /* nothing to send: off the pool until the hub has something */
  s->suspended = true;
  pthread_mutex_unlock(&hub->mu);
  return 0;
}

/* The response is gone with its connection: the hub frees the stream. */
static void stream_done(void *cls) {
  struct stream *s = cls;
  struct tw_stream_hub *hub = *(struct tw_stream_hub **)(s + 1);
  pthread_mutex_lock(&hub->mu);
  s->gone = true;
  hub->n--;
  pthread_cond_signal(&hub->cv);
  pthread_mutex_unlock(&hub->mu);
}

/* ---- the hub thread ------------------------------------------------------ */

static void render_event(struct tw_buf *b, const struct tw_stream_event *e) {
  char t[40];
  tw_time_fmt_rfc3339(e->at_ms, t, sizeof t);
  tw_buf_printf(
      b, "id: %" PRId64 "\nevent: job\ndata: {\"seq\":%" PRId64 ",\"job\":",
      e->seq, e->seq);
  tw_buf_json_str(b, e->job_id);
  tw_buf_adds(b, ",\"tenant\":");
  tw_buf_json_str(b, e->tenant);
  tw_buf_printf(b, ",\"at\":\"%s\",\"from\":", t);
  if (e->from[0])
    tw_buf_json_str(b, e->from);
  else
    tw_buf_adds(b, "null");
  tw_buf_adds(b, ",\"to\":");
  tw_buf_json_str(b, e->to);
  tw_buf_adds(b, ",\"reason\":");
  tw_buf_json_str(b, e->reason);
  tw_buf_adds(b, "}\n\n");
}

/* One stream's work for a tick, outside the lock (only this thread writes
 * last_seq; the stream is not freed while the hub holds it). */
static bool fill(struct tw_stream_hub *hub, struct stream *s, int64_t head,
                 int64_t now, struct tw_buf *b, struct tw_stream_event *ev) {
  bool end = false;
  if (s->last_seq < head) {
    size_t n = 0;
    struct tw_err err = {0};
    if (tw_store_events_since(
            hub->store, s->last_seq, s->tenant[0] ? s->tenant : NULL,
            s->job[0] ? s->job : NULL, ev, BATCH, &n, &err) == TW_OK) {
      for (size_t i = 0; i < n; i++)
        render_event(b, &ev[i]);
      /* nothing of this stream's up to head: skip them next time */
      s->last_seq = n == BATCH ? ev[n - 1].seq : head;
    } else {
      tw_log_warn("api", "event stream: %s", err.msg);
    }
  }
  if (now >= s->next_beat_us) {
    tw_buf_adds(b, ": heartbeat\n\n");
    s->next_beat_us = now + BEAT_US;
  }
  if (now >= s->end_us)
    end = true;
  return end;
}

static void *hub_main(void *arg) {
  struct tw_stream_hub *hub = arg;
  struct stream **work = tw_calloc(hub->max, sizeof *work);
  struct tw_stream_event *ev = tw_calloc(BATCH, sizeof *ev);
  struct tw_buf b;
  tw_buf_init(&b);
  pthread_mutex_lock(&hub->mu);
  while (!hub->stopping) {
    /* free the streams whose connections are gone, list the others */
    size_t nw = 0;
    for (struct stream **p = &hub->list; *p;) {
      struct stream *s = *p;
      if (s->gone) {
        *p = s->next;
        tw_buf_release(&s->buf);
        free(s);
        continue;
      }
      if (!s->ended && nw < hub->max)
        work[nw++] = s;
      p = &s->next;
    }
    pthread_mutex_unlock(&hub->mu);
    int64_t head = 0;
    struct tw_err err = {0};
    if (nw && tw_store_events_last_seq(hub->store, &head, &err))
      tw_log_warn("api", "event stream: %s", err.msg);
    int64_t now = tw_mono_us();
    for (size_t i = 0; i < nw; i++) {
      struct stream *s = work[i];
      tw_buf_reset(&b);
      bool end = fill(hub, s, head, now, &b, ev);
      pthread_mutex_lock(&hub->mu);
      if (!s->gone) {
        if (s->buf.len - s->off + b.len > MAX_UNSENT) {
          end = true; /* a reader this slow resumes from its last id */
          hub->ended_slow++;
        } else if (b.len) {
          tw_buf_add(&s->buf, b.data, b.len);
        }
        if (end)
          s->ended = true;
        if (s->suspended && (s->buf.len > s->off || s->ended)) {
          s->suspended = false;
          tw_door_wake(s->conn);
        }
      }
      pthread_mutex_unlock(&hub->mu);
    }
    pthread_mutex_lock(&hub->mu);
    if (hub->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += HUB_TICK_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&hub->cv, &hub->mu, &ts);
  }
  pthread_mutex_unlock(&hub->mu);
  tw_buf_release(&b);
  free(ev);
  free(work);
  return NULL;
}

enum tw_rc tw_stream_hub_start(struct tw_store *store, unsigned max,
                               struct tw_stream_hub **out, struct tw_err *err) {
  struct tw_stream_hub *hub = tw_calloc(1, sizeof *hub);
  hub->store = store;
  hub->max = max ? max : DEFAULT_MAX;
  pthread_mutex_init(&hub->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&hub->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&hub->thread, NULL, hub_main, hub)) {
    pthread_mutex_destroy(&hub->mu);
    pthread_cond_destroy(&hub->cv);
    free(hub);
    *out = NULL;
    return tw_err_set(err, TW_E_IO,
                      "api: cannot start the event stream thread");
  }
  hub->running = true;
  *out = hub;
  return TW_OK;
}

void tw_stream_hub_end_all(struct tw_stream_hub *hub) {
  if (!hub)
    return;
  pthread_mutex_lock(&hub->mu);
  hub->refusing = true;
  for (struct stream *s = hub->list; s; s = s->next) {
    if (s->gone)
      continue;
    s->ended = true;
    if (s->suspended) {
      s->suspended = false;
      tw_door_wake(s->conn);
    }
  }
  pthread_mutex_unlock(&hub->mu);
}

void tw_stream_hub_free(struct tw_stream_hub *hub) {
  if (!hub)
    return;
  pthread_mutex_lock(&hub->mu);
  hub->stopping = true;
  pthread_cond_signal(&hub->cv);
  pthread_mutex_unlock(&hub->mu);
  if (hub->running)
    pthread_join(hub->thread, NULL);
  for (struct stream *s = hub->list, *next; s; s = next) {
    next = s->next;
    tw_buf_release(&s->buf);
    free(s);
  }
  pthread_mutex_destroy(&hub->mu);
  pthread_cond_destroy(&hub->cv);
  free(hub);
}

void tw_stream_hub_metrics(struct tw_stream_hub *hub, struct tw_buf *out) {
  if (!hub)
    return;
  pthread_mutex_lock(&hub->mu);
  unsigned n = hub->n;
  uint64_t opened = hub->opened, slow = hub->ended_slow;
  pthread_mutex_unlock(&hub->mu);
  tw_buf_printf(out,
                "# HELP tradewind_event_streams Event streams open "
                "(GET /v1/events/stream; at most api.max_streams).\n"
                "# TYPE tradewind_event_streams gauge\n"
                "tradewind_event_streams %u\n"
                "# HELP tradewind_event_streams_opened_total Event streams "
                "opened.\n"
                "# TYPE tradewind_event_streams_opened_total counter\n"
                "tradewind_event_streams_opened_total %llu\n"
                "# HELP tradewind_event_streams_slow_total Event streams "
                "ended because their reader fell 1 MiB behind.\n"
                "# TYPE tradewind_event_streams_slow_total counter\n"
                "tradewind_event_streams_slow_total %llu\n",
                n, (unsigned long long)opened, (unsigned long long)slow);
}

/* ---- the handler --------------------------------------------------------- */

static bool parse_seq(const char *s, int64_t *out) {
  if (!s || !*s)
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0)
    return false;
  *out = v;
  return true;
}

void tw_h_events_stream(struct tw_req *r) {
  static const char *const keys[] = {"tenant", "job", "after", NULL};
  if (!tw_req_known_query(r, keys))
    return;
  struct tw_stream_hub *hub = tw_api_stream_hub(r->api);
  const char *tenant = tw_req_query(r, "tenant"); /* rewritten by RBAC */
  const char *job = tw_req_query(r, "job");
  const char *after = tw_req_query(r, "after");
  const char *last = tw_req_header(r, "Last-Event-ID");
  if ((tenant && strlen(tenant) >= 64) || (job && strlen(job) >= 64)) {
    tw_problem(r, 400, "invalid-field",
               tenant && strlen(tenant) >= 64 ? "tenant" : "job",
               "%s: at most 63 characters",
               tenant && strlen(tenant) >= 64 ? "tenant" : "job");
    return;
  }
  int64_t from = -1;
  if (last && *last && !parse_seq(last, &from)) {
    tw_problem(r, 400, "invalid-field", "Last-Event-ID",
               "Last-Event-ID: expected an event seq (an integer >= 0), got "
               "\"%.32s\"",
               last);
    return;
  }
  if (from < 0 && after && !parse_seq(after, &from)) {
    tw_problem(r, 400, "invalid-field", "after",
               "after: expected an event seq (an integer >= 0), got \"%.32s\"",
               after);
    return;
  }
  struct tw_err err = {0};
  int64_t head = 0;
  if (tw_store_events_last_seq(tw_api_store(r->api), &head, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  if (from < 0 || from > head)
    from = head; /* only what comes next */
  /* the hub pointer rides behind the stream, for the callbacks */
  struct stream *s = tw_calloc(1, sizeof *s + sizeof hub);
  *(struct tw_stream_hub **)(s + 1) = hub;
  s->conn = r->conn;
  if (tenant && *tenant)
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
  if (job && *job)
    snprintf(s->job, sizeof s->job, "%s", job);
  s->last_seq = from;
  int64_t now = tw_mono_us();
  s->next_beat_us = now + BEAT_US;
  s->end_us = now + LIFE_US;
  tw_buf_init(&s->buf);
  tw_buf_printf(&s->buf,
                "retry: 3000\nid: %" PRId64 "\nevent: hello\ndata: "
                "{\"seq\":%" PRId64 "}\n\n",
                from, from);
  pthread_mutex_lock(&hub->mu);
  if (hub->refusing || hub->n >= hub->max) {
    bool draining = hub->refusing;
    unsigned max = hub->max;
    pthread_mutex_unlock(&hub->mu);
    tw_buf_release(&s->buf);
    free(s);
    if (draining) {
      tw_problem(r, 503, "draining", NULL, "the broker is shutting down");
    } else {
      tw_req_add_header(r, "Retry-After", "5");
      tw_problem(r, 503, "unavailable", NULL,
                 "%u event streams are open (api.max_streams); try again "
                 "later",
                 max);
    }
    return;
  }
  s->next = hub->list;
  hub->list = s;
  hub->n++;
  hub->opened++;
  pthread_cond_signal(&hub->cv); /* a first fill at once */
  pthread_mutex_unlock(&hub->mu);
  r->stream_pull = stream_pull;
  r->stream_done = stream_done;
  r->stream_ctx = s;
  r->status = 200;
  r->content_type = "text/event-stream";
  tw_req_add_header(r, "Cache-Control", "no-store");
  tw_req_add_header(r, "X-Accel-Buffering", "no");
}
