#include "broker/base/mem.h"

#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

static void oom(size_t n) {
  fprintf(stderr, "tradewind: out of memory allocating %zu bytes\n", n);
  abort();
}

void *tw_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    oom(n);
  return p;
}

void *tw_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    oom(n * size);
  return p;
}

void *tw_realloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    oom(n);
  return q;
}

void tw_mem_trim(size_t freed_bytes) {
  if (freed_bytes < TW_MEM_TRIM_BYTES)
    return;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

char *tw_strdup(const char *s) {
  if (!s)
    return NULL;
  return tw_strndup(s, strlen(s));
}

char *tw_strndup(const char *s, size_t n) {
  char *d = tw_malloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *tw_asprintf(const char *fmt, ...) {
  struct tw_buf b;
  va_list ap;
  tw_buf_init(&b);
  va_start(ap, fmt);
  tw_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  return tw_buf_detach(&b);
}

void tw_buf_init(struct tw_buf *b) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

void tw_buf_release(struct tw_buf *b) {
  free(b->data);
  tw_buf_init(b);
}

void tw_buf_reset(struct tw_buf *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}

static void grow(struct tw_buf *b, size_t extra) {
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap *= 2;
  b->data = tw_realloc(b->data, cap);
  b->cap = cap;
}

void tw_buf_reserve(struct tw_buf *b, size_t extra) { grow(b, extra); }

void tw_buf_add(struct tw_buf *b, const void *data, size_t n) {
  grow(b, n);
  if (n)
    memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void tw_buf_adds(struct tw_buf *b, const char *s) {
  tw_buf_add(b, s, strlen(s));
}

void tw_buf_addc(struct tw_buf *b, char c) { tw_buf_add(b, &c, 1); }

size_t tw_i64_dec(char *out, int64_t v) {
  static const char pairs[] =
      "00010203040506070809101112131415161718192021222324"
      "25262728293031323334353637383940414243444546474849"
      "50515253545556575859606162636465666768697071727374"
      "75767778798081828384858687888990919293949596979899";
  char t[TW_I64_DEC_MAX];
  size_t n = sizeof t;
  /* in unsigned arithmetic: INT64_MIN has no positive counterpart */
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  while (u >= 100) { /* two digits per division: a time has nineteen */
    n -= 2;
    memcpy(t + n, pairs + 2 * (u % 100), 2);
    u /= 100;
  }
  if (u >= 10) {
    n -= 2;
    memcpy(t + n, pairs + 2 * u, 2);
  } else {
    t[--n] = (char)('0' + u);
  }
  if (v < 0)
    t[--n] = '-';
  memcpy(out, t + n, sizeof t - n);
  return sizeof t - n;
}

/* Written straight into the room made for the longest. */
void tw_buf_add_i64(struct tw_buf *b, int64_t v) {
  grow(b, TW_I64_DEC_MAX);
  b->len += tw_i64_dec(b->data + b->len, v);
  b->data[b->len] = '\0';
}

/* Formatted once into the room already there; a second time only when it
 * did not fit (the first pass measured it). */
void tw_buf_vprintf(struct tw_buf *b, const char *fmt, va_list ap) {
  if (!b->cap)
    grow(b, 0);
  size_t room = b->cap - b->len; /* the NUL included */
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(b->data + b->len, room, fmt, cp);
  va_end(cp);
  if (n < 0) {
    b->data[b->len] = '\0';
    return;
  }
  if ((size_t)n >= room) {
    grow(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  }
  b->len += (size_t)n;
}

void tw_buf_printf(struct tw_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tw_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void tw_buf_json_str(struct tw_buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  tw_buf_addc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"':
      tw_buf_add(b, "\\\"", 2);
      break;
    case '\\':
      tw_buf_add(b, "\\\\", 2);
      break;
    case '\n':
      tw_buf_add(b, "\\n", 2);
      break;
    case '\r':
      tw_buf_add(b, "\\r", 2);
      break;
    case '\t':
      tw_buf_add(b, "\\t", 2);
      break;
    default:
      if (*p < 0x20) {
        char u[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
        tw_buf_add(b, u, 6);
      } else {
        tw_buf_addc(b, (char)*p);
      }
    }
  }
  tw_buf_addc(b, '"');
}

char *tw_buf_detach(struct tw_buf *b) {
  char *d = b->data ? b->data : tw_strdup("");
  tw_buf_init(b);
  return d;
}
