/*
 * From enumerated graphs to candidate substitutions: the records graphs
 * travel in between ranks, and the pure steps after the exchange.
 *
 *   1. group records by graph fingerprint; in each class, pair every member
 *      with the class representative (the smallest graph): a candidate
 *      "member => representative";
 *   2. prune, each stage counted by the caller:
 *      - common subgraph: both sides share an operator on the same inputs,
 *        or (one output) both end in the same operator with all inputs but
 *        one equal; a smaller candidate then does the same work;
 *      - independent parts: the outputs split into groups that share no
 *        operator on either side (taso_cand_independent);
 *      - input renaming: candidates equal up to a consistent renaming of
 *        inputs, of these or other shapes, are one pattern (taso_cand_key
 *        with any_type), kept once;
 *      - implied: rewrites with kept candidates, as the optimizer applies
 *        them, turn one side into the other (derive.h);
 *   the caller re-checks the kept ones exactly (a fingerprint collision
 *   cannot pass).
 * Pure C: no MPI, no output.
 */
#ifndef TASO_CANDIDATES_H
#define TASO_CANDIDATES_H

#include <stdbool.h>
#include <stdint.h>

#include "enumerate.h"
#include "fingerprint.h"

/* An enumerated graph as it travels: fixed size, refs in the enumeration's
 * numbering (input i is TASO_REF(i, 0), operator j TASO_REF(ninputs + j, port)),
 * outputs sorted by tensor fingerprint so that paired graphs align. */
typedef struct {
  taso_fingerprint_t fp; /* the graph's fingerprint */
  int16_t nops, nout;
  int16_t variant[TASO_ENUM_MAX_OPS];
  int16_t in[TASO_ENUM_MAX_OPS][2];
  int16_t out[2 * TASO_ENUM_MAX_OPS];
} taso_grec_t;

/* Orders records by fingerprint, then contents. */
int taso_grec_cmp(const void *a, const void *b);

/* The canonical graph of a record. */
taso_err_t taso_grec_graph(const taso_grec_t *r, const taso_variant_t *variants, int ninputs,
                           taso_graph_t *g);

/* Operators of a canonical graph (nodes that are not inputs). */
int taso_graph_ops(const taso_graph_t *g);

/* Common-subgraph pruning: whether src and dst share an operator applied to
 * the same inputs, or (single outputs) end in the same operator with all
 * inputs but one equal and that one of the same type on both sides (types
 * from taso_graph_infer). */
bool taso_cand_common(const taso_graph_t *src, const taso_tensor_t *tsrc, const taso_graph_t *dst,
                      const taso_tensor_t *tdst);

/* Whether the outputs split into groups whose operators neither side shares
 * between groups: then the candidate is the parallel composition of smaller
 * ones (each a candidate or an identity), which it is implied by. */
bool taso_cand_independent(const taso_graph_t *src, const taso_graph_t *dst);

/* The canonical text "SRC => DST" of a candidate under input renaming: the
 * smallest text over every renaming of its inputs onto the first inputs of
 * the same type and kind (weight or not) in the table, with output pairs in
 * a canonical order. The larger side (more operators) is the source; on a
 * tie, both orientations are tried. With any_type, inputs rename onto the
 * first inputs of the table whatever their types: the key of the candidate
 * as a pattern over all shapes, equal for its instances at other shapes (a
 * grouping key; its names are labels, not a typed candidate). *key is
 * malloc'd. */
taso_err_t taso_cand_key(const taso_inputs_t *in, const taso_graph_t *src, const taso_graph_t *dst,
                         bool any_type, char **key);

/* A candidate with what derivations (derive.h) need. */
typedef struct {
  char *key;             /* canonical text "SRC => DST" */
  taso_graph_t src, dst; /* canonical graphs, outputs aligned */
  taso_tensor_t *tsrc, *tdst;
  int size;                        /* operators on both sides */
  int inputs;                      /* distinct inputs on both sides */
  uint8_t kinds[2][TASO_OP_COUNT]; /* operators per kind, per side */
} taso_cand_t;

/* Parses a canonical text (taking ownership of key). */
taso_err_t taso_cand_parse(const taso_inputs_t *in, char *key, taso_cand_t *c);
void taso_cand_free(taso_cand_t *c);

#endif
