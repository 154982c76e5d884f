/* GET /v1/events/stream over loopback: the server and store in-process, the
 * streams read from raw sockets.  Job events arrive live and in store order,
 * a stream resumes after Last-Event-ID, the tenant and job filters hold,
 * more streams than the server has threads leave the API answering,
 * api.max_streams is enforced with 503, and draining ends every stream. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/core/store.h"
#include "tests/unit/pg_store.h"

#define THREADS 2
#define MAX_STREAMS 6

static struct tw_test_pg pg; /* --backend=postgres: the same cases there */
static char dir[64], dbpath[128];
static struct tw_store *store;
static struct tw_api *api;
static int port;

struct conn {
  int fd;
  struct tw_buf in;
};

static void conn_open(struct conn *c, const char *path, const char *extra) {
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(c->fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                   "%s\r\n",
                   path, extra ? extra : "");
  assert_int_equal(write(c->fd, req, (size_t)n), n);
  tw_buf_init(&c->in);
}

static void conn_close(struct conn *c) {
  close(c->fd);
  tw_buf_release(&c->in);
}

/* Reads until `want` is in what arrived (true) or ms pass (false); with
 * want NULL, until the peer closes. */
static bool read_until(struct conn *c, const char *want, int ms) {
  int64_t end = tw_mono_us() + (int64_t)ms * 1000;
  for (;;) {
    if (want && c->in.data && strstr(c->in.data, want))
      return true;
    int64_t left = (end - tw_mono_us()) / 1000;
    if (left <= 0)
      return false;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, (int)left) <= 0)
      continue;
    char buf[4096];
    ssize_t k = read(c->fd, buf, sizeof buf);
    if (k <= 0)
      return !want; /* closed */
    tw_buf_add(&c->in, buf, (size_t)k);
  }
}

/* One plain request on its own connection: the status, the body in out. */
static int plain(const char *method, const char *path, const char *body,
                 struct tw_buf *out) {
  struct conn c;
  c.fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(c.fd, (struct sockaddr *)&a, sizeof a), 0);
  char req[2048];
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Type: application/yaml\r\nContent-Length: %zu\r\n"
                   "\r\n%s",
                   method, path, body ? strlen(body) : 0, body ? body : "");
  assert_int_equal(write(c.fd, req, (size_t)n), n);
  tw_buf_init(&c.in);
  assert_true(read_until(&c, NULL, 10000));
  int status = 0;
  if (c.in.data)
    sscanf(c.in.data, "HTTP/1.1 %d", &status);
  if (out) {
    tw_buf_init(out);
    const char *b = c.in.data ? strstr(c.in.data, "\r\n\r\n") : NULL;
    if (b)
      tw_buf_adds(out, b + 4);
  }
  conn_close(&c);
  return status;
}

/* Submits a job of tenant; its id in id. */
static void submit(const char *tenant, char id[64]) {
  char body[256];
  snprintf(body, sizeof body,
           "name: s\ntenant: %s\nresources:\n  cpus: 1\nrun: echo hi\n",
           tenant);
  struct tw_buf out;
  assert_int_equal(plain("POST", "/v1/jobs", body, &out), 201);
  const char *p = strstr(out.data, "\"id\":\"");
  assert_non_null(p);
  p += 6;
  size_t n = strcspn(p, "\"");
  assert_true(n < 64);
  memcpy(id, p, n);
  id[n] = '\0';
  tw_buf_release(&out);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/tw-sse-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(dbpath, sizeof dbpath, "%s/sse.db", dir);
  struct tw_err err = {0};
  struct tw_store_opts so = {.path = dbpath};
  if (pg.on && !pg.schema[0] && tw_test_pg_schema_new(&pg))
    return -1;
  tw_test_pg_opts(&pg, &so);
  if (tw_store_open(&so, &store, &err))
    return -1;
  struct tw_api_opts ao = {.listen = "127.0.0.1:0",
                           .store = store,
                           .threads = THREADS,
                           .max_connections = 64,
                           .max_streams = MAX_STREAMS,
                           .auth = {.open = true}};
  if (tw_api_start(&ao, &api, &err))
    return -1;
  port = tw_api_port(api);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tw_api_stop(api);
  tw_store_close(store);
  tw_test_pg_schema_drop(&pg);
  char p[160];
  const char *sfx[] = {"", "-wal", "-shm", ".lock"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s%s", dbpath, sfx[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

/* A job's events arrive on the stream as they are stored, each with its
 * seq as id; a new stream with Last-Event-ID gets only what came after. */
static void events_arrive_live_and_resume(void **state) {
  (void)state;
  struct conn s;
  conn_open(&s, "/v1/events/stream", NULL);
  assert_true(read_until(&s, "event: hello", 5000));
  assert_non_null(strstr(s.in.data, "text/event-stream"));
  char id[64];
  submit("ml", id);
  char want[160];
  snprintf(want, sizeof want, "\"job\":\"%s\",\"tenant\":\"ml\"", id);
  assert_true(read_until(&s, want, 5000));
  assert_true(read_until(&s, "\"to\":\"pending\"", 1000));
  /* the pending event's id */
  const char *ev = strstr(s.in.data, "event: job");
  assert_non_null(ev);
  const char *idl = ev;
  while (idl > s.in.data && strncmp(idl, "id: ", 4))
    idl--;
  long long first = atoll(idl + 4);
  assert_true(first > 0);
  struct tw_job_transition t = {
      .id = id, .to = TW_JOB_PLACING, .reason = "placing it"};
  struct tw_err err = {0};
  assert_int_equal(tw_store_job_transition(store, &t, NULL, &err), TW_OK);
  assert_true(read_until(&s, "\"to\":\"placing\"", 5000));
  assert_non_null(strstr(s.in.data, "\"reason\":\"placing it\""));
  conn_close(&s);

  char hdr[64];
  snprintf(hdr, sizeof hdr, "Last-Event-ID: %lld\r\n", first);
  conn_open(&s, "/v1/events/stream", hdr);
  assert_true(read_until(&s, "\"to\":\"placing\"", 5000));
  assert_null(strstr(s.in.data, "\"to\":\"pending\""));
  conn_close(&s);

  /* a resume point that is not a seq is refused, naming the field */
  snprintf(hdr, sizeof hdr, "Last-Event-ID: x1\r\nConnection: close\r\n");
  conn_open(&s, "/v1/events/stream", hdr);
  assert_true(read_until(&s, NULL, 5000));
  assert_non_null(strstr(s.in.data, "400 Bad Request"));
  assert_non_null(strstr(s.in.data, "\"field\":\"Last-Event-ID\""));
  conn_close(&s);
}

/* tenant= and job= keep other jobs' events off the stream. */
static void filters_hold(void **state) {
  (void)state;
  struct conn ml, vision, one;
  conn_open(&ml, "/v1/events/stream?tenant=ml", NULL);
  conn_open(&vision, "/v1/events/stream?tenant=vision", NULL);
  assert_true(read_until(&ml, "event: hello", 5000));
  assert_true(read_until(&vision, "event: hello", 5000));
  char a[64], b[64];
  submit("ml", a);
  char path[160];
  snprintf(path, sizeof path, "/v1/events/stream?job=%s&after=0", a);
  conn_open(&one, path, NULL);
  submit("vision", b);
  assert_true(read_until(&vision, b, 5000));
  assert_true(read_until(&ml, a, 5000));
  assert_true(read_until(&one, a, 5000));
  /* by now each stream has been filled past both jobs' events */
  assert_true(read_until(&ml, "__never__", 600) == false);
  assert_null(strstr(ml.in.data, b));
  assert_null(strstr(vision.in.data, a));
  assert_null(strstr(one.in.data, b));
  conn_close(&ml);
  conn_close(&vision);
  conn_close(&one);
}

/* More streams than the pool has threads, up to api.max_streams: the API
 * still answers at once; one more stream gets 503 with Retry-After. */
static void streams_do_not_starve_the_pool(void **state) {
  (void)state;
  /* the streams the earlier tests closed are found gone by the hub at
   * their next write (the heartbeat): wait for the count to drop */
  struct tw_buf m;
  for (int i = 0; i < 200; i++) {
    assert_int_equal(plain("GET", "/metrics", NULL, &m), 200);
    bool zero = strstr(m.data, "tradewind_event_streams 0\n") != NULL;
    tw_buf_release(&m);
    if (zero)
      break;
    usleep(100 * 1000);
  }
  struct conn s[MAX_STREAMS];
  for (int i = 0; i < MAX_STREAMS; i++) {
    conn_open(&s[i], "/v1/events/stream", NULL);
    assert_true(read_until(&s[i], "event: hello", 5000));
  }
  int64_t t0 = tw_mono_us();
  for (int i = 0; i < 5; i++)
    assert_int_equal(plain("GET", "/healthz", NULL, NULL), 200);
  /* generous for a loaded machine; a starved pool never answers */
  assert_true(tw_mono_us() - t0 < 5 * 1000000LL);
  struct tw_buf out;
  struct conn extra;
  conn_open(&extra, "/v1/events/stream", "Connection: close\r\n");
  assert_true(read_until(&extra, NULL, 5000));
  assert_non_null(strstr(extra.in.data, "503 Service Unavailable"));
  assert_non_null(strstr(extra.in.data, "Retry-After: 5"));
  assert_non_null(strstr(extra.in.data, "api.max_streams"));
  conn_close(&extra);
  /* events still reach every stream */
  char id[64];
  submit("ml", id);
  for (int i = 0; i < MAX_STREAMS; i++)
    assert_true(read_until(&s[i], id, 5000));
  assert_int_equal(plain("GET", "/metrics", NULL, &out), 200);
  char want[64];
  snprintf(want, sizeof want, "tradewind_event_streams %d\n", MAX_STREAMS);
  assert_non_null(strstr(out.data, want));
  tw_buf_release(&out);
  /* draining ends every stream: the chunked body's last chunk, then the
   * connection is free */
  tw_api_drain(api);
  for (int i = 0; i < MAX_STREAMS; i++) {
    assert_true(read_until(&s[i], "\r\n0\r\n\r\n", 5000));
    conn_close(&s[i]);
  }
}

int main(int argc, char **argv) {
  if (tw_test_pg_wanted(argc, argv)) {
    int r = tw_test_pg_init(&pg);
    if (r)
      return r;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(events_arrive_live_and_resume),
      cmocka_unit_test(filters_hold),
      cmocka_unit_test(streams_do_not_starve_the_pool),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
