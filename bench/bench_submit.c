/* bench-submit - durable REST submissions per second, and their latency.
 *
 * Starts its own tradewindd on a temporary sqlite file (port 0), then for
 * each concurrency level N runs N client threads, each with one keep-alive
 * connection, submitting small distinct job specs back to back for a fixed
 * time.  A submission counts when its complete 201 arrived, which the
 * daemon sends only after the job's transaction is durable (group commit,
 * synchronous=FULL by default).  The store's group commit is read from
 * /metrics before and after each level: writes per commit.
 *
 * The client is a minimal HTTP/1.1 writer and reader over raw sockets (one
 * send per request, status line and Content-Length parsed, nothing else),
 * so the two cores of a small machine go to the daemon rather than to
 * client overhead.
 *
 * Tokens are required by default (`--auth tokens`), as in production: the
 * daemon writes admin.token beside its db on the first start, every
 * submission carries it as `Authorization: Bearer`, and every acknowledged
 * submission must have its audit entry and its owner row, counted in the db
 * after the daemon stopped (submit_unaudited_jobs; any is a failure).  The
 * per-token rate limit is off so one token can load the daemon.
 * `--auth open` measures without authentication and audit.
 *
 * Output: one `key value unit` line per figure, e.g.
 *   submit_c64_rate 5321 jobs/s
 *   submit_c64_p50 9.1 ms
 * Lines starting with # are context.  Exit 0 when every submission
 * succeeded, 1 when some failed, 2 on usage errors.
 *
 * Peers: the broker is one `struct peer`; another system measured in the
 * same run is another struct peer with its own start, request and stop
 * functions, appended to PEERS[].  Slurm is two: slurmrestd (REST
 * submissions over keep-alive connections, the same client as the broker's)
 * and sbatch (one process per submission, as people and scripts submit).
 * Both submit held jobs (nothing runs: the submission rate is measured,
 * not the execution), cancelled after each level.  They use the cluster of
 * scripts/slurm.sh in --slurm-dir (default $TW_SLURM_DIR, else .state/slurm
 * under the current directory), starting it when it is not up and the
 * script is found (./scripts/slurm.sh or $TW_SOURCE_DIR/scripts/slurm.sh),
 * and stopping it afterwards if they started it.  Without a cluster they
 * are skipped.  The ratio of the broker's rate to each is printed per
 * level:
 *   ratio_submit_vs_slurm_rest_c16 1.9 x
 *
 * Tracing: the broker is measured a second time in the same run with
 * `otel:` on at sampling 1 (every request's spans recorded and exported)
 * to an OTLP/HTTP sink inside this program, which reads each export and
 * answers 200 (docs/observability.md).  Its figures are submit_traced_*.
 * Each level runs --rounds (4; 6 with --quick) rounds, each of --seconds
 * of turns per side: both brokers' clients connected, one side sending at
 * a time, the turn passing every --slice-ms (100) in ABBA order, and both
 * WALs restarted before the round (run_pair()); a round's ratio is its
 * traced rate over its plain rate (the same tenths of a second of the
 * machine's load), printed as a # line, and the cost of tracing is the
 * median of the rounds' ratios:
 *   ratio_traced_vs_untraced_c16 0.98 x
 * (1.00: free; the goal is at least 0.95). `--no-traced` skips it.  The
 * rate moves with whatever else the machine runs; the daemon's own CPU
 * time per acknowledged job (every thread's schedstat over the round)
 * moves far less, so the same comparison
 * is printed on it too, as the rate a CPU-bound daemon would keep:
 *   submit_traced_c16_cpu_per_job_median 61.0 us/job
 *   ratio_traced_vs_untraced_cpu_c16 0.97 x
 * (the median of the rounds' untraced CPU per job over their traced one),
 * and a # line says whether every level's median ratio is at least 0.95.
 *
 * PostgreSQL (`--pg`, docs/ha.md): after the sqlite broker, in the same
 * run, `--replicas N` (default 2) brokers on one PostgreSQL database (the
 * cluster of scripts/postgres.sh, a schema of their own), the clients
 * dealt round-robin over them; figures submit_pg_*, among them the
 * server's CPU per job (its backends' /proc time), and
 *   ratio_submit_pg_vs_submit_c64 0.45 x
 * When PostgreSQL cannot start the line `# submit_pg: skipped: ...` says
 * why and the rest of the run goes on. */
#define _GNU_SOURCE /* pipe2, close_range, mkdtemp under strict C11 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <libpq-fe.h>

#include "bench/bench_pg.h"
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_http.h"

#ifndef TW_TRADEWINDD_PATH
#define TW_TRADEWINDD_PATH "tradewindd"
#endif

#define MAX_LEVELS 8
#define MAX_THREADS 1024
#define MAX_ROUNDS 15 /* --rounds: plain and traced, alternating */

struct opts {
  const char *tradewindd;
  const char *config; /* NULL: a generated one with the defaults */
  int levels[MAX_LEVELS];
  int n_levels;
  double seconds;  /* measured time per level */
  double warmup_s; /* unmeasured load before each level */
  bool smoke;
  bool keep;             /* keep the temp dir */
  bool open_auth;        /* auth: open (no tokens, no audit) */
  bool slurm;            /* measure the Slurm peers too */
  const char *slurm_dir; /* NULL: $TW_SLURM_DIR, else .state/slurm */
  bool no_traced;        /* skip the broker with tracing on */
  bool quiet;            /* run_level: measure, print nothing */
  const char *otel_endpoint; /* set for the traced broker's start */
  bool pg;                   /* --pg: replicas on PostgreSQL too */
  const char *pg_dir;        /* NULL: $TW_PG_DIR, else .state/postgres */
  int replicas;              /* --replicas N (default 2) */
  int rounds;                /* --rounds N: plain/traced pairs per level */
  double slice_ms; /* --slice-ms: a side's turn within a round (100) */
  bool turns;      /* --turns: print each turn's rate */
};

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench-submit: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* One GET on a fresh connection, with extra header lines hdrs ("" for
 * none, each ending in CRLF); the body is copied into out. */
static int http_get(int port, const char *path, const char *hdrs, char *out,
                    size_t outsz) {
  struct bench_conn c;
  bench_conn_init(&c, port);
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path, hdrs);
  const char *body;
  size_t len;
  int status = bench_conn_roundtrip(&c, req, (size_t)n, &body, &len);
  if (status > 0)
    snprintf(out, outsz, "%.*s", (int)len, body);
  bench_conn_release(&c);
  return status;
}

/* ---- peers
 * -------------------------------------------------------------------- */

struct peer {
  const char *name;   /* shown in context lines */
  const char *prefix; /* of the figure keys: "submit" -> submit_c64_rate */
  int ok_status;      /* the answer of a successful submission */
  /* Starts (or finds) the system; sets port.  0 or -1. */
  int (*start)(struct peer *p, const struct opts *o);
  /* Writes one complete submission request for client `client`, number i,
   * into buf; returns its length. */
  size_t (*request)(struct peer *p, int level, int client, long i, char *buf,
                    size_t bufsz);
  /* Figures read from the system itself around a level; NULL: none.
   * `before` is true before the level, false after (then print). */
  void (*observe)(struct peer *p, int level, bool before);
  /* Brings the system to the same state before each round of the traced
   * comparison (the broker: its WAL checkpointed and restarted); returns
   * false when it could not.  NULL: nothing to do. */
  bool (*settle)(struct peer *p);
  void (*stop)(struct peer *p, bool keep);
  /* Measures one level itself instead of the HTTP clients (sbatch);
   * returns the failures like run_level().  NULL: the HTTP clients. */
  long (*run)(struct peer *p, int level, const struct opts *o);
  int port;
  bool skipped;            /* start() said the system is not here */
  double rate[MAX_LEVELS]; /* jobs/s per level, for the ratios */
  long long committed;     /* set by observe(after): writes the system
                            * committed in the level; -1 when unknown */
  double cpu_s;            /* set by observe(after): the system's CPU
                            * seconds in the level; -1 when unknown */
  /* The system's CPU seconds so far (every thread), read around each
   * round, quiet ones too; NULL or -1: unknown. */
  double (*cpu)(struct peer *p);
  double cpu_job[MAX_LEVELS]; /* CPU seconds per success, last round */
  long long acked;         /* successful answers of every level, warm-up
                            * included (what check() compares with) */
  /* After the last level, the system's own record of what it accepted;
   * returns the failures.  NULL: none. */
  long (*check)(struct peer *p, const struct opts *o);
  void *ctx;
  /* Several replicas: client i connects to ports[i % n_ports]; NULL: port.
   * broker_side: another setup of the broker, its ratio printed to the
   * sqlite broker's (ratio_<prefix>_vs_submit_cN). */
  int *ports;
  int n_ports;
  bool broker_side;
};

/* -- the broker
 * ----------------------------------------------------------------- */

struct broker {
  char dir[256];
  char config[320];
  char db[320];
  char log[320];
  pid_t pid;
  int out_fd;
  uint64_t commits0, writes0;
  double cpu0;    /* the daemon's user + system seconds */
  double trace0;  /* its tracer thread's ("tw-trace"), -1: none */
  char auth[128]; /* "Authorization: Bearer ...\r\n", "" when open */
};

static int broker_metric(int port, const char *auth, const char *name,
                         uint64_t *out) {
  static char text[65536];
  if (http_get(port, "/metrics", auth, text, sizeof text) != 200)
    return -1;
  size_t n = strlen(name);
  for (char *line = text; line && *line;) {
    if (!strncmp(line, name, n) && line[n] == ' ') {
      *out = strtoull(line + n + 1, NULL, 10);
      return 0;
    }
    line = strchr(line, '\n');
    line = line ? line + 1 : NULL;
  }
  return -1;
}

static int broker_start(struct peer *p, const struct opts *o) {
  struct broker *b = calloc(1, sizeof *b);
  if (!b)
    abort();
  p->ctx = b;
  const char *tmp = getenv("TMPDIR");
  snprintf(b->dir, sizeof b->dir, "%s/tw-bench-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(b->dir))
    die("mkdtemp %s: %s", b->dir, strerror(errno));
  snprintf(b->db, sizeof b->db, "%s/tradewind.db", b->dir);
  snprintf(b->log, sizeof b->log, "%s/tradewindd.log", b->dir);
  if (o->config) {
    snprintf(b->config, sizeof b->config, "%s", o->config);
  } else {
    /* the defaults, spelled out so the figures say what they measured */
    snprintf(b->config, sizeof b->config, "%s/tradewind.yaml", b->dir);
    FILE *f = fopen(b->config, "w");
    if (!f)
      die("cannot write %s", b->config);
    /* tokens (the default) with the per-token rate limit off, so one
     * token can load the daemon; or open: no token checks, no audit */
    /* no provider: the scheduler's pass would note each job's reason
     * ("no provider is configured"), writes that are not the submit
     * path's; one pass at start, the next after the run */
    fputs(
        "log:\n  level: warn\nstore:\n  synchronous: full\n  max_batch: 512\n"
        "scheduler:\n  tick_ms: 600000\n",
        f);
    fputs(o->open_auth ? "auth:\n  mode: open\n"
                       : "auth:\n  mode: tokens\n  rate_limit_per_s: 0\n",
          f);
    if (o->otel_endpoint)
      fprintf(f, "otel:\n  endpoint: %s\n  sampling: 1\n", o->otel_endpoint);
    fclose(f);
  }
  const char *argv[] = {o->tradewindd, "--config", b->config, "--listen",
                        "127.0.0.1:0", "--db",     b->db,     NULL};
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0)
    die("pipe: %s", strerror(errno));
  int logfd = open(b->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logfd < 0)
    die("open %s: %s", b->log, strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
    if (getppid() != parent)
      _exit(127);
    dup2(pfd[1], 1);
    dup2(logfd, 2);
    execv(o->tradewindd, (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  close(logfd);
  b->pid = pid;
  b->out_fd = pfd[0];
  char line[256];
  size_t len = 0;
  int64_t deadline = mono_ns() + 20 * 1000000000LL;
  while (!memchr(line, '\n', len)) {
    int left = (int)((deadline - mono_ns()) / 1000000);
    struct pollfd pf = {.fd = b->out_fd, .events = POLLIN};
    if (left <= 0 || poll(&pf, 1, left) <= 0)
      return -1;
    ssize_t n = read(b->out_fd, line + len, sizeof line - 1 - len);
    if (n <= 0)
      return -1;
    len += (size_t)n;
    if (len == sizeof line - 1)
      break;
  }
  line[len] = '\0';
  const char *colon = strrchr(line, ':');
  if (strncmp(line, "listening http://", 17) || !colon)
    return -1;
  p->port = atoi(colon + 1);
  if (!o->open_auth) {
    /* the first start wrote the admin's token beside the db */
    char path[400], tok[100] = "";
    snprintf(path, sizeof path, "%s/admin.token", b->dir);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(tok, sizeof tok, f)) {
      fprintf(stderr, "bench-submit: no token in %s\n", path);
      if (f)
        fclose(f);
      return -1;
    }
    fclose(f);
    tok[strcspn(tok, "\r\n")] = '\0';
    snprintf(b->auth, sizeof b->auth, "Authorization: Bearer %s\r\n", tok);
  }
  printf("# broker: %s, db %s, config %s, auth %s\n", o->tradewindd, b->db,
         o->config ? o->config : "defaults (synchronous: full, max_batch: 512)",
         o->open_auth ? "open (no tokens, no audit)"
                      : "tokens (every submission authenticated and audited)");
  if (!o->config)
    printf("# durable: a 201 follows its group commit, whose WAL sqlite syncs "
           "(synchronous: full) before the commit returns%s\n",
           o->open_auth ? "" : "; the job, its owner row and its audit entry "
                               "are one write of that commit (writes_per_job "
                               "1.00, unaudited_jobs 0)");
  return p->port > 0 ? 0 : -1;
}

static size_t broker_request(struct peer *p, int level, int client, long i,
                             char *buf, size_t bufsz) {
  struct broker *b = p->ctx;
  char body[256];
  int blen = snprintf(body, sizeof body,
                      "{\"name\":\"bench-c%d-t%d-%ld\",\"priority\":%ld,"
                      "\"resources\":{\"cpus\":%ld}}",
                      level, client, i, i % 10, 1 + i % 8);
  int n =
      snprintf(buf, bufsz,
               "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n%s"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
               b->auth, blen, body);
  return (size_t)n;
}

/* User plus system CPU seconds of process pid so far; -1 when unknown. */
/* utime + stime of /proc/<sub>/stat in seconds (sub: "PID" or
 * "PID/task/TID"), -1 when unreadable. */
static double proc_cpu_path(const char *sub) {
  char path[96], text[1024];
  snprintf(path, sizeof path, "/proc/%s/stat", sub);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  /* fields after the command's closing parenthesis: state is field 3,
   * utime and stime fields 14 and 15 */
  const char *p = strrchr(text, ')');
  unsigned long long ut, st;
  if (!p ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double proc_cpu_s(pid_t pid) {
  char sub[16];
  snprintf(sub, sizeof sub, "%d", (int)pid);
  return proc_cpu_path(sub);
}

/* The CPU seconds of pid's thread named comm, -1 if none. */
static double thread_cpu_s(pid_t pid, const char *comm) {
  char path[96], name[32];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  double v = -1;
  for (struct dirent *e; v < 0 && (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%.16s/comm", (int)pid,
             e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t n = fread(name, 1, sizeof name - 1, f);
    fclose(f);
    name[n] = '\0';
    name[strcspn(name, "\n")] = '\0';
    if (strcmp(name, comm))
      continue;
    /* schedstat's first field: the thread's time on a CPU in ns (stat
     * counts clock ticks, coarse for a thread's share of a short round) */
    snprintf(path, sizeof path, "/proc/%d/task/%.16s/schedstat", (int)pid,
             e->d_name);
    unsigned long long ns;
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%llu", &ns) == 1)
        v = (double)ns / 1e9;
      fclose(f);
    }
  }
  closedir(d);
  return v;
}

/* The time on a CPU of every thread of pid so far, in seconds, from each
 * task's schedstat (nanoseconds; /proc/PID/stat counts 10 ms ticks, which
 * is 1 to 2 % of a daemon's CPU in one short round); -1 when unreadable.
 * A thread that ended is not counted: the daemon's pools live as long as
 * the daemon. */
static double proc_tasks_cpu_s(pid_t pid) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  unsigned long long sum = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%d/task/%.16s/schedstat", (int)pid,
             e->d_name);
    FILE *f = fopen(path, "r");
    unsigned long long ns;
    if (f) {
      if (fscanf(f, "%llu", &ns) == 1)
        sum += ns;
      fclose(f);
    }
  }
  closedir(d);
  return (double)sum / 1e9;
}

/* The daemon's WAL checkpointed into the db and restarted from its first
 * frame, by a connection of the bench's own (sqlite allows it beside the
 * daemon's in WAL mode; its syncs are the bench's, between rounds): each
 * round of the traced comparison begins with both WALs empty, so neither
 * daemon meets a checkpoint or a growing WAL file the other does not.
 * False when the checkpoint could not finish (a writer busy past 2 s). */
static bool broker_settle(struct peer *p) {
  struct broker *b = p->ctx;
  sqlite3 *db = NULL;
  bool ok = false;
  if (b && sqlite3_open_v2(b->db, &db, SQLITE_OPEN_READWRITE, NULL) ==
               SQLITE_OK) {
    sqlite3_busy_timeout(db, 2000);
    ok = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL,
                                   NULL) == SQLITE_OK;
  }
  sqlite3_close(db);
  return ok;
}

static double broker_cpu(struct peer *p) {
  struct broker *b = p->ctx;
  return b && b->pid > 0 ? proc_tasks_cpu_s(b->pid) : -1;
}

static void broker_observe(struct peer *p, int level, bool before) {
  struct broker *b = p->ctx;
  uint64_t commits = 0, writes = 0;
  p->committed = -1;
  if (broker_metric(p->port, b->auth, "tradewind_store_commits_total",
                    &commits) ||
      broker_metric(p->port, b->auth, "tradewind_store_writes_total",
                    &writes)) {
    fprintf(stderr,
            "bench-submit: cannot read the store counters from /metrics\n");
    return;
  }
  double cpu = proc_tasks_cpu_s(b->pid);
  if (before) {
    b->commits0 = commits;
    b->writes0 = writes;
    b->cpu0 = cpu;
    b->trace0 = thread_cpu_s(b->pid, "tw-trace");
    return;
  }
  uint64_t dc = commits - b->commits0, dw = writes - b->writes0;
  p->committed = (long long)dw;
  p->cpu_s = cpu >= 0 && b->cpu0 >= 0 ? cpu - b->cpu0 : -1;
  printf("%s_c%d_commits %llu commits\n", p->prefix, level,
         (unsigned long long)dc);
  printf("%s_c%d_writes_per_commit %.1f writes/commit\n", p->prefix, level,
         dc ? (double)dw / (double)dc : 0.0);
  /* the tracer's exporter thread alone: encoding and sending, per job
   * committed (one write per job) */
  double tr = b->trace0 >= 0 ? thread_cpu_s(b->pid, "tw-trace") : -1;
  if (tr >= 0 && dw)
    printf("%s_c%d_export_cpu_per_job %.1f us/job\n", p->prefix, level,
           (tr - b->trace0) * 1e6 / (double)dw);
}

static int64_t db_count(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  else
    fprintf(stderr, "bench-submit: %s: %s\n", sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return v;
}

/* Every acknowledged submission is one job with its audit entry and its
 * owner, read from the db beside the running daemon (every answer came
 * after its commit, so the reader sees them all). */
static long broker_check(struct peer *p, const struct opts *o) {
  struct broker *b = p->ctx;
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(b->db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench-submit: cannot open %s: %s\n", b->db,
            db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return 1;
  }
  sqlite3_busy_timeout(db, 10000);
  int64_t jobs = db_count(db, "SELECT count(*) FROM jobs");
  printf("%s_jobs %lld jobs (%lld acknowledged)\n", p->prefix, (long long)jobs,
         p->acked);
  /* store write operations per job over the whole run (the first start's
   * admin and its token are one more) */
  uint64_t writes = 0;
  if (jobs > 0 &&
      !broker_metric(p->port, b->auth, "tradewind_store_writes_total", &writes))
    printf("%s_writes_per_job %.2f writes/job\n", p->prefix,
           (double)writes / (double)jobs);
  long failed = jobs != p->acked;
  if (jobs != p->acked)
    fprintf(stderr, "bench-submit: %lld jobs stored, %lld acknowledged\n",
            (long long)jobs, p->acked);
  if (!o->open_auth) {
    int64_t audited =
        db_count(db, "SELECT count(*) FROM audit_log"
                     " WHERE action = 'POST /v1/jobs' AND outcome = 'ok'");
    int64_t unaudited = db_count(
        db, "SELECT count(*) FROM jobs WHERE id NOT IN (SELECT object FROM"
            " audit_log WHERE action = 'POST /v1/jobs' AND outcome = 'ok')");
    int64_t unowned = db_count(db, "SELECT count(*) FROM jobs WHERE id NOT IN"
                                   " (SELECT job_id FROM tenancy_jobs)");
    printf("%s_audited_jobs %lld entries\n", p->prefix, (long long)audited);
    printf("%s_unaudited_jobs %lld jobs\n", p->prefix, (long long)unaudited);
    printf("%s_unowned_jobs %lld jobs\n", p->prefix, (long long)unowned);
    if (audited != jobs || unaudited != 0 || unowned != 0) {
      fprintf(stderr,
              "bench-submit: %lld jobs, %lld audit entries, %lld without one, "
              "%lld without an owner\n",
              (long long)jobs, (long long)audited, (long long)unaudited,
              (long long)unowned);
      failed++;
    }
  }
  sqlite3_close(db);
  fflush(stdout);
  return failed;
}

static void broker_stop(struct peer *p, bool keep) {
  struct broker *b = p->ctx;
  if (!b)
    return;
  if (b->pid > 0) {
    kill(b->pid, SIGTERM);
    int status = 0;
    waitpid(b->pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fprintf(stderr,
              "bench-submit: tradewindd ended with status %d (log %s)\n",
              status, b->log);
  }
  if (b->out_fd >= 0)
    close(b->out_fd);
  if (keep) {
    printf("# kept %s\n", b->dir);
  } else {
    static const char *const files[] = {"tradewind.db",     "tradewind.db-wal",
                                        "tradewind.db-shm", "tradewind.yaml",
                                        "admin.token",      "tradewindd.log",
                                        "tradewind.db.lock"};
    char path[400];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
      snprintf(path, sizeof path, "%s/%s", b->dir, files[i]);
      unlink(path);
    }
    rmdir(b->dir);
  }
  free(b);
  p->ctx = NULL;
}

/* -- the brokers on PostgreSQL: --pg
 * ---------------------------------------------- */

/* Two (--replicas N) tradewindd on one PostgreSQL database, the cluster of
 * scripts/postgres.sh in --pg-dir (default $TW_PG_DIR, else .state/postgres
 * under the current directory; started when it is not up and the script
 * is found, stopped afterwards if started here), each run in a schema of
 * its own (dropped at the end).  Client i keeps its connection to replica
 * i mod N: the clients are dealt round-robin over the replicas, as a
 * client-side list or a connection-balancing proxy would.  PostgreSQL runs
 * with fsync and synchronous_commit on: every acknowledged job is durable.
 * The figures are submit_pg_*, the ratio to the sqlite broker of the same
 * run ratio_submit_pg_vs_submit_cN. */
#define MAX_REPLICAS 4
static struct {
  struct bench_pg pg; /* the cluster; pg.c the bench's own connection:
                         schema, counts, backends' pids */
  char schema[48];
  char cfgdir[256], config[320];
  struct peer sub[MAX_REPLICAS];
  int ports[MAX_REPLICAS];
  int n;
  double cpu0, pg_cpu0;
  uint64_t commits0, writes0;
} pgr;


static bool pg_exec(const char *sql) {
  PGresult *r = PQexec(pgr.pg.c, sql);
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
            PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok)
    fprintf(stderr, "bench-submit: postgres: %s: %s", sql,
            PQerrorMessage(pgr.pg.c));
  PQclear(r);
  return ok;
}

static int64_t pg_count(const char *sql) {
  PGresult *r = PQexec(pgr.pg.c, sql);
  int64_t v = -1;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
    v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  else
    fprintf(stderr, "bench-submit: postgres: %s: %s", sql,
            PQerrorMessage(pgr.pg.c));
  PQclear(r);
  return v;
}

/* CPU seconds of the server's backends serving the brokers' schema. */
static double pg_backends_cpu(void) {
  PGresult *r = PQexec(pgr.pg.c, "SELECT pid FROM pg_stat_activity WHERE"
                              " datname = current_database() AND"
                              " pid <> pg_backend_pid()");
  double s = 0;
  if (PQresultStatus(r) == PGRES_TUPLES_OK)
    for (int i = 0; i < PQntuples(r); i++) {
      double c = proc_cpu_s((pid_t)atoi(PQgetvalue(r, i, 0)));
      if (c > 0)
        s += c;
    }
  PQclear(r);
  return s;
}

static int pgr_start(struct peer *p, const struct opts *o) {
  if (!o->pg)
    return 1;
  char why[1200];
  if (bench_pg_up(&pgr.pg, o->pg_dir, why, sizeof why)) {
    printf("# submit_pg: skipped: %s\n", why);
    return 1;
  }
  char cmd[1400];
  FILE *f;
  snprintf(pgr.schema, sizeof pgr.schema, "bench_submit_%ld",
           (long)getpid());
  snprintf(cmd, sizeof cmd, "CREATE SCHEMA %s", pgr.schema);
  if (!pg_exec(cmd))
    return -1;
  snprintf(cmd, sizeof cmd, "SET search_path TO %s", pgr.schema);
  if (!pg_exec(cmd))
    return -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(pgr.cfgdir, sizeof pgr.cfgdir, "%s/tw-bench-pg-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(pgr.cfgdir))
    die("mkdtemp %s: %s", pgr.cfgdir, strerror(errno));
  snprintf(pgr.config, sizeof pgr.config, "%s/tradewind.yaml", pgr.cfgdir);
  pgr.n = o->replicas;
  printf("# submit_pg: %d replicas on PostgreSQL (%s, schema %s), clients "
         "dealt round-robin\n",
         pgr.n, pgr.pg.dsn, pgr.schema);
  struct opts o2 = *o;
  o2.config = pgr.config;
  struct broker *first = NULL;
  for (int i = 0; i < pgr.n; i++) {
    /* the same config but for the replica's name */
    if (!(f = fopen(pgr.config, "w")))
      die("cannot write %s", pgr.config);
    fprintf(f,
            "log:\n  level: warn\nstore:\n  backend: postgres\n"
            "  dsn: \"%s options='-csearch_path=%s'\"\n"
            "  password_file: %s\n  max_batch: 512\n"
            "scheduler:\n  tick_ms: 600000\nha:\n  name: bench-%d\n",
            pgr.pg.dsn, pgr.schema, pgr.pg.password_file, i + 1);
    fputs(o->open_auth ? "auth:\n  mode: open\n"
                       : "auth:\n  mode: tokens\n  rate_limit_per_s: 0\n",
          f);
    fclose(f);
    /* only the first start writes admin.token: the others use its token */
    o2.open_auth = o->open_auth || i > 0;
    struct peer *s = &pgr.sub[i];
    *s = *p;
    if (broker_start(s, &o2) != 0)
      return -1;
    struct broker *b = s->ctx;
    if (i == 0)
      first = b;
    else
      memcpy(b->auth, first->auth, sizeof b->auth);
    pgr.ports[i] = s->port;
  }
  p->ports = pgr.ports;
  p->n_ports = pgr.n;
  p->port = pgr.ports[0];
  return 0;
}

static size_t pgr_request(struct peer *p, int level, int client, long i,
                          char *buf, size_t bufsz) {
  (void)p;
  return broker_request(&pgr.sub[client % pgr.n], level, client, i, buf,
                        bufsz);
}

static void pgr_observe(struct peer *p, int level, bool before) {
  uint64_t commits = 0, writes = 0;
  double cpu = 0;
  p->committed = -1;
  for (int i = 0; i < pgr.n; i++) {
    struct broker *b = pgr.sub[i].ctx;
    uint64_t c = 0, w = 0;
    if (broker_metric(pgr.sub[i].port, b->auth,
                      "tradewind_store_commits_total", &c) ||
        broker_metric(pgr.sub[i].port, b->auth, "tradewind_store_writes_total",
                      &w)) {
      fprintf(stderr, "bench-submit: cannot read /metrics of replica %d\n",
              i + 1);
      return;
    }
    commits += c;
    writes += w;
    cpu += proc_cpu_s(b->pid);
  }
  double pg_cpu = pg_backends_cpu();
  if (before) {
    pgr.commits0 = commits;
    pgr.writes0 = writes;
    pgr.cpu0 = cpu;
    pgr.pg_cpu0 = pg_cpu;
    return;
  }
  uint64_t dc = commits - pgr.commits0, dw = writes - pgr.writes0;
  p->committed = (long long)dw;
  p->cpu_s = cpu - pgr.cpu0;
  printf("%s_c%d_commits %llu commits\n", p->prefix, level,
         (unsigned long long)dc);
  printf("%s_c%d_writes_per_commit %.1f writes/commit\n", p->prefix, level,
         dc ? (double)dw / (double)dc : 0.0);
  if (dw)
    printf("%s_c%d_server_cpu_per_job %.1f us/job\n", p->prefix, level,
           (pg_cpu - pgr.pg_cpu0) * 1e6 / (double)dw);
}

static long pgr_check(struct peer *p, const struct opts *o) {
  int64_t jobs = pg_count("SELECT count(*) FROM jobs");
  printf("%s_jobs %lld jobs (%lld acknowledged)\n", p->prefix, (long long)jobs,
         p->acked);
  long failed = jobs != p->acked;
  if (failed)
    fprintf(stderr, "bench-submit: postgres: %lld jobs stored, %lld "
                    "acknowledged\n",
            (long long)jobs, p->acked);
  if (!o->open_auth) {
    int64_t unaudited = pg_count(
        "SELECT count(*) FROM jobs WHERE id NOT IN (SELECT object FROM"
        " audit_log WHERE action = 'POST /v1/jobs' AND outcome = 'ok')");
    int64_t unowned = pg_count("SELECT count(*) FROM jobs WHERE id NOT IN"
                               " (SELECT job_id FROM tenancy_jobs)");
    printf("%s_unaudited_jobs %lld jobs\n", p->prefix, (long long)unaudited);
    printf("%s_unowned_jobs %lld jobs\n", p->prefix, (long long)unowned);
    failed += unaudited != 0 || unowned != 0;
  }
  fflush(stdout);
  return failed;
}

static void pgr_stop(struct peer *p, bool keep) {
  (void)p;
  for (int i = 0; i < pgr.n; i++)
    if (pgr.sub[i].ctx)
      broker_stop(&pgr.sub[i], keep);
  pgr.n = 0;
  if (pgr.cfgdir[0]) {
    unlink(pgr.config);
    rmdir(pgr.cfgdir);
    pgr.cfgdir[0] = '\0';
  }
  char cmd[1400];
  if (pgr.pg.c && pgr.schema[0] && !keep) {
    snprintf(cmd, sizeof cmd, "DROP SCHEMA %s CASCADE", pgr.schema);
    pg_exec(cmd);
  } else if (pgr.schema[0]) {
    printf("# kept schema %s\n", pgr.schema);
  }
  if (!bench_pg_down(&pgr.pg, keep))
    fprintf(stderr, "bench-submit: stopping PostgreSQL in %s failed\n",
            pgr.pg.dir);
}

/* -- Slurm: slurmrestd and sbatch
 * ------------------------------------------------ */

/* The cluster both Slurm peers use, found (or started) once. */
static struct {
  bool tried, up, started;
  int users;
  char dir[512], script[600], conf[700], out_dir[700];
  char token[2048];
  int port;
} cluster;

static void env_value(const char *text, const char *key, char *out,
                      size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "export %s=", key);
  const char *p = strstr(text, pat);
  out[0] = '\0';
  if (!p)
    return;
  p += strlen(pat);
  size_t n = strcspn(p, "\n");
  if (n >= size)
    n = size - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}

static int read_cluster_env(void) {
  char path[600], text[4096] = "", tokfile[700], url[256];
  snprintf(path, sizeof path, "%s/slurm.env", cluster.dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  env_value(text, "SLURM_CONF", cluster.conf, sizeof cluster.conf);
  env_value(text, "TW_SLURM_OUTPUT_DIR", cluster.out_dir,
            sizeof cluster.out_dir);
  env_value(text, "TW_SLURM_TOKEN_FILE", tokfile, sizeof tokfile);
  env_value(text, "TW_SLURM_URL", url, sizeof url);
  const char *colon = strrchr(url, ':');
  cluster.port = colon ? atoi(colon + 1) : 0;
  f = fopen(tokfile, "r");
  if (!f || !fgets(cluster.token, sizeof cluster.token, f)) {
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  cluster.token[strcspn(cluster.token, "\r\n")] = '\0';
  return cluster.port > 0 && cluster.conf[0] && cluster.token[0] ? 0 : -1;
}

/* 0 when the cluster is up, 1 when there is none to use. */
static int cluster_up(const struct opts *o) {
  if (cluster.tried)
    return cluster.up ? 0 : 1;
  cluster.tried = true;
  const char *d = o->slurm_dir ? o->slurm_dir : getenv("TW_SLURM_DIR");
  if (d && *d)
    snprintf(cluster.dir, sizeof cluster.dir, "%s", d);
  else if (!getcwd(cluster.dir, sizeof cluster.dir - 16) ||
           strlen(cluster.dir) + 14 >= sizeof cluster.dir)
    return 1;
  else
    strcat(cluster.dir, "/.state/slurm");
  const char *src = getenv("TW_SOURCE_DIR");
  if (access("scripts/slurm.sh", R_OK) == 0)
    snprintf(cluster.script, sizeof cluster.script, "scripts/slurm.sh");
  else if (src && *src)
    snprintf(cluster.script, sizeof cluster.script, "%s/scripts/slurm.sh", src);
  char cmd[1400];
  if (cluster.script[0]) {
    /* Idempotent: a running cluster is left as it is.  Only a cluster that
     * was not running is stopped at the end. */
    snprintf(cmd, sizeof cmd, "bash '%s' status '%s' >/dev/null 2>&1",
             cluster.script, cluster.dir);
    bool was_up = system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "bash '%s' start '%s' >/dev/null 2>&1",
             cluster.script, cluster.dir);
    int rc = system(cmd);
    if (rc != 0) {
      printf("# slurm: not measured: %s start %s exited %d\n", cluster.script,
             cluster.dir, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
      return 1;
    }
    cluster.started = !was_up;
  }
  if (read_cluster_env()) {
    printf("# slurm: not measured: no cluster in %s (scripts/slurm.sh start)\n",
           cluster.dir);
    return 1;
  }
  cluster.up = true;
  printf("# slurm: cluster in %s, slurmrestd on 127.0.0.1:%d%s\n", cluster.dir,
         cluster.port, cluster.started ? " (started for this run)" : "");
  return 0;
}

/* Counts the held jobs the level left (what slurmctld really accepted),
 * then cancels them. */
static long long cluster_cancel_held(void) {
  char cmd[1000];
  long long n = -1;
  snprintf(cmd, sizeof cmd,
           "SLURM_CONF='%s' squeue -h -n bench-submit -t PD -o %%i 2>/dev/null "
           "| wc -l",
           cluster.conf);
  FILE *f = popen(cmd, "r");
  if (f) {
    if (fscanf(f, "%lld", &n) != 1)
      n = -1;
    pclose(f);
  }
  snprintf(cmd, sizeof cmd,
           "SLURM_CONF='%s' scancel --name=bench-submit --state=PENDING "
           ">/dev/null 2>&1",
           cluster.conf);
  if (system(cmd) != 0)
    fprintf(stderr, "bench-submit: scancel of the held jobs failed\n");
  return n;
}

/* Stops the cluster after the last Slurm peer, if this run started it. */
static void cluster_finish(bool keep) {
  if (!cluster.up || !cluster.started || keep)
    return;
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "bash '%s' stop '%s' >/dev/null 2>&1",
           cluster.script, cluster.dir);
  if (system(cmd) != 0)
    fprintf(stderr, "bench-submit: stopping the cluster in %s failed\n",
            cluster.dir);
}

static int slurm_start(struct peer *p, const struct opts *o) {
  if (!o->slurm || cluster_up(o))
    return 1;
  p->port = cluster.port;
  return 0;
}

static void slurm_stop(struct peer *p, bool keep) {
  (void)p, (void)keep; /* the cluster is stopped once, at the end */
}

static void slurm_observe(struct peer *p, int level, bool before) {
  p->committed = -1;
  if (!before) {
    p->committed = cluster_cancel_held();
    printf("%s_c%d_accepted %lld jobs\n", p->prefix, level, p->committed);
  }
}

/* A held one-CPU job: slurmctld accepts it (and gives it an id) but
 * nothing runs. */
static size_t slurm_rest_request(struct peer *p, int level, int client, long i,
                                 char *buf, size_t bufsz) {
  (void)p, (void)level, (void)client, (void)i;
  char body[700];
  int blen = snprintf(
      body, sizeof body,
      "{\"script\":\"#!/bin/sh\\ntrue\\n\",\"job\":{\"name\":\"bench-submit\","
      "\"partition\":\"cpu\",\"tasks\":1,\"cpus_per_task\":1,"
      "\"memory_per_node\":100,\"time_limit\":1,\"hold\":true,"
      "\"current_working_directory\":\"%s\",\"standard_output\":\"/dev/null\","
      "\"environment\":{\"PATH\":\"/bin:/usr/bin\"}}}",
      cluster.out_dir);
  int n =
      snprintf(buf, bufsz,
               "POST /slurm/v0.0.38/job/submit HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "X-SLURM-USER-NAME: root\r\nX-SLURM-USER-TOKEN: %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
               cluster.token, blen, body);
  if (n < 0 || (size_t)n >= bufsz)
    die("slurmrestd request does not fit %zu bytes", bufsz);
  return (size_t)n;
}

struct sbatch_worker {
  int64_t until;
  size_t ok, failed;
  int64_t *lat_ns;
  size_t n, cap;
};

static void *sbatch_main(void *arg) {
  struct sbatch_worker *w = arg;
  while (mono_ns() < w->until) {
    int64_t t0 = mono_ns();
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      setenv("SLURM_CONF", cluster.conf, 1);
      unsetenv("SLURM_JWT");
      execlp("sbatch", "sbatch", "--hold", "--parsable", "-J", "bench-submit",
             "-p", "cpu", "-o", "/dev/null", "-D", cluster.out_dir, "--wrap",
             "true", (char *)NULL);
      _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
        WEXITSTATUS(st)) {
      w->failed++;
      continue;
    }
    if (w->n == w->cap) {
      w->cap = w->cap ? 2 * w->cap : 1024;
      if (!(w->lat_ns = realloc(w->lat_ns, w->cap * sizeof *w->lat_ns)))
        abort();
    }
    w->lat_ns[w->n++] = mono_ns() - t0;
    w->ok++;
  }
  return NULL;
}

static int cmp_i64(const void *a, const void *b);

/* `level` processes at a time, each running sbatch back to back: sbatch
 * is how people and scripts submit, one process per job. */
static long sbatch_run(struct peer *p, int level, const struct opts *o) {
  if (level > 16) {
    printf("# sbatch: level %d not measured (one process per submission; at "
           "most 16)\n",
           level);
    return 0;
  }
  struct sbatch_worker *w = calloc((size_t)level, sizeof *w);
  pthread_t *th = calloc((size_t)level, sizeof *th);
  if (!w || !th)
    abort();
  int64_t start = mono_ns();
  for (int i = 0; i < level; i++) {
    w[i].until = start + (int64_t)(o->seconds * 1e9);
    pthread_create(&th[i], NULL, sbatch_main, &w[i]);
  }
  size_t total = 0, failed = 0;
  for (int i = 0; i < level; i++) {
    pthread_join(th[i], NULL);
    total += w[i].ok;
    failed += w[i].failed;
  }
  double secs = (double)(mono_ns() - start) / 1e9;
  int64_t *all = malloc((total ? total : 1) * sizeof *all);
  if (!all)
    abort();
  size_t k = 0;
  for (int i = 0; i < level; i++) {
    memcpy(all + k, w[i].lat_ns, w[i].n * sizeof *all);
    k += w[i].n;
    free(w[i].lat_ns);
  }
  qsort(all, total, sizeof *all, cmp_i64);
  for (int l = 0; l < o->n_levels; l++)
    if (o->levels[l] == level)
      p->rate[l] = (double)total / secs;
  printf("%s_c%d_rate %.0f jobs/s\n", p->prefix, level, (double)total / secs);
  printf("%s_c%d_p50 %.2f ms\n", p->prefix, level,
         total ? (double)all[(total - 1) / 2] / 1e6 : 0);
  printf("%s_c%d_submitted %zu jobs\n", p->prefix, level, total);
  printf("%s_c%d_failed %zu requests\n", p->prefix, level, failed);
  printf("%s_c%d_accepted %lld jobs\n", p->prefix, level,
         cluster_cancel_held());
  fflush(stdout);
  free(all);
  free(w);
  free(th);
  return (long)failed + (total == 0);
}

/* ---- the traced broker and its OTLP sink ------------------------------ */

/* A minimal OTLP/HTTP receiver: one thread, keep-alive, reads each
 * request's head (Content-Length) and then its body in pieces into one
 * 64 KiB buffer, counting the bytes and keeping none (it shares the two
 * cores with the daemons it measures, so it does as little as it can:
 * otel_span_tree decodes the same exports against the OTLP schema), and
 * answers 200 with an empty JSON object.  Its thread's CPU time is read
 * around each level (submit_traced_cN_sink_cpu_per_job). */
struct sink {
  int fd, port;
  int tid; /* atomic: the thread's id, for /proc/self/task/TID */
  pthread_t thread;
  long exports;
  long long bytes;
};

#define SINK_BUF (1 << 16)

static void *sink_main(void *arg) {
  struct sink *k = arg;
  __atomic_store_n(&k->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
  char *buf = malloc(SINK_BUF);
  if (!buf)
    abort();
  for (;;) {
    int c = accept(k->fd, NULL, NULL);
    if (c < 0)
      break;
    size_t len = 0;
    for (;;) {
      char *end = NULL;
      size_t scanned = 0;
      while (!(end = memmem(buf + scanned, len - scanned, "\r\n\r\n", 4))) {
        scanned = len > 3 ? len - 3 : 0;
        if (len == SINK_BUF)
          goto closed; /* a head of 64 KiB is no exporter's */
        ssize_t n = read(c, buf + len, SINK_BUF - len);
        if (n <= 0)
          goto closed;
        len += (size_t)n;
      }
      size_t head = (size_t)(end - buf) + 4, body = 0;
      /* the head's lines, within the bytes read (buf is not a string) */
      for (char *h = buf; h < end;) {
        if (!strncasecmp(h, "Content-Length:", 15))
          body = strtoul(h + 15, NULL, 10);
        char *nl = memmem(h, (size_t)(end + 2 - h), "\r\n", 2);
        if (!nl)
          break;
        h = nl + 2;
      }
      size_t have = len - head;
      if (have >= body) { /* the whole body came with the head */
        memmove(buf, buf + head + body, have - body);
        len = have - body;
      } else { /* the rest read and dropped, never past this request */
        for (size_t left = body - have; left;) {
          ssize_t n = read(c, buf, left < SINK_BUF ? left : SINK_BUF);
          if (n <= 0)
            goto closed;
          left -= (size_t)n;
        }
        len = 0;
      }
      __atomic_add_fetch(&k->exports, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&k->bytes, (long long)body, __ATOMIC_RELAXED);
      static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: "
                               "application/json\r\nContent-Length: 2\r\n"
                               "\r\n{}";
      if (write(c, ok, sizeof ok - 1) < 0)
        goto closed;
    }
  closed:
    close(c);
  }
  free(buf);
  return NULL;
}

/* The sink thread's CPU seconds so far, -1 when unknown. */
static double sink_cpu_s(struct sink *k) {
  int tid = k ? __atomic_load_n(&k->tid, __ATOMIC_ACQUIRE) : 0;
  if (tid <= 0)
    return -1;
  char path[96];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  FILE *f = fopen(path, "r");
  unsigned long long ns = 0;
  bool ok = f && fscanf(f, "%llu", &ns) == 1;
  if (f)
    fclose(f);
  return ok ? (double)ns / 1e9 : -1;
}

static struct sink *traced_sink;

static int traced_start(struct peer *p, const struct opts *o) {
  if (o->no_traced)
    return 1;
  struct sink *k = calloc(1, sizeof *k);
  k->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  if (k->fd < 0 || bind(k->fd, (struct sockaddr *)&sa, sizeof sa) ||
      listen(k->fd, 16) || getsockname(k->fd, (struct sockaddr *)&sa, &sl))
    die("otlp sink: %s", strerror(errno));
  k->port = ntohs(sa.sin_port);
  if (pthread_create(&k->thread, NULL, sink_main, k))
    die("otlp sink: no thread");
  pthread_detach(k->thread);
  traced_sink = k;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", k->port);
  struct opts o2 = *o;
  o2.otel_endpoint = url;
  printf("# traced: otel.endpoint %s (a sink in bench-submit), sampling 1\n",
         url);
  return broker_start(p, &o2);
}

static long traced_check(struct peer *p, const struct opts *o) {
  struct broker *b = p->ctx;
  long failed = broker_check(p, o);
  uint64_t exported = 0, dropped = 0;
  /* what the tracer queued reaches the sink within a flush or two */
  for (int i = 0; i < 30; i++) {
    broker_metric(p->port, b->auth,
                  "tradewind_trace_spans_total{outcome=\"exported\"}",
                  &exported);
    broker_metric(p->port, b->auth,
                  "tradewind_trace_spans_total{outcome=\"dropped\"}",
                  &dropped);
    if (exported + dropped >= (uint64_t)p->acked)
      break;
    usleep(100000);
  }
  printf("%s_spans_exported %llu spans\n", p->prefix,
         (unsigned long long)exported);
  printf("%s_spans_dropped %llu spans\n", p->prefix,
         (unsigned long long)dropped);
  if (traced_sink)
    printf("%s_export_bytes_per_span %.0f bytes/span\n", p->prefix,
           exported ? (double)__atomic_load_n(&traced_sink->bytes,
                                               __ATOMIC_RELAXED) /
                          (double)exported
                    : 0.0);
  if (exported < (uint64_t)p->acked) {
    fprintf(stderr,
            "bench-submit: traced: %llu spans exported for %lld "
            "submissions\n",
            (unsigned long long)exported, p->acked);
    failed++;
  }
  return failed;
}

static struct peer PEERS[] = {
    {.name = "tradewind broker",
     .prefix = "submit",
     .ok_status = 201,
     .start = broker_start,
     .request = broker_request,
     .observe = broker_observe,
     .settle = broker_settle,
     .cpu = broker_cpu,
     .check = broker_check,
     .stop = broker_stop},
    {.name = "tradewind broker, traced (otel sampling 1)",
     .prefix = "submit_traced",
     .ok_status = 201,
     .start = traced_start,
     .request = broker_request,
     .observe = broker_observe,
     .settle = broker_settle,
     .cpu = broker_cpu,
     .check = traced_check,
     .stop = broker_stop},
    {.name = "tradewind brokers on PostgreSQL (replicas, round-robin)",
     .prefix = "submit_pg",
     .ok_status = 201,
     .start = pgr_start,
     .request = pgr_request,
     .observe = pgr_observe,
     .check = pgr_check,
     .stop = pgr_stop,
     .broker_side = true},
    {.name = "slurmrestd",
     .prefix = "slurm_rest",
     .ok_status = 200,
     .start = slurm_start,
     .request = slurm_rest_request,
     .observe = slurm_observe,
     .stop = slurm_stop},
    {.name = "sbatch",
     .prefix = "slurm_sbatch",
     .start = slurm_start,
     .stop = slurm_stop,
     .run = sbatch_run},
};

/* ---- one level
 * ----------------------------------------------------------------- */

struct run {
  struct peer *peer;
  int level;
  int64_t measure_from, measure_until; /* mono ns */
  pthread_barrier_t ready;
};

struct worker {
  struct run *run;
  int index;
  int64_t *lat_ns; /* measured successes */
  size_t n, cap;
  long failed;  /* measured failures */
  long answers; /* complete answers of any status, warm-up included */
  long acked;   /* successful answers, warm-up included */
  int first_bad_status;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct run *r = w->run;
  struct bench_conn c;
  bench_conn_init(&c, r->peer->ports
                         ? r->peer->ports[w->index % r->peer->n_ports]
                         : r->peer->port);
  char req[1024];
  bench_conn_open(&c);
  pthread_barrier_wait(&r->ready);
  for (long i = 0;; i++) {
    size_t len =
        r->peer->request(r->peer, r->level, w->index, i, req, sizeof req);
    int64_t t0 = mono_ns();
    if (t0 >= r->measure_until)
      break;
    int status = bench_conn_roundtrip(&c, req, len, NULL, NULL);
    int64_t t1 = mono_ns();
    if (status > 0)
      w->answers++;
    if (status == r->peer->ok_status)
      w->acked++;
    if (t0 < r->measure_from)
      continue; /* warm-up */
    if (status == r->peer->ok_status) {
      if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 4096;
        if (!(w->lat_ns = realloc(w->lat_ns, w->cap * sizeof *w->lat_ns)))
          abort();
      }
      w->lat_ns[w->n++] = t1 - t0;
    } else {
      w->failed++;
      if (!w->first_bad_status)
        w->first_bad_status = status;
    }
  }
  bench_conn_release(&c);
  return NULL;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Runs one level; returns the number of failed submissions. */
static long run_level(struct peer *p, int level, const struct opts *o) {
  struct run r = {.peer = p, .level = level};
  struct worker *w = calloc((size_t)level, sizeof *w);
  pthread_t *th = calloc((size_t)level, sizeof *th);
  if (!w || !th)
    abort();
  pthread_barrier_init(&r.ready, NULL, (unsigned)level + 1);
  /* Without a warm-up every request is measured: read the store counters
   * before any client runs, so the smoke run can match them exactly. */
  bool observed = false;
  double cpu0 = -1;
  if (o->warmup_s <= 0 && p->observe) {
    p->observe(p, level, true);
    observed = true;
  }
  if (o->warmup_s <= 0 && p->cpu)
    cpu0 = p->cpu(p);
  /* generous stacks are not needed: 256 KiB keeps 1024 clients cheap */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < level; i++) {
    w[i].run = &r;
    w[i].index = i;
    if (pthread_create(&th[i], &attr, worker_main, &w[i]) != 0)
      die("cannot start client thread %d", i);
  }
  pthread_attr_destroy(&attr);
  /* Deadlines are set while the clients wait at the barrier. */
  int64_t now = mono_ns();
  r.measure_from = now + (int64_t)(o->warmup_s * 1e9);
  r.measure_until = r.measure_from + (int64_t)(o->seconds * 1e9);
  /* The store counters around the measured window only: read them when the
   * warm-up ends. */
  pthread_barrier_wait(&r.ready);
  int64_t wait_ns = r.measure_from - mono_ns();
  if (wait_ns > 0) {
    struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
    nanosleep(&ts, NULL);
  }
  if (p->observe && !observed)
    p->observe(p, level, true);
  if (p->cpu && o->warmup_s > 0)
    cpu0 = p->cpu(p);
  for (int i = 0; i < level; i++)
    pthread_join(th[i], NULL);
  int64_t end = mono_ns();
  double cpu1 = p->cpu && cpu0 >= 0 ? p->cpu(p) : -1;
  pthread_barrier_destroy(&r.ready);

  size_t total = 0;
  long failed = 0;
  int bad = 0;
  for (int i = 0; i < level; i++) {
    total += w[i].n;
    failed += w[i].failed;
    p->acked += w[i].acked;
    if (!bad)
      bad = w[i].first_bad_status;
  }
  int64_t *all = malloc((total ? total : 1) * sizeof *all);
  if (!all)
    abort();
  size_t k = 0;
  for (int i = 0; i < level; i++) {
    memcpy(all + k, w[i].lat_ns, w[i].n * sizeof *all);
    k += w[i].n;
    free(w[i].lat_ns);
  }
  qsort(all, total, sizeof *all, cmp_i64);
  /* Requests started before measure_until finish after it: divide by the
   * time up to the last answer. */
  double secs = (double)(end - r.measure_from) / 1e9;
  double p50 = total ? (double)all[(total - 1) / 2] / 1e6 : 0;
  double p99 =
      total ? (double)all[(size_t)((double)(total - 1) * 0.99)] / 1e6 : 0;
  for (int l = 0; l < o->n_levels; l++)
    if (o->levels[l] == level) {
      p->rate[l] = (double)total / secs;
      p->cpu_job[l] =
          cpu1 >= 0 && total ? (cpu1 - cpu0) / (double)total : -1;
    }
  if (o->quiet) {
    free(all);
    free(w);
    free(th);
    return failed + (total == 0);
  }
  printf("%s_c%d_rate %.0f jobs/s\n", p->prefix, level, (double)total / secs);
  printf("%s_c%d_p50 %.2f ms\n", p->prefix, level, p50);
  printf("%s_c%d_p99 %.2f ms\n", p->prefix, level, p99);
  printf("%s_c%d_submitted %zu jobs\n", p->prefix, level, total);
  printf("%s_c%d_failed %ld requests\n", p->prefix, level, failed);
  if (failed)
    fprintf(stderr,
            "bench-submit: %s c%d: %ld submissions failed (first status %d)\n",
            p->name, level, failed, bad);
  p->cpu_s = -1;
  if (p->observe)
    p->observe(p, level, false);
  /* CPU per job moves far less with the machine's load than the rate */
  if (p->cpu_s >= 0 && total)
    printf("%s_c%d_cpu_per_job %.1f us/job\n", p->prefix, level,
           p->cpu_s * 1e6 / (double)total);
  if (o->smoke && p->committed >= 0 && p->committed != (long long)total) {
    fprintf(
        stderr,
        "bench-submit: %s c%d: %zu submissions acknowledged, %lld committed\n",
        p->name, level, total, p->committed);
    failed++;
  }
  fflush(stdout);
  free(all);
  free(w);
  free(th);
  return failed + (total == 0);
}

/* ---- the plain and the traced broker, slice by slice -------------------
 *
 * Both brokers' clients are connected at once, but only one side sends at
 * a time: the turn passes every slice (--slice-ms, 100 ms) in ABBA order
 * (each pair of slices swaps which side goes first, and so does each
 * round), so the two are measured within the same tenths of a second of
 * the machine's load rather than seconds apart.  A request counts for the
 * slice in which it was sent; the few in flight when the turn passes end
 * during the other side's first milliseconds, the same for both.  Both
 * daemons start from empty databases and grow together, so they see the
 * same db size and the same share of WAL checkpoints.  A round is
 * `seconds` of turns per side; its ratio is the traced side's rate over
 * the plain side's in that round, its CPU per job the daemon's CPU over
 * the whole round (its idle turns too: the exporter's last flush of a
 * turn falls in the other side's) per acknowledged job. */

#define MAX_SLICES 4096
#define PAIR_PAUSE (-2) /* state: no side's turn */
#define PAIR_STOP (-1)  /* state: the clients end */

struct pair_run {
  struct peer *p[2];
  int level;
  int state; /* atomic: slice * 2 + side whose turn it is, or the above */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_barrier_t ready;
  signed char slice_round[MAX_SLICES]; /* -1: warm-up, not measured */
  long slice_ok[MAX_SLICES];           /* atomic: acknowledged per turn */
  int64_t slice_ns[MAX_SLICES];        /* each turn's length */
};

struct pair_worker {
  struct pair_run *run;
  int side, index;
  int64_t *lat_ns; /* measured successes */
  size_t n, cap;
  long ok[MAX_ROUNDS], failed[MAX_ROUNDS]; /* measured, per round */
  long acked; /* successful answers, warm-up included */
  int first_bad_status;
};

static bool pair_my_turn(int st, int side) {
  return st >= 0 && (st & 1) == side;
}

static void *pair_worker_main(void *arg) {
  struct pair_worker *w = arg;
  struct pair_run *r = w->run;
  struct peer *p = r->p[w->side];
  struct bench_conn c;
  bench_conn_init(&c, p->port);
  char req[1024];
  bench_conn_open(&c);
  pthread_barrier_wait(&r->ready);
  for (long i = 0;;) {
    int st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (st == PAIR_STOP)
      break;
    if (!pair_my_turn(st, w->side)) {
      pthread_mutex_lock(&r->mu);
      while ((st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE)) !=
                 PAIR_STOP &&
             !pair_my_turn(st, w->side))
        pthread_cond_wait(&r->cv, &r->mu);
      pthread_mutex_unlock(&r->mu);
      continue;
    }
    size_t len = p->request(p, r->level, w->index, i++, req, sizeof req);
    int64_t t0 = mono_ns();
    int status = bench_conn_roundtrip(&c, req, len, NULL, NULL);
    int64_t t1 = mono_ns();
    if (status == p->ok_status)
      w->acked++;
    int rd = r->slice_round[st >> 1];
    if (rd < 0)
      continue; /* warm-up */
    if (status == p->ok_status) {
      w->ok[rd]++;
      __atomic_add_fetch(&r->slice_ok[st >> 1], 1, __ATOMIC_RELAXED);
      if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 4096;
        if (!(w->lat_ns = realloc(w->lat_ns, w->cap * sizeof *w->lat_ns)))
          abort();
      }
      w->lat_ns[w->n++] = t1 - t0;
    } else {
      w->failed[rd]++;
      if (!w->first_bad_status)
        w->first_bad_status = status;
    }
  }
  bench_conn_release(&c);
  return NULL;
}

static void pair_set(struct pair_run *r, int st) {
  pthread_mutex_lock(&r->mu);
  __atomic_store_n(&r->state, st, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void sleep_until(int64_t t) {
  struct timespec ts = {t / 1000000000, t % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* Measures the pair at one level (index li): rounds of slices, as above.
 * Fills rate[side][round] (jobs/s) and cpu[side][round] (CPU seconds per
 * job, -1 unknown), prints each side's figures for the level; returns the
 * failed submissions. */
static long run_pair(struct peer *pp[2], int li, int rounds, double slice_ms,
                     const struct opts *o, double rate[2][MAX_ROUNDS],
                     double cpu[2][MAX_ROUNDS]) {
  int level = o->levels[li];
  struct pair_run *r = calloc(1, sizeof *r);
  struct pair_worker *w = calloc(2 * (size_t)level, sizeof *w);
  pthread_t *th = calloc(2 * (size_t)level, sizeof *th);
  if (!r || !w || !th)
    abort();
  r->p[0] = pp[0];
  r->p[1] = pp[1];
  r->level = level;
  r->state = PAIR_PAUSE;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  pthread_barrier_init(&r->ready, NULL, 2 * (unsigned)level + 1);
  /* the slices: a warm-up turn each (when there is a warm-up), then per
   * round `per` pairs of slices of `sl` ns per side */
  int per = (int)(o->seconds * 1000 / slice_ms + 0.5);
  if (per < 1)
    per = 1;
  if (2 + 2 * per * rounds > MAX_SLICES) {
    per = (MAX_SLICES - 2) / (2 * rounds);
  }
  int64_t sl = (int64_t)(o->seconds * 1e9 / per);
  int n_sl = 0;
  int side_of[MAX_SLICES];
  int64_t len_of[MAX_SLICES];
  if (o->warmup_s > 0)
    for (int k = 0; k < 2; k++) {
      r->slice_round[n_sl] = -1;
      side_of[n_sl] = k;
      len_of[n_sl++] = (int64_t)(o->warmup_s * 1e9);
    }
  int first_measured = n_sl;
  for (int rd = 0; rd < rounds; rd++)
    for (int k = 0; k < per; k++)
      for (int j = 0; j < 2; j++) {
        r->slice_round[n_sl] = (signed char)rd;
        side_of[n_sl] = (rd + k) % 2 ? 1 - j : j; /* ABBA, rounds too */
        len_of[n_sl++] = sl;
      }
  /* Without a warm-up every request is measured: the store counters
   * before any client runs, so the smoke run can match them exactly. */
  if (o->warmup_s <= 0)
    for (int k = 0; k < 2; k++)
      if (pp[k]->observe)
        pp[k]->observe(pp[k], level, true);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < 2 * level; i++) {
    w[i].run = r;
    w[i].side = i / level;
    w[i].index = i % level;
    if (pthread_create(&th[i], &attr, pair_worker_main, &w[i]) != 0)
      die("cannot start client thread %d", i);
  }
  pthread_attr_destroy(&attr);
  pthread_barrier_wait(&r->ready);
  double cpu_at[2][MAX_ROUNDS + 1];
  double sink0 = -1, sink1 = -1;
  int64_t busy[2][MAX_ROUNDS] = {{0}}; /* each side's turns, ns */
  int unsettled = 0;                   /* rounds a WAL was not restarted */
  for (int s = 0; s < n_sl; s++) {
    if (s == first_measured) {
      pair_set(r, PAIR_PAUSE); /* the warm-up's last requests end */
      usleep(20000);
      if (o->warmup_s > 0)
        for (int k = 0; k < 2; k++)
          if (pp[k]->observe)
            pp[k]->observe(pp[k], level, true);
      sink0 = sink_cpu_s(traced_sink);
    }
    int rd = r->slice_round[s];
    if (rd >= 0 && (s == first_measured || r->slice_round[s - 1] != rd)) {
      /* a round begins: both daemons idle and their WALs restarted */
      if (s != first_measured) {
        pair_set(r, PAIR_PAUSE);
        usleep(20000);
      }
      for (int k = 0; k < 2; k++)
        if (pp[k]->settle && !pp[k]->settle(pp[k]))
          unsettled++;
      for (int k = 0; k < 2; k++)
        cpu_at[k][rd] = pp[k]->cpu ? pp[k]->cpu(pp[k]) : -1;
    }
    int64_t t0 = mono_ns();
    pair_set(r, s * 2 + side_of[s]);
    sleep_until(t0 + len_of[s]);
    r->slice_ns[s] = mono_ns() - t0;
    if (rd >= 0)
      busy[side_of[s]][rd] += r->slice_ns[s];
  }
  pair_set(r, PAIR_STOP);
  for (int i = 0; i < 2 * level; i++)
    pthread_join(th[i], NULL);
  for (int k = 0; k < 2; k++)
    cpu_at[k][rounds] = pp[k]->cpu ? pp[k]->cpu(pp[k]) : -1;
  sink1 = sink_cpu_s(traced_sink);
  pthread_barrier_destroy(&r->ready);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);

  long failed_all = 0;
  for (int k = 0; k < 2; k++) {
    struct peer *p = pp[k];
    long ok = 0, failed = 0;
    int bad = 0;
    int64_t t_all = 0;
    size_t total = 0;
    for (int rd = 0; rd < rounds; rd++) {
      long okr = 0;
      for (int i = k * level; i < (k + 1) * level; i++) {
        okr += w[i].ok[rd];
        failed += w[i].failed[rd];
      }
      ok += okr;
      t_all += busy[k][rd];
      rate[k][rd] =
          busy[k][rd] > 0 ? (double)okr * 1e9 / (double)busy[k][rd] : 0;
      cpu[k][rd] = okr && cpu_at[k][rd] >= 0 && cpu_at[k][rd + 1] >= 0
                       ? (cpu_at[k][rd + 1] - cpu_at[k][rd]) / (double)okr
                       : -1;
    }
    for (int i = k * level; i < (k + 1) * level; i++) {
      total += w[i].n;
      p->acked += w[i].acked;
      if (!bad)
        bad = w[i].first_bad_status;
    }
    int64_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
      abort();
    size_t n = 0;
    for (int i = k * level; i < (k + 1) * level; i++) {
      memcpy(all + n, w[i].lat_ns, w[i].n * sizeof *all);
      n += w[i].n;
      free(w[i].lat_ns);
    }
    qsort(all, total, sizeof *all, cmp_i64);
    double secs = (double)t_all / 1e9;
    p->rate[li] = secs > 0 ? (double)ok / secs : 0;
    p->cpu_job[li] = ok && cpu_at[k][rounds] >= 0 && cpu_at[k][0] >= 0
                         ? (cpu_at[k][rounds] - cpu_at[k][0]) / (double)ok
                         : -1;
    printf("# %s\n", p->name);
    printf("%s_c%d_rate %.0f jobs/s\n", p->prefix, level, p->rate[li]);
    printf("%s_c%d_p50 %.2f ms\n", p->prefix, level,
           total ? (double)all[(total - 1) / 2] / 1e6 : 0);
    printf("%s_c%d_p99 %.2f ms\n", p->prefix, level,
           total ? (double)all[(size_t)((double)(total - 1) * 0.99)] / 1e6
                 : 0);
    printf("%s_c%d_submitted %ld jobs\n", p->prefix, level, ok);
    printf("%s_c%d_failed %ld requests\n", p->prefix, level, failed);
    if (failed)
      fprintf(stderr,
              "bench-submit: %s c%d: %ld submissions failed (first status "
              "%d)\n",
              p->name, level, failed, bad);
    p->cpu_s = -1;
    if (p->observe)
      p->observe(p, level, false);
    if (p->cpu_s >= 0 && ok)
      printf("%s_c%d_cpu_per_job %.1f us/job\n", p->prefix, level,
             p->cpu_s * 1e6 / (double)ok);
    if (k == 1 && sink0 >= 0 && sink1 >= 0 && ok)
      printf("%s_c%d_sink_cpu_per_job %.1f us/job\n", p->prefix, level,
             (sink1 - sink0) * 1e6 / (double)ok);
    if (o->smoke && p->committed >= 0 && p->committed != (long long)ok) {
      fprintf(stderr,
              "bench-submit: %s c%d: %ld submissions acknowledged, %lld "
              "committed\n",
              p->name, level, ok, p->committed);
      failed++;
    }
    failed_all += failed + (ok == 0);
    free(all);
  }
  printf("# c%d: %d rounds of %d turns of %.0f ms per side, ABBA, each "
         "begun with both WALs checkpointed and restarted%s\n",
         level, rounds, per, (double)sl / 1e6,
         unsettled ? " (but for some: a checkpoint was busy)" : "");
  if (o->turns) /* each turn's rate, in the order they ran */
    for (int rd = 0; rd < rounds; rd++) {
      printf("# c%d round %d turns (p plain, t traced, jobs/s):", level,
             rd + 1);
      for (int s = first_measured; s < n_sl; s++)
        if (r->slice_round[s] == rd)
          printf(" %c%.0f", side_of[s] ? 't' : 'p',
                 r->slice_ns[s] > 0 ? (double)r->slice_ok[s] * 1e9 /
                                          (double)r->slice_ns[s]
                                    : 0.0);
      printf("\n");
    }
  fflush(stdout);
  free(w);
  free(th);
  free(r);
  return failed_all;
}

/* ---- main
 * ------------------------------------------------------------------------ */

/* The median of n values (n <= MAX_ROUNDS; the mean of the middle two
 * when n is even). */
static double median_of(const double *v, int n) {
  double s[MAX_ROUNDS];
  if (n < 1)
    return 0;
  if (n > MAX_ROUNDS)
    n = MAX_ROUNDS;
  memcpy(s, v, (size_t)n * sizeof *s);
  for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      double t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: bench-submit [--quick | --smoke] [--seconds S] [--levels "
      "1,16,64]\n"
      "                    [--tradewindd PATH] [--config FILE] [--keep]\n"
      "                    [--auth tokens|open] [--no-slurm] [--slurm-dir D]\n"
      "                    [--no-traced] [--rounds N] [--slice-ms MS]\n"
      "                    [--turns]\n"
      "                    [--pg [--pg-dir D] [--replicas N]]\n"
      "\n"
      "Measures durable job submissions per second through the REST API of a\n"
      "tradewindd it starts itself (temp db, port 0), at each concurrency "
      "level:\n"
      "N client threads, one keep-alive connection each.\n"
      "\n"
      "  --quick        1 s per level and round, 6 rounds (under a minute in "
      "all)\n"
      "  --smoke        1 s at concurrency 4; fails unless every submission "
      "succeeded\n"
      "  --seconds S    measured seconds per level (default 10)\n"
      "  --levels LIST  concurrency levels (default 1,16,64)\n"
      "  --tradewindd P the daemon to start (default: the one built with this "
      "bench)\n"
      "  --config FILE  its config (default: the defaults, log level warn)\n"
      "  --keep         keep the temp dir (db, log)\n"
      "  --auth MODE    tokens (default: a bearer token on every submission,\n"
      "                 each audited, checked in the db at the end) or open\n"
      "  --no-slurm     do not measure Slurm (slurmrestd, sbatch) beside it\n"
      "  --no-traced    do not measure the broker again with tracing on\n"
      "  --rounds N     plain and traced rounds per level (default 4), "
      "each of\n"
      "                 turns of --slice-ms per side in ABBA order\n"
      "  --slice-ms MS  one side's turn within a round (default 100)\n"
      "  --turns        print each turn's rate (# lines)\n"
      "  --slurm-dir D  the scripts/slurm.sh cluster to use (default "
      "$TW_SLURM_DIR,\n"
      "                 else .state/slurm); --smoke measures Slurm only with "
      "it\n"
      "  --pg           also N tradewindd replicas on one PostgreSQL (the "
      "cluster\n"
      "                 of scripts/postgres.sh), clients dealt round-robin; "
      "skipped\n"
      "                 with the reason when PostgreSQL cannot start\n"
      "  --pg-dir D     its state dir (default $TW_PG_DIR, else "
      ".state/postgres)\n"
      "  --replicas N   how many replicas with --pg (default 2, at most 4)\n");
}

static void parse_levels(struct opts *o, const char *s) {
  o->n_levels = 0;
  for (const char *p = s; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > MAX_THREADS || o->n_levels == MAX_LEVELS) {
      fprintf(stderr,
              "bench-submit: --levels: expected up to %d numbers 1..%d, got "
              "\"%s\"\n",
              MAX_LEVELS, MAX_THREADS, s);
      exit(2);
    }
    o->levels[o->n_levels++] = (int)v;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') {
      fprintf(stderr, "bench-submit: --levels: bad list \"%s\"\n", s);
      exit(2);
    }
  }
}

int main(int argc, char **argv) {
  struct opts o = {.tradewindd = TW_TRADEWINDD_PATH,
                   .levels = {1, 16, 64},
                   .n_levels = 3,
                   .seconds = 10,
                   .warmup_s = 1,
                   .replicas = 2,
                   .rounds = 4,
                   .slice_ms = 100};
  const char *env = getenv("TRADEWINDD");
  if (env && *env)
    o.tradewindd = env;
  bool seconds_set = false, levels_set = false, no_slurm = false;
  bool quick = false, rounds_set = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      /* six rounds of 1 s per side (ten turns each) per level: a median
       * of six rounds moves less than one of four */
      o.seconds = 1;
      o.warmup_s = 0.4;
      quick = true;
    } else if (!strcmp(a, "--smoke")) {
      o.smoke = true;
    } else if (!strcmp(a, "--keep")) {
      o.keep = true;
    } else if (!strcmp(a, "--no-traced")) {
      o.no_traced = true;
    } else if (!strcmp(a, "--seconds") && i + 1 < argc) {
      o.seconds = strtod(argv[++i], NULL);
      seconds_set = true;
      if (!(o.seconds > 0 && o.seconds <= 3600)) {
        fprintf(stderr, "bench-submit: --seconds: expected 0 < S <= 3600\n");
        return 2;
      }
    } else if (!strcmp(a, "--levels") && i + 1 < argc) {
      parse_levels(&o, argv[++i]);
      levels_set = true;
    } else if (!strcmp(a, "--tradewindd") && i + 1 < argc) {
      o.tradewindd = argv[++i];
    } else if (!strcmp(a, "--config") && i + 1 < argc) {
      o.config = argv[++i];
    } else if (!strcmp(a, "--auth") && i + 1 < argc) {
      const char *m = argv[++i];
      if (strcmp(m, "tokens") && strcmp(m, "open")) {
        fprintf(stderr, "bench-submit: --auth: expected tokens or open\n");
        return 2;
      }
      o.open_auth = !strcmp(m, "open");
    } else if (!strcmp(a, "--pg")) {
      o.pg = true;
    } else if (!strcmp(a, "--pg-dir") && i + 1 < argc) {
      o.pg_dir = argv[++i];
      o.pg = true;
    } else if (!strcmp(a, "--replicas") && i + 1 < argc) {
      o.replicas = atoi(argv[++i]);
      o.pg = true;
      if (o.replicas < 1 || o.replicas > MAX_REPLICAS) {
        fprintf(stderr, "bench-submit: --replicas: expected 1..%d\n",
                MAX_REPLICAS);
        return 2;
      }
    } else if (!strcmp(a, "--rounds") && i + 1 < argc) {
      o.rounds = atoi(argv[++i]);
      rounds_set = true;
      if (o.rounds < 1 || o.rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench-submit: --rounds: expected 1..%d\n",
                MAX_ROUNDS);
        return 2;
      }
    } else if (!strcmp(a, "--slice-ms") && i + 1 < argc) {
      o.slice_ms = strtod(argv[++i], NULL);
      if (!(o.slice_ms >= 10 && o.slice_ms <= 60000)) {
        fprintf(stderr, "bench-submit: --slice-ms: expected 10..60000\n");
        return 2;
      }
    } else if (!strcmp(a, "--turns")) {
      o.turns = true;
    } else if (!strcmp(a, "--no-slurm")) {
      no_slurm = true;
    } else if (!strcmp(a, "--slurm-dir") && i + 1 < argc) {
      o.slurm_dir = argv[++i];
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "bench-submit: unknown or incomplete option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (quick && !rounds_set)
    o.rounds = 6;
  /* the smoke run stays a check of the broker unless a cluster is named */
  o.slurm = !no_slurm && (!o.smoke || o.slurm_dir);
  if (o.smoke) {
    if (!levels_set) {
      o.levels[0] = 4;
      o.n_levels = 1;
    }
    if (!seconds_set)
      o.seconds = 1;
    o.warmup_s = 0;
  }
  if (access(o.tradewindd, X_OK) != 0) {
    printf("SKIPPED: no tradewindd at %s\n", o.tradewindd);
    return 77;
  }
  signal(SIGPIPE, SIG_IGN);

  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  printf("# bench-submit %s, %ld cpus, %.1f s per level after %.1f s warm-up\n",
         date, sysconf(_SC_NPROCESSORS_ONLN), o.seconds, o.warmup_s);

  long failed = 0;
  /* the broker plain and traced run side by side, level by level one after
   * the other, so the load of the machine weighs on both alike */
  struct peer *pair[2] = {&PEERS[0], &PEERS[1]};
  for (int k = 0; k < 2; k++) {
    int sr = pair[k]->start(pair[k], &o);
    if (sr > 0) {
      pair[k]->skipped = true;
      continue;
    }
    if (sr != 0) {
      fprintf(stderr, "bench-submit: %s did not start\n", pair[k]->name);
      pair[k]->stop(pair[k], true);
      if (k)
        pair[0]->stop(pair[0], true);
      return 1;
    }
  }
  /* rounds per level (--rounds, 4), plain and traced one after the other,
   * the order swapped each round (plain first in rounds 1 and 3, traced in
   * 2 and 4, so going first or second weighs on both alike): one round
   * alone moves by more than the difference measured on a shared
   * machine.  Each round's two figures come from the same few seconds, so
   * their ratio is the round's comparison; the median of those ratios is
   * the figure (rounds printed as # lines; the key lines above them are
   * the last round's) */
  int rounds = o.smoke || pair[1]->skipped ? 1 : o.rounds;
  double med[2][MAX_LEVELS] = {{0}}, cmed[2][MAX_LEVELS] = {{0}};
  double rmed[MAX_LEVELS] = {0}, crmed[MAX_LEVELS] = {0};
  double rlo[MAX_LEVELS] = {0}, rhi[MAX_LEVELS] = {0};
  for (int l = 0; l < o.n_levels; l++) {
    double rr[2][MAX_ROUNDS] = {{0}}, cc[2][MAX_ROUNDS] = {{0}};
    double ratio[MAX_ROUNDS] = {0}, cratio[MAX_ROUNDS] = {0};
    int nr = 0, ncr = 0;
    if (pair[1]->skipped) {
      failed += run_level(pair[0], o.levels[l], &o);
      rr[0][0] = pair[0]->rate[l];
      cc[0][0] = pair[0]->cpu_job[l];
    } else {
      failed += run_pair(pair, l, rounds, o.slice_ms, &o, rr, cc);
    }
    for (int rd = 0; rd < rounds && !pair[1]->skipped; rd++) {
      if (rr[0][rd] <= 0 || rr[1][rd] <= 0)
        continue;
      ratio[nr] = rr[1][rd] / rr[0][rd];
      bool cpu_ok = cc[0][rd] > 0 && cc[1][rd] > 0;
      if (cpu_ok)
        cratio[ncr++] = cc[0][rd] / cc[1][rd];
      printf("# c%d round %d (%s first): plain %.0f jobs/s %.1f us/job, "
             "traced %.0f jobs/s %.1f us/job, ratio %.3f, cpu %.3f\n",
             o.levels[l], rd + 1, rd % 2 ? "traced" : "plain", rr[0][rd],
             cc[0][rd] * 1e6, rr[1][rd], cc[1][rd] * 1e6, ratio[nr],
             cpu_ok ? cc[0][rd] / cc[1][rd] : 0.0);
      rlo[l] = nr == 0 || ratio[nr] < rlo[l] ? ratio[nr] : rlo[l];
      rhi[l] = nr == 0 || ratio[nr] > rhi[l] ? ratio[nr] : rhi[l];
      nr++;
    }
    fflush(stdout);
    o.quiet = false;
    for (int k = 0; k < 2; k++) {
      med[k][l] = median_of(rr[k], rounds);
      cmed[k][l] = median_of(cc[k], rounds);
    }
    rmed[l] = median_of(ratio, nr);
    crmed[l] = median_of(cratio, ncr);
  }
  for (int k = 0; k < 2; k++)
    if (!pair[k]->skipped) {
      failed += pair[k]->check(pair[k], &o);
      pair[k]->stop(pair[k], o.keep || failed);
    }
  for (size_t pi = 2; pi < sizeof PEERS / sizeof PEERS[0]; pi++) {
    struct peer *p = &PEERS[pi];
    int sr = p->start(p, &o);
    if (sr > 0) {
      p->skipped = true;
      continue;
    }
    if (sr != 0) {
      fprintf(stderr, "bench-submit: %s did not start\n", p->name);
      p->stop(p, true);
      return 1;
    }
    printf("# %s\n", p->name);
    for (int l = 0; l < o.n_levels; l++)
      failed +=
          p->run ? p->run(p, o.levels[l], &o) : run_level(p, o.levels[l], &o);
    if (p->check)
      failed += p->check(p, &o);
    p->stop(p, o.keep || failed);
  }
  cluster_finish(o.keep);
  /* tracing's cost: the median of the rounds' traced-over-plain ratios
   * (the goal is at least 0.95 at every level) */
  bool goal = true, any = false;
  for (int l = 0; !PEERS[1].skipped && l < o.n_levels; l++)
    if (med[0][l] > 0 && med[1][l] > 0 && rmed[l] > 0) {
      printf("submit_c%d_rate_median %.0f jobs/s\n", o.levels[l], med[0][l]);
      printf("submit_traced_c%d_rate_median %.0f jobs/s\n", o.levels[l],
             med[1][l]);
      printf("# c%d: ratios of %d rounds from %.3f to %.3f\n", o.levels[l],
             rounds, rlo[l], rhi[l]);
      printf("ratio_traced_vs_untraced_c%d %.3f x\n", o.levels[l], rmed[l]);
      any = true;
      goal = goal && rmed[l] >= 0.95;
      if (cmed[0][l] > 0 && cmed[1][l] > 0 && crmed[l] > 0) {
        printf("submit_c%d_cpu_per_job_median %.1f us/job\n", o.levels[l],
               cmed[0][l] * 1e6);
        printf("submit_traced_c%d_cpu_per_job_median %.1f us/job\n",
               o.levels[l], cmed[1][l] * 1e6);
        printf("ratio_traced_vs_untraced_cpu_c%d %.3f x\n", o.levels[l],
               crmed[l]);
      }
    }
  if (any)
    printf("# traced: median ratio >= 0.95 at every level: %s\n",
           goal ? "met" : "NOT met");
  /* the broker's rate beside each peer's, level by level */
  for (size_t pi = 2; pi < sizeof PEERS / sizeof PEERS[0]; pi++)
    for (int l = 0; !PEERS[pi].skipped && l < o.n_levels; l++)
      if (PEERS[0].rate[l] > 0 && PEERS[pi].rate[l] > 0 &&
          PEERS[pi].broker_side)
        printf("ratio_%s_vs_%s_c%d %.2f x\n", PEERS[pi].prefix,
               PEERS[0].prefix, o.levels[l],
               PEERS[pi].rate[l] / PEERS[0].rate[l]);
      else if (PEERS[0].rate[l] > 0 && PEERS[pi].rate[l] > 0)
        printf("ratio_%s_vs_%s_c%d %.2f x\n", PEERS[0].prefix, PEERS[pi].prefix,
               o.levels[l], PEERS[0].rate[l] / PEERS[pi].rate[l]);
  if (o.smoke)
    printf("%s\n",
           failed ? "smoke: FAILED" : "smoke: every submission succeeded");
  return failed ? 1 : 0;
}
