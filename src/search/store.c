/* The store of a search (store.h). */
#include "store.h"

#include <stdlib.h>
#include <string.h>

void taso_store_free(taso_store_t *s) {
  for (int64_t i = 0; i < s->n; i++)
    taso_graph_free(&s->v[i].g);
  free(s->v);
  free(s->slots);
  free(s->heap);
}

int64_t taso_seen_slot(const taso_store_t *s, const taso_graph_t *g, uint64_t hash) {
  int64_t mask = s->nslots - 1, at = (int64_t)(hash & (uint64_t)mask);
  for (; s->slots[at]; at = (at + 1) & mask) {
    const stored_t *e = &s->v[s->slots[at] - 1];
    if (e->hash == hash && taso_graph_compare(&e->g, g) == 0) break;
  }
  return at;
}

/* The seen set anew: every graph still held (taken or queued). */
static taso_err_t rebuild_slots(taso_store_t *s) {
  memset(s->slots, 0, sizeof *s->slots * (size_t)s->nslots);
  for (int64_t i = 0; i < s->n; i++)
    if (s->v[i].g.nodes && !s->v[i].path_only)
      s->slots[taso_seen_slot(s, &s->v[i].g, s->v[i].hash)] = i + 1;
  return TASO_OK;
}

static taso_err_t grow_slots(taso_store_t *s) {
  int64_t n = s->nslots ? 2 * s->nslots : 4096;
  int64_t *slots = calloc((size_t)n, sizeof *slots);
  if (!slots) return taso_error(TASO_ERR_NOMEM, "seen set of %lld graphs", (long long)s->n);
  free(s->slots);
  s->slots = slots;
  s->nslots = n;
  return rebuild_slots(s);
}

/* The queue's order: cost, then (by_hash) hash, then age; negative when
 * a comes first. Age breaks ties so that the order does not depend on the
 * heap's shape. */
static int queue_order(const taso_store_t *s, int64_t a, int64_t b) {
  const stored_t *x = &s->v[a], *y = &s->v[b];
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  if (s->by_hash && x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return (a > b) - (a < b);
}

static bool heap_less(const taso_store_t *s, int64_t a, int64_t b) {
  return queue_order(s, a, b) < 0;
}

void taso_heap_push(taso_store_t *s, int64_t x) {
  int64_t i = s->nheap++;
  while (i > 0 && heap_less(s, x, s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = x;
}

int64_t taso_heap_pop(taso_store_t *s) {
  int64_t top = s->heap[0], x = s->heap[--s->nheap], i = 0;
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= s->nheap) break;
    if (c + 1 < s->nheap && heap_less(s, s->heap[c + 1], s->heap[c])) c++;
    if (!heap_less(s, s->heap[c], x)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->nheap) s->heap[i] = x;
  return top;
}

/* ---- keeping the queue small ----------------------------------------------------
 * Only the graphs still to be taken from the queue matter: with r takes
 * left, a graph with r or more cheaper graphs ahead of it is never taken,
 * since each take moves it up by one at most and each new cheaper graph
 * moves it down. So the queue keeps the cheapest r + 1 and forgets the
 * rest: their graphs are freed and they leave the seen set (one made again
 * later is again behind too many). Graphs already taken stay in the seen
 * set, so none is expanded twice. This bounds memory by the budget rather
 * than by the number of rewrites, and changes no result. */

static const taso_store_t *sort_store; /* qsort has no context argument in C11 */

static int heap_order(const void *a, const void *b) {
  return queue_order(sort_store, *(const int64_t *)a, *(const int64_t *)b);
}

/* A sorted array is a heap. */
taso_err_t taso_trim_queue(taso_store_t *s, int64_t keep) {
  if (s->nheap <= keep) return TASO_OK;
  sort_store = s;
  qsort(s->heap, (size_t)s->nheap, sizeof *s->heap, heap_order);
  for (int64_t i = keep; i < s->nheap; i++)
    taso_graph_free(&s->v[s->heap[i]].g);
  s->nheap = keep;
  return rebuild_slots(s);
}

/* Room for one more entry, which is cleared. */
static taso_err_t append(taso_store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                         int64_t parent, int rule) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? 2 * s->cap : 1024;
    stored_t *v = realloc(s->v, sizeof *v * (size_t)cap);
    int64_t *heap = realloc(s->heap, sizeof *heap * (size_t)cap);
    if (v) s->v = v;
    if (heap) s->heap = heap;
    if (!v || !heap) return taso_error(TASO_ERR_NOMEM, "store of %lld graphs", (long long)s->n);
    s->cap = cap;
  }
  stored_t *e = &s->v[s->n];
  memset(e, 0, sizeof *e);
  taso_graph_init(&e->g);
  TASO_TRY(taso_graph_copy(&e->g, g));
  e->cost = cost;
  e->hash = hash;
  e->parent = parent;
  e->rule = rule;
  return TASO_OK;
}

taso_err_t taso_store_add(taso_store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                          int64_t parent, int rule) {
  if (2 * (s->n + 1) > s->nslots) TASO_TRY(grow_slots(s));
  TASO_TRY(append(s, g, hash, cost, parent, rule));
  s->slots[taso_seen_slot(s, g, hash)] = s->n + 1;
  taso_heap_push(s, s->n);
  s->n++;
  return TASO_OK;
}

taso_err_t taso_store_keep_path(taso_store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                                int64_t parent, int parent_rank, int depth, int rule) {
  TASO_TRY(append(s, g, hash, cost, parent, rule));
  s->v[s->n].parent_rank = parent_rank;
  s->v[s->n].depth = depth;
  s->v[s->n].path_only = true;
  s->n++;
  return TASO_OK;
}
