/*
 * Shape conditions: where a substitution, proved at one set of input
 * shapes, may be applied.
 *
 * A substitution is proved (taso-verify) at the shapes of the input table,
 * e.g. 2x4x5x5 images and 4x4x3x3 weights. Some proofs hold only under
 * relations between those shapes: the grouped convolution
 * concat(1, conv2d(i1, w10), conv2d(i2, w11)) => conv2d(concat(1, i1, i2),
 * concat(0, w10, w11)) needs equal output channels in w10 and w11; enlarge
 * to 3x3 is the identity only on a 3x3 kernel. The proof's shape facts are
 * the sizes of the axes of the subterms of both sides, and the axioms'
 * guards compare them with each other, with kernel and stride parameters
 * and with 1.
 *
 * A condition records the *shape relation* of the proved instance: every
 * axis of every tensor of both sides (and every kernel and stride
 * parameter) is an atom; atoms that an operator's semantics compares or
 * combines (the channels a conv2d groups, an axis a concat sums, a window
 * and its kernel) are linked into components; for every pair of atoms of a
 * component the condition records their order (<, =, >) and, in a
 * component holding convolution channels, whether each divides the other
 * (the group count c / w.dim1 and co % groups). A match holds the
 * condition when its bound shapes give every tensor the same rank and
 * every such pair the same order and divisibility: then every
 * shape-dependent branch of both sides (groups, window offsets, padding,
 * tree equality, which guarded axiom applies) goes the way it went in the
 * proof. Atoms of different components are never compared by any operator
 * or axiom guard, so their relation is free: that is what lets a rule
 * proved with batch 2 and 4 channels apply to batch 1 and 64 channels.
 */
#ifndef TASO_SHAPE_COND_H
#define TASO_SHAPE_COND_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

/* One recorded comparison between two atoms of a component. */
typedef struct {
  int32_t a, b;   /* atom indices */
  int8_t order;   /* sign(value[a] - value[b]) at the proved instance */
  int8_t divides; /* grouped components: bit 0 b divides a, bit 1 a divides b; else -1 */
} taso_shape_pair_t;

typedef struct {
  int natoms;              /* tensor axes of lhs, then rhs, then parameters */
  int32_t *value;          /* per atom: its size at the proved instance */
  int32_t *comp;           /* per atom: its component (the root atom) */
  int nslots;              /* tensor slots: 2 * nnodes of lhs, then of rhs */
  int32_t *slot_atom;      /* per slot: first atom, or -1 for no such port */
  int32_t *slot_rank;      /* per slot: rank at the proved instance */
  int nlhs_slots;          /* slots of lhs */
  int nparams;             /* parameter atoms (the last ones) */
  taso_shape_pair_t *pair; /* every compared pair */
  int npairs;
} taso_shape_cond_t;

/* The condition of lhs => rhs as proved at the shapes of in (both sides
 * must type-check there). Depends on the orientation only in which slots
 * come first: check it with the same lhs and rhs. Free with
 * taso_shape_cond_free. */
taso_err_t taso_shape_cond_of(const taso_graph_t *lhs, const taso_graph_t *rhs,
                              const taso_inputs_t *in, taso_shape_cond_t *cond);
void taso_shape_cond_free(taso_shape_cond_t *cond);

/* Whether both sides typed at other input shapes (lhs_types, rhs_types
 * from taso_graph_infer) stand in the proved relation. */
bool taso_shape_cond_holds(const taso_shape_cond_t *cond, const taso_tensor_t *lhs_types,
                           const taso_tensor_t *rhs_types);

/* The same from an input table with other shapes; false where either side
 * does not type-check there. */
taso_err_t taso_shape_cond_holds_at(const taso_shape_cond_t *cond, const taso_graph_t *lhs,
                                    const taso_graph_t *rhs, const taso_inputs_t *at, bool *holds);

/* The conditions on the inputs' axes, as text ("w10.0 = w11.0, i1.2 > k3"):
 * the pairs between input axes and parameters; derived tensors left out.
 * Returns the length needed, like snprintf. */
int taso_shape_cond_format(const taso_shape_cond_t *cond, const taso_graph_t *lhs,
                           const taso_graph_t *rhs, const taso_inputs_t *in, char *buf, int len);

#endif
