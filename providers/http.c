/* http.c - outbound HTTP over libcurl, with the only retry loop of the
 * project (see http.h). */
#include "providers/http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"

#define HTTP_POOL_MAX 4
#define HTTP_MAX_HEADERS 200
#define HTTP_MAX_HEADER_BYTES (64 * 1024)

struct tw_http {
  pthread_mutex_t mu; /* guards idle[], n_idle and rng */
  CURL *idle[HTTP_POOL_MAX];
  size_t n_idle;
  uint64_t rng;
  struct tw_http_opts opts; /* defaults filled in */
  char *user_agent;
};

struct tw_http_attempt {
  unsigned n;
  const struct tw_http_request *req;
  struct curl_slist *extra;
};

/* What the curl callbacks of one attempt write into. */
struct http_sink {
  struct tw_http_response *resp;
  size_t max_body;
  size_t header_bytes;
  bool toobig;
  const char *toobig_what;
  const struct tw_http_request *req;
  bool refused; /* allow_addr said no */
  char refused_why[160];
};

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc;

static void http_global_init(void) {
  /* Once per process, before any thread uses curl: curl_global_init() is
   * not guaranteed thread-safe on every libcurl build. */
  http_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- response ---- */

void tw_http_response_init(struct tw_http_response *r) {
  memset(r, 0, sizeof *r);
  tw_buf_init(&r->body);
}

static void http_response_clear_headers(struct tw_http_response *r) {
  for (size_t i = 0; i < r->n_headers; i++) {
    free((char *)r->headers[i].name);
    free((char *)r->headers[i].value);
  }
  free(r->headers);
  r->headers = NULL;
  r->n_headers = 0;
  r->content_type = r->location = r->retry_after = NULL;
  r->azure_async_operation = r->operation_location = NULL;
}

void tw_http_response_release(struct tw_http_response *r) {
  if (!r)
    return;
  http_response_clear_headers(r);
  tw_buf_release(&r->body);
  tw_http_response_init(r);
}

const char *tw_http_response_header(const struct tw_http_response *r,
                                    const char *name) {
  for (size_t i = 0; r && i < r->n_headers; i++)
    if (!strcasecmp(r->headers[i].name, name))
      return r->headers[i].value;
  return NULL;
}

static void http_response_index(struct tw_http_response *r) {
  r->content_type = tw_http_response_header(r, "Content-Type");
  r->location = tw_http_response_header(r, "Location");
  r->retry_after = tw_http_response_header(r, "Retry-After");
  r->azure_async_operation = tw_http_response_header(r, "Azure-AsyncOperation");
  r->operation_location = tw_http_response_header(r, "Operation-Location");
}

/* ---- status classes ---- */

enum tw_rc tw_http_status_rc(long status) {
  if (status >= 200 && status < 400)
    return TW_OK;
  switch (status) {
  case 400:
    return TW_E_INVALID;
  case 401:
  case 403:
    return TW_E_AUTH;
  case 404:
  case 410:
    return TW_E_NOTFOUND;
  case 409:
  case 412:
    return TW_E_CONFLICT;
  case 413:
    return TW_E_TOOBIG;
  case 415:
    return TW_E_UNSUPPORTED_MEDIA;
  case 408:
  case 429:
    return TW_E_RETRYABLE;
  default:
    break;
  }
  if (status >= 500 && status < 600)
    return TW_E_RETRYABLE;
  if (status >= 400 && status < 500)
    return TW_E_INVALID;
  return TW_E_INTERNAL;
}

static bool http_status_retryable(long status) {
  return status == 429 || (status >= 500 && status < 600);
}

/* ---- backoff ---- */

static uint64_t http_rng(struct tw_http *h) {
  /* splitmix64: good enough for jitter, reproducible from the seed. */
  uint64_t z = (h->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t tw_http_backoff_ms(struct tw_http *h, unsigned n) {
  int64_t ceil_ms = h->opts.backoff_base_ms;
  for (unsigned i = 1; i < n && ceil_ms < h->opts.backoff_cap_ms; i++)
    ceil_ms *= 2;
  if (ceil_ms > h->opts.backoff_cap_ms)
    ceil_ms = h->opts.backoff_cap_ms;
  if (ceil_ms <= 0)
    return 0;
  pthread_mutex_lock(&h->mu);
  uint64_t r = http_rng(h);
  pthread_mutex_unlock(&h->mu);
  return (int64_t)(r % (uint64_t)(ceil_ms + 1));
}

int64_t tw_http_parse_retry_after(const char *v, int64_t now_ms) {
  if (!v)
    return -1;
  while (*v == ' ' || *v == '\t')
    v++;
  size_t len = strlen(v);
  while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
    len--;
  if (len == 0)
    return -1;
  size_t digits = strspn(v, "0123456789");
  if (digits == len) {
    if (len > 9) /* over 31 years: treat as "not worth waiting for" */
      return INT64_MAX;
    return strtoll(v, NULL, 10) * 1000;
  }
  char *copy = tw_strndup(v, len);
  time_t t = curl_getdate(copy, NULL);
  free(copy);
  if (t == (time_t)-1)
    return -1;
  int64_t d = (int64_t)t * 1000 - now_ms;
  return d > 0 ? d : 0;
}

static void http_default_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                        .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* ---- client ---- */

enum tw_rc tw_http_new(const struct tw_http_opts *opts, struct tw_http **out,
                       struct tw_err *err) {
  *out = NULL;
  pthread_once(&http_once, http_global_init);
  if (http_global_rc != CURLE_OK)
    return tw_err_set(err, TW_E_INTERNAL, "http: curl_global_init: %s",
                      curl_easy_strerror(http_global_rc));
  struct tw_http *h = tw_calloc(1, sizeof *h);
  if (opts)
    h->opts = *opts;
  if (!h->opts.max_attempts)
    h->opts.max_attempts = 4;
  if (h->opts.backoff_base_ms <= 0)
    h->opts.backoff_base_ms = 200;
  if (h->opts.backoff_cap_ms <= 0)
    h->opts.backoff_cap_ms = 20000;
  if (h->opts.retry_after_max_ms <= 0)
    h->opts.retry_after_max_ms = 60000;
  if (!h->opts.sleep_ms)
    h->opts.sleep_ms = http_default_sleep;
  if (!h->opts.clock)
    h->opts.clock = tw_clock_real();
  h->user_agent =
      tw_strdup(h->opts.user_agent ? h->opts.user_agent : "tradewind/0.1");
  h->opts.user_agent = h->user_agent;
  h->rng = h->opts.seed ? h->opts.seed
                        : (uint64_t)tw_mono_us() ^ ((uint64_t)getpid() << 32);
  pthread_mutex_init(&h->mu, NULL);
  *out = h;
  return TW_OK;
}

void tw_http_free(struct tw_http *h) {
  if (!h)
    return;
  for (size_t i = 0; i < h->n_idle; i++)
    curl_easy_cleanup(h->idle[i]);
  pthread_mutex_destroy(&h->mu);
  free(h->user_agent);
  free(h);
}

static CURL *http_pool_get(struct tw_http *h) {
  CURL *c = NULL;
  pthread_mutex_lock(&h->mu);
  if (h->n_idle)
    c = h->idle[--h->n_idle];
  pthread_mutex_unlock(&h->mu);
  return c ? c : curl_easy_init();
}

/* LIFO, so a single thread keeps getting the handle holding its warm
 * connection. */
static void http_pool_put(struct tw_http *h, CURL *c) {
  pthread_mutex_lock(&h->mu);
  if (h->n_idle < HTTP_POOL_MAX) {
    h->idle[h->n_idle++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&h->mu);
  if (c)
    curl_easy_cleanup(c);
}

/* ---- attempt ---- */

unsigned tw_http_attempt_number(const struct tw_http_attempt *a) {
  return a->n;
}

const struct tw_http_request *
tw_http_attempt_request(const struct tw_http_attempt *a) {
  return a->req;
}

/* "Name: value", or "Name;" which is curl's way to send an empty value. */
static struct curl_slist *http_slist_add(struct curl_slist *l, const char *name,
                                         const char *value) {
  char *line = value && *value ? tw_asprintf("%s: %s", name, value)
                               : tw_asprintf("%s;", name);
  struct curl_slist *n = curl_slist_append(l, line);
  free(line);
  if (!n) {
    tw_log_error("http", "curl_slist_append: out of memory");
    abort();
  }
  return n;
}

void tw_http_attempt_add_header(struct tw_http_attempt *a, const char *name,
                                const char *value) {
  a->extra = http_slist_add(a->extra, name, value);
}

static size_t http_write_cb(char *data, size_t size, size_t nmemb,
                            void *userp) {
  struct http_sink *s = userp;
  size_t n = size * nmemb;
  if (s->resp->body.len + n > s->max_body) {
    s->toobig = true;
    s->toobig_what = "response body";
    return 0; /* curl stops with CURLE_WRITE_ERROR */
  }
  tw_buf_add(&s->resp->body, data, n);
  return n;
}

static size_t http_header_cb(char *data, size_t size, size_t nmemb,
                             void *userp) {
  struct http_sink *s = userp;
  size_t n = size * nmemb;
  struct tw_http_response *r = s->resp;
  s->header_bytes += n;
  if (s->header_bytes > HTTP_MAX_HEADER_BYTES) {
    s->toobig = true;
    s->toobig_what = "response headers";
    return 0;
  }
  /* A status line starts a new header block (after "100 Continue"). */
  if (n >= 5 && !memcmp(data, "HTTP/", 5)) {
    http_response_clear_headers(r);
    return n;
  }
  const char *colon = memchr(data, ':', n);
  if (!colon)
    return n;
  const char *v = colon + 1, *end = data + n;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' ||
                     end[-1] == '\t'))
    end--;
  if (r->n_headers >= HTTP_MAX_HEADERS) {
    s->toobig = true;
    s->toobig_what = "response headers";
    return 0;
  }
  r->headers = tw_realloc(r->headers, (r->n_headers + 1) * sizeof *r->headers);
  r->headers[r->n_headers].name = tw_strndup(data, (size_t)(colon - data));
  r->headers[r->n_headers].value = tw_strndup(v, (size_t)(end - v));
  r->n_headers++;
  return n;
}

static bool http_method_has_body(const char *m, const void *body) {
  if (body)
    return true;
  /* Azure wants Content-Length: 0 on an empty POST, PUT or PATCH. */
  return strcasecmp(m, "GET") && strcasecmp(m, "HEAD") &&
         strcasecmp(m, "DELETE") && strcasecmp(m, "OPTIONS");
}

/* Connection-level failures that may go away on a new attempt. */
/* A failure after the request may have left: the server may act on it. */
static bool http_curl_maybe_sent(CURLcode cc) {
  switch (cc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_SSL_CONNECT_ERROR:
    return false;
  default:
    return true;
  }
}

static bool http_curl_retryable(CURLcode cc) {
  switch (cc) {
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return true;
  default:
    return false;
  }
}

static enum tw_rc http_curl_rc(CURLcode cc) {
  if (http_curl_retryable(cc))
    return TW_E_RETRYABLE;
  switch (cc) {
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
  case CURLE_BAD_FUNCTION_ARGUMENT:
    return TW_E_INVALID;
  case CURLE_FILESIZE_EXCEEDED:
    return TW_E_TOOBIG;
  default:
    return TW_E_IO;
  }
}

/* The URL for messages: no query or fragment, which may carry signatures
 * or tokens. */
static char *http_url_for_log(const char *url) {
  return tw_strndup(url, strcspn(url, "?#"));
}

static curl_socket_t http_open_socket(void *clientp, curlsocktype purpose,
                                      struct curl_sockaddr *a) {
  struct http_sink *s = clientp;
  (void)purpose;
  char why[160] = "";
  if (!s->req->allow_addr(s->req->allow_ctx, &a->addr, why, sizeof why)) {
    s->refused = true;
    snprintf(s->refused_why, sizeof s->refused_why, "%s", why);
    return CURL_SOCKET_BAD;
  }
  return socket(a->family, a->socktype, a->protocol);
}

/* One transfer on c.  Returns the curl code; *toobig when a limit hit. */
static CURLcode http_perform(struct tw_http *h, CURL *c,
                             const struct tw_http_request *req,
                             struct curl_slist *headers, struct http_sink *s,
                             char *errbuf) {
  /* reset keeps the handle's live connections, DNS and TLS session
   * caches: that is where connection reuse comes from. */
  curl_easy_reset(c);
  errbuf[0] = '\0';
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_URL, req->url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   req->timeout_ms > 0 ? req->timeout_ms : 30000L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   req->connect_timeout_ms > 0 ? req->connect_timeout_ms
                                               : 5000L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, h->user_agent);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, http_header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s->max_body);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* Location is data */
  if (req->allow_addr) {
    s->req = req;
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, http_open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, s);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    /* a connection kept from before was checked when it was opened */
  }
  if (req->ca_file)
    curl_easy_setopt(c, CURLOPT_CAINFO, req->ca_file);
  if (req->insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!strcasecmp(req->method, "HEAD")) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (http_method_has_body(req->method, req->body)) {
    /* Not copied: req->body outlives the transfer. */
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(req->body ? req->body_len : 0));
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    if (strcmp(req->method, "POST"))
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
  } else if (strcmp(req->method, "GET")) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
  }
  return curl_easy_perform(c);
}

enum tw_rc tw_http_do(struct tw_http *h, const struct tw_http_request *req,
                      struct tw_http_response *resp, struct tw_err *err) {
  tw_http_response_release(resp);
  if (!h || !req || !req->method || !*req->method || !req->url || !*req->url ||
      (req->n_headers && !req->headers) || (req->body_len && !req->body))
    return tw_err_set(err, TW_E_INVALID, "http: request incomplete");
  unsigned max = req->max_attempts ? req->max_attempts : h->opts.max_attempts;
  struct http_sink sink = {.resp = resp,
                           .max_body = req->max_body_bytes ? req->max_body_bytes
                                                           : (32u << 20)};
  char *where = http_url_for_log(req->url);
  char errbuf[CURL_ERROR_SIZE];
  enum tw_rc rc = TW_OK;
  CURL *c = http_pool_get(h);
  if (!c) {
    rc = tw_err_set(err, TW_E_INTERNAL, "http: curl_easy_init failed");
    goto out;
  }

  for (unsigned n = 1;; n++) {
    tw_buf_reset(&resp->body);
    http_response_clear_headers(resp);
    resp->status = 0;
    resp->attempts = n;
    sink.header_bytes = 0;
    sink.toobig = false;
    sink.refused = false;

    struct tw_http_attempt at = {.n = n, .req = req, .extra = NULL};
    if (req->prepare) {
      struct tw_err perr;
      tw_err_clear(&perr);
      rc = req->prepare(req->prepare_ctx, &at, &perr);
      if (rc != TW_OK) {
        curl_slist_free_all(at.extra);
        if (err && err->rc == TW_OK)
          *err = perr;
        tw_err_set(err, rc, "%s %s: prepare failed", req->method, where);
        goto out;
      }
    }
    struct curl_slist *hl = NULL;
    for (size_t i = 0; i < req->n_headers; i++)
      hl = http_slist_add(hl, req->headers[i].name, req->headers[i].value);
    for (struct curl_slist *e = at.extra; e; e = e->next) {
      struct curl_slist *m = curl_slist_append(hl, e->data);
      if (!m)
        abort();
      hl = m;
    }
    curl_slist_free_all(at.extra);
    /* No "Expect: 100-continue": it costs a round trip (or a 1 s stall
     * with servers that ignore it) on every large POST. */
    hl = curl_slist_append(hl, "Expect:");

    CURLcode cc = http_perform(h, c, req, hl, &sink, errbuf);
    curl_slist_free_all(hl);

    int64_t delay;
    if (cc == CURLE_OK) {
      long status = 0;
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      resp->status = status;
      if (!http_status_retryable(status) || n >= max ||
          (req->should_retry &&
           !req->should_retry(req->retry_ctx, status, &resp->body)))
        break;
      delay = -1;
      const char *ra = tw_http_response_header(resp, "Retry-After");
      if ((status == 429 || status == 503) && ra) {
        delay = tw_http_parse_retry_after(ra, tw_clock_now_ms(h->opts.clock));
        if (delay > h->opts.retry_after_max_ms) {
          tw_log_debug("http",
                       "url=%s status=%ld retry_after_ms=%lld beyond the "
                       "limit, not waiting",
                       where, status, (long long)delay);
          break;
        }
      }
      if (delay < 0)
        delay = tw_http_backoff_ms(h, n);
      tw_log_debug("http", "url=%s status=%ld attempt=%u/%u wait_ms=%lld",
                   where, status, n, max, (long long)delay);
    } else {
      if (sink.toobig || cc == CURLE_FILESIZE_EXCEEDED) {
        rc = tw_err_set(err, TW_E_TOOBIG, "%s %s: %s over %zu bytes",
                        req->method, where,
                        sink.toobig_what ? sink.toobig_what : "response body",
                        sink.max_body);
        goto out;
      }
      if (sink.refused) {
        rc = tw_err_set(err, TW_E_FORBIDDEN, "%s %s: refused to connect: %s",
                        req->method, where, sink.refused_why);
        goto out;
      }
      const char *msg = errbuf[0] ? errbuf : curl_easy_strerror(cc);
      if (http_curl_maybe_sent(cc))
        resp->unanswered++;
      if (!http_curl_retryable(cc) || n >= max) {
        rc = tw_err_set(err, http_curl_rc(cc), "%s %s: %s (attempt %u of %u)",
                        req->method, where, msg, n, max);
        goto out;
      }
      delay = tw_http_backoff_ms(h, n);
      tw_log_debug("http", "url=%s error=\"%s\" attempt=%u/%u wait_ms=%lld",
                   where, msg, n, max, (long long)delay);
    }
    resp->slept_ms += delay;
    h->opts.sleep_ms(h->opts.sleep_ctx, delay);
  }
  http_response_index(resp);

out:
  if (c)
    http_pool_put(h, c);
  free(where);
  if (rc != TW_OK) {
    unsigned attempts = resp->attempts, unanswered = resp->unanswered;
    int64_t slept = resp->slept_ms;
    long status = resp->status;
    tw_http_response_release(resp);
    resp->attempts = attempts;
    resp->unanswered = unanswered;
    resp->slept_ms = slept;
    resp->status = status;
  }
  return rc;
}
