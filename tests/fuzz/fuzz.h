/* fuzz.h - the libFuzzer entry point every tests/fuzz target defines.
 *
 * Runs one input; returns 0 (libFuzzer's convention).  A target aborts on
 * a real finding.  tests/fuzz/driver.c calls it over a corpus and seeded
 * mutations when libFuzzer is not linked (docs/testing.md). */
#ifndef TW_TESTS_FUZZ_FUZZ_H
#define TW_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
