/* cli.c - the command table, global options, help and the request helper
 * every command goes through. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/node.h"
#include "cli/cli_int.h"

#ifndef TW_VERSION
#define TW_VERSION "0"
#endif

#define DEFAULT_URL "http://127.0.0.1:8420"

enum {
  OPT_OUTPUT = TW_CLI_OPT_GLOBAL,
  OPT_URL,
  OPT_TOKEN,
  OPT_CACERT,
  OPT_HELP,
  OPT_VERSION,
  OPT_QUIET,
  OPT_CONTEXT
};

static const struct tw_cli_opt global_opts[] = {
    {"output", 'o', true, OPT_OUTPUT},
    {"url", 0, true, OPT_URL},
    {"token", 0, true, OPT_TOKEN},
    {"cacert", 0, true, OPT_CACERT},
    {"help", 'h', false, OPT_HELP},
    {"version", 0, false, OPT_VERSION},
    {"quiet", 'q', false, OPT_QUIET},
    {"context", 0, true, OPT_CONTEXT},
    {0},
};

/* cmd_plan.c, cmd_datasets.c (placement) */
extern const struct tw_cli_cmd tw_cli_cmd_offers; /* cmd_offers.c */
extern const struct tw_cli_cmd tw_cli_cmd_status; /* cmd_status.c */
extern const struct tw_cli_cmd tw_cli_cmd_plan, tw_cli_cmd_datasets_add,
    tw_cli_cmd_datasets_list;

extern const struct tw_cli_cmd tw_cli_cmd_convert; /* cmd_convert.c */

static const struct tw_cli_cmd *const commands[] = {
    &tw_cli_cmd_submit,
    &tw_cli_cmd_convert,
    &tw_cli_cmd_jobs_list,
    &tw_cli_cmd_jobs_get,
    &tw_cli_cmd_jobs_cancel,
    &tw_cli_cmd_jobs_wait,
    &tw_cli_cmd_jobs_events,
    &tw_cli_cmd_jobs_logs,
    &tw_cli_cmd_workflow_submit,
    &tw_cli_cmd_workflow_get,
    &tw_cli_cmd_workflow_cancel,
    &tw_cli_cmd_workflow_wait,
    &tw_cli_cmd_report_spend,
    &tw_cli_cmd_token_create,
    &tw_cli_cmd_token_list,
    &tw_cli_cmd_token_revoke,
    &tw_cli_cmd_user_create,
    &tw_cli_cmd_user_list,
    &tw_cli_cmd_user_disable,
    &tw_cli_cmd_tenant_create,
    &tw_cli_cmd_tenant_list,
    &tw_cli_cmd_quota_get,
    &tw_cli_cmd_quota_set,
    &tw_cli_cmd_budget_get,
    &tw_cli_cmd_budget_set,
    &tw_cli_cmd_budget_status,
    &tw_cli_cmd_audit_list,
    &tw_cli_cmd_audit_export,
    &tw_cli_cmd_audit_verify,
    &tw_cli_cmd_offers,
    &tw_cli_cmd_plan,
    &tw_cli_cmd_datasets_add,
    &tw_cli_cmd_datasets_list,
    &tw_cli_cmd_jobs_describe,
    &tw_cli_cmd_whoami,
    &tw_cli_cmd_status,
    &tw_cli_cmd_config_get,
    &tw_cli_cmd_config_current,
    &tw_cli_cmd_config_use,
    &tw_cli_cmd_config_set,
    &tw_cli_cmd_config_delete,
    &tw_cli_cmd_completion,
    &tw_cli_cmd_admin_backup,
    NULL,
};

const struct tw_cli_cmd *const *tw_cli_commands(void);
const struct tw_cli_opt *tw_cli_global_opts(void);
const struct tw_cli_cmd *const *tw_cli_commands(void) { return commands; }
const struct tw_cli_opt *tw_cli_global_opts(void) { return global_opts; }

static const char main_help[] =
    "tradewind - submit and follow jobs on a Tradewind broker\n"
    "\n"
    "Usage: tradewind [GLOBAL OPTIONS] COMMAND [ARGS] [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "%s"
    "  help [COMMAND]        show help for a command\n"
    "\n"
    "Global options (before or after the command):\n"
    "  -o, --output FORMAT   table (default: aligned columns), wide (more\n"
    "                        columns), json (the server's JSON, indented),\n"
    "                        yaml, name (one id per line) or\n"
    "                        jsonpath=TEMPLATE ('{.items[*].id}')\n"
    "  -q, --quiet           ids only (as -o name), no progress lines\n"
    "      --context NAME    use context NAME of the config file\n"
    "                        ($TRADEWIND_CONFIG, else\n"
    "                        ~/.config/tradewind/config.yaml)\n"
    "      --url URL         broker URL; default $TRADEWIND_URL, else\n"
    "                        " DEFAULT_URL "\n"
    "      --token TOKEN     bearer token; default $TRADEWIND_TOKEN (prefer "
    "the\n"
    "                        variable: other users can read command lines)\n"
    "      --cacert FILE     trust the CA certificates in FILE (PEM) for an\n"
    "                        https:// URL, instead of the system's; default\n"
    "                        $TRADEWIND_CACERT\n"
    "  -h, --help            show help\n"
    "      --version         show the version\n"
    "\n"
    "Exit codes:\n"
    "  0  success; with --wait and jobs wait: the job succeeded\n"
    "  1  the job failed (with --wait: without an exit code of its own)\n"
    "  N  with --wait and jobs wait: the failed job's own exit code N\n"
    "  2  usage error (bad flags, unreadable file)\n"
    "  3  cannot reach the server, or the server answered 5xx\n"
    "  4  the job was cancelled\n"
    "  5  the server rejected the request (4xx); the reason is on stderr\n"
    "  6  timed out waiting\n"
    "  7  plan: no offer fits the job\n";

static void print_main_help(FILE *f) {
  struct tw_buf list;
  tw_buf_init(&list);
  for (size_t i = 0; commands[i]; i++) {
    char *syn = tw_asprintf("%s%s%s", commands[i]->name,
                            *commands[i]->args ? " " : "", commands[i]->args);
    tw_buf_printf(&list, "  %-20s  %s\n", syn, commands[i]->summary);
    free(syn);
  }
  fprintf(f, main_help, list.data);
  tw_buf_release(&list);
}

static void print_cmd_help(FILE *f, const struct tw_cli_cmd *cmd) {
  fprintf(f, "Usage: tradewind %s%s%s [OPTIONS]\n\n%s.\n", cmd->name,
          *cmd->args ? " " : "", cmd->args, cmd->summary);
  if (cmd->help && *cmd->help)
    fprintf(f, "\n%s", cmd->help);
  if (cmd->help_more) {
    struct tw_buf more;
    tw_buf_init(&more);
    cmd->help_more(&more);
    if (more.len)
      fprintf(f, "\n%s", more.data);
    tw_buf_release(&more);
  }
  fprintf(f, "\nGlobal options -o, --url, --token, --cacert and the exit "
             "codes are listed by `tradewind --help`.\n");
}

/* `tradewind jobs --help`: the commands of one group. */
static void print_group_help(FILE *f, const char *group) {
  fprintf(f, "Usage: tradewind %s COMMAND [ARGS] [OPTIONS]\n\nCommands:\n",
          group);
  size_t gl = strlen(group);
  for (size_t i = 0; commands[i]; i++)
    if (strncmp(commands[i]->name, group, gl) == 0 &&
        commands[i]->name[gl] == ' ') {
      char *syn = tw_asprintf("%s%s%s", commands[i]->name,
                              *commands[i]->args ? " " : "", commands[i]->args);
      fprintf(f, "  %-20s  %s\n", syn, commands[i]->summary);
      free(syn);
    }
  fprintf(f, "\nRun `tradewind %s COMMAND --help` for a command's options.\n",
          group);
}

static bool is_group(const char *word) {
  size_t n = strlen(word);
  for (size_t i = 0; commands[i]; i++)
    if (strncmp(commands[i]->name, word, n) == 0 && commands[i]->name[n] == ' ')
      return true;
  return false;
}

/* Finds the command named by words[0] or "words[0] words[1]"; *used says
 * how many words it took. */
static const struct tw_cli_cmd *find_cmd(char **words, size_t n, size_t *used) {
  for (size_t i = 0; n && commands[i]; i++) {
    const char *name = commands[i]->name;
    if (strcmp(name, words[0]) == 0) {
      *used = 1;
      return commands[i];
    }
    size_t l = strlen(words[0]);
    if (n >= 2 && strncmp(name, words[0], l) == 0 && name[l] == ' ' &&
        strcmp(name + l + 1, words[1]) == 0) {
      *used = 2;
      return commands[i];
    }
  }
  return NULL;
}

/* The closest command word, for "did you mean". */
static const char *suggest(const char *word, const char *group) {
  const char *names[64];
  size_t n = 0;
  size_t gl = group ? strlen(group) : 0;
  for (size_t i = 0; commands[i] && n < 60; i++) {
    const char *name = commands[i]->name;
    if (group) {
      if (strncmp(name, group, gl) == 0 && name[gl] == ' ')
        names[n++] = name + gl + 1;
    } else if (!strchr(name, ' ')) {
      names[n++] = name;
    }
  }
  if (!group) {
    names[n++] = "jobs";
    names[n++] = "help";
  }
  names[n] = NULL;
  return tw_closest(word, names);
}

void tw_cli_errorf(struct tw_cli *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tradewind: ", c->io->err);
  vfprintf(c->io->err, fmt, ap);
  fputc('\n', c->io->err);
  va_end(ap);
}

int tw_cli_usage(struct tw_cli *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tradewind: ", c->io->err);
  vfprintf(c->io->err, fmt, ap);
  fputc('\n', c->io->err);
  va_end(ap);
  fprintf(c->io->err, "Run 'tradewind %s%s--help' for usage.\n",
          c->cmd ? c->cmd : "", c->cmd ? " " : "");
  return TW_EXIT_USAGE;
}

/* -o yaml, jsonpath=..., name: the document re-written. */
static int print_other(struct tw_cli *c, const char *text, size_t len) {
  json_error_t je;
  json_t *v = json_loadb(text ? text : "", len, JSON_DECODE_ANY, &je);
  if (!v) {
    tw_cli_errorf(c, "the server's answer is not JSON: %s", je.text);
    return TW_EXIT_UNREACHABLE;
  }
  struct tw_buf b;
  struct tw_err err;
  int code = TW_EXIT_OK;
  tw_buf_init(&b);
  tw_err_clear(&err);
  if (c->format == TW_CLI_YAML) {
    tw_cli_yaml(v, &b);
    fputs(b.data, c->io->out);
  } else if (c->format == TW_CLI_NAME) {
    tw_cli_names(v, &b);
    fputs(b.data, c->io->out);
  } else if (tw_cli_jsonpath(c->jsonpath, v, &b, &err) == TW_OK) {
    fprintf(c->io->out, "%s\n", b.data);
  } else {
    code = tw_cli_usage(c, "-o %s", err.msg);
  }
  tw_buf_release(&b);
  json_decref(v);
  return code;
}

int tw_cli_print_json_text(struct tw_cli *c, const char *text, size_t len) {
  struct tw_buf b;
  struct tw_err err;
  if (c->format != TW_CLI_JSON && tw_cli_structured(c))
    return print_other(c, text, len);
  tw_buf_init(&b);
  tw_err_clear(&err);
  if (tw_cli_json_pretty(text, len, &b, &err) != TW_OK) {
    tw_cli_errorf(c, "the server's answer is %s", err.msg);
    tw_buf_release(&b);
    return TW_EXIT_UNREACHABLE;
  }
  fprintf(c->io->out, "%s\n", b.data);
  tw_buf_release(&b);
  return TW_EXIT_OK;
}

int tw_cli_print_json(struct tw_cli *c, json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  int rc = tw_cli_print_json_text(c, s, strlen(s));
  free(s);
  return rc;
}

/* Performs req and sorts out the answer: TW_EXIT_OK with the parsed body,
 * or an exit code with the reason appended to line. */
static int call(const struct tw_cli_http_req *req,
                struct tw_cli_http_resp *resp, json_t **json,
                struct tw_buf *line) {
  struct tw_err err;
  tw_err_clear(&err);
  enum tw_rc rc = tw_cli_http_do(req, resp, &err);
  if (rc != TW_OK) {
    tw_buf_adds(line, err.msg);
    /* A token or key that cannot be sent is the user's to fix. */
    return rc == TW_E_INVALID ? TW_EXIT_USAGE : TW_EXIT_UNREACHABLE;
  }
  rc = tw_cli_http_status_rc(resp->status);
  if (rc != TW_OK) {
    tw_cli_problem_line(resp->status, resp->body.data, resp->body.len, line);
    return tw_cli_exit_for_rc(rc);
  }
  json_error_t je;
  json_t *j = json_loadb(resp->body.data ? resp->body.data : "", resp->body.len,
                         0, &je);
  if (!j) {
    tw_buf_printf(line, "%s %s: the server's answer (%ld) is not JSON: %s",
                  req->method, req->path, resp->status, je.text);
    return TW_EXIT_UNREACHABLE;
  }
  if (json)
    *json = j;
  else
    json_decref(j);
  return TW_EXIT_OK;
}

int tw_cli_request_quiet(struct tw_cli *c, const char *method, const char *path,
                         struct tw_cli_http_resp *resp, json_t **json,
                         struct tw_buf *line) {
  struct tw_cli_http_req req = {.base_url = c->url,
                                .token = c->token,
                                .method = method,
                                .path = path,
                                .cacert = c->cacert};
  return call(&req, resp, json, line);
}

int tw_cli_request(struct tw_cli *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t len,
                   const char *idempotency_key, struct tw_cli_http_resp *resp,
                   json_t **json) {
  struct tw_cli_http_req req = {.base_url = c->url,
                                .token = c->token,
                                .method = method,
                                .path = path,
                                .content_type = content_type,
                                .body = body,
                                .body_len = len,
                                .idempotency_key = idempotency_key,
                                .cacert = c->cacert,
                                /* a large body (a packed workdir) gets
                                 * longer than the default to go up */
                                .timeout_ms = len > (1u << 20) ? 600000L : 0};
  struct tw_cli_http_resp local;
  struct tw_buf line;
  tw_cli_http_resp_init(&local);
  tw_buf_init(&line);
  int code = call(&req, resp ? resp : &local, json, &line);
  if (code != TW_EXIT_OK)
    tw_cli_errorf(c, "%s", line.data);
  tw_buf_release(&line);
  tw_cli_http_resp_release(&local);
  return code;
}

/* Applies the global options found in p; returns -1 to go on, or an exit
 * code (help and version print and stop). */
static int apply_globals(struct tw_cli *c, const struct tw_cli_parsed *p,
                         const char **url, const char **token,
                         const char **cacert, bool *help, bool *version) {
  for (size_t i = 0; i < p->nopts; i++) {
    const struct tw_cli_optval *o = &p->opts[i];
    switch (o->id) {
    case OPT_OUTPUT:
      if (strcmp(o->value, "table") == 0)
        c->format = TW_CLI_TABLE;
      else if (strcmp(o->value, "wide") == 0)
        c->format = TW_CLI_WIDE;
      else if (strcmp(o->value, "json") == 0)
        c->format = TW_CLI_JSON;
      else if (strcmp(o->value, "yaml") == 0)
        c->format = TW_CLI_YAML;
      else if (strcmp(o->value, "name") == 0)
        c->format = TW_CLI_NAME;
      else if (strncmp(o->value, "jsonpath=", 9) == 0 && o->value[9]) {
        c->format = TW_CLI_JSONPATH;
        c->jsonpath = o->value + 9;
      } else
        return tw_cli_usage(c,
                            "-o: expected table, wide, json, yaml, name or "
                            "jsonpath=TEMPLATE, got \"%.64s\"",
                            o->value);
      break;
    case OPT_QUIET:
      c->quiet = true;
      c->format = TW_CLI_NAME;
      break;
    case OPT_CONTEXT:
      if (!*o->value)
        return tw_cli_usage(c, "--context: empty context name");
      c->context = o->value;
      break;
    case OPT_URL:
      *url = o->value;
      break;
    case OPT_TOKEN:
      *token = o->value;
      break;
    case OPT_CACERT:
      *cacert = o->value;
      break;
    case OPT_HELP:
      *help = true;
      break;
    case OPT_VERSION:
      *version = true;
      break;
    default:
      break;
    }
  }
  return -1;
}

/* The CA file is opened here so that a typo is a usage error naming the
 * file, not a TLS failure (exit 3) naming none. */
static int check_cacert(struct tw_cli *c, const char *file, bool from_env) {
  const char *what = from_env ? "TRADEWIND_CACERT" : "--cacert";
  if (!*file)
    return tw_cli_usage(c, "%s: expected a file of PEM certificates", what);
  FILE *f = fopen(file, "r");
  int ch = f ? fgetc(f) : EOF;
  int e = errno;
  bool bad = !f || ferror(f), empty = f && !bad && ch == EOF;
  if (f)
    fclose(f);
  if (bad) /* a directory opens, and fails on the first read */
    return tw_cli_usage(c, "%s: cannot read \"%.200s\": %s", what, file,
                        strerror(e));
  if (empty)
    return tw_cli_usage(c, "%s: \"%.200s\" is empty", what, file);
  return -1;
}

static int check_url(struct tw_cli *c, const char *url, char **out) {
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
    return tw_cli_usage(c,
                        "--url: expected http://HOST[:PORT] or https://..., "
                        "got \"%.200s\"",
                        url);
  for (const unsigned char *p = (const unsigned char *)url; *p; p++)
    if (*p <= 0x20 || *p == 0x7f)
      return tw_cli_usage(c, "--url: spaces or control characters in the URL");
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/')
    n--;
  *out = tw_strndup(url, n);
  return -1;
}

int tw_cli_run(int argc, char **argv, const struct tw_cli_io *io) {
  static const struct tw_cli_opt *const only_globals[] = {global_opts, NULL};
  struct tw_cli c = {.io = io, .format = TW_CLI_TABLE};
  struct tw_cli_parsed p0 = {0}, p1 = {0};
  struct tw_err err;
  const char *url = io->env_url && *io->env_url ? io->env_url : DEFAULT_URL;
  const char *token = io->env_token;
  const char *cacert =
      io->env_cacert && *io->env_cacert ? io->env_cacert : NULL;
  char *base = NULL, *ctx_token = NULL, *ctx_cacert = NULL, *cfg = NULL;
  bool help = false, version = false;
  int code;

  tw_err_clear(&err);
  if (io->env_config && *io->env_config)
    c.config_file = io->env_config;
  else if (io->env_home && *io->env_home)
    c.config_file = cfg =
        tw_asprintf("%s/.config/tradewind/config.yaml", io->env_home);
  if (tw_cli_opts_parse(only_globals, argc - 1, argv + 1, true, &p0, &err)) {
    code = tw_cli_usage(&c, "%s", err.msg);
    goto out;
  }
  if ((code = apply_globals(&c, &p0, &url, &token, &cacert, &help, &version)) >=
      0)
    goto out;
  if (version) {
    fprintf(io->out, "tradewind %s\n", TW_VERSION);
    code = TW_EXIT_OK;
    goto out;
  }
  if (help || (p0.npos && strcmp(p0.pos[0], "help") == 0 && p0.npos == 1)) {
    print_main_help(io->out);
    code = TW_EXIT_OK;
    goto out;
  }
  if (p0.npos == 0) {
    print_main_help(io->err);
    code = TW_EXIT_USAGE;
    goto out;
  }

  /* `tradewind help CMD...`: the words after help name the command. */
  if (strcmp(p0.pos[0], "help") == 0) {
    size_t used = 0;
    const struct tw_cli_cmd *cmd = find_cmd(p0.pos + 1, p0.npos - 1, &used);
    if (cmd && used == p0.npos - 1) {
      print_cmd_help(io->out, cmd);
      code = TW_EXIT_OK;
    } else if (p0.npos == 2 && is_group(p0.pos[1])) {
      print_group_help(io->out, p0.pos[1]);
      code = TW_EXIT_OK;
    } else {
      code = tw_cli_usage(&c, "help: no command \"%.64s\"", p0.pos[1]);
    }
    goto out;
  }

  size_t used = 0;
  const struct tw_cli_cmd *cmd = find_cmd(p0.pos, p0.npos, &used);
  if (!cmd && is_group(p0.pos[0])) {
    /* "tradewind jobs", "tradewind jobs --help", "tradewind jobs lst". */
    const char *group = p0.pos[0];
    struct tw_cli_parsed pg = {0};
    if (tw_cli_opts_parse(only_globals, (int)p0.npos - 1, p0.pos + 1, true, &pg,
                          &err)) {
      tw_cli_parsed_release(&pg);
      c.cmd = group;
      code = tw_cli_usage(&c, "%s", err.msg);
      goto out;
    }
    bool ghelp = false;
    for (size_t i = 0; i < pg.nopts; i++)
      ghelp |= pg.opts[i].id == OPT_HELP;
    c.cmd = group;
    if (ghelp) {
      print_group_help(io->out, group);
      code = TW_EXIT_OK;
    } else if (pg.npos == 0) {
      print_group_help(io->err, group);
      code = TW_EXIT_USAGE;
    } else {
      const char *near = suggest(pg.pos[0], group);
      if (near)
        code = tw_cli_usage(&c,
                            "unknown command \"%s %.64s\"; did you mean "
                            "\"%s %s\"?",
                            group, pg.pos[0], group, near);
      else
        code =
            tw_cli_usage(&c, "unknown command \"%s %.64s\"", group, pg.pos[0]);
    }
    tw_cli_parsed_release(&pg);
    goto out;
  }
  if (!cmd) {
    const char *near = suggest(p0.pos[0], NULL);
    if (near)
      code = tw_cli_usage(&c, "unknown command \"%.64s\"; did you mean \"%s\"?",
                          p0.pos[0], near);
    else
      code = tw_cli_usage(&c, "unknown command \"%.64s\"", p0.pos[0]);
    goto out;
  }
  c.cmd = cmd->name;

  static const struct tw_cli_opt no_opts[] = {{0}};
  const struct tw_cli_opt *const tables[] = {cmd->opts ? cmd->opts : no_opts,
                                             global_opts, NULL};
  if (tw_cli_opts_parse(tables, (int)(p0.npos - used), p0.pos + used, false,
                        &p1, &err)) {
    code = tw_cli_usage(&c, "%s", err.msg);
    goto out;
  }
  if ((code = apply_globals(&c, &p1, &url, &token, &cacert, &help, &version)) >=
      0)
    goto out;
  if (help) {
    print_cmd_help(io->out, cmd);
    code = TW_EXIT_OK;
    goto out;
  }
  if (version) {
    fprintf(io->out, "tradewind %s\n", TW_VERSION);
    code = TW_EXIT_OK;
    goto out;
  }
  if (p1.npos < cmd->min_pos) {
    code = tw_cli_usage(&c, "%s: missing %s", cmd->name, cmd->args);
    goto out;
  }
  if (p1.npos > cmd->max_pos) {
    code = tw_cli_usage(&c, "%s: unexpected argument \"%.64s\"", cmd->name,
                        p1.pos[cmd->max_pos]);
    goto out;
  }
  /* Flags first, then the environment, then the context of the config
   * file; an explicit --context beats the environment. */
  if (!cmd->local) {
    bool url_flag = false, token_flag = false, cacert_flag = false;
    for (size_t k = 0; k < p0.nopts + p1.nopts; k++) {
      int id = k < p0.nopts ? p0.opts[k].id : p1.opts[k - p0.nopts].id;
      url_flag |= id == OPT_URL;
      token_flag |= id == OPT_TOKEN;
      cacert_flag |= id == OPT_CACERT;
    }
    bool env_wins = !c.context;
    bool url_set = url_flag || (env_wins && io->env_url && *io->env_url);
    bool token_set =
        token_flag || (env_wins && io->env_token && *io->env_token);
    bool cacert_set =
        cacert_flag || (env_wins && io->env_cacert && *io->env_cacert);
    if (!url_flag && !url_set)
      url = DEFAULT_URL;
    if (!token_flag && !token_set)
      token = NULL;
    if (!cacert_flag && !cacert_set)
      cacert = NULL;
    if ((code = tw_cli_config_apply(&c, &url, url_set, &ctx_token, token_set,
                                    &ctx_cacert, cacert_set)) >= 0)
      goto out;
    if (ctx_token)
      token = ctx_token;
    if (ctx_cacert)
      cacert = ctx_cacert;
  }
  if ((code = check_url(&c, url, &base)) >= 0)
    goto out;
  c.url = base;
  c.token = token && *token ? token : NULL;
  if (cacert) {
    bool from_env = cacert == io->env_cacert;
    if ((code = check_cacert(&c, cacert, from_env)) >= 0)
      goto out;
    c.cacert = cacert;
  }
  code = cmd->run(&c, &p1);

out:
  fflush(io->out);
  fflush(io->err);
  free(base);
  free(cfg);
  free(c.ctx_url);
  if (ctx_token) {
    explicit_bzero(ctx_token, strlen(ctx_token));
    free(ctx_token);
  }
  free(ctx_cacert);
  tw_cli_parsed_release(&p0);
  tw_cli_parsed_release(&p1);
  return code;
}
