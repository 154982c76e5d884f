/* cmd_wait.c - `tradewind jobs wait ID [--timeout D]`, and the wait loop
 * `submit --wait` shares.  The contract has no long-poll, so this polls
 * GET /v1/jobs/{id}, backing off from 200 ms to 2 s: quick jobs finish
 * promptly, long ones cost the server one request every 2 s. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/clock.h"
#include "cli/cli_int.h"

static void print_change(struct tw_cli *c, const char *id, const char *from,
                         const char *to, const char *reason) {
  struct tw_buf b;
  if (c->quiet)
    return;
  tw_buf_init(&b);
  tw_cli_add_clean(&b, id);
  tw_buf_adds(&b, ": ");
  if (from) {
    tw_cli_add_clean(&b, from);
    tw_buf_adds(&b, " -> ");
  }
  tw_cli_add_clean(&b, to);
  if (reason && *reason) {
    tw_buf_adds(&b, " (");
    tw_cli_add_clean(&b, reason);
    tw_buf_adds(&b, ")");
  }
  fprintf(c->io->err, "%s\n", b.data);
  fflush(c->io->err);
  tw_buf_release(&b);
}

/* The progress line of a workflow's answer ("3/10 succeeded, 1 failed"),
 * or "" for a job. */
static void progress_of(json_t *obj, char *out, size_t sz) {
  out[0] = '\0';
  json_t *pr = json_object_get(obj, "progress");
  if (!json_is_object(pr))
    return;
  long long n = json_integer_value(json_object_get(obj, "tasks"));
  snprintf(out, sz, "%lld/%lld succeeded, %lld failed, %lld cancelled, "
                    "%lld running",
           (long long)json_integer_value(json_object_get(pr, "succeeded")), n,
           (long long)json_integer_value(json_object_get(pr, "failed")),
           (long long)json_integer_value(json_object_get(pr, "cancelled")),
           (long long)json_integer_value(json_object_get(pr, "running")));
}

static int wait_on(struct tw_cli *c, const char *id, const char *base,
                   const char *what, int64_t timeout_ms);

int tw_cli_wait_job(struct tw_cli *c, const char *id, int64_t timeout_ms) {
  return wait_on(c, id, "/v1/jobs/", "job", timeout_ms);
}

int tw_cli_wait_workflow(struct tw_cli *c, const char *id,
                         int64_t timeout_ms) {
  return wait_on(c, id, "/v1/workflows/", "workflow", timeout_ms);
}

static int wait_on(struct tw_cli *c, const char *id, const char *base,
                   const char *what, int64_t timeout_ms) {
  char *eid = tw_cli_http_escape(id);
  char *path = tw_asprintf("%s%s", base, eid);
  char last_progress[160] = "";
  int64_t start = tw_clock_now_ms(c->io->clock);
  int64_t backoff = TW_CLI_WAIT_FIRST_MS;
  char *last = NULL;
  int failures = 0, code = TW_EXIT_OK;
  bool done = false;

  free(eid);
  while (!done) {
    struct tw_cli_http_resp resp;
    struct tw_buf line;
    json_t *job = NULL;
    tw_cli_http_resp_init(&resp);
    tw_buf_init(&line);
    code = tw_cli_request_quiet(c, "GET", path, &resp, &job, &line);
    if (code == TW_EXIT_UNREACHABLE) {
      /* A daemon restart or a moment of overload should not end a wait of
       * hours; a server that stays away should. */
      if (++failures >= TW_CLI_WAIT_MAX_FAILURES) {
        tw_cli_errorf(c, "%s", line.data);
        done = true;
      } else {
        tw_cli_errorf(c, "%s; retrying", line.data);
      }
    } else if (code != TW_EXIT_OK) {
      tw_cli_errorf(c, "%s", line.data);
      done = true;
    } else {
      failures = 0;
      json_t *sv = json_object_get(job, "state");
      json_t *rv = json_object_get(job, "reason");
      const char *state = json_is_string(sv) ? json_string_value(sv) : NULL;
      if (!state) {
        tw_cli_errorf(c, "the server's answer for %s %s has no state", what,
                      path);
        code = TW_EXIT_UNREACHABLE;
        done = true;
      } else {
        if (!last || strcmp(last, state) != 0) {
          print_change(c, id, last, state,
                       json_is_string(rv) ? json_string_value(rv) : NULL);
          free(last);
          last = tw_strdup(state);
          /* Something moves: look again soon. */
          backoff = TW_CLI_WAIT_FIRST_MS;
        }
        char prog[160];
        progress_of(job, prog, sizeof prog);
        if (prog[0] && strcmp(prog, last_progress)) {
          if (!c->quiet) {
            struct tw_buf b;
            tw_buf_init(&b);
            tw_cli_add_clean(&b, id);
            fprintf(c->io->err, "%s: %s\n", b.data, prog);
            fflush(c->io->err);
            tw_buf_release(&b);
          }
          snprintf(last_progress, sizeof last_progress, "%s", prog);
          backoff = TW_CLI_WAIT_FIRST_MS;
        }
        int outcome = tw_cli_exit_for_job(
            state, json_integer_value(json_object_get(job, "exit_code")),
            json_is_integer(json_object_get(job, "exit_code")));
        if (outcome >= 0) {
          code = outcome;
          if (tw_cli_structured(c) &&
              tw_cli_print_json_text(c, resp.body.data, resp.body.len))
            code = TW_EXIT_UNREACHABLE;
          done = true;
        }
      }
    }
    json_decref(job);
    tw_buf_release(&line);
    tw_cli_http_resp_release(&resp);
    if (done)
      break;

    int64_t now = tw_clock_now_ms(c->io->clock);
    int64_t nap = backoff;
    if (timeout_ms > 0) {
      int64_t left = start + timeout_ms - now;
      if (left <= 0) {
        char d[32];
        tw_cli_fmt_duration(timeout_ms, d, sizeof d);
        struct tw_buf b;
        tw_buf_init(&b);
        tw_cli_add_clean(&b, id);
        tw_cli_errorf(c, "timed out after %s waiting for %s %s (still %s)", d,
                      what, b.data, last ? last : "unknown");
        tw_buf_release(&b);
        code = TW_EXIT_TIMEOUT;
        break;
      }
      if (nap > left)
        nap = left;
    }
    c->io->sleep_ms(c->io->sleep_ctx, nap);
    backoff =
        backoff * 2 > TW_CLI_WAIT_MAX_MS ? TW_CLI_WAIT_MAX_MS : backoff * 2;
  }
  free(last);
  free(path);
  return code;
}

enum { OPT_TIMEOUT = 1 };

static const struct tw_cli_opt wait_opts[] = {
    {"timeout", 0, true, OPT_TIMEOUT},
    {0},
};

static int cmd_jobs_wait(struct tw_cli *c, const struct tw_cli_parsed *p) {
  int64_t timeout_ms = 0;
  for (size_t i = 0; i < p->nopts; i++)
    if (p->opts[i].id == OPT_TIMEOUT &&
        tw_cli_parse_duration_ms(p->opts[i].value, &timeout_ms))
      return tw_cli_usage(c,
                          "--timeout: expected a duration such as 90s, "
                          "10m or 1h30m, got \"%.64s\"",
                          p->opts[i].value);
  if (!*p->pos[0])
    return tw_cli_usage(c, "the job id is empty");
  return tw_cli_wait_job(c, p->pos[0], timeout_ms);
}

const struct tw_cli_cmd tw_cli_cmd_jobs_wait = {
    .name = "jobs wait",
    .args = "ID",
    .summary = "wait until a job finishes; exit with its outcome",
    .help = "Polls the job (every 200 ms at first, backing off to 2 s) and\n"
            "prints each state change on stderr.  Exits 0 when the job\n"
            "succeeded; when it failed, with the job's own exit code (1 if\n"
            "it has none); 4 cancelled, 6 on timeout; 3 after four failed\n"
            "polls in a row.  With -o json prints the final job, and only\n"
            "then, which tells a job's exit 3 from an unreachable server.\n"
            "\n"
            "Options:\n"
            "  --timeout DURATION   give up after DURATION (90s, 10m, 1h30m)\n",
    .opts = wait_opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = cmd_jobs_wait,
};
