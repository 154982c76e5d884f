/* tradewindd - the broker daemon: its arguments and its signals.  The
 * wiring of everything it runs is broker/daemon.c. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/base/log.h"
#include "broker/daemon.h"
#include "providers/registry.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: tradewindd --config FILE [--listen HOST:PORT] [--db PATH]\n"
      "\n"
      "The Tradewind broker daemon.\n"
      "\n"
      "  --config FILE      YAML configuration (see configs/tradewind.yaml)\n"
      "  --listen HOST:PORT address of the REST API; overrides `listen`\n"
      "                     (port 0 picks a free port)\n"
      "  --db PATH          sqlite database file; overrides `db`\n"
      "  --help, --version\n"
      "\n"
      "Once serving, it prints `listening http://HOST:PORT` on stdout.\n"
      "Signals: SIGHUP reloads the config (keys that need a restart are\n"
      "reported and kept); SIGTERM or SIGINT stop accepting, finish the\n"
      "requests in flight, and exit 0.\n"
      "Exit codes: 0 clean stop, 1 start-up failure, 2 usage error.\n");
}

int main(int argc, char **argv) {
  const char *config = NULL, *listen = NULL, *db = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
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

  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0)
      continue;
    if (sig == SIGHUP) {
      tw_daemon_reload(d, NULL); /* logs what it applied or refused */
      continue;
    }
    tw_log_info("daemon", "signal=%d draining", sig);
    break;
  }
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
