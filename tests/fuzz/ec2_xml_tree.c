/* ec2_xml_tree.c - the EC2 answer parsers as they were on libxml2's tree
 * (xmlReadMemory), kept for the tests only: fuzz_ec2_xml and test_aws_xml
 * run them beside providers/aws/ec2_xml.c on the same input and require
 * the same result, field by field.  The functions are renamed
 * tw_ec2_tree_* (tests/fuzz/ec2_xml_tree.h). */
#define tw_ec2_xml_init tw_ec2_tree_xml_init
#define tw_ec2_parse_error tw_ec2_tree_parse_error
#define tw_ec2_error_class tw_ec2_tree_error_class
#define tw_ec2_response_error tw_ec2_tree_response_error
#define tw_ec2_parse_instances tw_ec2_tree_parse_instances
#define tw_ec2_parse_state_changes tw_ec2_tree_parse_state_changes
#define tw_ec2_parse_spot_prices tw_ec2_tree_parse_spot_prices
#define tw_ec2_parse_spot_requests tw_ec2_tree_parse_spot_requests
#define tw_ec2_parse_instance_types tw_ec2_tree_parse_instance_types
#define tw_ec2_accel_name tw_ec2_tree_accel_name
#define tw_ec2_parse_zones tw_ec2_tree_parse_zones

#include "providers/aws/ec2_xml.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "broker/base/clock.h"
#include "broker/base/mem.h"
#include "providers/provider.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init_once(void) { xmlInitParser(); }

void tw_ec2_xml_init(void) { pthread_once(&xml_once, xml_init_once); }

/* ---- tree walking ------------------------------------------------------- */

static bool is_elem(const xmlNode *n, const char *name) {
  return n && n->type == XML_ELEMENT_NODE &&
         (!name || !strcmp((const char *)n->name, name));
}

static xmlNode *first_elem(const xmlNode *parent, const char *name) {
  if (!parent)
    return NULL;
  for (xmlNode *c = parent->children; c; c = c->next)
    if (is_elem(c, name))
      return c;
  return NULL;
}

static xmlNode *next_elem(const xmlNode *n, const char *name) {
  for (xmlNode *c = n->next; c; c = c->next)
    if (is_elem(c, name))
      return c;
  return NULL;
}

#define FOR_EACH(var, parent, name)                                            \
  for (xmlNode *var = first_elem((parent), (name)); var;                       \
       var = next_elem(var, (name)))

/* Follows a path of child names separated by '/': "placement/zone". */
static xmlNode *path_elem(const xmlNode *n, const char *path) {
  char part[64];
  while (n && path && *path) {
    size_t len = strcspn(path, "/");
    if (len >= sizeof part)
      return NULL;
    memcpy(part, path, len);
    part[len] = '\0';
    n = first_elem(n, part);
    path += len;
    if (*path == '/')
      path++;
  }
  return (xmlNode *)n;
}

/* The text of n (its text and CDATA children; entity references are not
 * expanded), trimmed, into buf.  Returns the untrimmed length of the whole
 * text, so the caller can tell a value that did not fit. */
static size_t text_into(const xmlNode *n, char *buf, size_t size) {
  size_t len = 0, need = 0;
  for (xmlNode *c = n ? n->children : NULL; c; c = c->next) {
    if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) ||
        !c->content)
      continue;
    size_t sl = strlen((const char *)c->content);
    need += sl;
    size_t k = len + 1 < size ? size - 1 - len : 0;
    if (k > sl)
      k = sl;
    memcpy(buf + len, c->content, k);
    len += k;
  }
  buf[len] = '\0';
  char *b = buf;
  while (*b && isspace((unsigned char)*b))
    b++;
  size_t l = strlen(b);
  while (l && isspace((unsigned char)b[l - 1]))
    l--;
  memmove(buf, b, l);
  buf[l] = '\0';
  return need;
}

/* Reads the text at path below n into buf ("" when absent).  A value that
 * does not fit is an error naming the path: ids, tokens and tags cut short
 * would name something else. */
static enum tw_rc get(const xmlNode *n, const char *path, char *buf,
                      size_t size, struct tw_err *err) {
  buf[0] = '\0';
  xmlNode *e = path_elem(n, path);
  if (!e)
    return TW_OK;
  size_t need = text_into(e, buf, size);
  if (need >= size) {
    /* Whitespace around a value may push a short value over; trim first. */
    char *tmp = tw_malloc(need + 1);
    text_into(e, tmp, need + 1);
    size_t l = strlen(tmp);
    if (l < size)
      memcpy(buf, tmp, l + 1);
    free(tmp);
    if (l >= size) {
      buf[0] = '\0';
      return tw_err_set(err, TW_E_INVALID,
                        "EC2 response: <%s> longer than %zu bytes", path,
                        size - 1);
    }
  }
  return TW_OK;
}

/* As get(), cutting a long value: for free text (messages, reasons). */
static void get_cut(const xmlNode *n, const char *path, char *buf,
                    size_t size) {
  buf[0] = '\0';
  xmlNode *e = path_elem(n, path);
  if (e)
    text_into(e, buf, size);
}

#define GET(n, path, field) get((n), (path), (field), sizeof(field), err)

/* An integer at path; *out untouched when absent.  Negative or malformed
 * values are errors: no EC2 count or size is negative. */
static enum tw_rc get_int(const xmlNode *n, const char *path, int64_t max,
                          int64_t *out, struct tw_err *err) {
  char buf[32];
  enum tw_rc rc = get(n, path, buf, sizeof buf, err);
  if (rc)
    return rc;
  if (!*buf)
    return TW_OK;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end || v < 0 || v > max)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: <%s> \"%s\" is not an integer in "
                      "0..%lld",
                      path, buf, (long long)max);
  *out = v;
  return TW_OK;
}

/* ---- documents ---------------------------------------------------------- */

/* Parses body and checks that the root is one of roots (NULL-terminated;
 * any namespace or prefix; a name starting with a root also matches, as
 * Eucalyptus appends "Type").  An error envelope is turned into its
 * class. */
static enum tw_rc load(const char *body, size_t len, const char *const *roots,
                       xmlDoc **doc, xmlNode **top, struct tw_err *err) {
  *doc = NULL;
  *top = NULL;
  tw_ec2_xml_init();
  if (len > TW_EC2_XML_MAX_BYTES)
    return tw_err_set(err, TW_E_TOOBIG, "EC2 response: %zu bytes, limit %u",
                      len, TW_EC2_XML_MAX_BYTES);
  if (!body || len == 0)
    return tw_err_set(err, TW_E_INVALID, "EC2 response: empty body");
  /* NONET: never fetch; no NOENT/DTDLOAD: entities stay unexpanded and
   * no external subset is read; NOERROR/NOWARNING: libxml2 would print
   * to stderr otherwise. */
  xmlDoc *d = xmlReadMemory(body, (int)len, "ec2.xml", NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR |
                                XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
  if (!d)
    return tw_err_set(err, TW_E_INVALID, "EC2 response: malformed XML");
  xmlNode *r = xmlDocGetRootElement(d);
  if (!r) {
    xmlFreeDoc(d);
    return tw_err_set(err, TW_E_INVALID, "EC2 response: no root element");
  }
  if (!strcmp((const char *)r->name, "Response") ||
      !strcmp((const char *)r->name, "ErrorResponse")) {
    xmlFreeDoc(d);
    return tw_ec2_response_error(roots[0], 0, body, len, err);
  }
  const char *const *root = roots;
  while (*root && strncmp((const char *)r->name, *root, strlen(*root)))
    root++;
  if (!*root) {
    enum tw_rc rc = tw_err_set(err, TW_E_INVALID,
                               "EC2 response: expected <%s>, got <%.64s>",
                               roots[0], (const char *)r->name);
    xmlFreeDoc(d);
    return rc;
  }
  *doc = d;
  *top = r;
  return TW_OK;
}

static enum tw_rc take_next_token(const xmlNode *top, char **next_token,
                                  struct tw_err *err) {
  if (!next_token)
    return TW_OK;
  *next_token = NULL;
  xmlNode *e = first_elem(top, "nextToken");
  if (!e)
    return TW_OK;
  /* Tokens are opaque and may be long; bound them all the same. */
  char buf[4096];
  size_t need = text_into(e, buf, sizeof buf);
  if (need >= sizeof buf)
    return tw_err_set(err, TW_E_TOOBIG, "EC2 response: <nextToken> too long");
  if (*buf)
    *next_token = tw_strdup(buf);
  return TW_OK;
}

/* ---- errors ------------------------------------------------------------- */

bool tw_ec2_parse_error(const char *body, size_t len,
                        struct tw_ec2_error *out) {
  memset(out, 0, sizeof *out);
  tw_ec2_xml_init();
  if (!body || len == 0 || len > TW_EC2_XML_MAX_BYTES)
    return false;
  xmlDoc *d = xmlReadMemory(body, (int)len, "ec2.xml", NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR |
                                XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
  if (!d)
    return false;
  bool found = false;
  xmlNode *r = xmlDocGetRootElement(d);
  if (is_elem(r, "Response") || is_elem(r, "ErrorResponse")) {
    /* EC2: <Response><Errors><Error>; other Query APIs:
     * <ErrorResponse><Error>. */
    xmlNode *e = path_elem(r, "Errors/Error");
    if (!e)
      e = first_elem(r, "Error");
    if (e) {
      get_cut(e, "Code", out->code, sizeof out->code);
      get_cut(e, "Message", out->message, sizeof out->message);
      found = *out->code != '\0';
    }
    get_cut(r, "RequestID", out->request_id, sizeof out->request_id);
    if (!*out->request_id)
      get_cut(r, "RequestId", out->request_id, sizeof out->request_id);
  }
  xmlFreeDoc(d);
  if (!found)
    memset(out, 0, sizeof *out);
  return found;
}

struct code_class {
  const char *code;
  enum tw_rc rc;
};

/* EC2's error codes (API reference, "Error codes for the Amazon EC2 API")
 * and the class each means to the core.  Codes not listed fall back on
 * the HTTP status. */
static const struct code_class code_classes[] = {
    /* no capacity for this offer now: the fallback strategy moves on */
    {"InsufficientInstanceCapacity", TW_E_CAPACITY},
    {"InsufficientCapacity", TW_E_CAPACITY},
    {"InsufficientHostCapacity", TW_E_CAPACITY},
    {"InsufficientReservedInstanceCapacity", TW_E_CAPACITY},
    {"SpotMaxPriceTooLow", TW_E_CAPACITY},
    /* "The requested configuration is currently not supported": an
     * instance type not offered in that zone. */
    {"Unsupported", TW_E_CAPACITY},
    /* throttled or a server fault: the http helper retried already */
    {"RequestLimitExceeded", TW_E_RETRYABLE},
    {"InternalError", TW_E_RETRYABLE},
    {"InternalFailure", TW_E_RETRYABLE},
    {"ServiceUnavailable", TW_E_RETRYABLE},
    {"Unavailable", TW_E_RETRYABLE},
    /* account limits */
    {"VcpuLimitExceeded", TW_E_QUOTA},
    {"InstanceLimitExceeded", TW_E_QUOTA},
    {"MaxSpotInstanceCountExceeded", TW_E_QUOTA},
    /* credentials */
    {"AuthFailure", TW_E_AUTH},
    {"SignatureDoesNotMatch", TW_E_AUTH},
    {"MissingAuthenticationToken", TW_E_AUTH},
    {"IncompleteSignature", TW_E_AUTH},
    {"RequestExpired", TW_E_AUTH},
    {"UnauthorizedOperation", TW_E_AUTH},
    /* describe/terminate of an unknown id */
    {"InvalidInstanceID.NotFound", TW_E_NOTFOUND},
    /* the client token was used before with other parameters */
    {"IdempotentParameterMismatch", TW_E_CONFLICT},
};

enum tw_rc tw_ec2_error_class(const char *code, long http_status) {
  for (size_t i = 0; code && i < sizeof code_classes / sizeof *code_classes;
       i++)
    if (!strcmp(code, code_classes[i].code))
      return code_classes[i].rc;
  if (http_status >= 500 || http_status == 429)
    return TW_E_RETRYABLE;
  if (http_status == 401 || http_status == 403)
    return TW_E_AUTH;
  return TW_E_INVALID;
}

enum tw_rc tw_ec2_response_error(const char *action, long http_status,
                                 const char *body, size_t len,
                                 struct tw_err *err) {
  struct tw_ec2_error e;
  if (tw_ec2_parse_error(body, len, &e)) {
    enum tw_rc rc = tw_ec2_error_class(e.code, http_status);
    if (err && err->rc == TW_OK)
      tw_err_detail(err, e.code);
    return tw_err_set(err, rc, "%s: %s: %s", action, e.code,
                      *e.message ? e.message : "(no message)");
  }
  enum tw_rc rc = tw_ec2_error_class(NULL, http_status);
  if (err && err->rc == TW_OK) {
    char detail[32];
    snprintf(detail, sizeof detail, "HTTP %ld", http_status);
    tw_err_detail(err, detail);
  }
  return tw_err_set(err, rc, "%s: HTTP %ld without an EC2 error document",
                    action, http_status);
}

/* ---- instances ---------------------------------------------------------- */

static enum tw_arch arch_parse(const char *s) {
  if (!strcmp(s, "x86_64"))
    return TW_ARCH_X86_64;
  if (!strcmp(s, "arm64"))
    return TW_ARCH_ARM64;
  /* i386, x86_64_mac, arm64_mac: nothing a job spec can ask for. */
  return TW_ARCH_ANY;
}

/* EC2's instanceState/code: the low byte is the state (the high byte is
 * internal and to be ignored, says the API reference). */
static enum tw_instance_state state_from_code(int64_t code) {
  switch (code & 0xff) {
  case 0:
    return TW_INST_PENDING;
  case 16:
    return TW_INST_RUNNING;
  case 32:
    return TW_INST_SHUTTING_DOWN;
  case 48:
    return TW_INST_TERMINATED;
  case 64:
    return TW_INST_STOPPING;
  case 80:
    return TW_INST_STOPPED;
  }
  return TW_INST_UNKNOWN;
}

/* Reads <name>/<code> of a state element into state and its spelling. */
static enum tw_rc parse_state(const xmlNode *st, enum tw_instance_state *state,
                              char *spelled, size_t spelled_size,
                              struct tw_err *err) {
  char name[32];
  int64_t code = -1;
  enum tw_rc rc;
  *state = TW_INST_UNKNOWN;
  if (!st)
    return TW_OK;
  if ((rc = get(st, "name", name, sizeof name, err)) ||
      (rc = get_int(st, "code", 0xffff, &code, err)))
    return rc;
  *state = tw_instance_state_parse(name);
  if (*state == TW_INST_UNKNOWN && code >= 0)
    *state = state_from_code(code);
  if (spelled)
    tw_model_set(spelled, spelled_size,
                 *name ? name : tw_instance_state_str(*state));
  return TW_OK;
}

static enum tw_rc parse_tags(const xmlNode *inst, struct tw_instance *out,
                             struct tw_err *err) {
  FOR_EACH(item, first_elem(inst, "tagSet"), "item") {
    char key[128];
    enum tw_rc rc;
    get_cut(item, "key", key, sizeof key);
    char *dst = NULL;
    size_t size = 0;
    if (!strcmp(key, TW_TAG_JOB))
      dst = out->job_id, size = sizeof out->job_id;
    else if (!strcmp(key, TW_TAG_ATTEMPT))
      dst = out->attempt_id, size = sizeof out->attempt_id;
    else if (!strcmp(key, TW_TAG_TENANT))
      dst = out->tenant, size = sizeof out->tenant;
    else
      continue;
    if ((rc = get(item, "value", dst, size, err)))
      return rc;
  }
  return TW_OK;
}

/* The time in a state transition reason, "User initiated (2026-12-01
 * 10:00:00 GMT)" or "Service initiated (...)": when the instance left
 * running.  0 when the text carries none. */
static int64_t transition_ms(const char *reason) {
  const char *p = strchr(reason, '(');
  int64_t ms = 0;
  if (!p || strlen(p) < 21 || strncmp(p + 20, " GMT)", 5))
    return 0;
  char iso[32];
  snprintf(iso, sizeof iso, "%.10sT%.8sZ", p + 1, p + 12);
  return tw_time_parse_rfc3339(iso, &ms) ? 0 : ms;
}

static enum tw_rc parse_instance(const xmlNode *n, struct tw_instance *out,
                                 struct tw_err *err) {
  char buf[64];
  enum tw_rc rc;
  if ((rc = GET(n, "instanceId", out->id)))
    return rc;
  if (!*out->id)
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance without <instanceId>");
  if ((rc = GET(n, "instanceType", out->instance_type)) ||
      (rc = GET(n, "placement/availabilityZone", out->zone)) ||
      (rc = GET(n, "clientToken", out->client_token)) ||
      (rc = GET(n, "privateIpAddress", out->private_ip)) ||
      (rc = GET(n, "ipAddress", out->public_ip)) ||
      (rc =
           parse_state(first_elem(n, "instanceState"), &out->state,
                       out->provider_state, sizeof out->provider_state, err)) ||
      (rc = parse_tags(n, out, err)))
    return rc;
  char transition[TW_MODEL_TEXT_MAX];
  get_cut(n, "reason", transition, sizeof transition);
  get_cut(n, "stateReason/code", out->state_reason, sizeof out->state_reason);
  if (!*out->state_reason)
    snprintf(out->state_reason, sizeof out->state_reason, "%s", transition);
  get_cut(n, "architecture", buf, sizeof buf);
  out->arch = arch_parse(buf);
  get_cut(n, "instanceLifecycle", buf, sizeof buf);
  out->market = !strcmp(buf, "spot") ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
  get_cut(n, "launchTime", buf, sizeof buf);
  if (*buf && tw_time_parse_rfc3339(buf, &out->launched_ms))
    return tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance %s: <launchTime> \"%s\" is "
                      "not RFC 3339",
                      out->id, buf);
  /* billing runs from LaunchTime (the instance entered running then) to
   * the state transition that took it out of running */
  if (out->state != TW_INST_PENDING && out->state != TW_INST_UNKNOWN)
    out->running_ms = out->launched_ms;
  if (out->state == TW_INST_SHUTTING_DOWN || out->state == TW_INST_TERMINATED ||
      out->state == TW_INST_STOPPING || out->state == TW_INST_STOPPED)
    out->ended_ms = transition_ms(transition);
  return TW_OK;
}

static enum tw_rc parse_instances_set(const xmlNode *set,
                                      struct tw_instance_list *out,
                                      struct tw_err *err) {
  FOR_EACH(item, set, "item") {
    enum tw_rc rc = parse_instance(item, tw_instance_list_add(out), err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

enum tw_rc tw_ec2_parse_instances(const char *body, size_t len,
                                  struct tw_instance_list *out,
                                  char **next_token, struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeInstancesResponse",
                                      "RunInstancesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  if ((rc = parse_instances_set(first_elem(top, "instancesSet"), out, err)))
    goto out;
  FOR_EACH(res, first_elem(top, "reservationSet"), "item") {
    if ((rc = parse_instances_set(first_elem(res, "instancesSet"), out, err)))
      goto out;
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}

enum tw_rc tw_ec2_parse_state_changes(const char *body, size_t len,
                                      struct tw_ec2_state_change_list *out,
                                      struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  /* Terminate-, Start- and StopInstancesResponse share the shape. */
  static const char *const roots[] = {"TerminateInstancesResponse",
                                      "StartInstancesResponse",
                                      "StopInstancesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  FOR_EACH(item, first_elem(top, "instancesSet"), "item") {
    struct tw_ec2_state_change *c = tw_ec2_state_change_list_add(out);
    if ((rc = GET(item, "instanceId", c->id)))
      goto out;
    if (!*c->id) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: state change without <instanceId>");
      goto out;
    }
    xmlNode *cur = first_elem(item, "currentState");
    if (!cur)
      cur = first_elem(item, "shutdownState");
    if ((rc = parse_state(cur, &c->current, NULL, 0, err)) ||
        (rc = parse_state(first_elem(item, "previousState"), &c->previous, NULL,
                          0, err)))
      goto out;
  }
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}

/* ---- spot prices -------------------------------------------------------- */

enum tw_rc tw_ec2_parse_spot_prices(const char *body, size_t len,
                                    struct tw_ec2_spot_price_list *out,
                                    char **next_token, struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeSpotPriceHistoryResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  FOR_EACH(item, first_elem(top, "spotPriceHistorySet"), "item") {
    struct tw_ec2_spot_price *s = tw_ec2_spot_price_list_add(out);
    char price[48], ts[48];
    if ((rc = GET(item, "instanceType", s->instance_type)) ||
        (rc = GET(item, "availabilityZone", s->zone)) ||
        (rc = GET(item, "productDescription", s->product)) ||
        (rc = GET(item, "spotPrice", price)) ||
        (rc = GET(item, "timestamp", ts)))
      goto out;
    if (!*s->instance_type || !*price) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot price without <instanceType> or "
                      "<spotPrice>");
      goto out;
    }
    if ((rc = tw_provider_usd_to_uusd(price, &s->price_uusd_per_hour, err)))
      goto out;
    if (*ts && tw_time_parse_rfc3339(ts, &s->timestamp_ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot price <timestamp> \"%s\" is not "
                      "RFC 3339",
                      ts);
      goto out;
    }
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}

/* ---- spot requests ------------------------------------------------------ */

enum tw_rc tw_ec2_parse_spot_requests(const char *body, size_t len,
                                      struct tw_ec2_spot_request_list *out,
                                      char **next_token, struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeSpotInstanceRequestsResponse",
                                      NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  FOR_EACH(item, first_elem(top, "spotInstanceRequestSet"), "item") {
    struct tw_ec2_spot_request *r = tw_ec2_spot_request_list_add(out);
    char ts[48];
    if ((rc = GET(item, "spotInstanceRequestId", r->id)) ||
        (rc = GET(item, "instanceId", r->instance_id)) ||
        (rc = GET(item, "state", r->state)) ||
        (rc = GET(item, "status/code", r->code)) ||
        (rc = GET(item, "status/updateTime", ts)) ||
        (rc = GET(item, "instanceInterruptionBehavior", r->behavior)))
      goto out;
    if (!*r->id) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot instance request without "
                      "<spotInstanceRequestId>");
      goto out;
    }
    if (*ts && tw_time_parse_rfc3339(ts, &r->updated_ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: spot request %s <status><updateTime> "
                      "\"%s\" is not RFC 3339",
                      r->id, ts);
      goto out;
    }
  }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}

/* ---- instance types ----------------------------------------------------- */

void tw_ec2_accel_name(const char *name, int64_t memory_mib, char *out,
                       size_t out_size) {
  char n[64];
  size_t j = 0;
  for (size_t i = 0; name && name[i] && j + 1 < sizeof n; i++)
    if (!isspace((unsigned char)name[i]))
      n[j++] = name[i];
  n[j] = '\0';
  /* The spec names the large-memory variants apart (as SkyPilot's
   * catalogs do); EC2 calls both "A100" and tells them by memory. */
  if (!strcmp(n, "A100") && memory_mib >= 80 * 1024)
    snprintf(out, out_size, "A100-80GB");
  else if (!strcmp(n, "V100") && memory_mib >= 32 * 1024)
    snprintf(out, out_size, "V100-32GB");
  else
    snprintf(out, out_size, "%s", n);
}

/* The first device of an accelerator list (gpuInfo/gpus, neuronInfo/
 * neuronDevices, inferenceAcceleratorInfo/accelerators). */
static enum tw_rc parse_accel(const xmlNode *list,
                              struct tw_ec2_instance_type *t,
                              struct tw_err *err) {
  xmlNode *dev = first_elem(list, "item");
  if (!dev || t->accel_count)
    return TW_OK;
  char name[64];
  int64_t count = 0, mem = 0;
  enum tw_rc rc;
  get_cut(dev, "name", name, sizeof name);
  if ((rc = get_int(dev, "count", 1024, &count, err)) ||
      (rc = get_int(dev, "memoryInfo/sizeInMiB", INT64_C(1) << 40, &mem, err)))
    return rc;
  if (!*name || count < 1)
    return TW_OK;
  tw_ec2_accel_name(name, mem, t->accel_name, sizeof t->accel_name);
  t->accel_count = (int)count;
  t->accel_memory_mib = mem;
  return TW_OK;
}

static enum tw_rc parse_type_aws(const xmlNode *item,
                                 struct tw_ec2_instance_type *t,
                                 struct tw_err *err) {
  int64_t v = 0;
  enum tw_rc rc;
  if ((rc = GET(item, "instanceType", t->name)) ||
      (rc = get_int(item, "vCpuInfo/defaultVCpus", 1 << 20, &v, err)))
    return rc;
  t->vcpus = (int)v;
  if ((rc = get_int(item, "memoryInfo/sizeInMiB", INT64_C(1) << 40,
                    &t->memory_mib, err)))
    return rc;
  FOR_EACH(a, path_elem(item, "processorInfo/supportedArchitectures"), "item") {
    char buf[32];
    get_cut(a, NULL, buf, sizeof buf);
    enum tw_arch arch = arch_parse(buf);
    /* A type listing i386 and x86_64 runs 64-bit x86 jobs. */
    if (arch != TW_ARCH_ANY && t->arch != TW_ARCH_X86_64)
      t->arch = arch;
  }
  if ((rc = parse_accel(path_elem(item, "gpuInfo/gpus"), t, err)) ||
      (rc = parse_accel(path_elem(item, "neuronInfo/neuronDevices"), t, err)) ||
      (rc = parse_accel(path_elem(item, "inferenceAcceleratorInfo/"
                                        "accelerators"),
                        t, err)))
    return rc;
  xmlNode *classes = first_elem(item, "supportedUsageClasses");
  if (!classes) {
    t->spot = t->on_demand = true;
  } else {
    FOR_EACH(c, classes, "item") {
      char buf[32];
      get_cut(c, NULL, buf, sizeof buf);
      if (!strcmp(buf, "spot"))
        t->spot = true;
      else if (!strcmp(buf, "on-demand"))
        t->on_demand = true;
    }
  }
  return TW_OK;
}

/* Eucalyptus: <item><name>m1.small</name><cpu>1</cpu><disk>5</disk>
 * <memory>256</memory> (MiB). */
static enum tw_rc parse_type_euca(const xmlNode *item,
                                  struct tw_ec2_instance_type *t,
                                  struct tw_err *err) {
  int64_t v = 0;
  enum tw_rc rc;
  if ((rc = GET(item, "name", t->name)) ||
      (rc = get_int(item, "cpu", 1 << 20, &v, err)) ||
      (rc = get_int(item, "memory", INT64_C(1) << 40, &t->memory_mib, err)))
    return rc;
  t->vcpus = (int)v;
  t->spot = false; /* Eucalyptus has no spot market */
  t->on_demand = true;
  return TW_OK;
}

enum tw_rc tw_ec2_parse_instance_types(const char *body, size_t len,
                                       struct tw_ec2_instance_type_list *out,
                                       char **next_token, struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  if (next_token)
    *next_token = NULL;
  static const char *const roots[] = {"DescribeInstanceTypesResponse", NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  FOR_EACH(item, first_elem(top, "instanceTypeSet"), "item") {
    if ((rc = parse_type_aws(item, tw_ec2_instance_type_list_add(out), err)))
      goto out;
  }
  FOR_EACH(item, first_elem(top, "instanceTypeDetails"), "item") {
    if ((rc = parse_type_euca(item, tw_ec2_instance_type_list_add(out), err)))
      goto out;
  }
  for (size_t i = first; i < out->n; i++)
    if (!*out->items[i].name) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: instance type without a name");
      goto out;
    }
  rc = take_next_token(top, next_token, err);
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}

/* ---- zones -------------------------------------------------------------- */

enum tw_rc tw_ec2_parse_zones(const char *body, size_t len,
                              struct tw_ec2_zone_list *out,
                              struct tw_err *err) {
  xmlDoc *doc;
  xmlNode *top;
  size_t first = out->n;
  static const char *const roots[] = {"DescribeAvailabilityZonesResponse",
                                      NULL};
  enum tw_rc rc = load(body, len, roots, &doc, &top, err);
  if (rc)
    return rc;
  FOR_EACH(item, first_elem(top, "availabilityZoneInfo"), "item") {
    struct tw_ec2_zone *z = tw_ec2_zone_list_add(out);
    if ((rc = GET(item, "zoneName", z->name)) ||
        (rc = GET(item, "zoneId", z->zone_id)) ||
        (rc = GET(item, "regionName", z->region)) ||
        (rc = GET(item, "zoneState", z->state)) ||
        (rc = GET(item, "zoneType", z->zone_type)))
      goto out;
    if (!*z->name) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "EC2 response: zone without <zoneName>");
      goto out;
    }
  }
out:
  if (rc)
    out->n = first;
  xmlFreeDoc(doc);
  return rc;
}
