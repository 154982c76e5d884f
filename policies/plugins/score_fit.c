/* score_fit.c - an example score plugin, built as a shared object and
 * loaded with dlopen (policy.h, "Versioning").
 *
 * It prefers machines that fit the job snugly: the score is the share of
 * the offer's vCPUs (or memory) the job asks for, so an 8-vCPU job scores
 * TW_SCORE_MAX on an 8-vCPU machine and a quarter of it on a 32-vCPU one.
 * A cheaper but oversized machine can lose to a snug one when this
 * plugin's weight is high enough against the cost score's.
 *
 * Config (policies.scores[i]):
 *   {name: fit, path: plugins/score_fit.so, weight: 1, by: vcpus}
 * `by` is vcpus (default) or memory.
 *
 * A plugin may call nothing of the broker: it reads the structs it is
 * handed (their layout is what TW_POLICY_ABI_VERSION versions) and the C
 * library, so it loads into any program that speaks the same version. */
#include <stdlib.h>
#include <string.h>

#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/core/spec.h"
#include "policies/place/policy.h"

struct fit_state {
  int by_memory;
};

static enum tw_rc fit_configure(const struct tw_node *cfg, const char *path,
                                void **state, struct tw_err *err) {
  (void)path;
  struct fit_state *st = calloc(1, sizeof *st);
  if (!st)
    abort();
  *state = st;
  for (size_t i = 0; cfg && cfg->kind == TW_NODE_MAP && i < cfg->n; i++) {
    const struct tw_node *v = cfg->items[i];
    if (!strcmp(cfg->keys[i], "by") && v->kind == TW_NODE_SCALAR &&
        (!strcmp(v->str, "vcpus") || !strcmp(v->str, "memory"))) {
      st->by_memory = !strcmp(v->str, "memory");
      continue;
    }
    /* the broker's helpers are not ours to call: fill the error by hand */
    if (err && !err->rc) {
      err->rc = TW_E_INVALID;
      strncpy(err->msg, "fit: expected only `by: vcpus` or `by: memory`",
              sizeof err->msg - 1);
    }
    return TW_E_INVALID;
  }
  return TW_OK;
}

static int64_t fit_score(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_cand *c) {
  const struct fit_state *st = self->state;
  int64_t want, have;
  if (st && st->by_memory) {
    want = ctx->job->memory_mib;
    have = c->offer->memory_mib;
  } else {
    want = ctx->job->cpus;
    have = c->offer->vcpus;
  }
  if (want <= 0 || have <= 0)
    return TW_SCORE_MAX / 2; /* the job did not say: no preference */
  if (want >= have)
    return TW_SCORE_MAX;
  return TW_SCORE_MAX * want / have;
}

/* free() is the default release, so none is given. */
const struct tw_policy_ops tw_policy_plugin = {
    .name = "fit",
    .version = TW_POLICY_ABI_VERSION,
    .configure = fit_configure,
    .score = fit_score,
};
