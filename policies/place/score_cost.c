/* score_cost.c - scores from the model: expected total cost, and latency
 * to the job's data (or from the places the config names). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/cost.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy_int.h"

/* ---- cost: the cheapest candidate gets TW_SCORE_MAX, others in proportion -
 */

static int64_t cost_score(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_cand *c) {
  (void)self;
  (void)ctx;
  return c->cost.total_uusd;
}

static void cost_normalize(const struct tw_policy *self, int64_t *s, size_t n) {
  (void)self;
  tw_policy_normalize_inverse(s, n);
}

const struct tw_policy_ops tw_score_cost = {.name = "cost",
                                            .version = TW_POLICY_ABI_VERSION,
                                            .score = cost_score,
                                            .normalize = cost_normalize};

/* ---- latency: the nearest candidate to the data gets TW_SCORE_MAX ----------
 */

struct lat_state {
  char **from;
};

static void lat_release(void *p) {
  struct lat_state *st = p;
  if (st)
    pi_strv_free(st->from);
  free(st);
}

static enum tw_rc lat_configure(const struct tw_node *cfg, const char *path,
                                void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "weight", "from", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  struct lat_state *st = tw_calloc(1, sizeof *st);
  *state = st;
  if (cfg && tw_node_get(cfg, "from"))
    return pi_cfg_strv(cfg, path, "from", &st->from, err);
  return TW_OK;
}

static int64_t latency_score(const struct tw_policy *self,
                             const struct tw_place_ctx *ctx,
                             const struct tw_cand *c) {
  const struct lat_state *st = PI_STATE(self, struct lat_state);
  int64_t worst = 0;
  if (ctx->data && c->region >= 0 && (size_t)c->region < ctx->data->n_regions)
    worst = ctx->data->rtt_us[c->region];
  char here[2 * TW_MODEL_NAME_MAX + 2];
  snprintf(here, sizeof here, "%s:%s", c->offer->provider, c->offer->region);
  for (char **f = st ? st->from : NULL; f && *f; f++) {
    struct tw_net_link l;
    tw_netmatrix_link(ctx->net, *f, here, &l);
    if (l.rtt_us > worst)
      worst = l.rtt_us;
  }
  /* the job's placement.near: where its users sit, as the filter reads it */
  for (size_t i = 0; i < ctx->job->n_near; i++) {
    struct tw_net_link l;
    tw_netmatrix_link(ctx->net, ctx->job->near[i], here, &l);
    if (l.rtt_us > worst)
      worst = l.rtt_us;
  }
  /* 1 ms floor: within a region every candidate is as near */
  return worst < 1000 ? 1000 : worst;
}

const struct tw_policy_ops tw_score_latency = {.name = "latency",
                                               .version = TW_POLICY_ABI_VERSION,
                                               .configure = lat_configure,
                                               .release = lat_release,
                                               .score = latency_score,
                                               .normalize = cost_normalize};
