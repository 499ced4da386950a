/*
 * The optimizer's cost model: what a model graph costs to run.
 *
 * A graph costs the sum of the steps the runtime would run for it
 * (taso_rt_steps: a convolution or matmul with its fused bias, residual
 * and ReLU is one step), each step the measured time of its configuration
 * (the fastest of its timed runs).
 * Nodes computed from weights alone cost nothing: writing a model folds
 * them into new weights (taso_model_fold_weights).
 *
 * Configuration costs come from a cache keyed by taso_rt_config_key. A
 * miss asks the lookup source first (a cost database reader, when one is
 * plugged in), then measures the configuration on the backend on the spot
 * (taso_rt_time_config), unless measuring is off, which makes a miss an
 * error naming the configuration. A missing cost is never taken as zero.
 * A configuration the backend cannot run is timed on the reference
 * backend, since that is what the runtime falls back to.
 */
#ifndef TASO_COST_H
#define TASO_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime.h"

/* Marks constant[i] for each node of g computed from weights alone
 * (is_weight per input; constants included), what a written model folds
 * into a weight and the cost model takes as an input; true when any
 * operator is so marked. constant has g->nnodes entries. */
bool taso_cost_mark_folded(const taso_graph_t *g, const bool *is_weight, bool *constant);

/* Seconds on a monotonic clock (timings of the search; no MPI needed). */
double taso_search_now(void);
/* CPU seconds this process has used (user and system, all threads). */
double taso_search_cpu_now(void);

/* A source of costs consulted before measuring: *found false when it has
 * none for key. cfg is the configuration the key spells. */
typedef taso_err_t (*taso_cost_lookup_fn)(void *ctx, const char *key, const taso_rt_config_t *cfg,
                                          double *ms, bool *found);

/* A configuration's cost estimated, not measured: a fixed launch overhead
 * plus the longer of its arithmetic (2 flops per multiply-add of a conv2d,
 * matmul or bmm; one per element written otherwise) at TASO_EST_GFLOPS and
 * its traffic (every operand and result read or written once, 4 bytes an
 * element) at TASO_EST_GBS. The same figure on every machine and run, so
 * that a search on it is repeatable anywhere (tests, planning away from the
 * target); it ranks graphs, it does not predict their latency. */
#define TASO_EST_OVERHEAD_MS 0.005
#define TASO_EST_GFLOPS 100.0
#define TASO_EST_GBS 20.0
double taso_cost_estimate(const taso_rt_config_t *cfg);
/* taso_cost_estimate as the cache's source (--estimate-costs): every
 * configuration found. */
taso_err_t taso_cost_estimate_lookup(void *ctx, const char *key, const taso_rt_config_t *cfg,
                                     double *ms, bool *found);

/* A graph's cost computed by the caller instead of as the sum of the
 * runtime's steps (the joint search with library-call selection): g is
 * the graph with its types, absent marks
 * the nodes computed from weights alone (folded when the model is
 * written). It may ask the cache for configurations' costs. */
typedef taso_err_t (*taso_cost_graph_fn)(void *ctx, const taso_rt_typed_graph_t *g,
                                         const bool *absent, double *ms);

typedef struct {
  bool measure;               /* measure misses on the backend; false: a miss is an error */
  bool fusion;                /* steps as the runtime fuses them; false: one step per node */
  bool warm_weights;          /* no operand timed cold (taso_rt_weights_stay_warm of the model) */
  int warmup, runs;           /* timing of one configuration (the fastest of runs) */
  bool defer;                 /* a miss is noted as pending, not measured (see below) */
  taso_cost_lookup_fn lookup; /* consulted on a miss before measuring; NULL: none */
  void *lookup_ctx;           /* passed to lookup */
  taso_cost_graph_fn graph_cost; /* NULL: the sum of the steps; else every graph's cost
                                    (no step of a host is reused: memos stay empty) */
  void *graph_ctx;               /* passed to graph_cost */
} taso_cost_options_t;

/* Defaults: measure, fusion, 2 warm-up and 10 timed runs, no lookup. */
taso_cost_options_t taso_cost_options_default(void);

typedef struct {
  int64_t configs;   /* distinct configurations in the cache */
  int64_t measured;  /* of them measured here */
  int64_t looked_up; /* of them from the lookup source */
  int64_t fallbacks; /* of the measured, timed on the reference backend */
  int64_t hits;      /* cost queries answered by the cache */
  int64_t guessed;   /* of the configurations, those guessed and not measured since */
  int64_t guesses;   /* cost queries answered by a guess */
  double measure_s;  /* seconds spent measuring */
} taso_cost_stats_t;

typedef struct taso_cost_cache taso_cost_cache_t;

/* A cache measuring on be (open context ctx; both outlive the cache). */
taso_err_t taso_cost_cache_new(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                               const taso_cost_options_t *opt, taso_cost_cache_t **out);
void taso_cost_cache_free(taso_cost_cache_t *c);
void taso_cost_cache_stats(const taso_cost_cache_t *c, taso_cost_stats_t *s);

/* The cost of one configuration in milliseconds; 0 for a view
 * (taso_rt_config_is_view), which a run does not execute. */
taso_err_t taso_cost_of_config(taso_cost_cache_t *c, const taso_rt_config_t *cfg, double *ms);

/* Entry i (0 <= i < stats.configs) of the cache: its key and cost, so that
 * a tool can record what it measured; false when the cost is a guess. */
bool taso_cost_cache_entry(const taso_cost_cache_t *c, int64_t i, const char **key, double *ms);

/* The cost of graph g (types: taso_graph_infer's, for g) whose input
 * table entry k is a weight when is_weight[k]. */
taso_err_t taso_cost_of_graph(taso_cost_cache_t *c, const taso_graph_t *g,
                              const taso_tensor_t *types, const bool *is_weight, double *ms);

/* The steps of a graph, so that a rewrite of it is costed without
 * configuring and looking up again the steps it kept: ms[node] is the
 * cost of the step that ends at node (-1 where none does: an input, a
 * node folded away, or one inside a fused chain), packed[node] its
 * configuration as the cache keys it. Zero-initialize. */
typedef struct packed packed_t;
typedef struct {
  double *ms;
  packed_t *packed;
  int n, cap; /* n: the nodes of the graph it was recorded for; 0: none */
} taso_cost_memo_t;
void taso_cost_memo_free(taso_cost_memo_t *m);

/* taso_cost_of_graph, the same figure to the bit, given a memo of a host
 * graph and, for each node v of g, the host node prov[v] it was made from
 * (NULL: none; -1: none; taso_rewrite_all_traced gives it), as a hint. A
 * step of g whose configuration, as far as fusion shows it
 * (taso_rt_steps_partial), packs to the words of the host's step ending
 * at prov of its last node takes the host's cost, found without
 * configuring it or looking it up: equal words are the same cache entry.
 * Every other step is configured and looked up as taso_cost_of_graph
 * does; the steps and their order come from the planner on g, so the sum
 * is the same, term for term. With record, g's own memo is written there
 * (when the cost is complete; else record->n is 0). */
taso_err_t taso_cost_of_graph_reusing(taso_cost_cache_t *c, const taso_graph_t *g,
                                      const taso_tensor_t *types, const bool *is_weight,
                                      const taso_cost_memo_t *host, const int *prov,
                                      taso_cost_memo_t *record, double *ms);

/* Deferred misses, so that the ranks of a parallel search measure each
 * configuration once and agree on its cost. With opt.defer (and
 * measuring on), a configuration neither cached nor looked up is noted as
 * pending and its query fails with TASO_ERR_UNKNOWN; a graph cost goes on
 * through its other steps first, so that it notes every miss at once.
 * The caller measures the pending configurations somewhere (on one rank:
 * taso_cost_of_config with defer off), shares the figures, and adds them
 * to every cache with taso_cost_cache_put. */
int64_t taso_cost_pending(const taso_cost_cache_t *c, const taso_rt_config_t **cfgs);
void taso_cost_pending_clear(taso_cost_cache_t *c);
void taso_cost_cache_set_defer(taso_cost_cache_t *c, bool defer);
/* Adds cfg at ms unless the cache has it (then its figure stays, unless
 * a guess). */
taso_err_t taso_cost_cache_put(taso_cost_cache_t *c, const taso_rt_config_t *cfg, double ms);

/* Guessing (on, with measuring on): a configuration neither cached nor
 * looked up is not measured but guessed, taso_cost_estimate scaled by
 * what the cache's figures of its operator kind run against it (on the
 * low side: a quarter of them would cost less), and cached as a guess
 * (stats.guessed). Asked for again with guessing off, a guess is
 * measured then. So a search can cost many graphs at once and measure
 * only the steps of the graph it keeps (eqsat.c), which a guess no
 * longer than their measured time does not rule out. */
void taso_cost_cache_set_guess(taso_cost_cache_t *c, bool guess);
/* Measures the guesses of the cache of at most below ms, cheapest guess
 * first, until taso_search_now() passes deadline (< 0: none); *left:
 * those still guesses. */
taso_err_t taso_cost_measure_guesses(taso_cost_cache_t *c, double below, double deadline,
                                     int64_t *left);

#endif
