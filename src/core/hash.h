/*
 * The one 64-bit mixer of hash tables and structural hashes: splitmix64
 * (an increment, then a strong finalizer), so that mix(h ^ v) chains words
 * into a hash. Counter-based: mix(k) depends on k alone, which also makes it
 * the seeded generator of the fingerprint inputs.
 */
#ifndef TASO_HASH_H
#define TASO_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t taso_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* A hash-table hash of n 32-bit words (not stable: never stored): a
 * multiply and a shift per word, then the mixer. */
static inline uint64_t taso_hash_words(const void *p, size_t n) {
  const uint32_t *w = p;
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < n; i++) {
    h = (h ^ w[i]) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return taso_mix64(h);
}

/* Digests of what a result depends on (resume keys): FNV-1a over bytes,
 * chained from TASO_FNV_START. Stable across runs and machines of one
 * byte order, which is all a resume key needs. */
#define TASO_FNV_START 0xcbf29ce484222325ULL

static inline uint64_t taso_fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

#endif
