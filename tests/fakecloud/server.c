/* server.c - the HTTP core of tradewind-fakecloud: libmicrohttpd glue,
 * body limits, routing to the cloud modules and the common control API
 * under /_fake/ (health, clock, faults, reset, state). */
#include "tests/fakecloud/fakecloud.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/boot.h"
#include "tests/fakecloud/clock.h"
#include "tests/fakecloud/module.h"

/* The modules of this binary, in routing order.  Azure ARM and Alibaba
 * ECS are added here. */
#if __has_include("tests/fakecloud/alibaba.h")
#include "tests/fakecloud/alibaba.h"
#define FC_HAVE_ALIBABA 1
#endif
#if __has_include("tests/fakecloud/azure.h")
#include "tests/fakecloud/azure.h"
#define FC_HAVE_AZURE 1
#endif
#include "tests/fakecloud/creds.h"
static const struct fc_module_ops *const modules[] = {
    &fc_module_creds, /* its own paths only (/sts, /latest, /v2) */
#ifdef FC_HAVE_AZURE
    &fc_module_azure, /* its own paths only, never "/" */
#endif
#ifdef FC_HAVE_ALIBABA
    &fc_module_alibaba, /* before ec2: both serve "/", it claims its own */
#endif
    &fc_module_ec2};
#define N_MODULES (sizeof modules / sizeof modules[0])

struct fc_server {
  struct fc_opts opts;
  char *tls_cert, *tls_key; /* PEM text, kept while MHD runs */
  pthread_mutex_t mu;
  struct fc_clock clock;
  struct fc_rng rng;
  /* Request ids only: seeded from the real time and the pid, never from
   * --seed nor by reset, so ids never repeat across runs while resource
   * ids (from rng) still replay by seed. */
  struct fc_rng req_rng;
  struct fc_catalog *catalog;
  struct fc_faults faults;
  struct fc_issued *issued; /* temporary keys (fc_issue_key) */
  size_t n_issued;
  void *ctx[N_MODULES];
  struct MHD_Daemon *mhd;
  unsigned port;
  uint64_t requests;
  /* --boot (boot.h): the metadata port, the sandboxes' root, the ticker
   * that applies due transitions (kills at a deadline) and reaps. */
  struct MHD_Daemon *meta_mhd;
  unsigned meta_port;
  char boot_root[4096];
  bool boot_root_made;
  pthread_t ticker;
  bool ticker_running, stopping;
  pid_t *reap;
  size_t n_reap, cap_reap;
};

/* Per-connection request state: the raw URI (from MHD's URI log hook, the
 * only place MHD shows it before decoding) and the body so far. */
struct conn {
  char *uri;
  struct tw_buf body;
  bool started;
  bool too_big;
};

void fc_opts_init(struct fc_opts *o) {
  memset(o, 0, sizeof *o);
  o->listen_host = "127.0.0.1";
  o->seed = 1;
  o->clock_speed = 1.0;
  o->start_ms = -1;
  o->pending_ms = -1;
}

int64_t fc_now_ms(struct fc_server *s) { return fc_clock_now(&s->clock); }

bool fc_boot_enabled(const struct fc_server *s) { return s->opts.boot; }
const char *fc_boot_root(const struct fc_server *s) { return s->boot_root; }
unsigned fc_meta_port(const struct fc_server *s) { return s->meta_port; }

void fc_boot_track(struct fc_server *s, pid_t pid) {
  if (s->n_reap == s->cap_reap) {
    s->cap_reap = s->cap_reap ? s->cap_reap * 2 : 16;
    s->reap = tw_realloc(s->reap, s->cap_reap * sizeof *s->reap);
  }
  s->reap[s->n_reap++] = pid;
}
int64_t fc_elapsed_ms(struct fc_server *s) {
  return fc_clock_now(&s->clock) - s->clock.start_fake_ms;
}
struct fc_rng *fc_rng(struct fc_server *s) {
  return &s->rng;
}
uint64_t fc_seed(const struct fc_server *s) { return s->opts.seed; }
const struct fc_catalog *fc_catalog(const struct fc_server *s) {
  return s->catalog;
}
struct fc_faults *fc_faults(struct fc_server *s) {
  return &s->faults;
}
const struct fc_opts *fc_opts(const struct fc_server *s) { return &s->opts; }

const char *fc_secret_for(const struct fc_server *s, const char *ak) {
  if (!strcmp(ak, FC_DEFAULT_ACCESS_KEY))
    return FC_DEFAULT_SECRET_KEY;
  for (size_t i = 0; i < s->opts.n_creds; i++)
    if (!strcmp(ak, s->opts.creds[i].access_key))
      return s->opts.creds[i].secret_key;
  for (size_t i = 0; i < s->n_issued; i++)
    if (!strcmp(ak, s->issued[i].access_key))
      return s->issued[i].secret_key;
  return NULL;
}

#define FC_ISSUED_MAX 4096

void fc_issue_key(struct fc_server *s, const struct fc_issued *k) {
  /* ids replay by seed after a reset: the newest issue of a key wins */
  for (size_t i = 0; i < s->n_issued; i++)
    if (!strcmp(s->issued[i].access_key, k->access_key)) {
      s->issued[i] = *k;
      return;
    }
  if (s->n_issued == FC_ISSUED_MAX) /* the oldest goes */
    memmove(s->issued, s->issued + 1, --s->n_issued * sizeof *s->issued);
  s->issued = tw_realloc(s->issued, (s->n_issued + 1) * sizeof *s->issued);
  s->issued[s->n_issued++] = *k;
}

const char *fc_issued_check(struct fc_server *s, const char *ak,
                            const char *token) {
  for (size_t i = 0; ak && i < s->n_issued; i++) {
    const struct fc_issued *k = &s->issued[i];
    if (strcmp(ak, k->access_key))
      continue;
    if (!token || strcmp(token, k->token))
      return "InvalidClientTokenId";
    if (fc_now_ms(s) >= k->expires_ms)
      return "ExpiredToken";
    return NULL;
  }
  return NULL;
}

void fc_issued_mint(struct fc_server *s, const char *prefix, int64_t ttl_s,
                    struct fc_issued *k) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  memset(k, 0, sizeof *k);
  size_t n =
      (size_t)snprintf(k->access_key, sizeof k->access_key, "%s", prefix);
  size_t len = strlen(prefix) == 4 && !strcmp(prefix, "STS.") ? 24 : 20;
  for (; n < len; n++)
    k->access_key[n] = A[fc_rng_next(&s->rng) % 32];
  k->access_key[n] = '\0';
  snprintf(k->secret_key, sizeof k->secret_key, "fake/%016llx%016llx",
           (unsigned long long)fc_rng_next(&s->rng),
           (unsigned long long)fc_rng_next(&s->rng));
  snprintf(k->token, sizeof k->token, "FwoGZXIvYXdzEFAKE%016llx%016llx",
           (unsigned long long)fc_rng_next(&s->rng),
           (unsigned long long)fc_rng_next(&s->rng));
  k->expires_ms = fc_now_ms(s) + ttl_s * 1000;
  fc_issue_key(s, k);
}

void fc_issued_expire_all(struct fc_server *s) {
  int64_t now = fc_now_ms(s);
  for (size_t i = 0; i < s->n_issued; i++)
    if (s->issued[i].expires_ms > now)
      s->issued[i].expires_ms = now;
}

static void uuid_from(struct fc_rng *r, char out[40]) {
  uint64_t a = fc_rng_next(r), b = fc_rng_next(r);
  snprintf(out, 40, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
           (unsigned)((b >> 48) & 0x3fff) | 0x8000,
           (unsigned long long)(b & 0xffffffffffffull));
}

void fc_request_id(struct fc_server *s, char out[40]) {
  uuid_from(&s->req_rng, out);
}

void fc_uuid_seeded(struct fc_server *s, char out[40]) {
  uuid_from(&s->rng, out);
}

void fc_response_header(struct fc_response *resp, const char *name,
                        const char *value) {
  if (resp->n_extra >= FC_RESPONSE_EXTRA_MAX || strpbrk(value, "\r\n"))
    return;
  resp->extra[resp->n_extra].name = name;
  resp->extra[resp->n_extra].value = tw_strdup(value);
  resp->n_extra++;
}

const char *fc_header(const struct fc_request *req, const char *name) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (!strcasecmp(req->headers[i].name, name))
      return req->headers[i].value;
  return NULL;
}

void fc_json_reply(struct fc_response *resp, int status, json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT);
  resp->status = status;
  resp->content_type = "application/json";
  tw_buf_reset(&resp->body);
  tw_buf_adds(&resp->body, text ? text : "null");
  tw_buf_addc(&resp->body, '\n');
  free(text);
  json_decref(body);
}

void fc_json_error(struct fc_response *resp, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fc_json_reply(resp, status, json_pack("{s:s}", "error", msg));
}

/* ---- common control API ---------------------------------------------- */

static json_t *clock_json(struct fc_server *s) {
  char t[32];
  int64_t now = fc_clock_now(&s->clock);
  tw_time_fmt_rfc3339(now, t, sizeof t);
  return json_pack("{s:s,s:I,s:f,s:I}", "now", t, "now_ms", (json_int_t)now,
                   "speed", s->clock.speed, "elapsed_ms",
                   (json_int_t)(now - s->clock.start_fake_ms));
}

static void ctl_clock(struct fc_server *s, const char *method,
                      const json_t *body, struct fc_response *resp) {
  if (!strcmp(method, "POST")) {
    if (!json_is_object(body)) {
      fc_json_error(resp, 400, "expected a JSON object body");
      return;
    }
    json_t *adv = json_object_get(body, "advance_ms");
    json_t *set = json_object_get(body, "set");
    json_t *spd = json_object_get(body, "speed");
    int64_t set_ms = 0;
    if (adv && (!json_is_integer(adv) || json_integer_value(adv) < 0)) {
      fc_json_error(resp, 400, "advance_ms: expected an integer >= 0");
      return;
    }
    if (set && (!json_is_string(set) ||
                tw_time_parse_rfc3339(json_string_value(set), &set_ms))) {
      fc_json_error(resp, 400, "set: expected an RFC 3339 time");
      return;
    }
    if (spd && (!json_is_number(spd) || json_number_value(spd) < 0 ||
                json_number_value(spd) > 1e6)) {
      fc_json_error(resp, 400, "speed: expected a number in 0..1e6");
      return;
    }
    if (!adv && !set && !spd) {
      fc_json_error(resp, 400, "give advance_ms, set or speed");
      return;
    }
    if (set)
      fc_clock_set(&s->clock, set_ms);
    if (adv)
      fc_clock_advance(&s->clock, json_integer_value(adv));
    if (spd)
      fc_clock_set_speed(&s->clock, json_number_value(spd));
  } else if (strcmp(method, "GET")) {
    fc_json_error(resp, 405, "use GET or POST");
    return;
  }
  fc_json_reply(resp, 200, clock_json(s));
}

static void ctl_faults(struct fc_server *s, const char *method,
                       const char *rest, const json_t *body,
                       struct fc_response *resp) {
  if (*rest == '/') { /* /_fake/faults/{id} */
    char *end;
    long id = strtol(rest + 1, &end, 10);
    if (*end || strcmp(method, "DELETE")) {
      fc_json_error(resp, 404, "use DELETE /_fake/faults/{id}");
      return;
    }
    if (!fc_faults_remove(&s->faults, (int)id)) {
      fc_json_error(resp, 404, "no fault %ld", id);
      return;
    }
    fc_json_reply(resp, 200, json_pack("{s:i}", "deleted", (int)id));
    return;
  }
  if (*rest) {
    fc_json_error(resp, 404, "no such route");
    return;
  }
  if (!strcmp(method, "DELETE")) {
    fc_faults_clear(&s->faults);
    fc_json_reply(resp, 200, json_pack("{s:b}", "cleared", 1));
    return;
  }
  if (!strcmp(method, "POST")) {
    struct tw_err err;
    tw_err_clear(&err);
    size_t before = s->faults.n;
    enum tw_rc rc;
    if (json_is_object(body) && json_object_get(body, "kind")) {
      struct fc_fault f;
      rc = fc_fault_from_json(body, &f, &err);
      if (!rc)
        fc_faults_add(&s->faults, &f);
    } else {
      rc = fc_faults_load_json(&s->faults, body, &err);
    }
    if (rc) {
      fc_json_error(resp, 400, "%s", err.msg);
      return;
    }
    json_t *ids = json_array();
    for (size_t i = before; i < s->faults.n; i++)
      json_array_append_new(ids, json_integer(s->faults.v[i].id));
    fc_json_reply(resp, 201, json_pack("{s:o}", "ids", ids));
    return;
  }
  if (strcmp(method, "GET")) {
    fc_json_error(resp, 405, "use GET, POST or DELETE");
    return;
  }
  json_t *arr = json_array();
  for (size_t i = 0; i < s->faults.n; i++)
    json_array_append_new(arr, fc_fault_to_json(&s->faults.v[i]));
  fc_json_reply(resp, 200, json_pack("{s:o}", "faults", arr));
}

static enum tw_rc reset_all(struct fc_server *s, struct tw_err *err) {
  for (size_t i = 0; i < N_MODULES; i++)
    modules[i]->reset(s->ctx[i]);
  fc_faults_clear(&s->faults);
  s->rng.s = s->opts.seed;
  if (s->opts.faults_path)
    return fc_faults_load_file(&s->faults, s->opts.faults_path, err);
  return TW_OK;
}

static void control(struct fc_server *s, const char *method, const char *path,
                    const struct fc_request *req, struct fc_response *resp) {
  json_t *body = NULL;
  if (req->body_len) {
    json_error_t je;
    body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!body) {
      fc_json_error(resp, 400, "body: %s (line %d, column %d)", je.text,
                    je.line, je.column);
      return;
    }
  }
  const char *rest = path + strlen("/_fake");
  if (!strcmp(rest, "/health")) {
    fc_json_reply(resp, 200, json_pack("{s:b}", "ok", 1));
  } else if (!strcmp(rest, "/clock")) {
    ctl_clock(s, method, body, resp);
  } else if (!strncmp(rest, "/faults", 7)) {
    ctl_faults(s, method, rest + 7, body, resp);
  } else if (!strcmp(rest, "/reset")) {
    struct tw_err err;
    tw_err_clear(&err);
    if (strcmp(method, "POST"))
      fc_json_error(resp, 405, "use POST");
    else if (reset_all(s, &err))
      fc_json_error(resp, 500, "reset: %s", err.msg);
    else
      fc_json_reply(resp, 200, json_pack("{s:b}", "reset", 1));
  } else if (!strcmp(rest, "/state")) {
    json_t *out = json_object();
    json_object_set_new(out, "clock", clock_json(s));
    for (size_t i = 0; i < N_MODULES; i++) {
      json_t *m = json_object();
      modules[i]->dump(s->ctx[i], m);
      json_object_set_new(out, modules[i]->name, m);
    }
    fc_json_reply(resp, 200, out);
  } else {
    bool done = false;
    for (size_t i = 0; i < N_MODULES && !done; i++) {
      size_t n = strlen(modules[i]->name);
      if (rest[0] == '/' && !strncmp(rest + 1, modules[i]->name, n) &&
          (rest[1 + n] == '/' || rest[1 + n] == '\0'))
        done = modules[i]->control(s->ctx[i], method, rest + 1 + n, body, resp);
    }
    if (!done)
      fc_json_error(resp, 404, "no control route %s %s", method, path);
  }
  json_decref(body);
}

/* ---- libmicrohttpd glue ---------------------------------------------- */

struct hdr_collect {
  struct fc_header *v;
  size_t n;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind,
                                      const char *key, const char *value) {
  struct hdr_collect *h = cls;
  if (h->n >= 200) /* more headers than any client sends: ignore the rest */
    return MHD_NO;
  h->v = tw_realloc(h->v, (h->n + 1) * sizeof *h->v);
  h->v[h->n].name = key;
  h->v[h->n].value = value ? value : "";
  h->n++;
  return MHD_YES;
}

static void *uri_logger(void *cls, const char *uri,
                        struct MHD_Connection *con) {
  struct conn *c = tw_calloc(1, sizeof *c);
  c->uri = tw_strdup(uri ? uri : "/");
  tw_buf_init(&c->body);
  return c;
}

static void request_done(void *cls, struct MHD_Connection *con, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
  struct conn *c = *req_cls;
  if (!c)
    return;
  free(c->uri);
  tw_buf_release(&c->body);
  free(c);
  *req_cls = NULL;
}

static void dispatch(struct fc_server *s, struct fc_request *req,
                     struct fc_response *resp) {
  if (!strcmp(req->raw_path, "/_fake") ||
      !strncmp(req->raw_path, "/_fake/", 7)) {
    if (req->body_too_big) {
      fc_json_error(resp, 413, "body larger than %zu bytes",
                    s->opts.max_body_bytes);
      return;
    }
    control(s, req->method, req->raw_path, req, resp);
    return;
  }
  if (!strncmp(req->raw_path, "/_meta/", 7)) {
    /* /_meta/<instance id>/<metadata path>: the instance's own metadata
     * service (boot.h); each module looks the id up. */
    char id[96];
    const char *sub;
    if (fc_meta_split(req->raw_path, id, sizeof id, &sub))
      for (size_t i = 0; i < N_MODULES; i++)
        if (modules[i]->metadata &&
            modules[i]->metadata(s->ctx[i], id, sub, req, resp))
          return;
    resp->status = 404;
    resp->content_type = "text/plain";
    tw_buf_adds(&resp->body, "no such instance\n");
    return;
  }
  for (size_t i = 0; i < N_MODULES; i++) {
    if (modules[i]->claims(req)) {
      modules[i]->handle(s->ctx[i], req, resp);
      return;
    }
  }
  resp->status = 404;
  resp->content_type = "text/plain";
  tw_buf_adds(&resp->body, "no cloud module serves this request\n");
}

static enum MHD_Result respond(struct fc_server *s, struct MHD_Connection *con,
                               struct conn *c, const char *method) {
  struct hdr_collect hc = {NULL, 0};
  MHD_get_connection_values(con, MHD_HEADER_KIND, collect_header, &hc);
  char *q = strchr(c->uri, '?');
  char *path = q ? tw_strndup(c->uri, (size_t)(q - c->uri)) : tw_strdup(c->uri);
  struct fc_request req = {
      .method = method,
      .raw_path = path,
      .raw_query = q ? q + 1 : NULL,
      .headers = hc.v,
      .n_headers = hc.n,
      .body = c->body.data ? c->body.data : "",
      .body_len = c->too_big ? 0 : c->body.len,
      .body_too_big = c->too_big,
  };
  struct fc_response resp = {.status = 500, .content_type = "text/plain"};
  tw_buf_init(&resp.body);

  pthread_mutex_lock(&s->mu);
  s->requests++;
  dispatch(s, &req, &resp);
  if (resp.late_ms > 0) {
    /* a late request: acted on after the delay, others served meanwhile */
    struct timespec ts = {resp.late_ms / 1000,
                          (long)(resp.late_ms % 1000) * 1000000L};
    pthread_mutex_unlock(&s->mu);
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->mu);
    tw_buf_release(&resp.body);
    resp = (struct fc_response){.status = 500, .content_type = "text/plain"};
    tw_buf_init(&resp.body);
    req.late = true;
    dispatch(s, &req, &resp);
  }
  char date[32];
  fc_http_date(fc_clock_now(&s->clock), date);
  pthread_mutex_unlock(&s->mu);

  if (s->opts.verbose)
    tw_log_info("fakecloud", "method=%s path=%s status=%d bytes=%zu", method,
                path, resp.status, c->body.len);
  if (resp.delay_ms > 0) {
    /* A slow answer: this connection's thread sleeps, others go on. */
    struct timespec ts = {resp.delay_ms / 1000,
                          (long)(resp.delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  size_t len = resp.body.len;
  struct MHD_Response *r = MHD_create_response_from_buffer(
      len, tw_buf_detach(&resp.body), MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp.content_type);
  /* The fake clock's Date: SDKs correct their clock skew from it, so a
   * client signing with real time still talks to a fast-forwarded fake. */
  MHD_add_response_header(r, MHD_HTTP_HEADER_DATE, date);
  if (resp.request_id[0])
    MHD_add_response_header(r, "x-amzn-RequestId", resp.request_id);
  for (size_t i = 0; i < resp.n_extra; i++) {
    MHD_add_response_header(r, resp.extra[i].name, resp.extra[i].value);
    free(resp.extra[i].value);
  }
  if (c->too_big)
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ret = MHD_queue_response(con, (unsigned)resp.status, r);
  MHD_destroy_response(r);
  free(hc.v);
  free(path);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls) {
  struct fc_server *s = cls;
  struct conn *c = *req_cls;
  if (!c->started) {
    c->started = true;
    /* A declared length over the limit is refused before reading it:
     * MHD closes the connection after this answer. */
    const char *cl =
        MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > s->opts.max_body_bytes) {
      c->too_big = true;
      return respond(s, con, c, method);
    }
    return MHD_YES;
  }
  if (*upload_size) {
    if (c->body.len + *upload_size > s->opts.max_body_bytes)
      c->too_big = true; /* chunked: drop the bytes, answer 413 at the end */
    else if (!c->too_big)
      tw_buf_add(&c->body, upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  return respond(s, con, c, method);
}

/* Reads a whole PEM file (at most 1 MiB) into *out. */
static enum tw_rc read_pem(const char *path, const char *what, char **out,
                           struct tw_err *err) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return tw_err_set(err, TW_E_INVALID, "%s: cannot open %s", what,
                      path ? path : "(not given)");
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (1u << 20))
    tw_buf_add(&b, chunk, n);
  fclose(f);
  if (!b.len || !strstr(b.data, "-----BEGIN ")) {
    tw_buf_release(&b);
    return tw_err_set(err, TW_E_INVALID, "%s: %s holds no PEM block", what,
                      path);
  }
  *out = tw_buf_detach(&b);
  return TW_OK;
}

static enum tw_rc tls_load(struct fc_server *s, struct tw_err *err) {
  enum tw_rc rc;
  if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
    return tw_err_set(err, TW_E_IO,
                      "this libmicrohttpd was built without TLS support");
  if ((rc = read_pem(s->opts.tls_cert_path, "--tls-cert", &s->tls_cert, err)) ||
      (rc = read_pem(s->opts.tls_key_path, "--tls-key", &s->tls_key, err)))
    return rc;
  return TW_OK;
}

/* ---- booting (boot.h) ------------------------------------------------ */

/* Reaps the booted processes that ended (they are this process's
 * children); with the mutex held or after the threads stopped. */
static void reap_some(struct fc_server *s) {
  size_t w = 0;
  for (size_t i = 0; i < s->n_reap; i++) {
    int st;
    pid_t r = waitpid(s->reap[i], &st, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR))
      s->reap[w++] = s->reap[i];
  }
  s->n_reap = w;
}

/* Every 100 ms: the modules' due transitions (a spot interruption kills
 * its instance at the deadline even when nobody asks), then reaping. */
static void *ticker(void *arg) {
  struct fc_server *s = arg;
  for (;;) {
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->mu);
    bool stop = s->stopping;
    if (!stop) {
      for (size_t i = 0; i < N_MODULES; i++)
        if (modules[i]->tick)
          modules[i]->tick(s->ctx[i]);
      reap_some(s);
    }
    pthread_mutex_unlock(&s->mu);
    if (stop)
      return NULL;
  }
}

static enum tw_rc boot_setup(struct fc_server *s,
                             const struct sockaddr_in *main,
                             struct tw_err *err) {
  if (s->opts.boot_dir) {
    if (mkdir(s->opts.boot_dir, 0700) && errno != EEXIST)
      return tw_err_set(err, TW_E_INVALID, "--boot-dir: cannot make %s",
                        s->opts.boot_dir);
    snprintf(s->boot_root, sizeof s->boot_root, "%s", s->opts.boot_dir);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(s->boot_root, sizeof s->boot_root, "%s/tradewind-fakecloud-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->boot_root))
      return tw_err_set(err, TW_E_IO, "--boot: cannot make a directory in %s",
                        tmp && *tmp ? tmp : "/tmp");
    s->boot_root_made = true;
  }
  /* Metadata is plain HTTP, as on the clouds, on a port of its own (the
   * API port may serve TLS). */
  struct sockaddr_in sa = *main;
  sa.sin_port = 0;
  s->meta_mhd = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
          MHD_USE_ERROR_LOG,
      0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &sa,
      MHD_OPTION_URI_LOG_CALLBACK, uri_logger, s, MHD_OPTION_NOTIFY_COMPLETED,
      request_done, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
      MHD_OPTION_END);
  if (!s->meta_mhd)
    return tw_err_set(err, TW_E_IO, "--boot: cannot listen for metadata on %s",
                      s->opts.listen_host);
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(s->meta_mhd, MHD_DAEMON_INFO_BIND_PORT);
  s->meta_port = info ? info->port : 0;
  if (pthread_create(&s->ticker, NULL, ticker, s))
    return tw_err_set(err, TW_E_IO, "--boot: cannot start the ticker");
  s->ticker_running = true;
  return TW_OK;
}

enum tw_rc fc_server_start(const struct fc_opts *o, struct fc_server **out,
                           struct tw_err *err) {
  struct fc_server *s = tw_calloc(1, sizeof *s);
  enum tw_rc rc = TW_OK;
  s->opts = *o;
  if (!s->opts.listen_host)
    s->opts.listen_host = "127.0.0.1";
  if (!s->opts.max_body_bytes)
    s->opts.max_body_bytes = FC_MAX_BODY_BYTES;
  if (s->opts.pending_ms < 0)
    s->opts.pending_ms = 5000;
  pthread_mutex_init(&s->mu, NULL);
  s->rng.s = o->seed;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  s->req_rng.s = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
                 ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)s;
  fc_faults_init(&s->faults);
  int64_t start =
      o->start_ms >= 0 ? o->start_ms : tw_clock_now_ms(tw_clock_real());
  fc_clock_init(&s->clock, start, o->clock_speed);

  rc = o->catalog_path ? fc_catalog_load_file(o->catalog_path, &s->catalog, err)
                       : fc_catalog_builtin(&s->catalog, err);
  if (rc)
    goto fail;
  if (o->faults_path &&
      (rc = fc_faults_load_file(&s->faults, o->faults_path, err)))
    goto fail;
  for (size_t i = 0; i < N_MODULES; i++)
    if ((rc = modules[i]->create(s, &s->ctx[i], err)))
      goto fail;

  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)o->port);
  if (inet_pton(AF_INET, s->opts.listen_host, &sa.sin_addr) != 1) {
    rc = tw_err_set(err, TW_E_INVALID, "listen: \"%s\" is not an IPv4 address",
                    s->opts.listen_host);
    goto fail;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
  if (o->tls_cert_path || o->tls_key_path) {
    if ((rc = tls_load(s, err)))
      goto fail;
    flags |= MHD_USE_TLS;
  }
  /* MHD refuses the certificate options without MHD_USE_TLS: when TLS is
   * off an empty MHD_OPTION_ARRAY stands in for them. */
  struct MHD_OptionItem tls_opts[] = {
      {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
      {MHD_OPTION_END, 0, NULL}};
  s->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &sa,
      MHD_OPTION_URI_LOG_CALLBACK, uri_logger, s, MHD_OPTION_NOTIFY_COMPLETED,
      request_done, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
      MHD_OPTION_ARRAY, s->tls_cert ? tls_opts : tls_opts + 2, MHD_OPTION_END);
  if (!s->mhd) {
    rc = tw_err_set(err, TW_E_IO, "cannot listen on %s:%u", s->opts.listen_host,
                    o->port);
    goto fail;
  }
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info ? info->port : o->port;
  if (s->opts.boot && (rc = boot_setup(s, &sa, err)))
    goto fail;
  *out = s;
  return TW_OK;
fail:
  fc_server_stop(s);
  return rc;
}

unsigned fc_server_port(const struct fc_server *s) { return s->port; }

bool fc_tls(const struct fc_server *s) { return s->tls_cert != NULL; }

void fc_server_stop(struct fc_server *s) {
  if (!s)
    return;
  if (s->ticker_running) {
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->ticker, NULL);
  }
  if (s->mhd)
    MHD_stop_daemon(s->mhd);
  if (s->meta_mhd)
    MHD_stop_daemon(s->meta_mhd);
  free(s->issued);
  for (size_t i = 0; i < N_MODULES; i++)
    if (s->ctx[i])
      modules[i]->destroy(s->ctx[i]);
  fc_faults_release(&s->faults);
  fc_catalog_free(s->catalog);
  reap_some(s);
  free(s->reap);
  if (s->boot_root_made)
    fc_rm_tree(s->boot_root);
  pthread_mutex_destroy(&s->mu);
  free(s->tls_cert);
  free(s->tls_key);
  free(s);
}

unsigned fc_server_meta_port(const struct fc_server *s) { return s->meta_port; }
