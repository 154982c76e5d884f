/* cli_int.h - what the files of cli/ share; the unit tests include it too.
 * Nothing here is a published API: see cli.h for that. */
#ifndef TW_CLI_CLI_INT_H
#define TW_CLI_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "cli/cli.h"
#include "cli/http.h"

/* --- option parsing (opt.c) --------------------------------------------- */

/* One option a command accepts.  Tables end with a zeroed entry. */
struct tw_cli_opt {
  const char *name; /* long name without dashes: "wait" */
  char short_name;  /* 'o', or 0 for none */
  bool has_arg;
  int id; /* reported back in tw_cli_optval */
};

struct tw_cli_optval {
  int id;
  const char *name;  /* the long name, for messages */
  const char *value; /* borrowed from argv; NULL for flags */
};

struct tw_cli_parsed {
  struct tw_cli_optval *opts; /* in command-line order */
  size_t nopts;
  char **pos; /* positional arguments, borrowed from argv */
  size_t npos;
};

/* Parses argv[0..argc) against the tables (a NULL-terminated list of
 * option tables, searched in order).  Accepts --name value, --name=value,
 * -o=value,
 * -o value, -ovalue, and `--` to end options; "-" alone is positional.
 * With stop_at_pos the first positional argument and everything after it
 * are left unparsed in out->pos.  On TW_E_INVALID err->msg names the
 * option (and the closest known one when the name is misspelt).  The caller
 * tw_cli_parsed_release()s out on every path. */
enum tw_rc tw_cli_opts_parse(const struct tw_cli_opt *const *tables, int argc,
                             char **argv, bool stop_at_pos,
                             struct tw_cli_parsed *out, struct tw_err *err);
void tw_cli_parsed_release(struct tw_cli_parsed *p);

/* Parses a duration: "500ms", "30s", "5m", "1h30m", "2d"; a bare number is
 * seconds.  The result must be 1 ms..30 days.  0 on success, -1 when
 * malformed or out of range. */
int tw_cli_parse_duration_ms(const char *s, int64_t *out);

/* Parses a decimal integer in [min, max].  0 on success, -1 otherwise. */
int tw_cli_parse_int(const char *s, long min, long max, long *out);

/* --- output (output.c) -------------------------------------------------- */

/* The exit code for an error class from the HTTP layer or the server: the
 * one table from enum tw_rc to exit codes (TW_OK -> 0, 4xx classes -> 5,
 * unreachable, 5xx and garbled answers -> 3). */
int tw_cli_exit_for_rc(enum tw_rc rc);

/* The exit code for a job's terminal state: succeeded 0, failed 1,
 * cancelled 4.  Returns -1 for a state that is not terminal. */
int tw_cli_exit_for_state(const char *state);

/* The exit code a wait ends with: as tw_cli_exit_for_state(), except that
 * a failed job with its own exit code 1..255 gives that code. */
int tw_cli_exit_for_job(const char *state, long long exit_code, bool has_code);

/* Appends the one-line description of a non-2xx answer to out, without the
 * "tradewind: " prefix:
 *   rejected (400): resources.cpus: expected a number or N+, got "eight"
 *   server error (503): the broker is draining (request r-1)
 * It reads an RFC 9457 problem (detail, else title), prefixing the problem's
 * `field` unless the detail already starts with it; any other body gives
 * its first line.  Control characters become spaces and the text is cut at
 * 400 bytes, so a hostile server cannot paint the terminal. */
void tw_cli_problem_line(long status, const char *body, size_t len,
                         struct tw_buf *out);

/* Re-indents valid JSON text (two spaces, one member per line) into out,
 * keeping every token exactly as the server wrote it; returns TW_E_INVALID
 * and leaves out alone when text is not one valid JSON value. */
enum tw_rc tw_cli_json_pretty(const char *text, size_t len, struct tw_buf *out,
                              struct tw_err *err);

/* Copies s into out, replacing control characters (and DEL) with '?'. */
void tw_cli_add_clean(struct tw_buf *out, const char *s);

/* "$12.345678": micro-USD as dollars, trailing zeros trimmed to two
 * decimals, integer arithmetic only. */
void tw_cli_fmt_uusd(int64_t uusd, char *out, size_t outsz);

/* "45s", "12m", "3h", "2d"; "-" for a negative age (clock skew). */
void tw_cli_fmt_age(int64_t ms, char *out, size_t outsz);

/* "1h30m", "2s", "500ms": a duration for messages. */
void tw_cli_fmt_duration(int64_t ms, char *out, size_t outsz);

/* A table of text cells rendered with aligned columns, two spaces apart;
 * the last column is not padded.  Widths count UTF-8 characters. */
struct tw_cli_table {
  size_t ncols;
  const char *const *headers; /* ncols names, or NULL for no header row */
  char **cells;               /* nrows * ncols, owned, cleaned */
  size_t nrows, cap;
};

void tw_cli_table_init(struct tw_cli_table *t, size_t ncols,
                       const char *const *headers);
/* Copies ncols cells (NULL prints as "-"). */
void tw_cli_table_add(struct tw_cli_table *t, const char *const *row);
void tw_cli_table_render(const struct tw_cli_table *t, struct tw_buf *out);
void tw_cli_table_release(struct tw_cli_table *t);

/* --- commands (cli.c and cmd_*.c) --------------------------------------- */

/* -o: the human formats come first; from TW_CLI_JSON on the output is
 * for programs (tw_cli_structured()). */
enum tw_cli_format {
  TW_CLI_TABLE = 0,
  TW_CLI_WIDE,     /* the table with more columns where a command has them */
  TW_CLI_JSON,     /* the server's JSON, indented */
  TW_CLI_YAML,     /* the same document as YAML */
  TW_CLI_JSONPATH, /* jsonpath=TEMPLATE applied to the document */
  TW_CLI_NAME      /* one identifier per line: id, else name */
};

/* The state of one run, shared by the commands. */
struct tw_cli {
  const struct tw_cli_io *io;
  enum tw_cli_format format;
  const char *url;    /* base URL without trailing slash (owned by run) */
  const char *token;  /* NULL when none */
  const char *cacert; /* CA bundle for https (--cacert), NULL: the system's */
  const char *cmd;    /* "jobs list": for "see --help" hints */
  const char *jsonpath; /* the template of -o jsonpath=... */
  bool quiet;           /* -q: identifiers only, no progress lines */
  const char *config_file; /* the client config (contexts); NULL: none */
  const char *context;     /* --context, else the file's current-context */
  char *ctx_url;           /* the context's URL (owned by run) */
};

struct json_t;

/* The config file (cmd_config.c).  load: *doc is the file as JSON (an
 * empty object when absent); apply: fills in url, token and CA from the
 * chosen context where *_set says the user did not give them.  Both return
 * -1 on success, else an exit code after printing the reason. */
int tw_cli_config_load(struct tw_cli *c, struct json_t **doc);
int tw_cli_config_apply(struct tw_cli *c, const char **url, bool url_set,
                        char **token_owned, bool token_set,
                        char **cacert_owned, bool cacert_set);

static inline bool tw_cli_structured(const struct tw_cli *c) {
  return c->format >= TW_CLI_JSON;
}

/* --- structured output (format.c) --------------------------------------- */

struct json_t;

/* Writes v as block-style YAML (strings quoted when plain YAML would read
 * them as something else). */
void tw_cli_yaml(const struct json_t *v, struct tw_buf *out);

/* Applies a kubectl-style JSONPath template: literal text with {EXPR}
 * parts, EXPR being .key, ['key'], [N] and [*] steps (a template without
 * braces is one EXPR).  Several results are joined by spaces; strings print
 * raw, other values as compact JSON.  TW_E_INVALID names the fault. */
enum tw_rc tw_cli_jsonpath(const char *tmpl, const struct json_t *v,
                           struct tw_buf *out, struct tw_err *err);

/* The identifiers of a document for -o name: each item's id (else name)
 * of an `items` list, or the object's own. */
void tw_cli_names(const struct json_t *v, struct tw_buf *out);

/* Sorts an array of objects by the value at a JSONPath expression (".a.b"
 * or "{.a.b}"): numbers numerically, strings bytewise, missing last.
 * TW_E_INVALID for a malformed expression. */
enum tw_rc tw_cli_sort_items(struct json_t *items, const char *expr,
                             struct tw_err *err);


struct json_t;

/* Sends a request and sorts out the answer.  On a 2xx answer with a JSON
 * body, *json (when not NULL) receives the parsed body (json_decref it) and
 * TW_EXIT_OK is returned.  Otherwise the one-line reason is printed on
 * stderr and the exit code returned: 3 unreachable, 5xx or a body that is
 * not JSON; 5 for 4xx.  resp (may be NULL) receives the raw answer; the
 * caller releases it. */
int tw_cli_request(struct tw_cli *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t len,
                   const char *idempotency_key, struct tw_cli_http_resp *resp,
                   struct json_t **json);

/* As tw_cli_request, but on failure appends the reason to line instead of
 * printing it (the wait loop decides whether to retry). */
int tw_cli_request_quiet(struct tw_cli *c, const char *method, const char *path,
                         struct tw_cli_http_resp *resp, struct json_t **json,
                         struct tw_buf *line);

/* Prints "tradewind: <fmt>" and a "see --help" hint on stderr; returns
 * TW_EXIT_USAGE. */
int tw_cli_usage(struct tw_cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cli/workdir.c: when the document (a spec or a SkyPilot task, JSON or
 * YAML) has a top-level `workdir:` naming a local directory, packs it
 * (broker/base/tar.h), uploads it with PUT /v1/workdirs/{sha256} when
 * upload is set (to the document's tenant, else default), and rewrites
 * doc as JSON with `workdir: sha256:<hex>` (*changed true).  A document
 * that does not parse is left to the server.  TW_EXIT_OK, TW_EXIT_USAGE
 * (not a directory, cannot be packed, printed) or the upload's code. */
int tw_cli_workdir(struct tw_cli *c, struct tw_buf *doc, bool is_json,
                   bool upload, bool *changed);

/* Prints "tradewind: <fmt>" on stderr. */
void tw_cli_errorf(struct tw_cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints a JSON value (text of the server or built here) indented on
 * stdout.  Returns TW_EXIT_OK, or TW_EXIT_UNREACHABLE for text that is not
 * JSON (a garbled answer). */
int tw_cli_print_json_text(struct tw_cli *c, const char *text, size_t len);
int tw_cli_print_json(struct tw_cli *c, struct json_t *v);

/* Polls GET /v1/jobs/{id} until the job is terminal or timeout_ms passes
 * (0: no limit), backing off from 200 ms to 2 s and printing each state
 * change on stderr.  Returns the job's exit code (0, 1, 4), 6 on timeout,
 * 5 on a rejection, 3 after TW_CLI_WAIT_MAX_FAILURES unreachable or 5xx
 * polls in a row.  With -o json the final job is printed on stdout. */
#define TW_CLI_WAIT_FIRST_MS 200
#define TW_CLI_WAIT_MAX_MS 2000
#define TW_CLI_WAIT_MAX_FAILURES 4
int tw_cli_wait_job(struct tw_cli *c, const char *id, int64_t timeout_ms);
/* The same over GET /v1/workflows/{id} (an array or a workflow): exits 0
 * when it succeeded, 1 failed, 4 cancelled, 6 on timeout; prints the
 * progress counts on stderr as they change. */
int tw_cli_wait_workflow(struct tw_cli *c, const char *id,
                         int64_t timeout_ms);

/* One command: "submit" or "jobs list". */
struct tw_cli_cmd {
  const char *name;
  const char *args;    /* positional synopsis: "FILE", "ID" */
  const char *summary; /* one line for the command list */
  const char *help;    /* the options part of `CMD --help` */
  /* Optional: appends what follows help, for lists read from a table
   * (the report formats) rather than written into the text. */
  void (*help_more)(struct tw_buf *out);
  const struct tw_cli_opt *opts;
  size_t min_pos, max_pos;
  int (*run)(struct tw_cli *c, const struct tw_cli_parsed *p);
  bool local; /* needs no server: contexts are not applied (config, completion) */
};

extern const struct tw_cli_cmd tw_cli_cmd_submit;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_list;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_get;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_cancel;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_wait;
/* cmd_workflow.c */
extern const struct tw_cli_cmd tw_cli_cmd_workflow_submit,
    tw_cli_cmd_workflow_get, tw_cli_cmd_workflow_cancel,
    tw_cli_cmd_workflow_wait;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_events;
extern const struct tw_cli_cmd tw_cli_cmd_jobs_logs;
extern const struct tw_cli_cmd tw_cli_cmd_report_spend;
/* tenancy: cmd_token.c, cmd_user.c, cmd_tenant.c, cmd_quota.c,
 * cmd_budget.c, cmd_audit.c */
extern const struct tw_cli_cmd tw_cli_cmd_token_create, tw_cli_cmd_token_list,
    tw_cli_cmd_token_revoke, tw_cli_cmd_user_create, tw_cli_cmd_user_list,
    tw_cli_cmd_user_disable, tw_cli_cmd_tenant_create, tw_cli_cmd_tenant_list,
    tw_cli_cmd_quota_get, tw_cli_cmd_quota_set, tw_cli_cmd_budget_get,
    tw_cli_cmd_budget_set, tw_cli_cmd_budget_status, tw_cli_cmd_audit_list,
    tw_cli_cmd_audit_export, tw_cli_cmd_audit_verify;
/* cmd_config.c, cmd_more.c */
extern const struct tw_cli_cmd tw_cli_cmd_config_get,
    tw_cli_cmd_config_current, tw_cli_cmd_config_use, tw_cli_cmd_config_set,
    tw_cli_cmd_config_delete, tw_cli_cmd_whoami, tw_cli_cmd_completion,
    tw_cli_cmd_jobs_describe, tw_cli_cmd_admin_backup;

/* Option ids below this are the commands' own. */
#define TW_CLI_OPT_GLOBAL 1000

#endif
