/* handlers.c - the /v1 routes: parse into C structs, work on them, render
 * from them.  Money stays integer micro-USD on the wire. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"
#include "api/h_placement.h"
#include "billing/catalog/catalog.h"
#include "api/auth_int.h"
#include "api/h_workdirs.h"
#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/core/flow.h"
#include "broker/core/skypilot.h"
#include "broker/base/trace.h"
#include "broker/core/spec.h"
#include "broker/core/store.h"
#include "broker/core/store_obs.h"
#include "broker/core/store_agent.h"
#include "broker/tenancy/secrets.h"
#include "providers/provider.h"

static void add_time(struct tw_buf *b, const char *key, int64_t ms) {
  char t[40];
  tw_time_fmt_rfc3339(ms, t, sizeof t);
  tw_buf_printf(b, ",\"%s\":\"%s\"", key, t);
}

static void render_job(struct tw_buf *b, const struct tw_job_rec *j) {
  tw_buf_adds(b, "{\"id\":");
  tw_buf_json_str(b, j->id);
  tw_buf_adds(b, ",\"name\":");
  tw_buf_json_str(b, j->name);
  tw_buf_adds(b, ",\"tenant\":");
  tw_buf_json_str(b, j->tenant);
  tw_buf_adds(b, ",\"project\":");
  tw_buf_json_str(b, j->project);
  tw_buf_printf(b, ",\"state\":\"%s\",\"reason\":", tw_job_state_str(j->state));
  tw_buf_json_str(b, j->reason);
  tw_buf_printf(b, ",\"priority\":%d", j->priority);
  add_time(b, "created_at", j->created_ms);
  add_time(b, "updated_at", j->updated_ms);
  /* spec and placement are JSON the broker wrote itself */
  tw_buf_adds(b, ",\"spec\":");
  tw_buf_adds(b, j->spec_json ? j->spec_json : "null");
  tw_buf_adds(b, ",\"placement\":");
  tw_buf_adds(b, j->placement_json ? j->placement_json : "null");
  if (j->has_exit_code)
    tw_buf_printf(b, ",\"exit_code\":%d}", j->exit_code);
  else
    tw_buf_adds(b, ",\"exit_code\":null}");
}

void tw_h_healthz(struct tw_req *r) {
  tw_buf_adds(&r->out, "{\"status\":\"ok\"}");
  tw_req_json(r, 200);
}

/* How often /readyz may probe a store that is not ready. */
#define READYZ_PROBE_INTERVAL_MS 1000

void tw_h_readyz(struct tw_req *r) {
  if (tw_api_draining(r->api)) {
    tw_problem(r, 503, "draining", NULL, "the broker is shutting down");
    return;
  }
  /* A broker that cannot commit takes no work it could acknowledge: a load
   * balancer sends submissions elsewhere until a write commits.  A store
   * that is not ready (nothing committed since start, or writes failing)
   * is probed at most once a second from here, so a quiet broker comes
   * back once space returns without waiting for a submission. */
  struct tw_store *store = tw_api_store(r->api);
  struct tw_store_health h;
  tw_store_health(store, &h);
  if (h.state != TW_STORE_OK) {
    tw_store_probe_if_unready(store, READYZ_PROBE_INTERVAL_MS);
    tw_store_health(store, &h);
  }
  if (h.state == TW_STORE_STARTING) {
    tw_req_add_header(r, "Retry-After", "1");
    tw_problem(r, 503, "store-unavailable", NULL,
               "the store has not committed a write since the broker started");
    return;
  }
  if (h.state != TW_STORE_OK) {
    tw_problem_store(r, h.state == TW_STORE_FULL ? TW_E_FULL : TW_E_IO,
                     h.unhealthy_since_ms);
    return;
  }
  char why[200] = "";
  if (!tw_api_ready(r->api, why, sizeof why)) {
    tw_problem(r, 503, "not-ready", NULL, "%s", why);
    return;
  }
  if (tw_ha_shared(store)) /* which replica leads (docs/ha.md) */
    tw_ha_ready_body(store, &r->out);
  else
    tw_buf_adds(&r->out, "{\"status\":\"ready\"}");
  tw_req_json(r, 200);
}

void tw_h_metrics(struct tw_req *r) {
  struct tw_store_gauges g;
  struct tw_err err = {0};
  tw_api_metrics_render(r->api, &r->out);
  /* the reading the scheduler's tenant gauges share (store_obs.h) */
  if (tw_store_gauges(tw_api_store(r->api), TW_STORE_GAUGES_MAX_AGE_MS, &g,
                      &err) == TW_OK) {
    tw_buf_adds(&r->out, "# HELP tradewind_jobs Jobs in the store, by state.\n"
                         "# TYPE tradewind_jobs gauge\n");
    for (int s = 0; s < TW_JOB_NSTATES; s++)
      tw_buf_printf(&r->out, "tradewind_jobs{state=\"%s\"} %lld\n",
                    tw_job_state_str((enum tw_job_state)s),
                    (long long)g.jobs[s]);
    tw_store_gauges_release(&g);
  }
  struct tw_store_stats st;
  tw_store_stats(tw_api_store(r->api), &st);
  tw_buf_printf(
      &r->out,
      "# HELP tradewind_store_commits_total Store transactions committed.\n"
      "# TYPE tradewind_store_commits_total counter\n"
      "tradewind_store_commits_total %llu\n"
      "# HELP tradewind_store_writes_total Write operations committed (several "
      "per transaction under load).\n"
      "# TYPE tradewind_store_writes_total counter\n"
      "tradewind_store_writes_total %llu\n",
      (unsigned long long)st.commits, (unsigned long long)st.ops);
  struct tw_store_health h;
  tw_store_health(tw_api_store(r->api), &h);
  tw_buf_adds(&r->out,
              "# HELP tradewind_store_state The store's write health: 1 for "
              "the state in force (starting: nothing committed since start; "
              "full, io: writes fail).\n"
              "# TYPE tradewind_store_state gauge\n");
  for (int k = TW_STORE_STARTING; k <= TW_STORE_IO; k++)
    tw_buf_printf(&r->out, "tradewind_store_state{state=\"%s\"} %d\n",
                  tw_store_health_state_str((enum tw_store_health_state)k),
                  (int)h.state == k);
  tw_buf_printf(
      &r->out,
      "# HELP tradewind_store_last_commit_timestamp_seconds When a write last "
      "committed (0: none since start).\n"
      "# TYPE tradewind_store_last_commit_timestamp_seconds gauge\n"
      "tradewind_store_last_commit_timestamp_seconds %lld.%03lld\n"
      "# HELP tradewind_store_consecutive_failures Transactions in a row "
      "that failed on the storage since the last commit.\n"
      "# TYPE tradewind_store_consecutive_failures gauge\n"
      "tradewind_store_consecutive_failures %llu\n",
      (long long)(h.last_commit_ms / 1000),
      (long long)(h.last_commit_ms % 1000),
      (unsigned long long)h.consecutive_failures);
  tw_catalog_metrics(tw_api_catalog(r->api), &r->out); /* NULL: nothing */
  if (tw_ha_shared(tw_api_store(r->api)))
    tw_ha_metrics(tw_api_store(r->api), &r->out);
  r->status = 200;
  r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* Media type without parameters, compared case-insensitively. */
static bool valid_idem_key(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n > 128)
    return false;
  for (const char *p = k; *p; p++)
    if (*p < 0x21 || *p > 0x7e)
      return false;
  return true;
}

/* A spec naming secrets is taken with every value given and a key to seal
 * them under; else the problem is answered. */
static bool secrets_ready(struct tw_req *r, const struct tw_job_spec *spec) {
  for (size_t i = 0; i < spec->n_secrets; i++)
    if (!spec->secrets[i].value) {
      tw_problem(r, 400, "invalid-field", "secrets",
                 "secrets.%s: no value; give it at submission (tradewind "
                 "submit --secret %s=VALUE, or --secret %s to take it from "
                 "the environment)",
                 spec->secrets[i].key, spec->secrets[i].key,
                 spec->secrets[i].key);
      return false;
    }
  if (!tw_auth_secrets(r)) {
    tw_problem(r, 400, "invalid-field", "secrets",
               "secrets: this broker keeps no secrets (it has no "
               "secrets.key_file or secrets.key_env to seal them with)");
    return false;
  }
  return true;
}

void tw_h_jobs_create(struct tw_req *r) {
  bool is_json;
  if (!tw_h_placement_media(r, &is_json))
    return;
  const char *key = tw_req_header(r, "Idempotency-Key");
  if (key && !valid_idem_key(key)) {
    tw_problem(r, 400, "invalid-field", "Idempotency-Key",
               "Idempotency-Key: expected 1 to 128 printable characters");
    return;
  }
  struct tw_job_spec spec;
  struct tw_err err = {0};
  struct tw_spec_opts sopts = {.providers = tw_api_provider_names(r->api),
                               .fallbacks = tw_api_fallback_names(r->api),
                               .machine = tw_api_machine(r->api)};
  /* a SkyPilot task is read too, every error of it reported at once */
  struct tw_spec_errs *errs = tw_calloc(1, sizeof *errs);
  if (tw_spec_parse_any(r->body.data ? r->body.data : "", r->body.len, is_json,
                        &sopts, &spec, errs, NULL, &err)) {
    tw_problem_spec_errs(r, &err, errs);
    free(errs);
    return;
  }
  free(errs);
  if (spec.deadline_ms &&
      spec.deadline_ms <= tw_clock_now_ms(tw_api_clock(r->api))) {
    char when[40];
    tw_time_fmt_rfc3339(spec.deadline_ms, when, sizeof when);
    tw_problem(r, 400, "invalid-field", "deadline",
               "deadline: %s is in the past", when);
    tw_spec_release(&spec);
    return;
  }
  if (spec.array && spec.n_secrets) {
    tw_problem(r, 400, "invalid-field", "secrets",
               "secrets: not with array (the tasks are made from the stored "
               "spec, which keeps no values)");
    tw_spec_release(&spec);
    return;
  }
  if (spec.array && spec.workdir) {
    tw_problem(r, 400, "invalid-field", "workdir",
               "workdir: not with array (each task would need to hold it)");
    tw_spec_release(&spec);
    return;
  }
  if (spec.array) { /* one group of tasks (h_workflows.c) */
    tw_h_array_submit(r, &spec);
    tw_spec_release(&spec);
    return;
  }
  /* admission: its own span, under the request's */
  struct tw_span adm;
  tw_span_start(tw_api_tracer(r->api), &adm, "admission", TW_SPAN_INTERNAL,
                r->span ? &r->span->ctx : NULL);
  tw_span_attr_str(&adm, "tradewind.tenant", spec.tenant);
  bool admitted = tw_auth_admit_job(r, &spec); /* tenant scope, quota, budget */
  tw_span_attr_str(&adm, "tradewind.admission",
                   admitted ? "admitted" : "refused");
  if (!admitted) {
    tw_span_attr_int(&adm, "http.response.status_code", r->status);
    tw_span_error(&adm, "refused with %u", r->status);
  }
  tw_span_end(&adm);
  if (!admitted) {
    tw_spec_release(&spec);
    return;
  }
  if (spec.n_secrets && !secrets_ready(r, &spec)) {
    tw_spec_release(&spec);
    return;
  }
  if (!tw_workdir_known(r, &spec)) { /* uploaded to its tenant */
    tw_spec_release(&spec);
    return;
  }
  /* the job's spans (placement, launches, provider calls) join this
   * request's trace: its context is stored with the job */
  char tp[TW_TRACEPARENT_LEN + 1];
  if (r->span && r->span->ctx.valid)
    tw_traceparent_fmt(&r->span->ctx, tp, sizeof tp);
  struct tw_buf canon;
  tw_buf_init(&canon);
  tw_spec_to_json(&spec, &canon);
  /* depends_on: the job is stored waiting on it (store_flow.h) */
  struct tw_flow_plan plan;
  memset(&plan, 0, sizeof plan);
  if (spec.depends_on &&
      tw_flow_plan_from_spec(&spec, canon.data, &plan, &err)) {
    tw_spec_release(&spec);
    tw_buf_release(&canon);
    tw_problem_err(r, &err);
    return;
  }
  struct tw_job_new req = {.name = spec.name,
                           .tenant = spec.tenant,
                           .project = spec.project,
                           .priority = spec.priority,
                           .spec_json = canon.data,
                           .idem_key = key,
                           .traceparent =
                               r->span && r->span->ctx.valid ? tp : NULL,
                           .flow = spec.depends_on ? &plan : NULL};
  struct tw_job_rec job;
  bool replayed = false;
  /* the job, its owner and the audit entry commit together */
  enum tw_rc rc = tw_auth_job_store(r, &req, &job, &replayed, &err);
  tw_buf_release(&canon);
  /* the values, sealed apart from the job (a replay sealed them the first
   * time); until they are, the agent's side answers no register */
  if (rc == TW_OK && !replayed && spec.n_secrets &&
      (rc = tw_secrets_job_put(tw_auth_secrets(r), job.id, spec.secrets,
                               spec.n_secrets, &err))) {
    struct tw_err cerr = {0};
    tw_log_error("api", "request=%s job=%s secrets not sealed: %s",
                 r->request_id, job.id, err.msg);
    struct tw_job_transition t = {.id = job.id,
                                  .to = TW_JOB_CANCELLED,
                                  .reason = "its secrets could not be stored"};
    if (tw_store_job_transition(tw_api_store(r->api), &t, NULL, &cerr))
      tw_log_error("api", "job=%s not cancelled: %s", job.id, cerr.msg);
    tw_job_rec_release(&job);
  }
  if (rc == TW_OK && !replayed)
    tw_workdir_hold(r, job.id, &spec);
  tw_spec_release(&spec);
  tw_flow_plan_release(&plan);
  if (rc) {
    if (rc != TW_E_CONFLICT)
      tw_log_error("api", "request=%s create job failed: %s", r->request_id,
                   err.msg);
    tw_problem_err(r, &err);
    return;
  }
  if (replayed && !tw_auth_may_read_job(r, &job)) {
    /* the key names somebody else's job: neither it nor its id is shown */
    tw_job_rec_release(&job);
    tw_problem(r, 409, "conflict", "Idempotency-Key",
               "Idempotency-Key: already used by a request of another "
               "principal; choose another key");
    return;
  }
  tw_span_attr_str(r->span, "tradewind.job_id", job.id);
  render_job(&r->out, &job);
  char loc[64];
  snprintf(loc, sizeof loc, "/v1/jobs/%s", job.id);
  tw_req_add_header(r, "Location", loc);
  if (replayed)
    tw_req_add_header(r, "Idempotent-Replayed", "true");
  tw_job_rec_release(&job);
  tw_req_json(r, replayed ? 200 : 201);
}

void tw_h_jobs_get(struct tw_req *r) {
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_get(tw_api_store(r->api), r->params[0], &job, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  render_job(&r->out, &job);
  tw_job_rec_release(&job);
  tw_req_json(r, 200);
}

static bool parse_pos_int(const char *s, int64_t *out) {
  if (!s || !*s || strlen(s) > 18)
    return false;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p))
      return false;
  *out = strtoll(s, NULL, 10);
  return *out > 0;
}

void tw_h_jobs_list(struct tw_req *r) {
  struct tw_job_filter f = {.limit = 50};
  const char *state = tw_req_query(r, "state");
  const char *tenant = tw_req_query(r, "tenant");
  const char *limit = tw_req_query(r, "limit");
  const char *cursor = tw_req_query(r, "cursor");
  const char *provider = tw_req_query(r, "provider");
  enum tw_job_state js;
  int64_t v;
  if (state) {
    if (!tw_job_state_parse(state, &js)) {
      tw_problem(r, 400, "invalid-field", "state",
                 "state: unknown job state \"%s\"", state);
      return;
    }
    f.state = state;
  }
  if (tenant && *tenant)
    f.tenant = tenant;
  if (provider && *provider)
    f.provider = provider;
  if (limit) {
    if (!parse_pos_int(limit, &v) || v > 500) {
      tw_problem(r, 400, "invalid-field", "limit",
                 "limit: expected an integer from 1 to 500, got \"%s\"", limit);
      return;
    }
    f.limit = (int)v;
  }
  if (cursor && *cursor) {
    /* the cursor is opaque to clients: "c" + the last seq seen */
    if (cursor[0] != 'c' || !parse_pos_int(cursor + 1, &v)) {
      tw_problem(r, 400, "invalid-field", "cursor",
                 "cursor: not a cursor this server issued");
      return;
    }
    f.before_seq = v;
  }
  struct tw_job_rec *jobs;
  size_t n;
  int64_t next;
  struct tw_err err = {0};
  if (tw_store_job_list(tw_api_store(r->api), &f, &jobs, &n, &next, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      tw_buf_addc(&r->out, ',');
    render_job(&r->out, &jobs[i]);
    tw_job_rec_release(&jobs[i]);
  }
  free(jobs);
  if (next)
    tw_buf_printf(&r->out, "],\"next_cursor\":\"c%lld\"}", (long long)next);
  else
    tw_buf_adds(&r->out, "],\"next_cursor\":null}");
  tw_req_json(r, 200);
}

void tw_h_jobs_cancel(struct tw_req *r) {
  struct tw_job_transition t = {.id = r->params[0],
                                .to = TW_JOB_CANCELLED,
                                .reason = "cancelled by request"};
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_transition(tw_api_store(r->api), &t, &job, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  /* a job cancelled before its agent registered keeps no secrets; one
   * running has its register answer already */
  struct tw_secrets *sec = tw_auth_secrets(r);
  struct tw_err serr = {0};
  if (sec && tw_secrets_job_delete(sec, job.id, &serr))
    tw_log_warn("api", "job=%s secrets not deleted: %s", job.id, serr.msg);
  render_job(&r->out, &job);
  tw_job_rec_release(&job);
  tw_req_json(r, 200);
}

void tw_h_jobs_events(struct tw_req *r) {
  struct tw_job_event *ev;
  size_t n;
  struct tw_err err = {0};
  if (tw_store_job_events(tw_api_store(r->api), r->params[0], &ev, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  tw_buf_adds(&r->out, "{\"items\":[");
  for (size_t i = 0; i < n; i++) {
    char t[40];
    tw_time_fmt_rfc3339(ev[i].at_ms, t, sizeof t);
    tw_buf_printf(&r->out,
                  "%s{\"seq\":%lld,\"at\":\"%s\",\"from\":", i ? "," : "",
                  (long long)ev[i].seq, t);
    if (ev[i].has_from)
      tw_buf_printf(&r->out, "\"%s\"", tw_job_state_str(ev[i].from));
    else
      tw_buf_adds(&r->out, "null");
    tw_buf_printf(&r->out,
                  ",\"to\":\"%s\",\"reason\":", tw_job_state_str(ev[i].to));
    tw_buf_json_str(&r->out, ev[i].reason ? ev[i].reason : "");
    tw_buf_addc(&r->out, '}');
    free(ev[i].reason);
  }
  free(ev);
  tw_buf_adds(&r->out, "]}");
  tw_req_json(r, 200);
}

/* The output of the job's latest attempt that reached a provider, as
 * text/plain from `offset`.  Tradewind-Next-Offset says where to continue,
 * Tradewind-Output-Complete whether more can ever come. */
void tw_h_jobs_logs(struct tw_req *r) {
  int64_t offset = 0, limit = 65536;
  const char *qo = tw_req_query(r, "offset"), *ql = tw_req_query(r, "limit");
  if (qo && strcmp(qo, "0") && !parse_pos_int(qo, &offset)) {
    tw_problem(r, 400, "invalid-field", "offset",
               "offset: expected an integer >= 0, got \"%s\"", qo);
    return;
  }
  if (ql && (!parse_pos_int(ql, &limit) || limit > (1 << 20))) {
    tw_problem(r, 400, "invalid-field", "limit",
               "limit: expected an integer from 1 to 1048576, got \"%s\"", ql);
    return;
  }
  struct tw_job_rec job;
  struct tw_err err = {0};
  if (tw_store_job_get(tw_api_store(r->api), r->params[0], &job, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  bool terminal = tw_job_state_terminal(job.state);
  tw_job_rec_release(&job);
  struct tw_attempt_rec *at = NULL;
  size_t n = 0;
  if (tw_store_attempts_of(tw_api_store(r->api), r->params[0], &at, &n, &err)) {
    tw_problem_err(r, &err);
    return;
  }
  const struct tw_attempt_rec *last = NULL;
  for (size_t i = 0; i < n; i++)
    if (at[i].instance_id[0])
      last = &at[i];
  bool eof = terminal;
  char hdr[32];
  struct tw_store_agent ag;
  bool by_agent = false;
  if (last && tw_store_agent_get(tw_api_store(r->api), last->id, &by_agent,
                                 &ag, &err) == TW_OK &&
      by_agent) {
    /* run by tradewind-agent: its output as the agent sent it */
    const char *qs = tw_req_query(r, "stream");
    if (qs && strcmp(qs, "stdout") && strcmp(qs, "stderr")) {
      free(at);
      tw_problem(r, 400, "invalid-field", "stream",
                 "stream: expected stdout or stderr, got \"%s\"", qs);
      return;
    }
    enum tw_agent_stream stream =
        qs && !strcmp(qs, "stderr") ? TW_AGENT_STDERR : TW_AGENT_STDOUT;
    int64_t total = 0;
    if (tw_store_agent_log_read(tw_api_store(r->api), last->id, stream, offset,
                                (size_t)limit, &r->out, &total, &err)) {
      free(at);
      tw_problem_err(r, &err);
      return;
    }
    eof = (terminal || last->state == TW_ATTEMPT_ENDED) &&
          offset + (int64_t)r->out.len >= total;
    snprintf(hdr, sizeof hdr, "%d", last->n);
    tw_req_add_header(r, "Tradewind-Attempt", hdr);
  } else if (last) {
    struct tw_provider *p = tw_api_provider(r->api, last->provider);
    if (!p) {
      free(at);
      tw_problem(r, 404, "not-found", NULL,
                 "the job ran on %s, which is no longer configured",
                 last->provider);
      return;
    }
    enum tw_rc rc = tw_provider_read_output(p, last->instance_id, offset,
                                            (size_t)limit, &r->out, &eof, &err);
    if (rc) {
      free(at);
      if (rc == TW_E_NOTFOUND)
        tw_problem(r, 404, "not-found", NULL, "no output: %s", err.msg);
      else
        tw_problem_err(r, &err);
      return;
    }
    snprintf(hdr, sizeof hdr, "%d", last->n);
    tw_req_add_header(r, "Tradewind-Attempt", hdr);
  }
  free(at);
  snprintf(hdr, sizeof hdr, "%lld", (long long)(offset + (int64_t)r->out.len));
  tw_req_add_header(r, "Tradewind-Next-Offset", hdr);
  tw_req_add_header(r, "Tradewind-Output-Complete", eof ? "true" : "false");
  r->status = 200;
  r->content_type = "text/plain; charset=utf-8";
}
