/* twtest_daemon.h - runs tradewindd as a subprocess for integration tests.
 *
 * A daemon gets a private temporary directory holding its config file, its
 * sqlite file and its log (stderr, appended across restarts).  It listens
 * on 127.0.0.1 port 0; twtest_daemon_start() reads the chosen port from the
 * daemon's first stdout line (`listening http://HOST:PORT`).  The child is
 * killed with SIGKILL if the test process dies first (PR_SET_PDEATHSIG on
 * the thread that started it: start daemons from the main thread).
 *
 * Typical use:
 *
 *   struct twtest_daemon d;
 *   if (twtest_daemon_init(&d, NULL)) return 77;      // default config
 *   if (twtest_daemon_start(&d)) fail(...);
 *   ... twtest_http(d.url, "GET", "/healthz", NULL, NULL, &resp) ...
 *   int code = twtest_daemon_stop(&d, 10000);        // SIGTERM, exit code
 *   twtest_daemon_cleanup(&d, failed);               // keep the dir on failure
 *
 * Not thread-safe: one thread drives a given daemon; twtest_http() may be
 * called from any thread. */
#ifndef TW_TESTS_INTEGRATION_TWTEST_DAEMON_H
#define TW_TESTS_INTEGRATION_TWTEST_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct twtest_daemon {
  char dir[256];    /* private temp dir */
  char config[320]; /* dir/tradewind.yaml */
  char db[320];     /* dir/tradewind.db */
  char log[320];    /* dir/tradewindd.log: the daemon's stderr */
  char url[64];     /* "http://127.0.0.1:PORT" while running */
  int port;
  pid_t pid;  /* 0 when not running */
  int out_fd; /* read end of the daemon's stdout, -1 when none */
  /* Pass `--listen 127.0.0.1:0 --db <db>` (the default).  Clear it to let
   * the config file alone decide, e.g. to change `db` or `listen` on a
   * reload. */
  bool override_addr;
};

/* The tradewindd binary: $TRADEWINDD, else $TW_BINARY_DIR/tradewindd, else
 * the path compiled in as TW_TRADEWINDD_PATH.  Never NULL. */
const char *twtest_daemon_binary(void);

/* A TCP port of 127.0.0.1 free a moment ago (bound, read, closed), for a
 * daemon that must come back on the same address (`listen:` in its
 * config, override_addr false): agents call the address their bootstrap
 * names.  -1 when none. */
int twtest_free_port(void);

/* Creates the temp dir and writes config_text as the config file, or, when
 * config_text is NULL, a copy of the project's configs/tradewind.yaml
 * (found through $TW_SOURCE_DIR).  Returns 0, or -1 with a message on
 * stderr. */
int twtest_daemon_init(struct twtest_daemon *d, const char *config_text);

/* Replaces the config file (atomically: write then rename).  A text
 * without an `auth:` section gets `auth: {mode: open}` appended: the tests
 * talk to the daemon without tokens. */
int twtest_daemon_write_config(struct twtest_daemon *d, const char *text);

/* Starts the daemon and waits (up to 20 s) for its `listening` line.
 * Returns 0 with d->port and d->url set.  Returns -1 when the daemon
 * exited first (d->pid stays set: reap it with twtest_daemon_wait) or did
 * not answer in time (it is killed). */
int twtest_daemon_start(struct twtest_daemon *d);

/* Waits up to timeout_ms for the daemon to exit.  Returns its exit code
 * (128 + signal number when killed by a signal), or -1 on timeout (the
 * daemon keeps running). */
int twtest_daemon_wait(struct twtest_daemon *d, int timeout_ms);

/* Sends sig to the daemon; 0 or -1. */
int twtest_daemon_signal(struct twtest_daemon *d, int sig);

/* SIGTERM, then waits up to timeout_ms: the exit code, or -1 on timeout
 * (then it is killed). */
int twtest_daemon_stop(struct twtest_daemon *d, int timeout_ms);

/* SIGKILL and reap. */
void twtest_daemon_kill(struct twtest_daemon *d);

/* Kills a running daemon and removes the temp dir, or keeps it and prints
 * its path when keep is true (to look at a failure). */
void twtest_daemon_cleanup(struct twtest_daemon *d, bool keep);

/* The log so far (malloc'd, NUL-terminated; "" when empty). */
char *twtest_daemon_log_read(const struct twtest_daemon *d);
/* How many lines of the log contain needle. */
size_t twtest_daemon_log_count(const struct twtest_daemon *d,
                               const char *needle);
/* Waits up to timeout_ms until at least min_count log lines contain
 * needle; true when they do. */
bool twtest_daemon_wait_log(const struct twtest_daemon *d, const char *needle,
                            size_t min_count, int timeout_ms);

/* ---- a blocking HTTP client (libcurl, a new connection per call) -------- */

struct twtest_resp {
  long status; /* 0 when no answer came */
  char *body;  /* owned, NUL-terminated, never NULL after a call */
  size_t len;
  char content_type[128]; /* "" when absent */
  char location[256];     /* "" when absent */
  char error[256];        /* libcurl's text when status is 0 */
};

/* Sends method base_url+path with body (NULL: none) as content_type (NULL:
 * no header).  Returns 0 when a complete answer arrived (any status), -1
 * otherwise (out->error says why).  Release out in both cases. */
int twtest_http(const char *base_url, const char *method, const char *path,
                const char *content_type, const char *body,
                struct twtest_resp *out);
void twtest_resp_release(struct twtest_resp *r);

#endif
