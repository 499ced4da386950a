/*
 * Exact extraction from the e-graph (eqsat_impl.h): the choice of one node
 * per class needed that minimizes the sum of the chosen nodes' own costs,
 * each node counted once however many classes read it (a graph, not a
 * tree: the merged matmul two splits read counts once), as a 0-1 integer
 * program solved by GLPK's branch and bound, as Tensat extracts:
 *
 *   y_c = 1                 for each model output's class c
 *   sum of x_n over c >= y_c, and y_c >= x_n, for each class c
 *   y_d >= x_n              for each operand class d of node n
 *   minimize the sum of cost_n x_n
 *
 * Cycles are left out rather than constrained: a node is in the program
 * only when it reads classes below its own in one order, the plain
 * extraction's heights (a class newer than another of its height below
 * it: a rewrite's new nodes feed the class it rewrote), which keeps every
 * plain choice. (The program would otherwise take a cycle, cheaper than
 * computing its tensors: transpose(transpose(x)) for x.) Also left out: a
 * node whose own cost is at least its class's plain tree cost (that tree
 * never does worse). Classes computable from weights alone cost nothing
 * (the cost model folds them): they are leaves and keep the plain choice.
 *
 * The plain extraction is the first incumbent; within its time the search
 * proves the optimum of the program or returns the best found with the
 * branch and bound's lower bound. Its graph is costed as a whole, as the
 * other extractions are.
 */
#include "eqsat_impl.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>

typedef struct {
  taso_eqsat_t *s;
  double *own;        /* per node: its own cost (NAN: not costed yet) */
  const double *tree; /* per class: the plain extraction's cost (a sum over a tree) */
  int32_t *choice;    /* per class: the node chosen (on entry: the plain one) */
  bool *keep;         /* per node: in the program */
  bool *need;         /* per class: read by a kept node (or an output) and not folded */
  int32_t *height;    /* per class: its height() (-1: not yet known) */
  glp_prob *lp;
  int *col, *ccol; /* per node, per class: its column (0: none) */
  double bound;    /* the branch and bound's lower bound so far */
  double *start;   /* per column (from 1): the plain solution */
  bool offered;    /* the plain solution given to the branch and bound */
} exact_t;

/* Class c's height in the plain extraction (folded classes 0; a
 * class without a plain choice is never read). The plain choices have no
 * cycle, and a class taller than another, or as tall and newer, is never
 * read by it in the program: an order that keeps every plain choice, the
 * nodes a rewrite made below the class it rewrote, and no cycle. */
static int32_t height(exact_t *x, int32_t c) {
  taso_egraph_t *eg = &x->s->eg;
  if (x->height[c] >= 0) return x->height[c];
  x->height[c] = INT32_MAX; /* while on the way (not met: no cycle) */
  int32_t h = 0, e = x->choice[c];
  if (eg->folded[c])
    h = 0;
  else if (e < 0)
    h = INT32_MAX;
  for (int a = 0; e >= 0 && !eg->folded[c] && a < taso_ops[eg->nodes[e].kind].arity; a++) {
    int32_t below = height(x, eg->nodes[e].in[a]);
    h = below == INT32_MAX ? INT32_MAX : below >= h ? below + 1 : h;
  }
  return x->height[c] = h;
}

static bool below(exact_t *x, int32_t d, int32_t c) {
  int32_t hd = height(x, d), hc = height(x, c);
  return hd < hc || (hd == hc && hd < INT32_MAX && d > c);
}

/* The walk from class c: the classes the program covers (need), the
 * nodes it keeps (keep: below the class in that order, and cheaper than
 * the class's plain tree unless its plain choice) and their costs. */
static taso_err_t walk(exact_t *x, int32_t c, int32_t *nvars) {
  taso_egraph_t *eg = &x->s->eg;
  x->need[c] = true;
  for (int32_t k = eg->member_at[c]; k < eg->member_at[c + 1]; k++) {
    int32_t e = eg->members[k];
    const taso_enode_t *n = &eg->nodes[e];
    if (isnan(x->own[e])) TASO_TRY(taso_eqsat_node_cost(x->s, e, &x->own[e]));
    bool ok = isfinite(x->own[e]) && (e == x->choice[c] || x->own[e] < x->tree[c]);
    for (int a = 0; a < taso_ops[n->kind].arity && ok; a++)
      ok = eg->folded[n->in[a]] || below(x, n->in[a], c);
    x->keep[e] = ok;
    *nvars += ok;
    for (int a = 0; a < taso_ops[n->kind].arity && ok; a++)
      if (!eg->folded[n->in[a]] && !x->need[n->in[a]]) TASO_TRY(walk(x, n->in[a], nvars));
  }
  return TASO_OK;
}

/* The program over the needed classes into x->lp: columns x_n (the kept
 * nodes, x->col) then y_c (the needed classes, x->ccol), all binary. */
static taso_err_t program(exact_t *x) {
  taso_egraph_t *eg = &x->s->eg;
  glp_prob *lp = x->lp;
  int ncols = 0;
  for (int32_t e = 0; e < eg->nnodes; e++)
    x->col[e] = x->keep[e] ? ++ncols : 0;
  for (int32_t c = 0; c < eg->nclasses; c++)
    x->ccol[c] = x->need[c] ? ++ncols : 0;
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, ncols);
  for (int j = 1; j <= ncols; j++)
    glp_set_col_kind(lp, j, GLP_BV);
  for (int32_t e = 0; e < eg->nnodes; e++)
    if (x->col[e]) glp_set_obj_coef(lp, x->col[e], x->own[e]);
  for (int o = 0; o < x->s->prob->graph->noutputs; o++) { /* y_c = 1 */
    int32_t c = taso_egraph_find(eg, x->s->roots[o]);
    if (x->need[c]) glp_set_col_bnds(lp, x->ccol[c], GLP_FX, 1, 1);
  }
  int *ind = malloc(sizeof *ind * (size_t)(eg->nnodes + 2));
  double *val = malloc(sizeof *val * (size_t)(eg->nnodes + 2));
  if (!ind || !val) {
    free(ind);
    free(val);
    return taso_error(TASO_ERR_NOMEM, "an integer program of %d columns", ncols);
  }
  for (int32_t c = 0; c < eg->nclasses; c++) {
    if (!x->need[c]) continue;
    int len = 0; /* sum of x_n over c's nodes - y_c >= 0 */
    for (int32_t k = eg->member_at[c]; k < eg->member_at[c + 1]; k++) {
      int32_t e = eg->members[k];
      const taso_enode_t *n = &eg->nodes[e];
      if (!x->keep[e]) continue;
      ind[++len] = x->col[e];
      val[len] = 1;
      int i = glp_add_rows(lp, 1), in1[3] = {0, x->ccol[c], x->col[e]}; /* y_c - x_n >= 0 */
      double v1[3] = {0, 1, -1};
      glp_set_mat_row(lp, i, 2, in1, v1);
      glp_set_row_bnds(lp, i, GLP_LO, 0, 0);
      for (int a = 0; a < taso_ops[n->kind].arity; a++) { /* y_d - x_n >= 0 */
        int32_t d = n->in[a];
        if (!x->need[d] || (a > 0 && d == n->in[a - 1])) continue;
        int i = glp_add_rows(lp, 1), in2[3] = {0, x->ccol[d], x->col[e]};
        double v2[3] = {0, 1, -1};
        glp_set_mat_row(lp, i, 2, in2, v2);
        glp_set_row_bnds(lp, i, GLP_LO, 0, 0);
      }
    }
    ind[++len] = x->ccol[c];
    val[len] = -1;
    int i = glp_add_rows(lp, 1);
    glp_set_mat_row(lp, i, len, ind, val);
    glp_set_row_bnds(lp, i, GLP_LO, 0, 0);
  }
  free(ind);
  free(val);
  return TASO_OK;
}

/* The plain extraction's choices as a solution (x->start, columns from
 * 1): the branch and bound's first incumbent. */
static void plain_solution(exact_t *x, int32_t c) {
  taso_egraph_t *eg = &x->s->eg;
  if (!x->need[c] || x->start[x->ccol[c]] > 0) return;
  x->start[x->ccol[c]] = 1;
  const taso_enode_t *n = &eg->nodes[x->choice[c]];
  x->start[x->col[x->choice[c]]] = 1;
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    plain_solution(x, n->in[a]);
}

/* The branch and bound's hooks: the plain solution offered first; the
 * lower bound kept as it rises. */
static void on_tree(glp_tree *tree, void *info) {
  exact_t *x = info;
  if (glp_ios_reason(tree) == GLP_IHEUR && !x->offered) {
    x->offered = true;
    glp_ios_heur_sol(tree, x->start);
  }
  int best = glp_ios_best_node(tree);
  if (best) x->bound = fmax(x->bound, glp_ios_node_bound(tree, best));
}

/* The solution's choices into x->choice: per class computed, its
 * cheapest chosen node (the order leaves no cycle to avoid). */
static bool read_choices(exact_t *x) {
  taso_egraph_t *eg = &x->s->eg;
  for (int32_t c = 0; c < eg->nclasses; c++) {
    if (!x->need[c] || glp_mip_col_val(x->lp, x->ccol[c]) < 0.5) continue;
    int32_t best = -1;
    for (int32_t k = eg->member_at[c]; k < eg->member_at[c + 1]; k++) {
      int32_t e = eg->members[k];
      if (x->col[e] && glp_mip_col_val(x->lp, x->col[e]) > 0.5 &&
          (best < 0 || x->own[e] < x->own[best]))
        best = e;
    }
    if (best < 0) return false;
    x->choice[c] = best;
  }
  return true;
}

/* Solves within seconds; *status and *bound_ms as taso_eqsat_exact's. */
static void solve(exact_t *x, double seconds, int *status, double *bound_ms) {
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF; /* the plain solution is offered in the program's own columns */
  parm.tm_lim = (int)fmin(fmax(1, seconds * 1e3), 1e9);
  parm.cb_func = on_tree;
  parm.cb_info = x;
  x->bound = 0;
  for (int o = 0; o < x->s->prob->graph->noutputs; o++)
    plain_solution(x, taso_egraph_find(&x->s->eg, x->s->roots[o]));
  glp_smcp lp_parm; /* the relaxation first: branch and bound starts from its basis */
  glp_init_smcp(&lp_parm);
  lp_parm.msg_lev = GLP_MSG_OFF;
  lp_parm.tm_lim = parm.tm_lim;
  if (glp_simplex(x->lp, &lp_parm) != 0 || glp_get_status(x->lp) != GLP_OPT) return;
  x->bound = glp_get_obj_val(x->lp);
  int r = glp_intopt(x->lp, &parm);
  int st = glp_mip_status(x->lp);
  if ((r != 0 && r != GLP_ETMLIM) || (st != GLP_OPT && st != GLP_FEAS) || !read_choices(x)) return;
  *status = st == GLP_OPT ? TASO_EXACT_OPTIMAL : TASO_EXACT_FOUND;
  *bound_ms = st == GLP_OPT ? glp_mip_obj_val(x->lp) : x->bound;
}

taso_err_t taso_eqsat_exact(taso_eqsat_t *s, double *own, const double *tree, int32_t *choice,
                            double seconds, int *status, double *bound_ms) {
  taso_egraph_t *eg = &s->eg;
  int32_t nc = eg->nclasses;
  exact_t x = {.s = s,
               .own = own,
               .choice = choice,
               .tree = tree,
               .keep = calloc((size_t)eg->nnodes + 1, sizeof *x.keep),
               .need = calloc((size_t)nc + 1, sizeof *x.need),
               .height = malloc(sizeof *x.height * (size_t)(nc + 1)),
               .col = calloc((size_t)eg->nnodes + 1, sizeof *x.col),
               .ccol = calloc((size_t)nc + 1, sizeof *x.ccol)};
  *status = TASO_EXACT_NONE;
  *bound_ms = 0;
  taso_err_t err = x.keep && x.need && x.height && x.col && x.ccol
                       ? TASO_OK
                       : taso_error(TASO_ERR_NOMEM, "exact extraction over %d classes", nc);
  int32_t nvars = 0;
  for (int32_t c = 0; c < nc && err == TASO_OK; c++)
    x.height[c] = -1;
  for (int o = 0; o < s->prob->graph->noutputs && err == TASO_OK; o++) {
    int32_t c = taso_egraph_find(eg, s->roots[o]);
    if (!eg->folded[c] && !x.need[c]) err = walk(&x, c, &nvars);
  }
  if (err == TASO_OK && nvars > 0) {
    glp_term_out(GLP_OFF);
    x.lp = glp_create_prob();
    err = program(&x);
    x.start = err == TASO_OK ? calloc((size_t)glp_get_num_cols(x.lp) + 1, sizeof *x.start) : NULL;
    if (err == TASO_OK && !x.start) err = taso_error(TASO_ERR_NOMEM, "an integer solution");
    if (err == TASO_OK) solve(&x, seconds, status, bound_ms);
    glp_delete_prob(x.lp);
    free(x.start);
  }
  free(x.keep);
  free(x.need);
  free(x.height);
  free(x.col);
  free(x.ccol);
  return err;
}
