/* Finite countermodels for the validator's redundancy check (see
 * verifier.h, taso_axioms_countermodel).
 *
 * Z3's model-based instantiation cannot show an axiom independent here:
 * even "associative, not commutative" over a 2-element sort runs into its
 * timeout (Z3 4.8.12). So the search is done the classical way, by
 * grounding: the tensor sort becomes a bit-vector of w bits (2^w
 * elements), every universally quantified axiom is expanded over all
 * values of its tensor variables and a few representatives of its Int
 * variables, and the ground problem goes to the SMT kernel.
 *
 * To keep the Int parameters finite, every function sees its Int
 * arguments only through a class, 0, 1 or "anything else" (taso_cls), and
 * dim and splits return one of 0..3. Both restrict the models searched,
 * never the soundness: a model found on the representatives is then
 * checked exactly, axiom by axiom, for every Int value (the negation of an
 * axiom over fully defined functions is a ground query), and only a model
 * that passes is reported. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verifier.h"
#include "z3ctx.h"

#define NREPS 4             /* Int representatives 0..3 */
#define NCLASSES 3          /* taso_cls: 0, 1, anything else */
#define MAX_VARS 16         /* bound variables of one axiom */
#define MAX_INSTANCES 40000 /* ground instances of one axiom; past it, fewer Int values */
#define MAX_INVERSES 64     /* left-inverse axioms looked at */

typedef struct {
  Z3_context c;
  int width;     /* bits of the tensor sort */
  char *prelude; /* SMT-LIB2 declaring T, taso_cls and the functions */
  Z3_solver s;
  const taso_limits_t *lim;
  bool infinite; /* the axioms have no finite model: stop searching */
} finder_t;

/* The prelude: T, the class of an Int, and for every function NAME of
 * decls.smt2 a raw uninterpreted NAME_raw and a macro NAME that hands it
 * the classes of its Int arguments. Axioms parsed after it see NAME. */
static char *make_prelude(const taso_axioms_t *ax, int width) {
  size_t cap = 1024 + (size_t)ax->ndecls * 512, used = 0;
  char *p = malloc(cap);
  if (!p) return NULL;
  used +=
      (size_t)snprintf(p + used, cap - used,
                       "(define-sort T () (_ BitVec %d))\n"
                       "(define-fun taso_cls ((i Int)) Int (ite (= i 0) 0 (ite (= i 1) 1 2)))\n",
                       width);
  for (int d = 0; d < ax->ndecls; d++) {
    const taso_decl_t *f = &ax->decls[d];
    const char *ret = f->ret_int ? "Int" : "T";
    used += (size_t)snprintf(p + used, cap - used, "(declare-fun %s_raw (", f->name);
    for (int a = 0; a < f->nargs; a++)
      used +=
          (size_t)snprintf(p + used, cap - used, "%s%s", a ? " " : "", f->arg_int[a] ? "Int" : "T");
    used += (size_t)snprintf(p + used, cap - used, ") %s)\n(define-fun %s (", ret, f->name);
    for (int a = 0; a < f->nargs; a++)
      used += (size_t)snprintf(p + used, cap - used, "%s(p%d %s)", a ? " " : "", a,
                               f->arg_int[a] ? "Int" : "T");
    used += (size_t)snprintf(p + used, cap - used, ") %s (%s_raw", ret, f->name);
    for (int a = 0; a < f->nargs; a++)
      used += (size_t)snprintf(p + used, cap - used, f->arg_int[a] ? " (taso_cls p%d)" : " p%d", a);
    used += (size_t)snprintf(p + used, cap - used, "))\n");
    if (used >= cap) {
      free(p);
      return NULL;
    }
  }
  return p;
}

/* Parses one axiom's assertion after the prelude. */
static taso_err_t parse_axiom(finder_t *f, const taso_axiom_t *a, Z3_ast_vector *vec, Z3_ast *out) {
  size_t n = strlen(f->prelude) + strlen(a->text) + 1;
  char *text = malloc(n);
  if (!text) return taso_error(TASO_ERR_NOMEM, "no memory for an axiom");
  snprintf(text, n, "%s%s", f->prelude, a->text);
  Z3_ast_vector v = Z3_parse_smtlib2_string(f->c, text, 0, NULL, NULL, 0, NULL, NULL);
  free(text);
  char msg[128];
  if (taso_z3_take_error(msg, sizeof msg))
    return taso_error(TASO_ERR_PARSE, "%s: %s (countermodel prelude): %s", a->file, a->name, msg);
  Z3_ast_vector_inc_ref(f->c, v);
  if (Z3_ast_vector_size(f->c, v) != 1) {
    Z3_ast_vector_dec_ref(f->c, v);
    return taso_error(TASO_ERR_PARSE, "%s: %s holds more than one assertion", a->file, a->name);
  }
  *vec = v;
  *out = Z3_ast_vector_get(f->c, v, 0);
  return TASO_OK;
}

static bool has_quantifier(Z3_context c, Z3_ast e) {
  Z3_ast_kind k = Z3_get_ast_kind(c, e);
  if (k == Z3_QUANTIFIER_AST) return true;
  if (k != Z3_APP_AST) return false;
  Z3_app a = Z3_to_app(c, e);
  for (unsigned i = 0; i < Z3_get_app_num_args(c, a); i++)
    if (has_quantifier(c, Z3_get_app_arg(c, a, i))) return true;
  return false;
}

/* Asserts every ground instance of a universal formula over the tensor
 * values and nreps Int representatives. *ok false: not of that shape. */
static void expand(finder_t *f, Z3_ast ax, bool *ok) {
  Z3_context c = f->c;
  *ok = true;
  if (Z3_get_ast_kind(c, ax) != Z3_QUANTIFIER_AST) {
    if (has_quantifier(c, ax))
      *ok = false;
    else
      Z3_solver_assert(c, f->s, ax);
    return;
  }
  unsigned nb = Z3_get_quantifier_num_bound(c, ax);
  Z3_ast body = Z3_get_quantifier_body(c, ax);
  if (!Z3_is_quantifier_forall(c, ax) || nb > MAX_VARS || has_quantifier(c, body)) {
    *ok = false;
    return;
  }
  int k = 1 << f->width, radix[MAX_VARS], nreps = NREPS;
  bool is_int[MAX_VARS];
  for (unsigned b = 0; b < nb; b++)
    is_int[b] = Z3_get_sort_kind(c, Z3_get_quantifier_bound_sort(c, ax, b)) == Z3_INT_SORT;
  /* Fewer Int values where all four would make too many instances. */
  for (; nreps > NCLASSES - 1; nreps--) {
    double count = 1;
    for (unsigned b = 0; b < nb; b++)
      count *= is_int[b] ? nreps : k;
    if (count <= MAX_INSTANCES) break;
  }
  for (unsigned b = 0; b < nb; b++)
    radix[b] = is_int[b] ? nreps : k;
  Z3_sort bv = Z3_mk_bv_sort(c, (unsigned)f->width), int_sort = Z3_mk_int_sort(c);
  int digit[MAX_VARS] = {0};
  for (;;) {
    Z3_ast subst[MAX_VARS];
    for (unsigned b = 0; b < nb; b++) /* de Bruijn: 0 is the last bound */
      subst[nb - 1 - b] = Z3_mk_int(c, digit[b], is_int[b] ? int_sort : bv);
    Z3_solver_assert(c, f->s, Z3_substitute_vars(c, body, nb, subst));
    unsigned b = 0;
    while (b < nb && ++digit[b] == radix[b])
      digit[b++] = 0;
    if (b == nb) break;
  }
}

/* Every argument tuple of a raw function: Int arguments over the classes,
 * tensors over the domain. Calls visit with the application. */
typedef void (*visit_fn)(finder_t *f, Z3_model m, Z3_ast app, void *ctx);
static void each_point(finder_t *f, Z3_func_decl raw, const taso_decl_t *d, Z3_model m,
                       visit_fn visit, void *ctx) {
  Z3_context c = f->c;
  Z3_sort bv = Z3_mk_bv_sort(c, (unsigned)f->width), int_sort = Z3_mk_int_sort(c);
  int digit[TASO_DECL_MAX_ARGS] = {0}, k = 1 << f->width;
  for (;;) {
    Z3_ast args[TASO_DECL_MAX_ARGS];
    for (int a = 0; a < d->nargs; a++)
      args[a] = Z3_mk_int(c, digit[a], d->arg_int[a] ? int_sort : bv);
    visit(f, m, Z3_mk_app(c, raw, (unsigned)d->nargs, args), ctx);
    int a = 0;
    while (a < d->nargs && ++digit[a] == (d->arg_int[a] ? NCLASSES : k))
      digit[a++] = 0;
    if (a == d->nargs) break;
  }
}

/* dim and splits stay among the Int representatives, so that guards
 * comparing them with a quantified Int are decided on the instances. */
static void bound_int(finder_t *f, Z3_model m, Z3_ast app, void *ctx) {
  (void)m;
  (void)ctx;
  Z3_context c = f->c;
  Z3_sort int_sort = Z3_mk_int_sort(c);
  Z3_ast lo = Z3_mk_ge(c, app, Z3_mk_int(c, 0, int_sort));
  Z3_ast hi = Z3_mk_le(c, app, Z3_mk_int(c, NREPS - 1, int_sort));
  Z3_ast both[2] = {lo, hi};
  Z3_solver_assert(c, f->s, Z3_mk_and(c, 2, both));
}

/* Fixes a raw function at one point to its value in the model. */
static void fix_point(finder_t *f, Z3_model m, Z3_ast app, void *ctx) {
  Z3_solver check = ctx;
  Z3_ast v = NULL;
  if (Z3_model_eval(f->c, m, app, true, &v) && v)
    Z3_solver_assert(f->c, check, Z3_mk_eq(f->c, app, v));
}

/* Z3's default search (model-based instantiation on) under the limits. */
static Z3_solver limited_solver(finder_t *f) {
  return taso_limited_solver(f->c, f->lim, true);
}

/* The raw function of decl d, as the prelude declared it. */
static Z3_func_decl raw_decl(finder_t *f, const taso_decl_t *d) {
  char name[48];
  snprintf(name, sizeof name, "%s_raw", d->name);
  Z3_context c = f->c;
  Z3_sort dom[TASO_DECL_MAX_ARGS];
  Z3_sort bv = Z3_mk_bv_sort(c, (unsigned)f->width), int_sort = Z3_mk_int_sort(c);
  for (int a = 0; a < d->nargs; a++)
    dom[a] = d->arg_int[a] ? int_sort : bv;
  return Z3_mk_func_decl(c, Z3_mk_string_symbol(c, name), (unsigned)d->nargs, dom,
                         d->ret_int ? int_sort : bv);
}

/* "x=0 y=1: 0 vs 1": the goal's variables and the values of its two sides
 * (of its equation, under a guard) in the checked model. */
static void describe(finder_t *f, Z3_model m, Z3_ast body, Z3_ast *vars, unsigned nv, char *buf,
                     int len) {
  Z3_context c = f->c;
  int used = snprintf(buf, (size_t)len, "%d tensors;", 1 << f->width);
  for (unsigned i = 0; i < nv && used < len; i++) {
    Z3_ast v = NULL;
    if (!Z3_model_eval(c, m, vars[i], true, &v) || !v) continue;
    unsigned u = 0;
    if (!Z3_get_numeral_uint(c, v, &u)) continue;
    used += snprintf(
        buf + used, (size_t)(len - used), " %s=%u",
        Z3_get_symbol_string(c, Z3_get_decl_name(c, Z3_get_app_decl(c, Z3_to_app(c, vars[i])))), u);
  }
  Z3_ast eq = body;
  if (Z3_get_ast_kind(c, eq) == Z3_APP_AST &&
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, eq))) == Z3_OP_IMPLIES)
    eq = Z3_get_app_arg(c, Z3_to_app(c, eq), 1);
  if (used < len && Z3_get_ast_kind(c, eq) == Z3_APP_AST &&
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, eq))) == Z3_OP_EQ) {
    unsigned side[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
      Z3_ast v = NULL;
      if (Z3_model_eval(c, m, Z3_get_app_arg(c, Z3_to_app(c, eq), (unsigned)s), true, &v) && v)
        Z3_get_numeral_uint(c, v, &side[s]);
    }
    snprintf(buf + used, (size_t)(len - used), ": sides %u vs %u", side[0], side[1]);
  }
}

/* Checks a model of the instances exactly: with every raw function fixed
 * to its table, no axiom in use may fail for any Int value, and the goal
 * (if any) must. On success describes the goal's failure into model. */
static taso_err_t check_model(finder_t *f, const taso_axioms_t *ax, const Z3_ast *forms,
                              const bool *use, int goal, Z3_model m, bool *ok, char *model,
                              int mlen, char *why, int wlen) {
  Z3_context c = f->c;
  Z3_solver check = limited_solver(f);
  *ok = false;
  if (!check) {
    snprintf(why, (size_t)wlen, "%d tensors: %s", 1 << f->width, "memory limit");
    taso_z3_take_error(NULL, 0);
    return TASO_OK;
  }
  for (int d = 0; d < ax->ndecls; d++)
    each_point(f, raw_decl(f, &ax->decls[d]), &ax->decls[d], m, fix_point, check);
  bool all = true;
  for (int i = 0; i < ax->n && all; i++) {
    if (!use[i] && i != goal) continue;
    Z3_ast vars[MAX_VARS];
    unsigned nv = 0;
    Z3_ast inst = taso_instantiate(c, forms[i], vars, &nv);
    if (!inst) {
      all = false;
      snprintf(why, (size_t)wlen, "%s: too many variables", ax->v[i].name);
      break;
    }
    Z3_solver_push(c, check);
    Z3_solver_assert(c, check, Z3_mk_not(c, inst)); /* the goal: sat; the rest: unsat */
    char reason[64];
    Z3_lbool r = taso_limits_check(c, check, f->lim, reason, sizeof reason);
    if (i == goal && r == Z3_L_TRUE) {
      Z3_model gm = Z3_solver_get_model(c, check);
      Z3_model_inc_ref(c, gm);
      describe(f, gm, inst, vars, nv, model, mlen);
      Z3_model_dec_ref(c, gm);
    } else if (r == Z3_L_UNDEF) {
      all = false;
      snprintf(why, (size_t)wlen, "%d tensors: exact check of %s: %.24s", 1 << f->width,
               ax->v[i].name, strstr(reason, "rlimit") ? "rlimit" : reason);
    } else if (i == goal || r != Z3_L_FALSE) {
      all = false; /* it held only on the Int values searched */
      snprintf(why, (size_t)wlen, "%d tensors: a model failed the exact check of %s", 1 << f->width,
               ax->v[i].name);
    }
    Z3_solver_pop(c, check, 1);
  }
  Z3_solver_dec_ref(c, check);
  if (all && goal < 0)
    snprintf(model, (size_t)mlen, "%d tensors: every axiom holds", 1 << f->width);
  *ok = all;
  return TASO_OK;
}

/* Whether f (a universal formula) says g(..., h(..., x, ...)) = x for a
 * bound tensor variable x: a left inverse of h in one argument. Gives h's
 * name and the argument's position. */
static bool left_inverse(Z3_context c, Z3_ast f, char *h, size_t hlen, unsigned *pos) {
  if (Z3_get_ast_kind(c, f) != Z3_QUANTIFIER_AST) return false;
  Z3_ast eq = Z3_get_quantifier_body(c, f);
  if (Z3_get_ast_kind(c, eq) != Z3_APP_AST ||
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, eq))) != Z3_OP_EQ)
    return false;
  Z3_ast lhs = Z3_get_app_arg(c, Z3_to_app(c, eq), 0), x = Z3_get_app_arg(c, Z3_to_app(c, eq), 1);
  if (Z3_get_ast_kind(c, x) != Z3_VAR_AST || Z3_get_ast_kind(c, lhs) != Z3_APP_AST) return false;
  /* lhs is NAME(...) = NAME_raw(classes..., inner) after the prelude's
   * macro; inner is the last argument. */
  Z3_app g = Z3_to_app(c, lhs);
  unsigned n = Z3_get_app_num_args(c, g);
  if (n == 0) return false;
  Z3_ast inner = Z3_get_app_arg(c, g, n - 1);
  if (Z3_get_ast_kind(c, inner) != Z3_APP_AST) return false;
  Z3_app in = Z3_to_app(c, inner);
  for (unsigned i = 0; i < Z3_get_app_num_args(c, in); i++)
    if (Z3_is_eq_ast(c, Z3_get_app_arg(c, in, i), x)) {
      snprintf(h, hlen, "%s", Z3_get_symbol_string(c, Z3_get_decl_name(c, Z3_get_app_decl(c, in))));
      *pos = i;
      return true;
    }
  return false;
}

/* Whether the axioms in use have only infinite models (or one with a
 * single tensor): two of them give one function left inverses in two
 * different arguments (split0 and split1 undo concat, A25 and A26), so
 * the function is injective on pairs of tensors, which no finite set of
 * two or more tensors allows. Then no search can succeed; why names them. */
static bool only_infinite(finder_t *f, const taso_axioms_t *ax, const Z3_ast *forms,
                          const bool *use, char *why, int wlen) {
  char h[MAX_INVERSES][48];
  unsigned pos[MAX_INVERSES];
  int who[MAX_INVERSES], n = 0;
  for (int i = 0; i < ax->n && n < MAX_INVERSES; i++) {
    if (!use[i] || !forms[i] || !left_inverse(f->c, forms[i], h[n], sizeof h[n], &pos[n])) continue;
    for (int k = 0; k < n; k++)
      if (!strcmp(h[k], h[n]) && pos[k] != pos[n]) {
        size_t len = strlen(h[n]);
        if (len > 4 && !strcmp(h[n] + len - 4, "_raw")) h[n][len - 4] = '\0';
        snprintf(why, (size_t)wlen, "every model is infinite (%s and %s make %s injective)",
                 ax->v[who[k]].name, ax->v[i].name, h[n]);
        return true;
      }
    who[n++] = i;
  }
  return false;
}

/* One domain size: the ground search, then the exact check. */
static taso_err_t search(finder_t *f, const taso_axioms_t *ax, const bool *use, int goal,
                         bool *found, char *model, int mlen, char *why, int wlen) {
  Z3_context c = f->c;
  taso_err_t err = TASO_OK;
  Z3_ast *forms = calloc((size_t)ax->n + 1, sizeof *forms);
  Z3_ast_vector *vecs = calloc((size_t)ax->n + 1, sizeof *vecs);
  *found = false;
  if (!forms || !vecs) err = taso_error(TASO_ERR_NOMEM, "no memory for a countermodel");
  f->s = limited_solver(f);
  if (!f->s && err == TASO_OK) {
    snprintf(why, (size_t)wlen, "%d tensors: %s", 1 << f->width, "memory limit");
    taso_z3_take_error(NULL, 0); /* a verdict, not an error */
    goto done;
  }
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    if (!use[i] && i != goal) continue;
    if ((err = parse_axiom(f, &ax->v[i], &vecs[i], &forms[i])) != TASO_OK) break;
    if (i == goal) {
      Z3_ast inst = taso_instantiate(c, forms[i], NULL, NULL);
      if (inst) Z3_solver_assert(c, f->s, Z3_mk_not(c, inst));
      continue;
    }
  }
  if (err == TASO_OK && only_infinite(f, ax, forms, use, why, wlen)) {
    f->infinite = true;
    goto done;
  }
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    if (!use[i]) continue;
    bool ok;
    expand(f, forms[i], &ok);
    if (!ok) {
      snprintf(why, (size_t)wlen, "%s is not a universal formula", ax->v[i].name);
      goto done;
    }
  }
  for (int d = 0; d < ax->ndecls && err == TASO_OK; d++)
    if (ax->decls[d].ret_int)
      each_point(f, raw_decl(f, &ax->decls[d]), &ax->decls[d], NULL, bound_int, NULL);
  if (err == TASO_OK) {
    char reason[64] = "";
    Z3_lbool r = taso_limits_check(c, f->s, f->lim, reason, sizeof reason);
    if (r == Z3_L_TRUE) {
      Z3_model m = Z3_solver_get_model(c, f->s);
      Z3_model_inc_ref(c, m);
      err = check_model(f, ax, forms, use, goal, m, found, model, mlen, why, wlen);
      Z3_model_dec_ref(c, m);
    } else if (r == Z3_L_FALSE) {
      snprintf(why, (size_t)wlen, "no model of %d tensors", 1 << f->width);
    } else {
      /* Short: the limit's name is enough here; the row's why holds two
       * sizes and the entailment query. */
      snprintf(why, (size_t)wlen, "%d tensors: %s", 1 << f->width,
               strstr(reason, "rlimit") ? "rlimit" : reason);
    }
  }
done:
  if (f->s) Z3_solver_dec_ref(c, f->s);
  for (int i = 0; vecs && i < ax->n; i++)
    if (vecs[i]) Z3_ast_vector_dec_ref(c, vecs[i]);
  free(forms);
  free(vecs);
  char zmsg[128];
  if (err == TASO_OK && taso_z3_take_error(zmsg, sizeof zmsg))
    err = taso_error(TASO_ERR_LIB, "countermodel: Z3: %s", zmsg);
  return err;
}

taso_err_t taso_axioms_countermodel(const taso_axioms_t *ax, const bool *use, int goal,
                                    const taso_limits_t *lim, bool *found, char *model, int mlen,
                                    char *why, int wlen) {
  *found = false;
  if (mlen > 0) model[0] = '\0';
  if (wlen > 0) why[0] = '\0';
  taso_err_t err = TASO_OK;
  /* 2 tensors, then 4: most independent axioms fail already on 2. */
  int used = 0;
  for (int width = 1; width <= 2 && !*found && err == TASO_OK; width++) {
    finder_t f = {.width = width, .lim = lim};
    char one[96] = "";
    if (!(f.prelude = make_prelude(ax, width)))
      return taso_error(TASO_ERR_NOMEM, "no memory for a countermodel");
    /* The macros of the prelude end up in explicit patterns, which Z3
     * warns about on stderr; the patterns play no part in a ground search. */
    Z3_global_param_set("warning", "false");
    err = taso_z3_open(taso_limits_timeout_ms(lim), &f.c);
    if (err == TASO_OK) {
      err = search(&f, ax, use, goal, found, model, mlen, one, sizeof one);
      taso_z3_close(f.c);
    }
    free(f.prelude);
    if (f.infinite) { /* the same for every size */
      snprintf(why, (size_t)wlen, "%s", one);
      break;
    }
    if (used < wlen && !*found)
      used += snprintf(why + used, (size_t)(wlen - used), "%s%s", used ? "; " : "", one);
  }
  return err;
}
