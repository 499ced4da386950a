/* The verifier: term building, proving, the numeric check (see verifier.h). */
#define _POSIX_C_SOURCE 200809L

#include "verifier.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval.h"
#include "z3ctx.h"

/* Relative tolerance of the numeric check: the two sides sum the same
 * products in different orders, which moves doubles by ~1e-15. */
#define NUMERIC_TOL 1e-7
#define MAX_BOUND TASO_MAX_BOUND /* variables of one lemma */

/* The type functions of decls.smt2 (README.md, "Shape facts"): for every
 * subterm t of a query's graphs, (dim a t) is the size of axis a,
 * (splits a t) the number of concats in the split tree of axis a, and
 * (rank t) the number of axes (0: a scalar). */
enum { TYPE_DIM = 0, TYPE_SPLITS = 1, TYPE_RANK = 2, TYPE_FNS = 3 };
static const char *const type_fn_names[TYPE_FNS] = {"dim", "splits", "rank"};

struct taso_prover {
  const taso_axioms_t *ax;
  Z3_context c;             /* owned */
  Z3_sort t;                /* the tensor sort */
  Z3_func_decl *fns;        /* ax->decls[i] in c */
  int fn[TASO_OP_COUNT][2]; /* index into fns per operator and output port; -1 none */
  int type_fn[TYPE_FNS];    /* index into fns of dim, splits, rank; -1 when not declared */
  Z3_ast *assume;           /* the enabled axioms and lemmas, parsed in c */
  Z3_ast_vector *vecs;      /* the parsed vectors that keep assume[i] alive */
  int nassume;
  taso_limits_t lim; /* of every query */
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------ */
/* Operators to functions                                                   */
/* ------------------------------------------------------------------------ */

/* The one place that says how an operator's parameters become the integer
 * arguments of its function in decls.smt2. A value outside what the axioms
 * speak of is refused with the operator's name, never mapped to a guess. */
static taso_err_t op_ints(const taso_node_t *n, int32_t *v, int *nv) {
  const taso_params_t *p = &n->p;
  const char *name = taso_ops[n->kind].name;
  int k = 0;
  bool window = false;
  switch ((taso_op_kind_t)n->kind) {
  case TASO_OP_EWADD:
  case TASO_OP_EWMUL:
  case TASO_OP_SMUL:
  case TASO_OP_RELU:
    break;
  case TASO_OP_TRANSPOSE:
    if (p->layout != TASO_LAYOUT_MATERIALIZED && p->layout != TASO_LAYOUT_VIEW)
      return taso_error(TASO_ERR_UNKNOWN, "%s: layout %d is not one the axioms know", name,
                        p->layout);
    v[k++] = p->layout;
    break;
  case TASO_OP_MATMUL:
    if (p->act != TASO_ACT_NONE && p->act != TASO_ACT_RELU)
      return taso_error(TASO_ERR_UNKNOWN, "%s: act %d is not one the axioms know", name, p->act);
    v[k++] = p->act;
    break;
  case TASO_OP_CONV2D:
    if (p->act != TASO_ACT_NONE && p->act != TASO_ACT_RELU)
      return taso_error(TASO_ERR_UNKNOWN, "%s: act %d is not one the axioms know", name, p->act);
    v[k++] = p->stride[0];
    v[k++] = p->stride[1];
    v[k++] = p->pad;
    v[k++] = p->act;
    window = true;
    break;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    v[k++] = p->kernel[0];
    v[k++] = p->kernel[1];
    v[k++] = p->stride[0];
    v[k++] = p->stride[1];
    v[k++] = p->pad;
    window = true;
    break;
  case TASO_OP_CONCAT:
  case TASO_OP_SPLIT:
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
    if (p->axis < 0 || p->axis >= TASO_MAX_RANK)
      return taso_error(TASO_ERR_UNKNOWN, "%s: axis %d is not one the axioms know", name, p->axis);
    v[k++] = p->axis;
    break;
  case TASO_OP_ENLARGE:
  case TASO_OP_CONST_POOL:
  case TASO_OP_CONST_ICONV:
    if (p->kernel[0] < 1 || p->kernel[1] < 1)
      return taso_error(TASO_ERR_UNKNOWN, "%s: kernel %dx%d is not one the axioms know", name,
                        p->kernel[0], p->kernel[1]);
    v[k++] = p->kernel[0];
    v[k++] = p->kernel[1];
    break;
  case TASO_OP_CONST_IMM:
    if (p->rank != 2 || p->shape[0] != p->shape[1] || p->shape[0] < 1)
      return taso_error(TASO_ERR_UNKNOWN, "%s: shape is not a square matrix", name);
    v[k++] = p->shape[0];
    break;
  case TASO_OP_CONST_ONE:
    if (p->rank < 0 || p->rank > TASO_MAX_RANK)
      return taso_error(TASO_ERR_UNKNOWN, "%s: rank %d is not one the axioms know", name, p->rank);
    v[k++] = p->rank;
    for (int i = 0; i < TASO_MAX_RANK; i++)
      v[k++] = i < p->rank ? p->shape[i] : 0;
    break;
  default:
    return taso_error(TASO_ERR_UNKNOWN, "operator kind %d has no function in the axioms", n->kind);
  }
  if (window) {
    if (p->stride[0] < 1 || p->stride[1] < 1)
      return taso_error(TASO_ERR_UNKNOWN, "%s: stride %dx%d is not one the axioms know", name,
                        p->stride[0], p->stride[1]);
    if (p->pad != TASO_PAD_SAME && p->pad != TASO_PAD_VALID)
      return taso_error(TASO_ERR_UNKNOWN, "%s: pad %d is not one the axioms know", name, p->pad);
    if (n->kind != TASO_OP_CONV2D && (p->kernel[0] < 1 || p->kernel[1] < 1))
      return taso_error(TASO_ERR_UNKNOWN, "%s: kernel %dx%d is not one the axioms know", name,
                        p->kernel[0], p->kernel[1]);
  }
  *nv = k;
  return TASO_OK;
}

/* The number of integer parameters op_ints gives each operator. */
static int op_nints(taso_op_kind_t kind) {
  switch (kind) {
  case TASO_OP_TRANSPOSE:
  case TASO_OP_MATMUL:
  case TASO_OP_CONCAT:
  case TASO_OP_SPLIT:
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
  case TASO_OP_CONST_IMM:
    return 1;
  case TASO_OP_CONV2D:
    return 4;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    return 5;
  case TASO_OP_ENLARGE:
  case TASO_OP_CONST_POOL:
  case TASO_OP_CONST_ICONV:
    return 2;
  case TASO_OP_CONST_ONE:
    return 1 + TASO_MAX_RANK;
  default:
    return 0;
  }
}

/* Finds each operator's function and checks its declared signature: the
 * integer parameters above, then one T per tensor operand. */
static taso_err_t bind_functions(taso_prover_t *p) {
  const taso_axioms_t *ax = p->ax;
  for (int k = 0; k < TASO_OP_COUNT; k++)
    p->fn[k][0] = p->fn[k][1] = -1;
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++) {
    if (!taso_op_in_subst(k)) continue;
    const taso_op_info_t *op = &taso_ops[k];
    for (int port = 0; port < op->outputs; port++) {
      char name[32];
      if (op->outputs > 1)
        snprintf(name, sizeof name, "%s%d", op->name, port);
      else
        snprintf(name, sizeof name, "%s", op->name);
      const taso_decl_t *d = taso_axioms_decl(ax, name);
      if (!d)
        return taso_error(TASO_ERR_FORMAT, "%s: no function '%s' for operator %s", ax->decls_path,
                          name, op->name);
      int ni = op_nints((taso_op_kind_t)k);
      bool ok = d->nargs == ni + op->arity;
      for (int a = 0; ok && a < d->nargs; a++)
        ok = d->arg_int[a] == (a < ni);
      if (!ok)
        return taso_error(TASO_ERR_FORMAT,
                          "%s: '%s' must take %d Int then %d T arguments (the parameters and "
                          "operands of %s)",
                          ax->decls_path, name, ni, op->arity, op->name);
      if (d->ret_int)
        return taso_error(TASO_ERR_FORMAT, "%s: '%s' must return T (a tensor)", ax->decls_path,
                          name);
      p->fn[k][port] = (int)(d - ax->decls);
    }
  }
  /* Type functions are optional: without them no shape facts are stated,
   * and axioms guarded by them cannot be loaded (they would not parse). */
  for (int k = 0; k < TYPE_FNS; k++) {
    const taso_decl_t *d = taso_axioms_decl(ax, type_fn_names[k]);
    p->type_fn[k] = -1;
    if (!d) continue;
    bool axis = k != TYPE_RANK; /* (dim a t), (splits a t); (rank t) */
    if (d->nargs != 1 + axis || (axis && !d->arg_int[0]) || d->arg_int[axis] || !d->ret_int)
      return taso_error(TASO_ERR_FORMAT, "%s: '%s' must be declared %s", ax->decls_path,
                        type_fn_names[k],
                        axis ? "(Int T) Int (an axis, a tensor)" : "(T) Int (a tensor)");
    p->type_fn[k] = (int)(d - ax->decls);
  }
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

/* Marks in seen[] the bound variables that occur in e. */
static void collect_vars(Z3_context c, Z3_ast e, bool *seen, unsigned nb) {
  Z3_ast_kind k = Z3_get_ast_kind(c, e);
  if (k == Z3_VAR_AST) {
    unsigned i = Z3_get_index_value(c, e);
    if (i < nb) seen[i] = true;
  } else if (k == Z3_APP_AST) {
    Z3_app a = Z3_to_app(c, e);
    unsigned n = Z3_get_app_num_args(c, a);
    for (unsigned i = 0; i < n; i++)
      collect_vars(c, Z3_get_app_arg(c, a, i), seen, nb);
  }
}

/* Whether side can serve as a pattern: an application whose free
 * variables are all nb bound ones, and not an arithmetic guard. */
static bool usable_pattern(Z3_context c, Z3_ast side, unsigned nb) {
  bool seen[MAX_BOUND] = {false};
  if (Z3_get_ast_kind(c, side) != Z3_APP_AST || nb > MAX_BOUND) return false;
  collect_vars(c, side, seen, nb);
  for (unsigned i = 0; i < nb; i++)
    if (!seen[i]) return false;
  return true;
}

/* The pattern policy: an equation "forall vars. [guard =>] L = R" without
 * patterns of its own fires only where a whole side, L or R, is in the
 * E-graph: rewriting in both directions, but never on a bare subterm (Z3's
 * own choice, the smallest term holding every variable, makes A30 fire on
 * every matmul and grow transposes without end). A side that lacks a
 * variable or is a variable is no pattern. Formulas of other shapes, and
 * those that give patterns, keep their own. Every quantifier is named
 * after its axiom, so that Z3's statistics and profiles
 * (smt.qi.profile) name the axioms that fire. */
static Z3_ast with_patterns(Z3_context c, Z3_ast f, const char *name) {
  if (Z3_get_ast_kind(c, f) != Z3_QUANTIFIER_AST || !Z3_is_quantifier_forall(c, f) ||
      Z3_get_quantifier_num_no_patterns(c, f) > 0)
    return f;
  unsigned nb = Z3_get_quantifier_num_bound(c, f);
  Z3_ast body = Z3_get_quantifier_body(c, f), eq = body;
  if (nb > MAX_BOUND) return f;
  Z3_pattern pats[MAX_BOUND];
  unsigned np = Z3_get_quantifier_num_patterns(c, f);
  if (np > MAX_BOUND) return f;
  for (unsigned i = 0; i < np; i++)
    pats[i] = Z3_get_quantifier_pattern_ast(c, f, i);
  if (np == 0 && Z3_get_ast_kind(c, eq) == Z3_APP_AST &&
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, eq))) == Z3_OP_IMPLIES)
    eq = Z3_get_app_arg(c, Z3_to_app(c, eq), 1);
  if (np == 0 && Z3_get_ast_kind(c, eq) == Z3_APP_AST &&
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, eq))) == Z3_OP_EQ) {
    for (unsigned side = 0; side < 2; side++) {
      Z3_ast e = Z3_get_app_arg(c, Z3_to_app(c, eq), side);
      if (usable_pattern(c, e, nb)) pats[np++] = Z3_mk_pattern(c, 1, &e);
    }
  }
  Z3_sort sorts[MAX_BOUND];
  Z3_symbol names[MAX_BOUND];
  for (unsigned i = 0; i < nb; i++) {
    sorts[i] = Z3_get_quantifier_bound_sort(c, f, i);
    names[i] = Z3_get_quantifier_bound_name(c, f, i);
  }
  return Z3_mk_quantifier_ex(c, true, Z3_get_quantifier_weight(c, f), Z3_mk_string_symbol(c, name),
                             Z3_mk_string_symbol(c, ""), np, pats, 0, NULL, nb, sorts, names, body);
}

/* Parses one block. Its formula lives only as long as the vector that
 * holds it (even in a context without user reference counting), so the
 * caller keeps *vec, with its reference, while it uses *out. */
static taso_err_t parse_formula(taso_prover_t *p, const taso_axiom_t *a, bool patterns,
                                Z3_ast_vector *vec, Z3_ast *out);
static taso_err_t parse_one(taso_prover_t *p, const taso_axiom_t *a, Z3_ast_vector *vec,
                            Z3_ast *out) {
  return parse_formula(p, a, true, vec, out);
}

/* patterns: with the pattern policy below; else Z3's own choice. */
static taso_err_t parse_formula(taso_prover_t *p, const taso_axiom_t *a, bool patterns,
                                Z3_ast_vector *vec, Z3_ast *out) {
  Z3_ast_vector v;
  TASO_TRY(taso_axioms_parse(p->ax, p->c, p->t, p->fns, a->file, a->text, 0, NULL, NULL, &v));
  Z3_ast_vector_inc_ref(p->c, v);
  unsigned n = Z3_ast_vector_size(p->c, v);
  if (n != 1) {
    Z3_ast_vector_dec_ref(p->c, v);
    return taso_error(TASO_ERR_PARSE, "%s:%d: %s holds %u assertions", a->file, a->line, a->name,
                      n);
  }
  *out = Z3_ast_vector_get(p->c, v, 0);
  if (patterns) *out = with_patterns(p->c, *out, a->name);
  *vec = v;
  return TASO_OK;
}

/* A prover with its context and functions, no assumptions yet. */
static taso_err_t prover_open(const taso_axioms_t *ax, const taso_limits_t *lim,
                              taso_prover_t **out) {
  taso_prover_t *p = calloc(1, sizeof *p);
  if (!p) return taso_error(TASO_ERR_NOMEM, "no memory for a prover");
  p->ax = ax;
  p->lim = *lim;
  taso_err_t err = taso_z3_open(taso_limits_timeout_ms(lim), &p->c);
  if (err == TASO_OK && !(p->fns = malloc(sizeof *p->fns * (size_t)(ax->ndecls ? ax->ndecls : 1))))
    err = taso_error(TASO_ERR_NOMEM, "no memory for a prover");
  if (err == TASO_OK) {
    taso_axioms_declare(ax, p->c, &p->t, p->fns);
    err = bind_functions(p);
  }
  if (err == TASO_OK && (!(p->assume = malloc(sizeof *p->assume * (size_t)(ax->n ? ax->n : 1))) ||
                         !(p->vecs = malloc(sizeof *p->vecs * (size_t)(ax->n ? ax->n : 1)))))
    err = taso_error(TASO_ERR_NOMEM, "no memory for a prover");
  if (err != TASO_OK) {
    taso_prover_free(p);
    return err;
  }
  *out = p;
  return TASO_OK;
}

taso_err_t taso_prover_new(const taso_axioms_t *ax, double timeout_s, taso_prover_t **out) {
  taso_limits_t lim = {.timeout_s = timeout_s};
  return taso_prover_new_limited(ax, &lim, out);
}

taso_err_t taso_prover_new_limited(const taso_axioms_t *ax, const taso_limits_t *lim,
                                   taso_prover_t **out) {
  taso_prover_t *p;
  *out = NULL;
  TASO_TRY(prover_open(ax, lim, &p));
  for (int i = 0; i < ax->n; i++) {
    if (!ax->v[i].enabled) continue;
    taso_err_t err = parse_one(p, &ax->v[i], &p->vecs[p->nassume], &p->assume[p->nassume]);
    if (err != TASO_OK) {
      taso_prover_free(p);
      return err;
    }
    p->nassume++;
  }
  *out = p;
  return TASO_OK;
}

void taso_prover_free(taso_prover_t *p) {
  if (!p) return;
  for (int i = 0; i < p->nassume; i++)
    Z3_ast_vector_dec_ref(p->c, p->vecs[i]);
  taso_z3_close(p->c);
  free(p->fns);
  free(p->assume);
  free(p->vecs);
  free(p);
}

Z3_context taso_prover_context(taso_prover_t *p) {
  return p->c;
}

/* A solver holding the assumptions, with the query timeout; NULL when
 * Z3 ran out of memory making it (taso_limits_check takes a NULL). */
static Z3_solver new_solver_mbqi(taso_prover_t *p, bool mbqi);
static Z3_solver new_solver(taso_prover_t *p) {
  return new_solver_mbqi(p, false);
}

static Z3_solver new_solver_mbqi(taso_prover_t *p, bool mbqi) {
  /* E-matching only (mbqi false): once the patterns find nothing new, Z3
   * answers unknown at once. Model-based instantiation would go on
   * building candidate models of uninterpreted tensors until the timeout
   * (and past it), and cannot find a proof E-matching misses on these
   * axioms. */
  Z3_solver s = taso_limited_solver(p->c, &p->lim, mbqi);
  for (int i = 0; s && i < p->nassume; i++)
    Z3_solver_assert(p->c, s, p->assume[i]);
  return s;
}

/* Checks a solver; on undef, why: the limit that ended it ("timeout",
 * "resource limit (rlimit)", "memory limit") or Z3's reason ("incomplete
 * quantifiers"). A query that runs out of memory is an error inside Z3;
 * it is taken here and becomes undef, so the next query starts clean. */
static Z3_lbool check(taso_prover_t *p, Z3_solver s, char *why, int len) {
  return taso_limits_check(p->c, s, &p->lim, why, len);
}

/* ------------------------------------------------------------------------ */
/* Terms                                                                    */
/* ------------------------------------------------------------------------ */

/* The term of every tensor of g: v[ref], 2 * nnodes entries (a node's
 * port 1 is NULL unless it has two outputs). */
static taso_err_t graph_terms(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *g,
                              Z3_ast *v) {
  taso_err_t err = TASO_OK;
  Z3_sort int_sort = Z3_mk_int_sort(p->c);
  for (int i = 0; i < g->nnodes && err == TASO_OK; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      if (n->p.input < 0 || n->p.input >= in->n) {
        err = taso_error(TASO_ERR_FORMAT, "input %d is not in the input table", n->p.input);
        break;
      }
      v[2 * i] = Z3_mk_const(p->c, Z3_mk_string_symbol(p->c, in->v[n->p.input].name), p->t);
      continue;
    }
    if (!taso_op_in_subst(n->kind)) {
      err = taso_error(TASO_ERR_UNKNOWN, "operator kind %d is not in the substitution language",
                       n->kind);
      break;
    }
    int32_t ints[TASO_DECL_MAX_ARGS];
    int ni = 0;
    if ((err = op_ints(n, ints, &ni)) != TASO_OK) break;
    Z3_ast args[TASO_DECL_MAX_ARGS + 3];
    for (int a = 0; a < ni; a++)
      args[a] = Z3_mk_int(p->c, ints[a], int_sort);
    const taso_op_info_t *op = &taso_ops[n->kind];
    for (int a = 0; a < op->arity; a++) {
      taso_ref_t r = n->in[a];
      if (r < 0 || TASO_REF_NODE(r) >= i || !v[r]) {
        err = taso_error(TASO_ERR_FORMAT, "%s: operand %d is not an earlier node", op->name, a);
        break;
      }
      args[ni + a] = v[r];
    }
    for (int port = 0; err == TASO_OK && port < op->outputs; port++)
      v[2 * i + port] =
          Z3_mk_app(p->c, p->fns[p->fn[n->kind][port]], (unsigned)(ni + op->arity), args);
  }
  for (int o = 0; o < g->noutputs && err == TASO_OK; o++) {
    taso_ref_t r = g->outputs[o];
    if (r < 0 || r >= 2 * g->nnodes || !v[r])
      err = taso_error(TASO_ERR_FORMAT, "output %d names no tensor", o);
  }
  char msg[256];
  if (err == TASO_OK && taso_z3_take_error(msg, sizeof msg))
    err = taso_error(TASO_ERR_LIB, "Z3: %s", msg);
  return err;
}

taso_err_t taso_prover_terms(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *g,
                             Z3_ast *terms) {
  Z3_ast *v = calloc((size_t)(2 * g->nnodes + 1), sizeof *v);
  if (!v) return taso_error(TASO_ERR_NOMEM, "no memory for terms");
  taso_err_t err = graph_terms(p, in, g, v);
  for (int o = 0; o < g->noutputs && err == TASO_OK; o++)
    terms[o] = v[g->outputs[o]];
  free(v);
  return err;
}

/* Appends fact unless facts has it: terms are shared, so the two graphs'
 * common inputs and subgraphs would state the same facts twice. */
static void add_fact(taso_prover_t *p, Z3_ast fact, Z3_ast *facts, int *n) {
  for (int k = 0; k < *n; k++)
    if (Z3_is_eq_ast(p->c, facts[k], fact)) return;
  facts[(*n)++] = fact;
}

/* The shape facts of g, appended to facts (*n of them so far; room for
 * 2 * TASO_MAX_RANK + 1 per tensor): (dim a t) for every axis of every
 * tensor t of g, (splits a t) for all TASO_MAX_RANK axes and (rank t),
 * whose terms are v. A constant without its full
 * shape among its arguments (const_pool, const_iconv: the channel count
 * is missing) stands for tensors of several shapes, so neither it nor any
 * term over it gets facts: they could contradict each other. A graph that
 * does not type-check gets none (the numeric check reports it). */
static taso_err_t shape_facts(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *g,
                              const Z3_ast *v, Z3_ast *facts, int *n) {
  if (p->type_fn[TYPE_DIM] < 0 && p->type_fn[TYPE_SPLITS] < 0 && p->type_fn[TYPE_RANK] < 0)
    return TASO_OK;
  size_t count = (size_t)(2 * g->nnodes + 1);
  taso_tensor_t *types = calloc(count, sizeof *types);
  bool *opaque = calloc(count, sizeof *opaque);
  if (!types || !opaque) {
    free(types);
    free(opaque);
    return taso_error(TASO_ERR_NOMEM, "no memory for shape facts");
  }
  if (taso_graph_infer(g, in, types) == TASO_OK) {
    Z3_sort int_sort = Z3_mk_int_sort(p->c);
    for (int i = 0; i < g->nnodes; i++) {
      const taso_node_t *nd = &g->nodes[i];
      bool op = nd->kind == TASO_OP_CONST_POOL || nd->kind == TASO_OP_CONST_ICONV;
      for (int a = 0; nd->kind != TASO_OP_INPUT && a < taso_ops[nd->kind].arity; a++)
        op = op || opaque[nd->in[a]];
      for (int port = 0; port < 2; port++) {
        int r = 2 * i + port;
        opaque[r] = op;
        if (op || !v[r]) continue;
        /* splits on every axis (0 past the rank, where trees are empty),
         * dim on the tensor's axes */
        for (int axis = 0; axis < TASO_MAX_RANK; axis++) {
          int32_t val[2] = {types[r].dim[axis], taso_tree_splits(&types[r].tree[axis])};
          for (int f = TYPE_DIM; f <= TYPE_SPLITS; f++) {
            if (p->type_fn[f] < 0 || (f == TYPE_DIM && axis >= types[r].rank)) continue;
            Z3_ast args[2] = {Z3_mk_int(p->c, axis, int_sort), v[r]};
            Z3_ast lhs = Z3_mk_app(p->c, p->fns[p->type_fn[f]], 2, args);
            add_fact(p, Z3_mk_eq(p->c, lhs, Z3_mk_int(p->c, val[f], int_sort)), facts, n);
          }
        }
        if (p->type_fn[TYPE_RANK] >= 0) {
          Z3_ast lhs = Z3_mk_app(p->c, p->fns[p->type_fn[TYPE_RANK]], 1, &v[r]);
          add_fact(p, Z3_mk_eq(p->c, lhs, Z3_mk_int(p->c, types[r].rank, int_sort)), facts, n);
        }
      }
    }
  }
  free(types);
  free(opaque);
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Numeric check                                                            */
/* ------------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Types and values of g on the inputs; values freed by the caller. */
static taso_err_t evaluate(const taso_inputs_t *in, const taso_graph_t *g, double *const *inputs,
                           taso_tensor_t **types, double ***values) {
  *types = calloc((size_t)(2 * g->nnodes + 1), sizeof **types);
  *values = calloc((size_t)(2 * g->nnodes + 1), sizeof **values);
  if (!*types || !*values) return taso_error(TASO_ERR_NOMEM, "no memory to evaluate a graph");
  TASO_TRY(taso_graph_infer(g, in, *types));
  return taso_eval_graph_double(NULL, g, *types, inputs, *values);
}

taso_err_t taso_verify_numeric(const taso_inputs_t *in, const taso_graph_t *src,
                               const taso_graph_t *dst, uint64_t seed, bool *equal, char *why,
                               int len) {
  taso_err_t err = TASO_OK;
  double **inputs = calloc((size_t)(in->n + 1), sizeof *inputs);
  taso_tensor_t *ts = NULL, *td = NULL;
  double **vs = NULL, **vd = NULL;
  *equal = false;
  why[0] = '\0';
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  bool *read = calloc((size_t)(in->n + 1), sizeof *read);
  if (!inputs || !read) {
    free(inputs);
    free(read);
    return taso_error(TASO_ERR_NOMEM, "no memory for inputs");
  }
  for (int side = 0; side < 2; side++) {
    const taso_graph_t *g = side ? dst : src;
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].kind == TASO_OP_INPUT && g->nodes[i].p.input < in->n)
        read[g->nodes[i].p.input] = true;
  }
  for (int i = 0; i < in->n && err == TASO_OK; i++) {
    int64_t size = taso_tensor_size(&in->v[i].type);
    if (!read[i]) { /* the stream passed over: the others' values as if it were drawn */
      state += (uint64_t)size * 0x9e3779b97f4a7c15ull;
      continue;
    }
    if (!(inputs[i] = malloc(sizeof **inputs * (size_t)(size > 0 ? size : 1)))) {
      err = taso_error(TASO_ERR_NOMEM, "no memory for inputs");
      break;
    }
    /* Uniform in [-1, 1): both signs, so relu and max matter. */
    for (int64_t k = 0; k < size; k++)
      inputs[i][k] = (double)(splitmix(&state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  }
  free(read);
  if (err == TASO_OK && (err = evaluate(in, src, inputs, &ts, &vs)) != TASO_OK)
    err = taso_error_prefix(err, "source graph: ");
  if (err == TASO_OK && (err = evaluate(in, dst, inputs, &td, &vd)) != TASO_OK)
    err = taso_error_prefix(err, "target graph: ");
  if (err == TASO_OK) {
    *equal = src->noutputs == dst->noutputs;
    if (!*equal) snprintf(why, (size_t)len, "%d outputs against %d", src->noutputs, dst->noutputs);
    for (int o = 0; *equal && o < src->noutputs; o++) {
      const taso_tensor_t *a = &ts[src->outputs[o]], *b = &td[dst->outputs[o]];
      if (a->rank != b->rank || memcmp(a->dim, b->dim, sizeof a->dim) != 0) {
        *equal = false;
        snprintf(why, (size_t)len, "output %d: shapes differ", o);
      } else if (!taso_tensor_equal(a, b)) {
        *equal = false;
        snprintf(why, (size_t)len, "output %d: split trees differ", o);
      } else {
        const double *x = vs[src->outputs[o]], *y = vd[dst->outputs[o]];
        int64_t size = taso_tensor_size(a);
        for (int64_t k = 0; k < size; k++) {
          if (!(fabs(x[k] - y[k]) <= NUMERIC_TOL * (1.0 + fabs(x[k]) + fabs(y[k])))) {
            *equal = false;
            snprintf(why, (size_t)len, "output %d: values differ (element %lld: %.6g vs %.6g)", o,
                     (long long)k, x[k], y[k]);
            break;
          }
        }
      }
    }
  }
  if (vs) taso_values_free((void **)vs, 2 * src->nnodes);
  if (vd) taso_values_free((void **)vd, 2 * dst->nnodes);
  free(vs);
  free(vd);
  free(ts);
  free(td);
  for (int i = 0; i < in->n; i++)
    free(inputs[i]);
  free(inputs);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Deciding                                                                 */
/* ------------------------------------------------------------------------ */

static taso_err_t prove(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                        const taso_graph_t *dst, bool checked, taso_verify_result_t *r);

/* "conv2d, enlarge": the distinct operators of both graphs, where a
 * missing property must lie. */
static void operators_of(const taso_graph_t *a, const taso_graph_t *b, char *buf, int len) {
  bool seen[TASO_OP_COUNT] = {false};
  const taso_graph_t *gs[2] = {a, b};
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < gs[g]->nnodes; i++)
      if (gs[g]->nodes[i].kind > TASO_OP_INPUT && gs[g]->nodes[i].kind < TASO_OP_COUNT)
        seen[gs[g]->nodes[i].kind] = true;
  int used = 0;
  buf[0] = '\0';
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT && used < len; k++)
    if (seen[k])
      used +=
          snprintf(buf + used, (size_t)(len - used), "%s%s", used ? ", " : "", taso_ops[k].name);
}

taso_err_t taso_prover_decide(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                              const taso_graph_t *dst, uint64_t seed, taso_verify_result_t *r) {
  double t0 = now_seconds();
  char why[TASO_REASON_LEN];
  bool equal = false;
  memset(r, 0, sizeof *r);
  r->verdict = TASO_VERDICT_UNKNOWN;

  taso_err_t err = taso_verify_numeric(in, src, dst, seed, &equal, why, sizeof why);
  if (err == TASO_ERR_NOMEM) return err;
  if (err != TASO_OK) {
    r->verdict = TASO_VERDICT_REFUTED;
    snprintf(r->reason, sizeof r->reason, "invalid graph: %s", taso_error_detail());
    r->seconds = now_seconds() - t0;
    return TASO_OK;
  }
  if (!equal) {
    /* No proof is tried: the pair is false, and a query on it would only
     * spend its timeout. */
    r->verdict = TASO_VERDICT_REFUTED;
    snprintf(r->reason, sizeof r->reason, "false pair (generator bug): numeric check: %.110s", why);
    r->seconds = now_seconds() - t0;
    return TASO_OK;
  }
  err = prove(p, in, src, dst, true, r);
  r->seconds = now_seconds() - t0;
  return err;
}

taso_err_t taso_prover_prove(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                             const taso_graph_t *dst, taso_verify_result_t *r) {
  return prove(p, in, src, dst, false, r);
}

/* checked: the numeric check found the pair equal, so an unproved pair is
 * a true one the axioms cannot reach. */
static taso_err_t prove(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                        const taso_graph_t *dst, bool checked, taso_verify_result_t *r) {
  double t0 = now_seconds();
  char ops[96];
  taso_err_t err;
  memset(r, 0, sizeof *r);
  r->verdict = TASO_VERDICT_UNKNOWN;
  if (src->noutputs != dst->noutputs) {
    snprintf(r->reason, sizeof r->reason, "%d outputs against %d", src->noutputs, dst->noutputs);
    r->seconds = now_seconds() - t0;
    return TASO_OK;
  }
  /* Every tensor's term, and each one's shape facts. */
  Z3_ast *ts = calloc((size_t)(2 * src->nnodes + 1), sizeof *ts);
  Z3_ast *td = calloc((size_t)(2 * dst->nnodes + 1), sizeof *td);
  size_t max_facts = (size_t)(2 * (src->nnodes + dst->nnodes)) * TYPE_FNS * TASO_MAX_RANK + 1;
  Z3_ast *facts = calloc(max_facts, sizeof *facts);
  int nfacts = 0;
  if (!ts || !td || !facts) {
    free(ts);
    free(td);
    free(facts);
    return taso_error(TASO_ERR_NOMEM, "no memory for terms");
  }
  err = graph_terms(p, in, src, ts);
  if (err == TASO_OK) err = graph_terms(p, in, dst, td);
  if (err == TASO_ERR_UNKNOWN || err == TASO_ERR_FORMAT) {
    snprintf(r->reason, sizeof r->reason, "cannot be stated in the axioms' terms: %s",
             taso_error_detail());
    err = TASO_OK;
    goto done;
  }
  if (err == TASO_OK) err = shape_facts(p, in, src, ts, facts, &nfacts);
  if (err == TASO_OK) err = shape_facts(p, in, dst, td, facts, &nfacts);
  if (err != TASO_OK) goto done;

  bool proved = true;
  for (int o = 0; o < src->noutputs && proved; o++) {
    /* Every handle is checked before use: under Z3's memory cap, shared
     * by the threads of the process, any call may fail and return NULL. */
    Z3_solver s = new_solver(p);
    Z3_ast eq = s ? Z3_mk_eq(p->c, ts[src->outputs[o]], td[dst->outputs[o]]) : NULL;
    Z3_ast goal = eq ? Z3_mk_not(p->c, eq) : NULL;
    if (s && !goal) {
      Z3_solver_dec_ref(p->c, s);
      s = NULL;
    }
    for (int k = 0; s && k < nfacts; k++)
      if (facts[k]) Z3_solver_assert(p->c, s, facts[k]);
    if (s) Z3_solver_assert(p->c, s, goal);
    char unknown[64] = "";
    Z3_lbool res = check(p, s, unknown, sizeof unknown);
    if (s) Z3_solver_dec_ref(p->c, s);
    char zmsg[128];
    if (taso_z3_take_error(zmsg, sizeof zmsg)) {
      snprintf(r->reason, sizeof r->reason, "output %d: Z3 error: %s", o, zmsg);
      proved = false;
    } else if (res != Z3_L_FALSE) {
      operators_of(src, dst, ops, sizeof ops);
      /* A long operator list is cut: the reason still says what failed. */
      (void)!snprintf(r->reason, sizeof r->reason, "output %d: %s; %s (missing a property of: %s)",
                      o,
                      res == Z3_L_TRUE                ? "the axioms have a model where it fails"
                      : strstr(unknown, "timeout")    ? "solver timeout"
                      : strstr(unknown, "limit")      ? unknown
                      : strstr(unknown, "incomplete") ? "proof search saturated"
                      : unknown[0]                    ? unknown
                                                      : "solver gave up",
                      checked ? "numerically equal: true but not provable from the axioms"
                              : "not proved from the axioms",
                      ops);
      proved = false;
    }
  }
  if (proved) r->verdict = TASO_VERDICT_PROVED;
done:
  free(ts);
  free(td);
  free(facts);
  r->seconds = now_seconds() - t0;
  return err;
}

/* ------------------------------------------------------------------------ */
/* Lemmas                                                                   */
/* ------------------------------------------------------------------------ */

/* Proves one lemma: its negation, with a fresh constant per variable, plus
 * its hints (each asserted as h = h, which only adds the term), must be
 * unsat together with the assumptions. */
static taso_err_t prove_lemma(taso_prover_t *p, const taso_axiom_t *a, bool *proved, char *why,
                              int len) {
  Z3_ast f;
  Z3_ast_vector fv;
  TASO_TRY(parse_one(p, a, &fv, &f));
  Z3_context c = p->c;
  Z3_symbol names[MAX_BOUND + 1];
  Z3_func_decl consts[MAX_BOUND + 1];
  Z3_ast subst[MAX_BOUND];
  Z3_ast goal = f;
  unsigned nb = 0;
  if (Z3_get_ast_kind(c, f) == Z3_QUANTIFIER_AST && Z3_is_quantifier_forall(c, f)) {
    nb = Z3_get_quantifier_num_bound(c, f);
    if (nb > MAX_BOUND) {
      Z3_ast_vector_dec_ref(c, fv);
      return taso_error(TASO_ERR_LIMIT, "%s:%d: lemma %s has more than %d variables", a->file,
                        a->line, a->name, MAX_BOUND);
    }
    for (unsigned b = 0; b < nb; b++) {
      names[b] = Z3_get_quantifier_bound_name(c, f, b);
      consts[b] = Z3_mk_func_decl(c, names[b], 0, NULL, Z3_get_quantifier_bound_sort(c, f, b));
      /* De Bruijn: variable 0 is the last bound one. */
      subst[nb - 1 - b] = Z3_mk_app(c, consts[b], 0, NULL);
    }
    goal = Z3_substitute_vars(c, Z3_get_quantifier_body(c, f), nb, subst);
  }
  Z3_solver s = new_solver(p);
  if (!s) {
    snprintf(why, (size_t)len, "memory limit");
    *proved = false;
    Z3_ast_vector_dec_ref(c, fv);
    taso_z3_take_error(NULL, 0);
    return TASO_OK;
  }
  Z3_solver_assert(c, s, Z3_mk_not(c, goal));
  taso_err_t err = TASO_OK;
  for (int i = 0; i < a->nmeta && err == TASO_OK; i++) {
    if (strcmp(a->meta[i].key, "hint") != 0) continue;
    size_t need = strlen(a->meta[i].value) * 2 + 32;
    char *cmd = malloc(need);
    if (!cmd) {
      err = taso_error(TASO_ERR_NOMEM, "no memory for a hint");
      break;
    }
    /* h = HINT with a fresh h: Z3 would simplify HINT = HINT away, term
     * and all, while a definition keeps the term and adds no fact. */
    snprintf(cmd, need, "(assert (= taso_hint %s))", a->meta[i].value);
    names[nb] = Z3_mk_string_symbol(c, "taso_hint");
    consts[nb] = Z3_mk_fresh_func_decl(c, "taso_hint", 0, NULL, p->t);
    Z3_ast_vector hv;
    err = taso_axioms_parse(p->ax, c, p->t, p->fns, a->file, cmd, (int)nb + 1, names, consts, &hv);
    free(cmd);
    if (err != TASO_OK) break;
    Z3_ast_vector_inc_ref(c, hv);
    for (unsigned k = 0; k < Z3_ast_vector_size(c, hv); k++)
      Z3_solver_assert(c, s, Z3_ast_vector_get(c, hv, k));
    Z3_ast_vector_dec_ref(c, hv);
  }
  if (err == TASO_OK) {
    char unknown[64] = "";
    Z3_lbool res = check(p, s, unknown, sizeof unknown);
    *proved = res == Z3_L_FALSE;
    snprintf(why, (size_t)len, "%s",
             res == Z3_L_FALSE  ? "proved"
             : res == Z3_L_TRUE ? "the axioms have a model where it fails"
                                : (unknown[0] ? unknown : "unknown"));
  }
  Z3_solver_dec_ref(c, s);
  Z3_ast_vector_dec_ref(c, fv);
  char zmsg[128];
  if (err == TASO_OK && taso_z3_take_error(zmsg, sizeof zmsg))
    err = taso_error(TASO_ERR_LIB, "lemma %s: Z3: %s", a->name, zmsg);
  return err;
}

taso_err_t taso_axioms_prove_lemmas(taso_axioms_t *ax, double timeout_s, char *report, int len,
                                    int *failed) {
  taso_limits_t lim = {.timeout_s = timeout_s};
  return taso_axioms_prove_lemmas_limited(ax, &lim, report, len, failed);
}

taso_err_t taso_axioms_prove_lemmas_limited(taso_axioms_t *ax, const taso_limits_t *lim,
                                            char *report, int len, int *failed) {
  taso_prover_t *p;
  int used = 0;
  *failed = 0;
  if (len > 0) report[0] = '\0';
  TASO_TRY(prover_open(ax, lim, &p));
  taso_err_t err = TASO_OK;
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    taso_axiom_t *a = &ax->v[i];
    if (!a->enabled) continue;
    if (a->kind == TASO_AXIOM_LEMMA) {
      bool proved = false;
      char why[64];
      err = prove_lemma(p, a, &proved, why, sizeof why);
      if (err != TASO_OK) break;
      if (!proved) {
        a->enabled = false;
        (*failed)++;
        if (used < len)
          used += snprintf(report + used, (size_t)(len - used), "%s%s: %s", used ? "; " : "",
                           a->name, why);
        continue;
      }
    }
    /* Axioms, and lemmas once proved, are assumed by what follows. */
    err = parse_one(p, a, &p->vecs[p->nassume], &p->assume[p->nassume]);
    if (err == TASO_OK) p->nassume++;
  }
  taso_prover_free(p);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Redundancy                                                               */
/* ------------------------------------------------------------------------ */

/* One query: do the formulas marked in use entail not_goal's negation?
 * On unsat, core receives the formulas the proof used. */
static Z3_lbool entail_query(taso_prover_t *p, bool mbqi, int n, const Z3_ast *f, const Z3_ast *lit,
                             const bool *use, Z3_ast not_goal, bool *core, char *why, int len) {
  Z3_context c = p->c;
  Z3_solver s = new_solver_mbqi(p, mbqi);
  if (!s) return check(p, s, why, len); /* undef: memory limit */
  for (int i = 0; i < n; i++)
    if (use[i]) Z3_solver_assert_and_track(c, s, f[i], lit[i]);
  Z3_solver_assert(c, s, not_goal);
  Z3_lbool r = check(p, s, why, len);
  if (r == Z3_L_FALSE) {
    Z3_ast_vector uc = Z3_solver_get_unsat_core(c, s);
    Z3_ast_vector_inc_ref(c, uc);
    for (int i = 0; i < n; i++)
      core[i] = false;
    for (unsigned k = 0; k < Z3_ast_vector_size(c, uc); k++) {
      Z3_ast e = Z3_ast_vector_get(c, uc, k);
      for (int i = 0; i < n; i++)
        if (use[i] && Z3_is_eq_ast(c, e, lit[i])) core[i] = true;
    }
    Z3_ast_vector_dec_ref(c, uc);
  }
  Z3_solver_dec_ref(c, s);
  return r;
}

/* Minimizes an unsat core by deletion (got: the core of the query that
 * found it; core receives the result): drops each member whose absence
 * keeps the query unsat, within the timeout. */
static void minimize_core(taso_prover_t *p, bool mbqi, int n, const Z3_ast *f, const Z3_ast *lit,
                          Z3_ast goal, bool *got, bool *core) {
  memcpy(core, got, sizeof *core * (size_t)n);
  for (int i = 0; i < n; i++) {
    if (!core[i]) continue;
    core[i] = false;
    char w[64];
    if (entail_query(p, mbqi, n, f, lit, core, goal, got, w, sizeof w) == Z3_L_FALSE)
      memcpy(core, got, sizeof *core * (size_t)n);
    else
      core[i] = true;
  }
}

/* The "why" of an undecided query: what the countermodel search and the
 * entailment query each ran into. */
static void undecided_why(char *why, int len, const char *search, const char *query) {
  snprintf(why, (size_t)len, "no countermodel (%.64s); entailment: %.40s", search,
           query[0] ? query : "unknown");
}

taso_err_t taso_axioms_entailed(const taso_axioms_t *ax, int goal, const taso_limits_t *lim,
                                int *verdict, bool *core, char *model, int mlen, char *why,
                                int len) {
  taso_prover_t *p;
  *verdict = 0;
  if (len > 0) why[0] = '\0';
  if (mlen > 0) model[0] = '\0';
  for (int i = 0; i < ax->n; i++)
    core[i] = false;
  if (goal < 0 || goal >= ax->n) return taso_error(TASO_ERR_ARG, "no axiom %d", goal);
  bool *use = calloc((size_t)ax->n + 1, sizeof *use), found = false;
  char search[96] = "";
  if (!use) return taso_error(TASO_ERR_NOMEM, "no memory for a query");
  for (int i = 0; i < ax->n; i++)
    use[i] = i != goal && ax->v[i].enabled && ax->v[i].kind == TASO_AXIOM_AXIOM;
  /* Independence first: most axioms are, and a finite countermodel is
   * found (or not) within the resource limit on any machine. */
  taso_err_t err =
      taso_axioms_countermodel(ax, use, goal, lim, &found, model, mlen, search, sizeof search);
  if (err != TASO_OK || found) {
    free(use);
    if (found) *verdict = -1;
    return err;
  }
  if ((err = prover_open(ax, lim, &p)) != TASO_OK) {
    free(use);
    return err;
  }
  Z3_context c = p->c;
  Z3_ast *f = calloc((size_t)ax->n + 1, sizeof *f), *lit = calloc((size_t)ax->n + 1, sizeof *lit);
  Z3_ast_vector *vecs = calloc((size_t)ax->n + 1, sizeof *vecs);
  bool *got = calloc((size_t)ax->n + 1, sizeof *got);
  Z3_ast goal_f = NULL;
  Z3_ast_vector goal_v = NULL;
  if (!f || !lit || !vecs || !got) err = taso_error(TASO_ERR_NOMEM, "no memory for a query");
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    if (!use[i]) continue;
    if ((err = parse_one(p, &ax->v[i], &vecs[i], &f[i])) != TASO_OK) break;
    lit[i] = Z3_mk_const(c, Z3_mk_string_symbol(c, ax->v[i].name), Z3_mk_bool_sort(c));
  }
  if (err == TASO_OK) err = parse_one(p, &ax->v[goal], &goal_v, &goal_f);
  Z3_ast not_goal = NULL;
  if (err == TASO_OK && !(not_goal = taso_instantiate(c, goal_f, NULL, NULL)))
    err = taso_error(TASO_ERR_LIMIT, "%s has more than %d variables", ax->v[goal].name, MAX_BOUND);
  if (err == TASO_OK) {
    char query[64] = "";
    not_goal = Z3_mk_not(c, not_goal);
    /* E-matching alone: the goal's terms give the patterns their ground
     * terms, and it stops when they find nothing new, within the resource
     * limit (model-based instantiation overran both limits by tens of
     * seconds and could only find infinite models, which it cannot). */
    Z3_lbool r = entail_query(p, false, ax->n, f, lit, use, not_goal, got, query, sizeof query);
    if (r == Z3_L_TRUE) {
      *verdict = -1;
      snprintf(model, (size_t)mlen, "Z3 found a model of the others where it fails");
    } else if (r == Z3_L_FALSE) {
      *verdict = 1;
      minimize_core(p, false, ax->n, f, lit, not_goal, got, core);
    } else {
      undecided_why(why, len, search, query);
    }
  }
  char zmsg[128];
  if (err == TASO_OK && taso_z3_take_error(zmsg, sizeof zmsg))
    err = taso_error(TASO_ERR_LIB, "axiom %s: Z3: %s", ax->v[goal].name, zmsg);
  for (int i = 0; vecs && i < ax->n; i++)
    if (vecs[i]) Z3_ast_vector_dec_ref(c, vecs[i]);
  if (goal_v) Z3_ast_vector_dec_ref(c, goal_v);
  free(f);
  free(lit);
  free(vecs);
  free(use);
  free(got);
  taso_prover_free(p);
  return err;
}

/* Whether the axiom's formula applies function name. */
static bool mentions(const taso_axiom_t *a, const char *name) {
  size_t n = strlen(name);
  for (const char *s = strstr(a->text, name); s; s = strstr(s + 1, name))
    if (s > a->text && s[-1] == '(' && (s[n] == ' ' || s[n] == ')' || s[n] == '\n')) return true;
  return false;
}

int taso_axioms_families(const taso_axioms_t *ax) {
  return 1 + ax->ndecls;
}

taso_err_t taso_axioms_collapse(const taso_axioms_t *ax, int family, const taso_limits_t *lim,
                                int *verdict, bool *core, char *model, int mlen, char *why,
                                int len) {
  taso_prover_t *p;
  *verdict = 0;
  if (len > 0) why[0] = '\0';
  if (mlen > 0) model[0] = '\0';
  for (int i = 0; i < ax->n; i++)
    core[i] = false;
  if (family < 0 || family > ax->ndecls) return taso_error(TASO_ERR_ARG, "no family %d", family);
  bool *use = calloc((size_t)ax->n + 1, sizeof *use), found = false;
  int members = 0;
  if (!use) return taso_error(TASO_ERR_NOMEM, "no memory for a query");
  for (int i = 0; i < ax->n; i++) {
    const taso_axiom_t *a = &ax->v[i];
    use[i] = a->enabled && a->kind == TASO_AXIOM_AXIOM &&
             (family == 0 || mentions(a, ax->decls[family - 1].name));
    members += use[i];
  }
  if (members < 2 || (family > 0 && members == ax->n)) {
    snprintf(why, (size_t)len, "%d members: not asked", members);
    free(use);
    return TASO_OK;
  }
  /* A finite model of the family has two different tensors. */
  char search[96] = "";
  taso_err_t err =
      taso_axioms_countermodel(ax, use, -1, lim, &found, model, mlen, search, sizeof search);
  if (err != TASO_OK || found) {
    free(use);
    if (found) *verdict = -1;
    return err;
  }
  if ((err = prover_open(ax, lim, &p)) != TASO_OK) {
    free(use);
    return err;
  }
  Z3_context c = p->c;
  Z3_ast *f = calloc((size_t)ax->n + 1, sizeof *f), *lit = calloc((size_t)ax->n + 1, sizeof *lit);
  Z3_ast_vector *vecs = calloc((size_t)ax->n + 1, sizeof *vecs);
  bool *got = calloc((size_t)ax->n + 1, sizeof *got);
  if (!f || !lit || !vecs || !got) err = taso_error(TASO_ERR_NOMEM, "no memory for a query");
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    if (!use[i]) continue;
    /* Z3's own patterns: with no ground term in the query, the refutation
     * comes from model-based instantiation, which ours hold back. */
    if ((err = parse_formula(p, &ax->v[i], false, &vecs[i], &f[i])) != TASO_OK) break;
    lit[i] = Z3_mk_const(c, Z3_mk_string_symbol(c, ax->v[i].name), Z3_mk_bool_sort(c));
  }
  /* Two tensors that differ: unsat means the family makes all equal. */
  Z3_ast two[2] = {Z3_mk_fresh_const(c, "t", p->t), Z3_mk_fresh_const(c, "t", p->t)};
  Z3_ast distinct = Z3_mk_distinct(c, 2, two);
  if (err == TASO_OK) {
    char query[64] = "";
    Z3_lbool r = entail_query(p, true, ax->n, f, lit, use, distinct, got, query, sizeof query);
    if (r == Z3_L_FALSE) {
      *verdict = 1;
      minimize_core(p, true, ax->n, f, lit, distinct, got, core);
    } else if (r == Z3_L_TRUE) {
      *verdict = -1;
      snprintf(model, (size_t)mlen, "Z3 found a model with two different tensors");
    } else {
      undecided_why(why, len, search, query);
    }
  }
  char zmsg[128];
  if (err == TASO_OK && taso_z3_take_error(zmsg, sizeof zmsg))
    err = taso_error(TASO_ERR_LIB, "axiom family %d: Z3: %s", family, zmsg);
  for (int i = 0; vecs && i < ax->n; i++)
    if (vecs[i]) Z3_ast_vector_dec_ref(c, vecs[i]);
  free(f);
  free(lit);
  free(vecs);
  free(use);
  free(got);
  taso_prover_free(p);
  return err;
}
