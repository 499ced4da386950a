/*
 * Extraction from the e-graph of equality saturation (eqsat_impl.h).
 *
 * Extraction chooses one node per class needed, bottom up: a class costs
 * its cheapest node's cost plus its operands' (each node costed alone
 * from the cost cache, over operands of its classes' types; a node
 * computable from weights alone costs nothing, as the cost model folds
 * it). Costs only fall during the fixed point and a node is chosen only
 * when it is strictly cheaper, so a choice never depends on its own class:
 * a plain extraction has no cycle (every extraction is checked for one as
 * it is built; shared costs can make one, and that extraction is dropped).
 * Each extraction is then costed as a whole, as every search costs a
 * graph (fused steps); the cheapest is the result, kept by the search only
 * when cheaper than the input.
 */
#include "eqsat_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node cost's key in s->node_costs: kind, port, parameters' number, then
 * per operand its type's number and folding. Its entry: KEY, the key, then
 * the cost's index in s->costs_ms + 1 (0: none). */
enum { KEY = 3 + 2 * 3 };

taso_err_t taso_eqsat_node_cost(taso_eqsat_t *s, int32_t e, double *ms) {
  const taso_enode_t *n = &s->eg.nodes[e];
  int arity = taso_ops[n->kind].arity;
  bool folded = n->kind == TASO_OP_INPUT ? s->prob->is_weight[n->p.input] : true;
  for (int a = 0; a < arity; a++)
    folded = folded && s->eg.folded[n->in[a]];
  *ms = 0;
  if (folded || n->kind == TASO_OP_INPUT) return TASO_OK;
  if (taso_eqsat_time_up_often(s)) /* no more measuring: eqsat.c extract() measures the result */
    taso_cost_cache_set_guess(s->costs, true);
  /* many nodes are one configuration: costed once */
  int32_t key[KEY] = {n->kind, n->port, n->pid, -1, -1, -1, -1, -1, -1};
  for (int a = 0; a < arity; a++) {
    key[3 + 2 * a] = s->eg.type_id[n->in[a]];
    key[4 + 2 * a] = s->eg.folded[n->in[a]];
  }
  int64_t entry;
  bool fresh;
  TASO_TRY(taso_verdicts_find(&s->node_costs, key, KEY, &entry, &fresh));
  int32_t *slot = &s->node_costs.v[entry + 1 + KEY];
  if (*slot > 0) {
    *ms = s->costs_ms[*slot - 1];
    return TASO_OK;
  }
  if (s->ncosts == s->costs_cap) {
    int32_t cap = s->costs_cap ? 2 * s->costs_cap : 1024;
    double *v = realloc(s->costs_ms, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "eqsat: %d node costs", cap);
    s->costs_ms = v;
    s->costs_cap = cap;
  }
  taso_inputs_t in = {0};
  taso_graph_t g;
  taso_graph_init(&g);
  bool weight[3] = {false};
  taso_ref_t refs[3] = {-1, -1, -1}, out;
  taso_tensor_t types[2 * 4];
  taso_err_t err = TASO_OK;
  for (int a = 0; a < arity && err == TASO_OK; a++) {
    char name[16];
    snprintf(name, sizeof name, "x%d", a);
    err = taso_inputs_add(&in, name, 0, NULL);
    if (err == TASO_OK) {
      in.v[a].type = s->eg.type[n->in[a]];
      weight[a] = s->eg.folded[n->in[a]];
      err = taso_graph_add_input(&g, a, &refs[a]);
    }
  }
  if (err == TASO_OK) err = taso_graph_add(&g, n->kind, &n->p, refs, &out);
  if (err == TASO_OK) err = taso_graph_add_output(&g, out + n->port);
  if (err == TASO_OK) err = taso_graph_infer(&g, &in, types);
  taso_cost_stats_t before, after;
  taso_cost_cache_stats(s->costs, &before);
  if (err == TASO_OK) err = taso_cost_of_graph(s->costs, &g, types, weight, ms);
  if (err == TASO_ERR_SHAPE) {
    *ms = INFINITY;
    err = TASO_OK;
  }
  taso_cost_cache_stats(s->costs, &after);
  if (err == TASO_OK && after.guesses > before.guesses && s->nguessed == s->guessed_cap) {
    int32_t cap = s->guessed_cap ? 2 * s->guessed_cap : 1024;
    int64_t *v = realloc(s->guessed_at, sizeof *v * (size_t)cap);
    if (!v) err = taso_error(TASO_ERR_NOMEM, "eqsat: %d guessed node costs", cap);
    if (v) s->guessed_at = v;
    if (v) s->guessed_cap = cap;
  }
  if (err == TASO_OK) { /* entry stands: nothing else was added to node_costs */
    s->costs_ms[s->ncosts++] = *ms;
    s->node_costs.v[entry + 1 + KEY] = s->ncosts;
    if (after.guesses > before.guesses) s->guessed_at[s->nguessed++] = entry;
  }
  taso_graph_free(&g);
  taso_inputs_free(&in);
  return err;
}

void taso_eqsat_forget_guesses(taso_eqsat_t *s) {
  while (s->nguessed > 0)
    s->node_costs.v[s->guessed_at[--s->nguessed] + 1 + KEY] = 0;
}

/* An extraction: per class the node chosen and what it costs. A plain
 * sum over trees counts a tensor two classes read twice, so it never
 * takes a rewrite whose gain is sharing (two matmuls of one input merged
 * into one, read by two splits). With shared costs a class's cost counts
 * in each reader's divided by the number of classes of the last
 * extraction that read it: the merged matmul, read by the splits of the
 * two outputs, counts half in each. */
typedef struct {
  double *own;              /* per node: its own cost (NAN: not costed yet) */
  double *share;            /* per class: the classes that read it (at least 1) */
  double *cost;             /* per class: the cheapest found */
  int32_t *choice;          /* per class: its node, or -1 */
  taso_ref_t *ref;          /* per class: its tensor in the built graph, or -1 (-2: being built) */
  int32_t *built, nbuilt;   /* the classes whose ref is not -1 (room for every class) */
  uint64_t *dirty;          /* choose's nodes to visit, a bit each */
  bool cyclic;              /* the built graph would have a cycle (shared costs only) */
  taso_graph_index_t index; /* the built graph's (each graph of the moves is built anew) */
  /* The moves' graphs are costed reusing the steps of the graph they
   * start from (the host: taso_cost_of_graph_reusing): */
  int32_t *cls_of;          /* per node of the built graph: a class it was built for */
  int *where;               /* per node of the built graph: its index once canonical */
  int *prov;                /* per canonical node: the host's node of its class, or -1 */
  int *host_at;             /* per class: its node in the host graph, or -1 */
  int32_t *hosted, nhosted; /* the classes whose host_at is not -1 */
  taso_tensor_t *types;     /* the built graph's (room for every class's node) */
  taso_cost_memo_t host;    /* the host's steps (n 0: none) */
  taso_cost_memo_t trial;   /* the last graph's steps, when recorded */
} extract_t;

/* The fixed point of class costs: sweeps over the nodes in order until
 * one changes nothing. A sweep visits only the nodes an operand's class
 * of which fell since their last visit (dirty: at first, all), as
 * skipping the others changes nothing: a node's sum is what it was, and
 * its class costs no more than it did. */
static taso_err_t choose(taso_eqsat_t *s, extract_t *x, bool shared) {
  taso_egraph_t *eg = &s->eg;
  for (int32_t c = 0; c < eg->nclasses; c++) {
    x->cost[c] = INFINITY;
    x->choice[c] = -1;
  }
  int32_t words = (eg->nnodes + 63) / 64;
  for (int32_t w = 0; w < words; w++)
    x->dirty[w] = ~(uint64_t)0;
  if (eg->nnodes % 64) x->dirty[words - 1] = ((uint64_t)1 << (eg->nnodes % 64)) - 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t w = 0; w < words; w++)
      while (x->dirty[w]) { /* read anew: a change marks later nodes of this sweep */
        int32_t e = 64 * w + __builtin_ctzll(x->dirty[w]);
        x->dirty[w] &= x->dirty[w] - 1;
        const taso_enode_t *n = &eg->nodes[e];
        if (n->dead) continue;
        double sum = 0;
        for (int a = 0; a < taso_ops[n->kind].arity; a++)
          sum += x->cost[n->in[a]] / (shared ? x->share[n->in[a]] : 1);
        if (!(sum < x->cost[n->cls])) continue;
        if (isnan(x->own[e])) TASO_TRY(taso_eqsat_node_cost(s, e, &x->own[e]));
        if (!(x->own[e] + sum < x->cost[n->cls])) continue;
        x->cost[n->cls] = x->own[e] + sum;
        x->choice[n->cls] = e;
        changed = true;
        for (int32_t k = eg->user_at[n->cls]; k < eg->user_at[n->cls + 1]; k++)
          x->dirty[eg->users[k] / 64] |= (uint64_t)1 << (eg->users[k] % 64);
      }
  }
  return TASO_OK;
}

/* Class c's chosen tensor added to g. */
static taso_err_t build(taso_eqsat_t *s, extract_t *x, int32_t c, taso_graph_t *g,
                        taso_ref_t *out) {
  if (x->ref[c] == -2) x->cyclic = true;
  if (x->cyclic) return TASO_OK;
  if (x->ref[c] >= 0) {
    *out = x->ref[c];
    return TASO_OK;
  }
  int32_t e = x->choice[c];
  if (e < 0)
    return taso_error(TASO_ERR_ARG, "eqsat: class %d of the model's graph has no finite cost", c);
  const taso_enode_t *n = &s->eg.nodes[e];
  x->ref[c] = -2;
  x->built[x->nbuilt++] = c;
  taso_ref_t in[3] = {-1, -1, -1}, ref;
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    TASO_TRY(build(s, x, n->in[a], g, &in[a]));
  if (x->cyclic) return TASO_OK;
  if (n->kind == TASO_OP_INPUT)
    TASO_TRY(taso_graph_add_input_indexed(g, &x->index, n->p.input, &ref));
  else
    TASO_TRY(taso_graph_add_indexed(g, &x->index, n->kind, &n->p, in, &ref));
  x->cls_of[TASO_REF_NODE(ref)] = c;
  *out = x->ref[c] = ref + n->port;
  return TASO_OK;
}

/* Per rule, its applications whose nodes the built graph uses. */
static taso_err_t count_fired(taso_eqsat_t *s, const extract_t *x, int64_t *fired) {
  bool *used = calloc((size_t)s->napps + 1, sizeof *used);
  if (!used) return taso_error(TASO_ERR_NOMEM, "%d rule applications", s->napps);
  for (int32_t c = 0; c < s->eg.nclasses; c++) {
    int32_t e = x->ref[c] >= 0 ? x->choice[c] : -1;
    if (e >= 0 && s->eg.nodes[e].app >= 0) used[s->eg.nodes[e].app] = true;
  }
  memset(fired, 0, sizeof *fired * (size_t)(s->rules->n + 1));
  for (int32_t a = 0; a < s->napps; a++)
    fired[s->app_rule[a]] += used[a];
  free(used);
  return TASO_OK;
}

/* The types of the outputs of the node built for class c from its node
 * e, into t[0] and t[1]: its classes' (egraph.h: a class holds tensors of
 * one type, and a node was added at the type its operands' classes give
 * it, which a class keeps through merges; so they are what
 * taso_graph_infer would find, to the bit). */
static void types_of(taso_eqsat_t *s, int32_t c, int32_t e, taso_tensor_t *t) {
  const taso_enode_t *n = &s->eg.nodes[e];
  memset(t, 0, 2 * sizeof *t);
  t[n->port] = s->eg.type[c];
  if (taso_ops[n->kind].outputs == 2 && s->eg.sibling[e] >= 0)
    t[1 - n->port] = s->eg.type[taso_egraph_find(&s->eg, s->eg.sibling[e])];
}

/* The graph of x's choices into g (cleared), costed as a whole into
 * *ms: INFINITY when it has a cycle or a step the cost model refuses.
 * x->ref then marks the classes it uses. With reuse, the steps the host
 * graph has are taken from its memo (x->host, when it has one), and the
 * graph's own are recorded into x->trial. */
static taso_err_t realize(taso_eqsat_t *s, extract_t *x, taso_graph_t *g, bool reuse, double *ms) {
  *ms = INFINITY;
  taso_graph_clear(g);
  x->cyclic = false;
  while (x->nbuilt > 0) /* the last graph's classes alone: the e-graph has many more */
    x->ref[x->built[--x->nbuilt]] = -1;
  for (int o = 0; o < s->prob->graph->noutputs && !x->cyclic; o++) {
    taso_ref_t ref = -1;
    TASO_TRY(build(s, x, taso_egraph_find(&s->eg, s->roots[o]), g, &ref));
    if (!x->cyclic) TASO_TRY(taso_graph_add_output(g, ref));
  }
  if (x->cyclic) return TASO_OK;
  int built = g->nnodes;
  TASO_TRY(taso_graph_canonicalize_map(g, x->where));
  for (int v = 0; v < built; v++) {
    int w = x->where[v];
    if (w < 0) continue;
    if (reuse) x->prov[w] = x->host_at[x->cls_of[v]];
    types_of(s, x->cls_of[v], x->choice[x->cls_of[v]], &x->types[2 * w]);
  }
  taso_err_t err =
      taso_cost_of_graph_reusing(s->costs, g, x->types, s->prob->is_weight, reuse ? &x->host : NULL,
                                 x->prov, reuse ? &x->trial : NULL, ms);
  if (err == TASO_ERR_SHAPE) *ms = INFINITY;
  return err == TASO_ERR_SHAPE ? TASO_OK : err;
}

/* The graph realize last built (and recorded) becomes the host. */
static void host_last(extract_t *x) {
  taso_cost_memo_t m = x->host;
  x->host = x->trial;
  x->trial = m;
  while (x->nhosted > 0)
    x->host_at[x->hosted[--x->nhosted]] = -1;
  for (int32_t k = 0; k < x->nbuilt; k++) {
    int32_t c = x->built[k];
    x->host_at[c] = x->where[TASO_REF_NODE(x->ref[c])];
    x->hosted[x->nhosted++] = c;
  }
}

/* ---- moves: rule applications replayed on the best graph -------------------------------
 * A choice class by class misses what only the whole graph's cost shows:
 * a rule with two outputs (two convolutions of one input merged into one
 * and split) pays only when both outputs take it, which no class sees
 * alone when the two convolutions cost unlike; a node costed alone does
 * not see the step it fuses into. So after the extractions, each
 * application whose matched classes the best graph uses is tried as one
 * move (every matched class takes the node the application's right side
 * made for it), kept when the whole graph then costs less, in passes
 * while one pays: the original's rewrites, over the e-graph's matches. */

/* The nodes application a made for its matched outputs into nodes (room
 * for the lhs outputs); false when one is not an operator's. */
static bool app_nodes(taso_eqsat_t *s, int32_t a, int32_t *nodes) {
  const int32_t *rec = &s->app_match[(size_t)a * (size_t)s->record];
  const taso_graph_t *rhs = &s->rules->v[rec[0]].rhs;
  const int32_t *vars = rec + 2 + s->max_outputs;
  int32_t cls[2 * 64];
  for (int i = 0; i < rhs->nnodes; i++) {
    const taso_node_t *n = &rhs->nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      cls[2 * i] = taso_egraph_find(&s->eg, vars[n->p.input]);
      continue;
    }
    int32_t in[3] = {-1, -1, -1};
    for (int k = 0; k < taso_ops[n->kind].arity; k++)
      in[k] = cls[n->in[k]];
    for (int port = 0; port < taso_ops[n->kind].outputs; port++) {
      cls[2 * i + port] = taso_egraph_lookup(&s->eg, n->kind, port, &n->p, in);
      if (cls[2 * i + port] < 0) return false;
    }
  }
  for (int o = 0; o < rhs->noutputs; o++) {
    const taso_node_t *n = &rhs->nodes[TASO_REF_NODE(rhs->outputs[o])];
    if (n->kind == TASO_OP_INPUT) return false;
    int32_t in[3] = {-1, -1, -1};
    for (int k = 0; k < taso_ops[n->kind].arity; k++)
      in[k] = cls[n->in[k]];
    nodes[o] = taso_egraph_lookup_node(&s->eg, n->kind, TASO_REF_PORT(rhs->outputs[o]), &n->p, in);
    if (nodes[o] < 0) return false;
  }
  return true;
}

/* The moves over x (best's choices, whose graph best is, of cost *ms),
 * kept while they pay; then the result's fired counts, from the kept
 * graph (x->ref). Many applications make the same move (their right
 * sides' nodes are one by hash-consing): a move is tried once per graph,
 * until one is kept (tried: per move's nodes, the kept moves then + 1). */
static taso_err_t improve(taso_eqsat_t *s, extract_t *x, taso_graph_t *best, double *ms) {
  int32_t nc = s->eg.nclasses, nsaved = 0;
  taso_ref_t *ref = malloc(sizeof *ref * (size_t)(nc + 1)); /* a graph's x->ref, by x->built */
  int32_t *saved = malloc(sizeof *saved * (size_t)(nc + 1));
  taso_verdicts_t tried = {0};
  int32_t kept = 0;
  taso_graph_t g;
  taso_graph_init(&g);
  taso_err_t err = ref && saved ? TASO_OK : taso_error(TASO_ERR_NOMEM, "moves over %d classes", nc);
  if (err == TASO_OK) err = realize(s, x, &g, true, ms); /* x->ref: the classes best uses */
  if (err == TASO_OK) host_last(x);
  for (bool again = true; again && err == TASO_OK && !taso_eqsat_time_up(s);) {
    again = false;
    for (int32_t a = 0; a < s->napps && err == TASO_OK && !taso_eqsat_time_up_often(s); a++) {
      const int32_t *rec = &s->app_match[(size_t)a * (size_t)s->record];
      const taso_graph_t *lhs = &s->rules->v[rec[0]].lhs;
      int32_t nodes[8], outs[8], was[8];
      bool used = lhs->noutputs <= 8, same = true;
      for (int o = 0; o < lhs->noutputs && used; o++) {
        outs[o] = taso_egraph_find(&s->eg, rec[2 + o]);
        used = x->ref[outs[o]] >= 0;
      }
      if (!used || !app_nodes(s, a, nodes)) continue;
      for (int o = 0; o < lhs->noutputs; o++)
        same = same && x->choice[outs[o]] == nodes[o];
      if (same) continue;
      int64_t entry;
      bool fresh;
      err = taso_verdicts_find(&tried, nodes, lhs->noutputs, &entry, &fresh);
      if (err != TASO_OK || tried.v[entry + 1 + lhs->noutputs] == kept + 1) continue;
      tried.v[entry + 1 + lhs->noutputs] = kept + 1;
      for (nsaved = 0; nsaved < x->nbuilt; nsaved++) {
        saved[nsaved] = x->built[nsaved];
        ref[nsaved] = x->ref[saved[nsaved]];
      }
      for (int o = 0; o < lhs->noutputs; o++) {
        was[o] = x->choice[outs[o]];
        x->choice[outs[o]] = nodes[o];
      }
      double moved;
      err = realize(s, x, &g, true, &moved);
      if (err == TASO_OK && moved < *ms) {
        host_last(x);
        *ms = moved;
        err = taso_graph_copy(best, &g);
        again = true;
        s->res->eqsat_moves++;
        kept++;
        continue;
      }
      for (int o = lhs->noutputs - 1; o >= 0; o--) /* backwards: outputs may share a class */
        x->choice[outs[o]] = was[o];
      while (x->nbuilt > 0)
        x->ref[x->built[--x->nbuilt]] = -1;
      for (int32_t k = 0; k < nsaved; k++) {
        x->built[x->nbuilt++] = saved[k];
        x->ref[saved[k]] = ref[k];
      }
    }
  }
  /* x->ref is the kept graph's: a move kept left its own, one undone the one before */
  if (err == TASO_OK) err = count_fired(s, x, s->res->fired);
  taso_verdicts_free(&tried);
  taso_graph_free(&g);
  free(ref);
  free(saved);
  return err;
}

/* Shared costs' divisors: per class, how many classes of the last
 * extraction (those built: ref >= 0) have a node that reads it; seen is
 * scratch, a class each. */
static void count_shares(const taso_egraph_t *eg, const taso_ref_t *ref, double *share,
                         int32_t *seen) {
  for (int32_t c = 0; c < eg->nclasses; c++)
    seen[c] = -1;
  for (int32_t c = 0; c < eg->nclasses; c++) {
    int32_t n = 0;
    for (int32_t k = eg->user_at[c]; k < eg->user_at[c + 1]; k++) {
      int32_t u = eg->nodes[eg->users[k]].cls;
      n += ref[u] >= 0 && seen[u] != c;
      seen[u] = c;
    }
    share[c] = n > 1 ? n : 1;
  }
}

/* The exact extraction (extract_exact.c) from the plain one's choices
 * (which the folded classes keep), within half the time left and at most
 * opt->eqsat_exact_seconds, kept in best when its graph costs less as a
 * whole. */
static taso_err_t exact(taso_eqsat_t *s, extract_t *x, const int32_t *plain, const double *tree,
                        taso_graph_t *best, double *best_ms, int32_t *best_choice) {
  int32_t nc = s->eg.nclasses;
  double left = s->opt->eqsat_exact_seconds;
  if (left <= 0) {
    s->res->eqsat_exact = TASO_EXACT_OFF;
    return TASO_OK;
  }
  if (s->opt->time_limit > 0)
    left = fmin(left, (s->opt->time_limit - (taso_search_now() - s->start)) / 2);
  memcpy(x->choice, plain, sizeof *x->choice * (size_t)nc);
  taso_search_result_t *r = s->res;
  TASO_TRY(
      taso_eqsat_exact(s, x->own, tree, x->choice, left, &r->eqsat_exact, &r->eqsat_exact_bound));
  if (r->eqsat_exact == TASO_EXACT_NONE) return TASO_OK;
  taso_graph_t g;
  taso_graph_init(&g);
  double ms;
  taso_err_t err = realize(s, x, &g, false, &ms);
  r->eqsat_exact_ms = 0;
  for (int32_t c = 0; c < nc && err == TASO_OK; c++)
    if (x->ref[c] >= 0) r->eqsat_exact_ms += x->own[x->choice[c]];
  if (err == TASO_OK && ms < *best_ms) {
    *best_ms = ms;
    r->eqsat_extraction = 0;
    memcpy(best_choice, x->choice, sizeof *best_choice * (size_t)nc);
    err = taso_graph_copy(best, &g);
  }
  taso_graph_free(&g);
  return err;
}

/* The cheapest of a few extractions into best: the input graph itself
 * (each class its original node), the plain one, then each with the
 * costs shared as the one before it shares them (ROUNDS in all, fewer
 * when one repeats the one before or the time is up); then the moves
 * from it. */
enum { ROUNDS = 4 };

taso_err_t taso_eqsat_extract(taso_eqsat_t *s, taso_graph_t *best, double *best_ms, bool *used) {
  int32_t nc = s->eg.nclasses;
  extract_t x = {.own = malloc(sizeof *x.own * (size_t)(s->eg.nnodes + 1)),
                 .share = malloc(sizeof *x.share * (size_t)(nc + 1)),
                 .cost = malloc(sizeof *x.cost * (size_t)(nc + 1)),
                 .choice = malloc(sizeof *x.choice * (size_t)(nc + 1)),
                 .ref = malloc(sizeof *x.ref * (size_t)(nc + 1)),
                 .built = malloc(sizeof *x.built * (size_t)(nc + 1)),
                 .dirty = malloc(sizeof *x.dirty * (size_t)(s->eg.nnodes / 64 + 1)),
                 .cls_of = malloc(sizeof *x.cls_of * (size_t)(nc + 1)),
                 .where = malloc(sizeof *x.where * (size_t)(nc + 1)),
                 .prov = malloc(sizeof *x.prov * (size_t)(nc + 1)),
                 .host_at = malloc(sizeof *x.host_at * (size_t)(nc + 1)),
                 .hosted = malloc(sizeof *x.hosted * (size_t)(nc + 1)),
                 .types = malloc(sizeof *x.types * 2 * (size_t)(nc + 1))};
  int32_t *seen = malloc(sizeof *seen * (size_t)(nc + 1));
  int32_t *best_choice = malloc(sizeof *best_choice * (size_t)(nc + 1));
  int32_t *plain = malloc(sizeof *plain * (size_t)(nc + 1));
  double *tree = malloc(sizeof *tree * (size_t)(nc + 1));
  taso_graph_t g, last;
  taso_graph_init(&g);
  taso_graph_init(&last);
  taso_err_t err = x.own && x.share && x.cost && x.choice && x.ref && x.built && x.dirty &&
                           x.cls_of && x.where && x.prov && x.host_at && x.hosted && x.types &&
                           seen && best_choice && plain && tree
                       ? TASO_OK
                       : taso_error(TASO_ERR_NOMEM, "extraction over %d classes", nc);
  for (int32_t e = 0; e < s->eg.nnodes && err == TASO_OK; e++)
    x.own[e] = NAN; /* costed when first needed: once its operands all have a cost */
  for (int32_t c = 0; c < nc && err == TASO_OK; c++) {
    x.share[c] = 1;
    x.ref[c] = -1;
    x.host_at[c] = -1;
  }
  *best_ms = INFINITY;
  for (int round = -1; round < ROUNDS && err == TASO_OK; round++) {
    if (round > 0 && taso_eqsat_time_up(s)) break; /* the input and the plain one always */
    double ms;
    err = choose(s, &x, round > 0);
    for (int32_t e = 0; e < s->eg.nnodes && round < 0; e++) { /* the input's nodes */
      const taso_enode_t *n = &s->eg.nodes[e];
      if (!n->dead && n->app < 0) x.choice[n->cls] = e;
    }
    if (err == TASO_OK) err = realize(s, &x, &g, false, &ms);
    if (err != TASO_OK) break;
    if (round >= 0 && (x.cyclic || (round > 0 && taso_graph_compare(&g, &last) == 0))) break;
    s->res->eqsat_rounds = round + 2;
    if (ms < *best_ms) {
      *best_ms = ms;
      s->res->eqsat_extraction = round + 2;
      memcpy(best_choice, x.choice, sizeof *best_choice * (size_t)nc);
      err = taso_graph_copy(best, &g);
    }
    if (round == 0) { /* the exact extraction's start and bounds */
      memcpy(plain, x.choice, sizeof *plain * (size_t)nc);
      memcpy(tree, x.cost, sizeof *tree * (size_t)nc);
    }
    if (err == TASO_OK && round >= 0) err = taso_graph_copy(&last, &g);
    if (round >= 0) count_shares(&s->eg, x.ref, x.share, seen);
  }
  if (err == TASO_OK && !taso_eqsat_time_up(s) && !s->first_pass)
    err = exact(s, &x, plain, tree, best, best_ms, best_choice);
  if (err == TASO_OK && *best_ms < INFINITY) {
    memcpy(x.choice, best_choice, sizeof *best_choice * (size_t)nc);
    err = improve(s, &x, best, best_ms);
  }
  for (int32_t c = 0; c < nc && used && err == TASO_OK; c++)
    used[c] = *best_ms < INFINITY && x.ref[c] >= 0;
  taso_graph_free(&g);
  taso_graph_free(&last);
  free(seen);
  free(best_choice);
  free(plain);
  free(tree);
  free(x.own);
  free(x.share);
  free(x.cost);
  free(x.choice);
  free(x.ref);
  free(x.built);
  free(x.dirty);
  free(x.cls_of);
  free(x.where);
  free(x.prov);
  free(x.host_at);
  free(x.hosted);
  free(x.types);
  taso_cost_memo_free(&x.host);
  taso_cost_memo_free(&x.trial);
  taso_graph_index_free(&x.index);
  return err;
}
