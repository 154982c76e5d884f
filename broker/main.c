/* tradewindd - the broker daemon: its arguments and its signals.  The
 * wiring of everything it runs is broker/daemon.c. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/log.h"
#include "broker/daemon.h"
#include "providers/registry.h"

/* The systemd notification protocol (sd_notify(3)), by hand: one datagram
 * to the AF_UNIX socket named by $NOTIFY_SOCKET ("@" for the abstract
 * namespace).  Without the variable (not started by systemd, or a unit
 * other than Type=notify) nothing is sent. */
static void notify(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || (path[0] != '/' && path[0] != '@') || !path[1])
    return;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t n = strlen(path);
  if (n >= sizeof sa.sun_path)
    return;
  memcpy(sa.sun_path, path, n);
  if (sa.sun_path[0] == '@')
    sa.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  while (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                (const struct sockaddr *)&sa, len) < 0 &&
         errno == EINTR)
    ;
  close(fd);
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: tradewindd --config FILE [--listen HOST:PORT] [--db PATH]\n"
      "                  [--check-config]\n"
      "\n"
      "The Tradewind broker daemon.\n"
      "\n"
      "  --config FILE      YAML configuration (see configs/tradewind.yaml)\n"
      "  --listen HOST:PORT address of the REST API; overrides `listen`\n"
      "                     (port 0 picks a free port)\n"
      "  --db PATH          sqlite database file; overrides `db`\n"
      "  --check-config     check the config file (every key, the policies)\n"
      "                     and exit: 0 when valid, 1 with the key at fault\n"
      "  --help, --version\n"
      "\n"
      "Once serving, it prints `listening http://HOST:PORT` on stdout.\n"
      "Signals: SIGHUP reloads the config (keys that need a restart are\n"
      "reported and kept); SIGTERM or SIGINT stop accepting, finish the\n"
      "requests in flight, and exit 0.  Under systemd (Type=notify) it\n"
      "reports READY=1, RELOADING=1 and STOPPING=1 on $NOTIFY_SOCKET.\n"
      "Exit codes: 0 clean stop, 1 start-up failure, 2 usage error.\n");
}

int main(int argc, char **argv) {
  const char *config = NULL, *listen = NULL, *db = NULL;
  int check = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--check-config")) {
      check = 1;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("tradewindd 0.1.0\n");
      return 0;
    } else if ((!strcmp(a, "--config") || !strcmp(a, "--listen") ||
                !strcmp(a, "--db")) &&
               i + 1 < argc) {
      const char **slot = a[2] == 'c' ? &config : a[2] == 'l' ? &listen : &db;
      *slot = argv[++i];
    } else {
      fprintf(stderr, "tradewindd: unknown or incomplete option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!config) {
    fprintf(stderr, "tradewindd: --config FILE is required\n");
    usage(stderr);
    return 2;
  }
  if (check) {
    struct tw_err cerr = {0};
    if (tw_daemon_check_config(config, &cerr)) {
      fprintf(stderr, "tradewindd: %s: %s\n", config, cerr.msg);
      return 1;
    }
    printf("%s: ok\n", config);
    return 0;
  }

  /* Signals are taken synchronously by this thread alone: block them before
   * any thread exists so every thread inherits the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGHUP);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct tw_err err = {0};
  struct tw_daemon *d = NULL;
  struct tw_daemon_opts o = {.config_path = config,
                             .listen = listen,
                             .db = db,
                             .adapters = tw_adapters};
  if (tw_daemon_new(&o, &d, &err) || tw_daemon_start(d, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_daemon_free(d);
    return 1;
  }
  printf("listening %s\n", tw_daemon_url(d));
  fflush(stdout);
  char ready[64];
  snprintf(ready, sizeof ready, "READY=1\nMAINPID=%ld", (long)getpid());
  notify(ready);

  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0)
      continue;
    if (sig == SIGHUP) {
      /* systemd's reload protocol: RELOADING=1 with the monotonic time,
       * then READY=1 once the reload is done (applied or refused) */
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      char msg[96];
      snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%lld",
               (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
      notify(msg);
      tw_daemon_reload(d, NULL); /* logs what it applied or refused */
      notify("READY=1");
      continue;
    }
    tw_log_info("daemon", "signal=%d draining", sig);
    break;
  }
  notify("STOPPING=1");
  tw_daemon_drain(d);
  size_t abandoned = tw_daemon_abandoned(d);
  tw_daemon_free(d);
  tw_log_info("daemon", "stopped");
  if (abandoned) {
    /* calls the drain abandoned still run on their workers, with the
     * providers they use: the exit handlers (OpenSSL's clean-up, a
     * sanitizer's leak check) must not run under them.  Everything the
     * store took is committed and closed. */
    fflush(NULL);
    _exit(0);
  }
  return 0;
}
