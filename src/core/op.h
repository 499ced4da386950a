/*
 * The operator registry: the one place an operator is defined.
 *
 * Each entry gives the operator's text name, arity, outputs, which
 * parameters it takes, its shape rule and its split-tree rule
 * (semantics.md sections 1 and 2). The generator, the verifier's term
 * builder, the validator and the optimizer all read this table; the
 * reference evaluation of every operator lives in eval_impl.h, written once
 * over an abstract number type.
 */
#ifndef TASO_OP_H
#define TASO_OP_H

#include <stdint.h>

#include "tensor.h"

typedef enum {
  TASO_OP_INPUT, /* a graph input; params.input names it */
  TASO_OP_EWADD,
  TASO_OP_EWMUL,
  TASO_OP_SMUL,
  TASO_OP_RELU,
  TASO_OP_TRANSPOSE,
  TASO_OP_MATMUL,
  TASO_OP_CONV2D,
  TASO_OP_POOL_AVG,
  TASO_OP_POOL_MAX,
  TASO_OP_CONCAT,
  TASO_OP_SPLIT,
  TASO_OP_ENLARGE,
  TASO_OP_CONST_POOL,
  TASO_OP_CONST_ICONV,
  TASO_OP_CONST_IMM,
  TASO_OP_CONST_ONE,
  /* Model-only operators: real models need them, substitutions never
   * mention them (no axioms, not enumerated, not fingerprinted). Only the
   * double evaluation and the runtime backends compute them. */
  TASO_OP_ADD, /* element-wise add with ONNX (trailing) broadcasting */
  TASO_OP_MUL, /* element-wise multiply with ONNX broadcasting */
  TASO_OP_SIGMOID,
  TASO_OP_TANH,
  TASO_OP_CLIP,      /* min(max(x, bound[0]), bound[1]); ReLU6 is clip(0, 6) */
  TASO_OP_SOFTMAX,   /* along axis */
  TASO_OP_BATCHNORM, /* inference form: x * scale[c] + bias[c] on axis 1 */
  TASO_OP_RESHAPE,   /* to shape, same element count, row-major order kept */
  TASO_OP_PERMUTE,   /* output axis i is input axis perm[i] */
  TASO_OP_BMM,       /* batched matmul [b,m,k] x [b,k,n] */
  TASO_OP_SPLIT_AT,  /* split at a given size on axis, without a split tree */
  /* Substitution language again: per-channel affine maps (batch
   * normalization is chmul then chadd on axis 1). Appended after the
   * model-only kinds so that every kind keeps the number model and
   * substitution files store. */
  TASO_OP_CHMUL, /* x * v[i] on axis a: v has one value per slice i of that axis */
  TASO_OP_CHADD, /* x + v[i] on axis a */
  /* Model-only again (issue 33, what real exports hold), appended so that
   * stored kind numbers stay: */
  TASO_OP_ERF,   /* the error function, element-wise (GELU is x (1 + erf(x / sqrt 2)) / 2) */
  TASO_OP_RSQRT, /* 1 / sqrt(x), element-wise (layer normalization's scale) */
  TASO_OP_COUNT
} taso_op_kind_t;

/* The substitution language: the kinds below TASO_OP_SUBST_END and
 * TASO_OP_CHMUL, TASO_OP_CHADD; the kinds between and after are model-only. */
#define TASO_OP_SUBST_END TASO_OP_ADD
#define taso_op_is_model_only(k)                                                                   \
  (((k) >= TASO_OP_SUBST_END && (k) < TASO_OP_CHMUL) || (k) > TASO_OP_CHADD)
#define taso_op_in_subst(k)                                                                        \
  ((k) > TASO_OP_INPUT && (k) < TASO_OP_COUNT && !taso_op_is_model_only(k))

/* EXPLICIT (model graphs only): pads[] gives the padding of each side. */
enum { TASO_PAD_SAME = 0, TASO_PAD_VALID = 1, TASO_PAD_EXPLICIT = 2 };
enum { TASO_ACT_NONE = 0, TASO_ACT_RELU = 1 };
enum { TASO_LAYOUT_MATERIALIZED = 0, TASO_LAYOUT_VIEW = 1 };

/* Which parameters an operator takes (taso_op_info_t.params). */
enum {
  TASO_P_AXIS = 1 << 0,       /* concat, split, chmul, chadd: the axis */
  TASO_P_STRIDE = 1 << 1,     /* conv2d, pools: (sh, sw), default 1x1 */
  TASO_P_PAD = 1 << 2,        /* conv2d, pools: SAME (default) or VALID */
  TASO_P_ACT = 1 << 3,        /* conv2d, matmul: fused NONE (default) or RELU */
  TASO_P_KERNEL = 1 << 4,     /* pools, enlarge: (kh, kw) */
  TASO_P_LAYOUT = 1 << 5,     /* transpose: materialized (default) or view */
  TASO_P_SHAPE = 1 << 6,      /* constants: the full shape */
  TASO_P_INPUT = 1 << 7,      /* inputs: index into the input table */
  TASO_P_PERM = 1 << 8,       /* permute: the permutation */
  TASO_P_BOUND = 1 << 9,      /* clip: the bounds */
  TASO_P_AT = 1 << 10,        /* split_at: the size of the first part */
  TASO_P_COUNT_PAD = 1 << 11, /* pool_avg in models: divisor excludes padding */
};

/* Operator parameters. Unused fields are 0 so that nodes compare field-wise. */
typedef struct {
  int32_t axis;      /* concat/split/chmul/chadd axis */
  int32_t stride[2]; /* (sh, sw) */
  int32_t pad;       /* TASO_PAD_* */
  int32_t act;       /* TASO_ACT_* */
  int32_t kernel[2]; /* (kh, kw) */
  int32_t layout;    /* TASO_LAYOUT_* */
  int32_t rank;      /* constants: rank of shape */
  int32_t shape[4];  /* constants: their shape */
  int32_t input;     /* inputs: index into the input table */
  /* Model graphs only; 0 in every substitution, so no pattern matches a
   * node that uses them. */
  int32_t pads[4];     /* pad == EXPLICIT: top, left, bottom, right */
  int32_t perm[4];     /* permute: output axis i reads input axis perm[i] */
  float bound[2];      /* clip: min and max */
  int32_t at;          /* split_at: size of the first part on axis */
  int32_t exclude_pad; /* pool_avg: 1 divides by the in-bounds count (ONNX's
                          count_include_pad = 0); 0 by the kernel size */
} taso_params_t;

typedef struct taso_op_info {
  const char *name; /* text-form name */
  int arity;        /* tensor inputs */
  int outputs;      /* tensor outputs: 1, or 2 for split */
  unsigned params;  /* TASO_P_* taken */
  /* Shape rule: checks the inputs and sets out[i].rank and .dim (trees empty). */
  taso_err_t (*shape)(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out);
  /* Split-tree rule: sets out[i].tree from the inputs' trees (shapes already set). */
  taso_err_t (*trees)(const taso_params_t *p, const taso_tensor_t *in, taso_tensor_t *out);
} taso_op_info_t;

extern const taso_op_info_t taso_ops[TASO_OP_COUNT];

/* Looks an operator up by text name; TASO_OP_COUNT if unknown. */
taso_op_kind_t taso_op_lookup(const char *name);

/* Default parameters: stride 1x1, SAME, NONE, materialized, all else 0. */
taso_params_t taso_params_default(void);

/* Shape rule then split-tree rule; errors name the operator. */
taso_err_t taso_op_infer(taso_op_kind_t kind, const taso_params_t *p, const taso_tensor_t *in,
                         taso_tensor_t *out);

/* Output size of a window of k with stride s on an axis of size i;
 * 0 when VALID and the window does not fit. Sets the padding before. */
int32_t taso_window_out(int32_t i, int32_t k, int32_t s, int32_t pad, int32_t *pad_before);

/* The same for spatial axis 0 (height) or 1 (width) of a window operator
 * with parameters p, explicit padding included. */
int32_t taso_window_axis(const taso_params_t *p, int axis, int32_t i, int32_t k,
                         int32_t *pad_before);

#endif
