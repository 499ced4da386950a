/*
 * Measurement backends: cpu always works; the cuDNN/cuBLAS backend runs
 * where a GPU is present and the test is skipped (exit 77) where none is.
 */
#include "backend.h"
#include "test.h"

#define SKIP 77

int main(void) {
  char info[256];
  const taso_backend_t *cpu = taso_backend_find("cpu");
  CHECK(cpu != NULL && cpu == taso_backends[0]);
  if (cpu) CHECK_OK(cpu->probe(info, sizeof info));
  if (cpu) CHECK(strstr(info, "oneDNN") != NULL);
  if (cpu) printf("%s\n", info);
  CHECK(taso_backend_find("tpu") == NULL);
  const taso_backend_t *gpu = taso_backend_find("cudnn");
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
