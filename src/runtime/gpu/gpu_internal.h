/*
 * Private to the gpu backend: the open device, a prepared kernel, the
 * library-call macros, the helpers the families share (gpu_common.c) and
 * the per-family prepare functions. Calls go one way: backend_gpu.c ->
 * the families -> gpu_common.c.
 *
 * A prepared kernel records everything its run needs (descriptors, the
 * chosen convolution algorithm, sizes), so that run only enqueues library
 * calls and kernels on the context's stream and never synchronizes: the
 * shared runner times runs between its own syncs.
 */
#ifndef TASO_GPU_INTERNAL_H
#define TASO_GPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "gpu_kernels.h"
#include "runtime.h"

/* Which of cuDNN's APIs a convolution's choice times (TASO_GPU_CONV_API):
 * both (the default), the legacy algorithms only, or the graph API's
 * engines wherever one runs it (the legacy call then only where a run's
 * buffers are not aligned for it). */
enum { GPU_CONV_BOTH, GPU_CONV_LEGACY, GPU_CONV_GRAPH };

/* Buffer slots of a configuration: operands, then results. */
#define GPU_SLOTS (TASO_RT_MAX_IN + 2)

/* A convolution problem as cuDNN sees it (shapes, padding, strides,
 * layout, fused call, math): what its algorithm choice depends on. */
#define GPU_CONV_KEY 24

/* An engine of cuDNN's graph API as a plan is built from it again: its
 * global index and knob values (gpu_conv_graph.c). */
#define GPU_ENGINE_KNOBS 16
typedef struct {
  int64_t id;
  int nknobs;
  int64_t knob[GPU_ENGINE_KNOBS][2]; /* knob type, value */
  bool tensor;                       /* uses tensor cores (TF32) */
  bool fused;                        /* of the graph with the bias and ReLU */
} gpu_engine_t;

/* A convolution's plan of the graph API (opaque: gpu_conv_graph.c). */
typedef struct gpu_opgraph gpu_opgraph_t;

/* The algorithm chosen for one convolution problem, or why none runs it. */
typedef struct {
  bool used; /* the slot holds an entry */
  int32_t key[GPU_CONV_KEY];
  bool found; /* false: no algorithm runs it (why) */
  cudnnConvolutionFwdAlgo_t algo;
  size_t ws; /* workspace bytes it needs */
  cudnnMathType_t math;
  bool fused; /* cudnnConvolutionBiasActivationForward was faster */
  bool graph; /* the graph API's engine was faster still */
  gpu_engine_t engine;
  char why[256];
} gpu_algo_t;

/* A convolution's call chosen before (the reuse hook: a cost database's
 * row), FP32 math. */
typedef struct {
  char *key; /* taso_rt_call_key of its configuration */
  cudnnConvolutionFwdAlgo_t algo;
  bool fused; /* cudnnConvolutionBiasActivationForward */
  bool graph; /* the graph API's engine */
  gpu_engine_t engine;
} gpu_reused_t;

/* The context's algorithm choices, an open-addressing hash table: a
 * convolution prepared again (each search step, each layout, each
 * measurement of a rewritten graph) reuses its choice instead of timing
 * every cuDNN algorithm again. Before timing, a problem not in the table
 * looks for its configuration among the calls given to the reuse hook. */
typedef struct {
  gpu_algo_t *v;
  size_t cap, n;       /* cap is 0 or a power of two */
  gpu_reused_t *given; /* the reuse hook's calls, sorted by key when sorted */
  size_t ngiven, given_cap;
  bool sorted;
} gpu_algos_t;

struct taso_rt_ctx {
  int device;                /* CUDA device ordinal */
  cudaStream_t stream;       /* every run is enqueued here */
  cudnnHandle_t dnn;         /* bound to stream */
  cublasHandle_t blas;       /* bound to stream */
  bool tf32;                 /* tensor-op (TF32) math allowed (set_tf32) */
  int conv_api;              /* GPU_CONV_* (TASO_GPU_CONV_API) */
  bool conv_fused;           /* time fused graphs too (TASO_GPU_CONV_FUSED=1) */
  void *workspace;           /* cuDNN workspace shared by every kernel (one stream) */
  size_t workspace_size;     /* bytes; allocated on the first convolution */
  size_t workspace_cap;      /* the size to allocate (TASO_GPU_WORKSPACE_MB) */
  void *blas_workspace;      /* cuBLAS's, set once: its own pool cannot be captured */
  bool capturing;            /* a capture is under way: uploads and downloads do not wait */
  cudaEvent_t marks[2];      /* the device clock's start and stop */
  void *flush;               /* written over to empty the L2 (flush_cache) */
  size_t flush_bytes;        /* twice the L2 */
  unsigned flushes;          /* alternates the byte written */
  float *sink;               /* the touch kernel's never-written output */
  float *scratch[GPU_SLOTS]; /* timing buffers handed out by the scratch hook */
  int64_t scratch_count[GPU_SLOTS];
  float *find[GPU_SLOTS]; /* buffers of the convolution algorithm search */
  int64_t find_count[GPU_SLOTS];
  gpu_algos_t algos;
};

/* A captured graph, instantiated. */
struct taso_rt_graph {
  cudaGraphExec_t exec;
};

typedef taso_err_t (*gpu_run_fn)(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                                 void *const *out);

struct taso_rt_kernel {
  taso_rt_config_t cfg; /* what was prepared */
  gpu_run_fn run;       /* the family's run */
  const char *call;     /* what run calls, for the cost database ("cublasSgemm") */
  /* cuDNN descriptors, NULL where unused */
  cudnnTensorDescriptor_t xd, yd, bd, pd; /* input, output, bias, padded input */
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  cudnnPoolingDescriptor_t pool;
  cudnnConvolutionFwdAlgo_t algo; /* chosen by timing at prepare */
  size_t ws;                      /* workspace bytes the algorithm needs */
  float *zero_bias;               /* device zeros: the fused call needs a bias */
  float *padded;                  /* device scratch for explicit padding */
  gpu_opgraph_t *opgraph;         /* conv: the graph API's plan, where it was faster */
  float *staged;                  /* conv with graph and summand: the convolution's
                                     result when the summand is the output's buffer */
  bool fused;               /* conv: one cudnnConvolutionBiasActivationForward, else the convolution
                               and the epilogue kernel (bias, ReLU or clip), whichever was faster */
  bool can_fuse;            /* conv: the fused call computes it (a ReLU, no clip) */
  bool relu;                /* epilogue ReLU */
  bool clip;                /* epilogue clip to cfg.p.bound (never with relu) */
  int bias_at, sum_at;      /* index in in[] of the bias, the summand; -1 if none */
  int op;                   /* GPU_BIN_*, GPU_POOL_* or a copy direction */
  gpu_walk_t walk;          /* strided element-wise kernels */
  gpu_window_t win;         /* padding and pooling geometry */
  int64_t n;                /* output elements */
  int64_t outer, n0, n1;    /* concat/split: rows, floats per row of each part */
  int64_t channels, inner;  /* batchnorm; conv: its bias's epilogue stride */
  int m, kdim, ncol, batch; /* gemm: [batch] m x kdim times kdim x ncol */
};

/* Library calls inside a function with `taso_err_t err` and a `fail:` label:
 * a failure records file:line and the library's own message. */
#define CUDA_TRY(call)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      err =                                                                                        \
          taso_error(TASO_ERR_LIB, "%s:%d: CUDA: %s", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

#define CUDNN_TRY(call)                                                                            \
  do {                                                                                             \
    cudnnStatus_t s_ = (call);                                                                     \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                              \
      err = taso_error(s_ == CUDNN_STATUS_NOT_SUPPORTED ? TASO_ERR_UNSUPPORTED : TASO_ERR_LIB,     \
                       "%s:%d: cuDNN: %s", __FILE__, __LINE__, cudnnGetErrorString(s_));           \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

#define CUBLAS_TRY(call)                                                                           \
  do {                                                                                             \
    cublasStatus_t s_ = (call);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      err = taso_error(s_ == CUBLAS_STATUS_NOT_SUPPORTED ? TASO_ERR_UNSUPPORTED : TASO_ERR_LIB,    \
                       "%s:%d: cuBLAS: %s", __FILE__, __LINE__, cublasGetStatusString(s_));        \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

/* ---- shared helpers (gpu_common.c) ---- */

/* Records the reason and returns TASO_ERR_UNSUPPORTED (the runtime falls
 * back to the reference for this configuration). */
#define GPU_UNSUPPORTED(cfg, ...) gpu_unsupported((cfg), __VA_ARGS__)
taso_err_t gpu_unsupported(const taso_rt_config_t *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Memory layout of a tensor under a configuration's layout: channels last
 * applies to rank-4 activations only. */
bool gpu_is_nhwc(const taso_rt_config_t *cfg, const taso_tensor_t *t);
/* Element stride of each logical axis as stored. */
void gpu_strides(const taso_rt_config_t *cfg, const taso_tensor_t *t, int64_t stride[4]);
/* Logical axes in memory order, slowest first. */
void gpu_order(const taso_rt_config_t *cfg, const taso_tensor_t *t, int order[4]);

/* The epilogue pass of a convolution's or matmul's kernel k over its
 * output y (gpu_epilogue): the bias along (cols, inner), the summand, then
 * k's ReLU or clip. */
cudaError_t gpu_kernel_epilogue(const taso_rt_kernel_t *k, float *y, const float *bias,
                                const float *sum, int64_t cols, int64_t inner, cudaStream_t s);

/* The cuDNN workspace, allocated once at its configured size. */
taso_err_t gpu_workspace(taso_rt_ctx_t *ctx);

/* *buf holds at least count floats (*have of them), reallocated when too
 * small: to a power of two, so that growing sizes reallocate rarely. */
taso_err_t gpu_buffer(float **buf, int64_t *have, int64_t count);

/* ---- the families (gpu_conv.c, gpu_blas.c, gpu_elementwise.c, gpu_movement.c) ---- */

/* cuDNN's name of a prepared convolution's algorithm, its math and call. */
void gpu_describe_conv(const taso_rt_kernel_t *k, char *buf, int len);

/* ---- the graph API's convolutions (gpu_conv_graph.c) ---- */

/* Whether k's bias and ReLU can join its graph (it has one, and neither a
 * summand nor a clip). */
bool gpu_opgraph_can_fuse(const taso_rt_kernel_t *k);
/* Up to max engines that cuDNN's heuristics rank first for k's convolution
 * alone or fused with its bias and ReLU, in that order, that the context's
 * math allows (none: *n 0). */
taso_err_t gpu_opgraph_engines(taso_rt_ctx_t *ctx, const taso_rt_kernel_t *k, bool fused,
                               gpu_engine_t *out, int max, int *n);
/* Makes k->opgraph a plan of engine e (replacing k's), its workspace within
 * the context's; TASO_ERR_UNSUPPORTED or TASO_ERR_LIB where it cannot. */
taso_err_t gpu_opgraph_use(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const gpu_engine_t *e);
/* Enqueues the plan's convolution of x and w (and bias b, fused) into y. */
taso_err_t gpu_opgraph_run(taso_rt_ctx_t *ctx, gpu_opgraph_t *g, const void *x, const void *w,
                           const void *b, void *y);
/* Whether buffers are aligned as the plans declare them (b may be NULL). */
bool gpu_opgraph_aligned(const void *x, const void *w, const void *b, const void *y);
const gpu_engine_t *gpu_opgraph_engine(const gpu_opgraph_t *g);
void gpu_opgraph_free(gpu_opgraph_t *g);
/* "engine 7 knobs 3=1,17=0" (snprintf's return); the parse gives the end
 * of what it read, or NULL. */
int gpu_engine_format(const gpu_engine_t *e, char *buf, int len);
const char *gpu_engine_parse(const char *s, gpu_engine_t *e);

/* Frees the algorithm table. */
void gpu_algos_free(gpu_algos_t *algos);

/* The reuse hook (taso_backend_t): keeps a convolution's call read from
 * its describe; false for anything else. */
bool gpu_reuse(taso_rt_ctx_t *ctx, const char *key, const char *algorithm);

/* Per-family prepare: fills k (zeroed, cfg copied) or says why not. */
taso_err_t gpu_prepare_conv(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);
taso_err_t gpu_prepare_pool(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);
taso_err_t gpu_prepare_gemm(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);
taso_err_t gpu_prepare_elementwise(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);
taso_err_t gpu_prepare_movement(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);

#endif
