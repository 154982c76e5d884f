/* cmd_wait.c - `tradewind jobs wait ID [--timeout D]`, and the wait loop
 * `submit --wait` shares.  After a first GET /v1/jobs/{id}, the job's
 * events are followed on GET /v1/events/stream (one connection, each
 * change as it is stored) until one is terminal; a server without the
 * stream, or a caller the stream refuses (the ci role), is polled
 * instead, backing off from 200 ms to 2 s.  Either way the last GET
 * gives the outcome. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/base/clock.h"
#include "cli/cli_int.h"
#include "cli/http.h"
#include "cli/sse.h"

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

/* ---- following the event stream ------------------------------------------ */

struct follow {
  struct tw_cli *c;
  const char *id;
  char **last; /* the state printed last (the caller's) */
  struct tw_cli_sse sse;
  bool terminal;
  bool bad; /* an event that is not a job event of ours */
};

static bool is_terminal(const char *state) {
  return tw_cli_exit_for_job(state, 0, false) >= 0;
}

static void changed(struct follow *f, const char *to, const char *reason) {
  if (*f->last && !strcmp(*f->last, to))
    return;
  print_change(f->c, f->id, *f->last, to, reason);
  free(*f->last);
  *f->last = tw_strdup(to);
  if (is_terminal(to))
    f->terminal = true;
}

static bool on_event(void *ctx, const char *event, const char *data) {
  struct follow *f = ctx;
  if (strcmp(event, "job"))
    return true; /* hello, and whatever later servers add */
  json_t *ev = json_loads(data, 0, NULL);
  json_t *to = json_object_get(ev, "to"), *rs = json_object_get(ev, "reason");
  if (json_is_string(to))
    changed(f, json_string_value(to),
            json_is_string(rs) ? json_string_value(rs) : NULL);
  else
    f->bad = true;
  json_decref(ev);
  return !f->terminal && !f->bad;
}

static bool on_stream(void *ctx, const char *data, size_t n) {
  struct follow *f = ctx;
  if (!tw_cli_sse_feed(&f->sse, data, n, on_event, f) && f->sse.bad)
    f->bad = true;
  return !f->terminal && !f->bad;
}

/* Follows job eid's events from the stream until one is terminal (true,
 * and the caller's GET reads the outcome) or the deadline (0: none)
 * passes (true: the caller reports the timeout).  False when the server
 * has no stream for this caller: the caller polls. */
static bool follow_stream(struct tw_cli *c, const char *id, const char *eid,
                          int64_t deadline_ms, char **last) {
  struct follow f = {.c = c, .id = id, .last = last};
  tw_cli_sse_init(&f.sse);
  /* where to start: the job's last stored event */
  char *path = tw_asprintf("/v1/jobs/%s/events", eid);
  struct tw_cli_http_resp resp;
  struct tw_buf line;
  json_t *evs = NULL;
  tw_cli_http_resp_init(&resp);
  tw_buf_init(&line);
  int code = tw_cli_request_quiet(c, "GET", path, &resp, &evs, &line);
  free(path);
  bool ok = false;
  json_t *items = json_object_get(evs, "items");
  size_t n = json_array_size(items);
  if (code == TW_EXIT_OK && n) {
    json_t *e = json_array_get(items, n - 1);
    f.sse.last_id = (long long)json_integer_value(json_object_get(e, "seq"));
    json_t *to = json_object_get(e, "to"), *rs = json_object_get(e, "reason");
    if (json_is_string(to))
      changed(&f, json_string_value(to),
              json_is_string(rs) ? json_string_value(rs) : NULL);
    ok = true;
  }
  json_decref(evs);
  tw_buf_release(&line);
  tw_cli_http_resp_release(&resp);
  while (ok && !f.terminal) {
    long timeout = 2L * 3600 * 1000; /* the server ends a stream each hour */
    if (deadline_ms > 0) {
      int64_t left = deadline_ms - tw_clock_now_ms(c->io->clock);
      if (left <= 0)
        break;
      timeout = (long)left;
    }
    path =
        tw_asprintf("/v1/events/stream?job=%s&after=%lld", eid, f.sse.last_id);
    struct tw_cli_http_req req = {.base_url = c->url,
                                  .token = c->token,
                                  .method = "GET",
                                  .path = path,
                                  .cacert = c->cacert,
                                  .timeout_ms = timeout,
                                  .on_data = on_stream,
                                  .on_data_ctx = &f};
    struct tw_err err = {0};
    tw_cli_http_resp_init(&resp);
    enum tw_rc rc = tw_cli_http_do(&req, &resp, &err);
    free(path);
    bool streamed = rc == TW_OK && resp.status == 200;
    tw_cli_http_resp_release(&resp);
    tw_cli_sse_restart(&f.sse);
    if (f.bad)
      ok = false;
    else if (!streamed && !f.terminal)
      /* refused, or cut off: polling takes over (and reports a server
       * that stays away) unless the deadline is what ended it */
      ok = deadline_ms > 0 && tw_clock_now_ms(c->io->clock) >= deadline_ms;
    if (!ok)
      break;
  }
  tw_cli_sse_release(&f.sse);
  return ok;
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
  bool done = false, followed = false;

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
    if (!followed && code == TW_EXIT_OK && !strcmp(what, "job")) {
      /* the job exists and runs on: follow its events, once; then the
       * next GET reads the outcome (or finds the deadline passed); a
       * workflow's progress is polled */
      followed = true;
      if (follow_stream(c, id, eid, timeout_ms > 0 ? start + timeout_ms : 0,
                        &last)) {
        if (timeout_ms <= 0 ||
            tw_clock_now_ms(c->io->clock) < start + timeout_ms)
          continue;
      }
    }

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
  free(eid);
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
    .help = "Follows the job's events (GET /v1/events/stream; polls every\n"
            "200 ms backing off to 2 s where the stream is refused) and\n"
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
