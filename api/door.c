/* door.c - the server's own HTTP/1.1 front on every listener
 * (api/door.h). */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "api/door.h"
#include "broker/base/clock.h"
#include "broker/base/hex.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"

/* ---- the judgement ------------------------------------------------------ */

/* What a head may cost a connection beyond its bytes, bounded by
 * limits.pool: a record per header field, query argument and cookie (64
 * bytes each), the Cookie header's copy, and room for the answer's
 * head.  A head with more fields than its connection may hold is 431. */
#define FIELD_COST 64
#define ANSWER_ROOM 8192

static bool tchar(unsigned char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
         (ch >= 'A' && ch <= 'Z') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static enum tw_door_verdict refuse(struct tw_door_problem *p, unsigned status,
                                   const char *type, const char *field,
                                   const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum tw_door_verdict refuse(struct tw_door_problem *p, unsigned status,
                                   const char *type, const char *field,
                                   const char *fmt, ...) {
  p->status = status;
  p->type = type;
  p->field = field;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->detail, sizeof p->detail, fmt, ap);
  va_end(ap);
  return TW_DOOR_REFUSE;
}

/* The line at *pos: [*s, *s + *n) without its CR LF (or bare LF, which
 * the parser accepts too); false when no LF has arrived yet. */
static bool next_line(const char *buf, size_t len, size_t *pos,
                      const char **s, size_t *n, bool *nul) {
  const char *lf = memchr(buf + *pos, '\n', len - *pos);
  size_t end = lf ? (size_t)(lf - buf) : len;
  *nul = memchr(buf + *pos, '\0', end - *pos) != NULL;
  if (!lf)
    return false;
  *s = buf + *pos;
  *n = (size_t)(lf - *s);
  if (*n && (*s)[*n - 1] == '\r')
    (*n)--;
  *pos = (size_t)(lf - buf) + 1;
  return true;
}

/* A NUL is never part of a head (RFC 9110 section 5.5), and the parser
 * reads its lines as C strings: refused as soon as it arrives. */
static enum tw_door_verdict refuse_nul(struct tw_door_problem *p) {
  return refuse(p, 400, "malformed", "headers",
                "the request head holds a NUL byte");
}

static size_t count_byte(const char *s, size_t n, char c) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += s[i] == c;
  return k;
}

enum tw_door_verdict tw_door_judge(const char *buf, size_t len,
                                   const struct tw_door_limits *lim,
                                   struct tw_door_problem *p) {
  memset(p, 0, sizeof *p);
  /* what was sent beyond the limit is not looked at */
  size_t seen = len > lim->max_head ? lim->max_head : len;
  size_t pos = 0, fields = 0, cookie_bytes = 0;
  int n_cl = 0;
  uint64_t cl = 0;
  bool te = false;
  const char *s;
  size_t n;
  /* empty lines before the request line are ignored (RFC 9112 2.2) */
  bool nul;
  for (;;) {
    size_t at = pos;
    bool whole = next_line(buf, seen, &pos, &s, &n, &nul);
    if (nul)
      return refuse_nul(p);
    if (!whole) {
      if (len > lim->max_head)
        return refuse(p, 414, "uri-too-long", NULL,
                      "the request line is over %zu bytes", lim->max_head);
      return TW_DOOR_MORE;
    }
    if (n) {
      pos = at;
      break;
    }
  }
  next_line(buf, seen, &pos, &s, &n, &nul);
  /* METHOD SP TARGET SP HTTP/x.y (the parser, like RFC 9112 section
   * 3, takes the version after the last space) */
  const char *sp1 = memchr(s, ' ', n);
  const char *sp2 = s + n;
  while (sp2 > s && sp2[-1] != ' ')
    sp2--;
  if (!sp1 || sp1 == s || sp2 <= sp1 + 1)
    return refuse(p, 400, "malformed", "request-line",
                  "the request line is not METHOD TARGET HTTP-VERSION");
  for (const char *m = s; m < sp1; m++)
    if (!tchar((unsigned char)*m))
      return refuse(p, 400, "malformed", "request-line",
                    "the method is not a token (RFC 9110 section 9.1)");
  const char *v = sp2;
  size_t vn = (size_t)(s + n - v);
  if (vn != 8 || memcmp(v, "HTTP/", 5) || v[6] != '.' || v[5] < '0' ||
      v[5] > '9' || v[7] < '0' || v[7] > '9')
    return refuse(p, 400, "malformed", "request-line",
                  "the request line does not end in an HTTP version "
                  "(HTTP/1.1)");
  if (v[5] != '1')
    return refuse(p, 505, "http-version-not-supported", "request-line",
                  "HTTP/%c.%c is not served here: this server speaks "
                  "HTTP/1.1 (and HTTP/1.0)%s",
                  v[5], v[7],
                  v[5] == '2' ? "; HTTP/2 is not offered, its connection "
                                "preface is refused"
                              : "");
  const char *target = sp1 + 1;
  size_t tn = (size_t)(sp2 - 1 - target);
  const char *q = memchr(target, '?', tn);
  if (q)
    fields += 1 + count_byte(q, tn - (size_t)(q - target), '&');
  /* the header fields, to the blank line */
  for (;;) {
    bool whole = next_line(buf, seen, &pos, &s, &n, &nul);
    if (nul)
      return refuse_nul(p);
    if (!whole) {
      if (len > lim->max_head)
        return refuse(p, 431, "headers-too-large", NULL,
                      "the request head is over %zu bytes", lim->max_head);
      return TW_DOOR_MORE;
    }
    if (!n)
      break;
    if (*s == ' ' || *s == '\t')
      return refuse(p, 400, "malformed", "headers",
                    "a header line starts with white space: obsolete line "
                    "folding is refused (RFC 9112 section 5.2)");
    const char *colon = memchr(s, ':', n);
    if (!colon)
      return refuse(p, 400, "malformed", "headers",
                    "a header line without a colon (RFC 9112 section 5)");
    fields++;
    size_t nn = (size_t)(colon - s);
    const char *val = colon + 1, *end = s + n;
    while (val < end && (*val == ' ' || *val == '\t'))
      val++;
    if (nn == 14 && !strncasecmp(s, "Content-Length", 14)) {
      /* read as digits to the end of the line: nothing
       * else, at most 64 bits (RFC 9110 section 8.6) */
      if (val == end)
        return refuse(p, 400, "malformed", "Content-Length",
                      "Content-Length is empty");
      uint64_t x = 0;
      for (const char *d = val; d < end; d++) {
        if (*d < '0' || *d > '9')
          return refuse(p, 400, "malformed", "Content-Length",
                        "Content-Length is not a decimal number of bytes");
        unsigned dig = (unsigned)(*d - '0');
        if (x > (UINT64_MAX - dig) / 10)
          return refuse(p, 413, "too-large", "Content-Length",
                        "Content-Length does not fit 64 bits");
        x = x * 10 + dig;
      }
      if (n_cl++ && x != cl)
        te = true; /* two lengths: the server refuses it from the head */
      cl = x;
    } else if (nn == 17 && !strncasecmp(s, "Transfer-Encoding", 17)) {
      te = true;
    } else if (nn == 6 && !strncasecmp(s, "Cookie", 6) && !cookie_bytes) {
      /* the first Cookie header counts as its parts */
      size_t cn = (size_t)(end - val);
      cookie_bytes = cn + 1;
      fields += 1 + count_byte(val, cn, ';');
    }
  }
  if (pos > lim->max_head)
    return refuse(p, 431, "headers-too-large", NULL,
                  "the request head is over %zu bytes", lim->max_head);
  size_t need = pos + FIELD_COST * (fields + 1) + cookie_bytes + ANSWER_ROOM;
  if (need > lim->pool)
    return refuse(p, 431, "headers-too-large", NULL,
                  "the request head's %zu fields in %zu bytes need more than "
                  "the %zu bytes a connection may hold",
                  fields, pos, lim->pool);
  p->head_len = pos;
  p->body_len = te ? 0 : cl;
  p->unframed = te;
  return TW_DOOR_PASS;
}

static const char *reason(unsigned status) {
  switch (status) {
  case 400:
    return "Bad Request";
  case 408:
    return "Request Timeout";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Error";
  }
}

size_t tw_door_answer(const struct tw_door_problem *p, const char *request_id,
                      char *out, size_t cap) {
  struct tw_buf j;
  tw_buf_init(&j);
  tw_buf_printf(&j, "{\"type\":\"/problems/%s\",\"title\":", p->type);
  tw_buf_json_str(&j, reason(p->status));
  tw_buf_printf(&j, ",\"status\":%u,\"detail\":", p->status);
  tw_buf_json_str(&j, p->detail);
  if (p->field) {
    tw_buf_adds(&j, ",\"field\":");
    tw_buf_json_str(&j, p->field);
  }
  tw_buf_adds(&j, ",\"request_id\":");
  tw_buf_json_str(&j, request_id);
  tw_buf_adds(&j, "}");
  /* Date: RFC 9110 section 6.6.1 (IMF-fixdate, English names whatever
   * the locale) */
  static const char days[] = "SunMonTueWedThuFriSat",
                    months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  int k = snprintf(out, cap,
                   "HTTP/1.1 %u %s\r\nDate: %.3s, %02d %.3s %04d "
                   "%02d:%02d:%02d GMT\r\nContent-Type: "
                   "application/problem+json\r\nConnection: close\r\n"
                   "X-Request-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
                   p->status, reason(p->status), days + 3 * tm.tm_wday,
                   tm.tm_mday, months + 3 * tm.tm_mon, tm.tm_year + 1900,
                   tm.tm_hour, tm.tm_min, tm.tm_sec, request_id, j.len,
                   j.data);
  tw_buf_release(&j);
  return k > 0 && (size_t)k < cap ? (size_t)k : 0;
}

/* ---- the parsed head ------------------------------------------------------ */

/* %XX decoded in place (a malformed escape stays as it is); plus: '+' is
 * a space (query arguments). */
static void unescape(char *s, bool plus) {
  char *w = s;
  for (char *p = s; *p; p++) {
    int hi, lo;
    if (*p == '%' && (hi = tw_hexval((unsigned char)p[1])) >= 0 &&
        (lo = tw_hexval((unsigned char)p[2])) >= 0) {
      *w++ = (char)(hi * 16 + lo);
      p += 2;
    } else {
      *w++ = plus && *p == '+' ? ' ' : *p;
    }
  }
  *w = '\0';
}

static void add_arg(struct tw_door_req *q, const char *key,
                    const char *value) {
  if (q->n_arg == q->cap_arg) {
    q->cap_arg = q->cap_arg ? 2 * q->cap_arg : 8;
    q->arg = tw_realloc(q->arg, q->cap_arg * sizeof *q->arg);
  }
  q->arg[q->n_arg++] = (struct tw_door_kv){key, value};
}

static bool has_token(const char *list, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = list; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    const char *e = p;
    while (*e && *e != ',')
      e++;
    const char *t = e;
    while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
      t--;
    if ((size_t)(t - p) == n && !strncasecmp(p, tok, n))
      return true;
    p = e;
  }
  return false;
}

void tw_door_parse(const char *head, size_t len, struct tw_door_req *q) {
  memset(q, 0, sizeof *q);
  char *m = q->mem = tw_malloc(len + 1);
  memcpy(m, head, len);
  m[len] = '\0';
  size_t lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += m[i] == '\n';
  q->hdr = tw_calloc(lines ? lines : 1, sizeof *q->hdr);
  char *p = m;
  while (*p == '\r' || *p == '\n')
    p++;
  /* the request line */
  char *eol = strchr(p, '\n');
  *eol = '\0';
  if (eol > p && eol[-1] == '\r')
    eol[-1] = '\0';
  char *sp1 = strchr(p, ' ');
  char *sp2 = strrchr(p, ' ');
  *sp1 = '\0';
  *sp2 = '\0';
  q->method = p;
  q->version = sp2 + 1;
  q->http11 = !strcmp(q->version, "HTTP/1.1");
  char *target = sp1 + 1;
  char *qm = strchr(target, '?');
  if (qm)
    *qm = '\0';
  char *frag = strchr(target, '#');
  if (frag)
    *frag = '\0';
  unescape(target, false);
  q->path = target;
  if (qm) {
    char *a = qm + 1;
    frag = strchr(a, '#');
    if (frag)
      *frag = '\0';
    while (a && *a) {
      char *amp = strchr(a, '&');
      if (amp)
        *amp = '\0';
      if (*a) {
        char *eq = strchr(a, '=');
        if (eq) {
          *eq = '\0';
          unescape(eq + 1, true);
        }
        unescape(a, true);
        add_arg(q, a, eq ? eq + 1 : NULL);
      }
      a = amp ? amp + 1 : NULL;
    }
  }
  /* the header fields */
  p = eol + 1;
  for (;;) {
    eol = strchr(p, '\n');
    if (!eol)
      break;
    *eol = '\0';
    if (eol > p && eol[-1] == '\r')
      eol[-1] = '\0';
    if (!*p)
      break;
    char *colon = strchr(p, ':');
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    char *e = v + strlen(v);
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
      *--e = '\0';
    q->hdr[q->n_hdr++] = (struct tw_door_kv){p, v};
    p = eol + 1;
  }
  const char *conn = tw_door_req_header(q, "Connection");
  q->want_close = q->http11 ? has_token(conn, "close")
                            : !has_token(conn, "keep-alive");
}

void tw_door_req_release(struct tw_door_req *q) {
  free(q->mem);
  free(q->hdr);
  free(q->arg);
  memset(q, 0, sizeof *q);
}

const char *tw_door_req_header(const struct tw_door_req *q, const char *name) {
  for (size_t i = 0; i < q->n_hdr; i++)
    if (!strcasecmp(q->hdr[i].key, name))
      return q->hdr[i].value;
  return NULL;
}

const char *tw_door_req_arg(const struct tw_door_req *q, const char *name) {
  for (size_t i = 0; i < q->n_arg; i++)
    if (!strcasecmp(q->arg[i].key, name))
      return q->arg[i].value;
  return NULL;
}

void tw_door_req_set_arg(struct tw_door_req *q, const char *key,
                         const char *value) {
  for (size_t i = 0; i < q->n_arg; i++)
    if (!strcasecmp(q->arg[i].key, key)) {
      q->arg[i].value = value;
      return;
    }
  add_arg(q, key, value);
}

/* ---- the listener -------------------------------------------------------- */

/* A connection, owned by one pool thread from its accept to its close. */
enum cstate {
  C_HEAD,   /* reading (the rest of) a request head */
  C_BODY,   /* reading its body */
  C_SEND,   /* writing its answer */
  C_STREAM, /* writing a stream's answer, or waiting for its next bytes */
  C_LINGER  /* answered and shut for writing: reading what still comes */
};

struct worker;

struct tw_door_conn {
  struct tw_door_conn *prev, *next; /* the thread's list */
  struct worker *w;
  int fd;
  struct sockaddr_storage sa;
  SSL *ssl; /* NULL: plain */
  bool shaken;
  enum cstate st;
  int64_t deadline_us; /* 0: none */
  bool reused;         /* a request was answered on it already */
  bool rd, wr, hup;    /* epoll said readable, writable, hung up */
  char *in;
  size_t in_len, in_cap;
  /* the request in hand */
  struct tw_door_req q;
  void *req;
  struct tw_buf body;
  uint64_t body_left;
  bool close_after;
  struct tw_buf out;
  size_t out_off;
  /* a stream */
  int (*pull)(void *sctx, struct tw_buf *out);
  void *sctx;
  bool chunked, parked, stream_end;
  bool wake_queued; /* under w->mu */
  struct tw_door_conn *wnext; /* under w->mu */
  bool dead;
};

struct worker {
  struct tw_door *d;
  int ep, wake;
  pthread_t thread;
  bool running;
  struct tw_door_conn tag_wake; /* its address tags the eventfd */
  pthread_mutex_t mu;
  struct tw_door_conn *incoming; /* under mu: accepted, not yet listed */
  struct tw_door_conn *wq;       /* under mu: streams to pull again */
  bool stop;                     /* under mu */
  /* this thread only */
  struct tw_door_conn *conns, *dead;
  struct tw_door_conn **woken; /* the streams taken from wq */
  size_t woken_cap;
  int64_t next_check;
  struct tw_buf chunk;
};

struct addr_count {
  struct addr_count *next;
  uint8_t key[16];
  unsigned n;
};

#define ADDR_BUCKETS 1024
#define LINGER_US (1000 * 1000)
#define ACCEPT_BATCH 64
#define IN_FIRST 4096
#define READ_MAX (256 * 1024)

struct tw_door {
  struct tw_door_opts o;
  int ep, wake;
  pthread_t thread;
  bool running;
  int tag_listen, tag_wake;
  struct worker *workers;
  unsigned n_workers, next_worker;
  size_t in_max; /* a connection's read buffer at most */
  pthread_mutex_t mu;
  unsigned count; /* under mu */
  struct addr_count *addrs[ADDR_BUCKETS]; /* under mu */
  uint64_t refused, cut_head, cut_body;   /* atomic */
};

static void addr_key(const struct sockaddr *sa, uint8_t key[16]) {
  memset(key, 0, 16);
  if (sa->sa_family == AF_INET) {
    key[10] = key[11] = 0xff; /* as ::ffff:a.b.c.d */
    memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
  }
}

static size_t addr_bucket(const uint8_t key[16]) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (int i = 0; i < 16; i++)
    h = (h ^ key[i]) * 1099511628211ULL;
  return (size_t)(h % ADDR_BUCKETS);
}

/* Takes a place for a new connection from sa; false: over a limit. */
static bool admit(struct tw_door *d, const struct sockaddr *sa) {
  uint8_t key[16];
  addr_key(sa, key);
  size_t b = addr_bucket(key);
  bool ok = false;
  pthread_mutex_lock(&d->mu);
  struct addr_count *a = d->addrs[b];
  while (a && memcmp(a->key, key, 16))
    a = a->next;
  if (d->count < d->o.max_connections &&
      (!a || a->n < d->o.max_per_address)) {
    if (!a) {
      a = tw_calloc(1, sizeof *a);
      memcpy(a->key, key, 16);
      a->next = d->addrs[b];
      d->addrs[b] = a;
    }
    a->n++;
    d->count++;
    ok = true;
  }
  pthread_mutex_unlock(&d->mu);
  return ok;
}

static void release_locked(struct tw_door *d, const struct sockaddr *sa) {
  uint8_t key[16];
  addr_key(sa, key);
  size_t b = addr_bucket(key);
  struct addr_count **pa = &d->addrs[b];
  while (*pa && memcmp((*pa)->key, key, 16))
    pa = &(*pa)->next;
  if (*pa && --(*pa)->n == 0) {
    struct addr_count *gone = *pa;
    *pa = gone->next;
    free(gone);
  }
  if (d->count)
    d->count--;
}

static void release(struct tw_door *d, const struct sockaddr *sa) {
  pthread_mutex_lock(&d->mu);
  release_locked(d, sa);
  pthread_mutex_unlock(&d->mu);
}

/* ---- a connection's bytes ------------------------------------------------- */

/* > 0 bytes, 0 the end (reading), -1 nothing now, -2 an error. */
static ssize_t conn_io(struct tw_door_conn *c, int k, bool reading) {
  if (k > 0)
    return k;
  if (!c->ssl) {
    if (k == 0 && reading)
      return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (reading)
        c->rd = false;
      else
        c->wr = false;
      return -1;
    }
    return -2;
  }
  switch (SSL_get_error(c->ssl, k)) {
  case SSL_ERROR_WANT_READ:
    c->rd = false;
    return -1;
  case SSL_ERROR_WANT_WRITE:
    c->wr = false;
    return -1;
  case SSL_ERROR_ZERO_RETURN:
    return reading ? 0 : -2;
  default:
    ERR_clear_error();
    return -2;
  }
}

static ssize_t conn_read(struct tw_door_conn *c, char *buf, size_t n) {
  if (n > INT_MAX)
    n = INT_MAX;
  if (c->ssl)
    return conn_io(c, SSL_read(c->ssl, buf, (int)n), true);
  ssize_t k = recv(c->fd, buf, n, MSG_DONTWAIT);
  if (k > 0 && (size_t)k < n && !c->hup)
    c->rd = false; /* drained: the next edge says when more comes */
  return k < 0 ? conn_io(c, -1, true) : k == 0 ? 0 : k;
}

static ssize_t conn_write(struct tw_door_conn *c, const char *buf, size_t n) {
  if (n > INT_MAX)
    n = INT_MAX;
  if (c->ssl)
    return conn_io(c, SSL_write(c->ssl, buf, (int)n), false);
  ssize_t k = send(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (k >= 0 && (size_t)k < n)
    c->wr = false;
  return k < 0 ? conn_io(c, -1, false) : k;
}

static void set_deadline(struct tw_door_conn *c, int64_t us) {
  c->deadline_us = us ? tw_mono_us() + us : 0;
  if (c->deadline_us && c->deadline_us < c->w->next_check)
    c->w->next_check = c->deadline_us;
}

/* Closes a connection and frees its place; its memory goes once the
 * events at hand are seen. */
static void drop(struct tw_door_conn *c) {
  if (c->dead)
    return;
  struct worker *w = c->w;
  struct tw_door *d = w->d;
  if (c->req) {
    d->o.ops.done(d->o.ctx, c->req); /* a stream: no wake after this */
    c->req = NULL;
  }
  pthread_mutex_lock(&w->mu);
  if (c->wake_queued) {
    struct tw_door_conn **p = &w->wq;
    while (*p != c)
      p = &(*p)->wnext;
    *p = c->wnext;
    c->wake_queued = false;
  }
  pthread_mutex_unlock(&w->mu);
  /* out of the set first: a child forked elsewhere may hold the socket
   * a moment, and it would stay in the set naming a connection freed */
  epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  SSL_free(c->ssl);
  c->ssl = NULL;
  release(d, (struct sockaddr *)&c->sa);
  tw_door_req_release(&c->q);
  tw_buf_release(&c->body);
  tw_buf_release(&c->out);
  free(c->in);
  c->in = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    w->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->dead = true;
  c->next = w->dead;
  w->dead = c;
}

/* Shut for writing, then what the client still sends is read and thrown
 * away for a second, so that the close does not reset the answer away. */
static void linger(struct tw_door_conn *c) {
  if (c->ssl && c->shaken)
    SSL_shutdown(c->ssl); /* close_notify, if it fits now */
  shutdown(c->fd, SHUT_WR);
  c->st = C_LINGER;
  c->rd = true;
  set_deadline(c, LINGER_US);
}

/* Writes what the answer holds; true when all of it is out. */
static bool flush_out(struct tw_door_conn *c) {
  while (c->out_off < c->out.len) {
    if (!c->wr)
      return false;
    ssize_t k = conn_write(c, c->out.data + c->out_off,
                           c->out.len - c->out_off);
    if (k == -2) {
      drop(c);
      return false;
    }
    if (k < 0)
      return false;
    c->out_off += (size_t)k;
    if (c->st != C_BODY) /* 100 Continue: the body's deadline runs */
      set_deadline(c, c->w->d->o.idle_us);
  }
  tw_buf_reset(&c->out);
  c->out_off = 0;
  return true;
}

/* A refusal (or a cut) written as it fits, and the connection lingers. */
static void say_and_close(struct tw_door_conn *c,
                          const struct tw_door_problem *p) {
  struct tw_door *d = c->w->d;
  char id[17], msg[1024];
  d->o.request_id(d->o.ctx, id);
  tw_log_debug("http", "request=%s refused at the door: %u %s", id, p->status,
               p->detail);
  size_t len = tw_door_answer(p, id, msg, sizeof msg);
  tw_buf_reset(&c->out);
  c->out_off = 0;
  tw_buf_add(&c->out, msg, len);
  c->close_after = true;
  c->st = C_SEND;
  set_deadline(c, d->o.idle_us);
}

static void take_reply(struct tw_door_conn *c, struct tw_door_reply *rep) {
  tw_buf_release(&c->out);
  c->out = rep->bytes;
  c->out_off = 0;
  c->close_after = c->close_after || rep->close || c->q.want_close;
  c->pull = rep->pull;
  c->sctx = rep->sctx;
  c->chunked = rep->chunked;
  c->parked = c->stream_end = false;
  c->st = rep->pull ? C_STREAM : C_SEND;
  set_deadline(c, c->w->d->o.idle_us);
}

/* The answer is out: the next request, or the close. */
static void request_done(struct tw_door_conn *c) {
  struct tw_door *d = c->w->d;
  if (c->req) {
    d->o.ops.done(d->o.ctx, c->req);
    c->req = NULL;
  }
  tw_door_req_release(&c->q);
  tw_buf_release(&c->body);
  c->pull = NULL;
  c->reused = true;
  if (c->close_after) {
    linger(c);
    return;
  }
  c->st = C_HEAD;
  set_deadline(c, d->o.head_us);
  if (!c->in_len && c->in_cap > IN_FIRST) {
    free(c->in); /* an idle connection holds little */
    c->in = NULL;
    c->in_cap = 0;
  }
}

static void run_request(struct tw_door_conn *c) {
  struct tw_door *d = c->w->d;
  struct tw_door_reply rep = {0};
  tw_buf_init(&rep.bytes);
  d->o.ops.run(d->o.ctx, c->req, &c->body, &rep);
  take_reply(c, &rep);
}

/* A head judged whole and fit: parsed, handed to the server. */
static void start_request(struct tw_door_conn *c,
                          const struct tw_door_problem *p) {
  struct tw_door *d = c->w->d;
  tw_door_parse(c->in, p->head_len, &c->q);
  memmove(c->in, c->in + p->head_len, c->in_len - p->head_len);
  c->in_len -= p->head_len;
  c->close_after = false;
  struct tw_door_reply rep = {0};
  tw_buf_init(&rep.bytes);
  tw_buf_init(&c->body);
  if (!d->o.ops.head(d->o.ctx, c, &c->q, p->body_len, &c->req, &rep)) {
    /* answered from the head alone: its body, if any, is never read,
     * and what follows cannot be trusted */
    c->close_after = true;
    c->in_len = 0;
    take_reply(c, &rep);
    return;
  }
  tw_buf_release(&rep.bytes);
  c->body_left = p->body_len;
  c->st = C_BODY;
  set_deadline(c, d->o.body_us);
  if (c->body_left) {
    tw_buf_reserve(&c->body, (size_t)c->body_left);
    const char *ex = tw_door_req_header(&c->q, "Expect");
    if (ex && c->q.http11 && !strcasecmp(ex, "100-continue") &&
        c->in_len < c->body_left) {
      static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
      tw_buf_add(&c->out, cont, sizeof cont - 1);
      c->out_off = 0;
    }
  }
}

/* Pulls a stream's next bytes into out; false: nothing now. */
static bool stream_fill(struct tw_door_conn *c) {
  if (c->stream_end || c->parked)
    return false;
  struct worker *w = c->w;
  tw_buf_reset(&w->chunk);
  int k = c->pull(c->sctx, &w->chunk);
  if (k < 0) {
    c->stream_end = true;
    c->close_after = true;
    if (c->chunked)
      tw_buf_adds(&c->out, "0\r\n\r\n");
    return true;
  }
  if (!w->chunk.len) {
    c->parked = true; /* until tw_door_wake */
    set_deadline(c, 0);
    return false;
  }
  if (c->chunked)
    tw_buf_printf(&c->out, "%zx\r\n", w->chunk.len);
  tw_buf_add(&c->out, w->chunk.data, w->chunk.len);
  if (c->chunked)
    tw_buf_adds(&c->out, "\r\n");
  set_deadline(c, w->d->o.idle_us);
  return true;
}

/* Reads into the head buffer; false: nothing more now (or c is gone). */
static bool read_in(struct tw_door_conn *c) {
  struct tw_door *d = c->w->d;
  if (!c->rd)
    return false;
  if (c->in_len == c->in_cap) {
    if (c->in_cap >= d->in_max)
      return false; /* judged before more is read */
    c->in_cap = c->in_cap ? 2 * c->in_cap : IN_FIRST;
    if (c->in_cap > d->in_max)
      c->in_cap = d->in_max;
    c->in = tw_realloc(c->in, c->in_cap);
  }
  ssize_t k = conn_read(c, c->in + c->in_len, c->in_cap - c->in_len);
  if (k == 0 || k == -2) {
    drop(c); /* gone before (the rest of) a head: nothing to answer */
    return false;
  }
  if (k < 0)
    return false;
  c->in_len += (size_t)k;
  return true;
}

static void pump(struct tw_door_conn *c) {
  struct tw_door *d = c->w->d;
  while (!c->dead) {
    switch (c->st) {
    case C_HEAD: {
      if (c->ssl && !c->shaken) {
        int k = SSL_accept(c->ssl);
        if (k != 1) {
          if (conn_io(c, k, true) == -2)
            drop(c);
          return;
        }
        c->shaken = true;
        c->rd = c->wr = true;
      }
      if (c->in_len) {
        struct tw_door_problem p;
        switch (tw_door_judge(c->in, c->in_len, &d->o.limits, &p)) {
        case TW_DOOR_REFUSE:
          __atomic_add_fetch(&d->refused, 1, __ATOMIC_RELAXED);
          say_and_close(c, &p);
          continue;
        case TW_DOOR_PASS:
          start_request(c, &p);
          continue;
        case TW_DOOR_MORE:
          break;
        }
      }
      if (!read_in(c))
        return;
      continue;
    }
    case C_BODY: {
      if (c->out.len && !flush_out(c)) /* 100 Continue */
        return;
      if (c->body_left && c->in_len) {
        size_t take = c->in_len < c->body_left ? c->in_len
                                               : (size_t)c->body_left;
        tw_buf_add(&c->body, c->in, take);
        memmove(c->in, c->in + take, c->in_len - take);
        c->in_len -= take;
        c->body_left -= take;
      }
      if (!c->body_left) {
        run_request(c);
        continue;
      }
      if (!c->rd)
        return;
      size_t want = c->body_left < READ_MAX ? (size_t)c->body_left : READ_MAX;
      tw_buf_reserve(&c->body, want);
      ssize_t k = conn_read(c, c->body.data + c->body.len, want);
      if (k == 0 || k == -2) {
        drop(c);
        return;
      }
      if (k < 0)
        return;
      c->body.len += (size_t)k;
      c->body_left -= (uint64_t)k;
      continue;
    }
    case C_SEND:
      if (!flush_out(c))
        return;
      request_done(c);
      continue;
    case C_STREAM:
      if (c->out.len && !flush_out(c))
        return;
      if (c->stream_end) {
        request_done(c);
        continue;
      }
      if (c->hup) {
        drop(c); /* its client is gone: the stream ends */
        return;
      }
      if (!stream_fill(c))
        return; /* waiting, off the pool */
      continue;
    case C_LINGER:
      for (;;) {
        char tmp[4096];
        ssize_t k = c->ssl ? recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT)
                           : conn_read(c, tmp, sizeof tmp);
        if (k > 0)
          continue;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                       errno != EINTR))
          drop(c);
        return;
      }
    }
  }
}

/* A deadline passed.  A client that sent a part of a first request, or a
 * body, gets a 408 problem; an idle kept-alive connection is closed
 * without a word (RFC 9112 section 9.5), since its client may be sending
 * its next request right now; a TLS handshake not done has no session to
 * say it in. */
static void cut(struct tw_door_conn *c) {
  struct tw_door *d = c->w->d;
  if (c->st == C_LINGER || c->st == C_SEND || c->st == C_STREAM) {
    drop(c); /* lingered enough, or its client reads nothing */
    return;
  }
  bool body = c->st == C_BODY;
  __atomic_add_fetch(body ? &d->cut_body : &d->cut_head, 1, __ATOMIC_RELAXED);
  if ((c->ssl && !c->shaken) || (!body && c->reused && !c->in_len)) {
    drop(c);
    return;
  }
  struct tw_door_problem p = {.status = 408, .type = "timeout"};
  snprintf(p.detail, sizeof p.detail, "the request %s did not arrive within "
           "%lld s", body ? "body" : "head",
           (long long)((body ? d->o.body_us : d->o.head_us) / 1000000));
  if (c->req) {
    d->o.ops.done(d->o.ctx, c->req);
    c->req = NULL;
  }
  c->in_len = 0;
  say_and_close(c, &p);
  pump(c);
}

static void check_deadlines(struct worker *w, int64_t now) {
  int64_t next = INT64_MAX;
  for (struct tw_door_conn *c = w->conns, *n; c; c = n) {
    n = c->next;
    if (c->deadline_us && c->deadline_us <= now)
      cut(c);
    if (!c->dead && c->deadline_us && c->deadline_us < next)
      next = c->deadline_us;
  }
  w->next_check = next; /* every connection of the thread looked at */
}

static void bury(struct worker *w) {
  while (w->dead) {
    struct tw_door_conn *c = w->dead;
    w->dead = c->next;
    free(c);
  }
}

static void take_incoming(struct worker *w) {
  pthread_mutex_lock(&w->mu);
  struct tw_door_conn *in = w->incoming;
  w->incoming = NULL;
  pthread_mutex_unlock(&w->mu);
  while (in) {
    struct tw_door_conn *c = in;
    in = c->wnext;
    c->wnext = NULL;
    c->prev = NULL;
    c->next = w->conns;
    if (w->conns)
      w->conns->prev = c;
    w->conns = c;
    if (c->deadline_us < w->next_check)
      w->next_check = c->deadline_us;
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  struct epoll_event evs[64];
  w->next_check = INT64_MAX;
  for (;;) {
    take_incoming(w);
    int64_t now = tw_mono_us();
    if (now >= w->next_check)
      check_deadlines(w, now);
    bury(w);
    int64_t wait = w->next_check == INT64_MAX
                       ? -1
                       : (w->next_check - now + 999) / 1000;
    if (wait > INT_MAX)
      wait = INT_MAX;
    if (wait < -1)
      wait = 0;
    int n = epoll_wait(w->ep, evs, 64, (int)wait);
    take_incoming(w);
    for (int i = 0; i < n; i++) {
      struct tw_door_conn *c = evs[i].data.ptr;
      if (c == &w->tag_wake) {
        uint64_t v;
        (void)!read(w->wake, &v, sizeof v);
        /* the streams to pull, copied out: a wake while they are pulled
         * queues one again, and a drop finds it no longer queued */
        size_t nw = 0;
        pthread_mutex_lock(&w->mu);
        bool stop = w->stop;
        for (struct tw_door_conn *x = w->wq; x; x = x->wnext) {
          if (nw == w->woken_cap) {
            w->woken_cap = w->woken_cap ? 2 * w->woken_cap : 16;
            w->woken = tw_realloc(w->woken, w->woken_cap * sizeof *w->woken);
          }
          w->woken[nw++] = x;
          x->wake_queued = false;
        }
        w->wq = NULL;
        pthread_mutex_unlock(&w->mu);
        if (stop)
          return NULL;
        for (size_t k = 0; k < nw; k++) {
          struct tw_door_conn *x = w->woken[k];
          if (!x->dead) {
            x->parked = false;
            pump(x);
          }
        }
        continue;
      }
      if (c->dead)
        continue;
      uint32_t e = evs[i].events;
      if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->rd = true;
      if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        c->wr = true;
      if (e & (EPOLLRDHUP | EPOLLHUP))
        c->hup = true;
      if ((e & (EPOLLHUP | EPOLLERR)) && c->st != C_HEAD && c->st != C_LINGER) {
        drop(c); /* hung up both ways, or reset: nothing to tell it */
        continue;
      }
      pump(c);
    }
    bury(w);
  }
}

void tw_door_wake(struct tw_door_conn *c) {
  struct worker *w = c->w;
  pthread_mutex_lock(&w->mu);
  bool first = !w->wq;
  if (!c->wake_queued) {
    c->wake_queued = true;
    c->wnext = w->wq;
    w->wq = c;
  }
  pthread_mutex_unlock(&w->mu);
  if (first) {
    uint64_t one = 1;
    (void)!write(w->wake, &one, sizeof one);
  }
}

/* ---- accepting ------------------------------------------------------------- */

static void on_accept(struct tw_door *d) {
  for (int i = 0; i < ACCEPT_BATCH; i++) {
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    int fd = accept4(d->o.listen_fd, (struct sockaddr *)&sa, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        /* no descriptor for it now: let the backlog hold it a moment */
        tw_log_warn("http", "accept: %s", strerror(errno));
        usleep(10 * 1000);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        /* quiesced (shut down) */
        epoll_ctl(d->ep, EPOLL_CTL_DEL, d->o.listen_fd, NULL);
      }
      return;
    }
    if (!admit(d, (struct sockaddr *)&sa)) {
      close(fd); /* over a limit: closed at once */
      continue;
    }
    SSL *ssl = NULL;
    if (d->o.tls && (!(ssl = SSL_new(d->o.tls)) || !SSL_set_fd(ssl, fd))) {
      SSL_free(ssl);
      close(fd);
      release(d, (struct sockaddr *)&sa);
      continue;
    }
    if (sa.ss_family == AF_INET || sa.ss_family == AF_INET6) {
      int one = 1; /* answers go out as they are written */
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    struct worker *w = &d->workers[d->next_worker++ % d->n_workers];
    struct tw_door_conn *c = tw_calloc(1, sizeof *c);
    c->w = w;
    c->fd = fd;
    c->sa = sa;
    c->ssl = ssl;
    c->st = C_HEAD;
    c->wr = true;
    c->deadline_us = tw_mono_us() + d->o.head_us;
    tw_buf_init(&c->out);
    tw_buf_init(&c->body);
    pthread_mutex_lock(&w->mu);
    c->wnext = w->incoming;
    w->incoming = c;
    pthread_mutex_unlock(&w->mu);
    /* listed before it is polled: its first event (a new socket is
     * writable at once, and the set reports that on the add) makes the
     * thread take it, and its deadline, even if its client never sends
     * a byte */
    struct epoll_event ev = {.events =
                                 EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.ptr = c};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev)) {
      uint64_t one = 1; /* not polled: its thread cuts it at its deadline */
      shutdown(fd, SHUT_RDWR);
      (void)!write(w->wake, &one, sizeof one);
    }
  }
}

static void *door_main(void *arg) {
  struct tw_door *d = arg;
  struct epoll_event evs[8];
  for (;;) {
    int n = epoll_wait(d->ep, evs, 8, -1);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == &d->tag_wake)
        return NULL;
      on_accept(d);
    }
  }
}

static void stop_workers(struct tw_door *d) {
  for (unsigned i = 0; i < d->n_workers; i++) {
    struct worker *w = &d->workers[i];
    if (!w->running)
      continue;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    uint64_t one = 1;
    (void)!write(w->wake, &one, sizeof one);
    pthread_join(w->thread, NULL);
    w->running = false;
    take_incoming(w);
    while (w->conns)
      drop(w->conns);
    bury(w);
  }
}

enum tw_rc tw_door_start(const struct tw_door_opts *o, struct tw_door **out,
                         struct tw_err *err) {
  struct tw_door *d = tw_calloc(1, sizeof *d);
  d->o = *o;
  if (d->o.idle_us <= 0)
    d->o.idle_us = 60 * 1000000LL;
  if (d->o.body_us <= 0)
    d->o.body_us = 60 * 1000000LL;
  d->n_workers = o->threads ? o->threads : 1;
  /* the largest head judged, and one byte more */
  d->in_max = o->limits.max_head + 1;
  d->ep = epoll_create1(EPOLL_CLOEXEC);
  d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutex_init(&d->mu, NULL);
  d->workers = tw_calloc(d->n_workers, sizeof *d->workers);
  int fl = fcntl(o->listen_fd, F_GETFL);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &d->tag_listen};
  struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &d->tag_wake};
  bool ok = d->ep >= 0 && d->wake >= 0 && fl >= 0 &&
            !fcntl(o->listen_fd, F_SETFL, fl | O_NONBLOCK) &&
            !epoll_ctl(d->ep, EPOLL_CTL_ADD, o->listen_fd, &lev) &&
            !epoll_ctl(d->ep, EPOLL_CTL_ADD, d->wake, &wev);
  for (unsigned i = 0; i < d->n_workers; i++) {
    struct worker *w = &d->workers[i];
    w->d = d;
    pthread_mutex_init(&w->mu, NULL);
    tw_buf_init(&w->chunk);
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &w->tag_wake};
    if (!ok || w->ep < 0 || w->wake < 0 ||
        epoll_ctl(w->ep, EPOLL_CTL_ADD, w->wake, &ev)) {
      ok = false;
      continue;
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, (size_t)1 << 20);
    if (pthread_create(&w->thread, &at, worker_main, w))
      ok = false;
    else
      w->running = true;
    pthread_attr_destroy(&at);
  }
  if (!ok) {
    int e = errno;
    tw_door_free(d);
    return tw_err_set(err, TW_E_IO, "api: the front door: %s", strerror(e));
  }
  if (pthread_create(&d->thread, NULL, door_main, d)) {
    tw_door_free(d);
    return tw_err_set(err, TW_E_IO, "api: cannot start the front door thread");
  }
  d->running = true;
  *out = d;
  return TW_OK;
}

void tw_door_quiesce(struct tw_door *d) {
  /* the listening socket stops: accept fails and the thread drops it */
  if (d)
    shutdown(d->o.listen_fd, SHUT_RDWR);
}

void tw_door_stop(struct tw_door *d) {
  if (!d)
    return;
  if (d->running) {
    uint64_t one = 1;
    (void)!write(d->wake, &one, sizeof one);
    pthread_join(d->thread, NULL);
    d->running = false;
  }
  stop_workers(d);
}

void tw_door_free(struct tw_door *d) {
  if (!d)
    return;
  tw_door_stop(d);
  for (unsigned i = 0; d->workers && i < d->n_workers; i++) {
    struct worker *w = &d->workers[i];
    if (w->ep > 0)
      close(w->ep);
    if (w->wake > 0)
      close(w->wake);
    pthread_mutex_destroy(&w->mu);
    tw_buf_release(&w->chunk);
    free(w->woken);
  }
  free(d->workers);
  if (d->ep >= 0)
    close(d->ep);
  if (d->wake >= 0)
    close(d->wake);
  for (size_t b = 0; b < ADDR_BUCKETS; b++)
    while (d->addrs[b]) {
      struct addr_count *a = d->addrs[b];
      d->addrs[b] = a->next;
      free(a);
    }
  pthread_mutex_destroy(&d->mu);
  free(d);
}

uint64_t tw_door_refused(const struct tw_door *d) {
  return d ? __atomic_load_n(&d->refused, __ATOMIC_RELAXED) : 0;
}

uint64_t tw_door_cut(const struct tw_door *d, bool body) {
  return d ? __atomic_load_n(body ? &d->cut_body : &d->cut_head,
                             __ATOMIC_RELAXED)
           : 0;
}

/* ---- TLS ------------------------------------------------------------------- */

/* Offers HTTP/1.1 alone: a client asking for h2 only gets no protocol,
 * and speaks HTTP/1.1 or nothing (RFC 7301 section 3.2 lets it give up). */
static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned inlen, void *arg) {
  (void)ssl;
  (void)arg;
  static const unsigned char h11[] = "\x08http/1.1";
  unsigned char *sel = NULL;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof h11 - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *tw_door_tls_ctx(const char *cert_pem, const char *key_pem,
                         struct tw_err *err) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
  X509 *leaf = cb ? PEM_read_bio_X509_AUX(cb, NULL, NULL, NULL) : NULL;
  EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
  const char *why = NULL;
  if (!ctx)
    why = "cannot make a TLS context";
  else if (!leaf)
    why = "the certificate file holds no certificate";
  else if (!key)
    why = "the key file holds no private key";
  else if (SSL_CTX_use_certificate(ctx, leaf) != 1 ||
           SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
           SSL_CTX_check_private_key(ctx) != 1)
    why = "the key does not match the certificate";
  /* the chain's other certificates, as the file gives them */
  for (X509 *x; !why && (x = PEM_read_bio_X509(cb, NULL, NULL, NULL));)
    if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
      X509_free(x);
      why = "cannot add a chain certificate";
    }
  X509_free(leaf);
  EVP_PKEY_free(key);
  BIO_free(cb);
  BIO_free(kb);
  ERR_clear_error();
  if (why) {
    SSL_CTX_free(ctx);
    tw_err_field(err, TW_E_INVALID, "tls", "tls: %s", why);
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  return ctx;
}
