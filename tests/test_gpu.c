/*
 * The gpu backend (cuDNN, cuBLAS and our CUDA kernels) against the
 * reference evaluation: every operator on a few small shapes, the fused
 * convolution and matmul epilogues, channels-last configurations, the
 * configurations it must refuse, and the timing of one convolution.
 * Runs where a GPU is present; skipped (exit 77) where none is.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "eval.h"
#include "runtime.h"
#include "test.h"

#define SKIP 77

static const taso_backend_t *gpu;
static taso_rt_ctx_t *ctx;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1): xorshift64*, fixed seed, so failures reproduce. */
static float frand(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  uint64_t r = rng_state * 2685821657736338717ull;
  return (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static taso_tensor_t T(int rank, int32_t a, int32_t b, int32_t c, int32_t d) {
  int32_t dim[4] = {a, b, c, d};
  return taso_tensor_make(rank, dim);
}

static bool fusable(int32_t kind) {
  return kind == TASO_OP_CONV2D || kind == TASO_OP_MATMUL || kind == TASO_OP_BMM;
}

/* A configuration: operands, inferred results, then bias and summand. */
static taso_rt_config_t make_cfg(int32_t kind, taso_params_t p, const taso_tensor_t *in,
                                 unsigned fuse, int32_t layout) {
  taso_rt_config_t c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  c.p = p;
  c.fuse = fuse;
  c.layout = layout;
  int arity = taso_ops[kind].arity;
  for (int i = 0; i < arity; i++)
    c.in[i] = in[i];
  taso_params_t plain = p;
  plain.act = TASO_ACT_NONE;
  CHECK_OK(taso_op_infer((taso_op_kind_t)kind, &plain, c.in, c.out));
  c.nout = taso_ops[kind].outputs;
  for (int i = 0; i < c.nout; i++)
    c.out[i] = taso_tensor_make(c.out[i].rank, c.out[i].dim);
  for (int i = 0; i < arity; i++)
    c.in[i] = taso_tensor_make(c.in[i].rank, c.in[i].dim);
  c.nin = arity;
  const taso_tensor_t *o = &c.out[0];
  if (fuse & TASO_FUSE_BIAS)
    c.in[c.nin++] = T(1, kind == TASO_OP_CONV2D ? o->dim[1] : o->dim[o->rank - 1], 0, 0, 0);
  if (fuse & TASO_FUSE_SUM) c.in[c.nin++] = *o;
  return c;
}

/* Whether buffer (operand i, or result when i < 0) is channels-last. Weights
 * of a convolution stay row-major in every layout. */
static bool stored_nhwc(const taso_rt_config_t *c, int i, const taso_tensor_t *t) {
  return c->layout == TASO_RT_NHWC && t->rank == 4 && !(c->kind == TASO_OP_CONV2D && i == 1);
}

/* Between logical row-major NCHW and NHWC on the host. */
static void reorder(const taso_tensor_t *t, const float *src, float *dst, bool to_nhwc) {
  int32_t N = t->dim[0], C = t->dim[1], H = t->dim[2], W = t->dim[3];
  for (int32_t n = 0; n < N; n++)
    for (int32_t c = 0; c < C; c++)
      for (int32_t y = 0; y < H; y++)
        for (int32_t x = 0; x < W; x++) {
          int64_t nchw = (((int64_t)n * C + c) * H + y) * W + x;
          int64_t nhwc = (((int64_t)n * H + y) * W + x) * C + c;
          if (to_nhwc)
            dst[nhwc] = src[nchw];
          else
            dst[nchw] = src[nhwc];
        }
}

/* The reference: the registry's double evaluation, then the fused epilogue. */
static taso_err_t reference(const taso_rt_config_t *c, double *const *in, double **out) {
  taso_node_t node;
  memset(&node, 0, sizeof node);
  node.kind = c->kind;
  node.p = c->p;
  bool relu = (c->fuse & TASO_FUSE_RELU) || c->p.act == TASO_ACT_RELU;
  if (fusable(c->kind)) node.p.act = TASO_ACT_NONE;
  TASO_TRY(taso_eval_node_double(NULL, &node, c->in, (const double *const *)in, c->out, out));
  if (!fusable(c->kind)) return TASO_OK;
  const taso_tensor_t *o = &c->out[0];
  int64_t n = taso_tensor_size(o);
  int at = taso_ops[c->kind].arity;
  const double *bias = c->fuse & TASO_FUSE_BIAS ? in[at++] : NULL;
  const double *sum = c->fuse & TASO_FUSE_SUM ? in[at++] : NULL;
  int64_t plane = c->kind == TASO_OP_CONV2D ? (int64_t)o->dim[2] * o->dim[3] : 1;
  int64_t channels = c->kind == TASO_OP_CONV2D ? o->dim[1] : o->dim[o->rank - 1];
  for (int64_t i = 0; i < n; i++) {
    double v = out[0][i];
    if (bias) v += bias[(i / plane) % channels];
    if (sum) v += sum[i];
    out[0][i] = relu && v < 0 ? 0 : v;
  }
  return TASO_OK;
}

/* Runs one configuration on random inputs and compares with the reference.
 * optional: an UNSUPPORTED answer is reported, not counted as a failure. */
static void check_config(const taso_rt_config_t *c, const char *label, bool optional) {
  float *hin[TASO_RT_MAX_IN] = {0}, *hout[2] = {0}, *stage = NULL;
  double *din[TASO_RT_MAX_IN] = {0}, *ref[2] = {0};
  void *dev_in[TASO_RT_MAX_IN] = {0}, *dev_out[2] = {0};
  taso_rt_kernel_t *k = NULL;
  int64_t most = 1;
  int failures_before = test_failures;
  bool ok = true;
  for (int i = 0; i < c->nin; i++) {
    int64_t n = taso_tensor_size(&c->in[i]);
    most = n > most ? n : most;
    hin[i] = malloc(sizeof(float) * (size_t)n);
    din[i] = malloc(sizeof(double) * (size_t)n);
    CHECK(hin[i] && din[i]);
    if (!hin[i] || !din[i]) goto done;
    for (int64_t j = 0; j < n; j++)
      din[i][j] = hin[i][j] = frand();
    CHECK_OK(gpu->alloc(ctx, n, &dev_in[i]));
  }
  for (int i = 0; i < c->nout; i++) {
    int64_t n = taso_tensor_size(&c->out[i]);
    most = n > most ? n : most;
    hout[i] = malloc(sizeof(float) * (size_t)n);
    ref[i] = malloc(sizeof(double) * (size_t)n);
    CHECK(hout[i] && ref[i]);
    if (!hout[i] || !ref[i]) goto done;
    CHECK_OK(gpu->alloc(ctx, n, &dev_out[i]));
  }
  stage = malloc(sizeof(float) * (size_t)most);
  CHECK(stage != NULL);
  if (!stage || test_failures != failures_before) goto done;
  CHECK_OK(reference(c, din, ref));

  taso_err_t err = gpu->prepare(ctx, c, &k);
  if (err == TASO_ERR_UNSUPPORTED && optional) {
    printf("  %-40s unsupported here: %s\n", label, taso_error_detail());
    goto done;
  }
  CHECK_OK(err);
  if (err != TASO_OK) {
    fprintf(stderr, "  in %s\n", label);
    goto done;
  }
  for (int i = 0; i < c->nin; i++) {
    const float *src = hin[i];
    if (stored_nhwc(c, i, &c->in[i])) {
      reorder(&c->in[i], hin[i], stage, true);
      src = stage;
    }
    CHECK_OK(gpu->upload(ctx, dev_in[i], src, taso_tensor_size(&c->in[i])));
  }
  CHECK_OK(gpu->run(ctx, k, dev_in, dev_out));
  CHECK_OK(gpu->sync(ctx));
  double worst = 0, scale = 1;
  for (int i = 0; i < c->nout; i++) {
    int64_t n = taso_tensor_size(&c->out[i]);
    bool nhwc = stored_nhwc(c, -1, &c->out[i]);
    CHECK_OK(gpu->download(ctx, nhwc ? stage : hout[i], dev_out[i], n));
    if (nhwc) reorder(&c->out[i], stage, hout[i], false);
    for (int64_t j = 0; j < n; j++)
      scale = fmax(scale, fabs(ref[i][j]));
    for (int64_t j = 0; j < n; j++) {
      double d = fabs((double)hout[i][j] - ref[i][j]);
      if (!(d <= worst)) worst = d; /* NaN sticks */
    }
  }
  /* float32 with sums of up to a few hundred products */
  ok = worst <= 2e-4 * scale;
  CHECK(ok);
  printf("  %-40s max error %.2e (scale %.2g)%s\n", label, worst, scale, ok ? "" : "  FAILED");
done:
  if (k) gpu->destroy(ctx, k);
  for (int i = 0; i < TASO_RT_MAX_IN; i++) {
    if (dev_in[i]) gpu->release(ctx, dev_in[i]);
    free(hin[i]);
    free(din[i]);
  }
  for (int i = 0; i < 2; i++) {
    if (dev_out[i]) gpu->release(ctx, dev_out[i]);
    free(hout[i]);
    free(ref[i]);
  }
  free(stage);
}

static taso_params_t P(void) {
  return taso_params_default();
}

static taso_params_t window(int32_t sh, int32_t sw, int32_t pad, int32_t kh, int32_t kw) {
  taso_params_t p = taso_params_default();
  p.stride[0] = sh;
  p.stride[1] = sw;
  p.pad = pad;
  p.kernel[0] = kh;
  p.kernel[1] = kw;
  return p;
}

static taso_params_t explicit_pads(int32_t s, int32_t kh, int32_t kw, int32_t t, int32_t l,
                                   int32_t b, int32_t r) {
  taso_params_t p = window(s, s, TASO_PAD_EXPLICIT, kh, kw);
  p.pads[0] = t;
  p.pads[1] = l;
  p.pads[2] = b;
  p.pads[3] = r;
  return p;
}

static void conv(const char *label, taso_params_t p, taso_tensor_t x, taso_tensor_t w,
                 unsigned fuse, int32_t layout, bool optional) {
  taso_tensor_t in[2] = {x, w};
  p.kernel[0] = p.kernel[1] = 0;
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, p, in, fuse, layout);
  check_config(&c, label, optional);
}

static void test_conv2d(void) {
  taso_tensor_t x = T(4, 2, 8, 9, 9), w = T(4, 16, 8, 3, 3);
  conv("conv 3x3 same", window(1, 1, TASO_PAD_SAME, 0, 0), x, w, 0, TASO_RT_NCHW, false);
  conv("conv 3x3 valid", window(1, 1, TASO_PAD_VALID, 0, 0), x, w, 0, TASO_RT_NCHW, false);
  /* 8 rows, kernel 3, stride 2: one row of padding, at the bottom only */
  conv("conv 3x3 s2 same (asymmetric)", window(2, 2, TASO_PAD_SAME, 0, 0), T(4, 1, 8, 8, 8), w, 0,
       TASO_RT_NCHW, false);
  conv("conv 3x3 s2 same (odd input)", window(2, 2, TASO_PAD_SAME, 0, 0), x, w, 0, TASO_RT_NCHW,
       false);
  conv("conv 3x3 explicit 1,0,0,1", explicit_pads(1, 3, 3, 1, 0, 0, 1), x, w, 0, TASO_RT_NCHW,
       false);
  conv("conv 1x1", window(1, 1, TASO_PAD_SAME, 0, 0), x, T(4, 12, 8, 1, 1), 0, TASO_RT_NCHW, false);
  conv("conv 5x3 stride 2x1", window(2, 1, TASO_PAD_SAME, 0, 0), x, T(4, 8, 8, 5, 3), 0,
       TASO_RT_NCHW, false);
  conv("conv grouped (4 groups)", window(1, 1, TASO_PAD_SAME, 0, 0), x, T(4, 16, 2, 3, 3), 0,
       TASO_RT_NCHW, false);
  conv("conv depthwise", window(1, 1, TASO_PAD_SAME, 0, 0), x, T(4, 8, 1, 3, 3), 0, TASO_RT_NCHW,
       false);
  taso_params_t act = window(1, 1, TASO_PAD_SAME, 0, 0);
  act.act = TASO_ACT_RELU;
  conv("conv act=relu (parameter)", act, x, w, 0, TASO_RT_NCHW, false);
}

static void test_conv2d_fused(void) {
  taso_tensor_t x = T(4, 2, 8, 9, 9), w = T(4, 16, 8, 3, 3);
  taso_params_t p = window(1, 1, TASO_PAD_SAME, 0, 0);
  conv("conv+bias", p, x, w, TASO_FUSE_BIAS, TASO_RT_NCHW, false);
  conv("conv+relu", p, x, w, TASO_FUSE_RELU, TASO_RT_NCHW, false);
  conv("conv+bias+relu", p, x, w, TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW, false);
  conv("conv+sum", p, x, w, TASO_FUSE_SUM, TASO_RT_NCHW, false);
  conv("conv+bias+sum", p, x, w, TASO_FUSE_BIAS | TASO_FUSE_SUM, TASO_RT_NCHW, false);
  conv("conv+bias+sum+relu", p, x, w, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, TASO_RT_NCHW,
       false);
  conv("conv s2 asym +bias+sum+relu", window(2, 2, TASO_PAD_SAME, 0, 0), T(4, 1, 8, 8, 8), w,
       TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, TASO_RT_NCHW, false);
  conv("conv grouped +bias+relu", p, x, T(4, 16, 4, 3, 3), TASO_FUSE_BIAS | TASO_FUSE_RELU,
       TASO_RT_NCHW, false);
}

static void gemm(const char *label, int32_t kind, taso_tensor_t a, taso_tensor_t b, unsigned fuse) {
  taso_tensor_t in[2] = {a, b};
  taso_rt_config_t c = make_cfg(kind, P(), in, fuse, TASO_RT_NCHW);
  check_config(&c, label, false);
}

static void test_gemm(void) {
  gemm("matmul 5x7 * 7x3", TASO_OP_MATMUL, T(2, 5, 7, 0, 0), T(2, 7, 3, 0, 0), 0);
  gemm("matmul 64x33 * 33x17", TASO_OP_MATMUL, T(2, 64, 33, 0, 0), T(2, 33, 17, 0, 0), 0);
  gemm("matmul +bias+relu", TASO_OP_MATMUL, T(2, 5, 7, 0, 0), T(2, 7, 3, 0, 0),
       TASO_FUSE_BIAS | TASO_FUSE_RELU);
  gemm("matmul +bias+sum+relu", TASO_OP_MATMUL, T(2, 6, 9, 0, 0), T(2, 9, 4, 0, 0),
       TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU);
  gemm("bmm 3x(4x5 * 5x6)", TASO_OP_BMM, T(3, 3, 4, 5, 0), T(3, 3, 5, 6, 0), 0);
  gemm("bmm +bias+relu", TASO_OP_BMM, T(3, 2, 7, 3, 0), T(3, 2, 3, 5, 0),
       TASO_FUSE_BIAS | TASO_FUSE_RELU);
  taso_tensor_t in[2] = {T(2, 4, 6, 0, 0), T(2, 6, 5, 0, 0)};
  taso_params_t p = P();
  p.act = TASO_ACT_RELU;
  taso_rt_config_t c = make_cfg(TASO_OP_MATMUL, p, in, 0, TASO_RT_NCHW);
  check_config(&c, "matmul act=relu (parameter)", false);
}

static void pool(const char *label, int32_t kind, taso_params_t p, taso_tensor_t x,
                 int32_t layout) {
  taso_rt_config_t c = make_cfg(kind, p, &x, 0, layout);
  check_config(&c, label, false);
}

static void test_pool(void) {
  taso_tensor_t x = T(4, 2, 3, 9, 9), even = T(4, 2, 3, 8, 8);
  for (int k = 0; k < 2; k++) {
    int32_t kind = k ? TASO_OP_POOL_AVG : TASO_OP_POOL_MAX;
    const char *name = k ? "avg" : "max";
    char label[64];
    snprintf(label, sizeof label, "pool_%s 3x3 same", name);
    pool(label, kind, window(1, 1, TASO_PAD_SAME, 3, 3), x, TASO_RT_NCHW);
    snprintf(label, sizeof label, "pool_%s 2x2 s2 valid", name);
    pool(label, kind, window(2, 2, TASO_PAD_VALID, 2, 2), even, TASO_RT_NCHW);
    snprintf(label, sizeof label, "pool_%s 3x3 s2 same (asymmetric)", name);
    pool(label, kind, window(2, 2, TASO_PAD_SAME, 3, 3), even, TASO_RT_NCHW);
    snprintf(label, sizeof label, "pool_%s explicit 1,1,0,0", name);
    pool(label, kind, explicit_pads(2, 3, 3, 1, 1, 0, 0), x, TASO_RT_NCHW);
  }
  taso_params_t p = window(1, 1, TASO_PAD_SAME, 3, 3);
  p.exclude_pad = 1;
  pool("pool_avg 3x3 same exclude_pad", TASO_OP_POOL_AVG, p, x, TASO_RT_NCHW);
  p = window(2, 2, TASO_PAD_SAME, 3, 3);
  p.exclude_pad = 1;
  pool("pool_avg s2 asymmetric exclude_pad", TASO_OP_POOL_AVG, p, even, TASO_RT_NCHW);
}

static void op1(const char *label, int32_t kind, taso_params_t p, taso_tensor_t x) {
  taso_rt_config_t c = make_cfg(kind, p, &x, 0, TASO_RT_NCHW);
  check_config(&c, label, false);
}

static void op2(const char *label, int32_t kind, taso_params_t p, taso_tensor_t x,
                taso_tensor_t y) {
  taso_tensor_t in[2] = {x, y};
  taso_rt_config_t c = make_cfg(kind, p, in, 0, TASO_RT_NCHW);
  check_config(&c, label, false);
}

static void test_elementwise(void) {
  taso_tensor_t x = T(4, 2, 3, 4, 5);
  op1("relu", TASO_OP_RELU, P(), x);
  op1("sigmoid", TASO_OP_SIGMOID, P(), x);
  op1("tanh", TASO_OP_TANH, P(), x);
  taso_params_t p = P();
  p.bound[0] = -0.25f;
  p.bound[1] = 0.5f;
  op1("clip -0.25..0.5", TASO_OP_CLIP, p, x);
  op2("ewadd", TASO_OP_EWADD, P(), x, x);
  op2("ewmul", TASO_OP_EWMUL, P(), x, x);
  op2("smul", TASO_OP_SMUL, P(), x, T(0, 0, 0, 0, 0));
  op2("add same shape", TASO_OP_ADD, P(), x, x);
  op2("add [2,3,4,5] + [4,1]", TASO_OP_ADD, P(), x, T(2, 4, 1, 0, 0));
  op2("add [3,1,5] + [2,1,4,1]", TASO_OP_ADD, P(), T(3, 3, 1, 5, 0), T(4, 2, 1, 4, 1));
  op2("mul [2,3,4,5] * [5]", TASO_OP_MUL, P(), x, T(1, 5, 0, 0, 0));
  op2("mul [1] * [6,7]", TASO_OP_MUL, P(), T(1, 1, 0, 0, 0), T(2, 6, 7, 0, 0));
  taso_tensor_t bn[3] = {x, T(1, 3, 0, 0, 0), T(1, 3, 0, 0, 0)};
  taso_rt_config_t c = make_cfg(TASO_OP_BATCHNORM, P(), bn, 0, TASO_RT_NCHW);
  check_config(&c, "batchnorm [2,3,4,5]", false);
  taso_tensor_t bn2[3] = {T(2, 7, 3, 0, 0), T(1, 3, 0, 0, 0), T(1, 3, 0, 0, 0)};
  c = make_cfg(TASO_OP_BATCHNORM, P(), bn2, 0, TASO_RT_NCHW);
  check_config(&c, "batchnorm [7,3]", false);
  for (int a = 0; a < 4; a++) {
    char label[64];
    snprintf(label, sizeof label, "softmax axis %d", a);
    p = P();
    p.axis = a;
    op1(label, TASO_OP_SOFTMAX, p, x);
  }
  p = P();
  p.axis = 1;
  op1("softmax [6,10] axis 1", TASO_OP_SOFTMAX, p, T(2, 6, 10, 0, 0));
}

static void test_movement(void) {
  taso_tensor_t x = T(4, 2, 3, 4, 5);
  taso_params_t p = P();
  p.rank = 2;
  p.shape[0] = 6;
  p.shape[1] = 20;
  op1("reshape [2,3,4,5] -> [6,20]", TASO_OP_RESHAPE, p, x);
  p = P();
  p.perm[0] = 0, p.perm[1] = 2, p.perm[2] = 3, p.perm[3] = 1;
  op1("permute 0,2,3,1", TASO_OP_PERMUTE, p, x);
  p.perm[0] = 2, p.perm[1] = 0, p.perm[2] = 1, p.perm[3] = 0;
  op1("permute 2,0,1 (rank 3)", TASO_OP_PERMUTE, p, T(3, 3, 4, 5, 0));
  op1("transpose 7x3", TASO_OP_TRANSPOSE, P(), T(2, 7, 3, 0, 0));
  for (int a = 0; a < 4; a++) {
    char label[64];
    taso_tensor_t y = x;
    y.dim[a] += 2;
    p = P();
    p.axis = a;
    snprintf(label, sizeof label, "concat axis %d", a);
    op2(label, TASO_OP_CONCAT, p, x, y);
    p.at = 1;
    snprintf(label, sizeof label, "split_at axis %d at 1", a);
    op1(label, TASO_OP_SPLIT_AT, p, x);
  }
  /* split needs a split tree on its axis: [3 | 2] on axis 1 */
  taso_tensor_t s = T(4, 2, 5, 3, 4);
  taso_tree_t leaf;
  memset(&leaf, 0, sizeof leaf);
  CHECK_OK(taso_tree_join(&s.tree[1], 3, &leaf, &leaf));
  taso_rt_config_t c;
  memset(&c, 0, sizeof c);
  p = P();
  p.axis = 1;
  c = make_cfg(TASO_OP_SPLIT, p, &s, 0, TASO_RT_NCHW);
  check_config(&c, "split axis 1 (3|2)", false);
  p = P();
  p.kernel[0] = 5;
  p.kernel[1] = 3;
  op1("enlarge 1x1 -> 5x3", TASO_OP_ENLARGE, p, T(4, 4, 2, 1, 1));
  op1("enlarge 3x1 -> 5x3", TASO_OP_ENLARGE, p, T(4, 4, 2, 3, 1));
}

static void test_channels_last(void) {
  taso_tensor_t x = T(4, 2, 8, 9, 9);
  taso_params_t p = window(1, 1, TASO_PAD_SAME, 0, 0);
  /* cuDNN may have no FP32 algorithm for NHWC data with NCHW weights */
  conv("nhwc conv 3x3", p, x, T(4, 16, 8, 3, 3), 0, TASO_RT_NHWC, true);
  conv("nhwc conv+bias+relu", p, x, T(4, 16, 8, 3, 3), TASO_FUSE_BIAS | TASO_FUSE_RELU,
       TASO_RT_NHWC, true);
  pool("nhwc pool_max 3x3 same", TASO_OP_POOL_MAX, window(1, 1, TASO_PAD_SAME, 3, 3), x,
       TASO_RT_NHWC);
  pool("nhwc pool_avg 2x2 s2 valid", TASO_OP_POOL_AVG, window(2, 2, TASO_PAD_VALID, 2, 2),
       T(4, 2, 3, 8, 8), TASO_RT_NHWC);
  taso_tensor_t y = x;
  y.dim[1] = 3;
  taso_tensor_t in[3] = {x, y};
  p = P();
  p.axis = 1;
  taso_rt_config_t c = make_cfg(TASO_OP_CONCAT, p, in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc concat axis 1", false);
  p.at = 3;
  c = make_cfg(TASO_OP_SPLIT_AT, p, &x, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc split_at axis 1", false);
  c = make_cfg(TASO_OP_SOFTMAX, p, &x, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc softmax axis 1", false);
  in[1] = T(1, 8, 0, 0, 0);
  in[2] = T(1, 8, 0, 0, 0);
  c = make_cfg(TASO_OP_BATCHNORM, P(), in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc batchnorm", false);
  in[1] = T(3, 8, 1, 9, 0);
  c = make_cfg(TASO_OP_ADD, P(), in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc add [2,8,9,9] + [8,1,9]", false);
  in[1] = x;
  c = make_cfg(TASO_OP_MUL, P(), in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc mul same shape", false);
  p = P();
  p.perm[0] = 0, p.perm[1] = 3, p.perm[2] = 1, p.perm[3] = 2;
  c = make_cfg(TASO_OP_PERMUTE, p, &x, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc permute 0,3,1,2", false);
}

static void test_refusals(void) {
  taso_tensor_t x = T(4, 1, 4, 5, 5), in[2] = {x, T(4, 4, 4, 3, 3)};
  taso_rt_kernel_t *k = NULL;
  taso_rt_config_t c =
      make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in, 0, TASO_RT_BLOCKED);
  CHECK_ERR(gpu->prepare(ctx, &c, &k), TASO_ERR_UNSUPPORTED);
  CHECK(k == NULL);
  c = make_cfg(TASO_OP_RELU, P(), &x, 0, TASO_RT_NCHW);
  c.fuse = TASO_FUSE_BIAS;
  c.nin = 2;
  c.in[1] = T(1, 4, 0, 0, 0);
  CHECK_ERR(gpu->prepare(ctx, &c, &k), TASO_ERR_UNSUPPORTED);
  taso_params_t p = P();
  p.rank = 2;
  p.shape[0] = 2;
  p.shape[1] = 3;
  c = make_cfg(TASO_OP_CONST_ONE, p, NULL, 0, TASO_RT_NCHW);
  CHECK_ERR(gpu->prepare(ctx, &c, &k), TASO_ERR_UNSUPPORTED);
  p = P();
  p.rank = 2;
  p.shape[0] = 100;
  p.shape[1] = 1;
  c = make_cfg(TASO_OP_RESHAPE, p, &x, 0, TASO_RT_NHWC);
  CHECK_ERR(gpu->prepare(ctx, &c, &k), TASO_ERR_UNSUPPORTED);
  c = make_cfg(TASO_OP_RELU, P(), &x, 0, TASO_RT_NCHW);
  c.nin = 2; /* wrong buffer count */
  CHECK_ERR(gpu->prepare(ctx, &c, &k), TASO_ERR_ARG);
  CHECK(k == NULL);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One configuration timed in isolation: warm-up, then each run between syncs. */
static void test_timing(void) {
  enum { WARMUP = 8, RUNS = 32 };
  taso_tensor_t in[2] = {T(4, 8, 64, 56, 56), T(4, 64, 64, 3, 3)};
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW);
  void *buf[4] = {0};
  taso_rt_kernel_t *k = NULL;
  double ms[RUNS];
  CHECK_OK(gpu->alloc(ctx, taso_tensor_size(&c.in[0]), &buf[0]));
  CHECK_OK(gpu->alloc(ctx, taso_tensor_size(&c.in[1]), &buf[1]));
  CHECK_OK(gpu->alloc(ctx, taso_tensor_size(&c.in[2]), &buf[2]));
  CHECK_OK(gpu->alloc(ctx, taso_tensor_size(&c.out[0]), &buf[3]));
  if (!buf[0] || !buf[1] || !buf[2] || !buf[3]) goto done;
  /* defined contents: zeros would let no kernel show its data dependence */
  for (int i = 0; i < 3; i++) {
    int64_t n = taso_tensor_size(&c.in[i]);
    float *h = malloc(sizeof(float) * (size_t)n);
    CHECK(h != NULL);
    if (!h) goto done;
    for (int64_t j = 0; j < n; j++)
      h[j] = frand();
    CHECK_OK(gpu->upload(ctx, buf[i], h, n));
    free(h);
  }
  double t0 = now_ms();
  CHECK_OK(gpu->prepare(ctx, &c, &k));
  double prep = now_ms() - t0;
  if (!k) goto done;
  void *const ins[3] = {buf[0], buf[1], buf[2]}, *const outs[1] = {buf[3]};
  for (int i = 0; i < WARMUP; i++)
    CHECK_OK(gpu->run(ctx, k, ins, outs));
  CHECK_OK(gpu->sync(ctx));
  for (int i = 0; i < RUNS; i++) {
    double start = now_ms();
    CHECK_OK(gpu->run(ctx, k, ins, outs));
    CHECK_OK(gpu->sync(ctx));
    ms[i] = now_ms() - start;
  }
  qsort(ms, RUNS, sizeof ms[0], cmp_double);
  taso_rt_stats_t st = {.runs = RUNS,
                        .median = (ms[RUNS / 2 - 1] + ms[RUNS / 2]) / 2,
                        .min = ms[0],
                        .max = ms[RUNS - 1]};
  st.spread = st.median > 0 ? (st.max - st.min) / st.median : 0;
  CHECK(st.median > 0 && st.min <= st.median && st.median <= st.max);
  printf("  conv 8x64x56x56 * 64x64x3x3 +bias+relu: prepare %.1f ms; %d runs: median %.4f ms, "
         "min %.4f, max %.4f, spread %.1f%%\n",
         prep, st.runs, st.median, st.min, st.max, 100 * st.spread);
done:
  if (k) gpu->destroy(ctx, k);
  for (int i = 0; i < 4; i++)
    if (buf[i]) gpu->release(ctx, buf[i]);
}

int main(void) {
  char info[256];
  CHECK(taso_backend_find("tpu") == NULL);
  gpu = taso_backend_find("gpu");
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
  if (err != TASO_OK) return 1;
  printf("%s\n", info);
  CHECK_OK(gpu->open(0, &ctx));
  if (!ctx) return 1;
  const test_case_t cases[] = {
      TEST(test_conv2d),        TEST(test_conv2d_fused), TEST(test_gemm),
      TEST(test_pool),          TEST(test_elementwise),  TEST(test_movement),
      TEST(test_channels_last), TEST(test_refusals),     TEST(test_timing),
  };
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  gpu->close(ctx);
  return rc;
}
