/* twtest_daemon.c - see twtest_daemon.h. */
/* pipe2, close_range and nftw are Linux/XSI extensions. */
#define _GNU_SOURCE
#include "tests/integration/twtest_daemon.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 20000

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

const char *twtest_daemon_binary(void) {
  static char path[1024];
  const char *env = getenv("TRADEWINDD");
  if (env && *env)
    return env;
  const char *bin = getenv("TW_BINARY_DIR");
  if (bin && *bin) {
    snprintf(path, sizeof path, "%s/tradewindd", bin);
    if (access(path, X_OK) == 0)
      return path;
  }
#ifdef TW_TRADEWINDD_PATH
  return TW_TRADEWINDD_PATH;
#else
  return "tradewindd";
#endif
}

static int write_file(const char *path, const char *text) {
  char tmp[400];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    fprintf(stderr, "twtest: cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  size_t n = strlen(text);
  int bad = fwrite(text, 1, n, f) != n;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    fprintf(stderr, "twtest: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    abort();
  if (f) {
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
      len += n;
      if (cap - len < 2) {
        cap *= 2;
        if (!(buf = realloc(buf, cap)))
          abort();
      }
    }
    fclose(f);
  }
  buf[len] = '\0';
  return buf;
}

static int init_config(struct twtest_daemon *d, const char *config_text) {
  if (config_text)
    return twtest_daemon_write_config(d, config_text);
  const char *src = getenv("TW_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/configs/tradewind.yaml",
           src && *src ? src : ".");
  if (access(path, R_OK) != 0) {
    fprintf(stderr, "twtest: cannot read %s (set TW_SOURCE_DIR)\n", path);
    return -1;
  }
  char *text = read_all(path);
  int rc = twtest_daemon_write_config(d, text);
  free(text);
  return rc;
}

int twtest_daemon_init(struct twtest_daemon *d, const char *config_text) {
  memset(d, 0, sizeof *d);
  d->out_fd = -1;
  d->override_addr = true;
  const char *tmp = getenv("TMPDIR");
  snprintf(d->dir, sizeof d->dir, "%s/tw-test-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(d->dir)) {
    fprintf(stderr, "twtest: mkdtemp %s: %s\n", d->dir, strerror(errno));
    return -1;
  }
  snprintf(d->config, sizeof d->config, "%s/tradewind.yaml", d->dir);
  snprintf(d->db, sizeof d->db, "%s/tradewind.db", d->dir);
  snprintf(d->log, sizeof d->log, "%s/tradewindd.log", d->dir);
  if (init_config(d, config_text) != 0) {
    twtest_daemon_cleanup(d, false);
    return -1;
  }
  return 0;
}

int twtest_daemon_write_config(struct twtest_daemon *d, const char *text) {
  /* The tests speak to the daemon without tokens: unless the text says
   * otherwise, the daemon runs in the open mode (never its default). */
  if (!strncmp(text, "auth:", 5) || strstr(text, "\nauth:"))
    return write_file(d->config, text);
  size_t n = strlen(text);
  char *open_text = malloc(n + 32);
  if (!open_text)
    abort();
  snprintf(open_text, n + 32, "%s%sauth:\n  mode: open\n", text,
           n && text[n - 1] != '\n' ? "\n" : "");
  int rc = write_file(d->config, open_text);
  free(open_text);
  return rc;
}

static int reap(struct twtest_daemon *d, int flags) {
  int status;
  pid_t r;
  while ((r = waitpid(d->pid, &status, flags)) < 0 && errno == EINTR) {
  }
  if (r != d->pid)
    return -1;
  d->pid = 0;
  if (d->out_fd >= 0)
    close(d->out_fd);
  d->out_fd = -1;
  d->port = 0;
  d->url[0] = '\0';
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int twtest_daemon_start(struct twtest_daemon *d) {
  const char *bin = twtest_daemon_binary();
  const char *argv[10];
  int argc = 0;
  argv[argc++] = bin;
  argv[argc++] = "--config";
  argv[argc++] = d->config;
  if (d->override_addr) {
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    argv[argc++] = "--db";
    argv[argc++] = d->db;
  }
  argv[argc] = NULL;

  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    fprintf(stderr, "twtest: pipe: %s\n", strerror(errno));
    return -1;
  }
  int logfd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (logfd < 0 || nullfd < 0) {
    fprintf(stderr, "twtest: open %s: %s\n", d->log, strerror(errno));
    close(pfd[0]);
    close(pfd[1]);
    if (logfd >= 0)
      close(logfd);
    if (nullfd >= 0)
      close(nullfd);
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "twtest: fork: %s\n", strerror(errno));
    close(pfd[0]);
    close(pfd[1]);
    close(logfd);
    close(nullfd);
    return -1;
  }
  if (pid == 0) {
    /* Only async-signal-safe calls from here to exec: the test may have
     * threads. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    dup2(nullfd, 0);
    dup2(pfd[1], 1);
    dup2(logfd, 2);
    /* No client socket of the test may leak into the daemon: a leaked copy
     * would keep a connection open across a kill. */
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
      for (int fd = 3; fd < 4096; fd++)
        close(fd);
    execv(bin, (char *const *)argv);
    static const char msg[] = "twtest: exec tradewindd failed\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
  }
  close(pfd[1]);
  close(logfd);
  close(nullfd);
  d->pid = pid;
  d->out_fd = pfd[0];

  /* Read the first stdout line. */
  char line[256];
  size_t len = 0;
  int64_t deadline = now_ms() + START_TIMEOUT_MS;
  for (;;) {
    int left = (int)(deadline - now_ms());
    if (left <= 0) {
      fprintf(stderr,
              "twtest: tradewindd did not print its address within %d ms\n",
              START_TIMEOUT_MS);
      twtest_daemon_kill(d);
      return -1;
    }
    struct pollfd p = {.fd = d->out_fd, .events = POLLIN};
    int pr = poll(&p, 1, left);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      continue;
    ssize_t n = read(d->out_fd, line + len, sizeof line - 1 - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1; /* exited before serving: the caller reaps it */
    len += (size_t)n;
    line[len] = '\0';
    char *nl = strchr(line, '\n');
    if (nl || len == sizeof line - 1) {
      if (nl)
        *nl = '\0';
      break;
    }
  }
  const char *prefix = "listening http://";
  const char *colon = strrchr(line, ':');
  /* a daemon given tls: says https */
  bool https = !strncmp(line, "listening https://", 18);
  if ((!https && strncmp(line, prefix, strlen(prefix)) != 0) || !colon) {
    fprintf(stderr, "twtest: unexpected first line from tradewindd: \"%s\"\n",
            line);
    twtest_daemon_kill(d);
    return -1;
  }
  d->port = atoi(colon + 1);
  if (d->port <= 0 || d->port > 65535) {
    fprintf(stderr, "twtest: bad port in \"%s\"\n", line);
    twtest_daemon_kill(d);
    return -1;
  }
  snprintf(d->url, sizeof d->url, "%s://127.0.0.1:%d",
           https ? "https" : "http", d->port);
  return 0;
}

int twtest_daemon_wait(struct twtest_daemon *d, int timeout_ms) {
  if (!d->pid)
    return -1;
  /* A pidfd turns "wait with a timeout" into a poll, with no sleeping. */
  int pfd = (int)syscall(SYS_pidfd_open, d->pid, 0);
  if (pfd >= 0) {
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    int64_t deadline = now_ms() + timeout_ms;
    int pr;
    do {
      int left = (int)(deadline - now_ms());
      pr = poll(&p, 1, left > 0 ? left : 0);
    } while (pr < 0 && errno == EINTR);
    close(pfd);
    return pr > 0 ? reap(d, 0) : -1;
  }
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    int rc = reap(d, WNOHANG);
    if (rc >= 0 || now_ms() >= deadline)
      return rc;
    nap_ms(10);
  }
}

int twtest_daemon_signal(struct twtest_daemon *d, int sig) {
  if (!d->pid)
    return -1;
  return kill(d->pid, sig) == 0 ? 0 : -1;
}

int twtest_daemon_stop(struct twtest_daemon *d, int timeout_ms) {
  if (!d->pid)
    return -1;
  kill(d->pid, SIGTERM);
  int rc = twtest_daemon_wait(d, timeout_ms);
  if (rc < 0) {
    fprintf(stderr,
            "twtest: tradewindd did not stop within %d ms after SIGTERM\n",
            timeout_ms);
    twtest_daemon_kill(d);
  }
  return rc;
}

void twtest_daemon_kill(struct twtest_daemon *d) {
  if (!d->pid)
    return;
  kill(d->pid, SIGKILL);
  reap(d, 0);
}

static int rm_one(const char *path, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path); /* best effort: go on with the rest */
  return 0;
}

void twtest_daemon_cleanup(struct twtest_daemon *d, bool keep) {
  twtest_daemon_kill(d);
  if (!d->dir[0])
    return;
  if (keep) {
    fprintf(stderr, "twtest: kept %s (log: %s)\n", d->dir, d->log);
    return;
  }
  nftw(d->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  d->dir[0] = '\0';
}

char *twtest_daemon_log_read(const struct twtest_daemon *d) {
  return read_all(d->log);
}

size_t twtest_daemon_log_count(const struct twtest_daemon *d,
                               const char *needle) {
  char *text = read_all(d->log);
  size_t count = 0;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    if (strstr(line, needle))
      count++;
    line = nl ? nl + 1 : NULL;
  }
  free(text);
  return count;
}

bool twtest_daemon_wait_log(const struct twtest_daemon *d, const char *needle,
                            size_t min_count, int timeout_ms) {
  /* The log is a file written by another process: look again every few
   * milliseconds until the line shows up or the time is over. */
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    if (twtest_daemon_log_count(d, needle) >= min_count)
      return true;
    if (now_ms() >= deadline)
      return false;
    nap_ms(10);
  }
}

/* ---- HTTP ---------------------------------------------------------------- */

struct sink {
  char *data;
  size_t len, cap;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  struct sink *s = arg;
  size_t add = size * n;
  if (s->len + add + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < s->len + add + 1)
      cap *= 2;
    if (!(s->data = realloc(s->data, cap)))
      abort();
    s->cap = cap;
  }
  memcpy(s->data + s->len, p, add);
  s->len += add;
  s->data[s->len] = '\0';
  return add;
}

static void header_value(const char *line, size_t n, const char *name,
                         char *out, size_t outsz) {
  size_t nl = strlen(name);
  if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
    return;
  const char *v = line + nl + 1;
  const char *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
    end--;
  snprintf(out, outsz, "%.*s", (int)(end - v), v);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg) {
  struct twtest_resp *r = arg;
  header_value(p, size * n, "Content-Type", r->content_type,
               sizeof r->content_type);
  header_value(p, size * n, "Location", r->location, sizeof r->location);
  return size * n;
}

int twtest_http(const char *base_url, const char *method, const char *path,
                const char *content_type, const char *body,
                struct twtest_resp *out) {
  memset(out, 0, sizeof *out);
  CURL *h = curl_easy_init();
  if (!h)
    abort();
  char url[1024], ct[200];
  snprintf(url, sizeof url, "%s%s", base_url, path);
  struct sink s = {0};
  struct curl_slist *hdrs = NULL;
  if (content_type) {
    snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
    hdrs = curl_slist_append(hdrs, ct);
  }
  /* no "Expect: 100-continue" round trip for larger bodies */
  hdrs = curl_slist_append(hdrs, "Expect:");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  CURLcode cc = curl_easy_perform(h);
  if (cc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
  else
    snprintf(out->error, sizeof out->error, "%s", curl_easy_strerror(cc));
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  out->body = s.data ? s.data : strdup("");
  if (!out->body)
    abort();
  out->len = s.len;
  return cc == CURLE_OK ? 0 : -1;
}

void twtest_resp_release(struct twtest_resp *r) {
  free(r->body);
  r->body = NULL;
  r->len = 0;
}

int twtest_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  int port = -1;
  if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
      !getsockname(fd, (struct sockaddr *)&a, &n))
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}
