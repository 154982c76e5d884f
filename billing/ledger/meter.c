/* meter.c - billing rules, the `billing:` config section, and the meter
 * that follows attempts into the ledger.  The meter's progress is kept by
 * the store (broker/core/store_ledger.h), with the rows it writes. */
#include "billing/ledger/meter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/base/idix.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/core/live.h"
#include "broker/core/spec.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"
#include "broker/core/store_ledger.h"
#include "providers/provider.h"

/* ---- billing rules ------------------------------------------------------ */

int64_t tw_bill_seconds(const struct tw_bill_rule *r, int64_t elapsed_ms,
                        enum tw_bill_phase phase) {
  if (elapsed_ms < 0)
    elapsed_ms = 0;
  /* A started second is a second: providers bill whole seconds. */
  int64_t s = (elapsed_ms + 999) / 1000;
  if (phase == TW_BILL_RECLAIMED) {
    if (r->reclaim_free_s > 0 && elapsed_ms < r->reclaim_free_s * 1000)
      return 0; /* AWS: interrupted by EC2 in its first instance-hour */
    if (r->reclaim_minimum && s < r->min_charge_s)
      s = r->min_charge_s;
    return s;
  }
  int64_t g = r->granularity_s > 1 ? r->granularity_s : 1;
  s = (s + g - 1) / g * g;
  if (phase == TW_BILL_ENDED && s < r->min_charge_s)
    s = r->min_charge_s;
  return s;
}

void tw_bill_rule_resolve(const struct tw_provider_info *info,
                          int64_t offer_gran_s, int64_t offer_min_s,
                          const struct tw_meter_rate *rate,
                          struct tw_bill_rule *out) {
  memset(out, 0, sizeof *out);
  out->granularity_s = 1;
  if (info && info->billing.kind == TW_BILLING_PUBLISHED) {
    out->granularity_s = info->billing.granularity_s;
    out->min_charge_s = info->billing.min_charge_s;
    out->reclaim_free_s = info->billing.spot_reclaim_free_s;
    out->reclaim_minimum = info->billing.spot_reclaim_minimum;
  }
  if (offer_gran_s > 0) {
    out->granularity_s = offer_gran_s;
    out->min_charge_s = offer_min_s > 0 ? offer_min_s : 0;
  }
  if (rate && rate->granularity_s > 0)
    out->granularity_s = rate->granularity_s;
  if (rate && rate->min_charge_s >= 0)
    out->min_charge_s = rate->min_charge_s;
}

/* a / b rounded half away from zero; b > 0 */
static int64_t div_round(__int128 a, __int128 b) {
  if (a >= 0)
    return (int64_t)((a + b / 2) / b);
  return -(int64_t)((-a + b / 2) / b);
}

int64_t tw_bill_cost(int64_t price_uusd_per_hour, int64_t node_seconds) {
  return div_round((__int128)price_uusd_per_hour * node_seconds, 3600);
}

int64_t tw_bill_cost_at(int64_t price_uusd_per_hour, int64_t node_seconds,
                        int64_t discount_bp) {
  if (discount_bp <= 0)
    return tw_bill_cost(price_uusd_per_hour, node_seconds);
  return div_round((__int128)price_uusd_per_hour * (10000 - discount_bp) *
                       node_seconds,
                   (__int128)3600 * 10000);
}

int64_t tw_bill_discount(int64_t list_uusd, int64_t discount_bp) {
  if (discount_bp <= 0)
    return list_uusd;
  return list_uusd - div_round((__int128)list_uusd * discount_bp, 10000);
}

void tw_meter_accrue(const struct tw_store_meter_progress *p, int64_t now_ms,
                     tw_meter_accrual_fn fn, void *ctx) {
  struct tw_bill_rule rule = {.granularity_s = p->granularity_s,
                              .min_charge_s = p->min_charge_s};
  int64_t t = p->metered_to_ms > p->running_ms ? p->metered_to_ms
                                               : p->running_ms;
  int64_t billed = p->billed_s;
  int nodes = p->nodes > 0 ? p->nodes : 1;
  while (t < now_ms) {
    int64_t b = (t / TW_ACCRUAL_SPLIT_MS + 1) * TW_ACCRUAL_SPLIT_MS;
    if (b > now_ms)
      b = now_ms;
    int64_t due =
        tw_bill_seconds(&rule, b - p->running_ms, TW_BILL_RUNNING) - billed;
    if (due < 0)
      due = 0;
    billed += due;
    struct tw_ledger_row r;
    memset(&r, 0, sizeof r);
    r.start_ms = t;
    r.end_ms = b;
    r.service = TW_SERVICE_COMPUTE;
    TW_SET(r.tenant, p->tenant);
    TW_SET(r.project, p->project);
    TW_SET(r.job_id, p->job_id);
    r.attempt_id = p->attempt_id;
    TW_SET(r.provider, p->provider);
    TW_SET(r.account, p->account);
    TW_SET(r.region, p->region);
    TW_SET(r.zone, p->zone);
    TW_SET(r.instance_type, p->instance_type);
    TW_SET(r.resource_id, p->resource_id);
    TW_SET(r.market, p->market);
    r.nodes = nodes;
    r.usage_ms = b - t;
    r.quantity = due * nodes;
    r.unit_price_uusd = p->price_uusd_per_hour;
    r.list_uusd = tw_bill_cost(p->price_uusd_per_hour, r.quantity);
    r.effective_uusd =
        tw_bill_cost_at(p->price_uusd_per_hour, r.quantity, p->discount_bp);
    r.discount_bp = p->discount_bp;
    fn(ctx, &r);
    t = b;
  }
}

/* ---- configuration ----------------------------------------------------------
 */

/* "12.5" -> 1250 basis points; 0..100 with at most two decimals. */
static int parse_pct_bp(const char *s, int64_t *out) {
  int64_t whole = 0, frac = 0;
  int nd = 0, nf = 0;
  const char *p = s;
  while (*p >= '0' && *p <= '9' && nd < 4)
    whole = whole * 10 + (*p++ - '0'), nd++;
  if (!nd)
    return -1;
  if (*p == '.') {
    p++;
    while (*p >= '0' && *p <= '9' && nf < 2)
      frac = frac * 10 + (*p++ - '0'), nf++;
    if (!nf)
      return -1;
  }
  if (*p)
    return -1;
  if (nf == 1)
    frac *= 10;
  int64_t bp = whole * 100 + frac;
  if (bp > 10000)
    return -1;
  *out = bp;
  return 0;
}

static enum tw_rc cfg_usd(const struct tw_node *n, const char *path,
                          int64_t *out, struct tw_err *err) {
  if (!n || n->kind != TW_NODE_SCALAR || tw_parse_usd_uusd(n->str, out) ||
      *out < 0)
    return tw_err_field(
        err, TW_E_INVALID, path,
        "%s: expected an amount in USD such as \"0.09\", got %s", path,
        n && n->kind == TW_NODE_SCALAR ? n->str : tw_node_type_name(n));
  return TW_OK;
}

static enum tw_rc unknown_key(const char *path, const char *key,
                              const char *const *known, struct tw_err *err) {
  const char *near = tw_closest(key, known);
  if (near)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: unknown key; did you mean \"%s\"?", path, key,
                        near);
  return tw_err_field(err, TW_E_INVALID, path, "%s.%s: unknown key", path, key);
}

static enum tw_rc cfg_rate(const char *name, const struct tw_node *n,
                           struct tw_meter_rate *r, struct tw_err *err) {
  static const char *const keys[] = {
      "granularity_s", "min_charge_s",      "discount_pct", "discount_kind",
      "commitment",    "discount_spot",     "egress_usd_per_gb",
      "chargeback",    "account_id",        "account_name",
      "account_type",  NULL};
  static const char *const commit_keys[] = {"id", "name", "type", "category",
                                            NULL};
  static const char *const cb_keys[] = {"vcpu_hour_usd", "gpu_hour_usd",
                                        "memory_gib_hour_usd", NULL};
  char path[160];
  snprintf(path, sizeof path, "billing.providers.%s", name);
  if (!TW_SET(r->name, name))
    return tw_err_field(err, TW_E_INVALID, path, "%s: name too long", path);
  r->granularity_s = r->min_charge_s = -1;
  if (n->kind == TW_NODE_NULL)
    return TW_OK;
  if (n->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s: expected a mapping, got %s", path,
                        tw_node_type_name(n));
  enum tw_rc rc;
  for (size_t i = 0; i < n->n; i++) {
    const char *k = n->keys[i];
    const struct tw_node *v = n->items[i];
    char kp[200];
    snprintf(kp, sizeof kp, "%s.%s", path, k);
    if (!strcmp(k, "granularity_s") || !strcmp(k, "min_charge_s")) {
      int64_t secs;
      bool gran = k[0] == 'g';
      if (!tw_node_as_int(v, &secs) || secs < (gran ? 1 : 0) || secs > 86400)
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected seconds from %d to 86400", kp,
                            gran ? 1 : 0);
      *(gran ? &r->granularity_s : &r->min_charge_s) = secs;
    } else if (!strcmp(k, "discount_pct")) {
      if (v->kind != TW_NODE_SCALAR || parse_pct_bp(v->str, &r->discount_bp))
        return tw_err_field(
            err, TW_E_INVALID, kp,
            "%s: expected a percentage from 0 to 100 with at most "
            "two decimals, got %s",
            kp, v->kind == TW_NODE_SCALAR ? v->str : tw_node_type_name(v));
    } else if (!strcmp(k, "discount_kind")) {
      if (v->kind != TW_NODE_SCALAR ||
          (strcmp(v->str, "negotiated") && strcmp(v->str, "commitment")))
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected negotiated or commitment", kp);
      r->commitment = !strcmp(v->str, "commitment");
    } else if (!strcmp(k, "account_id") || !strcmp(k, "account_name") ||
               !strcmp(k, "account_type")) {
      char *dst = k[8] == 'i' ? r->account_id
                  : k[8] == 'n' ? r->account_name
                                : r->account_type;
      size_t cap = k[8] == 'i'   ? sizeof r->account_id
                   : k[8] == 'n' ? sizeof r->account_name
                                 : sizeof r->account_type;
      if (v->kind != TW_NODE_SCALAR || !v->str[0] ||
          !tw_model_set(dst, cap, v->str))
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected text of 1 to %zu characters", kp,
                            cap - 1);
    } else if (!strcmp(k, "commitment")) {
      if (v->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected a mapping, got %s", kp,
                            tw_node_type_name(v));
      for (size_t j = 0; j < v->n; j++) {
        char cp[240];
        snprintf(cp, sizeof cp, "%s.%s", kp, v->keys[j]);
        const char *ck = v->keys[j];
        const struct tw_node *cv = v->items[j];
        char *dst = !strcmp(ck, "id")       ? r->commitment_id
                    : !strcmp(ck, "name")   ? r->commitment_name
                    : !strcmp(ck, "type")   ? r->commitment_type
                    : !strcmp(ck, "category") ? r->commitment_category
                                              : NULL;
        size_t cap = !strcmp(ck, "id")       ? sizeof r->commitment_id
                     : !strcmp(ck, "name")   ? sizeof r->commitment_name
                     : !strcmp(ck, "type")   ? sizeof r->commitment_type
                                             : sizeof r->commitment_category;
        if (!dst)
          return unknown_key(kp, ck, commit_keys, err);
        if (cv->kind != TW_NODE_SCALAR || !cv->str[0] ||
            !tw_model_set(dst, cap, cv->str))
          return tw_err_field(err, TW_E_INVALID, cp,
                              "%s: expected text of 1 to %zu characters", cp,
                              cap - 1);
        if (dst == r->commitment_category && strcmp(cv->str, "Spend") &&
            strcmp(cv->str, "Usage"))
          return tw_err_field(err, TW_E_INVALID, cp,
                              "%s: expected Spend or Usage, got %s", cp,
                              cv->str);
      }
    } else if (!strcmp(k, "discount_spot")) {
      if (!tw_node_as_bool(v, &r->discount_spot))
        return tw_err_field(err, TW_E_INVALID, kp, "%s: expected true or false",
                            kp);
    } else if (!strcmp(k, "egress_usd_per_gb")) {
      if ((rc = cfg_usd(v, kp, &r->egress_uusd_per_gb, err)))
        return rc;
    } else if (!strcmp(k, "chargeback")) {
      if (v->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected a mapping, got %s", kp,
                            tw_node_type_name(v));
      r->chargeback = true;
      for (size_t j = 0; j < v->n; j++) {
        char cp[240];
        snprintf(cp, sizeof cp, "%s.%s", kp, v->keys[j]);
        int64_t *slot =
            !strcmp(v->keys[j], "vcpu_hour_usd")  ? &r->vcpu_hour_uusd
            : !strcmp(v->keys[j], "gpu_hour_usd") ? &r->gpu_hour_uusd
            : !strcmp(v->keys[j], "memory_gib_hour_usd")
                ? &r->memory_gib_hour_uusd
                : NULL;
        if (!slot)
          return unknown_key(kp, v->keys[j], cb_keys, err);
        if ((rc = cfg_usd(v->items[j], cp, slot, err)))
          return rc;
      }
    } else {
      return unknown_key(path, k, keys, err);
    }
  }
  return TW_OK;
}

static enum tw_rc cfg_budget(size_t i, const struct tw_node *n,
                             struct tw_ledger_budget *b, struct tw_err *err) {
  static const char *const keys[] = {"tenant", "project", "limit_usd", NULL};
  char path[64];
  snprintf(path, sizeof path, "billing.budgets[%zu]", i);
  if (n->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s: expected a mapping, got %s", path,
                        tw_node_type_name(n));
  bool has_limit = false;
  enum tw_rc rc;
  for (size_t k = 0; k < n->n; k++) {
    const char *key = n->keys[k];
    const struct tw_node *v = n->items[k];
    char kp[96];
    snprintf(kp, sizeof kp, "%s.%s", path, key);
    if (!strcmp(key, "tenant") || !strcmp(key, "project")) {
      char *dst = key[0] == 't' ? b->tenant : b->project;
      if (v->kind != TW_NODE_SCALAR || !v->str[0] ||
          !tw_model_set(dst, TW_LEDGER_NAME_MAX, v->str))
        return tw_err_field(err, TW_E_INVALID, kp,
                            "%s: expected a name of 1 to %d characters", kp,
                            TW_LEDGER_NAME_MAX - 1);
    } else if (!strcmp(key, "limit_usd")) {
      if ((rc = cfg_usd(v, kp, &b->limit_uusd, err)))
        return rc;
      has_limit = true;
    } else {
      return unknown_key(path, key, keys, err);
    }
  }
  if (!has_limit)
    return tw_err_field(err, TW_E_INVALID, path, "%s: limit_usd is required",
                        path);
  if (b->project[0] && !b->tenant[0])
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s: a project budget needs its tenant", path);
  return TW_OK;
}

void tw_meter_cfg_release(struct tw_meter_cfg *c) {
  if (!c)
    return;
  free(c->rates);
  free(c->budgets);
  memset(c, 0, sizeof *c);
  c->charge_period_s = 3600;
}

enum tw_rc tw_meter_cfg_parse(const struct tw_node *n, struct tw_meter_cfg *out,
                              struct tw_err *err) {
  static const char *const keys[] = {"charge_period_s", "providers", "budgets",
                                     NULL};
  memset(out, 0, sizeof *out);
  out->charge_period_s = 3600;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  if (n->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "billing",
                        "billing: expected a mapping, got %s",
                        tw_node_type_name(n));
  enum tw_rc rc;
  for (size_t i = 0; i < n->n; i++) {
    const char *k = n->keys[i];
    const struct tw_node *v = n->items[i];
    if (!strcmp(k, "charge_period_s")) {
      int64_t p;
      if (!tw_node_as_int(v, &p) || p < 60 || p > 86400 || 86400 % p)
        return tw_err_field(
            err, TW_E_INVALID, "billing.charge_period_s",
            "billing.charge_period_s: expected seconds from 60 to "
            "86400 that divide a day (60, 300, 900, 3600, ...)");
      out->charge_period_s = p;
    } else if (!strcmp(k, "providers")) {
      if (v->kind == TW_NODE_NULL)
        continue;
      if (v->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, "billing.providers",
                            "billing.providers: expected a mapping of provider "
                            "names, got %s",
                            tw_node_type_name(v));
      out->rates = tw_calloc(v->n ? v->n : 1, sizeof *out->rates);
      for (size_t j = 0; j < v->n; j++) {
        if ((rc = cfg_rate(v->keys[j], v->items[j], &out->rates[j], err)))
          return rc;
        out->n_rates++;
      }
    } else if (!strcmp(k, "budgets")) {
      if (v->kind == TW_NODE_NULL)
        continue;
      if (v->kind != TW_NODE_SEQ)
        return tw_err_field(err, TW_E_INVALID, "billing.budgets",
                            "billing.budgets: expected a list, got %s",
                            tw_node_type_name(v));
      out->budgets = tw_calloc(v->n ? v->n : 1, sizeof *out->budgets);
      for (size_t j = 0; j < v->n; j++) {
        if ((rc = cfg_budget(j, v->items[j], &out->budgets[j], err)))
          return rc;
        for (size_t d = 0; d < j; d++)
          if (!strcmp(out->budgets[d].tenant, out->budgets[j].tenant) &&
              !strcmp(out->budgets[d].project, out->budgets[j].project)) {
            char path[64];
            snprintf(path, sizeof path, "billing.budgets[%zu]", j);
            return tw_err_field(
                err, TW_E_INVALID, path,
                "%s: the same tenant and project as budgets[%zu]", path, d);
          }
        out->n_budgets++;
      }
    } else {
      return unknown_key("billing", k, keys, err);
    }
  }
  return TW_OK;
}

const struct tw_meter_rate *tw_meter_cfg_rate(const struct tw_meter_cfg *c,
                                              const char *account,
                                              const char *provider) {
  for (size_t i = 0; account && i < c->n_rates; i++)
    if (!strcmp(c->rates[i].name, account))
      return &c->rates[i];
  for (size_t i = 0; provider && i < c->n_rates; i++)
    if (!strcmp(c->rates[i].name, provider))
      return &c->rates[i];
  return NULL;
}

static void cfg_copy(struct tw_meter_cfg *dst, const struct tw_meter_cfg *src) {
  memset(dst, 0, sizeof *dst);
  dst->charge_period_s =
      src && src->charge_period_s ? src->charge_period_s : 3600;
  if (!src)
    return;
  if (src->n_rates) {
    dst->rates = tw_malloc(src->n_rates * sizeof *dst->rates);
    memcpy(dst->rates, src->rates, src->n_rates * sizeof *dst->rates);
    dst->n_rates = src->n_rates;
  }
  if (src->n_budgets) {
    dst->budgets = tw_malloc(src->n_budgets * sizeof *dst->budgets);
    memcpy(dst->budgets, src->budgets, src->n_budgets * sizeof *dst->budgets);
    dst->n_budgets = src->n_budgets;
  }
}

/* The accounts' invoice ids and commitments, as FOCUS names them
 * (ledger_accounts), from the configured rates. */
static enum tw_rc store_accounts(struct tw_store *st,
                                 const struct tw_meter_cfg *c,
                                 struct tw_err *err) {
  size_t n = c ? c->n_rates : 0;
  struct tw_ledger_account *a = tw_calloc(n ? n : 1, sizeof *a);
  for (size_t i = 0; i < n; i++) {
    const struct tw_meter_rate *r = &c->rates[i];
    TW_SET(a[i].account, r->name);
    TW_SET(a[i].account_id, r->account_id);
    TW_SET(a[i].account_name, r->account_name);
    TW_SET(a[i].account_type, r->account_type);
    if (r->commitment) {
      if (r->commitment_id[0])
        TW_SET(a[i].commitment_id, r->commitment_id);
      else
        snprintf(a[i].commitment_id, sizeof a[i].commitment_id,
                 "%.63s-commitment", r->name);
      TW_SET(a[i].commitment_name, r->commitment_name[0] ? r->commitment_name
                                                         : a[i].commitment_id);
      TW_SET(a[i].commitment_type,
             r->commitment_type[0] ? r->commitment_type : "Commitment");
      TW_SET(a[i].commitment_category,
             r->commitment_category[0] ? r->commitment_category : "Spend");
    }
  }
  enum tw_rc rc = tw_ledger_accounts_set(st, a, n, err);
  free(a);
  return rc;
}

/* ---- the meter's state ------------------------------------------------ */

/* One attempt being metered. */
struct mst {
  int64_t attempt_id;
  char job_id[32];
  char tenant[TW_LEDGER_NAME_MAX], project[TW_LEDGER_NAME_MAX];
  char provider[64], account[64], region[64], zone[64], instance_type[64];
  char market[16], resource_id[128];
  int nodes;
  struct tw_bill_rule rule;
  int64_t price; /* list price per hour of the current period */
  /* the same in the provider's own currency (the offer's, millionths of
   * src_currency per hour), when it sells in another than USD */
  char src_currency[4];
  int64_t src_price;
  int64_t running_ms;
  int64_t metered_to_ms;
  int64_t billed_s; /* seconds charged so far (per node) */
  int64_t last_seq; /* the last row that charged something */
  bool running;     /* false: seen launching or provisioning only */
  bool seen;        /* live in the current pass */
  bool ended;       /* finished: dropped once written */
};

struct tw_meter {
  struct tw_store *store;
  struct tw_meter_cfg cfg;
  struct tw_clock *clock;
  tw_meter_offers_fn offers_fn;
  void *offers_ctx;
  struct tw_spec_cache *specs; /* borrowed; NULL: parsed when read */
  const struct tw_provider_ops *const *adapters; /* borrowed; may be NULL */
  struct tw_offer_list offers; /* as last listed */
  int64_t offers_at_ms, offers_ttl_ms, tick_ms;
  pthread_t thread;
  bool started, stopping;
  pthread_mutex_t run_mu; /* guards stopping */
  pthread_cond_t run_cv;
  pthread_mutex_t mu; /* guards the rest */
  struct mst *st;
  size_t n, cap;
  /* st's index by attempt id, rebuilt when st is compacted: every pass
   * looks up every live attempt, which a scan made quadratic */
  struct tw_idix ix;
  int64_t last_now;
  struct tw_meter_stats stats;
  /* tw_meter_tick's: the live attempts (ascending id) as the store has
   * them, kept from its changes (live_follow) rather than read whole
   * each tick.  Touched by the ticking thread only. */
  struct tw_live lv; /* its clock: the meter's */
  /* what the last tw_meter_observe left (under mu): the periods it
   * closed up to, whether it left anything to retry (a state not set up,
   * a batch not written), and whether tw_meter_tick made it (another
   * caller's lists are not the tick's) */
  int64_t obs_close_to;
  bool obs_clean, obs_by_tick;
};

/* The live attempts are read whole at the first tick, when the store no
 * longer holds every change since the last, and at least this often by
 * the meter's clock (what another process wrote on the same database,
 * a former leader's last writes: the store tells only its own). */
#define METER_LIVE_FULL_MS 10000

/* The index rebuilt over st[0..n). */
static void ix_build(struct tw_meter *m) {
  tw_idix_reset(&m->ix, m->n + 1);
  for (size_t k = 0; k < m->n; k++)
    tw_idix_put(&m->ix, m->st[k].attempt_id, k);
}

static struct mst *find_state(struct tw_meter *m, int64_t id) {
  size_t k = tw_idix_get(&m->ix, id);
  return k == SIZE_MAX ? NULL : &m->st[k];
}

/* The ended states dropped, the index rebuilt when any was: a pass that
 * dropped none costs nothing here. */
static void compact(struct tw_meter *m) {
  size_t w = 0;
  for (size_t i = 0; i < m->n; i++)
    if (!m->st[i].ended)
      m->st[w++] = m->st[i];
  if (w == m->n)
    return;
  m->n = w;
  ix_build(m);
}

static struct mst *add_state(struct tw_meter *m, int64_t id) {
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 32;
    m->st = tw_realloc(m->st, m->cap * sizeof *m->st);
  }
  struct mst *s = &m->st[m->n++];
  memset(s, 0, sizeof *s);
  s->attempt_id = id;
  tw_idix_put(&m->ix, id, m->n - 1);
  return s;
}

/* The state as the store keeps it, and back. */
static void to_progress(const struct mst *s,
                        struct tw_store_meter_progress *p) {
  memset(p, 0, sizeof *p);
  p->attempt_id = s->attempt_id;
  TW_SET(p->job_id, s->job_id);
  TW_SET(p->tenant, s->tenant);
  TW_SET(p->project, s->project);
  TW_SET(p->provider, s->provider);
  TW_SET(p->account, s->account);
  TW_SET(p->region, s->region);
  TW_SET(p->zone, s->zone);
  TW_SET(p->instance_type, s->instance_type);
  TW_SET(p->market, s->market);
  TW_SET(p->resource_id, s->resource_id);
  p->nodes = s->nodes;
  p->granularity_s = s->rule.granularity_s;
  p->min_charge_s = s->rule.min_charge_s;
  p->price_uusd_per_hour = s->price;
  p->running_ms = s->running_ms;
  p->metered_to_ms = s->metered_to_ms;
  p->billed_s = s->billed_s;
  p->last_seq = s->last_seq;
  p->ended = s->ended;
}

static void from_progress(const struct tw_store_meter_progress *p,
                          struct mst *s) {
  TW_SET(s->job_id, p->job_id);
  TW_SET(s->tenant, p->tenant);
  TW_SET(s->project, p->project);
  TW_SET(s->provider, p->provider);
  TW_SET(s->account, p->account);
  TW_SET(s->region, p->region);
  TW_SET(s->zone, p->zone);
  TW_SET(s->instance_type, p->instance_type);
  TW_SET(s->market, p->market);
  TW_SET(s->resource_id, p->resource_id);
  s->nodes = p->nodes;
  s->rule.granularity_s = p->granularity_s;
  s->rule.min_charge_s = p->min_charge_s;
  s->price = p->price_uusd_per_hour;
  s->running_ms = p->running_ms;
  s->metered_to_ms = p->metered_to_ms;
  s->billed_s = p->billed_s;
  s->last_seq = p->last_seq;
  s->running = true;
}

/* The attempts being metered when the daemon stopped. */
/* The reclaim part of the provider's published rule: not kept with the
 * progress, it is the adapter's (granularity and minimum are kept, as
 * they were resolved when the attempt started). */
static void reclaim_rule(const struct tw_meter *m, struct mst *s) {
  const struct tw_provider_info *info =
      tw_provider_info_find(m->adapters, s->provider);
  struct tw_bill_rule r;
  tw_bill_rule_resolve(info, 0, 0, NULL, &r);
  s->rule.reclaim_free_s = r.reclaim_free_s;
  s->rule.reclaim_minimum = r.reclaim_minimum;
}

static enum tw_rc load(struct tw_meter *m, struct tw_err *err) {
  struct tw_store_meter_progress *p;
  size_t n;
  enum tw_rc rc = tw_store_meter_open(m->store, &p, &n, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++) {
    struct mst *s = add_state(m, p[i].attempt_id);
    from_progress(&p[i], s);
    reclaim_rule(m, s);
  }
  free(p);
  return TW_OK;
}

enum tw_rc tw_meter_new(const struct tw_meter_opts *opts, struct tw_meter **out,
                        struct tw_err *err) {
  *out = NULL;
  enum tw_rc rc;
  struct tw_meter *m = tw_calloc(1, sizeof *m);
  m->store = opts->store;
  cfg_copy(&m->cfg, opts->cfg);
  m->clock = opts->clock ? opts->clock : tw_clock_real();
  m->offers_fn = opts->offers;
  m->specs = opts->specs;
  m->adapters = opts->adapters;
  m->offers_ctx = opts->offers_ctx;
  m->tick_ms = opts->tick_ms > 0 ? opts->tick_ms : 1000;
  m->offers_ttl_ms = opts->offers_ttl_ms > 0 ? opts->offers_ttl_ms : 300000;
  tw_offer_list_init(&m->offers);
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->run_mu, NULL);
  pthread_cond_init(&m->run_cv, NULL);
  if ((rc = load(m, err)) ||
      (rc = tw_ledger_budgets_set(m->store, m->cfg.budgets, m->cfg.n_budgets,
                                  err)) ||
      (rc = store_accounts(m->store, &m->cfg, err))) {
    tw_meter_free(m);
    return rc;
  }
  *out = m;
  return TW_OK;
}

void tw_meter_free(struct tw_meter *m) {
  if (!m)
    return;
  if (m->started) {
    pthread_mutex_lock(&m->run_mu);
    m->stopping = true;
    pthread_cond_signal(&m->run_cv);
    pthread_mutex_unlock(&m->run_mu);
    pthread_join(m->thread, NULL);
  }
  tw_meter_cfg_release(&m->cfg);
  tw_offer_list_release(&m->offers);
  free(m->st);
  tw_live_release(&m->lv);
  tw_idix_free(&m->ix);
  pthread_mutex_destroy(&m->mu);
  pthread_mutex_destroy(&m->run_mu);
  pthread_cond_destroy(&m->run_cv);
  free(m);
}

enum tw_rc tw_meter_set_cfg(struct tw_meter *m, const struct tw_meter_cfg *cfg,
                            struct tw_err *err) {
  pthread_mutex_lock(&m->mu);
  int64_t period = m->cfg.charge_period_s;
  tw_meter_cfg_release(&m->cfg);
  cfg_copy(&m->cfg, cfg);
  m->cfg.charge_period_s = period;
  pthread_mutex_unlock(&m->mu);
  enum tw_rc rc = tw_ledger_budgets_set(m->store, cfg ? cfg->budgets : NULL,
                                        cfg ? cfg->n_budgets : 0, err);
  return rc ? rc : store_accounts(m->store, cfg, err);
}

void tw_meter_stats(struct tw_meter *m, struct tw_meter_stats *out) {
  pthread_mutex_lock(&m->mu);
  *out = m->stats;
  out->open = 0;
  for (size_t i = 0; i < m->n; i++)
    out->open += m->st[i].running;
  pthread_mutex_unlock(&m->mu);
}

/* ---- charging -------------------------------------------------------------
 */

/* Rows and the attempt's new progress, written together. */
struct work {
  struct mst next; /* the state once written */
  struct tw_ledger_row *rows;
  size_t n_rows, cap_rows;
};

struct batch {
  struct work *w;
  size_t n, cap;
  int64_t now_ms;
};

static struct work *batch_add(struct batch *b, struct mst *s) {
  if (b->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 8;
    b->w = tw_realloc(b->w, b->cap * sizeof *b->w);
  }
  struct work *w = &b->w[b->n++];
  memset(w, 0, sizeof *w);
  w->next = *s;
  return w;
}

static void batch_release(struct batch *b) {
  for (size_t i = 0; i < b->n; i++)
    free(b->w[i].rows);
  free(b->w);
  memset(b, 0, sizeof *b);
}

static int64_t discount_bp(const struct tw_meter *m, const struct mst *s) {
  const struct tw_meter_rate *r =
      tw_meter_cfg_rate(&m->cfg, s->account, s->provider);
  if (!r || (!strcmp(s->market, "spot") && !r->discount_spot))
    return 0;
  return r->discount_bp;
}

static struct tw_ledger_row *work_row(struct work *w) {
  if (w->n_rows == w->cap_rows) {
    w->cap_rows = w->cap_rows ? w->cap_rows * 2 : 4;
    w->rows = tw_realloc(w->rows, w->cap_rows * sizeof *w->rows);
  }
  struct tw_ledger_row *r = &w->rows[w->n_rows++];
  memset(r, 0, sizeof *r);
  const struct mst *s = &w->next;
  r->service = TW_SERVICE_COMPUTE;
  TW_SET(r->tenant, s->tenant);
  TW_SET(r->project, s->project);
  TW_SET(r->job_id, s->job_id);
  r->attempt_id = s->attempt_id;
  TW_SET(r->provider, s->provider);
  TW_SET(r->account, s->account);
  TW_SET(r->region, s->region);
  TW_SET(r->zone, s->zone);
  TW_SET(r->instance_type, s->instance_type);
  TW_SET(r->resource_id, s->resource_id);
  TW_SET(r->market, s->market);
  r->nodes = s->nodes;
  return r;
}

static void price_text(int64_t uusd, char *out, size_t n) {
  snprintf(out, n, "%s$%lld.%06lld", uusd < 0 ? "-" : "",
           (long long)(llabs(uusd) / 1000000),
           (long long)(llabs(uusd) % 1000000));
}

static void charge_row(const struct tw_meter *m, struct work *w, int64_t from,
                       int64_t to, int64_t seconds) {
  struct mst *s = &w->next;
  struct tw_ledger_row *r = work_row(w);
  r->start_ms = from;
  r->end_ms = to;
  r->usage_ms = to - from;
  r->quantity = seconds * s->nodes;
  r->unit_price_uusd = s->price;
  r->list_uusd = tw_bill_cost(s->price, r->quantity);
  r->discount_bp = discount_bp(m, s);
  r->effective_uusd = tw_bill_cost_at(s->price, r->quantity, r->discount_bp);
  const struct tw_meter_rate *rate =
      tw_meter_cfg_rate(&m->cfg, s->account, s->provider);
  r->commitment = r->discount_bp > 0 && rate && rate->commitment;
  if (s->src_currency[0] && s->src_price > 0) {
    /* the amount as the provider bills it, from its own price: kept, so a
     * later exchange rate restates nothing */
    TW_SET(r->source_currency, s->src_currency);
    r->source_effective_micro =
        tw_bill_cost_at(s->src_price, r->quantity, r->discount_bp);
  }
  char p[32];
  price_text(s->price, p, sizeof p);
  snprintf(r->description, sizeof r->description,
           "%s %s in %s: %lld s x %d node%s at %s/h", s->instance_type,
           s->market, s->zone[0] ? s->zone : s->region, (long long)seconds,
           s->nodes, s->nodes == 1 ? "" : "s", p);
}

/* Charges w's attempt from where it stands up to `upto`, period by period.
 * With phase RUNNING upto is a period boundary; otherwise it is the end,
 * and what the end's rule charges beyond the periods (the minimum) or
 * credits (units charged ahead of a reclaimed spot attempt) follows. */
static void advance(const struct tw_meter *m, struct work *w, int64_t upto,
                    enum tw_bill_phase phase, int64_t next_price,
                    int64_t next_src) {
  struct mst *s = &w->next;
  int64_t p = m->cfg.charge_period_s * 1000;
  int64_t t = s->metered_to_ms;
  while (t < upto) {
    int64_t b = (t / p + 1) * p;
    if (b > upto)
      b = upto;
    enum tw_bill_phase ph = b == upto ? phase : TW_BILL_RUNNING;
    int64_t due =
        tw_bill_seconds(&s->rule, b - s->running_ms, ph) - s->billed_s;
    if (due < 0)
      due = 0; /* credited below, as an adjustment */
    charge_row(m, w, t, b, due);
    s->billed_s += due;
    t = b;
    /* the price in force for the period that starts here */
    if (t % p == 0 && next_price > 0) {
      s->price = next_price;
      if (next_src > 0)
        s->src_price = next_src;
    }
  }
  if (t > s->metered_to_ms)
    s->metered_to_ms = t;
  if (phase == TW_BILL_RUNNING)
    return;
  int64_t end = upto;
  int64_t diff =
      tw_bill_seconds(&s->rule, end - s->running_ms, phase) - s->billed_s;
  if (diff > 0) {
    charge_row(m, w, end, end, diff);
  } else if (diff < 0) {
    charge_row(m, w, end, end, diff);
    struct tw_ledger_row *r = &w->rows[w->n_rows - 1];
    r->category = TW_CHARGE_ADJUSTMENT;
    r->correction = true;
    r->usage_ms = 0;
    snprintf(r->description, sizeof r->description,
             "Credit of %lld s charged ahead: spot capacity reclaimed by the "
             "provider is charged to the second",
             (long long)-diff);
  }
  s->billed_s += diff;
  s->ended = true;
}

/* Writes the batch; on success the in-memory states take the new
 * progress and ended attempts are dropped.  On failure nothing changes,
 * and the next pass computes the same rows again. */
static void batch_commit(struct tw_meter *m, struct batch *b) {
  if (!b->n)
    return;
  struct tw_err err = {0};
  struct tw_store_meter_work *sw = tw_calloc(b->n, sizeof *sw);
  struct tw_store_meter_progress *sp = tw_calloc(b->n, sizeof *sp);
  enum tw_rc rc = TW_OK;
  for (size_t i = 0; i < b->n && !rc; i++) {
    to_progress(&b->w[i].next, &sp[i]);
    sp[i].discount_bp = discount_bp(m, &b->w[i].next);
    sw[i].rows = b->w[i].rows;
    sw[i].n_rows = b->w[i].n_rows;
    sw[i].progress = &sp[i];
    rc = tw_ledger_check(sw[i].rows, sw[i].n_rows, &err);
  }
  if (!rc)
    rc = tw_store_meter_commit(m->store, sw, b->n, b->now_ms, &err);
  for (size_t i = 0; i < b->n && !rc; i++)
    b->w[i].next.last_seq = sp[i].last_seq;
  free(sw);
  free(sp);
  if (rc) {
    m->stats.errors++;
    m->obs_clean = false; /* the same rows again next pass */
    tw_log_warn("billing",
                "attempts=%zu metering not written, retried next pass: %s",
                b->n, err.msg);
    return;
  }
  for (size_t i = 0; i < b->n; i++) {
    struct mst *live = find_state(m, b->w[i].next.attempt_id);
    m->stats.rows += b->w[i].n_rows;
    if (live)
      *live = b->w[i].next;
    if (b->w[i].next.ended)
      m->stats.attempts++;
  }
  compact(m);
}

/* ---- following attempts ----------------------------------------------------
 */

static const struct tw_offer *find_offer(const struct tw_offer *o, size_t n,
                                         const char *id) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(o[i].id, id))
      return &o[i];
  return NULL;
}

/* Whether o is priced in a currency of its own (not USD). */
static bool src_priced(const struct tw_offer *o) {
  return o && o->price_currency[0] && strcmp(o->price_currency, "USD") &&
         o->price_micro_per_hour > 0;
}

/* Sets up metering of an attempt seen running for the first time: who
 * pays (the job's tenant and project), how many nodes, where, and under
 * which rule (the offer's, when it is still listed; else per second). */
static bool start_state(struct tw_meter *m, struct mst *s,
                        const struct tw_attempt_rec *a,
                        const struct tw_offer *offers, size_t n_offers) {
  struct tw_err err = {0};
  struct tw_job_rec job;
  if (tw_store_job_get(m->store, a->job_id, &job, &err)) {
    tw_log_warn("billing", "attempt=%lld job=%s not metered yet: %s",
                (long long)a->id, a->job_id, err.msg);
    return false;
  }
  int nodes = 1;
  const struct tw_job_spec *spec =
      job.spec_json ? tw_spec_cache_acquire(m->specs, &job, &err) : NULL;
  if (spec) {
    nodes = spec->nodes > 0 ? spec->nodes : 1;
    tw_spec_cache_release(m->specs, spec);
  }
  TW_SET(s->job_id, a->job_id);
  tw_model_set(s->tenant, sizeof s->tenant, job.tenant);
  tw_model_set(s->project, sizeof s->project, job.project);
  tw_job_rec_release(&job);
  s->nodes = nodes;
  TW_SET(s->account, a->provider);
  TW_SET(s->market, a->market);
  TW_SET(s->resource_id, a->instance_id);
  s->price = a->price_uusd_per_hour;
  const struct tw_offer *o = find_offer(offers, n_offers, a->offer_id);
  if (o) {
    TW_SET(s->provider, o->provider);
    TW_SET(s->region, o->region);
    TW_SET(s->zone, o->zone);
    TW_SET(s->instance_type, o->instance_type);
  } else {
    /* "account:region:zone:type:market" */
    char buf[192], *f[5] = {0};
    snprintf(buf, sizeof buf, "%s", a->offer_id);
    int nf = 0;
    for (char *t = buf; t && nf < 5;) {
      f[nf++] = t;
      t = strchr(t, ':');
      if (t)
        *t++ = '\0';
    }
    TW_SET(s->provider, a->provider);
    if (nf == 5) {
      TW_SET(s->region, f[1]);
      TW_SET(s->zone, f[2]);
      TW_SET(s->instance_type, f[3]);
    }
  }
  const struct tw_meter_rate *r =
      tw_meter_cfg_rate(&m->cfg, s->account, s->provider);
  /* the rule: published by the adapter, as the offer carries it (the
   * catalog's for a private cluster), as configured here */
  tw_bill_rule_resolve(tw_provider_info_find(m->adapters, s->provider),
                       o ? o->billing_granularity_s : 0,
                       o ? o->min_charge_s : 0, r, &s->rule);
  if (r && r->chargeback && o) {
    /* a private cloud prices its own capacity by what the offer holds */
    int64_t gib_x1024 = o->memory_mib;
    s->price =
        o->vcpus * r->vcpu_hour_uusd + o->accel_count * r->gpu_hour_uusd +
        (int64_t)(((__int128)gib_x1024 * r->memory_gib_hour_uusd + 512) / 1024);
  } else if (src_priced(o)) {
    TW_SET(s->src_currency, o->price_currency);
    s->src_price = o->price_micro_per_hour;
  }
  s->running_ms = a->running_ms;
  s->metered_to_ms = a->running_ms;
  s->running = true;
  return true;
}

/* The price in force now for s's offer, or 0 when unknown; *src the same
 * in the offer's own currency (0: none).  A state without its source
 * price (one read back after a restart) takes the offer's now. */
static int64_t price_now(const struct tw_meter *m, struct mst *s,
                         const struct tw_offer *offers, size_t n_offers,
                         const char *offer_id, int64_t *src) {
  *src = 0;
  const struct tw_meter_rate *r =
      tw_meter_cfg_rate(&m->cfg, s->account, s->provider);
  if (r && r->chargeback)
    return s->price; /* chargeback rates are not market prices */
  const struct tw_offer *o =
      offer_id ? find_offer(offers, n_offers, offer_id) : NULL;
  if (src_priced(o)) {
    if (!s->src_currency[0]) {
      TW_SET(s->src_currency, o->price_currency);
      s->src_price = o->price_micro_per_hour;
    }
    if (!strcmp(s->src_currency, o->price_currency))
      *src = o->price_micro_per_hour;
  }
  return o ? o->price_uusd_per_hour : 0;
}

/* An attempt that left the live list: find how it ended. */
static bool ended_rec(struct tw_meter *m, const struct mst *s,
                      struct tw_attempt_rec *out) {
  struct tw_attempt_rec *all = NULL;
  size_t n = 0;
  struct tw_err err = {0};
  bool found = false;
  if (tw_store_attempts_of(m->store, s->job_id, &all, &n, &err) == TW_OK)
    for (size_t i = 0; i < n; i++)
      if (all[i].id == s->attempt_id) {
        *out = all[i];
        found = true;
      }
  free(all);
  return found;
}

void tw_meter_observe(struct tw_meter *m, const struct tw_attempt_rec *live,
                      size_t n_live, const struct tw_offer *offers,
                      size_t n_offers, int64_t now_ms) {
  pthread_mutex_lock(&m->mu);
  struct batch b = {.now_ms = now_ms};
  int64_t p = m->cfg.charge_period_s * 1000;
  /* Periods are closed only up to the previous pass: an attempt that ended
   * during this pass ended after that, so no period is charged past its
   * end. */
  int64_t close_to = m->last_now > 0 ? m->last_now / p * p : 0;
  m->last_now = now_ms;
  m->obs_close_to = close_to;
  m->obs_clean = true;
  m->obs_by_tick = false;
  for (size_t i = 0; i < m->n; i++)
    m->st[i].seen = false;

  for (size_t i = 0; i < n_live; i++) {
    const struct tw_attempt_rec *a = &live[i];
    struct mst *s = find_state(m, a->id);
    if (a->state != TW_ATTEMPT_RUNNING || !a->running_ms) {
      if (!s) {
        s = add_state(m, a->id);
        TW_SET(s->job_id, a->job_id);
      }
      s->seen = true;
      continue;
    }
    if (!s) {
      s = add_state(m, a->id);
      TW_SET(s->job_id, a->job_id);
    }
    s->seen = true;
    bool fresh = !s->running;
    if (fresh && !start_state(m, s, a, offers, n_offers)) {
      m->obs_clean = false;
      continue;
    }
    if (close_to > s->metered_to_ms) {
      struct work *w = batch_add(&b, s);
      int64_t src = 0;
      int64_t price = price_now(m, s, offers, n_offers, a->offer_id, &src);
      advance(m, w, close_to, TW_BILL_RUNNING, price, src);
    } else if (fresh) {
      /* its progress is stored from the start, rows or not: what it
       * accrues is read from there (tw_ledger_sum_now) */
      batch_add(&b, s);
    }
  }

  /* Tracked attempts no longer live have ended: charge them to the end. */
  for (size_t i = 0; i < m->n; i++) {
    struct mst *s = &m->st[i];
    if (s->seen)
      continue;
    struct tw_attempt_rec a;
    if (!ended_rec(m, s, &a) || a.state != TW_ATTEMPT_ENDED) {
      s->ended = true; /* vanished from the store: nothing to charge */
      continue;
    }
    if (!a.running_ms) {
      s->ended = true; /* never ran: providers do not bill */
      continue;
    }
    if (!s->running && !start_state(m, s, &a, offers, n_offers)) {
      m->obs_clean = false;
      continue;
    }
    enum tw_bill_phase ph =
        !strcmp(a.market, "spot") && !strcmp(a.end_reason, "interrupted")
            ? TW_BILL_RECLAIMED
            : TW_BILL_ENDED;
    int64_t end = a.ended_ms > s->running_ms ? a.ended_ms : s->running_ms;
    struct work *w = batch_add(&b, s);
    int64_t src = 0;
    int64_t price = price_now(m, s, offers, n_offers, a.offer_id, &src);
    advance(m, w, end, ph, price, src);
  }
  /* States ended without anything to write (never ran) are dropped here;
   * the others once their rows are durable (batch_commit). */
  compact(m);
  batch_commit(m, &b);
  batch_release(&b);
  pthread_mutex_unlock(&m->mu);
}

/* ---- the pass and its thread
 * ------------------------------------------------- */

/* The live attempts as the store has them now (broker/core/live.h):
 * read whole at the first tick, when its changes since the last are not
 * all known, and every METER_LIVE_FULL_MS; otherwise only the attempts
 * its changes name. */
static enum tw_rc live_follow(struct tw_meter *m, int64_t now, bool *changed,
                              struct tw_err *err) {
  struct tw_live_sync y;
  enum tw_rc rc =
      tw_live_sync(&m->lv, m->store, now, METER_LIVE_FULL_MS, &y, err);
  free(y.jobs); /* a job's end changes no attempt's time */
  *changed = y.changed;
  return rc;
}

void tw_meter_tick(struct tw_meter *m) {
  int64_t now = tw_clock_now_ms(m->clock);
  struct tw_err err = {0};
  bool changed = false;
  if (live_follow(m, now, &changed, &err)) {
    tw_log_warn("billing", "live attempts not read, metering waits: %s",
                err.msg);
    return;
  }
  /* Nothing changed since the tick's last pass, which left nothing to
   * retry, and no period closes now that it did not close then: the
   * pass would find every attempt as it left it and write nothing, so
   * only its time is kept (the next pass closes periods from it). */
  pthread_mutex_lock(&m->mu);
  int64_t p = m->cfg.charge_period_s * 1000;
  bool idle = !changed && m->obs_by_tick && m->obs_clean &&
              (m->last_now > 0 ? m->last_now / p * p : 0) == m->obs_close_to;
  if (idle)
    m->last_now = now;
  pthread_mutex_unlock(&m->mu);
  if (idle)
    return;
  const struct tw_attempt_rec *live = m->lv.at;
  size_t n_live = m->lv.n;
  /* The price in force matters when a period closes; list offers only
   * when something runs and the last listing is stale. */
  if (m->offers_fn && n_live &&
      (!m->offers_at_ms || now - m->offers_at_ms >= m->offers_ttl_ms)) {
    struct tw_offer_list fresh;
    tw_offer_list_init(&fresh);
    m->offers_fn(m->offers_ctx, &fresh);
    if (fresh.n) {
      tw_offer_list_release(&m->offers);
      m->offers = fresh;
    } else {
      tw_offer_list_release(&fresh); /* keep the last prices known */
    }
    m->offers_at_ms = now;
  }
  tw_meter_observe(m, live, n_live, m->offers.items, m->offers.n, now);
  pthread_mutex_lock(&m->mu);
  m->obs_by_tick = true;
  pthread_mutex_unlock(&m->mu);
}

static void *meter_main(void *arg) {
  struct tw_meter *m = arg;
  pthread_mutex_lock(&m->run_mu);
  while (!m->stopping) {
    pthread_mutex_unlock(&m->run_mu);
    tw_meter_tick(m);
    pthread_mutex_lock(&m->run_mu);
    if (m->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += m->tick_ms / 1000;
    ts.tv_nsec += (m->tick_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&m->run_cv, &m->run_mu, &ts);
  }
  pthread_mutex_unlock(&m->run_mu);
  return NULL;
}

enum tw_rc tw_meter_start(struct tw_meter *m, struct tw_err *err) {
  if (pthread_create(&m->thread, NULL, meter_main, m) != 0)
    return tw_err_set(err, TW_E_INTERNAL, "meter: cannot start its thread");
  m->started = true;
  return TW_OK;
}

/* ---- egress
 * ------------------------------------------------------------------ */

enum tw_rc tw_meter_egress(struct tw_meter *m, const struct tw_meter_egress *e,
                           struct tw_ledger_row *out, struct tw_err *err) {
  if (!e->tenant || !*e->tenant || !e->provider || !*e->provider ||
      e->bytes < 0 || e->price_uusd_per_gb < 0)
    return tw_err_set(
        err, TW_E_INVALID,
        "egress: tenant, provider and a byte count >= 0 are required");
  struct tw_ledger_row r;
  memset(&r, 0, sizeof r);
  pthread_mutex_lock(&m->mu);
  const struct tw_meter_rate *rate =
      tw_meter_cfg_rate(&m->cfg, e->account, e->provider);
  int64_t price = e->price_uusd_per_gb ? e->price_uusd_per_gb
                  : rate               ? rate->egress_uusd_per_gb
                                       : 0;
  int64_t bp = rate ? rate->discount_bp : 0;
  bool commitment = bp > 0 && rate && rate->commitment;
  pthread_mutex_unlock(&m->mu);
  bool ok = tw_model_set(r.tenant, sizeof r.tenant, e->tenant) &&
            tw_model_set(r.project, sizeof r.project,
                         e->project && *e->project ? e->project : "default") &&
            TW_SET(r.job_id, e->job_id) && TW_SET(r.provider, e->provider) &&
            TW_SET(r.account, e->account ? e->account : e->provider) &&
            TW_SET(r.region, e->region);
  if (!ok)
    return tw_err_set(err, TW_E_INVALID, "egress: a name is too long");
  r.service = TW_SERVICE_NETWORK;
  r.attempt_id = e->attempt_id;
  r.start_ms = r.end_ms = e->at_ms;
  r.nodes = 1;
  r.quantity = e->bytes;
  r.unit_price_uusd = price;
  r.list_uusd = div_round((__int128)e->bytes * price, 1000000000);
  /* at the discounted price per GB, rounded once (FOCUS ContractedCost) */
  r.effective_uusd =
      div_round((__int128)e->bytes * price * (10000 - bp), 10000000000000LL);
  r.discount_bp = bp;
  r.commitment = commitment;
  snprintf(r.description, sizeof r.description,
           "Data transfer %s -> %s: %lld bytes", e->region ? e->region : "",
           e->dest_region ? e->dest_region : "internet", (long long)e->bytes);
  enum tw_rc rc = tw_ledger_append(m->store, &r, 1, e->at_ms, err);
  if (rc == TW_OK) {
    pthread_mutex_lock(&m->mu);
    m->stats.rows++;
    pthread_mutex_unlock(&m->mu);
    if (out)
      *out = r;
  }
  return rc;
}
