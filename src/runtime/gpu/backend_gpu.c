/* The gpu backend: cuDNN 9 and cuBLAS on one CUDA device. */
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "runtime.h"

static taso_err_t gpu_probe(char *info, int len) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    return taso_error(TASO_ERR_LIB, "no CUDA device (%s)",
                      rc != cudaSuccess ? cudaGetErrorString(rc) : "device count 0");
  struct cudaDeviceProp prop;
  if ((rc = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
    return taso_error(TASO_ERR_LIB, "CUDA: %s", cudaGetErrorString(rc));
  cudnnHandle_t dnn;
  cudnnStatus_t st = cudnnCreate(&dnn);
  if (st != CUDNN_STATUS_SUCCESS) return taso_error(TASO_ERR_LIB, "cuDNN: %s", cudnnGetErrorString(st));
  cudnnDestroy(dnn);
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
    return taso_error(TASO_ERR_LIB, "cuBLAS: cannot create a handle");
  int blas_version = 0;
  cublasGetVersion(blas, &blas_version);
  cublasDestroy(blas);
  snprintf(info, len, "gpu: %d device(s), %s, cuDNN %zu, cuBLAS %d", count, prop.name,
           cudnnGetVersion(), blas_version);
  return TASO_OK;
}

const taso_backend_t taso_backend_gpu = {.name = "gpu", .probe = gpu_probe};
