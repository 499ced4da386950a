/*
 * The one 64-bit mixer of hash tables and structural hashes: splitmix64
 * (an increment, then a strong finalizer), so that mix(h ^ v) chains words
 * into a hash. Counter-based: mix(k) depends on k alone, which also makes it
 * the seeded generator of the fingerprint inputs.
 */
#ifndef TASO_HASH_H
#define TASO_HASH_H

#include <stdint.h>

static inline uint64_t taso_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

#endif
