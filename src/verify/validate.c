/* The validator's plan and symbolic check (see validate.h). */
#define _POSIX_C_SOURCE 200809L

#include "validate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval.h"
#include "graph.h"
#include "job.h"
#include "poly.h"
#include "z3ctx.h"

#define MAX_VARS 24   /* domain variables of one axiom */
#define MAX_BOUND 16  /* variables of one formula */
#define MAX_TNODES 48 /* operator applications of one formula */
#define MAX_GUARD 48  /* nodes of a guard */
#define MAX_WHERE 8   /* comparisons of an @where */
#define MAX_ENTRIES 4 /* ranks of a rank-generic axiom */
#define NAME_LEN 16
#define Z3_REFRESH 256 /* Z3 queries before a checker's context is renewed */

static const int32_t kernel_sizes[] = {1, 3};

/* ------------------------------------------------------------------------ */
/* Plan structures                                                          */
/* ------------------------------------------------------------------------ */

/* A shape: a list of dimensions, the rank-generic dims (optionally with one
 * axis replaced), or a scalar. */
typedef struct {
  bool scalar, generic;
  int n;                  /* dims listed (not generic) */
  int tok[TASO_MAX_RANK]; /* variable index, or -1 - value for a number */
  int axis_var, dim_var;  /* generic "[a]=e": the variables a and e; -1 none */
} spec_t;

typedef struct {
  int lhs, rhs; /* tokens as in spec_t */
  int op;       /* 0 <=, 1 <, 2 >=, 3 >, 4 ==, 5 != */
} cmp_t;

/* One rank of a rank-generic axiom, or the only entry of another. */
typedef struct {
  int rank; /* R; 0 when not rank-generic */
  int nvars;
  char names[MAX_VARS][NAME_LEN]; /* d0..d{R-1}, then named dims, then params */
  int32_t vals[MAX_VARS][TASO_MAX_SIZES + 4];
  int nvals[MAX_VARS];
  int64_t count;                /* product of nvals */
  spec_t tshape[MAX_BOUND];     /* per bound tensor variable */
  spec_t cshape[TASO_OP_COUNT]; /* per constant operator with @const */
  bool has_const[TASO_OP_COUNT];
  int ivar[MAX_BOUND]; /* bound Int variable -> variable index, -1 */
  cmp_t where[MAX_WHERE];
  int nwhere;
} entry_t;

/* An operator application of a side; kind TASO_OP_INPUT is a bound tensor
 * variable (arg = its bound index). */
typedef struct {
  int32_t kind, port, arg;
  int nint;
  int iarg[TASO_DECL_MAX_ARGS]; /* bound Int index, or -1 - value for a number */
  int nkid;
  int kid[3];
} tnode_t;

enum {
  G_CONST,
  G_VAR,
  G_AND,
  G_OR,
  G_NOT,
  G_EQ,
  G_LE,
  G_LT,
  G_GE,
  G_GT,
  G_ADD,
  G_SUB,
  G_MUL,
  G_MOD,
  G_DIV,
  G_NEG,
  G_DIM,    /* (dim a x): axis kid[0] of tensor variable value */
  G_SPLITS, /* (splits a x): 0, the checked tensors have empty split trees */
  G_RANK    /* (rank x): the rank of tensor variable value */
};

typedef struct {
  int op;
  int64_t value; /* G_CONST: the number; G_VAR, G_DIM, G_SPLITS, G_RANK: bound index */
  int nkid;
  int kid[4];
} gnode_t;

typedef struct {
  const taso_axiom_t *a;
  int nb;
  char bname[MAX_BOUND][NAME_LEN];
  bool bint[MAX_BOUND];
  tnode_t nodes[MAX_TNODES];
  int nn, lhs, rhs;
  gnode_t guard[MAX_GUARD];
  int ng, groot;
  entry_t entries[MAX_ENTRIES];
  int nentries;
  int64_t count, first;
  bool relu_max; /* @relu max: the Z3 path takes relu as max(v, 0) */
} vaxiom_t;

struct taso_plan {
  const taso_axioms_t *ax;
  vaxiom_t *v;
  int n;
  int64_t total;
};

/* ------------------------------------------------------------------------ */
/* Reading the domain keys                                                  */
/* ------------------------------------------------------------------------ */

static int meta_line(const taso_axiom_t *a, const char *key) {
  for (int i = 0; i < a->nmeta; i++)
    if (!strcmp(a->meta[i].key, key)) return a->meta[i].line;
  return a->line;
}

#define DOMAIN_ERR(a, line, ...) domain_error((a), (line), __VA_ARGS__)

static taso_err_t domain_error(const taso_axiom_t *a, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static taso_err_t domain_error(const taso_axiom_t *a, int line, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return taso_error(TASO_ERR_PARSE, "%s:%d: %s (in axiom %s)", a->file, line, msg, a->name);
}

static bool is_ident(const char *s) {
  if (!isalpha((unsigned char)*s) && *s != '_') return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

static int find_var(const entry_t *e, const char *name) {
  for (int i = 0; i < e->nvars; i++)
    if (!strcmp(e->names[i], name)) return i;
  return -1;
}

static taso_err_t add_var(const taso_axiom_t *a, int line, entry_t *e, const char *name,
                          const int32_t *vals, int n) {
  if (find_var(e, name) >= 0) return TASO_OK;
  if (e->nvars == MAX_VARS) return DOMAIN_ERR(a, line, "more than %d domain variables", MAX_VARS);
  if (strlen(name) >= NAME_LEN) return DOMAIN_ERR(a, line, "variable name '%s' too long", name);
  snprintf(e->names[e->nvars], NAME_LEN, "%s", name);
  memcpy(e->vals[e->nvars], vals, sizeof *vals * (size_t)n);
  e->nvals[e->nvars++] = n;
  return TASO_OK;
}

/* Splits "NAME = REST" of a meta value. */
static bool split_eq(const char *value, char *name, size_t nlen, const char **rest) {
  const char *eq = strchr(value, '=');
  if (!eq) return false;
  size_t n = (size_t)(eq - value);
  while (n > 0 && isspace((unsigned char)value[n - 1]))
    n--;
  if (n == 0 || n >= nlen) return false;
  memcpy(name, value, n);
  name[n] = '\0';
  *rest = eq + 1;
  while (isspace((unsigned char)**rest))
    (*rest)++;
  return true;
}

/* Whether name is listed in any "@kernel" line. */
static bool is_kernel(const taso_axiom_t *a, const char *name) {
  for (int i = 0; i < a->nmeta; i++) {
    if (strcmp(a->meta[i].key, "kernel")) continue;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a->meta[i].value);
    for (char *s = NULL, *t = strtok_r(buf, " \t,", &s); t; t = strtok_r(NULL, " \t,", &s))
      if (!strcmp(t, name)) return true;
  }
  return false;
}

/* Declares the dimension variables a DIMS text names (first pass). */
static taso_err_t declare_dims(const taso_axiom_t *a, int line, entry_t *e, const char *dims,
                               const int32_t *sizes, int nsizes) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", dims);
  for (char *s = NULL, *t = strtok_r(buf, " \t", &s); t; t = strtok_r(NULL, " \t", &s)) {
    if (!strcmp(t, "*") || !strcmp(t, "scalar") || isdigit((unsigned char)*t)) continue;
    if (t[0] == '[') {
      char *eq = strchr(t, '=');
      if (!eq || !is_ident(eq + 1)) return DOMAIN_ERR(a, line, "expected '[a]=e' in '%s'", dims);
      t = eq + 1;
    }
    if (!is_ident(t)) return DOMAIN_ERR(a, line, "bad dimension '%s' in '%s'", t, dims);
    if (is_kernel(a, t))
      TASO_TRY(add_var(a, line, e, t, kernel_sizes, 2));
    else
      TASO_TRY(add_var(a, line, e, t, sizes, nsizes));
  }
  return TASO_OK;
}

static taso_err_t token(const taso_axiom_t *a, int line, const entry_t *e, const char *t,
                        int *tok) {
  if (isdigit((unsigned char)*t)) {
    long v = strtol(t, NULL, 10);
    if (v < 0 || v > 1 << 20) return DOMAIN_ERR(a, line, "number '%s' out of range", t);
    *tok = -1 - (int)v;
    return TASO_OK;
  }
  if ((*tok = find_var(e, t)) < 0) return DOMAIN_ERR(a, line, "unknown variable '%s'", t);
  return TASO_OK;
}

/* Parses a DIMS text into a spec (second pass: every variable known). */
static taso_err_t parse_spec(const taso_axiom_t *a, int line, const entry_t *e, const char *dims,
                             spec_t *sp) {
  char buf[256];
  memset(sp, 0, sizeof *sp);
  sp->axis_var = sp->dim_var = -1;
  snprintf(buf, sizeof buf, "%s", dims);
  for (char *s = NULL, *t = strtok_r(buf, " \t", &s); t; t = strtok_r(NULL, " \t", &s)) {
    if (!strcmp(t, "scalar")) {
      sp->scalar = true;
    } else if (!strcmp(t, "*")) {
      if (e->rank == 0) return DOMAIN_ERR(a, line, "'*' needs a @rank line");
      sp->generic = true;
    } else if (t[0] == '[') {
      char *close = strchr(t, ']');
      if (!sp->generic || !close || close[1] != '=')
        return DOMAIN_ERR(a, line, "expected '* [a]=e' in '%s'", dims);
      *close = '\0';
      if ((sp->axis_var = find_var(e, t + 1)) < 0)
        return DOMAIN_ERR(a, line, "'%s' is not a @param", t + 1);
      TASO_TRY(token(a, line, e, close + 2, &sp->dim_var));
    } else {
      if (sp->n == TASO_MAX_RANK)
        return DOMAIN_ERR(a, line, "more than 4 dimensions in '%s'", dims);
      TASO_TRY(token(a, line, e, t, &sp->tok[sp->n++]));
    }
  }
  if ((sp->scalar && (sp->generic || sp->n)) || (sp->generic && sp->n) ||
      (!sp->scalar && !sp->generic && sp->n == 0))
    return DOMAIN_ERR(a, line, "bad shape '%s'", dims);
  return TASO_OK;
}

static taso_err_t parse_where(const taso_axiom_t *a, int line, entry_t *e, const char *text) {
  static const char *ops[] = {"<=", "<", ">=", ">", "==", "!="};
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  char *s = buf;
  for (;;) {
    char *amp = strstr(s, "&&");
    if (amp) *amp = '\0';
    char l[NAME_LEN + 8], o[4], r[NAME_LEN + 8];
    int used = 0;
    if (e->nwhere == MAX_WHERE) return DOMAIN_ERR(a, line, "more than %d comparisons", MAX_WHERE);
    if (sscanf(s, " %23[A-Za-z0-9_] %3[<>=!] %23[A-Za-z0-9_] %n", l, o, r, &used) != 3 ||
        s[used] != '\0')
      return DOMAIN_ERR(
          a, line, "expected 'X OP Y [&& ...]' with OP one of <= < >= > == !=, got '%s'", text);
    cmp_t *c = &e->where[e->nwhere];
    c->op = -1;
    for (int k = 0; k < 6; k++)
      if (!strcmp(o, ops[k])) c->op = k;
    if (c->op < 0) return DOMAIN_ERR(a, line, "unknown comparison '%s'", o);
    TASO_TRY(token(a, line, e, l, &c->lhs));
    TASO_TRY(token(a, line, e, r, &c->rhs));
    e->nwhere++;
    if (!amp) break;
    s = amp + 2;
  }
  return TASO_OK;
}

/* Builds the entry of rank R: variables and their ranges, shapes. */
static taso_err_t build_entry(vaxiom_t *v, int rank, const int32_t *sizes, int nsizes, entry_t *e) {
  const taso_axiom_t *a = v->a;
  memset(e, 0, sizeof *e);
  e->rank = rank;
  for (int d = 0; d < rank; d++) {
    char name[16];
    snprintf(name, sizeof name, "d%d", d);
    TASO_TRY(add_var(a, meta_line(a, "rank"), e, name, sizes, nsizes));
  }
  /* Dimension variables, in order of first appearance. */
  for (int i = 0; i < a->nmeta; i++) {
    const taso_axiom_meta_t *m = &a->meta[i];
    char name[NAME_LEN];
    const char *rest;
    if (!strcmp(m->key, "shape") || !strcmp(m->key, "const")) {
      if (!split_eq(m->value, name, sizeof name, &rest))
        return DOMAIN_ERR(a, m->line, "expected 'NAME = DIMS', got '%s'", m->value);
      TASO_TRY(declare_dims(a, m->line, e, rest, sizes, nsizes));
    } else if (!strcmp(m->key, "kernel")) {
      TASO_TRY(declare_dims(a, m->line, e, m->value, sizes, nsizes));
    }
  }
  /* Parameters, in the order listed. */
  for (int i = 0; i < a->nmeta; i++) {
    const taso_axiom_meta_t *m = &a->meta[i];
    if (strcmp(m->key, "param")) continue;
    char name[NAME_LEN], buf[256];
    const char *rest;
    int32_t vals[TASO_MAX_SIZES + 4];
    int n = 0;
    if (!split_eq(m->value, name, sizeof name, &rest) || !is_ident(name))
      return DOMAIN_ERR(a, m->line, "expected 'NAME = v1,v2' or 'NAME = axes', got '%s'", m->value);
    if (find_var(e, name) >= 0) return DOMAIN_ERR(a, m->line, "'%s' declared twice", name);
    if (!strcmp(rest, "axes")) {
      if (rank == 0) return DOMAIN_ERR(a, m->line, "'axes' needs a @rank line");
      for (int d = 0; d < rank; d++)
        vals[n++] = d;
    } else {
      snprintf(buf, sizeof buf, "%s", rest);
      for (char *s = NULL, *t = strtok_r(buf, " \t,", &s); t; t = strtok_r(NULL, " \t,", &s)) {
        char *end;
        long x = strtol(t, &end, 10);
        if (*end || end == t || x < 0 || x > 1 << 20 || n == TASO_MAX_SIZES + 4)
          return DOMAIN_ERR(a, m->line, "bad value list '%s'", rest);
        vals[n++] = (int32_t)x;
      }
      if (n == 0) return DOMAIN_ERR(a, m->line, "empty value list");
    }
    TASO_TRY(add_var(a, m->line, e, name, vals, n));
  }
  e->count = 1;
  for (int i = 0; i < e->nvars; i++)
    e->count *= e->nvals[i];
  /* Shapes of the tensor variables, then of the constants. */
  bool shaped[MAX_BOUND] = {false};
  for (int i = 0; i < a->nmeta; i++) {
    const taso_axiom_meta_t *m = &a->meta[i];
    char name[NAME_LEN];
    const char *rest;
    if (strcmp(m->key, "shape") && strcmp(m->key, "const")) continue;
    split_eq(m->value, name, sizeof name, &rest);
    if (!strcmp(m->key, "shape")) {
      int b = -1;
      for (int k = 0; k < v->nb; k++)
        if (!v->bint[k] && !strcmp(v->bname[k], name)) b = k;
      if (b < 0)
        return DOMAIN_ERR(a, m->line, "'%s' is not a tensor variable of the formula", name);
      TASO_TRY(parse_spec(a, m->line, e, rest, &e->tshape[b]));
      shaped[b] = true;
    } else {
      taso_op_kind_t k = taso_op_lookup(name);
      if (k == TASO_OP_COUNT || taso_ops[k].arity != 0)
        return DOMAIN_ERR(a, m->line, "'%s' is not a constant operator", name);
      TASO_TRY(parse_spec(a, m->line, e, rest, &e->cshape[k]));
      e->has_const[k] = true;
    }
  }
  for (int b = 0; b < v->nb; b++)
    if (!v->bint[b] && !shaped[b])
      return DOMAIN_ERR(a, a->line, "tensor variable '%s' has no @shape", v->bname[b]);
  for (int b = 0; b < v->nb; b++)
    e->ivar[b] = v->bint[b] ? find_var(e, v->bname[b]) : -1;
  for (int i = 0; i < a->nmeta; i++)
    if (!strcmp(a->meta[i].key, "where"))
      TASO_TRY(parse_where(a, a->meta[i].line, e, a->meta[i].value));
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading the formula                                                      */
/* ------------------------------------------------------------------------ */

static taso_err_t formula_error(const vaxiom_t *v, const char *fmt, const char *what) {
  return taso_error(TASO_ERR_PARSE, "%s:%d: %s%s (in axiom %s)", v->a->file, v->a->line, fmt,
                    what ? what : "", v->a->name);
}

/* The bound variable an expression is, or -1. */
static int bound_of(Z3_context c, const vaxiom_t *v, Z3_ast e) {
  if (Z3_get_ast_kind(c, e) != Z3_VAR_AST) return -1;
  unsigned idx = Z3_get_index_value(c, e);
  return idx < (unsigned)v->nb ? v->nb - 1 - (int)idx : -1;
}

static taso_err_t int_arg(Z3_context c, const vaxiom_t *v, Z3_ast e, int *out) {
  int b = bound_of(c, v, e), x;
  if (b >= 0 && v->bint[b]) {
    *out = b;
    return TASO_OK;
  }
  if (Z3_get_ast_kind(c, e) == Z3_NUMERAL_AST && Z3_get_numeral_int(c, e, &x) && x >= 0) {
    *out = -1 - x;
    return TASO_OK;
  }
  return formula_error(v, "an integer argument must be a variable or a number >= 0", NULL);
}

static taso_err_t side(Z3_context c, vaxiom_t *v, Z3_ast e, int *out) {
  int b = bound_of(c, v, e);
  if (v->nn == MAX_TNODES) return formula_error(v, "too many operators", NULL);
  tnode_t t = {.kind = TASO_OP_INPUT, .arg = b};
  if (b >= 0) {
    if (v->bint[b]) return formula_error(v, "an integer variable used as a tensor", NULL);
    v->nodes[v->nn] = t;
    *out = v->nn++;
    return TASO_OK;
  }
  if (Z3_get_ast_kind(c, e) != Z3_APP_AST)
    return formula_error(v, "unexpected term in a side", NULL);
  Z3_app app = Z3_to_app(c, e);
  Z3_func_decl d = Z3_get_app_decl(c, app);
  char name[64];
  snprintf(name, sizeof name, "%s", Z3_get_symbol_string(c, Z3_get_decl_name(c, d)));
  size_t len = strlen(name);
  if (!strncmp(name, "split", 5) && (name[len - 1] == '0' || name[len - 1] == '1') && len == 6) {
    t.port = name[5] - '0';
    name[5] = '\0';
  }
  taso_op_kind_t k = taso_op_lookup(name);
  if (k == TASO_OP_COUNT) return formula_error(v, "no operator for function ", name);
  t.kind = k;
  unsigned n = Z3_get_app_num_args(c, app);
  int arity = taso_ops[k].arity;
  if ((int)n < arity || (int)n - arity > TASO_DECL_MAX_ARGS)
    return formula_error(v, "wrong argument count for ", name);
  t.nint = (int)n - arity;
  for (int i = 0; i < t.nint; i++)
    TASO_TRY(int_arg(c, v, Z3_get_app_arg(c, app, (unsigned)i), &t.iarg[i]));
  t.nkid = arity;
  for (int i = 0; i < arity; i++)
    TASO_TRY(side(c, v, Z3_get_app_arg(c, app, (unsigned)(t.nint + i)), &t.kid[i]));
  if (v->nn == MAX_TNODES) return formula_error(v, "too many operators", NULL);
  v->nodes[v->nn] = t;
  *out = v->nn++;
  return TASO_OK;
}

static taso_err_t guard(Z3_context c, vaxiom_t *v, Z3_ast e, int *out) {
  if (v->ng == MAX_GUARD) return formula_error(v, "guard too large", NULL);
  gnode_t g = {0};
  int b = bound_of(c, v, e), x;
  Z3_ast_kind kind = Z3_get_ast_kind(c, e);
  if (b >= 0) {
    if (!v->bint[b]) return formula_error(v, "a tensor variable in the guard", NULL);
    g.op = G_VAR;
    g.value = b;
  } else if (kind == Z3_NUMERAL_AST) {
    if (!Z3_get_numeral_int(c, e, &x))
      return formula_error(v, "a number out of range in the guard", NULL);
    g.op = G_CONST;
    g.value = x;
  } else if (kind == Z3_APP_AST &&
             Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, e))) == Z3_OP_UNINTERPRETED) {
    /* a shape fact: (dim a x), (splits a x) or (rank x) of a tensor variable x */
    Z3_app app = Z3_to_app(c, e);
    const char *fn = Z3_get_symbol_string(c, Z3_get_decl_name(c, Z3_get_app_decl(c, app)));
    unsigned nargs = Z3_get_app_num_args(c, app);
    bool axis = strcmp(fn, "rank") != 0;
    if ((strcmp(fn, "dim") && strcmp(fn, "splits") && axis) || nargs != 1u + axis)
      return formula_error(v, "unsupported function in the guard: ", fn);
    g.op = !axis ? G_RANK : strcmp(fn, "dim") ? G_SPLITS : G_DIM;
    int t = bound_of(c, v, Z3_get_app_arg(c, app, axis));
    if (t < 0 || v->bint[t])
      return formula_error(
          v, "a shape fact in the guard of something other than a tensor variable: ", fn);
    g.value = t;
    g.nkid = axis;
    if (axis) TASO_TRY(guard(c, v, Z3_get_app_arg(c, app, 0), &g.kid[0]));
  } else if (kind == Z3_APP_AST) {
    Z3_app app = Z3_to_app(c, e);
    unsigned n = Z3_get_app_num_args(c, app);
    switch (Z3_get_decl_kind(c, Z3_get_app_decl(c, app))) {
    case Z3_OP_TRUE:
      g.op = G_CONST;
      g.value = 1;
      break;
    case Z3_OP_FALSE:
      g.op = G_CONST;
      g.value = 0;
      break;
    case Z3_OP_AND:
      g.op = G_AND;
      break;
    case Z3_OP_OR:
      g.op = G_OR;
      break;
    case Z3_OP_NOT:
      g.op = G_NOT;
      break;
    case Z3_OP_EQ:
      g.op = G_EQ;
      break;
    case Z3_OP_LE:
      g.op = G_LE;
      break;
    case Z3_OP_LT:
      g.op = G_LT;
      break;
    case Z3_OP_GE:
      g.op = G_GE;
      break;
    case Z3_OP_GT:
      g.op = G_GT;
      break;
    case Z3_OP_ADD:
      g.op = G_ADD;
      break;
    case Z3_OP_SUB:
      g.op = G_SUB;
      break;
    case Z3_OP_MUL:
      g.op = G_MUL;
      break;
    case Z3_OP_MOD:
      g.op = G_MOD;
      break;
    case Z3_OP_IDIV:
      g.op = G_DIV;
      break;
    case Z3_OP_UMINUS:
      g.op = G_NEG;
      break;
    default:
      return formula_error(v, "unsupported operation in the guard", NULL);
    }
    if (g.op != G_CONST) {
      if (n > 4 || n == 0) return formula_error(v, "too many operands in the guard", NULL);
      g.nkid = (int)n;
      for (unsigned i = 0; i < n; i++)
        TASO_TRY(guard(c, v, Z3_get_app_arg(c, app, i), &g.kid[i]));
    }
  } else {
    return formula_error(v, "unsupported guard", NULL);
  }
  if (v->ng == MAX_GUARD) return formula_error(v, "guard too large", NULL);
  v->guard[v->ng] = g;
  *out = v->ng++;
  return TASO_OK;
}

/* Reads the formula: bound variables, guard, the two sides. */
static taso_err_t read_formula(const taso_axioms_t *ax, Z3_context c, Z3_sort t,
                               const Z3_func_decl *fns, vaxiom_t *v) {
  Z3_ast_vector vec;
  TASO_TRY(taso_axioms_parse(ax, c, t, fns, v->a->file, v->a->text, 0, NULL, NULL, &vec));
  Z3_ast_vector_inc_ref(c, vec);
  taso_err_t err = TASO_OK;
  Z3_ast f = Z3_ast_vector_size(c, vec) == 1 ? Z3_ast_vector_get(c, vec, 0) : NULL;
  Z3_ast body = f;
  v->nb = 0;
  v->groot = -1;
  if (!f) err = formula_error(v, "expected exactly one assertion", NULL);
  if (err == TASO_OK && Z3_get_ast_kind(c, f) == Z3_QUANTIFIER_AST) {
    if (!Z3_is_quantifier_forall(c, f))
      err = formula_error(v, "expected a forall", NULL);
    else if (Z3_get_quantifier_num_bound(c, f) > MAX_BOUND)
      err = formula_error(v, "too many variables", NULL);
    else {
      v->nb = (int)Z3_get_quantifier_num_bound(c, f);
      Z3_sort ints = Z3_mk_int_sort(c);
      for (int b = 0; b < v->nb; b++) {
        snprintf(v->bname[b], NAME_LEN, "%s",
                 Z3_get_symbol_string(c, Z3_get_quantifier_bound_name(c, f, (unsigned)b)));
        v->bint[b] = Z3_is_eq_sort(c, Z3_get_quantifier_bound_sort(c, f, (unsigned)b), ints);
      }
      body = Z3_get_quantifier_body(c, f);
    }
  }
  if (err == TASO_OK && Z3_get_ast_kind(c, body) == Z3_APP_AST &&
      Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, body))) == Z3_OP_IMPLIES) {
    err = guard(c, v, Z3_get_app_arg(c, Z3_to_app(c, body), 0), &v->groot);
    body = Z3_get_app_arg(c, Z3_to_app(c, body), 1);
  }
  if (err == TASO_OK && (Z3_get_ast_kind(c, body) != Z3_APP_AST ||
                         Z3_get_decl_kind(c, Z3_get_app_decl(c, Z3_to_app(c, body))) != Z3_OP_EQ))
    err = formula_error(v, "expected an equation of two tensors", NULL);
  if (err == TASO_OK) err = side(c, v, Z3_get_app_arg(c, Z3_to_app(c, body), 0), &v->lhs);
  if (err == TASO_OK) err = side(c, v, Z3_get_app_arg(c, Z3_to_app(c, body), 1), &v->rhs);
  Z3_ast_vector_dec_ref(c, vec);
  char msg[256];
  if (err == TASO_OK && taso_z3_take_error(msg, sizeof msg)) err = formula_error(v, "Z3: ", msg);
  return err;
}

/* Every integer variable a side or guard reads must have a domain;
 * const_imm and const_one take their shape from @const instead. */
static taso_err_t check_ints(const vaxiom_t *v) {
  for (int e = 0; e < v->nentries; e++) {
    const entry_t *en = &v->entries[e];
    for (int i = 0; i < v->nn; i++) {
      const tnode_t *t = &v->nodes[i];
      if (t->kind == TASO_OP_CONST_IMM || t->kind == TASO_OP_CONST_ONE) continue;
      for (int k = 0; k < t->nint; k++)
        if (t->iarg[k] >= 0 && en->ivar[t->iarg[k]] < 0)
          return DOMAIN_ERR(v->a, v->a->line,
                            "integer variable '%s' has no domain (@param or a dimension)",
                            v->bname[t->iarg[k]]);
      if (t->kind != TASO_OP_INPUT && taso_ops[t->kind].arity == 0 && !en->has_const[t->kind])
        return DOMAIN_ERR(v->a, v->a->line, "%s needs a '@const %s = DIMS' line",
                          taso_ops[t->kind].name, taso_ops[t->kind].name);
    }
    for (int i = 0; i < v->ng; i++)
      if (v->guard[i].op == G_VAR && en->ivar[v->guard[i].value] < 0)
        return DOMAIN_ERR(v->a, v->a->line, "guard variable '%s' has no domain",
                          v->bname[v->guard[i].value]);
  }
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Plans                                                                    */
/* ------------------------------------------------------------------------ */

taso_err_t taso_plan_new(const taso_axioms_t *ax, const int32_t *sizes, int nsizes,
                         const char *only, taso_plan_t **out) {
  *out = NULL;
  if (nsizes < 1) return taso_error(TASO_ERR_ARG, "no tensor sizes");
  taso_plan_t *p = calloc(1, sizeof *p);
  if (!p || !(p->v = calloc((size_t)(ax->n ? ax->n : 1), sizeof *p->v))) {
    free(p);
    return taso_error(TASO_ERR_NOMEM, "no memory for a validation plan");
  }
  p->ax = ax;
  Z3_context c = NULL;
  Z3_func_decl *fns = malloc(sizeof *fns * (size_t)(ax->ndecls ? ax->ndecls : 1));
  Z3_sort t;
  taso_err_t err = fns ? taso_z3_open(0, &c) : taso_error(TASO_ERR_NOMEM, "no memory");
  if (err == TASO_OK) taso_axioms_declare(ax, c, &t, fns);
  for (int i = 0; i < ax->n && err == TASO_OK; i++) {
    const taso_axiom_t *a = &ax->v[i];
    const char *check = taso_axiom_meta(a, "check", 0);
    if (!a->enabled || !taso_axioms_listed(only, ',', a->name) || (check && !strcmp(check, "none")))
      continue;
    if (check && strcmp(check, "none")) {
      err = DOMAIN_ERR(a, meta_line(a, "check"), "@check takes only 'none', got '%s'", check);
      break;
    }
    const char *relu = taso_axiom_meta(a, "relu", 0);
    if (relu && strcmp(relu, "max")) {
      err = DOMAIN_ERR(a, meta_line(a, "relu"), "@relu takes only 'max', got '%s'", relu);
      break;
    }
    vaxiom_t *v = &p->v[p->n];
    v->a = a;
    v->relu_max = relu != NULL;
    if ((err = read_formula(ax, c, t, fns, v)) != TASO_OK) break;
    int ranks[MAX_ENTRIES], nr = 0;
    const char *rk = taso_axiom_meta(a, "rank", 0);
    if (rk) {
      char buf[64];
      snprintf(buf, sizeof buf, "%s", rk);
      for (char *s = NULL, *tk = strtok_r(buf, " ,", &s); tk && err == TASO_OK;
           tk = strtok_r(NULL, " ,", &s)) {
        char *end;
        long r = strtol(tk, &end, 10);
        if (*end || r < 1 || r > TASO_MAX_RANK || nr == MAX_ENTRIES)
          err = DOMAIN_ERR(a, meta_line(a, "rank"), "bad rank list '%s'", rk);
        else
          ranks[nr++] = (int)r;
      }
      if (err == TASO_OK && nr == 0) err = DOMAIN_ERR(a, meta_line(a, "rank"), "empty rank list");
    } else {
      ranks[nr++] = 0;
    }
    v->nentries = nr;
    v->count = 0;
    for (int r = 0; r < nr && err == TASO_OK; r++) {
      err = build_entry(v, ranks[r], sizes, nsizes, &v->entries[r]);
      v->count += v->entries[r].count;
    }
    if (err == TASO_OK) err = check_ints(v);
    if (err != TASO_OK) break;
    v->first = p->total;
    p->total += v->count;
    p->n++;
  }
  if (c) taso_z3_close(c);
  free(fns);
  if (err != TASO_OK) {
    taso_plan_free(p);
    return err;
  }
  *out = p;
  return TASO_OK;
}

void taso_plan_free(taso_plan_t *p) {
  if (!p) return;
  free(p->v);
  free(p);
}

int64_t taso_plan_total(const taso_plan_t *p) {
  return p->total;
}
int taso_plan_naxioms(const taso_plan_t *p) {
  return p->n;
}
const char *taso_plan_name(const taso_plan_t *p, int axiom) {
  return p->v[axiom].a->name;
}
int64_t taso_plan_count(const taso_plan_t *p, int axiom) {
  return p->v[axiom].count;
}
int64_t taso_plan_first(const taso_plan_t *p, int axiom) {
  return p->v[axiom].first;
}

const char *taso_check_outcome_name(int outcome) {
  switch (outcome) {
  case TASO_CHECK_PROVED:
    return "proved";
  case TASO_CHECK_COUNTEREXAMPLE:
    return "counterexample";
  case TASO_CHECK_SKIPPED:
    return "skipped";
  case TASO_CHECK_UNKNOWN:
    return "unknown";
  }
  return "?";
}

const char *taso_check_path_name(int path) {
  switch (path) {
  case TASO_PATH_SHAPE:
    return "shape";
  case TASO_PATH_POLY:
    return "poly";
  case TASO_PATH_Z3:
    return "z3";
  }
  return "?";
}

/* ------------------------------------------------------------------------ */
/* Z3 terms from the same evaluator                                         */
/* ------------------------------------------------------------------------ */

typedef struct {
  Z3_context c;
  Z3_sort real;
  Z3_func_decl relu;
  bool relu_max; /* the axiom at hand has @relu max */
} zctx_t;

static Z3_ast z_add(zctx_t *z, Z3_ast a, Z3_ast b) {
  Z3_ast args[2] = {a, b};
  return Z3_mk_add(z->c, 2, args);
}

static Z3_ast z_mul(zctx_t *z, Z3_ast a, Z3_ast b) {
  Z3_ast args[2] = {a, b};
  return Z3_mk_mul(z->c, 2, args);
}

/* relu as the polynomial path has it: exact on a number (the all-ones and
 * identity constants), an uninterpreted function with relu(0) = 0 on
 * anything else; max(v, 0) itself for an axiom with @relu max, which
 * holds for relu but not for every function with f(0) = 0 (X31: relu(z)
 * is never negative). */
static Z3_ast z_relu(zctx_t *z, Z3_ast a) {
  int64_t num, den;
  Z3_ast zero = Z3_mk_real(z->c, 0, 1);
  if (Z3_is_numeral_ast(z->c, a) && Z3_get_numeral_rational_int64(z->c, a, &num, &den))
    return num > 0 ? a : zero;
  if (z->relu_max) return Z3_mk_ite(z->c, Z3_mk_gt(z->c, a, zero), a, zero);
  return Z3_mk_app(z->c, z->relu, 1, (Z3_ast[]){a});
}

#define NUM_T Z3_ast
#define NUM_CTX_T zctx_t *
#define NUM_SUFFIX z3
#define NUM_ZERO(c) Z3_mk_real((c)->c, 0, 1)
#define NUM_ONE(c) Z3_mk_real((c)->c, 1, 1)
#define NUM_FRAC(c, p, q) Z3_mk_real((c)->c, (p), (q))
#define NUM_ADD(c, a, b) z_add((c), (a), (b))
#define NUM_MUL(c, a, b) z_mul((c), (a), (b))
#define NUM_RELU(c, a) z_relu((c), (a))
#define NUM_MAX(c, a, b) Z3_mk_ite((c)->c, Z3_mk_ge((c)->c, (a), (b)), (a), (b))
#include "eval_impl.h"

/* ------------------------------------------------------------------------ */
/* Checkers                                                                 */
/* ------------------------------------------------------------------------ */

struct taso_checker {
  const taso_plan_t *plan;
  unsigned timeout_ms;
  bool z3_only;
  taso_poly_ctx_t *poly;
  zctx_t z; /* z.c NULL until first needed */
  int z3_uses;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

taso_err_t taso_checker_new(const taso_plan_t *p, double timeout_s, bool z3_only,
                            taso_checker_t **out) {
  taso_checker_t *ch = calloc(1, sizeof *ch);
  if (!ch) return taso_error(TASO_ERR_NOMEM, "no memory for a checker");
  ch->plan = p;
  double ms = timeout_s * 1000.0;
  ch->timeout_ms = ms < 1 ? 1 : ms > 4e9 ? 4000000000u : (unsigned)ms;
  ch->z3_only = z3_only;
  taso_err_t err = taso_poly_ctx_new(&ch->poly);
  if (err != TASO_OK) {
    free(ch);
    return err;
  }
  *out = ch;
  return TASO_OK;
}

static void z3_drop(taso_checker_t *ch) {
  if (ch->z.c) taso_z3_close(ch->z.c);
  ch->z.c = NULL;
}

void taso_checker_free(taso_checker_t *ch) {
  if (!ch) return;
  z3_drop(ch);
  taso_poly_ctx_free(ch->poly);
  free(ch);
}

/* A fresh context now and then: a context without reference counting
 * keeps every term it ever built. */
static taso_err_t z3_ready(taso_checker_t *ch) {
  if (ch->z.c && ch->z3_uses >= Z3_REFRESH) z3_drop(ch);
  if (!ch->z.c) {
    TASO_TRY(taso_z3_open(ch->timeout_ms, &ch->z.c));
    ch->z.real = Z3_mk_real_sort(ch->z.c);
    ch->z.relu =
        Z3_mk_func_decl(ch->z.c, Z3_mk_string_symbol(ch->z.c, "relu"), 1, &ch->z.real, ch->z.real);
    ch->z3_uses = 0;
  }
  ch->z3_uses++;
  return TASO_OK;
}

/* The combination's values: its axiom, entry and every variable. */
typedef struct {
  const vaxiom_t *v;
  const entry_t *e;
  int32_t val[MAX_VARS];
  int64_t ival[MAX_BOUND];
} combo_t;

static void locate(const taso_plan_t *p, int64_t index, int *axiom, combo_t *cb) {
  int lo = 0, hi = p->n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (p->v[mid].first <= index)
      lo = mid;
    else
      hi = mid - 1;
  }
  const vaxiom_t *v = &p->v[lo];
  int64_t local = index - v->first;
  int e = 0;
  while (local >= v->entries[e].count)
    local -= v->entries[e++].count;
  *axiom = lo;
  cb->v = v;
  cb->e = &v->entries[e];
  /* Mixed radix, the last variable fastest. */
  for (int i = cb->e->nvars - 1; i >= 0; i--) {
    cb->val[i] = cb->e->vals[i][local % cb->e->nvals[i]];
    local /= cb->e->nvals[i];
  }
  for (int b = 0; b < v->nb; b++)
    cb->ival[b] = cb->e->ivar[b] >= 0 ? cb->val[cb->e->ivar[b]] : 0;
}

static int32_t tokval(const combo_t *cb, int tok) {
  return tok >= 0 ? cb->val[tok] : -1 - tok;
}

/* The shape a spec gives; false when it cannot be formed (an axis past the rank). */
static bool spec_shape(const combo_t *cb, const spec_t *sp, int *rank, int32_t *dim) {
  memset(dim, 0, sizeof *dim * TASO_MAX_RANK);
  if (sp->scalar) {
    *rank = 0;
    return true;
  }
  if (sp->generic) {
    *rank = cb->e->rank;
    for (int d = 0; d < *rank; d++)
      dim[d] = cb->val[d]; /* d0.. are the first variables */
    if (sp->axis_var >= 0) {
      int a = cb->val[sp->axis_var];
      if (a < 0 || a >= *rank) return false;
      dim[a] = tokval(cb, sp->dim_var);
    }
    return true;
  }
  *rank = sp->n;
  for (int d = 0; d < sp->n; d++)
    dim[d] = tokval(cb, sp->tok[d]);
  return true;
}

/* The value of guard node k on a combination (booleans as 0 and 1). */
static int64_t guard_eval(const combo_t *cb, int k) {
  const gnode_t *g = &cb->v->guard[k];
  int64_t r[4] = {0};
  for (int i = 0; i < g->nkid; i++)
    r[i] = guard_eval(cb, g->kid[i]);
  int64_t acc;
  switch (g->op) {
  case G_CONST:
    return g->value;
  case G_VAR:
    return cb->ival[g->value];
  case G_DIM: {
    int rank;
    int32_t dim[TASO_MAX_RANK];
    if (!spec_shape(cb, &cb->e->tshape[g->value], &rank, dim) || r[0] < 0 || r[0] >= rank) return 0;
    return dim[r[0]];
  }
  case G_SPLITS:
    return 0;
  case G_RANK: {
    int rank;
    int32_t dim[TASO_MAX_RANK];
    return spec_shape(cb, &cb->e->tshape[g->value], &rank, dim) ? rank : -1;
  }
  case G_AND:
    acc = 1;
    for (int i = 0; i < g->nkid; i++)
      acc = acc && r[i];
    return acc;
  case G_OR:
    acc = 0;
    for (int i = 0; i < g->nkid; i++)
      acc = acc || r[i];
    return acc;
  case G_NOT:
    return !r[0];
  case G_EQ:
    return r[0] == r[1];
  case G_LE:
    return r[0] <= r[1];
  case G_LT:
    return r[0] < r[1];
  case G_GE:
    return r[0] >= r[1];
  case G_GT:
    return r[0] > r[1];
  case G_ADD:
    acc = 0;
    for (int i = 0; i < g->nkid; i++)
      acc += r[i];
    return acc;
  case G_SUB:
    return g->nkid == 1 ? -r[0] : r[0] - r[1];
  case G_MUL:
    acc = 1;
    for (int i = 0; i < g->nkid; i++)
      acc *= r[i];
    return acc;
  /* SMT-LIB's mod and div: the remainder is never negative. */
  case G_MOD:
    return r[1] == 0 ? 0 : ((r[0] % r[1]) + (r[1] < 0 ? -r[1] : r[1])) % (r[1] < 0 ? -r[1] : r[1]);
  case G_DIV: {
    if (r[1] == 0) return 0;
    int64_t m = ((r[0] % r[1]) + (r[1] < 0 ? -r[1] : r[1])) % (r[1] < 0 ? -r[1] : r[1]);
    return (r[0] - m) / r[1];
  }
  case G_NEG:
    return -r[0];
  }
  return 0;
}

static bool where_holds(const combo_t *cb) {
  for (int i = 0; i < cb->e->nwhere; i++) {
    const cmp_t *c = &cb->e->where[i];
    int32_t l = tokval(cb, c->lhs), r = tokval(cb, c->rhs);
    bool ok = c->op == 0   ? l <= r
              : c->op == 1 ? l < r
              : c->op == 2 ? l >= r
              : c->op == 3 ? l > r
              : c->op == 4 ? l == r
                           : l != r;
    if (!ok) return false;
  }
  return true;
}

static int32_t iarg(const combo_t *cb, int a) {
  return a >= 0 ? (int32_t)cb->ival[a] : -1 - a;
}

/* Adds template node k of the combination to g. */
static taso_err_t add_node(const combo_t *cb, const int *input_of, int k, taso_graph_t *g,
                           taso_ref_t *ref) {
  const tnode_t *t = &cb->v->nodes[k];
  if (t->kind == TASO_OP_INPUT) return taso_graph_add_input(g, input_of[t->arg], ref);
  taso_ref_t in[3] = {-1, -1, -1};
  for (int i = 0; i < t->nkid; i++)
    TASO_TRY(add_node(cb, input_of, t->kid[i], g, &in[i]));
  taso_params_t p = taso_params_default();
  int32_t x[TASO_DECL_MAX_ARGS] = {0};
  for (int i = 0; i < t->nint; i++)
    x[i] = iarg(cb, t->iarg[i]);
  switch ((taso_op_kind_t)t->kind) {
  case TASO_OP_TRANSPOSE:
    p.layout = x[0];
    break;
  case TASO_OP_MATMUL:
    p.act = x[0];
    break;
  case TASO_OP_CONV2D:
    p.stride[0] = x[0];
    p.stride[1] = x[1];
    p.pad = x[2];
    p.act = x[3];
    break;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    p.kernel[0] = x[0];
    p.kernel[1] = x[1];
    p.stride[0] = x[2];
    p.stride[1] = x[3];
    p.pad = x[4];
    break;
  case TASO_OP_CONCAT:
  case TASO_OP_SPLIT:
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
    p.axis = x[0];
    break;
  case TASO_OP_ENLARGE:
  case TASO_OP_CONST_POOL:
  case TASO_OP_CONST_ICONV:
    p.kernel[0] = x[0];
    p.kernel[1] = x[1];
    break;
  default:
    break;
  }
  if (taso_ops[t->kind].arity == 0) {
    int32_t dim[TASO_MAX_RANK];
    if (!spec_shape(cb, &cb->e->cshape[t->kind], &p.rank, dim))
      return taso_error(TASO_ERR_SHAPE, "%s: no shape", taso_ops[t->kind].name);
    memcpy(p.shape, dim, sizeof p.shape);
  }
  TASO_TRY(taso_graph_add(g, (taso_op_kind_t)t->kind, &p, in, ref));
  *ref += t->port;
  return TASO_OK;
}

/* Appends "name=value" pairs or shapes to a row's text. */
static void describe(const combo_t *cb, const taso_inputs_t *in, taso_check_t *row) {
  int used = 0;
  for (int i = 0; i < cb->e->nvars && used < TASO_CHECK_TEXT; i++)
    used += snprintf(row->params + used, (size_t)(TASO_CHECK_TEXT - used), "%s%s=%d", i ? " " : "",
                     cb->e->names[i], cb->val[i]);
  used = 0;
  for (int i = 0; i < in->n && used < TASO_CHECK_TEXT; i++) {
    char s[48];
    if (in->v[i].type.rank == 0)
      snprintf(s, sizeof s, "scalar");
    else
      taso_shape_format(&in->v[i].type, s, sizeof s);
    used += snprintf(row->shapes + used, (size_t)(TASO_CHECK_TEXT - used), "%s%s=%s", i ? " " : "",
                     in->v[i].name, s);
  }
}

/* Writes element k of a tensor of type t as "[i,j,...]". */
static int index_text(const taso_tensor_t *t, int64_t k, char *buf, size_t len) {
  int64_t idx[TASO_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = k % t->dim[d];
    k /= t->dim[d];
  }
  int used = snprintf(buf, len, "[");
  for (int d = 0; d < t->rank; d++)
    used += snprintf(buf + used, len > (size_t)used ? len - (size_t)used : 0, "%s%lld",
                     d ? "," : "", (long long)idx[d]);
  used += snprintf(buf + used, len > (size_t)used ? len - (size_t)used : 0, "]");
  return used;
}

/* Z3's value of e in m as text ("-1/2"). */
static void model_value(Z3_context c, Z3_model m, Z3_ast e, char *buf, size_t len) {
  Z3_ast r = NULL;
  if (Z3_model_eval(c, m, e, true, &r) && r && Z3_get_ast_kind(c, r) == Z3_NUMERAL_AST)
    snprintf(buf, len, "%s", Z3_get_numeral_string(c, r));
  else
    snprintf(buf, len, "?");
}

/* The Z3 path: both sides as real terms, "some element differs" asserted;
 * only elements whose canonical forms differ when differ is given. */
static taso_err_t decide_z3(taso_checker_t *ch, const taso_graph_t *g, const taso_tensor_t *types,
                            const taso_inputs_t *in, const bool *differ, bool relu_max,
                            taso_check_t *row) {
  TASO_TRY(z3_ready(ch));
  zctx_t *z = &ch->z;
  z->relu_max = relu_max;
  Z3_context c = z->c;
  taso_err_t err = TASO_OK;
  Z3_ast **inputs = calloc((size_t)in->n + 1, sizeof *inputs);
  Z3_ast **values = calloc((size_t)(2 * g->nnodes) + 1, sizeof *values);
  if (!inputs || !values) err = taso_error(TASO_ERR_NOMEM, "no memory for Z3 terms");
  for (int i = 0; i < in->n && err == TASO_OK; i++) {
    int64_t size = taso_tensor_size(&in->v[i].type);
    if (!(inputs[i] = malloc(sizeof **inputs * (size_t)size))) {
      err = taso_error(TASO_ERR_NOMEM, "no memory for Z3 terms");
      break;
    }
    for (int64_t k = 0; k < size; k++) {
      char name[64];
      int used = snprintf(name, sizeof name, "%s", in->v[i].name);
      index_text(&in->v[i].type, k, name + used, sizeof name - (size_t)used);
      inputs[i][k] = Z3_mk_const(c, Z3_mk_string_symbol(c, name), z->real);
    }
  }
  if (err == TASO_OK) err = taso_eval_graph_z3(z, g, types, inputs, values);
  if (err == TASO_OK) {
    /* A NULL handle is Z3 out of memory (z3ctx.h): the case becomes
     * unknown below, from the error it left. */
    Z3_solver s = Z3_mk_solver_for_logic(c, Z3_mk_string_symbol(c, "QF_UFNRA"));
    if (s) Z3_solver_inc_ref(c, s);
    Z3_params params = s ? Z3_mk_params(c) : NULL;
    if (params) {
      Z3_params_inc_ref(c, params);
      Z3_params_set_uint(c, params, Z3_mk_string_symbol(c, "timeout"), ch->timeout_ms);
      Z3_solver_set_params(c, s, params);
      Z3_params_dec_ref(c, params);
    }
    Z3_ast zero = Z3_mk_real(c, 0, 1);
    if (params) Z3_solver_assert(c, s, Z3_mk_eq(c, Z3_mk_app(c, z->relu, 1, &zero), zero));
    const taso_tensor_t *t = &types[g->outputs[0]];
    int64_t size = taso_tensor_size(t), nd = 0;
    Z3_ast *ne = malloc(sizeof *ne * (size_t)size);
    if (!ne) err = taso_error(TASO_ERR_NOMEM, "no memory for Z3 terms");
    for (int64_t k = 0; ne && k < size; k++)
      if (!differ || differ[k])
        ne[nd++] = Z3_mk_not(c, Z3_mk_eq(c, values[g->outputs[0]][k], values[g->outputs[1]][k]));
    if (ne && params) {
      Z3_solver_assert(c, s, nd == 1 ? ne[0] : Z3_mk_or(c, (unsigned)nd, ne));
      Z3_lbool r = Z3_solver_check(c, s);
      row->path = TASO_PATH_Z3;
      if (r == Z3_L_FALSE) {
        row->outcome = TASO_CHECK_PROVED;
      } else if (r == Z3_L_TRUE) {
        row->outcome = TASO_CHECK_COUNTEREXAMPLE;
        Z3_model m = Z3_solver_get_model(c, s);
        Z3_model_inc_ref(c, m);
        int used = 0;
        /* The first differing element, then the inputs that are not 0. */
        for (int64_t k = 0; k < size; k++) {
          char l[32], rr[32], at[24];
          model_value(c, m, values[g->outputs[0]][k], l, sizeof l);
          model_value(c, m, values[g->outputs[1]][k], rr, sizeof rr);
          if (!strcmp(l, rr)) continue;
          index_text(t, k, at, sizeof at);
          used = snprintf(row->detail, TASO_CHECK_DETAIL, "out%s: %s vs %s;", at, l, rr);
          break;
        }
        for (int i = 0; i < in->n && used < TASO_CHECK_DETAIL; i++) {
          int64_t n = taso_tensor_size(&in->v[i].type);
          for (int64_t k = 0; k < n && used < TASO_CHECK_DETAIL; k++) {
            char val[32];
            model_value(c, m, inputs[i][k], val, sizeof val);
            if (!strcmp(val, "0") || !strcmp(val, "0.0")) continue;
            char at[24];
            index_text(&in->v[i].type, k, at, sizeof at);
            used += snprintf(row->detail + used, (size_t)(TASO_CHECK_DETAIL - used), " %s%s=%s",
                             in->v[i].name, at, val);
          }
        }
        if (used >= TASO_CHECK_DETAIL)
          memcpy(row->detail + TASO_CHECK_DETAIL - 4, "...", 4);
        else if (used > 0 && row->detail[used - 1] == ';')
          snprintf(row->detail + used, (size_t)(TASO_CHECK_DETAIL - used), " other inputs 0");
        else if (used > 0)
          snprintf(row->detail + used, (size_t)(TASO_CHECK_DETAIL - used), "; other inputs 0");
        Z3_model_dec_ref(c, m);
      } else {
        row->outcome = TASO_CHECK_UNKNOWN;
        snprintf(row->detail, TASO_CHECK_DETAIL, "Z3: %s", Z3_solver_get_reason_unknown(c, s));
      }
    }
    free(ne);
    if (s) Z3_solver_dec_ref(c, s);
  }
  char msg[256];
  if (taso_z3_take_error(msg, sizeof msg)) {
    /* A Z3 failure on one case is that case's outcome; the context is renewed. */
    row->path = TASO_PATH_Z3;
    row->outcome = TASO_CHECK_UNKNOWN;
    snprintf(row->detail, TASO_CHECK_DETAIL, "Z3 error: %.150s", msg);
    z3_drop(ch);
    err = TASO_OK;
  }
  for (int i = 0; inputs && i < in->n; i++)
    free(inputs[i]);
  free(inputs);
  if (values) taso_values_free((void **)values, 2 * g->nnodes);
  free(values);
  return err;
}

/* The polynomial path: true when it proved the case; *differ marks the
 * elements whose forms differ (NULL when the forms are meaningless). */
static taso_err_t decide_poly(taso_checker_t *ch, const taso_graph_t *g, const taso_tensor_t *types,
                              const taso_inputs_t *in, bool *proved, bool **differ) {
  taso_poly_ctx_t *pc = ch->poly;
  taso_err_t err = TASO_OK;
  *proved = false;
  *differ = NULL;
  taso_poly_reset(pc);
  taso_poly_t **inputs = calloc((size_t)in->n + 1, sizeof *inputs);
  taso_poly_t **values = calloc((size_t)(2 * g->nnodes) + 1, sizeof *values);
  if (!inputs || !values) err = taso_error(TASO_ERR_NOMEM, "no memory for polynomials");
  uint32_t next = 0;
  for (int i = 0; i < in->n && err == TASO_OK; i++) {
    int64_t size = taso_tensor_size(&in->v[i].type);
    if (!(inputs[i] = malloc(sizeof **inputs * (size_t)size))) {
      err = taso_error(TASO_ERR_NOMEM, "no memory for polynomials");
      break;
    }
    for (int64_t k = 0; k < size; k++)
      inputs[i][k] = taso_poly_var(pc, next++);
  }
  if (err == TASO_OK) err = taso_eval_graph_poly(pc, g, types, inputs, values);
  if (err == TASO_OK && !taso_poly_overflowed(pc)) {
    int64_t size = taso_tensor_size(&types[g->outputs[0]]);
    const taso_poly_t *l = values[g->outputs[0]], *r = values[g->outputs[1]];
    bool all = true;
    bool *d = calloc((size_t)size, sizeof *d);
    if (!d) err = taso_error(TASO_ERR_NOMEM, "no memory");
    for (int64_t k = 0; d && k < size; k++)
      if (!taso_poly_equal(l[k], r[k])) d[k] = true, all = false;
    *proved = d && all;
    if (all)
      free(d);
    else
      *differ = d;
  }
  for (int i = 0; inputs && i < in->n; i++)
    free(inputs[i]);
  free(inputs);
  if (values) taso_values_free((void **)values, 2 * g->nnodes);
  free(values);
  return err;
}

taso_err_t taso_checker_run(taso_checker_t *ch, int64_t index, taso_check_t *row) {
  double t0 = now_seconds();
  const taso_plan_t *p = ch->plan;
  memset(row, 0, sizeof *row);
  row->index = index;
  if (index < 0 || index >= p->total)
    return taso_error(TASO_ERR_ARG, "combination %lld outside the plan's %lld", (long long)index,
                      (long long)p->total);
  combo_t cb;
  int axiom;
  locate(p, index, &axiom, &cb);
  row->axiom = axiom;
  snprintf(row->name, sizeof row->name, "%s", cb.v->a->name);

  taso_inputs_t in = {0};
  taso_graph_t g;
  taso_graph_init(&g);
  taso_tensor_t *types = NULL;
  int input_of[MAX_BOUND];
  taso_err_t err = TASO_OK;
  bool ok = true;
  for (int b = 0; b < cb.v->nb && err == TASO_OK; b++) {
    if (cb.v->bint[b]) continue;
    int rank;
    int32_t dim[TASO_MAX_RANK];
    if (!spec_shape(&cb, &cb.e->tshape[b], &rank, dim)) {
      ok = false;
      break;
    }
    input_of[b] = in.n;
    err = taso_inputs_add(&in, cb.v->bname[b], rank, dim);
  }
  if (err != TASO_OK) goto done;
  describe(&cb, &in, row);
  row->path = TASO_PATH_SHAPE;
  row->outcome = TASO_CHECK_SKIPPED;
  if (!ok) {
    snprintf(row->detail, TASO_CHECK_DETAIL, "axis past the rank");
    goto done;
  }
  if (!where_holds(&cb)) {
    snprintf(row->detail, TASO_CHECK_DETAIL, "outside @where %s",
             taso_axiom_meta(cb.v->a, "where", 0));
    goto done;
  }
  if (cb.v->groot >= 0 && !guard_eval(&cb, cb.v->groot)) {
    snprintf(row->detail, TASO_CHECK_DETAIL, "the axiom's guard is false here");
    goto done;
  }
  taso_ref_t lr[2];
  taso_err_t e1 = add_node(&cb, input_of, cb.v->lhs, &g, &lr[0]);
  if (e1 == TASO_OK) e1 = add_node(&cb, input_of, cb.v->rhs, &g, &lr[1]);
  if (e1 == TASO_ERR_NOMEM) {
    err = e1;
    goto done;
  }
  if (e1 == TASO_OK) e1 = taso_graph_add_output(&g, lr[0]);
  if (e1 == TASO_OK) e1 = taso_graph_add_output(&g, lr[1]);
  if (e1 == TASO_OK) {
    if (!(types = calloc((size_t)(2 * g.nnodes) + 1, sizeof *types))) {
      err = taso_error(TASO_ERR_NOMEM, "no memory for types");
      goto done;
    }
    e1 = taso_graph_infer(&g, &in, types);
  }
  if (e1 != TASO_OK) {
    snprintf(row->detail, TASO_CHECK_DETAIL, "%s", taso_error_detail());
    goto done;
  }
  const taso_tensor_t *lt = &types[lr[0]], *rt = &types[lr[1]];
  if (lt->rank != rt->rank || memcmp(lt->dim, rt->dim, sizeof lt->dim)) {
    char a[48], b[48];
    taso_shape_format(lt, a, sizeof a);
    taso_shape_format(rt, b, sizeof b);
    row->outcome = TASO_CHECK_COUNTEREXAMPLE;
    snprintf(row->detail, TASO_CHECK_DETAIL, "the sides have different shapes: %s and %s", a, b);
    goto done;
  }
  row->trees_differ = !taso_tensor_equal(lt, rt);
  bool proved = false, *differ = NULL;
  if (!ch->z3_only && (err = decide_poly(ch, &g, types, &in, &proved, &differ)) != TASO_OK)
    goto done;
  if (proved) {
    row->path = TASO_PATH_POLY;
    row->outcome = TASO_CHECK_PROVED;
  } else {
    err = decide_z3(ch, &g, types, &in, differ, cb.v->relu_max, row);
  }
  free(differ);
done:
  row->seconds = now_seconds() - t0;
  free(types);
  taso_graph_free(&g);
  taso_inputs_free(&in);
  return err;
}
