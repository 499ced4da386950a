/*
 * Canonical polynomials: an exact number type for the validator's
 * symbolic check, and an instantiation of the reference evaluator
 * (eval_impl.h) over it.
 *
 * A polynomial is a sorted list of terms (monomial, reduced rational
 * coefficient) over unknowns: the elements of the input tensors, and
 * opaque atoms relu(p) and max(p, q) whose arguments are themselves in
 * canonical form. Equal arguments give the same atom (max with its two
 * arguments in canonical order, since it is commutative), so two
 * expressions with equal canonical forms are equal for every value of the
 * unknowns: the check is exact. Forms that differ prove nothing when atoms
 * are present (relu and max satisfy identities the atoms do not know), so
 * those cases go to Z3; without atoms, different forms are different
 * polynomials and differ somewhere.
 *
 * Everything a context builds lives in its arena until taso_poly_reset.
 * A coefficient that leaves 64-bit range or a monomial above
 * TASO_POLY_DEGREE sets ctx->overflow: the forms are then meaningless and
 * the caller must decide another way. One context per thread.
 */
#ifndef TASO_POLY_H
#define TASO_POLY_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

#define TASO_POLY_DEGREE 4
#define TASO_POLY_NONE UINT32_MAX  /* an unused monomial slot */
#define TASO_POLY_ATOM0 (1u << 30) /* atom k is unknown TASO_POLY_ATOM0 + k */

typedef struct {
  uint32_t v[TASO_POLY_DEGREE]; /* unknowns, ascending, TASO_POLY_NONE-padded */
  int64_t num, den;             /* coefficient, den > 0, reduced, num != 0 */
} taso_term_t;

typedef struct {
  taso_term_t *t; /* terms in ascending monomial order */
  int32_t n;      /* 0 is the zero polynomial */
} taso_poly_t;

typedef enum { TASO_ATOM_RELU = 0, TASO_ATOM_MAX = 1 } taso_atom_kind_t;

typedef struct {
  int32_t kind;     /* taso_atom_kind_t */
  taso_poly_t a, b; /* arguments (b unused for relu) */
} taso_atom_t;

typedef struct taso_poly_ctx taso_poly_ctx_t;

taso_err_t taso_poly_ctx_new(taso_poly_ctx_t **out);
void taso_poly_ctx_free(taso_poly_ctx_t *c);
/* Forgets every polynomial and atom built so far; keeps the memory. */
void taso_poly_reset(taso_poly_ctx_t *c);
/* Whether a coefficient or degree overflowed since the last reset. */
bool taso_poly_overflowed(const taso_poly_ctx_t *c);

taso_poly_t taso_poly_var(taso_poly_ctx_t *c, uint32_t v);
taso_poly_t taso_poly_const(taso_poly_ctx_t *c, int64_t num, int64_t den);
taso_poly_t taso_poly_add(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b);
taso_poly_t taso_poly_mul(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b);
taso_poly_t taso_poly_relu(taso_poly_ctx_t *c, taso_poly_t a);
taso_poly_t taso_poly_max(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b);

bool taso_poly_equal(taso_poly_t a, taso_poly_t b);
/* Whether a mentions an atom. */
bool taso_poly_has_atom(taso_poly_t a);
/* Atom k of the context (k < taso_poly_natoms). */
int taso_poly_natoms(const taso_poly_ctx_t *c);
const taso_atom_t *taso_poly_atom(const taso_poly_ctx_t *c, int k);

/* Writes p as text, unknowns named by name(v) ("3/2*x0*y1 + relu#0");
 * returns what snprintf would. */
int taso_poly_format(taso_poly_t p, char *buf, int len);

/* The reference evaluator over polynomials (eval_impl.h). Check
 * taso_poly_overflowed afterwards. */
taso_err_t taso_eval_graph_poly(taso_poly_ctx_t *c, const taso_graph_t *g,
                                const taso_tensor_t *types, taso_poly_t *const *inputs,
                                taso_poly_t **values);

#endif
