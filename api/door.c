/* door.c - the pre-reader in front of libmicrohttpd on a plain listener
 * (api/door.h). */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "api/door.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"

/* ---- the judgement ------------------------------------------------------ */

/* What libmicrohttpd takes from a connection's memory beyond the head's
 * bytes: a record per header field, query argument and cookie (56 bytes,
 * aligned to 64), the Cookie header's copy, and room to write the
 * answer's header (its write buffer comes from the same memory: without
 * room the library closes without an answer). */
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
 * the library accepts too); false when no LF has arrived yet. */
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

/* A NUL is never part of a head (RFC 9110 section 5.5), and the library
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
  /* METHOD SP TARGET SP HTTP/x.y (the library, like RFC 9112 section
   * 3, takes the version after the last space) */
  const char *sp1 = memchr(s, ' ', n);
  const char *sp2 = s + n;
  while (sp2 > s && sp2[-1] != ' ')
    sp2--;
  if (!sp1 || sp2 <= sp1 + 1)
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
      /* the library reads it as digits to the end of the line: nothing
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
      /* the library copies the first Cookie header and splits it */
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

/* ---- the listener -------------------------------------------------------- */

/* A connection held here.  Without a relay: waiting for its first head
 * (peeked, nothing consumed), or answered and lingering (reading what the
 * client still sends, so that closing does not reset the answer away).
 * With a relay (TLS, or opts.relay): the door reads every byte the client
 * sends, judges each head and passes what it judged to the library over
 * a socket pair, and relays the library's answers back (below).  The
 * lists are each in order of their deadlines, which all have the same
 * length within a list. */
enum held_state {
  H_WAIT,    /* its first head not judged yet: waiting list */
  H_RELAY,   /* relayed, the library holds its other end: relaying */
  H_CLOSING, /* relayed, the library is done: writing what is left */
  H_LINGER   /* answered, shut for writing: lingering list */
};

struct tag {
  char kind; /* 'c' the client's socket, 'l' the library's, 'L', 'W' */
  struct held *h;
};

struct relay;

struct held {
  struct held *prev, *next;
  int fd;
  enum held_state state;
  int64_t deadline_us;
  struct sockaddr_storage sa;
  socklen_t salen;
  struct tag t_cli, t_lib;
  struct relay *r; /* or NULL */
  bool dead;       /* dropped: freed after the events at hand */
};

struct held_list {
  struct held *head, *tail;
};

struct addr_count {
  struct addr_count *next;
  uint8_t key[16];
  unsigned n;
};

#define ADDR_BUCKETS 1024
#define LINGER_US (1000 * 1000)
#define ACCEPT_BATCH 64
#define OUT_CAP (64 * 1024)

/* What a relay holds.  in[0, ok) is judged and goes to the library next;
 * in[ok, in_len) is the start of a head (or a body still to frame). */
struct relay {
  SSL *ssl; /* NULL: plain */
  bool shaken;  /* the TLS handshake is done */
  bool want_in, want_out; /* what the last TLS call waits for */
  int lib;      /* the door's end of the pair; -1 before or after */
  bool lib_done; /* the library closed its end (or never had one) */
  char *in;
  size_t in_len, in_cap, ok;
  uint64_t body_left; /* of the request being passed */
  bool stop_up;   /* nothing more to the library: refused, or unframed */
  bool up_shut;   /* the library's side shut for writing */
  bool cli_eof;   /* the client shut its side */
  char *out;
  size_t out_off, out_len;
  char problem[1024]; /* to write once the library is done */
  size_t problem_len;
  uint32_t cli_mask, lib_mask; /* as set in the epoll set */
  /* epoll said readable, and no short read since: a read is worth its
   * system call (over TLS the client is always tried: the session may
   * hold bytes the socket does not show) */
  bool cli_rd, lib_rd;
};

struct tw_door {
  struct tw_door_opts o;
  int ep, wake;
  pthread_t thread;
  bool running;
  struct tag tag_listen, tag_wake;
  /* this thread only */
  struct held_list waiting, lingering, closing;
  struct held_list relaying; /* no deadline here: the library's */
  struct held *dead;         /* dropped, to free */
  char *scratch;
  size_t scratch_cap;
  pthread_mutex_t mu;
  unsigned count; /* under mu: held here, or by the library */
  struct addr_count *addrs[ADDR_BUCKETS]; /* under mu */
  /* under mu: the library's ends of the pairs, by descriptor (their
   * close is not a place freed: the door holds the client's socket) */
  uint8_t *lib_fds;
  size_t n_lib_fds;
  uint64_t refused, cut, relayed;         /* atomic */
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

void tw_door_release(struct tw_door *d, int fd, const struct sockaddr *sa) {
  if (!d || !sa)
    return;
  pthread_mutex_lock(&d->mu);
  if (fd >= 0 && (size_t)fd < d->n_lib_fds && d->lib_fds[fd])
    d->lib_fds[fd] = 0; /* a relayed one: the door frees its place */
  else
    release_locked(d, sa);
  pthread_mutex_unlock(&d->mu);
}

static void mark_lib_fd(struct tw_door *d, int fd, bool on) {
  pthread_mutex_lock(&d->mu);
  if ((size_t)fd >= d->n_lib_fds) {
    size_t n = d->n_lib_fds ? d->n_lib_fds : 1024;
    while (n <= (size_t)fd)
      n *= 2;
    d->lib_fds = tw_realloc(d->lib_fds, n);
    memset(d->lib_fds + d->n_lib_fds, 0, n - d->n_lib_fds);
    d->n_lib_fds = n;
  }
  d->lib_fds[fd] = on;
  pthread_mutex_unlock(&d->mu);
}

static struct held_list *list_of(struct tw_door *d, struct held *h) {
  switch (h->state) {
  case H_WAIT:
    return &d->waiting;
  case H_LINGER:
    return &d->lingering;
  case H_CLOSING:
    return &d->closing;
  case H_RELAY:
    return &d->relaying;
  }
  return NULL;
}

static void list_add(struct held_list *l, struct held *h) {
  h->next = NULL;
  h->prev = l->tail;
  if (l->tail)
    l->tail->next = h;
  else
    l->head = h;
  l->tail = h;
}

static void list_del(struct held_list *l, struct held *h) {
  if (h->prev)
    h->prev->next = h->next;
  else
    l->head = h->next;
  if (h->next)
    h->next->prev = h->prev;
  else
    l->tail = h->prev;
  h->prev = h->next = NULL;
}

/* Moves h to state, on that state's list with its deadline `us` ahead. */
static void move(struct tw_door *d, struct held *h, enum held_state state,
                 int64_t us) {
  struct held_list *l = list_of(d, h);
  if (l)
    list_del(l, h);
  h->state = state;
  h->deadline_us = tw_mono_us() + us;
  if ((l = list_of(d, h)))
    list_add(l, h);
}

/* Closes a socket in the door's epoll set.  Out of the set first: a
 * child forked elsewhere in the process may hold the socket a moment
 * (until its exec), and a closed socket still open there would stay in
 * the set, naming a connection freed. */
static void close_polled(struct tw_door *d, int fd) {
  epoll_ctl(d->ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

static void relay_free(struct tw_door *d, struct relay *r) {
  if (!r)
    return;
  if (r->lib >= 0)
    close_polled(d, r->lib); /* the library sees the end, and closes its side */
  SSL_free(r->ssl);
  free(r->in);
  free(r->out);
  free(r);
}

/* Closes a connection held here and frees its place.  Its memory goes
 * once the events at hand are seen: another of them may name it (a
 * relay's two sockets). */
static void drop(struct tw_door *d, struct held *h) {
  struct held_list *l = list_of(d, h);
  if (l)
    list_del(l, h);
  relay_free(d, h->r);
  h->r = NULL;
  close_polled(d, h->fd);
  release(d, (struct sockaddr *)&h->sa);
  h->dead = true;
  h->next = d->dead;
  d->dead = h;
}

static void bury(struct tw_door *d) {
  while (d->dead) {
    struct held *h = d->dead;
    d->dead = h->next;
    free(h);
  }
}

/* Shuts a connection for writing and lingers: what the client still
 * sends is read and thrown away for a second, then it is closed. */
static void linger(struct tw_door *d, struct held *h) {
  shutdown(h->fd, SHUT_WR);
  if (h->r) {
    relay_free(d, h->r);
    h->r = NULL;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.ptr = &h->t_cli};
    epoll_ctl(d->ep, EPOLL_CTL_MOD, h->fd, &ev);
  }
  move(d, h, H_LINGER, LINGER_US);
}

/* Sends a whole answer on a connection without a relay and lingers. */
static void answer(struct tw_door *d, struct held *h, const char *msg,
                   size_t len) {
  (void)!send(h->fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  linger(d, h);
}

static size_t problem_msg(struct tw_door *d, const struct tw_door_problem *p,
                          char *msg, size_t cap) {
  char id[17];
  d->o.request_id(d->o.ctx, id);
  tw_log_debug("http", "request=%s refused at the door: %u %s", id, p->status,
               p->detail);
  return tw_door_answer(p, id, msg, cap);
}

static void refuse_conn(struct tw_door *d, struct held *h,
                        const struct tw_door_problem *p) {
  char msg[1024];
  size_t len = problem_msg(d, p, msg, sizeof msg);
  __atomic_add_fetch(&d->refused, 1, __ATOMIC_RELAXED);
  answer(d, h, msg, len);
}

/* ---- the relay ------------------------------------------------------------ */

static void relay_start(struct tw_door *d, struct held *h, SSL *ssl) {
  struct relay *r = tw_calloc(1, sizeof *r);
  r->ssl = ssl;
  r->lib = -1;
  /* the buffers come with the first bytes each way: a flood of idle
   * TLS connections holds a session each, not 88 KiB */
  r->in_cap = d->o.limits.max_head + 1;
  r->cli_rd = true;
  h->r = r;
}

/* The library takes the other end of a new pair: its client is h's. */
static bool relay_hand_over(struct tw_door *d, struct held *h) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
    return false;
  mark_lib_fd(d, sv[1], true);
  /* given as what it is, a local socket, the library spends no TCP
   * options on it (the client's address is the door's to count) */
  struct sockaddr_un un = {.sun_family = AF_UNIX};
  if (MHD_add_connection(d->o.mhd, sv[1], (struct sockaddr *)&un,
                         sizeof un) != MHD_YES) {
    mark_lib_fd(d, sv[1], false); /* it closed the socket */
    close(sv[0]);
    return false;
  }
  h->r->lib = sv[0];
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &h->t_lib};
  h->r->lib_mask = EPOLLIN;
  epoll_ctl(d->ep, EPOLL_CTL_ADD, sv[0], &ev);
  move(d, h, H_RELAY, 0);
  __atomic_add_fetch(&d->relayed, 1, __ATOMIC_RELAXED);
  return true;
}

/* Frames what arrived from the client: each head judged, its body passed
 * by its Content-Length.  false: h is gone. */
static bool relay_frame(struct tw_door *d, struct held *h) {
  struct relay *r = h->r;
  while (!r->stop_up) {
    if (r->body_left) {
      size_t take = r->in_len - r->ok;
      if (take > r->body_left)
        take = (size_t)r->body_left;
      r->ok += take;
      r->body_left -= take;
      if (r->body_left)
        return true;
      continue;
    }
    if (r->ok == r->in_len)
      return true;
    struct tw_door_problem p;
    switch (tw_door_judge(r->in + r->ok, r->in_len - r->ok, &d->o.limits,
                          &p)) {
    case TW_DOOR_MORE:
      return true;
    case TW_DOOR_REFUSE:
      /* the answers owed to what was passed come first: the library's
       * side is shut once they are, and the problem written after its
       * last answer */
      r->problem_len = problem_msg(d, &p, r->problem, sizeof r->problem);
      __atomic_add_fetch(&d->refused, 1, __ATOMIC_RELAXED);
      r->stop_up = true;
      r->in_len = r->ok;
      if (r->lib < 0)
        r->lib_done = true; /* it never had it */
      return true;
    case TW_DOOR_PASS:
      break;
    }
    if (r->lib < 0 && !r->lib_done && !relay_hand_over(d, h)) {
      drop(d, h);
      return false;
    }
    r->ok += p.head_len;
    r->body_left = p.body_len;
    if (p.unframed) {
      /* the server answers it from the head alone and closes */
      r->stop_up = true;
      r->in_len = r->ok;
    }
  }
  return true;
}

/* A plain socket call's result: > 0 bytes (0 the end, reading), -1
 * nothing now, -2 an error. */
static ssize_t sock_result(ssize_t k) {
  if (k >= 0)
    return k;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
}

/* An SSL_read or SSL_write's result in the same terms, r->want_* set for
 * what the session waits on. */
static ssize_t tls_result(struct relay *r, int k) {
  if (k > 0)
    return k;
  switch (SSL_get_error(r->ssl, k)) {
  case SSL_ERROR_WANT_READ:
    r->want_in = true;
    return -1;
  case SSL_ERROR_WANT_WRITE:
    r->want_out = true;
    return -1;
  case SSL_ERROR_ZERO_RETURN:
    return 0;
  default:
    ERR_clear_error();
    return -2;
  }
}

/* Reads from the client: > 0 bytes, 0 its end, -1 nothing now, -2 an
 * error (r->want_* set for TLS). */
static ssize_t cli_read(struct held *h, char *buf, size_t cap) {
  struct relay *r = h->r;
  if (!r->ssl)
    return sock_result(recv(h->fd, buf, cap, MSG_DONTWAIT));
  int n = cap > INT32_MAX ? INT32_MAX : (int)cap;
  return tls_result(r, SSL_read(r->ssl, buf, n));
}

/* Writes to the client, in the same terms (a TLS session closed while
 * writing is an error, never "0 written"). */
static ssize_t cli_write(struct held *h, const char *buf, size_t len) {
  struct relay *r = h->r;
  if (!r->ssl)
    return sock_result(send(h->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT));
  int n = len > INT32_MAX ? INT32_MAX : (int)len;
  ssize_t k = tls_result(r, SSL_write(r->ssl, buf, n));
  return k == 0 ? -2 : k;
}


static void set_mask(struct tw_door *d, int fd, struct tag *t, uint32_t *have,
                     uint32_t want) {
  if (*have == want)
    return;
  struct epoll_event ev = {.events = want, .data.ptr = t};
  epoll_ctl(d->ep, EPOLL_CTL_MOD, fd, &ev);
  *have = want;
}

/* Moves every byte that can move, both ways; then asks epoll for what it
 * waits on.  The end: once the library is done and its answers (and a
 * problem of the door's, if any) are written, the connection lingers. */
static void relay_pump(struct tw_door *d, struct held *h) {
  struct relay *r = h->r;
  for (bool moved = true; moved;) {
    moved = false;
    r->want_in = r->want_out = false;
    if (r->ssl && !r->shaken) {
      int k = SSL_accept(r->ssl);
      if (k != 1) {
        int e = SSL_get_error(r->ssl, k);
        if (e == SSL_ERROR_WANT_READ)
          r->want_in = true;
        else if (e == SSL_ERROR_WANT_WRITE)
          r->want_out = true;
        else {
          ERR_clear_error();
          drop(d, h); /* not TLS, or no common ground: nothing to say */
          return;
        }
        break;
      }
      r->shaken = true;
    }
    /* from the client */
    if (!r->stop_up && !r->cli_eof && r->in_len < r->in_cap &&
        (r->cli_rd || r->ssl)) {
      if (!r->in)
        r->in = tw_malloc(r->in_cap);
      size_t room = r->in_cap - r->in_len;
      ssize_t k = cli_read(h, r->in + r->in_len, room);
      if (k == -2) {
        drop(d, h);
        return;
      }
      if (k < (ssize_t)room)
        r->cli_rd = false;
      if (k == 0)
        r->cli_eof = true;
      if (k >= 0)
        moved = true;
      if (k > 0) {
        r->in_len += (size_t)k;
        if (!relay_frame(d, h))
          return;
      }
    }
    /* to the library */
    if (r->lib >= 0 && r->ok) {
      ssize_t k = send(r->lib, r->in, r->ok, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        memmove(r->in, r->in + k, r->in_len - (size_t)k);
        r->in_len -= (size_t)k;
        r->ok -= (size_t)k;
        moved = true;
        if (!relay_frame(d, h)) /* room for the rest of a head */
          return;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                 errno != EINTR) {
        r->stop_up = true; /* the library closed: what it said comes */
        r->in_len = r->ok = 0;
      }
    }
    /* nothing more for the library: its side is shut for writing, so it
     * answers what it has and closes */
    if (r->lib >= 0 && !r->up_shut && !r->ok && (r->stop_up || r->cli_eof)) {
      shutdown(r->lib, SHUT_WR);
      r->up_shut = true;
    }
    /* from the library */
    if (r->out_off == r->out_len)
      r->out_off = r->out_len = 0;
    if (r->lib >= 0 && r->out_len < OUT_CAP && r->lib_rd) {
      if (!r->out)
        r->out = tw_malloc(OUT_CAP);
      size_t room = OUT_CAP - r->out_len;
      ssize_t k = recv(r->lib, r->out + r->out_len, room, MSG_DONTWAIT);
      if (k < (ssize_t)room)
        r->lib_rd = false;
      if (k > 0) {
        r->out_len += (size_t)k;
        moved = true;
      } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                            errno != EINTR)) {
        close_polled(d, r->lib);
        r->lib = -1;
        r->lib_done = true;
        r->stop_up = true;
        r->in_len = r->ok = 0;
        moved = true;
        if (h->state != H_CLOSING)
          move(d, h, H_CLOSING, d->o.idle_us);
      }
    }
    /* the door's own answer, after the library's last */
    if (r->lib_done && r->out_off == r->out_len && r->problem_len) {
      if (!r->out)
        r->out = tw_malloc(OUT_CAP);
      memcpy(r->out, r->problem, r->problem_len);
      r->out_off = 0;
      r->out_len = r->problem_len;
      r->problem_len = 0;
    }
    /* to the client */
    if (r->out_off < r->out_len && (!r->ssl || r->shaken)) {
      ssize_t k = cli_write(h, r->out + r->out_off, r->out_len - r->out_off);
      if (k == -2) {
        drop(d, h);
        return;
      }
      if (k > 0) {
        r->out_off += (size_t)k;
        moved = true;
      }
    }
  }
  if (r->lib_done && r->out_off == r->out_len && !r->problem_len) {
    if (r->ssl && r->shaken)
      SSL_shutdown(r->ssl); /* close_notify, if it fits now */
    linger(d, h);
    return;
  }
  if (h->state == H_WAIT && r->lib_done)
    move(d, h, H_CLOSING, LINGER_US); /* refused before the library */
  if (h->state == H_WAIT && r->cli_eof) {
    drop(d, h); /* the rest of the head can never come */
    return;
  }
  uint32_t cm = 0, lm = 0;
  if (r->want_in ||
      (!r->want_out && !r->stop_up && !r->cli_eof && r->in_len < r->in_cap))
    cm |= EPOLLIN;
  if (r->want_out || (r->out_off < r->out_len && (!r->ssl || r->shaken)))
    cm |= EPOLLOUT;
  set_mask(d, h->fd, &h->t_cli, &r->cli_mask, cm);
  if (r->lib >= 0) {
    if (r->ok)
      lm |= EPOLLOUT;
    if (r->out_len < OUT_CAP)
      lm |= EPOLLIN;
    set_mask(d, r->lib, &h->t_lib, &r->lib_mask, lm);
  }
}

/* ---- the events ------------------------------------------------------------ */

/* New bytes on a waiting plain connection: judge what arrived so far. */
static void on_bytes(struct tw_door *d, struct held *h, bool hup) {
  ssize_t k = recv(h->fd, d->scratch, d->scratch_cap, MSG_PEEK | MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (k <= 0) {
    drop(d, h); /* gone before a head */
    return;
  }
  struct tw_door_problem p;
  switch (tw_door_judge(d->scratch, (size_t)k, &d->o.limits, &p)) {
  case TW_DOOR_MORE:
    if (hup)
      drop(d, h); /* the rest of the head can never come */
    return;
  case TW_DOOR_REFUSE:
    refuse_conn(d, h, &p);
    return;
  case TW_DOOR_PASS:
    break;
  }
  if (d->o.relay) {
    /* the relay reads the head again, and every later one */
    relay_start(d, h, NULL);
    h->r->cli_mask = EPOLLIN | EPOLLRDHUP | EPOLLET; /* as added */
    relay_pump(d, h);
    return;
  }
  list_del(&d->waiting, h);
  epoll_ctl(d->ep, EPOLL_CTL_DEL, h->fd, NULL);
  /* the library takes the socket, the head unread; its limits are ours
   * (counted here until it says the connection closed) */
  if (MHD_add_connection(d->o.mhd, h->fd, (struct sockaddr *)&h->sa,
                         h->salen) != MHD_YES)
    release(d, (struct sockaddr *)&h->sa); /* it closed the socket */
  free(h);
}

static void on_linger(struct tw_door *d, struct held *h) {
  for (;;) {
    ssize_t k = recv(h->fd, d->scratch, d->scratch_cap, MSG_DONTWAIT);
    if (k > 0)
      continue;
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
      drop(d, h);
    return;
  }
}

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
      close(fd); /* over a limit: closed at once, as the library would */
      continue;
    }
    struct held *h = tw_calloc(1, sizeof *h);
    h->fd = fd;
    h->sa = sa;
    h->salen = sl;
    h->t_cli = (struct tag){'c', h};
    h->t_lib = (struct tag){'l', h};
    h->state = H_WAIT;
    h->deadline_us = tw_mono_us() + d->o.head_us;
    list_add(&d->waiting, h);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.ptr = &h->t_cli};
    if (d->o.tls) {
      SSL *ssl = SSL_new(d->o.tls);
      if (!ssl || !SSL_set_fd(ssl, fd)) {
        SSL_free(ssl);
        drop(d, h);
        continue;
      }
      relay_start(d, h, ssl);
      ev.events = EPOLLIN;
      h->r->cli_mask = EPOLLIN;
    }
    if (epoll_ctl(d->ep, EPOLL_CTL_ADD, fd, &ev))
      drop(d, h);
  }
}

/* The head's deadline passed at the door: a 408 problem, as the library's
 * connections get from the deadline thread (api/server.c). */
static void cut(struct tw_door *d, struct held *h) {
  struct tw_door_problem p = {.status = 408, .type = "timeout"};
  snprintf(p.detail, sizeof p.detail,
           "the request head did not arrive within %lld s",
           (long long)(d->o.head_us / 1000000));
  char id[17], msg[1024];
  d->o.request_id(d->o.ctx, id);
  size_t len = tw_door_answer(&p, id, msg, sizeof msg);
  __atomic_add_fetch(&d->cut, 1, __ATOMIC_RELAXED);
  struct relay *r = h->r;
  if (!r) {
    answer(d, h, msg, len);
    return;
  }
  if (!r->shaken) {
    drop(d, h); /* no TLS session to say it in */
    return;
  }
  /* over TLS: said through the session, as much as fits now */
  memcpy(r->problem, msg, len);
  r->problem_len = len;
  r->stop_up = r->lib_done = true;
  move(d, h, H_CLOSING, LINGER_US);
  relay_pump(d, h);
}

static void on_event(struct tw_door *d, struct tag *t, uint32_t events) {
  struct held *h = t->h;
  if (h->dead)
    return;
  if (h->state == H_LINGER) {
    on_linger(d, h);
    return;
  }
  if (!h->r) {
    on_bytes(d, h, events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
    return;
  }
  /* a client that hung up both ways (or reset) can be told nothing */
  if (t->kind == 'c' && (events & (EPOLLHUP | EPOLLERR))) {
    drop(d, h);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (t->kind == 'c')
      h->r->cli_rd = true;
    else
      h->r->lib_rd = true;
  }
  relay_pump(d, h);
}

static void *door_main(void *arg) {
  struct tw_door *d = arg;
  /* a TLS write to a client gone is an error returned, not a signal */
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  struct epoll_event evs[64];
  for (;;) {
    int64_t now = tw_mono_us(), next = -1;
    bury(d);
    while (d->waiting.head && d->waiting.head->deadline_us <= now)
      cut(d, d->waiting.head);
    while (d->closing.head && d->closing.head->deadline_us <= now)
      drop(d, d->closing.head);
    while (d->lingering.head && d->lingering.head->deadline_us <= now)
      drop(d, d->lingering.head);
    struct held_list *lists[] = {&d->waiting, &d->closing, &d->lingering};
    for (size_t i = 0; i < 3; i++)
      if (lists[i]->head && (next < 0 || lists[i]->head->deadline_us < next))
        next = lists[i]->head->deadline_us;
    int timeout = next < 0 ? -1 : (int)((next - now + 999) / 1000);
    int n = epoll_wait(d->ep, evs, 64, timeout);
    for (int i = 0; i < n; i++) {
      struct tag *t = evs[i].data.ptr;
      if (t->kind == 'W')
        return NULL;
      if (t->kind == 'L') {
        on_accept(d);
        continue;
      }
      on_event(d, t, evs[i].events);
    }
    bury(d);
  }
}

enum tw_rc tw_door_start(const struct tw_door_opts *o, struct tw_door **out,
                         struct tw_err *err) {
  struct tw_door *d = tw_calloc(1, sizeof *d);
  d->o = *o;
  if (d->o.idle_us <= 0)
    d->o.idle_us = 60 * 1000000LL;
  d->tag_listen = (struct tag){'L', NULL};
  d->tag_wake = (struct tag){'W', NULL};
  d->ep = epoll_create1(EPOLL_CLOEXEC);
  d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  /* one peek holds the largest head we judge, and one byte more */
  d->scratch_cap = o->limits.max_head + 1;
  d->scratch = tw_malloc(d->scratch_cap);
  pthread_mutex_init(&d->mu, NULL);
  int fl = fcntl(o->listen_fd, F_GETFL);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &d->tag_listen};
  struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &d->tag_wake};
  if (d->ep < 0 || d->wake < 0 || fl < 0 ||
      fcntl(o->listen_fd, F_SETFL, fl | O_NONBLOCK) ||
      epoll_ctl(d->ep, EPOLL_CTL_ADD, o->listen_fd, &lev) ||
      epoll_ctl(d->ep, EPOLL_CTL_ADD, d->wake, &wev)) {
    int e = errno;
    tw_door_free(d);
    return tw_err_set(err, TW_E_IO, "api: the front door: %s", strerror(e));
  }
  /* *out is set before the thread runs: the library's notifications for
   * the connections it hands over read it */
  *out = d;
  if (pthread_create(&d->thread, NULL, door_main, d)) {
    *out = NULL;
    tw_door_free(d);
    return tw_err_set(err, TW_E_IO, "api: cannot start the front door thread");
  }
  d->running = true;
  return TW_OK;
}

void tw_door_quiesce(struct tw_door *d) {
  /* the listening socket stops: accept fails and the thread drops it */
  if (d)
    shutdown(d->o.listen_fd, SHUT_RDWR);
}

static void drop_all(struct tw_door *d, struct held_list *l) {
  while (l->head)
    drop(d, l->head);
}

void tw_door_stop(struct tw_door *d) {
  if (!d || !d->running)
    return;
  uint64_t one = 1;
  (void)!write(d->wake, &one, sizeof one);
  pthread_join(d->thread, NULL);
  d->running = false;
  drop_all(d, &d->waiting);
  drop_all(d, &d->closing);
  drop_all(d, &d->lingering);
  drop_all(d, &d->relaying);
  bury(d);
}

void tw_door_free(struct tw_door *d) {
  if (!d)
    return;
  tw_door_stop(d);
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
  free(d->lib_fds);
  free(d->scratch);
  free(d);
}

uint64_t tw_door_refused(const struct tw_door *d) {
  return d ? __atomic_load_n(&d->refused, __ATOMIC_RELAXED) : 0;
}

uint64_t tw_door_cut(const struct tw_door *d) {
  return d ? __atomic_load_n(&d->cut, __ATOMIC_RELAXED) : 0;
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
