#include "match.h"

#include "shape_cond.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const taso_graph_t *host, *lhs, *rhs;
  const taso_tensor_t *types;
  const taso_inputs_t *in;
  bool any_type;       /* inputs bind to tensors of any shape (typed checks in emit) */
  taso_inputs_t typed; /* any_type: the table with the bound tensors' types */
  taso_tensor_t *rhs_types;
  taso_accept_fn accept; /* accepting matches: decides each one, else NULL */
  void *accept_ctx;
  taso_tensor_t *lhs_types; /* accepting matches: lhs typed on the bound tensors */
  taso_ref_t *bound;        /* per input-table entry: the host tensor, or -1 */
  int *node_map;            /* per lhs node: the host node, or -1 */
  int *trail;               /* undo log: lhs node ids (>= 0) and inputs (-1 - index) */
  int ntrail;
  taso_ref_t *at; /* per lhs output: the host tensor it matched */
  taso_ref_t
      *built; /* per host node and mode (2 * node + original): its ref in the result, or -1 */
  const uint64_t *params; /* per host node: taso_node_params_hash (the caller's, or own) */
  uint64_t *own_params;   /* computed once a match is built, when the caller gave none */
  bool params_ready;
  taso_graph_t out;
  taso_graph_index_t out_index; /* finds equal nodes of out in constant time */
  taso_rewrite_fn fn;
  taso_traced_fn traced; /* instead of fn: with the result's provenance */
  void *ctx;
  int *prov;     /* traced: per node of out, the host node it was made from, or -1 */
  int *where;    /* traced: where canonicalizing out moved each node */
  int *prov_out; /* traced: prov, after canonicalizing */
  int prov_cap;
} matcher_t;

static void undo(matcher_t *m, int to) {
  while (m->ntrail > to) {
    int t = m->trail[--m->ntrail];
    if (t >= 0)
      m->node_map[t] = -1;
    else
      m->bound[-1 - t] = -1;
  }
}

/* Whether rhs, on the bound tensors' types, is valid and gives every
 * matched tensor its type (any_type matches only; lhs needs no check: the
 * host computes it). */
static bool rhs_fits(matcher_t *m) {
  for (int i = 0; i < m->rhs->nnodes; i++) {
    const taso_node_t *n = &m->rhs->nodes[i];
    if (n->kind != TASO_OP_INPUT) continue;
    if (m->bound[n->p.input] < 0) return false;
    m->typed.v[n->p.input].type = m->types[m->bound[n->p.input]];
  }
  if (taso_graph_infer(m->rhs, &m->typed, m->rhs_types) != TASO_OK) return false;
  for (int o = 0; o < m->rhs->noutputs; o++)
    if (!taso_tensor_equal(&m->rhs_types[m->rhs->outputs[o]], &m->types[m->at[o]])) return false;
  return true;
}

/* Asks the accept callback about the bound instance (after rhs_fits,
 * which typed rhs). Every input of lhs is bound in a complete match, so
 * the typed table holds exactly the bound types for them. */
static taso_err_t accepted(matcher_t *m, bool *ok) {
  *ok = false;
  for (int v = 0; v < m->in->n; v++)
    if (m->bound[v] >= 0) m->typed.v[v].type = m->types[m->bound[v]];
  if (taso_graph_infer(m->lhs, &m->typed, m->lhs_types) != TASO_OK) return TASO_OK;
  return m->accept(m->accept_ctx, &m->typed, m->lhs_types, m->rhs_types, ok);
}

/* Unifies lhs tensor l with host tensor h, extending the maps. */
static bool unify(matcher_t *m, taso_ref_t l, taso_ref_t h) {
  const taso_node_t *ln = &m->lhs->nodes[TASO_REF_NODE(l)];
  if (ln->kind == TASO_OP_INPUT) {
    int v = ln->p.input;
    if (m->bound[v] >= 0) return m->bound[v] == h;
    /* Any type: whatever the tensor's split trees. The proof (at empty
     * input trees) does not constrain them: values read no tree but a
     * split's, and a split valid in the proved instance splits a node that
     * a concat of the substitution made, at the same size whatever trees
     * lie below it (semantics.md section 1); what trees can change, which
     * splits are defined and the trees of the results, rhs_fits checks on
     * the bound types, and the host's lhs is valid as it stands. */
    if (!m->any_type && !taso_tensor_equal(&m->types[h], &m->in->v[v].type)) return false;
    m->bound[v] = h;
    m->trail[m->ntrail++] = -1 - v;
    return true;
  }
  const taso_node_t *hn = &m->host->nodes[TASO_REF_NODE(h)];
  if (TASO_REF_PORT(l) != TASO_REF_PORT(h) || hn->kind != ln->kind ||
      memcmp(&hn->p, &ln->p, sizeof hn->p))
    return false;
  int mapped = m->node_map[TASO_REF_NODE(l)];
  if (mapped >= 0) return mapped == TASO_REF_NODE(h);
  m->node_map[TASO_REF_NODE(l)] = TASO_REF_NODE(h);
  m->trail[m->ntrail++] = TASO_REF_NODE(l);
  for (int a = 0; a < taso_ops[ln->kind].arity; a++)
    if (!unify(m, ln->in[a], hn->in[a])) return false;
  return true;
}

static taso_err_t build_host(matcher_t *m, taso_ref_t h, bool original, taso_ref_t *out);

/* Instantiates rhs tensor r on the bound host tensors. Those are built as
 * the host computes them, without replacements: a bound tensor may itself be
 * matched by another output of a multi-output pattern. */
static taso_err_t build_rhs(matcher_t *m, taso_ref_t r, taso_ref_t *out) {
  const taso_node_t *n = &m->rhs->nodes[TASO_REF_NODE(r)];
  if (n->kind == TASO_OP_INPUT) return build_host(m, m->bound[n->p.input], true, out);
  taso_ref_t in[3] = {-1, -1, -1};
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    TASO_TRY(build_rhs(m, n->in[a], &in[a]));
  int before = m->out.nnodes;
  TASO_TRY(taso_graph_add_indexed(&m->out, &m->out_index, n->kind, &n->p, in, out));
  if (m->traced && m->out.nnodes > before) m->prov[TASO_REF_NODE(*out)] = -1;
  *out += TASO_REF_PORT(r);
  return TASO_OK;
}

/* The result's tensor for host tensor h: rhs where h was matched (unless
 * building the original). */
static taso_err_t build_host(matcher_t *m, taso_ref_t h, bool original, taso_ref_t *out) {
  for (int o = 0; o < m->lhs->noutputs && !original; o++)
    if (m->at[o] == h) return build_rhs(m, m->rhs->outputs[o], out);
  int node = TASO_REF_NODE(h), slot = 2 * node + original;
  if (m->built[slot] < 0) {
    taso_node_t n = m->host->nodes[node]; /* its operands as built */
    for (int a = 0; a < 3 && n.in[a] >= 0; a++)
      TASO_TRY(build_host(m, n.in[a], original, &n.in[a]));
    taso_ref_t ref;
    TASO_TRY(taso_graph_add_node_indexed(&m->out, &m->out_index, &n, m->params[node], &ref));
    if (m->traced) m->prov[TASO_REF_NODE(ref)] = node; /* an equal node found: made from node too */
    m->built[slot] = ref;
  }
  *out = m->built[slot] + TASO_REF_PORT(h);
  return TASO_OK;
}

static taso_err_t emit(matcher_t *m) {
  if (m->any_type && !rhs_fits(m)) return TASO_OK;
  if (m->accept) {
    bool ok;
    TASO_TRY(accepted(m, &ok));
    if (!ok) return TASO_OK;
  }
  taso_graph_clear(&m->out);
  for (int i = 0; i < 2 * m->host->nnodes; i++)
    m->built[i] = -1;
  for (int i = 0; i < m->host->nnodes && !m->params_ready; i++)
    m->own_params[i] = taso_node_params_hash(&m->host->nodes[i]);
  m->params_ready = true;
  for (int o = 0; o < m->host->noutputs; o++) {
    taso_ref_t ref;
    TASO_TRY(build_host(m, m->host->outputs[o], false, &ref));
    TASO_TRY(taso_graph_add_output(&m->out, ref));
  }
  if (!m->traced) {
    TASO_TRY(taso_graph_canonicalize(&m->out));
    return m->fn(m->ctx, &m->out);
  }
  int built = m->out.nnodes;
  TASO_TRY(taso_graph_canonicalize_map(&m->out, m->where));
  for (int i = 0; i < built; i++)
    if (m->where[i] >= 0) m->prov_out[m->where[i]] = m->prov[i];
  return m->traced(m->ctx, &m->out, m->prov_out);
}

/* Matches lhs output o and the rest against every host tensor. */
static taso_err_t match_from(matcher_t *m, int o) {
  if (o == m->lhs->noutputs) return emit(m);
  for (int node = 0; node < m->host->nnodes; node++) {
    int ports = m->host->nodes[node].kind == TASO_OP_INPUT
                    ? 1
                    : taso_ops[m->host->nodes[node].kind].outputs;
    for (int port = 0; port < ports; port++) {
      taso_ref_t h = TASO_REF(node, port);
      int mark = m->ntrail;
      if (unify(m, m->lhs->outputs[o], h)) {
        m->at[o] = h;
        taso_err_t err = match_from(m, o + 1);
        if (err != TASO_OK) return err;
      }
      undo(m, mark);
    }
  }
  return TASO_OK;
}

/* The matcher's buffers; any_type ones only when asked for. */
static taso_err_t alloc(matcher_t *m) {
  const taso_inputs_t *in = m->in;
  if (m->any_type) {
    m->typed.n = in->n;
    m->typed.v = malloc(sizeof *m->typed.v * (in->n + 1));
    m->rhs_types = malloc(sizeof *m->rhs_types * (2 * m->rhs->nnodes + 1));
    if (m->typed.v) memcpy(m->typed.v, in->v, sizeof *m->typed.v * in->n);
    if (!m->typed.v || !m->rhs_types) return taso_error(TASO_ERR_NOMEM, "rewrite");
  }
  if (m->accept && !(m->lhs_types = malloc(sizeof *m->lhs_types * (2 * m->lhs->nnodes + 1))))
    return taso_error(TASO_ERR_NOMEM, "rewrite");
  m->bound = malloc(sizeof *m->bound * (in->n + 1));
  m->node_map = malloc(sizeof *m->node_map * (m->lhs->nnodes + 1));
  m->trail = malloc(sizeof *m->trail * (m->lhs->nnodes + in->n + 1));
  m->at = malloc(sizeof *m->at * (m->lhs->noutputs + 1));
  m->built = malloc(sizeof *m->built * (2 * m->host->nnodes + 1));
  if (!m->params)
    m->params = m->own_params = malloc(sizeof *m->own_params * (m->host->nnodes + 1));
  else
    m->params_ready = true;
  if (!m->bound || !m->node_map || !m->trail || !m->at || !m->built || !m->params)
    return taso_error(TASO_ERR_NOMEM, "rewrite");
  if (m->traced) {
    /* the result holds at most each host node twice (as is, and as the
     * host computes it for a bound tensor) and rhs once */
    m->prov_cap = 2 * m->host->nnodes + m->rhs->nnodes + 1;
    m->prov = malloc(sizeof *m->prov * (size_t)m->prov_cap);
    m->where = malloc(sizeof *m->where * (size_t)m->prov_cap);
    m->prov_out = malloc(sizeof *m->prov_out * (size_t)m->prov_cap);
    if (!m->prov || !m->where || !m->prov_out) return taso_error(TASO_ERR_NOMEM, "rewrite");
  }
  return TASO_OK;
}

static taso_err_t run(matcher_t *m) {
  if (m->lhs->noutputs != m->rhs->noutputs || m->lhs->noutputs == 0)
    return taso_error(TASO_ERR_ARG, "rewrite: %d outputs against %d", m->lhs->noutputs,
                      m->rhs->noutputs);
  taso_graph_init(&m->out);
  taso_err_t err = alloc(m);
  if (err == TASO_OK) {
    for (int i = 0; i < m->in->n; i++)
      m->bound[i] = -1;
    for (int i = 0; i < m->lhs->nnodes; i++)
      m->node_map[i] = -1;
    err = match_from(m, 0);
  }
  taso_graph_free(&m->out);
  taso_graph_index_free(&m->out_index);
  free(m->bound);
  free(m->node_map);
  free(m->trail);
  free(m->at);
  free(m->built);
  free(m->own_params);
  free(m->typed.v);
  free(m->rhs_types);
  free(m->lhs_types);
  free(m->prov);
  free(m->where);
  free(m->prov_out);
  return err;
}

taso_err_t taso_rewrite_all(const taso_graph_t *host, const taso_tensor_t *host_types,
                            const taso_graph_t *lhs, const taso_graph_t *rhs,
                            const taso_inputs_t *in, bool any_type, taso_rewrite_fn fn, void *ctx) {
  matcher_t m = {.host = host,
                 .lhs = lhs,
                 .rhs = rhs,
                 .types = host_types,
                 .in = in,
                 .any_type = any_type,
                 .fn = fn,
                 .ctx = ctx};
  return run(&m);
}

taso_err_t taso_rewrite_all_accepting(const taso_graph_t *host, const taso_tensor_t *host_types,
                                      const taso_graph_t *lhs, const taso_graph_t *rhs,
                                      const taso_inputs_t *in, taso_accept_fn accept,
                                      void *accept_ctx, taso_rewrite_fn fn, void *ctx) {
  if (!accept) return taso_error(TASO_ERR_ARG, "rewrite: an accepting rewrite needs a callback");
  matcher_t m = {.host = host,
                 .lhs = lhs,
                 .rhs = rhs,
                 .types = host_types,
                 .in = in,
                 .any_type = true,
                 .accept = accept,
                 .accept_ctx = accept_ctx,
                 .fn = fn,
                 .ctx = ctx};
  return run(&m);
}

taso_err_t taso_rewrite_all_traced(const taso_graph_t *host, const taso_tensor_t *host_types,
                                   const uint64_t *host_params, const taso_graph_t *lhs,
                                   const taso_graph_t *rhs, const taso_inputs_t *in,
                                   taso_accept_fn accept, void *accept_ctx, taso_traced_fn fn,
                                   void *ctx) {
  if (!accept) return taso_error(TASO_ERR_ARG, "rewrite: an accepting rewrite needs a callback");
  matcher_t m = {.host = host,
                 .lhs = lhs,
                 .rhs = rhs,
                 .types = host_types,
                 .in = in,
                 .any_type = true,
                 .accept = accept,
                 .accept_ctx = accept_ctx,
                 .traced = fn,
                 .ctx = ctx,
                 .params = host_params};
  return run(&m);
}

/* The checked rewrite's callback: the recorded relation, nothing else. */
taso_err_t taso_shape_cond_accepts(void *ctx, const taso_inputs_t *at,
                                   const taso_tensor_t *lhs_types, const taso_tensor_t *rhs_types,
                                   bool *accept) {
  (void)at;
  *accept = taso_shape_cond_holds(ctx, lhs_types, rhs_types);
  return TASO_OK;
}

taso_err_t taso_rewrite_all_checked(const taso_graph_t *host, const taso_tensor_t *host_types,
                                    const taso_graph_t *lhs, const taso_graph_t *rhs,
                                    const taso_inputs_t *in, const taso_shape_cond_t *cond,
                                    taso_rewrite_fn fn, void *ctx) {
  if (!cond) return taso_error(TASO_ERR_ARG, "rewrite: a checked rewrite needs a condition");
  /* the callback only reads the condition */
  return taso_rewrite_all_accepting(host, host_types, lhs, rhs, in, taso_shape_cond_accepts,
                                    (void *)(uintptr_t)cond, fn, ctx);
}
