/* creds.h - the fake token and metadata endpoints of the credential
 * chains (creds.c): AWS STS, IMDSv2, the ECS container endpoint and the
 * Alibaba RAM role metadata. */
#ifndef TW_TESTS_FAKECLOUD_CREDS_H
#define TW_TESTS_FAKECLOUD_CREDS_H

#include "tests/fakecloud/module.h"

extern const struct fc_module_ops fc_module_creds;

#endif
