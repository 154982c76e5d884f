/* api_int.h - what the files of api/ share and nobody else. */
#ifndef TW_API_API_INT_H
#define TW_API_API_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "api/door.h"
#include "broker/base/err.h"
#include "broker/base/mem.h"

#define TW_API_MAX_HEADERS 8

struct tw_principal;

/* One request, from the first call of the access handler to the answer. */
struct tw_auth_ctx;

struct tw_req {
  struct tw_api *api;
  struct tw_door_conn *conn; /* its connection (api/door.h) */
  struct tw_door_req *q;     /* its head, parsed */
  const char *method;
  const char *url;
  int route;             /* index in the route table, -1 when none */
  const char *params[2]; /* path parameters ({id}) */
  char param_buf[256];
  struct tw_buf body; /* request body */
  bool answered; /* a response is queued */
  bool close;    /* answer with Connection: close */
  /* api/auth.c: the caller authenticated from the head (tw_auth_head),
   * before the body was read; owned */
  struct tw_auth_ctx *head_auth;
  int64_t start_us;
  char request_id[17];
  struct tw_auth_ctx *auth; /* api/auth.c: the caller, while the handler runs */
  struct tw_span *span;     /* the request's span (owned), NULL: no tracer */

  /* the answer */
  /* a stream (h_stream.c): its bytes as they come (api/door.h's pull),
   * and its end, called once the connection is done with it */
  int (*stream_pull)(void *ctx, struct tw_buf *out);
  void (*stream_done)(void *ctx);
  void *stream_ctx;
  unsigned status;
  const char *content_type;
  struct tw_buf out;
  const char *hdr_name[TW_API_MAX_HEADERS];
  char *hdr_value[TW_API_MAX_HEADERS]; /* owned */
  int n_hdr;
};

typedef void (*tw_handler_fn)(struct tw_req *r);

struct tw_route {
  const char *method;
  const char *path; /* OpenAPI template */
  tw_handler_fn fn;
  const char *name; /* metric label */
};

extern const struct tw_route tw_routes[];
extern const size_t tw_n_routes;

/* handlers.c */
void tw_h_healthz(struct tw_req *r);
void tw_h_readyz(struct tw_req *r);
void tw_h_metrics(struct tw_req *r);
void tw_h_jobs_create(struct tw_req *r);
void tw_h_jobs_list(struct tw_req *r);
void tw_h_jobs_get(struct tw_req *r);
void tw_h_jobs_cancel(struct tw_req *r);
void tw_h_jobs_events(struct tw_req *r);
void tw_h_jobs_logs(struct tw_req *r);
void tw_h_reports_spend(struct tw_req *r); /* h_reports.c */
/* h_workflows.c */
void tw_h_workflows_create(struct tw_req *r);
void tw_h_workflows_list(struct tw_req *r);
void tw_h_workflows_get(struct tw_req *r);
void tw_h_workflows_cancel(struct tw_req *r);
void tw_h_workflows_tasks(struct tw_req *r);
void tw_h_workflows_graph(struct tw_req *r);
/* POST /v1/jobs with `array:`: one group, answered as a workflow (201,
 * Location /v1/workflows/{id}). */
struct tw_job_spec;
void tw_h_array_submit(struct tw_req *r, const struct tw_job_spec *spec);
void tw_h_offers_list(struct tw_req *r);   /* h_offers.c */
/* h_ha.c: the replicas of a shared PostgreSQL store (docs/ha.md) */
struct tw_store;
bool tw_ha_shared(struct tw_store *s);
void tw_ha_ready_body(struct tw_store *s, struct tw_buf *out);
void tw_ha_metrics(struct tw_store *s, struct tw_buf *out);
void tw_h_replicas(struct tw_req *r);

/* server.c: accessors for handlers */
struct tw_store *tw_api_store(struct tw_api *api);
struct tw_clock *tw_api_clock(struct tw_api *api);
/* The provider whose account is `account`, or NULL. */
struct tw_provider *tw_api_provider(struct tw_api *api, const char *account);
bool tw_api_draining(struct tw_api *api);
/* The daemon's readiness hook (tw_api_opts.ready): true when absent. */
bool tw_api_ready(struct tw_api *api, char *why, size_t whysz);
/* The adapter registry of the options (NULL: none given), and its names
 * NULL-terminated (NULL when none given: names go unchecked). */
const struct tw_provider_ops *const *tw_api_adapters(struct tw_api *api);
const char *const *tw_api_provider_names(struct tw_api *api);
/* The daemon's catalog and placer (tw_api_opts); NULL when absent. */
struct tw_catalog *tw_api_catalog(struct tw_api *api);
struct tw_placer *tw_api_placer(struct tw_api *api);
/* The fallback table's strategy names, NULL-terminated (never NULL). */
const char *const *tw_api_fallback_names(struct tw_api *api);
/* The machine allow-list for spec checks; never NULL (an empty one). */
const struct tw_spec_machine *tw_api_machine(struct tw_api *api);
struct tw_auth *tw_api_auth(struct tw_api *api); /* api/auth.c's state */
struct tw_agent *tw_api_agent(struct tw_api *api); /* NULL: no agents */
struct tw_tracer *tw_api_tracer(struct tw_api *api); /* NULL: no spans */
struct tw_stream_hub *tw_api_stream_hub(struct tw_api *api); /* h_stream.h */
void tw_api_metrics_render(struct tw_api *api, struct tw_buf *out);
const char *tw_req_header(struct tw_req *r, const char *name);
const char *tw_req_query(struct tw_req *r, const char *name);
/* Sets a query parameter as the handler will read it (value outlives the
 * request's handler). */
void tw_req_set_query(struct tw_req *r, const char *name, const char *value);
/* Every query parameter is one of keys (NULL-terminated); false: answered
 * 400 naming the first other one. */
bool tw_req_known_query(struct tw_req *r, const char *const *keys);
void tw_req_add_header(struct tw_req *r, const char *name, const char *value);
void tw_req_json(struct tw_req *r, unsigned status); /* r->out holds JSON */

/* problem.c: the one way errors leave.  `type` is a slug under /problems/;
 * field may be NULL or "". */
void tw_problem(struct tw_req *r, unsigned status, const char *type,
                const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Maps err->rc to a status and type and answers with err's text. */
void tw_problem_err(struct tw_req *r, const struct tw_err *err);
/* As tw_problem_err, with every problem of a spec document (a SkyPilot
 * task reports all of its at once) as the member "errors": [{field,
 * detail}]. */
struct tw_spec_errs;
void tw_problem_spec_errs(struct tw_req *r, const struct tw_err *err,
                          const struct tw_spec_errs *errs);
/* 503 store-unavailable with Retry-After, for a store whose writes fail
 * (health: TW_E_FULL or TW_E_IO from tw_store_write_health, since_ms its
 * time); /readyz answers it. */
void tw_problem_store(struct tw_req *r, enum tw_rc health, int64_t since_ms);
unsigned tw_rc_http_status(enum tw_rc rc);

#endif
