/*
 * Fingerprints: graphs evaluated exactly in GF(2^61 - 1) on seeded random
 * inputs. Graphs whose fingerprints are equal are candidate substitutions.
 *
 * A tensor's fingerprint is 128 bits: two independent 64-bit hashes of its
 * type (shape and split trees) and its values on input set 0. A graph's
 * fingerprint combines its outputs' fingerprints in sorted order, so graphs
 * pair whatever order they list their outputs in, and sorting the outputs
 * by fingerprint aligns the outputs of paired graphs. Another input set (2)
 * is kept for the exact re-check of a pairing: full output values, not
 * hashes, from an independent evaluation. Input values depend only on
 * (seed, set, input index, element), so every rank draws the same inputs
 * without communicating.
 */
#ifndef TASO_FINGERPRINT_H
#define TASO_FINGERPRINT_H

#include <stdbool.h>

#include "field.h"
#include "graph.h"

/* The reference evaluator over the field (see src/core/eval.h for the
 * layout of values). */
taso_err_t taso_eval_graph_field(void *ctx, const taso_graph_t *g, const taso_tensor_t *types,
                                 taso_fp_t *const *inputs, taso_fp_t **values);
taso_err_t taso_eval_node_field(void *ctx, const taso_node_t *node, const taso_tensor_t *in_types,
                                const taso_fp_t *const *in, const taso_tensor_t *out_types,
                                taso_fp_t *const *out);

/* Frees the buffers of a values array. */
void taso_values_free_field(taso_fp_t **values, int n);

#define TASO_FP_SETS 3 /* set 0 makes the fingerprint, set 2 re-checks */

typedef struct {
  uint64_t h[2]; /* two independent hashes */
} taso_fingerprint_t;

/* The fingerprint of one tensor: its type and its values on set 0. */
taso_fingerprint_t taso_tensor_fingerprint(const taso_tensor_t *t, const taso_fp_t *v);

/* Total order on fingerprints. */
int taso_fingerprint_cmp(const taso_fingerprint_t *a, const taso_fingerprint_t *b);

/* A graph's fingerprint from its outputs' fingerprints, which it sorts in
 * place. *distinct is false when two outputs are equal. */
taso_fingerprint_t taso_fingerprint_combine(taso_fingerprint_t *outs, int n, bool *distinct);

typedef struct {
  int ninputs;                         /* entries of the input table */
  taso_fp_t *values[TASO_FP_SETS];     /* per set: all inputs' values, concatenated */
  int64_t *offset;                     /* offset[i]: start of input i in each set */
  taso_fp_model_t model[TASO_FP_SETS]; /* per set: relu and max coefficients */
} taso_fp_inputs_t;

/* Draws the random inputs of every set for an input table. */
taso_err_t taso_fp_inputs_init(taso_fp_inputs_t *r, const taso_inputs_t *in, uint64_t seed);
void taso_fp_inputs_free(taso_fp_inputs_t *r);

/* Fingerprint of a graph (types from taso_graph_infer); outfp, if not NULL,
 * receives each output's fingerprint in output order. */
taso_err_t taso_fingerprint_graph(const taso_fp_inputs_t *r, const taso_graph_t *g,
                                  const taso_tensor_t *types, taso_fingerprint_t *fp,
                                  taso_fingerprint_t *outfp);

/* Exact re-check: same output types and the same values on input set 2. */
taso_err_t taso_fingerprint_recheck(const taso_fp_inputs_t *r, const taso_graph_t *a,
                                    const taso_tensor_t *ta, const taso_graph_t *b,
                                    const taso_tensor_t *tb, bool *equal);

#endif
