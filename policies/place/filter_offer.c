/* filter_offer.c - the filters that read the offer itself: market, price,
 * offers this job failed on, the capacity blocklist, private capacity,
 * backfill reservations, and the deadline.  All TW_SCOPE_OFFER: run for
 * each offer the search visits, after the cost model (ctx->offer_cost). */
#include <stdio.h>
#include <string.h>

#include "broker/base/clock.h"
#include "policies/place/policy_int.h"

/* ---- market
 * ------------------------------------------------------------------ */

static void market_filter(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  enum tw_market want = ctx->job->market;
  /* Private capacity is not preemptible: it serves on-demand requests. */
  v->pass = want == TW_MARKET_ANY || o->market == want ||
            (want == TW_MARKET_ON_DEMAND && o->market == TW_MARKET_PRIVATE);
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "not in the %s market",
             tw_market_str(want));
}

const struct tw_policy_ops tw_filter_market = {.name = "market",
                                               .version = TW_POLICY_ABI_VERSION,
                                               .scope = TW_SCOPE_OFFER,
                                               .filter = market_filter};

/* ---- price
 * ------------------------------------------------------------------- */

static void price_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  int64_t max = ctx->job->max_price_uusd_per_hour;
  v->pass = !max || o->price_uusd_per_hour <= max;
  if (!v->pass) {
    char p[32];
    tw_policy_fmt_uusd(max, p, sizeof p);
    snprintf(v->reason, sizeof v->reason, "over max price %s/h", p);
    v->amount = o->price_uusd_per_hour - max;
  }
}

const struct tw_policy_ops tw_filter_price = {.name = "price",
                                              .version = TW_POLICY_ABI_VERSION,
                                              .scope = TW_SCOPE_OFFER,
                                              .filter = price_filter};

/* ---- excluded: offers this job's earlier attempts failed on ---------------
 */

static void excluded_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  v->pass = true;
  for (size_t i = 0; i < ctx->n_excluded; i++)
    if (!strcmp(ctx->excluded[i], o->id)) {
      v->pass = false;
      snprintf(v->reason, sizeof v->reason, "failed this job before");
      return;
    }
}

const struct tw_policy_ops tw_filter_excluded = {.name = "excluded",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_OFFER,
                                                 .filter = excluded_filter};

/* ---- blocklist: the spot lifecycle's hook -----------------------------------
 */

static void blocklist_filter(const struct tw_policy *self,
                             const struct tw_place_ctx *ctx,
                             const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_place_blocklist *bl = ctx->blocklist;
  v->pass = true;
  char why[112] = "";
  if (bl->blocked && bl->blocked(bl->ctx, o, ctx->now_ms, why, sizeof why)) {
    v->pass = false;
    snprintf(v->reason, sizeof v->reason, "blocklisted%s%s", why[0] ? ": " : "",
             why);
  }
}

const struct tw_policy_ops tw_filter_blocklist = {.name = "blocklist",
                                                  .version =
                                                      TW_POLICY_ABI_VERSION,
                                                  .scope = TW_SCOPE_OFFER,
                                                  .filter = blocklist_filter};

/* ---- capacity: private offers know how many nodes are free -----------------
 */

static int64_t free_nodes(const struct tw_place_ctx *ctx,
                          const struct tw_offer *o) {
  int64_t f = o->capacity - tw_capacity_view_used(ctx->capacity, o->id);
  return f < 0 ? 0 : f;
}

static void capacity_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  v->pass = true;
  if (o->capacity < 0)
    return; /* a cloud: capacity is found out at launch */
  int64_t f = free_nodes(ctx, o);
  if (f < ctx->nodes) {
    v->pass = false;
    v->amount = ctx->nodes - f;
    snprintf(v->reason, sizeof v->reason,
             "short of free nodes (%d wanted, %lld free)", ctx->nodes,
             (long long)f);
  }
}

const struct tw_policy_ops tw_filter_capacity = {.name = "capacity",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_OFFER,
                                                 .filter = capacity_filter};

/* ---- backfill: never delay the head job's reservation -------------------- */

static void backfill_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  v->pass = true;
  if (o->capacity < 0)
    return;
  const struct tw_reservation *r =
      tw_reservations_find(ctx->reservations, o->id);
  if (!r || (ctx->job_id && !strcmp(r->job_id, ctx->job_id)))
    return;
  /* Fits beside the reservation, or ends before it starts. */
  int64_t beside = free_nodes(ctx, o) - r->nodes;
  int64_t end_ms = ctx->offer_cost ? ctx->offer_cost->finish_ms
                                   : ctx->now_ms + ctx->duration_s * 1000;
  if (beside >= ctx->nodes || end_ms <= r->start_ms)
    return;
  v->pass = false;
  char at[40];
  tw_time_fmt_rfc3339(r->start_ms, at, sizeof at);
  snprintf(v->reason, sizeof v->reason, "reserved for job %.32s from %s",
           r->job_id, at);
}

const struct tw_policy_ops tw_filter_backfill = {.name = "backfill",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_OFFER,
                                                 .filter = backfill_filter};

/* ---- deadline
 * ------------------------------------------------------------------ */

static void deadline_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  (void)o;
  int64_t deadline = ctx->job->deadline_ms;
  v->pass = true;
  if (!deadline || !ctx->offer_cost)
    return;
  int64_t finish = ctx->offer_cost->finish_ms;
  if (finish <= deadline)
    return;
  int64_t short_s = (finish - deadline + 999) / 1000;
  char d[32];
  tw_policy_fmt_duration(short_s, d, sizeof d);
  v->pass = false;
  v->amount = short_s;
  snprintf(v->reason, sizeof v->reason,
           "cannot finish before the deadline: short by %s", d);
}

const struct tw_policy_ops tw_filter_deadline = {.name = "deadline",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_OFFER,
                                                 .filter = deadline_filter};

/* ---- price_sanity: offers the catalog holds for implausible prices
 * ----------- */

/* state: non-NULL when the operator allows them (policies.allow_quarantined
 * or {name: price_sanity, allow: true}) */
static enum tw_rc sanity_configure(const struct tw_node *cfg, const char *path,
                                   void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "allow", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  const struct tw_node *a = cfg ? tw_node_get(cfg, "allow") : NULL;
  if (a && a->kind == TW_NODE_SCALAR && !strcmp(a->str, "true"))
    *state = (void *)&tw_filter_price_sanity;
  else if (a && !(a->kind == TW_NODE_SCALAR && !strcmp(a->str, "false")))
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.allow: expected true or false", path);
  return TW_OK;
}

/* the state points at static storage: nothing to free */
static void sanity_release(void *state) { (void)state; }

static void sanity_filter(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_offer *o, struct tw_verdict *v) {
  (void)ctx;
  v->pass = !o->quarantine[0] || self->state != NULL;
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "quarantined: %.100s",
             o->quarantine);
}

const struct tw_policy_ops tw_filter_price_sanity = {
    .name = "price_sanity",
    .version = TW_POLICY_ABI_VERSION,
    .scope = TW_SCOPE_OFFER,
    .configure = sanity_configure,
    .release = sanity_release,
    .filter = sanity_filter};
