/* html.c - the spend report as one self-contained HTML page: inline CSS,
 * SVG charts drawn here (no library, no network fetch: the page's
 * Content-Security-Policy forbids any), and the table beneath.
 *
 * Charts: spend over time stacked by provider, spend by tenant (spent and
 * forecast), and the budget burn-down with the forecast to the end of the
 * range.  A few lines of inline script count, after layout, the chart
 * shapes that were really drawn with a non-empty box, and write the count
 * into data-drawn attributes: the browser test reads them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/report/focus.h"
#include "billing/report/report_int.h"

#define W 900 /* chart width */
#define H 260 /* chart height */
#define ML 80 /* margins */
#define MR 20
#define MT 16
#define MB 40
#define MAX_BARS 180

static const char *const COLORS[] = {"#2f6fb0", "#e07b39", "#3a9d5d",
                                     "#b8475a", "#7a5bb5", "#c9a227",
                                     "#3aa6b9", "#8c6d4f"};
#define NCOLORS (sizeof COLORS / sizeof COLORS[0])

static void esc(struct tw_buf *b, const char *s) {
  for (; *s; s++)
    switch (*s) {
    case '&':
      tw_buf_adds(b, "&amp;");
      break;
    case '<':
      tw_buf_adds(b, "&lt;");
      break;
    case '>':
      tw_buf_adds(b, "&gt;");
      break;
    case '"':
      tw_buf_adds(b, "&quot;");
      break;
    case '\'':
      tw_buf_adds(b, "&#39;");
      break;
    default:
      tw_buf_addc(b, *s);
    }
}

/* "$1,234.57" (rounded to the cent, for display; tables carry the exact
 * amount) */
static void usd_short(int64_t uusd, char *out, size_t n) {
  bool neg = uusd < 0;
  uint64_t a = neg ? (uint64_t)0 - (uint64_t)uusd : (uint64_t)uusd;
  uint64_t cents = (a + 5000) / 10000;
  char digits[32], grouped[48];
  snprintf(digits, sizeof digits, "%llu", (unsigned long long)(cents / 100));
  size_t len = strlen(digits), k = 0;
  for (size_t i = 0; i < len; i++) {
    if (i && (len - i) % 3 == 0)
      grouped[k++] = ',';
    grouped[k++] = digits[i];
  }
  grouped[k] = '\0';
  /* at most 26 characters of digits and commas: the bound tells the
   * compiler a 40-byte buffer always holds it */
  snprintf(out, n, "%s$%.30s.%02u", neg ? "-" : "", grouped,
           (unsigned)(cents % 100));
}

/* An axis: lo and hi multiples of a nice step (1, 2 or 5 x 10^k
 * micro-USD) holding [vmin, vmax], at most 6 steps, and the places its
 * labels need so that each gridline is labelled with its own value. */
struct axis {
  int64_t lo, hi, step;
  int places; /* of the dollar */
};

static struct axis axis_of(int64_t vmin, int64_t vmax) {
  struct axis a;
  if (vmin > 0)
    vmin = 0;
  if (vmax < 0)
    vmax = 0;
  if (vmax == vmin)
    vmax = vmin + 10000; /* a cent */
  int64_t range = vmax - vmin;
  int64_t m = 1;
  for (;;) {
    static const int64_t F[] = {1, 2, 5};
    bool done = false;
    for (int i = 0; i < 3 && !done; i++) {
      int64_t st = F[i] * m;
      int64_t lo = vmin >= 0 ? 0 : -((-vmin + st - 1) / st) * st;
      int64_t hi = (vmax + st - 1) / st * st;
      if ((hi - lo) / st <= 6 && range > 0) {
        a.lo = lo;
        a.hi = hi;
        a.step = st;
        done = true;
      }
    }
    if (done)
      break;
    m *= 10;
  }
  /* places: as many as the step has below the dollar, two at least */
  a.places = 2;
  for (int64_t p = 10000; p > 1 && a.step % p; p /= 10)
    a.places++;
  return a;
}

/* "$0.025", "-$2.50", "$1,200.00": v with `places` places */
static void usd_places(int64_t uusd, int places, char *out, size_t n) {
  bool neg = uusd < 0;
  uint64_t a = neg ? (uint64_t)0 - (uint64_t)uusd : (uint64_t)uusd;
  uint64_t scale = 1;
  for (int i = places; i < 6; i++)
    scale *= 10;
  uint64_t v = (a + scale / 2) / scale, unit = 1;
  for (int i = 0; i < places; i++)
    unit *= 10;
  char digits[32], grouped[48];
  snprintf(digits, sizeof digits, "%llu", (unsigned long long)(v / unit));
  size_t len = strlen(digits), k = 0;
  for (size_t i = 0; i < len; i++) {
    if (i && (len - i) % 3 == 0)
      grouped[k++] = ',';
    grouped[k++] = digits[i];
  }
  grouped[k] = '\0';
  snprintf(out, n, "%s$%.30s.%0*llu", neg && v ? "-" : "", grouped, places,
           (unsigned long long)(v % unit));
}

static double y_of(int64_t v, int64_t lo, int64_t hi) {
  return MT + (double)(H - MT - MB) * (double)(hi - v) / (double)(hi - lo);
}

static void y_axis(struct tw_buf *b, const struct axis *a) {
  for (int64_t v = a->lo; v <= a->hi; v += a->step) {
    double y = y_of(v, a->lo, a->hi);
    char t[48];
    usd_places(v, a->places, t, sizeof t);
    tw_buf_printf(
        b,
        "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
        "data-uusd=\"%lld\">%s</text>",
        ML, W - MR, y, y, ML - 6, y + 4, (long long)v, t);
  }
}

/* A bucket's label: its day, or its hour on an hourly chart. */
static void bucket_label(const struct tw_report *r, int64_t k, char *out,
                         size_t n) {
  if (r->bucket_ms < TW_DAY_MS) {
    int64_t t = r->req->from_ms / r->bucket_ms * r->bucket_ms + k * r->bucket_ms;
    char iso[32];
    tw_report_fmt_time(t, iso, sizeof iso);
    snprintf(out, n, "%.10s %.5s", iso, iso + 11);
  } else {
    tw_report_fmt_day(tw_ledger_day(r->req->from_ms) + k, out, n);
  }
}

static int provider_index(const char *const *names, size_t n, const char *p) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], p))
      return (int)i;
  return -1;
}

/* Spend over time, stacked by provider, by hour or by day as the range
 * asks. */
static void chart_time(const struct tw_report *r, struct tw_buf *b) {
  int64_t nb = (int64_t)r->n_buckets;
  int64_t per = (nb + MAX_BARS - 1) / MAX_BARS; /* buckets per bar */
  if (per < 1)
    per = 1;
  size_t nbars = (size_t)((nb + per - 1) / per);
  const char *names[64];
  size_t np = 0;
  for (size_t i = 0; i < r->n_by_provider_bucket && np < 64; i++)
    if (provider_index(names, np, r->by_provider_bucket[i].provider) < 0)
      names[np++] = r->by_provider_bucket[i].provider;
  int64_t *cell = tw_calloc((nbars ? nbars : 1) * (np ? np : 1), sizeof *cell);
  for (size_t i = 0; i < r->n_by_provider_bucket; i++) {
    const struct tw_ledger_group *g = &r->by_provider_bucket[i];
    int p = provider_index(names, np, g->provider);
    if (p < 0 || g->day < 0 || g->day >= nb)
      continue;
    cell[(size_t)(g->day / per) * np + (size_t)p] += g->effective_uusd;
  }
  int64_t top = 0, low = 0;
  for (size_t k = 0; k < nbars; k++) {
    int64_t pos = 0, neg = 0;
    for (size_t p = 0; p < np; p++) {
      if (cell[k * np + p] >= 0)
        pos += cell[k * np + p];
      else
        neg += cell[k * np + p];
    }
    if (pos > top)
      top = pos;
    if (neg < low)
      low = neg;
  }
  struct axis ax = axis_of(low, top);
  int64_t lo = ax.lo, hi = ax.hi;
  tw_buf_printf(
      b,
      "<svg class=\"chart\" id=\"chart-time\" role=\"img\" "
      "aria-label=\"Spend over time by provider\" viewBox=\"0 0 %d %d\" "
      "width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" "
      "data-resolution=\"%s\">",
      W, H, W, H, r->bucket_ms < TW_DAY_MS ? "hour" : "day");
  y_axis(b, &ax);
  double slot = (double)(W - ML - MR) / (double)(nbars ? nbars : 1);
  double bw = slot * 0.8 > 1 ? slot * 0.8 : 1;
  for (size_t k = 0; k < nbars; k++) {
    double x = ML + slot * (double)k + (slot - bw) / 2;
    int64_t base_pos = 0, base_neg = 0;
    char when[40];
    bucket_label(r, (int64_t)k * per, when, sizeof when);
    for (size_t p = 0; p < np; p++) {
      int64_t v = cell[k * np + p];
      if (!v)
        continue;
      int64_t from = v > 0 ? base_pos : base_neg, to = from + v;
      if (v > 0)
        base_pos = to;
      else
        base_neg = to;
      double ya = y_of(from, lo, hi), yb = y_of(to, lo, hi);
      double y = ya < yb ? ya : yb, h = ya < yb ? yb - ya : ya - yb;
      char amt[48];
      usd_places(v, 6, amt, sizeof amt);
      tw_buf_printf(b,
                    "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\" data-uusd=\"%lld\"><title>%s ",
                    x, y, bw, h > 0.5 ? h : 0.5, COLORS[p % NCOLORS],
                    (long long)v, when);
      esc(b, names[p]);
      tw_buf_printf(b, ": %s</title></rect>", amt);
    }
  }
  /* a label under the first, middle and last bar */
  size_t marks[3] = {0, nbars / 2, nbars ? nbars - 1 : 0};
  for (int i = 0; i < 3 && nbars; i++) {
    if (i && marks[i] == marks[i - 1])
      continue;
    char when[40];
    bucket_label(r, (int64_t)marks[i] * per, when, sizeof when);
    tw_buf_printf(b,
                  "<text class=\"tick\" x=\"%.1f\" y=\"%d\" "
                  "text-anchor=\"middle\">%s</text>",
                  ML + slot * ((double)marks[i] + 0.5), H - MB + 18, when);
  }
  tw_buf_adds(b, "</svg><div class=\"legend\">");
  for (size_t p = 0; p < np; p++) {
    tw_buf_printf(b, "<span><i style=\"background:%s\"></i>",
                  COLORS[p % NCOLORS]);
    esc(b, tw_focus_provider_name(r->req->adapters, names[p]));
    tw_buf_adds(b, "</span>");
  }
  if (!np)
    tw_buf_adds(b, "<span>No spend in this range.</span>");
  tw_buf_adds(b, "</div>");
  free(cell);
}

/* Spend by tenant: spent, and the forecast to the end of the range behind
 * it. */
static void chart_tenants(const struct tw_report *r, struct tw_buf *b) {
  size_t n = r->n_tenants < 12 ? r->n_tenants : 12;
  int rowh = 26;
  int h = MT + (int)(n ? n : 1) * rowh + 24;
  int64_t top = 0;
  for (size_t i = 0; i < n; i++) {
    if (r->tenants[i].spent_uusd > top)
      top = r->tenants[i].spent_uusd;
    if (r->tenants[i].forecast_uusd > top)
      top = r->tenants[i].forecast_uusd;
  }
  int64_t hi = axis_of(0, top).hi;
  int x0 = 160, xw = W - x0 - 120;
  tw_buf_printf(
      b,
      "<svg class=\"chart\" id=\"chart-tenants\" role=\"img\" "
      "aria-label=\"Spend by tenant\" viewBox=\"0 0 %d %d\" width=\"%d\" "
      "height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">",
      W, h, W, h);
  for (size_t i = 0; i < n; i++) {
    const struct tw_report_tenant *t = &r->tenants[i];
    double y = MT + (double)i * rowh;
    double ws =
        t->spent_uusd > 0 ? (double)xw * (double)t->spent_uusd / (double)hi : 0;
    double wf = t->forecast_uusd > 0
                    ? (double)xw * (double)t->forecast_uusd / (double)hi
                    : 0;
    char s[40], f[40];
    usd_short(t->spent_uusd, s, sizeof s);
    usd_short(t->forecast_uusd, f, sizeof f);
    tw_buf_printf(
        b, "<text class=\"label\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
        x0 - 8, y + 17);
    esc(b, t->tenant);
    tw_buf_printf(
        b,
        "</text><rect class=\"forecast\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"18\"><title>forecast %s</title></rect>"
        "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"18\" "
        "fill=\"%s\" data-uusd=\"%lld\"><title>spent %s</title></rect>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">%s (forecast %s)</text>",
        x0, y + 2, wf, f, x0, y + 2, ws > 1 ? ws : 1, COLORS[0],
        (long long)t->spent_uusd, s, x0 + (wf > ws ? wf : ws) + 6, y + 16, s,
        f);
  }
  if (!n)
    tw_buf_printf(b,
                  "<text class=\"label\" x=\"%d\" y=\"%d\">No spend in this "
                  "range.</text>",
                  x0, MT + 18);
  tw_buf_adds(b, "</svg>");
}

/* The budgets the burn-down draws against: the budget of the scope
 * asked for, else every tenant budget of it; *idx gets their indexes in
 * r->budgets.  The spend drawn is theirs alone. */
static size_t burn_budgets(const struct tw_report *r, size_t *idx, char *what,
                           size_t n) {
  const struct tw_report_req *q = r->req;
  for (size_t i = 0; i < r->n_budgets; i++) {
    const struct tw_ledger_budget *b = &r->budgets[i].b;
    bool exact =
        (q->tenant ? !strcmp(b->tenant, q->tenant) : !b->tenant[0]) &&
        (q->project ? !strcmp(b->project, q->project) : !b->project[0]);
    if (exact) {
      snprintf(what, n, "%s%s%s", b->tenant[0] ? b->tenant : "overall",
               b->project[0] ? "/" : "", b->project);
      idx[0] = i;
      return 1;
    }
  }
  size_t count = 0;
  if (!q->project)
    for (size_t i = 0; i < r->n_budgets; i++)
      if (r->budgets[i].b.tenant[0] && !r->budgets[i].b.project[0])
        idx[count++] = i;
  snprintf(what, n, "the %zu tenant budget%s of this scope, and their "
           "tenants' spend", count, count == 1 ? "" : "s");
  return count;
}

static bool in_scope(const struct tw_report *r, const size_t *idx, size_t nb,
                     const struct tw_ledger_group *g) {
  if (!nb)
    return true; /* no budget: the report's own scope */
  for (size_t k = 0; k < nb; k++) {
    const struct tw_ledger_budget *b = &r->budgets[idx[k]].b;
    if ((!b->tenant[0] || !strcmp(b->tenant, g->tenant)) &&
        (!b->project[0] || !strcmp(b->project, g->project)))
      return true;
  }
  return false;
}

static void chart_burndown(const struct tw_report *r, struct tw_buf *b) {
  size_t nd = r->n_buckets;
  size_t *idx = tw_calloc(r->n_budgets + 1, sizeof *idx);
  char what[300];
  size_t nbud = burn_budgets(r, idx, what, sizeof what);
  /* a monthly budget is drawn against a month only */
  int64_t month = tw_report_month_start(r->req->from_ms);
  bool whole_month = r->req->from_ms == month &&
                     r->req->to_ms == tw_report_next_month(month);
  bool has_budget = nbud && whole_month;
  int64_t limit = 0, spent = 0, fc = 0;
  for (size_t k = 0; k < nbud; k++) {
    limit += r->budgets[idx[k]].b.limit_uusd;
    fc += r->budgets[idx[k]].forecast_uusd;
  }
  int64_t *cum = tw_calloc(nd + 1, sizeof *cum); /* spend before bucket k */
  for (size_t i = 0; i < r->n_by_scope_bucket; i++) {
    const struct tw_ledger_group *g = &r->by_scope_bucket[i];
    if (g->day >= 0 && (size_t)g->day < nd && in_scope(r, idx, nbud, g)) {
      cum[g->day + 1] += g->effective_uusd;
      spent += g->effective_uusd;
    }
  }
  for (size_t k = 1; k <= nd; k++)
    cum[k] += cum[k - 1];
  if (!nbud)
    fc = r->forecast_uusd;
  if (fc < spent)
    fc = spent;
  /* buckets elapsed: up to now, within the range */
  int64_t now = r->req->now_ms;
  int64_t start = r->req->from_ms / r->bucket_ms * r->bucket_ms;
  double now_x =
      now <= r->req->from_ms ? 0
      : now >= r->req->to_ms
          ? (double)nd
          : (double)(now - start) / (double)r->bucket_ms;
  size_t upto = now_x >= (double)nd ? nd : (size_t)now_x;
  int64_t top = has_budget ? limit : fc, bottom = has_budget ? limit - fc : 0;
  for (size_t k = 0; k <= upto; k++) {
    int64_t v = has_budget ? limit - cum[k] : cum[k];
    if (v > top)
      top = v;
    if (v < bottom)
      bottom = v;
  }
  struct axis ax = axis_of(bottom, top);
  int64_t lo = ax.lo, hi = ax.hi;
  tw_buf_printf(
      b,
      "<svg class=\"chart\" id=\"chart-burndown\" role=\"img\" "
      "aria-label=\"Budget burn-down with forecast\" viewBox=\"0 0 %d %d\" "
      "width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" "
      "data-spent-uusd=\"%lld\" data-limit-uusd=\"%lld\">",
      W, H, W, H, (long long)spent, (long long)(has_budget ? limit : -1));
  y_axis(b, &ax);
  double span = (double)(W - ML - MR) / (double)(nd ? nd : 1);
  if (has_budget)
    /* the even burn a budget allows */
    tw_buf_printf(
        b,
        "<line class=\"ideal\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
        ML, y_of(limit, lo, hi), W - MR, y_of(0, lo, hi));
  tw_buf_adds(b, "<polyline class=\"series actual\" points=\"");
  for (size_t k = 0; k <= upto; k++) {
    int64_t v = has_budget ? limit - cum[k] : cum[k];
    tw_buf_printf(b, "%s%.1f,%.1f", k ? " " : "", ML + span * (double)k,
                  y_of(v, lo, hi));
  }
  int64_t v_now = has_budget ? limit - spent : spent;
  double x_now = ML + span * now_x;
  tw_buf_printf(b, " %.1f,%.1f\"/>", x_now, y_of(v_now, lo, hi));
  if (now < r->req->to_ms) {
    int64_t v_end = has_budget ? limit - fc : fc;
    tw_buf_printf(
        b,
        "<polyline class=\"series forecast-line\" points=\"%.1f,%.1f %d,%.1f\">"
        "<title>forecast to the end of the range</title></polyline>",
        x_now, y_of(v_now, lo, hi), W - MR, y_of(v_end, lo, hi));
  }
  if (lo < 0)
    tw_buf_printf(
        b, "<line class=\"zero\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>",
        ML, W - MR, y_of(0, lo, hi), y_of(0, lo, hi));
  char f0[40], f1[40];
  bucket_label(r, 0, f0, sizeof f0);
  bucket_label(r, (int64_t)(nd ? nd - 1 : 0), f1, sizeof f1);
  tw_buf_printf(b,
                "<text class=\"tick\" x=\"%d\" y=\"%d\">%s</text>"
                "<text class=\"tick\" x=\"%d\" y=\"%d\" "
                "text-anchor=\"end\">%s</text></svg>",
                ML, H - MB + 18, f0, W - MR, H - MB + 18, f1);
  char l[48], sp[48], f[48];
  usd_places(limit, 2, l, sizeof l);
  usd_places(spent, 6, sp, sizeof sp);
  usd_places(fc, 2, f, sizeof f);
  tw_buf_adds(b, "<p class=\"note\">");
  if (has_budget) {
    tw_buf_adds(b, "Remaining of the monthly budget (");
    esc(b, what);
    tw_buf_printf(b,
                  ", %s from %s): solid so far, dashed the forecast. "
                  "Spent <span id=\"burn-spent\">%s</span>; forecast %s by "
                  "the end of the month%s.",
                  l, r->budget_source ? r->budget_source : "config", sp, f,
                  fc > limit ? ", <b class=\"over\">over budget</b>" : "");
  } else if (nbud) {
    tw_buf_adds(b, "Cumulative spend of ");
    esc(b, what);
    tw_buf_printf(b,
                  " (solid) and its forecast (dashed); budgets are monthly, "
                  "and this range is not a calendar month. Spent "
                  "<span id=\"burn-spent\">%s</span>; forecast %s.",
                  sp, f);
  } else {
    tw_buf_printf(b,
                  "No budget configured for this scope: cumulative spend "
                  "(solid) and its forecast (dashed). Spent "
                  "<span id=\"burn-spent\">%s</span>; forecast %s.",
                  sp, f);
  }
  tw_buf_adds(b, "</p>");
  free(cum);
  free(idx);
}

static const char STYLE[] =
    "body{font:14px/1.4 'DejaVu "
    "Sans',Arial,sans-serif;color:#1d2733;margin:24px;"
    "max-width:960px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}"
    ".sub{color:#5b6b7c;margin:0 0 16px}"
    ".kpis{display:flex;gap:12px;flex-wrap:wrap}"
    ".kpi{border:1px solid #d5dde6;border-radius:6px;padding:8px "
    "14px;min-width:160px}"
    ".kpi b{display:block;font-size:20px}.kpi "
    "span{color:#5b6b7c;font-size:12px}"
    "svg{display:block;max-width:100%;height:auto}"
    ".grid{stroke:#e3e8ee}.zero{stroke:#1d2733}"
    ".tick{font-size:11px;fill:#5b6b7c}.label{font-size:12px;fill:#1d2733}"
    ".forecast{fill:#c9d8ea}.ideal{stroke:#9aa8b6;stroke-dasharray:2 4}"
    ".series{fill:none;stroke-width:2.5}.actual{stroke:#2f6fb0}"
    ".forecast-line{stroke:#e07b39;stroke-dasharray:7 5}"
    ".legend span{margin-right:16px;font-size:12px}"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:5px}"
    ".note{color:#5b6b7c;font-size:12px}.over{color:#b8475a}"
    "table{border-collapse:collapse;width:100%;font-size:12px}"
    "th,td{padding:4px 8px;border-bottom:1px solid #e3e8ee;text-align:left}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".fx{color:#666;font-size:85%}"
    "tfoot td{font-weight:bold;border-top:2px solid #1d2733}";

/* Counts, after layout, the drawn shapes of each chart. */
static const char SCRIPT[] =
    "(function(){var n=0;"
    "document.querySelectorAll('svg.chart').forEach(function(s){var k=0;"
    "s.querySelectorAll('rect.bar,polyline.series').forEach(function(e){"
    "var b=e.getBBox();if(b.width>0&&(b.height>0||e.tagName!=='rect'))k++;});"
    "s.setAttribute('data-drawn',k);if(k>0)n++;});"
    "document.body.setAttribute('data-charts-drawn',n);})();";

static const struct {
  unsigned bit;
  const char *name;
} DIMS[] = {{TW_GROUP_TENANT, "Tenant"},     {TW_GROUP_PROJECT, "Project"},
            {TW_GROUP_PROVIDER, "Provider"}, {TW_GROUP_REGION, "Region"},
            {TW_GROUP_DAY, "Day"},           {TW_GROUP_JOB, "Job"},
            {TW_GROUP_MARKET, "Market"}};
#define NDIMS (sizeof DIMS / sizeof DIMS[0])

static void money_cell(struct tw_buf *b, int64_t v) {
  char t[32];
  tw_report_fmt_usd(v, t, sizeof t);
  tw_buf_printf(b, "<td class=\"n\" data-uusd=\"%lld\">%s</td>", (long long)v,
                t);
}

/* The effective cost of a group priced in another currency, beside the USD
 * figure: "¥87.142857 at 0.1393 USD/CNY (2025-06-30, source; as
 * metered)": the amount the meter kept in that currency, or "derived
 * from USD" at the catalog's rate for rows metered before it was kept
 * (report__fx). */
static void effective_cell(const struct tw_report *r,
                           const struct tw_ledger_group *g, struct tw_buf *b) {
  int64_t micro;
  bool metered;
  const struct tw_report_fx *x = report__fx(r, g, &micro, &metered);
  if (!x) {
    money_cell(b, g->effective_uusd);
    return;
  }
  char t[32], amt[32];
  tw_report_fmt_usd(g->effective_uusd, t, sizeof t);
  report__fmt_micro(micro, amt, sizeof amt);
  bool cny = !strcmp(x->rate.currency, "CNY");
  tw_buf_printf(b,
                "<td class=\"n\" data-uusd=\"%lld\">%s<br><span class=\"fx\" "
                "data-currency=\"%s\" data-source-micro=\"%lld\" "
                "data-rate=\"",
                (long long)g->effective_uusd, t, x->rate.currency,
                (long long)micro);
  esc(b, x->rate.text);
  tw_buf_printf(b, "\">%s%s%s at ", cny ? "\xc2\xa5" : x->rate.currency,
                cny ? "" : " ", amt);
  esc(b, x->rate.text);
  tw_buf_printf(b, " USD/%s (", x->rate.currency);
  esc(b, x->rate.date);
  if (x->rate.source[0]) {
    tw_buf_adds(b, ", ");
    esc(b, x->rate.source);
  }
  tw_buf_adds(b, metered ? "; as metered)</span></td>"
                         : "; derived from USD)</span></td>");
}

static void table(const struct tw_report *r, struct tw_buf *b) {
  int ndim = 0;
  tw_buf_adds(b, "<table id=\"detail\"><thead><tr>");
  for (size_t d = 0; d < NDIMS; d++)
    if (r->mask & DIMS[d].bit) {
      tw_buf_printf(b, "<th>%s</th>", DIMS[d].name);
      ndim++;
    }
  if (r->jobs) {
    tw_buf_adds(b, "<th>Name</th><th>Owner</th>");
    ndim += 2;
  }
  tw_buf_adds(b,
              "<th class=\"n\">List cost (USD)</th><th class=\"n\">Effective "
              "cost (USD)</th><th class=\"n\">of which accrued</th>"
              "<th class=\"n\">Rows</th></tr></thead><tbody>");
  for (size_t i = 0; i < r->n_groups; i++) {
    const struct tw_ledger_group *g = &r->groups[i];
    tw_buf_adds(b, "<tr>");
    for (size_t d = 0; d < NDIMS; d++) {
      if (!(r->mask & DIMS[d].bit))
        continue;
      char day[16];
      const char *v = DIMS[d].bit == TW_GROUP_TENANT     ? g->tenant
                      : DIMS[d].bit == TW_GROUP_PROJECT  ? g->project
                      : DIMS[d].bit == TW_GROUP_PROVIDER ? g->provider
                      : DIMS[d].bit == TW_GROUP_REGION   ? g->region
                      : DIMS[d].bit == TW_GROUP_JOB      ? g->job_id
                      : DIMS[d].bit == TW_GROUP_MARKET   ? g->market
                                                         : day;
      if (DIMS[d].bit == TW_GROUP_DAY)
        tw_report_fmt_day(g->day, day, sizeof day);
      tw_buf_adds(b, "<td>");
      esc(b, v);
      tw_buf_adds(b, "</td>");
    }
    if (r->jobs) {
      tw_buf_adds(b, "<td class=\"job-name\">");
      esc(b, r->jobs[i].name);
      tw_buf_adds(b, "</td><td class=\"job-owner\">");
      esc(b, r->jobs[i].owner);
      tw_buf_adds(b, "</td>");
    }
    money_cell(b, g->list_uusd);
    effective_cell(r, g, b);
    money_cell(b, g->accrued_effective_uusd);
    tw_buf_printf(b, "<td class=\"n\">%lld</td></tr>", (long long)g->rows);
  }
  tw_buf_printf(
      b, "</tbody><tfoot><tr id=\"total-row\"><td colspan=\"%d\">Total</td>",
      ndim ? ndim : 1);
  money_cell(b, r->total_list_uusd);
  money_cell(b, r->total_effective_uusd);
  money_cell(b, r->total_accrued_effective_uusd);
  tw_buf_printf(b, "<td class=\"n\">%lld</td></tr></tfoot></table>",
                (long long)r->total_rows);
}

static void budgets_table(const struct tw_report *r, struct tw_buf *b) {
  if (!r->n_budgets)
    return;
  tw_buf_adds(b,
              "<table id=\"budgets\"><thead><tr><th>Tenant</th><th>Project</th>"
              "<th class=\"n\">Monthly limit</th><th class=\"n\">Spent</th>"
              "<th class=\"n\">Forecast</th></tr></thead><tbody>");
  for (size_t i = 0; i < r->n_budgets; i++) {
    const struct tw_report_budget *x = &r->budgets[i];
    tw_buf_adds(b, "<tr><td>");
    esc(b, x->b.tenant[0] ? x->b.tenant : "(all)");
    tw_buf_adds(b, "</td><td>");
    esc(b, x->b.project[0] ? x->b.project : "(all)");
    tw_buf_adds(b, "</td>");
    money_cell(b, x->b.limit_uusd);
    money_cell(b, x->spent_uusd);
    money_cell(b, x->forecast_uusd);
    tw_buf_adds(b, "</tr>");
  }
  tw_buf_adds(b, "</tbody></table>");
}

void html__render(const struct tw_report *r, struct tw_buf *b) {
  char from[32], to[32], now[32], tot[40], list[40], fc[40], rate[40];
  char acc[48], sav[48], window[48];
  tw_report_fmt_time(r->req->from_ms, from, sizeof from);
  tw_report_fmt_time(r->req->to_ms, to, sizeof to);
  tw_report_fmt_time(r->req->now_ms, now, sizeof now);
  usd_short(r->total_effective_uusd, tot, sizeof tot);
  usd_short(r->total_list_uusd, list, sizeof list);
  usd_short(r->forecast_uusd, fc, sizeof fc);
  usd_short(r->run_rate_uusd_per_day, rate, sizeof rate);
  usd_places(r->total_accrued_effective_uusd, 6, acc, sizeof acc);
  usd_places(r->total_list_uusd - r->total_effective_uusd, 2, sav, sizeof sav);
  int64_t wlen = r->window_to_ms - r->window_from_ms;
  if (wlen >= TW_DAY_MS)
    snprintf(window, sizeof window, "last %lld day%s",
             (long long)(wlen / TW_DAY_MS), wlen / TW_DAY_MS == 1 ? "" : "s");
  else
    snprintf(window, sizeof window, "last %lld h",
             (long long)((wlen + 3599999) / 3600000));
  tw_buf_printf(
      b,
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
      "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
      "<title>Tradewind spend %s to %s</title><style>%s</style></head>"
      "<body><h1>Spend report</h1><p class=\"sub\">%s to %s",
      from, to, STYLE, from, to);
  if (r->req->tenant) {
    tw_buf_adds(b, " &middot; tenant ");
    esc(b, r->req->tenant);
  }
  if (r->req->project) {
    tw_buf_adds(b, " &middot; project ");
    esc(b, r->req->project);
  }
  tw_buf_printf(
      b,
      " &middot; generated %s &middot; USD</p><div class=\"kpis\">"
      "<div class=\"kpi\"><span>Effective cost</span><b id=\"total-effective\" "
      "data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>List cost</span><b id=\"total-list\" "
      "data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>Savings (list - effective)</span><b "
      "id=\"savings\" data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>Accrued (running, not yet "
      "billed)</span><b id=\"accrued\" data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>Forecast to %s%s</span><b id=\"forecast\" "
      "data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>Run rate (%s)</span><b>%s/day</b></div>"
      "</div>",
      now, (long long)r->total_effective_uusd, tot,
      (long long)r->total_list_uusd, list,
      (long long)(r->total_list_uusd - r->total_effective_uusd), sav,
      (long long)r->total_accrued_effective_uusd, acc, to,
      wlen < TW_DAY_MS ? " (not extrapolated: under a day of data)" : "",
      (long long)r->forecast_uusd, fc, window, rate);
  /* the spot / on-demand split */
  tw_buf_adds(b, "<div class=\"kpis\" id=\"markets\">");
  for (size_t i = 0; i < r->n_by_market; i++) {
    const struct tw_ledger_group *g = &r->by_market[i];
    char amt[48];
    usd_places(g->effective_uusd, 2, amt, sizeof amt);
    tw_buf_adds(b, "<div class=\"kpi\"><span>");
    esc(b, g->market[0] ? g->market : "data transfer");
    tw_buf_printf(b, "</span><b class=\"market\" data-market=\"");
    esc(b, g->market);
    tw_buf_printf(b, "\" data-uusd=\"%lld\">%s</b></div>",
                  (long long)g->effective_uusd, amt);
  }
  tw_buf_adds(b, "</div>");
  tw_buf_adds(b, "<h2>Spend over time, by provider</h2>");
  chart_time(r, b);
  tw_buf_adds(b, "<h2>Spend by tenant</h2>");
  chart_tenants(r, b);
  tw_buf_adds(b, "<h2>Budget burn-down</h2>");
  chart_burndown(r, b);
  budgets_table(r, b);
  tw_buf_adds(b, "<h2>Detail</h2>");
  table(r, b);
  tw_buf_printf(b, "<script>%s</script></body></html>\n", SCRIPT);
}
