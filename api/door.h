/* door.h - the server's own HTTP/1.1 front, on every listener.
 *
 * The door accepts each connection, ends TLS (OpenSSL), reads every byte
 * a client sends and judges each request head (tw_door_judge) before it
 * is parsed: a head that is malformed, too large or not HTTP/1.x is
 * answered here with one problem+json and the connection closed.  A head
 * that passes is parsed (struct tw_door_req), its body read by its
 * Content-Length, and the server's handler runs on the thread that owns
 * the connection: a fixed pool of threads, each polling its share of the
 * connections with epoll, writing each answer straight to the socket
 * (what does not fit waits for the socket, on the same thread).
 * Keep-alive, pipelining (in order), HEAD, Expect: 100-continue (sent
 * only once the server accepted the head), event streams (chunked, off
 * the pool while they wait), the connection limits and the deadlines of
 * heads and bodies are held here.  docs/security.md, "The front door". */
#ifndef TW_API_DOOR_H
#define TW_API_DOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

/* ---- the judgement of a head (pure; fuzzed by tests/fuzz/fuzz_door_head) */

struct tw_door_limits {
  size_t max_head;  /* the head as sent, request line included */
  size_t pool;      /* what a head may take parsed (its fields) */
};

enum tw_door_verdict {
  TW_DOOR_MORE,   /* not whole yet, nothing wrong so far */
  TW_DOOR_PASS,   /* whole, and the library can take it */
  TW_DOOR_REFUSE  /* answer with the problem below, then close */
};

struct tw_door_problem {
  unsigned status;   /* 400, 413, 414, 431, 505 */
  const char *type;  /* /problems/<type> */
  const char *field; /* or NULL */
  char detail[200];
  size_t head_len;   /* PASS: the head's bytes, the blank line included */
  uint64_t body_len; /* PASS: its Content-Length (0 without one) */
  /* PASS: a Transfer-Encoding, or two different Content-Length: the
   * body's end is unknown here, and the server refuses such a head from
   * the head alone and closes (api/server.c) */
  bool unframed;
};

/* Judges the first len bytes a connection sent.  len above
 * lim->max_head means the head, if whole, is over the limit. */
enum tw_door_verdict tw_door_judge(const char *buf, size_t len,
                                   const struct tw_door_limits *lim,
                                   struct tw_door_problem *p);

/* The answer to a refusal: a whole HTTP/1.1 response with a problem+json
 * body and Connection: close.  Returns its length (< cap), 0 when it does
 * not fit. */
size_t tw_door_answer(const struct tw_door_problem *p, const char *request_id,
                      char *out, size_t cap);

/* ---- a parsed head ------------------------------------------------------ */

struct tw_door_kv {
  const char *key, *value; /* an argument without '=' has value NULL */
};

/* A head that passed tw_door_judge, parsed: the request line's parts,
 * the path and the query's arguments percent-decoded (arguments with '+'
 * as a space), the header fields with their values trimmed of white
 * space.  Lookups ignore case. */
struct tw_door_req {
  const char *method, *path, *version;
  struct tw_door_kv *hdr, *arg;
  size_t n_hdr, n_arg, cap_arg;
  bool http11;     /* HTTP/1.1 (else 1.0) */
  bool want_close; /* Connection: close, or HTTP/1.0 without keep-alive */
  char *mem;       /* the strings */
};

/* Parses a head tw_door_judge passed (len: its head_len). */
void tw_door_parse(const char *head, size_t len, struct tw_door_req *q);
void tw_door_req_release(struct tw_door_req *q);
const char *tw_door_req_header(const struct tw_door_req *q, const char *name);
const char *tw_door_req_arg(const struct tw_door_req *q, const char *name);
/* Sets (or adds) an argument; key and value must outlive q's use. */
void tw_door_req_set_arg(struct tw_door_req *q, const char *key,
                         const char *value);

/* ---- the listener ------------------------------------------------------- */

struct tw_door;
struct tw_door_conn;

/* The server's answer to one request. */
struct tw_door_reply {
  struct tw_buf bytes; /* as sent: status line, fields, body (a stream: its
                          head only) */
  bool close;          /* close the connection once it is sent */
  /* a stream: after bytes, what pull appends to out (as chunks when
   * chunked, else until the close); > 0 bytes added, 0 nothing now (the
   * connection waits, off the pool, until tw_door_wake), -1 the end */
  int (*pull)(void *sctx, struct tw_buf *out);
  void *sctx;
  bool chunked;
};

struct tw_door_ops {
  /* A judged and parsed head.  *req: the server's request (always set).
   * true: read the body (body_len bytes; 100 Continue first if asked)
   * and call run; false: out holds the answer, sent without reading the
   * body, and the connection closes. */
  bool (*head)(void *ctx, struct tw_door_conn *c, struct tw_door_req *q,
               uint64_t body_len, void **req, struct tw_door_reply *out);
  /* The body is whole (the server may take its storage). */
  void (*run)(void *ctx, void *req, struct tw_buf *body,
              struct tw_door_reply *out);
  /* The request's answer is sent, or its connection gone (a stream's
   * included): the request is the server's to free. */
  void (*done)(void *ctx, void *req);
};

struct tw_door_opts {
  int listen_fd;             /* bound and listening; stays the caller's */
  SSL_CTX *tls;              /* TLS terminated here (tw_door_tls_ctx), or NULL */
  unsigned threads;          /* the pool serving the connections */
  int64_t idle_us;           /* no byte either way while answering */
  unsigned max_connections;
  unsigned max_per_address;
  int64_t head_us;           /* a head's deadline: from the accept, or the
                                previous answer */
  int64_t body_us;           /* a body's deadline, from its head */
  struct tw_door_limits limits;
  struct tw_door_ops ops;
  /* fills a request id for a refusal's problem */
  void (*request_id)(void *ctx, char out[17]);
  void *ctx;
};

/* Starts the door's threads (one accepting, o->threads serving). */
enum tw_rc tw_door_start(const struct tw_door_opts *o, struct tw_door **out,
                         struct tw_err *err);

/* A stream's connection waiting for its pull to give something: pull
 * again (any thread; until the request's done was called). */
void tw_door_wake(struct tw_door_conn *c);

/* A TLS context serving the PEM certificate (its chain following) and
 * key: TLS 1.2 and above, HTTP/1.1 by ALPN.  NULL with err (field
 * "tls") when they do not make one. */
SSL_CTX *tw_door_tls_ctx(const char *cert_pem, const char *key_pem,
                         struct tw_err *err);

/* Accepts no more connections; those it holds go on. */
void tw_door_quiesce(struct tw_door *d);

/* Stops the threads and closes every connection (each request's done
 * called). */
void tw_door_stop(struct tw_door *d);
void tw_door_free(struct tw_door *d);

/* Counters for /metrics: heads refused here, connections cut at a
 * head's or a body's deadline. */
uint64_t tw_door_refused(const struct tw_door *d);
uint64_t tw_door_cut(const struct tw_door *d, bool body);

#endif
