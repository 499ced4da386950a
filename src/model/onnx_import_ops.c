/*
 * ONNX import, the operators: one handler per ONNX op type, each mapping a
 * node onto registry operators through the helpers of onnx_import_impl.h.
 * A handler returns TASO_ERR_UNSUPPORTED with a short reason ("ceil_mode",
 * "dilations 2x2", "rank 5") for what taso does not do; the caller lists it.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import_impl.h"

#define TRY TASO_TRY

static int64_t span(const taso_tensor_t *t, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++)
    n *= t->dim[i];
  return n;
}

/* ---- windows: Conv and the pools ------------------------------------------ */

static taso_err_t window_strides(const Onnx__NodeProto *n, taso_params_t *p) {
  int64_t v[8];
  int k = taso_onnx_attr_ints(n, "strides", v, 8);
  if (k >= 0 && k != 2) return im_unsupported("%d strides, 2-d windows only", k);
  for (int a = 0; a < 2 && k == 2; a++) {
    if (v[a] < 1 || v[a] > INT32_MAX) return im_unsupported("stride %lld", (long long)v[a]);
    p->stride[a] = (int32_t)v[a];
  }
  k = taso_onnx_attr_ints(n, "dilations", v, 8);
  for (int a = 0; a < k && a < 8; a++)
    if (v[a] != 1)
      return im_unsupported("dilations %lldx%lld", (long long)v[0], (long long)(k > 1 ? v[1] : 1));
  return TASO_OK;
}

/* The padding ONNX asks for, as top, left, bottom, right. */
static taso_err_t window_pads(const Onnx__NodeProto *n, const taso_tensor_t *x,
                              const int32_t *kernel, const taso_params_t *p, const int32_t *same,
                              int32_t *pads) {
  char buf[32];
  const char *mode = taso_onnx_attr_string(n, "auto_pad", "NOTSET", buf, sizeof buf);
  memset(pads, 0, 4 * sizeof *pads);
  if (!strcmp(mode, "SAME_UPPER")) {
    memcpy(pads, same, 4 * sizeof *pads);
  } else if (!strcmp(mode, "SAME_LOWER")) {
    /* the odd pixel goes before, not after */
    for (int a = 0; a < 2; a++)
      pads[a] = same[a + 2], pads[a + 2] = same[a];
  } else if (!strcmp(mode, "NOTSET")) {
    int64_t v[8];
    int k = taso_onnx_attr_ints(n, "pads", v, 8);
    if (k >= 0 && k != 4) return im_unsupported("%d pads, 2-d windows only", k);
    for (int i = 0; i < k; i++) {
      if (v[i] < 0 || v[i] > INT32_MAX) return im_unsupported("padding %lld", (long long)v[i]);
      pads[i] = (int32_t)v[i];
    }
  } else if (strcmp(mode, "VALID")) {
    return im_unsupported("auto_pad %s", mode);
  }
  (void)x, (void)kernel, (void)p;
  return TASO_OK;
}

/* The padding SAME gives a window of kernel and stride over x (top, left,
 * bottom, right): the odd pixel after. */
static void same_pads(const taso_tensor_t *x, const int32_t *kernel, const int32_t *stride,
                      int32_t *same) {
  for (int a = 0; a < 2; a++) {
    int32_t i = x->dim[2 + a], s = stride[a], o = (i + s - 1) / s;
    int32_t total = (o - 1) * s + kernel[a] - i;
    if (total < 0) total = 0; /* the window fits without padding: none */
    same[a] = total / 2;
    same[a + 2] = total - total / 2;
  }
}

/* Strides and padding of a window operator with kernel kh x kw on x. The
 * padding becomes SAME or VALID when it equals what those give
 * (taso_window_out), so that substitutions written with them match. */
static taso_err_t window_params(const Onnx__NodeProto *n, const taso_tensor_t *x, int32_t kh,
                                int32_t kw, const int32_t *pending, taso_params_t *p) {
  TRY(window_strides(n, p));
  int32_t kernel[2] = {kh, kw}, same[4], pads[4];
  same_pads(x, kernel, p->stride, same);
  TRY(window_pads(n, x, kernel, p, same, pads));
  static const int32_t zero[4] = {0, 0, 0, 0};
  if (memcmp(pending, zero, sizeof zero)) { /* a Pad before: its padding adds to ours */
    char buf[32];
    if (strcmp(taso_onnx_attr_string(n, "auto_pad", "NOTSET", buf, sizeof buf), "NOTSET"))
      return im_unsupported("auto_pad %s after a Pad", buf);
    for (int i = 0; i < 4; i++)
      pads[i] += pending[i];
  }
  if (!memcmp(pads, same, sizeof pads)) {
    p->pad = TASO_PAD_SAME;
  } else if (!memcmp(pads, zero, sizeof pads)) {
    p->pad = TASO_PAD_VALID;
  } else {
    for (int i = 0; i < 4; i++)
      if (pads[i] >= kernel[i % 2])
        return im_unsupported("padding %d not smaller than kernel %d", pads[i], kernel[i % 2]);
    p->pad = TASO_PAD_EXPLICIT;
    memcpy(p->pads, pads, sizeof pads);
  }
  return TASO_OK;
}

/* The padding p gives on a window over x, as top, left, bottom, right. */
static void resolved_pads(const taso_tensor_t *x, const taso_params_t *p, int32_t *pads) {
  memset(pads, 0, 4 * sizeof *pads);
  if (p->pad == TASO_PAD_EXPLICIT)
    memcpy(pads, p->pads, 4 * sizeof *pads);
  else if (p->pad == TASO_PAD_SAME)
    same_pads(x, p->kernel, p->stride, pads);
}

/* ceil_mode: the last window may run past the padded input (but starts
 * inside it). For a max pool that is more padding after, which never wins;
 * an average divides differently, so it is refused where the two modes
 * give different sizes. */
static taso_err_t ceil_pads(const taso_tensor_t *x, int is_max, taso_params_t *p) {
  int32_t pads[4], extra[2];
  resolved_pads(x, p, pads);
  for (int a = 0; a < 2; a++) {
    int32_t span = x->dim[2 + a] + pads[a] + pads[a + 2] - p->kernel[a], s = p->stride[a];
    int32_t floor_out = span / s + 1, ceil_out = (span + s - 1) / s + 1;
    if ((ceil_out - 1) * s >= x->dim[2 + a] + pads[a]) ceil_out--; /* must start inside */
    extra[a] = ceil_out > floor_out ? (ceil_out - 1) * s - span : 0;
  }
  if (!extra[0] && !extra[1]) return TASO_OK;
  if (!is_max) return im_unsupported("ceil_mode on an average pool that it changes");
  pads[2] += extra[0];
  pads[3] += extra[1];
  for (int i = 0; i < 4; i++)
    if (pads[i] >= p->kernel[i % 2])
      return im_unsupported("padding %d not smaller than kernel %d", pads[i], p->kernel[i % 2]);
  p->pad = TASO_PAD_EXPLICIT;
  memcpy(p->pads, pads, sizeof pads);
  return TASO_OK;
}

static taso_err_t need_rank4(const taso_tensor_t *t, const char *what) {
  if (t->rank != 4) return im_unsupported("rank %d input, %s", t->rank, what);
  return TASO_OK;
}

/* Conv's bias B [M]: chadd on the channel axis, the per-channel operator of
 * the substitution language (as for BatchNormalization below), so that
 * proved rules move a following normalization's scale and shift through
 * it; the cpu backend fuses it into the convolution as its bias. */
static taso_err_t conv_bias(importer_t *im, const Onnx__NodeProto *n, taso_ref_t y,
                            taso_ref_t *out) {
  int32_t m = im_type(im, y)->dim[1];
  taso_ref_t b;
  TRY(im_tensor(im, n, 2, &b));
  const taso_tensor_t *bt = im_type(im, b);
  if (bt->rank != 1 || bt->dim[0] != m)
    return im_unsupported("bias of %d dims for %d channels", bt->rank, m);
  taso_params_t p = taso_params_default();
  p.axis = 1;
  return im_node(im, TASO_OP_CHADD, &p, y, b, -1, out);
}

static taso_err_t op_conv(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, w, y;
  int32_t pending[4];
  TRY(im_tensor_padded(im, n, 0, &x, pending));
  TRY(im_tensor(im, n, 1, &w));
  const taso_tensor_t *xt = im_type(im, x), *wt = im_type(im, w);
  TRY(need_rank4(xt, "2-d convolutions only"));
  TRY(need_rank4(wt, "2-d convolutions only"));
  int64_t group = taso_onnx_attr_int(n, "group", 1), k[8];
  if (group < 1 || (int64_t)wt->dim[1] * group != xt->dim[1])
    return im_unsupported("group %lld does not match %d input and %d weight channels",
                          (long long)group, xt->dim[1], wt->dim[1]);
  int nk = taso_onnx_attr_ints(n, "kernel_shape", k, 8);
  if (nk >= 0 && (nk != 2 || k[0] != wt->dim[2] || k[1] != wt->dim[3]))
    return im_unsupported("kernel_shape differs from the weight's");
  taso_params_t p = taso_params_default();
  TRY(window_params(n, xt, wt->dim[2], wt->dim[3], pending, &p));
  TRY(im_node(im, TASO_OP_CONV2D, &p, x, w, -1, &y));
  if (im_has_input(n, 2)) TRY(conv_bias(im, n, y, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_pool(importer_t *im, const Onnx__NodeProto *n, int is_max) {
  taso_ref_t x, y;
  int32_t pending[4];
  TRY(is_max ? im_tensor(im, n, 0, &x) : im_tensor_padded(im, n, 0, &x, pending));
  if (is_max) memset(pending, 0, sizeof pending);
  int padded = pending[0] || pending[1] || pending[2] || pending[3];
  const taso_tensor_t *xt = im_type(im, x);
  TRY(need_rank4(xt, "2-d pooling only"));
  int64_t k[8];
  if (taso_onnx_attr_ints(n, "kernel_shape", k, 8) != 2)
    return im_unsupported("kernel_shape not 2-d");
  if (k[0] < 1 || k[1] < 1 || k[0] > INT32_MAX || k[1] > INT32_MAX)
    return im_unsupported("kernel %lldx%lld", (long long)k[0], (long long)k[1]);
  if (taso_onnx_attr_int(n, "storage_order", 0)) return im_unsupported("storage_order");
  if (im_has_output(n, 1)) return im_unsupported("Indices output");
  taso_params_t p = taso_params_default();
  p.kernel[0] = (int32_t)k[0];
  p.kernel[1] = (int32_t)k[1];
  int64_t own[8];
  if (padded && taso_onnx_attr_ints(n, "pads", own, 8) == 4 &&
      (own[0] || own[1] || own[2] || own[3]) && !taso_onnx_attr_int(n, "count_include_pad", 0))
    return im_unsupported("padding of its own not counted after a Pad that is");
  TRY(window_params(n, xt, p.kernel[0], p.kernel[1], pending, &p));
  if (taso_onnx_attr_int(n, "ceil_mode", 0)) TRY(ceil_pads(xt, is_max, &p));
  /* ONNX's default divides by the in-bounds count; without padding the two
   * agree, and the substitutions' form (0) is kept. */
  if (!is_max && p.pad != TASO_PAD_VALID)
    p.exclude_pad = !padded && !taso_onnx_attr_int(n, "count_include_pad", 0);
  TRY(im_node(im, is_max ? TASO_OP_POOL_MAX : TASO_OP_POOL_AVG, &p, x, -1, -1, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_maxpool(importer_t *im, const Onnx__NodeProto *n) {
  return op_pool(im, n, 1);
}
static taso_err_t op_avgpool(importer_t *im, const Onnx__NodeProto *n) {
  return op_pool(im, n, 0);
}

static taso_err_t op_global_avgpool(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t *xt = im_type(im, x);
  TRY(need_rank4(xt, "2-d pooling only"));
  taso_params_t p = taso_params_default();
  p.kernel[0] = xt->dim[2];
  p.kernel[1] = xt->dim[3];
  p.pad = TASO_PAD_VALID;
  TRY(im_node(im, TASO_OP_POOL_AVG, &p, x, -1, -1, &y));
  return im_set(im, n, 0, y);
}

/* ---- matrix products --------------------------------------------------------- */

/* [..., m, k] x [k, n]: the leading axes fold into rows. */
static taso_err_t matmul_rows(importer_t *im, taso_ref_t a, taso_ref_t b, taso_ref_t *y) {
  taso_tensor_t at = *im_type(im, a);
  int32_t n = im_type(im, b)->dim[1],
          rows[2] = {(int32_t)span(&at, 0, at.rank - 1), at.dim[at.rank - 1]};
  taso_params_t p = taso_params_default();
  TRY(im_reshape(im, a, 2, rows, &a));
  TRY(im_node(im, TASO_OP_MATMUL, &p, a, b, -1, y));
  at.dim[at.rank - 1] = n;
  return im_reshape(im, *y, at.rank, at.dim, y);
}

/* [..., m, k] x [..., k, n] with equal leading axes: one bmm. */
static taso_err_t matmul_batched(importer_t *im, taso_ref_t a, taso_ref_t b, taso_ref_t *y) {
  taso_tensor_t at = *im_type(im, a), bt = *im_type(im, b);
  int r = at.rank;
  int32_t batch = (int32_t)span(&at, 0, r - 2);
  int32_t a3[3] = {batch, at.dim[r - 2], at.dim[r - 1]},
          b3[3] = {batch, bt.dim[r - 2], bt.dim[r - 1]};
  taso_params_t p = taso_params_default();
  TRY(im_reshape(im, a, 3, a3, &a));
  TRY(im_reshape(im, b, 3, b3, &b));
  TRY(im_node(im, TASO_OP_BMM, &p, a, b, -1, y));
  at.dim[r - 1] = bt.dim[r - 1];
  return im_reshape(im, *y, r, at.dim, y);
}

static taso_err_t op_matmul(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t a, b, y;
  TRY(im_tensor(im, n, 0, &a));
  TRY(im_tensor(im, n, 1, &b));
  const taso_tensor_t *at = im_type(im, a), *bt = im_type(im, b);
  taso_params_t p = taso_params_default();
  if (at->rank == 2 && bt->rank == 2) {
    TRY(im_node(im, TASO_OP_MATMUL, &p, a, b, -1, &y));
  } else if (at->rank > 2 && bt->rank == 2) {
    TRY(matmul_rows(im, a, b, &y));
  } else if (at->rank > 2 && at->rank == bt->rank &&
             !memcmp(at->dim, bt->dim, sizeof(int32_t) * (size_t)(at->rank - 2))) {
    TRY(matmul_batched(im, a, b, &y));
  } else {
    return im_unsupported("MatMul of ranks %d and %d: broadcast batch axes or vectors", at->rank,
                          bt->rank);
  }
  return im_set(im, n, 0, y);
}

/* Gemm's B as a weight with transB and alpha folded in (it is a constant). */
static taso_err_t gemm_folded_b(importer_t *im, const Onnx__NodeProto *n,
                                const Onnx__TensorProto *t, int trans, float alpha, taso_ref_t *b) {
  if (t->n_dims != 2 || t->dims[0] < 1 || t->dims[1] < 1)
    return im_unsupported("B of rank %zu", t->n_dims);
  char name[TASO_MODEL_NAME_LEN];
  snprintf(name, sizeof name, "%.100s%s", n->input[1], trans ? "_T" : "_scaled");
  if (taso_onnx_seeded(t)) { /* seeded: the folded weight is seeded too */
    int32_t dim[2] = {(int32_t)t->dims[trans ? 1 : 0], (int32_t)t->dims[trans ? 0 : 1]};
    return im_weight(im, name, 2, dim, NULL, b);
  }
  float *v, *w;
  int64_t count;
  TRY(im_const_floats(t, &v, &count));
  int32_t r = (int32_t)t->dims[0], c = (int32_t)t->dims[1];
  int32_t dim[2] = {trans ? c : r, trans ? r : c};
  w = malloc(sizeof(float) * (size_t)count);
  if (!w) {
    free(v);
    return taso_error(TASO_ERR_NOMEM, "Gemm B");
  }
  for (int32_t i = 0; i < r; i++)
    for (int32_t j = 0; j < c; j++)
      w[trans ? (int64_t)j * r + i : (int64_t)i * c + j] = alpha * v[(int64_t)i * c + j];
  taso_err_t err = im_weight(im, name, 2, dim, w, b);
  free(v);
  free(w);
  return err;
}

static taso_err_t transpose2(importer_t *im, taso_ref_t x, taso_ref_t *y) {
  taso_params_t p = taso_params_default();
  if (im_type(im, x)->rank != 2)
    return im_unsupported("Gemm operand of rank %d", im_type(im, x)->rank);
  return im_node(im, TASO_OP_TRANSPOSE, &p, x, -1, -1, y);
}

static taso_err_t scale_by(importer_t *im, const Onnx__NodeProto *n, const char *what, float k,
                           taso_ref_t *y) {
  if (k == 1.0f) return TASO_OK;
  taso_ref_t s;
  taso_params_t p = taso_params_default();
  TRY(im_scalar_weight(im, n, what, k, &s));
  return im_node(im, TASO_OP_SMUL, &p, *y, s, -1, y);
}

/* Gemm's C, times beta, added to y: same shape as y gives ewadd. */
static taso_err_t gemm_bias(importer_t *im, const Onnx__NodeProto *n, float beta, taso_ref_t *y) {
  const Onnx__TensorProto *t = im_const(im, n, 2);
  taso_ref_t c;
  taso_params_t p = taso_params_default();
  if (t && beta != 1.0f && !taso_onnx_seeded(t)) {
    int rank;
    int32_t dim[TASO_MAX_RANK];
    if (t->n_dims > 2) return im_unsupported("C of rank %zu", t->n_dims);
    rank = (int)t->n_dims;
    for (int i = 0; i < rank; i++)
      dim[i] = (int32_t)t->dims[i];
    float *v;
    int64_t count;
    TRY(im_const_floats(t, &v, &count));
    for (int64_t i = 0; i < count; i++)
      v[i] *= beta;
    char name[TASO_MODEL_NAME_LEN];
    snprintf(name, sizeof name, "%.100s_scaled", n->input[2]);
    taso_err_t err = im_weight(im, name, rank, dim, v, &c);
    free(v);
    TRY(err);
  } else {
    TRY(im_tensor(im, n, 2, &c));
    TRY(scale_by(im, n, "beta", beta, &c));
  }
  const taso_tensor_t *yt = im_type(im, *y), *ct = im_type(im, c);
  int same = yt->rank == ct->rank && !memcmp(yt->dim, ct->dim, sizeof yt->dim);
  return im_node(im, same ? TASO_OP_EWADD : TASO_OP_ADD, &p, *y, c, -1, y);
}

static taso_err_t op_gemm(importer_t *im, const Onnx__NodeProto *n) {
  float alpha = taso_onnx_attr_float(n, "alpha", 1.0f),
        beta = taso_onnx_attr_float(n, "beta", 1.0f);
  int trans_a = (int)taso_onnx_attr_int(n, "transA", 0),
      trans_b = (int)taso_onnx_attr_int(n, "transB", 0);
  taso_ref_t a, b, y;
  TRY(im_tensor(im, n, 0, &a));
  if (trans_a) TRY(transpose2(im, a, &a));
  const Onnx__TensorProto *bc = im_const(im, n, 1);
  int folded = bc && (trans_b || alpha != 1.0f);
  if (folded) {
    TRY(gemm_folded_b(im, n, bc, trans_b, alpha, &b));
  } else {
    TRY(im_tensor(im, n, 1, &b));
    if (trans_b) TRY(transpose2(im, b, &b));
  }
  if (im_type(im, a)->rank != 2 || im_type(im, b)->rank != 2)
    return im_unsupported("Gemm operands not rank 2");
  taso_params_t p = taso_params_default();
  TRY(im_node(im, TASO_OP_MATMUL, &p, a, b, -1, &y));
  if (!folded) TRY(scale_by(im, n, "alpha", alpha, &y));
  if (im_has_input(n, 2) && beta != 0.0f) TRY(gemm_bias(im, n, beta, &y));
  return im_set(im, n, 0, y);
}

/* ---- element-wise ------------------------------------------------------------- */

/* Operand i of n as a per-channel vector of x, the other operand: a
 * constant [C,1,1] or [1,C,1,1] that broadcasts along axis 1 of a rank-4
 * x alone, as exporters write a bias or a scale (ours included). Found:
 * *vec is a [C] weight under the constant's name; else *vec is -1. */
static taso_err_t channel_vector(importer_t *im, const Onnx__NodeProto *n, size_t i,
                                 const taso_tensor_t *x, taso_ref_t *vec) {
  const Onnx__TensorProto *t = im_const(im, n, i);
  *vec = -1;
  if (!t || x->rank != 4 || t->n_dims < 3 || t->n_dims > 4) return TASO_OK;
  size_t c = t->n_dims - 3; /* the channel's place: [C,1,1] or [1,C,1,1] */
  for (size_t k = 0; k < t->n_dims; k++)
    if (t->dims[k] != (k == c ? x->dim[1] : 1)) return TASO_OK;
  if (taso_onnx_seeded(t)) return im_weight(im, n->input[i], 1, &x->dim[1], NULL, vec);
  float *v;
  int64_t count;
  TRY(im_const_floats(t, &v, &count));
  taso_err_t err = im_weight(im, n->input[i], 1, &x->dim[1], v, vec);
  free(v);
  return err;
}

/* a op b: ewadd/ewmul for equal shapes (rank 1 to 4: what substitutions
 * match), smul for a product with a scalar (the substitution language's),
 * else the broadcasting add/mul. */
static taso_err_t combine(importer_t *im, int is_add, taso_ref_t a, taso_ref_t b, taso_ref_t *y) {
  const taso_tensor_t *at = im_type(im, a), *bt = im_type(im, b);
  taso_params_t p = taso_params_default();
  if (!is_add && (at->rank == 0) != (bt->rank == 0))
    return im_node(im, TASO_OP_SMUL, &p, at->rank ? a : b, at->rank ? b : a, -1, y);
  int same = at->rank >= 1 && at->rank == bt->rank && !memcmp(at->dim, bt->dim, sizeof at->dim);
  taso_op_kind_t kind =
      is_add ? (same ? TASO_OP_EWADD : TASO_OP_ADD) : (same ? TASO_OP_EWMUL : TASO_OP_MUL);
  return im_node(im, kind, &p, a, b, -1, y);
}

static taso_err_t binary(importer_t *im, const Onnx__NodeProto *n, int is_add) {
  taso_ref_t a, b, y;
  /* A per-channel constant on either side: chadd or chmul on axis 1, the
   * substitution language's own (so that rules fold it, and an exported
   * model reads back as it was written). */
  for (size_t i = 0; i < 2; i++) {
    if (im_const(im, n, 1 - i)) continue;
    taso_ref_t x, v;
    TRY(im_tensor(im, n, 1 - i, &x));
    TRY(channel_vector(im, n, i, im_type(im, x), &v));
    if (v < 0) continue;
    taso_params_t p = taso_params_default();
    p.axis = 1;
    TRY(im_node(im, is_add ? TASO_OP_CHADD : TASO_OP_CHMUL, &p, x, v, -1, &y));
    return im_set(im, n, 0, y);
  }
  TRY(im_tensor(im, n, 0, &a));
  TRY(im_tensor(im, n, 1, &b));
  TRY(combine(im, is_add, a, b, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_add(importer_t *im, const Onnx__NodeProto *n) {
  return binary(im, n, 1);
}
static taso_err_t op_mul(importer_t *im, const Onnx__NodeProto *n) {
  return binary(im, n, 0);
}

static taso_err_t unary(importer_t *im, const Onnx__NodeProto *n, taso_op_kind_t kind,
                        const taso_params_t *p) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  TRY(im_node(im, kind, p, x, -1, -1, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_relu(importer_t *im, const Onnx__NodeProto *n) {
  taso_params_t p = taso_params_default();
  return unary(im, n, TASO_OP_RELU, &p);
}
static taso_err_t op_sigmoid(importer_t *im, const Onnx__NodeProto *n) {
  taso_params_t p = taso_params_default();
  return unary(im, n, TASO_OP_SIGMOID, &p);
}
static taso_err_t op_tanh(importer_t *im, const Onnx__NodeProto *n) {
  taso_params_t p = taso_params_default();
  return unary(im, n, TASO_OP_TANH, &p);
}

/* A float scalar from a constant input (Clip's bounds). */
static taso_err_t const_scalar(importer_t *im, const Onnx__NodeProto *n, size_t i, float *out) {
  const Onnx__TensorProto *t = im_const(im, n, i);
  if (!t) return im_unsupported("input %zu (%s) not a constant", i, n->input[i]);
  if (taso_onnx_numel(t) != 1) return im_unsupported("input %zu not a scalar", i);
  float *v;
  int64_t count;
  TRY(im_const_floats(t, &v, &count));
  *out = v[0];
  free(v);
  return TASO_OK;
}

static taso_err_t op_clip(importer_t *im, const Onnx__NodeProto *n) {
  taso_params_t p = taso_params_default();
  if (im->opset < 11) {
    p.bound[0] = taso_onnx_attr_float(n, "min", -FLT_MAX);
    p.bound[1] = taso_onnx_attr_float(n, "max", FLT_MAX);
  } else {
    /* absent bounds do not clip */
    p.bound[0] = -INFINITY;
    p.bound[1] = INFINITY;
    if (im_has_input(n, 1)) TRY(const_scalar(im, n, 1, &p.bound[0]));
    if (im_has_input(n, 2)) TRY(const_scalar(im, n, 2, &p.bound[1]));
  }
  if (!(p.bound[0] <= p.bound[1]))
    return im_unsupported("min %g above max %g", (double)p.bound[0], (double)p.bound[1]);
  return unary(im, n, TASO_OP_CLIP, &p);
}

/* Before opset 13 Softmax works on x flattened to 2-d at axis (default 1):
 * one softmax over all the axes from axis on. From 13 on, over axis alone
 * (default -1). */
static taso_err_t op_softmax(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  taso_tensor_t xt = *im_type(im, x);
  int axis;
  if (!im_axis(taso_onnx_attr_int(n, "axis", im->opset >= 13 ? -1 : 1), xt.rank, &axis))
    return im_unsupported("axis out of range for rank %d", xt.rank);
  taso_params_t p = taso_params_default();
  if (im->opset >= 13 || axis == xt.rank - 1) {
    p.axis = axis;
    TRY(im_node(im, TASO_OP_SOFTMAX, &p, x, -1, -1, &y));
    return im_set(im, n, 0, y);
  }
  int32_t flat[2] = {(int32_t)span(&xt, 0, axis), (int32_t)span(&xt, axis, xt.rank)};
  p.axis = 1;
  TRY(im_reshape(im, x, 2, flat, &x));
  TRY(im_node(im, TASO_OP_SOFTMAX, &p, x, -1, -1, &y));
  TRY(im_reshape(im, y, xt.rank, xt.dim, &y));
  return im_set(im, n, 0, y);
}

/* ---- batch normalization ----------------------------------------------------- */

/* scale' = scale / sqrt(var + eps), bias' = bias - mean * scale', as new
 * weights under the scale's and bias's names. */
static taso_err_t bn_fold(importer_t *im, const Onnx__NodeProto *n, const float *mean,
                          const float *inv, int32_t c, taso_ref_t *s, taso_ref_t *b) {
  float *scale, *bias;
  int64_t ns, nb;
  TRY(im_const_floats(im_const(im, n, 1), &scale, &ns));
  taso_err_t err = im_const_floats(im_const(im, n, 2), &bias, &nb);
  if (err != TASO_OK) {
    free(scale);
    return err;
  }
  if (ns != c || nb != c) err = im_unsupported("scale or bias not one value per channel");
  for (int32_t i = 0; err == TASO_OK && i < c; i++) {
    scale[i] = (float)((double)scale[i] * inv[i]);
    bias[i] = (float)((double)bias[i] - (double)mean[i] * scale[i]);
  }
  if (err == TASO_OK) err = im_weight(im, n->input[1], 1, &c, scale, s);
  if (err == TASO_OK) err = im_weight(im, n->input[2], 1, &c, bias, b);
  free(scale);
  free(bias);
  return err;
}

/* The same with computed scale and bias: mul and add nodes, skipped where
 * the statistics make them the identity. */
static taso_err_t bn_nodes(importer_t *im, const Onnx__NodeProto *n, float *mean, const float *inv,
                           int32_t c, taso_ref_t *s, taso_ref_t *b) {
  int ones = 1, zeros = 1;
  for (int32_t i = 0; i < c; i++)
    ones &= inv[i] == 1.0f, zeros &= mean[i] == 0.0f;
  taso_params_t p = taso_params_default();
  char name[TASO_MODEL_NAME_LEN];
  taso_ref_t w;
  TRY(im_tensor(im, n, 1, s));
  TRY(im_tensor(im, n, 2, b));
  if (!ones) {
    snprintf(name, sizeof name, "%.100s.inv_std", im_label(n));
    TRY(im_weight(im, name, 1, &c, inv, &w));
    TRY(im_node(im, TASO_OP_MUL, &p, *s, w, -1, s));
  }
  if (!zeros) {
    for (int32_t i = 0; i < c; i++)
      mean[i] = -mean[i];
    snprintf(name, sizeof name, "%.100s.neg_mean", im_label(n));
    TRY(im_weight(im, name, 1, &c, mean, &w));
    TRY(im_node(im, TASO_OP_MUL, &p, *s, w, -1, &w));
    TRY(im_node(im, TASO_OP_ADD, &p, *b, w, -1, b));
  }
  return TASO_OK;
}

/* x * s + b per channel, as the per-channel operators of the substitution
 * language, so that proved rules fold the scale into a convolution before
 * it and the shift into its bias (the cpu backend runs each as one oneDNN
 * binary). */
static taso_err_t bn_apply(importer_t *im, const Onnx__NodeProto *n, taso_ref_t x, taso_ref_t s,
                           taso_ref_t b) {
  taso_ref_t y;
  taso_params_t p = taso_params_default();
  p.axis = 1;
  TRY(im_node(im, TASO_OP_CHMUL, &p, x, s, -1, &y));
  TRY(im_node(im, TASO_OP_CHADD, &p, y, b, -1, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t bn_check(importer_t *im, const Onnx__NodeProto *n) {
  for (size_t k = 1; k < n->n_output; k++)
    if (im_has_output(n, k)) return im_unsupported("training outputs");
  if (im->opset >= 14 && taso_onnx_attr_int(n, "training_mode", 0))
    return im_unsupported("training_mode");
  if (im->opset < 9 && !taso_onnx_attr_int(n, "spatial", 1)) return im_unsupported("spatial=0");
  if (!im_const(im, n, 3) || !im_const(im, n, 4))
    return im_unsupported("mean and var not initializers");
  return TASO_OK;
}

/* Any of scale, bias, mean and var seeded (a graph-only file): the folded
 * scale and shift are seeded weights under the scale's and bias's names. */
static int bn_seeded(importer_t *im, const Onnx__NodeProto *n, int32_t c, taso_ref_t *s,
                     taso_ref_t *b, taso_err_t *err) {
  int seeded = 0;
  for (size_t i = 1; i <= 4; i++)
    seeded |= im_const(im, n, i) && taso_onnx_seeded(im_const(im, n, i));
  if (!seeded) return 0;
  *err = c < 1 ? im_unsupported("no channel axis") : im_weight(im, n->input[1], 1, &c, NULL, s);
  if (*err == TASO_OK) *err = im_weight(im, n->input[2], 1, &c, NULL, b);
  return 1;
}

static taso_err_t op_batchnorm(importer_t *im, const Onnx__NodeProto *n) {
  TRY(bn_check(im, n));
  taso_ref_t x, s, b;
  TRY(im_tensor(im, n, 0, &x));
  int32_t c = im_type(im, x)->rank >= 2 ? im_type(im, x)->dim[1] : 0;
  taso_err_t seeded_err;
  if (bn_seeded(im, n, c, &s, &b, &seeded_err)) {
    TRY(seeded_err);
    return bn_apply(im, n, x, s, b);
  }
  float *mean, *var, eps = taso_onnx_attr_float(n, "epsilon", 1e-5f);
  int64_t nm, nv;
  TRY(im_const_floats(im_const(im, n, 3), &mean, &nm));
  taso_err_t err = im_const_floats(im_const(im, n, 4), &var, &nv);
  if (err != TASO_OK) {
    free(mean);
    return err;
  }
  if (c < 1 || nm != c || nv != c) err = im_unsupported("statistics not one value per channel");
  for (int32_t i = 0; err == TASO_OK && i < c; i++)
    var[i] = (float)(1.0 / sqrt((double)var[i] + eps));
  if (err == TASO_OK)
    err = im_const(im, n, 1) && im_const(im, n, 2) ? bn_fold(im, n, mean, var, c, &s, &b)
                                                   : bn_nodes(im, n, mean, var, c, &s, &b);
  free(mean);
  free(var);
  TRY(err);
  return bn_apply(im, n, x, s, b);
}

/* ---- shapes: Concat, Split, Reshape, Flatten, Transpose ------------------------ */

static taso_err_t op_concat(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t y, x;
  if (n->n_input < 1) return im_unsupported("no inputs");
  TRY(im_tensor(im, n, 0, &y));
  int axis;
  if (!taso_onnx_attr(n, "axis") ||
      !im_axis(taso_onnx_attr_int(n, "axis", 0), im_type(im, y)->rank, &axis))
    return im_unsupported("axis missing or out of range");
  taso_params_t p = taso_params_default();
  p.axis = axis;
  /* n-ary as a chain of binary concats */
  for (size_t i = 1; i < n->n_input; i++) {
    TRY(im_tensor(im, n, i, &x));
    TRY(im_node(im, TASO_OP_CONCAT, &p, y, x, -1, &y));
  }
  return im_set(im, n, 0, y);
}

/* The sizes of Split's parts: the attribute (before opset 13) or input,
 * else equal parts. */
static taso_err_t split_sizes(importer_t *im, const Onnx__NodeProto *n, int32_t whole,
                              int64_t *sizes) {
  int parts = (int)n->n_output, got = -1;
  if (im->opset < 13) {
    got = taso_onnx_attr_ints(n, "split", sizes, parts);
  } else if (im_has_input(n, 1)) {
    const Onnx__TensorProto *t = im_const(im, n, 1);
    if (!t) return im_unsupported("split sizes not a constant");
    TRY(im_const_ints(t, sizes, parts, &got));
  }
  if (got < 0) {
    if (whole % parts) return im_unsupported("%d not divisible into %d parts", whole, parts);
    for (int i = 0; i < parts; i++)
      sizes[i] = whole / parts;
    got = parts;
  }
  int64_t sum = 0;
  for (int i = 0; i < got; i++) {
    if (sizes[i] < 1) return im_unsupported("a part of size %lld", (long long)sizes[i]);
    sum += sizes[i];
  }
  if (got != parts || sum != whole)
    return im_unsupported("split sizes do not add up to %d in %d parts", whole, parts);
  return TASO_OK;
}

static taso_err_t op_split(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, rest;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t *xt = im_type(im, x);
  int axis, parts = (int)n->n_output;
  if (!im_axis(taso_onnx_attr_int(n, "axis", 0), xt->rank, &axis))
    return im_unsupported("axis out of range");
  if (parts < 1 || parts > 64) return im_unsupported("%d outputs", parts);
  int64_t sizes[64];
  TRY(split_sizes(im, n, xt->dim[axis], sizes));
  if (parts == 1) return im_alias(im, n, 0, 0);
  taso_params_t p = taso_params_default();
  p.axis = axis;
  /* n parts as a chain: each split_at cuts the next part off the rest */
  rest = x;
  for (int i = 0; i < parts - 1; i++) {
    taso_ref_t first;
    p.at = (int32_t)sizes[i];
    TRY(im_node(im, TASO_OP_SPLIT_AT, &p, rest, -1, -1, &first));
    TRY(im_set(im, n, (size_t)i, first));
    rest = first + 1; /* port 1 */
  }
  return im_set(im, n, (size_t)parts - 1, rest);
}

static taso_err_t op_reshape(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  int in_lead, lead = 0;
  TRY(im_tensor_lead(im, n, 0, &x, &in_lead));
  const taso_tensor_t xt = *im_type(im, x);
  const Onnx__TensorProto *t = im_const(im, n, 1);
  if (!t) return im_unsupported("shape not a constant");
  int64_t v[8];
  int rank, infer = -1;
  TRY(im_const_ints(t, v, 8, &rank));
  int allow_zero = (int)taso_onnx_attr_int(n, "allowzero", 0);
  int32_t dim[8];
  int64_t known = 1;
  for (int i = 0; i < rank; i++) {
    /* 0 copies the input's size */
    if (v[i] == 0 && !allow_zero && i < xt.rank + in_lead)
      v[i] = i < in_lead ? 1 : xt.dim[i - in_lead];
    if (v[i] == -1 && infer < 0) {
      infer = i;
      continue;
    }
    if (v[i] < 1 || v[i] > INT32_MAX)
      return im_unsupported("size %lld in the shape", (long long)v[i]);
    dim[i] = (int32_t)v[i];
    known *= v[i];
  }
  int64_t total = taso_tensor_size(&xt);
  if (infer >= 0) {
    if (known < 1 || total % known) return im_unsupported("-1 cannot be inferred");
    dim[infer] = (int32_t)(total / known);
  }
  /* past rank 4, leading unit axes are kept aside (a channel shuffle) */
  while (rank - lead > TASO_MAX_RANK && dim[lead] == 1)
    lead++;
  if (rank - lead > TASO_MAX_RANK) return im_unsupported("rank %d", rank);
  TRY(im_reshape(im, x, rank - lead, dim + lead, &y));
  return im_set_lead(im, n, 0, y, lead);
}

static taso_err_t op_flatten(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t xt = *im_type(im, x);
  int64_t a = taso_onnx_attr_int(n, "axis", 1);
  if (a < 0) a += xt.rank;
  if (a < 0 || a > xt.rank) return im_unsupported("axis out of range for rank %d", xt.rank);
  int32_t dim[2] = {(int32_t)span(&xt, 0, (int)a), (int32_t)span(&xt, (int)a, xt.rank)};
  TRY(im_reshape(im, x, 2, dim, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_transpose(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  int lead;
  TRY(im_tensor_lead(im, n, 0, &x, &lead));
  int rank = im_type(im, x)->rank, identity = 1;
  int64_t perm[8];
  int k = taso_onnx_attr_ints(n, "perm", perm, 8);
  if (k < 0 && lead) return im_unsupported("reversing a rank %d value", rank + lead);
  if (k < 0)
    for (int i = 0; i < rank; i++)
      perm[i] = rank - 1 - i; /* default: reversed */
  else if (k != rank + lead)
    return im_unsupported("perm of %d axes for rank %d", k, rank + lead);
  /* the unit axes kept aside must stay in front */
  for (int i = 0; i < lead; i++)
    if (perm[i] != i)
      return im_unsupported("a perm that moves axis %d of a rank %d value", i, rank + lead);
  for (int i = 0; i < rank; i++)
    perm[i] = perm[i + lead] - lead;
  taso_params_t p = taso_params_default();
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank)
      return im_unsupported("perm entry %lld", (long long)perm[i]);
    p.perm[i] = (int32_t)perm[i];
    identity &= perm[i] == i;
  }
  if (identity) return im_alias(im, n, 0, 0);
  /* rank 2: the substitution language's transpose, which has no perm */
  if (rank == 2) memset(p.perm, 0, sizeof p.perm);
  TRY(im_node(im, rank == 2 ? TASO_OP_TRANSPOSE : TASO_OP_PERMUTE, &p, x, -1, -1, &y));
  return im_set_lead(im, n, 0, y, lead);
}

/* ---- operators import writes with others ---------------------------------------- */

/* A constant's values transformed one by one (negated, inverted) as a new
 * weight "NAME_what" of its shape; a seeded constant gives a seeded weight. */
static taso_err_t const_mapped(importer_t *im, const Onnx__NodeProto *n, size_t i, const char *what,
                               int invert, taso_ref_t *out) {
  const Onnx__TensorProto *t = im_const(im, n, i);
  taso_ref_t w;
  TRY(im_tensor(im, n, i, &w)); /* its shape, checked */
  const taso_tensor_t wt = *im_type(im, w);
  char name[TASO_MODEL_NAME_LEN];
  snprintf(name, sizeof name, "%.100s_%s", n->input[i], what);
  if (taso_onnx_seeded(t)) return im_weight(im, name, wt.rank, wt.dim, NULL, out);
  float *v;
  int64_t count;
  TRY(im_const_floats(t, &v, &count));
  for (int64_t k = 0; k < count; k++)
    v[k] = invert ? 1.0f / v[k] : -v[k];
  taso_err_t err = im_weight(im, name, wt.rank, wt.dim, v, out);
  free(v);
  return err;
}

/* a - b as a + (-b): a constant b negated at import, else times -1. */
static taso_err_t op_sub(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t a, b, y;
  TRY(im_tensor(im, n, 0, &a));
  if (im_const(im, n, 1)) {
    TRY(const_mapped(im, n, 1, "neg", 0, &b));
  } else {
    TRY(im_tensor(im, n, 1, &b));
    TRY(scale_by(im, n, "minus_one", -1.0f, &b));
  }
  TRY(combine(im, 1, a, b, &y));
  return im_set(im, n, 0, y);
}

/* a / b for a constant b: a times 1/b. */
static taso_err_t op_div(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t a, b, y;
  if (!im_const(im, n, 1)) return im_unsupported("a divisor that is not a constant");
  TRY(im_tensor(im, n, 0, &a));
  TRY(const_mapped(im, n, 1, "recip", 1, &b));
  TRY(combine(im, 0, a, b, &y));
  return im_set(im, n, 0, y);
}

/* clip(alpha x + beta, 0, 1) */
static taso_err_t hard_sigmoid(importer_t *im, const Onnx__NodeProto *n, taso_ref_t x, float alpha,
                               float beta, taso_ref_t *y) {
  taso_ref_t b;
  taso_params_t p = taso_params_default();
  *y = x;
  TRY(scale_by(im, n, "alpha", alpha, y));
  TRY(im_scalar_weight(im, n, "beta", beta, &b));
  TRY(im_node(im, TASO_OP_ADD, &p, *y, b, -1, y));
  p.bound[0] = 0.0f;
  p.bound[1] = 1.0f;
  return im_node(im, TASO_OP_CLIP, &p, *y, -1, -1, y);
}

static taso_err_t op_hardsigmoid(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  TRY(hard_sigmoid(im, n, x, taso_onnx_attr_float(n, "alpha", 0.2f),
                   taso_onnx_attr_float(n, "beta", 0.5f), &y));
  return im_set(im, n, 0, y);
}

/* x * hardsigmoid(x) with alpha 1/6 and beta 1/2 */
static taso_err_t op_hardswish(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  TRY(hard_sigmoid(im, n, x, 1.0f / 6.0f, 0.5f, &y));
  taso_params_t p = taso_params_default();
  TRY(im_node(im, TASO_OP_EWMUL, &p, x, y, -1, &y));
  return im_set(im, n, 0, y);
}

/* A weight "LABEL.mean": a column of n values 1/n, so that a product with
 * it is the mean of each row. */
static taso_err_t mean_column(importer_t *im, const Onnx__NodeProto *n, int32_t cols,
                              taso_ref_t *ref) {
  int32_t dim[2] = {cols, 1};
  float *v = malloc(sizeof(float) * (size_t)cols);
  if (!v) return taso_error(TASO_ERR_NOMEM, "%s: a column of means", im_label(n));
  for (int32_t i = 0; i < cols; i++)
    v[i] = 1.0f / (float)cols;
  char name[TASO_MODEL_NAME_LEN];
  snprintf(name, sizeof name, "%.100s.mean", im_label(n));
  taso_err_t err = im_weight(im, name, 2, dim, v, ref);
  free(v);
  return err;
}

/* The mean over some axes: a global average pool for the spatial pair of a
 * rank-4 tensor; else the reduced axes moved last (a permute), the tensor
 * seen as rows of them, and a product with a column of 1/n. */
static taso_err_t op_reduce_mean(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t xt = *im_type(im, x);
  int64_t axes[8];
  int na = taso_onnx_attr_ints(n, "axes", axes, 8),
      keep = (int)taso_onnx_attr_int(n, "keepdims", 1);
  char gone[TASO_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int a;
    if (!im_axis(axes[i], xt.rank, &a)) return im_unsupported("axis out of range");
    gone[a] = 1;
  }
  if (na < 0) /* no axes: all of them */
    memset(gone, 1, sizeof gone);
  taso_tensor_t out = xt;
  int64_t rows = 1, cols = 1;
  for (int i = 0; i < xt.rank; i++) {
    if (gone[i])
      cols *= xt.dim[i], out.dim[i] = 1;
    else
      rows *= xt.dim[i];
  }
  taso_params_t p = taso_params_default();
  if (xt.rank == 4 && !gone[0] && !gone[1] && gone[2] && gone[3]) {
    p.kernel[0] = xt.dim[2];
    p.kernel[1] = xt.dim[3];
    p.pad = TASO_PAD_VALID;
    TRY(im_node(im, TASO_OP_POOL_AVG, &p, x, -1, -1, &y));
  } else {
    int perm[TASO_MAX_RANK], k = 0, moved = 0;
    for (int i = 0; i < xt.rank; i++)
      if (!gone[i]) perm[k++] = i;
    for (int i = 0; i < xt.rank; i++)
      if (gone[i]) perm[k++] = i;
    for (int i = 0; i < xt.rank; i++)
      moved |= perm[i] != i;
    if (moved && xt.rank == 2) {
      TRY(im_node(im, TASO_OP_TRANSPOSE, &p, x, -1, -1, &x));
    } else if (moved) {
      for (int i = 0; i < xt.rank; i++)
        p.perm[i] = perm[i];
      TRY(im_node(im, TASO_OP_PERMUTE, &p, x, -1, -1, &x));
      p = taso_params_default();
    }
    int32_t flat[2] = {(int32_t)rows, (int32_t)cols};
    TRY(im_reshape(im, x, 2, flat, &x));
    TRY(mean_column(im, n, (int32_t)cols, &y));
    TRY(im_node(im, TASO_OP_MATMUL, &p, x, y, -1, &y));
  }
  if (!keep) { /* the reduced axes go */
    int r = 0;
    for (int i = 0; i < out.rank; i++)
      if (!gone[i]) out.dim[r++] = out.dim[i];
    out.rank = r;
  }
  TRY(im_reshape(im, y, out.rank, out.dim, &y));
  return im_set(im, n, 0, y);
}

/* Pad that pads nothing (PyTorch writes one before some average pools). */
static taso_err_t op_pad(importer_t *im, const Onnx__NodeProto *n) {
  int64_t pads[16];
  int np;
  char buf[16];
  if (strcmp(taso_onnx_attr_string(n, "mode", "constant", buf, sizeof buf), "constant"))
    return im_unsupported("mode %s", buf);
  if (im->opset < 11) {
    np = taso_onnx_attr_ints(n, "pads", pads, 16);
  } else {
    const Onnx__TensorProto *t = im_const(im, n, 1);
    if (!t) return im_unsupported("pads not a constant");
    TRY(im_const_ints(t, pads, 16, &np));
  }
  int zero = 1;
  for (int i = 0; i < np; i++)
    zero &= pads[i] == 0;
  if (zero) return im_alias(im, n, 0, 0);
  /* zeros around the spatial axes of a rank-4 tensor: the window reading
   * it takes them into its padding */
  if (im->opset >= 11 && im_has_input(n, 2)) {
    const Onnx__TensorProto *t = im_const(im, n, 2);
    float *v;
    int64_t count;
    if (!t) return im_unsupported("value not a constant");
    TRY(im_const_floats(t, &v, &count));
    int nonzero = count != 1 || v[0] != 0.0f;
    free(v);
    if (nonzero) return im_unsupported("padding with a value other than 0");
  } else if (im->opset < 11 && taso_onnx_attr_float(n, "value", 0.0f) != 0.0f) {
    return im_unsupported("padding with a value other than 0");
  }
  taso_ref_t x;
  int32_t pad[4];
  TRY(im_tensor_padded(im, n, 0, &x, pad));
  if (im_type(im, x)->rank != 4 || np != 8)
    return im_unsupported("padding of a tensor not of rank 4");
  for (int i = 0; i < 8; i++)
    if (pads[i] < 0 || pads[i] > 1 << 20 || ((i % 4) < 2 && pads[i]))
      return im_unsupported("padding of the batch or channel axis, or negative");
  pad[0] += (int32_t)pads[2], pad[1] += (int32_t)pads[3];
  pad[2] += (int32_t)pads[6], pad[3] += (int32_t)pads[7];
  return im_set_padded(im, n, 0, x, pad);
}

/* x cut to [from, from + len) on axis a (split_at, once or twice). */
static taso_err_t cut(importer_t *im, taso_ref_t x, int a, int32_t from, int32_t len,
                      taso_ref_t *y) {
  taso_params_t p = taso_params_default();
  p.axis = a;
  *y = x;
  int32_t d = im_type(im, x)->dim[a];
  if (from > 0) {
    p.at = from;
    TRY(im_node(im, TASO_OP_SPLIT_AT, &p, *y, -1, -1, y));
    *y += 1; /* port 1: the rest */
    d -= from;
  }
  if (len < d) {
    p.at = len;
    TRY(im_node(im, TASO_OP_SPLIT_AT, &p, *y, -1, -1, y)); /* port 0 */
  }
  return TASO_OK;
}

static taso_err_t op_slice(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t xt = *im_type(im, x);
  int64_t dim[TASO_MAX_RANK], start[TASO_MAX_RANK], end[TASO_MAX_RANK], step[TASO_MAX_RANK];
  for (int i = 0; i < xt.rank; i++)
    dim[i] = xt.dim[i];
  TRY(im_slice_ranges(im, n, xt.rank, dim, start, end, step));
  y = x;
  for (int a = 0; a < xt.rank; a++) {
    if (start[a] == 0 && end[a] == dim[a] && step[a] == 1) continue;
    if (step[a] != 1) return im_unsupported("step %lld", (long long)step[a]);
    if (end[a] <= start[a]) return im_unsupported("an empty slice");
    TRY(cut(im, y, a, (int32_t)start[a], (int32_t)(end[a] - start[a]), &y));
  }
  if (y == x) return im_alias(im, n, 0, 0);
  return im_set(im, n, 0, y);
}

/* Gather of a tensor at constant indices: one index (the axis goes) or a
 * run of consecutive ones (a slice). */
static taso_err_t op_gather(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  taso_tensor_t xt = *im_type(im, x);
  const Onnx__TensorProto *t = im_const(im, n, 1);
  if (!t || t->n_dims > 1) return im_unsupported("indices not a constant of rank 0 or 1");
  int a, count;
  if (!im_axis(taso_onnx_attr_int(n, "axis", 0), xt.rank, &a)) return im_unsupported("axis");
  int64_t idx[64];
  TRY(im_const_ints(t, idx, 64, &count));
  for (int i = 0; i < count; i++) {
    if (idx[i] < 0) idx[i] += xt.dim[a];
    if (idx[i] < 0 || idx[i] >= xt.dim[a] || (i && idx[i] != idx[0] + i))
      return im_unsupported("indices that are not a run inside the axis");
  }
  if (count < 1) return im_unsupported("no indices");
  TRY(cut(im, x, a, (int32_t)idx[0], count, &y));
  if (t->n_dims == 0) { /* a scalar index: the axis goes */
    for (int i = a; i + 1 < xt.rank; i++)
      xt.dim[i] = xt.dim[i + 1];
    xt.rank--;
    TRY(im_reshape(im, y, xt.rank, xt.dim, &y));
  }
  return im_set(im, n, 0, y);
}

static taso_err_t reshaped(importer_t *im, const Onnx__NodeProto *n, int squeeze) {
  taso_ref_t x, y;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t *xt = im_type(im, x);
  int64_t dim[8], out[8];
  int rank;
  for (int i = 0; i < xt->rank; i++)
    dim[i] = xt->dim[i];
  TRY(squeeze ? im_squeeze_dims(im, n, xt->rank, dim, &rank, out)
              : im_unsqueeze_dims(im, n, xt->rank, dim, &rank, out));
  if (rank > TASO_MAX_RANK) return im_unsupported("rank %d", rank);
  int32_t d[TASO_MAX_RANK];
  for (int i = 0; i < rank; i++)
    d[i] = (int32_t)out[i];
  TRY(im_reshape(im, x, rank, d, &y));
  return im_set(im, n, 0, y);
}

static taso_err_t op_unsqueeze(importer_t *im, const Onnx__NodeProto *n) {
  return reshaped(im, n, 0);
}
static taso_err_t op_squeeze(importer_t *im, const Onnx__NodeProto *n) {
  return reshaped(im, n, 1);
}

/* Expand to the shape the tensor has (batch 1): nothing. */
static taso_err_t op_expand(importer_t *im, const Onnx__NodeProto *n) {
  taso_ref_t x;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t *xt = im_type(im, x);
  const Onnx__TensorProto *t = im_const(im, n, 1);
  int64_t shape[8];
  int k;
  if (!t) return im_unsupported("shape not a constant");
  TRY(im_const_ints(t, shape, 8, &k));
  if (k > xt->rank) return im_unsupported("an expand that adds axes");
  for (int i = 0; i < k; i++)
    if (shape[i] != 1 && shape[i] != xt->dim[xt->rank - k + i])
      return im_unsupported("an expand that repeats values");
  return im_alias(im, n, 0, 0);
}

static taso_err_t op_erf(importer_t *im, const Onnx__NodeProto *n) {
  taso_params_t p = taso_params_default();
  return unary(im, n, TASO_OP_ERF, &p);
}

/* x to a constant power: 2 (x x) or -1/2 (rsqrt). */
static taso_err_t op_pow(importer_t *im, const Onnx__NodeProto *n) {
  float e = 0.0f;
  TRY(const_scalar(im, n, 1, &e));
  taso_ref_t x, y;
  taso_params_t p = taso_params_default();
  TRY(im_tensor(im, n, 0, &x));
  if (e == 2.0f) {
    TRY(im_node(im, TASO_OP_EWMUL, &p, x, x, -1, &y));
  } else if (e == -0.5f) {
    TRY(im_node(im, TASO_OP_RSQRT, &p, x, -1, -1, &y));
  } else if (e == 1.0f) {
    return im_alias(im, n, 0, 0);
  } else {
    return im_unsupported("exponent %g (2, 1 and -0.5 only)", (double)e);
  }
  return im_set(im, n, 0, y);
}

/* LayerNormalization over the axes from `axis` on, seen as the columns of
 * a matrix: the row means and variances as products with a column of 1/n,
 * then (x - mean) rsqrt(var + eps) times the scale, plus the bias. */
static taso_err_t op_layernorm(importer_t *im, const Onnx__NodeProto *n) {
  if (n->n_output > 3) return im_unsupported("%zu outputs", n->n_output);
  taso_ref_t x, col, mean, d, var, y, w;
  TRY(im_tensor(im, n, 0, &x));
  const taso_tensor_t xt = *im_type(im, x);
  int axis;
  if (!im_axis(taso_onnx_attr_int(n, "axis", -1), xt.rank, &axis) || xt.rank < 1)
    return im_unsupported("axis out of range");
  float eps = taso_onnx_attr_float(n, "epsilon", 1e-5f);
  int32_t flat[2] = {(int32_t)span(&xt, 0, axis), (int32_t)span(&xt, axis, xt.rank)};
  TRY(mean_column(im, n, flat[1], &col));
  taso_params_t p = taso_params_default();
  TRY(im_reshape(im, x, 2, flat, &x));
  TRY(im_node(im, TASO_OP_MATMUL, &p, x, col, -1, &mean));
  taso_ref_t neg = mean;
  TRY(scale_by(im, n, "minus_one", -1.0f, &neg));
  TRY(im_node(im, TASO_OP_ADD, &p, x, neg, -1, &d));
  TRY(im_node(im, TASO_OP_EWMUL, &p, d, d, -1, &var));
  TRY(im_node(im, TASO_OP_MATMUL, &p, var, col, -1, &var));
  TRY(im_scalar_weight(im, n, "epsilon", eps, &w));
  TRY(im_node(im, TASO_OP_ADD, &p, var, w, -1, &var));
  TRY(im_node(im, TASO_OP_RSQRT, &p, var, -1, -1, &var));
  TRY(im_node(im, TASO_OP_MUL, &p, d, var, -1, &y));
  /* Mean and InvStdDev, when asked for: x's shape with the normalized
   * axes of size 1 */
  taso_tensor_t st = xt;
  for (int i = axis; i < st.rank; i++)
    st.dim[i] = 1;
  taso_ref_t stat;
  if (im_has_output(n, 1)) {
    TRY(im_reshape(im, mean, st.rank, st.dim, &stat));
    TRY(im_set(im, n, 1, stat));
  }
  if (im_has_output(n, 2)) {
    TRY(im_reshape(im, var, st.rank, st.dim, &stat));
    TRY(im_set(im, n, 2, stat));
  }
  TRY(im_reshape(im, y, xt.rank, xt.dim, &y));
  TRY(im_tensor(im, n, 1, &w));
  TRY(combine(im, 0, y, w, &y));
  if (im_has_input(n, 2)) {
    TRY(im_tensor(im, n, 2, &w));
    TRY(combine(im, 1, y, w, &y));
  }
  return im_set(im, n, 0, y);
}

/* Cast of a float tensor to float: nothing. */
static taso_err_t op_cast(importer_t *im, const Onnx__NodeProto *n) {
  int64_t to = taso_onnx_attr_int(n, "to", 0);
  if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
    return im_unsupported("Cast of a tensor to %s", taso_onnx_type_name((int32_t)to));
  return im_alias(im, n, 0, 0);
}

/* ---- no nodes: Identity, Dropout, Constant ---------------------------------------- */

static taso_err_t op_identity(importer_t *im, const Onnx__NodeProto *n) {
  return im_alias(im, n, 0, 0);
}

static taso_err_t op_dropout(importer_t *im, const Onnx__NodeProto *n) {
  if (im_has_output(n, 1)) return im_unsupported("mask output");
  if (im_has_input(n, 2)) {
    const Onnx__TensorProto *t = im_const(im, n, 2);
    if (!t || taso_onnx_numel(t) != 1) return im_unsupported("training_mode not a constant");
    int64_t on;
    int k;
    TRY(im_const_ints(t, &on, 1, &k));
    if (on) return im_unsupported("training_mode");
  }
  return im_alias(im, n, 0, 0);
}

/* Constant's value_float(s) / value_int(s) as a TensorProto of our own. */
typedef struct {
  Onnx__TensorProto t; /* the tensor */
  int64_t dim;         /* its one dim, for the list forms */
} owned_tensor_t;

static taso_err_t constant_list(importer_t *im, const Onnx__NodeProto *n,
                                const Onnx__AttributeProto *a) {
  owned_tensor_t *o = calloc(1, sizeof *o);
  void *grown = realloc(im->owned, sizeof *im->owned * (size_t)(im->nowned + 1));
  if (!o || !grown) {
    free(o);
    if (grown) im->owned = grown;
    return taso_error(TASO_ERR_NOMEM, "constant");
  }
  im->owned = grown;
  im->owned[im->nowned++] = &o->t;
  onnx__tensor_proto__init(&o->t);
  o->t.name = n->output[0];
  o->t.has_data_type = 1;
  int is_float = !strcmp(a->name, "value_float") || !strcmp(a->name, "value_floats");
  int is_list = !strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints");
  o->t.data_type =
      is_float ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  if (is_list) {
    o->dim = is_float ? (int64_t)a->n_floats : (int64_t)a->n_ints;
    o->t.n_dims = 1;
    o->t.dims = &o->dim;
  }
  if (is_float) {
    o->t.n_float_data = is_list ? a->n_floats : 1;
    o->t.float_data = is_list ? a->floats : (float *)&a->f;
  } else {
    o->t.n_int64_data = is_list ? a->n_ints : 1;
    o->t.int64_data = is_list ? a->ints : (int64_t *)&a->i;
  }
  return im_set_const(im, n, 0, &o->t);
}

static taso_err_t op_constant(importer_t *im, const Onnx__NodeProto *n) {
  const Onnx__AttributeProto *a = taso_onnx_attr(n, "value");
  if (a && a->t) return im_set_const(im, n, 0, a->t);
  static const char *const lists[] = {"value_float", "value_floats", "value_int", "value_ints"};
  for (int i = 0; i < 4; i++)
    if ((a = taso_onnx_attr(n, lists[i]))) return constant_list(im, n, a);
  return im_unsupported("a value that is not a dense tensor or numbers");
}

/* ---- dispatch ------------------------------------------------------------------ */

static const struct {
  const char *op;
  taso_err_t (*fn)(importer_t *im, const Onnx__NodeProto *n);
} handlers[] = {
    {"Conv", op_conv},
    {"MatMul", op_matmul},
    {"Gemm", op_gemm},
    {"Add", op_add},
    {"Mul", op_mul},
    {"Relu", op_relu},
    {"Sigmoid", op_sigmoid},
    {"Tanh", op_tanh},
    {"Softmax", op_softmax},
    {"MaxPool", op_maxpool},
    {"AveragePool", op_avgpool},
    {"GlobalAveragePool", op_global_avgpool},
    {"BatchNormalization", op_batchnorm},
    {"Concat", op_concat},
    {"Split", op_split},
    {"Reshape", op_reshape},
    {"Flatten", op_flatten},
    {"Transpose", op_transpose},
    {"Identity", op_identity},
    {"Dropout", op_dropout},
    {"Clip", op_clip},
    {"Constant", op_constant},
    {"Sub", op_sub},
    {"Div", op_div},
    {"HardSigmoid", op_hardsigmoid},
    {"HardSwish", op_hardswish},
    {"ReduceMean", op_reduce_mean},
    {"Pad", op_pad},
    {"Slice", op_slice},
    {"Gather", op_gather},
    {"Unsqueeze", op_unsqueeze},
    {"Squeeze", op_squeeze},
    {"Expand", op_expand},
    {"Cast", op_cast},
    {"Erf", op_erf},
    {"Pow", op_pow},
    {"LayerNormalization", op_layernorm},
};

taso_err_t taso_onnx_import_op(importer_t *im, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < sizeof handlers / sizeof *handlers; i++)
    if (!strcmp(handlers[i].op, n->op_type)) return handlers[i].fn(im, n);
  /* an operator that import only computes (onnx_import_fold.c) */
  if (taso_onnx_supported(n->op_type)) return im_unsupported("only on small constants");
  return im_unsupported("not an operator taso imports");
}
