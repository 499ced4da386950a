#include "enumerate.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* A candidate operator: a variant on input refs, with its output types. */
typedef struct {
  int32_t variant;
  taso_ref_t in[3];
  int32_t out[2]; /* type ids; -1 for a port the operator lacks */
} cand_t;

/* A valid application found by the shape rules: variant and output types. */
typedef struct {
  int32_t variant;
  int32_t out[2];
} valid_t;

typedef struct {
  cand_t *v;
  int n, cap;
} list_t;

/* Open-addressing map from a 64-bit key to (offset, count) in a pool. */
typedef struct {
  uint64_t *key; /* key + 1; 0 marks an empty slot */
  int32_t *off, *cnt;
  int64_t cap, n;
} map_t;

struct taso_enum {
  const taso_inputs_t *in;
  int ninputs, max_ops, unit_depth;
  uint64_t weights; /* inputs allowed in a conv2d weight (taso_enum_opts_t) */
  bool keep_identities;
  void (*count_progress)(void *ctx, int64_t done, int64_t total);
  void *progress_ctx;
  taso_variant_t *variants;
  int nvariants;
  /* type table */
  taso_tensor_t *types;
  int ntypes, types_cap;
  int32_t *slots; /* open-addressing table of type ids */
  int64_t slots_cap;
  /* shape-rule caches */
  valid_t *pool;
  int npool, pool_cap;
  map_t valid_map; /* (arity, type a, type b) -> valid applications */
  /* unit weights of the states above the unit depth, in depth-first order */
  int64_t *subtree, *skip;
  int64_t nstates, states_cap;
  int part, nparts;    /* the share of the count pass this process weighs */
  int64_t units;       /* units met by the count pass so far */
  int64_t level_units; /* units met by the current level walk so far */
  /* the walk's state */
  int32_t variant[TASO_ENUM_MAX_OPS];
  unsigned cone[TASO_ENUM_MAX_OPS];  /* operators each one depends on, itself included */
  uint64_t reads[TASO_ENUM_MAX_OPS]; /* inputs each one depends on (the first 64) */
  bool on_input[TASO_ENUM_MAX_OPS];  /* whether each one depends on any input */
  int64_t constant_refused;          /* operators not applied to constants alone */
  taso_ref_t op_in[TASO_ENUM_MAX_OPS][3];
  int32_t *ref_type;  /* type id per ref */
  int32_t *consumers; /* consumers per ref */
  taso_ref_t sinks[2 * TASO_ENUM_MAX_OPS];
  int nops;
  list_t lists[TASO_ENUM_MAX_OPS + 1]; /* candidate list per depth */
  list_t fresh;                        /* scratch for New(o) */
};

/* ---- small utilities ----------------------------------------------------- */

static uint64_t type_hash(const taso_tensor_t *t) {
  const int32_t *w = (const int32_t *)t;
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < sizeof *t / sizeof *w; i++)
    h = taso_mix64(h ^ (uint32_t)w[i]) + i;
  return h;
}

static taso_err_t grow(void **v, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return TASO_OK;
  int64_t c = *cap ? *cap : 64;
  while (c < need)
    c *= 2;
  void *p = realloc(*v, (size_t)c * elem);
  if (!p) return taso_error(TASO_ERR_NOMEM, "enumeration tables (%lld entries)", (long long)c);
  *v = p;
  *cap = c;
  return TASO_OK;
}

static taso_err_t list_reserve(list_t *l, int need) {
  int64_t cap = l->cap;
  TASO_TRY(grow((void **)&l->v, &cap, need, sizeof *l->v));
  l->cap = (int)cap;
  return TASO_OK;
}

static int cand_cmp(const cand_t *a, const cand_t *b) {
  if (a->variant != b->variant) return a->variant < b->variant ? -1 : 1;
  for (int i = 0; i < 3; i++)
    if (a->in[i] != b->in[i]) return a->in[i] < b->in[i] ? -1 : 1;
  return 0;
}

static int cand_qcmp(const void *a, const void *b) {
  return cand_cmp(a, b);
}

/* ---- maps ---------------------------------------------------------------- */

static void map_free(map_t *m) {
  free(m->key);
  free(m->off);
  free(m->cnt);
  memset(m, 0, sizeof *m);
}

static taso_err_t map_init(map_t *m, int64_t cap) {
  m->cap = cap;
  m->n = 0;
  m->key = calloc((size_t)cap, sizeof *m->key);
  m->off = malloc((size_t)cap * sizeof *m->off);
  m->cnt = malloc((size_t)cap * sizeof *m->cnt);
  if (!m->key || !m->off || !m->cnt) {
    map_free(m);
    return taso_error(TASO_ERR_NOMEM, "enumeration map");
  }
  return TASO_OK;
}

/* Slot of key (found, or the empty slot where it goes). */
static int64_t map_slot(const map_t *m, uint64_t key) {
  int64_t i = (int64_t)(taso_mix64(key) & (uint64_t)(m->cap - 1));
  while (m->key[i] && m->key[i] != key + 1)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static taso_err_t map_put(map_t *m, uint64_t key, int32_t off, int32_t cnt) {
  if (2 * (m->n + 1) > m->cap) {
    map_t bigger;
    TASO_TRY(map_init(&bigger, 2 * m->cap));
    for (int64_t i = 0; i < m->cap; i++)
      if (m->key[i]) {
        int64_t s = map_slot(&bigger, m->key[i] - 1);
        bigger.key[s] = m->key[i];
        bigger.off[s] = m->off[i];
        bigger.cnt[s] = m->cnt[i];
      }
    bigger.n = m->n;
    map_free(m);
    *m = bigger;
  }
  int64_t s = map_slot(m, key);
  if (!m->key[s]) m->n++;
  m->key[s] = key + 1;
  m->off[s] = off;
  m->cnt[s] = cnt;
  return TASO_OK;
}

/* ---- types --------------------------------------------------------------- */

/* Id of a type, adding it when new (open addressing over type ids). */
static taso_err_t type_id(taso_enum_t *e, const taso_tensor_t *t, int32_t *id) {
  if (2 * (e->ntypes + 1) > e->slots_cap) {
    int64_t cap = e->slots_cap ? 2 * e->slots_cap : 256;
    int32_t *slots = malloc(sizeof *slots * (size_t)cap);
    if (!slots) return taso_error(TASO_ERR_NOMEM, "type table");
    for (int64_t i = 0; i < cap; i++)
      slots[i] = -1;
    for (int32_t k = 0; k < e->ntypes; k++) {
      int64_t i = (int64_t)(type_hash(&e->types[k]) & (uint64_t)(cap - 1));
      while (slots[i] >= 0)
        i = (i + 1) & (cap - 1);
      slots[i] = k;
    }
    free(e->slots);
    e->slots = slots;
    e->slots_cap = cap;
  }
  int64_t i = (int64_t)(type_hash(t) & (uint64_t)(e->slots_cap - 1));
  for (; e->slots[i] >= 0; i = (i + 1) & (e->slots_cap - 1))
    if (taso_tensor_equal(&e->types[e->slots[i]], t)) {
      *id = e->slots[i];
      return TASO_OK;
    }
  int64_t cap = e->types_cap;
  TASO_TRY(grow((void **)&e->types, &cap, e->ntypes + 1, sizeof *e->types));
  e->types_cap = (int)cap;
  e->types[e->ntypes] = *t;
  e->slots[i] = e->ntypes;
  *id = e->ntypes++;
  return TASO_OK;
}

const taso_tensor_t *taso_enum_type(const taso_enum_t *e, int32_t id) {
  return &e->types[id];
}

/* ---- valid applications, cached per input types --------------------------- */

/* The variants of the given arity that apply to inputs of types a, b (-1
 * where unused), with their output types. */
static taso_err_t valid_ops(taso_enum_t *e, int arity, int32_t a, int32_t b, const valid_t **out,
                            int *n) {
  uint64_t key = ((uint64_t)arity << 60) | ((uint64_t)(uint32_t)(a + 1) << 30) | (uint32_t)(b + 1);
  int64_t s = map_slot(&e->valid_map, key);
  if (!e->valid_map.key[s]) {
    int32_t off = e->npool, cnt = 0;
    for (int v = 0; v < e->nvariants; v++) {
      const taso_variant_t *var = &e->variants[v];
      if (taso_ops[var->kind].arity != arity) continue;
      taso_tensor_t in[3], res[2];
      if (arity > 0) in[0] = e->types[a];
      if (arity > 1) in[1] = e->types[b];
      if (taso_op_infer(var->kind, &var->p, in, res) != TASO_OK) continue;
      int64_t cap = e->pool_cap;
      TASO_TRY(grow((void **)&e->pool, &cap, e->npool + 1, sizeof *e->pool));
      e->pool_cap = (int)cap;
      valid_t *r = &e->pool[e->npool];
      r->variant = v;
      r->out[1] = -1;
      for (int port = 0; port < taso_ops[var->kind].outputs; port++)
        TASO_TRY(type_id(e, &res[port], &r->out[port]));
      e->npool++;
      cnt++;
    }
    TASO_TRY(map_put(&e->valid_map, key, off, cnt));
    s = map_slot(&e->valid_map, key);
  }
  *out = e->pool + e->valid_map.off[s];
  *n = e->valid_map.cnt[s];
  return TASO_OK;
}

bool taso_enum_is_weight(const taso_inputs_t *in, int input) {
  return in->v[input].name[0] == 'w';
}

/* The inputs a ref depends on (the first 64 of them). */
static uint64_t reads_of(const taso_enum_t *e, taso_ref_t r) {
  int node = TASO_REF_NODE(r);
  if (node >= e->ninputs) return e->reads[node - e->ninputs];
  return node < 64 ? 1ull << node : 0;
}

/* Whether a ref depends on an input of the job: false for constants and
 * for operators over constants alone. */
static bool on_input(const taso_enum_t *e, taso_ref_t r) {
  int node = TASO_REF_NODE(r);
  return node < e->ninputs || e->on_input[node - e->ninputs];
}

/* No operator is applied to constants alone (a and b constants or
 * operators over constants). Such an operator computes one fixed tensor:
 * the optimizer folds it into a weight before it costs a graph
 * (search/cost.c, fold), models hold no constant operators (import makes
 * weights), and with this rule no substitution's target makes one, so no
 * graph the optimizer meets holds one: a rule that matches one never
 * applies, a rule that makes one is never cheaper than the same rule with
 * its folded tensor. They were 43% of the unknowns of the k=4 set (their
 * proofs need the constants' values, which the axioms do not give). The
 * rule holds for every method, so the representatives still re-derive the
 * exhaustive set (taso-derive --against). */
static bool constant_only(const taso_enum_t *e, taso_ref_t a, taso_ref_t b) {
  return !on_input(e, a) && (b < 0 || !on_input(e, b));
}

/* Whether r depends on an input that is no weight (taso_enum_is_weight):
 * an activation. Where the job has more than 64 inputs, reads_of misses
 * some and every ref counts as one (the rule below then keeps graphs). */
static bool reads_activation(const taso_enum_t *e, taso_ref_t r) {
  if (e->ninputs > 64) return true;
  uint64_t w = 0;
  for (int i = 0; i < e->ninputs; i++)
    if (taso_enum_is_weight(e->in, i)) w |= 1ull << i;
  return (reads_of(e, r) & ~w) != 0;
}

/* conv2d's data input is an activation: it never reads weights and
 * constants alone (a weight input directly, or an operator over weights
 * and constants, such as conv2d(concat(0, w10, w11), const_one) or
 * conv2d(const_iconv, w4)). No model gives a weight that role, and such a
 * conv2d computes from weights alone, which the optimizer folds into a
 * weight before it costs a graph (search/cost.c, fold): with the rule
 * applied to both sides of every pair, no substitution makes one, so none
 * that matches one ever applies. They were 37% of the unknowns of the k=4
 * set (weight algebra: kernels convolved as images). Nor does conv2d take
 * as its weight a tensor that depends on an input the job does not allow
 * as a weight; no operator is applied where it is the identity (enlarge to
 * the kernel a weight already has): the input itself is the smaller
 * graph. */
static bool allowed(const taso_enum_t *e, const valid_t *v, taso_ref_t a, taso_ref_t b) {
  taso_op_kind_t kind = e->variants[v->variant].kind;
  if (kind == TASO_OP_ENLARGE && v->out[0] == e->ref_type[a] && !e->keep_identities) return false;
  if (kind != TASO_OP_CONV2D) return true;
  if (reads_of(e, b) & ~e->weights) return false;
  return reads_activation(e, a);
}

static taso_err_t add_cands(taso_enum_t *e, list_t *l, const valid_t *vs, int n, taso_ref_t a,
                            taso_ref_t b) {
  TASO_TRY(list_reserve(l, l->n + n));
  for (int i = 0; i < n; i++) {
    if (a >= 0 && constant_only(e, a, b)) {
      e->constant_refused++;
      continue;
    }
    if (a >= 0 && !allowed(e, &vs[i], a, b)) continue;
    cand_t *c = &l->v[l->n++];
    c->variant = vs[i].variant;
    c->in[0] = a;
    c->in[1] = b;
    c->in[2] = -1;
    c->out[0] = vs[i].out[0];
    c->out[1] = vs[i].out[1];
  }
  return TASO_OK;
}

/* The operators on the input table alone: the root's candidates. */
static taso_err_t root_cands(taso_enum_t *e, list_t *l) {
  const valid_t *vs;
  int n;
  l->n = 0;
  TASO_TRY(valid_ops(e, 0, -1, -1, &vs, &n));
  TASO_TRY(add_cands(e, l, vs, n, -1, -1));
  for (int i = 0; i < e->ninputs; i++) {
    TASO_TRY(valid_ops(e, 1, e->ref_type[TASO_REF(i, 0)], -1, &vs, &n));
    TASO_TRY(add_cands(e, l, vs, n, TASO_REF(i, 0), -1));
    for (int j = 0; j < e->ninputs; j++) {
      TASO_TRY(valid_ops(e, 2, e->ref_type[TASO_REF(i, 0)], e->ref_type[TASO_REF(j, 0)], &vs, &n));
      TASO_TRY(add_cands(e, l, vs, n, TASO_REF(i, 0), TASO_REF(j, 0)));
    }
  }
  if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, cand_qcmp);
  return TASO_OK;
}

static int outputs_of(const taso_enum_t *e, int32_t variant) {
  return taso_ops[e->variants[variant].kind].outputs;
}

/* The operators that consume an output of the newest operator (index
 * nops - 1), over every tensor available: New(o), sorted. */
static taso_err_t fresh_cands(taso_enum_t *e, list_t *l) {
  l->n = 0;
  int o = e->nops - 1, base = e->ninputs + o;
  int nrefs = 2 * (e->ninputs + e->nops);
  for (int p = 0; p < outputs_of(e, e->variant[o]); p++) {
    taso_ref_t r = TASO_REF(base, p);
    int32_t tr = e->ref_type[r];
    const valid_t *vs;
    int n;
    TASO_TRY(valid_ops(e, 1, tr, -1, &vs, &n));
    TASO_TRY(add_cands(e, l, vs, n, r, -1));
    for (taso_ref_t t = 0; t < nrefs; t++) {
      if (e->ref_type[t] < 0) continue; /* a port that does not exist */
      TASO_TRY(valid_ops(e, 2, tr, e->ref_type[t], &vs, &n));
      TASO_TRY(add_cands(e, l, vs, n, r, t));
      if (TASO_REF_NODE(t) == base) continue; /* (o, o) pairs come from the line above */
      TASO_TRY(valid_ops(e, 2, e->ref_type[t], tr, &vs, &n));
      TASO_TRY(add_cands(e, l, vs, n, t, r));
    }
  }
  if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, cand_qcmp);
  return TASO_OK;
}

/* ---- the walk ------------------------------------------------------------ */

/* The placed operators a candidate depends on. */
static unsigned cone_of(const taso_enum_t *e, const cand_t *c) {
  unsigned m = 0;
  for (int a = 0; a < 3; a++)
    if (c->in[a] >= 0 && TASO_REF_NODE(c->in[a]) >= e->ninputs)
      m |= e->cone[TASO_REF_NODE(c->in[a]) - e->ninputs];
  return m;
}

/* The weight of a leaf: 2 for the graph, plus the estimated cost of
 * evaluating its last operator when that depends on every other one (then
 * its expression belongs to this graph alone, so no memo can share it): one
 * unit per 48 multiply-adds (calibrated on the workstation job at 8
 * ranks); a visit costs about two. */
static int64_t leaf_weight(const taso_enum_t *e, const cand_t *c) {
  unsigned all = (1u << e->nops) - 1;
  if (cone_of(e, c) != all) return 2;
  const taso_variant_t *v = &e->variants[c->variant];
  const taso_tensor_t *out = &e->types[c->out[0]];
  int64_t work = 2; /* the hash */
  if (v->kind == TASO_OP_CONV2D) {
    const taso_tensor_t *w = &e->types[e->ref_type[c->in[1]]];
    work += (int64_t)w->dim[1] * w->dim[2] * w->dim[3];
  } else if (v->kind == TASO_OP_MATMUL) {
    work += e->types[e->ref_type[c->in[0]]].dim[1];
  } else if (v->kind == TASO_OP_POOL_AVG || v->kind == TASO_OP_POOL_MAX) {
    work += (int64_t)v->p.kernel[0] * v->p.kernel[1];
  }
  return 2 + taso_tensor_size(out) * work / 48;
}

/* The weight of a state at the unit depth: itself (if a graph) and its leaves. */
static int64_t unit_weight(const taso_enum_t *e, const list_t *leaves) {
  int64_t w = e->nops > 0 ? 1 : 0;
  for (int i = 0; i < leaves->n; i++)
    w += leaf_weight(e, &leaves->v[i]);
  return w;
}

static void place(taso_enum_t *e, const cand_t *c) {
  int j = e->nops++, base = e->ninputs + j;
  e->variant[j] = c->variant;
  e->cone[j] = cone_of(e, c) | 1u << j;
  e->reads[j] = 0;
  e->on_input[j] = false;
  for (int a = 0; a < 3; a++)
    if (c->in[a] >= 0) {
      e->reads[j] |= reads_of(e, c->in[a]);
      e->on_input[j] = e->on_input[j] || on_input(e, c->in[a]);
    }
  memcpy(e->op_in[j], c->in, sizeof c->in);
  for (int a = 0; a < 3; a++)
    if (c->in[a] >= 0) e->consumers[c->in[a]]++;
  e->ref_type[TASO_REF(base, 0)] = c->out[0];
  e->ref_type[TASO_REF(base, 1)] = c->out[1];
  e->consumers[TASO_REF(base, 0)] = e->consumers[TASO_REF(base, 1)] = 0;
}

static void unplace(taso_enum_t *e) {
  int j = --e->nops, base = e->ninputs + j;
  for (int a = 0; a < 3; a++)
    if (e->op_in[j][a] >= 0) e->consumers[e->op_in[j][a]]--;
  e->ref_type[TASO_REF(base, 0)] = e->ref_type[TASO_REF(base, 1)] = -1;
}

static taso_enum_graph_t view(taso_enum_t *e) {
  int ns = 0;
  for (int j = 0; j < e->nops; j++)
    for (int p = 0; p < outputs_of(e, e->variant[j]); p++) {
      taso_ref_t r = TASO_REF(e->ninputs + j, p);
      if (!e->consumers[r]) e->sinks[ns++] = r;
    }
  return (taso_enum_graph_t){.nops = e->nops,
                             .variant = e->variant,
                             .in = (const taso_ref_t(*)[3])e->op_in,
                             .type = e->ref_type,
                             .cone = e->cone,
                             .nsinks = ns,
                             .sinks = e->sinks};
}

/* The candidates of the state just entered (parent list l, entry i placed):
 * the parent's candidates after i, merged with New(i). */
static taso_err_t child_cands(taso_enum_t *e, const list_t *l, int i, list_t *out) {
  TASO_TRY(fresh_cands(e, &e->fresh));
  int na = l->n - i - 1, nb = e->fresh.n;
  TASO_TRY(list_reserve(out, na + nb));
  const cand_t *a = l->v + i + 1, *b = e->fresh.v;
  int x = 0, y = 0, k = 0;
  while (x < na || y < nb)
    out->v[k++] = (y >= nb || (x < na && cand_cmp(&a[x], &b[y]) < 0)) ? a[x++] : b[y++];
  out->n = k;
  return TASO_OK;
}

/* subtree[] holds the weights of the states above the unit depth, then two
 * more entries: the total weight and the number of graphs, so that a shared
 * count pass sums as one array. */
#define TOTAL(e) ((e)->subtree[(e)->nstates])
#define GRAPHS(e) ((e)->subtree[(e)->nstates + 1])

/* A new state above the unit depth; the two trailing entries move along. */
static taso_err_t note_state(taso_enum_t *e, int64_t *index) {
  int64_t cap = e->states_cap;
  TASO_TRY(grow((void **)&e->subtree, &cap, e->nstates + 3, sizeof *e->subtree));
  TASO_TRY(grow((void **)&e->skip, &e->states_cap, e->nstates + 3, sizeof *e->skip));
  e->subtree[e->nstates + 2] = GRAPHS(e);
  e->subtree[e->nstates + 1] = TOTAL(e);
  *index = e->nstates++;
  return TASO_OK;
}

/* Counting walk of the state at depth d with candidates lists[d]: records
 * subtree weights of states above the unit depth; returns the weight. */
static taso_err_t count(taso_enum_t *e, int d, int64_t *weight) {
  list_t *l = &e->lists[d];
  int64_t index, w = d > 0 && e->part == 0 ? 1 : 0; /* the state itself: part 0's */
  if (d == e->unit_depth) {                         /* only the root, with max_ops 1 */
    *weight = e->part == 0 ? unit_weight(e, l) : 0;
    GRAPHS(e) += e->part == 0 ? l->n : 0;
    return TASO_OK;
  }
  GRAPHS(e) += w;
  TASO_TRY(note_state(e, &index));
  for (int i = 0; i < l->n; i++) {
    if (d == 0 && e->count_progress) e->count_progress(e->progress_ctx, i, l->n);
    if (d + 1 == e->unit_depth) { /* a unit: weighed by one part only */
      if (e->units++ % e->nparts != e->part) continue;
      place(e, &l->v[i]);
      taso_err_t err = child_cands(e, l, i, &e->lists[d + 1]);
      if (err == TASO_OK) {
        GRAPHS(e) += 1 + e->lists[d + 1].n;
        w += unit_weight(e, &e->lists[d + 1]);
      }
      unplace(e);
      TASO_TRY(err);
      continue;
    }
    place(e, &l->v[i]);
    taso_err_t err = child_cands(e, l, i, &e->lists[d + 1]);
    int64_t cw = 0;
    if (err == TASO_OK) err = count(e, d + 1, &cw);
    unplace(e);
    TASO_TRY(err);
    w += cw;
  }
  e->subtree[index] = w;
  e->skip[index] = e->nstates - index;
  *weight = w;
  return TASO_OK;
}

typedef struct {
  int64_t begin, end, cum, index;
  const taso_enum_visitor_t *v;
} run_t;

static taso_err_t enter(taso_enum_t *e, const taso_enum_visitor_t *v, bool visit) {
  taso_enum_graph_t g = view(e);
  if (v->push) TASO_TRY(v->push(v->ctx, &g));
  if (visit && v->visit) TASO_TRY(v->visit(v->ctx, &g));
  return TASO_OK;
}

static void leave(taso_enum_t *e, const taso_enum_visitor_t *v) {
  taso_enum_graph_t g = view(e);
  if (v->pop) v->pop(v->ctx, &g);
  unplace(e);
}

static bool in_range(const run_t *r, int64_t at) {
  return at >= r->begin && at < r->end;
}

/* Visits the leaves below a unit-depth state (its candidates in l). */
static taso_err_t leaves(taso_enum_t *e, const list_t *l, run_t *r) {
  for (int i = 0; i < l->n; i++) {
    if (r->v->want) { /* the view of this state: entering a leaf rewrites the sinks */
      taso_enum_graph_t g = view(e);
      if (!r->v->want(r->v->ctx, &g, l->v[i].variant, l->v[i].in)) continue;
    }
    place(e, &l->v[i]);
    taso_err_t err = enter(e, r->v, true);
    leave(e, r->v);
    TASO_TRY(err);
  }
  return TASO_OK;
}

/* Run walk of the state at depth d (above the unit depth), already entered. */
static taso_err_t run(taso_enum_t *e, int d, run_t *r) {
  list_t *l = &e->lists[d];
  r->index++; /* this state's own entry */
  for (int i = 0; i < l->n; i++) {
    if (d + 1 < e->unit_depth) {
      int64_t w = e->subtree[r->index];
      if (r->cum + w <= r->begin || r->cum >= r->end) {
        r->cum += w;
        r->index += e->skip[r->index];
        continue;
      }
      place(e, &l->v[i]);
      taso_err_t err = enter(e, r->v, in_range(r, r->cum));
      r->cum++;
      if (err == TASO_OK) err = child_cands(e, l, i, &e->lists[d + 1]);
      if (err == TASO_OK) err = run(e, d + 1, r);
      leave(e, r->v);
      TASO_TRY(err);
    } else {
      place(e, &l->v[i]);
      taso_err_t err = child_cands(e, l, i, &e->lists[d + 1]);
      int64_t w = unit_weight(e, &e->lists[d + 1]);
      bool mine = err == TASO_OK && in_range(r, r->cum);
      if (mine) err = enter(e, r->v, true);
      if (mine && err == TASO_OK) err = leaves(e, &e->lists[d + 1], r);
      if (mine)
        leave(e, r->v);
      else
        unplace(e);
      r->cum += w;
      TASO_TRY(err);
    }
  }
  return TASO_OK;
}

taso_err_t taso_enum_run(taso_enum_t *e, int64_t begin, int64_t end, const taso_enum_visitor_t *v) {
  run_t r = {.begin = begin, .end = end, .cum = 0, .index = 0, .v = v};
  if (e->unit_depth == 0) /* max_ops 1: the root is the only unit */
    return in_range(&r, 0) ? leaves(e, &e->lists[0], &r) : TASO_OK;
  return run(e, 0, &r);
}

/* ---- level by level -------------------------------------------------------- */

typedef struct {
  int level, unit, part, nparts;
  int64_t units; /* unit-depth states met so far */
  const taso_enum_visitor_t *v;
} level_t;

/* Level walk of the state at depth d < level (entered, expanded). */
static taso_err_t level_walk(taso_enum_t *e, int d, level_t *w) {
  list_t *l = &e->lists[d];
  if (d + 1 == w->level) {
    run_t r = {.v = w->v};
    return leaves(e, l, &r);
  }
  for (int i = 0; i < l->n; i++) {
    if (d + 1 == w->unit) e->level_units = w->units + 1;
    if (d + 1 == w->unit && w->units++ % w->nparts != w->part) continue;
    place(e, &l->v[i]);
    taso_err_t err = enter(e, w->v, false);
    taso_enum_graph_t g = view(e);
    bool deeper = err == TASO_OK && (!w->v->expand || w->v->expand(w->v->ctx, &g));
    if (deeper) err = child_cands(e, l, i, &e->lists[d + 1]);
    if (deeper && err == TASO_OK) err = level_walk(e, d + 1, w);
    leave(e, w->v);
    TASO_TRY(err);
  }
  return TASO_OK;
}

taso_err_t taso_enum_level(taso_enum_t *e, int level, int part, int nparts,
                           const taso_enum_visitor_t *v) {
  if (level < 1 || level > e->max_ops)
    return taso_error(TASO_ERR_LIMIT, "level %d out of range 1..%d", level, e->max_ops);
  level_t w = {.level = level,
               .unit = level >= 3 ? level - 2 : level - 1,
               .part = part,
               .nparts = nparts,
               .v = v};
  e->level_units = 0;
  if (w.unit == 0 && part != 0) return TASO_OK; /* level 1: the root is the only unit */
  return level_walk(e, 0, &w);
}

int64_t taso_enum_level_units(const taso_enum_t *e) {
  return e->level_units;
}

/* ---- variants ------------------------------------------------------------ */

static int variant_cmp(const void *a, const void *b) {
  const taso_variant_t *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return memcmp(&x->p, &y->p, sizeof x->p) < 0 ? -1 : memcmp(&x->p, &y->p, sizeof x->p) > 0;
}

static taso_err_t add_variant(taso_enum_t *e, taso_op_kind_t kind, const taso_params_t *p) {
  for (int i = 0; i < e->nvariants; i++)
    if (e->variants[i].kind == kind && !memcmp(&e->variants[i].p, p, sizeof *p)) return TASO_OK;
  taso_variant_t *v = realloc(e->variants, sizeof *v * (e->nvariants + 1));
  if (!v) return taso_error(TASO_ERR_NOMEM, "operator variants");
  e->variants = v;
  v[e->nvariants].kind = kind;
  v[e->nvariants].p = *p;
  e->nvariants++;
  return TASO_OK;
}

static bool has(const int32_t *v, int n, int32_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

/* Constants without a shape= take every shape their partners can have in
 * this input table (data/operators.md): const_one every input shape,
 * const_imm k x k for every size of a rank-2 input, const_pool and
 * const_iconv c channels for every rank-4 data (non-weight) input. */
static taso_err_t add_constants(taso_enum_t *e, taso_op_kind_t kind, const taso_params_t *p) {
  int32_t sizes[64];
  int ns = 0;
  for (int i = 0; i < e->ninputs; i++) {
    const taso_tensor_t *t = &e->in->v[i].type;
    taso_params_t q = *p;
    if (kind == TASO_OP_CONST_ONE) {
      q.rank = t->rank;
      memcpy(q.shape, t->dim, sizeof q.shape);
      TASO_TRY(add_variant(e, kind, &q));
    } else if (kind == TASO_OP_CONST_IMM && t->rank == 2) {
      for (int a = 0; a < 2; a++)
        if (!has(sizes, ns, t->dim[a]) && ns < 64) sizes[ns++] = t->dim[a];
    } else if (kind != TASO_OP_CONST_IMM && t->rank == 4 && !taso_enum_is_weight(e->in, i)) {
      if (!has(sizes, ns, t->dim[1]) && ns < 64) sizes[ns++] = t->dim[1];
    }
  }
  for (int s = 0; s < ns; s++) {
    taso_params_t q = *p;
    int32_t c = sizes[s];
    if (kind == TASO_OP_CONST_IMM) {
      q.rank = 2;
      q.shape[0] = q.shape[1] = c;
    } else {
      q.rank = 4;
      q.shape[0] = c;
      q.shape[1] = kind == TASO_OP_CONST_POOL ? 1 : c;
      q.shape[2] = p->kernel[0];
      q.shape[3] = p->kernel[1];
    }
    TASO_TRY(add_variant(e, kind, &q));
  }
  return TASO_OK;
}

static taso_err_t build_variants(taso_enum_t *e, const taso_op_template_t *ops, int nops) {
  for (int i = 0; i < nops; i++) {
    const taso_op_info_t *info = &taso_ops[ops[i].kind];
    if (ops[i].kind == TASO_OP_INPUT || info->arity > 2)
      return taso_error(TASO_ERR_ARG, "operator '%s' cannot be enumerated", info->name);
    bool constant = info->arity == 0 && (info->params & TASO_P_SHAPE);
    if (constant && ops[i].p.rank == 0) /* no shape= given */
      TASO_TRY(add_constants(e, ops[i].kind, &ops[i].p));
    else
      TASO_TRY(add_variant(e, ops[i].kind, &ops[i].p));
  }
  if (e->nvariants > 1) qsort(e->variants, (size_t)e->nvariants, sizeof *e->variants, variant_cmp);
  return TASO_OK;
}

/* ---- life cycle ---------------------------------------------------------- */

const taso_variant_t *taso_enum_variants(const taso_enum_t *e, int *n) {
  *n = e->nvariants;
  return e->variants;
}

int64_t taso_enum_total(const taso_enum_t *e) {
  return TOTAL(e);
}

int64_t taso_enum_constant_refused(const taso_enum_t *e) {
  return e->constant_refused;
}

int64_t taso_enum_graphs(const taso_enum_t *e) {
  return GRAPHS(e);
}

int64_t *taso_enum_partial_weights(taso_enum_t *e, int64_t *n) {
  *n = e->nstates + 2;
  return e->subtree;
}

void taso_enum_free(taso_enum_t *e) {
  if (!e) return;
  free(e->variants);
  free(e->types);
  free(e->slots);
  free(e->pool);
  map_free(&e->valid_map);
  free(e->subtree);
  free(e->skip);
  free(e->ref_type);
  free(e->consumers);
  for (int d = 0; d <= TASO_ENUM_MAX_OPS; d++)
    free(e->lists[d].v);
  free(e->fresh.v);
  free(e);
}

taso_err_t taso_enum_create(const taso_inputs_t *in, const taso_op_template_t *ops, int nops,
                            int max_ops, int part, int nparts, taso_enum_t **out) {
  taso_enum_opts_t opts = {.weights = ~0ull};
  return taso_enum_create_opts(in, ops, nops, max_ops, part, nparts, &opts, out);
}

taso_err_t taso_enum_create_opts(const taso_inputs_t *in, const taso_op_template_t *ops, int nops,
                                 int max_ops, int part, int nparts, const taso_enum_opts_t *opts,
                                 taso_enum_t **out) {
  *out = NULL;
  if (max_ops < 1 || max_ops > TASO_ENUM_MAX_OPS)
    return taso_error(TASO_ERR_LIMIT, "max_ops %d out of range 1..%d", max_ops, TASO_ENUM_MAX_OPS);
  if (nparts < 1 || part < 0 || part >= nparts)
    return taso_error(TASO_ERR_ARG, "count pass part %d of %d", part, nparts);
  taso_enum_t *e = calloc(1, sizeof *e);
  if (!e) return taso_error(TASO_ERR_NOMEM, "enumeration");
  e->part = part;
  e->nparts = nparts;
  int64_t cap = 0;
  taso_err_t err = grow((void **)&e->subtree, &cap, 2, sizeof *e->subtree);
  if (err == TASO_OK) err = grow((void **)&e->skip, &e->states_cap, 2, sizeof *e->skip);
  if (err != TASO_OK) {
    free(e->subtree);
    free(e);
    return err;
  }
  TOTAL(e) = GRAPHS(e) = 0;
  e->in = in;
  e->ninputs = in->n;
  e->weights = opts->weights;
  e->keep_identities = opts->keep_identities;
  e->count_progress = opts->count_progress;
  e->progress_ctx = opts->progress_ctx;
  e->max_ops = max_ops;
  e->unit_depth = max_ops - 1;
  int nrefs = 2 * (in->n + max_ops);
  e->ref_type = malloc(sizeof *e->ref_type * nrefs);
  e->consumers = calloc((size_t)nrefs, sizeof *e->consumers);
  err = (e->ref_type && e->consumers) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "enumeration");
  if (err == TASO_OK) err = map_init(&e->valid_map, 1024);
  if (err == TASO_OK) err = build_variants(e, ops, nops);
  for (int r = 0; err == TASO_OK && r < nrefs; r++)
    e->ref_type[r] = -1;
  for (int i = 0; err == TASO_OK && i < in->n; i++)
    err = type_id(e, &in->v[i].type, &e->ref_type[TASO_REF(i, 0)]);
  if (err == TASO_OK) err = root_cands(e, &e->lists[0]);
  int64_t total = 0;
  if (err == TASO_OK && !opts->no_count) err = count(e, 0, &total);
  if (err == TASO_OK) TOTAL(e) = total;
  if (err != TASO_OK) {
    taso_enum_free(e);
    return err;
  }
  *out = e;
  return TASO_OK;
}
