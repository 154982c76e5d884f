/* ali_creds.h - Alibaba Cloud credentials: the AccessKey, an STS token
 * beside it, the ECS instance's RAM role, and an STS AssumeRole on top of
 * either, following the alibabacloud credentials SDK's default chain
 * (docs/alibaba.md#credentials):
 *   1. keys named in the config (access_key_*, secret_key_*,
 *      security_token_*), else ALIBABA_CLOUD_ACCESS_KEY_ID,
 *      ALIBABA_CLOUD_ACCESS_KEY_SECRET and ALIBABA_CLOUD_SECURITY_TOKEN;
 *   2. the ECS RAM role: `ram_role` or ALIBABA_CLOUD_ECS_METADATA, else the
 *      role the metadata service names (unless
 *      ALIBABA_CLOUD_ECS_METADATA_DISABLED=true), its keys from
 *      http://100.100.100.200/latest/meta-data/ram/security-credentials/;
 * then `role_arn` (or ALIBABA_CLOUD_ROLE_ARN) assumed with them through
 * STS AssumeRole (2015-04-01).  Temporary keys are cached and refreshed
 * before they expire (at most 15 minutes, or half their lifetime, ahead),
 * thread-safe.  Secrets are never logged. */
#ifndef TW_PROVIDERS_ALIBABA_ALI_CREDS_H
#define TW_PROVIDERS_ALIBABA_ALI_CREDS_H

#include <stdint.h>

#include "broker/base/err.h"

struct tw_clock;
struct tw_http;

struct tw_ali_key {
  char id[256];
  char secret[256];
  char token[4096];   /* "" for an AccessKey of a RAM user */
  int64_t expires_ms; /* 0: never */
};

void tw_ali_key_wipe(struct tw_ali_key *k);

struct tw_ali_creds_opts {
  const char *access_key, *secret_key, *security_token; /* NULL: none */
  const char *ram_role;          /* a role name, or NULL: discover */
  const char *metadata_endpoint; /* NULL: http://100.100.100.200 */
  const char *role_arn;          /* NULL: no AssumeRole */
  const char *role_session_name; /* NULL: tradewind */
  int64_t duration_s;            /* 0: 3600 */
  const char *sts_endpoint;      /* NULL: https://sts.aliyuncs.com */
  const char *ca_file;
  struct tw_clock *clock; /* borrowed; NULL real */
  struct tw_http *http;   /* borrowed; required */
};

struct tw_ali_creds;

/* Resolves the chain (no network call).  TW_E_AUTH when nothing applies
 * (no keys and the metadata service disabled). */
enum tw_rc tw_ali_creds_new(const struct tw_ali_creds_opts *o,
                            struct tw_ali_creds **out, struct tw_err *err);
void tw_ali_creds_free(struct tw_ali_creds *c);

/* Current keys, fetched or refreshed when due.  Thread-safe. */
enum tw_rc tw_ali_creds_get(struct tw_ali_creds *c, struct tw_ali_key *out,
                            struct tw_err *err);

/* Drops cached temporary keys (an InvalidSecurityToken.Expired answer). */
void tw_ali_creds_invalidate(struct tw_ali_creds *c);

/* "access-key", "sts-token", "ram-role", "assume-role". */
const char *tw_ali_creds_source(const struct tw_ali_creds *c);

#endif
