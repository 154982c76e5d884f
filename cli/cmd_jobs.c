/* cmd_jobs.c - `tradewind jobs list|get|cancel|events`. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/clock.h"
#include "broker/core/job.h"
#include "broker/base/node.h"
#include "cli/cli_int.h"

/* --all stops here even if the server keeps handing out cursors. */
#define LIST_MAX_PAGES 10000

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* An integer member as text, or "-" when absent or null. */
static void jint(json_t *o, const char *key, char *out, size_t outsz) {
  json_t *v = json_object_get(o, key);
  if (json_is_integer(v))
    snprintf(out, outsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else
    snprintf(out, outsz, "-");
}

static char *job_path(const char *id, const char *suffix) {
  char *e = tw_cli_http_escape(id);
  char *path = tw_asprintf("/v1/jobs/%s%s", e, suffix);
  free(e);
  return path;
}

static int check_id(struct tw_cli *c, const char *id) {
  if (!*id)
    return tw_cli_usage(c, "the job id is empty");
  return TW_EXIT_OK;
}

static void print_table(struct tw_cli *c, struct tw_cli_table *t) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_table_render(t, &b);
  fputs(b.data, c->io->out);
  tw_buf_release(&b);
}

/* "aws/us-east-1a/p4d.24xlarge": where the job runs, one word. */
static void placement_short(json_t *job, struct tw_buf *out) {
  json_t *pl = json_object_get(job, "placement");
  if (!json_is_object(pl))
    return;
  const char *parts[] = {jstr(pl, "provider"),
                         jstr(pl, "zone") ? jstr(pl, "zone")
                                          : jstr(pl, "region"),
                         jstr(pl, "instance_type")};
  for (size_t i = 0; i < 3; i++)
    if (parts[i] && *parts[i])
      tw_buf_printf(out, "%s%s", out->len ? "/" : "", parts[i]);
}

/* --- jobs list ----------------------------------------------------------- */

enum { OPT_STATE = 1, OPT_TENANT, OPT_LIMIT, OPT_ALL, OPT_CURSOR };

static const struct tw_cli_opt list_opts[] = {
    {"state", 0, true, OPT_STATE},   {"tenant", 0, true, OPT_TENANT},
    {"limit", 0, true, OPT_LIMIT},   {"all", 0, false, OPT_ALL},
    {"cursor", 0, true, OPT_CURSOR}, {0},
};

static void add_param(struct tw_buf *q, const char *name, const char *value) {
  char *e = tw_cli_http_escape(value);
  tw_buf_printf(q, "%c%s=%s", q->len ? '&' : '?', name, e);
  free(e);
}

static void list_row(struct tw_cli *c, struct tw_cli_table *t, json_t *job,
                     int64_t now_ms) {
  struct tw_buf where;
  char age[32] = "-";
  int64_t created;
  const char *at = jstr(job, "created_at");
  tw_buf_init(&where);
  placement_short(job, &where);
  if (at && tw_time_parse_rfc3339(at, &created) == 0)
    tw_cli_fmt_age(now_ms - created, age, sizeof age);
  const char *row[] = {jstr(job, "id"),    jstr(job, "name"),
                       jstr(job, "state"), jstr(job, "tenant"),
                       where.data,         age};
  tw_cli_table_add(t, row);
  tw_buf_release(&where);
}

static int cmd_jobs_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {"ID",     "NAME",      "STATE",
                                        "TENANT", "PLACEMENT", "AGE"};
  const char *state = NULL, *tenant = NULL, *cursor = NULL, *limit = NULL;
  bool all = false;
  int code = TW_EXIT_OK;
  json_t *items = json_array();
  char *next = NULL, *single = NULL;
  size_t single_len = 0;

  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    long n;
    enum tw_job_state s;
    switch (o->id) {
    case OPT_STATE:
      if (!tw_job_state_parse(o->value, &s)) {
        const char *names[TW_JOB_NSTATES + 1];
        for (int k = 0; k < TW_JOB_NSTATES; k++)
          names[k] = tw_job_state_str((enum tw_job_state)k);
        names[TW_JOB_NSTATES] = NULL;
        const char *near = tw_closest(o->value, names);
        code = near ? tw_cli_usage(c,
                                   "--state: unknown state \"%.64s\"; did "
                                   "you mean \"%s\"?",
                                   o->value, near)
                    : tw_cli_usage(c, "--state: unknown state \"%.64s\"",
                                   o->value);
        goto out;
      }
      state = o->value;
      break;
    case OPT_TENANT:
      if (!*o->value) {
        code = tw_cli_usage(c, "--tenant: empty tenant name");
        goto out;
      }
      tenant = o->value;
      break;
    case OPT_LIMIT:
      if (tw_cli_parse_int(o->value, 1, 500, &n)) {
        code = tw_cli_usage(c, "--limit: expected 1..500, got \"%.64s\"",
                            o->value);
        goto out;
      }
      limit = o->value;
      break;
    case OPT_ALL:
      all = true;
      break;
    case OPT_CURSOR:
      cursor = o->value;
      break;
    default:
      break;
    }
  }

  next = cursor ? tw_strdup(cursor) : NULL;
  for (int page = 0;; page++) {
    struct tw_buf path;
    struct tw_cli_http_resp resp;
    json_t *body = NULL;
    tw_buf_init(&path);
    tw_cli_http_resp_init(&resp);
    if (state)
      add_param(&path, "state", state);
    if (tenant)
      add_param(&path, "tenant", tenant);
    if (limit)
      add_param(&path, "limit", limit);
    if (next)
      add_param(&path, "cursor", next);
    char *full = tw_asprintf("/v1/jobs%s", path.len ? path.data : "");
    code = tw_cli_request(c, "GET", full, NULL, NULL, 0, NULL, &resp, &body);
    free(full);
    tw_buf_release(&path);
    json_t *page_items = json_object_get(body, "items");
    if (code == TW_EXIT_OK && !json_is_array(page_items)) {
      tw_cli_errorf(c, "the server's job list has no items array");
      code = TW_EXIT_UNREACHABLE;
    }
    if (code != TW_EXIT_OK) {
      json_decref(body);
      tw_cli_http_resp_release(&resp);
      goto out;
    }
    json_array_extend(items, page_items);
    const char *nc = jstr(body, "next_cursor");
    bool repeated = nc && next && strcmp(nc, next) == 0;
    free(next);
    next = nc && *nc ? tw_strdup(nc) : NULL;
    if (!all) {
      /* One page: print the server's own text. */
      single = tw_buf_detach(&resp.body);
      single_len = strlen(single);
    }
    json_decref(body);
    tw_cli_http_resp_release(&resp);
    if (!all || !next)
      break;
    if (repeated || page + 1 >= LIST_MAX_PAGES) {
      tw_cli_errorf(c,
                    "the server keeps returning more pages (cursor %s); "
                    "stopped after %d",
                    repeated ? "repeated" : "unchanged", page + 1);
      code = TW_EXIT_UNREACHABLE;
      goto out;
    }
  }

  if (c->format == TW_CLI_JSON) {
    if (single) {
      code = tw_cli_print_json_text(c, single, single_len);
    } else {
      json_t *doc = json_pack("{s:O,s:n}", "items", items, "next_cursor");
      code = tw_cli_print_json(c, doc);
      json_decref(doc);
    }
    goto out;
  }
  struct tw_cli_table t;
  int64_t now_ms = tw_clock_now_ms(c->io->clock);
  tw_cli_table_init(&t, 6, headers);
  for (size_t i = 0; i < json_array_size(items); i++)
    list_row(c, &t, json_array_get(items, i), now_ms);
  print_table(c, &t);
  tw_cli_table_release(&t);
  if (!all && next) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, next);
    tw_cli_errorf(c, "more jobs: add --cursor %s, or --all", b.data);
    tw_buf_release(&b);
  }

out:
  free(next);
  free(single);
  json_decref(items);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_list = {
    .name = "jobs list",
    .args = "",
    .summary = "list jobs, newest first",
    .help = "Options:\n"
            "  --state STATE     only jobs in STATE (pending, placing,\n"
            "                    provisioning, running, succeeded, failed,\n"
            "                    cancelled, interrupted, recovering)\n"
            "  --tenant TENANT   only jobs of TENANT\n"
            "  --limit N         jobs per page, 1..500 (server default 50)\n"
            "  --cursor CURSOR   start at this page (from a previous list)\n"
            "  --all             follow next_cursor through every page\n",
    .opts = list_opts,
    .min_pos = 0,
    .max_pos = 0,
    .run = cmd_jobs_list,
};

/* --- jobs get ------------------------------------------------------------ */

static void print_job(struct tw_cli *c, json_t *job) {
  static const struct {
    const char *label, *key;
  } text_fields[] = {
      {"ID", "id"},
      {"Name", "name"},
      {"Tenant", "tenant"},
      {"Project", "project"},
      {"State", "state"},
      {"Reason", "reason"},
      {"Created", "created_at"},
      {"Updated", "updated_at"},
  };
  struct tw_cli_table t;
  char num[32], price[48];
  tw_cli_table_init(&t, 2, NULL);
  for (size_t i = 0; i < sizeof text_fields / sizeof text_fields[0]; i++) {
    const char *row[] = {text_fields[i].label, jstr(job, text_fields[i].key)};
    tw_cli_table_add(&t, row);
    if (strcmp(text_fields[i].key, "reason") == 0) {
      jint(job, "priority", num, sizeof num);
      const char *prow[] = {"Priority", num};
      tw_cli_table_add(&t, prow);
    }
  }
  json_t *pl = json_object_get(job, "placement");
  struct tw_buf where;
  tw_buf_init(&where);
  tw_buf_adds(&where, "");
  if (json_is_object(pl)) {
    const char *keys[] = {"provider", "region", "zone", "instance_type",
                          "market"};
    for (size_t i = 0; i < 5; i++)
      if (jstr(pl, keys[i]) && *jstr(pl, keys[i]))
        tw_buf_printf(&where, "%s%s", where.len ? " " : "", jstr(pl, keys[i]));
  }
  const char *wrow[] = {"Placement", where.data};
  tw_cli_table_add(&t, wrow);
  json_t *pv =
      json_is_object(pl) ? json_object_get(pl, "price_uusd_per_hour") : NULL;
  if (json_is_integer(pv)) {
    tw_cli_fmt_uusd(json_integer_value(pv), price, sizeof price - 3);
    strcat(price, "/h");
  } else {
    snprintf(price, sizeof price, "-");
  }
  const char *prow[] = {"Price", price};
  tw_cli_table_add(&t, prow);
  /* why there: the counts per reason the scheduler's plan stored */
  const char *why = json_is_object(pl) ? jstr(pl, "explain") : NULL;
  if (why) {
    const char *xrow[] = {"Explain", why};
    tw_cli_table_add(&t, xrow);
  }
  jint(job, "exit_code", num, sizeof num);
  const char *erow[] = {"Exit code", num};
  tw_cli_table_add(&t, erow);
  print_table(c, &t);
  tw_cli_table_release(&t);
  tw_buf_release(&where);
}

static int cmd_jobs_get(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_cli_http_resp resp;
  json_t *job = NULL;
  int code = check_id(c, p->pos[0]);
  if (code)
    return code;
  char *path = job_path(p->pos[0], "");
  tw_cli_http_resp_init(&resp);
  code = tw_cli_request(c, "GET", path, NULL, NULL, 0, NULL, &resp, &job);
  if (code == TW_EXIT_OK) {
    if (c->format == TW_CLI_JSON)
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    else
      print_job(c, job);
  }
  json_decref(job);
  tw_cli_http_resp_release(&resp);
  free(path);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_get = {
    .name = "jobs get",
    .args = "ID",
    .summary = "show one job",
    .help = "",
    .opts = NULL,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_get,
};

/* --- jobs cancel --------------------------------------------------------- */

static int cmd_jobs_cancel(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct tw_cli_http_resp resp;
  json_t *job = NULL;
  int code = check_id(c, p->pos[0]);
  if (code)
    return code;
  char *path = job_path(p->pos[0], "");
  tw_cli_http_resp_init(&resp);
  code = tw_cli_request(c, "DELETE", path, NULL, NULL, 0, NULL, &resp, &job);
  if (code == TW_EXIT_OK) {
    if (c->format == TW_CLI_JSON) {
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    } else {
      struct tw_buf b;
      tw_buf_init(&b);
      tw_cli_add_clean(&b, jstr(job, "id") ? jstr(job, "id") : p->pos[0]);
      tw_buf_adds(&b, " ");
      tw_cli_add_clean(&b, jstr(job, "state") ? jstr(job, "state") : "-");
      fprintf(c->io->out, "%s\n", b.data);
      tw_buf_release(&b);
    }
  }
  json_decref(job);
  tw_cli_http_resp_release(&resp);
  free(path);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_cancel = {
    .name = "jobs cancel",
    .args = "ID",
    .summary = "cancel a job",
    .help = "Prints the id and the job's new state.  A job that already\n"
            "finished cannot be cancelled: the server answers 409 (exit 5).\n",
    .opts = NULL,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_cancel,
};

/* --- jobs events --------------------------------------------------------- */

static int cmd_jobs_events(struct tw_cli *c, const struct tw_cli_parsed *p) {
  static const char *const headers[] = {"SEQ", "AT", "FROM", "TO", "REASON"};
  struct tw_cli_http_resp resp;
  json_t *body = NULL;
  int code = check_id(c, p->pos[0]);
  if (code)
    return code;
  char *path = job_path(p->pos[0], "/events");
  tw_cli_http_resp_init(&resp);
  code = tw_cli_request(c, "GET", path, NULL, NULL, 0, NULL, &resp, &body);
  json_t *items = json_object_get(body, "items");
  if (code == TW_EXIT_OK && !json_is_array(items)) {
    tw_cli_errorf(c, "the server's event list has no items array");
    code = TW_EXIT_UNREACHABLE;
  }
  if (code == TW_EXIT_OK && c->format == TW_CLI_JSON) {
    code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
  } else if (code == TW_EXIT_OK) {
    struct tw_cli_table t;
    tw_cli_table_init(&t, 5, headers);
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *ev = json_array_get(items, i);
      char seq[32];
      jint(ev, "seq", seq, sizeof seq);
      const char *row[] = {seq, jstr(ev, "at"), jstr(ev, "from"),
                           jstr(ev, "to"), jstr(ev, "reason")};
      tw_cli_table_add(&t, row);
    }
    print_table(c, &t);
    tw_cli_table_release(&t);
  }
  json_decref(body);
  tw_cli_http_resp_release(&resp);
  free(path);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_events = {
    .name = "jobs events",
    .args = "ID",
    .summary = "show a job's state changes, oldest first",
    .help = "",
    .opts = NULL,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_events,
};
