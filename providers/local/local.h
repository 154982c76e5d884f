/* local.h - the local provider: jobs run on the broker's own host, each
 * attempt's user data (the agent's bootstrap) run with sh in a sandbox
 * directory of its own, in a session of its own that outlives the
 * daemon.  Capacity (cpus, memory_gib) and chargeback rates come from the
 * config; the process table is the sandboxes' instance.json files
 * (docs/providers.md "local"). */
#ifndef TW_PROVIDERS_LOCAL_LOCAL_H
#define TW_PROVIDERS_LOCAL_LOCAL_H

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_local;

#endif
