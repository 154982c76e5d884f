#include "providers/otlp_send.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/trace.h"
#include "providers/http.h"

struct tw_otlp_sender {
  struct tw_http *http;
  long timeout_ms;
};

enum tw_rc tw_otlp_sender_new(long timeout_ms, struct tw_otlp_sender **out,
                              struct tw_err *err) {
  *out = NULL;
  struct tw_http_opts ho = {.max_attempts = 1};
  struct tw_http *h = NULL;
  enum tw_rc rc = tw_http_new(&ho, &h, err);
  if (rc)
    return rc;
  struct tw_otlp_sender *s = tw_calloc(1, sizeof *s);
  s->http = h;
  s->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
  *out = s;
  return TW_OK;
}

void tw_otlp_sender_free(struct tw_otlp_sender *s) {
  if (!s)
    return;
  tw_http_free(s->http);
  free(s);
}

#define MAX_HDR 16

long tw_otlp_send(void *ctx, const char *url, const char *const *headers,
                  const char *body, size_t len) {
  struct tw_otlp_sender *s = ctx;
  struct tw_http_header h[MAX_HDR + 1];
  char names[MAX_HDR][128];
  size_t n = 0;
  h[n++] = (struct tw_http_header){"Content-Type", "application/json"};
  for (size_t i = 0; headers && headers[i] && n < MAX_HDR; i++) {
    const char *colon = strchr(headers[i], ':');
    if (!colon || colon == headers[i] ||
        (size_t)(colon - headers[i]) >= sizeof names[0])
      continue;
    snprintf(names[n], sizeof names[n], "%.*s", (int)(colon - headers[i]),
             headers[i]);
    const char *v = colon + 1;
    while (*v == ' ')
      v++;
    h[n] = (struct tw_http_header){names[n], v};
    n++;
  }
  struct tw_http_request req = {.method = "POST",
                                .url = url,
                                .headers = h,
                                .n_headers = n,
                                .body = body,
                                .body_len = len,
                                .timeout_ms = s->timeout_ms,
                                .connect_timeout_ms = 3000,
                                .max_body_bytes = 1 << 20,
                                .max_attempts = 1};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  struct tw_err err = {0};
  long status = 0;
  if (tw_http_do(s->http, &req, &resp, &err) == TW_OK)
    status = resp.status;
  else { /* the URL without its credentials, never the headers */
    tw_trace_url_redact(err.msg);
    tw_log_debug("trace", "export: %s", err.msg);
  }
  tw_http_response_release(&resp);
  return status;
}
