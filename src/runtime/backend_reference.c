/*
 * The reference backend: the registry's double evaluation on host buffers.
 *
 * It is slow on purpose: every operator goes through taso_eval_node_double,
 * the same code the fingerprints and the validator trust, so that a fast
 * backend's disagreement with it is the fast backend's bug. Fused epilogues
 * (bias, sum, ReLU) are applied here in double after the operator, in the
 * order a fused library call applies them.
 */
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "runtime.h"

struct taso_rt_ctx {
  int unused; /* the reference backend keeps no device state */
};

struct taso_rt_kernel {
  taso_rt_config_t cfg; /* what run computes */
};

static taso_err_t ref_probe(char *info, int len) {
  snprintf(info, (size_t)len, "reference: double evaluation of the operator registry");
  return TASO_OK;
}

static taso_err_t ref_open(int threads, taso_rt_ctx_t **ctx) {
  (void)threads; /* single-threaded: it is the oracle, not a contender */
  *ctx = calloc(1, sizeof **ctx);
  return *ctx ? TASO_OK : taso_error(TASO_ERR_NOMEM, "reference context");
}

static void ref_close(taso_rt_ctx_t *ctx) {
  free(ctx);
}

static taso_err_t ref_alloc(taso_rt_ctx_t *ctx, int64_t count, void **buf) {
  (void)ctx;
  *buf = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
  return *buf ? TASO_OK
              : taso_error_nomem(4.0 * (double)count, "a buffer of %lld floats", (long long)count);
}

static void ref_release(taso_rt_ctx_t *ctx, void *buf) {
  (void)ctx;
  free(buf);
}

static taso_err_t ref_upload(taso_rt_ctx_t *ctx, void *dst, const float *src, int64_t count) {
  (void)ctx;
  memcpy(dst, src, sizeof(float) * (size_t)count);
  return TASO_OK;
}

static taso_err_t ref_download(taso_rt_ctx_t *ctx, float *dst, const void *src, int64_t count) {
  (void)ctx;
  memcpy(dst, src, sizeof(float) * (size_t)count);
  return TASO_OK;
}

/* Operands the operator itself takes (the rest are bias and summand). */
static int operator_arity(const taso_rt_config_t *cfg) {
  return taso_ops[cfg->kind].arity;
}

static taso_err_t ref_prepare(taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg,
                              taso_rt_kernel_t **k) {
  (void)ctx;
  if (cfg->kind <= TASO_OP_INPUT || cfg->kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_ARG, "reference: operator kind %d", (int)cfg->kind);
  int extra = !!(cfg->fuse & TASO_FUSE_BIAS) + !!(cfg->fuse & TASO_FUSE_SUM);
  if (cfg->nin != operator_arity(cfg) + extra || cfg->nout != taso_ops[cfg->kind].outputs)
    return taso_error(TASO_ERR_ARG, "reference: %s with %d buffers in and %d out",
                      taso_ops[cfg->kind].name, cfg->nin, cfg->nout);
  *k = malloc(sizeof **k);
  if (!*k) return taso_error(TASO_ERR_NOMEM, "reference kernel");
  (*k)->cfg = *cfg;
  return TASO_OK;
}

/* Slot `slot` of cfg in double, row-major (channels-last slots converted). */
static double *to_double(const taso_rt_config_t *cfg, int slot, const float *x) {
  const taso_tensor_t *t = &cfg->in[slot];
  int64_t n = taso_tensor_size(t);
  double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  float *nchw = taso_rt_channels_last(cfg, slot) ? malloc(sizeof(float) * (size_t)n) : NULL;
  if (nchw) taso_rt_to_nchw(t, x, nchw);
  for (int64_t i = 0; d && i < n; i++)
    d[i] = nchw ? nchw[i] : x[i];
  free(nchw);
  return d;
}

/* Result j from double into the caller's buffer, in its layout. */
static taso_err_t from_double(const taso_rt_config_t *cfg, int j, const double *d, float *f) {
  const taso_tensor_t *t = &cfg->out[j];
  int64_t n = taso_tensor_size(t);
  bool last = taso_rt_channels_last(cfg, cfg->nin + j);
  float *nchw = last ? malloc(sizeof(float) * (size_t)n) : f;
  if (!nchw) return TASO_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++)
    nchw[i] = (float)d[i];
  if (last) taso_rt_to_nhwc(t, nchw, f);
  if (last) free(nchw);
  return TASO_OK;
}

/* Bias, summand, ReLU or clip on the operator's result o: the bias
 * indexes axis 1 of a convolution's NCHW result and the last axis of a
 * matmul's. */
static void apply_epilogue(const taso_rt_config_t *cfg, const float *bias, const double *sum,
                           bool relu, double *o) {
  bool clip = cfg->fuse & TASO_FUSE_CLIP;
  const taso_tensor_t *ot = &cfg->out[0];
  int64_t size = taso_tensor_size(ot), inner = 1, channels = 0;
  if (bias) {
    bool conv = cfg->kind == TASO_OP_CONV2D;
    channels = conv ? ot->dim[1] : ot->dim[ot->rank - 1];
    for (int a = conv ? 2 : ot->rank; a < ot->rank; a++)
      inner *= ot->dim[a];
  }
  for (int64_t i = 0; i < size; i++) {
    double v = o[i];
    if (bias) v += bias[(i / inner) % channels];
    if (sum) v += sum[i];
    if (clip) v = v < cfg->p.bound[0] ? cfg->p.bound[0] : v > cfg->p.bound[1] ? cfg->p.bound[1] : v;
    o[i] = relu && v < 0 ? 0 : v;
  }
}

static taso_err_t ref_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                          void *const *out) {
  (void)ctx;
  const taso_rt_config_t *cfg = &k->cfg;
  int arity = operator_arity(cfg);
  taso_node_t node = {.kind = cfg->kind, .p = cfg->p, .in = {-1, -1, -1}};
  bool relu = (cfg->fuse & TASO_FUSE_RELU) || node.p.act == TASO_ACT_RELU;
  node.p.act = TASO_ACT_NONE; /* ReLU comes after bias and sum */
  double *din[3] = {NULL, NULL, NULL}, *dout[2] = {NULL, NULL};
  taso_err_t err = TASO_OK;
  double *summand = NULL;
  for (int a = 0; a < arity; a++)
    if (!(din[a] = to_double(cfg, a, in[a]))) err = TASO_ERR_NOMEM;
  if ((cfg->fuse & TASO_FUSE_SUM) && !(summand = to_double(cfg, cfg->nin - 1, in[cfg->nin - 1])))
    err = TASO_ERR_NOMEM;
  for (int o = 0; o < cfg->nout; o++)
    if (!(dout[o] = malloc(sizeof(double) * (size_t)(taso_tensor_size(&cfg->out[o]) + 1))))
      err = TASO_ERR_NOMEM;
  if (err == TASO_OK)
    err = taso_eval_node_double(NULL, &node, cfg->in, (const double *const *)din, cfg->out, dout);
  if (err == TASO_OK) {
    const float *bias = cfg->fuse & TASO_FUSE_BIAS ? in[arity] : NULL;
    if (bias || summand || relu || (cfg->fuse & TASO_FUSE_CLIP))
      apply_epilogue(cfg, bias, summand, relu, dout[0]);
    for (int o = 0; o < cfg->nout && err == TASO_OK; o++)
      err = from_double(cfg, o, dout[o], out[o]);
  }
  free(summand);
  for (int a = 0; a < 3; a++)
    free(din[a]);
  for (int o = 0; o < 2; o++)
    free(dout[o]);
  return err == TASO_ERR_NOMEM ? taso_error(err, "reference: double copies") : err;
}

static taso_err_t ref_sync(taso_rt_ctx_t *ctx) {
  (void)ctx; /* runs are synchronous */
  return TASO_OK;
}

static void ref_destroy(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  free(k);
}

static void ref_describe(const taso_rt_kernel_t *k, char *buf, int len) {
  (void)k;
  snprintf(buf, (size_t)len, "reference");
}

const taso_backend_t taso_backend_reference = {
    .name = "reference",
    .probe = ref_probe,
    .open = ref_open,
    .close = ref_close,
    .alloc = ref_alloc,
    .release = ref_release,
    .upload = ref_upload,
    .download = ref_download,
    .prepare = ref_prepare,
    .run = ref_run,
    .sync = ref_sync,
    .destroy = ref_destroy,
    .describe = ref_describe,
};
