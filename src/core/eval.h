/*
 * Graph evaluation for the built-in number types of src/core: double (numeric
 * checks on random floats) and exact rationals (the reference oracle on small
 * tensors). Other modules instantiate eval_impl.h for their own types (the
 * fingerprint field, symbolic terms).
 *
 * values receives 2 * nnodes buffers, values[2*node + port], each malloc'd
 * (NULL for ports an operator does not have); free them with taso_values_free.
 * inputs[i] holds the values of input-table entry i, row-major.
 */
#ifndef TASO_EVAL_H
#define TASO_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

typedef struct {
  int64_t num; /* numerator */
  int64_t den; /* denominator, > 0, coprime with num */
} taso_rat_t;

typedef struct {
  bool overflow; /* set when a result did not fit in 64 bits */
} taso_rat_ctx_t;

/* The greatest common divisor of |a| and |b| (0 when both are 0). */
__int128 taso_gcd128(__int128 a, __int128 b);

taso_rat_t taso_rat(int64_t num, int64_t den);
taso_rat_t taso_rat_add(taso_rat_ctx_t *c, taso_rat_t a, taso_rat_t b);
taso_rat_t taso_rat_mul(taso_rat_ctx_t *c, taso_rat_t a, taso_rat_t b);
int taso_rat_cmp(taso_rat_t a, taso_rat_t b);

taso_err_t taso_eval_graph_double(void *ctx, const taso_graph_t *g, const taso_tensor_t *types,
                                  double *const *inputs, double **values);
taso_err_t taso_eval_node_double(void *ctx, const taso_node_t *node, const taso_tensor_t *in_types,
                                 const double *const *in, const taso_tensor_t *out_types,
                                 double *const *out);

/* TASO_ERR_OVERFLOW if any intermediate value left 64-bit range. */
taso_err_t taso_eval_graph_rational(taso_rat_ctx_t *ctx, const taso_graph_t *g,
                                    const taso_tensor_t *types, taso_rat_t *const *inputs,
                                    taso_rat_t **values);

void taso_values_free(void **values, int n);

#endif
