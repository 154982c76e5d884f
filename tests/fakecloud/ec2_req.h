/* ec2_req.h - EC2 Query-protocol request extraction and validation.
 *
 * Pure functions over decoded parameters (params.h): no server state, so
 * tests/fuzz/fuzz_fakecloud_req.c runs them on arbitrary input.  Each
 * failure is reported as EC2 reports it: err->detail holds the EC2 error
 * code (InvalidParameterValue, MissingParameter, UnknownParameter, ...)
 * and err->msg the message, worded as the real service words it.  Strings
 * in the output structs are borrowed from the fc_params they came from. */
#ifndef TW_TESTS_FAKECLOUD_EC2_REQ_H
#define TW_TESTS_FAKECLOUD_EC2_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "tests/fakecloud/params.h"

#define EC2_API_VERSION "2016-11-15"
#define EC2_MAX_TAGS 50
#define EC2_MAX_FILTERS 50
#define EC2_MAX_LIST 1000

/* Records an EC2 error: detail = code, msg = printf text.  Returns
 * TW_E_INVALID so validators can `return ec2_fail(...)`. */
enum tw_rc ec2_fail(struct tw_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* UnknownParameter for a key outside the action's top-level names
 * (Action, Version and the X-Amz-* query-auth names are always allowed). */
enum tw_rc ec2_check_known(const struct fc_params *p,
                           const char *const *allowed, struct tw_err *err);

/* `prefix.N` values in index order into *out (malloc'd array of borrowed
 * strings; free() it).  Errors for bad indexes or more than max items. */
enum tw_rc ec2_list(const struct fc_params *p, const char *prefix, size_t max,
                    const char ***out, size_t *n, struct tw_err *err);

/* Optional integer in lo..hi; *present tells whether it was given. */
enum tw_rc ec2_int(const struct fc_params *p, const char *name, long lo,
                   long hi, long *out, bool *present, struct tw_err *err);
/* Optional boolean ("true"/"false"), default false. */
enum tw_rc ec2_bool(const struct fc_params *p, const char *name, bool *out,
                    struct tw_err *err);
/* Optional ISO 8601 time (2024-05-01T00:00:00Z, fraction and offset
 * allowed, as the SDKs send it). */
enum tw_rc ec2_time(const struct fc_params *p, const char *name, int64_t *ms,
                    bool *present, struct tw_err *err);

struct ec2_filter {
  const char *name;
  const char **values; /* malloc'd array of borrowed strings */
  size_t n_values;
};

struct ec2_filters {
  struct ec2_filter v[EC2_MAX_FILTERS];
  size_t n;
};

/* Filter.N.Name / Filter.N.Value.M.  allowed lists the filter names; an
 * entry ending in ':' accepts any name with that prefix ("tag:").  Release
 * with ec2_filters_release even after an error. */
enum tw_rc ec2_filters_parse(const struct fc_params *p,
                             const char *const *allowed,
                             struct ec2_filters *out, struct tw_err *err);
void ec2_filters_release(struct ec2_filters *f);
/* A filter value matches s: '*' any run, '?' one character, '\' escapes. */
bool ec2_glob(const char *pattern, const char *s);
/* True when any value of f matches s. */
bool ec2_filter_any(const struct ec2_filter *f, const char *s);

struct ec2_tag {
  const char *key;
  const char *value;
};

struct ec2_run {
  const char *image_id;
  const char *instance_type;
  const char *zone;         /* Placement.AvailabilityZone or NULL */
  const char *client_token; /* NULL when none */
  const char *key_name;
  long min_count, max_count;
  bool dry_run;
  bool spot;                         /* InstanceMarketOptions.MarketType=spot */
  const char *max_price;             /* as given, or NULL */
  int64_t max_price_uusd;            /* -1 when none */
  const char *spot_type;             /* one-time (default) or persistent */
  const char *interruption;          /* terminate (default), stop, hibernate */
  struct ec2_tag tags[EC2_MAX_TAGS]; /* ResourceType=instance */
  size_t n_tags;
  struct ec2_tag sir_tags[EC2_MAX_TAGS]; /* spot-instances-request */
  size_t n_sir_tags;
  const char *user_data; /* UserData as sent (base64), or NULL */
  /* the machine: checked as EC2 checks them, kept on the instance */
  const char *subnet_id;    /* SubnetId or NULL */
  const char *profile_name; /* IamInstanceProfile.Name or NULL */
  const char *profile_arn;  /* IamInstanceProfile.Arn or NULL */
  size_t n_groups;          /* SecurityGroupId.N */
  const char *root_device;  /* BlockDeviceMapping.1.DeviceName or NULL */
  long root_size_gb;        /* its Ebs.VolumeSize, 0 none */
  const char *root_type;    /* its Ebs.VolumeType or NULL */
};

/* Extracts and checks a RunInstances request (everything that needs no
 * catalog or state). */
enum tw_rc ec2_parse_run(const struct fc_params *p, struct ec2_run *out,
                         struct tw_err *err);

/* prefix.N.Key / prefix.N.Value (CreateTags' Tag.N): at most
 * EC2_MAX_TAGS, each checked as RunInstances checks tags, duplicates
 * refused. */
enum tw_rc ec2_parse_tag_list(const struct fc_params *p, const char *prefix,
                              struct ec2_tag *out, size_t *n,
                              struct tw_err *err);

/* i-xxxxxxxx or i-xxxxxxxxxxxxxxxxx, lower-case hex. */
bool ec2_instance_id_valid(const char *s);

/* A hash of the request's parameters except the names in skip (sorted
 * pairs, so order does not matter): client-token idempotency and
 * pagination tokens are bound to it. */
uint64_t ec2_params_hash(const struct fc_params *p, const char *const *skip);

/* Top-level parameter names of each action (for ec2_check_known). */
extern const char *const ec2_run_params[];
extern const char *const ec2_describe_instances_params[];
extern const char *const ec2_terminate_params[];
extern const char *const ec2_spot_history_params[];
extern const char *const ec2_instance_types_params[];
extern const char *const ec2_zones_params[];
extern const char *const ec2_regions_params[];
extern const char *const ec2_addresses_params[];
extern const char *const ec2_create_tags_params[];
extern const char *const ec2_delete_tags_params[];
extern const char *const ec2_describe_tags_params[];
extern const char *const ec2_instance_status_params[];
extern const char *const ec2_spot_requests_params[];

#endif
