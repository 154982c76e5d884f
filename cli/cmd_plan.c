/* cmd_plan.c - `tradewind plan FILE [--candidates N]`: where a job would
 * run if submitted now, and why (POST /v1/plan; nothing is submitted).
 * The table shows the ranked candidates with their cost breakdown and
 * scores, then every filter that refused offers, with how many. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/cli_int.h"

#define PLAN_FILE_MAX (8u * 1024 * 1024)

enum { OPT_CANDIDATES = 1 };

static const struct tw_cli_opt plan_opts[] = {
    {"candidates", 'n', true, OPT_CANDIDATES},
    {0},
};

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

static int64_t jint(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static void money(json_t *o, const char *key, char *out, size_t outsz) {
  tw_cli_fmt_uusd(jint(o, key), out, outsz);
}

/* "12345" -> "12,345" */
static void count(int64_t v, char *out, size_t outsz) {
  char d[32];
  int n = snprintf(d, sizeof d, "%lld", (long long)v);
  size_t o = 0;
  for (int i = 0; i < n && o + 2 < outsz; i++) {
    if (i && d[0] != '-' && (n - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = d[i];
  }
  out[o] = '\0';
}

/* A workflow's plan (a `tasks:` document): the server's explanation of
 * the joint and the step-by-step placements, line by line. */
static int print_workflow_plan(struct tw_cli *c, json_t *plan) {
  json_t *lines = json_object_get(plan, "explain");
  struct tw_buf line;
  tw_buf_init(&line);
  size_t i;
  json_t *l;
  json_array_foreach(lines, i, l) {
    tw_buf_reset(&line);
    tw_buf_adds(&line, "");
    tw_cli_add_clean(&line, json_is_string(l) ? json_string_value(l) : "");
    fprintf(c->io->out, "%s\n", line.data);
  }
  tw_buf_release(&line);
  return json_is_string(json_object_get(plan, "infeasible")) ? TW_EXIT_NO_FIT
                                                              : TW_EXIT_OK;
}

static int print_plan(struct tw_cli *c, json_t *plan) {
  if (json_is_object(json_object_get(plan, "workflow")))
    return print_workflow_plan(c, plan);
  json_t *cands = json_object_get(plan, "candidates");
  json_t *rej = json_object_get(plan, "rejected");
  json_t *job = json_object_get(plan, "job");
  json_t *scores = json_object_get(plan, "scores");
  if (!json_is_array(cands) || !json_is_array(rej)) {
    tw_cli_errorf(c, "the server's plan has no candidates");
    return TW_EXIT_UNREACHABLE;
  }
  struct tw_buf line;
  tw_buf_init(&line);
  tw_buf_adds(&line, "Plan for ");
  tw_cli_add_clean(&line, jstr(job, "name"));
  tw_buf_adds(&line, " (tenant ");
  tw_cli_add_clean(&line, jstr(job, "tenant"));
  tw_buf_adds(&line, "): ");
  tw_cli_add_clean(&line, jstr(plan, "explain"));
  fprintf(c->io->out, "%s\n", line.data);
  tw_buf_reset(&line);
  if (json_array_size(cands)) {
    static const char *const headers[] = {
        "RANK",    "OFFER",   "MARKET", "VCPUS",  "MEMORY",
        "ARCH",    "ACCEL",   "PRICE/H", "COMPUTE", "SPOT",
        "EGRESS",  "TRANSFER", "TOTAL",  "FINISH", "SCORES"};
    struct tw_cli_table t;
    tw_cli_table_init(&t, 15, headers);
    size_t i;
    json_t *cand;
    json_array_foreach(cands, i, cand) {
      json_t *cost = json_object_get(cand, "cost");
      char rank[16], where[256], price[32], comp[32], spot[32], eg[32], tr[48],
          total[32];
      snprintf(rank, sizeof rank, "%lld", (long long)jint(cand, "rank"));
      snprintf(where, sizeof where, "%s/%s%s%s/%s", jstr(cand, "account"),
               jstr(cand, "region"), *jstr(cand, "zone") ? "/" : "",
               jstr(cand, "zone"), jstr(cand, "instance_type"));
      money(cand, "price_uusd_per_hour", price, sizeof price);
      money(cost, "compute_uusd", comp, sizeof comp);
      money(cost, "spot_risk_uusd", spot, sizeof spot);
      money(cost, "egress_uusd", eg, sizeof eg);
      char trm[32];
      money(cost, "transfer_uusd", trm, sizeof trm);
      int64_t ts = jint(cost, "transfer_s");
      if (ts)
        snprintf(tr, sizeof tr, "%s (%llds)", trm, (long long)ts);
      else
        snprintf(tr, sizeof tr, "%s", trm);
      money(cost, "total_uusd", total, sizeof total);
      char vcpus[16], mem[32], acc[64];
      snprintf(vcpus, sizeof vcpus, "%lld", (long long)jint(cand, "vcpus"));
      int64_t mib = jint(cand, "memory_mib");
      if (mib % 1024)
        snprintf(mem, sizeof mem, "%lld MiB", (long long)mib);
      else
        snprintf(mem, sizeof mem, "%lld GiB", (long long)(mib / 1024));
      json_t *ac = json_object_get(cand, "accelerator");
      if (json_is_object(ac))
        snprintf(acc, sizeof acc, "%lldx %s", (long long)jint(ac, "count"),
                 jstr(ac, "name"));
      else
        snprintf(acc, sizeof acc, "-");
      struct tw_buf sc;
      tw_buf_init(&sc);
      tw_buf_adds(&sc, "");
      const char *name;
      json_t *v;
      json_t *cs = json_object_get(cand, "scores");
      json_object_foreach(cs, name, v) {
        tw_buf_printf(&sc, "%s%s=%lld", sc.len ? " " : "", name,
                      json_is_integer(v) ? (long long)json_integer_value(v)
                                         : 0LL);
      }
      if (json_array_size(scores) > 1)
        tw_buf_printf(&sc, " total=%lld", (long long)jint(cand, "total_score"));
      if (json_is_false(json_object_get(cand, "launchable")))
        tw_buf_printf(&sc, " (%s)", jstr(cand, "note"));
      const char *row[] = {rank,  where, jstr(cand, "market"),
                           vcpus, mem,   jstr(cand, "arch"),
                           acc,   price, comp,
                           spot,  eg,    tr,
                           total, jstr(cost, "finish"), sc.data};
      tw_cli_table_add(&t, row);
      tw_buf_release(&sc);
    }
    tw_cli_table_render(&t, &line);
    fputs(line.data, c->io->out);
    tw_cli_table_release(&t);
    tw_buf_reset(&line);
    tw_buf_adds(&line, "Ties: ");
    tw_cli_add_clean(&line, jstr(plan, "tie_break"));
    fprintf(c->io->out, "%s\n", line.data);
    tw_buf_reset(&line);
  }
  bool any = false;
  size_t i;
  json_t *r;
  json_array_foreach(rej, i, r) {
    if (!jint(r, "count"))
      continue;
    if (!any) {
      fprintf(c->io->out, "Filtered out:\n");
      any = true;
    }
    char n[32];
    count(jint(r, "count"), n, sizeof n);
    tw_buf_reset(&line);
    tw_buf_printf(&line, "  %12s  %-12s  ", n, jstr(r, "filter"));
    tw_cli_add_clean(&line, jstr(r, "reason"));
    if (*jstr(r, "example")) {
      tw_buf_adds(&line, " (e.g. ");
      tw_cli_add_clean(&line, jstr(r, "example"));
      tw_buf_addc(&line, ')');
    }
    fprintf(c->io->out, "%s\n", line.data);
  }
  tw_buf_release(&line);
  return json_array_size(cands) ? TW_EXIT_OK : TW_EXIT_NO_FIT;
}

static int cmd_plan(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *file = p->pos[0];
  long n = 10;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_CANDIDATES &&
        tw_cli_parse_int(p->opts[i].value, 1, 256, &n))
      return tw_cli_usage(c, "--candidates: expected 1 to 256, got \"%.32s\"",
                          p->opts[i].value);
  struct tw_buf spec;
  tw_buf_init(&spec);
  tw_buf_adds(&spec, "");
  FILE *f = strcmp(file, "-") ? fopen(file, "rb") : c->io->in;
  if (!f) {
    int e = errno;
    tw_buf_release(&spec);
    return tw_cli_usage(c, "cannot read %s: %s", file, strerror(e));
  }
  char chunk[16384];
  size_t got;
  bool big = false;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && !big) {
    big = spec.len + got > PLAN_FILE_MAX;
    tw_buf_add(&spec, chunk, got);
  }
  if (f != c->io->in)
    fclose(f);
  if (big || !spec.len) {
    tw_buf_release(&spec);
    return tw_cli_usage(c, "cannot read %s: %s", file,
                        big ? "larger than 8 MiB" : "it is empty");
  }
  size_t fl = strlen(file);
  bool json =
      (fl > 5 && !strcasecmp(file + fl - 5, ".json")) ||
      (!(fl > 5 && !strcasecmp(file + fl - 5, ".yaml")) &&
       !(fl > 4 && !strcasecmp(file + fl - 4, ".yml")) && spec.data[0] == '{');
  /* a local workdir: packed (not uploaded; a plan runs nothing) and named
   * by its hash */
  bool packed = false;
  int wcode = tw_cli_workdir(c, &spec, json, false, &packed);
  if (wcode) {
    tw_buf_release(&spec);
    return wcode;
  }
  json = json || packed;
  char path[64];
  snprintf(path, sizeof path, "/v1/plan?candidates=%ld", n);
  struct tw_cli_http_resp resp;
  tw_cli_http_resp_init(&resp);
  json_t *plan = NULL;
  int code = tw_cli_request(c, "POST", path,
                            json ? "application/json" : "application/yaml",
                            spec.data, spec.len, NULL, &resp, &plan);
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
    code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    json_t *cands = json_object_get(plan, "candidates");
    if (code == TW_EXIT_OK && json_is_array(cands) && !json_array_size(cands))
      code = TW_EXIT_NO_FIT;
    if (code == TW_EXIT_OK &&
        json_is_string(json_object_get(plan, "infeasible")))
      code = TW_EXIT_NO_FIT;
  } else if (code == TW_EXIT_OK) {
    code = print_plan(c, plan);
  }
  json_decref(plan);
  tw_cli_http_resp_release(&resp);
  tw_buf_release(&spec);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_plan = {
    .name = "plan",
    .args = "FILE",
    .summary = "show where a job would run and why, without submitting it",
    .help = "FILE is a job spec as for submit (- reads stdin).  Prints the\n"
            "ranked candidates with their expected cost (compute, spot risk,\n"
            "egress, transfer) and scores, then how many offers each filter\n"
            "refused and why, with one offer it refused.  -o json prints\n"
            "the server's plan.  Exits 7 when no offer fits.\n"
            "\n"
            "A workflow FILE (a document with tasks:, each with depends_on,\n"
            "inputs and outputs) is placed as a whole: per task where and\n"
            "why, jointly (compute plus moving data between the tasks) and\n"
            "step by step, and the saving.  Exits 7 when a task fits\n"
            "nowhere.\n"
            "\n"
            "Options:\n"
            "  -n, --candidates N   how many candidates to show (1..256,\n"
            "                       default 10)\n",
    .opts = plan_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_plan,
};
