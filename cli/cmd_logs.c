/* cmd_logs.c - `tradewind jobs logs ID [--follow]`: what the job printed,
 * from GET /v1/jobs/{id}/logs (providers that keep output, such as Slurm).
 *
 * The output is read in pieces of up to 64 KiB from an offset that grows
 * by what was read, and copied to stdout byte for byte (it is the job's own
 * output, not text of the server's).  Without --follow it prints what there
 * is now; with --follow it polls (200 ms backing off to 2 s) until the job
 * has ended and everything was read.  "Ended" is read from GET
 * /v1/jobs/{id} before each read, so a read that comes back empty after
 * the job ended really is the end. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/clock.h"
#include "cli/cli_int.h"

#define LOGS_CHUNK 65536

enum { OPT_FOLLOW = 1 };

static const struct tw_cli_opt logs_opts[] = {
    {"follow", 'f', false, OPT_FOLLOW},
    {0},
};

/* Reads one piece from offset into out.  Returns an exit code; on failure
 * the reason is printed. */
static int read_piece(struct tw_cli *c, const char *eid, int64_t offset,
                      struct tw_buf *out) {
  char *path = tw_asprintf("/v1/jobs/%s/logs?offset=%lld&limit=%d", eid,
                           (long long)offset, LOGS_CHUNK);
  struct tw_cli_http_req req = {.base_url = c->url,
                                .token = c->token,
                                .method = "GET",
                                .path = path,
                                .cacert = c->cacert};
  struct tw_cli_http_resp resp;
  struct tw_err err;
  tw_err_clear(&err);
  tw_cli_http_resp_init(&resp);
  int code = TW_EXIT_OK;
  enum tw_rc rc = tw_cli_http_do(&req, &resp, &err);
  if (rc != TW_OK) {
    tw_cli_errorf(c, "%s", err.msg);
    code = rc == TW_E_INVALID ? TW_EXIT_USAGE : TW_EXIT_UNREACHABLE;
  } else if ((rc = tw_cli_http_status_rc(resp.status)) != TW_OK) {
    struct tw_buf line;
    tw_buf_init(&line);
    tw_cli_problem_line(resp.status, resp.body.data, resp.body.len, &line);
    tw_cli_errorf(c, "%s", line.data);
    tw_buf_release(&line);
    code = tw_cli_exit_for_rc(rc);
  } else if (resp.body.len) {
    tw_buf_add(out, resp.body.data, resp.body.len);
  }
  tw_cli_http_resp_release(&resp);
  free(path);
  return code;
}

/* Whether the job has ended: 1 yes, 0 no, or -(exit code) on failure. */
static int job_ended(struct tw_cli *c, const char *eid) {
  char *path = tw_asprintf("/v1/jobs/%s", eid);
  json_t *job = NULL;
  int code = tw_cli_request(c, "GET", path, NULL, NULL, 0, NULL, NULL, &job);
  free(path);
  if (code != TW_EXIT_OK)
    return -code;
  json_t *sv = json_object_get(job, "state");
  int ended =
      json_is_string(sv) && tw_cli_exit_for_state(json_string_value(sv)) >= 0;
  json_decref(job);
  return ended;
}

static int cmd_jobs_logs(struct tw_cli *c, const struct tw_cli_parsed *p) {
  bool follow = false;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_FOLLOW)
      follow = true;
  if (!*p->pos[0])
    return tw_cli_usage(c, "the job id is empty");
  char *eid = tw_cli_http_escape(p->pos[0]);
  int64_t offset = 0, backoff = TW_CLI_WAIT_FIRST_MS;
  int code = TW_EXIT_OK, failures = 0;
  for (;;) {
    int ended = 0;
    if (follow) {
      ended = job_ended(c, eid);
      if (ended < 0) {
        /* a daemon restart should not end a long follow */
        if (-ended == TW_EXIT_UNREACHABLE &&
            ++failures < TW_CLI_WAIT_MAX_FAILURES)
          goto nap;
        code = -ended;
        break;
      }
    }
    struct tw_buf piece;
    tw_buf_init(&piece);
    /* read everything there is now */
    size_t got = 0;
    do {
      tw_buf_reset(&piece);
      code = read_piece(c, eid, offset, &piece);
      if (code == TW_EXIT_OK && piece.len) {
        fwrite(piece.data, 1, piece.len, c->io->out);
        fflush(c->io->out);
        offset += (int64_t)piece.len;
        got += piece.len;
      }
    } while (code == TW_EXIT_OK && piece.len == LOGS_CHUNK);
    tw_buf_release(&piece);
    if (code == TW_EXIT_UNREACHABLE && follow &&
        ++failures < TW_CLI_WAIT_MAX_FAILURES)
      goto nap;
    if (code != TW_EXIT_OK || !follow || ended == 1)
      break;
    failures = 0;
    if (got)
      backoff = TW_CLI_WAIT_FIRST_MS;
  nap:
    c->io->sleep_ms(c->io->sleep_ctx, backoff);
    backoff =
        backoff * 2 > TW_CLI_WAIT_MAX_MS ? TW_CLI_WAIT_MAX_MS : backoff * 2;
  }
  free(eid);
  return code;
}

const struct tw_cli_cmd tw_cli_cmd_jobs_logs = {
    .name = "jobs logs",
    .args = "ID",
    .summary = "print what a job printed (Slurm keeps its output)",
    .help = "Prints the output (stdout and stderr) of the job's latest\n"
            "attempt as the provider keeps it, byte for byte.  Providers that\n"
            "keep no output (the clouds) answer 404.\n"
            "\n"
            "Options:\n"
            "  -f, --follow   keep printing new output until the job has\n"
            "                 ended and everything was printed\n",
    .opts = logs_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_logs,
};
