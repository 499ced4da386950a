/*
 * The gpu backend (cuDNN, cuBLAS and our CUDA kernels) against the
 * reference evaluation: every operator on a few small shapes, the fused
 * convolution and matmul epilogues, channels-last configurations, the
 * configurations it must refuse, and the timing of one convolution; then
 * what makes it fast: a plan captured and replayed as one CUDA graph
 * against the same plan run step by step, the convolution algorithm kept
 * between preparations and given by a cost database's row, timing on
 * the device's clock, and convolutions through cuDNN's graph API.
 * Runs where a GPU is present; skipped (exit 77) where none is.
 */
#define _POSIX_C_SOURCE 200809L
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
  if (fuse & TASO_FUSE_CLIP) { /* both bounds inside the values' range: both clamp */
    c.p.bound[0] = -0.25f;
    c.p.bound[1] = 0.5f;
  }
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
    if (c->fuse & TASO_FUSE_CLIP)
      v = v < c->p.bound[0] ? c->p.bound[0] : v > c->p.bound[1] ? c->p.bound[1] : v;
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
  conv("conv+clip", p, x, w, TASO_FUSE_CLIP, TASO_RT_NCHW, false);
  conv("conv+bias+sum+clip", p, x, w, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_CLIP, TASO_RT_NCHW,
       false);
  conv("conv depthwise +bias+clip", p, x, T(4, 8, 1, 3, 3), TASO_FUSE_BIAS | TASO_FUSE_CLIP,
       TASO_RT_NCHW, false);
  conv("nhwc conv+bias+clip", p, x, w, TASO_FUSE_BIAS | TASO_FUSE_CLIP, TASO_RT_NHWC, false);
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
  gemm("matmul +bias+clip", TASO_OP_MATMUL, T(2, 5, 7, 0, 0), T(2, 7, 3, 0, 0),
       TASO_FUSE_BIAS | TASO_FUSE_CLIP);
  gemm("bmm +sum+clip", TASO_OP_BMM, T(3, 2, 7, 3, 0), T(3, 2, 3, 5, 0),
       TASO_FUSE_SUM | TASO_FUSE_CLIP);
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
  /* chmul and chadd (batch normalization unfolded) on every axis */
  for (int k = TASO_OP_CHMUL; k <= TASO_OP_CHADD; k++)
    for (int a = 0; a < 4; a++) {
      char label[64];
      p = P();
      p.axis = a;
      snprintf(label, sizeof label, "%s axis %d", taso_ops[k].name, a);
      op2(label, (taso_op_kind_t)k, p, x, T(1, x.dim[a], 0, 0, 0));
      if (a > 1) continue;
      snprintf(label, sizeof label, "%s [6,10] axis %d", taso_ops[k].name, a);
      op2(label, (taso_op_kind_t)k, p, T(2, 6, 10, 0, 0), T(1, a ? 10 : 6, 0, 0, 0));
    }
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
  taso_tree_join(&s.tree[1], 3, &leaf, &leaf);
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
  p = P();
  p.axis = 1;
  c = make_cfg(TASO_OP_CHMUL, p, in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc chmul axis 1", false);
  c = make_cfg(TASO_OP_CHADD, p, in, 0, TASO_RT_NHWC);
  check_config(&c, "nhwc chadd axis 1", false);
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

/* ---- the runner and the measurements on the device -------------------------- */

static int64_t output_size(const taso_model_t *m, int o) {
  return taso_tensor_size(taso_model_type(m, m->graph.outputs[o]));
}

/* Runs plan on the run-time inputs of `seed` into out (graph outputs). */
static void run_seeded(taso_rt_plan_t *plan, taso_model_t *m, uint64_t seed, float **out) {
  float *in[16] = {0};
  int n = 0;
  for (int i = 0; i < m->inputs.n && n < 16; i++) {
    if (m->is_weight[i]) continue;
    int64_t size = taso_tensor_size(&m->inputs.v[i].type);
    in[n] = malloc(sizeof(float) * (size_t)(size ? size : 1));
    CHECK(in[n] != NULL);
    if (!in[n]) goto done;
    taso_model_random_input(m, i, seed, in[n++]);
  }
  CHECK_OK(taso_rt_run(plan, (const float *const *)in, out));
done:
  for (int i = 0; i < n; i++)
    free(in[i]);
}

static float **alloc_outputs(const taso_model_t *m) {
  float **out = calloc((size_t)m->graph.noutputs + 1, sizeof *out);
  for (int o = 0; out && o < m->graph.noutputs; o++)
    out[o] = calloc((size_t)output_size(m, o) + 1, sizeof(float));
  return out;
}

static void free_outputs(const taso_model_t *m, float **out) {
  for (int o = 0; out && o < m->graph.noutputs; o++)
    free(out[o]);
  free(out);
}

/* The largest relative difference of two runs' outputs. */
static double outputs_differ(taso_model_t *m, float **a, float **b) {
  double abs_diff = 0, rel_diff = 0;
  CHECK_OK(taso_rt_output_difference(m, a, b, &abs_diff, &rel_diff));
  return rel_diff;
}

/* A plan replayed as one captured graph computes what the same plan run
 * step by step computes, for each run's own inputs (copied in through the
 * pinned buffers every time: a second seed gives other outputs), in NCHW
 * and channels last; and a fallback step keeps a plan from replaying. */
static void test_replay(void) {
  static const char *const specs[] = {"squeezenet:size=48", "resnet50:size=32",
                                      "bert:seq=16,hidden=64,heads=4,layers=2", "nasrnn:hidden=64"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    for (int nhwc = 0; nhwc < 2; nhwc++) {
      taso_model_t m;
      taso_rt_plan_t *steps = NULL, *graph = NULL;
      float **want[2] = {NULL, NULL}, **got[2] = {NULL, NULL};
      CHECK_OK(taso_model_load(specs[i], &m));
      for (int k = 0; k < 2; k++) {
        want[k] = alloc_outputs(&m);
        got[k] = alloc_outputs(&m);
        CHECK(want[k] && got[k]);
      }
      int32_t layout = nhwc ? TASO_RT_NHWC : TASO_RT_NCHW;
      taso_rt_options_t by_step = {.layout = layout, .no_capture = true},
                        replayed = {.layout = layout};
      taso_err_t err = taso_rt_plan(gpu, ctx, &m, &by_step, &steps);
      if (nhwc && err == TASO_ERR_UNSUPPORTED) { /* a model whose weights cannot be both */
        printf("  %s nhwc: %s\n", specs[i], taso_error_detail());
        goto done;
      }
      CHECK_OK(err);
      CHECK_OK(taso_rt_plan(gpu, ctx, &m, &replayed, &graph));
      if (!steps || !graph || !want[1] || !got[1]) goto done;
      const char *why = "";
      CHECK(!taso_rt_plan_replays(steps, &why) && why[0]);
      int fallbacks = 0;
      for (int s = 0; s < taso_rt_plan_steps(graph); s++) {
        taso_rt_step_info_t info;
        taso_rt_plan_step(graph, s, &info);
        fallbacks += info.fallback;
      }
      bool replays = taso_rt_plan_replays(graph, &why);
      CHECK(replays == (fallbacks == 0));
      printf("  %s %s: %d steps, %s%s\n", specs[i], nhwc ? "nhwc" : "nchw",
             taso_rt_plan_steps(graph), replays ? "replayed" : "step by step: ", why);
      for (int k = 0; k < 2; k++) {
        run_seeded(steps, &m, 1 + (uint64_t)k, want[k]);
        run_seeded(graph, &m, 1 + (uint64_t)k, got[k]);
        CHECK(outputs_differ(&m, got[k], want[k]) <= 1e-5);
      }
      CHECK(outputs_differ(&m, got[1], got[0]) > 1e-3); /* the second inputs reached the graph */
      run_seeded(graph, &m, 1, got[1]);                 /* replayed again: the first outputs */
      CHECK(outputs_differ(&m, got[1], want[0]) <= 1e-5);
      taso_rt_stats_t st = {0};
      float *in[16] = {0};
      int n = 0;
      for (int a = 0; a < m.inputs.n && n < 16; a++)
        if (!m.is_weight[a]) {
          in[n] = malloc(sizeof(float) * (size_t)taso_tensor_size(&m.inputs.v[a].type) + 4);
          if (in[n]) taso_model_random_input(&m, a, 3, in[n]);
          CHECK(in[n++] != NULL);
        }
      CHECK_OK(taso_rt_time_model(graph, (const float *const *)in, 2, 5, &st));
      CHECK(st.runs == 5 && st.median > 0);
      taso_rt_stats_t alone[512];
      if (taso_rt_plan_steps(graph) <= 512) {
        CHECK_OK(taso_rt_profile(graph, (const float *const *)in, 1, 3, alone));
        for (int s = 0; s < taso_rt_plan_steps(graph); s++)
          CHECK(alone[s].runs == 3 && alone[s].median >= 0);
      }
      for (int a = 0; a < n; a++)
        free(in[a]);
    done:
      taso_rt_plan_free(graph);
      taso_rt_plan_free(steps);
      for (int k = 0; k < 2; k++) {
        free_outputs(&m, want[k]);
        free_outputs(&m, got[k]);
      }
      taso_model_free(&m);
    }
  }
}

/* The convolution algorithm is searched once per problem and context: a
 * second preparation takes it from the table (far faster, the same
 * algorithm); TF32 math is another problem, and turning it off again
 * finds the FP32 choice kept. */
static void test_algorithm_cache(void) {
  taso_tensor_t in[2] = {T(4, 2, 48, 20, 20), T(4, 40, 48, 3, 3)};
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW);
  taso_rt_kernel_t *k[3] = {0};
  char what[3][256] = {"", "", ""};
  double ms[3];
  for (int i = 0; i < 3; i++) {
    if (i == 2) CHECK_OK(gpu->set_tf32(ctx, true));
    double t0 = now_ms();
    CHECK_OK(gpu->prepare(ctx, &c, &k[i]));
    ms[i] = now_ms() - t0;
    if (k[i]) gpu->describe(k[i], what[i], sizeof what[i]);
  }
  CHECK_OK(gpu->set_tf32(ctx, false));
  taso_rt_kernel_t *again = NULL;
  char what_again[256] = "";
  CHECK_OK(gpu->prepare(ctx, &c, &again));
  if (again) gpu->describe(again, what_again, sizeof what_again);
  printf("  prepare: searched %.2f ms (%s), kept %.2f ms, TF32 %.2f ms (%s)\n", ms[0], what[0],
         ms[1], ms[2], what[2]);
  CHECK(ms[1] < 0.5 * ms[0]);
  CHECK_STR(what[1], what[0]);
  CHECK_STR(what_again, what[0]);
  CHECK(strstr(what[0], "fma math") != NULL); /* FP32 unless asked */
  for (int i = 0; i < 3; i++)
    if (k[i]) gpu->destroy(ctx, k[i]);
  if (again) gpu->destroy(ctx, again);
}

/* A call given by the reuse hook (a cost database's row) is made without
 * timing: a configuration of the same call (its weight marked cold, as a
 * model's is) prepares with the given algorithm, far faster than one that
 * searches, and runs right; what is not a convolution's FP32 call is not
 * taken, and with TF32 on the given calls are not used. */
static void test_reused_call(void) {
  taso_tensor_t in[2] = {T(4, 2, 48, 20, 20), T(4, 40, 48, 3, 3)};
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW);
  taso_rt_config_t marked = c, other = c;
  marked.cold = 1u << 1;
  other.fuse = TASO_FUSE_BIAS; /* another call: searched */
  char key[512], other_key[512];
  taso_rt_config_key(&marked, key, sizeof key);
  taso_rt_config_key(&other, other_key, sizeof other_key);
  CHECK(gpu->reuse != NULL);
  if (!gpu->reuse) return;
  taso_rt_ctx_t *own = ctx, *fresh = NULL;
  CHECK_OK(gpu->open(0, &fresh));
  if (!fresh) return;
  const char *call = "cudnnConvolutionForward IMPLICIT_GEMM + epilogue kernel, fma math";
  CHECK(gpu->reuse(fresh, key, call));
  CHECK(!gpu->reuse(fresh, other_key, "cublasSgemm"));
  CHECK(!gpu->reuse(fresh, other_key, "cudnnConvolutionForward IMPLICIT_GEMM, tensor-op math"));
  CHECK(!gpu->reuse(fresh, other_key, "cudnnConvolutionForward NO_SUCH_ALGO, fma math"));
  taso_rt_kernel_t *k[2] = {0};
  char what[2][256] = {"", ""};
  double ms[2];
  const taso_rt_config_t *cfg[2] = {&c, &other};
  for (int i = 0; i < 2; i++) {
    double t0 = now_ms();
    CHECK_OK(gpu->prepare(fresh, cfg[i], &k[i]));
    ms[i] = now_ms() - t0;
    if (k[i]) gpu->describe(k[i], what[i], sizeof what[i]);
  }
  printf("  reused: %.2f ms (%s); searched %.2f ms (%s)\n", ms[0], what[0], ms[1], what[1]);
  CHECK_STR(what[0], call);
  CHECK(ms[0] < 0.5 * ms[1]);
  ctx = fresh; /* the reused call runs right */
  check_config(&c, "conv 2x48x20x20 reused call", false);
  CHECK_OK(gpu->set_tf32(fresh, true));
  taso_rt_kernel_t *tf = NULL;
  double t0 = now_ms();
  CHECK_OK(gpu->prepare(fresh, &c, &tf));
  printf("  TF32, given calls unused: %.2f ms\n", now_ms() - t0);
  if (tf) gpu->destroy(fresh, tf);
  ctx = own;
  for (int i = 0; i < 2; i++)
    if (k[i]) gpu->destroy(fresh, k[i]);
  gpu->close(fresh);
}

/* The device's clock: marks around a run give its time; configurations
 * (cold operands flushed on the device, in place, a cuBLAS call) are
 * timed with it, on the context's scratch buffers, in about the host's
 * time less the host's own costs. */
static void test_device_timing(void) {
  CHECK(gpu->mark_start && gpu->mark_stop && gpu->elapsed && gpu->flush_cache && gpu->scratch);
  CHECK(gpu->begin_capture && gpu->end_capture && gpu->replay && gpu->graph_free);
  if (!gpu->mark_start || !gpu->elapsed || !gpu->scratch) return;
  taso_tensor_t in[2] = {T(4, 8, 64, 56, 56), T(4, 64, 64, 3, 3)};
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW);
  /* the raw marks, around a run on scratch buffers */
  void *buf[4] = {0};
  taso_rt_kernel_t *k = NULL;
  for (int i = 0; i < 4; i++) {
    CHECK_OK(gpu->scratch(ctx, i, taso_tensor_size(i < 3 ? &c.in[i] : &c.out[0]), &buf[i]));
    CHECK(buf[i] != NULL);
  }
  CHECK_OK(gpu->prepare(ctx, &c, &k));
  double host = 0, device = 0;
  if (k && buf[3]) {
    void *const ins[3] = {buf[0], buf[1], buf[2]}, *const outs[1] = {buf[3]};
    CHECK_OK(gpu->run(ctx, k, ins, outs));
    CHECK_OK(gpu->sync(ctx));
    double t0 = now_ms();
    CHECK_OK(gpu->run(ctx, k, ins, outs));
    CHECK_OK(gpu->sync(ctx));
    host = now_ms() - t0;
    CHECK_OK(gpu->mark_start(ctx));
    CHECK_OK(gpu->run(ctx, k, ins, outs));
    CHECK_OK(gpu->mark_stop(ctx));
    CHECK_OK(gpu->elapsed(ctx, &device));
    CHECK(device > 0 && device <= 1.5 * host + 0.05);
  }
  if (k) gpu->destroy(ctx, k);
  taso_rt_stats_t warm = {0}, cold = {0};
  CHECK_OK(taso_rt_time_config(gpu, ctx, &c, 2, 9, &warm));
  c.cold = 1u << 1 | 1u << 2; /* the weight and bias, as a model's */
  CHECK_OK(taso_rt_time_config(gpu, ctx, &c, 2, 9, &cold));
  CHECK(warm.runs == 9 && warm.min > 0 && warm.median <= 1.5 * host + 0.05);
  CHECK(cold.runs == 9 && cold.min > 0 && cold.median < 1000);
  printf("  conv 8x64x56x56 +bias+relu: host %.4f ms, marks %.4f ms, timed warm %.4f ms, cold "
         "%.4f ms\n",
         host, device, warm.median, cold.median);
  double samples[40];
  int n = 0;
  char algorithm[128] = "";
  c.fuse |= TASO_FUSE_SUM;
  c.in[c.nin++] = c.out[0];
  c.in_place = c.nin; /* the summand's buffer is the result's */
  CHECK_OK(taso_rt_time_config_samples(gpu, ctx, &c, 2, 5, 40, 0.05, samples, &n, algorithm,
                                       sizeof algorithm));
  CHECK(n >= 5 && algorithm[0]);
  for (int i = 0; i < n; i++)
    CHECK(samples[i] > 0 && samples[i] < 1000);
  taso_tensor_t mm[2] = {T(2, 64, 1024, 0, 0), T(2, 1024, 1024, 0, 0)};
  taso_rt_config_t g = make_cfg(TASO_OP_MATMUL, P(), mm, TASO_FUSE_BIAS, TASO_RT_NCHW);
  g.cold = 1u << 1 | 1u << 2;
  taso_rt_stats_t st = {0};
  CHECK_OK(taso_rt_time_config(gpu, ctx, &g, 2, 9, &st));
  CHECK(st.runs == 9 && st.min > 0 && st.median < 1000);
  printf("  matmul 64x1024 * 1024x1024 +bias, weight cold: %.4f ms\n", st.median);
  /* the per-step term: a step inside a replayed run against the same step
   * timed alone between the marks (negative: the marks' own latency) */
  double dispatch[9];
  CHECK_OK(taso_rt_time_dispatch(gpu, ctx, 64, 2, 9, dispatch));
  qsort(dispatch, 9, sizeof *dispatch, cmp_double);
  for (int i = 0; i < 9; i++)
    CHECK(isfinite(dispatch[i]) && fabs(dispatch[i]) < 1);
  printf("  dispatch (64 relu 1x1024 replayed, per step, less one alone): median %.4f ms, "
         "min %.4f, max %.4f\n",
         dispatch[4], dispatch[0], dispatch[8]);
}

/* Runs k on x, w, bias and sum into y, where sum may be y itself (in
 * place: uploaded there first) and x may start one float into its buffer
 * (not aligned as the graph API's plans declare); returns y on the host. */
static void run_conv_buffers(taso_rt_ctx_t *g, taso_rt_kernel_t *k, const taso_rt_config_t *c,
                             float *const *host, bool in_place, bool offset, float *y) {
  void *buf[4] = {0}, *in[4] = {0}, *out[1] = {0};
  int64_t ny = taso_tensor_size(&c->out[0]);
  for (int i = 0; i < 4; i++) {
    int64_t n = taso_tensor_size(&c->in[i]);
    CHECK_OK(gpu->alloc(g, n + 1, &buf[i]));
    in[i] = i == 0 && offset ? (float *)buf[i] + 1 : buf[i];
    if (buf[i]) CHECK_OK(gpu->upload(g, in[i], host[i], n));
  }
  void *own = NULL;
  if (!in_place) CHECK_OK(gpu->alloc(g, ny, &own));
  out[0] = in_place ? in[3] : own;
  if (out[0] && buf[0] && buf[1] && buf[2] && buf[3]) {
    CHECK_OK(gpu->run(g, k, in, out));
    CHECK_OK(gpu->sync(g));
    CHECK_OK(gpu->download(g, y, out[0], ny));
  }
  for (int i = 0; i < 4; i++)
    if (buf[i]) gpu->release(g, buf[i]);
  if (own) gpu->release(g, own);
}

/* The graph API's engines (TASO_GPU_CONV_API=graph: wherever one runs a
 * convolution; TASO_GPU_CONV_FUSED=1: fused graphs too): the convolutions
 * above against the reference; a run with the summand in the output's
 * buffer, and one whose input is not aligned
 * for the plan (the legacy call beside it), against a plain run; a
 * convolution names its engine, which the reuse hook of a fresh context
 * takes back, prepares without timing, and runs right. */
static void test_graph_engines(void) {
  taso_rt_ctx_t *own = ctx, *g = NULL, *fresh = NULL;
  setenv("TASO_GPU_CONV_API", "graph", 1);
  setenv("TASO_GPU_CONV_FUSED", "1", 1);
  CHECK_OK(gpu->open(0, &g));
  CHECK_OK(gpu->open(0, &fresh));
  unsetenv("TASO_GPU_CONV_API");
  unsetenv("TASO_GPU_CONV_FUSED");
  if (!g || !fresh) {
    if (g) gpu->close(g);
    if (fresh) gpu->close(fresh);
    return;
  }
  ctx = g;
  test_conv2d();
  test_conv2d_fused();

  taso_tensor_t in[2] = {T(4, 1, 8, 9, 9), T(4, 16, 8, 3, 3)};
  taso_rt_config_t c = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, TASO_RT_NCHW);
  taso_rt_kernel_t *k = NULL;
  char what[512] = "";
  CHECK_OK(gpu->prepare(g, &c, &k));
  if (k) gpu->describe(k, what, sizeof what);
  printf("  graph call: %s\n", what);
  CHECK(strncmp(what, "cudnnBackendExecute engine ", 27) == 0);
  CHECK(strstr(what, " + epilogue kernel, fma math") != NULL);
  float *host[4] = {0}, *y[3] = {0};
  int64_t ny = taso_tensor_size(&c.out[0]);
  for (int i = 0; i < 4; i++) {
    int64_t n = taso_tensor_size(&c.in[i]);
    host[i] = malloc(sizeof(float) * (size_t)n);
    for (int64_t j = 0; host[i] && j < n; j++)
      host[i][j] = frand();
  }
  for (int i = 0; i < 3; i++)
    y[i] = calloc((size_t)ny, sizeof(float));
  if (k && host[0] && host[1] && host[2] && host[3] && y[0] && y[1] && y[2]) {
    run_conv_buffers(g, k, &c, host, false, false, y[0]);
    run_conv_buffers(g, k, &c, host, true, false, y[1]);
    run_conv_buffers(g, k, &c, host, false, true, y[2]);
    double in_place = 0, offset = 0;
    for (int64_t j = 0; j < ny; j++) {
      in_place = fmax(in_place, fabs(y[1][j] - y[0][j]));
      offset = fmax(offset, fabs(y[2][j] - y[0][j]));
    }
    printf("  summand in place: %.2e from the plain run; input not aligned: %.2e\n", in_place,
           offset);
    CHECK(in_place <= 1e-5);
    CHECK(offset <= 1e-4);
  }
  for (int i = 0; i < 4; i++)
    free(host[i]);
  for (int i = 0; i < 3; i++)
    free(y[i]);

  char key[512], again_what[512] = "";
  taso_rt_config_key(&c, key, sizeof key);
  if (fresh && k) {
    CHECK(gpu->reuse(fresh, key, what));
    CHECK(!gpu->reuse(fresh, key, "cudnnBackendExecute engine x, fma math"));
    CHECK(!gpu->reuse(fresh, key, "cudnnBackendExecute engine 3 knobs 1=, fma math"));
    taso_rt_kernel_t *again = NULL;
    double t0 = now_ms();
    CHECK_OK(gpu->prepare(fresh, &c, &again));
    double ms = now_ms() - t0;
    if (again) gpu->describe(again, again_what, sizeof again_what);
    printf("  given engine prepared in %.2f ms: %s\n", ms, again_what);
    CHECK_STR(again_what, what);
    if (again) gpu->destroy(fresh, again);
    ctx = fresh;
    check_config(&c, "conv+bias+sum+relu given engine", false);
    /* a convolution with a bias and a ReLU: where the fused graph won,
     * its engine is given back as such */
    taso_rt_config_t f = make_cfg(TASO_OP_CONV2D, window(1, 1, TASO_PAD_SAME, 0, 0), in,
                                  TASO_FUSE_BIAS | TASO_FUSE_RELU, TASO_RT_NCHW);
    taso_rt_kernel_t *kf = NULL, *kf_again = NULL;
    char fused_what[512] = "", fused_again[512] = "", fused_key[512];
    CHECK_OK(gpu->prepare(g, &f, &kf));
    if (kf) gpu->describe(kf, fused_what, sizeof fused_what);
    printf("  conv+bias+relu graph call: %s\n", fused_what);
    taso_rt_config_key(&f, fused_key, sizeof fused_key);
    if (strstr(fused_what, "fused engine") && gpu->reuse(fresh, fused_key, fused_what)) {
      CHECK_OK(gpu->prepare(fresh, &f, &kf_again));
      if (kf_again) gpu->describe(kf_again, fused_again, sizeof fused_again);
      CHECK_STR(fused_again, fused_what);
      check_config(&f, "conv+bias+relu given fused engine", false);
    }
    if (kf) gpu->destroy(g, kf);
    if (kf_again) gpu->destroy(fresh, kf_again);
    CHECK_OK(gpu->set_tf32(fresh, true)); /* TF32: the engines with tensor cores too */
    check_config(&c, "conv+bias+sum+relu TF32", false);
    taso_rt_kernel_t *tf = NULL;
    CHECK_OK(gpu->prepare(fresh, &c, &tf));
    if (tf) {
      gpu->describe(tf, again_what, sizeof again_what);
      printf("  TF32 call: %s\n", again_what);
      gpu->destroy(fresh, tf);
    }
  }
  if (k) gpu->destroy(g, k);
  if (fresh) gpu->close(fresh);
  gpu->close(g);
  ctx = own;
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
      TEST(test_conv2d),        TEST(test_conv2d_fused),    TEST(test_gemm),
      TEST(test_pool),          TEST(test_elementwise),     TEST(test_movement),
      TEST(test_channels_last), TEST(test_refusals),        TEST(test_timing),
      TEST(test_replay),        TEST(test_algorithm_cache), TEST(test_reused_call),
      TEST(test_device_timing), TEST(test_graph_engines),
  };
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  gpu->close(ctx);
  return rc;
}
