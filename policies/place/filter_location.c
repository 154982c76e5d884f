/* filter_location.c - the filters that read where an offer is: allowed
 * providers, region and label selectors, data residency, provider health,
 * latency to the data, and a zone for gangs.  All TW_SCOPE_LOCATION. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policies/place/cost.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy_int.h"

static void reject(struct tw_verdict *v, const char *what, const char *list) {
  v->pass = false;
  snprintf(v->reason, sizeof v->reason, "%s (%s)", what, list);
}

/* ---- provider
 * ---------------------------------------------------------------- */

static void provider_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  if (!s->n_providers)
    return;
  for (size_t i = 0; i < s->n_providers; i++)
    if (!strcmp(s->providers[i], o->provider) ||
        !strcmp(s->providers[i], o->account))
      return;
  char list[96] = "";
  for (size_t i = 0; i < s->n_providers && strlen(list) < 80; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i ? ", " : "", s->providers[i]);
  reject(v, "not among the allowed providers", list);
}

static void provider_key(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, (int64_t)ctx->job->n_providers);
  for (size_t i = 0; i < ctx->job->n_providers; i++)
    pi_key_str(b, ctx->job->providers[i]);
}

const struct tw_policy_ops tw_filter_provider = {.name = "provider",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_LOCATION,
                                                 .filter = provider_filter,
                                                 .key = provider_key};

/* ---- launchable: offers no configured account can launch
 * ------------------------ */

/* A seed catalog's offers of a cloud without a configured account are in
 * the index so that plans can show them (a plan has no job id); a job the
 * scheduler places never goes there. */
static void launchable_filter(const struct tw_policy *self,
                              const struct tw_place_ctx *ctx,
                              const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  v->pass = !o->no_account || !ctx->job_id;
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason, "no account can launch this");
}

static void launchable_key(const struct tw_policy *self,
                           const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->job_id != NULL);
}

const struct tw_policy_ops tw_filter_launchable = {
    .name = "launchable",
    .version = TW_POLICY_ABI_VERSION,
    .scope = TW_SCOPE_LOCATION,
    .filter = launchable_filter,
    .key = launchable_key};

/* ---- selector: the spec's region globs, the operator's label selectors --- */

enum sel_op { SEL_IN, SEL_NOT_IN, SEL_EXISTS, SEL_NOT_EXISTS, SEL_GLOB };

struct sel {
  char label[32];
  enum sel_op op;
  char **values; /* NULL-terminated; owned */
};

struct sel_state {
  struct sel *sels;
  size_t n;
};

static void sel_release(void *p) {
  struct sel_state *st = p;
  if (!st)
    return;
  for (size_t i = 0; i < st->n; i++)
    pi_strv_free(st->sels[i].values);
  free(st->sels);
  free(st);
}

/* selectors: [{label: country, in: [DE, FR]}, {label: rack, exists: true},
 *             {label: zone, glob: "us-east-1*"}, {label: tier, not_in: [x]}] */
static enum tw_rc sel_configure(const struct tw_node *cfg, const char *path,
                                void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "selectors", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  struct sel_state *st = tw_calloc(1, sizeof *st);
  *state = st;
  const struct tw_node *list = cfg ? tw_node_get(cfg, "selectors") : NULL;
  if (!list || list->kind == TW_NODE_NULL)
    return TW_OK;
  if (list->kind != TW_NODE_SEQ)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.selectors: expected a list, got %s", path,
                        tw_node_type_name(list));
  st->sels = tw_calloc(list->n ? list->n : 1, sizeof *st->sels);
  for (size_t i = 0; i < list->n; i++) {
    char p[160];
    snprintf(p, sizeof p, "%s.selectors[%zu]", path, i);
    const struct tw_node *e = list->items[i];
    static const char *const ekeys[] = {"label",  "in",   "not_in",
                                        "exists", "glob", NULL};
    if (e->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, p,
                          "%s: expected a mapping, got %s", p,
                          tw_node_type_name(e));
    if ((rc = pi_cfg_keys(e, p, ekeys, err)))
      return rc;
    struct sel *s = &st->sels[st->n++];
    const struct tw_node *lab = tw_node_get(e, "label");
    if (!lab || lab->kind != TW_NODE_SCALAR || !*lab->str ||
        strlen(lab->str) >= sizeof s->label)
      return tw_err_field(err, TW_E_INVALID, p,
                          "%s.label: expected a label name", p);
    snprintf(s->label, sizeof s->label, "%s", lab->str);
    int ops = 0;
    if (tw_node_get(e, "in")) {
      s->op = SEL_IN, ops++;
      if ((rc = pi_cfg_strv(e, p, "in", &s->values, err)))
        return rc;
    }
    if (tw_node_get(e, "not_in")) {
      s->op = SEL_NOT_IN, ops++;
      if (!s->values && (rc = pi_cfg_strv(e, p, "not_in", &s->values, err)))
        return rc;
    }
    if (tw_node_get(e, "glob")) {
      s->op = SEL_GLOB, ops++;
      if (!s->values && (rc = pi_cfg_strv(e, p, "glob", &s->values, err)))
        return rc;
    }
    const struct tw_node *ex = tw_node_get(e, "exists");
    if (ex) {
      bool b;
      if (!tw_node_as_bool(ex, &b))
        return tw_err_field(err, TW_E_INVALID, p,
                            "%s.exists: expected true or false", p);
      s->op = b ? SEL_EXISTS : SEL_NOT_EXISTS, ops++;
    }
    if (ops != 1)
      return tw_err_field(
          err, TW_E_INVALID, p,
          "%s: expected exactly one of in, not_in, exists, glob", p);
  }
  return TW_OK;
}

static bool sel_match(const struct sel *s, const char *value) {
  switch (s->op) {
  case SEL_EXISTS:
    return value != NULL;
  case SEL_NOT_EXISTS:
    return value == NULL;
  case SEL_IN:
  case SEL_NOT_IN:
  case SEL_GLOB: {
    bool hit = false;
    for (char **v = s->values; value && v && *v && !hit; v++)
      hit = s->op == SEL_GLOB ? !fnmatch(*v, value, 0) : !strcmp(*v, value);
    return s->op == SEL_NOT_IN ? !hit : hit;
  }
  }
  return false;
}

/* The job's placement.selectors: the same semantics as the operator's, with
 * a reason that reads on its own ("label zone in (us-east-1b)") and names
 * no offer's value, so that one count gathers every offer it refused. */
static bool job_sel_match(const struct tw_label_selector *s,
                          const char *value) {
  switch (s->op) {
  case TW_SEL_EXISTS:
    return value != NULL;
  case TW_SEL_NOT_EXISTS:
    return value == NULL;
  case TW_SEL_IN:
  case TW_SEL_NOT_IN:
  case TW_SEL_GLOB: {
    bool hit = false;
    for (size_t i = 0; value && i < s->n_values && !hit; i++)
      hit = s->op == TW_SEL_GLOB ? !fnmatch(s->values[i], value, 0)
                                 : !strcmp(s->values[i], value);
    return s->op == TW_SEL_NOT_IN ? !hit : hit;
  }
  }
  return false;
}

static void job_sel_reject(const struct tw_label_selector *s,
                           struct tw_verdict *v) {
  char list[80] = "";
  for (size_t k = 0; k < s->n_values && strlen(list) < 60; k++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             k ? ", " : "", s->values[k]);
  v->pass = false;
  switch (s->op) {
  case TW_SEL_EXISTS:
    snprintf(v->reason, sizeof v->reason, "without label %.31s (job selector)",
             s->label);
    break;
  case TW_SEL_NOT_EXISTS:
    snprintf(v->reason, sizeof v->reason, "with label %.31s (job selector)",
             s->label);
    break;
  case TW_SEL_IN:
    snprintf(v->reason, sizeof v->reason, "label %.31s not in (%.60s)",
             s->label, list);
    break;
  case TW_SEL_NOT_IN:
    snprintf(v->reason, sizeof v->reason, "label %.31s in (%.60s)", s->label,
             list);
    break;
  case TW_SEL_GLOB:
    snprintf(v->reason, sizeof v->reason, "label %.31s not matching (%.60s)",
             s->label, list);
    break;
  }
}

/* The "provider:region" of a zone selector ("aws:us-east-1:us-east-1a");
 * false for a region selector. */
static bool zone_sel_region(const char *sel, char *out, size_t outsz) {
  const char *c1 = strchr(sel, ':');
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2)
    return false;
  snprintf(out, outsz, "%.*s", (int)(c2 - sel), sel);
  return true;
}

/* ---- zones: the zone parts of the spec's region selectors
 * ----------------------- */

static void zones_filter(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx,
                         const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  bool any_zone = false;
  for (size_t i = 0; i < s->n_regions; i++) {
    char rp[160];
    bool zone = zone_sel_region(s->regions[i], rp, sizeof rp);
    any_zone |= zone;
    /* a region selector, or a zone selector naming the offer's zone */
    if (pi_selector_match(s->regions[i], o))
      return;
  }
  if (!any_zone)
    return;
  char list[96] = "";
  for (size_t k = 0; k < s->n_regions && strlen(list) < 70; k++) {
    char rp[160];
    if (zone_sel_region(s->regions[k], rp, sizeof rp))
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
               *list ? ", " : "", s->regions[k]);
  }
  reject(v, "outside the zone selectors", list);
}

static void zones_key(const struct tw_policy *self,
                      const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, (int64_t)ctx->job->n_regions);
  for (size_t i = 0; i < ctx->job->n_regions; i++)
    pi_key_str(b, ctx->job->regions[i]);
}

const struct tw_policy_ops tw_filter_zones = {.name = "zones",
                                              .version = TW_POLICY_ABI_VERSION,
                                              .scope = TW_SCOPE_LOCATION,
                                              .filter = zones_filter,
                                              .key = zones_key};

static void selector_filter(const struct tw_policy *self,
                            const struct tw_place_ctx *ctx,
                            const struct tw_offer *o, struct tw_verdict *v) {
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  if (s->n_regions) {
    size_t i;
    for (i = 0; i < s->n_regions; i++)
      if (pi_selector_match(s->regions[i], o))
        break;
    if (i == s->n_regions) {
      /* a zone selector's region counts here; its zone is the zones
       * filter's, so the two refusals are counted apart */
      for (i = 0; i < s->n_regions; i++) {
        char rp[160];
        if (zone_sel_region(s->regions[i], rp, sizeof rp) &&
            pi_selector_match(rp, o))
          break;
      }
    }
    if (i == s->n_regions) {
      char list[96] = "";
      for (size_t k = 0; k < s->n_regions && strlen(list) < 70; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 k ? ", " : "", s->regions[k]);
      reject(v, "outside the region selectors", list);
      return;
    }
  }
  const struct sel_state *st = PI_STATE(self, struct sel_state);
  for (size_t i = 0; st && i < st->n; i++) {
    const struct sel *sel = &st->sels[i];
    if (!sel_match(sel, pi_label(ctx, o, sel->label))) {
      static const char *const ops[] = {"in", "not in", "present", "absent",
                                        "matching"};
      v->pass = false;
      snprintf(v->reason, sizeof v->reason, "label %s not %s%s%s", sel->label,
               ops[sel->op], sel->values && sel->values[0] ? " " : "",
               sel->values && sel->values[0] ? sel->values[0] : "");
      return;
    }
  }
  /* the job's own narrow the operator's: every one must match too */
  for (size_t i = 0; i < s->n_selectors; i++)
    if (!job_sel_match(&s->selectors[i],
                       pi_label(ctx, o, s->selectors[i].label))) {
      job_sel_reject(&s->selectors[i], v);
      return;
    }
}

static void selector_key(const struct tw_policy *self,
                         const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  pi_key_int(b, (int64_t)s->n_regions);
  for (size_t i = 0; i < s->n_regions; i++)
    pi_key_str(b, s->regions[i]);
  pi_key_int(b, (int64_t)s->n_selectors);
  for (size_t i = 0; i < s->n_selectors; i++) {
    pi_key_str(b, s->selectors[i].label);
    pi_key_int(b, s->selectors[i].op);
    pi_key_int(b, (int64_t)s->selectors[i].n_values);
    for (size_t k = 0; k < s->selectors[i].n_values; k++)
      pi_key_str(b, s->selectors[i].values[k]);
  }
}

const struct tw_policy_ops tw_filter_selector = {.name = "selector",
                                                 .version =
                                                     TW_POLICY_ABI_VERSION,
                                                 .scope = TW_SCOPE_LOCATION,
                                                 .configure = sel_configure,
                                                 .release = sel_release,
                                                 .filter = selector_filter,
                                                 .key = selector_key};

/* ---- residency
 * ------------------------------------------------------------------ */

static void residency_filter(const struct tw_policy *self,
                             const struct tw_place_ctx *ctx,
                             const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  if (!s->n_residency)
    return;
  const char *j = pi_label(ctx, o, "jurisdiction");
  for (size_t i = 0; j && i < s->n_residency; i++)
    if (!strcasecmp(s->residency[i], j))
      return;
  char list[64] = "";
  for (size_t i = 0; i < s->n_residency && strlen(list) < 48; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i ? ", " : "", s->residency[i]);
  v->pass = false;
  if (!j)
    snprintf(v->reason, sizeof v->reason, "of unknown jurisdiction (need %s)",
             list);
  else
    snprintf(v->reason, sizeof v->reason, "outside jurisdiction %s", list);
}

static void residency_key(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, (int64_t)ctx->job->n_residency);
  for (size_t i = 0; i < ctx->job->n_residency; i++)
    pi_key_str(b, ctx->job->residency[i]);
}

const struct tw_policy_ops tw_filter_residency = {.name = "residency",
                                                  .version =
                                                      TW_POLICY_ABI_VERSION,
                                                  .scope = TW_SCOPE_LOCATION,
                                                  .filter = residency_filter,
                                                  .key = residency_key};

/* ---- health
 * ------------------------------------------------------------------- */

static void health_filter(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  const char *why = tw_health_down(ctx->health, o->account);
  v->pass = !why;
  if (why)
    snprintf(v->reason, sizeof v->reason,
             "on an unhealthy provider (%.24s: %.60s)", o->account, why);
}

static void health_key(const struct tw_policy *self,
                       const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, (int64_t)ctx->health->generation);
  for (size_t i = 0; i < ctx->health->n && i < TW_HEALTH_MAX; i++)
    pi_key_str(b, ctx->health->account[i]);
}

const struct tw_policy_ops tw_filter_health = {.name = "health",
                                               .version = TW_POLICY_ABI_VERSION,
                                               .scope = TW_SCOPE_LOCATION,
                                               .filter = health_filter,
                                               .key = health_key};

/* ---- latency: round trip to the job's data, or from fixed places
 * ------------- */

struct lat_state {
  int64_t max_rtt_us; /* 0: off */
  char **from;        /* locations users sit at; NULL none */
};

static void lat_release(void *p) {
  struct lat_state *st = p;
  if (st)
    pi_strv_free(st->from);
  free(st);
}

static enum tw_rc lat_configure(const struct tw_node *cfg, const char *path,
                                void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "max_rtt_ms", "from", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  struct lat_state *st = tw_calloc(1, sizeof *st);
  *state = st;
  int64_t ms = 0;
  if ((rc = pi_cfg_int(cfg, path, "max_rtt_ms", 0, 3600000, &ms, err)))
    return rc;
  st->max_rtt_us = ms * 1000;
  if (cfg && tw_node_get(cfg, "from"))
    return pi_cfg_strv(cfg, path, "from", &st->from, err);
  return TW_OK;
}

/* The bound is the tighter of the operator's max_rtt_ms and the job's
 * placement.max_rtt_ms (either may be unset); it holds from every origin:
 * the job's data, the operator's `from` and the job's placement.near. */
static void latency_filter(const struct tw_policy *self,
                           const struct tw_place_ctx *ctx,
                           const struct tw_offer *o, struct tw_verdict *v) {
  const struct lat_state *st = PI_STATE(self, struct lat_state);
  const struct tw_job_spec *s = ctx->job;
  v->pass = true;
  int64_t bound = st ? st->max_rtt_us : 0;
  if (s->max_rtt_ms && (!bound || (int64_t)s->max_rtt_ms * 1000 < bound))
    bound = (int64_t)s->max_rtt_ms * 1000;
  if (!bound)
    return;
  int64_t worst = 0;
  const char *what = "the data";
  if (ctx->data && ctx->region >= 0 &&
      (size_t)ctx->region < ctx->data->n_regions)
    worst = ctx->data->rtt_us[ctx->region];
  char here[2 * TW_MODEL_NAME_MAX + 2];
  snprintf(here, sizeof here, "%s:%s", o->provider, o->region);
  for (char **f = st ? st->from : NULL; f && *f; f++) {
    struct tw_net_link l;
    tw_netmatrix_link(ctx->net, *f, here, &l);
    if (l.rtt_us > worst) {
      worst = l.rtt_us;
      what = *f;
    }
  }
  for (size_t i = 0; i < s->n_near; i++) {
    struct tw_net_link l;
    tw_netmatrix_link(ctx->net, s->near[i], here, &l);
    if (l.rtt_us > worst) {
      worst = l.rtt_us;
      what = s->near[i];
    }
  }
  if (worst > bound) {
    v->pass = false;
    v->amount = worst - bound;
    snprintf(v->reason, sizeof v->reason, "over %lld ms from %.60s (%lld ms)",
             (long long)(bound / 1000), what, (long long)(worst / 1000));
  }
}

static void latency_key(const struct tw_policy *self,
                        const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  /* the data's locations decide the round trips */
  const struct tw_job_spec *s = ctx->job;
  pi_key_int(b, (int64_t)ctx->datasets->generation);
  pi_key_str(b, s->tenant); /* whose datasets it may see */
  pi_key_int(b, (int64_t)s->n_datasets);
  for (size_t i = 0; i < s->n_datasets; i++) {
    pi_key_str(b, s->datasets[i].uri);
    pi_key_str(b, s->datasets[i].location);
    pi_key_int(b, s->datasets[i].size_bytes);
  }
  pi_key_int(b, s->max_rtt_ms);
  pi_key_int(b, (int64_t)s->n_near);
  for (size_t i = 0; i < s->n_near; i++)
    pi_key_str(b, s->near[i]);
}

const struct tw_policy_ops tw_filter_latency = {.name = "latency",
                                                .version =
                                                    TW_POLICY_ABI_VERSION,
                                                .scope = TW_SCOPE_LOCATION,
                                                .configure = lat_configure,
                                                .release = lat_release,
                                                .filter = latency_filter,
                                                .key = latency_key};

/* ---- gang: a multi-node job needs one zone
 * -------------------------------------- */

static void gang_filter(const struct tw_policy *self,
                        const struct tw_place_ctx *ctx,
                        const struct tw_offer *o, struct tw_verdict *v) {
  (void)self;
  v->pass = ctx->nodes <= 1 || o->zone[0];
  if (!v->pass)
    snprintf(v->reason, sizeof v->reason,
             "regional: no single zone for a gang of %d nodes", ctx->nodes);
}

static void gang_key(const struct tw_policy *self,
                     const struct tw_place_ctx *ctx, struct tw_buf *b) {
  (void)self;
  pi_key_int(b, ctx->nodes > 1);
}

const struct tw_policy_ops tw_filter_gang = {.name = "gang",
                                             .version = TW_POLICY_ABI_VERSION,
                                             .scope = TW_SCOPE_LOCATION,
                                             .filter = gang_filter,
                                             .key = gang_key};
