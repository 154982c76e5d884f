/* store_checkpoints.h - the spot lifecycle's records (module "spot":
 * spot_requests, spot_progress, spot_decisions).  The structs are the
 * checkpoint module's (broker/sched/checkpoint.h includes this header and
 * tells what they mean); the store only keeps them.  Writes are keyed by
 * attempt and keep the first value.  Thread-safe, as the store. */
#ifndef TW_CORE_STORE_CHECKPOINTS_H
#define TW_CORE_STORE_CHECKPOINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_store;

/* A checkpoint request: the job was told (through its provider's notice)
 * or is about to be (a move by its fallback strategy) to save now. */
struct tw_ckpt_request {
  int64_t attempt_id;
  const char *job_id;
  const char *cause; /* "notice", "move" */
  int64_t requested_ms;
  int64_t deadline_ms; /* when the instance goes; 0 unknown */
};
struct tw_ckpt_outcome {
  int64_t attempt_id;
  const char *job_id;
  int attempt_n;
  int64_t resume_s, run_s, kept_s;
  const char *how;
  int64_t at_ms;
};
/* A fallback decision, as stored. */
struct tw_ckpt_decision {
  int64_t at_ms;
  char job_id[32];
  char event[16]; /* "place", "interrupted", "review" */
  char strategy[24];
  char action[8];  /* "place", "stay", "move" */
  char market[16]; /* "spot", "on-demand", "any" */
  char reason[256];
};
/* Stores the first request of an attempt; later ones are ignored. */
enum tw_rc tw_store_ckpt_request_put(struct tw_store *s,
                                     const struct tw_ckpt_request *r,
                                     struct tw_err *err);
/* The attempt's request into *out (attempt_id, times; job_id NULL) with
 * its cause copied into cause; *found false when none. */
enum tw_rc tw_store_ckpt_request_get(struct tw_store *s, int64_t attempt_id,
                                     bool *found, struct tw_ckpt_request *out,
                                     char cause[16], struct tw_err *err);

/* Stores what an ended attempt kept; later records of the attempt are
 * ignored. */
enum tw_rc tw_store_ckpt_outcome_put(struct tw_store *s,
                                     const struct tw_ckpt_outcome *o,
                                     struct tw_err *err);
/* kept_s of the job's latest recorded attempt, 0 when none. */
enum tw_rc tw_store_ckpt_progress(struct tw_store *s, const char *job_id,
                                  int64_t *kept_s, struct tw_err *err);

/* Stores d unless the job's last stored decision has the same reason;
 * *added says whether it was stored. */
enum tw_rc tw_store_ckpt_decision_add(struct tw_store *s,
                                      const struct tw_ckpt_decision *d,
                                      bool *added, struct tw_err *err);
/* tw_store_ckpt_decision_add as one operation of tw_store_write_ops():
 * arg is a struct tw_store_decision_add, its added set by the write. */
struct tw_db;
struct tw_store_decision_add {
  const struct tw_ckpt_decision *d;
  bool added;
};
enum tw_rc tw_store_ckpt_decision_add_op(struct tw_store *s, struct tw_db *db,
                                         void *arg, struct tw_err *err);
/* The job's decisions, oldest first; free() *out. */
enum tw_rc tw_store_ckpt_decisions_of(struct tw_store *s, const char *job_id,
                                      struct tw_ckpt_decision **out, size_t *n,
                                      struct tw_err *err);

#endif
