#include "shard.h"

void taso_shard_range(int64_t total, int count, int index, int64_t *begin, int64_t *end) {
  int64_t base = total / count, extra = total % count;
  /* The first `extra` shards take one item more. */
  *begin = index * base + (index < extra ? index : extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}
