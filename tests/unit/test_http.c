/* test_http.c - the outbound HTTP helper against a scripted in-test server
 * (libmicrohttpd on 127.0.0.1, port 0).  The backoff sleep is recorded,
 * not slept; the only wall-clock waits are curl's own timeouts (100 ms
 * each) in the timeout case. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "providers/http.h"

/* ---- scripted server ---- */

struct step {
  unsigned status;
  const char *retry_after;    /* header value or NULL */
  size_t body_len;            /* 0: body "ok" */
  const char *hname, *hvalue; /* one more response header */
};

#define MAX_SEEN 32

struct server {
  struct MHD_Daemon *d;
  unsigned port;
  pthread_mutex_t mu;
  const struct step *steps;
  size_t n_steps;
  size_t requests;
  size_t connections;
  char attempt_hdr[MAX_SEEN][32]; /* X-Attempt seen per request */
  char method[MAX_SEEN][16];
  char fixed_hdr[MAX_SEEN][32]; /* X-Fixed seen per request */
  struct tw_buf body[MAX_SEEN];
};

struct upload {
  struct tw_buf body;
};

static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  struct server *s = cls;
  (void)c;
  (void)socket_ctx;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    pthread_mutex_lock(&s->mu);
    s->connections++;
    pthread_mutex_unlock(&s->mu);
  }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  struct upload *u = *con_cls;
  if (u) {
    tw_buf_release(&u->body);
    free(u);
    *con_cls = NULL;
  }
}

static void copy_hdr(struct MHD_Connection *c, const char *name, char *out,
                     size_t outsz) {
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  snprintf(out, outsz, "%s", v ? v : "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
  struct server *s = cls;
  (void)url;
  (void)version;
  struct upload *u = *con_cls;
  if (!u) {
    u = tw_calloc(1, sizeof *u);
    tw_buf_init(&u->body);
    *con_cls = u;
    return MHD_YES;
  }
  if (*upload_data_size) {
    tw_buf_add(&u->body, upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&s->mu);
  size_t i = s->requests++;
  if (i < MAX_SEEN) {
    copy_hdr(c, "X-Attempt", s->attempt_hdr[i], sizeof s->attempt_hdr[i]);
    copy_hdr(c, "X-Fixed", s->fixed_hdr[i], sizeof s->fixed_hdr[i]);
    snprintf(s->method[i], sizeof s->method[i], "%s", method);
    tw_buf_add(&s->body[i], u->body.data ? u->body.data : "", u->body.len);
  }
  static const struct step dflt = {200, NULL, 0, NULL, NULL};
  struct step st = i < s->n_steps ? s->steps[i] : dflt;
  pthread_mutex_unlock(&s->mu);

  struct MHD_Response *r;
  if (st.body_len) {
    char *b = tw_malloc(st.body_len);
    memset(b, 'x', st.body_len);
    r = MHD_create_response_from_buffer(st.body_len, b, MHD_RESPMEM_MUST_FREE);
  } else {
    r = MHD_create_response_from_buffer(2, (void *)"ok",
                                        MHD_RESPMEM_PERSISTENT);
  }
  MHD_add_response_header(r, "Content-Type", "text/plain");
  if (st.retry_after)
    MHD_add_response_header(r, "Retry-After", st.retry_after);
  if (st.hname)
    MHD_add_response_header(r, st.hname, st.hvalue);
  enum MHD_Result ret = MHD_queue_response(c, st.status, r);
  MHD_destroy_response(r);
  return ret;
}

/* One scripted server and one fake clock for the group. */
struct fixture {
  struct server s;
  struct tw_clock clk;
};

static void server_start(struct server *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  for (int i = 0; i < MAX_SEEN; i++)
    tw_buf_init(&s->body[i]);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                          0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                          (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_CONNECTION,
                          on_connection, s, MHD_OPTION_NOTIFY_COMPLETED,
                          on_completed, s, MHD_OPTION_END);
  if (!s->d) {
    fprintf(stderr, "FAIL: cannot start libmicrohttpd on 127.0.0.1\n");
    exit(1);
  }
  s->port = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

/* Sets the script and forgets what was seen. */
static void server_script(struct server *s, const struct step *steps,
                          size_t n) {
  pthread_mutex_lock(&s->mu);
  s->steps = steps;
  s->n_steps = n;
  s->requests = 0;
  s->connections = 0;
  for (int i = 0; i < MAX_SEEN; i++) {
    tw_buf_reset(&s->body[i]);
    s->attempt_hdr[i][0] = s->method[i][0] = s->fixed_hdr[i][0] = '\0';
  }
  pthread_mutex_unlock(&s->mu);
}

static void server_stop(struct server *s) {
  MHD_stop_daemon(s->d);
  for (int i = 0; i < MAX_SEEN; i++)
    tw_buf_release(&s->body[i]);
  pthread_mutex_destroy(&s->mu);
}

/* ---- recorded sleeps and a prepare hook ---- */

struct sleeps {
  int64_t ms[64];
  int n;
};

static void record_sleep(void *ctx, int64_t ms) {
  struct sleeps *s = ctx;
  if (s->n < 64)
    s->ms[s->n] = ms;
  s->n++;
}

struct prep {
  unsigned calls;
  unsigned fail_on; /* attempt number that fails, 0: never */
};

static enum tw_rc prepare(void *ctx, struct tw_http_attempt *a,
                          struct tw_err *err) {
  struct prep *p = ctx;
  p->calls++;
  if (p->fail_on && tw_http_attempt_number(a) == p->fail_on)
    return tw_err_set(err, TW_E_AUTH, "credentials expired");
  char v[16];
  snprintf(v, sizeof v, "%u", tw_http_attempt_number(a));
  tw_http_attempt_add_header(a, "X-Attempt", v);
  return TW_OK;
}

static struct tw_http *client(struct sleeps *sl, struct tw_clock *clk,
                              uint64_t seed, int64_t base, int64_t cap) {
  struct tw_http_opts o = {.max_attempts = 5,
                           .backoff_base_ms = base,
                           .backoff_cap_ms = cap,
                           .retry_after_max_ms = 10000,
                           .seed = seed,
                           .sleep_ms = record_sleep,
                           .sleep_ctx = sl,
                           .clock = clk};
  struct tw_http *h = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_http_new(&o, &h, &err) != TW_OK) {
    fprintf(stderr, "FAIL: tw_http_new: %s\n", err.msg);
    exit(1);
  }
  return h;
}

static char url_buf[128];
static const char *url_of(unsigned port, const char *path) {
  snprintf(url_buf, sizeof url_buf, "http://127.0.0.1:%u%s", port, path);
  return url_buf;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- cases ---- */

static void retry_after_then_503_then_200(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{429, "2", 0, NULL, NULL},
                                       {503, NULL, 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 3);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 42, 100, 1000);
  struct prep p = {0};
  struct tw_http_header fixed[] = {{"X-Fixed", "same"}};
  struct tw_http_request req = {.method = "POST",
                                .url = url_of(s->port, "/"),
                                .headers = fixed,
                                .n_headers = 1,
                                .body = "Action=RunInstances",
                                .body_len = 19,
                                .prepare = prepare,
                                .prepare_ctx = &p};
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_http_do(h, &req, &r, &err);
  TW_CHECK(rc == TW_OK, "429/503/200: rc %s: %s", tw_rc_str(rc), err.msg);
  TW_CHECK(r.status == 200, "429/503/200: status %ld", r.status);
  TW_CHECK(r.attempts == 3 && s->requests == 3,
           "429/503/200: attempts %u, server saw %zu", r.attempts, s->requests);
  TW_CHECK(r.body.len == 2 && !memcmp(r.body.data, "ok", 2), "body");
  TW_CHECK(sl.n == 2, "429/503/200: %d sleeps", sl.n);
  TW_CHECK(sl.ms[0] == 2000, "Retry-After: 2 not honoured: slept %lld ms",
           (long long)sl.ms[0]);
  TW_CHECK(sl.ms[1] >= 0 && sl.ms[1] <= min64(1000, 100 * 2),
           "503 backoff %lld outside [0, 200]", (long long)sl.ms[1]);
  TW_CHECK(r.slept_ms == sl.ms[0] + sl.ms[1], "slept_ms %lld",
           (long long)r.slept_ms);
  TW_CHECK(p.calls == 3, "prepare called %u times", p.calls);
  for (int i = 0; i < 3; i++) {
    char want[4];
    snprintf(want, sizeof want, "%d", i + 1);
    TW_CHECK(!strcmp(s->attempt_hdr[i], want),
             "attempt %d carried X-Attempt '%s'", i + 1, s->attempt_hdr[i]);
    TW_CHECK(!strcmp(s->fixed_hdr[i], "same"), "fixed header lost");
    TW_CHECK(!strcmp(s->method[i], "POST") && s->body[i].len == 19 &&
                 !memcmp(s->body[i].data, "Action=RunInstances", 19),
             "attempt %d: method %s body %zu bytes", i + 1, s->method[i],
             s->body[i].len);
  }
  TW_CHECK(r.content_type && !strcmp(r.content_type, "text/plain"),
           "content type");
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void retry_after_http_date(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  /* The fake clock stands at 2015-08-30T12:36:00Z. */
  static const struct step script[] = {
      {503, "Sun, 30 Aug 2015 12:36:07 GMT", 0, NULL, NULL},
      {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 1, 100, 1000);
  struct tw_http_request req = {.method = "GET", .url = url_of(s->port, "/")};
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.status == 200 && r.attempts == 2,
           "http-date: rc %s status %ld", tw_rc_str(rc), r.status);
  TW_CHECK(sl.n == 1 && sl.ms[0] == 7000, "HTTP-date Retry-After: slept %lld",
           (long long)sl.ms[0]);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void retry_after_beyond_limit_returns_at_once(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{429, "3600", 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 1, 100, 1000);
  struct tw_http_request req = {.method = "GET", .url = url_of(s->port, "/")};
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.status == 429 && r.attempts == 1 && sl.n == 0,
           "long Retry-After: rc %s status %ld attempts %u sleeps %d",
           tw_rc_str(rc), r.status, r.attempts, sl.n);
  TW_CHECK(r.retry_after && !strcmp(r.retry_after, "3600"), "retry_after");
  TW_CHECK(tw_http_status_rc(r.status) == TW_E_RETRYABLE, "429 class");
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void no_retry_on_400(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{400, NULL, 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 1, 100, 1000);
  struct tw_http_request req = {.method = "GET", .url = url_of(s->port, "/")};
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.status == 400, "400: rc %s status %ld",
           tw_rc_str(rc), r.status);
  TW_CHECK(r.attempts == 1 && s->requests == 1 && sl.n == 0,
           "400 retried: attempts %u server %zu sleeps %d", r.attempts,
           s->requests, sl.n);
  TW_CHECK(tw_http_status_rc(r.status) == TW_E_INVALID, "400 class");
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void exhausted_5xx_returns_last_answer(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{500, NULL, 0, NULL, NULL},
                                       {502, NULL, 0, NULL, NULL},
                                       {500, NULL, 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 4);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 7, 100, 1000);
  struct tw_http_request req = {
      .method = "GET", .url = url_of(s->port, "/"), .max_attempts = 3};
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.status == 500 && r.attempts == 3 &&
               s->requests == 3 && sl.n == 2,
           "exhausted: rc %s status %ld attempts %u server %zu sleeps %d",
           tw_rc_str(rc), r.status, r.attempts, s->requests, sl.n);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static bool never_retry(void *ctx, long status, const struct tw_buf *body) {
  int *calls = ctx;
  (*calls)++;
  return !(status == 500 && body->len == 2);
}

static void should_retry_hook_stops_retries(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{500, NULL, 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 7, 100, 1000);
  int calls = 0;
  struct tw_http_request req = {.method = "GET",
                                .url = url_of(s->port, "/"),
                                .should_retry = never_retry,
                                .retry_ctx = &calls};
  struct tw_http_response r;
  tw_http_response_init(&r);
  enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.status == 500 && r.attempts == 1 && calls == 1,
           "should_retry: status %ld attempts %u calls %d", r.status,
           r.attempts, calls);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void jitter_bounded_by_cap_and_seeded(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {
      {503, NULL, 0, NULL, NULL}, {503, NULL, 0, NULL, NULL},
      {503, NULL, 0, NULL, NULL}, {503, NULL, 0, NULL, NULL},
      {503, NULL, 0, NULL, NULL}, {503, NULL, 0, NULL, NULL},
      {503, NULL, 0, NULL, NULL}, {503, NULL, 0, NULL, NULL}};
  int64_t runs[2][8];
  for (int run = 0; run < 2; run++) {
    server_script(s, script, 8);
    struct sleeps sl = {0};
    struct tw_http *h = client(&sl, clk, 1234, 100, 300);
    struct tw_http_request req = {
        .method = "GET", .url = url_of(s->port, "/"), .max_attempts = 8};
    struct tw_http_response r;
    tw_http_response_init(&r);
    enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
    TW_CHECK(rc == TW_OK && r.status == 503 && r.attempts == 8 && sl.n == 7,
             "jitter: status %ld attempts %u sleeps %d", r.status, r.attempts,
             sl.n);
    for (int i = 0; i < 7; i++) {
      int64_t ceil_ms = min64(300, 100LL << i);
      TW_CHECK(sl.ms[i] >= 0 && sl.ms[i] <= ceil_ms,
               "sleep %d = %lld outside [0, %lld]", i, (long long)sl.ms[i],
               (long long)ceil_ms);
      runs[run][i] = sl.ms[i];
    }
    tw_http_response_release(&r);
    tw_http_free(h);
  }
  TW_CHECK(!memcmp(runs[0], runs[1], 7 * sizeof runs[0][0]),
           "same seed gave different jitter");

  /* Many draws: full jitter spreads over the whole range, never beyond. */
  struct sleeps unused = {0};
  struct tw_http *h = client(&unused, clk, 99, 100, 300);
  int64_t lo = INT64_MAX, hi = -1;
  for (int i = 0; i < 2000; i++) {
    int64_t d = tw_http_backoff_ms(h, 1 + (unsigned)(i % 10));
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  TW_CHECK(lo >= 0 && lo < 30 && hi <= 300 && hi > 270,
           "backoff draws span [%lld, %lld], expected about [0, 300]",
           (long long)lo, (long long)hi);
  tw_http_free(h);
}

static void timeout_is_retryable(void **state) {
  struct fixture *f = *state;
  struct tw_clock *clk = &f->clk;
  /* A listener that never accepts: the kernel completes the handshake,
   * nobody answers, and curl's timeout fires. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl_len = sizeof sa;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &sl_len) != 0) {
    TW_CHECK(0, "black-hole listener");
    close(fd);
    return;
  }
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct tw_http_request req = {.method = "GET",
                                .url = url_of(ntohs(sa.sin_port), "/slow"),
                                .timeout_ms = 100,
                                .max_attempts = 2};
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_http_do(h, &req, &r, &err);
  TW_CHECK(rc == TW_E_RETRYABLE && err.rc == TW_E_RETRYABLE, "timeout: rc %s",
           tw_rc_str(rc));
  TW_CHECK(r.attempts == 2 && sl.n == 1, "timeout: attempts %u sleeps %d",
           r.attempts, sl.n);
  TW_CHECK(r.unanswered == 2, "timeout: %u tries counted unanswered",
           r.unanswered);
  TW_CHECK(strstr(err.msg, "imed out") && strstr(err.msg, "/slow"),
           "timeout message lacks curl's text or the URL: %s", err.msg);
  tw_http_response_release(&r);
  tw_http_free(h);
  close(fd);
}

static void refused_is_retryable(void **state) {
  struct fixture *f = *state;
  struct tw_clock *clk = &f->clk;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl_len = sizeof sa;
  bind(fd, (struct sockaddr *)&sa, sizeof sa);
  getsockname(fd, (struct sockaddr *)&sa, &sl_len);
  close(fd); /* nobody listens there now */
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct tw_http_request req = {
      .method = "GET", .url = url_of(ntohs(sa.sin_port), "/?sig=secret")};
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_http_do(h, &req, &r, &err);
  TW_CHECK(rc == TW_E_RETRYABLE && r.attempts == 5 && sl.n == 4,
           "refused: rc %s attempts %u sleeps %d", tw_rc_str(rc), r.attempts,
           sl.n);
  TW_CHECK(r.unanswered == 0, "refused: %u tries counted unanswered (none "
           "reached a server)", r.unanswered);
  TW_CHECK(!strstr(err.msg, "secret"), "query leaked into message: %s",
           err.msg);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void body_limit_is_toobig(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{200, NULL, 10000, NULL, NULL},
                                       {200, NULL, 10000, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct tw_http_request req = {
      .method = "GET", .url = url_of(s->port, "/big"), .max_body_bytes = 1000};
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_http_do(h, &req, &r, &err);
  TW_CHECK(rc == TW_E_TOOBIG && r.attempts == 1 && sl.n == 0,
           "too big: rc %s attempts %u", tw_rc_str(rc), r.attempts);
  TW_CHECK(r.body.len == 0, "too big: partial body kept");
  /* At the limit exactly it passes. */
  req.max_body_bytes = 10000;
  rc = tw_http_do(h, &req, &r, NULL);
  TW_CHECK(rc == TW_OK && r.body.len == 10000, "at limit: rc %s len %zu",
           tw_rc_str(rc), r.body.len);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void connection_reused(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  server_script(s, NULL, 0);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  for (int i = 0; i < 5; i++) {
    struct tw_http_request req = {.method = i % 2 ? "POST" : "GET",
                                  .url = url_of(s->port, "/"),
                                  .body = i % 2 ? "a=b" : NULL,
                                  .body_len = i % 2 ? 3 : 0};
    struct tw_http_response r;
    tw_http_response_init(&r);
    enum tw_rc rc = tw_http_do(h, &req, &r, NULL);
    TW_CHECK(rc == TW_OK && r.status == 200, "reuse #%d: rc %s", i,
             tw_rc_str(rc));
    tw_http_response_release(&r);
  }
  pthread_mutex_lock(&s->mu);
  TW_CHECK(s->requests == 5 && s->connections == 1,
           "reuse: %zu requests over %zu connections", s->requests,
           s->connections);
  pthread_mutex_unlock(&s->mu);
  tw_http_free(h);
}

static void async_headers_captured(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {
      {202, NULL, 0, "Azure-AsyncOperation", "http://x/op/1?api=1"},
      {201, NULL, 0, "Location", "http://x/loc/2"},
      {202, NULL, 0, "Operation-Location", "http://x/op/3"}};
  server_script(s, script, 3);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct tw_http_request req = {.method = "PUT",
                                .url = url_of(s->port, "/vm"),
                                .body = "{}",
                                .body_len = 2};
  struct tw_http_response r;
  tw_http_response_init(&r);
  tw_http_do(h, &req, &r, NULL);
  TW_CHECK(r.status == 202 && r.azure_async_operation &&
               !strcmp(r.azure_async_operation, "http://x/op/1?api=1") &&
               !r.location,
           "Azure-AsyncOperation");
  TW_CHECK(!strcmp(s->method[0], "PUT") && s->body[0].len == 2,
           "PUT body not sent: %s %zu", s->method[0], s->body[0].len);
  tw_http_do(h, &req, &r, NULL);
  TW_CHECK(r.status == 201 && r.location &&
               !strcmp(r.location, "http://x/loc/2"),
           "Location");
  req.method = "DELETE";
  req.body = NULL;
  req.body_len = 0;
  tw_http_do(h, &req, &r, NULL);
  TW_CHECK(r.status == 202 && r.operation_location &&
               !strcmp(tw_http_response_header(&r, "operation-location"),
                       "http://x/op/3"),
           "Operation-Location");
  TW_CHECK(!strcmp(s->method[2], "DELETE"), "DELETE sent as %s", s->method[2]);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void prepare_failure_sends_nothing(void **state) {
  struct fixture *f = *state;
  struct server *s = &f->s;
  struct tw_clock *clk = &f->clk;
  static const struct step script[] = {{503, NULL, 0, NULL, NULL},
                                       {200, NULL, 0, NULL, NULL}};
  server_script(s, script, 2);
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct prep p = {.fail_on = 2};
  struct tw_http_request req = {.method = "GET",
                                .url = url_of(s->port, "/"),
                                .prepare = prepare,
                                .prepare_ctx = &p};
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_http_do(h, &req, &r, &err);
  TW_CHECK(rc == TW_E_AUTH && !strcmp(err.msg, "credentials expired") &&
               s->requests == 1 && p.calls == 2,
           "prepare failure: rc %s msg '%s' server %zu", tw_rc_str(rc), err.msg,
           s->requests);
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void bad_input_is_invalid(void **state) {
  struct fixture *f = *state;
  struct tw_clock *clk = &f->clk;
  struct sleeps sl = {0};
  struct tw_http *h = client(&sl, clk, 5, 10, 20);
  struct tw_http_response r;
  tw_http_response_init(&r);
  struct tw_http_request req = {.method = "GET", .url = "ftp://127.0.0.1/"};
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(tw_http_do(h, &req, &r, &err) == TW_E_INVALID && r.attempts == 1,
           "ftp URL: %s", err.msg);
  req.url = NULL;
  TW_CHECK(tw_http_do(h, &req, &r, NULL) == TW_E_INVALID, "NULL url");
  tw_http_response_release(&r);
  tw_http_free(h);
}

static void status_classes(void **state) {
  static const struct {
    long status;
    enum tw_rc rc;
  } t[] = {{200, TW_OK},
           {204, TW_OK},
           {302, TW_OK},
           {400, TW_E_INVALID},
           {401, TW_E_AUTH},
           {403, TW_E_AUTH},
           {404, TW_E_NOTFOUND},
           {409, TW_E_CONFLICT},
           {412, TW_E_CONFLICT},
           {413, TW_E_TOOBIG},
           {415, TW_E_UNSUPPORTED_MEDIA},
           {422, TW_E_INVALID},
           {429, TW_E_RETRYABLE},
           {500, TW_E_RETRYABLE},
           {503, TW_E_RETRYABLE},
           {0, TW_E_INTERNAL}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    TW_CHECK(tw_http_status_rc(t[i].status) == t[i].rc, "status %ld -> %s",
             t[i].status, tw_rc_str(tw_http_status_rc(t[i].status)));
  TW_CHECK(tw_http_parse_retry_after(" 5 ", 0) == 5000, "Retry-After: 5");
  TW_CHECK(tw_http_parse_retry_after("soon", 0) == -1, "Retry-After: soon");
  TW_CHECK(tw_http_parse_retry_after("Sun, 30 Aug 2015 12:35:00 GMT",
                                     1440938160000) == 0,
           "Retry-After in the past");
}

static int start(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  tw_clock_fake_init(&f->clk, 1440938160000); /* 2015-08-30T12:36:00Z */
  server_start(&f->s);
  *state = f;
  return 0;
}

static int stop(void **state) {
  struct fixture *f = *state;
  server_stop(&f->s);
  free(f);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(retry_after_then_503_then_200),
      cmocka_unit_test(retry_after_http_date),
      cmocka_unit_test(retry_after_beyond_limit_returns_at_once),
      cmocka_unit_test(no_retry_on_400),
      cmocka_unit_test(exhausted_5xx_returns_last_answer),
      cmocka_unit_test(should_retry_hook_stops_retries),
      cmocka_unit_test(jitter_bounded_by_cap_and_seeded),
      cmocka_unit_test(body_limit_is_toobig),
      cmocka_unit_test(connection_reused),
      cmocka_unit_test(async_headers_captured),
      cmocka_unit_test(prepare_failure_sends_nothing),
      cmocka_unit_test(timeout_is_retryable),
      cmocka_unit_test(refused_is_retryable),
      cmocka_unit_test(bad_input_is_invalid),
      cmocka_unit_test(status_classes),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
