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

#include "expand.h"
#include "match.h"
#include "store.h"

/* ---- the search --------------------------------------------------------------- */

/* Where a rule chain starts: a queued result of the expansion. */
typedef struct {
  int rule;
  int64_t at; /* in the store */
  double ms;
} seed_t;

typedef struct {
  const taso_search_problem_t *prob;
  const taso_rules_t *rules;
  taso_cost_cache_t *costs;
  const taso_search_options_t *opt;
  taso_store_t store;
  taso_expander_t x;
  int max_nodes;  /* results with this many nodes or more are not queued */
  double best;    /* the best cost taken from the queue */
  int64_t parent; /* the graph being expanded, or the chain's last link */
  double start, last_progress;
  taso_search_result_t *res;
  seed_t *seeds; /* opt->chain: per rule, its cheapest result cheaper than the host */
  int nseeds, seeds_cap;
  double host_ms; /* the cost of the graph being expanded */
  taso_chain_stats_t chains;
} search_t;

/* A graph of cost ms was queued: is it the first as cheap as the target? */
static void note_target(search_t *s, double ms) {
  if (s->opt->target > 0 && s->res->target_seconds < 0 && ms <= s->opt->target)
    s->res->target_seconds = taso_search_now() - s->start;
}

/* A queued result cheaper than its host: the chain seed of its rule if
 * the cheapest so far (rules are applied in order, so a rule's results
 * come together). */
static taso_err_t note_seed(search_t *s, int64_t at, double ms) {
  seed_t *last = s->nseeds ? &s->seeds[s->nseeds - 1] : NULL;
  if (last && last->rule == s->x.rule) {
    if (ms < last->ms) *last = (seed_t){s->x.rule, at, ms};
    return TASO_OK;
  }
  if (s->nseeds == s->seeds_cap) {
    int cap = s->seeds_cap ? 2 * s->seeds_cap : 64;
    seed_t *v = realloc(s->seeds, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "%d chain seeds", cap);
    s->seeds = v;
    s->seeds_cap = cap;
  }
  s->seeds[s->nseeds++] = (seed_t){s->x.rule, at, ms};
  return TASO_OK;
}

/* One rewrite: queued when new, small enough and cheaper than alpha * best.
 * The cost comes before the hash and the seen set: costing a rewrite
 * reuses its host's steps, hashing it reads every node, and one not
 * cheap enough is dropped whether seen or not. A graph seen before was
 * costed without error then, so a type error still counts only new ones. */
static taso_err_t on_rewrite(void *ctx, const taso_graph_t *g) {
  search_t *s = ctx;
  s->res->generated++;
  if (g->nnodes >= s->max_nodes) return TASO_OK;
  double ms;
  taso_err_t err = taso_expander_cost(&s->x, g, &ms);
  if (err == TASO_ERR_SHAPE) {
    /* The matcher typed the rule's rhs alone; a consumer of its results
     * can still refuse them (a split whose input lost its split tree). */
    s->res->invalid++;
    return TASO_OK;
  }
  TASO_TRY(err);
  if (!(ms < s->opt->alpha * s->best)) return TASO_OK;
  uint64_t hash;
  TASO_TRY(taso_expander_hash(&s->x, g, &hash));
  if (s->store.nslots && s->store.slots[taso_seen_slot(&s->store, g, hash)]) return TASO_OK;
  s->res->queued++;
  TASO_TRY(taso_store_add(&s->store, g, hash, ms, s->parent, s->x.rule));
  note_target(s, ms);
  if (s->opt->chain && ms < s->host_ms) TASO_TRY(note_seed(s, s->store.n - 1, ms));
  /* trimming costs a sort: only when the queue holds twice what matters */
  int64_t keep = s->opt->budget - s->res->explored + 1;
  return s->store.nheap > 2 * keep + 1024 ? taso_trim_queue(&s->store, keep) : TASO_OK;
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

static bool stop_now(void *ctx) {
  search_t *s = ctx;
  s->res->timed_out = out_of_time(s);
  progress(s);
  return s->res->timed_out;
}

/* A link of a rule chain: queued as a rewrite of the link before it;
 * one seen before ends the chain (what follows it was made then). */
static taso_err_t on_link(void *ctx, const taso_graph_t *g, double ms, bool *go) {
  search_t *s = ctx;
  uint64_t hash;
  *go = false;
  TASO_TRY(taso_expander_hash(&s->x, g, &hash));
  if (s->store.nslots && s->store.slots[taso_seen_slot(&s->store, g, hash)]) return TASO_OK;
  s->res->queued++;
  TASO_TRY(taso_store_add(&s->store, g, hash, ms, s->parent, s->x.rule));
  s->parent = s->store.n - 1;
  note_target(s, ms);
  *go = !stop_now(s);
  return TASO_OK;
}

/* Applies every rule at every match of the stored graph `at`; with
 * opt->chain, then follows each rule's cheapest improving result with
 * that rule's chain (expand.h). The graph is copied out: queuing results
 * may move the store. */
static taso_err_t expand(search_t *s, int64_t at, taso_graph_t *host) {
  TASO_TRY(taso_graph_copy(host, &s->store.v[at].g));
  s->parent = at;
  s->host_ms = s->store.v[at].cost;
  s->nseeds = 0;
  TASO_TRY(taso_expand(&s->x, host, on_rewrite, stop_now, s));
  for (int i = 0; i < s->nseeds && !s->res->timed_out; i++) {
    seed_t seed = s->seeds[i];
    if (!s->store.v[seed.at].g.nnodes) continue; /* trimmed off the queue */
    TASO_TRY(taso_graph_copy(host, &s->store.v[seed.at].g));
    s->parent = seed.at;
    TASO_TRY(
        taso_expand_chain(&s->x, host, seed.ms, seed.rule, s->max_nodes, on_link, s, &s->chains));
  }
  return TASO_OK;
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
  double cost = 0;
  uint64_t hash = 0;
  taso_err_t err = taso_expander_start(&s->x, &start, &cost);
  if (err == TASO_OK) err = taso_expander_hash(&s->x, &start, &hash);
  if (err == TASO_OK) err = taso_store_add(&s->store, &start, hash, cost, -1, -1);
  s->max_nodes = 2 * start.nnodes;
  taso_graph_free(&start);
  TASO_TRY(err);
  s->res->cost_before = s->best = cost;
  int64_t best_at = 0;
  while (s->store.nheap > 0 && !s->res->timed_out) {
    int64_t at = taso_heap_pop(&s->store);
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

taso_err_t taso_search_result_start(taso_search_result_t *r, int nrules) {
  memset(r, 0, sizeof *r);
  taso_graph_init(&r->best);
  r->fired = calloc((size_t)nrules + 1, sizeof *r->fired);
  if (!r->fired) return taso_error(TASO_ERR_NOMEM, "rule counts");
  r->ranks = 1;
  r->target_seconds = -1;
  return TASO_OK;
}

taso_err_t taso_search_backtracking(const taso_search_problem_t *prob, const taso_rules_t *rules,
                                    taso_cost_cache_t *costs, const taso_search_options_t *opt,
                                    taso_search_result_t *result) {
  TASO_TRY(taso_search_result_start(result, rules->n));
  search_t s = {.prob = prob, .rules = rules, .costs = costs, .opt = opt, .res = result};
  s.x = (taso_expander_t){.prob = prob,
                          .rules = rules,
                          .costs = costs,
                          .guard = opt->guard,
                          .check = opt->check_incremental};
  s.start = s.last_progress = taso_search_now();
  double cpu = taso_search_cpu_now();
  taso_graph_t host;
  taso_graph_init(&host);
  taso_err_t err = run(&s, &host);
  result->checked = s.x.checked;
  result->chained = s.chains.links;
  result->generated += s.chains.generated;
  result->invalid += s.chains.invalid;
  result->seconds = taso_search_now() - s.start;
  result->cpu_seconds = taso_search_cpu_now() - cpu;
  taso_graph_free(&host);
  taso_store_free(&s.store);
  taso_expander_free(&s.x);
  free(s.seeds);
  if (err != TASO_OK) taso_search_result_free(result);
  return err;
}

void taso_search_result_free(taso_search_result_t *r) {
  taso_graph_free(&r->best);
  for (int k = 0; r->path && k <= r->steps; k++)
    taso_graph_free(&r->path[k]);
  free(r->path);
  free(r->path_rules);
  free(r->fired);
  free(r->rank_explored);
  r->rank_explored = NULL;
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
