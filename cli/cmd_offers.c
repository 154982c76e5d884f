/* cmd_offers.c - `tradewind offers`: the broker's offer catalog as a table
 * (provider, region, zone, instance type, accelerators, $/h on demand and
 * on spot, interruption band), or the server's JSON with -o json
 * (GET /v1/offers). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

/* --all stops here even if the server keeps handing out cursors. */
#define OFFERS_MAX_PAGES 10000

enum {
  OPT_GPU = 1,
  OPT_SPOT,
  OPT_ON_DEMAND,
  OPT_MARKET,
  OPT_CPUS,
  OPT_MEMORY,
  OPT_ARCH,
  OPT_PROVIDER,
  OPT_REGION,
  OPT_JURISDICTION,
  OPT_ZONE,
  OPT_MAX_PRICE,
  OPT_SORT,
  OPT_LIMIT,
  OPT_CURSOR,
  OPT_ALL,
  OPT_ID
};

static const struct tw_cli_opt offers_opts[] = {
    {"gpu", 0, true, OPT_GPU},
    {"accelerator", 0, true, OPT_GPU},
    {"spot", 0, false, OPT_SPOT},
    {"on-demand", 0, false, OPT_ON_DEMAND},
    {"market", 0, true, OPT_MARKET},
    {"cpus", 0, true, OPT_CPUS},
    {"memory", 0, true, OPT_MEMORY},
    {"arch", 0, true, OPT_ARCH},
    {"provider", 0, true, OPT_PROVIDER},
    {"region", 0, true, OPT_REGION},
    {"jurisdiction", 0, true, OPT_JURISDICTION},
    {"zone", 0, true, OPT_ZONE},
    {"max-price", 0, true, OPT_MAX_PRICE},
    {"sort", 0, true, OPT_SORT},
    {"limit", 'n', true, OPT_LIMIT},
    {"cursor", 0, true, OPT_CURSOR},
    {"all", 0, false, OPT_ALL},
    {"id", 0, true, OPT_ID},
    {0},
};

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static void add_param(struct tw_buf *q, const char *name, const char *value) {
  char *e = tw_cli_http_escape(value);
  tw_buf_printf(q, "%c%s=%s", q->len ? '&' : '?', name, e);
  free(e);
}

/* "12.5" dollars to micro-USD, exactly (at most six decimals). */
static int dollars(const char *s, int64_t *out) {
  if (*s == '$')
    s++;
  int64_t ip = 0, fp = 0;
  int nf = 0;
  const char *p = s;
  if (!*p)
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    ip = ip * 10 + (*p - '0');
    if (ip > 1000000)
      return -1;
  }
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) {
      if (++nf > 6)
        return -1;
      fp = fp * 10 + (*p - '0');
    }
  if (*p || p == s)
    return -1;
  while (nf++ < 6)
    fp *= 10;
  *out = ip * 1000000 + fp;
  return *out > 0 ? 0 : -1;
}

/* A comma-separated option given more than once is joined. */
static void join(struct tw_buf *b, const char *v) {
  tw_buf_printf(b, "%s%s", b->len ? "," : "", v);
}

static void money_cell(json_t *v, char *out, size_t outsz) {
  if (json_is_integer(v))
    tw_cli_fmt_uusd((int64_t)json_integer_value(v), out, outsz);
  else
    snprintf(out, outsz, "-");
}

static void offer_row(struct tw_cli_table *t, json_t *o) {
  char gpu[64] = "-", od[32] = "-", spot[32] = "-", risk[16] = "-";
  json_t *acc = json_object_get(o, "accelerator");
  if (json_is_object(acc)) {
    json_t *count = json_object_get(acc, "count");
    char n[24] = "";
    if (json_is_integer(count))
      snprintf(n, sizeof n, "%" JSON_INTEGER_FORMAT, json_integer_value(count));
    else if (json_is_number(count))
      snprintf(n, sizeof n, "%.3g", json_number_value(count));
    snprintf(gpu, sizeof gpu, "%s x%s",
             jstr(acc, "name") ? jstr(acc, "name") : "?", n);
  }
  const char *market = jstr(o, "market");
  json_t *price = json_object_get(o, "price_uusd_per_hour");
  if (market && !strcmp(market, "spot")) {
    money_cell(price, spot, sizeof spot);
    money_cell(json_object_get(o, "on_demand_price_uusd_per_hour"), od,
               sizeof od);
  } else {
    money_cell(price, od, sizeof od);
    if (market && !strcmp(market, "private"))
      strncat(od, " (private)", sizeof od - strlen(od) - 1);
  }
  json_t *intr = json_object_get(o, "interruption");
  if (json_is_object(intr) && jstr(intr, "band"))
    snprintf(risk, sizeof risk, "%s", jstr(intr, "band"));
  const char *zone = jstr(o, "zone");
  const char *row[] = {jstr(o, "provider"),
                       jstr(o, "region"),
                       zone ? zone : "-",
                       jstr(o, "instance_type"),
                       gpu,
                       od,
                       spot,
                       risk};
  tw_cli_table_add(t, row);
}

/* Stale sources, on stderr: the table may be out of date. */
static void warn_stale(struct tw_cli *c, json_t *catj) {
  json_t *srcs = json_object_get(catj, "sources");
  for (size_t i = 0; i < json_array_size(srcs); i++) {
    json_t *s = json_array_get(srcs, i);
    if (!json_is_true(json_object_get(s, "stale")))
      continue;
    json_t *age = json_object_get(s, "age_s");
    char a[32] = "never fetched";
    if (json_is_integer(age))
      tw_cli_fmt_age((int64_t)json_integer_value(age) * 1000, a, sizeof a);
    struct tw_buf name;
    tw_buf_init(&name);
    tw_cli_add_clean(&name, jstr(s, "name") ? jstr(s, "name") : "?");
    tw_cli_errorf(c, "warning: catalog source %s is stale (%s%s)", name.data, a,
                  json_is_integer(age) ? " old" : "");
    tw_buf_release(&name);
  }
}

static int cmd_offers(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {
      "PROVIDER",     "REGION",        "ZONE",     "INSTANCE TYPE",
      "ACCELERATORS", "$/H ON-DEMAND", "$/H SPOT", "INTERRUPTION"};
  struct tw_buf q, providers, regions, jurisdictions;
  const char *cursor = NULL;
  bool all = false;
  int code = TW_EXIT_OK;
  json_t *items = json_array(), *last_catalog = NULL;
  char *next = NULL, *single = NULL;
  size_t single_len = 0;
  tw_buf_init(&q);
  tw_buf_init(&providers);
  tw_buf_init(&regions);
  tw_buf_init(&jurisdictions);

  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    long n;
    int64_t v;
    switch (o->id) {
    case OPT_GPU: {
      const char *colon = strchr(o->value, ':');
      if (!*o->value || colon == o->value ||
          (colon && tw_cli_parse_int(colon + 1, 1, 1024, &n))) {
        code = tw_cli_usage(c,
                            "--gpu: expected NAME or NAME:COUNT like "
                            "A100-80GB:8, got \"%.64s\"",
                            o->value);
        goto out;
      }
      add_param(&q, "accelerator", o->value);
      break;
    }
    case OPT_SPOT:
      add_param(&q, "market", "spot");
      break;
    case OPT_ON_DEMAND:
      add_param(&q, "market", "on-demand");
      break;
    case OPT_MARKET:
      if (strcmp(o->value, "spot") && strcmp(o->value, "on-demand") &&
          strcmp(o->value, "private") && strcmp(o->value, "any")) {
        code = tw_cli_usage(c,
                            "--market: expected spot, on-demand, private or "
                            "any, got \"%.64s\"",
                            o->value);
        goto out;
      }
      add_param(&q, "market", o->value);
      break;
    case OPT_CPUS:
      if (tw_cli_parse_int(o->value, 1, 100000, &n)) {
        code = tw_cli_usage(c, "--cpus: expected 1..100000, got \"%.64s\"",
                            o->value);
        goto out;
      }
      add_param(&q, "cpus", o->value);
      break;
    case OPT_MEMORY:
      if (tw_cli_parse_int(o->value, 1, 1 << 24, &n)) {
        code = tw_cli_usage(c,
                            "--memory: expected GiB, a positive integer, "
                            "got \"%.64s\"",
                            o->value);
        goto out;
      }
      add_param(&q, "memory_gib", o->value);
      break;
    case OPT_ARCH:
      if (strcmp(o->value, "x86_64") && strcmp(o->value, "arm64")) {
        code = tw_cli_usage(
            c, "--arch: expected x86_64 or arm64, got \"%.64s\"", o->value);
        goto out;
      }
      add_param(&q, "arch", o->value);
      break;
    case OPT_PROVIDER:
      join(&providers, o->value);
      break;
    case OPT_REGION:
      join(&regions, o->value);
      break;
    case OPT_JURISDICTION:
      join(&jurisdictions, o->value);
      break;
    case OPT_ZONE:
      add_param(&q, "zone", o->value);
      break;
    case OPT_MAX_PRICE: {
      if (dollars(o->value, &v)) {
        code = tw_cli_usage(c,
                            "--max-price: expected dollars per hour like "
                            "12.5, got \"%.64s\"",
                            o->value);
        goto out;
      }
      char t[32];
      snprintf(t, sizeof t, "%" PRId64, v);
      add_param(&q, "max_price_uusd", t);
      break;
    }
    case OPT_SORT:
      add_param(&q, "sort", o->value);
      break;
    case OPT_LIMIT:
      if (tw_cli_parse_int(o->value, 1, 1000, &n)) {
        code = tw_cli_usage(c, "--limit: expected 1..1000, got \"%.64s\"",
                            o->value);
        goto out;
      }
      add_param(&q, "limit", o->value);
      break;
    case OPT_CURSOR:
      cursor = o->value;
      break;
    case OPT_ALL:
      all = true;
      break;
    case OPT_ID:
      add_param(&q, "id", o->value);
      break;
    default:
      break;
    }
  }
  if (providers.len)
    add_param(&q, "provider", providers.data);
  if (regions.len)
    add_param(&q, "region", regions.data);
  if (jurisdictions.len)
    add_param(&q, "jurisdiction", jurisdictions.data);

  next = cursor ? tw_strdup(cursor) : NULL;
  for (int page = 0;; page++) {
    struct tw_buf path;
    struct tw_cli_http_resp resp;
    json_t *body = NULL;
    tw_buf_init(&path);
    tw_cli_http_resp_init(&resp);
    tw_buf_printf(&path, "/v1/offers%s", q.len ? q.data : "");
    if (next) {
      char *e = tw_cli_http_escape(next);
      tw_buf_printf(&path, "%ccursor=%s", q.len ? '&' : '?', e);
      free(e);
    }
    code =
        tw_cli_request(c, "GET", path.data, NULL, NULL, 0, NULL, &resp, &body);
    tw_buf_release(&path);
    json_t *page_items = json_object_get(body, "items");
    if (code == TW_EXIT_OK && !json_is_array(page_items)) {
      tw_cli_errorf(c, "the server's offer list has no items array");
      code = TW_EXIT_UNREACHABLE;
    }
    if (code != TW_EXIT_OK) {
      json_decref(body);
      tw_cli_http_resp_release(&resp);
      goto out;
    }
    json_array_extend(items, page_items);
    json_decref(last_catalog);
    last_catalog = json_incref(json_object_get(body, "catalog"));
    const char *nc = jstr(body, "next_cursor");
    bool repeated = nc && next && !strcmp(nc, next);
    free(next);
    next = nc && *nc ? tw_strdup(nc) : NULL;
    if (!all) {
      single = tw_buf_detach(&resp.body);
      single_len = strlen(single);
    }
    json_decref(body);
    tw_cli_http_resp_release(&resp);
    if (!all || !next)
      break;
    if (repeated || page + 1 >= OFFERS_MAX_PAGES) {
      tw_cli_errorf(c,
                    "the server keeps returning more pages; stopped after %d",
                    page + 1);
      code = TW_EXIT_UNREACHABLE;
      goto out;
    }
  }

  if (tw_cli_structured(c)) {
    if (single) {
      code = tw_cli_print_json_text(c, single, single_len);
    } else {
      json_t *doc =
          json_pack("{s:O,s:n,s:O}", "items", items, "next_cursor", "catalog",
                    last_catalog ? last_catalog : json_null());
      code = tw_cli_print_json(c, doc);
      json_decref(doc);
    }
    goto out;
  }
  struct tw_cli_table t;
  struct tw_buf b;
  tw_cli_table_init(&t, 8, headers);
  for (size_t i = 0; i < json_array_size(items); i++)
    offer_row(&t, json_array_get(items, i));
  tw_buf_init(&b);
  tw_cli_table_render(&t, &b);
  fputs(b.data, c->io->out);
  tw_buf_release(&b);
  tw_cli_table_release(&t);
  if (last_catalog)
    warn_stale(c, last_catalog);
  if (!all && next) {
    struct tw_buf nb;
    tw_buf_init(&nb);
    tw_cli_add_clean(&nb, next);
    tw_cli_errorf(c, "more offers: add --cursor %s, or --all", nb.data);
    tw_buf_release(&nb);
  }

out:
  free(next);
  free(single);
  json_decref(items);
  json_decref(last_catalog);
  tw_buf_release(&q);
  tw_buf_release(&providers);
  tw_buf_release(&regions);
  tw_buf_release(&jurisdictions);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_offers = {
    .name = "offers",
    .args = "",
    .summary = "list the offers of every cloud, cheapest first",
    .help =
        "Prints provider, region, zone, instance type, accelerators, the\n"
        "hourly price on demand and on spot, and the interruption band;\n"
        "-o json prints the server's answer, with each offer's source.\n"
        "A stale catalog source is reported on stderr.\n"
        "\n"
        "Options:\n"
        "  --gpu NAME[:COUNT]   accelerators, at least COUNT (A100 matches\n"
        "                       every A100; A100-80GB only itself)\n"
        "  --spot, --on-demand  one market (or --market spot|on-demand|\n"
        "                       private|any)\n"
        "  --cpus N             at least N vCPUs\n"
        "  --memory GIB         at least GIB of memory\n"
        "  --arch ARCH          x86_64 or arm64\n"
        "  --provider NAME      a provider or account (repeatable)\n"
        "  --region SELECTOR    \"aws:us-*\", \"azure:westeurope\" "
        "(repeatable)\n"
        "  --jurisdiction J     EU, US, UK, ... (repeatable)\n"
        "  --zone ZONE          a zone's name or AWS zone id\n"
        "  --max-price USD      at most USD per hour, like 12.5\n"
        "  --sort ORDER         price (default), -price, vcpus, -vcpus,\n"
        "                       memory, -memory, risk\n"
        "  -n, --limit N        offers per page, 1..1000 (server default 50)\n"
        "  --cursor CURSOR      start at this page (from a previous list)\n"
        "  --all                follow next_cursor through every page\n"
        "  --id ID              one offer, with its spot price history\n",
    .opts = offers_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_offers,
};
