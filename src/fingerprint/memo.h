/*
 * The tensor memo: every distinct tensor expression an enumeration meets,
 * evaluated once on the fingerprint inputs.
 *
 * Millions of graphs share far fewer tensors: a graph's outputs are
 * expressions (an operator applied to input tensors or other expressions),
 * and a graph's fingerprint is the sorted multiset of its outputs' tensor
 * fingerprints. So each expression is interned once, evaluated once in
 * GF(2^61 - 1) on input set 0, and hashed with its type by two independent
 * 64-bit hashes into a 128-bit tensor fingerprint. (A pairing of two
 * different polynomials needs a root of their difference at random points,
 * probability below 2^-50; every pairing is re-checked exactly on another
 * input set anyway.) Values are kept for good only for expressions of few
 * operators (fewer than keep_below), which many larger graphs consume; the
 * values of a larger expression live only while the caller's walk holds it
 * (applied with `hold`, until taso_memo_release): a walk consumes such an
 * expression only below the state that placed it, and keeping the values
 * of every expression of 3 operators took most of a level-by-level run's
 * memory. Most expressions then cost their key, fingerprints and hashes.
 *
 * A tensor id is 2 * expression + port; expression i < ninputs is input i.
 * Each expression also has a structural hash that does not depend on the
 * order in which this process met it, so ranks can compare expressions.
 */
#ifndef TASO_MEMO_H
#define TASO_MEMO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fingerprint.h"

typedef struct taso_memo taso_memo_t;

/* keep_below: expressions with fewer operators than this keep their values. */
taso_err_t taso_memo_create(const taso_fp_inputs_t *r, const taso_inputs_t *in, int keep_below,
                            taso_memo_t **out);
void taso_memo_free(taso_memo_t *m);

/* Interns `variant` (an id of the caller's, with its kind and parameters in
 * node) applied to input tensors in_tids (in_types their types), evaluating
 * it when new. cone is its number of operators. hold: the caller will apply
 * operators to it, so its values must exist until taso_memo_release(expr)
 * (evaluated again if they were dropped; holds nest, last in first out).
 * *expr receives its id. */
taso_err_t taso_memo_apply(taso_memo_t *m, int32_t variant, const taso_node_t *node,
                           const int32_t *in_tids, const taso_tensor_t *in_types,
                           const taso_tensor_t *out_types, int cone, bool hold, int32_t *expr);
/* Ends the hold of the expression held last (values of a kept one stay). */
void taso_memo_release(taso_memo_t *m, int32_t expr);

/* Evaluates `variant` on in_tids like taso_memo_apply, without interning it:
 * fps[port] receives its outputs' fingerprints (for an expression the caller
 * knows to occur once, so that no memo entry is worth its memory). */
taso_err_t taso_memo_eval(taso_memo_t *m, const taso_node_t *node, const int32_t *in_tids,
                          const taso_tensor_t *in_types, const taso_tensor_t *out_types,
                          taso_fingerprint_t *fps);

int64_t taso_memo_count(const taso_memo_t *m); /* expressions, inputs included */
int taso_memo_ports(const taso_memo_t *m, int32_t expr);
/* Expression expr's variant and its input tensor ids (in_tids[3], -1 past
 * the arity); -1 for input i, whose in_tids[0] is then i. */
int32_t taso_memo_expr(const taso_memo_t *m, int32_t expr, int32_t *in_tids);
taso_fingerprint_t taso_memo_fp(const taso_memo_t *m, int32_t tid);
uint64_t taso_memo_shash(const taso_memo_t *m, int32_t tid);

/* Per-tensor marks for the caller, 0 to TASO_MEMO_MARKS - 1 (set after
 * exchanges of tensor classes). */
#define TASO_MEMO_MARKS 4
void taso_memo_mark(taso_memo_t *m, int32_t tid, int mark, bool on);
bool taso_memo_marked(const taso_memo_t *m, int32_t tid, int mark);

/* Writes the memo to f (none of its expressions held): its expressions,
 * fingerprints, hashes, marks and kept values. TASO_ERR_IO on a failed
 * write. */
taso_err_t taso_memo_save(const taso_memo_t *m, FILE *f);
/* Reads what taso_memo_save wrote into m, fresh from taso_memo_create
 * with the same inputs and fingerprint inputs, so that it continues as the
 * saved one would have: the same expression ids, values and marks.
 * TASO_ERR_FORMAT when f holds another memo or is cut short. */
taso_err_t taso_memo_load(taso_memo_t *m, FILE *f);

#endif
