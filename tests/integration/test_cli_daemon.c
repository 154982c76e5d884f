/* test_cli_daemon.c - the tradewind binary against the real tradewindd.
 *
 *   test_cli_daemon TRADEWINDD TRADEWIND
 *
 * Starts the daemon on 127.0.0.1 port 0 with a temporary config and
 * database, reads the port from its `listening http://...` line, then runs
 * the CLI as a separate process for each case and checks its exit code,
 * stdout and stderr.  On failure the temporary directory (with the daemon's
 * log) is kept and its path printed. */
/* nftw() */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>

#include "tests/twtest.h"

static const char *daemon_bin, *cli_bin;
static char dir[256], url[96];
static pid_t daemon_pid;
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("test_cli_daemon: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (daemon_pid > 0)
    kill(daemon_pid, SIGKILL);
  if (dir[0])
    fprintf(stderr, "kept %s\n", dir);
  exit(1);
}

static char *path_in(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0)
    die("cannot write %s: %s", path, strerror(errno));
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return strdup("");
  size_t cap = 4096, len = 0, n;
  char *s = malloc(cap);
  while ((n = fread(s + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2)
      s = realloc(s, cap *= 2);
  }
  s[len] = '\0';
  fclose(f);
  return s;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for pid up to timeout_ms; its exit code, 128+signal, or -1. */
static int wait_exit(pid_t pid, int timeout_ms) {
  int64_t end = mono_ms() + timeout_ms;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0 || mono_ms() > end)
      return -1;
    /* Child processes have no clock to inject: poll their exit briefly. */
    poll(NULL, 0, 10);
  }
}

static void start_daemon(void) {
  char cfg[4096];
  /* no tokens in these tests: the open mode, explicitly */
  snprintf(cfg, sizeof cfg,
           "listen: 127.0.0.1:0\ndb: %s\nauth:\n  mode: open\n",
           path_in("tw.db"));
  write_file(path_in("tradewind.yaml"), cfg);
  int fds[2];
  if (pipe(fds))
    die("pipe: %s", strerror(errno));
  daemon_pid = fork();
  if (daemon_pid < 0)
    die("fork: %s", strerror(errno));
  if (daemon_pid == 0) {
    /* The daemon must not outlive a test that crashes. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int log =
        open(path_in("tradewindd.log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fds[1], 1);
    dup2(log, 2);
    close(fds[0]);
    close(fds[1]);
    execl(daemon_bin, daemon_bin, "--config", path_in("tradewind.yaml"),
          "--listen", "127.0.0.1:0", "--db", path_in("tw.db"), (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char line[256];
  size_t len = 0;
  int64_t end = mono_ms() + 20000;
  while (len < sizeof line - 1) {
    struct pollfd p = {fds[0], POLLIN, 0};
    int left = (int)(end - mono_ms());
    if (left <= 0 || poll(&p, 1, left) <= 0)
      die("tradewindd did not print its address in 20 s (log: %s)",
          path_in("tradewindd.log"));
    ssize_t n = read(fds[0], line + len, 1);
    if (n <= 0)
      die("tradewindd exited before listening (log: %s)",
          path_in("tradewindd.log"));
    if (line[len] == '\n')
      break;
    len++;
  }
  line[len] = '\0';
  /* Keep the pipe open: the daemon may print more and must not get
   * SIGPIPE. */
  if (sscanf(line, "listening %95s", url) != 1 ||
      strncmp(url, "http://127.0.0.1:", 17) != 0)
    die("unexpected first line from tradewindd: \"%s\"", line);
}

struct out {
  int code;
  char *out, *err;
};

static struct out last;

/* Runs the CLI with the NULL-terminated args, stdin_text on stdin (NULL:
 * /dev/null), TRADEWIND_URL pointing at the daemon. */
static struct out *cli(const char *stdin_text, ...) {
  char *argv[32];
  int argc = 0;
  va_list ap;
  argv[argc++] = (char *)cli_bin;
  va_start(ap, stdin_text);
  for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  write_file(path_in("stdin.txt"), stdin_text ? stdin_text : "");
  free(last.out);
  free(last.err);
  pid_t pid = fork();
  if (pid < 0)
    die("fork: %s", strerror(errno));
  if (pid == 0) {
    int in = open(stdin_text ? path_in("stdin.txt") : "/dev/null", O_RDONLY);
    int out = open(path_in("out.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(path_in("err.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(cli_bin, argv);
    _exit(127);
  }
  last.code = wait_exit(pid, 60000);
  if (last.code < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  last.out = read_file(path_in("out.txt"));
  last.err = read_file(path_in("err.txt"));
  if (getenv("TW_TEST_VERBOSE")) {
    fprintf(stderr, "$ tradewind");
    for (int i = 1; i < argc; i++)
      fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\n[%d]\n%s%s", last.code, last.out, last.err);
  }
  return &last;
}

static bool has(const char *hay, const char *needle) {
  return strstr(hay, needle) != NULL;
}

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* The id printed by submit: one line, no spaces. */
static char *submit_id(const char *file, const char *key) {
  struct out *o =
      key ? cli(NULL, "submit", file, "--idempotency-key", key, NULL)
          : cli(NULL, "submit", file, NULL);
  TW_CHECK(o->code == 0, "submit %s: exit %d, stderr: %s", file, o->code,
           o->err);
  size_t n = strlen(o->out);
  TW_CHECK(n > 1 && o->out[n - 1] == '\n' && !strchr(o->out, ' ') &&
               count_lines(o->out) == 1,
           "submit %s printed \"%s\"", file, o->out);
  if (n)
    o->out[n - 1] = '\0';
  return strdup(o->out);
}

static json_t *parse(const char *text, const char *what) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  TW_CHECK(j != NULL, "%s: not JSON (%s): %s", what, je.text, text);
  return j ? j : json_object();
}

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

static int remove_one(const char *path, const struct stat *st, int type,
                      struct FTW *ftw) {
  return remove(path);
}

static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  socklen_t len = sizeof sa;
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, (struct sockaddr *)&sa, sizeof sa);
  getsockname(fd, (struct sockaddr *)&sa, &len);
  close(fd);
  return ntohs(sa.sin_port);
}

/* The jobs the tests submit, in order; "" until submitted. */
static char id_yaml[64], id_json[64], id_stdin[64], id_key1[64];

static void keep_id(char *dst, size_t size, char *id) {
  snprintf(dst, size, "%s", id ? id : "");
  free(id);
}

/* submit YAML: the id alone on stdout; JSON with -o json: the job object;
 * stdin, sniffed as JSON. */
static void submit_prints_the_id_or_the_job(void **state) {
  keep_id(id_yaml, sizeof id_yaml, submit_id(path_in("hello.yaml"), NULL));
  struct out *o =
      cli(NULL, "submit", path_in("hello.json"), "-o", "json", NULL);
  TW_CHECK(o->code == 0, "submit json: exit %d: %s", o->code, o->err);
  json_t *j = parse(o->out, "submit -o json");
  snprintf(id_json, sizeof id_json, "%s", jstr(j, "id"));
  TW_CHECK(*id_json && strcmp(id_json, id_yaml) != 0, "json job id \"%s\"",
           id_json);
  TW_CHECK(strcmp(jstr(j, "name"), "hello-json") == 0, "name \"%s\"",
           jstr(j, "name"));
  TW_CHECK(strcmp(jstr(j, "state"), "pending") == 0, "state \"%s\"",
           jstr(j, "state"));
  json_decref(j);

  o = cli("{\"name\":\"from-stdin\"}", "submit", "-", "-o", "json", NULL);
  TW_CHECK(o->code == 0, "submit -: exit %d: %s", o->code, o->err);
  j = parse(o->out, "submit - -o json");
  TW_CHECK(strcmp(jstr(j, "name"), "from-stdin") == 0, "stdin name \"%s\"",
           jstr(j, "name"));
  snprintf(id_stdin, sizeof id_stdin, "%s", jstr(j, "id"));
  json_decref(j);
}

/* The same key and spec again: the same job, noted on stderr; the same
 * key with another spec: 409. */
static void idempotency_key_replays_or_conflicts(void **state) {
  keep_id(id_key1, sizeof id_key1,
          submit_id(path_in("other.yaml"), "cli-it-key-1"));
  struct out *o = cli(NULL, "submit", path_in("other.yaml"),
                      "--idempotency-key", "cli-it-key-1", NULL);
  TW_CHECK(o->code == 0, "replay: exit %d: %s", o->code, o->err);
  TW_CHECK(strncmp(o->out, id_key1, strlen(id_key1)) == 0,
           "replay printed \"%s\", first was %s", o->out, id_key1);
  TW_CHECK(has(o->err, "already submitted"), "replay stderr: %s", o->err);
  o = cli(NULL, "submit", path_in("hello.yaml"), "--idempotency-key",
          "cli-it-key-1", NULL);
  TW_CHECK(o->code == 5, "key reuse: exit %d", o->code);
  TW_CHECK(has(o->err, "tradewind: rejected (409): "), "key reuse stderr: %s",
           o->err);
}

/* An invalid spec: exit 5, the field path on one line. */
static void invalid_spec_names_the_field(void **state) {
  struct out *o = cli(NULL, "submit", path_in("bad.yaml"), NULL);
  TW_CHECK(o->code == 5, "bad spec: exit %d", o->code);
  TW_CHECK(has(o->err, "tradewind: rejected (400): resources.cpus") &&
               count_lines(o->err) == 1,
           "bad spec stderr: %s", o->err);
  TW_CHECK(*o->out == '\0', "bad spec stdout: %s", o->out);
}

/* get: a table, and the JSON. */
static void get_shows_a_table_or_json(void **state) {
  struct out *o = cli(NULL, "jobs", "get", id_yaml, NULL);
  TW_CHECK(o->code == 0, "get: exit %d: %s", o->code, o->err);
  TW_CHECK(has(o->out, id_yaml) && has(o->out, "\nName       hello\n") &&
               has(o->out, "\nState      pending\n"),
           "get table:\n%s", o->out);
  o = cli(NULL, "jobs", "get", id_yaml, "-o", "json", NULL);
  json_t *j = parse(o->out, "get -o json");
  TW_CHECK(strcmp(jstr(j, "id"), id_yaml) == 0, "get id \"%s\"", jstr(j, "id"));
  json_decref(j);
  o = cli(NULL, "jobs", "get", "j-does-not-exist", NULL);
  TW_CHECK(o->code == 5 && has(o->err, "rejected (404)"),
           "get unknown: exit %d: %s", o->code, o->err);
}

/* list: one page, every page, and the table. */
static void list_pages(void **state) {
  const char *ids[] = {id_yaml, id_json, id_stdin, id_key1};
  struct out *o = cli(NULL, "jobs", "list", "--limit", "1", "-o", "json", NULL);
  TW_CHECK(o->code == 0, "list: exit %d: %s", o->code, o->err);
  json_t *j = parse(o->out, "list --limit 1");
  TW_CHECK(json_array_size(json_object_get(j, "items")) == 1, "page size %zu",
           json_array_size(json_object_get(j, "items")));
  TW_CHECK(json_is_string(json_object_get(j, "next_cursor")),
           "no next_cursor with more jobs left");
  json_decref(j);
  o = cli(NULL, "jobs", "list", "--limit", "1", "--all", "-o", "json", NULL);
  TW_CHECK(o->code == 0, "list --all: exit %d: %s", o->code, o->err);
  j = parse(o->out, "list --all");
  json_t *items = json_object_get(j, "items");
  TW_CHECK(json_array_size(items) == 4, "list --all found %zu jobs, want 4",
           json_array_size(items));
  for (size_t k = 0; k < 4; k++) {
    bool found = false;
    for (size_t i = 0; i < json_array_size(items); i++)
      found |= strcmp(jstr(json_array_get(items, i), "id"), ids[k]) == 0;
    TW_CHECK(found, "list --all misses %s", ids[k]);
  }
  /* Newest first. */
  TW_CHECK(strcmp(jstr(json_array_get(items, 0), "id"), id_key1) == 0,
           "newest is %s, want %s", jstr(json_array_get(items, 0), "id"),
           id_key1);
  json_decref(j);
  o = cli(NULL, "jobs", "list", "--all", "--limit", "2", NULL);
  TW_CHECK(o->code == 0 && count_lines(o->out) == 5 &&
               strncmp(o->out, "ID ", 3) == 0,
           "list table (exit %d):\n%s%s", o->code, o->out, o->err);
  o = cli(NULL, "jobs", "list", "--limit", "3", NULL);
  TW_CHECK(o->code == 0 && count_lines(o->out) == 4 && has(o->err, "--cursor"),
           "list one page: %s%s", o->out, o->err);
}

/* cancel, and cancel again: 409. */
static void cancel_once(void **state) {
  struct out *o = cli(NULL, "jobs", "cancel", id_yaml, NULL);
  TW_CHECK(o->code == 0, "cancel: exit %d: %s", o->code, o->err);
  TW_CHECK(has(o->out, id_yaml) && has(o->out, " cancelled\n"), "cancel: %s",
           o->out);
  o = cli(NULL, "jobs", "cancel", id_yaml, NULL);
  TW_CHECK(o->code == 5, "cancel twice: exit %d", o->code);
  TW_CHECK(has(o->err, "tradewind: rejected (409): "), "cancel twice: %s",
           o->err);
  o = cli(NULL, "jobs", "list", "--state", "cancelled", "-o", "json", NULL);
  json_t *j = parse(o->out, "list --state cancelled");
  json_t *items = json_object_get(j, "items");
  TW_CHECK(json_array_size(items) == 1 &&
               strcmp(jstr(json_array_get(items, 0), "id"), id_yaml) == 0,
           "list --state cancelled: %s", o->out);
  json_decref(j);
}

/* events: submitted, then cancelled. */
static void events_from_submit_to_cancel(void **state) {
  struct out *o = cli(NULL, "jobs", "events", id_yaml, "-o", "json", NULL);
  TW_CHECK(o->code == 0, "events: exit %d: %s", o->code, o->err);
  json_t *j = parse(o->out, "events");
  json_t *items = json_object_get(j, "items");
  size_t ne = json_array_size(items);
  TW_CHECK(ne >= 2, "%zu events", ne);
  TW_CHECK(strcmp(jstr(json_array_get(items, 0), "to"), "pending") == 0,
           "first event to \"%s\"", jstr(json_array_get(items, 0), "to"));
  TW_CHECK(strcmp(jstr(json_array_get(items, ne - 1), "to"), "cancelled") == 0,
           "last event to \"%s\"", jstr(json_array_get(items, ne - 1), "to"));
  json_decref(j);
  o = cli(NULL, "jobs", "events", id_yaml, NULL);
  TW_CHECK(o->code == 0 && strncmp(o->out, "SEQ ", 4) == 0 &&
               has(o->out, "cancelled"),
           "events table:\n%s", o->out);
}

/* wait: a cancelled job exits 4 at once; a pending one times out. */
static void wait_exit_codes(void **state) {
  struct out *o = cli(NULL, "jobs", "wait", id_yaml, NULL);
  TW_CHECK(o->code == 4, "wait cancelled: exit %d: %s", o->code, o->err);
  TW_CHECK(has(o->err, "cancelled"), "wait cancelled stderr: %s", o->err);
  o = cli(NULL, "jobs", "get", id_json, "-o", "json", NULL);
  json_t *j = parse(o->out, "get pending");
  const char *st = jstr(j, "state");
  bool terminal = !strcmp(st, "succeeded") || !strcmp(st, "failed") ||
                  !strcmp(st, "cancelled");
  if (!terminal) {
    o = cli(NULL, "jobs", "wait", id_json, "--timeout", "700ms", NULL);
    TW_CHECK(o->code == 6, "wait timeout: exit %d: %s", o->code, o->err);
    TW_CHECK(has(o->err, "timed out after 700ms"), "wait timeout: %s", o->err);
  } else {
    fprintf(stderr, "note: %s is already %s; timeout case not run\n", id_json,
            st);
  }
  json_decref(j);
  o = cli(NULL, "submit", path_in("hello.yaml"), "--wait", "--timeout", "300ms",
          NULL);
  TW_CHECK(o->code == 6 || o->code == 0 || o->code == 1,
           "submit --wait: exit %d: %s", o->code, o->err);
  TW_CHECK(count_lines(o->out) == 1, "submit --wait stdout: %s", o->out);
}

/* The token is sent (the server ignores it today) and never shown. */
static void token_never_shown(void **state) {
  struct out *o = cli(NULL, "jobs", "list", "--token", "cli-it-secret",
                      "--limit", "1", NULL);
  TW_CHECK(o->code == 0, "token: exit %d: %s", o->code, o->err);
  TW_CHECK(!has(o->out, "cli-it-secret") && !has(o->err, "cli-it-secret"),
           "token printed");
}

/* Nobody there: exit 3.  Usage errors never reach the server. */
static void unreachable_and_usage_errors(void **state) {
  char dead[64];
  snprintf(dead, sizeof dead, "http://127.0.0.1:%d", closed_port());
  struct out *o = cli(NULL, "--url", dead, "jobs", "list", NULL);
  TW_CHECK(o->code == 3, "unreachable: exit %d", o->code);
  TW_CHECK(has(o->err, "tradewind: cannot reach "), "unreachable: %s", o->err);
  o = cli(NULL, "submit", path_in("missing.yaml"), NULL);
  TW_CHECK(o->code == 2, "missing file: exit %d", o->code);
}

static void daemon_exits_0_on_sigterm(void **state) {
  kill(daemon_pid, SIGTERM);
  int dcode = wait_exit(daemon_pid, 15000);
  if (dcode < 0) {
    kill(daemon_pid, SIGKILL);
    waitpid(daemon_pid, NULL, 0);
  }
  daemon_pid = 0;
  TW_CHECK(dcode == 0, "tradewindd exited %d after SIGTERM", dcode);
}

/* The daemon on a temporary config and database, and the spec files. */
static int setup(void **state) {
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(dir, sizeof dir, "%s/tw-cli-it-XXXXXX", tmp);
  if (!mkdtemp(dir))
    die("mkdtemp: %s", strerror(errno));
  signal(SIGPIPE, SIG_IGN);
  start_daemon();
  setenv("TRADEWIND_URL", url, 1);
  unsetenv("TRADEWIND_TOKEN");

  write_file(path_in("hello.yaml"),
             "name: hello\nresources:\n  cpus: 1\nrun: echo hello\n");
  write_file(path_in("hello.json"),
             "{\"name\": \"hello-json\", \"resources\": {\"cpus\": 2}}\n");
  write_file(path_in("other.yaml"), "name: other\nresources:\n  cpus: 4\n");
  write_file(path_in("bad.yaml"), "name: bad\nresources:\n  cpus: eight\n");
  return 0;
}

static int teardown(void **state) {
  if (daemon_pid > 0) {
    kill(daemon_pid, SIGKILL);
    waitpid(daemon_pid, NULL, 0);
  }
  free(last.out);
  free(last.err);
  if (tw_failures()) {
    fprintf(stderr, "kept %s (daemon log: tradewindd.log)\n", dir);
    return 0;
  }
  if (nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_cli_daemon TRADEWINDD TRADEWIND\n");
    return 2;
  }
  daemon_bin = argv[1];
  cli_bin = argv[2];
  if (access(daemon_bin, X_OK) || access(cli_bin, X_OK)) {
    printf("SKIPPED: %s or %s is not built\n", daemon_bin, cli_bin);
    return TW_SKIP;
  }
  /* In order: each test works on the jobs the ones before submitted. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(submit_prints_the_id_or_the_job),
      cmocka_unit_test(idempotency_key_replays_or_conflicts),
      cmocka_unit_test(invalid_spec_names_the_field),
      cmocka_unit_test(get_shows_a_table_or_json),
      cmocka_unit_test(list_pages),
      cmocka_unit_test(cancel_once),
      cmocka_unit_test(events_from_submit_to_cancel),
      cmocka_unit_test(wait_exit_codes),
      cmocka_unit_test(token_never_shown),
      cmocka_unit_test(unreachable_and_usage_errors),
      cmocka_unit_test(daemon_exits_0_on_sigterm),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
