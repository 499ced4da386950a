/*
 * What every search does to one graph (internal to src/search): apply
 * every rule at every match where it is proved, and cost the results. The
 * baseline and the parallel search differ only in what they keep.
 */
#ifndef TASO_SEARCH_EXPAND_H
#define TASO_SEARCH_EXPAND_H

#include "cost.h"
#include "problem.h"
#include "rule_guard.h"
#include "rules.h"

/* Called with each rewrite of the host; x->rule is the rule applied. */
typedef taso_err_t (*taso_child_fn)(void *ctx, const taso_graph_t *child);
/* Called after each rule; true stops the expansion (time is up). */
typedef bool (*taso_stop_fn)(void *ctx);

typedef struct {
  const taso_search_problem_t *prob;
  const taso_rules_t *rules;
  taso_cost_cache_t *costs;
  taso_rule_guard_t *guard; /* NULL: each rule's recorded relation only */
  int rule;                 /* the rule being applied */
  taso_tensor_t *types;     /* scratch: a result's types */
  uint64_t *hashes;         /* scratch: a result's structural node hashes */
  int types_cap;            /* of types (2 per node) and hashes (1 per node) */
  bool check;               /* cost every result both ways: a difference is an error */
  /* while a host is expanded: its memo, and the provenance of the result
   * being passed to the callback (NULL outside it) */
  const taso_graph_t *host;
  const taso_tensor_t *host_types;
  uint64_t *host_params; /* per host node: taso_node_params_hash */
  taso_cost_memo_t memo;
  const int *prov;
  int64_t checked; /* results checked (check) */
  taso_child_fn fn;
  void *fn_ctx;
} taso_expander_t;

void taso_expander_free(taso_expander_t *x);

/* Bit k: g has an operator of kind k. */
uint32_t taso_graph_kinds(const taso_graph_t *g);

/* The cost of g; TASO_ERR_SHAPE when a consumer of a rewrite's results
 * refuses them (the matcher typed the rule's rhs alone). Called with a
 * result from within taso_expand's callback, it configures only the steps
 * the rewrite changed, taking the others' costs from the host's
 * (taso_cost_of_graph_reusing: the same figure to the bit). */
taso_err_t taso_expander_cost(taso_expander_t *x, const taso_graph_t *g, double *ms);

/* The structural hash of g (taso_graph_struct_hash: what the searches'
 * seen sets and owners go by). Called with a result from within
 * taso_expand's callback, the nodes the rewrite made from host nodes take
 * their params hashes from the host's: a few mixes per node. */
taso_err_t taso_expander_hash(taso_expander_t *x, const taso_graph_t *g, uint64_t *hash);

/* Applies every rule whose operators the host has at every proved match,
 * calling fn with each result, and stop after each rule. */
taso_err_t taso_expand(taso_expander_t *x, const taso_graph_t *host, taso_child_fn fn,
                       taso_stop_fn stop, void *ctx);

/* Rule chains. A search that rewrites a graph by rule r into a cheaper
 * one can follow that rewrite at once with the cheapest rewrite of the
 * result by r alone, and so on while each is cheaper than the last:
 * NasRNN's 32 merges of the matmuls of a unit, or a model's 36 folded
 * batch normalizations, are one rule at 32 or 36 places, which a search
 * that expands every rule at every graph reaches only one place per
 * expanded graph. Each link is one rewrite of the one before (a path the
 * search can tell), costed by what it changed. */
typedef struct {
  int64_t links;     /* links made */
  int64_t generated; /* rewrites tried by the chains' rules */
  int64_t invalid;   /* of them, refused by a consumer's typing */
} taso_chain_stats_t;

/* Given each link with its cost; *go false ends the chain (a graph seen
 * before, or the time is up). */
typedef taso_err_t (*taso_link_fn)(void *ctx, const taso_graph_t *link, double ms, bool *go);

/* The chain from g (cost ms) by rule: links are results with fewer than
 * max_nodes nodes, each the cheapest rewrite of the one before by rule
 * (the first found of equal costs, in the matcher's order), while
 * cheaper than it. Results whose cost is pending end nothing: they are
 * not taken. Not from within taso_expand's callback. */
taso_err_t taso_expand_chain(taso_expander_t *x, const taso_graph_t *g, double ms, int rule,
                             int max_nodes, taso_link_fn fn, void *ctx, taso_chain_stats_t *stats);

/* The canonical input graph and its cost. */
taso_err_t taso_expander_start(taso_expander_t *x, taso_graph_t *start, double *ms);

#endif
