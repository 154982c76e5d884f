/* server.c - the server behind the front door (api/door.h): listening,
 * the checks of a request head, routing, body limits, answers, metrics,
 * spans, draining. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
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

struct tw_api {
  bool (*ready)(void *ctx, char *why, size_t whysz); /* opts->ready */
  void *ready_ctx;
  int listen_fd;
  int port;
  int probe_fd; /* api.probe_listen, or -1 */
  int probe_port;
  /* the doors of the listeners (api/door.h) */
  struct tw_door *door, *probe_door;
  SSL_CTX *ssl; /* TLS, terminated by the doors; or NULL */
  int64_t head_us, body_us; /* the deadlines */
  size_t max_head, max_url;
  bool tls;
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
  return tw_door_req_header(r->q, name);
}

const char *tw_req_query(struct tw_req *r, const char *name) {
  return tw_door_req_arg(r->q, name);
}

void tw_req_set_query(struct tw_req *r, const char *name, const char *value) {
  tw_door_req_set_arg(r->q, name, value);
}

bool tw_req_known_query(struct tw_req *r, const char *const *keys) {
  const char *unknown = NULL;
  for (size_t a = 0; a < r->q->n_arg && !unknown; a++) {
    const char *key = r->q->arg[a].key;
    bool known = false;
    for (size_t i = 0; keys[i] && !known; i++)
      known = !strcmp(keys[i], key);
    if (!known)
      unknown = key;
  }
  if (!unknown)
    return true;
  struct tw_buf list;
  tw_buf_init(&list);
  for (size_t i = 0; keys[i]; i++)
    tw_buf_printf(&list, "%s%s", i ? ", " : "", keys[i]);
  tw_problem(r, 400, "invalid-field", unknown,
             "%.64s: unknown query parameter; expected one of %s", unknown,
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
      (unsigned long long)(tw_door_cut(api->door, false) +
                           tw_door_cut(api->probe_door, false)),
      (unsigned long long)(tw_door_cut(api->door, true) +
                           tw_door_cut(api->probe_door, true)));
  tw_buf_printf(
      out,
      "# HELP tradewind_http_door_refused_total Request heads refused "
      "at the front door before they were parsed (malformed, too large, "
      "not HTTP/1.x).\n"
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

static const char *status_reason(unsigned status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 201: return "Created";
  case 202: return "Accepted";
  case 204: return "No Content";
  case 206: return "Partial Content";
  case 301: return "Moved Permanently";
  case 302: return "Found";
  case 303: return "See Other";
  case 304: return "Not Modified";
  case 307: return "Temporary Redirect";
  case 308: return "Permanent Redirect";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 402: return "Payment Required";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 411: return "Length Required";
  case 412: return "Precondition Failed";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 415: return "Unsupported Media Type";
  case 416: return "Range Not Satisfiable";
  case 422: return "Unprocessable Content";
  case 423: return "Locked";
  case 425: return "Too Early";
  case 428: return "Precondition Required";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  case 507: return "Insufficient Storage";
  default: return "Unknown";
  }
}

/* The Date field (RFC 9110 section 6.6.1, IMF-fixdate in English names). */
static void add_date(struct tw_buf *b) {
  static const char days[] = "SunMonTueWedThuFriSat",
                    months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  tw_buf_printf(b, "Date: %.3s, %02d %.3s %04d %02d:%02d:%02d GMT\r\n",
                days + 3 * tm.tm_wday, tm.tm_mday, months + 3 * tm.tm_mon,
                tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void add_field(struct tw_buf *b, const char *name, const char *value) {
  tw_buf_adds(b, name);
  tw_buf_add(b, ": ", 2);
  tw_buf_adds(b, value);
  tw_buf_add(b, "\r\n", 2);
}

/* r's answer, as sent, into out. */
static void finish(struct tw_req *r, struct tw_door_reply *out) {
  struct tw_buf *b = &out->bytes;
  bool http11 = !r->q || r->q->http11;
  tw_buf_reserve(b, 256 + r->out.len);
  tw_buf_printf(b, "HTTP/1.1 %u %s\r\n", r->status, status_reason(r->status));
  add_date(b);
  if (r->content_type)
    add_field(b, "Content-Type", r->content_type);
  /* while draining, clients must not reuse the connection; nor after an
   * answer from the head alone (its body, if any, was never read) */
  out->close = tw_api_draining(r->api) || r->close ||
               (r->q && r->q->want_close) || (r->stream_pull && !http11);
  if (out->close)
    add_field(b, "Connection", "close");
  else if (!http11)
    add_field(b, "Connection", "keep-alive");
  add_field(b, "X-Request-Id", r->request_id);
  for (int i = 0; i < r->n_hdr; i++)
    add_field(b, r->hdr_name[i], r->hdr_value[i]);
  if (r->status == 405) {
    /* the methods this path accepts */
    struct tw_buf allow;
    tw_buf_init(&allow);
    struct tw_req probe = *r;
    for (size_t i = 0; i < tw_n_routes; i++)
      if (match(tw_routes[i].path, r->url, &probe))
        tw_buf_printf(&allow, "%s%s", allow.len ? ", " : "",
                      tw_routes[i].method);
    add_field(b, "Allow", allow.data ? allow.data : "");
    tw_buf_release(&allow);
  }
  bool head_only = r->method && !strcmp(r->method, "HEAD");
  if (r->stream_pull) {
    /* its length is not known: chunks over HTTP/1.1, else to the close */
    out->pull = r->stream_pull;
    out->sctx = r->stream_ctx;
    out->chunked = http11;
    if (http11)
      add_field(b, "Transfer-Encoding", "chunked");
    tw_buf_add(b, "\r\n", 2);
  } else {
    bool bodiless = r->status < 200 || r->status == 204 || r->status == 304;
    if (!bodiless)
      tw_buf_printf(b, "Content-Length: %zu\r\n", r->out.len);
    tw_buf_add(b, "\r\n", 2);
    if (!bodiless && !head_only && r->out.len)
      tw_buf_add(b, r->out.data, r->out.len);
  }
  record(r->api, r->route, r->status, tw_mono_us() - r->start_us);
  tw_log_debug("api", "request=%s method=%s path=%s status=%u us=%lld",
               r->request_id, r->method, r->url, r->status,
               (long long)(tw_mono_us() - r->start_us));
  span_finish(r);
  span_log(r, false);
}

static void door_request_id(void *ctx, char out[17]) { request_id(ctx, out); }

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

static void scan_header(struct head_scan *h, const char *key,
                        const char *value) {
  h->bytes += strlen(key) + strlen(value) + 4;
  for (const char *p = key; *p && !h->bad_name; p++)
    if (!tchar((unsigned char)*p))
      h->bad_name = key;
  if (!*key && !h->bad_name)
    h->bad_name = key;
  if (!strcasecmp(key, "Content-Length")) {
    if (h->n_cl++ && strcmp(h->cl, value))
      h->cl_differ = true;
    else
      h->cl = value;
  } else if (!strcasecmp(key, "Transfer-Encoding")) {
    h->n_te++;
    h->te = value;
  } else if (!strcasecmp(key, "Host")) {
    h->n_host++;
  }
}

/* Checks the head before any body byte is read: framing (RFC 9112 sections
 * 6.1 and 6.3), sizes, Host, the route, the token, the declared length.
 * false: answered (r->status set), and the connection is to be closed. */
static bool head_ok(struct tw_api *api, struct tw_req *r, bool probe_only) {
  struct tw_door_req *q = r->q;
  struct head_scan h = {0};
  for (size_t i = 0; i < q->n_hdr; i++)
    scan_header(&h, q->hdr[i].key, q->hdr[i].value);
  size_t url_bytes = strlen(r->url);
  for (size_t i = 0; i < q->n_arg; i++)
    url_bytes += strlen(q->arg[i].key) +
                 (q->arg[i].value ? strlen(q->arg[i].value) : 0) + 2;
  bool http11 = q->http11;
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
     * server refuse one without it): no chunk is ever parsed */
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
    /* the door refused one that is not digits */
    unsigned long long n = strtoull(h.cl, NULL, 10);
    if (n > (unsigned long long)max) {
      tw_problem(r, 413, "too-large", NULL, "request body exceeds %lld bytes",
                 (long long)max);
      return false;
    }
  }
  return true;
}

/* ---- the door's calls ------------------------------------------------------ */

static bool serve_head(struct tw_api *api, bool probe_only,
                       struct tw_door_conn *c, struct tw_door_req *q,
                       void **req, struct tw_door_reply *out) {
  struct tw_req *r = tw_calloc(1, sizeof *r);
  r->api = api;
  r->conn = c;
  r->q = q;
  r->method = q->method;
  r->url = q->path;
  r->start_us = tw_mono_us();
  request_id(api, r->request_id);
  tw_buf_init(&r->body);
  tw_buf_init(&r->out);
  bool known;
  r->route = route(r, &known);
  span_begin(r);
  span_log(r, true);
  *req = r;
  __atomic_add_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
  if (!head_ok(api, r, probe_only)) {
    /* answered from the head alone: no 100 Continue, no body byte read,
     * and the connection closes (what follows is not to be trusted) */
    r->answered = true;
    r->close = true;
    finish(r, out);
    return false;
  }
  span_log(r, false);
  return true;
}

static bool on_head(void *ctx, struct tw_door_conn *c, struct tw_door_req *q,
                    uint64_t body_len, void **req, struct tw_door_reply *out) {
  (void)body_len;
  return serve_head(ctx, false, c, q, req, out);
}

/* The probe listener: /healthz and /readyz, nothing else. */
static bool on_probe_head(void *ctx, struct tw_door_conn *c,
                          struct tw_door_req *q, uint64_t body_len, void **req,
                          struct tw_door_reply *out) {
  (void)body_len;
  return serve_head(ctx, true, c, q, req, out);
}

static void on_run(void *ctx, void *req, struct tw_buf *body,
                   struct tw_door_reply *out) {
  (void)ctx;
  struct tw_req *r = req;
  r->body = *body; /* the request takes the storage */
  tw_buf_init(body);
  r->answered = true;
  r->status = 500;
  span_log(r, true);
  tw_auth_dispatch(r, tw_routes[r->route].fn); /* authn, authz, audit */
  finish(r, out);
}

static void on_done(void *ctx, void *req) {
  struct tw_api *api = ctx;
  struct tw_req *r = req;
  tw_buf_release(&r->body);
  tw_buf_release(&r->out);
  if (r->stream_done)
    r->stream_done(r->stream_ctx);
  for (int i = 0; i < r->n_hdr; i++)
    free(r->hdr_value[i]);
  free(r->head_auth);
  tw_span_release(api->tracer, r->span);
  free(r);
  __atomic_sub_fetch(&api->in_flight, 1, __ATOMIC_RELAXED);
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
  tw_door_free(api->door);
  tw_door_free(api->probe_door);
  if (api->listen_fd >= 0)
    close(api->listen_fd);
  if (api->probe_fd >= 0)
    close(api->probe_fd);
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
  /* api.judge_heads is deprecated: every head is judged at the door
   * whatever it says; the configurations that still name it start */
  if (opts->judge_heads && *opts->judge_heads) {
    if (strcmp(opts->judge_heads, "every") &&
        strcmp(opts->judge_heads, "first")) {
      fail_start(api);
      return tw_err_field(err, TW_E_INVALID, "api.judge_heads",
                          "api.judge_heads: \"%.32s\" is neither \"every\" "
                          "nor \"first\"",
                          opts->judge_heads);
    }
    tw_log_warn("api", "api.judge_heads is deprecated and has no effect: "
                       "every head of every connection is judged");
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
  const char *cert_pem, *key_pem;
  if ((rc = tw_auth_new(&opts->auth, api->clock, &api->auth, err)) ||
      (rc = tw_auth_tls_pem(api->auth, &cert_pem, &key_pem, err))) {
    fail_start(api);
    return rc;
  }
  api->tls = cert_pem != NULL;
  /* TLS ends at the door (api/door.h): the same judgement for every
   * head, over either */
  if (api->tls && !(api->ssl = tw_door_tls_ctx(cert_pem, key_pem, err))) {
    fail_start(api);
    return err ? err->rc : TW_E_INVALID;
  }
  if ((rc = bind_listen(opts->listen, &api->listen_fd, &api->port, err))) {
    fail_start(api);
    return rc;
  }
  if ((rc = tw_stream_hub_start(api->store, opts->max_streams, &api->hub,
                                 err))) {
    fail_start(api);
    return rc;
  }
  /* The door (api/door.h) accepts every connection, judges each head,
   * parses it and runs the handler on its pool of threads.  The head as
   * sent: at most what the checks above measure (max_head_bytes, the
   * target included) with room for its encoding; its fields within what
   * a connection may hold parsed. */
  size_t pool = api->max_head + api->max_url + 16384;
  struct tw_door_opts dopts = {
      .listen_fd = api->listen_fd,
      .threads = threads,
      .max_connections = max_conn,
      .max_per_address = per_addr,
      .head_us = api->head_us,
      .body_us = api->body_us,
      .limits = {.max_head = api->max_head + api->max_url, .pool = pool},
      .ops = {.head = on_head, .run = on_run, .done = on_done},
      .request_id = door_request_id,
      .ctx = api,
      .tls = api->ssl,
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
    dopts.listen_fd = api->probe_fd;
    dopts.threads = 1;
    dopts.max_connections = 64;
    dopts.max_per_address = 8;
    dopts.idle_us = 10 * 1000000LL;
    dopts.ops.head = on_probe_head;
    if ((rc = tw_door_start(&dopts, &api->probe_door, err))) {
      fail_start(api);
      return rc;
    }
  }
  *out = api;
  return TW_OK;
}

void tw_api_drain(struct tw_api *api) {
  if (__atomic_exchange_n(&api->draining, 1, __ATOMIC_ACQ_REL))
    return;
  /* streams end (their clients resume elsewhere): none may stay open
   * when the daemon stops */
  tw_stream_hub_end_all(api->hub);
  /* the door stops accepting; the socket is closed at the stop */
  tw_door_quiesce(api->door);
}

void tw_api_stop(struct tw_api *api) {
  if (!api)
    return;
  tw_api_drain(api);
  /* the stop closes every connection, including those whose request is
   * still in a handler: wait (bounded) until every request in flight has
   * had its answer sent, so a stored job never loses its 2xx. */
  int64_t deadline = tw_mono_us() + 30 * 1000000LL;
  while (__atomic_load_n(&api->in_flight, __ATOMIC_ACQUIRE) > 0 &&
         tw_mono_us() < deadline)
    usleep(1000);
  tw_door_stop(api->door);
  tw_door_stop(api->probe_door);
  tw_door_free(api->door);
  tw_door_free(api->probe_door);
  if (api->listen_fd >= 0)
    close(api->listen_fd);
  if (api->probe_fd >= 0)
    close(api->probe_fd);
  tw_stream_hub_free(api->hub);
  tw_auth_free(api->auth);
  SSL_CTX_free(api->ssl);
  free(api);
}
