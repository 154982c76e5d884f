/* test_azure_fixtures.c - the Azure parsers on real recorded answers:
 * libcloud's and jclouds' ARM virtual machine, instance view, list and
 * token fixtures, and a Retail Prices API page (see the provenance in
 * $TRADEWIND_TESTDATA/README.md).  Skipped (77) when the data is absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/twtest.h"
#include "broker/base/mem.h"
#include "providers/azure/arm_json.h"

static char data_dir[1024];

static char *slurp(const char *rel, size_t *len) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", data_dir, rel);
  FILE *f = fopen(path, "rb");
  *len = 0;
  if (!f) {
    TW_FAIL("missing fixture %s", path);
    return NULL;
  }
  struct tw_buf b;
  tw_buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    tw_buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return tw_buf_detach(&b);
}

#define LIBCLOUD "fixtures/libcloud/azure_arm/"
#define JCLOUDS "fixtures/jclouds/azurecompute-arm/"

static void libcloud_vm(void **state) {
  size_t n;
  struct tw_err err = {0};
  struct tw_arm_vm vm;
  struct tw_instance in;
  char *b = slurp(LIBCLOUD "_subscriptions_99999999_resourceGroups_000000_"
                           "providers_Microsoft_Compute_virtualMachines_test_"
                           "node_1.json",
                  &n);
  enum tw_rc rc = tw_arm_parse_vm(b, n, &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.name, "test_vm");
  TW_CHECK_STR(vm.location, "eastus");
  TW_CHECK_STR(vm.vm_size, "Standard_A1");
  TW_CHECK_STR(vm.provisioning_state, "Succeeded");
  TW_CHECK_STR(vm.vm_id, "99999999-9999-9999-9999-999999999999");
  TW_CHECK(!vm.job_id[0] && !vm.zone[0] && !vm.power_state[0]);
  free(b);

  /* Its instance view: an update in progress on a running VM. */
  b = slurp(LIBCLOUD "_subscriptions_99999999_resourceGroups_000000_"
                     "providers_Microsoft_Compute_virtualMachines_test_node_1_"
                     "InstanceView.json",
            &n);
  rc = tw_arm_parse_instance_view(b, n, &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.power_state, "running");
  TW_CHECK(!vm.failure_code[0]);
  tw_arm_vm_instance(&vm, &in);
  TW_CHECK(in.state == TW_INST_RUNNING);
  TW_CHECK(in.market == TW_MARKET_ON_DEMAND);
  TW_CHECK_STR(in.provider_state, "Succeeded/running");
  free(b);
}

static void libcloud_lists(void **state) {
  size_t n;
  struct tw_err err = {0};
  char *next = NULL;
  struct tw_arm_vm_list l;
  tw_arm_vm_list_init(&l);
  char *b = slurp(LIBCLOUD "_subscriptions_99999999_providers_Microsoft_"
                           "Compute_virtualMachines.json",
                  &n);
  enum tw_rc rc = tw_arm_parse_vm_list(b, n, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 1);
  if (l.n)
    TW_CHECK_STR(l.items[0].name, "test-node-1");
  TW_CHECK(next && strstr(next, "$skiptoken=") &&
           !strncmp(next, "https://management.azure.com:443/", 33));
  free(next);
  free(b);
  tw_arm_vm_list_release(&l);

  /* The page whose nextLink names the same page again: the parser hands
   * the link over, the adapter refuses to loop (test_azure_fake). */
  b = slurp(LIBCLOUD "_subscriptions_99999999_providers_Microsoft_Compute_"
                     "virtualMachines_PAGINATION_INFINITE_LOOP.json",
            &n);
  tw_err_clear(&err);
  rc = tw_arm_parse_vm_list(b, n, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n >= 1 && next != NULL);
  free(next);
  free(b);
  tw_arm_vm_list_release(&l);
}

static void libcloud_token(void **state) {
  size_t n;
  struct tw_err err = {0};
  char *tok = NULL;
  int64_t secs = 0;
  /* A v1.0 answer: expires_in as a string. */
  char *b = slurp(LIBCLOUD "_77777777_7777_7777_7777_777777777777_oauth2_"
                           "token.json",
                  &n);
  enum tw_rc rc = tw_arm_parse_token(b, n, &tok, &secs, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(secs == 3600);
  TW_CHECK(tok && strlen(tok) == 55 && tok[0] == '3');
  free(tok);
  free(b);
}

static void jclouds(void **state) {
  size_t n;
  struct tw_err err = {0};
  struct tw_arm_vm vm;
  struct tw_instance in;
  char *b = slurp(JCLOUDS "virtualmachine.json", &n);
  enum tw_rc rc = tw_arm_parse_vm(b, n, &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.name, "windowsmachine");
  TW_CHECK_STR(vm.location, "westus");
  TW_CHECK_STR(vm.vm_size, "Standard_D1");
  tw_arm_vm_instance(&vm, &in);
  TW_CHECK(in.state == TW_INST_PENDING); /* Creating, no instance view */
  free(b);

  b = slurp(JCLOUDS "virtualmachineInstance.json", &n);
  rc = tw_arm_parse_instance_view(b, n, &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.power_state, "running");
  free(b);

  b = slurp(JCLOUDS "createvirtualmachineresponse.json", &n);
  rc = tw_arm_parse_vm(b, n, &vm, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK_STR(vm.provisioning_state, "Creating");
  free(b);

  const char *lists[] = {JCLOUDS "virtualmachinesinsubscription.json",
                         JCLOUDS "virtualmachinesinresourcegroup.json",
                         JCLOUDS "virtualmachinesinlocation.json"};
  for (size_t i = 0; i < 3; i++) {
    struct tw_arm_vm_list l;
    tw_arm_vm_list_init(&l);
    b = slurp(lists[i], &n);
    tw_err_clear(&err);
    rc = tw_arm_parse_vm_list(b, n, &l, NULL, &err);
    TW_CHECK_RC(rc, TW_OK, err);
    TW_CHECK(l.n >= 1);
    for (size_t j = 0; j < l.n; j++)
      TW_CHECK(l.items[j].name[0] && l.items[j].vm_size[0]);
    tw_arm_vm_list_release(&l);
    free(b);
  }

  /* A real ARM error envelope with an empty details array. */
  struct tw_arm_error e;
  b = slurp(JCLOUDS "PublicIPAddressCreateDnsRecordInUse.json", &n);
  TW_CHECK(tw_arm_parse_error(b, n, &e));
  TW_CHECK_STR(e.code, "DnsRecordInUse");
  TW_CHECK(tw_arm_error_class(e.code, e.message, 400) == TW_E_INVALID);
  free(b);
  /* Not an error document at all. */
  b = slurp(JCLOUDS "ipnotavailable.json", &n);
  TW_CHECK(!tw_arm_parse_error(b, n, &e));
  free(b);
}

static void retail_prices(void **state) {
  size_t n;
  struct tw_err err = {0};
  char *next = (char *)"unset";
  struct tw_arm_price_list l;
  tw_arm_price_list_init(&l);
  char *b = slurp(
      "pricing-api/azure-retail/eastus_standard_d2s_v3_nofilter.json", &n);
  enum tw_rc rc = tw_arm_parse_prices(b, n, &l, &next, &err);
  TW_CHECK_RC(rc, TW_OK, err);
  TW_CHECK(l.n == 9);
  TW_CHECK(next == NULL);                  /* "NextPageLink": null */
  int64_t uusd = 0, now = 1800000000000LL; /* 2027: every row in force */
  /* Linux pay-as-you-go: 0.096, not Windows (0.188) nor DevTest. */
  TW_CHECK(tw_arm_prices_select(&l, "Standard_D2s_v3", "eastus",
                                TW_MARKET_ON_DEMAND, now, &uusd));
  TW_CHECK(uusd == 96000);
  /* Linux Spot 0.018816; the Windows Spot row (0.036848) and the Low
   * Priority meters (0.019, 0.075) are skipped. */
  TW_CHECK(tw_arm_prices_select(&l, "Standard_D2s_v3", "eastus", TW_MARKET_SPOT,
                                now, &uusd));
  TW_CHECK(uusd == 18816);
  size_t spot = 0, lowpri = 0, windows = 0;
  for (size_t i = 0; i < l.n; i++) {
    spot += l.items[i].spot;
    lowpri += l.items[i].low_priority;
    windows += l.items[i].windows;
  }
  TW_CHECK(spot == 3 && lowpri == 3 && windows == 6);
  /* Before 2026-06-01 the recorded Spot rows were not yet in force. */
  TW_CHECK(!tw_arm_prices_select(&l, "Standard_D2s_v3", "eastus",
                                 TW_MARKET_SPOT, 1714564800000LL, &uusd));
  tw_arm_price_list_release(&l);
  free(b);
}

int main(void) {
  tw_testdata_dir(data_dir, sizeof data_dir);
  char probe[1100];
  struct stat st;
  snprintf(probe, sizeof probe, "%s/fixtures/libcloud/azure_arm", data_dir);
  if (stat(probe, &st) || !S_ISDIR(st.st_mode)) {
    printf("SKIPPED: no recorded Azure responses under %s\n", data_dir);
    return TW_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(libcloud_vm),    cmocka_unit_test(libcloud_lists),
      cmocka_unit_test(libcloud_token), cmocka_unit_test(jclouds),
      cmocka_unit_test(retail_prices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
