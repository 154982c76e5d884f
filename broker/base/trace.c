#define _GNU_SOURCE /* pthread_setname_np */
#include "broker/base/trace.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "broker/base/hex.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"

/* ---- W3C Trace Context ------------------------------------------------- */

/* upper case is invalid (W3C trace-context 3.2.2) */
static int hexval(char c) {
  return c >= 'A' && c <= 'F' ? -1 : tw_hexval((unsigned char)c);
}

static bool unhex(const char *s, uint8_t *out, size_t n) {
  if (!tw_unhex(s, n, out, true))
    return false;
  bool nonzero = false;
  for (size_t i = 0; i < n; i++)
    nonzero |= out[i] != 0;
  return nonzero;
}

bool tw_traceparent_parse(const char *s, struct tw_trace_ctx *out) {
  memset(out, 0, sizeof *out);
  if (!s)
    return false;
  size_t len = strlen(s);
  if (len < TW_TRACEPARENT_LEN)
    return false;
  if (hexval(s[0]) < 0 || hexval(s[1]) < 0 || (s[0] == 'f' && s[1] == 'f'))
    return false; /* version: two lower-case hex digits, never ff */
  if (s[2] != '-' || s[35] != '-' || s[52] != '-')
    return false;
  /* version 00 is exactly 55 bytes; a later one may carry more after '-' */
  bool v00 = s[0] == '0' && s[1] == '0';
  if (v00 ? len != 55 : (len > 55 && s[55] != '-'))
    return false;
  uint8_t flags = 0;
  if (!unhex(s + 3, out->trace_id, 16) || !unhex(s + 36, out->span_id, 8))
    return false;
  if (hexval(s[53]) < 0 || hexval(s[54]) < 0)
    return false;
  flags = (uint8_t)(hexval(s[53]) << 4 | hexval(s[54]));
  out->flags = flags;
  out->valid = true;
  return true;
}

void tw_trace_hex(const uint8_t *b, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
}

void tw_traceparent_fmt(const struct tw_trace_ctx *c, char *out, size_t cap) {
  /* written in place (one per traced submission): no printf */
  char b[TW_TRACEPARENT_LEN + 1];
  memcpy(b, "00-", 3);
  tw_trace_hex(c->trace_id, 16, b + 3);
  b[35] = '-';
  tw_trace_hex(c->span_id, 8, b + 36);
  b[52] = '-';
  tw_trace_hex(&c->flags, 1, b + 53);
  if (!cap)
    return;
  size_t n = cap - 1 < TW_TRACEPARENT_LEN ? cap - 1 : TW_TRACEPARENT_LEN;
  memcpy(out, b, n);
  out[n] = '\0';
}

/* ---- the tracer --------------------------------------------------------- */

void tw_trace_url_redact(char *url) {
  char *host = strstr(url, "://");
  if (!host)
    return;
  host += 3;
  char *end = host + strcspn(host, "/?#");
  char *at = NULL;
  for (char *p = host; p < end; p++)
    if (*p == '@')
      at = p;
  if (!at)
    return;
  memmove(host + 4, at + 1, strlen(at + 1) + 1);
  memcpy(host, "***@", 4);
}

#define WHOLE_MAX 64 /* whole spans kept for tw_span_alloc() */

/* A bounded ring of pointers many threads push to and pop from without a
 * lock (D. Vyukov's bounded MPMC queue): each cell's sequence number says
 * whether it is free for the push of a position or full for its pop, and a
 * thread claims a position with one compare-and-swap.  64 request threads
 * on two cores took the tracer's one mutex four times per request before,
 * and a holder preempted mid-copy put the others to sleep. */
struct ring_cell {
  size_t seq; /* atomic */
  void *p;
};
struct ring {
  struct ring_cell *cells;
  size_t mask; /* capacity - 1, a power of two */
  /* the pushers' and the poppers' ends each on a cache line of its own,
   * apart from the fields every push and pop only reads */
  _Alignas(64) size_t tail; /* atomic: next push */
  _Alignas(64) size_t head; /* atomic: next pop */
  char pad[64 - sizeof(size_t)];
};

static void ring_init(struct ring *r, size_t want) {
  size_t cap = 2;
  while (cap < want)
    cap *= 2;
  r->cells = tw_calloc(cap, sizeof *r->cells);
  r->mask = cap - 1;
  for (size_t i = 0; i < cap; i++)
    r->cells[i].seq = i;
  r->head = r->tail = 0;
}

static bool ring_push(struct ring *r, void *p) {
  size_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
  struct ring_cell *c;
  for (;;) {
    c = &r->cells[pos & r->mask];
    size_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
    intptr_t dif = (intptr_t)seq - (intptr_t)pos;
    if (dif == 0) {
      if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        break;
    } else if (dif < 0) {
      return false; /* full */
    } else {
      pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    }
  }
  c->p = p;
  __atomic_store_n(&c->seq, pos + 1, __ATOMIC_RELEASE);
  return true;
}

static void *ring_pop(struct ring *r) {
  size_t pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
  struct ring_cell *c;
  for (;;) {
    c = &r->cells[pos & r->mask];
    size_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
    intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);
    if (dif == 0) {
      if (__atomic_compare_exchange_n(&r->head, &pos, pos + 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        break;
    } else if (dif < 0) {
      return NULL; /* empty */
    } else {
      pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
    }
  }
  void *p = c->p;
  __atomic_store_n(&c->seq, pos + r->mask + 1, __ATOMIC_RELEASE);
  return p;
}

struct tw_tracer {
  char *url;
  char *url_log; /* url without user:password@, for the log */
  char *service;
  char **headers; /* NULL-terminated */
  long (*send)(void *, const char *, const char *const *, const char *,
               size_t);
  void *send_ctx;
  size_t queue_max, batch_max;
  int64_t flush_ms;
  int max_attempts;
  uint64_t threshold; /* atomic: sampled when id's low 56 bits < it */
  /* Every field that many threads change has a cache line of its own: on
   * two cores, a line two counters shared went back and forth between
   * them at every span. */
  /* Spans ending push their pieces to q without a lock: n (atomic) counts
   * the places taken, at most queue_max, reserved before the push; the
   * push that makes n reach batch_max wakes the exporter (under mu, so the
   * wake-up cannot fall between its test and its wait).  mu and cv are
   * the exporter's, idle tw_tracer_free()'s. */
  struct ring q;
  _Alignas(64) size_t n;
  _Alignas(64) pthread_mutex_t mu;
  pthread_cond_t cv, idle;
  bool stopping; /* atomic */
  bool busy;     /* under mu */
  pthread_t thread;
  /* recorded = taken + n + dropped_full: the spans that ended, counted
   * without a counter of their own on the path of every span */
  uint64_t taken;        /* atomic: popped from q (the exporter, the free) */
  uint64_t dropped_full; /* atomic: never queued (full, stopping, no memory) */
  uint64_t exported, dropped, failures; /* atomic */
  /* Blocks for the queued pieces of small spans (struct piece, below):
   * the exporter hands them back to this ring after their batch, and the
   * next tw_span_end() reuses one, so a traced request allocates nothing
   * once the daemon is warm.  As many kept as the queue holds. */
  struct ring pool;
  /* whole spans for tw_span_alloc(): at most WHOLE_MAX kept */
  struct ring whole;
};

/* A queued span is its OTLP JSON, written by tw_span_end() on the thread
 * that ended it, while the span's bytes are still in that core's cache:
 * the exporter thread only joins the pieces.  It copied the span instead
 * (19 cache lines for a request's) and encoded the copy on its own core,
 * where every line of it was a miss: 1.3 us per traced submission of the
 * exporter's 2.3 in perf, against about 0.3 us to encode the same spans
 * where they were made.  Pieces that fit a pool block (a request's span,
 * an admission's) are blocks of one size, POOL_BLOCK, handed back to the
 * pool after their batch; larger ones are allocated to their size. */
struct piece {
  uint32_t len;  /* bytes of json */
  bool pooled;   /* a POOL_BLOCK of the pool */
  char json[];   /* one span's object, not terminated */
};
#define POOL_BLOCK 2048
#define PIECE_ROOM (POOL_BLOCK - offsetof(struct piece, json))

static uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static int64_t now_ns(void);

/* Ids come from a stream of the thread's own, splitmix64 of a random base
 * (getrandom() once per thread) and a counter: distinct within a thread,
 * random across threads, and no write to memory another thread shares
 * (the tracer's atomic counter was a cache line the two cores passed back
 * and forth at every span). */
static _Thread_local struct {
  uint64_t base, n;
} ids;

/* k ids in a row (a new trace needs three): the first one's number */
static uint64_t take_ids(uint64_t k) {
  if (!ids.base) {
    uint64_t b = 0;
    if (getrandom(&b, sizeof b, 0) != sizeof b)
      b = (uint64_t)now_ns() ^ (uint64_t)(uintptr_t)&ids;
    ids.base = b | 1;
  }
  uint64_t n = ids.n + 1;
  ids.n += k;
  return n;
}

static uint64_t id_at(uint64_t n) {
  uint64_t v = mix(ids.base + n * 0x9e3779b97f4a7c15ULL);
  return v ? v : 1;
}

static void put64(uint8_t *b, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t threshold_of(double sampling) {
  if (!(sampling > 0))
    return 0;
  if (sampling >= 1)
    return UINT64_MAX;
  return (uint64_t)(sampling * (double)(1ULL << 56));
}

void tw_tracer_set_sampling(struct tw_tracer *t, double sampling) {
  if (t)
    __atomic_store_n(&t->threshold, threshold_of(sampling), __ATOMIC_RELAXED);
}

static bool sampled(struct tw_tracer *t, const uint8_t trace_id[16]) {
  uint64_t th = __atomic_load_n(&t->threshold, __ATOMIC_RELAXED);
  if (th == UINT64_MAX)
    return true;
  uint64_t low = 0; /* the random low 56 bits of the id (W3C level 2) */
  for (int i = 9; i < 16; i++)
    low = low << 8 | trace_id[i];
  return low < th;
}

bool tw_tracer_new_ctx(struct tw_tracer *t, struct tw_trace_ctx *out) {
  memset(out, 0, sizeof *out);
  if (!t)
    return false;
  uint64_t n = take_ids(3);
  put64(out->trace_id, id_at(n));
  put64(out->trace_id + 8, id_at(n + 1));
  put64(out->span_id, id_at(n + 2));
  out->flags = sampled(t, out->trace_id) ? 1 : 0;
  out->valid = true;
  return true;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct tw_span *tw_span_alloc(struct tw_tracer *t) {
  struct tw_span *sp = t ? ring_pop(&t->whole) : NULL;
  return sp ? sp : tw_malloc(sizeof *sp);
}

void tw_span_release(struct tw_tracer *t, struct tw_span *sp) {
  if (sp && !(t && ring_push(&t->whole, sp)))
    free(sp);
}

/* src into dst of cap bytes, cut as snprintf cuts it ("%s"), without
 * printf's format parsing: a span's name, keys and values are copied a
 * dozen times per traced request. */
static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

void tw_span_start(struct tw_tracer *t, struct tw_span *sp, const char *name,
                   enum tw_span_kind kind, const struct tw_trace_ctx *parent) {
  sp->t = t;
  sp->recording = false;
  sp->n_attrs = 0;
  sp->status = 0;
  sp->status_msg[0] = '\0';
  sp->has_parent = false;
  memset(&sp->ctx, 0, sizeof sp->ctx);
  if (!t)
    return;
  bool child = parent && parent->valid;
  uint64_t n = take_ids(child ? 1 : 3);
  if (child) {
    memcpy(sp->ctx.trace_id, parent->trace_id, 16);
    memcpy(sp->parent, parent->span_id, 8);
    sp->has_parent = true;
    sp->ctx.flags = parent->flags;
  } else {
    put64(sp->ctx.trace_id, id_at(n++));
    put64(sp->ctx.trace_id + 8, id_at(n++));
    sp->ctx.flags = sampled(t, sp->ctx.trace_id) ? 1 : 0;
  }
  put64(sp->ctx.span_id, id_at(n));
  sp->ctx.valid = true;
  if (!(sp->ctx.flags & 1))
    return; /* the context propagates, nothing is recorded */
  sp->recording = true;
  copy_str(sp->name, sizeof sp->name, name);
  sp->kind = kind;
  sp->start_ns = now_ns(); /* counted when it ends (tw_tracer_stats) */
}

/* The attribute named key: the one of that name (compared by length
 * first: a request's keys all differ in length, and a strcmp per earlier
 * key was 0.4 us of a traced submission), else a new one. */
static struct tw_span_attr *attr_slot(struct tw_span *sp, const char *key) {
  if (!sp || !sp->recording)
    return NULL;
  size_t kl = strnlen(key, TW_SPAN_KEY_MAX - 1);
  for (int i = 0; i < sp->n_attrs; i++)
    if (sp->attrs[i].klen == kl && !memcmp(sp->attrs[i].key, key, kl))
      return &sp->attrs[i];
  if (sp->n_attrs >= TW_SPAN_MAX_ATTRS)
    return NULL;
  struct tw_span_attr *a = &sp->attrs[sp->n_attrs++];
  memcpy(a->key, key, kl);
  a->key[kl] = '\0';
  a->klen = (uint8_t)kl;
  return a;
}

void tw_span_attr_str(struct tw_span *sp, const char *key, const char *v) {
  struct tw_span_attr *a = attr_slot(sp, key);
  if (a) {
    a->type = TW_ATTR_STR;
    copy_str(a->s, sizeof a->s, v ? v : "");
  }
}
void tw_span_attr_int(struct tw_span *sp, const char *key, int64_t v) {
  struct tw_span_attr *a = attr_slot(sp, key);
  if (a) {
    a->type = TW_ATTR_INT;
    a->i = v;
  }
}
void tw_span_attr_bool(struct tw_span *sp, const char *key, bool v) {
  struct tw_span_attr *a = attr_slot(sp, key);
  if (a) {
    a->type = TW_ATTR_BOOL;
    a->i = v;
  }
}
void tw_span_attr_double(struct tw_span *sp, const char *key, double v) {
  struct tw_span_attr *a = attr_slot(sp, key);
  if (a) {
    a->type = TW_ATTR_DOUBLE;
    a->d = v;
  }
}

void tw_span_error(struct tw_span *sp, const char *fmt, ...) {
  if (!sp || !sp->recording)
    return;
  sp->status = 2;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sp->status_msg, sizeof sp->status_msg, fmt, ap);
  va_end(ap);
}

void tw_span_ok(struct tw_span *sp) {
  if (sp && sp->recording && sp->status != 2)
    sp->status = 1;
}

void tw_span_discard(struct tw_span *sp) {
  if (sp)
    sp->recording = false; /* counted only when it ends */
}

static size_t span_bound(const struct tw_span *sp);
static char *span_json(char *o, const struct tw_span *sp);

void tw_span_end(struct tw_span *sp) {
  if (!sp || !sp->recording)
    return;
  sp->recording = false;
  sp->end_ns = now_ns();
  struct tw_tracer *t = sp->t;
  /* a place in the queue first: a full queue drops without encoding */
  size_t n = __atomic_fetch_add(&t->n, 1, __ATOMIC_ACQ_REL);
  if (n >= t->queue_max || __atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE)) {
    __atomic_sub_fetch(&t->n, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->dropped_full, 1, __ATOMIC_RELEASE);
    return;
  }
  size_t bound = span_bound(sp);
  bool small = bound <= PIECE_ROOM;
  struct piece *c = small ? ring_pop(&t->pool) : NULL; /* a used block */
  if (!c)
    c = malloc(small ? POOL_BLOCK : offsetof(struct piece, json) + bound);
  if (!c) {
    __atomic_sub_fetch(&t->n, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->dropped_full, 1, __ATOMIC_RELEASE);
    return;
  }
  c->pooled = small;
  c->len = (uint32_t)(span_json(c->json, sp) - c->json); /* outside any lock */
  if (!ring_push(&t->q, c)) { /* cannot be full: its place was reserved */
    free(c);
    __atomic_sub_fetch(&t->n, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->dropped_full, 1, __ATOMIC_RELEASE);
    return;
  }
  if (n + 1 == t->batch_max) { /* a batch waits: once per batch */
    pthread_mutex_lock(&t->mu);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
  }
}

/* ---- OTLP JSON ----------------------------------------------------------
 *
 * Written by hand into the buffer: the exporter's only work per span, and
 * a tree of jansson objects per span cost several times more. */

/* Bytes in a valid UTF-8 sequence at p (1 to 4, of at most left), 0 when
 * it is not one. */
static size_t utf8_len(const unsigned char *p, size_t left) {
  size_t n = *p >= 0xf0 && *p <= 0xf4   ? 4
             : *p >= 0xe0 && *p <= 0xef ? 3
             : *p >= 0xc2 && *p < 0xe0  ? 2
                                        : 0;
  if (n > left)
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  if ((n == 3 && *p == 0xe0 && p[1] < 0xa0) ||  /* overlong */
      (n == 3 && *p == 0xed && p[1] >= 0xa0) || /* surrogates */
      (n == 4 && *p == 0xf0 && p[1] < 0x90) ||
      (n == 4 && *p == 0xf4 && p[1] >= 0x90))
    return 0;
  return n;
}

/* The encoder writes through a cursor into room reserved beforehand (a
 * bound per span, span_bound()): no bounds check, no call and no NUL per
 * piece.  A span's strings live in fixed arrays, and one input byte
 * becomes at most six output bytes ("\u00XX", "\ufffd"), so the bound is
 * known from their lengths before the first byte is written. */
#define LIT(o, s) (memcpy((o), (s), sizeof(s) - 1), (o) + sizeof(s) - 1)

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* Whether any of the 8 bytes of x needs more than a copy: below 0x20,
 * '"', '\\', 0x7f or above (the bytes of the test for a zero byte, after
 * an XOR with the one looked for). */
static bool needs_escape(uint64_t x) {
  uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\'), d = x ^ (ONES * 0x7f);
  uint64_t hit = ((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) |
                 ((b - ONES) & ~b) | ((d - ONES) & ~d) | x;
  return (hit & HIGHS) != 0;
}

/* s (n bytes) as a JSON string; bytes that are not UTF-8 (a path, a
 * header) become U+FFFD, so one odd value never makes a collector refuse
 * the batch.  Eight plain bytes at a time: most values are ASCII. */
static char *jstr(char *o, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  *o++ = '"';
  while (p < end) {
    uint64_t x;
    if (end - p >= 8 && (memcpy(&x, p, 8), !needs_escape(x))) {
      memcpy(o, p, 8);
      o += 8;
      p += 8;
      continue;
    }
    unsigned char c = *p;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      *o++ = (char)c;
      p++;
      continue;
    }
    if (c >= 0x80) {
      size_t k = utf8_len(p, (size_t)(end - p));
      if (k) {
        memcpy(o, p, k);
        o += k;
        p += k;
      } else {
        o = LIT(o, "\\ufffd");
        p++;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = (char)c;
    } else {
      o = LIT(o, "\\u00");
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    }
    p++;
  }
  *o++ = '"';
  return o;
}

/* The bytes of a fixed array's string (NUL-terminated within cap). */
#define SLEN(a) strnlen((a), sizeof(a) - 1)

/* v in decimal: the encoder's integers without printf's format parsing,
 * which was a third of the encoding's time. */
static char *add_i64(char *o, int64_t v) { return o + tw_i64_dec(o, v); }

static char *add_hex(char *o, const uint8_t *b, size_t n) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    *o++ = digits[b[i] >> 4];
    *o++ = digits[b[i] & 15];
  }
  return o;
}

static char *any_value(char *o, const struct tw_span_attr *a) {
  switch (a->type) {
  case TW_ATTR_INT: /* int64 as a decimal string (proto3 JSON mapping) */
    o = LIT(o, "{\"intValue\":\"");
    o = add_i64(o, a->i);
    return LIT(o, "\"}");
  case TW_ATTR_BOOL:
    return a->i ? LIT(o, "{\"boolValue\":true}")
                : LIT(o, "{\"boolValue\":false}");
  case TW_ATTR_DOUBLE:
    o = LIT(o, "{\"doubleValue\":");
    if (a->d != a->d) /* proto3 JSON: the non-finite ones are strings */
      o = LIT(o, "\"NaN\"");
    else if (a->d > 1.7976931348623157e308)
      o = LIT(o, "\"Infinity\"");
    else if (a->d < -1.7976931348623157e308)
      o = LIT(o, "\"-Infinity\"");
    else
      o += snprintf(o, 32, "%.17g", a->d); /* at most 24 characters */
    return LIT(o, "}");
  case TW_ATTR_STR:
  default:
    o = LIT(o, "{\"stringValue\":");
    o = jstr(o, a->s, SLEN(a->s));
    return LIT(o, "}");
  }
}

/* The most span_json() writes for sp: its fixed members (under 300 bytes:
 * ids, times, kind, status code, the members' names), and six bytes per
 * byte of its strings with 96 for each attribute's own names and value. */
static size_t span_bound(const struct tw_span *sp) {
  size_t n = 384 + 6 * (SLEN(sp->name) + SLEN(sp->status_msg));
  for (int i = 0; i < sp->n_attrs; i++) {
    const struct tw_span_attr *a = &sp->attrs[i];
    n += 96 + 6 * SLEN(a->key);
    if (a->type == TW_ATTR_STR)
      n += 6 * SLEN(a->s);
  }
  return n;
}

static char *span_json(char *o, const struct tw_span *sp) {
  o = LIT(o, "{\"traceId\":\"");
  o = add_hex(o, sp->ctx.trace_id, 16);
  o = LIT(o, "\",\"spanId\":\"");
  o = add_hex(o, sp->ctx.span_id, 8);
  o = LIT(o, "\",");
  if (sp->has_parent) {
    o = LIT(o, "\"parentSpanId\":\"");
    o = add_hex(o, sp->parent, 8);
    o = LIT(o, "\",");
  }
  o = LIT(o, "\"name\":");
  o = jstr(o, sp->name, SLEN(sp->name));
  o = LIT(o, ",\"kind\":");
  o = add_i64(o, (int64_t)sp->kind);
  o = LIT(o, ",\"startTimeUnixNano\":\"");
  o = add_i64(o, sp->start_ns);
  o = LIT(o, "\",\"endTimeUnixNano\":\"");
  o = add_i64(o, sp->end_ns);
  o = LIT(o, "\",\"attributes\":[");
  for (int i = 0; i < sp->n_attrs; i++) {
    if (i)
      *o++ = ',';
    o = LIT(o, "{\"key\":");
    o = jstr(o, sp->attrs[i].key, SLEN(sp->attrs[i].key));
    o = LIT(o, ",\"value\":");
    o = any_value(o, &sp->attrs[i]);
    *o++ = '}';
  }
  *o++ = ']';
  if (sp->status) {
    o = LIT(o, ",\"status\":{\"code\":");
    o = add_i64(o, sp->status);
    if (sp->status_msg[0]) {
      o = LIT(o, ",\"message\":");
      o = jstr(o, sp->status_msg, SLEN(sp->status_msg));
    }
    *o++ = '}';
  }
  *o++ = '}';
  return o;
}

/* The request's head: the resource (service.name) and the scope. */
static void encode_head(const char *service_name, struct tw_buf *out) {
  const char *svc = service_name ? service_name : "tradewindd";
  size_t sl = strlen(svc);
  tw_buf_reserve(out, 256 + 6 * sl);
  char *o = out->data + out->len;
  o = LIT(o, "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
             "{\"key\":\"service.name\",\"value\":{\"stringValue\":");
  o = jstr(o, svc, sl);
  o = LIT(o, "}},{\"key\":\"telemetry.sdk.name\",\"value\":{"
             "\"stringValue\":\"tradewind\"}}]},\"scopeSpans\":[{"
             "\"scope\":{\"name\":\"tradewind\"},\"spans\":[");
  out->len = (size_t)(o - out->data);
}

static void encode_tail(struct tw_buf *out) {
  tw_buf_reserve(out, 8);
  char *o = LIT(out->data + out->len, "]}]}]}");
  out->len = (size_t)(o - out->data);
  out->data[out->len] = '\0';
}

void tw_trace_encode(const struct tw_span *const *spans, size_t n,
                     const char *service_name, struct tw_buf *out) {
  encode_head(service_name, out);
  for (size_t i = 0; i < n; i++) {
    tw_buf_reserve(out, span_bound(spans[i]) + 1);
    char *o = out->data + out->len;
    if (i)
      *o++ = ',';
    o = span_json(o, spans[i]);
    out->len = (size_t)(o - out->data);
  }
  encode_tail(out);
}

/* ---- the exporter thread ------------------------------------------------ */

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* One batch, tried up to max_attempts times with doubling waits (cut short
 * once stopping: the last try is made, no more waiting). */
static void export_batch(struct tw_tracer *t, struct piece **b, size_t n,
                         struct tw_buf *body) {
  tw_buf_reset(body); /* the thread's own: grown once, not per export */
  encode_head(t->service, body);
  size_t len = 0;
  for (size_t i = 0; i < n; i++)
    len += b[i]->len + 1;
  tw_buf_reserve(body, len); /* the spans, encoded where they ended */
  char *o = body->data + body->len;
  for (size_t i = 0; i < n; i++) {
    if (i)
      *o++ = ',';
    memcpy(o, b[i]->json, b[i]->len);
    o += b[i]->len;
  }
  body->len = (size_t)(o - body->data);
  encode_tail(body);
  int64_t wait = 100;
  bool ok = false;
  for (int i = 0; i < t->max_attempts; i++) {
    long st = t->send(t->send_ctx, t->url, (const char *const *)t->headers,
                      body->data ? body->data : "", body->len);
    if (st >= 200 && st < 300) {
      ok = true;
      break;
    }
    __atomic_add_fetch(&t->failures, 1, __ATOMIC_RELAXED);
    /* 4xx other than 408/429 will not get better (OTLP/HTTP "failures") */
    if (st >= 400 && st < 500 && st != 408 && st != 429)
      break;
    bool stop = __atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE);
    if (stop || i + 1 == t->max_attempts)
      continue;
    sleep_ms(wait);
    wait *= 2;
  }
  /* release: whoever reads the counters (tw_tracer_stats) sees what the
   * send did before them */
  if (ok)
    __atomic_add_fetch(&t->exported, n, __ATOMIC_RELEASE);
  else {
    __atomic_add_fetch(&t->dropped, n, __ATOMIC_RELEASE);
    tw_log_warn("trace", "spans=%zu export to %s failed; dropped", n,
                t->url_log);
  }
}

static void *exporter_main(void *arg) {
  struct tw_tracer *t = arg;
  /* by name in /proc/PID/task (bench-submit reads its CPU time) */
  pthread_setname_np(pthread_self(), "tw-trace");
  struct piece **batch = tw_calloc(t->batch_max, sizeof *batch);
  struct tw_buf body; /* one body for every export of the thread */
  tw_buf_init(&body);
  pthread_mutex_lock(&t->mu);
  for (;;) {
    bool stopping = __atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&t->n, __ATOMIC_ACQUIRE) < t->batch_max && !stopping) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t ns = (int64_t)ts.tv_nsec + (t->flush_ms % 1000) * 1000000;
      ts.tv_sec += t->flush_ms / 1000 + ns / 1000000000;
      ts.tv_nsec = ns % 1000000000;
      pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    size_t k = 0;
    while (k < t->batch_max && (batch[k] = ring_pop(&t->q)))
      k++;
    if (k == 0) {
      if (stopping)
        break;
      continue;
    }
    __atomic_sub_fetch(&t->n, k, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->taken, k, __ATOMIC_RELEASE); /* after n: see stats */
    t->busy = true;
    pthread_mutex_unlock(&t->mu);
    export_batch(t, batch, k, &body);
    /* the small blocks back to the pool, as many as it keeps */
    for (size_t i = 0; i < k; i++)
      if (!batch[i]->pooled || !ring_push(&t->pool, batch[i]))
        free(batch[i]);
    pthread_mutex_lock(&t->mu);
    t->busy = false;
    pthread_cond_broadcast(&t->idle);
  }
  pthread_mutex_unlock(&t->mu);
  free(batch);
  tw_buf_release(&body);
  return NULL;
}

enum tw_rc tw_tracer_new(const struct tw_tracer_opts *o, struct tw_tracer **out,
                         struct tw_err *err) {
  *out = NULL;
  if (!o->endpoint || !*o->endpoint)
    return tw_err_field(err, TW_E_INVALID, "otel.endpoint",
                        "otel.endpoint: required when tracing is on");
  if (strncmp(o->endpoint, "http://", 7) && strncmp(o->endpoint, "https://", 8))
    return tw_err_field(err, TW_E_INVALID, "otel.endpoint",
                        "otel.endpoint: expected an http:// or https:// URL, "
                        "got \"%.80s\"",
                        o->endpoint);
  if (!o->send)
    return tw_err_set(err, TW_E_INVALID, "tracer: no send function");
  /* on its alignment, so the lines kept apart above are whole lines */
  size_t tsz = (sizeof(struct tw_tracer) + 63) / 64 * 64;
  struct tw_tracer *t = aligned_alloc(64, tsz);
  if (!t)
    abort();
  memset(t, 0, tsz);
  size_t el = strlen(o->endpoint);
  while (el && o->endpoint[el - 1] == '/')
    el--;
  const char *suffix = "/v1/traces";
  bool has = el >= 10 && !strncmp(o->endpoint + el - 10, suffix, 10);
  t->url = tw_malloc(el + 12);
  snprintf(t->url, el + 12, "%.*s%s", (int)el, o->endpoint, has ? "" : suffix);
  t->url_log = tw_strdup(t->url);
  tw_trace_url_redact(t->url_log);
  t->service = tw_strdup(o->service_name && *o->service_name ? o->service_name
                                                             : "tradewindd");
  size_t nh = 0;
  while (o->headers && o->headers[nh])
    nh++;
  t->headers = tw_calloc(nh + 1, sizeof *t->headers);
  for (size_t i = 0; i < nh; i++)
    t->headers[i] = tw_strdup(o->headers[i]);
  t->send = o->send;
  t->send_ctx = o->send_ctx;
  t->queue_max = o->queue_max ? o->queue_max : 2048;
  t->batch_max = o->batch_max ? o->batch_max : 512;
  if (t->batch_max > t->queue_max)
    t->batch_max = t->queue_max;
  t->flush_ms = o->flush_ms > 0 ? o->flush_ms : 1000;
  t->max_attempts = o->max_attempts > 0 ? o->max_attempts : 4;
  t->threshold = threshold_of(o->sampling);
  ring_init(&t->q, t->queue_max);
  /* as many blocks as can be queued: at 20,000 spans/s the copies in
   * flight outgrew a batch's worth, and each beyond it was a malloc */
  ring_init(&t->pool, t->queue_max);
  ring_init(&t->whole, WHOLE_MAX);
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  pthread_cond_init(&t->idle, NULL);
  if (pthread_create(&t->thread, NULL, exporter_main, t)) {
    t->thread = 0;
    tw_tracer_free(t, 0);
    return tw_err_set(err, TW_E_INTERNAL, "tracer: cannot start its thread");
  }
  *out = t;
  return TW_OK;
}

/* Frees what waits in t's queue, counted as dropped. */
static void drop_queued(struct tw_tracer *t) {
  for (struct piece *c; t->q.cells && (c = ring_pop(&t->q));) {
    free(c);
    __atomic_sub_fetch(&t->n, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->taken, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&t->dropped, 1, __ATOMIC_RELAXED);
  }
}

void tw_tracer_free(struct tw_tracer *t, int64_t deadline_ms) {
  if (!t)
    return;
  if (t->thread) {
    /* what is queued is exported first, within the deadline */
    int64_t end = now_ns() / 1000000 + deadline_ms;
    pthread_mutex_lock(&t->mu);
    while ((__atomic_load_n(&t->n, __ATOMIC_ACQUIRE) || t->busy) &&
           now_ns() / 1000000 < end) {
      pthread_cond_signal(&t->cv);
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 50000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&t->idle, &t->mu, &ts);
    }
    __atomic_store_n(&t->stopping, true, __ATOMIC_RELEASE);
    drop_queued(t); /* what is left unsent is dropped, and counted */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
  }
  drop_queued(t);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  pthread_cond_destroy(&t->idle);
  struct ring *rings[] = {&t->q, &t->pool, &t->whole};
  for (size_t i = 0; i < sizeof rings / sizeof rings[0]; i++) {
    for (void *p; rings[i]->cells && (p = ring_pop(rings[i]));)
      free(p);
    free(rings[i]->cells);
  }
  for (size_t i = 0; t->headers && t->headers[i]; i++)
    free(t->headers[i]);
  free(t->headers);
  free(t->url);
  free(t->url_log);
  free(t->service);
  free(t);
}

void tw_tracer_stats(struct tw_tracer *t, struct tw_tracer_stats *out) {
  memset(out, 0, sizeof *out);
  if (!t)
    return;
  /* taken before n, and a span's place in n before its count in taken
   * (the exporter lowers n first): a span moving from the queue to the
   * exporter is never counted twice, so recorded never runs ahead */
  uint64_t taken = __atomic_load_n(&t->taken, __ATOMIC_ACQUIRE);
  uint64_t full = __atomic_load_n(&t->dropped_full, __ATOMIC_ACQUIRE);
  out->queued = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
  out->started = taken + full + out->queued;
  out->exported = __atomic_load_n(&t->exported, __ATOMIC_ACQUIRE);
  out->dropped = __atomic_load_n(&t->dropped, __ATOMIC_ACQUIRE) + full;
  out->export_failures = __atomic_load_n(&t->failures, __ATOMIC_ACQUIRE);
}

void tw_tracer_metrics(struct tw_tracer *t, struct tw_buf *out) {
  struct tw_tracer_stats st;
  tw_tracer_stats(t, &st);
  tw_buf_printf(
      out,
      "# HELP tradewind_trace_spans_total Spans recorded, exported "
      "(accepted by otel.endpoint) and dropped (queue full or export "
      "failed).\n"
      "# TYPE tradewind_trace_spans_total counter\n"
      "tradewind_trace_spans_total{outcome=\"recorded\"} %llu\n"
      "tradewind_trace_spans_total{outcome=\"exported\"} %llu\n"
      "tradewind_trace_spans_total{outcome=\"dropped\"} %llu\n"
      "# HELP tradewind_trace_export_failures_total Export tries that got "
      "no 2xx.\n"
      "# TYPE tradewind_trace_export_failures_total counter\n"
      "tradewind_trace_export_failures_total %llu\n"
      "# HELP tradewind_trace_queue_spans Spans waiting for export.\n"
      "# TYPE tradewind_trace_queue_spans gauge\n"
      "tradewind_trace_queue_spans %llu\n",
      (unsigned long long)st.started, (unsigned long long)st.exported,
      (unsigned long long)st.dropped, (unsigned long long)st.export_failures,
      (unsigned long long)st.queued);
}
