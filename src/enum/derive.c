#include "derive.h"

#include "job.h"
#include "match.h"
#include "rules.h"

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
  taso_graph_t g;               /* canonical */
  taso_tensor_t *types;         /* g typed on the input table */
  uint64_t hash;                /* taso_graph_hash(g) */
  int depth;                    /* rewrites from the side's start */
  uint8_t kinds[TASO_OP_COUNT]; /* operators per kind, for the rules' quick filter */
  uint64_t mask;                /* bit k: an operator of kind k; a quicker filter first */
  int64_t parent, rule;         /* reached from graph parent of its side by rule; -1: the start */
  int dir;                      /* in direction dir */
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
  taso_inputs_t in; /* the table every graph is typed on */
  taso_derive_opts_t o;
  taso_rule_t *rule;       /* 2 per rule: src => dst, dst => src (rules.h: with its condition) */
  uint8_t *has_cond;       /* per direction: rule made (its lhs has operators) */
  uint64_t *mask;          /* per direction: the lhs's kinds (reached_t.mask) */
  int64_t ncond, cond_cap; /* rules whose conditions are computed */
  /* the directions 2 * rule + dir whose lhs has operators and rhs none,
   * ascending: the lookahead's rules, found without a pass over them all */
  int64_t *bare;
  int64_t nbare;
  side_t side[2];
  /* the path search (derive.h, optimistic): rewrites the hook refused on
   * a path, left out of the next search */
  struct edge {
    uint64_t from, to;
    int64_t rule;
    int dir;
  } * forbidden;
  int nforbidden, capforbidden;
  bool paths; /* record meetings: an optimistic search */
  struct meeting {
    int side;
    int64_t a, b, rule;
    int dir;
    bool via;
  } meet;
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
  for (int64_t i = 0; i < s->nslots; i++)
    s->slot[i] = 0;
}

void taso_deriver_free(taso_deriver_t *d) {
  if (!d) return;
  for (int k = 0; k < 2; k++) {
    side_clear(&d->side[k]);
    free(d->side[k].v);
    free(d->side[k].slot);
  }
  for (int64_t i = 0; i < 2 * d->ncond; i++)
    if (d->has_cond[i]) taso_rule_free(&d->rule[i]);
  free(d->rule);
  free(d->has_cond);
  free(d->mask);
  free(d->bare);
  free(d->forbidden);
  free(d->in.v);
  free(d);
}

_Static_assert(TASO_OP_COUNT <= 64, "kind masks are 64 bits");

static uint64_t kind_mask(const uint8_t *kinds) {
  uint64_t m = 0;
  for (int k = 0; k < TASO_OP_COUNT; k++)
    if (kinds[k]) m |= (uint64_t)1 << k;
  return m;
}

/* Rules [d->ncond, nrules), both directions, with their shape conditions
 * (taso_rule_init). */
static taso_err_t add_conditions(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules) {
  if (nrules > d->cond_cap) {
    int64_t cap = nrules > 2 * d->cond_cap ? nrules : 2 * d->cond_cap;
    taso_rule_t *c = realloc(d->rule, sizeof *c * (size_t)(2 * cap));
    if (c) d->rule = c;
    uint8_t *h = realloc(d->has_cond, (size_t)(2 * cap));
    if (h) d->has_cond = h;
    uint64_t *m = realloc(d->mask, sizeof *m * (size_t)(2 * cap));
    if (m) d->mask = m;
    int64_t *b = realloc(d->bare, sizeof *b * (size_t)(2 * cap));
    if (b) d->bare = b;
    if (!c || !h || !m || !b) return taso_error(TASO_ERR_NOMEM, "shape conditions");
    d->cond_cap = cap;
  }
  for (; d->ncond < nrules; d->ncond++)
    for (int dir = 0; dir < 2; dir++) {
      const taso_cand_t *r = &rules[d->ncond];
      const taso_graph_t *lhs = dir ? &r->dst : &r->src, *rhs = dir ? &r->src : &r->dst;
      int64_t at = 2 * d->ncond + dir;
      d->has_cond[at] = 0;
      d->mask[at] = kind_mask(r->kinds[dir]);
      if (taso_graph_ops(lhs) == 0) continue; /* a bare input matches everything */
      taso_err_t err = taso_rule_init(&d->rule[at], lhs, rhs, &d->in, d->ncond, dir == 1);
      if (err != TASO_OK) {
        taso_rule_free(&d->rule[at]);
        return err;
      }
      d->has_cond[at] = 1;
      /* once, even where an earlier call failed past this direction */
      if (taso_graph_ops(rhs) == 0 && (d->nbare == 0 || d->bare[d->nbare - 1] < at))
        d->bare[d->nbare++] = at;
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
  while (s->slot[h])
    h = (h + 1) & (s->nslots - 1);
  s->slot[h] = i + 1;
}

/* Adds a copy of g (not in s) at depth. */
static taso_err_t side_add(taso_deriver_t *d, side_t *s, const taso_graph_t *g, uint64_t hash,
                           int depth) {
  if (2 * (s->n + 1) > s->nslots) { /* grow the index, keeping it at most half full */
    int64_t nslots = s->nslots ? 2 * s->nslots : 1024;
    int64_t *slot = calloc((size_t)nslots, sizeof *slot);
    if (!slot) return taso_error(TASO_ERR_NOMEM, "derivation index");
    free(s->slot);
    s->slot = slot;
    s->nslots = nslots;
    for (int64_t i = 0; i < s->n; i++)
      side_index(s, i);
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
  r->parent = r->rule = -1;
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
  r->mask = kind_mask(r->kinds);
  side_index(s, s->n++);
  return TASO_OK;
}

/* The state of one layer's expansion, for the rewrite callback. */
typedef struct {
  taso_deriver_t *d;
  int me;             /* the side growing */
  int depth;          /* of the graphs it adds */
  int max_ops;        /* of any graph reached */
  int best;           /* fewest steps of a meeting found, or -1 */
  bool full;          /* the side reached max_nodes */
  int64_t host, rule; /* the graph rewritten and the rule, for the edge */
  int dir;
} layer_t;

/* Whether the rewrite of graph from by rule, dir into to is left out. */
static bool forbidden(const taso_deriver_t *d, uint64_t from, uint64_t to, int64_t rule, int dir) {
  for (int i = 0; i < d->nforbidden; i++)
    if (d->forbidden[i].from == from && d->forbidden[i].to == to && d->forbidden[i].rule == rule &&
        d->forbidden[i].dir == dir)
      return true;
  return false;
}

static taso_err_t reached(void *ctx, const taso_graph_t *g) {
  layer_t *l = ctx;
  side_t *s = &l->d->side[l->me], *other = &l->d->side[1 - l->me];
  if (taso_graph_ops(g) > l->max_ops) return TASO_OK;
  uint64_t hash = taso_graph_hash(g);
  if (side_find(s, g, hash) >= 0) return TASO_OK;
  if (l->d->nforbidden && forbidden(l->d, s->v[l->host].hash, hash, l->rule, l->dir))
    return TASO_OK;
  if (s->n >= l->d->o.max_nodes) {
    l->full = true;
    return TASO_OK;
  }
  TASO_TRY(side_add(l->d, s, g, hash, l->depth));
  s->v[s->n - 1].parent = l->host;
  s->v[s->n - 1].rule = l->rule;
  s->v[s->n - 1].dir = l->dir;
  int64_t at = side_find(other, g, hash);
  if (at >= 0) {
    int steps = l->depth + other->v[at].depth;
    if (l->best < 0 || steps < l->best) {
      l->best = steps;
      l->d->meet = (struct meeting){.side = l->me, .a = s->n - 1, .b = at};
    }
  }
  return TASO_OK;
}

static bool fits(const uint8_t *pattern, const uint8_t *host) {
  for (int k = 0; k < TASO_OP_COUNT; k++)
    if (pattern[k] > host[k]) return false;
  return true;
}

/* Every one-step rewrite of host by direction at (2 * rule + dir) whose
 * rule was made (d->has_cond), through the hook when there is one, else
 * with the checked engine. */
static taso_err_t rewrite_by(taso_deriver_t *d, int64_t at, const reached_t *host,
                             taso_rewrite_fn fn, void *ctx) {
  const taso_rule_t *r = &d->rule[at];
  if (d->o.rewrite)
    return d->o.rewrite(d->o.rewrite_ctx, at / 2, (int)(at % 2), &host->g, host->types, &r->lhs,
                        &r->rhs, &r->cond, fn, ctx);
  return taso_rewrite_all_checked(&host->g, host->types, &r->lhs, &r->rhs, &d->in, &r->cond, fn,
                                  ctx);
}

/* Every one-step rewrite of graph i of the growing side. */
static taso_err_t expand(layer_t *l, const taso_cand_t *rules, int64_t nrules, int64_t i) {
  taso_deriver_t *d = l->d;
  /* shallow copies: adding graphs may move the array, never the buffers */
  reached_t host = d->side[l->me].v[i];
  l->host = i;
  for (int64_t k = 0; k < nrules; k++)
    for (int dir = 0; dir < 2; dir++) {
      int64_t at = 2 * k + dir;
      if (!d->has_cond[at] || (d->mask[at] & ~host.mask) || !fits(rules[k].kinds[dir], host.kinds))
        continue;
      l->rule = k;
      l->dir = dir;
      TASO_TRY(rewrite_by(d, at, &host, reached, l));
    }
  return TASO_OK;
}

/* The lookahead's state: the other side's graphs met through one more
 * rewrite by a rule whose result side is a bare input. */
typedef struct {
  taso_deriver_t *d;
  int other;          /* the side looked into */
  int depth;          /* steps to the graph rewritten, plus the one rewrite */
  int best;           /* fewest steps of a meeting found, or -1 */
  int budget;         /* max_steps */
  int64_t host, rule; /* the graph rewritten (of side 1 - other) and the rule */
  int dir;
} peek_t;

static taso_err_t peeked(void *ctx, const taso_graph_t *g) {
  peek_t *p = ctx;
  const side_t *s = &p->d->side[p->other];
  uint64_t hash = taso_graph_hash(g);
  int64_t at = side_find(s, g, hash);
  if (at >= 0 && p->d->nforbidden &&
      forbidden(p->d, p->d->side[1 - p->other].v[p->host].hash, hash, p->rule, p->dir))
    at = -1;
  if (at >= 0) {
    int steps = p->depth + s->v[at].depth;
    if (steps <= p->budget && (p->best < 0 || steps < p->best)) {
      p->best = steps;
      p->d->meet = (struct meeting){
          .side = 1 - p->other, .a = p->host, .b = at, .rule = p->rule, .dir = p->dir, .via = true};
    }
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
static taso_err_t lookahead(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules, int me,
                            int64_t from, int64_t to, int *best) {
  peek_t p = {.d = d, .other = 1 - me, .best = -1, .budget = d->o.max_steps};
  for (int64_t i = from; i < to; i++) {
    reached_t host = d->side[me].v[i];
    p.depth = host.depth + 1;
    p.host = i;
    if (p.depth > d->o.max_steps) continue;
    /* d->bare ascends: the same order as a pass over every rule */
    for (int64_t b = 0; b < d->nbare && d->bare[b] < 2 * nrules; b++) {
      int64_t at = d->bare[b], k = at / 2;
      int dir = (int)(at % 2);
      if ((d->mask[at] & ~host.mask) || !fits(rules[k].kinds[dir], host.kinds)) continue;
      p.rule = k;
      p.dir = dir;
      TASO_TRY(rewrite_by(d, at, &host, peeked, &p));
    }
  }
  *best = p.best;
  return TASO_OK;
}

static int max_int(int a, int b) {
  return a > b ? a : b;
}

static taso_err_t search(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules,
                         const taso_graph_t *src, const taso_graph_t *dst, int *steps) {
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
  for (int me = 0; me < 2 && *steps < 0; me++)
    TASO_TRY(lookahead(d, rules, nrules, me, 0, 1, steps));
  if (*steps >= 0) return TASO_OK;
  while (depth[0] + depth[1] < d->o.max_steps && !(stopped[0] && stopped[1])) {
    /* grow the side with the smaller frontier: fewer expansions per layer */
    int me = stopped[0]                                                       ? 1
             : stopped[1]                                                     ? 0
             : d->side[0].n - layer_start[0] <= d->side[1].n - layer_start[1] ? 0
                                                                              : 1;
    layer_t l = {.d = d, .me = me, .depth = depth[me] + 1, .max_ops = max_ops, .best = -1};
    int64_t from = layer_start[me], to = d->side[me].n;
    for (int64_t i = from; i < to; i++)
      TASO_TRY(expand(&l, rules, nrules, i));
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

/* The state of one edge's check: whether the hook, deciding, gives to. */
typedef struct {
  const taso_graph_t *to;
  uint64_t hash;
  bool found;
} check_t;

static taso_err_t checked(void *ctx, const taso_graph_t *g) {
  check_t *c = ctx;
  if (!c->found && taso_graph_hash(g) == c->hash && taso_graph_compare(g, c->to) == 0)
    c->found = true;
  return TASO_OK;
}

/* Whether the hook, deciding, accepts the rewrite of from by rule, dir
 * into to; if not, it is left out of later searches. */
static taso_err_t check_edge(taso_deriver_t *d, const reached_t *from, const reached_t *to,
                             int64_t rule, int dir, bool *ok) {
  check_t c = {.to = &to->g, .hash = to->hash};
  TASO_TRY(rewrite_by(d, 2 * rule + dir, from, checked, &c));
  *ok = c.found;
  if (c.found) return TASO_OK;
  if (d->nforbidden == d->capforbidden) {
    int cap = 2 * d->capforbidden + 16;
    struct edge *f = realloc(d->forbidden, sizeof *f * (size_t)cap);
    if (!f) return taso_error(TASO_ERR_NOMEM, "derivation");
    d->forbidden = f;
    d->capforbidden = cap;
  }
  d->forbidden[d->nforbidden++] = (struct edge){from->hash, to->hash, rule, dir};
  return TASO_OK;
}

/* Checks every rewrite of side k's chain from graph i back to its start;
 * *ok false at the first refused. */
static taso_err_t check_chain(taso_deriver_t *d, int k, int64_t i, bool *ok) {
  const side_t *s = &d->side[k];
  *ok = true;
  for (; *ok && s->v[i].parent >= 0; i = s->v[i].parent)
    TASO_TRY(check_edge(d, &s->v[s->v[i].parent], &s->v[i], s->v[i].rule, s->v[i].dir, ok));
  return TASO_OK;
}

/* Most searches before the path search gives way to the plain one. */
#define PATH_TRIES 16

taso_err_t taso_derive(taso_deriver_t *d, const taso_cand_t *rules, int64_t nrules,
                       const taso_graph_t *src, const taso_graph_t *dst, int *steps) {
  *steps = -1;
  TASO_TRY(add_conditions(d, rules, nrules));
  if (!d->o.optimistic) return search(d, rules, nrules, src, dst, steps);
  /* The path search: every match accepted, then the hook decides only the
   * rewrites of the path found; one it refuses is left out and the search
   * runs again. Each search depends on the rules, the pair and the
   * rewrites left out, whose verdicts depend on their keys alone: the
   * outcome does not depend on the hook's earlier decisions. */
  d->nforbidden = 0;
  for (int t = 0; t < PATH_TRIES; t++) {
    d->o.optimistic(d->o.rewrite_ctx, true);
    taso_err_t err = search(d, rules, nrules, src, dst, steps);
    d->o.optimistic(d->o.rewrite_ctx, false);
    if (err != TASO_OK || *steps <= 0) return err; /* none with every match accepted: none at all */
    struct meeting m = d->meet;
    bool ok;
    TASO_TRY(check_chain(d, m.side, m.a, &ok));
    if (ok) TASO_TRY(check_chain(d, 1 - m.side, m.b, &ok));
    if (ok && m.via)
      TASO_TRY(
          check_edge(d, &d->side[m.side].v[m.a], &d->side[1 - m.side].v[m.b], m.rule, m.dir, &ok));
    if (ok) return TASO_OK;
    *steps = -1;
  }
  return search(d, rules, nrules, src, dst, steps);
}
