/* cmd_workflow.c - `tradewind workflow submit|get|cancel|wait`: arrays and
 * workflow documents (docs/workflows.md) over /v1/workflows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/cli_int.h"

#define DOC_MAX_BYTES (16u * 1024 * 1024)

enum { OPT_WAIT = 1, OPT_TIMEOUT };

static const struct tw_cli_opt submit_opts[] = {
    {"wait", 0, false, OPT_WAIT},
    {"timeout", 0, true, OPT_TIMEOUT},
    {0},
};
static const struct tw_cli_opt wait_opts[] = {
    {"timeout", 0, true, OPT_TIMEOUT},
    {0},
};

static const char *str_of(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static long long int_of(json_t *o, const char *k) {
  return (long long)json_integer_value(json_object_get(o, k));
}

static int check_id(struct tw_cli *c, const char *id) {
  if (!*id)
    return tw_cli_usage(c, "the workflow id is empty");
  return TW_EXIT_OK;
}

static void print_workflow(struct tw_cli *c, json_t *w) {
  struct tw_buf b;
  tw_buf_init(&b);
  static const char *const KEYS[] = {"id",    "kind",   "name",
                                     "tenant", "project", "state",
                                     "reason", "created_at", "updated_at",
                                     NULL};
  for (int i = 0; KEYS[i]; i++) {
    tw_buf_printf(&b, "%-16s", KEYS[i]);
    tw_cli_add_clean(&b, str_of(w, KEYS[i]) ? str_of(w, KEYS[i]) : "-");
    tw_buf_addc(&b, '\n');
  }
  tw_buf_printf(&b, "%-16s%lld\n", "tasks", int_of(w, "tasks"));
  json_t *pr = json_object_get(w, "progress");
  static const char *const PK[] = {"waiting", "ready",     "pending", "running",
                                   "succeeded", "failed", "cancelled", NULL};
  for (int i = 0; PK[i] && json_is_object(pr); i++)
    tw_buf_printf(&b, "  %-14s%lld\n", PK[i], int_of(pr, PK[i]));
  tw_buf_printf(&b, "%-16s", "projected_cost");
  tw_cli_add_clean(&b, str_of(w, "projected_cost_usd")
                           ? str_of(w, "projected_cost_usd")
                           : "-");
  tw_buf_printf(&b, "\n%-16s", "cost_so_far");
  tw_cli_add_clean(&b, str_of(w, "cost_so_far_usd") ? str_of(w, "cost_so_far_usd")
                                                    : "-");
  tw_buf_addc(&b, '\n');
  fputs(b.data, c->io->out);
  tw_buf_release(&b);
}

static int parse_timeout(struct tw_cli *c, const struct tw_cli_parsed *p,
                         bool *wait, int64_t *timeout_ms) {
  bool given = false;
  for (size_t i = 0; i < p->nopts; i++) {
    if (p->opts[i].id == OPT_WAIT && wait)
      *wait = true;
    if (p->opts[i].id == OPT_TIMEOUT) {
      if (tw_cli_parse_duration_ms(p->opts[i].value, timeout_ms))
        return tw_cli_usage(c,
                            "--timeout: expected a duration such as 90s, "
                            "10m or 1h30m, got \"%.64s\"",
                            p->opts[i].value);
      given = true;
    }
  }
  if (given && wait && !*wait)
    return tw_cli_usage(c, "--timeout applies to --wait only");
  return TW_EXIT_OK;
}

static int cmd_submit(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *file = p->pos[0];
  bool wait = false;
  int64_t timeout_ms = 0;
  int code = parse_timeout(c, p, &wait, &timeout_ms);
  if (code)
    return code;
  FILE *f = strcmp(file, "-") ? fopen(file, "rb") : c->io->in;
  if (!f)
    return tw_cli_usage(c, "cannot read %s: %s", file, strerror(errno));
  struct tw_buf doc;
  tw_buf_init(&doc);
  tw_buf_adds(&doc, "");
  char chunk[16384];
  size_t n;
  bool big = false;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && !big) {
    big = doc.len + n > DOC_MAX_BYTES;
    tw_buf_add(&doc, chunk, n);
  }
  bool bad = ferror(f);
  if (f != c->io->in)
    fclose(f);
  if (big || bad || !doc.len) {
    code = tw_cli_usage(c, "cannot read %s: %s", file,
                        big   ? "larger than 16 MiB"
                        : bad ? "read error"
                              : "empty");
    tw_buf_release(&doc);
    return code;
  }
  size_t flen = strlen(file);
  bool json = (flen > 5 && !strcasecmp(file + flen - 5, ".json")) ||
              (doc.data[strspn(doc.data, " \t\r\n")] == '{' &&
               !(flen > 5 && !strcasecmp(file + flen - 5, ".yaml")));
  struct tw_cli_http_resp resp;
  json_t *w = NULL;
  tw_cli_http_resp_init(&resp);
  code = tw_cli_request(c, "POST", "/v1/workflows",
                        json ? "application/json" : "application/yaml",
                        doc.data, doc.len, NULL, &resp, &w);
  tw_buf_release(&doc);
  const char *id = code == TW_EXIT_OK ? str_of(w, "id") : NULL;
  if (code == TW_EXIT_OK && !id) {
    tw_cli_errorf(c, "the server's answer (%ld) has no workflow id",
                  resp.status);
    code = TW_EXIT_UNREACHABLE;
  }
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c) && !wait) {
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    } else if (!tw_cli_structured(c)) {
      struct tw_buf b;
      tw_buf_init(&b);
      tw_cli_add_clean(&b, id);
      fprintf(c->io->out, "%s\n", b.data);
      fflush(c->io->out);
      tw_buf_release(&b);
    }
    if (wait)
      code = tw_cli_wait_workflow(c, id, timeout_ms);
  }
  json_decref(w);
  tw_cli_http_resp_release(&resp);
  return code;
}

static int one(struct tw_cli *c, const struct tw_cli_parsed *p,
               const char *method) {
  int code = check_id(c, p->pos[0]);
  if (code)
    return code;
  char *eid = tw_cli_http_escape(p->pos[0]);
  char *path = tw_asprintf("/v1/workflows/%s", eid);
  free(eid);
  struct tw_cli_http_resp resp;
  json_t *w = NULL;
  tw_cli_http_resp_init(&resp);
  code = tw_cli_request(c, method, path, NULL, NULL, 0, NULL, &resp, &w);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c))
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    else
      print_workflow(c, w);
  }
  json_decref(w);
  tw_cli_http_resp_release(&resp);
  free(path);
  return code;
}

static int cmd_get(struct tw_cli *c, const struct tw_cli_parsed *p) {
  return one(c, p, "GET");
}

static int cmd_cancel(struct tw_cli *c, const struct tw_cli_parsed *p) {
  return one(c, p, "DELETE");
}

static int cmd_wait(struct tw_cli *c, const struct tw_cli_parsed *p) {
  int64_t timeout_ms = 0;
  int code = parse_timeout(c, p, NULL, &timeout_ms);
  if (code)
    return code;
  if ((code = check_id(c, p->pos[0])))
    return code;
  return tw_cli_wait_workflow(c, p->pos[0], timeout_ms);
}

const struct tw_cli_cmd tw_cli_cmd_workflow_submit = {
    .name = "workflow submit",
    .args = "FILE",
    .summary = "submit a workflow document (YAML or JSON; - reads stdin)",
    .help =
        "Prints the workflow id, or the workflow with -o json.  An array is\n"
        "submitted as a job spec with `array:` (tradewind submit).\n"
        "\n"
        "Options:\n"
        "  --wait                  wait until the workflow ends; exits 0\n"
        "                          succeeded, 1 failed, 4 cancelled, 6 timed\n"
        "                          out, as submit --wait\n"
        "  --timeout DURATION      give up waiting after DURATION; needs\n"
        "                          --wait\n",
    .opts = submit_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_submit,
};

const struct tw_cli_cmd tw_cli_cmd_workflow_get = {
    .name = "workflow get",
    .args = "ID",
    .summary = "show a workflow or array: state, progress, cost so far",
    .help = "",
    .opts = NULL,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_get,
};

const struct tw_cli_cmd tw_cli_cmd_workflow_cancel = {
    .name = "workflow cancel",
    .args = "ID",
    .summary = "cancel every task of a workflow or array not yet ended",
    .help = "",
    .opts = NULL,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_cancel,
};

const struct tw_cli_cmd tw_cli_cmd_workflow_wait = {
    .name = "workflow wait",
    .args = "ID",
    .summary = "wait until a workflow or array ends; exit with its outcome",
    .help = "Polls the workflow (200 ms backing off to 2 s), printing state\n"
            "and progress changes on stderr.  Exits 0 when it succeeded, 1\n"
            "failed, 4 cancelled, 6 on timeout, 3 after four failed polls\n"
            "in a row.\n"
            "\n"
            "Options:\n"
            "  --timeout DURATION   give up after DURATION (90s, 10m, 1h30m)\n",
    .opts = wait_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_wait,
};
