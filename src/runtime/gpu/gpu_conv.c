/*
 * Convolutions and pooling with cuDNN's legacy API.
 *
 * Padding: cuDNN pads both sides of an axis equally. Where that gives the
 * configuration's output size the results are the reference's (out-of-range
 * inputs read as zero, or are skipped by pooling). Where it does not (SAME
 * with an odd total, asymmetric explicit pads) a convolution first copies
 * its input into a zero-padded scratch buffer, and a pool runs our own
 * kernel; both only in NCHW.
 *
 * The convolution algorithm is chosen per configuration by timing
 * (cudnnFindConvolutionForwardAlgorithmEx on scratch data), then the
 * configuration's whole call is timed with every one that runs it, as
 * cuDNN's fused call (where it has the activation) and as the convolution
 * followed by our epilogue kernel, and the fastest of both kept: the fused
 * call runs some algorithms as three kernels, and some problems only with
 * algorithms much slower than the best plain convolution. The choice is
 * kept in the context, keyed by the problem, so that a convolution prepared
 * again (a measurement, a search's rewritten graph, a plan) reuses it:
 * timing every algorithm takes many times longer than measuring the one.
 * Beside the legacy algorithms the first engines of cuDNN's graph API are
 * timed too (gpu_conv_graph.c), the legacy call kept for runs whose
 * buffers the graph's plan cannot take.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

/* Whether the unfused call needs our epilogue kernel after the convolution. */
static bool has_epilogue(const taso_rt_kernel_t *k) {
  return !k->fused && (k->bias_at >= 0 || k->relu || k->clip);
}

/* The bias of k's fused graph, or NULL. */
static const void *graph_bias(const taso_rt_kernel_t *k, void *const *in) {
  return gpu_opgraph_engine(k->opgraph)->fused && k->bias_at >= 0 ? in[k->bias_at] : NULL;
}

/* Whether k's graph plan has the epilogue kernel after it. */
static bool graph_epilogue(const taso_rt_kernel_t *k) {
  return !gpu_opgraph_engine(k->opgraph)->fused &&
         (k->sum_at >= 0 || k->bias_at >= 0 || k->relu || k->clip);
}

/* The graph API's plan, then (unless fused) one epilogue pass with the
 * bias, the summand (the convolution staged apart where the summand is the
 * output's buffer) and the activation. */
static taso_err_t graph_call(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const void *x,
                             void *const *in, void *const *out) {
  taso_err_t err = TASO_OK;
  const float *sum = k->sum_at >= 0 ? in[k->sum_at] : NULL;
  bool staged = sum && sum == out[0];
  TASO_TRY(
      gpu_opgraph_run(ctx, k->opgraph, x, in[1], graph_bias(k, in), staged ? k->staged : out[0]));
  if (graph_epilogue(k))
    CUDA_TRY(gpu_kernel_epilogue(k, out[0], k->bias_at >= 0 ? in[k->bias_at] : NULL,
                                 staged ? k->staged : sum, k->channels, k->inner, ctx->stream));
fail:
  return err;
}

static taso_err_t conv_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                           void *const *out) {
  taso_err_t err = TASO_OK;
  const float one = 1.0f;
  const void *x = in[0];
  if (k->padded) {
    CUDA_TRY(gpu_pad(in[0], k->padded, k->win, ctx->stream));
    x = k->padded;
  }
  if (k->opgraph && gpu_opgraph_aligned(x, in[1], graph_bias(k, in), out[0]) &&
      (k->staged || k->sum_at < 0 || in[k->sum_at] != out[0]))
    return graph_call(ctx, k, x, in, out);
  cudnnTensorDescriptor_t xd = k->pd ? k->pd : k->xd;
  if (k->fused) {
    /* Without a summand, z is the output itself with weight 0. */
    const float alpha2 = k->sum_at >= 0 ? 1.0f : 0.0f;
    const void *z = k->sum_at >= 0 ? in[k->sum_at] : out[0];
    const void *bias = k->bias_at >= 0 ? in[k->bias_at] : k->zero_bias;
    CUDNN_TRY(cudnnConvolutionBiasActivationForward(ctx->dnn, &one, xd, x, k->wd, in[1], k->cd,
                                                    k->algo, ctx->workspace, k->ws, &alpha2, k->yd,
                                                    z, k->bd, bias, k->ad, k->yd, out[0]));
  } else {
    float beta = 0.0f;
    if (k->sum_at >= 0) {
      if (in[k->sum_at] != out[0])
        CUDA_TRY(cudaMemcpyAsync(out[0], in[k->sum_at], sizeof(float) * (size_t)k->n,
                                 cudaMemcpyDeviceToDevice, ctx->stream));
      beta = 1.0f;
    }
    CUDNN_TRY(cudnnConvolutionForward(ctx->dnn, &one, xd, x, k->wd, in[1], k->cd, k->algo,
                                      ctx->workspace, k->ws, &beta, k->yd, out[0]));
    if (has_epilogue(k)) /* one pass: the bias of each channel, then ReLU or clip */
      CUDA_TRY(gpu_kernel_epilogue(k, out[0], k->bias_at >= 0 ? in[k->bias_at] : NULL, NULL,
                                   k->channels, k->inner, ctx->stream));
  }
fail:
  return err;
}

/* cuDNN has no name function for its algorithm enumerators. */
static const char *algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    return "IMPLICIT_GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
    return "IMPLICIT_PRECOMP_GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
    return "GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
    return "DIRECT";
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
    return "FFT";
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
    return "FFT_TILING";
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
    return "WINOGRAD";
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
    return "WINOGRAD_NONFUSED";
  default:
    return "unknown algorithm";
  }
}

/* The calls as gpu_describe_conv names them and parse_call reads them. */
#define FUSED_CALL "cudnnConvolutionBiasActivationForward "
#define PLAIN_CALL "cudnnConvolutionForward "
#define GRAPH_CALL "cudnnBackendExecute "

void gpu_describe_conv(const taso_rt_kernel_t *k, char *buf, int len) {
  if (k->opgraph) {
    const gpu_engine_t *e = gpu_opgraph_engine(k->opgraph);
    char engine[512];
    gpu_engine_format(e, engine, sizeof engine);
    snprintf(buf, (size_t)len, "%s%s%s%s, %s math", GRAPH_CALL, engine,
             graph_epilogue(k) ? " + epilogue kernel" : "", k->padded ? ", explicit padding" : "",
             e->tensor ? "tensor-op" : "fma");
    return;
  }
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnGetConvolutionMathType(k->cd, &math);
  snprintf(buf, (size_t)len, "%s%s%s%s, %s math", k->fused ? FUSED_CALL : PLAIN_CALL,
           algorithm_name(k->algo), has_epilogue(k) ? " + epilogue kernel" : "",
           k->padded ? ", explicit padding" : "",
           math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
               ? "tensor-op"
               : "fma");
}

/* Buffers of a configuration's shapes (the context's, kept for the next
 * search), filled with fixed values. */
static taso_err_t scratch_fill(taso_rt_ctx_t *ctx, const taso_rt_kernel_t *k, float **in,
                               float **out) {
  taso_err_t err = TASO_OK;
  for (int i = 0; i < k->cfg.nin; i++) {
    int64_t n = taso_tensor_size(&k->cfg.in[i]);
    TASO_TRY(gpu_buffer(&ctx->find[i], &ctx->find_count[i], n));
    in[i] = ctx->find[i];
    CUDA_TRY(gpu_fill(in[i], n, 0x9e3779b9u * (uint32_t)(i + 1), ctx->stream));
  }
  for (int i = 0; i < k->cfg.nout; i++) {
    int64_t n = taso_tensor_size(&k->cfg.out[i]);
    TASO_TRY(gpu_buffer(&ctx->find[TASO_RT_MAX_IN + i], &ctx->find_count[TASO_RT_MAX_IN + i], n));
    out[i] = ctx->find[TASO_RT_MAX_IN + i];
    CUDA_TRY(cudaMemsetAsync(out[i], 0, sizeof(float) * (size_t)(n ? n : 1), ctx->stream));
  }
fail:
  return err;
}

/* ---- the algorithm table ---------------------------------------------------- */

/* FNV-1a over the key's bytes. */
static uint64_t key_hash(const int32_t *key) {
  const unsigned char *b = (const unsigned char *)key;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof(int32_t) * GPU_CONV_KEY; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The entry of key, or the empty slot where it would go (NULL: no table). */
static gpu_algo_t *algos_slot(gpu_algos_t *t, const int32_t *key) {
  if (!t->cap) return NULL;
  for (size_t i = key_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1))
    if (!t->v[i].used || memcmp(t->v[i].key, key, sizeof t->v[i].key) == 0) return &t->v[i];
}

/* Keeps e in the table, which grows to stay at most half full; a table
 * without memory forgets (the next prepare searches again). */
static void algos_keep(gpu_algos_t *t, const gpu_algo_t *e) {
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    gpu_algo_t *v = calloc(cap, sizeof *v), *old = t->v;
    if (!v) return;
    size_t n = t->cap;
    t->v = v;
    t->cap = cap;
    for (size_t i = 0; i < n; i++)
      if (old[i].used) *algos_slot(t, old[i].key) = old[i];
    free(old);
  }
  gpu_algo_t *slot = algos_slot(t, e->key);
  if (!slot->used) t->n++;
  *slot = *e;
  slot->used = true;
}

void gpu_algos_free(gpu_algos_t *algos) {
  free(algos->v);
  for (size_t i = 0; i < algos->ngiven; i++)
    free(algos->given[i].key);
  free(algos->given);
  memset(algos, 0, sizeof *algos);
}

/* ---- calls given by the reuse hook ------------------------------------------ */

/* Reads gpu_describe_conv's text back: the call, the algorithm or the
 * engine, FP32 math. */
static bool parse_call(const char *s, gpu_reused_t *r) {
  const char *p, *math = ", fma math"; /* the database's rows are FP32 */
  size_t n = strlen(s), m = strlen(math);
  if (n < m || strcmp(s + n - m, math) != 0) return false;
  if (strncmp(s, GRAPH_CALL, strlen(GRAPH_CALL)) == 0) {
    p = gpu_engine_parse(s + strlen(GRAPH_CALL), &r->engine);
    r->graph = true;
    return p && (*p == ' ' || *p == ',');
  }
  if (strncmp(s, FUSED_CALL, strlen(FUSED_CALL)) == 0)
    p = s + strlen(FUSED_CALL), r->fused = true;
  else if (strncmp(s, PLAIN_CALL, strlen(PLAIN_CALL)) == 0)
    p = s + strlen(PLAIN_CALL), r->fused = false;
  else
    return false;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++) {
    const char *name = algorithm_name((cudnnConvolutionFwdAlgo_t)a);
    size_t len = strlen(name);
    if (strncmp(p, name, len) == 0 && (p[len] == ' ' || p[len] == ',')) {
      r->algo = (cudnnConvolutionFwdAlgo_t)a;
      return true;
    }
  }
  return false;
}

bool gpu_reuse(taso_rt_ctx_t *ctx, const char *key, const char *algorithm) {
  gpu_algos_t *t = &ctx->algos;
  gpu_reused_t r = {0};
  char call[1024];
  if (!parse_call(algorithm, &r)) return false;
  if (taso_rt_call_key(key, call, sizeof call) >= (int)sizeof call) return false;
  if (t->ngiven == t->given_cap) {
    size_t cap = t->given_cap ? 2 * t->given_cap : 64;
    gpu_reused_t *v = realloc(t->given, cap * sizeof *v);
    if (!v) return false;
    t->given = v;
    t->given_cap = cap;
  }
  size_t len = strlen(call) + 1;
  if (!(r.key = malloc(len))) return false;
  memcpy(r.key, call, len);
  t->given[t->ngiven++] = r;
  t->sorted = false;
  return true;
}

static int given_cmp(const void *a, const void *b) {
  return strcmp(((const gpu_reused_t *)a)->key, ((const gpu_reused_t *)b)->key);
}

/* The legacy call beside a given graph engine (for a run whose buffers
 * are not aligned for it): cuDNN's first FP32 algorithm by its heuristics,
 * untimed. */
static bool heuristic_fallback(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  if (cudnnSetConvolutionMathType(k->cd, CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionForwardAlgorithm_v7(ctx->dnn, k->pd ? k->pd : k->xd, k->wd, k->cd, k->yd,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found,
                                             perf) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int i = 0; i < found; i++)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ctx->workspace_size &&
        (perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH)) {
      k->algo = perf[i].algo;
      k->ws = perf[i].memory;
      k->fused = false;
      return true;
    }
  return false;
}

/* The call given for k's configuration, if any (FP32 only: the ones
 * given are), and whether k can make it: the fused call only where it
 * computes k, the algorithm's workspace within the context's. */
static bool given_call(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  gpu_algos_t *t = &ctx->algos;
  char key[1024], call[1024];
  if (!t->ngiven || ctx->tf32) return false;
  if (!t->sorted) {
    qsort(t->given, t->ngiven, sizeof *t->given, given_cmp);
    t->sorted = true;
  }
  if (taso_rt_config_key(&k->cfg, key, sizeof key) >= (int)sizeof key) return false;
  taso_rt_call_key(key, call, sizeof call);
  gpu_reused_t probe = {.key = call};
  const gpu_reused_t *r = bsearch(&probe, t->given, t->ngiven, sizeof *t->given, given_cmp);
  size_t ws = 0;
  if (!r || (r->fused && !k->can_fuse) || gpu_workspace(ctx) != TASO_OK) return false;
  if (r->graph) return heuristic_fallback(ctx, k) && gpu_opgraph_use(ctx, k, &r->engine) == TASO_OK;
  if (cudnnSetConvolutionMathType(k->cd, CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionForwardWorkspaceSize(ctx->dnn, k->pd ? k->pd : k->xd, k->wd, k->cd, k->yd,
                                              r->algo, &ws) != CUDNN_STATUS_SUCCESS ||
      ws > ctx->workspace_size)
    return false;
  k->algo = r->algo;
  k->ws = ws;
  k->fused = r->fused;
  return true;
}

/* The problem as the descriptors state it, and the math allowed. */
static void conv_key(const taso_rt_ctx_t *ctx, const taso_rt_kernel_t *k, int32_t *key) {
  const taso_rt_config_t *c = &k->cfg;
  int32_t top, left, i = 0;
  memset(key, 0, sizeof(int32_t) * GPU_CONV_KEY);
  taso_window_axis(&c->p, 0, c->in[0].dim[2], c->in[1].dim[2], &top);
  taso_window_axis(&c->p, 1, c->in[0].dim[3], c->in[1].dim[3], &left);
  for (int d = 0; d < 4; d++) {
    key[i++] = c->in[0].dim[d];
    key[i++] = c->in[1].dim[d];
  }
  key[i++] = c->out[0].dim[2];
  key[i++] = c->out[0].dim[3];
  key[i++] = c->p.stride[0];
  key[i++] = c->p.stride[1];
  key[i++] = top;
  key[i++] = left;
  key[i++] = gpu_is_nhwc(c, &c->in[0]);
  key[i++] = k->padded != NULL;
  key[i++] = k->win.oh;
  key[i++] = k->win.ow;
  key[i++] = k->can_fuse;
  key[i++] = k->bias_at >= 0;
  key[i++] = k->sum_at >= 0;
  key[i++] = ctx->tf32;
}

static taso_err_t set_4d(cudnnTensorDescriptor_t *d, cudnnTensorFormat_t fmt, int n, int c, int h,
                         int w) {
  taso_err_t err = TASO_OK;
  if (!*d) CUDNN_TRY(cudnnCreateTensorDescriptor(d));
  CUDNN_TRY(cudnnSetTensor4dDescriptor(*d, fmt, CUDNN_DATA_FLOAT, n, c, h, w));
fail:
  return err;
}

/* Runs of a call timed together, after two untimed ones. */
#define CONV_TIMED_RUNS 5

/* The configuration's whole call with k's algorithm: twice untimed (the
 * first checked: an execution error is sticky, the context unusable:
 * *broken), then the mean of CONV_TIMED_RUNS runs between two events. */
static taso_err_t time_call(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, float *const *in,
                            float *const *out, cudaEvent_t ev[2], float *ms, bool *broken) {
  taso_err_t err = TASO_OK;
  TASO_TRY(conv_run(ctx, k, (void *const *)in, (void *const *)out));
  cudaError_t rc = cudaStreamSynchronize(ctx->stream);
  if (rc != cudaSuccess) {
    *broken = true;
    return taso_error(TASO_ERR_LIB, "CUDA: %s", cudaGetErrorString(rc));
  }
  TASO_TRY(conv_run(ctx, k, (void *const *)in, (void *const *)out));
  CUDA_TRY(cudaEventRecord(ev[0], ctx->stream));
  for (int r = 0; r < CONV_TIMED_RUNS; r++)
    TASO_TRY(conv_run(ctx, k, (void *const *)in, (void *const *)out));
  CUDA_TRY(cudaEventRecord(ev[1], ctx->stream));
  CUDA_TRY(cudaEventSynchronize(ev[1]));
  CUDA_TRY(cudaEventElapsedTime(ms, ev[0], ev[1]));
  *ms /= CONV_TIMED_RUNS;
fail:
  return err;
}

/* A call to time: an algorithm (its index in cuDNN's ranking) and whether
 * the fused call makes it. */
typedef struct {
  int at;
  bool fused;
  float ms;
} conv_candidate_t;

/* Sets k to candidate c of perf; false (why in last) where cuDNN refuses
 * its math. DEFAULT math permits TF32 on Ampere and later: FP32 is pinned
 * to FMA. */
static bool use_candidate(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k,
                          const cudnnConvolutionFwdAlgoPerf_t *perf, conv_candidate_t c, char *last,
                          int len) {
  k->algo = perf[c.at].algo;
  k->ws = perf[c.at].memory;
  k->fused = c.fused;
  cudnnStatus_t st =
      cudnnSetConvolutionMathType(k->cd, ctx->tf32 ? perf[c.at].mathType : CUDNN_FMA_MATH);
  if (st == CUDNN_STATUS_SUCCESS) return true;
  snprintf(last, (size_t)len, "cuDNN: %s", cudnnGetErrorString(st));
  return false;
}

/* Results asked of cuDNN's search: every algorithm with each math type
 * it has, so that an FP32 search sees every FMA entry (asking for
 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT could cut the list after 8 entries,
 * tensor-op ones included). */
#define FIND_RESULTS (4 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT)

/* Engines of the graph API timed for a convolution, of each graph (alone,
 * fused): cuDNN's first ones by its heuristics. */
#define GRAPH_TRIED 8

/* Times the graph API's first engines for k on the scratch buffers, in two
 * rounds as the legacy calls, and makes k run the fastest (k->opgraph) where
 * it beats legacy_ms, or wherever one runs under GPU_CONV_GRAPH; else k is
 * left as it was. An engine that fails is skipped; a failure of the
 * device ends the choice. */
static taso_err_t choose_engine(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, float *const *in,
                                float *const *out, cudaEvent_t ev[2], float legacy_ms) {
  taso_err_t err = TASO_OK;
  gpu_engine_t e[2 * GRAPH_TRIED];
  gpu_opgraph_t *plan[2 * GRAPH_TRIED] = {0}; /* each engine's plan, built once */
  float ms[2 * GRAPH_TRIED];
  int n = 0, fused = 0, best = -1;
  /* none listed (an error of the listing included): the legacy call stays */
  if (gpu_opgraph_engines(ctx, k, false, e, GRAPH_TRIED, &n) != TASO_OK) n = 0;
  if (ctx->conv_fused && gpu_opgraph_engines(ctx, k, true, e + n, GRAPH_TRIED, &fused) == TASO_OK)
    n += fused;
  for (int i = 0; i < n; i++) {
    ms[i] = INFINITY;
    if (gpu_opgraph_use(ctx, k, &e[i]) != TASO_OK) continue;
    plan[i] = k->opgraph;
    k->opgraph = NULL;
  }
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < n; i++) {
      float t = 0;
      bool broken = false;
      if (!plan[i] || (round == 1 && isinf(ms[i]))) continue;
      k->opgraph = plan[i];
      err = time_call(ctx, k, in, out, ev, &t, &broken);
      k->opgraph = NULL;
      if (broken) goto done;
      if (err == TASO_OK && t < ms[i]) ms[i] = t;
      err = TASO_OK;
    }
  for (int i = 0; i < n; i++)
    if (!isinf(ms[i]) && (best < 0 || ms[i] < ms[best])) best = i;
  if (best >= 0 && (ctx->conv_api == GPU_CONV_GRAPH || ms[best] < legacy_ms)) {
    k->opgraph = plan[best]; /* else the legacy call stays */
    plan[best] = NULL;
  }
done:
  for (int i = 0; i < n; i++)
    gpu_opgraph_free(plan[i]);
  return err;
}

/* Finds the algorithms that run the convolution on scratch data
 * (cudnnFindConvolutionForwardAlgorithmEx), then times the configuration's
 * whole call with every one of them, fused and not, in two rounds (each
 * call's faster round counts, so that a round while the clock ramps up
 * does not decide), and keeps the fastest. Every algorithm, not cuDNN's
 * first few: its ranking of close algorithms changes from process to
 * process. */
static taso_err_t choose_algorithm(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  taso_err_t err = TASO_OK;
  float *in[TASO_RT_MAX_IN] = {0}, *out[2] = {0};
  cudnnConvolutionFwdAlgoPerf_t perf[FIND_RESULTS];
  conv_candidate_t cand[2 * FIND_RESULTS];
  cudaEvent_t ev[2] = {0};
  int found = 0, tried = 0, ncand = 0, best = -1; /* best: index in cand */
  char last[256] = "no algorithm returned";
  if ((err = gpu_workspace(ctx)) != TASO_OK) goto fail;
  if ((err = scratch_fill(ctx, k, in, out)) != TASO_OK) goto fail;
  for (int i = 0; i < 2; i++)
    CUDA_TRY(cudaEventCreate(&ev[i]));
  if (k->padded) CUDA_TRY(gpu_pad(in[0], k->padded, k->win, ctx->stream));
  CUDNN_TRY(cudnnFindConvolutionForwardAlgorithmEx(
      ctx->dnn, k->pd ? k->pd : k->xd, k->padded ? k->padded : in[0], k->wd, in[1], k->cd, k->yd,
      out[0], FIND_RESULTS, &found, perf, ctx->workspace, ctx->workspace_size));
  for (int i = 0; i < found; i++) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx->workspace_size) continue;
    if (!ctx->tf32 && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH)
      continue;
    tried++;
    for (int fused = 0; fused <= (int)k->can_fuse; fused++) {
      conv_candidate_t c = {.at = i, .fused = fused};
      if (!use_candidate(ctx, k, perf, c, last, sizeof last)) break;
      bool broken = false;
      err = time_call(ctx, k, in, out, ev, &c.ms, &broken);
      if (broken) goto fail; /* the device's failure, not the algorithm's */
      if (err != TASO_OK) {
        snprintf(last, sizeof last, "%s", taso_error_detail());
        continue;
      }
      cand[ncand++] = c;
    }
  }
  err = TASO_OK;
  for (int j = 0; j < ncand; j++) { /* the second round */
    float ms = 0;
    bool broken = false;
    if (!use_candidate(ctx, k, perf, cand[j], last, sizeof last)) continue;
    err = time_call(ctx, k, in, out, ev, &ms, &broken);
    if (broken) goto fail;
    if (err == TASO_OK && ms < cand[j].ms) cand[j].ms = ms;
    err = TASO_OK;
  }
  for (int j = 0; j < ncand; j++)
    if (best < 0 || cand[j].ms < cand[best].ms) best = j;
  if (best < 0) {
    err = GPU_UNSUPPORTED(&k->cfg, "no cuDNN algorithm runs it (%d of %d tried; last: %s)", tried,
                          found, last);
    goto fail;
  }
  if (!use_candidate(ctx, k, perf, cand[best], last, sizeof last))
    err = taso_error(TASO_ERR_LIB, "gpu: conv2d: %s", last);
  else if (ctx->conv_api != GPU_CONV_LEGACY)
    err = choose_engine(ctx, k, in, out, ev, cand[best].ms);
fail:
  cudaStreamSynchronize(ctx->stream);
  for (int i = 0; i < 2; i++)
    if (ev[i]) cudaEventDestroy(ev[i]);
  return err;
}

/* The algorithm of the table when it has the problem, else the one found
 * (kept, and so is "none runs it"; a failure of the device is not). */
static taso_err_t known_algorithm(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  taso_err_t err = TASO_OK;
  gpu_algo_t e = {0};
  conv_key(ctx, k, e.key);
  const gpu_algo_t *hit = algos_slot(&ctx->algos, e.key);
  if (hit && hit->used) {
    if (!hit->found) return GPU_UNSUPPORTED(&k->cfg, "%s", hit->why);
    TASO_TRY(gpu_workspace(ctx));
    CUDNN_TRY(cudnnSetConvolutionMathType(k->cd, hit->math));
    k->algo = hit->algo;
    k->ws = hit->ws;
    k->fused = hit->fused;
    if (hit->graph) TASO_TRY(gpu_opgraph_use(ctx, k, &hit->engine));
    return TASO_OK;
  }
  err = given_call(ctx, k) ? TASO_OK : choose_algorithm(ctx, k);
  if (err != TASO_OK && err != TASO_ERR_UNSUPPORTED) return err;
  e.found = err == TASO_OK;
  if (e.found) {
    e.algo = k->algo;
    e.ws = k->ws;
    e.fused = k->fused;
    e.graph = k->opgraph != NULL;
    if (k->opgraph) e.engine = *gpu_opgraph_engine(k->opgraph);
    CUDNN_TRY(cudnnGetConvolutionMathType(k->cd, &e.math));
  } else {
    /* the reason without gpu_unsupported's prefix, which it adds again */
    const char *why = taso_error_detail(), *colon = strstr(why, "conv2d: ");
    snprintf(e.why, sizeof e.why, "%s", colon ? colon + 8 : why);
    err = GPU_UNSUPPORTED(&k->cfg, "%s", e.why);
  }
  algos_keep(&ctx->algos, &e);
  return err;
fail:
  return err;
}

taso_err_t gpu_prepare_conv(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  taso_err_t err = TASO_OK;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *x = &c->in[0], *w = &c->in[1], *y = &c->out[0];
  if (x->rank != 4 || w->rank != 4 || y->rank != 4 || x->dim[1] % w->dim[1] != 0)
    return taso_error(TASO_ERR_ARG, "gpu: conv2d: bad operand shapes");
  if (c->p.act != TASO_ACT_NONE && c->p.act != TASO_ACT_RELU)
    return GPU_UNSUPPORTED(c, "activation %d", (int)c->p.act);
  int32_t N = x->dim[0], C = x->dim[1], H = x->dim[2], W = x->dim[3];
  int32_t CO = w->dim[0], CG = w->dim[1], KH = w->dim[2], KW = w->dim[3];
  int32_t OH = y->dim[2], OW = y->dim[3], sh = c->p.stride[0], sw = c->p.stride[1], top, left;
  taso_window_axis(&c->p, 0, H, KH, &top);
  taso_window_axis(&c->p, 1, W, KW, &left);
  int at = 2;
  if (c->fuse & TASO_FUSE_BIAS) k->bias_at = at++;
  if (c->fuse & TASO_FUSE_SUM) k->sum_at = at++;
  if (k->bias_at >= 0 && taso_tensor_size(&c->in[k->bias_at]) != w->dim[0])
    return taso_error(TASO_ERR_ARG, "gpu: conv2d: bias must be one value per channel (%d)",
                      w->dim[0]);
  if (k->sum_at >= 0 && taso_tensor_size(&c->in[k->sum_at]) != k->n)
    return taso_error(TASO_ERR_ARG, "gpu: conv2d: summand must have the output's shape");
  k->relu = (c->fuse & TASO_FUSE_RELU) || c->p.act == TASO_ACT_RELU;
  k->clip = c->fuse & TASO_FUSE_CLIP;
  /* the fused call has no identity activation for most algorithms, and no clip */
  k->can_fuse = k->relu;
  k->fused = false;
  bool nhwc = gpu_is_nhwc(c, x);
  cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  int on, oc, oh, ow;
  TASO_TRY(set_4d(&k->xd, fmt, N, C, H, W));
  TASO_TRY(set_4d(&k->yd, fmt, N, CO, OH, OW));
  /* weights stay row-major [out, in/groups, kh, kw] in every layout */
  CUDNN_TRY(cudnnCreateFilterDescriptor(&k->wd));
  CUDNN_TRY(cudnnSetFilter4dDescriptor(k->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CO, CG, KH, KW));
  CUDNN_TRY(cudnnCreateConvolutionDescriptor(&k->cd));
  CUDNN_TRY(cudnnSetConvolution2dDescriptor(k->cd, top, left, sh, sw, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  CUDNN_TRY(cudnnSetConvolutionGroupCount(k->cd, C / CG));
  CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(k->cd, k->xd, k->wd, &on, &oc, &oh, &ow));
  if (oh != OH || ow != OW) {
    if (nhwc) return GPU_UNSUPPORTED(c, "asymmetric padding in channels-last layout");
    k->win = (gpu_window_t){.planes = (int64_t)N * C,
                            .h = H,
                            .w = W,
                            .oh = (OH - 1) * sh + KH,
                            .ow = (OW - 1) * sw + KW,
                            .kh = KH,
                            .kw = KW,
                            .sh = sh,
                            .sw = sw,
                            .top = top,
                            .left = left};
    TASO_TRY(set_4d(&k->pd, fmt, N, C, k->win.oh, k->win.ow));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(k->cd, 0, 0, sh, sw, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionGroupCount(k->cd, C / CG));
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(k->cd, k->pd, k->wd, &on, &oc, &oh, &ow));
    if (oh != OH || ow != OW)
      return taso_error(TASO_ERR_LIB, "gpu: conv2d: cuDNN gives %dx%d for %dx%d", oh, ow, OH, OW);
    CUDA_TRY(cudaMalloc((void **)&k->padded,
                        sizeof(float) * (size_t)(k->win.planes * k->win.oh * k->win.ow)));
  }
  k->channels = CO;
  k->inner = nhwc ? 1 : (int64_t)OH * OW;
  if (k->bias_at >= 0 || k->can_fuse) TASO_TRY(set_4d(&k->bd, fmt, 1, CO, 1, 1));
  if (k->can_fuse) {
    CUDNN_TRY(cudnnCreateActivationDescriptor(&k->ad));
    CUDNN_TRY(
        cudnnSetActivationDescriptor(k->ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    if (k->bias_at < 0) {
      CUDA_TRY(cudaMalloc((void **)&k->zero_bias, sizeof(float) * (size_t)CO));
      CUDA_TRY(cudaMemset(k->zero_bias, 0, sizeof(float) * (size_t)CO));
    }
  }
  CUDNN_TRY(cudnnSetConvolutionMathType(k->cd, ctx->tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  k->run = conv_run;
  TASO_TRY(known_algorithm(ctx, k));
  if (k->opgraph && k->sum_at >= 0)
    CUDA_TRY(cudaMalloc((void **)&k->staged, sizeof(float) * (size_t)k->n));
  return TASO_OK;
fail:
  return err;
}

static taso_err_t pool_run_cudnn(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                 void *const *out) {
  taso_err_t err = TASO_OK;
  const float one = 1.0f, zero = 0.0f;
  CUDNN_TRY(cudnnPoolingForward(ctx->dnn, k->pool, &one, k->xd, in[0], &zero, k->yd, out[0]));
fail:
  return err;
}

static taso_err_t pool_run_direct(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                  void *const *out) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(gpu_pool(k->op, in[0], out[0], k->win, ctx->stream));
fail:
  return err;
}

taso_err_t gpu_prepare_pool(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  taso_err_t err = TASO_OK;
  const taso_rt_config_t *c = &k->cfg;
  const taso_tensor_t *x = &c->in[0], *y = &c->out[0];
  if (x->rank != 4 || y->rank != 4) return taso_error(TASO_ERR_ARG, "gpu: pool: bad shapes");
  int32_t N = x->dim[0], C = x->dim[1], H = x->dim[2], W = x->dim[3];
  int32_t OH = y->dim[2], OW = y->dim[3], KH = c->p.kernel[0], KW = c->p.kernel[1], top, left;
  taso_window_axis(&c->p, 0, H, KH, &top);
  taso_window_axis(&c->p, 1, W, KW, &left);
  bool is_max = c->kind == TASO_OP_POOL_MAX;
  k->op = is_max ? GPU_POOL_MAX : c->p.exclude_pad ? GPU_POOL_AVG_EXCLUDE : GPU_POOL_AVG_INCLUDE;
  cudnnPoolingMode_t mode = is_max             ? CUDNN_POOLING_MAX
                            : c->p.exclude_pad ? CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
                                               : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  bool nhwc = gpu_is_nhwc(c, x);
  cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  TASO_TRY(set_4d(&k->xd, fmt, N, C, H, W));
  TASO_TRY(set_4d(&k->yd, fmt, N, C, OH, OW));
  CUDNN_TRY(cudnnCreatePoolingDescriptor(&k->pool));
  /* cuDNN may refuse a window shape; then, as for unequal padding, the
   * direct kernel runs it */
  int on = 0, oc = 0, oh = -1, ow = -1;
  if (cudnnSetPooling2dDescriptor(k->pool, mode, CUDNN_NOT_PROPAGATE_NAN, KH, KW, top, left,
                                  c->p.stride[0], c->p.stride[1]) == CUDNN_STATUS_SUCCESS &&
      cudnnGetPooling2dForwardOutputDim(k->pool, k->xd, &on, &oc, &oh, &ow) ==
          CUDNN_STATUS_SUCCESS &&
      oh == OH && ow == OW) {
    k->run = pool_run_cudnn;
    k->call = "cudnnPoolingForward";
    return TASO_OK;
  }
  if (nhwc) return GPU_UNSUPPORTED(c, "asymmetric padding in channels-last layout");
  k->win = (gpu_window_t){.planes = (int64_t)N * C,
                          .h = H,
                          .w = W,
                          .oh = OH,
                          .ow = OW,
                          .kh = KH,
                          .kw = KW,
                          .sh = c->p.stride[0],
                          .sw = c->p.stride[1],
                          .top = top,
                          .left = left};
  k->run = pool_run_direct;
  k->call = "taso pool kernel";
  return TASO_OK;
fail:
  return err;
}
