/*
 * Fingerprints: graphs evaluated exactly in GF(2^61 - 1) on seeded random
 * inputs. Graphs whose fingerprints are equal are candidate substitutions.
 */
#ifndef TASO_FINGERPRINT_H
#define TASO_FINGERPRINT_H

#include "field.h"
#include "graph.h"

/* The reference evaluator over the field (see src/core/eval.h for the
 * layout of values). */
taso_err_t taso_eval_graph_field(void *ctx, const taso_graph_t *g, const taso_tensor_t *types,
                                 taso_fp_t *const *inputs, taso_fp_t **values);
taso_err_t taso_eval_node_field(void *ctx, const taso_node_t *node, const taso_tensor_t *in_types,
                                const taso_fp_t *const *in, const taso_tensor_t *out_types,
                                taso_fp_t *const *out);

#endif
