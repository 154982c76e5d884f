/* twtest_plan_server.h - an in-process API server with the scheduler's
 * placement index behind it, over a fake provider ("aws", account "lab")
 * whose offers the test adds: for tests of POST /v1/plan, workflows and
 * `tradewind plan` that need no daemon process.
 *
 *   static struct twtest_ps F;
 *   setup:    twtest_ps_open(&F, "plan"); twtest_ps_offer(&F, ...) ...;
 *             twtest_ps_start(&F, true);
 *   a test:   struct twtest_ps_resp r = twtest_ps_call(&F, "POST", ...);
 *             ... tw_buf_release(&r.body);
 *   teardown: twtest_ps_close(&F);
 *
 * twtest_ps_call fails the running cmocka test when no answer comes. */
#ifndef TW_TESTS_INTEGRATION_TWTEST_PLAN_SERVER_H
#define TW_TESTS_INTEGRATION_TWTEST_PLAN_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"

struct twtest_ps {
  char dir[64], path[128]; /* the temp dir and its store file */
  struct tw_clock clk;     /* fake, at 2025-11-30T00:00:00Z */
  struct tw_store *store;
  struct tw_provider *prov;
  struct tw_sched *sched;
  struct tw_api *api;
  struct tw_placer *placer;
};

struct twtest_ps_resp {
  long status;
  struct tw_buf body; /* NUL-terminated */
};

/* The temp dir /tmp/tw-<tag>-XXXXXX, the store and the fake provider;
 * 0 or -1. */
int twtest_ps_open(struct twtest_ps *f, const char *tag);
/* One offer of the fake provider: x86_64, 4 GiB per vCPU, per-second
 * billing, its jurisdiction label; accel NULL for none. */
void twtest_ps_offer(struct twtest_ps *f, const char *region, const char *zone,
                     const char *type, enum tw_market m, int64_t price_uusd,
                     int vcpus, const char *accel, int accels,
                     const char *juris);
/* The placer, the scheduler (one pass: offers listed, the index
 * published) and the API server on a loopback port, open mode; with the
 * test adapters' names when adapters is true.  0 or -1. */
int twtest_ps_start(struct twtest_ps *f, bool adapters);
void twtest_ps_close(struct twtest_ps *f);

struct twtest_ps_resp twtest_ps_call(struct twtest_ps *f, const char *method,
                                     const char *path, const char *ctype,
                                     const char *body);
/* `tradewind ARGV` against the server in process: its exit code, its
 * stdout in *out (free it); its stderr printed when it fails. */
int twtest_ps_cli(struct twtest_ps *f, const char *const *argv, int argc,
                  char **out);

#endif
