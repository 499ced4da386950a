/* Expanding one graph (expand.h). */
#include "expand.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

void taso_expander_free(taso_expander_t *x) {
  taso_cost_memo_free(&x->memo);
  free(x->types);
  free(x->hashes);
  free(x->host_params);
  x->types = NULL;
  x->hashes = x->host_params = NULL;
  x->types_cap = 0;
}

static taso_err_t fit_types(taso_expander_t *x, int nnodes) {
  if (2 * nnodes <= x->types_cap) return TASO_OK;
  int cap = x->types_cap ? x->types_cap : 512;
  while (cap < 2 * nnodes)
    cap *= 2;
  taso_tensor_t *t = realloc(x->types, sizeof *t * (size_t)cap);
  if (t) x->types = t;
  uint64_t *h = t ? realloc(x->hashes, sizeof *h * (size_t)cap) : NULL;
  if (!h) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", nnodes);
  x->hashes = h;
  x->types_cap = cap;
  return TASO_OK;
}

taso_err_t taso_expander_hash(taso_expander_t *x, const taso_graph_t *g, uint64_t *hash) {
  TASO_TRY(fit_types(x, g->nnodes + 1));
  const int *prov = x->prov && x->host_params ? x->prov : NULL;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    uint64_t params = prov && prov[i] >= 0 ? x->host_params[prov[i]] : taso_node_params_hash(n);
    x->hashes[i] = taso_node_struct_hash(params, n, x->hashes);
  }
  *hash = taso_graph_struct_hash(g, x->hashes);
  if (!prov || !x->check) return TASO_OK;
  uint64_t *full = malloc(sizeof *full * (size_t)(g->nnodes + 1));
  if (!full) return taso_error(TASO_ERR_NOMEM, "hashes of %d nodes", g->nnodes);
  bool same = taso_graph_struct_hash_all(g, full) == *hash;
  free(full);
  return same ? TASO_OK
              : taso_error(TASO_ERR_ARG,
                           "incremental check: rule %d: a rewrite "
                           "hashes differently from scratch",
                           x->rule);
}

/* g's types into x->types, those of a node made from a host node taken
 * from it: the same operator and parameters over operands of the same
 * types (by induction; a replaced tensor's rhs has exactly its type) give
 * the same types. The others are inferred, with taso_graph_infer's
 * errors. */
static taso_err_t infer_reusing(taso_expander_t *x, const taso_graph_t *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (x->prov[i] >= 0) {
      memcpy(&x->types[2 * i], &x->host_types[2 * x->prov[i]], 2 * sizeof *x->types);
      continue;
    }
    memset(&x->types[2 * i], 0, 2 * sizeof *x->types);
    if (n->kind == TASO_OP_INPUT) { /* made by rhs: one of its inputs, bound to no host node */
      if (n->p.input < 0 || n->p.input >= x->prob->inputs->n)
        return taso_error(TASO_ERR_UNKNOWN, "input index %d not in the input table", n->p.input);
      x->types[2 * i] = x->prob->inputs->v[n->p.input].type;
      continue;
    }
    taso_tensor_t args[3];
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      args[a] = x->types[n->in[a]];
    TASO_TRY(taso_op_infer(n->kind, &n->p, args, &x->types[2 * i]));
  }
  return TASO_OK;
}

/* The check of --check-incremental: every node the provenance names has
 * the host node's operator and parameters, the types taken from the host
 * are those inferred, and the cost made by reuse is the one made from
 * scratch, to the bit. */
static taso_err_t check_result(taso_expander_t *x, const taso_graph_t *g, double ms) {
  const taso_graph_t *h = x->host;
  for (int v = 0; v < g->nnodes; v++) {
    int p = x->prov[v];
    if (p < 0) continue;
    const taso_node_t *a = &g->nodes[v], *b = &h->nodes[p];
    if (p >= h->nnodes || a->kind != b->kind || memcmp(&a->p, &b->p, sizeof a->p))
      return taso_error(TASO_ERR_ARG,
                        "incremental check: rule %d: node %d of a rewrite is "
                        "said to be made from host node %d, which it is not",
                        x->rule, v, p);
  }
  taso_tensor_t *types = malloc(sizeof *types * 2 * (size_t)(g->nnodes + 1));
  if (!types) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", g->nnodes);
  taso_err_t err = taso_graph_infer(g, x->prob->inputs, types);
  if (err == TASO_OK && g->nnodes && memcmp(types, x->types, sizeof *types * 2 * (size_t)g->nnodes))
    err = taso_error(TASO_ERR_ARG,
                     "incremental check: rule %d: the types of a rewrite taken "
                     "from the host are not those inferred",
                     x->rule);
  double full = 0;
  if (err == TASO_OK) err = taso_cost_of_graph(x->costs, g, types, x->prob->is_weight, &full);
  free(types);
  TASO_TRY(err);
  if (memcmp(&full, &ms, sizeof ms) != 0)
    return taso_error(TASO_ERR_ARG,
                      "incremental check: rule %d: a rewrite costs %.17g ms "
                      "from scratch and %.17g ms by what it changed",
                      x->rule, full, ms);
  x->checked++;
  return TASO_OK;
}

taso_err_t taso_expander_cost(taso_expander_t *x, const taso_graph_t *g, double *ms) {
  TASO_TRY(fit_types(x, g->nnodes + 1));
  bool reuse = x->prov && x->memo.n;
  TASO_TRY(reuse ? infer_reusing(x, g) : taso_graph_infer(g, x->prob->inputs, x->types));
  TASO_TRY(taso_cost_of_graph_reusing(x->costs, g, x->types, x->prob->is_weight,
                                      reuse ? &x->memo : NULL, reuse ? x->prov : NULL, NULL, ms));
  return reuse && x->check ? check_result(x, g, *ms) : TASO_OK;
}

/* Hands a result to the search's callback with its provenance at hand
 * for taso_expander_cost. */
static taso_err_t traced_child(void *ctx, const taso_graph_t *g, const int *prov) {
  taso_expander_t *x = ctx;
  x->prov = prov;
  taso_err_t err = x->fn(x->fn_ctx, g);
  x->prov = NULL;
  return err;
}

taso_err_t taso_expander_start(taso_expander_t *x, taso_graph_t *start, double *ms) {
  TASO_TRY(taso_graph_copy(start, x->prob->graph));
  TASO_TRY(taso_graph_canonicalize(start));
  return taso_expander_cost(x, start, ms);
}

/* Readies x to expand host: its types (malloc'd into *types, kept while
 * results are costed in x->types) and its memo, so that results are
 * costed by what they changed. A cost the host cannot have complete
 * (pending in a parallel search) leaves no memo: its results are costed
 * from scratch. */
static taso_err_t begin_host(taso_expander_t *x, const taso_graph_t *host, taso_child_fn fn,
                             void *ctx, taso_tensor_t **types) {
  *types = malloc(sizeof **types * 2 * (size_t)(host->nnodes + 1));
  uint64_t *params = realloc(x->host_params, sizeof *params * (size_t)(host->nnodes + 1));
  if (params) x->host_params = params;
  if (!*types || !params) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", host->nnodes);
  for (int i = 0; i < host->nnodes; i++)
    params[i] = taso_node_params_hash(&host->nodes[i]);
  TASO_TRY(taso_graph_infer(host, x->prob->inputs, *types));
  double ms;
  taso_err_t err = taso_cost_of_graph_reusing(x->costs, host, *types, x->prob->is_weight, NULL,
                                              NULL, &x->memo, &ms);
  if (err != TASO_OK && err != TASO_ERR_UNKNOWN) return err;
  x->fn = fn;
  x->fn_ctx = ctx;
  x->host = host;
  x->host_types = *types;
  return TASO_OK;
}

/* Rule r at every match of the host where it is proved. */
static taso_err_t apply_rule(taso_expander_t *x, int r) {
  const taso_rule_t *rule = &x->rules->v[r];
  x->rule = r;
  if (x->guard)
    return taso_rewrite_all_guarded_traced(x->guard, r, 0, x->host, x->host_types, x->host_params,
                                           &rule->lhs, &rule->rhs, &rule->cond, traced_child, x);
  return taso_rewrite_all_traced(x->host, x->host_types, x->host_params, &rule->lhs, &rule->rhs,
                                 &x->rules->inputs, taso_shape_cond_accepts,
                                 (void *)(uintptr_t)&rule->cond, traced_child, x);
}

taso_err_t taso_expand(taso_expander_t *x, const taso_graph_t *host, taso_child_fn fn,
                       taso_stop_fn stop, void *ctx) {
  taso_tensor_t *types = NULL;
  taso_err_t err = begin_host(x, host, fn, ctx, &types);
  uint32_t kinds = taso_graph_kinds(host);
  bool stopped = false;
  for (int r = 0; r < x->rules->n && err == TASO_OK && !stopped; r++) {
    if (x->rules->v[r].kinds & ~kinds) continue; /* an lhs operator the host lacks */
    err = apply_rule(x, r);
    stopped = stop(ctx);
  }
  free(types);
  return err;
}

/* ---- rule chains -------------------------------------------------------------- */

typedef struct {
  taso_expander_t *x;
  int max_nodes;
  double best;       /* the cheapest result so far (start: the link's cost) */
  taso_graph_t next; /* it */
  bool found;
  taso_chain_stats_t *stats;
} chain_t;

/* A result of the link by the chain's rule: the cheapest one is the next. */
static taso_err_t chain_child(void *ctx, const taso_graph_t *g) {
  chain_t *c = ctx;
  c->stats->generated++;
  if (g->nnodes >= c->max_nodes) return TASO_OK;
  double ms;
  taso_err_t err = taso_expander_cost(c->x, g, &ms);
  if (err == TASO_ERR_SHAPE || err == TASO_ERR_UNKNOWN) { /* refused, or its cost pending */
    c->stats->invalid += err == TASO_ERR_SHAPE;
    return TASO_OK;
  }
  TASO_TRY(err);
  if (!(ms < c->best)) return TASO_OK;
  c->best = ms;
  c->found = true;
  return taso_graph_copy(&c->next, g);
}

taso_err_t taso_expand_chain(taso_expander_t *x, const taso_graph_t *g, double ms, int rule,
                             int max_nodes, taso_link_fn fn, void *ctx, taso_chain_stats_t *stats) {
  chain_t c = {.x = x, .max_nodes = max_nodes, .stats = stats};
  taso_graph_t link;
  taso_graph_init(&link);
  taso_graph_init(&c.next);
  taso_err_t err = taso_graph_copy(&link, g);
  for (bool go = true; err == TASO_OK && go;) {
    taso_tensor_t *types = NULL;
    c.best = ms;
    c.found = false;
    err = begin_host(x, &link, chain_child, &c, &types);
    if (err == TASO_OK) err = apply_rule(x, rule);
    free(types);
    if (err != TASO_OK || !c.found) break;
    ms = c.best;
    stats->links++;
    err = fn(ctx, &c.next, ms, &go);
    taso_graph_t t = link; /* the next link is the host of the next step */
    link = c.next;
    c.next = t;
  }
  taso_graph_free(&link);
  taso_graph_free(&c.next);
  return err;
}
