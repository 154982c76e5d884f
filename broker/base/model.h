/* model.h - the shared data model: offers, instances, launch requests and
 * provider events, and the lists that carry them.
 *
 * Every cloud is turned, at its adapter, into these few shapes; the core
 * (placement, fallback, quotas, metering) never sees a provider's own.
 *
 * Strings are fixed-size arrays, NUL-terminated, so an offer or an instance
 * is plain data: it can be copied by assignment, embedded, kept in an array
 * and freed with its array.  Adapters fill them through tw_model_set(),
 * which refuses (rather than silently cuts) a value that does not fit: a
 * truncated instance id would name somebody else's instance.
 *
 * Money is integer micro-USD (1 USD = 1,000,000); units are in the names.
 *
 * The helpers are static inline so that every library (providers, billing,
 * policies, the core) can use the model without linking an extra one. */
#ifndef TW_BROKER_MODEL_H
#define TW_BROKER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

/* TW_MARKET_PRIVATE: capacity the organisation owns (a Slurm cluster),
 * priced at internal chargeback rates.  Offers carry it; a job spec cannot
 * ask for it (`providers: [slurm]` selects private capacity instead). */
enum tw_market {
  TW_MARKET_ANY = 0,
  TW_MARKET_SPOT,
  TW_MARKET_ON_DEMAND,
  TW_MARKET_PRIVATE
};
enum tw_arch { TW_ARCH_ANY = 0, TW_ARCH_X86_64, TW_ARCH_ARM64 };

/* Field sizes, terminating NUL included.  EC2 ids are at most 19 chars,
 * its client tokens at most 64; Azure resource names reach 80. */
#define TW_MODEL_NAME_MAX 64  /* provider, account, region, zone, type */
#define TW_MODEL_ID_MAX 128   /* instance and offer ids */
#define TW_MODEL_TOKEN_MAX 65 /* client token: 64 ASCII chars */
#define TW_MODEL_TAG_MAX 128  /* job, attempt and tenant tag values */
#define TW_MODEL_TEXT_MAX 256 /* free text: reasons, messages */
#define TW_OFFER_LABELS_MAX 8

/* The dearest hourly price the model accepts: 1,000,000 USD. */
#define TW_MODEL_PRICE_MAX_UUSD (1000000LL * 1000000)

/* Copies src into dst[dst_size].  Returns false, leaving dst empty, when
 * src (NULL counts as "") does not fit; adapters turn that into an error
 * naming the field. */
static inline bool tw_model_set(char *dst, size_t dst_size, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= dst_size) {
    if (dst_size)
      dst[0] = '\0';
    return false;
  }
  memcpy(dst, src ? src : "", n);
  dst[n] = '\0';
  return true;
}
#define TW_SET(dst, src) tw_model_set((dst), sizeof(dst), (src))

/* ---- offers ------------------------------------------------------------ */

struct tw_label {
  char key[32];
  char value[64];
};

/* One thing that can be bought: an instance type, in one zone (or region,
 * where the provider has no zones), in one market, at one price. */
struct tw_offer {
  char id[TW_MODEL_ID_MAX];         /* account:region:zone:type:market, see
                                       tw_offer_make_id(); stable across runs */
  char provider[TW_MODEL_NAME_MAX]; /* adapter name: "aws" */
  char account[TW_MODEL_NAME_MAX];  /* configured account: "aws-main" */
  char region[TW_MODEL_NAME_MAX];   /* "us-east-1" */
  char zone[TW_MODEL_NAME_MAX];     /* "us-east-1a"; "" when regional */
  char zone_id[TW_MODEL_NAME_MAX];  /* provider's stable zone id "use1-az4",
                                       "" when unknown */
  char rack[TW_MODEL_NAME_MAX];     /* private clusters; "" elsewhere */
  char instance_type[TW_MODEL_NAME_MAX];
  enum tw_arch arch; /* TW_ARCH_ANY: unknown */
  int vcpus;
  int64_t memory_mib;
  char accel_name[32]; /* normalized: "A100-80GB"; "" none */
  int accel_count;
  int64_t accel_memory_mib;      /* per device; 0 unknown */
  enum tw_market market;         /* TW_MARKET_SPOT or _ON_DEMAND */
  int64_t price_uusd_per_hour;   /* >= 0 */
  int64_t billing_granularity_s; /* 1 = per second; 0 unknown */
  int64_t min_charge_s;          /* AWS: 60 s per start */
  int interruption_pct;          /* spot: estimated %/month; -1 unknown */
  int64_t capacity;              /* free units (private clusters); -1
                                    unknown */
  int64_t price_observed_ms;     /* when the price was seen; 0 unknown */
  /* A provider that sells in another currency reports its own price here
   * and leaves price_uusd_per_hour 0: the catalog converts it with its
   * rate table, the one source of exchange rates (docs/catalog.md), and
   * records the rate and its day.  "" when the price is USD. */
  char price_currency[4];       /* ISO 4217: "CNY" */
  int64_t price_micro_per_hour; /* millionths of price_currency */
  int64_t fx_nusd_per_unit;     /* the catalog's rate, nano-USD per unit of
                                   price_currency; 0: not converted */
  char fx_date[11];             /* the rate's day, "2025-06-30" */
  struct tw_label labels[TW_OFFER_LABELS_MAX];
  size_t n_labels;
  /* The instance type's family ("m6i", "Ds_v5", "n2") and traits
   * (TW_TYPE_BURSTABLE, TW_TYPE_CONFIDENTIAL of providers/provider.h), as
   * the provider's info block names them (the catalog sets both); ""
   * and 0: the type's text before its first '.' or '-', no traits. */
  char family[32];
  unsigned type_traits;
  /* Why the catalog holds this offer's price for implausible (its price
   * sanity rule, docs/catalog.md): "" when it does not.  Placement
   * excludes such offers unless the operator allows them. */
  char quarantine[128];
  /* No configured account can launch it (a seed catalog's cloud without
   * an adapter or account): plannable, never launched. */
  bool no_account;
};

/* Traits of an instance type placement excludes unless a job names the
 * type or its family (struct tw_offer's type_traits). */
#define TW_TYPE_BURSTABLE (1u << 0)    /* CPU credits: AWS t*, Azure B* */
#define TW_TYPE_CONFIDENTIAL (1u << 1) /* memory-encrypted: Azure DC*, EC* */

/* Zeroes o and sets the "unknown" markers (-1) where 0 is a real value. */
static inline void tw_offer_init(struct tw_offer *o) {
  memset(o, 0, sizeof *o);
  o->interruption_pct = -1;
  o->capacity = -1;
}

/* Writes "account:region:zone:type:market" into o->id.  Returns false when
 * it does not fit. */
static inline bool tw_offer_make_id(struct tw_offer *o) {
  int n = snprintf(o->id, sizeof o->id, "%s:%s:%s:%s:%s", o->account, o->region,
                   o->zone, o->instance_type,
                   o->market == TW_MARKET_SPOT ? "spot" : "on-demand");
  if (n < 0 || (size_t)n >= sizeof o->id) {
    o->id[0] = '\0';
    return false;
  }
  return true;
}

/* Sets (or replaces) label key; false when full or too long. */
static inline bool tw_offer_set_label(struct tw_offer *o, const char *key,
                                      const char *value) {
  size_t i;
  for (i = 0; i < o->n_labels; i++)
    if (!strcmp(o->labels[i].key, key))
      break;
  if (i == TW_OFFER_LABELS_MAX)
    return false;
  if (strlen(key) >= sizeof o->labels[i].key ||
      !TW_SET(o->labels[i].value, value))
    return false;
  if (i == o->n_labels) {
    TW_SET(o->labels[i].key, key);
    o->n_labels++;
  }
  return true;
}

/* The label's value, or NULL. */
static inline const char *tw_offer_label(const struct tw_offer *o,
                                         const char *key) {
  for (size_t i = 0; i < o->n_labels; i++)
    if (!strcmp(o->labels[i].key, key))
      return o->labels[i].value;
  return NULL;
}

/* Does accelerator name `have` (normalized, "A100-80GB") satisfy `want`
 * ("A100" matches every A100 variant, "A100-80GB" only itself)?
 * Case-insensitive.  Placement's filter and tenancy's GPU quotas both ask
 * this. */
static inline bool tw_accel_matches(const char *want, const char *have) {
  size_t n = strlen(want);
  if (strncasecmp(want, have, n))
    return false;
  return have[n] == '\0' || have[n] == '-';
}

/* ---- instances --------------------------------------------------------- */

enum tw_instance_state {
  TW_INST_UNKNOWN = 0,
  TW_INST_PENDING,
  TW_INST_RUNNING,
  TW_INST_STOPPING,
  TW_INST_STOPPED,
  TW_INST_SHUTTING_DOWN,
  TW_INST_TERMINATED
};

static inline const char *tw_instance_state_str(enum tw_instance_state s) {
  switch (s) {
  case TW_INST_PENDING:
    return "pending";
  case TW_INST_RUNNING:
    return "running";
  case TW_INST_STOPPING:
    return "stopping";
  case TW_INST_STOPPED:
    return "stopped";
  case TW_INST_SHUTTING_DOWN:
    return "shutting-down";
  case TW_INST_TERMINATED:
    return "terminated";
  case TW_INST_UNKNOWN:
    break;
  }
  return "unknown";
}

/* Parses the names above (EC2 uses exactly these); TW_INST_UNKNOWN for
 * anything else. */
static inline enum tw_instance_state tw_instance_state_parse(const char *s) {
  static const char *const names[] = {"pending", "running",       "stopping",
                                      "stopped", "shutting-down", "terminated"};
  for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i]))
      return (enum tw_instance_state)(i + 1);
  return TW_INST_UNKNOWN;
}

/* shutting-down and terminated: the instance is gone or going, whatever
 * the caller does; it is billed no more once terminated. */
static inline bool tw_instance_state_gone(enum tw_instance_state s) {
  return s == TW_INST_SHUTTING_DOWN || s == TW_INST_TERMINATED;
}

/* What was bought, as the provider reports it now. */
struct tw_instance {
  char id[TW_MODEL_ID_MAX]; /* provider's id: "i-0abc..." */
  char provider[TW_MODEL_NAME_MAX];
  char account[TW_MODEL_NAME_MAX];
  char region[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX];
  char instance_type[TW_MODEL_NAME_MAX];
  enum tw_arch arch;
  enum tw_market market; /* spot when the provider says so */
  enum tw_instance_state state;
  char provider_state[32];              /* as the provider spells it */
  char state_reason[TW_MODEL_TEXT_MAX]; /* "Server.SpotInstanceTermination" */
  char client_token[TW_MODEL_TOKEN_MAX];
  /* Tradewind's tags (tradewind:job, tradewind:attempt, tradewind:tenant);
   * "" when the instance does not carry them. */
  char job_id[TW_MODEL_TAG_MAX];
  char attempt_id[TW_MODEL_TAG_MAX];
  char tenant[TW_MODEL_TAG_MAX];
  int64_t launched_ms; /* 0 unknown */
  /* The provider's own times, which billing follows (docs/billing.md):
   * when the instance started running (EC2 LaunchTime, ARM's
   * ProvisioningState/succeeded time, ECS StartTime, Slurm StartTime) and
   * when it stopped (EC2's state transition time, ARM's PowerState time,
   * Slurm EndTime).  0 unknown: the broker's own observation is used. */
  int64_t running_ms;
  int64_t ended_ms;
  char private_ip[48];
  char public_ip[48];
  /* Batch providers (Slurm) run the job's script themselves: `finished`
   * says the workload ended on its own, with exit_code.  Clouds leave it
   * false: their instances end when Tradewind terminates them. */
  bool finished;
  int exit_code;
};

/* The tag keys every adapter writes and reads back. */
#define TW_TAG_JOB "tradewind:job"
#define TW_TAG_ATTEMPT "tradewind:attempt"
#define TW_TAG_TENANT "tradewind:tenant"

/* ---- launch requests --------------------------------------------------- */

/* One inbound port (lo == hi) or range, 1..65535 (a spec's `ports`). */
struct tw_port_range {
  int lo, hi;
};

/* What to buy.  All pointers are borrowed for the duration of the call. */
struct tw_launch {
  const struct tw_offer *offer; /* where and what: region, zone, type,
                                   market; required */
  /* The attempt's idempotency key.  Required: a launch retried with the
   * same token (after a timeout, a crash) returns the instance the first
   * call bought instead of buying a second one. */
  const char *client_token;
  const char *job_id;     /* tagged tradewind:job; required */
  const char *attempt_id; /* tagged tradewind:attempt; required */
  const char *tenant;     /* tagged tradewind:tenant; required */
  /* Spot only: the most the attempt may pay; 0 = the provider's cap
   * (on-demand price on AWS). */
  int64_t max_price_uusd_per_hour;
  const char *image;     /* NULL: the adapter's configured image */
  const char *user_data; /* raw (adapters encode); NULL none */
  /* the job's machine (spec image, disk, ports): 0/NULL the adapter's
   * configured ones */
  int64_t disk_size_gb;
  const char *disk_type;
  const struct tw_port_range *ports;
  size_t n_ports;

  /* Batch providers (Slurm) run the job themselves and use these; clouds
   * ignore them.  Zero/NULL when the caller does not know. */
  int64_t duration_s;      /* expected run time: sets the time limit */
  int nodes;               /* gang size; 0 means 1 */
  const struct tw_kv *env; /* the job's environment (spec.h) */
  size_t n_env;
};

/* ---- provider events --------------------------------------------------- */

enum tw_event_kind {
  /* The provider will reclaim the instance at deadline_ms (AWS: the spot
   * instance-action notice, two minutes ahead). */
  TW_EVENT_INTERRUPTION = 1,
  /* Interruption risk went up; no deadline (AWS: rebalance
   * recommendation).  A hint to checkpoint or move early. */
  TW_EVENT_REBALANCE
};

static inline const char *tw_event_kind_str(enum tw_event_kind k) {
  switch (k) {
  case TW_EVENT_INTERRUPTION:
    return "interruption";
  case TW_EVENT_REBALANCE:
    return "rebalance";
  }
  return "unknown";
}

struct tw_event {
  enum tw_event_kind kind;
  char instance_id[TW_MODEL_ID_MAX];
  char action[16];     /* interruption: "terminate", "stop", "hibernate" */
  int64_t noticed_ms;  /* when the provider issued the notice */
  int64_t deadline_ms; /* when the action takes effect; 0 none */
};

/* ---- lists ------------------------------------------------------------- *
 *
 * A growable array of plain items.  Embed the list, init it, add items
 * (tw_x_list_add() hands back a fresh slot, set up by the item's init
 * function and owned by the list, valid until the next add), release it.
 * Releasing frees the storage and leaves an empty list that may be reused.
 * Not thread-safe: one owner at a time. */

#define TW_MODEL_LIST(name, type, item_init)                                   \
  struct name {                                                                \
    struct type *items;                                                        \
    size_t n;                                                                  \
    size_t cap;                                                                \
  };                                                                           \
  static inline void name##_init(struct name *l) {                             \
    l->items = NULL;                                                           \
    l->n = l->cap = 0;                                                         \
  }                                                                            \
  static inline void name##_release(struct name *l) {                          \
    size_t bytes = l->cap * sizeof *l->items;                                  \
    free(l->items);                                                            \
    tw_mem_trim(bytes); /* a large listing's pages back to the kernel */       \
    name##_init(l);                                                            \
  }                                                                            \
  static inline struct type *name##_add(struct name *l) {                      \
    if (l->n == l->cap) {                                                      \
      l->cap = l->cap ? l->cap * 2 : 16;                                       \
      l->items = tw_realloc(l->items, l->cap * sizeof *l->items);              \
    }                                                                          \
    item_init(&l->items[l->n]);                                                \
    return &l->items[l->n++];                                                  \
  }                                                                            \
  static inline void name##_push(struct name *l, const struct type *item) {    \
    struct type *slot = name##_add(l);                                         \
    *slot = *item;                                                             \
  }

static inline void tw_instance_init(struct tw_instance *i) {
  memset(i, 0, sizeof *i);
}
static inline void tw_event_init(struct tw_event *e) {
  memset(e, 0, sizeof *e);
}

TW_MODEL_LIST(tw_offer_list, tw_offer, tw_offer_init)
TW_MODEL_LIST(tw_instance_list, tw_instance, tw_instance_init)
TW_MODEL_LIST(tw_event_list, tw_event, tw_event_init)

#endif
