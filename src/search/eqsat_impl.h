/*
 * What equality saturation's two halves share (internal to src/search):
 * the search's state (eqsat.c saturates it, extract.c extracts from it).
 */
#ifndef TASO_SEARCH_EQSAT_IMPL_H
#define TASO_SEARCH_EQSAT_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "egraph.h"
#include "search.h"

/* Verdicts by key (a rule, then classes or types; a move's nodes). */
typedef struct {
  int32_t *v;       /* entries: key length n, the key, then the verdict */
  int64_t len, cap; /* ints used, allocated */
  int64_t *slots; /* open addressing: the key's hash's high half, then entry offset + 1; 0 empty */
  int64_t nslots, entries;
} taso_verdicts_t;

/* The entry of key (n ints) in m: its offset in m->v, where e[0] is n,
 * e[1..n] the key and e[n + 1] the verdict; added with verdict 0 and
 * *fresh when new. */
taso_err_t taso_verdicts_find(taso_verdicts_t *m, const int32_t *key, int n, int64_t *entry,
                              bool *fresh);

/* Empties m, keeping its memory. */
void taso_verdicts_clear(taso_verdicts_t *m);
void taso_verdicts_free(taso_verdicts_t *m);

/* Relations of matches to decide, as words: per match its rule, its
 * bound inputs' count, then per bound input its number, rank and
 * TASO_MAX_RANK sizes. */
typedef struct {
  int32_t *v;
  int64_t len, cap;
} taso_eqsat_relations_t;

/* The first pass's applications, kept for a replay (replay.c). */
typedef struct {
  int32_t *match;     /* record ints per application (as app_match) */
  int32_t *rule;      /* per application its rule (as app_rule) */
  int32_t napps;      /* applications */
  int32_t *rhs_cls;   /* per application, at rhs_at[a], its rhs refs' classes */
  int64_t *rhs_at;    /* per application */
  int32_t *iter_apps; /* per iteration, the applications made by its end */
  int niters;
  int32_t nclasses; /* the first pass's classes */
} taso_eqsat_first_t;

typedef struct {
  const taso_search_problem_t *prob;
  const taso_rules_t *rules;
  taso_cost_cache_t *costs;
  const taso_search_options_t *opt;
  taso_search_result_t *res;
  taso_egraph_t eg;
  int32_t *roots;   /* the model's outputs' classes */
  taso_inputs_t at; /* the rules' input table with a match's bound types */
  taso_tensor_t *lhs_types, *rhs_types;
  /* the iteration's accepted matches: per match, rule, its verdict's
   * offset in memo, the classes of the lhs outputs (max_outputs), then per
   * rules' input its class or -1 */
  int32_t *matches;
  int64_t nmatches, matches_cap;
  int record;                /* ints per match */
  int max_outputs;           /* of any rule's lhs */
  int32_t *banned_until;     /* per rule: the first iteration it is matched again */
  int32_t *bans;             /* per rule: times banned */
  bool *swaps;               /* per rule: its two lhs outputs swap under a renaming of its inputs */
  bool *complete;            /* per rule: its last matching met every match (match_all) */
  bool *any_class;           /* per rule: an lhs output is an input (it matches any class) */
  int32_t *pid_at, *rhs_pid; /* per rule, per rhs node: its parameters' number, or -1 (egraph.h) */
  int32_t *app_rule;         /* per application that changed the e-graph: its rule */
  int32_t *app_match;        /* per such application: its match (record ints, as matches) */
  int32_t napps, apps_cap;
  /* verdicts of matches met before, by rule and bound classes (a table
   * per rule: matching a rule then touches its own, which stays in cache),
   * and by rule and bound classes' types (a verdict depends on the types
   * alone) */
  taso_verdicts_t *memo, by_types;
  /* node costs by kind, port, parameters and operands' types and folding
   * (extract.c taso_eqsat_node_cost): numbers stay valid across the passes */
  taso_verdicts_t node_costs;
  double *costs_ms;
  int32_t ncosts, costs_cap;
  int64_t *guessed_at; /* node_costs' entries whose cost holds a guess (cost.h) */
  int32_t nguessed, guessed_cap;
  double start;
  double from_ms; /* the cost of the graph this round started from (the input's, at first) */
  /* matches whose relations a third pass decides (eqsat.c widen_used),
   * and those under the first pass's result that wait for its replay to
   * fall short (eqsat.c first_pass) */
  taso_eqsat_relations_t later, rest;
  bool out_of_time;
  uint32_t unclocked; /* calls of taso_eqsat_time_up_often (wraps around harmlessly) */
  bool first_pass;    /* the unproved first pass: no progress, no exact extraction */
  /* what a replay of the first pass reads (replay.c): per application, at
   * rhs_cls[rhs_cls_at[a]], the classes its right side's refs took (two
   * per rhs node, -1 where none); per iteration, the applications made by
   * its end; the first pass's result */
  int32_t *rhs_cls;
  int64_t rhs_cls_len, rhs_cls_cap;
  int64_t *rhs_cls_at; /* apps_cap of them */
  int32_t *iter_apps;
  int niters, iters_cap;
  taso_graph_t hoped;
  taso_eqsat_first_t first; /* taken by taso_eqsat_keep_first */
} taso_eqsat_t;

/* An application of rule rec[0] at a match (record ints, as matches; its
 * verdict offset rec[1] unused): the rhs added over the bound classes,
 * merged with the matched ones, and the application kept (s->app_*) when
 * the e-graph changed (*changed). classes (NULL, or 2 per rhs node)
 * receives the class of each rhs ref (-1: none). */
taso_err_t taso_eqsat_apply(taso_eqsat_t *s, const int32_t *rec, int32_t *classes, bool *changed);

/* The e-graph of graph start alone again, every match unmet and the
 * result's counters at 0: for a pass after the first. */
taso_err_t taso_eqsat_restart(taso_eqsat_t *s, const taso_graph_t *start);

/* Marks in apps (a flag per application) the applications that added
 * the nodes of graph g that the e-graph holds (replay.c). */
void taso_eqsat_graph_apps(taso_eqsat_t *s, const taso_graph_t *g, bool *apps);

/* Moves the first pass's applications into s->first (the next pass
 * records its own); taso_eqsat_drop_first frees them. */
void taso_eqsat_keep_first(taso_eqsat_t *s);
void taso_eqsat_drop_first(taso_eqsat_t *s);

/* The second pass as a replay (replay.c): the e-graph restarted from
 * from, and the kept first pass's applications made again, iteration by
 * iteration, where their left sides are present and their relations
 * proved; *holds: the first pass's result (s->hoped) is then in the
 * model's classes, so proved equal to from. res->eqsat_replayed: the
 * applications made. */
taso_err_t taso_eqsat_replay(taso_eqsat_t *s, const taso_graph_t *from, bool *holds);

/* Whether opt->time_limit has passed (remembered once it has). */
bool taso_eqsat_time_up(taso_eqsat_t *s);

/* The same, reading the clock every 64th call only: for loops over many
 * short steps (each match applied, each rule matched, each move), where a
 * read per step cost 1% of NasRNN's search. */
bool taso_eqsat_time_up_often(taso_eqsat_t *s);

/* Node e's own cost (extract.c): nothing when computable from weights
 * alone (the cost model folds it), else its step's, costed as a graph of
 * the node over inputs of its operands' types; INFINITY when the step is
 * refused. */
taso_err_t taso_eqsat_node_cost(taso_eqsat_t *s, int32_t e, double *ms);
/* Node costs that held a guess costed again when next asked (after the
 * guesses were measured). */
void taso_eqsat_forget_guesses(taso_eqsat_t *s);

/* The exact extraction (extract_exact.c) within seconds: per class the
 * outputs need (folded classes aside), into choice, a node minimizing the
 * sum of the chosen nodes' own costs (own, per node, NAN until costed),
 * without a cycle; other classes' entries untouched. *status: TASO_EXACT_* (search.h);
 * *bound_ms a lower bound of that sum (TASO_EXACT_OPTIMAL: the sum). */
taso_err_t taso_eqsat_exact(taso_eqsat_t *s, double *own, const double *tree, int32_t *choice,
                            double seconds, int *status, double *bound_ms);

/* The cheapest graph the e-graph holds for the model's outputs, into best
 * (canonical), its whole cost in *best_ms (INFINITY: none found); the
 * result's fired counts and extraction statistics set; used (NULL, or a
 * flag per class) marks the classes best computes. */
taso_err_t taso_eqsat_extract(taso_eqsat_t *s, taso_graph_t *best, double *best_ms, bool *used);

#endif
