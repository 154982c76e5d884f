/* fuzz_ec2_xml.c - every AWS response parser over the same bytes (EC2's
 * XML and the Price List's JSON): none
 * may crash, leak or read out of bounds, and a failed parse leaves its
 * list as it found it.  The EC2 parsers (SAX2) must also agree with the
 * tree-based ones they replaced (tests/fuzz/ec2_xml_tree.c). */
#include <stdint.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz.h"
#include "providers/aws/ec2_xml.h"
#include "providers/aws/pricing.h"
#include "tests/fuzz/ec2_xml_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct tw_err err = {0};
  char *next = NULL;

  tw_ec2_tree_compare(s, size);

  struct tw_instance_list il;
  tw_instance_list_init(&il);
  if (tw_ec2_parse_instances(s, size, &il, &next, &err) != TW_OK &&
      (il.n != 0 || next))
    abort();
  free(next);
  next = NULL;
  tw_instance_list_release(&il);

  struct tw_ec2_state_change_list sl;
  tw_ec2_state_change_list_init(&sl);
  if (tw_ec2_parse_state_changes(s, size, &sl, &err) != TW_OK && sl.n)
    abort();
  tw_ec2_state_change_list_release(&sl);

  struct tw_ec2_spot_price_list pl;
  tw_ec2_spot_price_list_init(&pl);
  if (tw_ec2_parse_spot_prices(s, size, &pl, &next, &err) != TW_OK &&
      (pl.n || next))
    abort();
  for (size_t i = 0; i < pl.n; i++)
    if (pl.items[i].price_uusd_per_hour < 0)
      abort();
  free(next);
  next = NULL;
  tw_ec2_spot_price_list_release(&pl);

  struct tw_ec2_spot_request_list rl;
  tw_ec2_spot_request_list_init(&rl);
  if (tw_ec2_parse_spot_requests(s, size, &rl, &next, &err) != TW_OK &&
      (rl.n || next))
    abort();
  for (size_t i = 0; i < rl.n; i++)
    if (!rl.items[i].id[0])
      abort();
  free(next);
  next = NULL;
  tw_ec2_spot_request_list_release(&rl);

  struct tw_ec2_instance_type_list tl;
  tw_ec2_instance_type_list_init(&tl);
  if (tw_ec2_parse_instance_types(s, size, &tl, &next, &err) != TW_OK &&
      (tl.n || next))
    abort();
  free(next);
  tw_ec2_instance_type_list_release(&tl);

  struct tw_ec2_zone_list zl;
  tw_ec2_zone_list_init(&zl);
  if (tw_ec2_parse_zones(s, size, &zl, &err) != TW_OK && zl.n)
    abort();
  tw_ec2_zone_list_release(&zl);

  /* the Price List's GetProducts (JSON, not XML: the same rules) */
  struct tw_aws_od_price_list ol;
  tw_aws_od_price_list_init(&ol);
  if (tw_aws_parse_products(s, size, &ol, &next, &err) != TW_OK &&
      (ol.n || next))
    abort();
  for (size_t i = 0; i < ol.n; i++)
    if (ol.items[i].uusd <= 0 || !ol.items[i].type[0])
      abort();
  free(next);
  next = NULL;
  tw_aws_od_price_list_release(&ol);

  struct tw_ec2_error e;
  if (tw_ec2_parse_error(s, size, &e) && !e.code[0])
    abort();
  struct tw_err err2 = {0};
  (void)tw_ec2_response_error("Fuzz", 400, s, size, &err2);
  return 0;
}
