/* bench_frontdoor.c - latency of the probes and of an honest client while
 * the front door is attacked (issue 16; docs/benchmarks.md).
 *
 * Starts its own tradewindd (tokens required, the api: defaults), then
 * holds 5,000 idle connections from 127.0.0.1 and runs a 1,000-connection
 * slowloris from 127.0.0.3 (a header byte per connection every half
 * second, what the daemon cuts reconnected at once).  Meanwhile a client
 * on 127.0.0.2 alternates GET /healthz and an authenticated GET /v1/jobs,
 * each on a new connection as a prober's would be, 50 a second, and the
 * bench samples the daemon's threads and RSS from /proc, and the CPU time
 * the daemon spent over the attack (a figure the machine's load does not
 * scatter as it does the latencies).  One line per figure: `key value
 * unit`.  Exit 1 when a request of the honest client
 * went unanswered.
 *
 *   bench-frontdoor            # 30 s of attack
 *   bench-frontdoor --quick    # 10 s
 *   bench-frontdoor --smoke    # 3 s, fewer connections (ctest)
 */
#define _GNU_SOURCE /* pipe2, mkdtemp under strict C11 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_IDLE 5000
#define MAX_SLOW 1000

static int port;
static pid_t daemon_pid;
static char dir[256], token[128];
static int n_idle = MAX_IDLE, n_slow = MAX_SLOW;
static atomic_bool stop;

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *msg) {
  fprintf(stderr, "bench-frontdoor: %s\n", msg);
  if (daemon_pid > 0)
    kill(daemon_pid, SIGKILL);
  exit(2);
}

static int connect_from(const char *src, bool nonblock) {
  int fd = socket(
      AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in s = {.sin_family = AF_INET};
  inet_pton(AF_INET, src, &s.sin_addr);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&s, sizeof s) ||
      (connect(fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  if (!nonblock) {
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/* One request on a new connection from 127.0.0.2: the status, 0 when no
 * complete status line came. */
static int probe(const char *req) {
  int fd = connect_from("127.0.0.2", false);
  if (fd < 0)
    return 0;
  size_t len = strlen(req);
  char buf[4096];
  size_t n = 0;
  int status = 0;
  if (send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len) {
    ssize_t k;
    while (n + 1 < sizeof buf &&
           (k = recv(fd, buf + n, sizeof buf - 1 - n, 0)) > 0)
      n += (size_t)k; /* Connection: close: read to the end */
    buf[n] = '\0';
    if (sscanf(buf, "HTTP/1.1 %d", &status) != 1)
      status = 0;
  }
  close(fd);
  return status;
}

static void *slowloris_main(void *arg) {
  (void)arg;
  static int fds[MAX_SLOW];
  static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  for (int i = 0; i < n_slow; i++)
    fds[i] = -1;
  while (!atomic_load(&stop)) {
    for (int i = 0; i < n_slow; i++) {
      char b[512];
      if (fds[i] >= 0) {
        ssize_t k = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
        if (k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          close(fds[i]);
          fds[i] = -1;
        } else {
          (void)!send(fds[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      if (fds[i] < 0 && (fds[i] = connect_from("127.0.0.3", true)) >= 0) {
        struct pollfd p = {.fd = fds[i], .events = POLLOUT};
        poll(&p, 1, 20);
        (void)!send(fds[i], head, sizeof head - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    usleep(500 * 1000);
  }
  for (int i = 0; i < n_slow; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return NULL;
}

static long proc_field(const char *name) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)daemon_pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t nl = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, name, nl) && line[nl] == ':')
      v = strtol(line + nl + 1, NULL, 10);
  if (f)
    fclose(f);
  return v;
}

/* The daemon's CPU time (user and system) in seconds, from /proc. */
static double daemon_cpu_s(void) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)daemon_pid);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* after the command's name */
  unsigned long long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                   &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void start_daemon(const char *tradewindd) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tw-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    die("mkdtemp failed");
  char cfg[400], db[400], log[400];
  snprintf(cfg, sizeof cfg, "%s/tradewind.yaml", dir);
  snprintf(db, sizeof db, "%s/tradewind.db", dir);
  snprintf(log, sizeof log, "%s/tradewindd.log", dir);
  FILE *f = fopen(cfg, "w");
  if (!f)
    die("cannot write the config");
  /* the api: defaults; tokens with the per-token rate limit off */
  fputs("log:\n  level: warn\nauth:\n  mode: tokens\n  rate_limit_per_s: 0\n",
        f);
  fclose(f);
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC))
    die("pipe failed");
  int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_t parent = getpid();
  daemon_pid = fork();
  if (daemon_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    dup2(pfd[1], 1);
    if (logfd >= 0)
      dup2(logfd, 2);
    execl(tradewindd, tradewindd, "--config", cfg, "--listen", "127.0.0.1:0",
          "--db", db, (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  if (logfd >= 0)
    close(logfd);
  char line[256];
  size_t len = 0;
  while (!memchr(line, '\n', len) && len + 1 < sizeof line) {
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    if (poll(&p, 1, 20000) <= 0)
      die("the daemon did not start");
    ssize_t k = read(pfd[0], line + len, sizeof line - 1 - len);
    if (k <= 0)
      die("the daemon exited at start");
    len += (size_t)k;
  }
  line[len] = '\0';
  const char *colon = strrchr(line, ':');
  if (strncmp(line, "listening http://", 17) || !colon)
    die("no listening line");
  port = atoi(colon + 1);
  char path[400];
  snprintf(path, sizeof path, "%s/admin.token", dir);
  f = fopen(path, "r");
  if (!f || !fgets(token, sizeof token, f))
    die("no admin token");
  fclose(f);
  token[strcspn(token, "\r\n")] = '\0';
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

static void report(const char *name, int64_t *lat, size_t n) {
  if (!n)
    return;
  qsort(lat, n, sizeof *lat, cmp_i64);
  printf("frontdoor_%s_p50 %.2f ms\n", name, (double)lat[n / 2] / 1000);
  printf("frontdoor_%s_p99 %.2f ms\n", name,
         (double)lat[((n - 1) * 99) / 100] / 1000);
  printf("frontdoor_%s_max %.2f ms\n", name, (double)lat[n - 1] / 1000);
}

int main(int argc, char **argv) {
  int seconds = 30;
  const char *tradewindd = TW_TRADEWINDD_PATH;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      seconds = 10;
    else if (!strcmp(argv[i], "--smoke"))
      seconds = 3, n_idle = 500, n_slow = 200;
    else if (!strcmp(argv[i], "--tradewindd") && i + 1 < argc)
      tradewindd = argv[++i];
    else {
      fprintf(stderr, "usage: bench-frontdoor [--quick | --smoke] "
                      "[--tradewindd PATH]\n");
      return 2;
    }
  }
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 8192) {
    rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < (rlim_t)(n_idle + n_slow + 64)) {
    printf("SKIPPED: the fd limit is %llu\n", (unsigned long long)rl.rlim_cur);
    return 77;
  }
  start_daemon(tradewindd);
  printf("# broker: %s, api: defaults, tokens; attack: %d idle from "
         "127.0.0.1, %d-connection slowloris from 127.0.0.3, %d s\n",
         tradewindd, n_idle, n_slow, seconds);
  long threads0 = proc_field("Threads");
  double cpu0 = daemon_cpu_s();
  static int idle[MAX_IDLE];
  for (int i = 0; i < n_idle; i++)
    idle[i] = connect_from("127.0.0.1", true);
  pthread_t th;
  pthread_create(&th, NULL, slowloris_main, NULL);
  usleep(500 * 1000);
  char jobs[512];
  snprintf(jobs, sizeof jobs,
           "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Connection: close\r\n\r\n",
           token);
  static const char health[] =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  size_t cap = (size_t)seconds * 50 + 16, nh = 0, nj = 0;
  int64_t *lh = calloc(cap, sizeof *lh), *lj = calloc(cap, sizeof *lj);
  long failed = 0, threads_max = 0, rss_max = 0;
  int64_t end = mono_us() + (int64_t)seconds * 1000000;
  for (size_t i = 0; mono_us() < end && nh < cap && nj < cap; i++) {
    bool h = i % 2 == 0;
    int64_t t0 = mono_us();
    int st = probe(h ? health : jobs);
    int64_t us = mono_us() - t0;
    if (st != 200)
      failed++;
    if (h)
      lh[nh++] = us;
    else
      lj[nj++] = us;
    long t = proc_field("Threads"), r = proc_field("VmRSS");
    threads_max = t > threads_max ? t : threads_max;
    rss_max = r > rss_max ? r : rss_max;
    int64_t left = 20000 - (mono_us() - t0);
    if (left > 0)
      usleep((useconds_t)left);
  }
  double cpu = daemon_cpu_s() - cpu0;
  atomic_store(&stop, true);
  pthread_join(th, NULL);
  for (int i = 0; i < n_idle; i++)
    if (idle[i] >= 0)
      close(idle[i]);
  report("healthz", lh, nh);
  report("jobs", lj, nj);
  printf("frontdoor_requests %zu requests\n", nh + nj);
  printf("frontdoor_failed %ld requests\n", failed);
  printf("frontdoor_threads_before %ld threads\n", threads0);
  printf("frontdoor_threads_max %ld threads\n", threads_max);
  printf("frontdoor_rss_max %.1f MB\n", (double)rss_max / 1024);
  printf("frontdoor_daemon_cpu %.2f s\n", cpu);
  kill(daemon_pid, SIGTERM);
  waitpid(daemon_pid, NULL, 0);
  static const char *const files[] = {"tradewind.yaml",   "tradewind.db",
                                      "tradewind.db-wal", "tradewind.db-shm",
                                      "admin.token",      "tradewindd.log",
                                      "tradewind.db.lock"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  if (rmdir(dir))
    fprintf(stderr, "bench-frontdoor: kept %s\n", dir);
  free(lh);
  free(lj);
  return failed ? 1 : 0;
}
