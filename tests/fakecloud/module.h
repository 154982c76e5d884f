/* module.h - what the server core gives each cloud module and what a
 * module provides: the contract between server.c and ec2.c (and later
 * arm.c and ecs.c).
 *
 * Threads: the server holds its one mutex around every call into a
 * module, so modules keep plain in-memory state and never lock.  A module
 * may ask for a slow answer (resp->delay_ms); the server sleeps after
 * releasing the mutex.  A late one (resp->late_ms) is acted on only after
 * such a sleep: the request is dispatched again then. */
#ifndef TW_TESTS_FAKECLOUD_MODULE_H
#define TW_TESTS_FAKECLOUD_MODULE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/catalog.h"
#include "tests/fakecloud/fault.h"
#include "tests/fakecloud/rng.h"

struct fc_server;

struct fc_header {
  const char *name; /* as received */
  const char *value;
};

struct fc_request {
  const char *method;
  const char *raw_path;  /* as on the wire, without the query */
  const char *raw_query; /* as on the wire, without '?'; NULL when none */
  const struct fc_header *headers;
  size_t n_headers;
  const char *body; /* NUL-terminated copy; may hold NULs */
  size_t body_len;
  bool body_too_big; /* the body passed the limit and was dropped */
  bool late;         /* dispatched again after a late fault's delay */
};

#define FC_RESPONSE_EXTRA_MAX 8

struct fc_response {
  int status;
  const char *content_type; /* static string */
  struct tw_buf body;
  int64_t delay_ms;    /* slow fault: sleep before answering */
  /* late fault: nothing was done; the server sleeps this long (without
   * its mutex, so other requests go on) and dispatches the request
   * again with req->late set */
  int64_t late_ms;
  char request_id[40]; /* x-amzn-RequestId when set */
  /* More headers (Azure-AsyncOperation, Retry-After, ...), added with
   * fc_response_header(); names are static strings, values copies. */
  struct {
    const char *name;
    char *value;
  } extra[FC_RESPONSE_EXTRA_MAX];
  size_t n_extra;
};

struct fc_module_ops {
  const char *name; /* "ec2": also the /_fake/<name>/ prefix */
  enum tw_rc (*create)(struct fc_server *s, void **ctx, struct tw_err *err);
  void (*destroy)(void *ctx);
  /* Whether this module serves a cloud API request (not /_fake). */
  bool (*claims)(const struct fc_request *req);
  void (*handle)(void *ctx, const struct fc_request *req,
                 struct fc_response *resp);
  /* /_fake/<name>/<rest>; body is the parsed JSON body or NULL.  Returns
   * false when no route matches (the server answers 404). */
  bool (*control)(void *ctx, const char *method, const char *rest,
                  const json_t *body, struct fc_response *resp);
  /* Adds the module's state (instances, counters) to out. */
  void (*dump)(void *ctx, json_t *out);
  /* Forgets all state (instances, counters, idempotency tokens). */
  void (*reset)(void *ctx);
  /* Optional (--boot, boot.h): the metadata service of instance id, path
   * sub ("/latest/meta-data/..."); false when id is not this module's. */
  bool (*metadata)(void *ctx, const char *id, const char *sub,
                   const struct fc_request *req, struct fc_response *resp);
  /* Optional: applies due transitions; called every 100 ms with --boot. */
  void (*tick)(void *ctx);
};

extern const struct fc_module_ops fc_module_ec2;

/* Services for modules; call only with the server's mutex held, which is
 * the case inside every module callback. */
int64_t fc_now_ms(struct fc_server *s);
/* A booted process to reap when it ends (boot.c). */
void fc_boot_track(struct fc_server *s, pid_t pid);
/* Fake time elapsed since the server started (fault windows). */
int64_t fc_elapsed_ms(struct fc_server *s);
struct fc_rng *fc_rng(struct fc_server *s);
uint64_t fc_seed(const struct fc_server *s);
const struct fc_catalog *fc_catalog(const struct fc_server *s);
struct fc_faults *fc_faults(struct fc_server *s);
const struct fc_opts *fc_opts(const struct fc_server *s);
/* Secret of access_key, or NULL (borrowed): the configured keys and the
 * temporary ones issued (fc_issue_key), expired or not. */
const char *fc_secret_for(const struct fc_server *s, const char *access_key);

/* A temporary key the fake token endpoints issued (creds.c). */
struct fc_issued {
  char access_key[32];
  char secret_key[64];
  char token[128];
  int64_t expires_ms; /* fake time */
};
/* Registers k: requests signed with it are accepted until it expires. */
void fc_issue_key(struct fc_server *s, const struct fc_issued *k);
/* Why a request signed by access_key with session token (NULL: none)
 * must be refused, as AWS's error code: "ExpiredToken" past expiry,
 * "InvalidClientTokenId" for a token that is not the key's or missing;
 * NULL when it passes (a long-term key without token passes). */
const char *fc_issued_check(struct fc_server *s, const char *access_key,
                            const char *token);
/* Makes and registers a fresh key: prefix ("ASIA", "STS.") then upper-case
 * letters and digits to 20 (24 for "STS."), a secret and a session token,
 * expiring ttl_s fake seconds from now. */
void fc_issued_mint(struct fc_server *s, const char *prefix, int64_t ttl_s,
                    struct fc_issued *out);
/* Expires every issued key now (control: revoked sessions). */
void fc_issued_expire_all(struct fc_server *s);
/* A fresh request id in UUID form, unique per process run: drawn from a
 * generator seeded by the real time and the pid, independent of --seed and
 * of /_fake/reset (real services never repeat a request id). */
void fc_request_id(struct fc_server *s, char out[40]);
/* A UUID from the seeded generator, for resource ids that must replay by
 * seed (Azure vmId, operation and event ids). */
void fc_uuid_seeded(struct fc_server *s, char out[40]);

/* Adds a response header (name static, value copied); beyond
 * FC_RESPONSE_EXTRA_MAX headers, or for a value holding CR or LF, it is
 * dropped. */
void fc_response_header(struct fc_response *resp, const char *name,
                        const char *value);

/* Case-insensitive header lookup; NULL when absent. */
const char *fc_header(const struct fc_request *req, const char *name);

/* JSON answers for control routes. */
void fc_json_reply(struct fc_response *resp, int status, json_t *body);
void fc_json_error(struct fc_response *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
