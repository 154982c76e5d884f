/* store_obs.h - a job's trace context (module "trace"): the W3C
 * traceparent its submission arrived in or was given, so the spans of its
 * placement, launches and provider calls join that trace
 * (docs/observability.md). */
#ifndef TW_CORE_STORE_OBS_H
#define TW_CORE_STORE_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

/* The job's traceparent into out (at least 56 bytes); TW_E_NOTFOUND when
 * the job has none (submitted with tracing off). */
enum tw_rc tw_store_job_trace(struct tw_store *s, const char *job_id,
                              char *out, size_t outsz, struct tw_err *err);

/* Per tenant, for /metrics: the jobs pending and the oldest one's
 * submission time, and the hourly price of its live attempts (launching,
 * running, stopping): the rate it spends at now.  fn is called once per
 * tenant that has either, tenants in name order. */
struct tw_tenant_gauge {
  const char *tenant;
  int64_t pending;
  int64_t oldest_pending_ms; /* 0: none pending */
  int64_t live_attempts;
  int64_t spend_uusd_per_hour;
};
enum tw_rc tw_store_tenant_gauges(struct tw_store *s,
                                  void (*fn)(void *ctx,
                                             const struct tw_tenant_gauge *g),
                                  void *ctx, struct tw_err *err);

#endif
