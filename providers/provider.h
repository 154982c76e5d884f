/* provider.h - the provider interface: one table of function pointers per
 * adapter, and the generic layer that is the only code calling through it.
 *
 * An adapter (providers/aws/aws.c, ...) exports one
 * `const struct tw_provider_ops tw_provider_<name>` and keeps everything
 * else static.  It translates and nothing more: wire shapes in, struct
 * tw_offer / tw_instance / tw_event out (broker/base/model.h), provider errors
 * mapped to a few classes with the provider's own code in err->detail:
 *
 *   TW_E_RETRYABLE  throttled, 5xx, timeout (already retried by the http
 *                   helper; the caller may try again later)
 *   TW_E_CAPACITY   no capacity for this offer now: fall back elsewhere
 *   TW_E_QUOTA      a provider-side limit of the account
 *   TW_E_AUTH       credentials refused
 *   TW_E_INVALID    the request is wrong; retrying it will not help
 *   TW_E_NOTFOUND   describe/terminate of an id the provider does not know
 *
 * The core calls tw_provider_*() below, never p->ops.  The generic layer
 * checks arguments and results, fills what every adapter would fill the
 * same way (provider and account names, offer ids), supplies a default for
 * a NULL slot, times each call (tw_provider_stats) and logs each failure
 * once, at warn level, under subsystem "provider": callers handle the
 * returned class and need not log it again.
 *
 * Threads: after tw_provider_new() returns, the operations may be called
 * from several threads at once; adapters keep their state immutable after
 * init or lock it.  tw_provider_free() must not race with any call: freeing
 * a provider with calls in flight is a bug and asserts. */
#ifndef TW_PROVIDERS_PROVIDER_H
#define TW_PROVIDERS_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h"

struct tw_node;
struct tw_clock;
struct tw_provider;

/* Bumped whenever a slot is appended to struct tw_provider_ops; slots are
 * only ever appended, and the generic layer gives new ones a default so an
 * adapter built against an older version keeps working. */
#define TW_PROVIDER_OPS_VERSION 5

/* supports bits */
#define TW_PROV_SPOT (1u << 0)   /* can launch spot offers */
#define TW_PROV_EVENTS (1u << 1) /* poll_events reports notices */
#define TW_PROV_ZONES (1u << 2)  /* offers name zones */
#define TW_PROV_CLIENT_TOKEN                                                   \
  (1u << 3) /* the provider itself honours the                                 \
               client token (idempotent launch) */
/* The provider runs the job's script itself and reports when it finished,
 * with its exit code (struct tw_instance.finished): Slurm.  Clouds do not:
 * their instances run until Tradewind terminates them. */
#define TW_PROV_BATCH (1u << 4)

/* How a provider bills a running instance, as the catalog and the meter
 * apply it.  kind tells a rule left unset (an adapter older than version
 * 3) from one deliberately absent. */
enum tw_provider_billing_kind {
  TW_BILLING_UNSET = 0,
  TW_BILLING_PUBLISHED,  /* the fields below are the provider's price list */
  TW_BILLING_FROM_CONFIG /* none published (a private cluster): the
                            catalog's accounts[].granularity_s and
                            min_charge_s, else nothing */
};

struct tw_provider_billing {
  enum tw_provider_billing_kind kind;
  int64_t granularity_s;     /* 1 = per second */
  int64_t min_charge_s;      /* charged at least this per start */
  int64_t spot_protection_s; /* spot: time guaranteed before a reclaim */
  /* Spot capacity the provider takes back (not a stop or terminate of
   * Tradewind's): charged nothing when it ran less than this (AWS: 3600,
   * no charge for a Linux Spot Instance EC2 interrupts in its first
   * instance-hour); 0: no such rule.  Past it, or without it, a reclaimed
   * attempt is charged to the second. */
  int64_t spot_reclaim_free_s;
  /* Whether min_charge_s still applies to spot capacity the provider
   * reclaimed (Azure: its minimum covers Spot VMs too). */
  bool spot_reclaim_minimum;
  /* Where the rule is published (docs/billing.md cites each). */
  const char *source;
};

/* An accelerator implied by an instance type's name (tw_provider_info). */
struct tw_provider_type_accel {
  const char *type_prefix; /* "f1." */
  const char *accel;       /* "VU9P" */
};

/* What the rest of the broker knows of a provider, kept with its adapter so
 * that no other folder names a cloud.  Every field is set by every adapter
 * ("" where the provider has none); tests/unit/test_registry.c checks it.
 * Fields are only appended, and a zero or NULL one (an adapter written
 * before it existed) takes the neutral path: no rule, no hint.  The
 * catalog's clouds without an adapter (billing/catalog/clouds.h) fill the
 * same struct. */
struct tw_provider_info {
  struct tw_provider_billing billing;
  /* The interruption notice as the job sees it (broker/sched/checkpoint.h,
   * docs/spot.md): the metadata URL polled from inside the instance, and
   * the signal the provider sends ahead of a stop ("TERM"). */
  const char *notice_url;
  const char *notice_signal;
  /* FOCUS 1.0 columns (billing/report/focus.c): ProviderName, and the
   * ServiceName of compute and of network rows. */
  const char *focus_provider;
  const char *focus_compute_service;
  const char *focus_network_service;
  /* The catalog's file sources (billing/catalog/catalog_csv.c): whether
   * a zone column may hold the provider's zone ids ("use1-az1") rather
   * than names; they resolve to regions through the region table's
   * zone_prefix column. */
  bool catalog_zone_ids;
  /* Whether the catalog's interruption feed (catalog.interruption_path:
   * the Spot Advisor's spot-advisor-data.json) gives this provider's spot
   * offers their risk band, where the source had no estimate of its own. */
  bool catalog_risk_feed;
  /* The architecture an instance type's name implies ("m6g.large" ->
   * arm64), for offers that do not say: catalog rows without an Arch
   * column, adapter offers left at TW_ARCH_ANY.  Pure.  NULL: none
   * implied (TW_ARCH_ANY). */
  enum tw_arch (*arch_of_type)(const char *type);
  /* Accelerators a catalog counts but does not name, known from the
   * instance type's prefix ({"f1.", "VU9P"}: the canonical names of
   * billing/catalog/normalize.h), ended by {NULL, NULL}.  NULL: none. */
  const struct tw_provider_type_accel *type_accels;
  /* FOCUS ResourceType of a compute row ("Virtual Machine", "Batch Job"):
   * what the provider bills an attempt as.  NULL or "": none. */
  const char *focus_resource_type;
  /* The most user data a launch carries, raw bytes (EC2: 16 KiB); a
   * script beyond it is delivered by the agent's bootstrap instead
   * (broker/sched/launch.c).  0: no limit. */
  size_t user_data_max;
  /* How often the scheduler asks for notices (poll_events), at most, in
   * milliseconds of real time: a poll costs requests per live instance
   * (EC2: two metadata documents each), so a pass does not send one every
   * tick.  0: every pass (one poll in flight per account at a time). */
  int64_t notice_poll_ms;

  /* ---- whole prices and instance families ---- */

  /* Accelerators an instance type always carries but which a catalog
   * prices in rows of their own, without an instance type (GCP's a2, a3,
   * a4 and g2 machines): the accelerator's name as those rows write it
   * ("A100", "H100-MEGA", "L4") into *accel (static storage) and the
   * count into *count.  The catalog adds the two prices; a machine whose
   * accelerator price it lacks is rejected, never offered without them.
   * Pure.  NULL: none. */
  bool (*type_bundle)(const char *type, const char **accel, int *count);
  /* Whether count accelerators named accel (as the accelerator-only rows
   * write it) may be attached to type with vcpus and memory_mib (GCP's N1
   * machines with T4, P4, P100 or V100, within the published limits per
   * count).  The catalog offers each such pair at the sum of the two
   * prices.  Pure.  NULL: none attach. */
  bool (*accel_attach)(const char *type, int vcpus, int64_t memory_mib,
                       const char *accel, int count);
  /* The family of an instance type into out ("m6i" of "m6i.large",
   * "Ds_v5" of "Standard_D8s_v5", "n2" of "n2-standard-8"): what a job's
   * resources.families names.  Returns false (out "") when the name
   * implies none.  Pure.  NULL: the type's text before its first '.' or
   * '-'. */
  bool (*type_family)(const char *type, char *out, size_t outsz);
  /* TW_TYPE_* traits of an instance type.  Pure.  NULL: none. */
  unsigned (*type_traits)(const char *type);
};


struct tw_provider_ops {
  const char *name;  /* "aws", "azure", "alibaba", "slurm": the config's
                        `type` */
  unsigned version;  /* TW_PROVIDER_OPS_VERSION it was built against */
  unsigned supports; /* TW_PROV_* */

  /* Reads the adapter's config section (cfg: a YAML map, see
   * docs/providers.md) and sets p->ctx.  May do no network I/O: a daemon
   * must start while a cloud is down.  On error p->ctx is left NULL (or
   * whatever free() accepts). */
  enum tw_rc (*init)(struct tw_provider *p, const struct tw_node *cfg,
                     struct tw_err *err);
  /* Appends every offer the account can buy now to out. */
  enum tw_rc (*list_offers)(struct tw_provider *p, struct tw_offer_list *out,
                            struct tw_err *err);
  /* Buys one instance; *out describes it (state usually pending). */
  enum tw_rc (*launch)(struct tw_provider *p, const struct tw_launch *req,
                       struct tw_instance *out, struct tw_err *err);
  /* TW_E_NOTFOUND when the provider does not know id. */
  enum tw_rc (*describe)(struct tw_provider *p, const char *id,
                         struct tw_instance *out, struct tw_err *err);
  /* Idempotent: terminating a terminated instance succeeds. */
  enum tw_rc (*terminate)(struct tw_provider *p, const char *id,
                          struct tw_err *err);
  /* Appends the instances carrying Tradewind's tags (TW_TAG_JOB) to out,
   * asking the provider for live states only where its API filters (EC2
   * instance-state-name), so a call costs what the live instances cost.
   * Terminated ones it cannot leave out may be included: the generic
   * layer drops them from tw_provider_list_managed(), and the default
   * describe (a NULL describe slot) still finds them here. */
  enum tw_rc (*list_managed)(struct tw_provider *p,
                             struct tw_instance_list *out, struct tw_err *err);
  /* Appends the interruption notices and rebalance recommendations now in
   * force for managed instances.  A notice stays in force (and is reported
   * again) until its instance is gone; callers dedup on (instance_id, kind,
   * noticed_ms).  NULL: the provider has none. */
  enum tw_rc (*poll_events)(struct tw_provider *p, struct tw_event_list *out,
                            struct tw_err *err);
  /* Frees p->ctx (which may be NULL after a failed init). */
  void (*free)(struct tw_provider *p);

  /* ---- version 2 ---- */

  /* Appends at most max bytes of the job's output (stdout and stderr as
   * the provider keeps them), starting at byte offset, to out; *eof is set
   * when nothing more will ever come (the workload ended and everything
   * was read).  TW_E_NOTFOUND for an unknown instance.  NULL: the provider
   * keeps no output (clouds: the workload logs where it likes). */
  enum tw_rc (*read_output)(struct tw_provider *p, const char *id,
                            int64_t offset, size_t max, struct tw_buf *out,
                            bool *eof, struct tw_err *err);

  /* ---- version 3 ---- */

  /* The provider's info block (above).  NULL: tw_provider_ops_info()
   * gives an empty one; the adapters of a registry all set it
   * (tests/unit/test_registry.c). */
  const struct tw_provider_info *info;

  /* ---- version 4 ---- */

  /* The instance launched with client token `token`, in any state the
   * provider still reports, into *out: how the scheduler settles a launch
   * whose answer never came (docs/spot.md, "Attempt states").  region is
   * where the launch was sent ("" or NULL: any configured region).
   * TW_E_NOTFOUND only when the provider answered and has no such
   * instance; any other failure is its class as for describe.  NULL:
   * tw_provider_find_by_token() looks through list_managed. */
  enum tw_rc (*find_by_token)(struct tw_provider *p, const char *token,
                              const char *region, struct tw_instance *out,
                              struct tw_err *err);

  /* ---- version 5 ---- */

  /* Describes the n instances ids[0..n) together (EC2: one
   * DescribeInstances per region with many InstanceId.N): out[i] and rc[i]
   * are what describe would answer for ids[i], TW_E_NOTFOUND only where
   * describe would say so (an id missing from a batched answer is asked
   * about again, never taken for gone).  Every rc[i] is set; *err holds
   * the first failure.  Returns TW_OK unless the call as a whole failed
   * (then every rc[i] is that class).  n is at most
   * TW_PROVIDER_DESCRIBE_MAX.  NULL: tw_provider_describe_many()
   * describes each id with describe. */
  enum tw_rc (*describe_many)(struct tw_provider *p, const char *const *ids,
                              size_t n, struct tw_instance *out, enum tw_rc *rc,
                              struct tw_err *err);
};

/* The most ids one tw_provider_describe_many() takes. */
#define TW_PROVIDER_DESCRIBE_MAX 1000

/* The generic layer's operations, for tw_provider_stats(). */
enum tw_provider_op {
  TW_POP_LIST_OFFERS = 0,
  TW_POP_LAUNCH,
  TW_POP_DESCRIBE,
  TW_POP_TERMINATE,
  TW_POP_LIST_MANAGED,
  TW_POP_POLL_EVENTS,
  TW_POP_READ_OUTPUT,
  TW_POP_FIND_BY_TOKEN,
  TW_POP_DESCRIBE_MANY, /* one per batch (the fallback counts describes) */
  TW_POP_COUNT
};

struct tw_provider_stats {
  uint64_t calls;
  uint64_t failures; /* calls that returned anything but TW_OK */
  int64_t total_us;  /* wall time spent in the adapter */
  int64_t max_us;
  int64_t last_us;
  enum tw_rc last_rc;
};

/* Resolves `<base>_secret: NAME` references to a value (owned: free()
 * it); see tw_provider_cfg_secret().  The daemon passes one that opens the
 * sealed secrets of the store (broker/tenancy/secrets.h) when it creates
 * the providers; without one such a reference is TW_E_AUTH.  Called only
 * during tw_provider_new*(), on the creating thread. */
typedef enum tw_rc (*tw_secret_resolver_fn)(void *ctx, const char *name,
                                            char **value, struct tw_err *err);

struct tw_provider {
  const struct tw_provider_ops *ops; /* first member */
  char *account;                     /* owned: the config's `name` */
  void *ctx;                         /* adapter state, made by init */
  struct tw_clock *clock;            /* borrowed: the injected clock */

  /* Below: the generic layer's own; adapters leave them alone. */
  tw_secret_resolver_fn resolve_secret; /* NULL: no sealed secrets */
  void *resolve_ctx;                    /* borrowed, for resolve_secret */
  atomic_int in_flight;
  pthread_mutex_t stats_lock;
  struct tw_provider_stats stats[TW_POP_COUNT];
  /* The scheduler's calls to this account (broker/sched/calls.c): how
   * many run at once, and how long one call may take in all, its
   * retries included (`concurrency`, `call_deadline_ms`), and how often
   * its interruption notices are asked for (`notice_poll_ms`; 0: the
   * adapter's own interval). */
  int concurrency;
  int64_t call_deadline_ms;
  int64_t notice_poll_ms;
  /* `agent: true`: its attempts run under tradewind-agent (docs/agent.md) */
  bool agent;
};

/* ---- registries --------------------------------------------------------- */

/* A registry is a NULL-terminated table of adapters, generated by the
 * build from a list of adapter names (tw_adapter_registry() in
 * providers/CMakeLists.txt; the daemon's is tw_adapters, see
 * providers/registry.h).  It is handed to whoever needs it, never looked
 * up globally, so a test binary may link a registry of its own. */

/* The adapter of registry reg named name ("aws"), or NULL (also for a
 * NULL reg or name). */
const struct tw_provider_ops *
tw_provider_find(const struct tw_provider_ops *const *reg, const char *name);

/* Fills names[0..max-1] with the adapters' names, NULL-terminated (at most
 * max - 1 names; names borrowed from reg).  Returns the count. */
size_t tw_provider_names(const struct tw_provider_ops *const *reg,
                         const char **names, size_t max);

/* The info block of ops; an empty one (every string "", billing
 * TW_BILLING_UNSET) for an adapter older than version 3 or without one. */
const struct tw_provider_info *
tw_provider_ops_info(const struct tw_provider_ops *ops);

/* The info block of the named adapter of reg, or NULL when reg has none
 * by that name. */
const struct tw_provider_info *
tw_provider_info_find(const struct tw_provider_ops *const *reg,
                      const char *name);

/* ---- life cycle --------------------------------------------------------- */

/* Creates a provider from its config section: `type` picks the adapter
 * from registry reg, `name` (default: the type) names the account.  clock
 * is borrowed and must outlive the provider (NULL: tw_clock_real()).
 * Errors: TW_E_INVALID naming the key (unknown type, with a suggestion;
 * bad values), TW_E_AUTH when a referenced secret cannot be read, or
 * whatever the adapter's init returns.  *out is freed with
 * tw_provider_free(). */
enum tw_rc tw_provider_new(const struct tw_provider_ops *const *reg,
                           const struct tw_node *cfg, struct tw_clock *clock,
                           struct tw_provider **out, struct tw_err *err);

/* What tw_provider_new_with() creates a provider from. */
struct tw_provider_opts {
  const struct tw_provider_ops *const *adapters; /* as tw_provider_new's reg */
  const struct tw_node *cfg;            /* the section; borrowed for the call */
  struct tw_clock *clock;               /* borrowed, outlives it; NULL: real */
  tw_secret_resolver_fn resolve_secret; /* NULL: `_secret` is TW_E_AUTH */
  void *resolve_ctx; /* borrowed; must outlive the provider's init only */
};

/* As tw_provider_new, with sealed secrets resolved through
 * opts->resolve_secret (the daemon's way; tw_provider_new is this with no
 * resolver). */
enum tw_rc tw_provider_new_with(const struct tw_provider_opts *opts,
                                struct tw_provider **out, struct tw_err *err);

/* As tw_provider_new, with the adapter given directly (tests, fakes) and
 * the account name given (NULL: ops->name).  cfg may be NULL (an empty
 * section).  TW_E_INVALID when ops is newer than this build or nameless. */
enum tw_rc tw_provider_new_ops(const struct tw_provider_ops *ops,
                               const char *account, const struct tw_node *cfg,
                               struct tw_clock *clock, struct tw_provider **out,
                               struct tw_err *err);

/* Frees p (NULL allowed).  Asserts that no call is in flight. */
void tw_provider_free(struct tw_provider *p);

static inline const char *tw_provider_name(const struct tw_provider *p) {
  return p->ops->name;
}
/* How many of the scheduler's calls to p run at once (`concurrency`, 1..256,
 * default 8). */
static inline int tw_provider_concurrency(const struct tw_provider *p) {
  return p->concurrency > 0 ? p->concurrency : 8;
}

/* How often the scheduler asks p for interruption notices: the section's
 * `notice_poll_ms` (100..600000), else the adapter's interval
 * (tw_provider_info.notice_poll_ms; EC2 5 s, as its guide says). */
static inline int64_t tw_provider_notice_poll_ms(const struct tw_provider *p) {
  return p->notice_poll_ms > 0 ? p->notice_poll_ms
                               : tw_provider_ops_info(p->ops)->notice_poll_ms;
}

/* How long one call to p may take in all, every retry of the http layer
 * included (`call_deadline_ms`; default the adapter's `timeout_ms` times
 * its `max_attempts`, plus `backoff_cap_ms` for each wait between tries,
 * with their own defaults 30000, 3 and 20000 when the section has none).
 * A call past it is no longer waited for: a launch's outcome is then
 * unknown, never a failure. */
static inline int64_t
tw_provider_call_deadline_ms(const struct tw_provider *p) {
  return p->call_deadline_ms > 0 ? p->call_deadline_ms : 150000;
}

/* Whether p's section has `agent: true` (docs/agent.md). */
static inline bool tw_provider_agent(const struct tw_provider *p) {
  return p->agent;
}

static inline const char *tw_provider_account(const struct tw_provider *p) {
  return p->account;
}
static inline const struct tw_provider_info *
tw_provider_info(const struct tw_provider *p) {
  return tw_provider_ops_info(p->ops);
}
static inline bool tw_provider_supports(const struct tw_provider *p,
                                        unsigned bits) {
  return (p->ops->supports & bits) == bits;
}

/* ---- operations --------------------------------------------------------- */

/* Appends the provider's offers to out (items already in out are kept).
 * Each offer gets provider, account and id filled when the adapter left
 * them empty; offers that break the model (no type or region, vcpus < 1,
 * negative price, no market) are dropped and counted in one log line.
 * NULL slot: no offers. */
enum tw_rc tw_provider_list_offers(struct tw_provider *p,
                                   struct tw_offer_list *out,
                                   struct tw_err *err);

/* Launches req (see struct tw_launch: offer, client token, job, attempt
 * and tenant are required; the token is at most 64 printable ASCII
 * characters).  TW_E_INVALID for a missing field, a spot offer on a
 * provider without TW_PROV_SPOT, or an offer of another account.  On
 * success *out holds the instance with provider, account, region, client
 * token and tags filled; TW_E_CONFLICT when the instance the provider
 * returned carries another job's tags (a client token reused across
 * attempts; *out then describes that instance).  NULL slot:
 * TW_E_INVALID. */
enum tw_rc tw_provider_launch(struct tw_provider *p,
                              const struct tw_launch *req,
                              struct tw_instance *out, struct tw_err *err);

/* Describes instance id.  TW_E_NOTFOUND when unknown.  NULL slot: found
 * through list_managed. */
enum tw_rc tw_provider_describe(struct tw_provider *p, const char *id,
                                struct tw_instance *out, struct tw_err *err);

/* Describes ids[0..n) (1 <= n <= TW_PROVIDER_DESCRIBE_MAX) at once: out[i]
 * and rc[i] as tw_provider_describe() would answer each, completed the
 * same way.  Returns TW_OK when every rc[i] is an answer of the provider
 * (TW_OK or TW_E_NOTFOUND included), else the first other class (*err
 * its error): callers read rc[i].  An adapter older than version 5, or
 * without the slot: each id described with tw_provider_describe(). */
enum tw_rc tw_provider_describe_many(struct tw_provider *p,
                                     const char *const *ids, size_t n,
                                     struct tw_instance *out, enum tw_rc *rc,
                                     struct tw_err *err);

/* Terminates instance id; succeeds for one already gone.  NULL slot:
 * TW_E_INVALID. */
enum tw_rc tw_provider_terminate(struct tw_provider *p, const char *id,
                                 struct tw_err *err);

/* Appends the live instances carrying Tradewind's tags to out: every
 * state but terminated (shutting-down, stopping and stopped still cost
 * money or can start again).  Adapters ask the provider for those states
 * only where its API filters (EC2 instance-state-name); a terminated one
 * an adapter returns anyway is dropped here, so one call costs what the
 * live instances cost, not the provider's history.  On failure out is
 * left as it was.  NULL slot: none. */
enum tw_rc tw_provider_list_managed(struct tw_provider *p,
                                    struct tw_instance_list *out,
                                    struct tw_err *err);

/* Appends the notices in force to out (see the poll_events slot).  NULL
 * slot: none. */
enum tw_rc tw_provider_poll_events(struct tw_provider *p,
                                   struct tw_event_list *out,
                                   struct tw_err *err);

/* Reads the output of instance id (see the read_output slot).  max is
 * capped at 1 MiB.  An adapter older than version 2, or without the slot:
 * TW_E_NOTFOUND with "keeps no output". */
enum tw_rc tw_provider_read_output(struct tw_provider *p, const char *id,
                                   int64_t offset, size_t max,
                                   struct tw_buf *out, bool *eof,
                                   struct tw_err *err);

/* The instance launched with client token token (see the find_by_token
 * slot), completed as describe's.  TW_E_NOTFOUND means the provider
 * answered and has none; only then may a caller treat the launch as never
 * made (and send it again with the same token).  An adapter older than
 * version 4, or without the slot: looked up through list_managed, matching
 * the instance's client token (or, when the provider reports none, its
 * attempt tag). */
enum tw_rc tw_provider_find_by_token(struct tw_provider *p, const char *token,
                                     const char *region,
                                     struct tw_instance *out,
                                     struct tw_err *err);

/* Copies the counters of one operation. */
void tw_provider_stats(struct tw_provider *p, enum tw_provider_op op,
                       struct tw_provider_stats *out);

/* "list_offers", "launch", ... */
const char *tw_provider_op_str(enum tw_provider_op op);

/* ---- helpers for adapters ----------------------------------------------- */

/* The keys every provider section may carry whatever its type. */
#define TW_PROVIDER_COMMON_KEYS                                                \
  "name", "type", "enabled", "labels", "concurrency", "call_deadline_ms",   \
      "notice_poll_ms", "agent"

/* TW_E_INVALID naming the first key of the map cfg that is neither in
 * keys (NULL-terminated) nor a common key, with the closest known key
 * suggested.  cfg NULL is an empty map; a non-map is TW_E_INVALID. */
enum tw_rc tw_provider_cfg_check_keys(const struct tw_node *cfg,
                                      const char *const *keys,
                                      struct tw_err *err);

/* A string value: *out borrowed from cfg, or def when the key is absent.
 * TW_E_INVALID naming the key when it is not a scalar. */
enum tw_rc tw_provider_cfg_str(const struct tw_node *cfg, const char *key,
                               const char *def, const char **out,
                               struct tw_err *err);

/* An integer in [min, max], or def when absent.  TW_E_INVALID naming the
 * key and the bounds otherwise. */
enum tw_rc tw_provider_cfg_int(const struct tw_node *cfg, const char *key,
                               int64_t min, int64_t max, int64_t def,
                               int64_t *out, struct tw_err *err);

/* As tw_provider_cfg_str, with *out an owned copy (free() it; NULL when
 * the key is absent and def is NULL).  On error *out is untouched. */
enum tw_rc tw_provider_cfg_strdup(const struct tw_node *cfg, const char *key,
                                  const char *def, char **out,
                                  struct tw_err *err);

/* A list of strings: a sequence of non-empty scalars, or one scalar (a
 * list of one).  *out is an owned array of *n owned strings (free with
 * tw_provider_strv_free()); NULL and 0 when the key is absent.
 * TW_E_INVALID naming the key when it is neither, or naming the index of
 * the first item that is not a non-empty scalar; *out is then NULL and
 * *n 0. */
enum tw_rc tw_provider_cfg_list(const struct tw_node *cfg, const char *key,
                                char ***out, size_t *n, struct tw_err *err);

/* The regions of a cloud adapter: the list `regions`, or when it is absent
 * or empty the list `region` (tw_provider_cfg_list() for both).
 * TW_E_INVALID naming "regions" when neither gives one.  On error *out
 * may hold what was read (free it with tw_provider_strv_free()). */
enum tw_rc tw_provider_cfg_regions(const struct tw_node *cfg, char ***out,
                                   size_t *n, struct tw_err *err);

/* Whether s is one of the n strings of v. */
bool tw_provider_strv_has(char *const *v, size_t n, const char *s);

/* Frees the n strings of v and v itself (NULL allowed). */
void tw_provider_strv_free(char **v, size_t n);

/* The bounds and defaults of the HTTP keys an adapter reads with
 * tw_provider_cfg_http(); adapters differ only in these numbers. */
struct tw_provider_http_limits {
  int64_t timeout_def;  /* timeout_ms: 100..600000 */
  int64_t connect_min;  /* connect_timeout_ms: connect_min..60000,
                           default 5000 */
  int64_t attempts_max; /* max_attempts: 1..attempts_max */
  int64_t attempts_def;
  int64_t backoff_min; /* backoff_base_ms: backoff_min..60000, default
                          200; backoff_cap_ms: backoff_min..600000 */
  int64_t backoff_cap_def;
};

/* The clouds' limits: timeout_ms 20000, connect_timeout_ms from 100,
 * max_attempts 1..20 (4), backoffs from 1 ms, cap 20000. */
#define TW_PROVIDER_HTTP_CLOUD                                                 \
  {                                                                            \
    .timeout_def = 20000, .connect_min = 100, .attempts_max = 20,              \
    .attempts_def = 4, .backoff_min = 1, .backoff_cap_def = 20000              \
  }

struct tw_http_opts;

/* Reads timeout_ms, connect_timeout_ms, max_attempts, backoff_base_ms and
 * backoff_cap_ms, in that order, within lim (see above).  The timeouts go
 * to *timeout_ms and *connect_timeout_ms (per request, struct
 * tw_http_request); the retry settings to opts->max_attempts,
 * backoff_base_ms and backoff_cap_ms, leaving the other fields of opts
 * alone.  TW_E_INVALID naming the first key out of bounds, as
 * tw_provider_cfg_int(); the outputs may then be partly written. */
enum tw_rc tw_provider_cfg_http(const struct tw_node *cfg,
                                const struct tw_provider_http_limits *lim,
                                long *timeout_ms, long *connect_timeout_ms,
                                struct tw_http_opts *opts, struct tw_err *err);

/* A secret, referenced and never inline: `<base>_secret` names a sealed
 * secret resolved through p's resolver (tw_secret_resolver_fn above; p may
 * be NULL: none), `<base>_env` an environment
 * variable, `<base>_file` a file whose first line is the value.  An inline
 * `<base>` is refused (TW_E_INVALID) so secrets never sit in configs.  When
 * neither is given, def_env (may be NULL) is tried.  *out is owned (free()
 * it) or NULL when absent and !required; TW_E_AUTH when required and
 * absent or unreadable.  The value is never logged. */
enum tw_rc tw_provider_cfg_secret(const struct tw_provider *p,
                                  const struct tw_node *cfg, const char *base,
                                  const char *def_env, bool required,
                                  char **out, struct tw_err *err);

/* Converts a decimal USD amount ("0.0437", "12", "$3.5e-2") to micro-USD:
 * tw_money_parse() (broker/base/units.h: its grammar, its rounding beyond
 * the sixth decimal), then the bounds of an offer's price.  TW_E_INVALID
 * when malformed, negative or above TW_MODEL_PRICE_MAX_UUSD. */
enum tw_rc tw_provider_usd_to_uusd(const char *s, int64_t *out,
                                   struct tw_err *err);

#endif
