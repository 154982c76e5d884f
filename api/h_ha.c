/* h_ha.c - what the API says of the replicas sharing a PostgreSQL store
 * (docs/ha.md): /readyz's serving and leading, the lease in /metrics, and
 * GET /v1/replicas for `tradewind status`.  On sqlite none of it shows:
 * the one broker always leads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "broker/core/store.h"
#include "broker/core/store_ha.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool tw_ha_shared(struct tw_store *s) {
  return tw_store_backend(s) == TW_DB_POSTGRES;
}

void tw_ha_ready_body(struct tw_store *s, struct tw_buf *out) {
  int64_t epoch = tw_store_fenced_epoch(s);
  tw_buf_printf(out,
                "{\"status\":\"ready\",\"serving\":true,\"leading\":%s,"
                "\"epoch\":%lld}",
                epoch > 0 ? "true" : "false", (long long)epoch);
}

void tw_ha_metrics(struct tw_store *s, struct tw_buf *out) {
  struct tw_lease l;
  struct tw_err err = {0};
  int64_t mine = tw_store_fenced_epoch(s);
  tw_buf_printf(out,
                "# HELP tradewind_ha_leading 1 when this replica holds the "
                "leader lease.\n"
                "# TYPE tradewind_ha_leading gauge\n"
                "tradewind_ha_leading %d\n"
                "# HELP tradewind_ha_fence_refusals_total Writes of this "
                "replica refused because its epoch was stale.\n"
                "# TYPE tradewind_ha_fence_refusals_total counter\n"
                "tradewind_ha_fence_refusals_total %llu\n",
                mine > 0, (unsigned long long)tw_store_fence_refusals(s));
  if (tw_store_lease_read(s, &l, &err) != TW_OK)
    return;
  int64_t age = l.renewed_ms ? wall_ms() - l.renewed_ms : -1;
  tw_buf_printf(out,
                "# HELP tradewind_ha_leader_epoch The leader lease's epoch "
                "(its fencing token).\n"
                "# TYPE tradewind_ha_leader_epoch gauge\n"
                "tradewind_ha_leader_epoch %lld\n"
                "# HELP tradewind_ha_lease_age_seconds Since the leader last "
                "renewed its lease.\n"
                "# TYPE tradewind_ha_lease_age_seconds gauge\n"
                "tradewind_ha_lease_age_seconds %lld.%03lld\n"
                "# HELP tradewind_ha_takeovers_total Times the lease was taken "
                "at a new epoch.\n"
                "# TYPE tradewind_ha_takeovers_total counter\n"
                "tradewind_ha_takeovers_total %lld\n",
                (long long)l.epoch, (long long)(age < 0 ? 0 : age / 1000),
                (long long)(age < 0 ? 0 : age % 1000), (long long)l.takeovers);
}

void tw_h_replicas(struct tw_req *r) {
  struct tw_store *s = tw_api_store(r->api);
  struct tw_replica *rs = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  struct tw_lease l;
  if (tw_store_replicas(s, &rs, &n, &err) ||
      tw_store_lease_read(s, &l, &err)) {
    free(rs);
    tw_problem(r, 503, "store-unavailable", NULL, "%s", err.msg);
    return;
  }
  int64_t now = wall_ms();
  tw_buf_adds(&r->out, "{\"backend\":");
  tw_buf_json_str(&r->out, tw_ha_shared(s) ? "postgres" : "sqlite");
  tw_buf_adds(&r->out, ",\"lease\":{\"holder\":");
  tw_buf_json_str(&r->out, l.holder);
  tw_buf_printf(&r->out,
                ",\"epoch\":%lld,\"expires_in_ms\":%lld,\"takeovers\":%lld},"
                "\"replicas\":[",
                (long long)l.epoch, (long long)(l.expires_ms - now),
                (long long)l.takeovers);
  for (size_t i = 0; i < n; i++) {
    tw_buf_adds(&r->out, i ? ",{\"name\":" : "{\"name\":");
    tw_buf_json_str(&r->out, rs[i].name);
    tw_buf_adds(&r->out, ",\"url\":");
    tw_buf_json_str(&r->out, rs[i].url);
    bool leading = rs[i].epoch > 0 && rs[i].epoch == l.epoch &&
                   !strcmp(rs[i].name, l.holder);
    tw_buf_printf(&r->out,
                  ",\"leading\":%s,\"epoch\":%lld,\"seen_ms_ago\":%lld,"
                  "\"started_ms\":%lld}",
                  leading ? "true" : "false", (long long)rs[i].epoch,
                  (long long)(now - rs[i].seen_ms),
                  (long long)rs[i].started_ms);
  }
  tw_buf_adds(&r->out, "]}");
  free(rs);
  tw_req_json(r, 200);
}
