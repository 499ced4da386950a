/*
 * Tensor types: rank, shape and one split tree per axis.
 *
 * Split trees make split the exact inverse of concat (semantics.md section 1).
 * A tree is stored by value as its preorder code so that types compare with
 * memcmp and hash without pointers: a leaf is 0, a node (s, l, r) is s > 0
 * followed by the codes of l and r. Unused code slots are always 0.
 *
 * A tree of more concats than the code holds is kept as its digest: code[0]
 * is minus its number of concats and code[1..4] a 128-bit hash of the
 * whole tree (sizes and shape), computed the same way from any tree's
 * parts, so two such trees compare equal exactly when they are (up to the
 * hash). Such a tree cannot be split (split says so): no graph of the
 * substitution language splits one, and models never did.
 */
#ifndef TASO_TENSOR_H
#define TASO_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"

#define TASO_MAX_RANK 4
#define TASO_TREE_CODE 15 /* preorder code slots: at most 7 concats per axis, then a digest */

typedef struct {
  int32_t code[TASO_TREE_CODE]; /* preorder code; code[0] == 0 is the empty tree */
} taso_tree_t;

typedef struct {
  int32_t rank;                    /* 0 (scalar) to 4 */
  int32_t dim[TASO_MAX_RANK];      /* sizes, >= 1; 0 past rank */
  taso_tree_t tree[TASO_MAX_RANK]; /* split tree per axis; empty past rank */
} taso_tensor_t;

/* A type with the given shape and empty trees; dims past rank are zeroed. */
taso_tensor_t taso_tensor_make(int rank, const int32_t *dim);

/* Number of elements (1 for a scalar). */
int64_t taso_tensor_size(const taso_tensor_t *t);

bool taso_tensor_equal(const taso_tensor_t *a, const taso_tensor_t *b);
bool taso_tree_equal(const taso_tree_t *a, const taso_tree_t *b);
bool taso_tree_empty(const taso_tree_t *t);

/* out = node (s, l, r), as a digest when the code would not hold it. */
void taso_tree_join(taso_tree_t *out, int32_t s, const taso_tree_t *l, const taso_tree_t *r);

/* Number of concats in the tree (0 for the empty tree). */
int taso_tree_splits(const taso_tree_t *t);

/* Whether the tree is kept as a digest (more concats than the code holds). */
bool taso_tree_digest(const taso_tree_t *t);

/* Splits a node into its size and subtrees; false for the empty tree and
 * for a digest. */
bool taso_tree_split(const taso_tree_t *t, int32_t *s, taso_tree_t *l, taso_tree_t *r);

/* Writes "2x4" style shapes and "(2,-,-)" style trees; returns chars written. */
int taso_shape_format(const taso_tensor_t *t, char *buf, int len);
int taso_tree_format(const taso_tree_t *t, char *buf, int len);

#endif
