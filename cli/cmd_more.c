/* cmd_more.c - `tradewind whoami`, `tradewind jobs describe ID` and
 * `tradewind completion bash|zsh`. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/core/store.h"
#include "cli/cli_int.h"

static const char *jstr(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static void print_table(struct tw_cli *c, struct tw_cli_table *t) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_cli_table_render(t, &b);
  fputs(b.data, c->io->out);
  tw_buf_release(&b);
}

/* --- whoami -------------------------------------------------------------- */

static int cmd_whoami(struct tw_cli *c, const struct tw_cli_parsed *p) {
  (void)p;
  struct tw_cli_http_resp resp;
  json_t *me = NULL;
  tw_cli_http_resp_init(&resp);
  int code =
      tw_cli_request(c, "GET", "/v1/whoami", NULL, NULL, 0, NULL, &resp, &me);
  if (code == TW_EXIT_OK) {
    if (tw_cli_structured(c)) {
      code = tw_cli_print_json_text(c, resp.body.data, resp.body.len);
    } else {
      struct tw_cli_table t;
      tw_cli_table_init(&t, 2, NULL);
      const char *rows[][2] = {
          {"Name", jstr(me, "name")},
          {"Tenant", jstr(me, "tenant")},
          {"Role", jstr(me, "role")},
          {"Service", json_is_true(json_object_get(me, "service")) ? "yes"
                                                                    : "no"},
          {"Token", jstr(me, "token_id")},
          {"Server", c->url},
      };
      for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        tw_cli_table_add(&t, rows[i]);
      print_table(c, &t);
      tw_cli_table_release(&t);
    }
  }
  json_decref(me);
  tw_cli_http_resp_release(&resp);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_whoami = {
    .name = "whoami",
    .args = "",
    .summary = "show who the token is: user, tenant, role",
    .help = "Shows the principal behind the token in use (from --token,\n"
            "$TRADEWIND_TOKEN or the context's token_file) and the server.\n",
    .run = cmd_whoami,
};

/* --- jobs describe --------------------------------------------------------- */

static json_t *get_json(struct tw_cli *c, const char *path, int *code) {
  json_t *v = NULL;
  *code = tw_cli_request(c, "GET", path, NULL, NULL, 0, NULL, NULL, &v);
  return *code == TW_EXIT_OK ? v : NULL;
}

static void line(struct tw_cli *c, const char *label, const char *value) {
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b, "%-16s", label);
  tw_cli_add_clean(&b, value && *value ? value : "-");
  fprintf(c->io->out, "%s\n", b.data);
  tw_buf_release(&b);
}

static int cmd_jobs_describe(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *id = p->pos[0];
  if (!*id)
    return tw_cli_usage(c, "the job id is empty");
  char *eid = tw_cli_http_escape(id);
  char *jpath = tw_asprintf("/v1/jobs/%s", eid);
  char *epath = tw_asprintf("/v1/jobs/%s/events", eid);
  int code;
  json_t *job = get_json(c, jpath, &code), *events = NULL, *spend = NULL;
  if (job)
    events = get_json(c, epath, &code);
  /* The cost: the ledger's rows of this job, grouped by job, from the day
   * it was created to the next month's start (the report's own default
   * end).  A token that may not read reports still gets the rest. */
  if (job && events) {
    const char *created = jstr(job, "created_at");
    const char *tenant = jstr(job, "tenant");
    char day[11] = "";
    if (created && strlen(created) >= 10)
      memcpy(day, created, 10);
    char *et = tw_cli_http_escape(tenant ? tenant : "");
    char *spath = tw_asprintf("/v1/reports/spend?group_by=job%s%s%s%s",
                              *day ? "&from=" : "", day,
                              tenant ? "&tenant=" : "", tenant ? et : "");
    free(et);
    struct tw_cli_http_resp resp;
    struct tw_buf why;
    tw_cli_http_resp_init(&resp);
    tw_buf_init(&why);
    if (tw_cli_request_quiet(c, "GET", spath, &resp, &spend, &why) !=
        TW_EXIT_OK) {
      spend = NULL;
    }
    tw_buf_release(&why);
    tw_cli_http_resp_release(&resp);
    free(spath);
  }
  json_t *cost = NULL;
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(spend, "items"), i, it) {
    const char *j = jstr(it, "job");
    if (j && strcmp(j, id) == 0 && !cost)
      cost = json_incref(it);
    else if (j && strcmp(j, id) == 0) {
      /* the same job over several groups: add them up */
      const char *ks[] = {"list_cost_uusd", "effective_cost_uusd", "usage_s"};
      for (size_t k = 0; k < 3; k++) {
        json_int_t a = json_integer_value(json_object_get(cost, ks[k]));
        json_int_t b = json_integer_value(json_object_get(it, ks[k]));
        json_object_set_new(cost, ks[k], json_integer(a + b));
      }
    }
  }
  /* Attempts: each entry into provisioning starts one. */
  json_t *attempts = json_array();
  json_array_foreach(json_object_get(events, "items"), i, it) {
    const char *to = jstr(it, "to");
    if (to && strcmp(to, "provisioning") == 0)
      json_array_append_new(
          attempts, json_pack("{s:I,s:s?,s:s?}", "attempt",
                              (json_int_t)json_array_size(attempts) + 1, "at",
                              jstr(it, "at"), "reason", jstr(it, "reason")));
  }
  if (job && events) {
    if (tw_cli_structured(c)) {
      json_t *doc = json_pack("{s:O,s:O,s:O,s:O?}", "job", job, "events",
                              json_object_get(events, "items"), "attempts",
                              attempts, "cost", cost);
      code = tw_cli_print_json(c, doc);
      json_decref(doc);
    } else {
      json_t *pl = json_object_get(job, "placement");
      line(c, "ID:", jstr(job, "id"));
      line(c, "Name:", jstr(job, "name"));
      line(c, "Tenant:", jstr(job, "tenant"));
      line(c, "Project:", jstr(job, "project"));
      line(c, "State:", jstr(job, "state"));
      line(c, "Reason:", jstr(job, "reason"));
      line(c, "Created:", jstr(job, "created_at"));
      line(c, "Updated:", jstr(job, "updated_at"));
      char num[48];
      json_t *ec = json_object_get(job, "exit_code");
      if (json_is_integer(ec))
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(ec));
      else
        snprintf(num, sizeof num, "-");
      line(c, "Exit code:", num);
      fprintf(c->io->out, "Placement:\n");
      if (json_is_object(pl)) {
        const char *keys[] = {"provider", "region", "zone", "instance_type",
                              "market", "instance_id"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
          if (jstr(pl, keys[k])) {
            char *lab = tw_asprintf("  %s:", keys[k]);
            line(c, lab, jstr(pl, keys[k]));
            free(lab);
          }
        json_t *pr = json_object_get(pl, "price_uusd_per_hour");
        if (json_is_integer(pr)) {
          tw_cli_fmt_uusd(json_integer_value(pr), num, sizeof num - 3);
          strcat(num, "/h");
          line(c, "  price:", num);
        }
        line(c, "  why:", jstr(pl, "explain"));
      } else {
        fprintf(c->io->out, "  (not placed)\n");
      }
      fprintf(c->io->out, "Attempts:       %zu\n", json_array_size(attempts));
      json_array_foreach(attempts, i, it) {
        struct tw_buf b;
        tw_buf_init(&b);
        tw_buf_printf(&b, "  #%zu  ", i + 1);
        tw_cli_add_clean(&b, jstr(it, "at") ? jstr(it, "at") : "-");
        tw_buf_adds(&b, "  ");
        tw_cli_add_clean(&b, jstr(it, "reason") ? jstr(it, "reason") : "");
        fprintf(c->io->out, "%s\n", b.data);
        tw_buf_release(&b);
      }
      if (cost) {
        char l[48], e[48];
        tw_cli_fmt_uusd(json_integer_value(json_object_get(cost,
                                                           "list_cost_uusd")),
                        l, sizeof l);
        tw_cli_fmt_uusd(
            json_integer_value(json_object_get(cost, "effective_cost_uusd")),
            e, sizeof e);
        char *s = tw_asprintf("%s (list %s, %" JSON_INTEGER_FORMAT " s)", e, l,
                              json_integer_value(
                                  json_object_get(cost, "usage_s")));
        line(c, "Cost:", s);
        free(s);
      } else {
        line(c, "Cost:", spend ? "$0.00 (nothing in the ledger yet)"
                               : "- (the spend report is not readable with "
                                 "this token)");
      }
      fprintf(c->io->out, "Events:\n");
      static const char *const headers[] = {"  AT", "FROM", "TO", "REASON"};
      struct tw_cli_table t;
      tw_cli_table_init(&t, 4, headers);
      json_array_foreach(json_object_get(events, "items"), i, it) {
        char *at = tw_asprintf("  %s", jstr(it, "at") ? jstr(it, "at") : "-");
        const char *row[] = {at, jstr(it, "from"), jstr(it, "to"),
                             jstr(it, "reason")};
        tw_cli_table_add(&t, row);
        free(at);
      }
      print_table(c, &t);
      tw_cli_table_release(&t);
      code = TW_EXIT_OK;
    }
  }
  json_decref(attempts);
  json_decref(cost);
  json_decref(spend);
  json_decref(events);
  json_decref(job);
  free(jpath);
  free(epath);
  free(eid);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_describe = {
    .name = "jobs describe",
    .args = "ID",
    .summary = "a job in full: placement and why, attempts, cost, events",
    .help = "Reads the job, its events and the spend report's rows of the\n"
            "job.  An attempt starts at each entry into provisioning.  With\n"
            "-o json|yaml the document is {job, events, attempts, cost}.\n",
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_describe,
};

/* --- completion ------------------------------------------------------------ */

/* The completion scripts are built from the command table, so a new
 * command completes without an edit here.  tw_cli_commands() is cli.c's. */
const struct tw_cli_cmd *const *tw_cli_commands(void);
const struct tw_cli_opt *tw_cli_global_opts(void);

static void words_of(const struct tw_cli_cmd *cmd, struct tw_buf *b) {
  for (const struct tw_cli_opt *o = cmd->opts; o && o->name; o++)
    tw_buf_printf(b, " --%s", o->name);
}

/* The completion script's case arms, in either shell's words (open and
 * close around each list): a group's second words ("jobs" -> list get
 * ...), then each command's options after the global ones. */
static void case_arms(struct tw_buf *b, const struct tw_cli_cmd *const *cmds,
                      const char *globals, const char *open,
                      const char *close) {
  for (size_t i = 0; cmds[i]; i++) {
    const char *sp = strchr(cmds[i]->name, ' ');
    if (!sp)
      continue;
    size_t n = (size_t)(sp - cmds[i]->name);
    bool first = true;
    for (size_t k = 0; k < i; k++)
      if (!strncmp(cmds[k]->name, cmds[i]->name, n) && cmds[k]->name[n] == ' ')
        first = false;
    if (!first)
      continue;
    tw_buf_printf(b, "    \"%.*s\") %s", (int)n, cmds[i]->name, open);
    bool lead = true;
    for (size_t k = i; cmds[k]; k++)
      if (!strncmp(cmds[k]->name, cmds[i]->name, n) &&
          cmds[k]->name[n] == ' ') {
        tw_buf_printf(b, "%s%s", lead ? "" : " ", cmds[k]->name + n + 1);
        lead = false;
      }
    tw_buf_adds(b, close);
  }
  for (size_t i = 0; cmds[i]; i++) {
    tw_buf_printf(b, "    \"%s\"*) %s%s", cmds[i]->name, open, globals);
    words_of(cmds[i], b);
    tw_buf_adds(b, close);
  }
}

static int cmd_completion(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *shell = p->pos[0];
  const struct tw_cli_cmd *const *cmds = tw_cli_commands();
  struct tw_buf top, globals, b;
  tw_buf_init(&top);
  tw_buf_init(&globals);
  tw_buf_init(&b);
  tw_buf_adds(&top, "help");
  tw_buf_adds(&globals, "");
  for (const struct tw_cli_opt *o = tw_cli_global_opts(); o->name; o++)
    tw_buf_printf(&globals, "%s--%s", globals.len ? " " : "", o->name);
  for (size_t i = 0; cmds[i]; i++) {
    const char *sp = strchr(cmds[i]->name, ' ');
    size_t n = sp ? (size_t)(sp - cmds[i]->name) : strlen(cmds[i]->name);
    char *w = tw_strndup(cmds[i]->name, n);
    char *pad = tw_asprintf(" %s ", top.data);
    char *key = tw_asprintf(" %s ", w);
    if (!strstr(pad, key))
      tw_buf_printf(&top, " %s", w);
    free(pad);
    free(key);
    free(w);
  }
  if (strcmp(shell, "bash") == 0) {
    tw_buf_adds(&b, "# bash completion for tradewind: "
                    "source <(tradewind completion bash)\n"
                    "_tradewind() {\n"
                    "  local cur=${COMP_WORDS[COMP_CWORD]} cmd=\"\" i w\n"
                    "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
                    "    w=${COMP_WORDS[i]}\n"
                    "    [[ $w == -* ]] && continue\n"
                    "    cmd=\"${cmd:+$cmd }$w\"\n"
                    "  done\n"
                    "  local words\n"
                    "  case \"$cmd\" in\n");
    tw_buf_printf(&b, "    \"\") words=\"%s\" ;;\n", top.data);
    case_arms(&b, cmds, globals.data, "words=\"", "\" ;;\n");
    tw_buf_adds(&b,
                "    *) words=\"\" ;;\n"
                "  esac\n"
                "  case \"${COMP_WORDS[COMP_CWORD-1]}\" in\n"
                "    -o|--output) words=\"table wide json yaml name "
                "jsonpath=\" ;;\n"
                "    completion) words=\"bash zsh\" ;;\n"
                "  esac\n"
                "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
                "}\n"
                "complete -o default -F _tradewind tradewind\n");
  } else if (strcmp(shell, "zsh") == 0) {
    tw_buf_adds(&b, "#compdef tradewind\n"
                    "# zsh completion for tradewind: "
                    "source <(tradewind completion zsh)\n"
                    "_tradewind() {\n"
                    "  local -a words_\n"
                    "  local cmd=\"\" w\n"
                    "  for w in ${words[2,CURRENT-1]}; do\n"
                    "    [[ $w == -* ]] && continue\n"
                    "    cmd=\"${cmd:+$cmd }$w\"\n"
                    "  done\n"
                    "  case \"${words[CURRENT-1]}\" in\n"
                    "    -o|--output) compadd table wide json yaml name "
                    "jsonpath=; return ;;\n"
                    "    completion) compadd bash zsh; return ;;\n"
                    "  esac\n"
                    "  case \"$cmd\" in\n");
    tw_buf_printf(&b, "    \"\") words_=(%s) ;;\n", top.data);
    case_arms(&b, cmds, globals.data, "words_=(", ") ;;\n");
    tw_buf_adds(&b, "    *) words_=() ;;\n"
                    "  esac\n"
                    "  compadd -a words_\n"
                    "  _files\n"
                    "}\n"
                    "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
                    "  _tradewind \"$@\"\n"
                    "else\n"
                    "  compdef _tradewind tradewind\n"
                    "fi\n");
  } else {
    tw_buf_release(&top);
    tw_buf_release(&globals);
    tw_buf_release(&b);
    return tw_cli_usage(c, "completion: expected bash or zsh, got \"%.32s\"",
                        shell);
  }
  fputs(b.data, c->io->out);
  tw_buf_release(&top);
  tw_buf_release(&globals);
  tw_buf_release(&b);
  return TW_EXIT_OK;
}

const struct tw_cli_cmd tw_cli_cmd_completion = {
    .name = "completion",
    .args = "SHELL",
    .summary = "print a completion script for bash or zsh",
    .help = "  bash:  source <(tradewind completion bash)\n"
            "         (or save it in /etc/bash_completion.d/tradewind)\n"
            "  zsh:   source <(tradewind completion zsh)\n"
            "         (or save it as _tradewind in a directory of $fpath)\n",
    .local = true,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_completion,
};

/* --- admin backup ------------------------------------------------------------ */

enum { OPT_BACKUP_DB = 1 };
static const struct tw_cli_opt backup_opts[] = {
    {"db", 0, true, OPT_BACKUP_DB},
    {0},
};

static int cmd_admin_backup(struct tw_cli *c, const struct tw_cli_parsed *p) {
  const char *db = NULL;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_BACKUP_DB)
      db = p->opts[i].value;
  if (!db || !*db)
    return tw_cli_usage(c, "admin backup: --db PATH is required (the `db` "
                           "of the daemon's config)");
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_store_backup(db, p->pos[0], &err) != TW_OK) {
    tw_cli_errorf(c, "%s", err.msg);
    return err.rc == TW_E_INVALID ? TW_EXIT_USAGE : TW_EXIT_UNREACHABLE;
  }
  if (!c->quiet)
    fprintf(c->io->err, "tradewind: backed up %s to %s\n", db, p->pos[0]);
  return TW_EXIT_OK;
}

const struct tw_cli_cmd tw_cli_cmd_admin_backup = {
    .name = "admin backup",
    .args = "FILE",
    .summary = "copy the broker's sqlite database to FILE, online",
    .help = "Runs on the broker's machine: sqlite's online backup API copies\n"
            "a consistent snapshot while tradewindd keeps running.  FILE is\n"
            "written as FILE.partial (mode 0600) and renamed when complete.\n"
            "Restore: stop tradewindd, put FILE in place of the db (remove\n"
            "its -wal and -shm), start it.\n"
            "\n"
            "Options:\n"
            "  --db PATH   the database (the `db` key of the daemon's config)\n",
    .opts = backup_opts,
    .local = true,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_admin_backup,
};
