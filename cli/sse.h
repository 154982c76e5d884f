/* sse.h - the CLI's reader of server-sent events (GET /v1/events/stream):
 * bytes in as they arrive, whole events out.  Input from the server, so
 * it is fuzzed (tests/fuzz/fuzz_cli_sse.c). */
#ifndef TW_CLI_SSE_H
#define TW_CLI_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/base/mem.h"

/* An event larger than this is not from an event stream of ours. */
#define TW_CLI_SSE_MAX_EVENT (1u << 20)

struct tw_cli_sse {
  struct tw_buf part; /* a line not complete yet */
  /* the event being read */
  char type[64];
  struct tw_buf data;
  bool have_data;
  long long last_id; /* the last `id:` seen (the resume point), 0: none */
  bool bad;          /* an event too large: the stream is not trusted */
};

/* One whole event: its type ("message" when none) and its data lines
 * joined with "\n" ("" when none).  Returns false to stop reading. */
typedef bool (*tw_cli_sse_fn)(void *ctx, const char *event, const char *data);

void tw_cli_sse_init(struct tw_cli_sse *p);
void tw_cli_sse_release(struct tw_cli_sse *p);
/* Forgets a partial line and event (a new connection); keeps last_id. */
void tw_cli_sse_restart(struct tw_cli_sse *p);
/* Feeds n bytes; calls fn for each event they complete.  False when fn
 * asked to stop or the input is bad (p->bad). */
bool tw_cli_sse_feed(struct tw_cli_sse *p, const char *data, size_t n,
                     tw_cli_sse_fn fn, void *ctx);

#endif
