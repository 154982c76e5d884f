/* alibaba.h - the Alibaba Cloud ECS adapter's one export (see
 * providers/provider.h for the interface and docs/alibaba.md for its
 * config keys, error table and events).  Everything else in
 * providers/alibaba/ is static to its file, except the signatures of
 * ali_sign.h and the response parsers of ecs_json.h. */
#ifndef TW_PROVIDERS_ALIBABA_ALIBABA_H
#define TW_PROVIDERS_ALIBABA_ALIBABA_H

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_alibaba;

#endif
