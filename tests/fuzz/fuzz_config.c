/* Fuzz target: the config loader (YAML front-end and the key table). */
#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz/fuzz.h"
#include "broker/core/config.h"
#include "broker/base/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct tw_cfg *c = NULL;
  if (tw_cfg_load_text((const char *)data, size, &c, NULL) == TW_OK)
    tw_cfg_free(c);
  struct tw_node *n = NULL;
  if (tw_node_parse_json((const char *)data, size, &n, NULL) == TW_OK)
    tw_node_free(n);
  return 0;
}
