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

/* A round axis maximum >= v (1, 2, 5 x 10^k micro-USD). */
static int64_t nice_max(int64_t v) {
  if (v <= 0)
    return 1000000;
  int64_t m = 1;
  while (m < v / 10)
    m *= 10;
  for (;;) {
    if (m >= v)
      return m;
    if (2 * m >= v)
      return 2 * m;
    if (5 * m >= v)
      return 5 * m;
    m *= 10;
  }
}

static double y_of(int64_t v, int64_t lo, int64_t hi) {
  return MT + (double)(H - MT - MB) * (double)(hi - v) / (double)(hi - lo);
}

static void y_axis(struct tw_buf *b, int64_t lo, int64_t hi) {
  for (int i = 0; i <= 4; i++) {
    int64_t v = lo + (hi - lo) / 4 * i;
    double y = y_of(v, lo, hi);
    char t[40];
    usd_short(v, t, sizeof t);
    tw_buf_printf(
        b,
        "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%d\" y=\"%.1f\" "
        "text-anchor=\"end\">%s</text>",
        ML, W - MR, y, y, ML - 6, y + 4, t);
  }
}

static int provider_index(const char *const *names, size_t n, const char *p) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], p))
      return (int)i;
  return -1;
}

/* Spend over time, stacked by provider. */
static void chart_time(const struct tw_report *r, struct tw_buf *b) {
  int64_t d0 = tw_ledger_day(r->req->from_ms);
  int64_t d1 = tw_ledger_day(r->req->to_ms - 1) + 1;
  int64_t ndays = d1 - d0;
  int64_t per = (ndays + MAX_BARS - 1) / MAX_BARS; /* days per bar */
  size_t nbars = (size_t)((ndays + per - 1) / per);
  const char *names[64];
  size_t np = 0;
  for (size_t i = 0; i < r->n_by_provider_day && np < 64; i++)
    if (provider_index(names, np, r->by_provider_day[i].provider) < 0)
      names[np++] = r->by_provider_day[i].provider;
  int64_t *cell = tw_calloc(nbars * (np ? np : 1), sizeof *cell);
  for (size_t i = 0; i < r->n_by_provider_day; i++) {
    const struct tw_ledger_group *g = &r->by_provider_day[i];
    int p = provider_index(names, np, g->provider);
    if (p < 0 || g->day < d0 || g->day >= d1)
      continue;
    cell[(size_t)((g->day - d0) / per) * np + (size_t)p] += g->effective_uusd;
  }
  int64_t top = 0, lo = 0;
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
    if (neg < lo)
      lo = neg;
  }
  int64_t hi = nice_max(top);
  lo = lo < 0 ? -nice_max(-lo) : 0;
  tw_buf_printf(
      b,
      "<svg class=\"chart\" id=\"chart-time\" role=\"img\" "
      "aria-label=\"Spend over time by provider\" viewBox=\"0 0 %d %d\" "
      "width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">",
      W, H, W, H);
  y_axis(b, lo, hi);
  double slot = (double)(W - ML - MR) / (double)(nbars ? nbars : 1);
  double bw = slot * 0.8 > 1 ? slot * 0.8 : 1;
  for (size_t k = 0; k < nbars; k++) {
    double x = ML + slot * (double)k + (slot - bw) / 2;
    int64_t base_pos = 0, base_neg = 0;
    char day[16];
    tw_report_fmt_day(d0 + (int64_t)k * per, day, sizeof day);
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
      char amt[40];
      usd_short(v, amt, sizeof amt);
      tw_buf_printf(b,
                    "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\" fill=\"%s\" data-uusd=\"%lld\"><title>%s ",
                    x, y, bw, h > 0.5 ? h : 0.5, COLORS[p % NCOLORS],
                    (long long)v, day);
      esc(b, names[p]);
      tw_buf_printf(b, ": %s</title></rect>", amt);
    }
  }
  /* a date under the first, middle and last bar */
  size_t marks[3] = {0, nbars / 2, nbars ? nbars - 1 : 0};
  for (int i = 0; i < 3 && nbars; i++) {
    if (i && marks[i] == marks[i - 1])
      continue;
    char day[16];
    tw_report_fmt_day(d0 + (int64_t)marks[i] * per, day, sizeof day);
    tw_buf_printf(b,
                  "<text class=\"tick\" x=\"%.1f\" y=\"%d\" "
                  "text-anchor=\"middle\">%s</text>",
                  ML + slot * ((double)marks[i] + 0.5), H - MB + 18, day);
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
  int64_t hi = nice_max(top);
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

/* The limit the burn-down draws: the budget of the scope asked for. */
static int64_t burn_limit(const struct tw_report *r, char *what, size_t n) {
  const struct tw_report_req *q = r->req;
  int64_t sum = 0;
  size_t count = 0;
  for (size_t i = 0; i < r->n_budgets; i++) {
    const struct tw_ledger_budget *b = &r->budgets[i].b;
    bool exact =
        (q->tenant ? !strcmp(b->tenant, q->tenant) : !b->tenant[0]) &&
        (q->project ? !strcmp(b->project, q->project) : !b->project[0]);
    if (exact) {
      snprintf(what, n, "%s%s%s", b->tenant[0] ? b->tenant : "overall",
               b->project[0] ? "/" : "", b->project);
      return b->limit_uusd;
    }
  }
  /* no budget for the scope itself: the sum of its tenants' budgets */
  if (!q->tenant)
    for (size_t i = 0; i < r->n_budgets; i++)
      if (r->budgets[i].b.tenant[0] && !r->budgets[i].b.project[0]) {
        sum += r->budgets[i].b.limit_uusd;
        count++;
      }
  snprintf(what, n, "sum of %zu tenant budget%s", count, count == 1 ? "" : "s");
  return count ? sum : -1;
}

static void chart_burndown(const struct tw_report *r, struct tw_buf *b) {
  int64_t d0 = tw_ledger_day(r->req->from_ms);
  int64_t d1 = tw_ledger_day(r->req->to_ms - 1) + 1;
  size_t nd = (size_t)(d1 - d0);
  int64_t *cum = tw_calloc(nd + 1, sizeof *cum); /* spend before day k */
  for (size_t i = 0; i < r->n_by_provider_day; i++) {
    const struct tw_ledger_group *g = &r->by_provider_day[i];
    if (g->day >= d0 && g->day < d1)
      cum[g->day - d0 + 1] += g->effective_uusd;
  }
  for (size_t k = 1; k <= nd; k++)
    cum[k] += cum[k - 1];
  char what[300];
  int64_t limit = burn_limit(r, what, sizeof what);
  bool has_budget = limit >= 0;
  /* days elapsed: up to now, within the range */
  int64_t now = r->req->now_ms;
  double now_x_days =
      now <= r->req->from_ms ? 0
      : now >= r->req->to_ms
          ? (double)nd
          : (double)(now - (int64_t)d0 * TW_DAY_MS) / (double)TW_DAY_MS;
  size_t upto = now_x_days >= (double)nd ? nd : (size_t)now_x_days;
  int64_t spent = r->total_effective_uusd;
  int64_t fc = r->forecast_uusd;
  /* remaining budget, or cumulative spend when there is no budget */
  int64_t top = has_budget ? limit : (fc > spent ? fc : spent);
  int64_t bottom = has_budget ? limit - (fc > spent ? fc : spent) : 0;
  for (size_t k = 0; k <= upto; k++) {
    int64_t v = has_budget ? limit - cum[k] : cum[k];
    if (v > top)
      top = v;
    if (v < bottom)
      bottom = v;
  }
  int64_t hi = nice_max(top), lo = bottom < 0 ? -nice_max(-bottom) : 0;
  tw_buf_printf(
      b,
      "<svg class=\"chart\" id=\"chart-burndown\" role=\"img\" "
      "aria-label=\"Budget burn-down with forecast\" viewBox=\"0 0 %d %d\" "
      "width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">",
      W, H, W, H);
  y_axis(b, lo, hi);
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
  /* end the actual line at now, with what was spent by now */
  int64_t v_now = has_budget ? limit - spent : spent;
  double x_now = ML + span * now_x_days;
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
  char f0[16], f1[16];
  tw_report_fmt_day(d0, f0, sizeof f0);
  tw_report_fmt_day(d1 - 1, f1, sizeof f1);
  tw_buf_printf(b,
                "<text class=\"tick\" x=\"%d\" y=\"%d\">%s</text>"
                "<text class=\"tick\" x=\"%d\" y=\"%d\" "
                "text-anchor=\"end\">%s</text></svg>",
                ML, H - MB + 18, f0, W - MR, H - MB + 18, f1);
  char l[40], s[40], f[40];
  usd_short(limit, l, sizeof l);
  usd_short(spent, s, sizeof s);
  usd_short(fc, f, sizeof f);
  tw_buf_adds(b, "<p class=\"note\">");
  if (has_budget) {
    tw_buf_adds(b, "Remaining of the monthly budget (");
    esc(b, what);
    tw_buf_printf(b,
                  ", %s from %s): solid so far, dashed the forecast. "
                  "Spent %s; forecast %s by the end of the range%s.",
                  l, r->budget_source ? r->budget_source : "config", s, f,
                  fc > limit ? ", <b class=\"over\">over budget</b>" : "");
  } else {
    tw_buf_printf(b,
                  "No budget configured for this scope: cumulative spend "
                  "(solid) and its forecast (dashed). Spent %s; forecast %s.",
                  s, f);
  }
  tw_buf_adds(b, "</p>");
  free(cum);
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
            {TW_GROUP_DAY, "Day"},           {TW_GROUP_JOB, "Job"}};
#define NDIMS (sizeof DIMS / sizeof DIMS[0])

static void money_cell(struct tw_buf *b, int64_t v) {
  char t[32];
  tw_report_fmt_usd(v, t, sizeof t);
  tw_buf_printf(b, "<td class=\"n\" data-uusd=\"%lld\">%s</td>", (long long)v,
                t);
}

static void table(const struct tw_report *r, struct tw_buf *b) {
  int ndim = 0;
  tw_buf_adds(b, "<table id=\"detail\"><thead><tr>");
  for (size_t d = 0; d < NDIMS; d++)
    if (r->mask & DIMS[d].bit) {
      tw_buf_printf(b, "<th>%s</th>", DIMS[d].name);
      ndim++;
    }
  tw_buf_adds(b,
              "<th class=\"n\">List cost (USD)</th><th class=\"n\">Effective "
              "cost (USD)</th><th class=\"n\">Rows</th></tr></thead><tbody>");
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
                                                         : day;
      if (DIMS[d].bit == TW_GROUP_DAY)
        tw_report_fmt_day(g->day, day, sizeof day);
      tw_buf_adds(b, "<td>");
      esc(b, v);
      tw_buf_adds(b, "</td>");
    }
    money_cell(b, g->list_uusd);
    money_cell(b, g->effective_uusd);
    tw_buf_printf(b, "<td class=\"n\">%lld</td></tr>", (long long)g->rows);
  }
  tw_buf_printf(
      b, "</tbody><tfoot><tr id=\"total-row\"><td colspan=\"%d\">Total</td>",
      ndim ? ndim : 1);
  money_cell(b, r->total_list_uusd);
  money_cell(b, r->total_effective_uusd);
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
  tw_report_fmt_time(r->req->from_ms, from, sizeof from);
  tw_report_fmt_time(r->req->to_ms, to, sizeof to);
  tw_report_fmt_time(r->req->now_ms, now, sizeof now);
  usd_short(r->total_effective_uusd, tot, sizeof tot);
  usd_short(r->total_list_uusd, list, sizeof list);
  usd_short(r->forecast_uusd, fc, sizeof fc);
  usd_short(r->run_rate_uusd_per_day, rate, sizeof rate);
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
      "<div class=\"kpi\"><span>Forecast to %s</span><b id=\"forecast\" "
      "data-uusd=\"%lld\">%s</b></div>"
      "<div class=\"kpi\"><span>Run rate (last 7 "
      "days)</span><b>%s/day</b></div>"
      "</div>",
      now, (long long)r->total_effective_uusd, tot,
      (long long)r->total_list_uusd, list, to, (long long)r->forecast_uusd, fc,
      rate);
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
