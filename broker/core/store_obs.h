/* store_obs.h - a job's trace context (module "trace"): the W3C
 * traceparent its submission arrived in or was given, so the spans of its
 * placement, launches and provider calls join that trace
 * (docs/observability.md). */
#ifndef TW_CORE_STORE_OBS_H
#define TW_CORE_STORE_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/core/job.h"

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

/* What /metrics shows of the jobs, read once for all its gauges: the jobs
 * by state (as tw_store_job_counts) and the tenants' gauges (as
 * tw_store_tenant_gauges, in name order).  The reading is kept: a call
 * within max_age_ms of the last reading (store clock) is answered from it,
 * so scrapes however frequent cost at most one reading per max_age_ms
 * (0: read now).  The oldest pending job's submission time is kept, not
 * its wait: a wait computed at rendering time is exact; the counts are
 * those of at most max_age_ms ago.  Release with tw_store_gauges_release.
 * docs/observability.md. */
#define TW_STORE_GAUGES_MAX_AGE_MS 2000
struct tw_store_gauges {
  int64_t jobs[TW_JOB_NSTATES];
  struct tw_tenant_gauge *tenants; /* each tenant name its own copy */
  size_t n_tenants;
  int64_t read_ms; /* when read, on the store's clock */
};
enum tw_rc tw_store_gauges(struct tw_store *s, int64_t max_age_ms,
                           struct tw_store_gauges *out, struct tw_err *err);
void tw_store_gauges_release(struct tw_store_gauges *g);

#endif
