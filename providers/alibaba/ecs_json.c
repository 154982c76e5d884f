/* ecs_json.c - see ecs_json.h. */
#include "broker/base/units.h"
#include "providers/alibaba/ecs_json.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Products of two nano-scaled int64 values need 128 bits. */
__extension__ typedef __int128 ecs_i128;

/* ---- money ------------------------------------------------------------- */

bool tw_ecs_decimal_nano(const char *s, int64_t *out) {
  /* The base's decimal reader (one reader, one rounding rule), held to
   * what ECS writes: no sign, an exponent of at most 40 either way, at
   * most a billion units. */
  if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
    return false;
  const char *e = strpbrk(s, "eE");
  if (e) {
    char *end;
    long exp = strtol(e + 1, &end, 10);
    if (*end || end == e + 1 || exp > 40 || exp < -40)
      return false;
  }
  const char *end;
  int64_t v;
  enum tw_dec_rc rc =
      tw_dec_scaled(s, &end, TW_ECS_NANO, TW_DEC_BARE_POINT, &v);
  if ((rc != TW_DEC_OK && rc != TW_DEC_FRACTION) || *end ||
      v > (int64_t)TW_ECS_NANO * TW_ECS_NANO)
    return false;
  *out = v;
  return true;
}

enum tw_rc tw_ecs_to_uusd(int64_t amount_nano, int64_t rate_nano, int64_t *out,
                          struct tw_err *err) {
  if (amount_nano < 0 || rate_nano <= 0)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba price: negative amount or rate");
  /* nano * nano = 1e-18 USD; micro-USD is 1e12 of those. */
  int64_t v;
  if (!tw_units_div_round((ecs_i128)amount_nano * rate_nano, 1000000000000LL,
                          &v) ||
      v > TW_MODEL_PRICE_MAX_UUSD)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba price: above the largest price accepted");
  *out = v;
  return TW_OK;
}

int64_t tw_ecs_uusd_to_milli(int64_t uusd, int64_t rate_nano) {
  if (uusd <= 0 || rate_nano <= 0)
    return 0;
  /* uusd * 1e3 = nano-USD; / rate = units; * 1e3 = thousandths. */
  ecs_i128 v = (ecs_i128)uusd * 1000 * 1000 / rate_nano;
  return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The decimal text of a JSON number or string, as nano-units. */
static bool json_nano(const json_t *v, int64_t *out) {
  char text[64];
  if (json_is_string(v))
    return tw_ecs_decimal_nano(json_string_value(v), out);
  if (json_is_integer(v)) {
    snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
    return tw_ecs_decimal_nano(text, out);
  }
  if (!json_is_real(v))
    return false;
  double d = json_real_value(v);
  if (!(d >= 0) || d > 1e9)
    return false;
  /* The shortest text that reads back as d: the one the service wrote. */
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(text, sizeof text, "%.*g", prec, d);
    if (strtod(text, NULL) == d)
      break;
  }
  return tw_ecs_decimal_nano(text, out);
}

/* ---- document helpers -------------------------------------------------- */

static enum tw_rc load(const char *body, size_t len, const char *what,
                       json_t **root, struct tw_err *err) {
  *root = NULL;
  if (len > TW_ECS_JSON_MAX_BYTES)
    return tw_err_set(err, TW_E_TOOBIG, "alibaba %s: answer of %zu bytes", what,
                      len);
  json_error_t je;
  json_t *r = json_loadb(body ? body : "", len, 0, &je);
  if (!r)
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: malformed JSON: %s (line %d)", what, je.text,
                      je.line);
  if (!json_is_object(r)) {
    json_decref(r);
    return tw_err_set(err, TW_E_INVALID, "alibaba %s: not a JSON object", what);
  }
  *root = r;
  return TW_OK;
}

/* The array at obj.a.b (ECS wraps every list: {"Instances": {"Instance":
 * [...]}}).  *out NULL when absent; an object in place of the array is
 * taken as an array of one (the XML-to-JSON gateway does that for single
 * items).  TW_E_INVALID when something else is there. */
static enum tw_rc list_at(const json_t *obj, const char *a, const char *b,
                          json_t **out, bool *single, struct tw_err *err) {
  *out = NULL;
  *single = false;
  json_t *o = json_object_get(obj, a);
  if (!o || json_is_null(o))
    return TW_OK;
  if (!json_is_object(o))
    return tw_err_field(err, TW_E_INVALID, a, "alibaba: %s: not an object", a);
  json_t *l = json_object_get(o, b);
  if (!l || json_is_null(l))
    return TW_OK;
  if (json_is_object(l)) {
    *single = true;
    *out = l;
    return TW_OK;
  }
  if (!json_is_array(l))
    return tw_err_field(err, TW_E_INVALID, a, "alibaba: %s.%s: not a list", a,
                        b);
  *out = l;
  return TW_OK;
}

static size_t list_size(const json_t *l, bool single) {
  return !l ? 0 : single ? 1 : json_array_size(l);
}

static json_t *list_item(json_t *l, bool single, size_t i) {
  return single ? l : json_array_get(l, i);
}

/* A string member into out[size]: absent or null gives "", a number its
 * decimal text (ECS is loose about both); anything else, or too long, is
 * TW_E_INVALID naming where. */
static enum tw_rc get_str(const json_t *obj, const char *key, char *out,
                          size_t size, const char *where, struct tw_err *err) {
  out[0] = '\0';
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return TW_OK;
  char num[32];
  const char *s;
  if (json_is_string(v)) {
    s = json_string_value(v);
  } else if (json_is_integer(v)) {
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    s = num;
  } else if (json_is_boolean(v)) {
    s = json_is_true(v) ? "true" : "false";
  } else {
    return tw_err_field(err, TW_E_INVALID, key,
                        "alibaba %s: %s: expected a string", where, key);
  }
  if (strlen(s) >= size)
    return tw_err_field(err, TW_E_INVALID, key,
                        "alibaba %s: %s: longer than %zu bytes", where, key,
                        size - 1);
  memcpy(out, s, strlen(s) + 1);
  return TW_OK;
}

/* An integer member; def when absent.  Strings of digits are accepted. */
static enum tw_rc get_int(const json_t *obj, const char *key, int64_t def,
                          int64_t *out, const char *where, struct tw_err *err) {
  json_t *v = json_object_get(obj, key);
  *out = def;
  if (!v || json_is_null(v))
    return TW_OK;
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return TW_OK;
  }
  if (json_is_string(v)) {
    char *end;
    const char *s = json_string_value(v);
    long long n = strtoll(s, &end, 10);
    if (*s && !*end) {
      *out = n;
      return TW_OK;
    }
  }
  if (json_is_real(v) &&
      json_real_value(v) == (double)(int64_t)json_real_value(v)) {
    *out = (int64_t)json_real_value(v);
    return TW_OK;
  }
  return tw_err_field(err, TW_E_INVALID, key,
                      "alibaba %s: %s: expected an integer", where, key);
}

/* A money member as nano-units; def when absent. */
static enum tw_rc get_money(const json_t *obj, const char *key, int64_t def,
                            int64_t *out, const char *where,
                            struct tw_err *err) {
  json_t *v = json_object_get(obj, key);
  *out = def;
  if (!v || json_is_null(v))
    return TW_OK;
  if (!json_nano(v, out))
    return tw_err_field(err, TW_E_INVALID, key,
                        "alibaba %s: %s: expected a non-negative amount", where,
                        key);
  return TW_OK;
}

/* ---- errors ------------------------------------------------------------ */

static void cut_copy(char *dst, size_t size, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= size)
    n = size - 1;
  memcpy(dst, src ? src : "", n);
  dst[n] = '\0';
}

bool tw_ecs_parse_error(const char *body, size_t len,
                        struct tw_ecs_error *out) {
  memset(out, 0, sizeof *out);
  if (!body || len == 0 || len > TW_ECS_JSON_MAX_BYTES)
    return false;
  json_t *r = json_loadb(body, len, 0, NULL);
  if (!json_is_object(r)) {
    json_decref(r);
    return false;
  }
  json_t *code = json_object_get(r, "Code");
  json_t *ok = json_object_get(r, "Success");
  bool is_err = json_is_string(code) && *json_string_value(code) &&
                /* CloudMonitor puts "Code": "200" in its successes */
                strcmp(json_string_value(code), "200") && !json_is_true(ok);
  if (is_err) {
    cut_copy(out->code, sizeof out->code, json_string_value(code));
    cut_copy(out->message, sizeof out->message,
             json_string_value(json_object_get(r, "Message")));
    cut_copy(out->request_id, sizeof out->request_id,
             json_string_value(json_object_get(r, "RequestId")));
  }
  json_decref(r);
  return is_err;
}

struct code_class {
  const char *code;
  bool prefix; /* matches code and code.* */
  enum tw_rc rc;
};

/* ECS's error codes (API reference error tables, and the common errors of
 * the RPC gateway) and the class each means to the core.  Codes not
 * listed fall back on the HTTP status. */
static const struct code_class code_classes[] = {
    /* no stock of this offer now: the fallback strategy moves on */
    {"OperationDenied.NoStock", false, TW_E_CAPACITY},
    {"Zone.NotOnSale", false, TW_E_CAPACITY},
    {"OperationDenied.NoSpotStock", false, TW_E_CAPACITY},
    {"InvalidInstanceType.ZoneNotSupported", false, TW_E_CAPACITY},
    /* the market price is above the caller's limit */
    {"InvalidSpotPriceLimit.LowerThanPublicPrice", false, TW_E_CAPACITY},
    /* throttled, a server fault, or an instance not ready yet */
    {"Throttling", true, TW_E_RETRYABLE},
    {"ServiceUnavailable", true, TW_E_RETRYABLE},
    {"InternalError", true, TW_E_RETRYABLE},
    {"UnknownError", false, TW_E_RETRYABLE},
    {"IncorrectInstanceStatus.Initializing", false, TW_E_RETRYABLE},
    {"IdempotenceProcessing", false, TW_E_RETRYABLE},
    /* account limits */
    {"QuotaExceed", true, TW_E_QUOTA},
    {"QuotaExceeded", true, TW_E_QUOTA},
    {"OperationDenied.QuotaExceed", false, TW_E_QUOTA},
    /* credentials */
    {"InvalidAccessKeyId.NotFound", false, TW_E_AUTH},
    {"InvalidAccessKeyId.Inactive", false, TW_E_AUTH},
    {"InvalidAccessKeyId", false, TW_E_AUTH},
    {"SignatureDoesNotMatch", false, TW_E_AUTH},
    {"IncompleteSignature", false, TW_E_AUTH},
    {"InvalidTimeStamp.Expired", false, TW_E_AUTH},
    {"SignatureNonceUsed", false, TW_E_AUTH},
    {"InvalidSecurityToken.Expired", false, TW_E_AUTH},
    {"Forbidden.AccessKeyDisabled", false, TW_E_AUTH},
    {"Forbidden.RAM", false, TW_E_FORBIDDEN},
    /* describe/delete of an unknown id */
    {"InvalidInstanceId.NotFound", false, TW_E_NOTFOUND},
    {"Invalid.InstanceId.NotFound", false, TW_E_NOTFOUND},
    /* the client token was used before with other parameters */
    {"IdempotentParameterMismatch", false, TW_E_CONFLICT},
};

enum tw_rc tw_ecs_error_class(const char *code, long http_status) {
  for (size_t i = 0; code && i < sizeof code_classes / sizeof *code_classes;
       i++) {
    const struct code_class *c = &code_classes[i];
    size_t n = strlen(c->code);
    if (!strcmp(code, c->code) ||
        (c->prefix && !strncmp(code, c->code, n) && code[n] == '.'))
      return c->rc;
  }
  if (http_status >= 500 || http_status == 429)
    return TW_E_RETRYABLE;
  if (http_status == 401)
    return TW_E_AUTH;
  if (http_status == 403)
    return TW_E_FORBIDDEN;
  if (http_status == 404)
    return TW_E_NOTFOUND;
  return TW_E_INVALID;
}

enum tw_rc tw_ecs_response_error(const char *action, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err) {
  struct tw_ecs_error e;
  if (tw_ecs_parse_error(body, len, &e)) {
    enum tw_rc rc = tw_ecs_error_class(e.code, http_status);
    if (err && err->rc == TW_OK)
      tw_err_detail(err, e.code);
    return tw_err_set(err, rc, "%s: %s: %s", action, e.code,
                      *e.message ? e.message : "(no message)");
  }
  enum tw_rc rc = tw_ecs_error_class(NULL, http_status);
  if (err && err->rc == TW_OK) {
    char detail[32];
    snprintf(detail, sizeof detail, "HTTP %ld", http_status);
    tw_err_detail(err, detail);
  }
  return tw_err_set(err, rc, "%s: HTTP %ld without an error document", action,
                    http_status);
}

/* ---- instances --------------------------------------------------------- */

enum tw_rc tw_ecs_parse_run(const char *body, size_t len, char ***ids,
                            size_t *n_ids, int64_t *trade_nano,
                            struct tw_err *err) {
  json_t *r;
  *ids = NULL;
  *n_ids = 0;
  if (trade_nano)
    *trade_nano = -1;
  enum tw_rc rc = load(body, len, "RunInstances", &r, err);
  if (rc)
    return rc;
  json_t *l;
  bool single;
  if ((rc = list_at(r, "InstanceIdSets", "InstanceIdSet", &l, &single, err)))
    goto out;
  size_t n = list_size(l, single);
  if (n)
    *ids = tw_calloc(n, sizeof **ids);
  for (size_t i = 0; i < n; i++) {
    json_t *v = list_item(l, single, i);
    if (!json_is_string(v) || !*json_string_value(v) ||
        json_string_length(v) >= TW_MODEL_ID_MAX) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba RunInstances: InstanceIdSet[%zu]: expected "
                      "an instance id",
                      i);
      goto out;
    }
    (*ids)[(*n_ids)++] = tw_strdup(json_string_value(v));
  }
  if (trade_nano &&
      (rc = get_money(r, "TradePrice", -1, trade_nano, "RunInstances", err)))
    goto out;
out:
  if (rc) {
    for (size_t i = 0; i < *n_ids; i++)
      free((*ids)[i]);
    free(*ids);
    *ids = NULL;
    *n_ids = 0;
  }
  json_decref(r);
  return rc;
}

int64_t tw_ecs_parse_time(const char *s) {
  int y, mo, d, h, mi, se = 0, n = 0;
  if (!s)
    return -1;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) ==
          6 &&
      n && !s[n]) {
    /* with seconds */
  } else {
    n = 0;
    se = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &n) != 5 ||
        !n || s[n])
      return -1;
  }
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
      mi > 59 || se > 60 || h < 0 || mi < 0 || se < 0)
    return -1;
  struct tm tm = {.tm_year = y - 1900,
                  .tm_mon = mo - 1,
                  .tm_mday = d,
                  .tm_hour = h,
                  .tm_min = mi,
                  .tm_sec = se};
  return (int64_t)timegm(&tm) * 1000;
}

static enum tw_instance_state ecs_state(const char *s) {
  if (!strcmp(s, "Pending") || !strcmp(s, "Starting"))
    return TW_INST_PENDING;
  if (!strcmp(s, "Running"))
    return TW_INST_RUNNING;
  if (!strcmp(s, "Stopping"))
    return TW_INST_STOPPING;
  if (!strcmp(s, "Stopped"))
    return TW_INST_STOPPED;
  return TW_INST_UNKNOWN;
}

/* The first address of obj.a.IpAddress (a list, or a plain string as in
 * EipAddress). */
static enum tw_rc first_ip(const json_t *obj, const char *a, char *out,
                           size_t size, struct tw_err *err) {
  json_t *o = json_object_get(obj, a);
  if (!json_is_object(o))
    return TW_OK;
  json_t *l = json_object_get(o, "IpAddress");
  json_t *v = json_is_array(l) ? json_array_get(l, 0) : l;
  if (!v || !json_is_string(v) || !*json_string_value(v))
    return TW_OK;
  if (json_string_length(v) >= size)
    return tw_err_field(err, TW_E_INVALID, a,
                        "alibaba DescribeInstances: %s: address too long", a);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return TW_OK;
}

static enum tw_rc one_instance(json_t *it, struct tw_instance *in,
                               struct tw_err *err) {
  static const char W[] = "DescribeInstances";
  char status[32], spot[32], created[40];
  enum tw_rc rc;
  if (!json_is_object(it))
    return tw_err_set(err, TW_E_INVALID,
                      "alibaba DescribeInstances: an instance is not an "
                      "object");
  if ((rc = get_str(it, "InstanceId", in->id, sizeof in->id, W, err)) ||
      (rc = get_str(it, "RegionId", in->region, sizeof in->region, W, err)) ||
      (rc = get_str(it, "ZoneId", in->zone, sizeof in->zone, W, err)) ||
      (rc = get_str(it, "InstanceType", in->instance_type,
                    sizeof in->instance_type, W, err)) ||
      (rc = get_str(it, "Status", status, sizeof status, W, err)) ||
      (rc = get_str(it, "SpotStrategy", spot, sizeof spot, W, err)) ||
      (rc = get_str(it, "CreationTime", created, sizeof created, W, err)))
    return rc;
  if (!in->id[0])
    return tw_err_field(err, TW_E_INVALID, "InstanceId",
                        "alibaba DescribeInstances: an instance without "
                        "InstanceId");
  TW_SET(in->provider_state, status);
  in->state = ecs_state(status);
  in->market =
      spot[0] && strcmp(spot, "NoSpot") ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
  int64_t t = tw_ecs_parse_time(created);
  in->launched_ms = t > 0 ? t : 0;
  /* billing: from StartTime (the last start), else CreationTime */
  char started[40] = "";
  if ((rc = get_str(it, "StartTime", started, sizeof started, W, err)))
    return rc;
  int64_t st = started[0] ? tw_ecs_parse_time(started) : 0;
  if (in->state != TW_INST_PENDING && in->state != TW_INST_UNKNOWN)
    in->running_ms = st > 0 ? st : in->launched_ms;
  json_t *locks;
  bool single;
  if ((rc = list_at(it, "OperationLocks", "LockReason", &locks, &single, err)))
    return rc;
  if (list_size(locks, single)) {
    json_t *l = list_item(locks, single, 0);
    char reason[64];
    if (json_is_object(l) &&
        (rc = get_str(l, "LockReason", reason, sizeof reason, W, err)))
      return rc;
    if (json_is_object(l))
      TW_SET(in->state_reason, reason);
  }
  if ((rc = first_ip(it, "VpcAttributes", in->private_ip, sizeof in->private_ip,
                     err)))
    return rc;
  json_t *vpc = json_object_get(it, "VpcAttributes");
  if (json_is_object(vpc) &&
      (rc = first_ip(vpc, "PrivateIpAddress", in->private_ip,
                     sizeof in->private_ip, err)))
    return rc;
  if (!in->private_ip[0] && (rc = first_ip(it, "InnerIpAddress", in->private_ip,
                                           sizeof in->private_ip, err)))
    return rc;
  if ((rc = first_ip(it, "PublicIpAddress", in->public_ip, sizeof in->public_ip,
                     err)))
    return rc;
  if (!in->public_ip[0] && (rc = first_ip(it, "EipAddress", in->public_ip,
                                          sizeof in->public_ip, err)))
    return rc;
  json_t *tags;
  if ((rc = list_at(it, "Tags", "Tag", &tags, &single, err)))
    return rc;
  for (size_t i = 0; i < list_size(tags, single); i++) {
    json_t *tg = list_item(tags, single, i);
    if (!json_is_object(tg))
      continue;
    const char *k = json_string_value(json_object_get(tg, "TagKey"));
    const char *v = json_string_value(json_object_get(tg, "TagValue"));
    char *dst = NULL;
    size_t size = 0;
    if (k && !strcmp(k, TW_TAG_JOB))
      dst = in->job_id, size = sizeof in->job_id;
    else if (k && !strcmp(k, TW_TAG_ATTEMPT))
      dst = in->attempt_id, size = sizeof in->attempt_id;
    else if (k && !strcmp(k, TW_TAG_TENANT))
      dst = in->tenant, size = sizeof in->tenant;
    if (dst && !tw_model_set(dst, size, v))
      return tw_err_field(err, TW_E_INVALID, k,
                          "alibaba DescribeInstances: tag %s: value too "
                          "long",
                          k);
  }
  return TW_OK;
}

enum tw_rc tw_ecs_parse_instances(const char *body, size_t len,
                                  struct tw_instance_list *out,
                                  struct tw_ecs_page *page,
                                  struct tw_err *err) {
  json_t *r;
  enum tw_rc rc = load(body, len, "DescribeInstances", &r, err);
  if (rc)
    return rc;
  struct tw_ecs_page pg;
  memset(&pg, 0, sizeof pg);
  json_t *l;
  bool single;
  size_t first = out->n;
  if ((rc = get_int(r, "TotalCount", -1, &pg.total_count, "DescribeInstances",
                    err)) ||
      (rc = get_int(r, "PageNumber", 0, &pg.page_number, "DescribeInstances",
                    err)) ||
      (rc = get_int(r, "PageSize", 0, &pg.page_size, "DescribeInstances",
                    err)) ||
      (rc = get_str(r, "NextToken", pg.next_token, sizeof pg.next_token,
                    "DescribeInstances", err)) ||
      (rc = list_at(r, "Instances", "Instance", &l, &single, err)))
    goto out;
  for (size_t i = 0; i < list_size(l, single); i++) {
    struct tw_instance *in = tw_instance_list_add(out);
    if ((rc = one_instance(list_item(l, single, i), in, err)))
      goto out;
  }
  if (page)
    *page = pg;
out:
  if (rc)
    out->n = first;
  json_decref(r);
  return rc;
}

/* ---- offers' ingredients ----------------------------------------------- */

enum tw_rc tw_ecs_parse_spot_prices(const char *body, size_t len,
                                    struct tw_ecs_spot_price_list *out,
                                    int64_t *next_offset, char currency[8],
                                    struct tw_err *err) {
  static const char W[] = "DescribeSpotPriceHistory";
  json_t *r;
  if (next_offset)
    *next_offset = 0;
  if (currency)
    currency[0] = '\0';
  enum tw_rc rc = load(body, len, W, &r, err);
  if (rc)
    return rc;
  size_t first = out->n;
  json_t *l;
  bool single;
  int64_t next = 0;
  char cur[8];
  if ((rc = get_int(r, "NextOffset", 0, &next, W, err)) ||
      (rc = get_str(r, "Currency", cur, sizeof cur, W, err)) ||
      (rc = list_at(r, "SpotPrices", "SpotPriceType", &l, &single, err)))
    goto out;
  for (size_t i = 0; i < list_size(l, single); i++) {
    json_t *it = list_item(l, single, i);
    struct tw_ecs_spot_price *s = tw_ecs_spot_price_list_add(out);
    char ts[40];
    if (!json_is_object(it)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: item %zu: not an "
                      "object",
                      W, i);
      goto out;
    }
    if ((rc = get_str(it, "InstanceType", s->instance_type,
                      sizeof s->instance_type, W, err)) ||
        (rc = get_str(it, "ZoneId", s->zone, sizeof s->zone, W, err)) ||
        (rc = get_str(it, "Timestamp", ts, sizeof ts, W, err)) ||
        (rc = get_money(it, "SpotPrice", -1, &s->price_nano, W, err)) ||
        (rc = get_money(it, "OriginPrice", -1, &s->origin_nano, W, err)))
      goto out;
    s->timestamp_ms = tw_ecs_parse_time(ts);
    if (s->price_nano < 0 || s->timestamp_ms < 0 || !s->instance_type[0]) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: item %zu: needs InstanceType, SpotPrice "
                      "and Timestamp",
                      W, i);
      goto out;
    }
  }
  if (next_offset)
    *next_offset = next < 0 ? 0 : next;
  if (currency)
    memcpy(currency, cur, sizeof cur);
out:
  if (rc)
    out->n = first;
  json_decref(r);
  return rc;
}

enum tw_rc tw_ecs_parse_price(const char *body, size_t len,
                              struct tw_ecs_price *out, struct tw_err *err) {
  static const char W[] = "DescribePrice";
  json_t *r;
  memset(out, 0, sizeof *out);
  enum tw_rc rc = load(body, len, W, &r, err);
  if (rc)
    return rc;
  json_t *pi = json_object_get(r, "PriceInfo");
  json_t *p = json_is_object(pi) ? json_object_get(pi, "Price") : NULL;
  if (!json_is_object(p)) {
    rc = tw_err_field(err, TW_E_INVALID, "PriceInfo",
                      "alibaba %s: no PriceInfo.Price", W);
    goto out;
  }
  if ((rc = get_str(p, "Currency", out->currency, sizeof out->currency, W,
                    err)) ||
      (rc = get_money(p, "OriginalPrice", -1, &out->original_nano, W, err)) ||
      (rc = get_money(p, "DiscountPrice", 0, &out->discount_nano, W, err)) ||
      (rc = get_money(p, "TradePrice", -1, &out->trade_nano, W, err)))
    goto out;
  if (out->trade_nano < 0)
    rc = tw_err_field(err, TW_E_INVALID, "TradePrice",
                      "alibaba %s: no TradePrice", W);
out:
  json_decref(r);
  return rc;
}

enum tw_rc tw_ecs_parse_available(const char *body, size_t len,
                                  const char *type,
                                  struct tw_ecs_stock_list *out,
                                  struct tw_err *err) {
  static const char W[] = "DescribeAvailableResource";
  json_t *r;
  enum tw_rc rc = load(body, len, W, &r, err);
  if (rc)
    return rc;
  size_t first = out->n;
  json_t *zones;
  bool zs;
  if ((rc = list_at(r, "AvailableZones", "AvailableZone", &zones, &zs, err)))
    goto out;
  for (size_t z = 0; z < list_size(zones, zs); z++) {
    json_t *zo = list_item(zones, zs, z);
    char zone[TW_MODEL_NAME_MAX], zstatus[32];
    if (!json_is_object(zo))
      continue;
    if ((rc = get_str(zo, "ZoneId", zone, sizeof zone, W, err)) ||
        (rc = get_str(zo, "Status", zstatus, sizeof zstatus, W, err)))
      goto out;
    json_t *res;
    bool rs;
    if ((rc = list_at(zo, "AvailableResources", "AvailableResource", &res, &rs,
                      err)))
      goto out;
    for (size_t a = 0; a < list_size(res, rs); a++) {
      json_t *ar = list_item(res, rs, a);
      char t[48];
      if (!json_is_object(ar))
        continue;
      if ((rc = get_str(ar, "Type", t, sizeof t, W, err)))
        goto out;
      if (strcmp(t, type))
        continue;
      json_t *sup;
      bool ss;
      if ((rc = list_at(ar, "SupportedResources", "SupportedResource", &sup,
                        &ss, err)))
        goto out;
      for (size_t k = 0; k < list_size(sup, ss); k++) {
        json_t *it = list_item(sup, ss, k);
        char st[32];
        if (!json_is_object(it))
          continue;
        struct tw_ecs_stock *s = tw_ecs_stock_list_add(out);
        TW_SET(s->zone, zone);
        if ((rc = get_str(it, "Value", s->value, sizeof s->value, W, err)) ||
            (rc = get_str(it, "Status", st, sizeof st, W, err)) ||
            (rc = get_str(it, "StatusCategory", s->category, sizeof s->category,
                          W, err)))
          goto out;
        s->available = !strcmp(st, "Available") &&
                       (!zstatus[0] || !strcmp(zstatus, "Available"));
      }
    }
  }
out:
  if (rc)
    out->n = first;
  json_decref(r);
  return rc;
}

void tw_ecs_accel_name(const char *spec, int64_t memory_mib, char *out,
                       size_t out_size) {
  char buf[64];
  size_t n = 0;
  const char *s = spec ? spec : "";
  static const char *const vendors[] = {"NVIDIA ", "Nvidia ", "AMD ", NULL};
  for (const char *const *v = vendors; *v; v++)
    if (!strncmp(s, *v, strlen(*v))) {
      s += strlen(*v);
      break;
    }
  for (; *s && n + 1 < sizeof buf; s++)
    if (*s != ' ' && *s != '*')
      buf[n++] = *s;
  buf[n] = '\0';
  if (!strcmp(buf, "A100") && memory_mib >= 80 * 1024)
    snprintf(buf, sizeof buf, "A100-80GB");
  else if (!strcmp(buf, "V100") && memory_mib >= 32 * 1024)
    snprintf(buf, sizeof buf, "V100-32GB");
  snprintf(out, out_size, "%s", buf);
}

enum tw_rc tw_ecs_parse_instance_types(const char *body, size_t len,
                                       struct tw_ecs_itype_list *out,
                                       char next_token[256],
                                       struct tw_err *err) {
  static const char W[] = "DescribeInstanceTypes";
  json_t *r;
  if (next_token)
    next_token[0] = '\0';
  enum tw_rc rc = load(body, len, W, &r, err);
  if (rc)
    return rc;
  size_t first = out->n;
  json_t *l;
  bool single;
  char next[256];
  if ((rc = get_str(r, "NextToken", next, sizeof next, W, err)) ||
      (rc = list_at(r, "InstanceTypes", "InstanceType", &l, &single, err)))
    goto out;
  for (size_t i = 0; i < list_size(l, single); i++) {
    json_t *it = list_item(l, single, i);
    if (!json_is_object(it)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: item %zu: not an "
                      "object",
                      W, i);
      goto out;
    }
    struct tw_ecs_itype *t = tw_ecs_itype_list_add(out);
    char arch[16], gpu[64];
    int64_t vcpus, gpus, mem_nano, gmem_nano;
    if ((rc = get_str(it, "InstanceTypeId", t->name, sizeof t->name, W, err)) ||
        (rc = get_str(it, "CpuArchitecture", arch, sizeof arch, W, err)) ||
        (rc = get_str(it, "GPUSpec", gpu, sizeof gpu, W, err)) ||
        (rc = get_int(it, "CpuCoreCount", 0, &vcpus, W, err)) ||
        (rc = get_int(it, "GPUAmount", 0, &gpus, W, err)) ||
        (rc = get_money(it, "MemorySize", 0, &mem_nano, W, err)) ||
        (rc = get_money(it, "GPUMemorySize", 0, &gmem_nano, W, err)))
      goto out;
    if (!t->name[0] || vcpus < 0 || vcpus > INT_MAX || gpus < 0 ||
        gpus > INT_MAX) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: item %zu: needs InstanceTypeId and "
                      "counts >= 0",
                      W, i);
      goto out;
    }
    t->vcpus = (int)vcpus;
    t->accel_count = (int)gpus;
    /* GiB (possibly fractional) to MiB. */
    t->memory_mib =
        (int64_t)(((ecs_i128)mem_nano * 1024 + TW_ECS_NANO / 2) / TW_ECS_NANO);
    t->accel_memory_mib =
        (int64_t)(((ecs_i128)gmem_nano * 1024 + TW_ECS_NANO / 2) / TW_ECS_NANO);
    t->arch = !strcasecmp(arch, "ARM")   ? TW_ARCH_ARM64
              : !strcasecmp(arch, "X86") ? TW_ARCH_X86_64
                                         : TW_ARCH_ANY;
    if (gpus > 0 && gpu[0])
      tw_ecs_accel_name(gpu, t->accel_memory_mib, t->accel_name,
                        sizeof t->accel_name);
  }
  if (next_token)
    memcpy(next_token, next, sizeof next);
out:
  if (rc)
    out->n = first;
  json_decref(r);
  return rc;
}

/* ---- spot reclaim notices ---------------------------------------------- */

enum tw_rc tw_ecs_parse_reclaim_events(const char *body, size_t len,
                                       struct tw_ecs_notice_list *out,
                                       struct tw_err *err) {
  static const char W[] = "DescribeSystemEventAttribute";
  json_t *r;
  enum tw_rc rc = load(body, len, W, &r, err);
  if (rc)
    return rc;
  size_t first = out->n;
  json_t *l;
  bool single;
  if ((rc = list_at(r, "SystemEvents", "SystemEvent", &l, &single, err)))
    goto out;
  for (size_t i = 0; i < list_size(l, single); i++) {
    json_t *ev = list_item(l, single, i);
    char name[96], res[256];
    int64_t t;
    if (!json_is_object(ev))
      continue;
    if ((rc = get_str(ev, "Name", name, sizeof name, W, err)) ||
        (rc = get_str(ev, "ResourceId", res, sizeof res, W, err)) ||
        (rc = get_int(ev, "Time", -1, &t, W, err)))
      goto out;
    if (strcmp(name, TW_ECS_RECLAIM_EVENT))
      continue;
    struct tw_ecs_notice *n = tw_ecs_notice_list_add(out);
    n->time_ms = t;
    /* Content is a JSON text inside a string:
     * "{\"action\":\"delete\",\"instanceId\":\"i-...\"}". */
    json_t *c = json_object_get(ev, "Content");
    json_t *cj = json_is_string(c)   ? json_loads(json_string_value(c), 0, NULL)
                 : json_is_object(c) ? json_incref(c)
                                     : NULL;
    if (json_is_object(cj)) {
      TW_SET(n->action, json_string_value(json_object_get(cj, "action")));
      TW_SET(n->instance_id,
             json_string_value(json_object_get(cj, "instanceId")));
    }
    json_decref(cj);
    const char *slash = strstr(res, "instance/");
    if (!n->instance_id[0] && slash)
      TW_SET(n->instance_id, slash + strlen("instance/"));
    if (!n->instance_id[0] || t < 0) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "alibaba %s: event %zu: no instance or no Time", W, i);
      goto out;
    }
  }
out:
  if (rc)
    out->n = first;
  json_decref(r);
  return rc;
}
