#include "op.h"

#include <string.h>

#include "check.h"

/* ---- shape rules ------------------------------------------------------- */

static taso_err_t same_shape(const taso_tensor_t *a, const taso_tensor_t *b) {
  if (a->rank != b->rank || memcmp(a->dim, b->dim, sizeof a->dim) != 0)
    return taso_error(TASO_ERR_SHAPE, "operand shapes differ");
  return TASO_OK;
}

/* ewadd, ewmul: equal shapes of rank 1 to 4. Rank 1 is for per-channel
 * vectors (a convolution's bias times a batch normalization's scale, axiom
 * C2); no job's enumeration meets it unless the job has vector inputs. */
static taso_err_t shape_elementwise(const taso_params_t *p, const taso_tensor_t *in,
                                    taso_tensor_t *out) {
  (void)p;
  if (in[0].rank < 1) return taso_error(TASO_ERR_SHAPE, "needs rank 1 to 4, got %d", in[0].rank);
  TASO_TRY(same_shape(&in[0], &in[1]));
  out[0] = taso_tensor_make(in[0].rank, in[0].dim);
  return TASO_OK;
}

static taso_err_t shape_smul(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  if (in[1].rank != 0)
    return taso_error(TASO_ERR_SHAPE, "second operand must be a scalar, got rank %d", in[1].rank);
  out[0] = taso_tensor_make(in[0].rank, in[0].dim);
  return TASO_OK;
}

static taso_err_t shape_unary(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  out[0] = taso_tensor_make(in[0].rank, in[0].dim);
  return TASO_OK;
}

static taso_err_t shape_transpose(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  (void)p;
  if (in[0].rank != 2) return taso_error(TASO_ERR_SHAPE, "needs rank 2, got %d", in[0].rank);
  int32_t d[2] = {in[0].dim[1], in[0].dim[0]};
  out[0] = taso_tensor_make(2, d);
  return TASO_OK;
}

static taso_err_t shape_matmul(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  (void)p;
  if (in[0].rank != 2 || in[1].rank != 2)
    return taso_error(TASO_ERR_SHAPE, "needs two rank-2 operands, got ranks %d and %d", in[0].rank,
                      in[1].rank);
  if (in[0].dim[1] != in[1].dim[0])
    return taso_error(TASO_ERR_SHAPE, "inner sizes differ: [%d,%d] x [%d,%d]", in[0].dim[0],
                      in[0].dim[1], in[1].dim[0], in[1].dim[1]);
  int32_t d[2] = {in[0].dim[0], in[1].dim[1]};
  out[0] = taso_tensor_make(2, d);
  return TASO_OK;
}

int32_t taso_window_out(int32_t i, int32_t k, int32_t s, int32_t pad, int32_t *pad_before) {
  if (pad == TASO_PAD_VALID) {
    *pad_before = 0;
    return i < k ? 0 : (i - k) / s + 1;
  }
  int32_t o = (i + s - 1) / s;
  int32_t total = (o - 1) * s + k - i;
  *pad_before = total > 0 ? total / 2 : 0;
  return o;
}

int32_t taso_window_axis(const taso_params_t *p, int axis, int32_t i, int32_t k,
                         int32_t *pad_before) {
  int32_t s = p->stride[axis];
  if (p->pad != TASO_PAD_EXPLICIT) return taso_window_out(i, k, s, p->pad, pad_before);
  int32_t total = i + p->pads[axis] + p->pads[axis + 2];
  *pad_before = p->pads[axis];
  return total < k ? 0 : (total - k) / s + 1;
}

/* Output [n, c, oh, ow] of a window operator on x [n, ., h, w]. */
static taso_err_t window_shape(const taso_params_t *p, const taso_tensor_t *x, int32_t kh,
                               int32_t kw, int32_t c, taso_tensor_t *out) {
  int32_t before;
  if (p->stride[0] < 1 || p->stride[1] < 1)
    return taso_error(TASO_ERR_SHAPE, "stride %dx%d must be positive", p->stride[0], p->stride[1]);
  if (kh < 1 || kw < 1) return taso_error(TASO_ERR_SHAPE, "kernel %dx%d must be positive", kh, kw);
  if (p->pad == TASO_PAD_EXPLICIT)
    for (int i = 0; i < 4; i++)
      if (p->pads[i] < 0 || p->pads[i] >= (i % 2 ? kw : kh))
        return taso_error(TASO_ERR_SHAPE, "padding %d,%d,%d,%d must be smaller than kernel %dx%d",
                          p->pads[0], p->pads[1], p->pads[2], p->pads[3], kh, kw);
  int32_t oh = taso_window_axis(p, 0, x->dim[2], kh, &before);
  int32_t ow = taso_window_axis(p, 1, x->dim[3], kw, &before);
  if (oh < 1 || ow < 1)
    return taso_error(TASO_ERR_SHAPE, "kernel %dx%d does not fit input %dx%d with this padding", kh,
                      kw, x->dim[2], x->dim[3]);
  int32_t d[4] = {x->dim[0], c, oh, ow};
  *out = taso_tensor_make(4, d);
  return TASO_OK;
}

static taso_err_t shape_conv2d(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  const taso_tensor_t *x = &in[0], *w = &in[1];
  if (x->rank != 4 || w->rank != 4)
    return taso_error(TASO_ERR_SHAPE, "needs rank-4 input and weight, got ranks %d and %d", x->rank,
                      w->rank);
  if (x->dim[1] % w->dim[1] != 0)
    return taso_error(TASO_ERR_SHAPE, "input channels %d not a multiple of weight channels %d",
                      x->dim[1], w->dim[1]);
  int32_t groups = x->dim[1] / w->dim[1];
  if (w->dim[0] % groups != 0)
    return taso_error(TASO_ERR_SHAPE, "output channels %d not a multiple of %d groups", w->dim[0],
                      groups);
  return window_shape(p, x, w->dim[2], w->dim[3], w->dim[0], out);
}

static taso_err_t shape_pool(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  if (in[0].rank != 4) return taso_error(TASO_ERR_SHAPE, "needs rank 4, got %d", in[0].rank);
  return window_shape(p, &in[0], p->kernel[0], p->kernel[1], in[0].dim[1], out);
}

static taso_err_t shape_concat(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  const taso_tensor_t *x = &in[0], *y = &in[1];
  if (x->rank != y->rank)
    return taso_error(TASO_ERR_SHAPE, "operand ranks differ: %d and %d", x->rank, y->rank);
  if (p->axis < 0 || p->axis >= x->rank)
    return taso_error(TASO_ERR_SHAPE, "axis %d out of range for rank %d", p->axis, x->rank);
  for (int i = 0; i < x->rank; i++)
    if (i != p->axis && x->dim[i] != y->dim[i])
      return taso_error(TASO_ERR_SHAPE, "sizes differ on axis %d: %d and %d", i, x->dim[i],
                        y->dim[i]);
  out[0] = taso_tensor_make(x->rank, x->dim);
  out[0].dim[p->axis] += y->dim[p->axis];
  return TASO_OK;
}

static taso_err_t shape_split(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  const taso_tensor_t *x = &in[0];
  taso_tree_t l, r;
  int32_t s;
  if (p->axis < 0 || p->axis >= x->rank)
    return taso_error(TASO_ERR_SHAPE, "axis %d out of range for rank %d", p->axis, x->rank);
  if (!taso_tree_split(&x->tree[p->axis], &s, &l, &r))
    return taso_error(TASO_ERR_SHAPE,
                      taso_tree_digest(&x->tree[p->axis])
                          ? "axis %d has a split tree of more concats than a split can read"
                          : "axis %d has an empty split tree",
                      p->axis);
  out[0] = taso_tensor_make(x->rank, x->dim);
  out[1] = out[0];
  out[0].dim[p->axis] = s;
  out[1].dim[p->axis] = x->dim[p->axis] - s;
  return TASO_OK;
}

static taso_err_t shape_enlarge(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  const taso_tensor_t *w = &in[0];
  if (w->rank != 4)
    return taso_error(TASO_ERR_SHAPE, "needs a rank-4 weight, got rank %d", w->rank);
  if (w->dim[2] > p->kernel[0] || w->dim[3] > p->kernel[1])
    return taso_error(TASO_ERR_SHAPE, "kernel %dx%d larger than target %dx%d", w->dim[2], w->dim[3],
                      p->kernel[0], p->kernel[1]);
  int32_t d[4] = {w->dim[0], w->dim[1], p->kernel[0], p->kernel[1]};
  out[0] = taso_tensor_make(4, d);
  return TASO_OK;
}

/* Constants: the shape is a parameter; check it fits the operator. */
static taso_err_t shape_constant(const taso_params_t *p, taso_tensor_t *out) {
  if (p->rank < 0 || p->rank > TASO_MAX_RANK)
    return taso_error(TASO_ERR_SHAPE, "rank %d out of range", p->rank);
  for (int i = 0; i < p->rank; i++)
    if (p->shape[i] < 1) return taso_error(TASO_ERR_SHAPE, "size %d on axis %d", p->shape[i], i);
  out[0] = taso_tensor_make(p->rank, p->shape);
  return TASO_OK;
}

static taso_err_t shape_const_kernel(const taso_params_t *p, bool depthwise, taso_tensor_t *out) {
  TASO_TRY(shape_constant(p, out));
  if (p->rank != 4 || p->shape[2] != p->kernel[0] || p->shape[3] != p->kernel[1])
    return taso_error(TASO_ERR_SHAPE, "shape must be [c,%s,%d,%d]", depthwise ? "1" : "c",
                      p->kernel[0], p->kernel[1]);
  if (depthwise ? p->shape[1] != 1 : p->shape[0] != p->shape[1])
    return taso_error(TASO_ERR_SHAPE, "shape must be [c,%s,%d,%d]", depthwise ? "1" : "c",
                      p->kernel[0], p->kernel[1]);
  return TASO_OK;
}

static taso_err_t shape_const_pool(const taso_params_t *p, const taso_tensor_t *in,
                                   taso_tensor_t *out) {
  (void)in;
  return shape_const_kernel(p, true, out);
}

static taso_err_t shape_const_iconv(const taso_params_t *p, const taso_tensor_t *in,
                                    taso_tensor_t *out) {
  (void)in;
  return shape_const_kernel(p, false, out);
}

static taso_err_t shape_const_imm(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  (void)in;
  TASO_TRY(shape_constant(p, out));
  if (p->rank != 2 || p->shape[0] != p->shape[1])
    return taso_error(TASO_ERR_SHAPE, "an identity matrix must be square [k,k]");
  return TASO_OK;
}

static taso_err_t shape_const_one(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  (void)in;
  return shape_constant(p, out);
}

/* chmul, chadd: x of rank 2 to 4 and a vector with one value per slice of
 * axis a (rank 2 as for ewadd: the vectors themselves stay operands). */
static taso_err_t shape_channel(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  if (in[0].rank < 2) return taso_error(TASO_ERR_SHAPE, "needs rank 2 to 4, got %d", in[0].rank);
  if (p->axis < 0 || p->axis >= in[0].rank)
    return taso_error(TASO_ERR_SHAPE, "axis %d out of range for rank %d", p->axis, in[0].rank);
  if (in[1].rank != 1 || in[1].dim[0] != in[0].dim[p->axis])
    return taso_error(TASO_ERR_SHAPE, "needs one value per slice of axis %d (%d)", p->axis,
                      in[0].dim[p->axis]);
  return shape_unary(p, in, out);
}

/* ---- model-only shape rules --------------------------------------------- */

/* ONNX multidirectional broadcasting: axes aligned from the right, each
 * pair equal or one of them 1. */
static taso_err_t shape_broadcast(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  (void)p;
  const taso_tensor_t *a = &in[0], *b = &in[1];
  int rank = a->rank > b->rank ? a->rank : b->rank;
  int32_t d[TASO_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int32_t x = ia >= 0 ? a->dim[ia] : 1, y = ib >= 0 ? b->dim[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return taso_error(TASO_ERR_SHAPE, "sizes %d and %d on axis %d do not broadcast", x, y, i);
    d[i] = x == 1 ? y : x;
  }
  out[0] = taso_tensor_make(rank, d);
  return TASO_OK;
}

static taso_err_t shape_clip(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  if (!(p->bound[0] <= p->bound[1]))
    return taso_error(TASO_ERR_SHAPE, "bounds %g > %g", (double)p->bound[0], (double)p->bound[1]);
  return shape_unary(p, in, out);
}

static taso_err_t shape_softmax(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  if (p->axis < 0 || p->axis >= in[0].rank)
    return taso_error(TASO_ERR_SHAPE, "axis %d out of range for rank %d", p->axis, in[0].rank);
  return shape_unary(p, in, out);
}

static taso_err_t shape_batchnorm(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  if (in[0].rank < 2) return taso_error(TASO_ERR_SHAPE, "needs rank 2 to 4, got %d", in[0].rank);
  for (int i = 1; i < 3; i++)
    if (in[i].rank != 1 || in[i].dim[0] != in[0].dim[1])
      return taso_error(TASO_ERR_SHAPE, "%s must be one value per channel (%d)",
                        i == 1 ? "scale" : "bias", in[0].dim[1]);
  return shape_unary(p, in, out);
}

static taso_err_t shape_reshape(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  TASO_TRY(shape_constant(p, out));
  if (taso_tensor_size(&out[0]) != taso_tensor_size(&in[0]))
    return taso_error(TASO_ERR_SHAPE, "%lld elements cannot take a shape of %lld",
                      (long long)taso_tensor_size(&in[0]), (long long)taso_tensor_size(&out[0]));
  return TASO_OK;
}

static taso_err_t shape_permute(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  int rank = in[0].rank, seen = 0;
  int32_t d[TASO_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    if (p->perm[i] < 0 || p->perm[i] >= rank || (seen & (1 << p->perm[i])))
      return taso_error(TASO_ERR_SHAPE, "not a permutation of %d axes", rank);
    seen |= 1 << p->perm[i];
    d[i] = in[0].dim[p->perm[i]];
  }
  for (int i = rank; i < TASO_MAX_RANK; i++)
    if (p->perm[i] != 0) return taso_error(TASO_ERR_SHAPE, "permutation longer than rank %d", rank);
  out[0] = taso_tensor_make(rank, d);
  return TASO_OK;
}

static taso_err_t shape_bmm(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  const taso_tensor_t *a = &in[0], *b = &in[1];
  if (a->rank != 3 || b->rank != 3)
    return taso_error(TASO_ERR_SHAPE, "needs two rank-3 operands, got ranks %d and %d", a->rank,
                      b->rank);
  if (a->dim[0] != b->dim[0] || a->dim[2] != b->dim[1])
    return taso_error(TASO_ERR_SHAPE, "[%d,%d,%d] x [%d,%d,%d] do not multiply", a->dim[0],
                      a->dim[1], a->dim[2], b->dim[0], b->dim[1], b->dim[2]);
  int32_t d[3] = {a->dim[0], a->dim[1], b->dim[2]};
  out[0] = taso_tensor_make(3, d);
  return TASO_OK;
}

static taso_err_t shape_split_at(const taso_params_t *p, const taso_tensor_t *in,
                                 taso_tensor_t *out) {
  const taso_tensor_t *x = &in[0];
  if (p->axis < 0 || p->axis >= x->rank)
    return taso_error(TASO_ERR_SHAPE, "axis %d out of range for rank %d", p->axis, x->rank);
  if (p->at < 1 || p->at >= x->dim[p->axis])
    return taso_error(TASO_ERR_SHAPE, "cannot split size %d at %d", x->dim[p->axis], p->at);
  out[0] = taso_tensor_make(x->rank, x->dim);
  out[1] = out[0];
  out[0].dim[p->axis] = p->at;
  out[1].dim[p->axis] = x->dim[p->axis] - p->at;
  return TASO_OK;
}

/* ---- split-tree rules (semantics.md section 1; enlarge is ours) ---------- */

static taso_err_t trees_none(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  (void)in;
  (void)out; /* constants: every tree empty, as taso_tensor_make left them */
  return TASO_OK;
}

static taso_err_t trees_first(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  memcpy(out[0].tree, in[0].tree, sizeof in[0].tree);
  return TASO_OK;
}

/* Keeps a tree where both operands agree. */
static void trees_agree(const taso_tensor_t *x, const taso_tensor_t *y, int skip_axis,
                        taso_tensor_t *out) {
  for (int i = 0; i < x->rank; i++)
    if (i != skip_axis && taso_tree_equal(&x->tree[i], &y->tree[i])) out->tree[i] = x->tree[i];
}

static taso_err_t trees_elementwise(const taso_params_t *p, const taso_tensor_t *in,
                                    taso_tensor_t *out) {
  (void)p;
  trees_agree(&in[0], &in[1], -1, &out[0]);
  return TASO_OK;
}

static taso_err_t trees_transpose(const taso_params_t *p, const taso_tensor_t *in,
                                  taso_tensor_t *out) {
  (void)p;
  out[0].tree[0] = in[0].tree[1];
  out[0].tree[1] = in[0].tree[0];
  return TASO_OK;
}

static taso_err_t trees_matmul(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  (void)p;
  out[0].tree[0] = in[0].tree[0];
  out[0].tree[1] = in[1].tree[1];
  return TASO_OK;
}

static taso_err_t trees_conv2d(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  (void)p;
  out[0].tree[0] = in[0].tree[0];
  out[0].tree[1] = in[1].tree[0];
  return TASO_OK;
}

static taso_err_t trees_pool(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  (void)p;
  out[0].tree[0] = in[0].tree[0];
  return TASO_OK;
}

/* enlarge keeps the channel axes; the kernel axes change size, so they reset. */
static taso_err_t trees_enlarge(const taso_params_t *p, const taso_tensor_t *in,
                                taso_tensor_t *out) {
  (void)p;
  out[0].tree[0] = in[0].tree[0];
  out[0].tree[1] = in[0].tree[1];
  return TASO_OK;
}

static taso_err_t trees_concat(const taso_params_t *p, const taso_tensor_t *in,
                               taso_tensor_t *out) {
  int a = p->axis;
  trees_agree(&in[0], &in[1], a, &out[0]);
  /* Past the code's size the tree is kept as a digest (tensor.h): equal
   * trees still compare equal and different ones differ, though the
   * substitution language's graphs get there (4 concats sharing their
   * operands make 15) and so do models (a DenseNet block joins up to 49
   * tensors); such a tree cannot be split. */
  taso_tree_join(&out[0].tree[a], in[0].dim[a], &in[0].tree[a], &in[1].tree[a]);
  return TASO_OK;
}

static taso_err_t trees_split(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out) {
  int32_t s;
  memcpy(out[0].tree, in[0].tree, sizeof in[0].tree);
  memcpy(out[1].tree, in[0].tree, sizeof in[0].tree);
  taso_tree_split(&in[0].tree[p->axis], &s, &out[0].tree[p->axis], &out[1].tree[p->axis]);
  return TASO_OK;
}

/* Model-only operators keep no split trees: nothing splits their results by
 * tree, and keeping none never makes a split valid that is not. */
#define trees_model trees_none

/* ---- the registry ------------------------------------------------------- */

#define WINDOW (TASO_P_STRIDE | TASO_P_PAD)

const taso_op_info_t taso_ops[TASO_OP_COUNT] = {
    [TASO_OP_INPUT] = {.name = "input", .arity = 0, .outputs = 1, .params = TASO_P_INPUT},
    [TASO_OP_EWADD] = {"ewadd", 2, 1, 0, shape_elementwise, trees_elementwise},
    [TASO_OP_EWMUL] = {"ewmul", 2, 1, 0, shape_elementwise, trees_elementwise},
    [TASO_OP_SMUL] = {"smul", 2, 1, 0, shape_smul, trees_first},
    [TASO_OP_RELU] = {"relu", 1, 1, 0, shape_unary, trees_first},
    [TASO_OP_TRANSPOSE] = {"transpose", 1, 1, TASO_P_LAYOUT, shape_transpose, trees_transpose},
    [TASO_OP_MATMUL] = {"matmul", 2, 1, TASO_P_ACT, shape_matmul, trees_matmul},
    [TASO_OP_CONV2D] = {"conv2d", 2, 1, WINDOW | TASO_P_ACT, shape_conv2d, trees_conv2d},
    [TASO_OP_POOL_AVG] = {"pool_avg", 1, 1, WINDOW | TASO_P_KERNEL | TASO_P_COUNT_PAD, shape_pool,
                          trees_pool},
    [TASO_OP_POOL_MAX] = {"pool_max", 1, 1, WINDOW | TASO_P_KERNEL, shape_pool, trees_pool},
    [TASO_OP_CONCAT] = {"concat", 2, 1, TASO_P_AXIS, shape_concat, trees_concat},
    [TASO_OP_SPLIT] = {"split", 1, 2, TASO_P_AXIS, shape_split, trees_split},
    [TASO_OP_ENLARGE] = {"enlarge", 1, 1, TASO_P_KERNEL, shape_enlarge, trees_enlarge},
    [TASO_OP_CONST_POOL] = {"const_pool", 0, 1, TASO_P_KERNEL | TASO_P_SHAPE, shape_const_pool,
                            trees_none},
    [TASO_OP_CONST_ICONV] = {"const_iconv", 0, 1, TASO_P_KERNEL | TASO_P_SHAPE, shape_const_iconv,
                             trees_none},
    [TASO_OP_CONST_IMM] = {"const_imm", 0, 1, TASO_P_SHAPE, shape_const_imm, trees_none},
    [TASO_OP_CONST_ONE] = {"const_one", 0, 1, TASO_P_SHAPE, shape_const_one, trees_none},
    [TASO_OP_ADD] = {"add", 2, 1, 0, shape_broadcast, trees_model},
    [TASO_OP_MUL] = {"mul", 2, 1, 0, shape_broadcast, trees_model},
    [TASO_OP_SIGMOID] = {"sigmoid", 1, 1, 0, shape_unary, trees_model},
    [TASO_OP_TANH] = {"tanh", 1, 1, 0, shape_unary, trees_model},
    [TASO_OP_CLIP] = {"clip", 1, 1, TASO_P_BOUND, shape_clip, trees_model},
    [TASO_OP_SOFTMAX] = {"softmax", 1, 1, TASO_P_AXIS, shape_softmax, trees_model},
    [TASO_OP_BATCHNORM] = {"batchnorm", 3, 1, 0, shape_batchnorm, trees_model},
    [TASO_OP_RESHAPE] = {"reshape", 1, 1, TASO_P_SHAPE, shape_reshape, trees_model},
    [TASO_OP_PERMUTE] = {"permute", 1, 1, TASO_P_PERM, shape_permute, trees_model},
    [TASO_OP_BMM] = {"bmm", 2, 1, TASO_P_ACT, shape_bmm, trees_model},
    [TASO_OP_SPLIT_AT] = {"split_at", 1, 2, TASO_P_AXIS | TASO_P_AT, shape_split_at, trees_model},
    [TASO_OP_CHMUL] = {"chmul", 2, 1, TASO_P_AXIS, shape_channel, trees_first},
    [TASO_OP_CHADD] = {"chadd", 2, 1, TASO_P_AXIS, shape_channel, trees_first},
    [TASO_OP_ERF] = {"erf", 1, 1, 0, shape_unary, trees_model},
    [TASO_OP_RSQRT] = {"rsqrt", 1, 1, 0, shape_unary, trees_model},
};

taso_op_kind_t taso_op_lookup(const char *name) {
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++)
    if (strcmp(taso_ops[k].name, name) == 0) return (taso_op_kind_t)k;
  return TASO_OP_COUNT;
}

taso_params_t taso_params_default(void) {
  taso_params_t p;
  memset(&p, 0, sizeof p);
  p.stride[0] = p.stride[1] = 1;
  p.pad = TASO_PAD_SAME;
  p.act = TASO_ACT_NONE;
  p.layout = TASO_LAYOUT_MATERIALIZED;
  return p;
}

taso_err_t taso_op_infer(taso_op_kind_t kind, const taso_params_t *p, const taso_tensor_t *in,
                         taso_tensor_t *out) {
  if (kind <= TASO_OP_INPUT || kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_UNKNOWN, "operator kind %d has no shape rule", (int)kind);
  const taso_op_info_t *op = &taso_ops[kind];
  taso_err_t err = op->shape(p, in, out);
  if (err == TASO_OK) err = op->trees(p, in, out);
  if (err != TASO_OK) return taso_error_prefix(err, "%s: ", op->name);
  return TASO_OK;
}
