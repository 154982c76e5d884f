/* alibaba_req.c - see alibaba_req.h. */
#include "tests/fakecloud/alibaba_req.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "broker/base/model.h"
#include "providers/alibaba/ali_sign.h"
#include "providers/alibaba/ecs_json.h"

static enum tw_rc fail(struct tw_err *err, enum tw_rc rc, const char *code,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum tw_rc fail(struct tw_err *err, enum tw_rc rc, const char *code,
                       const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err && err->rc == TW_OK)
    tw_err_detail(err, code);
  return tw_err_set(err, rc, "%s", msg);
}

static bool is_form(const struct fc_request *req) {
  const char *ct = fc_header(req, "Content-Type");
  return ct && !strncasecmp(ct, "application/x-www-form-urlencoded", 33);
}

/* Whether the raw key=value text s[0..len) has one of the keys. */
static bool has_key(const char *s, size_t len, const char *const *keys) {
  size_t i = 0;
  while (s && i < len) {
    size_t e = i;
    while (e < len && s[e] != '&')
      e++;
    size_t k = i;
    while (k < e && s[k] != '=')
      k++;
    for (const char *const *w = keys; *w; w++)
      if (strlen(*w) == k - i && !memcmp(s + i, *w, k - i))
        return true;
    i = e + 1;
  }
  return false;
}

/* Whether s[0..len) has the exact pair key=value (raw, as sent). */
static bool has_pair(const char *s, size_t len, const char *pair) {
  size_t n = strlen(pair);
  for (size_t i = 0; s && i + n <= len; i++)
    if ((i == 0 || s[i - 1] == '&') && !memcmp(s + i, pair, n) &&
        (i + n == len || s[i + n] == '&'))
      return true;
  return false;
}

/* EC2's own query signature (version 2: AWSAccessKeyId, SignatureVersion=2)
 * or EC2's API version: such a request is EC2's even though it carries
 * SignatureVersion and SignatureMethod like Alibaba's legacy form. */
static bool is_ec2_query(const char *s, size_t len) {
  static const char *const ec2_keys[] = {"AWSAccessKeyId", NULL};
  return has_key(s, len, ec2_keys) || has_pair(s, len, "SignatureVersion=2") ||
         has_pair(s, len, "Version=2016-11-15");
}

bool fc_ali_claims(const struct fc_request *req) {
  static const char *const keys[] = {"SignatureVersion", "SignatureMethod",
                                     "AccessKeyId", NULL};
  if (strcmp(req->raw_path, "/") && req->raw_path[0])
    return false;
  const char *authz = fc_header(req, "Authorization");
  if (fc_header(req, "x-acs-action") || fc_header(req, "x-acs-version") ||
      (authz && !strncmp(authz, "ACS3-", 5)))
    return true;
  if (authz && !strncmp(authz, "AWS4-", 5))
    return false; /* SigV4: EC2's */
  size_t qlen = req->raw_query ? strlen(req->raw_query) : 0;
  bool form = is_form(req);
  if ((qlen && is_ec2_query(req->raw_query, qlen)) ||
      (form && is_ec2_query(req->body, req->body_len)))
    return false;
  if (qlen && has_key(req->raw_query, qlen, keys))
    return true;
  return form && has_key(req->body, req->body_len, keys);
}

void fc_ali_call_init(struct fc_ali_call *c) {
  memset(c, 0, sizeof *c);
  fc_params_init(&c->p);
}

void fc_ali_call_release(struct fc_ali_call *c) { fc_params_release(&c->p); }

static bool copy(char *dst, size_t size, const char *src) {
  return src && tw_model_set(dst, size, src);
}

enum tw_rc fc_ali_decode(const struct fc_request *req, struct fc_ali_call *c,
                         struct tw_err *err) {
  enum tw_rc rc;
  if ((req->raw_query && (rc = fc_params_parse(&c->p, req->raw_query,
                                               strlen(req->raw_query), err))) ||
      (is_form(req) && req->body_len &&
       (rc = fc_params_parse(&c->p, req->body, req->body_len, err))))
    return rc;
  const char *authz = fc_header(req, "Authorization");
  c->acs3 = authz && !strncmp(authz, "ACS3-", 5);
  const char *action, *version, *t;
  if (c->acs3) {
    struct tw_ali_acs3_authz az;
    if ((rc = tw_ali_acs3_parse_authz(authz, &az, err)))
      return rc;
    copy(c->access_key, sizeof c->access_key, az.access_key);
    action = fc_header(req, "x-acs-action");
    version = fc_header(req, "x-acs-version");
    t = fc_header(req, "x-acs-date");
    const char *n = fc_header(req, "x-acs-signature-nonce");
    if (!action || !version || !t || !n)
      return fail(err, TW_E_AUTH, "IncompleteSignature",
                  "The request signature does not conform to Aliyun "
                  "standards: x-acs-action, x-acs-version, x-acs-date and "
                  "x-acs-signature-nonce are required.");
    if (!copy(c->nonce, sizeof c->nonce, n))
      return fail(err, TW_E_INVALID, "InvalidParameter",
                  "The specified x-acs-signature-nonce is too long.");
    c->xml = false;
  } else {
    const char *ak = fc_params_get(&c->p, "AccessKeyId");
    const char *sm = fc_params_get(&c->p, "SignatureMethod");
    const char *sv = fc_params_get(&c->p, "SignatureVersion");
    const char *n = fc_params_get(&c->p, "SignatureNonce");
    const char *fmt = fc_params_get(&c->p, "Format");
    action = fc_params_get(&c->p, "Action");
    version = fc_params_get(&c->p, "Version");
    t = fc_params_get(&c->p, "Timestamp");
    c->xml = !fmt || !strcasecmp(fmt, "XML");
    if (fmt && strcasecmp(fmt, "XML") && strcasecmp(fmt, "JSON"))
      return fail(err, TW_E_INVALID, "InvalidParameter.Format",
                  "The specified parameter Format is not valid.");
    if (!ak || !*ak)
      return fail(err, TW_E_AUTH, "MissingAccessKeyId",
                  "AccessKeyId is mandatory for this action.");
    if (!fc_params_get(&c->p, "Signature") || !sm || !sv || !n)
      return fail(err, TW_E_AUTH, "IncompleteSignature",
                  "The request signature does not conform to Aliyun "
                  "standards.");
    if (strcmp(sm, "HMAC-SHA1"))
      return fail(err, TW_E_AUTH, "UnsupportedSignatureMethod",
                  "The specified SignatureMethod is not supported.");
    if (strcmp(sv, "1.0"))
      return fail(err, TW_E_AUTH, "UnsupportedSignatureVersion",
                  "The specified SignatureVersion is not supported.");
    if (!copy(c->access_key, sizeof c->access_key, ak) ||
        !copy(c->nonce, sizeof c->nonce, n))
      return fail(err, TW_E_INVALID, "InvalidParameter",
                  "AccessKeyId or SignatureNonce is too long.");
    if (!t)
      return fail(err, TW_E_INVALID, "MissingParameter",
                  "The input parameter \"Timestamp\" that is mandatory for "
                  "processing this request is not supplied.");
  }
  if (!action || !*action)
    return fail(err, TW_E_INVALID, "MissingParameter",
                "The input parameter \"Action\" that is mandatory for "
                "processing this request is not supplied.");
  if (!version || !*version)
    return fail(err, TW_E_INVALID, "MissingParameter",
                "The input parameter \"Version\" that is mandatory for "
                "processing this request is not supplied.");
  if (!copy(c->action, sizeof c->action, action) ||
      !copy(c->version, sizeof c->version, version))
    return fail(err, TW_E_INVALID, "InvalidParameter",
                "Action or Version is too long.");
  c->time_ms = tw_ecs_parse_time(t);
  if (c->time_ms < 0)
    return fail(err, TW_E_INVALID, "InvalidTimeStamp.Format",
                "Specified time stamp or date value is not well formatted.");
  return TW_OK;
}

enum tw_rc fc_ali_verify(const struct fc_request *req,
                         const struct fc_ali_call *c, const char *secret,
                         int64_t now_ms, struct tw_err *err) {
  struct tw_ali_pair *v = tw_calloc(c->p.n + 1, sizeof *v);
  for (size_t i = 0; i < c->p.n; i++) {
    v[i].name = c->p.v[i].key;
    v[i].value = c->p.v[i].value;
  }
  enum tw_rc rc = TW_OK;
  if (!c->acs3) {
    char sig[32], *sts = NULL;
    rc = tw_ali_rpc_sign(req->method, v, c->p.n, secret, sig, &sts, err);
    if (rc == TW_OK && !tw_ali_equal(sig, fc_params_get(&c->p, "Signature")))
      rc = fail(err, TW_E_AUTH, "SignatureDoesNotMatch",
                "Specified signature is not matched with our calculation. "
                "server string to sign is:%.160s",
                sts);
    free(sts);
  } else {
    struct tw_ali_acs3_authz az;
    struct fc_params q;
    fc_params_init(&q);
    struct tw_ali_pair *qv = NULL;
    if ((rc = tw_ali_acs3_parse_authz(fc_header(req, "Authorization"), &az,
                                      err)))
      goto acs3_out;
    /* Only the query is canonicalized: a form body is covered by the
     * payload hash. */
    if (req->raw_query &&
        (rc = fc_params_parse(&q, req->raw_query, strlen(req->raw_query), err)))
      goto acs3_out;
    qv = tw_calloc(q.n + 1, sizeof *qv);
    for (size_t i = 0; i < q.n; i++) {
      qv[i].name = q.v[i].key;
      qv[i].value = q.v[i].value;
    }
    struct tw_ali_pair *h = tw_calloc(req->n_headers + 1, sizeof *h);
    for (size_t i = 0; i < req->n_headers; i++) {
      h[i].name = req->headers[i].name;
      h[i].value = req->headers[i].value;
    }
    char body_hash[65];
    tw_ali_sha256_hex(req->body, req->body_len, body_hash);
    const char *claimed = fc_header(req, "x-acs-content-sha256");
    if (!strstr(az.signed_headers, "host"))
      rc = fail(err, TW_E_AUTH, "IncompleteSignature",
                "The request signature does not conform to Aliyun "
                "standards: host must be signed.");
    else if (claimed && strcasecmp(claimed, body_hash))
      rc = fail(err, TW_E_AUTH, "SignatureDoesNotMatch",
                "The x-acs-content-sha256 header does not match the "
                "body.");
    struct tw_ali_acs3_request sr = {
        .method = req->method,
        .path = req->raw_path[0] ? req->raw_path : "/",
        .query = qv,
        .n_query = q.n,
        .headers = h,
        .n_headers = req->n_headers,
        .signed_headers = az.signed_headers,
        .payload_hash = claimed ? claimed : body_hash};
    struct tw_ali_acs3_result res;
    memset(&res, 0, sizeof res);
    if (rc == TW_OK &&
        (rc = tw_ali_acs3_sign(&sr, secret, &res, err)) == TW_OK &&
        !tw_ali_equal(res.signature, az.signature))
      rc = fail(err, TW_E_AUTH, "SignatureDoesNotMatch",
                "The request signature does not conform to Aliyun "
                "standards. server string to sign is:%.120s",
                res.string_to_sign);
    tw_ali_acs3_result_release(&res);
    free(h);
  acs3_out:
    free(qv);
    fc_params_release(&q);
  }
  free(v);
  if (rc == TW_OK && (c->time_ms > now_ms + FC_ALI_SKEW_MS ||
                      c->time_ms < now_ms - FC_ALI_SKEW_MS))
    rc = fail(err, TW_E_AUTH, "InvalidTimeStamp.Expired",
              "Specified time stamp or date value is expired.");
  return rc;
}

/* ---- XML --------------------------------------------------------------- */

static void xml_text(struct tw_buf *b, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '<')
      tw_buf_adds(b, "&lt;");
    else if (ch == '>')
      tw_buf_adds(b, "&gt;");
    else if (ch == '&')
      tw_buf_adds(b, "&amp;");
    else if (ch == '"')
      tw_buf_adds(b, "&quot;");
    else if (ch >= 0x20 || ch == '\t' || ch == '\n' || ch == '\r')
      tw_buf_addc(b, (char)ch);
  }
}

static void xml_value(struct tw_buf *b, const char *name, const json_t *v) {
  if (json_is_array(v)) {
    size_t i;
    const json_t *it;
    json_array_foreach(v, i, it) xml_value(b, name, it);
    return;
  }
  tw_buf_printf(b, "<%s>", name);
  if (json_is_object(v)) {
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m) xml_value(b, k, m);
  } else if (json_is_string(v)) {
    xml_text(b, json_string_value(v));
  } else if (json_is_integer(v)) {
    tw_buf_printf(b, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    tw_buf_adds(b, t ? t : "0");
    free(t);
  } else if (json_is_boolean(v)) {
    tw_buf_adds(b, json_is_true(v) ? "true" : "false");
  }
  tw_buf_printf(b, "</%s>", name);
}

void fc_ali_json_to_xml(struct tw_buf *b, const char *root, const json_t *v) {
  tw_buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  xml_value(b, root, v);
}

/* ---- RunInstances ------------------------------------------------------ */

bool fc_ali_milli_parse(const char *s, int64_t *out) {
  int64_t whole = 0, frac = 0;
  int nd = 0, nf = 0;
  const char *p = s;
  if (!s)
    return false;
  for (; isdigit((unsigned char)*p); p++, nd++) {
    whole = whole * 10 + (*p - '0');
    if (whole > 1000000000)
      return false;
  }
  if (*p == '.') {
    for (p++; isdigit((unsigned char)*p); p++, nf++) {
      if (nf >= 3) {
        if (*p != '0') /* ECS takes three decimals; trailing zeros pass */
          return false;
        continue;
      }
      frac = frac * 10 + (*p - '0');
    }
    if (nf == 0)
      return false;
  }
  if (*p || nd == 0)
    return false;
  for (int i = nf < 3 ? nf : 3; i < 3; i++)
    frac *= 10;
  *out = whole * 1000 + frac;
  return true;
}

static bool ascii_printable(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
      return false;
  return true;
}

static enum tw_rc missing(struct tw_err *err, const char *name) {
  return fail(err, TW_E_INVALID, "MissingParameter",
              "The input parameter \"%s\" that is mandatory for processing "
              "this request is not supplied.",
              name);
}

static bool int_param(const char *s, long lo, long hi, long *out) {
  char *end;
  if (!s || !*s)
    return false;
  long v = strtol(s, &end, 10);
  if (*end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

enum tw_rc fc_ali_parse_run(const struct fc_params *p, struct fc_ali_run *r,
                            struct tw_err *err) {
  memset(r, 0, sizeof *r);
  r->price_limit_milli = -1;
  r->spot_duration_h = 1;
  r->region = fc_params_get(p, "RegionId");
  r->zone = fc_params_get(p, "ZoneId");
  r->image = fc_params_get(p, "ImageId");
  r->itype = fc_params_get(p, "InstanceType");
  r->token = fc_params_get(p, "ClientToken");
  r->name = fc_params_get(p, "InstanceName");
  r->charge = fc_params_get(p, "InstanceChargeType");
  r->strategy = fc_params_get(p, "SpotStrategy");
  r->behavior = fc_params_get(p, "SpotInterruptionBehavior");
  if (!r->region || !*r->region)
    return missing(err, "RegionId");
  if (!r->image || !*r->image)
    return missing(err, "ImageId");
  if (!r->itype || !*r->itype)
    return missing(err, "InstanceType");
  if (!r->charge)
    r->charge = "PostPaid";
  if (strcmp(r->charge, "PostPaid") && strcmp(r->charge, "PrePaid"))
    return fail(err, TW_E_INVALID, "InvalidInstanceChargeType.NotFound",
                "The InstanceChargeType does not exist in our records");
  long v;
  const char *s = fc_params_get(p, "Amount");
  r->amount = 1;
  if (s) {
    if (!int_param(s, 1, 100, &v))
      return fail(err, TW_E_INVALID, "InvalidParameter.Amount",
                  "The specified parameter Amount is not valid: 1 to 100.");
    r->amount = (int)v;
  }
  s = fc_params_get(p, "MinAmount");
  r->min_amount = r->amount;
  if (s) {
    if (!int_param(s, 1, r->amount, &v))
      return fail(err, TW_E_INVALID, "InvalidParameter.MinAmount",
                  "The specified parameter MinAmount is not valid: 1 to "
                  "Amount.");
    r->min_amount = (int)v;
  }
  s = fc_params_get(p, "DryRun");
  r->dry_run = s && !strcasecmp(s, "true");
  if (r->token &&
      (!*r->token || strlen(r->token) > 64 || !ascii_printable(r->token)))
    return fail(err, TW_E_INVALID, "InvalidClientToken.ValueNotSupported",
                "The ClientToken provided is invalid: 1 to 64 ASCII "
                "characters.");
  if (!r->strategy)
    r->strategy = "NoSpot";
  if (strcmp(r->strategy, "NoSpot") &&
      strcmp(r->strategy, "SpotWithPriceLimit") &&
      strcmp(r->strategy, "SpotAsPriceGo"))
    return fail(err, TW_E_INVALID, "InvalidSpotStrategy",
                "The specified SpotStrategy is not valid.");
  r->spot = strcmp(r->strategy, "NoSpot") != 0;
  if (r->spot && !strcmp(r->charge, "PrePaid"))
    return fail(err, TW_E_INVALID, "InvalidSpotPrepaid",
                "The specified Spot type is not support PrePay Instance.");
  s = fc_params_get(p, "SpotPriceLimit");
  if (s) {
    if (!fc_ali_milli_parse(s, &r->price_limit_milli) ||
        r->price_limit_milli <= 0)
      return fail(err, TW_E_INVALID, "InvalidSpotPriceLimit",
                  "The specified SpotPriceLimitis not valid.");
  }
  if (!strcmp(r->strategy, "SpotWithPriceLimit") && r->price_limit_milli < 0)
    return fail(err, TW_E_INVALID, "InvalidSpotPriceLimit",
                "The specified SpotPriceLimitis not valid.");
  s = fc_params_get(p, "SpotDuration");
  if (s) {
    if (!int_param(s, 0, 6, &v))
      return fail(err, TW_E_INVALID, "InvalidSpotDuration",
                  "The specified SpotDuration is not valid.");
    r->spot_duration_h = (int)v;
  }
  if (!r->behavior)
    r->behavior = "Terminate";
  if (strcmp(r->behavior, "Terminate") && strcmp(r->behavior, "Stop"))
    return fail(err, TW_E_INVALID, "InvalidSpotInterruptionBehavior",
                "The specified SpotInterruptionBehavior is not valid.");
  if (r->spot && (!r->zone || !*r->zone))
    return fail(err, TW_E_INVALID, "InvalidSpotParam.EmptyZoneID",
                "The specified ZoneId is empty when SpotStrategy is set.");
  /* the system disk: a category of the enumeration, 20..2048 GiB (cloud:
   * 20..500), as RunInstances documents them */
  r->system_disk_category = fc_params_get(p, "SystemDisk.Category");
  static const char *const cats[] = {
      "cloud",      "cloud_efficiency", "cloud_ssd", "cloud_essd",
      "cloud_auto", "cloud_essd_entry", NULL};
  bool cat_ok = !r->system_disk_category;
  for (const char *const *c = cats; r->system_disk_category && *c && !cat_ok;
       c++)
    cat_ok = !strcmp(*c, r->system_disk_category);
  if (!cat_ok)
    return fail(err, TW_E_INVALID,
                "InvalidSystemDiskCategory.ValueNotSupported",
                "The specified parameter SystemDisk.Category is not valid.");
  const char *sds = fc_params_get(p, "SystemDisk.Size");
  if (sds) {
    char *end;
    long gb = strtol(sds, &end, 10);
    long max =
        r->system_disk_category && !strcmp(r->system_disk_category, "cloud")
            ? 500
            : 2048;
    if (*end || gb < 20 || gb > max)
      return fail(err, TW_E_INVALID, "InvalidSystemDiskSize.ValueNotSupported",
                  "The specified parameter SystemDisk.Size is out of the "
                  "range the category allows.");
    r->system_disk_gb = (int)gb;
  }
  r->ram_role = fc_params_get(p, "RamRoleName");
  if (r->ram_role && (!*r->ram_role || strlen(r->ram_role) > 64))
    return fail(err, TW_E_INVALID, "InvalidRamRole.NotEcsRole",
                "The specified ram role is not authorized for ecs.");
  const char *ud = fc_params_get(p, "UserData");
  r->user_data = ud;
  if (ud) {
    size_t n = strlen(ud);
    bool ok = n % 4 == 0 && n <= 32768;
    for (size_t i = 0; ok && i < n; i++)
      ok = isalnum((unsigned char)ud[i]) || ud[i] == '+' || ud[i] == '/' ||
           (ud[i] == '=' && i + 2 >= n);
    if (!ok)
      return fail(err, TW_E_INVALID, "InvalidUserData.Base64FormatInvalid",
                  "The specified UserData is not valid base64 of at most "
                  "32 KiB.");
  }
  int idx[FC_ALI_MAX_TAGS + 1];
  const char *bad = NULL;
  size_t n = fc_params_indexes(p, "Tag", idx, FC_ALI_MAX_TAGS + 1, &bad);
  if (bad || n > FC_ALI_MAX_TAGS)
    return fail(err, TW_E_INVALID, "InvalidParameter.TagCount",
                "Tag.N: N must be 1 to 20.");
  for (size_t i = 0; i < n; i++) {
    char kn[32], vn[32];
    snprintf(kn, sizeof kn, "Tag.%d.Key", idx[i]);
    snprintf(vn, sizeof vn, "Tag.%d.Value", idx[i]);
    const char *k = fc_params_get(p, kn), *val = fc_params_get(p, vn);
    if (!k || !*k || strlen(k) > 128 || !strncasecmp(k, "aliyun", 6) ||
        !strncasecmp(k, "acs:", 4) || strstr(k, "http://") ||
        strstr(k, "https://"))
      return fail(err, TW_E_INVALID, "InvalidTagKey.Malformed",
                  "The specified Tag.n.Key is not valid.");
    if (val && (strlen(val) > 128 || strstr(val, "http://") ||
                strstr(val, "https://")))
      return fail(err, TW_E_INVALID, "InvalidTagValue.Malformed",
                  "The specified Tag.n.Value is not valid.");
    for (size_t j = 0; j < r->n_tags; j++)
      if (!strcmp(r->tags[j].key, k))
        return fail(err, TW_E_INVALID, "InvalidParameter.TagKey.Duplicate",
                    "The Tag.N.Key contain duplicate key.");
    r->tags[r->n_tags].key = k;
    r->tags[r->n_tags].value = val ? val : "";
    r->n_tags++;
  }
  return TW_OK;
}

void fc_ali_strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

enum tw_rc fc_ali_id_array(const char *text, size_t max, char ***ids, size_t *n,
                           struct tw_err *err) {
  *ids = NULL;
  *n = 0;
  json_t *a = text ? json_loads(text, 0, NULL) : NULL;
  if (!json_is_array(a) || json_array_size(a) > max) {
    json_decref(a);
    return fail(err, TW_E_INVALID, "InvalidParameter",
                "The specified InstanceIds is not valid: a JSON array of at "
                "most %zu ids.",
                max);
  }
  *ids = tw_calloc(json_array_size(a) + 1, sizeof **ids);
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    if (!json_is_string(v) || json_string_length(v) > 64) {
      fc_ali_strv_free(*ids, *n);
      *ids = NULL;
      *n = 0;
      json_decref(a);
      return fail(err, TW_E_INVALID, "InvalidParameter",
                  "The specified InstanceIds is not valid.");
    }
    (*ids)[(*n)++] = tw_strdup(json_string_value(v));
  }
  json_decref(a);
  return TW_OK;
}
