/* h_attempts.c - GET /v1/jobs/{id}/attempts: every attempt of a job,
 * oldest first, for the console's job page (h_stream.h declares it). */
#include <stdlib.h>

#include "api/api_int.h"
#include "api/h_stream.h"
#include "broker/base/clock.h"
#include "broker/core/store.h"

static void add_time(struct tw_buf *b, const char *key, int64_t ms) {
  if (!ms) {
    tw_buf_printf(b, ",\"%s\":null", key);
    return;
  }
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

void tw_h_jobs_attempts(struct tw_req *r) {
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_get(tw_api_store(r->api), r->params[0], &job, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_job_rec_release(&job);
  struct tw_attempt_rec *at = NULL;
  size_t n = 0;
  if (tw_store_attempts_of(tw_api_store(r->api), r->params[0], &at, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    const struct tw_attempt_rec *a = &at[i];
    tw_buf_printf(&r->out, "%s{\"n\":%d,\"provider\":", i ? "," : "", a->n);
    tw_buf_json_str(&r->out, a->provider);
    tw_buf_adds(&r->out, ",\"offer_id\":");
    tw_buf_json_str(&r->out, a->offer_id);
    tw_buf_adds(&r->out, ",\"market\":");
    tw_buf_json_str(&r->out, a->market);
    tw_buf_printf(&r->out, ",\"price_uusd_per_hour\":%lld,\"instance_id\":",
                  (long long)a->price_uusd_per_hour);
    tw_buf_json_str(&r->out, a->instance_id);
    tw_buf_printf(&r->out, ",\"state\":\"%s\",\"end_reason\":",
                  tw_attempt_state_str(a->state));
    tw_buf_json_str(&r->out, a->end_reason);
    add_time(&r->out, "started_at", a->started_ms);
    add_time(&r->out, "running_at", a->running_ms);
    add_time(&r->out, "ended_at", a->ended_ms);
    tw_buf_addc(&r->out, '}');
  }
  free(at);
  tw_buf_adds(&r->out, "]}");
  tw_req_json(r, 200);
}
