#include "cli/http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#ifndef TW_VERSION
#define TW_VERSION "0"
#endif

void tw_cli_http_resp_init(struct tw_cli_http_resp *r) {
  memset(r, 0, sizeof *r);
  tw_buf_init(&r->body);
}

void tw_cli_http_resp_release(struct tw_cli_http_resp *r) {
  tw_buf_release(&r->body);
  tw_cli_http_resp_init(r);
}

struct xfer {
  struct tw_cli_http_resp *resp;
  bool toobig;
  const struct tw_cli_http_req *req;
  long status;  /* of the status line seen last */
  bool stopped; /* on_data ended the transfer */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud) {
  struct xfer *x = ud;
  size_t n = size * nmemb;
  if (x->req->on_data && x->status >= 200 && x->status < 300) {
    if (x->req->on_data(x->req->on_data_ctx, data, n))
      return n;
    x->stopped = true;
    return 0;
  }
  if (x->resp->body.len + n > TW_CLI_HTTP_MAX_BODY) {
    x->toobig = true;
    return 0; /* curl aborts the transfer with CURLE_WRITE_ERROR */
  }
  tw_buf_add(&x->resp->body, data, n);
  return n;
}

/* Copies the header's value, trimmed, when line is "name: value". */
static bool header_value(const char *line, size_t len, const char *name,
                         char *out, size_t outsz) {
  size_t nl = strlen(name);
  if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
    return false;
  const char *v = line + nl + 1, *end = line + len;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && isspace((unsigned char)end[-1]))
    end--;
  size_t n = (size_t)(end - v);
  if (n >= outsz)
    n = outsz - 1;
  memcpy(out, v, n);
  out[n] = '\0';
  return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud) {
  struct xfer *x = ud;
  size_t n = size * nmemb;
  char tmp[16];
  /* A new status line starts a new header block (after a 100 Continue):
   * only the final response's headers count. */
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    const char *sp = memchr(data, ' ', n);
    x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    x->resp->content_type[0] = '\0';
    x->resp->request_id[0] = '\0';
    x->resp->replayed = false;
    x->resp->etag[0] = '\0';
    return n;
  }
  if (header_value(data, n, "Idempotent-Replayed", tmp, sizeof tmp))
    x->resp->replayed = strcasecmp(tmp, "true") == 0;
  else if (!header_value(data, n, "Content-Type", x->resp->content_type,
                         sizeof x->resp->content_type) &&
           !header_value(data, n, "ETag", x->resp->etag, sizeof x->resp->etag))
    header_value(data, n, "X-Request-Id", x->resp->request_id,
                 sizeof x->resp->request_id);
  return n;
}

/* Copies url without any user:password@ part, which must not be printed. */
static void redact_url(const char *url, char *out, size_t outsz) {
  const char *host = strstr(url, "://");
  host = host ? host + 3 : url;
  const char *at = strchr(host, '@');
  const char *slash = strchr(host, '/');
  if (at && (!slash || at < slash))
    snprintf(out, outsz, "%.*s%s", (int)(host - url), url, at + 1);
  else
    snprintf(out, outsz, "%s", url);
}

static bool header_safe(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return false;
  return true;
}

enum tw_rc tw_cli_http_do(const struct tw_cli_http_req *req,
                          struct tw_cli_http_resp *resp, struct tw_err *err) {
  enum tw_rc rc = TW_OK;
  struct curl_slist *hdrs = NULL;
  char errbuf[CURL_ERROR_SIZE] = "";
  struct xfer x = {.resp = resp, .req = req};
  char *url = tw_asprintf("%s%s", req->base_url, req->path);
  char *auth = NULL;
  CURL *h = NULL;

  /* A CR or LF in a header value would let it start a header of its own. */
  if (req->token && !header_safe(req->token)) {
    rc = tw_err_set(err, TW_E_INVALID, "the token holds control characters");
    goto out;
  }
  if (req->if_match && !header_safe(req->if_match)) {
    rc = tw_err_set(err, TW_E_INVALID, "the ETag holds control characters");
    goto out;
  }
  if (req->idempotency_key && !header_safe(req->idempotency_key)) {
    rc = tw_err_set(err, TW_E_INVALID,
                    "the idempotency key holds control characters");
    goto out;
  }
  h = curl_easy_init();
  if (!h) {
    rc = tw_err_set(err, TW_E_INTERNAL, "curl_easy_init failed");
    goto out;
  }
  hdrs = curl_slist_append(
      hdrs, "Accept: application/json, application/problem+json");
  /* Without this curl waits up to a second for 100 Continue on big bodies. */
  hdrs = curl_slist_append(hdrs, "Expect:");
  if (req->token && *req->token) {
    auth = tw_asprintf("Authorization: Bearer %s", req->token);
    hdrs = curl_slist_append(hdrs, auth);
  }
  if (req->content_type) {
    char *ct = tw_asprintf("Content-Type: %s", req->content_type);
    hdrs = curl_slist_append(hdrs, ct);
    free(ct);
  }
  if (req->if_match) {
    char *im = tw_asprintf("If-Match: %s", req->if_match);
    hdrs = curl_slist_append(hdrs, im);
    free(im);
  }
  if (req->idempotency_key) {
    char *ik = tw_asprintf("Idempotency-Key: %s", req->idempotency_key);
    hdrs = curl_slist_append(hdrs, ik);
    free(ik);
  }

  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   TW_CLI_HTTP_CONNECT_TIMEOUT_MS);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   req->timeout_ms > 0 ? req->timeout_ms
                                       : TW_CLI_HTTP_TIMEOUT_MS);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  /* libcurl reads no CA variable from the environment: the CLI passes
   * TRADEWIND_CACERT / --cacert here itself. */
  if (req->cacert)
    curl_easy_setopt(h, CURLOPT_CAINFO, req->cacert);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "tradewind/" TW_VERSION);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
  if (strcmp(req->method, "POST") == 0) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(req->body ? req->body_len : 0));
  } else if (strcmp(req->method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body) { /* PUT */
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       (curl_off_t)req->body_len);
    }
  }

  CURLcode cc = curl_easy_perform(h);
  if (x.toobig) {
    rc = tw_err_set(err, TW_E_TOOBIG, "%s %s: response larger than %u bytes",
                    req->method, req->path, TW_CLI_HTTP_MAX_BODY);
    goto out;
  }
  if (cc == CURLE_WRITE_ERROR && x.stopped)
    cc = CURLE_OK; /* the caller had what it wanted */
  if (cc != CURLE_OK) {
    char shown[256];
    redact_url(req->base_url, shown, sizeof shown);
    rc = tw_err_set(err, TW_E_IO, "cannot reach %s: %s", shown,
                    errbuf[0] ? errbuf : curl_easy_strerror(cc));
    goto out;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);

out:
  curl_easy_cleanup(h);
  curl_slist_free_all(hdrs);
  if (auth) {
    /* The header copy held the secret: do not leave it in freed memory. */
    volatile char *p = auth;
    while (*p)
      *p++ = '\0';
    free(auth);
  }
  free(url);
  return rc;
}

enum tw_rc tw_cli_http_status_rc(long status) {
  if (status >= 200 && status < 300)
    return TW_OK;
  switch (status) {
  case 400:
  case 405:
  case 422:
    return TW_E_INVALID;
  case 401:
    return TW_E_AUTH;
  case 403:
    return TW_E_FORBIDDEN;
  case 404:
    return TW_E_NOTFOUND;
  case 409:
  case 412:
    return TW_E_CONFLICT;
  case 413:
    return TW_E_TOOBIG;
  case 415:
    return TW_E_UNSUPPORTED_MEDIA;
  case 429:
    /* Rate limited: the caller's own request quota, so it is a rejection
     * (exit 5), not a server fault. */
    return TW_E_QUOTA;
  default:
    break;
  }
  if (status >= 500 && status < 600)
    return TW_E_RETRYABLE;
  if (status >= 400 && status < 500)
    return TW_E_INVALID;
  return TW_E_INTERNAL;
}

char *tw_cli_http_escape(const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_adds(&b, "");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
      tw_buf_addc(&b, (char)*p);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      tw_buf_add(&b, e, 3);
    }
  }
  return tw_buf_detach(&b);
}
