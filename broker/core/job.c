#include "broker/core/job.h"

#include <string.h>

static const char *const state_names[TW_JOB_NSTATES] = {
    "pending", "placing",   "provisioning", "running",   "succeeded",
    "failed",  "cancelled", "interrupted",  "recovering", "waiting"};

/* allowed[from] is a bit set of the states `from` may move to. */
#define B(s) (1u << (s))
static const unsigned allowed[TW_JOB_NSTATES] = {
    [TW_JOB_PENDING] =
        B(TW_JOB_PLACING) | B(TW_JOB_CANCELLED) | B(TW_JOB_FAILED),
    /* placing -> pending: nothing fits now, the job waits with a reason */
    [TW_JOB_PLACING] = B(TW_JOB_PROVISIONING) | B(TW_JOB_PENDING) |
                       B(TW_JOB_FAILED) | B(TW_JOB_CANCELLED),
    [TW_JOB_PROVISIONING] = B(TW_JOB_RUNNING) | B(TW_JOB_PLACING) |
                            B(TW_JOB_FAILED) | B(TW_JOB_CANCELLED) |
                            B(TW_JOB_INTERRUPTED),
    [TW_JOB_RUNNING] = B(TW_JOB_SUCCEEDED) | B(TW_JOB_FAILED) |
                       B(TW_JOB_CANCELLED) | B(TW_JOB_INTERRUPTED),
    [TW_JOB_INTERRUPTED] =
        B(TW_JOB_RECOVERING) | B(TW_JOB_FAILED) | B(TW_JOB_CANCELLED),
    [TW_JOB_RECOVERING] = B(TW_JOB_PROVISIONING) | B(TW_JOB_PENDING) |
                          B(TW_JOB_FAILED) | B(TW_JOB_CANCELLED),
    [TW_JOB_WAITING] =
        B(TW_JOB_PENDING) | B(TW_JOB_FAILED) | B(TW_JOB_CANCELLED),
};
#undef B

const char *tw_job_state_str(enum tw_job_state s) {
  return (unsigned)s < TW_JOB_NSTATES ? state_names[s] : "unknown";
}

bool tw_job_state_parse(const char *s, enum tw_job_state *out) {
  for (int i = 0; i < TW_JOB_NSTATES; i++)
    if (strcmp(s, state_names[i]) == 0) {
      *out = (enum tw_job_state)i;
      return true;
    }
  return false;
}

bool tw_job_state_terminal(enum tw_job_state s) {
  return s == TW_JOB_SUCCEEDED || s == TW_JOB_FAILED || s == TW_JOB_CANCELLED;
}

enum tw_rc tw_job_transition_check(enum tw_job_state from, enum tw_job_state to,
                                   struct tw_err *err) {
  if ((unsigned)from >= TW_JOB_NSTATES || (unsigned)to >= TW_JOB_NSTATES)
    return tw_err_set(err, TW_E_INVALID, "unknown job state");
  if (allowed[from] & (1u << to))
    return TW_OK;
  if (tw_job_state_terminal(from))
    return tw_err_set(err, TW_E_CONFLICT, "job already %s; cannot move to %s",
                      state_names[from], state_names[to]);
  return tw_err_set(err, TW_E_CONFLICT, "a %s job cannot move to %s",
                    state_names[from], state_names[to]);
}
