/* test_daemon_signals.c - what tradewindd does on signals and bad configs.
 *
 *   bad_config_at_start: exit 1, the key path and reason on stderr.
 *   sighup_applies_reloadable_keys: api.max_body_bytes lowered -> a body
 *     accepted before now gets 413 problem+json; log.level debug -> debug
 *     lines appear; db and listen changed -> reported as needing a restart,
 *     the daemon keeps its file and its port.
 *   sighup_refuses_invalid_config: out-of-range value and broken YAML are
 *     refused with the reason logged; the old settings stay in force.
 *   sigterm_finishes_in_flight_requests: requests whose bodies are still
 *     arriving when SIGTERM lands get complete 201s; under concurrent load
 *     every request gets either a complete answer or none, and a request
 *     without an answer stored nothing; exit code 0.
 *
 * Requests go through a raw HTTP/1.1 client, so nothing is retried behind
 * the test's back (libcurl resends a request on a reused connection that
 * died, which would hide a lost answer). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

/* The daemon of the running case; the teardown of its group kills it and
 * removes its directory, or keeps it (and prints the log's tail) when a
 * check failed. */
static struct twtest_daemon d;
static int failures_before;

#define LOG_WAIT_MS 10000

/* ---- a raw HTTP/1.1 client --------------------------------------------------
 */

static int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {.tv_sec = 30};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

enum raw_outcome { RAW_COMPLETE, RAW_NOTHING, RAW_PARTIAL };

struct raw_resp {
  int status;
  char head[4096];
  char body[16384];
  size_t body_len;
  size_t got; /* bytes received in all */
};

/* The header named name (with its colon) in a response head, or NULL. */
static const char *header(const char *head, const char *name) {
  size_t n = strlen(name);
  for (const char *line = strstr(head, "\r\n"); line;
       line = strstr(line + 2, "\r\n"))
    if (!strncasecmp(line + 2, name, n))
      return line + 2 + n;
  return NULL;
}

static size_t head_end(const char *buf, size_t len) {
  for (size_t i = 0; i + 4 <= len; i++)
    if (!memcmp(buf + i, "\r\n\r\n", 4))
      return i + 4;
  return 0;
}

/* Reads one response.  RAW_NOTHING: the connection ended before its first
 * byte; RAW_PARTIAL: it ended (or timed out) in the middle. */
static enum raw_outcome raw_read(int fd, struct raw_resp *r) {
  char buf[sizeof r->head + sizeof r->body];
  size_t len = 0, head_len = 0;
  long clen = -1;
  memset(r, 0, sizeof *r);
  for (;;) {
    if (head_len && len >= head_len + (size_t)clen)
      break;
    if (len == sizeof buf)
      return RAW_PARTIAL;
    ssize_t n = recv(fd, buf + len, sizeof buf - len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return len ? RAW_PARTIAL : RAW_NOTHING;
    len += (size_t)n;
    r->got = len;
    if (!head_len) {
      if (!(head_len = head_end(buf, len)))
        continue;
      if (head_len >= sizeof r->head)
        return RAW_PARTIAL;
      memcpy(r->head, buf, head_len);
      r->head[head_len] = '\0';
      if (sscanf(r->head, "HTTP/1.%*d %d", &r->status) != 1)
        return RAW_PARTIAL;
      const char *cl = header(r->head, "Content-Length:");
      if (cl)
        clen = strtol(cl, NULL, 10);
      if (clen < 0 || (size_t)clen >= sizeof r->body)
        return RAW_PARTIAL; /* the daemon always sends Content-Length */
    }
  }
  r->body_len = (size_t)clen;
  memcpy(r->body, buf + head_len, r->body_len);
  r->body[r->body_len] = '\0';
  return RAW_COMPLETE;
}

static void post_head(char *out, size_t outsz, size_t body_len) {
  snprintf(out, outsz,
           "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
           body_len);
}

/* One request on a fresh connection. */
static enum raw_outcome raw_request(int port, const char *method,
                                    const char *path, const char *body,
                                    struct raw_resp *r) {
  int fd = raw_connect(port);
  if (fd < 0) {
    memset(r, 0, sizeof *r);
    return RAW_NOTHING;
  }
  char head[512];
  if (body)
    snprintf(head, sizeof head,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
             "application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             method, path, strlen(body));
  else
    snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
             method, path);
  enum raw_outcome o = RAW_NOTHING;
  if (send_all(fd, head, strlen(head)) == 0 &&
      (!body || send_all(fd, body, strlen(body)) == 0))
    o = raw_read(fd, r);
  close(fd);
  return o;
}

/* A job spec of about `size` bytes (the run script pads it). */
static char *job_body(const char *name, size_t size) {
  char *b = malloc(size + 128);
  if (!b)
    abort();
  int n = snprintf(b, size + 128, "{\"name\":\"%s\",\"run\":\"echo ", name);
  size_t len = (size_t)n;
  while (len + 2 < size)
    b[len++] = 'x';
  memcpy(b + len, "\"}", 3);
  return b;
}

static const char *json_str(const char *text, const char *key, char *out,
                            size_t outsz) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  const char *v = json_string_value(json_object_get(j, key));
  snprintf(out, outsz, "%s", v ? v : "");
  json_decref(j);
  return out;
}

static long json_int(const char *text, const char *key) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  json_t *v = json_object_get(j, key);
  long r = json_is_integer(v) ? (long)json_integer_value(v) : -1;
  json_decref(j);
  return r;
}

/* ---- bad_config_at_start
 * ----------------------------------------------------- */

static int bad_config_dir(void **state) {
  (void)state;
  failures_before = tw_failures();
  if (twtest_daemon_init(&d, "store:\n  max_batch: 0\n") != 0) {
    fprintf(stderr, "cannot prepare a daemon directory\n");
    return -1;
  }
  return 0;
}

static void bad_config_at_start(void **state) {
  (void)state;
  int started = twtest_daemon_start(&d);
  TW_CHECK(started != 0, "tradewindd served with store.max_batch: 0");
  int code = twtest_daemon_wait(&d, 10000);
  TW_CHECK(code == 1, "bad config: exit code %d, expected 1", code);
  const char *want = "store.max_batch: must be between 1 and 10000, got 0";
  TW_CHECK(twtest_daemon_log_count(&d, want) == 1, "stderr does not say \"%s\"",
           want);
  /* and nothing was opened: the bad file stopped the start before the db */
  TW_CHECK(access(d.db, F_OK) != 0,
           "the db was created despite the bad config");
}

/* ---- reloads
 * ------------------------------------------------------------------ */

static void write_cfg(struct twtest_daemon *dm, const char *listen,
                      const char *db, const char *level, long max_body) {
  char text[2048];
  snprintf(text, sizeof text,
           "listen: %s\n"
           "db: %s\n"
           "log:\n  level: %s\n"
           "api:\n  max_body_bytes: %ld\n",
           listen, db, level, max_body);
  if (twtest_daemon_write_config(dm, text) != 0)
    TW_FAIL("cannot write the config");
}

static int post_status(struct twtest_daemon *dm, const char *body,
                       struct raw_resp *r) {
  enum raw_outcome o = raw_request(dm->port, "POST", "/v1/jobs", body, r);
  return o == RAW_COMPLETE ? r->status : -1;
}

/* The reload cases share one daemon, started with addresses from the
 * file (so that changing them there is a change the reload has to refuse)
 * and holding a job stored before any reload. */
static int reload_port;
static char *big, *mid, first_id[64];

static int reload_daemon(void **state) {
  (void)state;
  failures_before = tw_failures();
  if (twtest_daemon_init(&d, "") != 0) {
    fprintf(stderr, "cannot prepare a daemon directory\n");
    return -1;
  }
  d.override_addr = false;
  write_cfg(&d, "127.0.0.1:0", d.db, "info", 65536);
  if (twtest_daemon_start(&d) != 0) {
    fprintf(stderr, "tradewindd did not start (exit %d)\n",
            twtest_daemon_wait(&d, 5000));
    failures_before = -1; /* keep the directory */
    return -1;
  }
  reload_port = d.port;
  big = job_body("reload-big", 3000);
  mid = job_body("reload-mid", 1500);
  return 0;
}

static void sighup_applies_reloadable_keys(void **state) {
  (void)state;
  int port = reload_port;
  struct raw_resp r;
  TW_CHECK(post_status(&d, big, &r) == 201, "3000-byte job before reload: %d",
           r.status);
  json_str(r.body, "id", first_id, sizeof first_id);
  TW_CHECK(twtest_daemon_log_count(&d, " debug ") == 0,
           "debug lines at level info");

  char other_db[400];
  snprintf(other_db, sizeof other_db, "%s/other.db", d.dir);
  write_cfg(&d, "127.0.0.1:1", other_db, "debug", 2048);
  twtest_daemon_signal(&d, SIGHUP);
  TW_CHECK(twtest_daemon_wait_log(&d, "configuration reloaded", 1, LOG_WAIT_MS),
           "no \"configuration reloaded\" after SIGHUP");
  TW_CHECK(twtest_daemon_log_count(
               &d, "db: changed in the file; takes effect after a restart") ==
               1,
           "the db change is not reported as needing a restart");
  TW_CHECK(
      twtest_daemon_log_count(
          &d, "listen: changed in the file; takes effect after a restart") == 1,
      "the listen change is not reported as needing a restart");
  TW_CHECK(post_status(&d, big, &r) == 413,
           "3000-byte job after max_body_bytes 2048: %d", r.status);
  TW_CHECK(strstr(r.head, "Content-Type: application/problem+json") != NULL,
           "413 without problem+json: %s", r.head);
  TW_CHECK(json_int(r.body, "status") == 413, "413 body: %s", r.body);
  char type[128];
  TW_CHECK(!strcmp(json_str(r.body, "type", type, sizeof type),
                   "/problems/too-large"),
           "413 type: %s", r.body);
  TW_CHECK(post_status(&d, mid, &r) == 201, "1500-byte job after reload: %d",
           r.status);
  TW_CHECK(d.port == port, "port changed");
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%s", first_id);
  TW_CHECK(raw_request(port, "GET", path, NULL, &r) == RAW_COMPLETE &&
               r.status == 200,
           "the job stored before the reload: %d (db switched?)", r.status);
  TW_CHECK(access(other_db, F_OK) != 0,
           "the new db file was opened without a restart");
  TW_CHECK(twtest_daemon_wait_log(&d, " debug api: ", 1, LOG_WAIT_MS),
           "no debug lines after log.level: debug");
}

/* Out of range, then broken YAML; the file also asks for level info,
 * which must not be applied either. */
static void sighup_refuses_invalid_config(void **state) {
  (void)state;
  int port = reload_port;
  struct raw_resp r;
  write_cfg(&d, "127.0.0.1:0", d.db, "info", 100);
  twtest_daemon_signal(&d, SIGHUP);
  TW_CHECK(twtest_daemon_wait_log(&d, "reload refused", 1, LOG_WAIT_MS),
           "an out-of-range api.max_body_bytes was not refused");
  TW_CHECK(twtest_daemon_log_count(&d, "api.max_body_bytes: must be between") ==
               1,
           "the refusal does not name api.max_body_bytes");
  if (twtest_daemon_write_config(
          &d, "api: [max_body_bytes: 4096\nlog: {level: info\n") != 0)
    TW_FAIL("cannot write the config");
  twtest_daemon_signal(&d, SIGHUP);
  TW_CHECK(twtest_daemon_wait_log(&d, "reload refused", 2, LOG_WAIT_MS),
           "broken YAML was not refused");
  TW_CHECK(twtest_daemon_log_count(&d, "configuration reloaded") == 1,
           "a refused config was reported as reloaded");
  size_t debug_lines = twtest_daemon_log_count(&d, " debug api: ");
  TW_CHECK(post_status(&d, big, &r) == 413,
           "3000 bytes after refused reloads: %d", r.status);
  TW_CHECK(post_status(&d, mid, &r) == 201,
           "1500 bytes after refused reloads: %d (the refused 100 applied?)",
           r.status);
  TW_CHECK(
      twtest_daemon_wait_log(&d, " debug api: ", debug_lines + 2, LOG_WAIT_MS),
      "debug lines stopped: the refused level was applied");
  TW_CHECK(raw_request(port, "GET", "/healthz", NULL, &r) == RAW_COMPLETE &&
               r.status == 200,
           "healthz after refused reloads: %d", r.status);
}

static void reloaded_daemon_exits_0_on_sigterm(void **state) {
  (void)state;
  int code = twtest_daemon_stop(&d, 20000);
  TW_CHECK(code == 0, "exit code %d after SIGTERM", code);
}

static int reload_cleanup(void **state) {
  (void)state;
  free(big);
  free(mid);
  big = mid = NULL;
  twtest_daemon_cleanup(&d, tw_failures() != failures_before);
  return 0;
}

/* ---- SIGTERM with requests in flight
 * ------------------------------------------ */

#define SLOW 4 /* requests whose bodies arrive after SIGTERM */
#define LOADERS 8

enum fate { F_ACKED, F_UNANSWERED, F_REFUSED };

struct sent {
  char name[64];
  enum fate fate;
};

struct load {
  int port;
  atomic_int stop;
  pthread_mutex_t mu;
  pthread_cond_t progress;
  struct sent *sent;
  size_t n, cap;
  long acked;
  int running;  /* loaders still going */
  long partial; /* answers cut in the middle: always a failure */
  char first_bad[256];
  long bad_status;
};

static void record(struct load *l, const char *name, enum fate f) {
  pthread_mutex_lock(&l->mu);
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 1024;
    if (!(l->sent = realloc(l->sent, l->cap * sizeof *l->sent)))
      abort();
  }
  snprintf(l->sent[l->n].name, sizeof l->sent[l->n].name, "%s", name);
  l->sent[l->n++].fate = f;
  if (f == F_ACKED)
    l->acked++;
  pthread_cond_broadcast(&l->progress);
  pthread_mutex_unlock(&l->mu);
}

struct loader {
  struct load *l;
  int index;
};

static void *loader_main(void *arg) {
  struct loader *me = arg;
  struct load *l = me->l;
  int fd = -1;
  for (int i = 0;; i++) {
    if (fd < 0 && (fd = raw_connect(l->port)) < 0)
      break; /* the listener is gone */
    char name[64], body[128], head[256];
    snprintf(name, sizeof name, "term-l%d-%05d", me->index, i);
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    post_head(head, sizeof head, strlen(body));
    struct raw_resp r;
    enum raw_outcome o = RAW_NOTHING;
    if (send_all(fd, head, strlen(head)) == 0 &&
        send_all(fd, body, strlen(body)) == 0)
      o = raw_read(fd, &r);
    if (o == RAW_COMPLETE && r.status == 201) {
      record(l, name, F_ACKED);
    } else if (o == RAW_COMPLETE && r.status == 503) {
      record(l, name, F_REFUSED); /* a complete "draining" answer */
    } else if (o == RAW_COMPLETE) {
      pthread_mutex_lock(&l->mu);
      if (!l->bad_status++)
        snprintf(l->first_bad, sizeof l->first_bad, "%s: status %d: %.150s",
                 name, r.status, r.body);
      pthread_mutex_unlock(&l->mu);
      record(l, name, F_REFUSED);
    } else {
      if (o == RAW_PARTIAL) {
        pthread_mutex_lock(&l->mu);
        if (!l->partial++)
          snprintf(l->first_bad, sizeof l->first_bad,
                   "%s: answer cut after %zu bytes", name, r.got);
        pthread_mutex_unlock(&l->mu);
      }
      record(l, name, F_UNANSWERED);
      close(fd);
      fd = -1;
      if (atomic_load(&l->stop))
        break;
    }
    if (o == RAW_COMPLETE && header(r.head, "Connection: close")) {
      close(fd);
      fd = -1;
    }
  }
  if (fd >= 0)
    close(fd);
  pthread_mutex_lock(&l->mu);
  l->running--;
  pthread_cond_broadcast(&l->progress);
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* How many jobs named name the file holds. */
static int rows_named(sqlite3 *db, sqlite3_stmt *st, const char *name) {
  sqlite3_reset(st);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int n = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  else
    TW_FAIL("count jobs: %s", sqlite3_errmsg(db));
  return n;
}

static int sigterm_daemon(void **state) {
  (void)state;
  failures_before = tw_failures();
  if (twtest_daemon_init(&d, "") != 0) {
    fprintf(stderr, "cannot prepare a daemon directory\n");
    return -1;
  }
  if (twtest_daemon_start(&d) != 0) {
    fprintf(stderr, "tradewindd did not start (exit %d)\n",
            twtest_daemon_wait(&d, 5000));
    failures_before = -1; /* keep the directory */
    return -1;
  }
  return 0;
}

static void sigterm_finishes_in_flight_requests(void **state) {
  (void)state;

  /* Requests in flight for sure: headers and half of the body sent. */
  int slow_fd[SLOW];
  char *slow_body[SLOW];
  char slow_name[SLOW][32];
  for (int i = 0; i < SLOW; i++) {
    snprintf(slow_name[i], sizeof slow_name[i], "term-slow-%d", i);
    slow_body[i] = job_body(slow_name[i], 600);
    char head[256];
    size_t len = strlen(slow_body[i]);
    post_head(head, sizeof head, len);
    slow_fd[i] = raw_connect(d.port);
    TW_CHECK(slow_fd[i] >= 0 && send_all(slow_fd[i], head, strlen(head)) == 0 &&
                 send_all(slow_fd[i], slow_body[i], len / 2) == 0,
             "slow request %d: cannot send its first half", i);
  }

  struct load l = {.port = d.port, .running = LOADERS};
  pthread_mutex_init(&l.mu, NULL);
  pthread_cond_init(&l.progress, NULL);
  pthread_t th[LOADERS];
  struct loader ld[LOADERS];
  for (int i = 0; i < LOADERS; i++) {
    ld[i] = (struct loader){.l = &l, .index = i};
    pthread_create(&th[i], NULL, loader_main, &ld[i]);
  }
  /* Wait until the load runs (and so the slow requests have long been
   * accepted: their headers went first). */
  pthread_mutex_lock(&l.mu);
  while (l.acked < 200 && l.n < 400 && l.running > 0)
    pthread_cond_wait(&l.progress, &l.mu);
  pthread_mutex_unlock(&l.mu);

  atomic_store(&l.stop, 1);
  twtest_daemon_signal(&d, SIGTERM);
  /* No check may fail while the loaders run (they use l, on this stack):
   * what is seen until they are joined is kept and checked after. */
  bool draining = twtest_daemon_wait_log(&d, "draining", 1, LOG_WAIT_MS);
  /* Now the rest of each slow body: the daemon is draining, the requests
   * are in flight and must be answered in full. */
  enum raw_outcome slow_o[SLOW];
  int slow_status[SLOW];
  for (int i = 0; i < SLOW; i++) {
    size_t len = strlen(slow_body[i]);
    struct raw_resp r;
    enum raw_outcome o = RAW_NOTHING;
    r.status = 0;
    if (slow_fd[i] >= 0 &&
        send_all(slow_fd[i], slow_body[i] + len / 2, len - len / 2) == 0)
      o = raw_read(slow_fd[i], &r);
    slow_o[i] = o;
    slow_status[i] = r.status;
    if (slow_fd[i] >= 0)
      close(slow_fd[i]);
  }
  for (int i = 0; i < LOADERS; i++)
    pthread_join(th[i], NULL);
  TW_CHECK(draining, "no \"draining\" line after SIGTERM");
  for (int i = 0; i < SLOW; i++)
    TW_CHECK(slow_o[i] == RAW_COMPLETE && slow_status[i] == 201,
             "in-flight request %d after SIGTERM: %s, status %d", i,
             slow_o[i] == RAW_COMPLETE  ? "complete"
             : slow_o[i] == RAW_PARTIAL ? "cut"
                                        : "no answer",
             slow_status[i]);
  int code = twtest_daemon_wait(&d, 20000);
  TW_CHECK(code == 0, "exit code %d after SIGTERM, expected 0", code);
  if (code < 0)
    twtest_daemon_kill(&d);
  TW_CHECK(l.partial == 0, "%ld answers cut in the middle; first: %s",
           l.partial, l.first_bad);
  TW_CHECK(l.bad_status == 0, "%ld unexpected statuses; first: %s",
           l.bad_status, l.first_bad);

  /* What the file says: every 201 stored once, every request left without
   * an answer stored nothing (else its answer was lost). */
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_open_v2(d.db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs WHERE name = ?1", -1,
                         &st, NULL) != SQLITE_OK) {
    TW_FAIL("open %s: %s", d.db, db ? sqlite3_errmsg(db) : "?");
  } else {
    long lost = 0, unanswered = 0;
    for (size_t i = 0; i < l.n; i++) {
      int rows = rows_named(db, st, l.sent[i].name);
      if (l.sent[i].fate == F_ACKED) {
        TW_CHECK(rows == 1, "%s: acknowledged, %d rows", l.sent[i].name, rows);
      } else {
        unanswered += l.sent[i].fate == F_UNANSWERED;
        /* the first few are named, then one check counts them all */
        if (rows != 0 && lost++ < 5)
          fprintf(stderr, "%s: stored (%d rows) but its answer never came\n",
                  l.sent[i].name, rows);
      }
    }
    for (int i = 0; i < SLOW; i++)
      TW_CHECK(rows_named(db, st, slow_name[i]) == 1, "%s not stored once",
               slow_name[i]);
    printf("  load: %zu requests, %ld acknowledged, %ld without an answer, %ld "
           "lost\n",
           l.n, l.acked, unanswered, lost);
    TW_CHECK(lost == 0, "%ld requests were stored but got no answer", lost);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);

  for (int i = 0; i < SLOW; i++)
    free(slow_body[i]);
  free(l.sent);
  pthread_cond_destroy(&l.progress);
  pthread_mutex_destroy(&l.mu);
}

static int sigterm_cleanup(void **state) {
  (void)state;
  if (tw_failures() != failures_before && d.dir[0]) {
    char *log = twtest_daemon_log_read(&d);
    size_t len = strlen(log);
    fprintf(stderr, "--- tradewindd log (tail) ---\n%s\n",
            log + (len > 2000 ? len - 2000 : 0));
    free(log);
  }
  twtest_daemon_cleanup(&d, tw_failures() != failures_before);
  return 0;
}

static int bad_config_cleanup(void **state) {
  (void)state;
  twtest_daemon_cleanup(&d, tw_failures() != failures_before);
  return 0;
}

/* Each case is a group of its own: the argument names it. */
static const struct CMUnitTest BAD_CONFIG[] = {
    cmocka_unit_test(bad_config_at_start),
};
static const struct CMUnitTest RELOADS[] = {
    cmocka_unit_test(sighup_applies_reloadable_keys),
    cmocka_unit_test(sighup_refuses_invalid_config),
    cmocka_unit_test(reloaded_daemon_exits_0_on_sigterm),
};
static const struct CMUnitTest SIGTERM_[] = {
    cmocka_unit_test(sigterm_finishes_in_flight_requests),
};

static const struct {
  const char *name;
  const struct CMUnitTest *tests;
  size_t n;
  CMFixtureFunction setup, teardown;
} CASES[] = {
    {"bad_config_at_start", BAD_CONFIG, 1, bad_config_dir, bad_config_cleanup},
    {"reloads", RELOADS, 3, reload_daemon, reload_cleanup},
    {"sigterm", SIGTERM_, 1, sigterm_daemon, sigterm_cleanup},
};

/* With no argument every case runs; else only the named ones. */
int main(int argc, char **argv) {
  size_t n = sizeof CASES / sizeof CASES[0];
  for (int a = 1; a < argc; a++) {
    bool known = false;
    for (size_t i = 0; i < n; i++)
      known |= !strcmp(argv[a], CASES[i].name);
    if (!known) {
      fprintf(stderr, "unknown case %s\n", argv[a]);
      return 1;
    }
  }
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    bool want = argc < 2;
    for (int a = 1; a < argc; a++)
      want |= !strcmp(argv[a], CASES[i].name);
    if (want)
      rc |= _cmocka_run_group_tests(CASES[i].name, CASES[i].tests, CASES[i].n,
                                    CASES[i].setup, CASES[i].teardown);
  }
  return rc;
}
