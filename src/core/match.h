/*
 * Substitution matching and one-step rewriting.
 *
 * A substitution lhs => rhs is a pair of graphs over the same input table;
 * their inputs are pattern variables. A match maps every lhs output to a
 * tensor of a host graph: lhs operators to host operators of the same kind
 * and parameters, lhs inputs to host tensors of exactly the input's type
 * (shape, empty split trees), the same input always to the same tensor.
 * With any_type, an input binds to a tensor of any shape and split trees,
 * and a rewrite counts only where rhs, typed on the bound tensors, is
 * valid and gives each matched tensor its type (trees included): a
 * substitution as a pattern over all shapes (constants keep their shapes).
 * With any_type alone a substitution is applied where its proof may not
 * hold (shape_cond.h): that is for the generator's pruning, which asks
 * what the pattern could derive; anything that changes a model must use
 * taso_rewrite_all_checked.
 * Rewriting replaces the matched tensors by rhs instantiated on the bound
 * tensors, then drops what no output uses; the generator uses it to tell
 * which candidates smaller ones imply, the optimizer to apply substitutions.
 */
#ifndef TASO_MATCH_H
#define TASO_MATCH_H

#include "graph.h"
#include "shape_cond.h"

/* Called with each rewritten graph (canonical); a non-OK return stops. */
typedef taso_err_t (*taso_rewrite_fn)(void *ctx, const taso_graph_t *result);

/* Every one-step rewrite of host (types from taso_graph_infer) by lhs => rhs.
 * lhs must have at least one operator and as many outputs as rhs. */
taso_err_t taso_rewrite_all(const taso_graph_t *host, const taso_tensor_t *host_types,
                            const taso_graph_t *lhs, const taso_graph_t *rhs,
                            const taso_inputs_t *in, bool any_type, taso_rewrite_fn fn, void *ctx);

/* Decides whether a match (any_type, rhs valid on it) may be rewritten,
 * from its bound instance: at is the substitution's input table with each
 * bound input's type, lhs_types and rhs_types both sides typed there (as
 * taso_graph_infer gives them; valid during the call only). *accept
 * false skips the match; a non-OK return stops the enumeration. */
typedef taso_err_t (*taso_accept_fn)(void *ctx, const taso_inputs_t *at,
                                     const taso_tensor_t *lhs_types, const taso_tensor_t *rhs_types,
                                     bool *accept);

/* any_type matching where accept decides every match whose rhs
 * type-checks: the hook under the checked and the guarded rewrites
 * (src/verify/rule_guard.h, which re-proves a match outside the recorded
 * relation). */
taso_err_t taso_rewrite_all_accepting(const taso_graph_t *host, const taso_tensor_t *host_types,
                                      const taso_graph_t *lhs, const taso_graph_t *rhs,
                                      const taso_inputs_t *in, taso_accept_fn accept,
                                      void *accept_ctx, taso_rewrite_fn fn, void *ctx);

/* A rewrite callback that is also told where each node of the result
 * comes from: prov[v] is the host node that node v was made from (the
 * same operator and parameters, over the result's tensors for the host
 * node's operands: a replaced one by rhs's, of exactly its type), or -1
 * (a node of rhs alone). Valid during the call only. */
typedef taso_err_t (*taso_traced_fn)(void *ctx, const taso_graph_t *result, const int *prov);

/* taso_rewrite_all_accepting with each result's provenance. host_params,
 * if not NULL, is taso_node_params_hash of each host node (a caller that
 * applies many rules to one host computes it once; else each call does). */
taso_err_t taso_rewrite_all_traced(const taso_graph_t *host, const taso_tensor_t *host_types,
                                   const uint64_t *host_params, const taso_graph_t *lhs,
                                   const taso_graph_t *rhs, const taso_inputs_t *in,
                                   taso_accept_fn accept, void *accept_ctx, taso_traced_fn fn,
                                   void *ctx);

/* The accept callback of taso_rewrite_all_checked: ctx is the condition
 * (a const taso_shape_cond_t *). */
taso_err_t taso_shape_cond_accepts(void *ctx, const taso_inputs_t *at,
                                   const taso_tensor_t *lhs_types, const taso_tensor_t *rhs_types,
                                   bool *accept);

/* The rewrite an optimizer may apply: any_type matching, accepting only
 * matches whose bound tensors stand in the shape relation the substitution
 * was proved under (cond from taso_shape_cond_of(lhs, rhs, in), with the
 * same lhs and rhs: compute one per direction used). A match outside it is
 * skipped, as one whose rhs does not type-check. */
taso_err_t taso_rewrite_all_checked(const taso_graph_t *host, const taso_tensor_t *host_types,
                                    const taso_graph_t *lhs, const taso_graph_t *rhs,
                                    const taso_inputs_t *in, const taso_shape_cond_t *cond,
                                    taso_rewrite_fn fn, void *ctx);

#endif
