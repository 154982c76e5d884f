/* checkpoint.h - progress kept across attempts, the contract with the job
 * that makes it possible, and the spot lifecycle's records: checkpoint
 * requests, what each ended attempt kept, and the fallback decisions.
 *
 * The contract (docs/spot.md).  A job whose spec has `checkpoint:` is
 * launched with its script prefixed by a few environment variables:
 *
 *   TRADEWIND_JOB_ID, TRADEWIND_ATTEMPT         who and which attempt
 *   TRADEWIND_CHECKPOINT_URI                     where to save and resume
 *   TRADEWIND_CHECKPOINT_INTERVAL_S              the spec's interval (0 none)
 *   TRADEWIND_RESUME_S                           progress already kept, in
 *                                                seconds of run time
 *   TRADEWIND_NOTICE_URL                         the provider's own notice,
 *                                                to poll (AWS instance
 *                                                metadata spot/instance-
 *                                                action, Azure Scheduled
 *                                                Events, Alibaba
 *                                                termination-time); "" when
 *                                                the provider signals
 *   TRADEWIND_NOTICE_SIGNAL                      the signal it sends instead
 *                                                (Slurm: TERM, with grace)
 *
 * The job saves to the URI every interval and at once when the notice
 * appears.  The broker cannot see inside the job, so what an attempt kept
 * is computed from what the contract promises: all of its run time up to a
 * checkpoint request answered within the notice, else its run time rounded
 * down to the interval, else nothing new.  A job without `checkpoint:`
 * keeps nothing and restarts from the beginning.  Each ended attempt's
 * figures are stored (tw_checkpoint_record) and shown in the job's events.
 *
 * Tables (module "spot", migrated by tw_store_open): spot_requests,
 * spot_progress, spot_decisions.  Writes are keyed by attempt and keep the
 * first value, so a daemon that dies half way and does it again after a
 * restart computes and stores the same thing: the prelude of a relaunched
 * attempt (same client token) is then byte for byte the same, as EC2's
 * idempotency check wants.
 *
 * All functions are thread-safe (the store's rules). */
#ifndef TW_BROKER_CHECKPOINT_H
#define TW_BROKER_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/core/store_checkpoints.h"

struct tw_store;
struct tw_provider_info;

/* A request answered within this many seconds of notice is assumed not to
 * have been saved (too short to write a checkpoint). */
#define TW_CHECKPOINT_MIN_GRACE_S 10

/* ---- what an attempt kept (pure) ----------------------------------------- */

struct tw_ckpt_calc {
  bool enabled;          /* the spec has `checkpoint:` */
  int64_t interval_s;    /* the spec's checkpoint interval; 0 none */
  int64_t work_s;        /* the job's whole run time */
  int64_t resume_s;      /* progress the attempt started from */
  int64_t run_s;         /* how long it ran (running to end) */
  int64_t request_run_s; /* its run time when a checkpoint was requested;
                            -1: never requested */
  int64_t grace_s;       /* from the request to the end */
};

/* Progress kept after the attempt (never above work_s) and, in *how, a
 * static phrase saying why ("saved at the notice", ...). */
int64_t tw_checkpoint_kept(const struct tw_ckpt_calc *c, const char **how);

/* ---- the job's environment (pure) ---------------------------------------- */

struct tw_ckpt_env {
  const char *job_id;
  int attempt;
  const char *uri;
  int64_t interval_s;
  int64_t resume_s;
  /* the provider's info block (providers/provider.h): where the job
   * hears of a notice; NULL: nowhere */
  const struct tw_provider_info *info;
};

/* The notice URL or signal of a provider ("" when it has neither, or info
 * is NULL). */
const char *tw_checkpoint_notice_url(const struct tw_provider_info *info);
const char *tw_checkpoint_notice_signal(const struct tw_provider_info *info);

/* Appends run prefixed with the environment above to out.  A script that
 * starts with a `#!` line keeps it first; the variables follow it only when
 * it names a POSIX shell (sh, bash, dash, ksh, zsh), else the script is
 * left as it is (its interpreter would not read `export`). */
void tw_checkpoint_script(const struct tw_ckpt_env *e, const char *run,
                          struct tw_buf *out);

/* ---- records ------------------------------------------------------------- */

/* struct tw_ckpt_request, struct tw_ckpt_outcome and struct
 * tw_ckpt_decision are declared in broker/core/store_checkpoints.h, whose
 * functions keep them; these are the scheduler's names for them. */

/* Stores the first request of an attempt; later ones are ignored. */
enum tw_rc tw_checkpoint_request(struct tw_store *s,
                                 const struct tw_ckpt_request *r,
                                 struct tw_err *err);
/* The attempt's request, if any: *found false when none. */
enum tw_rc tw_checkpoint_request_get(struct tw_store *s, int64_t attempt_id,
                                     bool *found, struct tw_ckpt_request *out,
                                     char cause[16], struct tw_err *err);

/* Stores what an ended attempt kept; a second record for the same attempt
 * is ignored (the first computation wins). */
enum tw_rc tw_checkpoint_record(struct tw_store *s,
                                const struct tw_ckpt_outcome *o,
                                struct tw_err *err);
/* Progress the job has kept: kept_s of its latest recorded attempt, 0 when
 * none. */
enum tw_rc tw_checkpoint_progress(struct tw_store *s, const char *job_id,
                                  int64_t *kept_s, struct tw_err *err);

/* Stores d unless the job's last stored decision has the same reason
 * (a job waiting pass after pass for the same reason is not news); *added
 * (may be NULL) says whether it was stored. */
enum tw_rc tw_checkpoint_decision_add(struct tw_store *s,
                                      const struct tw_ckpt_decision *d,
                                      bool *added, struct tw_err *err);
/* The job's decisions, oldest first; free() the array. */
enum tw_rc tw_checkpoint_decisions_of(struct tw_store *s, const char *job_id,
                                      struct tw_ckpt_decision **out, size_t *n,
                                      struct tw_err *err);

#endif
