/* fuzz_network_matrix.c - the network matrix parser on arbitrary bytes:
 * no crash, no leak, and a matrix that parses answers every pair with
 * sane values. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "policies/place/netmatrix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct tw_netmatrix *m = NULL;
  struct tw_err err = {0};
  if (tw_netmatrix_parse((const char *)data, size, "fuzz", &m, &err) != TW_OK) {
    /* an error leaves nothing behind and says where */
    if (m || !err.msg[0] || strncmp(err.msg, "fuzz", 4))
      __builtin_trap();
    return 0;
  }
  size_t n = tw_netmatrix_n_regions(m);
  for (size_t i = 0; i < n && i < 16; i++)
    for (size_t j = 0; j < n && j < 16; j++) {
      struct tw_net_link l;
      tw_netmatrix_link(m, tw_netmatrix_region_at(m, i)->key,
                        tw_netmatrix_region_at(m, j)->key, &l);
      if (l.rtt_us < 0 || l.bandwidth_kbps <= 0 || l.egress_uusd_per_gb < 0)
        __builtin_trap();
    }
  struct tw_net_link l;
  tw_netmatrix_link(m, "aws:us-east-1", "nowhere", &l);
  tw_netmatrix_free(m);
  return 0;
}
