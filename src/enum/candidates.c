#include "candidates.h"

#include "hash.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int taso_grec_cmp(const void *a, const void *b) {
  const taso_grec_t *x = a, *y = b;
  int c = taso_fingerprint_cmp(&x->fp, &y->fp);
  if (c) return c;
  if (x->nops != y->nops) return x->nops < y->nops ? -1 : 1;
  return memcmp(&x->nout, &y->nout, sizeof *x - offsetof(taso_grec_t, nout));
}

taso_err_t taso_grec_graph(const taso_grec_t *r, const taso_variant_t *variants, int ninputs,
                           taso_graph_t *g) {
  taso_ref_t map[TASO_ENUM_MAX_OPS];
  taso_graph_clear(g);
  /* a ref of the record -> a ref of g */
#define MAPPED(ref, out)                                                                           \
  do {                                                                                             \
    int node_ = TASO_REF_NODE(ref);                                                                \
    if (node_ < ninputs)                                                                           \
      TASO_TRY(taso_graph_add_input(g, node_, &(out)));                                            \
    else                                                                                           \
      (out) = map[node_ - ninputs] + TASO_REF_PORT(ref);                                           \
  } while (0)
  for (int j = 0; j < r->nops; j++) {
    const taso_variant_t *v = &variants[r->variant[j]];
    taso_ref_t in[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[v->kind].arity; a++)
      MAPPED(r->in[j][a], in[a]);
    TASO_TRY(taso_graph_add(g, v->kind, &v->p, in, &map[j]));
  }
  for (int o = 0; o < r->nout; o++) {
    taso_ref_t ref;
    MAPPED(r->out[o], ref);
    TASO_TRY(taso_graph_add_output(g, ref));
  }
#undef MAPPED
  return taso_graph_canonicalize(g);
}

int taso_graph_ops(const taso_graph_t *g) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += g->nodes[i].kind != TASO_OP_INPUT;
  return n;
}

/* ---- common subgraphs ----------------------------------------------------- */

/* Structural hash of every node: what it computes, whatever its position. */
static taso_err_t node_hashes(const taso_graph_t *g, uint64_t **out) {
  uint64_t *h = malloc(sizeof *h * (g->nnodes + 1));
  if (!h) return taso_error(TASO_ERR_NOMEM, "graph hashes");
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    uint64_t x = taso_mix64((uint64_t)n->kind);
    const int32_t *p = (const int32_t *)&n->p;
    for (size_t k = 0; k < sizeof n->p / sizeof *p; k++)
      x = taso_mix64(x ^ (uint32_t)p[k]);
    for (int a = 0; a < 3 && n->in[a] >= 0; a++)
      x = taso_mix64(x ^ h[TASO_REF_NODE(n->in[a])] ^ (uint64_t)TASO_REF_PORT(n->in[a]) << 1);
    h[i] = x;
  }
  *out = h;
  return TASO_OK;
}

/* Both end in the same operator, all its arguments equal but one, which
 * has the same type on both sides: then the smaller candidate between the
 * differing arguments does the same work. An operator's parameters do not
 * say everything about its arguments' shapes (conv2d's kernel comes from
 * its weight), and conv2d(i1, w7) with conv2d(i1, enlarge(w7)) is no
 * instance of w7 => enlarge(w7), which changes the shape. */
static bool same_top(const taso_graph_t *a, const uint64_t *ha, const taso_tensor_t *ta,
                     const taso_graph_t *b, const uint64_t *hb, const taso_tensor_t *tb) {
  if (a->noutputs != 1 || b->noutputs != 1) return false;
  const taso_node_t *x = &a->nodes[TASO_REF_NODE(a->outputs[0])];
  const taso_node_t *y = &b->nodes[TASO_REF_NODE(b->outputs[0])];
  if (x->kind == TASO_OP_INPUT || x->kind != y->kind || memcmp(&x->p, &y->p, sizeof x->p) ||
      TASO_REF_PORT(a->outputs[0]) != TASO_REF_PORT(b->outputs[0]))
    return false;
  int arity = taso_ops[x->kind].arity, equal = 0, typed = 0;
  for (int i = 0; i < arity; i++) {
    equal += ha[TASO_REF_NODE(x->in[i])] == hb[TASO_REF_NODE(y->in[i])] &&
             TASO_REF_PORT(x->in[i]) == TASO_REF_PORT(y->in[i]);
    typed += taso_tensor_equal(&ta[x->in[i]], &tb[y->in[i]]);
  }
  return arity > 0 && equal >= arity - 1 && typed == arity;
}

bool taso_cand_common(const taso_graph_t *src, const taso_tensor_t *tsrc, const taso_graph_t *dst,
                      const taso_tensor_t *tdst) {
  uint64_t *hs = NULL, *hd = NULL;
  if (node_hashes(src, &hs) != TASO_OK || node_hashes(dst, &hd) != TASO_OK) {
    free(hs);
    return false; /* out of memory: keep the candidate */
  }
  bool common = same_top(src, hs, tsrc, dst, hd, tdst);
  for (int i = 0; i < src->nnodes && !common; i++)
    for (int j = 0; j < dst->nnodes && !common; j++)
      common = src->nodes[i].kind != TASO_OP_INPUT && hs[i] == hd[j];
  free(hs);
  free(hd);
  return common;
}

/* ---- independent parts ---------------------------------------------------- */

/* Operator nodes each output depends on, as bit sets (graphs of <= 64 nodes). */
static void cones(const taso_graph_t *g, uint64_t *cone) {
  uint64_t node_cone[64];
  for (int i = 0; i < g->nnodes && i < 64; i++) {
    const taso_node_t *n = &g->nodes[i];
    node_cone[i] = n->kind == TASO_OP_INPUT ? 0 : UINT64_C(1) << i;
    for (int a = 0; a < 3 && n->in[a] >= 0; a++)
      node_cone[i] |= node_cone[TASO_REF_NODE(n->in[a])];
  }
  for (int o = 0; o < g->noutputs; o++)
    cone[o] = node_cone[TASO_REF_NODE(g->outputs[o])];
}

static int find_root(int *parent, int x) {
  while (parent[x] != x)
    x = parent[x] = parent[parent[x]];
  return x;
}

bool taso_cand_independent(const taso_graph_t *src, const taso_graph_t *dst) {
  int n = src->noutputs;
  if (n < 2 || n != dst->noutputs || n > 64 || src->nnodes > 64 || dst->nnodes > 64) return false;
  uint64_t cs[64], cd[64];
  int parent[64], groups = n;
  cones(src, cs);
  cones(dst, cd);
  for (int o = 0; o < n; o++)
    parent[o] = o;
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      if ((cs[a] & cs[b]) || (cd[a] & cd[b])) {
        int ra = find_root(parent, a), rb = find_root(parent, b);
        if (ra != rb) {
          parent[ra] = rb;
          groups--;
        }
      }
  return groups > 1;
}

/* ---- canonical form under input renaming --------------------------------- */

typedef struct {
  const taso_inputs_t *in;
  const taso_graph_t *side[2];
  bool both_ways;
  int nused, used[4 * TASO_ENUM_MAX_OPS]; /* inputs the candidate uses: 2 per operator and side */
  int *cls;                               /* targets: class per table input */
  int ucls[4 * TASO_ENUM_MAX_OPS];        /* sources: class per used input */
  int map[4 * TASO_ENUM_MAX_OPS];         /* used[k] -> new input index */
  bool taken[256];
  taso_graph_t a, b, tmp;
  char *best, *text;
  int text_cap;
  taso_err_t err;
} keyer_t;

static taso_err_t format(keyer_t *k, const taso_graph_t *g, char **buf, int *cap) {
  int need = taso_graph_format(g, k->in, *buf, *cap) + 1;
  if (need > *cap) {
    char *p = realloc(*buf, (size_t)need);
    if (!p) return taso_error(TASO_ERR_NOMEM, "candidate text");
    *buf = p;
    *cap = need;
    taso_graph_format(g, k->in, *buf, *cap);
  }
  return TASO_OK;
}

static taso_err_t rename_into(keyer_t *k, const taso_graph_t *g, taso_graph_t *out) {
  TASO_TRY(taso_graph_copy(out, g));
  for (int i = 0; i < out->nnodes; i++)
    if (out->nodes[i].kind == TASO_OP_INPUT)
      for (int u = 0; u < k->nused; u++)
        if (k->used[u] == g->nodes[i].p.input) out->nodes[i].p.input = k->map[u];
  return TASO_OK;
}

/* Text of output o of g alone. */
static taso_err_t output_text(keyer_t *k, const taso_graph_t *g, int o, char **buf, int *cap) {
  TASO_TRY(taso_graph_copy(&k->tmp, g));
  k->tmp.outputs[0] = g->outputs[o];
  k->tmp.noutputs = 1;
  TASO_TRY(taso_graph_canonicalize(&k->tmp));
  return format(k, &k->tmp, buf, cap);
}

typedef struct {
  char *text;
  taso_ref_t a, b;
} outpair_t;

static int outpair_cmp(const void *x, const void *y) {
  return strcmp(((const outpair_t *)x)->text, ((const outpair_t *)y)->text);
}

/* Orders the output pairs of k->a, k->b canonically, then canonicalizes. */
static taso_err_t order_outputs(keyer_t *k) {
  int n = k->a.noutputs;
  if (n > 1) {
    outpair_t pairs[2 * TASO_ENUM_MAX_OPS + 2];
    taso_err_t err = TASO_OK;
    int made = 0;
    for (; made < n && err == TASO_OK; made++) {
      char *ta = NULL, *tb = NULL;
      int ca = 0, cb = 0;
      pairs[made].text = NULL;
      err = output_text(k, &k->a, made, &ta, &ca);
      if (err == TASO_OK) err = output_text(k, &k->b, made, &tb, &cb);
      if (err == TASO_OK && (pairs[made].text = malloc(strlen(ta) + strlen(tb) + 2)) == NULL)
        err = taso_error(TASO_ERR_NOMEM, "candidate text");
      if (err == TASO_OK) sprintf(pairs[made].text, "%s|%s", ta, tb);
      pairs[made].a = k->a.outputs[made];
      pairs[made].b = k->b.outputs[made];
      free(ta);
      free(tb);
    }
    if (err == TASO_OK) {
      qsort(pairs, (size_t)n, sizeof *pairs, outpair_cmp);
      for (int o = 0; o < n; o++) {
        k->a.outputs[o] = pairs[o].a;
        k->b.outputs[o] = pairs[o].b;
      }
    }
    for (int o = 0; o < made; o++)
      free(pairs[o].text);
    TASO_TRY(err);
  }
  TASO_TRY(taso_graph_canonicalize(&k->a));
  return taso_graph_canonicalize(&k->b);
}

/* Tries the current complete renaming in one orientation. */
static taso_err_t try_renaming(keyer_t *k, int from) {
  TASO_TRY(rename_into(k, k->side[from], &k->a));
  TASO_TRY(rename_into(k, k->side[1 - from], &k->b));
  TASO_TRY(order_outputs(k));
  char *ta = NULL, *tb = NULL;
  int ca = 0, cb = 0;
  taso_err_t err = format(k, &k->a, &ta, &ca);
  if (err == TASO_OK) err = format(k, &k->b, &tb, &cb);
  if (err == TASO_OK) {
    size_t need = strlen(ta) + strlen(tb) + 5;
    if ((int)need > k->text_cap) {
      char *p = realloc(k->text, need);
      if (!p)
        err = taso_error(TASO_ERR_NOMEM, "candidate text");
      else {
        k->text = p;
        k->text_cap = (int)need;
      }
    }
  }
  if (err == TASO_OK) {
    sprintf(k->text, "%s => %s", ta, tb);
    if (!k->best || strcmp(k->text, k->best) < 0) {
      free(k->best);
      k->best = malloc(strlen(k->text) + 1);
      if (!k->best)
        err = taso_error(TASO_ERR_NOMEM, "candidate text");
      else
        strcpy(k->best, k->text);
    }
  }
  free(ta);
  free(tb);
  return err;
}

/* Assigns used input u and the rest, each onto a free input of its class
 * among the first ones of that class. */
static taso_err_t assign(keyer_t *k, int u) {
  if (u == k->nused) {
    TASO_TRY(try_renaming(k, 0));
    return k->both_ways ? try_renaming(k, 1) : TASO_OK;
  }
  int c = k->ucls[u], members = 0;
  for (int u2 = 0; u2 < k->nused; u2++)
    members += k->ucls[u2] == c;
  for (int i = 0, seen = 0; i < k->in->n && seen < members; i++) {
    if (k->cls[i] != c) continue;
    seen++;
    if (k->taken[i]) continue;
    k->taken[i] = true;
    k->map[u] = i;
    taso_err_t err = assign(k, u + 1);
    k->taken[i] = false;
    TASO_TRY(err);
  }
  return TASO_OK;
}

static void note_inputs(keyer_t *k, const taso_graph_t *g) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].kind != TASO_OP_INPUT) continue;
    int x = g->nodes[i].p.input, u = 0;
    while (u < k->nused && k->used[u] != x)
      u++;
    if (u == k->nused && k->nused < (int)(sizeof k->used / sizeof *k->used))
      k->used[k->nused++] = x;
  }
}

/* Any-type classes: used inputs that play the same part (the same uses:
 * operator, parameters, argument position and side, the side only when the
 * sides cannot swap; whatever their names or shapes) may swap; the classes
 * take blocks of the table's first inputs in the order of their use
 * signatures, so only swaps inside a class remain to try. */
static void pattern_classes(keyer_t *k) {
  uint64_t sig[4 * TASO_ENUM_MAX_OPS];
  for (int u = 0; u < k->nused; u++) {
    sig[u] = 0;
    for (int side = 0; side < 2; side++) {
      const taso_graph_t *g = k->side[side];
      for (int i = 0; i < g->nnodes; i++) {
        const taso_node_t *n = &g->nodes[i];
        if (n->kind == TASO_OP_INPUT) continue;
        for (int a = 0; a < taso_ops[n->kind].arity; a++) {
          const taso_node_t *arg = &g->nodes[TASO_REF_NODE(n->in[a])];
          if (arg->kind != TASO_OP_INPUT || arg->p.input != k->used[u]) continue;
          uint64_t h = taso_mix64((uint64_t)(k->both_ways ? 2 : side) << 40 ^
                                  (uint64_t)n->kind << 32 ^ (uint64_t)a << 24);
          const int32_t *p = (const int32_t *)&n->p;
          for (size_t w = 0; w < sizeof n->p / sizeof *p; w++)
            h = taso_mix64(h ^ (uint32_t)p[w]);
          sig[u] += h; /* a multiset: the order of uses does not count */
        }
      }
    }
  }
  /* class of u: the rank of its signature among the distinct ones; block
   * start: the number of used inputs with a smaller signature */
  for (int u = 0; u < k->nused; u++) {
    int start = 0;
    for (int v = 0; v < k->nused; v++)
      start += sig[v] < sig[u];
    k->ucls[u] = start;
  }
  for (int i = 0; i < k->in->n; i++)
    k->cls[i] = -1;
  for (int u = 0; u < k->nused; u++) {
    int members = 0;
    for (int v = 0; v < k->nused; v++)
      members += sig[v] == sig[u];
    for (int i = k->ucls[u]; i < k->ucls[u] + members; i++)
      k->cls[i] = k->ucls[u];
  }
}

taso_err_t taso_cand_key(const taso_inputs_t *in, const taso_graph_t *src, const taso_graph_t *dst,
                         bool any_type, char **key) {
  *key = NULL;
  if (in->n > 256) return taso_error(TASO_ERR_LIMIT, "renaming: more than 256 inputs");
  keyer_t k;
  memset(&k, 0, sizeof k);
  k.in = in;
  int ns = taso_graph_ops(src), nd = taso_graph_ops(dst);
  k.side[0] = ns >= nd ? src : dst;
  k.side[1] = ns >= nd ? dst : src;
  k.both_ways = ns == nd;
  note_inputs(&k, src);
  note_inputs(&k, dst);
  k.cls = malloc(sizeof *k.cls * (in->n + 1));
  if (!k.cls) return taso_error(TASO_ERR_NOMEM, "renaming");
  if (any_type) {
    pattern_classes(&k);
  } else {
    for (int i = 0; i < in->n; i++) {
      k.cls[i] = i;
      for (int j = 0; j < i; j++)
        if (taso_tensor_equal(&in->v[i].type, &in->v[j].type) &&
            taso_enum_is_weight(in, i) == taso_enum_is_weight(in, j)) {
          k.cls[i] = j;
          break;
        }
    }
    for (int u = 0; u < k.nused; u++)
      k.ucls[u] = k.cls[k.used[u]];
  }
  taso_graph_init(&k.a);
  taso_graph_init(&k.b);
  taso_graph_init(&k.tmp);
  taso_err_t err = assign(&k, 0);
  taso_graph_free(&k.a);
  taso_graph_free(&k.b);
  taso_graph_free(&k.tmp);
  free(k.cls);
  free(k.text);
  if (err != TASO_OK) {
    free(k.best);
    return err;
  }
  *key = k.best;
  return TASO_OK;
}

/* ---- implication ---------------------------------------------------------- */

taso_err_t taso_cand_parse(const taso_inputs_t *in, char *key, taso_cand_t *c) {
  memset(c, 0, sizeof *c);
  c->key = key;
  taso_graph_init(&c->src);
  taso_graph_init(&c->dst);
  TASO_TRY(taso_subst_parse(key, in, &c->src, &c->dst));
  c->tsrc = malloc(sizeof *c->tsrc * (2 * c->src.nnodes + 1));
  c->tdst = malloc(sizeof *c->tdst * (2 * c->dst.nnodes + 1));
  if (!c->tsrc || !c->tdst) return taso_error(TASO_ERR_NOMEM, "candidate types");
  TASO_TRY(taso_graph_infer(&c->src, in, c->tsrc));
  TASO_TRY(taso_graph_infer(&c->dst, in, c->tdst));
  uint64_t seen[4] = {0}; /* inputs met, as bits (the table has at most 256) */
  for (int side = 0; side < 2; side++) {
    const taso_graph_t *g = side ? &c->dst : &c->src;
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].kind != TASO_OP_INPUT) {
        c->kinds[side][g->nodes[i].kind]++;
        c->size++;
      } else {
        int x = g->nodes[i].p.input & 255;
        c->inputs += !(seen[x / 64] >> (x % 64) & 1);
        seen[x / 64] |= 1ull << (x % 64);
      }
  }
  return TASO_OK;
}

void taso_cand_free(taso_cand_t *c) {
  free(c->key);
  taso_graph_free(&c->src);
  taso_graph_free(&c->dst);
  free(c->tsrc);
  free(c->tdst);
  memset(c, 0, sizeof *c);
}
