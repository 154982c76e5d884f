/* server.c - libmicrohttpd glue: listening, the front door's limits and
 * deadlines, routing, body limits, metrics, draining. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api_int.h"
#include "billing/catalog/clouds.h"
#include "api/auth_int.h"
#include "api/auth_routes.h"
#include "api/door.h"
#include "api/h_agent.h"
#include "api/h_workdirs.h"
#include "api/h_placement.h"
#include "api/h_stream.h"
#include "api/h_ui.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/trace.h"
#include "broker/base/unique.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "policies/fallback/fallback_strategy.h"
#include "providers/provider.h"

const struct tw_route tw_routes[] = {
    {"POST", "/v1/jobs", tw_h_jobs_create, "jobs_create"},
    {"GET", "/v1/jobs", tw_h_jobs_list, "jobs_list"},
    {"GET", "/v1/jobs/{id}", tw_h_jobs_get, "jobs_get"},
    {"DELETE", "/v1/jobs/{id}", tw_h_jobs_cancel, "jobs_cancel"},
    {"GET", "/v1/jobs/{id}/events", tw_h_jobs_events, "jobs_events"},
    {"GET", "/v1/jobs/{id}/logs", tw_h_jobs_logs, "jobs_logs"},
    {"POST", "/v1/workflows", tw_h_workflows_create, "workflows_create"},
    {"GET", "/v1/workflows", tw_h_workflows_list, "workflows_list"},
    {"GET", "/v1/workflows/{id}", tw_h_workflows_get, "workflows_get"},
    {"DELETE", "/v1/workflows/{id}", tw_h_workflows_cancel,
     "workflows_cancel"},
    {"GET", "/v1/workflows/{id}/tasks", tw_h_workflows_tasks,
     "workflows_tasks"},
    {"GET", "/v1/workflows/{id}/graph", tw_h_workflows_graph,
     "workflows_graph"},
    {"GET", "/v1/offers", tw_h_offers_list, "offers_list"},
    {"GET", "/v1/reports/spend", tw_h_reports_spend, "reports_spend"},
    {"GET", "/v1/replicas", tw_h_replicas, "replicas_list"},
    TW_PLACEMENT_ROUTES TW_TENANCY_ROUTES{"GET", "/healthz", tw_h_healthz,
                                          "healthz"},
    {"GET", "/readyz", tw_h_readyz, "readyz"},
    {"GET", "/metrics", tw_h_metrics, "metrics"},
    TW_AGENT_ROUTES TW_WORKDIR_ROUTES TW_STREAM_ROUTES TW_UI_ROUTES};
const size_t tw_n_routes = sizeof tw_routes / sizeof tw_routes[0];

struct tw_api_route_info *tw_api_route_table(size_t *n) {
  struct tw_api_route_info *info = tw_calloc(tw_n_routes, sizeof *info);
  for (size_t i = 0; i < tw_n_routes; i++) {
    info[i].method = tw_routes[i].method;
    info[i].path = tw_routes[i].path;
  }
  *n = tw_n_routes;
  return info;
}

/* Latency buckets in microseconds (Prometheus wants seconds: printed so). */
static const int64_t BUCKETS_US[] = {250,    500,     1000,   2500,   5000,
                                     10000,  25000,   50000,  100000, 250000,
                                     500000, 1000000, 2500000};
#define NBUCKETS (sizeof BUCKETS_US / sizeof BUCKETS_US[0])
#define NCLASSES 5 /* 1xx..5xx */

struct route_metrics {
  uint64_t by_class[NCLASSES];
  uint64_t buckets[NBUCKETS + 1];
  uint64_t sum_us;
  uint64_t count;
};

/* One open connection, for the deadlines of its request head and body
 * (libmicrohttpd's own timeout is an idle timer, restarted by every byte
 * a slow client sends).  The reaper thread cuts a connection past its
 * deadline with shutdown(2): libmicrohttpd then sees the end of the
 * stream and closes it itself.  The list is under tw_api.conn_mu, and
 * libmicrohttpd announces a connection closed before it closes the
 * socket, so the reaper never touches a descriptor reused by another. */
enum conn_phase {
  PH_HEAD,   /* waiting for (the rest of) a request head */
  PH_BODY,   /* head accepted, reading its body */
  PH_ANSWER, /* in the handler or sending the answer: the idle timer only */
  PH_CUT     /* past a deadline, shut down */
};

struct conn_slot {
  struct conn_slot *prev, *next;
  int fd;
  struct tw_door *door; /* the door that handed it over, or NULL */
  struct sockaddr_storage peer; /* its client, for the door's count */
  enum conn_phase phase;
  bool reused; /* a request was answered on it already (keep-alive) */
  int64_t deadline_us;
};

struct tw_api {
  bool (*ready)(void *ctx, char *why, size_t whysz); /* opts->ready */
  void *ready_ctx;
  struct MHD_Daemon *mhd;
  int listen_fd;
  int port;
  struct MHD_Daemon *probe_mhd; /* api.probe_listen, or NULL */
  int probe_fd;
  int probe_port;
  /* the doors of the listeners (api/door.h) */
  struct tw_door *door, *probe_door;
  SSL_CTX *ssl; /* TLS, terminated by the doors; or NULL */
  int64_t head_us, body_us; /* the deadlines */
  size_t max_head, max_url;
  bool tls;
  pthread_mutex_t conn_mu;
  pthread_cond_t conn_cv;
  pthread_t reaper;
  bool reaper_on, stopping;    /* under conn_mu */
  struct conn_slot *conns;     /* under conn_mu */
  uint64_t cut_head, cut_body; /* atomic: connections cut at a deadline */
  struct tw_store *store;
  struct tw_clock *clock;
  struct tw_provider **providers;
  size_t n_providers;
  const struct tw_provider_ops *const *adapters;
  /* the adapters' names, NULL-terminated, for spec and dataset checks */
  const char *provider_names[32];
  /* the fallback strategies' names, NULL-terminated, for `fallback:` */
  const char *fallback_names[16];
  const struct tw_spec_machine *machine; /* borrowed; NULL: none allowed */
  int64_t max_body; /* atomic */
  int64_t max_workdir; /* the bound of big_body routes */
  int draining;     /* atomic */
  struct route_metrics metrics[sizeof tw_routes / sizeof tw_routes[0] + 1];
  uint64_t in_flight; /* atomic */
  struct tw_auth *auth;
  struct tw_catalog *catalog;
  struct tw_placer *placer;
  struct tw_agent *agent;
  struct tw_tracer *tracer;
  void (*metrics_fn)(void *ctx, struct tw_buf *out);
  void *metrics_ctx;
  struct tw_stream_hub *hub; /* GET /v1/events/stream */
  uint64_t request_seed; /* request ids: see request_id() */
  uint64_t request_seq;  /* atomic */
};

struct tw_store *tw_api_store(struct tw_api *api) {
  return api->store;
}
struct tw_clock *tw_api_clock(struct tw_api *api) {
  return api->clock;
}
struct tw_provider *tw_api_provider(struct tw_api *api, const char *account) {
  for (size_t i = 0; i < api->n_providers; i++)
    if (!strcmp(tw_provider_account(api->providers[i]), account))
      return api->providers[i];
  return NULL;
}
const struct tw_provider_ops *const *tw_api_adapters(struct tw_api *api) {
  return api->adapters;
}
const char *const *tw_api_provider_names(struct tw_api *api) {
  return api->adapters ? api->provider_names : NULL;
}
struct tw_catalog *tw_api_catalog(struct tw_api *api) {
  return api->catalog;
}
struct tw_placer *tw_api_placer(struct tw_api *api) {
  return api->placer;
}
const char *const *tw_api_fallback_names(struct tw_api *api) {
  return api->fallback_names;
}
const struct tw_spec_machine *tw_api_machine(struct tw_api *api) {
  static const struct tw_spec_machine none = {0};
  return api->machine ? api->machine : &none;
}
struct tw_agent *tw_api_agent(struct tw_api *api) { return api->agent; }
struct tw_tracer *tw_api_tracer(struct tw_api *api) { return api->tracer; }
struct tw_stream_hub *tw_api_stream_hub(struct tw_api *api) {
  return api->hub;
}
struct tw_auth *tw_api_auth(struct tw_api *api) {
  return api->auth;
}
bool tw_api_ready(struct tw_api *api, char *why, size_t whysz) {
  return !api->ready || api->ready(api->ready_ctx, why, whysz);
}
bool tw_api_draining(struct tw_api *api) {
  return __atomic_load_n(&api->draining, __ATOMIC_ACQUIRE) != 0;
}
int tw_api_port(const struct tw_api *api) { return api->port; }
int tw_api_probe_port(const struct tw_api *api) { return api->probe_port; }
/* The bound of r's body: api.max_workdir_bytes for an uploaded workdir
 * (api/h_workdirs.h), api.max_body_bytes for the rest. */
static int64_t body_max(struct tw_api *api, const struct tw_req *r) {
  if (r->route >= 0 && !strcmp(tw_routes[r->route].name, "workdirs_put"))
    return api->max_workdir;
  return __atomic_load_n(&api->max_body, __ATOMIC_ACQUIRE);
}

void tw_api_set_max_body(struct tw_api *api, int64_t bytes) {
  __atomic_store_n(&api->max_body, bytes, __ATOMIC_RELEASE);
}

/* ---- requests ------------------------------------------------------------ */

/* A request id: the server's sequence number scrambled by splitmix64 from
 * a seed drawn at start, so ids are distinct within a server, look random
 * in the logs, and need no per-thread state. */
static void request_id(struct tw_api *api, char out[17]) {
  uint64_t x = api->request_seed +
               __atomic_fetch_add(&api->request_seq, 1, __ATOMIC_RELAXED) *
                   0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  snprintf(out, 17, "%016llx", (unsigned long long)x);
}

const char *tw_req_header(struct tw_req *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *tw_req_query(struct tw_req *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct query_scan {
  const char *const *keys;
  const char *unknown;
};

static enum MHD_Result scan_query(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value) {
  struct query_scan *q = cls;
  (void)kind;
  (void)value;
  for (size_t i = 0; q->keys[i]; i++)
    if (key && !strcmp(q->keys[i], key))
      return MHD_YES;
  q->unknown = key ? key : "";
  return MHD_NO;
}

bool tw_req_known_query(struct tw_req *r, const char *const *keys) {
  struct query_scan q = {.keys = keys};
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, scan_query, &q);
  if (!q.unknown)
    return true;
  struct tw_buf list;
  tw_buf_init(&list);
  for (size_t i = 0; keys[i]; i++)
    tw_buf_printf(&list, "%s%s", i ? ", " : "", keys[i]);
  tw_problem(r, 400, "invalid-field", q.unknown,
             "%.64s: unknown query parameter; expected one of %s", q.unknown,
             list.data ? list.data : "none");
  tw_buf_release(&list);
  return false;
}

void tw_req_add_header(struct tw_req *r, const char *name, const char *value) {
  if (r->n_hdr < TW_API_MAX_HEADERS) {
    r->hdr_name[r->n_hdr] = name;
    r->hdr_value[r->n_hdr++] = tw_strdup(value);
  }
}

void tw_req_json(struct tw_req *r, unsigned status) {
  r->status = status;
  r->content_type = "application/json";
}

/* Matches path against a template with {param} segments. */
static bool match(const char *tmpl, const char *path, struct tw_req *r) {
  size_t used = 0;
  int np = 0;
  while (*tmpl && *path) {
    if (*tmpl == '{') {
      const char *end = strchr(path, '/');
      size_t len = end ? (size_t)(end - path) : strlen(path);
      if (len == 0 || used + len + 1 > sizeof r->param_buf || np >= 2)
        return false;
      memcpy(r->param_buf + used, path, len);
      r->param_buf[used + len] = '\0';
      r->params[np++] = r->param_buf + used;
      used += len + 1;
      path += len;
      tmpl = strchr(tmpl, '}') + 1;
      continue;
    }
    if (*tmpl != *path)
      return false;
    tmpl++;
    path++;
  }
  return !*tmpl && !*path;
}

/* Returns the route index, or -1 with *path_known set when the path exists
 * under another method (405). */
static int route(struct tw_req *r, bool *path_known) {
  *path_known = false;
  for (size_t i = 0; i < tw_n_routes; i++) {
    if (!match(tw_routes[i].path, r->url, r))
      continue;
    *path_known = true;
    if (!strcmp(tw_routes[i].method, r->method))
      return (int)i;
  }
  return -1;
}

static void record(struct tw_api *api, int route_idx, unsigned status,
                   int64_t us) {
  struct route_metrics *m =
      &api->metrics[route_idx < 0 ? tw_n_routes : (size_t)route_idx];
  unsigned cls = status / 100;
  if (cls >= 1 && cls <= NCLASSES)
    __atomic_add_fetch(&m->by_class[cls - 1], 1, __ATOMIC_RELAXED);
  size_t b = 0;
  while (b < NBUCKETS && us > BUCKETS_US[b])
    b++;
  __atomic_add_fetch(&m->buckets[b], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&m->sum_us, (uint64_t)us, __ATOMIC_RELAXED);
  __atomic_add_fetch(&m->count, 1, __ATOMIC_RELAXED);
}

void tw_api_metrics_render(struct tw_api *api, struct tw_buf *out) {
  tw_buf_adds(out, "# HELP tradewind_http_requests_total HTTP requests "
                   "answered, by route and status class.\n"
                   "# TYPE tradewind_http_requests_total counter\n");
  for (size_t i = 0; i <= tw_n_routes; i++) {
    const char *name = i < tw_n_routes ? tw_routes[i].name : "unmatched";
    for (int c = 0; c < NCLASSES; c++) {
      uint64_t v =
          __atomic_load_n(&api->metrics[i].by_class[c], __ATOMIC_RELAXED);
      if (v)
        tw_buf_printf(
            out,
            "tradewind_http_requests_total{route=\"%s\",code=\"%dxx\"} %llu\n",
            name, c + 1, (unsigned long long)v);
    }
  }
  tw_buf_adds(out,
              "# HELP tradewind_http_request_duration_seconds Time from the "
              "request's first byte to its answer.\n"
              "# TYPE tradewind_http_request_duration_seconds histogram\n");
  for (size_t i = 0; i <= tw_n_routes; i++) {
    const struct route_metrics *m = &api->metrics[i];
    uint64_t count = __atomic_load_n(&m->count, __ATOMIC_RELAXED);
    if (!count)
      continue;
    const char *name = i < tw_n_routes ? tw_routes[i].name : "unmatched";
    uint64_t cum = 0;
    for (size_t b = 0; b <= NBUCKETS; b++) {
      cum += __atomic_load_n(&m->buckets[b], __ATOMIC_RELAXED);
      if (b < NBUCKETS)
        tw_buf_printf(out,
                      "tradewind_http_request_duration_seconds_bucket{route=\"%"
                      "s\",le=\"%g\"} %llu\n",
                      name, (double)BUCKETS_US[b] / 1e6,
                      (unsigned long long)cum);
      else
        tw_buf_printf(out,
                      "tradewind_http_request_duration_seconds_bucket{route=\"%"
                      "s\",le=\"+Inf\"} %llu\n",
                      name, (unsigned long long)cum);
    }
    tw_buf_printf(
        out, "tradewind_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n",
        name, (double)__atomic_load_n(&m->sum_us, __ATOMIC_RELAXED) / 1e6);
    tw_buf_printf(
        out,
        "tradewind_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
        name, (unsigned long long)count);
  }
  tw_buf_printf(
      out,
      "# HELP tradewind_http_requests_in_flight Requests being handled.\n"
      "# TYPE tradewind_http_requests_in_flight gauge\n"
      "tradewind_http_requests_in_flight %llu\n",
      (unsigned long long)__atomic_load_n(&api->in_flight, __ATOMIC_RELAXED));
  tw_buf_printf(
      out,
      "# HELP tradewind_http_deadline_cuts_total Connections cut because a "
      "request head or body missed its deadline.\n"
      "# TYPE tradewind_http_deadline_cuts_total counter\n"
      "tradewind_http_deadline_cuts_total{part=\"head\"} %llu\n"
      "tradewind_http_deadline_cuts_total{part=\"body\"} %llu\n",
      (unsigned long long)(__atomic_load_n(&api->cut_head, __ATOMIC_RELAXED) +
                           tw_door_cut(api->door) +
                           tw_door_cut(api->probe_door)),
      (unsigned long long)__atomic_load_n(&api->cut_body, __ATOMIC_RELAXED));
  tw_buf_printf(
      out,
      "# HELP tradewind_http_door_refused_total Request heads refused "
      "before the HTTP library parsed them (malformed, too large, not "
      "HTTP/1.x).\n"
      "# TYPE tradewind_http_door_refused_total counter\n"
      "tradewind_http_door_refused_total %llu\n",
      (unsigned long long)(tw_door_refused(api->door) +
                           tw_door_refused(api->probe_door)));
  if (api->metrics_fn)
    api->metrics_fn(api->metrics_ctx, out);
  tw_stream_hub_metrics(api->hub, out);
}

/* ---- the request's span ----------------------------------------------- */

/* Starts r's span: SERVER, the caller's traceparent its parent. */
static void span_begin(struct tw_req *r) {
  if (!r->api->tracer)
    return;
  struct tw_trace_ctx parent;
  tw_traceparent_parse(tw_req_header(r, "traceparent"), &parent);
  /* probes and the agents' reports (every few seconds each) are not
   * traced unless a caller asks with its traceparent: the agent's phases
   * are spans of the job's trace already (broker/sched/agent.c) */
  const char *rn = r->route >= 0 ? tw_routes[r->route].name : "";
  if (!parent.valid &&
      (!strcmp(rn, "healthz") || !strcmp(rn, "readyz") ||
       !strncmp(r->url, "/v1/agent/", 10)))
    return;
  r->span = tw_span_alloc(r->api->tracer); /* a block of the tracer's */
  const char *tmpl = r->route >= 0 ? tw_routes[r->route].path : "unmatched";
  char name[96]; /* "METHOD /route", cut to fit: no printf per request */
  size_t ml = strnlen(r->method, 16), tl = strnlen(tmpl, sizeof name - ml - 2);
  memcpy(name, r->method, ml);
  name[ml] = ' ';
  memcpy(name + ml + 1, tmpl, tl);
  name[ml + 1 + tl] = '\0';
  tw_span_start(r->api->tracer, r->span, name, TW_SPAN_SERVER, &parent);
  tw_span_attr_str(r->span, "http.request.method", r->method);
  tw_span_attr_str(r->span, "http.route", tmpl);
  tw_span_attr_str(r->span, "url.path", r->url);
  tw_span_attr_str(r->span, "tradewind.request_id", r->request_id);
}

/* Log lines of this thread carry r's ids while it works for r. */
static void span_log(struct tw_req *r, bool on) {
  if (!r->span || !r->span->ctx.valid)
    return;
  if (!on) {
    tw_log_set_trace(NULL, NULL);
    return;
  }
  char t[33], sp[17];
  tw_trace_hex(r->span->ctx.trace_id, 16, t);
  tw_trace_hex(r->span->ctx.span_id, 8, sp);
  tw_log_set_trace(t, sp);
}

static void span_finish(struct tw_req *r) {
  if (!r->span)
    return;
  tw_span_attr_int(r->span, "http.response.status_code", r->status);
  if (r->status >= 500)
    tw_span_error(r->span, "status %u", r->status);
  tw_span_end(r->span);
}

static void finish(struct tw_req *r, bool send_body,
                   struct MHD_Connection *conn, enum MHD_Result *res) {
  struct MHD_Response *resp = r->stream;
  r->stream = NULL;
  if (!resp)
    resp = MHD_create_response_from_buffer(
        r->out.len, r->out.data ? r->out.data : (void *)"",
        MHD_RESPMEM_MUST_COPY);
  (void)send_body;
  if (r->content_type)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type);
  /* while draining, clients must not reuse the connection; nor after an
   * answer from the head alone (its body, if any, was never read) */
  if (tw_api_draining(r->api) || r->close)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  MHD_add_response_header(resp, "X-Request-Id", r->request_id);
  for (int i = 0; i < r->n_hdr; i++)
    MHD_add_response_header(resp, r->hdr_name[i], r->hdr_value[i]);
  if (r->status == 405) {
    /* the methods this path accepts */
    struct tw_buf allow;
    tw_buf_init(&allow);
    struct tw_req probe = *r;
    for (size_t i = 0; i < tw_n_routes; i++)
      if (match(tw_routes[i].path, r->url, &probe))
        tw_buf_printf(&allow, "%s%s", allow.len ? ", " : "",
                      tw_routes[i].method);
    MHD_add_response_header(resp, "Allow", allow.data ? allow.data : "");
    tw_buf_release(&allow);
  }
  *res = MHD_queue_response(conn, r->status, resp);
  MHD_destroy_response(resp);
  record(r->api, r->route, r->status, tw_mono_us() - r->start_us);
  tw_log_debug("api", "request=%s method=%s path=%s status=%u us=%lld",
               r->request_id, r->method, r->url, r->status,
               (long long)(tw_mono_us() - r->start_us));
  span_finish(r);
  span_log(r, false);
}

/* ---- connections and their deadlines ------------------------------------ */

static void connection_note(struct tw_api *api, struct tw_door *door,
                            struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn_slot *c = tw_calloc(1, sizeof *c);
    c->fd = ci ? ci->connect_fd : -1;
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (door && ai && ai->client_addr) {
      size_t len = ai->client_addr->sa_family == AF_INET6
                       ? sizeof(struct sockaddr_in6)
                       : sizeof(struct sockaddr_in);
      memcpy(&c->peer, ai->client_addr, len);
      c->door = door;
    }
    c->phase = PH_HEAD;
    c->deadline_us = tw_mono_us() + api->head_us;
    pthread_mutex_lock(&api->conn_mu);
    c->next = api->conns;
    if (api->conns)
      api->conns->prev = c;
    api->conns = c;
    pthread_mutex_unlock(&api->conn_mu);
    *socket_context = c;
    return;
  }
  struct conn_slot *c = *socket_context;
  if (!c)
    return;
  pthread_mutex_lock(&api->conn_mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    api->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  pthread_mutex_unlock(&api->conn_mu);
  /* its place at the door is free */
  tw_door_release(c->door, c->fd, (struct sockaddr *)&c->peer);
  free(c);
  *socket_context = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  struct tw_api *api = cls;
  connection_note(api, api->door, conn, socket_context, code);
}

static void on_probe_connection(void *cls, struct MHD_Connection *conn,
                                void **socket_context,
                                enum MHD_ConnectionNotificationCode code) {
  struct tw_api *api = cls;
  connection_note(api, api->probe_door, conn, socket_context, code);
}

static void door_request_id(void *ctx, char out[17]) { request_id(ctx, out); }

static struct conn_slot *slot_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* Moves a connection to phase, with a deadline of `us` from now (0: none);
 * a connection already cut stays cut. */
static void slot_set(struct tw_api *api, struct conn_slot *c,
                     enum conn_phase phase, int64_t us, bool reused) {
  if (!c)
    return;
  pthread_mutex_lock(&api->conn_mu);
  if (c->phase != PH_CUT) {
    c->phase = phase;
    c->deadline_us = us ? tw_mono_us() + us : 0;
    c->reused |= reused;
  }
  pthread_mutex_unlock(&api->conn_mu);
}

/* Under conn_mu.  A client that sent a part of a first request, or a body,
 * gets a 408 problem before the cut; an idle keep-alive connection is
 * closed without a word (RFC 9112 section 9.5), since its client may be
 * sending its next request right now.  Over TLS too: the library's
 * socket is the door's relay, which says it through the session. */
static void cut(struct tw_api *api, struct conn_slot *c) {
  bool body = c->phase == PH_BODY;
  if (c->fd >= 0 && (body || !c->reused)) {
    char json[256], msg[512];
    int jl =
        snprintf(json, sizeof json,
                 "{\"type\":\"/problems/timeout\",\"title\":\"Request "
                 "Timeout\",\"status\":408,\"detail\":\"the request %s "
                 "did not arrive within %lld s\"}",
                 body ? "body" : "head",
                 (long long)((body ? api->body_us : api->head_us) / 1000000));
    int ml = snprintf(msg, sizeof msg,
                      "HTTP/1.1 408 Request Timeout\r\nContent-Type: "
                      "application/problem+json\r\nConnection: close\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      jl, json);
    (void)!send(c->fd, msg, (size_t)ml, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  if (c->fd >= 0)
    shutdown(c->fd, SHUT_RDWR);
  __atomic_add_fetch(body ? &api->cut_body : &api->cut_head, 1,
                     __ATOMIC_RELAXED);
  c->phase = PH_CUT;
}

static void *reaper_main(void *arg) {
  struct tw_api *api = arg;
  pthread_mutex_lock(&api->conn_mu);
  while (!api->stopping) {
    int64_t now = tw_mono_us();
    for (struct conn_slot *c = api->conns; c; c = c->next)
      if ((c->phase == PH_HEAD || c->phase == PH_BODY) && c->deadline_us &&
          now >= c->deadline_us)
        cut(api, c);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 100 * 1000000L; /* deadlines are kept to 0.1 s */
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&api->conn_cv, &api->conn_mu, &ts);
  }
  pthread_mutex_unlock(&api->conn_mu);
  return NULL;
}

/* ---- the request head -----------------------------------------------------
 */

struct head_scan {
  size_t bytes;
  int n_cl, n_te, n_host;
  const char *cl;
  bool cl_differ;
  const char *te;
  const char *bad_name; /* a header name that is not an RFC 9110 token */
};

static bool tchar(unsigned char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
         (ch >= 'A' && ch <= 'Z') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value) {
  struct head_scan *h = cls;
  (void)kind;
  if (!key)
    return MHD_YES;
  h->bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
  for (const char *p = key; *p && !h->bad_name; p++)
    if (!tchar((unsigned char)*p))
      h->bad_name = key;
  if (!*key && !h->bad_name)
    h->bad_name = key;
  if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
    if (h->n_cl++ && strcmp(h->cl, value ? value : ""))
      h->cl_differ = true;
    else
      h->cl = value ? value : "";
  } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
    h->n_te++;
    h->te = value ? value : "";
  } else if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
    h->n_host++;
  }
  return MHD_YES;
}

static enum MHD_Result scan_arg(void *cls, enum MHD_ValueKind kind,
                                const char *key, const char *value) {
  (void)kind;
  *(size_t *)cls += (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 2;
  return MHD_YES;
}

/* Checks the head before any body byte is read: framing (RFC 9112 sections
 * 6.1 and 6.3), sizes, Host, the route, the token, the declared length.
 * false: answered (r->status set), and the connection is to be closed. */
static bool head_ok(struct tw_api *api, struct tw_req *r, const char *version,
                    bool probe_only, bool *has_body) {
  struct MHD_Connection *conn = r->conn;
  struct head_scan h = {0};
  MHD_get_connection_values(conn, MHD_HEADER_KIND, scan_header, &h);
  size_t url_bytes = strlen(r->url);
  MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, scan_arg, &url_bytes);
  bool http11 = !strcmp(version, MHD_HTTP_VERSION_1_1);
  *has_body = false;
  if (h.bad_name) {
    tw_problem(r, 400, "malformed", "headers",
               "a header name must be a token (RFC 9110 section 5.1)");
    return false;
  }
  if (h.cl_differ) {
    tw_problem(r, 400, "malformed", "Content-Length",
               "Content-Length is given twice with different values");
    return false;
  }
  if (h.n_te && h.n_cl) {
    tw_problem(r, 400, "malformed", "Transfer-Encoding",
               "Transfer-Encoding and Content-Length together: the body's "
               "length is ambiguous (RFC 9112 section 6.3)");
    return false;
  }
  if (h.n_te && (h.n_te > 1 || strcasecmp(h.te, "chunked") || !http11)) {
    tw_problem(r, 400, "malformed", "Transfer-Encoding",
               "Transfer-Encoding: only a single \"chunked\" is accepted, "
               "and only over HTTP/1.1");
    return false;
  }
  if (h.n_te) {
    /* a body's length is declared up front (RFC 9112 section 6.3 lets a
     * server refuse one without it): no chunk is ever parsed, so no
     * malformed chunk can reach the library's own error answer */
    tw_problem(r, 411, "length-required", "Transfer-Encoding",
               "a request body must come with Content-Length: chunked "
               "bodies are refused");
    return false;
  }
  if (http11 && h.n_host != 1) {
    tw_problem(r, 400, "malformed", "Host",
               h.n_host ? "Host is given more than once"
                        : "HTTP/1.1 requires a Host header (RFC 9112 section "
                          "3.2)");
    return false;
  }
  if (url_bytes > api->max_url) {
    tw_problem(r, 414, "uri-too-long", NULL,
               "the request target is over %zu bytes", api->max_url);
    return false;
  }
  if (h.bytes + url_bytes > api->max_head) {
    tw_problem(r, 431, "headers-too-large", NULL,
               "the request head is over %zu bytes", api->max_head);
    return false;
  }
  if (probe_only && r->route >= 0 &&
      strcmp(tw_routes[r->route].name, "healthz") &&
      strcmp(tw_routes[r->route].name, "readyz"))
    r->route = -1;
  if (r->route < 0) {
    bool known = false;
    if (!probe_only)
      route(r, &known);
    if (known)
      tw_problem(r, 405, "method-not-allowed", NULL, "%s is not allowed on %s",
                 r->method, r->url);
    else
      tw_problem(r, 404, "not-found", NULL, "no route for %s %s%s", r->method,
                 r->url, probe_only ? " on the probe listener" : "");
    return false;
  }
  if (!tw_auth_head(r))
    return false; /* 401 or 429: the body is never read */
  int64_t max = body_max(api, r);
  if (h.cl) {
    /* libmicrohttpd refused a malformed one before this call */
    unsigned long long n = strtoull(h.cl, NULL, 10);
    if (n > (unsigned long long)max) {
      tw_problem(r, 413, "too-large", NULL, "request body exceeds %lld bytes",
                 (long long)max);
      return false;
    }
    *has_body = n > 0;
  }
  if (h.n_te)
    *has_body = true;
  return true;
}

static enum MHD_Result serve(struct tw_api *api, bool probe_only,
                             struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version,
                             const char *upload_data, size_t *upload_size,
                             void **con_cls) {
  struct tw_req *r = *con_cls;
  enum MHD_Result res = MHD_YES;
  if (!r) {
    r = tw_calloc(1, sizeof *r);
    r->api = api;
    r->conn = conn;
    r->method = method;
    r->url = url;
    r->start_us = tw_mono_us();
    request_id(api, r->request_id);
    tw_buf_init(&r->body);
    tw_buf_init(&r->out);
    bool known;
    r->route = route(r, &known);
    span_begin(r);
    span_log(r, true);
    *con_cls = r;
    __atomic_add_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
    struct conn_slot *slot = slot_of(conn);
    bool has_body = false;
    if (!head_ok(api, r, version, probe_only, &has_body)) {
      /* answered from the head alone: no 100 Continue, no body byte read,
       * and the connection closes (what follows is not to be trusted) */
      r->answered = true;
      r->close = true;
      slot_set(api, slot, PH_ANSWER, 0, false);
      finish(r, strcmp(method, "HEAD") != 0, conn, &res);
      return res;
    }
    if (has_body)
      slot_set(api, slot, PH_BODY, api->body_us, false);
    else
      slot_set(api, slot, PH_ANSWER, 0, false);
    span_log(r, false);
    return MHD_YES;
  }
  if (r->answered) {
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    int64_t max = body_max(api, r);
    if (!r->too_big && (int64_t)(r->body.len + *upload_size) <= max)
      tw_buf_add(&r->body, upload_data, *upload_size);
    else
      r->too_big = true; /* keep reading and discarding, answer at the end;
                            the body's deadline bounds how long */
    *upload_size = 0;
    return MHD_YES;
  }
  slot_set(api, slot_of(conn), PH_ANSWER, 0, false);
  r->answered = true;
  r->status = 500;
  if (r->too_big) {
    r->close = true;
    tw_problem(r, 413, "too-large", NULL, "request body exceeds %lld bytes",
               (long long)body_max(api, r));
  } else {
    span_log(r, true);
    tw_auth_dispatch(r, tw_routes[r->route].fn); /* authn, authz, audit */
  }
  finish(r, strcmp(method, "HEAD") != 0, conn, &res);
  return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  return serve(cls, false, conn, url, method, version, upload_data, upload_size,
               con_cls);
}

/* The probe listener: /healthz and /readyz, nothing else. */
static enum MHD_Result on_probe(void *cls, struct MHD_Connection *conn,
                                const char *url, const char *method,
                                const char *version, const char *upload_data,
                                size_t *upload_size, void **con_cls) {
  return serve(cls, true, conn, url, method, version, upload_data, upload_size,
               con_cls);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)toe;
  struct tw_api *api = cls;
  struct tw_req *r = *con_cls;
  /* the next request's head has its deadline from now */
  slot_set(api, slot_of(conn), PH_HEAD, api->head_us, true);
  if (!r)
    return;
  tw_buf_release(&r->body);
  tw_buf_release(&r->out);
  if (r->stream)
    MHD_destroy_response(r->stream);
  for (int i = 0; i < r->n_hdr; i++)
    free(r->hdr_value[i]);
  free(r->head_auth);
  tw_span_release(api->tracer, r->span);
  free(r);
  *con_cls = NULL;
  __atomic_sub_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
}

/* libmicrohttpd's own diagnostics (malformed requests it refused) go to our
 * log as debug lines of the `http` subsystem: they are the client's fault. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  /* its socket is the door's relay, a local socket: TCP options fail on
   * it, which says nothing (and would cost a formatted line an answer) */
  if (!strncmp(fmt, "Setting %s option to %s state failed", 36) ||
      !strncmp(fmt, "Failed to push the data from buffers", 36))
    return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  tw_log_debug("http", "%s", line);
}

static enum tw_rc bind_listen(const char *listen_addr, int *fd_out,
                              int *port_out, struct tw_err *err) {
  char host[256];
  const char *colon = strrchr(listen_addr, ':');
  if (!colon || (size_t)(colon - listen_addr) >= sizeof host)
    return tw_err_field(err, TW_E_INVALID, "listen",
                        "listen: expected HOST:PORT, got \"%s\"", listen_addr);
  memcpy(host, listen_addr, (size_t)(colon - listen_addr));
  host[colon - listen_addr] = '\0';
  /* [::1]:8420 */
  char *h = host;
  if (h[0] == '[' && h[strlen(h) - 1] == ']') {
    h[strlen(h) - 1] = '\0';
    h++;
  }
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gr = getaddrinfo(*h ? h : NULL, colon + 1, &hints, &ai);
  if (gr != 0)
    return tw_err_field(err, TW_E_INVALID, "listen",
                        "listen: cannot resolve \"%s\": %s", listen_addr,
                        gai_strerror(gr));
  int fd =
      socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    freeaddrinfo(ai);
    return tw_err_set(err, TW_E_IO, "listen: socket: %s", strerror(errno));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
    int e = errno;
    close(fd);
    freeaddrinfo(ai);
    return tw_err_set(err, TW_E_IO, "listen: cannot listen on %s: %s",
                      listen_addr, strerror(e));
  }
  freeaddrinfo(ai);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  *port_out =
      ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
  *fd_out = fd;
  return TW_OK;
}

static void fail_start(struct tw_api *api) {
  tw_door_stop(api->door);
  tw_door_stop(api->probe_door);
  if (api->probe_mhd)
    MHD_stop_daemon(api->probe_mhd);
  if (api->mhd)
    MHD_stop_daemon(api->mhd);
  tw_door_free(api->door);
  tw_door_free(api->probe_door);
  if (api->listen_fd >= 0)
    close(api->listen_fd);
  if (api->probe_fd >= 0)
    close(api->probe_fd);
  pthread_mutex_destroy(&api->conn_mu);
  pthread_cond_destroy(&api->conn_cv);
  tw_stream_hub_free(api->hub);
  tw_auth_free(api->auth);
  SSL_CTX_free(api->ssl);
  free(api);
}

enum tw_rc tw_api_start(const struct tw_api_opts *opts, struct tw_api **out,
                        struct tw_err *err) {
  struct tw_api *api = tw_calloc(1, sizeof *api);
  enum tw_rc rc;
  *out = NULL;
  api->listen_fd = api->probe_fd = -1;
  pthread_mutex_init(&api->conn_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&api->conn_cv, &ca);
  pthread_condattr_destroy(&ca);
  api->store = opts->store;
  api->clock = opts->clock ? opts->clock : tw_clock_real();
  api->providers = opts->providers;
  api->n_providers = opts->n_providers;
  api->adapters = opts->adapters;
  size_t np = tw_provider_names(
      opts->adapters, api->provider_names,
      sizeof api->provider_names / sizeof api->provider_names[0]);
  /* the catalog's clouds without an adapter (gcp) may be named too: in
   * selectors, residency, datasets; their offers are plannable */
  const char *only[8];
  size_t no = tw_cat_catalog_only_names(only, sizeof only / sizeof only[0]);
  for (size_t i = 0; i < no && np + 1 < sizeof api->provider_names /
                                            sizeof api->provider_names[0];
       i++) {
    bool dup = false;
    for (size_t k = 0; k < np && !dup; k++)
      dup = !strcmp(api->provider_names[k], only[i]);
    if (!dup) {
      api->provider_names[np++] = only[i];
      api->provider_names[np] = NULL;
    }
  }
  tw_fallback_names(api->fallback_names,
                    sizeof api->fallback_names / sizeof api->fallback_names[0]);
  api->machine = opts->machine;
  api->max_body = opts->max_body_bytes > 0 ? opts->max_body_bytes : (1 << 20);
  api->max_workdir =
      opts->max_workdir_bytes > 0 ? opts->max_workdir_bytes : (64 << 20);
  api->catalog = opts->catalog;
  api->placer = opts->placer;
  api->ready = opts->ready;
  api->ready_ctx = opts->ready_ctx;
  api->agent = opts->agent;
  api->tracer = opts->tracer;
  api->metrics_fn = opts->metrics;
  api->metrics_ctx = opts->metrics_ctx;
  api->request_seed = tw_unique_id();
  api->head_us =
      (int64_t)(opts->head_timeout_s ? opts->head_timeout_s : 10) * 1000000;
  api->body_us =
      (int64_t)(opts->body_timeout_s ? opts->body_timeout_s : 60) * 1000000;
  api->max_head = opts->max_head_bytes ? opts->max_head_bytes : 16384;
  api->max_url = opts->max_url_bytes ? opts->max_url_bytes : 8192;
  unsigned threads = opts->threads ? opts->threads : 64;
  unsigned per_addr = opts->max_per_address ? opts->max_per_address : 128;
  unsigned max_conn = opts->max_connections ? opts->max_connections : 1024u;
  bool every_head = opts->judge_heads && !strcmp(opts->judge_heads, "every");
  if (!every_head && opts->judge_heads && *opts->judge_heads &&
      strcmp(opts->judge_heads, "first")) {
    fail_start(api);
    return tw_err_field(err, TW_E_INVALID, "api.judge_heads",
                        "api.judge_heads: \"%.32s\" is neither \"every\" nor "
                        "\"first\"",
                        opts->judge_heads);
  }
  if (!opts->threads && threads > max_conn)
    threads = max_conn; /* the default: no more threads than connections */
  if (threads > max_conn) {
    /* each thread takes its share of the connections: at least one */
    fail_start(api);
    return tw_err_field(err, TW_E_INVALID, "api.threads",
                        "api.threads: %u threads cannot share %u connections "
                        "(api.max_connections); give at most %u",
                        threads, max_conn, max_conn);
  }
  /* A fixed pool of threads, each polling its share of the connections
   * with epoll: the thread count does not follow the connection count. */
  unsigned flags =
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
  const char *cert_pem, *key_pem;
  if ((rc = tw_auth_new(&opts->auth, api->clock, &api->auth, err)) ||
      (rc = tw_auth_tls_pem(api->auth, &cert_pem, &key_pem, err))) {
    fail_start(api);
    return rc;
  }
  api->tls = cert_pem != NULL;
  /* TLS ends at the door (api/door.h), which hands the library plain
   * text: the same judgement for every head, over either */
  if (api->tls && !(api->ssl = tw_door_tls_ctx(cert_pem, key_pem, err))) {
    fail_start(api);
    return err ? err->rc : TW_E_INVALID;
  }
  if ((rc = bind_listen(opts->listen, &api->listen_fd, &api->port, err))) {
    fail_start(api);
    return rc;
  }
  /* Each connection's memory: the largest head we accept with room for
   * the answer, so our own 414 and 431 (problem+json) come before the
   * library's (which has no content type). */
  size_t pool = api->max_head + api->max_url + 16384;
  /* event streams wait suspended, off the pool (h_stream.h) */
  unsigned main_flags = flags | MHD_ALLOW_SUSPEND_RESUME;
  if ((rc = tw_stream_hub_start(api->store, opts->max_streams, &api->hub,
                                 err))) {
    fail_start(api);
    return rc;
  }
  /* The door (api/door.h) accepts every connection, judges its heads and
   * hands it over (relayed: TLS, and with api.judge_heads "every" each
   * plain one, so that each later head on it is judged too); it holds the connection limits itself, so
   * the library's are only a backstop, loose enough never to refuse what
   * the door admitted while a closed connection is still being cleaned
   * up. */
  main_flags |= MHD_USE_NO_LISTEN_SOCKET;
  unsigned lib_conn = 2 * max_conn + threads;
  unsigned lib_per_addr = 2 * per_addr;
  api->mhd = MHD_start_daemon(
      main_flags, 0, NULL, NULL, on_request, api,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_NOTIFY_COMPLETED,
      on_completed, api, MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
      lib_conn, MHD_OPTION_PER_IP_CONNECTION_LIMIT, lib_per_addr,
      MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : 60u,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_THREAD_STACK_SIZE,
      (size_t)(1u << 20), MHD_OPTION_END);
  if (!api->mhd) {
    fail_start(api);
    return tw_err_set(err, TW_E_IO, "api: cannot start the HTTP server");
  }
  /* the head as sent: at most what the server's own checks measure
   * (max_head_bytes, the target included) with room for its encoding */
  struct tw_door_opts dopts = {
      .listen_fd = api->listen_fd,
      .mhd = api->mhd,
      .max_connections = max_conn,
      .max_per_address = per_addr,
      .head_us = api->head_us,
      .limits = {.max_head = api->max_head + api->max_url, .pool = pool},
      .request_id = door_request_id,
      .ctx = api,
      .tls = api->ssl,
      .relay = every_head,
      .idle_us = (int64_t)(opts->timeout_s ? opts->timeout_s : 60u) * 1000000};
  if ((rc = tw_door_start(&dopts, &api->door, err))) {
    fail_start(api);
    return rc;
  }
  if (opts->probe_listen && *opts->probe_listen) {
    if ((rc = bind_listen(opts->probe_listen, &api->probe_fd, &api->probe_port,
                          err))) {
      fail_start(api);
      return rc;
    }
    /* one thread, few connections: probes are small and quick */
    api->probe_mhd = MHD_start_daemon(
        flags | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, on_probe, api,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, api, MHD_OPTION_NOTIFY_CONNECTION, on_probe_connection,
        api, MHD_OPTION_CONNECTION_LIMIT, 2 * 64u,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, 2 * 8u,
        MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        pool, MHD_OPTION_END);
    if (!api->probe_mhd) {
      fail_start(api);
      return tw_err_set(err, TW_E_IO, "api: cannot start the probe listener");
    }
    dopts.listen_fd = api->probe_fd;
    dopts.mhd = api->probe_mhd;
    dopts.max_connections = 64;
    dopts.max_per_address = 8;
    if ((rc = tw_door_start(&dopts, &api->probe_door, err))) {
      fail_start(api);
      return rc;
    }
  }
  if (pthread_create(&api->reaper, NULL, reaper_main, api)) {
    fail_start(api);
    return tw_err_set(err, TW_E_IO, "api: cannot start the deadline thread");
  }
  api->reaper_on = true;
  *out = api;
  return TW_OK;
}

void tw_api_drain(struct tw_api *api) {
  if (__atomic_exchange_n(&api->draining, 1, __ATOMIC_ACQ_REL))
    return;
  /* streams end (their clients resume elsewhere): none may stay
   * suspended when the daemon stops */
  tw_stream_hub_end_all(api->hub);
  /* The pool's workers drop the listening socket from their epoll sets on
   * their own time after the quiesce: closing it now would race them.  It
   * stops listening at once (new connections are refused) and is closed
   * once the daemon has stopped. */
  if (api->door) {
    /* the door stops accepting; the socket is closed at the stop */
    tw_door_quiesce(api->door);
    return;
  }
  MHD_socket fd = MHD_quiesce_daemon(api->mhd);
  if (fd != MHD_INVALID_SOCKET)
    shutdown(fd, SHUT_RDWR);
  api->listen_fd = fd != MHD_INVALID_SOCKET ? fd : -1;
}

void tw_api_stop(struct tw_api *api) {
  if (!api)
    return;
  tw_api_drain(api);
  /* MHD_stop_daemon closes every connection, including those whose request
   * is still in a handler: wait (bounded) until every request in flight has
   * had its answer queued and sent, so a stored job never loses its 2xx. */
  int64_t deadline = tw_mono_us() + 30 * 1000000LL;
  while (__atomic_load_n(&api->in_flight, __ATOMIC_ACQUIRE) > 0 &&
         tw_mono_us() < deadline)
    usleep(1000);
  pthread_mutex_lock(&api->conn_mu);
  api->stopping = true;
  pthread_cond_signal(&api->conn_cv);
  pthread_mutex_unlock(&api->conn_mu);
  if (api->reaper_on)
    pthread_join(api->reaper, NULL);
  /* the doors first: they hand connections to the library */
  tw_door_stop(api->door);
  tw_door_stop(api->probe_door);
  MHD_stop_daemon(api->mhd);
  if (api->listen_fd >= 0)
    close(api->listen_fd); /* quiesced by tw_api_drain */
  if (api->probe_mhd)
    MHD_stop_daemon(api->probe_mhd);
  if (api->probe_door && api->probe_fd >= 0)
    close(api->probe_fd); /* the library never held it */
  tw_door_free(api->door);
  tw_door_free(api->probe_door);
  pthread_mutex_destroy(&api->conn_mu);
  pthread_cond_destroy(&api->conn_cv);
  tw_stream_hub_free(api->hub);
  tw_auth_free(api->auth);
  SSL_CTX_free(api->ssl);
  free(api);
}
