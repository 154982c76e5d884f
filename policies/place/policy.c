/* policy.c - the policy set: built from the `policies:` section, validated
 * whole before anything is used (policy.h), and the plugins' helpers. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "broker/base/unique.h"
#include "policies/place/cost.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy_int.h"

/* ---- helpers for plugins
 * ------------------------------------------------------ */

void tw_policy_fmt_duration(int64_t s, char *out, size_t outsz) {
  if (s < 0)
    s = 0;
  int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;
  if (d)
    snprintf(out, outsz, "%lldd%lldh", (long long)d, (long long)h);
  else if (h)
    snprintf(out, outsz, "%lldh%02lldm", (long long)h, (long long)m);
  else if (m)
    snprintf(out, outsz, "%lldm%02llds", (long long)m, (long long)sec);
  else
    snprintf(out, outsz, "%llds", (long long)sec);
}

void tw_policy_fmt_uusd(int64_t u, char *out, size_t outsz) {
  const char *sign = u < 0 ? "-" : "";
  uint64_t a = u < 0 ? (uint64_t)0 - (uint64_t)u : (uint64_t)u;
  uint64_t frac = a % 1000000;
  char f[8];
  snprintf(f, sizeof f, "%06llu", (unsigned long long)frac);
  int keep = 6;
  while (keep > 2 && f[keep - 1] == '0')
    keep--;
  snprintf(out, outsz, "%s$%llu.%.*s", sign, (unsigned long long)(a / 1000000),
           keep, f);
}

void tw_policy_normalize_inverse(int64_t *s, size_t n) {
  int64_t min = INT64_MAX;
  for (size_t i = 0; i < n; i++)
    if (s[i] < min)
      min = s[i];
  for (size_t i = 0; i < n; i++) {
    if (s[i] <= 0 || min <= 0)
      s[i] = s[i] <= 0 || min == s[i] ? TW_SCORE_MAX : 0;
    else
      s[i] = (int64_t)((__int128)TW_SCORE_MAX * min / s[i]);
  }
}

const char *pi_label(const struct tw_place_ctx *ctx, const struct tw_offer *o,
                     const char *key) {
  const char *v = tw_offer_label(o, key);
  if (v)
    return v;
  if (!strcmp(key, "provider"))
    return o->provider;
  if (!strcmp(key, "account"))
    return o->account;
  if (!strcmp(key, "region"))
    return o->region;
  if (!strcmp(key, "zone"))
    return o->zone[0] ? o->zone : NULL;
  if (!strcmp(key, "zone_id"))
    return o->zone_id[0] ? o->zone_id : NULL;
  if (!strcmp(key, "rack"))
    return o->rack[0] ? o->rack : NULL;
  if (!strcmp(key, "country") || !strcmp(key, "jurisdiction")) {
    char rk[2 * TW_MODEL_NAME_MAX + 2];
    snprintf(rk, sizeof rk, "%s:%s", o->provider, o->region);
    const struct tw_net_region *r =
        ctx && ctx->net ? tw_netmatrix_region(ctx->net, rk) : NULL;
    if (!r)
      return NULL;
    const char *x = key[0] == 'c' ? r->country : r->jurisdiction;
    return x[0] ? x : NULL;
  }
  return NULL;
}

bool pi_selector_match(const char *sel, const struct tw_offer *o) {
  char w[3 * TW_MODEL_NAME_MAX + 4];
  snprintf(w, sizeof w, "%s:%s", o->provider, o->region);
  if (!fnmatch(sel, w, 0))
    return true;
  snprintf(w, sizeof w, "%s:%s", o->account, o->region);
  if (!fnmatch(sel, w, 0))
    return true;
  if (o->zone[0]) {
    snprintf(w, sizeof w, "%s:%s:%s", o->provider, o->region, o->zone);
    if (!fnmatch(sel, w, 0))
      return true;
    snprintf(w, sizeof w, "%s:%s:%s", o->account, o->region, o->zone);
    if (!fnmatch(sel, w, 0))
      return true;
  }
  return false;
}

void pi_key_str(struct tw_buf *b, const char *s) {
  if (s)
    tw_buf_adds(b, s);
  tw_buf_addc(b, s ? '\x1f' : '\x1e');
}

void pi_key_int(struct tw_buf *b, int64_t v) {
  tw_buf_add(b, &v, sizeof v);
  tw_buf_addc(b, '\x1f');
}

enum tw_rc pi_cfg_keys(const struct tw_node *cfg, const char *path,
                       const char *const *known, struct tw_err *err) {
  if (!cfg || cfg->kind != TW_NODE_MAP)
    return TW_OK;
  for (size_t i = 0; i < cfg->n; i++) {
    size_t k;
    for (k = 0; known[k] && strcmp(known[k], cfg->keys[i]); k++)
      ;
    if (known[k])
      continue;
    const char *near = tw_closest(cfg->keys[i], known);
    if (near)
      return tw_err_field(err, TW_E_INVALID, path,
                          "%s.%s: unknown key; did you mean \"%s\"?", path,
                          cfg->keys[i], near);
    return tw_err_field(err, TW_E_INVALID, path, "%s.%s: unknown key", path,
                        cfg->keys[i]);
  }
  return TW_OK;
}

enum tw_rc pi_cfg_int(const struct tw_node *cfg, const char *path,
                      const char *key, int64_t min, int64_t max, int64_t *out,
                      struct tw_err *err) {
  const struct tw_node *n = cfg ? tw_node_get(cfg, key) : NULL;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  int64_t v;
  if (!tw_node_as_int(n, &v))
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: expected an integer, got %s", path, key,
                        tw_node_type_name(n));
  if (v < min || v > max)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: must be between %lld and %lld, got %lld", path,
                        key, (long long)min, (long long)max, (long long)v);
  *out = v;
  return TW_OK;
}

void pi_strv_free(char **v) {
  for (char **p = v; p && *p; p++)
    free(*p);
  free(v);
}

enum tw_rc pi_cfg_strv(const struct tw_node *cfg, const char *path,
                       const char *key, char ***out, struct tw_err *err) {
  const struct tw_node *n = cfg ? tw_node_get(cfg, key) : NULL;
  *out = NULL;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  size_t cnt = n->kind == TW_NODE_SEQ ? n->n : 1;
  if (n->kind != TW_NODE_SEQ && n->kind != TW_NODE_SCALAR)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: expected a list of strings, got %s", path, key,
                        tw_node_type_name(n));
  char **v = tw_calloc(cnt + 1, sizeof *v);
  for (size_t i = 0; i < cnt; i++) {
    const struct tw_node *e = n->kind == TW_NODE_SEQ ? n->items[i] : n;
    if (e->kind != TW_NODE_SCALAR || !*e->str || strlen(e->str) > 200) {
      pi_strv_free(v);
      return tw_err_field(err, TW_E_INVALID, path,
                          "%s.%s[%zu]: expected a non-empty string", path, key,
                          i);
    }
    v[i] = tw_strdup(e->str);
  }
  *out = v;
  return TW_OK;
}

/* ---- the set
 * --------------------------------------------------------------------- */

static const char *const DEFAULT_FILTERS[] = {
    "provider", "launchable", "selector", "zones", "residency", "health",
    "latency",
    "gang",     "arch",     "cpus",      "memory",   "accelerators",
    "instance_types", "quota", "market", "price", "price_sanity", "excluded",
    "blocklist", "capacity", "backfill", "deadline", NULL};

static struct tw_policy_set *set_new(void) {
  struct tw_policy_set *s = tw_calloc(1, sizeof *s);
  s->refs = 1;
  s->generation = tw_unique_id();
  s->candidates = 16;
  tw_cost_params_default(&s->cost);
  s->queue = (struct tw_queue_params){.aging_per_hour = 10,
                                      .aging_max = 500,
                                      .fair_share_weight = 200,
                                      .capacity_vcpus = 10000,
                                      .capacity_memory_mib = 40000LL * 1024,
                                      .capacity_gpus = 512};
  s->replication =
      (struct tw_replication_params){.enabled = true, .min_jobs = 2};
  return s;
}

static void set_free(struct tw_policy_set *s) {
  for (size_t i = 0; i < s->n_filters; i++)
    if (s->filters[i].ops->release)
      s->filters[i].ops->release(s->filters[i].state);
    else
      free(s->filters[i].state);
  for (size_t i = 0; i < s->n_scores; i++)
    if (s->scores[i].ops->release)
      s->scores[i].ops->release(s->scores[i].state);
    else
      free(s->scores[i].state);
  for (size_t i = 0; i < s->n_dl; i++)
    tw_policy_plugin_close(s->dl[i]);
  tw_netmatrix_free(s->net);
  free(s->net_source);
  free(s->config_json);
  free(s->plugin_dir);
  free(s->network_dir);
  free(s);
}

struct tw_policy_set *tw_policy_set_ref(struct tw_policy_set *s) {
  if (s)
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
  return s;
}

void tw_policy_set_unref(struct tw_policy_set *s) {
  if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
    set_free(s);
}

static enum tw_rc add_policy(struct tw_policy *p,
                             const struct tw_policy_ops *ops,
                             const struct tw_node *cfg, const char *path,
                             int64_t weight, struct tw_err *err) {
  p->ops = ops;
  p->weight = weight;
  snprintf(p->name, sizeof p->name, "%s", ops->name);
  if (ops->configure)
    return ops->configure(cfg && cfg->kind == TW_NODE_MAP ? cfg : NULL, path,
                          &p->state, err);
  if (cfg && cfg->kind == TW_NODE_MAP) {
    static const char *const keys[] = {"name", "weight", NULL};
    return pi_cfg_keys(cfg, path, keys, err);
  }
  return TW_OK;
}

static enum tw_rc build_filters(struct tw_policy_set *s,
                                const struct tw_node *list,
                                struct tw_err *err) {
  if (!list || list->kind == TW_NODE_NULL) {
    for (size_t i = 0; DEFAULT_FILTERS[i]; i++) {
      char path[64];
      snprintf(path, sizeof path, "policies.filters[%zu]", i);
      enum tw_rc rc = add_policy(&s->filters[s->n_filters++],
                                 tw_policy_find_filter(DEFAULT_FILTERS[i]),
                                 NULL, path, 0, err);
      if (rc)
        return rc;
    }
    return TW_OK;
  }
  if (list->kind != TW_NODE_SEQ)
    return tw_err_field(
        err, TW_E_INVALID, "policies.filters",
        "policies.filters: expected a list of filter names, got %s",
        tw_node_type_name(list));
  if (list->n > TW_POLICY_MAX_FILTERS)
    return tw_err_field(err, TW_E_INVALID, "policies.filters",
                        "policies.filters: at most %d filters, got %zu",
                        TW_POLICY_MAX_FILTERS, list->n);
  for (size_t i = 0; i < list->n; i++) {
    char path[64];
    snprintf(path, sizeof path, "policies.filters[%zu]", i);
    const struct tw_node *e = list->items[i];
    const struct tw_node *nm =
        e->kind == TW_NODE_MAP ? tw_node_get(e, "name") : e;
    if (!nm || nm->kind != TW_NODE_SCALAR)
      return tw_err_field(err, TW_E_INVALID, path,
                          "%s: expected a filter name or {name: ..., settings}",
                          path);
    const struct tw_policy_ops *ops = tw_policy_find_filter(nm->str);
    if (!ops) {
      const char *cands[TW_POLICY_MAX_FILTERS + 1];
      size_t nc = 0;
      for (size_t k = 0; tw_policy_registry[k]; k++)
        if (tw_policy_registry[k]->filter)
          cands[nc++] = tw_policy_registry[k]->name;
      cands[nc] = NULL;
      const char *near = tw_closest(nm->str, cands);
      if (near)
        return tw_err_field(
            err, TW_E_INVALID, path,
            "%s: unknown filter \"%.40s\"; did you mean \"%s\"?", path, nm->str,
            near);
      return tw_err_field(err, TW_E_INVALID, path,
                          "%s: unknown filter \"%.40s\"", path, nm->str);
    }
    for (size_t k = 0; k < s->n_filters; k++)
      if (s->filters[k].ops == ops)
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s: filter %s is listed twice", path, ops->name);
    enum tw_rc rc =
        add_policy(&s->filters[s->n_filters++], ops, e, path, 0, err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

static void join_path(const char *base, const char *p, char *out,
                      size_t outsz) {
  if (p[0] == '/' || !base || !*base)
    snprintf(out, outsz, "%s", p);
  else
    snprintf(out, outsz, "%s/%s", base, p);
}

/* A file name a section may give: one path component, no control bytes. */
static bool plain_name(const char *n) {
  if (!*n || strlen(n) > 255 || !strcmp(n, ".") || !strcmp(n, ".."))
    return false;
  for (const unsigned char *p = (const unsigned char *)n; *p; p++)
    if (*p == '/' || *p < 0x20 || *p == 0x7f)
      return false;
  return true;
}

/* Resolves `name` (what a section gives as path:/network:) to a regular
 * file inside dir (absolute, resolved; NULL when the config file names
 * none), into out.  Everything is refused before the file is opened, let
 * alone dlopen()ed: no directory, a name that is a path, a name that
 * resolves (through a link) outside the directory. */
static enum tw_rc resolve_in(const char *dir, const char *dir_key,
                             const char *name, const char *field,
                             const char *at, char out[PATH_MAX],
                             struct tw_err *err) {
  if (!dir)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: \"%.64s\" cannot be used: the config file sets "
                        "no %s",
                        at, name, dir_key);
  if (!plain_name(name))
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: expected a file name inside %s, without '/' or "
                        "control bytes, got \"%.64s\"",
                        at, dir_key, name);
  char full[PATH_MAX + 260];
  snprintf(full, sizeof full, "%s/%s", dir, name);
  if (!realpath(full, out))
    return tw_err_field(err, TW_E_INVALID, field, "%s: %s: cannot open: %s", at,
                        name, strerror(errno));
  size_t dl = strlen(dir);
  struct stat st;
  if (strncmp(out, dir, dl) || out[dl] != '/' || strchr(out + dl + 1, '/'))
    return tw_err_field(err, TW_E_INVALID, field, "%s: %s leads outside %s", at,
                        name, dir_key);
  if (stat(out, &st) || !S_ISREG(st.st_mode))
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: %s is not a regular file", at, name);
  return TW_OK;
}

/* policies.plugin_dir / network_dir of the config file: resolved against
 * its directory to an absolute one that exists.  *out NULL when unset. */
static enum tw_rc config_dir(const struct tw_node *sec, const char *key,
                             const char *base, char **out, struct tw_err *err) {
  *out = NULL;
  const struct tw_node *n = sec ? tw_node_get(sec, key) : NULL;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  char field[64];
  snprintf(field, sizeof field, "policies.%s", key);
  if (n->kind != TW_NODE_SCALAR || !*n->str)
    return tw_err_field(err, TW_E_INVALID, field,
                        "%s: expected the path of a directory", field);
  char full[PATH_MAX + 260], real[PATH_MAX];
  join_path(base, n->str, full, sizeof full);
  struct stat st;
  if (!realpath(full, real) || stat(real, &st) || !S_ISDIR(st.st_mode))
    return tw_err_field(err, TW_E_INVALID, field, "%s: %s is not a directory",
                        field, full);
  *out = tw_strdup(real);
  return TW_OK;
}

static enum tw_rc build_scores(struct tw_policy_set *s,
                               const struct tw_node *list, struct tw_err *err) {
  if (!list || list->kind == TW_NODE_NULL)
    return add_policy(&s->scores[s->n_scores++], &tw_score_cost, NULL,
                      "policies.scores[0]", 1, err);
  if (list->kind != TW_NODE_SEQ)
    return tw_err_field(
        err, TW_E_INVALID, "policies.scores",
        "policies.scores: expected a list of {name, weight}, got %s",
        tw_node_type_name(list));
  if (!list->n || list->n > TW_POLICY_MAX_SCORES)
    return tw_err_field(err, TW_E_INVALID, "policies.scores",
                        "policies.scores: expected 1 to %d scores, got %zu",
                        TW_POLICY_MAX_SCORES, list->n);
  for (size_t i = 0; i < list->n; i++) {
    char path[64];
    snprintf(path, sizeof path, "policies.scores[%zu]", i);
    const struct tw_node *e = list->items[i];
    const struct tw_node *nm =
        e->kind == TW_NODE_MAP ? tw_node_get(e, "name") : e;
    if (!nm || nm->kind != TW_NODE_SCALAR || !*nm->str)
      return tw_err_field(err, TW_E_INVALID, path,
                          "%s: expected a score name or {name: ..., weight: N}",
                          path);
    int64_t weight = 1;
    enum tw_rc rc = pi_cfg_int(e->kind == TW_NODE_MAP ? e : NULL, path,
                               "weight", 0, TW_SCORE_MAX, &weight, err);
    if (rc)
      return rc;
    const struct tw_policy_ops *ops = tw_policy_find_score(nm->str);
    const struct tw_node *pn =
        e->kind == TW_NODE_MAP ? tw_node_get(e, "path") : NULL;
    struct tw_node *sub = NULL;
    const struct tw_node *cfg = e;
    if (pn) {
      if (pn->kind != TW_NODE_SCALAR || !*pn->str)
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s.path: expected a file name", path);
      char full[PATH_MAX], at[80];
      snprintf(at, sizeof at, "%s.path", path);
      if ((rc = resolve_in(s->plugin_dir, "policies.plugin_dir", pn->str, path,
                           at, full, err)))
        return rc;
      void *h = NULL;
      struct tw_err perr = {0};
      if ((rc = tw_policy_plugin_open(full, &ops, &h, &perr)))
        return tw_err_field(err, TW_E_INVALID, path, "%s.path: %s", path,
                            perr.msg);
      s->dl[s->n_dl++] = h;
      if (strcmp(ops->name, nm->str))
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s.name: %s holds plugin \"%s\", not \"%.40s\"",
                            path, full, ops->name, nm->str);
      /* the plugin sees its own settings only, without path and weight */
      sub = tw_calloc(1, sizeof *sub);
      sub->kind = TW_NODE_MAP;
      sub->keys = tw_calloc(e->n ? e->n : 1, sizeof *sub->keys);
      sub->items = tw_calloc(e->n ? e->n : 1, sizeof *sub->items);
      for (size_t k = 0; k < e->n; k++)
        if (strcmp(e->keys[k], "path") && strcmp(e->keys[k], "weight") &&
            strcmp(e->keys[k], "name")) {
          sub->keys[sub->n] = e->keys[k];
          sub->items[sub->n++] = e->items[k];
        }
      cfg = sub;
    } else if (!ops) {
      const char *cands[TW_POLICY_MAX_SCORES + 8];
      size_t nc = 0;
      for (size_t k = 0; tw_policy_registry[k]; k++)
        if (tw_policy_registry[k]->score)
          cands[nc++] = tw_policy_registry[k]->name;
      cands[nc] = NULL;
      const char *near = tw_closest(nm->str, cands);
      return tw_err_field(
          err, TW_E_INVALID, path,
          "%s: unknown score \"%.40s\"%s%s%s (a plugin needs path:)", path,
          nm->str, near ? "; did you mean \"" : "", near ? near : "",
          near ? "\"?" : "");
    }
    for (size_t k = 0; k < s->n_scores; k++)
      if (!strcmp(s->scores[k].name, ops->name)) {
        free(sub ? sub->keys : NULL);
        free(sub ? sub->items : NULL);
        free(sub);
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s: score %s is listed twice", path, ops->name);
      }
    if (pn) {
      /* configure sees a map without path/weight/name */
      struct tw_policy *p = &s->scores[s->n_scores++];
      p->ops = ops;
      p->weight = weight;
      snprintf(p->name, sizeof p->name, "%s", ops->name);
      rc = ops->configure ? ops->configure(sub, path, &p->state, err) : TW_OK;
      free(sub->keys);
      free(sub->items);
      free(sub);
    } else {
      rc = add_policy(&s->scores[s->n_scores++], ops, cfg, path, weight, err);
    }
    if (rc)
      return rc;
  }
  return TW_OK;
}

static enum tw_rc cfg_duration(const struct tw_node *m, const char *path,
                               const char *key, int64_t min, int64_t max,
                               int64_t *out, struct tw_err *err) {
  const struct tw_node *n = m ? tw_node_get(m, key) : NULL;
  if (!n || n->kind == TW_NODE_NULL)
    return TW_OK;
  int64_t v;
  if (!tw_node_as_int(n, &v) &&
      (n->kind != TW_NODE_SCALAR || tw_parse_duration_s(n->str, &v)))
    return tw_err_field(
        err, TW_E_INVALID, path,
        "%s.%s: expected a duration such as 90s, 5m or 1h, got %s", path, key,
        n->kind == TW_NODE_SCALAR ? n->str : tw_node_type_name(n));
  if (v < min || v > max)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.%s: must be between %llds and %llds, got %llds",
                        path, key, (long long)min, (long long)max,
                        (long long)v);
  *out = v;
  return TW_OK;
}

static enum tw_rc build_params(struct tw_policy_set *s,
                               const struct tw_node *sec, struct tw_err *err) {
  enum tw_rc rc;
  const char *p = "policies";
  int64_t cands = (int64_t)s->candidates;
  if ((rc = pi_cfg_int(sec, p, "candidates", 1, 256, &cands, err)))
    return rc;
  s->candidates = (size_t)cands;
  const struct tw_node *c = tw_node_get(sec, "cost");
  if (c && c->kind != TW_NODE_NULL) {
    static const char *const keys[] = {
        "default_duration",      "launch_overhead",      "restart_overhead",
        "spot_interruption_pct", "transfer_round_trips",
        "launch_overhead_private", "launch_overheads", NULL};
    if (c->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, "policies.cost",
                          "policies.cost: expected a mapping, got %s",
                          tw_node_type_name(c));
    if ((rc = pi_cfg_keys(c, "policies.cost", keys, err)) ||
        (rc = cfg_duration(c, "policies.cost", "default_duration", 1,
                           365LL * 86400, &s->cost.default_duration_s, err)) ||
        (rc = cfg_duration(c, "policies.cost", "launch_overhead", 0, 86400,
                           &s->cost.launch_overhead_s, err)) ||
        (rc = cfg_duration(c, "policies.cost", "launch_overhead_private", 0,
                           86400, &s->cost.launch_overhead_private_s, err)) ||
        (rc = cfg_duration(c, "policies.cost", "restart_overhead", 0, 86400,
                           &s->cost.restart_overhead_s, err)))
      return rc;
    const struct tw_node *lo = tw_node_get(c, "launch_overheads");
    if (lo && lo->kind != TW_NODE_NULL) {
      if (lo->kind != TW_NODE_MAP || lo->n > TW_COST_LAUNCH_BY_MAX)
        return tw_err_field(err, TW_E_INVALID, "policies.cost.launch_overheads",
                            "policies.cost.launch_overheads: expected a "
                            "mapping of at most %d providers to durations",
                            TW_COST_LAUNCH_BY_MAX);
      for (size_t i = 0; i < lo->n; i++) {
        if (strlen(lo->keys[i]) >= sizeof s->cost.launch_by[0].provider)
          return tw_err_field(err, TW_E_INVALID,
                              "policies.cost.launch_overheads",
                              "policies.cost.launch_overheads: provider name "
                              "too long");
        if ((rc = cfg_duration(lo, "policies.cost.launch_overheads",
                               lo->keys[i], 0, 86400,
                               &s->cost.launch_by[i].s, err)))
          return rc;
        snprintf(s->cost.launch_by[i].provider,
                 sizeof s->cost.launch_by[i].provider, "%s", lo->keys[i]);
      }
      s->cost.n_launch_by = lo->n;
    }
    int64_t v = s->cost.spot_default_interruption_pct;
    if ((rc = pi_cfg_int(c, "policies.cost", "spot_interruption_pct", 0, 100,
                         &v, err)))
      return rc;
    s->cost.spot_default_interruption_pct = (int)v;
    v = s->cost.transfer_round_trips;
    if ((rc = pi_cfg_int(c, "policies.cost", "transfer_round_trips", 0, 100, &v,
                         err)))
      return rc;
    s->cost.transfer_round_trips = (int)v;
  }
  const struct tw_node *q = tw_node_get(sec, "queue");
  if (q && q->kind != TW_NODE_NULL) {
    static const char *const keys[] = {"aging_per_hour", "aging_max",
                                       "fair_share_weight", "capacity", NULL};
    if (q->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, "policies.queue",
                          "policies.queue: expected a mapping, got %s",
                          tw_node_type_name(q));
    if ((rc = pi_cfg_keys(q, "policies.queue", keys, err)) ||
        (rc = pi_cfg_int(q, "policies.queue", "aging_per_hour", 0, 100000,
                         &s->queue.aging_per_hour, err)) ||
        (rc = pi_cfg_int(q, "policies.queue", "aging_max", 0, 1000000,
                         &s->queue.aging_max, err)) ||
        (rc = pi_cfg_int(q, "policies.queue", "fair_share_weight", 0, 1000000,
                         &s->queue.fair_share_weight, err)))
      return rc;
    const struct tw_node *cap = tw_node_get(q, "capacity");
    if (cap && cap->kind != TW_NODE_NULL) {
      static const char *const ck[] = {"vcpus", "memory_gib", "gpus", NULL};
      const char *cp = "policies.queue.capacity";
      int64_t gib = s->queue.capacity_memory_mib / 1024;
      if (cap->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, cp,
                            "%s: expected a mapping, got %s", cp,
                            tw_node_type_name(cap));
      if ((rc = pi_cfg_keys(cap, cp, ck, err)) ||
          (rc = pi_cfg_int(cap, cp, "vcpus", 1, 1LL << 40,
                           &s->queue.capacity_vcpus, err)) ||
          (rc = pi_cfg_int(cap, cp, "memory_gib", 1, 1LL << 40, &gib, err)) ||
          (rc = pi_cfg_int(cap, cp, "gpus", 1, 1LL << 40,
                           &s->queue.capacity_gpus, err)))
        return rc;
      s->queue.capacity_memory_mib = gib * 1024;
    }
  }
  const struct tw_node *r = tw_node_get(sec, "replication");
  if (r && r->kind != TW_NODE_NULL) {
    static const char *const keys[] = {"enabled", "min_jobs", NULL};
    if (r->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, "policies.replication",
                          "policies.replication: expected a mapping, got %s",
                          tw_node_type_name(r));
    if ((rc = pi_cfg_keys(r, "policies.replication", keys, err)))
      return rc;
    const struct tw_node *en = tw_node_get(r, "enabled");
    if (en && !tw_node_as_bool(en, &s->replication.enabled))
      return tw_err_field(
          err, TW_E_INVALID, "policies.replication",
          "policies.replication.enabled: expected true or false");
    int64_t mj = s->replication.min_jobs;
    if ((rc = pi_cfg_int(r, "policies.replication", "min_jobs", 2, 10000, &mj,
                         err)))
      return rc;
    s->replication.min_jobs = (int)mj;
  }
  return TW_OK;
}

/* Builds from the config file's section (inherit NULL: the directories
 * come from the section, relative to base) or from a request's (the
 * directories are inherit's, and the section may not name any). */
static enum tw_rc build(const struct tw_node *sec, const char *base,
                        const struct tw_policy_set *inherit, bool request,
                        struct tw_policy_set **out, struct tw_err *err) {
  *out = NULL;
  struct tw_policy_set *s = set_new();
  enum tw_rc rc = TW_OK;
  if (sec && sec->kind == TW_NODE_NULL)
    sec = NULL;
  if (sec && sec->kind != TW_NODE_MAP) {
    rc = tw_err_field(err, TW_E_INVALID, "policies",
                      "policies: expected a mapping, got %s",
                      tw_node_type_name(sec));
    goto fail;
  }
  static const char *const dir_keys[] = {"plugin_dir", "network_dir"};
  for (size_t i = 0; request && sec && i < 2; i++)
    if (tw_node_get(sec, dir_keys[i])) {
      char field[64];
      snprintf(field, sizeof field, "policies.%s", dir_keys[i]);
      rc = tw_err_field(err, TW_E_INVALID, field,
                        "%s: set in the config file only, never through the "
                        "API",
                        field);
      goto fail;
    }
  if (request) {
    s->plugin_dir =
        inherit && inherit->plugin_dir ? tw_strdup(inherit->plugin_dir) : NULL;
    s->network_dir = inherit && inherit->network_dir
                         ? tw_strdup(inherit->network_dir)
                         : NULL;
  } else if ((rc = config_dir(sec, "plugin_dir", base, &s->plugin_dir, err)) ||
             (rc =
                  config_dir(sec, "network_dir", base, &s->network_dir, err))) {
    goto fail;
  }
  static const char *const keys[] = {
      "filters",     "scores",  "candidates", "cost",        "queue",
      "replication", "network", "plugin_dir", "network_dir",
      "allow_quarantined", NULL};
  if (sec && ((rc = pi_cfg_keys(sec, "policies", keys, err)) ||
              (rc = build_filters(s, tw_node_get(sec, "filters"), err)) ||
              (rc = build_scores(s, tw_node_get(sec, "scores"), err)) ||
              (rc = build_params(s, sec, err))))
    goto fail;
  if (!sec &&
      ((rc = build_filters(s, NULL, err)) || (rc = build_scores(s, NULL, err))))
    goto fail;
  /* policies.allow_quarantined: offers the price sanity rule holds may be
   * placed (docs/catalog.md) */
  const struct tw_node *aq = sec ? tw_node_get(sec, "allow_quarantined") : NULL;
  if (aq && aq->kind != TW_NODE_NULL) {
    bool allow = aq->kind == TW_NODE_SCALAR && !strcmp(aq->str, "true");
    if (!allow && !(aq->kind == TW_NODE_SCALAR && !strcmp(aq->str, "false"))) {
      rc = tw_err_field(err, TW_E_INVALID, "policies.allow_quarantined",
                        "policies.allow_quarantined: expected true or false");
      goto fail;
    }
    for (size_t i = 0; allow && i < s->n_filters; i++)
      if (s->filters[i].ops == &tw_filter_price_sanity)
        s->filters[i].state = (void *)&tw_filter_price_sanity;
  }
  const struct tw_node *net = sec ? tw_node_get(sec, "network") : NULL;
  if (net && net->kind == TW_NODE_SCALAR && !strcmp(net->str, "builtin"))
    net = NULL;
  if (net && net->kind != TW_NODE_NULL) {
    if (net->kind != TW_NODE_SCALAR || !*net->str) {
      rc = tw_err_field(
          err, TW_E_INVALID, "policies.network",
          "policies.network: expected the path of a network matrix file");
      goto fail;
    }
    char full[PATH_MAX];
    if ((rc = resolve_in(s->network_dir, "policies.network_dir", net->str,
                         "policies.network", "policies.network", full, err)))
      goto fail;
    struct tw_err nerr = {0};
    if ((rc = tw_netmatrix_load(full, &s->net, &nerr))) {
      /* a file the section names and that cannot be used is the
       * section's fault: the caller's to fix, never retried */
      rc = tw_err_field(err, TW_E_INVALID, "policies.network",
                        "policies.network: %s", nerr.msg);
      goto fail;
    }
    s->net_source = tw_strdup(full);
  } else {
    s->net = tw_netmatrix_builtin();
    s->net_source = tw_strdup("built-in");
  }
  if (sec) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_node_to_json(sec, &b);
    s->config_json = tw_buf_detach(&b);
  }
  *out = s;
  return TW_OK;
fail:
  set_free(s);
  return rc;
}

enum tw_rc tw_policy_set_build(const struct tw_node *sec, const char *base,
                               struct tw_policy_set **out, struct tw_err *err) {
  return build(sec, base, NULL, false, out, err);
}

struct tw_policy_set *tw_policy_set_default(void) {
  struct tw_policy_set *s = NULL;
  struct tw_err err = {0};
  build(NULL, NULL, NULL, false, &s, &err); /* cannot fail: built-ins only */
  return s;
}

static enum tw_rc parse(const char *text, size_t len, const char *base,
                        const struct tw_policy_set *inherit, bool request,
                        struct tw_policy_set **out, struct tw_err *err) {
  struct tw_node *root = NULL;
  *out = NULL;
  enum tw_rc rc = tw_node_parse_yaml(text, len, &root, err);
  if (rc)
    return rc;
  /* accept the section itself or a document holding `policies:` */
  const struct tw_node *sec = root;
  if (root->kind == TW_NODE_MAP && root->n == 1 &&
      !strcmp(root->keys[0], "policies"))
    sec = root->items[0];
  rc = build(sec, base, inherit, request, out, err);
  tw_node_free(root);
  return rc;
}

enum tw_rc tw_policy_set_parse(const char *text, size_t len, const char *base,
                               struct tw_policy_set **out, struct tw_err *err) {
  return parse(text, len, base, NULL, false, out, err);
}

enum tw_rc tw_policy_set_parse_request(const char *text, size_t len,
                                       const struct tw_policy_set *in_force,
                                       struct tw_policy_set **out,
                                       struct tw_err *err) {
  return parse(text, len, NULL, in_force, true, out, err);
}

static const char *scope_name(unsigned scope) {
  return scope == TW_SCOPE_LOCATION ? "location"
         : scope == TW_SCOPE_SHAPE  ? "shape"
                                    : "offer";
}

void tw_policy_set_to_json(const struct tw_policy_set *s, struct tw_buf *b) {
  tw_buf_printf(b, "{\"generation\":%llu,\"filters\":[",
                (unsigned long long)s->generation);
  for (size_t i = 0; i < s->n_filters; i++) {
    tw_buf_printf(b, "%s{\"name\":", i ? "," : "");
    tw_buf_json_str(b, s->filters[i].name);
    tw_buf_printf(b, ",\"stage\":\"%s\"}",
                  scope_name(s->filters[i].ops->scope));
  }
  tw_buf_adds(b, "],\"scores\":[");
  for (size_t i = 0; i < s->n_scores; i++) {
    tw_buf_printf(b, "%s{\"name\":", i ? "," : "");
    tw_buf_json_str(b, s->scores[i].name);
    tw_buf_printf(
        b, ",\"weight\":%lld,\"builtin\":%s}", (long long)s->scores[i].weight,
        tw_policy_find_score(s->scores[i].name) == s->scores[i].ops ? "true"
                                                                    : "false");
  }
  tw_buf_printf(b,
                "],\"candidates\":%zu,\"cost\":{\"default_duration_s\":%lld,"
                "\"launch_overhead_s\":%lld,\"restart_overhead_s\":%lld,"
                "\"spot_interruption_pct\":%d,\"transfer_round_trips\":%d,"
                "\"launch_overhead_private_s\":%lld,\"launch_overheads_s\":{",
                s->candidates, (long long)s->cost.default_duration_s,
                (long long)s->cost.launch_overhead_s,
                (long long)s->cost.restart_overhead_s,
                s->cost.spot_default_interruption_pct,
                s->cost.transfer_round_trips,
                (long long)s->cost.launch_overhead_private_s);
  for (size_t i = 0; i < s->cost.n_launch_by; i++) {
    tw_buf_adds(b, i ? "," : "");
    tw_buf_json_str(b, s->cost.launch_by[i].provider);
    tw_buf_printf(b, ":%lld", (long long)s->cost.launch_by[i].s);
  }
  tw_buf_adds(b, "}},");
  tw_buf_printf(
      b,
      "\"queue\":{\"aging_per_hour\":%lld,\"aging_max\":%lld,"
      "\"fair_share_weight\":%lld,\"capacity\":{\"vcpus\":%lld,"
      "\"memory_gib\":%lld,\"gpus\":%lld}},",
      (long long)s->queue.aging_per_hour, (long long)s->queue.aging_max,
      (long long)s->queue.fair_share_weight, (long long)s->queue.capacity_vcpus,
      (long long)(s->queue.capacity_memory_mib / 1024),
      (long long)s->queue.capacity_gpus);
  tw_buf_printf(b,
                "\"replication\":{\"enabled\":%s,\"min_jobs\":%d},\"network\":{"
                "\"source\":",
                s->replication.enabled ? "true" : "false",
                s->replication.min_jobs);
  tw_buf_json_str(b, s->net_source ? s->net_source : "built-in");
  tw_buf_printf(b, ",\"regions\":%zu,\"links\":%zu},\"config\":",
                tw_netmatrix_n_regions(s->net), tw_netmatrix_n_links(s->net));
  tw_buf_adds(b, s->config_json ? s->config_json : "null");
  tw_buf_addc(b, '}');
}
