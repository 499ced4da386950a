/*
 * The gpu backend's own CUDA kernels: the operators that cuDNN and cuBLAS
 * have no call for (clip, broadcasting arithmetic, per-channel scale and
 * shift, permutations, the matmul epilogue, explicit padding and pooling
 * with asymmetric windows), and two that measuring needs (a wait ahead of
 * a timing mark, a read that brings a buffer into cache). Compiled by
 * nvcc; called from C.
 *
 * Every launcher enqueues on the given stream, never synchronizes, and
 * returns the launch status (cudaGetLastError), so that a failed launch is
 * reported by the call that made it.
 */
#ifndef TASO_GPU_KERNELS_H
#define TASO_GPU_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A walk over an output of up to 4 axes in its memory order, slowest first,
 * with the element stride of each axis in each of two operands (0 where an
 * operand is broadcast along it). */
typedef struct {
  int rank;             /* axes walked, 0 to 4 */
  int64_t dim[4];       /* output sizes in memory order */
  int64_t stride[2][4]; /* operand element strides per walked axis */
} gpu_walk_t;

enum { GPU_BIN_ADD = 0, GPU_BIN_MUL = 1, GPU_BIN_COPY = 2 /* out = a, permutes */ };

/* A window on NCHW data: the geometry shared by padding and pooling. */
typedef struct {
  int64_t planes;    /* N * C */
  int32_t h, w;      /* input height and width */
  int32_t oh, ow;    /* output (or padded) height and width */
  int32_t kh, kw;    /* window */
  int32_t sh, sw;    /* strides */
  int32_t top, left; /* padding before */
} gpu_window_t;

enum { GPU_POOL_MAX = 0, GPU_POOL_AVG_INCLUDE = 1, GPU_POOL_AVG_EXCLUDE = 2 };

/* A single thread that waits ns nanoseconds on the device: queued ahead of
 * a timing mark, it lets the host queue the timed work before the device
 * reaches the mark. */
cudaError_t gpu_spin(int64_t ns, cudaStream_t s);
/* Reads all n floats of x (into the cache); sink is never written in practice. */
cudaError_t gpu_touch(const float *x, int64_t n, float *sink, cudaStream_t s);
/* Deterministic values in [-1, 1) for algorithm searches on scratch buffers. */
cudaError_t gpu_fill(float *x, int64_t n, uint32_t seed, cudaStream_t s);
/* y[i] = y[i] + bias[(i / inner) % cols] + sum[i] clamped to [lo, hi]
 * (ReLU: 0 and INFINITY; none: -INFINITY and INFINITY); bias and sum may
 * be NULL. A matmul's bias: cols its columns, inner 1; a convolution's in
 * NCHW: cols its channels, inner the output's height times width. */
cudaError_t gpu_epilogue(float *y, int64_t n, int64_t cols, int64_t inner, const float *bias,
                         const float *sum, float lo, float hi, cudaStream_t s);
cudaError_t gpu_clip(const float *x, float *y, int64_t n, float lo, float hi, cudaStream_t s);
/* out[i] = a[i] op b[i] (same shapes) */
cudaError_t gpu_binary(int op, const float *a, const float *b, float *out, int64_t n,
                       cudaStream_t s);
/* out[i] = a[i] * scalar[0], the scalar read on the device */
cudaError_t gpu_smul(const float *a, const float *scalar, float *out, int64_t n, cudaStream_t s);
/* out (dense, walk order) = a op b over the strided walk; b unused for COPY */
cudaError_t gpu_strided(int op, const float *a, const float *b, float *out, gpu_walk_t walk,
                        cudaStream_t s);
/* out[i] = x[i] * scale[c] + bias[c] with c = (i / inner) % channels */
cudaError_t gpu_scale_shift(const float *x, const float *scale, const float *bias, float *out,
                            int64_t n, int64_t channels, int64_t inner, cudaStream_t s);
/* Zero padding: out [planes, oh, ow] holds x [planes, h, w] at (top, left). */
cudaError_t gpu_pad(const float *x, float *out, gpu_window_t g, cudaStream_t s);
/* Pooling of any padding (the reference's rule: padding is skipped). */
cudaError_t gpu_pool(int mode, const float *x, float *out, gpu_window_t g, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
