/*
 * Sharding: how a range of independent work items is cut among ranks so
 * that every rank gets a contiguous block and block sizes differ by at most 1.
 */
#ifndef TASO_SHARD_H
#define TASO_SHARD_H

#include <stdint.h>

/* Items [*begin, *end) of `total` for shard `index` of `count`. */
void taso_shard_range(int64_t total, int count, int index, int64_t *begin, int64_t *end);

#endif
