/* test_azure_fake_req.c - the Azure fake's pure parts: path routing, VM
 * body validation with Azure's codes, tag rules, OData filters, token
 * requests and the catalog. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/azure_catalog.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/fakecloud/params.h"

static void paths(void **state) {
  struct fc_az_path p;
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourcegroups/RG1/providers/"
                            "microsoft.compute/virtualmachines/vm%2D1",
                            &p));
  TW_CHECK(p.route == FC_AZ_VM);
  TW_CHECK_STR(p.subscription, "s1");
  TW_CHECK_STR(p.resource_group, "RG1");
  TW_CHECK_STR(p.name, "vm-1");
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourceGroups/rg/providers/"
                            "Microsoft.Compute/virtualMachines/vm/instanceView",
                            &p) &&
           p.route == FC_AZ_VM_VIEW);
  TW_CHECK(
      fc_az_route_path("/subscriptions/s1/resourceGroups/rg/resources", &p) &&
      p.route == FC_AZ_RESOURCES);
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourceGroups/rg", &p) &&
           p.route == FC_AZ_RG);
  TW_CHECK(fc_az_route_path(
               "/subscriptions/s1/providers/Microsoft.Compute/skus", &p) &&
           p.route == FC_AZ_SKUS);
  TW_CHECK(fc_az_route_path("/subscriptions/s1/providers/Microsoft.Compute/"
                            "locations/eastus/operations/abc",
                            &p) &&
           p.route == FC_AZ_OPERATION && !strcmp(p.op_id, "abc") &&
           !strcmp(p.location, "eastus"));
  TW_CHECK(
      fc_az_route_path("/subscriptions/s1/providers/Microsoft.Network/x", &p) &&
      p.route == FC_AZ_ARM_OTHER);
  TW_CHECK(fc_az_route_path("/t1/oauth2/v2.0/token", &p) &&
           p.route == FC_AZ_TOKEN && !strcmp(p.tenant, "t1"));
  TW_CHECK(fc_az_route_path("/t1/v2.0/.well-known/openid-configuration", &p) &&
           p.route == FC_AZ_OPENID);
  TW_CHECK(fc_az_route_path("/metadata/scheduledevents", &p) &&
           p.route == FC_AZ_EVENTS);
  TW_CHECK(fc_az_route_path("/api/retail/prices", &p) &&
           p.route == FC_AZ_PRICES);
  /* The launch path's extra routes: v1 token, subscriptions, locations,
   * groups, sizes and power actions. */
  TW_CHECK(fc_az_route_path("/t1/oauth2/token", &p) &&
           p.route == FC_AZ_TOKEN_V1 && !strcmp(p.tenant, "t1"));
  TW_CHECK(fc_az_route_path("/subscriptions", &p) && p.route == FC_AZ_SUB_LIST);
  TW_CHECK(fc_az_route_path("/subscriptions/s1", &p) &&
           p.route == FC_AZ_SUB_GET && !strcmp(p.subscription, "s1"));
  TW_CHECK(fc_az_route_path("/subscriptions/s1/locations", &p) &&
           p.route == FC_AZ_LOCATIONS);
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourcegroups", &p) &&
           p.route == FC_AZ_RG_LIST);
  TW_CHECK(fc_az_route_path("/subscriptions/s1/providers/Microsoft.Compute/"
                            "locations/eastus/vmSizes",
                            &p) &&
           p.route == FC_AZ_VM_SIZES && !strcmp(p.location, "eastus"));
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourceGroups/rg/providers/"
                            "Microsoft.Compute/virtualMachines/vm/poweroff",
                            &p) &&
           p.route == FC_AZ_VM_ACTION && !strcmp(p.vm_action, "powerOff") &&
           !strcmp(p.name, "vm") && !strcmp(p.resource_group, "rg"));
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourceGroups/rg/providers/"
                            "Microsoft.Compute/virtualMachines/vm/deallocate",
                            &p) &&
           p.route == FC_AZ_VM_ACTION && !strcmp(p.vm_action, "deallocate"));
  TW_CHECK(fc_az_route_path("/subscriptions/s1/resourceGroups/rg/providers/"
                            "Microsoft.Compute/virtualMachines/vm/reimage",
                            &p) &&
           p.route == FC_AZ_ARM_OTHER);
  /* Not ours: EC2's and Alibaba's "/", the control API. */
  TW_CHECK(!fc_az_route_path("/", &p));
  TW_CHECK(!fc_az_route_path("/_fake/health", &p));
  TW_CHECK(!fc_az_route_path("/x/oauth2/v1/token", &p));
  /* A bad escape under /subscriptions is still ARM's to refuse. */
  TW_CHECK(fc_az_route_path("/subscriptions/%zz/resourceGroups", &p) &&
           p.route == FC_AZ_ARM_OTHER);

  TW_CHECK(fc_az_valid_vm_name("tw-0123abc"));
  TW_CHECK(fc_az_valid_vm_name("a_"));
  TW_CHECK(!fc_az_valid_vm_name("-a"));
  TW_CHECK(!fc_az_valid_vm_name("a-"));
  TW_CHECK(!fc_az_valid_vm_name("a b"));
  char long_name[70];
  memset(long_name, 'a', 65);
  long_name[65] = '\0';
  TW_CHECK(!fc_az_valid_vm_name(long_name));
  TW_CHECK(fc_az_valid_rg_name("my.rg(1)"));
  TW_CHECK(!fc_az_valid_rg_name("rg."));
}

#define VM_HEAD "{\"location\":\"East US\",\"properties\":{"
#define SIZE "\"hardwareProfile\":{\"vmSize\":\"Standard_D2s_v5\"},"
#define IMAGE                                                                  \
  "\"storageProfile\":{\"imageReference\":{\"publisher\":\"p\",\"offer\":"     \
  "\"o\",\"sku\":\"s\",\"version\":\"latest\"}},"
#define OS                                                                     \
  "\"osProfile\":{\"adminUsername\":\"tw\",\"adminPassword\":\"Pw-1234567\","  \
  "\"customData\":\"aGk=\"},"
#define NET                                                                    \
  "\"networkProfile\":{\"networkInterfaces\":[{\"id\":\"/subscriptions/s/"     \
  "resourceGroups/r/providers/Microsoft.Network/networkInterfaces/n\"}]}"

/* body must be refused with status and code (and target when given). */
static void refused(const char *body, int status, const char *code,
                    const char *target) {
  struct fc_az_vm_req r;
  struct fc_az_error e;
  memset(&e, 0, sizeof e);
  bool ok = fc_az_parse_vm_put(body, strlen(body), "vm1", &r, &e);
  fc_az_vm_req_release(&r);
  TW_CHECK(!ok);
  if (ok || e.status != status || strcmp(e.code, code) ||
      (target && strcmp(e.target, target)))
    fprintf(stderr, "  body %.80s...: %d %s (%s), want %d %s (%s)\n", body,
            e.status, e.code, e.target, status, code, target ? target : "");
  TW_CHECK(e.status == status && !strcmp(e.code, code));
  if (target)
    TW_CHECK_STR(e.target, target);
}

static void vm_bodies(void **state) {
  struct fc_az_vm_req r;
  struct fc_az_error e;
  const char *good = VM_HEAD SIZE IMAGE OS NET
      ",\"priority\":\"spot\",\"billingProfile\":{\"maxPrice\":0.01234}}}";
  TW_CHECK(fc_az_parse_vm_put(good, strlen(good), "vm1", &r, &e));
  TW_CHECK_STR(r.location, "eastus");
  TW_CHECK_STR(r.priority, "Spot");
  TW_CHECK_STR(r.eviction_policy, "Deallocate"); /* Azure's default */
  TW_CHECK(r.has_max_price && r.max_price_uusd == 12340);
  TW_CHECK_STR(r.computer_name, "vm1");
  /* Secrets are not kept for echoing back. */
  TW_CHECK(!json_object_get(r.os_profile, "adminPassword"));
  TW_CHECK(!json_object_get(r.os_profile, "customData"));
  fc_az_vm_req_release(&r);

  refused("{", 400, "InvalidRequestContent", NULL);
  refused("{\"properties\":{}}", 400, "LocationRequired", NULL);
  refused(VM_HEAD "}}", 400, "InvalidParameter", "hardwareProfile.vmSize");
  refused(VM_HEAD SIZE "\"x\":1}}", 400, "InvalidParameter", "storageProfile");
  refused(VM_HEAD SIZE "\"storageProfile\":{}}}", 400, "InvalidParameter",
          "imageReference");
  refused(VM_HEAD SIZE IMAGE NET "}}", 400, "InvalidParameter", "osProfile");
  refused(
      VM_HEAD SIZE IMAGE
      "\"osProfile\":{\"adminUsername\":\"root\",\"adminPassword\":\"x\"}," NET
      "}}",
      400, "InvalidParameter", "adminUsername");
  refused(VM_HEAD SIZE IMAGE "\"osProfile\":{\"adminUsername\":\"tw\"}," NET
                             "}}",
          400, "InvalidParameter", "adminPassword");
  refused(VM_HEAD SIZE IMAGE
          "\"osProfile\":{\"adminUsername\":\"tw\",\"linuxConfiguration\":{"
          "\"disablePasswordAuthentication\":true}}," NET "}}",
          400, "InvalidParameter", "linuxConfiguration.ssh.publicKeys");
  refused(VM_HEAD SIZE IMAGE
          "\"osProfile\":{\"adminUsername\":\"tw\",\"adminPassword\":\"x\","
          "\"customData\":\"not base64!\"}," NET "}}",
          400, "InvalidParameter", "customData");
  refused(VM_HEAD SIZE IMAGE OS "\"networkProfile\":{}}}", 400,
          "InvalidParameter", "networkProfile.networkInterfaces");
  refused(VM_HEAD SIZE IMAGE OS
          "\"networkProfile\":{\"networkInterfaceConfigurations\":[{\"name\":"
          "\"n\"}]}}}",
          400, "InvalidParameter", "networkProfile.networkApiVersion");
  refused(VM_HEAD SIZE IMAGE OS NET ",\"priority\":\"Cheap\"}}", 400,
          "InvalidParameter", "priority");
  refused(VM_HEAD SIZE IMAGE OS NET ",\"evictionPolicy\":\"Delete\"}}", 400,
          "InvalidParameter", "evictionPolicy");
  refused(VM_HEAD SIZE IMAGE OS NET ",\"billingProfile\":{\"maxPrice\":-1}}}",
          400, "InvalidParameter", "billingProfile");
  refused(VM_HEAD SIZE IMAGE OS NET
          ",\"priority\":\"Spot\",\"billingProfile\":{\"maxPrice\":0.123456}}}",
          400, "InvalidParameter", "billingProfile.maxPrice");
  refused(VM_HEAD SIZE IMAGE OS NET
          ",\"priority\":\"Spot\",\"billingProfile\":{\"maxPrice\":-2}}}",
          400, "InvalidParameter", "billingProfile.maxPrice");
  refused("{\"location\":\"eastus\",\"zones\":[\"1\",\"2\"],\"properties\":{}}",
          400, "InvalidParameter", "zones");
  refused("{\"location\":\"eastus\",\"tags\":{\"a/b\":\"x\"}}", 400,
          "InvalidTagNameCharacters", NULL);
  refused("{\"location\":\"eastus\",\"tags\":{\"Azure-x\":\"x\"}}", 400,
          "InvalidTagName", NULL);
  refused("{\"location\":\"eastus\",\"tags\":{\"Job\":\"x\",\"job\":\"y\"}}",
          400, "InvalidTagName", NULL);
  refused("{\"location\":\"eastus\",\"tags\":{\"a\":1}}", 400,
          "InvalidRequestContent", NULL);

  /* tradewind:job is a valid tag name: ':' is not reserved. */
  json_t *t =
      json_pack("{s:s,s:s}", "tradewind:job", "j", "tradewind:token", "a/b?c");
  TW_CHECK(fc_az_valid_tags(t, &e));
  json_decref(t);
  t = json_object();
  char k[16];
  for (int i = 0; i < 51; i++) {
    snprintf(k, sizeof k, "k%d", i);
    json_object_set_new(t, k, json_string("v"));
  }
  TW_CHECK(!fc_az_valid_tags(t, &e) && !strcmp(e.code, "InvalidTagCount"));
  json_decref(t);
}

struct item {
  const char *region, *sku, *meter;
};

static const char *get(void *ctx, const char *f) {
  const struct item *it = ctx;
  if (!strcasecmp(f, "armRegionName"))
    return it->region;
  if (!strcasecmp(f, "armSkuName"))
    return it->sku;
  if (!strcasecmp(f, "meterName"))
    return it->meter;
  return NULL;
}

static void odata(void **state) {
  struct fc_odata *f = NULL;
  struct fc_az_error e;
  struct item a = {"eastus", "Standard_D2s_v5", "D2s v5 Spot"};
  struct item b = {"westus2", "Standard_D2s_v5", "D2s v5"};
  TW_CHECK(fc_odata_parse("armRegionName eq 'eastus' and (armSkuName eq "
                          "'Standard_D2s_v5' or armSkuName eq 'x')",
                          &f, &e));
  TW_CHECK(fc_odata_eval(f, get, &a) && !fc_odata_eval(f, get, &b));
  fc_odata_free(f);
  TW_CHECK(fc_odata_parse("not contains(meterName, 'Spot') AND "
                          "startswith(armSkuName,'Standard_')",
                          &f, &e));
  TW_CHECK(!fc_odata_eval(f, get, &a) && fc_odata_eval(f, get, &b));
  fc_odata_free(f);
  /* Quotes double inside literals; unknown fields compare false. */
  struct item q = {"it's", "", ""};
  TW_CHECK(fc_odata_parse("armRegionName eq 'it''s' or nosuch eq 'x'", &f, &e));
  TW_CHECK(fc_odata_eval(f, get, &q));
  fc_odata_free(f);
  TW_CHECK(fc_odata_parse("nosuch ne 'x'", &f, &e));
  TW_CHECK(!fc_odata_eval(f, get, &a));
  fc_odata_free(f);
  const char *bad[] = {"",
                       "armRegionName",
                       "armRegionName eq",
                       "armRegionName eq 'x",
                       "(armRegionName eq 'x'",
                       "armRegionName eq 'x' and",
                       "contains(armRegionName)",
                       "armRegionName gt 'x'",
                       "armRegionName eq 'x' extra"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    f = NULL;
    TW_CHECK(!fc_odata_parse(bad[i], &f, &e) && !f && e.status == 400 &&
             !strcmp(e.code, "InvalidFilter"));
  }
  /* Deep nesting is bounded, not a stack overflow. */
  struct tw_buf deep;
  tw_buf_init(&deep);
  for (int i = 0; i < 2000; i++)
    tw_buf_addc(&deep, '(');
  TW_CHECK(!fc_odata_parse(deep.data, &f, &e));
  tw_buf_release(&deep);
}

static void token_requests(void **state) {
  const struct fc_az_client c[] = {{"client-a", "secret-a"}};
  static const struct {
    const char *form;
    int status;
    const char *code;
  } t[] = {
      {"grant_type=client_credentials&client_id=client-a&client_secret="
       "secret-a&scope=https%3A%2F%2Fmanagement.azure.com%2F.default",
       0, NULL},
      {"client_id=client-a", 400, "invalid_request"},
      {"grant_type=password&client_id=client-a", 400, "unsupported_grant_type"},
      {"grant_type=client_credentials&client_id=nobody&client_secret=x", 400,
       "unauthorized_client"},
      {"grant_type=client_credentials&client_id=client-a", 401,
       "invalid_client"},
      {"grant_type=client_credentials&client_id=client-a&client_secret=bad&"
       "scope=x%2F.default",
       401, "invalid_client"},
      {"grant_type=client_credentials&client_id=client-a&client_secret="
       "secret-a",
       400, "invalid_request"},
      {"grant_type=client_credentials&client_id=client-a&client_secret="
       "secret-a&scope=https%3A%2F%2Fmanagement.azure.com%2Fuser_impersonation",
       400, "invalid_scope"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct fc_params p;
    struct tw_err err = {0};
    struct fc_az_error e;
    memset(&e, 0, sizeof e);
    fc_params_init(&p);
    TW_CHECK(fc_params_parse(&p, t[i].form, strlen(t[i].form), &err) == TW_OK);
    bool ok = fc_az_check_token_req(&p, "tenant", c, 1, &e);
    if (!t[i].code) {
      TW_CHECK(ok);
    } else {
      TW_CHECK(!ok && e.status == t[i].status && !strcmp(e.code, t[i].code));
      TW_CHECK(!strncmp(e.message, "AADSTS", 6));
    }
    fc_params_release(&p);
  }
}

/* The v1 endpoint takes `resource` where v2 takes `scope`. */
static void token_requests_v1(void **state) {
  const struct fc_az_client c[] = {{"client-a", "secret-a"}};
  const char *ok = "grant_type=client_credentials&client_id=client-a&"
                   "client_secret=secret-a&resource=https%3A%2F%2F"
                   "management.azure.com%2F";
  const char *none = "grant_type=client_credentials&client_id=client-a&"
                     "client_secret=secret-a";
  struct fc_params p;
  struct tw_err err = {0};
  struct fc_az_error e;
  memset(&e, 0, sizeof e);
  fc_params_init(&p);
  TW_CHECK(fc_params_parse(&p, ok, strlen(ok), &err) == TW_OK);
  TW_CHECK(fc_az_check_token_req_v1(&p, "tenant", c, 1, &e));
  TW_CHECK(!fc_az_check_token_req(&p, "tenant", c, 1, &e)); /* v2: no scope */
  fc_params_release(&p);
  fc_params_init(&p);
  TW_CHECK(fc_params_parse(&p, none, strlen(none), &err) == TW_OK);
  TW_CHECK(!fc_az_check_token_req_v1(&p, "tenant", c, 1, &e) &&
           !strcmp(e.code, "invalid_request") &&
           strstr(e.message, "'resource'"));
  fc_params_release(&p);
}

static void catalog(void **state) {
  struct fc_az_catalog *c = NULL;
  struct tw_err err = {0};
  TW_CHECK(fc_az_catalog_load(NULL, &c, &err) == TW_OK && c);
  if (!c)
    return;
  TW_CHECK(c->n_regions == 3 && c->n_sizes == 10 && c->n_prices == 30);
  const struct fc_az_price *p =
      fc_az_catalog_price(c, "standard_d2s_v5", "EastUS");
  TW_CHECK(p && p->on_demand_uusd == 96000 && p->spot_uusd == 20362);
  const struct fc_az_size *s = fc_az_catalog_size(c, "Standard_D2ps_v5");
  TW_CHECK(s && !strcmp(s->arch, "Arm64") && s->vcpus == 2);
  fc_az_catalog_free(c);
  /* A file without an azure section: not found (the module then uses
   * the built-in one); a bad section names its path. */
  TW_CHECK(fc_az_catalog_parse("{\"aws\":{}}", 10, &c, &err) == TW_E_NOTFOUND);
  const char *bad = "{\"azure\":{\"regions\":[],\"sizes\":[],\"prices\":[{"
                    "\"size\":\"x\",\"region\":\"y\",\"on_demand\":\"1\"}]}}";
  TW_CHECK(fc_az_catalog_parse(bad, strlen(bad), &c, &err) == TW_E_INVALID);
  TW_CHECK(strstr(err.msg, "/azure/prices/0") != NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(paths),
      cmocka_unit_test(vm_bodies),
      cmocka_unit_test(odata),
      cmocka_unit_test(token_requests),
      cmocka_unit_test(token_requests_v1),
      cmocka_unit_test(catalog),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
