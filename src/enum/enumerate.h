/*
 * Canonical enumeration of every graph of up to max_ops operators over an
 * input table and a set of operator variants.
 *
 * A graph is a set of operator applications (no two alike: no tensor is
 * computed twice); its outputs are its sinks, the op outputs nothing in the
 * graph consumes, so no operator is dead. Each graph is visited exactly once,
 * in one canonical order of its operators: the greedy topological order
 * that always places the smallest available operator next (operators
 * compare by variant, then by input references). Every prefix of a canonical
 * order is canonical, so the enumeration is a tree, and a candidate list per
 * tree node makes the children cheap: the children of S + o are the
 * candidates of S that come after o plus the operators that consume o.
 *
 * The tree is cut into units for sharding: each state above depth max_ops - 1
 * is a unit of weight 1 (the graph itself), each state at depth max_ops - 1
 * a unit holding its children (the leaves) too. A leaf weighs 1, plus the
 * estimated cost of evaluating its last operator when that operator depends
 * on all the others: then its tensor expression occurs in this graph alone
 * and no memo can share the work. Units are numbered in depth-first order,
 * so a range of cumulative weight is a contiguous, deterministic piece of
 * the enumeration with about that much work; taso_enum_run visits the graphs
 * of one range and skips whole subtrees outside it.
 *
 * Pure C: no MPI and no output, callbacks only.
 */
#ifndef TASO_ENUMERATE_H
#define TASO_ENUMERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "job.h"

#define TASO_ENUM_MAX_OPS 6 /* far beyond what any machine can enumerate */

typedef struct taso_enum taso_enum_t;

/* An operator variant: a job template with every parameter fixed. Constants
 * take their shapes from the input table (see data/operators.md). */
typedef struct {
  taso_op_kind_t kind;
  taso_params_t p;
} taso_variant_t;

/* The graph being visited. Refs: input i is TASO_REF(i, 0), output `port`
 * of operator j is TASO_REF(ninputs + j, port). */
typedef struct {
  int nops;                  /* operators, in canonical order */
  const int32_t *variant;    /* variant[j] of operator j */
  const taso_ref_t (*in)[3]; /* in[j]: input refs of operator j, -1 past arity */
  const int32_t *type;       /* type id of every ref (taso_enum_type) */
  const unsigned *cone;      /* cone[j]: bit k set if operator j depends on k (k = j too) */
  int nsinks;                /* the graph's outputs */
  const taso_ref_t *sinks;   /* in increasing ref order */
} taso_enum_graph_t;

typedef struct {
  void *ctx;
  /* Operator j = nops - 1 was just placed (a state is entered). */
  taso_err_t (*push)(void *ctx, const taso_enum_graph_t *g);
  /* The last operator is removed again. */
  void (*pop)(void *ctx, const taso_enum_graph_t *g);
  /* A graph of this shard (called after its push). */
  taso_err_t (*visit)(void *ctx, const taso_enum_graph_t *g);
  /* Optional: whether to visit the leaf that adds an operator of this
   * variant on input refs in (-1 past arity) to graph g; skipped leaves cost
   * no push. */
  bool (*want)(void *ctx, const taso_enum_graph_t *g, int32_t variant, const taso_ref_t *in);
  /* Optional, taso_enum_level only: whether the state just entered (above
   * the level) has children; false cuts its subtree. */
  bool (*expand)(void *ctx, const taso_enum_graph_t *g);
} taso_enum_visitor_t;

/* What the enumeration leaves out beyond the shape rules. */
typedef struct {
  /* Bit i set: input i may be read, directly or through operators, as a
   * conv2d weight. Inputs 64 and up are always allowed. */
  uint64_t weights;
  /* Also enumerate operators where they are the identity (enlarge to the
   * kernel a weight already has); by default they are not. */
  bool keep_identities;
  /* No count pass: the enumeration serves taso_enum_level only (its totals
   * are 0 and taso_enum_run visits nothing). */
  bool no_count;
  /* Optional: called during the count pass as it goes through the root's
   * candidates (done of total), so that a long pass shows progress. */
  void (*count_progress)(void *ctx, int64_t done, int64_t total);
  void *progress_ctx;
} taso_enum_opts_t;

/* Builds the variants of the job's templates and the unit weights: a walk
 * of the tree above the leaves, the count pass. Processes can share that
 * pass: each weighs every nparts-th unit (part 0..nparts-1) and the caller
 * sums taso_enum_partial_weights over the parts before any other call; one
 * process passes 0, 1. Fails on an operator the generator cannot enumerate
 * (arity above 2) or on max_ops outside 1..TASO_ENUM_MAX_OPS. */
taso_err_t taso_enum_create(const taso_inputs_t *in, const taso_op_template_t *ops, int nops,
                            int max_ops, int part, int nparts, taso_enum_t **out);
/* The same with options (taso_enum_create: every input may be a weight). */
taso_err_t taso_enum_create_opts(const taso_inputs_t *in, const taso_op_template_t *ops, int nops,
                                 int max_ops, int part, int nparts, const taso_enum_opts_t *opts,
                                 taso_enum_t **out);

/* This part's weights (n of them), to be summed element-wise in place over
 * the parts (for example by MPI_Allreduce). */
int64_t *taso_enum_partial_weights(taso_enum_t *e, int64_t *n);
void taso_enum_free(taso_enum_t *e);

/* The variants, sorted (their order is the operators' comparison order). */
const taso_variant_t *taso_enum_variants(const taso_enum_t *e, int *n);

/* The type behind a type id. */
const taso_tensor_t *taso_enum_type(const taso_enum_t *e, int32_t id);

/* Total weight of all units, and the number of graphs (with at least one
 * operator) in them. */
int64_t taso_enum_total(const taso_enum_t *e);
int64_t taso_enum_graphs(const taso_enum_t *e);

/* The operator applications this process's walks refused because their
 * inputs are constants alone (enumerate.c, constant_only). */
int64_t taso_enum_constant_refused(const taso_enum_t *e);

/* Visits every graph of the units whose cumulative weight starts in
 * [begin, end). push/pop run for every operator on the way, visit for every
 * graph in the range. */
taso_err_t taso_enum_run(taso_enum_t *e, int64_t begin, int64_t end, const taso_enum_visitor_t *v);

/* Representative-based generation, one level: visits the graphs of exactly
 * `level` operators below the states that v->expand accepts (every state on
 * the way is asked after its push). The states of level - 2 operators (of
 * level - 1 for level 2; the root for level 1) are units, dealt round robin
 * over parts in depth-first order, so parts visit disjoint sets whose union
 * does not depend on their number when expand does not. Needs no count
 * pass: taso_enum_create with max_ops >= level. */
taso_err_t taso_enum_level(taso_enum_t *e, int level, int part, int nparts,
                           const taso_enum_visitor_t *v);

/* The units the current (or last) level walk has met so far, its own and
 * the other parts': from 3 on, the units of level k are the graphs of
 * level k - 2 before any cut, so this counts its progress. */
int64_t taso_enum_level_units(const taso_enum_t *e);

/* Whether an input is a weight (its name starts with 'w'): conv2d never takes
 * a weight input as its data input (semantics.md section 3). */
bool taso_enum_is_weight(const taso_inputs_t *in, int input);

#endif
