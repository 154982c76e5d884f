/* daemon.h - the broker daemon's wiring, without main: everything tradewindd
 * runs, built from one config file and owned by one object.
 *
 * As libuv hangs every handle off its loop, every module of the daemon
 * hangs off struct tw_daemon: what a module needs of another (the store,
 * the catalog, the placer, the providers, the sealed secrets) is handed to
 * it in its options struct here, never found through a process-wide
 * variable.  broker/main.c keeps only the arguments and the signals, so a
 * test can run a whole daemon in its own process (tests/integration/
 * test_daemon_inprocess.c).
 *
 * tw_daemon_new() builds, in order: the config (and the logger's switches,
 * the one process-wide state: broker/base/log.h), the placement policies
 * and the placer, the store and its migrations, the meter, the sealed
 * secrets, the providers (given the secrets' resolver), the catalog, the
 * tenancy (principals, tokens, quotas, budgets, audit), the scheduler, the
 * reconciler and the REST API, which listens from then on.
 * tw_daemon_start() starts their threads; tw_daemon_free() stops and frees
 * them in reverse.
 *
 * Threads: new, start, reload, drain and free from one thread (main's).
 * The daemon creates threads of its own; a caller that takes signals
 * synchronously blocks them before tw_daemon_new(). */
#ifndef TW_BROKER_DAEMON_H
#define TW_BROKER_DAEMON_H

#include <stddef.h>

#include "broker/base/err.h"

struct tw_daemon;
struct tw_provider_ops;

struct tw_daemon_opts {
  const char *config_path; /* YAML (configs/tradewind.yaml); required */
  const char *listen;      /* "HOST:PORT" over the file's `listen`; NULL none */
  const char *db;          /* sqlite path over the file's `db`; NULL none */
  /* The adapters `providers:` sections may name (providers/registry.h:
   * tw_adapters, or a test's own); borrowed, outlives the daemon. */
  const struct tw_provider_ops *const *adapters;
};

/* Loads and validates the config, builds everything (see above) and binds
 * the REST API.  Errors: the config's (naming the key), or the first
 * module's that failed, with err->msg ready to print; nothing is left
 * running then.  A bad config or policy section fails before the store is
 * opened, so no database is created.  *out is owned (tw_daemon_free). */
enum tw_rc tw_daemon_new(const struct tw_daemon_opts *opts,
                         struct tw_daemon **out, struct tw_err *err);

/* Starts the catalog's refreshers, the scheduler (when there are
 * providers), the meter and the reconciler. */
enum tw_rc tw_daemon_start(struct tw_daemon *d, struct tw_err *err);

/* The API's bound port (useful with port 0), and its URL
 * ("http://127.0.0.1:8080", https with TLS), borrowed from d. */
int tw_daemon_port(const struct tw_daemon *d);
const char *tw_daemon_url(const struct tw_daemon *d);

/* Reads the config file again and swaps in what may change (log switches,
 * api.max_body_bytes, billing, the placement policies); a change to a key
 * that needs a restart is logged and kept.  On any error nothing is
 * applied: it is logged ("reload refused, nothing applied") and returned. */
enum tw_rc tw_daemon_reload(struct tw_daemon *d, struct tw_err *err);

/* Stops accepting connections; requests in flight finish (tw_api_drain). */
void tw_daemon_drain(struct tw_daemon *d);
/* How many cloud calls the drain abandoned, still running on their
 * workers: the process must then end without exit handlers (main.c). */
size_t tw_daemon_abandoned(const struct tw_daemon *d);

/* Drains if not yet done, then stops every thread and frees everything in
 * the reverse order of tw_daemon_new().  NULL ok. */
void tw_daemon_free(struct tw_daemon *d);

/* `tradewindd --check-config`: parses the config file and builds its
 * placement policies as a start would, without opening the store (so it
 * works beside a running daemon) or starting anything.  TW_OK, or the
 * first error naming the file, the key and the reason. */
enum tw_rc tw_daemon_check_config(const char *path, struct tw_err *err);

#endif
