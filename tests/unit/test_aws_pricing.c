/* The Price List Query API's GetProducts: the request the adapter sends
 * and the on-demand prices it reads from an answer shaped as AWS sends
 * it (PriceList entries are JSON documents inside JSON strings). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "providers/aws/pricing.h"

static void products_request_filters_linux_shared_instances(void **state) {
  (void)state;
  struct tw_buf b;
  tw_buf_init(&b);
  tw_aws_products_request("eu-west-1", "tok\"1", &b);
  assert_non_null(strstr(b.data, "\"ServiceCode\":\"AmazonEC2\""));
  assert_non_null(strstr(b.data, "{\"Type\":\"TERM_MATCH\",\"Field\":"
                                 "\"regionCode\",\"Value\":\"eu-west-1\"}"));
  assert_non_null(strstr(b.data, "\"Field\":\"operatingSystem\",\"Value\":"
                                 "\"Linux\""));
  assert_non_null(strstr(b.data, "\"Field\":\"capacitystatus\",\"Value\":"
                                 "\"Used\""));
  assert_non_null(strstr(b.data, "\"NextToken\":\"tok\\\"1\""));
  tw_buf_release(&b);
}

static void on_demand_prices_come_from_the_ondemand_term(void **state) {
  (void)state;
  const char *page =
      "{\"FormatVersion\":\"aws_v1\",\"NextToken\":\"abc\",\"PriceList\":["
      /* m5.large Linux: $0.096/h */
      "\"{\\\"product\\\":{\\\"productFamily\\\":\\\"Compute Instance\\\","
      "\\\"attributes\\\":{\\\"instanceType\\\":\\\"m5.large\\\","
      "\\\"regionCode\\\":\\\"us-east-1\\\",\\\"operatingSystem\\\":"
      "\\\"Linux\\\",\\\"tenancy\\\":\\\"Shared\\\",\\\"preInstalledSw\\\":"
      "\\\"NA\\\",\\\"capacitystatus\\\":\\\"Used\\\"},\\\"sku\\\":\\\"S1\\\"},"
      "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"S1.JRTCKXETXF\\\":{"
      "\\\"priceDimensions\\\":{\\\"S1.JRTCKXETXF.6YS6EN2CT7\\\":{"
      "\\\"unit\\\":\\\"Hrs\\\",\\\"pricePerUnit\\\":{\\\"USD\\\":"
      "\\\"0.0960000000\\\"}}}}},\\\"Reserved\\\":{}}}\","
      /* a dedicated host: not an instance price */
      "\"{\\\"product\\\":{\\\"attributes\\\":{\\\"instanceType\\\":"
      "\\\"m5.large\\\",\\\"regionCode\\\":\\\"us-east-1\\\","
      "\\\"operatingSystem\\\":\\\"Linux\\\",\\\"tenancy\\\":\\\"Dedicated\\\","
      "\\\"preInstalledSw\\\":\\\"NA\\\",\\\"capacitystatus\\\":\\\"Used\\\"}},"
      "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"a\\\":{\\\"priceDimensions\\\":{"
      "\\\"b\\\":{\\\"unit\\\":\\\"Hrs\\\",\\\"pricePerUnit\\\":{\\\"USD\\\":"
      "\\\"0.106\\\"}}}}}}}\","
      /* seven decimals round half up to the micro-dollar */
      "\"{\\\"product\\\":{\\\"attributes\\\":{\\\"instanceType\\\":"
      "\\\"p4d.24xlarge\\\",\\\"regionCode\\\":\\\"us-east-1\\\","
      "\\\"operatingSystem\\\":\\\"Linux\\\",\\\"tenancy\\\":\\\"Shared\\\","
      "\\\"preInstalledSw\\\":\\\"NA\\\",\\\"capacitystatus\\\":\\\"Used\\\"}},"
      "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"a\\\":{\\\"priceDimensions\\\":{"
      "\\\"b\\\":{\\\"unit\\\":\\\"Hrs\\\",\\\"pricePerUnit\\\":{\\\"USD\\\":"
      "\\\"32.7726005000\\\"}}}}}}}\","
      "\"not json\", 7]}";
  struct tw_aws_od_price_list l;
  tw_aws_od_price_list_init(&l);
  char *next = NULL;
  struct tw_err err = {0};
  assert_int_equal(tw_aws_parse_products(page, strlen(page), &l, &next, &err),
                   TW_OK);
  assert_int_equal(l.n, 2);
  assert_string_equal(l.items[0].type, "m5.large");
  assert_string_equal(l.items[0].region, "us-east-1");
  assert_int_equal(l.items[0].uusd, 96000);
  assert_string_equal(l.items[1].type, "p4d.24xlarge");
  assert_int_equal(l.items[1].uusd, 32772601);
  assert_string_equal(next, "abc");
  free(next);
  /* not a GetProducts answer */
  const char *bad = "{\"__type\":\"AccessDeniedException\"}";
  assert_int_equal(tw_aws_parse_products(bad, strlen(bad), &l, &next, &err),
                   TW_E_INVALID);
  assert_null(next);
  assert_int_equal(l.n, 2);
  assert_non_null(strstr(err.msg, "PriceList"));
  tw_aws_od_price_list_release(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(products_request_filters_linux_shared_instances),
      cmocka_unit_test(on_demand_prices_come_from_the_ondemand_term),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
