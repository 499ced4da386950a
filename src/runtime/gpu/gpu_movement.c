/*
 * Data movement: concat and the splits as strided copies
 * (cudaMemcpy2DAsync: one row per index of the axes before the split axis),
 * transpose and permute as a strided gather, reshape as a copy, enlarge as
 * zero padding of each kernel plane.
 */
#include "gpu_internal.h"

enum { MOVE_CONCAT = 0, MOVE_SPLIT = 1 };

/* Copies rows floats from each of `rows` rows, between pitches in floats. */
static cudaError_t copy_rows(float *dst, int64_t dpitch, const float *src, int64_t spitch,
                             int64_t width, int64_t rows, cudaStream_t s) {
  if (width == 0 || rows == 0) return cudaSuccess;
  if (rows == 1)
    return cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)width, cudaMemcpyDeviceToDevice, s);
  return cudaMemcpy2DAsync(dst, sizeof(float) * (size_t)dpitch, src, sizeof(float) * (size_t)spitch,
                           sizeof(float) * (size_t)width, (size_t)rows, cudaMemcpyDeviceToDevice,
                           s);
}

static taso_err_t concat_split_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                   void *const *out) {
  taso_err_t err = TASO_OK;
  int64_t nw = k->n0 + k->n1;
  if (k->op == MOVE_CONCAT) {
    float *o = out[0];
    CUDA_TRY(copy_rows(o, nw, in[0], k->n0, k->n0, k->outer, ctx->stream));
    CUDA_TRY(copy_rows(o + k->n0, nw, in[1], k->n1, k->n1, k->outer, ctx->stream));
  } else {
    const float *x = in[0];
    CUDA_TRY(copy_rows(out[0], k->n0, x, nw, k->n0, k->outer, ctx->stream));
    CUDA_TRY(copy_rows(out[1], k->n1, x + k->n0, nw, k->n1, k->outer, ctx->stream));
  }
fail:
  return err;
}

static taso_err_t gather_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                             void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_strided(GPU_BIN_COPY, in[0], in[0], out[0], k->walk, ctx->stream));
fail:
  return err;
}

static taso_err_t copy_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                           void *const *out) {
  taso_err_t err = TASO_OK;
  if (in[0] != out[0] && k->n > 0)
    CUDA_TRY(cudaMemcpyAsync(out[0], in[0], sizeof(float) * (size_t)k->n, cudaMemcpyDeviceToDevice,
                             ctx->stream));
fail:
  return err;
}

static taso_err_t pad_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                          void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_pad(in[0], out[0], k->win, ctx->stream));
fail:
  return err;
}

/* Rows and row lengths of a split of `whole` on axis into a first part of
 * `first` along it, in the tensor's memory order. */
static taso_err_t split_geometry(taso_rt_kernel_t *k, const taso_tensor_t *whole, int axis,
                                 int32_t first) {
  const taso_rt_config_t *c = &k->cfg;
  int order[4], pos = 0;
  if (axis < 0 || axis >= whole->rank)
    return taso_error(TASO_ERR_ARG, "gpu: %s: axis %d", taso_ops[c->kind].name, axis);
  gpu_order(c, whole, order);
  while (order[pos] != axis)
    pos++;
  int64_t outer = 1, inner = 1;
  for (int j = 0; j < pos; j++)
    outer *= whole->dim[order[j]];
  for (int j = pos + 1; j < whole->rank; j++)
    inner *= whole->dim[order[j]];
  k->outer = outer;
  k->n0 = first * inner;
  k->n1 = (whole->dim[axis] - first) * inner;
  k->run = concat_split_run;
  k->call = "cudaMemcpy2DAsync";
  return TASO_OK;
}

taso_err_t gpu_prepare_movement(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *x = &c->in[0], *o = &c->out[0];
  switch ((taso_op_kind_t)c->kind) {
  case TASO_OP_CONCAT:
    k->op = MOVE_CONCAT;
    return split_geometry(k, o, c->p.axis, c->p.axis >= 0 && c->p.axis < 4 ? x->dim[c->p.axis] : 0);
  case TASO_OP_SPLIT:
  case TASO_OP_SPLIT_AT:
    k->op = MOVE_SPLIT;
    return split_geometry(k, x, c->p.axis, c->p.axis >= 0 && c->p.axis < 4 ? o->dim[c->p.axis] : 0);
  case TASO_OP_TRANSPOSE:
  case TASO_OP_PERMUTE: {
    /* output axis i reads input axis perm[i]; walk the output in memory order */
    int perm[4] = {1, 0, 0, 0}, order[4];
    if (c->kind == TASO_OP_PERMUTE)
      for (int i = 0; i < 4; i++)
        perm[i] = c->p.perm[i];
    if (x->rank != o->rank || (c->kind == TASO_OP_TRANSPOSE && x->rank != 2))
      return taso_error(TASO_ERR_ARG, "gpu: %s: bad shapes", taso_ops[c->kind].name);
    int64_t st[4];
    gpu_strides(c, x, st);
    gpu_order(c, o, order);
    k->walk.rank = o->rank;
    for (int j = 0; j < o->rank; j++) {
      if (perm[order[j]] < 0 || perm[order[j]] >= x->rank)
        return taso_error(TASO_ERR_ARG, "gpu: permute: not a permutation");
      k->walk.dim[j] = o->dim[order[j]];
      k->walk.stride[0][j] = k->walk.stride[1][j] = st[perm[order[j]]];
    }
    k->run = gather_run;
    k->call = "taso gather kernel";
    return TASO_OK;
  }
  case TASO_OP_RESHAPE: {
    bool same = x->rank == o->rank;
    for (int i = 0; same && i < x->rank; i++)
      same = x->dim[i] == o->dim[i];
    if (!same && (gpu_is_nhwc(c, x) || gpu_is_nhwc(c, o)))
      return GPU_UNSUPPORTED(c, "reshape of a channels-last tensor reorders it");
    k->run = copy_run;
    k->call = "cudaMemcpyAsync";
    return TASO_OK;
  }
  case TASO_OP_ENLARGE:
    if (c->layout != TASO_RT_NCHW) return GPU_UNSUPPORTED(c, "weights are row-major");
    if (x->rank != 4 || o->rank != 4) return taso_error(TASO_ERR_ARG, "gpu: enlarge: bad shapes");
    k->win = (gpu_window_t){.planes = (int64_t)x->dim[0] * x->dim[1],
                            .h = x->dim[2],
                            .w = x->dim[3],
                            .oh = o->dim[2],
                            .ow = o->dim[3],
                            .top = (o->dim[2] - x->dim[2]) / 2,
                            .left = (o->dim[3] - x->dim[3]) / 2};
    k->run = pad_run;
    k->call = "taso pad kernel";
    return TASO_OK;
  default:
    return taso_error(TASO_ERR_ARG, "gpu: %s does not move data", taso_ops[c->kind].name);
  }
}
