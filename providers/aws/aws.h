/* aws.h - the AWS EC2 adapter's one export (see providers/provider.h for
 * the interface and docs/providers.md for its config keys).  Everything
 * else in providers/aws/ is static to its file, except the response
 * parsers of ec2_xml.h. */
#ifndef TW_PROVIDERS_AWS_AWS_H
#define TW_PROVIDERS_AWS_AWS_H

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_aws;

#endif
