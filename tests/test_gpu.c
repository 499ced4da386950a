/*
 * The gpu backend (cuDNN, cuBLAS) runs
 * where a GPU is present and the test is skipped (exit 77) where none is.
 */
#include "runtime.h"
#include "test.h"

#define SKIP 77

int main(void) {
  char info[256];
  CHECK(taso_backend_find("tpu") == NULL);
  const taso_backend_t *gpu = taso_backend_find("gpu");
  if (!gpu) {
    printf("SKIP: built without CUDA (cuDNN/cuBLAS not found at configure time)\n");
    return test_failures ? 1 : SKIP;
  }
  taso_err_t err = gpu->probe(info, sizeof info);
  if (err != TASO_OK && strstr(taso_error_detail(), "no CUDA device")) {
    printf("SKIP: %s\n", taso_error_detail());
    return test_failures ? 1 : SKIP;
  }
  CHECK_OK(err);
  printf("%s\n", info);
  return test_failures ? 1 : 0;
}
