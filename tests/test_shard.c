/* Shard ranges cover every item exactly once with sizes within 1. */
#include "shard.h"
#include "test.h"

static void test_partition(void) {
  int64_t totals[] = {0, 1, 7, 64, 1000003};
  int counts[] = {1, 2, 3, 8, 64};
  for (int t = 0; t < 5; t++)
    for (int c = 0; c < 5; c++) {
      int64_t next = 0, lo = totals[t], hi = 0;
      for (int i = 0; i < counts[c]; i++) {
        int64_t b, e;
        taso_shard_range(totals[t], counts[c], i, &b, &e);
        CHECK(b == next && e >= b);
        next = e;
        if (e - b < lo) lo = e - b;
        if (e - b > hi) hi = e - b;
      }
      CHECK(next == totals[t]);
      CHECK(hi - lo <= 1);
    }
}

int main(void) {
  test_case_t cases[] = {TEST(test_partition)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
