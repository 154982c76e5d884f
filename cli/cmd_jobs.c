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

enum {
  OPT_STATE = 1,
  OPT_TENANT,
  OPT_LIMIT,
  OPT_ALL,
  OPT_CURSOR,
  OPT_SORT_BY,
  OPT_WATCH,
  OPT_ALL_TENANTS,
  OPT_TIMEOUT
};

static const struct tw_cli_opt list_opts[] = {
    {"state", 0, true, OPT_STATE},
    {"tenant", 0, true, OPT_TENANT},
    {"all-tenants", 'A', false, OPT_ALL_TENANTS},
    {"limit", 0, true, OPT_LIMIT},
    {"all", 0, false, OPT_ALL},
    {"cursor", 0, true, OPT_CURSOR},
    {"sort-by", 0, true, OPT_SORT_BY},
    {"watch", 'w', false, OPT_WATCH},
    {"timeout", 0, true, OPT_TIMEOUT},
    {0},
};

static void add_param(struct tw_buf *q, const char *name, const char *value) {
  char *e = tw_cli_http_escape(value);
  tw_buf_printf(q, "%c%s=%s", q->len ? '&' : '?', name, e);
  free(e);
}

static void list_row(struct tw_cli *c, struct tw_cli_table *t, json_t *job,
                     int64_t now_ms) {
  struct tw_buf where;
  char age[32] = "-", price[48] = "-";
  int64_t created;
  const char *at = jstr(job, "created_at");
  tw_buf_init(&where);
  placement_short(job, &where);
  if (at && tw_time_parse_rfc3339(at, &created) == 0)
    tw_cli_fmt_age(now_ms - created, age, sizeof age);
  if (c->format == TW_CLI_WIDE) {
    json_t *pl = json_object_get(job, "placement");
    json_t *pv = json_object_get(pl, "price_uusd_per_hour");
    if (json_is_integer(pv)) {
      tw_cli_fmt_uusd(json_integer_value(pv), price, sizeof price - 3);
      strcat(price, "/h");
    }
    const char *row[] = {jstr(job, "id"),      jstr(job, "name"),
                         jstr(job, "state"),   jstr(job, "tenant"),
                         jstr(job, "project"), where.data,
                         price,                age,
                         jstr(job, "reason")};
    tw_cli_table_add(t, row);
  } else {
    const char *row[] = {jstr(job, "id"),    jstr(job, "name"),
                         jstr(job, "state"), jstr(job, "tenant"),
                         where.data,         age};
    tw_cli_table_add(t, row);
  }
  tw_buf_release(&where);
}

struct list_query {
  const char *states[TW_JOB_NSTATES];
  size_t nstates;
  const char *tenant, *limit, *cursor, *sort_by;
  bool all;
};

/* Fetches the jobs of one state (NULL: any) into items, following cursors
 * with q->all.  *more is set when a page was left unread; *single (when
 * not NULL) receives the server's own text of a one-page answer. */
static int fetch_jobs(struct tw_cli *c, const struct list_query *q,
                      const char *state, json_t *items, char **more,
                      char **single) {
  char *next = q->cursor ? tw_strdup(q->cursor) : NULL;
  int code = TW_EXIT_OK;
  for (int page = 0;; page++) {
    struct tw_buf path;
    struct tw_cli_http_resp resp;
    json_t *body = NULL;
    tw_buf_init(&path);
    tw_cli_http_resp_init(&resp);
    if (state)
      add_param(&path, "state", state);
    if (q->tenant)
      add_param(&path, "tenant", q->tenant);
    if (q->limit)
      add_param(&path, "limit", q->limit);
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
      break;
    }
    json_array_extend(items, page_items);
    const char *nc = jstr(body, "next_cursor");
    bool repeated = nc && next && strcmp(nc, next) == 0;
    free(next);
    next = nc && *nc ? tw_strdup(nc) : NULL;
    if (!q->all && single) {
      free(*single);
      *single = tw_buf_detach(&resp.body);
    }
    json_decref(body);
    tw_cli_http_resp_release(&resp);
    if (!q->all || !next)
      break;
    if (repeated || page + 1 >= LIST_MAX_PAGES) {
      tw_cli_errorf(c,
                    "the server keeps returning more pages (cursor %s); "
                    "stopped after %d",
                    repeated ? "repeated" : "unchanged", page + 1);
      code = TW_EXIT_UNREACHABLE;
      break;
    }
  }
  if (code == TW_EXIT_OK && next && !*more)
    *more = next;
  else
    free(next);
  return code;
}

/* Every state asked for, merged newest first, then --sort-by. */
static int fetch_all(struct tw_cli *c, const struct list_query *q,
                     json_t **items_out, char **more, char **single) {
  json_t *items = json_array();
  int code = TW_EXIT_OK;
  *more = NULL;
  if (q->nstates <= 1) {
    code = fetch_jobs(c, q, q->nstates ? q->states[0] : NULL, items, more,
                      q->sort_by ? NULL : single);
  } else {
    for (size_t i = 0; i < q->nstates && code == TW_EXIT_OK; i++)
      code = fetch_jobs(c, q, q->states[i], items, more, NULL);
    if (code == TW_EXIT_OK) {
      struct tw_err err;
      tw_err_clear(&err);
      tw_cli_sort_items(items, ".created_at", &err);
      /* newest first, as one server page would be */
      json_t *rev = json_array();
      for (size_t i = json_array_size(items); i-- > 0;)
        json_array_append(rev, json_array_get(items, i));
      json_decref(items);
      items = rev;
    }
  }
  if (code == TW_EXIT_OK && q->sort_by) {
    struct tw_err err;
    tw_err_clear(&err);
    if (tw_cli_sort_items(items, q->sort_by, &err) != TW_OK)
      code = tw_cli_usage(c, "%s", err.msg);
  }
  if (code != TW_EXIT_OK) {
    json_decref(items);
    items = NULL;
    free(*more);
    *more = NULL;
  }
  *items_out = items;
  return code;
}

static void render_list(struct tw_cli *c, json_t *items, bool header) {
  static const char *const headers[] = {"ID",     "NAME",      "STATE",
                                        "TENANT", "PLACEMENT", "AGE"};
  static const char *const wide[] = {"ID",      "NAME",      "STATE",
                                     "TENANT",  "PROJECT",   "PLACEMENT",
                                     "PRICE",   "AGE",       "REASON"};
  struct tw_cli_table t;
  bool w = c->format == TW_CLI_WIDE;
  int64_t now_ms = tw_clock_now_ms(c->io->clock);
  tw_cli_table_init(&t, w ? 9 : 6, header ? (w ? wide : headers) : NULL);
  for (size_t i = 0; i < json_array_size(items); i++)
    list_row(c, &t, json_array_get(items, i), now_ms);
  print_table(c, &t);
  tw_cli_table_release(&t);
}

/* --watch: every 2 s, the jobs whose state or update time changed, one
 * row (or one document) each, until --timeout or an interrupt. */
static int watch_list(struct tw_cli *c, const struct list_query *q,
                      json_t *seen, int64_t timeout_ms) {
  int64_t start = tw_clock_now_ms(c->io->clock);
  int failures = 0;
  for (;;) {
    int64_t nap = 2000;
    if (timeout_ms > 0) {
      int64_t left = start + timeout_ms - tw_clock_now_ms(c->io->clock);
      if (left <= 0)
        return TW_EXIT_OK;
      if (left < nap)
        nap = left;
    }
    c->io->sleep_ms(c->io->sleep_ctx, nap);
    if (timeout_ms > 0 &&
        tw_clock_now_ms(c->io->clock) - start >= timeout_ms)
      return TW_EXIT_OK;
    json_t *items = NULL;
    char *more = NULL;
    int code = fetch_all(c, q, &items, &more, NULL);
    free(more);
    if (code != TW_EXIT_OK) {
      if (code != TW_EXIT_UNREACHABLE ||
          ++failures >= TW_CLI_WAIT_MAX_FAILURES)
        return code;
      continue;
    }
    failures = 0;
    json_t *changed = json_array();
    for (size_t i = json_array_size(items); i-- > 0;) {
      json_t *job = json_array_get(items, i);
      const char *id = jstr(job, "id");
      if (!id)
        continue;
      char *mark = tw_asprintf("%s %s", jstr(job, "state") ? jstr(job, "state")
                                                           : "",
                               jstr(job, "updated_at") ? jstr(job, "updated_at")
                                                       : "");
      const char *old = jstr(seen, id);
      if (!old || strcmp(old, mark) != 0) {
        json_array_append(changed, job);
        json_object_set_new(seen, id, json_string(mark));
      }
      free(mark);
    }
    if (tw_cli_structured(c)) {
      for (size_t i = 0; i < json_array_size(changed); i++)
        if ((code = tw_cli_print_json(c, json_array_get(changed, i))))
          break;
    } else if (json_array_size(changed)) {
      render_list(c, changed, false);
    }
    fflush(c->io->out);
    json_decref(changed);
    json_decref(items);
    if (code != TW_EXIT_OK)
      return code;
  }
}

static int cmd_jobs_list(struct tw_cli *c, const struct tw_cli_parsed *p) {
  struct list_query q = {0};
  bool watch = false;
  int64_t timeout_ms = 0;
  int code = TW_EXIT_OK;
  json_t *items = NULL;
  char *more = NULL, *single = NULL;

  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    long n;
    enum tw_job_state s;
    switch (o->id) {
    case OPT_STATE:
      /* --state a --state b, and --state a,b: both kept */
      for (const char *v = o->value;;) {
        const char *comma = strchr(v, ',');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        char *one = tw_strndup(v, len);
        if (!tw_job_state_parse(one, &s)) {
          const char *names[TW_JOB_NSTATES + 1];
          for (int k = 0; k < TW_JOB_NSTATES; k++)
            names[k] = tw_job_state_str((enum tw_job_state)k);
          names[TW_JOB_NSTATES] = NULL;
          const char *near = tw_closest(one, names);
          code = near ? tw_cli_usage(c,
                                     "--state: unknown state \"%.64s\"; did "
                                     "you mean \"%s\"?",
                                     one, near)
                      : tw_cli_usage(c, "--state: unknown state \"%.64s\"",
                                     one);
          free(one);
          goto out;
        }
        free(one);
        bool dup = false;
        for (size_t k = 0; k < q.nstates; k++)
          dup |= strcmp(q.states[k], tw_job_state_str(s)) == 0;
        if (!dup && q.nstates < TW_JOB_NSTATES)
          q.states[q.nstates++] = tw_job_state_str(s);
        if (!comma)
          break;
        v = comma + 1;
      }
      break;
    case OPT_TENANT:
      if (!*o->value) {
        code = tw_cli_usage(c, "--tenant: empty tenant name");
        goto out;
      }
      /* '*' is every tenant the token may see: no filter */
      q.tenant = strcmp(o->value, "*") == 0 ? NULL : o->value;
      break;
    case OPT_ALL_TENANTS:
      q.tenant = NULL;
      break;
    case OPT_LIMIT:
      if (tw_cli_parse_int(o->value, 1, 500, &n)) {
        code = tw_cli_usage(c, "--limit: expected 1..500, got \"%.64s\"",
                            o->value);
        goto out;
      }
      q.limit = o->value;
      break;
    case OPT_ALL:
      q.all = true;
      break;
    case OPT_CURSOR:
      q.cursor = o->value;
      break;
    case OPT_SORT_BY:
      q.sort_by = o->value;
      break;
    case OPT_WATCH:
      watch = true;
      break;
    case OPT_TIMEOUT:
      if (tw_cli_parse_duration_ms(o->value, &timeout_ms)) {
        code = tw_cli_usage(c,
                            "--timeout: expected a duration such as 90s, "
                            "10m or 1h30m, got \"%.64s\"",
                            o->value);
        goto out;
      }
      break;
    default:
      break;
    }
  }
  if (q.cursor && q.nstates > 1) {
    code = tw_cli_usage(c, "--cursor: pages of one --state only (a cursor "
                           "belongs to one list)");
    goto out;
  }
  if (timeout_ms && !watch) {
    code = tw_cli_usage(c, "--timeout: needs --watch");
    goto out;
  }
  if (watch && q.all) {
    code = tw_cli_usage(c, "--watch: not with --all");
    goto out;
  }

  if ((code = fetch_all(c, &q, &items, &more, &single)) != TW_EXIT_OK)
    goto out;

  if (tw_cli_structured(c) && !watch) {
    if (single) {
      code = tw_cli_print_json_text(c, single, strlen(single));
    } else {
      json_t *doc =
          json_pack("{s:O,s:s?}", "items", items, "next_cursor",
                    q.nstates <= 1 && !q.all ? more : NULL);
      code = tw_cli_print_json(c, doc);
      json_decref(doc);
    }
    goto out;
  }
  if (tw_cli_structured(c)) {
    for (size_t i = 0; i < json_array_size(items) && !code; i++)
      code = tw_cli_print_json(c, json_array_get(items, i));
  } else {
    render_list(c, items, true);
  }
  if (!q.all && more && !watch) {
    struct tw_buf b;
    tw_buf_init(&b);
    tw_cli_add_clean(&b, more);
    if (q.nstates > 1)
      tw_cli_errorf(c, "more jobs: add --all");
    else
      tw_cli_errorf(c, "more jobs: add --cursor %s, or --all", b.data);
    tw_buf_release(&b);
  }
  if (watch && code == TW_EXIT_OK) {
    fflush(c->io->out);
    json_t *seen = json_object();
    for (size_t i = 0; i < json_array_size(items); i++) {
      json_t *job = json_array_get(items, i);
      if (!jstr(job, "id"))
        continue;
      char *mark = tw_asprintf(
          "%s %s", jstr(job, "state") ? jstr(job, "state") : "",
          jstr(job, "updated_at") ? jstr(job, "updated_at") : "");
      json_object_set_new(seen, jstr(job, "id"), json_string(mark));
      free(mark);
    }
    code = watch_list(c, &q, seen, timeout_ms);
    json_decref(seen);
  }

out:
  free(more);
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
            "                    cancelled, interrupted, recovering); repeat\n"
            "                    it or give a,b for several states\n"
            "  --tenant TENANT   only jobs of TENANT; '*' (or -A,\n"
            "                    --all-tenants): every tenant the token sees\n"
            "  --limit N         jobs per page, 1..500 (server default 50)\n"
            "  --cursor CURSOR   start at this page (from a previous list)\n"
            "  --all             follow next_cursor through every page\n"
            "  --sort-by PATH    sort by a JSONPath field, ascending:\n"
            "                    .name, .state, .created_at,\n"
            "                    .placement.price_uusd_per_hour\n"
            "  -w, --watch       after the list, print each job again when\n"
            "                    its state changes (every 2 s) until\n"
            "                    interrupted or --timeout\n"
            "  --timeout D       stop watching after D (90s, 10m)\n"
            "With -o wide: PROJECT, PRICE and REASON columns too.\n",
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
    if (tw_cli_structured(c))
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
    if (tw_cli_structured(c)) {
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
  if (code == TW_EXIT_OK && tw_cli_structured(c)) {
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
