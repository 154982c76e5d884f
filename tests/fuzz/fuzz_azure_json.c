/* fuzz_azure_json.c - every Azure answer parser over the same bytes: none
 * may crash, leak or read out of bounds, a failed parse leaves its list
 * as it found it, and what is parsed stays within the model's bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "providers/azure/arm_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct tw_err err = {0};
  char *next = NULL, *tok = NULL;
  int64_t secs;

  struct tw_arm_error e;
  if (tw_arm_parse_error(s, size, &e) && !e.code[0])
    abort();
  struct tw_err err2 = {0};
  enum tw_rc rc = tw_arm_response_error("fuzz", 409, s, size, &err2);
  if (rc == TW_OK)
    abort();

  if (tw_arm_parse_token(s, size, &tok, &secs, &err) == TW_OK &&
      (!tok || secs < 1))
    abort();
  free(tok);
  if (tw_arm_parse_openid(s, size, &tok, &err) == TW_OK && !tok)
    abort();
  free(tok);

  struct tw_arm_vm vm;
  struct tw_instance in;
  if (tw_arm_parse_vm(s, size, &vm, &err) == TW_OK) {
    if (!vm.name[0])
      abort();
    tw_arm_vm_instance(&vm, &in);
  }
  (void)tw_arm_parse_instance_view(s, size, &vm, &err);

  struct tw_arm_vm_list vl;
  tw_arm_vm_list_init(&vl);
  if (tw_arm_parse_vm_list(s, size, &vl, &next, &err) != TW_OK &&
      (vl.n || next))
    abort();
  free(next);
  next = NULL;
  tw_arm_vm_list_release(&vl);

  struct tw_arm_resource_list rl;
  tw_arm_resource_list_init(&rl);
  if (tw_arm_parse_resources(s, size, &rl, &next, &err) != TW_OK &&
      (rl.n || next))
    abort();
  free(next);
  next = NULL;
  tw_arm_resource_list_release(&rl);

  struct tw_arm_operation op;
  if (tw_arm_parse_operation(s, size, &op, &err) == TW_OK &&
      (op.status > TW_ARM_OP_CANCELED || !op.status_text[0]))
    abort();

  struct tw_arm_sku_list kl;
  tw_arm_sku_list_init(&kl);
  if (tw_arm_parse_skus(s, size, &kl, &next, &err) != TW_OK && (kl.n || next))
    abort();
  for (size_t i = 0; i < kl.n; i++)
    if (kl.items[i].n_zones > TW_ARM_ZONES_MAX || kl.items[i].vcpus < 0 ||
        kl.items[i].memory_mib < 0)
      abort();
  free(next);
  next = NULL;
  tw_arm_sku_list_release(&kl);

  struct tw_arm_price_list pl;
  tw_arm_price_list_init(&pl);
  if (tw_arm_parse_prices(s, size, &pl, &next, &err) != TW_OK && (pl.n || next))
    abort();
  int64_t uusd;
  for (size_t i = 0; i < pl.n; i++)
    if (pl.items[i].uusd < 0)
      abort();
  if (pl.n &&
      tw_arm_prices_select(&pl, pl.items[0].sku, pl.items[0].region,
                           TW_MARKET_SPOT, 0, &uusd) &&
      uusd < 0)
    abort();
  free(next);
  tw_arm_price_list_release(&pl);

  struct tw_arm_sched_event_list sl;
  tw_arm_sched_event_list_init(&sl);
  if (tw_arm_parse_scheduled_events(s, size, &sl, NULL, &err) != TW_OK && sl.n)
    abort();
  tw_arm_sched_event_list_release(&sl);
  return 0;
}
