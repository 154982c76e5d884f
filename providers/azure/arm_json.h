/* arm_json.h - parsers of Azure Resource Manager, identity, Retail Prices
 * and Scheduled Events answers (JSON, jansson), apart from the adapter so
 * they can be tested on recorded responses and fuzzed.
 *
 * Each parser takes the raw body and fills plain structs; no json_t leaves
 * this module.  Members are looked up by the names the REST references
 * give; a member of the wrong JSON type is TW_E_INVALID naming its path
 * ("/properties/hardwareProfile/vmSize: expected a string"), a string
 * that does not fit its field is TW_E_INVALID too (a cut VM name would
 * name another VM).  Unknown members are ignored, as ARM clients must.
 *
 * Input is untrusted.  Bodies above TW_ARM_JSON_MAX_BYTES are TW_E_TOOBIG;
 * malformed JSON is TW_E_INVALID with jansson's line and column.
 *
 * Threads: any; the parsers keep no state. */
#ifndef TW_PROVIDERS_AZURE_ARM_JSON_H
#define TW_PROVIDERS_AZURE_ARM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/model.h"

#define TW_ARM_JSON_MAX_BYTES (16u << 20)

/* ---- errors ------------------------------------------------------------- */

struct tw_arm_error {
  char code[64];     /* "AllocationFailed", "invalid_client" */
  char message[256]; /* may be cut to fit */
  char target[64];
};

/* True when body is an error document, with the error in *out: ARM's
 * {"error": {"code", "message", "target", "details": [...]}}, the bare
 * {"code", "message"} some resource providers send, or the identity
 * platform's {"error": "invalid_client", "error_description": "..."}.
 * When the top code is generic and a detail carries a capacity or quota
 * code, the detail's is taken (a failed deployment nests the real one). */
bool tw_arm_parse_error(const char *body, size_t len, struct tw_arm_error *out);

/* The class of an Azure error, from its code, its message (quota errors
 * come as OperationNotAllowed with the quota named in the text) and the
 * HTTP status (0 when it came in a failed operation):
 *   SkuNotAvailable, AllocationFailed, ZonalAllocationFailed,
 *   OverconstrainedAllocationRequest, OverconstrainedZonalAllocationRequest,
 *   AllocationFailedVMSeriesNotAvailable...   TW_E_CAPACITY
 *   QuotaExceeded, *QuotaExceeded, OperationNotAllowed mentioning a quota,
 *   *LimitReached, *LimitExceeded                         TW_E_QUOTA
 *   TooManyRequests, RetryableError, InternalServerError, ServerTimeout,
 *   429 and 5xx                                          TW_E_RETRYABLE
 *   InvalidAuthenticationToken*, ExpiredAuthenticationToken,
 *   AuthenticationFailed, invalid_client, 401, 403       TW_E_AUTH
 *   ResourceNotFound, NotFound, 404                       TW_E_NOTFOUND
 *   anything else                                         TW_E_INVALID
 * See docs/azure.md for the table. */
enum tw_rc tw_arm_error_class(const char *code, const char *message,
                              long http_status);

/* Turns a failed answer into err: class as above, err->detail the code
 * (or "HTTP <status>" without an error document), err->msg
 * "<what>: <Code>: <Message>".  Returns the class. */
enum tw_rc tw_arm_response_error(const char *what, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err);

/* ---- identity ----------------------------------------------------------- */

/* Parses a token answer of the identity platform (v2.0: expires_in a
 * number; v1.0: a string).  *access_token is owned (free()); *expires_in_s
 * is at least 1.  TW_E_INVALID when either is missing or the token type
 * is not Bearer. */
enum tw_rc tw_arm_parse_token(const char *body, size_t len, char **access_token,
                              int64_t *expires_in_s, struct tw_err *err);

/* Parses an OpenID Connect discovery document; *token_endpoint is owned. */
enum tw_rc tw_arm_parse_openid(const char *body, size_t len,
                               char **token_endpoint, struct tw_err *err);

/* ---- virtual machines --------------------------------------------------- */

struct tw_arm_vm {
  char name[TW_MODEL_ID_MAX];
  char location[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX]; /* first of zones[]; "" regional */
  char vm_size[TW_MODEL_NAME_MAX];
  char priority[16];        /* "Regular", "Spot", "Low"; "" absent */
  char eviction_policy[16]; /* "Delete", "Deallocate" */
  /* billingProfile.maxPrice: -1 = capped at the on-demand price, 0
   * absent, else micro-USD. */
  int64_t max_price_uusd;
  char provisioning_state[32]; /* "Creating", "Succeeded", "Failed", ... */
  /* From the instance view, when the answer carries one: "running",
   * "deallocated", ... (the part after PowerState/); "" unknown. */
  char power_state[32];
  /* A ProvisioningState/failed/<Code> status: the code and message. */
  char failure_code[64];
  char failure_message[TW_MODEL_TEXT_MAX];
  int64_t created_ms; /* properties.timeCreated; 0 unknown */
  /* The instance view's status times: ProvisioningState/succeeded (the
   * VM was created and started) and the PowerState status, when they
   * carry one; 0 unknown. */
  int64_t provisioned_ms, power_ms;
  char vm_id[48];
  /* Tradewind's tags, read case-insensitively as ARM compares tag names;
   * "" when absent. */
  char job_id[TW_MODEL_TAG_MAX];
  char attempt_id[TW_MODEL_TAG_MAX];
  char tenant[TW_MODEL_TAG_MAX];
  char client_token[TW_MODEL_TOKEN_MAX]; /* tag tradewind:token */
};

static inline void tw_arm_vm_init(struct tw_arm_vm *v) {
  memset(v, 0, sizeof *v);
}
TW_MODEL_LIST(tw_arm_vm_list, tw_arm_vm, tw_arm_vm_init)

/* The tag the adapter writes the client token under (the VM name is a
 * hash of it, so the token itself is kept for the generic layer). */
#define TW_ARM_TAG_TOKEN "tradewind:token"

/* Parses one virtual machine (a GET or PUT answer), its
 * properties.instanceView included when it was expanded. */
enum tw_rc tw_arm_parse_vm(const char *body, size_t len, struct tw_arm_vm *out,
                           struct tw_err *err);

/* Parses a VirtualMachineInstanceView (GET .../instanceView) into the
 * power state and failure fields of vm. */
enum tw_rc tw_arm_parse_instance_view(const char *body, size_t len,
                                      struct tw_arm_vm *vm, struct tw_err *err);

/* Parses a page of virtual machines ({"value": [...], "nextLink"}).
 * *next_link (may be NULL) receives an owned copy of nextLink, NULL on the
 * last page. */
enum tw_rc tw_arm_parse_vm_list(const char *body, size_t len,
                                struct tw_arm_vm_list *out, char **next_link,
                                struct tw_err *err);

/* The model's view of vm: state from provisioning and power state
 * (Creating or starting: pending; running; stopping and deallocating:
 * stopping; stopped and deallocated: stopped; Deleting: shutting-down;
 * Failed without a power state: stopped, with the failure as reason),
 * market from priority, tags.  provider and account are left empty. */
void tw_arm_vm_instance(const struct tw_arm_vm *vm, struct tw_instance *out);

/* ---- generic resources (tag queries) ------------------------------------ */

struct tw_arm_resource {
  char name[TW_MODEL_ID_MAX];
  char type[96]; /* "Microsoft.Compute/virtualMachines" */
  char location[TW_MODEL_NAME_MAX];
};
static inline void tw_arm_resource_init(struct tw_arm_resource *r) {
  memset(r, 0, sizeof *r);
}
TW_MODEL_LIST(tw_arm_resource_list, tw_arm_resource, tw_arm_resource_init)

/* Parses a page of Resources - List (By Resource Group). */
enum tw_rc tw_arm_parse_resources(const char *body, size_t len,
                                  struct tw_arm_resource_list *out,
                                  char **next_link, struct tw_err *err);

/* ---- long-running operations -------------------------------------------- */

enum tw_arm_op_status {
  TW_ARM_OP_IN_PROGRESS = 0, /* InProgress, Accepted, Running, ... */
  TW_ARM_OP_SUCCEEDED,
  TW_ARM_OP_FAILED,
  TW_ARM_OP_CANCELED
};

struct tw_arm_operation {
  enum tw_arm_op_status status;
  char status_text[32];
  struct tw_arm_error error; /* Failed and Canceled: the reason, if any */
};

/* Parses an operation status resource (what Azure-AsyncOperation and
 * Operation-Location point to): {"status", "error"}.  A status other than
 * Succeeded, Failed or Canceled is in progress, as the ARM guidelines
 * say; a missing status is TW_E_INVALID. */
enum tw_rc tw_arm_parse_operation(const char *body, size_t len,
                                  struct tw_arm_operation *out,
                                  struct tw_err *err);

/* ---- resource SKUs ------------------------------------------------------ */

#define TW_ARM_ZONES_MAX 8

struct tw_arm_sku {
  char name[TW_MODEL_NAME_MAX]; /* "Standard_D2s_v5" */
  char family[64];              /* "standardDSv5Family" */
  char location[TW_MODEL_NAME_MAX];
  int vcpus;
  int64_t memory_mib;
  int gpus;
  enum tw_arch arch; /* CpuArchitectureType x64 / Arm64 */
  bool low_priority; /* LowPriorityCapable: spot allowed */
  bool restricted;   /* NotAvailableForSubscription in the location */
  char zones[TW_ARM_ZONES_MAX][8];
  size_t n_zones; /* available zones, restricted ones removed */
};
static inline void tw_arm_sku_init(struct tw_arm_sku *s) {
  memset(s, 0, sizeof *s);
}
TW_MODEL_LIST(tw_arm_sku_list, tw_arm_sku, tw_arm_sku_init)

/* Parses a page of Resource Skus - List, keeping resourceType
 * virtualMachines: one entry per (SKU, location) of its locationInfo. */
enum tw_rc tw_arm_parse_skus(const char *body, size_t len,
                             struct tw_arm_sku_list *out, char **next_link,
                             struct tw_err *err);

/* Normalizes a size's accelerator as job specs name it, from the size's
 * name (Resource SKUs count GPUs but do not name them): NC*T4_v3 "T4",
 * NC*ads_A100_v4 and ND*amsr_A100_v4 "A100-80GB", ND96asr_v4 "A100",
 * NC*H100_v5 and ND*H100_v5 "H100", NV*A10_v5 "A10", NC*s_v3 "V100",
 * ND40rs_v2 "V100-32GB"; "" when unknown or gpus is 0.  *memory_mib per
 * device, 0 when unknown. */
void tw_arm_accel(const char *size, int gpus, char *out, size_t out_size,
                  int64_t *memory_mib);

/* ---- Retail Prices API -------------------------------------------------- */

struct tw_arm_price {
  char sku[TW_MODEL_NAME_MAX];    /* armSkuName */
  char region[TW_MODEL_NAME_MAX]; /* armRegionName */
  char meter[96];
  char product[96];
  char type[32];    /* "Consumption", "DevTestConsumption", ... */
  char unit[16];    /* "1 Hour" */
  char currency[8]; /* "USD" */
  int64_t uusd;     /* retailPrice, micro-units of currency */
  int64_t effective_ms;
  bool spot;         /* meter "... Spot" */
  bool low_priority; /* meter "... Low Priority" */
  bool windows;      /* product "... Windows" */
};
static inline void tw_arm_price_init(struct tw_arm_price *p) {
  memset(p, 0, sizeof *p);
}
TW_MODEL_LIST(tw_arm_price_list, tw_arm_price, tw_arm_price_init)

/* Parses a Retail Prices API page ({"Items": [...], "NextPageLink"}).
 * retailPrice (a JSON number) becomes micro-units rounded half up. */
enum tw_rc tw_arm_parse_prices(const char *body, size_t len,
                               struct tw_arm_price_list *out, char **next_page,
                               struct tw_err *err);

/* The hourly Linux pay-as-you-go (market on-demand) or Spot price of sku
 * in region among l: Consumption rows in USD per "1 Hour", Windows and
 * Low Priority meters skipped; of several, the newest effectiveStartDate
 * not after now_ms wins.  False when there is none. */
bool tw_arm_prices_select(const struct tw_arm_price_list *l, const char *sku,
                          const char *region, enum tw_market market,
                          int64_t now_ms, int64_t *uusd);

/* ---- Scheduled Events (instance metadata) ------------------------------- */

/* One (event, resource) pair: an event naming three VMs gives three. */
struct tw_arm_sched_event {
  char event_id[64];
  char type[24];   /* "Preempt", "Reboot", "Redeploy", "Freeze", ... */
  char status[16]; /* "Scheduled", "Started" */
  char resource[TW_MODEL_ID_MAX];
  int64_t not_before_ms; /* 0 when empty (Started events) */
};
static inline void tw_arm_sched_event_init(struct tw_arm_sched_event *e) {
  memset(e, 0, sizeof *e);
}
TW_MODEL_LIST(tw_arm_sched_event_list, tw_arm_sched_event,
              tw_arm_sched_event_init)

/* Parses a Scheduled Events document ({"DocumentIncarnation", "Events":
 * [{"EventId", "EventType", "EventStatus", "Resources", "NotBefore"}]});
 * NotBefore is an RFC 1123 date.  *incarnation may be NULL. */
enum tw_rc tw_arm_parse_scheduled_events(const char *body, size_t len,
                                         struct tw_arm_sched_event_list *out,
                                         int64_t *incarnation,
                                         struct tw_err *err);

/* Parses an RFC 1123 date ("Mon, 19 Sep 2016 18:29:47 GMT") into ms since
 * the epoch; -1 when malformed. */
int64_t tw_arm_http_date_ms(const char *s);

#endif
