/*
 * Derivations: whether the rewrite engine the optimizer uses turns one side
 * of a candidate into the other with kept substitutions, and in how many
 * steps.
 *
 * Pruning drops a candidate because smaller kept ones imply it; that is
 * only true if the engine can perform the rewrites. So the implication
 * stage of taso-generate and the completeness check (taso-derive) both ask
 * this search, with the engine as the optimizer applies rules, each rule in
 * both directions where its side has an operator: by default any-shape
 * matches accepted only inside the shape relation each kept substitution
 * was proved under (taso_rewrite_all_checked); with a rewrite hook, as the
 * hook accepts them. The tools pass the optimizer's rule guard there
 * (src/verify/rule_guard.h, src/verify/guard_open.h): a match outside the
 * recorded relation is re-proved at its own relation, as the optimizer
 * does before applying it.
 *
 * The search is a bidirectional breadth-first search over canonical
 * graphs: layers from src and from dst, the smaller frontier grown first,
 * until they meet (equal canonical graphs) or the layers together reach
 * max_steps. Intermediate graphs have at most extra_ops more operators than
 * the larger side, and each side at most max_nodes graphs, so that one
 * search stays bounded. A side stops growing when a layer adds nothing
 * (rules never rewrite a bare input, so a side that is one cannot grow,
 * though the other may reach it) or when it is full; the other side goes
 * on alone. A search that does not meet reports failure (the candidate is
 * kept, which is the safe side). Rules whose side is a bare input rewrite
 * one way only (the engine never matches a bare input), so each new layer
 * also looks one such rewrite ahead into the other side.
 *
 * With a hook that can accept every match (optimistic below), the search
 * is a path search: it runs with every match accepted, and the hook then
 * decides only the rewrites of the path that met (the guard's proofs); a
 * rewrite it refuses is left out and the search runs again (at most 16
 * times, then the plain search with the hook deciding every match). A
 * pair no rewrites derive costs no proofs.
 */
#ifndef TASO_DERIVE_H
#define TASO_DERIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "artifact.h"
#include "candidates.h"
#include "match.h"
#include "shape_cond.h"

/* Why the generator dropped a pair (the /pruned rows of candidates.h5). */
enum { TASO_PRUNED_COMMON = 0, TASO_PRUNED_INDEPENDENT = 1, TASO_PRUNED_IMPLIED = 2 };
#define TASO_PRUNED_TEXT 2048 /* a pair of 4-operator graphs over constants passes 800 */

/* One dropped pair: one per pattern at any shapes (the smallest text).
 * The generator derives each from a prefix of the kept substitutions (the
 * ones kept when it decided), and the search is not monotone in the rules
 * (which side grows depends on the frontiers, and a fuller side may hit
 * max_nodes), so the check repeats the search with that prefix: a
 * derivation from some kept substitutions is one from the kept set. */
typedef struct {
  int32_t reason;              /* TASO_PRUNED_* */
  int32_t steps;               /* rewrites the generator derived it in; -1: not derived there */
  int64_t rules;               /* from the first this many kept substitutions (rows) */
  char text[TASO_PRUNED_TEXT]; /* "SRC => DST", the pair as found */
} taso_pruned_t;

/* The /pruned table of candidates.h5 (absent in files of older generators). */
extern const taso_table_t taso_pruned_table;

/* "common subgraph", "independent parts", "implied" */
const char *taso_pruned_reason(int32_t reason);

/* Every one-step rewrite of host by rule (an index into the rules passed
 * to taso_derive) in direction dir (0: src => dst, 1: dst => src) that the
 * hook accepts, each passed to fn: the signature of
 * taso_rewrite_all_guarded with the guard as ctx. */
typedef taso_err_t (*taso_derive_rewrite_fn)(void *ctx, int64_t rule, int dir,
                                             const taso_graph_t *host,
                                             const taso_tensor_t *host_types,
                                             const taso_graph_t *lhs, const taso_graph_t *rhs,
                                             const taso_shape_cond_t *cond, taso_rewrite_fn fn,
                                             void *fn_ctx);

typedef struct {
  int max_steps; /* rewrites in all, both sides together; 0: TASO_DEFAULT_DERIVE_STEPS (job.h) */
  int extra_ops; /* operators past the larger side in intermediate graphs; 0: 1, -1: none */
  int max_nodes; /* graphs per side; 0: TASO_DEFAULT_DERIVE_NODES */
  taso_derive_rewrite_fn rewrite; /* NULL: taso_rewrite_all_checked */
  void *rewrite_ctx;
  /* Optional, with rewrite: switches the hook to accepting every match
   * (on) and back, for the path search (above). Each search then depends
   * on the rules, the pair and the rewrites refused so far, whose
   * verdicts depend on their own keys alone (rule_guard.h): results do
   * not depend on the order of the calls or the rank count. */
  void (*optimistic)(void *rewrite_ctx, bool on);
} taso_derive_opts_t;

typedef struct taso_deriver taso_deriver_t;

taso_err_t taso_deriver_create(const taso_inputs_t *in, const taso_derive_opts_t *opts,
                               taso_deriver_t **d);
void taso_deriver_free(taso_deriver_t *d);

/* The fewest rewrites by rules[0, nrules) that turn src into dst (canonical
 * graphs over the deriver's input table; src's and dst's types from
 * taso_graph_infer), or -1 when the bounded search finds none. Successive
 * calls must pass the same rules, in the same places, possibly more at the
 * end: their shape conditions are computed once, on first use. */
taso_err_t taso_derive(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules,
                       const taso_graph_t *src, const taso_graph_t *dst, int *steps);

#endif
