/*
 * Convolutions through cuDNN's graph (backend) API.
 *
 * The legacy API (gpu_conv.c) reaches one engine per algorithm enumerator;
 * the graph API lists the engines that compute a problem, ranked by
 * cuDNN's heuristics, each with its knob settings. A convolution's choice
 * times the first few of that list beside the legacy algorithms and keeps
 * the fastest. An engine is kept as its global index and knob values
 * (gpu_engine_t), which build the same plan again: the algorithm table, a
 * cost database's row ("cudnnBackendExecute engine 7 knobs 3=1,17=0"). * A graph computes the
 * convolution alone, bias, summand and activation following in our epilogue kernel, or (fused,
 * where the call has a bias or a ReLU and no summand or clip) the convolution, bias and ReLU as *
 * cuDNN's pointwise operations: both are timed (the fused ones only with TASO_GPU_CONV_FUSED=1,
 * until they have run on a device).
 *
 * Engines whose numerical notes say tensor cores (TF32 for FP32 data) are
 * listed only where the context allows TF32; those that convert inputs
 * down or reduce in lower precision never; those compiled at run time
 * (NVRTC) never, so that a choice costs no compilation.
 *
 * Tensors are declared GRAPH_ALIGN-byte aligned: a run whose buffers are
 * not (a view into another tensor's buffer) makes the legacy call chosen
 * beside it (gpu_opgraph_aligned).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

#define GRAPH_ALIGN 16

/* Unique ids of the graph's tensors in a variant pack: x, w, y, the bias,
 * then the fused graph's intermediate results. */
enum { UID_X = 1, UID_W, UID_Y, UID_B, UID_CONV, UID_BIASED };

/* Descriptors of an operation graph: tensors x, w, y, the convolution,
 * its operation, the graph; a fused graph's bias, intermediate results
 * and pointwise operations (bias, ReLU). */
enum {
  D_X,
  D_W,
  D_Y,
  D_CONV,
  D_OP,
  D_GRAPH,
  D_B,
  D_T_CONV,
  D_T_BIASED,
  D_PW_ADD,
  D_PW_RELU,
  D_OP_ADD,
  D_OP_RELU,
  D_COUNT
};

struct gpu_opgraph {
  cudnnBackendDescriptor_t d[D_COUNT];
  cudnnBackendDescriptor_t engine, cfg, knobs[GPU_ENGINE_KNOBS], plan;
  cudnnBackendDescriptor_t pack; /* for pack_ptr, made again when they change */
  void *pack_ptr[4];
  gpu_engine_t e;
};

/* A call of ours inside a function with `taso_err_t err` and `fail:`. */
#define TRY(call)                                                                                  \
  do {                                                                                             \
    if ((err = (call)) != TASO_OK) goto fail;                                                      \
  } while (0)

#define SET(desc, name, type, count, value)                                                        \
  CUDNN_TRY(cudnnBackendSetAttribute((desc), (name), (type), (count), (value)))

static taso_err_t create(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *d) {
  taso_err_t err = TASO_OK;
  CUDNN_TRY(cudnnBackendCreateDescriptor(type, d));
fail:
  return err;
}

static void destroy(cudnnBackendDescriptor_t *d, int n) {
  for (int i = 0; i < n; i++)
    if (d[i]) {
      cudnnBackendDestroyDescriptor(d[i]);
      d[i] = NULL;
    }
}

void gpu_opgraph_free(gpu_opgraph_t *g) {
  if (!g) return;
  destroy(&g->pack, 1);
  destroy(&g->plan, 1);
  destroy(&g->cfg, 1);
  destroy(g->knobs, GPU_ENGINE_KNOBS);
  destroy(&g->engine, 1);
  destroy(g->d, D_COUNT);
  free(g);
}

static taso_err_t make_tensor(cudnnBackendDescriptor_t *t, int64_t uid, const int64_t dim[4],
                              bool nhwc, bool is_virtual) {
  taso_err_t err = TASO_OK;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int64_t align = GRAPH_ALIGN, stride[4];
  if (nhwc) { /* dims stay N, C, H, W; memory is N, H, W, C */
    stride[1] = 1;
    stride[3] = dim[1];
    stride[2] = dim[3] * dim[1];
    stride[0] = dim[2] * dim[3] * dim[1];
  } else {
    stride[3] = 1;
    for (int i = 2; i >= 0; i--)
      stride[i] = stride[i + 1] * dim[i + 1];
  }
  TRY(create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  SET(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  SET(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
  SET(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride);
  SET(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  SET(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  if (is_virtual) SET(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  CUDNN_TRY(cudnnBackendFinalize(*t));
fail:
  return err;
}

bool gpu_opgraph_can_fuse(const taso_rt_kernel_t *k) {
  return k->sum_at < 0 && !k->clip && (k->bias_at >= 0 || k->relu);
}

/* A pointwise operation mode of x (and b) into y, in *pw and *op. */
static taso_err_t make_pointwise(cudnnBackendDescriptor_t *pw, cudnnBackendDescriptor_t *op,
                                 cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t *x,
                                 cudnnBackendDescriptor_t *b, cudnnBackendDescriptor_t *y) {
  taso_err_t err = TASO_OK;
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  TRY(create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
  SET(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  SET(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  CUDNN_TRY(cudnnBackendFinalize(*pw));
  TRY(create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
  SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw);
  SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x);
  if (b) SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, b);
  SET(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y);
  CUDNN_TRY(cudnnBackendFinalize(*op));
fail:
  return err;
}

/* k's convolution as an operation graph, in d (D_COUNT entries): the
 * problem the legacy descriptors state (an explicitly padded input
 * included, with no padding then), alone or (fused) followed by k's bias
 * and ReLU. */
static taso_err_t build_graph(taso_rt_ctx_t *ctx, const taso_rt_kernel_t *k, bool fused,
                              cudnnBackendDescriptor_t *d) {
  taso_err_t err = TASO_OK;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *x = &c->in[0], *w = &c->in[1], *y = &c->out[0];
  bool nhwc = gpu_is_nhwc(c, x);
  int32_t top = 0, left = 0;
  if (!k->padded) {
    taso_window_axis(&c->p, 0, x->dim[2], w->dim[2], &top);
    taso_window_axis(&c->p, 1, x->dim[3], w->dim[3], &left);
  }
  int64_t xdim[4] = {x->dim[0], x->dim[1], k->padded ? k->win.oh : x->dim[2],
                     k->padded ? k->win.ow : x->dim[3]};
  int64_t wdim[4] = {w->dim[0], w->dim[1], w->dim[2], w->dim[3]};
  int64_t ydim[4] = {y->dim[0], y->dim[1], y->dim[2], y->dim[3]};
  int64_t pads[2] = {top, left}, strides[2] = {c->p.stride[0], c->p.stride[1]};
  int64_t dilations[2] = {1, 1}, spatial = 2;
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  float alpha = 1.0f, beta = 0.0f;
  int64_t bdim[4] = {1, y->dim[1], 1, 1};
  /* the convolution's own result: y, or the fused graph's first step */
  cudnnBackendDescriptor_t *conv_y = fused ? &d[D_T_CONV] : &d[D_Y];
  bool bias = fused && k->bias_at >= 0, relu = fused && k->relu;
  TRY(make_tensor(&d[D_X], UID_X, xdim, nhwc, false));
  TRY(make_tensor(&d[D_W], UID_W, wdim, false, false)); /* weights stay row-major */
  TRY(make_tensor(&d[D_Y], UID_Y, ydim, nhwc, false));
  if (fused) TRY(make_tensor(&d[D_T_CONV], UID_CONV, ydim, nhwc, true));
  if (bias) TRY(make_tensor(&d[D_B], UID_B, bdim, nhwc, false));
  if (bias && relu) TRY(make_tensor(&d[D_T_BIASED], UID_BIASED, ydim, nhwc, true));
  TRY(create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &d[D_CONV]));
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  SET(d[D_CONV], CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  CUDNN_TRY(cudnnBackendFinalize(d[D_CONV]));
  TRY(create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &d[D_OP]));
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &d[D_X]);
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &d[D_W]);
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      conv_y);
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &d[D_CONV]);
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  SET(d[D_OP], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  CUDNN_TRY(cudnnBackendFinalize(d[D_OP]));
  cudnnBackendDescriptor_t ops[3] = {d[D_OP]};
  int64_t nops = 1;
  if (bias) {
    TRY(make_pointwise(&d[D_PW_ADD], &d[D_OP_ADD], CUDNN_POINTWISE_ADD, conv_y, &d[D_B],
                       relu ? &d[D_T_BIASED] : &d[D_Y]));
    ops[nops++] = d[D_OP_ADD];
  }
  if (relu) {
    TRY(make_pointwise(&d[D_PW_RELU], &d[D_OP_RELU], CUDNN_POINTWISE_RELU_FWD,
                       bias ? &d[D_T_BIASED] : conv_y, NULL, &d[D_Y]));
    ops[nops++] = d[D_OP_RELU];
  }
  TRY(create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d[D_GRAPH]));
  SET(d[D_GRAPH], CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops);
  SET(d[D_GRAPH], CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx->dnn);
  CUDNN_TRY(cudnnBackendFinalize(d[D_GRAPH]));
fail:
  return err;
}

/* Whether an engine's notes allow it under the context's math; *tensor:
 * it uses tensor cores. */
static bool engine_allowed(taso_rt_ctx_t *ctx, cudnnBackendDescriptor_t engine, bool *tensor) {
  cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t nnum = 0, nbeh = 0;
  *tensor = false;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nnum,
                               num) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nbeh, beh) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < nnum; i++) {
    if (num[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        num[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
      return false;
    if (num[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) *tensor = true;
  }
  for (int64_t i = 0; i < nbeh; i++)
    if (beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  return ctx->tf32 || !*tensor;
}

/* Reads an engine configuration into e; false where cuDNN does not say. */
static bool read_engine(taso_rt_ctx_t *ctx, cudnnBackendDescriptor_t cfg, gpu_engine_t *e) {
  cudnnBackendDescriptor_t engine = NULL, knobs[CUDNN_KNOB_TYPE_COUNTS] = {0};
  int64_t got = 0, nknobs = 0;
  bool ok = false;
  memset(e, 0, sizeof *e);
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &got, &engine) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got,
                               &e->id) != CUDNN_STATUS_SUCCESS ||
      !engine_allowed(ctx, engine, &e->tensor))
    goto done;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; i++)
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]) !=
        CUDNN_STATUS_SUCCESS)
      goto done;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &nknobs,
                               knobs) != CUDNN_STATUS_SUCCESS ||
      nknobs > GPU_ENGINE_KNOBS)
    goto done;
  for (int64_t i = 0; i < nknobs; i++) {
    cudnnBackendKnobType_t type;
    if (cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE,
                                 1, &got, &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                 &got, &e->knob[i][1]) != CUDNN_STATUS_SUCCESS)
      goto done;
    e->knob[i][0] = type;
  }
  e->nknobs = (int)nknobs;
  ok = true;
done:
  destroy(&engine, 1);
  destroy(knobs, CUDNN_KNOB_TYPE_COUNTS);
  return ok;
}

/* Configurations asked of the heuristics: more than a choice times, as
 * some are not allowed. */
#define HEUR_RESULTS 32

taso_err_t gpu_opgraph_engines(taso_rt_ctx_t *ctx, const taso_rt_kernel_t *k, bool fused,
                               gpu_engine_t *out, int max, int *n) {
  taso_err_t err = TASO_OK;
  cudnnBackendDescriptor_t d[D_COUNT] = {0}, heur = NULL, cfgs[HEUR_RESULTS] = {0};
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  int64_t count = 0;
  *n = 0;
  if (fused && !gpu_opgraph_can_fuse(k)) return TASO_OK;
  TRY(build_graph(ctx, k, fused, d));
  TRY(create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[D_GRAPH]);
  SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  CUDNN_TRY(cudnnBackendFinalize(heur));
  for (int i = 0; i < HEUR_RESULTS; i++)
    TRY(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
  CUDNN_TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, HEUR_RESULTS, &count, cfgs));
  for (int64_t i = 0; i < count && i < HEUR_RESULTS && *n < max; i++)
    if (read_engine(ctx, cfgs[i], &out[*n])) out[(*n)++].fused = fused;
fail:
  destroy(cfgs, HEUR_RESULTS);
  destroy(&heur, 1);
  destroy(d, D_COUNT);
  return err;
}

taso_err_t gpu_opgraph_use(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const gpu_engine_t *e) {
  taso_err_t err = TASO_OK;
  int64_t got = 0, ws = 0; /* the plan's workspace bytes */
  gpu_opgraph_t *g = calloc(1, sizeof *g);
  if (!g) return taso_error(TASO_ERR_NOMEM, "gpu: convolution graph");
  g->e = *e;
  if (e->fused && !gpu_opgraph_can_fuse(k)) {
    err = GPU_UNSUPPORTED(&k->cfg, "engine %lld: fused graph of another call", (long long)e->id);
    goto fail;
  }
  TRY(build_graph(ctx, k, e->fused, g->d));
  TRY(create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &g->engine));
  SET(g->engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &g->d[D_GRAPH]);
  SET(g->engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &e->id);
  CUDNN_TRY(cudnnBackendFinalize(g->engine));
  for (int i = 0; i < e->nknobs; i++) {
    cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)e->knob[i][0];
    TRY(create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &g->knobs[i]));
    SET(g->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
    SET(g->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &e->knob[i][1]);
    CUDNN_TRY(cudnnBackendFinalize(g->knobs[i]));
  }
  TRY(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &g->cfg));
  SET(g->cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->engine);
  if (e->nknobs)
    SET(g->cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, e->nknobs,
        g->knobs);
  CUDNN_TRY(cudnnBackendFinalize(g->cfg));
  TRY(create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &g->plan));
  SET(g->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx->dnn);
  SET(g->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->cfg);
  CUDNN_TRY(cudnnBackendFinalize(g->plan));
  CUDNN_TRY(cudnnBackendGetAttribute(g->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &got, &ws));
  TRY(gpu_workspace(ctx));
  if (ws < 0 || (size_t)ws > ctx->workspace_size) {
    err = GPU_UNSUPPORTED(&k->cfg, "engine %lld needs %lld bytes of workspace", (long long)e->id,
                          (long long)ws);
    goto fail;
  }
  gpu_opgraph_free(k->opgraph);
  k->opgraph = g;
  return TASO_OK;
fail:
  gpu_opgraph_free(g);
  return err;
}

bool gpu_opgraph_aligned(const void *x, const void *w, const void *b, const void *y) {
  return ((uintptr_t)x | (uintptr_t)w | (uintptr_t)b | (uintptr_t)y) % GRAPH_ALIGN == 0;
}

taso_err_t gpu_opgraph_run(taso_rt_ctx_t *ctx, gpu_opgraph_t *g, const void *x, const void *w,
                           const void *b, void *y) {
  taso_err_t err = TASO_OK;
  void *ptr[4] = {(void *)x, (void *)w, y, (void *)b};
  if (!g->pack || memcmp(ptr, g->pack_ptr, sizeof ptr) != 0) {
    int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_B};
    int64_t n = b ? 4 : 3;
    destroy(&g->pack, 1);
    TRY(create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &g->pack));
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptr);
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ctx->workspace);
    CUDNN_TRY(cudnnBackendFinalize(g->pack));
    memcpy(g->pack_ptr, ptr, sizeof ptr);
  }
  CUDNN_TRY(cudnnBackendExecute(ctx->dnn, g->plan, g->pack));
  return TASO_OK;
fail:
  destroy(&g->pack, 1); /* made again on the next run */
  return err;
}

const gpu_engine_t *gpu_opgraph_engine(const gpu_opgraph_t *g) {
  return &g->e;
}

int gpu_engine_format(const gpu_engine_t *e, char *buf, int len) {
  int n = snprintf(buf, (size_t)len, "%sengine %lld", e->fused ? "fused " : "", (long long)e->id);
  for (int i = 0; i < e->nknobs; i++)
    n += snprintf(buf + (n < len ? n : len), (size_t)(n < len ? len - n : 0), "%s%lld=%lld",
                  i ? "," : " knobs ", (long long)e->knob[i][0], (long long)e->knob[i][1]);
  return n;
}

/* A number at *p (digits, an optional minus), advancing *p. */
static bool read_int(const char **p, int64_t *v) {
  char *end;
  if (!((**p >= '0' && **p <= '9') || **p == '-')) return false;
  long long x = strtoll(*p, &end, 10);
  if (end == *p) return false;
  *v = x;
  *p = end;
  return true;
}

const char *gpu_engine_parse(const char *s, gpu_engine_t *e) {
  memset(e, 0, sizeof *e);
  if (strncmp(s, "fused ", 6) == 0) {
    e->fused = true;
    s += 6;
  }
  if (strncmp(s, "engine ", 7) != 0) return NULL;
  s += 7;
  if (!read_int(&s, &e->id) || e->id < 0) return NULL;
  if (strncmp(s, " knobs ", 7) != 0) return s;
  s += 7;
  for (;;) { /* knobs: "T=V" joined by commas; a comma before anything else ends them */
    if (e->nknobs == GPU_ENGINE_KNOBS || !read_int(&s, &e->knob[e->nknobs][0]) || *s++ != '=' ||
        !read_int(&s, &e->knob[e->nknobs][1]))
      return NULL;
    e->nknobs++;
    if (s[0] != ',' || !((s[1] >= '0' && s[1] <= '9') || s[1] == '-')) return s;
    s++;
  }
}
