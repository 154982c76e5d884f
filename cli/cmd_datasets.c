/* cmd_datasets.c - `tradewind datasets add URI [--size S] [--location L]...`
 * and `tradewind datasets list [--uri URI]`: the dataset registry that
 * placement prices egress and transfer from (POST and GET /v1/datasets). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli_int.h"

enum { OPT_SIZE = 1, OPT_LOCATION, OPT_URI, OPT_LIMIT };

static const struct tw_cli_opt add_opts[] = {
    {"size", 0, true, OPT_SIZE},
    {"location", 'l', true, OPT_LOCATION},
    {0},
};

static const struct tw_cli_opt list_opts[] = {
    {"uri", 0, true, OPT_URI},
    {"limit", 0, true, OPT_LIMIT},
    {0},
};

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

/* 1500000000000 -> "1.5 TB" (powers of 1000, as the spec writes sizes) */
static void fmt_size(int64_t b, char *out, size_t outsz) {
  static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int k = 0;
  int64_t whole = b, frac = 0;
  while (whole >= 1000 && k < 5) {
    frac = whole % 1000;
    whole /= 1000;
    k++;
  }
  if (!b)
    snprintf(out, outsz, "-");
  else if (k && frac >= 100)
    snprintf(out, outsz, "%lld.%lld %s", (long long)whole,
             (long long)(frac / 100), u[k]);
  else
    snprintf(out, outsz, "%lld %s", (long long)whole, u[k]);
}

static void print_items(struct tw_cli *c, json_t *items) {
  static const char *const headers[] = {"URI", "SIZE", "LOCATIONS"};
  struct tw_cli_table t;
  tw_cli_table_init(&t, 3, headers);
  size_t i;
  json_t *d;
  json_array_foreach(items, i, d) {
    char size[32];
    json_t *sb = json_object_get(d, "size_bytes");
    fmt_size(json_is_integer(sb) ? (int64_t)json_integer_value(sb) : 0, size,
             sizeof size);
    struct tw_buf locs;
    tw_buf_init(&locs);
    tw_buf_adds(&locs, "");
    size_t k;
    json_t *l;
    json_array_foreach(json_object_get(d, "locations"), k, l) {
      tw_buf_printf(&locs, "%s%s", locs.len ? ", " : "", jstr(l, "location"));
      if (!strcmp(jstr(l, "origin"), "replicated")) {
        char cost[32];
        json_t *cu = json_object_get(l, "cost_uusd");
        tw_cli_fmt_uusd(json_is_integer(cu) ? (int64_t)json_integer_value(cu)
                                            : 0,
                        cost, sizeof cost);
        tw_buf_printf(&locs, " (replicated, %s)", cost);
      }
    }
    const char *row[] = {jstr(d, "uri"), size, locs.data};
    tw_cli_table_add(&t, row);
    tw_buf_release(&locs);
  }
  struct tw_buf out;
  tw_buf_init(&out);
  tw_cli_table_render(&t, &out);
  fputs(out.data ? out.data : "", c->io->out);
  tw_buf_release(&out);
  tw_cli_table_release(&t);
}

static int cmd_add(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_buf body;
  tw_buf_init(&body);
  tw_buf_adds(&body, "{\"uri\":");
  tw_buf_json_str(&body, p->pos[0]);
  size_t n_loc = 0;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_SIZE) {
      tw_buf_adds(&body, ",\"size\":");
      tw_buf_json_str(&body, p->opts[i].value);
    }
  tw_buf_adds(&body, ",\"locations\":[");
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_LOCATION) {
      if (n_loc++)
        tw_buf_addc(&body, ',');
      tw_buf_json_str(&body, p->opts[i].value);
    }
  tw_buf_adds(&body, "]}");
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *d = NULL;
  int code = tw_cli_request(c, "POST", "/v1/datasets", "application/json",
                            body.data, body.len, NULL, &resp, &d);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c)) {
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    } else {
      json_t *items = json_array();
      json_array_append(items, d);
      print_items(c, items);
      json_decref(items);
    }
  }
  json_decref(d);
  tw_cli_http_resp_release(&resp);
  tw_buf_release(&body);
  return code;
}

static int cmd_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_buf path;
  tw_buf_init(&path);
  tw_buf_adds(&path, "/v1/datasets");
  long limit = 0;
  for (size_t i = 0; i < p->nopts; i++) {
    char *e = tw_cli_http_escape(p->opts[i].value);
    if (p->opts[i].id == OPT_URI) {
      tw_buf_printf(&path, "%curi=%s", strchr(path.data, '?') ? '&' : '?', e);
    } else if (p->opts[i].id == OPT_LIMIT) {
      if (tw_cli_parse_int(p->opts[i].value, 1, 500, &limit)) {
        free(e);
        tw_buf_release(&path);
        return tw_cli_usage(c, "--limit: expected 1 to 500, got \"%.32s\"",
                            p->opts[i].value);
      }
      tw_buf_printf(&path, "%climit=%ld", strchr(path.data, '?') ? '&' : '?',
                    limit);
    }
    free(e);
  }
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *body = NULL;
  int code =
      tw_cli_request(c, "GET", path.data, NULL, NULL, 0, NULL, &resp, &body);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    else
      print_items(c, json_object_get(body, "items"));
  }
  json_decref(body);
  tw_cli_http_resp_release(&resp);
  tw_buf_release(&path);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_datasets_add = {
    .name = "datasets add",
    .args = "URI",
    .summary = "register a dataset (its size and where copies are)",
    .help =
        "Adds to what the broker knows: a size replaces the old one,\n"
        "locations are added.  Placement prices moving a job's datasets\n"
        "from the nearest copy (egress and transfer time).\n"
        "\n"
        "Options:\n"
        "      --size SIZE          1.5TB, 200GiB, or bytes\n"
        "  -l, --location P:REGION  where a copy is (aws:us-east-1); repeat\n"
        "                           for each copy\n",
    .opts = add_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_add,
};

const struct tw_cli_cmd tw_cli_cmd_datasets_list = {
    .name = "datasets list",
    .args = "",
    .summary = "list registered datasets and their copies",
    .help = "Options:\n"
            "      --uri URI    only this dataset\n"
            "      --limit N    at most N (1..500, default 50)\n",
    .opts = list_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_list,
};
