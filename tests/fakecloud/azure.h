/* azure.h - the Azure module of tradewind-fakecloud: the identity
 * platform's token endpoint, Azure Resource Manager for Microsoft.Compute
 * virtual machines, the Retail Prices API and Scheduled Events.  See
 * docs/fakecloud.md, section "Azure". */
#ifndef TW_TESTS_FAKECLOUD_AZURE_H
#define TW_TESTS_FAKECLOUD_AZURE_H

#include "tests/fakecloud/module.h"

/* Listed in server.c's module table; it claims only its own paths
 * (/subscriptions/..., /{tenant}/oauth2/..., /api/retail/prices,
 * /metadata/scheduledevents), never "/". */
extern const struct fc_module_ops fc_module_azure;

#endif
