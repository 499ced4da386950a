#include "derive.h"

#include "job.h"
#include "match.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const taso_field_t pruned_fields[] = {
    {"reason", offsetof(taso_pruned_t, reason), TASO_FIELD_INT32, 0},
    {"steps", offsetof(taso_pruned_t, steps), TASO_FIELD_INT32, 0},
    {"rules", offsetof(taso_pruned_t, rules), TASO_FIELD_INT64, 0},
    {"text", offsetof(taso_pruned_t, text), TASO_FIELD_STRING, TASO_PRUNED_TEXT},
};
const taso_table_t taso_pruned_table = {"/pruned", sizeof(taso_pruned_t), pruned_fields, 4};

const char *taso_pruned_reason(int32_t reason) {
  static const char *const names[] = {"common subgraph", "independent parts", "implied"};
  return reason >= 0 && reason < 3 ? names[reason] : "unknown";
}

/* One graph the search reached. */
typedef struct {
  taso_graph_t g;         /* canonical */
  taso_tensor_t *types;   /* g typed on the input table */
  uint64_t hash;          /* taso_graph_hash(g) */
  int depth;              /* rewrites from the side's start */
  uint8_t kinds[TASO_OP_COUNT]; /* operators per kind, for the rules' quick filter */
} reached_t;

/* The graphs one side reached, with an index by hash (open addressing;
 * slots hold index + 1, 0 for empty). */
typedef struct {
  reached_t *v;
  int64_t n, cap;
  int64_t *slot;
  int64_t nslots;
} side_t;

struct taso_deriver {
  taso_inputs_t in;             /* the table every graph is typed on */
  taso_derive_opts_t o;
  taso_shape_cond_t *cond;      /* 2 per rule: src => dst, dst => src */
  uint8_t *has_cond;            /* per direction: cond computed (its lhs has operators) */
  int64_t ncond, cond_cap;      /* rules whose conditions are computed */
  side_t side[2];
};

taso_err_t taso_deriver_create(const taso_inputs_t *in, const taso_derive_opts_t *opts,
                               taso_deriver_t **out) {
  taso_deriver_t *d = calloc(1, sizeof *d);
  if (!d) return taso_error(TASO_ERR_NOMEM, "deriver");
  if (opts) d->o = *opts;
  if (d->o.max_steps <= 0) d->o.max_steps = TASO_DEFAULT_DERIVE_STEPS;
  if (d->o.extra_ops == 0) d->o.extra_ops = TASO_DEFAULT_DERIVE_EXTRA_OPS;
  if (d->o.extra_ops < 0) d->o.extra_ops = 0;
  if (d->o.max_nodes <= 0) d->o.max_nodes = TASO_DEFAULT_DERIVE_NODES;
  d->in.n = in->n;
  d->in.v = malloc(sizeof *d->in.v * (size_t)(in->n + 1));
  if (!d->in.v) {
    free(d);
    return taso_error(TASO_ERR_NOMEM, "deriver");
  }
  memcpy(d->in.v, in->v, sizeof *d->in.v * (size_t)in->n);
  *out = d;
  return TASO_OK;
}

static void side_clear(side_t *s) {
  for (int64_t i = 0; i < s->n; i++) {
    taso_graph_free(&s->v[i].g);
    free(s->v[i].types);
  }
  s->n = 0;
  for (int64_t i = 0; i < s->nslots; i++) s->slot[i] = 0;
}

void taso_deriver_free(taso_deriver_t *d) {
  if (!d) return;
  for (int k = 0; k < 2; k++) {
    side_clear(&d->side[k]);
    free(d->side[k].v);
    free(d->side[k].slot);
  }
  for (int64_t i = 0; i < 2 * d->ncond; i++)
    if (d->has_cond[i]) taso_shape_cond_free(&d->cond[i]);
  free(d->cond);
  free(d->has_cond);
  free(d->in.v);
  free(d);
}

/* The shape conditions of rules [d->ncond, nrules), both directions. */
static taso_err_t add_conditions(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules) {
  if (nrules > d->cond_cap) {
    int64_t cap = nrules > 2 * d->cond_cap ? nrules : 2 * d->cond_cap;
    taso_shape_cond_t *c = realloc(d->cond, sizeof *c * (size_t)(2 * cap));
    if (c) d->cond = c;
    uint8_t *h = realloc(d->has_cond, (size_t)(2 * cap));
    if (h) d->has_cond = h;
    if (!c || !h) return taso_error(TASO_ERR_NOMEM, "shape conditions");
    d->cond_cap = cap;
  }
  for (; d->ncond < nrules; d->ncond++)
    for (int dir = 0; dir < 2; dir++) {
      const taso_cand_t *r = &rules[d->ncond];
      const taso_graph_t *lhs = dir ? &r->dst : &r->src, *rhs = dir ? &r->src : &r->dst;
      int64_t at = 2 * d->ncond + dir;
      d->has_cond[at] = 0;
      if (taso_graph_ops(lhs) == 0) continue; /* a bare input matches everything */
      TASO_TRY(taso_shape_cond_of(lhs, rhs, &d->in, &d->cond[at]));
      d->has_cond[at] = 1;
    }
  return TASO_OK;
}

/* The index of g in s, or -1. */
static int64_t side_find(const side_t *s, const taso_graph_t *g, uint64_t hash) {
  if (s->nslots == 0) return -1;
  for (int64_t h = (int64_t)(hash & (uint64_t)(s->nslots - 1));; h = (h + 1) & (s->nslots - 1)) {
    int64_t i = s->slot[h] - 1;
    if (i < 0) return -1;
    if (s->v[i].hash == hash && taso_graph_compare(&s->v[i].g, g) == 0) return i;
  }
}

static void side_index(side_t *s, int64_t i) {
  int64_t h = (int64_t)(s->v[i].hash & (uint64_t)(s->nslots - 1));
  while (s->slot[h]) h = (h + 1) & (s->nslots - 1);
  s->slot[h] = i + 1;
}

/* Adds a copy of g (not in s) at depth. */
static taso_err_t side_add(taso_deriver_t *d, side_t *s, const taso_graph_t *g, uint64_t hash, int depth) {
  if (2 * (s->n + 1) > s->nslots) { /* grow the index, keeping it at most half full */
    int64_t nslots = s->nslots ? 2 * s->nslots : 1024;
    int64_t *slot = calloc((size_t)nslots, sizeof *slot);
    if (!slot) return taso_error(TASO_ERR_NOMEM, "derivation index");
    free(s->slot);
    s->slot = slot;
    s->nslots = nslots;
    for (int64_t i = 0; i < s->n; i++) side_index(s, i);
  }
  if (s->n == s->cap) {
    int64_t cap = s->cap ? 2 * s->cap : 256;
    reached_t *v = realloc(s->v, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "derivation graphs");
    s->v = v;
    s->cap = cap;
  }
  reached_t *r = &s->v[s->n];
  memset(r, 0, sizeof *r);
  taso_graph_init(&r->g);
  r->hash = hash;
  r->depth = depth;
  taso_err_t err = taso_graph_copy(&r->g, g);
  if (err == TASO_OK && !(r->types = malloc(sizeof *r->types * (size_t)(2 * g->nnodes + 1))))
    err = taso_error(TASO_ERR_NOMEM, "derivation types");
  if (err == TASO_OK) err = taso_graph_infer(g, &d->in, r->types);
  if (err != TASO_OK) {
    taso_graph_free(&r->g);
    free(r->types);
    return err;
  }
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].kind != TASO_OP_INPUT) r->kinds[g->nodes[i].kind]++;
  side_index(s, s->n++);
  return TASO_OK;
}

/* The state of one layer's expansion, for the rewrite callback. */
typedef struct {
  taso_deriver_t *d;
  int me;       /* the side growing */
  int depth;    /* of the graphs it adds */
  int max_ops;  /* of any graph reached */
  int best;     /* fewest steps of a meeting found, or -1 */
  bool full;    /* the side reached max_nodes */
} layer_t;

static taso_err_t reached(void *ctx, const taso_graph_t *g) {
  layer_t *l = ctx;
  side_t *s = &l->d->side[l->me], *other = &l->d->side[1 - l->me];
  if (taso_graph_ops(g) > l->max_ops) return TASO_OK;
  uint64_t hash = taso_graph_hash(g);
  if (side_find(s, g, hash) >= 0) return TASO_OK;
  if (s->n >= l->d->o.max_nodes) {
    l->full = true;
    return TASO_OK;
  }
  TASO_TRY(side_add(l->d, s, g, hash, l->depth));
  int64_t at = side_find(other, g, hash);
  if (at >= 0) {
    int steps = l->depth + other->v[at].depth;
    if (l->best < 0 || steps < l->best) l->best = steps;
  }
  return TASO_OK;
}

static bool fits(const uint8_t *pattern, const uint8_t *host) {
  for (int k = 0; k < TASO_OP_COUNT; k++)
    if (pattern[k] > host[k]) return false;
  return true;
}

/* Every one-step rewrite of graph i of the growing side. */
static taso_err_t expand(layer_t *l, const taso_cand_t *rules, int64_t nrules, int64_t i) {
  taso_deriver_t *d = l->d;
  /* shallow copies: adding graphs may move the array, never the buffers */
  reached_t host = d->side[l->me].v[i];
  for (int64_t k = 0; k < nrules; k++)
    for (int dir = 0; dir < 2; dir++) {
      if (!d->has_cond[2 * k + dir] || !fits(rules[k].kinds[dir], host.kinds)) continue;
      const taso_graph_t *lhs = dir ? &rules[k].dst : &rules[k].src;
      const taso_graph_t *rhs = dir ? &rules[k].src : &rules[k].dst;
      if (d->o.rewrite)
        TASO_TRY(d->o.rewrite(d->o.rewrite_ctx, k, dir, &host.g, host.types, lhs, rhs, reached, l));
      else
        TASO_TRY(taso_rewrite_all_checked(&host.g, host.types, lhs, rhs, &d->in,
                                          &d->cond[2 * k + dir], reached, l));
    }
  return TASO_OK;
}

/* The lookahead's state: the other side's graphs met through one more
 * rewrite by a rule whose result side is a bare input. */
typedef struct {
  taso_deriver_t *d;
  int other;  /* the side looked into */
  int depth;  /* steps to the graph rewritten, plus the one rewrite */
  int best;   /* fewest steps of a meeting found, or -1 */
  int budget; /* max_steps */
} peek_t;

static taso_err_t peeked(void *ctx, const taso_graph_t *g) {
  peek_t *p = ctx;
  const side_t *s = &p->d->side[p->other];
  int64_t at = side_find(s, g, taso_graph_hash(g));
  if (at >= 0) {
    int steps = p->depth + s->v[at].depth;
    if (steps <= p->budget && (p->best < 0 || steps < p->best)) p->best = steps;
  }
  return TASO_OK;
}

/* A rule whose side is a bare input (ewmul(const_one, w1) => w1) rewrites
 * one way only: the engine never matches a bare input, so the side that
 * holds the smaller graph cannot undo it, and a derivation that ends in
 * it is found only if the other side makes that last step. The bounds
 * rarely leave room for it (the side with the smaller frontier grows
 * first), so each graph of a new layer [from, to) of side me is also
 * rewritten by those rules and each result looked up in the other side,
 * without being added. */
static taso_err_t lookahead(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules, int me, int64_t from,
                            int64_t to, int *best) {
  peek_t p = {.d = d, .other = 1 - me, .best = -1, .budget = d->o.max_steps};
  for (int64_t i = from; i < to; i++) {
    reached_t host = d->side[me].v[i];
    p.depth = host.depth + 1;
    if (p.depth > d->o.max_steps) continue;
    for (int64_t k = 0; k < nrules; k++)
      for (int dir = 0; dir < 2; dir++) {
        const taso_graph_t *lhs = dir ? &rules[k].dst : &rules[k].src;
        const taso_graph_t *rhs = dir ? &rules[k].src : &rules[k].dst;
        if (!d->has_cond[2 * k + dir] || taso_graph_ops(rhs) > 0 || !fits(rules[k].kinds[dir], host.kinds))
          continue;
        if (d->o.rewrite)
          TASO_TRY(d->o.rewrite(d->o.rewrite_ctx, k, dir, &host.g, host.types, lhs, rhs, peeked, &p));
        else
          TASO_TRY(taso_rewrite_all_checked(&host.g, host.types, lhs, rhs, &d->in, &d->cond[2 * k + dir],
                                            peeked, &p));
      }
  }
  *best = p.best;
  return TASO_OK;
}

static int max_int(int a, int b) { return a > b ? a : b; }

static taso_err_t search(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules, const taso_graph_t *src,
                         const taso_graph_t *dst, int *steps) {
  *steps = -1;
  side_clear(&d->side[0]);
  side_clear(&d->side[1]);
  if (taso_graph_compare(src, dst) == 0) {
    *steps = 0;
    return TASO_OK;
  }
  TASO_TRY(side_add(d, &d->side[0], src, taso_graph_hash(src), 0));
  TASO_TRY(side_add(d, &d->side[1], dst, taso_graph_hash(dst), 0));
  int depth[2] = {0, 0};
  int64_t layer_start[2] = {0, 0}; /* first graph of each side's frontier */
  int max_ops = max_int(taso_graph_ops(src), taso_graph_ops(dst)) + d->o.extra_ops;
  /* a side stops growing when a layer adds nothing (its closure: a bare
   * input, say, which no rule's side matches) or when it is full; the
   * other goes on, since a rewrite one way is not always one the other */
  bool stopped[2] = {false, false};
  for (int me = 0; me < 2 && *steps < 0; me++) TASO_TRY(lookahead(d, rules, nrules, me, 0, 1, steps));
  if (*steps >= 0) return TASO_OK;
  while (depth[0] + depth[1] < d->o.max_steps && !(stopped[0] && stopped[1])) {
    /* grow the side with the smaller frontier: fewer expansions per layer */
    int me = stopped[0] ? 1 : stopped[1] ? 0
           : d->side[0].n - layer_start[0] <= d->side[1].n - layer_start[1] ? 0 : 1;
    layer_t l = {.d = d, .me = me, .depth = depth[me] + 1, .max_ops = max_ops, .best = -1};
    int64_t from = layer_start[me], to = d->side[me].n;
    for (int64_t i = from; i < to; i++) TASO_TRY(expand(&l, rules, nrules, i));
    layer_start[me] = to;
    if (l.best < 0) TASO_TRY(lookahead(d, rules, nrules, me, to, d->side[me].n, &l.best));
    if (l.best >= 0) {
      *steps = l.best;
      return TASO_OK;
    }
    stopped[me] = d->side[me].n == to || l.full;
    if (d->side[me].n > to) depth[me]++; /* an empty layer costs no step */
  }
  return TASO_OK;
}

taso_err_t taso_derive(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules,
                       const taso_graph_t *src, const taso_graph_t *dst, int *steps) {
  *steps = -1;
  TASO_TRY(add_conditions(d, rules, nrules));
  if (d->o.optimistic) { /* a search that fails with every match accepted needs no proofs */
    d->o.optimistic(d->o.rewrite_ctx, true);
    taso_err_t err = search(d, rules, nrules, src, dst, steps);
    d->o.optimistic(d->o.rewrite_ctx, false);
    if (err != TASO_OK || *steps < 0) return err;
  }
  return search(d, rules, nrules, src, dst, steps);
}
