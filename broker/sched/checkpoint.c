/* checkpoint.c - progress kept across attempts and the spot lifecycle's
 * records (checkpoint.h). */
#include "broker/sched/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/provider.h"

/* ---- pure -----------------------------------------------------------------
 */

int64_t tw_checkpoint_kept(const struct tw_ckpt_calc *c, const char **how) {
  int64_t kept;
  const char *why;
  int64_t run = c->run_s > 0 ? c->run_s : 0;
  if (!c->enabled) {
    kept = 0;
    why = "no checkpoint: starts over";
  } else if (c->request_run_s >= 0 && c->grace_s >= TW_CHECKPOINT_MIN_GRACE_S) {
    kept = c->resume_s + (c->request_run_s < run ? c->request_run_s : run);
    why = "saved at the notice";
  } else if (c->interval_s > 0) {
    kept = c->resume_s + run / c->interval_s * c->interval_s;
    why = c->request_run_s >= 0
              ? "notice too short to save; last periodic checkpoint"
              : "last periodic checkpoint";
  } else {
    kept = c->resume_s;
    why = c->request_run_s >= 0 ? "notice too short to save"
                                : "nothing saved since the last checkpoint";
  }
  if (kept > c->work_s)
    kept = c->work_s;
  if (kept < 0)
    kept = 0;
  if (how)
    *how = why;
  return kept;
}

const char *tw_checkpoint_notice_url(const struct tw_provider_info *info) {
  return info ? info->notice_url : "";
}

const char *tw_checkpoint_notice_signal(const struct tw_provider_info *info) {
  return info ? info->notice_signal : "";
}

/* Appends 'v' as a single-quoted shell word. */
static void sh_quote(struct tw_buf *b, const char *v) {
  tw_buf_addc(b, '\'');
  for (const char *p = v ? v : ""; *p; p++) {
    if (*p == '\'')
      tw_buf_adds(b, "'\\''");
    else
      tw_buf_addc(b, *p);
  }
  tw_buf_addc(b, '\'');
}

static bool posix_shell(const char *line, size_t n) {
  static const char *const shells[] = {"sh",  "bash", "dash",
                                       "ksh", "zsh",  NULL};
  /* the interpreter's basename, or the word after `env` */
  char buf[256];
  if (n >= sizeof buf)
    return false;
  memcpy(buf, line, n);
  buf[n] = '\0';
  char *save = NULL, *word = strtok_r(buf + 2, " \t", &save);
  if (!word)
    return false;
  const char *base = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
  if (!strcmp(base, "env")) {
    word = strtok_r(NULL, " \t", &save);
    if (!word)
      return false;
    base = word;
  }
  for (int i = 0; shells[i]; i++)
    if (!strcmp(base, shells[i]))
      return true;
  return false;
}

void tw_checkpoint_script(const struct tw_ckpt_env *e, const char *run,
                          struct tw_buf *out) {
  const char *body = run ? run : "";
  if (!strncmp(body, "#!", 2)) {
    size_t n = strcspn(body, "\n");
    if (!posix_shell(body, n)) {
      tw_buf_adds(out, body);
      return;
    }
    tw_buf_add(out, body, n);
    tw_buf_addc(out, '\n');
    body += n + (body[n] == '\n');
  }
  tw_buf_adds(out, "# tradewind: the checkpoint contract (docs/spot.md)\n");
  tw_buf_adds(out, "export TRADEWIND_JOB_ID=");
  sh_quote(out, e->job_id);
  tw_buf_printf(out, "\nexport TRADEWIND_ATTEMPT=%d\n", e->attempt);
  tw_buf_adds(out, "export TRADEWIND_CHECKPOINT_URI=");
  sh_quote(out, e->uri);
  tw_buf_printf(out, "\nexport TRADEWIND_CHECKPOINT_INTERVAL_S=%lld\n",
                (long long)e->interval_s);
  tw_buf_printf(out, "export TRADEWIND_RESUME_S=%lld\n",
                (long long)e->resume_s);
  tw_buf_adds(out, "export TRADEWIND_NOTICE_URL=");
  sh_quote(out, tw_checkpoint_notice_url(e->info));
  tw_buf_adds(out, "\nexport TRADEWIND_NOTICE_SIGNAL=");
  sh_quote(out, tw_checkpoint_notice_signal(e->info));
  tw_buf_addc(out, '\n');
  tw_buf_adds(out, body);
}

/* ---- records (broker/core/store_checkpoints.c) --------------------------- */

enum tw_rc tw_checkpoint_request(struct tw_store *s,
                                 const struct tw_ckpt_request *r,
                                 struct tw_err *err) {
  return tw_store_ckpt_request_put(s, r, err);
}

enum tw_rc tw_checkpoint_request_get(struct tw_store *s, int64_t attempt_id,
                                     bool *found, struct tw_ckpt_request *out,
                                     char cause[16], struct tw_err *err) {
  return tw_store_ckpt_request_get(s, attempt_id, found, out, cause, err);
}

enum tw_rc tw_checkpoint_record(struct tw_store *s,
                                const struct tw_ckpt_outcome *o,
                                struct tw_err *err) {
  return tw_store_ckpt_outcome_put(s, o, err);
}

enum tw_rc tw_checkpoint_progress(struct tw_store *s, const char *job_id,
                                  int64_t *kept_s, struct tw_err *err) {
  return tw_store_ckpt_progress(s, job_id, kept_s, err);
}

enum tw_rc tw_checkpoint_decision_add(struct tw_store *s,
                                      const struct tw_ckpt_decision *d,
                                      bool *added, struct tw_err *err) {
  return tw_store_ckpt_decision_add(s, d, added, err);
}

enum tw_rc tw_checkpoint_decisions_of(struct tw_store *s, const char *job_id,
                                      struct tw_ckpt_decision **out, size_t *n,
                                      struct tw_err *err) {
  return tw_store_ckpt_decisions_of(s, job_id, out, n, err);
}
