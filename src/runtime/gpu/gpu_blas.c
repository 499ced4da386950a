/*
 * matmul and bmm with cuBLAS. cuBLAS is column-major: a row-major
 * C[m,n] = A[m,k] B[k,n] is the column-major C^T = B^T A^T, so the operands
 * are passed swapped and nothing is transposed. Bias, summand and ReLU run
 * in one small epilogue kernel after the product.
 */

#include "gpu_internal.h"

static taso_err_t gemm_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                           void *const *out) {
  taso_err_t err = TASO_OK;
  const float one = 1.0f, zero = 0.0f;
  int m = k->m, n = k->ncol, kd = k->kdim;
  if (k->batch == 0)
    CUBLAS_TRY(cublasSgemm(ctx->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kd, &one, in[1], n, in[0], kd,
                           &zero, out[0], n));
  else
    CUBLAS_TRY(cublasSgemmStridedBatched(ctx->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kd, &one, in[1],
                                         n, (long long)kd * n, in[0], kd, (long long)m * kd, &zero,
                                         out[0], n, (long long)m * n, k->batch));
  if (k->bias_at >= 0 || k->sum_at >= 0 || k->relu || k->clip)
    CUDA_TRY(gpu_kernel_epilogue(k, out[0], k->bias_at >= 0 ? in[k->bias_at] : NULL,
                                 k->sum_at >= 0 ? in[k->sum_at] : NULL, n, 1, ctx->stream));
fail:
  return err;
}

taso_err_t gpu_prepare_gemm(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *a = &c->in[0], *b = &c->in[1];
  bool batched = c->kind == TASO_OP_BMM;
  int r = batched ? 3 : 2, o = batched ? 1 : 0;
  if (a->rank != r || b->rank != r || a->dim[o + 1] != b->dim[o])
    return taso_error(TASO_ERR_ARG, "gpu: %s: bad operand shapes", taso_ops[c->kind].name);
  if (c->p.act != TASO_ACT_NONE && c->p.act != TASO_ACT_RELU)
    return GPU_UNSUPPORTED(c, "activation %d", (int)c->p.act);
  k->batch = batched ? a->dim[0] : 0;
  k->m = a->dim[o];
  k->kdim = a->dim[o + 1];
  k->ncol = b->dim[o + 1];
  int at = 2;
  if (c->fuse & TASO_FUSE_BIAS) {
    if (c->in[2].rank != 1 || c->in[2].dim[0] != k->ncol)
      return taso_error(TASO_ERR_ARG, "gpu: bias must be one value per column (%d)", k->ncol);
    k->bias_at = at++;
  }
  if (c->fuse & TASO_FUSE_SUM) k->sum_at = at++;
  k->relu = (c->fuse & TASO_FUSE_RELU) || c->p.act == TASO_ACT_RELU;
  k->clip = c->fuse & TASO_FUSE_CLIP;
  k->run = gemm_run;
  bool epilogue = k->relu || k->clip || k->bias_at >= 0 || k->sum_at >= 0;
  k->call =
      batched ? (epilogue ? "cublasSgemmStridedBatched+taso epilogue" : "cublasSgemmStridedBatched")
              : (epilogue ? "cublasSgemm+taso epilogue" : "cublasSgemm");
  return TASO_OK;
}
