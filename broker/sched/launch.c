/* launch.c - the launch of one placement: its candidates tried in order
 * (the tenant's share reserved, the attempt opened and stored before the
 * call, a move to the next candidate after a capacity error), the
 * provider call for one attempt (a gang all or nothing, the user data with
 * the checkpoint contract), and the outcome stored: the placement, the
 * attempt kept launching when no answer came, or the attempt closed and
 * the job noted after a definite refusal.  The blocklist learns each outcome.
 * Calls none of the scheduler's other four files (sched_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/ledger/meter.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/sched/blocklist.h"
#include "broker/sched/agent.h"
#include "broker/sched/checkpoint.h"
#include "broker/sched/sched_int.h"
#include "broker/tenancy/tenancy.h"
#include "policies/place/netmatrix.h"
#include "policies/place/policy.h"
#include "providers/provider.h"

int64_t sched__resume_s(struct tw_sched *s, const char *job_id) {
  int64_t kept = 0;
  struct tw_err err = {0};
  if (tw_checkpoint_progress(s->store, job_id, &kept, &err))
    tw_log_warn("spot", "job=%s progress unknown: %s", job_id, err.msg);
  return kept;
}

/* The stored placement of attempt a on o: where, the price, the expected
 * cost, the instance (every node of a gang), why, and the plan behind it
 * (plan_json: the candidates and rejections; NULL: none). */
static void placement_json(struct tw_buf *b, const struct tw_offer *o,
                           const struct tw_attempt_rec *a,
                           const char *instance_id, const char (*gang_ids)[128],
                           size_t n_gang, int64_t cost, const char *explain,
                           const char *plan_json) {
  tw_buf_adds(b, "{\"provider\":");
  tw_buf_json_str(b, o->provider);
  tw_buf_adds(b, ",\"account\":");
  tw_buf_json_str(b, o->account);
  tw_buf_adds(b, ",\"region\":");
  tw_buf_json_str(b, o->region);
  tw_buf_adds(b, ",\"zone\":");
  tw_buf_json_str(b, o->zone);
  tw_buf_adds(b, ",\"instance_type\":");
  tw_buf_json_str(b, o->instance_type);
  tw_buf_printf(b, ",\"market\":\"%s\",\"price_uusd_per_hour\":%lld",
                tw_market_str(o->market), (long long)o->price_uusd_per_hour);
  tw_buf_printf(b,
                ",\"expected_cost_uusd\":%lld,\"attempt\":%d,\"instance_id\":",
                (long long)cost, a->n);
  tw_buf_json_str(b, instance_id);
  if (gang_ids && n_gang > 1) { /* a gang: every node, first = instance_id */
    tw_buf_adds(b, ",\"instance_ids\":[");
    for (size_t k = 0; k < n_gang; k++) {
      if (k)
        tw_buf_addc(b, ',');
      tw_buf_json_str(b, gang_ids[k]);
    }
    tw_buf_addc(b, ']');
  }
  tw_buf_adds(b, ",\"offer_id\":");
  tw_buf_json_str(b, o->id);
  tw_buf_adds(b, ",\"explain\":");
  tw_buf_json_str(b, explain);
  if (plan_json) { /* the candidates and rejections behind it */
    tw_buf_adds(b, ",\"plan\":");
    tw_buf_adds(b, plan_json);
  }
  tw_buf_addc(b, '}');
}

/* Whether spec on the provider account is a gang launched as N instances
 * of one attempt (nodes > 1 on a cloud; a batch provider runs the N nodes
 * as one job of its own). */
static bool is_gang(struct tw_sched *s, const struct tw_job_spec *spec,
                    const char *account) {
  if (spec->nodes <= 1)
    return false;
  struct pcache *pc = sched__provider(s, account);
  /* a batch provider runs the N nodes as one job of its own */
  return !pc || !tw_provider_supports(pc->p, TW_PROV_BATCH);
}

/* The client token of node k (1..N) of a gang attempt: "<token>-<k>". */
static void gang_token(const struct tw_attempt_rec *a, int k, char *out,
                       size_t sz) {
  snprintf(out, sz, "%s-%d", a->client_token, k);
}

/* Launches the N nodes of a gang for attempt a, all or nothing: node k with
 * the client token "<token>-<k>", so a launch resent after a lost answer
 * (or a restart) gets the instances already made.  Each node is stored as
 * soon as it is known, and a node already stored is not launched again.
 * When one node is refused (sched__launch_refused), the nodes already
 * launched are terminated (what a terminate misses, the reconciler ends:
 * their attempt is closed) and the refusal's rc is returned with err set.
 * When a node's outcome is unknown, nothing is given back: the attempt
 * stays launching and the next pass sends the missing nodes again with
 * the same tokens.  ids[k - 1] is node k's instance. */
static enum tw_rc gang_launch(struct tw_store *store, struct tw_provider *p,
                              const struct tw_launch *base,
                              const struct tw_buf *ud_nodes,
                              const struct tw_attempt_rec *a, int nodes,
                              char (*ids)[128], struct tw_err *err) {
  struct tw_attempt_instance *known = NULL;
  size_t n_known = 0;
  struct tw_err kerr = {0};
  if (tw_store_attempt_instances(store, a->id, &known, &n_known, &kerr))
    n_known = 0; /* unreadable: every node is sent again, same tokens */
  for (size_t i = 0; i < n_known; i++)
    if (known[i].k >= 1 && known[i].k <= nodes)
      snprintf(ids[known[i].k - 1], 128, "%s", known[i].instance_id);
  free(known);
  enum tw_rc rc = TW_OK;
  int got = 0;
  for (int k = 1; k <= nodes && rc == TW_OK; k++) {
    if (ids[k - 1][0]) {
      got = k;
      continue;
    }
    char token[64];
    gang_token(a, k, token, sizeof token);
    struct tw_launch req = *base;
    req.client_token = token;
    req.nodes = 1;
    if (ud_nodes) /* its own bootstrap: the node's rank */
      req.user_data = ud_nodes[k - 1].data;
    struct tw_instance inst;
    rc = tw_provider_launch(p, &req, &inst, err);
    if (rc != TW_OK)
      break;
    snprintf(ids[k - 1], 128, "%s", inst.id);
    got = k;
    struct tw_err serr = {0};
    if (tw_store_attempt_instance_put(store, a->id, k, inst.id, "launched",
                                      &serr))
      tw_log_warn("sched",
                  "job=%s attempt=%d node %d launched %s but not recorded: %s",
                  a->job_id, a->n, k, inst.id, serr.msg);
  }
  if (rc == TW_OK)
    return TW_OK;
  if (!sched__launch_refused(rc)) {
    tw_log_info("sched",
                "job=%s attempt=%d gang of %d: node %d unanswered (%s); "
                "kept launching",
                a->job_id, a->n, nodes, got + 1, tw_rc_str(rc));
    return rc;
  }
  for (int k = 1; k <= nodes; k++) {
    if (!ids[k - 1][0])
      continue;
    struct tw_err terr = {0};
    if (tw_provider_terminate(p, ids[k - 1], &terr) == TW_OK)
      tw_store_attempt_instance_put(store, a->id, k, ids[k - 1], "terminated",
                                    &terr);
  }
  tw_log_info("sched",
              "job=%s attempt=%d gang of %d: node %d refused (%s); %d node%s "
              "given back",
              a->job_id, a->n, nodes, got + 1, tw_rc_str(rc), got,
              got == 1 ? "" : "s");
  return rc;
}

/* Terminates every instance of attempt a: its one instance, or each node
 * of its gang (each recorded as terminated).  The first failure is
 * returned; the others are still tried. */
enum tw_rc sched__terminate_all(struct tw_sched *s, struct pcache *pc,
                                const struct tw_attempt_rec *a,
                                struct sched_nodes nd, struct tw_err *err) {
  if (!nd.n && !a->instance_id[0])
    return TW_OK;
  struct tw_span *sp = sched__obs_call_begin(s, a->job_id, "terminate", pc->p,
                                             a->instance_id);
  if (!nd.n) {
    struct tw_err terr = {0};
    enum tw_rc rc = tw_provider_terminate(pc->p, a->instance_id, &terr);
    sched__obs_call_end(sp, rc, &terr);
    if (err)
      *err = terr;
    return rc;
  }
  enum tw_rc first = TW_OK;
  for (size_t i = 0; i < nd.n; i++) {
    if (!strcmp(nd.g[i].state, "terminated"))
      continue;
    struct tw_err terr = {0};
    enum tw_rc rc = tw_provider_terminate(pc->p, nd.g[i].instance_id, &terr);
    if (rc == TW_OK)
      tw_store_attempt_instance_put(s->store, a->id, nd.g[i].k,
                                    nd.g[i].instance_id, "terminated", &terr);
    else if (!first) {
      first = rc;
      if (err)
        *err = terr;
    }
  }
  sched__obs_call_end(sp, first, err);
  return first;
}

/* A launch on o succeeded: the blocklist forgets the failures remembered
 * in its zone (a streak of failures is what escalates). */
static void blocklist_ok(struct tw_sched *s, const struct tw_offer *o,
                         int64_t now) {
  tw_blocklist_report_ok(s->blocklist, o, now);
}

/* A launch on o failed with rc: capacity and quota errors blocklist it. */
static void blocklist_failed(struct tw_sched *s, const struct tw_offer *o,
                             enum tw_rc rc, int64_t now) {
  if (rc != TW_E_CAPACITY && rc != TW_E_QUOTA)
    return;
  enum tw_block_scope w;
  tw_blocklist_report(s->blocklist, o, TW_BLOCK_CAPACITY, now, &w);
  if (w != TW_BLOCK_OFFER)
    tw_log_info("spot",
                "offer=%s %s blocklisted after repeated capacity errors", o->id,
                tw_block_scope_str(w));
}

/* The user data of an attempt of a provider with `agent: true`: the
 * agent's bootstrap (broker/sched/agent.h), the same every time the
 * attempt is launched.  NULL when the provider runs the script itself. */
static const char *agent_user_data(struct tw_sched *s,
                                   const struct tw_job_rec *job,
                                   const struct tw_attempt_rec *a,
                                   const struct tw_offer *o, bool force,
                                   struct tw_buf *out) {
  struct pcache *pc = sched__provider(s, o->account);
  if (!s->agent || !pc || (!force && !tw_provider_agent(pc->p)))
    return NULL;
  struct tw_err err = {0};
  if (tw_agent_user_data(s->agent, job->id, a->id, a->n, a->client_token,
                         tw_provider_name(pc->p), out, &err)) {
    tw_log_error("agent",
                 "job=%s attempt=%d no bootstrap: %s; the script is sent as "
                 "the user data",
                 job->id, a->n, err.msg);
    tw_buf_reset(out);
    return NULL;
  }
  return out->data;
}

/* Whether o's provider runs its attempts under the agent. */
static bool agent_user_data_for(struct tw_sched *s, const struct tw_offer *o) {
  struct pcache *pc = sched__provider(s, o->account);
  return s->agent && pc && tw_provider_agent(pc->p);
}

/* Each node's bootstrap of a gang under the agent: node k (1..nodes) is
 * rank k - 1.  NULL when one cannot be made (the nodes then share the
 * attempt's, and learn no rank). */
static struct tw_buf *gang_user_data(struct tw_sched *s,
                                     const struct tw_job_rec *job,
                                     const struct tw_attempt_rec *a,
                                     const struct tw_offer *o, int nodes) {
  struct pcache *pc = sched__provider(s, o->account);
  struct tw_buf *ud = tw_calloc((size_t)nodes, sizeof *ud);
  for (int k = 0; k < nodes; k++) {
    struct tw_err err = {0};
    tw_buf_init(&ud[k]);
    if (tw_agent_user_data_node(s->agent, job->id, a->id, a->n,
                                a->client_token, tw_provider_name(pc->p), k,
                                &ud[k], &err)) {
      tw_log_error("agent", "job=%s attempt=%d node %d: no bootstrap: %s",
                   job->id, a->n, k, err.msg);
      for (int i = 0; i <= k; i++)
        tw_buf_release(&ud[i]);
      free(ud);
      return NULL;
    }
  }
  return ud;
}

/* The user data of attempt a: the agent's bootstrap on a provider with
 * `agent: true`; else the spec's script, prefixed with the
 * checkpoint contract's environment when the spec has `checkpoint:`
 * (broker/sched/checkpoint.h).  Returns NULL when there is nothing to
 * send, else out->data. */
static const char *user_data(struct tw_sched *s, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_attempt_rec *a,
                             const struct tw_offer *o, struct tw_buf *out) {
  const char *boot = agent_user_data(s, job, a, o, false, out);
  if (boot)
    return boot;
  /* without the agent, setup runs first in the same script; its failure
   * is the script's */
  struct tw_buf both;
  tw_buf_init(&both);
  const char *run = spec->run;
  if (spec->setup) {
    tw_buf_printf(&both, "(\n%s\n) || exit $?\n%s", spec->setup,
                  spec->run ? spec->run : "");
    run = both.data;
  }
  /* a script larger than the provider takes as user data: the agent's
   * bootstrap instead, the script fetched from the broker by the agent */
  struct pcache *lc = sched__provider(s, o->account);
  size_t max = lc ? tw_provider_info(lc->p)->user_data_max : 0;
  if (max && run && strlen(run) > max) {
    boot = agent_user_data(s, job, a, o, true, out);
    if (boot) {
      tw_log_info("agent",
                  "job=%s attempt=%d script of %zu bytes over %s's user data "
                  "limit (%zu): the agent delivers it",
                  job->id, a->n, strlen(run), o->account, max);
      tw_buf_release(&both);
      return boot;
    }
  }
  if (!spec->checkpoint_uri && !spec->checkpoint_interval_s) {
    if (!spec->setup)
      return spec->run;
    tw_buf_adds(out, both.data);
    tw_buf_release(&both);
    return out->data;
  }
  /* resume_s comes from attempts that ended before this one was opened,
   * so it is the same every time this attempt is launched */
  struct pcache *pc = sched__provider(s, o->account);
  struct tw_ckpt_env e = {.job_id = job->id,
                          .attempt = a->n,
                          .uri = spec->checkpoint_uri,
                          .interval_s = spec->checkpoint_interval_s,
                          .resume_s = sched__resume_s(s, job->id),
                          .info = pc ? tw_provider_info(pc->p) : NULL};
  tw_checkpoint_script(&e, run, out);
  tw_buf_release(&both);
  return out->data;
}

/* Stores instance inst as attempt a's on o: the placement, the log line,
 * the audit entry, the blocklist.  An attempt that got its instance
 * meanwhile (the reconciler adopted it) keeps it. */
static void store_launched(struct tw_sched *s, const struct tw_job_rec *job,
                           const struct tw_attempt_rec *a,
                           const struct tw_offer *o, const char *inst_id,
                           const char (*ids)[128], size_t n_ids, int64_t cost,
                           const char *explain, const char *plan_json) {
  struct tw_buf pj;
  tw_buf_init(&pj);
  placement_json(&pj, o, a, inst_id, ids, n_ids, cost, explain, plan_json);
  struct tw_err serr = {0};
  /* the launch and the audit entry that records it: one write */
  char detail[900];
  struct tw_audit_event ev;
  struct tw_store_launched l = {
      .attempt_id = a->id, .instance_id = inst_id, .placement_json = pj.data};
  if (s->tenancy) {
    tw_tenancy_audit_launch_entry(s->tenancy, job, a->n, o, explain, &ev,
                                  detail, sizeof detail, &l.audit_at_ms);
    l.audit = &ev;
  }
  if (tw_store_write(s->store, tw_store_attempt_launched_op, &l, &serr)) {
    tw_log_warn("sched", "job=%s attempt=%d launched %s but not recorded: %s",
                job->id, a->n, inst_id, serr.msg);
    if (s->tenancy) /* the launch happened: audited all the same */
      tw_tenancy_audit_launch(s->tenancy, job, a->n, o, TW_OK, NULL, explain);
  } else {
    tw_log_info("sched", "job=%s attempt=%d offer=%s instance=%s launched",
                job->id, a->n, o->id, inst_id);
  }
  tw_buf_release(&pj);
  blocklist_ok(s, o, tw_clock_now_ms(s->clock));
}

/* What store_launched() does beside the store, for a launch whose worker
 * stored it (launch_store()): the log line and the blocklist. */
static void launched_applied(struct tw_sched *s, const struct sched_call *c) {
  if (c->store_rc) {
    tw_log_warn("sched", "job=%s attempt=%d launched %s but not recorded: %s",
                c->job.id, c->a.n, c->inst.id, c->store_err.msg);
    /* its audit entry went with the write: the launch happened, so it is
     * audited all the same */
    if (c->tenancy)
      tw_tenancy_audit_launch(c->tenancy, &c->job, c->a.n, &c->o, TW_OK, NULL,
                              c->found ? "found by its client token: the "
                                         "launch's answer was lost"
                                       : c->explain);
  } else
    tw_log_info("sched", "job=%s attempt=%d offer=%s instance=%s launched",
                c->job.id, c->a.n, c->o.id, c->inst.id);
  blocklist_ok(s, &c->o, tw_clock_now_ms(s->clock));
}

void sched__launch_found(struct tw_sched *s, const struct tw_job_rec *job,
                         const struct tw_attempt_rec *a,
                         const struct tw_offer *o,
                         const struct tw_instance *inst) {
  store_launched(s, job, a, o, inst->id, NULL, 0, 0,
                 "found by its client token: the launch's answer was lost",
                 NULL);
}

/* A copy of job r that owns its strings. */
static void job_copy(struct tw_job_rec *dst, const struct tw_job_rec *r) {
  *dst = *r;
  dst->name = r->name ? tw_strdup(r->name) : NULL;
  dst->tenant = r->tenant ? tw_strdup(r->tenant) : NULL;
  dst->project = r->project ? tw_strdup(r->project) : NULL;
  dst->reason = tw_strdup(r->reason ? r->reason : "");
  dst->spec_json = r->spec_json ? tw_strdup(r->spec_json) : NULL;
  dst->placement_json = r->placement_json ? tw_strdup(r->placement_json) : NULL;
}

/* On the worker, once c's launch has its instance (launched now, or
 * found by its token): the placement and the launch's audit entry, one
 * write, queued for the store's next group commit without waiting for it
 * (sched__call_storing): the worker goes on to its next call, and the
 * outcomes of all the workers' launches that end during a commit share
 * the next one.  c is done, and applied on the scheduler's thread, only
 * once that write has ended (launch_stored), so nothing goes by the
 * instance before it is durable.  Nothing when c was abandoned: its
 * outcome is then settled by the token later, as any unanswered launch. */
static void launch_call_run(struct sched_call *c);

static void launch_stored(void *ctx, enum tw_rc rc) {
  struct sched_call *c = ctx;
  c->store_rc = rc;
  c->stored = true;
  sched__call_stored(c);
}

static void launch_store(struct sched_call *c) {
  if (sched__call_abandoned(c))
    return;
  const char *explain =
      c->found ? "found by its client token: the launch's answer was lost"
               : c->explain;
  tw_buf_reset(&c->store_pj);
  placement_json(&c->store_pj, &c->o, &c->a, c->inst.id,
                 c->found ? NULL : (const char(*)[128])c->ids,
                 c->found || !c->ids ? 0 : (size_t)c->nodes,
                 c->found ? 0 : c->cost, explain,
                 c->found || !c->first ? NULL : c->plan_json);
  c->store_l = (struct tw_store_launched){.attempt_id = c->a.id,
                                          .instance_id = c->inst.id,
                                          .placement_json = c->store_pj.data};
  if (c->tenancy) {
    tw_tenancy_audit_launch_entry(c->tenancy, &c->job, c->a.n, &c->o, explain,
                                  &c->store_ev, c->store_detail,
                                  sizeof c->store_detail,
                                  &c->store_l.audit_at_ms);
    c->store_l.audit = &c->store_ev;
  }
  memset(&c->store_err, 0, sizeof c->store_err);
  sched__call_storing(c);
  /* queued, c is the writer's to answer: nothing of it written here */
  enum tw_rc rc =
      tw_store_write_async(c->store, tw_store_attempt_launched_op, &c->store_l,
                           &c->store_err, launch_stored, c);
  if (rc) /* the store is closing: done now, unrecorded */
    launch_stored(c, rc);
}

/* On the worker: the provider's calls for one launch call, nothing of the
 * scheduler's touched (a gang's nodes are recorded in the store, which
 * guards itself; so is the launch's outcome, launch_store()). */
static void launch_run(struct sched_call *c) {
  c->rc = TW_E_NOTFOUND;
  c->stored = false;
  launch_call_run(c);
  if (c->rc == TW_OK || c->found)
    launch_store(c);
}

static void launch_call_run(struct sched_call *c) {
  if (c->secrets_undeliverable) {
    c->rc = tw_err_field(&c->err, TW_E_INVALID, "secrets",
                         "secrets: %s runs no tradewind-agent, the only way "
                         "they reach a job (agent: true)",
                         c->o.account);
    return;
  }
  c->rc = TW_E_NOTFOUND;
  if (c->resolve && c->nodes <= 1) {
    c->rc = tw_provider_find_by_token(c->p, c->a.client_token, c->o.region,
                                      &c->inst, &c->err);
    if (c->rc == TW_OK) {
      c->found = true;
      return;
    }
    if (c->rc != TW_E_NOTFOUND)
      return; /* no answer: asked again later */
    memset(&c->err, 0, sizeof c->err);
    if (c->settle_rc) { /* still none, a settle time after the refusal */
      c->rc = tw_err_set(&c->err, c->settle_rc,
                         "refused when sent again with its client token, "
                         "and no instance under that token since");
      return;
    }
  }
  /* definitely none (or a first launch): sent, the same token */
  if (c->nodes > 1) {
    c->ids = tw_calloc((size_t)c->nodes, sizeof *c->ids);
    c->rc =
        gang_launch(c->store, c->p, &c->req, c->ud_nodes, &c->a, c->nodes,
                    c->ids, &c->err);
    if (c->rc == TW_OK)
      snprintf(c->inst.id, sizeof c->inst.id, "%s", c->ids[0]);
  } else {
    c->rc = tw_provider_launch(c->p, &c->req, &c->inst, &c->err);
  }
}

struct sched_call *
sched__launch_call(struct tw_sched *s, const struct tw_job_rec *job,
                   const struct tw_job_spec *spec,
                   const struct tw_attempt_rec *a, const struct tw_offer *o,
                   int64_t cost, const char *explain, const char *plan_json,
                   bool first, bool resolve) {
  struct pcache *pc = sched__provider(s, o->account);
  if (!pc)
    return NULL;
  (void)spec; /* the call takes its own reference on the same spec */
  struct sched_call *c = tw_calloc(1, sizeof *c);
  job_copy(&c->job, job);
  struct tw_err err = {0};
  c->spec = tw_spec_cache_acquire(s->specs, &c->job, &err);
  if (!c->spec) {
    tw_job_rec_release(&c->job);
    free(c);
    return NULL; /* stays launching: settled by its token later */
  }
  const struct tw_job_spec *sp = c->spec;
  c->run = launch_run;
  c->attempt_id = a->id;
  c->p = pc->p;
  c->store = s->store;
  c->tenancy = s->tenancy;
  c->resolve = resolve;
  c->first = first;
  c->a = *a;
  c->o = *o;
  c->cost = cost;
  c->explain = tw_strdup(explain ? explain : "");
  c->plan_json = plan_json ? tw_strdup(plan_json) : NULL;
  tw_buf_init(&c->ud);
  /* the same attempt always gets the same user data (the checkpoint
   * contract's prelude is a function of the attempt), so a launch resent
   * with its client token matches the first one */
  /* traced: the call's span joins the placement's, and the job's
   * environment carries the job's trace context (W3C TRACEPARENT) so what
   * the job itself traces joins it too */
  c->tracer = s->tracer;
  c->trace = s->cur_trace;
  const struct tw_kv *env = sp->env;
  size_t n_env = sp->n_env;
  if (s->cur_traceparent[0]) {
    c->env = tw_calloc(sp->n_env + 1, sizeof *c->env);
    for (size_t i = 0; i < sp->n_env; i++)
      if (strcmp(sp->env[i].key, "TRACEPARENT"))
        c->env[c->n_env++] = sp->env[i]; /* borrowed from the spec */
    c->env[c->n_env].key = (char *)"TRACEPARENT";
    c->env[c->n_env++].value = tw_strdup(s->cur_traceparent);
    env = c->env;
    n_env = c->n_env;
  }
  c->req = (struct tw_launch){
      .offer = &c->o,
      .client_token = c->a.client_token,
      .job_id = c->job.id,
      .attempt_id = c->a.client_token,
      .tenant = c->job.tenant,
      .max_price_uusd_per_hour = sp->max_price_uusd_per_hour,
      .user_data = user_data(s, &c->job, sp, &c->a, &c->o, &c->ud),
      .image = sp->image,
      .disk_size_gb = sp->disk_size_gb,
      .disk_type = sp->disk_type,
      .ports = sp->ports,
      .n_ports = sp->n_ports,
      .duration_s = sp->duration_s,
      .nodes = sp->nodes,
      .env = env,
      .n_env = n_env};
  c->nodes = is_gang(s, sp, o->account) ? sp->nodes : 1;
  c->secrets_undeliverable = sp->n_secrets && !agent_user_data_for(s, o);
  if (c->nodes > 1 && c->ud.len && agent_user_data_for(s, o))
    c->ud_nodes = gang_user_data(s, &c->job, &c->a, o, c->nodes);
  return c;
}

void sched__call_free(struct tw_sched *s, struct sched_call *c) {
  if (!c)
    return;
  if (c->ud_nodes) {
    for (int k = 0; k < c->nodes; k++)
      tw_buf_release(&c->ud_nodes[k]);
    free(c->ud_nodes);
  }
  if (c->spec)
    sched__spec_release(s, c->spec);
  tw_job_rec_release(&c->job);
  free(c->explain);
  free(c->plan_json);
  free(c->ids);
  free(c->g);
  free(c->g_rc);
  free(c->batch);
  free(c->b_inst);
  free(c->b_rc);
  tw_buf_release(&c->ud);
  tw_buf_release(&c->store_pj);
  tw_event_list_release(&c->ev);
  tw_policy_set_unref(c->set);
  if (c->env)
    free(c->env[c->n_env - 1].value); /* TRACEPARENT's; the rest borrowed */
  free(c->env);
  free(c);
}

static void meter_data_moved(struct tw_sched *s, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_attempt_rec *a,
                             const struct tw_offer *o,
                             const struct tw_netmatrix *net, int64_t now);

enum sched_launch_outcome sched__launch_apply(struct tw_sched *s,
                                              struct sched_call *c,
                                              bool timed_out,
                                              enum tw_rc *rc_out) {
  const struct tw_job_rec *job = &c->job;
  const struct tw_attempt_rec *a = &c->a;
  const struct tw_offer *o = &c->o;
  /* A call past its deadline is still running on its worker, which writes
   * rc, err, inst and found: read none of them. */
  struct tw_err err = {0};
  enum tw_rc rc;
  if (timed_out) {
    rc = tw_err_set(&err, TW_E_RETRYABLE,
                    "no answer within the call's deadline of %lld ms",
                    (long long)tw_provider_call_deadline_ms(c->p));
  } else {
    err = c->err;
    rc = c->rc;
  }
  if (rc_out)
    *rc_out = rc;
  if (!timed_out)
    sched__obs_launch(s, o->provider, c->took_us, c->found ? TW_OK : rc);
  if (!timed_out && c->found) {
    tw_log_info("sched",
                "job=%s attempt=%d token=%s found instance %s (%s): its "
                "launch's answer was lost",
                job->id, a->n, a->client_token, c->inst.id,
                c->inst.provider_state);
    if (c->stored)
      launched_applied(s, c);
    else
      sched__launch_found(s, job, a, o, &c->inst);
    return SCHED_LAUNCH_OK;
  }
  if (rc == TW_OK) {
    if (c->stored)
      launched_applied(s, c);
    else
      store_launched(s, job, a, o, c->inst.id, (const char(*)[128])c->ids,
                     c->ids ? (size_t)c->nodes : 0, c->cost, c->explain,
                     c->first ? c->plan_json : NULL);
    if (c->first && c->spec)
      meter_data_moved(s, job, c->spec, a, o, c->set ? c->set->net : NULL,
                       tw_clock_now_ms(s->clock));
    if (c->first)
      sched__obs_wait(s, job->tenant,
                      tw_clock_now_ms(s->clock) - job->created_ms);
    return SCHED_LAUNCH_OK;
  }
  struct tw_err serr = {0};
  char note[768];
  if (!sched__launch_refused(rc)) {
    /* A timeout, a lost connection, throttling after every try, a call
     * past its deadline: the cloud may have made the instance.  The
     * attempt stays launching with its token, and follow.c asks the
     * cloud for it until it answers. */
    tw_log_info("sched",
                "job=%s attempt=%d offer=%s launch unanswered (%s): %s; "
                "kept launching",
                job->id, a->n, o->id, tw_rc_str(rc), err.msg);
    if (c->first) {
      snprintf(note, sizeof note,
               "launch on %s unanswered (%s%s%s): %s; asking the provider "
               "for its token %s",
               o->id, tw_rc_str(rc), err.detail[0] ? " " : "", err.detail,
               err.msg, a->client_token);
      tw_store_job_note(s->store, job->id, note, &serr);
    }
    return SCHED_LAUNCH_UNKNOWN;
  }
  /* The resend of a launch whose first send went unanswered: that send
   * may still be in the cloud's queue (a slow or stopped endpoint serves
   * a later connection first) and make an instance under this token after
   * this refusal.  Unless the instance was adopted meanwhile, the attempt
   * stays launching and its token is asked for again a settle time later;
   * only none then closes it (follow.c). */
  bool adopted = false;
  if (c->resolve && !c->settle_rc && c->nodes <= 1) {
    struct tw_attempt_rec cur;
    bool have = false;
    adopted = tw_store_attempts_by_id(s->store, &a->id, 1, &cur, &have,
                                      &serr) == TW_OK &&
              have && cur.state != TW_ATTEMPT_LAUNCHING;
    if (!adopted) {
      tw_log_info("sched",
                  "job=%s attempt=%d offer=%s launch refused (%s) when sent "
                  "again after no answer: %s; its token asked for again "
                  "before the attempt ends",
                  job->id, a->n, o->id, tw_rc_str(rc), err.msg);
      return SCHED_LAUNCH_SETTLE;
    }
  }
  /* capacity: that offer is full now; rejected: that offer refuses this
   * request (an image missing in that region, say), so both are avoided
   * for this job; failed: nothing wrong with the offer (auth) */
  const char *end = rc == TW_E_CAPACITY || rc == TW_E_QUOTA ? "capacity"
                    : rc == TW_E_INVALID                    ? "rejected"
                                                            : "failed";
  struct tw_attempt_close cl = {.attempt_id = a->id,
                                .end_reason = end,
                                .job_to = TW_JOB_NSTATES,
                                .only_launching = true};
  if (adopted || tw_store_attempt_close(s->store, &cl, &serr) == TW_E_CONFLICT) {
    /* An earlier try's instance was adopted meanwhile (the reconciler):
     * that instance is the attempt's, and this late refusal changes
     * nothing. */
    tw_log_info("sched",
                "job=%s attempt=%d launch refused (%s) after its instance "
                "was adopted; ignored",
                job->id, a->n, tw_rc_str(rc));
    return SCHED_LAUNCH_OK;
  }
  blocklist_failed(s, o, rc, tw_clock_now_ms(s->clock));
  if (s->tenancy)
    tw_tenancy_audit_launch(s->tenancy, job, a->n, o, rc, err.msg, c->explain);
  snprintf(note, sizeof note, "launch on %s refused (%s%s%s): %s", o->id,
           tw_rc_str(rc), err.detail[0] ? " " : "", err.detail, err.msg);
  tw_store_job_note(s->store, job->id, note, &serr);
  return SCHED_LAUNCH_REFUSED;
}

/* The datasets a launch makes move: each dataset that lives elsewhere than
 * the offer's region is read from there, so its bytes leave that region
 * once for this attempt and are metered as egress at the network matrix's
 * price (the one placement's cost model used).  Links the matrix prices
 * at zero (within a region) are not billed.  Shared replicas decided by
 * placement are not moved by the broker and not metered here. */
static void meter_data_moved(struct tw_sched *s, const struct tw_job_rec *job,
                             const struct tw_job_spec *spec,
                             const struct tw_attempt_rec *a,
                             const struct tw_offer *o,
                             const struct tw_netmatrix *net, int64_t now) {
  if (!s->meter || !net)
    return;
  char dst[2 * TW_MODEL_NAME_MAX + 2];
  snprintf(dst, sizeof dst, "%s:%s", o->provider, o->region);
  for (size_t i = 0; i < spec->n_datasets; i++) {
    const struct tw_dataset_ref *d = &spec->datasets[i];
    const char *colon = d->location ? strchr(d->location, ':') : NULL;
    if (!colon || d->size_bytes <= 0 || !strcmp(d->location, dst))
      continue;
    struct tw_net_link l;
    tw_netmatrix_link(net, d->location, dst, &l);
    if (l.egress_uusd_per_gb <= 0)
      continue;
    char src_provider[TW_MODEL_NAME_MAX];
    snprintf(src_provider, sizeof src_provider, "%.*s",
             (int)(colon - d->location), d->location);
    struct tw_meter_egress e = {.tenant = job->tenant,
                                .project = job->project,
                                .job_id = job->id,
                                .attempt_id = a->id,
                                .provider = src_provider,
                                .account = src_provider,
                                .region = colon + 1,
                                .dest_region = o->region,
                                .bytes = d->size_bytes,
                                .price_uusd_per_gb = l.egress_uusd_per_gb,
                                .at_ms = now};
    struct tw_err err = {0};
    if (tw_meter_egress(s->meter, &e, NULL, &err))
      tw_log_warn("billing", "job=%s dataset=%s egress not metered: %s",
                  job->id, d->uri, err.msg);
  }
}

void sched__launch_best(struct tw_sched *s, const struct tw_job_rec *job,
                        const struct tw_job_spec *spec,
                        const struct tw_plan *pl, const char *explain,
                        const char *plan_json, struct tw_policy_set *set,
                        int64_t now, struct sched_launched *out) {
  (void)now;
  memset(out, 0, sizeof *out);
  bool full = false;
  /* The best candidate whose account takes a call now is launched: the
   * call goes to that account's workers and its outcome is applied when
   * collected (loop.c); a refusal there places the job again, on its next
   * candidate.  A full pool is skipped, so a slow cloud does not hold
   * back jobs another one can take. */
  for (size_t i = 0; i < pl->n; i++) {
    const struct tw_offer *o = pl->cands[i].offer;
    struct pcache *pc = sched__provider(s, o->account);
    if (!pc)
      continue;
    if (!sched__call_room(s, pc)) {
      full = true;
      continue;
    }
    char why[1100];
    char cost[32];
    tw_policy_fmt_uusd(pl->cands[i].cost.total_uusd, cost, sizeof cost);
    snprintf(why, sizeof why, "%s %s, expected %s (%s)",
             i ? "next best offer" : "best offer", o->id, cost, explain);
    struct tw_attempt_new an = {.job_id = job->id,
                                .provider = o->account,
                                .offer_id = o->id,
                                .market = tw_market_str(o->market),
                                .price_uusd_per_hour = o->price_uusd_per_hour,
                                .reason = why};
    struct tw_attempt_rec a;
    struct tw_err aerr = {0};
    bool batched = s->batch_opens && o->capacity < 0;
    struct tw_store_resv resv;
    if (s->tenancy && batched) /* its row stored with the attempt's open */
      tw_tenancy_place_hold(s->tenancy, job, spec, o, &resv);
    else if (s->tenancy) /* the job's share, held while its attempt lives */
      tw_tenancy_place_commit(s->tenancy, job, spec, o);
    if (batched) {
      /* the queue's pass: opened with the others at its end, in one
       * transaction, and sent then (sched__launch_flush); a cloud offer
       * only, so no private capacity is taken for an open that fails */
      if (s->n_opens == s->cap_opens) {
        s->cap_opens = s->cap_opens ? s->cap_opens * 2 : 64;
        s->opens = tw_realloc(s->opens, s->cap_opens * sizeof *s->opens);
      }
      struct sched_open *e = &s->opens[s->n_opens++];
      *e = (struct sched_open){.job = job,
                               .o = *o,
                               .why = tw_strdup(why),
                               .explain = tw_strdup(explain ? explain : ""),
                               .plan_json =
                                   plan_json ? tw_strdup(plan_json) : NULL,
                               .cost = pl->cands[i].cost.total_uusd,
                               .set = set ? tw_policy_set_ref(set) : NULL,
                               .trace = s->cur_trace,
                               .has_resv = s->tenancy != NULL};
      if (e->has_resv)
        e->resv = resv;
      snprintf(e->traceparent, sizeof e->traceparent, "%s",
               s->cur_traceparent);
      pc->deferred++;
      out->opened = true;
      out->changes++;
      out->unknown = true;
      out->inflight = true;
      out->offer = o;
      break;
    }
    if (tw_store_attempt_open(s->store, &an, &a, &aerr)) {
      /* cancelled meanwhile, most likely */
      break;
    }
    out->opened = true;
    out->changes++;
    out->unknown = true; /* launching until its outcome is collected */
    out->offer = o;
    struct sched_call *c =
        sched__launch_call(s, job, spec, &a, o, pl->cands[i].cost.total_uusd,
                           explain, plan_json, true, false);
    if (c) {
      c->set = set ? tw_policy_set_ref(set) : NULL;
      if (sched__call_submit(s, pc, c))
        out->inflight = true;
      else
        sched__call_free(s, c); /* stopping: the next start sends it */
    }
    break;
  }
  if (!out->opened && full)
    s->no_room++;
}

int sched__launch_flush(struct tw_sched *s) {
  size_t n = s->n_opens, nd = s->n_decs;
  if (!n && !nd)
    return 0;
  struct tw_attempt_new *an = tw_calloc(n ? n : 1, sizeof *an);
  struct tw_attempt_rec *a = tw_calloc(n ? n : 1, sizeof *a);
  struct tw_store_attempt_open *ao = tw_calloc(n ? n : 1, sizeof *ao);
  struct tw_store_resv_put *rp = tw_calloc(n ? n : 1, sizeof *rp);
  struct tw_store_decision_add *da = tw_calloc(nd ? nd : 1, sizeof *da);
  /* the pass's decisions, then each attempt's reservation and open: one
   * transaction (tw_store_write_ops), in the order they were made */
  struct tw_store_op *ops = tw_calloc(nd + 2 * n, sizeof *ops);
  enum tw_rc *orc = tw_calloc(nd + 2 * n, sizeof *orc);
  struct tw_err *oerr = tw_calloc(nd + 2 * n, sizeof *oerr);
  size_t n_ops = 0;
  for (size_t i = 0; i < nd; i++) {
    da[i].d = &s->decs[i];
    ops[n_ops++] = (struct tw_store_op){tw_store_ckpt_decision_add_op, &da[i]};
  }
  size_t *open_at = tw_calloc(n ? n : 1, sizeof *open_at);
  for (size_t i = 0; i < n; i++) {
    const struct sched_open *e = &s->opens[i];
    an[i] = (struct tw_attempt_new){.job_id = e->job->id,
                                    .provider = e->o.account,
                                    .offer_id = e->o.id,
                                    .market = tw_market_str(e->o.market),
                                    .price_uusd_per_hour =
                                        e->o.price_uusd_per_hour,
                                    .reason = e->why};
    if (e->has_resv) {
      rp[i] = (struct tw_store_resv_put){.v = &e->resv, .offer_id = e->o.id};
      ops[n_ops++] = (struct tw_store_op){tw_store_reservation_put_op, &rp[i]};
    }
    ao[i] = (struct tw_store_attempt_open){.req = &an[i], .out = &a[i]};
    open_at[i] = n_ops;
    ops[n_ops++] = (struct tw_store_op){tw_store_attempt_open_op, &ao[i]};
  }
  /* the attempts stored before their launches, all in one transaction */
  tw_store_write_ops(s->store, ops, n_ops, orc, oerr);
  size_t k = 0;
  for (size_t i = 0; i < nd; i++, k++) {
    if (orc[k])
      tw_log_warn("spot", "job=%s decision not recorded: %s", s->decs[i].job_id,
                  oerr[k].msg);
    else {
      /* logged after the placement span ended: with its trace ids */
      const struct sched_dec_trace *dt = &s->dec_trace[i];
      tw_log_set_trace(dt->trace[0] ? dt->trace : NULL, dt->span);
      sched__fallback_recorded(s, &s->decs[i], da[i].added);
      tw_log_set_trace(NULL, NULL);
    }
  }
  s->n_decs = 0;
  enum tw_rc *rc = tw_calloc(n ? n : 1, sizeof *rc);
  struct tw_err *err = tw_calloc(n ? n : 1, sizeof *err);
  for (size_t i = 0; i < n; i++) {
    const struct sched_open *e = &s->opens[i];
    if (e->has_resv && orc[open_at[i] - 1])
      tw_log_warn("tenancy", "job=%s reservation not stored: %s", e->job->id,
                  oerr[open_at[i] - 1].msg);
    rc[i] = orc[open_at[i]];
    err[i] = oerr[open_at[i]];
  }
  free(open_at);
  free(ops);
  free(orc);
  free(oerr);
  free(ao);
  free(rp);
  free(da);
  int sent = 0;
  for (size_t i = 0; i < n; i++) {
    struct sched_open *e = &s->opens[i];
    struct pcache *pc = sched__provider(s, e->o.account);
    if (pc && pc->deferred)
      pc->deferred--;
    if (rc[i]) {
      tw_log_info("sched", "job=%s attempt not opened: %s", e->job->id,
                  err[i].msg); /* cancelled meanwhile, most likely */
    } else if (pc) {
      /* the placement's span and trace context, for the call's span */
      s->cur_trace = e->trace;
      snprintf(s->cur_traceparent, sizeof s->cur_traceparent, "%s",
               e->traceparent);
      struct sched_call *c =
          sched__launch_call(s, e->job, NULL, &a[i], &e->o, e->cost,
                             e->explain, e->plan_json, true, false);
      if (c) {
        c->set = e->set;
        e->set = NULL;
        if (sched__call_submit(s, pc, c))
          sent++;
        else
          sched__call_free(s, c); /* stopping: the next start sends it */
      }
      memset(&s->cur_trace, 0, sizeof s->cur_trace);
      s->cur_traceparent[0] = '\0';
    }
    free(e->why);
    free(e->explain);
    free(e->plan_json);
    tw_policy_set_unref(e->set);
  }
  s->n_opens = 0;
  free(an);
  free(a);
  free(rc);
  free(err);
  return sent;
}
