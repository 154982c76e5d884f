/* pricing.h - the AWS Price List Query API (service "pricing"): the
 * on-demand prices EC2 itself has no call for.
 *
 * GetProducts (JSON 1.1, X-Amz-Target AWSPriceListService.GetProducts,
 * SigV4 service "pricing", served from us-east-1) returns PriceList: an
 * array of JSON strings, each one product with its attributes
 * (instanceType, regionCode, operatingSystem, tenancy, preInstalledSw,
 * capacitystatus) and its terms.  The on-demand price is the one
 * priceDimension of the OnDemand term: pricePerUnit.USD per "Hrs". */
#ifndef TW_PROVIDERS_AWS_PRICING_H
#define TW_PROVIDERS_AWS_PRICING_H

#include <stddef.h>
#include <stdint.h>

#include "broker/base/err.h"
#include "broker/base/mem.h"

/* Answers larger than this are refused (a page holds at most 100
 * products of a few kB each). */
#define TW_AWS_PRICING_MAX_BYTES (8u << 20)

struct tw_aws_od_price {
  char type[64];   /* "m5.large" */
  char region[32]; /* "us-east-1" */
  int64_t uusd;    /* per hour: Linux, shared tenancy, no software */
};

struct tw_aws_od_price_list {
  struct tw_aws_od_price *items;
  size_t n, cap;
};

void tw_aws_od_price_list_init(struct tw_aws_od_price_list *l);
void tw_aws_od_price_list_release(struct tw_aws_od_price_list *l);

/* The GetProducts request body for region's Linux, shared-tenancy,
 * software-free, used-capacity EC2 products; next is the previous page's
 * NextToken (NULL: the first page). */
void tw_aws_products_request(const char *region, const char *next,
                             struct tw_buf *out);

/* Appends the on-demand prices of one GetProducts page to out; *next is
 * set to its NextToken (owned; NULL on the last page).  Products that are
 * not such instances, or whose price is not one USD rate per hour, are
 * skipped.  TW_E_INVALID for a body that is not a GetProducts answer,
 * with out as it was and *next NULL. */
enum tw_rc tw_aws_parse_products(const char *json, size_t len,
                                 struct tw_aws_od_price_list *out, char **next,
                                 struct tw_err *err);

#endif
