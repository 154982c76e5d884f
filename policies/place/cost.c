/* cost.c - the cost model (cost.h). */
#include "policies/place/cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/core/spec.h"
#include "policies/place/inputs.h"
#include "policies/place/netmatrix.h"

/* 30 days: the Spot Advisor's month. */
#define MONTH_S (30LL * 86400)

void tw_cost_params_default(struct tw_cost_params *p) {
  p->default_duration_s = TW_COST_DEFAULT_DURATION_S;
  p->launch_overhead_s = 120;
  p->launch_overhead_private_s = 5;
  p->restart_overhead_s = 300;
  p->spot_default_interruption_pct = 10;
  p->transfer_round_trips = 3;
}

static int64_t ceil_div(__int128 a, int64_t b) {
  if (a <= 0)
    return 0;
  __int128 q = (a + b - 1) / b;
  return q > INT64_MAX ? INT64_MAX : (int64_t)q;
}

static int64_t sat_add(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int64_t tw_cost_egress_uusd(int64_t size_bytes, int64_t uusd_per_gb) {
  return ceil_div((__int128)size_bytes * uusd_per_gb, 1000000000);
}

int64_t tw_cost_transfer_s(int64_t size_bytes, int64_t rtt_us,
                           int64_t bandwidth_kbps, int round_trips) {
  if (bandwidth_kbps <= 0)
    bandwidth_kbps = 1;
  /* bits / (kbit/s) is ms; x1000 for us */
  __int128 us = (__int128)size_bytes * 8 * 1000 / bandwidth_kbps +
                (__int128)rtt_us * (round_trips > 0 ? round_trips : 0);
  return ceil_div(us, 1000000);
}

/* Seconds billed for a run of t seconds under the billing rules. */
static int64_t billed_s(int64_t t, int64_t granularity_s,
                        int64_t min_charge_s) {
  int64_t billed = t;
  if (min_charge_s > billed)
    billed = min_charge_s;
  if (granularity_s > 1)
    billed = (billed + granularity_s - 1) / granularity_s * granularity_s;
  return billed;
}

int64_t tw_cost_compute_uusd(const struct tw_offer *o, int64_t duration_s,
                             int nodes) {
  int64_t billed =
      billed_s(duration_s, o->billing_granularity_s, o->min_charge_s);
  return ceil_div((__int128)o->price_uusd_per_hour * billed *
                      (nodes > 0 ? nodes : 1),
                  3600);
}

void tw_cost_eval(const struct tw_cost_params *p, const struct tw_cost_job *j,
                  const struct tw_cost_offer *o, int64_t egress_uusd,
                  int64_t transfer_s, struct tw_cost *out) {
  memset(out, 0, sizeof *out);
  int64_t nodes = j->nodes > 0 ? j->nodes : 1;
  int64_t t = j->duration_s > 0 ? j->duration_s : p->default_duration_s;
  int64_t billed = billed_s(t, o->granularity_s, o->min_charge_s);
  out->compute_uusd =
      ceil_div((__int128)o->price_uusd_per_hour * billed * nodes, 3600);
  if (o->spot) {
    int64_t pct = o->interruption_pct >= 0 ? o->interruption_pct
                                           : p->spot_default_interruption_pct;
    int64_t ckpt =
        j->checkpoint_s > 0 && j->checkpoint_s < t ? j->checkpoint_s : t;
    int64_t loss = ckpt / 2 + p->restart_overhead_s;
    /* interruptions expected = nodes * t * pct / (100 * MONTH_S) */
    out->spot_extra_s =
        ceil_div((__int128)nodes * t * pct * loss, 100 * MONTH_S);
    out->spot_risk_uusd = ceil_div(
        (__int128)o->price_uusd_per_hour * out->spot_extra_s * nodes, 3600);
  }
  out->egress_uusd = egress_uusd > 0 ? egress_uusd : 0;
  out->transfer_s = transfer_s > 0 ? transfer_s : 0;
  out->transfer_uusd = ceil_div(
      (__int128)o->price_uusd_per_hour * out->transfer_s * nodes, 3600);
  out->total_uusd = sat_add(sat_add(out->compute_uusd, out->spot_risk_uusd),
                            sat_add(out->egress_uusd, out->transfer_uusd));
  out->finish_ms =
      j->now_ms +
      ((o->has_launch_overhead ? o->launch_overhead_s
        : o->private_capacity ? p->launch_overhead_private_s
                              : p->launch_overhead_s) +
       out->transfer_s + t + out->spot_extra_s) *
          1000;
}

int64_t tw_cost_lower_bound(const struct tw_cost_job *j, int64_t price,
                            int64_t egress_uusd, int64_t transfer_s) {
  int64_t nodes = j->nodes > 0 ? j->nodes : 1;
  __int128 v = (__int128)price * (j->duration_s + transfer_s) * nodes / 3600;
  int64_t lb = v > INT64_MAX ? INT64_MAX : (int64_t)v;
  return sat_add(lb, egress_uusd > 0 ? egress_uusd : 0);
}

/* ---- per-job data costs ----------------------------------------------------
 */

/* "aws:us-east-1:us-east-1a" -> "aws:us-east-1" */
static void region_of(const char *loc, char *out, size_t outsz) {
  const char *c = strchr(loc, ':');
  const char *c2 = c ? strchr(c + 1, ':') : NULL;
  size_t n = c2 ? (size_t)(c2 - loc) : strlen(loc);
  snprintf(out, outsz, "%.*s", (int)n, loc);
}

struct src {
  char region[160];
  int64_t extra_uusd;
};

bool tw_job_data_build(const struct tw_job_spec *spec,
                       const struct tw_dataset_set *datasets,
                       const struct tw_netmatrix *net,
                       const struct tw_cost_params *p,
                       const char *const *regions, size_t n,
                       tw_cost_rows_fn rows, void *rows_ctx,
                       struct tw_job_data *d) {
  memset(d, 0, sizeof *d);
  if (!spec->n_datasets)
    return false;
  struct tw_net_link *own = NULL;
  size_t used = 0;
  for (size_t k = 0; k < spec->n_datasets; k++) {
    const struct tw_dataset_ref *ref = &spec->datasets[k];
    const struct tw_dataset_info *info =
        datasets ? tw_dataset_set_find_for(datasets, ref->uri, spec->tenant)
                 : NULL;
    int64_t size = ref->size_bytes > 0 ? ref->size_bytes
                   : info              ? info->size_bytes
                                       : 0;
    struct src srcs[TW_DATASET_LOCATIONS_MAX + 1];
    size_t ns = 0;
    if (ref->location && *ref->location)
      region_of(ref->location, srcs[ns].region, sizeof srcs[ns].region),
          srcs[ns++].extra_uusd = 0;
    for (size_t l = 0; info && l < info->n_locations; l++) {
      char r[160];
      region_of(info->locations[l], r, sizeof r);
      size_t q;
      for (q = 0; q < ns && strcmp(srcs[q].region, r); q++)
        ;
      if (q < ns) {
        /* the same place twice: keep the cheaper way to read it */
        if (info->location_cost_uusd[l] < srcs[q].extra_uusd)
          srcs[q].extra_uusd = info->location_cost_uusd[l];
        continue;
      }
      snprintf(srcs[ns].region, sizeof srcs[ns].region, "%s", r);
      srcs[ns++].extra_uusd = info->location_cost_uusd[l];
    }
    if (!size || !ns)
      continue; /* nothing known to move: costs nothing in the model */
    if (!used) {
      d->n_regions = n;
      d->egress_uusd = tw_calloc(n ? n : 1, sizeof *d->egress_uusd);
      d->transfer_s = tw_calloc(n ? n : 1, sizeof *d->transfer_s);
      d->rtt_us = tw_calloc(n ? n : 1, sizeof *d->rtt_us);
      if (!rows)
        own = tw_malloc((n ? n : 1) * sizeof *own);
    }
    used++;
    if (strlen(d->source) < sizeof d->source - 64) {
      size_t len = strlen(d->source);
      snprintf(d->source + len, sizeof d->source - len, "%s%s (%lld B) at %s%s",
               len ? "; " : "", ref->uri, (long long)size, srcs[0].region,
               ns > 1 ? " and replicas" : "");
    }
    /* best source per region: cheapest egress, then fastest */
    int64_t *best_e = tw_malloc((n ? n : 1) * sizeof *best_e);
    int64_t *best_t = tw_malloc((n ? n : 1) * sizeof *best_t);
    int64_t *best_r = tw_malloc((n ? n : 1) * sizeof *best_r);
    for (size_t r = 0; r < n; r++)
      best_e[r] = INT64_MAX, best_t[r] = INT64_MAX, best_r[r] = 0;
    for (size_t q = 0; q < ns; q++) {
      const struct tw_net_link *row;
      if (rows) {
        row = rows(rows_ctx, srcs[q].region);
      } else {
        for (size_t r = 0; r < n; r++)
          tw_netmatrix_link(net, srcs[q].region, regions[r], &own[r]);
        row = own;
      }
      for (size_t r = 0; r < n; r++) {
        int64_t e, t;
        if (row[r].scope == TW_NET_SAME_REGION) {
          e = 0, t = 0;
        } else {
          e = tw_cost_egress_uusd(size, row[r].egress_uusd_per_gb);
          t = tw_cost_transfer_s(size, row[r].rtt_us, row[r].bandwidth_kbps,
                                 p->transfer_round_trips);
        }
        e = sat_add(e, srcs[q].extra_uusd);
        if (e < best_e[r] || (e == best_e[r] && t < best_t[r])) {
          best_e[r] = e, best_t[r] = t;
          best_r[r] = row[r].scope == TW_NET_SAME_REGION ? 0 : row[r].rtt_us;
        }
      }
    }
    for (size_t r = 0; r < n; r++) {
      d->egress_uusd[r] = sat_add(d->egress_uusd[r], best_e[r]);
      if (best_t[r] > d->transfer_s[r])
        d->transfer_s[r] = best_t[r];
      if (best_r[r] > d->rtt_us[r])
        d->rtt_us[r] = best_r[r];
    }
    free(best_e);
    free(best_t);
    free(best_r);
  }
  free(own);
  if (!used)
    return false;
  d->n_datasets = used;
  d->min_egress_uusd = INT64_MAX;
  d->min_transfer_s = INT64_MAX;
  for (size_t r = 0; r < n; r++) {
    if (d->egress_uusd[r] < d->min_egress_uusd)
      d->min_egress_uusd = d->egress_uusd[r];
    if (d->transfer_s[r] < d->min_transfer_s)
      d->min_transfer_s = d->transfer_s[r];
  }
  if (!n)
    d->min_egress_uusd = d->min_transfer_s = 0;
  return true;
}

void tw_job_data_release(struct tw_job_data *d) {
  free(d->egress_uusd);
  free(d->transfer_s);
  free(d->rtt_us);
  memset(d, 0, sizeof *d);
}
