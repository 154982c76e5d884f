/* score_packing.c - scores for the operator's wishes: bin-packing or
 * spreading on private capacity, and preferred providers or regions. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/place/policy_int.h"

/* ---- packing
 * ------------------------------------------------------------------ */

struct pack_state {
  bool spread;
};

static enum tw_rc pack_configure(const struct tw_node *cfg, const char *path,
                                 void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "weight", "mode", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  struct pack_state *st = tw_calloc(1, sizeof *st);
  *state = st;
  const struct tw_node *m = cfg ? tw_node_get(cfg, "mode") : NULL;
  if (!m)
    return TW_OK;
  if (m->kind != TW_NODE_SCALAR ||
      (strcmp(m->str, "binpack") && strcmp(m->str, "spread")))
    return tw_err_field(
        err, TW_E_INVALID, path, "%s.mode: expected binpack or spread, got %s",
        path, m->kind == TW_NODE_SCALAR ? m->str : tw_node_type_name(m));
  st->spread = !strcmp(m->str, "spread");
  return TW_OK;
}

/* Private offers only (capacity known): bin-packing prefers the pool the
 * job fills most, spreading the one it leaves emptiest.  Clouds score in
 * the middle so the weight does not favour or punish them. */
static int64_t pack_score(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_cand *c) {
  const struct pack_state *st = PI_STATE(self, struct pack_state);
  const struct tw_offer *o = c->offer;
  if (o->capacity <= 0)
    return TW_SCORE_MAX / 2;
  int64_t free_after = o->capacity -
                       tw_capacity_view_used(ctx->capacity, o->id) -
                       (ctx->nodes > 0 ? ctx->nodes : 1);
  if (free_after < 0)
    free_after = 0;
  int64_t left = (int64_t)((__int128)TW_SCORE_MAX * free_after / o->capacity);
  return st && st->spread ? left : TW_SCORE_MAX - left;
}

const struct tw_policy_ops tw_score_packing = {.name = "packing",
                                               .version = TW_POLICY_ABI_VERSION,
                                               .configure = pack_configure,
                                               .score = pack_score};

/* ---- preference
 * ----------------------------------------------------------------- */

struct pref {
  char match[160];
  int64_t bonus;
};
struct pref_state {
  struct pref *p;
  size_t n;
};

static void pref_release(void *s) {
  struct pref_state *st = s;
  if (st)
    free(st->p);
  free(st);
}

/* prefer: [{match: "aws:us-*", bonus: 1000000}, {match: "slurm:*", bonus:
 * 500000}] */
static enum tw_rc pref_configure(const struct tw_node *cfg, const char *path,
                                 void **state, struct tw_err *err) {
  static const char *const keys[] = {"name", "weight", "prefer", NULL};
  enum tw_rc rc = pi_cfg_keys(cfg, path, keys, err);
  if (rc)
    return rc;
  struct pref_state *st = tw_calloc(1, sizeof *st);
  *state = st;
  const struct tw_node *l = cfg ? tw_node_get(cfg, "prefer") : NULL;
  if (!l || l->kind == TW_NODE_NULL)
    return TW_OK;
  if (l->kind != TW_NODE_SEQ)
    return tw_err_field(err, TW_E_INVALID, path,
                        "%s.prefer: expected a list, got %s", path,
                        tw_node_type_name(l));
  st->p = tw_calloc(l->n ? l->n : 1, sizeof *st->p);
  for (size_t i = 0; i < l->n; i++) {
    char p[160];
    snprintf(p, sizeof p, "%s.prefer[%zu]", path, i);
    static const char *const ek[] = {"match", "bonus", NULL};
    const struct tw_node *e = l->items[i];
    if (e->kind != TW_NODE_MAP)
      return tw_err_field(err, TW_E_INVALID, p,
                          "%s: expected a mapping, got %s", p,
                          tw_node_type_name(e));
    if ((rc = pi_cfg_keys(e, p, ek, err)))
      return rc;
    const struct tw_node *m = tw_node_get(e, "match");
    if (!m || m->kind != TW_NODE_SCALAR || !*m->str ||
        strlen(m->str) >= sizeof st->p[i].match)
      return tw_err_field(err, TW_E_INVALID, p,
                          "%s.match: expected a selector such as \"aws:us-*\"",
                          p);
    snprintf(st->p[i].match, sizeof st->p[i].match, "%s", m->str);
    st->p[i].bonus = TW_SCORE_MAX;
    if ((rc = pi_cfg_int(e, p, "bonus", 0, TW_SCORE_MAX, &st->p[i].bonus, err)))
      return rc;
    st->n++;
  }
  return TW_OK;
}

static int64_t pref_score(const struct tw_policy *self,
                          const struct tw_place_ctx *ctx,
                          const struct tw_cand *c) {
  (void)ctx;
  const struct pref_state *st = PI_STATE(self, struct pref_state);
  int64_t best = 0;
  for (size_t i = 0; st && i < st->n; i++)
    if (st->p[i].bonus > best && pi_selector_match(st->p[i].match, c->offer))
      best = st->p[i].bonus;
  return best;
}

const struct tw_policy_ops tw_score_preference = {.name = "preference",
                                                  .version =
                                                      TW_POLICY_ABI_VERSION,
                                                  .configure = pref_configure,
                                                  .release = pref_release,
                                                  .score = pref_score};
