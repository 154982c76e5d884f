/* daemon.c - the daemon's wiring (daemon.h). */
#include "broker/daemon.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/auth_daemon.h"
#include "billing/catalog/catalog.h"
#include "billing/ledger/meter.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/base/trace.h"
#include "broker/core/config.h"
#include "broker/core/spec.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"
#include "broker/core/store_ha.h"
#include "broker/core/store_obs.h"
#include "broker/sched/agent.h"
#include "broker/sched/blocklist.h"
#include "broker/sched/reconcile.h"
#include "broker/sched/sched.h"
#include "broker/tenancy/audit.h"
#include "broker/tenancy/secrets.h"
#include "broker/tenancy/tenancy.h"
#include "policies/fallback/fallback_strategy.h"
#include "policies/place/placer.h"
#include "providers/otlp_send.h"
#include "providers/provider.h"

/* The meter's prices in force: the configured providers' offers in the
 * catalog's current snapshot (billing/ledger/meter.h,
 * billing/catalog/catalog.h), so the meter charges what placement saw
 * without listing offers again. */
struct meter_src {
  struct tw_provider **p;
  size_t n;
  struct tw_catalog *cat;
};

struct tw_daemon {
  char *config_path;
  char *listen_override, *db_override; /* NULL: the file's */
  const struct tw_provider_ops *const *adapters;
  size_t abandoned;   /* calls left running by the drain (tw_sched_drain) */
  char cfg_dir[1024]; /* relative paths of the config are read from here */
  char host[256];     /* of the API, as configured */
  char url[300];
  struct tw_cfg *cfg; /* in force; swapped by a reload */
  /* the config's machine: allow-list, read at start (not reloaded) */
  struct tw_spec_machine machine;

  struct tw_placer *placer;
  struct tw_store *store;
  struct tw_spec_cache *specs; /* for the scheduler, reconciler and meter */
  struct meter_src msrc;
  struct tw_meter *meter;
  struct tw_secrets *secrets; /* until the tenancy takes them over */
  struct tw_provider **provs;
  size_t n_prov;
  struct tw_catalog *cat;
  struct tw_auth_daemon *sec;
  struct tw_fallback_cfg fb;   /* read by the scheduler */
  struct tw_blocklist_opts bo; /* read by the scheduler */
  struct tw_agent *agent; /* tradewind-agent's side (broker/sched/agent.h) */
  struct tw_sched *sched;
  struct tw_reconcile *rec;
  struct tw_api *api;
  struct tw_tracer *tracer; /* otel: (docs/observability.md); NULL: off */
  struct tw_otlp_sender *otlp;
  struct daemon_ha *ha; /* store.backend postgres: the lease; NULL sqlite */
};

/* ---- the leader lease (docs/ha.md) ---------------------------------------
 *
 * On PostgreSQL several brokers share the store; every one serves the API
 * and the holder of the lease leads: it alone runs the scheduler (and the
 * monitor in it), the reconciler, the meter and the tenancy ticks.  A
 * follower tries to take the lease every renew_ms; once it has it, it
 * fences its store at the new epoch (a write of a stale epoch is refused
 * whole, broker/core/store_ha.h), reconciles every provider, and only then
 * starts the loops that launch.  A leader renews every renew_ms; one that
 * finds the lease gone, or cannot renew it within the lease, has lost it
 * and stops at once (exit 3): its loops may be mid-call, and a fresh start
 * as a follower is the one state known to be right.  Its supervisor
 * restarts it (systemd Restart=, packaging/tradewindd.service).  A renewal
 * can hang rather than fail (the database behind a partition that drops
 * packets: the statement waits in a socket nobody reads), so a watchdog
 * thread of its own stops the leader too once its last renewal is that
 * old, whatever the lease thread is waiting for.  Starting to lead (the
 * reconciler's pass over every provider first) runs on a thread of its
 * own, so the renewals go on meanwhile however long that pass takes. */
struct daemon_ha {
  struct tw_daemon *d;
  char name[128];
  int64_t renew_ms, lease_ms;
  pthread_t th, wd, lead;
  bool started, wd_started, lead_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stopping;
  int64_t epoch;      /* > 0 leading at it; under mu */
  int64_t renewed_ms; /* the last renewal that held, real clock */
  int64_t started_ms;
};

static void meter_offers(void *ctx, struct tw_offer_list *out) {
  struct meter_src *src = ctx;
  if (!src->cat || !src->n)
    return;
  const char **accounts = tw_calloc(src->n, sizeof *accounts);
  for (size_t i = 0; i < src->n; i++)
    accounts[i] = tw_provider_account(src->p[i]);
  struct tw_cat_snap *snap = tw_catalog_acquire(src->cat);
  tw_cat_snap_offers_of(snap, accounts, src->n, out);
  tw_cat_snap_release(snap);
  free(accounts);
}

/* The reconciler's actions go to the audit log too
 * (broker/sched/reconcile.h). */
static void reconcile_audit(void *ctx, const struct tw_reconcile_action *a) {
  struct tw_daemon *d = ctx;
  char action[40], detail[400];
  snprintf(action, sizeof action, "reconcile.%s", a->action);
  snprintf(detail, sizeof detail, "provider=%s job=%s attempt=%s: %s",
           a->provider, a->job_id, a->attempt, a->reason);
  struct tw_audit_event ev = {.principal = "reconcile",
                              .tenant = "",
                              .action = action,
                              .object = a->instance_id,
                              .outcome = "ok",
                              .request_id = "",
                              .detail = detail};
  struct tw_err err = {0};
  if (tw_audit_append(tw_tenancy_audit(d->sec->tenancy), &ev, NULL, &err))
    tw_log_warn("reconcile", "instance=%s not audited: %s", a->instance_id,
                err.msg);
  /* and a span: under the job's trace when it has one, else its own */
  if (!d->tracer)
    return;
  struct tw_trace_ctx parent = {0};
  char tp[64];
  if (a->job_id[0] &&
      tw_store_job_trace(d->store, a->job_id, tp, sizeof tp, &err) == TW_OK)
    tw_traceparent_parse(tp, &parent);
  struct tw_span *sp = tw_malloc(sizeof *sp);
  tw_span_start(d->tracer, sp, action, TW_SPAN_INTERNAL, &parent);
  tw_span_attr_str(sp, "tradewind.provider", a->provider);
  tw_span_attr_str(sp, "tradewind.job_id", a->job_id);
  tw_span_attr_str(sp, "tradewind.instance", a->instance_id);
  tw_span_attr_str(sp, "tradewind.reconcile.reason", a->reason);
  tw_span_end(sp);
  free(sp);
}

/* /metrics beyond the server's own: the scheduler's and the tracer's. */
static void daemon_metrics(void *ctx, struct tw_buf *out) {
  struct tw_daemon *d = ctx;
  tw_sched_metrics(d->sched, out);
  if (d->tracer)
    tw_tracer_metrics(d->tracer, out);
}

/* otel: (docs/observability.md): the tracer and its transport, when an
 * endpoint is configured. */
static enum tw_rc open_tracer(struct tw_daemon *d, struct tw_err *err) {
  const struct tw_cfg *cfg = d->cfg;
  if (!cfg->otel_endpoint || !*cfg->otel_endpoint)
    return TW_OK;
  const struct tw_node *h = cfg->otel_headers;
  size_t nh = h && h->kind == TW_NODE_MAP ? h->n : 0;
  char **lines = tw_calloc(nh + 1, sizeof *lines);
  enum tw_rc rc = TW_OK;
  for (size_t i = 0; i < nh; i++) {
    const struct tw_node *v = h->items[i];
    if (v->kind != TW_NODE_SCALAR || !*h->keys[i] ||
        strpbrk(h->keys[i], ": \t\r\n") || strpbrk(v->str, "\r\n")) {
      rc = tw_err_field(err, TW_E_INVALID, "otel.headers",
                        "otel.headers.%.64s: expected a header name and a "
                        "one-line string value",
                        h->keys[i]);
      goto out;
    }
    size_t n = strlen(h->keys[i]) + strlen(v->str) + 3;
    lines[i] = tw_malloc(n);
    snprintf(lines[i], n, "%s: %s", h->keys[i], v->str);
  }
  if ((rc = tw_otlp_sender_new(10000, &d->otlp, err)))
    goto out;
  struct tw_tracer_opts to = {.endpoint = cfg->otel_endpoint,
                              .service_name = cfg->otel_service_name,
                              .sampling = cfg->otel_sampling_ratio,
                              .headers = (const char *const *)lines,
                              .queue_max = (size_t)cfg->otel_queue_max,
                              .batch_max = (size_t)cfg->otel_batch_max,
                              .flush_ms = cfg->otel_flush_ms,
                              .send = tw_otlp_send,
                              .send_ctx = d->otlp};
  if ((rc = tw_tracer_new(&to, &d->tracer, err)))
    goto out;
  char shown[512];
  snprintf(shown, sizeof shown, "%s", cfg->otel_endpoint);
  tw_trace_url_redact(shown);
  tw_log_info("trace", "exporting spans to %s (sampling %s)", shown,
              cfg->otel_sampling);
out:
  for (size_t i = 0; i < nh; i++)
    free(lines[i]);
  free(lines);
  return rc;
}

/* The first line of file (relative to dir unless absolute) into out:
 * store.password_file.  The text is never logged; an error names the
 * file only. */
static enum tw_rc read_password(const char *dir, const char *file, char *out,
                                size_t outsz, struct tw_err *err) {
  char p[2048];
  if (file[0] == '/')
    snprintf(p, sizeof p, "%s", file);
  else
    snprintf(p, sizeof p, "%s/%s", dir, file);
  FILE *f = fopen(p, "r");
  if (!f)
    return tw_err_field(err, TW_E_INVALID, "store.password_file",
                        "store.password_file: cannot read %s", p);
  out[0] = 0;
  if (!fgets(out, (int)outsz, f))
    out[0] = 0;
  fclose(f);
  size_t n = strlen(out);
  while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
    out[--n] = 0;
  if (!n)
    return tw_err_field(err, TW_E_INVALID, "store.password_file",
                        "store.password_file: %s is empty", p);
  return TW_OK;
}

/* The directory of the config file: relative paths in it (the network
 * matrix, score plugins) are read from there. */
static void config_dir(const char *path, char *out, size_t outsz) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(out, outsz, ".");
  else
    snprintf(out, outsz, "%.*s", (int)(slash - path > 0 ? slash - path : 1),
             path);
}

/* Loads the config, spot.fallback checked against the fallback table's
 * names (the core cannot see the table: struct tw_cfg_load_opts). */
static enum tw_rc load_cfg(const char *path, struct tw_cfg **out,
                           struct tw_err *err) {
  const char *fallbacks[TW_FALLBACK_COUNT + 1];
  tw_fallback_names(fallbacks, TW_FALLBACK_COUNT + 1);
  struct tw_cfg_load_opts lo = {.fallbacks = fallbacks};
  return tw_cfg_load_file_opts(path, &lo, out, err);
}

static void apply_log(const struct tw_cfg *c) {
  enum tw_log_format f = TW_LOG_TEXT;
  if (c->log_format && tw_log_format_parse(c->log_format, &f))
    tw_log_set_format(f);
  tw_log_set_level(c->log_level);
  tw_log_set_debug(c->log_debug);
}

/* Command-line values win over the file's, at start and on every reload. */
static void apply_overrides(const struct tw_daemon *d, struct tw_cfg *c) {
  if (d->listen_override) {
    free(c->listen);
    c->listen = tw_strdup(d->listen_override);
  }
  if (d->db_override) {
    free(c->db);
    c->db = tw_strdup(d->db_override);
  }
}

/* Providers: each section of `providers:` becomes an adapter, its sealed
 * credentials opened through the secrets.  init does no network I/O, so
 * the daemon starts while a cloud is down. */
static enum tw_rc open_providers(struct tw_daemon *d, struct tw_err *err) {
  const struct tw_node *list = d->cfg->providers;
  if (!list)
    return TW_OK;
  d->provs = tw_calloc(list->n ? list->n : 1, sizeof *d->provs);
  for (size_t i = 0; i < list->n; i++) {
    const struct tw_node *pn = list->items[i];
    bool enabled = true;
    const struct tw_node *en = tw_node_get(pn, "enabled");
    if (en && tw_node_as_bool(en, &enabled) && !enabled)
      continue;
    struct tw_provider_opts po = {
        .adapters = d->adapters,
        .cfg = pn,
        .resolve_secret = d->secrets ? tw_auth_daemon_resolve_secret : NULL,
        .resolve_ctx = d->secrets};
    struct tw_err perr = {0};
    enum tw_rc rc = tw_provider_new_with(&po, &d->provs[d->n_prov], &perr);
    if (rc) {
      tw_err_set(err, rc, "providers[%zu]: %s", i, perr.msg);
      return rc;
    }
    struct tw_provider *p = d->provs[d->n_prov++];
    /* nothing inside its instances reports a job's end: its jobs never
     * succeed or fail, they run until cancelled or their instance goes */
    if (!tw_provider_agent(p) && !tw_provider_supports(p, TW_PROV_BATCH))
      tw_log_warn("daemon",
                  "providers[%zu] (%s): agent is false, so nothing reports "
                  "a job's end from its instances: its jobs run until "
                  "cancelled or their instance goes, never succeed or fail; "
                  "set agent: true (docs/agent.md)",
                  i, tw_provider_name(p));
  }
  return TW_OK;
}

static enum tw_rc open_meter(struct tw_daemon *d, struct tw_err *err) {
  struct tw_meter_cfg mcfg;
  enum tw_rc rc = tw_meter_cfg_parse(d->cfg->billing, &mcfg, err);
  if (rc == TW_OK) {
    struct tw_meter_opts mo = {.store = d->store,
                               .cfg = &mcfg,
                               .offers = meter_offers,
                               .offers_ctx = &d->msrc,
                               .tick_ms = d->cfg->sched_tick_ms,
                               .offers_ttl_ms =
                                   d->cfg->sched_offers_ttl_s * 1000,
                               .specs = d->specs,
                               .adapters = d->adapters};
    rc = tw_meter_new(&mo, &d->meter, err);
  }
  tw_meter_cfg_release(&mcfg);
  return rc;
}

/* tradewind-agent's side (docs/agent.md): the agent key (sealed when
 * secrets are configured, so before the tenancy takes them over), the
 * binary served to the bootstraps (required when a provider has
 * `agent: true` and agents fetch it), the CA they trust. */
static enum tw_rc open_agent(struct tw_daemon *d, struct tw_err *err) {
  const struct tw_cfg *cfg = d->cfg;
  bool any = false;
  for (size_t i = 0; i < d->n_prov; i++)
    any = any || tw_provider_agent(d->provs[i]);
  bool preinstalled = !strcmp(cfg->agent_install, "preinstalled");
  char binary[1100] = "";
  if (*cfg->agent_binary) {
    snprintf(binary, sizeof binary, "%s", cfg->agent_binary);
  } else {
    /* beside the tradewindd executable */
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      char *slash = strrchr(exe, '/');
      if (slash)
        *slash = '\0';
      snprintf(binary, sizeof binary, "%s/tradewind-agent", exe);
    }
  }
  struct tw_agent_opts ao = {
      .store = d->store,
      .secrets = d->secrets,
      .preinstalled = preinstalled,
      .agent_path = cfg->agent_path,
      .binary_path = binary,
      .need_binary = any && !preinstalled,
      .broker_url = cfg->agent_broker_url,
      .ca_pem_file = *cfg->tls_cert_file ? cfg->tls_cert_file : NULL,
      .heartbeat_s = cfg->agent_heartbeat_s,
      .heartbeat_timeout_s = cfg->agent_heartbeat_timeout_s,
      .max_log_bytes = cfg->agent_max_log_bytes,
      .grace_s = cfg->agent_grace_s,
      .tracer = d->tracer};
  return tw_agent_new(&ao, &d->agent, err);
}

/* An agent's exit or notice starts the scheduler's next pass at once. */
static void wake_sched(void *ctx) { tw_sched_wake(ctx); }

static enum tw_rc open_sched(struct tw_daemon *d, struct tw_err *err) {
  const struct tw_cfg *cfg = d->cfg;
  /* the spot lifecycle: the default fallback strategy and the blocklist
   * (docs/spot.md); spot.fallback was validated against the fallback
   * table's names with the config (load_cfg) */
  tw_fallback_cfg_default(&d->fb);
  tw_fallback_parse(cfg->spot_fallback, &d->fb.kind);
  d->fb.on_demand_after = (int)cfg->spot_on_demand_after;
  d->fb.restart_overhead_s = cfg->spot_restart_overhead_s;
  d->fb.margin_s = cfg->spot_deadline_margin_s;
  d->bo = (struct tw_blocklist_opts){.offer_ms = cfg->spot_bl_offer_s * 1000,
                                     .zone_ms = cfg->spot_bl_zone_s * 1000,
                                     .region_ms = cfg->spot_bl_region_s * 1000,
                                     .window_ms = cfg->spot_bl_window_s * 1000,
                                     .zone_after = (int)cfg->spot_bl_zone_after,
                                     .region_after =
                                         (int)cfg->spot_bl_region_after};
  struct tw_sched_opts so = {.store = d->store,
                             .providers = d->provs,
                             .n_providers = d->n_prov,
                             .tick_ms = cfg->sched_tick_ms,
                             .pass_budget_ms = cfg->sched_pass_budget_ms,
                             .max_place_per_tick = (int)cfg->sched_max_place,
                             .offers_ttl_ms = cfg->sched_offers_ttl_s * 1000,
                             .tenancy = d->sec->tenancy,
                             .meter = d->meter,
                             .fallback = &d->fb,
                             .blocklist = &d->bo,
                             .review_ms = cfg->spot_review_s * 1000,
                             .catalog = d->cat,
                             .placer = d->placer,
                             .specs = d->specs,
                             .agent = d->agent,
                             .tracer = d->tracer};
  enum tw_rc rc = tw_sched_new(&so, &d->sched, err);
  if (rc == TW_OK)
    tw_agent_set_wake(d->agent, wake_sched, d->sched);
  return rc;
}

/* /readyz: a scheduler whose loop is stuck takes jobs it will not place. */
static bool sched_ready(void *ctx, char *why, size_t whysz) {
  struct tw_daemon *d = ctx;
  int64_t stalled = d->sched ? tw_sched_stalled_ms(d->sched) : 0;
  if (stalled > 0) {
    snprintf(why, whysz, "the scheduler has not completed a pass for %lld s",
             (long long)(stalled / 1000));
    return false;
  }
  return true;
}

enum tw_rc tw_daemon_new(const struct tw_daemon_opts *o, struct tw_daemon **out,
                         struct tw_err *err) {
  *out = NULL;
  if (!o || !o->config_path)
    return tw_err_set(err, TW_E_INVALID, "daemon: a config file is required");
  struct tw_daemon *d = tw_calloc(1, sizeof *d);
  d->config_path = tw_strdup(o->config_path);
  d->listen_override = tw_strdup(o->listen);
  d->db_override = tw_strdup(o->db);
  d->adapters = o->adapters;
  config_dir(d->config_path, d->cfg_dir, sizeof d->cfg_dir);
  enum tw_rc rc;

  if ((rc = load_cfg(d->config_path, &d->cfg, err)))
    goto fail;
  apply_log(d->cfg);
  const struct tw_cfg *cfg = d->cfg;
  apply_overrides(d, d->cfg);

  /* Placement policies (policies/place/policy.h): validated before
   * anything starts.  The placer shares the set in force (and the
   * scheduler's offer index) with the REST handlers; a reload swaps the set
   * whole. */
  struct tw_policy_set *policies = NULL;
  if ((rc = tw_policy_set_build(cfg->policies, d->cfg_dir, &policies, err)))
    goto fail;
  d->placer = tw_placer_new(policies);

  struct tw_store_opts so = {.path = cfg->db,
                             .sync_full = cfg->store_sync_full,
                             .max_batch = (int)cfg->store_max_batch,
                             .readers = (int)cfg->store_readers,
                             .exclusive = true};
  /* store.backend postgres: the database several brokers share
   * (docs/ha.md); the password from its file, never logged. */
  char pgpw[256] = "";
  if (!strcmp(cfg->store_backend, "postgres")) {
    so.backend = TW_DB_POSTGRES;
    so.dsn = cfg->store_dsn;
    if (cfg->store_password_file[0] &&
        (rc = read_password(d->cfg_dir, cfg->store_password_file, pgpw,
                            sizeof pgpw, err)))
      goto fail;
    so.password = pgpw[0] ? pgpw : NULL;
    /* a leader frozen mid-transaction holds the lease row: the server ends
     * its session well within the lease, so a follower can take over */
    so.txn_timeout_ms = cfg->ha_lease_ms / 2;
  }
  /* Opening the store migrates every module's tables (broker/core/store.h)
   * and refuses to start on a failed migration. */
  rc = tw_store_open(&so, &d->store, err);
  explicit_bzero(pgpw, sizeof pgpw);
  if (rc)
    goto fail;
  /* One write that commits makes the broker ready (/readyz); a store that
   * cannot take it (a full disk) leaves it not ready rather than down. */
  struct tw_err perr = {0};
  if (tw_store_probe(d->store, &perr))
    tw_log_error("daemon", "the store cannot commit at start: %s", perr.msg);
  /* Parsed job specs, one per job version, shared by the scheduler, the
   * reconciler and the meter (broker/core/spec_cache.h). */
  d->specs = tw_spec_cache_new(0);
  if (
      /* Traces first: everything after may make spans. */
      (rc = open_tracer(d, err)) ||
      /* Metering: attempts become ledger rows (billing/ledger/meter.h). */
      (rc = open_meter(d, err)) ||
      /* Sealed secrets first: provider sections may name their credentials
       * as `<base>_secret: NAME` (providers/provider.h). */
      (rc = tw_auth_daemon_open_secrets(cfg, d->store, &d->secrets, err)) ||
      (rc = open_providers(d, err)) ||
      /* the agent key, sealed with the secrets before the tenancy takes
       * them */
      (rc = open_agent(d, err)))
    goto fail;
  d->msrc.p = d->provs;
  d->msrc.n = d->n_prov;

  /* The catalog: every source's offers normalized, versioned in the store
   * and refreshed per source on threads of its own
   * (billing/catalog/catalog.h).  Placement, the meter and GET /v1/offers
   * read its snapshots. */
  if ((rc = tw_catalog_new_from_cfg(cfg, d->store, NULL, d->provs, d->n_prov,
                                    d->adapters, &d->cat, err)))
    goto fail;
  d->msrc.cat = d->cat;

  /* Principals, tokens (the first start writes admin.token), quotas,
   * budgets, the audit log; it takes the sealed secrets over
   * (api/auth_daemon.h). */
  struct tw_secrets *secrets = d->secrets;
  d->secrets = NULL;
  if ((rc = tw_auth_daemon_start(cfg, d->store, secrets, d->provs, d->n_prov,
                                 &d->sec, err)))
    goto fail;
  /* Admission projects costs with the scheduler's own plan: the policy
   * set in force over the index the scheduler publishes. */
  tw_tenancy_use_placer(d->sec->tenancy, d->placer);
  if ((rc = open_sched(d, err)))
    goto fail;

  /* The reconciler: a pass at start, then every reconcile.interval_s. */
  if (d->n_prov && cfg->reconcile_interval_s > 0) {
    struct tw_reconcile_opts ro = {.store = d->store,
                                   .providers = d->provs,
                                   .n_providers = d->n_prov,
                                   .interval_ms =
                                       cfg->reconcile_interval_s * 1000,
                                   .on_action = reconcile_audit,
                                   .ctx = d,
                                   .specs = d->specs};
    if ((rc = tw_reconcile_new(&ro, &d->rec, err)))
      goto fail;
  }

  if ((rc = tw_spec_machine_parse(cfg->machine, &d->machine, err)))
    goto fail;
  struct tw_api_opts ao = {
      .listen = cfg->listen,
      .machine = &d->machine,
      .auth = d->sec->opts,
      .store = d->store,
      .providers = d->provs,
      .n_providers = d->n_prov,
      .adapters = d->adapters,
      .max_body_bytes = cfg->api_max_body_bytes,
      .max_workdir_bytes = cfg->api_max_workdir_bytes,
      .max_connections = (unsigned)cfg->api_max_connections,
      .timeout_s = (unsigned)cfg->api_timeout_s,
      .max_per_address = (unsigned)cfg->api_max_per_address,
      .threads = (unsigned)cfg->api_threads,
      .head_timeout_s = (unsigned)cfg->api_head_timeout_s,
      .body_timeout_s = (unsigned)cfg->api_body_timeout_s,
      .max_head_bytes = (size_t)cfg->api_max_head_bytes,
      .max_url_bytes = (size_t)cfg->api_max_url_bytes,
      .max_streams = (unsigned)cfg->api_max_streams,
      .probe_listen = cfg->api_probe_listen,
      .judge_heads = cfg->api_judge_heads,
      .catalog = d->cat,
      .placer = d->placer,
      .agent = d->agent,
      .ready = sched_ready,
      .ready_ctx = d,
      .tracer = d->tracer,
      .metrics = daemon_metrics,
      .metrics_ctx = d};
  if ((rc = tw_api_start(&ao, &d->api, err)))
    goto fail;
  const char *colon = strrchr(cfg->listen, ':');
  snprintf(d->host, sizeof d->host, "%.*s",
           colon ? (int)(colon - cfg->listen) : (int)strlen(cfg->listen),
           cfg->listen);
  snprintf(d->url, sizeof d->url, "%s://%s:%d",
           d->sec->opts.tls_cert_file ? "https" : "http", d->host,
           tw_api_port(d->api));
  /* agents call the daemon's own address unless agent.broker_url says
   * otherwise (set before the scheduler's first pass) */
  tw_agent_set_url(d->agent, d->url);
  if (tw_api_probe_port(d->api)) {
    const char *pc = strrchr(cfg->api_probe_listen, ':');
    tw_log_info("api", "probes on %.*s:%d (/healthz, /readyz only)",
                pc ? (int)(pc - cfg->api_probe_listen) : 0,
                cfg->api_probe_listen, tw_api_probe_port(d->api));
  }
  *out = d;
  return TW_OK;
fail:
  tw_daemon_free(d);
  return rc;
}

static int64_t ha_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The loops only the leader runs, the reconciler's pass over every
 * provider first: what a former leader launched (or was launching when it
 * stopped) is adopted before anything new is launched. */
static enum tw_rc start_leading(struct tw_daemon *d, struct tw_err *err) {
  enum tw_rc rc;
  if (d->rec)
    tw_reconcile_pass(d->rec, NULL, NULL);
  /* the first pass's start-up work (statements, specs), before the loop */
  tw_log_info("sched", "warm_ms=%lld first pass prepared",
              (long long)tw_sched_warm(d->sched));
  if ((rc = tw_sched_start(d->sched, err)) ||
      (rc = tw_meter_start(d->meter, err)) ||
      (d->rec && (rc = tw_reconcile_start(d->rec, err))))
    return rc;
  if (d->ha && (rc = tw_tenancy_start(d->sec->tenancy, d->cfg->tenancy_tick_ms,
                                      err)))
    return rc;
  return TW_OK;
}

static void ha_beat(struct daemon_ha *h, int64_t epoch, int64_t now) {
  struct tw_replica r = {.started_ms = h->started_ms,
                         .seen_ms = now,
                         .epoch = epoch};
  snprintf(r.name, sizeof r.name, "%s", h->name);
  snprintf(r.url, sizeof r.url, "%.250s", h->d->url);
  struct tw_err err = {0};
  if (tw_store_replica_beat(h->d->store, &r, &err))
    tw_log_debug("ha", "replica beat: %s", err.msg);
}

/* A new leader's start: the reconciler's pass, then the loops. */
static void *ha_lead(void *arg) {
  struct daemon_ha *h = arg;
  int64_t t0 = ha_now();
  pthread_mutex_lock(&h->mu);
  int64_t epoch = h->epoch;
  pthread_mutex_unlock(&h->mu);
  struct tw_err serr = {0};
  if (start_leading(h->d, &serr)) {
    tw_log_error("ha", "cannot start leading: %s", serr.msg);
    _exit(3);
  }
  tw_log_info("ha", "replica=%s epoch=%lld leads after %lld ms", h->name,
              (long long)epoch, (long long)(ha_now() - t0));
  return NULL;
}

static void *ha_main(void *arg) {
  struct daemon_ha *h = arg;
  struct tw_daemon *d = h->d;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    int64_t epoch = h->epoch;
    pthread_mutex_unlock(&h->mu);
    int64_t now = ha_now();
    struct tw_lease l;
    struct tw_err err = {0};
    enum tw_rc rc =
        tw_store_lease_try(d->store, h->name, epoch, now, h->lease_ms, &l, &err);
    if (epoch > 0) { /* leading: renewed, or lost */
      if (rc == TW_OK && l.mine) {
        pthread_mutex_lock(&h->mu);
        h->renewed_ms = now;
        pthread_mutex_unlock(&h->mu);
      } else if (rc == TW_OK || err.rc == TW_E_CONFLICT ||
                 now - h->renewed_ms >= h->lease_ms - h->renew_ms) {
        /* taken over (or refused by the fence), or unconfirmed for so
         * long that a follower may take it before the next try */
        tw_log_error("ha",
                     "replica=%s epoch=%lld lost the lease (%s); stopping so "
                     "that a fresh start follows",
                     h->name, (long long)epoch,
                     rc == TW_OK ? l.holder[0] ? "taken over" : "expired"
                                 : err.msg);
        _exit(3);
      } else {
        tw_log_warn("ha", "replica=%s epoch=%lld renewal failed: %s", h->name,
                    (long long)epoch, err.msg);
      }
    } else if (rc == TW_OK && l.mine) {
      tw_store_fence(d->store, h->name, l.epoch);
      pthread_mutex_lock(&h->mu);
      h->epoch = l.epoch;
      h->renewed_ms = now;
      pthread_mutex_unlock(&h->mu);
      tw_log_info("ha",
                  "replica=%s epoch=%lld leading (takeovers=%lld); "
                  "reconciling every provider before launching",
                  h->name, (long long)l.epoch, (long long)l.takeovers);
      if (pthread_create(&h->lead, NULL, ha_lead, h) != 0) {
        tw_log_error("ha", "cannot start leading: no thread");
        _exit(3);
      }
      h->lead_started = true;
    } else if (rc) {
      tw_log_debug("ha", "replica=%s lease: %s", h->name, err.msg);
    }
    pthread_mutex_lock(&h->mu);
    epoch = h->epoch;
    pthread_mutex_unlock(&h->mu);
    ha_beat(h, epoch, now);
    pthread_mutex_lock(&h->mu);
    if (h->stopping)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += h->renew_ms / 1000;
    ts.tv_nsec += (h->renew_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* The watchdog: a leader whose lease went unconfirmed for lease - renew
 * stops, as the lease thread would after a failed renewal, even while that
 * thread hangs in a renewal that neither succeeds nor fails. */
static void *ha_watch(void *arg) {
  struct daemon_ha *h = arg;
  int64_t step = h->renew_ms / 4 > 10 ? h->renew_ms / 4 : 10;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    int64_t now = ha_now();
    if (h->epoch > 0 && now - h->renewed_ms >= h->lease_ms - h->renew_ms) {
      tw_log_error("ha",
                   "replica=%s epoch=%lld lost the lease (no renewal for %lld "
                   "ms); stopping so that a fresh start follows",
                   h->name, (long long)h->epoch,
                   (long long)(now - h->renewed_ms));
      _exit(3);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += step / 1000;
    ts.tv_nsec += (step % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static enum tw_rc ha_start(struct tw_daemon *d, struct tw_err *err) {
  struct daemon_ha *h = tw_calloc(1, sizeof *h);
  h->d = d;
  h->renew_ms = d->cfg->ha_renew_ms;
  h->lease_ms = d->cfg->ha_lease_ms;
  h->started_ms = ha_now();
  if (d->cfg->ha_name[0])
    snprintf(h->name, sizeof h->name, "%s", d->cfg->ha_name);
  else
    snprintf(h->name, sizeof h->name, "%.100s:%d", d->host,
             tw_api_port(d->api));
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  d->ha = h;
  if (pthread_create(&h->th, NULL, ha_main, h) != 0)
    return tw_err_set(err, TW_E_INTERNAL, "ha: cannot start the lease thread");
  h->started = true;
  if (pthread_create(&h->wd, NULL, ha_watch, h) != 0)
    return tw_err_set(err, TW_E_INTERNAL,
                      "ha: cannot start the lease watchdog");
  h->wd_started = true;
  tw_log_info("ha", "replica=%s renew_ms=%lld lease_ms=%lld following",
              h->name, (long long)h->renew_ms, (long long)h->lease_ms);
  return TW_OK;
}

/* Stops trying; a leader gives its lease up so a follower takes over at
 * once rather than when it expires. */
static void ha_stop(struct tw_daemon *d) {
  struct daemon_ha *h = d->ha;
  if (!h)
    return;
  if (h->started) {
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
    h->started = false;
  }
  if (h->lead_started) { /* a start under way ends before the loops stop */
    pthread_join(h->lead, NULL);
    h->lead_started = false;
  }
  if (h->wd_started) {
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->wd, NULL);
    h->wd_started = false;
  }
}

static void ha_free(struct tw_daemon *d) {
  struct daemon_ha *h = d->ha;
  if (!h)
    return;
  ha_stop(d);
  if (h->epoch > 0) {
    struct tw_err err = {0};
    if (tw_store_lease_release(d->store, h->name, h->epoch, &err))
      tw_log_warn("ha", "cannot give the lease up: %s", err.msg);
    else
      tw_log_info("ha", "replica=%s epoch=%lld gave the lease up", h->name,
                  (long long)h->epoch);
  }
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h);
  d->ha = NULL;
}

enum tw_rc tw_daemon_start(struct tw_daemon *d, struct tw_err *err) {
  enum tw_rc rc;
  if ((rc = tw_catalog_start(d->cat, err)))
    return rc;
  if (tw_store_backend(d->store) == TW_DB_POSTGRES) {
    if ((rc = ha_start(d, err)))
      return rc;
  } else if ((rc = start_leading(d, err))) {
    return rc;
  }
  tw_log_info("daemon", "listen=%s:%d db=%s providers=%zu serving", d->host,
              tw_api_port(d->api), d->cfg->db, d->n_prov);
  /* with no provider the scheduler runs to say so in each job's reason */
  if (!d->n_prov)
    tw_log_warn("daemon",
                "no provider is configured: submitted jobs stay pending; add "
                "one under providers: in %s (configs/demo.yaml runs on a fake "
                "EC2; docs/providers.md)",
                d->config_path);
  return TW_OK;
}

int tw_daemon_port(const struct tw_daemon *d) { return tw_api_port(d->api); }

const char *tw_daemon_url(const struct tw_daemon *d) { return d->url; }

enum tw_rc tw_daemon_reload(struct tw_daemon *d, struct tw_err *err) {
  struct tw_cfg *next = NULL;
  struct tw_meter_cfg mnext;
  struct tw_policy_set *pnext = NULL;
  struct tw_err rerr = {0};
  enum tw_rc rc;
  if ((rc = load_cfg(d->config_path, &next, &rerr)))
    goto refused;
  if ((rc = tw_meter_cfg_parse(next->billing, &mnext, &rerr))) {
    tw_meter_cfg_release(&mnext);
    goto refused;
  }
  if ((rc = tw_policy_set_build(next->policies, d->cfg_dir, &pnext, &rerr))) {
    tw_meter_cfg_release(&mnext);
    goto refused;
  }
  apply_overrides(d, next);
  char *report = NULL;
  tw_cfg_keep_fixed(d->cfg, next, &report);
  if (report) {
    tw_log_warn("daemon", "reload: %s", report);
    free(report);
  }
  apply_log(next);
  tw_api_set_max_body(d->api, next->api_max_body_bytes);
  struct tw_err merr = {0};
  if (tw_meter_set_cfg(d->meter, &mnext, &merr))
    tw_log_error("daemon", "reload: billing budgets not stored: %s", merr.msg);
  tw_meter_cfg_release(&mnext);
  tw_cfg_free(d->cfg);
  d->cfg = next;
  tw_placer_set_policies(d->placer, pnext);
  tw_log_info("daemon", "configuration reloaded");
  return TW_OK;
refused:
  tw_log_error("daemon", "reload refused, nothing applied: %s", rerr.msg);
  tw_cfg_free(next);
  if (err && err->rc == TW_OK)
    *err = rerr;
  return rc;
}

void tw_daemon_drain(struct tw_daemon *d) {
  /* the deadline runs from the signal: no new work, then the launches in
   * flight handed back, all within shutdown_timeout_s */
  int64_t deadline = tw_sched_mono_ms() + d->cfg->shutdown_timeout_s * 1000;
  ha_stop(d); /* no takeover while stopping */
  if (d->api)
    tw_api_drain(d->api);
  d->abandoned = tw_sched_drain(d->sched, deadline);
}

size_t tw_daemon_abandoned(const struct tw_daemon *d) {
  return d ? d->abandoned : 0;
}

void tw_daemon_free(struct tw_daemon *d) {
  if (!d)
    return;
  if (d->api) {
    tw_api_drain(d->api);
    tw_api_stop(d->api);
  }
  ha_stop(d);
  tw_reconcile_free(d->rec);
  tw_sched_free(d->sched);
  tw_agent_free(d->agent); /* after the scheduler and the API */
  tw_placer_free(d->placer);
  tw_auth_daemon_stop(d->sec);
  tw_secrets_free(d->secrets); /* when the tenancy never took them */
  tw_meter_free(d->meter);
  ha_free(d); /* once nothing of this leader writes any more */
  /* calls abandoned at the drain still use the providers and the specs
   * they hold: those are left to the process's exit */
  if (!d->abandoned)
    tw_spec_cache_free(d->specs); /* after the scheduler, reconciler, meter */
  /* after its readers, before the providers its threads call */
  tw_catalog_free(d->cat);
  /* after everything that makes spans; what is queued gets 2 s to leave.
   * Calls abandoned at the drain may still end theirs: then it is left to
   * the process's exit, as the providers are. */
  if (!d->abandoned) {
    tw_tracer_free(d->tracer, 2000);
    tw_otlp_sender_free(d->otlp);
  }
  for (size_t k = 0; k < d->n_prov && !d->abandoned; k++)
    tw_provider_free(d->provs[k]);
  if (!d->abandoned)
    free(d->provs);
  tw_store_close(d->store);
  tw_cfg_free(d->cfg);
  tw_spec_machine_release(&d->machine);
  free(d->config_path);
  free(d->listen_override);
  free(d->db_override);
  free(d);
}

enum tw_rc tw_daemon_check_config(const char *path, struct tw_err *err) {
  struct tw_cfg *cfg = NULL;
  enum tw_rc rc = load_cfg(path, &cfg, err);
  if (rc == TW_OK) {
    char dir[sizeof ((struct tw_daemon *)0)->cfg_dir];
    struct tw_policy_set *policies = NULL;
    config_dir(path, dir, sizeof dir);
    rc = tw_policy_set_build(cfg->policies, dir, &policies, err);
    if (policies)
      tw_policy_set_unref(policies);
  }
  tw_cfg_free(cfg);
  return rc;
}
