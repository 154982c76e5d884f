/* ecs_json.h - parsers of Alibaba Cloud ECS (and CloudMonitor) JSON
 * responses, apart from the adapter so they can be tested on recorded
 * responses and fuzzed.
 *
 * Each parser takes the raw body and fills plain structs; no json_t
 * leaves this module (jansson is used inside only).  Input is untrusted:
 * bodies above TW_ECS_JSON_MAX_BYTES are TW_E_TOOBIG, malformed JSON or a
 * member of the wrong type is TW_E_INVALID naming the member, a value that
 * does not fit its field is TW_E_INVALID.  Members the parsers do not use
 * are ignored, as are unknown ones.
 *
 * Money.  ECS prices are CNY, written as JSON numbers (0.036) or, in some
 * answers, strings ("0.165").  A JSON number reaches us as a double; the
 * parsers recover the shortest decimal text that reads back as that same
 * double (which is the text the service wrote, for any price of at most 15
 * significant digits) and keep amounts as integer nano-units (1e-9) of
 * their currency.  tw_ecs_to_uusd() converts with integer arithmetic at a
 * configured rate, so no float ever holds money.
 *
 * Threads: any; the parsers keep no state. */
#ifndef TW_PROVIDERS_ALIBABA_ECS_JSON_H
#define TW_PROVIDERS_ALIBABA_ECS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/model.h"

#define TW_ECS_JSON_MAX_BYTES (16u << 20)
#define TW_ECS_NANO 1000000000LL

/* ---- money ------------------------------------------------------------- */

/* Parses a non-negative decimal ("0.036", "12", "1.5e-05") into nano-units,
 * rounding half up beyond the ninth decimal.  false when malformed,
 * negative or above 1e9 units. */
bool tw_ecs_decimal_nano(const char *s, int64_t *out);

/* amount_nano (of a currency) times rate_nano (USD per unit of it, in
 * nano-USD) in micro-USD, rounded half up.  TW_E_INVALID when the result
 * is above TW_MODEL_PRICE_MAX_UUSD. */
enum tw_rc tw_ecs_to_uusd(int64_t amount_nano, int64_t rate_nano, int64_t *out,
                          struct tw_err *err);

/* uusd (micro-USD) in the currency at rate_nano, in thousandths, rounded
 * down (a price limit never exceeds what the caller allowed). */
int64_t tw_ecs_uusd_to_milli(int64_t uusd, int64_t rate_nano);

/* ---- errors ------------------------------------------------------------ */

struct tw_ecs_error {
  char code[64];     /* "OperationDenied.NoStock" */
  char message[256]; /* may be cut to fit */
  char request_id[64];
};

/* True when body is an Alibaba error document ({"Code": ..., "Message":
 * ...}; CloudMonitor also answers {"Success": false, "Code": ...}), with
 * its fields in *out. */
bool tw_ecs_parse_error(const char *body, size_t len, struct tw_ecs_error *out);

/* The class of an ECS error code given its HTTP status (0: unknown): the
 * code decides first (see docs/alibaba.md for the table: NoStock and
 * Zone.NotOnSale are capacity, Throttling retryable, QuotaExceed.*
 * provider-quota, InvalidAccessKeyId.NotFound and SignatureDoesNotMatch
 * auth); unknown codes fall back on the status: 5xx and 429 retryable, 401
 * auth, 403 forbidden, 404 not found, anything else invalid. */
enum tw_rc tw_ecs_error_class(const char *code, long http_status);

/* Turns a failed answer into err: the class above, err->detail the code
 * (or "HTTP <status>"), err->msg "<action>: <Code>: <Message>".  Returns
 * the class. */
enum tw_rc tw_ecs_response_error(const char *action, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err);

/* ---- instances --------------------------------------------------------- */

/* Parses a RunInstances answer: the ids of InstanceIdSets.InstanceIdSet
 * appended to ids (owned strings, *n_ids counted; free each and the
 * array), TradePrice (CNY per hour for pay-as-you-go) into *trade_nano
 * (-1 when absent; may be NULL). */
enum tw_rc tw_ecs_parse_run(const char *body, size_t len, char ***ids,
                            size_t *n_ids, int64_t *trade_nano,
                            struct tw_err *err);

/* One page of DescribeInstances. */
struct tw_ecs_page {
  int64_t total_count; /* -1 when absent */
  int64_t page_number;
  int64_t page_size;
  char next_token[256]; /* "" on the last page */
};

/* Parses a DescribeInstances answer, appending one tw_instance per
 * Instances.Instance: id, region, zone, type, market (SpotStrategy other
 * than NoSpot), state (Pending and Starting: pending; Running; Stopping;
 * Stopped) and the provider's spelling, the first OperationLocks reason
 * into state_reason ("Recycling" for a spot instance being reclaimed),
 * CreationTime, addresses and Tradewind's tags.  page may be NULL. */
enum tw_rc tw_ecs_parse_instances(const char *body, size_t len,
                                  struct tw_instance_list *out,
                                  struct tw_ecs_page *page, struct tw_err *err);

/* ECS times: "2017-12-10T04:04Z" (minutes, as DescribeInstances writes
 * them) or with seconds "2019-11-19T06:00:00Z".  -1 when malformed. */
int64_t tw_ecs_parse_time(const char *s);

/* ---- offers' ingredients ----------------------------------------------- */

struct tw_ecs_spot_price {
  char instance_type[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX];
  int64_t price_nano;  /* SpotPrice, currency per hour */
  int64_t origin_nano; /* OriginPrice (pay-as-you-go), -1 absent */
  int64_t timestamp_ms;
};
static inline void tw_ecs_spot_price_init(struct tw_ecs_spot_price *s) {
  memset(s, 0, sizeof *s);
}
TW_MODEL_LIST(tw_ecs_spot_price_list, tw_ecs_spot_price, tw_ecs_spot_price_init)

/* Parses a DescribeSpotPriceHistory answer (SpotPrices.SpotPriceType).
 * *next_offset receives NextOffset (0 when absent: the last page);
 * currency (may be NULL, 8 bytes) receives Currency ("" when absent). */
enum tw_rc tw_ecs_parse_spot_prices(const char *body, size_t len,
                                    struct tw_ecs_spot_price_list *out,
                                    int64_t *next_offset, char currency[8],
                                    struct tw_err *err);

struct tw_ecs_price {
  char currency[8];
  int64_t original_nano;
  int64_t discount_nano;
  int64_t trade_nano; /* what is paid */
};

/* Parses a DescribePrice answer (PriceInfo.Price). */
enum tw_rc tw_ecs_parse_price(const char *body, size_t len,
                              struct tw_ecs_price *out, struct tw_err *err);

struct tw_ecs_stock {
  char zone[TW_MODEL_NAME_MAX];
  char value[TW_MODEL_NAME_MAX]; /* the resource: an instance type */
  bool available;    /* Status Available, in a zone that is Available */
  char category[24]; /* StatusCategory: WithStock, ClosedWithStock,
                        WithoutStock */
};
static inline void tw_ecs_stock_init(struct tw_ecs_stock *s) {
  memset(s, 0, sizeof *s);
}
TW_MODEL_LIST(tw_ecs_stock_list, tw_ecs_stock, tw_ecs_stock_init)

/* Parses a DescribeAvailableResource answer, one item per
 * SupportedResource of the AvailableResource whose Type is type
 * ("InstanceType"). */
enum tw_rc tw_ecs_parse_available(const char *body, size_t len,
                                  const char *type,
                                  struct tw_ecs_stock_list *out,
                                  struct tw_err *err);

struct tw_ecs_itype {
  char name[TW_MODEL_NAME_MAX]; /* "ecs.gn6v-c8g1.2xlarge" */
  enum tw_arch arch;            /* CpuArchitecture X86 / ARM */
  int vcpus;                    /* CpuCoreCount */
  int64_t memory_mib;           /* MemorySize, GiB in the answer */
  char accel_name[32];          /* normalized: "V100", "A100-80GB" */
  int accel_count;              /* GPUAmount */
  int64_t accel_memory_mib;     /* GPUMemorySize per GPU; 0 unknown */
};
static inline void tw_ecs_itype_init(struct tw_ecs_itype *t) {
  memset(t, 0, sizeof *t);
}
TW_MODEL_LIST(tw_ecs_itype_list, tw_ecs_itype, tw_ecs_itype_init)

/* Parses a DescribeInstanceTypes answer (InstanceTypes.InstanceType);
 * next_token (may be NULL, 256 bytes) receives NextToken, "" at the end. */
enum tw_rc tw_ecs_parse_instance_types(const char *body, size_t len,
                                       struct tw_ecs_itype_list *out,
                                       char next_token[256],
                                       struct tw_err *err);

/* Normalizes an accelerator as the job spec names it: a vendor prefix
 * ("NVIDIA ") and spaces dropped, "A100" with 80 GiB or more becomes
 * "A100-80GB", "V100" with 32 GiB "V100-32GB". */
void tw_ecs_accel_name(const char *spec, int64_t memory_mib, char *out,
                       size_t out_size);

/* ---- spot reclaim notices (CloudMonitor) ------------------------------- */

struct tw_ecs_notice {
  char instance_id[TW_MODEL_ID_MAX];
  char action[16]; /* content.action: "delete" */
  int64_t time_ms; /* when the event was raised */
};
static inline void tw_ecs_notice_init(struct tw_ecs_notice *n) {
  memset(n, 0, sizeof *n);
}
TW_MODEL_LIST(tw_ecs_notice_list, tw_ecs_notice, tw_ecs_notice_init)

/* The CloudMonitor event ECS raises five minutes before it reclaims a
 * spot instance. */
#define TW_ECS_RECLAIM_EVENT "Instance:PreemptibleInstanceInterruption"

/* Parses a CloudMonitor DescribeSystemEventAttribute answer
 * (SystemEvents.SystemEvent), keeping the events named
 * TW_ECS_RECLAIM_EVENT: the instance from Content's instanceId (a JSON
 * text inside the string) or else from the ResourceId's
 * "instance/<id>", and Time in ms. */
enum tw_rc tw_ecs_parse_reclaim_events(const char *body, size_t len,
                                       struct tw_ecs_notice_list *out,
                                       struct tw_err *err);

#endif
