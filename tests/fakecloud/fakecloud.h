/* fakecloud.h - tradewind-fakecloud as a library: a loopback HTTP server
 * that speaks cloud wire protocols (EC2 today; Azure ARM and Alibaba ECS
 * are further modules, see module.h), checks signatures, keeps instances
 * in memory and injects faults from a seeded schedule.
 *
 * main.c is a thin front-end over this; tests may also start a server in
 * their own process.  One server per call; several may run at once. */
#ifndef TW_TESTS_FAKECLOUD_FAKECLOUD_H
#define TW_TESTS_FAKECLOUD_FAKECLOUD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

#define FC_DEFAULT_ACCESS_KEY "AKIDTRADEWINDFAKE"
#define FC_DEFAULT_SECRET_KEY "tradewind-fake-secret"
#define FC_MAX_BODY_BYTES (1u << 20) /* request bodies above: 413 */
#define FC_MAX_CREDS 8

struct fc_cred {
  const char *access_key;
  const char *secret_key;
};

struct fc_opts {
  const char *listen_host; /* IPv4 literal; NULL: 127.0.0.1 */
  unsigned port;           /* 0: pick a free one */
  uint64_t seed;
  const char *catalog_path; /* NULL: the built-in catalog */
  const char *faults_path;  /* NULL: no scheduled faults */
  double clock_speed;       /* fake seconds per real second; 0 freezes */
  int64_t start_ms;         /* fake clock at start; < 0: real time now */
  int64_t pending_ms;       /* pending -> running; < 0: default 5000 */
  struct fc_cred creds[FC_MAX_CREDS]; /* extra keys, besides the default */
  size_t n_creds;
  size_t max_body_bytes; /* 0: FC_MAX_BODY_BYTES */
  int verbose;           /* log each request to stderr */
  /* PEM files: both set, every module is served over HTTPS (the Azure
   * SDK sends bearer tokens over https only); NULL: plain http. */
  const char *tls_cert_path;
  const char *tls_key_path;
  /* --boot: a launch with user data runs it as a local process in a
   * sandbox of its own (tests/fakecloud/boot.h, docs/fakecloud.md);
   * boot_dir holds the sandboxes (NULL: a temporary directory, removed
   * at stop). */
  bool boot;
  const char *boot_dir;
};

struct fc_server;

/* Sets the defaults above (seed 1, speed 1, real time, default key). */
void fc_opts_init(struct fc_opts *o);

/* Loads catalog and faults, binds and starts serving on background
 * threads.  *out is owned (fc_server_stop).  Errors: TW_E_INVALID for a
 * bad catalog or fault file (naming it) or a TLS file that cannot be read,
 * TW_E_IO when the port cannot be bound or TLS cannot start. */
enum tw_rc fc_server_start(const struct fc_opts *o, struct fc_server **out,
                           struct tw_err *err);

/* The bound port (the chosen one when 0 was asked). */
unsigned fc_server_port(const struct fc_server *s);

/* The plain-HTTP port of the instances' metadata (0 without --boot). */
unsigned fc_server_meta_port(const struct fc_server *s);

/* Whether s serves HTTPS (--tls-cert and --tls-key). */
bool fc_tls(const struct fc_server *s);

/* Stops serving, waits for in-flight requests, frees s (NULL: no-op). */
void fc_server_stop(struct fc_server *s);

#endif
