/* azure.c - the Azure adapter: Azure Resource Manager (Microsoft.Compute
 * virtual machines, resource SKUs, tag queries) with OAuth2 client
 * credentials from the identity platform, prices from the Retail Prices
 * API and eviction notices from Scheduled Events; answers read by
 * arm_json.c.
 *
 * Translation only: retries, backoff and jitter are the http helper's
 * (providers/http.h), whose prepare hook puts a fresh bearer token on
 * every attempt; waiting for long-running operations is done here because
 * a launch's capacity error only shows once its operation fails.  Config
 * keys, the error table and the event mapping: docs/azure.md. */
#include "providers/azure/azure.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/base/clock.h"
#include "broker/base/log.h"
#include "broker/base/mem.h"
#include "broker/base/node.h"
#include "broker/base/unique.h"
#include "providers/adapter_util.h"
#include "providers/azure/az_assert.h"
#include "providers/azure/arm_json.h"
#include "providers/http.h"
#include "providers/sigv4.h"

/* Scheduled Events gives a Spot VM at least 30 s between the Preempt
 * notice and the eviction; the document carries only NotBefore. */
#define AZ_PREEMPT_LEAD_MS 30000
#define AZ_MAX_TYPES 50 /* instance_types: one $filter clause each */
#define AZ_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

/* disk tier words as managed disk types: HDD, standard SSD, premium SSD */
static const char *const az_disk_tiers[4] = {"Standard_LRS", "StandardSSD_LRS",
                                             "Premium_LRS", "Premium_LRS"};

struct az_prices {
  char region[TW_MODEL_NAME_MAX];
  int64_t fetched_ms;
  struct tw_arm_price_list list;
};

/* How the adapter gets its tokens (docs/providers.md#azure-credentials). */
enum az_cred {
  AZ_SECRET = 1,
  AZ_CERT,     /* client assertion signed with a certificate's key */
  AZ_WORKLOAD, /* client assertion: the federated token file */
  AZ_MANAGED   /* the instance metadata service's managed identity */
};

struct az_ctx {
  char *tenant, *client_id, *client_secret; /* the secret is never logged */
  enum az_cred cred;
  struct tw_az_cert *cert;
  char *federated_file, *imds, *mi_client_id;
  char *subscription, *resource_group;
  char **regions;
  size_t n_regions;
  char *authority, *management, *prices_url, *scope;
  char *compute_api, *resources_api, *skus_api, *prices_api;
  long timeout_ms, connect_timeout_ms;
  char *ca_file;
  struct tw_adapter_images images;
  char *admin_user, *ssh_key, *subnet_id, *os_disk_type, *eviction_policy;
  int64_t os_disk_gb; /* osDisk.diskSizeGB; 0: the image's */
  char *vm_identity;  /* "system" or a user-assigned identity's id */
  char *name_prefix;
  char **types;
  size_t n_types;
  bool zonal;
  int64_t max_pages, lro_timeout_ms, lro_poll_ms, lro_poll_max_ms;
  int64_t refresh_margin_ms, price_cache_ms, min_charge_s;
  char *events_url; /* Scheduled Events, maybe with "{name}" */
  struct tw_http *http;
  void (*sleep_fn)(void *ctx, int64_t ms);
  void *sleep_ctx;

  /* Mutable after init, under lock. */
  pthread_mutex_t lock;
  char *token_endpoint;
  char *token; /* never logged */
  int64_t token_expires_ms, token_life_ms;
  struct az_prices *prices;
  size_t n_prices;
};

/* ---- small helpers ------------------------------------------------------- */

static void default_sleep(void *ctx, int64_t ms) {
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts))
    ;
}

/* The http helper's sleep: whatever the adapter's hook is now. */
static void http_sleep(void *ctx, int64_t ms) {
  struct az_ctx *a = ctx;
  a->sleep_fn(a->sleep_ctx, ms);
}

void tw_azure_set_sleep(struct tw_provider *p,
                        void (*fn)(void *ctx, int64_t ms), void *ctx) {
  struct az_ctx *a = p->ctx;
  a->sleep_fn = fn ? fn : default_sleep;
  a->sleep_ctx = fn ? ctx : NULL;
}

void tw_azure_vm_name(const char *prefix, const char *client_token, char *out,
                      size_t out_size) {
  char hex[65];
  tw_sha256_hex(client_token, strlen(client_token), hex);
  snprintf(out, out_size, "%s%.24s", prefix, hex);
}

/* Percent-encodes s as an RFC 3986 URL component. */
static void add_enc(struct tw_buf *b, const char *s) {
  char *enc = NULL;
  tw_sigv4_uri_encode(s, strlen(s), 0, &enc);
  tw_buf_adds(b, enc);
  free(enc);
}

/* "scheme://host[:port]" of url into out; false when malformed. */
static bool origin_of(const char *url, char *out, size_t size) {
  const char *h = strstr(url, "://");
  if (!h)
    return false;
  size_t n = (size_t)(h + 3 - url) + strcspn(h + 3, "/?#");
  if (n >= size || n == (size_t)(h + 3 - url))
    return false;
  memcpy(out, url, n);
  out[n] = '\0';
  return true;
}

/* Whether url lies on the same origin as base: the bearer token must never
 * follow a link to another host. */
static bool same_origin(const char *url, const char *base) {
  char a[512], b[512];
  return origin_of(url, a, sizeof a) && origin_of(base, b, sizeof b) &&
         !strcasecmp(a, b) &&
         (url[strlen(a)] == '/' || url[strlen(a)] == '\0' ||
          url[strlen(a)] == '?');
}

/* ---- config ------------------------------------------------------------- */

static const char *const az_keys[] = {"credential",
                                      "certificate_file",
                                      "federated_token_file",
                                      "imds_endpoint",
                                      "managed_identity_client_id",
                                      "tenant_id",
                                      "client_id",
                                      "client_secret_env",
                                      "client_secret_file",
                                      "client_secret",
                                      "subscription_id",
                                      "resource_group",
                                      "region",
                                      "regions",
                                      "authority",
                                      "management_endpoint",
                                      "prices_url",
                                      "scope",
                                      "compute_api_version",
                                      "resources_api_version",
                                      "skus_api_version",
                                      "prices_api_version",
                                      "timeout_ms",
                                      "connect_timeout_ms",
                                      "max_attempts",
                                      "backoff_base_ms",
                                      "backoff_cap_ms",
                                      "ca_file",
                                      "image",
                                      "images",
                                      "admin_username",
                                      "ssh_public_key",
                                      "ssh_public_key_file",
                                      "subnet_id",
                                      "os_disk_type",
                                      "os_disk_size_gb",
                                      "vm_identity",
                                      "eviction_policy",
                                      "vm_name_prefix",
                                      "instance_types",
                                      "zonal",
                                      "max_pages",
                                      "operation_timeout_ms",
                                      "operation_poll_ms",
                                      "operation_poll_max_ms",
                                      "token_refresh_margin_s",
                                      "price_cache_s",
                                      "min_charge_s",
                                      "scheduled_events_url",
                                      NULL};

static enum tw_rc req_str(const struct tw_node *cfg, const char *key,
                          char **out, struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_strdup(cfg, key, NULL, out, err);
  if (rc == TW_OK && (!*out || !**out))
    return tw_err_field(err, TW_E_INVALID, key, "%s: required", key);
  return rc;
}

static bool is_url(const char *s) {
  return s && (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7));
}

/* Strips trailing slashes so paths can be appended. */
static void trim_slash(char *s) {
  size_t n = strlen(s);
  while (n > 8 && s[n - 1] == '/')
    s[--n] = '\0';
}

/* Names that go into URL paths must not change the path. */
static bool path_safe(const char *s) {
  return *s && !strpbrk(s, "/?#%\\") && strcmp(s, ".") && strcmp(s, "..");
}

static void az_free(struct tw_provider *p) {
  struct az_ctx *a = p->ctx;
  if (!a)
    return;
  tw_http_free(a->http);
  /* Credentials are wiped, not just freed: a core dump should not carry
   * them. */
  if (a->client_secret)
    OPENSSL_cleanse(a->client_secret, strlen(a->client_secret));
  if (a->token)
    OPENSSL_cleanse(a->token, strlen(a->token));
  free(a->client_secret);
  free(a->token);
  tw_az_cert_free(a->cert);
  free(a->federated_file);
  free(a->imds);
  free(a->mi_client_id);
  free(a->tenant);
  free(a->client_id);
  free(a->subscription);
  free(a->resource_group);
  tw_provider_strv_free(a->regions, a->n_regions);
  free(a->authority);
  free(a->management);
  free(a->prices_url);
  free(a->scope);
  free(a->compute_api);
  free(a->resources_api);
  free(a->skus_api);
  free(a->prices_api);
  free(a->ca_file);
  tw_adapter_images_release(&a->images);
  free(a->admin_user);
  free(a->ssh_key);
  free(a->subnet_id);
  free(a->os_disk_type);
  free(a->vm_identity);
  free(a->eviction_policy);
  free(a->name_prefix);
  tw_provider_strv_free(a->types, a->n_types);
  free(a->events_url);
  free(a->token_endpoint);
  for (size_t i = 0; i < a->n_prices; i++)
    tw_arm_price_list_release(&a->prices[i].list);
  free(a->prices);
  pthread_mutex_destroy(&a->lock);
  free(a);
  p->ctx = NULL;
}

static enum tw_rc read_first_line(const char *path, const char *key, char **out,
                                  struct tw_err *err) {
  FILE *f = fopen(path, "rb");
  char line[8192];
  if (!f)
    return tw_err_field(err, TW_E_INVALID, key, "%s: cannot open %s", key,
                        path);
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!ok)
    return tw_err_field(err, TW_E_INVALID, key, "%s: %s is empty", key, path);
  line[strcspn(line, "\r\n")] = '\0';
  *out = tw_strdup(line);
  return TW_OK;
}

static const char *env_or(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* The credential: `credential:` when set, else azure-identity's
 * DefaultAzureCredential order: a client secret, a certificate, a
 * federated token (workload identity), the managed identity. */
static enum tw_rc init_cred(struct tw_provider *p, struct az_ctx *a,
                            const struct tw_node *cfg, struct tw_err *err) {
  enum tw_rc rc;
  const char *kind, *cert, *fed, *imds, *mi, *tenant, *client;
  if ((rc = tw_provider_cfg_str(cfg, "credential", "auto", &kind, err)) ||
      (rc = tw_provider_cfg_str(cfg, "certificate_file",
                                env_or("AZURE_CLIENT_CERTIFICATE_PATH"), &cert,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "federated_token_file",
                                env_or("AZURE_FEDERATED_TOKEN_FILE"), &fed,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "imds_endpoint", "http://169.254.169.254",
                                &imds, err)) ||
      (rc = tw_provider_cfg_str(cfg, "managed_identity_client_id", NULL, &mi,
                                err)) ||
      (rc = tw_provider_cfg_str(cfg, "tenant_id", env_or("AZURE_TENANT_ID"),
                                &tenant, err)) ||
      (rc = tw_provider_cfg_str(cfg, "client_id", env_or("AZURE_CLIENT_ID"),
                                &client, err)))
    return rc;
  static const char *const kinds[] = {"auto",
                                      "client_secret",
                                      "certificate",
                                      "workload_identity",
                                      "managed_identity",
                                      NULL};
  size_t k = 0;
  while (kinds[k] && strcmp(kinds[k], kind))
    k++;
  if (!kinds[k])
    return tw_err_field(err, TW_E_INVALID, "credential",
                        "credential: expected auto, client_secret, "
                        "certificate, workload_identity or managed_identity, "
                        "got \"%.32s\"",
                        kind);
  /* a secret only where one is asked for, or found (auto) */
  if (k == 0 || k == 1) {
    bool required = k == 1;
    if ((rc = tw_provider_cfg_secret(p, cfg, "client_secret",
                                     "AZURE_CLIENT_SECRET", required,
                                     &a->client_secret, err)))
      return rc;
  }
  if (a->client_secret)
    a->cred = AZ_SECRET;
  else if (k == 2 || (k == 0 && cert))
    a->cred = AZ_CERT;
  else if (k == 3 || (k == 0 && fed))
    a->cred = AZ_WORKLOAD;
  else
    a->cred = AZ_MANAGED;
  if (tenant)
    a->tenant = tw_strdup(tenant);
  if (client)
    a->client_id = tw_strdup(client);
  if (a->cred != AZ_MANAGED) {
    if (!a->tenant || !*a->tenant)
      return tw_err_field(err, TW_E_INVALID, "tenant_id",
                          "tenant_id: required (or AZURE_TENANT_ID)");
    if (!a->client_id || !*a->client_id)
      return tw_err_field(err, TW_E_INVALID, "client_id",
                          "client_id: required (or AZURE_CLIENT_ID)");
  }
  if (a->cred == AZ_CERT) {
    if (!cert)
      return tw_err_field(err, TW_E_INVALID, "certificate_file",
                          "certificate_file: required for credential: "
                          "certificate (or AZURE_CLIENT_CERTIFICATE_PATH)");
    if ((rc = tw_az_cert_load(cert, &a->cert, err)))
      return rc;
  }
  if (a->cred == AZ_WORKLOAD) {
    if (!fed)
      return tw_err_field(err, TW_E_INVALID, "federated_token_file",
                          "federated_token_file: required for credential: "
                          "workload_identity (or AZURE_FEDERATED_TOKEN_FILE)");
    a->federated_file = tw_strdup(fed);
  }
  if (!is_url(imds))
    return tw_err_field(err, TW_E_INVALID, "imds_endpoint",
                        "imds_endpoint: expected an http:// URL");
  a->imds = tw_strdup(imds);
  /* a user-assigned identity: the config's, else AZURE_CLIENT_ID */
  if (mi || (a->cred == AZ_MANAGED && a->client_id))
    a->mi_client_id = tw_strdup(mi ? mi : a->client_id);
  static const char *const names[] = {[AZ_SECRET] = "client_secret",
                                      [AZ_CERT] = "certificate",
                                      [AZ_WORKLOAD] = "workload_identity",
                                      [AZ_MANAGED] = "managed_identity"};
  tw_log_info("azure", "account=%s credential=%s", p->account, names[a->cred]);
  return TW_OK;
}

static enum tw_rc az_init(struct tw_provider *p, const struct tw_node *cfg,
                          struct tw_err *err) {
  enum tw_rc rc = tw_provider_cfg_check_keys(cfg, az_keys, err);
  if (rc)
    return rc;
  struct az_ctx *a = tw_calloc(1, sizeof *a);
  pthread_mutex_init(&a->lock, NULL);
  a->sleep_fn = default_sleep;
  p->ctx = a;

  int64_t v;
  if ((rc = req_str(cfg, "subscription_id", &a->subscription, err)) ||
      (rc = req_str(cfg, "resource_group", &a->resource_group, err)) ||
      (rc = init_cred(p, a, cfg, err)))
    return rc;
  const char *names[][2] = {{"tenant_id", a->tenant ? a->tenant : "-"},
                            {"subscription_id", a->subscription},
                            {"resource_group", a->resource_group}};
  for (size_t i = 0; i < 3; i++)
    if (!path_safe(names[i][1]) || strlen(names[i][1]) > 90)
      return tw_err_field(err, TW_E_INVALID, names[i][0],
                          "%s: 1..90 characters without / ? # %% or \\",
                          names[i][0]);

  if ((rc = tw_provider_cfg_regions(cfg, &a->regions, &a->n_regions, err)))
    return rc;
  for (size_t i = 0; i < a->n_regions; i++)
    if (strlen(a->regions[i]) >= TW_MODEL_NAME_MAX ||
        strspn(a->regions[i], "abcdefghijklmnopqrstuvwxyz0123456789") !=
            strlen(a->regions[i]))
      return tw_err_field(err, TW_E_INVALID, "regions",
                          "regions[%zu]: expected an ARM region name such as "
                          "eastus",
                          i);

  if ((rc = tw_provider_cfg_strdup(cfg, "authority",
                                   "https://login.microsoftonline.com",
                                   &a->authority, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "management_endpoint",
                                   "https://management.azure.com",
                                   &a->management, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "prices_url",
                                   "https://prices.azure.com/api/retail/prices",
                                   &a->prices_url, err)))
    return rc;
  const char *urls[][2] = {{"authority", a->authority},
                           {"management_endpoint", a->management},
                           {"prices_url", a->prices_url}};
  for (size_t i = 0; i < 3; i++)
    if (!is_url(urls[i][1]))
      return tw_err_field(err, TW_E_INVALID, urls[i][0],
                          "%s: expected an http:// or https:// URL",
                          urls[i][0]);
  trim_slash(a->authority);
  trim_slash(a->management);
  char def_scope[512];
  snprintf(def_scope, sizeof def_scope, "%s/.default", a->management);
  if ((rc = tw_provider_cfg_strdup(cfg, "scope", def_scope, &a->scope, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "compute_api_version", "2024-07-01",
                                   &a->compute_api, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "resources_api_version", "2021-04-01",
                                   &a->resources_api, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "skus_api_version", "2021-07-01",
                                   &a->skus_api, err)) ||
      (rc =
           tw_provider_cfg_strdup(cfg, "prices_api_version",
                                  "2023-01-01-preview", &a->prices_api, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "ca_file", NULL, &a->ca_file, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "admin_username", "tradewind",
                                   &a->admin_user, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "ssh_public_key", NULL, &a->ssh_key,
                                   err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "subnet_id", NULL, &a->subnet_id,
                                   err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "os_disk_type", "StandardSSD_LRS",
                                   &a->os_disk_type, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "eviction_policy", "Delete",
                                   &a->eviction_policy, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "vm_name_prefix", "tw-",
                                   &a->name_prefix, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "scheduled_events_url", NULL,
                                   &a->events_url, err)) ||
      (rc = tw_provider_cfg_list(cfg, "instance_types", &a->types, &a->n_types,
                                 err)))
    return rc;
  const char *key_file;
  if ((rc = tw_provider_cfg_str(cfg, "ssh_public_key_file", NULL, &key_file,
                                err)))
    return rc;
  if (key_file && !a->ssh_key &&
      (rc = read_first_line(key_file, "ssh_public_key_file", &a->ssh_key, err)))
    return rc;
  if (strcmp(a->eviction_policy, "Delete") &&
      strcmp(a->eviction_policy, "Deallocate"))
    return tw_err_field(err, TW_E_INVALID, "eviction_policy",
                        "eviction_policy: expected Delete or Deallocate");
  /* VM names: letters, digits, '-', '_', '.'; 24 hex digits follow. */
  if (!*a->name_prefix || strlen(a->name_prefix) > 38 ||
      strspn(a->name_prefix,
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
             "TUVWXYZ0123456789-_.") != strlen(a->name_prefix) ||
      !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
              a->name_prefix[0]))
    return tw_err_field(err, TW_E_INVALID, "vm_name_prefix",
                        "vm_name_prefix: 1..38 letters, digits, '-', '_' or "
                        "'.', starting with a letter or digit");
  if (a->n_types > AZ_MAX_TYPES)
    return tw_err_field(err, TW_E_INVALID, "instance_types",
                        "instance_types: at most %d, got %zu", AZ_MAX_TYPES,
                        a->n_types);
  for (size_t i = 0; i < a->n_types; i++)
    if (strchr(a->types[i], '\'') || strlen(a->types[i]) >= TW_MODEL_NAME_MAX)
      return tw_err_field(err, TW_E_INVALID, "instance_types",
                          "instance_types[%zu]: not a VM size name", i);
  if (a->events_url && !is_url(a->events_url))
    return tw_err_field(err, TW_E_INVALID, "scheduled_events_url",
                        "scheduled_events_url: expected an http(s) URL");
  const struct tw_node *z = tw_node_get(cfg, "zonal");
  if (z && !tw_node_as_bool(z, &a->zonal))
    return tw_err_field(err, TW_E_INVALID, "zonal",
                        "zonal: expected true or false");

  /* Retries and timeouts of every call (providers/http.h): the clouds'
   * limits with a longer default timeout. */
  static const struct tw_provider_http_limits http_limits = {
      .timeout_def = 30000,
      .connect_min = 100,
      .attempts_max = 20,
      .attempts_def = 4,
      .backoff_min = 1,
      .backoff_cap_def = 20000};
  struct tw_http_opts ho = {.clock = p->clock};
  if ((rc = tw_provider_cfg_http(cfg, &http_limits, &a->timeout_ms,
                                 &a->connect_timeout_ms, &ho, err)) ||
      (rc = tw_provider_cfg_int(cfg, "max_pages", 1, 100000, 1000,
                                &a->max_pages, err)) ||
      (rc = tw_provider_cfg_int(cfg, "operation_timeout_ms", 1000, 86400000,
                                1800000, &a->lro_timeout_ms, err)) ||
      (rc = tw_provider_cfg_int(cfg, "operation_poll_ms", 0, 600000, 2000,
                                &a->lro_poll_ms, err)) ||
      (rc = tw_provider_cfg_int(cfg, "operation_poll_max_ms", 0, 3600000, 60000,
                                &a->lro_poll_max_ms, err)) ||
      (rc = tw_provider_cfg_int(cfg, "token_refresh_margin_s", 0, 3600, 300, &v,
                                err)))
    return rc;
  a->refresh_margin_ms = v * 1000;
  if ((rc = tw_provider_cfg_int(cfg, "price_cache_s", 0, 7 * 86400, 3600, &v,
                                err)))
    return rc;
  a->price_cache_ms = v * 1000;
  if ((rc = tw_provider_cfg_int(cfg, "min_charge_s", 0, 86400, 300,
                                &a->min_charge_s, err)))
    return rc;

  /* image: a URN "publisher:offer:sku:version" or an image resource id,
   * for every region; images: {region: ...}. */
  if ((rc = tw_adapter_images_read(cfg, "an image URN or resource id",
                                   &a->images, err)))
    return rc;
  if ((rc = tw_provider_cfg_int(cfg, "os_disk_size_gb", 0, 4095, 0,
                                &a->os_disk_gb, err)) ||
      (rc = tw_provider_cfg_strdup(cfg, "vm_identity", NULL, &a->vm_identity,
                                   err)))
    return rc;
  if (a->vm_identity && strcmp(a->vm_identity, "system") &&
      strncasecmp(a->vm_identity, "/subscriptions/", 15))
    return tw_err_field(err, TW_E_INVALID, "vm_identity",
                        "vm_identity: expected system or a user-assigned "
                        "identity's resource id (/subscriptions/...)");

  ho.sleep_ms = http_sleep;
  ho.sleep_ctx = a;
  return tw_http_new(&ho, &a->http, err);
}

/* ---- identity: OAuth2 client credentials --------------------------------- */

/* A plain call (no bearer token): identity, prices, instance metadata. */
static enum tw_rc plain_call(struct az_ctx *a, const char *method,
                             const char *url, const struct tw_http_header *h,
                             size_t n_h, const char *body,
                             struct tw_http_response *resp,
                             struct tw_err *err) {
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = n_h,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = a->timeout_ms,
                                .connect_timeout_ms = a->connect_timeout_ms,
                                .max_body_bytes = TW_ARM_JSON_MAX_BYTES,
                                .ca_file = a->ca_file};
  struct tw_err e = {0};
  enum tw_rc rc = tw_http_do(a->http, &req, resp, &e);
  if (rc) {
    if (!*e.detail)
      tw_err_detail(&e, "transport");
    if (err && err->rc == TW_OK)
      *err = e;
  }
  return rc;
}

/* The federated token file's text, trimmed; NULL when unreadable or
 * empty. */
static char *read_token_file(const char *path) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < 65536)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' ||
                   b.data[b.len - 1] == ' '))
    b.len--;
  if (!b.len) {
    tw_buf_release(&b);
    return NULL;
  }
  tw_buf_addc(&b, '\0');
  return tw_buf_detach(&b);
}

/* Fetches a token with the lock held.  The token endpoint comes from the
 * tenant's OpenID configuration, read once. */
static enum tw_rc token_fetch_locked(struct tw_provider *p,
                                     struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  struct tw_http_response resp;
  struct tw_buf url, form;
  enum tw_rc rc = TW_OK;
  tw_http_response_init(&resp);
  tw_buf_init(&url);
  tw_buf_init(&form);
  if (a->cred == AZ_MANAGED) {
    /* the instance's identity: IMDS, no secret of ours involved */
    size_t sl = strlen(a->scope);
    size_t rl = sl > 8 && !strcmp(a->scope + sl - 8, ".default") ? sl - 8 : sl;
    char *res = tw_strndup(a->scope, rl);
    tw_buf_printf(&url,
                  "%s/metadata/identity/oauth2/token?api-version="
                  "2018-02-01&resource=",
                  a->imds);
    add_enc(&url, res);
    free(res);
    if (a->mi_client_id) {
      tw_buf_adds(&url, "&client_id=");
      add_enc(&url, a->mi_client_id);
    }
    const struct tw_http_header mh[] = {{"Metadata", "true"},
                                        {"Accept", "application/json"}};
    if ((rc = plain_call(a, "GET", url.data, mh, 2, NULL, &resp, err)))
      goto out;
    if (resp.status != 200) {
      rc = tw_arm_response_error("azure managed identity", resp.status,
                                 resp.body.data, resp.body.len, err);
      goto out;
    }
    goto parsed;
  }
  if (!a->token_endpoint) {
    tw_buf_printf(&url, "%s/", a->authority);
    add_enc(&url, a->tenant);
    tw_buf_adds(&url, "/v2.0/.well-known/openid-configuration");
    const struct tw_http_header h[] = {{"Accept", "application/json"}};
    if ((rc = plain_call(a, "GET", url.data, h, 1, NULL, &resp, err)))
      goto out;
    if (resp.status != 200) {
      rc = tw_arm_response_error("azure openid-configuration", resp.status,
                                 resp.body.data, resp.body.len, err);
      goto out;
    }
    char *te = NULL;
    if ((rc = tw_arm_parse_openid(resp.body.data, resp.body.len, &te, err)))
      goto out;
    /* The client secret goes to this endpoint: only over https, unless
     * the authority itself was configured as http (a local fake). */
    if (strncmp(te, "https://", 8) && strncmp(a->authority, "http://", 7)) {
      free(te);
      rc = tw_err_set(err, TW_E_AUTH,
                      "azure openid-configuration: token_endpoint is not "
                      "https");
      goto out;
    }
    a->token_endpoint = te;
  }
  tw_buf_adds(&form, "grant_type=client_credentials&client_id=");
  add_enc(&form, a->client_id);
  if (a->cred == AZ_SECRET) {
    tw_buf_adds(&form, "&client_secret=");
    add_enc(&form, a->client_secret);
  } else {
    /* a client assertion: signed with the certificate's key, or the
     * federated token as written (read again at each fetch: the kubelet
     * rotates it) */
    char *assertion = NULL;
    if (a->cred == AZ_CERT) {
      char jti[40];
      snprintf(jti, sizeof jti, "%016llx%016llx",
               (unsigned long long)tw_unique_id(),
               (unsigned long long)tw_unique_id());
      rc = tw_az_client_assertion(a->cert, a->client_id, a->token_endpoint,
                                  tw_clock_now_ms(p->clock), jti, &assertion,
                                  err);
    } else {
      assertion = read_token_file(a->federated_file);
      if (!assertion)
        rc = tw_err_field(err, TW_E_AUTH, "federated_token_file",
                          "federated_token_file: cannot read a token from %s",
                          a->federated_file);
    }
    if (rc)
      goto out;
    tw_buf_adds(&form, "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3A"
                       "client-assertion-type%3Ajwt-bearer&client_assertion=");
    add_enc(&form, assertion);
    OPENSSL_cleanse(assertion, strlen(assertion));
    free(assertion);
  }
  tw_buf_adds(&form, "&scope=");
  add_enc(&form, a->scope);
  const struct tw_http_header h[] = {
      {"Content-Type", "application/x-www-form-urlencoded"},
      {"Accept", "application/json"}};
  rc = plain_call(a, "POST", a->token_endpoint, h, 2, form.data, &resp, err);
  OPENSSL_cleanse(form.data, form.len);
  if (rc)
    goto out;
  if (resp.status != 200) {
    rc = tw_arm_response_error("azure token", resp.status, resp.body.data,
                               resp.body.len, err);
    goto out;
  }
parsed:;
  char *tok = NULL;
  int64_t secs = 0;
  if ((rc =
           tw_arm_parse_token(resp.body.data, resp.body.len, &tok, &secs, err)))
    goto out;
  if (a->token) {
    OPENSSL_cleanse(a->token, strlen(a->token));
    free(a->token);
  }
  a->token = tok;
  a->token_expires_ms = tw_clock_now_ms(p->clock) + secs * 1000;
  a->token_life_ms = secs * 1000;
  tw_log_debug("azure", "account=%s token refreshed expires_in_s=%lld",
               p->account, (long long)secs);
out:
  tw_http_response_release(&resp);
  tw_buf_release(&url);
  tw_buf_release(&form);
  return rc;
}

/* An owned copy of a token valid for a while yet, fetching one when the
 * cached one is missing or within the refresh margin of its expiry (at
 * most half the token's lifetime, so a short-lived token is still used). */
static enum tw_rc token_get(struct tw_provider *p, char **out,
                            struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  enum tw_rc rc = TW_OK;
  pthread_mutex_lock(&a->lock);
  int64_t now = tw_clock_now_ms(p->clock);
  int64_t margin = a->refresh_margin_ms;
  if (margin > a->token_life_ms / 2)
    margin = a->token_life_ms / 2;
  if (!a->token || now >= a->token_expires_ms - margin)
    rc = token_fetch_locked(p, err);
  if (rc == TW_OK)
    *out = tw_strdup(a->token);
  pthread_mutex_unlock(&a->lock);
  return rc;
}

/* Forgets the cached token if it is still the one that was refused. */
static void token_drop(struct az_ctx *a, const char *refused) {
  pthread_mutex_lock(&a->lock);
  if (a->token && refused && !strcmp(a->token, refused)) {
    OPENSSL_cleanse(a->token, strlen(a->token));
    free(a->token);
    a->token = NULL;
  }
  pthread_mutex_unlock(&a->lock);
}

/* ---- ARM calls ------------------------------------------------------------
 */

struct arm_req {
  struct tw_provider *p;
  char *token; /* the one sent on the last attempt */
};

/* The http helper's prepare hook: a valid bearer token on every attempt
 * (a retry after a long Retry-After may need a fresh one). */
static enum tw_rc arm_auth(void *vctx, struct tw_http_attempt *att,
                           struct tw_err *err) {
  struct arm_req *r = vctx;
  char *tok = NULL;
  enum tw_rc rc = token_get(r->p, &tok, err);
  if (rc)
    return rc;
  char *h = tw_asprintf("Bearer %s", tok);
  tw_http_attempt_add_header(att, "Authorization", h);
  OPENSSL_cleanse(h, strlen(h));
  free(h);
  if (r->token) {
    OPENSSL_cleanse(r->token, strlen(r->token));
    free(r->token);
  }
  r->token = tok;
  return TW_OK;
}

/* 429 and 5xx are retried by the helper, unless the error says no retry
 * can help (a 500 carrying an allocation failure, say). */
static bool arm_should_retry(void *ctx, long status,
                             const struct tw_buf *body) {
  struct tw_arm_error e;
  if (body && tw_arm_parse_error(body->data, body->len, &e))
    return tw_arm_error_class(e.code, e.message, status) == TW_E_RETRYABLE;
  return true;
}

/* Calls ARM with a bearer token.  Any HTTP answer is TW_OK with resp
 * filled (the caller reads the status), except a 401 that persists after
 * one fresh token: TW_E_AUTH.  extra may hold one more header. */
static enum tw_rc arm_call(struct tw_provider *p, const char *method,
                           const char *url, const char *body,
                           const struct tw_http_header *extra,
                           struct tw_http_response *resp, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  if (!same_origin(url, a->management))
    return tw_err_set(err, TW_E_INVALID,
                      "azure: refusing to send a token outside %s",
                      a->management);
  struct arm_req r = {.p = p, .token = NULL};
  struct tw_http_header h[3] = {{"Accept", "application/json"},
                                {"Content-Type", "application/json"}};
  size_t n = body ? 2 : 1;
  if (extra)
    h[n++] = *extra;
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = n,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = a->timeout_ms,
                                .connect_timeout_ms = a->connect_timeout_ms,
                                .max_body_bytes = TW_ARM_JSON_MAX_BYTES,
                                .ca_file = a->ca_file,
                                .prepare = arm_auth,
                                .prepare_ctx = &r,
                                .should_retry = arm_should_retry};
  enum tw_rc rc;
  for (int round = 0;; round++) {
    struct tw_err e = {0};
    rc = tw_http_do(a->http, &req, resp, &e);
    if (rc) {
      if (!*e.detail)
        tw_err_detail(&e, "transport");
      if (err && err->rc == TW_OK)
        *err = e;
      break;
    }
    if (resp->status != 401)
      break;
    /* An expired or revoked token (or a fake cloud's clock run ahead of
     * ours): forget it and try once more with a fresh one, as the Azure
     * SDKs do on a 401 challenge. */
    token_drop(a, r.token);
    if (round == 0)
      continue;
    rc = tw_arm_response_error("azure", resp->status, resp->body.data,
                               resp->body.len, err);
    break;
  }
  if (r.token) {
    OPENSSL_cleanse(r.token, strlen(r.token));
    free(r.token);
  }
  return rc;
}

static void vm_url(const struct az_ctx *a, const char *name, const char *query,
                   struct tw_buf *u) {
  tw_buf_printf(u, "%s/subscriptions/", a->management);
  add_enc(u, a->subscription);
  tw_buf_adds(u, "/resourceGroups/");
  add_enc(u, a->resource_group);
  tw_buf_adds(u, "/providers/Microsoft.Compute/virtualMachines/");
  add_enc(u, name);
  tw_buf_printf(u, "?api-version=%s%s", a->compute_api, query ? query : "");
}

/* ---- waiting ------------------------------------------------------------- */

/* The wait a Retry-After asks for (clamped), or the configured interval. */
static int64_t poll_delay(const struct az_ctx *a, struct tw_provider *p,
                          const char *retry_after) {
  int64_t d = -1;
  if (retry_after)
    d = tw_http_parse_retry_after(retry_after, tw_clock_now_ms(p->clock));
  if (d < 0)
    d = a->lro_poll_ms;
  return d > a->lro_poll_max_ms ? a->lro_poll_max_ms : d;
}

/* Follows a long-running operation's status monitor (Azure-AsyncOperation
 * or Operation-Location) until it ends.  TW_OK when it Succeeded; a failed
 * or canceled one is classed by its error code (AllocationFailed:
 * TW_E_CAPACITY); TW_E_RETRYABLE when it outlasts operation_timeout_ms. */
static enum tw_rc follow_operation(struct tw_provider *p, const char *what,
                                   const char *op_url, const char *retry_after,
                                   struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  int64_t deadline = tw_clock_now_ms(p->clock) + a->lro_timeout_ms;
  int64_t delay = poll_delay(a, p, retry_after);
  char *url = tw_strdup(op_url);
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  enum tw_rc rc;
  for (;;) {
    a->sleep_fn(a->sleep_ctx, delay);
    if ((rc = arm_call(p, "GET", url, NULL, NULL, &resp, err)))
      break;
    if (resp.status != 200) {
      rc = tw_arm_response_error(what, resp.status, resp.body.data,
                                 resp.body.len, err);
      break;
    }
    struct tw_arm_operation op;
    if ((rc = tw_arm_parse_operation(resp.body.data, resp.body.len, &op, err)))
      break;
    if (op.status == TW_ARM_OP_SUCCEEDED) {
      rc = TW_OK;
      break;
    }
    if (op.status != TW_ARM_OP_IN_PROGRESS) {
      const char *code = *op.error.code ? op.error.code : op.status_text;
      rc = tw_arm_error_class(code, op.error.message, 0);
      /* A canceled operation without a reason has nothing to fix. */
      if (rc == TW_E_INVALID && op.status == TW_ARM_OP_CANCELED &&
          !*op.error.code)
        rc = TW_E_RETRYABLE;
      if (err && err->rc == TW_OK)
        tw_err_detail(err, code);
      rc = tw_err_set(err, rc, "%s: operation %s: %s: %s", what, op.status_text,
                      code,
                      *op.error.message ? op.error.message : "(no message)");
      break;
    }
    if (tw_clock_now_ms(p->clock) >= deadline) {
      tw_err_detail(err, "OperationTimeout");
      rc = tw_err_set(err, TW_E_RETRYABLE,
                      "%s: operation still %s after %lld ms", what,
                      op.status_text, (long long)a->lro_timeout_ms);
      break;
    }
    delay = poll_delay(a, p, resp.retry_after);
  }
  free(url);
  tw_http_response_release(&resp);
  return rc;
}

/* ---- describe ------------------------------------------------------------ */

/* GETs VM name with its instance view into *vm.  TW_E_NOTFOUND on 404. */
static enum tw_rc get_vm(struct tw_provider *p, const char *name,
                         struct tw_arm_vm *vm, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  struct tw_buf u;
  struct tw_http_response resp;
  tw_buf_init(&u);
  tw_http_response_init(&resp);
  vm_url(a, name, "&$expand=instanceView", &u);
  enum tw_rc rc = arm_call(p, "GET", u.data, NULL, NULL, &resp, err);
  if (rc == TW_OK) {
    if (resp.status == 200)
      rc = tw_arm_parse_vm(resp.body.data, resp.body.len, vm, err);
    else
      rc = tw_arm_response_error("azure get VM", resp.status, resp.body.data,
                                 resp.body.len, err);
  }
  tw_http_response_release(&resp);
  tw_buf_release(&u);
  return rc;
}

static enum tw_rc az_describe(struct tw_provider *p, const char *id,
                              struct tw_instance *out, struct tw_err *err) {
  struct tw_arm_vm vm;
  if (!path_safe(id))
    return tw_err_set(err, TW_E_NOTFOUND, "azure: %s is not a VM name", id);
  enum tw_rc rc = get_vm(p, id, &vm, err);
  if (rc == TW_OK)
    tw_arm_vm_instance(&vm, out);
  return rc;
}

/* The VM a launch with client token `token` made: its name is the token
 * hashed (tw_azure_vm_name), so one GET answers; a 404 is a definite
 * "none".  The name is unique in the resource group, so region is not
 * needed. */
static enum tw_rc az_find_by_token(struct tw_provider *p, const char *token,
                                   const char *region, struct tw_instance *out,
                                   struct tw_err *err) {
  (void)region;
  struct az_ctx *a = p->ctx;
  char name[64];
  tw_azure_vm_name(a->name_prefix, token, name, sizeof name);
  struct tw_arm_vm vm;
  enum tw_rc rc = get_vm(p, name, &vm, err);
  if (rc == TW_OK)
    tw_arm_vm_instance(&vm, out);
  return rc;
}

/* ---- launch -------------------------------------------------------------- */

static json_t *image_json(const char *image) {
  if (image[0] == '/')
    return json_pack("{s:s}", "id", image);
  char part[4][128];
  const char *s = image;
  for (int i = 0; i < 4; i++) {
    size_t n = strcspn(s, ":");
    if (!n || n >= sizeof part[i] || (i < 3 && s[n] != ':') || (i == 3 && s[n]))
      return NULL;
    memcpy(part[i], s, n);
    part[i][n] = '\0';
    s += n + (i < 3);
  }
  return json_pack("{s:s,s:s,s:s,s:s}", "publisher", part[0], "offer", part[1],
                   "sku", part[2], "version", part[3]);
}

/* The PUT body of a VM for req. */
static enum tw_rc vm_body(struct az_ctx *a, const struct tw_launch *req,
                          const char *name, char **out, struct tw_err *err) {
  const struct tw_offer *o = req->offer;
  const char *image =
      req->image ? req->image
                 : tw_adapter_image_for(&a->images, o->region, o->arch);
  if (!image)
    return tw_err_field(err, TW_E_INVALID, "image",
                        "azure launch: no image for region %s (set image or "
                        "images.%s)",
                        o->region, o->region);
  json_t *img = image_json(image);
  if (!img)
    return tw_err_field(err, TW_E_INVALID, "image",
                        "azure launch: image %s: expected "
                        "publisher:offer:sku:version or an image id",
                        image);
  if (!a->subnet_id || !a->ssh_key) {
    json_decref(img);
    return tw_err_field(err, TW_E_INVALID,
                        a->subnet_id ? "ssh_public_key" : "subnet_id",
                        "azure launch: %s is not configured",
                        a->subnet_id ? "ssh_public_key" : "subnet_id");
  }
  json_t *tags = json_pack("{s:s,s:s,s:s,s:s}", TW_TAG_JOB, req->job_id,
                           TW_TAG_ATTEMPT, req->attempt_id, TW_TAG_TENANT,
                           req->tenant, TW_ARM_TAG_TOKEN, req->client_token);
  char key_path[160];
  snprintf(key_path, sizeof key_path, "/home/%s/.ssh/authorized_keys",
           a->admin_user);
  char nic[80];
  snprintf(nic, sizeof nic, "%s-nic", name);
  json_t *os =
      json_pack("{s:s,s:s,s:{s:b,s:{s:[{s:s,s:s}]}}}", "computerName", name,
                "adminUsername", a->admin_user, "linuxConfiguration",
                "disablePasswordAuthentication", 1, "ssh", "publicKeys", "path",
                key_path, "keyData", a->ssh_key);
  if (req->user_data) {
    size_t n = strlen(req->user_data);
    /* customData: at most 65535 bytes before encoding. */
    if (n > 65535) {
      json_decref(img);
      json_decref(tags);
      json_decref(os);
      return tw_err_field(err, TW_E_INVALID, "user_data",
                          "azure launch: user data is %zu bytes, Azure takes "
                          "at most 65535",
                          n);
    }
    unsigned char *b64 = tw_malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock(b64, (const unsigned char *)req->user_data, (int)n);
    json_object_set_new(os, "customData", json_string((const char *)b64));
    free(b64);
  }
  /* The NIC is declared inside the VM (networkInterfaceConfigurations) and
   * deleted with it, so a launch is one resource and one operation. */
  json_t *props = json_pack(
      "{s:{s:s},s:{s:o,s:{s:s,s:s,s:{s:s}}},s:o,s:{s:s,s:[{s:s,s:{s:b,s:s,"
      "s:[{s:s,s:{s:{s:s}}}]}}]}}",
      "hardwareProfile", "vmSize", o->instance_type, "storageProfile",
      "imageReference", img, "osDisk", "createOption", "FromImage",
      "deleteOption", "Delete", "managedDisk", "storageAccountType",
      tw_adapter_disk_tier(az_disk_tiers,
                           req->disk_type ? req->disk_type : a->os_disk_type),
      "osProfile", os, "networkProfile", "networkApiVersion", "2022-11-01",
      "networkInterfaceConfigurations", "name", nic, "properties", "primary", 1,
      "deleteOption", "Delete", "ipConfigurations", "name", "ipconfig1",
      "properties", "subnet", "id", a->subnet_id);
  if (o->market == TW_MARKET_SPOT) {
    json_object_set_new(props, "priority", json_string("Spot"));
    json_object_set_new(props, "evictionPolicy",
                        json_string(a->eviction_policy));
    /* maxPrice takes at most five decimals: the cap is cut down to them,
     * never rounded up past what the attempt may pay (but at least
     * 0.00001). -1: evicted for capacity only, paying at most the
     * pay-as-you-go price. */
    double max = -1;
    if (req->max_price_uusd_per_hour > 0) {
      int64_t tenth_cents = req->max_price_uusd_per_hour / 10;
      max = (double)(tenth_cents > 0 ? tenth_cents : 1) / 100000.0;
    }
    json_object_set_new(props, "billingProfile",
                        json_pack("{s:f}", "maxPrice", max));
  }
  /* json_pack steals the objects given with "o" even when it fails, and
   * fails on text that is not UTF-8 (a tag value, say). */
  json_t *vm = props ? json_pack("{s:s,s:o,s:o}", "location", o->region, "tags",
                                 tags, "properties", props)
                     : NULL;
  if (!vm) {
    if (!props)
      json_decref(tags);
    return tw_err_set(err, TW_E_INVALID,
                      "azure launch: a tag, name or setting is not UTF-8 "
                      "text");
  }
  if (*o->zone)
    json_object_set_new(vm, "zones", json_pack("[s]", o->zone));
  /* the OS disk's size: the job's, else the config's, else the image's */
  int64_t gb = req->disk_size_gb ? req->disk_size_gb : a->os_disk_gb;
  if (gb)
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(vm, "properties"),
                                        "storageProfile"),
                        "osDisk"),
        "diskSizeGB", json_integer(gb));
  /* the VM's own identity, for what runs on it */
  if (a->vm_identity && !strcmp(a->vm_identity, "system"))
    json_object_set_new(vm, "identity",
                        json_pack("{s:s}", "type", "SystemAssigned"));
  else if (a->vm_identity)
    json_object_set_new(vm, "identity",
                        json_pack("{s:s,s:{s:{}}}", "type", "UserAssigned",
                                  "userAssignedIdentities", a->vm_identity));
  *out = json_dumps(vm, AZ_JSON_FLAGS);
  json_decref(vm);
  return *out ? TW_OK
              : tw_err_set(err, TW_E_INTERNAL, "azure launch: cannot encode");
}

/* GETs VM name until its provisioning ends (a retried launch found it
 * being created), then fills out or maps its failure. */
static enum tw_rc wait_vm(struct tw_provider *p, const char *name,
                          struct tw_instance *out, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  int64_t deadline = tw_clock_now_ms(p->clock) + a->lro_timeout_ms;
  struct tw_arm_vm vm;
  enum tw_rc rc;
  for (;;) {
    if ((rc = get_vm(p, name, &vm, err)))
      return rc;
    if (strcasecmp(vm.provisioning_state, "Creating") &&
        strcasecmp(vm.provisioning_state, "Updating"))
      break;
    if (tw_clock_now_ms(p->clock) >= deadline)
      break; /* reported as pending: the monitor follows it from here */
    a->sleep_fn(a->sleep_ctx, a->lro_poll_ms);
  }
  if (!strcasecmp(vm.provisioning_state, "Failed") && *vm.failure_code) {
    rc = tw_arm_error_class(vm.failure_code, vm.failure_message, 0);
    tw_err_detail(err, vm.failure_code);
    return tw_err_set(err, rc, "azure launch %s: provisioning failed: %s: %s",
                      name, vm.failure_code, vm.failure_message);
  }
  tw_arm_vm_instance(&vm, out);
  return TW_OK;
}

/* Starts a DELETE of a VM whose creation failed, without waiting: it holds
 * no capacity but would linger in the resource group. */
static void delete_failed(struct tw_provider *p, const char *name) {
  struct az_ctx *a = p->ctx;
  struct tw_buf u;
  struct tw_http_response resp;
  struct tw_err e = {0};
  tw_buf_init(&u);
  tw_http_response_init(&resp);
  vm_url(a, name, NULL, &u);
  if (arm_call(p, "DELETE", u.data, NULL, NULL, &resp, &e) ||
      resp.status >= 300)
    tw_log_info("azure",
                "account=%s vm=%s delete after failed create: %s (the "
                "reconciler will retry)",
                p->account, name, e.msg[0] ? e.msg : "refused");
  tw_http_response_release(&resp);
  tw_buf_release(&u);
}

static enum tw_rc az_launch(struct tw_provider *p, const struct tw_launch *req,
                            struct tw_instance *out, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  const struct tw_offer *o = req->offer;
  if (!tw_provider_strv_has(a->regions, a->n_regions, o->region))
    return tw_err_set(err, TW_E_INVALID,
                      "azure launch: region %s is not configured for %s",
                      o->region, p->account);
  /* The VM name is the attempt's token, hashed: if a first PUT timed out
   * after ARM accepted it, the retry (here or in the http helper) names
   * the same VM and finds it instead of buying a second one. */
  char name[64];
  tw_azure_vm_name(a->name_prefix, req->client_token, name, sizeof name);
  char *body = NULL;
  enum tw_rc rc = vm_body(a, req, name, &body, err);
  if (rc)
    return rc;
  struct tw_buf u;
  struct tw_http_response resp;
  tw_buf_init(&u);
  tw_http_response_init(&resp);
  vm_url(a, name, NULL, &u);
  /* If-None-Match: * creates and never updates: a token reused by another
   * job gets its VM back unchanged (the generic layer sees the other
   * job's tags) instead of rewriting that VM's tags. */
  const struct tw_http_header inm = {"If-None-Match", "*"};
  if ((rc = arm_call(p, "PUT", u.data, body, &inm, &resp, err)))
    goto out;
  if (resp.status == 412) {
    tw_log_debug("azure", "account=%s vm=%s exists: a retried launch",
                 p->account, name);
    rc = wait_vm(p, name, out, err);
    goto out;
  }
  if (resp.status != 200 && resp.status != 201) {
    rc = tw_arm_response_error("azure create VM", resp.status, resp.body.data,
                               resp.body.len, err);
    rc = tw_adapter_refusal_settled(rc, resp.unanswered, "azure create VM",
                                    err);
    goto out;
  }
  const char *mon = resp.azure_async_operation ? resp.azure_async_operation
                                               : resp.operation_location;
  if (mon) {
    char *mon_url = tw_strdup(mon);
    char *ra = resp.retry_after ? tw_strdup(resp.retry_after) : NULL;
    rc = follow_operation(p, "azure create VM", mon_url, ra, err);
    free(mon_url);
    free(ra);
    if (rc) {
      if (rc != TW_E_RETRYABLE)
        delete_failed(p, name);
      goto out;
    }
  }
  /* The final GET, as ARM's guidelines ask after a PUT's operation. */
  rc = wait_vm(p, name, out, err);
  if (rc && rc != TW_E_RETRYABLE && rc != TW_E_NOTFOUND)
    delete_failed(p, name);
out:
  free(body);
  tw_http_response_release(&resp);
  tw_buf_release(&u);
  return rc;
}

/* ---- terminate ----------------------------------------------------------- */

static enum tw_rc az_terminate(struct tw_provider *p, const char *id,
                               struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  if (!path_safe(id))
    return TW_OK; /* no such VM can exist */
  struct tw_buf u;
  struct tw_http_response resp;
  tw_buf_init(&u);
  tw_http_response_init(&resp);
  vm_url(a, id, NULL, &u);
  /* Not waited for: the VM shows Deleting (shutting-down) until it is
   * gone, as an EC2 instance shows shutting-down. */
  enum tw_rc rc = arm_call(p, "DELETE", u.data, NULL, NULL, &resp, err);
  if (rc == TW_OK && resp.status != 200 && resp.status != 202 &&
      resp.status != 204 && resp.status != 404)
    rc = tw_arm_response_error("azure delete VM", resp.status, resp.body.data,
                               resp.body.len, err);
  tw_http_response_release(&resp);
  tw_buf_release(&u);
  return rc;
}

/* ---- list managed -------------------------------------------------------- */

/* Every page of an ARM list at url, each handed to fn. */
static enum tw_rc paged(struct tw_provider *p, const char *what,
                        const char *first_url, bool bearer,
                        enum tw_rc (*fn)(void *arg, const struct tw_buf *body,
                                         char **next, struct tw_err *err),
                        void *arg, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  char *url = tw_strdup(first_url), *next = NULL;
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  enum tw_rc rc = TW_OK;
  for (int64_t pages = 1;; pages++) {
    if (pages > a->max_pages) {
      rc = tw_err_set(err, TW_E_TOOBIG, "%s: more than %lld pages", what,
                      (long long)a->max_pages);
      break;
    }
    const struct tw_http_header h[] = {{"Accept", "application/json"}};
    rc = bearer ? arm_call(p, "GET", url, NULL, NULL, &resp, err)
                : plain_call(a, "GET", url, h, 1, NULL, &resp, err);
    if (rc)
      break;
    if (resp.status != 200) {
      rc = tw_arm_response_error(what, resp.status, resp.body.data,
                                 resp.body.len, err);
      break;
    }
    if ((rc = fn(arg, &resp.body, &next, err)) || !next)
      break;
    /* A link back to the same page would loop for ever (libcloud keeps a
     * recorded answer doing just that). */
    if (!strcmp(next, url)) {
      rc =
          tw_err_set(err, TW_E_INVALID, "%s: next link repeats the page", what);
      break;
    }
    if (!same_origin(next, bearer ? a->management : a->prices_url)) {
      rc = tw_err_set(err, TW_E_INVALID, "%s: next link leaves %s", what,
                      bearer ? a->management : a->prices_url);
      break;
    }
    free(url);
    url = next;
    next = NULL;
  }
  free(url);
  free(next);
  tw_http_response_release(&resp);
  return rc;
}

static enum tw_rc resources_page(void *arg, const struct tw_buf *body,
                                 char **next, struct tw_err *err) {
  return tw_arm_parse_resources(body->data, body->len, arg, next, err);
}

static enum tw_rc az_list_managed(struct tw_provider *p,
                                  struct tw_instance_list *out,
                                  struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  struct tw_buf u;
  tw_buf_init(&u);
  tw_buf_printf(&u, "%s/subscriptions/", a->management);
  add_enc(&u, a->subscription);
  tw_buf_adds(&u, "/resourceGroups/");
  add_enc(&u, a->resource_group);
  /* A tag-name filter stands alone in ARM's $filter: the resource type is
   * checked here. */
  tw_buf_adds(&u, "/resources?$filter=");
  add_enc(&u, "tagName eq '" TW_TAG_JOB "'");
  tw_buf_printf(&u, "&api-version=%s", a->resources_api);
  struct tw_arm_resource_list l;
  tw_arm_resource_list_init(&l);
  enum tw_rc rc =
      paged(p, "azure list resources", u.data, true, resources_page, &l, err);
  for (size_t i = 0; i < l.n && rc == TW_OK; i++) {
    if (strcasecmp(l.items[i].type, "Microsoft.Compute/virtualMachines"))
      continue;
    struct tw_arm_vm vm;
    struct tw_err e = {0};
    rc = get_vm(p, l.items[i].name, &vm, &e);
    if (rc == TW_E_NOTFOUND) { /* deleted since the listing */
      rc = TW_OK;
      continue;
    }
    if (rc) {
      if (err && err->rc == TW_OK)
        *err = e;
      break;
    }
    tw_arm_vm_instance(&vm, tw_instance_list_add(out));
  }
  tw_arm_resource_list_release(&l);
  tw_buf_release(&u);
  return rc;
}

/* ---- offers ------------------------------------------------------------- */

static enum tw_rc skus_page(void *arg, const struct tw_buf *body, char **next,
                            struct tw_err *err) {
  return tw_arm_parse_skus(body->data, body->len, arg, next, err);
}

static enum tw_rc prices_page(void *arg, const struct tw_buf *body, char **next,
                              struct tw_err *err) {
  return tw_arm_parse_prices(body->data, body->len, arg, next, err);
}

static bool wanted_type(const struct az_ctx *a, const char *name) {
  if (!a->n_types)
    return true;
  for (size_t i = 0; i < a->n_types; i++)
    if (!strcasecmp(a->types[i], name))
      return true;
  return false;
}

/* The Retail Prices rows of region, from the cache when fresh. */
static enum tw_rc prices_in(struct tw_provider *p, const char *region,
                            struct tw_arm_price_list *out, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  int64_t now = tw_clock_now_ms(p->clock);
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->n_prices; i++)
    if (!strcmp(a->prices[i].region, region) &&
        now - a->prices[i].fetched_ms < a->price_cache_ms) {
      for (size_t j = 0; j < a->prices[i].list.n; j++)
        tw_arm_price_list_push(out, &a->prices[i].list.items[j]);
      pthread_mutex_unlock(&a->lock);
      return TW_OK;
    }
  pthread_mutex_unlock(&a->lock);

  struct tw_buf f, u;
  tw_buf_init(&f);
  tw_buf_init(&u);
  tw_buf_printf(&f,
                "serviceName eq 'Virtual Machines' and armRegionName eq '%s' "
                "and priceType eq 'Consumption'",
                region);
  for (size_t i = 0; i < a->n_types; i++)
    tw_buf_printf(&f, "%sarmSkuName eq '%s'%s", i ? " or " : " and (",
                  a->types[i], i + 1 == a->n_types ? ")" : "");
  tw_buf_printf(&u, "%s?api-version=", a->prices_url);
  add_enc(&u, a->prices_api);
  tw_buf_adds(&u, "&$filter=");
  add_enc(&u, f.data);
  struct tw_arm_price_list l;
  tw_arm_price_list_init(&l);
  enum tw_rc rc =
      paged(p, "azure retail prices", u.data, false, prices_page, &l, err);
  if (rc == TW_OK) {
    for (size_t j = 0; j < l.n; j++)
      tw_arm_price_list_push(out, &l.items[j]);
    pthread_mutex_lock(&a->lock);
    size_t i;
    for (i = 0; i < a->n_prices && strcmp(a->prices[i].region, region); i++)
      ;
    if (i == a->n_prices) {
      a->prices = tw_realloc(a->prices, (a->n_prices + 1) * sizeof *a->prices);
      memset(&a->prices[i], 0, sizeof a->prices[i]);
      TW_SET(a->prices[i].region, region);
      a->n_prices++;
    }
    tw_arm_price_list_release(&a->prices[i].list);
    a->prices[i].list = l;
    a->prices[i].fetched_ms = now;
    tw_arm_price_list_init(&l);
    pthread_mutex_unlock(&a->lock);
  }
  tw_arm_price_list_release(&l);
  tw_buf_release(&f);
  tw_buf_release(&u);
  return rc;
}

static void offer_from(struct az_ctx *a, struct tw_offer *o,
                       const struct tw_arm_sku *s, const char *zone,
                       enum tw_market market, int64_t uusd) {
  TW_SET(o->region, s->location);
  TW_SET(o->zone, zone);
  TW_SET(o->instance_type, s->name);
  o->arch = s->arch;
  o->vcpus = s->vcpus;
  o->memory_mib = s->memory_mib;
  tw_arm_accel(s->name, s->gpus, o->accel_name, sizeof o->accel_name,
               &o->accel_memory_mib);
  o->accel_count = *o->accel_name ? s->gpus : 0;
  o->market = market;
  o->price_uusd_per_hour = uusd;
  /* Azure bills VMs per second of allocation, with a minimum charge. */
  o->billing_granularity_s = 1;
  o->min_charge_s = a->min_charge_s;
  if (*s->family)
    tw_offer_set_label(o, "family", s->family);
}

static enum tw_rc offers_in(struct tw_provider *p, const char *region,
                            struct tw_offer_list *out, struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  struct tw_buf u;
  tw_buf_init(&u);
  tw_buf_printf(&u, "%s/subscriptions/", a->management);
  add_enc(&u, a->subscription);
  tw_buf_printf(&u, "/providers/Microsoft.Compute/skus?api-version=%s",
                a->skus_api);
  tw_buf_adds(&u, "&$filter=");
  char f[96];
  snprintf(f, sizeof f, "location eq '%s'", region);
  add_enc(&u, f);
  struct tw_arm_sku_list skus;
  struct tw_arm_price_list prices;
  tw_arm_sku_list_init(&skus);
  tw_arm_price_list_init(&prices);
  enum tw_rc rc =
      paged(p, "azure resource skus", u.data, true, skus_page, &skus, err);
  if (rc == TW_OK)
    rc = prices_in(p, region, &prices, err);
  int64_t now = tw_clock_now_ms(p->clock);
  for (size_t i = 0; i < skus.n && rc == TW_OK; i++) {
    const struct tw_arm_sku *s = &skus.items[i];
    if (strcasecmp(s->location, region) || s->restricted || s->vcpus < 1 ||
        !wanted_type(a, s->name))
      continue;
    for (int m = 0; m < 2; m++) {
      enum tw_market market = m ? TW_MARKET_SPOT : TW_MARKET_ON_DEMAND;
      int64_t uusd;
      if ((market == TW_MARKET_SPOT && !s->low_priority) ||
          !tw_arm_prices_select(&prices, s->name, region, market, now, &uusd))
        continue;
      if (!a->zonal || !s->n_zones) {
        struct tw_offer *o = tw_offer_list_add(out);
        offer_from(a, o, s, "", market, uusd);
        TW_SET(o->region, region);
        continue;
      }
      for (size_t z = 0; z < s->n_zones; z++) {
        struct tw_offer *o = tw_offer_list_add(out);
        offer_from(a, o, s, s->zones[z], market, uusd);
        TW_SET(o->region, region);
      }
    }
  }
  tw_arm_sku_list_release(&skus);
  tw_arm_price_list_release(&prices);
  tw_buf_release(&u);
  return rc;
}

static enum tw_rc az_list_offers(struct tw_provider *p,
                                 struct tw_offer_list *out,
                                 struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  return tw_adapter_offers_by_region(p, a->regions, a->n_regions, offers_in,
                                     out, err);
}

/* ---- events ------------------------------------------------------------- */

/* One Scheduled Events document: Preempt events become interruptions of
 * the VMs they name (only, with a per-VM url, of vm). */
static enum tw_rc events_from(struct tw_provider *p, const char *url,
                              const char *vm, struct tw_event_list *out,
                              struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  struct tw_http_response resp;
  tw_http_response_init(&resp);
  /* The metadata service refuses requests without this header, a guard
   * against being reached through a proxy by mistake. */
  const struct tw_http_header h[] = {{"Metadata", "true"}};
  enum tw_rc rc = plain_call(a, "GET", url, h, 1, NULL, &resp, err);
  if (rc == TW_OK && resp.status == 404 && vm) {
    rc = TW_OK; /* the relay does not know that VM (yet) */
  } else if (rc == TW_OK && resp.status != 200) {
    rc = tw_arm_response_error("azure scheduled events", resp.status,
                               resp.body.data, resp.body.len, err);
  } else if (rc == TW_OK) {
    struct tw_arm_sched_event_list l;
    tw_arm_sched_event_list_init(&l);
    rc = tw_arm_parse_scheduled_events(resp.body.data, resp.body.len, &l, NULL,
                                       err);
    for (size_t i = 0; i < l.n && rc == TW_OK; i++) {
      const struct tw_arm_sched_event *s = &l.items[i];
      if (strcmp(s->type, "Preempt") || (vm && strcmp(s->resource, vm)))
        continue;
      struct tw_event *e = tw_event_list_add(out);
      e->kind = TW_EVENT_INTERRUPTION;
      TW_SET(e->instance_id, s->resource);
      TW_SET(e->action,
             !strcmp(a->eviction_policy, "Delete") ? "terminate" : "stop");
      /* The document names only NotBefore; the notice went out at least
       * 30 s before it, which keeps noticed_ms the same from poll to poll.
       * A Started event no longer carries NotBefore: the eviction is
       * under way. */
      e->deadline_ms = s->not_before_ms;
      e->noticed_ms =
          s->not_before_ms ? s->not_before_ms - AZ_PREEMPT_LEAD_MS : 0;
    }
    tw_arm_sched_event_list_release(&l);
  }
  tw_http_response_release(&resp);
  return rc;
}

static enum tw_rc az_poll_events(struct tw_provider *p,
                                 struct tw_event_list *out,
                                 struct tw_err *err) {
  struct az_ctx *a = p->ctx;
  if (!a->events_url)
    return TW_OK; /* see docs/azure.md: notices need a relay */
  const char *t = strstr(a->events_url, "{name}");
  if (!t)
    return events_from(p, a->events_url, NULL, out, err);
  /* A per-VM relay: ask for each live Spot VM. */
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = az_list_managed(p, &l, err);
  for (size_t i = 0; i < l.n && rc == TW_OK; i++) {
    const struct tw_instance *in = &l.items[i];
    if (in->market != TW_MARKET_SPOT ||
        (in->state != TW_INST_RUNNING && in->state != TW_INST_PENDING))
      continue;
    struct tw_buf u;
    tw_buf_init(&u);
    tw_buf_add(&u, a->events_url, (size_t)(t - a->events_url));
    add_enc(&u, in->id);
    tw_buf_adds(&u, t + 6);
    rc = events_from(p, u.data, in->id, out, err);
    tw_buf_release(&u);
  }
  tw_instance_list_release(&l);
  return rc;
}

/* Standard_<FAMILY><vcpus><features>_<version>: the lower-case feature
 * `p` marks an Arm (Ampere, Cobalt) size; the rest are x86_64. */
static enum tw_arch az_arch_of_type(const char *type) {
  const char *s = !strncmp(type, "Standard_", 9) ? type + 9 : type;
  while (*s && isupper((unsigned char)*s))
    s++;
  while (*s && isdigit((unsigned char)*s))
    s++;
  for (; *s && *s != '_' && *s != '-'; s++)
    if (*s == 'p')
      return TW_ARCH_ARM64;
  return TW_ARCH_X86_64;
}

/* A size's family is its series and features without the vCPU count:
 * Standard_D8s_v5 -> Ds_v5, Standard_E8-4s_v5 (constrained) -> Es_v5,
 * Standard_ND96isr_H100_v5 -> NDisr_H100_v5. */
static bool az_type_family(const char *type, char *out, size_t outsz) {
  const char *s = !strncmp(type, "Standard_", 9) ? type + 9 : type;
  size_t n = 0;
  while (*s && isupper((unsigned char)*s) && n + 1 < outsz)
    out[n++] = *s++;
  while (isdigit((unsigned char)*s))
    s++;
  if (*s == '-') /* constrained vCPUs */
    for (s++; isdigit((unsigned char)*s);)
      s++;
  while (*s && n + 1 < outsz)
    out[n++] = *s++;
  out[n] = '\0';
  return n > 0;
}

/* The B series runs on CPU credits; DC, EC and NCC sizes are
 * confidential VMs. */
static unsigned az_type_traits(const char *type) {
  const char *s = !strncmp(type, "Standard_", 9) ? type + 9 : type;
  size_t n = 0;
  while (isupper((unsigned char)s[n]))
    n++;
  if (n == 1 && s[0] == 'B')
    return TW_TYPE_BURSTABLE;
  if ((n == 2 && (!strncmp(s, "DC", 2) || !strncmp(s, "EC", 2))) ||
      (n == 3 && !strncmp(s, "NCC", 3)))
    return TW_TYPE_CONFIDENTIAL;
  return 0;
}

/* The NP sizes carry Xilinx U250 FPGAs the price lists do not name. */
static const struct tw_provider_type_accel az_type_accels[] = {
    {"Standard_NP", "U250"}, {NULL, NULL}};

/* Azure bills per minute (60-second minimum); Scheduled Events carry the
 * eviction notice. */
static const struct tw_provider_info az_info = {
    .billing = {.kind = TW_BILLING_PUBLISHED,
                .granularity_s = 1,
                .min_charge_s = 300,
                .spot_reclaim_minimum = true,
                .source = "Azure Virtual Machines billing: per second, "
                          "with a minimum of 5 minutes (300 s) per start "
                          "from 2025-06-01, Spot VMs included"},
    .notice_url = "http://169.254.169.254/metadata/"
                  "scheduledevents?api-version=2020-07-01",
    .notice_signal = "",
    .focus_provider = "Microsoft Azure",
    .focus_compute_service = "Virtual Machines",
    .focus_network_service = "Bandwidth",
    .focus_resource_type = "Virtual Machine",
    .user_data_max = 65535, /* customData: 64 KiB before encoding */
    .catalog_zone_ids = false,
    .catalog_risk_feed = false,
    .arch_of_type = az_arch_of_type,
    .type_accels = az_type_accels,
    .type_bundle = NULL,
    .accel_attach = NULL,
    .type_family = az_type_family,
    .type_traits = az_type_traits};

const struct tw_provider_ops tw_provider_azure = {
    .name = "azure",
    .version = TW_PROVIDER_OPS_VERSION,
    .supports =
        TW_PROV_SPOT | TW_PROV_EVENTS | TW_PROV_ZONES | TW_PROV_CLIENT_TOKEN,
    .init = az_init,
    .list_offers = az_list_offers,
    .launch = az_launch,
    .describe = az_describe,
    .terminate = az_terminate,
    .list_managed = az_list_managed,
    .poll_events = az_poll_events,
    .free = az_free,
    .info = &az_info,
    .find_by_token = az_find_by_token,
};
