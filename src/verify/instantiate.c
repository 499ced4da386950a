/*
 * Instantiating a universal formula with fresh constants (see verifier.h,
 * taso_instantiate): the verifier's redundancy check and the countermodel
 * search both ground axioms this way. A file of its own so that the
 * verifier calls the countermodel search and both call down into it.
 */
#include "verifier.h"

#define MAX_BOUND TASO_MAX_BOUND

/* The body of a universal formula with a fresh constant per variable
 * (vars, if given, receives them, *nv of them); NULL past MAX_BOUND. */
Z3_ast taso_instantiate(Z3_context c, Z3_ast f, Z3_ast *vars, unsigned *nv) {
  if (nv) *nv = 0;
  if (Z3_get_ast_kind(c, f) != Z3_QUANTIFIER_AST || !Z3_is_quantifier_forall(c, f)) return f;
  unsigned nb = Z3_get_quantifier_num_bound(c, f);
  Z3_ast subst[MAX_BOUND];
  if (nb > MAX_BOUND) return NULL;
  for (unsigned b = 0; b < nb; b++) {
    Z3_func_decl d =
        Z3_mk_fresh_func_decl(c, Z3_get_symbol_string(c, Z3_get_quantifier_bound_name(c, f, b)), 0,
                              NULL, Z3_get_quantifier_bound_sort(c, f, b));
    subst[nb - 1 - b] = Z3_mk_app(c, d, 0, NULL); /* de Bruijn: 0 is the last bound */
    if (vars) vars[b] = subst[nb - 1 - b];
  }
  if (nv) *nv = nb;
  return Z3_substitute_vars(c, Z3_get_quantifier_body(c, f), nb, subst);
}
