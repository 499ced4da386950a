/*
 * The gpu backend: cuDNN 9 and cuBLAS on one CUDA device, with small CUDA
 * kernels (gpu_kernels.cu) for what the libraries lack.
 *
 * The device is TASO_GPU_DEVICE when set, else the local MPI rank (Open
 * MPI, MPICH, Slurm) modulo the device count, else 0. All work goes to one
 * stream; run() only enqueues and sync() waits, so that the shared runner
 * can time a configuration between syncs. Calls must come from the thread
 * that opened the context (the CUDA device is per thread).
 *
 * FP32 exactness: convolutions use FMA math and cuBLAS its default (no TF32)
 * unless set_tf32 allows tensor-op math (a tool's --tf32: a setting of the
 * context, so that what a tool says it ran is what ran).
 * TASO_GPU_WORKSPACE_MB sets the cuDNN workspace (default 512 MiB), which
 * bounds the algorithms a convolution may choose; TASO_GPU_CONV_API (both,
 * legacy, graph) which of cuDNN's APIs its choice times, and
 * TASO_GPU_CONV_FUSED=1 adds the graph API's convolutions fused with their
 * bias and ReLU to it (not yet run on a device: off by default).
 *
 * A kernel-launch costs the host a few microseconds, as long as many of a
 * batch-1 model's kernels run: the runner captures a plan's runs into a
 * CUDA graph (begin_capture .. end_capture, replay), and measurements use
 * the device's own clock (events), its own cache flush (a memset over
 * twice the L2) and buffers kept in the context, not the host's.
 *
 * This file is the backend's top: it opens the device and hands each
 * configuration to its family's prepare (gpu_conv.c, gpu_blas.c,
 * gpu_elementwise.c, gpu_movement.c); what they share is in gpu_common.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

/* An integer from the environment; fallback when unset or not a number. */
static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  return errno || *end ? fallback : x;
}

static int local_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                     "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    long r = env_long(vars[i], -1);
    if (r >= 0) return (int)r;
  }
  return 0;
}

static taso_err_t gpu_probe(char *info, int len) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    return taso_error(TASO_ERR_LIB, "no CUDA device (%s)",
                      rc != cudaSuccess ? cudaGetErrorString(rc) : "device count 0");
  struct cudaDeviceProp prop;
  if ((rc = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
    return taso_error(TASO_ERR_LIB, "CUDA: %s", cudaGetErrorString(rc));
  cudnnHandle_t dnn;
  cudnnStatus_t st = cudnnCreate(&dnn);
  if (st != CUDNN_STATUS_SUCCESS)
    return taso_error(TASO_ERR_LIB, "cuDNN: %s", cudnnGetErrorString(st));
  cudnnDestroy(dnn);
  cublasHandle_t blas;
  cublasStatus_t bs = cublasCreate(&blas);
  if (bs != CUBLAS_STATUS_SUCCESS)
    return taso_error(TASO_ERR_LIB, "cuBLAS: %s", cublasGetStatusString(bs));
  int blas_version = 0;
  cublasGetVersion(blas, &blas_version);
  cublasDestroy(blas);
  snprintf(info, len, "gpu: %d device(s), %s, cuDNN %zu, cuBLAS %d", count, prop.name,
           cudnnGetVersion(), blas_version);
  return TASO_OK;
}

static void gpu_close(taso_rt_ctx_t *ctx) {
  if (!ctx) return;
  cudaSetDevice(ctx->device);
  if (ctx->stream) cudaStreamSynchronize(ctx->stream);
  cudaFree(ctx->workspace);
  if (ctx->blas) cublasDestroy(ctx->blas);
  cudaFree(ctx->blas_workspace); /* after the handle that used it */
  if (ctx->dnn) cudnnDestroy(ctx->dnn);
  for (int i = 0; i < 2; i++)
    if (ctx->marks[i]) cudaEventDestroy(ctx->marks[i]);
  cudaFree(ctx->flush);
  cudaFree(ctx->sink);
  for (int i = 0; i < GPU_SLOTS; i++) {
    cudaFree(ctx->scratch[i]);
    cudaFree(ctx->find[i]);
  }
  gpu_algos_free(&ctx->algos);
  if (ctx->stream) cudaStreamDestroy(ctx->stream);
  free(ctx);
}

/* cuBLAS's recommended workspace on Hopper (4 MiB before it): set by us,
 * since the pool cuBLAS would allocate from cannot be captured. */
#define BLAS_WORKSPACE_BYTES ((size_t)32 << 20)

static taso_err_t gpu_open(int threads, taso_rt_ctx_t **out) {
  (void)threads; /* host threads do not apply */
  taso_err_t err = TASO_OK;
  *out = NULL;
  taso_rt_ctx_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return taso_error(TASO_ERR_NOMEM, "gpu context");
  int count = 0;
  CUDA_TRY(cudaGetDeviceCount(&count));
  if (count < 1) {
    err = taso_error(TASO_ERR_LIB, "no CUDA device");
    goto fail;
  }
  long dev = env_long("TASO_GPU_DEVICE", -1);
  if (dev >= count) {
    err = taso_error(TASO_ERR_ARG, "TASO_GPU_DEVICE=%ld but only %d device(s)", dev, count);
    goto fail;
  }
  ctx->device = dev >= 0 ? (int)dev : local_rank() % count;
  long mb = env_long("TASO_GPU_WORKSPACE_MB", 512);
  ctx->workspace_cap = (size_t)(mb > 0 ? mb : 0) << 20;
  const char *api = getenv("TASO_GPU_CONV_API");
  if (api && *api && strcmp(api, "both") != 0) {
    if (strcmp(api, "legacy") != 0 && strcmp(api, "graph") != 0) {
      err = taso_error(TASO_ERR_ARG, "TASO_GPU_CONV_API=%s: not both, legacy or graph", api);
      goto fail;
    }
    ctx->conv_api = strcmp(api, "legacy") == 0 ? GPU_CONV_LEGACY : GPU_CONV_GRAPH;
  }
  ctx->conv_fused = env_long("TASO_GPU_CONV_FUSED", 0) == 1;
  CUDA_TRY(cudaSetDevice(ctx->device));
  CUDA_TRY(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  CUDNN_TRY(cudnnCreate(&ctx->dnn));
  CUDNN_TRY(cudnnSetStream(ctx->dnn, ctx->stream));
  CUBLAS_TRY(cublasCreate(&ctx->blas));
  CUBLAS_TRY(cublasSetStream(ctx->blas, ctx->stream));
  /* after cublasSetStream, which resets the workspace to cuBLAS's pool */
  CUDA_TRY(cudaMalloc(&ctx->blas_workspace, BLAS_WORKSPACE_BYTES));
  CUBLAS_TRY(cublasSetWorkspace(ctx->blas, ctx->blas_workspace, BLAS_WORKSPACE_BYTES));
  CUBLAS_TRY(cublasSetMathMode(ctx->blas, CUBLAS_DEFAULT_MATH));
  for (int i = 0; i < 2; i++)
    CUDA_TRY(cudaEventCreate(&ctx->marks[i]));
  CUDA_TRY(cudaMalloc((void **)&ctx->sink, sizeof(float)));
  *out = ctx;
  return TASO_OK;
fail:
  gpu_close(ctx);
  return err;
}

static taso_err_t gpu_alloc(taso_rt_ctx_t *ctx, int64_t count, void **buf) {
  taso_err_t err = TASO_OK;
  *buf = NULL;
  if (count < 0) return taso_error(TASO_ERR_ARG, "negative buffer size %lld", (long long)count);
  CUDA_TRY(cudaSetDevice(ctx->device));
  CUDA_TRY(cudaMalloc(buf, sizeof(float) * (size_t)(count ? count : 1)));
fail:
  return err;
}

static void gpu_release(taso_rt_ctx_t *ctx, void *buf) {
  (void)ctx;
  cudaFree(buf); /* waits for the work that may still use it */
}

/* Outside a capture a copy is done when it returns, so that src may be
 * reused at once; inside one it is only recorded (from pinned memory). */
static taso_err_t gpu_upload(taso_rt_ctx_t *ctx, void *dst, const float *src, int64_t count) {
  taso_err_t err = TASO_OK;
  if (count <= 0) return TASO_OK;
  CUDA_TRY(cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)count, cudaMemcpyHostToDevice,
                           ctx->stream));
  if (!ctx->capturing) CUDA_TRY(cudaStreamSynchronize(ctx->stream));
fail:
  return err;
}

static taso_err_t gpu_download(taso_rt_ctx_t *ctx, float *dst, const void *src, int64_t count) {
  taso_err_t err = TASO_OK;
  if (count <= 0) return TASO_OK;
  CUDA_TRY(cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)count, cudaMemcpyDeviceToHost,
                           ctx->stream));
  if (!ctx->capturing) CUDA_TRY(cudaStreamSynchronize(ctx->stream));
fail:
  return err;
}

static taso_err_t gpu_sync(taso_rt_ctx_t *ctx) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(cudaStreamSynchronize(ctx->stream));
fail:
  return err;
}

static void gpu_destroy(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  if (!k) return;
  if (k->xd) cudnnDestroyTensorDescriptor(k->xd);
  if (k->yd) cudnnDestroyTensorDescriptor(k->yd);
  if (k->bd) cudnnDestroyTensorDescriptor(k->bd);
  if (k->pd) cudnnDestroyTensorDescriptor(k->pd);
  if (k->wd) cudnnDestroyFilterDescriptor(k->wd);
  if (k->cd) cudnnDestroyConvolutionDescriptor(k->cd);
  if (k->ad) cudnnDestroyActivationDescriptor(k->ad);
  if (k->pool) cudnnDestroyPoolingDescriptor(k->pool);
  cudaFree(k->zero_bias);
  cudaFree(k->padded);
  cudaFree(k->staged);
  gpu_opgraph_free(k->opgraph);
  free(k);
}

static taso_err_t gpu_prepare(taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg,
                              taso_rt_kernel_t **out) {
  taso_err_t err = TASO_OK;
  *out = NULL;
  if (cfg->kind <= TASO_OP_INPUT || cfg->kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_ARG, "gpu: operator kind %d", (int)cfg->kind);
  const taso_op_info_t *op = &taso_ops[cfg->kind];
  if (cfg->layout == TASO_RT_BLOCKED) return GPU_UNSUPPORTED(cfg, "blocked layouts are oneDNN's");
  if (cfg->layout != TASO_RT_NCHW && cfg->layout != TASO_RT_NHWC)
    return taso_error(TASO_ERR_ARG, "gpu: layout %d", (int)cfg->layout);
  if (cfg->fuse & ~(unsigned)(TASO_FUSE_BIAS | TASO_FUSE_RELU | TASO_FUSE_SUM | TASO_FUSE_CLIP))
    return taso_error(TASO_ERR_ARG, "gpu: fuse flags 0x%x", cfg->fuse);
  bool fusable =
      cfg->kind == TASO_OP_CONV2D || cfg->kind == TASO_OP_MATMUL || cfg->kind == TASO_OP_BMM;
  if (cfg->fuse && !fusable) return GPU_UNSUPPORTED(cfg, "no fused epilogue");
  int nin = op->arity + !!(cfg->fuse & TASO_FUSE_BIAS) + !!(cfg->fuse & TASO_FUSE_SUM);
  if (cfg->nin != nin || cfg->nout != op->outputs)
    return taso_error(TASO_ERR_ARG, "gpu: %s takes %d buffers in and %d out, got %d and %d",
                      op->name, nin, op->outputs, cfg->nin, cfg->nout);
  taso_rt_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return taso_error(TASO_ERR_NOMEM, "gpu kernel");
  k->cfg = *cfg;
  k->bias_at = k->sum_at = -1;
  k->n = taso_tensor_size(&cfg->out[0]);
  CUDA_TRY(cudaSetDevice(ctx->device));
  switch ((taso_op_kind_t)cfg->kind) {
  case TASO_OP_CONV2D:
    err = gpu_prepare_conv(ctx, k);
    break;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    err = gpu_prepare_pool(ctx, k);
    break;
  case TASO_OP_MATMUL:
  case TASO_OP_BMM:
    err = gpu_prepare_gemm(ctx, k);
    break;
  case TASO_OP_EWADD:
  case TASO_OP_EWMUL:
  case TASO_OP_SMUL:
  case TASO_OP_RELU:
  case TASO_OP_ADD:
  case TASO_OP_MUL:
  case TASO_OP_SIGMOID:
  case TASO_OP_TANH:
  case TASO_OP_CLIP:
  case TASO_OP_SOFTMAX:
  case TASO_OP_BATCHNORM:
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
    err = gpu_prepare_elementwise(ctx, k);
    break;
  case TASO_OP_TRANSPOSE:
  case TASO_OP_PERMUTE:
  case TASO_OP_CONCAT:
  case TASO_OP_SPLIT:
  case TASO_OP_SPLIT_AT:
  case TASO_OP_RESHAPE:
  case TASO_OP_ENLARGE:
    err = gpu_prepare_movement(ctx, k);
    break;
  default:
    err = GPU_UNSUPPORTED(cfg, "constants are computed once on the host");
    break;
  }
  if (err != TASO_OK) goto fail;
  *out = k;
  return TASO_OK;
fail:
  gpu_destroy(ctx, k);
  return err;
}

static taso_err_t gpu_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                          void *const *out) {
  return k->run(ctx, k, in, out);
}

static taso_err_t gpu_device_uuid(int device, int *count, char *uuid, int len) {
  taso_err_t err = TASO_OK;
  struct cudaDeviceProp prop;
  *count = 0;
  CUDA_TRY(cudaGetDeviceCount(count));
  if (*count < 1) return taso_error(TASO_ERR_LIB, "no CUDA device");
  if (device < 0 || device >= *count) return TASO_OK;
  CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  const unsigned char *b = (const unsigned char *)prop.uuid.bytes;
  /* nvidia-smi's spelling: GPU-8-4-4-4-12 hex digits */
  snprintf(uuid, (size_t)len,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
fail:
  return err;
}

static taso_err_t gpu_set_tf32(taso_rt_ctx_t *ctx, bool on) {
  taso_err_t err = TASO_OK;
  CUBLAS_TRY(cublasSetMathMode(ctx->blas, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  ctx->tf32 = on;
fail:
  return err;
}

/* ---- capture and replay --------------------------------------------------- */

static taso_err_t gpu_begin_capture(taso_rt_ctx_t *ctx) {
  taso_err_t err = TASO_OK;
  if (ctx->capturing) return taso_error(TASO_ERR_ARG, "gpu: a capture is under way already");
  /* thread-local: another thread's unrelated CUDA calls do not break it */
  CUDA_TRY(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
  ctx->capturing = true;
fail:
  return err;
}

static void gpu_graph_free(taso_rt_ctx_t *ctx, taso_rt_graph_t *g) {
  (void)ctx;
  if (!g) return;
  if (g->exec) cudaGraphExecDestroy(g->exec);
  free(g);
}

static taso_err_t gpu_end_capture(taso_rt_ctx_t *ctx, taso_rt_graph_t **out) {
  taso_err_t err = TASO_OK;
  cudaGraph_t graph = NULL;
  taso_rt_graph_t *g = NULL;
  *out = NULL;
  if (!ctx->capturing) return taso_error(TASO_ERR_ARG, "gpu: no capture under way");
  ctx->capturing = false;
  cudaError_t rc = cudaStreamEndCapture(ctx->stream, &graph);
  if (rc != cudaSuccess) {
    /* a call inside failed and invalidated the capture: not sticky */
    cudaGetLastError();
    err = taso_error(TASO_ERR_LIB, "CUDA graph capture: %s", cudaGetErrorString(rc));
    goto fail;
  }
  if (!(g = calloc(1, sizeof *g))) {
    err = taso_error(TASO_ERR_NOMEM, "gpu graph");
    goto fail;
  }
  CUDA_TRY(cudaGraphInstantiate(&g->exec, graph, 0));
  CUDA_TRY(cudaGraphUpload(g->exec, ctx->stream)); /* the first replay is then no slower */
  *out = g;
  g = NULL;
fail:
  if (graph) cudaGraphDestroy(graph);
  gpu_graph_free(ctx, g);
  return err;
}

static taso_err_t gpu_replay(taso_rt_ctx_t *ctx, taso_rt_graph_t *g) {
  taso_err_t err = TASO_OK;
  CUDA_TRY(cudaGraphLaunch(g->exec, ctx->stream));
fail:
  return err;
}

static taso_err_t gpu_pinned_alloc(taso_rt_ctx_t *ctx, int64_t count, float **buf) {
  taso_err_t err = TASO_OK;
  *buf = NULL;
  CUDA_TRY(cudaSetDevice(ctx->device));
  CUDA_TRY(cudaMallocHost((void **)buf, sizeof(float) * (size_t)(count > 0 ? count : 1)));
fail:
  return err;
}

static void gpu_pinned_release(taso_rt_ctx_t *ctx, float *buf) {
  (void)ctx;
  cudaFreeHost(buf);
}

/* ---- measuring ---------------------------------------------------------------- */

/* How long the device waits before a start mark that is not in a graph:
 * longer than the host takes to queue a library call, so that the mark
 * and the timed work run back to back. */
#define MARK_LEAD_NS 50000

static taso_err_t gpu_mark(taso_rt_ctx_t *ctx, int which) {
  taso_err_t err = TASO_OK;
  if (ctx->capturing) {
    /* an event node of the graph: each replay records it again */
    CUDA_TRY(cudaEventRecordWithFlags(ctx->marks[which], ctx->stream, cudaEventRecordExternal));
  } else {
    if (which == 0) CUDA_TRY(gpu_spin(MARK_LEAD_NS, ctx->stream));
    CUDA_TRY(cudaEventRecord(ctx->marks[which], ctx->stream));
  }
fail:
  return err;
}

static taso_err_t gpu_mark_start(taso_rt_ctx_t *ctx) {
  return gpu_mark(ctx, 0);
}

static taso_err_t gpu_mark_stop(taso_rt_ctx_t *ctx) {
  return gpu_mark(ctx, 1);
}

static taso_err_t gpu_elapsed(taso_rt_ctx_t *ctx, double *ms) {
  taso_err_t err = TASO_OK;
  float t = 0;
  *ms = 0;
  CUDA_TRY(cudaEventSynchronize(ctx->marks[1]));
  CUDA_TRY(cudaEventElapsedTime(&t, ctx->marks[0], ctx->marks[1]));
  *ms = t;
fail:
  return err;
}

static taso_err_t gpu_flush_cache(taso_rt_ctx_t *ctx, void *const *keep, const int64_t *counts,
                                  int n) {
  taso_err_t err = TASO_OK;
  if (!ctx->flush) {
    int l2 = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->device));
    ctx->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
    CUDA_TRY(cudaMalloc(&ctx->flush, ctx->flush_bytes));
  }
  /* another byte each time: no cache keeps lines that were already so */
  CUDA_TRY(cudaMemsetAsync(ctx->flush, (int)(ctx->flushes++ & 1), ctx->flush_bytes, ctx->stream));
  for (int i = 0; i < n; i++)
    CUDA_TRY(gpu_touch(keep[i], counts[i], ctx->sink, ctx->stream));
fail:
  return err;
}

static taso_err_t gpu_scratch(taso_rt_ctx_t *ctx, int slot, int64_t count, void **buf) {
  taso_err_t err = TASO_OK;
  *buf = NULL;
  if (slot < 0 || slot >= GPU_SLOTS) return taso_error(TASO_ERR_ARG, "gpu: scratch slot %d", slot);
  TASO_TRY(gpu_buffer(&ctx->scratch[slot], &ctx->scratch_count[slot], count));
  /* filled again each time: a result or an in-place write left other values */
  CUDA_TRY(gpu_fill(ctx->scratch[slot], count, 0x7a50u + (uint32_t)slot, ctx->stream));
  *buf = ctx->scratch[slot];
fail:
  return err;
}

static void gpu_describe(const taso_rt_kernel_t *k, char *buf, int len) {
  if (k->cfg.kind == TASO_OP_CONV2D)
    gpu_describe_conv(k, buf, len);
  else
    snprintf(buf, (size_t)len, "%s", k->call ? k->call : "unnamed");
}

const taso_backend_t taso_backend_gpu = {
    .name = "gpu",
    .probe = gpu_probe,
    .open = gpu_open,
    .close = gpu_close,
    .alloc = gpu_alloc,
    .release = gpu_release,
    .upload = gpu_upload,
    .download = gpu_download,
    .prepare = gpu_prepare,
    .run = gpu_run,
    .sync = gpu_sync,
    .destroy = gpu_destroy,
    .describe = gpu_describe,
    .device_uuid = gpu_device_uuid,
    .set_tf32 = gpu_set_tf32,
    .begin_capture = gpu_begin_capture,
    .end_capture = gpu_end_capture,
    .replay = gpu_replay,
    .graph_free = gpu_graph_free,
    .pinned_alloc = gpu_pinned_alloc,
    .pinned_release = gpu_pinned_release,
    .mark_start = gpu_mark_start,
    .mark_stop = gpu_mark_stop,
    .elapsed = gpu_elapsed,
    .flush_cache = gpu_flush_cache,
    .scratch = gpu_scratch,
    .reuse = gpu_reuse,
};
