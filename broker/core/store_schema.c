/* store_schema.c - the schema of every module, in one place.
 *
 * The core tables (jobs, job_events, attempts, schema_modules) are numbered
 * by PRAGMA user_version in store.c.  Every other table belongs to a module
 * whose migrations are numbered from 1 here, the version reached kept per
 * module in schema_modules: the numbering is the one each module used when
 * it migrated itself, so databases made by earlier builds open unchanged.
 * tw_store_open() applies them all, in the order of TW_STORE_MODULES.
 * Only append: a new table or column is a new entry at the end of its
 * module's array (or a new module at the end of the list). */
#include "broker/core/store_int.h"

#include "broker/base/log.h"

/* ---- module "gang" */

static const char *const MIG_GANG[] = {
    /* 1: the instances of a multi-node attempt */
    "CREATE TABLE attempt_instances ("
    "  attempt_id INTEGER NOT NULL REFERENCES attempts(id),"
    "  k INTEGER NOT NULL,"
    "  instance_id TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  PRIMARY KEY (attempt_id, k));",
};

/* ---- module "datasets" */

static const char MIG_DATASETS_1[] =
    "CREATE TABLE datasets ("
    " uri TEXT PRIMARY KEY,"
    " size_bytes INTEGER NOT NULL DEFAULT 0,"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE dataset_locations ("
    " uri TEXT NOT NULL REFERENCES datasets(uri),"
    " location TEXT NOT NULL,"
    " origin TEXT NOT NULL,"
    " cost_uusd INTEGER NOT NULL DEFAULT 0,"
    " created_ms INTEGER NOT NULL,"
    " note TEXT NOT NULL DEFAULT '',"
    " PRIMARY KEY (uri, location)) WITHOUT ROWID;"
    /* one row: bumped by every write, so readers can tell a change cheaply */
    "CREATE TABLE dataset_version (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " version INTEGER NOT NULL);"
    "INSERT INTO dataset_version (id, version) VALUES (1, 0);";

/* 2: the tenant that registered a dataset owns it; others read it only
 * when shared.  Datasets from before have no owner: the operator's ("*"),
 * shared, as they were. */
static const char MIG_DATASETS_2[] =
    "ALTER TABLE datasets ADD COLUMN owner TEXT NOT NULL DEFAULT '*';"
    "ALTER TABLE datasets ADD COLUMN shared INTEGER NOT NULL DEFAULT 1;";

static const char *const MIG_DATASETS[] = {MIG_DATASETS_1, MIG_DATASETS_2};

/* ---- module "catalog" */

static const char *const MIG_CATALOG[] = {
    /* 1: snapshots of each source, and the spot price history */
    "CREATE TABLE catalog_snapshots ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  source TEXT NOT NULL, kind TEXT NOT NULL, mode TEXT NOT NULL,"
    "  provider TEXT NOT NULL, account TEXT NOT NULL, path TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  currency TEXT NOT NULL, rate TEXT NOT NULL, rate_date TEXT NOT NULL,"
    "  fetched_ms INTEGER NOT NULL, stored_ms INTEGER NOT NULL,"
    "  rows INTEGER NOT NULL, normalized INTEGER NOT NULL,"
    "  offers INTEGER NOT NULL, report_json TEXT NOT NULL,"
    "  body BLOB);"
    "CREATE INDEX catalog_snapshots_source ON catalog_snapshots (source, id);"
    "CREATE TABLE catalog_prices ("
    "  offer_id TEXT NOT NULL, price_uusd INTEGER NOT NULL,"
    "  observed_ms INTEGER NOT NULL, snapshot INTEGER NOT NULL);"
    "CREATE INDEX catalog_prices_offer ON catalog_prices"
    "  (offer_id, observed_ms);",
};

/* ---- module "ledger" */

static const char MIG_LEDGER_1[] =
    "CREATE TABLE ledger ("
    " seq INTEGER PRIMARY KEY,"
    " recorded_ms INTEGER NOT NULL,"
    " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, day INTEGER NOT NULL,"
    " category INTEGER NOT NULL, correction INTEGER NOT NULL,"
    " service INTEGER NOT NULL,"
    " tenant TEXT NOT NULL, project TEXT NOT NULL, job_id TEXT NOT NULL,"
    " attempt_id INTEGER NOT NULL,"
    " provider TEXT NOT NULL, account TEXT NOT NULL, region TEXT NOT NULL,"
    " zone TEXT NOT NULL, instance_type TEXT NOT NULL,"
    " resource_id TEXT NOT NULL, market TEXT NOT NULL,"
    " nodes INTEGER NOT NULL, usage_ms INTEGER NOT NULL,"
    " quantity INTEGER NOT NULL, unit_price_uusd INTEGER NOT NULL,"
    " list_uusd INTEGER NOT NULL, effective_uusd INTEGER NOT NULL,"
    " corrects_seq INTEGER NOT NULL, description TEXT NOT NULL);"
    "CREATE INDEX ledger_by_start ON ledger(start_ms);"
    /* Append-only is enforced by the database itself, not by convention:
     * a correction is a new row. */
    "CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger"
    " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;"
    "CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger"
    " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;"
    /* Day first: reports select a range of days. */
    "CREATE TABLE ledger_day ("
    " day INTEGER NOT NULL, tenant TEXT NOT NULL, project TEXT NOT NULL,"
    " provider TEXT NOT NULL, region TEXT NOT NULL,"
    " list_uusd INTEGER NOT NULL, effective_uusd INTEGER NOT NULL,"
    " usage_ms INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " PRIMARY KEY (day, tenant, project, provider, region)) WITHOUT ROWID;"
    "CREATE TABLE ledger_job_day ("
    " job_id TEXT NOT NULL, day INTEGER NOT NULL, provider TEXT NOT NULL,"
    " region TEXT NOT NULL, tenant TEXT NOT NULL, project TEXT NOT NULL,"
    " list_uusd INTEGER NOT NULL, effective_uusd INTEGER NOT NULL,"
    " usage_ms INTEGER NOT NULL, rows INTEGER NOT NULL,"
    /* day first: rows arrive in time order, so the rollup is written near
     * its end, not all over (keyed by job it made appends 40 % slower) */
    " PRIMARY KEY (day, job_id, tenant, project, provider, region))"
    " WITHOUT ROWID;"
    "CREATE INDEX ledger_job_day_by_job ON ledger_job_day(job_id);"
    "CREATE TABLE ledger_budgets ("
    " tenant TEXT NOT NULL, project TEXT NOT NULL, limit_uusd INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, project)) WITHOUT ROWID;";

/* 2: how each row's effective cost was reached (the discount in basis
 * points, and whether it is a commitment rather than a negotiated rate:
 * FOCUS shows them in different columns), and each account's ids as the
 * provider's invoice names them (billing.providers.<name>.account_id). */
static const char MIG_LEDGER_2[] =
    "ALTER TABLE ledger ADD COLUMN discount_bp INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE ledger ADD COLUMN commitment INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE ledger_accounts ("
    " account TEXT PRIMARY KEY, account_id TEXT NOT NULL,"
    " account_name TEXT NOT NULL, account_type TEXT NOT NULL,"
    " commitment_id TEXT NOT NULL, commitment_name TEXT NOT NULL,"
    " commitment_type TEXT NOT NULL, commitment_category TEXT NOT NULL)"
    " WITHOUT ROWID;";

/* 3: spend by market (spot, on-demand) per day, tenant and project, the
 * rows already there summed in. */
static const char MIG_LEDGER_3[] =
    "CREATE TABLE ledger_market_day ("
    " day INTEGER NOT NULL, tenant TEXT NOT NULL, project TEXT NOT NULL,"
    " market TEXT NOT NULL, list_uusd INTEGER NOT NULL,"
    " effective_uusd INTEGER NOT NULL, usage_ms INTEGER NOT NULL,"
    " rows INTEGER NOT NULL,"
    " PRIMARY KEY (day, tenant, project, market)) WITHOUT ROWID;"
    "INSERT INTO ledger_market_day SELECT day, tenant, project, market,"
    " SUM(list_uusd), SUM(effective_uusd), SUM(usage_ms), COUNT(*)"
    " FROM ledger GROUP BY day, tenant, project, market;";

/* 4: the amount as billed in the provider's own currency (micro-CNY for
 * Alibaba), kept at metering time; rows before it have none ('', 0) */
static const char MIG_LEDGER_4[] =
    "ALTER TABLE ledger ADD COLUMN source_currency TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE ledger ADD COLUMN source_effective_micro INTEGER NOT NULL"
    " DEFAULT 0;"
    "ALTER TABLE ledger_day ADD COLUMN source_effective_micro INTEGER NOT NULL"
    " DEFAULT 0;"
    "ALTER TABLE ledger_day ADD COLUMN source_rows INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE ledger_job_day ADD COLUMN source_effective_micro INTEGER"
    " NOT NULL DEFAULT 0;"
    "ALTER TABLE ledger_job_day ADD COLUMN source_rows INTEGER NOT NULL"
    " DEFAULT 0;";

static const char *const MIG_LEDGER[] = {MIG_LEDGER_1, MIG_LEDGER_2,
                                         MIG_LEDGER_3, MIG_LEDGER_4};

/* ---- module "meter" */

static const char MIG_METER_1[] =
    "CREATE TABLE meter_attempts ("
    " attempt_id INTEGER PRIMARY KEY, job_id TEXT NOT NULL,"
    " tenant TEXT NOT NULL, project TEXT NOT NULL, provider TEXT NOT NULL,"
    " account TEXT NOT NULL, region TEXT NOT NULL, zone TEXT NOT NULL,"
    " instance_type TEXT NOT NULL, market TEXT NOT NULL,"
    " resource_id TEXT NOT NULL, nodes INTEGER NOT NULL,"
    " granularity_s INTEGER NOT NULL, min_charge_s INTEGER NOT NULL,"
    " price_uusd_per_hour INTEGER NOT NULL, running_ms INTEGER NOT NULL,"
    " metered_to_ms INTEGER NOT NULL, billed_s INTEGER NOT NULL,"
    " last_seq INTEGER NOT NULL, ended INTEGER NOT NULL);"
    "CREATE INDEX meter_attempts_open ON meter_attempts(ended);";

/* 2: the discount in force for the current period, so what a running
 * attempt has accrued can be priced without the meter's config. */
static const char MIG_METER_2[] =
    "ALTER TABLE meter_attempts ADD COLUMN discount_bp INTEGER NOT NULL"
    " DEFAULT 0;";

static const char *const MIG_METER[] = {MIG_METER_1, MIG_METER_2};

/* ---- module "audit" */

static const char *const MIG_AUDIT[] = {
    /* 1: the log.  seq is assigned by the writer as last + 1, never by
     * sqlite, so a removed entry leaves a gap that verify reports. */
    "CREATE TABLE audit_log ("
    "  seq INTEGER PRIMARY KEY,"
    "  at_ms INTEGER NOT NULL,"
    "  principal TEXT NOT NULL,"
    "  tenant TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  object TEXT NOT NULL,"
    "  outcome TEXT NOT NULL,"
    "  request_id TEXT NOT NULL,"
    "  detail TEXT NOT NULL,"
    "  prev_hash TEXT NOT NULL,"
    "  hash TEXT NOT NULL);"
    "CREATE INDEX audit_log_tenant ON audit_log(tenant, seq);",
};

/* ---- module "tenancy" */

static const char *const MIG_TENANCY[] = {
    /* 1: tenants, principals, tokens, quotas, budgets, owners */
    "CREATE TABLE tenancy_tenants ("
    "  name TEXT PRIMARY KEY,"
    "  cohort TEXT NOT NULL DEFAULT '',"
    "  spot_share_pct INTEGER NOT NULL DEFAULT 100,"
    "  quota_version INTEGER NOT NULL DEFAULT 1,"
    "  created_at_ms INTEGER NOT NULL);"
    "CREATE TABLE tenancy_quota ("
    "  tenant TEXT NOT NULL REFERENCES tenancy_tenants(name),"
    "  resource TEXT NOT NULL,"
    "  lim INTEGER NOT NULL,"
    "  borrow INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (tenant, resource));"
    "CREATE TABLE tenancy_principals ("
    "  name TEXT PRIMARY KEY,"
    "  tenant TEXT NOT NULL,"
    "  role TEXT NOT NULL,"
    "  service INTEGER NOT NULL DEFAULT 0,"
    "  disabled INTEGER NOT NULL DEFAULT 0,"
    "  created_at_ms INTEGER NOT NULL);"
    "CREATE INDEX tenancy_principals_tenant ON tenancy_principals(tenant);"
    /* hash: SHA-256 of the whole token text; the text itself is never kept */
    "CREATE TABLE tenancy_tokens ("
    "  id TEXT PRIMARY KEY,"
    "  principal TEXT NOT NULL REFERENCES tenancy_principals(name),"
    "  hash BLOB NOT NULL,"
    "  name TEXT NOT NULL DEFAULT '',"
    "  created_at_ms INTEGER NOT NULL,"
    "  expires_at_ms INTEGER NOT NULL DEFAULT 0,"
    "  revoked_at_ms INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX tenancy_tokens_principal ON tenancy_tokens(principal);"
    "CREATE TABLE tenancy_jobs ("
    "  job_id TEXT PRIMARY KEY,"
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  principal TEXT NOT NULL,"
    "  projected_uusd INTEGER NOT NULL DEFAULT 0,"
    "  created_at_ms INTEGER NOT NULL);"
    "CREATE INDEX tenancy_jobs_tenant ON tenancy_jobs(tenant, project);"
    "CREATE TABLE tenancy_reservations ("
    "  job_id TEXT PRIMARY KEY,"
    "  tenant TEXT NOT NULL,"
    "  offer_id TEXT NOT NULL,"
    "  vcpus INTEGER NOT NULL,"
    "  accel TEXT NOT NULL,"
    "  gpus INTEGER NOT NULL,"
    "  spot INTEGER NOT NULL,"
    "  at_ms INTEGER NOT NULL);"
    "CREATE TABLE tenancy_budgets ("
    "  tenant TEXT NOT NULL REFERENCES tenancy_tenants(name),"
    "  project TEXT NOT NULL,"
    "  period TEXT NOT NULL,"
    "  limit_uusd INTEGER NOT NULL,"
    "  thresholds TEXT NOT NULL,"
    "  hard INTEGER NOT NULL,"
    "  stop_running INTEGER NOT NULL,"
    "  webhook TEXT NOT NULL DEFAULT '',"
    "  version INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant, project));"
    "CREATE TABLE tenancy_budget_alerts ("
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  period_start_ms INTEGER NOT NULL,"
    "  threshold_pct INTEGER NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  spent_uusd INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant, project, period_start_ms, threshold_pct));",
};

/* ---- module "secrets" */

static const char *const MIG_SECRETS[] = {
    "CREATE TABLE secrets ("
    "  name TEXT PRIMARY KEY,"
    "  key_id TEXT NOT NULL,"
    "  nonce BLOB NOT NULL,"
    "  ciphertext BLOB NOT NULL,"
    "  tag BLOB NOT NULL,"
    "  updated_at_ms INTEGER NOT NULL);",
};

/* ---- module "spot" */

static const char *const MIG_SPOT[] = {
    /* 1: requests, what each attempt kept, decisions */
    "CREATE TABLE spot_requests ("
    "  attempt_id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  cause TEXT NOT NULL,"
    "  requested_at_ms INTEGER NOT NULL,"
    "  deadline_ms INTEGER NOT NULL);"
    "CREATE TABLE spot_progress ("
    "  attempt_id INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  attempt_n INTEGER NOT NULL,"
    "  resume_s INTEGER NOT NULL,"
    "  run_s INTEGER NOT NULL,"
    "  kept_s INTEGER NOT NULL,"
    "  how TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL);"
    "CREATE INDEX spot_progress_job ON spot_progress(job_id, attempt_n);"
    "CREATE TABLE spot_decisions ("
    "  seq INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  event TEXT NOT NULL,"
    "  strategy TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  market TEXT NOT NULL,"
    "  reason TEXT NOT NULL);"
    "CREATE INDEX spot_decisions_job ON spot_decisions(job_id, seq);",
};

/* ---- module "reconcile" */

static const char *const MIG_RECONCILE[] = {
    /* 1: what each pass did */
    "CREATE TABLE reconcile_log ("
    "  seq INTEGER PRIMARY KEY,"
    "  at_ms INTEGER NOT NULL,"
    "  provider TEXT NOT NULL,"
    "  instance_id TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  attempt TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  reason TEXT NOT NULL);",
};

/* ---- module "agent" */

static const char *const MIG_AGENT[] = {
    /* 1: the daemon's key (plain only without `secrets:`), the attempts
     * run by tradewind-agent with the SHA-256 of their tokens and what
     * the agent reported, its notices, its output */
    "CREATE TABLE agent_key ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  key BLOB NOT NULL);"
    "CREATE TABLE agent_attempts ("
    "  attempt_id INTEGER PRIMARY KEY REFERENCES attempts(id),"
    "  job_id TEXT NOT NULL,"
    "  client_token TEXT NOT NULL,"
    "  token_hash TEXT NOT NULL UNIQUE,"
    "  created_ms INTEGER NOT NULL,"
    "  registered_ms INTEGER NOT NULL DEFAULT 0,"
    "  instance_id TEXT NOT NULL DEFAULT '',"
    "  cloud TEXT NOT NULL DEFAULT '',"
    "  metadata TEXT NOT NULL DEFAULT '{}',"
    "  agent_version TEXT NOT NULL DEFAULT '',"
    "  phase TEXT NOT NULL DEFAULT '',"
    "  phase_ms INTEGER NOT NULL DEFAULT 0,"
    "  last_hb_ms INTEGER NOT NULL DEFAULT 0,"
    "  checkpoint_ms INTEGER NOT NULL DEFAULT 0,"
    "  progress_s INTEGER NOT NULL DEFAULT 0,"
    "  exit_ms INTEGER NOT NULL DEFAULT 0,"
    "  has_code INTEGER NOT NULL DEFAULT 0,"
    "  exit_code INTEGER NOT NULL DEFAULT 0,"
    "  signal INTEGER NOT NULL DEFAULT 0,"
    "  started_ms INTEGER NOT NULL DEFAULT 0,"
    "  ended_ms INTEGER NOT NULL DEFAULT 0,"
    "  after_notice INTEGER NOT NULL DEFAULT 0,"
    "  cancel_ms INTEGER NOT NULL DEFAULT 0,"
    "  ckpt_sent_ms INTEGER NOT NULL DEFAULT 0,"
    "  out_bytes INTEGER NOT NULL DEFAULT 0,"
    "  err_bytes INTEGER NOT NULL DEFAULT 0);"
    /* notices by attempt and event id (applied in the order they came) */
    "CREATE TABLE agent_notices ("
    "  attempt_id INTEGER NOT NULL,"
    "  event_id TEXT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  deadline_ms INTEGER NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  applied INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (attempt_id, event_id)) WITHOUT ROWID;"
    "CREATE TABLE agent_logs ("
    "  attempt_id INTEGER NOT NULL,"
    "  stream INTEGER NOT NULL,"
    "  off INTEGER NOT NULL,"
    "  data BLOB NOT NULL,"
    "  PRIMARY KEY (attempt_id, stream, off)) WITHOUT ROWID;",
    /* 2: a chunk's bytes in a segment file beside the database (seg, pos;
     * data empty) or in the row (seg -1); len either way */
    "ALTER TABLE agent_logs ADD COLUMN seg INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE agent_logs ADD COLUMN pos INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE agent_logs ADD COLUMN len INTEGER NOT NULL DEFAULT 0;"
    "UPDATE agent_logs SET len = length(data);",
};

/* ---- module "health" */

static const char *const MIG_HEALTH[] = {
    /* 1: the probe's scratch row (tw_store_probe), empty between probes */
    "CREATE TABLE store_probe (at_ms INTEGER NOT NULL, pad BLOB NOT NULL);",
};

/* ---- module "flow": dependencies, arrays, workflows (store_flow.c) */

static const char *const MIG_FLOW[] = {
    /* 1: groups, their templates, tasks, edges and delays; the cursor
     * over job_events the pass reads from */
    "CREATE TABLE flow_groups ("
    "  id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,"
    "  tenant TEXT NOT NULL, project TEXT NOT NULL, state TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '', fail_fast INTEGER NOT NULL,"
    "  max_running INTEGER NOT NULL, n_tasks INTEGER NOT NULL,"
    "  n_ready INTEGER NOT NULL DEFAULT 0, n_active INTEGER NOT NULL DEFAULT 0,"
    "  n_done INTEGER NOT NULL DEFAULT 0, n_failed INTEGER NOT NULL DEFAULT 0,"
    "  n_cancelled INTEGER NOT NULL DEFAULT 0,"
    "  cancel_asked INTEGER NOT NULL DEFAULT 0,"
    "  projected_uusd INTEGER NOT NULL DEFAULT 0,"
    "  created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL);"
    "CREATE INDEX flow_groups_ready ON flow_groups(created_at_ms)"
    "  WHERE n_ready > 0 AND state = 'running';"
    "CREATE INDEX flow_groups_running ON flow_groups(state)"
    "  WHERE state = 'running';"
    "CREATE TABLE flow_tmpl ("
    "  gid TEXT NOT NULL, t INTEGER NOT NULL, task TEXT NOT NULL,"
    "  spec TEXT NOT NULL, outputs TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY (gid, t)) WITHOUT ROWID;"
    "CREATE TABLE flow_tasks ("
    "  gid TEXT NOT NULL, idx INTEGER NOT NULL, tmpl INTEGER NOT NULL,"
    "  aindex INTEGER NOT NULL, param TEXT, state TEXT NOT NULL,"
    "  job_id TEXT, fan_any INTEGER NOT NULL, kill INTEGER NOT NULL,"
    "  n_in INTEGER NOT NULL, n_met INTEGER NOT NULL,"
    "  n_never INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY (gid, idx)) WITHOUT ROWID;"
    "CREATE INDEX flow_tasks_job ON flow_tasks(job_id) WHERE job_id IS NOT NULL;"
    "CREATE INDEX flow_tasks_ready ON flow_tasks(gid, idx) WHERE state = 'ready';"
    "CREATE INDEX flow_tasks_released ON flow_tasks(gid)"
    "  WHERE state = 'released';"
    "CREATE TABLE flow_edges (id INTEGER PRIMARY KEY,"
    "  src TEXT NOT NULL, sidx INTEGER NOT NULL, dgid TEXT NOT NULL,"
    "  didx INTEGER NOT NULL, cond INTEGER NOT NULL,"
    "  delay_s INTEGER NOT NULL DEFAULT 0, res INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX flow_edges_src ON flow_edges(src, sidx);"
    "CREATE INDEX flow_edges_dst ON flow_edges(dgid, didx);"
    "CREATE TABLE flow_timers (id INTEGER PRIMARY KEY, due_ms INTEGER NOT NULL,"
    "  edge INTEGER NOT NULL);"
    "CREATE INDEX flow_timers_due ON flow_timers(due_ms);"
    "CREATE TABLE flow_cursor (id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  seq INTEGER NOT NULL);"
    /* -1: set to the newest job event by the first write that needs it
     * (store_flow.c, cursor_start): older events concern no group */
    "INSERT INTO flow_cursor VALUES (1, -1);",
};

/* ---- module "ha" (store_ha.c, docs/ha.md) */

static const char *const MIG_HA[] = {
    /* 1: the one leader lease (its epoch is the fencing token) and the
     * replicas that share this database */
    "CREATE TABLE ha_lease ("
    "  id INTEGER PRIMARY KEY,"
    "  holder TEXT NOT NULL,"
    "  epoch INTEGER NOT NULL,"
    "  acquired_ms INTEGER NOT NULL,"
    "  renewed_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL,"
    "  takeovers INTEGER NOT NULL);"
    "INSERT INTO ha_lease (id, holder, epoch, acquired_ms, renewed_ms,"
    "  expires_ms, takeovers) VALUES (1, '', 0, 0, 0, 0, 0);"
    "CREATE TABLE ha_replicas ("
    "  name TEXT PRIMARY KEY,"
    "  url TEXT NOT NULL,"
    "  started_ms INTEGER NOT NULL,"
    "  seen_ms INTEGER NOT NULL,"
    "  epoch INTEGER NOT NULL);",
};

/* ---- module "scale" (the queries of a large store, docs/ha.md) */

static const char *const MIG_SCALE[] = {
    /* 1: the scheduler's window of the queue (SQL_JOBS_QUEUED: a state,
     * the highest priorities first, then the oldest) read off an index
     * instead of sorting every job of the state */
    "CREATE INDEX jobs_queue ON jobs(state, priority DESC, seq);",
};

/* ---- the order ----------------------------------------------------------- */

#define MODULE(name, arr)                                                      \
  { name, arr, (int)(sizeof arr / sizeof arr[0]) }

/* Fixed order: a module's tables may refer only to tables of the core or
 * of a module above it. */
/* ---- module "trace" */

static const char *const MIG_TRACE[] = {
    /* 1: the traceparent a job's spans join (store_obs.h) */
    "CREATE TABLE job_traces ("
    "  job_id TEXT PRIMARY KEY,"
    "  traceparent TEXT NOT NULL) WITHOUT ROWID;",
    /* 2: the traceparent is a column of the job's own row, written by the
     * job's insert (one statement less per traced submission); the rows of
     * earlier builds move into it, and job_traces stays, empty */
    "ALTER TABLE jobs ADD COLUMN traceparent TEXT;"
    "UPDATE jobs SET traceparent ="
    "  (SELECT t.traceparent FROM job_traces t WHERE t.job_id = jobs.id)"
    "  WHERE id IN (SELECT job_id FROM job_traces);"
    "DELETE FROM job_traces;",
};

/* ---- module "workdir": SkyPilot tasks' working directories
 * (store_workdirs.c) */

static const char *const MIG_WORKDIR[] = {
    /* 1: the archives per tenant, and which job holds which */
    "CREATE TABLE workdirs ("
    "  tenant TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  data BLOB NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  used_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant, sha256)) WITHOUT ROWID;"
    "CREATE TABLE workdir_jobs ("
    "  job_id TEXT PRIMARY KEY,"
    "  tenant TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX workdir_jobs_sha ON workdir_jobs(tenant, sha256);",
};

const struct tw_store_module TW_STORE_MODULES[] = {
    MODULE("gang", MIG_GANG),       MODULE("datasets", MIG_DATASETS),
    MODULE("catalog", MIG_CATALOG), MODULE("ledger", MIG_LEDGER),
    MODULE("meter", MIG_METER),     MODULE("audit", MIG_AUDIT),
    MODULE("tenancy", MIG_TENANCY), MODULE("secrets", MIG_SECRETS),
    MODULE("spot", MIG_SPOT),       MODULE("reconcile", MIG_RECONCILE),
    MODULE("agent", MIG_AGENT),
    MODULE("health", MIG_HEALTH),
    MODULE("trace", MIG_TRACE),
    MODULE("flow", MIG_FLOW),
    MODULE("ha", MIG_HA),
    MODULE("workdir", MIG_WORKDIR),
    MODULE("scale", MIG_SCALE),
};
const size_t TW_STORE_N_MODULES =
    sizeof TW_STORE_MODULES / sizeof TW_STORE_MODULES[0];

enum tw_rc store__migrate_all(struct tw_store *s, struct tw_err *err) {
  for (size_t i = 0; i < TW_STORE_N_MODULES; i++) {
    const struct tw_store_module *m = &TW_STORE_MODULES[i];
    enum tw_rc rc = tw_store_migrate_module(s, m->name, m->migrations,
                                            m->n_migrations, err);
    if (rc)
      return rc;
  }
  return TW_OK;
}
