/*
 * What a search is run on (search.h), in a header of its own so that the
 * expansion (expand.h), which search.c calls, does not include search.h.
 */
#ifndef TASO_SEARCH_PROBLEM_H
#define TASO_SEARCH_PROBLEM_H

#include <stdbool.h>

#include "graph.h"

/* The model graph, its input table (the model's) and which of its inputs
 * are weights. */
typedef struct {
  const taso_graph_t *graph;
  const taso_inputs_t *inputs;
  const bool *is_weight;
} taso_search_problem_t;

#endif
