/*
 * Channels-last layout on the host: which buffers of a configuration hold
 * NHWC values, and the conversions between NCHW and NHWC. The runner uses
 * them at a model's inputs and outputs and around fallback steps, the
 * reference backend around each kernel; in a file of their own so that the
 * backends call them without calling into the runner.
 */
#include <stdbool.h>
#include <stdint.h>

#include "runtime.h"

bool taso_rt_channels_last(const taso_rt_config_t *cfg, int slot) {
  const taso_tensor_t *t = slot < cfg->nin ? &cfg->in[slot] : &cfg->out[slot - cfg->nin];
  return cfg->layout == TASO_RT_NHWC && t->rank == 4 && !(cfg->kind == TASO_OP_CONV2D && slot == 1);
}

/* One walk for both directions: element (n, c, h, w) sits at its NCHW and
 * NHWC offsets. */
static void convert_4d(const taso_tensor_t *t, const float *src, float *dst, bool to_nhwc) {
  int64_t N = t->dim[0], C = t->dim[1], H = t->dim[2], W = t->dim[3];
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) {
          int64_t nchw = ((n * C + c) * H + h) * W + w, nhwc = ((n * H + h) * W + w) * C + c;
          if (to_nhwc)
            dst[nhwc] = src[nchw];
          else
            dst[nchw] = src[nhwc];
        }
}

void taso_rt_to_nhwc(const taso_tensor_t *t, const float *nchw, float *nhwc) {
  convert_4d(t, nchw, nhwc, true);
}

void taso_rt_to_nchw(const taso_tensor_t *t, const float *nhwc, float *nchw) {
  convert_4d(t, nhwc, nchw, false);
}
