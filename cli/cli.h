/* cli.h - the `tradewind` command-line client, as a library.
 *
 * tw_cli_run() is the whole program: cli/main.c hands it argv and the
 * process's streams, environment and clock.  The unit tests hand it
 * captured streams, a fake clock and a sleep that only advances that clock,
 * so waiting with backoff is tested without sleeping on the wall clock.
 *
 * Only this module (and the daemon's main) writes to stdout: results go to
 * io->out, progress and errors to io->err, one readable line each.  The
 * bearer token is sent in the Authorization header and never printed. */
#ifndef TW_CLI_CLI_H
#define TW_CLI_CLI_H

#include <stdint.h>
#include <stdio.h>

struct tw_clock;

/* Exit codes: the contract with scripts and CI steps (docs/cli.md and
 * `tradewind --help` list them; keep the three in step). */
enum tw_cli_exit {
  TW_EXIT_OK = 0,          /* success; with --wait: the job succeeded */
  TW_EXIT_JOB_FAILED = 1,  /* the job failed */
  TW_EXIT_USAGE = 2,       /* bad flags, unreadable file */
  TW_EXIT_UNREACHABLE = 3, /* cannot reach the server, or it answered 5xx */
  TW_EXIT_CANCELLED = 4,   /* the job was cancelled */
  TW_EXIT_REJECTED = 5,    /* the server rejected the request (4xx) */
  TW_EXIT_TIMEOUT = 6,     /* timed out waiting */
  TW_EXIT_NO_FIT = 7       /* plan: no offer fits the job */
};

struct tw_cli_io {
  FILE *out;              /* results: ids, tables, JSON */
  FILE *err;              /* progress, errors */
  FILE *in;               /* read by `submit -` */
  const char *env_url;    /* TRADEWIND_URL, NULL when unset */
  const char *env_token;  /* TRADEWIND_TOKEN, NULL when unset */
  const char *env_cacert; /* TRADEWIND_CACERT, NULL when unset */
  const char *env_config; /* TRADEWIND_CONFIG: the client config file */
  const char *env_home;   /* HOME: ~/.config/tradewind/config.yaml */
  struct tw_clock *clock; /* wall clock: job ages and wait deadlines */
  /* Blocks for ms milliseconds; tests pass one that advances a fake clock. */
  void (*sleep_ms)(void *ctx, int64_t ms);
  void *sleep_ctx;
};

/* Runs one command line (argv[0] is the program name) and returns the
 * process exit code, an enum tw_cli_exit.  Nothing in io is retained after
 * the call returns.  Expects curl_global_init() to have been called; not
 * thread-safe with respect to other users of io's streams. */
int tw_cli_run(int argc, char **argv, const struct tw_cli_io *io);

#endif
