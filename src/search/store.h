/*
 * The store of a search (internal to src/search): every graph queued, its
 * cost and the rewrite that made it from its parent (so that the path to
 * the best graph can be told), a seen set over it that drops rewrites seen
 * before (graphs with equal hashes are compared exactly), and the queue of
 * graphs still to be expanded, cheapest first.
 */
#ifndef TASO_SEARCH_STORE_H
#define TASO_SEARCH_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

typedef struct {
  taso_graph_t g;  /* canonical, exactly sized */
  double cost;     /* ms */
  uint64_t hash;   /* taso_graph_struct_hash (taso_expander_hash) */
  int64_t parent;  /* store index of the graph it was rewritten from; -1 */
  int parent_rank; /* the rank holding the parent (parallel search; else 0) */
  int depth;       /* rewrites from the input graph (parallel search; else 0) */
  int rule;        /* the rule that did it */
  bool path_only;  /* a copy kept for a path only: never queued, not in the seen set
                      (the parallel search's rule-chain links, queued at their owners) */
} stored_t;

typedef struct {
  stored_t *v;
  int64_t n, cap;
  int64_t *slots; /* open addressing by hash: index + 1, 0 empty */
  int64_t nslots;
  int64_t *heap; /* store indices, cheapest first */
  int64_t nheap;
  bool by_hash; /* ties of cost by hash, then age (else by age): an order
                   that does not depend on which rank holds a graph */
} taso_store_t;

void taso_store_free(taso_store_t *s);
/* The slot of a stored graph equal to g, or the empty slot for it
 * (s->slots[slot] is 0 then). */
int64_t taso_seen_slot(const taso_store_t *s, const taso_graph_t *g, uint64_t hash);
/* Adds g (copied, exactly sized) to the store, the seen set and the queue. */
taso_err_t taso_store_add(taso_store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                          int64_t parent, int rule);
/* Adds g (copied) as a path-only entry (stored_t.path_only). */
taso_err_t taso_store_keep_path(taso_store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                                int64_t parent, int parent_rank, int depth, int rule);
/* The cheapest queued graph, taken off the queue. */
int64_t taso_heap_pop(taso_store_t *s);
void taso_heap_push(taso_store_t *s, int64_t x);
/* Keeps the cheapest `keep` queued graphs (see store.c). */
taso_err_t taso_trim_queue(taso_store_t *s, int64_t keep);

#endif
