/*
 * The configurations to measure (measure.h): each model's nodes alone, the
 * fused steps its plans run, with rules the steps of the graphs they make
 * of it, with a library the calls a selection weighs; collected by every
 * rank for its share of the models, deduplicated by key on rank 0.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include "measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "cost.h"
#include "hash.h"
#include "select.h"

/* Multiply-adds of a convolution or product, else elements touched: only
 * the order of measuring depends on it. */
static double flops_of(const taso_rt_config_t *c) {
  double out = (double)taso_tensor_size(&c->out[0]);
  if (c->kind == TASO_OP_CONV2D)
    return out * (double)taso_tensor_size(&c->in[1]) / (double)c->in[1].dim[0];
  if (c->kind == TASO_OP_MATMUL || c->kind == TASO_OP_BMM)
    return out * (double)c->in[0].dim[c->in[0].rank - 1];
  double moved = out;
  for (int i = 0; i < c->nin; i++)
    moved += (double)taso_tensor_size(&c->in[i]);
  return moved;
}

static uint64_t key_hash(const char *key) {
  return taso_mix64(taso_fnv64(TASO_FNV_START, key, strlen(key)));
}

/* The slot of key: its item's, or the empty one where it would go. */
static int64_t key_slot(const taso_measure_items_t *it, const char *key) {
  int64_t mask = it->nslots - 1, i = (int64_t)(key_hash(key) & (uint64_t)mask);
  while (it->slots[i] && strcmp(it->v[it->slots[i] - 1].key, key) != 0)
    i = (i + 1) & mask;
  return i;
}

static taso_err_t grow_slots(taso_measure_items_t *it) {
  int64_t n = it->nslots ? 2 * it->nslots : 1024;
  free(it->slots);
  if (!(it->slots = calloc((size_t)n, sizeof *it->slots)))
    return taso_error(TASO_ERR_NOMEM, "no memory for configurations");
  it->nslots = n;
  for (int64_t j = 0; j < it->n; j++)
    it->slots[key_slot(it, it->v[j].key)] = j + 1;
  return TASO_OK;
}

/* Room for one more item in it->v. */
static taso_err_t reserve_item(taso_measure_items_t *it) {
  if (it->n == it->cap) {
    int64_t cap = it->cap ? 2 * it->cap : 64;
    taso_measure_item_t *grown = realloc(it->v, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for configurations");
    it->v = grown;
    it->cap = cap;
  }
  return TASO_OK;
}

/* Adds cfg unless its key is there already (expansion gives the same
 * configurations again and again), or it is a view, which runs nothing
 * and costs 0 (taso_rt_config_is_view); a model's own configuration is
 * not one that expansion added. */
static taso_err_t add_item(taso_measure_items_t *it, const taso_rt_config_t *cfg, bool expanded) {
  if (taso_rt_config_is_view(cfg)) return TASO_OK;
  TASO_TRY(reserve_item(it));
  if (2 * (it->n + 1) > it->nslots) TASO_TRY(grow_slots(it));
  taso_measure_item_t *x = &it->v[it->n];
  memset(x, 0, sizeof *x);
  if (taso_rt_config_key(cfg, x->key, sizeof x->key) >= (int)sizeof x->key)
    return taso_error(TASO_ERR_LIMIT, "a configuration key longer than %d characters: %.80s...",
                      TASO_COST_KEY_LEN - 1, x->key);
  int64_t slot = key_slot(it, x->key);
  if (it->slots[slot]) {
    it->v[it->slots[slot] - 1].expanded &= expanded;
    return TASO_OK;
  }
  x->cfg = *cfg;
  x->flops = flops_of(cfg);
  x->expanded = expanded;
  it->slots[slot] = ++it->n;
  return TASO_OK;
}

/* The device's dispatch row (costdb.h), measured like a configuration:
 * last (no FLOPs), reused like one. */
static taso_err_t add_dispatch(taso_measure_items_t *it) {
  TASO_TRY(reserve_item(it));
  taso_measure_item_t *x = &it->v[it->n++];
  memset(x, 0, sizeof *x);
  snprintf(x->key, sizeof x->key, "%s", TASO_COST_DISPATCH_KEY);
  return TASO_OK;
}

void taso_measure_items_free(taso_measure_items_t *it) {
  free(it->v);
  free(it->slots);
  memset(it, 0, sizeof *it);
}

/* ---- expansion: what the rules make of a model -------------------------------------- */

typedef struct {
  taso_model_t *m; /* the model: its inputs type the results */
  taso_measure_items_t *it;
  taso_tensor_t *types; /* scratch: a result's types */
  int types_cap;
  bool *folded;       /* scratch: per node, folded into a weight (taso_cost_mark_folded) */
  taso_graph_t *keep; /* distinct results, kept for another step (depth 2) */
  int64_t nkeep, cap;
  bool keeping;
  bool warm;       /* the model stays in cache: no operand cold */
  int64_t graphs;  /* results seen (with repeats) */
  int64_t invalid; /* results a consumer's typing refused */
} expansion_t;

static taso_err_t fit_types(expansion_t *x, int nnodes) {
  if (2 * nnodes <= x->types_cap) return TASO_OK;
  taso_tensor_t *t = realloc(x->types, sizeof *t * 2 * (size_t)nnodes);
  if (t) x->types = t;
  bool *f = realloc(x->folded, sizeof *f * (size_t)nnodes);
  if (f) x->folded = f;
  if (!t || !f) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", nnodes);
  x->types_cap = 2 * nnodes;
  return TASO_OK;
}

static taso_err_t collect_step(void *ctx, const taso_rt_step_info_t *info) {
  return add_item(ctx, &info->cfg, true);
}

static taso_err_t collect_own_step(void *ctx, const taso_rt_step_info_t *info) {
  return add_item(ctx, &info->cfg, false);
}

static taso_err_t keep_graph(expansion_t *x, const taso_graph_t *g) {
  if (x->nkeep == x->cap) {
    int64_t cap = x->cap ? 2 * x->cap : 64;
    taso_graph_t *grown = realloc(x->keep, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for rewritten graphs");
    x->keep = grown;
    x->cap = cap;
  }
  taso_graph_init(&x->keep[x->nkeep]);
  TASO_TRY(taso_graph_copy(&x->keep[x->nkeep], g));
  x->nkeep++;
  return TASO_OK;
}

/* One rewritten graph: the steps a plan of it would run (taso_rt_steps,
 * what the optimizer's cost sums). */
static taso_err_t on_result(void *ctx, const taso_graph_t *g) {
  expansion_t *x = ctx;
  x->graphs++;
  TASO_TRY(fit_types(x, g->nnodes + 1));
  taso_err_t err = taso_graph_infer(g, &x->m->inputs, x->types);
  if (err == TASO_ERR_SHAPE) { /* as the search: a consumer refused the rhs's types */
    x->invalid++;
    return TASO_OK;
  }
  TASO_TRY(err);
  const taso_rt_typed_graph_t typed = {g, x->types, x->m->is_weight};
  taso_cost_mark_folded(g, x->m->is_weight, x->folded); /* as the optimizer costs g */
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW, .warm_weights = x->warm};
  err = taso_rt_steps_partial(&typed, &opt, x->folded, NULL, collect_step, x->it);
  if (err == TASO_OK && x->keeping) err = keep_graph(x, g);
  return err;
}

static int by_hash_then_graph(const void *a, const void *b) {
  const taso_graph_t *x = a, *y = b;
  uint64_t hx = taso_graph_hash(x), hy = taso_graph_hash(y);
  return hx != hy ? (hx < hy ? -1 : 1) : taso_graph_compare(x, y);
}

/* The distinct graphs of x->keep, in a canonical order. */
static void unique_kept(expansion_t *x) {
  if (x->nkeep) qsort(x->keep, (size_t)x->nkeep, sizeof *x->keep, by_hash_then_graph);
  int64_t m = 0;
  for (int64_t i = 0; i < x->nkeep; i++)
    if (m > 0 && taso_graph_compare(&x->keep[m - 1], &x->keep[i]) == 0)
      taso_graph_free(&x->keep[i]);
    else
      x->keep[m++] = x->keep[i];
  x->nkeep = m;
}

/* Every rewrite of host by every rule, where the guard lets it apply
 * (at a proved shape relation, or one the axioms prove again): the
 * rewrites taso-optimize makes. */
static taso_err_t rewrite_all(const taso_measure_opts_t *s, const taso_graph_t *host,
                              const taso_tensor_t *types, expansion_t *x) {
  uint32_t kinds = taso_graph_kinds(host);
  taso_err_t err = TASO_OK;
  for (int r = 0; r < s->rules.n && err == TASO_OK; r++) {
    const taso_rule_t *rule = &s->rules.v[r];
    if (rule->kinds & ~kinds) continue; /* an lhs operator the host lacks */
    err = taso_rewrite_all_guarded(s->guard, r, 0, host, types, &rule->lhs, &rule->rhs, &rule->cond,
                                   on_result, x);
  }
  return err;
}

/* Every rewrite of m's graph by the rules, depth steps deep; their
 * configurations go into it. */
static taso_err_t expand_model(const taso_measure_opts_t *s, taso_model_t *m,
                               taso_measure_items_t *it, int64_t *graphs) {
  expansion_t x = {
      .m = m, .it = it, .keeping = s->depth > 1, .warm = taso_rt_weights_stay_warm(m, s->be)};
  taso_err_t err = rewrite_all(s, &m->graph, m->types, &x);
  if (err == TASO_OK && s->depth > 1) {
    unique_kept(&x);
    int64_t level = x.nkeep;
    x.keeping = false;
    for (int64_t i = 0; err == TASO_OK && i < level; i++) {
      err = fit_types(&x, x.keep[i].nnodes + 1);
      taso_tensor_t *types = NULL;
      if (err == TASO_OK && !(types = malloc(sizeof *types * 2 * (size_t)(x.keep[i].nnodes + 1))))
        err = taso_error(TASO_ERR_NOMEM, "types of %d nodes", x.keep[i].nnodes);
      if (err == TASO_OK) err = taso_graph_infer(&x.keep[i], &m->inputs, types);
      if (err == TASO_OK) err = rewrite_all(s, &x.keep[i], types, &x);
      free(types);
    }
  }
  for (int64_t i = 0; i < x.nkeep; i++)
    taso_graph_free(&x.keep[i]);
  free(x.keep);
  free(x.types);
  free(x.folded);
  *graphs += x.graphs - x.invalid;
  return err;
}

/* --library: each configuration the selection asks the cost of is one to
 * measure, and so is its in-place variant wherever the library has an
 * in-place call for it: which steps may write in place depends on the
 * plan the measured costs make, so every candidate is measured. The
 * selection is told estimates. */
typedef struct {
  taso_measure_items_t *it;
  const taso_library_t *lib;
} calls_t;

static taso_err_t collect_call(void *ctx, const taso_rt_config_t *cfg, double *ms) {
  calls_t *c = ctx;
  *ms = taso_cost_estimate(cfg);
  TASO_TRY(add_item(c->it, cfg, false));
  for (int i = 0; !cfg->in_place && i < taso_library_ncalls(c->lib); i++) {
    int writes = taso_library_call(c->lib, i)->writes;
    if (writes == TASO_WRITES_OWN || writes == TASO_WRITES_PRODUCERS ||
        !taso_library_covers(c->lib, i, cfg))
      continue; /* a placed concat runs nothing: no cost to measure */
    taso_rt_config_t v = *cfg;
    v.in_place = writes == TASO_WRITES_SUMMAND ? cfg->nin : 1;
    if (taso_tensor_size(&v.in[v.in_place - 1]) == taso_tensor_size(&v.out[0]))
      TASO_TRY(add_item(c->it, &v, false));
  }
  return TASO_OK;
}

static taso_err_t collect_calls(const taso_measure_opts_t *s, taso_model_t *m, bool warm,
                                taso_measure_items_t *it) {
  TASO_TRY(taso_model_fold_weights(m)); /* as taso-select selects */
  const taso_rt_typed_graph_t typed = taso_rt_typed_of(m);
  calls_t c = {.it = it, .lib = s->lib};
  for (int pass = 0; pass < 3; pass++) { /* the plain plan, row-major, channels last */
    taso_select_options_t o = {.plain = pass == 0, .nhwc = pass == 2, .warm_weights = warm};
    taso_call_t *calls = NULL;
    int n = 0;
    taso_select_stats_t st;
    taso_err_t err = taso_select_plan(&typed, s->lib, &o, collect_call, &c, &calls, &n, &st);
    free(calls);
    if (err != TASO_OK && !(err == TASO_ERR_UNSUPPORTED && pass == 2)) return err;
  }
  return TASO_OK;
}

/* Every node's configuration, then every step's (fused) as a plan would
 * run it (taso_rt_steps: no backend, so that ranks without a device
 * collect too), then with --expand those of the rewritten graphs. */
static taso_err_t collect_model(const char *model, const taso_measure_opts_t *s,
                                taso_measure_items_t *it, int64_t *graphs) {
  taso_model_t m;
  taso_rt_config_t cfg;
  taso_rt_step_info_t *steps = NULL;
  int nsteps = 0;
  taso_err_t err = taso_model_load(model, &m);
  taso_rt_typed_graph_t typed = {0};
  if (err == TASO_OK) typed = taso_rt_typed_of(&m);
  /* timed as taso-optimize costs them: cold unless the model stays in cache */
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW,
                           .warm_weights = err == TASO_OK && taso_rt_weights_stay_warm(&m, s->be)};
  for (int i = 0; err == TASO_OK && i < m.graph.nnodes; i++)
    if (m.graph.nodes[i].kind != TASO_OP_INPUT) {
      err = taso_rt_config_of_node(&typed, i, &cfg);
      if (opt.warm_weights) cfg.cold = 0;
      cfg.cold_out = !opt.warm_weights; /* as the planner marks a step (no fusion) */
      if (err == TASO_OK) err = add_item(it, &cfg, false);
    }
  if (err == TASO_OK) err = taso_rt_steps(&m, &opt, &steps, &nsteps);
  for (int k = 0; err == TASO_OK && k < nsteps; k++)
    err = add_item(it, &steps[k].cfg, false);
  /* and as taso-optimize costs the model: its weight-only nodes folded
   * (NasRNN's first cell reads its initial state, a weight) */
  bool *folded = err == TASO_OK ? malloc(sizeof *folded * (size_t)(m.graph.nnodes + 1)) : NULL;
  if (err == TASO_OK && !folded) err = taso_error(TASO_ERR_NOMEM, "nodes of %s", model);
  if (err == TASO_OK && taso_cost_mark_folded(&m.graph, m.is_weight, folded))
    err = taso_rt_steps_partial(&typed, &opt, folded, NULL, collect_own_step, it);
  free(folded);
  if (err == TASO_OK && s->depth > 0) err = expand_model(s, &m, it, graphs);
  if (err == TASO_OK && s->lib) err = collect_calls(s, &m, opt.warm_weights, it);
  free(steps);
  taso_model_free(&m);
  return err;
}

static int by_key(const void *a, const void *b) {
  return strcmp(((const taso_measure_item_t *)a)->key, ((const taso_measure_item_t *)b)->key);
}

static int longest_first(const void *a, const void *b) {
  const taso_measure_item_t *x = a, *y = b;
  if (x->flops != y->flops) return x->flops < y->flops ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* Sorted by key, unique; a configuration that some model has itself is
 * not one expansion added. */
static void dedup(taso_measure_items_t *it) {
  int64_t m = 0;
  if (it->n) qsort(it->v, (size_t)it->n, sizeof *it->v, by_key);
  for (int64_t i = 0; i < it->n; i++)
    if (m == 0 || strcmp(it->v[m - 1].key, it->v[i].key) != 0)
      it->v[m++] = it->v[i];
    else
      it->v[m - 1].expanded &= it->v[i].expanded;
  it->n = m;
}

/* Collective: every rank's items, deduplicated, on rank 0. */
static taso_err_t gather_items(MPI_Comm comm, taso_measure_items_t *mine,
                               taso_measure_items_t *all) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int bytes = (int)(sizeof(taso_measure_item_t) * (size_t)mine->n), *counts = NULL, *displs = NULL;
  if (rank == 0) {
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
    if (!counts || !displs) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
  int64_t total = 0;
  for (int r = 0; rank == 0 && r < size; r++) {
    displs[r] = (int)total;
    total += counts[r];
  }
  if (rank == 0) {
    all->n = all->cap = total / (int64_t)sizeof(taso_measure_item_t);
    all->v = malloc((size_t)total + 1);
    if (!all->v) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Gatherv(mine->v, bytes, MPI_BYTE, all->v, counts, displs, MPI_BYTE, 0, comm);
  if (rank == 0) dedup(all);
  free(counts);
  free(displs);
  return TASO_OK;
}

void taso_measure_items_share(MPI_Comm comm, taso_measure_items_t *it) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Bcast(&it->n, 1, MPI_INT64_T, 0, comm);
  if (rank != 0) {
    it->v = malloc(sizeof *it->v * (size_t)(it->n + 1));
    if (!it->v) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Bcast(it->v, (int)(sizeof *it->v * (size_t)it->n), MPI_BYTE, 0, comm);
}

/* Collective. This rank's share of the models, collected while it holds
 * its cores; then all of them on rank 0. *graphs: the rewritten graphs
 * of --expand, over all ranks. */
taso_err_t taso_measure_collect(MPI_Comm comm, const taso_measure_opts_t *s, taso_place_t *p,
                                taso_measure_items_t *all, int64_t *graphs) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  taso_measure_items_t mine = {0};
  double from, to;
  int64_t my_graphs = 0;
  taso_device_t *held = NULL;
  taso_err_t err = taso_place_hold(p, &held);
  for (int i = rank; err == TASO_OK && i < s->nmodels; i += size)
    err = collect_model(s->models[i], s, &mine, &my_graphs);
  if (held && held->held_since > 0) taso_device_let_go(held, &from, &to);
  /* only after letting go: another rank may wait for these cores */
  MPI_Reduce(&my_graphs, graphs, 1, MPI_INT64_T, MPI_SUM, 0, comm);
  /* collecting is not a measurement: the devices' figures start after it */
  p->dev.holds = 0;
  p->dev.busy = p->dev.waited = 0;
  for (int j = 0; j < p->nothers; j++) {
    p->others[j].holds = 0;
    p->others[j].busy = p->others[j].waited = 0;
  }
  if (err == TASO_OK) dedup(&mine);
  err = taso_agree(comm, err);
  if (err == TASO_OK) err = gather_items(comm, &mine, all);
  taso_measure_items_free(&mine);
  return err;
}

taso_err_t taso_measure_todo(const taso_measure_opts_t *o, const char *identity,
                             taso_measure_items_t *all, taso_costdb_t *known, int64_t *distinct) {
  TASO_TRY(add_dispatch(all));
  *distinct = all->n;
  taso_err_t err = taso_costdb_read(o->db_path, true, known);
  if (err != TASO_OK && o->fresh) err = TASO_OK; /* a file cut short that fresh replaces */
  int64_t m = 0;
  for (int64_t i = 0; err == TASO_OK && i < all->n; i++)
    if (o->fresh || !taso_costdb_has_cost(known, identity, all->v[i].key)) all->v[m++] = all->v[i];
  if (err == TASO_OK) all->n = m;
  if (all->n) qsort(all->v, (size_t)all->n, sizeof *all->v, longest_first);
  return err;
}
