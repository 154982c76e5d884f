/* bench-scale - the store at scale on PostgreSQL: job list pages and a
 * scheduler pass with millions of jobs stored.
 *
 * Uses the cluster of scripts/postgres.sh in --pg-dir (default
 * $TW_PG_DIR, else .state/postgres; started when it is not up and the
 * script is found, stopped afterwards if started here), a schema of its
 * own (dropped at the end unless --keep).  Starts a tradewindd on it
 * (auth open, scheduler tick 10 min: its own passes stay out of the way),
 * which creates the tables; submits one job through the API for a spec as
 * the API stores it; then loads --jobs N rows into jobs with COPY in the
 * bench's setup (not through the API): the newest --pending P pending, the
 * rest succeeded, over 100 tenants, priorities 0..9.  Then:
 *
 *   pages   GET /v1/jobs over one keep-alive connection, --requests R of
 *           each kind: the first page (no filter), a deep page (a keyset
 *           cursor half way down), a tenant's first page (?tenant=), the
 *           pending jobs' first page (?state=pending), and a deep page of
 *           a tenant; limit 50.  p50 and p99 of each (goal p99 <= 20 ms).
 *   pass    a scheduler (broker/sched, in this process, on a store of its
 *           own on the same database, no provider configured) starts as
 *           the daemon's does: the store opened, the scheduler made and
 *           its start-up work done (tw_sched_warm: statements prepared,
 *           the window's specs parsed; --no-warm leaves it to the first
 *           pass), timed apart as scale_startup_ms.  Then tw_sched_tick():
 *           the first pass (it notes a reason on every job it looks at,
 *           all in one transaction), its steps and commits printed, and
 *           the next --passes K: p50 and max (goal <= 100 ms).  A pass
 *           reads a window of the queue (the highest priorities first),
 *           never the whole queue.
 *
 * Output: one `key value unit` line per figure, lines starting with # are
 * context (sizes, load times, the machine's load).  --quick: 300,000 jobs
 * (100,000 pending), 100 requests, 5 passes: under a minute.  The full
 * size is --jobs 10000000.  Exit 0 when measured, 1 on errors, 2 on usage
 * errors, 77 when PostgreSQL cannot be used here (the reason printed). */
#define _GNU_SOURCE /* mkdtemp, pipe2 under strict C11 */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>

#include "bench/bench_pg.h"
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_http.h"
#include "broker/base/clock.h"
#include "broker/core/store.h"
#include "broker/sched/sched.h"

#ifndef TW_TRADEWINDD_PATH
#define TW_TRADEWINDD_PATH "tradewindd"
#endif

struct opts {
  const char *tradewindd;
  const char *pg_dir;
  long long jobs, pending;
  int requests, passes;
  bool keep, no_warm;
};

static struct {
  struct bench_pg pg; /* the cluster and the bench's connection */
  char schema[48], schema_dsn[1200];
  char tmp[256], config[320], log[320];
  pid_t pid;
  int port;
} g;

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cleanup(void);

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench-scale: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  cleanup();
  exit(1);
}

static PGresult *q(const char *sql) {
  PGresult *r = PQexec(g.pg.c, sql);
  ExecStatusType t = PQresultStatus(r);
  if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK)
    die("postgres: %.80s: %s", sql, PQerrorMessage(g.pg.c));
  return r;
}


/* 0, or 77 after saying why PostgreSQL cannot be used. */
static int pg_up(const struct opts *o) {
  char why[1200];
  if (bench_pg_up(&g.pg, o->pg_dir, why, sizeof why)) {
    printf("SKIPPED: %s\n", why);
    return 77;
  }
  char cmd[1400];
  snprintf(g.schema, sizeof g.schema, "bench_scale_%ld", (long)getpid());
  snprintf(cmd, sizeof cmd, "CREATE SCHEMA %s", g.schema);
  PQclear(q(cmd));
  snprintf(cmd, sizeof cmd, "SET search_path TO %s", g.schema);
  PQclear(q(cmd));
  snprintf(g.schema_dsn, sizeof g.schema_dsn, "%s options='-csearch_path=%s'",
           g.pg.dsn, g.schema);
  return 0;
}

static int daemon_start(const struct opts *o) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g.tmp, sizeof g.tmp, "%s/tw-bench-scale-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g.tmp))
    die("mkdtemp %s: %s", g.tmp, strerror(errno));
  snprintf(g.config, sizeof g.config, "%s/tradewind.yaml", g.tmp);
  snprintf(g.log, sizeof g.log, "%s/tradewindd.log", g.tmp);
  FILE *f = fopen(g.config, "w");
  if (!f)
    die("cannot write %s", g.config);
  fprintf(f,
          "log:\n  level: warn\nstore:\n  backend: postgres\n"
          "  dsn: \"%s\"\n  password_file: %s\n"
          "scheduler:\n  tick_ms: 600000\nauth:\n  mode: open\n",
          g.schema_dsn, g.pg.password_file);
  fclose(f);
  char db[400];
  snprintf(db, sizeof db, "%s/tradewind.db", g.tmp);
  const char *argv[] = {o->tradewindd, "--config", g.config, "--listen",
                        "127.0.0.1:0", "--db",     db,       NULL};
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0)
    die("pipe: %s", strerror(errno));
  int logfd = open(g.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logfd < 0)
    die("open %s: %s", g.log, strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    dup2(pfd[1], 1);
    dup2(logfd, 2);
    execv(o->tradewindd, (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  close(logfd);
  g.pid = pid;
  char line[256];
  size_t len = 0;
  int64_t deadline = mono_ns() + 60 * 1000000000LL;
  while (!memchr(line, '\n', len)) {
    int left = (int)((deadline - mono_ns()) / 1000000);
    struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
    if (left <= 0 || poll(&pf, 1, left) <= 0)
      break;
    ssize_t n = read(pfd[0], line + len, sizeof line - 1 - len);
    if (n <= 0)
      break;
    len += (size_t)n;
    if (len == sizeof line - 1)
      break;
  }
  close(pfd[0]);
  line[len] = '\0';
  const char *colon = strrchr(line, ':');
  if (strncmp(line, "listening http://", 17) || !colon)
    return -1;
  g.port = atoi(colon + 1);
  return g.port > 0 ? 0 : -1;
}

static void cleanup(void) {
  if (g.pid > 0) {
    kill(g.pid, SIGTERM);
    waitpid(g.pid, NULL, 0);
    g.pid = 0;
  }
  if (g.tmp[0]) {
    char p[400];
    snprintf(p, sizeof p, "%s/admin.token", g.tmp);
    unlink(p);
    unlink(g.config);
    unlink(g.log);
    rmdir(g.tmp);
    g.tmp[0] = '\0';
  }
  if (g.pg.c && g.schema[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "DROP SCHEMA %s CASCADE", g.schema);
    PQclear(PQexec(g.pg.c, cmd));
    g.schema[0] = '\0';
  }
  if (!bench_pg_down(&g.pg, false))
    fprintf(stderr, "bench-scale: stopping PostgreSQL in %s failed\n",
            g.pg.dir);
}

/* The text of COPY's format: backslash, tab and newline escaped. */
static size_t copy_text(char *out, const char *s) {
  size_t k = 0;
  for (; *s; s++) {
    if (*s == '\\' || *s == '\t' || *s == '\n') {
      out[k++] = '\\';
      out[k++] = *s == '\t' ? 't' : *s == '\n' ? 'n' : '\\';
    } else {
      out[k++] = *s;
    }
  }
  return k;
}

/* Loads jobs seq from..to (inclusive) with COPY. */
static void load(long long from, long long to, long long pending_from,
                 const char *spec, int64_t t0) {
  PGresult *cr = PQexec(g.pg.c, "COPY jobs (seq, id, tenant, project, name,"
                             " state, reason, priority, spec, created_at_ms,"
                             " updated_at_ms) FROM STDIN");
  if (PQresultStatus(cr) != PGRES_COPY_IN)
    die("COPY: %s", PQerrorMessage(g.pg.c));
  PQclear(cr);
  char *esc = malloc(2 * strlen(spec) + 1);
  if (!esc)
    abort();
  esc[copy_text(esc, spec)] = '\0';
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    abort();
  for (long long seq = from; seq <= to; seq++) {
    bool pend = seq >= pending_from;
    int64_t at = t0 + seq; /* a millisecond apart */
    if (len + strlen(esc) + 256 > cap) {
      if (PQputCopyData(g.pg.c, buf, (int)len) != 1)
        die("COPY: %s", PQerrorMessage(g.pg.c));
      len = 0;
    }
    len += (size_t)snprintf(
        buf + len, cap - len,
        "%lld\tj-%026lld\tt%03lld\tp\tscale-%lld\t%s\t%s\t%lld\t%s\t%lld\t%lld"
        "\n",
        seq, seq, seq % 100, seq, pend ? "pending" : "succeeded",
        pend ? "submitted" : "exit 0", seq % 10, esc, (long long)at,
        (long long)at);
  }
  if ((len && PQputCopyData(g.pg.c, buf, (int)len) != 1) ||
      PQputCopyEnd(g.pg.c, NULL) != 1)
    die("COPY: %s", PQerrorMessage(g.pg.c));
  PGresult *r = PQgetResult(g.pg.c);
  if (PQresultStatus(r) != PGRES_COMMAND_OK)
    die("COPY: %s", PQerrorMessage(g.pg.c));
  PQclear(r);
  while ((r = PQgetResult(g.pg.c)))
    PQclear(r);
  free(buf);
  free(esc);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int pages(const char *key, const char *path, int n,
                 struct bench_conn *c) {
  int64_t *lat = calloc((size_t)n, sizeof *lat);
  if (!lat)
    abort();
  char req[512];
  int len = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
  int failed = 0;
  size_t items = 0;
  for (int i = 0; i < n; i++) {
    const char *body = NULL;
    size_t blen = 0;
    int64_t t0 = mono_ns();
    int st = bench_conn_roundtrip(c, req, (size_t)len, &body, &blen);
    lat[i] = mono_ns() - t0;
    if (st != 200) {
      if (!failed)
        fprintf(stderr, "bench-scale: GET %s: status %d\n", path, st);
      failed++;
    } else if (!items) {
      for (const char *p = body; (p = strstr(p, "\"id\":\"j-")); p++)
        items++;
    }
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
  printf("# %s: GET %s (%zu jobs in the page)\n", key, path, items);
  printf("scale_%s_p50 %.2f ms\n", key, (double)lat[(n - 1) / 2] / 1e6);
  printf("scale_%s_p99 %.2f ms\n", key,
         (double)lat[(size_t)((double)(n - 1) * 0.99)] / 1e6);
  fflush(stdout);
  free(lat);
  return failed + (items == 0);
}

static double ms_since(int64_t t0) { return (double)(mono_ns() - t0) / 1e6; }

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench-scale [--quick] [--jobs N] [--pending P] "
          "[--requests R]\n"
          "                   [--passes K] [--pg-dir D] [--tradewindd PATH] "
          "[--keep] [--no-warm]\n"
          "\n"
          "The store at scale on PostgreSQL: N jobs loaded with COPY (P of "
          "them\n"
          "pending), then GET /v1/jobs pages and scheduler passes timed.\n"
          "\n"
          "  --quick        300000 jobs, 100 requests, 5 passes (under a "
          "minute)\n"
          "  --jobs N       jobs stored (default 10000000)\n"
          "  --pending P    of which pending (default 100000)\n"
          "  --requests R   requests per kind of page (default 200)\n"
          "  --passes K     scheduler passes after the first (default 10)\n"
          "  --pg-dir D     the scripts/postgres.sh cluster (default "
          "$TW_PG_DIR,\n"
          "                 else .state/postgres)\n"
          "  --tradewindd P the daemon (default: the one built with this "
          "bench)\n"
          "  --keep         keep the schema (and the cluster running)\n"
          "  --no-warm      no start-up work before the first pass\n");
}

int main(int argc, char **argv) {
  struct opts o = {.tradewindd = TW_TRADEWINDD_PATH,
                   .jobs = 10000000,
                   .pending = 100000,
                   .requests = 200,
                   .passes = 10};
  const char *env = getenv("TRADEWINDD");
  if (env && *env)
    o.tradewindd = env;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      o.jobs = 300000;
      o.requests = 100;
      o.passes = 5;
    } else if (!strcmp(a, "--jobs") && i + 1 < argc) {
      o.jobs = atoll(argv[++i]);
    } else if (!strcmp(a, "--pending") && i + 1 < argc) {
      o.pending = atoll(argv[++i]);
    } else if (!strcmp(a, "--requests") && i + 1 < argc) {
      o.requests = atoi(argv[++i]);
    } else if (!strcmp(a, "--passes") && i + 1 < argc) {
      o.passes = atoi(argv[++i]);
    } else if (!strcmp(a, "--pg-dir") && i + 1 < argc) {
      o.pg_dir = argv[++i];
    } else if (!strcmp(a, "--tradewindd") && i + 1 < argc) {
      o.tradewindd = argv[++i];
    } else if (!strcmp(a, "--keep")) {
      o.keep = true;
    } else if (!strcmp(a, "--no-warm")) {
      o.no_warm = true;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "bench-scale: unknown or incomplete option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (o.jobs < 1000 || o.pending < 1 || o.pending > o.jobs ||
      o.requests < 1 || o.passes < 1) {
    fprintf(stderr, "bench-scale: expected --jobs >= 1000, 1 <= --pending <= "
                    "--jobs, --requests and --passes >= 1\n");
    return 2;
  }
  if (access(o.tradewindd, X_OK) != 0) {
    printf("SKIPPED: no tradewindd at %s\n", o.tradewindd);
    return 77;
  }
  signal(SIGPIPE, SIG_IGN);
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  double la[3] = {0};
  FILE *lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
      la[0] = -1;
    fclose(lf);
  }
  printf("# bench-scale %s, %ld cpus, load %.2f %.2f %.2f, %lld jobs (%lld "
         "pending)\n",
         date, sysconf(_SC_NPROCESSORS_ONLN), la[0], la[1], la[2], o.jobs,
         o.pending);
  int rc = pg_up(&o);
  if (rc)
    return rc;
  if (daemon_start(&o))
    die("tradewindd did not start (log %s)", g.log);
  printf("# tradewindd on 127.0.0.1:%d, PostgreSQL %s, schema %s\n", g.port,
         g.pg.dsn, g.schema);
  /* one job through the API: the spec as the API stores it */
  struct bench_conn c;
  bench_conn_init(&c, g.port);
  static const char body[] =
      "{\"name\":\"scale\",\"resources\":{\"cpus\":1}}";
  char req[512];
  int len = snprintf(req, sizeof req,
                     "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: "
                     "%zu\r\n\r\n%s",
                     strlen(body), body);
  if (bench_conn_roundtrip(&c, req, (size_t)len, NULL, NULL) != 201)
    die("the first submission failed");
  PGresult *r = q("SELECT spec, seq FROM jobs ORDER BY seq LIMIT 1");
  char *spec = strdup(PQgetvalue(r, 0, 0));
  long long first = atoll(PQgetvalue(r, 0, 1));
  PQclear(r);
  /* the rows, in batches of a million per COPY */
  int64_t t = mono_ns();
  long long last = first + o.jobs - 1, pending_from = last - o.pending + 1;
  int64_t t0 = (int64_t)now * 1000 - o.jobs;
  for (long long from = first + 1; from <= last; from += 1000000) {
    long long to = from + 999999 < last ? from + 999999 : last;
    load(from, to, pending_from, spec, t0);
    if (o.jobs >= 2000000) {
      printf("# loaded %lld rows, %.0f s\n", to - first, ms_since(t) / 1e3);
      fflush(stdout);
    }
  }
  free(spec);
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT setval(pg_get_serial_sequence('jobs', 'seq'), %lld)", last);
  PQclear(q(sql));
  double load_s = ms_since(t) / 1e3;
  t = mono_ns();
  PQclear(q("ANALYZE jobs"));
  r = q("SELECT count(*), pg_total_relation_size('jobs') FROM jobs");
  printf("# loaded %s jobs with COPY in %.1f s (ANALYZE %.1f s), jobs table "
         "and indexes %.0f MiB\n",
         PQgetvalue(r, 0, 0), load_s, ms_since(t) / 1e3,
         atof(PQgetvalue(r, 0, 1)) / 1048576.0);
  PQclear(r);
  printf("scale_jobs %lld jobs\n", o.jobs);
  printf("scale_load_rate %.0f rows/s\n", (double)o.jobs / load_s);
  fflush(stdout);

  int failed = 0;
  char path[256];
  /* the daemon closed the connection idle through the load: a fresh one */
  bench_conn_close(&c);
  failed += pages("page_first", "/v1/jobs?limit=50", o.requests, &c);
  snprintf(path, sizeof path, "/v1/jobs?limit=50&cursor=c%lld",
           first + o.jobs / 2);
  failed += pages("page_deep", path, o.requests, &c);
  failed += pages("page_tenant", "/v1/jobs?limit=50&tenant=t042", o.requests,
                  &c);
  snprintf(path, sizeof path, "/v1/jobs?limit=50&tenant=t042&cursor=c%lld",
           first + o.jobs / 2);
  failed += pages("page_tenant_deep", path, o.requests, &c);
  failed += pages("page_state", "/v1/jobs?limit=50&state=pending", o.requests,
                  &c);
  bench_conn_release(&c);

  /* the scheduler's pass, in this process, on the same database, started
   * as the daemon starts it */
  struct tw_store *s = NULL;
  struct tw_err err = {0};
  struct tw_store_opts so = {.backend = TW_DB_POSTGRES,
                             .dsn = g.schema_dsn,
                             .password = g.pg.password,
                             .readers = 2};
  t = mono_ns();
  if (tw_store_open(&so, &s, &err))
    die("store: %s", err.msg);
  double open_ms = ms_since(t);
  struct tw_sched *sc = NULL;
  struct tw_sched_opts sched_opts = {.store = s};
  if (tw_sched_new(&sched_opts, &sc, &err))
    die("scheduler: %s", err.msg);
  int64_t warm_ms = o.no_warm ? 0 : tw_sched_warm(sc);
  printf("# start-up: store opened %.1f ms (migrations checked, connections "
         "made), scheduler's start-up work %s%lld ms\n",
         open_ms, o.no_warm ? "skipped (--no-warm) " : "", (long long)warm_ms);
  printf("scale_startup_ms %.1f ms\n", ms_since(t));
  struct tw_store_stats st0, st1;
  tw_store_stats(s, &st0);
  t = mono_ns();
  tw_sched_tick(sc);
  double first_ms = ms_since(t);
  tw_store_stats(s, &st1);
  struct tw_sched_pass_stats ps;
  tw_sched_last_pass(sc, &ps);
  printf("# first pass: offers %.1f, follow %.1f, flow %.1f, queue %.1f "
         "(%zu jobs read), plans %.1f (%zu jobs), notes %.1f (%zu), "
         "launches %.1f ms\n",
         ps.offers_us / 1e3, ps.follow_us / 1e3, ps.flow_us / 1e3,
         ps.queue_us / 1e3, ps.queued, ps.plan_us / 1e3, ps.looked_at,
         ps.notes_us / 1e3, ps.notes, ps.launch_us / 1e3);
  printf("scale_pass_first_ms %.1f ms\n", first_ms);
  printf("scale_pass_first_commits %llu commits\n",
         (unsigned long long)(st1.commits - st0.commits));
  int64_t *pass = calloc((size_t)o.passes, sizeof *pass);
  if (!pass)
    abort();
  for (int i = 0; i < o.passes; i++) {
    t = mono_ns();
    tw_sched_tick(sc);
    pass[i] = mono_ns() - t;
  }
  qsort(pass, (size_t)o.passes, sizeof *pass, cmp_i64);
  tw_sched_last_pass(sc, &ps);
  printf("# pass: tw_sched_tick() over %lld pending jobs, no provider "
         "configured; the last: follow %.1f, queue %.1f, plans %.1f, notes "
         "%.1f (%zu) ms\n",
         o.pending, ps.follow_us / 1e3, ps.queue_us / 1e3, ps.plan_us / 1e3,
         ps.notes_us / 1e3, ps.notes);
  printf("scale_pass_p50_ms %.1f ms\n", (double)pass[(o.passes - 1) / 2] / 1e6);
  printf("scale_pass_max_ms %.1f ms\n", (double)pass[o.passes - 1] / 1e6);
  free(pass);
  tw_sched_free(sc);
  tw_store_close(s);
  if (o.keep) {
    printf("# kept schema %s\n", g.schema);
    g.schema[0] = '\0';
    g.pg.started = false;
  }
  cleanup();
  return failed ? 1 : 0;
}
