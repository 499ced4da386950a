/*
 * Reference evaluation of every operator, written once over an abstract
 * number type and compiled once per type (double, exact rationals, the prime
 * field of the fingerprints, symbolic terms), so that the generator, the
 * validator and the CPU backend cannot disagree about what an operator means.
 *
 * Include after defining:
 *   NUM_T               the number type
 *   NUM_CTX_T           a context passed to every operation (unused: any type)
 *   NUM_SUFFIX          suffix of the generated function names
 *   NUM_ZERO(c) NUM_ONE(c) NUM_FRAC(c, p, q)     constants (p/q, q > 0)
 *   NUM_ADD(c, a, b) NUM_MUL(c, a, b) NUM_RELU(c, a) NUM_MAX(c, a, b)
 * Optionally, for the model-only operators that need real functions
 * (sigmoid, tanh, clip, softmax; only the double type defines them):
 *   NUM_EXP(c, a) NUM_TANH(c, a) NUM_DIV(c, a, b) NUM_CLIP(c, a, lo, hi)
 * Optionally, an accumulator for sums of products (convolutions, matmul):
 *   NUM_ACC_T NUM_ACC_ZERO(c) NUM_ACC_MAC(c, acc, a, b) NUM_ACC_GET(c, acc)
 * (default: NUM_T with NUM_ADD and NUM_MUL), so that a type can defer its
 * reductions (the prime field sums 128-bit products, reducing once).
 * Generates (declared in eval.h for the built-in types):
 *   taso_eval_node_SUFFIX(ctx, node, in_types, in, out_types, out)
 *   taso_eval_graph_SUFFIX(ctx, graph, types, inputs, values)
 * Operations are assumed not to fail; a type with failures (overflow) records
 * them in its context.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph.h"

#ifndef NUM_ACC_T
#define NUM_ACC_T NUM_T
#define NUM_ACC_ZERO(c) NUM_ZERO(c)
#define NUM_ACC_MAC(c, acc, a, b) ((acc) = NUM_ADD(c, (acc), NUM_MUL(c, (a), (b))))
#define NUM_ACC_GET(c, acc) (acc)
#endif

#define EV_CAT2(a, b) a##b
#define EV_CAT(a, b) EV_CAT2(a, b)
#define EV_FN(name) EV_CAT(name, NUM_SUFFIX)

/* Product of dims [from, to). */
static int64_t EV_FN(ev_span_)(const taso_tensor_t *t, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++)
    n *= t->dim[i];
  return n;
}

static NUM_T EV_FN(ev_act_)(NUM_CTX_T c, int32_t act, NUM_T v) {
  (void)c;
  return act == TASO_ACT_RELU ? NUM_RELU(c, v) : v;
}

static void EV_FN(ev_conv2d_)(NUM_CTX_T c, const taso_params_t *p, const taso_tensor_t *xt,
                              const NUM_T *x, const taso_tensor_t *wt, const NUM_T *w,
                              const taso_tensor_t *ot, NUM_T *out) {
  int32_t N = xt->dim[0], C = xt->dim[1], H = xt->dim[2], W = xt->dim[3];
  int32_t CO = wt->dim[0], CG = wt->dim[1], KH = wt->dim[2], KW = wt->dim[3];
  int32_t OH = ot->dim[2], OW = ot->dim[3], top, left;
  int32_t per_group = CO / (C / CG); /* output channels per group */
  taso_window_axis(p, 0, H, KH, &top);
  taso_window_axis(p, 1, W, KW, &left);
  for (int32_t n = 0; n < N; n++)
    for (int32_t o = 0; o < CO; o++)
      for (int32_t oy = 0; oy < OH; oy++)
        for (int32_t ox = 0; ox < OW; ox++) {
          NUM_ACC_T sum = NUM_ACC_ZERO(c);
          int32_t first = (o / per_group) * CG;
          /* the kernel rows and columns that fall inside the input: the
           * rest reads zero padding */
          int32_t y0 = oy * p->stride[0] - top, x0 = ox * p->stride[1] - left;
          int32_t ky0 = y0 < 0 ? -y0 : 0, ky1 = H - y0 < KH ? H - y0 : KH;
          int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = W - x0 < KW ? W - x0 : KW;
          for (int32_t ci = 0; ci < CG; ci++)
            for (int32_t ky = ky0; ky < ky1; ky++) {
              int64_t xr = ((int64_t)(n * C + first + ci) * H + y0 + ky) * W + x0;
              int64_t wr = ((int64_t)(o * CG + ci) * KH + ky) * KW;
              for (int32_t kx = kx0; kx < kx1; kx++)
                NUM_ACC_MAC(c, sum, x[xr + kx], w[wr + kx]);
            }
          out[((int64_t)(n * CO + o) * OH + oy) * OW + ox] =
              EV_FN(ev_act_)(c, p->act, NUM_ACC_GET(c, sum));
        }
}

static void EV_FN(ev_pool_)(NUM_CTX_T c, bool is_max, const taso_params_t *p,
                            const taso_tensor_t *xt, const NUM_T *x, const taso_tensor_t *ot,
                            NUM_T *out) {
  (void)c;
  int32_t N = xt->dim[0], C = xt->dim[1], H = xt->dim[2], W = xt->dim[3];
  int32_t KH = p->kernel[0], KW = p->kernel[1], OH = ot->dim[2], OW = ot->dim[3], top, left;
  taso_window_axis(p, 0, H, KH, &top);
  taso_window_axis(p, 1, W, KW, &left);
  NUM_T scale = NUM_FRAC(c, 1, KH * KW);
  for (int32_t nc = 0; nc < N * C; nc++)
    for (int32_t oy = 0; oy < OH; oy++)
      for (int32_t ox = 0; ox < OW; ox++) {
        NUM_T acc = NUM_ZERO(c);
        bool any = false;
        int32_t count = 0;
        for (int32_t ky = 0; ky < KH; ky++)
          for (int32_t kx = 0; kx < KW; kx++) {
            int32_t y = oy * p->stride[0] - top + ky, xx = ox * p->stride[1] - left + kx;
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue; /* padding is skipped */
            NUM_T v = x[((int64_t)nc * H + y) * W + xx];
            acc = !any ? v : is_max ? NUM_MAX(c, acc, v) : NUM_ADD(c, acc, v);
            any = true;
            count++;
          }
        /* Every window holds at least one element (padding < kernel). */
        out[((int64_t)nc * OH + oy) * OW + ox] =
            is_max ? acc : NUM_MUL(c, acc, p->exclude_pad ? NUM_FRAC(c, 1, count) : scale);
      }
}

/* ONNX broadcasting: each operand index comes from the output index with
 * the operand's size-1 (or missing leading) axes held at 0. */
static void EV_FN(ev_broadcast_)(NUM_CTX_T c, bool is_add, const taso_tensor_t *it,
                                 const NUM_T *const *in, const taso_tensor_t *ot, NUM_T *o) {
  (void)c;
  int64_t stride[2][TASO_MAX_RANK];
  for (int k = 0; k < 2; k++) {
    int64_t s = 1;
    for (int i = ot->rank - 1; i >= 0; i--) {
      int ia = i - (ot->rank - it[k].rank);
      int32_t d = ia >= 0 ? it[k].dim[ia] : 1;
      stride[k][i] = d == 1 ? 0 : s;
      s *= d;
    }
  }
  int64_t size = taso_tensor_size(ot);
  for (int64_t i = 0; i < size; i++) {
    int64_t rest = i, at[2] = {0, 0};
    for (int d = ot->rank - 1; d >= 0; d--) {
      int64_t x = rest % ot->dim[d];
      rest /= ot->dim[d];
      at[0] += x * stride[0][d];
      at[1] += x * stride[1][d];
    }
    o[i] = is_add ? NUM_ADD(c, in[0][at[0]], in[1][at[1]]) : NUM_MUL(c, in[0][at[0]], in[1][at[1]]);
  }
}

static void EV_FN(ev_permute_)(const taso_params_t *p, const taso_tensor_t *it, const NUM_T *x,
                               const taso_tensor_t *ot, NUM_T *o) {
  int64_t in_stride[TASO_MAX_RANK], s = 1;
  for (int i = it->rank - 1; i >= 0; i--) {
    in_stride[i] = s;
    s *= it->dim[i];
  }
  int64_t size = taso_tensor_size(ot);
  for (int64_t i = 0; i < size; i++) {
    int64_t rest = i, from = 0;
    for (int d = ot->rank - 1; d >= 0; d--) {
      from += (rest % ot->dim[d]) * in_stride[p->perm[d]];
      rest /= ot->dim[d];
    }
    o[i] = x[from];
  }
}

taso_err_t EV_FN(taso_eval_node_)(NUM_CTX_T c, const taso_node_t *node,
                                  const taso_tensor_t *in_types, const NUM_T *const *in,
                                  const taso_tensor_t *out_types, NUM_T *const *out) {
  (void)c;
  const taso_params_t *p = &node->p;
  const taso_tensor_t *ot = &out_types[0];
  int64_t size = taso_tensor_size(ot);
  NUM_T *o = out[0];
  switch ((taso_op_kind_t)node->kind) {
  case TASO_OP_EWADD:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_ADD(c, in[0][i], in[1][i]);
    break;
  case TASO_OP_EWMUL:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_MUL(c, in[0][i], in[1][i]);
    break;
  case TASO_OP_SMUL:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_MUL(c, in[0][i], in[1][0]);
    break;
  case TASO_OP_RELU:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_RELU(c, in[0][i]);
    break;
  case TASO_OP_TRANSPOSE: {
    int32_t m = in_types[0].dim[0], n = in_types[0].dim[1];
    for (int32_t i = 0; i < m; i++)
      for (int32_t j = 0; j < n; j++)
        o[(int64_t)j * m + i] = in[0][(int64_t)i * n + j];
    break;
  }
  case TASO_OP_MATMUL: {
    int32_t m = in_types[0].dim[0], k = in_types[0].dim[1], n = in_types[1].dim[1];
    for (int32_t i = 0; i < m; i++)
      for (int32_t j = 0; j < n; j++) {
        NUM_ACC_T sum = NUM_ACC_ZERO(c);
        for (int32_t t = 0; t < k; t++)
          NUM_ACC_MAC(c, sum, in[0][(int64_t)i * k + t], in[1][(int64_t)t * n + j]);
        o[(int64_t)i * n + j] = EV_FN(ev_act_)(c, p->act, NUM_ACC_GET(c, sum));
      }
    break;
  }
  case TASO_OP_CONV2D:
    EV_FN(ev_conv2d_)(c, p, &in_types[0], in[0], &in_types[1], in[1], ot, o);
    break;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    EV_FN(ev_pool_)(c, node->kind == TASO_OP_POOL_MAX, p, &in_types[0], in[0], ot, o);
    break;
  case TASO_OP_CONCAT:
  case TASO_OP_SPLIT: {
    /* Blocks of `inner` elements: concat interleaves x and y blocks per
     * outer index; split is the same walk with the copy reversed. */
    bool is_concat = node->kind == TASO_OP_CONCAT;
    const taso_tensor_t *whole = is_concat ? ot : &in_types[0];
    const taso_tensor_t *part0 = is_concat ? &in_types[0] : &out_types[0];
    int a = p->axis;
    int64_t outer = EV_FN(ev_span_)(whole, 0, a),
            inner = EV_FN(ev_span_)(whole, a + 1, whole->rank);
    int64_t n0 = part0->dim[a] * inner, nw = whole->dim[a] * inner, n1 = nw - n0;
    NUM_T *dst0 = is_concat ? o : out[0], *dst1 = is_concat ? o + n0 : out[1];
    for (int64_t q = 0; q < outer; q++)
      for (int64_t i = 0; i < nw; i++) {
        if (is_concat)
          o[q * nw + i] = i < n0 ? in[0][q * n0 + i] : in[1][q * n1 + i - n0];
        else if (i < n0)
          dst0[q * n0 + i] = in[0][q * nw + i];
        else
          dst1[q * n1 + i - n0] = in[0][q * nw + i];
      }
    break;
  }
  case TASO_OP_ENLARGE: {
    const taso_tensor_t *wt = &in_types[0];
    int32_t h = wt->dim[2], w = wt->dim[3], KH = ot->dim[2], KW = ot->dim[3];
    int32_t dy = (KH - h) / 2, dx = (KW - w) / 2;
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_ZERO(c);
    for (int64_t oc = 0; oc < (int64_t)wt->dim[0] * wt->dim[1]; oc++)
      for (int32_t y = 0; y < h; y++)
        for (int32_t x = 0; x < w; x++)
          o[(oc * KH + y + dy) * KW + x + dx] = in[0][(oc * h + y) * w + x];
    break;
  }
  case TASO_OP_CONST_POOL: {
    NUM_T v = NUM_FRAC(c, 1, p->kernel[0] * p->kernel[1]);
    for (int64_t i = 0; i < size; i++)
      o[i] = v;
    break;
  }
  case TASO_OP_CONST_ICONV: {
    int32_t C = ot->dim[0], KH = ot->dim[2], KW = ot->dim[3];
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_ZERO(c);
    for (int32_t q = 0; q < C; q++)
      o[(((int64_t)q * C + q) * KH + KH / 2) * KW + KW / 2] = NUM_ONE(c);
    break;
  }
  case TASO_OP_CONST_IMM: {
    int32_t k = ot->dim[0];
    for (int64_t i = 0; i < size; i++)
      o[i] = (i / k == i % k) ? NUM_ONE(c) : NUM_ZERO(c);
    break;
  }
  case TASO_OP_CONST_ONE:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_ONE(c);
    break;
  case TASO_OP_ADD:
  case TASO_OP_MUL:
    EV_FN(ev_broadcast_)(c, node->kind == TASO_OP_ADD, in_types, in, ot, o);
    break;
  case TASO_OP_BATCHNORM: {
    int64_t C = in_types[0].dim[1], inner = EV_FN(ev_span_)(&in_types[0], 2, in_types[0].rank);
    for (int64_t i = 0; i < size; i++) {
      int64_t ch = (i / inner) % C;
      o[i] = NUM_ADD(c, NUM_MUL(c, in[0][i], in[1][ch]), in[2][ch]);
    }
    break;
  }
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD: {
    int64_t len = in_types[0].dim[p->axis];
    int64_t inner = EV_FN(ev_span_)(&in_types[0], p->axis + 1, in_types[0].rank);
    for (int64_t i = 0; i < size; i++) {
      NUM_T v = in[1][(i / inner) % len];
      o[i] = node->kind == TASO_OP_CHMUL ? NUM_MUL(c, in[0][i], v) : NUM_ADD(c, in[0][i], v);
    }
    break;
  }
  case TASO_OP_RESHAPE:
    for (int64_t i = 0; i < size; i++)
      o[i] = in[0][i];
    break;
  case TASO_OP_PERMUTE:
    EV_FN(ev_permute_)(p, &in_types[0], in[0], ot, o);
    break;
  case TASO_OP_BMM: {
    int32_t b = in_types[0].dim[0], m = in_types[0].dim[1], k = in_types[0].dim[2];
    int32_t n = in_types[1].dim[2];
    for (int32_t q = 0; q < b; q++)
      for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++) {
          NUM_ACC_T sum = NUM_ACC_ZERO(c);
          const NUM_T *x = in[0] + (int64_t)q * m * k, *y = in[1] + (int64_t)q * k * n;
          for (int32_t t = 0; t < k; t++)
            NUM_ACC_MAC(c, sum, x[(int64_t)i * k + t], y[(int64_t)t * n + j]);
          o[((int64_t)q * m + i) * n + j] = EV_FN(ev_act_)(c, p->act, NUM_ACC_GET(c, sum));
        }
    break;
  }
  case TASO_OP_SPLIT_AT: {
    int a = p->axis;
    const taso_tensor_t *whole = &in_types[0];
    int64_t outer = EV_FN(ev_span_)(whole, 0, a),
            inner = EV_FN(ev_span_)(whole, a + 1, whole->rank);
    int64_t n0 = (int64_t)p->at * inner, nw = whole->dim[a] * inner, n1 = nw - n0;
    for (int64_t q = 0; q < outer; q++) {
      memcpy(out[0] + q * n0, in[0] + q * nw, sizeof(NUM_T) * (size_t)n0);
      memcpy(out[1] + q * n1, in[0] + q * nw + n0, sizeof(NUM_T) * (size_t)n1);
    }
    break;
  }
#ifdef NUM_EXP
  case TASO_OP_SIGMOID:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_DIV(c, NUM_ONE(c), NUM_ADD(c, NUM_ONE(c), NUM_EXP(c, -in[0][i])));
    break;
  case TASO_OP_TANH:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_TANH(c, in[0][i]);
    break;
  case TASO_OP_CLIP:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_CLIP(c, in[0][i], p->bound[0], p->bound[1]);
    break;
#ifdef NUM_ERF
  case TASO_OP_ERF:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_ERF(c, in[0][i]);
    break;
  case TASO_OP_RSQRT:
    for (int64_t i = 0; i < size; i++)
      o[i] = NUM_RSQRT(c, in[0][i]);
    break;
#endif
  case TASO_OP_SOFTMAX: {
    /* max-shifted, so that large logits do not overflow */
    int a = p->axis;
    int64_t outer = EV_FN(ev_span_)(ot, 0, a), len = ot->dim[a];
    int64_t inner = EV_FN(ev_span_)(ot, a + 1, ot->rank);
    for (int64_t q = 0; q < outer; q++)
      for (int64_t r = 0; r < inner; r++) {
        const NUM_T *x = in[0] + q * len * inner + r;
        NUM_T *y = o + q * len * inner + r, top = x[0], sum = NUM_ZERO(c);
        for (int64_t j = 1; j < len; j++)
          top = NUM_MAX(c, top, x[j * inner]);
        for (int64_t j = 0; j < len; j++) {
          y[j * inner] = NUM_EXP(c, NUM_ADD(c, x[j * inner], -top));
          sum = NUM_ADD(c, sum, y[j * inner]);
        }
        for (int64_t j = 0; j < len; j++)
          y[j * inner] = NUM_DIV(c, y[j * inner], sum);
      }
    break;
  }
#endif
  default:
    return taso_error(TASO_ERR_UNKNOWN, "no evaluation of %s for this number type",
                      node->kind > TASO_OP_INPUT && node->kind < TASO_OP_COUNT
                          ? taso_ops[node->kind].name
                          : "an unknown operator");
  }
  return TASO_OK;
}

taso_err_t EV_FN(taso_eval_graph_)(NUM_CTX_T c, const taso_graph_t *g, const taso_tensor_t *types,
                                   NUM_T *const *inputs, NUM_T **values) {
  for (int i = 0; i < 2 * g->nnodes; i++)
    values[i] = NULL;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    int outputs = n->kind == TASO_OP_INPUT ? 1 : taso_ops[n->kind].outputs;
    for (int port = 0; port < outputs; port++) {
      int64_t size = taso_tensor_size(&types[2 * i + port]);
      values[2 * i + port] = malloc(sizeof(NUM_T) * (size_t)(size ? size : 1));
      if (!values[2 * i + port])
        return taso_error(TASO_ERR_NOMEM, "tensor of %lld elements", (long long)size);
    }
    if (n->kind == TASO_OP_INPUT) {
      memcpy(values[2 * i], inputs[n->p.input], sizeof(NUM_T) * taso_tensor_size(&types[2 * i]));
      continue;
    }
    const NUM_T *args[3];
    taso_tensor_t arg_types[3];
    for (int a = 0; a < taso_ops[n->kind].arity; a++) {
      args[a] = values[n->in[a]];
      arg_types[a] = types[n->in[a]];
    }
    TASO_TRY(EV_FN(taso_eval_node_)(c, n, arg_types, args, &types[2 * i], &values[2 * i]));
  }
  return TASO_OK;
}

#undef EV_FN
#undef EV_CAT
#undef EV_CAT2
#undef NUM_ACC_T
#undef NUM_ACC_ZERO
#undef NUM_ACC_MAC
#undef NUM_ACC_GET
