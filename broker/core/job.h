/* job.h - the job lifecycle, in one place.
 *
 *   pending -> placing -> provisioning -> running -> succeeded | failed
 *   any live state -> cancelled
 *   running -> interrupted -> recovering -> provisioning   (spot issue)
 *   waiting -> pending | failed | cancelled   (held on its dependencies,
 *                                             broker/core/flow.h)
 *
 * Every transition goes through tw_job_transition_check(); the store
 * records each as an event with its time and reason. */
#ifndef TW_BROKER_JOB_H
#define TW_BROKER_JOB_H

#include <stdbool.h>

#include "broker/base/err.h"

enum tw_job_state {
  TW_JOB_PENDING = 0,
  TW_JOB_PLACING,
  TW_JOB_PROVISIONING,
  TW_JOB_RUNNING,
  TW_JOB_SUCCEEDED,
  TW_JOB_FAILED,
  TW_JOB_CANCELLED,
  TW_JOB_INTERRUPTED,
  TW_JOB_RECOVERING,
  TW_JOB_WAITING, /* on its dependencies: not in the queue yet */
  TW_JOB_NSTATES
};

const char *tw_job_state_str(enum tw_job_state s);
/* Parses a state name; false when unknown. */
bool tw_job_state_parse(const char *s, enum tw_job_state *out);
/* succeeded, failed, cancelled. */
bool tw_job_state_terminal(enum tw_job_state s);

/* TW_OK when from -> to is allowed; TW_E_CONFLICT with a message naming both
 * states otherwise. */
enum tw_rc tw_job_transition_check(enum tw_job_state from, enum tw_job_state to,
                                   struct tw_err *err);

#endif
