/* fuzz_azure_fake_req.c - the Azure fake's request parsers over the same
 * bytes, read as a path, a VM PUT body, an OData $filter and a token
 * request form: none may crash, leak or read out of bounds, and what they
 * accept must hold their documented invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "broker/base/mem.h"
#include "tests/fakecloud/azure_req.h"
#include "tests/fakecloud/params.h"

static const char *field(void *ctx, const char *name) {
  (void)name;
  return ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = tw_malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';

  struct fc_az_path p;
  if (fc_az_route_path(s, &p)) {
    if (p.route == FC_AZ_NONE)
      abort();
    if ((p.route == FC_AZ_VM || p.route == FC_AZ_VM_VIEW) && !p.name[0])
      abort();
  } else if (p.route != FC_AZ_NONE) {
    abort();
  }
  (void)fc_az_valid_vm_name(s);
  (void)fc_az_valid_rg_name(s);

  struct fc_az_vm_req r;
  struct fc_az_error e;
  if (fc_az_parse_vm_put(s, size, "fuzz-vm", &r, &e)) {
    if (!r.location[0] || !r.vm_size[0] || !r.tags || !r.os_profile ||
        !r.network_profile || !r.storage_profile)
      abort();
    if (strcmp(r.priority, "Regular") && !r.eviction_policy[0])
      abort();
    if (r.has_max_price && r.max_price_uusd < -1)
      abort();
    if (json_object_get(r.os_profile, "customData") ||
        json_object_get(r.os_profile, "adminPassword"))
      abort();
  } else if (!e.status || !e.code[0]) {
    abort();
  }
  fc_az_vm_req_release(&r);

  struct fc_odata *f = NULL;
  if (fc_odata_parse(s, &f, &e)) {
    (void)fc_odata_eval(f, field, "eastus");
    (void)fc_odata_eval(f, field, NULL);
  } else if (f || e.status != 400) {
    abort();
  }
  fc_odata_free(f);

  struct fc_params form;
  struct tw_err err = {0};
  fc_params_init(&form);
  if (fc_params_parse(&form, s, size, &err) == TW_OK) {
    const struct fc_az_client c = {"client", "secret"};
    if (!fc_az_check_token_req(&form, "tenant", &c, 1, &e) && e.status != 400 &&
        e.status != 401)
      abort();
  }
  fc_params_release(&form);
  free(s);
  return 0;
}
