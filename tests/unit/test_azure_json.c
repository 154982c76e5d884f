/* test_azure_json.c - the Azure answer parsers and the error table, on
 * documents shaped as the REST references show them (written here, not
 * recorded: test_azure_fixtures.c runs the recorded ones). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/azure/arm_json.h"
#include "providers/azure/azure.h"

#define P(s) s, strlen(s)

static void error_classes(void **state) {
  static const struct {
    const char *code, *msg;
    long status;
    enum tw_rc want;
  } t[] = {
      {"SkuNotAvailable", "The requested size is currently not available", 409,
       TW_E_CAPACITY},
      {"AllocationFailed", "Allocation failed.", 0, TW_E_CAPACITY},
      {"ZonalAllocationFailed", "Allocation failed.", 0, TW_E_CAPACITY},
      {"OverconstrainedAllocationRequest", "too restrictive", 0, TW_E_CAPACITY},
      {"OverconstrainedZonalAllocationRequest", "", 0, TW_E_CAPACITY},
      {"OperationNotAllowed",
       "Operation could not be completed as it results in exceeding approved "
       "standardDSv5Family Cores quota.",
       409, TW_E_QUOTA},
      {"OperationNotAllowed", "The max price is lower than the current price",
       409, TW_E_INVALID},
      {"QuotaExceeded", "", 409, TW_E_QUOTA},
      {"LowPriorityCoreQuotaExceeded", "", 409, TW_E_QUOTA},
      {"PublicIPCountLimitReached", "", 400, TW_E_QUOTA},
      {"TooManyRequests", "throttled", 429, TW_E_RETRYABLE},
      {"SomethingNew", "", 429, TW_E_RETRYABLE},
      {"SomethingNew", "", 503, TW_E_RETRYABLE},
      {"InternalServerError", "", 500, TW_E_RETRYABLE},
      {"ExpiredAuthenticationToken", "", 401, TW_E_AUTH},
      {"InvalidAuthenticationToken", "", 401, TW_E_AUTH},
      {"invalid_client", "AADSTS7000215", 401, TW_E_AUTH},
      {"AuthorizationFailed", "", 403, TW_E_AUTH},
      {"ResourceNotFound", "", 404, TW_E_NOTFOUND},
      {"InvalidParameter", "", 400, TW_E_INVALID},
      {NULL, NULL, 418, TW_E_INVALID},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    enum tw_rc rc = tw_arm_error_class(t[i].code, t[i].msg, t[i].status);
    if (rc != t[i].want)
      fprintf(stderr, "class of %s/%ld: %s\n", t[i].code ? t[i].code : "-",
              t[i].status, tw_rc_str(rc));
    TW_CHECK(rc == t[i].want);
  }

  /* The three error shapes. */
  struct tw_arm_error e;
  TW_CHECK(tw_arm_parse_error(
      P("{\"error\":{\"code\":\"SkuNotAvailable\",\"message\":\"The requested "
        "size for resource 'x' is currently not available\",\"target\":"
        "\"vmSize\"}}"),
      &e));
  TW_CHECK_STR(e.code, "SkuNotAvailable");
  TW_CHECK_STR(e.target, "vmSize");
  TW_CHECK(tw_arm_parse_error(
      P("{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: "
        "Invalid client secret provided.\",\"error_codes\":[7000215]}"),
      &e));
  TW_CHECK_STR(e.code, "invalid_client");
  TW_CHECK(strstr(e.message, "AADSTS7000215") != NULL);
  TW_CHECK(
      tw_arm_parse_error(P("{\"code\":\"Conflict\",\"message\":\"m\"}"), &e));
  TW_CHECK_STR(e.code, "Conflict");
  /* A generic failure hiding a capacity error among its details. */
  TW_CHECK(tw_arm_parse_error(
      P("{\"error\":{\"code\":\"DeploymentFailed\",\"message\":\"At least one "
        "resource deployment operation failed.\",\"details\":[{\"code\":"
        "\"Conflict\",\"message\":\"x\"},{\"code\":\"ZonalAllocationFailed\","
        "\"message\":\"We do not have sufficient capacity\"}]}}"),
      &e));
  TW_CHECK_STR(e.code, "ZonalAllocationFailed");
  TW_CHECK(!tw_arm_parse_error(P("{\"value\":[]}"), &e));
  TW_CHECK(!tw_arm_parse_error(P("<html>502 Bad Gateway</html>"), &e));
  TW_CHECK(!tw_arm_parse_error(NULL, 0, &e));

  struct tw_err err = {0};
  enum tw_rc rc = tw_arm_response_error(
      "azure create VM", 409,
      P("{\"error\":{\"code\":\"OperationNotAllowed\",\"message\":\"Operation "
        "could not be completed as it results in exceeding approved "
        "LowPriorityCores quota.\"}}"),
      &err);
  TW_CHECK_RC(rc, TW_E_QUOTA, err);
  TW_CHECK_STR(err.detail, "OperationNotAllowed");
  TW_CHECK(strstr(err.msg, "LowPriorityCores") != NULL);
  tw_err_clear(&err);
  rc = tw_arm_response_error("azure get VM", 502, P("<html/>"), &err);
  TW_CHECK_RC(rc, TW_E_RETRYABLE, err);
  TW_CHECK_STR(err.detail, "HTTP 502");
}

static void token_and_openid(void **state) {
  char *tok = NULL, *te = NULL;
  int64_t secs = 0;
  struct tw_err err = {0};
  enum tw_rc rc = tw_arm_parse_token(
      P("{\"token_type\":\"Bearer\",\"expires_in\":3599,\"ext_expires_in\":"
        "3599,\"access_token\":\"eyJ0eXAi.x.y\"}"),
      &tok, &secs, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(tok && !strcmp(tok, "eyJ0eXAi.x.y"));
  TW_CHECK(secs == 3599);
  free(tok);
  tok = NULL;
  rc = tw_arm_parse_token(P("{\"token_type\":\"pop\",\"expires_in\":10,"
                            "\"access_token\":\"a\"}"),
                          &tok, &secs, &err);
  TW_CHECK(rc == TW_E_INVALID && !tok);
  tw_err_clear(&err);
  rc = tw_arm_parse_token(P("{\"access_token\":\"a\",\"expires_in\":\"x\"}"),
                          &tok, &secs, &err);
  TW_CHECK(rc == TW_E_INVALID && !tok);
  tw_err_clear(&err);
  rc = tw_arm_parse_token(P("{\"expires_in\":5}"), &tok, &secs, &err);
  TW_CHECK(rc == TW_E_INVALID && !tok);

  tw_err_clear(&err);
  rc = tw_arm_parse_openid(
      P("{\"token_endpoint\":\"https://login.example/t/oauth2/v2.0/token\","
        "\"issuer\":\"https://login.example/t/v2.0\"}"),
      &te, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(te && !strcmp(te, "https://login.example/t/oauth2/v2.0/token"));
  free(te);
  te = NULL;
  rc = tw_arm_parse_openid(P("{\"token_endpoint\":\"ftp://x\"}"), &te, &err);
  TW_CHECK(rc == TW_E_INVALID && !te);
}

static const char vm_creating[] =
    "{\"name\":\"tw-0123\",\"id\":\"/subscriptions/s/resourceGroups/rg/"
    "providers/Microsoft.Compute/virtualMachines/tw-0123\",\"type\":"
    "\"Microsoft.Compute/virtualMachines\",\"location\":\"eastus\",\"zones\":"
    "[\"2\"],\"tags\":{\"TradeWind:Job\":\"job-1\",\"tradewind:attempt\":"
    "\"att-1\",\"tradewind:tenant\":\"acme\",\"tradewind:token\":\"tok-1\"},"
    "\"properties\":{\"vmId\":\"6f1c\",\"hardwareProfile\":{\"vmSize\":"
    "\"Standard_D2s_v5\"},\"priority\":\"Spot\",\"evictionPolicy\":\"Delete\","
    "\"billingProfile\":{\"maxPrice\":0.02345},\"provisioningState\":"
    "\"Creating\",\"timeCreated\":\"2024-05-01T12:00:00.5+00:00\"}}";

static void vms(void **state) {
  struct tw_arm_vm vm;
  struct tw_instance in;
  struct tw_err err = {0};
  enum tw_rc rc = tw_arm_parse_vm(P(vm_creating), &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.name, "tw-0123");
  TW_CHECK_STR(vm.zone, "2");
  TW_CHECK(vm.max_price_uusd == 23450);
  /* Tag names compare case-insensitively, as ARM's do. */
  TW_CHECK_STR(vm.job_id, "job-1");
  TW_CHECK_STR(vm.client_token, "tok-1");
  tw_arm_vm_instance(&vm, &in);
  TW_CHECK(in.state == TW_INST_PENDING);
  TW_CHECK(in.market == TW_MARKET_SPOT);
  TW_CHECK_STR(in.instance_type, "Standard_D2s_v5");
  TW_CHECK_STR(in.region, "eastus");
  TW_CHECK(in.launched_ms == 1714564800500LL);

  /* Power states from the instance view decide. */
  static const struct {
    const char *prov, *power;
    enum tw_instance_state want;
  } st[] = {{"Succeeded", "running", TW_INST_RUNNING},
            {"Updating", "starting", TW_INST_PENDING},
            {"Succeeded", "deallocating", TW_INST_STOPPING},
            {"Succeeded", "deallocated", TW_INST_STOPPED},
            {"Succeeded", "stopped", TW_INST_STOPPED},
            {"Deleting", "running", TW_INST_SHUTTING_DOWN},
            {"Failed", "", TW_INST_STOPPED},
            {"Succeeded", "", TW_INST_UNKNOWN}};
  for (size_t i = 0; i < sizeof st / sizeof *st; i++) {
    snprintf(vm.provisioning_state, sizeof vm.provisioning_state, "%s",
             st[i].prov);
    snprintf(vm.power_state, sizeof vm.power_state, "%s", st[i].power);
    tw_arm_vm_instance(&vm, &in);
    TW_CHECK(in.state == st[i].want);
  }
  TW_CHECK_STR(in.provider_state, "Succeeded");

  /* A failed allocation, as the expanded instance view reports it. */
  tw_err_clear(&err);
  rc = tw_arm_parse_instance_view(
      P("{\"statuses\":[{\"code\":\"ProvisioningState/failed/"
        "AllocationFailed\",\"level\":\"Error\",\"displayStatus\":"
        "\"Provisioning failed\",\"message\":\"Allocation failed. We do not "
        "have sufficient capacity\"}]}"),
      &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.failure_code, "AllocationFailed");
  snprintf(vm.provisioning_state, sizeof vm.provisioning_state, "Failed");
  vm.power_state[0] = '\0';
  tw_arm_vm_instance(&vm, &in);
  TW_CHECK(
      !strncmp(in.state_reason, "AllocationFailed: Allocation failed", 35));

  /* Wrong types and oversized values are refused, naming the member. */
  tw_err_clear(&err);
  rc = tw_arm_parse_vm(P("{\"name\":\"a\",\"properties\":{\"hardwareProfile\":"
                         "{\"vmSize\":7}}}"),
                       &vm, &err);
  TW_CHECK(rc == TW_E_INVALID && strstr(err.msg, "vmSize"));
  char big[400];
  memset(big, 'a', 300);
  big[300] = '\0';
  char doc[600];
  snprintf(doc, sizeof doc, "{\"name\":\"%s\"}", big);
  tw_err_clear(&err);
  TW_CHECK(tw_arm_parse_vm(P(doc), &vm, &err) == TW_E_INVALID);
  tw_err_clear(&err);
  TW_CHECK(tw_arm_parse_vm(P("{\"location\":\"x\"}"), &vm, &err) ==
           TW_E_INVALID);
  tw_err_clear(&err);
  TW_CHECK(tw_arm_parse_vm(P("[1,2]"), &vm, &err) == TW_E_INVALID);
  tw_err_clear(&err);
  TW_CHECK(tw_arm_parse_vm(P("{\"name\":"), &vm, &err) == TW_E_INVALID);

  /* Lists and their next links. */
  struct tw_arm_vm_list l;
  tw_arm_vm_list_init(&l);
  char *next = NULL;
  struct tw_buf b;
  tw_buf_init(&b);
  tw_buf_printf(&b, "{\"value\":[%s,%s],\"nextLink\":\"https://m/x?$skip=2\"}",
                vm_creating, vm_creating);
  tw_err_clear(&err);
  rc = tw_arm_parse_vm_list(b.data, b.len, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 2 && next && !strcmp(next, "https://m/x?$skip=2"));
  free(next);
  tw_buf_release(&b);
  tw_arm_vm_list_release(&l);

  struct tw_arm_resource_list rl;
  tw_arm_resource_list_init(&rl);
  tw_err_clear(&err);
  rc = tw_arm_parse_resources(
      P("{\"value\":[{\"id\":\"/x\",\"name\":\"tw-1\",\"type\":"
        "\"Microsoft.Compute/virtualMachines\",\"location\":\"eastus\","
        "\"tags\":{\"tradewind:job\":\"j\"}},{\"name\":\"tw-1-nic\",\"type\":"
        "\"Microsoft.Network/networkInterfaces\"}]}"),
      &rl, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(rl.n == 2 && !next);
  TW_CHECK_STR(rl.items[1].type, "Microsoft.Network/networkInterfaces");
  tw_arm_resource_list_release(&rl);
}

static void operations(void **state) {
  struct tw_arm_operation op;
  struct tw_err err = {0};
  TW_CHECK(!tw_arm_parse_operation(
      P("{\"startTime\":\"2024-05-01T12:00:00Z\",\"status\":\"InProgress\","
        "\"name\":\"op\"}"),
      &op, &err));
  TW_CHECK(op.status == TW_ARM_OP_IN_PROGRESS);
  TW_CHECK(!tw_arm_parse_operation(P("{\"status\":\"Accepted\"}"), &op, &err));
  TW_CHECK(op.status == TW_ARM_OP_IN_PROGRESS);
  TW_CHECK(!tw_arm_parse_operation(P("{\"status\":\"Succeeded\"}"), &op, &err));
  TW_CHECK(op.status == TW_ARM_OP_SUCCEEDED);
  TW_CHECK(!tw_arm_parse_operation(
      P("{\"status\":\"Failed\",\"error\":{\"code\":"
        "\"OverconstrainedAllocationRequest\",\"message\":\"Allocation "
        "failed.\"}}"),
      &op, &err));
  TW_CHECK(op.status == TW_ARM_OP_FAILED);
  TW_CHECK_STR(op.error.code, "OverconstrainedAllocationRequest");
  TW_CHECK(!tw_arm_parse_operation(P("{\"status\":\"Canceled\"}"), &op, &err));
  TW_CHECK(op.status == TW_ARM_OP_CANCELED && !op.error.code[0]);
  TW_CHECK(tw_arm_parse_operation(P("{\"name\":\"x\"}"), &op, &err) ==
           TW_E_INVALID);
}

static void skus(void **state) {
  struct tw_arm_sku_list l;
  tw_arm_sku_list_init(&l);
  struct tw_err err = {0};
  char *next = NULL;
  enum tw_rc rc = tw_arm_parse_skus(
      P("{\"value\":[{\"resourceType\":\"disks\",\"name\":\"Premium_LRS\"},"
        "{\"resourceType\":\"virtualMachines\",\"name\":\"Standard_NC24ads_"
        "A100_v4\",\"tier\":\"Standard\",\"family\":\"StandardNCADSA100v4Family"
        "\",\"locations\":[\"eastus\"],\"locationInfo\":[{\"location\":"
        "\"eastus\",\"zones\":[\"2\",\"3\",\"1\"]}],\"capabilities\":[{"
        "\"name\":"
        "\"vCPUs\",\"value\":\"24\"},{\"name\":\"MemoryGB\",\"value\":\"220\"},"
        "{\"name\":\"GPUs\",\"value\":\"1\"},{\"name\":\"CpuArchitectureType\","
        "\"value\":\"x64\"},{\"name\":\"LowPriorityCapable\",\"value\":"
        "\"True\"}],\"restrictions\":[{\"type\":\"Zone\",\"values\":["
        "\"eastus\"]"
        ",\"restrictionInfo\":{\"locations\":[\"eastus\"],\"zones\":[\"3\"]},"
        "\"reasonCode\":\"NotAvailableForSubscription\"}]},{\"resourceType\":"
        "\"virtualMachines\",\"name\":\"Standard_B1ls\",\"family\":"
        "\"standardBSFamily\",\"locationInfo\":[{\"location\":\"eastus\"}],"
        "\"capabilities\":[{\"name\":\"vCPUs\",\"value\":\"1\"},{\"name\":"
        "\"MemoryGB\",\"value\":\"0.5\"},{\"name\":\"CpuArchitectureType\","
        "\"value\":\"Arm64\"}],\"restrictions\":[{\"type\":\"Location\","
        "\"values\":[\"eastus\"],\"restrictionInfo\":{\"locations\":["
        "\"eastus\"]"
        "}}]}],\"nextLink\":null}"),
      &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 2 && !next);
  if (l.n == 2) {
    const struct tw_arm_sku *a = &l.items[0], *b = &l.items[1];
    TW_CHECK(a->vcpus == 24 && a->memory_mib == 220 * 1024 && a->gpus == 1);
    TW_CHECK(a->arch == TW_ARCH_X86_64 && a->low_priority && !a->restricted);
    TW_CHECK(a->n_zones == 2 && !strcmp(a->zones[0], "2") &&
             !strcmp(a->zones[1], "1"));
    TW_CHECK(b->memory_mib == 512 && b->arch == TW_ARCH_ARM64);
    TW_CHECK(b->restricted && !b->low_priority);
  }
  tw_arm_sku_list_release(&l);

  char name[32];
  int64_t mib;
  tw_arm_accel("Standard_NC24ads_A100_v4", 1, name, sizeof name, &mib);
  TW_CHECK_STR(name, "A100-80GB");
  TW_CHECK(mib == 81920);
  tw_arm_accel("Standard_ND96asr_v4", 8, name, sizeof name, &mib);
  TW_CHECK_STR(name, "A100");
  tw_arm_accel("Standard_NC4as_T4_v3", 1, name, sizeof name, &mib);
  TW_CHECK_STR(name, "T4");
  tw_arm_accel("Standard_NC40ads_H100_v5", 1, name, sizeof name, &mib);
  TW_CHECK_STR(name, "H100");
  tw_arm_accel("Standard_D2s_v5", 0, name, sizeof name, &mib);
  TW_CHECK_STR(name, "");
}

static void prices(void **state) {
  struct tw_arm_price_list l;
  tw_arm_price_list_init(&l);
  struct tw_err err = {0};
  char *next = NULL;
  enum tw_rc rc = tw_arm_parse_prices(
      P("{\"BillingCurrency\":\"USD\",\"Items\":[{\"currencyCode\":\"USD\","
        "\"retailPrice\":0.2,\"armRegionName\":\"eastus\",\"effectiveStartDate"
        "\":\"2020-01-01T00:00:00Z\",\"meterName\":\"D4s v5\",\"productName\":"
        "\"Virtual Machines Dsv5 Series\",\"type\":\"Consumption\","
        "\"unitOfMeasure\":\"1 Hour\",\"armSkuName\":\"Standard_D4s_v5\"},"
        "{\"currencyCode\":\"USD\",\"retailPrice\":0.192,\"armRegionName\":"
        "\"eastus\",\"effectiveStartDate\":\"2023-01-01T00:00:00Z\","
        "\"meterName\":\"D4s v5\",\"productName\":\"Virtual Machines Dsv5 "
        "Series\",\"type\":\"Consumption\",\"unitOfMeasure\":\"1 Hour\","
        "\"armSkuName\":\"Standard_D4s_v5\"},{\"currencyCode\":\"USD\","
        "\"retailPrice\":0.1,\"armRegionName\":\"eastus\",\"effectiveStartDate"
        "\":\"2099-01-01T00:00:00Z\",\"meterName\":\"D4s v5\",\"productName\":"
        "\"Virtual Machines Dsv5 Series\",\"type\":\"Consumption\","
        "\"unitOfMeasure\":\"1 Hour\",\"armSkuName\":\"Standard_D4s_v5\"},"
        "{\"currencyCode\":\"USD\",\"retailPrice\":0.040723,\"armRegionName\":"
        "\"eastus\",\"meterName\":\"D4s v5 Spot\",\"productName\":\"Virtual "
        "Machines Dsv5 Series\",\"type\":\"Consumption\",\"unitOfMeasure\":"
        "\"1 Hour\",\"armSkuName\":\"Standard_D4s_v5\"}],\"NextPageLink\":"
        "\"https://prices.azure.com/api/retail/"
        "prices?$skip=100\",\"Count\":4}"),
      &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 4);
  TW_CHECK(next && strstr(next, "$skip=100"));
  free(next);
  int64_t uusd = 0, now = 1714564800000LL; /* 2024-05-01 */
  /* The newest price in force wins; one announced for later does not. */
  TW_CHECK(tw_arm_prices_select(&l, "Standard_D4s_v5", "eastus",
                                TW_MARKET_ON_DEMAND, now, &uusd));
  TW_CHECK(uusd == 192000);
  TW_CHECK(tw_arm_prices_select(&l, "standard_d4s_v5", "EastUS", TW_MARKET_SPOT,
                                now, &uusd));
  TW_CHECK(uusd == 40723);
  TW_CHECK(!tw_arm_prices_select(&l, "Standard_D4s_v5", "westus2",
                                 TW_MARKET_SPOT, now, &uusd));
  tw_arm_price_list_release(&l);
  tw_err_clear(&err);
  TW_CHECK(tw_arm_parse_prices(P("{\"Items\":[{\"retailPrice\":\"x\"}]}"), &l,
                               NULL, &err) == TW_E_INVALID);
  tw_arm_price_list_release(&l);
}

static void scheduled_events(void **state) {
  struct tw_arm_sched_event_list l;
  tw_arm_sched_event_list_init(&l);
  struct tw_err err = {0};
  int64_t inc = 0;
  enum tw_rc rc = tw_arm_parse_scheduled_events(
      P("{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"A123BC45-1234-"
        "5678-AB90-ABCDEF123456\",\"EventStatus\":\"Scheduled\",\"EventType\":"
        "\"Preempt\",\"ResourceType\":\"VirtualMachine\",\"Resources\":["
        "\"tw-1\",\"tw-2\"],\"NotBefore\":\"Mon, 19 Sep 2016 18:29:47 GMT\","
        "\"Description\":\"\",\"EventSource\":\"Platform\","
        "\"DurationInSeconds\":-1},{\"EventId\":\"B\",\"EventStatus\":"
        "\"Started\",\"EventType\":\"Freeze\",\"Resources\":[\"tw-3\"],"
        "\"NotBefore\":\"\"}]}"),
      &l, &inc, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(inc == 3 && l.n == 3);
  if (l.n == 3) {
    TW_CHECK_STR(l.items[1].resource, "tw-2");
    TW_CHECK_STR(l.items[1].type, "Preempt");
    TW_CHECK(l.items[0].not_before_ms == 1474309787000LL);
    TW_CHECK(l.items[2].not_before_ms == 0);
  }
  tw_arm_sched_event_list_release(&l);
  tw_err_clear(&err);
  TW_CHECK(
      tw_arm_parse_scheduled_events(
          P("{\"Events\":[{\"Resources\":[],\"NotBefore\":\"tomorrow\"}]}"), &l,
          NULL, &err) == TW_E_INVALID);
  tw_arm_sched_event_list_release(&l);
  TW_CHECK(tw_arm_http_date_ms("Thu, 01 Jan 1970 00:00:01 GMT") == 1000);
  TW_CHECK(tw_arm_http_date_ms("Thu, 01 Jan 1970 00:00:01 PST") == -1);
  TW_CHECK(tw_arm_http_date_ms("Thu, 41 Jan 1970 00:00:01 GMT") == -1);
}

static void limits_and_names(void **state) {
  struct tw_err err = {0};
  struct tw_arm_vm vm;
  size_t n = TW_ARM_JSON_MAX_BYTES + 1;
  char *big = tw_malloc(n);
  memset(big, ' ', n);
  TW_CHECK(tw_arm_parse_vm(big, n, &vm, &err) == TW_E_TOOBIG);
  free(big);

  char a[64], b[64], c[64];
  tw_azure_vm_name("tw-", "attempt-1/token with spaces", a, sizeof a);
  tw_azure_vm_name("tw-", "attempt-1/token with spaces", b, sizeof b);
  tw_azure_vm_name("tw-", "attempt-2", c, sizeof c);
  TW_CHECK_STR(a, b);
  TW_CHECK(strcmp(a, c));
  TW_CHECK(strlen(a) == 27);
  TW_CHECK(strspn(a, "tw-0123456789abcdef") == strlen(a));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(error_classes),
      cmocka_unit_test(token_and_openid),
      cmocka_unit_test(vms),
      cmocka_unit_test(operations),
      cmocka_unit_test(skus),
      cmocka_unit_test(prices),
      cmocka_unit_test(scheduled_events),
      cmocka_unit_test(limits_and_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
