/* sched_flow.c - the pass's step for dependencies, arrays and workflows:
 * before the queue is placed, what changed since the last pass moves the
 * groups on (broker/core/store_flow.h) and the tasks that became ready
 * join the queue as jobs.  Work proportional to the change. */
#include "broker/base/log.h"
#include "broker/core/store_flow.h"
#include "broker/sched/sched_int.h"

int sched__flow(struct tw_sched *s, int64_t now) {
  struct tw_flow_pass_stats st;
  struct tw_err err = {0};
  /* at most a few queues' worth released per pass: the pending queue
   * stays short however large an array is */
  int max_release = 4 * s->max_place;
  if (tw_store_flow_pass(s->store, now, max_release, &st, &err)) {
    tw_log_warn("sched", "workflows: pass failed: %s", err.msg);
    return 0;
  }
  if (st.released || st.finished || st.resolved)
    tw_log_debug("sched",
                 "workflows: events=%lld resolved=%lld released=%lld "
                 "finished=%lld",
                 (long long)st.events, (long long)st.resolved,
                 (long long)st.released, (long long)st.finished);
  return (int)(st.released + st.finished);
}
