/* azure.h - the Azure Resource Manager adapter's one export (see
 * providers/provider.h for the interface and docs/azure.md for its config
 * keys, error table and event mapping).  Everything else in
 * providers/azure/ is static to its file, except the response parsers of
 * arm_json.h and the test hook below. */
#ifndef TW_PROVIDERS_AZURE_AZURE_H
#define TW_PROVIDERS_AZURE_AZURE_H

#include <stdint.h>

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_azure;

/* Tests and benchmarks: replaces how the adapter waits (between polls of a
 * long-running operation, and between the http helper's retries) with fn,
 * which may move fake clocks instead of sleeping.  p must be an "azure"
 * provider, fresh from tw_provider_new*(), with no call in flight. */
void tw_azure_set_sleep(struct tw_provider *p,
                        void (*fn)(void *ctx, int64_t ms), void *ctx);

/* The VM name launch derives from a client token: prefix plus the first
 * 24 hex digits of the token's SHA-256, so any token gives a valid,
 * stable name and a retried launch PUTs the same VM.  out has at least
 * 64 bytes. */
void tw_azure_vm_name(const char *prefix, const char *client_token, char *out,
                      size_t out_size);

#endif
