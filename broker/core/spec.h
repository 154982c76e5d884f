/* spec.h - the job spec: what a user submits, parsed and validated.
 *
 * Input is YAML or JSON (see node.h).  Validation errors are TW_E_INVALID
 * with err->field set to the field path ("resources.cpus",
 * "datasets[1].size") and err->msg reading
 * `resources.cpus: expected a number or N+, got "eight"`.  Unknown keys are
 * rejected with the closest known key suggested:
 * `resources.acelerators: unknown key; did you mean "accelerators"?`. */
#ifndef TW_BROKER_SPEC_H
#define TW_BROKER_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "broker/base/model.h" /* enum tw_market, enum tw_arch */
#include "broker/base/units.h"

struct tw_node;

#define TW_SPEC_NAME_MAX 128

/* Bounds enforced by validation (docs/jobspec.md lists them all). */
#define TW_SPEC_NODES_MAX 4096
#define TW_SPEC_CPUS_MAX 1024
#define TW_SPEC_ACCEL_COUNT_MAX 256
#define TW_SPEC_MEMORY_MIB_MAX (64LL * 1024 * 1024) /* 64 TiB */
#define TW_SPEC_DURATION_MAX_S (365LL * 86400)
#define TW_SPEC_PRICE_MAX_UUSD (1000000LL * 1000000) /* 1,000,000 USD/h */
#define TW_SPEC_PRIORITY_MIN (-1000)
#define TW_SPEC_PRIORITY_MAX 1000
#define TW_SPEC_DATASETS_MAX 256
#define TW_SPEC_PROVIDERS_MAX 16
#define TW_SPEC_REGIONS_MAX 256
#define TW_SPEC_RESIDENCY_MAX 64
#define TW_SPEC_ENV_MAX 512
#define TW_SPEC_URI_MAX 2048
#define TW_SPEC_RUN_MAX (64 * 1024)
#define TW_SPEC_ENV_VALUE_MAX (32 * 1024)
#define TW_SPEC_SECRETS_MAX 64
#define TW_SPEC_SECRET_VALUE_MAX (16 * 1024)
#define TW_SPEC_SELECTORS_MAX 32
#define TW_SPEC_SELECTOR_VALUES_MAX 64
#define TW_SPEC_LABEL_MAX 31 /* the selector filter's label buffer */
#define TW_SPEC_LABEL_VALUE_MAX 128
#define TW_SPEC_RTT_MS_MAX 10000
#define TW_SPEC_NEAR_MAX 8
#define TW_SPEC_ACCELS_MAX 16       /* accelerator alternatives */
#define TW_SPEC_NAME_FILTER_MAX 64  /* globs per include or exclude list */
#define TW_SPEC_IMAGE_MAX 256       /* image: an id or a name */
#define TW_SPEC_DISK_GB_MAX 65536   /* disk.size_gb: 64 TiB */
#define TW_SPEC_PORTS_MAX 64        /* ports: entries */

struct tw_dataset_ref {
  char *uri;          /* required, e.g. s3://bucket/path */
  int64_t size_bytes; /* 0 when not given */
  char *location;     /* "aws:us-east-1" or NULL */
};

/* A label selector, the syntax of the selector filter's config
 * (policies/place/filter_location.c): {label: L, in|not_in|glob: [values]} or
 * {label: L, exists: true|false}.  Labels are the offer's own and its
 * topology (provider, account, region, zone, zone_id, rack, country,
 * jurisdiction). */
enum tw_sel_op {
  TW_SEL_IN = 0,
  TW_SEL_NOT_IN,
  TW_SEL_EXISTS,
  TW_SEL_NOT_EXISTS,
  TW_SEL_GLOB
};

struct tw_label_selector {
  char *label; /* 1..31 bytes, no spaces or control characters */
  enum tw_sel_op op;
  char **values; /* in, not_in, glob: 1..64 distinct; else NULL */
  size_t n_values;
};

/* One accelerator a job accepts (resources.accelerators): the name as
 * written, exact by default ("A100" is the catalog's canonical A100, the
 * 40 GB one; "A100-80GB" the other), or a glob ("A100*": any variant);
 * count exact unless at_least ("A100:8+"). */
struct tw_accel_ask {
  char *name;
  int count; /* 1..256 */
  bool at_least;
};

/* Include and exclude globs over a name (resources.instance_types,
 * resources.families): an offer passes when it matches an include (or
 * there is none) and no exclude. */
struct tw_name_filter {
  char **include;
  size_t n_include;
  char **exclude;
  size_t n_exclude;
};

struct tw_kv {
  char *key;
  char *value;
};

/* An entry of `ports:` is a struct tw_port_range (model.h). */

/* The operator's allow-list of the job's machine (config `machine:`,
 * broker/core/config.h): what `image`, `disk` and `ports` of a spec may
 * ask for.  An empty list allows nothing of its kind. */
struct tw_spec_machine {
  const char *const *images;         /* globs, NULL-terminated; NULL none */
  const char *const *disk_types;     /* NULL-terminated; NULL none */
  int64_t disk_max_gb;               /* 0: disk.size_gb refused */
  const struct tw_port_range *ports; /* a spec's ports must lie inside */
  size_t n_ports;
};

struct tw_job_spec {
  char *name;    /* required: [A-Za-z0-9._-], 1..128 chars */
  char *tenant;  /* default "default" */
  char *project; /* default "default" */

  /* resources: per node */
  char *accel_name;     /* as written: "A100", "A100-80GB"; NULL = none;
                           the first of accels */
  int accel_count;      /* >= 1 when accel_name is set */
  /* every accelerator the job accepts, any one satisfies (n >= 1 when
   * accel_name is set); the first is accel_name and accel_count */
  struct tw_accel_ask *accels;
  size_t n_accels;
  /* instance types and families (globs, case-insensitive); burstable and
   * confidential families are excluded unless an include names them */
  struct tw_name_filter instance_types, families;
  int cpus;             /* 0 = unspecified */
  bool cpus_at_least;   /* "8+" */
  int64_t memory_mib;   /* GiB in the spec, MiB here; 0 = unspecified */
  bool memory_at_least; /* "32+" */
  enum tw_arch arch;      /* TW_ARCH_ANY unless written: x86_64 then,
                             unless arch_any */
  bool arch_any;          /* `arch: any` written: every architecture */
  enum tw_market market; /* market: or use_spot: */

  int nodes;                       /* default 1, 1..4096 */
  int64_t duration_s;              /* expected run time; 0 = unspecified */
  int64_t deadline_ms;             /* ms since epoch; 0 = none */
  int64_t max_price_uusd_per_hour; /* micro-USD; 0 = no cap */

  struct tw_dataset_ref *datasets;
  size_t n_datasets;

  /* placement */
  char **providers; /* allowed providers: aws azure alibaba slurm */
  size_t n_providers;
  char **regions; /* region selectors: "aws:us-*", "azure:westeurope" */
  size_t n_regions;
  char **residency; /* allowed jurisdictions: "EU", "US", "CN", ... */
  size_t n_residency;
  /* all must match, in addition to the policy's own selectors */
  struct tw_label_selector *selectors;
  size_t n_selectors;
  int max_rtt_ms; /* 0 = none; else 1..10000, the latency filter's bound */
  char **near;    /* "provider:region" the users sit at: latency origins
                     beside the job's data */
  size_t n_near;

  int priority; /* default 0, -1000..1000 */

  int64_t checkpoint_interval_s; /* 0 = none */
  char *checkpoint_uri;
  /* the spot fallback strategy, one of the names of the fallback table
   * (policies/fallback/fallback_strategy.h) when the parser was given them
   * (struct tw_spec_opts); NULL: the policy's (the config's spot.fallback) */
  char *fallback;

  /* the job's working directory, an archive uploaded beforehand
   * (PUT /v1/workdirs/{sha256}): "sha256:" and 64 lower-case hex digits;
   * NULL = none.  The agent unpacks it and runs setup and run in it. */
  char *workdir;
  char *setup; /* run before `run` on every node; NULL = none */
  char *run;   /* the script; NULL = none */
  struct tw_kv *env;
  size_t n_env;
  /* secrets: variables of the job's environment whose values are sealed
   * (docs/jobspec.md#secrets).  A value is NULL when not given: always in
   * a stored spec, which keeps the names only (tw_spec_to_json() writes
   * null for each); the API seals the values it was given apart. */
  struct tw_kv *secrets;
  size_t n_secrets;

  /* the machine (docs/jobspec.md#image-disk-ports), each from the
   * operator's allow-list (struct tw_spec_machine) */
  char *image;                 /* image id or name; NULL: the provider's */
  int64_t disk_size_gb;        /* disk.size_gb, 1..65536; 0: the provider's */
  char *disk_type;             /* disk.type ("gp3", "Premium_LRS"); NULL */
  struct tw_port_range *ports; /* inbound ports to open, sorted */
  size_t n_ports;

  /* workflows (broker/core/flow.h, docs/workflows.md) */
  char *depends_on; /* Slurm's --dependency syntax, validated; NULL: none */
  /* a dependency that can never be met fails the job (true, the default)
   * or leaves it waiting (false), --kill-on-invalid-dep */
  bool kill_on_invalid_dep;
  char *array; /* canonical array text ("0-999:2%10"); NULL: not an array */
  bool array_sequential; /* AWS Batch SEQUENTIAL */
};

/* What validation checks beyond the spec's own shape. */
struct tw_spec_opts {
  /* The provider names placement.providers, placement.regions,
   * placement.near and datasets[].location may use, NULL-terminated: the
   * names of the adapter registry (providers/provider.h,
   * tw_provider_names()), passed down by whoever holds it.  An unknown one
   * is TW_E_INVALID naming the field, with the closest name suggested.
   * NULL: any provider-shaped word (letters, digits, '-', '_'); for specs
   * already validated, such as the stored ones. */
  const char *const *providers;
  /* The strategy names `fallback:` may take, NULL-terminated: the fallback
   * table's (tw_fallback_names() in policies/fallback/fallback_strategy.h),
   * passed down by whoever links it (the API, the scheduler), since the
   * core may not include policies.  An unknown one is TW_E_INVALID naming
   * "fallback" and listing the names, with the closest suggested.  NULL:
   * any strategy-shaped word (tw_spec_name_word()), checked later by whoever
   * holds the table; the scheduler refuses a stored spec whose strategy
   * the table lacks (broker/sched/sched_int.h, sched__parse_spec). */
  const char *const *fallbacks;
  /* The operator's allow-list of image, disk and ports.  A spec asking
   * for one outside it is TW_E_INVALID naming the field ("image",
   * "disk.type", "ports[1]").  NULL: no check (stored specs). */
  const struct tw_spec_machine *machine;
};

/* The config's `machine:` mapping (configs/tradewind.yaml) into *out:
 * {images: [glob], disk_types: [name], disk_max_gb: N, ports: [port or
 * "A-B"]}, every key optional.  NULL m: an empty allow-list.  Errors name
 * the key ("machine.ports[2]").  tw_spec_machine_release() frees what a
 * success allocated. */
enum tw_rc tw_spec_machine_parse(const struct tw_node *m,
                                 struct tw_spec_machine *out,
                                 struct tw_err *err);
void tw_spec_machine_release(struct tw_spec_machine *m);

/* Validates a parsed document into spec (zeroed, then filled).  On error
 * spec is released and err names the field.  The caller tw_spec_release()s
 * a successful result.  opts may be NULL (as tw_spec_from_node()). */
enum tw_rc tw_spec_from_node_opts(const struct tw_node *root,
                                  const struct tw_spec_opts *opts,
                                  struct tw_job_spec *spec, struct tw_err *err);
enum tw_rc tw_spec_from_node(const struct tw_node *root,
                             struct tw_job_spec *spec, struct tw_err *err);

/* Parses text: JSON when is_json, else YAML (which also reads JSON), then
 * validates as tw_spec_from_node_opts(). */
enum tw_rc tw_spec_parse_opts(const char *text, size_t len, bool is_json,
                              const struct tw_spec_opts *opts,
                              struct tw_job_spec *spec, struct tw_err *err);
enum tw_rc tw_spec_parse(const char *text, size_t len, bool is_json,
                         struct tw_job_spec *spec, struct tw_err *err);

void tw_spec_release(struct tw_job_spec *spec);
/* Frees the secrets, their values zeroed first (tw_spec_release() does
 * it too). */
void tw_spec_secrets_wipe(struct tw_job_spec *spec);

/* Appends the normalized spec as canonical JSON (fixed key order, units in
 * the key names: memory_mib, duration_s, max_price_uusd_per_hour, deadline
 * as RFC 3339).  tw_spec_parse() of this output yields an equal spec. */
void tw_spec_to_json(const struct tw_job_spec *spec, struct tw_buf *out);

/* The parsers of money, sizes and durations (tw_parse_usd_uusd,
 * tw_parse_size_bytes, tw_parse_duration_s) live in broker/base/units.h,
 * included here for the spec's users. */

/* Whether s is shaped like the name of a strategy: a lower-case letter,
 * then lower-case letters, digits and '-', at most 63 bytes.  What
 * `fallback:` and spot.fallback accept when no names list is given. */
bool tw_spec_name_word(const char *s);

/* s is a workdir reference: "sha256:" and 64 lower-case hex digits. */
bool tw_spec_workdir_ref(const char *s);

/* Writes the NULL-terminated names as "a, b, c or d" into out (truncated
 * to outsz), for messages listing what is valid. */
void tw_spec_names_join(const char *const *names, char *out, size_t outsz);

const char *tw_market_str(enum tw_market m); /* "any", "spot", "on-demand",
                                                "private" */
const char *tw_arch_str(enum tw_arch a);     /* "any", "x86_64", "arm64" */
/* "in", "not_in", "exists" (also for TW_SEL_NOT_EXISTS), "glob" */
const char *tw_sel_op_str(enum tw_sel_op op);

#endif
