/* test_azure_creds.c - the Azure adapter's credentials and the job's
 * machine on a VM
 * (docs/providers.md#azure-credentials) against an in-process fake Entra
 * ID and IMDS (tests/fakecloud/azure.c): the certificate's signed client
 * assertion, workload identity's federated token, the managed identity,
 * the default order, and the refusals Entra ID gives. */
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/node.h"
#include "providers/azure/az_assert.h"
#include "providers/http.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/fakecloud/fakecloud.h"

static struct fc_server *srv;
static char base[64];
static char dir[] = "/tmp/tw_az_creds_XXXXXX";
static struct tw_http *http;
static char *good_pem, *other_pem; /* key + certificate files */
static char *good_cert;            /* the registered certificate, PEM */

static json_t *ctl(const char *path, const char *json) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", base, path);
  const struct tw_http_header h[] = {{"Content-Type", "application/json"}};
  struct tw_http_request req = {.method = json ? "POST" : "GET",
                                .url = url,
                                .headers = h,
                                .n_headers = 1,
                                .body = json,
                                .body_len = json ? strlen(json) : 0,
                                .max_attempts = 1};
  struct tw_http_response r;
  struct tw_err err = {0};
  tw_http_response_init(&r);
  json_t *j = NULL;
  if (tw_http_do(http, &req, &r, &err) == TW_OK)
    j = json_loadb(r.body.data, r.body.len, 0, NULL);
  tw_http_response_release(&r);
  return j;
}

static json_int_t identity_count(const char *name) {
  json_t *j = ctl("/_fake/azure/identity", "{}");
  json_int_t v = json_integer_value(json_object_get(j, name));
  json_decref(j);
  return v;
}

/* An RSA key and a self-signed certificate in one PEM file; the
 * certificate alone into *cert_pem when asked. */
static char *make_cert(const char *name, char **cert_pem) {
  EVP_PKEY *key = EVP_RSA_gen(2048);
  X509 *x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME *n = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)name,
                             -1, -1, 0);
  X509_set_issuer_name(x, n);
  X509_sign(x, key, EVP_sha256());
  char *path = tw_asprintf("%s/%s.pem", dir, name);
  FILE *f = fopen(path, "w");
  PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
  PEM_write_X509(f, x);
  fclose(f);
  if (cert_pem) {
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    char *data;
    long len = BIO_get_mem_data(b, &data);
    *cert_pem = tw_strndup(data, (size_t)len);
    BIO_free(b);
  }
  X509_free(x);
  EVP_PKEY_free(key);
  return path;
}

static char *write_file(const char *name, const char *text) {
  char *path = tw_asprintf("%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

static enum tw_rc provider(const char *extra, struct tw_provider **p,
                           struct tw_err *err) {
  char *doc = tw_asprintf(
      "name: az-creds\ntype: azure\nsubscription_id: %s\n"
      "resource_group: %s\nregions: [eastus]\nauthority: %s\n"
      "management_endpoint: %s\nprices_url: %s/api/retail/prices\n"
      "image: Canonical:ubuntu-24_04-lts:server:latest\n"
      "backoff_base_ms: 1\nbackoff_cap_ms: 5\nmax_attempts: 1\n%s",
      FC_AZ_SUBSCRIPTION, FC_AZ_RESOURCE_GROUP, base, base, base, extra);
  struct tw_node *cfg = NULL;
  enum tw_rc rc = tw_node_parse_yaml(doc, strlen(doc), &cfg, err);
  if (rc == TW_OK)
    rc = tw_provider_new(tw_adapters, cfg, NULL, p, err);
  tw_node_free(cfg);
  free(doc);
  return rc;
}

/* A call that needs a bearer token; its rc. */
static enum tw_rc call(struct tw_provider *p, struct tw_err *err) {
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = tw_provider_list_managed(p, &l, err);
  tw_instance_list_release(&l);
  return rc;
}

static void certificate(void **state) {
  (void)state;
  char *extra = tw_asprintf("tenant_id: %s\nclient_id: %s\n"
                            "certificate_file: %s\n",
                            FC_AZ_TENANT, FC_AZ_CLIENT_ID, good_pem);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  json_int_t before = identity_count("assertion_tokens");
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_INT(identity_count("assertion_tokens"), before + 1);
  tw_provider_free(p);
  free(extra);

  /* a certificate the application does not know */
  extra = tw_asprintf("tenant_id: %s\nclient_id: %s\ncredential: certificate\n"
                      "certificate_file: %s\n",
                      FC_AZ_TENANT, FC_AZ_CLIENT_ID, other_pem);
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(call(p, &err) == TW_E_AUTH, "%s", err.msg);
  TW_CHECK(strstr(err.msg, "AADSTS700027"), "%s", err.msg);
  tw_provider_free(p);
  free(extra);

  /* a file without the key: refused at start, naming it */
  char *only = write_file("only-cert.pem", good_cert);
  extra =
      tw_asprintf("tenant_id: t\nclient_id: c\ncertificate_file: %s\n", only);
  tw_err_clear(&err);
  TW_CHECK(provider(extra, &p, &err) == TW_E_AUTH);
  TW_CHECK_STR(err.field, "certificate_file");
  TW_CHECK(strstr(err.msg, "key missing"), "%s", err.msg);
  free(extra);
  free(only);
}

static void workload_identity(void **state) {
  (void)state;
  json_decref(ctl("/_fake/azure/identity",
                  "{\"federated_token\":\"eyJhbGciOi.eyJpc3Mi.fedsig\"}"));
  char *tok = write_file("azure-token", "eyJhbGciOi.eyJpc3Mi.fedsig\n");
  setenv("AZURE_FEDERATED_TOKEN_FILE", tok, 1);
  setenv("AZURE_TENANT_ID", FC_AZ_TENANT, 1);
  setenv("AZURE_CLIENT_ID", FC_AZ_CLIENT_ID, 1);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  /* nothing in the config: the environment, as in an AKS pod */
  TW_CHECK_RC(provider("", &p, &err), TW_OK, err);
  json_int_t before = identity_count("assertion_tokens");
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_INT(identity_count("assertion_tokens"), before + 1);
  tw_provider_free(p);
  /* a token Entra ID has no federated credential for */
  free(write_file("azure-token", "eyJhbGciOi.eyJpc3Mi.other\n"));
  TW_CHECK_RC(provider("", &p, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(call(p, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "AADSTS70021"), "%s", err.msg);
  TW_CHECK(!strstr(err.msg, "other"), "token in the error: %s", err.msg);
  tw_provider_free(p);
  free(tok);
}

static void managed_identity(void **state) {
  (void)state;
  char *extra = tw_asprintf("imds_endpoint: %s\n", base);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  /* no tenant, no client, no secret: the instance's identity */
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  json_int_t before = identity_count("msi_tokens");
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_INT(identity_count("msi_tokens"), before + 1); /* cached */
  tw_provider_free(p);
  free(extra);
  /* the wrong kind is named */
  tw_err_clear(&err);
  TW_CHECK(provider("credential: laptop\n", &p, &err) == TW_E_INVALID);
  TW_CHECK_STR(err.field, "credential");
  /* a secret asked for and absent */
  tw_err_clear(&err);
  TW_CHECK(provider("credential: client_secret\ntenant_id: t\nclient_id: c\n"
                    "client_secret_env: TW_AZ_NO_SUCH\n",
                    &p, &err) == TW_E_AUTH);
}

/* GET of an ARM path with a managed identity's token from the fake. */
static json_t *arm_get(const char *path) {
  json_t *t = NULL;
  char url[640];
  snprintf(url, sizeof url,
           "%s/metadata/identity/oauth2/token?api-version=2018-02-01&"
           "resource=%s/",
           base, base);
  const struct tw_http_header mh[] = {{"Metadata", "true"}};
  struct tw_http_request req = {.method = "GET",
                                .url = url,
                                .headers = mh,
                                .n_headers = 1,
                                .max_attempts = 1};
  struct tw_http_response r;
  struct tw_err err = {0};
  tw_http_response_init(&r);
  if (tw_http_do(http, &req, &r, &err) == TW_OK)
    t = json_loadb(r.body.data, r.body.len, 0, NULL);
  tw_http_response_release(&r);
  char authz[512];
  snprintf(authz, sizeof authz, "Bearer %s",
           json_string_value(json_object_get(t, "access_token")));
  json_decref(t);
  snprintf(url, sizeof url, "%s%s", base, path);
  const struct tw_http_header ah[] = {{"Authorization", authz}};
  req = (struct tw_http_request){.method = "GET",
                                 .url = url,
                                 .headers = ah,
                                 .n_headers = 1,
                                 .max_attempts = 1};
  tw_http_response_init(&r);
  json_t *j = NULL;
  if (tw_http_do(http, &req, &r, &err) == TW_OK && r.status == 200)
    j = json_loadb(r.body.data, r.body.len, 0, NULL);
  tw_http_response_release(&r);
  return j;
}

/* images per architecture, the OS disk from the config or the job, the
 * VM's identity; what ARM refuses, the fake refuses */
static void machine(void **state) {
  (void)state;
  char *extra = tw_asprintf(
      "imds_endpoint: %s\nssh_public_key: ssh-ed25519 "
      "AAAAC3NzaC1lZDI1NTE5AAAAIFake\n"
      "subnet_id: /subscriptions/%s/resourceGroups/net/providers/"
      "Microsoft.Network/virtualNetworks/v/subnets/default\n"
      "images: {eastus: {x86_64: \"Canonical:ubuntu-24_04-lts:server:latest\", "
      "arm64: \"Canonical:ubuntu-24_04-lts:server-arm64:latest\"}}\n"
      "os_disk_size_gb: 64\n"
      "vm_identity: /subscriptions/%s/resourceGroups/id/providers/"
      "Microsoft.ManagedIdentity/userAssignedIdentities/tw-node\n",
      base, FC_AZ_SUBSCRIPTION, FC_AZ_SUBSCRIPTION);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  json_decref(
      ctl("/_fake/azure/config", "{\"retry_after_s\":0,\"create_ms\":0}"));
  struct tw_offer o;
  memset(&o, 0, sizeof o);
  snprintf(o.provider, sizeof o.provider, "azure");
  snprintf(o.account, sizeof o.account, "az-creds");
  snprintf(o.region, sizeof o.region, "eastus");
  snprintf(o.instance_type, sizeof o.instance_type, "Standard_D2ps_v5");
  o.arch = TW_ARCH_ARM64;
  o.market = TW_MARKET_ON_DEMAND;
  struct tw_launch l = {.offer = &o,
                        .client_token = "tok-az-1",
                        .job_id = "j-az",
                        .attempt_id = "a-1",
                        .tenant = "t",
                        .disk_size_gb = 256,
                        .disk_type = "Premium_LRS"};
  struct tw_instance in;
  TW_CHECK_RC(tw_provider_launch(p, &l, &in, &err), TW_OK, err);
  char path[512];
  snprintf(path, sizeof path,
           "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
           "virtualMachines/%s?api-version=2024-07-01",
           FC_AZ_SUBSCRIPTION, FC_AZ_RESOURCE_GROUP, in.id);
  json_t *vm = arm_get(path);
  TW_CHECK(vm != NULL, "GET %s", path);
  json_t *sp =
      json_object_get(json_object_get(vm, "properties"), "storageProfile");
  TW_CHECK_STR(json_string_value(json_object_get(
                   json_object_get(sp, "imageReference"), "sku")),
               "server-arm64");
  json_t *od = json_object_get(sp, "osDisk");
  TW_CHECK_INT(json_integer_value(json_object_get(od, "diskSizeGB")), 256);
  TW_CHECK_STR(json_string_value(json_object_get(
                   json_object_get(od, "managedDisk"), "storageAccountType")),
               "Premium_LRS");
  json_t *idn = json_object_get(vm, "identity");
  TW_CHECK_STR(json_string_value(json_object_get(idn, "type")), "UserAssigned");
  TW_CHECK(json_object_size(json_object_get(idn, "userAssignedIdentities")) ==
           1);
  json_decref(vm);
  /* a disk type ARM does not have: the fake's 400, TW_E_INVALID */
  l.client_token = "tok-az-2";
  l.disk_type = "gp3";
  tw_err_clear(&err);
  TW_CHECK(tw_provider_launch(p, &l, &in, &err) == TW_E_INVALID, "%s", err.msg);
  TW_CHECK(strstr(err.msg, "storageAccountType"), "%s", err.msg);
  tw_provider_free(p);
  free(extra);
  tw_err_clear(&err);
  TW_CHECK(provider("vm_identity: mine\n", &p, &err) == TW_E_INVALID);
  TW_CHECK_STR(err.field, "vm_identity");
}

static void assertion_shape(void **state) {
  (void)state;
  struct tw_az_cert *c = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(tw_az_cert_load(good_pem, &c, &err), TW_OK, err);
  char *a = NULL;
  TW_CHECK_RC(tw_az_client_assertion(c, "cid", "https://x/t/oauth2/v2.0/token",
                                     1700000000000LL, "jti-1", &a, &err),
              TW_OK, err);
  /* three base64url parts, no padding */
  const char *d1 = strchr(a, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  TW_CHECK(d2 && !strchr(d2 + 1, '.') && !strchr(a, '='), "%s", a);
  free(a);
  tw_az_cert_free(c);
  char out[16];
  tw_az_b64url((const unsigned char *)"\xfb\xff", 2, out);
  TW_CHECK_STR(out, "-_8");
}

static int start(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!mkdtemp(dir))
    return -1;
  struct fc_opts o;
  fc_opts_init(&o);
  struct tw_err err = {0};
  if (fc_server_start(&o, &srv, &err) || tw_http_new(NULL, &http, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  good_pem = make_cert("good", &good_cert);
  other_pem = make_cert("other", NULL);
  json_t *cert = json_pack("{s:s}", "certificate", good_cert);
  char *body = json_dumps(cert, 0);
  json_decref(ctl("/_fake/azure/identity", body));
  free(body);
  json_decref(cert);
  return 0;
}

static int stop(void **state) {
  (void)state;
  tw_http_free(http);
  fc_server_stop(srv);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  free(good_pem);
  free(other_pem);
  free(good_cert);
  curl_global_cleanup();
  return 0;
}

/* the environment of DefaultAzureCredential, empty before each test */
static int clean_env(void **state) {
  (void)state;
  const char *vars[] = {"AZURE_FEDERATED_TOKEN_FILE", "AZURE_TENANT_ID",
                        "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
                        "AZURE_CLIENT_CERTIFICATE_PATH"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    unsetenv(vars[i]);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(assertion_shape, clean_env),
      cmocka_unit_test_setup(certificate, clean_env),
      cmocka_unit_test_setup(workload_identity, clean_env),
      cmocka_unit_test_setup(managed_identity, clean_env),
      cmocka_unit_test_setup(machine, clean_env),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
