/*
 * The cost database's per-step term (the dispatch row): on a host clock
 * never below 0, on a device clock as measured, negative included, and a
 * step's cost in a run never below 0; lookups add it to each step. The
 * calls a database gives a backend to make again.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "test.h"

static taso_cost_row_t row(const char *device, const char *key, const char *algorithm,
                           double median) {
  taso_cost_row_t r;
  memset(&r, 0, sizeof r);
  snprintf(r.device, sizeof r.device, "%s", device);
  snprintf(r.key, sizeof r.key, "%s", key);
  snprintf(r.algorithm, sizeof r.algorithm, "%s", algorithm);
  r.median = r.min = r.max = median;
  r.status = TASO_COST_MEASURED;
  r.runs = 5;
  return r;
}

static void test_dispatch(void) {
  taso_rt_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.kind = TASO_OP_RELU;
  cfg.nin = cfg.nout = 1;
  int32_t dim[2] = {1, 1024};
  cfg.in[0] = cfg.out[0] = taso_tensor_make(2, dim);
  char key[TASO_COST_KEY_LEN];
  CHECK(taso_rt_config_key(&cfg, key, sizeof key) < (int)sizeof key);
  taso_cost_row_t rows[5] = {
      row("cpu:a", TASO_COST_DISPATCH_KEY, "runner:chain of 64 relu steps", -0.001),
      row("cpu:b", TASO_COST_DISPATCH_KEY, "runner:chain of 64 relu steps", 0.0005),
      row("gpu:h", TASO_COST_DISPATCH_KEY,
          "runner:chain of 64 relu steps, " TASO_COST_DISPATCH_DEVICE_CLOCK, -0.002),
      row("gpu:h", key, "cudnnActivationForward", 0.0035),
      row("gpu:h", "tiny", "taso kernel", 0.001),
  };
  taso_costdb_t db = {.rows = malloc(sizeof rows), .n = 5};
  CHECK(db.rows != NULL);
  if (!db.rows) return;
  memcpy(db.rows, rows, sizeof rows);
  taso_costdb_normalize(&db);                     /* sorted for lookups (its own copy) */
  CHECK(taso_costdb_dispatch(&db, "cpu:a") == 0); /* a host clock's negative: 0 */
  CHECK(fabs(taso_costdb_dispatch(&db, "cpu:b") - 0.0005) < 1e-12);
  CHECK(fabs(taso_costdb_dispatch(&db, "gpu:h") + 0.002) < 1e-12);
  CHECK(taso_costdb_dispatch(&db, "cpu:none") == 0);
  CHECK(fabs(taso_costdb_step_ms(0.0035, -0.002) - 0.0015) < 1e-12);
  CHECK(taso_costdb_step_ms(0.001, -0.002) == 0);
  taso_costdb_source_t src = {.db = &db, .device = "gpu:h"};
  double ms = -1;
  bool found = false;
  CHECK_OK(taso_costdb_lookup(&src, key, &cfg, &ms, &found));
  CHECK(found && fabs(ms - 0.0015) < 1e-12);
  taso_costdb_free(&db);
}

/* What a backend's reuse hook was given. */
static char given[8][TASO_COST_KEY_LEN + TASO_COST_ALGORITHM_LEN];
static int ngiven;

static bool record(taso_rt_ctx_t *ctx, const char *key, const char *algorithm) {
  (void)ctx;
  if (ngiven < 8) snprintf(given[ngiven++], sizeof given[0], "%s|%s", key, algorithm);
  return strncmp(algorithm, "cudnn", 5) == 0;
}

/* The calls given to a backend: the device's measured rows that name
 * one, no other device's, no unavailable row; a backend without the hook
 * takes none. */
static void test_reuse(void) {
  taso_cost_row_t rows[6] = {
      row("gpu:h", "conv b", "cudnnConvolutionForward GEMM, fma math", 0.01),
      row("gpu:h", "conv a", "cudnnConvolutionForward FFT, fma math", 0.01),
      row("gpu:h", "relu", "taso kernel", 0.001),
      row("gpu:h", "conv c", "", 0.01),
      row("gpu:h", "conv d", "cudnnConvolutionForward DIRECT, fma math", 0.01),
      row("gpu:other", "conv a", "cudnnConvolutionForward GEMM, fma math", 0.01),
  };
  rows[4].status = TASO_COST_UNAVAILABLE;
  taso_costdb_t db = {.rows = malloc(sizeof rows), .n = 6};
  CHECK(db.rows != NULL);
  if (!db.rows) return;
  memcpy(db.rows, rows, sizeof rows);
  taso_costdb_normalize(&db);
  taso_backend_t be = {.name = "test", .reuse = record};
  CHECK(taso_costdb_reuse(&db, "gpu:h", &be, NULL) == 2);
  CHECK(ngiven == 3);
  CHECK_STR(given[0], "conv a|cudnnConvolutionForward FFT, fma math");
  CHECK_STR(given[1], "conv b|cudnnConvolutionForward GEMM, fma math");
  CHECK_STR(given[2], "relu|taso kernel");
  be.reuse = NULL;
  CHECK(taso_costdb_reuse(&db, "gpu:h", &be, NULL) == 0);
  CHECK(ngiven == 3);
  taso_costdb_free(&db);
}

int main(void) {
  const test_case_t cases[] = {TEST(test_dispatch), TEST(test_reuse)};
  return test_run(cases, (int)(sizeof cases / sizeof cases[0]));
}
