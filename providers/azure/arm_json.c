/* arm_json.c - Azure answers into plain structs (see arm_json.h).
 *
 * Every member is reached by its documented path from the root; nothing
 * is searched for, so a "name" inside tags or a nested "status" cannot be
 * taken for the one wanted. */
#include "providers/azure/arm_json.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"

/* ---- loading and member access ------------------------------------------ */

static enum tw_rc load(const char *body, size_t len, const char *what,
                       json_t **out, struct tw_err *err) {
  *out = NULL;
  if (len > TW_ARM_JSON_MAX_BYTES)
    return tw_err_set(err, TW_E_TOOBIG, "%s: answer of %zu bytes, limit %u",
                      what, len, TW_ARM_JSON_MAX_BYTES);
  json_error_t je;
  json_t *root = json_loadb(body ? body : "", len, 0, &je);
  if (!root)
    return tw_err_set(err, TW_E_INVALID, "%s: malformed JSON: %s (line %d)",
                      what, je.text, je.line);
  if (!json_is_object(root)) {
    json_decref(root);
    return tw_err_set(err, TW_E_INVALID, "%s: expected a JSON object", what);
  }
  *out = root;
  return TW_OK;
}

/* Follows "a/b/c" through objects; NULL when a step is missing or not an
 * object. */
static json_t *at(json_t *o, const char *path) {
  char part[64];
  while (o && *path) {
    size_t n = strcspn(path, "/");
    if (n >= sizeof part || !json_is_object(o))
      return NULL;
    memcpy(part, path, n);
    part[n] = '\0';
    o = json_object_get(o, part);
    path += n;
    if (*path == '/')
      path++;
  }
  return o;
}

/* A string member into out[size]: absent or null leaves out empty;
 * another type, or a value that does not fit, is TW_E_INVALID. */
static enum tw_rc str_at(json_t *o, const char *path, char *out, size_t size,
                         const char *what, struct tw_err *err) {
  json_t *v = at(o, path);
  out[0] = '\0';
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_is_string(v))
    return tw_err_set(err, TW_E_INVALID, "%s: /%s: expected a string", what,
                      path);
  if (json_string_length(v) >= size)
    return tw_err_set(err, TW_E_INVALID, "%s: /%s: longer than %zu bytes", what,
                      path, size - 1);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return TW_OK;
}

/* As str_at, but cuts a long value to fit: messages only. */
static void str_cut(json_t *o, const char *path, char *out, size_t size) {
  json_t *v = at(o, path);
  out[0] = '\0';
  if (json_is_string(v))
    snprintf(out, size, "%s", json_string_value(v));
}

static enum tw_rc next_link(json_t *root, const char *key, char **out,
                            const char *what, struct tw_err *err) {
  if (!out)
    return TW_OK;
  *out = NULL;
  json_t *v = json_object_get(root, key);
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_is_string(v))
    return tw_err_set(err, TW_E_INVALID, "%s: /%s: expected a string", what,
                      key);
  /* Links are opaque and may be long; bound them all the same. */
  if (json_string_length(v) > 8192)
    return tw_err_set(err, TW_E_TOOBIG, "%s: /%s: longer than 8192 bytes", what,
                      key);
  if (json_string_length(v))
    *out = tw_strdup(json_string_value(v));
  return TW_OK;
}

/* "0.75" (GB) or 0.75 into MiB, rounded to the nearest MiB; -1 when not a
 * non-negative decimal below a petabyte. */
static int64_t gb_to_mib(const char *s) {
  int64_t whole = 0, frac = 0, scale = 1;
  const char *p = s;
  if (!*p)
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    whole = whole * 10 + (*p - '0');
    if (whole > 1000000)
      return -1;
  }
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++)
      if (scale < 1000000) {
        frac = frac * 10 + (*p - '0');
        scale *= 10;
      }
  if (*p)
    return -1;
  return whole * 1024 + (frac * 1024 + scale / 2) / scale;
}

/* ---- errors ------------------------------------------------------------- */

static bool has_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; hay && *hay; hay++)
    if (!strncasecmp(hay, needle, n))
      return true;
  return false;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

static const struct {
  const char *code;
  enum tw_rc rc;
} arm_codes[] = {
    /* No capacity where asked: another size, zone or region may have it. */
    {"SkuNotAvailable", TW_E_CAPACITY},
    {"AllocationFailed", TW_E_CAPACITY},
    {"ZonalAllocationFailed", TW_E_CAPACITY},
    {"OverconstrainedAllocationRequest", TW_E_CAPACITY},
    {"OverconstrainedZonalAllocationRequest", TW_E_CAPACITY},
    {"AllocationFailedVMSeriesNotAvailable", TW_E_CAPACITY},
    {"SpotVMNotAvailable", TW_E_CAPACITY},
    /* Limits of the subscription. */
    {"QuotaExceeded", TW_E_QUOTA},
    {"OperationNotAllowedQuotaExceeded", TW_E_QUOTA},
    /* Transient. */
    {"TooManyRequests", TW_E_RETRYABLE},
    {"RetryableError", TW_E_RETRYABLE},
    {"InternalServerError", TW_E_RETRYABLE},
    {"InternalExecutionError", TW_E_RETRYABLE},
    {"InternalOperationError", TW_E_RETRYABLE},
    {"ServerTimeout", TW_E_RETRYABLE},
    {"GatewayTimeout", TW_E_RETRYABLE},
    {"ServiceUnavailable", TW_E_RETRYABLE},
    {"temporarily_unavailable", TW_E_RETRYABLE},
    /* Credentials. */
    {"AuthenticationFailed", TW_E_AUTH},
    {"InvalidAuthenticationToken", TW_E_AUTH},
    {"InvalidAuthenticationTokenTenant", TW_E_AUTH},
    {"InvalidAuthenticationTokenAudience", TW_E_AUTH},
    {"ExpiredAuthenticationToken", TW_E_AUTH},
    {"AuthorizationFailed", TW_E_AUTH},
    {"invalid_client", TW_E_AUTH},
    {"unauthorized_client", TW_E_AUTH},
    {"invalid_grant", TW_E_AUTH},
    /* Gone. */
    {"ResourceNotFound", TW_E_NOTFOUND},
    {"NotFound", TW_E_NOTFOUND},
    {"ResourceGroupNotFound", TW_E_NOTFOUND},
    {"SubscriptionNotFound", TW_E_NOTFOUND},
};

enum tw_rc tw_arm_error_class(const char *code, const char *message,
                              long http_status) {
  if (code && *code) {
    for (size_t i = 0; i < sizeof arm_codes / sizeof *arm_codes; i++)
      if (!strcmp(code, arm_codes[i].code))
        return arm_codes[i].rc;
    /* Quota errors have many codes (PublicIPCountLimitReached,
     * LowPriorityCoreQuotaExceeded...) and the commonest, regional and
     * family vCPU limits, arrive as OperationNotAllowed whose message
     * names the quota: "...results in exceeding approved standardDSv5Family
     * Cores quota...". */
    if (ends_with(code, "QuotaExceeded") || ends_with(code, "LimitReached") ||
        ends_with(code, "LimitExceeded") ||
        (!strcmp(code, "OperationNotAllowed") && has_ci(message, "quota")))
      return TW_E_QUOTA;
    if (ends_with(code, "AllocationFailed"))
      return TW_E_CAPACITY;
  }
  if (http_status == 429 || http_status >= 500)
    return TW_E_RETRYABLE;
  if (http_status == 401 || http_status == 403)
    return TW_E_AUTH;
  if (http_status == 404)
    return TW_E_NOTFOUND;
  return TW_E_INVALID;
}

static void error_from(json_t *e, struct tw_arm_error *out) {
  str_cut(e, "code", out->code, sizeof out->code);
  str_cut(e, "message", out->message, sizeof out->message);
  str_cut(e, "target", out->target, sizeof out->target);
}

static bool error_from_root(json_t *root, struct tw_arm_error *out) {
  json_t *e = json_object_get(root, "error");
  if (json_is_object(e)) {
    error_from(e, out);
    if (!out->code[0])
      return false;
    /* A generic top error (DeploymentFailed, InvalidTemplateDeployment,
     * Conflict) may carry the real one among its details. */
    enum tw_rc top = tw_arm_error_class(out->code, out->message, 0);
    json_t *details = json_object_get(e, "details");
    if ((top == TW_E_INVALID || top == TW_E_NOTFOUND) &&
        json_is_array(details)) {
      size_t i;
      json_t *d;
      json_array_foreach(details, i, d) {
        struct tw_arm_error de;
        memset(&de, 0, sizeof de);
        error_from(d, &de);
        enum tw_rc rc = tw_arm_error_class(de.code, de.message, 0);
        if (rc == TW_E_CAPACITY || rc == TW_E_QUOTA) {
          *out = de;
          break;
        }
      }
    }
    return true;
  }
  if (json_is_string(e)) { /* identity platform */
    snprintf(out->code, sizeof out->code, "%s", json_string_value(e));
    str_cut(root, "error_description", out->message, sizeof out->message);
    return out->code[0] != '\0';
  }
  if (json_is_string(json_object_get(root, "code"))) {
    error_from(root, out);
    return out->code[0] != '\0';
  }
  return false;
}

bool tw_arm_parse_error(const char *body, size_t len,
                        struct tw_arm_error *out) {
  memset(out, 0, sizeof *out);
  json_t *root;
  if (!body || !len || load(body, len, "error", &root, NULL))
    return false;
  bool ok = error_from_root(root, out);
  json_decref(root);
  if (!ok)
    memset(out, 0, sizeof *out);
  return ok;
}

enum tw_rc tw_arm_response_error(const char *what, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err) {
  struct tw_arm_error e;
  if (tw_arm_parse_error(body, len, &e)) {
    enum tw_rc rc = tw_arm_error_class(e.code, e.message, http_status);
    if (err && err->rc == TW_OK)
      tw_err_detail(err, e.code);
    return tw_err_set(err, rc, "%s: %s: %s", what, e.code,
                      *e.message ? e.message : "(no message)");
  }
  enum tw_rc rc = tw_arm_error_class(NULL, NULL, http_status);
  if (err && err->rc == TW_OK) {
    char detail[32];
    snprintf(detail, sizeof detail, "HTTP %ld", http_status);
    tw_err_detail(err, detail);
  }
  return tw_err_set(err, rc, "%s: HTTP %ld without an Azure error document",
                    what, http_status);
}

/* ---- identity ----------------------------------------------------------- */

enum tw_rc tw_arm_parse_token(const char *body, size_t len, char **access_token,
                              int64_t *expires_in_s, struct tw_err *err) {
  const char *what = "token answer";
  *access_token = NULL;
  *expires_in_s = 0;
  json_t *root;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  json_t *tok = json_object_get(root, "access_token");
  json_t *exp = json_object_get(root, "expires_in");
  json_t *type = json_object_get(root, "token_type");
  int64_t secs = -1;
  if (json_is_integer(exp)) {
    secs = json_integer_value(exp);
  } else if (json_is_string(exp)) { /* v1.0 endpoints send "3599" */
    char *end;
    long long v = strtoll(json_string_value(exp), &end, 10);
    if (*json_string_value(exp) && !*end)
      secs = v;
  }
  if (!json_is_string(tok) || !json_string_length(tok))
    rc = tw_err_set(err, TW_E_INVALID, "%s: no access_token", what);
  else if (json_string_length(tok) > 16384)
    rc = tw_err_set(err, TW_E_TOOBIG, "%s: access_token over 16 KiB", what);
  else if (secs < 1 || secs > 30LL * 86400)
    rc = tw_err_set(err, TW_E_INVALID,
                    "%s: expires_in: expected 1..2592000 seconds", what);
  else if (json_is_string(type) &&
           strcasecmp(json_string_value(type), "Bearer"))
    rc = tw_err_set(err, TW_E_INVALID, "%s: token_type %.32s, not Bearer", what,
                    json_string_value(type));
  if (rc == TW_OK) {
    *access_token = tw_strdup(json_string_value(tok));
    *expires_in_s = secs;
  }
  json_decref(root);
  return rc;
}

enum tw_rc tw_arm_parse_openid(const char *body, size_t len,
                               char **token_endpoint, struct tw_err *err) {
  const char *what = "openid-configuration";
  *token_endpoint = NULL;
  json_t *root;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  json_t *te = json_object_get(root, "token_endpoint");
  if (!json_is_string(te) || json_string_length(te) < 8 ||
      json_string_length(te) > 2048 ||
      (strncmp(json_string_value(te), "https://", 8) &&
       strncmp(json_string_value(te), "http://", 7)))
    rc = tw_err_set(err, TW_E_INVALID, "%s: /token_endpoint: expected a URL",
                    what);
  else
    *token_endpoint = tw_strdup(json_string_value(te));
  json_decref(root);
  return rc;
}

/* ---- virtual machines --------------------------------------------------- */

/* The value of tag name in tags, compared as ARM does (tag names are
 * case-insensitive); NULL when absent or not a string. */
static const char *tag_ci(json_t *tags, const char *name) {
  const char *k;
  json_t *v;
  if (!json_is_object(tags))
    return NULL;
  json_object_foreach(tags, k, v) {
    if (!strcasecmp(k, name) && json_is_string(v))
      return json_string_value(v);
  }
  return NULL;
}

static enum tw_rc tag_into(json_t *tags, const char *name, char *out,
                           size_t size, const char *what, struct tw_err *err) {
  const char *v = tag_ci(tags, name);
  out[0] = '\0';
  if (!v)
    return TW_OK;
  if (strlen(v) >= size)
    return tw_err_set(err, TW_E_INVALID, "%s: tag %s longer than %zu bytes",
                      what, name, size - 1);
  memcpy(out, v, strlen(v) + 1);
  return TW_OK;
}

/* Reads instance view statuses: "PowerState/running" and
 * "ProvisioningState/failed/AllocationFailed". */
static void statuses_into(json_t *iv, struct tw_arm_vm *vm) {
  json_t *st = json_object_get(iv, "statuses");
  size_t i;
  json_t *s;
  if (!json_is_array(st))
    return;
  json_array_foreach(st, i, s) {
    json_t *c = json_object_get(s, "code");
    if (!json_is_string(c))
      continue;
    const char *code = json_string_value(c);
    json_t *tm = json_object_get(s, "time");
    int64_t at = 0;
    if (json_is_string(tm) && tw_time_parse_rfc3339(json_string_value(tm), &at))
      at = 0;
    if (!strncmp(code, "PowerState/", 11)) {
      snprintf(vm->power_state, sizeof vm->power_state, "%s", code + 11);
      vm->power_ms = at;
    } else if (!strcmp(code, "ProvisioningState/succeeded")) {
      vm->provisioned_ms = at;
    } else if (!strncmp(code, "ProvisioningState/failed", 24)) {
      const char *sub = code[24] == '/' ? code + 25 : "";
      snprintf(vm->failure_code, sizeof vm->failure_code, "%s", sub);
      str_cut(s, "message", vm->failure_message, sizeof vm->failure_message);
    }
  }
}

static enum tw_rc vm_from(json_t *o, struct tw_arm_vm *vm, const char *what,
                          struct tw_err *err) {
  enum tw_rc rc;
  tw_arm_vm_init(vm);
  if (!json_is_object(o))
    return tw_err_set(err, TW_E_INVALID, "%s: expected an object", what);
  if ((rc = str_at(o, "name", vm->name, sizeof vm->name, what, err)) ||
      (rc = str_at(o, "location", vm->location, sizeof vm->location, what,
                   err)) ||
      (rc = str_at(o, "properties/hardwareProfile/vmSize", vm->vm_size,
                   sizeof vm->vm_size, what, err)) ||
      (rc = str_at(o, "properties/priority", vm->priority, sizeof vm->priority,
                   what, err)) ||
      (rc = str_at(o, "properties/evictionPolicy", vm->eviction_policy,
                   sizeof vm->eviction_policy, what, err)) ||
      (rc = str_at(o, "properties/provisioningState", vm->provisioning_state,
                   sizeof vm->provisioning_state, what, err)) ||
      (rc = str_at(o, "properties/vmId", vm->vm_id, sizeof vm->vm_id, what,
                   err)))
    return rc;
  if (!vm->name[0])
    return tw_err_set(err, TW_E_INVALID, "%s: /name: missing", what);
  json_t *zones = json_object_get(o, "zones");
  if (json_is_array(zones) && json_array_size(zones) &&
      json_is_string(json_array_get(zones, 0)))
    snprintf(vm->zone, sizeof vm->zone, "%s",
             json_string_value(json_array_get(zones, 0)));
  json_t *mp = at(o, "properties/billingProfile/maxPrice");
  if (json_is_number(mp)) {
    double d = json_number_value(mp);
    if (d < 0)
      vm->max_price_uusd = -1;
    else if (d < 1e12)
      vm->max_price_uusd = (int64_t)(d * 1e6 + 0.5);
  }
  char created[40];
  if (!str_at(o, "properties/timeCreated", created, sizeof created, what,
              NULL) &&
      created[0])
    tw_time_parse_rfc3339(created, &vm->created_ms);
  json_t *tags = json_object_get(o, "tags");
  if ((rc = tag_into(tags, TW_TAG_JOB, vm->job_id, sizeof vm->job_id, what,
                     err)) ||
      (rc = tag_into(tags, TW_TAG_ATTEMPT, vm->attempt_id,
                     sizeof vm->attempt_id, what, err)) ||
      (rc = tag_into(tags, TW_TAG_TENANT, vm->tenant, sizeof vm->tenant, what,
                     err)) ||
      (rc = tag_into(tags, TW_ARM_TAG_TOKEN, vm->client_token,
                     sizeof vm->client_token, what, err)))
    return rc;
  statuses_into(at(o, "properties/instanceView"), vm);
  return TW_OK;
}

enum tw_rc tw_arm_parse_vm(const char *body, size_t len, struct tw_arm_vm *out,
                           struct tw_err *err) {
  json_t *root;
  tw_arm_vm_init(out);
  enum tw_rc rc = load(body, len, "virtual machine", &root, err);
  if (rc)
    return rc;
  rc = vm_from(root, out, "virtual machine", err);
  json_decref(root);
  return rc;
}

enum tw_rc tw_arm_parse_instance_view(const char *body, size_t len,
                                      struct tw_arm_vm *vm,
                                      struct tw_err *err) {
  json_t *root;
  enum tw_rc rc = load(body, len, "instance view", &root, err);
  if (rc)
    return rc;
  if (json_object_get(root, "statuses") &&
      !json_is_array(json_object_get(root, "statuses")))
    rc = tw_err_set(err, TW_E_INVALID,
                    "instance view: /statuses: expected an array");
  else
    statuses_into(root, vm);
  json_decref(root);
  return rc;
}

enum tw_rc tw_arm_parse_vm_list(const char *body, size_t len,
                                struct tw_arm_vm_list *out, char **next,
                                struct tw_err *err) {
  const char *what = "virtual machine list";
  json_t *root;
  if (next)
    *next = NULL;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  size_t first = out->n; /* a failed parse leaves out as it was */
  json_t *v = json_object_get(root, "value");
  size_t i;
  json_t *item;
  if (!json_is_array(v)) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /value: expected an array", what);
    goto out;
  }
  json_array_foreach(v, i, item) {
    struct tw_arm_vm vm;
    char where[64];
    snprintf(where, sizeof where, "%s /value/%zu", what, i);
    if ((rc = vm_from(item, &vm, where, err)))
      goto out;
    tw_arm_vm_list_push(out, &vm);
  }
  rc = next_link(root, "nextLink", next, what, err);
out:
  if (rc)
    out->n = first;
  json_decref(root);
  return rc;
}

void tw_arm_vm_instance(const struct tw_arm_vm *vm, struct tw_instance *out) {
  tw_instance_init(out);
  TW_SET(out->id, vm->name);
  TW_SET(out->region, vm->location);
  TW_SET(out->zone, vm->zone);
  TW_SET(out->instance_type, vm->vm_size);
  out->market =
      !strcasecmp(vm->priority, "Spot") || !strcasecmp(vm->priority, "Low")
          ? TW_MARKET_SPOT
          : TW_MARKET_ON_DEMAND;
  const char *ps = vm->provisioning_state, *pw = vm->power_state;
  enum tw_instance_state st = TW_INST_UNKNOWN;
  if (!strcasecmp(ps, "Deleting"))
    st = TW_INST_SHUTTING_DOWN;
  else if (!strcmp(pw, "running"))
    st = TW_INST_RUNNING;
  else if (!strcmp(pw, "starting"))
    st = TW_INST_PENDING;
  else if (!strcmp(pw, "stopping") || !strcmp(pw, "deallocating"))
    st = TW_INST_STOPPING;
  else if (!strcmp(pw, "stopped") || !strcmp(pw, "deallocated"))
    st = TW_INST_STOPPED;
  else if (!strcasecmp(ps, "Creating"))
    st = TW_INST_PENDING;
  else if (!strcasecmp(ps, "Failed"))
    st = TW_INST_STOPPED; /* never ran; still to be deleted */
  else if (!strcasecmp(ps, "Succeeded") && !*pw)
    st = TW_INST_UNKNOWN; /* fetched without its instance view */
  out->state = st;
  if (*pw)
    snprintf(out->provider_state, sizeof out->provider_state, "%.15s/%.15s",
             *ps ? ps : "-", pw);
  else
    TW_SET(out->provider_state, ps);
  if (*vm->failure_code)
    snprintf(out->state_reason, sizeof out->state_reason, "%.63s: %.190s",
             vm->failure_code, vm->failure_message);
  else if (!strcmp(pw, "deallocated") && out->market == TW_MARKET_SPOT)
    /* A Spot VM deallocated without our asking was evicted. */
    TW_SET(out->state_reason, "PowerState/deallocated");
  TW_SET(out->client_token, vm->client_token);
  TW_SET(out->job_id, vm->job_id);
  TW_SET(out->attempt_id, vm->attempt_id);
  TW_SET(out->tenant, vm->tenant);
  out->launched_ms = vm->created_ms;
  /* billing: from the VM's provisioning (it starts with it), else its
   * creation, to the power state that ended running */
  if (out->state != TW_INST_PENDING && out->state != TW_INST_UNKNOWN)
    out->running_ms = vm->provisioned_ms ? vm->provisioned_ms : vm->created_ms;
  if (out->state == TW_INST_STOPPING || out->state == TW_INST_STOPPED ||
      out->state == TW_INST_SHUTTING_DOWN || out->state == TW_INST_TERMINATED)
    out->ended_ms = vm->power_ms;
}

/* ---- generic resources -------------------------------------------------- */

enum tw_rc tw_arm_parse_resources(const char *body, size_t len,
                                  struct tw_arm_resource_list *out, char **next,
                                  struct tw_err *err) {
  const char *what = "resource list";
  json_t *root;
  if (next)
    *next = NULL;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  size_t first = out->n; /* a failed parse leaves out as it was */
  json_t *v = json_object_get(root, "value");
  size_t i;
  json_t *item;
  if (!json_is_array(v)) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /value: expected an array", what);
    goto out;
  }
  json_array_foreach(v, i, item) {
    struct tw_arm_resource r;
    tw_arm_resource_init(&r);
    if (!json_is_object(item)) {
      rc = tw_err_set(err, TW_E_INVALID, "%s: /value/%zu: expected an object",
                      what, i);
      goto out;
    }
    if ((rc = str_at(item, "name", r.name, sizeof r.name, what, err)) ||
        (rc = str_at(item, "type", r.type, sizeof r.type, what, err)) ||
        (rc = str_at(item, "location", r.location, sizeof r.location, what,
                     err)))
      goto out;
    if (r.name[0])
      tw_arm_resource_list_push(out, &r);
  }
  rc = next_link(root, "nextLink", next, what, err);
out:
  if (rc)
    out->n = first;
  json_decref(root);
  return rc;
}

/* ---- operations ---------------------------------------------------------- */

enum tw_rc tw_arm_parse_operation(const char *body, size_t len,
                                  struct tw_arm_operation *out,
                                  struct tw_err *err) {
  const char *what = "operation status";
  memset(out, 0, sizeof *out);
  json_t *root;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  if ((rc = str_at(root, "status", out->status_text, sizeof out->status_text,
                   what, err)))
    goto out;
  if (!out->status_text[0]) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /status: missing", what);
    goto out;
  }
  if (!strcasecmp(out->status_text, "Succeeded"))
    out->status = TW_ARM_OP_SUCCEEDED;
  else if (!strcasecmp(out->status_text, "Failed"))
    out->status = TW_ARM_OP_FAILED;
  else if (!strcasecmp(out->status_text, "Canceled") ||
           !strcasecmp(out->status_text, "Cancelled"))
    out->status = TW_ARM_OP_CANCELED;
  else
    out->status = TW_ARM_OP_IN_PROGRESS;
  if (out->status == TW_ARM_OP_FAILED || out->status == TW_ARM_OP_CANCELED)
    error_from_root(root, &out->error);
out:
  json_decref(root);
  return rc;
}

/* ---- resource SKUs ------------------------------------------------------ */

static const char *capability(json_t *caps, const char *name) {
  size_t i;
  json_t *c;
  json_array_foreach(caps, i, c) {
    json_t *n = json_object_get(c, "name"), *v = json_object_get(c, "value");
    if (json_is_string(n) && json_is_string(v) &&
        !strcmp(json_string_value(n), name))
      return json_string_value(v);
  }
  return NULL;
}

static int cap_int(json_t *caps, const char *name) {
  const char *v = capability(caps, name);
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  return v && *v && !*end && n >= 0 && n < 1000000 ? (int)n : 0;
}

/* restrictions: [{"type": "Location" | "Zone", "values": [...],
 * "restrictionInfo": {"locations": [...], "zones": [...]},
 * "reasonCode": "NotAvailableForSubscription"}] for location loc. */
static void sku_restrictions(json_t *restr, const char *loc,
                             struct tw_arm_sku *s) {
  size_t i, j;
  json_t *r, *z;
  json_array_foreach(restr, i, r) {
    json_t *type = json_object_get(r, "type");
    json_t *locs = at(r, "restrictionInfo/locations");
    bool here = false;
    json_array_foreach(locs, j, z) {
      if (json_is_string(z) && !strcasecmp(json_string_value(z), loc))
        here = true;
    }
    if (!here || !json_is_string(type))
      continue;
    if (!strcmp(json_string_value(type), "Location")) {
      s->restricted = true;
      continue;
    }
    json_array_foreach(at(r, "restrictionInfo/zones"), j, z) {
      if (!json_is_string(z))
        continue;
      size_t w = 0;
      for (size_t k = 0; k < s->n_zones; k++)
        if (strcmp(s->zones[k], json_string_value(z)))
          memmove(s->zones[w++], s->zones[k], sizeof s->zones[k]);
      s->n_zones = w;
    }
  }
}

enum tw_rc tw_arm_parse_skus(const char *body, size_t len,
                             struct tw_arm_sku_list *out, char **next,
                             struct tw_err *err) {
  const char *what = "resource SKU list";
  json_t *root;
  if (next)
    *next = NULL;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  size_t first = out->n; /* a failed parse leaves out as it was */
  json_t *v = json_object_get(root, "value");
  size_t i, j, k;
  json_t *item, *li, *z;
  if (!json_is_array(v)) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /value: expected an array", what);
    goto out;
  }
  json_array_foreach(v, i, item) {
    json_t *rt = json_object_get(item, "resourceType");
    if (!json_is_string(rt) || strcmp(json_string_value(rt), "virtualMachines"))
      continue;
    struct tw_arm_sku base;
    tw_arm_sku_init(&base);
    if ((rc = str_at(item, "name", base.name, sizeof base.name, what, err)) ||
        (rc = str_at(item, "family", base.family, sizeof base.family, what,
                     err)))
      goto out;
    json_t *caps = json_object_get(item, "capabilities");
    base.vcpus = cap_int(caps, "vCPUs");
    const char *mem = capability(caps, "MemoryGB");
    base.memory_mib = mem ? gb_to_mib(mem) : -1;
    if (base.memory_mib < 0)
      base.memory_mib = 0;
    base.gpus = cap_int(caps, "GPUs");
    const char *arch = capability(caps, "CpuArchitectureType");
    base.arch = !arch                        ? TW_ARCH_ANY
                : !strcasecmp(arch, "Arm64") ? TW_ARCH_ARM64
                : !strcasecmp(arch, "x64")   ? TW_ARCH_X86_64
                                             : TW_ARCH_ANY;
    const char *lp = capability(caps, "LowPriorityCapable");
    base.low_priority = lp && !strcasecmp(lp, "True");
    json_t *infos = json_object_get(item, "locationInfo");
    json_array_foreach(infos, j, li) {
      struct tw_arm_sku s = base;
      if ((rc = str_at(li, "location", s.location, sizeof s.location, what,
                       err)))
        goto out;
      if (!s.location[0] || !base.name[0])
        continue;
      json_array_foreach(json_object_get(li, "zones"), k, z) {
        if (json_is_string(z) && json_string_length(z) < sizeof s.zones[0] &&
            s.n_zones < TW_ARM_ZONES_MAX)
          snprintf(s.zones[s.n_zones++], sizeof s.zones[0], "%s",
                   json_string_value(z));
      }
      sku_restrictions(json_object_get(item, "restrictions"), s.location, &s);
      tw_arm_sku_list_push(out, &s);
    }
  }
  rc = next_link(root, "nextLink", next, what, err);
out:
  if (rc)
    out->n = first;
  json_decref(root);
  return rc;
}

void tw_arm_accel(const char *size, int gpus, char *out, size_t out_size,
                  int64_t *memory_mib) {
  static const struct {
    const char *prefix, *contains, *name;
    int64_t mib;
  } table[] = {
      {"Standard_NC", "T4_v3", "T4", 16384},
      {"Standard_NC", "ads_A100_v4", "A100-80GB", 81920},
      {"Standard_ND", "amsr_A100_v4", "A100-80GB", 81920},
      {"Standard_ND96asr_v4", "", "A100", 40960},
      {"Standard_NC", "H100_v5", "H100", 95488},
      {"Standard_ND", "H100_v5", "H100", 81920},
      {"Standard_NV", "A10_v5", "A10", 24576},
      {"Standard_ND40rs_v2", "", "V100-32GB", 32768},
      {"Standard_NC", "s_v3", "V100", 16384},
  };
  out[0] = '\0';
  *memory_mib = 0;
  if (gpus <= 0 || !size)
    return;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (!strncmp(size, table[i].prefix, strlen(table[i].prefix)) &&
        strstr(size + strlen(table[i].prefix), table[i].contains)) {
      snprintf(out, out_size, "%s", table[i].name);
      *memory_mib = table[i].mib;
      return;
    }
}

/* ---- Retail Prices API -------------------------------------------------- */

enum tw_rc tw_arm_parse_prices(const char *body, size_t len,
                               struct tw_arm_price_list *out, char **next,
                               struct tw_err *err) {
  const char *what = "retail prices page";
  json_t *root;
  if (next)
    *next = NULL;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  size_t first = out->n; /* a failed parse leaves out as it was */
  json_t *v = json_object_get(root, "Items");
  size_t i;
  json_t *item;
  if (!json_is_array(v)) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /Items: expected an array", what);
    goto out;
  }
  json_array_foreach(v, i, item) {
    struct tw_arm_price p;
    tw_arm_price_init(&p);
    if (!json_is_object(item)) {
      rc = tw_err_set(err, TW_E_INVALID, "%s: /Items/%zu: expected an object",
                      what, i);
      goto out;
    }
    /* Names and meters longer than the fields are cut: they only select
     * rows, and a cut one still fails to match a size name. */
    str_cut(item, "armSkuName", p.sku, sizeof p.sku);
    str_cut(item, "armRegionName", p.region, sizeof p.region);
    str_cut(item, "meterName", p.meter, sizeof p.meter);
    str_cut(item, "productName", p.product, sizeof p.product);
    str_cut(item, "type", p.type, sizeof p.type);
    str_cut(item, "unitOfMeasure", p.unit, sizeof p.unit);
    str_cut(item, "currencyCode", p.currency, sizeof p.currency);
    json_t *price = json_object_get(item, "retailPrice");
    if (!json_is_number(price) || json_number_value(price) < 0 ||
        json_number_value(price) > 1e6) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "%s: /Items/%zu/retailPrice: expected a number in "
                      "0..1000000",
                      what, i);
      goto out;
    }
    /* A JSON number is a double here; prices carry at most a few
     * decimals, so rounding to micro-units recovers them exactly. */
    p.uusd = (int64_t)(json_number_value(price) * 1e6 + 0.5);
    char eff[40];
    str_cut(item, "effectiveStartDate", eff, sizeof eff);
    if (*eff)
      tw_time_parse_rfc3339(eff, &p.effective_ms);
    p.spot = ends_with(p.meter, " Spot");
    p.low_priority = ends_with(p.meter, " Low Priority");
    p.windows = strstr(p.product, "Windows") != NULL;
    tw_arm_price_list_push(out, &p);
  }
  rc = next_link(root, "NextPageLink", next, what, err);
out:
  if (rc)
    out->n = first;
  json_decref(root);
  return rc;
}

bool tw_arm_prices_select(const struct tw_arm_price_list *l, const char *sku,
                          const char *region, enum tw_market market,
                          int64_t now_ms, int64_t *uusd) {
  const struct tw_arm_price *best = NULL;
  for (size_t i = 0; i < l->n; i++) {
    const struct tw_arm_price *p = &l->items[i];
    if (strcasecmp(p->sku, sku) || strcasecmp(p->region, region) ||
        strcmp(p->type, "Consumption") || strcmp(p->unit, "1 Hour") ||
        strcmp(p->currency, "USD") || p->windows || p->low_priority ||
        p->spot != (market == TW_MARKET_SPOT))
      continue;
    if (now_ms > 0 && p->effective_ms > now_ms)
      continue; /* announced, not yet in force */
    if (!best || p->effective_ms > best->effective_ms)
      best = p;
  }
  if (best)
    *uusd = best->uusd;
  return best != NULL;
}

/* ---- Scheduled Events ---------------------------------------------------- */

int64_t tw_arm_http_date_ms(const char *s) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  char mon[4], wday[4], tz[4];
  int d, y, h, mi, se;
  if (!s ||
      sscanf(s, "%3s, %d %3s %d %d:%d:%d %3s", wday, &d, mon, &y, &h, &mi, &se,
             tz) != 8 ||
      strcmp(tz, "GMT"))
    return -1;
  const char *m = strstr(months, mon);
  if (!m || (m - months) % 3 || d < 1 || d > 31 || y < 1970 || y > 9999 ||
      h > 23 || mi > 59 || se > 60 || h < 0 || mi < 0 || se < 0)
    return -1;
  struct tm tm = {.tm_sec = se,
                  .tm_min = mi,
                  .tm_hour = h,
                  .tm_mday = d,
                  .tm_mon = (int)((m - months) / 3),
                  .tm_year = y - 1900};
  return (int64_t)timegm(&tm) * 1000;
}

enum tw_rc tw_arm_parse_scheduled_events(const char *body, size_t len,
                                         struct tw_arm_sched_event_list *out,
                                         int64_t *incarnation,
                                         struct tw_err *err) {
  const char *what = "scheduled events";
  json_t *root;
  enum tw_rc rc = load(body, len, what, &root, err);
  if (rc)
    return rc;
  size_t first = out->n; /* a failed parse leaves out as it was */
  json_t *inc = json_object_get(root, "DocumentIncarnation");
  if (incarnation)
    *incarnation = json_is_integer(inc) ? json_integer_value(inc) : 0;
  json_t *ev = json_object_get(root, "Events");
  size_t i, j;
  json_t *e, *r;
  if (!json_is_array(ev)) {
    rc = tw_err_set(err, TW_E_INVALID, "%s: /Events: expected an array", what);
    goto out;
  }
  json_array_foreach(ev, i, e) {
    struct tw_arm_sched_event base;
    tw_arm_sched_event_init(&base);
    if (!json_is_object(e)) {
      rc = tw_err_set(err, TW_E_INVALID, "%s: /Events/%zu: expected an object",
                      what, i);
      goto out;
    }
    if ((rc = str_at(e, "EventId", base.event_id, sizeof base.event_id, what,
                     err)) ||
        (rc = str_at(e, "EventType", base.type, sizeof base.type, what, err)) ||
        (rc = str_at(e, "EventStatus", base.status, sizeof base.status, what,
                     err)))
      goto out;
    char nb[48];
    if ((rc = str_at(e, "NotBefore", nb, sizeof nb, what, err)))
      goto out;
    if (*nb && (base.not_before_ms = tw_arm_http_date_ms(nb)) < 0) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "%s: /Events/%zu/NotBefore: expected an RFC 1123 date",
                      what, i);
      goto out;
    }
    json_t *res = json_object_get(e, "Resources");
    if (!json_is_array(res)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "%s: /Events/%zu/Resources: expected an array", what, i);
      goto out;
    }
    json_array_foreach(res, j, r) {
      struct tw_arm_sched_event one = base;
      if (!json_is_string(r) || !TW_SET(one.resource, json_string_value(r))) {
        rc = tw_err_set(err, TW_E_INVALID,
                        "%s: /Events/%zu/Resources/%zu: expected a name", what,
                        i, j);
        goto out;
      }
      tw_arm_sched_event_list_push(out, &one);
    }
  }
out:
  if (rc)
    out->n = first;
  json_decref(root);
  return rc;
}
