/*
 * The gpu backend's call names, on the host (no device needed): an engine
 * of cuDNN's graph API written as a cost database's row keeps it
 * ("engine 58 knobs 25=1", "fused engine 7") reads back to the same
 * engine, and malformed ones are refused, so that a row given to the
 * reuse hook rebuilds exactly the plan that was measured.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "test.h"

static bool same_engine(const gpu_engine_t *a, const gpu_engine_t *b) {
  if (a->id != b->id || a->nknobs != b->nknobs || a->fused != b->fused) return false;
  for (int i = 0; i < a->nknobs; i++)
    if (a->knob[i][0] != b->knob[i][0] || a->knob[i][1] != b->knob[i][1]) return false;
  return true;
}

static void test_round_trip(void) {
  gpu_engine_t e[3] = {
      {.id = 58, .nknobs = 1, .knob = {{25, 1}}},
      {.id = 41, .nknobs = 4, .knob = {{2, 8}, {12, -1}, {17, 103}, {23, 0}}, .fused = true},
      {.id = 0}};
  const char *want[3] = {"engine 58 knobs 25=1", "fused engine 41 knobs 2=8,12=-1,17=103,23=0",
                         "engine 0"};
  for (int i = 0; i < 3; i++) {
    char buf[256], rest[64];
    gpu_engine_t back;
    int n = gpu_engine_format(&e[i], buf, sizeof buf);
    CHECK_STR(buf, want[i]);
    CHECK(n == (int)strlen(want[i]));
    snprintf(rest, sizeof rest, "%s", ", fma math");
    strncat(buf, rest, sizeof buf - strlen(buf) - 1);
    const char *end = gpu_engine_parse(buf, &back);
    CHECK(end != NULL);
    if (!end) continue;
    CHECK_STR(end, ", fma math"); /* the parse stops where the engine ends */
    CHECK(same_engine(&back, &e[i]));
  }
  /* what follows the knobs in a describe ends them */
  gpu_engine_t back;
  const char *end = gpu_engine_parse("engine 28 knobs 2=4,3=0 + epilogue kernel, fma math", &back);
  CHECK(end != NULL && back.nknobs == 2 && back.knob[1][0] == 3);
  if (end) CHECK_STR(end, " + epilogue kernel, fma math");
  /* a short buffer: truncated as snprintf truncates, the whole length returned */
  char small[8];
  CHECK(gpu_engine_format(&e[1], small, sizeof small) == (int)strlen(want[1]));
  CHECK_STR(small, "fused e");
}

static void test_refused(void) {
  gpu_engine_t e;
  const char *bad[] = {
      "engine",          "engine x",          "engine -3",         "fused 3",
      "engine 3 knobs ", "engine 3 knobs 1=", "engine 3 knobs =1", "engine 3 knobs 1;2",
      "Engine 3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *end = gpu_engine_parse(bad[i], &e);
    if (end) printf("  parsed %s to \"%s\"\n", bad[i], end);
    CHECK(end == NULL);
  }
  /* more knobs than an engine keeps */
  char many[512] = "engine 9 knobs 0=0";
  for (int i = 1; i <= GPU_ENGINE_KNOBS; i++) {
    char k[16];
    snprintf(k, sizeof k, ",%d=%d", i, i);
    strncat(many, k, sizeof many - strlen(many) - 1);
  }
  CHECK(gpu_engine_parse(many, &e) == NULL);
}

int main(void) {
  const test_case_t cases[] = {TEST(test_round_trip), TEST(test_refused)};
  return test_run(cases, (int)(sizeof cases / sizeof cases[0]));
}
