/*
 * The runtime: every operator configuration the cpu backend runs agrees
 * with the reference backend within float32 tolerance (shapes, groups,
 * strides, padding, broadcasting, fused epilogues, layouts); a small CNN
 * built through the model builder runs on both, fused and not, and agrees;
 * configurations the cpu backend has no call for fall back to the
 * reference kernel. No elapsed-time asserts: timing is only exercised.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"
#include "test.h"

static const taso_backend_t *ref, *cpu;
static taso_rt_ctx_t *ref_ctx, *cpu_ctx;

static taso_tensor_t shape(int rank, int32_t a, int32_t b, int32_t c, int32_t d) {
  int32_t dim[4] = {a, b, c, d};
  return taso_tensor_make(rank, dim);
}

/* A configuration of kind on the given operands, its results inferred. */
static taso_rt_config_t config(taso_op_kind_t kind, const taso_params_t *p, int n,
                               const taso_tensor_t *in) {
  taso_rt_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.kind = kind;
  cfg.p = p ? *p : taso_params_default();
  cfg.nin = n;
  cfg.nout = taso_ops[kind].outputs;
  for (int i = 0; i < n; i++)
    cfg.in[i] = in[i];
  CHECK_OK(taso_op_infer(kind, &cfg.p, in, cfg.out));
  return cfg;
}

/* Adds fused epilogue operands: a bias of `channels` and/or a summand. */
static taso_rt_config_t fused(taso_rt_config_t cfg, unsigned fuse, int32_t channels) {
  cfg.fuse = fuse;
  if (fuse & TASO_FUSE_CLIP) { /* both bounds inside the values' range: both clamp */
    cfg.p.bound[0] = -0.25f;
    cfg.p.bound[1] = 0.5f;
  }
  if (fuse & TASO_FUSE_BIAS) cfg.in[cfg.nin++] = taso_tensor_make(1, &channels);
  if (fuse & TASO_FUSE_SUM) cfg.in[cfg.nin++] = cfg.out[0];
  return cfg;
}

static void fill(float *x, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

/* Runs cfg on one backend with the given host operands; results to host. */
static bool sum_in_place; /* run_on passes the summand's buffer as the output */

static taso_err_t run_on(const taso_backend_t *be, taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg,
                         float **host_in, float **host_out) {
  void *in[TASO_RT_MAX_IN] = {0}, *out[2] = {0};
  taso_rt_kernel_t *k = NULL;
  taso_err_t err = be->prepare(ctx, cfg, &k);
  for (int i = 0; i < cfg->nin && err == TASO_OK; i++) {
    err = be->alloc(ctx, taso_tensor_size(&cfg->in[i]), &in[i]);
    if (err == TASO_OK) err = be->upload(ctx, in[i], host_in[i], taso_tensor_size(&cfg->in[i]));
  }
  for (int o = 0; o < cfg->nout && err == TASO_OK; o++)
    err = be->alloc(ctx, taso_tensor_size(&cfg->out[o]), &out[o]);
  void *run_out[2] = {out[0], out[1]};
  if (sum_in_place && (cfg->fuse & TASO_FUSE_SUM)) run_out[0] = in[cfg->nin - 1];
  if (err == TASO_OK) err = be->run(ctx, k, in, run_out);
  if (err == TASO_OK) err = be->sync(ctx);
  for (int o = 0; o < cfg->nout && err == TASO_OK; o++)
    err = be->download(ctx, host_out[o], run_out[o], taso_tensor_size(&cfg->out[o]));
  if (k) be->destroy(ctx, k);
  for (int i = 0; i < TASO_RT_MAX_IN; i++)
    if (in[i]) be->release(ctx, in[i]);
  for (int o = 0; o < 2; o++)
    if (out[o]) be->release(ctx, out[o]);
  return err;
}

/* Largest |a - b| relative to max(1, largest |b|). */
static double difference(const float *a, const float *b, int64_t n) {
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  return diff / scale;
}

static taso_err_t compare_one(const char *what, taso_rt_config_t config_copy);

/* cpu against reference on seeded operands, in the configuration's layout
 * and, where it has 4-d operands, channels last too; returns the first
 * error of cpu's. */
static taso_err_t compare(const char *what, taso_rt_config_t cfg) {
  taso_err_t err = compare_one(what, cfg);
  bool four_d = false;
  for (int i = 0; i < cfg.nin + cfg.nout; i++)
    four_d |= (i < cfg.nin ? cfg.in[i].rank : cfg.out[i - cfg.nin].rank) == 4;
  if (err != TASO_OK || cfg.layout != TASO_RT_NCHW || !four_d) return err;
  cfg.layout = TASO_RT_NHWC;
  char text[160];
  snprintf(text, sizeof text, "%s (nhwc)", what);
  return compare_one(text, cfg);
}

static taso_err_t compare_one(const char *what, taso_rt_config_t config_copy) {
  const taso_rt_config_t *cfg = &config_copy;
  float *in[TASO_RT_MAX_IN] = {0}, *want[2] = {0}, *got[2] = {0};
  for (int i = 0; i < cfg->nin; i++) {
    int64_t n = taso_tensor_size(&cfg->in[i]);
    in[i] = malloc(sizeof(float) * (size_t)n);
    fill(in[i], n, 17u + (uint64_t)i);
  }
  for (int o = 0; o < cfg->nout; o++) {
    want[o] = calloc((size_t)taso_tensor_size(&cfg->out[o]), sizeof(float));
    got[o] = calloc((size_t)taso_tensor_size(&cfg->out[o]), sizeof(float));
  }
  CHECK_OK(run_on(ref, ref_ctx, cfg, in, want));
  taso_err_t err = run_on(cpu, cpu_ctx, cfg, in, got);
  if (err == TASO_OK) {
    for (int o = 0; o < cfg->nout; o++) {
      double d = difference(got[o], want[o], taso_tensor_size(&cfg->out[o]));
      if (d > 1e-4) fprintf(stderr, "%s: output %d differs by %g\n", what, o, d);
      CHECK(d <= 1e-4);
    }
  } else if (err != TASO_ERR_UNSUPPORTED) {
    fprintf(stderr, "%s: %s\n", what, taso_error_detail());
  }
  for (int i = 0; i < cfg->nin; i++)
    free(in[i]);
  for (int o = 0; o < cfg->nout; o++) {
    free(want[o]);
    free(got[o]);
  }
  return err;
}

#define AGREE(what, cfg) CHECK_OK(compare(what, cfg))

static void test_probe(void) {
  char info[256];
  CHECK(ref && cpu);
  CHECK_OK(ref->probe(info, sizeof info));
  CHECK_OK(cpu->probe(info, sizeof info));
  CHECK(strstr(info, "oneDNN") != NULL);
  CHECK(taso_backend_find("tpu") == NULL);
}

static void test_conv2d(void) {
  taso_params_t p = taso_params_default();
  taso_tensor_t a[2] = {shape(4, 2, 8, 10, 10), shape(4, 16, 8, 3, 3)};
  taso_rt_config_t c = config(TASO_OP_CONV2D, &p, 2, a);
  AGREE("conv same", c);
  AGREE("conv bias+relu", fused(c, TASO_FUSE_BIAS | TASO_FUSE_RELU, 16));
  AGREE("conv bias+sum+relu", fused(c, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, 16));
  AGREE("conv sum", fused(c, TASO_FUSE_SUM, 16));
  sum_in_place = true;
  AGREE("conv bias+sum+relu in place",
        fused(c, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, 16));
  sum_in_place = false;
  c.layout = TASO_RT_BLOCKED;
  AGREE("conv blocked", c);
  AGREE("conv blocked bias+sum+relu",
        fused(c, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_RELU, 16));
  sum_in_place = true;
  AGREE("conv blocked sum in place", fused(c, TASO_FUSE_SUM | TASO_FUSE_RELU, 16));
  sum_in_place = false;
  AGREE("conv blocked bias+clip", fused(c, TASO_FUSE_BIAS | TASO_FUSE_CLIP, 16));
  c.layout = TASO_RT_NCHW;
  AGREE("conv clip", fused(c, TASO_FUSE_CLIP, 16));
  AGREE("conv bias+sum+clip", fused(c, TASO_FUSE_BIAS | TASO_FUSE_SUM | TASO_FUSE_CLIP, 16));
  p.act = TASO_ACT_RELU;
  AGREE("conv act=relu", config(TASO_OP_CONV2D, &p, 2, a));

  p = taso_params_default();
  p.stride[0] = p.stride[1] = 2;
  p.pad = TASO_PAD_VALID;
  taso_tensor_t g[2] = {shape(4, 1, 8, 9, 9), shape(4, 8, 2, 3, 3)}; /* 4 groups */
  c = config(TASO_OP_CONV2D, &p, 2, g);
  AGREE("grouped conv s2 valid", c);
  AGREE("grouped conv bias+relu", fused(c, TASO_FUSE_BIAS | TASO_FUSE_RELU, 8));
  c.layout = TASO_RT_BLOCKED;
  AGREE("grouped conv blocked", c);

  p = taso_params_default();
  taso_tensor_t dw[2] = {shape(4, 1, 8, 7, 7), shape(4, 8, 1, 3, 3)}; /* depthwise */
  AGREE("depthwise conv", config(TASO_OP_CONV2D, &p, 2, dw));
  c = config(TASO_OP_CONV2D, &p, 2, dw); /* MobileNet's depthwise conv + ReLU6 */
  AGREE("depthwise conv bias+clip", fused(c, TASO_FUSE_BIAS | TASO_FUSE_CLIP, 8));
  c.layout = TASO_RT_BLOCKED;
  AGREE("depthwise conv blocked clip", fused(c, TASO_FUSE_CLIP, 8));

  p.pad = TASO_PAD_EXPLICIT;
  p.pads[0] = 1, p.pads[1] = 0, p.pads[2] = 2, p.pads[3] = 1;
  p.stride[0] = 2, p.stride[1] = 1;
  taso_tensor_t e[2] = {shape(4, 1, 8, 11, 9), shape(4, 4, 8, 3, 3)};
  AGREE("conv explicit pads", config(TASO_OP_CONV2D, &p, 2, e));

  p = taso_params_default();
  p.stride[0] = p.stride[1] = 2;
  taso_tensor_t s[2] = {shape(4, 1, 6, 7, 8), shape(4, 5, 6, 1, 1)};
  AGREE("1x1 conv s2 same", config(TASO_OP_CONV2D, &p, 2, s));
  taso_tensor_t s7[2] = {shape(4, 1, 3, 20, 20), shape(4, 8, 3, 7, 7)};
  AGREE("7x7 conv s2 same", config(TASO_OP_CONV2D, &p, 2, s7));
}

static void test_matmul(void) {
  taso_tensor_t a[2] = {shape(2, 7, 5, 0, 0), shape(2, 5, 9, 0, 0)};
  taso_rt_config_t c = config(TASO_OP_MATMUL, NULL, 2, a);
  AGREE("matmul", c);
  AGREE("matmul bias", fused(c, TASO_FUSE_BIAS, 9));
  AGREE("matmul bias+relu", fused(c, TASO_FUSE_BIAS | TASO_FUSE_RELU, 9));
  AGREE("matmul sum+relu", fused(c, TASO_FUSE_SUM | TASO_FUSE_RELU, 9));
  AGREE("matmul bias+clip", fused(c, TASO_FUSE_BIAS | TASO_FUSE_CLIP, 9));
  sum_in_place = true;
  AGREE("matmul sum+relu in place", fused(c, TASO_FUSE_SUM | TASO_FUSE_RELU, 9));
  AGREE("matmul sum+clip in place", fused(c, TASO_FUSE_SUM | TASO_FUSE_CLIP, 9));
  sum_in_place = false;
  taso_tensor_t b[2] = {shape(3, 3, 4, 5, 0), shape(3, 3, 5, 6, 0)};
  c = config(TASO_OP_BMM, NULL, 2, b);
  AGREE("bmm", c);
  AGREE("bmm bias+relu", fused(c, TASO_FUSE_BIAS | TASO_FUSE_RELU, 6));
  taso_params_t p = taso_params_default();
  p.act = TASO_ACT_RELU;
  AGREE("matmul act=relu", config(TASO_OP_MATMUL, &p, 2, a));
}

static void test_pool(void) {
  taso_tensor_t x = shape(4, 2, 3, 11, 10);
  for (int kind = TASO_OP_POOL_AVG; kind <= TASO_OP_POOL_MAX; kind++) {
    taso_params_t p = taso_params_default();
    p.kernel[0] = p.kernel[1] = 3;
    p.stride[0] = p.stride[1] = 2;
    AGREE("pool 3x3 s2 same", config(kind, &p, 1, &x));
    p.pad = TASO_PAD_VALID;
    AGREE("pool 3x3 s2 valid", config(kind, &p, 1, &x));
    p.pad = TASO_PAD_EXPLICIT;
    p.pads[0] = 1, p.pads[1] = 2, p.pads[2] = 0, p.pads[3] = 1;
    AGREE("pool explicit pads", config(kind, &p, 1, &x));
    p.exclude_pad = kind == TASO_OP_POOL_AVG;
    AGREE("pool explicit pads, exclude_pad", config(kind, &p, 1, &x));
    p = taso_params_default();
    p.kernel[0] = 2, p.kernel[1] = 4;
    p.stride[0] = 1, p.stride[1] = 3;
    p.exclude_pad = kind == TASO_OP_POOL_AVG;
    AGREE("pool 2x4 s1x3 same exclude_pad", config(kind, &p, 1, &x));
  }
}

static void test_elementwise(void) {
  taso_tensor_t x = shape(4, 2, 3, 4, 5), v = shape(2, 6, 7, 0, 0);
  taso_params_t p = taso_params_default();
  int kinds[] = {TASO_OP_RELU, TASO_OP_SIGMOID, TASO_OP_TANH, TASO_OP_CLIP};
  p.bound[0] = -0.25f, p.bound[1] = 0.5f;
  for (int i = 0; i < 4; i++) {
    AGREE(taso_ops[kinds[i]].name, config(kinds[i], &p, 1, &x));
    AGREE(taso_ops[kinds[i]].name, config(kinds[i], &p, 1, &v));
  }
  taso_tensor_t same[2] = {x, x};
  AGREE("ewadd", config(TASO_OP_EWADD, NULL, 2, same));
  AGREE("ewmul", config(TASO_OP_EWMUL, NULL, 2, same));
  taso_tensor_t sc[2] = {x, taso_tensor_make(0, NULL)};
  AGREE("smul", config(TASO_OP_SMUL, NULL, 2, sc));
  taso_tensor_t chan[2] = {x, shape(3, 3, 1, 1, 0)};
  AGREE("add per channel", config(TASO_OP_ADD, NULL, 2, chan));
  taso_tensor_t last[2] = {shape(1, 5, 0, 0, 0), x};
  AGREE("add broadcast first", config(TASO_OP_ADD, NULL, 2, last));
  taso_tensor_t mid[2] = {shape(2, 4, 1, 0, 0), x};
  AGREE("mul broadcast first", config(TASO_OP_MUL, NULL, 2, mid));
  taso_tensor_t lead[2] = {x, shape(4, 1, 3, 4, 5)};
  AGREE("mul broadcast leading", config(TASO_OP_MUL, NULL, 2, lead));
  taso_tensor_t both[2] = {shape(2, 4, 1, 0, 0), shape(2, 1, 5, 0, 0)};
  taso_rt_config_t c = config(TASO_OP_ADD, NULL, 2, both);
  CHECK_ERR(compare("add both broadcast", c), TASO_ERR_UNSUPPORTED);
  taso_tensor_t bn[3] = {x, shape(1, 3, 0, 0, 0), shape(1, 3, 0, 0, 0)};
  AGREE("batchnorm", config(TASO_OP_BATCHNORM, NULL, 3, bn));
  taso_tensor_t bn2[3] = {shape(2, 4, 6, 0, 0), shape(1, 6, 0, 0, 0), shape(1, 6, 0, 0, 0)};
  AGREE("batchnorm rank 2", config(TASO_OP_BATCHNORM, NULL, 3, bn2));
  /* chmul and chadd on every axis, rank 4 and rank 2 */
  taso_params_t q = taso_params_default();
  for (int k = TASO_OP_CHMUL; k <= TASO_OP_CHADD; k++)
    for (q.axis = 0; q.axis < 4; q.axis++) {
      taso_tensor_t cv[2] = {x, shape(1, x.dim[q.axis], 0, 0, 0)};
      AGREE(taso_ops[k].name, config((taso_op_kind_t)k, &q, 2, cv));
      if (q.axis >= 2) continue;
      taso_tensor_t cv2[2] = {bn2[0], shape(1, bn2[0].dim[q.axis], 0, 0, 0)};
      AGREE(taso_ops[k].name, config((taso_op_kind_t)k, &q, 2, cv2));
    }
  p = taso_params_default();
  for (p.axis = 0; p.axis < 4; p.axis += 3)
    AGREE("softmax", config(TASO_OP_SOFTMAX, &p, 1, &x));
  p.axis = 1;
  AGREE("softmax rank 2", config(TASO_OP_SOFTMAX, &p, 1, &v));
}

static void test_data_movement(void) {
  taso_params_t p = taso_params_default();
  taso_tensor_t cat[2] = {shape(4, 2, 3, 4, 5), shape(4, 2, 6, 4, 5)};
  p.axis = 1;
  AGREE("concat axis 1", config(TASO_OP_CONCAT, &p, 2, cat));
  taso_tensor_t cat3[2] = {shape(3, 2, 3, 4, 0), shape(3, 2, 3, 1, 0)};
  p.axis = 2;
  AGREE("concat last axis", config(TASO_OP_CONCAT, &p, 2, cat3));
  /* split's shape rule needs a split tree; the runtime ignores trees, so
   * its configuration is spelled out */
  taso_rt_config_t c;
  memset(&c, 0, sizeof c);
  c.kind = TASO_OP_SPLIT;
  c.p = taso_params_default();
  c.p.axis = 1;
  c.nin = 1, c.nout = 2;
  c.in[0] = shape(3, 2, 6, 3, 0);
  c.out[0] = shape(3, 2, 2, 3, 0);
  c.out[1] = shape(3, 2, 4, 3, 0);
  AGREE("split", c);
  p = taso_params_default();
  p.axis = 3, p.at = 1;
  taso_tensor_t x = shape(4, 2, 3, 4, 5);
  AGREE("split_at last axis", config(TASO_OP_SPLIT_AT, &p, 1, &x));
  p.axis = 0, p.at = 1;
  AGREE("split_at axis 0", config(TASO_OP_SPLIT_AT, &p, 1, &x));
  p = taso_params_default();
  p.rank = 2, p.shape[0] = 6, p.shape[1] = 20;
  AGREE("reshape", config(TASO_OP_RESHAPE, &p, 1, &x));
  p.rank = 4, p.shape[0] = 2, p.shape[1] = 5, p.shape[2] = 3, p.shape[3] = 4;
  AGREE("reshape 4-d to 4-d", config(TASO_OP_RESHAPE, &p, 1, &x));
  taso_tensor_t flat = shape(2, 6, 20, 0, 0);
  AGREE("reshape 2-d to 4-d", config(TASO_OP_RESHAPE, &p, 1, &flat));
  p = taso_params_default();
  p.perm[0] = 0, p.perm[1] = 2, p.perm[2] = 3, p.perm[3] = 1;
  AGREE("permute nchw->nhwc", config(TASO_OP_PERMUTE, &p, 1, &x));
  p.perm[0] = 3, p.perm[1] = 1, p.perm[2] = 0, p.perm[3] = 2;
  AGREE("permute 3102", config(TASO_OP_PERMUTE, &p, 1, &x));
  taso_tensor_t m = shape(2, 3, 5, 0, 0);
  AGREE("transpose", config(TASO_OP_TRANSPOSE, NULL, 1, &m));
}

static void test_unsupported(void) {
  /* enlarge is a substitution-only operator: no oneDNN call */
  taso_tensor_t e = shape(4, 4, 2, 1, 1);
  taso_params_t p = taso_params_default();
  p.kernel[0] = p.kernel[1] = 3;
  taso_rt_config_t c = config(TASO_OP_ENLARGE, &p, 1, &e);
  taso_rt_kernel_t *k = NULL;
  CHECK_ERR(cpu->prepare(cpu_ctx, &c, &k), TASO_ERR_UNSUPPORTED);
  CHECK(strstr(taso_error_detail(), "enlarge") != NULL);
  /* a fused epilogue on an operator without one */
  taso_tensor_t x = shape(2, 3, 4, 0, 0);
  c = config(TASO_OP_RELU, NULL, 1, &x);
  c.fuse = TASO_FUSE_RELU;
  CHECK_ERR(cpu->prepare(cpu_ctx, &c, &k), TASO_ERR_UNSUPPORTED);
}

/* ---- a model through the builder ------------------------------------------- */

static taso_ref_t weight(taso_model_t *m, const char *name, int rank, int32_t a, int32_t b,
                         int32_t c, int32_t d) {
  int32_t dim[4] = {a, b, c, d};
  taso_ref_t r = -1;
  CHECK_OK(taso_model_input(m, name, true, rank, dim, NULL, &r));
  return r;
}

static taso_ref_t node(taso_model_t *m, taso_op_kind_t kind, const taso_params_t *p, taso_ref_t a,
                       taso_ref_t b) {
  taso_params_t d = taso_params_default();
  taso_ref_t in[3] = {a, b, -1}, r = -1;
  CHECK_OK(taso_model_node(m, kind, p ? p : &d, in, &r));
  return r;
}

/* conv (+bias, relu), max pool, two branches concatenated, a residual
 * conv, average pool, reshape, matmul (+bias, relu), softmax; and an
 * operator the cpu backend lacks when with_fallback. */
static void build_cnn(taso_model_t *m, bool with_fallback) {
  taso_model_init(m, "cnn");
  int32_t xd[4] = {1, 3, 16, 16};
  taso_ref_t x;
  CHECK_OK(taso_model_input(m, "image", false, 4, xd, NULL, &x));
  taso_params_t p = taso_params_default(), pool = taso_params_default();
  taso_ref_t t = node(m, TASO_OP_CONV2D, &p, x, weight(m, "c1", 4, 8, 3, 3, 3));
  t = node(m, TASO_OP_ADD, NULL, t, weight(m, "b1", 4, 1, 8, 1, 1));
  t = node(m, TASO_OP_RELU, NULL, t, -1);
  pool.kernel[0] = pool.kernel[1] = 2;
  pool.stride[0] = pool.stride[1] = 2;
  t = node(m, TASO_OP_POOL_MAX, &pool, t, -1);
  taso_ref_t a = node(m, TASO_OP_CONV2D, &p, t, weight(m, "ca", 4, 8, 8, 1, 1));
  a = node(m, TASO_OP_ADD, NULL, weight(m, "ba", 3, 8, 1, 1, 0), a);
  taso_ref_t b = node(m, TASO_OP_CONV2D, &p, t, weight(m, "cb", 4, 8, 8, 3, 3));
  p.axis = 1;
  t = node(m, TASO_OP_CONCAT, &p, a, b);
  p = taso_params_default();
  taso_ref_t r = node(m, TASO_OP_CONV2D, &p, t, weight(m, "cr", 4, 16, 16, 3, 3));
  r = node(m, TASO_OP_ADD, NULL, r, weight(m, "br", 4, 1, 16, 1, 1));
  r = node(m, TASO_OP_EWADD, NULL, r, t); /* residual on the conv's own input */
  taso_ref_t r2 = node(m, TASO_OP_CONV2D, &p, r, weight(m, "c2", 4, 16, 16, 1, 1));
  taso_params_t bounds = taso_params_default();
  bounds.bound[0] = -0.1f, bounds.bound[1] = 0.2f; /* both clamp */
  r2 = node(m, TASO_OP_CLIP, &bounds, r2, -1);
  r2 = node(m, TASO_OP_CONV2D, &p, r2, weight(m, "c3", 4, 16, 16, 3, 3));
  r = node(m, TASO_OP_EWADD, NULL, r2, r); /* residual written in place */
  t = node(m, TASO_OP_RELU, NULL, r, -1);
  if (with_fallback) /* both operands broadcast: oneDNN's binary cannot */
    t = node(m, TASO_OP_EWADD, NULL, t,
             node(m, TASO_OP_ADD, NULL, weight(m, "rows", 4, 1, 16, 1, 8),
                  weight(m, "cols", 4, 1, 1, 8, 1)));
  pool.kernel[0] = pool.kernel[1] = pool.stride[0] = pool.stride[1] = 8;
  pool.pad = TASO_PAD_VALID;
  t = node(m, TASO_OP_POOL_AVG, &pool, t, -1);
  p.rank = 2, p.shape[0] = 1, p.shape[1] = 16;
  t = node(m, TASO_OP_RESHAPE, &p, t, -1);
  t = node(m, TASO_OP_MATMUL, NULL, t, weight(m, "fc", 2, 16, 10, 0, 0));
  t = node(m, TASO_OP_ADD, NULL, t, weight(m, "fcb", 1, 10, 0, 0, 0));
  taso_ref_t logits = node(m, TASO_OP_RELU, NULL, t, -1);
  p = taso_params_default();
  p.axis = 1;
  CHECK_OK(taso_model_output(m, logits, "logits"));
  CHECK_OK(taso_model_output(m, node(m, TASO_OP_SOFTMAX, &p, logits, -1), "prob"));
}

/* Runs m on a backend; out receives both outputs (10 floats each). */
static int in_place_steps;

static void run_model(taso_model_t *m, const taso_backend_t *be, taso_rt_ctx_t *ctx,
                      taso_rt_options_t opt, float out[2][10], int *fused_steps, int *fallbacks) {
  in_place_steps = 0;
  taso_rt_plan_t *plan = NULL;
  CHECK_OK(taso_rt_plan(be, ctx, m, &opt, &plan));
  if (!plan) return;
  float image[3 * 16 * 16];
  taso_model_random_input(m, 0, 5, image);
  const float *in[1] = {image};
  float *outs[2] = {out[0], out[1]};
  CHECK_OK(taso_rt_run(plan, in, outs));
  *fused_steps = *fallbacks = 0;
  for (int s = 0; s < taso_rt_plan_steps(plan); s++) {
    taso_rt_step_info_t info;
    taso_rt_plan_step(plan, s, &info);
    *fused_steps += info.fused > 1;
    *fallbacks += info.fallback;
    in_place_steps += info.in_place;
  }
  taso_rt_stats_t whole, steps[64];
  CHECK(taso_rt_plan_steps(plan) <= 64);
  CHECK_OK(taso_rt_time_model(plan, in, 1, 3, &whole));
  CHECK(whole.runs == 3 && whole.min <= whole.median && whole.median <= whole.max);
  CHECK_OK(taso_rt_profile(plan, in, 0, 2, steps));
  CHECK_OK(taso_rt_profile_in_run(plan, in, 1, 2, steps));
  CHECK(steps[0].runs == 2);
  taso_rt_plan_free(plan);
}

static void test_model(void) {
  for (int fb = 0; fb < 2; fb++) {
    taso_model_t m;
    build_cnn(&m, fb);
    float want[2][10], got[2][10];
    int fused, fallbacks;
    taso_rt_options_t opt = {.no_fusion = true};
    run_model(&m, ref, ref_ctx, opt, want, &fused, &fallbacks);
    CHECK(fused == 0 && fallbacks == 0);
    opt.no_fusion = false;
    run_model(&m, cpu, cpu_ctx, opt, got, &fused, &fallbacks);
    /* conv+bias+relu, conv+bias, conv+bias+sum, conv+clip, conv+sum+relu, matmul+bias+relu */
    CHECK(fused == 6);
    CHECK(fallbacks == fb);
    CHECK(in_place_steps == 1);
    for (int o = 0; o < 2; o++)
      CHECK(difference(got[o], want[o], 10) <= 1e-4);
    /* unfused; each conv's layout chosen by timing; channels last throughout */
    taso_rt_options_t others[] = {{.no_fusion = true},
                                  {.choose_layout = true},
                                  {.layout = TASO_RT_NHWC},
                                  {.layout = TASO_RT_NHWC, .no_fusion = true}};
    for (int i = 0; i < 4; i++) {
      run_model(&m, cpu, cpu_ctx, others[i], got, &fused, &fallbacks);
      CHECK(fallbacks == fb);
      for (int o = 0; o < 2; o++)
        CHECK(difference(got[o], want[o], 10) <= 1e-4);
    }
    /* the reference backend keeps channels-last buffers too */
    run_model(&m, ref, ref_ctx, others[2], got, &fused, &fallbacks);
    for (int o = 0; o < 2; o++)
      CHECK(difference(got[o], want[o], 10) <= 1e-5);
    taso_model_free(&m);
  }
}

/* Reshapes are views: their results share their operands' buffers and
 * run nothing, and a residual step does not write over a summand whose
 * view is read later, nor over a view of a model input (which the next
 * run reads again). */
static void build_views(taso_model_t *m) {
  taso_model_init(m, "views");
  int32_t xd[1] = {16};
  taso_ref_t x;
  CHECK_OK(taso_model_input(m, "x", false, 1, xd, NULL, &x));
  taso_params_t to2x8 = taso_params_default(), to4x4 = taso_params_default();
  to2x8.rank = 2, to2x8.shape[0] = 2, to2x8.shape[1] = 8;
  to4x4.rank = 2, to4x4.shape[0] = 4, to4x4.shape[1] = 4;
  taso_ref_t u = node(m, TASO_OP_RESHAPE, &to2x8, x, -1); /* a view of the input */
  taso_ref_t y = node(m, TASO_OP_MATMUL, NULL, u, weight(m, "w1", 2, 8, 8, 0, 0));
  taso_ref_t v = node(m, TASO_OP_RESHAPE, &to4x4, y, -1); /* read after z */
  taso_ref_t z = node(m, TASO_OP_MATMUL, NULL, u, weight(m, "w2", 2, 8, 8, 0, 0));
  z = node(m, TASO_OP_EWADD, NULL, z, y); /* fused sum: y's view v is read later */
  taso_ref_t q = node(m, TASO_OP_MATMUL, NULL, y, weight(m, "w3", 2, 8, 8, 0, 0));
  q = node(m, TASO_OP_EWADD, NULL, q, u); /* fused sum over a view of the input */
  taso_ref_t out = node(m, TASO_OP_EWADD, NULL, node(m, TASO_OP_RESHAPE, &to4x4, z, -1), v);
  CHECK_OK(taso_model_output(m, out, "out"));
  CHECK_OK(taso_model_output(m, q, "q"));
}

static void test_views(void) {
  taso_model_t m;
  build_views(&m);
  float x[16], want[2][16], got[2][16];
  taso_model_random_input(&m, 0, 3, x);
  const float *in[1] = {x};
  for (int b = 0; b < 2; b++) {
    const taso_backend_t *be = b ? cpu : ref;
    taso_rt_options_t opt = {.no_fusion = b == 0};
    taso_rt_plan_t *plan = NULL;
    CHECK_OK(taso_rt_plan(be, b ? cpu_ctx : ref_ctx, &m, &opt, &plan));
    if (!plan) break;
    int views = 0, in_place = 0, sums = 0;
    for (int s = 0; s < taso_rt_plan_steps(plan); s++) {
      taso_rt_step_info_t info;
      taso_rt_plan_step(plan, s, &info);
      views += info.view;
      in_place += info.in_place;
      sums += (info.cfg.fuse & TASO_FUSE_SUM) != 0;
    }
    CHECK(views == 3);
    CHECK(in_place == 0);
    CHECK(sums == (b ? 2 : 0));
    float *outs[2] = {b ? got[0] : want[0], b ? got[1] : want[1]};
    for (int run = 0; run < 3; run++) { /* the input's values survive each run */
      CHECK_OK(taso_rt_run(plan, in, outs));
      if (b == 0) continue;
      CHECK(difference(got[0], want[0], 16) <= 1e-5);
      CHECK(difference(got[1], want[1], 16) <= 1e-5);
    }
    taso_rt_config_t cfg;
    CHECK_OK(taso_rt_config_of_node(&(taso_rt_typed_graph_t){&m.graph, m.types, m.is_weight},
                                    TASO_REF_NODE(m.graph.outputs[0]) - 1, &cfg));
    CHECK(cfg.kind == TASO_OP_RESHAPE && taso_rt_config_is_view(&cfg));
    taso_rt_plan_free(plan);
  }
  taso_model_free(&m);
}

/* Splits whose parts are blocks of their operand (every axis before the
 * split one of size 1) are views: the parts are read in place, nothing
 * runs for them, and the values are the operand's own; a split of a 2x8
 * tensor on its columns is not one. Checked against values computed here
 * (the reference backend takes the same views). */
static void test_split_views(void) {
  taso_model_t m;
  taso_model_init(&m, "split views");
  int32_t xd[2] = {1, 16};
  taso_ref_t x;
  CHECK_OK(taso_model_input(&m, "x", false, 2, xd, NULL, &x));
  taso_params_t at6 = taso_params_default(), at3 = taso_params_default(),
                to2x8 = taso_params_default();
  at6.axis = 1, at6.at = 6;
  at3.axis = 1, at3.at = 3;
  to2x8.rank = 2, to2x8.shape[0] = 2, to2x8.shape[1] = 8;
  taso_ref_t parts = node(&m, TASO_OP_SPLIT_AT, &at6, x, -1);
  taso_ref_t p0 = parts, p1 = TASO_REF(TASO_REF_NODE(parts), 1);
  taso_ref_t rows = node(&m, TASO_OP_SPLIT_AT, &at3, node(&m, TASO_OP_RESHAPE, &to2x8, x, -1), -1);
  CHECK_OK(taso_model_output(&m, node(&m, TASO_OP_RELU, NULL, p0, -1), "o0"));
  CHECK_OK(taso_model_output(&m, node(&m, TASO_OP_EWMUL, NULL, p1, p1), "o1"));
  CHECK_OK(taso_model_output(&m, node(&m, TASO_OP_RELU, NULL, rows, -1), "o2"));
  float x_in[16], o0[6], o1[10], o2[6];
  for (int i = 0; i < 16; i++)
    x_in[i] = (float)(i % 5) - 2.0f + 0.25f * (float)i;
  const float *in[1] = {x_in};
  float *outs[3] = {o0, o1, o2};
  for (int b = 0; b < 2; b++) {
    taso_rt_plan_t *plan = NULL;
    CHECK_OK(taso_rt_plan(b ? cpu : ref, b ? cpu_ctx : ref_ctx, &m, NULL, &plan));
    if (!plan) break;
    int views = 0;
    for (int s = 0; s < taso_rt_plan_steps(plan); s++) {
      taso_rt_step_info_t info;
      taso_rt_plan_step(plan, s, &info);
      views += info.view;
      if (info.cfg.kind == TASO_OP_SPLIT_AT)
        CHECK(info.view == (info.cfg.in[0].dim[0] == 1) &&
              taso_rt_config_is_view(&info.cfg) == info.view);
    }
    CHECK(views == 2); /* the 1x16 split and the reshape; not the 2x8 split */
    for (int run = 0; run < 2; run++) {
      CHECK_OK(taso_rt_run(plan, in, outs));
      for (int i = 0; i < 6; i++)
        CHECK(o0[i] == (x_in[i] > 0 ? x_in[i] : 0));
      for (int i = 0; i < 10; i++)
        CHECK(fabsf(o1[i] - x_in[6 + i] * x_in[6 + i]) <= 1e-6f);
      for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
          CHECK(o2[r * 3 + c] == (x_in[r * 8 + c] > 0 ? x_in[r * 8 + c] : 0));
    }
    taso_rt_plan_free(plan);
  }
  taso_model_free(&m);
}

static void test_time_config(void) {
  taso_tensor_t a[2] = {shape(4, 1, 16, 14, 14), shape(4, 16, 16, 3, 3)};
  taso_rt_config_t c = config(TASO_OP_CONV2D, NULL, 2, a);
  taso_rt_stats_t st;
  CHECK_OK(taso_rt_time_config(cpu, cpu_ctx, &c, 2, 5, &st));
  CHECK(st.runs == 5 && st.min <= st.median && st.median <= st.max && st.spread >= 0);
  char text[128];
  taso_rt_config_format(&c, text, sizeof text);
  CHECK(strncmp(text, "conv2d 1x16x14x14,16x16x3x3", 27) == 0);
}

/* The key names everything that makes configurations differ, and only that. */
static void test_config_key(void) {
  taso_rt_config_t a, b;
  memset(&a, 0, sizeof a);
  a.kind = TASO_OP_CONV2D;
  a.p = taso_params_default();
  a.p.stride[0] = a.p.stride[1] = 2;
  a.nin = 3;
  a.nout = 1;
  a.in[0] = taso_tensor_make(4, (int32_t[]){1, 64, 56, 56});
  a.in[1] = taso_tensor_make(4, (int32_t[]){64, 64, 3, 3});
  a.in[2] = taso_tensor_make(1, (int32_t[]){64});
  a.out[0] = taso_tensor_make(4, (int32_t[]){1, 64, 28, 28});
  a.fuse = TASO_FUSE_BIAS | TASO_FUSE_RELU;
  char ka[512], kb[512];
  taso_rt_config_key(&a, ka, sizeof ka);
  CHECK_STR(ka, "conv2d(s=2x2, a, b) in=1x64x56x56,64x64x3x3,64 out=1x64x28x28 "
                "fuse=bias+relu layout=nchw");
  b = a;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK_STR(ka, kb);
  b.p.pad = TASO_PAD_VALID;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK(strcmp(ka, kb) != 0);
  b = a;
  b.layout = TASO_RT_NHWC;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK(strcmp(ka, kb) != 0 && strstr(kb, "layout=nhwc") != NULL);
  b = a; /* a fused clip names its bounds; different bounds, different keys */
  b.fuse = TASO_FUSE_BIAS | TASO_FUSE_CLIP;
  b.p.bound[0] = 0, b.p.bound[1] = 6;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK(strstr(kb, " fuse=bias+clip(0,6) layout=nchw") != NULL);
  b.fuse = TASO_FUSE_CLIP;
  b.p.bound[1] = 6.5f;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK(strstr(kb, " fuse=clip(0,6.5) layout=nchw") != NULL);
  /* the call's key: the same call, whatever its buffers' cache state and
   * aliasing; another call keeps its own */
  char call[512];
  b = a;
  b.fuse |= TASO_FUSE_SUM;
  b.nin = 4;
  b.in[3] = b.out[0];
  taso_rt_config_key(&b, ka, sizeof ka);
  b.cold = 1u << 1 | 1u << 2;
  b.cold_out = 1;
  b.in_place = 4;
  taso_rt_config_key(&b, kb, sizeof kb);
  CHECK(strstr(kb, "out=cold:1x64x28x28") && strstr(kb, " cold=bc") && strstr(kb, " inplace=d"));
  CHECK(taso_rt_call_key(kb, call, sizeof call) == (int)strlen(ka));
  CHECK_STR(call, ka);
  CHECK(taso_rt_call_key(ka, call, sizeof call) == (int)strlen(ka));
  CHECK_STR(call, ka);
  char cut[12]; /* a short buffer gets the start, the length stays the whole */
  CHECK(taso_rt_call_key(kb, cut, sizeof cut) == (int)strlen(ka));
  CHECK(strncmp(cut, ka, sizeof cut - 1) == 0 && strlen(cut) == sizeof cut - 1);
  b.layout = TASO_RT_NHWC;
  taso_rt_config_key(&b, kb, sizeof kb);
  taso_rt_call_key(kb, call, sizeof call);
  CHECK(strcmp(call, ka) != 0 && strstr(call, "layout=nhwc") && !strstr(call, "cold"));
}

/* A model's weights (and fused biases) are its steps' cold operands; the
 * activations, the concat's and the residual's summand are not. Timing a
 * cold configuration sweeps the cache before each run. */
static void test_cold(void) {
  taso_model_t m;
  build_cnn(&m, false);
  taso_rt_step_info_t *steps = NULL;
  int n = 0;
  CHECK_OK(taso_rt_steps(&m, NULL, &steps, &n));
  int conv = 0, matmul = 0;
  for (int i = 0; i < n; i++) {
    const taso_rt_config_t *c = &steps[i].cfg;
    unsigned want = 0;
    if (c->kind == TASO_OP_CONV2D || c->kind == TASO_OP_MATMUL) {
      want = 1u << 1; /* the weight */
      if (c->fuse & TASO_FUSE_BIAS) want |= 1u << 2;
      conv += c->kind == TASO_OP_CONV2D, matmul += c->kind == TASO_OP_MATMUL;
    }
    CHECK(c->cold == want);
    char key[512];
    taso_rt_config_key(c, key, sizeof key);
    CHECK((strstr(key, " cold=") != NULL) == (want != 0));
    if (c->kind == TASO_OP_MATMUL) {
      CHECK(strstr(key, "fuse=bias+relu layout=nchw cold=bc") != NULL);
      taso_rt_config_t warm = *c;
      warm.cold = 0;
      char wkey[512];
      taso_rt_config_key(&warm, wkey, sizeof wkey);
      CHECK(strncmp(key, wkey, strlen(wkey)) == 0 && strlen(key) == strlen(wkey) + 8);
      taso_rt_stats_t st;
      CHECK_OK(taso_rt_time_config(cpu, cpu_ctx, c, 1, 3, &st));
      CHECK(st.runs == 3 && st.min > 0 && st.min <= st.median);
    }
  }
  CHECK(conv == 6 && matmul == 1);
  /* a model that stays in cache (warm_weights): the same steps, none cold */
  taso_rt_step_info_t *warm = NULL;
  int nwarm = 0;
  taso_rt_options_t wopt = {.warm_weights = true};
  CHECK_OK(taso_rt_steps(&m, &wopt, &warm, &nwarm));
  CHECK(nwarm == n);
  for (int i = 0; i < n && i < nwarm; i++) {
    CHECK(warm[i].cfg.cold == 0 && warm[i].cfg.kind == steps[i].cfg.kind);
    CHECK(warm[i].cfg.fuse == steps[i].cfg.fuse && warm[i].cfg.nin == steps[i].cfg.nin);
  }
  free(warm);
  /* what decides it: every tensor's bytes against half of cpu0's L3 */
  int64_t bytes = 0, weights = 0;
  for (int i = 0; i < m.graph.nnodes; i++) {
    int64_t b = 4 * taso_tensor_size(&m.types[2 * i]);
    bytes += b;
    if (m.graph.nodes[i].kind == TASO_OP_INPUT && m.is_weight[m.graph.nodes[i].p.input])
      weights += b;
  }
  CHECK(taso_rt_model_bytes(&m) == bytes && weights > 0 && bytes > weights);
  /* TASO_LLC_MIB overrides sysfs; nonsense in it is ignored */
  const char *was = getenv("TASO_LLC_MIB");
  char *saved = was ? strdup(was) : NULL;
  setenv("TASO_LLC_MIB", "5", 1);
  CHECK(taso_rt_llc_bytes() == (int64_t)5 << 20);
  setenv("TASO_LLC_MIB", "5x", 1);
  int64_t sysfs = taso_rt_llc_bytes();
  unsetenv("TASO_LLC_MIB");
  CHECK(taso_rt_llc_bytes() == sysfs);
  if (saved) setenv("TASO_LLC_MIB", saved, 1);
  free(saved);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t l3 = taso_rt_llc_bytes(), cap = (int64_t)(cpus > 0 ? cpus : 1) * (16 << 20);
  CHECK(taso_rt_weights_stay_warm(&m, cpu) == (2 * bytes <= (l3 < cap ? l3 : cap)));
  /* a single node's configuration marks its weight operand too */
  for (int i = 0; i < m.graph.nnodes; i++) {
    if (m.graph.nodes[i].kind != TASO_OP_CONV2D) continue;
    taso_rt_config_t c;
    CHECK_OK(
        taso_rt_config_of_node(&(taso_rt_typed_graph_t){&m.graph, m.types, m.is_weight}, i, &c));
    CHECK(c.cold == 1u << 1);
    break;
  }
  free(steps);
  taso_model_free(&m);
}

int main(void) {
  ref = taso_backend_find("reference");
  cpu = taso_backend_find("cpu");
  if (!ref || !cpu) {
    fprintf(stderr, "reference or cpu backend missing\n");
    return 1;
  }
  CHECK_OK(ref->open(0, &ref_ctx));
  CHECK_OK(cpu->open(0, &cpu_ctx));
  const test_case_t cases[] = {
      TEST(test_probe),       TEST(test_conv2d),      TEST(test_matmul),
      TEST(test_pool),        TEST(test_elementwise), TEST(test_data_movement),
      TEST(test_unsupported), TEST(test_model),       TEST(test_views),
      TEST(test_split_views), TEST(test_time_config), TEST(test_config_key),
      TEST(test_cold),
  };
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  cpu->close(cpu_ctx);
  ref->close(ref_ctx);
  return rc;
}
