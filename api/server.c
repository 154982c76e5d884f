/* server.c - libmicrohttpd glue: listening, routing, body limits, metrics,
 * draining. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api_int.h"
#include "api/auth_int.h"
#include "api/auth_routes.h"
#include "api/h_placement.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/unique.h"
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
    {"GET", "/v1/offers", tw_h_offers_list, "offers_list"},
    {"GET", "/v1/reports/spend", tw_h_reports_spend, "reports_spend"},
    TW_PLACEMENT_ROUTES TW_TENANCY_ROUTES{"GET", "/healthz", tw_h_healthz,
                                          "healthz"},
    {"GET", "/readyz", tw_h_readyz, "readyz"},
    {"GET", "/metrics", tw_h_metrics, "metrics"},
};
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

struct tw_api {
  bool (*ready)(void *ctx, char *why, size_t whysz); /* opts->ready */
  void *ready_ctx;
  struct MHD_Daemon *mhd;
  int listen_fd;
  int port;
  struct tw_store *store;
  struct tw_clock *clock;
  struct tw_provider **providers;
  size_t n_providers;
  const struct tw_provider_ops *const *adapters;
  /* the adapters' names, NULL-terminated, for spec and dataset checks */
  const char *provider_names[32];
  /* the fallback strategies' names, NULL-terminated, for `fallback:` */
  const char *fallback_names[16];
  int64_t max_body; /* atomic */
  int draining;     /* atomic */
  struct route_metrics metrics[sizeof tw_routes / sizeof tw_routes[0] + 1];
  uint64_t in_flight; /* atomic */
  struct tw_auth *auth;
  struct tw_catalog *catalog;
  struct tw_placer *placer;
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
}

static void finish(struct tw_req *r, bool send_body,
                   struct MHD_Connection *conn, enum MHD_Result *res) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      r->out.len, r->out.data ? r->out.data : (void *)"",
      MHD_RESPMEM_MUST_COPY);
  (void)send_body;
  if (r->content_type)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type);
  /* while draining, clients must not reuse the connection */
  if (tw_api_draining(r->api))
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
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  struct tw_api *api = cls;
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
    *con_cls = r;
    __atomic_add_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
    /* Refuse an oversized body from its Content-Length, before reading it. */
    const char *cl = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t max = __atomic_load_n(&api->max_body, __ATOMIC_ACQUIRE);
    if (cl && strtoll(cl, NULL, 10) > max)
      r->too_big = true;
    return MHD_YES;
  }
  if (*upload_size) {
    int64_t max = __atomic_load_n(&api->max_body, __ATOMIC_ACQUIRE);
    if (!r->too_big && (int64_t)(r->body.len + *upload_size) <= max)
      tw_buf_add(&r->body, upload_data, *upload_size);
    else
      r->too_big = true; /* keep reading and discarding, answer at the end */
    *upload_size = 0;
    return MHD_YES;
  }
  r->status = 500;
  if (r->too_big) {
    tw_problem(r, 413, "too-large", NULL, "request body exceeds %lld bytes",
               (long long)__atomic_load_n(&api->max_body, __ATOMIC_ACQUIRE));
  } else if (r->route < 0) {
    bool known;
    route(r, &known);
    if (known)
      tw_problem(r, 405, "method-not-allowed", NULL, "%s is not allowed on %s",
                 method, url);
    else
      tw_problem(r, 404, "not-found", NULL, "no route for %s %s", method, url);
  } else {
    tw_auth_dispatch(r, tw_routes[r->route].fn); /* authn, authz, audit */
  }
  finish(r, strcmp(method, "HEAD") != 0, conn, &res);
  return res;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)conn;
  (void)toe;
  struct tw_api *api = cls;
  struct tw_req *r = *con_cls;
  if (!r)
    return;
  tw_buf_release(&r->body);
  tw_buf_release(&r->out);
  for (int i = 0; i < r->n_hdr; i++)
    free(r->hdr_value[i]);
  free(r);
  *con_cls = NULL;
  __atomic_sub_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
}

/* libmicrohttpd's own diagnostics (malformed requests it refused) go to our
 * log as debug lines of the `http` subsystem: they are the client's fault. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
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
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
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

enum tw_rc tw_api_start(const struct tw_api_opts *opts, struct tw_api **out,
                        struct tw_err *err) {
  struct tw_api *api = tw_calloc(1, sizeof *api);
  enum tw_rc rc;
  *out = NULL;
  api->store = opts->store;
  api->clock = opts->clock ? opts->clock : tw_clock_real();
  api->providers = opts->providers;
  api->n_providers = opts->n_providers;
  api->adapters = opts->adapters;
  tw_provider_names(opts->adapters, api->provider_names,
                    sizeof api->provider_names / sizeof api->provider_names[0]);
  tw_fallback_names(api->fallback_names,
                    sizeof api->fallback_names / sizeof api->fallback_names[0]);
  api->max_body = opts->max_body_bytes > 0 ? opts->max_body_bytes : (1 << 20);
  api->catalog = opts->catalog;
  api->placer = opts->placer;
  api->ready = opts->ready;
  api->ready_ctx = opts->ready_ctx;
  api->request_seed = tw_unique_id();
  /* TLS: libmicrohttpd over GnuTLS, from the configured PEM files */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG;
  struct MHD_OptionItem tls[3];
  size_t ntls = 0;
  if ((rc = tw_auth_new(&opts->auth, api->clock, &api->auth, err)) ||
      (rc = tw_auth_tls(api->auth, &flags, tls, 2, &ntls, err))) {
    tw_auth_free(api->auth);
    free(api);
    return rc;
  }
  tls[ntls] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  if ((rc = bind_listen(opts->listen, &api->listen_fd, &api->port, err))) {
    tw_auth_free(api->auth);
    free(api);
    return rc;
  }
  /* Thread per connection: see api.h.  ITC lets quiesce wake the listener. */
  api->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, api,
      /* the logger first, so the TLS setup's complaints reach it */
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_ARRAY, tls,
      MHD_OPTION_LISTEN_SOCKET, api->listen_fd, MHD_OPTION_NOTIFY_COMPLETED,
      on_completed, api, MHD_OPTION_CONNECTION_LIMIT,
      opts->max_connections ? opts->max_connections : 1024u,
      MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : 60u,
      MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1u << 20), MHD_OPTION_END);
  if (!api->mhd) {
    close(api->listen_fd);
    tw_auth_free(api->auth);
    free(api);
    return tw_err_set(err, TW_E_IO, "api: cannot start the HTTP server");
  }
  *out = api;
  return TW_OK;
}

void tw_api_drain(struct tw_api *api) {
  if (__atomic_exchange_n(&api->draining, 1, __ATOMIC_ACQ_REL))
    return;
  MHD_socket fd = MHD_quiesce_daemon(api->mhd);
  if (fd != MHD_INVALID_SOCKET)
    close(fd);
  api->listen_fd = -1;
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
  MHD_stop_daemon(api->mhd);
  tw_auth_free(api->auth);
  free(api);
}
