/* policy.h - placement plugins: filters, then scores (STYLE.md section 7),
 * the policy set the config builds from them, and the registry.
 *
 * A filter says whether one offer may run one job; a score gives a
 * feasible candidate an integer in 0..TW_SCORE_MAX.  Both are pure: they
 * read the const context (job, snapshot inputs, the clock's value) and
 * the offer, and do no I/O, so placement can be benchmarked, replayed and
 * explained.  The runner (plan.h) evaluates filters in stages (below),
 * keeps the cheapest feasible offers under the cost model, runs the
 * scores over those, and ranks by the weighted sum; ties break on the
 * expected cost, then on the offer id, so the same input gives the same
 * plan.
 *
 * Scopes.  A filter declares which offer fields it reads:
 *   TW_SCOPE_LOCATION  provider, account, region, zone, zone_id, rack,
 *                      labels: evaluated once per distinct location;
 *   TW_SCOPE_SHAPE     provider, instance_type, arch, vcpus, memory,
 *                      accelerators: once per distinct machine shape;
 *   TW_SCOPE_OFFER     anything (market, price, billing, capacity, id):
 *                      once per offer the search visits.
 * The index (index.h) relies on the declaration: a filter must not read a
 * field outside its scope.  Rejections are counted in stage order
 * (location, shape, offer) and within a stage in configured order: an
 * offer is counted once, under the first filter that refused it.
 *
 * A filter may also say which parts of the job it reads (the `key` slot):
 * the runner then caches the stage's verdicts per distinct key, so the
 * thousands of jobs that ask for the same thing share one evaluation.
 *
 * Versioning.  Shared objects loaded with dlopen (plugin.c) export
 * `tw_policy_plugin`, a struct tw_policy_ops whose `version` must equal
 * TW_POLICY_ABI_VERSION.  The version covers this header and the structs
 * a plugin reads (struct tw_offer, struct tw_job_spec, struct tw_node):
 * any change to one of them bumps it.  Slots are only appended.
 *
 * Threads: a policy set is immutable once built and may be used by many
 * threads at once (the scheduler and API requests); reference counted so
 * a reload can swap it while plans still run on the old one. */
#ifndef TW_POLICIES_POLICY_H
#define TW_POLICIES_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "policies/place/inputs.h"

struct tw_node;
struct tw_offer;
struct tw_job_spec;
struct tw_netmatrix;
struct tw_job_data;

#define TW_POLICY_ABI_VERSION 1
#define TW_SCORE_MAX 1000000
#define TW_POLICY_MAX_FILTERS 24
#define TW_POLICY_MAX_SCORES 8
#define TW_POLICY_NAME_MAX 32

enum tw_policy_scope {
  TW_SCOPE_LOCATION = 1,
  TW_SCOPE_SHAPE = 2,
  TW_SCOPE_OFFER = 4
};

/* A filter's answer.  reason is what `tradewind plan` shows next to the
 * count ("without A100-80GB"); amount is a number the explanation keeps
 * the smallest of (the deadline filter: seconds short). */
struct tw_verdict {
  bool pass;
  char reason[128];
  int64_t amount;
};

/* The cost model's breakdown for one offer (cost.h computes it).  Integer
 * micro-USD; times in seconds. */
struct tw_cost {
  int64_t compute_uusd;   /* price x billed time x nodes */
  int64_t spot_risk_uusd; /* expected cost of re-running lost work */
  int64_t egress_uusd;    /* moving the datasets to the offer's region */
  int64_t transfer_uusd;  /* the instances waiting while data arrives */
  int64_t total_uusd;
  int64_t transfer_s;   /* data transfer time before the job starts */
  int64_t spot_extra_s; /* expected time lost to interruptions */
  int64_t finish_ms;    /* expected end: now + launch + transfer + run */
};

/* The cost model's parameters (the config's policies.cost). */
/* Providers policies.cost.launch_overheads may name. */
#define TW_COST_LAUNCH_BY_MAX 16

struct tw_cost_params {
  int64_t default_duration_s;        /* a job without duration: 3600 */
  int64_t launch_overhead_s;         /* provisioning and boot: 120 */
  int64_t restart_overhead_s;        /* after an interruption: 300 */
  int spot_default_interruption_pct; /* unknown band: 10 (%/month) */
  int transfer_round_trips;          /* connection setup per dataset: 3 */
  /* provisioning on private capacity (Slurm, a local cluster): a node
   * that is there already starts in seconds, not minutes: 5 */
  int64_t launch_overhead_private_s;
  /* per provider (its name, or an account's), over the two above:
   * policies.cost.launch_overheads {slurm: 3s, aws: 90s} */
  struct {
    char provider[32];
    int64_t s;
  } launch_by[TW_COST_LAUNCH_BY_MAX];
  size_t n_launch_by;
};

/* What plugins read.  Every pointer is borrowed for one decision; the
 * inputs never change while a plan runs. */
struct tw_place_ctx {
  unsigned version; /* TW_POLICY_ABI_VERSION */
  const struct tw_job_spec *job;
  int64_t now_ms;     /* the clock's value */
  int64_t duration_s; /* the job's, or the default */
  int nodes;          /* >= 1 */
  const struct tw_cost_params *cost;
  const struct tw_netmatrix *net;        /* never NULL (may be empty) */
  const struct tw_dataset_set *datasets; /* never NULL (may be empty) */
  const struct tw_quota_state *quota;    /* never NULL: default unlimited */
  const struct tw_place_blocklist *blocklist; /* never NULL */
  const struct tw_health *health;             /* never NULL */
  const struct tw_capacity_view *capacity;    /* never NULL */
  const struct tw_reservations *reservations; /* never NULL */
  const char *const *excluded;                /* offer ids this job failed on */
  size_t n_excluded;
  /* Per-region data costs of this job (cost.h), indexed by region id;
   * NULL when it reads no datasets. */
  const struct tw_job_data *data;
  const char *job_id; /* NULL for a plan of an unsubmitted job */
  const char *tenant; /* the spec's, never NULL */

  /* Set by the runner for each call, about the offer being considered:
   * its region id in `data` (-1 when not known: the shape stage), and in
   * the offer stage its cost under the model (NULL before). */
  int32_t region;
  const struct tw_cost *offer_cost;
};

/* One feasible offer, with its cost and scores.  scores[i] belongs to the
 * set's i-th score plugin, after normalization. */
struct tw_cand {
  const struct tw_offer *offer;
  uint32_t index;   /* in the snapshot's offers */
  uint32_t id_rank; /* position in offer id order */
  int32_t region;   /* region id (see tw_place_ctx.data) */
  struct tw_cost cost;
  int64_t scores[TW_POLICY_MAX_SCORES];
  int64_t total; /* sum of weight x score */
};

struct tw_policy;

struct tw_policy_ops {
  const char *name; /* as the config names it: "residency", "cost" */
  unsigned version; /* TW_POLICY_ABI_VERSION it was built against */
  unsigned scope;   /* filters: TW_SCOPE_*; 0 counts as OFFER */
  /* Reads the plugin's own keys from cfg (the config entry, a mapping;
   * NULL when none) into *state.  path is the entry's config path for
   * error messages ("policies.scores[1]").  NULL: no settings. */
  enum tw_rc (*configure)(const struct tw_node *cfg, const char *path,
                          void **state, struct tw_err *err);
  void (*release)(void *state); /* NULL: free(state) */
  /* NULL: score only. */
  void (*filter)(const struct tw_policy *self, const struct tw_place_ctx *ctx,
                 const struct tw_offer *o, struct tw_verdict *out);
  /* Appends the parts of the job (and of the inputs) the filter reads, so
   * verdicts can be cached per distinct key; NULL: not cacheable. */
  void (*key)(const struct tw_policy *self, const struct tw_place_ctx *ctx,
              struct tw_buf *out);
  /* 0..TW_SCORE_MAX, higher is better; raw when normalize is set. NULL:
   * filter only. */
  int64_t (*score)(const struct tw_policy *self, const struct tw_place_ctx *ctx,
                   const struct tw_cand *c);
  /* Maps the raw scores of all candidates to 0..TW_SCORE_MAX in place. */
  void (*normalize)(const struct tw_policy *self, int64_t *scores, size_t n);
};

/* A configured plugin: its ops, its settings, its weight (scores). */
struct tw_policy {
  const struct tw_policy_ops *ops;
  void *state;
  int64_t weight;
  char name[TW_POLICY_NAME_MAX];
};

/* ---- registry (registry.c) -------------------------------------------- */

/* The built-in plugins, NULL-terminated. */
extern const struct tw_policy_ops *const tw_policy_registry[];
/* The built-in of that name, filters first (a filter and a score may share
 * a name: "latency"); the _filter and _score forms look at one kind. */
const struct tw_policy_ops *tw_policy_find(const char *name);
const struct tw_policy_ops *tw_policy_find_filter(const char *name);
const struct tw_policy_ops *tw_policy_find_score(const char *name);

/* The built-ins, one per file. */
extern const struct tw_policy_ops tw_filter_provider, tw_filter_launchable,
    tw_filter_selector, tw_filter_zones,
    tw_filter_residency, tw_filter_health, tw_filter_latency, tw_filter_gang,
    tw_filter_arch, tw_filter_cpus, tw_filter_memory, tw_filter_accelerators,
    tw_filter_instance_types, tw_filter_quota, tw_filter_market, tw_filter_price,
    tw_filter_price_sanity, tw_filter_excluded,
    tw_filter_blocklist, tw_filter_capacity, tw_filter_backfill,
    tw_filter_deadline;
extern const struct tw_policy_ops tw_score_cost, tw_score_latency,
    tw_score_packing, tw_score_preference;

/* Exact asks (filter_shape.c, docs/jobspec.md).  The variant a family's
 * bare name means ("A100" -> "A100-40GB", "V100" -> "V100-16GB", "H100"
 * -> "H100-80GB"), NULL for a name that is no such family. */
const char *tw_place_accel_default(const char *family);
/* Does accelerator `have` (an offer's name) satisfy the asked name
 * `want`: a glob over the name ('*', '?'), the same name, or a family's
 * bare name its default variant; case-insensitive. */
bool tw_place_accel_name_matches(const char *want, const char *have);
/* Does an offer with count accelerators called name satisfy the job's
 * accelerators (any alternative; counts exact unless N+)?  True for a job
 * without accelerators. */
bool tw_place_accel_satisfies(const struct tw_job_spec *job, const char *name,
                              int count);

/* ---- the policy set (policy.c) ---------------------------------------- */

/* Queue ordering parameters (queue.h uses them). */
struct tw_queue_params {
  int64_t aging_per_hour;    /* priority points gained per hour waited */
  int64_t aging_max;         /* at most this many */
  int64_t fair_share_weight; /* priority points lost at a dominant share
                                of 100% */
  int64_t capacity_vcpus, capacity_memory_mib, capacity_gpus; /* DRF */
};

struct tw_replication_params {
  bool enabled;
  int min_jobs; /* pending readers before replicating: 2 */
};

struct tw_policy_set {
  struct tw_policy filters[TW_POLICY_MAX_FILTERS];
  size_t n_filters;
  struct tw_policy scores[TW_POLICY_MAX_SCORES];
  size_t n_scores;
  size_t candidates; /* cheapest offers kept for scoring: 16 */
  struct tw_cost_params cost;
  struct tw_queue_params queue;
  struct tw_replication_params replication;
  struct tw_netmatrix *net; /* owned; the built-in one unless configured */
  char *net_source;         /* file it came from, or "built-in" */
  char *config_json;        /* the section as given, canonical JSON */
  uint64_t generation;      /* unique per set (broker/base/unique.h) */
  void *dl[TW_POLICY_MAX_SCORES]; /* dlopen handles, closed at the end */
  size_t n_dl;
  /* policies.plugin_dir and network_dir of the config file, absolute and
   * resolved; NULL: none (no plugin, no network file can be named) */
  char *plugin_dir, *network_dir;
  int refs; /* atomic; the last member (broker/sched/place.c copies what
              * comes before it) */
};

/* The defaults: every built-in filter in the documented order, the cost
 * score alone (weight 1), 16 candidates, the built-in network matrix (the
 * shipped configs/network/default.net). */
struct tw_policy_set *tw_policy_set_default(void);

/* Builds a set from the config file's `policies:` section (NULL: the
 * defaults).  Files come only from the directories the section names,
 * `plugin_dir` and `network_dir` (relative to base_dir, the config file's
 * directory; NULL: the working directory): a score's `path:` and
 * `network:` are file names inside them, and a name with a '/', control
 * bytes, or leading (through a link) outside its directory is refused
 * before the file is opened or dlopen()ed.  Everything is validated
 * before anything is built:
 * TW_E_INVALID with err->field and err->msg naming the path
 * ("policies.scores[1].weight: must be between 0 and 1000000, got -1"),
 * a named file that cannot be read or used included.  *out has one
 * reference. */
enum tw_rc tw_policy_set_build(const struct tw_node *section,
                               const char *base_dir, struct tw_policy_set **out,
                               struct tw_err *err);

/* As tw_policy_set_build from YAML or JSON text of the config file. */
enum tw_rc tw_policy_set_parse(const char *text, size_t len,
                               const char *base_dir, struct tw_policy_set **out,
                               struct tw_err *err);
/* From a request's text (PUT /v1/policies): the directories are those of
 * in_force (NULL: none), and naming `plugin_dir` or `network_dir` is
 * refused (TW_E_INVALID, field policies.plugin_dir): nothing a request
 * says can widen what the daemon may load. */
enum tw_rc tw_policy_set_parse_request(const char *text, size_t len,
                                       const struct tw_policy_set *in_force,
                                       struct tw_policy_set **out,
                                       struct tw_err *err);

struct tw_policy_set *tw_policy_set_ref(struct tw_policy_set *s);
/* Drops a reference; the last one frees (closing loaded objects).  NULL
 * is a no-op. */
void tw_policy_set_unref(struct tw_policy_set *s);

/* Appends the effective set as JSON: filters, scores with weights, and
 * the parameters, each with its value in force. */
void tw_policy_set_to_json(const struct tw_policy_set *s, struct tw_buf *out);

/* ---- shared objects (plugin.c) ---------------------------------------- */

/* The symbol a shared object exports. */
#define TW_POLICY_PLUGIN_SYMBOL "tw_policy_plugin"

/* Opens path, finds TW_POLICY_PLUGIN_SYMBOL and checks it: version equal
 * to TW_POLICY_ABI_VERSION, a name, a score slot (shared objects provide
 * scores only: filters decide feasibility, and the index must know what
 * they read).  On success *ops points into the object and *handle is to
 * be passed to tw_policy_plugin_close() once nothing uses ops.
 * TW_E_IO when it cannot be opened; TW_E_INVALID otherwise. */
enum tw_rc tw_policy_plugin_open(const char *path,
                                 const struct tw_policy_ops **ops,
                                 void **handle, struct tw_err *err);
void tw_policy_plugin_close(void *handle);

/* ---- helpers for plugins ------------------------------------------------ */

/* "1h05m", "42s", "3d2h": a duration for reasons. */
void tw_policy_fmt_duration(int64_t s, char *out, size_t outsz);
/* "$12.34": micro-USD for reasons. */
void tw_policy_fmt_uusd(int64_t uusd, char *out, size_t outsz);
/* Normalizes so the smallest raw value gets TW_SCORE_MAX and the others
 * TW_SCORE_MAX * min / value (raw values must be >= 0; all zero: all
 * MAX).  Used by cost and latency. */
void tw_policy_normalize_inverse(int64_t *scores, size_t n);

#endif
