/* alibaba_req.h - request decoding, signature checks and answer encoding
 * of the fake's Alibaba Cloud module (alibaba.c), pure so that the fuzz
 * target tests/fuzz/fuzz_alibaba_req.c can drive it without a server.
 *
 * An Alibaba RPC request comes in one of two shapes:
 *   legacy   every parameter (Action, Version, AccessKeyId, Signature,
 *            SignatureMethod HMAC-SHA1, SignatureVersion 1.0,
 *            SignatureNonce, Timestamp, Format) in the query string and/or
 *            a form body; what pop-core and `signatureAlgorithm: "v2"`
 *            send
 *   ACS3     the action's parameters in the query (or a form body), the
 *            action, version, date and nonce in x-acs-* headers and an
 *            Authorization: ACS3-HMAC-SHA256 header; what the current SDK
 *            sends by default
 * Errors carry ECS's own code in err->detail. */
#ifndef TW_TESTS_FAKECLOUD_ALIBABA_REQ_H
#define TW_TESTS_FAKECLOUD_ALIBABA_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/module.h"
#include "tests/fakecloud/params.h"

#define FC_ALI_SKEW_MS (15 * 60 * 1000) /* Timestamp / x-acs-date window */
#define FC_ALI_MAX_TAGS 20

/* Whether req is an Alibaba RPC call (and not, say, an EC2 one, which is
 * also served at "/"): x-acs-* headers, an ACS3 Authorization, or the
 * legacy signature parameters in the query or a form body. */
bool fc_ali_claims(const struct fc_request *req);

struct fc_ali_call {
  struct fc_params p; /* query and form parameters, decoded */
  bool acs3;
  char action[64];
  char version[16];
  char access_key[128];
  char nonce[128];
  int64_t time_ms; /* Timestamp or x-acs-date */
  bool xml;        /* legacy Format XML (its default): answer in XML */
};

void fc_ali_call_init(struct fc_ali_call *c);
void fc_ali_call_release(struct fc_ali_call *c);

/* Decodes req into c: parameters, shape, action, version, access key,
 * nonce and time.  Errors (TW_E_INVALID / TW_E_AUTH / TW_E_TOOBIG) with
 * detail MissingParameter, IncompleteSignature, InvalidTimeStamp.Format,
 * UnsupportedSignatureMethod, MalformedQueryString, ... */
enum tw_rc fc_ali_decode(const struct fc_request *req, struct fc_ali_call *c,
                         struct tw_err *err);

/* Checks c's signature with secret (the secret of c->access_key) and its
 * time against now_ms.  TW_E_AUTH with detail SignatureDoesNotMatch
 * (err->msg carries the server's string to sign, as ECS's message does),
 * IncompleteSignature or InvalidTimeStamp.Expired. */
enum tw_rc fc_ali_verify(const struct fc_request *req,
                         const struct fc_ali_call *c, const char *secret,
                         int64_t now_ms, struct tw_err *err);

/* Appends v as ECS writes XML: an object's members as elements, an array
 * under key K as one <K> per item, scalars as text.  root names the
 * outer element. */
void fc_ali_json_to_xml(struct tw_buf *b, const char *root, const json_t *v);

/* ---- RunInstances ------------------------------------------------------ */

struct fc_ali_tag {
  const char *key; /* borrowed from the params */
  const char *value;
};

struct fc_ali_run {
  const char *region, *zone, *image, *itype, *token, *name, *charge;
  const char *strategy;      /* NoSpot, SpotWithPriceLimit, SpotAsPriceGo */
  const char *behavior;      /* Terminate, Stop */
  int64_t price_limit_milli; /* -1 none */
  int spot_duration_h;       /* default 1 */
  int amount, min_amount;
  bool dry_run;
  bool spot;
  struct fc_ali_tag tags[FC_ALI_MAX_TAGS];
  size_t n_tags;
  const char *user_data; /* UserData as sent (base64), or NULL */
  int system_disk_gb;    /* SystemDisk.Size, 0 none */
  const char *system_disk_category; /* SystemDisk.Category or NULL */
  const char *ram_role;             /* RamRoleName or NULL */
};

/* Validates a RunInstances request's parameters as ECS does and fills
 * out (pointers borrowed from p).  TW_E_INVALID with ECS's code. */
enum tw_rc fc_ali_parse_run(const struct fc_params *p, struct fc_ali_run *out,
                            struct tw_err *err);

/* Parses "0.123" CNY into thousandths; false when malformed or more than
 * three decimals. */
bool fc_ali_milli_parse(const char *s, int64_t *out);

/* Parses InstanceIds, a JSON array of strings in a parameter, into ids
 * (owned strings in an owned array; free with fc_ali_strv_free()).
 * TW_E_INVALID with InvalidParameter when malformed or longer than max. */
enum tw_rc fc_ali_id_array(const char *json, size_t max, char ***ids, size_t *n,
                           struct tw_err *err);
void fc_ali_strv_free(char **v, size_t n);

#endif
