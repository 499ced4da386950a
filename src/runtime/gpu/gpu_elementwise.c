/*
 * Element-wise operators: cuDNN activations and softmax, our kernels for
 * the rest (clip, arithmetic with broadcasting, scalar multiply, per-channel
 * scale and shift, chmul and chadd). Same-shape operators ignore the layout; the others walk
 * tensors through their memory strides, so channels-last works too.
 */
#include <limits.h>

#include "gpu_internal.h"

static bool same_shape(const taso_tensor_t *a, const taso_tensor_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dim[i] != b->dim[i]) return false;
  return true;
}

static taso_err_t binary_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                             void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_binary(k->op, in[0], in[1], out[0], k->n, ctx->stream));
fail:
  return err;
}

static taso_err_t broadcast_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_strided(k->op, in[0], in[1], out[0], k->walk, ctx->stream));
fail:
  return err;
}

static taso_err_t smul_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                           void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_smul(in[0], in[1], out[0], k->n, ctx->stream));
fail:
  return err;
}

static taso_err_t clip_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                           void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_clip(in[0], out[0], k->n, k->cfg.p.bound[0], k->cfg.p.bound[1], ctx->stream));
fail:
  return err;
}

static taso_err_t batchnorm_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_scale_shift(in[0], in[1], in[2], out[0], k->n, k->channels, k->inner, ctx->stream));
fail:
  return err;
}

static taso_err_t activation_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                 void *const *out) {
  taso_err_t err = TASO_OK;
  const float one = 1.0f, zero = 0.0f;
  CUDNN_TRY(cudnnActivationForward(ctx->dnn, k->ad, &one, k->xd, in[0], &zero, k->xd, out[0]));
fail:
  return err;
}

static taso_err_t softmax_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                              void *const *out) {
  taso_err_t err = TASO_OK;
  const float one = 1.0f, zero = 0.0f;
  CUDNN_TRY(cudnnSoftmaxForward(ctx->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                k->xd, in[0], &zero, k->xd, out[0]));
fail:
  return err;
}

/* The output walked in memory order; each operand's stride per walked axis,
 * 0 on axes it is broadcast along (ONNX: trailing axes align). */
static void broadcast_walk(const taso_rt_config_t *c, gpu_walk_t *walk) {
  const taso_tensor_t *o = &c->out[0];
  int order[4];
  gpu_order(c, o, order);
  walk->rank = o->rank;
  for (int j = 0; j < o->rank; j++)
    walk->dim[j] = o->dim[order[j]];
  for (int q = 0; q < 2; q++) {
    const taso_tensor_t *t = &c->in[q];
    int64_t st[4];
    gpu_strides(c, t, st);
    for (int j = 0; j < o->rank; j++) {
      int ia = order[j] - (o->rank - t->rank);
      walk->stride[q][j] = ia >= 0 && t->dim[ia] != 1 ? st[ia] : 0;
    }
  }
}

/* [1, 1, 1, n]: a flat tensor for cuDNN's element-wise calls */
static taso_err_t flat_descriptor(taso_rt_kernel_t *k) {
  taso_err_t err = TASO_OK;
  if (k->n > INT_MAX) return GPU_UNSUPPORTED(&k->cfg, "%lld elements", (long long)k->n);
  CUDNN_TRY(cudnnCreateTensorDescriptor(&k->xd));
  CUDNN_TRY(
      cudnnSetTensor4dDescriptor(k->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, (int)k->n));
fail:
  return err;
}

taso_err_t gpu_prepare_elementwise(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  taso_err_t err = TASO_OK;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *x = &c->in[0];
  switch ((taso_op_kind_t)c->kind) {
  case TASO_OP_EWADD:
  case TASO_OP_EWMUL:
  case TASO_OP_ADD:
  case TASO_OP_MUL: {
    bool add = c->kind == TASO_OP_EWADD || c->kind == TASO_OP_ADD;
    k->op = add ? GPU_BIN_ADD : GPU_BIN_MUL;
    if (same_shape(&c->in[0], &c->in[1]) && same_shape(&c->in[0], &c->out[0])) {
      k->run = binary_run;
      k->call = "taso binary kernel";
    } else {
      if (c->kind == TASO_OP_EWADD || c->kind == TASO_OP_EWMUL)
        return taso_error(TASO_ERR_ARG, "gpu: %s: operand shapes differ", taso_ops[c->kind].name);
      broadcast_walk(c, &k->walk);
      k->run = broadcast_run;
      k->call = "taso broadcast kernel";
    }
    return TASO_OK;
  }
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD: {
    if (c->p.axis < 0 || c->p.axis >= x->rank || taso_tensor_size(&c->in[1]) != x->dim[c->p.axis])
      return taso_error(TASO_ERR_ARG, "gpu: %s: no vector of one value per slice of axis %d",
                        taso_ops[c->kind].name, c->p.axis);
    /* the vector broadcast as a tensor of x's rank, 1 except along the axis */
    taso_rt_config_t b = *c;
    int32_t dim[4] = {1, 1, 1, 1};
    dim[c->p.axis] = x->dim[c->p.axis];
    b.in[1] = taso_tensor_make(x->rank, dim);
    k->op = c->kind == TASO_OP_CHADD ? GPU_BIN_ADD : GPU_BIN_MUL;
    broadcast_walk(&b, &k->walk);
    k->run = broadcast_run;
    k->call = "taso per-channel kernel";
    return TASO_OK;
  }
  case TASO_OP_SMUL:
    if (taso_tensor_size(&c->in[1]) != 1)
      return taso_error(TASO_ERR_ARG, "gpu: smul: the second operand must be a scalar");
    k->run = smul_run;
    k->call = "taso smul kernel";
    return TASO_OK;
  case TASO_OP_CLIP:
    k->run = clip_run;
    k->call = "taso clip kernel";
    return TASO_OK;
  case TASO_OP_BATCHNORM: {
    if (x->rank < 2) return taso_error(TASO_ERR_ARG, "gpu: batchnorm: rank %d", x->rank);
    int64_t st[4];
    gpu_strides(c, x, st);
    k->channels = x->dim[1];
    k->inner = st[1];
    k->run = batchnorm_run;
    k->call = "taso batchnorm kernel";
    return TASO_OK;
  }
  case TASO_OP_RELU:
  case TASO_OP_SIGMOID:
  case TASO_OP_TANH: {
    cudnnActivationMode_t mode = c->kind == TASO_OP_RELU      ? CUDNN_ACTIVATION_RELU
                                 : c->kind == TASO_OP_SIGMOID ? CUDNN_ACTIVATION_SIGMOID
                                                              : CUDNN_ACTIVATION_TANH;
    TASO_TRY(flat_descriptor(k));
    CUDNN_TRY(cudnnCreateActivationDescriptor(&k->ad));
    CUDNN_TRY(cudnnSetActivationDescriptor(k->ad, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    k->run = activation_run;
    k->call = "cudnnActivationForward";
    return TASO_OK;
  }
  case TASO_OP_SOFTMAX: {
    /* [outer, len, inner, 1] in memory, softmax over the channel axis */
    int order[4], a = c->p.axis, pos = 0;
    gpu_order(c, x, order);
    while (pos < x->rank && order[pos] != a)
      pos++;
    if (a < 0 || pos == x->rank) return taso_error(TASO_ERR_ARG, "gpu: softmax axis %d", a);
    int64_t outer = 1, inner = 1, len = x->dim[a];
    for (int j = 0; j < pos; j++)
      outer *= x->dim[order[j]];
    for (int j = pos + 1; j < x->rank; j++)
      inner *= x->dim[order[j]];
    if (k->n > INT_MAX) return GPU_UNSUPPORTED(c, "%lld elements", (long long)k->n);
    CUDNN_TRY(cudnnCreateTensorDescriptor(&k->xd));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(k->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)outer,
                                         (int)len, (int)inner, 1));
    k->run = softmax_run;
    k->call = "cudnnSoftmaxForward";
    return TASO_OK;
  }
  default:
    return taso_error(TASO_ERR_ARG, "gpu: %s is not element-wise", taso_ops[c->kind].name);
  }
fail:
  return err;
}
