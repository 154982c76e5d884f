/* test_fakecloud_ec2.c - tradewind-fakecloud's EC2 module over real HTTP.
 *
 * Starts a server in this process on port 0 with a frozen fake clock
 * (speed 0, fixed start), signs requests with tw_sigv4_sign exactly as an
 * SDK does, and checks answers through libxml2 XPath over EC2's namespace:
 * instance lifecycles, client-token idempotency, filters and paging, the
 * error envelope and codes, faults, and spot interruption after the
 * notice's lead time, moving the clock through the control API. */
#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/sigv4.h"
#include "tests/fakecloud/fakecloud.h"

#define START "2024-05-01T12:00:00.000Z"
#define NS "http://ec2.amazonaws.com/doc/2016-11-15/"

static struct fc_server *srv;
static char base[64];

struct reply {
  long status;
  struct tw_buf body;
  char date[64];
  xmlDocPtr doc;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  tw_buf_add(&((struct reply *)ud)->body, p, sz * n);
  return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  struct reply *r = ud;
  if (!strncasecmp(p, "Date:", 5))
    snprintf(r->date, sizeof r->date, "%.*s", (int)(sz * n - 8), p + 6);
  return sz * n;
}

static void reply_free(struct reply *r) {
  tw_buf_release(&r->body);
  if (r->doc)
    xmlFreeDoc(r->doc);
  memset(r, 0, sizeof *r);
}

static void http(const char *method, const char *path, const char *body,
                 struct curl_slist *hdrs, struct reply *r) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", base, path);
  memset(r, 0, sizeof *r);
  tw_buf_init(&r->body);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  CURLcode cc = curl_easy_perform(c);
  if (cc != CURLE_OK)
    fprintf(stderr, "curl: %s\n", curl_easy_strerror(cc));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(c);
  if (r->body.len && r->body.data[0] == '<')
    r->doc = xmlReadMemory(r->body.data, (int)r->body.len, "r.xml", NULL,
                           XML_PARSE_NONET);
}

/* JSON control call; the body is left in r->body. */
static long ctl(const char *method, const char *path, const char *json,
                struct reply *r) {
  struct curl_slist *h =
      curl_slist_append(NULL, "Content-Type: application/json");
  http(method, path, json, h, r);
  curl_slist_free_all(h);
  return r->status;
}

static void ctl_ok(const char *method, const char *path, const char *json) {
  struct reply r;
  long st = ctl(method, path, json, &r);
  TW_CHECK(st >= 200 && st < 300, "%s %s -> %ld %s", method, path, st,
           r.body.data);
  reply_free(&r);
}

static void advance(int64_t ms) {
  char j[64];
  snprintf(j, sizeof j, "{\"advance_ms\":%lld}", (long long)ms);
  ctl_ok("POST", "/_fake/clock", j);
}

static int64_t fake_now(void) {
  struct reply r;
  ctl("GET", "/_fake/clock", NULL, &r);
  const char *p = r.body.data ? strstr(r.body.data, "\"now_ms\":") : NULL;
  int64_t v = p ? strtoll(p + 9, NULL, 10) : 0;
  reply_free(&r);
  return v;
}

struct sign_opts {
  const char *secret; /* default: the fake's */
  const char *access_key;
  const char *region;
  int64_t skew_ms; /* added to the fake clock's time */
  bool no_auth;
  bool get; /* params in the query string */
};

/* Signs and sends an EC2 call; params is the form body without Action's
 * percent-encoding needs (the tests only use safe characters or encode). */
static void ec2o(const struct sign_opts *o, const char *params,
                 struct reply *r) {
  char date[17], host[64];
  tw_sigv4_amz_date(fake_now() + o->skew_ms, date);
  snprintf(host, sizeof host, "%s", base + 7);
  bool get = o->get;
  struct tw_sigv4_header hs[3] = {
      {"host", host},
      {"x-amz-date", date},
      {"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  struct tw_sigv4_request req = {.method = get ? "GET" : "POST",
                                 .path = "/",
                                 .query = get ? params : NULL,
                                 .headers = hs,
                                 .n_headers = get ? 2 : 3,
                                 .body = get ? "" : params,
                                 .body_len = get ? 0 : strlen(params)};
  struct tw_sigv4_params sp = {
      .access_key = o->access_key ? o->access_key : FC_DEFAULT_ACCESS_KEY,
      .secret_key = o->secret ? o->secret : FC_DEFAULT_SECRET_KEY,
      .region = o->region ? o->region : "us-east-1",
      .service = "ec2",
      .amz_date = date,
      .normalize_path = 1};
  struct tw_sigv4_result res;
  struct tw_err err;
  tw_err_clear(&err);
  if (tw_sigv4_sign(&req, &sp, &res, &err)) {
    TW_CHECK(0, "sign: %s", err.msg);
    memset(r, 0, sizeof *r);
    return;
  }
  struct curl_slist *h = NULL;
  char line[1024];
  snprintf(line, sizeof line, "x-amz-date: %s", date);
  h = curl_slist_append(h, line);
  if (!get)
    h = curl_slist_append(
        h, "Content-Type: application/x-www-form-urlencoded; charset=utf-8");
  if (!o->no_auth) {
    snprintf(line, sizeof line, "Authorization: %s", res.authorization);
    h = curl_slist_append(h, line);
  }
  h = curl_slist_append(h, "Expect:");
  h = curl_slist_append(h, "Accept:");
  if (get) {
    char path[4096];
    snprintf(path, sizeof path, "/?%s", params);
    http("GET", path, NULL, h, r);
  } else {
    http("POST", "/", params, h, r);
  }
  curl_slist_free_all(h);
  tw_sigv4_result_release(&res);
}

static void ec2(const char *params, struct reply *r) {
  struct sign_opts o = {0};
  ec2o(&o, params, r);
}

/* XPath over the reply, EC2's namespace bound to prefix e. */
static char *xp(struct reply *r, const char *expr) {
  if (!r->doc)
    return NULL;
  xmlXPathContextPtr ctx = xmlXPathNewContext(r->doc);
  xmlXPathRegisterNs(ctx, BAD_CAST "e", BAD_CAST NS);
  xmlXPathObjectPtr obj = xmlXPathEvalExpression(BAD_CAST expr, ctx);
  char *out = NULL;
  if (obj && obj->type == XPATH_NODESET && obj->nodesetval &&
      obj->nodesetval->nodeNr > 0) {
    xmlChar *s = xmlNodeGetContent(obj->nodesetval->nodeTab[0]);
    out = tw_strdup((const char *)s);
    xmlFree(s);
  } else if (obj && obj->type == XPATH_NUMBER) {
    out = tw_asprintf("%g", obj->floatval);
  }
  xmlXPathFreeObject(obj);
  xmlXPathFreeContext(ctx);
  return out;
}

static bool xp_is(struct reply *r, const char *expr, const char *want) {
  char *v = xp(r, expr);
  bool ok = v && !strcmp(v, want);
  if (!ok)
    fprintf(stderr, "  %s = \"%s\", want \"%s\"\n", expr, v ? v : "(none)",
            want);
  free(v);
  return ok;
}

static int xp_count(struct reply *r, const char *expr) {
  char *q = tw_asprintf("count(%s)", expr);
  char *v = xp(r, q);
  int n = v ? atoi(v) : -1;
  free(q);
  free(v);
  return n;
}

/* "2024-05-01T12:02:05Z", as instance metadata prints times. */
static void iso_s(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

static bool matches(const char *s, const char *re) {
  regex_t rx;
  if (!s || regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
    return false;
  bool ok = regexec(&rx, s, 0, NULL, 0) == 0;
  regfree(&rx);
  return ok;
}

static bool xp_match(struct reply *r, const char *expr, const char *re) {
  char *v = xp(r, expr);
  bool ok = matches(v, re);
  free(v);
  return ok;
}

/* An EC2 error: status, envelope shape and code. */
static bool is_error(struct reply *r, long status, const char *code) {
  char *want = tw_asprintf("<Code>%s</Code>", code);
  bool ok = r->status == status && r->body.data &&
            matches(r->body.data,
                    "^<\\?xml version=\"1.0\" encoding=\"UTF-8\"\\?>\n"
                    "<Response><Errors><Error><Code>[A-Za-z.]+</Code>"
                    "<Message>[^<]*</Message></Error></Errors>"
                    "<RequestID>[0-9a-f-]{36}</RequestID></Response>$") &&
            strstr(r->body.data, want);
  if (!ok)
    fprintf(stderr, "  want %ld %s, got %ld: %s\n", status, code, r->status,
            r->body.data ? r->body.data : "");
  free(want);
  return ok;
}

#define RUN "Action=RunInstances&Version=2016-11-15&ImageId=ami-12345678"
#define DESCRIBE "Action=DescribeInstances&Version=2016-11-15"

static char *run_one(const char *extra, struct reply *r) {
  char *p = tw_asprintf(RUN "&MinCount=1&MaxCount=1%s", extra);
  ec2(p, r);
  free(p);
  return xp(r, "//e:instancesSet/e:item[1]/e:instanceId");
}

static void reset(void) { ctl_ok("POST", "/_fake/reset", NULL); }

/* ---- tests ------------------------------------------------------------ */

static void on_demand_runs_then_becomes_running(void **state) {
  struct reply r;
  char *id = run_one("&InstanceType=m5.large&Placement.AvailabilityZone="
                     "us-east-1b",
                     &r);
  TW_CHECK(r.status == 200, "run: %ld %s", r.status, r.body.data);
  TW_CHECK(matches(id, "^i-[0-9a-f]{17}$"), "id %s", id ? id : "");
  TW_CHECK(
      xp_match(&r, "/e:RunInstancesResponse/e:requestId", "^[0-9a-f-]{36}$"),
      "requestId");
  TW_CHECK(xp_match(&r, "//e:reservationId", "^r-[0-9a-f]{17}$"), "rid");
  TW_CHECK(
      xp_is(&r, "//e:instancesSet/e:item/e:instanceState/e:name", "pending"),
      "pending");
  TW_CHECK(xp_is(&r, "//e:instancesSet/e:item/e:instanceState/e:code", "0"),
           "code 0");
  TW_CHECK(xp_is(&r, "//e:placement/e:availabilityZone", "us-east-1b"), "az");
  TW_CHECK(xp_count(&r, "//e:instanceLifecycle") == 0, "no lifecycle");
  TW_CHECK(xp_is(&r, "//e:launchTime", START), "launch time = fake clock");
  reply_free(&r);

  advance(4999);
  char *q = tw_asprintf(DESCRIBE "&InstanceId.1=%s", id);
  ec2(q, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "pending"), "still pending");
  reply_free(&r);
  advance(1);
  ec2(q, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "running"), "running");
  TW_CHECK(xp_is(&r, "//e:instanceState/e:code", "16"), "code 16");
  reply_free(&r);
  free(q);
  free(id);
}

static void spot_run_reports_lifecycle_and_tags(void **state) {
  struct reply r;
  char *id =
      run_one("&InstanceType=m5.large&InstanceMarketOptions.MarketType=spot"
              "&InstanceMarketOptions.SpotOptions.MaxPrice=0.09"
              "&InstanceMarketOptions.SpotOptions.SpotInstanceType=one-time"
              "&InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior="
              "terminate&TagSpecification.1.ResourceType=instance"
              "&TagSpecification.1.Tag.1.Key=broker-job"
              "&TagSpecification.1.Tag.1.Value=job%3C42%3E%26x",
              &r);
  TW_CHECK(r.status == 200, "spot run: %ld %s", r.status, r.body.data);
  TW_CHECK(id != NULL, "id");
  TW_CHECK(xp_is(&r, "//e:instanceLifecycle", "spot"), "spot");
  TW_CHECK(xp_match(&r, "//e:spotInstanceRequestId", "^sir-[0-9a-f]{8}$"),
           "sir");
  TW_CHECK(
      xp_is(&r, "//e:tagSet/e:item[e:key='broker-job']/e:value", "job<42>&x"),
      "tag escaped and returned");
  reply_free(&r);

  /* Max price under the market: EC2's own error. */
  run_one("&InstanceType=m5.large&InstanceMarketOptions.MarketType=spot"
          "&InstanceMarketOptions.SpotOptions.MaxPrice=0.0001",
          &r);
  TW_CHECK(is_error(&r, 400, "SpotMaxPriceTooLow"), "too low");
  reply_free(&r);
  /* stop needs a persistent request. */
  run_one("&InstanceType=m5.large&InstanceMarketOptions.MarketType=spot"
          "&InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior="
          "stop",
          &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterCombination"), "stop one-time");
  reply_free(&r);
  free(id);
}

static void client_token_is_idempotent(void **state) {
  struct reply a, b, c;
  char *id1 = run_one("&InstanceType=c5.xlarge&ClientToken=tok-1", &a);
  char *id2 = run_one("&InstanceType=c5.xlarge&ClientToken=tok-1", &b);
  TW_CHECK(a.status == 200 && b.status == 200, "%ld %ld", a.status, b.status);
  TW_CHECK(id1 && id2 && !strcmp(id1, id2), "same instance %s %s", id1, id2);
  char *r1 = xp(&a, "//e:reservationId"), *r2 = xp(&b, "//e:reservationId");
  TW_CHECK(r1 && r2 && !strcmp(r1, r2), "same reservation");
  TW_CHECK(xp_is(&b, "//e:clientToken", "tok-1"), "token echoed");
  run_one("&InstanceType=m5.large&ClientToken=tok-1", &c);
  TW_CHECK(is_error(&c, 400, "IdempotentParameterMismatch"), "mismatch");
  reply_free(&c);
  ec2(DESCRIBE "&Filter.1.Name=client-token&Filter.1.Value.1=tok-1", &c);
  TW_CHECK(xp_count(&c, "//e:instancesSet/e:item") == 1, "one instance only");
  reply_free(&a);
  reply_free(&b);
  reply_free(&c);
  free(id1);
  free(id2);
  free(r1);
  free(r2);
}

static void describe_filters_and_pages(void **state) {
  struct reply r;
  reset();
  ec2(RUN "&InstanceType=m5.large&MinCount=4&MaxCount=4"
          "&TagSpecification.1.ResourceType=instance"
          "&TagSpecification.1.Tag.1.Key=team&TagSpecification.1.Tag.1."
          "Value=a",
      &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 4, "4 launched");
  reply_free(&r);
  ec2(RUN "&InstanceType=m6g.large&MinCount=3&MaxCount=3"
          "&TagSpecification.1.ResourceType=instance"
          "&TagSpecification.1.Tag.1.Key=team&TagSpecification.1.Tag.1."
          "Value=a",
      &r);
  reply_free(&r);
  ec2(RUN "&InstanceType=m5.large&MinCount=2&MaxCount=2"
          "&TagSpecification.1.ResourceType=instance"
          "&TagSpecification.1.Tag.1.Key=team&TagSpecification.1.Tag.1."
          "Value=b",
      &r);
  reply_free(&r);

  ec2(DESCRIBE "&Filter.1.Name=tag%3Ateam&Filter.1.Value.1=a&MaxResults=5", &r);
  TW_CHECK(r.status == 200, "page 1 %ld %s", r.status, r.body.data);
  int n1 = xp_count(&r, "//e:instancesSet/e:item");
  char *tok = xp(&r, "/e:DescribeInstancesResponse/e:nextToken");
  TW_CHECK(n1 == 5 && tok, "page 1 has 5 and a token (%d)", n1);
  TW_CHECK(xp_count(&r, "//e:reservationSet/e:item") == 2, "2 reservations");
  reply_free(&r);
  char *q =
      tw_asprintf(DESCRIBE "&Filter.1.Name=tag%%3Ateam"
                           "&Filter.1.Value.1=a&MaxResults=5&NextToken=%s",
                  tok ? tok : "");
  ec2(q, &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 2, "page 2 has 2");
  TW_CHECK(xp_count(&r, "/e:DescribeInstancesResponse/e:nextToken") == 0,
           "last page has no token");
  TW_CHECK(xp_count(&r, "//e:instanceType[.='m6g.large']") == 2, "m6g tail");
  reply_free(&r);
  free(q);
  /* The token is bound to its query. */
  q = tw_asprintf(DESCRIBE "&Filter.1.Name=tag%%3Ateam&Filter.1.Value.1=b"
                           "&MaxResults=5&NextToken=%s",
                  tok ? tok : "");
  ec2(q, &r);
  TW_CHECK(is_error(&r, 400, "InvalidPaginationToken"), "foreign token");
  reply_free(&r);
  free(q);
  free(tok);

  ec2(DESCRIBE "&Filter.1.Name=tag%3Ateam&Filter.1.Value.1=%2A"
               "&Filter.2.Name=instance-type&Filter.2.Value.1=m5.large",
      &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 6, "wildcard AND type");
  reply_free(&r);
  ec2(DESCRIBE "&Filter.1.Name=tag-key&Filter.1.Value.1=team"
               "&Filter.2.Name=instance-state-name&Filter.2.Value.1=pending"
               "&Filter.2.Value.2=running",
      &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 9, "tag-key + state");
  reply_free(&r);
  ec2(DESCRIBE "&Filter.1.Name=availability-zone&Filter.1.Value.1=nowhere", &r);
  TW_CHECK(r.status == 200 && xp_count(&r, "//e:instancesSet/e:item") == 0,
           "no match is an empty set");
  TW_CHECK(xp_count(&r, "/e:DescribeInstancesResponse/e:reservationSet") == 1,
           "empty reservationSet present");
  reply_free(&r);
  ec2(DESCRIBE "&MaxResults=4", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "MaxResults < 5");
  reply_free(&r);
  ec2(DESCRIBE "&MaxResults=5&InstanceId.1=i-0123456789abcdef0", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterCombination"), "ids + max");
  reply_free(&r);
  ec2(DESCRIBE "&Filter.1.Name=flavour&Filter.1.Value.1=x", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "unknown filter");
  reply_free(&r);
  /* Other regions see nothing of us-east-1. */
  struct sign_opts o = {.region = "eu-west-1"};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(r.status == 200 && xp_count(&r, "//e:instancesSet/e:item") == 0,
           "regions are separate");
  reply_free(&r);
}

static void terminate_moves_through_states(void **state) {
  struct reply r;
  reset();
  char *id = run_one("&InstanceType=m5.large", &r);
  reply_free(&r);
  advance(5000);
  char *q = tw_asprintf("Action=TerminateInstances&Version=2016-11-15"
                        "&InstanceId.1=%s",
                        id);
  ec2(q, &r);
  TW_CHECK(r.status == 200, "terminate %ld %s", r.status, r.body.data);
  TW_CHECK(xp_is(&r, "//e:instancesSet/e:item/e:instanceId", id), "id");
  TW_CHECK(xp_is(&r, "//e:currentState/e:name", "shutting-down"), "current");
  TW_CHECK(xp_is(&r, "//e:currentState/e:code", "32"), "code 32");
  TW_CHECK(xp_is(&r, "//e:previousState/e:name", "running"), "previous");
  reply_free(&r);
  ec2(q, &r); /* again: already shutting down */
  TW_CHECK(xp_is(&r, "//e:previousState/e:name", "shutting-down"), "again");
  reply_free(&r);
  advance(3000);
  char *d = tw_asprintf(DESCRIBE "&InstanceId.1=%s", id);
  ec2(d, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "terminated"), "terminated");
  TW_CHECK(xp_is(&r, "//e:stateReason/e:code", "Client.UserInitiatedShutdown"),
           "reason");
  reply_free(&r);
  advance(3600 * 1000);
  ec2(d, &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.NotFound"), "gone after 1h");
  reply_free(&r);
  ec2("Action=TerminateInstances&Version=2016-11-15"
      "&InstanceId.1=i-0123456789abcdef0",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.NotFound"), "unknown id");
  reply_free(&r);
  ec2("Action=TerminateInstances&Version=2016-11-15&InstanceId.1=bogus", &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.Malformed"), "malformed");
  reply_free(&r);
  ec2("Action=TerminateInstances&Version=2016-11-15", &r);
  TW_CHECK(is_error(&r, 400, "MissingParameter"), "no ids");
  reply_free(&r);
  free(q);
  free(d);
  free(id);
}

static void auth_and_protocol_errors(void **state) {
  struct reply r;
  struct sign_opts o = {.secret = "not-the-secret"};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(is_error(&r, 403, "SignatureDoesNotMatch"), "wrong secret");
  reply_free(&r);
  o = (struct sign_opts){.skew_ms = -10 * 60 * 1000};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(is_error(&r, 400, "RequestExpired"), "stale date");
  reply_free(&r);
  o = (struct sign_opts){.access_key = "AKIDNOBODY"};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(is_error(&r, 401, "AuthFailure"), "unknown key");
  reply_free(&r);
  o = (struct sign_opts){.region = "mars-north-1"};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(is_error(&r, 401, "AuthFailure"), "region outside the catalog");
  reply_free(&r);
  o = (struct sign_opts){.no_auth = true};
  ec2o(&o, DESCRIBE, &r);
  TW_CHECK(is_error(&r, 401, "MissingAuthenticationToken"), "unsigned");
  reply_free(&r);
  o = (struct sign_opts){.region = "us-west-2"};
  ec2o(&o, "Action=DescribeAvailabilityZones&Version=2016-11-15", &r);
  TW_CHECK(xp_count(&r, "//e:availabilityZoneInfo/e:item") == 4, "usw2 zones");
  reply_free(&r);
  o = (struct sign_opts){.get = true};
  ec2o(&o,
       "Action=DescribeAvailabilityZones&Version=2016-11-15"
       "&ZoneName.1=us-east-1a",
       &r);
  TW_CHECK(r.status == 200, "GET query string %ld %s", r.status, r.body.data);
  TW_CHECK(xp_is(&r, "//e:item/e:zoneId", "use1-az1"), "zone id");
  TW_CHECK(xp_is(&r, "//e:item/e:regionName", "us-east-1"), "region");
  TW_CHECK(xp_is(&r, "//e:item/e:zoneState", "available"), "state");
  reply_free(&r);
  ec2("Action=LaunchRockets&Version=2016-11-15", &r);
  TW_CHECK(is_error(&r, 400, "InvalidAction"), "unknown action");
  reply_free(&r);
  ec2("Version=2016-11-15", &r);
  TW_CHECK(is_error(&r, 400, "MissingAction"), "no action");
  reply_free(&r);
  ec2("Action=DescribeInstances&Version=2010-01-01", &r);
  TW_CHECK(is_error(&r, 400, "NoSuchVersion"), "version");
  reply_free(&r);
  ec2(DESCRIBE "&Colour=blue", &r);
  TW_CHECK(is_error(&r, 400, "UnknownParameter"), "unknown parameter");
  reply_free(&r);
  ec2(DESCRIBE "&Filter.1.Name=%ZZ", &r);
  TW_CHECK(is_error(&r, 400, "MalformedQueryString"), "bad escape");
  reply_free(&r);
  ec2(RUN "&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(is_error(&r, 400, "MissingParameter"), "MinCount");
  reply_free(&r);
  ec2(RUN "&MinCount=2&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "min > max");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=m5.gigantic", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "unknown type");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=p5.48xlarge"
          "&Placement.AvailabilityZone=us-east-1zz",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "unknown zone");
  reply_free(&r);
  o = (struct sign_opts){.region = "eu-west-1"};
  ec2o(&o, RUN "&MinCount=1&MaxCount=1&InstanceType=p5.48xlarge", &r);
  TW_CHECK(is_error(&r, 400, "Unsupported"), "p5 not sold in eu-west-1");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=p4de.24xlarge"
          "&Placement.AvailabilityZone=us-east-1a",
      &r);
  TW_CHECK(is_error(&r, 400, "Unsupported"), "p4de not in us-east-1a");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=m5.large&DryRun=true", &r);
  TW_CHECK(is_error(&r, 412, "DryRunOperation"), "dry run");
  reply_free(&r);

  /* Request bodies are bounded. */
  size_t big = FC_MAX_BODY_BYTES + 10;
  char *body = tw_malloc(big + 1);
  memset(body, 'a', big);
  memcpy(body, "Action=DescribeInstances&Version=2016-11-15&x=", 46);
  body[big] = '\0';
  ec2(body, &r);
  TW_CHECK(is_error(&r, 413, "RequestEntityTooLarge"), "413");
  reply_free(&r);
  free(body);
  /* The server's Date header is the fake clock's. */
  ec2(DESCRIBE, &r);
  char want[32];
  int64_t now = fake_now();
  time_t t = (time_t)(now / 1000);
  strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", gmtime(&t));
  TW_CHECK(!strcmp(r.date, want), "Date %s, want %s", r.date, want);
  reply_free(&r);
}

static void capacity_and_quota_faults(void **state) {
  struct reply r;
  reset();
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"capacity\",\"instance_type\":\"p4d.24xlarge\","
         "\"zone\":\"us-east-1a\",\"count\":1}");
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=p4d.24xlarge"
          "&Placement.AvailabilityZone=us-east-1a",
      &r);
  TW_CHECK(is_error(&r, 500, "InsufficientInstanceCapacity"), "ICE");
  TW_CHECK(r.body.data && strstr(r.body.data, "us-east-1b"),
           "names other zones");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=p4d.24xlarge"
          "&Placement.AvailabilityZone=us-east-1a",
      &r);
  TW_CHECK(r.status == 200, "count spent: %ld", r.status);
  reply_free(&r);

  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"quota\",\"market\":\"on-demand\",\"count\":1}");
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(is_error(&r, 400, "VcpuLimitExceeded"), "quota fault");
  reply_free(&r);
  /* The real limit: 4 vCPUs on demand, m5.large has 2. */
  reset();
  ctl_ok("POST", "/_fake/ec2/config",
         "{\"vcpu_limit_on_demand\":4,"
         "\"vcpu_limit_spot\":2}");
  ec2(RUN "&MinCount=3&MaxCount=3&InstanceType=m5.large", &r);
  TW_CHECK(is_error(&r, 400, "VcpuLimitExceeded"), "3 x 2 > 4");
  reply_free(&r);
  ec2(RUN "&MinCount=1&MaxCount=5&InstanceType=m5.large", &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 2, "as many as fit");
  reply_free(&r);
  ec2(RUN "&MinCount=2&MaxCount=2&InstanceType=m5.large"
          "&InstanceMarketOptions.MarketType=spot",
      &r);
  TW_CHECK(is_error(&r, 400, "MaxSpotInstanceCountExceeded"), "spot limit");
  reply_free(&r);
}

static void throttle_and_error_faults(void **state) {
  struct reply r;
  reset();
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"throttle\",\"action\":\"DescribeInstances\","
         "\"count\":2}");
  for (int i = 0; i < 2; i++) {
    ec2(DESCRIBE, &r);
    TW_CHECK(is_error(&r, 503, "RequestLimitExceeded"), "throttled %d", i);
    reply_free(&r);
  }
  ec2(DESCRIBE, &r);
  TW_CHECK(r.status == 200, "third passes: %ld", r.status);
  reply_free(&r);
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"error\",\"status\":503,\"code\":\"Unavailable\","
         "\"count\":1}");
  ec2("Action=DescribeAvailabilityZones&Version=2016-11-15", &r);
  TW_CHECK(is_error(&r, 503, "Unavailable"), "5xx");
  reply_free(&r);
  /* A slow answer arrives late, then normally. */
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"slow\",\"action\":\"DescribeAvailabilityZones\","
         "\"delay_ms\":150,\"count\":1}");
  int64_t t0 = tw_mono_us();
  ec2("Action=DescribeAvailabilityZones&Version=2016-11-15", &r);
  int64_t slow_us = tw_mono_us() - t0;
  TW_CHECK(r.status == 200 && slow_us >= 150000, "slow: %ld after %lld us",
           r.status, (long long)slow_us);
  reply_free(&r);
  /* A probability: seeded, so neither never nor always. */
  ctl_ok("DELETE", "/_fake/faults", NULL);
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"throttle\",\"probability\":0.5}");
  int hit = 0;
  for (int i = 0; i < 40; i++) {
    ec2("Action=DescribeAvailabilityZones&Version=2016-11-15", &r);
    hit += r.status == 503;
    reply_free(&r);
  }
  TW_CHECK(hit >= 8 && hit <= 32, "p=0.5 fired %d of 40", hit);
  ctl("GET", "/_fake/ec2/state", NULL, &r);
  TW_CHECK(r.body.data && strstr(r.body.data, "\"RequestLimitExceeded\""),
           "errors counted: %s", r.body.data);
  reply_free(&r);
  ctl_ok("DELETE", "/_fake/faults", NULL);
}

static void spot_interruption_notice_then_termination(void **state) {
  struct reply r;
  reset();
  char *id = run_one("&InstanceType=g5.xlarge"
                     "&InstanceMarketOptions.MarketType=spot",
                     &r);
  reply_free(&r);
  advance(5000);
  char path[160];
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/spot/instance-action",
           id);
  TW_CHECK(ctl("GET", path, NULL, &r) == 404, "no notice yet");
  reply_free(&r);
  char ipath[160];
  snprintf(ipath, sizeof ipath, "/_fake/ec2/instances/%s/interrupt", id);
  ctl_ok("POST", ipath, "{\"lead_ms\":120000}");
  TW_CHECK(ctl("GET", path, NULL, &r) == 200, "notice");
  /* the action comes two minutes after the notice */
  char when[32], want[64];
  iso_s(fake_now() + 120000, when);
  snprintf(want, sizeof want, "\"time\":\"%s\"", when);
  TW_CHECK(r.body.data && strstr(r.body.data, "\"action\":\"terminate\"") &&
               strstr(r.body.data, want),
           "instance-action %s, want %s", r.body.data, want);
  reply_free(&r);
  char *d = tw_asprintf(DESCRIBE "&InstanceId.1=%s", id);
  advance(119999);
  ec2(d, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "running"), "within lead");
  reply_free(&r);
  advance(1);
  ec2(d, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "shutting-down"),
           "interrupted");
  TW_CHECK(
      xp_is(&r, "//e:stateReason/e:code", "Server.SpotInstanceTermination"),
      "spot reason");
  reply_free(&r);
  advance(3000);
  ec2(d, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "terminated"), "terminated");
  TW_CHECK(
      xp_is(&r, "//e:stateReason/e:code", "Server.SpotInstanceTermination"),
      "reason kept");
  reply_free(&r);
  free(d);
  free(id);

  /* Rebalance recommendation. */
  id = run_one("&InstanceType=g5.xlarge&InstanceMarketOptions.MarketType=spot",
               &r);
  reply_free(&r);
  snprintf(path, sizeof path,
           "/_fake/ec2/instances/%s/events/recommendations/rebalance", id);
  TW_CHECK(ctl("GET", path, NULL, &r) == 404, "no rebalance yet");
  reply_free(&r);
  snprintf(ipath, sizeof ipath, "/_fake/ec2/instances/%s/rebalance", id);
  ctl_ok("POST", ipath, NULL);
  iso_s(fake_now(), when);
  snprintf(want, sizeof want, "\"noticeTime\":\"%s\"", when);
  TW_CHECK(ctl("GET", path, NULL, &r) == 200 && r.body.data &&
               strstr(r.body.data, want),
           "rebalance %s, want %s", r.body.data, want);
  reply_free(&r);
  free(id);

  /* A scheduled rule: interrupt every m5.large spot a minute after launch. */
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"spot_interruption\",\"instance_type\":\"m5.large\","
         "\"after_ms\":60000,\"lead_ms\":120000}");
  id = run_one("&InstanceType=m5.large&InstanceMarketOptions.MarketType=spot",
               &r);
  reply_free(&r);
  char *od = run_one("&InstanceType=m5.large", &r);
  reply_free(&r);
  d = tw_asprintf(DESCRIBE "&InstanceId.1=%s&InstanceId.2=%s", id, od);
  advance(180000);
  ec2(d, &r);
  char *x =
      tw_asprintf("//e:item[e:instanceId='%s']/e:instanceState/e:name", id);
  TW_CHECK(xp_is(&r, x, "shutting-down"), "scheduled interruption");
  free(x);
  x = tw_asprintf("//e:item[e:instanceId='%s']/e:instanceState/e:name", od);
  TW_CHECK(xp_is(&r, x, "running"), "on-demand untouched");
  free(x);
  reply_free(&r);
  free(d);
  free(id);
  free(od);
  ctl_ok("DELETE", "/_fake/faults", NULL);

  /* A Poisson rate of one an hour per instance: of 20 spot instances,
   * some are interrupted within an hour and not all of them. */
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"spot_interruption\",\"instance_type\":\"c5.xlarge\","
         "\"rate_per_hour\":1.0}");
  ec2(RUN "&MinCount=20&MaxCount=20&InstanceType=c5.xlarge"
          "&InstanceMarketOptions.MarketType=spot"
          "&TagSpecification.1.ResourceType=instance"
          "&TagSpecification.1.Tag.1.Key=poisson"
          "&TagSpecification.1.Tag.1.Value=1",
      &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 20, "20 spot");
  reply_free(&r);
  advance(3600 * 1000);
  ec2(DESCRIBE "&Filter.1.Name=tag%3Apoisson&Filter.1.Value.1=1"
               "&Filter.2.Name=instance-state-name&Filter.2.Value.1=terminated",
      &r);
  int gone = xp_count(&r, "//e:instancesSet/e:item");
  TW_CHECK(gone >= 5 && gone <= 19, "rate 1/h: %d of 20 interrupted in 1 h",
           gone);
  reply_free(&r);
  ctl_ok("DELETE", "/_fake/faults", NULL);
}

/* A region down: its spot instance gets the notice at once, its
 * on-demand one none; both end after the lead; launches there are
 * refused; another region is untouched. */
static void region_down_interrupts_and_refuses(void **state) {
  struct reply r;
  reset();
  char *spot = run_one(
      "&InstanceType=m5.large&InstanceMarketOptions.MarketType=spot", &r);
  reply_free(&r);
  char *od = run_one("&InstanceType=m5.large", &r);
  reply_free(&r);
  struct sign_opts west = {.region = "us-west-2"};
  ec2o(&west, RUN "&MinCount=1&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(r.status == 200, "launch in us-west-2: %ld", r.status);
  char *other = xp(&r, "//e:instancesSet/e:item/e:instanceId");
  reply_free(&r);
  TW_CHECK(other != NULL, "an instance in us-west-2");
  advance(5000);
  ctl_ok("POST", "/_fake/faults",
         "{\"kind\":\"region_down\",\"region\":\"us-east-1\","
         "\"lead_ms\":30000}");
  char *d = tw_asprintf(DESCRIBE "&InstanceId.1=%s&InstanceId.2=%s", spot, od);
  ec2(d, &r); /* the fake applies the rule at its next request */
  reply_free(&r);
  char path[160];
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/spot/instance-action",
           spot);
  TW_CHECK(ctl("GET", path, NULL, &r) == 200 && r.body.data &&
               strstr(r.body.data, "\"action\":\"terminate\""),
           "the spot instance's notice: %s", r.body.data);
  reply_free(&r);
  snprintf(path, sizeof path, "/_fake/ec2/instances/%s/spot/instance-action",
           od);
  TW_CHECK(ctl("GET", path, NULL, &r) == 404, "no notice for on-demand");
  reply_free(&r);
  /* every launch there refused as EC2 refuses one without capacity */
  ec2(RUN "&MinCount=1&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(is_error(&r, 500, "InsufficientInstanceCapacity"),
           "launch in the down region: %ld", r.status);
  reply_free(&r);
  advance(29999);
  ec2(d, &r);
  TW_CHECK(xp_count(&r, "//e:instanceState[e:name='running']") == 2,
           "both run within the lead");
  reply_free(&r);
  advance(1);
  ec2(d, &r);
  char *x =
      tw_asprintf("//e:item[e:instanceId='%s']/e:stateReason/e:code", spot);
  TW_CHECK(xp_is(&r, x, "Server.SpotInstanceTermination"), "spot ended");
  free(x);
  x = tw_asprintf("//e:item[e:instanceId='%s']/e:stateReason/e:code", od);
  TW_CHECK(xp_is(&r, x, "Server.InternalError"), "on-demand ended");
  free(x);
  TW_CHECK(xp_count(&r, "//e:instanceState[e:name='shutting-down']") == 2,
           "both shutting down");
  reply_free(&r);
  /* the other region goes on */
  char *dw = tw_asprintf(DESCRIBE "&InstanceId.1=%s", other);
  ec2o(&west, dw, &r);
  TW_CHECK(xp_is(&r, "//e:instanceState/e:name", "running"),
           "us-west-2 untouched");
  reply_free(&r);
  ec2o(&west, RUN "&MinCount=1&MaxCount=1&InstanceType=m5.large", &r);
  TW_CHECK(r.status == 200, "launches in us-west-2 go on: %ld", r.status);
  reply_free(&r);
  ctl_ok("DELETE", "/_fake/faults", NULL);
  free(dw);
  free(d);
  free(other);
  free(spot);
  free(od);
}

static void spot_price_history_pages_and_prices(void **state) {
  struct reply r;
  reset();
  ec2("Action=DescribeSpotPriceHistory&Version=2016-11-15"
      "&InstanceType.1=p4d.24xlarge&ProductDescription.1=Linux%2FUNIX"
      "&AvailabilityZone=us-east-1a&StartTime=2024-04-30T12%3A00%3A00Z"
      "&MaxResults=3",
      &r);
  TW_CHECK(r.status == 200, "history %ld %s", r.status, r.body.data);
  TW_CHECK(xp_count(&r, "//e:spotPriceHistorySet/e:item") == 3, "3 items");
  char *price = xp(&r, "//e:item[1]/e:spotPrice");
  TW_CHECK(matches(price, "^[0-9]+\\.[0-9]{6}$"), "price %s", price);
  TW_CHECK(
      xp_match(&r, "//e:item[1]/e:timestamp", "^2024-05-01T12:00:00.000Z$"),
      "newest first on the 6-hour grid");
  TW_CHECK(xp_is(&r, "//e:item[2]/e:timestamp", "2024-05-01T06:00:00.000Z"),
           "second");
  char *tok = xp(&r, "//e:nextToken");
  TW_CHECK(tok && *tok, "token");
  reply_free(&r);
  char *q = tw_asprintf(
      "Action=DescribeSpotPriceHistory&Version=2016-11-15"
      "&InstanceType.1=p4d.24xlarge&ProductDescription.1=Linux%%2FUNIX"
      "&AvailabilityZone=us-east-1a&StartTime=2024-04-30T12%%3A00%%3A00Z"
      "&MaxResults=3&NextToken=%s",
      tok ? tok : "");
  ec2(q, &r);
  TW_CHECK(xp_count(&r, "//e:spotPriceHistorySet/e:item") == 2,
           "5 grid points in all");
  TW_CHECK(xp_is(&r, "//e:item[2]/e:timestamp", "2024-04-30T12:00:00.000Z"),
           "the point in force at StartTime");
  reply_free(&r);
  free(q);
  free(tok);
  /* The newest price is the one RunInstances holds MaxPrice against. */
  int64_t uusd = 0;
  if (price) {
    char *dot = strchr(price, '.');
    uusd = strtoll(price, NULL, 10) * 1000000 + (dot ? atoll(dot + 1) : 0);
  }
  char mp[32];
  snprintf(mp, sizeof mp, "%lld.%06lld", (long long)(uusd - 1) / 1000000,
           (long long)(uusd - 1) % 1000000);
  q = tw_asprintf(RUN "&MinCount=1&MaxCount=1&InstanceType=p4d.24xlarge"
                      "&Placement.AvailabilityZone=us-east-1a"
                      "&InstanceMarketOptions.MarketType=spot"
                      "&InstanceMarketOptions.SpotOptions.MaxPrice=%s",
                  mp);
  ec2(q, &r);
  TW_CHECK(is_error(&r, 400, "SpotMaxPriceTooLow"), "a micro-dollar under");
  reply_free(&r);
  free(q);
  q = tw_asprintf(RUN "&MinCount=1&MaxCount=1&InstanceType=p4d.24xlarge"
                      "&Placement.AvailabilityZone=us-east-1a"
                      "&InstanceMarketOptions.MarketType=spot"
                      "&InstanceMarketOptions.SpotOptions.MaxPrice=%s",
                  price ? price : "1");
  ec2(q, &r);
  TW_CHECK(r.status == 200, "at the price: %ld %s", r.status, r.body.data);
  reply_free(&r);
  free(q);
  free(price);
  /* An override moves the market. */
  ctl_ok("POST", "/_fake/ec2/spot-price",
         "{\"instance_type\":\"p4d.24xlarge\",\"zone\":\"us-east-1a\","
         "\"price\":\"30.5\"}");
  ec2("Action=DescribeSpotPriceHistory&Version=2016-11-15"
      "&InstanceType.1=p4d.24xlarge&ProductDescription.1=Linux%2FUNIX"
      "&AvailabilityZone=us-east-1a&MaxResults=1",
      &r);
  TW_CHECK(xp_is(&r, "//e:item[1]/e:spotPrice", "30.500000"), "override");
  reply_free(&r);
  ec2("Action=DescribeSpotPriceHistory&Version=2016-11-15"
      "&ProductDescription.1=BeOS",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "product");
  reply_free(&r);
}

static void instance_types_and_zones(void **state) {
  struct reply r;
  ec2("Action=DescribeInstanceTypes&Version=2016-11-15"
      "&InstanceType.1=p4d.24xlarge&InstanceType.2=m6g.large",
      &r);
  TW_CHECK(r.status == 200, "%ld %s", r.status, r.body.data);
  const char *p4d = "//e:instanceTypeSet/e:item[e:instanceType="
                    "'p4d.24xlarge']";
  char x[256];
  snprintf(x, sizeof x, "%s/e:gpuInfo/e:gpus/e:item/e:name", p4d);
  TW_CHECK(xp_is(&r, x, "A100"), "gpu name");
  snprintf(x, sizeof x, "%s/e:gpuInfo/e:gpus/e:item/e:count", p4d);
  TW_CHECK(xp_is(&r, x, "8"), "gpu count");
  snprintf(x, sizeof x, "%s/e:gpuInfo/e:gpus/e:item/e:memoryInfo/e:sizeInMiB",
           p4d);
  TW_CHECK(xp_is(&r, x, "40960"), "gpu memory");
  snprintf(x, sizeof x, "%s/e:gpuInfo/e:gpus/e:item/e:manufacturer", p4d);
  TW_CHECK(xp_is(&r, x, "NVIDIA"), "manufacturer");
  snprintf(x, sizeof x, "%s/e:vCpuInfo/e:defaultVCpus", p4d);
  TW_CHECK(xp_is(&r, x, "96"), "vcpus");
  TW_CHECK(xp_is(&r,
                 "//e:item[e:instanceType='m6g.large']/e:processorInfo/"
                 "e:supportedArchitectures/e:item",
                 "arm64"),
           "arm64");
  TW_CHECK(xp_is(&r,
                 "//e:item[e:instanceType='m6g.large']/e:memoryInfo/"
                 "e:sizeInMiB",
                 "8192"),
           "memory");
  reply_free(&r);
  ec2("Action=DescribeInstanceTypes&Version=2016-11-15"
      "&InstanceType.1=p9.huge",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceType"), "unknown type");
  reply_free(&r);
  ec2("Action=DescribeInstanceTypes&Version=2016-11-15&MaxResults=5", &r);
  int n1 = xp_count(&r, "//e:instanceTypeSet/e:item");
  char *tok = xp(&r, "//e:nextToken");
  reply_free(&r);
  char *q = tw_asprintf("Action=DescribeInstanceTypes&Version=2016-11-15"
                        "&MaxResults=5&NextToken=%s",
                        tok ? tok : "");
  ec2(q, &r);
  int n2 = xp_count(&r, "//e:instanceTypeSet/e:item");
  TW_CHECK(n1 == 5 && n2 == 3, "8 types in us-east-1 over two pages: %d+%d", n1,
           n2);
  TW_CHECK(xp_count(&r, "//e:nextToken") == 0, "no more");
  reply_free(&r);
  free(q);
  free(tok);
  ec2("Action=DescribeAvailabilityZones&Version=2016-11-15", &r);
  TW_CHECK(xp_count(&r, "//e:availabilityZoneInfo/e:item") == 6, "6 zones");
  TW_CHECK(xp_is(&r, "//e:item[e:zoneName='us-east-1c']/e:zoneId", "use1-az4"),
           "name -> id mapping");
  reply_free(&r);
}

static void state_dump_and_reset(void **state) {
  struct reply r;
  reset();
  char *id = run_one("&InstanceType=m5.large"
                     "&TagSpecification.1.ResourceType=instance"
                     "&TagSpecification.1.Tag.1.Key=k"
                     "&TagSpecification.1.Tag.1.Value=v",
                     &r);
  reply_free(&r);
  ctl("GET", "/_fake/ec2/state", NULL, &r);
  TW_CHECK(r.body.data && strstr(r.body.data, id) &&
               strstr(r.body.data, "\"tags\":{\"k\":\"v\"}") &&
               strstr(r.body.data, "\"RunInstances\":1"),
           "state %s", r.body.data);
  reply_free(&r);
  reset();
  ctl("GET", "/_fake/ec2/state", NULL, &r);
  TW_CHECK(r.body.data && !strstr(r.body.data, id) &&
               strstr(r.body.data, "\"instances\":[]"),
           "reset %s", r.body.data);
  reply_free(&r);
  TW_CHECK(ctl("POST", "/_fake/faults", "{\"kind\":\"nonsense\"}", &r) == 400,
           "bad rule refused");
  reply_free(&r);
  TW_CHECK(ctl("GET", "/_fake/nowhere", NULL, &r) == 404, "404");
  reply_free(&r);
  free(id);
}

/* ---- launch-path fidelity: the actions a broker resolving unknown
 * launch outcomes uses, ids and times as EC2 gives them ---------------- */

static void launch_time_whole_seconds_and_request_ids(void **state) {
  struct reply r, r2;
  reset();
  ctl_ok("POST", "/_fake/clock", "{\"set\":\"2024-05-01T15:00:00.000Z\"}");
  advance(1234); /* 15:00:01.234 */
  char *id = run_one("&InstanceType=m5.large", &r);
  TW_CHECK(xp_is(&r, "//e:launchTime", "2024-05-01T15:00:01.000Z"),
           "launchTime in whole seconds");
  char *rid1 = xp(&r, "/e:RunInstancesResponse/e:requestId");
  reply_free(&r);
  /* After a reset the same calls give the same instance id (the seed), but
   * never the same request id; describes in between change nothing. */
  reset();
  ec2(DESCRIBE, &r2);
  char *rid2 = xp(&r2, "/e:DescribeInstancesResponse/e:requestId");
  reply_free(&r2);
  ec2(DESCRIBE, &r2);
  reply_free(&r2);
  advance(10);
  char *id2 = run_one("&InstanceType=m5.large", &r);
  char *rid3 = xp(&r, "/e:RunInstancesResponse/e:requestId");
  TW_CHECK(id && id2 && !strcmp(id, id2), "instance id by seed: %s %s", id,
           id2);
  TW_CHECK(rid1 && rid2 && rid3 && strcmp(rid1, rid2) && strcmp(rid1, rid3) &&
               strcmp(rid2, rid3),
           "request ids unique: %s %s %s", rid1, rid2, rid3);
  reply_free(&r);
  /* A second server with the same seed: same instance ids, new request
   * ids. */
  struct fc_opts o;
  fc_opts_init(&o);
  o.seed = 42;
  o.clock_speed = 0;
  tw_time_parse_rfc3339(START, &o.start_ms);
  struct fc_server *other = NULL;
  struct tw_err err;
  tw_err_clear(&err);
  TW_CHECK(!fc_server_start(&o, &other, &err), "second server: %s", err.msg);
  char saved[64];
  snprintf(saved, sizeof saved, "%s", base);
  if (other) {
    snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(other));
    advance(1234);
    char *id3 = run_one("&InstanceType=m5.large", &r);
    char *rid4 = xp(&r, "/e:RunInstancesResponse/e:requestId");
    TW_CHECK(id3 && !strcmp(id, id3), "same seed, same id: %s", id3);
    TW_CHECK(rid4 && strcmp(rid4, rid1), "another run, another request id");
    reply_free(&r);
    free(id3);
    free(rid4);
    snprintf(base, sizeof base, "%s", saved);
    fc_server_stop(other);
  }
  free(id);
  free(id2);
  free(rid1);
  free(rid2);
  free(rid3);
}

static void sigv2_gets_ec2_answer(void **state) {
  struct reply r;
  struct curl_slist *h = curl_slist_append(
      NULL, "Content-Type: application/x-www-form-urlencoded; charset=utf-8");
  http("POST", "/",
       "Action=DescribeRegions&Version=2016-11-15&AWSAccessKeyId="
       "AKIDTRADEWINDFAKE&SignatureVersion=2&SignatureMethod=HmacSHA256"
       "&Timestamp=2024-05-01T12%3A00%3A00Z&Signature=abc%3D",
       h, &r);
  TW_CHECK(is_error(&r, 401, "AuthFailure"), "SigV2 form: EC2's AuthFailure");
  TW_CHECK(r.body.data && strstr(r.body.data, "Signature Version 2"),
           "says why");
  reply_free(&r);
  http("GET",
       "/?Action=DescribeInstances&Version=2016-11-15&SignatureVersion=2"
       "&SignatureMethod=HmacSHA1&AWSAccessKeyId=AKIDTRADEWINDFAKE"
       "&Signature=abc",
       NULL, NULL, &r);
  TW_CHECK(is_error(&r, 401, "AuthFailure"), "SigV2 query: EC2's AuthFailure");
  reply_free(&r);
  curl_slist_free_all(h);
}

static void describe_regions_from_catalog(void **state) {
  struct reply r;
  ec2("Action=DescribeRegions&Version=2016-11-15", &r);
  TW_CHECK(r.status == 200, "regions %ld %s", r.status, r.body.data);
  TW_CHECK(xp_count(&r, "//e:regionInfo/e:item") == 3, "three regions");
  TW_CHECK(xp_is(&r,
                 "//e:regionInfo/e:item[e:regionName='eu-west-1']"
                 "/e:regionEndpoint",
                 "ec2.eu-west-1.amazonaws.com"),
           "endpoint");
  TW_CHECK(xp_is(&r, "//e:regionInfo/e:item[1]/e:optInStatus",
                 "opt-in-not-required"),
           "opt-in");
  reply_free(&r);
  ec2("Action=DescribeRegions&Version=2016-11-15&Filter.1.Name=region-name"
      "&Filter.1.Value.1=us-*",
      &r);
  TW_CHECK(xp_count(&r, "//e:regionInfo/e:item") == 2, "filtered");
  reply_free(&r);
  ec2("Action=DescribeRegions&Version=2016-11-15&RegionName.1=us-west-2", &r);
  TW_CHECK(xp_count(&r, "//e:regionInfo/e:item") == 1, "named");
  reply_free(&r);
  ec2("Action=DescribeRegions&Version=2016-11-15&RegionName.1=mars-1", &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "unknown region");
  reply_free(&r);
}

static void addresses_empty(void **state) {
  struct reply r;
  ec2("Action=DescribeAddresses&Version=2016-11-15", &r);
  TW_CHECK(r.status == 200 && xp_count(&r, "//e:addressesSet") == 1 &&
               xp_count(&r, "//e:addressesSet/e:item") == 0,
           "empty set: %s", r.body.data);
  reply_free(&r);
  ec2("Action=DescribeAddresses&Version=2016-11-15&PublicIp.1=198.51.100.1",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidAddress.NotFound"), "unknown address");
  reply_free(&r);
  ec2("Action=DescribeAddresses&Version=2016-11-15&AllocationId.1="
      "eipalloc-12345678",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidAllocationID.NotFound"), "unknown alloc");
  reply_free(&r);
}

static void create_tags_then_describe(void **state) {
  struct reply r;
  reset();
  char *a = run_one("&InstanceType=m5.large&TagSpecification.1.ResourceType="
                    "instance&TagSpecification.1.Tag.1.Key=job"
                    "&TagSpecification.1.Tag.1.Value=j1",
                    &r);
  reply_free(&r);
  char *b = run_one("&InstanceType=m5.large", &r);
  reply_free(&r);
  char *q = tw_asprintf("Action=CreateTags&Version=2016-11-15&ResourceId.1=%s"
                        "&ResourceId.2=%s&Tag.1.Key=owner&Tag.1.Value=tw"
                        "&Tag.2.Key=job&Tag.2.Value=j2",
                        a, b);
  ec2(q, &r);
  TW_CHECK(r.status == 200 &&
               xp_is(&r, "/e:CreateTagsResponse/e:return", "true"),
           "create tags: %s", r.body.data);
  reply_free(&r);
  free(q);
  /* DescribeInstances sees them; a key given again takes the new value. */
  ec2(DESCRIBE "&Filter.1.Name=tag:job&Filter.1.Value.1=j2", &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 2, "both tagged j2");
  TW_CHECK(xp_count(&r, "(//e:instancesSet/e:item)[1]/e:tagSet/e:item") == 2,
           "job overwritten, owner added");
  reply_free(&r);
  ec2("Action=DescribeTags&Version=2016-11-15", &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 4, "four tags: %s",
           r.body.data);
  TW_CHECK(xp_is(&r, "//e:tagSet/e:item[1]/e:resourceType", "instance"),
           "type");
  reply_free(&r);
  q = tw_asprintf("Action=DescribeTags&Version=2016-11-15&Filter.1.Name="
                  "resource-id&Filter.1.Value.1=%s&Filter.2.Name=key"
                  "&Filter.2.Value.1=owner",
                  b);
  ec2(q, &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 1 &&
               xp_is(&r, "//e:tagSet/e:item/e:value", "tw"),
           "filtered tags");
  reply_free(&r);
  free(q);
  ec2("Action=DescribeTags&Version=2016-11-15&MaxResults=5", &r);
  TW_CHECK(xp_count(&r, "//e:nextToken") == 0, "one page");
  reply_free(&r);
  ec2("Action=CreateTags&Version=2016-11-15&ResourceId.1=i-0123456789abcdef0"
      "&Tag.1.Key=k",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.NotFound"), "unknown instance");
  reply_free(&r);
  ec2("Action=CreateTags&Version=2016-11-15&ResourceId.1=vol-1&Tag.1.Key=k",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidID"), "unmodelled resource");
  reply_free(&r);
  q = tw_asprintf("Action=CreateTags&Version=2016-11-15&ResourceId.1=%s", a);
  ec2(q, &r);
  TW_CHECK(is_error(&r, 400, "MissingParameter"), "no tags");
  reply_free(&r);
  free(q);
  q = tw_asprintf("Action=CreateTags&Version=2016-11-15&ResourceId.1=%s"
                  "&Tag.1.Key=aws:x&Tag.1.Value=1",
                  a);
  ec2(q, &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "aws: reserved");
  reply_free(&r);
  free(q);
  free(a);
  free(b);
}

/* DeleteTags as EC2 documents it: a key alone deletes it whatever its
 * value, a key with a value only on a match (an empty value matches only
 * an empty value), no tag at all every tag. */
static void delete_tags_by_key_value_or_all(void **state) {
  struct reply r;
  reset();
  char *a = run_one("&InstanceType=m5.large&TagSpecification.1.ResourceType="
                    "instance&TagSpecification.1.Tag.1.Key=job"
                    "&TagSpecification.1.Tag.1.Value=j1"
                    "&TagSpecification.1.Tag.2.Key=owner"
                    "&TagSpecification.1.Tag.2.Value=tw"
                    "&TagSpecification.1.Tag.3.Key=empty"
                    "&TagSpecification.1.Tag.4.Key=team"
                    "&TagSpecification.1.Tag.4.Value=x",
                    &r);
  reply_free(&r);
  char *d = tw_asprintf("Action=DescribeTags&Version=2016-11-15&Filter.1.Name="
                        "resource-id&Filter.1.Value.1=%s",
                        a);
  /* a value that does not match deletes nothing */
  char *q = tw_asprintf("Action=DeleteTags&Version=2016-11-15&ResourceId.1=%s"
                        "&Tag.1.Key=job&Tag.1.Value=other",
                        a);
  ec2(q, &r);
  TW_CHECK(r.status == 200 &&
               xp_is(&r, "/e:DeleteTagsResponse/e:return", "true"),
           "delete tags: %s", r.body.data);
  reply_free(&r);
  free(q);
  ec2(d, &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 4, "nothing deleted");
  reply_free(&r);
  /* key alone; key with its value; empty value only matches empty */
  q = tw_asprintf("Action=DeleteTags&Version=2016-11-15&ResourceId.1=%s"
                  "&Tag.1.Key=job&Tag.2.Key=owner&Tag.2.Value=tw"
                  "&Tag.3.Key=team&Tag.3.Value=",
                  a);
  ec2(q, &r);
  TW_CHECK(r.status == 200, "delete: %ld", r.status);
  reply_free(&r);
  free(q);
  ec2(d, &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 2 &&
               xp_count(&r, "//e:tagSet/e:item[e:key='empty']") == 1 &&
               xp_count(&r, "//e:tagSet/e:item[e:key='team']") == 1,
           "job and owner deleted, team kept: %s", r.body.data);
  reply_free(&r);
  /* no tag: every tag */
  q = tw_asprintf("Action=DeleteTags&Version=2016-11-15&ResourceId.1=%s", a);
  ec2(q, &r);
  TW_CHECK(r.status == 200, "delete all: %ld", r.status);
  reply_free(&r);
  free(q);
  ec2(d, &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 0, "none left");
  reply_free(&r);
  ec2("Action=DeleteTags&Version=2016-11-15&Tag.1.Key=job", &r);
  TW_CHECK(is_error(&r, 400, "MissingParameter"), "no resource");
  reply_free(&r);
  ec2("Action=DeleteTags&Version=2016-11-15&ResourceId.1=i-0123456789abcdef0",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.NotFound"), "unknown");
  reply_free(&r);
  q = tw_asprintf("Action=DeleteTags&Version=2016-11-15&ResourceId.1=%s"
                  "&Tag.1.Key=aws:x",
                  a);
  ec2(q, &r);
  TW_CHECK(is_error(&r, 400, "InvalidParameterValue"), "aws: reserved");
  reply_free(&r);
  free(q);
  free(d);
  free(a);
}

static void instance_status_running_or_all(void **state) {
  struct reply r;
  reset();
  char *a = run_one("&InstanceType=m5.large", &r);
  reply_free(&r);
  ec2("Action=DescribeInstanceStatus&Version=2016-11-15", &r);
  TW_CHECK(r.status == 200 && xp_count(&r, "//e:instanceStatusSet/e:item") == 0,
           "pending: not listed by default: %s", r.body.data);
  reply_free(&r);
  ec2("Action=DescribeInstanceStatus&Version=2016-11-15"
      "&IncludeAllInstances=true",
      &r);
  TW_CHECK(xp_count(&r, "//e:instanceStatusSet/e:item") == 1, "all: listed");
  TW_CHECK(xp_is(&r, "//e:item/e:instanceState/e:name", "pending"), "pending");
  TW_CHECK(xp_is(&r, "//e:item/e:instanceStatus/e:status", "initializing"),
           "initializing");
  reply_free(&r);
  advance(5000);
  ec2("Action=DescribeInstanceStatus&Version=2016-11-15", &r);
  TW_CHECK(xp_count(&r, "//e:instanceStatusSet/e:item") == 1, "running listed");
  TW_CHECK(xp_is(&r, "//e:item/e:instanceState/e:code", "16"), "16");
  reply_free(&r);
  advance(10000);
  char *q = tw_asprintf("Action=DescribeInstanceStatus&Version=2016-11-15"
                        "&InstanceId.1=%s",
                        a);
  ec2(q, &r);
  TW_CHECK(xp_is(&r, "//e:item/e:systemStatus/e:status", "ok") &&
               xp_is(&r, "//e:item/e:systemStatus/e:details/e:item/e:status",
                     "passed"),
           "ok/passed: %s", r.body.data);
  reply_free(&r);
  free(q);
  q = tw_asprintf("Action=TerminateInstances&Version=2016-11-15"
                  "&InstanceId.1=%s",
                  a);
  ec2(q, &r);
  reply_free(&r);
  free(q);
  ec2("Action=DescribeInstanceStatus&Version=2016-11-15"
      "&IncludeAllInstances=true&Filter.1.Name=instance-state-name"
      "&Filter.1.Value.1=shutting-down",
      &r);
  TW_CHECK(
      xp_count(&r, "//e:instanceStatusSet/e:item") == 1 &&
          xp_is(&r, "//e:item/e:instanceStatus/e:status", "not-applicable"),
      "state filter: %s", r.body.data);
  reply_free(&r);
  ec2("Action=DescribeInstanceStatus&Version=2016-11-15"
      "&InstanceId.1=i-0123456789abcdef0",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidInstanceID.NotFound"), "unknown id");
  reply_free(&r);
  free(a);
}

static void spot_requests_follow_their_instance(void **state) {
  struct reply r;
  reset();
  char *a = run_one(
      "&InstanceType=m5.large&ClientToken=spot-tok-1"
      "&InstanceMarketOptions.MarketType=spot"
      "&InstanceMarketOptions.SpotOptions.MaxPrice=0.09"
      "&TagSpecification.1.ResourceType=spot-instances-request"
      "&TagSpecification.1.Tag.1.Key=job&TagSpecification.1.Tag.1.Value=s1",
      &r);
  char *sir = xp(&r, "//e:instancesSet/e:item/e:spotInstanceRequestId");
  reply_free(&r);
  free(run_one("&InstanceType=m5.large", &r)); /* on-demand: no request */
  reply_free(&r);
  ec2("Action=DescribeSpotInstanceRequests&Version=2016-11-15", &r);
  TW_CHECK(r.status == 200 &&
               xp_count(&r, "//e:spotInstanceRequestSet/e:item") == 1,
           "one request: %s", r.body.data);
  TW_CHECK(xp_is(&r, "//e:item/e:spotInstanceRequestId", sir ? sir : "?"),
           "id");
  TW_CHECK(xp_is(&r, "//e:item/e:instanceId", a ? a : "?"), "instance");
  TW_CHECK(xp_is(&r, "//e:item/e:state", "active") &&
               xp_is(&r, "//e:item/e:status/e:code", "fulfilled"),
           "active/fulfilled");
  TW_CHECK(xp_is(&r, "//e:item/e:type", "one-time"), "one-time");
  TW_CHECK(xp_is(&r, "//e:item/e:spotPrice", "0.090000"), "max price");
  TW_CHECK(
      xp_is(&r, "//e:item/e:launchSpecification/e:instanceType", "m5.large"),
      "launch spec");
  TW_CHECK(xp_is(&r, "//e:item/e:tagSet/e:item/e:value", "s1"), "request tags");
  reply_free(&r);
  ec2("Action=DescribeTags&Version=2016-11-15&Filter.1.Name=resource-type"
      "&Filter.1.Value.1=spot-instances-request",
      &r);
  TW_CHECK(xp_count(&r, "//e:tagSet/e:item") == 1,
           "request tag in DescribeTags");
  reply_free(&r);
  char *q = tw_asprintf("Action=TerminateInstances&Version=2016-11-15"
                        "&InstanceId.1=%s",
                        a);
  ec2(q, &r);
  reply_free(&r);
  free(q);
  advance(3000);
  q = tw_asprintf("Action=DescribeSpotInstanceRequests&Version=2016-11-15"
                  "&SpotInstanceRequestId.1=%s",
                  sir);
  ec2(q, &r);
  TW_CHECK(
      xp_is(&r, "//e:item/e:state", "closed") &&
          xp_is(&r, "//e:item/e:status/e:code", "instance-terminated-by-user"),
      "closed by user: %s", r.body.data);
  reply_free(&r);
  free(q);
  ec2("Action=DescribeSpotInstanceRequests&Version=2016-11-15"
      "&Filter.1.Name=state&Filter.1.Value.1=active",
      &r);
  TW_CHECK(xp_count(&r, "//e:spotInstanceRequestSet/e:item") == 0,
           "state filter");
  reply_free(&r);
  ec2("Action=DescribeSpotInstanceRequests&Version=2016-11-15"
      "&SpotInstanceRequestId.1=sir-00000000",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidSpotInstanceRequestID.NotFound"),
           "unknown");
  reply_free(&r);
  ec2("Action=DescribeSpotInstanceRequests&Version=2016-11-15"
      "&SpotInstanceRequestId.1=nope",
      &r);
  TW_CHECK(is_error(&r, 400, "InvalidSpotInstanceRequestID.Malformed"),
           "malformed");
  reply_free(&r);
  /* The token a broker re-asks with when a launch's outcome was lost. */
  ec2(DESCRIBE "&Filter.1.Name=client-token&Filter.1.Value.1=spot-tok-1"
               "&Filter.2.Name=instance-state-name&Filter.2.Value.1=pending"
               "&Filter.2.Value.2=running",
      &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 0,
           "terminated: filtered");
  reply_free(&r);
  ec2(DESCRIBE "&Filter.1.Name=client-token&Filter.1.Value.1=spot-tok-1", &r);
  TW_CHECK(xp_count(&r, "//e:instancesSet/e:item") == 1, "by token");
  reply_free(&r);
  free(a);
  free(sir);
}

/* One fake EC2 for the group, in this process (seed 42, clock stopped). */
static int start_server(void **state) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct fc_opts o;
  fc_opts_init(&o);
  o.seed = 42;
  o.clock_speed = 0;
  tw_time_parse_rfc3339(START, &o.start_ms);
  struct tw_err err;
  tw_err_clear(&err);
  if (fc_server_start(&o, &srv, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  printf("fakecloud on %s (seed 42)\n", base);
  return 0;
}

static int stop_server(void **state) {
  fc_server_stop(srv);
  curl_global_cleanup();
  xmlCleanupParser();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(on_demand_runs_then_becomes_running),
      cmocka_unit_test(spot_run_reports_lifecycle_and_tags),
      cmocka_unit_test(client_token_is_idempotent),
      cmocka_unit_test(describe_filters_and_pages),
      cmocka_unit_test(terminate_moves_through_states),
      cmocka_unit_test(auth_and_protocol_errors),
      cmocka_unit_test(capacity_and_quota_faults),
      cmocka_unit_test(throttle_and_error_faults),
      cmocka_unit_test(spot_interruption_notice_then_termination),
      cmocka_unit_test(region_down_interrupts_and_refuses),
      cmocka_unit_test(spot_price_history_pages_and_prices),
      cmocka_unit_test(instance_types_and_zones),
      cmocka_unit_test(state_dump_and_reset),
      cmocka_unit_test(launch_time_whole_seconds_and_request_ids),
      cmocka_unit_test(sigv2_gets_ec2_answer),
      cmocka_unit_test(describe_regions_from_catalog),
      cmocka_unit_test(addresses_empty),
      cmocka_unit_test(create_tags_then_describe),
      cmocka_unit_test(delete_tags_by_key_value_or_all),
      cmocka_unit_test(instance_status_running_or_all),
      cmocka_unit_test(spot_requests_follow_their_instance),
  };
  return cmocka_run_group_tests(tests, start_server, stop_server);
}
