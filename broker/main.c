/* tradewindd - the broker daemon: config, store, REST server, signals. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/auth_daemon.h"
#include "billing/catalog/catalog.h"
#include "billing/ledger/meter.h"
#include "broker/tenancy/audit.h"
#include "broker/sched/blocklist.h"
#include "broker/core/datasets.h"
#include "broker/core/config.h"
#include "broker/base/log.h"
#include "broker/base/model.h"
#include "broker/base/node.h"
#include "broker/sched/reconcile.h"
#include "broker/sched/sched.h"
#include "broker/core/spec_cache.h"
#include "broker/core/store.h"
#include "broker/tenancy/tenancy.h"
#include "policies/fallback/fallback_strategy.h"
#include "policies/place/placer.h"
#include "providers/provider.h"
#include "providers/registry.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: tradewindd --config FILE [--listen HOST:PORT] [--db PATH]\n"
      "\n"
      "The Tradewind broker daemon.\n"
      "\n"
      "  --config FILE      YAML configuration (see configs/tradewind.yaml)\n"
      "  --listen HOST:PORT address of the REST API; overrides `listen`\n"
      "                     (port 0 picks a free port)\n"
      "  --db PATH          sqlite database file; overrides `db`\n"
      "  --help, --version\n"
      "\n"
      "Once serving, it prints `listening http://HOST:PORT` on stdout.\n"
      "Signals: SIGHUP reloads the config (keys that need a restart are\n"
      "reported and kept); SIGTERM or SIGINT stop accepting, finish the\n"
      "requests in flight, and exit 0.\n"
      "Exit codes: 0 clean stop, 1 start-up failure, 2 usage error.\n");
}

/* The meter's prices in force: the configured providers' offers in the
 * catalog's current snapshot (billing/ledger/meter.h,
 * billing/catalog/catalog.h), so the meter charges what placement saw without
 * listing offers again. */
struct meter_src {
  struct tw_provider **p;
  size_t n;
  struct tw_catalog *cat;
};
static void meter_offers(void *ctx, struct tw_offer_list *out) {
  struct meter_src *src = ctx;
  if (!src->cat || !src->n)
    return;
  const char **accounts = calloc(src->n, sizeof *accounts);
  for (size_t i = 0; i < src->n; i++)
    accounts[i] = tw_provider_account(src->p[i]);
  struct tw_cat_snap *snap = tw_catalog_acquire(src->cat);
  tw_cat_snap_offers_of(snap, accounts, src->n, out);
  tw_cat_snap_release(snap);
  free(accounts);
}

/* The reconciler's actions go to the audit log too (broker/sched/reconcile.h).
 */
static void reconcile_audit(void *ctx, const struct tw_reconcile_action *a) {
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
  if (tw_audit_append(ctx, &ev, NULL, &err))
    tw_log_warn("reconcile", "instance=%s not audited: %s", a->instance_id,
                err.msg);
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

static void apply_log(const struct tw_cfg *c) {
  tw_log_set_level(c->log_level);
  tw_log_set_debug(c->log_debug);
}

int main(int argc, char **argv) {
  const char *config = NULL, *listen = NULL, *db = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("tradewindd 0.1.0\n");
      return 0;
    } else if ((!strcmp(a, "--config") || !strcmp(a, "--listen") ||
                !strcmp(a, "--db")) &&
               i + 1 < argc) {
      const char **slot = a[2] == 'c' ? &config : a[2] == 'l' ? &listen : &db;
      *slot = argv[++i];
    } else {
      fprintf(stderr, "tradewindd: unknown or incomplete option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!config) {
    fprintf(stderr, "tradewindd: --config FILE is required\n");
    usage(stderr);
    return 2;
  }

  /* Signals are taken synchronously by this thread alone: block them before
   * any thread exists so every thread inherits the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGHUP);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct tw_err err = {0};
  struct tw_cfg *cfg = NULL;
  if (tw_cfg_load_file(config, &cfg, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    return 1;
  }
  if (listen) {
    free(cfg->listen);
    cfg->listen = strdup(listen);
  }
  if (db) {
    free(cfg->db);
    cfg->db = strdup(db);
  }
  apply_log(cfg);
  /* Placement policies (policies/place/policy.h): validated before anything
   * starts.  The placer shares the set in force (and the scheduler's
   * offer index) with the REST handlers; a reload swaps the set whole. */
  char cfg_dir[1024];
  config_dir(config, cfg_dir, sizeof cfg_dir);
  struct tw_policy_set *policies = NULL;
  if (tw_policy_set_build(cfg->policies, cfg_dir, &policies, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_cfg_free(cfg);
    return 1;
  }
  struct tw_placer *placer = tw_placer_new(policies);
  tw_placer_set_base_dir(placer, cfg_dir);
  tw_placer_set_default(placer);

  struct tw_store *store = NULL;
  struct tw_store_opts so = {.path = cfg->db,
                             .sync_full = cfg->store_sync_full,
                             .max_batch = (int)cfg->store_max_batch,
                             .readers = (int)cfg->store_readers};
  if (tw_store_open(&so, &store, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_cfg_free(cfg);
    return 1;
  }
  /* Parsed job specs, one per job version, shared by the scheduler, the
   * reconciler and the meter (broker/core/spec_cache.h). */
  struct tw_spec_cache *specs = tw_spec_cache_new(0);
  /* Metering: attempts become ledger rows (billing/ledger/meter.h). */
  struct meter_src msrc = {0};
  struct tw_meter *meter = NULL;
  struct tw_meter_cfg mcfg;
  if (tw_meter_cfg_parse(cfg->billing, &mcfg, &err) == TW_OK) {
    struct tw_meter_opts mo = {.store = store,
                               .cfg = &mcfg,
                               .offers = meter_offers,
                               .offers_ctx = &msrc,
                               .tick_ms = cfg->sched_tick_ms,
                               .offers_ttl_ms = cfg->sched_offers_ttl_s * 1000,
                               .specs = specs};
    tw_meter_new(&mo, &meter, &err);
  }
  tw_meter_cfg_release(&mcfg);
  if (!meter) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_store_close(store);
    tw_cfg_free(cfg);
    return 1;
  }
  /* Sealed secrets first: provider sections may name their credentials as
   * `<base>_secret: NAME` (providers/provider.h). */
  if (tw_auth_daemon_open_secrets(cfg, store, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_meter_free(meter);
    tw_store_close(store);
    tw_cfg_free(cfg);
    return 1;
  }
  /* Providers: each section of `providers:` becomes an adapter.  init does
   * no network I/O, so the daemon starts while a cloud is down. */
  size_t n_prov = 0;
  struct tw_provider **provs = NULL;
  if (cfg->providers) {
    provs = calloc(cfg->providers->n, sizeof *provs);
    for (size_t i = 0; i < cfg->providers->n; i++) {
      const struct tw_node *pn = cfg->providers->items[i];
      bool enabled = true;
      const struct tw_node *en = tw_node_get(pn, "enabled");
      if (en && tw_node_as_bool(en, &enabled) && !enabled)
        continue;
      struct tw_err perr = {0};
      if (tw_provider_new(tw_adapters, pn, NULL, &provs[n_prov], &perr)) {
        fprintf(stderr, "tradewindd: providers[%zu]: %s\n", i, perr.msg);
        tw_meter_free(meter);
        for (size_t k = 0; k < n_prov; k++)
          tw_provider_free(provs[k]);
        free(provs);
        tw_store_close(store);
        tw_cfg_free(cfg);
        return 1;
      }
      n_prov++;
    }
  }
  msrc.p = provs;
  msrc.n = n_prov;
  /* The catalog: every source's offers normalized, versioned in the store
   * and refreshed per source on threads of its own (billing/catalog/catalog.h).
   * Placement, the meter and GET /v1/offers read its snapshots; it is
   * published before the scheduler is made, which takes it from there. */
  struct tw_catalog *cat = NULL;
  if (tw_catalog_new_from_cfg(cfg, store, NULL, provs, n_prov, &cat, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_meter_free(meter);
    for (size_t k = 0; k < n_prov; k++)
      tw_provider_free(provs[k]);
    free(provs);
    tw_store_close(store);
    tw_cfg_free(cfg);
    return 1;
  }
  tw_catalog_publish(cat);
  msrc.cat = cat;
  /* Principals, tokens (the first start writes admin.token), quotas,
   * budgets, the audit log, sealed secrets: api/auth_daemon.h. */
  struct tw_auth_daemon *sec = NULL;
  if (tw_auth_daemon_start(cfg, store, provs, n_prov, &sec, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_catalog_publish(NULL);
    tw_catalog_free(cat);
    for (size_t k = 0; k < n_prov; k++)
      tw_provider_free(provs[k]);
    free(provs);
    tw_store_close(store);
    tw_cfg_free(cfg);
    return 1;
  }
  struct tw_sched *sched = NULL;
  struct tw_sched_opts sopts = {.store = store,
                                .providers = provs,
                                .n_providers = n_prov,
                                .tick_ms = cfg->sched_tick_ms,
                                .offers_ttl_ms =
                                    cfg->sched_offers_ttl_s * 1000};
  sopts.tenancy = sec->tenancy;
  sopts.meter = meter;
  sopts.catalog = cat;
  sopts.placer = placer;
  sopts.specs = specs;
  /* the spot lifecycle: the default fallback strategy and the blocklist
   * (docs/spot.md); spot.fallback was validated with the config */
  struct tw_fallback_cfg fb;
  tw_fallback_cfg_default(&fb);
  tw_fallback_parse(cfg->spot_fallback, &fb.kind);
  fb.on_demand_after = (int)cfg->spot_on_demand_after;
  fb.restart_overhead_s = cfg->spot_restart_overhead_s;
  fb.margin_s = cfg->spot_deadline_margin_s;
  struct tw_blocklist_opts bo = {.offer_ms = cfg->spot_bl_offer_s * 1000,
                                 .zone_ms = cfg->spot_bl_zone_s * 1000,
                                 .region_ms = cfg->spot_bl_region_s * 1000,
                                 .window_ms = cfg->spot_bl_window_s * 1000,
                                 .zone_after = (int)cfg->spot_bl_zone_after,
                                 .region_after =
                                     (int)cfg->spot_bl_region_after};
  sopts.fallback = &fb;
  sopts.blocklist = &bo;
  sopts.review_ms = cfg->spot_review_s * 1000;
  tw_sched_new(&sopts, &sched, &err);

  /* The reconciler: a pass at start, then every reconcile.interval_s. */
  struct tw_reconcile *rec = NULL;
  if (n_prov && cfg->reconcile_interval_s > 0) {
    struct tw_reconcile_opts ro = {.store = store,
                                   .providers = provs,
                                   .n_providers = n_prov,
                                   .interval_ms =
                                       cfg->reconcile_interval_s * 1000,
                                   .on_action = reconcile_audit,
                                   .ctx = tw_tenancy_audit(sec->tenancy),
                                   .specs = specs};
    if (tw_reconcile_new(&ro, &rec, &err)) {
      fprintf(stderr, "tradewindd: %s\n", err.msg);
      return 1;
    }
  }

  struct tw_api *api = NULL;
  struct tw_api_opts ao = {.listen = cfg->listen,
                           .auth = sec->opts,
                           .store = store,
                           .providers = provs,
                           .n_providers = n_prov,
                           .adapters = tw_adapters,
                           .max_body_bytes = cfg->api_max_body_bytes,
                           .max_connections =
                               (unsigned)cfg->api_max_connections,
                           .timeout_s = (unsigned)cfg->api_timeout_s};
  if (tw_api_start(&ao, &api, &err)) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    tw_reconcile_free(rec);
    tw_sched_free(sched);
    tw_auth_daemon_stop(sec);
    tw_meter_free(meter);
    tw_catalog_publish(NULL);
    tw_catalog_free(cat);
    for (size_t k = 0; k < n_prov; k++)
      tw_provider_free(provs[k]);
    free(provs);
    tw_store_close(store);
    tw_cfg_free(cfg);
    return 1;
  }
  if (tw_catalog_start(cat, &err) || (n_prov && tw_sched_start(sched, &err)) ||
      tw_meter_start(meter, &err) || (rec && tw_reconcile_start(rec, &err))) {
    fprintf(stderr, "tradewindd: %s\n", err.msg);
    return 1;
  }
  char host[256];
  snprintf(host, sizeof host, "%.*s",
           (int)(strrchr(cfg->listen, ':') - cfg->listen), cfg->listen);
  printf("listening %s://%s:%d\n", sec->opts.tls_cert_file ? "https" : "http",
         host, tw_api_port(api));
  fflush(stdout);
  tw_log_info("daemon", "listen=%s:%d db=%s providers=%zu serving", host,
              tw_api_port(api), cfg->db, n_prov);

  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0)
      continue;
    if (sig == SIGHUP) {
      struct tw_cfg *next = NULL;
      struct tw_err rerr = {0};
      if (tw_cfg_load_file(config, &next, &rerr)) {
        tw_log_error("daemon", "reload refused, nothing applied: %s", rerr.msg);
        continue;
      }
      struct tw_meter_cfg mnext;
      if (tw_meter_cfg_parse(next->billing, &mnext, &rerr)) {
        tw_log_error("daemon", "reload refused, nothing applied: %s", rerr.msg);
        tw_meter_cfg_release(&mnext);
        tw_cfg_free(next);
        continue;
      }
      struct tw_policy_set *pnext = NULL;
      if (tw_policy_set_build(next->policies, cfg_dir, &pnext, &rerr)) {
        tw_log_error("daemon", "reload refused, nothing applied: %s", rerr.msg);
        tw_meter_cfg_release(&mnext);
        tw_cfg_free(next);
        continue;
      }
      /* command-line overrides win over the file, as at start */
      if (listen) {
        free(next->listen);
        next->listen = strdup(cfg->listen);
      }
      if (db) {
        free(next->db);
        next->db = strdup(cfg->db);
      }
      char *report = NULL;
      tw_cfg_keep_fixed(cfg, next, &report);
      if (report) {
        tw_log_warn("daemon", "reload: %s", report);
        free(report);
      }
      apply_log(next);
      tw_api_set_max_body(api, next->api_max_body_bytes);
      if (tw_meter_set_cfg(meter, &mnext, &rerr))
        tw_log_error("daemon", "reload: billing budgets not stored: %s",
                     rerr.msg);
      tw_meter_cfg_release(&mnext);
      tw_cfg_free(cfg);
      cfg = next;
      tw_placer_set_policies(placer, pnext);
      tw_log_info("daemon", "configuration reloaded");
      continue;
    }
    tw_log_info("daemon", "signal=%d draining", sig);
    break;
  }
  tw_api_drain(api);
  tw_api_stop(api);
  tw_reconcile_free(rec);
  tw_sched_free(sched);
  tw_placer_set_default(NULL);
  tw_placer_free(placer);
  tw_auth_daemon_stop(sec);
  tw_meter_free(meter);
  tw_spec_cache_free(specs); /* after the scheduler, reconciler and meter */
  /* after its readers, before the providers its threads call */
  tw_catalog_publish(NULL);
  tw_catalog_free(cat);
  for (size_t k = 0; k < n_prov; k++)
    tw_provider_free(provs[k]);
  free(provs);
  tw_store_close(store);
  tw_cfg_free(cfg);
  tw_log_info("daemon", "stopped");
  return 0;
}
