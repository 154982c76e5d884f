/* bench_http.h - the benchmarks' raw HTTP/1.1 client.
 *
 * One request at a time over one keep-alive loopback connection: a send
 * per request, the status line and Content-Length parsed, nothing else,
 * so a small machine's cores go to the server measured rather than to
 * the client.  Both servers it talks to (tradewindd, slurmrestd, the fake
 * cloud) always send Content-Length. */
#ifndef TW_BENCH_HTTP_H
#define TW_BENCH_HTTP_H

#include <stddef.h>

/* The largest answer read (/metrics with every label). */
#define BENCH_CONN_BUF (512 * 1024)

struct bench_conn {
  int fd; /* -1: not connected; the next round trip connects */
  int port;
  char *buf;  /* BENCH_CONN_BUF bytes */
  size_t len; /* bytes buffered, not yet consumed */
};

/* Sets c up for 127.0.0.1:port, not yet connected; aborts without memory. */
void bench_conn_init(struct bench_conn *c, int port);
/* Connects (60 s send and receive timeouts, TCP_NODELAY).  0 or -1. */
int bench_conn_open(struct bench_conn *c);
/* Closes the connection; c can be used again. */
void bench_conn_close(struct bench_conn *c);
/* Closes and frees the buffer. */
void bench_conn_release(struct bench_conn *c);
/* Sends req and reads one response, connecting first when needed.
 * Returns the status, or -1 when the connection failed (it is closed
 * then).  The body is NUL-terminated in c->buf; *body (may be NULL)
 * points to it until the next call. */
int bench_conn_roundtrip(struct bench_conn *c, const char *req, size_t req_len,
                         const char **body, size_t *body_len);

#endif
