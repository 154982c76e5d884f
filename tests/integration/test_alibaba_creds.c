/* test_alibaba_creds.c - the Alibaba adapter's credential chain
 * (providers/alibaba/ali_creds.h) against an in-process fake ECS, STS and
 * ECS metadata service (tests/fakecloud/alibaba.c, creds.c): an STS token
 * beside its AccessKey, the instance's RAM role (discovered and named),
 * an STS AssumeRole on an AccessKey, both signature styles, and a session
 * revoked early; then the job's machine on ECS: the image of the
 * architecture, the system disk, the instance's RAM role. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/node.h"
#include "providers/http.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakecloud/fakecloud.h"

static struct fc_server *srv;
static char base[64];
static struct tw_http *http;

static long raw(const char *method, const char *path, const char *json,
                json_t **out) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", base, path);
  const struct tw_http_header h[] = {{"Content-Type", "application/json"}};
  struct tw_http_request req = {.method = method,
                                .url = url,
                                .headers = h,
                                .n_headers = json ? 1 : 0,
                                .body = json,
                                .body_len = json ? strlen(json) : 0,
                                .max_attempts = 1};
  struct tw_http_response r;
  struct tw_err err = {0};
  tw_http_response_init(&r);
  long st = tw_http_do(http, &req, &r, &err) ? 0 : r.status;
  if (out)
    *out = json_loadb(r.body.data, r.body.len, 0, NULL);
  tw_http_response_release(&r);
  return st;
}

static long counter(const char *name) {
  json_t *j = NULL;
  raw("GET", "/_fake/creds", NULL, &j);
  long v = (long)json_integer_value(json_object_get(j, name));
  json_decref(j);
  return v;
}

static enum tw_rc provider(const char *extra, struct tw_provider **p,
                           struct tw_err *err) {
  char *doc = tw_asprintf("name: ali-creds\ntype: alibaba\nendpoint: %s\n"
                          "cms_endpoint: %s\nregions: [cn-hangzhou]\n"
                          "image: ubuntu_22_04_x64_20G_alibase_20240101.vhd\n"
                          "backoff_base_ms: 1\nbackoff_cap_ms: 5\n"
                          "max_attempts: 1\n%s",
                          base, base, extra);
  struct tw_node *cfg = NULL;
  enum tw_rc rc = tw_node_parse_yaml(doc, strlen(doc), &cfg, err);
  if (rc == TW_OK)
    rc = tw_provider_new(tw_adapters, cfg, NULL, p, err);
  tw_node_free(cfg);
  free(doc);
  return rc;
}

static enum tw_rc call(struct tw_provider *p, struct tw_err *err) {
  struct tw_instance_list l;
  tw_instance_list_init(&l);
  enum tw_rc rc = tw_provider_list_managed(p, &l, err);
  tw_instance_list_release(&l);
  return rc;
}

static int clean(void **state) {
  (void)state;
  const char *v[] = {
      "ALIBABA_CLOUD_ACCESS_KEY_ID",         "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
      "ALIBABA_CLOUD_SECURITY_TOKEN",        "ALIBABA_CLOUD_ECS_METADATA",
      "ALIBABA_CLOUD_ECS_METADATA_DISABLED", "ALIBABA_CLOUD_ROLE_ARN",
      "ALIBABA_CLOUD_ROLE_SESSION_NAME"};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    unsetenv(v[i]);
  raw("POST", "/_fake/creds", "{\"down\":false,\"role\":\"tradewind-node\"}",
      NULL);
  return 0;
}

static void sts_token_from_the_environment(void **state) {
  (void)state;
  /* a token as `aliyun sts AssumeRole` would hand it out: the fake's RAM
   * role endpoint makes one */
  json_t *k = NULL;
  TW_CHECK_INT(raw("GET",
                   "/latest/meta-data/ram/security-credentials/"
                   "tradewind-node",
                   NULL, &k),
               200);
  setenv("ALIBABA_CLOUD_ACCESS_KEY_ID",
         json_string_value(json_object_get(k, "AccessKeyId")), 1);
  setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET",
         json_string_value(json_object_get(k, "AccessKeySecret")), 1);
  setenv("ALIBABA_CLOUD_SECURITY_TOKEN",
         json_string_value(json_object_get(k, "SecurityToken")), 1);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(provider("", &p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  tw_provider_free(p);
  /* and with ACS3 signatures (x-acs-security-token, signed) */
  TW_CHECK_RC(provider("signature: acs3\n", &p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  tw_provider_free(p);
  /* the same key with another token: refused */
  setenv("ALIBABA_CLOUD_SECURITY_TOKEN", "not-its-token", 1);
  TW_CHECK_RC(provider("", &p, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(call(p, &err) != TW_OK);
  TW_CHECK_STR(err.detail, "InvalidSecurityToken.MismatchWithAccessKey");
  tw_provider_free(p);
  json_decref(k);
}

static void ram_role(void **state) {
  (void)state;
  char *extra = tw_asprintf("metadata_endpoint: %s\n", base);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  long before = counter("ram");
  /* the role discovered from the metadata service */
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  TW_CHECK_INT(counter("ram"), before + 1); /* cached */
  tw_provider_free(p);
  free(extra);
  /* a named role the instance does not have */
  extra = tw_asprintf("metadata_endpoint: %s\nram_role: other\n", base);
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(call(p, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "HTTP 404"), "%s", err.msg);
  tw_provider_free(p);
  free(extra);
  /* nothing at all */
  setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true", 1);
  tw_err_clear(&err);
  TW_CHECK(provider("", &p, &err) == TW_E_AUTH);
  TW_CHECK(strstr(err.msg, "no credentials"), "%s", err.msg);
}

static void assume_role(void **state) {
  (void)state;
  setenv("TW_ALI_AK", FC_DEFAULT_ACCESS_KEY, 1);
  setenv("TW_ALI_SK", FC_DEFAULT_SECRET_KEY, 1);
  char *extra = tw_asprintf("access_key_env: TW_ALI_AK\n"
                            "secret_key_env: TW_ALI_SK\n"
                            "role_arn: acs:ram::123456789012:role/tradewind\n"
                            "sts_endpoint: %s\n",
                            base);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  /* the session revoked: InvalidSecurityToken.Expired, assumed again */
  TW_CHECK_INT(raw("POST", "/_fake/creds", "{\"expire_all\":true}", NULL), 200);
  TW_CHECK_RC(call(p, &err), TW_OK, err);
  tw_provider_free(p);
  free(extra);
  /* a malformed role: STS's refusal, at the first call */
  extra = tw_asprintf("access_key_env: TW_ALI_AK\nsecret_key_env: TW_ALI_SK\n"
                      "role_arn: arn:aws:iam::1:role/x\nsts_endpoint: %s\n",
                      base);
  TW_CHECK_RC(provider(extra, &p, &err), TW_OK, err);
  tw_err_clear(&err);
  TW_CHECK(call(p, &err) == TW_E_AUTH);
  TW_CHECK_STR(err.detail, "InvalidParameter.RoleArn");
  tw_provider_free(p);
  free(extra);
}

static void machine(void **state) {
  (void)state;
  setenv("TW_ALI_AK", FC_DEFAULT_ACCESS_KEY, 1);
  setenv("TW_ALI_SK", FC_DEFAULT_SECRET_KEY, 1);
  struct tw_provider *p = NULL;
  struct tw_err err = {0};
  TW_CHECK_RC(provider("access_key_env: TW_ALI_AK\nsecret_key_env: TW_ALI_SK\n"
                       "images: {cn-hangzhou: {x86_64: "
                       "ubuntu_24_04_x64_20G_alibase_20250722.vhd, arm64: "
                       "ubuntu_24_04_arm64_20G_alibase_20250722.vhd}}\n"
                       "system_disk_size_gb: 40\nsystem_disk_category: "
                       "cloud_essd\nram_role_name: tradewind-node\n",
                       &p, &err),
              TW_OK, err);
  struct tw_offer o;
  memset(&o, 0, sizeof o);
  snprintf(o.provider, sizeof o.provider, "alibaba");
  snprintf(o.account, sizeof o.account, "ali-creds");
  snprintf(o.region, sizeof o.region, "cn-hangzhou");
  snprintf(o.zone, sizeof o.zone, "cn-hangzhou-h");
  snprintf(o.instance_type, sizeof o.instance_type, "ecs.g7.large");
  o.arch = TW_ARCH_X86_64;
  o.market = TW_MARKET_ON_DEMAND;
  struct tw_launch l = {.offer = &o,
                        .client_token = "tok-ali-m1",
                        .job_id = "j-ali",
                        .attempt_id = "a-1",
                        .tenant = "t",
                        .disk_size_gb = 100};
  struct tw_instance in;
  TW_CHECK_RC(tw_provider_launch(p, &l, &in, &err), TW_OK, err);
  char path[160];
  snprintf(path, sizeof path, "/_fake/alibaba/instances/%s", in.id);
  json_t *j = NULL;
  TW_CHECK_INT(raw("GET", path, NULL, &j), 200);
  json_t *disk = json_object_get(j, "SystemDisk");
  TW_CHECK_INT(json_integer_value(json_object_get(disk, "Size")), 100);
  TW_CHECK_STR(json_string_value(json_object_get(disk, "Category")),
               "cloud_essd");
  TW_CHECK_STR(json_string_value(json_object_get(j, "RamRoleName")),
               "tradewind-node");
  TW_CHECK_STR(json_string_value(json_object_get(j, "ImageIdAsLaunched")),
               "ubuntu_24_04_x64_20G_alibase_20250722.vhd");
  json_decref(j);
  /* what ECS refuses, the fake refuses */
  l.client_token = "tok-ali-m2";
  l.disk_size_gb = 10;
  tw_err_clear(&err);
  TW_CHECK(tw_provider_launch(p, &l, &in, &err) == TW_E_INVALID, "%s", err.msg);
  TW_CHECK_STR(err.detail, "InvalidSystemDiskSize.ValueNotSupported");
  l.client_token = "tok-ali-m3";
  l.disk_size_gb = 0;
  l.disk_type = "gp3";
  tw_err_clear(&err);
  TW_CHECK(tw_provider_launch(p, &l, &in, &err) == TW_E_INVALID, "%s", err.msg);
  TW_CHECK_STR(err.detail, "InvalidSystemDiskCategory.ValueNotSupported");
  tw_provider_free(p);
}

static int start(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct fc_opts o;
  fc_opts_init(&o);
  struct tw_err err = {0};
  if (fc_server_start(&o, &srv, &err) || tw_http_new(NULL, &http, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  return 0;
}

static int stop(void **state) {
  (void)state;
  tw_http_free(http);
  fc_server_stop(srv);
  curl_global_cleanup();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(sts_token_from_the_environment, clean),
      cmocka_unit_test_setup(ram_role, clean),
      cmocka_unit_test_setup(assume_role, clean),
      cmocka_unit_test_setup(machine, clean),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
