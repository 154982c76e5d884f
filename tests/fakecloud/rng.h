/* rng.h - the seeded generator behind every random choice of the fake
 * (ids, zones, fault probabilities, spot interruption times), so one
 * --seed replays one run.  splitmix64: tiny, and good enough for tests.
 * Not thread-safe: the server's mutex guards it. */
#ifndef TW_TESTS_FAKECLOUD_RNG_H
#define TW_TESTS_FAKECLOUD_RNG_H

#include <stdint.h>

struct fc_rng {
  uint64_t s;
};

static inline uint64_t fc_rng_next(struct fc_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t fc_rng_below(struct fc_rng *r, uint64_t n) {
  return fc_rng_next(r) % n;
}

/* True with probability ppm / 1e6. */
static inline int fc_rng_chance_ppm(struct fc_rng *r, uint32_t ppm) {
  return ppm >= 1000000u || fc_rng_below(r, 1000000u) < ppm;
}

/* A stateless hash of (seed, a, b), for values that must not depend on
 * the order of requests (spot price history). */
static inline uint64_t fc_hash3(uint64_t seed, uint64_t a, uint64_t b) {
  struct fc_rng r = {seed ^ (a * 0x9e3779b97f4a7c15ull) ^
                     (b * 0xc2b2ae3d27d4eb4full)};
  fc_rng_next(&r);
  return fc_rng_next(&r);
}

/* FNV-1a of a string, to feed fc_hash3. */
static inline uint64_t fc_hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  while (*s)
    h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
  return h;
}

#endif
