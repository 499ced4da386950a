/*
 * Private to ONNX import: the importer's state and the helpers that the
 * operator handlers (onnx_import_ops.c) build models with. onnx_import.c
 * walks the graph; onnx_import_ops.c knows the operators;
 * onnx_import_fold.c computes constants; onnx_import_state.c holds the
 * state's helpers (the im_* functions below but the fold ones). Calls go
 * one way: import -> ops -> fold -> state.
 */
#ifndef TASO_ONNX_IMPORT_IMPL_H
#define TASO_ONNX_IMPORT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.h"
#include "onnx_internal.h"

enum { V_NONE, V_TENSOR, V_CONST, V_BAD };

/* What an ONNX tensor name stands for during import. */
typedef struct {
  const char *name;           /* the ONNX name (owned by the proto) */
  int kind;                   /* V_*: unknown yet, a model tensor, a constant, unimportable */
  taso_ref_t ref;             /* V_TENSOR: the model tensor */
  const Onnx__TensorProto *t; /* V_CONST: its value */
  taso_ref_t weight;          /* V_CONST: the weight made of it, or -1 */
  int lead;                   /* V_TENSOR: unit axes in front of ref's type (a rank-5 value of
                                 size 1 on its first axis, as a channel shuffle makes) */
  int32_t pad[4];             /* V_TENSOR: zero padding of axes 2 and 3 (top, left,
                                 bottom, right) that a Pad asked for and the convolution
                                 or average pool reading it takes into its window */
} value_t;

typedef struct {
  const char *path;           /* the file, for messages */
  const Onnx__ModelProto *mp; /* the model read */
  int64_t opset;              /* of the default domain */
  taso_model_t *m;            /* the model built */
  value_t *v;                 /* tensor names met so far */
  int nv;                     /* entries of v */
  int *slots;                 /* hash of names: index into v plus 1, 0 empty */
  int nslots;                 /* a power of two, over twice the names */
  taso_onnx_issues_t issues;  /* nodes that cannot be imported */
  Onnx__TensorProto **owned;  /* constants made here (Constant value_floats) */
  int nowned;                 /* entries of owned */
} importer_t;

/* Imports one node of a supported op type (onnx_import_ops.c). Returns
 * TASO_ERR_UNSUPPORTED with the reason when the node uses something taso
 * does not do. */
taso_err_t taso_onnx_import_op(importer_t *im, const Onnx__NodeProto *n);

/* The importer's state (onnx_import_state.c). */
value_t *im_find(importer_t *im, const char *name);
/* The entry of name, made (V_NONE) when new. */
taso_err_t im_define(importer_t *im, const char *name, value_t **out);
taso_err_t im_unsupported(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int im_has_input(const Onnx__NodeProto *n, size_t i);
int im_has_output(const Onnx__NodeProto *n, size_t i);
/* The node's name, else its first output's: for messages and weight names. */
const char *im_label(const Onnx__NodeProto *n);
/* Input i as a constant, or NULL when absent or computed. */
const Onnx__TensorProto *im_const(importer_t *im, const Onnx__NodeProto *n, size_t i);
/* Input i as a model tensor; a constant becomes a weight under its name. */
taso_err_t im_tensor(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref);
const taso_tensor_t *im_type(importer_t *im, taso_ref_t ref);
/* A new weight named name (made unique) with values (copied). */
taso_err_t im_weight(importer_t *im, const char *name, int rank, const int32_t *dim,
                     const float *values, taso_ref_t *ref);
/* A rank-0 weight "LABEL.what" holding value. */
taso_err_t im_scalar_weight(importer_t *im, const Onnx__NodeProto *n, const char *what, float value,
                            taso_ref_t *ref);
/* A model node; shapes the registry refuses become UNSUPPORTED. */
taso_err_t im_node(importer_t *im, taso_op_kind_t kind, const taso_params_t *p, taso_ref_t a,
                   taso_ref_t b, taso_ref_t c, taso_ref_t *out);
/* x reshaped (no node when the shape is already that). */
taso_err_t im_reshape(importer_t *im, taso_ref_t x, int rank, const int32_t *dim, taso_ref_t *out);
/* Output k of n: a tensor, an alias of input `input`, a constant. */
taso_err_t im_set(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref);
/* The same for values of rank 5 and more, whose first `lead` axes are 1 and
 * not in the model tensor's type (only Reshape, Transpose and Shape take
 * them; im_tensor refuses them). */
taso_err_t im_set_lead(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref,
                       int lead);
taso_err_t im_tensor_lead(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref,
                          int *lead);
/* The same for a value with pending zero padding (only windows take it). */
taso_err_t im_set_padded(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref,
                         const int32_t *pad);
taso_err_t im_tensor_padded(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref,
                            int32_t *pad);
taso_err_t im_alias(importer_t *im, const Onnx__NodeProto *n, size_t k, size_t input);
taso_err_t im_set_const(importer_t *im, const Onnx__NodeProto *n, size_t k,
                        const Onnx__TensorProto *t);
/* A constant's values: floats (malloc'd, *n elements) or at most max ints. */
taso_err_t im_const_floats(const Onnx__TensorProto *t, float **out, int64_t *n);
taso_err_t im_const_ints(const Onnx__TensorProto *t, int64_t *out, int max, int *n);
/* A constant as a graph output: a weight, an integer or boolean one with its
 * values as floats. */
taso_err_t im_const_output(importer_t *im, value_t *v, taso_ref_t *ref);
/* Constant folding (onnx_import_fold.c): whether n is an operator import
 * computes (all its inputs small constants, or Shape), and computing it. */
int taso_onnx_foldable(importer_t *im, const Onnx__NodeProto *n);
taso_err_t taso_onnx_fold(importer_t *im, const Onnx__NodeProto *n);
/* Slice's per-axis start, end (clamped) and step on a tensor of dims. */
taso_err_t im_slice_ranges(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                           int64_t *start, int64_t *end, int64_t *step);
/* The dims after Unsqueeze or Squeeze (axes from the input or attribute). */
taso_err_t im_unsqueeze_dims(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                             int *out_rank, int64_t *out);
taso_err_t im_squeeze_dims(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                           int *out_rank, int64_t *out);

/* axis in -rank..rank-1 made non-negative; 0 when out of range. */
int im_axis(int64_t axis, int rank, int *out);

#endif
