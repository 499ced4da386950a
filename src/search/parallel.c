/*
 * The parallel search (search.h): bulk-synchronous rounds over the ranks.
 *
 * A round: every rank offers its cheapest queued graphs; all ranks agree
 * on the round's picks, the width cheapest offers in the queue's order
 * (cost, hash, then arrival on the owner; graphs of equal hash share an
 * owner, so the order never depends on the rank count); the owners send
 * the picked graphs round, and pick i is expanded by rank i modulo the
 * rank count, so every rank has its share of the work; every result cheaper than alpha times the
 * best expanded cost goes to the rank owning its hash; each owner adds what it receives in the
 * order of (the parent's place among the round's picks, the result's place in that parent's
 * expansion), so the first maker of a graph, which becomes its parent, is the same whatever the
 * rank count. Graphs travel as their node arrays: canonical graphs are
 * plain words.
 */
#include "search.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "store.h"

/* A queued graph offered for a round. */
typedef struct {
  double cost;
  uint64_t hash;
  int64_t index; /* in its owner's store */
  int32_t rank;  /* its owner */
  int32_t pos;   /* its place among its owner's offers (the owner's order) */
} offer_t;

/* A result on its way to its owner: this header, then its nodes and outputs. */
typedef struct {
  double cost;
  uint64_t hash;
  int64_t parent; /* the parent's index in its owner's store */
  int32_t parent_rank;
  int32_t pick; /* the parent's place among the round's picks */
  int32_t seq;  /* the result's place in its parent's expansion */
  int32_t rule;
  int32_t depth; /* rewrites from the input graph */
  int32_t nnodes, noutputs;
} child_t;

typedef struct {
  char *v;
  size_t n, cap;
} bytes_t;

/* Where a rule chain starts (a result of the pick being expanded). */
typedef struct {
  int rule;
  double ms;
  taso_graph_t g;
} seed_t;

typedef struct {
  MPI_Comm comm;
  int rank, size;
  const taso_search_options_t *opt;
  taso_store_t store;
  taso_expander_t x;
  taso_search_result_t *res;
  bytes_t *out;   /* per destination rank: results for it */
  int max_nodes;  /* results with this many nodes or more are not kept */
  double best;    /* the best expanded cost */
  double found;   /* the cheapest graph this rank has received */
  int64_t parent; /* the graph being expanded (its owner's index), its owner,
                     its pick and results so far */
  int32_t parent_rank;
  int32_t pick, seq;
  int32_t depth; /* of the results of the graph being expanded */
  double start, last_progress;
  int64_t *sent; /* this round's results kept, by hash: (offset in out[to]) * size
                    + to, + 1; 0 empty (open addressing) */
  int64_t nsent, sent_slots;
  bool defer;    /* the cost cache defers misses: they are measured between rounds */
  bytes_t stash; /* results whose cost waits for a pending configuration */
  /* rule chains (opt->chain): while a pick is expanded (seeding), per rule its
   * cheapest kept result cheaper than the pick; then the chain being followed */
  bool seeding;
  double host_ms; /* the pick's cost */
  seed_t *seeds;
  int nseeds, seeds_cap;
  int64_t link_parent; /* the path entry of the last link (on this rank) */
  int32_t link_depth, link_rule;
  taso_chain_stats_t chains;
} par_t;

static taso_err_t put(bytes_t *b, const void *p, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1 << 16;
    while (cap < b->n + n)
      cap *= 2;
    char *v = realloc(b->v, cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "%zu bytes of results to send", cap);
    b->v = v;
    b->cap = cap;
  }
  memcpy(b->v + b->n, p, n);
  b->n += n;
  return TASO_OK;
}

static int owner(const par_t *p, uint64_t hash) {
  return (int)(hash % (uint64_t)p->size);
}

static bool out_of_time(const par_t *p) {
  return p->opt->time_limit > 0 && taso_search_now() - p->start >= p->opt->time_limit;
}

static bool stop_now(void *ctx) {
  par_t *p = ctx;
  if (out_of_time(p)) p->res->timed_out = true;
  return p->res->timed_out;
}

static taso_err_t fit_graph(taso_graph_t *g, int64_t nnodes, int64_t noutputs);

/* What a result needs to be kept once costed. */
typedef struct {
  uint64_t hash;
  int64_t parent;
  int32_t parent_rank, pick, seq, rule, depth, nnodes, noutputs;
} stashed_t;

static taso_err_t stash(par_t *p, const taso_graph_t *g, uint64_t hash) {
  stashed_t h = {.hash = hash,
                 .parent = p->parent,
                 .parent_rank = p->parent_rank,
                 .pick = p->pick,
                 .seq = p->seq - 1,
                 .rule = p->x.rule,
                 .depth = p->depth,
                 .nnodes = g->nnodes,
                 .noutputs = g->noutputs};
  TASO_TRY(put(&p->stash, &h, sizeof h));
  TASO_TRY(put(&p->stash, g->nodes, sizeof *g->nodes * (size_t)g->nnodes));
  return put(&p->stash, g->outputs, sizeof *g->outputs * (size_t)g->noutputs);
}

/* ---- this round's kept results -------------------------------------------------
 * A result made twice in a round is judged once: the owner would keep
 * only the first maker's anyway, and on one rank the first made is the
 * first in the owner's order (picks are expanded in order). */

/* The sent-set slot of a kept result equal to g, or the empty slot for it. */
static int64_t sent_slot(const par_t *p, const taso_graph_t *g, uint64_t hash) {
  int64_t mask = p->sent_slots - 1, at = (int64_t)(hash & (uint64_t)mask);
  for (; p->sent[at]; at = (at + 1) & mask) {
    int64_t code = p->sent[at] - 1, to = code % p->size;
    child_t c;
    const char *v = p->out[to].v + code / p->size;
    memcpy(&c, v, sizeof c);
    size_t nodes = sizeof *g->nodes * (size_t)g->nnodes;
    if (c.hash == hash && c.nnodes == g->nnodes && c.noutputs == g->noutputs &&
        memcmp(v + sizeof c, g->nodes, nodes) == 0 &&
        memcmp(v + sizeof c + nodes, g->outputs, sizeof *g->outputs * (size_t)g->noutputs) == 0)
      break;
  }
  return at;
}

static taso_err_t remember_sent(par_t *p, uint64_t hash, int to, size_t offset) {
  if (2 * (p->nsent + 1) > p->sent_slots) { /* grow, rehashing from the buffers */
    int64_t n = p->sent_slots ? 2 * p->sent_slots : 4096, *old = p->sent, nold = p->sent_slots;
    if (!(p->sent = calloc((size_t)n, sizeof *p->sent))) {
      p->sent = old;
      return taso_error(TASO_ERR_NOMEM, "a set of %lld results", (long long)p->nsent);
    }
    p->sent_slots = n;
    for (int64_t i = 0; i < nold; i++) {
      if (!old[i]) continue;
      child_t c;
      memcpy(&c, p->out[(old[i] - 1) % p->size].v + (old[i] - 1) / p->size, sizeof c);
      int64_t at = (int64_t)(c.hash & (uint64_t)(n - 1));
      while (p->sent[at])
        at = (at + 1) & (n - 1);
      p->sent[at] = old[i];
    }
    free(old);
  }
  int64_t at = (int64_t)(hash & (uint64_t)(p->sent_slots - 1));
  while (p->sent[at])
    at = (at + 1) & (p->sent_slots - 1);
  p->sent[at] = (int64_t)offset * p->size + to + 1;
  p->nsent++;
  return TASO_OK;
}

static void forget_sent(par_t *p) {
  if (p->sent) memset(p->sent, 0, sizeof *p->sent * (size_t)p->sent_slots);
  p->nsent = 0;
}

static taso_err_t send(par_t *p, const taso_graph_t *g, uint64_t hash, child_t c);

/* A kept result cheaper than the pick: the chain seed of its rule if the
 * cheapest so far (rules are applied in order). */
static taso_err_t note_seed(par_t *p, const taso_graph_t *g, double ms) {
  seed_t *last = p->nseeds ? &p->seeds[p->nseeds - 1] : NULL;
  if (!last || last->rule != p->x.rule) {
    if (p->nseeds == p->seeds_cap) {
      int cap = p->seeds_cap ? 2 * p->seeds_cap : 16;
      seed_t *v = realloc(p->seeds, sizeof *v * (size_t)cap);
      if (!v) return taso_error(TASO_ERR_NOMEM, "%d chain seeds", cap);
      for (int i = p->seeds_cap; i < cap; i++)
        taso_graph_init(&v[i].g);
      p->seeds = v;
      p->seeds_cap = cap;
    }
    last = &p->seeds[p->nseeds++];
    last->rule = p->x.rule;
  } else if (!(ms < last->ms)) {
    return TASO_OK;
  }
  last->ms = ms;
  return taso_graph_copy(&last->g, g);
}

/* Whether this rank has seen g (it owns it) or sent it this round: then
 * it is not sent again. */
static bool is_dup(par_t *p, const taso_graph_t *g, uint64_t hash) {
  return (owner(p, hash) == p->rank && p->store.nslots &&
          p->store.slots[taso_seen_slot(&p->store, g, hash)]) ||
         (p->nsent && p->sent[sent_slot(p, g, hash)]);
}

/* A costed result: sent to its owner when cheaper than alpha times the
 * best (and, with check_dup, not a duplicate); first, while seeding, a
 * chain seed, whether a duplicate or not (which results a rank has seen
 * depends on the rank count, and where chains start must not). */
static taso_err_t keep(par_t *p, const taso_graph_t *g, child_t c, double ms, bool check_dup) {
  if (!(ms < p->opt->alpha * p->best)) return TASO_OK;
  if (p->seeding && ms < p->host_ms) TASO_TRY(note_seed(p, g, ms));
  uint64_t hash;
  TASO_TRY(taso_expander_hash(&p->x, g, &hash));
  if (check_dup && is_dup(p, g, hash)) return TASO_OK;
  c.cost = ms;
  return send(p, g, hash, c);
}

/* The cost of a result; *pending when it waits for a deferred
 * measurement, and *ok false when a consumer refused its types. */
static taso_err_t cost_of(par_t *p, const taso_graph_t *g, double *ms, bool *pending, bool *ok) {
  taso_err_t err = taso_expander_cost(&p->x, g, ms);
  *pending = err == TASO_ERR_UNKNOWN && p->defer;
  *ok = err == TASO_OK;
  if (err == TASO_ERR_SHAPE) p->res->invalid++;
  return *pending || err == TASO_ERR_SHAPE ? TASO_OK : err;
}

/* Sends a kept result (c complete but for the fields set here) to its owner. */
static taso_err_t send(par_t *p, const taso_graph_t *g, uint64_t hash, child_t c) {
  c.hash = hash;
  c.nnodes = g->nnodes;
  c.noutputs = g->noutputs;
  int to = owner(p, hash);
  TASO_TRY(remember_sent(p, hash, to, p->out[to].n));
  TASO_TRY(put(&p->out[to], &c, sizeof c));
  TASO_TRY(put(&p->out[to], g->nodes, sizeof *g->nodes * (size_t)g->nnodes));
  return put(&p->out[to], g->outputs, sizeof *g->outputs * (size_t)g->noutputs);
}

/* One result of an expansion: kept for its owner when small and cheap
 * enough (and, when this rank owns it, not seen here before). */
static taso_err_t on_child(void *ctx, const taso_graph_t *g) {
  par_t *p = ctx;
  p->res->generated++;
  p->seq++;
  if (g->nnodes >= p->max_nodes) return TASO_OK;
  /* the cost first, as in the baseline: hashing reads every node, and
   * most results are not cheap enough */
  double ms;
  bool pending, ok;
  TASO_TRY(cost_of(p, g, &ms, &pending, &ok));
  if (pending) {
    uint64_t hash;
    TASO_TRY(taso_expander_hash(&p->x, g, &hash));
    return is_dup(p, g, hash) ? TASO_OK : stash(p, g, hash);
  }
  child_t c = {.parent = p->parent,
               .parent_rank = p->parent_rank,
               .pick = p->pick,
               .seq = p->seq - 1,
               .rule = p->x.rule,
               .depth = p->depth};
  return ok ? keep(p, g, c, ms, true) : TASO_OK;
}

/* ---- measuring deferred configurations --------------------------------------- */

/* The stashed results costed again; those still pending stay. */
static taso_err_t restash(par_t *p) {
  bytes_t old = p->stash;
  p->stash = (bytes_t){0};
  taso_err_t err = TASO_OK;
  taso_graph_t g;
  taso_graph_init(&g);
  for (size_t at = 0; at < old.n && err == TASO_OK;) {
    stashed_t h;
    memcpy(&h, old.v + at, sizeof h);
    at += sizeof h;
    err = fit_graph(&g, h.nnodes, h.noutputs);
    if (err != TASO_OK) break;
    memcpy(g.nodes, old.v + at, sizeof *g.nodes * (size_t)h.nnodes);
    at += sizeof *g.nodes * (size_t)h.nnodes;
    memcpy(g.outputs, old.v + at, sizeof *g.outputs * (size_t)h.noutputs);
    at += sizeof *g.outputs * (size_t)h.noutputs;
    child_t c = {.parent = h.parent,
                 .parent_rank = h.parent_rank,
                 .pick = h.pick,
                 .seq = h.seq,
                 .rule = h.rule,
                 .depth = h.depth};
    double ms;
    bool pending, ok;
    err = cost_of(p, &g, &ms, &pending, &ok);
    if (err == TASO_OK && ok) err = keep(p, &g, c, ms, false);
    if (err == TASO_OK && pending) {
      p->parent = h.parent, p->parent_rank = h.parent_rank, p->pick = h.pick;
      p->seq = h.seq + 1, p->x.rule = h.rule;
      p->depth = h.depth;
      err = stash(p, &g, h.hash);
    }
  }
  taso_graph_free(&g);
  free(old.v);
  return err;
}

/* Every rank's pending configurations, measured once on rank 0 (one at a
 * time, as a measurement must be) and added to every rank's cache; *any
 * false when no rank had one. */
static taso_err_t settle(par_t *p, bool *any) {
  {
    const taso_rt_config_t *mine;
    int n = (int)taso_cost_pending(p->x.costs, &mine), bytes = n * (int)sizeof *mine;
    int *counts = malloc(sizeof *counts * 2 * (size_t)p->size), *displs = counts + p->size;
    if (!counts) return taso_error(TASO_ERR_NOMEM, "pending configurations");
    MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, p->comm);
    int total = 0;
    for (int r = 0; r < p->size; r++)
      displs[r] = total, total += counts[r];
    *any = total > 0;
    if (total == 0) {
      free(counts);
      return TASO_OK;
    }
    int k = total / (int)sizeof *mine;
    taso_rt_config_t *all = malloc((size_t)total);
    double *ms = malloc(sizeof *ms * (size_t)k + 1);
    int bad = !all || !ms;
    taso_err_t err = TASO_OK;
    if (!bad) MPI_Allgatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, p->comm);
    free(counts);
    if (p->rank == 0 && !bad) { /* a configuration twice is measured once: the cache has it */
      taso_cost_cache_set_defer(p->x.costs, false);
      for (int i = 0; i < k && err == TASO_OK; i++)
        err = taso_cost_of_config(p->x.costs, &all[i], &ms[i]);
      taso_cost_cache_set_defer(p->x.costs, true);
      bad = err != TASO_OK;
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, p->comm);
    if (!bad) MPI_Bcast(ms, k, MPI_DOUBLE, 0, p->comm);
    for (int i = 0; i < k && !bad && err == TASO_OK; i++)
      err = taso_cost_cache_put(p->x.costs, &all[i], ms[i]);
    free(all);
    free(ms);
    if (bad) return err != TASO_OK ? err : taso_error(TASO_ERR_ARG, "measuring on rank 0 failed");
    taso_cost_pending_clear(p->x.costs);
    return err;
  }
}

/* Settles, then costs the results that waited; until none is pending (a
 * result may wait for several). */
static taso_err_t settle_pending(par_t *p) {
  for (bool any = true; any;) {
    TASO_TRY(settle(p, &any));
    if (any) TASO_TRY(restash(p));
  }
  return TASO_OK;
}

/* The input graph and its cost, its configurations measured once too. */
static taso_err_t start_graph(par_t *p, taso_graph_t *start, double *cost) {
  for (bool any = true; any;) {
    taso_err_t err = taso_expander_start(&p->x, start, cost);
    if (err != TASO_ERR_UNKNOWN || !p->defer) return err;
    TASO_TRY(settle(p, &any));
  }
  return taso_error(TASO_ERR_UNKNOWN, "the input graph's costs stay pending");
}

/* ---- choosing a round's picks ----------------------------------------------- */

static int offer_order(const void *a, const void *b) {
  const offer_t *x = a, *y = b;
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Every rank's cheapest `want` queued graphs, in the queue's order
 * (malloc'd in *all, *n of them). This rank's are taken off its queue. */
static taso_err_t gather_offers(par_t *p, int want, offer_t **all, int *n) {
  int mine = 0;
  offer_t *own = malloc(sizeof *own * (size_t)(want + 1));
  int *counts = malloc(sizeof *counts * (size_t)p->size);
  int *displs = malloc(sizeof *displs * (size_t)p->size);
  *all = NULL;
  taso_err_t err = own && counts && displs ? TASO_OK : taso_error(TASO_ERR_NOMEM, "offers");
  while (err == TASO_OK && mine < want && p->store.nheap > 0) {
    int64_t at = taso_heap_pop(&p->store);
    own[mine] = (offer_t){.cost = p->store.v[at].cost,
                          .hash = p->store.v[at].hash,
                          .index = at,
                          .rank = p->rank,
                          .pos = mine};
    mine++;
  }
  int bytes = mine * (int)sizeof *own;
  if (err == TASO_OK) MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, p->comm);
  int total = 0;
  for (int r = 0; err == TASO_OK && r < p->size; r++) {
    displs[r] = total;
    total += counts[r];
  }
  if (err == TASO_OK && !(*all = malloc((size_t)total + sizeof **all)))
    err = taso_error(TASO_ERR_NOMEM, "offers");
  if (err == TASO_OK) {
    MPI_Allgatherv(own, bytes, MPI_BYTE, *all, counts, displs, MPI_BYTE, p->comm);
    *n = total / (int)sizeof **all;
    qsort(*all, (size_t)*n, sizeof **all, offer_order);
  }
  free(own);
  free(counts);
  free(displs);
  return err;
}

/* ---- exchanging results ----------------------------------------------------- */

typedef struct {
  const child_t *c; /* in the receive buffer, maybe unaligned: read by memcpy */
  const char *body; /* its nodes, then its outputs */
} received_t;

static int received_order(const void *a, const void *b) {
  child_t x, y;
  memcpy(&x, ((const received_t *)a)->c, sizeof x);
  memcpy(&y, ((const received_t *)b)->c, sizeof y);
  if (x.pick != y.pick) return x.pick < y.pick ? -1 : 1;
  return (x.seq > y.seq) - (x.seq < y.seq);
}

/* Room in g for nnodes nodes and noutputs outputs (contents undefined). */
static taso_err_t fit_graph(taso_graph_t *g, int64_t nnodes, int64_t noutputs) {
  if (nnodes > g->node_cap) {
    taso_node_t *n = realloc(g->nodes, sizeof *n * (size_t)nnodes);
    if (!n) return taso_error(TASO_ERR_NOMEM, "a graph of %lld nodes", (long long)nnodes);
    g->nodes = n;
    g->node_cap = (int)nnodes;
  }
  if (noutputs > g->out_cap) {
    taso_ref_t *o = realloc(g->outputs, sizeof *o * (size_t)noutputs);
    if (!o) return taso_error(TASO_ERR_NOMEM, "a graph of %lld outputs", (long long)noutputs);
    g->outputs = o;
    g->out_cap = (int)noutputs;
  }
  g->nnodes = (int)nnodes;
  g->noutputs = (int)noutputs;
  return TASO_OK;
}

/* Adds one received result unless seen: its parent is the first maker. */
static taso_err_t add_received(par_t *p, const received_t *r, taso_graph_t *g) {
  child_t c;
  memcpy(&c, r->c, sizeof c);
  TASO_TRY(fit_graph(g, c.nnodes, c.noutputs));
  size_t nodes = sizeof *g->nodes * (size_t)c.nnodes;
  memcpy(g->nodes, r->body, nodes);
  memcpy(g->outputs, r->body + nodes, sizeof *g->outputs * (size_t)c.noutputs);
  if (p->store.slots && p->store.slots[taso_seen_slot(&p->store, g, c.hash)]) return TASO_OK;
  p->res->queued++;
  if (c.cost < p->found) p->found = c.cost;
  TASO_TRY(taso_store_add(&p->store, g, c.hash, c.cost, c.parent, c.rule));
  p->store.v[p->store.n - 1].parent_rank = c.parent_rank;
  p->store.v[p->store.n - 1].depth = c.depth;
  return TASO_OK;
}

/* Splits a received buffer into results. */
static taso_err_t parse_received(const char *buf, size_t n, received_t **out, int64_t *count) {
  int64_t k = 0, cap = 64;
  received_t *v = malloc(sizeof *v * (size_t)cap);
  for (size_t at = 0; v && at < n; k++) {
    child_t c;
    memcpy(&c, buf + at, sizeof c);
    if (k == cap) {
      received_t *w = realloc(v, sizeof *v * (size_t)(cap *= 2));
      if (!w) break;
      v = w;
    }
    v[k] =
        (received_t){.c = (const child_t *)(const void *)(buf + at), .body = buf + at + sizeof c};
    at +=
        sizeof c + sizeof(taso_node_t) * (size_t)c.nnodes + sizeof(taso_ref_t) * (size_t)c.noutputs;
  }
  if (!v || k > cap) {
    free(v);
    return taso_error(TASO_ERR_NOMEM, "received results");
  }
  *out = v;
  *count = k;
  return TASO_OK;
}

/* Sends every kept result to its owner, which adds the new ones. */
static taso_err_t exchange(par_t *p) {
  int *sc = calloc((size_t)p->size * 4, sizeof *sc), *sd = sc + p->size, *rc = sd + p->size,
      *rd = rc + p->size;
  if (!sc) return taso_error(TASO_ERR_NOMEM, "exchange");
  taso_err_t err = TASO_OK;
  bytes_t send = {0};
  for (int r = 0; r < p->size && err == TASO_OK; r++) {
    if (p->out[r].n > INT_MAX - send.n) err = taso_error(TASO_ERR_LIMIT, "over 2 GiB of results");
    sd[r] = (int)send.n;
    sc[r] = (int)p->out[r].n;
    if (err == TASO_OK && p->out[r].n) err = put(&send, p->out[r].v, p->out[r].n);
    p->out[r].n = 0;
  }
  forget_sent(p);
  /* every rank reaches the collectives: an error travels with the counts */
  int bad = err != TASO_OK, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, p->comm);
  if (any_bad) {
    free(sc);
    free(send.v);
    return err != TASO_OK ? err : taso_error(TASO_ERR_NOMEM, "another rank's exchange failed");
  }
  MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, p->comm);
  size_t total = 0;
  for (int r = 0; r < p->size; r++) {
    rd[r] = (int)total;
    total += (size_t)rc[r];
  }
  char *recv = malloc(total + 1);
  if (!recv) err = taso_error(TASO_ERR_NOMEM, "%zu bytes of received results", total);
  MPI_Alltoallv(send.v, sc, sd, MPI_BYTE, recv ? recv : send.v, rc, rd, MPI_BYTE, p->comm);
  free(send.v);
  free(sc);
  received_t *v = NULL;
  int64_t n = 0;
  if (err == TASO_OK) err = parse_received(recv, total, &v, &n);
  if (err == TASO_OK) qsort(v, (size_t)n, sizeof *v, received_order);
  taso_graph_t g;
  taso_graph_init(&g);
  for (int64_t i = 0; i < n && err == TASO_OK; i++)
    err = add_received(p, &v[i], &g);
  taso_graph_free(&g);
  free(v);
  free(recv);
  return err;
}

/* ---- rounds ----------------------------------------------------------------- */

static void progress(par_t *p) {
  double now = taso_search_now();
  if (p->rank != 0 || !p->opt->progress || now - p->last_progress < 2.0) return;
  p->last_progress = now;
  p->opt->progress(p->opt->progress_ctx, p->res->explored, p->store.nheap, p->best, now - p->start);
}

/* A picked graph on its way to the rank expanding it: this header, then
 * its nodes and outputs. */
typedef struct {
  int32_t pick, depth, nnodes, noutputs;
} picked_t;

/* Every picked graph, from its owner to every rank (*v: headers and
 * graphs in pick order, *n bytes). */
static taso_err_t share_picks(par_t *p, const offer_t *picks, int npicks, char **v, int *n) {
  bytes_t mine = {0};
  taso_err_t err = TASO_OK;
  for (int i = 0; i < npicks && err == TASO_OK; i++) {
    if (picks[i].rank != p->rank) continue;
    const stored_t *e = &p->store.v[picks[i].index];
    picked_t h = {.pick = i, .depth = e->depth, .nnodes = e->g.nnodes, .noutputs = e->g.noutputs};
    err = put(&mine, &h, sizeof h);
    if (err == TASO_OK) err = put(&mine, e->g.nodes, sizeof *e->g.nodes * (size_t)e->g.nnodes);
    if (err == TASO_OK)
      err = put(&mine, e->g.outputs, sizeof *e->g.outputs * (size_t)e->g.noutputs);
  }
  int bytes = (int)mine.n, *counts = malloc(sizeof *counts * 2 * (size_t)p->size);
  if (!counts) err = taso_error(TASO_ERR_NOMEM, "picked graphs");
  int bad = err != TASO_OK, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, p->comm);
  *v = NULL;
  if (!any_bad) {
    int *displs = counts + p->size, total = 0;
    MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, p->comm);
    for (int r = 0; r < p->size; r++)
      displs[r] = total, total += counts[r];
    *v = malloc((size_t)total + 1); /* a failure here is this rank's: it still joins */
    MPI_Allgatherv(mine.v, bytes, MPI_BYTE, *v ? *v : mine.v, counts, displs, MPI_BYTE, p->comm);
    *n = total;
    if (!*v) err = taso_error(TASO_ERR_NOMEM, "%d bytes of picked graphs", total);
  } else if (err == TASO_OK) {
    err = taso_error(TASO_ERR_NOMEM, "another rank's picked graphs");
  }
  free(counts);
  free(mine.v);
  return err;
}

/* The next of this rank's picks in the shared buffer v (n bytes) from
 * *at on, into host; *found false when none is left. */
static taso_err_t next_pick(const par_t *p, const char *v, int n, int *at, taso_graph_t *host,
                            picked_t *h, bool *found) {
  *found = false;
  while (*at < n && !*found) {
    memcpy(h, v + *at, sizeof *h);
    const char *body = v + *at + sizeof *h;
    *at += (int)(sizeof *h + sizeof *host->nodes * (size_t)h->nnodes +
                 sizeof *host->outputs * (size_t)h->noutputs);
    if (h->pick % p->size != p->rank) continue;
    TASO_TRY(fit_graph(host, h->nnodes, h->noutputs));
    memcpy(host->nodes, body, sizeof *host->nodes * (size_t)h->nnodes);
    memcpy(host->outputs, body + sizeof *host->nodes * (size_t)h->nnodes,
           sizeof *host->outputs * (size_t)h->noutputs);
    *found = true;
  }
  return TASO_OK;
}

static taso_err_t no_child(void *ctx, const taso_graph_t *g) {
  (void)ctx, (void)g;
  return TASO_OK;
}

/* The probe: this rank's picks matched with the guard probing, so that it
 * notes the relations it has no verdict for (rule_guard.h); *qpick[k] the
 * pick of question k (malloc'd). */
static taso_err_t probe_picks(par_t *p, const char *v, int n, int **qpick) {
  taso_rule_guard_t *g = p->x.guard;
  taso_graph_t host;
  taso_graph_init(&host);
  taso_rule_guard_questions_clear(g);
  taso_rule_guard_set_probe(g, true);
  int cap = 16, *pk = malloc(sizeof *pk * (size_t)cap);
  taso_err_t err = pk ? TASO_OK : taso_error(TASO_ERR_NOMEM, "questions");
  for (int at = 0; err == TASO_OK && !p->res->timed_out;) {
    picked_t h;
    bool found;
    err = next_pick(p, v, n, &at, &host, &h, &found);
    if (err != TASO_OK || !found) break;
    const taso_rule_guard_question_t *q;
    int64_t before = taso_rule_guard_questions(g, &q);
    err = taso_expand(&p->x, &host, no_child, stop_now, p);
    int64_t after = taso_rule_guard_questions(g, &q);
    if (after > cap) {
      while (cap < after)
        cap *= 2;
      int *w = realloc(pk, sizeof *w * (size_t)cap);
      if (!w)
        err = taso_error(TASO_ERR_NOMEM, "questions");
      else
        pk = w;
    }
    for (int64_t k = before; err == TASO_OK && k < after; k++)
      pk[k] = h.pick;
  }
  taso_rule_guard_set_probe(g, false);
  taso_graph_free(&host);
  *qpick = pk;
  return err;
}

/* A question on its way to every rank: this header, then its key and its
 * types (one per entry of the guard's input table). */
typedef struct {
  int64_t rule;
  int32_t dir, pick, seq, len;
} question_t;

typedef struct {
  question_t h;
  const char *key;   /* in the receive buffer */
  const char *types; /* in the receive buffer, maybe unaligned */
} asked_t;

static int asked_order(const void *a, const void *b) {
  const asked_t *x = a, *y = b;
  if (x->h.len != y->h.len) return x->h.len < y->h.len ? -1 : 1;
  int c = memcmp(x->key, y->key, (size_t)x->h.len);
  if (c) return c;
  if (x->h.pick != y->h.pick) return x->h.pick < y->h.pick ? -1 : 1;
  return (x->h.seq > y->h.seq) - (x->h.seq < y->h.seq);
}

/* Every rank's questions, decided once each and the verdicts shared
 * (collective; err: this rank's probe, which every rank learns of). The
 * distinct keys, in the order of their bytes, are dealt round robin over
 * the ranks; each is decided at its first instance in the order (pick,
 * place in the pick's probe), the instance one rank would meet first, so
 * no verdict depends on the rank count. */
static taso_err_t share_verdicts(par_t *p, const int *qpick, taso_err_t err) {
  taso_rule_guard_t *g = p->x.guard;
  const taso_rule_guard_question_t *q;
  int64_t nq = err == TASO_OK ? taso_rule_guard_questions(g, &q) : 0;
  int ntypes = taso_rule_guard_ninputs(g);
  size_t tbytes = sizeof(taso_tensor_t) * (size_t)ntypes;
  bytes_t mine = {0};
  for (int64_t k = 0; k < nq && err == TASO_OK; k++) {
    question_t h = {.rule = q[k].rule,
                    .dir = q[k].dir,
                    .pick = qpick[k],
                    .seq = (int32_t)k,
                    .len = (int32_t)q[k].len};
    err = put(&mine, &h, sizeof h);
    if (err == TASO_OK) err = put(&mine, q[k].key, q[k].len);
    if (err == TASO_OK) err = put(&mine, q[k].types, tbytes);
  }
  int bytes = (int)mine.n, *counts = malloc(sizeof *counts * 2 * (size_t)p->size);
  if (!counts && err == TASO_OK) err = taso_error(TASO_ERR_NOMEM, "questions");
  int bad = err != TASO_OK, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, p->comm);
  char *all = NULL;
  asked_t *v = NULL;
  int nv = 0, total = 0;
  if (!any_bad) {
    int *displs = counts + p->size;
    MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, p->comm);
    for (int r = 0; r < p->size; r++)
      displs[r] = total, total += counts[r];
    all = malloc((size_t)total + 1);
    MPI_Allgatherv(mine.v, bytes, MPI_BYTE, all ? all : mine.v, counts, displs, MPI_BYTE, p->comm);
    if (!all) err = taso_error(TASO_ERR_NOMEM, "%d bytes of questions", total);
  }
  free(mine.v);
  /* the distinct keys, each with its first instance */
  for (int at = 0; all && at < total; nv++) {
    question_t h;
    memcpy(&h, all + at, sizeof h);
    at += (int)(sizeof h + (size_t)h.len + tbytes);
  }
  if (err == TASO_OK && !any_bad && !(v = malloc(sizeof *v * (size_t)(nv + 1))))
    err = taso_error(TASO_ERR_NOMEM, "questions");
  int nkeys = 0;
  if (v) {
    for (int at = 0, i = 0; i < nv; i++) {
      memcpy(&v[i].h, all + at, sizeof v[i].h);
      v[i].key = all + at + sizeof v[i].h;
      v[i].types = v[i].key + v[i].h.len;
      at += (int)(sizeof v[i].h + (size_t)v[i].h.len + tbytes);
    }
    qsort(v, (size_t)nv, sizeof *v, asked_order);
    for (int i = 0; i < nv; i++)
      if (i == 0 || v[i].h.len != v[nkeys - 1].h.len ||
          memcmp(v[i].key, v[nkeys - 1].key, (size_t)v[i].h.len))
        v[nkeys++] = v[i];
  }
  /* this rank's keys (k modulo the rank count), decided in order */
  int owned = 0;
  char *verdicts = malloc((size_t)nkeys / (size_t)p->size + 2);
  taso_tensor_t *types = malloc(tbytes + 1);
  if ((!verdicts || !types) && err == TASO_OK) err = taso_error(TASO_ERR_NOMEM, "verdicts");
  for (int k = p->rank; err == TASO_OK && k < nkeys; k += p->size) {
    const taso_rule_t *rule = &p->x.rules->v[v[k].h.rule];
    bool ok;
    memcpy(types, v[k].types, tbytes);
    err = taso_rule_guard_decide(g, v[k].h.rule, v[k].h.dir, &rule->lhs, &rule->rhs, types, &ok);
    verdicts[owned++] = ok;
  }
  free(types);
  bad = err != TASO_OK;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, p->comm);
  if (any_bad || nkeys == 0) {
    free(counts), free(all), free(v), free(verdicts);
    if (!any_bad) return TASO_OK;
    return err != TASO_OK ? err : taso_error(TASO_ERR_ARG, "another rank's re-proofs failed");
  }
  /* every rank's verdicts, rank r's for keys r, r + size, ... */
  char *got = malloc((size_t)nkeys + 1);
  int *displs = counts + p->size, at = 0;
  for (int r = 0; r < p->size; r++) {
    counts[r] = nkeys / p->size + (r < nkeys % p->size);
    displs[r] = at, at += counts[r];
  }
  MPI_Allgatherv(verdicts, owned, MPI_BYTE, got ? got : verdicts, counts, displs, MPI_BYTE,
                 p->comm);
  if (!got) err = taso_error(TASO_ERR_NOMEM, "verdicts");
  for (int r = 0; got && r < p->size && err == TASO_OK; r++)
    for (int j = 0; j < counts[r] && err == TASO_OK; j++) {
      const asked_t *a = &v[r + j * p->size];
      err = taso_rule_guard_put_verdict(g, (const uint8_t *)a->key, (size_t)a->h.len,
                                        got[displs[r] + j]);
    }
  free(got), free(counts), free(all), free(v), free(verdicts);
  return err;
}

/* ---- rule chains (expand.h) ------------------------------------------------------
 * Each link goes to its owner like any result; its parent is a path-only
 * copy of the link before it kept here (the owner of that one may drop it
 * as seen), so the path to any graph still goes one rewrite at a time. A
 * chain never stops at a graph seen or sent before: which rank follows it
 * must not change where it ends. */

static taso_err_t on_link(void *ctx, const taso_graph_t *g, double ms, bool *go) {
  par_t *p = ctx;
  uint64_t hash;
  TASO_TRY(taso_expander_hash(&p->x, g, &hash));
  child_t c = {.cost = ms,
               .parent = p->link_parent,
               .parent_rank = p->rank,
               .pick = p->pick,
               .seq = p->seq++,
               .rule = p->link_rule,
               .depth = p->link_depth};
  /* a graph sent this round by an earlier result is kept from there */
  if (!(p->nsent && p->sent[sent_slot(p, g, hash)])) TASO_TRY(send(p, g, hash, c));
  TASO_TRY(taso_store_keep_path(&p->store, g, hash, ms, c.parent, c.parent_rank, c.depth, c.rule));
  p->link_parent = p->store.n - 1;
  p->link_depth++;
  *go = !stop_now(p);
  return TASO_OK;
}

/* The chain of a seed, after its pick's expansion. */
static taso_err_t follow_chain(par_t *p, const seed_t *sd) {
  uint64_t hash;
  TASO_TRY(taso_expander_hash(&p->x, &sd->g, &hash));
  TASO_TRY(taso_store_keep_path(&p->store, &sd->g, hash, sd->ms, p->parent, p->parent_rank,
                                p->depth, sd->rule));
  p->link_parent = p->store.n - 1;
  p->link_depth = p->depth + 1;
  p->link_rule = sd->rule;
  return taso_expand_chain(&p->x, &sd->g, sd->ms, sd->rule, p->max_nodes, on_link, p, &p->chains);
}

/* Expands this rank's share of the round's picks: pick i falls to rank i
 * modulo the rank count, whoever owns it, so the ranks share the work
 * evenly. Who expands a graph changes nothing in its results. With a
 * guard, the picks are probed first and the relations they need decided
 * once over all ranks (share_verdicts), so that no two ranks prove the
 * same relation. */
static taso_err_t expand_picks(par_t *p, const offer_t *picks, int npicks, int64_t *mine) {
  char *v = NULL;
  int n = 0;
  TASO_TRY(share_picks(p, picks, npicks, &v, &n));
  taso_err_t err = TASO_OK;
  if (p->x.guard) {
    int *qpick = NULL;
    err = probe_picks(p, v, n, &qpick);
    err = share_verdicts(p, qpick, err);
    free(qpick);
    taso_rule_guard_questions_clear(p->x.guard);
  }
  taso_graph_t host;
  taso_graph_init(&host);
  for (int at = 0; err == TASO_OK && !p->res->timed_out;) {
    picked_t h;
    bool found;
    err = next_pick(p, v, n, &at, &host, &h, &found);
    if (err != TASO_OK || !found) break;
    p->parent = picks[h.pick].index;
    p->parent_rank = picks[h.pick].rank;
    p->pick = h.pick;
    p->seq = 0;
    p->depth = h.depth + 1;
    (*mine)++;
    p->host_ms = picks[h.pick].cost;
    p->nseeds = 0;
    p->seeding = p->opt->chain;
    err = taso_expand(&p->x, &host, on_child, stop_now, p);
    p->seeding = false;
    for (int i = 0; err == TASO_OK && i < p->nseeds && !p->res->timed_out; i++)
      err = follow_chain(p, &p->seeds[i]);
  }
  taso_graph_free(&host);
  free(v);
  return err;
}

/* Notes when the cheapest graph found anywhere first reaches the target. */
static void note_target(par_t *p) {
  if (p->opt->target <= 0 || p->res->target_seconds >= 0) return;
  double found = p->found;
  MPI_Allreduce(&p->found, &found, 1, MPI_DOUBLE, MPI_MIN, p->comm);
  if (found <= p->opt->target) p->res->target_seconds = taso_search_now() - p->start;
}

/* One round; *done when the queue is empty everywhere, the budget is
 * spent or the time is up. */
static taso_err_t round_(par_t *p, int64_t *mine, bool *done) {
  int64_t queued = p->store.nheap, total = 0;
  int late = out_of_time(p) || p->res->timed_out, any_late = 0;
  MPI_Allreduce(&queued, &total, 1, MPI_INT64_T, MPI_SUM, p->comm);
  MPI_Allreduce(&late, &any_late, 1, MPI_INT, MPI_MAX, p->comm);
  p->res->timed_out = any_late;
  p->res->budget_spent = total > 0 && p->res->explored >= p->opt->budget;
  *done = total == 0 || any_late || p->res->budget_spent;
  if (*done) return TASO_OK;
  int64_t left = p->opt->budget - p->res->explored;
  int want = (int)(left < p->opt->width ? left : p->opt->width);
  offer_t *all = NULL;
  int n = 0;
  TASO_TRY(gather_offers(p, want, &all, &n));
  int picks = n < want ? n : want;
  for (int i = 0; i < picks; i++)
    if (all[i].cost < p->best) p->best = all[i].cost;
  for (int i = picks; i < n; i++) /* not picked: back in the queue */
    if (all[i].rank == p->rank) taso_heap_push(&p->store, all[i].index);
  p->res->explored += picks;
  p->res->rounds++;
  taso_err_t err = expand_picks(p, all, picks, mine);
  free(all);
  /* a failure on one rank must not leave the others in the exchange */
  int bad = err != TASO_OK, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, p->comm);
  if (any_bad) return err != TASO_OK ? err : taso_error(TASO_ERR_ARG, "another rank failed");
  if (p->defer) TASO_TRY(settle_pending(p));
  TASO_TRY(exchange(p));
  note_target(p);
  progress(p);
  int64_t keep = p->opt->budget - p->res->explored + 1;
  return p->store.nheap > 2 * keep + 1024 ? taso_trim_queue(&p->store, keep) : TASO_OK;
}

/* ---- the result ------------------------------------------------------------- */

/* A candidate for the result: of equal costs, the one fewest rewrites
 * away (cost-neutral rewrites are churn), then the smaller hash. */
typedef struct {
  double cost;
  int64_t depth;
  uint64_t hash;
  int64_t index; /* in its owner's store; -1: none */
  int64_t rank;
} candidate_t;

static bool better(const candidate_t *a, const candidate_t *b) {
  if (b->index < 0) return a->index >= 0;
  if (a->index < 0) return false;
  if (a->cost != b->cost) return a->cost < b->cost;
  if (a->depth != b->depth) return a->depth < b->depth;
  if (a->hash != b->hash) return a->hash < b->hash;
  return a->rank < b->rank || (a->rank == b->rank && a->index < b->index);
}

/* The best graph held anywhere, as (rank, index). */
static void find_best(par_t *p, int *rank, int64_t *index) {
  candidate_t mine = {.index = -1, .rank = p->rank};
  for (int64_t i = 0; i < p->store.n; i++) {
    const stored_t *e = &p->store.v[i];
    candidate_t c = {
        .cost = e->cost, .depth = e->depth, .hash = e->hash, .index = i, .rank = p->rank};
    if (e->g.nodes && !e->path_only && better(&c, &mine)) mine = c; /* trimmed: no graph */
  }
  candidate_t *all = malloc(sizeof *all * (size_t)p->size), best = mine;
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, p->comm);
  for (int r = 0; r < p->size; r++)
    if (better(&all[r], &best)) best = all[r];
  free(all);
  *rank = (int)best.rank;
  *index = best.index;
}

/* One graph of the path, from the rank that holds it to every rank. */
static taso_err_t share_step(par_t *p, int rank, int64_t index, taso_graph_t *g, int *rule,
                             int *parent_rank, int64_t *parent) {
  int64_t head[5] = {0};
  if (p->rank == rank) {
    const stored_t *e = &p->store.v[index];
    head[0] = e->g.nnodes, head[1] = e->g.noutputs, head[2] = e->rule, head[3] = e->parent_rank,
    head[4] = e->parent;
    TASO_TRY(taso_graph_copy(g, &e->g));
  }
  MPI_Bcast(head, 5, MPI_INT64_T, rank, p->comm);
  if (p->rank != rank) TASO_TRY(fit_graph(g, head[0], head[1]));
  MPI_Bcast(g->nodes, (int)(sizeof *g->nodes * (size_t)head[0]), MPI_BYTE, rank, p->comm);
  MPI_Bcast(g->outputs, (int)(sizeof *g->outputs * (size_t)head[1]), MPI_BYTE, rank, p->comm);
  *rule = (int)head[2];
  *parent_rank = (int)head[3];
  *parent = head[4];
  return TASO_OK;
}

/* The best graph and the path to it, on every rank. */
static taso_err_t record_result(par_t *p, int rank, int64_t index) {
  taso_search_result_t *r = p->res;
  int cap = 16;
  r->path = calloc((size_t)cap, sizeof *r->path);
  r->path_rules = calloc((size_t)cap, sizeof *r->path_rules);
  if (!r->path || !r->path_rules) return taso_error(TASO_ERR_NOMEM, "path");
  int k = 0;
  for (; index >= 0; k++) {
    if (k == cap) {
      taso_graph_t *g = realloc(r->path, sizeof *g * (size_t)(cap * 2));
      if (g) r->path = g;
      int *rules = realloc(r->path_rules, sizeof *rules * (size_t)(cap * 2));
      if (rules) r->path_rules = rules;
      if (!g || !rules) return taso_error(TASO_ERR_NOMEM, "path");
      cap *= 2;
    }
    taso_graph_init(&r->path[k]);
    r->steps = k; /* so that a failure frees what is held */
    TASO_TRY(share_step(p, rank, index, &r->path[k], &r->path_rules[k], &rank, &index));
  }
  r->steps = k - 1;
  for (int i = 0, j = r->steps; i < j; i++, j--) { /* input first */
    taso_graph_t g = r->path[i];
    r->path[i] = r->path[j], r->path[j] = g;
    int x = r->path_rules[i];
    r->path_rules[i] = r->path_rules[j], r->path_rules[j] = x;
  }
  for (int i = 1; i <= r->steps; i++)
    r->fired[r->path_rules[i]]++;
  return taso_graph_copy(&r->best, &r->path[r->steps]);
}

/* Sums of the per-rank counts, and each rank's expansions. */
static taso_err_t gather_counts(par_t *p, int64_t mine) {
  taso_search_result_t *r = p->res;
  int64_t local[5] = {r->generated + p->chains.generated, r->invalid + p->chains.invalid, r->queued,
                      p->x.checked, p->chains.links},
          sum[5];
  MPI_Allreduce(local, sum, 5, MPI_INT64_T, MPI_SUM, p->comm);
  r->generated = sum[0], r->invalid = sum[1], r->queued = sum[2], r->checked = sum[3];
  r->chained = sum[4];
  if (!(r->rank_explored = malloc(sizeof *r->rank_explored * (size_t)p->size)))
    return taso_error(TASO_ERR_NOMEM, "counts");
  MPI_Allgather(&mine, 1, MPI_INT64_T, r->rank_explored, 1, MPI_INT64_T, p->comm);
  return TASO_OK;
}

static taso_err_t run(par_t *p) {
  taso_graph_t start;
  taso_graph_init(&start);
  double cost = 0;
  uint64_t hash = 0;
  taso_err_t err = start_graph(p, &start, &cost);
  if (err == TASO_OK) err = taso_expander_hash(&p->x, &start, &hash);
  if (err == TASO_OK && owner(p, hash) == p->rank)
    err = taso_store_add(&p->store, &start, hash, cost, -1, -1);
  p->max_nodes = 2 * start.nnodes;
  taso_graph_free(&start);
  TASO_TRY(err);
  p->res->cost_before = p->best = p->found = cost;
  p->res->target_seconds = -1;
  note_target(p);
  int64_t mine = 0;
  for (bool done = false; !done;)
    TASO_TRY(round_(p, &mine, &done));
  TASO_TRY(gather_counts(p, mine));
  int rank;
  int64_t index;
  find_best(p, &rank, &index);
  TASO_TRY(record_result(p, rank, index));
  p->res->cost_after = 0;
  if (p->rank == rank) p->res->cost_after = p->store.v[index].cost;
  MPI_Bcast(&p->res->cost_after, 1, MPI_DOUBLE, rank, p->comm);
  return TASO_OK;
}

taso_err_t taso_search_parallel(MPI_Comm comm, const taso_search_problem_t *prob,
                                const taso_rules_t *rules, taso_cost_cache_t *costs,
                                const taso_search_options_t *opt, taso_search_result_t *result) {
  memset(result, 0, sizeof *result);
  taso_graph_init(&result->best);
  if (opt->width < 1) return taso_error(TASO_ERR_ARG, "parallel search: width %d", opt->width);
  par_t p = {.comm = comm, .opt = opt, .res = result};
  MPI_Comm_rank(comm, &p.rank);
  MPI_Comm_size(comm, &p.size);
  result->ranks = p.size;
  p.store.by_hash = true;
  p.defer = opt->defer_costs;
  taso_cost_cache_set_defer(costs, p.defer);
  p.x = (taso_expander_t){.prob = prob,
                          .rules = rules,
                          .costs = costs,
                          .guard = opt->guard,
                          .check = opt->check_incremental};
  result->fired = calloc((size_t)rules->n + 1, sizeof *result->fired);
  p.out = calloc((size_t)p.size, sizeof *p.out);
  taso_err_t err = result->fired && p.out ? TASO_OK : taso_error(TASO_ERR_NOMEM, "search");
  p.start = p.last_progress = taso_search_now();
  double cpu = taso_search_cpu_now();
  if (err == TASO_OK) err = run(&p);
  result->seconds = taso_search_now() - p.start;
  cpu = taso_search_cpu_now() - cpu;
  MPI_Allreduce(&cpu, &result->cpu_seconds, 1, MPI_DOUBLE, MPI_SUM, comm);
  for (int r = 0; p.out && r < p.size; r++)
    free(p.out[r].v);
  free(p.out);
  free(p.stash.v);
  free(p.sent);
  for (int i = 0; i < p.seeds_cap; i++)
    taso_graph_free(&p.seeds[i].g);
  free(p.seeds);
  taso_cost_cache_set_defer(costs, false);
  taso_store_free(&p.store);
  taso_expander_free(&p.x);
  if (err != TASO_OK) taso_search_result_free(result);
  return err;
}
