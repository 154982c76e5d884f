/* obs.c - what the scheduler shows of itself: its metrics (rendered on
 * /metrics by tw_sched_metrics) and the spans of placements, provider
 * calls and a job's spot and fallback events (docs/observability.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/trace.h"
#include "broker/core/store_obs.h"
#include "broker/sched/sched_int.h"

/* seconds */
static const double BUCKETS_S[SCHED_OBS_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,  0.5,    1,     2.5,  5,     10,  30};
/* queue wait: longer */
static const double WAIT_S[SCHED_OBS_BUCKETS] = {
    0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400};

void sched__obs_init(struct tw_sched *s) {
  pthread_mutex_init(&s->obs.mu, NULL);
}

void sched__obs_release(struct tw_sched *s) {
  pthread_mutex_destroy(&s->obs.mu);
}

static void observe(struct sched_hist *h, const double *bk, double v) {
  size_t b = 0;
  while (b < SCHED_OBS_BUCKETS && v > bk[b])
    b++;
  h->b[b]++;
  h->count++;
  h->sum_s += v;
}

/* The histogram of key in tab (a new one while there is room; the last
 * slot takes the overflow, keyed "other"). */
static struct sched_hist *hist_of(struct sched_hist *tab, size_t *n,
                                  const char *key) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(tab[i].key, key))
      return &tab[i];
  if (*n + 1 < SCHED_OBS_KEYS) {
    snprintf(tab[*n].key, sizeof tab[*n].key, "%s", key);
    return &tab[(*n)++];
  }
  struct sched_hist *o = &tab[SCHED_OBS_KEYS - 1];
  if (*n < SCHED_OBS_KEYS) {
    snprintf(o->key, sizeof o->key, "other");
    (*n)++;
  }
  return o;
}

void sched__obs_pass(struct tw_sched *s, int64_t us) {
  pthread_mutex_lock(&s->obs.mu);
  observe(&s->obs.pass, BUCKETS_S, (double)us / 1e6);
  pthread_mutex_unlock(&s->obs.mu);
}

void sched__obs_wait(struct tw_sched *s, const char *tenant, int64_t ms) {
  pthread_mutex_lock(&s->obs.mu);
  observe(hist_of(s->obs.wait, &s->obs.n_wait, tenant ? tenant : ""), WAIT_S,
          (double)(ms < 0 ? 0 : ms) / 1e3);
  pthread_mutex_unlock(&s->obs.mu);
}

void sched__obs_count(struct tw_sched *s, const char *name,
                      const char *labels) {
  char key[160];
  snprintf(key, sizeof key, "%s{%s}", name, labels ? labels : "");
  pthread_mutex_lock(&s->obs.mu);
  struct sched_obs *o = &s->obs;
  size_t i = 0;
  while (i < o->n_counts && strcmp(o->counts[i].key, key))
    i++;
  if (i == o->n_counts && o->n_counts < SCHED_OBS_KEYS)
    snprintf(o->counts[o->n_counts++].key, sizeof o->counts[0].key, "%s", key);
  if (i < o->n_counts)
    o->counts[i].n++;
  pthread_mutex_unlock(&s->obs.mu);
}

/* The class of an outcome, as operators group them. */
static const char *rc_class(enum tw_rc rc) {
  switch (rc) {
  case TW_OK:
    return "ok";
  case TW_E_CAPACITY:
  case TW_E_QUOTA:
    return "capacity";
  case TW_E_INVALID:
    return "rejected";
  case TW_E_AUTH:
  case TW_E_FORBIDDEN:
    return "auth";
  case TW_E_RETRYABLE:
    return "unavailable";
  default:
    return "failed";
  }
}

void sched__obs_launch(struct tw_sched *s, const char *provider, int64_t us,
                       enum tw_rc rc) {
  char key[96], labels[160];
  snprintf(key, sizeof key, "%s", provider ? provider : "");
  pthread_mutex_lock(&s->obs.mu);
  observe(hist_of(s->obs.launch, &s->obs.n_launch, key), BUCKETS_S,
          (double)us / 1e6);
  pthread_mutex_unlock(&s->obs.mu);
  if (rc != TW_OK) {
    snprintf(labels, sizeof labels, "provider=\"%s\",class=\"%s\"", key,
             rc_class(rc));
    sched__obs_count(s, "tradewind_launch_errors_total", labels);
  }
}

static void render_hist(struct tw_buf *out, const char *name,
                        const char *label, const struct sched_hist *h,
                        const double *bk) {
  char lab[160] = "";
  if (label)
    snprintf(lab, sizeof lab, "%s=\"%s\",", label, h->key);
  uint64_t cum = 0;
  for (size_t b = 0; b <= SCHED_OBS_BUCKETS; b++) {
    cum += h->b[b];
    if (b < SCHED_OBS_BUCKETS)
      tw_buf_printf(out, "%s_bucket{%sle=\"%g\"} %llu\n", name, lab, bk[b],
                    (unsigned long long)cum);
    else
      tw_buf_printf(out, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, lab,
                    (unsigned long long)cum);
  }
  size_t ll = strlen(lab);
  if (ll)
    lab[ll - 1] = '\0'; /* the trailing comma */
  tw_buf_printf(out, "%s_sum%s%s%s %.6f\n", name, ll ? "{" : "", lab,
                ll ? "}" : "", h->sum_s);
  tw_buf_printf(out, "%s_count%s%s%s %llu\n", name, ll ? "{" : "", lab,
                ll ? "}" : "", (unsigned long long)h->count);
}

struct gauges {
  struct tw_buf depth, oldest, spend, live;
  int64_t now_ms;
};

static void on_gauge(void *ctx, const struct tw_tenant_gauge *g) {
  struct gauges *a = ctx;
  tw_buf_printf(&a->depth, "tradewind_queue_depth{tenant=\"%s\"} %lld\n",
                g->tenant, (long long)g->pending);
  tw_buf_printf(&a->oldest,
                "tradewind_queue_oldest_wait_seconds{tenant=\"%s\"} %.3f\n",
                g->tenant,
                g->oldest_pending_ms && a->now_ms > g->oldest_pending_ms
                    ? (double)(a->now_ms - g->oldest_pending_ms) / 1e3
                    : 0.0);
  tw_buf_printf(&a->live, "tradewind_attempts_live{tenant=\"%s\"} %lld\n",
                g->tenant, (long long)g->live_attempts);
  /* micro-USD per hour, printed in USD: exact to the micro-dollar */
  int64_t u = g->spend_uusd_per_hour;
  tw_buf_printf(&a->spend,
                "tradewind_spend_rate_usd_per_hour{tenant=\"%s\"} "
                "%lld.%06lld\n",
                g->tenant, (long long)(u / 1000000),
                (long long)(u % 1000000));
}

static const char *const COUNTER_HELP[][2] = {
    {"tradewind_launch_errors_total",
     "Launch calls a provider refused or left unanswered, by provider and "
     "class (capacity, rejected, auth, unavailable, failed)."},
    {"tradewind_interruptions_total",
     "Spot interruption notices acted on, by provider."},
    {"tradewind_fallbacks_total",
     "Fallback strategy decisions recorded, by strategy and action."},
    {"tradewind_agent_heartbeats_lost_total",
     "Attempts whose agent went silent past agent.heartbeat_timeout_s, by "
     "provider."},
};

void tw_sched_metrics(struct tw_sched *s, struct tw_buf *out) {
  if (!s)
    return;
  struct gauges g = {.now_ms = tw_clock_now_ms(s->clock)};
  tw_buf_init(&g.depth);
  tw_buf_init(&g.oldest);
  tw_buf_init(&g.spend);
  tw_buf_init(&g.live);
  struct tw_err err = {0};
  /* read at most once a TW_STORE_GAUGES_MAX_AGE_MS, however often scraped */
  struct tw_store_gauges sg;
  if (tw_store_gauges(s->store, TW_STORE_GAUGES_MAX_AGE_MS, &sg, &err) ==
      TW_OK) {
    for (size_t i = 0; i < sg.n_tenants; i++)
      on_gauge(&g, &sg.tenants[i]);
    tw_store_gauges_release(&sg);
    tw_buf_printf(out, "# HELP tradewind_queue_depth Jobs pending, by "
                       "tenant.\n# TYPE tradewind_queue_depth gauge\n%s",
                  g.depth.data ? g.depth.data : "");
    tw_buf_printf(out,
                  "# HELP tradewind_queue_oldest_wait_seconds How long the "
                  "oldest pending job of a tenant has waited.\n"
                  "# TYPE tradewind_queue_oldest_wait_seconds gauge\n%s",
                  g.oldest.data ? g.oldest.data : "");
    tw_buf_printf(out,
                  "# HELP tradewind_attempts_live Attempts launching, "
                  "provisioning or running, by tenant.\n"
                  "# TYPE tradewind_attempts_live gauge\n%s",
                  g.live.data ? g.live.data : "");
    tw_buf_printf(out,
                  "# HELP tradewind_spend_rate_usd_per_hour What a tenant's "
                  "live attempts cost per hour at their placed prices.\n"
                  "# TYPE tradewind_spend_rate_usd_per_hour gauge\n%s",
                  g.spend.data ? g.spend.data : "");
  }
  else
    tw_log_warn("sched", "metrics: tenant gauges: %s", err.msg);
  tw_buf_release(&g.depth);
  tw_buf_release(&g.oldest);
  tw_buf_release(&g.spend);
  tw_buf_release(&g.live);

  pthread_mutex_lock(&s->obs.mu);
  struct sched_obs *o = &s->obs;
  tw_buf_adds(out, "# HELP tradewind_scheduler_pass_duration_seconds How "
                   "long one scheduler pass took (place, launch, follow).\n"
                   "# TYPE tradewind_scheduler_pass_duration_seconds "
                   "histogram\n");
  render_hist(out, "tradewind_scheduler_pass_duration_seconds", NULL, &o->pass,
              BUCKETS_S);
  tw_buf_adds(out, "# HELP tradewind_queue_wait_seconds From a job's "
                   "submission to its launch, by tenant.\n"
                   "# TYPE tradewind_queue_wait_seconds histogram\n");
  for (size_t i = 0; i < o->n_wait; i++)
    render_hist(out, "tradewind_queue_wait_seconds", "tenant", &o->wait[i],
                WAIT_S);
  tw_buf_adds(out, "# HELP tradewind_launch_duration_seconds A launch "
                   "call's time on the provider, by provider.\n"
                   "# TYPE tradewind_launch_duration_seconds histogram\n");
  for (size_t i = 0; i < o->n_launch; i++)
    render_hist(out, "tradewind_launch_duration_seconds", "provider",
                &o->launch[i], BUCKETS_S);
  for (size_t h = 0; h < sizeof COUNTER_HELP / sizeof COUNTER_HELP[0]; h++) {
    const char *name = COUNTER_HELP[h][0];
    size_t nl = strlen(name);
    tw_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name,
                  COUNTER_HELP[h][1], name);
    for (size_t i = 0; i < o->n_counts; i++)
      if (!strncmp(o->counts[i].key, name, nl) && o->counts[i].key[nl] == '{')
        tw_buf_printf(out, "%s %llu\n", o->counts[i].key,
                      (unsigned long long)o->counts[i].n);
  }
  pthread_mutex_unlock(&s->obs.mu);
}

/* ---- spans ---------------------------------------------------------------- */

bool sched__obs_job_trace(struct tw_sched *s, const char *job_id,
                          struct tw_trace_ctx *out, char *tp, size_t tpsz) {
  memset(out, 0, sizeof *out);
  if (tpsz)
    tp[0] = '\0';
  if (!s->tracer)
    return false;
  char buf[64];
  struct tw_err err = {0};
  if (tw_store_job_trace(s->store, job_id, buf, sizeof buf, &err) != TW_OK)
    return false;
  if (!tw_traceparent_parse(buf, out))
    return false;
  if (tpsz)
    snprintf(tp, tpsz, "%s", buf);
  return true;
}

static const char *const CALL_OPS[] = {"launch", "describe", "terminate"};

void sched__obs_run_call(struct sched_call *c) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (!c->tracer || !c->trace.valid) {
    c->run(c);
    clock_gettime(CLOCK_MONOTONIC, &b);
    c->took_us = (int64_t)(b.tv_sec - a.tv_sec) * 1000000 +
                 (b.tv_nsec - a.tv_nsec) / 1000;
    return;
  }
  struct tw_span *sp = tw_malloc(sizeof *sp);
  const char *op = (unsigned)c->kind < 3 ? CALL_OPS[c->kind] : "call";
  char name[64];
  snprintf(name, sizeof name, "provider.%s", op);
  tw_span_start(c->tracer, sp, name, TW_SPAN_CLIENT, &c->trace);
  tw_span_attr_str(sp, "tradewind.provider.operation", op);
  /* a launch has its offer; a terminate its attempt's provider */
  tw_span_attr_str(sp, "tradewind.provider",
                   c->o.provider[0] ? c->o.provider : tw_provider_name(c->p));
  tw_span_attr_str(sp, "tradewind.account",
                   c->o.account[0] ? c->o.account : tw_provider_account(c->p));
  if (c->o.region[0])
    tw_span_attr_str(sp, "cloud.region", c->o.region);
  tw_span_attr_str(sp, "tradewind.offer", c->o.id[0] ? c->o.id : c->a.offer_id);
  /* a terminate names its attempt's instance, or (an owed terminate)
   * the first of the instances it gives back */
  const char *res = c->a.instance_id[0] ? c->a.instance_id
                    : c->n_g            ? c->g[0].instance_id
                                        : "";
  if (c->kind == SCHED_CALL_TERMINATE && res[0])
    tw_span_attr_str(sp, "cloud.resource_id", res);
  tw_span_attr_str(sp, "tradewind.job_id",
                   c->job.id[0] ? c->job.id : c->a.job_id);
  tw_span_attr_int(sp, "tradewind.attempt", c->a.n);
  /* the worker's log lines carry the call's span */
  char t[33], s_[17];
  tw_trace_hex(sp->ctx.trace_id, 16, t);
  tw_trace_hex(sp->ctx.span_id, 8, s_);
  tw_log_set_trace(t, s_);
  c->run(c);
  tw_log_set_trace(NULL, NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  c->took_us = (int64_t)(b.tv_sec - a.tv_sec) * 1000000 +
               (b.tv_nsec - a.tv_nsec) / 1000;
  tw_span_attr_str(sp, "tradewind.outcome",
                   c->found ? "found" : tw_rc_str(c->rc));
  tw_span_attr_str(sp, "tradewind.outcome_class", rc_class(c->rc));
  if (c->inst.id[0])
    tw_span_attr_str(sp, "cloud.resource_id", c->inst.id);
  if (c->rc != TW_OK)
    tw_span_error(sp, "%s: %s", tw_rc_str(c->rc), c->err.msg);
  else
    tw_span_ok(sp);
  tw_span_end(sp);
  free(sp);
}

struct tw_span *sched__obs_call_begin(struct tw_sched *s, const char *job_id,
                                      const char *op, struct tw_provider *p,
                                      const char *resource) {
  struct tw_trace_ctx ctx;
  if (!sched__obs_job_trace(s, job_id, &ctx, NULL, 0))
    return NULL;
  struct tw_span *sp = tw_malloc(sizeof *sp);
  char name[64];
  snprintf(name, sizeof name, "provider.%s", op);
  tw_span_start(s->tracer, sp, name, TW_SPAN_CLIENT, &ctx);
  tw_span_attr_str(sp, "tradewind.provider.operation", op);
  tw_span_attr_str(sp, "tradewind.provider", tw_provider_name(p));
  tw_span_attr_str(sp, "tradewind.account", tw_provider_account(p));
  tw_span_attr_str(sp, "tradewind.job_id", job_id);
  if (resource && *resource)
    tw_span_attr_str(sp, "cloud.resource_id", resource);
  return sp;
}

void sched__obs_call_end(struct tw_span *sp, enum tw_rc rc,
                         const struct tw_err *err) {
  if (!sp)
    return;
  tw_span_attr_str(sp, "tradewind.outcome", tw_rc_str(rc));
  tw_span_attr_str(sp, "tradewind.outcome_class", rc_class(rc));
  if (rc != TW_OK)
    tw_span_error(sp, "%s: %s", tw_rc_str(rc), err ? err->msg : "");
  else
    tw_span_ok(sp);
  tw_span_end(sp);
  free(sp);
}

void sched__obs_event(struct tw_sched *s, const char *job_id,
                      const char *name, const char *k1, const char *v1,
                      const char *k2, const char *v2) {
  struct tw_trace_ctx ctx;
  if (!sched__obs_job_trace(s, job_id, &ctx, NULL, 0))
    return;
  struct tw_span *sp = tw_malloc(sizeof *sp);
  tw_span_start(s->tracer, sp, name, TW_SPAN_INTERNAL, &ctx);
  tw_span_attr_str(sp, "tradewind.job_id", job_id);
  if (k1)
    tw_span_attr_str(sp, k1, v1);
  if (k2)
    tw_span_attr_str(sp, k2, v2);
  tw_span_end(sp);
  free(sp);
}
