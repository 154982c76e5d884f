/* alibaba.h - the Alibaba Cloud module of tradewind-fakecloud: the ECS RPC
 * API (version 2014-05-26) and the one CloudMonitor call (2019-01-01) that
 * tells when a spot instance's reclaim notice went out.  See
 * docs/fakecloud.md, section "Alibaba Cloud ECS". */
#ifndef TW_TESTS_FAKECLOUD_ALIBABA_H
#define TW_TESTS_FAKECLOUD_ALIBABA_H

#include "tests/fakecloud/module.h"

/* Listed in server.c's module table before ec2: both are served at "/",
 * and this one claims only requests that carry Alibaba's signature. */
extern const struct fc_module_ops fc_module_alibaba;

#endif
