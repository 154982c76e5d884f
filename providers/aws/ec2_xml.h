/* ec2_xml.h - parsers of EC2 Query API responses (XML, libxml2), apart
 * from the adapter so they can be tested on recorded responses and fuzzed.
 *
 * Each parser takes the raw body and fills plain structs; no XML tree
 * leaves this module.  Elements are matched by local name whatever their
 * namespace or prefix (EC2 answers with the namespace of the API version
 * asked for; EC2-compatible clouds use their own), and structurally: an
 * instance's <tagSet><item> is never taken for an <instancesSet><item>.
 *
 * Input is untrusted.  Bodies above TW_EC2_XML_MAX_BYTES are TW_E_TOOBIG;
 * the parser loads no DTD, touches no network and expands no external or
 * user-defined entity.  A value that does not fit its field is
 * TW_E_INVALID naming the element.  Malformed XML is TW_E_INVALID.
 *
 * Threads: any thread, once tw_ec2_xml_init() has run (it is idempotent and
 * called by every parser, but libxml2 wants its first call made before
 * threads race; the adapter's init makes it). */
#ifndef TW_PROVIDERS_AWS_EC2_XML_H
#define TW_PROVIDERS_AWS_EC2_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/model.h"

#define TW_EC2_XML_MAX_BYTES (16u << 20)

/* Initializes libxml2 once per process.  Process-wide state,
 * deliberately (docs/architecture.md): xmlInitParser() sets up libxml2's
 * own globals and must run once before threads parse, hence a
 * pthread_once guard (ec2_xml.c: xml_once), allowed by
 * tests/unit/test_globals.c. */
void tw_ec2_xml_init(void);

/* ---- errors ------------------------------------------------------------- */

struct tw_ec2_error {
  char code[64];     /* "InsufficientInstanceCapacity" */
  char message[256]; /* trimmed; may be cut to fit */
  char request_id[96];
};

/* True when body is an EC2 error envelope
 * (<Response><Errors><Error><Code>...), with the first error in *out. */
bool tw_ec2_parse_error(const char *body, size_t len, struct tw_ec2_error *out);

/* The class of an EC2 error code, given the HTTP status it came with
 * (0 when unknown).  The code decides first (EC2 sends
 * InsufficientInstanceCapacity with status 500, and it is a capacity
 * error, not a server fault); unknown codes fall back on the status:
 * 5xx and 429 retryable, 401/403 auth, anything else invalid.  See
 * docs/providers.md for the table. */
enum tw_rc tw_ec2_error_class(const char *code, long http_status);

/* Turns a failed response into err: the class from tw_ec2_error_class(),
 * err->detail the EC2 code (or "HTTP <status>" without an envelope),
 * err->msg "<action>: <Code>: <Message>".  Returns the class. */
enum tw_rc tw_ec2_response_error(const char *action, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err);

/* ---- instances ---------------------------------------------------------- */

/* Parses a RunInstancesResponse (<instancesSet> at the root) or a
 * DescribeInstancesResponse (<reservationSet><item><instancesSet>),
 * appending one tw_instance per instance: id, type, zone, architecture,
 * state (and the provider's spelling, and stateReason's code), market
 * (instanceLifecycle spot), client token, launch time, addresses and
 * Tradewind's tags.  region is left empty: the adapter knows which region
 * it asked.  *next_token (may be NULL) receives an owned copy of
 * <nextToken> (free()), or NULL on the last page. */
enum tw_rc tw_ec2_parse_instances(const char *body, size_t len,
                                  struct tw_instance_list *out,
                                  char **next_token, struct tw_err *err);

struct tw_ec2_state_change {
  char id[TW_MODEL_ID_MAX];
  enum tw_instance_state current;
  enum tw_instance_state previous;
};
static inline void tw_ec2_state_change_init(struct tw_ec2_state_change *c) {
  memset(c, 0, sizeof *c);
}
TW_MODEL_LIST(tw_ec2_state_change_list, tw_ec2_state_change,
              tw_ec2_state_change_init)

/* Parses a TerminateInstancesResponse (also Start/StopInstances:
 * <currentState> or <shutdownState>, and <previousState>). */
enum tw_rc tw_ec2_parse_state_changes(const char *body, size_t len,
                                      struct tw_ec2_state_change_list *out,
                                      struct tw_err *err);

/* ---- offers' ingredients ------------------------------------------------ */

struct tw_ec2_spot_price {
  char instance_type[TW_MODEL_NAME_MAX];
  char zone[TW_MODEL_NAME_MAX];
  char product[48]; /* "Linux/UNIX" */
  int64_t price_uusd_per_hour;
  int64_t timestamp_ms;
};
static inline void tw_ec2_spot_price_init(struct tw_ec2_spot_price *s) {
  memset(s, 0, sizeof *s);
}
TW_MODEL_LIST(tw_ec2_spot_price_list, tw_ec2_spot_price, tw_ec2_spot_price_init)

/* Parses a DescribeSpotPriceHistoryResponse page (<spotPriceHistorySet>). */
enum tw_rc tw_ec2_parse_spot_prices(const char *body, size_t len,
                                    struct tw_ec2_spot_price_list *out,
                                    char **next_token, struct tw_err *err);

/* One spot instance request of a DescribeSpotInstanceRequests page: the
 * instance it made, the request's state and status (code, updateTime) and
 * what EC2 does to the instance at an interruption. */
struct tw_ec2_spot_request {
  char id[TW_MODEL_ID_MAX];          /* "sir-..." */
  char instance_id[TW_MODEL_ID_MAX]; /* "" while none was made */
  char state[24];                    /* open, active, closed, ... */
  char code[48];                     /* status code: "marked-for-termination" */
  char behavior[16];                 /* terminate, stop, hibernate */
  int64_t updated_ms;                /* status updateTime; 0 absent */
};
static inline void tw_ec2_spot_request_init(struct tw_ec2_spot_request *r) {
  memset(r, 0, sizeof *r);
}
TW_MODEL_LIST(tw_ec2_spot_request_list, tw_ec2_spot_request,
              tw_ec2_spot_request_init)

/* Parses a DescribeSpotInstanceRequestsResponse page
 * (<spotInstanceRequestSet>). */
enum tw_rc tw_ec2_parse_spot_requests(const char *body, size_t len,
                                      struct tw_ec2_spot_request_list *out,
                                      char **next_token, struct tw_err *err);

struct tw_ec2_instance_type {
  char name[TW_MODEL_NAME_MAX]; /* "p4d.24xlarge" */
  enum tw_arch arch;            /* x86_64 preferred when both */
  int vcpus;
  int64_t memory_mib;
  char accel_name[32]; /* normalized: "A100-80GB"; "" none */
  int accel_count;
  int64_t accel_memory_mib; /* per device */
  bool spot;                /* supportedUsageClasses (both true when
                               the element is absent) */
  bool on_demand;
};
static inline void tw_ec2_instance_type_init(struct tw_ec2_instance_type *t) {
  memset(t, 0, sizeof *t);
}
TW_MODEL_LIST(tw_ec2_instance_type_list, tw_ec2_instance_type,
              tw_ec2_instance_type_init)

/* Parses a DescribeInstanceTypesResponse page (<instanceTypeSet>: vCpuInfo,
 * memoryInfo, processorInfo, gpuInfo, neuronInfo, supportedUsageClasses).
 * Also reads the older Eucalyptus shape (<instanceTypeDetails><item> with
 * name, cpu and memory in MiB) that EC2-compatible private clouds serve. */
enum tw_rc tw_ec2_parse_instance_types(const char *body, size_t len,
                                       struct tw_ec2_instance_type_list *out,
                                       char **next_token, struct tw_err *err);

/* Normalizes an accelerator as the job spec names it: spaces dropped,
 * "A100" with 80 GiB or more becomes "A100-80GB", "V100" with 32 GiB
 * "V100-32GB".  out has out_size bytes. */
void tw_ec2_accel_name(const char *name, int64_t memory_mib, char *out,
                       size_t out_size);

struct tw_ec2_zone {
  char name[TW_MODEL_NAME_MAX];    /* "us-east-1a" */
  char zone_id[TW_MODEL_NAME_MAX]; /* "use1-az4"; "" in old responses */
  char region[TW_MODEL_NAME_MAX];
  char state[32];     /* "available" */
  char zone_type[32]; /* "availability-zone", "local-zone";
                         "" in old responses */
};
static inline void tw_ec2_zone_init(struct tw_ec2_zone *z) {
  memset(z, 0, sizeof *z);
}
TW_MODEL_LIST(tw_ec2_zone_list, tw_ec2_zone, tw_ec2_zone_init)

/* Parses a DescribeAvailabilityZonesResponse (<availabilityZoneInfo>). */
enum tw_rc tw_ec2_parse_zones(const char *body, size_t len,
                              struct tw_ec2_zone_list *out, struct tw_err *err);

#endif
