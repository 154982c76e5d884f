/* unique.h - identifiers unique within the process without a counter.
 *
 * Placement caches results by the generation of the policy set and of the
 * offer index they were computed from, so two sets (or indexes) alive in
 * one process must never share one, whoever built them: the daemon, a
 * request handler, a test.  A process-wide counter would do, but it is
 * mutable global state (docs/architecture.md, "Process-wide state");
 * 53 random bits from the system do as well.  Two ids drawn a billion
 * times apart collide with a probability below 2^-53 per pair, and an id
 * fits a JSON number exactly (2^53), as the API shows them.
 *
 * Threads: any. */
#ifndef TW_BASE_UNIQUE_H
#define TW_BASE_UNIQUE_H

#include <stdint.h>

/* A random id in 1 .. 2^53 - 1 from getentropy(); never 0, so 0 can stand
 * for "none" in a cache entry. */
uint64_t tw_unique_id(void);

#endif
