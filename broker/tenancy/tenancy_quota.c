/* tenancy_quota.c - quotas: storage, admission, and the placement filter
 * with cohort borrowing and reclaim (see tenancy.h).
 *
 * What a tenant holds is the sum of its reservations, one per job with a
 * live attempt: the offer's vCPUs and accelerators times the job's nodes,
 * and whether it is on spot.  A reservation is written right before the
 * attempt is opened and dropped at the first placement phase that finds
 * the job without a live attempt, so an attempt that ends (completed,
 * interrupted, cancelled, failed, preempted) gives its share back without
 * anybody having to remember to, and a crash loses nothing.
 *
 * Cohorts, after Kueue: a cohort's capacity in a resource is the sum of
 * its members' limits.  A member may go above its own limit, up to limit
 * + borrow, while the cohort as a whole stays within its capacity.  A
 * member asking for no more than its own limit is always entitled to it:
 * when the cohort is full because others borrowed, the borrowers' newest
 * attempts are preempted until it fits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/core/job.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_tenancy.h"
#include "broker/tenancy/tenancy_int.h"
#include "policies/place/plan.h"
#include "providers/provider.h"

void tw_quota_init(struct tw_quota *q) {
  memset(q, 0, sizeof *q);
  q->vcpus.limit = -1;
  q->jobs.limit = -1;
  q->spot_share_pct = 100;
}

/* ---- storage --------------------------------------------------------------
 */

static struct tw_quota *find_q(struct tw_quota *qs, size_t n,
                               const char *tenant) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(qs[i].tenant, tenant))
      return &qs[i];
  return NULL;
}

/* The store's rows as quotas: a limit without a row is unlimited. */
static struct tw_quota *quotas_from(const struct tw_store_quotas *r,
                                    size_t *n) {
  struct tw_quota *items =
      r->n_tenants ? tw_calloc(r->n_tenants, sizeof *items) : NULL;
  for (size_t i = 0; i < r->n_tenants; i++) {
    struct tw_quota *q = &items[i];
    tw_quota_init(q);
    snprintf(q->tenant, sizeof q->tenant, "%s", r->tenants[i].tenant);
    snprintf(q->cohort, sizeof q->cohort, "%s", r->tenants[i].cohort);
    q->spot_share_pct = r->tenants[i].spot_share_pct;
    q->version = r->tenants[i].version;
  }
  for (size_t i = 0; i < r->n_rows; i++) {
    const struct tw_store_quota_row *w = &r->rows[i];
    struct tw_quota *q = find_q(items, r->n_tenants, w->tenant);
    if (!q)
      continue;
    struct tw_quota_limit l = {w->limit, w->borrow};
    if (!strcmp(w->resource, "vcpus"))
      q->vcpus = l;
    else if (!strcmp(w->resource, "jobs"))
      q->jobs = l;
    else if (!strncmp(w->resource, "gpu:", 4) &&
             q->n_gpus < TW_QUOTA_GPU_TYPES) {
      struct tw_quota_gpu *g = &q->gpus[q->n_gpus++];
      snprintf(g->name, sizeof g->name, "%.31s", w->resource + 4);
      g->q = l;
    }
  }
  *n = r->n_tenants;
  return items;
}

enum tw_rc tn_load_all_quotas(struct tw_tenancy *t, struct tw_quota **out,
                              size_t *n, struct tw_err *err) {
  struct tw_store_quotas r;
  enum tw_rc rc = tw_store_quotas_get(t->store, NULL, &r, err);
  if (rc)
    return rc;
  *out = quotas_from(&r, n);
  tw_store_quotas_release(&r);
  return TW_OK;
}

enum tw_rc tw_tenancy_quota_get(struct tw_tenancy *t, const char *tenant,
                                struct tw_quota *out, struct tw_err *err) {
  struct tw_store_quotas r;
  enum tw_rc rc = tw_store_quotas_get(t->store, tenant, &r, err);
  if (rc)
    return rc;
  size_t n = 0;
  struct tw_quota *items = quotas_from(&r, &n);
  tw_store_quotas_release(&r);
  if (n == 0)
    rc = tw_err_set(err, TW_E_NOTFOUND, "tenant %s not found", tenant);
  else
    *out = items[0];
  free(items);
  return rc;
}

static enum tw_rc check_limit(const char *name, const struct tw_quota_limit *l,
                              struct tw_err *err) {
  if (l->limit < -1 || l->limit > 100000000)
    return tw_err_field(err, TW_E_INVALID, name,
                        "%s: limit must be 0 to 100000000 (or absent for "
                        "unlimited), got %" PRId64,
                        name, l->limit);
  if (l->borrow < 0 || l->borrow > 100000000)
    return tw_err_field(err, TW_E_INVALID, name,
                        "%s: borrow must be 0 to 100000000, got %" PRId64, name,
                        l->borrow);
  return TW_OK;
}

static enum tw_rc check_quota(const struct tw_quota *q, struct tw_err *err) {
  enum tw_rc rc;
  if ((rc = check_limit("vcpus", &q->vcpus, err)) ||
      (rc = check_limit("jobs", &q->jobs, err)))
    return rc;
  if (q->n_gpus > TW_QUOTA_GPU_TYPES)
    return tw_err_field(err, TW_E_INVALID, "gpus", "gpus: at most %d types",
                        TW_QUOTA_GPU_TYPES);
  for (size_t i = 0; i < q->n_gpus; i++) {
    const char *n = q->gpus[i].name;
    char path[64];
    snprintf(path, sizeof path, "gpus.%s", n);
    if (strcmp(n, "*") && !tw_tenancy_name_ok(n))
      return tw_err_field(
          err, TW_E_INVALID, "gpus",
          "gpus: \"%s\" is not an accelerator name (or \"*\" for all)", n);
    for (size_t k = 0; k < i; k++)
      if (!strcasecmp(q->gpus[k].name, n))
        return tw_err_field(err, TW_E_INVALID, path, "%s: given twice", path);
    if ((rc = check_limit(path, &q->gpus[i].q, err)))
      return rc;
  }
  if (q->spot_share_pct < 0 || q->spot_share_pct > 100)
    return tw_err_field(err, TW_E_INVALID, "spot_share_pct",
                        "spot_share_pct: expected 0 to 100, got %d",
                        q->spot_share_pct);
  if (q->cohort[0] && !tw_tenancy_name_ok(q->cohort))
    return tw_err_field(err, TW_E_INVALID, "cohort",
                        "cohort: expected 1 to 63 of [A-Za-z0-9._-]");
  return TW_OK;
}

/* Appends l as row res unless it is unlimited (no row). */
static void add_row(struct tw_store_quota_row *rows, size_t *n, const char *res,
                    const struct tw_quota_limit *l) {
  if (l->limit < 0)
    return;
  struct tw_store_quota_row *w = &rows[(*n)++];
  memset(w, 0, sizeof *w);
  snprintf(w->resource, sizeof w->resource, "%s", res);
  w->limit = l->limit;
  w->borrow = l->borrow;
}

enum tw_rc tw_tenancy_quota_set(struct tw_tenancy *t, const char *tenant,
                                const struct tw_quota *q, int64_t if_version,
                                struct tw_quota *out, struct tw_err *err) {
  enum tw_rc rc = check_quota(q, err);
  if (rc)
    return rc;
  struct tw_store_quota_row rows[2 + TW_QUOTA_GPU_TYPES];
  size_t nr = 0;
  add_row(rows, &nr, "vcpus", &q->vcpus);
  add_row(rows, &nr, "jobs", &q->jobs);
  for (size_t i = 0; i < q->n_gpus; i++) {
    char res[48];
    snprintf(res, sizeof res, "gpu:%s", q->gpus[i].name);
    add_row(rows, &nr, res, &q->gpus[i].q);
  }
  struct tw_store_quota_set set = {.tenant = tenant,
                                   .cohort = q->cohort,
                                   .spot_share_pct = q->spot_share_pct,
                                   .rows = rows,
                                   .n_rows = nr,
                                   .if_version = if_version};
  struct tw_store_quotas r;
  rc = tw_store_quota_set(t->store, &set, &r, err);
  if (rc)
    return rc;
  tn_cache_changed(t);
  size_t n = 0;
  struct tw_quota *items = quotas_from(&r, &n);
  tw_store_quotas_release(&r);
  if (n == 1 && out)
    *out = items[0];
  free(items);
  tw_log_info("tenancy", "tenant=%s quota set", tenant);
  return TW_OK;
}

/* ---- admission -------------------------------------------------------------
 */

static void fmt_limit(const struct tw_quota_limit *l, bool cohort, char *out,
                      size_t outsz) {
  if (cohort && l->borrow)
    snprintf(out, outsz, "%" PRId64 " (+%" PRId64 " borrowable)", l->limit,
             l->borrow);
  else
    snprintf(out, outsz, "%" PRId64, l->limit);
}

enum tw_rc tn_quota_admit(struct tw_tenancy *t, const struct tw_job_spec *spec,
                          struct tw_err *err) {
  struct tw_quota q;
  if (!tn_cache_quota(t, spec->tenant, &q))
    return TW_OK; /* a tenant nobody configured has no quota */
  bool cohort = q.cohort[0] != '\0';
  int nodes = spec->nodes > 0 ? spec->nodes : 1;
  char lim[64];
  if (q.jobs.limit == 0)
    return tw_err_field(err, TW_E_QUOTA, "quota.jobs",
                        "quota jobs of tenant %s: the limit is 0 jobs at once",
                        q.tenant);
  if (spec->cpus > 0 && q.vcpus.limit >= 0) {
    int64_t need = (int64_t)spec->cpus * nodes;
    int64_t most = q.vcpus.limit + (cohort ? q.vcpus.borrow : 0);
    if (need > most) {
      fmt_limit(&q.vcpus, cohort, lim, sizeof lim);
      return tw_err_field(err, TW_E_QUOTA, "quota.vcpus",
                          "quota vcpus of tenant %s: the job needs %" PRId64
                          " vCPUs (%d node%s x %d), the limit is %s",
                          q.tenant, need, nodes, nodes > 1 ? "s" : "",
                          spec->cpus, lim);
    }
  }
  if (spec->accel_name && spec->accel_count > 0)
    for (size_t i = 0; i < q.n_gpus; i++) {
      const struct tw_quota_gpu *g = &q.gpus[i];
      if (g->q.limit < 0 || (strcmp(g->name, "*") &&
                             !tw_accel_matches(g->name, spec->accel_name)))
        continue;
      int64_t need = (int64_t)spec->accel_count * nodes;
      int64_t most = g->q.limit + (cohort ? g->q.borrow : 0);
      if (need > most) {
        char field[64];
        snprintf(field, sizeof field, "quota.gpus.%s", g->name);
        fmt_limit(&g->q, cohort, lim, sizeof lim);
        return tw_err_field(err, TW_E_QUOTA, field,
                            "quota gpus.%s of tenant %s: the job needs %" PRId64
                            " %s (%d node%s x %d), the limit is %s",
                            g->name, q.tenant, need, spec->accel_name, nodes,
                            nodes > 1 ? "s" : "", spec->accel_count, lim);
      }
    }
  if (spec->market == TW_MARKET_SPOT && q.spot_share_pct == 0)
    return tw_err_field(
        err, TW_E_QUOTA, "quota.spot_share_pct",
        "quota spot_share_pct of tenant %s is 0%%: the job asks "
        "for spot only",
        q.tenant);
  return TW_OK;
}

/* ---- placement
 * ---------------------------------------------------------------- */

/* ---- the reservations in memory ----------------------------------------
 *
 * A phase does not read every reservation again: what each tenant holds
 * is kept between phases.  The reservations this process makes are added
 * as it makes them (place_hold), and a phase looks only at the jobs whose
 * attempts the store's change feed names since the last phase, and at the
 * jobs reserved for meanwhile: one with no live attempt left gives its
 * share back (its row is deleted), one with a live attempt is matched to
 * the first (its instance, for a preemption).  So a phase costs what
 * changed, not what is held.
 *
 * Everything is read afresh, the reservations from the store and the
 * live attempts from the scheduler, where the scheduler does it too: at
 * the first phase, when the feed no longer reaches back to the last one,
 * and every TN_FULL_MS, because other replicas' writes (a former leader's)
 * are not in this process's feed; also when the live attempts the
 * scheduler hands over are not as many as those followed here (someone
 * else's write it has read already). */

#define TN_FULL_MS 10000

/* src into dst[n], cut as snprintf would cut it. */
static void cut_set(char *dst, size_t n, const char *src) {
  size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}
#define CUT_SET(dst, src) cut_set((dst), sizeof(dst), (src))

static uint64_t job_hash(const char *id) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *id; id++)
    h = (h ^ (unsigned char)*id) * 1099511628211ull;
  return h;
}

static size_t ix_home(uint64_t key, size_t mask) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
}

static void ix_reset(struct tn_ix *x, size_t want) {
  size_t cap = 64;
  while (cap < want * 2)
    cap *= 2;
  free(x->slot);
  x->slot = tw_calloc(cap, sizeof *x->slot);
  x->cap = cap;
  x->n = 0;
}

static void ix_place(struct tn_ix_slot *sl, size_t mask, uint64_t key,
                     size_t pos1) {
  size_t i = ix_home(key, mask);
  while (sl[i].pos1)
    i = (i + 1) & mask;
  sl[i].key = key;
  sl[i].pos1 = pos1;
}

static void ix_put(struct tn_ix *x, uint64_t key, size_t pos) {
  if ((x->n + 1) * 2 > x->cap) {
    struct tn_ix_slot *old = x->slot;
    size_t old_cap = x->cap;
    x->slot = NULL;
    ix_reset(x, 2 * (x->n + 1));
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].pos1) {
        ix_place(x->slot, x->cap - 1, old[i].key, old[i].pos1);
        x->n++;
      }
    free(old);
  }
  ix_place(x->slot, x->cap - 1, key, pos + 1);
  x->n++;
}

/* The next entry of key after slot *it (*it SIZE_MAX: the first), its
 * slot in *it; its position, or SIZE_MAX when there is none. */
static size_t ix_next(const struct tn_ix *x, uint64_t key, size_t *it) {
  if (!x->cap)
    return SIZE_MAX;
  size_t mask = x->cap - 1;
  size_t i = *it == SIZE_MAX ? ix_home(key, mask) : (*it + 1) & mask;
  for (; x->slot[i].pos1; i = (i + 1) & mask)
    if (x->slot[i].key == key) {
      *it = i;
      return x->slot[i].pos1 - 1;
    }
  return SIZE_MAX;
}

/* The slot of entry (key, pos), or SIZE_MAX. */
static size_t ix_slot(const struct tn_ix *x, uint64_t key, size_t pos) {
  size_t it = SIZE_MAX, p;
  while ((p = ix_next(x, key, &it)) != SIZE_MAX)
    if (p == pos)
      return it;
  return SIZE_MAX;
}

/* Removes entry (key, pos); the entries after it in its run move back so
 * that every one stays reachable from its home slot. */
static void ix_del(struct tn_ix *x, uint64_t key, size_t pos) {
  size_t i = ix_slot(x, key, pos);
  if (i == SIZE_MAX)
    return;
  size_t mask = x->cap - 1;
  x->slot[i].pos1 = 0;
  x->n--;
  for (size_t j = (i + 1) & mask; x->slot[j].pos1; j = (j + 1) & mask) {
    size_t h = ix_home(x->slot[j].key, mask);
    /* j stays unless its home lies cyclically outside (i, j] */
    bool stays = i < j ? (h > i && h <= j) : (h > i || h <= j);
    if (stays)
      continue;
    x->slot[i] = x->slot[j];
    x->slot[j].pos1 = 0;
    i = j;
  }
}

/* Entry (key, from) now at position to. */
static void ix_move(struct tn_ix *x, uint64_t key, size_t from, size_t to) {
  size_t i = ix_slot(x, key, from);
  if (i != SIZE_MAX)
    x->slot[i].pos1 = to + 1;
}

/* Where job_id's reservation is in t->resv, or SIZE_MAX. */
static size_t resv_find(const struct tw_tenancy *t, const char *job_id) {
  uint64_t h = job_hash(job_id);
  size_t it = SIZE_MAX, p;
  while ((p = ix_next(&t->resv_ix, h, &it)) != SIZE_MAX)
    if (!strcmp(t->resv[p].job_id, job_id))
      return p;
  return SIZE_MAX;
}

static void resv_add(struct tw_tenancy *t, const struct tn_resv *v) {
  if (t->n_resv == t->cap_resv) {
    t->cap_resv = t->cap_resv ? 2 * t->cap_resv : 16;
    t->resv = tw_realloc(t->resv, t->cap_resv * sizeof *t->resv);
  }
  t->resv[t->n_resv] = *v;
  ix_put(&t->resv_ix, job_hash(v->job_id), t->n_resv);
  t->n_resv++;
}

/* Reservation i out of memory (the last one takes its place). */
static void resv_forget(struct tw_tenancy *t, size_t i) {
  size_t last = t->n_resv - 1;
  ix_del(&t->resv_ix, job_hash(t->resv[i].job_id), i);
  if (i != last) {
    ix_move(&t->resv_ix, job_hash(t->resv[last].job_id), last, i);
    t->resv[i] = t->resv[last];
  }
  t->n_resv--;
}

/* Reservation i given back: its row deleted, and out of memory. */
static void resv_drop(struct tw_tenancy *t, size_t i) {
  struct tw_err err = {0};
  if (tw_store_reservation_delete(t->store, t->resv[i].job_id, &err))
    tw_log_warn("tenancy", "job=%s reservation not dropped: %s",
                t->resv[i].job_id, err.msg);
  resv_forget(t, i);
}

static size_t att_find(const struct tw_tenancy *t, int64_t id) {
  size_t it = SIZE_MAX;
  return ix_next(&t->att_ix, (uint64_t)id, &it);
}

static void att_add(struct tw_tenancy *t, const struct tw_attempt_rec *a) {
  if (t->n_att == t->cap_att) {
    t->cap_att = t->cap_att ? 2 * t->cap_att : 64;
    t->att = tw_realloc(t->att, t->cap_att * sizeof *t->att);
  }
  struct tn_att *e = &t->att[t->n_att];
  e->id = a->id;
  CUT_SET(e->job_id, a->job_id);
  ix_put(&t->att_ix, (uint64_t)e->id, t->n_att);
  ix_put(&t->att_job_ix, job_hash(e->job_id), t->n_att);
  t->n_att++;
}

static void att_remove(struct tw_tenancy *t, size_t k) {
  size_t last = t->n_att - 1;
  ix_del(&t->att_ix, (uint64_t)t->att[k].id, k);
  ix_del(&t->att_job_ix, job_hash(t->att[k].job_id), k);
  if (k != last) {
    const struct tn_att *l = &t->att[last];
    ix_move(&t->att_ix, (uint64_t)l->id, last, k);
    ix_move(&t->att_job_ix, job_hash(l->job_id), last, k);
    t->att[k] = *l;
  }
  t->n_att--;
}

/* Attempt id in live[0..n) (ascending ids), or NULL. */
static const struct tw_attempt_rec *
live_find(const struct tw_attempt_rec *live, size_t n, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (live[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && live[lo].id == id ? &live[lo] : NULL;
}

/* The first (lowest id) of job_id's live attempts, or NULL. */
static const struct tw_attempt_rec *
job_first_live(const struct tw_tenancy *t, const char *job_id,
               const struct tw_attempt_rec *live, size_t n_live) {
  uint64_t h = job_hash(job_id);
  size_t it = SIZE_MAX, p;
  const struct tw_attempt_rec *first = NULL;
  while ((p = ix_next(&t->att_job_ix, h, &it)) != SIZE_MAX) {
    if (strcmp(t->att[p].job_id, job_id) ||
        (first && t->att[p].id > first->id))
      continue;
    const struct tw_attempt_rec *at = live_find(live, n_live, t->att[p].id);
    if (at)
      first = at;
  }
  return first;
}

/* Reservation i matched to its job's first live attempt; when it has
 * none, given back (false). */
static bool resv_settle(struct tw_tenancy *t, size_t i,
                        const struct tw_attempt_rec *live, size_t n_live) {
  struct tn_resv *v = &t->resv[i];
  const struct tw_attempt_rec *at =
      job_first_live(t, v->job_id, live, n_live);
  if (!at) {
    resv_drop(t, i); /* its attempt ended: the share is given back */
    return false;
  }
  v->attempt_id = at->id;
  CUT_SET(v->instance_id, at->instance_id);
  CUT_SET(v->provider, at->provider);
  return true;
}

void tn_resv_free(struct tw_tenancy *t) {
  free(t->resv);
  free(t->resv_ix.slot);
  free(t->att);
  free(t->att_ix.slot);
  free(t->att_job_ix.slot);
  free(t->fresh);
  free(t->recheck);
}

bool tw_tenancy_quotas_reload(struct tw_tenancy *t) {
  struct tw_err err = {0};
  struct tw_quota *quotas = NULL;
  size_t n_quotas = 0;
  if (tn_load_all_quotas(t, &quotas, &n_quotas, &err)) {
    tw_log_warn("tenancy", "quotas not reloaded for placement: %s", err.msg);
    return false;
  }
  free(t->quotas);
  t->quotas = quotas;
  t->n_quotas = n_quotas;
  return true;
}

/* Everything read afresh: the live attempts from live[0..n_live), the
 * reservations from the store (the feed's cursor taken before both).  On
 * a store error the previous view stays and false is returned. */
static bool resv_full(struct tw_tenancy *t, const struct tw_attempt_rec *live,
                      size_t n_live) {
  struct tw_err err = {0};
  struct tw_store_resv *rows = NULL;
  size_t n_rows = 0;
  if (tw_store_reservations(t->store, &rows, &n_rows, &err)) {
    tw_log_warn("tenancy", "placement phase without fresh usage: %s", err.msg);
    t->resv_have = false;
    return false;
  }
  t->n_att = 0;
  ix_reset(&t->att_ix, n_live);
  ix_reset(&t->att_job_ix, n_live);
  for (size_t k = 0; k < n_live; k++)
    att_add(t, &live[k]);
  t->n_resv = 0;
  ix_reset(&t->resv_ix, n_rows);
  for (size_t i = 0; i < n_rows; i++) {
    struct tn_resv v = {.vcpus = rows[i].vcpus,
                        .gpus = rows[i].gpus,
                        .spot = rows[i].spot,
                        .at_ms = rows[i].at_ms};
    CUT_SET(v.job_id, rows[i].job_id);
    CUT_SET(v.tenant, rows[i].tenant);
    CUT_SET(v.accel, rows[i].accel);
    if (resv_find(t, v.job_id) == SIZE_MAX)
      resv_add(t, &v);
  }
  free(rows);
  for (size_t i = 0; i < t->n_resv;)
    if (resv_settle(t, i, live, n_live))
      i++;
  t->n_fresh = t->n_recheck = 0;
  t->resv_have = true;
  t->resv_full_ms = tw_clock_now_ms(t->clock);
  return true;
}

static void recheck_add(struct tw_tenancy *t, int64_t id) {
  if (t->n_recheck == t->cap_recheck) {
    t->cap_recheck = t->cap_recheck ? 2 * t->cap_recheck : 64;
    t->recheck = tw_realloc(t->recheck, t->cap_recheck * sizeof *t->recheck);
  }
  t->recheck[t->n_recheck++] = id;
}

/* The job of attempt id brought up to date with live[] (its attempt
 * followed or no longer), then its reservation settled. */
static void resv_attempt_changed(struct tw_tenancy *t, int64_t id,
                                 const struct tw_attempt_rec *live,
                                 size_t n_live) {
  const struct tw_attempt_rec *at = live_find(live, n_live, id);
  size_t k = att_find(t, id);
  char job_id[40];
  if (at) {
    if (k == SIZE_MAX)
      att_add(t, at);
    CUT_SET(job_id, at->job_id);
  } else if (k != SIZE_MAX) {
    CUT_SET(job_id, t->att[k].job_id);
    att_remove(t, k);
  } else {
    return; /* neither live nor followed */
  }
  size_t i = resv_find(t, job_id);
  if (i != SIZE_MAX)
    resv_settle(t, i, live, n_live);
}

/* The changes since the last phase applied to the view kept.  Each
 * attempt named is looked at in this phase and once more in the next:
 * live[] may have been read before a write that the feed already shows,
 * and it shows that write by the next phase.  false: read whole. */
static bool resv_apply(struct tw_tenancy *t, const struct tw_attempt_rec *live,
                       size_t n_live, const struct tw_store_change *ch,
                       size_t n_ch) {
  size_t n_prev = t->n_recheck;
  for (size_t i = 0; i < n_prev; i++)
    resv_attempt_changed(t, t->recheck[i], live, n_live);
  t->n_recheck = 0;
  for (size_t i = 0; i < n_ch; i++)
    if (ch[i].attempt_id > 0) {
      resv_attempt_changed(t, ch[i].attempt_id, live, n_live);
      recheck_add(t, ch[i].attempt_id);
    }
  /* the jobs reserved for since: an attempt that did not open gives its
   * share back now, as a whole read would */
  for (size_t i = 0; i < t->n_fresh; i++) {
    size_t r = resv_find(t, t->fresh[i]);
    if (r != SIZE_MAX)
      resv_settle(t, r, live, n_live);
  }
  t->n_fresh = 0;
  return t->n_att == n_live;
}

static void place_begin(struct tw_tenancy *t, const struct tw_attempt_rec *live,
                        size_t n_live) {
  if (!tw_tenancy_quotas_reload(t))
    return; /* keep the previous phase's view rather than forget holdings */
  struct tw_store_change *ch = NULL;
  size_t n_ch = 0;
  bool known = tw_store_changes_since(t->store, &t->resv_cursor, &ch, &n_ch);
  int64_t now = tw_clock_now_ms(t->clock);
  bool due = now - t->resv_full_ms >= TN_FULL_MS || now < t->resv_full_ms;
  const char *why = NULL; /* why everything is read afresh */
  if (!t->resv_have)
    why = "first phase";
  else if (!known)
    why = "change feed too old";
  else if (due)
    why = "re-read period";
  else if (!resv_apply(t, live, n_live, ch, n_ch))
    why = "live attempts not as followed";
  if (why) {
    tw_log_debug("tenancy", "reservations=%zu live=%zu read whole: %s",
                 t->n_resv, n_live, why);
    if (resv_full(t, live, n_live))
      /* what the feed showed may be newer than live[]: looked at again
       * by the next phase, as resv_apply does */
      for (size_t i = 0; i < n_ch; i++)
        if (ch[i].attempt_id > 0)
          recheck_add(t, ch[i].attempt_id);
  }
  free(ch);
}

void tw_tenancy_place_begin_live(struct tw_tenancy *t,
                                 const struct tw_attempt_rec *live,
                                 size_t n_live) {
  place_begin(t, live, n_live);
}

void tw_tenancy_place_begin(struct tw_tenancy *t) {
  struct tw_err err = {0};
  struct tw_attempt_rec *live = NULL;
  size_t n_live = 0;
  /* the feed's cursor before the read: what commits after it comes with
   * the next phase */
  struct tw_store_change *ch = NULL;
  size_t n_ch = 0;
  tw_store_changes_since(t->store, &t->resv_cursor, &ch, &n_ch);
  free(ch);
  if (tw_store_attempts_live(t->store, &live, &n_live, &err)) {
    tw_log_warn("tenancy", "placement phase without fresh usage: %s", err.msg);
    t->resv_have = false;
    return;
  }
  if (tw_tenancy_quotas_reload(t))
    resv_full(t, live, n_live);
  else
    t->resv_have = false;
  free(live);
}

/* One resource a placement needs. */
struct dim {
  char name[48]; /* "vcpus", "jobs", "gpus.A100" */
  int kind;      /* 0 vcpus, 1 jobs, 2 gpus */
  char gpu[32];  /* kind 2: the quota's accelerator name */
  int64_t need;
};

static bool gpu_covers(const char *quota_name, const char *accel) {
  return accel[0] &&
         (!strcmp(quota_name, "*") || tw_accel_matches(quota_name, accel));
}

static int64_t held_by(const struct tn_resv *v, const struct dim *d) {
  switch (d->kind) {
  case 0:
    return v->vcpus;
  case 1:
    return 1;
  default:
    return gpu_covers(d->gpu, v->accel) ? v->gpus : 0;
  }
}

/* What tenant holds in d, leaving out job skip (a job placed again after
 * an interruption must not count against itself). */
static int64_t used(struct tw_tenancy *t, const char *tenant,
                    const struct dim *d, const char *skip) {
  int64_t u = 0;
  for (size_t i = 0; i < t->n_resv; i++)
    if (!strcmp(t->resv[i].tenant, tenant) &&
        (!skip || strcmp(t->resv[i].job_id, skip)))
      u += held_by(&t->resv[i], d);
  return u;
}

static const struct tw_quota_limit *limit_of(const struct tw_quota *q,
                                             const struct dim *d) {
  if (d->kind == 0)
    return &q->vcpus;
  if (d->kind == 1)
    return &q->jobs;
  for (size_t i = 0; i < q->n_gpus; i++)
    if (!strcmp(q->gpus[i].name, d->gpu))
      return &q->gpus[i].q;
  return NULL;
}

/* The cohort's capacity and usage in d; false when a member is unlimited
 * in it (then the cohort is too). */
static bool cohort_totals(struct tw_tenancy *t, const char *cohort,
                          const struct dim *d, const char *skip, int64_t *cap,
                          int64_t *use) {
  *cap = *use = 0;
  for (size_t i = 0; i < t->n_quotas; i++) {
    const struct tw_quota *m = &t->quotas[i];
    if (strcmp(m->cohort, cohort))
      continue;
    const struct tw_quota_limit *l = limit_of(m, d);
    if (!l || l->limit < 0)
      return false;
    *cap += l->limit;
    *use += used(t, m->tenant, d, skip);
  }
  return true;
}

enum fit { FIT_OK, FIT_RECLAIM, FIT_NO };

/* Does need fit for tenant q?  why receives the reason when it does not;
 * FIT_RECLAIM when it fits in the tenant's own limit but the cohort is
 * full because members borrowed. */
static enum fit fit_dim(struct tw_tenancy *t, const struct tw_quota *q,
                        const struct dim *d, const char *skip, char *why,
                        size_t whysz) {
  const struct tw_quota_limit *l = limit_of(q, d);
  if (!l || l->limit < 0 || d->need == 0)
    return FIT_OK;
  int64_t u = used(t, q->tenant, d, skip);
  bool cohort = q->cohort[0] != '\0';
  int64_t cap = 0, cuse = 0;
  bool bounded = cohort && cohort_totals(t, q->cohort, d, skip, &cap, &cuse);
  if (u + d->need <= l->limit) {
    if (bounded && cuse + d->need > cap)
      return FIT_RECLAIM;
    return FIT_OK;
  }
  if (cohort && u + d->need <= l->limit + l->borrow) {
    if (!bounded || cuse + d->need <= cap)
      return FIT_OK; /* borrowing */
    snprintf(why, whysz,
             "quota %.63s of tenant %.63s: using %" PRId64
             ", job needs %" PRId64 ", limit %" PRId64
             "; cohort %.63s has %" PRId64 " of %" PRId64
             " in use, none idle to borrow",
             d->name, q->tenant, u, d->need, l->limit, q->cohort, cuse, cap);
    return FIT_NO;
  }
  snprintf(why, whysz,
           "quota %.63s of tenant %.63s: using %" PRId64 ", job needs %" PRId64
           ", limit %" PRId64 "%.63s",
           d->name, q->tenant, u, d->need, l->limit,
           cohort && l->borrow ? " plus what may be borrowed" : "");
  return FIT_NO;
}

static size_t dims_of(const struct tw_quota *q, const struct tw_offer *o,
                      int nodes, struct dim *d) {
  size_t n = 0;
  d[n] = (struct dim){
      .name = "vcpus", .kind = 0, .need = (int64_t)o->vcpus * nodes};
  n++;
  d[n] = (struct dim){.name = "jobs", .kind = 1, .need = 1};
  n++;
  for (size_t i = 0; i < q->n_gpus; i++)
    if (gpu_covers(q->gpus[i].name, o->accel_name)) {
      d[n] = (struct dim){.kind = 2, .need = (int64_t)o->accel_count * nodes};
      snprintf(d[n].name, sizeof d[n].name, "gpus.%s", q->gpus[i].name);
      snprintf(d[n].gpu, sizeof d[n].gpu, "%s", q->gpus[i].name);
      n++;
    }
  return n;
}

static enum fit fit_offer(struct tw_tenancy *t, const struct tw_quota *q,
                          const struct tw_offer *o, int nodes, const char *skip,
                          char *why, size_t whysz) {
  struct dim d[2 + TW_QUOTA_GPU_TYPES];
  size_t nd = dims_of(q, o, nodes, d);
  enum fit worst = FIT_OK;
  for (size_t i = 0; i < nd; i++) {
    enum fit f = fit_dim(t, q, &d[i], skip, why, whysz);
    if (f == FIT_NO)
      return FIT_NO;
    if (f == FIT_RECLAIM)
      worst = FIT_RECLAIM;
  }
  if (o->market == TW_MARKET_SPOT && q->spot_share_pct < 100) {
    struct dim v = {.kind = 0};
    int64_t all = used(t, q->tenant, &v, skip), spot = 0;
    for (size_t i = 0; i < t->n_resv; i++)
      if (t->resv[i].spot && !strcmp(t->resv[i].tenant, q->tenant) &&
          (!skip || strcmp(t->resv[i].job_id, skip)))
        spot += t->resv[i].vcpus;
    int64_t need = (int64_t)o->vcpus * nodes;
    int64_t base = q->vcpus.limit >= 0 ? q->vcpus.limit : all + need;
    int64_t allowed = base * q->spot_share_pct / 100;
    if (spot + need > allowed) {
      snprintf(why, whysz,
               "quota spot_share_pct of tenant %.63s: %d%% of %" PRId64
               " vCPUs allows %" PRId64 " on spot, %" PRId64
               " are, job needs %" PRId64,
               q->tenant, q->spot_share_pct, base, allowed, spot, need);
      return FIT_NO;
    }
  }
  return worst;
}

static struct tw_provider *provider_of(struct tw_tenancy *t,
                                       const char *account) {
  for (size_t i = 0; i < t->n_providers; i++)
    if (!strcmp(tw_provider_account(t->providers[i]), account))
      return t->providers[i];
  return NULL;
}

/* Terminates reservation i's instance, ends its attempt as preempted and
 * sends its job back to the queue.  The reservation goes with it. */
static bool preempt(struct tw_tenancy *t, size_t i, const char *why) {
  struct tn_resv v = t->resv[i];
  struct tw_err err = {0};
  struct tw_provider *p = provider_of(t, v.provider);
  if (!p || !v.instance_id[0] || !v.attempt_id)
    return false;
  if (tw_provider_terminate(p, v.instance_id, &err) &&
      err.rc != TW_E_NOTFOUND) {
    tw_log_warn("tenancy", "job=%s instance=%s not preempted: %s", v.job_id,
                v.instance_id, err.msg);
    return false;
  }
  char reason[420];
  snprintf(reason, sizeof reason, "preempted: %s", why);
  struct tw_attempt_close c = {.attempt_id = v.attempt_id,
                               .end_reason = "preempted",
                               .job_to = TW_JOB_INTERRUPTED,
                               .job_reason = reason};
  tw_err_clear(&err);
  if (tw_store_attempt_close(t->store, &c, &err))
    tw_log_warn("tenancy", "job=%s preempted attempt not closed: %s", v.job_id,
                err.msg);
  struct tw_job_transition t1 = {.id = v.job_id,
                                 .to = TW_JOB_RECOVERING,
                                 .reason = "placing again after preemption"};
  struct tw_job_transition t2 = {.id = v.job_id,
                                 .to = TW_JOB_PENDING,
                                 .reason =
                                     "waiting for quota after preemption"};
  if (tw_store_job_transition(t->store, &t1, NULL, &err) == TW_OK)
    tw_store_job_transition(t->store, &t2, NULL, &err);
  tw_log_info("tenancy", "job=%s tenant=%s instance=%s preempted: %s", v.job_id,
              v.tenant, v.instance_id, why);
  tn_audit(t, "sched", v.tenant, "quota.reclaim", v.job_id, "preempted", "",
           reason);
  resv_drop(t, i);
  return true;
}

/* Preempts the newest reservations of cohort members above their own
 * limit in the dimensions where the cohort lacks room for q's need. */
static bool reclaim(struct tw_tenancy *t, const struct tw_quota *q,
                    const struct tw_offer *o, int nodes, const char *skip) {
  struct dim d[2 + TW_QUOTA_GPU_TYPES];
  size_t nd = dims_of(q, o, nodes, d);
  for (size_t k = 0; k < nd; k++) {
    int64_t cap, cuse;
    for (;;) {
      if (!cohort_totals(t, q->cohort, &d[k], skip, &cap, &cuse) ||
          cuse + d[k].need <= cap)
        break;
      /* the newest reservation of a member over its limit in d[k] */
      ssize_t best = -1;
      for (size_t i = 0; i < t->n_resv; i++) {
        const struct tn_resv *v = &t->resv[i];
        if (!strcmp(v->tenant, q->tenant) || held_by(v, &d[k]) == 0 ||
            !v->instance_id[0])
          continue;
        const struct tw_quota *m = find_q(t->quotas, t->n_quotas, v->tenant);
        const struct tw_quota_limit *l = m ? limit_of(m, &d[k]) : NULL;
        if (!m || strcmp(m->cohort, q->cohort) || !l ||
            used(t, v->tenant, &d[k], NULL) <= l->limit)
          continue;
        if (best < 0 || v->at_ms > t->resv[best].at_ms ||
            (v->at_ms == t->resv[best].at_ms &&
             strcmp(v->job_id, t->resv[best].job_id) > 0))
          best = (ssize_t)i;
      }
      if (best < 0)
        return false;
      char why[400];
      snprintf(
          why, sizeof why,
          "tenant %.63s reclaims its %.63s quota lent to %.63s in cohort %.63s",
          q->tenant, d[k].name, t->resv[best].tenant, q->cohort);
      if (!preempt(t, (size_t)best, why))
        return false;
    }
  }
  return true;
}

static void held(struct tw_tenancy *t, const struct tw_job_rec *job,
                 const char *why) {
  size_t i;
  for (i = 0; i < t->n_held; i++)
    if (!strcmp(t->held[i].job_id, job->id))
      break;
  if (i < t->n_held && !strcmp(t->held[i].reason, why))
    return; /* said already */
  if (i == t->n_held) {
    if (t->n_held == sizeof t->held / sizeof t->held[0])
      i = (size_t)(job->seq % (int64_t)t->n_held); /* forget one */
    else
      t->n_held++;
  }
  snprintf(t->held[i].job_id, sizeof t->held[i].job_id, "%s", job->id);
  snprintf(t->held[i].reason, sizeof t->held[i].reason, "%s", why);
  char note[440];
  snprintf(note, sizeof note, "waiting for quota: %s", why);
  struct tw_err err = {0};
  tw_store_job_note(t->store, job->id, note, &err);
  tn_audit(t, "sched", job->tenant, "quota.hold", job->id, "refused", "", why);
}

static void unheld(struct tw_tenancy *t, const char *job_id) {
  for (size_t i = 0; i < t->n_held; i++)
    if (!strcmp(t->held[i].job_id, job_id)) {
      t->held[i] = t->held[--t->n_held];
      return;
    }
}

bool tw_tenancy_place_filter(struct tw_tenancy *t, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             struct tw_plan *pl) {
  const struct tw_quota *q = find_q(t->quotas, t->n_quotas, job->tenant);
  if (!q || pl->n == 0)
    return false;
  int nodes = spec->nodes > 0 ? spec->nodes : 1;
  char first_why[400] = "", why[400];
  size_t keep = 0;
  ssize_t reclaimable = -1;
  for (size_t i = 0; i < pl->n; i++) {
    why[0] = '\0';
    enum fit f =
        fit_offer(t, q, pl->cands[i].offer, nodes, job->id, why, sizeof why);
    if (f == FIT_OK)
      pl->cands[keep++] = pl->cands[i];
    else if (f == FIT_RECLAIM && reclaimable < 0)
      reclaimable = (ssize_t)i;
    else if (f == FIT_NO && !first_why[0])
      snprintf(first_why, sizeof first_why, "%s", why);
  }
  if (keep == 0 && reclaimable >= 0) {
    struct tw_cand c = pl->cands[reclaimable];
    if (reclaim(t, q, c.offer, nodes, job->id) &&
        fit_offer(t, q, c.offer, nodes, job->id, why, sizeof why) == FIT_OK) {
      pl->cands[keep++] = c;
    } else if (!first_why[0]) {
      snprintf(
          first_why, sizeof first_why,
          "tenant %.63s is within its quota but cohort %.63s cannot give back "
          "what was borrowed yet",
          q->tenant, q->cohort);
    }
  }
  pl->n = keep;
  if (keep)
    return false;
  held(t, job, first_why[0] ? first_why : "no offer fits the tenant's quota");
  return true;
}

int64_t tw_tenancy_spot_vcpus_left(struct tw_tenancy *t,
                                   const struct tw_job_rec *job) {
  const struct tw_quota *q = find_q(t->quotas, t->n_quotas, job->tenant);
  if (!q || q->spot_share_pct >= 100)
    return INT64_MAX;
  if (q->spot_share_pct <= 0)
    return 0;
  if (q->vcpus.limit < 0)
    return INT64_MAX; /* a share of what it will use: found per offer */
  int64_t spot = 0;
  for (size_t i = 0; i < t->n_resv; i++)
    if (t->resv[i].spot && !strcmp(t->resv[i].tenant, q->tenant) &&
        strcmp(t->resv[i].job_id, job->id))
      spot += t->resv[i].vcpus;
  int64_t left = q->vcpus.limit * q->spot_share_pct / 100 - spot;
  return left > 0 ? left : 0;
}

static void place_hold(struct tw_tenancy *t, const struct tw_job_rec *job,
                       const struct tw_job_spec *spec, const struct tw_offer *o,
                       struct tw_store_resv *deferred);

void tw_tenancy_place_commit(struct tw_tenancy *t, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_offer *o) {
  place_hold(t, job, spec, o, NULL);
}

void tw_tenancy_place_hold(struct tw_tenancy *t, const struct tw_job_rec *job,
                           const struct tw_job_spec *spec,
                           const struct tw_offer *o,
                           struct tw_store_resv *row) {
  place_hold(t, job, spec, o, row);
}

/* The reservation in memory, and its row stored (deferred NULL) or handed
 * to the caller to store. */
static void place_hold(struct tw_tenancy *t, const struct tw_job_rec *job,
                       const struct tw_job_spec *spec, const struct tw_offer *o,
                       struct tw_store_resv *deferred) {
  int nodes = spec->nodes > 0 ? spec->nodes : 1;
  struct tn_resv v = {.vcpus = (int64_t)o->vcpus * nodes,
                      .gpus = (int64_t)o->accel_count * nodes,
                      .spot = o->market == TW_MARKET_SPOT,
                      .at_ms = tw_clock_now_ms(t->clock)};
  snprintf(v.job_id, sizeof v.job_id, "%s", job->id);
  snprintf(v.tenant, sizeof v.tenant, "%s", job->tenant);
  snprintf(v.accel, sizeof v.accel, "%s", o->accel_name);
  snprintf(v.provider, sizeof v.provider, "%s", o->account);
  struct tw_store_resv row = {
      .vcpus = v.vcpus, .gpus = v.gpus, .spot = v.spot, .at_ms = v.at_ms};
  snprintf(row.job_id, sizeof row.job_id, "%s", v.job_id);
  snprintf(row.tenant, sizeof row.tenant, "%s", v.tenant);
  snprintf(row.accel, sizeof row.accel, "%s", v.accel);
  struct tw_err err = {0};
  if (deferred)
    *deferred = row;
  else if (tw_store_reservation_put(t->store, &row, o->id, &err))
    tw_log_warn("tenancy", "job=%s reservation not stored: %s", job->id,
                err.msg);
  unheld(t, job->id);
  size_t i = resv_find(t, job->id);
  if (i != SIZE_MAX)
    t->resv[i] = v;
  else
    resv_add(t, &v);
  /* matched to its attempt, or given back, by the next phase */
  if (t->n_fresh == t->cap_fresh) {
    t->cap_fresh = t->cap_fresh ? 2 * t->cap_fresh : 64;
    t->fresh = tw_realloc(t->fresh, t->cap_fresh * sizeof *t->fresh);
  }
  CUT_SET(t->fresh[t->n_fresh], job->id);
  t->n_fresh++;
}
