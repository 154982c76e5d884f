/* bench_http.c - the benchmarks' raw HTTP/1.1 client (bench_http.h). */
#define _GNU_SOURCE
#include "bench/bench_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

void bench_conn_init(struct bench_conn *c, int port) {
  c->fd = -1;
  c->port = port;
  c->len = 0;
  c->buf = malloc(BENCH_CONN_BUF);
  if (!c->buf)
    abort();
}

int bench_conn_open(struct bench_conn *c) {
  c->len = 0;
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0)
    return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)c->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct timeval tv = {.tv_sec = 60};
  setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(c->fd);
    c->fd = -1;
    return -1;
  }
  return 0;
}

void bench_conn_close(struct bench_conn *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->len = 0;
}

void bench_conn_release(struct bench_conn *c) {
  bench_conn_close(c);
  free(c->buf);
  c->buf = NULL;
}

int bench_conn_roundtrip(struct bench_conn *c, const char *req, size_t req_len,
                         const char **body, size_t *body_len) {
  if (c->fd < 0 && bench_conn_open(c) != 0)
    return -1;
  for (size_t off = 0; off < req_len;) {
    ssize_t w = send(c->fd, req + off, req_len - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      goto fail;
    off += (size_t)w;
  }
  size_t head = 0;
  long clen = -1;
  int status = -1;
  for (;;) {
    if (!head) {
      for (size_t i = 3; i < c->len; i++)
        if (c->buf[i] == '\n' && c->buf[i - 1] == '\r' &&
            c->buf[i - 2] == '\n' && c->buf[i - 3] == '\r') {
          head = i + 1;
          break;
        }
      if (head) {
        c->buf[head - 1] = '\0'; /* the head as a string */
        if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1)
          goto fail;
        for (char *p = strstr(c->buf, "\r\n"); p; p = strstr(p + 2, "\r\n"))
          if (!strncasecmp(p + 2, "Content-Length:", 15))
            clen = strtol(p + 17, NULL, 10);
        if (clen < 0 || head + (size_t)clen >= BENCH_CONN_BUF)
          goto fail; /* both servers always send Content-Length */
      }
    }
    if (head && c->len >= head + (size_t)clen)
      break;
    if (c->len == BENCH_CONN_BUF)
      goto fail;
    ssize_t n = recv(c->fd, c->buf + c->len, BENCH_CONN_BUF - c->len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      goto fail;
    c->len += (size_t)n;
  }
  /* one request at a time: nothing may follow the body */
  if (c->len != head + (size_t)clen)
    goto fail;
  c->buf[head + (size_t)clen] = '\0';
  if (body) {
    *body = c->buf + head;
    *body_len = (size_t)clen;
  }
  c->len = 0;
  return status;
fail:
  bench_conn_close(c);
  return -1;
}
