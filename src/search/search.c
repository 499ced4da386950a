/*
 * The baseline search (search.h): the original TASO's best-first search
 * with a relaxation factor, over canonical graphs.
 *
 * Every graph ever queued stays in a store (its cost, and the rewrite that
 * made it from its parent, so that the path to the best graph can be told),
 * and a hash set over the store drops rewrites seen before: graphs with
 * equal hashes are compared exactly.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include "search.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

/* ---- rules ------------------------------------------------------------------ */

_Static_assert(TASO_OP_COUNT <= 32, "taso_rule_t.kinds holds one bit per operator kind");

uint32_t taso_graph_kinds(const taso_graph_t *g) {
  uint32_t k = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].kind != TASO_OP_INPUT) k |= 1u << g->nodes[i].kind;
  return k;
}

/* Whether every input rhs reads is one lhs binds: a rewrite must know
 * what to put there. */
static bool inputs_bound(const taso_graph_t *lhs, const taso_graph_t *rhs) {
  for (int i = 0; i < rhs->nnodes; i++) {
    if (rhs->nodes[i].kind != TASO_OP_INPUT) continue;
    bool found = false;
    for (int j = 0; j < lhs->nnodes && !found; j++)
      found = lhs->nodes[j].kind == TASO_OP_INPUT && lhs->nodes[j].p.input == rhs->nodes[i].p.input;
    if (!found) return false;
  }
  return true;
}

static taso_err_t add_rule(taso_rules_t *r, const taso_graph_t *lhs, const taso_graph_t *rhs,
                           int64_t row, bool reversed) {
  if (!taso_graph_kinds(lhs) || !inputs_bound(lhs, rhs) || lhs->noutputs != rhs->noutputs)
    return TASO_OK;
  taso_rule_t *rule = &r->v[r->n];
  taso_graph_init(&rule->lhs);
  taso_graph_init(&rule->rhs);
  rule->row = row;
  rule->reversed = reversed;
  rule->kinds = taso_graph_kinds(lhs);
  r->n++;
  TASO_TRY(taso_graph_copy(&rule->lhs, lhs));
  TASO_TRY(taso_graph_copy(&rule->rhs, rhs));
  return taso_shape_cond_of(&rule->lhs, &rule->rhs, &r->inputs, &rule->cond);
}

/* The index in rules->inputs of a file's input: an entry of the same name
 * and shape, else a new one, named NAME_2, NAME_3... when another file
 * gave the name another shape (re-proofs name their constants so). */
static taso_err_t merged_input(taso_rules_t *rules, const taso_input_t *in, int *index) {
  char name[TASO_NAME_LEN];
  snprintf(name, sizeof name, "%s", in->name);
  for (int k = 2;; k++) {
    int at = taso_inputs_find(&rules->inputs, name);
    if (at < 0) break;
    const taso_tensor_t *t = &rules->inputs.v[at].type;
    if (t->rank == in->type.rank && !memcmp(t->dim, in->type.dim, sizeof t->dim)) {
      *index = at;
      return TASO_OK;
    }
    if (snprintf(name, sizeof name, "%.*s_%d", TASO_NAME_LEN - 5, in->name, k) >= TASO_NAME_LEN)
      return taso_error(TASO_ERR_LIMIT, "input '%s' in too many shapes", in->name);
  }
  *index = rules->inputs.n;
  return taso_inputs_add(&rules->inputs, name, in->type.rank, in->type.dim);
}

/* g with its inputs renumbered by map, into out (initialized). */
static taso_err_t remap_inputs(const taso_graph_t *g, const int *map, taso_graph_t *out) {
  TASO_TRY(taso_graph_copy(out, g));
  for (int i = 0; i < out->nnodes; i++)
    if (out->nodes[i].kind == TASO_OP_INPUT) out->nodes[i].p.input = map[out->nodes[i].p.input];
  return TASO_OK;
}

taso_err_t taso_rules_add(taso_rules_t *rules, const taso_inputs_t *inputs,
                          const taso_graph_t *graphs, int64_t ngraphs, const taso_subst_t *rows,
                          int64_t nrows, int64_t row_base) {
  taso_rule_t *v = realloc(rules->v, sizeof *v * (size_t)(rules->n + 2 * nrows + 1));
  if (!v) return taso_error(TASO_ERR_NOMEM, "%lld rules", (long long)(rules->n + 2 * nrows));
  rules->v = v;
  int *map = malloc(sizeof *map * (size_t)(inputs->n + 1));
  if (!map) return taso_error(TASO_ERR_NOMEM, "input map");
  taso_err_t err = TASO_OK;
  for (int i = 0; i < inputs->n && err == TASO_OK; i++)
    err = merged_input(rules, &inputs->v[i], &map[i]);
  taso_graph_t src, dst;
  taso_graph_init(&src);
  taso_graph_init(&dst);
  for (int64_t i = 0; i < nrows && err == TASO_OK; i++) {
    if (rows[i].verdict != TASO_VERDICT_PROVED) continue;
    if (rows[i].src < 0 || rows[i].src >= ngraphs || rows[i].dst < 0 || rows[i].dst >= ngraphs) {
      err = taso_error(TASO_ERR_FORMAT, "substitution row %lld names a graph outside the set",
                       (long long)i);
      break;
    }
    err = remap_inputs(&graphs[rows[i].src], map, &src);
    if (err == TASO_OK) err = remap_inputs(&graphs[rows[i].dst], map, &dst);
    if (err == TASO_OK) err = add_rule(rules, &src, &dst, row_base + i, false);
    if (err == TASO_OK) err = add_rule(rules, &dst, &src, row_base + i, true);
  }
  taso_graph_free(&src);
  taso_graph_free(&dst);
  free(map);
  return err;
}

taso_err_t taso_rules_make(const taso_inputs_t *inputs, const taso_graph_t *graphs,
                           int64_t ngraphs, const taso_subst_t *rows, int64_t nrows,
                           taso_rules_t *rules) {
  memset(rules, 0, sizeof *rules);
  return taso_rules_add(rules, inputs, graphs, ngraphs, rows, nrows, 0);
}

void taso_rules_free(taso_rules_t *rules) {
  for (int i = 0; i < rules->n; i++) {
    taso_graph_free(&rules->v[i].lhs);
    taso_graph_free(&rules->v[i].rhs);
    taso_shape_cond_free(&rules->v[i].cond);
  }
  free(rules->v);
  taso_inputs_free(&rules->inputs);
  memset(rules, 0, sizeof *rules);
}

int taso_rule_format(const taso_rules_t *rules, int i, char *buf, int len) {
  const taso_rule_t *r = &rules->v[i];
  int n = taso_graph_format(&r->lhs, &rules->inputs, buf, len);
  int at = n < len ? n : (len > 0 ? len - 1 : 0);
  n += snprintf(buf + at, (size_t)(len - at > 0 ? len - at : 0), " => ");
  at = n < len ? n : (len > 0 ? len - 1 : 0);
  return n + taso_graph_format(&r->rhs, &rules->inputs, buf + at, len - at > 0 ? len - at : 0);
}

/* ---- the store of graphs and the seen set ---------------------------------- */

typedef struct {
  taso_graph_t g;   /* canonical, exactly sized */
  double cost;      /* ms */
  uint64_t hash;    /* taso_graph_hash */
  int64_t parent;   /* store index of the graph it was rewritten from; -1 */
  int rule;         /* the rule that did it */
} stored_t;

typedef struct {
  stored_t *v;
  int64_t n, cap;
  int64_t *slots;   /* open addressing by hash: index + 1, 0 empty */
  int64_t nslots;
  int64_t *heap;    /* store indices, cheapest first */
  int64_t nheap;
} store_t;

static void store_free(store_t *s) {
  for (int64_t i = 0; i < s->n; i++) taso_graph_free(&s->v[i].g);
  free(s->v);
  free(s->slots);
  free(s->heap);
}

/* The slot of a stored graph equal to g, or the empty slot for it. */
static int64_t seen_slot(const store_t *s, const taso_graph_t *g, uint64_t hash) {
  int64_t mask = s->nslots - 1, at = (int64_t)(hash & (uint64_t)mask);
  for (; s->slots[at]; at = (at + 1) & mask) {
    const stored_t *e = &s->v[s->slots[at] - 1];
    if (e->hash == hash && taso_graph_compare(&e->g, g) == 0) break;
  }
  return at;
}

/* The seen set anew: every graph still held (taken or queued). */
static taso_err_t rebuild_slots(store_t *s) {
  memset(s->slots, 0, sizeof *s->slots * (size_t)s->nslots);
  for (int64_t i = 0; i < s->n; i++)
    if (s->v[i].g.nodes) s->slots[seen_slot(s, &s->v[i].g, s->v[i].hash)] = i + 1;
  return TASO_OK;
}

static taso_err_t grow_slots(store_t *s) {
  int64_t n = s->nslots ? 2 * s->nslots : 4096;
  int64_t *slots = calloc((size_t)n, sizeof *slots);
  if (!slots) return taso_error(TASO_ERR_NOMEM, "seen set of %lld graphs", (long long)s->n);
  free(s->slots);
  s->slots = slots;
  s->nslots = n;
  return rebuild_slots(s);
}

static bool heap_less(const store_t *s, int64_t a, int64_t b) {
  /* ties by age, so that the order does not depend on the heap's shape */
  return s->v[a].cost < s->v[b].cost || (s->v[a].cost == s->v[b].cost && a < b);
}

static void heap_push(store_t *s, int64_t x) {
  int64_t i = s->nheap++;
  while (i > 0 && heap_less(s, x, s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = x;
}

static int64_t heap_pop(store_t *s) {
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

static const store_t *sort_store; /* qsort has no context argument in C11 */

/* The queue's order: cost, then age. */
static int heap_order(const void *a, const void *b) {
  const store_t *s = sort_store;
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  if (s->v[x].cost != s->v[y].cost) return s->v[x].cost < s->v[y].cost ? -1 : 1;
  return (x > y) - (x < y);
}

/* Keeps the cheapest `keep` queued graphs; a sorted array is a heap. */
static taso_err_t trim_queue(store_t *s, int64_t keep) {
  if (s->nheap <= keep) return TASO_OK;
  sort_store = s;
  qsort(s->heap, (size_t)s->nheap, sizeof *s->heap, heap_order);
  for (int64_t i = keep; i < s->nheap; i++) taso_graph_free(&s->v[s->heap[i]].g);
  s->nheap = keep;
  return rebuild_slots(s);
}

/* Adds g (copied, exactly sized) to the store, the seen set and the queue. */
static taso_err_t store_add(store_t *s, const taso_graph_t *g, uint64_t hash, double cost,
                            int64_t parent, int rule) {
  if (2 * (s->n + 1) > s->nslots) TASO_TRY(grow_slots(s));
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
  taso_graph_init(&e->g);
  TASO_TRY(taso_graph_copy(&e->g, g));
  e->cost = cost;
  e->hash = hash;
  e->parent = parent;
  e->rule = rule;
  s->slots[seen_slot(s, g, hash)] = s->n + 1;
  heap_push(s, s->n);
  s->n++;
  return TASO_OK;
}

/* ---- the search --------------------------------------------------------------- */

typedef struct {
  const taso_search_problem_t *prob;
  const taso_rules_t *rules;
  taso_cost_cache_t *costs;
  const taso_search_options_t *opt;
  store_t store;
  taso_tensor_t *types; /* scratch: types of a rewrite */
  int types_cap;
  int max_nodes;        /* results with this many nodes or more are not queued */
  double best;          /* the best cost taken from the queue */
  int64_t parent;       /* the graph being expanded */
  int rule;             /* the rule being applied */
  double start, last_progress;
  taso_search_result_t *res;
} search_t;

static taso_err_t fit_types(search_t *s, int nnodes) {
  if (2 * nnodes <= s->types_cap) return TASO_OK;
  int cap = s->types_cap ? s->types_cap : 512;
  while (cap < 2 * nnodes) cap *= 2;
  taso_tensor_t *t = realloc(s->types, sizeof *t * (size_t)cap);
  if (!t) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", nnodes);
  s->types = t;
  s->types_cap = cap;
  return TASO_OK;
}

/* The cost of g (typed here, into the scratch types). */
static taso_err_t cost_of(search_t *s, const taso_graph_t *g, double *ms) {
  TASO_TRY(fit_types(s, g->nnodes + 1));
  TASO_TRY(taso_graph_infer(g, s->prob->inputs, s->types));
  return taso_cost_of_graph(s->costs, g, s->types, s->prob->is_weight, ms);
}

/* One rewrite: queued when new, small enough and cheaper than alpha * best. */
static taso_err_t on_rewrite(void *ctx, const taso_graph_t *g) {
  search_t *s = ctx;
  s->res->generated++;
  if (g->nnodes >= s->max_nodes) return TASO_OK;
  uint64_t hash = taso_graph_hash(g);
  if (s->store.nslots && s->store.slots[seen_slot(&s->store, g, hash)]) return TASO_OK;
  double ms;
  taso_err_t err = cost_of(s, g, &ms);
  if (err == TASO_ERR_SHAPE) {
    /* The matcher typed the rule's rhs alone; a consumer of its results
     * can still refuse them (a split whose input lost its split tree). */
    s->res->invalid++;
    return TASO_OK;
  }
  TASO_TRY(err);
  if (!(ms < s->opt->alpha * s->best)) return TASO_OK;
  s->res->queued++;
  TASO_TRY(store_add(&s->store, g, hash, ms, s->parent, s->rule));
  /* trimming costs a sort: only when the queue holds twice what matters */
  int64_t keep = s->opt->budget - s->res->explored + 1;
  return s->store.nheap > 2 * keep + 1024 ? trim_queue(&s->store, keep) : TASO_OK;
}

static bool out_of_time(const search_t *s) {
  return s->opt->time_limit > 0 && taso_search_now() - s->start >= s->opt->time_limit;
}

static void progress(search_t *s) {
  double now = taso_search_now();
  if (!s->opt->progress || now - s->last_progress < 2.0) return;
  s->last_progress = now;
  s->opt->progress(s->opt->progress_ctx, s->res->explored, s->store.nheap, s->best, now - s->start);
}

/* Applies every rule at every match of the stored graph `at`. The graph
 * is copied out: queuing results may move the store. */
static taso_err_t expand(search_t *s, int64_t at, taso_graph_t *host) {
  TASO_TRY(taso_graph_copy(host, &s->store.v[at].g));
  taso_tensor_t *types = malloc(sizeof *types * 2 * (size_t)(host->nnodes + 1));
  if (!types) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", host->nnodes);
  taso_err_t err = taso_graph_infer(host, s->prob->inputs, types);
  uint32_t kinds = taso_graph_kinds(host);
  s->parent = at;
  for (int r = 0; r < s->rules->n && err == TASO_OK && !s->res->timed_out; r++) {
    const taso_rule_t *rule = &s->rules->v[r];
    if (rule->kinds & ~kinds) continue; /* an lhs operator the host lacks */
    s->rule = r;
    if (s->opt->guard)
      err = taso_rewrite_all_guarded(s->opt->guard, r, 0, host, types, &rule->lhs, &rule->rhs,
                                     on_rewrite, s);
    else
      err = taso_rewrite_all_checked(host, types, &rule->lhs, &rule->rhs, &s->rules->inputs,
                                     &rule->cond, on_rewrite, s);
    s->res->timed_out = out_of_time(s);
    progress(s);
  }
  free(types);
  return err;
}

/* The path from the input graph to stored graph at: its graphs, and how
 * often each rule fired on it. Graphs on it were all taken from the queue,
 * so the store still holds them. */
static taso_err_t record_path(search_t *s, int64_t at) {
  taso_search_result_t *r = s->res;
  for (int64_t i = at; s->store.v[i].parent >= 0; i = s->store.v[i].parent) {
    r->fired[s->store.v[i].rule]++;
    r->steps++;
  }
  r->path = calloc((size_t)r->steps + 1, sizeof *r->path);
  r->path_rules = calloc((size_t)r->steps + 1, sizeof *r->path_rules);
  if (!r->path || !r->path_rules) return taso_error(TASO_ERR_NOMEM, "path of %d steps", r->steps);
  for (int k = r->steps; k >= 0; k--, at = s->store.v[at].parent) {
    taso_graph_init(&r->path[k]);
    TASO_TRY(taso_graph_copy(&r->path[k], &s->store.v[at].g));
    r->path_rules[k] = s->store.v[at].rule;
  }
  return TASO_OK;
}

static taso_err_t run(search_t *s, taso_graph_t *host) {
  taso_graph_t start;
  taso_graph_init(&start);
  taso_err_t err = taso_graph_copy(&start, s->prob->graph);
  if (err == TASO_OK) err = taso_graph_canonicalize(&start);
  double cost = 0;
  if (err == TASO_OK) err = cost_of(s, &start, &cost);
  if (err == TASO_OK) err = store_add(&s->store, &start, taso_graph_hash(&start), cost, -1, -1);
  s->max_nodes = 2 * start.nnodes;
  taso_graph_free(&start);
  TASO_TRY(err);
  s->res->cost_before = s->best = cost;
  int64_t best_at = 0;
  while (s->store.nheap > 0 && !s->res->timed_out) {
    int64_t at = heap_pop(&s->store);
    if (s->store.v[at].cost < s->best) {
      s->best = s->store.v[at].cost;
      best_at = at;
    }
    if (s->res->explored >= s->opt->budget) {
      s->res->budget_spent = true;
      break;
    }
    s->res->explored++;
    TASO_TRY(expand(s, at, host));
  }
  s->res->cost_after = s->best;
  TASO_TRY(record_path(s, best_at));
  return taso_graph_copy(&s->res->best, &s->store.v[best_at].g);
}

taso_err_t taso_search_backtracking(const taso_search_problem_t *prob, const taso_rules_t *rules,
                                    taso_cost_cache_t *costs, const taso_search_options_t *opt,
                                    taso_search_result_t *result) {
  memset(result, 0, sizeof *result);
  taso_graph_init(&result->best);
  result->fired = calloc((size_t)rules->n + 1, sizeof *result->fired);
  if (!result->fired) return taso_error(TASO_ERR_NOMEM, "rule counts");
  search_t s = {.prob = prob, .rules = rules, .costs = costs, .opt = opt, .res = result};
  s.start = s.last_progress = taso_search_now();
  taso_graph_t host;
  taso_graph_init(&host);
  taso_err_t err = run(&s, &host);
  result->seconds = taso_search_now() - s.start;
  taso_graph_free(&host);
  store_free(&s.store);
  free(s.types);
  if (err != TASO_OK) taso_search_result_free(result);
  return err;
}

void taso_search_result_free(taso_search_result_t *r) {
  taso_graph_free(&r->best);
  for (int k = 0; r->path && k <= r->steps; k++) taso_graph_free(&r->path[k]);
  free(r->path);
  free(r->path_rules);
  free(r->fired);
  r->path = NULL;
  r->path_rules = NULL;
  r->fired = NULL;
}

/* ---- the record of fired rules ------------------------------------------------ */

static const taso_field_t fired_fields[] = {
    {"rule", offsetof(taso_fired_rule_t, text), TASO_FIELD_STRING, TASO_RULE_TEXT},
    {"row", offsetof(taso_fired_rule_t, row), TASO_FIELD_INT64, 0},
    {"count", offsetof(taso_fired_rule_t, count), TASO_FIELD_INT64, 0},
};
const taso_table_t taso_fired_rules_table = {"/optimize_rules", sizeof(taso_fired_rule_t),
                                             fired_fields, 3};

taso_err_t taso_fired_rules(const taso_rules_t *rules, const taso_search_result_t *r,
                            taso_fired_rule_t **out, int64_t *n) {
  taso_fired_rule_t *rows = calloc((size_t)rules->n + 1, sizeof *rows);
  if (!rows) return taso_error(TASO_ERR_NOMEM, "rules table");
  *n = 0;
  for (int i = 0; i < rules->n; i++) {
    if (!r->fired[i]) continue;
    taso_fired_rule_t *f = &rows[(*n)++];
    taso_rule_format(rules, i, f->text, TASO_RULE_TEXT);
    f->row = rules->v[i].row;
    f->count = r->fired[i];
  }
  for (int64_t i = 1; i < *n; i++) /* a few rows: insertion sort, stable */
    for (int64_t j = i; j > 0 && rows[j].count > rows[j - 1].count; j--) {
      taso_fired_rule_t x = rows[j];
      rows[j] = rows[j - 1];
      rows[j - 1] = x;
    }
  *out = rows;
  return TASO_OK;
}
