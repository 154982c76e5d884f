/* door.h - the pre-reader in front of libmicrohttpd, on every listener.
 *
 * libmicrohttpd 0.9.75 answers some malformed heads itself, with an HTML
 * body and no content type, before any handler runs (a Content-Length
 * that is not a number, a head larger than its connection memory, a
 * request line it cannot parse or an HTTP version it does not speak).
 * The door accepts each connection itself and judges its heads: a head
 * the library could not take is answered here with one problem+json and
 * the connection closed.  On a plain connection it peeks (MSG_PEEK)
 * until the first head is whole and hands the socket, untouched, to the
 * library (MHD_add_connection); or, relayed (TLS, which the door ends
 * with OpenSSL, and opts.relay), it reads every byte, hands the library
 * one end of a socket pair, frames each request (head, Content-Length
 * bytes) and judges every head before passing it, and relays the
 * answers back.  The door also holds the connection limits (in total and
 * per address) and the first head's deadline.  docs/security.md, "The
 * front door". */
#ifndef TW_API_DOOR_H
#define TW_API_DOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/ssl.h>

#include "broker/base/err.h"

/* ---- the judgement of a head (pure; fuzzed by tests/fuzz/fuzz_door_head) */

struct tw_door_limits {
  size_t max_head;  /* the head as sent, request line included */
  size_t pool;      /* libmicrohttpd's memory per connection */
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

/* ---- the listener ------------------------------------------------------- */

struct tw_door;

struct tw_door_opts {
  int listen_fd;             /* bound and listening; stays the caller's */
  struct MHD_Daemon *mhd;    /* started with MHD_USE_NO_LISTEN_SOCKET */
  /* TLS terminated here (tw_door_tls_ctx; the caller's), or NULL */
  SSL_CTX *tls;
  /* relay plain connections too: every head judged, not only the first */
  bool relay;
  int64_t idle_us;           /* a relayed connection's last answer, to go */
  unsigned max_connections;  /* held here or by the library */
  unsigned max_per_address;
  int64_t head_us;           /* the head's deadline, from the accept */
  struct tw_door_limits limits;
  /* fills a request id for a refusal's problem */
  void (*request_id)(void *ctx, char out[17]);
  void *ctx;
};

/* Starts the door's thread. */
enum tw_rc tw_door_start(const struct tw_door_opts *o, struct tw_door **out,
                         struct tw_err *err);

/* A connection the door handed over was closed by the library (its
 * NOTIFY_CONNECTION, CLOSED; fd its socket): its place is free, unless
 * the door relays it (then the door frees it when its client's socket
 * closes).  addr: its client. */
void tw_door_release(struct tw_door *d, int fd, const struct sockaddr *addr);

/* A TLS context serving the PEM certificate (its chain following) and
 * key: TLS 1.2 and above, HTTP/1.1 by ALPN.  NULL with err (field
 * "tls") when they do not make one. */
SSL_CTX *tw_door_tls_ctx(const char *cert_pem, const char *key_pem,
                         struct tw_err *err);

/* Accepts no more connections; those it holds go on. */
void tw_door_quiesce(struct tw_door *d);

/* Stops the thread and closes what it holds; call before stopping the
 * library.  tw_door_free after the library stopped. */
void tw_door_stop(struct tw_door *d);
void tw_door_free(struct tw_door *d);

/* Counters for /metrics: heads refused here, connections cut at the
 * head's deadline while here. */
uint64_t tw_door_refused(const struct tw_door *d);
uint64_t tw_door_cut(const struct tw_door *d);

#endif
