#include "broker/core/config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/core/spec.h" /* tw_spec_name_word */

enum ktype { K_STR, K_INT, K_LEVEL, K_SUBSYS, K_SYNC, K_RAW_SEQ, K_RAW_MAP };

struct key {
  const char *path; /* dotted */
  enum ktype type;
  size_t off;       /* offset in struct tw_cfg */
  const char *def;  /* default as text */
  int64_t min, max; /* K_INT bounds */
  bool reloadable;
};

#define OFF(f) offsetof(struct tw_cfg, f)
static const struct key KEYS[] = {
    {"listen", K_STR, OFF(listen), "127.0.0.1:8420", 0, 0, false},
    {"db", K_STR, OFF(db), "tradewind.db", 0, 0, false},
    {"log.level", K_LEVEL, OFF(log_level), "info", 0, 0, true},
    {"log.debug", K_SUBSYS, OFF(log_debug), "", 0, 0, true},
    {"log.format", K_STR, OFF(log_format), "text", 0, 0, true},
    {"api.max_body_bytes", K_INT, OFF(api_max_body_bytes), "1048576", 1024,
     64 << 20, true},
    {"api.max_workdir_bytes", K_INT, OFF(api_max_workdir_bytes), "67108864",
     1024, 1 << 30, false},
    {"api.max_connections", K_INT, OFF(api_max_connections), "1024", 1, 65536,
     false},
    {"api.timeout_s", K_INT, OFF(api_timeout_s), "60", 1, 3600, false},
    /* the front door under attack (docs/security.md, "The front door") */
    {"api.max_per_address", K_INT, OFF(api_max_per_address), "128", 1, 65536,
     false},
    {"api.threads", K_INT, OFF(api_threads), "64", 1, 1024, false},
    {"api.max_streams", K_INT, OFF(api_max_streams), "256", 1, 65536, false},
    {"api.head_timeout_s", K_INT, OFF(api_head_timeout_s), "10", 1, 3600,
     false},
    {"api.body_timeout_s", K_INT, OFF(api_body_timeout_s), "60", 1, 86400,
     false},
    {"api.max_head_bytes", K_INT, OFF(api_max_head_bytes), "16384", 1024, 49152,
     false},
    {"api.max_url_bytes", K_INT, OFF(api_max_url_bytes), "8192", 256, 16384,
     false},
    {"api.probe_listen", K_STR, OFF(api_probe_listen), "", 0, 0, false},
    {"api.judge_heads", K_STR, OFF(api_judge_heads), "", 0, 0, false},
    {"store.synchronous", K_SYNC, OFF(store_sync_full), "full", 0, 0, false},
    {"store.max_batch", K_INT, OFF(store_max_batch), "512", 1, 10000, false},
    {"store.readers", K_INT, OFF(store_readers), "8", 1, 64, false},
    {"store.backend", K_STR, OFF(store_backend), "sqlite", 0, 0, false},
    {"store.dsn", K_STR, OFF(store_dsn), "", 0, 0, false},
    {"store.password_file", K_STR, OFF(store_password_file), "", 0, 0, false},
    {"ha.renew_ms", K_INT, OFF(ha_renew_ms), "2000", 50, 60000, false},
    {"ha.lease_ms", K_INT, OFF(ha_lease_ms), "8000", 200, 600000, false},
    {"ha.name", K_STR, OFF(ha_name), "", 0, 0, false},
    {"scheduler.tick_ms", K_INT, OFF(sched_tick_ms), "1000", 10, 600000, false},
    {"scheduler.pass_budget_ms", K_INT, OFF(sched_pass_budget_ms), "500", 10,
     600000, false},
    {"scheduler.max_place_per_tick", K_INT, OFF(sched_max_place), "64", 1,
     100000, false},
    {"shutdown_timeout_s", K_INT, OFF(shutdown_timeout_s), "30", 0, 86400,
     false},
    {"scheduler.offers_ttl_s", K_INT, OFF(sched_offers_ttl_s), "300", 1, 86400,
     false},
    {"providers", K_RAW_SEQ, OFF(providers), NULL, 0, 0, false},
    {"auth.mode", K_STR, OFF(auth_mode), "tokens", 0, 0, false},
    {"auth.admin_token_file", K_STR, OFF(auth_admin_token_file), "", 0, 0,
     false},
    {"auth.rate_limit_per_s", K_INT, OFF(auth_rate_per_s), "50", 0, 1000000,
     false},
    {"auth.rate_limit_burst", K_INT, OFF(auth_rate_burst), "100", 1, 1000000,
     false},
    /* validated by api/oidc.h (tw_oidc_cfg_parse) at start */
    {"auth.oidc", K_RAW_MAP, OFF(auth_oidc), NULL, 0, 0, false},
    {"tls.cert_file", K_STR, OFF(tls_cert_file), "", 0, 0, false},
    {"tls.key_file", K_STR, OFF(tls_key_file), "", 0, 0, false},
    {"secrets.key_file", K_STR, OFF(secrets_key_file), "", 0, 0, false},
    {"secrets.key_env", K_STR, OFF(secrets_key_env), "TRADEWIND_SECRETS_KEY", 0,
     0, false},
    {"secrets.previous_key_file", K_STR, OFF(secrets_previous_key_file), "", 0,
     0, false},
    {"secrets.previous_key_env", K_STR, OFF(secrets_previous_key_env), "", 0, 0,
     false},
    {"tenancy.tick_ms", K_INT, OFF(tenancy_tick_ms), "5000", 100, 3600000,
     false},
    /* CIDR blocks a budget webhook may reach though loopback, link-local or
     * private (broker/tenancy/webhook_guard.c checks each) */
    {"tenancy.webhook_allow", K_RAW_SEQ, OFF(tenancy_webhook_allow), NULL, 0, 0,
     false},
    /* the spot lifecycle (docs/spot.md) */
    {"spot.fallback", K_STR, OFF(spot_fallback), "failover", 0, 0, false},
    {"spot.on_demand_after", K_INT, OFF(spot_on_demand_after), "2", 1, 100,
     false},
    {"spot.restart_overhead_s", K_INT, OFF(spot_restart_overhead_s), "300", 1,
     86400, false},
    {"spot.deadline_margin_s", K_INT, OFF(spot_deadline_margin_s), "0", 0,
     86400, false},
    {"spot.review_s", K_INT, OFF(spot_review_s), "60", 1, 3600, false},
    {"spot.blocklist_offer_s", K_INT, OFF(spot_bl_offer_s), "600", 1, 86400,
     false},
    {"spot.blocklist_zone_s", K_INT, OFF(spot_bl_zone_s), "1800", 1, 86400,
     false},
    {"spot.blocklist_region_s", K_INT, OFF(spot_bl_region_s), "3600", 1, 86400,
     false},
    {"spot.blocklist_window_s", K_INT, OFF(spot_bl_window_s), "1800", 1, 86400,
     false},
    {"spot.blocklist_zone_after", K_INT, OFF(spot_bl_zone_after), "3", 1, 1000,
     false},
    {"spot.blocklist_region_after", K_INT, OFF(spot_bl_region_after), "2", 1,
     1000, false},
    /* 0: no reconciler */
    {"reconcile.interval_s", K_INT, OFF(reconcile_interval_s), "60", 0, 86400,
     false},
    /* tradewind-agent (docs/agent.md) */
    {"agent.install", K_STR, OFF(agent_install), "fetch", 0, 0, false},
    {"agent.path", K_STR, OFF(agent_path), "tradewind-agent", 0, 0, false},
    /* "": tradewind-agent beside the tradewindd executable */
    {"agent.binary", K_STR, OFF(agent_binary), "", 0, 0, false},
    /* "": the daemon's own listen address */
    {"agent.broker_url", K_STR, OFF(agent_broker_url), "", 0, 0, false},
    {"agent.heartbeat_s", K_INT, OFF(agent_heartbeat_s), "10", 1, 3600, false},
    {"agent.heartbeat_timeout_s", K_INT, OFF(agent_heartbeat_timeout_s), "120",
     2, 86400, false},
    {"agent.max_log_bytes", K_INT, OFF(agent_max_log_bytes), "67108864", 4096,
     (int64_t)1 << 40, false},
    /* the shortest notice a cloud gives (docs/spot.md): what a job is
     * promised between SIGTERM and SIGKILL */
    {"agent.grace_s", K_INT, OFF(agent_grace_s), "30", 10, 3600, false},
    /* validated by billing/ledger/meter.h (tw_meter_cfg_parse) at start and
       reload */
    {"billing", K_RAW_MAP, OFF(billing), NULL, 0, 0, true},
    /* validated by billing/catalog/catalog.h (tw_catalog_new_from_cfg) at start
     */
    {"catalog", K_RAW_MAP, OFF(catalog), NULL, 0, 0, false},
    /* validated whole by policies/place/policy.h (tw_policy_set_build) at start
     * and before a reload applies anything */
    {"policies", K_RAW_MAP, OFF(policies), NULL, 0, 0, true},
    /* validated by tw_spec_machine_parse (spec.h) at load */
    {"machine", K_RAW_MAP, OFF(machine), NULL, 0, 0, false},
    /* traces over OTLP/HTTP JSON (docs/observability.md); "" endpoint: off */
    {"otel.endpoint", K_STR, OFF(otel_endpoint), "", 0, 0, false},
    {"otel.service_name", K_STR, OFF(otel_service_name), "tradewindd", 0, 0,
     false},
    {"otel.sampling", K_STR, OFF(otel_sampling), "1", 0, 0, false},
    {"otel.headers", K_RAW_MAP, OFF(otel_headers), NULL, 0, 0, false},
    {"otel.queue_max", K_INT, OFF(otel_queue_max), "2048", 1, 1000000, false},
    {"otel.batch_max", K_INT, OFF(otel_batch_max), "512", 1, 100000, false},
    {"otel.flush_ms", K_INT, OFF(otel_flush_ms), "1000", 10, 600000, false},
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

/* Sections: mappings whose keys are listed above. */
static const char *const SECTIONS[] = {
    "log",     "api",     "store", "scheduler", "auth", "tls",
    "secrets", "tenancy", "spot",  "reconcile", "agent", "otel", "ha",
    NULL};

static bool is_section(const char *path) {
  for (int i = 0; SECTIONS[i]; i++)
    if (!strcmp(SECTIONS[i], path))
      return true;
  return false;
}

static const struct key *find_key(const char *path) {
  for (size_t i = 0; i < NKEYS; i++)
    if (!strcmp(KEYS[i].path, path))
      return &KEYS[i];
  return NULL;
}

static enum tw_rc set_value(struct tw_cfg *c, const struct key *k,
                            const struct tw_node *n, const char *text,
                            struct tw_err *err) {
  char *base = (char *)c;
  switch (k->type) {
  case K_STR:
    if (n && (n->kind != TW_NODE_SCALAR || !*n->str))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected a non-empty string, got %s", k->path,
                          tw_node_type_name(n));
    /* the name itself is checked against the fallback table by
     * check_fallback(), when the loader was given it */
    if (!strcmp(k->path, "spot.fallback") && !tw_spec_name_word(text))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected a strategy name (lower-case letters, "
                          "digits, '-'), got \"%s\"",
                          k->path, text);
    if (!strcmp(k->path, "log.format") && strcmp(text, "text") &&
        strcmp(text, "journald") && strcmp(text, "json"))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected text, journald or json, got \"%s\"",
                          k->path, text);
    if (!strcmp(k->path, "otel.sampling")) {
      char *end = NULL;
      double v = strtod(text, &end);
      if (!end || *end || end == text || !(v >= 0 && v <= 1))
        return tw_err_field(err, TW_E_INVALID, k->path,
                            "%s: expected a share of traces from 0 to 1 "
                            "(0.25, 1), got \"%s\"",
                            k->path, text);
      c->otel_sampling_ratio = v;
    }
    if (!strcmp(k->path, "otel.endpoint") && *text &&
        ((strncmp(text, "http://", 7) && strncmp(text, "https://", 8)) ||
         strpbrk(text, " \t\r\n")))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected an http:// or https:// URL, got \"%s\"",
                          k->path, text);
    if (!strcmp(k->path, "auth.mode") && strcmp(text, "tokens") &&
        strcmp(text, "open"))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected tokens or open, got \"%s\"", k->path,
                          text);
    if (!strcmp(k->path, "agent.install") && strcmp(text, "fetch") &&
        strcmp(text, "preinstalled"))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected fetch or preinstalled, got \"%s\"",
                          k->path, text);
    if (!strcmp(k->path, "agent.broker_url") && *text &&
        ((strncmp(text, "http://", 7) && strncmp(text, "https://", 8)) ||
         strpbrk(text, "'\"\\ \t\r\n$`")))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected an http:// or https:// URL without "
                          "quotes, spaces or '$', got \"%s\"",
                          k->path, text);
    if ((!strcmp(k->path, "agent.path") || !strcmp(k->path, "agent.binary")) &&
        strpbrk(text, "'\"\\\r\n$`"))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: a path without quotes, '$' or '`', got \"%s\"",
                          k->path, text);
    if (!strcmp(k->path, "listen") ||
        (!strcmp(k->path, "api.probe_listen") && *text)) {
      const char *colon = strrchr(text, ':');
      char *end;
      long port = colon ? strtol(colon + 1, &end, 10) : -1;
      if (!colon || colon == text || !colon[1] || *end || port < 0 ||
          port > 65535)
        return tw_err_field(
            err, TW_E_INVALID, k->path,
            "%s: expected HOST:PORT with a port 0..65535, got \"%s\"", k->path,
            text);
    }
    free(*(char **)(base + k->off));
    *(char **)(base + k->off) = tw_strdup(text);
    return TW_OK;
  case K_INT: {
    int64_t v;
    struct tw_node tmp = {.kind = TW_NODE_SCALAR, .str = (char *)text};
    if (!tw_node_as_int(n ? n : &tmp, &v))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected an integer, got %s", k->path,
                          n ? tw_node_type_name(n) : text);
    if (v < k->min || v > k->max)
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: must be between %lld and %lld, got %lld",
                          k->path, (long long)k->min, (long long)k->max,
                          (long long)v);
    *(int64_t *)(base + k->off) = v;
    return TW_OK;
  }
  case K_LEVEL: {
    enum tw_log_level lvl;
    if ((n && n->kind != TW_NODE_SCALAR) || !tw_log_level_parse(text, &lvl))
      return tw_err_field(
          err, TW_E_INVALID, k->path,
          "%s: expected one of debug, info, warn, error, got \"%s\"", k->path,
          n && n->kind != TW_NODE_SCALAR ? tw_node_type_name(n) : text);
    *(enum tw_log_level *)(base + k->off) = lvl;
    return TW_OK;
  }
  case K_SYNC:
    if ((n && n->kind != TW_NODE_SCALAR) ||
        (strcmp(text, "full") && strcmp(text, "normal")))
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected full or normal, got \"%s\"", k->path,
                          n && n->kind != TW_NODE_SCALAR ? tw_node_type_name(n)
                                                         : text);
    *(bool *)(base + k->off) = !strcmp(text, "full");
    return TW_OK;
  case K_SUBSYS: {
    struct tw_buf b;
    tw_buf_init(&b);
    if (n && n->kind == TW_NODE_SEQ) {
      for (size_t i = 0; i < n->n; i++) {
        if (n->items[i]->kind != TW_NODE_SCALAR) {
          tw_buf_release(&b);
          return tw_err_field(err, TW_E_INVALID, k->path,
                              "%s[%zu]: expected a subsystem name, got %s",
                              k->path, i, tw_node_type_name(n->items[i]));
        }
        tw_buf_printf(&b, "%s%s", i ? "," : "", n->items[i]->str);
      }
    } else if (n && n->kind != TW_NODE_SCALAR) {
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected a list of subsystem names, got %s",
                          k->path, tw_node_type_name(n));
    } else {
      tw_buf_adds(&b, text);
    }
    free(*(char **)(base + k->off));
    *(char **)(base + k->off) = tw_buf_detach(&b);
    return TW_OK;
  }
  case K_RAW_SEQ:
    if (n && n->kind != TW_NODE_SEQ && n->kind != TW_NODE_NULL)
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected a list%s, got %s", k->path,
                          strcmp(k->path, "providers") ? "" : " of providers",
                          tw_node_type_name(n));
    *(const struct tw_node **)(base + k->off) =
        n && n->kind == TW_NODE_SEQ ? n : NULL;
    return TW_OK;
  case K_RAW_MAP:
    if (n && n->kind != TW_NODE_MAP && n->kind != TW_NODE_NULL)
      return tw_err_field(err, TW_E_INVALID, k->path,
                          "%s: expected a mapping, got %s", k->path,
                          tw_node_type_name(n));
    *(const struct tw_node **)(base + k->off) =
        n && n->kind == TW_NODE_MAP ? n : NULL;
    return TW_OK;
  }
  return TW_E_INTERNAL;
}

static enum tw_rc walk(struct tw_cfg *c, const struct tw_node *m,
                       const char *prefix, struct tw_err *err) {
  for (size_t i = 0; i < m->n; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "",
             m->keys[i]);
    const struct key *k = find_key(path);
    const struct tw_node *v = m->items[i];
    enum tw_rc rc;
    if (k) {
      if (v->kind == TW_NODE_NULL && k->type != K_RAW_SEQ &&
          k->type != K_RAW_MAP)
        return tw_err_field(err, TW_E_INVALID, path, "%s: a value is required",
                            path);
      if ((rc = set_value(c, k, v, v->kind == TW_NODE_SCALAR ? v->str : "",
                          err)))
        return rc;
    } else if (is_section(path)) {
      if (v->kind != TW_NODE_MAP)
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s: expected a mapping, got %s", path,
                            tw_node_type_name(v));
      if ((rc = walk(c, v, path, err)))
        return rc;
    } else {
      /* suggest among the names known at this level */
      const char *cands[NKEYS + 4];
      size_t nc = 0, plen = strlen(prefix);
      for (size_t j = 0; j < NKEYS; j++) {
        const char *p = KEYS[j].path;
        if (plen && (strncmp(p, prefix, plen) || p[plen] != '.'))
          continue;
        const char *rest = plen ? p + plen + 1 : p;
        if (!strchr(rest, '.'))
          cands[nc++] = rest;
      }
      if (!plen)
        for (int j = 0; SECTIONS[j]; j++)
          cands[nc++] = SECTIONS[j];
      cands[nc] = NULL;
      const char *near = tw_closest(m->keys[i], cands);
      if (near)
        return tw_err_field(err, TW_E_INVALID, path,
                            "%s: unknown key; did you mean \"%s\"?", path,
                            near);
      return tw_err_field(err, TW_E_INVALID, path, "%s: unknown key", path);
    }
  }
  return TW_OK;
}

void tw_cfg_free(struct tw_cfg *cfg) {
  if (!cfg)
    return;
  free(cfg->listen);
  free(cfg->api_probe_listen);
  free(cfg->api_judge_heads);
  free(cfg->db);
  free(cfg->store_backend);
  free(cfg->store_dsn);
  free(cfg->store_password_file);
  free(cfg->ha_name);
  free(cfg->log_debug);
  free(cfg->log_format);
  free(cfg->auth_mode);
  free(cfg->auth_admin_token_file);
  free(cfg->tls_cert_file);
  free(cfg->tls_key_file);
  free(cfg->secrets_key_file);
  free(cfg->secrets_key_env);
  free(cfg->secrets_previous_key_file);
  free(cfg->secrets_previous_key_env);
  free(cfg->spot_fallback);
  free(cfg->agent_install);
  free(cfg->agent_path);
  free(cfg->agent_binary);
  free(cfg->agent_broker_url);
  free(cfg->otel_endpoint);
  free(cfg->otel_service_name);
  free(cfg->otel_sampling);
  tw_node_free(cfg->root);
  free(cfg);
}

/* spot.fallback, given or defaulted, must be one of the table's names. */
static enum tw_rc check_fallback(const struct tw_cfg *c,
                                 const char *const *known, struct tw_err *err) {
  for (size_t i = 0; known[i]; i++)
    if (!strcmp(known[i], c->spot_fallback))
      return TW_OK;
  char list[256];
  tw_spec_names_join(known, list, sizeof list);
  return tw_err_field(err, TW_E_INVALID, "spot.fallback",
                      "spot.fallback: expected %s, got \"%s\"", list,
                      c->spot_fallback);
}

static enum tw_rc load_tree(struct tw_node *root,
                            const struct tw_cfg_load_opts *opts,
                            struct tw_cfg **out, struct tw_err *err) {
  struct tw_cfg *c = tw_calloc(1, sizeof *c);
  enum tw_rc rc = TW_OK;
  c->root = root;
  for (size_t i = 0; i < NKEYS; i++)
    if (KEYS[i].def && (rc = set_value(c, &KEYS[i], NULL, KEYS[i].def, err)))
      goto fail;
  if (root->kind == TW_NODE_NULL)
    goto done; /* an empty file: all defaults */
  if (root->kind != TW_NODE_MAP) {
    rc = tw_err_set(err, TW_E_INVALID,
                    "config: expected a mapping at the top, got %s",
                    tw_node_type_name(root));
    goto fail;
  }
  if ((rc = walk(c, root, "", err)))
    goto fail;
done:
  if (c->agent_heartbeat_timeout_s <= c->agent_heartbeat_s) {
    rc = tw_err_field(err, TW_E_INVALID, "agent.heartbeat_timeout_s",
                      "agent.heartbeat_timeout_s: must be more than "
                      "agent.heartbeat_s (%lld), got %lld",
                      (long long)c->agent_heartbeat_s,
                      (long long)c->agent_heartbeat_timeout_s);
    goto fail;
  }
  if (opts && opts->fallbacks && (rc = check_fallback(c, opts->fallbacks, err)))
    goto fail;
  struct tw_spec_machine mc;
  if ((rc = tw_spec_machine_parse(c->machine, &mc, err)))
    goto fail;
  tw_spec_machine_release(&mc);
  if (strcmp(c->store_backend, "sqlite") && strcmp(c->store_backend, "postgres")) {
    rc = tw_err_field(err, TW_E_INVALID, "store.backend",
                      "store.backend: expected sqlite or postgres, got \"%s\"",
                      c->store_backend);
    goto fail;
  }
  if (c->ha_lease_ms < 2 * c->ha_renew_ms) {
    rc = tw_err_field(err, TW_E_INVALID, "ha.lease_ms",
                      "ha.lease_ms: must be at least twice ha.renew_ms (%lld), "
                      "got %lld",
                      (long long)c->ha_renew_ms, (long long)c->ha_lease_ms);
    goto fail;
  }
  if (!strcmp(c->store_backend, "postgres") && !c->store_dsn[0]) {
    rc = tw_err_field(err, TW_E_INVALID, "store.dsn",
                      "store.dsn: required with store.backend postgres (a "
                      "libpq connection string)");
    goto fail;
  }
  *out = c;
  return TW_OK;
fail:
  tw_cfg_free(c);
  return rc;
}

enum tw_rc tw_cfg_load_text_opts(const char *text, size_t len,
                                 const struct tw_cfg_load_opts *opts,
                                 struct tw_cfg **out, struct tw_err *err) {
  struct tw_node *root = NULL;
  enum tw_rc rc;
  *out = NULL;
  /* an empty or comment-only file means all defaults */
  bool blank = true;
  for (size_t i = 0; i < len && blank; i++) {
    if (text[i] == '#') {
      while (i < len && text[i] != '\n')
        i++;
    } else if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' &&
               text[i] != '\r') {
      blank = false;
    }
  }
  if (blank) {
    struct tw_node *empty = tw_calloc(1, sizeof *empty);
    empty->kind = TW_NODE_NULL;
    return load_tree(empty, opts, out, err);
  }
  if ((rc = tw_node_parse_yaml(text, len, &root, err)))
    return rc;
  return load_tree(root, opts, out, err);
}

enum tw_rc tw_cfg_load_text(const char *text, size_t len, struct tw_cfg **out,
                            struct tw_err *err) {
  return tw_cfg_load_text_opts(text, len, NULL, out, err);
}

enum tw_rc tw_cfg_load_file_opts(const char *path,
                                 const struct tw_cfg_load_opts *opts,
                                 struct tw_cfg **out, struct tw_err *err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_set(err, TW_E_IO, "config %s: cannot open", path);
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    tw_buf_add(&b, chunk, n);
    if (b.len > (4u << 20)) {
      fclose(f);
      tw_buf_release(&b);
      return tw_err_set(err, TW_E_TOOBIG, "config %s: larger than 4 MiB", path);
    }
  }
  fclose(f);
  struct tw_err local = {0};
  enum tw_rc rc =
      tw_cfg_load_text_opts(b.data ? b.data : "", b.len, opts, out, &local);
  tw_buf_release(&b);
  if (rc) {
    tw_err_set(err, rc, "config %s: %s", path, local.msg);
    if (err)
      memcpy(err->field, local.field, sizeof err->field);
  }
  return rc;
}

void tw_cfg_keep_fixed(const struct tw_cfg *old, struct tw_cfg *next,
                       char **report) {
  struct tw_buf b;
  tw_buf_init(&b);
  char *ob = (char *)old, *nb = (char *)next;
  for (size_t i = 0; i < NKEYS; i++) {
    const struct key *k = &KEYS[i];
    if (k->reloadable)
      continue;
    bool differ = false;
    switch (k->type) {
    case K_STR:
    case K_SUBSYS:
      differ = strcmp(*(char **)(ob + k->off), *(char **)(nb + k->off)) != 0;
      if (differ) {
        free(*(char **)(nb + k->off));
        *(char **)(nb + k->off) = tw_strdup(*(char **)(ob + k->off));
      }
      break;
    case K_INT:
      differ = *(int64_t *)(ob + k->off) != *(int64_t *)(nb + k->off);
      *(int64_t *)(nb + k->off) = *(int64_t *)(ob + k->off);
      break;
    case K_SYNC:
      differ = *(bool *)(ob + k->off) != *(bool *)(nb + k->off);
      *(bool *)(nb + k->off) = *(bool *)(ob + k->off);
      break;
    case K_LEVEL:
      break;
    case K_RAW_MAP:
    case K_RAW_SEQ: {
      /* compare the sections as JSON text; the provider set changes only
       * with a restart for now */
      struct tw_buf x, y;
      tw_buf_init(&x);
      tw_buf_init(&y);
      const struct tw_node *a = *(struct tw_node **)(ob + k->off);
      const struct tw_node *c = *(struct tw_node **)(nb + k->off);
      if (a)
        tw_node_to_json(a, &x);
      if (c)
        tw_node_to_json(c, &y);
      differ = x.len != y.len || (x.len && memcmp(x.data, y.data, x.len));
      tw_buf_release(&x);
      tw_buf_release(&y);
      break;
    }
    }
    if (differ)
      tw_buf_printf(&b,
                    "%s%s: changed in the file; takes effect after a restart",
                    b.len ? "\n" : "", k->path);
  }
  *report = b.len ? tw_buf_detach(&b) : (tw_buf_release(&b), NULL);
}

enum tw_rc tw_cfg_load_file(const char *path, struct tw_cfg **out,
                            struct tw_err *err) {
  return tw_cfg_load_file_opts(path, NULL, out, err);
}
