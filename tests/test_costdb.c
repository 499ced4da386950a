/*
 * The cost database's per-step term (the dispatch row): on a host clock
 * never below 0, on a device clock as measured, negative included, and a
 * step's cost in a run never below 0; lookups add it to each step.
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

int main(void) {
  const test_case_t cases[] = {TEST(test_dispatch)};
  return test_run(cases, (int)(sizeof cases / sizeof cases[0]));
}
