/* fuzz_alibaba_json.c - every ECS/CloudMonitor response parser of
 * providers/alibaba/ecs_json.c on arbitrary bytes.  Nothing may crash,
 * leak or read out of bounds; a failure must leave its list as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "providers/alibaba/ecs_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct tw_ecs_error e;
  tw_ecs_parse_error(s, size, &e);
  tw_ecs_response_error("Fuzz", 400, s, size, NULL);

  struct tw_instance_list il;
  struct tw_ecs_page pg;
  tw_instance_list_init(&il);
  if (tw_ecs_parse_instances(s, size, &il, &pg, NULL) && il.n)
    abort(); /* a failed parse keeps nothing */
  tw_instance_list_release(&il);

  char **ids = NULL;
  size_t n = 0;
  int64_t trade;
  if (!tw_ecs_parse_run(s, size, &ids, &n, &trade, NULL))
    for (size_t i = 0; i < n; i++)
      free(ids[i]);
  free(ids);

  struct tw_ecs_spot_price_list sl;
  int64_t next;
  char cur[8];
  tw_ecs_spot_price_list_init(&sl);
  tw_ecs_parse_spot_prices(s, size, &sl, &next, cur, NULL);
  tw_ecs_spot_price_list_release(&sl);

  struct tw_ecs_price pr;
  tw_ecs_parse_price(s, size, &pr, NULL);

  struct tw_ecs_stock_list st;
  tw_ecs_stock_list_init(&st);
  tw_ecs_parse_available(s, size, "InstanceType", &st, NULL);
  tw_ecs_stock_list_release(&st);

  struct tw_ecs_itype_list tl;
  char tok[256];
  tw_ecs_itype_list_init(&tl);
  tw_ecs_parse_instance_types(s, size, &tl, tok, NULL);
  tw_ecs_itype_list_release(&tl);

  struct tw_ecs_notice_list nl;
  tw_ecs_notice_list_init(&nl);
  tw_ecs_parse_reclaim_events(s, size, &nl, NULL);
  tw_ecs_notice_list_release(&nl);

  /* The scalar parsers on the input as text. */
  char text[128];
  size_t m = size < sizeof text - 1 ? size : sizeof text - 1;
  memcpy(text, data, m);
  text[m] = '\0';
  int64_t v;
  if (tw_ecs_decimal_nano(text, &v) && (v < 0 || v > TW_ECS_NANO * TW_ECS_NANO))
    abort();
  tw_ecs_parse_time(text);
  return 0;
}
