/* store_reconcile.h - the reconciler's record of what it did (table
 * reconcile_log).  The structs are the reconciler's (broker/sched/
 * reconcile.h includes this header); the store only keeps them. */
#ifndef TW_CORE_STORE_RECONCILE_H
#define TW_CORE_STORE_RECONCILE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

/* One thing a pass did. */
struct tw_reconcile_action {
  int64_t at_ms;
  const char *provider; /* account name */
  const char *instance_id;
  const char *job_id;  /* "" when the instance names none */
  const char *attempt; /* the attempt's client token, "" when none */
  const char *action;  /* "adopted", "terminated" */
  const char *reason;  /* "no attempt in the store", ... */
};

struct tw_reconcile_logrec {
  int64_t at_ms;
  char provider[64];
  char instance_id[128];
  char job_id[32];
  char attempt[48];
  char action[16];
  char reason[200];
};
/* Appends one action (group-committed). */
enum tw_rc tw_store_reconcile_log_add(struct tw_store *s,
                                      const struct tw_reconcile_action *a,
                                      struct tw_err *err);
/* The first limit actions, oldest first; free() *out. */
enum tw_rc tw_store_reconcile_log_list(struct tw_store *s, int limit,
                                       struct tw_reconcile_logrec **out,
                                       size_t *n, struct tw_err *err);

#endif
