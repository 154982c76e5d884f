/* aws_creds.h - AWS credentials: the SDKs' default chain and a
 * thread-safe cache of temporary credentials refreshed before they
 * expire.
 *
 * The chain is botocore's (create_credential_resolver), first source
 * that has credentials wins:
 *   1. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *      AWS_SESSION_TOKEN (skipped when the config names a profile)
 *   2. the profile's role_arn (AssumeRole), its credentials from
 *      source_profile (itself a chain of profiles) or credential_source
 *      (Environment, Ec2InstanceMetadata, EcsContainer)
 *   3. web identity: the profile's web_identity_token_file or
 *      AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN
 *      (AssumeRoleWithWebIdentity)
 *   4. the shared credentials file's profile (AWS_SHARED_CREDENTIALS_FILE,
 *      ~/.aws/credentials), then the config file's (AWS_CONFIG_FILE,
 *      ~/.aws/config, "[profile NAME]" sections)
 *   5. the ECS container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI or
 *      169.254.170.2 + AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)
 *   6. the EC2 instance role through IMDSv2 (a session token PUT first),
 *      unless AWS_EC2_METADATA_DISABLED=true
 * The profile is the config's `profile`, else AWS_PROFILE, else
 * "default".  Which source applies is decided at creation from the
 * environment and the files alone; the first credentials are fetched on
 * first use.  Secrets are never logged; errors name the source, the
 * file or the URL, never a key.
 *
 * Temporary credentials are refreshed when less than the advisory window
 * (15 minutes, or half their lifetime when shorter) is left: one caller
 * refreshes while the others keep signing with the current ones; only
 * past the mandatory window (10 minutes, or a quarter of the lifetime)
 * do callers wait for the refresh.  docs/providers.md#aws-credentials. */
#ifndef TW_PROVIDERS_AWS_CREDS_H
#define TW_PROVIDERS_AWS_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"

struct tw_clock;
struct tw_http;
struct tw_node;

#define TW_AWS_KEY_MAX 256
#define TW_AWS_TOKEN_MAX 4096

struct tw_aws_key {
  char access_key[TW_AWS_KEY_MAX];
  char secret_key[TW_AWS_KEY_MAX];
  char session_token[TW_AWS_TOKEN_MAX]; /* "" for long-term keys */
  int64_t expires_ms;                   /* 0: never */
};

/* Wipes k (OPENSSL_cleanse): copies on the stack should not outlive
 * their use in a core dump. */
void tw_aws_key_wipe(struct tw_aws_key *k);

struct tw_aws_creds;

/* Where the chain looks, beside the environment.  Every field may be
 * NULL (the SDKs' defaults). */
struct tw_aws_creds_opts {
  const char *profile;          /* else AWS_PROFILE, else "default" */
  const char *config_file;      /* else AWS_CONFIG_FILE, ~/.aws/config */
  const char *credentials_file; /* else AWS_SHARED_CREDENTIALS_FILE, ... */
  const char *role_arn;         /* assume this role with what the chain finds */
  const char *role_session_name;
  const char *external_id;
  int64_t duration_s;        /* 0: 3600 */
  const char *region;        /* of the STS endpoint; NULL: us-east-1 */
  const char *sts_endpoint;  /* "{region}" inside; NULL: AWS's */
  const char *imds_endpoint; /* else AWS_EC2_METADATA_SERVICE_ENDPOINT */
  const char *ca_file;
  struct tw_clock *clock; /* borrowed; NULL: the real clock */
  struct tw_http *http;   /* borrowed; required */
};

/* Resolves the chain (no network call).  TW_E_AUTH naming the source
 * when one is configured but broken (a profile without keys, a missing
 * source_profile, a loop); a chain that finds nothing ends at IMDS, or
 * TW_E_AUTH when IMDS is disabled. */
enum tw_rc tw_aws_creds_new(const struct tw_aws_creds_opts *o,
                            struct tw_aws_creds **out, struct tw_err *err);

/* base (owned) assuming o->role_arn (with o's session name, external
 * id, duration, region and STS endpoint). */
enum tw_rc tw_aws_creds_assume(struct tw_aws_creds *base,
                               const struct tw_aws_creds_opts *o,
                               struct tw_aws_creds **out, struct tw_err *err);

/* Static keys, as given (the config's access_key_env and friends). */
struct tw_aws_creds *tw_aws_creds_static(const char *access_key,
                                         const char *secret_key,
                                         const char *session_token);

void tw_aws_creds_free(struct tw_aws_creds *c);

/* Current credentials into *out, fetching or refreshing them when due.
 * Thread-safe.  TW_E_AUTH (or the transport's rc) when none can be had. */
enum tw_rc tw_aws_creds_get(struct tw_aws_creds *c, struct tw_aws_key *out,
                            struct tw_err *err);

/* The source in use: "static", "environment", "assume-role",
 * "web-identity", "shared-credentials-file", "config-file",
 * "container", "instance-metadata". */
const char *tw_aws_creds_source(const struct tw_aws_creds *c);

/* Forgets the cached credentials so the next get fetches new ones (an
 * ExpiredToken answer). */
void tw_aws_creds_invalidate(struct tw_aws_creds *c);

/* ---- parsers (exposed for the tests and the fuzz target) ---- */

/* The value of key in section of an INI text (the shared files' format:
 * "[section]" lines, "key = value" lines, '#' and ';' comments, names
 * and values trimmed).  Returns false when absent; out is truncated to
 * outsz. */
bool tw_aws_ini_get(const char *text, const char *section, const char *key,
                    char *out, size_t outsz);

/* Whether section exists in text. */
bool tw_aws_ini_has(const char *text, const char *section);

/* An STS answer (AssumeRole, AssumeRoleWithWebIdentity): the
 * Credentials element into *out, or TW_E_AUTH with the ErrorResponse's
 * code as err->detail. */
enum tw_rc tw_aws_parse_sts(const char *body, size_t len, long status,
                            struct tw_aws_key *out, struct tw_err *err);

/* The container endpoint's and IMDS's JSON: AccessKeyId, SecretAccessKey,
 * Token, Expiration (IMDS also Code: "Success"). */
enum tw_rc tw_aws_parse_cred_json(const char *body, size_t len,
                                  struct tw_aws_key *out, struct tw_err *err);

#endif
