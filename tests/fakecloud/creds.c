/* creds.c - the fake token and metadata endpoints the clouds' credential
 * chains call (docs/fakecloud.md#credentials):
 *
 *   POST /sts/                 AWS STS Query API 2011-06-15: AssumeRole
 *                              (SigV4, service sts) and
 *                              AssumeRoleWithWebIdentity (unsigned)
 *   PUT  /latest/api/token     IMDSv2 session token
 *   GET  /latest/meta-data/iam/security-credentials/[ROLE]
 *                              the EC2 instance role (IMDSv2 token needed)
 *   GET  /v2/credentials/ID    the ECS container endpoint (Authorization
 *                              checked when a token is set)
 *   GET  /latest/meta-data/ram/security-credentials/[ROLE]
 *                              the Alibaba ECS RAM role
 *
 * Every key issued is registered with the server (fc_issue_key) so the
 * EC2 and ECS fakes accept requests signed with it until it expires, the
 * session token checked too.  Control (/_fake/creds/): GET the counters,
 * POST {ttl_s, web_token, container_token, role, down, expire_all} to
 * change the answers. */
#include "tests/fakecloud/creds.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "providers/sigv4.h"
#include "tests/fakecloud/params.h"

#define STS_NS "https://sts.amazonaws.com/doc/2011-06-15/"
#define IMDS_TOKEN_MAX 8

struct creds {
  struct fc_server *s;
  int64_t ttl_s;        /* 0: as asked (DurationSeconds), IMDS 6 h */
  char web_token[2048]; /* "": any JWT-shaped token */
  char container_token[256];
  char role[64];
  bool down; /* every endpoint answers 503 */
  char imds_tokens[IMDS_TOKEN_MAX][64];
  int64_t imds_expires[IMDS_TOKEN_MAX];
  size_t n_imds;
  /* counters */
  int64_t assume_role, assume_web, imds, container, ram, rejected;
};

static void defaults(struct creds *c) {
  c->ttl_s = 0;
  c->web_token[0] = c->container_token[0] = '\0';
  snprintf(c->role, sizeof c->role, "%s", "tradewind-node");
  c->n_imds = 0;
  c->down = false;
  c->assume_role = c->assume_web = c->imds = c->container = c->ram = 0;
  c->rejected = 0;
}

static enum tw_rc creds_create(struct fc_server *s, void **ctx,
                               struct tw_err *err) {
  (void)err;
  struct creds *c = tw_calloc(1, sizeof *c);
  c->s = s;
  defaults(c);
  *ctx = c;
  return TW_OK;
}

static void creds_destroy(void *ctx) { free(ctx); }

static bool creds_claims(const struct fc_request *req) {
  const char *p = req->raw_path;
  return !strcmp(p, "/sts") || !strcmp(p, "/sts/") ||
         !strcmp(p, "/latest/api/token") ||
         !strncmp(p, "/latest/meta-data/iam/security-credentials", 42) ||
         !strncmp(p, "/latest/meta-data/ram/security-credentials", 42) ||
         !strncmp(p, "/v2/credentials/", 16);
}

static void iso(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A fresh key, registered with the server (fc_issued_mint). */
static void mint(struct creds *c, const char *prefix, int64_t ttl_s,
                 struct fc_issued *k) {
  fc_issued_mint(c->s, prefix, c->ttl_s ? c->ttl_s : ttl_s, k);
}

/* ---- STS ---------------------------------------------------------------- */

static void sts_error(struct creds *c, struct fc_response *resp, int status,
                      const char *code, const char *msg) {
  char id[40];
  c->rejected++;
  fc_request_id(c->s, id);
  resp->status = status;
  resp->content_type = "text/xml";
  tw_buf_printf(&resp->body,
                "<ErrorResponse xmlns=\"" STS_NS "\">\n  <Error>\n"
                "    <Type>Sender</Type>\n    <Code>%s</Code>\n"
                "    <Message>%s</Message>\n  </Error>\n"
                "  <RequestId>%s</RequestId>\n</ErrorResponse>\n",
                code, msg, id);
}

static const char *secret_cb(void *ctx, const char *ak) {
  return fc_secret_for(ctx, ak);
}

/* arn:aws:iam::123456789012:role/NAME; out: NAME. */
static bool role_arn_ok(const char *arn, char *name, size_t sz) {
  if (!arn || strncmp(arn, "arn:aws:iam::", 13))
    return false;
  const char *p = arn + 13;
  for (int i = 0; i < 12; i++)
    if (!isdigit((unsigned char)p[i]))
      return false;
  if (strncmp(p + 12, ":role/", 6) || !p[18])
    return false;
  const char *n = strrchr(p + 18, '/');
  snprintf(name, sz, "%s", n ? n + 1 : p + 18);
  return *name != '\0';
}

static bool session_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n < 2 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && !strchr("+=,.@-_", s[i]))
      return false;
  return true;
}

/* header.payload.signature, each base64url */
static bool jwt_shaped(const char *t) {
  int dots = 0;
  for (const char *p = t; *p; p++) {
    if (*p == '.')
      dots++;
    else if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
      return false;
  }
  return dots == 2 && *t != '.';
}

static void sts(struct creds *c, const struct fc_request *req,
                struct fc_response *resp) {
  struct fc_params p;
  struct tw_err err;
  tw_err_clear(&err);
  fc_params_init(&p);
  const char *ct = fc_header(req, "Content-Type");
  if (strcmp(req->method, "POST") || !ct ||
      strncasecmp(ct, "application/x-www-form-urlencoded", 33) ||
      fc_params_parse(&p, req->body, req->body_len, &err)) {
    sts_error(c, resp, 400, "InvalidAction",
              "Could not find operation for this request");
    goto out;
  }
  const char *action = fc_params_get(&p, "Action");
  const char *version = fc_params_get(&p, "Version");
  const char *arn = fc_params_get(&p, "RoleArn");
  const char *session = fc_params_get(&p, "RoleSessionName");
  const char *dur = fc_params_get(&p, "DurationSeconds");
  bool web = action && !strcmp(action, "AssumeRoleWithWebIdentity");
  char role[128], msg[512];
  if (!action || (!web && strcmp(action, "AssumeRole"))) {
    snprintf(msg, sizeof msg, "Could not find operation %.64s for version %s",
             action ? action : "", version ? version : "");
    sts_error(c, resp, 400, "InvalidAction", msg);
    goto out;
  }
  if (!version || strcmp(version, "2011-06-15")) {
    sts_error(c, resp, 400, "InvalidAction",
              "Could not find operation for version (expected 2011-06-15)");
    goto out;
  }
  if (!arn || !session) {
    snprintf(msg, sizeof msg,
             "1 validation error detected: Value null at '%s' failed to "
             "satisfy constraint: Member must not be null",
             !arn ? "roleArn" : "roleSessionName");
    sts_error(c, resp, 400, "ValidationError", msg);
    goto out;
  }
  if (!role_arn_ok(arn, role, sizeof role)) {
    snprintf(msg, sizeof msg, "%.128s is invalid", arn);
    sts_error(c, resp, 400, "ValidationError", msg);
    goto out;
  }
  if (!session_ok(session)) {
    sts_error(c, resp, 400, "ValidationError",
              "1 validation error detected: Value at 'roleSessionName' "
              "failed to satisfy constraint: Member must satisfy regular "
              "expression pattern: [\\w+=,.@-]*");
    goto out;
  }
  long d = 3600;
  if (dur) {
    char *end;
    d = strtol(dur, &end, 10);
    if (*end || d < 900 || d > 43200) {
      sts_error(c, resp, 400, "ValidationError",
                "1 validation error detected: Value at 'durationSeconds' "
                "failed to satisfy constraint: Member must have value "
                "greater than or equal to 900");
      goto out;
    }
  }
  if (web) {
    const char *tok = fc_params_get(&p, "WebIdentityToken");
    if (!tok || !*tok || fc_header(req, "Authorization")) {
      sts_error(c, resp, 400, "ValidationError",
                "1 validation error detected: Value null at "
                "'webIdentityToken' failed to satisfy constraint: Member "
                "must not be null");
      goto out;
    }
    if ((*c->web_token && strcmp(tok, c->web_token)) || !jwt_shaped(tok)) {
      sts_error(c, resp, 400, "InvalidIdentityToken",
                "The web identity token that was passed could not be "
                "validated by AWS. Get a new identity token from the "
                "identity provider and then retry the request.");
      goto out;
    }
  } else {
    struct tw_sigv4_header *h =
        tw_calloc(req->n_headers ? req->n_headers : 1, sizeof *h);
    for (size_t i = 0; i < req->n_headers; i++) {
      h[i].name = req->headers[i].name;
      h[i].value = req->headers[i].value;
    }
    struct tw_sigv4_request sr = {.method = req->method,
                                  .path = req->raw_path,
                                  .query = req->raw_query,
                                  .headers = h,
                                  .n_headers = req->n_headers,
                                  .body = req->body,
                                  .body_len = req->body_len};
    char *ak = NULL;
    enum tw_rc rc = tw_sigv4_verify(&sr, secret_cb, c->s, fc_now_ms(c->s),
                                    5 * 60 * 1000, "sts", &ak, &err);
    free(h);
    const char *why = NULL;
    if (rc == TW_OK)
      why = fc_issued_check(c->s, ak, fc_header(req, "X-Amz-Security-Token"));
    free(ak);
    if (rc) {
      sts_error(c, resp, 403,
                *err.detail ? err.detail : "SignatureDoesNotMatch", err.msg);
      goto out;
    }
    if (why) {
      sts_error(c, resp, 403, why,
                "The security token included in the "
                "request is expired or invalid.");
      goto out;
    }
  }
  struct fc_issued k;
  mint(c, "ASIA", d, &k);
  char exp[32], id[40];
  iso(k.expires_ms, exp);
  fc_request_id(c->s, id);
  if (web)
    c->assume_web++;
  else
    c->assume_role++;
  resp->status = 200;
  resp->content_type = "text/xml";
  tw_buf_printf(
      &resp->body,
      "<%sResponse xmlns=\"" STS_NS "\">\n  <%sResult>\n"
      "%s"
      "    <AssumedRoleUser>\n"
      "      <AssumedRoleId>AROAFAKE%.12s:%s</AssumedRoleId>\n"
      "      <Arn>arn:aws:sts::%.12s:assumed-role/%s/%s</Arn>\n"
      "    </AssumedRoleUser>\n"
      "    <Credentials>\n      <AccessKeyId>%s</AccessKeyId>\n"
      "      <SecretAccessKey>%s</SecretAccessKey>\n"
      "      <SessionToken>%s</SessionToken>\n"
      "      <Expiration>%s</Expiration>\n    </Credentials>\n"
      "    <PackedPolicySize>6</PackedPolicySize>\n"
      "  </%sResult>\n  <ResponseMetadata>\n    <RequestId>%s</RequestId>\n"
      "  </ResponseMetadata>\n</%sResponse>\n",
      action, action,
      web ? "    <SubjectFromWebIdentityToken>system:serviceaccount:"
            "default:tradewind</SubjectFromWebIdentityToken>\n"
            "    <Audience>sts.amazonaws.com</Audience>\n"
          : "",
      arn + 13, session, arn + 13, role, session, k.access_key, k.secret_key,
      k.token, exp, action, id, action);
out:
  fc_params_release(&p);
}

/* ---- instance metadata -------------------------------------------------- */

static void text(struct fc_response *resp, int status, const char *s) {
  resp->status = status;
  resp->content_type = "text/plain";
  tw_buf_adds(&resp->body, s);
}

static bool imds_token_ok(struct creds *c, const struct fc_request *req) {
  const char *t = fc_header(req, "X-aws-ec2-metadata-token");
  int64_t now = fc_now_ms(c->s);
  for (size_t i = 0; t && i < c->n_imds; i++)
    if (!strcmp(t, c->imds_tokens[i]) && now < c->imds_expires[i])
      return true;
  return false;
}

static void key_json(struct creds *c, struct fc_response *resp,
                     const char *prefix, int64_t ttl_s, bool alibaba) {
  struct fc_issued k;
  mint(c, prefix, ttl_s, &k);
  char exp[32], now[32];
  iso(k.expires_ms, exp);
  iso(fc_now_ms(c->s), now);
  json_t *j =
      alibaba
          ? json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "AccessKeyId", k.access_key,
                      "AccessKeySecret", k.secret_key, "SecurityToken", k.token,
                      "Expiration", exp, "Code", "Success", "LastUpdated", now)
          : json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "Code", "Success",
                      "LastUpdated", now, "Type", "AWS-HMAC", "AccessKeyId",
                      k.access_key, "SecretAccessKey", k.secret_key, "Token",
                      k.token, "Expiration", exp);
  fc_json_reply(resp, 200, j);
}

static void imds(struct creds *c, const struct fc_request *req,
                 struct fc_response *resp) {
  const char *p = req->raw_path;
  if (!strcmp(p, "/latest/api/token")) {
    const char *ttl = fc_header(req, "X-aws-ec2-metadata-token-ttl-seconds");
    long t = ttl ? strtol(ttl, NULL, 10) : 0;
    if (strcmp(req->method, "PUT")) {
      text(resp, 405, "");
      return;
    }
    if (t < 1 || t > 21600 || fc_header(req, "X-Forwarded-For")) {
      text(resp, 400, "");
      return;
    }
    size_t i = c->n_imds < IMDS_TOKEN_MAX ? c->n_imds++ : IMDS_TOKEN_MAX - 1;
    snprintf(c->imds_tokens[i], sizeof c->imds_tokens[i], "AQAEAFake%016llx==",
             (unsigned long long)fc_rng_next(fc_rng(c->s)));
    c->imds_expires[i] = fc_now_ms(c->s) + t * 1000;
    text(resp, 200, c->imds_tokens[i]);
    return;
  }
  if (strcmp(req->method, "GET")) {
    text(resp, 405, "");
    return;
  }
  /* IMDSv2 only: a request without a valid session token is 401 */
  if (!imds_token_ok(c, req)) {
    c->rejected++;
    text(resp, 401, "");
    return;
  }
  const char *sub = p + 42;
  if (!*sub || !strcmp(sub, "/")) {
    text(resp, 200, c->role);
    return;
  }
  if (*sub == '/' && !strcmp(sub + 1, c->role)) {
    c->imds++;
    key_json(c, resp, "ASIA", 6 * 3600, false);
    return;
  }
  text(resp, 404, "");
}

static void container(struct creds *c, const struct fc_request *req,
                      struct fc_response *resp) {
  const char *auth = fc_header(req, "Authorization");
  if (strcmp(req->method, "GET")) {
    text(resp, 405, "");
    return;
  }
  if (*c->container_token && (!auth || strcmp(auth, c->container_token))) {
    c->rejected++;
    json_t *j = json_pack("{s:s,s:s}", "code", "AccessDeniedException",
                          "message", "Unable to authorize the request");
    fc_json_reply(resp, 401, j);
    return;
  }
  c->container++;
  key_json(c, resp, "ASIA", 6 * 3600, false);
}

static void ram(struct creds *c, const struct fc_request *req,
                struct fc_response *resp) {
  const char *sub = req->raw_path + 42;
  if (strcmp(req->method, "GET")) {
    text(resp, 405, "");
    return;
  }
  if (!*sub || !strcmp(sub, "/")) {
    text(resp, 200, c->role);
    return;
  }
  if (*sub == '/' && !strcmp(sub + 1, c->role)) {
    c->ram++;
    key_json(c, resp, "STS.", 6 * 3600, true);
    return;
  }
  text(resp, 404, "");
}

static void creds_handle(void *ctx, const struct fc_request *req,
                         struct fc_response *resp) {
  struct creds *c = ctx;
  const char *p = req->raw_path;
  if (c->down) {
    text(resp, 503, "");
    return;
  }
  if (!strncmp(p, "/sts", 4))
    sts(c, req, resp);
  else if (!strncmp(p, "/v2/credentials/", 16))
    container(c, req, resp);
  else if (!strncmp(p, "/latest/meta-data/ram/", 22))
    ram(c, req, resp);
  else
    imds(c, req, resp);
}

/* ---- control ------------------------------------------------------------ */

static void creds_dump(void *ctx, json_t *out) {
  struct creds *c = ctx;
  json_object_set_new(
      out, "creds",
      json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "assume_role",
                (json_int_t)c->assume_role, "assume_role_web_identity",
                (json_int_t)c->assume_web, "imds", (json_int_t)c->imds,
                "container", (json_int_t)c->container, "ram",
                (json_int_t)c->ram, "rejected", (json_int_t)c->rejected));
}

static bool creds_control(void *ctx, const char *method, const char *rest,
                          const json_t *body, struct fc_response *resp) {
  struct creds *c = ctx;
  if (strcmp(rest, "") && strcmp(rest, "/"))
    return false;
  if (!strcmp(method, "POST")) {
    json_t *v;
    if ((v = json_object_get(body, "ttl_s")))
      c->ttl_s = json_integer_value(v);
    if ((v = json_object_get(body, "web_token")))
      snprintf(c->web_token, sizeof c->web_token, "%s", json_string_value(v));
    if ((v = json_object_get(body, "container_token")))
      snprintf(c->container_token, sizeof c->container_token, "%s",
               json_string_value(v));
    if ((v = json_object_get(body, "role")))
      snprintf(c->role, sizeof c->role, "%s", json_string_value(v));
    if ((v = json_object_get(body, "down")))
      c->down = json_is_true(v);
    if ((v = json_object_get(body, "expire_all")) && json_is_true(v))
      fc_issued_expire_all(c->s);
  } else if (strcmp(method, "GET")) {
    fc_json_error(resp, 405, "use GET or POST");
    return true;
  }
  json_t *out = json_object();
  creds_dump(c, out);
  json_t *cj = json_incref(json_object_get(out, "creds"));
  json_decref(out);
  fc_json_reply(resp, 200, cj);
  return true;
}

static void creds_reset(void *ctx) { defaults(ctx); }

const struct fc_module_ops fc_module_creds = {.name = "creds",
                                              .create = creds_create,
                                              .destroy = creds_destroy,
                                              .claims = creds_claims,
                                              .handle = creds_handle,
                                              .control = creds_control,
                                              .dump = creds_dump,
                                              .reset = creds_reset};
