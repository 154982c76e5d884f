/* test_cli_fake.c - see test_cli_fake.h. */
#include "tests/unit/test_cli_fake.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

struct fake_script {
  int status;
  char *content_type, *body, *header;
};

struct fake_srv {
  struct MHD_Daemon *d;
  char url[64];
  pthread_mutex_t mu;
  struct fake_script replies[FAKE_MAX];
  size_t nreplies, next;
  struct fake_req reqs[FAKE_MAX];
  size_t nreqs;
};

struct conn_state {
  char *body;
  size_t len;
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void copy_header(struct MHD_Connection *c, const char *name, char *out,
                        size_t outsz) {
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  snprintf(out, outsz, "%s", v ? v : "");
}

struct query_ctx {
  char *out;
  size_t outsz;
  int n;
};

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value) {
  struct query_ctx *q = cls;
  size_t used = strlen(q->out);
  snprintf(q->out + used, q->outsz - used, "%c%s=%s", q->n++ ? '&' : '?', key,
           value ? value : "");
  return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  struct fake_srv *s = cls;
  struct conn_state *cs = *con_cls;
  if (!cs) {
    *con_cls = calloc(1, sizeof *cs);
    return MHD_YES;
  }
  if (*upload_size) {
    cs->body = realloc(cs->body, cs->len + *upload_size + 1);
    memcpy(cs->body + cs->len, upload, *upload_size);
    cs->len += *upload_size;
    cs->body[cs->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }

  pthread_mutex_lock(&s->mu);
  if (s->nreqs < FAKE_MAX) {
    struct fake_req *r = &s->reqs[s->nreqs++];
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->target, sizeof r->target, "%s", url);
    struct query_ctx q = {r->target, sizeof r->target, 0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_arg, &q);
    copy_header(conn, "Content-Type", r->content_type, sizeof r->content_type);
    copy_header(conn, "Authorization", r->authorization,
                sizeof r->authorization);
    copy_header(conn, "Idempotency-Key", r->idempotency_key,
                sizeof r->idempotency_key);
    r->body = cs->body ? cs->body : strdup("");
    r->body_len = cs->len;
    cs->body = NULL;
  }
  struct fake_script reply = {599, "text/plain", "fake: script exhausted",
                              NULL};
  if (s->next < s->nreplies)
    reply = s->replies[s->next++];
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      strlen(reply.body), (void *)reply.body, MHD_RESPMEM_MUST_COPY);
  if (reply.content_type)
    MHD_add_response_header(resp, "Content-Type", reply.content_type);
  MHD_add_response_header(resp, "X-Request-Id", "req-fake");
  if (reply.header) {
    char name[128];
    const char *colon = strchr(reply.header, ':');
    snprintf(name, sizeof name, "%.*s", (int)(colon - reply.header),
             reply.header);
    MHD_add_response_header(resp, name, colon + 2);
  }
  pthread_mutex_unlock(&s->mu);
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)reply.status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  struct conn_state *cs = *con_cls;
  if (cs) {
    free(cs->body);
    free(cs);
    *con_cls = NULL;
  }
}

struct fake_srv *fake_start(void) {
  struct fake_srv *s = calloc(1, sizeof *s);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  pthread_mutex_init(&s->mu, NULL);
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                          0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &sa,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                          MHD_OPTION_END);
  if (!s->d) {
    fprintf(stderr, "fake: cannot start libmicrohttpd\n");
    abort();
  }
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", (unsigned)info->port);
  return s;
}

void fake_stop(struct fake_srv *s) {
  if (!s)
    return;
  MHD_stop_daemon(s->d);
  for (size_t i = 0; i < s->nreplies; i++) {
    free(s->replies[i].content_type);
    free(s->replies[i].body);
    free(s->replies[i].header);
  }
  for (size_t i = 0; i < s->nreqs; i++)
    free(s->reqs[i].body);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

const char *fake_url(const struct fake_srv *s) { return s->url; }

void fake_reply(struct fake_srv *s, int status, const char *content_type,
                const char *body, const char *header) {
  pthread_mutex_lock(&s->mu);
  if (s->nreplies < FAKE_MAX)
    s->replies[s->nreplies++] = (struct fake_script){
        status, dup_or_null(content_type), strdup(body), dup_or_null(header)};
  pthread_mutex_unlock(&s->mu);
}

void fake_json(struct fake_srv *s, const char *body) {
  fake_reply(s, 200, "application/json", body, NULL);
}

size_t fake_nreq(struct fake_srv *s) {
  pthread_mutex_lock(&s->mu);
  size_t n = s->nreqs;
  pthread_mutex_unlock(&s->mu);
  return n;
}

const struct fake_req *fake_req(struct fake_srv *s, size_t i) {
  pthread_mutex_lock(&s->mu);
  const struct fake_req *r = i < s->nreqs ? &s->reqs[i] : NULL;
  pthread_mutex_unlock(&s->mu);
  return r;
}
