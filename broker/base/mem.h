/* mem.h - allocation that aborts on exhaustion (as Redis's zmalloc), a
 * growable byte buffer, and the decimal writer its integer appends use.
 * Limits on growth are real errors (TW_E_TOOBIG). */
#ifndef TW_BROKER_MEM_H
#define TW_BROKER_MEM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

void *tw_malloc(size_t n);
void *tw_calloc(size_t n, size_t size);
void *tw_realloc(void *p, size_t n);
char *tw_strdup(const char *s); /* NULL in, NULL out */
char *tw_strndup(const char *s, size_t n);
char *tw_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lets the allocator give its free pages back to the kernel once a large
 * transient structure of freed_bytes (at least TW_MEM_TRIM_BYTES) has been
 * freed: glibc keeps freed heap memory for reuse, and after one listing of
 * 10,100 instances a process held 24 MB more than before it
 * (docs/benchmarks.md).  Costs a walk of the heap, so it is meant for the
 * rare large release, not every free.  Any thread; a no-op below the
 * threshold and where the C library has no malloc_trim(). */
#define TW_MEM_TRIM_BYTES ((size_t)4 << 20)
void tw_mem_trim(size_t freed_bytes);

/* A NUL-terminated growable buffer.  Embed it, tw_buf_init(), and
 * tw_buf_release() when done; tw_buf_detach() hands the storage to the
 * caller (free() it). */
struct tw_buf {
  char *data;
  size_t len;
  size_t cap;
};

void tw_buf_init(struct tw_buf *b);
void tw_buf_release(struct tw_buf *b);
void tw_buf_reset(struct tw_buf *b);
void tw_buf_add(struct tw_buf *b, const void *data, size_t n);
void tw_buf_adds(struct tw_buf *b, const char *s);
void tw_buf_addc(struct tw_buf *b, char c);
/* Appends v in decimal, as "%lld" would, without a format. */
void tw_buf_add_i64(struct tw_buf *b, int64_t v);

/* Writes v's decimal digits (a '-' first when negative), as "%lld" would,
 * at out and returns how many: at most TW_I64_DEC_MAX, the length of
 * INT64_MIN.  No NUL is written (out of TW_I64_DEC_MAX + 1 bytes has room
 * for one at out[returned]).  tw_buf_add_i64 and the trace encoder both
 * write with it; two digits per division.  Pure, any thread. */
#define TW_I64_DEC_MAX 20 /* "-9223372036854775808" */
size_t tw_i64_dec(char *out, int64_t v);

/* Makes room for extra more bytes (and the NUL) without adding any: a
 * writer that knows its bound then writes data + len directly. */
void tw_buf_reserve(struct tw_buf *b, size_t extra);
void tw_buf_printf(struct tw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tw_buf_vprintf(struct tw_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Appends s as a JSON string literal, quotes included. */
void tw_buf_json_str(struct tw_buf *b, const char *s);
char *tw_buf_detach(struct tw_buf *b);

#endif
