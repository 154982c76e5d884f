/* api.h - the REST server (its own HTTP/1.1, api/door.h), routes under /v1.
 *
 * A fixed pool of threads (epoll) serves every connection, however many
 * are open: a handler may block until the store's group commit makes its
 * write durable, and the commits of the threads waiting at once share one
 * fsync.  Every request head is checked (framing, size, Host, the token)
 * before any byte of its body is read or 100 Continue sent.  Errors leave as
 * application/problem+json through problem.c only; no request can crash
 * the daemon or store anything when it fails. */
#ifndef TW_API_API_H
#define TW_API_API_H

#include <stddef.h>
#include <stdint.h>

#include "api/auth.h"
#include "broker/base/clock.h"
#include "broker/base/err.h"

struct tw_api;
struct tw_store;
struct tw_provider;
struct tw_catalog;
struct tw_placer;
struct tw_agent;
struct tw_tracer;
struct tw_buf;

struct tw_provider_ops;

struct tw_spec_machine;

struct tw_api_opts {
  const char *listen;             /* "HOST:PORT"; port 0 picks a free one */
  /* The operator's allow-list of image, disk and ports (the config's
   * `machine:`, broker/core/spec.h), borrowed.  NULL: a spec naming any
   * of them is refused. */
  const struct tw_spec_machine *machine;
  struct tw_store *store;         /* borrowed; outlives the server */
  struct tw_clock *clock;         /* NULL: real */
  struct tw_provider **providers; /* borrowed; for job output */
  size_t n_providers;
  /* The adapter registry (providers/registry.h), borrowed: specs and
   * datasets may name only its providers, reports take its FOCUS names.
   * NULL: provider names are not checked beyond their shape. */
  const struct tw_provider_ops *const *adapters;
  int64_t max_body_bytes;
  /* the bound of an uploaded workdir archive (PUT /v1/workdirs/{sha256},
   * api/h_workdirs.h); 0: 64 MiB */
  int64_t max_workdir_bytes;
  /* The front door (docs/security.md); 0 takes the default in brackets. */
  unsigned max_connections; /* connections at once (1024) */
  unsigned timeout_s;       /* idle: no byte either way for this long (60) */
  unsigned max_per_address; /* connections from one address at once (128) */
  unsigned threads;         /* threads serving every connection (64, at
                               most max_connections; more is an error) */
  unsigned head_timeout_s;  /* a whole request head, from the connection or
                               the previous answer (10) */
  unsigned body_timeout_s;  /* a whole request body, from its head (60) */
  size_t max_head_bytes;    /* request line and headers; 431 beyond (16384) */
  size_t max_url_bytes;     /* the request target; 414 beyond (8192) */
  unsigned max_streams;     /* GET /v1/events/stream open at once (256) */
  /* "HOST:PORT" of a second listener that answers /healthz and /readyz
   * only, with its own connections: probes answered while the main
   * listener's budget is spent.  NULL or "": none. */
  const char *probe_listen;
  /* "first" or "every" (NULL, ""): accepted for the configurations that
   * name it, and nothing else: the door judges every head of every
   * connection (docs/security.md, "The front door"). */
  const char *judge_heads;
  struct tw_auth_opts auth; /* tokens or open, rate limit, TLS (auth.h) */
  /* What the handlers read of the daemon, borrowed and outliving the
   * server; NULL when absent (a server started alone, in tests). */
  struct tw_catalog *catalog; /* GET /v1/offers, /metrics; NULL: 503 */
  struct tw_placer *placer;   /* plans and /v1/policies (h_placement.h) */
  /* /readyz asks it besides the store: NULL or true is ready; false with
   * the reason in why (the daemon: the scheduler's loop is stuck). */
  bool (*ready)(void *ctx, char *why, size_t whysz);
  void *ready_ctx;
  struct tw_agent *agent;     /* /v1/agent/... (h_agent.c); NULL: 503 */
  /* Borrowed: a span per request, the submitter's traceparent the parent
   * of POST /v1/jobs (docs/observability.md); NULL: no spans. */
  struct tw_tracer *tracer;
  /* More of /metrics, appended after the server's own (the daemon: the
   * scheduler's, the agent's, the tracer's); NULL: none. */
  void (*metrics)(void *ctx, struct tw_buf *out);
  void *metrics_ctx;
};

/* Binds and starts serving.  *out is owned (tw_api_stop). */
enum tw_rc tw_api_start(const struct tw_api_opts *opts, struct tw_api **out,
                        struct tw_err *err);
/* The bound port (useful with port 0). */
int tw_api_port(const struct tw_api *api);
/* The port of api.probe_listen; 0 when there is none. */
int tw_api_probe_port(const struct tw_api *api);
/* Reloadable settings. */
void tw_api_set_max_body(struct tw_api *api, int64_t bytes);
/* Stops accepting connections; /readyz answers 503 from now on.  Requests
 * in flight finish. */
void tw_api_drain(struct tw_api *api);
/* Waits for requests in flight, closes everything, frees api.  NULL ok. */
void tw_api_stop(struct tw_api *api);

/* The route table, for the OpenAPI agreement test: method and path
 * template as OpenAPI writes it ("/v1/jobs/{id}").  The array is the
 * caller's (free() it); the strings in it are static. */
struct tw_api_route_info {
  const char *method;
  const char *path;
};
struct tw_api_route_info *tw_api_route_table(size_t *n);

#endif
