/*
 * ONNX export: a model as an ONNX ModelProto (opset 13, IR version 8),
 * built with protobuf-c and written to PATH.tmp, then renamed into place so
 * that a reader never sees half a file.
 *
 * Unlike the original's exporter, every input and weight keeps its own name
 * (m->names), and a fused activation is written as its own Relu node, so
 * the file computes what the model computes. All protobuf structs live in
 * one arena freed after packing; weight values are referenced, not copied.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "onnx.h"

typedef struct {
  void **v;
  size_t n, cap;
} list_t;

typedef struct {
  const taso_model_t *m;
  list_t arena;    /* every allocation, freed at the end */
  list_t nodes;    /* Onnx__NodeProto * */
  list_t inits;    /* Onnx__TensorProto * */
  list_t inputs;   /* Onnx__ValueInfoProto *: run-time inputs */
  list_t outputs;  /* graph outputs */
  list_t infos;    /* intermediate tensors' types */
  list_t used;     /* every tensor name given out (char *) */
  char **ref_name; /* per tensor (2 * nnodes): its ONNX name */
  taso_err_t err;  /* first allocation failure */
} exporter_t;

static int push(list_t *l, void *p) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    void **v = realloc(l->v, sizeof *v * cap);
    if (!v) return 0;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = p;
  return 1;
}

/* Zeroed memory owned by the arena; NULL (and ex->err set) when out of it. */
static void *ex_alloc(exporter_t *ex, size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (!p || !push(&ex->arena, p)) {
    free(p);
    if (ex->err == TASO_OK) ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
    return NULL;
  }
  return p;
}

static char *ex_strdup(exporter_t *ex, const char *s) {
  char *d = ex_alloc(ex, strlen(s) + 1);
  if (d) strcpy(d, s);
  return d;
}

static int name_used(const exporter_t *ex, const char *name) {
  for (size_t i = 0; i < ex->used.n; i++)
    if (!strcmp(ex->used.v[i], name)) return 1;
  return 0;
}

/* A name no other tensor has: base, else base_2, base_3... */
static char *fresh_name(exporter_t *ex, const char *base) {
  char buf[TASO_MODEL_NAME_LEN + 16];
  snprintf(buf, sizeof buf, "%s", base);
  for (int k = 2; name_used(ex, buf); k++)
    snprintf(buf, sizeof buf, "%.*s_%d", TASO_MODEL_NAME_LEN, base, k);
  char *s = ex_strdup(ex, buf);
  if (s && !push(&ex->used, s) && ex->err == TASO_OK)
    ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
  return s;
}

/* ---- protobuf pieces ------------------------------------------------------------ */

static Onnx__ValueInfoProto *value_info(exporter_t *ex, const char *name, const taso_tensor_t *t) {
  Onnx__ValueInfoProto *vi = ex_alloc(ex, sizeof *vi);
  Onnx__TypeProto *tp = ex_alloc(ex, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = ex_alloc(ex, sizeof *tt);
  Onnx__TensorShapeProto *sp = ex_alloc(ex, sizeof *sp);
  Onnx__TensorShapeProto__Dimension **dims = ex_alloc(ex, sizeof *dims * TASO_MAX_RANK);
  if (!vi || !tp || !tt || !sp || !dims) return NULL;
  onnx__value_info_proto__init(vi);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sp);
  for (int i = 0; i < t->rank; i++) {
    if (!(dims[i] = ex_alloc(ex, sizeof *dims[i]))) return NULL;
    onnx__tensor_shape_proto__dimension__init(dims[i]);
    dims[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dims[i]->dim_value = t->dim[i];
  }
  sp->n_dim = (size_t)t->rank;
  sp->dim = dims;
  tt->has_elem_type = 1;
  tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tt->shape = sp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->name = (char *)name;
  vi->type = tp;
  return vi;
}

/* An initializer: float values (referenced) or int64 values (copied). */
static void initializer(exporter_t *ex, const char *name, int rank, const int64_t *dims,
                        const float *f, const int64_t *ints, int64_t n) {
  Onnx__TensorProto *t = ex_alloc(ex, sizeof *t);
  int64_t *d = ex_alloc(ex, sizeof *d * (size_t)(rank ? rank : 1));
  int64_t *iv = ints ? ex_alloc(ex, sizeof *iv * (size_t)(n ? n : 1)) : NULL;
  if (!t || !d || (ints && !iv)) return;
  onnx__tensor_proto__init(t);
  if (rank) memcpy(d, dims, sizeof *d * (size_t)rank);
  t->name = (char *)name;
  t->n_dims = (size_t)rank;
  t->dims = d;
  t->has_data_type = 1;
  if (ints) {
    memcpy(iv, ints, sizeof *iv * (size_t)n);
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_int64_data = (size_t)n;
    t->int64_data = iv;
  } else {
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_float_data = (size_t)n;
    t->float_data = (float *)f;
  }
  if (!push(&ex->inits, t) && ex->err == TASO_OK)
    ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
}

/* A new constant tensor named after base; returns its name. */
static char *const_floats(exporter_t *ex, const char *base, int rank, const int64_t *dims,
                          const float *v, int64_t n) {
  char *name = fresh_name(ex, base);
  float *copy = ex_alloc(ex, sizeof *copy * (size_t)(n ? n : 1));
  if (!name || !copy) return NULL;
  memcpy(copy, v, sizeof *copy * (size_t)n);
  initializer(ex, name, rank, dims, copy, NULL, n);
  return name;
}

static char *const_ints(exporter_t *ex, const char *base, const int64_t *v, int64_t n) {
  char *name = fresh_name(ex, base);
  if (name) initializer(ex, name, 1, &n, NULL, v, n);
  return name;
}

static Onnx__AttributeProto *attr(exporter_t *ex, Onnx__NodeProto *node, const char *name) {
  Onnx__AttributeProto *a = ex_alloc(ex, sizeof *a);
  if (!a) return NULL;
  onnx__attribute_proto__init(a);
  a->name = (char *)name;
  a->has_type = 1;
  node->attribute[node->n_attribute++] = a;
  return a;
}

static void attr_int(exporter_t *ex, Onnx__NodeProto *node, const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr(ex, node, name);
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = 1;
  a->i = v;
}

static void attr_ints(exporter_t *ex, Onnx__NodeProto *node, const char *name, const int64_t *v,
                      int n) {
  Onnx__AttributeProto *a = attr(ex, node, name);
  int64_t *copy = ex_alloc(ex, sizeof *copy * (size_t)(n ? n : 1));
  if (!a || !copy) return;
  memcpy(copy, v, sizeof *copy * (size_t)n);
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  a->n_ints = (size_t)n;
  a->ints = copy;
}

static void attr_float(exporter_t *ex, Onnx__NodeProto *node, const char *name, float v) {
  Onnx__AttributeProto *a = attr(ex, node, name);
  if (!a) return;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  a->has_f = 1;
  a->f = v;
}

/* A node op_type(in...) -> out...; room for 6 attributes. */
static Onnx__NodeProto *node(exporter_t *ex, const char *op_type, char **in, int nin, char **out,
                             int nout) {
  Onnx__NodeProto *n = ex_alloc(ex, sizeof *n);
  char **i = ex_alloc(ex, sizeof *i * (size_t)nin), **o = ex_alloc(ex, sizeof *o * (size_t)nout);
  Onnx__AttributeProto **a = ex_alloc(ex, sizeof *a * 6);
  char label[64];
  snprintf(label, sizeof label, "%s_%zu", op_type, ex->nodes.n);
  char *name = ex_strdup(ex, label);
  if (!n || !i || !o || !a || !name) return NULL;
  onnx__node_proto__init(n);
  memcpy(i, in, sizeof *i * (size_t)nin);
  memcpy(o, out, sizeof *o * (size_t)nout);
  n->op_type = (char *)op_type;
  n->name = name;
  n->n_input = (size_t)nin;
  n->input = i;
  n->n_output = (size_t)nout;
  n->output = o;
  n->attribute = a;
  if (!push(&ex->nodes, n) && ex->err == TASO_OK)
    ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
  return n;
}

/* A tensor between two nodes of one model operator (a Conv before its
 * fused Relu): a fresh name with its type recorded. */
static char *inner_tensor(exporter_t *ex, const char *base, const taso_tensor_t *t) {
  char *name = fresh_name(ex, base);
  Onnx__ValueInfoProto *vi = name ? value_info(ex, name, t) : NULL;
  if (vi && !push(&ex->infos, vi) && ex->err == TASO_OK)
    ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
  return name;
}

/* ---- operators ---------------------------------------------------------------------- */

/* The ONNX pads (top, left, bottom, right) of a window operator. */
static void window_pads(const taso_params_t *p, const taso_tensor_t *x, int32_t kh, int32_t kw,
                        int64_t *pads) {
  int32_t k[2] = {kh, kw};
  for (int a = 0; a < 2; a++) {
    int32_t before, i = x->dim[2 + a];
    int32_t o = taso_window_axis(p, a, i, k[a], &before);
    int32_t after =
        p->pad == TASO_PAD_EXPLICIT ? p->pads[a + 2] : (o - 1) * p->stride[a] + k[a] - i - before;
    pads[a] = before;
    pads[a + 2] = after > 0 ? after : 0; /* SAME that needs none */
  }
}

static void window_attrs(exporter_t *ex, Onnx__NodeProto *n, const taso_params_t *p,
                         const taso_tensor_t *x, int32_t kh, int32_t kw) {
  int64_t k[2] = {kh, kw}, s[2] = {p->stride[0], p->stride[1]}, pads[4];
  window_pads(p, x, kh, kw, pads);
  attr_ints(ex, n, "kernel_shape", k, 2);
  attr_ints(ex, n, "strides", s, 2);
  attr_ints(ex, n, "pads", pads, 4);
}

/* The node's main ONNX op writing to out, or to an inner tensor followed
 * by Relu when the activation is fused. */
static Onnx__NodeProto *with_act(exporter_t *ex, const char *op, char **in, int nin, char *out,
                                 int act, const taso_tensor_t *t) {
  if (act != TASO_ACT_RELU) return node(ex, op, in, nin, &out, 1);
  char base[TASO_MODEL_NAME_LEN + 8];
  snprintf(base, sizeof base, "%.*s_pre", TASO_MODEL_NAME_LEN - 8, out);
  char *mid = inner_tensor(ex, base, t);
  Onnx__NodeProto *n = mid ? node(ex, op, in, nin, &mid, 1) : NULL;
  if (mid) node(ex, "Relu", &mid, 1, &out, 1);
  return n;
}

/* Shape as int64 values. */
static void dims64(const taso_tensor_t *t, int64_t *d) {
  for (int i = 0; i < t->rank; i++)
    d[i] = t->dim[i];
}

/* A node computed from weights alone (the substitution language's
 * constants, enlarge of a weight): its values, as an initializer named as
 * its output. w is the weight operand's values or NULL. */
static void export_values(exporter_t *ex, const taso_node_t *nd, const taso_tensor_t *in_t,
                          const float *w, const taso_tensor_t *t, char *out) {
  int64_t size = taso_tensor_size(t), wsize = w ? taso_tensor_size(&in_t[0]) : 0, d[TASO_MAX_RANK];
  double *v = malloc(sizeof *v * (size_t)(size ? size : 1)),
         *wd = malloc(sizeof *wd * (size_t)(wsize ? wsize : 1));
  float *f = ex_alloc(ex, sizeof *f * (size_t)(size ? size : 1));
  if (!v || !wd || !f) {
    free(v);
    free(wd);
    if (ex->err == TASO_OK) ex->err = taso_error(TASO_ERR_NOMEM, "ONNX export");
    return;
  }
  for (int64_t i = 0; i < wsize; i++)
    wd[i] = w[i];
  const double *args[1] = {wd};
  taso_err_t err = taso_eval_node_double(NULL, nd, in_t, args, t, &v);
  for (int64_t i = 0; i < size; i++)
    f[i] = (float)v[i];
  free(v);
  free(wd);
  if (err != TASO_OK && ex->err == TASO_OK) ex->err = err;
  dims64(t, d);
  initializer(ex, out, t->rank, d, f, NULL, size);
}

static void export_split(exporter_t *ex, const taso_node_t *nd, int i, char **in) {
  const taso_tensor_t *t = ex->m->types;
  int64_t sizes[2] = {t[2 * i].dim[nd->p.axis], t[2 * i + 1].dim[nd->p.axis]};
  char *args[2] = {in[0], const_ints(ex, "split_sizes", sizes, 2)};
  Onnx__NodeProto *n = args[1] ? node(ex, "Split", args, 2, &ex->ref_name[2 * i], 2) : NULL;
  if (n) attr_int(ex, n, "axis", nd->p.axis);
}

static void export_batchnorm(exporter_t *ex, const taso_tensor_t *x, char **in, char *out) {
  /* mean 0, var 1, epsilon 0: BatchNormalization is then exactly
   * x * scale + bias, our batchnorm. */
  int64_t c = x->dim[1];
  float *zeros = ex_alloc(ex, sizeof(float) * (size_t)c),
        *ones = ex_alloc(ex, sizeof(float) * (size_t)c);
  if (!zeros || !ones) return;
  for (int64_t k = 0; k < c; k++)
    ones[k] = 1.0f;
  char *args[5] = {in[0], in[1], in[2], fresh_name(ex, "bn_mean"), fresh_name(ex, "bn_var")};
  if (!args[3] || !args[4]) return;
  initializer(ex, args[3], 1, &c, zeros, NULL, c);
  initializer(ex, args[4], 1, &c, ones, NULL, c);
  Onnx__NodeProto *n = node(ex, "BatchNormalization", args, 5, &out, 1);
  if (n) attr_float(ex, n, "epsilon", 0.0f);
}

/* The weight index of tensor ref when a weight holds it, else -1. */
static int weight_of(const exporter_t *ex, taso_ref_t ref) {
  const taso_node_t *src = &ex->m->graph.nodes[TASO_REF_NODE(ref)];
  return src->kind == TASO_OP_INPUT && ex->m->is_weight[src->p.input] ? src->p.input : -1;
}

/* chmul, chadd: Mul or Add by the vector shaped [len, 1, ...] so that ONNX
 * broadcasting lays it along axis a: a weight's values written so (an Add
 * after a Conv then reads back as the convolution's bias), anything else
 * through a Reshape. */
static void export_channel(exporter_t *ex, const taso_node_t *nd, const taso_tensor_t *x, char **in,
                           char *out) {
  int64_t shape[TASO_MAX_RANK];
  int rank = x->rank - nd->p.axis, w = weight_of(ex, nd->in[1]);
  for (int k = 0; k < rank; k++)
    shape[k] = k ? 1 : x->dim[nd->p.axis];
  char *vec = NULL;
  if (w >= 0) {
    vec = const_floats(ex, "channel_vector", rank, shape, ex->m->data[w], shape[0]);
  } else {
    char *args[2] = {in[1], const_ints(ex, "channel_shape", shape, rank)};
    vec = fresh_name(ex, "channel_vector");
    if (!vec || !args[1] || !node(ex, "Reshape", args, 2, &vec, 1)) return;
  }
  if (!vec) return;
  char *operands[2] = {in[0], vec};
  node(ex, nd->kind == TASO_OP_CHMUL ? "Mul" : "Add", operands, 2, &out, 1);
}

static void export_clip(exporter_t *ex, const taso_params_t *p, char **in, char *out) {
  char *args[3] = {in[0], const_floats(ex, "clip_min", 0, NULL, &p->bound[0], 1),
                   const_floats(ex, "clip_max", 0, NULL, &p->bound[1], 1)};
  if (args[1] && args[2]) node(ex, "Clip", args, 3, &out, 1);
}

static void export_enlarge(exporter_t *ex, const taso_tensor_t *w, const taso_tensor_t *t,
                           char **in, char *out) {
  int32_t dy = (t->dim[2] - w->dim[2]) / 2, dx = (t->dim[3] - w->dim[3]) / 2;
  int64_t pads[8] = {0, 0, dy, dx, 0, 0, t->dim[2] - w->dim[2] - dy, t->dim[3] - w->dim[3] - dx};
  char *args[2] = {in[0], const_ints(ex, "enlarge_pads", pads, 8)};
  if (args[1]) node(ex, "Pad", args, 2, &out, 1);
}

static void export_window(exporter_t *ex, const taso_node_t *nd, const taso_tensor_t *in_t,
                          char **in, char *out, const taso_tensor_t *t) {
  const taso_params_t *p = &nd->p;
  Onnx__NodeProto *n;
  if (nd->kind == TASO_OP_CONV2D) {
    const taso_tensor_t *w = &in_t[1];
    n = with_act(ex, "Conv", in, 2, out, p->act, t);
    if (!n) return;
    window_attrs(ex, n, p, &in_t[0], w->dim[2], w->dim[3]);
    attr_int(ex, n, "group", in_t[0].dim[1] / w->dim[1]);
    return;
  }
  n = node(ex, nd->kind == TASO_OP_POOL_MAX ? "MaxPool" : "AveragePool", in, 1, &out, 1);
  if (!n) return;
  window_attrs(ex, n, p, &in_t[0], p->kernel[0], p->kernel[1]);
  if (nd->kind == TASO_OP_POOL_AVG) attr_int(ex, n, "count_include_pad", !p->exclude_pad);
}

/* One model node as ONNX nodes; in holds its operands' names. */
static void export_node(exporter_t *ex, int i, char **in) {
  const taso_node_t *nd = &ex->m->graph.nodes[i];
  const taso_tensor_t *t = &ex->m->types[2 * i];
  taso_tensor_t in_t[3];
  for (int a = 0; a < taso_ops[nd->kind].arity; a++)
    in_t[a] = ex->m->types[nd->in[a]];
  char *out = ex->ref_name[2 * i];
  const taso_params_t *p = &nd->p;
  Onnx__NodeProto *n = NULL;
  int64_t d[TASO_MAX_RANK];
  switch ((taso_op_kind_t)nd->kind) {
  case TASO_OP_EWADD:
  case TASO_OP_ADD:
    node(ex, "Add", in, 2, &out, 1);
    break;
  case TASO_OP_EWMUL:
  case TASO_OP_MUL:
  case TASO_OP_SMUL:
    node(ex, "Mul", in, 2, &out, 1);
    break;
  case TASO_OP_RELU:
    node(ex, "Relu", in, 1, &out, 1);
    break;
  case TASO_OP_SIGMOID:
    node(ex, "Sigmoid", in, 1, &out, 1);
    break;
  case TASO_OP_TANH:
    node(ex, "Tanh", in, 1, &out, 1);
    break;
  case TASO_OP_ERF:
    node(ex, "Erf", in, 1, &out, 1);
    break;
  case TASO_OP_RSQRT: {
    float half = -0.5f;
    char *args[2] = {in[0], const_floats(ex, "minus_half", 0, NULL, &half, 1)};
    if (args[1]) node(ex, "Pow", args, 2, &out, 1);
    break;
  }
  case TASO_OP_MATMUL:
  case TASO_OP_BMM:
    with_act(ex, "MatMul", in, 2, out, p->act, t);
    break;
  case TASO_OP_CONV2D:
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    export_window(ex, nd, in_t, in, out, t);
    break;
  case TASO_OP_TRANSPOSE:
  case TASO_OP_PERMUTE:
    for (int k = 0; k < in_t[0].rank; k++)
      d[k] = nd->kind == TASO_OP_TRANSPOSE ? 1 - k : p->perm[k];
    if ((n = node(ex, "Transpose", in, 1, &out, 1))) attr_ints(ex, n, "perm", d, in_t[0].rank);
    break;
  case TASO_OP_CONCAT:
    if ((n = node(ex, "Concat", in, 2, &out, 1))) attr_int(ex, n, "axis", p->axis);
    break;
  case TASO_OP_SPLIT:
  case TASO_OP_SPLIT_AT:
    export_split(ex, nd, i, in);
    break;
  case TASO_OP_SOFTMAX:
    if ((n = node(ex, "Softmax", in, 1, &out, 1))) attr_int(ex, n, "axis", p->axis);
    break;
  case TASO_OP_RESHAPE: {
    dims64(t, d);
    char *args[2] = {in[0], const_ints(ex, "shape", d, t->rank)};
    if (args[1]) node(ex, "Reshape", args, 2, &out, 1);
    break;
  }
  case TASO_OP_CLIP:
    export_clip(ex, p, in, out);
    break;
  case TASO_OP_BATCHNORM:
    export_batchnorm(ex, &in_t[0], in, out);
    break;
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
    export_channel(ex, nd, &in_t[0], in, out);
    break;
  case TASO_OP_ENLARGE: {
    /* Of a weight (as substitutions make it): the enlarged weight itself,
     * which import reads back; of anything else a Pad, which it does not. */
    int w = weight_of(ex, nd->in[0]);
    if (w >= 0)
      export_values(ex, nd, in_t, ex->m->data[w], t, out);
    else
      export_enlarge(ex, &in_t[0], t, in, out);
    break;
  }
  case TASO_OP_CONST_POOL:
  case TASO_OP_CONST_ICONV:
  case TASO_OP_CONST_IMM:
  case TASO_OP_CONST_ONE:
    export_values(ex, nd, in_t, NULL, t, out);
    break;
  case TASO_OP_INPUT:
  case TASO_OP_COUNT:
    break;
  }
}

/* ---- names, graph, file ----------------------------------------------------------------- */

/* Names every tensor: inputs their own, graph outputs theirs (the first
 * output of a tensor), the rest "t<node>". Returns the outputs that need an
 * Identity (an input, or a tensor already named). */
static void name_tensors(exporter_t *ex, char *needs_identity) {
  const taso_model_t *m = ex->m;
  for (int i = 0; i < m->inputs.n; i++)
    push(&ex->used, (void *)m->names[i]);
  for (int o = 0; o < m->graph.noutputs; o++)
    push(&ex->used, (void *)m->output_names[o]);
  for (int i = 0; i < m->graph.nnodes; i++)
    if (m->graph.nodes[i].kind == TASO_OP_INPUT)
      ex->ref_name[2 * i] = (char *)m->names[m->graph.nodes[i].p.input];
  for (int o = 0; o < m->graph.noutputs; o++) {
    taso_ref_t r = m->graph.outputs[o];
    needs_identity[o] = ex->ref_name[r] != NULL;
    if (!ex->ref_name[r]) ex->ref_name[r] = (char *)m->output_names[o];
  }
  for (int i = 0; i < m->graph.nnodes; i++) {
    int outs =
        m->graph.nodes[i].kind == TASO_OP_INPUT ? 1 : taso_ops[m->graph.nodes[i].kind].outputs;
    for (int port = 0; port < outs; port++) {
      if (ex->ref_name[2 * i + port]) continue;
      char base[32];
      snprintf(base, sizeof base, port ? "t%d_1" : "t%d", i);
      ex->ref_name[2 * i + port] = fresh_name(ex, base);
      Onnx__ValueInfoProto *vi =
          value_info(ex, ex->ref_name[2 * i + port], &m->types[2 * i + port]);
      if (vi) push(&ex->infos, vi);
    }
  }
}

static void export_inputs(exporter_t *ex) {
  const taso_model_t *m = ex->m;
  for (int i = 0; i < m->inputs.n; i++) {
    const taso_tensor_t *t = &m->inputs.v[i].type;
    if (m->is_weight[i]) {
      int64_t d[TASO_MAX_RANK];
      dims64(t, d);
      initializer(ex, m->names[i], t->rank, d, m->data[i], NULL, taso_tensor_size(t));
    } else {
      Onnx__ValueInfoProto *vi = value_info(ex, m->names[i], t);
      if (vi) push(&ex->inputs, vi);
    }
  }
}

static void export_outputs(exporter_t *ex, const char *needs_identity) {
  const taso_model_t *m = ex->m;
  for (int o = 0; o < m->graph.noutputs; o++) {
    taso_ref_t r = m->graph.outputs[o];
    char *out = (char *)m->output_names[o];
    if (needs_identity[o]) node(ex, "Identity", &ex->ref_name[r], 1, &out, 1);
    Onnx__ValueInfoProto *vi = value_info(ex, out, &m->types[r]);
    if (vi) push(&ex->outputs, vi);
  }
}

static taso_err_t write_file(const char *path, const Onnx__ModelProto *mp) {
  size_t n = onnx__model_proto__get_packed_size(mp);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return taso_error(TASO_ERR_NOMEM, "%s: %zu bytes", path, n);
  onnx__model_proto__pack(mp, buf);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  taso_err_t err = TASO_OK;
  if (!f)
    err = taso_error(TASO_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
  else if (fwrite(buf, 1, n, f) != n || fflush(f) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
  if (f && fclose(f) != 0 && err == TASO_OK)
    err = taso_error(TASO_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  if (err != TASO_OK) remove(tmp);
  free(buf);
  return err;
}

static taso_err_t build_and_write(exporter_t *ex, const char *path) {
  const taso_model_t *m = ex->m;
  char *identity = ex_alloc(ex, (size_t)m->graph.noutputs + 1);
  ex->ref_name = ex_alloc(ex, sizeof *ex->ref_name * (size_t)(2 * m->graph.nnodes + 1));
  if (!identity || !ex->ref_name) return ex->err;
  name_tensors(ex, identity);
  export_inputs(ex);
  for (int i = 0; i < m->graph.nnodes && ex->err == TASO_OK; i++) {
    const taso_node_t *nd = &m->graph.nodes[i];
    if (nd->kind == TASO_OP_INPUT) continue;
    char *in[3] = {NULL, NULL, NULL};
    for (int a = 0; a < taso_ops[nd->kind].arity; a++)
      in[a] = ex->ref_name[nd->in[a]];
    export_node(ex, i, in);
  }
  export_outputs(ex, identity);
  if (ex->err != TASO_OK) return ex->err;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets[] = {&opset};
  opset.domain = "";
  opset.has_version = 1;
  opset.version = 13;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  g.name = (char *)m->name;
  g.n_node = ex->nodes.n, g.node = (Onnx__NodeProto **)ex->nodes.v;
  g.n_initializer = ex->inits.n, g.initializer = (Onnx__TensorProto **)ex->inits.v;
  g.n_input = ex->inputs.n, g.input = (Onnx__ValueInfoProto **)ex->inputs.v;
  g.n_output = ex->outputs.n, g.output = (Onnx__ValueInfoProto **)ex->outputs.v;
  g.n_value_info = ex->infos.n, g.value_info = (Onnx__ValueInfoProto **)ex->infos.v;
  Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
  mp.has_ir_version = 1;
  mp.ir_version = 8;
  mp.producer_name = "taso";
  mp.n_opset_import = 1;
  mp.opset_import = opsets;
  mp.graph = &g;
  return write_file(path, &mp);
}

taso_err_t taso_onnx_export(const taso_model_t *m, const char *path) {
  for (int i = 0; i < m->inputs.n; i++)
    if (m->is_weight[i] && !m->data[i]) {
      /* Seeded values are a function of the model's seed and each name, so
       * making them now does not change what the model is. */
      TASO_TRY(taso_model_make_weights((taso_model_t *)m));
      break;
    }
  exporter_t ex = {.m = m, .err = TASO_OK};
  taso_err_t err = build_and_write(&ex, path);
  for (size_t i = 0; i < ex.arena.n; i++)
    free(ex.arena.v[i]);
  free(ex.arena.v);
  free(ex.nodes.v);
  free(ex.inits.v);
  free(ex.inputs.v);
  free(ex.outputs.v);
  free(ex.infos.v);
  free(ex.used.v);
  if (err != TASO_OK) return taso_error_prefix(err, "%s: ", path);
  return TASO_OK;
}

taso_err_t taso_onnx_export_replace(const taso_model_t *m, const char *path) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return taso_error(TASO_ERR_ARG, "%s: path too long", path);
  taso_err_t err = taso_onnx_export(m, tmp);
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  if (err != TASO_OK) remove(tmp);
  return err;
}
