/*
 * The gpu backend, shared helpers: what the backend (backend_gpu.c) and its
 * step families (gpu_conv.c, gpu_blas.c, gpu_elementwise.c,
 * gpu_movement.c) all use: the unsupported message, the memory order of a
 * tensor under a configuration's layout, the fused epilogue pass, and the
 * context's cuDNN workspace and growing device buffers. Below the families,
 * so that they call down into it and never up into the backend.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "gpu_internal.h"

taso_err_t gpu_unsupported(const taso_rt_config_t *cfg, const char *fmt, ...) {
  char why[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  const char *name =
      cfg->kind > TASO_OP_INPUT && cfg->kind < TASO_OP_COUNT ? taso_ops[cfg->kind].name : "?";
  return taso_error(TASO_ERR_UNSUPPORTED, "gpu: %s: %s", name, why);
}

bool gpu_is_nhwc(const taso_rt_config_t *cfg, const taso_tensor_t *t) {
  return cfg->layout == TASO_RT_NHWC && t->rank == 4;
}

void gpu_order(const taso_rt_config_t *cfg, const taso_tensor_t *t, int order[4]) {
  static const int nhwc[4] = {0, 2, 3, 1};
  for (int i = 0; i < 4; i++)
    order[i] = gpu_is_nhwc(cfg, t) ? nhwc[i] : i;
}

cudaError_t gpu_kernel_epilogue(const taso_rt_kernel_t *k, float *y, const float *bias,
                                const float *sum, int64_t cols, int64_t inner, cudaStream_t s) {
  float lo = k->clip ? k->cfg.p.bound[0] : k->relu ? 0.0f : -INFINITY;
  float hi = k->clip ? k->cfg.p.bound[1] : INFINITY;
  return gpu_epilogue(y, k->n, cols, inner, bias, sum, lo, hi, s);
}

void gpu_strides(const taso_rt_config_t *cfg, const taso_tensor_t *t, int64_t stride[4]) {
  int order[4];
  gpu_order(cfg, t, order);
  int64_t s = 1;
  for (int j = 3; j >= 0; j--)
    stride[j] = 0;
  for (int j = t->rank - 1; j >= 0; j--) {
    stride[order[j]] = s;
    s *= t->dim[order[j]];
  }
}

taso_err_t gpu_workspace(taso_rt_ctx_t *ctx) {
  taso_err_t err = TASO_OK;
  if (ctx->workspace || ctx->workspace_cap == 0) return TASO_OK;
  CUDA_TRY(cudaMalloc(&ctx->workspace, ctx->workspace_cap));
  ctx->workspace_size = ctx->workspace_cap;
fail:
  return err;
}

taso_err_t gpu_buffer(float **buf, int64_t *have, int64_t count) {
  taso_err_t err = TASO_OK;
  if (*buf && *have >= count) return TASO_OK;
  int64_t size = 1;
  while (size < count)
    size *= 2;
  cudaFree(*buf); /* waits for the work that may still use it */
  *buf = NULL;
  *have = 0;
  CUDA_TRY(cudaMalloc((void **)buf, sizeof(float) * (size_t)size));
  *have = size;
fail:
  return err;
}
