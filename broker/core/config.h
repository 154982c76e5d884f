/* config.h - the daemon's configuration: YAML, described by one table in
 * config.c (path, type, default, bounds, whether a reload may change it).
 *
 * Loading parses and validates everything before building a struct
 * tw_cfg; an error names the key path and the reason
 * (`store.max_batch: must be between 1 and 10000, got 0`) and nothing is
 * applied.  A reload (SIGHUP) builds a new config the same way; keys that
 * cannot change without a restart are reported and keep their old value. */
#ifndef TW_BROKER_CONFIG_H
#define TW_BROKER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/log.h"

struct tw_node;

struct tw_cfg {
  char *listen; /* "HOST:PORT" */
  char *db;     /* sqlite file */
  enum tw_log_level log_level;
  char *log_debug; /* comma-separated subsystems, "" for none */
  char *log_format; /* text | journald | json (broker/base/log.h) */
  int64_t api_max_body_bytes;
  int64_t api_max_workdir_bytes; /* PUT /v1/workdirs/{sha256} bodies */
  int64_t api_max_connections;
  int64_t api_timeout_s;       /* idle connection timeout */
  int64_t api_max_per_address; /* connections from one address at once */
  int64_t api_threads;         /* the server's thread pool */
  int64_t api_head_timeout_s;  /* deadline of a whole request head */
  int64_t api_body_timeout_s;  /* deadline of a whole request body */
  int64_t api_max_head_bytes;  /* 431 beyond */
  int64_t api_max_url_bytes;   /* 414 beyond */
  int64_t api_max_streams;     /* GET /v1/events/stream open at once */
  char *api_probe_listen;      /* "HOST:PORT" of the probes alone; "" none */
  char *api_judge_heads;       /* deprecated, no effect (docs/security.md) */
  bool store_sync_full;        /* synchronous: full | normal */
  int64_t store_max_batch;
  int64_t store_readers;
  char *store_backend;       /* sqlite | postgres (docs/ha.md) */
  char *store_dsn;           /* postgres: libpq connection string */
  char *store_password_file; /* postgres: the password, read at start */
  int64_t ha_renew_ms;       /* the leader renews its lease this often */
  int64_t ha_lease_ms;       /* a lease not renewed for this long is taken */
  char *ha_name;             /* this replica's name; "" host:port of the API */
  int64_t sched_tick_ms;        /* scheduler pass interval */
  int64_t sched_pass_budget_ms; /* longest wait of a pass for its calls */
  int64_t sched_max_place;      /* jobs one pass may place */
  int64_t shutdown_timeout_s;   /* SIGTERM: in-flight launches handed back
                                   within this, then abandoned */
  int64_t sched_offers_ttl_s;   /* how long a provider's offers are reused */
  struct tw_node *providers; /* the providers: sequence as written, or NULL */
  struct tw_node *tenancy_webhook_allow; /* sequence of CIDR blocks, or NULL */
  /* security (api/auth_daemon.h); "" where a path is optional */
  char *auth_mode; /* tokens | open */
  char *auth_admin_token_file;
  int64_t auth_rate_per_s; /* per token; 0: no limit */
  int64_t auth_rate_burst;
  char *tls_cert_file, *tls_key_file;
  struct tw_node *auth_oidc; /* identity providers: mapping (api/oidc.h), or
                               NULL */
  char *secrets_key_file, *secrets_key_env;
  char *secrets_previous_key_file, *secrets_previous_key_env;
  int64_t tenancy_tick_ms; /* budget alerts and stops */
  struct tw_node
      *billing; /* the billing: mapping (billing/ledger/meter.h), or NULL */
  struct tw_node
      *catalog; /* the catalog: mapping (billing/catalog/catalog.h), or NULL */
  struct tw_node
      *policies; /* the policies: mapping (policies/place/policy.h), or NULL */
  struct tw_node *machine; /* the job's machine allow-list: mapping
                              (tw_spec_machine_parse, spec.h), or NULL */
  /* the spot lifecycle (docs/spot.md) */
  char *spot_fallback; /* default strategy for jobs that name none */
  int64_t spot_on_demand_after, spot_restart_overhead_s, spot_deadline_margin_s;
  int64_t spot_review_s; /* running attempts reviewed by their strategy */
  int64_t spot_bl_offer_s, spot_bl_zone_s, spot_bl_region_s, spot_bl_window_s;
  int64_t spot_bl_zone_after, spot_bl_region_after;
  int64_t reconcile_interval_s; /* 0: no reconciler */
  /* tradewind-agent (docs/agent.md); "" where a default is computed */
  char *agent_install;    /* fetch | preinstalled */
  char *agent_path;       /* the preinstalled agent */
  char *agent_binary;     /* served at GET /v1/agent/binary; "": beside
                             tradewindd */
  char *agent_broker_url; /* "": from listen (https with TLS) */
  int64_t agent_heartbeat_s, agent_heartbeat_timeout_s;
  int64_t agent_max_log_bytes; /* per attempt, both streams */
  int64_t agent_grace_s;       /* SIGTERM to SIGKILL */
  /* traces (docs/observability.md): otel_endpoint "" is off */
  char *otel_endpoint, *otel_service_name;
  char *otel_sampling;        /* as written */
  double otel_sampling_ratio; /* 0..1 */
  struct tw_node *otel_headers; /* mapping name: value, or NULL */
  int64_t otel_queue_max, otel_batch_max, otel_flush_ms;
  struct tw_node *root;         /* the whole document (owned) */
};

/* What loading checks against tables the core cannot see (it may not
 * include policies/), filled by whoever links them. */
struct tw_cfg_load_opts {
  /* The names spot.fallback may take, NULL-terminated: the fallback
   * table's (tw_fallback_names(), policies/fallback/fallback_strategy.h).
   * An unknown one is TW_E_INVALID naming spot.fallback and listing the
   * names.  NULL: any strategy-shaped word (tw_spec_name_word()); whoever
   * turns it into a strategy must then refuse a name its table lacks (the
   * daemon refuses to start). */
  const char *const *fallbacks;
};

/* Loads and validates a file.  opts may be NULL (no tables: see above).
 * *out is owned (tw_cfg_free). */
enum tw_rc tw_cfg_load_file_opts(const char *path,
                                 const struct tw_cfg_load_opts *opts,
                                 struct tw_cfg **out, struct tw_err *err);
/* Same from text (tests). */
enum tw_rc tw_cfg_load_text_opts(const char *text, size_t len,
                                 const struct tw_cfg_load_opts *opts,
                                 struct tw_cfg **out, struct tw_err *err);
/* The above without tables (opts NULL). */
enum tw_rc tw_cfg_load_file(const char *path, struct tw_cfg **out,
                            struct tw_err *err);
enum tw_rc tw_cfg_load_text(const char *text, size_t len, struct tw_cfg **out,
                            struct tw_err *err);
void tw_cfg_free(struct tw_cfg *cfg);

/* Carries the values that cannot change at run time from old into next, and
 * writes a line naming each such key that differed into *report (owned,
 * NULL when nothing was refused). */
void tw_cfg_keep_fixed(const struct tw_cfg *old, struct tw_cfg *next,
                       char **report);

#endif
