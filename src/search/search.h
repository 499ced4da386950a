/*
 * Cost-based search over rewrites of a model graph by proved substitutions.
 *
 * The baseline is the original TASO's search (docs/taso-reference.md
 * section 1): a priority queue of graphs ordered by cost;
 * take the cheapest, make it the best if it beats the best so far, stop
 * when the budget of taken graphs is spent, else apply every rule at every
 * match and queue each result that costs less than alpha times the best
 * cost and was not seen before. Unlike the original, a graph hash is
 * backed by an exact comparison (taso_graph_compare), so no graph is
 * dropped by a collision; like it, a result with twice the input's node
 * count or more is not queued.
 *
 * Rules come from taso-substitutions files (rules.h): each proved row, in
 * both directions. A rule applies where its recorded shape condition
 * holds, or where the rule guard proves it again (options.guard).
 */
#ifndef TASO_SEARCH_H
#define TASO_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "artifact.h"
#include "cost.h"
#include "match.h"
#include "problem.h"
#include "rule_guard.h"
#include "rules.h"

/* Called about every progress_interval seconds during a search. */
typedef void (*taso_search_progress_fn)(void *ctx, int64_t explored, int64_t queued, double best_ms,
                                        double seconds);

typedef struct {
  double alpha;      /* keep results cheaper than alpha * best */
  int64_t budget;    /* graphs taken from the queue and expanded */
  double time_limit; /* seconds; <= 0: none */
  /* A rule applies only where it is proved: with a guard, where its
   * recorded shape relation holds or the guard proves it at the match's
   * relation (cached); without one (NULL), only where the relation holds. */
  taso_rule_guard_t *guard;
  int width;                  /* parallel: graphs expanded per round, over all ranks (>= 1) */
  double target;              /* note when a graph this cheap is found; <= 0: none */
  bool defer_costs;           /* parallel, measuring on: misses measured once, on rank 0, between
                                 a round's expansions and its exchange, and shared */
  bool chain;                 /* follow each rule's cheapest improving result of an expansion with
                                 that rule's chain (expand.h: one rule at many places in a few
                                 expansions); the links are queued as rewrites */
  bool check_incremental;     /* cost every rewrite both by what it changed and from scratch;
                                 a difference (or a wrong provenance) is an error */
  int eqsat_iterations;       /* eqsat: at most this many iterations of rule application */
  int32_t eqsat_nodes;        /* eqsat: no rule applied once the e-graph has this many nodes */
  double eqsat_exact_seconds; /* eqsat: the exact extraction's time at most (0: none) */
  bool eqsat_prove_all;       /* eqsat with a guard: prove every relation met (eqsat.c) */
  bool eqsat_measure_all; /* eqsat: measure every e-node's miss, not only the result's (eqsat.c) */
  int eqsat_rounds;       /* eqsat: saturations at most, each from the last one's result */
  taso_search_progress_fn progress; /* may be NULL; eqsat: (iteration, e-nodes, input cost,
                                       seconds) after each iteration */
  void *progress_ctx;
} taso_search_options_t;

/* What eqsat's exact extraction found: nothing (no time, or no
 * solution), the optimum, or the best solution found within its time. */
enum { TASO_EXACT_NONE, TASO_EXACT_OPTIMAL, TASO_EXACT_FOUND, TASO_EXACT_OFF, TASO_EXACT_ONE_PASS };
extern const char *const taso_exact_names[]; /* per value, in words (record.c) */

typedef struct {
  taso_graph_t best;      /* canonical */
  double cost_before;     /* ms, of the input graph */
  double cost_after;      /* ms, of best */
  int64_t explored;       /* graphs taken from the queue and expanded */
  int64_t generated;      /* rewrites produced by the matcher */
  int64_t invalid;        /* of them, with a type error downstream of the rewrite */
  int64_t checked;        /* of them, costed both ways (check_incremental) and found equal */
  int64_t queued;         /* of them, new and cheap enough to queue (chain links included) */
  int64_t chained;        /* rule-chain links made (opt->chain) */
  double seconds;         /* search time */
  double cpu_seconds;     /* CPU time of the search, summed over the ranks (on a
                             loaded or oversubscribed machine, the work done) */
  bool timed_out;         /* the time limit ended it */
  bool budget_spent;      /* the budget ended it (else the queue ran empty) */
  int64_t *fired;         /* per rule: times applied on the path to best */
  int steps;              /* rewrites on that path */
  taso_graph_t *path;     /* steps + 1 graphs: the input (canonical), then each
                             rewrite's result; path[steps] equals best */
  int *path_rules;        /* per path graph: the rule that made it; -1 for path[0] */
  int ranks;              /* the ranks that searched (1 for the baseline) */
  int64_t *rank_explored; /* per rank: graphs it expanded (parallel search; else NULL) */
  int64_t rounds;         /* parallel: rounds run */
  double target_seconds;  /* when a graph of cost <= opt->target was first found
                             (queued; parallel: the end of its round); -1: never */
  /* eqsat (explored counts its iterations, generated its matches, invalid
   * those whose rhs does not fit, queued the applications that changed the
   * e-graph; steps is 1 when the result is not the input, path the input
   * and the result, path_rules -1, fired[r] rule r's applications whose
   * nodes the result uses) */
  int64_t refused;        /* matches outside what is proved (guard or shape relation) */
  int eqsat_iterations;   /* iterations run */
  int64_t eqsat_bans;     /* rules set aside for matching too often (eqsat.c) */
  int64_t enodes;         /* e-nodes at the end */
  int64_t eclasses;       /* e-classes at the end */
  const char *eqsat_stop; /* "saturated", "iterations", "node limit" or "time limit" */
  double extract_seconds; /* of the search time, the extraction's */
  int eqsat_rounds;       /* extractions made (extract.c: the input's, the plain one, then
                             with shared costs) */
  int eqsat_extraction;   /* the one kept (0: the exact one, 1: the input's, 2: the plain
                             one) */
  int eqsat_exact; /* the exact extraction: TASO_EXACT_NONE, _OPTIMAL, _FOUND, _OFF or _ONE_PASS */
  double eqsat_exact_ms;      /* its graph's sum of node costs (ms) */
  double eqsat_exact_bound;   /* a lower bound of its program's optimum (ms) */
  int64_t eqsat_moves;        /* rule applications replayed on it and kept (extract.c) */
  double eqsat_optimistic_ms; /* the unproved first pass's result cost (eqsat.c; 0: none) */
  int64_t eqsat_asked;        /* its applications whose relations were then decided */
  bool eqsat_one_pass;        /* it found nothing cheaper than the input: no second pass */
  bool eqsat_third_pass;      /* the second fell short of it: a third, with more decided */
  int64_t eqsat_replayed;     /* its applications the second pass replayed (-1: it saturated) */
  int eqsat_remeasured;       /* extractions made again once the result's guesses were measured */
  int eqsat_rounds_run;       /* saturations run, each from the last one's result (eqsat.c) */
  int64_t eqsat_guessed;      /* configurations guessed and never measured (eqsat.c) */
} taso_search_result_t;

/* The optimized model file's record of the rules that fired: the table
 * /optimize_rules, one row per rule, most often fired first. */
#define TASO_RULE_TEXT 400
typedef struct {
  char text[TASO_RULE_TEXT]; /* "lhs => rhs", as applied */
  int64_t row;               /* its row in the substitutions file */
  int64_t count;             /* rewrites by it on the path to the result */
} taso_fired_rule_t;
extern const taso_table_t taso_fired_rules_table;

/* The rows of that table for a search result (malloc'd; *n rows). */
taso_err_t taso_fired_rules(const taso_rules_t *rules, const taso_search_result_t *r,
                            taso_fired_rule_t **rows, int64_t *n);

/* The baseline search ("backtracking"). result is filled on success; free
 * it with taso_search_result_free. */
taso_err_t taso_search_backtracking(const taso_search_problem_t *prob, const taso_rules_t *rules,
                                    taso_cost_cache_t *costs, const taso_search_options_t *opt,
                                    taso_search_result_t *result);
void taso_search_result_free(taso_search_result_t *r);
/* A result before a search fills it: best empty, rule counts for nrules
 * rules at 0, one rank, no target met. */
taso_err_t taso_search_result_start(taso_search_result_t *r, int nrules);

/* Equality saturation ("eqsat", eqsat.c): the graph in an e-graph, every
 * rule applied at every proved match (the rule guard decides as for the
 * other searches) for at most opt->eqsat_iterations iterations, while the
 * e-graph has fewer than opt->eqsat_nodes nodes and within
 * opt->time_limit, then the cheapest graph extracted (per-node costs from
 * the cache, bottom up; no cycle) and kept when its whole cost is below
 * the input's. One rank; alpha, budget, width, chain and target unused. */
taso_err_t taso_search_eqsat(const taso_search_problem_t *prob, const taso_rules_t *rules,
                             taso_cost_cache_t *costs, const taso_search_options_t *opt,
                             taso_search_result_t *result);

/* The parallel search ("parallel"), collective over comm, in rounds:
 * each round expands the opt->width cheapest graphs of the whole queue
 * (ordered by cost, then graph hash, then arrival), spread evenly over
 * the ranks, and sends every result cheaper than alpha times the best
 * expanded cost to the rank owning its hash (hash modulo the rank count),
 * which drops the ones it has seen. The budget counts expanded graphs, as
 * the baseline's does; the result is the cheapest graph found (which the
 * baseline's is too: the cheapest expanded, or the next in the queue), of
 * equal costs the one fewest rewrites away.
 * With costs that do not change during the search (a database, or
 * measuring off), the best graph, its cost, its path and the counts of
 * expanded graphs do not depend on the rank count, unless the time
 * limit (decided between rounds, and within a rank's expansion after each
 * rule) ends the search: result->timed_out says so. With measuring on
 * and opt->defer_costs, a configuration met for the first time is
 * measured once, on rank 0, and its figure shared before any result that
 * needs it is judged, so the ranks always agree on every cost. With a
 * rule guard, the round's picks are first matched with the guard probing
 * (rule_guard.h), and each relation no rank has a verdict for is decided
 * once, on one rank (dealt round robin), at its first instance in pick
 * order, and shared before the real expansion: no relation is proved
 * twice, and the verdicts do not depend on the rank count. Every rank
 * receives the whole result. */
taso_err_t taso_search_parallel(MPI_Comm comm, const taso_search_problem_t *prob,
                                const taso_rules_t *rules, taso_cost_cache_t *costs,
                                const taso_search_options_t *opt, taso_search_result_t *result);

#endif
