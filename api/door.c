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
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

/* A connection held here: waiting for its head, or answered and
 * lingering (reading what the client still sends, so that closing does
 * not reset the answer away).  Both lists are in order of their
 * deadlines, which all have the same length. */
struct held {
  struct held *prev, *next;
  int fd;
  bool lingering;
  int64_t deadline_us;
  struct sockaddr_storage sa;
  socklen_t salen;
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

struct tw_door {
  struct tw_door_opts o;
  int ep, wake;
  pthread_t thread;
  bool running;
  /* the epoll tags of the listening socket and of the wake-up */
  char tag_listen, tag_wake;
  struct held_list waiting, lingering; /* this thread only */
  char *scratch;                       /* this thread only */
  size_t scratch_cap;
  pthread_mutex_t mu;
  unsigned count; /* under mu: held here, or by the library */
  struct addr_count *addrs[ADDR_BUCKETS]; /* under mu */
  uint64_t refused, cut;                  /* atomic */
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

void tw_door_release(struct tw_door *d, const struct sockaddr *sa) {
  if (!d || !sa)
    return;
  uint8_t key[16];
  addr_key(sa, key);
  size_t b = addr_bucket(key);
  pthread_mutex_lock(&d->mu);
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
  pthread_mutex_unlock(&d->mu);
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

/* Closes a connection held here and frees its place. */
static void drop(struct tw_door *d, struct held *h) {
  list_del(h->lingering ? &d->lingering : &d->waiting, h);
  close(h->fd); /* leaves the epoll set with it */
  tw_door_release(d, (struct sockaddr *)&h->sa);
  free(h);
}

/* Sends a whole answer and lingers. */
static void answer(struct tw_door *d, struct held *h, const char *msg,
                   size_t len) {
  (void)!send(h->fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(h->fd, SHUT_WR);
  list_del(&d->waiting, h);
  h->lingering = true;
  h->deadline_us = tw_mono_us() + LINGER_US;
  list_add(&d->lingering, h);
}

static void refuse_conn(struct tw_door *d, struct held *h,
                        const struct tw_door_problem *p) {
  char id[17], msg[1024];
  d->o.request_id(d->o.ctx, id);
  size_t len = tw_door_answer(p, id, msg, sizeof msg);
  tw_log_debug("http", "request=%s refused at the door: %u %s", id, p->status,
               p->detail);
  __atomic_add_fetch(&d->refused, 1, __ATOMIC_RELAXED);
  answer(d, h, msg, len);
}

/* New bytes on a waiting connection: judge what arrived so far. */
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
  list_del(&d->waiting, h);
  epoll_ctl(d->ep, EPOLL_CTL_DEL, h->fd, NULL);
  /* the library takes the socket, the head unread; its limits are ours
   * (counted here until it says the connection closed) */
  if (MHD_add_connection(d->o.mhd, h->fd, (struct sockaddr *)&h->sa,
                         h->salen) != MHD_YES)
    tw_door_release(d, (struct sockaddr *)&h->sa); /* it closed the socket */
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
    h->deadline_us = tw_mono_us() + d->o.head_us;
    list_add(&d->waiting, h);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.ptr = h};
    if (epoll_ctl(d->ep, EPOLL_CTL_ADD, fd, &ev))
      drop(d, h);
  }
}

/* The head's deadline passed: a 408 problem, as the library's connections
 * get from the deadline thread (api/server.c). */
static void cut(struct tw_door *d, struct held *h) {
  struct tw_door_problem p = {.status = 408, .type = "timeout"};
  snprintf(p.detail, sizeof p.detail,
           "the request head did not arrive within %lld s",
           (long long)(d->o.head_us / 1000000));
  char id[17], msg[1024];
  d->o.request_id(d->o.ctx, id);
  size_t len = tw_door_answer(&p, id, msg, sizeof msg);
  __atomic_add_fetch(&d->cut, 1, __ATOMIC_RELAXED);
  answer(d, h, msg, len);
}

static void *door_main(void *arg) {
  struct tw_door *d = arg;
  struct epoll_event evs[64];
  for (;;) {
    int64_t now = tw_mono_us(), next = -1;
    while (d->waiting.head && d->waiting.head->deadline_us <= now)
      cut(d, d->waiting.head);
    while (d->lingering.head && d->lingering.head->deadline_us <= now)
      drop(d, d->lingering.head);
    if (d->waiting.head)
      next = d->waiting.head->deadline_us;
    if (d->lingering.head &&
        (next < 0 || d->lingering.head->deadline_us < next))
      next = d->lingering.head->deadline_us;
    int timeout = next < 0 ? -1 : (int)((next - now + 999) / 1000);
    int n = epoll_wait(d->ep, evs, 64, timeout);
    for (int i = 0; i < n; i++) {
      void *tag = evs[i].data.ptr;
      if (tag == &d->tag_wake)
        return NULL;
      if (tag == &d->tag_listen) {
        on_accept(d);
        continue;
      }
      struct held *h = tag;
      if (h->lingering)
        on_linger(d, h);
      else
        on_bytes(d, h, evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
    }
  }
}

enum tw_rc tw_door_start(const struct tw_door_opts *o, struct tw_door **out,
                         struct tw_err *err) {
  struct tw_door *d = tw_calloc(1, sizeof *d);
  d->o = *o;
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

void tw_door_stop(struct tw_door *d) {
  if (!d || !d->running)
    return;
  uint64_t one = 1;
  (void)!write(d->wake, &one, sizeof one);
  pthread_join(d->thread, NULL);
  d->running = false;
  while (d->waiting.head)
    drop(d, d->waiting.head);
  while (d->lingering.head)
    drop(d, d->lingering.head);
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
  free(d->scratch);
  free(d);
}

uint64_t tw_door_refused(const struct tw_door *d) {
  return d ? __atomic_load_n(&d->refused, __ATOMIC_RELAXED) : 0;
}

uint64_t tw_door_cut(const struct tw_door *d) {
  return d ? __atomic_load_n(&d->cut, __ATOMIC_RELAXED) : 0;
}
