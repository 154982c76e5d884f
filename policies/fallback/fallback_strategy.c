/* fallback_strategy.c - the strategy table, failover, eager-next-region,
 * on-demand-fallback, and how a decision orders the candidates
 * (fallback_strategy.h).  The deadline strategy is in fallback_deadline.c. */
#include "policies/fallback/fallback_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"

static void failover(const struct tw_fallback_cfg *cfg,
                     const struct tw_fallback_job *j,
                     struct tw_fallback_decision *out);
static void failover(const struct tw_fallback_cfg *cfg,
                     const struct tw_fallback_job *j,
                     struct tw_fallback_decision *out) {
  fb__failover(cfg, j, "failover", out);
}

static void eager(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j,
                  struct tw_fallback_decision *out);
static void on_demand(const struct tw_fallback_cfg *cfg,
                      const struct tw_fallback_job *j,
                      struct tw_fallback_decision *out);

/* The strategies, indexed by enum tw_fallback_kind: the one place that
 * pairs a name with its code. */
static const struct {
  const char *name;
  void (*decide)(const struct tw_fallback_cfg *cfg,
                 const struct tw_fallback_job *j,
                 struct tw_fallback_decision *out);
} STRATEGIES[TW_FALLBACK_COUNT] = {
    [TW_FALLBACK_FAILOVER] = {"failover", failover},
    [TW_FALLBACK_EAGER_NEXT_REGION] = {"eager-next-region", eager},
    [TW_FALLBACK_ON_DEMAND] = {"on-demand-fallback", on_demand},
    [TW_FALLBACK_DEADLINE] = {"deadline", fb__deadline},
};

const char *tw_fallback_name(enum tw_fallback_kind k) {
  return (unsigned)k < TW_FALLBACK_COUNT ? STRATEGIES[k].name : "unknown";
}

bool tw_fallback_parse(const char *name, enum tw_fallback_kind *out) {
  for (int i = 0; name && i < TW_FALLBACK_COUNT; i++)
    if (!strcmp(name, STRATEGIES[i].name)) {
      *out = (enum tw_fallback_kind)i;
      return true;
    }
  return false;
}

size_t tw_fallback_names(const char **names, size_t max) {
  size_t n = 0;
  if (!max)
    return 0;
  for (int i = 0; i < TW_FALLBACK_COUNT && n + 1 < max; i++)
    names[n++] = STRATEGIES[i].name;
  names[n] = NULL;
  return n;
}

void tw_fallback_cfg_default(struct tw_fallback_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = TW_FALLBACK_FAILOVER;
  cfg->on_demand_after = 2;
  cfg->restart_overhead_s = 300;
}

void tw_fallback_fmt_dur(int64_t s, char *out, size_t outsz) {
  const char *sign = s < 0 ? "-" : "";
  int64_t a = s < 0 ? -s : s;
  if (a >= 3600)
    snprintf(out, outsz, "%s%lldh%02lldm", sign, (long long)(a / 3600),
             (long long)(a % 3600 / 60));
  else if (a >= 60)
    snprintf(out, outsz, "%s%lldm", sign, (long long)(a / 60));
  else
    snprintf(out, outsz, "%s%llds", sign, (long long)a);
}

static bool has(const char *s) { return s && *s; }

void fb__failover(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j, const char *prefix,
                  struct tw_fallback_decision *out) {
  (void)cfg;
  out->action = j->event == TW_FB_REVIEW ? TW_FB_ACT_STAY : TW_FB_ACT_PLACE;
  out->market = TW_MARKET_ANY;
  out->rank_market = j->spec_market;
  if (j->event == TW_FB_REVIEW) {
    snprintf(out->reason, sizeof out->reason, "%s: stays where it runs",
             prefix);
  } else if (j->interruptions > 0 && has(j->region)) {
    out->region = TW_FB_SAME_REGION_FIRST;
    snprintf(out->reason, sizeof out->reason,
             "%s: interruption %d: retrying within %s, then elsewhere", prefix,
             j->interruptions, j->region);
  } else {
    snprintf(out->reason, sizeof out->reason, "%s: cheapest feasible offer",
             prefix);
  }
}

static void eager(const struct tw_fallback_cfg *cfg,
                  const struct tw_fallback_job *j,
                  struct tw_fallback_decision *out) {
  fb__failover(cfg, j, "eager-next-region", out);
  if (j->event != TW_FB_REVIEW && j->interruptions > 0 && has(j->region)) {
    /* the region's other zones last, not never: a job that fits only there
     * still runs */
    out->region = TW_FB_OTHER_REGIONS_FIRST;
    snprintf(
        out->reason, sizeof out->reason,
        "eager-next-region: interruption %d: leaving %s for another region",
        j->interruptions, j->region);
  }
}

static void on_demand(const struct tw_fallback_cfg *cfg,
                      const struct tw_fallback_job *j,
                      struct tw_fallback_decision *out) {
  int n = cfg->on_demand_after > 0 ? cfg->on_demand_after : 2;
  fb__failover(cfg, j, "on-demand-fallback", out);
  if (j->event == TW_FB_REVIEW || j->spec_market == TW_MARKET_ON_DEMAND)
    return;
  if (j->interruptions >= n) {
    out->market = TW_MARKET_ON_DEMAND;
    out->rank_market = TW_MARKET_ANY;
    snprintf(out->reason, sizeof out->reason,
             "on-demand-fallback: %d interruption%s (limit %d): on-demand from "
             "now on",
             j->interruptions, j->interruptions > 1 ? "s" : "", n);
  } else if (j->interruptions > 0) {
    size_t len = strlen(out->reason);
    snprintf(out->reason + len, sizeof out->reason - len,
             " (on-demand after %d interruptions)", n);
  }
}

void tw_fallback_decide(const struct tw_fallback_cfg *cfg,
                        enum tw_fallback_kind kind,
                        const struct tw_fallback_job *j,
                        struct tw_fallback_decision *out) {
  struct tw_fallback_cfg def;
  if (!cfg) {
    tw_fallback_cfg_default(&def);
    cfg = &def;
  }
  memset(out, 0, sizeof *out);
  if ((unsigned)kind >= TW_FALLBACK_COUNT)
    kind = TW_FALLBACK_FAILOVER;
  out->kind = kind;
  STRATEGIES[kind].decide(cfg, j, out);
}

/* The group a candidate falls in (lower first), or -1 to drop it. */
static int group_of(const struct tw_fallback_decision *d, const char *region,
                    const struct tw_offer *o) {
  int g = 0;
  bool spot = o->market == TW_MARKET_SPOT;
  if (d->market == TW_MARKET_SPOT) {
    if (!spot) {
      if (!d->then_on_demand)
        return -1;
      g = 2;
    }
  } else if (d->market == TW_MARKET_ON_DEMAND && spot) {
    return -1;
  }
  if (has(region) && d->region != TW_FB_ANY_REGION) {
    bool same = !strcmp(o->region, region);
    if (d->region == TW_FB_SAME_REGION_FIRST ? !same : same)
      g += 1;
  }
  return g;
}

void tw_fallback_apply(const struct tw_fallback_decision *d, const char *region,
                       struct tw_plan *pl) {
  if (!pl->n)
    return;
  /* a stable partition into four groups: candidates keep the plan's order
   * within a group, so ties still break as the plan broke them */
  struct tw_cand *out = tw_malloc(pl->n * sizeof *out);
  size_t k = 0;
  for (int g = 0; g < 4; g++)
    for (size_t i = 0; i < pl->n; i++)
      if (group_of(d, region, pl->cands[i].offer) == g)
        out[k++] = pl->cands[i];
  free(pl->cands);
  pl->cands = out;
  pl->n = k;
}
