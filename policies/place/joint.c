/* joint.c - a workflow's placement as a whole (joint.h): the per-region
 * table from plans, greedy step-by-step placement, the chain DP, the
 * chain-decomposition heuristic for DAGs, and the explanation. */
#include "policies/place/joint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/sort.h"
#include "broker/core/spec.h"
#include "policies/place/cost.h"
#include "policies/place/index.h"
#include "policies/place/index_int.h"
#include "policies/place/netmatrix.h"

/* ---- helpers ------------------------------------------------------------ */

static int64_t sadd(int64_t a, int64_t b) {
  if (a >= TW_JOINT_INF || b >= TW_JOINT_INF)
    return TW_JOINT_INF;
  int64_t s = a + b;
  return s >= TW_JOINT_INF ? TW_JOINT_INF : s;
}

static int64_t ceil_div128(__int128 a, int64_t b) {
  return (int64_t)((a + b - 1) / b);
}

static int64_t wait_cost(int64_t uusd_h, int64_t s) {
  return s > 0 ? ceil_div128((__int128)uusd_h * s, 3600) : 0;
}

void tw_joint_problem_release(struct tw_joint_problem *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n_tasks; i++) {
    if (p->tasks[i].spec) {
      tw_spec_release(p->tasks[i].spec);
      free(p->tasks[i].spec);
    }
  }
  free(p->tasks);
  free(p->edges);
  memset(p, 0, sizeof *p);
}

void tw_joint_table_release(struct tw_joint_table *t) {
  if (!t)
    return;
  free(t->cells);
  free(t->row);
  free(t->egress_uusd_per_gb);
  free(t->rtt_us);
  free(t->bandwidth_kbps);
  memset(t, 0, sizeof *t);
}

/* In- and out-edges of every task (CSR over edge indices). */
struct adj {
  size_t *in_at, *out_at; /* n + 1 */
  uint32_t *in, *out;     /* edge indices */
};

static void adj_build(const struct tw_joint_problem *p, struct adj *g) {
  size_t n = p->n_tasks;
  g->in_at = tw_calloc(n + 1, sizeof *g->in_at);
  g->out_at = tw_calloc(n + 1, sizeof *g->out_at);
  g->in = tw_malloc((p->n_edges ? p->n_edges : 1) * sizeof *g->in);
  g->out = tw_malloc((p->n_edges ? p->n_edges : 1) * sizeof *g->out);
  for (size_t e = 0; e < p->n_edges; e++) {
    g->in_at[p->edges[e].to + 1]++;
    g->out_at[p->edges[e].from + 1]++;
  }
  for (size_t i = 0; i < n; i++) {
    g->in_at[i + 1] += g->in_at[i];
    g->out_at[i + 1] += g->out_at[i];
  }
  size_t *fi = tw_malloc((n + 1) * sizeof *fi);
  size_t *fo = tw_malloc((n + 1) * sizeof *fo);
  memcpy(fi, g->in_at, (n + 1) * sizeof *fi);
  memcpy(fo, g->out_at, (n + 1) * sizeof *fo);
  for (size_t e = 0; e < p->n_edges; e++) {
    g->in[fi[p->edges[e].to]++] = (uint32_t)e;
    g->out[fo[p->edges[e].from]++] = (uint32_t)e;
  }
  free(fi);
  free(fo);
}

static void adj_release(struct adj *g) {
  free(g->in_at);
  free(g->out_at);
  free(g->in);
  free(g->out);
}

enum tw_rc tw_joint_topo(const struct tw_joint_problem *p, uint32_t *order,
                         struct tw_err *err) {
  size_t n = p->n_tasks;
  struct adj g;
  adj_build(p, &g);
  size_t *indeg = tw_malloc((n ? n : 1) * sizeof *indeg);
  size_t head = 0, tail = 0;
  for (size_t v = 0; v < n; v++) {
    indeg[v] = g.in_at[v + 1] - g.in_at[v];
    if (!indeg[v])
      order[tail++] = (uint32_t)v;
  }
  while (head < tail) {
    uint32_t v = order[head++];
    for (size_t k = g.out_at[v]; k < g.out_at[v + 1]; k++) {
      uint32_t w = p->edges[g.out[k]].to;
      if (!--indeg[w])
        order[tail++] = w;
    }
  }
  enum tw_rc rc = TW_OK;
  if (tail < n) {
    size_t v = 0;
    while (v < n && !indeg[v])
      v++;
    rc = tw_err_field(err, TW_E_INVALID, "tasks",
                      "tasks: the dependencies form a cycle through %s",
                      v < n ? p->tasks[v].name : "?");
  }
  free(indeg);
  adj_release(&g);
  return rc;
}

/* ---- the cost of a placement ----------------------------------------------
 */

static const struct tw_joint_cell *cell(const struct tw_joint_table *t,
                                        size_t v, int32_t r) {
  return &t->cells[(size_t)t->row[v] * t->n_regions + (size_t)r];
}

static int64_t edge_egress(const struct tw_joint_table *t, int64_t bytes,
                           int32_t a, int32_t b) {
  if (a == b)
    return 0;
  return tw_cost_egress_uusd(
      bytes, t->egress_uusd_per_gb[(size_t)a * t->n_regions + (size_t)b]);
}

/* Within a region data is read in place, as the cost model has it for
 * datasets: no egress, no transfer wait. */
static int64_t edge_wait(const struct tw_joint_table *t, int64_t bytes,
                         int32_t a, int32_t b) {
  if (a == b)
    return 0;
  size_t k = (size_t)a * t->n_regions + (size_t)b;
  return tw_cost_transfer_s(bytes, t->rtt_us[k], t->bandwidth_kbps[k],
                            t->round_trips);
}

/* v's cost at r, its predecessors where at[] says (pred `ou` at `oa`
 * overrides at[ou]; -1 unplaced: that edge counts nothing). */
static int64_t task_cost(const struct tw_joint_table *t,
                         const struct tw_joint_problem *p, const struct adj *g,
                         const int32_t *at, uint32_t v, int32_t r, uint32_t ou,
                         int32_t oa, struct tw_joint_cost *out) {
  struct tw_joint_cost c = {.total_uusd = TW_JOINT_INF};
  if (r < 0) {
    if (out)
      *out = c;
    return TW_JOINT_INF;
  }
  const struct tw_joint_cell *x = cell(t, v, r);
  if (x->base_uusd >= TW_JOINT_INF) {
    if (out)
      *out = c;
    return TW_JOINT_INF;
  }
  c.compute_uusd = x->compute_uusd + x->spot_uusd;
  c.egress_uusd = x->ds_egress_uusd;
  c.transfer_s = x->ds_wait_s;
  for (size_t k = g->in_at[v]; k < g->in_at[v + 1]; k++) {
    const struct tw_joint_edge *e = &p->edges[g->in[k]];
    int32_t a = e->from == ou ? oa : at[e->from];
    if (a < 0 || e->bytes <= 0)
      continue;
    c.egress_uusd = sadd(c.egress_uusd, edge_egress(t, e->bytes, a, r));
    int64_t w = edge_wait(t, e->bytes, a, r);
    if (w > c.transfer_s)
      c.transfer_s = w;
  }
  c.transfer_uusd = wait_cost(x->wait_uusd_h, c.transfer_s);
  c.total_uusd = sadd(sadd(c.compute_uusd, c.egress_uusd), c.transfer_uusd);
  if (out)
    *out = c;
  return c.total_uusd;
}

static int64_t eval_g(const struct tw_joint_table *t,
                      const struct tw_joint_problem *p, const struct adj *g,
                      const int32_t *assign, struct tw_joint_cost *per) {
  int64_t total = 0;
  for (size_t v = 0; v < p->n_tasks; v++) {
    int64_t c = task_cost(t, p, g, assign, (uint32_t)v, assign[v], UINT32_MAX,
                          -1, per ? &per[v] : NULL);
    total = sadd(total, c);
  }
  return total;
}

int64_t tw_joint_eval(const struct tw_joint_table *t,
                      const struct tw_joint_problem *p, const int32_t *assign,
                      struct tw_joint_cost *per) {
  struct adj g;
  adj_build(p, &g);
  int64_t total = eval_g(t, p, &g, assign, per);
  adj_release(&g);
  return total;
}

/* ---- greedy ------------------------------------------------------------- */

static void greedy_g(const struct tw_joint_table *t,
                     const struct tw_joint_problem *p, const struct adj *g,
                     const uint32_t *order, int32_t *assign) {
  for (size_t v = 0; v < p->n_tasks; v++)
    assign[v] = -1;
  for (size_t i = 0; i < p->n_tasks; i++) {
    uint32_t v = order[i];
    int64_t best = TW_JOINT_INF;
    int32_t br = -1;
    for (size_t r = 0; r < t->n_regions; r++) {
      int64_t c =
          task_cost(t, p, g, assign, v, (int32_t)r, UINT32_MAX, -1, NULL);
      if (c < best) {
        best = c;
        br = (int32_t)r;
      }
    }
    assign[v] = br;
  }
}

enum tw_rc tw_joint_solve_greedy(const struct tw_joint_table *t,
                                 const struct tw_joint_problem *p,
                                 int32_t *assign, struct tw_err *err) {
  uint32_t *order = tw_malloc((p->n_tasks ? p->n_tasks : 1) * sizeof *order);
  enum tw_rc rc = tw_joint_topo(p, order, err);
  if (rc == TW_OK) {
    struct adj g;
    adj_build(p, &g);
    greedy_g(t, p, &g, order, assign);
    adj_release(&g);
  }
  free(order);
  return rc;
}

/* ---- the chain DP ---------------------------------------------------------
 */

struct dp_ws {
  int64_t *f, *nf, *other_eg, *other_wait, *outc;
  uint32_t *by_f; /* regions by f, ascending */
  /* per region, the cheapest egress price into it from another region:
   * what an edge's bytes cost at least when the step moves */
  int64_t *min_in_per_gb;
  int32_t *arg; /* [step * R + r] */
  size_t arg_cap;
};

static int by_f_cmp(const void *a, const void *b, void *ctx) {
  const int64_t *f = ctx;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (f[x] != f[y])
    return f[x] < f[y] ? -1 : 1;
  return x < y ? -1 : x > y; /* ties: the lower region, as a scan finds */
}

/* Places chain c[0..k) by DP with every other task at at[]; writes the
 * chain's regions into at[] (the others untouched).  The edge c[i-1] ->
 * c[i] is `link[i]` (i >= 1). */
static void dp_chain(const struct tw_joint_table *t,
                     const struct tw_joint_problem *p, const struct adj *g,
                     const uint32_t *c, const uint32_t *link, size_t k,
                     int32_t *at, struct dp_ws *w) {
  size_t R = t->n_regions;
  if (!R || !k)
    return;
  if (w->arg_cap < k * R) {
    free(w->arg);
    w->arg_cap = k * R;
    w->arg = tw_malloc(w->arg_cap * sizeof *w->arg);
  }
  for (size_t i = 0; i < k; i++) {
    uint32_t v = c[i];
    const struct tw_joint_edge *le = i ? &p->edges[link[i]] : NULL;
    /* per region: the edges from fixed predecessors (not the link) */
    for (size_t r = 0; r < R; r++) {
      const struct tw_joint_cell *x = cell(t, v, (int32_t)r);
      w->other_eg[r] = x->ds_egress_uusd;
      w->other_wait[r] = x->ds_wait_s;
      for (size_t q = g->in_at[v]; q < g->in_at[v + 1]; q++) {
        if (le && g->in[q] == link[i])
          continue;
        const struct tw_joint_edge *e = &p->edges[g->in[q]];
        int32_t a = at[e->from];
        if (a < 0 || e->bytes <= 0)
          continue;
        w->other_eg[r] =
            sadd(w->other_eg[r], edge_egress(t, e->bytes, a, (int32_t)r));
        int64_t ws = edge_wait(t, e->bytes, a, (int32_t)r);
        if (ws > w->other_wait[r])
          w->other_wait[r] = ws;
      }
      /* successors already placed, but for the next step of the chain:
       * their cost with v here (a constant of theirs does not change the
       * choice) */
      w->outc[r] = 0;
      for (size_t q = g->out_at[v]; q < g->out_at[v + 1]; q++) {
        const struct tw_joint_edge *e = &p->edges[g->out[q]];
        if ((i + 1 < k && g->out[q] == link[i + 1]) || at[e->to] < 0)
          continue;
        w->outc[r] = sadd(w->outc[r], task_cost(t, p, g, at, e->to, at[e->to],
                                                v, (int32_t)r, NULL));
      }
    }
    /* the previous step's regions by f: an edge costs >= 0, so the scan
     * over them stops at the first whose f alone cannot win */
    size_t nf = 0;
    if (i) {
      for (size_t a = 0; a < R; a++)
        if (w->f[a] < TW_JOINT_INF)
          w->by_f[nf++] = (uint32_t)a;
      tw_sort_r(w->by_f, nf, sizeof *w->by_f, by_f_cmp, w->f);
    }
    for (size_t r = 0; r < R; r++) {
      const struct tw_joint_cell *x = cell(t, v, (int32_t)r);
      int64_t own = x->base_uusd >= TW_JOINT_INF
                        ? TW_JOINT_INF
                        : sadd(x->compute_uusd + x->spot_uusd, w->other_eg[r]);
      int64_t best = TW_JOINT_INF;
      int32_t ba = -1;
      if (own < TW_JOINT_INF) {
        if (!i) {
          best = sadd(own, wait_cost(x->wait_uusd_h, w->other_wait[r]));
        } else {
          int64_t floor =
              sadd(own, wait_cost(x->wait_uusd_h, w->other_wait[r]));
          /* staying in the region moves nothing: the bound to beat; a
           * move costs at least the cheapest egress into r */
          if (w->f[r] < TW_JOINT_INF) {
            best = sadd(w->f[r], floor);
            ba = (int32_t)r;
          }
          int64_t move = sadd(
              floor, le->bytes > 0
                         ? tw_cost_egress_uusd(le->bytes, w->min_in_per_gb[r])
                         : 0);
          for (size_t q = 0; q < nf; q++) {
            size_t a = w->by_f[q];
            if (sadd(w->f[a], move) >= best)
              break;
            if (a == r)
              continue;
            int64_t eg = 0, ws = w->other_wait[r];
            if (le->bytes > 0) {
              eg = edge_egress(t, le->bytes, (int32_t)a, (int32_t)r);
              int64_t lw = edge_wait(t, le->bytes, (int32_t)a, (int32_t)r);
              if (lw > ws)
                ws = lw;
            }
            int64_t v2 = sadd(sadd(w->f[a], own),
                              sadd(eg, wait_cost(x->wait_uusd_h, ws)));
            if (v2 < best) {
              best = v2;
              ba = (int32_t)a;
            }
          }
        }
        best = sadd(best, w->outc[r]);
      }
      w->nf[r] = best;
      w->arg[i * R + r] = ba;
    }
    int64_t *tmp = w->f;
    w->f = w->nf;
    w->nf = tmp;
  }
  int64_t best = TW_JOINT_INF;
  int32_t br = -1;
  for (size_t r = 0; r < R; r++)
    if (w->f[r] < best) {
      best = w->f[r];
      br = (int32_t)r;
    }
  for (size_t i = k; i-- > 0;) {
    at[c[i]] = br;
    br = br >= 0 ? w->arg[i * R + (size_t)br] : -1;
  }
}

/* Heavy-path chains in topological order: chain_of[] starts at ch_at[j]
 * in ch[], the link edge of each step in lk[] (unused for the first). */
struct chains {
  uint32_t *ch, *lk;
  size_t *at; /* n_chains + 1 */
  size_t n;
  size_t n_links;
};

static void chains_build(const struct tw_joint_problem *p, const struct adj *g,
                         const uint32_t *order, struct chains *cs) {
  size_t n = p->n_tasks;
  cs->ch = tw_malloc((n ? n : 1) * sizeof *cs->ch);
  cs->lk = tw_malloc((n ? n : 1) * sizeof *cs->lk);
  cs->at = tw_malloc((n + 1) * sizeof *cs->at);
  cs->n = 0;
  cs->n_links = 0;
  bool *in = tw_calloc(n ? n : 1, sizeof *in);
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = order[i];
    if (in[v])
      continue;
    cs->at[cs->n++] = pos;
    uint32_t cur = v;
    uint32_t via = UINT32_MAX;
    for (;;) {
      in[cur] = true;
      cs->ch[pos] = cur;
      cs->lk[pos] = via;
      pos++;
      uint32_t next = UINT32_MAX, ne = UINT32_MAX;
      int64_t most = -1;
      for (size_t q = g->out_at[cur]; q < g->out_at[cur + 1]; q++) {
        const struct tw_joint_edge *e = &p->edges[g->out[q]];
        if (in[e->to] || e->bytes <= most)
          continue;
        most = e->bytes;
        next = e->to;
        ne = g->out[q];
      }
      if (next == UINT32_MAX)
        break;
      cur = next;
      via = ne;
      cs->n_links++;
    }
  }
  cs->at[cs->n] = pos;
  free(in);
}

static void chains_release(struct chains *cs) {
  free(cs->ch);
  free(cs->lk);
  free(cs->at);
}

static void dp_ws_init(struct dp_ws *w, const struct tw_joint_table *t) {
  size_t R = t->n_regions;
  memset(w, 0, sizeof *w);
  size_t n = R ? R : 1;
  w->min_in_per_gb = tw_malloc(n * sizeof *w->min_in_per_gb);
  for (size_t r = 0; r < R; r++) {
    int64_t m = INT64_MAX;
    for (size_t a = 0; a < R; a++)
      if (a != r && t->egress_uusd_per_gb[a * R + r] < m)
        m = t->egress_uusd_per_gb[a * R + r];
    w->min_in_per_gb[r] = m == INT64_MAX || m < 0 ? 0 : m;
  }
  w->f = tw_malloc(n * sizeof *w->f);
  w->nf = tw_malloc(n * sizeof *w->nf);
  w->other_eg = tw_malloc(n * sizeof *w->other_eg);
  w->other_wait = tw_malloc(n * sizeof *w->other_wait);
  w->outc = tw_malloc(n * sizeof *w->outc);
  w->by_f = tw_malloc(n * sizeof *w->by_f);
}

static void dp_ws_release(struct dp_ws *w) {
  free(w->f);
  free(w->nf);
  free(w->other_eg);
  free(w->other_wait);
  free(w->outc);
  free(w->by_f);
  free(w->min_in_per_gb);
  free(w->arg);
}

/* Re-places each chain with the others fixed while the total falls.  A
 * chain's move changes the cost of its own tasks and of their successors
 * only: those are summed before and after. */
static int64_t descend(const struct tw_joint_table *t,
                       const struct tw_joint_problem *p, const struct adj *g,
                       const struct chains *cs, int32_t *assign,
                       struct dp_ws *w, unsigned *rounds) {
  size_t n = p->n_tasks;
  int32_t *keep = tw_malloc((n ? n : 1) * sizeof *keep);
  uint32_t *mark = tw_calloc(n ? n : 1, sizeof *mark);
  uint32_t *hit = tw_malloc((n ? n : 1) * sizeof *hit);
  uint32_t stamp = 0;
  int64_t total = eval_g(t, p, g, assign, NULL);
  unsigned r = 0;
  while (r < TW_JOINT_ROUNDS_MAX) {
    r++;
    bool better = false;
    for (size_t j = 0; j < cs->n; j++) {
      const uint32_t *c = cs->ch + cs->at[j];
      size_t k = cs->at[j + 1] - cs->at[j], nh = 0;
      stamp++;
      for (size_t i = 0; i < k; i++) {
        if (mark[c[i]] != stamp)
          mark[c[i]] = stamp, hit[nh++] = c[i];
        for (size_t q = g->out_at[c[i]]; q < g->out_at[c[i] + 1]; q++) {
          uint32_t s = p->edges[g->out[q]].to;
          if (mark[s] != stamp)
            mark[s] = stamp, hit[nh++] = s;
        }
      }
      int64_t before = 0, after = 0;
      for (size_t i = 0; i < nh; i++)
        before = sadd(before, task_cost(t, p, g, assign, hit[i], assign[hit[i]],
                                        UINT32_MAX, -1, NULL));
      for (size_t i = 0; i < k; i++)
        keep[i] = assign[c[i]];
      dp_chain(t, p, g, c, cs->lk + cs->at[j], k, assign, w);
      for (size_t i = 0; i < nh; i++)
        after = sadd(after, task_cost(t, p, g, assign, hit[i], assign[hit[i]],
                                      UINT32_MAX, -1, NULL));
      if (after < before) {
        better = true;
      } else {
        for (size_t i = 0; i < k; i++)
          assign[c[i]] = keep[i];
      }
    }
    if (!better)
      break;
  }
  total = eval_g(t, p, g, assign, NULL);
  free(keep);
  free(mark);
  free(hit);
  *rounds += r;
  return total;
}

enum tw_rc tw_joint_solve(const struct tw_joint_table *t,
                          const struct tw_joint_problem *p, int32_t *assign,
                          struct tw_joint_info *info, struct tw_err *err) {
  size_t n = p->n_tasks;
  struct tw_joint_info inf = {.method = "none", .exact = true};
  uint32_t *order = tw_malloc((n ? n : 1) * sizeof *order);
  enum tw_rc rc = tw_joint_topo(p, order, err);
  if (rc) {
    free(order);
    return rc;
  }
  struct adj g;
  adj_build(p, &g);
  struct chains cs;
  chains_build(p, &g, order, &cs);
  struct dp_ws w;
  dp_ws_init(&w, t);
  /* the lower bound: every task at its cheapest alone */
  int32_t *none = tw_malloc((n ? n : 1) * sizeof *none);
  for (size_t v = 0; v < n; v++)
    none[v] = -1;
  int64_t lb = 0;
  for (size_t v = 0; v < n; v++) {
    int64_t best = TW_JOINT_INF;
    for (size_t r = 0; r < t->n_regions; r++) {
      int64_t c = task_cost(t, p, &g, none, (uint32_t)v, (int32_t)r, UINT32_MAX,
                            -1, NULL);
      if (c < best)
        best = c;
    }
    lb = sadd(lb, best);
  }
  inf.lower_bound_uusd = lb;
  inf.n_chains = cs.n;
  /* every edge a link of a chain: the chains are independent paths, and
   * one DP each is optimal */
  bool paths = cs.n_links == p->n_edges;
  for (size_t v = 0; v < n; v++)
    assign[v] = -1;
  for (size_t j = 0; j < cs.n; j++)
    dp_chain(t, p, &g, cs.ch + cs.at[j], cs.lk + cs.at[j],
             cs.at[j + 1] - cs.at[j], assign, &w);
  if (p->n_edges && paths) {
    inf.method = "chain-dp";
  } else if (p->n_edges) {
    inf.method = "chains+descent";
    inf.exact = false;
    int64_t a = descend(t, p, &g, &cs, assign, &w, &inf.rounds);
    int32_t *gr = tw_malloc((n ? n : 1) * sizeof *gr);
    greedy_g(t, p, &g, order, gr);
    int64_t b = descend(t, p, &g, &cs, gr, &w, &inf.rounds);
    if (b < a)
      memcpy(assign, gr, n * sizeof *gr);
    free(gr);
  }
  free(none);
  dp_ws_release(&w);
  chains_release(&cs);
  adj_release(&g);
  free(order);
  if (info)
    *info = inf;
  return TW_OK;
}

/* ---- the table from plans --------------------------------------------------
 */

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* A plan of spec restricted to region key "provider:region". */
static enum tw_rc plan_in_region(const struct tw_policy_set *set,
                                 const struct tw_place_snapshot *snap,
                                 const struct tw_job_spec *spec,
                                 const char *key, int64_t now_ms,
                                 struct tw_plan_ws *ws, struct tw_plan *out,
                                 struct tw_err *err) {
  char prov[TW_MODEL_NAME_MAX], reg[TW_MODEL_NAME_MAX];
  const char *colon = strchr(key, ':');
  snprintf(prov, sizeof prov, "%.*s",
           (int)(colon ? (size_t)(colon - key) : strlen(key)), key);
  snprintf(reg, sizeof reg, "%s", colon ? colon + 1 : "");
  struct tw_job_spec s = *spec;
  struct tw_label_selector *sel =
      tw_malloc((spec->n_selectors + 2) * sizeof *sel);
  if (spec->n_selectors)
    memcpy(sel, spec->selectors, spec->n_selectors * sizeof *sel);
  char *pv[1] = {prov}, *rv[1] = {reg};
  char lp[] = "provider", lr[] = "region";
  sel[spec->n_selectors] = (struct tw_label_selector){
      .label = lp, .op = TW_SEL_IN, .values = pv, .n_values = 1};
  sel[spec->n_selectors + 1] = (struct tw_label_selector){
      .label = lr, .op = TW_SEL_IN, .values = rv, .n_values = 1};
  s.selectors = sel;
  s.n_selectors = spec->n_selectors + 2;
  struct tw_plan_input in = {.job = &s, .now_ms = now_ms};
  struct tw_plan_opts opts = {0};
  enum tw_rc rc = tw_plan_make(set, snap, &in, &opts, ws, out, err);
  free(sel);
  return rc;
}

static void fill_place(const struct tw_joint_table *t,
                       const struct tw_offer_index *ix, size_t v, int32_t r,
                       const struct tw_joint_cost *c,
                       struct tw_joint_place *pl) {
  memset(pl, 0, sizeof *pl);
  pl->region = r;
  pl->cost = *c;
  pl->market = "";
  if (r < 0)
    return;
  const struct tw_joint_cell *x = cell(t, v, r);
  if (x->base_uusd >= TW_JOINT_INF)
    return;
  struct tw_offer scratch;
  const struct tw_offer *o = tw_offer_index_get(ix, x->offer, &scratch);
  snprintf(pl->offer_id, sizeof pl->offer_id, "%s", o->id);
  snprintf(pl->where, sizeof pl->where, "%s:%s", o->provider, o->region);
  snprintf(pl->zone, sizeof pl->zone, "%s", o->zone);
  snprintf(pl->instance_type, sizeof pl->instance_type, "%s", o->instance_type);
  pl->market = tw_market_str(o->market);
  pl->price_uusd_per_hour = o->price_uusd_per_hour;
}

static void fill_placement(const struct tw_joint_table *t,
                           const struct tw_joint_problem *p,
                           const struct tw_offer_index *ix,
                           const int32_t *assign,
                           struct tw_joint_placement *pl) {
  size_t n = p->n_tasks;
  struct tw_joint_cost *per = tw_calloc(n ? n : 1, sizeof *per);
  tw_joint_eval(t, p, assign, per);
  pl->tasks = tw_calloc(n ? n : 1, sizeof *pl->tasks);
  pl->compute_uusd = pl->egress_uusd = pl->transfer_uusd = pl->total_uusd = 0;
  for (size_t v = 0; v < n; v++) {
    fill_place(t, ix, v, assign[v], &per[v], &pl->tasks[v]);
    pl->compute_uusd = sadd(pl->compute_uusd, per[v].compute_uusd);
    pl->egress_uusd = sadd(pl->egress_uusd, per[v].egress_uusd);
    pl->transfer_uusd = sadd(pl->transfer_uusd, per[v].transfer_uusd);
    pl->total_uusd = sadd(pl->total_uusd, per[v].total_uusd);
  }
  free(per);
}

enum tw_rc tw_joint_table_build(const struct tw_policy_set *set,
                                const struct tw_place_snapshot *snap,
                                const struct tw_joint_problem *p,
                                int64_t now_ms, struct tw_joint_table *tp,
                                uint64_t *plans, char *infeasible,
                                size_t infeasible_sz, struct tw_err *err) {
  memset(tp, 0, sizeof *tp);
  if (infeasible_sz)
    infeasible[0] = '\0';
  if (!snap || !snap->index)
    return tw_err_set(err, TW_E_INVALID, "joint plan: no offer index");
  const struct tw_offer_index *ix = snap->index;
  size_t n = p->n_tasks, R = ix->n_regions;
  enum tw_rc rc = TW_OK;
  struct tw_joint_table t = {.n_tasks = n,
                             .n_regions = R,
                             .round_trips = set->cost.transfer_round_trips};
  size_t RR = R ? R * R : 1;
  t.egress_uusd_per_gb = tw_malloc(RR * sizeof(int64_t));
  t.rtt_us = tw_malloc(RR * sizeof(int64_t));
  t.bandwidth_kbps = tw_malloc(RR * sizeof(int64_t));
  for (size_t a = 0; a < R; a++)
    for (size_t b = 0; b < R; b++) {
      struct tw_net_link l;
      tw_netmatrix_link(set->net, ix->region_keys[a], ix->region_keys[b], &l);
      t.egress_uusd_per_gb[a * R + b] = l.egress_uusd_per_gb;
      t.rtt_us[a * R + b] = l.rtt_us;
      t.bandwidth_kbps[a * R + b] = l.bandwidth_kbps;
    }
  /* one row per distinct ask (its canonical JSON) */
  t.row = tw_malloc((n ? n : 1) * sizeof *t.row);
  size_t hcap = 16;
  while (hcap < 2 * n)
    hcap <<= 1;
  struct slot {
    uint64_t h;
    char *key;
    uint32_t row;
  } *hs = tw_calloc(hcap, sizeof *hs);
  uint32_t *row_task = tw_malloc((n ? n : 1) * sizeof *row_task);
  struct tw_buf kb;
  tw_buf_init(&kb);
  for (size_t v = 0; v < n; v++) {
    /* the ask without its name: tasks differing only by name share */
    struct tw_job_spec anon = *p->tasks[v].spec;
    char task[] = "task";
    anon.name = task;
    tw_buf_reset(&kb);
    tw_spec_to_json(&anon, &kb);
    uint64_t h = fnv(kb.data ? kb.data : "", kb.len);
    size_t i = (size_t)h & (hcap - 1);
    while (hs[i].key && (hs[i].h != h || strcmp(hs[i].key, kb.data)))
      i = (i + 1) & (hcap - 1);
    if (!hs[i].key) {
      hs[i].h = h;
      hs[i].key = tw_strdup(kb.data ? kb.data : "");
      hs[i].row = (uint32_t)t.n_rows;
      row_task[t.n_rows++] = (uint32_t)v;
    }
    t.row[v] = hs[i].row;
  }
  tw_buf_release(&kb);
  for (size_t i = 0; i < hcap; i++)
    free(hs[i].key);
  free(hs);
  t.cells = tw_malloc((t.n_rows && R ? t.n_rows * R : 1) * sizeof *t.cells);
  struct tw_plan_ws *ws = tw_plan_ws_new();
  bool *fits_row = tw_calloc(t.n_rows ? t.n_rows : 1, sizeof *fits_row);
  for (size_t q = 0; q < t.n_rows && rc == TW_OK; q++) {
    const struct tw_job_spec *spec = p->tasks[row_task[q]].spec;
    for (size_t r = 0; r < R; r++)
      t.cells[q * R + r] = (struct tw_joint_cell){.base_uusd = TW_JOINT_INF};
    /* nowhere at all: no region to try */
    struct tw_plan any;
    struct tw_plan_input in = {.job = spec, .now_ms = now_ms};
    struct tw_plan_opts o1 = {.candidates = 1};
    rc = tw_plan_make(set, snap, &in, &o1, ws, &any, err);
    if (rc)
      break;
    (*plans)++;
    bool fits = any.n > 0;
    tw_plan_release(&any);
    fits_row[q] = fits;
    for (size_t r = 0; fits && r < R && rc == TW_OK; r++) {
      struct tw_plan pl;
      rc = plan_in_region(set, snap, spec, ix->region_keys[r], now_ms, ws, &pl,
                          err);
      if (rc)
        break;
      (*plans)++;
      if (pl.n) {
        const struct tw_cand *c = &pl.cands[0];
        int nodes = pl.nodes > 0 ? pl.nodes : 1;
        t.cells[q * R + r] = (struct tw_joint_cell){
            .base_uusd =
                sadd(sadd(c->cost.compute_uusd, c->cost.spot_risk_uusd),
                     c->cost.egress_uusd),
            .compute_uusd = c->cost.compute_uusd,
            .spot_uusd = c->cost.spot_risk_uusd,
            .ds_egress_uusd = c->cost.egress_uusd,
            .ds_wait_s = c->cost.transfer_s,
            .wait_uusd_h = c->offer->price_uusd_per_hour * nodes,
            .offer = c->index};
      }
      tw_plan_release(&pl);
    }
  }
  tw_plan_ws_free(ws);
  if (rc == TW_OK) {
    for (size_t v = 0; v < n && infeasible_sz && !infeasible[0]; v++)
      if (!fits_row[t.row[v]])
        snprintf(infeasible, infeasible_sz, "%s", p->tasks[v].name);
  }
  free(fits_row);
  free(row_task);
  if (rc)
    tw_joint_table_release(&t);
  else
    *tp = t;
  return rc;
}

enum tw_rc tw_joint_plan(const struct tw_policy_set *set,
                         const struct tw_place_snapshot *snap,
                         const struct tw_joint_problem *p, int64_t now_ms,
                         struct tw_joint_result *out, struct tw_err *err) {
  memset(out, 0, sizeof *out);
  size_t n = p->n_tasks;
  uint32_t *order = tw_malloc((n ? n : 1) * sizeof *order);
  enum tw_rc rc = tw_joint_topo(p, order, err);
  free(order);
  if (rc)
    return rc;
  struct tw_joint_table t;
  rc = tw_joint_table_build(set, snap, p, now_ms, &t, &out->plans,
                            out->infeasible, sizeof out->infeasible, err);
  if (rc)
    return rc;
  const struct tw_offer_index *ix = snap->index;
  size_t R = t.n_regions;
  out->n_tasks = n;
  out->n_regions = R;
  out->region_keys = tw_calloc(R ? R : 1, sizeof *out->region_keys);
  for (size_t r = 0; r < R; r++)
    out->region_keys[r] = tw_strdup(ix->region_keys[r]);
  int32_t *ga = tw_malloc((n ? n : 1) * sizeof *ga);
  int32_t *ja = tw_malloc((n ? n : 1) * sizeof *ja);
  rc = tw_joint_solve_greedy(&t, p, ga, err);
  if (rc == TW_OK)
    rc = tw_joint_solve(&t, p, ja, &out->info, err);
  if (rc == TW_OK) {
    fill_placement(&t, p, ix, ga, &out->greedy);
    fill_placement(&t, p, ix, ja, &out->joint);
    out->alone_region = tw_malloc((n ? n : 1) * sizeof *out->alone_region);
    out->alone_uusd = tw_malloc((n ? n : 1) * sizeof *out->alone_uusd);
    int32_t *none = tw_malloc((n ? n : 1) * sizeof *none);
    for (size_t v = 0; v < n; v++)
      none[v] = -1;
    struct adj g;
    adj_build(p, &g);
    for (size_t v = 0; v < n; v++) {
      out->alone_uusd[v] = TW_JOINT_INF;
      out->alone_region[v] = -1;
      for (size_t r = 0; r < R; r++) {
        int64_t c = task_cost(&t, p, &g, none, (uint32_t)v, (int32_t)r,
                              UINT32_MAX, -1, NULL);
        if (c < out->alone_uusd[v]) {
          out->alone_uusd[v] = c;
          out->alone_region[v] = (int32_t)r;
        }
      }
    }
    adj_release(&g);
    free(none);
  }
  free(ga);
  free(ja);
  tw_joint_table_release(&t);
  if (rc)
    tw_joint_result_release(out);
  return rc;
}

void tw_joint_result_release(struct tw_joint_result *r) {
  if (!r)
    return;
  free(r->joint.tasks);
  free(r->greedy.tasks);
  free(r->alone_region);
  free(r->alone_uusd);
  if (r->region_keys)
    for (size_t i = 0; i < r->n_regions; i++)
      free(r->region_keys[i]);
  free(r->region_keys);
  memset(r, 0, sizeof *r);
}

/* ---- explanation ------------------------------------------------------------
 */

static void money(int64_t v, char *out, size_t outsz) {
  if (v >= TW_JOINT_INF)
    snprintf(out, outsz, "-");
  else
    tw_policy_fmt_uusd(v, out, outsz);
}

static void size_str(int64_t b, char *out, size_t outsz) {
  static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int i = 0;
  int64_t whole = b, frac = 0;
  while (whole >= 1000 && i < 5) {
    frac = whole % 1000;
    whole /= 1000;
    i++;
  }
  if (frac && whole < 100)
    snprintf(out, outsz, "%lld.%lld %s", (long long)whole,
             (long long)(frac / 100), u[i]);
  else
    snprintf(out, outsz, "%lld %s", (long long)whole, u[i]);
}

/* The "why" of task v in placement pl. */
static void why(const struct tw_joint_result *r,
                const struct tw_joint_problem *p,
                const struct tw_joint_placement *pl, size_t v, bool joint,
                struct tw_buf *b) {
  const struct tw_joint_place *x = &pl->tasks[v];
  bool first = true;
  for (size_t e = 0; e < p->n_edges; e++) {
    const struct tw_joint_edge *ed = &p->edges[e];
    if (ed->to != v || ed->bytes <= 0)
      continue;
    const struct tw_joint_place *u = &pl->tasks[ed->from];
    char sz[32];
    size_str(ed->bytes, sz, sizeof sz);
    tw_buf_printf(b, "%s%s from %s", first ? "; reads " : ", ", sz,
                  p->tasks[ed->from].name);
    if (u->region == x->region)
      tw_buf_adds(b, " in the same region");
    else
      tw_buf_printf(b, " at %s", u->where);
    first = false;
  }
  int32_t ar = r->alone_region ? r->alone_region[v] : -1;
  if (ar < 0)
    return;
  if (ar == x->region) {
    tw_buf_adds(b, "; its cheapest region on its own");
    return;
  }
  char a[32];
  money(r->alone_uusd[v], a, sizeof a);
  if (joint)
    tw_buf_printf(b,
                  "; on its own it would cost %s at %s: placed here to move "
                  "less data between the steps",
                  a, r->region_keys[ar]);
  else
    tw_buf_printf(b,
                  "; on its own it would cost %s at %s: placed here given "
                  "where its inputs were written",
                  a, r->region_keys[ar]);
}

static void explain_placement(const struct tw_joint_result *r,
                              const struct tw_joint_problem *p,
                              const struct tw_joint_placement *pl, bool joint,
                              struct tw_buf *b, bool json) {
  for (size_t v = 0; v < p->n_tasks; v++) {
    const struct tw_joint_place *x = &pl->tasks[v];
    struct tw_buf l;
    tw_buf_init(&l);
    if (x->region < 0 || x->cost.total_uusd >= TW_JOINT_INF) {
      tw_buf_printf(&l, "  %s: no offer fits", p->tasks[v].name);
    } else {
      char pr[32], co[32], eg[32], tr[32], to[32], dur[32];
      money(x->price_uusd_per_hour, pr, sizeof pr);
      money(x->cost.compute_uusd, co, sizeof co);
      money(x->cost.egress_uusd, eg, sizeof eg);
      money(x->cost.transfer_uusd, tr, sizeof tr);
      money(x->cost.total_uusd, to, sizeof to);
      tw_policy_fmt_duration(x->cost.transfer_s, dur, sizeof dur);
      tw_buf_printf(&l,
                    "  %s: %s (%s%s%s, %s, %s/h): compute %s, egress %s, "
                    "transfer %s (%s), total %s",
                    p->tasks[v].name, x->where, x->instance_type,
                    x->zone[0] ? " in " : "", x->zone, x->market, pr, co, eg,
                    tr, dur, to);
      why(r, p, pl, v, joint, &l);
    }
    if (json) {
      if (b->len && b->data[b->len - 1] != '[')
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, l.data ? l.data : "");
    } else {
      tw_buf_adds(b, l.data ? l.data : "");
      tw_buf_addc(b, '\n');
    }
    tw_buf_release(&l);
  }
}

static void explain_lines(const struct tw_joint_result *r,
                          const struct tw_joint_problem *p, struct tw_buf *b,
                          bool json) {
  struct tw_buf l;
  tw_buf_init(&l);
  char jt[32], gt[32], sv[32], lb[32];
  money(r->joint.total_uusd, jt, sizeof jt);
  money(r->greedy.total_uusd, gt, sizeof gt);
  int64_t saving = r->greedy.total_uusd >= TW_JOINT_INF ||
                           r->joint.total_uusd >= TW_JOINT_INF
                       ? 0
                       : r->greedy.total_uusd - r->joint.total_uusd;
  money(saving, sv, sizeof sv);
  money(r->info.lower_bound_uusd, lb, sizeof lb);
  tw_buf_printf(&l, "Workflow %s: %zu task%s, %zu edge%s, %zu regions",
                p->name[0] ? p->name : "(unnamed)", p->n_tasks,
                p->n_tasks == 1 ? "" : "s", p->n_edges,
                p->n_edges == 1 ? "" : "s", r->n_regions);
  if (r->infeasible[0]) {
    tw_buf_printf(&l, "; task %s fits no offer", r->infeasible);
  } else {
    tw_buf_printf(&l, "; joint %s, step by step %s: saves %s", jt, gt, sv);
    if (saving > 0 && r->greedy.total_uusd > 0)
      tw_buf_printf(&l, " (%.1f%%)",
                    100.0 * (double)saving / (double)r->greedy.total_uusd);
  }
  const char *lines[2];
  char method[256];
  if (r->info.exact)
    snprintf(method, sizeof method,
             "Method: %s, optimal (%zu chain%s; lower bound %s with no data "
             "moved between tasks)",
             r->info.method, r->info.n_chains, r->info.n_chains == 1 ? "" : "s",
             lb);
  else {
    char gap[32];
    money(r->joint.total_uusd >= TW_JOINT_INF
              ? TW_JOINT_INF
              : r->joint.total_uusd - r->info.lower_bound_uusd,
          gap, sizeof gap);
    snprintf(method, sizeof method,
             "Method: %s over %zu chains, %u rounds: never dearer than step "
             "by step, within %s of the optimum (lower bound %s)",
             r->info.method, r->info.n_chains, r->info.rounds, gap, lb);
  }
  lines[0] = l.data;
  lines[1] = method;
  for (size_t i = 0; i < 2; i++) {
    if (json) {
      if (b->len && b->data[b->len - 1] != '[')
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, lines[i]);
    } else {
      tw_buf_adds(b, lines[i]);
      tw_buf_addc(b, '\n');
    }
  }
  tw_buf_release(&l);
  if (r->infeasible[0] || !r->joint.tasks)
    return;
  if (json)
    tw_buf_adds(b, ",\"Joint placement:\"");
  else
    tw_buf_adds(b, "Joint placement:\n");
  explain_placement(r, p, &r->joint, true, b, json);
  if (json)
    tw_buf_adds(b, ",\"Step by step:\"");
  else
    tw_buf_adds(b, "Step by step:\n");
  explain_placement(r, p, &r->greedy, false, b, json);
}

void tw_joint_explain(const struct tw_joint_result *r,
                      const struct tw_joint_problem *p, struct tw_buf *out) {
  explain_lines(r, p, out, false);
}

static void placement_json(const struct tw_joint_problem *p,
                           const struct tw_joint_placement *pl,
                           struct tw_buf *b) {
  tw_buf_printf(b,
                "{\"total_uusd\":%lld,\"compute_uusd\":%lld,\"egress_uusd\":"
                "%lld,\"transfer_uusd\":%lld,\"tasks\":[",
                (long long)pl->total_uusd, (long long)pl->compute_uusd,
                (long long)pl->egress_uusd, (long long)pl->transfer_uusd);
  for (size_t v = 0; pl->tasks && v < p->n_tasks; v++) {
    const struct tw_joint_place *x = &pl->tasks[v];
    if (v)
      tw_buf_addc(b, ',');
    tw_buf_adds(b, "{\"name\":");
    tw_buf_json_str(b, p->tasks[v].name);
    if (x->region < 0 || x->cost.total_uusd >= TW_JOINT_INF) {
      tw_buf_adds(b, ",\"region\":null}");
      continue;
    }
    tw_buf_adds(b, ",\"region\":");
    tw_buf_json_str(b, x->where);
    tw_buf_adds(b, ",\"offer_id\":");
    tw_buf_json_str(b, x->offer_id);
    tw_buf_adds(b, ",\"instance_type\":");
    tw_buf_json_str(b, x->instance_type);
    tw_buf_adds(b, ",\"zone\":");
    tw_buf_json_str(b, x->zone);
    tw_buf_adds(b, ",\"market\":");
    tw_buf_json_str(b, x->market);
    tw_buf_printf(
        b,
        ",\"price_uusd_per_hour\":%lld,\"compute_uusd\":%lld,"
        "\"egress_uusd\":%lld,\"transfer_uusd\":%lld,\"transfer_s\":"
        "%lld,\"total_uusd\":%lld}",
        (long long)x->price_uusd_per_hour, (long long)x->cost.compute_uusd,
        (long long)x->cost.egress_uusd, (long long)x->cost.transfer_uusd,
        (long long)x->cost.transfer_s, (long long)x->cost.total_uusd);
  }
  tw_buf_adds(b, "]}");
}

void tw_joint_to_json(const struct tw_joint_result *r,
                      const struct tw_joint_problem *p, struct tw_buf *out) {
  tw_buf_adds(out, "{\"workflow\":{\"name\":");
  tw_buf_json_str(out, p->name);
  tw_buf_printf(out, ",\"tasks\":%zu,\"edges\":%zu,\"regions\":%zu}",
                p->n_tasks, p->n_edges, r->n_regions);
  tw_buf_adds(out, ",\"method\":");
  tw_buf_json_str(out, r->info.method ? r->info.method : "none");
  tw_buf_printf(out,
                ",\"exact\":%s,\"chains\":%zu,\"rounds\":%u,\"plans\":%llu,"
                "\"lower_bound_uusd\":%lld",
                r->info.exact ? "true" : "false", r->info.n_chains,
                r->info.rounds, (unsigned long long)r->plans,
                (long long)(r->info.lower_bound_uusd >= TW_JOINT_INF
                                ? -1
                                : r->info.lower_bound_uusd));
  tw_buf_adds(out, ",\"infeasible\":");
  if (r->infeasible[0])
    tw_buf_json_str(out, r->infeasible);
  else
    tw_buf_adds(out, "null");
  if (!r->infeasible[0] && r->joint.tasks) {
    tw_buf_adds(out, ",\"joint\":");
    placement_json(p, &r->joint, out);
    tw_buf_adds(out, ",\"greedy\":");
    placement_json(p, &r->greedy, out);
    tw_buf_printf(out, ",\"saving_uusd\":%lld",
                  (long long)(r->greedy.total_uusd - r->joint.total_uusd));
  }
  tw_buf_adds(out, ",\"explain\":[");
  explain_lines(r, p, out, true);
  tw_buf_adds(out, "]}");
}
