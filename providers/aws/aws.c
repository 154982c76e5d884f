/* aws.c - the AWS EC2 adapter: the Query API (version 2016-11-15) over
 * POST form bodies signed with SigV4, answers read by ec2_xml.c.
 *
 * Translation only: retries, backoff and jitter are the http helper's
 * (providers/http.h), which calls aws_sign() before every attempt so each
 * attempt carries a fresh x-amz-date; decisions are the core's.  Config
 * keys, the error table and the event mapping: docs/providers.md. */
#include "providers/aws/aws.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "providers/adapter_util.h"
#include "providers/aws/aws_creds.h"
#include "providers/aws/ec2_xml.h"
#include "providers/aws/pricing.h"
#include "providers/http.h"
#include "providers/sigv4.h"

#define AWS_API_VERSION "2016-11-15"
#define AWS_FORM "application/x-www-form-urlencoded; charset=utf-8"
/* EC2 gives a spot instance two minutes between the instance-action
 * notice and the action itself. */
#define AWS_NOTICE_LEAD_MS 120000
/* EC2 bills Linux instances per second with a 60-second minimum. */
#define AWS_BILLING_GRANULARITY_S 1
#define AWS_MIN_CHARGE_S 60

struct aws_price {
  char type[TW_MODEL_NAME_MAX];
  char region[TW_MODEL_NAME_MAX]; /* "" = every region */
  int64_t uusd;
};

/* port_security_groups: {"22": sg-..., "8000-8100": sg-...} */
struct aws_port_sg {
  int lo, hi;
  char *sg;
};

/* subnets: {zone or region: subnet-...} */
struct aws_subnet {
  char where[TW_MODEL_NAME_MAX];
  char *subnet;
};

/* `notice_source`: where poll_events reads interruption notices. */
enum aws_notices {
  AWS_NOTICES_SPOT_REQUESTS, /* DescribeSpotInstanceRequests, per region */
  AWS_NOTICES_METADATA,      /* metadata_url, per live spot instance */
  AWS_NOTICES_NONE
};

struct aws_ctx {
  char *endpoint; /* may hold "{region}" */
  char **regions;
  size_t n_regions;
  struct tw_aws_creds *creds; /* the chain (aws_creds.h); never logged */
  struct tw_sigv4_key_cache sign_keys; /* per day, region and service */
  long timeout_ms, connect_timeout_ms;
  char *ca_file;
  struct tw_adapter_images images;
  char *subnet_id, *key_name;
  struct aws_subnet *subnets;
  size_t n_subnets;
  char *instance_profile; /* IamInstanceProfile: a name or an ARN */
  int64_t disk_size_gb;   /* root volume; 0: the AMI's */
  char *disk_type, *root_device;
  char **security_groups;
  size_t n_security_groups;
  struct aws_port_sg *port_sgs; /* the groups that open a job's ports */
  size_t n_port_sgs;
  char **types; /* instance_types: only these are offered; NULL all */
  size_t n_types;
  struct aws_price *prices; /* sorted by type, then region */
  size_t n_prices;
  int64_t spot_window_ms;
  char *product;
  int64_t max_pages;
  int64_t page_size;  /* MaxResults of the paged calls */
  char *metadata_url; /* events: per-instance metadata, "{id}" inside */
  enum aws_notices notices; /* where interruption notices are read */
  /* on-demand prices of types without a configured one: the Price List
   * Query API (pricing.h) at pricing_endpoint, unless price_list: false */
  bool price_list;
  char *pricing_endpoint;
  struct tw_http *http;

  /* Mutable after init. */
  atomic_llong skew_ms;        /* server clock minus ours, learnt from Date */
  struct tw_region_memo where; /* the region of each known instance */
};

/* ---- config ------------------------------------------------------------- */

static const char *const aws_keys[] = {"endpoint",
                                       "region",
                                       "regions",
                                       "access_key_env",
                                       "access_key_file",
                                       "secret_key_env",
                                       "secret_key_file",
                                       "session_token_env",
                                       "session_token_file",
                                       "access_key",
                                       "secret_key",
                                       "session_token",
                                       "timeout_ms",
                                       "connect_timeout_ms",
                                       "max_attempts",
                                       "backoff_base_ms",
                                       "backoff_cap_ms",
                                       "ca_file",
                                       "image",
                                       "images",
                                       "subnet_id",
                                       "security_group_ids",
                                       "key_name",
                                       "instance_types",
                                       "on_demand_prices",
                                       "price_file",
                                       "spot_history_s",
                                       "product_description",
                                       "max_pages",
                                       "page_size",
                                       "metadata_url",
                                       "notice_source",
                                       "price_list",
                                       "pricing_endpoint",
                                       "profile",
                                       "config_file",
                                       "credentials_file",
                                       "role_arn",
                                       "role_session_name",
                                       "external_id",
                                       "role_duration_s",
                                       "sts_endpoint",
                                       "imds_endpoint",
                                       "subnets",
                                       "instance_profile",
                                       "disk_size_gb",
                                       "disk_type",
                                       "root_device",
                                       "port_security_groups",
                                       NULL};

static int price_cmp(const void *a, const void *b) {
  const struct aws_price *x = a, *y = b;
  int c = strcmp(x->type, y->type);
  return c ? c : strcmp(x->region, y->region);
}

static enum tw_rc add_price(struct aws_ctx *a, const char *where,
                            const char *type, const char *region,
                            const struct tw_node *v, struct tw_err *err) {
  int64_t uusd;
  struct tw_err e = {0};
  if (v->kind != TW_NODE_SCALAR || tw_provider_usd_to_uusd(v->str, &uusd, &e))
    return tw_err_field(err, TW_E_INVALID, where,
                        "%s.%s%s%s: expected a USD amount per hour such as "
                        "\"0.096\"",
                        where, type, *region ? "." : "", region);
  a->prices = tw_realloc(a->prices, (a->n_prices + 1) * sizeof *a->prices);
  struct aws_price *p = &a->prices[a->n_prices++];
  if (!TW_SET(p->type, type) || !TW_SET(p->region, region)) {
    a->n_prices--;
    return tw_err_field(err, TW_E_INVALID, where, "%s.%s: name too long", where,
                        type);
  }
  p->uusd = uusd;
  return TW_OK;
}

/* on_demand_prices: {m5.large: "0.096", p4d.24xlarge: {us-east-1:
 * "32.7726", eu-west-1: "35.39"}} */
static enum tw_rc read_prices(struct aws_ctx *a, const struct tw_node *m,
                              const char *where, struct tw_err *err) {
  if (!m)
    return TW_OK;
  if (m->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, where,
                        "%s: expected a mapping of instance types to prices",
                        where);
  for (size_t i = 0; i < m->n; i++) {
    const struct tw_node *v = m->items[i];
    enum tw_rc rc;
    if (v->kind == TW_NODE_MAP) {
      for (size_t j = 0; j < v->n; j++)
        if ((rc =
                 add_price(a, where, m->keys[i], v->keys[j], v->items[j], err)))
          return rc;
    } else if ((rc = add_price(a, where, m->keys[i], "", v, err))) {
      return rc;
    }
  }
  return TW_OK;
}

static enum tw_rc read_price_file(struct aws_ctx *a, const char *path,
                                  struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return tw_err_field(err, TW_E_INVALID, "price_file",
                        "price_file: cannot open %s", path);
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  struct tw_node *root = NULL;
  struct tw_err e = {0};
  enum tw_rc rc = tw_node_parse_yaml(b.data ? b.data : "", b.len, &root, &e);
  tw_buf_release(&b);
  if (rc) {
    tw_node_free(root);
    return tw_err_field(err, TW_E_INVALID, "price_file", "price_file %s: %s",
                        path, e.msg);
  }
  rc = read_prices(a, root, "price_file", err);
  tw_node_free(root);
  return rc;
}

static const struct aws_price *
find_price(const struct aws_ctx *a, const char *type, const char *region) {
  struct aws_price key;
  memset(&key, 0, sizeof key);
  /* bsearch wants a non-NULL base even for nothing: no prices configured */
  if (!a->n_prices || !TW_SET(key.type, type) || !TW_SET(key.region, region))
    return NULL;
  const struct aws_price *p =
      bsearch(&key, a->prices, a->n_prices, sizeof *a->prices, price_cmp);
  if (p)
    return p;
  key.region[0] = '\0';
  return bsearch(&key, a->prices, a->n_prices, sizeof *a->prices, price_cmp);
}

/* The subnet of zone (in region): the zone's, the region's, subnet_id. */
static const char *subnet_for(const struct aws_ctx *a, const char *region,
                              const char *zone) {
  const char *reg = NULL;
  for (size_t i = 0; i < a->n_subnets; i++) {
    if (*zone && !strcmp(a->subnets[i].where, zone))
      return a->subnets[i].subnet;
    if (!strcmp(a->subnets[i].where, region))
      reg = a->subnets[i].subnet;
  }
  return reg ? reg : a->subnet_id;
}

static void aws_free(struct tw_provider *p) {
  struct aws_ctx *a = p->ctx;
  if (!a)
    return;
  tw_http_free(a->http);
  free(a->endpoint);
  tw_provider_strv_free(a->regions, a->n_regions);
  /* credentials are wiped, not just freed (aws_creds.c) */
  tw_aws_creds_free(a->creds);
  tw_sigv4_key_cache_release(&a->sign_keys);
  free(a->ca_file);
  tw_adapter_images_release(&a->images);
  free(a->subnet_id);
  free(a->key_name);
  for (size_t i = 0; i < a->n_subnets; i++)
    free(a->subnets[i].subnet);
  free(a->subnets);
  free(a->instance_profile);
  free(a->disk_type);
  free(a->root_device);
  tw_provider_strv_free(a->security_groups, a->n_security_groups);
  for (size_t i = 0; i < a->n_port_sgs; i++)
    free(a->port_sgs[i].sg);
  free(a->port_sgs);
  tw_provider_strv_free(a->types, a->n_types);
  free(a->prices);
  free(a->product);
  free(a->metadata_url);
  free(a->pricing_endpoint);
  tw_region_memo_release(&a->where);
  free(a);
  p->ctx = NULL;
}

/* Keys named in the config (access_key_env, _file or _secret): those,
 * static.  Otherwise the SDKs' chain (aws_creds.h), the config's profile,
 * files, role and endpoints steering it. */
static enum tw_rc init_creds(struct tw_provider *p, struct aws_ctx *a,
                             const struct tw_node *cfg, struct tw_err *err) {
  static const char *const static_keys[] = {"access_key_env",
                                            "access_key_file",
                                            "access_key_secret",
                                            "secret_key_env",
                                            "secret_key_file",
                                            "secret_key_secret",
                                            "session_token_env",
                                            "session_token_file",
                                            "session_token_secret",
                                            "access_key",
                                            "secret_key",
                                            "session_token",
                                            NULL};
  bool named = false;
  for (const char *const *k = static_keys; *k; k++)
    named = named || tw_node_get(cfg, *k) != NULL;
  enum tw_rc rc;
  const char *role_arn;
  if ((rc = tw_provider_cfg_str(cfg, "role_arn", NULL, &role_arn, err)))
    return rc;
  struct tw_aws_creds *base = NULL;
  if (named) {
    char *ak = NULL, *sk = NULL, *tok = NULL;
    if ((rc = tw_provider_cfg_secret(p, cfg, "access_key", "AWS_ACCESS_KEY_ID",
                                     true, &ak, err)) ||
        (rc = tw_provider_cfg_secret(
             p, cfg, "secret_key", "AWS_SECRET_ACCESS_KEY", true, &sk, err)) ||
        (rc = tw_provider_cfg_secret(p, cfg, "session_token",
                                     "AWS_SESSION_TOKEN", false, &tok, err))) {
      free(ak);
      free(sk);
      return rc;
    }
    base = tw_aws_creds_static(ak, sk, tok);
    free(ak);
    if (sk)
      OPENSSL_cleanse(sk, strlen(sk));
    if (tok)
      OPENSSL_cleanse(tok, strlen(tok));
    free(sk);
    free(tok);
    if (!base)
      return tw_err_field(err, TW_E_INVALID, "access_key_env",
                          "access_key: too long");
    if (!role_arn) {
      a->creds = base;
      return TW_OK;
    }
  }
  struct tw_aws_creds_opts o = {.clock = p->clock,
                                .http = a->http,
                                .ca_file = a->ca_file,
                                .region = a->regions[0],
                                .role_arn = role_arn};
  int64_t dur;
  if ((rc = tw_provider_cfg_str(cfg, "profile", NULL, &o.profile, err)) ||
      (rc = tw_provider_cfg_str(cfg, "config_file", NULL, &o.config_file,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "credentials_file", NULL,
                                &o.credentials_file, err)) ||
      (rc = tw_provider_cfg_str(cfg, "role_session_name", NULL,
                                &o.role_session_name, err)) ||
      (rc = tw_provider_cfg_str(cfg, "external_id", NULL, &o.external_id,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "sts_endpoint", NULL, &o.sts_endpoint,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "imds_endpoint", NULL, &o.imds_endpoint,
                                err)) ||
      (rc = tw_provider_cfg_int(cfg, "role_duration_s", 900, 43200, 3600, &dur,
                                err))) {
    tw_aws_creds_free(base);
    return rc;
  }
  o.duration_s = dur;
  if (named) {
    /* the configured keys assume role_arn */
    rc = tw_aws_creds_assume(base, &o, &a->creds, err);
    return rc;
  }
  if ((rc = tw_aws_creds_new(&o, &a->creds, err)))
    return rc;
  tw_log_info("aws", "account=%s credentials=%s", p->account,
              tw_aws_creds_source(a->creds));
  return TW_OK;
}

static enum tw_rc aws_init(struct tw_provider *p, const struct tw_node *cfg,
                           struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_check_keys(cfg, aws_keys, err);
  if (rc)
    return rc;
  tw_ec2_xml_init();
  struct aws_ctx *a = tw_calloc(1, sizeof *a);
  tw_sigv4_key_cache_init(&a->sign_keys);
  tw_region_memo_init(&a->where);
  atomic_init(&a->skew_ms, 0);
  p->ctx = a;

  int64_t v;
  if ((rc = tw_provider_cfg_strdup(cfg, "endpoint",
                                   "https://ec2.{region}.amazonaws.com",
                                   &a->endpoint, err)))
    return rc;
  if (strncmp(a->endpoint, "http://", 7) && strncmp(a->endpoint, "https://", 8))
    return tw_err_field(err, TW_E_INVALID, "endpoint",
                        "endpoint: expected an http:// or https:// URL");
  if ((rc = tw_provider_cfg_regions(cfg, &a->regions, &a->n_regions, err)))
    return rc;
  for (size_t i = 0; i < a->n_regions; i++)
    if (strlen(a->regions[i]) >= TW_MODEL_NAME_MAX)
      return tw_err_field(err, TW_E_INVALID, "regions",
                          "regions[%zu]: too long", i);
  a->where.regions = a->regions;
  a->where.n_regions = a->n_regions;

  /* Retries and timeouts of every call (providers/http.h). */
  static const struct tw_provider_http_limits http_limits =
      TW_PROVIDER_HTTP_CLOUD;
  struct tw_http_opts ho = {.clock = p->clock};
  if ((rc = tw_provider_cfg_http(cfg, &http_limits, &a->timeout_ms,
                                 &a->connect_timeout_ms, &ho, err)) ||
      (rc = tw_provider_cfg_int(cfg, "spot_history_s", 60, 90 * 86400, 3600, &v,
                                err)))
    return rc;
  a->spot_window_ms = v * 1000;
  if ((rc = tw_provider_cfg_int(cfg, "max_pages", 1, 100000, 1000,
                                &a->max_pages, err)) ||
      (rc = tw_provider_cfg_int(cfg, "page_size", 5, 1000, 1000, &a->page_size,
                                err)))
    return rc;
  if ((rc = tw_provider_cfg_strdup(cfg, "ca_file", NULL, &a->ca_file, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "subnet_id", NULL, &a->subnet_id,
                                   err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "key_name", NULL, &a->key_name, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "product_description", "Linux/UNIX",
                                   &a->product, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "metadata_url", NULL, &a->metadata_url,
                                   err)) ||
      (rc = tw_provider_cfg_list(cfg, "security_group_ids", &a->security_groups,
                                 &a->n_security_groups, err)) ||
      (rc = tw_provider_cfg_list(cfg, "instance_types", &a->types, &a->n_types,
                                 err)))
    return rc;
  if (a->n_types > 100)
    return tw_err_field(err, TW_E_INVALID, "instance_types",
                        "instance_types: at most 100 (one "
                        "DescribeInstanceTypes request), got %zu",
                        a->n_types);
  if (a->metadata_url && !strstr(a->metadata_url, "{id}"))
    return tw_err_field(err, TW_E_INVALID, "metadata_url",
                        "metadata_url: must contain {id}, replaced by the "
                        "instance id");
  /* notice_source: spot-requests, metadata (the default when metadata_url
   * is set, as before the key existed) or none. */
  const char *ns;
  if ((rc = tw_provider_cfg_str(cfg, "notice_source",
                                a->metadata_url ? "metadata" : "spot-requests",
                                &ns, err)))
    return rc;
  if (!strcmp(ns, "spot-requests"))
    a->notices = AWS_NOTICES_SPOT_REQUESTS;
  else if (!strcmp(ns, "metadata"))
    a->notices = AWS_NOTICES_METADATA;
  else if (!strcmp(ns, "none"))
    a->notices = AWS_NOTICES_NONE;
  else
    return tw_err_field(err, TW_E_INVALID, "notice_source",
                        "notice_source: \"%s\" is not spot-requests, "
                        "metadata or none",
                        ns);
  if (a->notices == AWS_NOTICES_METADATA && !a->metadata_url)
    return tw_err_field(err, TW_E_INVALID, "notice_source",
                        "notice_source: metadata needs metadata_url");

  /* image: ami-... for every region; images: {region: ami-...}. */
  if ((rc = tw_adapter_images_read(cfg, "an AMI id", &a->images, err)))
    return rc;

  /* subnets: {us-east-1a: subnet-..., us-west-2: subnet-...} */
  const struct tw_node *sn = tw_node_get(cfg, "subnets");
  if (sn && sn->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "subnets",
                        "subnets: expected a mapping of zones or regions to "
                        "subnet ids");
  a->subnets = tw_calloc(sn ? sn->n + 1 : 1, sizeof *a->subnets);
  for (size_t i = 0; sn && i < sn->n; i++) {
    if (sn->items[i]->kind != TW_NODE_SCALAR ||
        strncmp(sn->items[i]->str, "subnet-", 7) ||
        strlen(sn->keys[i]) >= TW_MODEL_NAME_MAX)
      return tw_err_field(err, TW_E_INVALID, "subnets",
                          "subnets.%s: expected a subnet id (subnet-...)",
                          sn->keys[i]);
    struct aws_subnet *e = &a->subnets[a->n_subnets++];
    TW_SET(e->where, sn->keys[i]);
    e->subnet = tw_strdup(sn->items[i]->str);
  }
  /* port_security_groups: the security group that opens each port or
   * range a job may ask for (the adapter creates no groups) */
  const struct tw_node *ps = tw_node_get(cfg, "port_security_groups");
  if (ps && ps->kind != TW_NODE_MAP)
    return tw_err_field(err, TW_E_INVALID, "port_security_groups",
                        "port_security_groups: expected a mapping of ports "
                        "or ranges (\"8000-8100\") to security group ids");
  a->port_sgs = tw_calloc(ps ? ps->n + 1 : 1, sizeof *a->port_sgs);
  for (size_t i = 0; ps && i < ps->n; i++) {
    char *end;
    long lo = strtol(ps->keys[i], &end, 10), hi = lo;
    if (*end == '-')
      hi = strtol(end + 1, &end, 10);
    if (*end || lo < 1 || hi > 65535 || lo > hi ||
        ps->items[i]->kind != TW_NODE_SCALAR ||
        strncmp(ps->items[i]->str, "sg-", 3))
      return tw_err_field(err, TW_E_INVALID, "port_security_groups",
                          "port_security_groups.%s: expected a port or "
                          "range 1..65535 mapped to a security group id "
                          "(sg-...)",
                          ps->keys[i]);
    struct aws_port_sg *e = &a->port_sgs[a->n_port_sgs++];
    e->lo = (int)lo;
    e->hi = (int)hi;
    e->sg = tw_strdup(ps->items[i]->str);
  }
  if ((rc = tw_provider_cfg_strdup(cfg, "instance_profile", NULL,
                                   &a->instance_profile, err)) ||
      (rc = tw_provider_cfg_int(cfg, "disk_size_gb", 0, 65536, 0,
                                &a->disk_size_gb, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "disk_type", NULL, &a->disk_type,
                                   err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "root_device", "/dev/xvda",
                                   &a->root_device, err)))
    return rc;

  if ((rc = read_prices(a, tw_node_get(cfg, "on_demand_prices"),
                        "on_demand_prices", err)))
    return rc;
  const char *pl;
  if ((rc = tw_provider_cfg_str(cfg, "price_list", "true", &pl, err)))
    return rc;
  if (strcmp(pl, "true") && strcmp(pl, "false"))
    return tw_err_field(err, TW_E_INVALID, "price_list",
                        "price_list: expected true or false, got \"%.32s\"",
                        pl);
  a->price_list = !strcmp(pl, "true");
  /* an endpoint of one's own (a proxy, the fake cloud) serves the Price
   * List too unless told otherwise */
  bool own_endpoint = tw_node_get(cfg, "endpoint") != NULL;
  if ((rc = tw_provider_cfg_strdup(
           cfg, "pricing_endpoint",
           own_endpoint ? a->endpoint
                        : "https://api.pricing.us-east-1.amazonaws.com",
           &a->pricing_endpoint, err)))
    return rc;
  if (strncmp(a->pricing_endpoint, "http://", 7) &&
      strncmp(a->pricing_endpoint, "https://", 8))
    return tw_err_field(err, TW_E_INVALID, "pricing_endpoint",
                        "pricing_endpoint: expected an http:// or https:// "
                        "URL");
  const char *price_file;
  if ((rc = tw_provider_cfg_str(cfg, "price_file", NULL, &price_file, err)))
    return rc;
  if (price_file && (rc = read_price_file(a, price_file, err)))
    return rc;
  if (a->n_prices)
    qsort(a->prices, a->n_prices, sizeof *a->prices, price_cmp);

  if ((rc = tw_http_new(&ho, &a->http, err)))
    return rc;
  return init_creds(p, a, cfg, err);
}

/* ---- signed calls ------------------------------------------------------- */

/* Form values and names, percent-encoded as SigV4 canonicalizes them, so
 * what is signed is byte for byte what is sent. */
static void form_add(struct tw_buf *b, const char *name, const char *value) {
  char *enc = NULL;
  tw_buf_addc(b, '&');
  tw_buf_adds(b, name);
  tw_buf_addc(b, '=');
  tw_sigv4_uri_encode(value, strlen(value), 0, &enc);
  tw_buf_adds(b, enc);
  free(enc);
}

static void form_addf(struct tw_buf *b, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void form_addf(struct tw_buf *b, const char *value, const char *fmt,
                      ...) {
  char name[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  form_add(b, name, value);
}

static void amz_date(int64_t ms, char out[17]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

struct aws_req {
  struct tw_provider *p;
  struct aws_ctx *a;
  const char *region;
  /* another service than EC2's query API (the Price List's JSON 1.1):
   * NULL for EC2 */
  const char *endpoint, *service, *content_type, *target;
  char host[256];
  char path[512];
  char url[1024];
  const struct tw_buf *body;
};

/* Splits the endpoint (its {region} replaced) into URL, host and path. */
static enum tw_rc endpoint_for(struct aws_req *r, struct tw_err *err) {
  struct tw_buf u;
  tw_buf_init(&u);
  const char *e = r->endpoint ? r->endpoint : r->a->endpoint, *at;
  while ((at = strstr(e, "{region}"))) {
    tw_buf_add(&u, e, (size_t)(at - e));
    tw_buf_adds(&u, r->region);
    e = at + strlen("{region}");
  }
  tw_buf_adds(&u, e);
  const char *hs = strstr(u.data, "://") + 3;
  size_t hl = strcspn(hs, "/?#");
  const char *path = hs + hl;
  enum tw_rc rc = TW_OK;
  if (hl == 0 || hl >= sizeof r->host || strlen(path) >= sizeof r->path ||
      u.len + 2 >= sizeof r->url) {
    rc = tw_err_set(err, TW_E_INVALID, "aws: endpoint %s: malformed",
                    r->endpoint ? r->endpoint : r->a->endpoint);
  } else {
    memcpy(r->host, hs, hl);
    r->host[hl] = '\0';
    snprintf(r->path, sizeof r->path, "%s", *path ? path : "/");
    snprintf(r->url, sizeof r->url, "%s%s", u.data, *path ? "" : "/");
  }
  tw_buf_release(&u);
  return rc;
}

/* The http helper's prepare hook: sign this attempt. */
static enum tw_rc aws_sign(void *vctx, struct tw_http_attempt *att,
                           struct tw_err *err) {
  struct aws_req *r = vctx;
  struct aws_ctx *a = r->a;
  struct tw_aws_key key;
  enum tw_rc rc = tw_aws_creds_get(a->creds, &key, err);
  if (rc)
    return rc;
  const char *token = *key.session_token ? key.session_token : NULL;
  char date[17];
  amz_date(tw_clock_now_ms(r->p->clock) + atomic_load(&a->skew_ms), date);
  struct tw_sigv4_header h[5] = {
      {"host", r->host},
      {"content-type", r->content_type ? r->content_type : AWS_FORM},
      {"x-amz-date", date}};
  size_t nh = 3;
  if (r->target)
    h[nh++] = (struct tw_sigv4_header){"x-amz-target", r->target};
  if (token)
    h[nh++] = (struct tw_sigv4_header){"x-amz-security-token", token};
  struct tw_sigv4_request sr = {.method = "POST",
                                .path = r->path,
                                .query = NULL,
                                .headers = h,
                                .n_headers = nh,
                                .body = r->body->data,
                                .body_len = r->body->len};
  struct tw_sigv4_params sp = {.access_key = key.access_key,
                               .secret_key = key.secret_key,
                               .session_token = token,
                               .region = r->region,
                               .service = r->service ? r->service : "ec2",
                               .amz_date = date,
                               .normalize_path = 1,
                               .key_cache = &a->sign_keys};
  struct tw_sigv4_result res;
  memset(&res, 0, sizeof res);
  rc = tw_sigv4_sign(&sr, &sp, &res, err);
  if (rc == TW_OK) {
    tw_http_attempt_add_header(att, "X-Amz-Date", date);
    tw_http_attempt_add_header(att, "Authorization", res.authorization);
    if (token)
      tw_http_attempt_add_header(att, "X-Amz-Security-Token", token);
  }
  tw_sigv4_result_release(&res);
  tw_aws_key_wipe(&key);
  return rc;
}

/* The http helper retries 429 and 5xx; EC2 sends some errors that no
 * retry can fix with those statuses (InsufficientInstanceCapacity: 500). */
static bool aws_should_retry(void *ctx, long status,
                             const struct tw_buf *body) {
  struct tw_ec2_error e;
  if (body && tw_ec2_parse_error(body->data, body->len, &e))
    return tw_ec2_error_class(e.code, status) == TW_E_RETRYABLE;
  return true;
}

/* Calls action in region with the form parameters in params (each
 * "&Name=value"); on success *out holds the response body. */
static enum tw_rc aws_call(struct tw_provider *p, const char *region,
                           const char *action, const struct tw_buf *params,
                           struct tw_buf *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct aws_req r;
  memset(&r, 0, sizeof r);
  r.p = p;
  r.a = a;
  r.region = region;
  enum tw_rc rc = endpoint_for(&r, err);
  if (rc)
    return rc;
  struct tw_buf body;
  tw_buf_init(&body);
  tw_buf_printf(&body, "Action=%s&Version=%s", action, AWS_API_VERSION);
  if (params && params->len)
    tw_buf_add(&body, params->data, params->len);
  r.body = &body;

  const struct tw_http_header hdrs[] = {{"Host", r.host},
                                        {"Content-Type", AWS_FORM}};
  struct tw_http_request req = {.method = "POST",
                                .url = r.url,
                                .headers = hdrs,
                                .n_headers = 2,
                                .body = body.data,
                                .body_len = body.len,
                                .timeout_ms = a->timeout_ms,
                                .connect_timeout_ms = a->connect_timeout_ms,
                                .max_body_bytes = TW_EC2_XML_MAX_BYTES,
                                .ca_file = a->ca_file,
                                .prepare = aws_sign,
                                .prepare_ctx = &r,
                                .should_retry = aws_should_retry};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  for (int round = 0;; round++) {
    struct tw_err e = {0};
    rc = tw_http_do(a->http, &req, &resp, &e);
    if (rc) {
      if (!*e.detail)
        tw_err_detail(&e, "transport");
      if (err && err->rc == TW_OK)
        *err = e;
      break;
    }
    if (resp.status == 200) {
      tw_buf_release(out);
      *out = resp.body;
      tw_buf_init(&resp.body);
      break;
    }
    rc = tw_ec2_response_error(action, resp.status, resp.body.data,
                               resp.body.len, &e);
    /* Our clock is off (or the server's is, as a fast-forwarded fake
     * cloud's): learn the offset from its Date and sign again once, as
     * the AWS SDKs correct clock skew. */
    int64_t server_ms =
        tw_adapter_http_date_ms(tw_http_response_header(&resp, "Date"));
    if (round == 0 && server_ms > 0 &&
        (!strcmp(e.detail, "RequestExpired") ||
         !strcmp(e.detail, "RequestTimeTooSkewed"))) {
      atomic_store(&a->skew_ms, server_ms - tw_clock_now_ms(p->clock));
      continue;
    }
    /* temporary credentials revoked or expired before their time: fetch
     * new ones and sign again once */
    if (round == 0 && (!strcmp(e.detail, "ExpiredToken") ||
                       !strcmp(e.detail, "RequestExpiredToken"))) {
      tw_aws_creds_invalidate(a->creds);
      continue;
    }
    if (err && err->rc == TW_OK)
      *err = e;
    break;
  }
  if (!strcmp(action, "RunInstances"))
    rc = tw_adapter_refusal_settled(rc, resp.unanswered, "aws RunInstances",
                                    err);
  tw_http_response_release(&resp);
  tw_buf_release(&body);
  return rc;
}

/* ---- launch, describe, terminate ---------------------------------------- */

static enum tw_rc aws_launch(struct tw_provider *p, const struct tw_launch *req,
                             struct tw_instance *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  const struct tw_offer *o = req->offer;
  if (!tw_provider_strv_has(a->regions, a->n_regions, o->region))
    return tw_err_set(err, TW_E_INVALID,
                      "aws launch: region %s is not configured for %s",
                      o->region, p->account);
  const char *image =
      req->image ? req->image
                 : tw_adapter_image_for(&a->images, o->region, o->arch);
  if (!image)
    return tw_err_field(err, TW_E_INVALID, "image",
                        "aws launch: no image for region %s and %s (set "
                        "image or images.%s)",
                        o->region,
                        o->arch == TW_ARCH_ARM64    ? "arm64"
                        : o->arch == TW_ARCH_X86_64 ? "x86_64"
                                                    : "any architecture",
                        o->region);
  struct tw_buf f, body;
  tw_buf_init(&f);
  tw_buf_init(&body);
  form_add(&f, "ImageId", image);
  form_add(&f, "InstanceType", o->instance_type);
  form_add(&f, "MinCount", "1");
  form_add(&f, "MaxCount", "1");
  /* The attempt's token: if a first call timed out after EC2 accepted it,
   * the retry (here or in the http helper) returns the same instance
   * instead of buying a second one. */
  form_add(&f, "ClientToken", req->client_token);
  if (*o->zone)
    form_add(&f, "Placement.AvailabilityZone", o->zone);
  if (o->market == TW_MARKET_SPOT) {
    form_add(&f, "InstanceMarketOptions.MarketType", "spot");
    form_add(&f, "InstanceMarketOptions.SpotOptions.SpotInstanceType",
             "one-time");
    form_add(&f,
             "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior",
             "terminate");
    if (req->max_price_uusd_per_hour > 0) {
      char price[32];
      snprintf(price, sizeof price, "%lld.%06lld",
               (long long)(req->max_price_uusd_per_hour / 1000000),
               (long long)(req->max_price_uusd_per_hour % 1000000));
      form_add(&f, "InstanceMarketOptions.SpotOptions.MaxPrice", price);
    }
  }
  form_add(&f, "TagSpecification.1.ResourceType", "instance");
  const char *tags[][2] = {{TW_TAG_JOB, req->job_id},
                           {TW_TAG_ATTEMPT, req->attempt_id},
                           {TW_TAG_TENANT, req->tenant}};
  for (int i = 0; i < 3; i++) {
    form_addf(&f, tags[i][0], "TagSpecification.1.Tag.%d.Key", i + 1);
    form_addf(&f, tags[i][1], "TagSpecification.1.Tag.%d.Value", i + 1);
  }
  const char *subnet = subnet_for(a, o->region, o->zone);
  if (subnet)
    form_add(&f, "SubnetId", subnet);
  if (a->instance_profile)
    form_add(&f,
             strncmp(a->instance_profile, "arn:", 4) ? "IamInstanceProfile.Name"
                                                     : "IamInstanceProfile.Arn",
             a->instance_profile);
  /* the root volume: the job's disk, else the config's, else the AMI's */
  int64_t disk_gb = req->disk_size_gb ? req->disk_size_gb : a->disk_size_gb;
  /* tier words as EBS volume types: standard (HDD), gp3, gp3, io2 */
  static const char *const tiers[4] = {"standard", "gp3", "gp3", "io2"};
  const char *disk_type = tw_adapter_disk_tier(
      tiers, req->disk_type ? req->disk_type : a->disk_type);
  if (disk_gb || disk_type) {
    char gb[24];
    form_add(&f, "BlockDeviceMapping.1.DeviceName", a->root_device);
    if (disk_gb) {
      snprintf(gb, sizeof gb, "%lld", (long long)disk_gb);
      form_add(&f, "BlockDeviceMapping.1.Ebs.VolumeSize", gb);
    }
    if (disk_type)
      form_add(&f, "BlockDeviceMapping.1.Ebs.VolumeType", disk_type);
    form_add(&f, "BlockDeviceMapping.1.Ebs.DeleteOnTermination", "true");
  }
  size_t n_sg = 0;
  for (size_t i = 0; i < a->n_security_groups; i++)
    form_addf(&f, a->security_groups[i], "SecurityGroupId.%zu", ++n_sg);
  /* the job's ports: each opened by a configured group covering it, the
   * group added once */
  const char *added[64];
  size_t n_added = 0;
  for (size_t i = 0; i < req->n_ports; i++) {
    const struct aws_port_sg *hit = NULL;
    for (size_t j = 0; j < a->n_port_sgs && !hit; j++)
      if (req->ports[i].lo >= a->port_sgs[j].lo &&
          req->ports[i].hi <= a->port_sgs[j].hi)
        hit = &a->port_sgs[j];
    if (!hit) {
      tw_buf_release(&f);
      return tw_err_field(err, TW_E_INVALID, "ports",
                          "aws launch: no security group of %s opens port "
                          "%d-%d (port_security_groups)",
                          p->account, req->ports[i].lo, req->ports[i].hi);
    }
    bool dup = false;
    for (size_t k = 0; k < n_added && !dup; k++)
      dup = !strcmp(added[k], hit->sg);
    for (size_t k = 0; k < a->n_security_groups && !dup; k++)
      dup = !strcmp(a->security_groups[k], hit->sg);
    if (!dup && n_added < 64) {
      added[n_added++] = hit->sg;
      form_addf(&f, hit->sg, "SecurityGroupId.%zu", ++n_sg);
    }
  }
  if (a->key_name)
    form_add(&f, "KeyName", a->key_name);
  if (req->user_data) {
    size_t n = strlen(req->user_data);
    /* EC2 takes at most 16 KiB of user data, before encoding. */
    if (n > 16384) {
      tw_buf_release(&f);
      return tw_err_field(err, TW_E_INVALID, "user_data",
                          "aws launch: user data is %zu bytes, EC2 takes "
                          "at most 16384",
                          n);
    }
    unsigned char *b64 = tw_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock(b64, (const unsigned char *)req->user_data, (int)n);
    form_add(&f, "UserData", (const char *)b64);
    free(b64);
  }

  enum tw_rc rc = aws_call(p, o->region, "RunInstances", &f, &body, err);
  if (rc)
    goto out;
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  rc = tw_ec2_parse_instances(body.data, body.len, &l, NULL, err);
  if (rc == TW_OK && l.n != 1)
    rc = tw_err_set(err, TW_E_INTERNAL,
                    "aws RunInstances: %zu instances in the answer, asked 1",
                    l.n);
  if (rc == TW_OK) {
    *out = l.items[0];
    TW_SET(out->region, o->region);
    tw_region_memo_put(&a->where, out->id, o->region);
  }
  tw_instance_list_release(&l);
out:
  tw_buf_release(&f);
  tw_buf_release(&body);
  return rc;
}

/* DescribeInstances of one id in one region.  TW_E_NOTFOUND when the
 * region does not know it. */
static enum tw_rc describe_in(struct tw_provider *p, const char *region,
                              const char *id, struct tw_instance *out,
                              struct tw_err *err) {
  struct tw_buf f, body;
  tw_buf_init(&f);
  tw_buf_init(&body);
  form_add(&f, "InstanceId.1", id);
  enum tw_rc rc = aws_call(p, region, "DescribeInstances", &f, &body, err);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  if (rc == TW_OK)
    rc = tw_ec2_parse_instances(body.data, body.len, &l, NULL, err);
  if (rc == TW_OK && !tw_adapter_find_instance(&l, id, region, out)) {
    /* EC2 answers an empty set for an instance terminated long ago. */
    tw_err_detail(err, "InvalidInstanceID.NotFound");
    rc =
        tw_err_set(err, TW_E_NOTFOUND, "aws: no instance %s in %s", id, region);
  }
  tw_instance_list_release(&l);
  tw_buf_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc describe_fn(struct tw_provider *p, const char *region,
                              const char *id, void *out, struct tw_err *err) {
  return describe_in(p, region, id, out, err);
}

static enum tw_rc aws_describe(struct tw_provider *p, const char *id,
                               struct tw_instance *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  return tw_region_memo_run(&a->where, p, id, describe_fn, out, err);
}

/* Ids asked in one batched DescribeInstances (EC2 takes up to 1,000; a
 * smaller batch keeps one answer's parse short and a whole-call NotFound
 * cheap to split). */
#define AWS_DESCRIBE_BATCH 200

/* DescribeInstances of ids[idx[0..k)] in region, one call.  Each id the
 * answer holds is answered (rc TW_OK, done); one the answer leaves out
 * stays not done, for the per-instance path.  Returns the call's class:
 * TW_E_NOTFOUND when EC2 refused the whole call for an id this region
 * does not know (InvalidInstanceID.NotFound names the call, not one id). */
static enum tw_rc describe_batch_in(struct tw_provider *p, const char *region,
                                    const char *const *ids, const size_t *idx,
                                    size_t k, struct tw_instance *out,
                                    enum tw_rc *rc, bool *done,
                                    struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_buf f, body;
  tw_buf_init(&f);
  tw_buf_init(&body);
  for (size_t j = 0; j < k; j++)
    form_addf(&f, ids[idx[j]], "InstanceId.%zu", j + 1);
  enum tw_rc r = aws_call(p, region, "DescribeInstances", &f, &body, err);
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  if (r == TW_OK)
    r = tw_ec2_parse_instances(body.data, body.len, &l, NULL, err);
  if (r == TW_OK) {
    /* the answer mostly keeps the order asked: look from the last hit */
    size_t at = 0;
    for (size_t j = 0; j < k && l.n; j++) {
      size_t i = idx[j];
      for (size_t t = 0; t < l.n; t++) {
        size_t m = (at + t) % l.n;
        if (strcmp(l.items[m].id, ids[i]))
          continue;
        out[i] = l.items[m];
        TW_SET(out[i].region, region);
        tw_region_memo_put(&a->where, ids[i], region);
        rc[i] = TW_OK;
        done[i] = true;
        at = m + 1;
        break;
      }
    }
  }
  tw_instance_list_release(&l);
  tw_buf_release(&f);
  tw_buf_release(&body);
  return r;
}

/* describe_batch_in, with a whole-call NotFound split in halves until the
 * ids this region does not know are alone (left to the per-instance
 * path, which asks the other regions); any other failure answers every
 * id of the batch with its class. */
static void describe_split(struct tw_provider *p, const char *region,
                           const char *const *ids, const size_t *idx, size_t k,
                           struct tw_instance *out, enum tw_rc *rc, bool *done,
                           struct tw_err *err) {
  struct tw_err e = {0};
  enum tw_rc r = describe_batch_in(p, region, ids, idx, k, out, rc, done, &e);
  if (r == TW_OK)
    return;
  /* a malformed id fails the whole call too: split until it is alone,
   * and answered as its own describe would be */
  bool malformed = r == TW_E_INVALID && k > 1 &&
                   !strcmp(e.detail, "InvalidInstanceID.Malformed");
  if (r == TW_E_NOTFOUND || malformed) {
    if (k > 1) {
      describe_split(p, region, ids, idx, k / 2, out, rc, done, err);
      describe_split(p, region, ids, idx + k / 2, k - k / 2, out, rc, done,
                     err);
    }
    return;
  }
  for (size_t j = 0; j < k; j++) {
    rc[idx[j]] = r;
    done[idx[j]] = true;
  }
  if (err && err->rc == TW_OK)
    *err = e;
}

/* Many instances described together: one DescribeInstances per region
 * (the one each id was launched or last seen in) for up to
 * AWS_DESCRIBE_BATCH ids; an id no batch answered for is described alone
 * (aws_describe: every region tried, an empty answer or NotFound from
 * each is TW_E_NOTFOUND), so a batch never calls an instance gone that a
 * describe of its own would find. */
static enum tw_rc aws_describe_many(struct tw_provider *p,
                                    const char *const *ids, size_t n,
                                    struct tw_instance *out, enum tw_rc *rc,
                                    struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  size_t *hint = tw_calloc(n, sizeof *hint), *idx = tw_calloc(n, sizeof *idx);
  bool *done = tw_calloc(n, sizeof *done);
  for (size_t i = 0; i < n; i++)
    hint[i] = tw_region_memo_hint(&a->where, ids[i]);
  for (size_t r = 0; r < a->n_regions; r++) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (hint[i] == r)
        idx[k++] = i;
    for (size_t at = 0; at < k; at += AWS_DESCRIBE_BATCH)
      describe_split(p, a->regions[r], ids, idx + at,
                     k - at < AWS_DESCRIBE_BATCH ? k - at : AWS_DESCRIBE_BATCH,
                     out, rc, done, err);
  }
  for (size_t i = 0; i < n; i++)
    if (!done[i]) {
      struct tw_err e = {0};
      rc[i] =
          tw_region_memo_run(&a->where, p, ids[i], describe_fn, &out[i], &e);
      if (rc[i] && rc[i] != TW_E_NOTFOUND && err && err->rc == TW_OK)
        *err = e;
    }
  free(hint);
  free(idx);
  free(done);
  return TW_OK;
}

static enum tw_rc terminate_fn(struct tw_provider *p, const char *region,
                               const char *id, void *arg, struct tw_err *err) {
  struct tw_buf f, body;
  tw_buf_init(&f);
  tw_buf_init(&body);
  form_add(&f, "InstanceId.1", id);
  enum tw_rc rc = aws_call(p, region, "TerminateInstances", &f, &body, err);
  if (rc == TW_OK) {
    struct tw_ec2_state_change_list l;
    tw_ec2_state_change_list_init(&l);
    rc = tw_ec2_parse_state_changes(body.data, body.len, &l, err);
    if (rc == TW_OK && (l.n != 1 || strcmp(l.items[0].id, id)))
      rc = tw_err_set(err, TW_E_INTERNAL,
                      "aws TerminateInstances %s: answered for another "
                      "instance",
                      id);
    tw_ec2_state_change_list_release(&l);
  }
  tw_buf_release(&f);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc aws_terminate(struct tw_provider *p, const char *id,
                                struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  return tw_region_memo_run(&a->where, p, id, terminate_fn, NULL, err);
}

/* ---- paged listings ----------------------------------------------------- */

/* The states of an instance that still exists, runs or can be started
 * again: everything but terminated.  EC2 keeps answering for terminated
 * instances for about an hour, so a listing without this filter grows
 * with the last hour's history (10,000 terminated beside 100 live: 11
 * pages instead of 1, docs/benchmarks.md). */
static const char *const live_states[] = {
    "pending", "running", "shutting-down", "stopping", "stopped", NULL};
/* Only these get interruption notices. */
static const char *const running_states[] = {"pending", "running", NULL};

/* One paged EC2 call in one region: form holds the call's own parameters
 * (the same on every page); each page adds MaxResults (page_size) and the
 * previous page's NextToken, is sent, and its answer goes to parse, which
 * reads it and returns the next token (an owned string, NULL on the last
 * page).  More than max_pages pages is TW_E_TOOBIG.  The answer's buffer
 * is reused from page to page. */
typedef enum tw_rc (*ec2_page_fn)(void *ctx, const struct tw_buf *body,
                                  char **next, struct tw_err *err);

static enum tw_rc ec2_pages(struct tw_provider *p, const char *region,
                            const char *action, struct tw_buf *form,
                            int64_t page_size, ec2_page_fn parse, void *ctx,
                            struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  char *next = NULL, page[24];
  enum tw_rc rc = TW_OK;
  struct tw_buf body;
  tw_buf_init(&body);
  snprintf(page, sizeof page, "%lld", (long long)page_size);
  size_t fixed = form->len;
  int64_t pages = 0;
  do {
    if (++pages > a->max_pages) {
      rc = tw_err_set(err, TW_E_TOOBIG, "aws %s %s: more than %lld pages",
                      action, region, (long long)a->max_pages);
      break;
    }
    form->len = fixed;
    form_add(form, "MaxResults", page);
    if (next)
      form_add(form, "NextToken", next);
    free(next);
    next = NULL;
    if ((rc = aws_call(p, region, action, form, &body, err)) ||
        (rc = parse(ctx, &body, &next, err)))
      break;
  } while (next);
  free(next);
  form->len = fixed;
  tw_buf_release(&body);
  return rc;
}

struct managed_page {
  struct tw_provider *p;
  const char *region;
  struct tw_instance_list *out;
};

static enum tw_rc managed_page(void *ctx, const struct tw_buf *body,
                               char **next, struct tw_err *err) {
  struct managed_page *m = ctx;
  struct aws_ctx *a = m->p->ctx;
  size_t first = m->out->n;
  enum tw_rc rc =
      tw_ec2_parse_instances(body->data, body->len, m->out, next, err);
  if (rc)
    return rc;
  for (size_t i = first; i < m->out->n; i++) {
    TW_SET(m->out->items[i].region, m->region);
    tw_region_memo_put(&a->where, m->out->items[i].id, m->region);
  }
  return TW_OK;
}

/* Tradewind's instances in one region in one of states (NULL-terminated;
 * NULL: any state), every page (tag-key filter: all instances carrying
 * tradewind:job, whatever the value).  Each page is parsed and its buffer
 * reused before the next is asked for. */
static enum tw_rc managed_in(struct tw_provider *p, const char *region,
                             const char *const *states,
                             const char *extra_filter_name,
                             const char *extra_filter_value,
                             struct tw_instance_list *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_buf f;
  tw_buf_init(&f);
  form_add(&f, "Filter.1.Name", "tag-key");
  form_add(&f, "Filter.1.Value.1", TW_TAG_JOB);
  int n_filter = 1;
  if (states) {
    n_filter++;
    form_add(&f, "Filter.2.Name", "instance-state-name");
    for (size_t i = 0; states[i]; i++)
      form_addf(&f, states[i], "Filter.2.Value.%zu", i + 1);
  }
  if (extra_filter_name) {
    n_filter++;
    form_addf(&f, extra_filter_name, "Filter.%d.Name", n_filter);
    form_addf(&f, extra_filter_value, "Filter.%d.Value.1", n_filter);
  }
  struct managed_page m = {p, region, out};
  enum tw_rc rc = ec2_pages(p, region, "DescribeInstances", &f, a->page_size,
                            managed_page, &m, err);
  tw_buf_release(&f);
  return rc;
}

static enum tw_rc aws_list_managed(struct tw_provider *p,
                                   struct tw_instance_list *out,
                                   struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  for (size_t r = 0; r < a->n_regions; r++) {
    enum tw_rc rc =
        managed_in(p, a->regions[r], live_states, NULL, NULL, out, err);
    if (rc)
      return rc;
  }
  return TW_OK;
}

/* The instance RunInstances made for client token `token`: EC2's
 * DescribeInstances filter client-token, in the launch's region (every
 * configured one when none is given).  An empty answer from every region
 * asked is a definite "none". */
static enum tw_rc aws_find_by_token(struct tw_provider *p, const char *token,
                                    const char *region, struct tw_instance *out,
                                    struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = TW_OK;
  for (size_t r = 0; r < a->n_regions && rc == TW_OK && !l.n; r++)
    if (!*region || !strcmp(region, a->regions[r]))
      /* Any state: a launch whose instance has ended since was made all
       * the same, and saying "none" would have it sent again. */
      rc = managed_in(p, a->regions[r], NULL, "client-token", token, &l, err);
  if (rc == TW_OK && !l.n) {
    tw_err_detail(err, "InvalidInstanceID.NotFound");
    rc = tw_err_set(err, TW_E_NOTFOUND, "aws: no instance for token %s%s%s",
                    token, *region ? " in " : "", region);
  }
  if (rc == TW_OK)
    *out = l.items[0];
  tw_instance_list_release(&l);
  return rc;
}

/* ---- offers ------------------------------------------------------------- */

static void add_type_filter(const struct aws_ctx *a, struct tw_buf *f) {
  for (size_t i = 0; i < a->n_types; i++)
    form_addf(f, a->types[i], "InstanceType.%zu", i + 1);
}

static enum tw_rc types_page(void *ctx, const struct tw_buf *body,
                             char **next, struct tw_err *err) {
  return tw_ec2_parse_instance_types(body->data, body->len, ctx, next, err);
}

static enum tw_rc types_in(struct tw_provider *p, const char *region,
                           struct tw_ec2_instance_type_list *out,
                           struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_buf f;
  tw_buf_init(&f);
  add_type_filter(a, &f);
  /* DescribeInstanceTypes pages hold at most 100. */
  enum tw_rc rc = ec2_pages(p, region, "DescribeInstanceTypes", &f,
                            a->page_size < 100 ? a->page_size : 100,
                            types_page, out, err);
  tw_buf_release(&f);
  return rc;
}

static enum tw_rc spot_page(void *ctx, const struct tw_buf *body, char **next,
                            struct tw_err *err) {
  return tw_ec2_parse_spot_prices(body->data, body->len, ctx, next, err);
}

static enum tw_rc spot_in(struct tw_provider *p, const char *region,
                          struct tw_ec2_spot_price_list *out,
                          struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  char start[32];
  struct tw_buf f;
  tw_buf_init(&f);
  /* EC2 also returns the price in effect at StartTime, so every offered
   * type and zone has at least one row in the window. */
  tw_adapter_iso_time(tw_clock_now_ms(p->clock) + atomic_load(&a->skew_ms) -
                          a->spot_window_ms,
                      start);
  add_type_filter(a, &f);
  form_add(&f, "ProductDescription.1", a->product);
  form_add(&f, "StartTime", start);
  enum tw_rc rc = ec2_pages(p, region, "DescribeSpotPriceHistory", &f,
                            a->page_size, spot_page, out, err);
  tw_buf_release(&f);
  return rc;
}

static int spot_cmp(const void *x, const void *y) {
  const struct tw_ec2_spot_price *a = x, *b = y;
  int c = strcmp(a->instance_type, b->instance_type);
  if (!c)
    c = strcmp(a->zone, b->zone);
  if (!c) /* newest first */
    c = (a->timestamp_ms < b->timestamp_ms) -
        (a->timestamp_ms > b->timestamp_ms);
  return c;
}

static int type_cmp(const void *x, const void *y) {
  const struct tw_ec2_instance_type *a = x, *b = y;
  return strcmp(a->name, b->name);
}

static void offer_from(struct tw_offer *o, const struct tw_ec2_instance_type *t,
                       const char *region, const struct tw_ec2_zone *z,
                       enum tw_market market, int64_t uusd) {
  TW_SET(o->region, region);
  TW_SET(o->zone, z->name);
  TW_SET(o->zone_id, z->zone_id);
  TW_SET(o->instance_type, t->name);
  o->arch = t->arch;
  o->vcpus = t->vcpus;
  o->memory_mib = t->memory_mib;
  TW_SET(o->accel_name, t->accel_name);
  o->accel_count = t->accel_count;
  o->accel_memory_mib = t->accel_memory_mib;
  o->market = market;
  o->price_uusd_per_hour = uusd;
  o->billing_granularity_s = AWS_BILLING_GRANULARITY_S;
  o->min_charge_s = AWS_MIN_CHARGE_S;
  if (z->zone_type[0] && strcmp(z->zone_type, "availability-zone"))
    tw_offer_set_label(o, "zone_type", z->zone_type);
}

/* One GetProducts page of the Price List Query API (served from
 * us-east-1 whatever the region priced). */
static enum tw_rc pricing_call(struct tw_provider *p, const struct tw_buf *body,
                               struct tw_buf *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct aws_req r;
  memset(&r, 0, sizeof r);
  r.p = p;
  r.a = a;
  r.region = "us-east-1";
  r.endpoint = a->pricing_endpoint;
  r.service = "pricing";
  r.content_type = "application/x-amz-json-1.1";
  r.target = "AWSPriceListService.GetProducts";
  r.body = body;
  enum tw_rc rc = endpoint_for(&r, err);
  if (rc)
    return rc;
  const struct tw_http_header hdrs[] = {{"Host", r.host},
                                        {"Content-Type", r.content_type},
                                        {"X-Amz-Target", r.target}};
  struct tw_http_request req = {.method = "POST",
                                .url = r.url,
                                .headers = hdrs,
                                .n_headers = 3,
                                .body = body->data,
                                .body_len = body->len,
                                .timeout_ms = a->timeout_ms,
                                .connect_timeout_ms = a->connect_timeout_ms,
                                .max_body_bytes = TW_AWS_PRICING_MAX_BYTES,
                                .ca_file = a->ca_file,
                                .prepare = aws_sign,
                                .prepare_ctx = &r};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  rc = tw_http_do(a->http, &req, &resp, err);
  if (rc == TW_OK && resp.status != 200)
    rc = tw_err_set(err,
                    resp.status == 429 || resp.status >= 500   ? TW_E_RETRYABLE
                    : resp.status == 401 || resp.status == 403 ? TW_E_AUTH
                                                               : TW_E_INVALID,
                    "aws pricing GetProducts: HTTP %ld", resp.status);
  if (rc == TW_OK) {
    tw_buf_release(out);
    *out = resp.body;
    tw_buf_init(&resp.body);
  }
  tw_http_response_release(&resp);
  return rc;
}

static int od_price_cmp(const void *x, const void *y) {
  return strcmp(((const struct tw_aws_od_price *)x)->type,
                ((const struct tw_aws_od_price *)y)->type);
}

/* The Price List's on-demand prices of region, sorted by type. */
static enum tw_rc price_list_in(struct tw_provider *p, const char *region,
                                struct tw_aws_od_price_list *out,
                                struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  char *next = NULL;
  enum tw_rc rc = TW_OK;
  struct tw_buf q, body;
  tw_buf_init(&q);
  tw_buf_init(&body);
  int64_t pages = 0;
  do {
    if (++pages > a->max_pages) {
      rc = tw_err_set(err, TW_E_TOOBIG,
                      "aws pricing GetProducts %s: more than %lld pages",
                      region, (long long)a->max_pages);
      break;
    }
    tw_buf_reset(&q);
    tw_aws_products_request(region, next, &q);
    free(next);
    next = NULL;
    if ((rc = pricing_call(p, &q, &body, err)) ||
        (rc = tw_aws_parse_products(body.data, body.len, out, &next, err)))
      break;
  } while (next);
  free(next);
  tw_buf_release(&q);
  tw_buf_release(&body);
  /* the region's own products only, by type */
  size_t k = 0;
  for (size_t i = 0; i < out->n; i++)
    if (!strcmp(out->items[i].region, region))
      out->items[k++] = out->items[i];
  out->n = k;
  if (out->n)
    qsort(out->items, out->n, sizeof *out->items, od_price_cmp);
  return rc;
}

static enum tw_rc offers_in(struct tw_provider *p, const char *region,
                            struct tw_offer_list *out, struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_ec2_zone_list zones;
  struct tw_ec2_instance_type_list types;
  struct tw_ec2_spot_price_list spot;
  struct tw_aws_od_price_list plist;
  struct tw_buf body;
  tw_aws_od_price_list_init(&plist);
  tw_ec2_zone_list_init(&zones);
  tw_ec2_instance_type_list_init(&types);
  tw_ec2_spot_price_list_init(&spot);
  tw_buf_init(&body);
  enum tw_rc rc;
  if ((rc = aws_call(p, region, "DescribeAvailabilityZones", NULL, &body,
                     err)) ||
      (rc = tw_ec2_parse_zones(body.data, body.len, &zones, err)) ||
      (rc = types_in(p, region, &types, err)) ||
      (rc = spot_in(p, region, &spot, err)))
    goto out;
  qsort(types.items, types.n, sizeof *types.items, type_cmp);
  /* the Price List, for types without a configured price; a Price List
   * that does not answer leaves those types without on-demand offers */
  if (a->price_list) {
    struct tw_err perr = {0};
    if (price_list_in(p, region, &plist, &perr))
      tw_log_warn("aws", "region=%s on-demand prices not listed: %s", region,
                  perr.msg);
  }

  /* On-demand: one offer per type and available zone, at the configured
   * price, else the Price List's (EC2 has no on-demand price call).
   * Types without a price are not offered on demand. */
  for (size_t t = 0; t < types.n; t++) {
    const struct tw_ec2_instance_type *ty = &types.items[t];
    const struct aws_price *price = find_price(a, ty->name, region);
    int64_t uusd = price ? price->uusd : 0;
    if (!price && plist.n) {
      struct tw_aws_od_price key;
      memset(&key, 0, sizeof key);
      snprintf(key.type, sizeof key.type, "%s", ty->name);
      const struct tw_aws_od_price *lp = bsearch(
          &key, plist.items, plist.n, sizeof *plist.items, od_price_cmp);
      uusd = lp ? lp->uusd : 0;
    }
    if (!ty->on_demand || uusd <= 0 || ty->vcpus < 1)
      continue;
    for (size_t z = 0; z < zones.n; z++) {
      if (strcmp(zones.items[z].state, "available") ||
          strcmp(zones.items[z].region, region))
        continue;
      offer_from(tw_offer_list_add(out), ty, region, &zones.items[z],
                 TW_MARKET_ON_DEMAND, uusd);
    }
  }

  /* Spot: the newest price of each type and zone in the window. */
  qsort(spot.items, spot.n, sizeof *spot.items, spot_cmp);
  for (size_t i = 0; i < spot.n; i++) {
    const struct tw_ec2_spot_price *s = &spot.items[i];
    if (i > 0 && !strcmp(s->instance_type, spot.items[i - 1].instance_type) &&
        !strcmp(s->zone, spot.items[i - 1].zone))
      continue;
    struct tw_ec2_instance_type key;
    memset(&key, 0, sizeof key);
    TW_SET(key.name, s->instance_type);
    const struct tw_ec2_instance_type *ty =
        bsearch(&key, types.items, types.n, sizeof *types.items, type_cmp);
    const struct tw_ec2_zone *zone = NULL;
    for (size_t z = 0; z < zones.n && !zone; z++)
      if (!strcmp(zones.items[z].name, s->zone))
        zone = &zones.items[z];
    if (!ty || !ty->spot || ty->vcpus < 1 || !zone ||
        strcmp(zone->state, "available"))
      continue;
    struct tw_offer *o = tw_offer_list_add(out);
    offer_from(o, ty, region, zone, TW_MARKET_SPOT, s->price_uusd_per_hour);
    o->price_observed_ms = s->timestamp_ms;
  }
out:
  tw_ec2_zone_list_release(&zones);
  tw_ec2_instance_type_list_release(&types);
  tw_ec2_spot_price_list_release(&spot);
  tw_aws_od_price_list_release(&plist);
  tw_buf_release(&body);
  return rc;
}

static enum tw_rc aws_list_offers(struct tw_provider *p,
                                  struct tw_offer_list *out,
                                  struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  return tw_adapter_offers_by_region(p, a->regions, a->n_regions, offers_in,
                                     out, err);
}

/* ---- events ------------------------------------------------------------- */

/* GETs one metadata document of instance id; TW_E_NOTFOUND on 404 (no
 * notice out), *out the body otherwise. */
static enum tw_rc metadata_get(struct tw_provider *p, const char *id,
                               const char *doc, struct tw_buf *out,
                               struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_buf url;
  tw_buf_init(&url);
  const char *t = strstr(a->metadata_url, "{id}");
  tw_buf_add(&url, a->metadata_url, (size_t)(t - a->metadata_url));
  tw_buf_adds(&url, id);
  tw_buf_adds(&url, t + 4);
  tw_buf_adds(&url, doc);
  struct tw_http_request req = {.method = "GET",
                                .url = url.data,
                                .timeout_ms = a->timeout_ms,
                                .connect_timeout_ms = a->connect_timeout_ms,
                                .max_body_bytes = 65536,
                                .ca_file = a->ca_file};
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  enum tw_rc rc = tw_http_do(a->http, &req, &resp, err);
  if (rc == TW_OK) {
    if (resp.status == 404) {
      rc = TW_E_NOTFOUND;
    } else if (resp.status != 200) {
      char detail[32];
      snprintf(detail, sizeof detail, "HTTP %ld", resp.status);
      tw_err_detail(err, detail);
      rc = tw_err_set(err, tw_http_status_rc(resp.status),
                      "aws metadata %s%s: HTTP %ld", id, doc, resp.status);
    } else {
      tw_buf_release(out);
      *out = resp.body;
      tw_buf_init(&resp.body);
    }
  }
  tw_http_response_release(&resp);
  tw_buf_release(&url);
  return rc;
}

/* A string member of a small flat JSON object ({"action": "terminate",
 * "time": "2017-09-18T08:22:00Z"}), as instance metadata serves it. */
static bool json_member(const char *json, const char *key, char *out,
                        size_t size) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", key);
  const char *at = json ? strstr(json, pat) : NULL;
  if (!at)
    return false;
  at += strlen(pat);
  while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r')
    at++;
  if (*at++ != ':')
    return false;
  while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r')
    at++;
  if (*at++ != '"')
    return false;
  size_t n = strcspn(at, "\"");
  if (at[n] != '"' || n >= size)
    return false;
  memcpy(out, at, n);
  out[n] = '\0';
  return true;
}

/* The metadata documents of instance id: instance-action unless
 * rebalance_only, then the rebalance recommendation. */
static enum tw_rc events_of(struct tw_provider *p, const char *id,
                            bool rebalance_only, struct tw_event_list *out,
                            struct tw_err *err) {
  struct tw_buf b;
  tw_buf_init(&b);
  char action[16], when[40];
  int64_t ms;
  /* latest/meta-data/spot/instance-action: {"action", "time"} where time
   * is when the action happens; the notice itself went out two minutes
   * earlier, which keeps noticed_ms stable from poll to poll. */
  enum tw_rc rc = rebalance_only ? TW_E_NOTFOUND
                                 : metadata_get(p, id, "/spot/instance-action",
                                                &b, err);
  if (rc == TW_OK) {
    if (!json_member(b.data, "action", action, sizeof action) ||
        !json_member(b.data, "time", when, sizeof when) ||
        tw_time_parse_rfc3339(when, &ms)) {
      rc = tw_err_set(err, TW_E_INVALID,
                      "aws metadata %s: malformed instance-action", id);
      goto out;
    }
    struct tw_event *e = tw_event_list_add(out);
    e->kind = TW_EVENT_INTERRUPTION;
    TW_SET(e->instance_id, id);
    TW_SET(e->action, action);
    e->deadline_ms = ms;
    e->noticed_ms = ms - AWS_NOTICE_LEAD_MS;
  } else if (rc != TW_E_NOTFOUND) {
    goto out;
  }
  /* latest/meta-data/events/recommendations/rebalance: {"noticeTime"} */
  rc = metadata_get(p, id, "/events/recommendations/rebalance", &b, err);
  if (rc == TW_OK) {
    if (!json_member(b.data, "noticeTime", when, sizeof when) ||
        tw_time_parse_rfc3339(when, &ms)) {
      rc =
          tw_err_set(err, TW_E_INVALID,
                     "aws metadata %s: malformed rebalance recommendation", id);
      goto out;
    }
    struct tw_event *e = tw_event_list_add(out);
    e->kind = TW_EVENT_REBALANCE;
    TW_SET(e->instance_id, id);
    e->noticed_ms = ms;
  } else if (rc == TW_E_NOTFOUND) {
    rc = TW_OK;
  }
out:
  tw_buf_release(&b);
  return rc;
}

struct notices_page {
  struct tw_provider *p;
  struct tw_ec2_spot_request_list l;
  struct tw_event_list *out;
};

static enum tw_rc notices_page(void *ctx, const struct tw_buf *body,
                               char **next, struct tw_err *err) {
  struct notices_page *np = ctx;
  struct aws_ctx *a = np->p->ctx;
  np->l.n = 0;
  enum tw_rc rc =
      tw_ec2_parse_spot_requests(body->data, body->len, &np->l, next, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < np->l.n; i++) {
    const struct tw_ec2_spot_request *r = &np->l.items[i];
    bool term = !strcmp(r->code, "marked-for-termination");
    if (!r->instance_id[0] || (!term && strcmp(r->code, "marked-for-stop")))
      continue; /* a filter the server did not apply */
    int64_t at = r->updated_ms > 0
                     ? r->updated_ms
                     : tw_clock_now_ms(np->p->clock) + atomic_load(&a->skew_ms);
    struct tw_event *e = tw_event_list_add(np->out);
    e->kind = TW_EVENT_INTERRUPTION;
    TW_SET(e->instance_id, r->instance_id);
    TW_SET(e->action, term                               ? "terminate"
                      : !strcmp(r->behavior, "hibernate") ? "hibernate"
                                                          : "stop");
    e->noticed_ms = at;
    e->deadline_ms = at + AWS_NOTICE_LEAD_MS;
  }
  return TW_OK;
}

/* The interruption notices in force in one region: the spot instance
 * requests EC2 has marked (status code marked-for-termination or
 * marked-for-stop, request still active), every page.  One call a page
 * whatever the number of live instances; the answer holds only the
 * instances marked.  The status's updateTime is when the notice went out,
 * two minutes before the action (EC2's fixed lead), which keeps
 * noticed_ms stable from poll to poll.  Requests of instances that are
 * not Tradewind's are reported too: the caller matches ids to its own. */
static enum tw_rc spot_notices_in(struct tw_provider *p, const char *region,
                                  struct tw_event_list *out,
                                  struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  struct tw_buf f;
  tw_buf_init(&f);
  form_add(&f, "Filter.1.Name", "status-code");
  form_add(&f, "Filter.1.Value.1", "marked-for-termination");
  form_add(&f, "Filter.1.Value.2", "marked-for-stop");
  form_add(&f, "Filter.2.Name", "state");
  form_add(&f, "Filter.2.Value.1", "active");
  struct notices_page np = {.p = p, .out = out};
  tw_ec2_spot_request_list_init(&np.l);
  enum tw_rc rc = ec2_pages(p, region, "DescribeSpotInstanceRequests", &f,
                            a->page_size, notices_page, &np, err);
  tw_ec2_spot_request_list_release(&np.l);
  tw_buf_release(&f);
  return rc;
}

/* Interruption notices from notice_source (spot requests: one call per
 * region and page; metadata: two documents per live spot instance), and
 * rebalance recommendations from metadata_url when it is set (one document
 * per live spot instance: EC2's API has no call that lists them, see
 * docs/providers.md). */
static enum tw_rc aws_poll_events(struct tw_provider *p,
                                  struct tw_event_list *out,
                                  struct tw_err *err) {
  struct aws_ctx *a = p->ctx;
  if (a->notices == AWS_NOTICES_NONE)
    return TW_OK;
  enum tw_rc rc = TW_OK;
  if (a->notices == AWS_NOTICES_SPOT_REQUESTS)
    for (size_t r = 0; r < a->n_regions && !rc; r++)
      rc = spot_notices_in(p, a->regions[r], out, err);
  if (rc || !a->metadata_url)
    return rc;
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  /* Only live spot instances get notices. */
  for (size_t r = 0; r < a->n_regions && !rc; r++)
    rc = managed_in(p, a->regions[r], running_states, "instance-lifecycle",
                    "spot", &l, err);
  for (size_t i = 0; i < l.n && !rc; i++)
    if (l.items[i].state == TW_INST_PENDING ||
        l.items[i].state == TW_INST_RUNNING)
      rc = events_of(p, l.items[i].id,
                     a->notices == AWS_NOTICES_SPOT_REQUESTS, out, err);
  tw_instance_list_release(&l);
  return rc;
}

/* The attribute letters after a family's generation digit: "m6gd" ->
 * "gd".  The family ends at the first '.'. */
static bool aws_family_has(const char *type, char letter) {
  const char *dot = strchr(type, '.');
  size_t n = dot ? (size_t)(dot - type) : strlen(type);
  size_t i = 0;
  while (i < n && isalpha((unsigned char)type[i]))
    i++;
  if (i == n || !isdigit((unsigned char)type[i]))
    return false;
  while (i < n && isdigit((unsigned char)type[i]))
    i++;
  for (; i < n && type[i] != '-'; i++)
    if (type[i] == letter)
      return true;
  return false;
}

/* Graviton families carry the `g` attribute (m6g, c7gn, t4g); a1 and the
 * mac2 Macs are Arm too; everything else is x86_64. */
static enum tw_arch aws_arch_of_type(const char *type) {
  if (!strncmp(type, "a1.", 3) || !strncmp(type, "mac2", 4))
    return TW_ARCH_ARM64;
  return aws_family_has(type, 'g') ? TW_ARCH_ARM64 : TW_ARCH_X86_64;
}

/* f1 and f2 carry Xilinx FPGAs the price lists count but do not name. */
static const struct tw_provider_type_accel aws_type_accels[] = {
    {"f1.", "VU9P"}, {"f2.", "VU47P"}, {NULL, NULL}};

/* The T families run on CPU credits (t2, t3, t3a, t4g). */
static unsigned aws_type_traits(const char *type) {
  return type[0] == 't' && isdigit((unsigned char)type[1]) ? TW_TYPE_BURSTABLE
                                                           : 0u;
}

/* What the broker knows of EC2 beyond the wire: per-second billing with a
 * 60-second minimum, the spot notice in the instance metadata, the FOCUS
 * names, zone ids ("use1-az1") in the catalog's files, the Spot Advisor's
 * interruption bands and the architecture and FPGAs its type names imply. */
static const struct tw_provider_info aws_info = {
    .billing = {.kind = TW_BILLING_PUBLISHED,
                .granularity_s = 1,
                .min_charge_s = 60,
                .spot_reclaim_free_s = 3600,
                .source = "EC2 User Guide: Billing for interrupted Spot "
                          "Instances; Amazon EC2 pricing (per-second "
                          "billing, 60-second minimum)"},
    .notice_url =
        "http://169.254.169.254/latest/meta-data/spot/instance-action",
    .notice_signal = "",
    .focus_provider = "AWS",
    .focus_compute_service = "Amazon Elastic Compute Cloud",
    .focus_network_service = "AWS Data Transfer",
    .focus_resource_type = "Virtual Machine",
    .user_data_max = 16384, /* EC2: 16 KiB before encoding */
    /* EC2's guide: check for interruption notices every 5 seconds (the
     * notice comes two minutes ahead) */
    .notice_poll_ms = 5000,
    .catalog_zone_ids = true,
    .catalog_risk_feed = true,
    .arch_of_type = aws_arch_of_type,
    .type_accels = aws_type_accels,
    .type_bundle = NULL,
    .accel_attach = NULL,
    .type_family = NULL, /* "m6i" of "m6i.large" */
    .type_traits = aws_type_traits};

const struct tw_provider_ops tw_provider_aws = {
    .name = "aws",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports =
        TW_PROV_SPOT | TW_PROV_EVENTS | TW_PROV_ZONES | TW_PROV_CLIENT_TOKEN,
    .init = aws_init,
    .list_offers = aws_list_offers,
    .launch = aws_launch,
    .describe = aws_describe,
    .describe_many = aws_describe_many,
    .terminate = aws_terminate,
    .list_managed = aws_list_managed,
    .poll_events = aws_poll_events,
    .free = aws_free,
    .info = &aws_info,
    .find_by_token = aws_find_by_token,
};
