/* test_cli_fake.h - a scripted HTTP server for the CLI's unit tests.
 *
 * libmicrohttpd on 127.0.0.1, port 0.  Each request takes the next scripted
 * reply, in order, and is recorded (method, path with query, headers of
 * interest, body) for the test to check.  A request beyond the script gets
 * 599 with body "fake: script exhausted". */
#ifndef TW_TESTS_TEST_CLI_FAKE_H
#define TW_TESTS_TEST_CLI_FAKE_H

#include <stddef.h>

#define FAKE_MAX 64

struct fake_req {
  char method[16];
  char target[1024]; /* "/v1/jobs?limit=2&cursor=c1" (query decoded) */
  char content_type[128];
  char authorization[256];
  char idempotency_key[256];
  char *body;
  size_t body_len;
};

struct fake_srv;

/* Starts the server; aborts the test process when it cannot. */
struct fake_srv *fake_start(void);
/* Stops it and frees everything, recorded requests included. */
void fake_stop(struct fake_srv *s);
/* "http://127.0.0.1:PORT" (borrowed). */
const char *fake_url(const struct fake_srv *s);

/* Queues a reply; header may be NULL, else "Name: value". */
void fake_reply(struct fake_srv *s, int status, const char *content_type,
                const char *body, const char *header);
/* Shorthand for 200 application/json. */
void fake_json(struct fake_srv *s, const char *body);

size_t fake_nreq(struct fake_srv *s);
/* The i-th request (borrowed until fake_stop). */
const struct fake_req *fake_req(struct fake_srv *s, size_t i);

#endif
