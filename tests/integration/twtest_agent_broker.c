/* twtest_agent_broker.c - the agent's test broker (twtest_agent_broker.h). */
#include "tests/integration/twtest_agent_broker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t tb_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct body {
  char *data;
  size_t len;
};

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
                              json_t *j) {
  char *txt = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static json_t *problem(const char *title) {
  return json_pack("{s:s}", "title", title);
}

static enum MHD_Result route(struct tb *b, struct MHD_Connection *c,
                             const char *url, const char *method,
                             const char *data, size_t len) {
  const char *auth =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  char want[128];
  snprintf(want, sizeof want, "Bearer %s", b->token);
  if (!auth || strcmp(auth, want)) {
    b->unauthorized++;
    return answer(c, 401, problem("bad token"));
  }
  char prefix[128];
  int n = snprintf(prefix, sizeof prefix, "/v1/agent/attempts/%s/", b->attempt);
  if (strncmp(url, prefix, (size_t)n) || strcmp(method, "POST"))
    return answer(c, 403, problem("not this attempt's route"));
  const char *r = url + n;
  if (!strcmp(r, "register")) {
    b->registers++;
    return answer(c, 200, json_loads(b->register_answer, 0, NULL));
  }
  json_t *j = NULL;
  if (strcmp(r, "logs")) {
    j = json_loadb(data ? data : "", len, 0, NULL);
    if (!json_is_object(j)) {
      json_decref(j);
      return answer(c, 400, problem("expected a JSON object"));
    }
  }
  if (!strcmp(r, "heartbeat")) {
    b->heartbeats++;
    json_decref(j);
    json_t *a = json_pack("{s:s}", "action", b->action[0] ? b->action : "none");
    b->action[0] = '\0';
    return answer(c, 200, a);
  }
  if (!strcmp(r, "phase")) {
    b->phases++;
    const char *ph = json_string_value(json_object_get(j, "phase"));
    snprintf(b->last_phase, sizeof b->last_phase, "%s", ph ? ph : "?");
    json_decref(j);
    return answer(c, 200, json_object());
  }
  if (!strcmp(r, "notice")) {
    b->notices++;
    if (!b->notice_body)
      b->notice_body = j;
    else
      json_decref(j);
    return answer(c, 200, json_object());
  }
  if (!strcmp(r, "checkpoint")) {
    b->checkpoints++;
    json_decref(b->checkpoint_body);
    b->checkpoint_body = j;
    return answer(c, 200, json_object());
  }
  if (!strcmp(r, "exit")) {
    b->exits++;
    if (!b->exit_body)
      b->exit_body = j;
    else
      json_decref(j);
    return answer(c, 200, json_object());
  }
  if (!strcmp(r, "logs")) {
    const char *s =
        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stream");
    const char *o =
        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
    int which = s && !strcmp(s, "stdout")   ? 0
                : s && !strcmp(s, "stderr") ? 1
                                            : -1;
    if (which < 0 || !o)
      return answer(c, 400, problem("stream and offset are required"));
    long long off = strtoll(o, NULL, 10);
    struct tb_log *lg = &b->log[which];
    b->log_posts++;
    if (off < 0 || (size_t)off > lg->len)
      return answer(c, 409,
                    json_pack("{s:s,s:I}", "title", "offset beyond",
                              "next_offset", (json_int_t)lg->len));
    size_t have = lg->len - (size_t)off;
    size_t skip = have < len ? have : len;
    b->dup_bytes += (int64_t)skip;
    size_t add = len - skip;
    if (b->max_log_bytes && (int64_t)(lg->len + add) > b->max_log_bytes)
      return answer(c, 413, problem("too much output"));
    if (add) {
      lg->data = realloc(lg->data, lg->len + add + 1);
      memcpy(lg->data + lg->len, data + skip, add);
      lg->len += add;
      lg->data[lg->len] = '\0';
    }
    if (add && b->fail_logs_after_store > 0) {
      b->fail_logs_after_store--;
      return answer(c, 503, problem("stored, but the answer is lost"));
    }
    return answer(c, 200,
                  json_pack("{s:I}", "next_offset", (json_int_t)lg->len));
  }
  json_decref(j);
  return answer(c, 404, problem("no such route"));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **con_cls) {
  struct tb *b = cls;
  struct body *bd = *con_cls;
  if (!bd) {
    bd = calloc(1, sizeof *bd);
    *con_cls = bd;
    return MHD_YES;
  }
  if (*size) {
    bd->data = realloc(bd->data, bd->len + *size + 1);
    memcpy(bd->data + bd->len, data, *size);
    bd->len += *size;
    bd->data[bd->len] = '\0';
    *size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&b->mu);
  enum MHD_Result rc = route(b, c, url, method, bd->data, bd->len);
  pthread_mutex_unlock(&b->mu);
  return rc;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  struct body *bd = *con_cls;
  if (bd) {
    free(bd->data);
    free(bd);
  }
  *con_cls = NULL;
}

int tb_serve(struct tb *b) {
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)b->port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 50 && !b->d; i++) {
    b->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                            0, NULL, NULL, on_request, b, MHD_OPTION_SOCK_ADDR,
                            &sa, MHD_OPTION_LISTENING_ADDRESS_REUSE,
                            (unsigned)1, MHD_OPTION_NOTIFY_COMPLETED, on_done,
                            b, MHD_OPTION_END);
    if (!b->d)
      usleep(100000);
  }
  if (!b->d)
    return -1;
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(b->d, MHD_DAEMON_INFO_BIND_PORT);
  b->port = di->port;
  return 0;
}

int tb_start(struct tb *b, unsigned port, const char *attempt,
             const char *token, const char *ans) {
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
  b->port = port;
  snprintf(b->attempt, sizeof b->attempt, "%s", attempt);
  snprintf(b->token, sizeof b->token, "%s", token);
  b->register_answer = strdup(ans);
  return tb_serve(b);
}

void tb_pause(struct tb *b) {
  if (b->d)
    MHD_stop_daemon(b->d);
  b->d = NULL;
}

void tb_free(struct tb *b) {
  tb_pause(b);
  free(b->register_answer);
  for (int i = 0; i < 2; i++)
    free(b->log[i].data);
  json_decref(b->exit_body);
  json_decref(b->notice_body);
  json_decref(b->checkpoint_body);
  pthread_mutex_destroy(&b->mu);
  memset(b, 0, sizeof *b);
}

void tb_set_action(struct tb *b, const char *action) {
  pthread_mutex_lock(&b->mu);
  snprintf(b->action, sizeof b->action, "%s", action);
  pthread_mutex_unlock(&b->mu);
}

bool tb_wait(struct tb *b, bool (*cond)(struct tb *), int timeout_ms) {
  int64_t until = tb_now_ms() + timeout_ms;
  for (;;) {
    pthread_mutex_lock(&b->mu);
    bool ok = cond(b);
    pthread_mutex_unlock(&b->mu);
    if (ok)
      return true;
    if (tb_now_ms() > until)
      return false;
    usleep(50000);
  }
}

bool tb_exited(struct tb *b) { return b->exit_body != NULL; }

pid_t tb_agent_start(const struct tb *b, const char *dir, const char *cloud,
                     const char *metadata_url, const char *const *extra) {
  mkdir(dir, 0700);
  char tokpath[4200], logpath[4200], url[64], bin[4200];
  snprintf(tokpath, sizeof tokpath, "%s/token", dir);
  snprintf(logpath, sizeof logpath, "%s/agent.log", dir);
  snprintf(url, sizeof url, "http://127.0.0.1:%u", b->port);
  const char *bd = getenv("TW_BINARY_DIR");
  snprintf(bin, sizeof bin, "%s/tradewind-agent", bd && *bd ? bd : ".");
  FILE *f = fopen(tokpath, "w");
  if (f) {
    fputs(b->token, f);
    fclose(f);
  }
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (metadata_url)
      setenv("TRADEWIND_METADATA_URL", metadata_url, 1);
    else
      unsetenv("TRADEWIND_METADATA_URL");
    const char *argv[32] = {bin,        "--broker",     url,     "--attempt",
                            b->attempt, "--token-file", tokpath, "--cloud",
                            cloud,      "--dir",        dir};
    int n = 11;
    for (int i = 0; extra && extra[i] && n < 30; i++)
      argv[n++] = extra[i];
    argv[n] = NULL;
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int agent_wait(pid_t pid, int timeout_ms) {
  int64_t until = tb_now_ms() + timeout_ms;
  int st;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (tb_now_ms() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    usleep(50000);
  }
}

int tb_agent_wait(struct tb *b, pid_t pid, int timeout_ms) {
  int rc = agent_wait(pid, timeout_ms);
  if (b) {
    pthread_mutex_lock(&b->mu);
    pthread_mutex_unlock(&b->mu);
  }
  return rc;
}

void tb_agent_log(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/agent.log", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[1024];
  fprintf(stderr, "--- %s ---\n", path);
  while (fgets(line, sizeof line, f))
    fputs(line, stderr);
  fclose(f);
}
