/*
 * The joint search (taso-optimize --select): the search's graphs are
 * costed by their selected call plans (select.h, row-major layouts), each
 * call by the search's cost cache (cost.h), so that rewrites and library
 * calls are chosen together.
 */
#ifndef TASO_SELECT_JOINT_H
#define TASO_SELECT_JOINT_H

#include <stdbool.h>

#include "cost.h"
#include "library.h"

typedef struct {
  taso_cost_cache_t *costs; /* each call's configuration */
  taso_library_t *lib;      /* the calls to choose from */
  bool warm;                /* weights timed warm */
  bool deferring;           /* the parallel search defers the cache's misses */
  bool pending;             /* a call plan's configuration was deferred */
} taso_joint_t;

/* The cost cache's graph cost (taso_cost_graph_fn) with a taso_joint_t as
 * ctx: the graph's selected call plan's cost. In the parallel search a
 * miss is deferred (measured later, on rank 0): the selection goes on
 * with an estimate, so that every miss of the graph is noted in one pass,
 * and the graph's cost is then TASO_ERR_UNKNOWN (pending). */
taso_err_t taso_joint_graph_cost(void *joint, const taso_rt_typed_graph_t *g, const bool *absent,
                                 double *ms);

#endif
