/* test_crash.c - a 2xx from POST /v1/jobs means the job is durable.
 *
 * Each round starts tradewindd on the same sqlite file, runs a burst of
 * concurrent submissions (CLIENTS threads, each with its own keep-alive
 * connection, every job with a distinct name), and SIGKILLs the daemon
 * once a random number of jobs (seeded) has been acknowledged.  After the
 * restart every acknowledged job must answer GET /v1/jobs/{id} with the
 * name it was submitted with, and the file itself must hold no half-written
 * job: integrity_check ok, every spec parses, every job has exactly one
 * creation event, no event belongs to a missing job.
 *
 * Requests cut by the kill are fine (nobody was told they succeeded); a
 * non-2xx answer before the kill is not.  TW_SEED=N replays a run.
 *
 * With the argument `tokens` the daemon requires bearer tokens (the admin
 * token its first start wrote beside the db) and audits every submission,
 * and the file must also show every stored job, acknowledged or cut by the
 * kill, with exactly one audit entry of its submission and one owner row,
 * no entry or owner without its job, and an audit chain that verifies: the
 * job, its owner and its entry are one transaction. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker/tenancy/audit.h"
#include "tests/integration/twtest_daemon.h"
#include "tests/twtest.h"

#define CLIENTS 24
#define ROUNDS 3
/* Kill anyway if the target is not reached: a liveness bound, not a
 * rate (rates are bench-submit's).  Under ThreadSanitizer on a loaded
 * 2-core machine a round's 2,000 audited submissions took over 6 s. */
#define BURST_TIMEOUT_S 20

/* `tokens`: bearer tokens required, every submission audited */
static bool tokens;
static uint64_t seed;
static struct twtest_daemon d;
static char auth_hdr[192]; /* "Authorization: Bearer ..." once read */

/* Tokens required, no rate limit (24 clients share the admin's token),
 * no providers: the jobs stay pending and the only audit entries are the
 * first start's and the submissions'. */
static const char TOKENS_CONFIG[] = "log:\n  level: info\n"
                                    "auth:\n  mode: tokens\n"
                                    "  rate_limit_per_s: 0\n";

static struct curl_slist *with_auth(struct curl_slist *h) {
  return tokens ? curl_slist_append(h, auth_hdr) : h;
}

/* ---- seeded randomness (xorshift64*) --------------------------------------
 */

static uint64_t rng_state;

static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

/* ---- what the clients were told -------------------------------------------
 */

struct acked {
  char id[40];
  char name[64];
};

struct burst {
  const char *url;
  int round;
  long target;     /* accepted jobs before the kill */
  atomic_int stop; /* set just before the kill */
  pthread_mutex_t mu;
  pthread_cond_t reached;
  struct acked *acks; /* every 2xx of every round */
  size_t n_acks, cap_acks;
  long accepted;       /* this round, under mu */
  long early_failures; /* failures seen before the kill, under mu */
  char first_failure[256];
};

static void ack_add(struct burst *b, const char *id, const char *name) {
  pthread_mutex_lock(&b->mu);
  if (b->n_acks == b->cap_acks) {
    b->cap_acks = b->cap_acks ? b->cap_acks * 2 : 1024;
    b->acks = realloc(b->acks, b->cap_acks * sizeof *b->acks);
    if (!b->acks)
      abort();
  }
  struct acked *a = &b->acks[b->n_acks++];
  snprintf(a->id, sizeof a->id, "%s", id);
  snprintf(a->name, sizeof a->name, "%s", name);
  if (++b->accepted >= b->target)
    pthread_cond_signal(&b->reached);
  pthread_mutex_unlock(&b->mu);
}

static void early_failure(struct burst *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void early_failure(struct burst *b, const char *fmt, ...) {
  pthread_mutex_lock(&b->mu);
  if (!b->early_failures++) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->first_failure, sizeof b->first_failure, fmt, ap);
    va_end(ap);
  }
  pthread_cond_signal(&b->reached); /* no point waiting for the target */
  pthread_mutex_unlock(&b->mu);
}

struct sink {
  char buf[8192];
  size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  struct sink *s = arg;
  size_t add = size * n;
  size_t room = sizeof s->buf - 1 - s->len;
  memcpy(s->buf + s->len, p, add < room ? add : room);
  s->len += add < room ? add : room;
  s->buf[s->len] = '\0';
  return add;
}

struct client {
  struct burst *b;
  int index;
};

static void *client_main(void *arg) {
  struct client *c = arg;
  struct burst *b = c->b;
  CURL *h = curl_easy_init();
  if (!h)
    abort();
  char url[128];
  snprintf(url, sizeof url, "%s/v1/jobs", b->url);
  struct curl_slist *hdrs =
      with_auth(curl_slist_append(NULL, "Content-Type: application/json"));
  struct sink s;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
  for (int i = 0; !atomic_load(&b->stop); i++) {
    char name[64], body[128];
    snprintf(name, sizeof name, "crash-r%d-c%02d-%06d", b->round, c->index, i);
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"priority\":%d,\"resources\":{\"cpus\":%d}}",
             name, i % 7, 1 + i % 16);
    curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, body);
    s.len = 0;
    s.buf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    if (cc == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_OK && status >= 200 && status < 300) {
      json_error_t je;
      json_t *j = json_loads(s.buf, 0, &je);
      const char *id = json_string_value(json_object_get(j, "id"));
      const char *got = json_string_value(json_object_get(j, "name"));
      if (id && got && !strcmp(got, name))
        ack_add(b, id, name);
      else
        /* a 2xx we cannot account for is a failure even after the kill */
        early_failure(b, "%s: 2xx with an unexpected body: %.200s", name,
                      s.buf);
      json_decref(j);
      continue;
    }
    if (atomic_load(&b->stop))
      break; /* cut by the kill: never acknowledged, nothing to check */
    if (cc != CURLE_OK)
      early_failure(b, "%s: %s before the kill", name, curl_easy_strerror(cc));
    else
      early_failure(b, "%s: status %ld before the kill: %.200s", name, status,
                    s.buf);
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return NULL;
}

/* ---- checks after a restart -----------------------------------------------
 */

/* Every acknowledged job answers GET with its name (one keep-alive
 * connection for all of them). */
static void check_acked_present(const char *base, const struct acked *acks,
                                size_t n) {
  CURL *h = curl_easy_init();
  if (!h)
    abort();
  struct sink s;
  struct curl_slist *hdrs = with_auth(NULL);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    char url[256];
    snprintf(url, sizeof url, "%s/v1/jobs/%s", base, acks[i].id);
    curl_easy_setopt(h, CURLOPT_URL, url);
    s.len = 0;
    s.buf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    if (cc == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    json_error_t je;
    json_t *j = status == 200 ? json_loads(s.buf, 0, &je) : NULL;
    const char *name = json_string_value(json_object_get(j, "name"));
    /* the first few are named, then one check counts them all */
    if (status != 200 || !name || strcmp(name, acks[i].name) != 0) {
      if (missing++ < 5)
        fprintf(stderr,
                "acknowledged job %s (%s) after restart: %s status %ld name "
                "%s\n",
                acks[i].id, acks[i].name,
                cc == CURLE_OK ? "" : curl_easy_strerror(cc), status,
                name ? name : "(none)");
    }
    json_decref(j);
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  TW_CHECK(missing == 0,
           "%zu of %zu acknowledged jobs missing or wrong after restart",
           missing, n);
}

static int64_t scalar(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  else
    TW_FAIL("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return v;
}

/* Every stored job (acknowledged or cut by the kill) has exactly one
 * audit entry of its submission and one owner row; nothing of the two
 * exists without its job; the chain verifies. */
static void check_audited(sqlite3 *db, int64_t jobs) {
  int64_t not_once = scalar(
      db, "SELECT count(*) FROM (SELECT j.id, count(a.seq) AS n FROM jobs j"
          " LEFT JOIN audit_log a ON a.object = j.id"
          " AND a.action = 'POST /v1/jobs' AND a.outcome = 'ok'"
          " GROUP BY j.id) WHERE n != 1");
  int64_t unowned = scalar(db, "SELECT count(*) FROM jobs WHERE id NOT IN"
                               " (SELECT job_id FROM tenancy_jobs)");
  int64_t stray_entries =
      scalar(db, "SELECT count(*) FROM audit_log WHERE action = 'POST /v1/jobs'"
                 " AND outcome = 'ok' AND object NOT IN (SELECT id FROM jobs)");
  int64_t stray_owners = scalar(db, "SELECT count(*) FROM tenancy_jobs WHERE"
                                    " job_id NOT IN (SELECT id FROM jobs)");
  int64_t entries = scalar(db, "SELECT count(*) FROM audit_log");
  TW_CHECK(not_once == 0,
           "%" PRId64 " of %" PRId64
           " stored jobs lack exactly one audit entry",
           not_once, jobs);
  TW_CHECK(unowned == 0, "%" PRId64 " of %" PRId64 " stored jobs have no owner",
           unowned, jobs);
  TW_CHECK(stray_entries == 0,
           "%" PRId64 " submission entries name a job that is not stored",
           stray_entries);
  TW_CHECK(stray_owners == 0, "%" PRId64 " owner rows have no job",
           stray_owners);
  int64_t verified = 0;
  struct tw_err err = {0};
  enum tw_rc rc = tw_audit_verify_file(d.db, &verified, NULL, &err);
  TW_CHECK(rc == TW_OK, "audit verify --db %s: %s", d.db, err.msg);
  TW_CHECK(verified == entries,
           "the chain verified %" PRId64 " of %" PRId64 " entries", verified,
           entries);
  printf("  audit: %" PRId64 " entries verify, one per stored job and one "
         "owner each\n",
         verified);
}

/* Looks at the file itself, read-only, beside the running daemon. */
static void check_file(const char *path, size_t n_acked) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    TW_FAIL("open %s read-only: %s", path, db ? sqlite3_errmsg(db) : "?");
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) ==
      SQLITE_OK) {
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      TW_CHECK(rows == 0 && t && !strcmp(t, "ok"), "integrity_check: %s",
               t ? t : "(null)");
      rows++;
    }
    TW_CHECK(rows == 1, "integrity_check gave %d rows", rows);
  } else {
    TW_FAIL("integrity_check: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);

  /* Every job: a spec that parses to an object with its own name, and
   * exactly one creation event. */
  static const char per_job[] =
      "SELECT j.id, j.name, j.spec,"
      " (SELECT count(*) FROM job_events e WHERE e.job_id = j.id"
      "   AND e.from_state IS NULL AND e.to_state = 'pending')"
      " FROM jobs j";
  int64_t jobs = 0, bad = 0;
  if (sqlite3_prepare_v2(db, per_job, -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      jobs++;
      const char *id = (const char *)sqlite3_column_text(st, 0);
      const char *name = (const char *)sqlite3_column_text(st, 1);
      const char *spec = (const char *)sqlite3_column_text(st, 2);
      int64_t created = sqlite3_column_int64(st, 3);
      json_error_t je;
      json_t *j = spec ? json_loads(spec, 0, &je) : NULL;
      const char *sname = json_string_value(json_object_get(j, "name"));
      bool ok = json_is_object(j) && sname && name && !strcmp(sname, name) &&
                created == 1;
      if (!ok && bad++ < 5) /* named, then counted by one check */
        fprintf(stderr, "job %s: spec %s, %" PRId64 " creation events\n",
                id ? id : "?",
                !json_is_object(j) ? "does not parse"
                : sname            ? "parses"
                                   : "has no name",
                created);
      json_decref(j);
    }
  } else {
    TW_FAIL("select jobs: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  TW_CHECK(bad == 0, "%" PRId64 " of %" PRId64 " jobs are half-written", bad,
           jobs);

  int64_t event_jobs =
      scalar(db, "SELECT count(DISTINCT job_id) FROM job_events");
  int64_t orphans = scalar(db, "SELECT count(*) FROM job_events"
                               " WHERE job_id NOT IN (SELECT id FROM jobs)");
  TW_CHECK(jobs == event_jobs,
           "%" PRId64 " jobs but %" PRId64 " job ids in events", jobs,
           event_jobs);
  TW_CHECK(orphans == 0, "%" PRId64 " events belong to no job", orphans);
  TW_CHECK(jobs >= (int64_t)n_acked,
           "%" PRId64 " jobs in the file, %zu acknowledged", jobs, n_acked);
  printf("  file: %" PRId64 " jobs (%zu acknowledged, %" PRId64
         " committed but cut before the answer)\n",
         jobs, n_acked, jobs - (int64_t)n_acked);
  if (tokens)
    check_audited(db, jobs);
  sqlite3_close(db);
}

/* ---- the rounds ------------------------------------------------------------
 */

static struct burst b;
static pthread_condattr_t ca;

/* The admin's token, written beside the db by the first start. */
static void read_token(void) {
  char path[400], tok[128] = "";
  snprintf(path, sizeof path, "%s/admin.token", d.dir);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(tok, sizeof tok, f)) {
    if (f)
      fclose(f);
    TW_FAIL("no admin token in %s", path);
  }
  fclose(f);
  tok[strcspn(tok, "\r\n")] = '\0';
  snprintf(auth_hdr, sizeof auth_hdr, "Authorization: Bearer %s", tok);
}

/* One round: start on the file the last kill left (and check what it
 * left), a burst, SIGKILL once the target is reached. */
static void round_n(int round) {
  /* a round after a failed one would only pile up its consequences */
  if (tw_failures())
    skip();
  if (twtest_daemon_start(&d) != 0) {
    int code = twtest_daemon_wait(&d, 5000);
    TW_FAIL("round %d: tradewindd did not start (exit %d)", round, code);
  }
  if (tokens && !auth_hdr[0])
    read_token();
  if (round > 1) {
    /* what the previous kill left behind, seen by the restarted daemon */
    check_acked_present(d.url, b.acks, b.n_acks);
    check_file(d.db, b.n_acks);
  }
  b.url = d.url;
  b.round = round;
  b.accepted = 0;
  b.target = 50 + (long)(rng_next() % 1950);
  atomic_store(&b.stop, 0);
  printf("round %d: port %d, kill after %ld acknowledged jobs\n", round, d.port,
         b.target);
  fflush(stdout);

  pthread_t th[CLIENTS];
  struct client cl[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    cl[i] = (struct client){.b = &b, .index = i};
    pthread_create(&th[i], NULL, client_main, &cl[i]);
  }
  /* the clients record what they were told; nothing is checked until
   * they are joined */
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += BURST_TIMEOUT_S;
  pthread_mutex_lock(&b.mu);
  while (b.accepted < b.target && b.early_failures == 0)
    if (pthread_cond_timedwait(&b.reached, &b.mu, &deadline) == ETIMEDOUT)
      break;
  long at_kill = b.accepted;
  pthread_mutex_unlock(&b.mu);
  /* stop first, then kill: a failure seen while stop is clear happened
   * before the kill */
  atomic_store(&b.stop, 1);
  twtest_daemon_kill(&d);
  for (int i = 0; i < CLIENTS; i++)
    pthread_join(th[i], NULL);
  printf("  killed at %ld acknowledged; %ld acknowledged in the round\n",
         at_kill, b.accepted);
  TW_CHECK(b.early_failures == 0,
           "round %d: %ld failed requests before the kill, first: %s", round,
           b.early_failures, b.first_failure);
  TW_CHECK(at_kill >= b.target || b.early_failures,
           "round %d: only %ld of %ld jobs acknowledged in %d s", round,
           at_kill, b.target, BURST_TIMEOUT_S);
}

static void round_1(void **state) { round_n(1); }
static void round_2(void **state) { round_n(2); }
static void round_3(void **state) { round_n(3); }

/* After the last kill: every acknowledged job is there, the file is
 * whole, and the daemon stops cleanly. */
static void final_restart_keeps_every_acknowledged_job(void **state) {
  if (tw_failures())
    skip();
  if (twtest_daemon_start(&d) != 0)
    TW_FAIL("final restart: tradewindd did not start (exit %d)",
            twtest_daemon_wait(&d, 5000));
  check_acked_present(d.url, b.acks, b.n_acks);
  check_file(d.db, b.n_acks);
  int code = twtest_daemon_stop(&d, 20000);
  TW_CHECK(code == 0, "tradewindd exited %d after SIGTERM", code);
}

static int setup(void **state) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  pthread_mutex_init(&b.mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&b.reached, &ca);
  return 0;
}

static int teardown(void **state) {
  printf("crash: %d rounds, %zu acknowledged jobs checked, seed=%" PRIu64 "\n",
         ROUNDS, b.n_acks, seed);
  if (tw_failures()) {
    char *log = twtest_daemon_log_read(&d);
    size_t len = strlen(log);
    fprintf(stderr, "--- tradewindd log (last 3000 bytes) ---\n%s\n",
            log + (len > 3000 ? len - 3000 : 0));
    free(log);
    fprintf(stderr, "crash: FAILED (seed=%" PRIu64 ")\n", seed);
  }
  twtest_daemon_cleanup(&d, tw_failures() != 0);
  free(b.acks);
  pthread_cond_destroy(&b.reached);
  pthread_condattr_destroy(&ca);
  pthread_mutex_destroy(&b.mu);
  curl_global_cleanup();
  return 0;
}

int main(int argc, char **argv) {
  tokens = argc > 1 && !strcmp(argv[1], "tokens");
  const char *seed_env = getenv("TW_SEED");
  seed = seed_env && *seed_env
             ? strtoull(seed_env, NULL, 10)
             : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  if (!seed)
    seed = 1;
  rng_state = seed;
  printf("crash: seed=%" PRIu64 " (rerun with TW_SEED=%" PRIu64 "), auth %s\n",
         seed, seed, tokens ? "tokens" : "open");
  fflush(stdout);
  if (twtest_daemon_init(&d, tokens ? TOKENS_CONFIG : NULL) != 0) {
    printf("SKIPPED: cannot prepare a daemon directory\n");
    return TW_SKIP;
  }
  _Static_assert(ROUNDS == 3, "one test per round");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_1),
      cmocka_unit_test(round_2),
      cmocka_unit_test(round_3),
      cmocka_unit_test(final_restart_keeps_every_acknowledged_job),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
