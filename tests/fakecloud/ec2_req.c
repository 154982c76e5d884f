/* ec2_req.c - see ec2_req.h. */
#include "tests/fakecloud/ec2_req.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/catalog.h"
#include "tests/fakecloud/rng.h"

#define COMMON_PARAMS                                                          \
  "Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",    \
      "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature",               \
      "X-Amz-Security-Token"

/* Every top-level member of RunInstancesRequest in the 2016-11-15 model;
 * the ones the fake does not model are accepted and ignored. */
const char *const ec2_run_params[] = {COMMON_PARAMS,
                                      "BlockDeviceMapping",
                                      "ImageId",
                                      "InstanceType",
                                      "Ipv6AddressCount",
                                      "Ipv6Address",
                                      "KernelId",
                                      "KeyName",
                                      "MaxCount",
                                      "MinCount",
                                      "Monitoring",
                                      "Placement",
                                      "RamdiskId",
                                      "SecurityGroupId",
                                      "SecurityGroup",
                                      "SubnetId",
                                      "UserData",
                                      "AdditionalInfo",
                                      "ClientToken",
                                      "DisableApiTermination",
                                      "DryRun",
                                      "EbsOptimized",
                                      "IamInstanceProfile",
                                      "InstanceInitiatedShutdownBehavior",
                                      "NetworkInterface",
                                      "PrivateIpAddress",
                                      "ElasticGpuSpecification",
                                      "ElasticInferenceAccelerator",
                                      "TagSpecification",
                                      "LaunchTemplate",
                                      "InstanceMarketOptions",
                                      "CreditSpecification",
                                      "CpuOptions",
                                      "CapacityReservationSpecification",
                                      "HibernationOptions",
                                      "LicenseSpecification",
                                      "MetadataOptions",
                                      "EnclaveOptions",
                                      "PrivateDnsNameOptions",
                                      "MaintenanceOptions",
                                      "DisableApiStop",
                                      "EnablePrimaryIpv6",
                                      "NetworkPerformanceOptions",
                                      "Operator",
                                      NULL};
const char *const ec2_describe_instances_params[] = {
    COMMON_PARAMS, "Filter",    "InstanceId", "DryRun",
    "MaxResults",  "NextToken", NULL};
const char *const ec2_terminate_params[] = {
    COMMON_PARAMS, "InstanceId", "DryRun", "Force", "SkipOsShutdown", NULL};
const char *const ec2_spot_history_params[] = {
    COMMON_PARAMS,        "Filter",     "AvailabilityZone",
    "AvailabilityZoneId", "DryRun",     "EndTime",
    "InstanceType",       "MaxResults", "NextToken",
    "ProductDescription", "StartTime",  NULL};
const char *const ec2_instance_types_params[] = {
    COMMON_PARAMS, "DryRun", "InstanceType", "Filter", "MaxResults",
    "NextToken",   NULL};
const char *const ec2_zones_params[] = {
    COMMON_PARAMS,          "Filter", "ZoneName", "ZoneId",
    "AllAvailabilityZones", "DryRun", NULL};
const char *const ec2_regions_params[] = {COMMON_PARAMS, "Filter", "RegionName",
                                          "AllRegions",  "DryRun", NULL};
const char *const ec2_addresses_params[] = {
    COMMON_PARAMS, "Filter", "PublicIp", "AllocationId", "DryRun", NULL};
const char *const ec2_create_tags_params[] = {COMMON_PARAMS, "ResourceId",
                                              "Tag", "DryRun", NULL};
const char *const ec2_delete_tags_params[] = {COMMON_PARAMS, "ResourceId",
                                              "Tag", "DryRun", NULL};
const char *const ec2_describe_tags_params[] = {
    COMMON_PARAMS, "Filter", "MaxResults", "NextToken", "DryRun", NULL};
const char *const ec2_instance_status_params[] = {COMMON_PARAMS,
                                                  "InstanceId",
                                                  "MaxResults",
                                                  "NextToken",
                                                  "DryRun",
                                                  "Filter",
                                                  "IncludeAllInstances",
                                                  "IncludeManagedResources",
                                                  NULL};
const char *const ec2_spot_requests_params[] = {
    COMMON_PARAMS, "SpotInstanceRequestId",
    "Filter",      "MaxResults",
    "NextToken",   "DryRun",
    NULL};

enum tw_rc ec2_fail(struct tw_err *err, const char *code, const char *fmt,
                    ...) {
  if (err && err->rc == TW_OK) {
    va_list ap;
    va_start(ap, fmt);
    tw_err_setv(err, TW_E_INVALID, fmt, ap);
    va_end(ap);
    tw_err_detail(err, code);
  }
  return TW_E_INVALID;
}

enum tw_rc ec2_check_known(const struct fc_params *p,
                           const char *const *allowed, struct tw_err *err) {
  const char *bad = fc_params_unknown(p, allowed);
  if (bad)
    return ec2_fail(err, "UnknownParameter",
                    "The parameter %.*s is not recognized",
                    (int)strcspn(bad, "."), bad);
  return TW_OK;
}

enum tw_rc ec2_list(const struct fc_params *p, const char *prefix, size_t max,
                    const char ***out, size_t *n, struct tw_err *err) {
  int *idx = tw_malloc((max + 1) * sizeof *idx);
  const char *bad = NULL;
  size_t found = fc_params_indexes(p, prefix, idx, max + 1, &bad);
  *out = NULL;
  *n = 0;
  if (bad) {
    free(idx);
    return ec2_fail(err, "InvalidParameterValue",
                    "The parameter %.100s has an invalid list index", bad);
  }
  if (found > max) {
    free(idx);
    return ec2_fail(err, "InvalidParameterValue",
                    "The list %s has more than %zu members", prefix, max);
  }
  const char **vals = tw_calloc(found ? found : 1, sizeof *vals);
  for (size_t i = 0; i < found; i++) {
    char key[FC_PARAM_KEY_MAX + 16];
    snprintf(key, sizeof key, "%s.%d", prefix, idx[i]);
    vals[i] = fc_params_get(p, key);
    if (!vals[i]) { /* only sub-keys like prefix.N.Foo exist */
      int bad_index = idx[i];
      free(vals);
      free(idx);
      return ec2_fail(err, "UnknownParameter",
                      "The parameter %s.%d is not recognized", prefix,
                      bad_index);
    }
  }
  free(idx);
  *out = vals;
  *n = found;
  return TW_OK;
}

enum tw_rc ec2_int(const struct fc_params *p, const char *name, long lo,
                   long hi, long *out, bool *present, struct tw_err *err) {
  const char *v = fc_params_get(p, name);
  if (present)
    *present = v != NULL;
  if (!v)
    return TW_OK;
  char *end;
  long n = 0;
  bool ok = *v && strlen(v) < 12;
  if (ok) {
    n = strtol(v, &end, 10);
    ok = *end == '\0' && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'));
  }
  if (!ok)
    return ec2_fail(err, "InvalidParameterValue",
                    "Invalid value '%.64s' for %s. It must be an integer.", v,
                    name);
  if (n < lo)
    return ec2_fail(err, "InvalidParameterValue",
                    "Value ( %ld ) for parameter %s is invalid. Expecting a "
                    "value greater than or equal to %ld.",
                    n, name, lo);
  if (n > hi)
    return ec2_fail(err, "InvalidParameterValue",
                    "Value ( %ld ) for parameter %s is invalid. Expecting a "
                    "value less than or equal to %ld.",
                    n, name, hi);
  *out = n;
  return TW_OK;
}

enum tw_rc ec2_bool(const struct fc_params *p, const char *name, bool *out,
                    struct tw_err *err) {
  const char *v = fc_params_get(p, name);
  *out = false;
  if (!v)
    return TW_OK;
  if (!strcmp(v, "true"))
    *out = true;
  else if (strcmp(v, "false"))
    return ec2_fail(err, "InvalidParameterValue",
                    "Invalid value '%.64s' for %s. Expecting true or false.", v,
                    name);
  return TW_OK;
}

enum tw_rc ec2_time(const struct fc_params *p, const char *name, int64_t *ms,
                    bool *present, struct tw_err *err) {
  const char *v = fc_params_get(p, name);
  *present = v != NULL;
  if (!v)
    return TW_OK;
  if (strlen(v) > 40 || tw_time_parse_rfc3339(v, ms))
    return ec2_fail(err, "InvalidParameterValue",
                    "Invalid value '%.64s' for %s. It must be an ISO 8601 "
                    "date-time.",
                    v, name);
  return TW_OK;
}

void ec2_filters_release(struct ec2_filters *f) {
  for (size_t i = 0; i < f->n; i++)
    free(f->v[i].values);
  f->n = 0;
}

enum tw_rc ec2_filters_parse(const struct fc_params *p,
                             const char *const *allowed,
                             struct ec2_filters *out, struct tw_err *err) {
  int idx[EC2_MAX_FILTERS + 1];
  const char *bad = NULL;
  out->n = 0;
  size_t n = fc_params_indexes(p, "Filter", idx, EC2_MAX_FILTERS + 1, &bad);
  if (bad)
    return ec2_fail(err, "InvalidParameterValue",
                    "The parameter %.100s has an invalid list index", bad);
  if (n > EC2_MAX_FILTERS)
    return ec2_fail(err, "FilterLimitExceeded",
                    "The maximum number of filters is %d", EC2_MAX_FILTERS);
  for (size_t i = 0; i < n; i++) {
    char key[64];
    snprintf(key, sizeof key, "Filter.%d.Name", idx[i]);
    const char *name = fc_params_get(p, key);
    if (!name)
      return ec2_fail(err, "MissingParameter",
                      "The request must contain the parameter %s", key);
    bool ok = false;
    for (const char *const *a = allowed; *a && !ok; a++) {
      size_t al = strlen(*a);
      ok = (*a)[al - 1] == ':' ? !strncmp(*a, name, al) && name[al]
                               : !strcmp(*a, name);
    }
    if (!ok)
      return ec2_fail(err, "InvalidParameterValue",
                      "The filter '%.128s' is invalid", name);
    /* Anything under Filter.N other than Name and Value.M is unknown. */
    size_t klen = (size_t)snprintf(key, sizeof key, "Filter.%d.", idx[i]);
    for (size_t k = 0; k < p->n; k++) {
      const char *pk = p->v[k].key;
      if (!strncmp(pk, key, klen) && strcmp(pk + klen, "Name") &&
          strncmp(pk + klen, "Value.", 6))
        return ec2_fail(err, "UnknownParameter",
                        "The parameter %.100s is not recognized", pk);
    }
    snprintf(key, sizeof key, "Filter.%d.Value", idx[i]);
    struct ec2_filter *f = &out->v[out->n++];
    f->name = name;
    enum tw_rc rc =
        ec2_list(p, key, EC2_MAX_LIST, &f->values, &f->n_values, err);
    if (rc)
      return rc;
    if (f->n_values == 0)
      return ec2_fail(err, "InvalidParameterValue",
                      "The filter '%.128s' requires at least one value", name);
  }
  return TW_OK;
}

bool ec2_glob(const char *pat, const char *s) {
  /* Iterative matcher with one backtrack point: linear in practice and
   * never recursive, whatever the pattern. */
  const char *star = NULL, *ss = NULL;
  while (*s) {
    if (*pat == '\\' && pat[1]) {
      if (pat[1] == *s) {
        pat += 2;
        s++;
        continue;
      }
    } else if (*pat == '?') {
      pat++;
      s++;
      continue;
    } else if (*pat == '*') {
      star = pat++;
      ss = s;
      continue;
    } else if (*pat == *s) {
      pat++;
      s++;
      continue;
    }
    if (!star)
      return false;
    pat = star + 1;
    s = ++ss;
  }
  while (*pat == '*')
    pat++;
  return *pat == '\0';
}

bool ec2_filter_any(const struct ec2_filter *f, const char *s) {
  for (size_t i = 0; i < f->n_values; i++)
    if (ec2_glob(f->values[i], s ? s : ""))
      return true;
  return false;
}

static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xc0) != 0x80)
      n++;
  return n;
}

static bool valid_ami(const char *s) {
  size_t n = strlen(s);
  if (strncmp(s, "ami-", 4) || (n != 12 && n != 21))
    return false;
  for (size_t i = 4; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

bool ec2_instance_id_valid(const char *s) {
  size_t n = strlen(s);
  if (strncmp(s, "i-", 2) || (n != 10 && n != 19))
    return false;
  for (size_t i = 2; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* One tag as EC2 checks it wherever tags are given (RunInstances'
 * TagSpecification, CreateTags); a missing value is the empty string. */
static enum tw_rc check_tag(const char *tk, const char **tv,
                            struct tw_err *err) {
  if (!tk || !*tk)
    return ec2_fail(err, "InvalidParameterValue", "Tag key must have a value");
  if (!*tv)
    *tv = "";
  if (utf8_chars(tk) > 128)
    return ec2_fail(err, "InvalidParameterValue",
                    "Tag key exceeds the maximum length of 128 characters");
  if (utf8_chars(*tv) > 256)
    return ec2_fail(err, "InvalidParameterValue",
                    "Tag value exceeds the maximum length of 256 characters");
  if (!strncmp(tk, "aws:", 4))
    return ec2_fail(err, "InvalidParameterValue",
                    "Tag keys starting with 'aws:' are reserved for internal "
                    "use");
  return TW_OK;
}

enum tw_rc ec2_parse_tag_list(const struct fc_params *p, const char *prefix,
                              struct ec2_tag *out, size_t *n,
                              struct tw_err *err) {
  int idx[EC2_MAX_TAGS + 1];
  const char *bad = NULL;
  size_t nt = fc_params_indexes(p, prefix, idx, EC2_MAX_TAGS + 1, &bad);
  *n = 0;
  if (bad)
    return ec2_fail(err, "InvalidParameterValue",
                    "The parameter %.100s has an invalid list index", bad);
  if (nt > EC2_MAX_TAGS)
    return ec2_fail(err, "TagLimitExceeded",
                    "The maximum number of tags per resource is %d",
                    EC2_MAX_TAGS);
  for (size_t t = 0; t < nt; t++) {
    char k2[128];
    snprintf(k2, sizeof k2, "%s.%d.Key", prefix, idx[t]);
    const char *tk = fc_params_get(p, k2);
    snprintf(k2, sizeof k2, "%s.%d.Value", prefix, idx[t]);
    const char *tv = fc_params_get(p, k2);
    enum tw_rc rc = check_tag(tk, &tv, err);
    if (rc)
      return rc;
    for (size_t j = 0; j < *n; j++)
      if (!strcmp(out[j].key, tk))
        return ec2_fail(err, "InvalidParameterValue",
                        "Duplicate tag key '%.128s' specified.", tk);
    out[*n].key = tk;
    out[*n].value = tv;
    (*n)++;
  }
  return TW_OK;
}

static enum tw_rc parse_tags(const struct fc_params *p, struct ec2_run *out,
                             struct tw_err *err) {
  static const char *const types[] = {
      "instance",    "volume", "network-interface", "spot-instances-request",
      "elastic-gpu", NULL};
  int spec[32];
  const char *bad = NULL;
  size_t n = fc_params_indexes(p, "TagSpecification", spec, 32, &bad);
  if (bad || n > 32)
    return ec2_fail(err, "InvalidParameterValue",
                    "The parameter TagSpecification has an invalid list "
                    "index or too many members");
  const char *seen[32];
  for (size_t i = 0; i < n; i++) {
    char key[96];
    snprintf(key, sizeof key, "TagSpecification.%d.ResourceType", spec[i]);
    const char *rt = fc_params_get(p, key);
    if (!rt)
      return ec2_fail(err, "InvalidParameterValue",
                      "Tag specification resource type must have a value");
    bool ok = false;
    for (const char *const *t = types; *t && !ok; t++)
      ok = !strcmp(*t, rt);
    if (!ok)
      return ec2_fail(err, "InvalidParameterValue",
                      "'%.64s' is not a valid taggable resource type for "
                      "this operation.",
                      rt);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(seen[j], rt))
        return ec2_fail(err, "InvalidParameterValue",
                        "The same resource type may not be specified more "
                        "than once in tag specifications");
    seen[i] = rt;
    snprintf(key, sizeof key, "TagSpecification.%d.Tag", spec[i]);
    int tidx[EC2_MAX_TAGS + 1];
    size_t nt = fc_params_indexes(p, key, tidx, EC2_MAX_TAGS + 1, &bad);
    if (bad)
      return ec2_fail(err, "InvalidParameterValue",
                      "The parameter %.100s has an invalid list index", bad);
    if (nt > EC2_MAX_TAGS)
      return ec2_fail(err, "TagLimitExceeded",
                      "The maximum number of tags per resource is %d",
                      EC2_MAX_TAGS);
    bool is_instance = !strcmp(rt, "instance");
    for (size_t t = 0; t < nt; t++) {
      char k2[128];
      snprintf(k2, sizeof k2, "%s.%d.Key", key, tidx[t]);
      const char *tk = fc_params_get(p, k2);
      snprintf(k2, sizeof k2, "%s.%d.Value", key, tidx[t]);
      const char *tv = fc_params_get(p, k2);
      enum tw_rc rc = check_tag(tk, &tv, err);
      if (rc)
        return rc;
      bool is_sir = !strcmp(rt, "spot-instances-request");
      if (!is_instance && !is_sir)
        continue;
      struct ec2_tag *into = is_instance ? out->tags : out->sir_tags;
      size_t *n_into = is_instance ? &out->n_tags : &out->n_sir_tags;
      for (size_t j = 0; j < *n_into; j++)
        if (!strcmp(into[j].key, tk))
          return ec2_fail(err, "InvalidParameterValue",
                          "Duplicate tag key '%.128s' specified.", tk);
      into[*n_into].key = tk;
      into[*n_into].value = tv;
      (*n_into)++;
    }
  }
  return TW_OK;
}

static bool hex_id(const char *s, const char *prefix) {
  size_t pl = strlen(prefix), n;
  if (strncmp(s, prefix, pl))
    return false;
  n = strlen(s + pl);
  if (n != 8 && n != 17)
    return false;
  for (const char *c = s + pl; *c; c++)
    if (!strchr("0123456789abcdef", *c))
      return false;
  return true;
}

/* SubnetId, SecurityGroupId.N, IamInstanceProfile, BlockDeviceMapping.N:
 * their shapes as EC2 checks them (RunInstances API reference). */
static enum tw_rc parse_machine(const struct fc_params *p, struct ec2_run *out,
                                struct tw_err *err) {
  out->subnet_id = fc_params_get(p, "SubnetId");
  if (out->subnet_id && !hex_id(out->subnet_id, "subnet-"))
    return ec2_fail(err, "InvalidSubnetID.Malformed",
                    "Invalid id: \"%.64s\" (expecting \"subnet-...\")",
                    out->subnet_id);
  for (size_t i = 0; i < p->n; i++) {
    const char *k = p->v[i].key;
    if (!strncmp(k, "SecurityGroupId.", 16)) {
      if (!hex_id(p->v[i].value, "sg-"))
        return ec2_fail(err, "InvalidGroupId.Malformed",
                        "Invalid id: \"%.64s\" (expecting \"sg-...\")",
                        p->v[i].value);
      out->n_groups++;
    } else if (!strncmp(k, "IamInstanceProfile.", 19) &&
               strcmp(k + 19, "Name") && strcmp(k + 19, "Arn")) {
      return ec2_fail(err, "UnknownParameter",
                      "The parameter %.100s is not recognized", k);
    }
  }
  out->profile_name = fc_params_get(p, "IamInstanceProfile.Name");
  out->profile_arn = fc_params_get(p, "IamInstanceProfile.Arn");
  if (out->profile_arn) {
    const char *a = out->profile_arn;
    bool ok = !strncmp(a, "arn:aws:iam::", 13) && strlen(a) > 43 &&
              strspn(a + 13, "0123456789") == 12 &&
              !strncmp(a + 25, ":instance-profile/", 18);
    if (!ok)
      return ec2_fail(err, "InvalidParameterValue",
                      "Value (%.128s) for parameter iamInstanceProfile.arn is "
                      "invalid. Invalid IAM Instance Profile ARN",
                      a);
  }
  if (out->profile_name &&
      (!*out->profile_name || strlen(out->profile_name) > 128))
    return ec2_fail(err, "InvalidParameterValue",
                    "Value (%.128s) for parameter iamInstanceProfile.name is "
                    "invalid. Invalid IAM Instance Profile name",
                    out->profile_name);
  static const char *const types[] = {"standard", "io1", "io2", "gp2",
                                      "gp3",      "sc1", "st1", NULL};
  for (int n = 1; n <= 32; n++) {
    char k[96];
    snprintf(k, sizeof k, "BlockDeviceMapping.%d.DeviceName", n);
    const char *dev = fc_params_get(p, k);
    snprintf(k, sizeof k, "BlockDeviceMapping.%d.Ebs.VolumeSize", n);
    const char *size = fc_params_get(p, k);
    snprintf(k, sizeof k, "BlockDeviceMapping.%d.Ebs.VolumeType", n);
    const char *type = fc_params_get(p, k);
    if (!dev && !size && !type)
      break;
    if (!dev)
      return ec2_fail(err, "MissingParameter",
                      "The request must contain the parameter "
                      "BlockDeviceMapping.%d.DeviceName",
                      n);
    bool ok_type = !type;
    for (const char *const *t = types; type && *t && !ok_type; t++)
      ok_type = !strcmp(*t, type);
    if (!ok_type)
      return ec2_fail(err, "InvalidParameterValue",
                      "Value (%.32s) for parameter volumeType is invalid. "
                      "Valid values: standard, io1, io2, gp2, sc1, st1, gp3",
                      type);
    long gb = 0;
    if (size) {
      char *end;
      gb = strtol(size, &end, 10);
      /* gp2/gp3: 1..16384 GiB; io1/io2: 4..; st1/sc1: 125.. */
      long min = !type || !strncmp(type, "gp", 2) || !strcmp(type, "standard")
                     ? 1
                     : (!strncmp(type, "io", 2) ? 4 : 125);
      long max = type && !strcmp(type, "io2")        ? 65536
                 : type && !strcmp(type, "standard") ? 1024
                                                     : 16384;
      if (*end || gb < min || gb > max)
        return ec2_fail(err, "InvalidParameterValue",
                        "Volume of size %.16s GB is outside the range "
                        "%ld-%ld GB for volume type %s",
                        size, min, max, type ? type : "gp2");
    }
    if (n == 1) {
      out->root_device = dev;
      out->root_size_gb = gb;
      out->root_type = type;
    }
  }
  return TW_OK;
}

enum tw_rc ec2_parse_run(const struct fc_params *p, struct ec2_run *out,
                         struct tw_err *err) {
  enum tw_rc rc;
  bool present;
  memset(out, 0, sizeof *out);
  out->max_price_uusd = -1;
  if ((rc = ec2_check_known(p, ec2_run_params, err)) ||
      (rc = ec2_bool(p, "DryRun", &out->dry_run, err)))
    return rc;
  out->image_id = fc_params_get(p, "ImageId");
  out->user_data = fc_params_get(p, "UserData");
  if (!out->image_id && !fc_params_get(p, "LaunchTemplate.LaunchTemplateId") &&
      !fc_params_get(p, "LaunchTemplate.LaunchTemplateName"))
    return ec2_fail(err, "MissingParameter",
                    "The request must contain the parameter ImageId");
  if (!out->image_id)
    return ec2_fail(err, "Unsupported",
                    "Launch templates are not supported by this endpoint.");
  if (!valid_ami(out->image_id))
    return ec2_fail(err, "InvalidAMIID.Malformed",
                    "Invalid id: \"%.64s\" (expecting \"ami-...\")",
                    out->image_id);
  if (!fc_params_get(p, "MinCount"))
    return ec2_fail(err, "MissingParameter",
                    "The request must contain the parameter MinCount");
  if (!fc_params_get(p, "MaxCount"))
    return ec2_fail(err, "MissingParameter",
                    "The request must contain the parameter MaxCount");
  if ((rc =
           ec2_int(p, "MinCount", 1, 100000, &out->min_count, &present, err)) ||
      (rc = ec2_int(p, "MaxCount", 1, 100000, &out->max_count, &present, err)))
    return rc;
  if (out->min_count > out->max_count)
    return ec2_fail(err, "InvalidParameterValue",
                    "MinCount (%ld) must be less than or equal to MaxCount "
                    "(%ld).",
                    out->min_count, out->max_count);
  out->instance_type = fc_params_get(p, "InstanceType");
  if (!out->instance_type)
    return ec2_fail(err, "MissingParameter",
                    "The request must contain the parameter InstanceType");
  out->zone = fc_params_get(p, "Placement.AvailabilityZone");
  out->key_name = fc_params_get(p, "KeyName");
  out->client_token = fc_params_get(p, "ClientToken");
  if (out->client_token &&
      (strlen(out->client_token) > 64 || !*out->client_token))
    return ec2_fail(err, "InvalidParameterValue",
                    "Value for parameter ClientToken is invalid. It must "
                    "be 1 to 64 ASCII characters.");
  for (const char *c = out->client_token; c && *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
      return ec2_fail(err, "InvalidParameterValue",
                      "Value for parameter ClientToken is invalid. It must "
                      "be 1 to 64 ASCII characters.");
  const char *market = fc_params_get(p, "InstanceMarketOptions.MarketType");
  bool has_spot_opts = false;
  for (size_t i = 0; i < p->n; i++)
    if (!strncmp(p->v[i].key, "InstanceMarketOptions.SpotOptions.", 34))
      has_spot_opts = true;
  if (market && strcmp(market, "spot") && strcmp(market, "capacity-block"))
    return ec2_fail(err, "InvalidParameterValue",
                    "Value (%.64s) for parameter "
                    "InstanceMarketOptions.MarketType is invalid. Supported "
                    "values: spot, capacity-block",
                    market);
  if (market && !strcmp(market, "capacity-block"))
    return ec2_fail(err, "Unsupported",
                    "Capacity Blocks are not supported by this endpoint.");
  if (has_spot_opts && !market)
    return ec2_fail(err, "MissingParameter",
                    "The request must contain the parameter "
                    "InstanceMarketOptions.MarketType");
  out->spot = market != NULL;
  if (out->spot) {
    static const char *const known[] = {"MaxPrice",
                                        "SpotInstanceType",
                                        "BlockDurationMinutes",
                                        "ValidUntil",
                                        "InstanceInterruptionBehavior",
                                        NULL};
    for (size_t i = 0; i < p->n; i++) {
      const char *k = p->v[i].key;
      if (strncmp(k, "InstanceMarketOptions.", 22))
        continue;
      k += 22;
      if (!strcmp(k, "MarketType"))
        continue;
      bool ok = false;
      if (!strncmp(k, "SpotOptions.", 12))
        for (const char *const *n = known; *n && !ok; n++)
          ok = !strcmp(k + 12, *n);
      if (!ok)
        return ec2_fail(err, "UnknownParameter",
                        "The parameter %.100s is not recognized", p->v[i].key);
    }
    out->max_price = fc_params_get(p, "InstanceMarketOptions.SpotOptions."
                                      "MaxPrice");
    if (out->max_price &&
        (!fc_price_parse(out->max_price, &out->max_price_uusd) ||
         out->max_price_uusd <= 0))
      return ec2_fail(err, "InvalidParameterValue",
                      "Invalid value '%.64s' for MaxPrice. It must be a "
                      "positive decimal number of dollars per hour.",
                      out->max_price);
    out->spot_type = fc_params_get(p, "InstanceMarketOptions.SpotOptions."
                                      "SpotInstanceType");
    if (!out->spot_type)
      out->spot_type = "one-time";
    if (strcmp(out->spot_type, "one-time") &&
        strcmp(out->spot_type, "persistent"))
      return ec2_fail(err, "InvalidParameterValue",
                      "Value (%.64s) for parameter SpotInstanceType is "
                      "invalid. Supported values: one-time, persistent",
                      out->spot_type);
    out->interruption = fc_params_get(p, "InstanceMarketOptions.SpotOptions."
                                         "InstanceInterruptionBehavior");
    if (!out->interruption)
      out->interruption = "terminate";
    if (strcmp(out->interruption, "terminate") &&
        strcmp(out->interruption, "stop") &&
        strcmp(out->interruption, "hibernate"))
      return ec2_fail(err, "InvalidParameterValue",
                      "Value (%.64s) for parameter "
                      "InstanceInterruptionBehavior is invalid. Supported "
                      "values: hibernate, stop, terminate",
                      out->interruption);
    if (strcmp(out->interruption, "terminate") &&
        strcmp(out->spot_type, "persistent"))
      return ec2_fail(err, "InvalidParameterCombination",
                      "The InstanceInterruptionBehavior %s requires the "
                      "SpotInstanceType persistent.",
                      out->interruption);
    if (fc_params_get(p, "InstanceMarketOptions.SpotOptions."
                         "BlockDurationMinutes"))
      return ec2_fail(err, "InvalidParameterValue",
                      "Spot blocks (BlockDurationMinutes) are no longer "
                      "offered.");
  }
  if ((rc = parse_machine(p, out, err)))
    return rc;
  return parse_tags(p, out, err);
}

static int cmp_param(const void *a, const void *b) {
  const struct fc_param *x = *(const struct fc_param *const *)a;
  const struct fc_param *y = *(const struct fc_param *const *)b;
  return strcmp(x->key, y->key);
}

uint64_t ec2_params_hash(const struct fc_params *p, const char *const *skip) {
  const struct fc_param **v = tw_calloc(p->n ? p->n : 1, sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    bool skipped = false;
    for (const char *const *s = skip; s && *s && !skipped; s++)
      skipped = !strcmp(*s, p->v[i].key);
    if (!skipped)
      v[n++] = &p->v[i];
  }
  qsort(v, n, sizeof *v, cmp_param);
  uint64_t h = 0x6a09e667f3bcc908ull;
  for (size_t i = 0; i < n; i++)
    h = fc_hash3(h, fc_hash_str(v[i]->key), fc_hash_str(v[i]->value));
  free(v);
  return h;
}
