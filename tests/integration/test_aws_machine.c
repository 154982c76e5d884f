/* test_aws_machine.c - the job's machine on EC2 (providers/aws/aws.c)
 * against an in-process fake EC2 that checks RunInstances' machine
 * parameters as EC2 does (tests/fakecloud/ec2_req.c): the image of the
 * region and architecture, the subnet of the zone, the instance profile,
 * the root volume from the config or the job's disk, and the job's own
 * image. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/clock.h"
#include "broker/base/node.h"
#include "providers/http.h"
#include "providers/provider.h"
#include "providers/registry.h"
#include "tests/fakecloud/fakecloud.h"

static struct fc_server *srv;
static char base[64];
static struct tw_http *http;
static struct tw_provider *prov;

static json_t *instance(const char *id) {
  char url[256];
  snprintf(url, sizeof url, "%s/_fake/ec2/instances/%s", base, id);
  struct tw_http_request req = {.method = "GET", .url = url, .max_attempts = 1};
  struct tw_http_response r;
  struct tw_err err = {0};
  tw_http_response_init(&r);
  json_t *j = NULL;
  if (tw_http_do(http, &req, &r, &err) == TW_OK && r.status == 200)
    j = json_loadb(r.body.data, r.body.len, 0, NULL);
  tw_http_response_release(&r);
  TW_CHECK(j != NULL, "instance %s", id);
  return j;
}

static const char *js(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static struct tw_offer offer(const char *zone, const char *type,
                             enum tw_arch arch) {
  struct tw_offer o;
  memset(&o, 0, sizeof o);
  snprintf(o.provider, sizeof o.provider, "aws");
  snprintf(o.account, sizeof o.account, "aws-m");
  snprintf(o.region, sizeof o.region, "us-east-1");
  snprintf(o.zone, sizeof o.zone, "%s", zone);
  snprintf(o.instance_type, sizeof o.instance_type, "%s", type);
  o.arch = arch;
  o.market = TW_MARKET_ON_DEMAND;
  return o;
}

static enum tw_rc launch(struct tw_launch *l, const char *tok,
                         struct tw_instance *out, struct tw_err *err) {
  l->client_token = tok;
  l->job_id = "j-machine";
  l->attempt_id = tok;
  l->tenant = "t";
  return tw_provider_launch(prov, l, out, err);
}

static void image_subnet_profile_disk(void **state) {
  (void)state;
  struct tw_offer x86 = offer("us-east-1a", "m5.large", TW_ARCH_X86_64);
  struct tw_offer arm = offer("us-east-1b", "m6g.large", TW_ARCH_ARM64);
  struct tw_instance in;
  struct tw_err err = {0};
  struct tw_launch l = {.offer = &x86};
  TW_CHECK_RC(launch(&l, "tok-x86", &in, &err), TW_OK, err);
  json_t *j = instance(in.id);
  TW_CHECK_STR(js(j, "image_id"), "ami-0aaaaaaaaaaaaaaaa");
  TW_CHECK_STR(js(j, "subnet_id"), "subnet-0123456789abcdef0");
  TW_CHECK_STR(js(j, "iam_instance_profile"),
               "arn:aws:iam::123456789012:instance-profile/tw-node");
  TW_CHECK_STR(js(j, "root_device"), "/dev/xvda");
  TW_CHECK_INT(json_integer_value(json_object_get(j, "root_size_gb")), 100);
  TW_CHECK_STR(js(j, "root_type"), "gp3");
  TW_CHECK_INT(json_integer_value(json_object_get(j, "security_groups")), 2);
  json_decref(j);

  /* arm64 in another zone: the arm image, the region's subnet; the
   * job's disk wins over the config's */
  l = (struct tw_launch){
      .offer = &arm, .disk_size_gb = 500, .disk_type = "io2"};
  tw_err_clear(&err);
  TW_CHECK_RC(launch(&l, "tok-arm", &in, &err), TW_OK, err);
  j = instance(in.id);
  TW_CHECK_STR(js(j, "image_id"), "ami-0bbbbbbbbbbbbbbbb");
  TW_CHECK_STR(js(j, "subnet_id"), "subnet-11111111");
  TW_CHECK_INT(json_integer_value(json_object_get(j, "root_size_gb")), 500);
  TW_CHECK_STR(js(j, "root_type"), "io2");
  json_decref(j);

  /* a disk tier word (SkyPilot's disk_tier) as EBS's volume type */
  static const char *const tier[][2] = {
      {"low", "standard"}, {"medium", "gp3"}, {"ultra", "io2"}};
  for (size_t t = 0; t < 3; t++) {
    char tok[32];
    snprintf(tok, sizeof tok, "tok-tier-%zu", t);
    l = (struct tw_launch){.offer = &x86, .disk_type = tier[t][0]};
    tw_err_clear(&err);
    TW_CHECK_RC(launch(&l, tok, &in, &err), TW_OK, err);
    j = instance(in.id);
    TW_CHECK_STR(js(j, "root_type"), tier[t][1]);
    json_decref(j);
  }

  /* the job's own image */
  l = (struct tw_launch){.offer = &x86, .image = "ami-0cccccccccccccccc"};
  tw_err_clear(&err);
  TW_CHECK_RC(launch(&l, "tok-img", &in, &err), TW_OK, err);
  j = instance(in.id);
  TW_CHECK_STR(js(j, "image_id"), "ami-0cccccccccccccccc");
  json_decref(j);

  /* what EC2 refuses, the fake refuses: a disk type EC2 lacks, a size
   * outside the type's range */
  l = (struct tw_launch){.offer = &x86, .disk_type = "premium"};
  tw_err_clear(&err);
  TW_CHECK(launch(&l, "tok-bad1", &in, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "volumeType"), "%s", err.msg);
  l = (struct tw_launch){
      .offer = &x86, .disk_size_gb = 20000, .disk_type = "gp3"};
  tw_err_clear(&err);
  TW_CHECK(launch(&l, "tok-bad2", &in, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "outside the range 1-16384"), "%s", err.msg);
}

/* the job's ports: opened by the configured groups covering them */
static void ports(void **state) {
  (void)state;
  struct tw_offer x86 = offer("us-east-1a", "m5.large", TW_ARCH_X86_64);
  const struct tw_port_range pr[] = {{22, 22}, {8080, 8090}};
  struct tw_launch l = {.offer = &x86, .ports = pr, .n_ports = 2};
  struct tw_instance in;
  struct tw_err err = {0};
  TW_CHECK_RC(launch(&l, "tok-ports", &in, &err), TW_OK, err);
  json_t *j = instance(in.id);
  /* the two configured groups (sg-22222222 among them) and sg-33333333 */
  TW_CHECK_INT(json_integer_value(json_object_get(j, "security_groups")), 3);
  json_decref(j);
  const struct tw_port_range far[] = {{9000, 9000}};
  l = (struct tw_launch){.offer = &x86, .ports = far, .n_ports = 1};
  tw_err_clear(&err);
  TW_CHECK(launch(&l, "tok-ports2", &in, &err) == TW_E_INVALID);
  TW_CHECK_STR(err.field, "ports");
  TW_CHECK(strstr(err.msg, "opens port 9000-9000"), "%s", err.msg);
}

static void config_errors(void **state) {
  (void)state;
  const struct {
    const char *extra, *field, *frag;
  } bad[] = {
      {"images: {us-east-1: {riscv: ami-1}}\n", "images", "x86_64 or arm64"},
      {"subnets: {us-east-1a: net-1}\n", "subnets", "subnet id"},
      {"disk_size_gb: -1\n", "disk_size_gb", ""},
      {"port_security_groups: {\"9-1\": sg-1}\n", "port_security_groups",
       "expected a port"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *doc = tw_asprintf("name: x\ntype: aws\nregions: [us-east-1]\n"
                            "access_key_env: TW_M_AK\nsecret_key_env: "
                            "TW_M_SK\n%s",
                            bad[i].extra);
    struct tw_node *cfg = NULL;
    struct tw_err err = {0};
    struct tw_provider *p = NULL;
    TW_CHECK_RC(tw_node_parse_yaml(doc, strlen(doc), &cfg, &err), TW_OK, err);
    TW_CHECK(tw_provider_new(tw_adapters, cfg, NULL, &p, &err) == TW_E_INVALID,
             "%s", bad[i].extra);
    TW_CHECK_STR(err.field, bad[i].field);
    TW_CHECK(strstr(err.msg, bad[i].frag), "%s", err.msg);
    tw_node_free(cfg);
    free(doc);
  }
}

static int start(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct fc_opts o;
  fc_opts_init(&o);
  o.pending_ms = 0;
  struct tw_err err = {0};
  if (fc_server_start(&o, &srv, &err) || tw_http_new(NULL, &http, &err)) {
    fprintf(stderr, "start: %s\n", err.msg);
    return -1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%u", fc_server_port(srv));
  setenv("TW_M_AK", FC_DEFAULT_ACCESS_KEY, 1);
  setenv("TW_M_SK", FC_DEFAULT_SECRET_KEY, 1);
  char *doc = tw_asprintf(
      "name: aws-m\ntype: aws\nendpoint: %s\nregions: [us-east-1]\n"
      "access_key_env: TW_M_AK\nsecret_key_env: TW_M_SK\nprice_list: false\n"
      "backoff_base_ms: 1\nbackoff_cap_ms: 5\nmax_attempts: 1\n"
      "images:\n  us-east-1: {x86_64: ami-0aaaaaaaaaaaaaaaa, arm64: "
      "ami-0bbbbbbbbbbbbbbbb}\n  \"*\": ami-0dddddddddddddddd\n"
      "subnets: {us-east-1a: subnet-0123456789abcdef0, us-east-1: "
      "subnet-11111111}\n"
      "security_group_ids: [sg-0123456789abcdef0, sg-22222222]\n"
      "instance_profile: arn:aws:iam::123456789012:instance-profile/tw-node\n"
      "disk_size_gb: 100\ndisk_type: gp3\n"
      "port_security_groups: {\"22\": sg-22222222, \"8000-8100\": "
      "sg-33333333}\n",
      base);
  struct tw_node *cfg = NULL;
  int rc = tw_node_parse_yaml(doc, strlen(doc), &cfg, &err) ||
           tw_provider_new(tw_adapters, cfg, NULL, &prov, &err);
  if (rc)
    fprintf(stderr, "provider: %s\n", err.msg);
  tw_node_free(cfg);
  free(doc);
  return rc ? -1 : 0;
}

static int stop(void **state) {
  (void)state;
  tw_provider_free(prov);
  tw_http_free(http);
  fc_server_stop(srv);
  curl_global_cleanup();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(image_subnet_profile_disk),
      cmocka_unit_test(ports),
      cmocka_unit_test(config_errors),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
