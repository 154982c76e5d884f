/* unique.c - random process-unique identifiers (unique.h). */
#include "broker/base/unique.h"

#include <unistd.h>

#include "broker/base/clock.h"

uint64_t tw_unique_id(void) {
  uint64_t x = 0;
  if (getentropy(&x, sizeof x) != 0) {
    /* getentropy() fails only without a kernel source (ENOSYS): mix the
     * monotonic clock with a stack address, then scramble (splitmix64's
     * finalizer) so neighbouring inputs land far apart. */
    int here;
    x = (uint64_t)tw_mono_us() ^ ((uint64_t)(uintptr_t)&here << 17);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  x &= (1ULL << 53) - 1;
  return x ? x : 1;
}
